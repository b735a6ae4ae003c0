//! Qwen Code (`@qwen-code/qwen-code`): paths, hook payloads, session identity, discovery and
//! the chat-recording reader.
//!
//! Sources: `docs/agents/qwen.md`, checked against Qwen Code 0.24.4 (its bundled
//! `packages/core/src/services/chatRecordingService.ts`, `utils/transcript-records.ts`,
//! `config/storage.ts`, `utils/paths.ts` `sanitizeCwd`, `hooks/hookEventHandler.ts`,
//! `hooks/hookRunner.ts`) and the files and hook payloads of real sessions run offline against
//! a stub model.
//!
//! # Where things are
//!
//! Config (`settings.json`, skills) lives in `$QWEN_HOME` (default `~/.qwen`); sessions in the
//! runtime folder (`$QWEN_RUNTIME_DIR`, else the config folder), one file per session:
//! `projects/<cwd, every non-alphanumeric character replaced by '-'>/chats/<session id>.jsonl`.
//! The same folder holds `<session id>.runtime.json` sidecars (not transcripts).
//!
//! # The transcript
//!
//! Append-only JSONL, one record per line: `{uuid, parentUuid, sessionId, timestamp, type,
//! subtype?, cwd, version, gitBranch?, model?, message?: {role, parts}, toolCallResult?,
//! systemPayload?}`, `type` one of `user`, `assistant`, `tool_result`, `system`. `parts` are
//! Gemini API parts (`text`, `thought`, `functionCall {id, name, args}`, `functionResponse {id,
//! name, response}`). Every record, telemetry included, is a link of a `parentUuid` chain; the
//! conversation is the chain from the last record up to its root. A rewind (`/rewind`, or a
//! resume from the last completed record) appends a record whose parent is an earlier record:
//! what followed that parent on the old chain is a dead branch. Records sharing a `uuid` are
//! fragments of one record (their parts concatenate).

use crate::Source;
use crate::model::{
    Agent, Batch, HookEvent, Kind, LineReader, Message, Part, Record, Role, SessionRef, ToolCall,
    normalize_tool_name, parse_rfc3339_ms, title_text,
};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

pub mod adapter;
pub mod paths;
pub mod registration;

/// Where the agent lives in the process environment ([`paths::Locations::resolve`]).
fn locations() -> paths::Locations {
    paths::Locations::resolve(&crate::Env::from_process())
}

/// The Qwen Code config folder: `$QWEN_HOME`, else `~/.qwen`.
pub fn config_dir() -> PathBuf {
    locations().config_dir
}

/// The projects' folder holding the sessions: `<runtime>/projects`.
pub fn projects_dir() -> PathBuf {
    locations().projects
}

/// The folder of a project's sessions, inside a project folder.
pub const CHATS_DIR: &str = "chats";

// ---------------------------------------------------------------------------------------------
// The reader
// ---------------------------------------------------------------------------------------------

/// The record types of Qwen Code's transcripts (`RECORD_TYPES`).
const RECORD_TYPES: &[&str] = &["user", "assistant", "tool_result", "system"];

/// `system` subtypes that are not links of the conversation chain (`transcript-records.ts`:
/// artifact records and `NON_CONVERSATION_RECORD_SUBTYPES`).
const OFF_CHAIN_SUBTYPES: &[&str] = &[
    "session_artifact_event",
    "session_artifact_snapshot",
    "session_sources_snapshot",
    "managed_session_header_v1",
    "managed_session_event_v1",
    "managed_session_commit_v1",
];

/// `user` subtypes that are the user's own words; other `user` subtypes (`cron`,
/// `notification`, `goal_runtime`) are text Qwen Code injects, stored with role `System`.
const USER_SUBTYPES: &[&str] = &["mid_turn_user_message", "realtime_message"];

/// Hook context Qwen Code adds to a prompt as a part of its own (`<qwen:user-prompt-submit-context>`).
const PROMPT_CONTEXT_OPEN: &str = "<qwen:user-prompt-submit-context>";

/// The sentence Qwen Code appends to every compaction summary (`RESUME_TRAILER`).
const RESUME_TRAILER: &str = "Resume the prior task using the summary above. Continue from the last in-flight step; do not acknowledge the summary, do not re-introduce, do not greet the user again.";

/// The tool through which the model calls a deferred tool (`{"name", "arguments"}`); MCP
/// servers' tools are deferred.
const DEFERRED_CALL: &str = "tool_call";

/// At most this many links of the active chain are kept in the reader's state; a rewind to a
/// record older than that is not seen (its dead branch stays stored).
pub const CHAIN_CAP: usize = 4096;

/// How many of the newest links are searched for an earlier fragment of the same record.
const FRAGMENT_WINDOW: usize = 8;

/// One link of the active chain: a record's `uuid`, and whether it was stored as a message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Link(String, bool);

/// Reader for one Qwen Code transcript `chats/<session id>.jsonl`; implements [`LineReader`]
/// (incremental: its state is the active chain, at most [`CHAIN_CAP`] links). Format: the
/// module docs and `docs/agents/qwen.md#transcript-format`.
///
/// Each record becomes:
///
/// - `user` (no subtype, `mid_turn_user_message`, `realtime_message`): a [`Role::User`] message,
///   id the record's `uuid`, its `text` parts (hook context parts left out); the first one is
///   the title; other `user` subtypes: the same with role `System`;
/// - `assistant`: a [`Role::Assistant`] message, id the `uuid`, model `model`: `text` parts,
///   `thought: true` parts as [`Part::Thinking`], `functionCall` as [`Part::ToolCall`] (id the
///   call's `id`, else `<uuid>:<index>`; input `args`; a `tool_call` of a deferred tool gets the
///   common name of the tool it calls, `args.name`);
/// - `tool_result`: one [`Record::ToolResult`] per `functionResponse` part (call id its `id`,
///   else `toolCallResult.callId`; output `response.output`, else `response.error`, else the
///   response as JSON; an error when `toolCallResult.status` is `error` or the response holds
///   `error`; exit code `toolCallResult.resultDisplay.exitCode`, an error when not 0);
/// - `system` `chat_compression`: a [`Role::System`] message of kind [`Kind::Summary`], id the
///   `uuid`, the text of the first user entry of `systemPayload.compressedHistory` without Qwen
///   Code's resume sentence; other `system` records: skipped (known);
/// - a record whose `parentUuid` is not the previous link (a rewind): first a
///   [`Record::Rewind`] of the first message stored after that parent on the active chain
///   (nothing when the parent is older than the kept chain or unknown).
///
/// Records without a `uuid`, or of another `type`, are counted (malformed, unknown) and skipped.
#[derive(Debug, Default)]
pub struct QwenReader {
    /// The active chain, oldest first.
    chain: Vec<Link>,
}

impl QwenReader {
    /// A reader at the start of a file.
    pub fn new() -> Self {
        Self::default()
    }

    /// Put `uuid` (child of `parent`) at the end of the active chain, emitting a rewind when
    /// `parent` is an earlier link. Returns false when `uuid` is a fragment of a newest link.
    fn link(&mut self, uuid: &str, parent: Option<&str>, out: &mut Batch) -> bool {
        let start = self.chain.len().saturating_sub(FRAGMENT_WINDOW);
        if self.chain[start..].iter().any(|l| l.0 == uuid) {
            return false;
        }
        let last = self.chain.last().map(|l| l.0.as_str());
        if parent != last {
            let keep = match parent {
                None => Some(0),
                Some(p) => self.chain.iter().rposition(|l| l.0 == p).map(|i| i + 1),
            };
            if let Some(k) = keep {
                if let Some(first) = self.chain[k..].iter().find(|l| l.1) {
                    out.records.push(Record::Rewind {
                        message_id: first.0.clone(),
                    });
                }
                self.chain.truncate(k);
            }
        }
        self.chain.push(Link(uuid.to_string(), false));
        if self.chain.len() > CHAIN_CAP + CHAIN_CAP / 8 {
            self.chain.drain(..self.chain.len() - CHAIN_CAP);
        }
        true
    }

    /// Mark the link of `uuid` (a newest one) as stored.
    fn stored(&mut self, uuid: &str) {
        let start = self.chain.len().saturating_sub(FRAGMENT_WINDOW);
        if let Some(l) = self.chain[start..].iter_mut().rev().find(|l| l.0 == uuid) {
            l.1 = true;
        }
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn note_time(out: &mut Batch, ts: Option<i64>) {
    if let Some(t) = ts {
        let m = &mut out.meta;
        m.started_at = Some(m.started_at.map_or(t, |s| s.min(t)));
        m.updated_at = Some(m.updated_at.map_or(t, |u| u.max(t)));
    }
}

impl LineReader for QwenReader {
    fn line(&mut self, line: &[u8], out: &mut Batch) {
        let Some(trimmed) = crate::model::trim_line(line) else {
            return;
        };
        out.stats.lines += 1;
        let Some(rec) = crate::model::parse_object_line::<Map<String, Value>>(trimmed) else {
            out.stats.malformed += 1;
            return;
        };
        let rec = Value::Object(rec);
        let Some(uuid) = str_at(&rec, "uuid") else {
            out.stats.malformed += 1;
            return;
        };
        let ty = rec.get("type").and_then(Value::as_str).unwrap_or("");
        if !RECORD_TYPES.contains(&ty) {
            out.stats.skipped_unknown += 1;
            return;
        }
        let subtype = str_at(&rec, "subtype");
        if ty == "system" && subtype.is_some_and(|s| OFF_CHAIN_SUBTYPES.contains(&s)) {
            out.stats.skipped_known += 1;
            return;
        }
        let uuid = uuid.to_string();
        self.link(&uuid, str_at(&rec, "parentUuid"), out);
        let ts = str_at(&rec, "timestamp").and_then(parse_rfc3339_ms);
        note_time(out, ts);
        let meta = &mut out.meta;
        if let Some(cwd) = str_at(&rec, "cwd") {
            meta.project_dir = Some(cwd.to_string());
        }
        if let Some(v) = str_at(&rec, "version") {
            meta.agent_version = Some(v.to_string());
        }
        if let Some(b) = str_at(&rec, "gitBranch") {
            meta.git_branch = Some(b.to_string());
        }
        let parts = rec
            .get("message")
            .and_then(|m| m.get("parts"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let message = match ty {
            "user" => {
                let role = match subtype {
                    None => Role::User,
                    Some(s) if USER_SUBTYPES.contains(&s) => Role::User,
                    Some(_) => Role::System,
                };
                let texts = user_texts(parts);
                if role == Role::User && out.meta.title.is_none() {
                    out.meta.title = texts.first().map(|t| title_text(t, 80));
                }
                tool_results(&rec, parts, ts, out);
                (!texts.is_empty()).then(|| Message {
                    id: uuid.clone(),
                    role,
                    kind: Kind::Text,
                    parts: texts.into_iter().map(|text| Part::Text { text }).collect(),
                    timestamp: ts,
                    model: None,
                })
            }
            "assistant" => {
                let model = str_at(&rec, "model").map(str::to_string);
                if model.is_some() {
                    out.meta.model.clone_from(&model);
                }
                let parts = assistant_parts(&uuid, parts);
                (!parts.is_empty()).then(|| Message {
                    id: uuid.clone(),
                    role: Role::Assistant,
                    kind: Message::infer_kind(&parts),
                    parts,
                    timestamp: ts,
                    model,
                })
            }
            "tool_result" => {
                tool_results(&rec, parts, ts, out);
                None
            }
            _ => (subtype == Some("chat_compression"))
                .then(|| compaction_summary(&rec))
                .flatten()
                .map(|text| Message {
                    id: uuid.clone(),
                    role: Role::System,
                    kind: Kind::Summary,
                    parts: vec![Part::Text { text }],
                    timestamp: ts,
                    model: None,
                }),
        };
        match message {
            Some(m) => {
                out.records.push(Record::Message(m));
                self.stored(&uuid);
            }
            None if ty != "tool_result" => out.stats.skipped_known += 1,
            None => {}
        }
    }

    fn finish(&mut self, _out: &mut Batch) {}

    fn save_state(&self) -> Option<Value> {
        (!self.chain.is_empty()).then(|| serde_json::json!({ "chain": self.chain }))
    }

    fn restore_state(&mut self, state: &Value) {
        if let Some(chain) = state
            .get("chain")
            .and_then(|c| serde_json::from_value::<Vec<Link>>(c.clone()).ok())
        {
            self.chain = chain;
        }
    }
}

/// The text parts of a user record, trimmed, without thoughts, empty parts and hook context.
fn user_texts(parts: &[Value]) -> Vec<String> {
    parts
        .iter()
        .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
        .filter_map(|p| p.get("text")?.as_str())
        .map(str::trim)
        .filter(|t| !t.is_empty() && !t.starts_with(PROMPT_CONTEXT_OPEN))
        .map(str::to_string)
        .collect()
}

/// The parts of an assistant record: text, thinking (`thought: true`) and tool calls.
fn assistant_parts(uuid: &str, parts: &[Value]) -> Vec<Part> {
    let mut out = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        if let Some(fc) = p.get("functionCall") {
            let name = str_at(fc, "name").unwrap_or("").to_string();
            let id = str_at(fc, "id").map_or_else(|| format!("{uuid}:{i}"), str::to_string);
            let input = fc.get("args").cloned().unwrap_or(Value::Null);
            // A deferred tool (MCP tools among them) is called through `tool_call`.
            let tool = match str_at(&input, "name").filter(|_| name == DEFERRED_CALL) {
                Some(inner) => normalize_tool_name(inner),
                None => normalize_tool_name(&name),
            };
            out.push(Part::ToolCall(ToolCall {
                id,
                tool,
                name,
                input,
                output: None,
                is_error: false,
                exit_code: None,
            }));
        } else if let Some(t) = p.get("text").and_then(Value::as_str) {
            let text = t.trim();
            if text.is_empty() {
                continue;
            }
            let text = text.to_string();
            if p.get("thought").and_then(Value::as_bool) == Some(true) {
                out.push(Part::Thinking { text });
            } else {
                out.push(Part::Text { text });
            }
        }
    }
    out
}

/// One [`Record::ToolResult`] per `functionResponse` part of `rec`.
fn tool_results(rec: &Value, parts: &[Value], ts: Option<i64>, out: &mut Batch) {
    let result = rec.get("toolCallResult").unwrap_or(&Value::Null);
    let failed = str_at(result, "status") == Some("error");
    let exit_code = result
        .get("resultDisplay")
        .and_then(|d| d.get("exitCode"))
        .and_then(Value::as_i64);
    for p in parts {
        let Some(fr) = p.get("functionResponse") else {
            continue;
        };
        let Some(call_id) = str_at(fr, "id").or_else(|| str_at(result, "callId")) else {
            continue;
        };
        let response = fr.get("response").unwrap_or(&Value::Null);
        let error = response.get("error").filter(|e| !e.is_null());
        let output = match (response.get("output"), error) {
            (Some(Value::String(s)), _) => s.clone(),
            (_, Some(Value::String(s))) => s.clone(),
            (_, _) if response.is_null() => String::new(),
            _ => response.to_string(),
        };
        out.records.push(Record::ToolResult {
            call_id: call_id.to_string(),
            output,
            is_error: failed || error.is_some() || exit_code.is_some_and(|c| c != 0),
            exit_code,
            timestamp: ts,
        });
    }
}

/// The summary of a `chat_compression` record: the text parts of the first `user` entry of
/// `systemPayload.compressedHistory`, joined by blank lines, without [`RESUME_TRAILER`].
fn compaction_summary(rec: &Value) -> Option<String> {
    let first = rec
        .get("systemPayload")?
        .get("compressedHistory")?
        .as_array()?
        .iter()
        .find(|c| c.get("role").and_then(Value::as_str) == Some("user"))?;
    let text = first
        .get("parts")?
        .as_array()?
        .iter()
        .filter_map(|p| p.get("text")?.as_str())
        .collect::<Vec<_>>()
        .join("\n\n");
    let text = text.trim();
    let text = text.strip_suffix(RESUME_TRAILER).unwrap_or(text).trim_end();
    (!text.is_empty()).then(|| text.to_string())
}

/// How to read the file at `path`: a `chats/<id>.jsonl` or a sub-agent's
/// `subagents/<session id>/agent-<id>.jsonl` (the same record format) gives [`Source::Lines`]
/// with a [`QwenReader`]; anything else `None`.
pub fn source_for(path: &Path) -> Option<Source> {
    (session_of(path).is_some() || subagent_of(path).is_some())
        .then(|| Source::Lines(Box::new(QwenReader::new())))
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

/// The session id of `…/chats/<id>.jsonl`.
fn session_of(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    let id = name.strip_suffix(".jsonl")?;
    (path.parent()?.file_name()? == CHATS_DIR && is_safe_name(id)).then_some(id)
}

/// The parent session id and the file stem (`agent-<id>`) of a sub-agent's transcript
/// `…/subagents/<session id>/agent-<agent id>.jsonl`.
fn subagent_of(path: &Path) -> Option<(&str, &str)> {
    let stem = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    let dir = path.parent()?;
    let session = dir.file_name()?.to_str()?;
    (stem.starts_with("agent-")
        && is_safe_name(stem)
        && is_safe_name(session)
        && dir.parent()?.file_name()? == SUBAGENTS_DIR)
        .then_some((session, stem))
}

/// The folder of a project's sub-agent transcripts, inside a project folder.
pub const SUBAGENTS_DIR: &str = "subagents";

/// Which session a transcript belongs to (the file is not opened):
///
/// - `chats/<id>.jsonl`: `<id>` (Qwen Code names the file by the session id, the records'
///   `sessionId`), no parent;
/// - a sub-agent's `subagents/<session id>/agent-<agent id>.jsonl`: `<session id>/agent-<agent
///   id>`, parent `<session id>` (its records carry the parent's `sessionId`).
///
/// Errors: `InvalidInput` when the file is neither.
pub fn identify(path: &Path) -> std::io::Result<SessionRef> {
    if let Some((session, stem)) = subagent_of(path) {
        return Ok(SessionRef {
            agent: Agent::Qwen,
            external_id: format!("{session}/{stem}"),
            parent_external_id: Some(session.to_string()),
        });
    }
    let id = session_of(path).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "not a Qwen Code projects/<project>/chats/<id>.jsonl: {}",
                path.display()
            ),
        )
    })?;
    Ok(SessionRef {
        agent: Agent::Qwen,
        external_id: id.to_string(),
        parent_external_id: None,
    })
}

/// Every transcript under [`projects_dir`]; see [`discover_in`].
pub fn discover() -> std::io::Result<crate::Discovery> {
    discover_in(&projects_dir())
}

/// Every `<projects>/<project>/chats/<id>.jsonl` and sub-agent transcript
/// `<projects>/<project>/subagents/<session id>/agent-<id>.jsonl` that is a file, sorted. A
/// missing `projects` gives nothing; a project or chats folder that cannot be listed is
/// reported in `unreadable` (a sub-agents folder that cannot be listed is skipped).
///
/// Errors: `projects` exists but cannot be listed.
pub fn discover_in(projects: &Path) -> std::io::Result<crate::Discovery> {
    let entries = match std::fs::read_dir(projects) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
        Err(e) => return Err(e),
    };
    let mut found = crate::Discovery::default();
    for e in entries {
        let project = match e {
            Ok(e) => e.path(),
            Err(err) => {
                found
                    .unreadable
                    .push((projects.to_path_buf(), err.to_string()));
                continue;
            }
        };
        for session in std::fs::read_dir(project.join(SUBAGENTS_DIR))
            .into_iter()
            .flatten()
            .flatten()
        {
            found.files.extend(subagent_files(&session.path()));
        }
        let chats = project.join(CHATS_DIR);
        let files = match std::fs::read_dir(&chats) {
            Ok(rd) => rd,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                continue;
            }
            Err(e) => {
                found.unreadable.push((chats, e.to_string()));
                continue;
            }
        };
        for f in files.flatten() {
            let p = f.path();
            if session_of(&p).is_some() && p.is_file() {
                found.files.push(p);
            }
        }
    }
    found.files.sort();
    Ok(found)
}

/// The sub-agent transcripts (`agent-<id>.jsonl` files) in one session's `subagents/<id>`
/// folder; nothing when it cannot be listed.
fn subagent_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|f| f.path())
        .filter(|p| subagent_of(p).is_some() && p.is_file())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Hooks (`docs/agents/qwen.md#hooks`)
// ---------------------------------------------------------------------------------------------

/// Parse a Qwen Code hook payload (stdin, Claude Code's snake_case shape: `{"session_id",
/// "transcript_path", "cwd", "hook_event_name", "timestamp", "permission_mode", …}`) into a
/// [`HookEvent`]: `event` ← `hook_event_name` (Claude Code's names: `SessionStart`, `Stop`,
/// `PreCompact`, `SessionEnd`, …); `session_id`, `transcript_path` (empty when chat recording
/// is off: `None`), `cwd`; `agent_transcript_path` (SubagentStop); `source` ← `source` (SessionStart `startup|resume|clear|compact`),
/// `trigger` (PreCompact `manual|auto`) or `reason` (SessionEnd); `extra` ← the whole payload.
///
/// Errors: the bytes are empty, not JSON or not an object.
pub fn parse_hook_payload(bytes: &[u8], env: &crate::Env) -> Result<HookEvent, crate::Error> {
    let _ = env;
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(crate::Error::EmptyPayload);
    }
    let payload = match serde_json::from_slice(bytes) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return Err(crate::Error::PayloadNotObject),
        Err(e) => return Err(crate::Error::PayloadNotJson(e)),
    };
    let get = |k: &str| str_at(&payload, k).map(str::to_string);
    Ok(HookEvent {
        agent: Agent::Qwen,
        event: get("hook_event_name").unwrap_or_default(),
        session_id: get("session_id"),
        transcript_path: get("transcript_path"),
        cwd: get("cwd"),
        source: get("source")
            .or_else(|| get("trigger"))
            .or_else(|| get("reason")),
        agent_transcript_path: get("agent_transcript_path"),
        extra: payload,
    })
}

/// The files a hook event should ingest; see [`transcripts_for_event_in`] (with
/// [`projects_dir`]).
pub fn transcripts_for_event(ev: &HookEvent) -> Vec<PathBuf> {
    transcripts_for_event_in(ev, &projects_dir())
}

/// The files a hook event should ingest:
///
/// 1. the payload's `transcript_path`, else `<projects>/<sanitized cwd>/chats/<session
///    id>.jsonl` when it is a file;
/// 2. the session's sub-agent transcripts, `<project>/subagents/<session id>/agent-*.jsonl`
///    (one `read_dir`; Qwen Code writes them beside the session), and a `SubagentStop`'s
///    `agent_transcript_path`;
/// 3. at a `SessionStart`, also the transcript written last among the **other** sessions of
///    the same `chats` folder ([`latest_other`]): Qwen Code queues its transcript writes, so a
///    turn's final answer may reach the file after the `Stop` hook ran, and a session run with
///    a prompt (`qwen "…"`) fires no `SessionEnd`; the next session's start stores it.
///
/// Nothing found gives an empty list.
pub fn transcripts_for_event_in(ev: &HookEvent, projects: &Path) -> Vec<PathBuf> {
    let session = ev.session_id.as_deref().filter(|s| is_safe_name(s));
    let mut paths: Vec<PathBuf> = match ev.transcript_path.as_deref().filter(|t| !t.is_empty()) {
        Some(t) => vec![PathBuf::from(t)],
        None => match (session, ev.cwd.as_deref()) {
            (Some(session), Some(cwd)) => {
                let p = projects
                    .join(paths::project_folder(cwd))
                    .join(CHATS_DIR)
                    .join(format!("{session}.jsonl"));
                p.is_file().then_some(p).into_iter().collect()
            }
            _ => Vec::new(),
        },
    };
    let chats = match (paths.first(), ev.cwd.as_deref()) {
        (Some(p), _) => p.parent().map(Path::to_path_buf),
        (None, Some(cwd)) => Some(projects.join(paths::project_folder(cwd)).join(CHATS_DIR)),
        (None, None) => None,
    };
    let project = chats.as_deref().and_then(Path::parent);
    if let (Some(project), Some(session)) = (project, session) {
        let mut subs = subagent_files(&project.join(SUBAGENTS_DIR).join(session));
        subs.sort();
        paths.extend(subs);
    }
    if let Some(a) = ev
        .agent_transcript_path
        .as_deref()
        .filter(|a| !a.is_empty())
    {
        let a = PathBuf::from(a);
        if !paths.contains(&a) {
            paths.push(a);
        }
    }
    if ev.event == "SessionStart"
        && let Some(other) = chats.and_then(|c| latest_other(&c, session))
        && !paths.contains(&other)
    {
        paths.push(other);
    }
    paths
}

/// The `<id>.jsonl` in `chats` written last (modification time), among the first
/// [`crate::paths::NEWEST_SCAN_CAP`] entries the folder lists, other than `current`'s; `None`
/// when there is none or the folder cannot be listed.
pub fn latest_other(chats: &Path, current: Option<&str>) -> Option<PathBuf> {
    crate::paths::newest_in(chats, |e| {
        let p = e.path();
        let id = session_of(&p)?;
        (Some(id) != current).then_some(p)
    })
}

/// The stdout reply to a `SessionStart` hook that adds `context` to the conversation:
/// `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"<context>"}}`
/// (Claude Code's shape; Qwen Code escapes `<` and `>` in it as `&lt;` and `&gt;`).
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
