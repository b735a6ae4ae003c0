//! pi (`@mariozechner/pi-coding-agent`): paths, extension payloads, session identity, discovery
//! and the session-tree reader.
//!
//! Sources: `docs/agents/pi.md`, checked against pi 0.73.1: its package's
//! `docs/session-format.md`, `docs/extensions.md`, `dist/core/session-manager.js`,
//! `dist/core/agent-session.js`, `dist/core/tools/bash.js`, `dist/config.js`, and the files and
//! extension events of real sessions run offline against a stub model.
//!
//! # Where things are
//!
//! Everything lives in the agent folder `$PI_CODING_AGENT_DIR` (default `~/.pi/agent`). Each
//! session is one file `sessions/--<cwd, '/' and ':' as '-'>--/<ISO time>_<session id>.jsonl`.
//!
//! # The transcript
//!
//! Append-only JSONL. The first line is a header `{"type":"session","version":3,"id",
//! "timestamp","cwd","parentSession"?}`; every other line is an entry `{type, id, parentId,
//! timestamp, …}` (8-hex `id`, unique in the file). Entries form a tree: each new entry is a
//! child of the current leaf, and moving the leaf to an earlier entry (`/tree`) makes the next
//! entry a child of that one, leaving a dead branch in the file. The conversation pi shows and
//! resumes is the path from the **last** entry of the file up to the root.

use crate::Source;
use crate::model::{
    Agent, Batch, HookEvent, Kind, LineReader, Message, Part, Record, Role, SessionRef, ToolCall,
    normalize_tool_name, parse_rfc3339_ms, title_text,
};
use serde_json::{Map, Value};
use std::io::BufRead;
use std::path::{Path, PathBuf};

pub mod adapter;
pub mod paths;
pub mod registration;

/// Where the agent lives in the process environment ([`paths::Locations::resolve`]).
fn locations() -> paths::Locations {
    paths::Locations::resolve(&crate::Env::from_process())
}

/// The pi agent folder: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
pub fn agent_dir() -> PathBuf {
    locations().agent_dir
}

/// The sessions' root: `$PI_CODING_AGENT_SESSION_DIR`, else `<agent>/sessions`.
pub fn sessions_dir() -> PathBuf {
    locations().sessions
}

// ---------------------------------------------------------------------------------------------
// The reader
// ---------------------------------------------------------------------------------------------

/// Entry types that carry no conversation content (settings, bookmarks, extension state).
const QUIET_TYPES: &[&str] = &["thinking_level_change", "custom", "label", "session_info"];

/// At most this many entries of the active path are kept in the reader's state; a branch from
/// an entry older than that is not seen (its dead branch stays stored).
pub const PATH_CAP: usize = 4096;

/// The status line pi's `bash` tool appends to the output of a command that exited with a code
/// other than 0 (`dist/core/tools/bash.js`).
const EXIT_LINE: &str = "Command exited with code ";

/// Reader for one pi session file; implements [`LineReader`] (incremental: its state is the
/// active path, at most [`PATH_CAP`] entries, each with whether it was stored as a message).
/// Format: the module docs and `docs/agents/pi.md#transcript-format`.
///
/// Each line becomes:
///
/// - the header (`type: "session"`): session metadata (`cwd` the project, `timestamp` the
///   start); nothing stored;
/// - `message` entries, by `message.role`:
///   - `user`: a [`Role::User`] message, id the entry's `id`, its text (a string or `text`
///     blocks; an image block is `[image]`); the first one is the title;
///   - `assistant`: a [`Role::Assistant`] message, model `message.model`: `text` blocks,
///     `thinking` blocks as [`Part::Thinking`], `toolCall` blocks as [`Part::ToolCall`] (id the
///     call's `id`, input `arguments`); a provider error (`errorMessage`) is a last text part
///     `Error: <message>`;
///   - `toolResult`: a [`Record::ToolResult`] for `toolCallId` (output the text blocks, error
///     `isError`; for `bash`, the exit code of pi's `Command exited with code N` status line, or
///     0 for a result that is not an error);
///   - `bashExecution` (a command the user ran with `!`): a [`Role::User`] message holding one
///     shell call with its output and exit code;
///   - `custom` (a message an extension added): a [`Role::System`] text message;
/// - `compaction`: a [`Role::System`] message of kind [`Kind::Summary`] (its `summary`);
/// - `branch_summary` (the summary of a branch left through `/tree`): a [`Role::System`]
///   summary message;
/// - `custom_message`: a [`Role::System`] text message;
/// - `model_change`: the session's model; other known types: skipped (known);
/// - an entry whose `parentId` is not the previous entry (the leaf moved back): first a
///   [`Record::Rewind`] of the first message stored after that parent on the active path
///   (nothing when the parent is older than the kept path or unknown).
///
/// Entries without an `id` (pi's version 1 files, before the tree) are counted as malformed.
#[derive(Debug, Default)]
pub struct PiReader {
    /// The active path, root first: each entry's id and whether it was stored as a message.
    path: Vec<(String, bool)>,
}

impl PiReader {
    /// A reader at the start of a file.
    pub fn new() -> Self {
        Self::default()
    }

    /// Make `id` the new leaf as a child of `parent`, rewinding what the active path held after
    /// `parent` when `parent` is not the current leaf.
    fn attach(&mut self, id: &str, parent: Option<&str>, out: &mut Batch) {
        let leaf = self.path.last().map(|(i, _)| i.as_str());
        if parent != leaf {
            // The new entry's branch point: the root (no parent) or a kept ancestor.
            let cut = match parent {
                None => Some(0),
                Some(p) => self.path.iter().rposition(|(i, _)| i == p).map(|at| at + 1),
            };
            if let Some(cut) = cut {
                let dropped = self.path.split_off(cut);
                if let Some((first, _)) = dropped.into_iter().find(|(_, stored)| *stored) {
                    out.records.push(Record::Rewind { message_id: first });
                }
            }
        }
        self.path.push((id.to_string(), false));
        if self.path.len() > PATH_CAP + PATH_CAP / 8 {
            let excess = self.path.len() - PATH_CAP;
            self.path.drain(..excess);
        }
    }
}

fn text_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// Widen the batch's time range to `ts`.
fn seen_at(out: &mut Batch, ts: Option<i64>) {
    let Some(t) = ts else { return };
    let m = &mut out.meta;
    m.started_at = Some(m.started_at.map_or(t, |s| s.min(t)));
    m.updated_at = Some(m.updated_at.map_or(t, |u| u.max(t)));
}

impl LineReader for PiReader {
    fn line(&mut self, line: &[u8], out: &mut Batch) {
        let Some(trimmed) = crate::model::trim_line(line) else {
            return;
        };
        out.stats.lines += 1;
        let Some(entry) = crate::model::parse_object_line::<Map<String, Value>>(trimmed) else {
            out.stats.malformed += 1;
            return;
        };
        let entry = Value::Object(entry);
        let ty = entry.get("type").and_then(Value::as_str).unwrap_or("");
        let ts = text_at(&entry, "timestamp").and_then(parse_rfc3339_ms);
        if ty == "session" {
            if let Some(cwd) = text_at(&entry, "cwd") {
                out.meta.project_dir = Some(cwd.to_string());
            }
            seen_at(out, ts);
            out.stats.skipped_known += 1;
            return;
        }
        let Some(id) = text_at(&entry, "id") else {
            out.stats.malformed += 1;
            return;
        };
        let known = matches!(
            ty,
            "message" | "compaction" | "branch_summary" | "custom_message" | "model_change"
        ) || QUIET_TYPES.contains(&ty);
        if !known {
            out.stats.skipped_unknown += 1;
            return;
        }
        let id = id.to_string();
        self.attach(&id, text_at(&entry, "parentId"), out);
        seen_at(out, ts);
        let message = match ty {
            "message" => self.message(&id, &entry, ts, out),
            "compaction" | "branch_summary" => text_at(&entry, "summary")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| system(&id, Kind::Summary, s.to_string(), ts)),
            "custom_message" => {
                let text = content_text(entry.get("content"));
                (!text.is_empty()).then(|| system(&id, Kind::Text, text, ts))
            }
            "model_change" => {
                if let Some(m) = text_at(&entry, "modelId") {
                    out.meta.model = Some(m.to_string());
                }
                None
            }
            _ => None,
        };
        match message {
            Some(m) => {
                out.records.push(Record::Message(m));
                if let Some(last) = self.path.last_mut() {
                    last.1 = true;
                }
            }
            None if ty == "message" => {}
            None => out.stats.skipped_known += 1,
        }
    }

    fn finish(&mut self, _out: &mut Batch) {}

    fn save_state(&self) -> Option<Value> {
        (!self.path.is_empty()).then(|| serde_json::json!({ "path": self.path }))
    }

    fn restore_state(&mut self, state: &Value) {
        if let Some(path) = state
            .get("path")
            .and_then(|p| serde_json::from_value::<Vec<(String, bool)>>(p.clone()).ok())
        {
            self.path = path;
        }
    }
}

impl PiReader {
    /// A `message` entry: the message to store, if any (a tool result is emitted as a
    /// [`Record::ToolResult`] into `out` instead).
    fn message(
        &mut self,
        id: &str,
        entry: &Value,
        ts: Option<i64>,
        out: &mut Batch,
    ) -> Option<Message> {
        let msg = entry.get("message").unwrap_or(&Value::Null);
        let role = msg.get("role").and_then(Value::as_str).unwrap_or("");
        let text_message = |role: Role, text: String| Message {
            id: id.to_string(),
            role,
            kind: Kind::Text,
            parts: vec![Part::Text { text }],
            timestamp: ts,
            model: None,
        };
        match role {
            "user" => {
                let text = content_text(msg.get("content"));
                if out.meta.title.is_none() && !text.is_empty() {
                    out.meta.title = Some(title_text(&text, 80));
                }
                (!text.is_empty()).then(|| text_message(Role::User, text))
            }
            "assistant" => {
                let model = text_at(msg, "model").map(str::to_string);
                if model.is_some() {
                    out.meta.model.clone_from(&model);
                }
                let mut parts = assistant_parts(msg);
                if let Some(err) = text_at(msg, "errorMessage") {
                    parts.push(Part::Text {
                        text: format!("Error: {}", err.trim()),
                    });
                }
                (!parts.is_empty()).then(|| Message {
                    id: id.to_string(),
                    role: Role::Assistant,
                    kind: Message::infer_kind(&parts),
                    parts,
                    timestamp: ts,
                    model,
                })
            }
            "toolResult" => {
                let Some(call_id) = text_at(msg, "toolCallId") else {
                    out.stats.malformed += 1;
                    return None;
                };
                let output = content_text(msg.get("content"));
                let is_error = msg.get("isError").and_then(Value::as_bool) == Some(true);
                let exit_code = (text_at(msg, "toolName") == Some("bash"))
                    .then(|| bash_exit_code(&output, is_error))
                    .flatten();
                out.records.push(Record::ToolResult {
                    call_id: call_id.to_string(),
                    output,
                    is_error,
                    exit_code,
                    timestamp: ts,
                });
                None
            }
            "bashExecution" => {
                let command = text_at(msg, "command").unwrap_or("").to_string();
                let exit_code = msg.get("exitCode").and_then(Value::as_i64);
                let cancelled = msg.get("cancelled").and_then(Value::as_bool) == Some(true);
                let call = ToolCall {
                    id: format!("{id}:bash"),
                    name: "bash".to_string(),
                    tool: normalize_tool_name("bash"),
                    input: serde_json::json!({ "command": command }),
                    output: Some(text_at(msg, "output").unwrap_or("").to_string()),
                    is_error: cancelled || exit_code.is_some_and(|c| c != 0),
                    exit_code,
                };
                Some(Message {
                    id: id.to_string(),
                    role: Role::User,
                    kind: Kind::ToolCall,
                    parts: vec![Part::ToolCall(call)],
                    timestamp: ts,
                    model: None,
                })
            }
            "custom" => {
                let text = content_text(msg.get("content"));
                (!text.is_empty()).then(|| text_message(Role::System, text))
            }
            _ => {
                out.stats.skipped_unknown += 1;
                None
            }
        }
    }
}

/// A system message `id` of `kind` holding `text`.
fn system(id: &str, kind: Kind, text: String, ts: Option<i64>) -> Message {
    Message {
        id: id.to_string(),
        role: Role::System,
        kind,
        parts: vec![Part::Text { text }],
        timestamp: ts,
        model: None,
    }
}

/// The text of a `content` that is a string or an array of `text` / `image` blocks: the text
/// blocks, trimmed, joined by blank lines, an image as `[image]`.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b.get("text").and_then(Value::as_str).map(str::trim),
                Some("image") => Some("[image]"),
                _ => None,
            })
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
    }
}

/// The parts of an assistant message: `text`, `thinking` and `toolCall` blocks, in order.
fn assistant_parts(msg: &Value) -> Vec<Part> {
    let blocks = msg
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut parts = Vec::new();
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = text_at(b, "text").map(str::trim).filter(|t| !t.is_empty()) {
                    parts.push(Part::Text {
                        text: t.to_string(),
                    });
                }
            }
            Some("thinking") => {
                if let Some(t) = text_at(b, "thinking")
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                {
                    parts.push(Part::Thinking {
                        text: t.to_string(),
                    });
                }
            }
            Some("toolCall") => {
                let (Some(call_id), Some(name)) = (text_at(b, "id"), text_at(b, "name")) else {
                    continue;
                };
                parts.push(Part::ToolCall(ToolCall {
                    id: call_id.to_string(),
                    name: name.to_string(),
                    tool: normalize_tool_name(name),
                    input: b.get("arguments").cloned().unwrap_or(Value::Null),
                    output: None,
                    is_error: false,
                    exit_code: None,
                }));
            }
            _ => {}
        }
    }
    parts
}

/// The exit code of a `bash` result: the `N` of its last line `Command exited with code N`;
/// 0 when the result is not an error (pi's `bash` fails every command that exits with another
/// code); `None` for an error without that line (aborted, timed out).
fn bash_exit_code(output: &str, is_error: bool) -> Option<i64> {
    if !is_error {
        return Some(0);
    }
    output
        .lines()
        .last()?
        .trim()
        .strip_prefix(EXIT_LINE)?
        .parse()
        .ok()
}

/// How to read the file at `path`: a `*.jsonl` gives [`Source::Lines`] with a [`PiReader`];
/// anything else `None`.
pub fn source_for(path: &Path) -> Option<Source> {
    (path.extension()? == "jsonl").then(|| Source::Lines(Box::new(PiReader::new())))
}

// ---------------------------------------------------------------------------------------------
// Sessions and discovery
// ---------------------------------------------------------------------------------------------

/// How many bytes of a file's first line [`identify`] reads for the header.
const HEADER_CAP: u64 = 64 * 1024;

/// The session id in the file name `<ISO time>_<session id>.jsonl`.
fn id_from_name(path: &Path) -> Option<&str> {
    let stem = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    let (_, id) = stem.rsplit_once('_')?;
    (!id.is_empty()).then_some(id)
}

/// Which session a pi session file belongs to: the header's `id` (its first line,
/// `{"type":"session","id":…}`), else, for a file without a header yet (pi writes nothing until
/// the first answer), the `<session id>` of its name `<ISO time>_<session id>.jsonl`. pi has no
/// sub-agents: no parent.
///
/// Errors: the file exists but cannot be read; neither the header nor the name gives an id
/// (`InvalidInput`).
pub fn identify(path: &Path) -> std::io::Result<SessionRef> {
    let header = match std::fs::File::open(path) {
        Ok(f) => {
            let mut first = Vec::new();
            std::io::BufReader::new(std::io::Read::take(f, HEADER_CAP))
                .read_until(b'\n', &mut first)?;
            crate::model::trim_line(&first)
                .and_then(crate::model::parse_object_line::<Value>)
                .filter(|v| v.get("type").and_then(Value::as_str) == Some("session"))
                .and_then(|v| text_at(&v, "id").map(str::to_string))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let id = header
        .or_else(|| id_from_name(path).map(str::to_string))
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "not a pi session file (no session header): {}",
                    path.display()
                ),
            )
        })?;
    Ok(SessionRef {
        agent: Agent::Pi,
        external_id: id,
        parent_external_id: None,
    })
}

/// Every session file under [`sessions_dir`]; see [`discover_in`].
pub fn discover() -> std::io::Result<crate::Discovery> {
    discover_in(&sessions_dir())
}

/// Every `*.jsonl` file in `sessions` and in its folders one level down (pi's default layout,
/// `sessions/--<cwd>--/<file>`; a `sessionDir` setting puts the files in `sessions` itself),
/// sorted. A missing `sessions` gives nothing; a folder below it that cannot be listed is
/// reported in `unreadable`.
///
/// Errors: `sessions` exists but cannot be listed.
pub fn discover_in(sessions: &Path) -> std::io::Result<crate::Discovery> {
    let entries = match std::fs::read_dir(sessions) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
        Err(e) => return Err(e),
    };
    let mut found = crate::Discovery::default();
    let is_session = |p: &Path| p.extension().is_some_and(|x| x == "jsonl") && p.is_file();
    for e in entries.flatten() {
        let p = e.path();
        if is_session(&p) {
            found.files.push(p);
            continue;
        }
        if !p.is_dir() {
            continue;
        }
        match std::fs::read_dir(&p) {
            Ok(files) => found
                .files
                .extend(files.flatten().map(|f| f.path()).filter(|f| is_session(f))),
            Err(err) => found.unreadable.push((p, err.to_string())),
        }
    }
    found.files.sort();
    Ok(found)
}

// ---------------------------------------------------------------------------------------------
// The extension's payloads (`docs/agents/pi.md#the-extension`)
// ---------------------------------------------------------------------------------------------

/// Parse the payload memtrail's pi extension writes on the hook's stdin: `{"hook_event_name",
/// "pi_event", "session_id", "transcript_path", "cwd", "source"?}`, `hook_event_name` one of
/// `SessionStart` (pi's `session_start`, `source` its `reason`: `startup`, `reload`, `new`,
/// `resume`, `fork`), `Stop` (`agent_end`), `PreCompact` (`session_before_compact`),
/// `PostCompact` (`session_compact`) and `SessionEnd` (`session_shutdown`, `source` its
/// `reason`). `transcript_path` is `sessionManager.getSessionFile()` (absent with
/// `--no-session`); `extra` is the whole payload. Read with Qwen Code's parser (the same
/// snake_case fields).
///
/// Errors: the bytes are empty, not JSON or not an object.
pub fn parse_hook_payload(bytes: &[u8], env: &crate::Env) -> Result<HookEvent, crate::Error> {
    // The same snake_case shape as Qwen Code's (Claude Code's) payloads: its parser.
    let ev = crate::qwen::parse_hook_payload(bytes, env)?;
    Ok(HookEvent {
        agent: Agent::Pi,
        agent_transcript_path: None,
        ..ev
    })
}

/// The files a hook event should ingest: the payload's `transcript_path` when it is given (pi's
/// events fire after it wrote what they report: `agent_end` after every message of the prompt);
/// nothing otherwise.
pub fn transcripts_for_event(ev: &HookEvent) -> Vec<PathBuf> {
    ev.transcript_path
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(PathBuf::from)
        .into_iter()
        .collect()
}

/// The hook's stdout reply that puts `context` into the session: `{"additionalContext":
/// "<context>"}`; memtrail's extension appends it to the system prompt of the prompts that
/// follow (`before_agent_start`).
pub fn session_start_reply(context: &str) -> Option<String> {
    Some(serde_json::json!({ "additionalContext": context }).to_string())
}

/// memtrail's pi extension for the binary at `binary`: the template
/// `templates/pi/memtrail.ts` with its binary placeholder replaced by the path as a JSON string.
pub fn extension_source(binary: &Path) -> String {
    let quoted = serde_json::to_string(&binary.to_string_lossy()).unwrap_or_default();
    EXTENSION_TEMPLATE.replace("\"__MEMTRAIL_BIN__\"", &quoted)
}

/// The extension's template.
const EXTENSION_TEMPLATE: &str = include_str!("../../../../templates/pi/memtrail.ts");

/// The marker that makes a file memtrail's pi extension (any version).
pub const EXTENSION_MARKER: &str = "memtrail-pi-extension";

/// True when `text` is memtrail's pi extension.
pub fn is_memtrail_extension(text: &str) -> bool {
    text.contains(EXTENSION_MARKER)
}
