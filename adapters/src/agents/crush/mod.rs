//! Crush (charmbracelet/crush): its per-project SQLite database `<project>/.crush/crush.db`,
//! imported (Crush runs only `PreToolUse` hooks).
//!
//! Format, traps and sources: `docs/agents/crush.md`. In short: `sessions` (`id`,
//! `parent_session_id`, `title`, `created_at`/`updated_at`) and `messages` (`id` a UUID,
//! `session_id`, `role` `user|assistant|tool|system`, `parts` a JSON array of `{"type", "data"}`,
//! `model`, `provider`, `is_summary_message`, `created_at`/`updated_at`/`finished_at`). Crush
//! updates a message in place while it streams, and writes every time with SQLite's
//! `strftime('%s', 'now')`: **seconds**, whatever the schema's comments say (milliseconds).
//! The reader's watermark is the largest `updated_at` seen (in ms); a read gives again, whole,
//! every message changed after it minus [`REREAD_OVERLAP_MS`] (one-second resolution), as
//! [`Record::Replace`].

pub mod adapter;
pub mod paths;
pub mod registration;

use crate::agents::goose::readonly::{self, int_of, text_of, with_db};
use crate::model::{
    Agent, HookEvent, Kind, Message, ParseStats, Part, Record, Role, SessionMeta, SessionRef,
    ToolCall, normalize_tool_name, title_text,
};
use crate::{DbBatch, DbSession, Source};
use rusqlite::{Connection, OptionalExtension};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The database's file name, in a project's data folder (`.crush` by default).
pub const DB_NAME: &str = "crush.db";
/// A project's default data folder name.
pub const DATA_DIR_NAME: &str = ".crush";

/// How far back (ms) before the watermark a read looks again: Crush's times have one-second
/// resolution, and a write stamped in the watermark's second may commit after the read.
pub const REREAD_OVERLAP_MS: i64 = 10_000;

/// Longest title kept (characters).
const TITLE_CHARS: usize = 200;

fn locations() -> paths::Locations {
    paths::Locations::resolve(&crate::Env::from_process())
}

fn db_err(db: &Path, e: rusqlite::Error) -> crate::Error {
    readonly::db_err("Crush", db, e)
}

/// Seconds (what Crush writes) to ms; a value that already looks like ms is kept.
fn to_ms(t: i64) -> i64 {
    if t.abs() >= 100_000_000_000 {
        t
    } else {
        t.saturating_mul(1000)
    }
}

/// The common tool name of a Crush tool (`view` → read, `bash` → shell, `todos` → todo,
/// `mcp_<server>_<tool>` → mcp, …).
fn common_tool(name: &str) -> String {
    match name {
        "todos" => "todo".to_string(),
        "multiedit" => "edit".to_string(),
        "download" => "web_fetch".to_string(),
        "agent" | "agentic_fetch" => "subagent".to_string(),
        _ => normalize_tool_name(name),
    }
}

/// One `messages` row.
struct Row {
    id: String,
    session: String,
    role: String,
    parts: Option<Vec<Value>>,
    model: Option<String>,
    created: Option<i64>,
    /// `updated_at` in ms.
    updated: i64,
    summary: bool,
}

/// A tool result part: `(output, is_error)`.
fn result_of(d: &Value) -> (String, bool) {
    let content = d.get("content").and_then(Value::as_str).unwrap_or("");
    (
        content.to_string(),
        d.get("is_error").and_then(Value::as_bool).unwrap_or(false),
    )
}

/// The message of a `user`/`assistant` row (tool results are attached later).
fn message_of(r: &Row, stats: &mut ParseStats) -> Option<Message> {
    let parts = r.parts.as_deref().unwrap_or(&[]);
    let mut out = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let d = p.get("data").unwrap_or(&Value::Null);
        let s = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("");
        match p.get("type").and_then(Value::as_str) {
            Some("text") if !s("text").trim().is_empty() => out.push(Part::Text {
                text: s("text").to_string(),
            }),
            Some("reasoning") if !s("thinking").trim().is_empty() => out.push(Part::Thinking {
                text: s("thinking").to_string(),
            }),
            Some("tool_call") => {
                let name = s("name").to_string();
                let input = serde_json::from_str::<Value>(s("input"))
                    .unwrap_or_else(|_| Value::String(s("input").to_string()));
                out.push(Part::ToolCall(ToolCall {
                    id: s("id").to_string(),
                    tool: common_tool(&name),
                    name,
                    input,
                    output: None,
                    is_error: false,
                    exit_code: None,
                }));
            }
            Some("shell_command") => {
                let code = d.get("exit_code").and_then(Value::as_i64);
                out.push(Part::ToolCall(ToolCall {
                    id: format!("{}-shell-{i}", r.id),
                    name: "shell_command".into(),
                    tool: "shell".into(),
                    input: serde_json::json!({ "command": s("command") }),
                    output: Some(s("output").to_string()),
                    is_error: code.is_some_and(|c| c != 0),
                    exit_code: code,
                }));
            }
            // Images, binary attachments, finish markers: nothing to keep.
            _ => {}
        }
    }
    if out.is_empty() {
        stats.skipped_known += 1;
        return None;
    }
    let role = if r.role == "assistant" {
        Role::Assistant
    } else {
        Role::User
    };
    let kind = if r.summary {
        Kind::Summary
    } else {
        Message::infer_kind(&out)
    };
    Some(Message {
        id: r.id.clone(),
        role,
        kind,
        parts: out,
        timestamp: r.created.map(to_ms),
        model: (role == Role::Assistant)
            .then(|| r.model.clone())
            .flatten()
            .filter(|m| !m.is_empty()),
    })
}

/// One session's rows (in `created_at`, rowid order) → the records of the messages changed
/// after `cutoff` (ms), each whole with the results of its calls, and the session's meta.
fn convert(
    rows: &[Row],
    cutoff: i64,
    meta: &mut SessionMeta,
    stats: &mut ParseStats,
) -> Vec<Record> {
    // Every message, and where each call is: results are attached whatever their age, so that a
    // message given again carries its outputs.
    let mut msgs: Vec<(Message, i64)> = Vec::new();
    let mut calls: HashMap<String, (usize, usize)> = HashMap::new();
    let mut orphans: Vec<Record> = Vec::new();
    for r in rows {
        stats.lines += 1;
        let Some(parts) = r.parts.as_ref() else {
            stats.malformed += 1;
            continue;
        };
        match r.role.as_str() {
            "user" | "assistant" => {
                let Some(m) = message_of(r, stats) else {
                    continue;
                };
                if m.role == Role::User && m.kind == Kind::Text && meta.title.is_none() {
                    meta.title = Some(title_text(&m.text(), TITLE_CHARS));
                }
                if m.model.is_some() {
                    meta.model = m.model.clone();
                }
                meta.absorb(SessionMeta {
                    started_at: m.timestamp,
                    updated_at: Some(r.updated),
                    ..SessionMeta::default()
                });
                for (k, p) in m.parts.iter().enumerate() {
                    if let Part::ToolCall(c) = p {
                        calls.insert(c.id.clone(), (msgs.len(), k));
                    }
                }
                msgs.push((m, r.updated));
            }
            "tool" => {
                for p in parts {
                    if p.get("type").and_then(Value::as_str) != Some("tool_result") {
                        continue;
                    }
                    let d = p.get("data").unwrap_or(&Value::Null);
                    let id = d.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
                    let (output, is_error) = result_of(d);
                    match calls.get(id) {
                        Some(&(i, k)) => {
                            let (m, changed) = &mut msgs[i];
                            if let Some(Part::ToolCall(c)) = m.parts.get_mut(k) {
                                c.output = Some(output);
                                c.is_error = is_error;
                            }
                            *changed = (*changed).max(r.updated);
                        }
                        None if r.updated > cutoff => orphans.push(Record::ToolResult {
                            call_id: id.to_string(),
                            output,
                            is_error,
                            exit_code: None,
                            timestamp: r.created.map(to_ms),
                        }),
                        None => {}
                    }
                }
            }
            // `system` rows: Crush's own prompts.
            _ => stats.skipped_known += 1,
        }
    }
    let mut out: Vec<Record> = msgs
        .into_iter()
        .filter(|(_, changed)| *changed > cutoff)
        .map(|(m, _)| Record::Replace(m))
        .collect();
    out.extend(orphans);
    out
}

/// A `sessions` row → the session and its meta (title, parent, times).
fn session_info(
    conn: &Connection,
    db: &Path,
    id: &str,
) -> Result<(SessionRef, SessionMeta), crate::Error> {
    /// `(title, parent_session_id, created_at, updated_at)`.
    type SessionRow = (Option<String>, Option<String>, Option<i64>, Option<i64>);
    let row: Option<SessionRow> = conn
        .query_row(
            "SELECT title, parent_session_id, created_at, updated_at FROM sessions WHERE id = ?1",
            [id],
            |r| {
                Ok((
                    text_of(r.get_ref(0)?),
                    text_of(r.get_ref(1)?),
                    int_of(r.get_ref(2)?),
                    int_of(r.get_ref(3)?),
                ))
            },
        )
        .optional()
        .map_err(|e| db_err(db, e))?;
    let (title, parent, created, updated) = row.unwrap_or_default();
    let meta = SessionMeta {
        project_dir: project_of(db),
        title: title
            .filter(|t| !t.trim().is_empty())
            .map(|t| title_text(&t, TITLE_CHARS)),
        started_at: created.map(to_ms),
        updated_at: updated.map(to_ms),
        ..SessionMeta::default()
    };
    Ok((
        SessionRef {
            agent: Agent::Crush,
            external_id: id.to_string(),
            parent_external_id: parent.filter(|p| !p.is_empty() && p != id),
        },
        meta,
    ))
}

/// The project of a `crush.db`: the folder holding its `.crush` data folder, else the project
/// `projects.json` gives for that data folder.
pub fn project_of(db: &Path) -> Option<String> {
    let data = db.parent()?;
    if data.file_name().is_some_and(|n| n == DATA_DIR_NAME) {
        return data.parent().map(|p| p.to_string_lossy().into_owned());
    }
    projects(&locations().projects)
        .into_iter()
        .find(|(_, d)| d == data)
        .map(|(p, _)| p.to_string_lossy().into_owned())
}

/// `projects.json`'s `(path, data_dir)` pairs (empty when the file is missing or unreadable).
pub fn projects(file: &Path) -> Vec<(PathBuf, PathBuf)> {
    let Ok(text) = crate::paths::read_small(file, 8 * 1024 * 1024) else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_slice::<Value>(&text) else {
        return Vec::new();
    };
    v.get("projects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let path = p.get("path")?.as_str()?;
            let data = p.get("data_dir")?.as_str()?;
            Some((PathBuf::from(path), PathBuf::from(data)))
        })
        .collect()
}

/// The `messages` table must exist with the columns memtrail reads.
fn check_tables(conn: &Connection, db: &Path) -> Result<Vec<String>, crate::Error> {
    let cols = readonly::columns(conn, "messages").map_err(|e| db_err(db, e))?;
    let needed = [
        "id",
        "session_id",
        "role",
        "parts",
        "created_at",
        "updated_at",
    ];
    if needed.iter().any(|n| !cols.iter().any(|c| c == n)) {
        return Err(crate::Error::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{} is not a Crush database (no messages table with id, session_id, role, \
                 parts, created_at and updated_at)",
                db.display()
            ),
        )));
    }
    Ok(cols)
}

/// Read what changed in Crush's database since the watermark `since` (ms; `0` or less reads
/// everything) for `session`, or (`None`) every session: each message whose row, or the row of
/// one of its calls' results, was updated after `since - REREAD_OVERLAP_MS`, whole, as
/// [`Record::Replace`], in conversation order. The watermark of the result is the largest
/// `updated_at` (ms) of the rows read.
///
/// Errors: the file cannot be opened read-only as a SQLite database, has no Crush `messages`
/// table, or a query fails.
pub fn read_db(db: &Path, session: Option<&str>, since: i64) -> Result<DbBatch, crate::Error> {
    with_db("Crush", db, |conn| read_db_on(conn, db, session, since))
}

fn read_db_on(
    conn: &Connection,
    db: &Path,
    session: Option<&str>,
    since: i64,
) -> Result<DbBatch, crate::Error> {
    let cols = check_tables(conn, db)?;
    let col = |c: &str| {
        if cols.iter().any(|x| x == c) {
            format!("\"{c}\"")
        } else {
            "NULL".to_string()
        }
    };
    let sql = format!(
        "SELECT id, session_id, role, parts, {}, created_at, updated_at, {} FROM messages{} \
         ORDER BY session_id, created_at, rowid",
        col("model"),
        col("is_summary_message"),
        if session.is_some() {
            " WHERE session_id = ?1"
        } else {
            ""
        },
    );
    let mut stmt = conn.prepare(&sql).map_err(|e| db_err(db, e))?;
    let map = |r: &rusqlite::Row<'_>| -> rusqlite::Result<Row> {
        Ok(Row {
            id: text_of(r.get_ref(0)?).unwrap_or_default(),
            session: text_of(r.get_ref(1)?).unwrap_or_default(),
            role: text_of(r.get_ref(2)?).unwrap_or_default(),
            parts: text_of(r.get_ref(3)?).and_then(|p| serde_json::from_str::<Vec<Value>>(&p).ok()),
            model: text_of(r.get_ref(4)?),
            created: int_of(r.get_ref(5)?),
            updated: int_of(r.get_ref(6)?).map(to_ms).unwrap_or(0),
            summary: int_of(r.get_ref(7)?).is_some_and(|v| v != 0),
        })
    };
    let rows: Vec<Row> = match session {
        Some(s) => stmt.query_map([s], map),
        None => stmt.query_map([], map),
    }
    .map_err(|e| db_err(db, e))?
    .flatten()
    .collect();
    drop(stmt);
    let cutoff = if since <= 0 {
        i64::MIN
    } else {
        since.saturating_sub(REREAD_OVERLAP_MS)
    };
    let mut watermark = since;
    let mut sessions = Vec::new();
    let mut start = 0;
    while start < rows.len() {
        let sid = rows[start].session.clone();
        let end = rows[start..]
            .iter()
            .position(|r| r.session != sid)
            .map_or(rows.len(), |n| start + n);
        let group = &rows[start..end];
        start = end;
        let newest = group.iter().map(|r| r.updated).max().unwrap_or(since);
        watermark = watermark.max(newest);
        if newest <= cutoff {
            continue;
        }
        let (sref, mut meta) = session_info(conn, db, &sid)?;
        let mut from_rows = SessionMeta::default();
        let mut stats = ParseStats::default();
        let records = convert(group, cutoff, &mut from_rows, &mut stats);
        if meta.title.is_some() {
            from_rows.title = None;
        }
        meta.absorb(from_rows);
        sessions.push(DbSession {
            session: sref,
            meta,
            records,
            stats,
        });
    }
    sessions.sort_by_key(|s| {
        (
            s.session.parent_external_id.is_some(),
            s.meta.started_at.unwrap_or(i64::MAX),
            s.session.external_id.clone(),
        )
    });
    Ok(DbBatch {
        sessions,
        watermark,
    })
}

/// The ids of every session in a Crush database, parents first, then by creation.
///
/// Errors: as [`read_db`].
pub fn db_session_ids(db: &Path) -> Result<Vec<String>, crate::Error> {
    with_db("Crush", db, |conn| {
        check_tables(conn, db)?;
        let mut stmt = conn
            .prepare(
                "SELECT id FROM sessions \
                 ORDER BY parent_session_id IS NOT NULL, created_at, id",
            )
            .map_err(|e| db_err(db, e))?;
        let ids = stmt
            .query_map([], |r| Ok(text_of(r.get_ref(0)?)))
            .map_err(|e| db_err(db, e))?
            .flatten()
            .flatten()
            .collect();
        Ok(ids)
    })
}

/// How to read `path`: a `crush.db` is a database of sessions.
pub fn source_for(path: &Path) -> Option<Source> {
    path.file_name()
        .is_some_and(|n| n == DB_NAME)
        .then_some(Source::Database)
}

/// A `crush.db` holds many sessions (`ErrorKind::InvalidInput`), as does any other file.
pub fn identify(path: &Path) -> std::io::Result<SessionRef> {
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "{} is not one Crush session (crush.db holds many)",
            path.display()
        ),
    ))
}

/// Every project database Crush lists in `projects.json`, for `memtrail import`.
///
/// Errors: none (a missing or unreadable `projects.json` lists nothing; a listed database that
/// is gone is left out).
pub fn discover() -> std::io::Result<crate::Discovery> {
    Ok(discover_in(&locations().projects))
}

/// [`discover`] from an explicit `projects.json`: each project's `<data_dir>/crush.db` that
/// exists, sorted, once.
pub fn discover_in(projects_json: &Path) -> crate::Discovery {
    let mut files: Vec<PathBuf> = projects(projects_json)
        .into_iter()
        .map(|(_, d)| d.join(DB_NAME))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files.dedup();
    files.into()
}

/// Parse a Crush hook payload (`internal/hooks/input.go` `Payload`): `{"event", "session_id",
/// "cwd", "tool_name", "tool_input"}`. memtrail registers no Crush hook; this reads the
/// payload when a user wires `memtrail hook crush` themselves.
///
/// Errors: an empty payload, not JSON, not an object.
pub fn parse_hook_payload(bytes: &[u8], env: &crate::Env) -> Result<HookEvent, crate::Error> {
    let _ = env;
    let payload = crate::agents::goose::object_payload(bytes)?;
    let get = |k: &str| crate::agents::goose::field(&payload, k);
    Ok(HookEvent {
        agent: Agent::Crush,
        event: get("event").unwrap_or_default(),
        session_id: get("session_id"),
        transcript_path: get("transcript_path"),
        cwd: get("cwd"),
        source: None,
        agent_transcript_path: None,
        extra: payload,
    })
}

/// The database of the event's project: its transcript path if it names one, else the
/// nearest `.crush/crush.db` at or above its working folder.
pub fn transcripts_for_event(ev: &HookEvent) -> Vec<PathBuf> {
    if let Some(t) = ev.transcript_path.as_deref().filter(|t| !t.is_empty()) {
        return vec![PathBuf::from(t)];
    }
    let Some(cwd) = ev.cwd.as_deref() else {
        return Vec::new();
    };
    Path::new(cwd)
        .ancestors()
        .take(32)
        .map(|d| d.join(DATA_DIR_NAME).join(DB_NAME))
        .find(|p| p.is_file())
        .into_iter()
        .collect()
}

/// Claude Code's SessionStart reply, which Crush's hook output parser also reads
/// (`hookSpecificOutput.additionalContext`).
pub fn session_start_reply(context: &str) -> Option<String> {
    Some(
        serde_json::json!({
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": context,
            }
        })
        .to_string(),
    )
}
