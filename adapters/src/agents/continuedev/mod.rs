//! Continue's CLI (`@continuedev/cli`, binary `cn`): paths, session files, identity, discovery.
//! The module is `continuedev` (`continue` is a Rust keyword); the agent's short name is
//! `continue`.
//!
//! Sources: `docs/agents/continue.md`, checked against `@continuedev/cli` 1.5.47 (its bundled
//! `src/session.ts`, `src/compaction.ts`, `src/hooks/fireHook.ts`, `src/env.ts`) and the session
//! files of real `cn -p` runs against a stub model.
//!
//! # The session file
//!
//! `<config>/sessions/<session id>.json`, one JSON document **rewritten whole** at every change
//! (`historyManager.save`): `{"sessionId", "title", "workspaceDirectory", "history": [item…],
//! "usage"}`, an item `{"message": {"role", "content", "toolCalls"?, "toolCallId"?}, "contextItems",
//! "editorState"?, "toolCallStates"?: [{"toolCallId", "toolCall", "status", "output"?: [{"content"}]}],
//! "conversationSummary"?}`. No message has an id or a time. A compaction **replaces** the history
//! with the summary (`compaction.ts`): what was before it is gone from the file.
//!
//! So the file is read as a one-session "database" ([`crate::registry::Database`]): when its
//! modification time moved past the watermark, every message is read again and stored as a
//! [`Record::Replace`] (insert, or replace the same id), which never deletes: the messages a
//! compaction removed from the file stay stored. Ids are chained hashes (see [`message_id`]), the
//! same for the same conversation whatever was rewritten after it.

use crate::Source;
use crate::model::{
    Agent, HookEvent, Kind, Message, ParseStats, Part, Record, Role, SessionMeta, SessionRef,
    ToolCall, normalize_tool_name, title_text,
};
use crate::{DbBatch, DbSession};
use serde_json::Value;
use sha2::Digest;
use std::path::{Path, PathBuf};

pub mod adapter;
pub mod paths;
pub mod registration;

/// Where the agent lives in the process environment ([`paths::Locations::resolve`]).
fn locations() -> paths::Locations {
    paths::Locations::resolve(&crate::Env::from_process())
}

/// The sessions' folder: `<config>/sessions`.
pub fn sessions_dir() -> PathBuf {
    locations().sessions
}

/// The sessions' index file in the sessions folder (not a session).
pub const INDEX_FILE: &str = "sessions.json";

/// The largest session file read.
pub const MAX_SESSION_BYTES: u64 = 256 * 1024 * 1024;

/// The title Continue gives a session before it names it (`DEFAULT_SESSION_TITLE`).
const DEFAULT_TITLE: &str = "Untitled Session";

/// The session id of `…/<id>.json` (not the index).
fn session_of(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    let id = name.strip_suffix(".json")?;
    (name != INDEX_FILE && !id.is_empty() && !id.starts_with('.')).then_some(id)
}

/// How to read the file at `path`: a session file `<id>.json` is a one-session database
/// ([`Source::Database`], read by [`read_session`]); anything else `None`.
pub fn source_for(path: &Path) -> Option<Source> {
    session_of(path).map(|_| Source::Database)
}

/// The modification time of `md` in ns since the epoch (the watermark unit of [`read_session`]).
fn mtime_ns(md: &std::fs::Metadata) -> i64 {
    md.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos().min(i64::MAX as u128) as i64)
}

/// Read the session file at `path` when it changed: its modification time (ns since the epoch)
/// is after `since`. Gives one [`DbSession`] holding every message of the file as a
/// [`Record::Replace`] (and a [`Record::ToolResult`] per `tool` message), and the watermark (the
/// file's modification time, or `since` when nothing changed). `session`, when given, must be
/// the file's id.
///
/// Errors: the file cannot be read, is larger than [`MAX_SESSION_BYTES`], or is not a JSON
/// object with a `history` array (a file caught while Continue rewrites it: the next import
/// reads it again).
pub fn read_session(
    path: &Path,
    session: Option<&str>,
    since: i64,
) -> Result<DbBatch, crate::Error> {
    let id = session_of(path).ok_or_else(|| bad(path, "not a Continue <id>.json session file"))?;
    if session.is_some_and(|s| s != id) {
        return Ok(DbBatch {
            sessions: Vec::new(),
            watermark: since,
        });
    }
    let md = std::fs::metadata(path).map_err(|e| bad(path, &e.to_string()))?;
    let modified = mtime_ns(&md);
    if modified <= since {
        return Ok(DbBatch {
            sessions: Vec::new(),
            watermark: since,
        });
    }
    if md.len() > MAX_SESSION_BYTES {
        return Err(bad(path, "larger than 256 MiB; not read"));
    }
    let bytes = std::fs::read(path).map_err(|e| bad(path, &e.to_string()))?;
    let doc: Value = crate::model::parse_json_doc(&bytes).map_err(|e| bad(path, &e.to_string()))?;
    let history = doc
        .get("history")
        .and_then(Value::as_array)
        .ok_or_else(|| bad(path, "no history array"))?;
    let mut s = DbSession {
        session: SessionRef {
            agent: Agent::Continue,
            external_id: id.to_string(),
            parent_external_id: None,
        },
        meta: SessionMeta {
            project_dir: str_at(&doc, "workspaceDirectory").map(str::to_string),
            title: str_at(&doc, "title")
                .filter(|t| *t != DEFAULT_TITLE)
                .map(|t| title_text(t, 80)),
            updated_at: Some(modified / 1_000_000),
            ..SessionMeta::default()
        },
        records: Vec::new(),
        stats: ParseStats::default(),
    };
    let mut prev = String::new();
    for item in history {
        s.stats.lines += 1;
        match item_records(item, &prev, &mut s) {
            Some(id) => prev = id,
            None => s.stats.skipped_known += 1,
        }
    }
    Ok(DbBatch {
        sessions: vec![s],
        watermark: modified,
    })
}

/// A session file that cannot be read: [`crate::Error::Io`] (`InvalidData`) naming it.
fn bad(path: &Path, why: &str) -> crate::Error {
    crate::Error::Io(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("{}: {why}", path.display()),
    ))
}

/// The ids of the sessions in the file at `path`: its own.
pub fn session_ids(path: &Path) -> Result<Vec<String>, crate::Error> {
    let id = session_of(path).ok_or_else(|| bad(path, "not a Continue <id>.json session file"))?;
    Ok(vec![id.to_string()])
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// A message's id: `c` and the first 16 hex digits of the SHA-256 of the previous message's id
/// and this item's `message` (role, content, calls) as JSON. The same conversation gives the
/// same ids whatever Continue rewrote after it; a compaction, an edited or a regenerated turn
/// starts new ids from there (the old messages stay stored).
pub fn message_id(prev: &str, message: &Value) -> String {
    let mut h = sha2::Sha256::new();
    h.update(prev.as_bytes());
    h.update([0]);
    h.update(message.to_string().as_bytes());
    let hex: String = h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("c{hex}")
}

/// The text of a `content`: a string, or the `text` parts of an array (an image as `[image]`),
/// joined by blank lines, trimmed.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p.get("type").and_then(Value::as_str) {
                Some("text") => p.get("text").and_then(Value::as_str).map(str::trim),
                Some("imageUrl") | Some("image_url") => Some("[image]"),
                _ => None,
            })
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
    }
}

/// The records of one history item into `s`; its id, or `None` when it holds nothing to store.
fn item_records(item: &Value, prev: &str, s: &mut DbSession) -> Option<String> {
    let msg = item.get("message")?;
    let role = msg.get("role").and_then(Value::as_str).unwrap_or("");
    let id = message_id(prev, msg);
    let text = content_text(msg.get("content"));
    let (role, kind, parts) = match role {
        "user" => {
            if s.meta.title.is_none() && !text.is_empty() {
                s.meta.title = Some(title_text(&text, 80));
            }
            (Role::User, Kind::Text, text_part(text))
        }
        "assistant" if item.get("conversationSummary").is_some() => {
            let summary = item
                .get("conversationSummary")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map_or(text, str::to_string);
            (Role::System, Kind::Summary, text_part(summary))
        }
        "assistant" => {
            let mut parts = text_part(text);
            parts.extend(calls(msg, item));
            let kind = Message::infer_kind(&parts);
            (Role::Assistant, kind, parts)
        }
        "thinking" => (
            Role::Assistant,
            Kind::Thinking,
            (!text.is_empty())
                .then_some(Part::Thinking { text })
                .into_iter()
                .collect(),
        ),
        "tool" => {
            let call_id = str_at(msg, "toolCallId")?;
            s.records.push(Record::ToolResult {
                call_id: call_id.to_string(),
                output: text,
                is_error: false,
                exit_code: None,
                timestamp: None,
            });
            return Some(id);
        }
        _ => return None,
    };
    if parts.is_empty() {
        return None;
    }
    let model = msg
        .get("usage")
        .and_then(|u| str_at(u, "model"))
        .map(str::to_string);
    if model.is_some() {
        s.meta.model.clone_from(&model);
    }
    s.records.push(Record::Replace(Message {
        id: id.clone(),
        role,
        kind,
        parts,
        timestamp: None,
        model,
    }));
    Some(id)
}

fn text_part(text: String) -> Vec<Part> {
    (!text.is_empty())
        .then_some(Part::Text { text })
        .into_iter()
        .collect()
}

/// The calls of an assistant message (`toolCalls`), each with its output and state from the
/// item's `toolCallStates` (`output[].content` joined; an error when `status` is `errored` or
/// `canceled`).
fn calls(msg: &Value, item: &Value) -> Vec<Part> {
    let states = item
        .get("toolCallStates")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let reqs = msg
        .get("toolCalls")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut out = Vec::new();
    for c in reqs {
        let Some(id) = str_at(c, "id") else { continue };
        let f = c.get("function").unwrap_or(&Value::Null);
        let name = str_at(f, "name").unwrap_or("").to_string();
        let input = match f.get("arguments") {
            Some(Value::String(a)) => serde_json::from_str(a).unwrap_or(Value::String(a.clone())),
            Some(v) => v.clone(),
            None => Value::Null,
        };
        let state = states
            .iter()
            .find(|st| str_at(st, "toolCallId") == Some(id));
        let output = state.and_then(|st| {
            let parts: Vec<&str> = st
                .get("output")?
                .as_array()?
                .iter()
                .filter_map(|o| o.get("content")?.as_str())
                .collect();
            Some(parts.join("\n"))
        });
        let status = state.and_then(|st| str_at(st, "status")).unwrap_or("");
        out.push(Part::ToolCall(ToolCall {
            id: id.to_string(),
            tool: normalize_tool_name(&name),
            name,
            input,
            output,
            is_error: matches!(status, "errored" | "canceled"),
            exit_code: None,
        }));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Sessions and discovery
// ---------------------------------------------------------------------------------------------

/// Which session a Continue session file belongs to: its name's `<id>` (Continue names the file
/// by the session's `sessionId`). No sub-agents: no parent.
///
/// Errors: `InvalidInput` when the name is not `<id>.json` (or is the index `sessions.json`).
pub fn identify(path: &Path) -> std::io::Result<SessionRef> {
    let id = session_of(path).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("not a Continue sessions/<id>.json: {}", path.display()),
        )
    })?;
    Ok(SessionRef {
        agent: Agent::Continue,
        external_id: id.to_string(),
        parent_external_id: None,
    })
}

/// Every session file `<sessions>/<id>.json` (the index `sessions.json` left out), sorted; a
/// missing folder gives nothing.
///
/// Errors: the folder exists but cannot be listed.
pub fn discover() -> std::io::Result<crate::Discovery> {
    discover_in(&sessions_dir())
}

/// [`discover`] in an explicit sessions folder.
///
/// Errors: `sessions` exists but cannot be listed.
pub fn discover_in(sessions: &Path) -> std::io::Result<crate::Discovery> {
    let rd = match std::fs::read_dir(sessions) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
        Err(e) => return Err(e),
    };
    let mut files: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| session_of(p).is_some() && p.is_file())
        .collect();
    files.sort();
    Ok(files.into())
}

// ---------------------------------------------------------------------------------------------
// Hooks: none registered (`docs/agents/continue.md#hooks`)
// ---------------------------------------------------------------------------------------------

/// Parse a hook payload of Continue's shape (`src/hooks/fireHook.ts`: Claude Code's snake_case
/// fields, `transcript_path` always `""`), read by Qwen Code's parser. memtrail registers no
/// Continue hook (1.5.47 fires only PreToolUse and PostToolUse); this serves `memtrail doctor`
/// and a hook a user adds by hand.
///
/// Errors: the bytes are empty, not JSON or not an object.
pub fn parse_hook_payload(bytes: &[u8], env: &crate::Env) -> Result<HookEvent, crate::Error> {
    let ev = crate::qwen::parse_hook_payload(bytes, env)?;
    Ok(HookEvent {
        agent: Agent::Continue,
        ..ev
    })
}

/// The files a hook event should ingest: the payload's `transcript_path` when it names a
/// session file (Continue's own payloads leave it `""`), else `<sessions>/<session id>.json`
/// when it is a file.
pub fn transcripts_for_event(ev: &HookEvent) -> Vec<PathBuf> {
    if let Some(t) = ev
        .transcript_path
        .as_deref()
        .map(Path::new)
        .filter(|t| session_of(t).is_some())
    {
        return vec![t.to_path_buf()];
    }
    ev.session_id
        .as_deref()
        .filter(|s| !s.is_empty() && !s.contains(['/', '\\']) && *s != "." && *s != "..")
        .map(|s| sessions_dir().join(format!("{s}.json")))
        .filter(|p| p.is_file())
        .into_iter()
        .collect()
}

/// Claude Code's SessionStart reply, the shape Continue's hook runner reads
/// (`hookSpecificOutput.additionalContext`); unused while no SessionStart hook is registered.
pub fn session_start_reply(context: &str) -> Option<String> {
    crate::claude::session_start_reply(context)
}
