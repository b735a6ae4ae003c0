//! `memtrail export`: sessions as Markdown, JSON, JSON Lines or a self-contained HTML page,
//! read from the store (whose text is redacted as stored; transcripts are never read here).
//! A session's messages are read [`PAGE`] at a time and written as they come, and `--all`
//! lists sessions [`SESSIONS_PAGE`] at a time: the store is never loaded whole.
//!
//! The formats (docs/json.md, "memtrail export"):
//! - `md`: what `sessions show` prints;
//! - `json`: one document per session, `{"memtrail_export": 1, "session": SessionSummary,
//!   "total": count, "children": [id], "messages": [MessageView], "events": [StoredEvent]}`,
//!   one message or event per line;
//! - `jsonl`: one line per message, `{"session_id", "agent", …MessageView}`;
//! - `html`: [`memtrail_web::export`].

use crate::cli::{ExportArgs, ExportFormat};
use crate::common::{absolute, open_reader};
use anyhow::{Context, Result, anyhow, bail};
use memtrail_runtime::StoreLocation;
use memtrail_runtime::query::{self, ListFilter, SessionSummary, SessionView};
use memtrail_runtime::read::ReadStore;
use memtrail_runtime::time::{Bound, parse_date};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Messages read at a time.
const PAGE: i64 = 200;
/// Sessions listed at a time by `--all`.
const SESSIONS_PAGE: usize = 100;

impl ExportFormat {
    /// The file name extension.
    fn ext(self) -> &'static str {
        match self {
            ExportFormat::Md => "md",
            ExportFormat::Json => "json",
            ExportFormat::Jsonl => "jsonl",
            ExportFormat::Html => "html",
        }
    }
}

/// `memtrail export`.
pub fn export(db: &StoreLocation, a: ExportArgs) -> Result<ExitCode> {
    match run(db, a) {
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            Ok(ExitCode::SUCCESS)
        }
        r => r,
    }
}

fn run(db: &StoreLocation, a: ExportArgs) -> Result<ExitCode> {
    let Some(store) = open_reader(db)? else {
        bail!("nothing to export: the store at {db} is empty (run `memtrail import`)");
    };
    let store = store.as_ref();
    if let Some(id) = &a.session {
        let rowid = match store.resolve_session(id, None) {
            Err(memtrail_runtime::Error::NotFound(_)) if store.is_deleted(id)? => bail!(
                "session `{id}` was deleted; `memtrail sessions capture {id}` brings it back (its transcript is still on disk)"
            ),
            r => r?,
        };
        let s = store.session_summary(rowid)?;
        match &a.output {
            None => write_session(store, &s, a.format, &mut stdout_writer())?,
            Some(p) => {
                let path = if p.is_dir() {
                    p.join(file_name(&s, a.format))
                } else {
                    p.clone()
                };
                write_file(&path, |w| write_session(store, &s, a.format, w))?;
                // The id is the transcript's word (and part of the file's name).
                eprintln!(
                    "exported session {} to {}",
                    crate::output::terminal_safe(&s.session_id),
                    crate::output::terminal_safe(&path.display().to_string())
                );
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let dir = match (&a.output, a.format) {
        (Some(d), _) => {
            make_dir(d)?;
            Some(d.clone())
        }
        (None, ExportFormat::Jsonl) => None,
        (None, _) => bail!(
            "--all writes one file per session: give a folder with -o DIR (or stream every message with --format jsonl)"
        ),
    };
    let mut filter = ListFilter {
        agent: a.agent.map(|x| x.as_str().to_string()),
        project: a.project.as_deref().map(absolute),
        since: a
            .since
            .as_deref()
            .map(|s| parse_date(s, Bound::Start))
            .transpose()?,
        limit: SESSIONS_PAGE,
        ..Default::default()
    };
    let mut n = 0usize;
    let mut stdout = stdout_writer();
    // A count on stderr while it runs (not when the sessions stream to the same terminal).
    let streaming_to_terminal = dir.is_none() && {
        use std::io::IsTerminal;
        std::io::stdout().is_terminal()
    };
    let pb = crate::output::spinner("exporting: {pos} sessions", streaming_to_terminal);
    // Sessions are listed by last activity, a page at a time. One that hooks update meanwhile
    // moves to the top: the pages after it shift (a session comes twice: written once, by
    // the `done` set) and it is not met again; so a last pass takes the sessions active since
    // the export began that were not written yet.
    let started = memtrail_runtime::now_ms();
    let mut done: std::collections::HashSet<(String, String)> = Default::default();
    // The file names this run wrote (lower case).
    let mut names: std::collections::HashSet<String> = Default::default();
    for last_pass in [false, true] {
        if last_pass {
            filter.since = Some(filter.since.unwrap_or(i64::MIN).max(started));
            filter.offset = 0;
        }
        loop {
            let page = store.list_sessions(&filter)?;
            for s in &page {
                if !done.insert((s.agent.clone(), s.session_id.clone())) {
                    continue;
                }
                match &dir {
                    Some(d) => {
                        let name = unclaimed(file_name(s, a.format), &mut names);
                        write_file(&d.join(name), |w| write_session(store, s, a.format, w))?;
                    }
                    None => write_session(store, s, a.format, &mut stdout)?,
                }
                n += 1;
                pb.set_position(n as u64);
            }
            if page.len() < SESSIONS_PAGE {
                break;
            }
            filter.offset += page.len();
        }
    }
    pb.finish_and_clear();
    stdout.flush()?;
    match &dir {
        Some(d) => eprintln!(
            "exported {} to {}",
            crate::output::plural(n as u64, "session", "sessions"),
            d.display()
        ),
        None if n == 0 => eprintln!("no sessions match"),
        None => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// How many characters of a session id a file name keeps (file systems allow 255 bytes).
const FILE_ID_CHARS: usize = 120;

/// How many characters of an agent's name a file name keeps (another machine's rows may name
/// any agent).
const FILE_AGENT_CHARS: usize = 32;

/// `<agent>-<session id>.<ext>`, every character but `A-Z a-z 0-9 . _ -` of the id (a
/// sub-agent's `<id>/agent-…`) as `_`, and of the agent's name (another machine's word, in a
/// pulled or PostgreSQL store) all but `A-Z a-z 0-9` left out and at most [`FILE_AGENT_CHARS`]
/// kept. When either changed that way,
/// or the id is longer than [`FILE_ID_CHARS`], the id is cut there and followed by `~` and 12
/// hex digits of the BLAKE3 hash of the agent's name, a NUL and the id: `~` is never in a name
/// kept as it was, so no session's name is another's (`a:1`, `a_1`, `a_1~<hash of a:1>`), and no
/// name is too long.
fn file_name(s: &SessionSummary, f: ExportFormat) -> String {
    let safe: String = s
        .session_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let agent: String = s
        .agent
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(FILE_AGENT_CHARS)
        .collect();
    if safe == s.session_id && agent == s.agent && safe.len() <= FILE_ID_CHARS {
        return format!("{agent}-{safe}.{}", f.ext());
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update(s.agent.as_bytes());
    hasher.update(b"\0");
    hasher.update(s.session_id.as_bytes());
    let hash = hasher.finalize().to_hex();
    let cut: String = safe.chars().take(FILE_ID_CHARS).collect();
    format!("{agent}-{cut}~{}.{}", &hash[..12], f.ext())
}

/// `name` (from [`file_name`]), or `<stem>~2.<ext>`, `~3`, … when an earlier session of the same
/// `--all` run took it, compared without case (a file system that ignores case would write both
/// to one file).
fn unclaimed(name: String, taken: &mut std::collections::HashSet<String>) -> String {
    if taken.insert(name.to_lowercase()) {
        return name;
    }
    let (stem, ext) = name.rsplit_once('.').unwrap_or((name.as_str(), ""));
    (2..)
        .map(|n| format!("{stem}~{n}.{ext}"))
        .find(|candidate| taken.insert(candidate.to_lowercase()))
        .expect("a free name")
}

/// Standard output; on a terminal, with every control character of the transcripts' text made
/// visible ([`crate::output::TerminalSafe`]): HTML and JSON would pass escape sequences on.
fn stdout_writer() -> Box<dyn Write> {
    use std::io::IsTerminal;
    let out = std::io::stdout();
    if out.is_terminal() {
        Box::new(crate::output::TerminalSafe(out.lock()))
    } else {
        Box::new(out.lock())
    }
}

/// The folder `d`, created with mode 0700 when missing.
fn make_dir(d: &Path) -> Result<()> {
    if d.is_dir() {
        return Ok(());
    }
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(d)
        .with_context(|| format!("cannot create {}", d.display()))
}

/// Writes the file at `path` with `fill`: into a temporary file next to it (mode 0600), renamed
/// over it once whole; nothing is left behind on an error.
fn write_file(path: &Path, fill: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        bail!(
            "cannot write {}: there is no folder {} (create it first, or give -o a folder that exists)",
            path.display(),
            dir.display()
        );
    }
    // The temporary file's own name stays out of the message: it was never the user's.
    let tmp = tempfile::NamedTempFile::new_in(&dir)
        .map_err(|e| anyhow!("cannot write in {}: {}", dir.display(), e.kind()))?;
    let mut w = std::io::BufWriter::new(tmp);
    fill(&mut w)?;
    let tmp = w.into_inner().map_err(|e| anyhow!("{}", e.error()))?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .map_err(|e| anyhow!("cannot write {}: {}", path.display(), e.error))?;
    Ok(())
}

/// Session `s` in format `f` on `w`, its messages read a page at a time.
fn write_session(
    store: &dyn ReadStore,
    s: &SessionSummary,
    f: ExportFormat,
    w: &mut dyn Write,
) -> Result<()> {
    let mut offset = 0i64;
    let first = store.get_session(&s.session_id, Some(&s.agent), 0, PAGE, None)?;
    let head = SessionView {
        messages: Vec::new(),
        ..first.clone()
    };
    let mut page = first;
    let mut html_end = String::new();
    match f {
        ExportFormat::Md => {
            let text = query::session_markdown(&head);
            w.write_all(crate::output::terminal_safe(&text).as_bytes())?;
        }
        ExportFormat::Json => {
            write!(
                w,
                "{{\"memtrail_export\":1,\"session\":{},\"total\":{},\"children\":{},\"messages\":[",
                crate::output::json_line(&head.session)?,
                head.total,
                crate::output::json_line(&head.children)?
            )?;
        }
        ExportFormat::Jsonl => {}
        ExportFormat::Html => {
            let (start, end) = memtrail_web::export::page(&head);
            w.write_all(start.as_bytes())?;
            html_end = end;
        }
    }
    loop {
        for (i, m) in page.messages.iter().enumerate() {
            match f {
                ExportFormat::Md => {}
                ExportFormat::Json => {
                    let sep = if offset == 0 && i == 0 { "\n" } else { ",\n" };
                    write!(w, "{sep}{}", crate::output::json_line(m)?)?;
                }
                ExportFormat::Jsonl => {
                    let mut line = serde_json::Map::new();
                    line.insert("session_id".into(), s.session_id.clone().into());
                    line.insert("agent".into(), s.agent.clone().into());
                    if let serde_json::Value::Object(fields) = serde_json::to_value(m)? {
                        line.extend(fields);
                    }
                    writeln!(
                        w,
                        "{}",
                        crate::output::json_line(&serde_json::Value::Object(line))?
                    )?;
                }
                ExportFormat::Html => {}
            }
        }
        match f {
            ExportFormat::Md => {
                let text = query::messages_markdown(&page.messages);
                w.write_all(crate::output::terminal_safe(&text).as_bytes())?;
            }
            ExportFormat::Html => {
                w.write_all(memtrail_web::export::messages(&page.messages).as_bytes())?;
            }
            _ => {}
        }
        let got = page.messages.len() as i64;
        if got < PAGE {
            break;
        }
        offset += got;
        page = store.get_session(&s.session_id, Some(&s.agent), offset, PAGE, None)?;
    }
    match f {
        ExportFormat::Json => {
            let rowid = store.resolve_session(&s.session_id, Some(&s.agent))?;
            w.write_all(b"\n],\"events\":[")?;
            for (i, e) in store.session_events(rowid)?.iter().enumerate() {
                let sep = if i == 0 { "\n" } else { ",\n" };
                write!(w, "{sep}{}", crate::output::json_line(e)?)?;
            }
            w.write_all(b"\n]}\n")?;
        }
        ExportFormat::Html => w.write_all(html_end.as_bytes())?,
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(agent: &str, id: &str) -> String {
        let s = SessionSummary {
            session_id: id.to_string(),
            agent: agent.to_string(),
            machine: String::new(),
            title: None,
            project: None,
            model: None,
            git_branch: None,
            started_at: None,
            updated_at: None,
            messages: 0,
            parent_session_id: None,
        };
        file_name(&s, ExportFormat::Md)
    }

    /// Ids that a file name keeps as they are keep their name; two ids that would share one
    /// (`:` and `_` both written `_`) get a file each; an id too long for a file name is cut
    /// and hashed (the hash hand-checked: BLAKE3 of `coll:1`).
    #[test]
    fn every_session_gets_a_file_of_its_own_within_the_length_a_file_system_allows() {
        assert_eq!(named("codex", "coll_1"), "codex-coll_1.md");
        let hashed = blake3::hash(b"codex\0coll:1").to_hex();
        assert_eq!(
            named("codex", "coll:1"),
            format!("codex-coll_1~{}.md", &hashed[..12])
        );
        // An id crafted as another's hashed name keeps its own (a review: `victim_1-<hash>`
        // overwrote `victim:1`'s file): `~` is never kept from an id.
        let crafted = format!("coll_1~{}", &hashed[..12]);
        assert_ne!(named("codex", &crafted), named("codex", "coll:1"));
        // An agent's name that had to change is hashed too.
        assert_ne!(named("cl.aude", "abc"), named("claude", "abc"));
        assert_eq!(named("claude", "abc"), "claude-abc.md");
        // An agent's name of 300 characters (a pulled row): cut, hashed, within 255 bytes.
        let agent = named(&"a".repeat(300), &"x".repeat(400));
        assert!(agent.len() < 255 && agent.contains('~'), "{}", agent.len());
        assert_ne!(named("codex", "coll:1"), named("codex", "coll_1"));
        let sub = named("claude", "3f2a/agent-a1");
        assert!(
            sub.starts_with("claude-3f2a_agent-a1~") && sub.ends_with(".md"),
            "{sub}"
        );
        let long = named("codex", &"x".repeat(400));
        assert!(long.len() < 255, "{}", long.len());
        assert_ne!(long, named("codex", &"x".repeat(401)));
        let just = "y".repeat(FILE_ID_CHARS);
        assert_eq!(named("codex", &just), format!("codex-{just}.md"));
    }

    /// A name taken earlier in the run, in any case, gets `~2`, `~3`, … before its extension.
    #[test]
    fn a_name_taken_in_the_run_is_not_written_twice() {
        let mut taken = Default::default();
        assert_eq!(unclaimed("claude-Ab.md".into(), &mut taken), "claude-Ab.md");
        assert_eq!(
            unclaimed("claude-ab.md".into(), &mut taken),
            "claude-ab~2.md"
        );
        assert_eq!(
            unclaimed("claude-AB.md".into(), &mut taken),
            "claude-AB~3.md"
        );
        assert_eq!(unclaimed("claude-c.md".into(), &mut taken), "claude-c.md");
    }
}
