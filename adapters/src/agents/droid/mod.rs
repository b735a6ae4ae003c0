//! Factory Droid (`droid`): paths, hook payloads, session identity, discovery and the session
//! reader. Droid is not on npm; everything here comes from Factory's documentation and other
//! tools' readers of real Droid files (`docs/agents/droid.md#sources`), with fixtures written to
//! that shape.
//!
//! # Where things are
//!
//! `~/.factory`: `settings.json` (hooks, Claude Code's schema), `mcp.json` (MCP servers),
//! `skills/`, and `sessions/<project slug>/<session id>.jsonl` with a
//! `<session id>.settings.json` beside each (model, token totals: not read).
//!
//! # The transcript
//!
//! Append-only JSONL. Line 1 is `{"type":"session_start","id","title","sessionTitle","owner",
//! "version","cwd"}`; a conversation line is `{"type":"message","id","timestamp","parentId"?,
//! "message":{"role":"user"|"assistant","content":[…]}}` whose `content` holds Anthropic
//! Messages blocks (`text`, `thinking`, `redacted_thinking`, `tool_use`, `tool_result`,
//! `image`, `document`): the blocks of a Claude Code transcript line. So [`DroidReader`] hands
//! each message, re-enveloped as a Claude Code line, to a [`ClaudeReader`]; it reads the other
//! record types (`session_start`, `compaction_state`, `todo_state`, `session_settings`,
//! `agent_turn_outcome`) itself.

use crate::Source;
use crate::agents::claude::ClaudeReader;
use crate::model::{
    Agent, Batch, HookEvent, Kind, LineReader, Message, Part, Record, Role, SessionRef,
    parse_rfc3339_ms,
};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

pub mod adapter;
pub mod paths;
pub mod registration;

/// Where the agent lives in the process environment ([`paths::Locations::resolve`]).
fn locations() -> paths::Locations {
    paths::Locations::resolve(&crate::Env::from_process())
}

/// The sessions' folder: `~/.factory/sessions`.
pub fn sessions_dir() -> PathBuf {
    locations().sessions
}

// ---------------------------------------------------------------------------------------------
// The reader
// ---------------------------------------------------------------------------------------------

/// Record types that carry no conversation content.
const QUIET_TYPES: &[&str] = &["todo_state", "session_settings", "agent_turn_outcome"];

/// Fields of a `compaction_state` record that may hold the summary text, in the order tried.
/// (The record's fields are not documented; other readers only use its `timestamp`.)
const SUMMARY_FIELDS: &[&str] = &["summaryText", "summary"];

/// Droid's tool names the shared vocabulary does not know: `Execute` runs a shell command,
/// `Create` writes a new file.
const TOOL_NAMES: &[(&str, &str)] = &[("Execute", "shell"), ("Create", "write")];

/// Reader for one Droid session file `sessions/<slug>/<id>.jsonl`; implements [`LineReader`]
/// (incremental; its state is [`ClaudeReader`]'s, which keeps none across ingests). Format: the
/// module docs and `docs/agents/droid.md#transcript-format`.
///
/// - `session_start`: the session's project (`cwd`); nothing stored;
/// - `message`: re-enveloped as the Claude Code line `{"type":<role>,"uuid":<id>,"timestamp",
///   "message":{"role","content","model"?}}` and read by [`ClaudeReader`] (see there: prompts
///   without `<system-reminder>` elements, text, thinking and tool calls, tool results attached
///   to their calls, ids the lines' `id`s); then `Execute` calls get tool `shell` and `Create`
///   calls `write`;
/// - `compaction_state` with a non-empty `summaryText` or `summary`: a [`Role::System`] message
///   of kind [`Kind::Summary`] (id the record's `id`, else `compaction-<timestamp>`); without
///   one: skipped (known);
/// - `todo_state`, `session_settings`, `agent_turn_outcome`: skipped (known); other types:
///   unknown; lines that are not JSON objects: malformed.
#[derive(Debug, Default)]
pub struct DroidReader {
    inner: ClaudeReader,
}

impl DroidReader {
    /// A reader at the start of a file.
    pub fn new() -> Self {
        Self::default()
    }
}

impl LineReader for DroidReader {
    fn line(&mut self, line: &[u8], out: &mut Batch) {
        let Some(trimmed) = crate::model::trim_line(line) else {
            return;
        };
        let Some(rec) = crate::model::parse_object_line::<Map<String, Value>>(trimmed) else {
            out.stats.lines += 1;
            out.stats.malformed += 1;
            return;
        };
        let ty = rec.get("type").and_then(Value::as_str).unwrap_or("");
        match ty {
            "message" => {
                let from = out.records.len();
                let claude_line = claude_envelope(&rec);
                self.inner.line(claude_line.as_bytes(), out);
                rename_tools(&mut out.records[from..]);
            }
            "session_start" => {
                out.stats.lines += 1;
                out.stats.skipped_known += 1;
                if let Some(cwd) = rec.get("cwd").and_then(Value::as_str) {
                    out.meta.project_dir = Some(cwd.to_string());
                }
            }
            "compaction_state" => {
                out.stats.lines += 1;
                compaction(&rec, out);
            }
            t if QUIET_TYPES.contains(&t) => {
                out.stats.lines += 1;
                out.stats.skipped_known += 1;
            }
            _ => {
                out.stats.lines += 1;
                out.stats.skipped_unknown += 1;
            }
        }
    }

    fn finish(&mut self, out: &mut Batch) {
        self.inner.finish(out);
    }
}

/// A Droid `message` record as the Claude Code line [`ClaudeReader`] reads: `type` the role,
/// `uuid` the record's `id`, its `timestamp`, and a `message` with the role, the content and
/// the model when there is one (no `id`: the record's id names the message).
fn claude_envelope(rec: &Map<String, Value>) -> String {
    let msg = rec.get("message").unwrap_or(&Value::Null);
    let role = msg.get("role").cloned().unwrap_or(Value::Null);
    let mut inner = json!({ "role": role, "content": msg.get("content").cloned() });
    if let Some(m) = msg.get("model").filter(|m| m.is_string()) {
        inner["model"] = m.clone();
    }
    json!({
        "type": role,
        "uuid": rec.get("id"),
        "timestamp": rec.get("timestamp"),
        "message": inner,
    })
    .to_string()
}

/// The common tool name of Droid's own tool names ([`TOOL_NAMES`]) on the calls of `records`.
fn rename_tools(records: &mut [Record]) {
    for r in records {
        let Record::Message(m) = r else { continue };
        for p in &mut m.parts {
            if let Part::ToolCall(c) = p
                && let Some((_, tool)) = TOOL_NAMES.iter().find(|(n, _)| *n == c.name)
            {
                c.tool = tool.to_string();
            }
        }
    }
}

/// A `compaction_state` record: its summary as a system message, when it has one.
fn compaction(rec: &Map<String, Value>, out: &mut Batch) {
    let ts_text = rec.get("timestamp").and_then(Value::as_str).unwrap_or("");
    let summary = SUMMARY_FIELDS
        .iter()
        .find_map(|k| rec.get(*k)?.as_str())
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let id = match rec.get("id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => id.to_string(),
        _ if !ts_text.is_empty() => format!("compaction-{ts_text}"),
        _ => String::new(),
    };
    let (Some(summary), false) = (summary, id.is_empty()) else {
        out.stats.skipped_known += 1;
        return;
    };
    let ts = parse_rfc3339_ms(ts_text);
    if let Some(t) = ts {
        let m = &mut out.meta;
        m.started_at = Some(m.started_at.map_or(t, |s| s.min(t)));
        m.updated_at = Some(m.updated_at.map_or(t, |u| u.max(t)));
    }
    out.records.push(Record::Message(Message {
        id,
        role: Role::System,
        kind: Kind::Summary,
        parts: vec![Part::Text {
            text: summary.to_string(),
        }],
        timestamp: ts,
        model: None,
    }));
}

/// How to read the file at `path`: a session file `<id>.jsonl` gives [`Source::Lines`] with a
/// [`DroidReader`]; anything else `None`.
pub fn source_for(path: &Path) -> Option<Source> {
    session_of(path).map(|_| Source::Lines(Box::new(DroidReader::new())) as Source)
}

// ---------------------------------------------------------------------------------------------
// Sessions and discovery
// ---------------------------------------------------------------------------------------------

/// The session id of `…/<id>.jsonl` (Droid names the file by the session's id, the
/// `session_start` record's `id`).
fn session_of(path: &Path) -> Option<&str> {
    let id = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    (!id.is_empty() && !id.starts_with('.')).then_some(id)
}

/// Which session a Droid session file belongs to: its name's `<id>` (the file is not opened).
/// A sub-droid's session (the `Task` tool) is a file of its own, with no link to its parent
/// in the file: no parent.
///
/// Errors: `InvalidInput` when the name is not `<id>.jsonl`.
pub fn identify(path: &Path) -> std::io::Result<SessionRef> {
    let id = session_of(path).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "not a Droid sessions/<project>/<id>.jsonl: {}",
                path.display()
            ),
        )
    })?;
    Ok(SessionRef {
        agent: Agent::Droid,
        external_id: id.to_string(),
        parent_external_id: None,
    })
}

/// Every `*.jsonl` in [`sessions_dir`] and in its project folders (pi's layout too:
/// [`crate::pi::discover_in`]).
pub fn discover() -> std::io::Result<crate::Discovery> {
    crate::pi::discover_in(&sessions_dir())
}

// ---------------------------------------------------------------------------------------------
// Hooks: Claude Code's schema (`docs/agents/droid.md#hooks`)
// ---------------------------------------------------------------------------------------------

/// Parse a Droid hook payload: Claude Code's (`session_id`, `transcript_path`, `cwd`,
/// `hook_event_name`, `source` / `trigger` / `reason`), read by Claude Code's parser
/// ([`crate::claude::parse_hook_payload`]); the caller is Droid, whatever that parser's caller
/// detection says (it tells Claude Code, VS Code and Cursor apart, which run
/// `~/.claude/settings.json`; Droid runs only its own settings).
///
/// Errors: the bytes are empty, not JSON or not an object.
pub fn parse_hook_payload(bytes: &[u8], env: &crate::Env) -> Result<HookEvent, crate::Error> {
    let ev = crate::claude::parse_hook_payload(bytes, env)?;
    Ok(HookEvent {
        agent: Agent::Droid,
        ..ev
    })
}

/// The files a hook event should ingest: Claude Code's rule
/// ([`crate::claude::transcripts_for_event`]: the payload's `transcript_path` when it is a
/// `.jsonl`, and SubagentStop's `agent_transcript_path`).
pub fn transcripts_for_event(ev: &HookEvent) -> Vec<PathBuf> {
    crate::claude::transcripts_for_event(ev)
}

/// The SessionStart reply: Claude Code's `{"hookSpecificOutput":{"hookEventName":
/// "SessionStart","additionalContext":"<context>"}}` (Droid's hooks reference).
pub fn session_start_reply(context: &str) -> Option<String> {
    crate::claude::session_start_reply(context)
}
