//! Gemini CLI: paths, hook payloads, session identity, discovery and the chat-recording readers.
//!
//! Sources: `docs/agents/gemini.md` (files, hooks, sessions) and
//! `docs/agents/gemini.md#transcript-format` (session files), checked against the upstream
//! source `google-gemini/gemini-cli` (`packages/core/src/utils/paths.ts` `homedir()`,
//! `config/storage.ts`, `config/projectRegistry.ts`, `services/chatRecordingService.ts`,
//! `services/chatRecordingTypes.ts`, `core/geminiChat.ts`, `scheduler/tool-executor.ts`,
//! `hooks/types.ts`, `hooks/hookEventHandler.ts`, `utils/sessionUtils.ts`).
//!
//! # Where things are
//!
//! Everything lives in `$GEMINI_CLI_HOME/.gemini` (`GEMINI_CLI_HOME` replaces the home directory;
//! default `~`). `GEMINI_CONFIG_DIR` is **not** a Gemini CLI variable (only third-party tools such
//! as code-session-memory read it), so it is ignored. Chats are recorded per project under
//! `<config>/tmp/<project id>/chats/`, where the project id is a slug registered in
//! `<config>/projects.json` (`{"projects": {"<abs path>": "<slug>"}}`) and the slug folder holds a
//! `.project_root` file with the project path; older installs used `sha256(path)` hex folders.
//!
//! # Chat recordings: two formats
//!
//! - **Current, append-only JSONL** `session-<YYYY-MM-DDTHH-MM>-<first 8 of session id>.jsonl`
//!   (sub-agents: `chats/<parent session id>/<session id>.jsonl`), read incrementally by
//!   [`GeminiReader`]. One JSON object per line: a metadata record, message records (the same
//!   `id` is appended again whenever the message changes: the **last write wins**), `$set`
//!   metadata updates (a `$set.messages` array re-lists the conversation after a history
//!   rebuild) and `$rewindTo` (drop that message and every later one).
//! - **Legacy whole-file JSON** `session-….json` (`{sessionId, projectHash, startTime,
//!   lastUpdated, messages: [...]}`), rewritten on every update, read by [`GeminiDocReader`].
//!   On resume Gemini CLI migrates it to `<same name>.jsonl` and leaves the `.json` behind, so a
//!   `.json` whose `.jsonl` sibling exists is stale and skipped.
//!
//! Newer builds also write a `session-….meta.json` sidecar (counts for the session list); it is
//! not a transcript and is ignored.

use crate::Source;
use crate::model::{
    Agent, Batch, DocReader, HookEvent, Kind, LineReader, Message, Part, Record, Role, SessionRef,
    ToolCall, normalize_tool_name, parse_rfc3339_ms, title_text,
};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------------
// Paths (`docs/agents/gemini.md#paths`; upstream paths.ts `homedir()`, storage.ts)
// ---------------------------------------------------------------------------------------------

/// The Gemini CLI folder: `$GEMINI_CLI_HOME/.gemini` when `GEMINI_CLI_HOME` is set and not
/// empty (a relative value is taken relative to the current directory, as Node does), else
/// `~/.gemini`. Read from the environment at call time.
///
/// One resolver with the installer's: [`paths::Locations`].
pub fn config_dir() -> PathBuf {
    locations().config_dir
}

/// User settings (hooks and `mcpServers` live here): `<config>/settings.json`.
pub fn settings_path() -> PathBuf {
    locations().settings
}

/// The per-project temporary folders, chats included: `<config>/tmp`.
pub fn tmp_dir() -> PathBuf {
    config_dir().join("tmp")
}

/// The project registry `<config>/projects.json` (`{"projects": {"<abs path>": "<slug>"}}`).
pub fn projects_registry_path() -> PathBuf {
    config_dir().join("projects.json")
}

/// memtrail's user skill: `<config>/skills/memtrail/SKILL.md` (`docs/agents/gemini.md#paths`).
pub fn skill_path() -> PathBuf {
    locations().skill
}

/// True when Gemini CLI's config folder ([`config_dir`]) exists.
pub fn detect() -> bool {
    config_dir().is_dir()
}

// ---------------------------------------------------------------------------------------------
// Which reader for which file
// ---------------------------------------------------------------------------------------------

/// How to read the Gemini CLI file at `path`, with the project directory resolved from the
/// path (see [`project_dir_for`]):
///
/// - `*.jsonl` → [`Source::Lines`] with a [`GeminiReader`] (incremental, from a cursor);
/// - `*.json` except `*.meta.json` sidecars → [`Source::Doc`] with a [`GeminiDocReader`];
/// - anything else → `None`.
///
/// The file is not opened except to resolve the project (`.project_root`, `projects.json`).
pub fn source_for(path: &Path) -> Option<Source> {
    let name = path.file_name()?.to_string_lossy();
    if name.ends_with(".jsonl") {
        Some(Source::Lines(Box::new(GeminiReader::for_path(path))))
    } else if name.ends_with(".json") && !name.ends_with(".meta.json") {
        Some(Source::Doc(Box::new(GeminiDocReader::for_path(path))))
    } else {
        None
    }
}

/// Largest `.project_root` read (bytes): one folder path.
const SMALL_FILE_BYTES: u64 = 64 * 1024;
/// Largest `projects.json` or `trustedFolders.json` read (bytes).
const REGISTRY_BYTES: u64 = 8 * 1024 * 1024;

/// The project directory of a chat recording, from its location
/// `<config>/tmp/<project id>/chats/[<parent>/]<file>`:
///
/// 1. the `.project_root` file in the `<project id>` folder (written by Gemini CLI's project
///    registry, upstream `projectRegistry.ts`), trimmed;
/// 2. else the key of `<config>/projects.json` whose slug is `<project id>`;
/// 3. else, for a legacy folder named by the project's hash (`<project id>` is the SHA-256 hex of
///    the project path, upstream `getProjectHash`), the known folder with that hash: the keys of
///    `<config>/projects.json` and `<config>/trustedFolders.json`, and the `.project_root` of the
///    other project folders in `<config>/tmp` ([`project_for_hash`]).
///
/// `None` when none says (a legacy hash of a folder Gemini CLI knows nothing else about), when the
/// path has no `chats` folder within two levels, or when those files cannot be read.
pub fn project_dir_for(path: &Path) -> Option<String> {
    let chats = path
        .ancestors()
        .skip(1)
        .take(2)
        .find(|d| d.file_name().is_some_and(|n| n == "chats"))?;
    let project_tmp = chats.parent()?;
    if let Ok(root) =
        crate::paths::read_small_text(&project_tmp.join(".project_root"), SMALL_FILE_BYTES)
    {
        let root = root.trim();
        if !root.is_empty() {
            return Some(root.to_string());
        }
    }
    let slug = project_tmp.file_name()?.to_string_lossy().into_owned();
    let config = project_tmp.parent()?.parent()?;
    let registry = config.join("projects.json");
    if let Some(dir) = read_registry(&registry)
        .unwrap_or_default()
        .into_iter()
        .find_map(|(dir, s)| (s == slug).then_some(dir))
    {
        return Some(dir);
    }
    project_for_hash(config, &slug)
}

/// The folder among `known` (project folders memtrail already knows, e.g. of other sessions)
/// whose SHA-256 names this chat's legacy project folder (`<config>/tmp/<hash>/chats/…`): the
/// project of a legacy session that [`project_dir_for`] cannot resolve. `None` when the folder is
/// not a hash or nothing matches.
pub fn project_among(path: &Path, known: &[String]) -> Option<String> {
    let chats = path
        .ancestors()
        .skip(1)
        .take(2)
        .find(|d| d.file_name().is_some_and(|n| n == "chats"))?;
    let hash = chats.parent()?.file_name()?.to_str()?;
    hash_match(hash, known.iter().cloned())
}

/// The first of `candidates` whose SHA-256 hex is `hash` (64 hex digits), a trailing `/` ignored.
fn hash_match(hash: &str, candidates: impl IntoIterator<Item = String>) -> Option<String> {
    use sha2::{Digest, Sha256};
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let want = hash.to_ascii_lowercase();
    let matches = |dir: &str| {
        let digest = Sha256::digest(dir.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        hex == want
    };
    candidates
        .into_iter()
        .find(|d| !d.is_empty() && (matches(d) || matches(d.trim_end_matches('/'))))
        .map(|d| d.trim_end_matches('/').to_string())
        .map(|d| if d.is_empty() { "/".to_string() } else { d })
}

/// The known folder whose SHA-256 (hex of the path's UTF-8 bytes, as Gemini CLI's legacy
/// `getProjectHash`) is `hash`: among the keys of `<config>/projects.json` and
/// `<config>/trustedFolders.json` and the `.project_root` files of `<config>/tmp/*` (at most 4096
/// folders). `None` when `hash` is not 64 hex digits or no known folder matches.
pub fn project_for_hash(config: &Path, hash: &str) -> Option<String> {
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut candidates: Vec<String> = read_registry(&config.join("projects.json"))
        .unwrap_or_default()
        .into_iter()
        .map(|(dir, _)| dir)
        .collect();
    if let Ok(bytes) = crate::paths::read_small(&config.join("trustedFolders.json"), REGISTRY_BYTES)
        && let Ok(Value::Object(trusted)) = serde_json::from_slice::<Value>(&bytes)
    {
        candidates.extend(trusted.keys().cloned());
    }
    if let Ok(entries) = std::fs::read_dir(config.join("tmp")) {
        for e in entries.flatten().take(4096) {
            if let Ok(root) =
                crate::paths::read_small_text(&e.path().join(".project_root"), SMALL_FILE_BYTES)
            {
                candidates.push(root.trim().to_string());
            }
        }
    }
    hash_match(hash, candidates)
}

/// The `projects` map of a `projects.json`, in file order; `None` when unreadable or not JSON.
fn read_registry(path: &Path) -> Option<Vec<(String, String)>> {
    let bytes = crate::paths::read_small(path, REGISTRY_BYTES).ok()?;
    let Value::Object(mut doc) = serde_json::from_slice(&bytes).ok()? else {
        return None;
    };
    let Some(Value::Object(projects)) = doc.remove("projects") else {
        return None;
    };
    Some(
        projects
            .into_iter()
            .filter_map(|(dir, slug)| match slug {
                Value::String(s) if !s.is_empty() => Some((dir, s)),
                _ => None,
            })
            .collect(),
    )
}

// ---------------------------------------------------------------------------------------------
// Message records → Message (shared by both readers)
// ---------------------------------------------------------------------------------------------

/// Message `type`s that are UI notices rather than conversation (`info`, `error`, `warning`;
/// upstream `chatRecordingTypes.ts`). Gemini CLI itself leaves them out when it rebuilds the
/// model history on resume (`sessionUtils.ts` `convertSessionToClientHistory`); memtrail skips
/// them too and counts them in `skipped_known`. `info` also carries binary tool output
/// (`geminiChat.ts`, binary injections).
const NOTICE_TYPES: &[&str] = &["info", "error", "warning"];

/// Wrappers Gemini CLI puts around injected context in user turns (`<session_context>` at
/// start-up, `<hook_context>` for hook `additionalContext`; upstream `isIgnoredUserContent`).
/// Removed with their content before a prompt is stored.
const CONTEXT_TAGS: &[&str] = &["session_context", "hook_context"];

/// The opening of a chat-compression summary (`chatCompressionService.ts`): such a user turn is
/// stored as a `System` message of kind `Summary`.
const SNAPSHOT_TAG: &str = "<state_snapshot>";

/// Tool statuses after which a call is over (upstream `CoreToolCallStatus`: `success`, `error`,
/// `cancelled`; the others, `validating|scheduled|executing|awaiting_approval`, are pending).
/// `failed`, `completed`, … are lenient extras seen in hand-written files.
const ERROR_STATUSES: &[&str] = &["error", "cancelled", "canceled", "failed"];

/// Why a message record produced no message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Skip {
    /// A known kind without conversation content (notice, tool-response echo, injected
    /// context, empty message).
    Known,
    /// A `type` this reader does not know.
    Unknown,
}

/// What a message record adds to the batch besides the message itself.
struct Converted {
    msg: Message,
    /// Title candidate (user prompts only).
    title: Option<String>,
}

/// Convert one message record (`{id, timestamp, type, content, displayContent?, toolCalls?,
/// thoughts?, tokens?, model?}`, upstream `MessageRecord`) with its id already chosen.
///
/// - `user`: one text part from `displayContent` (what the person typed, present when an
///   `@file` expansion changed the sent text) or else `content`: the text parts joined as
///   Gemini CLI joins them (no separator), `<session_context>`/`<hook_context>` elements
///   removed, trimmed. Nothing left (a tool-response echo made of `functionResponse` parts,
///   the start-up context) → skipped. A turn starting with `<state_snapshot>` (compression
///   summary) becomes a `System` message of kind `Summary`.
/// - `gemini`: role `Assistant`, `model` from the record. Parts in order: one
///   [`Part::Thinking`] per `thoughts[]` entry (`subject` and `description` joined by a blank
///   line) and per `thought: true` content part; one [`Part::Text`] from the other text parts;
///   one [`Part::ToolCall`] per `toolCalls[]` entry; then `functionCall` content parts whose id
///   (or, without id, name and args) no `toolCalls[]` entry has. Nothing → skipped.
/// - `info|error|warning` → skipped (known); any other `type` → skipped (unknown).
fn convert_message(rec: &Map<String, Value>, id: String) -> Result<Converted, Skip> {
    let ts = rec
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(parse_rfc3339_ms);
    match rec.get("type").and_then(Value::as_str).unwrap_or("") {
        "user" => user_message(rec, id, ts),
        "gemini" => assistant_message(rec, id, ts),
        t if NOTICE_TYPES.contains(&t) => Err(Skip::Known),
        _ => Err(Skip::Unknown),
    }
}

fn user_message(rec: &Map<String, Value>, id: String, ts: Option<i64>) -> Result<Converted, Skip> {
    let text_of = |key: &str| -> String {
        let mut acc = ContentAcc::default();
        if let Some(v) = rec.get(key) {
            acc.collect(v);
        }
        clean_prompt(&acc.text)
    };
    let mut text = text_of("displayContent");
    if text.is_empty() {
        text = text_of("content");
    }
    if text.is_empty() {
        return Err(Skip::Known);
    }
    if text.starts_with(SNAPSHOT_TAG) {
        return Ok(Converted {
            msg: Message {
                id,
                role: Role::System,
                kind: Kind::Summary,
                parts: vec![Part::Text { text }],
                timestamp: ts,
                model: None,
            },
            title: None,
        });
    }
    // Gemini CLI's own session list does not take `/…` or `?…` as the first prompt.
    let title = (!text.starts_with('/') && !text.starts_with('?')).then(|| title_text(&text, 80));
    Ok(Converted {
        msg: Message {
            id,
            role: Role::User,
            kind: Kind::Text,
            parts: vec![Part::Text { text }],
            timestamp: ts,
            model: None,
        },
        title,
    })
}

fn assistant_message(
    rec: &Map<String, Value>,
    id: String,
    ts: Option<i64>,
) -> Result<Converted, Skip> {
    let mut parts: Vec<Part> = Vec::new();
    if let Some(Value::Array(thoughts)) = rec.get("thoughts") {
        for t in thoughts {
            if let Some(text) = thought_text(t) {
                push_unique(&mut parts, Part::Thinking { text });
            }
        }
    }
    let mut acc = ContentAcc::default();
    if let Some(content) = rec.get("content") {
        acc.collect(content);
    }
    for t in acc.thoughts.drain(..) {
        let text = t.trim();
        if !text.is_empty() {
            push_unique(
                &mut parts,
                Part::Thinking {
                    text: text.to_string(),
                },
            );
        }
    }
    let text = acc.text.trim();
    if !text.is_empty() {
        parts.push(Part::Text {
            text: text.to_string(),
        });
    }
    let mut recorded: Vec<(String, String, Value)> = Vec::new();
    if let Some(Value::Array(calls)) = rec.get("toolCalls") {
        for (i, c) in calls.iter().enumerate() {
            let Value::Object(c) = c else { continue };
            let call = tool_call(c, &id, i);
            recorded.push((call.id.clone(), call.name.clone(), call.input.clone()));
            if !parts
                .iter()
                .any(|p| matches!(p, Part::ToolCall(x) if x.id == call.id))
            {
                parts.push(Part::ToolCall(call));
            }
        }
    }
    for (i, fc) in acc.calls.into_iter().enumerate() {
        let known = recorded.iter().any(|(rid, rname, rargs)| match &fc.id {
            Some(fid) => fid == rid,
            None => *rname == fc.name && *rargs == fc.args,
        });
        if known {
            continue;
        }
        let call_id = fc.id.unwrap_or_else(|| format!("{id}#call-{i}"));
        if parts
            .iter()
            .any(|p| matches!(p, Part::ToolCall(x) if x.id == call_id))
        {
            continue;
        }
        parts.push(Part::ToolCall(ToolCall {
            id: call_id,
            tool: normalize_tool_name(&fc.name),
            name: fc.name,
            input: fc.args,
            output: None,
            is_error: false,
            exit_code: None,
        }));
    }
    if parts.is_empty() {
        return Err(Skip::Known);
    }
    let model = rec
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .map(str::to_string);
    Ok(Converted {
        msg: Message {
            id,
            role: Role::Assistant,
            kind: Message::infer_kind(&parts),
            parts,
            timestamp: ts,
            model,
        },
        title: None,
    })
}

/// A `functionCall` content part.
struct FnCall {
    id: Option<String>,
    name: String,
    args: Value,
}

/// Text, thoughts and function calls gathered from a `PartListUnion` (a string, a `Part`, or an
/// array of strings and `Part`s; `@google/genai`).
#[derive(Default)]
struct ContentAcc {
    text: String,
    thoughts: Vec<String>,
    calls: Vec<FnCall>,
}

impl ContentAcc {
    fn collect(&mut self, v: &Value) {
        match v {
            Value::String(s) => self.text.push_str(s),
            Value::Array(items) => {
                for item in items {
                    // Nested arrays are not valid parts; only one level is read.
                    match item {
                        Value::String(s) => self.text.push_str(s),
                        Value::Object(o) => self.part(o),
                        _ => {}
                    }
                }
            }
            Value::Object(o) => self.part(o),
            _ => {}
        }
    }

    fn part(&mut self, o: &Map<String, Value>) {
        if let Some(text) = o.get("text").and_then(Value::as_str) {
            if o.get("thought").and_then(Value::as_bool) == Some(true) {
                self.thoughts.push(text.to_string());
            } else {
                self.text.push_str(text);
            }
        } else if let Some(Value::Object(fc)) = o.get("functionCall") {
            let name = fc
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            self.calls.push(FnCall {
                id: fc
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
                name,
                args: fc.get("args").cloned().unwrap_or(Value::Null),
            });
        }
        // functionResponse (tool results, kept in toolCalls[]), inlineData, fileData, …: no text.
    }
}

/// A `thoughts[]` entry (`{subject, description, timestamp}`, upstream `ThoughtSummary`) as one
/// text: `subject`, a blank line, `description` (either alone when the other is empty). A plain
/// string entry is taken as is. `None` when empty.
fn thought_text(t: &Value) -> Option<String> {
    let text = match t {
        Value::String(s) => s.trim().to_string(),
        Value::Object(o) => {
            let get = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").trim();
            match (get("subject"), get("description")) {
                ("", d) => d.to_string(),
                (s, "") => s.to_string(),
                (s, d) => format!("{s}\n\n{d}"),
            }
        }
        _ => String::new(),
    };
    (!text.is_empty()).then_some(text)
}

/// One `toolCalls[]` entry (upstream `ToolCallRecord {id, name, args, result?, status,
/// timestamp, agentId?, displayName?, description?, resultDisplay?}`) as a [`ToolCall`]:
///
/// - `id` ← `id|callId|toolCallId`, else `<message id>#tool-<index>`;
/// - `name` ← `name|toolName|functionName|tool`, else `displayName`;
/// - `input` ← `args|arguments|input|parameters` (null when absent);
/// - `output` ← `result` unwrapped by [`result_text`]; without a result, a finished call
///   (`error`/`cancelled`) gets `resultDisplay` when it is a string, else an empty output;
///   a pending call (`scheduled`, `executing`, …) has none;
/// - `is_error` ← `status` is `error` or `cancelled` (or `failed`), or a `functionResponse`
///   carries `response.error`, or a shell tool's output reports a non-zero `Exit Code:`.
fn tool_call(c: &Map<String, Value>, msg_id: &str, index: usize) -> ToolCall {
    let first_str = |keys: &[&str]| -> Option<String> {
        keys.iter()
            .find_map(|k| c.get(*k).and_then(Value::as_str).filter(|s| !s.is_empty()))
            .map(str::to_string)
    };
    let id = first_str(&["id", "callId", "toolCallId"])
        .unwrap_or_else(|| format!("{msg_id}#tool-{index}"));
    let name =
        first_str(&["name", "toolName", "functionName", "tool", "displayName"]).unwrap_or_default();
    let input = ["args", "arguments", "input", "parameters"]
        .iter()
        .find_map(|k| c.get(*k).filter(|v| !v.is_null()))
        .cloned()
        .unwrap_or(Value::Null);
    let status = c
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    let failed = ERROR_STATUSES.contains(&status.as_str());
    let result = ["result", "output"]
        .iter()
        .find_map(|k| c.get(*k).filter(|v| !v.is_null()));
    let (output, response_error) = match result {
        Some(r) => {
            let mut err = false;
            let text = result_text(r, &mut err);
            (Some(text), err)
        }
        None if failed => (
            Some(
                c.get("resultDisplay")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            ),
            false,
        ),
        None => (None, false),
    };
    let tool = normalize_tool_name(&name);
    let exit_code = if tool == "shell" {
        output.as_deref().and_then(shell_exit_code)
    } else {
        None
    };
    ToolCall {
        id,
        tool,
        name,
        input,
        output,
        is_error: failed || response_error || exit_code.is_some_and(|c| c != 0),
        exit_code,
    }
}

/// The code of a shell tool's `Exit Code: <n>` line (Gemini CLI records no exit code field of
/// its own). Its shell tool (upstream `tools/shell.ts`) reports a failed command with status
/// `success` and adds that line to its output; `None` without the line (or `Exit Code: (none)`).
fn shell_exit_code(output: &str) -> Option<i64> {
    output.lines().find_map(|l| {
        l.strip_prefix("Exit Code: ")
            .and_then(|n| n.trim().parse::<i64>().ok())
    })
}

/// The text of a tool `result` (a `PartListUnion`): a string as is; each part of an array on its
/// own line; for a `functionResponse` part its `response.output` then `response.error` (a
/// non-string value JSON-encoded; a response with neither key JSON-encoded whole) and its nested
/// `parts`; a `text` part's text; `inlineData`/`fileData` as `[inline data: <mime>]` /
/// `[file: <uri>]`; any other object JSON-encoded. Sets `*error` when a `response.error` is seen.
fn result_text(v: &Value, error: &mut bool) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let mut pieces: Vec<String> = Vec::new();
            for item in items {
                let piece = result_text(item, error);
                if !piece.is_empty() {
                    pieces.push(piece);
                }
            }
            pieces.join("\n")
        }
        Value::Object(o) => {
            if let Some(Value::Object(fr)) = o.get("functionResponse") {
                let mut pieces: Vec<String> = Vec::new();
                match fr.get("response") {
                    Some(Value::Object(resp)) => {
                        let has_output = resp.contains_key("output");
                        let has_error = resp.contains_key("error");
                        if let Some(out) = resp.get("output") {
                            pieces.push(value_text(out));
                        }
                        if let Some(e) = resp.get("error") {
                            *error = true;
                            pieces.push(value_text(e));
                        }
                        if !has_output && !has_error && !resp.is_empty() {
                            pieces.push(Value::Object(resp.clone()).to_string());
                        }
                    }
                    Some(Value::Null) | None => {}
                    Some(other) => pieces.push(value_text(other)),
                }
                if let Some(nested) = fr.get("parts") {
                    pieces.push(result_text(nested, error));
                }
                pieces.retain(|p| !p.is_empty());
                pieces.join("\n")
            } else if let Some(t) = o.get("text").and_then(Value::as_str) {
                t.to_string()
            } else if let Some(Value::Object(d)) = o.get("inlineData") {
                let mime = d.get("mimeType").and_then(Value::as_str).unwrap_or("");
                format!("[inline data: {mime}]")
            } else if let Some(Value::Object(d)) = o.get("fileData") {
                let uri = d.get("fileUri").and_then(Value::as_str).unwrap_or("");
                format!("[file: {uri}]")
            } else {
                v.to_string()
            }
        }
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A string as is, anything else JSON-encoded.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A user text with injected context removed: every `<session_context>…</session_context>` and
/// `<hook_context>…</hook_context>` element deleted, then trimmed; a text that still starts
/// with one of those tags (an element left open) is all context and becomes empty.
fn clean_prompt(text: &str) -> String {
    let mut text = text.to_string();
    for tag in CONTEXT_TAGS {
        let open = format!("<{tag}>");
        let close = format!("</{tag}>");
        let mut from = 0;
        while let Some(rel) = text[from..].find(&open) {
            let start = from + rel;
            let Some(rel_end) = text[start + open.len()..].find(&close) else {
                break;
            };
            let end = start + open.len() + rel_end + close.len();
            text.replace_range(start..end, "");
            from = start;
        }
    }
    let trimmed = text.trim();
    if CONTEXT_TAGS
        .iter()
        .any(|t| trimmed.starts_with(&format!("<{t}>")))
    {
        return String::new();
    }
    trimmed.to_string()
}

/// Add `part` unless an identical part is already there.
fn push_unique(parts: &mut Vec<Part>, part: Part) {
    if !parts.contains(&part) {
        parts.push(part);
    }
}

fn note_time(out: &mut Batch, ts: Option<i64>) {
    let Some(t) = ts else { return };
    let meta = &mut out.meta;
    meta.started_at = Some(meta.started_at.map_or(t, |s| s.min(t)));
    meta.updated_at = Some(meta.updated_at.map_or(t, |u| u.max(t)));
}

fn time_of(rec: &Map<String, Value>, key: &str) -> Option<i64> {
    rec.get(key)
        .and_then(Value::as_str)
        .and_then(parse_rfc3339_ms)
}

/// The records of one batch, with same-id writes coalesced: a later write of a message still in
/// this batch replaces that record in place; otherwise it is appended (and the store replaces
/// the stored message). A rewind ends coalescing, so a message written again after a rewind
/// lands after the [`Record::Rewind`].
#[derive(Debug, Default)]
struct Emitter {
    /// Message id → index of its `Record::Replace` in `out.records` (checked before use).
    emitted: HashMap<String, usize>,
}

impl Emitter {
    fn push(&mut self, conv: Converted, out: &mut Batch) {
        let Converted { msg, title } = conv;
        note_time(out, msg.timestamp);
        if msg.model.is_some() {
            out.meta.model.clone_from(&msg.model);
        }
        if out.meta.title.is_none()
            && let Some(t) = title.filter(|t| !t.is_empty())
        {
            out.meta.title = Some(t);
        }
        if let Some(&idx) = self.emitted.get(&msg.id)
            && let Some(Record::Replace(existing)) = out.records.get_mut(idx)
            && existing.id == msg.id
        {
            *existing = msg;
            return;
        }
        self.emitted.insert(msg.id.clone(), out.records.len());
        out.records.push(Record::Replace(msg));
    }

    fn rewind(&mut self, message_id: String, out: &mut Batch) {
        out.records.push(Record::Rewind { message_id });
        self.emitted.clear();
    }

    fn clear(&mut self) {
        self.emitted.clear();
    }
}

// ---------------------------------------------------------------------------------------------
// The JSONL reader (`docs/agents/gemini.md#current-jsonl-recordings`; upstream
// chatRecordingService.ts)
// ---------------------------------------------------------------------------------------------

/// Reader for one current-format Gemini CLI chat recording
/// (`<config>/tmp/<project>/chats/session-*.jsonl` or a sub-agent
/// `chats/<parent>/<session>.jsonl`); implements [`LineReader`]. Format:
/// `docs/agents/gemini.md#current-jsonl-recordings`, upstream `chatRecordingService.ts`
/// (`loadConversationRecord`, which classifies a line by its keys in this order) and
/// `chatRecordingTypes.ts`.
///
/// What each line becomes:
///
/// - `{"$rewindTo": "<id>"}` → [`Record::Rewind`] (the store deletes that message and every
///   later one). Gemini CLI's `/rewind` targets a user prompt, which memtrail keeps; a rewind to
///   a message memtrail skipped (or never saw) deletes nothing.
/// - a message record (a string `id`; upstream `MessageRecord {id, timestamp, type, content,
///   displayContent?, toolCalls?, thoughts?, tokens?, model?}`) → [`Record::Replace`] of:
///   - `user`: role `User`, one text part from `displayContent` (what the person typed, present
///     when an `@file` expansion changed the sent text) or else `content` (text parts joined
///     without separator, as Gemini CLI joins them), `<session_context>`/`<hook_context>`
///     elements removed; a turn starting with `<state_snapshot>` (compression summary) becomes
///     role `System`, kind `Summary`;
///   - `gemini`: role `Assistant`, `model` from the record; parts: one [`Part::Thinking`] per
///     `thoughts[]` entry (`subject`, a blank line, `description`) and per `thought: true`
///     content part, one [`Part::Text`] from the other text parts, one [`Part::ToolCall`] per
///     `toolCalls[]` entry (`args` as input; output unwrapped from the `functionResponse`
///     `response.output`/`response.error`; `is_error` for status `error`/`cancelled`, a
///     `response.error`, or a shell output with a non-zero `Exit Code:` line; no output while
///     pending), then any `functionCall` content part no
///     `toolCalls[]` entry records.
///
///   Gemini CLI appends the **whole** record again each time the message changes (tool calls
///   added, tokens counted, content edited), and the last write wins; `Replace` gives exactly
///   that (the stored message is replaced, its position kept), so a rewritten text never
///   accumulates with the old one. Writes of one id within a batch are coalesced into one
///   record. Skipped (no record): `info|error|warning` notices, user turns that are only
///   `functionResponse` echoes of tool results (the results are in the call's `toolCalls[]`
///   entry), the `<session_context>` start-up turn, empty messages.
/// - `{"$set": {...}}` → `lastUpdated`/`startTime` go to the batch times; a `messages` array
///   (a full re-listing written after a history rebuild: compression, rollback of a failed
///   turn, masking) is read as that many message records, in its order. Messages the list
///   leaves out are **kept**: the rebuild edits what the model will see next, not what
///   happened. Other keys (`summary`, `memoryScratchpad`, `sessionId`, `directories`) are
///   ignored.
/// - the metadata record (`sessionId`, `projectHash`, `startTime`, `lastUpdated`, `kind`,
///   `directories`) → batch times only.
///
/// Counting: a metadata record, a `$set` that yields no message, and a skipped known message
/// count in `stats.skipped_known`; an unknown record kind or message `type` in
/// `stats.skipped_unknown`; a line that is not a JSON object, or whose `id`/`$rewindTo` is not a
/// non-empty string, in `stats.malformed`. No line fails the file and nothing panics.
///
/// The reader keeps no state across ingests: every record carries the whole message, so it
/// may start at any line boundary, and reading a file in one pass stores the same thing as
/// reading it in pieces.
///
/// [`Batch::meta`]: `project_dir` from construction ([`GeminiReader::for_path`]), `model` from
/// the last assistant message, `title` from the first user prompt of the batch (whitespace
/// collapsed, at most 80 characters), `started_at`/`updated_at` (ms since the Unix epoch) from
/// the earliest and latest of message timestamps, `startTime` and `lastUpdated`.
#[derive(Debug, Default)]
pub struct GeminiReader {
    project_dir: Option<String>,
    emitter: Emitter,
}

impl GeminiReader {
    /// A reader that knows nothing of the file's project.
    pub fn new() -> Self {
        Self::default()
    }

    /// A reader that reports `project_dir` in every batch it fills.
    pub fn with_project_dir(project_dir: Option<String>) -> Self {
        Self {
            project_dir,
            emitter: Emitter::default(),
        }
    }

    /// A reader for the recording at `path`, its project resolved by [`project_dir_for`].
    pub fn for_path(path: &Path) -> Self {
        Self::with_project_dir(project_dir_for(path))
    }

    /// One message record (a line, or an element of `$set.messages`). Returns how it ended.
    fn message(&mut self, rec: &Map<String, Value>, out: &mut Batch) -> Result<(), Skip> {
        let id = rec
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let conv = convert_message(rec, id)?;
        self.emitter.push(conv, out);
        Ok(())
    }
}

impl LineReader for GeminiReader {
    fn line(&mut self, line: &[u8], out: &mut Batch) {
        out.stats.lines += 1;
        if out.meta.project_dir.is_none() {
            out.meta.project_dir.clone_from(&self.project_dir);
        }
        let Some(line) = crate::model::trim_line(line) else {
            out.stats.skipped_known += 1;
            return;
        };
        let Some(Value::Object(rec)) = crate::model::parse_object_line::<Value>(line) else {
            out.stats.malformed += 1;
            return;
        };
        if let Some(target) = rec.get("$rewindTo") {
            match target.as_str().filter(|s| !s.is_empty()) {
                Some(id) => self.emitter.rewind(id.to_string(), out),
                None => out.stats.malformed += 1,
            }
            return;
        }
        if let Some(id) = rec.get("id") {
            if id.as_str().is_none_or(str::is_empty) {
                out.stats.malformed += 1;
                return;
            }
            match self.message(&rec, out) {
                Ok(()) => {}
                Err(Skip::Known) => out.stats.skipped_known += 1,
                Err(Skip::Unknown) => out.stats.skipped_unknown += 1,
            }
            return;
        }
        if let Some(Value::Object(set)) = rec.get("$set") {
            note_time(out, time_of(set, "startTime"));
            note_time(out, time_of(set, "lastUpdated"));
            let mut produced = false;
            if let Some(Value::Array(messages)) = set.get("messages") {
                for m in messages {
                    if let Value::Object(m) = m
                        && m.get("id")
                            .and_then(Value::as_str)
                            .is_some_and(|s| !s.is_empty())
                        && self.message(m, out).is_ok()
                    {
                        produced = true;
                    }
                }
            }
            if !produced {
                out.stats.skipped_known += 1;
            }
            return;
        }
        if rec.get("sessionId").is_some_and(Value::is_string) {
            note_time(out, time_of(&rec, "startTime"));
            note_time(out, time_of(&rec, "lastUpdated"));
            out.stats.skipped_known += 1;
            return;
        }
        out.stats.skipped_unknown += 1;
    }

    /// Forget which records are in the current batch (the runtime takes it after `finish`);
    /// later writes of the same messages are emitted as new `Replace` records.
    fn finish(&mut self, _out: &mut Batch) {
        self.emitter.clear();
    }
}

// ---------------------------------------------------------------------------------------------
// The legacy whole-file reader (`docs/agents/gemini.md#legacy-json-files`)
// ---------------------------------------------------------------------------------------------

/// Reader for a legacy whole-file Gemini CLI session (`session-*.json`, a pretty-printed
/// `ConversationRecord {sessionId, projectHash, startTime, lastUpdated, summary?, directories?,
/// kind?, messages: [...]}`; `docs/agents/gemini.md#legacy-json-files`); implements [`DocReader`].
///
/// Every element of `messages` is converted like a JSONL message record (see [`GeminiReader`])
/// and emitted as [`Record::Replace`], in order (a repeated id replaces the earlier one in
/// place). A message without a string `id` gets `<session id>-<index>` (session id from
/// `sessionId` or `session_id`, else `gemini-session`). Tolerated looser shapes (seen in
/// hand-written files): content as `[{type, text}]`, tool `arguments`, a non-`Part` `result`
/// object (JSON-encoded).
///
/// Counting: `stats.lines` is the number of `messages` elements; skipped messages count as in
/// the JSONL reader; a non-object element is `malformed`. A document that is not a JSON object
/// counts one malformed line and yields **no records** (the caller must then keep what it has
/// stored rather than replace it with nothing); an object without a `messages` array counts
/// one unknown line.
///
/// [`Batch::meta`]: `project_dir` from construction, `started_at`/`updated_at` from
/// `startTime`, `lastUpdated` and the message times, `model` from the last assistant message,
/// `title` from the first user prompt.
#[derive(Debug, Default)]
pub struct GeminiDocReader {
    project_dir: Option<String>,
}

impl GeminiDocReader {
    /// A reader that knows nothing of the file's project.
    pub fn new() -> Self {
        Self::default()
    }

    /// A reader that reports `project_dir` in its batch.
    pub fn with_project_dir(project_dir: Option<String>) -> Self {
        Self { project_dir }
    }

    /// A reader for the session file at `path`, its project resolved by [`project_dir_for`].
    pub fn for_path(path: &Path) -> Self {
        Self::with_project_dir(project_dir_for(path))
    }
}

impl DocReader for GeminiDocReader {
    fn read(&mut self, bytes: &[u8], out: &mut Batch) {
        if out.meta.project_dir.is_none() {
            out.meta.project_dir.clone_from(&self.project_dir);
        }
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let Ok(Value::Object(doc)) = crate::model::parse_json_doc::<Value>(bytes) else {
            out.stats.lines += 1;
            out.stats.malformed += 1;
            return;
        };
        note_time(out, time_of(&doc, "startTime"));
        note_time(out, time_of(&doc, "lastUpdated"));
        let Some(Value::Array(messages)) = doc.get("messages") else {
            out.stats.lines += 1;
            out.stats.skipped_unknown += 1;
            return;
        };
        let session = ["sessionId", "session_id"]
            .iter()
            .find_map(|k| {
                doc.get(*k)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
            })
            .unwrap_or("gemini-session");
        let mut emitter = Emitter::default();
        for (i, m) in messages.iter().enumerate() {
            out.stats.lines += 1;
            let Value::Object(m) = m else {
                out.stats.malformed += 1;
                continue;
            };
            let id = m
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map_or_else(|| format!("{session}-{i}"), str::to_string);
            match convert_message(m, id) {
                Ok(conv) => emitter.push(conv, out),
                Err(Skip::Known) => out.stats.skipped_known += 1,
                Err(Skip::Unknown) => out.stats.skipped_unknown += 1,
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Session identity and discovery (`docs/agents/gemini.md#session-identity-and-discovery`; upstream
// chatRecordingService.ts)
// ---------------------------------------------------------------------------------------------

/// How much of a file [`identify`] reads to find its `sessionId`.
const IDENTIFY_HEAD_BYTES: u64 = 64 * 1024;

/// Which session a Gemini CLI chat recording belongs to.
///
/// The session id is the first `"sessionId": "<id>"` in the first 64 KiB of the file (the
/// metadata line of a `.jsonl`, the first key of a legacy `.json`; `"session_id"` is accepted
/// too), else the file stem. A legacy `.json` and the `.jsonl` it was migrated to therefore
/// name the same session.
///
/// - Main recording `chats/session-*.jsonl|json`: `external_id` = the session id, no parent.
/// - Sub-agent recording `chats/<parent>/<id>.jsonl`: `external_id` = `<parent>/<session id>`,
///   parent = `<parent>` (the folder name, the parent's session id).
///
/// Errors: `InvalidInput` when the path has no file name; any error opening or reading it.
pub fn identify(path: &Path) -> std::io::Result<SessionRef> {
    let stem = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .map(|n| {
            n.trim_end_matches(".jsonl")
                .trim_end_matches(".json")
                .to_string()
        })
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("not a chat recording: {}", path.display()),
            )
        })?;
    let mut head = Vec::new();
    std::fs::File::open(path)?
        .take(IDENTIFY_HEAD_BYTES)
        .read_to_end(&mut head)?;
    let id = head_session_id(&head).unwrap_or(stem);
    let parent_dir = path.parent();
    let in_chats = |d: Option<&Path>| d.and_then(Path::file_name).is_some_and(|n| n == "chats");
    if !in_chats(parent_dir)
        && in_chats(parent_dir.and_then(Path::parent))
        && let Some(parent) = parent_dir
            .and_then(Path::file_name)
            .map(|s| s.to_string_lossy().into_owned())
            .filter(|s| !s.is_empty())
    {
        return Ok(SessionRef {
            agent: Agent::Gemini,
            external_id: format!("{parent}/{id}"),
            parent_external_id: Some(parent),
        });
    }
    Ok(SessionRef {
        agent: Agent::Gemini,
        external_id: id,
        parent_external_id: None,
    })
}

/// The first `"sessionId"` (else `"session_id"`) string value in `head`: the key, optional
/// whitespace, `:`, optional whitespace, a string without escapes.
fn head_session_id(head: &[u8]) -> Option<String> {
    ["\"sessionId\"", "\"session_id\""]
        .iter()
        .find_map(|key| string_after_key(head, key.as_bytes()))
}

fn string_after_key(hay: &[u8], key: &[u8]) -> Option<String> {
    let mut from = 0;
    while let Some(rel) = hay[from..].windows(key.len()).position(|w| w == key) {
        let mut i = from + rel + key.len();
        from = i;
        let skip_ws = |i: &mut usize| {
            while hay.get(*i).is_some_and(u8::is_ascii_whitespace) {
                *i += 1;
            }
        };
        skip_ws(&mut i);
        if hay.get(i) != Some(&b':') {
            continue;
        }
        i += 1;
        skip_ws(&mut i);
        if hay.get(i) != Some(&b'"') {
            continue;
        }
        let rest = &hay[i + 1..];
        let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
        if rest[end] != b'"' || end == 0 {
            return None;
        }
        return std::str::from_utf8(&rest[..end]).ok().map(str::to_string);
    }
    None
}

/// Every Gemini CLI chat recording under [`tmp_dir`], for `memtrail import`. See
/// [`discover_in`].
pub fn discover() -> std::io::Result<Vec<PathBuf>> {
    discover_in(&tmp_dir())
}

/// Every chat recording under `tmp` (normally `<config>/tmp`; layout:
/// `docs/agents/gemini.md#session-identity-and-discovery`):
///
/// 1. main recordings `<tmp>/<project>/chats/session-*.jsonl` and legacy
///    `session-*.json`, sorted by path, leaving out `*.meta.json` sidecars and any `.json` whose
///    `.jsonl` sibling exists (migrated on resume; the `.jsonl` holds the same messages and
///    more);
/// 2. then sub-agent recordings `<tmp>/<project>/chats/<parent>/*.jsonl`, sorted.
///
/// Main sessions come first so that a sub-agent's parent is known when it is imported. A
/// missing `tmp` gives an empty list.
///
/// Errors: `tmp` exists but cannot be listed. Unreadable folders below it are skipped.
pub fn discover_in(tmp: &Path) -> std::io::Result<Vec<PathBuf>> {
    // Folders are listed through `paths::list_dir`: `memtrail status` keeps their listings.
    let projects = match crate::paths::list_dir(tmp) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut mains = Vec::new();
    let mut subs = Vec::new();
    for project in projects {
        let Ok(entries) = crate::paths::list_dir(&project.path().join("chats")) else {
            continue;
        };
        for entry in entries {
            let path = entry.path();
            if entry.is_dir() {
                let Ok(agents) = crate::paths::list_dir(path) else {
                    continue;
                };
                subs.extend(
                    agents
                        .into_iter()
                        .filter(|e| has_suffix(e.path(), ".jsonl") && e.is_file())
                        .map(|e| e.path().to_path_buf()),
                );
            } else if entry.is_file() && is_main_recording(path) {
                mains.push(path.to_path_buf());
            }
        }
    }
    crate::paths::sort_paths(&mut mains);
    crate::paths::sort_paths(&mut subs);
    mains.extend(subs);
    Ok(mains)
}

/// A regular file's name: `session-*.jsonl`, or a `session-*.json` that is not a sidecar and
/// was not migrated.
fn is_main_recording(path: &Path) -> bool {
    let Some(name) = path.file_name().map(|n| n.to_string_lossy()) else {
        return false;
    };
    if !name.starts_with("session-") {
        return false;
    }
    if name.ends_with(".jsonl") {
        return true;
    }
    name.ends_with(".json") && !name.ends_with(".meta.json") && !migrated_sibling(path).is_file()
}

/// The first [`IDENTIFY_HEAD_BYTES`] of a file, `None` when it cannot be read.
fn read_head(path: &Path) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(IDENTIFY_HEAD_BYTES).read_to_end(&mut head))
        .ok()?;
    Some(head)
}

/// `<path>l`: where Gemini CLI migrates a legacy `session-….json` on resume.
fn migrated_sibling(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push("l");
    PathBuf::from(s)
}

fn has_suffix(path: &Path, suffix: &str) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().ends_with(suffix))
}

// ---------------------------------------------------------------------------------------------
// Hooks (`docs/agents/gemini.md#hooks`; upstream hooks/types.ts, hookEventHandler.ts)
// ---------------------------------------------------------------------------------------------

/// Parse a Gemini CLI hook payload (stdin) into a [`HookEvent`]. Every event carries the base
/// input `{session_id, transcript_path, cwd, hook_event_name, timestamp}` (upstream
/// `createBaseInput`; `transcript_path` is `""` before the chat recording exists) plus its own
/// fields (`docs/agents/gemini.md#hooks`):
///
/// - `event` ← `hook_event_name` (`hookEventName` accepted); empty when absent;
/// - `session_id` ← `session_id` (`sessionId` accepted), else `$GEMINI_SESSION_ID`;
/// - `transcript_path` ← `transcript_path` (`transcriptPath` accepted), `None` when empty;
/// - `cwd` ← `cwd`, else `$GEMINI_CWD`, else `$GEMINI_PROJECT_DIR` (the hook environment);
/// - `source` ← SessionStart `source` (`startup|resume|clear`), PreCompress `trigger`
///   (`manual|auto`) or SessionEnd `reason` (`exit|clear|logout|prompt_input_exit|other`);
/// - `agent` is always [`Agent::Gemini`]; `extra` is the whole payload.
///
/// `env` is the hook process's environment ([`crate::Env::from_process`] in production).
///
/// Errors (a message for the hook log): the bytes are empty, not JSON, or not a JSON object.
pub fn parse_hook_payload(bytes: &[u8], env: &crate::Env) -> Result<HookEvent, crate::Error> {
    let env = |k: &str| env.var_utf8(k);
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(crate::Error::EmptyPayload);
    }
    let payload: Value = serde_json::from_slice(bytes).map_err(crate::Error::PayloadNotJson)?;
    if !payload.is_object() {
        return Err(crate::Error::PayloadNotObject);
    }
    let get = |keys: &[&str]| -> Option<String> {
        keys.iter()
            .find_map(|k| payload.get(*k)?.as_str().filter(|s| !s.is_empty()))
            .map(str::to_string)
    };
    let from_env = |k: &str| env(k).filter(|v| !v.is_empty());
    Ok(HookEvent {
        agent: Agent::Gemini,
        event: get(&["hook_event_name", "hookEventName"]).unwrap_or_default(),
        session_id: get(&["session_id", "sessionId"]).or_else(|| from_env("GEMINI_SESSION_ID")),
        transcript_path: get(&["transcript_path", "transcriptPath"]),
        cwd: get(&["cwd"])
            .or_else(|| from_env("GEMINI_CWD"))
            .or_else(|| from_env("GEMINI_PROJECT_DIR")),
        source: get(&["source", "trigger", "reason"]),
        agent_transcript_path: None,
        extra: payload,
    })
}

/// The files a hook event should ingest; see [`transcripts_for_event_in`] (with
/// [`config_dir`]).
pub fn transcripts_for_event(ev: &HookEvent) -> Vec<PathBuf> {
    transcripts_for_event_in(ev, &config_dir())
}

/// The files a hook event should ingest, `config` being the Gemini CLI folder:
///
/// 1. the payload's `transcript_path`; a legacy `….json` whose migrated `….jsonl` exists is
///    replaced by the `.jsonl`. Without a path (Gemini CLI sends `""` before its chat recording
///    exists), the recording is looked up from `session_id`: files
///    `<config>/tmp/<project>/chats/session-*-<first 8 chars of the id>.jsonl` (then `.json`)
///    whose head names that session, the project of `cwd` (via `projects.json`) searched
///    first;
/// 2. then the session's sub-agent recordings `<chats>/<session id>/*.jsonl`, sorted (the
///    session id from the payload, else from the recording's head).
///
/// Missing folders are skipped; nothing found gives an empty list.
pub fn transcripts_for_event_in(ev: &HookEvent, config: &Path) -> Vec<PathBuf> {
    let session = ev.session_id.as_deref().filter(|s| !s.is_empty());
    let main = match ev.transcript_path.as_deref().filter(|t| !t.is_empty()) {
        Some(t) => Some(PathBuf::from(t)),
        None => session.and_then(|s| find_recording(config, s, ev.cwd.as_deref())),
    };
    let Some(main) = main else {
        return Vec::new();
    };
    let main = if has_suffix(&main, ".json") && migrated_sibling(&main).is_file() {
        migrated_sibling(&main)
    } else {
        main
    };
    let mut paths = vec![main.clone()];
    let session = match session {
        Some(s) => Some(s.to_string()),
        None => read_head(&main).and_then(|h| head_session_id(&h)),
    };
    if let (Some(dir), Some(sid)) = (main.parent(), session.filter(|s| is_safe_name(s)))
        && let Ok(rd) = std::fs::read_dir(dir.join(sid))
    {
        let mut subs: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| has_suffix(p, ".jsonl") && p.is_file())
            .collect();
        subs.sort();
        paths.extend(subs);
    }
    paths
}

/// A session id usable as a path component.
fn is_safe_name(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The recording of `session` under `<config>/tmp`, by file name and head (see
/// [`transcripts_for_event_in`]).
fn find_recording(config: &Path, session: &str, cwd: Option<&str>) -> Option<PathBuf> {
    if !is_safe_name(session) || session.len() < 8 || !session.is_char_boundary(8) {
        return None;
    }
    let short = &session[..8];
    let tmp = config.join("tmp");
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(cwd) = cwd
        && let Some(projects) = read_registry(&config.join("projects.json"))
        && let Some((_, slug)) = projects
            .iter()
            .find(|(d, _)| d.trim_end_matches('/') == cwd.trim_end_matches('/'))
    {
        dirs.push(tmp.join(slug));
    }
    if let Ok(rd) = std::fs::read_dir(&tmp) {
        let mut all: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        all.sort();
        dirs.extend(all);
    }
    for ext in [".jsonl", ".json"] {
        let suffix = format!("-{short}{ext}");
        for dir in &dirs {
            let Ok(rd) = std::fs::read_dir(dir.join("chats")) else {
                continue;
            };
            let mut hits: Vec<PathBuf> = rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name().is_some_and(|n| {
                        let n = n.to_string_lossy();
                        n.starts_with("session-") && n.ends_with(&suffix)
                    })
                })
                .collect();
            hits.sort();
            for p in hits {
                if read_head(&p).and_then(|h| head_session_id(&h)).as_deref() == Some(session) {
                    return Some(p);
                }
            }
        }
    }
    None
}

/// The stdout reply to a `SessionStart` hook that adds `context` to the conversation
/// (`docs/agents/gemini.md#reply-dialect`, upstream `hooks/types.ts` `SessionStartOutput`):
/// `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"<context>"}}`,
/// one line of JSON (Gemini CLI parses stdout as JSON only). Gemini CLI injects the text as the
/// first turn of the history (interactive) or prepends it to the prompt (non-interactive); it
/// escapes `<` and `>` as `&lt;`/`&gt;`, so the context should not rely on tags.
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
pub mod adapter;
pub mod paths;

/// Where the agent lives in the process environment ([`paths::Locations::resolve`]).
fn locations() -> paths::Locations {
    paths::Locations::resolve(&crate::Env::from_process())
}
pub mod registration;
