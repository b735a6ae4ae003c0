//! GitHub Copilot CLI (`@github/copilot`): paths, hook payloads, session identity, discovery and
//! the `events.jsonl` reader.
//!
//! Sources: `docs/agents/copilotcli.md`, checked against Copilot CLI 1.0.102: its JSON schema of
//! session events (`schemas/session-events.schema.json` in the package it unpacks), its SDK's
//! hook types (`copilot-sdk/types.d.ts`), `copilot help config|environment`, and the files and
//! hook payloads of real sessions run offline against a stub model.
//!
//! # Where things are
//!
//! Everything lives in `$COPILOT_HOME` (default `~/.copilot`). Each session is a folder
//! `session-state/<session id>/` holding `events.jsonl` (the transcript), `workspace.yaml`
//! (id, cwd, name), checkpoints and file snapshots. `events.jsonl` is append-only: a resumed
//! session appends to it (`session.resume`), and sub-agents write into their parent's file
//! (events with a top-level `agentId`).
//!
//! # The transcript
//!
//! One session event per line, `{"type", "data", "id", "timestamp", "parentId", "agentId"?}`:
//! the same event stream VS Code's Copilot Chat writes as its agent transcript, so the reading
//! is [`VscodeReader`]'s, and [`CopilotReader`] adds what only the CLI writes: compaction
//! summaries (`session.compaction_complete` `summaryContent`), sub-agent prompts (a
//! `user.message` with `agentId`, which repeats the `task` call's `prompt`: skipped), hidden
//! skill injections (`user.message` whose `source` starts with `skill-`: skipped), shell exit
//! codes (`tool.execution_complete` `shellExecution.exitCode`, with `success: true` even when
//! the code is not 0), MCP tools (`toolRequests[].mcpServerName`: tool `mcp`), and the CLI's
//! bookkeeping events (`hook.*`, `model.*` including `model.messages_snapshot`, which re-lists
//! the whole conversation, `session.usage_record`, `permission.*`, …): skipped as known.

use crate::Source;
use crate::agents::vscode::VscodeReader;
use crate::model::{
    Agent, Batch, HookEvent, Kind, LineReader, Message, Part, Record, Role, SessionRef,
    parse_rfc3339_ms,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub mod adapter;
pub mod paths;
pub mod registration;

/// Where the agent lives in the process environment ([`paths::Locations::resolve`]).
fn locations() -> paths::Locations {
    paths::Locations::resolve(&crate::Env::from_process())
}

/// The Copilot CLI folder: `$COPILOT_HOME` (absolute), else `~/.copilot`.
pub fn config_dir() -> PathBuf {
    locations().config_dir
}

/// The sessions' folder: `<config>/session-state`.
pub fn session_state_dir() -> PathBuf {
    locations().session_state
}

/// The transcript's file name inside a session's folder.
pub const EVENTS_FILE: &str = "events.jsonl";

// ---------------------------------------------------------------------------------------------
// The reader
// ---------------------------------------------------------------------------------------------

/// Event types [`VscodeReader`] turns into content or state: their lines go to it.
const INNER_TYPES: &[&str] = &[
    "user.message",
    "assistant.message",
    "tool.execution_complete",
    "tool.execution_start",
    "session.start",
    "assistant.usage",
    "session.model_change",
    "assistant.turn_end",
    "session.shutdown",
];

/// Prefixes of the event types of Copilot CLI's schema (`session-events.schema.json`): a type
/// with one of them that the reader does not turn into content is skipped as known.
const KNOWN_PREFIXES: &[&str] = &[
    "session.",
    "assistant.",
    "tool.",
    "tool_search.",
    "user.",
    "user_input.",
    "hook.",
    "model.",
    "subagent.",
    "skill.",
    "sandbox.",
    "system.",
    "permission.",
    "elicitation.",
    "sampling.",
    "mcp.",
    "external_tool.",
    "command.",
    "auto_mode_switch.",
    "session_limits_exhausted.",
    "pending_messages.",
    "ui.",
    "agent.",
    "abort",
    "prompt_cache_break",
];

/// Reader for one Copilot CLI transcript `session-state/<id>/events.jsonl`; implements
/// [`LineReader`] (incremental: its state is [`VscodeReader`]'s). Format: the module docs and
/// `docs/agents/copilotcli.md#transcript-format`.
///
/// Every line goes to a [`VscodeReader`] (see there what `user.message`, `assistant.message`,
/// `tool.execution_start|complete` and `session.start` become; ids are the events' `id`s), except:
///
/// - `session.compaction_complete` with a non-empty `data.summaryContent`: a
///   [`Record::Message`] with role `System`, kind `Summary`, id the event's `id`, one text part
///   (the summary, trimmed), the event's time; without one (a failed compaction): skipped (known);
/// - `user.message` of a sub-agent (top-level `agentId`) or a hidden skill injection
///   (`data.source` starting with `skill-`): skipped (known);
/// - other types of Copilot CLI's schema ([`KNOWN_PREFIXES`]): skipped (known) without being
///   parsed.
///
/// After the inner reader: the calls of an `assistant.message` whose request names an
/// `mcpServerName` get tool `mcp`, and `create` gets `write`; a `tool.execution_complete` with
/// `shellExecution.exitCode` sets the call's `exit_code` (and `is_error` when it is not 0), on
/// the call in this batch or on the [`Record::ToolResult`] it emitted (a result held for a
/// request not seen yet keeps no exit code).
#[derive(Debug, Default)]
pub struct CopilotReader {
    inner: VscodeReader,
}

impl CopilotReader {
    /// A reader at the start of a file.
    pub fn new() -> Self {
        Self::default()
    }
}

/// The `type` of an event line written as Copilot CLI writes it (`{"type":"<t>",…`), without
/// parsing the line.
fn leading_type(line: &[u8]) -> Option<&str> {
    let rest = line.strip_prefix(b"{\"type\":\"")?;
    let end = rest.iter().position(|b| *b == b'"' || *b == b'\\')?;
    (rest.get(end) == Some(&b'"'))
        .then(|| std::str::from_utf8(&rest[..end]).ok())
        .flatten()
}

impl LineReader for CopilotReader {
    fn line(&mut self, line: &[u8], out: &mut Batch) {
        let Some(trimmed) = crate::model::trim_line(line) else {
            return self.inner.line(line, out);
        };
        let parsed: Option<Value>;
        let kind = match leading_type(trimmed) {
            Some(t) if !INNER_TYPES.contains(&t) && t != "session.compaction_complete" => {
                if KNOWN_PREFIXES.iter().any(|p| t.starts_with(p)) {
                    out.stats.lines += 1;
                    out.stats.skipped_known += 1;
                    return;
                }
                return self.inner.line(line, out);
            }
            _ => {
                parsed = crate::model::parse_object_line::<Value>(trimmed);
                match parsed.as_ref().and_then(|v| v.get("type")?.as_str()) {
                    Some(t) => t.to_string(),
                    None => return self.inner.line(line, out),
                }
            }
        };
        let ev = parsed.unwrap_or_default();
        let data = ev.get("data").unwrap_or(&Value::Null);
        match kind.as_str() {
            "session.compaction_complete" => {
                out.stats.lines += 1;
                compaction(&ev, data, out);
            }
            "user.message"
                if ev.get("agentId").is_some_and(|a| !a.is_null())
                    || data
                        .get("source")
                        .and_then(Value::as_str)
                        .is_some_and(|s| s.starts_with("skill-")) =>
            {
                out.stats.lines += 1;
                out.stats.skipped_known += 1;
            }
            "assistant.message" => {
                let from = out.records.len();
                self.inner.line(line, out);
                patch_tools(data, &mut out.records[from..]);
            }
            "tool.execution_complete" => {
                self.inner.line(line, out);
                patch_exit_code(data, &mut out.records);
            }
            t if INNER_TYPES.contains(&t) => self.inner.line(line, out),
            t if KNOWN_PREFIXES.iter().any(|p| t.starts_with(p)) => {
                out.stats.lines += 1;
                out.stats.skipped_known += 1;
            }
            _ => self.inner.line(line, out),
        }
    }

    fn finish(&mut self, out: &mut Batch) {
        self.inner.finish(out);
    }

    fn save_state(&self) -> Option<Value> {
        self.inner.save_state()
    }

    fn restore_state(&mut self, state: &Value) {
        self.inner.restore_state(state);
    }
}

/// A `session.compaction_complete` event: its summary as a `System` message of kind `Summary`.
fn compaction(ev: &Value, data: &Value, out: &mut Batch) {
    let summary = data
        .get("summaryContent")
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or("");
    let id = ev.get("id").and_then(Value::as_str).unwrap_or("");
    if summary.is_empty() || id.is_empty() {
        out.stats.skipped_known += 1;
        return;
    }
    let ts = ev
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(parse_rfc3339_ms);
    if let Some(t) = ts {
        let m = &mut out.meta;
        m.started_at = Some(m.started_at.map_or(t, |s| s.min(t)));
        m.updated_at = Some(m.updated_at.map_or(t, |u| u.max(t)));
    }
    out.records.push(Record::Message(Message {
        id: id.to_string(),
        role: Role::System,
        kind: Kind::Summary,
        parts: vec![Part::Text {
            text: summary.to_string(),
        }],
        timestamp: ts,
        model: data
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string),
    }));
}

/// The calls of `records` (an `assistant.message`'s output) named by its `toolRequests`: tool
/// `mcp` for an MCP server's tool, `write` for `create`.
fn patch_tools(data: &Value, records: &mut [Record]) {
    let Some(reqs) = data.get("toolRequests").and_then(Value::as_array) else {
        return;
    };
    for req in reqs {
        let Some(id) = req.get("toolCallId").and_then(Value::as_str) else {
            continue;
        };
        let mcp = req
            .get("mcpServerName")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty());
        for r in records.iter_mut() {
            let Record::Message(m) = r else { continue };
            for p in &mut m.parts {
                if let Part::ToolCall(c) = p
                    && c.id == id
                {
                    if mcp {
                        c.tool = "mcp".to_string();
                    } else if c.name == "create" {
                        c.tool = "write".to_string();
                    }
                }
            }
        }
    }
}

/// The exit code of a `tool.execution_complete`'s shell command on its call in `records`
/// (searched from the end) or on the [`Record::ToolResult`] for it.
fn patch_exit_code(data: &Value, records: &mut [Record]) {
    let (Some(id), Some(code)) = (
        data.get("toolCallId").and_then(Value::as_str),
        data.get("shellExecution")
            .and_then(|s| s.get("exitCode"))
            .and_then(Value::as_i64),
    ) else {
        return;
    };
    for r in records.iter_mut().rev() {
        match r {
            Record::Message(m) => {
                for p in &mut m.parts {
                    if let Part::ToolCall(c) = p
                        && c.id == id
                    {
                        c.exit_code = Some(code);
                        c.is_error |= code != 0;
                        return;
                    }
                }
            }
            Record::ToolResult {
                call_id,
                exit_code,
                is_error,
                ..
            } if call_id == id => {
                *exit_code = Some(code);
                *is_error |= code != 0;
                return;
            }
            _ => {}
        }
    }
}

/// How to read the file at `path`: an `events.jsonl` gives [`Source::Lines`] with a
/// [`CopilotReader`]; anything else `None`.
pub fn source_for(path: &Path) -> Option<Source> {
    (path.file_name()? == EVENTS_FILE).then(|| Source::Lines(Box::new(CopilotReader::new())))
}

// ---------------------------------------------------------------------------------------------
// Sessions and discovery
// ---------------------------------------------------------------------------------------------

/// A session id usable as a path component.
fn is_safe_name(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Which session `session-state/<id>/events.jsonl` belongs to: `<id>`, the folder's name
/// (Copilot CLI names the folder by the session id, `session.start` `data.sessionId`).
///
/// Errors: `InvalidInput` when the file is not an `events.jsonl` in a session folder.
pub fn identify(path: &Path) -> std::io::Result<SessionRef> {
    let id = (path.file_name().is_some_and(|n| n == EVENTS_FILE))
        .then(|| path.parent()?.file_name()?.to_str())
        .flatten()
        .filter(|s| is_safe_name(s))
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "not a Copilot CLI session-state/<id>/events.jsonl: {}",
                    path.display()
                ),
            )
        })?;
    Ok(SessionRef {
        agent: Agent::Copilotcli,
        external_id: id.to_string(),
        parent_external_id: None,
    })
}

/// Every transcript under [`session_state_dir`]; see [`discover_in`].
pub fn discover() -> std::io::Result<crate::Discovery> {
    discover_in(&session_state_dir())
}

/// Every `<session_state>/<id>/events.jsonl` that is a file, sorted; session folders that
/// cannot be listed are not an error (their transcript is simply not a file). A missing
/// `session_state` gives nothing.
///
/// Errors: `session_state` exists but cannot be listed.
pub fn discover_in(session_state: &Path) -> std::io::Result<crate::Discovery> {
    let entries = match std::fs::read_dir(session_state) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
        Err(e) => return Err(e),
    };
    let mut found = crate::Discovery::default();
    for e in entries {
        match e {
            Ok(e) => {
                let name = e.file_name();
                if !name.to_str().is_some_and(is_safe_name) {
                    continue;
                }
                let f = e.path().join(EVENTS_FILE);
                if f.is_file() {
                    found.files.push(f);
                }
            }
            Err(err) => found
                .unreadable
                .push((session_state.to_path_buf(), err.to_string())),
        }
    }
    found.files.sort();
    Ok(found)
}

// ---------------------------------------------------------------------------------------------
// Hooks (`docs/agents/copilotcli.md#hooks`)
// ---------------------------------------------------------------------------------------------

/// The hook event a Copilot CLI payload is for. The payload names no event (the command runs
/// with the same stdin shape for each), so it is told by the fields only that event has
/// (`copilot-sdk/types.d.ts`, payloads observed with 1.0.102): `trigger` → `preCompact`,
/// `source` → `sessionStart`, `reason` → `sessionEnd`, `agentName` with `stopReason` →
/// `subagentStop`, `agentName` → `subagentStart`, `stopReason` or `transcriptPath` →
/// `agentStop`, `toolResult` → `postToolUse`, `toolName` → `preToolUse`, `prompt` →
/// `userPromptSubmitted`, `errorContext` → `errorOccurred`; else `""`.
fn event_of(p: &serde_json::Map<String, Value>) -> &'static str {
    let has = |k: &str| p.get(k).is_some_and(|v| !v.is_null());
    if has("trigger") {
        "preCompact"
    } else if has("source") {
        "sessionStart"
    } else if has("reason") {
        "sessionEnd"
    } else if has("agentName") {
        if has("stopReason") {
            "subagentStop"
        } else {
            "subagentStart"
        }
    } else if has("stopReason") || has("transcriptPath") {
        "agentStop"
    } else if has("toolResult") {
        "postToolUse"
    } else if has("toolName") {
        "preToolUse"
    } else if has("prompt") {
        "userPromptSubmitted"
    } else if has("errorContext") {
        "errorOccurred"
    } else {
        ""
    }
}

/// Parse a Copilot CLI hook payload (stdin, camelCase: `{"sessionId", "timestamp" (ms),
/// "cwd", …}`) into a [`HookEvent`]:
///
/// - `event` ← told from the fields ([`event_of`]), Copilot CLI's spelling (`agentStop`);
/// - `transcript_path` ← `transcriptPath` (agentStop, preCompact, subagent events);
/// - `session_id` ← the session folder of `transcriptPath` (`session-state/<id>/events.jsonl`:
///   a sub-agent's payload carries the sub-agent's id as `sessionId` but its parent's
///   transcript), else `sessionId`;
/// - `cwd` ← `cwd`; `source` ← `source` (`new|startup|resume`), `trigger` (`manual|auto`) or
///   `reason` (`complete|error|abort|timeout|user_exit`); `extra` ← the whole payload.
///
/// Errors: the bytes are empty, not JSON or not an object; or the payload names its event
/// (`hookEventName`, `hook_event_name`): VS Code's (or a Claude-format) payload, which VS Code
/// sends when it runs the hook files of `~/.copilot/hooks` ([`crate::Error::ForeignPayload`]).
pub fn parse_hook_payload(bytes: &[u8], env: &crate::Env) -> Result<HookEvent, crate::Error> {
    let _ = env;
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(crate::Error::EmptyPayload);
    }
    let payload = match serde_json::from_slice(bytes) {
        Ok(Value::Object(m)) => m,
        Ok(_) => return Err(crate::Error::PayloadNotObject),
        Err(e) => return Err(crate::Error::PayloadNotJson(e)),
    };
    if payload.contains_key("hookEventName") || payload.contains_key("hook_event_name") {
        return Err(crate::Error::ForeignPayload(
            "VS Code Copilot",
            "it names its hookEventName",
        ));
    }
    let get = |k: &str| {
        payload
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let transcript_path = get("transcriptPath");
    let folder_id = transcript_path
        .as_deref()
        .and_then(|t| identify(Path::new(t)).ok().map(|s| s.external_id));
    let event = event_of(&payload).to_string();
    Ok(HookEvent {
        agent: Agent::Copilotcli,
        event,
        session_id: folder_id.or_else(|| get("sessionId")),
        transcript_path,
        cwd: get("cwd"),
        source: get("source")
            .or_else(|| get("trigger"))
            .or_else(|| get("reason")),
        agent_transcript_path: None,
        extra: Value::Object(payload),
    })
}

/// The files a hook event should ingest; see [`transcripts_for_event_in`] (with
/// [`session_state_dir`]).
pub fn transcripts_for_event(ev: &HookEvent) -> Vec<PathBuf> {
    transcripts_for_event_in(ev, &session_state_dir())
}

/// The files a hook event should ingest:
///
/// 1. the payload's `transcriptPath`, else (sessionStart, sessionEnd and the tool hooks carry
///    none) `<session_state>/<session id>/events.jsonl` when it is a file, or at `sessionEnd`
///    even before Copilot has written it;
/// 2. at a `sessionStart`, also the most recently written transcript of **another** session
///    ([`latest_other`]): Copilot CLI writes a turn's final answer after its `agentStop` and
///    `sessionEnd` hooks ran, so the last answer of the session before is only on disk now.
///
/// Nothing found gives an empty list.
pub fn transcripts_for_event_in(ev: &HookEvent, session_state: &Path) -> Vec<PathBuf> {
    let current = ev.session_id.as_deref().filter(|s| is_safe_name(s));
    let mut paths: Vec<PathBuf> = match ev.transcript_path.as_deref().filter(|t| !t.is_empty()) {
        Some(t) => vec![PathBuf::from(t)],
        None => current
            .map(|s| session_state.join(s).join(EVENTS_FILE))
            // At the session's end also when it is not written yet: the hook leaves a wait for
            // it (`Quirks::written_after_session_end`).
            .filter(|p| p.is_file() || ev.event == "sessionEnd")
            .into_iter()
            .collect(),
    };
    if ev.event == "sessionStart"
        && let Some(other) = latest_other(session_state, current)
        && !paths.contains(&other)
    {
        paths.push(other);
    }
    paths
}

/// The `events.jsonl` under `session_state` written last (modification time), among the first
/// [`crate::paths::NEWEST_SCAN_CAP`] session folders the directory lists, other than
/// `current`'s; `None` when there is none or the folder cannot be listed.
pub fn latest_other(session_state: &Path, current: Option<&str>) -> Option<PathBuf> {
    crate::paths::newest_in(session_state, |e| {
        let name = e.file_name();
        name.to_str()
            .is_some_and(|n| is_safe_name(n) && Some(n) != current)
            .then(|| e.path().join(EVENTS_FILE))
    })
}

/// The stdout reply to a `sessionStart` hook that adds `context` to the conversation:
/// `{"additionalContext":"<context>"}` (`SessionStartHookOutput`; Copilot CLI puts it into the
/// model's context of a new or resumed session, observed with 1.0.102).
pub fn session_start_reply(context: &str) -> Option<String> {
    Some(serde_json::json!({ "additionalContext": context }).to_string())
}
