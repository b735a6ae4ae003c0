//! Claude Code: paths, registration, hook payloads and the transcript reader.
//!
//! Sources: `docs/agents/claude.md` (Claude Code docs v2.1.240: settings,
//! hooks, MCP, skills) and `docs/agents/claude.md#transcript-format` (transcript JSONL).
//!
//! # Transcript format (`docs/agents/claude.md#transcript-format`)
//!
//! A session is one JSONL file, `<projects>/<encoded cwd>/<session id>.jsonl`, one JSON object
//! per line, append-only. Conversation lines share an envelope (`parentUuid, isSidechain,
//! userType, cwd, sessionId, version, gitBranch, type, uuid, timestamp`) and carry an
//! Anthropic-API `message`. Claude Code 2.x writes **one line per content block**: the lines of
//! one assistant message share `message.id` (and `requestId`) but each has its own `uuid`, so
//! [`ClaudeReader`] groups them by `message.id`. Tool results come back in `user` lines holding
//! `tool_result` blocks and are attached to the matching `tool_use`.
//!
//! Sub-agents (the Task / Agent tool) get their own files: `<project>/agent-<id>.jsonl` in 2.0.x
//! and `<project>/<session>/subagents/agent-<id>.jsonl` in 2.1.x (see [`identify`]).

use crate::model::{
    Agent, Batch, HookEvent, Kind, LineReader, Message, Part, Record, Role, SessionRef,
    normalize_tool_name, parse_rfc3339_ms, title_text,
};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The Claude Code config folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`
/// ([`paths::Locations`], in the process environment).
pub fn config_dir() -> PathBuf {
    locations().config_dir
}

/// User settings (hooks live here): `<config>/settings.json`.
pub fn settings_path() -> PathBuf {
    locations().settings
}

/// Global state holding user-scope `mcpServers`: `<config>/.claude.json` when
/// `CLAUDE_CONFIG_DIR` is set, else `~/.claude.json`.
pub fn global_state_path() -> PathBuf {
    locations().global_state
}

/// Where transcripts live: `<config>/projects/<encoded cwd>/<session id>.jsonl`.
pub fn projects_dir() -> PathBuf {
    config_dir().join("projects")
}

/// memtrail's personal skill: `<config>/skills/memtrail/SKILL.md`.
pub fn skill_path() -> PathBuf {
    locations().skill
}

pub mod adapter;
pub mod paths;

/// Where the agent lives in the process environment ([`paths::Locations::resolve`]).
fn locations() -> paths::Locations {
    paths::Locations::resolve(&crate::Env::from_process())
}
pub mod registration;

// ---------------------------------------------------------------------------------------------
// Transcript reader (`docs/agents/claude.md#transcript-format`)
// ---------------------------------------------------------------------------------------------

/// Line `type`s that carry no conversation content: counted in [`ParseStats::skipped_known`]
/// (`docs/agents/claude.md#transcript-format`; `attachment`, `last-prompt`, `custom-title`,
/// `agent-name` are later 2.x additions).
///
/// [`ParseStats::skipped_known`]: crate::model::ParseStats::skipped_known
const SKIPPED_TYPES: &[&str] = &[
    "progress",
    "attachment",
    "queue-operation",
    "file-history-snapshot",
    "last-prompt",
    "system",
    "summary",
    "custom-title",
    "agent-name",
];

/// Wrappers Claude Code and IDE integrations add around a prompt; removed with their content
/// before the prompt is stored (`docs/agents/claude.md#transcript-format`, `user` row).
const STRIPPED_TAGS: &[&str] = &["system-reminder", "ide_opened_file", "ide_selection"];

/// Tags of the echo lines Claude Code writes for slash commands, `!` shell commands and local
/// command output. A user text made only of these is not a prompt.
const ECHO_TAGS: &[&str] = &[
    "command-name",
    "command-message",
    "command-args",
    "command-contents",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "bash-input",
    "bash-stdout",
    "bash-stderr",
];

/// The `model` Claude Code writes on lines it made up itself (API errors, interruptions).
const SYNTHETIC_MODEL: &str = "<synthetic>";

/// The envelope fields the reader uses. Every field is a [`Value`] so that an unexpected type
/// degrades to "absent" instead of failing the line; fields not named here (`toolUseResult`,
/// `snapshot`, progress `data`, …, often large) are skipped by the parser without being built.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Envelope {
    #[serde(rename = "type")]
    kind: Value,
    uuid: Value,
    timestamp: Value,
    cwd: Value,
    version: Value,
    #[serde(rename = "gitBranch")]
    git_branch: Value,
    #[serde(rename = "isMeta")]
    is_meta: Value,
    #[serde(rename = "isCompactSummary")]
    is_compact_summary: Value,
    #[serde(rename = "isApiErrorMessage")]
    is_api_error_message: Value,
    /// Who wrote a `user` line: `"system"` for one Claude Code wrote itself (2.1.332: a
    /// background agent's `<task-notification>`), `"sdk"`, … for the user's prompt.
    #[serde(rename = "promptSource")]
    prompt_source: Value,
    /// What started a `user` line's turn: `{"kind": "task-notification", …}` for a background
    /// agent's completion notice.
    origin: Value,
    /// The tool's structured result next to a `tool_result` (Bash: `{stdout, stderr,
    /// interrupted, …}`).
    #[serde(rename = "toolUseResult")]
    tool_use_result: Value,
    message: Value,
}

/// Reader for one Claude Code transcript file (`<projects>/<project>/<session>.jsonl` or a
/// sub-agent file); implements [`LineReader`]. Format: `docs/agents/claude.md#transcript-format`.
///
/// What each line becomes:
///
/// - `assistant`: a [`Record::Message`] with role `Assistant` and id `message.id` (`msg_…`, else
///   the line's `uuid`). Claude Code 2.x writes one line per content block, all sharing
///   `message.id`; the reader merges them into one message with [`Message::merge`] (blocks kept
///   in order, tool calls deduplicated by call id, identical text/thinking deduplicated). Blocks:
///   `text` → [`Part::Text`] (trimmed, empty dropped), `thinking` → [`Part::Thinking`] (empty
///   dropped, e.g. redacted thinking that only has a signature), `tool_use` →
///   [`Part::ToolCall`] with [`normalize_tool_name`]; other block types are skipped. `model` is
///   `message.model` unless it is `<synthetic>`.
/// - `user` with `tool_result` blocks: each result (`content` string, or array of blocks with
///   `text` joined by `\n` and `image` as `[image]`; `is_error`, also set by the line's
///   `toolUseResult.interrupted`; a shell call's `exit_code` from an error's `Exit code N` first
///   line) is attached to its call when the call's message is still in `out.records` of the
///   current batch, else emitted as [`Record::ToolResult`]. Text blocks of the same line become a user message.
/// - `user` prompt: a message with role `User`, id = `uuid`, one [`Part::Text`] per text block
///   after removing `<system-reminder>`, `<ide_opened_file>` and `<ide_selection>` elements.
///   Skipped (counted as known) when nothing remains, when the text is only a command echo
///   (`<command-name>`, `<local-command-stdout>`, `<local-command-caveat>`, `<bash-input>`, …),
///   and for `isMeta` lines.
/// - `user` text Claude Code wrote itself (`promptSource: "system"`, `origin.kind:
///   "task-notification"`, or a text that starts with `<task-notification>`: a background
///   agent's completion notice): a message with role `System`, not a prompt (no title).
/// - `user` with `isCompactSummary: true`: a message with role `System`, kind
///   [`Kind::Summary`], the summary as one text part.
/// - `isApiErrorMessage` lines and the types in `docs/agents/claude.md#transcript-format` that
///   carry no content (`progress`, `system`, `queue-operation`, `file-history-snapshot`, `summary`,
///   `attachment`, `last-prompt`, `custom-title`, `agent-name`): counted in `stats.skipped_known`.
///   Other types: `stats.skipped_unknown`. Not JSON, not an object, or a conversation line without
///   an id: `stats.malformed`. Nothing panics and no line fails the file.
///
/// Records are emitted as soon as a line is read; a later line of a message still in
/// `out.records` is merged into that record in place, otherwise (e.g. after [`finish`]) it is
/// emitted again with the same id and the store merges it. Reading a file in one pass therefore
/// gives the same stored result as reading it in pieces split at any line boundary.
///
/// [`Batch::meta`] gets `project_dir` (`cwd`), `git_branch` (`gitBranch`), `agent_version`
/// (`version`) and `model` from the last line that has them, `started_at`/`updated_at` (ms since
/// the Unix epoch) from the earliest and latest `timestamp` of the lines that produced a message
/// or tool result, and `title` from the first user prompt of the batch (whitespace collapsed,
/// at most 80 characters).
///
/// [`finish`]: LineReader::finish
#[derive(Debug, Default)]
pub struct ClaudeReader {
    /// Message id → index of its record in `out.records` (checked before use: the runtime may
    /// hand a new batch after `finish`).
    emitted: HashMap<String, usize>,
    /// Tool call id → id of the message that holds the call.
    call_owner: HashMap<String, String>,
}

impl ClaudeReader {
    /// A reader with no state; it may start at any line boundary of a file.
    pub fn new() -> Self {
        Self::default()
    }

    /// Insert `msg` as a new record, or merge it into the record of this batch with its id.
    fn push_message(&mut self, msg: Message, out: &mut Batch) {
        if let Some(existing) = self.record_mut(&msg.id, out) {
            existing.merge(msg);
            return;
        }
        self.emitted.insert(msg.id.clone(), out.records.len());
        out.records.push(Record::Message(msg));
    }

    /// The message with `id` in `out.records`, if this reader emitted it into this batch.
    fn record_mut<'a>(&self, id: &str, out: &'a mut Batch) -> Option<&'a mut Message> {
        let idx = *self.emitted.get(id)?;
        match out.records.get_mut(idx) {
            Some(Record::Message(m)) if m.id == id => Some(m),
            _ => None,
        }
    }

    /// Attach a tool result to its call in this batch, or emit it as a [`Record::ToolResult`].
    fn attach_result(
        &mut self,
        call_id: String,
        output: String,
        is_error: bool,
        timestamp: Option<i64>,
        out: &mut Batch,
    ) {
        // Claude Code has no exit-code field: a failed Bash result is `is_error` with its own
        // `Exit code N` first line.
        let exit_code = if is_error {
            output
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("Exit code "))
                .and_then(|n| n.trim().parse::<i64>().ok())
        } else {
            None
        };
        if let Some(owner) = self.call_owner.get(&call_id) {
            let owner = owner.clone();
            if let Some(msg) = self.record_mut(&owner, out) {
                let call = msg.parts.iter_mut().find_map(|p| match p {
                    Part::ToolCall(c) if c.id == call_id => Some(c),
                    _ => None,
                });
                if let Some(call) = call {
                    call.output = Some(output);
                    call.is_error = is_error;
                    call.exit_code = exit_code;
                    return;
                }
            }
        }
        out.records.push(Record::ToolResult {
            call_id,
            output,
            is_error,
            exit_code,
            timestamp,
        });
    }

    fn assistant(&mut self, env: Envelope, ts: Option<i64>, out: &mut Batch) {
        if is_true(&env.is_api_error_message) {
            out.stats.skipped_known += 1;
            return;
        }
        let Value::Object(mut message) = env.message else {
            out.stats.malformed += 1;
            return;
        };
        let Some(id) = take_str(message.get_mut("id")).or_else(|| as_string(env.uuid)) else {
            out.stats.malformed += 1;
            return;
        };
        let model = take_str(message.get_mut("model")).filter(|m| m != SYNTHETIC_MODEL);
        if model.is_some() {
            out.meta.model.clone_from(&model);
        }
        let mut parts = Vec::new();
        match message.remove("content") {
            Some(Value::String(s)) => push_text(&mut parts, s),
            Some(Value::Array(blocks)) => {
                for block in blocks {
                    if let Value::Object(b) = block {
                        assistant_block(b, &mut parts);
                    }
                }
            }
            _ => {}
        }
        if parts.is_empty() {
            // An empty text block, a redacted thinking block, or only unknown blocks.
            out.stats.skipped_known += 1;
            return;
        }
        for p in &parts {
            if let Part::ToolCall(c) = p {
                self.call_owner.insert(c.id.clone(), id.clone());
            }
        }
        note_time(out, ts);
        let kind = Message::infer_kind(&parts);
        self.push_message(
            Message {
                id,
                role: Role::Assistant,
                kind,
                parts,
                timestamp: ts,
                model,
            },
            out,
        );
    }

    fn user(&mut self, env: Envelope, ts: Option<i64>, out: &mut Batch) {
        let content = match env.message {
            Value::Object(mut m) => m.remove("content").unwrap_or(Value::Null),
            _ => Value::Null,
        };
        // A Bash command the user interrupted: `toolUseResult.interrupted` (its result is not
        // marked `is_error`).
        let interrupted = env
            .tool_use_result
            .get("interrupted")
            .is_some_and(|v| v == &Value::Bool(true));
        if is_true(&env.is_compact_summary) {
            let mut text = String::new();
            match content {
                Value::String(s) => text = s,
                Value::Array(blocks) => {
                    for b in blocks {
                        if let Value::Object(mut b) = b
                            && b.get("type").and_then(Value::as_str) == Some("text")
                            && let Some(t) = take_str(b.get_mut("text"))
                        {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(&t);
                        }
                    }
                }
                _ => {}
            }
            let text = trim_owned(strip_tags(text));
            let Some(id) = as_string(env.uuid) else {
                out.stats.malformed += 1;
                return;
            };
            if text.is_empty() {
                out.stats.skipped_known += 1;
                return;
            }
            note_time(out, ts);
            self.push_message(
                Message {
                    id,
                    role: Role::System,
                    kind: Kind::Summary,
                    parts: vec![Part::Text { text }],
                    timestamp: ts,
                    model: None,
                },
                out,
            );
            return;
        }
        if is_true(&env.is_meta) || is_true(&env.is_api_error_message) {
            out.stats.skipped_known += 1;
            return;
        }

        let mut parts = Vec::new();
        let mut results = 0usize;
        match content {
            Value::String(s) => push_prompt_text(&mut parts, s),
            Value::Array(blocks) => {
                for block in blocks {
                    let Value::Object(mut b) = block else {
                        continue;
                    };
                    match b.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            if let Some(t) = take_str(b.get_mut("text")) {
                                push_prompt_text(&mut parts, t);
                            }
                        }
                        Some("tool_result") => {
                            let Some(call_id) = take_str(b.get_mut("tool_use_id")) else {
                                continue;
                            };
                            let output = result_text(b.remove("content"));
                            let is_error =
                                is_true(b.get("is_error").unwrap_or(&Value::Null)) || interrupted;
                            results += 1;
                            self.attach_result(call_id, output, is_error, ts, out);
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        if parts.is_empty() {
            if results == 0 {
                out.stats.skipped_known += 1;
            } else {
                note_time(out, ts);
            }
            return;
        }
        let Some(id) = as_string(env.uuid) else {
            out.stats.malformed += 1;
            return;
        };
        note_time(out, ts);
        // A turn Claude Code starts itself (a background agent's `<task-notification>`) is
        // not the user's request: a system message, kept and searchable, but never the
        // session's last request, goal or title.
        let by_claude = env.prompt_source.as_str() == Some("system")
            || env.origin.get("kind").and_then(Value::as_str) == Some("task-notification")
            || matches!(parts.first(), Some(Part::Text { text }) if text.starts_with("<task-notification>"));
        let msg = Message {
            id,
            role: if by_claude { Role::System } else { Role::User },
            kind: Message::infer_kind(&parts),
            parts,
            timestamp: ts,
            model: None,
        };
        if by_claude {
            self.push_message(msg, out);
            return;
        }
        if out.meta.title.is_none() {
            let title = title_text(&msg.text(), 80);
            if !title.is_empty() {
                out.meta.title = Some(title);
            }
        }
        self.push_message(msg, out);
    }
}

impl LineReader for ClaudeReader {
    fn line(&mut self, line: &[u8], out: &mut Batch) {
        out.stats.lines += 1;
        let Some(line) = crate::model::trim_line(line) else {
            // A blank line: nothing to read, nothing wrong.
            out.stats.skipped_known += 1;
            return;
        };
        // One bad character (a lone surrogate from a cut emoji, invalid UTF-8) must not lose a
        // whole prompt or tool result: parse_object_line repairs and tries once more.
        let Some(env) = crate::model::parse_object_line::<Envelope>(line) else {
            out.stats.malformed += 1;
            return;
        };
        let kind = match &env.kind {
            Value::String(s) => s.as_str(),
            _ => "",
        };
        let known = matches!(kind, "user" | "assistant") || SKIPPED_TYPES.contains(&kind);
        if !known {
            out.stats.skipped_unknown += 1;
            return;
        }
        if let Some(cwd) = str_of(&env.cwd) {
            set_if_changed(&mut out.meta.project_dir, cwd);
        }
        if let Some(branch) = str_of(&env.git_branch) {
            set_if_changed(&mut out.meta.git_branch, branch);
        }
        if let Some(version) = str_of(&env.version) {
            set_if_changed(&mut out.meta.agent_version, version);
        }
        let ts = str_of(&env.timestamp).and_then(parse_rfc3339_ms);
        match kind {
            "assistant" => self.assistant(env, ts, out),
            "user" => self.user(env, ts, out),
            _ => out.stats.skipped_known += 1,
        }
    }

    /// Forget which records are in the current batch: the runtime takes the batch after
    /// `finish`, so later lines of the same message are emitted as new records (merged by id).
    fn finish(&mut self, _out: &mut Batch) {
        self.emitted.clear();
        self.call_owner.clear();
    }
}

/// One assistant content block into `parts`.
fn assistant_block(mut b: Map<String, Value>, parts: &mut Vec<Part>) {
    match b.get("type").and_then(Value::as_str) {
        Some("text") => {
            if let Some(t) = take_str(b.get_mut("text")) {
                push_text(parts, t);
            }
        }
        Some("thinking") => {
            if let Some(t) = take_str(b.get_mut("thinking")) {
                let text = trim_owned(t);
                if !text.is_empty() {
                    merge_into(parts, Part::Thinking { text });
                }
            }
        }
        Some("tool_use") => {
            let Some(id) = take_str(b.get_mut("id")) else {
                return;
            };
            let name = take_str(b.get_mut("name")).unwrap_or_default();
            let input = b.remove("input").unwrap_or(Value::Null);
            let tool = normalize_tool_name(&name);
            merge_into(
                parts,
                Part::ToolCall(crate::model::ToolCall {
                    id,
                    name,
                    tool,
                    input,
                    output: None,
                    is_error: false,
                    exit_code: None,
                }),
            );
        }
        _ => {}
    }
}

/// Add a part unless an identical text/thinking part or a call with the same id is present
/// (the same rule as [`Message::merge`], so one line is read the same way as several).
fn merge_into(parts: &mut Vec<Part>, part: Part) {
    let dup = match &part {
        Part::ToolCall(c) => parts
            .iter()
            .any(|p| matches!(p, Part::ToolCall(x) if x.id == c.id)),
        other => parts.contains(other),
    };
    if !dup {
        parts.push(part);
    }
}

fn push_text(parts: &mut Vec<Part>, text: String) {
    let text = trim_owned(text);
    if !text.is_empty() {
        merge_into(parts, Part::Text { text });
    }
}

/// A user text block: wrappers removed, command echoes dropped.
fn push_prompt_text(parts: &mut Vec<Part>, text: String) {
    let text = trim_owned(strip_tags(text));
    if !text.is_empty() && !is_command_echo(&text) {
        merge_into(parts, Part::Text { text });
    }
}

/// The text of a `tool_result` `content`: a string as is; an array's `text` blocks joined by
/// `\n`, `image` blocks as `[image]`; anything else empty.
fn result_text(content: Option<Value>) -> String {
    match content {
        Some(Value::String(s)) => s,
        Some(Value::Array(blocks)) => {
            let mut out: Option<String> = None;
            for b in blocks {
                let Value::Object(mut b) = b else {
                    continue;
                };
                let piece = match b.get("type").and_then(Value::as_str) {
                    Some("text") => match b.get_mut("text").map(Value::take) {
                        Some(Value::String(s)) => s,
                        _ => continue,
                    },
                    Some("image") => "[image]".to_string(),
                    _ => continue,
                };
                match &mut out {
                    None => out = Some(piece),
                    Some(o) => {
                        o.push('\n');
                        o.push_str(&piece);
                    }
                }
            }
            out.unwrap_or_default()
        }
        _ => String::new(),
    }
}

/// Remove every `<tag>…</tag>` element of [`STRIPPED_TAGS`]. An opening tag without its closing
/// tag is left alone (better to keep a stray wrapper than to lose the prompt after it).
fn strip_tags(mut text: String) -> String {
    if !text.contains('<') {
        return text;
    }
    for tag in STRIPPED_TAGS {
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
    text
}

/// True when `text` is only a sequence of [`ECHO_TAGS`] elements (`<command-name>/clear
/// </command-name>`, `<local-command-stdout>…</local-command-stdout>`, …) and whitespace.
fn is_command_echo(text: &str) -> bool {
    let mut rest = text.trim_start();
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let Some(tag) = ECHO_TAGS.iter().find(|t| {
            rest.strip_prefix('<')
                .and_then(|r| r.strip_prefix(**t))
                .is_some_and(|r| r.starts_with('>'))
        }) else {
            return false;
        };
        let close = format!("</{tag}>");
        let Some(end) = rest.find(&close) else {
            return false;
        };
        rest = rest[end + close.len()..].trim_start();
    }
    true
}

/// Trim without copying when there is nothing to trim at the start.
fn trim_owned(mut s: String) -> String {
    let end = s.trim_end().len();
    s.truncate(end);
    let start = s.len() - s.trim_start().len();
    if start > 0 {
        s.drain(..start);
    }
    s
}

fn note_time(out: &mut Batch, ts: Option<i64>) {
    let Some(t) = ts else { return };
    let meta = &mut out.meta;
    meta.started_at = Some(meta.started_at.map_or(t, |s| s.min(t)));
    meta.updated_at = Some(meta.updated_at.map_or(t, |u| u.max(t)));
}

fn set_if_changed(slot: &mut Option<String>, value: &str) {
    if slot.as_deref() != Some(value) {
        *slot = Some(value.to_string());
    }
}

fn is_true(v: &Value) -> bool {
    v.as_bool() == Some(true)
}

/// A non-empty string value.
fn str_of(v: &Value) -> Option<&str> {
    v.as_str().filter(|s| !s.is_empty())
}

fn as_string(v: Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s),
        _ => None,
    }
}

/// Move a non-empty string out of a JSON slot.
fn take_str(v: Option<&mut Value>) -> Option<String> {
    as_string(v.map(Value::take)?)
}

// ---------------------------------------------------------------------------------------------
// Session identity and discovery (`docs/agents/claude.md#session-identity-and-discovery`)
// ---------------------------------------------------------------------------------------------

/// How much of a 2.0 sub-agent file [`identify`] reads to find the parent `sessionId`.
const IDENTIFY_HEAD_BYTES: u64 = 64 * 1024;

/// Which session a Claude Code transcript file belongs to
/// (`docs/agents/claude.md#session-identity-and-discovery`).
///
/// - Main session `<projects>/<project>/<session>.jsonl`: `external_id` = the file stem (the
///   session UUID), no parent. The file is not opened.
/// - 2.1.x sub-agent `<projects>/<project>/<session>/subagents/agent-<id>.jsonl`: `external_id`
///   = `<session>/agent-<id>`, parent = `<session>` (the name of the folder above `subagents`).
///   The file is not opened.
/// - 2.0.x sub-agent `<projects>/<project>/agent-<id>.jsonl`: its lines carry the **parent**
///   `sessionId`; the first one found in the first 64 KiB gives parent = that id and
///   `external_id` = `<parent>/agent-<id>`. With no `sessionId` there: `external_id` =
///   `agent-<id>`, no parent.
///
/// Errors: `InvalidInput` when the path has no usable file name; any I/O error from opening
/// or reading a 2.0.x sub-agent file.
pub fn identify(path: &Path) -> std::io::Result<SessionRef> {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("not a transcript file: {}", path.display()),
            )
        })?;
    let parent_dir = path.parent();
    let in_subagents = parent_dir
        .and_then(Path::file_name)
        .is_some_and(|n| n == "subagents");
    if in_subagents
        && let Some(session) = parent_dir
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .map(|s| s.to_string_lossy().into_owned())
            .filter(|s| !s.is_empty())
    {
        return Ok(SessionRef {
            agent: Agent::Claude,
            external_id: format!("{session}/{stem}"),
            parent_external_id: Some(session),
        });
    }
    if stem.starts_with("agent-") {
        let mut head = Vec::new();
        std::fs::File::open(path)?
            .take(IDENTIFY_HEAD_BYTES)
            .read_to_end(&mut head)?;
        return Ok(match first_session_id(&head) {
            Some(parent) => SessionRef {
                agent: Agent::Claude,
                external_id: format!("{parent}/{stem}"),
                parent_external_id: Some(parent),
            },
            None => SessionRef {
                agent: Agent::Claude,
                external_id: stem,
                parent_external_id: None,
            },
        });
    }
    Ok(SessionRef {
        agent: Agent::Claude,
        external_id: stem,
        parent_external_id: None,
    })
}

/// The first non-empty `sessionId` in the head of a transcript. Complete lines are parsed; a
/// line cut by the 64 KiB limit is searched for a plain `"sessionId":"…"`.
fn first_session_id(head: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Sid {
        #[serde(rename = "sessionId", default)]
        session_id: Value,
    }
    let mut lines = head.split(|&b| b == b'\n').peekable();
    while let Some(line) = lines.next() {
        let last = lines.peek().is_none();
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.first() == Some(&b'{')
            && let Ok(sid) = serde_json::from_slice::<Sid>(line)
        {
            if let Some(s) = as_string(sid.session_id) {
                return Some(s);
            }
            continue;
        }
        if last {
            let needle = b"\"sessionId\":\"";
            let at = line.windows(needle.len()).position(|w| w == needle)?;
            let rest = &line[at + needle.len()..];
            let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
            if rest.get(end) != Some(&b'"') || end == 0 {
                return None;
            }
            return std::str::from_utf8(&rest[..end]).ok().map(str::to_string);
        }
    }
    None
}

/// Every Claude Code transcript under `projects_dir` (normally [`projects_dir`]), for
/// `memtrail import` (layout: `docs/agents/claude.md#session-identity-and-discovery`):
///
/// 1. main session files `<projects>/<project>/<session>.jsonl`, sorted by path;
/// 2. then sub-agent files, sorted by path: 2.0.x `<projects>/<project>/agent-<id>.jsonl` and
///    2.1.x `<projects>/<project>/<session>/subagents/*.jsonl`.
///
/// Main sessions come first so that a sub-agent's parent is known when it is imported. Files not
/// ending in `.jsonl` and `tool-results/` folders (large tool outputs) are skipped. A missing
/// `projects_dir` gives an empty list.
///
/// Errors: `projects_dir` exists but cannot be listed. Unreadable project or session folders
/// below it are skipped, so one bad folder does not stop an import.
pub fn discover(projects_dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    discover_with_errors(projects_dir).map(|(files, _)| files)
}

/// [`discover`], also returning the folders below `projects_dir` that could not be listed, with
/// the reason (for `memtrail import` to report instead of silently skipping them).
#[allow(clippy::type_complexity)]
pub fn discover_with_errors(
    projects_dir: &Path,
) -> std::io::Result<(Vec<PathBuf>, Vec<(PathBuf, String)>)> {
    let mut unreadable = Vec::new();
    // Folders are listed through `paths::list_dir`: `memtrail status` keeps their listings.
    let projects = match crate::paths::list_dir(projects_dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), unreadable)),
        Err(e) => return Err(e),
    };
    let mut mains = Vec::new();
    let mut subs = Vec::new();
    for project in projects {
        if !project.is_dir() {
            continue;
        }
        let project = project.path();
        let entries = match crate::paths::list_dir(project) {
            Ok(e) => e,
            Err(e) => {
                unreadable.push((project.to_path_buf(), e.to_string()));
                continue;
            }
        };
        for entry in entries {
            let path = entry.path();
            if entry.is_dir() {
                if path.file_name().is_some_and(|n| n == "tool-results") {
                    continue;
                }
                // A session folder: `<session>/subagents/*.jsonl` (2.1.x).
                let agents = match crate::paths::list_dir(&path.join("subagents")) {
                    Ok(a) => a,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => {
                        unreadable.push((path.join("subagents"), e.to_string()));
                        continue;
                    }
                };
                subs.extend(
                    agents
                        .into_iter()
                        .filter(|e| is_jsonl(e.path()) && e.is_file())
                        .map(|e| e.path().to_path_buf()),
                );
            } else if is_jsonl(path) {
                let is_agent = path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("agent-"));
                if is_agent {
                    subs.push(path.to_path_buf());
                } else {
                    mains.push(path.to_path_buf());
                }
            }
        }
    }
    crate::paths::sort_paths(&mut mains);
    crate::paths::sort_paths(&mut subs);
    mains.extend(subs);
    Ok((mains, unreadable))
}

fn is_jsonl(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "jsonl")
}

// ---------------------------------------------------------------------------------------------
// Hooks (`docs/agents/README.md#cross-agent-notes`, `docs/agents/claude.md#hooks`,
// `docs/agents/claude.md#reply-dialect`; `docs/agents/claude.md#hooks`,
// `docs/agents/cursor.md#hooks`, `docs/agents/vscode.md#hooks`)
// ---------------------------------------------------------------------------------------------

/// Parse a Claude-format hook payload (the stdin bytes) into a [`HookEvent`], reading the
/// process environment to tell the caller apart (see [`detect_caller`]). Fields
/// (`docs/agents/claude.md#hooks`):
///
/// - `event` ← `hook_event_name` (VS Code: `hookEventName`); empty when absent;
/// - `session_id` ← `session_id` (VS Code: `sessionId`; Cursor: `conversation_id`);
/// - `transcript_path` ← `transcript_path` (all three callers use the snake_case name);
/// - `cwd` ← `cwd` (Cursor without `cwd`: `workspace_roots[0]`, a `file://` prefix removed);
/// - `source` ← SessionStart `source`, PreCompact `trigger` or SessionEnd `reason`;
/// - `agent_transcript_path` ← `agent_transcript_path` (SubagentStop);
/// - `extra` ← the whole payload.
///
/// Errors (a message for the hook log): the bytes are empty, not JSON, or not a JSON object.
/// `env` reads the hook process's environment (caller detection, [`detect_caller`]), as for
/// every agent.
pub fn parse_hook_payload(bytes: &[u8], env: &crate::Env) -> Result<HookEvent, crate::Error> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(crate::Error::EmptyPayload);
    }
    let payload: Value = serde_json::from_slice(bytes).map_err(crate::Error::PayloadNotJson)?;
    if !payload.is_object() {
        return Err(crate::Error::PayloadNotObject);
    }
    let agent = detect_caller(&payload, env);
    let get = |keys: &[&str]| -> Option<String> {
        keys.iter()
            .find_map(|k| str_of(payload.get(*k)?))
            .map(str::to_string)
    };
    let (session_keys, event_keys): (&[&str], &[&str]) = match agent {
        Agent::Vscode => (
            &["sessionId", "session_id"],
            &["hookEventName", "hook_event_name"],
        ),
        Agent::Cursor => (
            &["conversation_id", "session_id", "sessionId"],
            &["hook_event_name", "hookEventName"],
        ),
        _ => (
            &["session_id", "sessionId"],
            &["hook_event_name", "hookEventName"],
        ),
    };
    let cwd = get(&["cwd"]).or_else(|| {
        payload
            .get("workspace_roots")?
            .as_array()?
            .iter()
            .find_map(|r| str_of(r))
            .map(|r| r.strip_prefix("file://").unwrap_or(r).to_string())
    });
    Ok(HookEvent {
        agent,
        event: get(event_keys).unwrap_or_default(),
        session_id: get(session_keys),
        transcript_path: get(&["transcript_path", "transcriptPath"]),
        cwd,
        source: get(&["source", "trigger", "reason"]),
        agent_transcript_path: get(&["agent_transcript_path"]),
        extra: payload,
    })
}

/// The caller of a Claude-format hook. VS Code and Cursor also run the hooks in
/// `~/.claude/settings.json` (`docs/agents/claude.md#who-is-calling`), each with its own payload:
///
/// 1. Cursor when the payload has `conversation_id` and `workspace_roots`, or `cursor_version`
///    (`docs/agents/cursor.md#hooks`);
/// 2. VS Code when it has camelCase `sessionId` or `hookEventName` (`docs/agents/vscode.md#hooks`);
/// 3. Cursor when `CURSOR_VERSION` or `CURSOR_PROJECT_DIR` is set (`docs/agents/cursor.md#hooks`,
///    hook env), unless the payload's `transcript_path` is a Claude Code transcript (under
///    `…/.claude/projects/` or `$CLAUDE_CONFIG_DIR/projects/`): Claude Code started from a
///    Cursor terminal may inherit those variables;
/// 4. otherwise Claude Code.
///
/// `env` is the hook process's environment ([`crate::Env::from_process`] in production).
pub fn detect_caller(payload: &Value, env: &crate::Env) -> Agent {
    let has = |k: &str| payload.get(k).is_some_and(|v| !v.is_null());
    if (has("conversation_id") && has("workspace_roots")) || has("cursor_version") {
        return Agent::Cursor;
    }
    if has("sessionId") || has("hookEventName") {
        return Agent::Vscode;
    }
    let set = |k: &str| env.var_utf8(k).is_some_and(|v| !v.is_empty());
    if (set("CURSOR_VERSION") || set("CURSOR_PROJECT_DIR")) && !is_claude_transcript(payload, env) {
        return Agent::Cursor;
    }
    Agent::Claude
}

/// True when the payload's `transcript_path` lies in a Claude Code projects folder.
fn is_claude_transcript(payload: &Value, env: &crate::Env) -> bool {
    let Some(path) = payload.get("transcript_path").and_then(Value::as_str) else {
        return false;
    };
    let unified = path.replace('\\', "/");
    if unified.contains("/.claude/projects/") {
        return true;
    }
    env.var_utf8("CLAUDE_CONFIG_DIR")
        .filter(|d| !d.is_empty())
        .is_some_and(|d| {
            let d = d.replace('\\', "/");
            unified.starts_with(&format!("{}/projects/", d.trim_end_matches('/')))
        })
}

/// The stdout reply to a `SessionStart` hook that adds `context` to the conversation
/// (`docs/agents/claude.md#reply-dialect`): `{"hookSpecificOutput":{"hookEventName":"SessionStart",
/// "additionalContext":"<context>"}}`, one line of JSON without a trailing newline. Claude Code
/// inserts the text as a system reminder before the first prompt; over 10,000 characters it is
/// saved to a file and Claude gets a preview.
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

/// The transcripts a hook event should ingest (only `.jsonl` paths: a payload naming any other
/// file is not a Claude Code transcript): the session's `transcript_path`, the sub-agent
/// transcripts beside it (Claude Code 2.1: `<dir>/<session>/subagents/*.jsonl`, sorted), and
/// SubagentStop's `agent_transcript_path`. Missing folders are simply skipped.
pub fn transcripts_for_event(ev: &HookEvent) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = Vec::new();
    if let Some(t) = ev
        .transcript_path
        .as_deref()
        .filter(|t| is_jsonl(Path::new(t)))
    {
        let main = PathBuf::from(t);
        let subs_dir = match (main.parent(), main.file_stem()) {
            (Some(dir), Some(stem)) => Some(dir.join(stem).join("subagents")),
            _ => None,
        };
        paths.push(main);
        if let Some(Ok(rd)) = subs_dir.map(std::fs::read_dir) {
            let mut subs: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect();
            subs.sort();
            paths.extend(subs);
        }
    }
    if let Some(t) = ev
        .agent_transcript_path
        .as_deref()
        .filter(|t| is_jsonl(Path::new(t)))
    {
        let p = PathBuf::from(t);
        if !paths.contains(&p) {
            paths.push(p);
        }
    }
    paths
}

/// Claude Code's transcript retention: `cleanupPeriodDays` read from `settings` (its
/// `settings.json`, a JSON object). A missing file, a file that does not parse or a value that is
/// not a non-negative integer give Claude Code's default, 30 days, with `from_settings = false`.
pub fn transcript_retention(settings: &Path) -> crate::registry::TranscriptRetention {
    const SETTING: &str = "cleanupPeriodDays";
    let v = crate::paths::read_small(settings, 8 * 1024 * 1024)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get(SETTING).and_then(|d| d.as_u64()));
    let (days, from_settings) = match v {
        Some(d) => (d, true),
        None => (30, false),
    };
    crate::registry::TranscriptRetention {
        settings: settings.to_path_buf(),
        setting: SETTING,
        days,
        from_settings,
    }
}
