//! The Cline CLI's sessions (npm `cline` 3.x, SDK-based): `<data>/sessions/<id>/`.
//!
//! Sources: `docs/agents/cline.md#cli-sessions`, checked against the real `cline` 3.0.65 run in
//! a sandboxed HOME against the loopback Anthropic stub (`tests/it/e2e_cline.rs`).
//!
//! # The files
//!
//! A session folder `<data>/sessions/<id>/` (id like `1796199946535_njsum`: ms since the epoch,
//! `_`, five characters) holds the manifest `<id>.json` (`{version: 1, session_id, source: "cli",
//! pid, started_at, ended_at, exit_code, status, provider, model, cwd, workspace_root, prompt,
//! metadata: {title, usage, …}, messages_path}`) and the conversation `<id>.messages.json`,
//! read here: one pretty-printed JSON object, **rewritten whole** at every change,
//! `{version: 1, updated_at, agent: "lead", sessionId, origin: {source, mode, sessionId,
//! version}, messages: [message…], system_prompt}`.
//!
//! Each conversation file is read as a one-session database ([`read_db`]): re-read whole when
//! its modification time moved, every message stored or replaced by its own `id`, nothing
//! deleted.
//!
//! A message is `{id, role: "user"|"assistant", content: [block…], ts (ms since the epoch),
//! modelInfo?: {id, provider, family}, metrics?, metadata?: {displayOnly, displayRole}}` and its
//! blocks are Anthropic's (`text`, `thinking`, `tool_use {id, name, input}`, `tool_result
//! {tool_use_id, name, content, is_error?}`, `image`). The traps:
//!
//! - a prompt is wrapped: `<user_input mode="act">…</user_input>` (the mode is `act`, `plan` or
//!   `yolo`);
//! - a tool result's `content` is a list of `{query, result, error?, success}` (one per command
//!   or file the call asked for), not text; a failed command has `success: false` and `error:
//!   "Command exited with code <n>"`;
//! - a sub-agent (`spawn_agent`) writes its own conversation beside the session's, in the same
//!   folder: `agent_<n>.messages.json` (`agent: "subagent"`, `sessionId: "<id>__agent_<n>"`,
//!   `origin.parentThreadId: "<id>"`, no manifest); its first prompt is not wrapped; the
//!   parent's `spawn_agent` result is a JSON text `{"text", "iterations", "finishReason",
//!   "usage"}`;
//! - an error the CLI shows (no model reached, say) is stored as an assistant message with
//!   `metadata: {displayOnly: true, displayRole: "error"}` and an id `error_<uuid>`: never sent
//!   to the model.

use super::{Build, CallAt, blocks, message, read_messages};
use crate::model::{Agent, Batch, DocReader, Kind, Message, Part, Record, Role, SessionRef};
use crate::{DbBatch, DbSession};
use serde_json::{Map, Value};
use std::path::Path;

/// The folder holding session folders, in the data folder.
pub const SESSIONS_DIR: &str = "sessions";

/// The conversation's file name suffix: `<id>.messages.json`.
pub const MESSAGES_SUFFIX: &str = ".messages.json";

/// The session id of `…/<id>/<id>.messages.json` (the sessions folder may be elsewhere:
/// `$CLINE_SESSION_DATA_DIR`).
pub fn session_of(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    let id = name.strip_suffix(MESSAGES_SUFFIX)?;
    (path.parent()?.file_name()?.to_str()? == id && super::is_safe_name(id)).then_some(id)
}

/// The session a conversation file is, and its parent: `<id>/<id>.messages.json` is session
/// `<id>`; a sub-agent's `<id>/agent_<n>.messages.json` (written by `spawn_agent`) is
/// `<id>__agent_<n>` (the `sessionId` the CLI writes in it), its parent `<id>`.
pub fn conversation_of(path: &Path) -> Option<(String, Option<String>)> {
    if let Some(id) = session_of(path) {
        return Some((id.to_string(), None));
    }
    let name = path.file_name()?.to_str()?;
    let agent = name.strip_suffix(MESSAGES_SUFFIX)?;
    let root = path.parent()?.file_name()?.to_str()?;
    (agent.starts_with(SUBAGENT_PREFIX) && super::is_safe_name(agent) && super::is_safe_name(root))
        .then(|| (format!("{root}__{agent}"), Some(root.to_string())))
}

/// The largest conversation file read.
pub const MAX_SESSION_BYTES: u64 = 256 * 1024 * 1024;

/// A conversation file that cannot be read: [`crate::Error::Io`] (`InvalidData`) naming it.
fn bad(path: &Path, why: &str) -> crate::Error {
    crate::Error::Io(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("{}: {why}", path.display()),
    ))
}

/// Read a conversation file (`<id>.messages.json`, or a sub-agent's `agent_<n>.messages.json`)
/// as a one-session database ([`crate::registry::Database`]) when its modification time (ns
/// since the epoch) is after `since`: one [`DbSession`] (the session or sub-agent of
/// [`conversation_of`], project the manifest's `cwd`) whose messages are all
/// [`Record::Replace`]: stored, or replaced by id, and **never deleted**, so what a later
/// rewrite drops (a compaction, a restored checkpoint) stays stored. The watermark is the
/// file's modification time, or `since` when nothing changed. `session`, when given, must be
/// the key [`session_ids`] gives (the session's id, also for its sub-agents: the hook's).
///
/// Errors: not a conversation file name, cannot be read, larger than [`MAX_SESSION_BYTES`], or
/// not a JSON object with a `messages` array (caught mid-write: the next read takes it again).
pub fn read_db(path: &Path, session: Option<&str>, since: i64) -> Result<DbBatch, crate::Error> {
    let (id, parent) =
        conversation_of(path).ok_or_else(|| bad(path, "not a Cline CLI conversation file"))?;
    let root = parent.clone().unwrap_or_else(|| id.clone());
    let unchanged = DbBatch {
        sessions: Vec::new(),
        watermark: since,
    };
    if session.is_some_and(|s| s != root) {
        return Ok(unchanged);
    }
    let md = std::fs::metadata(path).map_err(|e| bad(path, &e.to_string()))?;
    let modified = md
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    if modified <= since {
        return Ok(unchanged);
    }
    if md.len() > MAX_SESSION_BYTES {
        return Err(bad(path, "larger than 256 MiB; not read"));
    }
    let bytes = std::fs::read(path).map_err(|e| bad(path, &e.to_string()))?;
    let cwd = super::json_field(&path.with_file_name(format!("{root}.json")), "cwd");
    let mut batch = Batch::default();
    SessionReader::new(cwd).read(&bytes, &mut batch);
    if batch.records.is_empty() && batch.stats.malformed > 0 {
        return Err(bad(
            path,
            "not a JSON object with a messages array (being written?)",
        ));
    }
    let records = batch
        .records
        .into_iter()
        .map(|r| match r {
            Record::Message(m) => Record::Replace(m),
            other => other,
        })
        .collect();
    Ok(DbBatch {
        sessions: vec![DbSession {
            session: SessionRef {
                agent: Agent::Cline,
                external_id: id,
                parent_external_id: parent,
            },
            meta: batch.meta,
            records,
            stats: batch.stats,
        }],
        watermark: modified,
    })
}

/// The key a conversation file is read under ([`read_db`]): its session's id, for a sub-agent's
/// file too (the id the session's hooks name, so a hook and an import share one cursor).
///
/// Errors: not a conversation file name.
pub fn session_ids(path: &Path) -> Result<Vec<String>, crate::Error> {
    let (id, parent) =
        conversation_of(path).ok_or_else(|| bad(path, "not a Cline CLI conversation file"))?;
    Ok(vec![parent.unwrap_or(id)])
}

/// The name prefix of a sub-agent's conversation file in its session's folder.
pub const SUBAGENT_PREFIX: &str = "agent_";

/// The sub-agents' conversation files in the session folder `dir`
/// (`agent_<n>.messages.json`), sorted; none when it cannot be listed.
pub fn subagent_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<std::path::PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(SUBAGENT_PREFIX))
                && conversation_of(p).is_some_and(|(_, parent)| parent.is_some())
                && p.is_file()
        })
        .collect();
    out.sort();
    out
}

/// The conversation file of session `id` in the sessions folder `dir`.
pub fn messages_file(dir: &Path, id: &str) -> std::path::PathBuf {
    dir.join(id).join(format!("{id}{MESSAGES_SUFFIX}"))
}

/// Reader for one CLI session's `<id>.messages.json`; implements [`DocReader`].
///
/// Message `m` of `messages` becomes, by its own `id` (stable across rewrites):
///
/// - **user**: its text blocks without the `<user_input mode="…">` wrapper, one message, role
///   `User`; its `tool_result` blocks set the output of the call they answer (the `result`s of
///   its entries joined by newlines; an error when `is_error` or any entry has `success:
///   false`; a shell call's `exit_code` from `Command exited with code <n>`).
/// - **assistant**: one message with its text, `thinking` and `tool_use` parts (tool names
///   mapped: `run_commands` shell, `read_files` read, `editor` edit, `search_codebase` search,
///   `fetch_web_content` web_fetch, `spawn_agent` subagent); model `modelInfo.id`. One with
///   `metadata.displayOnly` (an error the CLI showed) is a `System` text message.
///
/// Counting: `stats.lines` is the number of messages; a non-object one is `malformed`, one
/// without a known role `skipped_unknown`, one with nothing to store `skipped_known`. A document
/// that is not an object with a `messages` array counts one malformed line and yields nothing
/// (a file caught mid-write; the runtime keeps what it stored). [`Batch::meta`]: the project
/// given to [`SessionReader::new`] (the manifest's `cwd`), title the first prompt, model the
/// last `modelInfo.id`, start and end from `ts`.
#[derive(Debug)]
pub struct SessionReader {
    project_dir: Option<String>,
}

impl SessionReader {
    /// A reader reporting `project_dir` (the manifest's `cwd`) as the session's project.
    pub fn new(project_dir: Option<String>) -> Self {
        SessionReader { project_dir }
    }
}

/// The prompt inside `<user_input mode="…">…</user_input>`, else the text as it is (trimmed).
fn unwrap_input(text: &str) -> &str {
    let t = text.trim();
    t.strip_prefix("<user_input")
        .and_then(|rest| rest.split_once('>'))
        .and_then(|(_, inner)| inner.strip_suffix("</user_input>"))
        .map_or(t, str::trim)
}

/// A tool result's output and error flag: the entries' `result`s (or a plain text content).
fn result_of(block: &Map<String, Value>) -> (String, bool) {
    let mut failed = block.get("is_error").and_then(Value::as_bool) == Some(true);
    let text = match block.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(entries)) => entries
            .iter()
            .filter_map(|e| {
                failed |= e.get("success").and_then(Value::as_bool) == Some(false);
                match e.get("result").or_else(|| e.get("text")) {
                    Some(Value::String(s)) => Some(s.trim_end().to_string()),
                    Some(other) if !other.is_null() => Some(other.to_string()),
                    _ => e.get("error").and_then(Value::as_str).map(str::to_string),
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    (text, failed)
}

/// `<n>` of `Command exited with code <n>` in a shell result.
fn exit_code(output: &str) -> Option<i64> {
    let rest = &output[output.find("Command exited with code ")? + 25..];
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    digits.parse().ok()
}

impl DocReader for SessionReader {
    fn read(&mut self, bytes: &[u8], out: &mut Batch) {
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let doc: Option<Value> = crate::model::parse_json_doc(bytes).ok();
        let Some(Value::Array(items)) =
            doc.and_then(|mut d| d.get_mut("messages").map(Value::take))
        else {
            out.stats.lines += 1;
            out.stats.malformed += 1;
            return;
        };
        if out.meta.project_dir.is_none() {
            out.meta.project_dir.clone_from(&self.project_dir);
        }
        read_messages(items, out, |i, m, ts, b, out| {
            let id = m
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map_or_else(|| i.to_string(), str::to_string);
            let content = m.get("content").cloned().unwrap_or(Value::Null);
            let display_only = m
                .get("metadata")
                .and_then(|d| d.get("displayOnly"))
                .and_then(Value::as_bool)
                == Some(true);
            match m.get("role").and_then(Value::as_str) {
                Some("user") => user(b, id, content, ts, out),
                Some("assistant") if display_only => {
                    let text = super::blocks_text(&content);
                    if text.is_empty() {
                        out.stats.skipped_known += 1;
                        return;
                    }
                    b.msgs.push(message(
                        id,
                        Role::System,
                        Kind::Text,
                        vec![Part::Text { text }],
                        ts,
                        None,
                    ));
                }
                Some("assistant") => assistant(b, id, &m, content, ts, out),
                _ => out.stats.skipped_unknown += 1,
            }
        });
    }
}

/// The trimmed string at `key` of a block, when not empty.
fn trimmed(block: &Map<String, Value>, key: &str) -> Option<String> {
    let t = block.get(key).and_then(Value::as_str)?.trim();
    (!t.is_empty()).then(|| t.to_string())
}

fn user(b: &mut Build, id: String, content: Value, ts: Option<i64>, out: &mut Batch) {
    let mut texts = Vec::new();
    for block in blocks(content) {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let t = unwrap_input(block.get("text").and_then(Value::as_str).unwrap_or(""));
                if !t.is_empty() {
                    texts.push(t.to_string());
                }
            }
            Some("tool_result") => {
                let Some(call) = block.get("tool_use_id").and_then(Value::as_str) else {
                    continue;
                };
                let (output, failed) = result_of(&block);
                if let Some(c) = b.call_mut(call) {
                    if c.tool == "shell" {
                        c.exit_code = exit_code(&output);
                    }
                    c.is_error = failed || c.exit_code.is_some_and(|e| e != 0);
                    c.output = Some(output);
                }
            }
            Some("image") => texts.push("[image]".to_string()),
            _ => {}
        }
    }
    if texts.is_empty() {
        out.stats.skipped_known += 1;
        return;
    }
    let text = texts.join("\n\n");
    if out.meta.title.is_none() {
        out.meta.title = Some(crate::model::title_text(&text, 80));
    }
    b.msgs.push(message(
        id,
        Role::User,
        Kind::Text,
        vec![Part::Text { text }],
        ts,
        None,
    ));
}

fn assistant(
    b: &mut Build,
    id: String,
    m: &Map<String, Value>,
    content: Value,
    ts: Option<i64>,
    out: &mut Batch,
) {
    let model = super::note_model(m, "id", out);
    let mut parts = Vec::new();
    for block in blocks(content) {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => parts.extend(trimmed(&block, "text").map(|text| Part::Text { text })),
            Some("thinking") => {
                parts.extend(trimmed(&block, "thinking").map(|text| Part::Thinking { text }))
            }
            Some("tool_use") => {
                let Some(Part::ToolCall(c)) = super::native_call(&block) else {
                    continue;
                };
                b.calls.push((
                    c.id.clone(),
                    CallAt {
                        msg: b.msgs.len(),
                        part: parts.len(),
                        name: c.name.clone(),
                    },
                ));
                parts.push(Part::ToolCall(c));
            }
            _ => {}
        }
    }
    if parts.is_empty() {
        out.stats.skipped_known += 1;
        return;
    }
    let kind = Message::infer_kind(&parts);
    b.msgs
        .push(message(id, Role::Assistant, kind, parts, ts, model));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_prompts_and_exit_codes() {
        let p = Path::new("/d/sessions/1796199946535_njsum/1796199946535_njsum.messages.json");
        assert_eq!(session_of(p), Some("1796199946535_njsum"));
        assert_eq!(
            session_of(Path::new("/d/sessions/a/b.messages.json")),
            None,
            "folder and file disagree"
        );
        assert_eq!(
            session_of(Path::new("/d/sessions/a/a.json")),
            None,
            "the manifest"
        );
        assert_eq!(
            unwrap_input("<user_input mode=\"act\">run ls</user_input>"),
            "run ls"
        );
        assert_eq!(unwrap_input("  plain  "), "plain");
        assert_eq!(
            exit_code("[Command exited with code 1]\n\n[stderr]\ncat: x"),
            Some(1)
        );
        assert_eq!(exit_code("f.txt\n"), None);
    }
}
