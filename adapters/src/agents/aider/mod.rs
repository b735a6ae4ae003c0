//! Aider (Aider-AI/aider): the per-repository chat log `.aider.chat.history.md`, imported
//! (Aider has no hooks).
//!
//! Format, traps and sources: `docs/agents/aider.md`. The file is Markdown that Aider appends to
//! (`InputOutput.append_chat_history`): every run starts with `# aider chat started at
//! YYYY-MM-DD HH:MM:SS` (local time, no zone), the user's input is written as `#### <line>`
//! lines, Aider's own output (tool output, warnings, questions) as `> <line>  ` lines, and the
//! model's answer as plain lines. No message has an id or a time.
//!
//! memtrail keeps one session per file (id `aider-<16 hex of the SHA-256 of its path>`, project
//! the file's folder), one message per block: `r<run>-<n>` (run counted from 1 by the headers,
//! `<n>` from 0 within it), every message of a run at the run's start time. The reader is a
//! [`DocReader`]: the log is read whole whenever it changed, because its blocks are delimited by
//! blank lines, which the runtime's line reading drops.

pub mod adapter;
pub mod paths;
pub mod registration;

use crate::model::{
    Agent, Batch, DocReader, HookEvent, Kind, Message, Part, Record, Role, SessionMeta, SessionRef,
    title_text,
};
use crate::{Discovery, Source};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The chat log's file name, at the root of the repository Aider ran in.
pub const HISTORY_FILE: &str = ".aider.chat.history.md";

/// The line that starts every run.
const RUN_HEADER: &str = "# aider chat started at ";

/// Longest title kept (characters).
const TITLE_CHARS: usize = 200;

/// The longest message kept whole (bytes); a longer block is stored in pieces (each its own
/// message).
const BLOCK_CAP: usize = 1024 * 1024;

/// What a block of lines is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Block {
    /// `#### ` lines: the user's input.
    User,
    /// `> ` lines: Aider's own output.
    Aider,
    /// Plain lines: the model's answer.
    Model,
}

/// The block being read, kept across reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Current {
    block: Block,
    lines: Vec<String>,
}

/// Where the reader is in the file; saved with the cursor.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct State {
    /// Runs seen (headers read).
    run: u32,
    /// Messages ended in the current run.
    n: u32,
    /// The current run's start (ms, the header's time read as UTC).
    started: Option<i64>,
    cur: Option<Current>,
}

/// The reader of one `.aider.chat.history.md` (its folder is the session's project).
#[derive(Debug, Default)]
pub struct AiderReader {
    project: Option<String>,
    st: State,
}

impl AiderReader {
    /// A reader for the chat log at `path`.
    pub fn for_path(path: &Path) -> AiderReader {
        AiderReader {
            project: path.parent().map(|p| p.to_string_lossy().into_owned()),
            st: State::default(),
        }
    }

    fn message(&self, cur: &Current) -> Option<Message> {
        let text = cur.lines.join("\n");
        let text = text.trim_matches('\n').trim_end();
        if text.trim().is_empty() {
            return None;
        }
        let (role, kind) = match cur.block {
            Block::User => (Role::User, Kind::Text),
            Block::Aider => (Role::System, Kind::Text),
            Block::Model => (Role::Assistant, Kind::Text),
        };
        Some(Message {
            id: format!("r{}-{}", self.st.run, self.st.n),
            role,
            kind,
            parts: vec![Part::Text {
                text: text.to_string(),
            }],
            timestamp: self.st.started,
            model: None,
        })
    }

    /// End the current block: its message, whole.
    fn end(&mut self, out: &mut Batch) {
        let Some(cur) = self.st.cur.take() else {
            return;
        };
        if let Some(m) = self.message(&cur) {
            if m.role == Role::User && out.meta.title.is_none() {
                out.meta.title = Some(title_text(&m.text(), TITLE_CHARS));
            }
            out.records.push(Record::Message(m));
            self.st.n += 1;
        }
    }

    fn push(&mut self, block: Block, line: String, out: &mut Batch) {
        let same = self.st.cur.as_ref().is_some_and(|c| {
            c.block == block && c.lines.iter().map(|l| l.len() + 1).sum::<usize>() < BLOCK_CAP
        });
        if !same {
            self.end(out);
            self.st.cur = Some(Current {
                block,
                lines: Vec::new(),
            });
        }
        if let Some(c) = self.st.cur.as_mut() {
            c.lines.push(line);
        }
    }
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff]` (Aider's local time, no zone) as ms, read as UTC.
fn header_time(s: &str) -> Option<i64> {
    crate::model::parse_rfc3339_ms(s.trim())
}

impl AiderReader {
    fn line(&mut self, line: &[u8], out: &mut Batch) {
        out.stats.lines += 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let text = String::from_utf8_lossy(line).into_owned();
        if let Some(t) = text.strip_prefix(RUN_HEADER) {
            self.end(out);
            self.st.run += 1;
            self.st.n = 0;
            self.st.started = header_time(t);
            out.stats.skipped_known += 1;
            out.meta.absorb(SessionMeta {
                started_at: self.st.started,
                updated_at: self.st.started,
                ..SessionMeta::default()
            });
            return;
        }
        if let Some(rest) = text
            .strip_prefix("####")
            .filter(|r| r.is_empty() || r.starts_with(' '))
        {
            let rest = rest.strip_prefix(' ').unwrap_or(rest);
            self.push(Block::User, rest.trim_end().to_string(), out);
            return;
        }
        if let Some(rest) = text
            .strip_prefix('>')
            .filter(|r| r.is_empty() || r.starts_with(' '))
        {
            let rest = rest.strip_prefix(' ').unwrap_or(rest).trim_end();
            if let Some(m) = rest.strip_prefix("Main model: ") {
                out.meta.model = m.split_whitespace().next().map(str::to_string);
            }
            if let Some(v) = rest.strip_prefix("Aider v") {
                out.meta.agent_version = Some(v.trim().to_string());
            }
            self.push(Block::Aider, rest.to_string(), out);
            return;
        }
        if text.trim().is_empty() {
            // A blank line ends the user's input and Aider's output; inside the model's answer
            // it is part of the text.
            match self.st.cur.as_ref().map(|c| c.block) {
                Some(Block::Model) => self.push(Block::Model, String::new(), out),
                _ => self.end(out),
            }
            return;
        }
        self.push(Block::Model, text, out);
    }
}

/// The whole log, every time it changes: the runtime replaces the session's messages with
/// these. (The log only grows, but its blocks are delimited by blank lines, which a line
/// reader never sees: the runtime passes it only lines with content.)
impl DocReader for AiderReader {
    fn read(&mut self, bytes: &[u8], out: &mut Batch) {
        self.st = State::default();
        if out.meta.project_dir.is_none() {
            out.meta.project_dir = self.project.clone();
        }
        let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let body = body.strip_suffix(b"\n").unwrap_or(body);
        if body.is_empty() {
            return;
        }
        for line in body.split(|b| *b == b'\n') {
            self.line(line, out);
        }
        self.end(out);
    }
}

fn locations() -> paths::Locations {
    paths::Locations::resolve(&crate::Env::from_process())
}

/// How to read `path`: a `.aider.chat.history.md` is a chat log.
pub fn source_for(path: &Path) -> Option<Source> {
    path.file_name()
        .is_some_and(|n| n == HISTORY_FILE)
        .then(|| Source::Doc(Box::new(AiderReader::for_path(path))))
}

/// The session of a chat log: `aider-<16 hex>` of the SHA-256 of its path (made absolute).
///
/// Errors: `path` is not a `.aider.chat.history.md` (`ErrorKind::InvalidInput`).
pub fn identify(path: &Path) -> std::io::Result<SessionRef> {
    if path.file_name().is_none_or(|n| n != HISTORY_FILE) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not an {HISTORY_FILE}", path.display()),
        ));
    }
    use sha2::Digest;
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    };
    let d = sha2::Sha256::digest(abs.to_string_lossy().as_bytes());
    let hex: String = d[..8].iter().map(|b| format!("{b:02x}")).collect();
    Ok(SessionRef {
        agent: Agent::Aider,
        external_id: format!("aider-{hex}"),
        parent_external_id: None,
    })
}

/// Folders skipped when looking for chat logs below a root.
const SKIP_DIRS: &[&str] = &[
    "node_modules",
    "target",
    "venv",
    "__pycache__",
    "dist",
    "build",
];

/// How deep below a root chat logs are looked for (a root's own folder is depth 0).
pub const ROOT_DEPTH: usize = 4;

/// The chat logs of `folders`: for each, the log in it or in the repository that holds it (the
/// nearest folder above with `.git`, where Aider writes it), and, with `depth` > 0, those of
/// the folders below it, down to `depth` levels (hidden folders and [`SKIP_DIRS`] left out).
/// Sorted, once each.
pub fn discover_in(folders: &[PathBuf], depth: usize) -> Discovery {
    let mut found = Discovery::default();
    for f in folders {
        let here = f.join(HISTORY_FILE);
        if here.is_file() {
            found.files.push(here);
        }
        if let Some(repo) = f
            .ancestors()
            .skip(1)
            .take(16)
            .find(|d| d.join(".git").exists())
        {
            let log = repo.join(HISTORY_FILE);
            if log.is_file() {
                found.files.push(log);
            }
        }
        walk(f, depth, &mut found);
    }
    found.files.sort();
    found.files.dedup();
    found
}

fn walk(dir: &Path, depth: usize, found: &mut Discovery) {
    if depth == 0 {
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            found.unreadable.push((dir.to_path_buf(), e.to_string()));
            return;
        }
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || SKIP_DIRS.contains(&name.as_ref()) {
            continue;
        }
        // Not followed: symbolic links (a loop, or the whole disk).
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            let sub = e.path();
            let log = sub.join(HISTORY_FILE);
            if log.is_file() {
                found.files.push(log);
            }
            walk(&sub, depth - 1, found);
        }
    }
}

/// The chat logs under the roots memtrail's config names (`[aider] roots`, see
/// [`paths::Locations`]), [`ROOT_DEPTH`] levels deep. The logs of the projects memtrail already
/// knows are found by [`discover_in_projects`], which `memtrail import` calls with them.
///
/// Errors: none (an unreadable root is reported in [`Discovery::unreadable`]).
pub fn discover() -> std::io::Result<Discovery> {
    let loc = locations();
    let (roots, bad) = paths::config_roots(&loc.memtrail_config, &loc.home);
    let mut found = discover_in(&roots, ROOT_DEPTH);
    found.unreadable.extend(bad);
    Ok(found)
}

/// The chat logs of the projects memtrail already knows (stored sessions' folders): each
/// folder's own log and its repository's, no deeper.
pub fn discover_in_projects(projects: &[String]) -> Discovery {
    let folders: Vec<PathBuf> = projects
        .iter()
        .filter(|p| Path::new(p).is_absolute())
        .map(PathBuf::from)
        .collect();
    discover_in(&folders, 0)
}

/// Aider has no hooks; a payload (from `memtrail doctor`, or a user's own wrapper) is read as
/// `{"event", "session_id"?, "cwd"?, "transcript_path"?}`.
///
/// Errors: an empty payload, not JSON, not an object.
pub fn parse_hook_payload(bytes: &[u8], env: &crate::Env) -> Result<HookEvent, crate::Error> {
    let _ = env;
    let payload = crate::agents::goose::object_payload(bytes)?;
    let get = |k: &str| crate::agents::goose::field(&payload, k);
    Ok(HookEvent {
        agent: Agent::Aider,
        event: get("event").unwrap_or_default(),
        session_id: get("session_id"),
        transcript_path: get("transcript_path"),
        cwd: get("cwd"),
        source: None,
        agent_transcript_path: None,
        extra: payload,
    })
}

/// The event's chat log: its transcript path, else the log of its working folder or of the
/// repository holding it.
pub fn transcripts_for_event(ev: &HookEvent) -> Vec<PathBuf> {
    if let Some(t) = ev.transcript_path.as_deref().filter(|t| !t.is_empty()) {
        return vec![PathBuf::from(t)];
    }
    match ev.cwd.as_deref() {
        Some(cwd) => discover_in(&[PathBuf::from(cwd)], 0).files,
        None => Vec::new(),
    }
}

/// Aider takes no context from a hook; the reply is the context as it is (plain text).
pub fn session_start_reply(context: &str) -> Option<String> {
    Some(context.to_string())
}
