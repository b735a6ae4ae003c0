//! `memtrail sessions list|show|delete|capture`.

use crate::common::{absolute, open_reader, open_store, open_store_read};
use crate::output::{plural, short_time};
use crate::prompt::confirm_destructive;
use anyhow::{Result, bail};
use memtrail_adapters::Agent;
use memtrail_runtime::StoreLocation;
use memtrail_runtime::maintenance::{Recaptured, SessionInfo};
use memtrail_runtime::query::SessionSummary;
use memtrail_runtime::query::{self, ListFilter};
use memtrail_runtime::safe_text::one_line_field;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

/// `sessions list --json` (schema: docs/json.md).
#[derive(Serialize)]
struct SessionList<'a> {
    sessions: &'a [SessionSummary],
}

/// `sessions delete --json`.
#[derive(Serialize)]
struct Deleted<'a> {
    deleted: &'a SessionInfo,
    /// A reader kept the WAL from being folded back: the deleted text is still in the store's
    /// files until a later checkpoint (the next hook or import).
    wal_kept: bool,
}

/// `sessions capture --json`.
#[derive(Serialize)]
struct Captured<'a> {
    captured: &'a Recaptured,
}

/// Longest machine label `sessions list` shows (characters).
const MACHINE_WIDTH: usize = 20;

/// `memtrail sessions list`: most recently active first; a machine column (the label) after
/// the agent when the sessions listed come from more than one machine.
pub fn list(
    db: &StoreLocation,
    agent: Option<Agent>,
    project: Option<PathBuf>,
    machine: Option<String>,
    limit: u32,
    json: bool,
) -> Result<ExitCode> {
    let filtered = agent.is_some() || project.is_some() || machine.is_some();
    // One more than shown: whether the list is cut is then known.
    let mut list = match open_reader(db)? {
        Some(store) => store.list_sessions(&ListFilter {
            agent: agent.map(|a| a.as_str().to_string()),
            project: project.map(|p| absolute(&p)),
            machine,
            limit: limit as usize + 1,
            ..Default::default()
        })?,
        None => Vec::new(),
    };
    let cut = list.len() > limit as usize;
    list.truncate(limit as usize);
    if json {
        out!("{}", crate::output::json(&SessionList { sessions: &list })?);
    } else if list.is_empty() && filtered {
        out!("No sessions match these filters.");
    } else if list.is_empty() && matches!(db, StoreLocation::Postgres(_)) {
        out!(
            "No sessions yet: the PostgreSQL database {db} holds none. `memtrail sync` on a machine fills it."
        );
    } else if list.is_empty() {
        out!("No sessions yet. Run `memtrail import` to bring in existing ones.");
    } else {
        // The machine column, when a session listed comes from another machine than this one
        // (every one from the laptop, seen on a new machine after `sync --init`, showed none):
        // the label, cut to MACHINE_WIDTH characters, padded to the longest shown.
        let label = |s: &SessionSummary| s.machine.chars().take(MACHINE_WIDTH).collect::<String>();
        let here = memtrail_runtime::machine::local_label();
        let other_machines = list.iter().any(|s| s.machine != here);
        let width = if other_machines {
            list.iter()
                .map(|s| label(s).chars().count())
                .max()
                .unwrap_or(0)
                + 1
        } else {
            0
        };
        // On a terminal, each line cut to its width: the title and the project end in `…`
        // (the session id is never cut; a title with too little room after it goes below).
        let columns = crate::output::terminal_columns();
        let fit = |text: &str, used: usize| match columns {
            Some(c) => crate::output::fit(text, c.saturating_sub(used)).into_owned(),
            None => text.to_string(),
        };
        for s in &list {
            let machine = if other_machines {
                format!("{:<width$}", label(s), width = width)
            } else {
                String::new()
            };
            let head = format!(
                "{}  {:<7} {machine}{:>5} msgs  {}  ",
                s.updated_at
                    .as_deref()
                    .map(short_time)
                    .unwrap_or("?".into()),
                s.agent,
                s.messages,
                one_line_field(&s.session_id),
            );
            let used = unicode_width::UnicodeWidthStr::width(head.as_str());
            if columns.is_some_and(|c| c < used + 24) {
                // Too little room after the id (a narrow terminal, a sub-agent's long id):
                // the title gets a line of its own, above the project.
                out!("{}", head.trim_end());
                out!(
                    "{:>w$}{}",
                    "",
                    fit(
                        &one_line_field(s.title.as_deref().unwrap_or("(untitled)")),
                        37 + width
                    ),
                    w = 37 + width
                );
            } else {
                out!(
                    "{head}{}",
                    fit(
                        &one_line_field(s.title.as_deref().unwrap_or("(untitled)")),
                        used
                    )
                );
            }
            if let Some(p) = &s.project {
                // A folder's name may hold a line break: one line, so that it forges no session.
                out!(
                    "{:>w$}{}",
                    "",
                    fit(&one_line_field(p), 37 + width),
                    w = 37 + width
                );
            }
        }
        // The list may be cut: say so, and how to see more (on stderr, as the other notes).
        if cut {
            eprintln!(
                "note: the list stops at {}; a larger -n (--limit) shows more",
                crate::output::plural(limit as u64, "session", "sessions")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `memtrail sessions show ID`: Markdown, or JSON; a deleted session says how to capture it again.
pub fn show(
    db: &StoreLocation,
    id: &str,
    offset: u32,
    limit: Option<u32>,
    json: bool,
) -> Result<ExitCode> {
    let Some(store) = open_reader(db)? else {
        bail!(
            "no session `{id}`: the store at {} is empty (run `memtrail import`)",
            db
        );
    };
    let view = match store.get_session(
        id,
        None,
        offset as i64,
        limit.map(i64::from).unwrap_or(i64::MAX),
        None,
    ) {
        Err(memtrail_runtime::Error::NotFound(_)) if store.is_deleted(id)? => {
            bail!(
                "session `{id}` was deleted; `memtrail sessions capture {id}` brings it back (its transcript is still on disk)"
            );
        }
        r => r?,
    };
    if json {
        out!("{}", crate::output::json(&view)?);
    } else {
        // On a terminal through $PAGER (less -R by default), as git does; else printed.
        crate::output::print_paged(&query::session_markdown(&view), false)?;
        // A part of the session: which, and how to see the rest (on stderr, as the other notes).
        let shown = view.messages.len() as i64;
        let end = view.offset + shown;
        if view.total > 0 && shown == 0 && view.offset >= view.total {
            eprintln!(
                "note: --offset {} is past the session's end: it has {} (#0–#{})",
                view.offset,
                plural(view.total as u64, "message", "messages"),
                view.total - 1
            );
        } else if shown > 0 && (view.offset > 0 || end < view.total) {
            eprintln!(
                "note: {} of {} shown{}",
                if shown == 1 {
                    format!("message #{}", view.offset)
                } else {
                    format!("messages #{}–#{}", view.offset, end - 1)
                },
                view.total,
                if end < view.total {
                    format!("; --offset {end} shows the next")
                } else {
                    String::new()
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `memtrail sessions delete ID`: asks (or needs `--yes`), then deletes; exit code 1 when declined.
pub fn delete_session(db: &StoreLocation, id: &str, yes: bool, json: bool) -> Result<ExitCode> {
    let Some(mut store) = open_store_read(db)? else {
        bail!("no session `{id}`: the store at {} is empty", db);
    };
    let info = memtrail_runtime::maintenance::session_info(&store, id)?;
    let what = format!(
        "{} session {} ({}; {}{}{})",
        info.agent,
        one_line_field(&info.session_id),
        one_line_field(info.title.as_deref().unwrap_or("untitled")),
        plural(info.messages, "message", "messages"),
        if info.subagents > 0 {
            format!(
                ", {}",
                plural(info.subagents, "sub-agent session", "sub-agent sessions")
            )
        } else {
            String::new()
        },
        info.project
            .as_deref()
            .map(|p| format!(", in {}", one_line_field(p)))
            .unwrap_or_default()
    );
    let prompt = match &info.machine {
        Some(label) => format!(
            "Delete {what}? It belongs to machine {label}: it will be deleted there and from PostgreSQL at the next sync. This cannot be undone"
        ),
        None => format!(
            "Delete {what}? `memtrail sessions capture {}` brings it back while its transcript is still on disk",
            info.session_id
        ),
    };
    let prompt = match same_id_note(&info) {
        Some(note) => format!("{prompt}. {note}"),
        None => prompt,
    };
    if !confirm_destructive(&prompt, yes)? {
        eprintln!("nothing deleted");
        return Ok(ExitCode::FAILURE);
    }
    let info = memtrail_runtime::maintenance::delete_session(&mut store, &info.session_id)?;
    crate::commands::sync_auto::mark_running_sync(db);
    if json {
        out!(
            "{}",
            crate::output::json(&Deleted {
                deleted: &info,
                wal_kept: info.wal_kept,
            })?
        );
    } else {
        out!("deleted {what}");
        if let Some(label) = &info.machine {
            out!(
                "it belonged to machine {label}: the next `memtrail sync` deletes it from PostgreSQL, and machine {label} deletes it at its next sync"
            );
        } else {
            out!(
                "its transcript stays where the agent keeps it; memtrail will not read it again, nor what is added to the session later (`memtrail sessions capture {}` captures it again)",
                info.session_id
            );
        }
        if let Some(note) = same_id_note(&info) {
            out!("{note}");
        }
    }
    if info.wal_kept {
        eprintln!(
            "{}",
            crate::output::wal_kept_warning("deleted", "redact --rescan")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// What `sessions delete` says of the other sessions with the deleted one's id (which stay):
/// `None` when there is none.
fn same_id_note(info: &memtrail_runtime::maintenance::SessionInfo) -> Option<String> {
    let first = info.same_id.first()?;
    let name = |o: &memtrail_runtime::maintenance::SameId| match &o.machine {
        Some(label) => format!("the {} session pulled from machine {label}", o.agent),
        None => format!("this machine's own {} session", o.agent),
    };
    let others = if info.same_id.len() == 1 {
        format!("another session with this id stays: {}", name(first))
    } else {
        format!(
            "{} other sessions with this id stay: {}",
            info.same_id.len(),
            info.same_id.iter().map(name).collect::<Vec<_>>().join(", ")
        )
    };
    Some(format!(
        "{others} (`memtrail sessions delete {}` again deletes {})",
        info.session_id,
        if info.same_id.len() == 1 {
            "it"
        } else {
            "the first"
        }
    ))
}

/// `memtrail sessions capture ID`: reads a deleted session's transcripts again.
pub fn capture(db: &StoreLocation, id: &str, json: bool) -> Result<ExitCode> {
    let mut store = open_store(db)?;
    let r = memtrail_runtime::maintenance::capture_again(&mut store, id)?;
    if json {
        out!("{}", crate::output::json(&Captured { captured: &r })?);
    } else {
        out!(
            "captured {} session {} again: {} from {}",
            r.agent,
            r.session_id,
            plural(r.messages, "message", "messages"),
            plural(r.transcripts, "transcript", "transcripts")
        );
    }
    Ok(ExitCode::SUCCESS)
}
