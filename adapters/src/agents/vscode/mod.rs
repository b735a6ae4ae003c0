//! VS Code with GitHub Copilot Chat (agent mode): paths, hook payloads, the agent-transcript
//! reader and the `chatSessions` reader.
//!
//! Sources: `docs/agents/vscode.md` and `docs/agents/vscode.md#transcript-format`; upstream
//! `microsoft/vscode-docs` `docs/agent-customization/hooks.md` (hook events, common input,
//! SessionStart output); `microsoft/vscode-copilot-chat`
//! `src/platform/chat/common/sessionTranscriptService.ts` (the transcript entry types) and
//! `chatHookService.ts`; `microsoft/vscode` `src/vs/workbench/contrib/chat/common/chatModel.ts`
//! (`ISerializableChatData`), `chatService.ts` (serialized response parts) and
//! `objectMutationLog.ts` (the `.jsonl` session journal).
//!
//! # Two formats
//!
//! 1. **Agent transcripts** (what the hooks' `transcript_path` names):
//!    `<user>/workspaceStorage/<hash>/GitHub.copilot-chat/transcripts/<sessionId>.jsonl`, one
//!    event per line, `{type, data, id, timestamp, parentId}`: `session.start`, `user.message`,
//!    `assistant.turn_start`, `assistant.message` (`content`, `toolRequests[]`,
//!    `reasoningText`), `tool.execution_start`, `tool.execution_complete` (`success`,
//!    `result.content`), `assistant.usage` (`model`, tokens), `assistant.turn_end`. Copilot CLI
//!    writes the same event format to `~/.copilot/session-state/<id>/events.jsonl`. Read
//!    incrementally by [`VscodeReader`]. Copilot Chat deletes old transcripts
//!    (`cleanupOldTranscripts`), so they are not a complete history.
//! 2. **Chat sessions**: `<user>/workspaceStorage/<hash>/chatSessions/<sessionId>.json` (VS Code's
//!    own whole-session JSON, `ISerializableChatData` v3: `requests[]` with `message.text`,
//!    `response[]` parts, `result`, `timestamp`), or `.jsonl` in newer builds (a mutation journal
//!    of the same object: `{kind:0,v}` initial, then `{kind:1,k,v}` set, `{kind:2,k,v?,i?}` push,
//!    `{kind:3,k}` delete). Empty windows use `<user>/globalStorage/emptyWindowChatSessions/`.
//!    Read whole by [`ChatSessionReader`] for `memtrail import`.
//!
//! The project folder of a `workspaceStorage/<hash>` folder is in its `workspace.json`
//! (`{"folder":"file:///…"}`), read by [`workspace_folder`].

use crate::model::{
    Agent, Batch, DocReader, HookEvent, LineReader, Message, Part, Record, Role, SessionRef,
    ToolCall, normalize_tool_name, parse_rfc3339_ms, title_text,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

// ---------------------------------------------------------------------------------------------
// Paths (`docs/agents/vscode.md#paths`)
// ---------------------------------------------------------------------------------------------

/// The platform folder that holds `Code/`: `%APPDATA%` on Windows,
/// `~/Library/Application Support` on macOS, `$XDG_CONFIG_HOME` (default `~/.config`) elsewhere
/// (Electron's `appData`).
fn app_data_in(env: &crate::Env) -> PathBuf {
    if cfg!(windows) {
        env.abs_var("APPDATA")
            .or_else(dirs::config_dir)
            .unwrap_or_else(|| env.home().join("AppData").join("Roaming"))
    } else if cfg!(target_os = "macos") {
        env.home().join("Library").join("Application Support")
    } else {
        env.abs_var("XDG_CONFIG_HOME")
            .unwrap_or_else(|| env.home().join(".config"))
    }
}

/// The VS Code (stable) user folder: `$VSCODE_PORTABLE/user-data/User` in portable mode, else
/// `~/.config/Code/User` (Linux, honouring `XDG_CONFIG_HOME`), `~/Library/Application
/// Support/Code/User` (macOS) or `%APPDATA%\Code\User` (Windows). Holds `settings.json`,
/// `mcp.json`, `workspaceStorage/` and `globalStorage/`. Insiders and remote servers have their
/// own folders, see [`user_dirs`].
pub fn config_dir() -> PathBuf {
    config_dir_in(&crate::Env::from_process())
}

/// [`config_dir`] with an explicit environment (`VSCODE_PORTABLE`, `APPDATA`,
/// `XDG_CONFIG_HOME`, `HOME`).
pub fn config_dir_in(env: &crate::Env) -> PathBuf {
    if let Some(p) = env.abs_var("VSCODE_PORTABLE") {
        return p.join("user-data").join("User");
    }
    app_data_in(env).join("Code").join("User")
}

/// Every VS Code user folder memtrail looks in, in order (existing or not): the stable one
/// ([`config_dir`]), `Code - Insiders/User` (a separate profile folder), and the remote-server
/// folders `~/.vscode-server/data/User` and `~/.vscode-server-insiders/data/User`, where Copilot
/// Chat keeps its storage when VS Code runs against this machine over SSH / WSL / containers
/// (remote layout: third-party, unverified).
pub fn user_dirs() -> Vec<PathBuf> {
    user_dirs_in(&crate::Env::from_process())
}

/// [`user_dirs`] with an explicit environment.
pub fn user_dirs_in(env: &crate::Env) -> Vec<PathBuf> {
    let home = env.home();
    let mut dirs = vec![
        config_dir_in(env),
        app_data_in(env).join("Code - Insiders").join("User"),
        home.join(".vscode-server").join("data").join("User"),
        home.join(".vscode-server-insiders")
            .join("data")
            .join("User"),
    ];
    dirs.dedup();
    dirs
}

/// The user `settings.json` (JSONC; `chat.hookFilesLocations` lives here).
pub fn settings_path() -> PathBuf {
    config_dir().join("settings.json")
}

/// The user `mcp.json` (`{"servers":{…}}`).
pub fn mcp_path() -> PathBuf {
    config_dir().join("mcp.json")
}

/// True when any VS Code user folder ([`user_dirs`]) exists.
pub fn detect() -> bool {
    user_dirs().iter().any(|d| d.is_dir())
}

/// The project folder of a `workspaceStorage/<hash>` folder, from its `workspace.json`:
/// `{"folder":"file:///home/u/app"}` → `/home/u/app` (percent-decoded; `vscode-remote://` URIs
/// give their path), or for a multi-root `{"workspace":"file:///…/x.code-workspace"}` the folder
/// holding the `.code-workspace` file. `None` when the file is missing, unreadable, over 64 KiB or
/// has neither key.
pub fn workspace_folder(storage_dir: &Path) -> Option<String> {
    // Without blocking on a FIFO in its place (`paths::read_small`).
    let bytes = crate::paths::read_small(&storage_dir.join("workspace.json"), 64 * 1024).ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    if let Some(folder) = v.get("folder").and_then(Value::as_str) {
        return uri_to_path(folder);
    }
    let ws = uri_to_path(v.get("workspace").and_then(Value::as_str)?)?;
    Path::new(&ws)
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
}

/// `file:///home/u/my%20app` → `/home/u/my app`; `file:///c%3A/x` → `c:/x`;
/// `vscode-remote://ssh-remote%2Bhost/home/u/app` → `/home/u/app`; a plain absolute path is kept.
fn uri_to_path(uri: &str) -> Option<String> {
    let rest = if let Some((scheme, rest)) = uri.split_once("://") {
        if !scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        {
            return None;
        }
        match rest.find('/') {
            Some(i) => &rest[i..],
            None => return None,
        }
    } else if uri.starts_with('/') {
        uri
    } else {
        return None;
    };
    let decoded = crate::paths::percent_decode(rest);
    let b = decoded.as_bytes();
    if b.len() >= 3 && b[0] == b'/' && b[1].is_ascii_alphabetic() && b[2] == b':' {
        return Some(decoded[1..].to_string());
    }
    Some(decoded)
}

/// The `workspaceStorage/<hash>` folder a transcript or chat-session path lies in.
fn storage_dir_of(path: &Path) -> Option<&Path> {
    path.ancestors().skip(1).take(4).find(|a| {
        a.parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "workspaceStorage")
    })
}

/// True for a path inside a `chatSessions` (or `emptyWindowChatSessions`) folder.
fn is_chat_session_path(path: &Path) -> bool {
    path.parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "chatSessions" || n == "emptyWindowChatSessions")
}

/// VS Code / Copilot tool ids in memtrail's vocabulary: `copilot_` / `vscode_` prefixes and `_`
/// are ignored, then `readFile`/`read_file` → `read`, `replace_string_in_file`,
/// `multi_replace_string_in_file`, `copilot_replaceString`, `editFiles`, `apply_patch`,
/// `insert_edit_into_file` → `edit`, `create_file` → `write`, `run_in_terminal` /
/// `runTerminalCommand` → `shell`, `grep_search`, `semantic_search`, `copilot_findTextInFiles` →
/// `search`, `file_search`, `list_dir`, `copilot_findFiles` → `list`, `fetch_webpage` →
/// `web_fetch`, `runSubagent` → `subagent`, `manage_todo_list` → `todo`; anything else goes
/// through [`normalize_tool_name`].
pub fn tool_vocabulary(name: &str) -> String {
    let bare = name
        .strip_prefix("copilot_")
        .or_else(|| name.strip_prefix("vscode_"))
        .unwrap_or(name);
    let key: String = bare
        .chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    let common = match key.as_str() {
        "readfile" => "read",
        "replacestring"
        | "replacestringinfile"
        | "multireplacestring"
        | "multireplacestringinfile"
        | "editfile"
        | "editfiles"
        | "applypatch"
        | "insertedit"
        | "inserteditintofile"
        | "editnotebook" => "edit",
        "createfile" => "write",
        "runinterminal" | "runterminalcommand" => "shell",
        "grepsearch" | "semanticsearch" | "findtextinfiles" | "searchcodebase" => "search",
        "filesearch" | "findfiles" | "listdir" | "listdirectory" => "list",
        "fetchwebpage" => "web_fetch",
        "runsubagent" => "subagent",
        "managetodolist" => "todo",
        _ => return normalize_tool_name(name),
    };
    common.to_string()
}

// ---------------------------------------------------------------------------------------------
// Agent transcript reader (`docs/agents/vscode.md#agent-transcripts`; sessionTranscriptService.ts)
// ---------------------------------------------------------------------------------------------

/// Event types that carry no conversation content (counted as known). The first group is VS
/// Code's transcript vocabulary; the rest are Copilot CLI `events.jsonl` types.
pub const KNOWN_TYPES: &[&str] = &[
    "session.start",
    "assistant.turn_start",
    "assistant.turn_end",
    "assistant.usage",
    "tool.execution_start",
    "session.model_change",
    "session.shutdown",
    "session.info",
    "session.idle",
    "session.error",
    "session.resume",
    "session.tools_updated",
    "session.usage_info",
    "session.mcp_servers_loaded",
    "session.skills_loaded",
    "session.mode_changed",
    "session.compaction_start",
    "session.compaction_complete",
    "assistant.message_delta",
    "assistant.reasoning",
    "assistant.reasoning_delta",
    "assistant.intent",
    "hook.start",
    "hook.end",
    "pending_messages.modified",
    "system.message",
    "system.notification",
    "subagent.started",
    "subagent.completed",
    "subagent.failed",
    "subagent.selected",
    "tool.user_requested",
    "tool.execution_partial_result",
    "abort",
];

/// At most this many requested-but-unanswered tool calls are remembered across ingests.
const OPEN_CAP: usize = 512;
/// At most this many results (and tool starts) waiting for their request are held.
const PENDING_CAP: usize = 64;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Event {
    #[serde(rename = "type")]
    kind: Value,
    data: Value,
    id: Value,
    timestamp: Value,
}

/// A tool result seen before the request that names its call.
#[derive(Debug, Clone, PartialEq)]
struct Pending {
    call_id: String,
    output: String,
    is_error: bool,
    ts: Option<i64>,
}

/// A `tool.execution_start` seen before any request names its call.
#[derive(Debug, Clone, PartialEq)]
struct Start {
    call_id: String,
    name: String,
    input: Value,
}

/// Reader for one Copilot agent transcript
/// (`workspaceStorage/<hash>/GitHub.copilot-chat/transcripts/<sessionId>.jsonl`, or a Copilot
/// CLI `events.jsonl`); implements [`LineReader`]. Format: module docs,
/// `docs/agents/vscode.md#agent-transcripts`.
///
/// What each event becomes (`<id>` = the event's `id`, else `line-<n>` with `n` the 0-based
/// index of the line among non-blank lines):
///
/// - `user.message`: a [`Record::Message`] with role `User`, id `<id>`, one [`Part::Text`]
///   (`data.content`, a `<user_query>` wrapper removed, trimmed), `timestamp` = the event's
///   (ms since the Unix epoch). Empty: skipped (known).
/// - `assistant.message`: role `Assistant`, id `<id>`, parts: [`Part::Thinking`]
///   (`reasoningText`), [`Part::Text`] (`content`), then one [`Part::ToolCall`] per
///   `toolRequests[]` entry: id `toolCallId` (else `<id>-<k>`), name `name` or `toolName`,
///   `tool` from [`tool_vocabulary`], input `arguments` (a JSON string is parsed; an unparseable
///   string is kept as a string). `model` = `data.model`, else the model named by
///   `session.start` `selectedModel` or the last `session.model_change` (VS Code transcripts name
///   neither, so their messages have none). No parts: skipped (known).
/// - `tool.execution_complete`: the result of call `toolCallId`: output = `result` when a string,
///   `result.content` (string, or the text of an array of blocks), other objects as JSON, else
///   `error.message` / `error`; `is_error` when `success` is `false` or `error` is set. It is
///   attached to its call in this batch, or emitted as [`Record::ToolResult`] when the call was
///   requested in an earlier ingest. A result that arrives **before** the `assistant.message`
///   requesting it (code-session-memory's synthetic order) is held in the reader state and
///   attached when the request comes; one still unclaimed at the next `assistant.turn_end`,
///   `user.message` or `session.shutdown` is emitted: as an assistant message `<call id>:call`
///   holding the call when a `tool.execution_start` named it, else as a
///   [`Record::ToolResult`].
/// - `session.start` (`copilotVersion` → `agent_version`, `context.cwd` → `project_dir`,
///   `selectedModel`), `assistant.usage` (`model` → the batch's `meta.model` only: it is written
///   after the message it accounts for), `session.model_change` (`newModel`),
///   `tool.execution_start`, `assistant.turn_start` / `turn_end` and the other
///   [`KNOWN_TYPES`]: skipped (known). Other types: skipped (unknown). Not JSON (after
///   [`repair_json_line`](crate::model::repair_json_line) fixed what it can), not an object:
///   malformed. Blank lines: skipped (known), not numbered.
///
/// [`Batch::meta`]: `title` = first user prompt of the batch (≤ 80 characters), `model`,
/// `agent_version`, `project_dir` (`session.start` `context.cwd`, else the folder from
/// `workspace.json`, see [`VscodeReader::for_path`]), `started_at`/`updated_at` from the events
/// that produced content or `session.start`.
///
/// State ([`LineReader::save_state`]): the line count, the current model, the project folder
/// (`session.start`'s, else the fallback), the calls requested but not answered yet (at most
/// 512), and held results/starts (at most 64 each), so that an ingest that starts mid-file gives
/// the same store as one pass.
#[derive(Debug, Default)]
pub struct VscodeReader {
    line: u64,
    model: Option<String>,
    open: Vec<String>,
    pending: Vec<Pending>,
    starts: Vec<Start>,
    project_dir: Option<String>,
    /// Message id → index in `out.records` (this batch only).
    emitted: HashMap<String, usize>,
    /// Call id → message id (this batch only).
    call_owner: HashMap<String, String>,
}

impl VscodeReader {
    /// A reader at the start of a file, with no fallback project folder.
    pub fn new() -> Self {
        Self::default()
    }

    /// A reader whose project folder, when `session.start` has no `context.cwd`, is
    /// `project_dir`.
    pub fn with_project_dir(project_dir: Option<String>) -> Self {
        Self {
            project_dir,
            ..Self::default()
        }
    }

    /// A reader for the transcript at `path`; the fallback project folder comes from the
    /// `workspace.json` of the `workspaceStorage/<hash>` folder above it ([`workspace_folder`]).
    pub fn for_path(path: &Path) -> Self {
        Self::with_project_dir(storage_dir_of(path).and_then(workspace_folder))
    }

    fn record_mut<'a>(&self, id: &str, out: &'a mut Batch) -> Option<&'a mut Message> {
        let idx = *self.emitted.get(id)?;
        match out.records.get_mut(idx) {
            Some(Record::Message(m)) if m.id == id => Some(m),
            _ => None,
        }
    }

    fn push_message(&mut self, msg: Message, out: &mut Batch) {
        if let Some(existing) = self.record_mut(&msg.id, out) {
            existing.merge(msg);
            return;
        }
        self.emitted.insert(msg.id.clone(), out.records.len());
        out.records.push(Record::Message(msg));
    }

    fn user(&mut self, id: String, data: &Value, ts: Option<i64>, out: &mut Batch) {
        self.flush_pending(out);
        let text = data
            .get("content")
            .and_then(Value::as_str)
            .map(unwrap_user_query)
            .unwrap_or_default();
        if text.is_empty() {
            out.stats.skipped_known += 1;
            return;
        }
        note_time(out, ts);
        if out.meta.title.is_none() {
            out.meta.title = Some(title_text(&text, 80));
        }
        self.push_message(
            Message {
                id,
                role: Role::User,
                kind: crate::model::Kind::Text,
                parts: vec![Part::Text { text }],
                timestamp: ts,
                model: None,
            },
            out,
        );
    }

    fn assistant(&mut self, id: String, mut data: Value, ts: Option<i64>, out: &mut Batch) {
        let mut parts = Vec::new();
        if let Some(r) = data.get("reasoningText").and_then(Value::as_str) {
            let r = r.trim();
            if !r.is_empty() {
                parts.push(Part::Thinking {
                    text: r.to_string(),
                });
            }
        }
        if let Some(c) = data.get("content").and_then(Value::as_str) {
            let c = c.trim();
            if !c.is_empty() {
                parts.push(Part::Text {
                    text: c.to_string(),
                });
            }
        }
        if let Some(Value::Array(reqs)) = data.get_mut("toolRequests").map(Value::take) {
            for (k, req) in reqs.into_iter().enumerate() {
                let Value::Object(mut req) = req else {
                    continue;
                };
                let call_id = match req.get("toolCallId").and_then(Value::as_str) {
                    Some(c) if !c.is_empty() => c.to_string(),
                    _ => format!("{id}-{k}"),
                };
                let name = ["name", "toolName"]
                    .iter()
                    .find_map(|k| req.get(*k).and_then(Value::as_str))
                    .unwrap_or_default()
                    .to_string();
                let mut input = parse_arguments(req.remove("arguments"));
                let mut call = ToolCall {
                    id: call_id.clone(),
                    tool: tool_vocabulary(&name),
                    name,
                    input: Value::Null,
                    output: None,
                    is_error: false,
                    exit_code: None,
                };
                if let Some(i) = self.starts.iter().position(|s| s.call_id == call_id) {
                    let s = self.starts.remove(i);
                    if input.is_null() {
                        input = s.input;
                    }
                    if call.name.is_empty() {
                        call.tool = tool_vocabulary(&s.name);
                        call.name = s.name;
                    }
                }
                call.input = input;
                if let Some(i) = self.pending.iter().position(|p| p.call_id == call_id) {
                    let p = self.pending.remove(i);
                    call.output = Some(p.output);
                    call.is_error = p.is_error;
                } else {
                    self.open.retain(|c| c != &call_id);
                    self.open.push(call_id.clone());
                    if self.open.len() > OPEN_CAP {
                        self.open.remove(0);
                    }
                }
                self.call_owner.insert(call_id, id.clone());
                parts.push(Part::ToolCall(call));
            }
        }
        let model = match data.get("model").and_then(Value::as_str) {
            Some(m) if !m.is_empty() => {
                out.meta.model = Some(m.to_string());
                Some(m.to_string())
            }
            _ => self.model.clone(),
        };
        if parts.is_empty() {
            out.stats.skipped_known += 1;
            return;
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

    fn complete(&mut self, data: &Value, ts: Option<i64>, out: &mut Batch) {
        let Some(call_id) = data
            .get("toolCallId")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        else {
            out.stats.skipped_known += 1;
            return;
        };
        let call_id = call_id.to_string();
        let (output, is_error) = result_of(data);
        note_time(out, ts);
        if let Some(owner) = self.call_owner.get(&call_id).cloned()
            && let Some(msg) = self.record_mut(&owner, out)
            && let Some(call) = msg.parts.iter_mut().find_map(|p| match p {
                Part::ToolCall(c) if c.id == call_id => Some(c),
                _ => None,
            })
        {
            call.output = Some(output);
            call.is_error = is_error;
            self.open.retain(|c| c != &call_id);
            return;
        }
        if let Some(i) = self.open.iter().position(|c| c == &call_id) {
            self.open.remove(i);
            out.records.push(Record::ToolResult {
                call_id,
                output,
                is_error,
                exit_code: None,
                timestamp: ts,
            });
            return;
        }
        self.pending.retain(|p| p.call_id != call_id);
        self.pending.push(Pending {
            call_id,
            output,
            is_error,
            ts,
        });
        if self.pending.len() > PENDING_CAP {
            let p = self.pending.remove(0);
            self.emit_orphan(p, out);
        }
    }

    fn start(&mut self, data: &Value) {
        let Some(call_id) = data
            .get("toolCallId")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        else {
            return;
        };
        if self.call_owner.contains_key(call_id) || self.open.iter().any(|c| c == call_id) {
            return;
        }
        let name = data
            .get("toolName")
            .or_else(|| data.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let input = parse_arguments(data.get("arguments").cloned());
        self.starts.retain(|s| s.call_id != call_id);
        self.starts.push(Start {
            call_id: call_id.to_string(),
            name,
            input,
        });
        if self.starts.len() > PENDING_CAP {
            self.starts.remove(0);
        }
    }

    /// Emit the results still waiting for a request that never came.
    fn flush_pending(&mut self, out: &mut Batch) {
        for p in std::mem::take(&mut self.pending) {
            self.emit_orphan(p, out);
        }
    }

    fn emit_orphan(&mut self, p: Pending, out: &mut Batch) {
        if let Some(i) = self.starts.iter().position(|s| s.call_id == p.call_id) {
            let s = self.starts.remove(i);
            let parts = vec![Part::ToolCall(ToolCall {
                id: p.call_id.clone(),
                tool: tool_vocabulary(&s.name),
                name: s.name,
                input: s.input,
                output: Some(p.output),
                is_error: p.is_error,
                exit_code: None,
            })];
            self.push_message(
                Message {
                    id: format!("{}:call", p.call_id),
                    role: Role::Assistant,
                    kind: crate::model::Kind::ToolCall,
                    parts,
                    timestamp: p.ts,
                    model: self.model.clone(),
                },
                out,
            );
        } else {
            out.records.push(Record::ToolResult {
                call_id: p.call_id,
                output: p.output,
                is_error: p.is_error,
                exit_code: None,
                timestamp: p.ts,
            });
        }
    }
}

impl LineReader for VscodeReader {
    fn line(&mut self, line: &[u8], out: &mut Batch) {
        out.stats.lines += 1;
        let Some(line) = crate::model::trim_line(line) else {
            out.stats.skipped_known += 1;
            return;
        };
        let n = self.line;
        self.line += 1;
        // One bad character (a lone surrogate from a cut emoji, invalid UTF-8) must not lose a
        // whole event: parse_object_line repairs and tries once more.
        let Some(ev) = crate::model::parse_object_line::<Event>(line) else {
            out.stats.malformed += 1;
            return;
        };
        let ts = ev.timestamp.as_str().and_then(parse_rfc3339_ms);
        let id = match ev.id.as_str() {
            Some(s) if !s.is_empty() => s.to_string(),
            _ => format!("line-{n}"),
        };
        let kind = ev.kind.as_str().unwrap_or("");
        let data = ev.data;
        match kind {
            "user.message" => self.user(id, &data, ts, out),
            "assistant.message" => self.assistant(id, data, ts, out),
            "tool.execution_complete" => self.complete(&data, ts, out),
            "tool.execution_start" => {
                self.start(&data);
                out.stats.skipped_known += 1;
            }
            "session.start" => {
                if let Some(v) = str_at(&data, &["copilotVersion"]) {
                    out.meta.agent_version = Some(v.to_string());
                }
                if let Some(cwd) = data
                    .get("context")
                    .and_then(|c| c.get("cwd"))
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                {
                    // Kept in the state: later ingests report the same folder.
                    self.project_dir = Some(cwd.to_string());
                    out.meta.project_dir = Some(cwd.to_string());
                }
                if let Some(m) = str_at(&data, &["selectedModel", "model"]) {
                    self.model = Some(m.to_string());
                    out.meta.model = Some(m.to_string());
                }
                let start = str_at(&data, &["startTime"])
                    .and_then(parse_rfc3339_ms)
                    .or(ts);
                note_time(out, start);
                out.stats.skipped_known += 1;
            }
            // Usage is written after the message it accounts for: it names the session's
            // model, not the model of the messages that follow.
            "assistant.usage" => {
                if let Some(m) = str_at(&data, &["model"]) {
                    out.meta.model = Some(m.to_string());
                }
                out.stats.skipped_known += 1;
            }
            "session.model_change" => {
                if let Some(m) = str_at(&data, &["newModel", "model"]) {
                    self.model = Some(m.to_string());
                    out.meta.model = Some(m.to_string());
                }
                out.stats.skipped_known += 1;
            }
            "assistant.turn_end" | "session.shutdown" => {
                self.flush_pending(out);
                out.stats.skipped_known += 1;
            }
            k if KNOWN_TYPES.contains(&k) => out.stats.skipped_known += 1,
            _ => out.stats.skipped_unknown += 1,
        }
    }

    /// Forget which records are in the current batch (the runtime takes the batch after
    /// `finish`); set the fallback project folder.
    fn finish(&mut self, out: &mut Batch) {
        self.emitted.clear();
        self.call_owner.clear();
        if out.meta.project_dir.is_none() {
            out.meta.project_dir.clone_from(&self.project_dir);
        }
    }

    fn save_state(&self) -> Option<Value> {
        let mut s = json!({ "line": self.line });
        if let Some(m) = &self.model {
            s["model"] = json!(m);
        }
        if let Some(p) = &self.project_dir {
            s["project_dir"] = json!(p);
        }
        if !self.open.is_empty() {
            s["open"] = json!(self.open);
        }
        if !self.pending.is_empty() {
            s["pending"] = Value::Array(
                self.pending
                    .iter()
                    .map(|p| {
                        json!({
                            "id": p.call_id,
                            "output": p.output,
                            "error": p.is_error,
                            "ts": p.ts,
                        })
                    })
                    .collect(),
            );
        }
        if !self.starts.is_empty() {
            s["starts"] = Value::Array(
                self.starts
                    .iter()
                    .map(|st| json!({"id": st.call_id, "name": st.name, "input": st.input}))
                    .collect(),
            );
        }
        Some(s)
    }

    fn restore_state(&mut self, state: &Value) {
        if let Some(n) = state.get("line").and_then(Value::as_u64) {
            self.line = n;
        }
        self.model = state
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string);
        if let Some(p) = state.get("project_dir").and_then(Value::as_str) {
            self.project_dir = Some(p.to_string());
        }
        self.open = state
            .get("open")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        self.pending = state
            .get("pending")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|p| {
                        Some(Pending {
                            call_id: p.get("id")?.as_str()?.to_string(),
                            output: p.get("output")?.as_str()?.to_string(),
                            is_error: p.get("error").and_then(Value::as_bool).unwrap_or(false),
                            ts: p.get("ts").and_then(Value::as_i64),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        self.starts = state
            .get("starts")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| {
                        Some(Start {
                            call_id: s.get("id")?.as_str()?.to_string(),
                            name: s.get("name")?.as_str()?.to_string(),
                            input: s.get("input").cloned().unwrap_or(Value::Null),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
    }
}

/// The first non-empty string among `keys` of `data`.
fn str_at<'a>(data: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| data.get(*k)?.as_str().filter(|s| !s.is_empty()))
}

/// Tool arguments: a JSON string (VS Code's `ToolRequest.arguments`) is parsed; when it does not
/// parse it is kept as a string; any other value is kept as is.
fn parse_arguments(v: Option<Value>) -> Value {
    match v {
        Some(Value::String(s)) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
        Some(v) => v,
        None => Value::Null,
    }
}

/// Output text and error flag of a `tool.execution_complete`.
fn result_of(data: &Value) -> (String, bool) {
    let error = data.get("error").filter(|e| !e.is_null());
    let is_error = data.get("success").and_then(Value::as_bool) == Some(false) || error.is_some();
    let mut output = match data.get("result") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(r)) => match r.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(blocks)) => blocks_text(blocks),
            _ => Value::Object(r.clone()).to_string(),
        },
        Some(Value::Array(blocks)) => blocks_text(blocks),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    if output.is_empty()
        && let Some(e) = error
    {
        output = match e {
            Value::String(s) => s.clone(),
            other => other
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| other.to_string(), str::to_string),
        };
    }
    (output, is_error)
}

/// The text of an array of content blocks (`text` or `value` strings, joined by `\n`).
fn blocks_text(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            Value::String(s) => Some(s.as_str()),
            _ => b
                .get("text")
                .or_else(|| b.get("value"))
                .and_then(Value::as_str),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A prompt without a `<user_query>` … `</user_query>` wrapper (first opening, last closing tag;
/// content kept), trimmed.
fn unwrap_user_query(text: &str) -> String {
    let mut s = text.to_string();
    if let Some(open) = s.find("<user_query>") {
        s.replace_range(open..open + "<user_query>".len(), "");
        if let Some(close) = s[open..].rfind("</user_query>") {
            let at = open + close;
            s.replace_range(at..at + "</user_query>".len(), "");
        }
    }
    s.trim().to_string()
}

fn note_time(out: &mut Batch, ts: Option<i64>) {
    let Some(t) = ts else { return };
    let meta = &mut out.meta;
    meta.started_at = Some(meta.started_at.map_or(t, |s| s.min(t)));
    meta.updated_at = Some(meta.updated_at.map_or(t, |u| u.max(t)));
}

// ---------------------------------------------------------------------------------------------
// Chat sessions (chatModel.ts ISerializableChatData; objectMutationLog.ts)
// ---------------------------------------------------------------------------------------------

/// Response part kinds that carry no conversation text (skipped without counting).
pub const KNOWN_PART_KINDS: &[&str] = &[
    "codeblockUri",
    "textEditGroup",
    "notebookEditGroup",
    "textEdit",
    "notebookEdit",
    "undoStop",
    "progressMessage",
    "progressTask",
    "progressTaskSerialized",
    "prepareToolInvocation",
    "confirmation",
    "warning",
    "command",
    "treeData",
    "reference",
    "usedContext",
    "codeCitation",
    "elicitation",
    "elicitationSerialized",
    "mcpServersStarting",
    "extensions",
    "pullRequest",
    "move",
    "multiDiffData",
    "hook",
    "clearToPreviousToolInvocation",
    "questionCarousel",
];

/// Reader for one VS Code chat session file (`chatSessions/<id>.json`, the `.jsonl` journal of
/// newer builds, or `emptyWindowChatSessions/…`); implements [`DocReader`]: the whole file in,
/// every message of the session out. Format: `ISerializableChatData` v1–v3 (`chatModel.ts`).
///
/// Reading: a file that parses as one JSON object with `requests` is the session; otherwise it
/// is a mutation journal, replayed entry by entry (`kind` 0 initial value, 1 set `k` path to `v`,
/// 2 truncate the array at `k` to `i` when given and append `v`, 3 delete `k`); a journal entry
/// that is not JSON or cannot be applied is counted as malformed and skipped, one of unknown
/// `kind` as unknown.
///
/// Each `requests[i]` gives, in order:
///
/// - a user message, id `requestId` (else `request-<i>`): one [`Part::Text`] with `message.text`
///   (or `message` when it is a string), `timestamp` = the request's `timestamp` (ms);
/// - an assistant message, id `responseId` (else `<requestId>:response`), from `response[]`:
///   markdown (`{value}` without `kind`, `markdownContent`, `markdownVuln`) and
///   `inlineReference` names are joined into [`Part::Text`]s, split by tool calls; `thinking` →
///   [`Part::Thinking`]; `toolInvocationSerialized` → [`Part::ToolCall`] (id `toolCallId`, name
///   `toolId`, `tool` from [`tool_vocabulary`], input from `toolSpecificData.rawInput`, a terminal
///   command line (`{"command":…}`), `resultDetails.input`, or the `arguments` of the model's
///   call in `result.metadata.toolCallRounds[].toolCalls[]` matched to the part within the
///   request by name, then order; output from `resultDetails.output` text parts, a terminal's
///   `terminalCommandOutput.text`, or `result.metadata.toolCallResults[<part id or matched call
///   id>]` (text parts, and the text leaves of a prompt-tsx tree); `is_error` from `resultDetails.isError`, a denied
///   confirmation (`isConfirmed.type == 0` or `false`) or a non-zero terminal exit code);
///   `result.errorDetails.message` → a final `Error: …` text. Known non-text kinds
///   ([`KNOWN_PART_KINDS`]) are ignored; parts of unknown kind (or that are not objects) are
///   counted in `stats.skipped_unknown`.
///   `timestamp` = `modelState.completedAt`, else request time + `result.timings.totalElapsed`,
///   else the request time; `model` = `modelId`.
///
/// Requests marked removed (`shouldBeRemovedOnSend`, `isHidden`) or without any content are
/// skipped (known). Stats: `lines` counts requests (plus journal entries), `malformed` the
/// requests that are not objects, a `requests` that is not an array, and a file that is not a
/// session at all (each of the last two counted as one line).
///
/// [`Batch::meta`]: `title` = `customTitle`, else the first prompt (≤ 80 characters);
/// `started_at` = `creationDate`; `updated_at` = `lastMessageDate` or the latest message time;
/// `model` = the last `modelId`; `project_dir` from the reader ([`ChatSessionReader::for_path`]).
#[derive(Debug, Default, Clone)]
pub struct ChatSessionReader {
    project_dir: Option<String>,
}

impl ChatSessionReader {
    /// A reader with no project folder.
    pub fn new() -> Self {
        Self::default()
    }

    /// A reader whose sessions belong to `project_dir`.
    pub fn with_project_dir(project_dir: Option<String>) -> Self {
        Self { project_dir }
    }

    /// A reader for the chat session file at `path`; the project folder comes from the
    /// `workspace.json` of its `workspaceStorage/<hash>` folder (none for empty windows).
    pub fn for_path(path: &Path) -> Self {
        Self::with_project_dir(storage_dir_of(path).and_then(workspace_folder))
    }
}

impl DocReader for ChatSessionReader {
    fn read(&mut self, bytes: &[u8], out: &mut Batch) {
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        // A whole-session JSON with one bad character (lone surrogate, invalid UTF-8) is
        // repaired; a journal is repaired line by line in `replay_journal`.
        let whole = crate::model::parse_json_doc::<Value>(bytes);
        let doc = match whole {
            Ok(Value::Object(m)) if m.contains_key("requests") => Some(Value::Object(m)),
            Ok(Value::Object(m)) if m.contains_key("kind") => {
                replay_journal(std::iter::once(bytes), out)
            }
            Ok(_) => None,
            Err(_) => replay_journal(bytes.split(|&b| b == b'\n'), out),
        };
        if out.meta.project_dir.is_none() {
            out.meta.project_dir.clone_from(&self.project_dir);
        }
        match doc {
            Some(Value::Object(doc)) => convert_session(doc, out),
            _ => {
                out.stats.lines += 1;
                out.stats.malformed += 1;
            }
        }
    }
}

/// Replay an `ObjectMutationLog` journal; `None` when it has no initial entry.
fn replay_journal<'a>(lines: impl Iterator<Item = &'a [u8]>, out: &mut Batch) -> Option<Value> {
    let mut state: Option<Value> = None;
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        out.stats.lines += 1;
        let parsed = crate::model::parse_json_doc::<Value>(line);
        let Ok(Value::Object(mut e)) = parsed else {
            out.stats.malformed += 1;
            continue;
        };
        let path: Vec<Value> = match e.get("k") {
            Some(Value::Array(k)) => k.clone(),
            _ => Vec::new(),
        };
        let applied = match e.get("kind").and_then(Value::as_u64) {
            Some(0) => {
                state = e.remove("v");
                state.is_some()
            }
            Some(1) => state
                .as_mut()
                .is_some_and(|s| apply_set(s, &path, Some(e.remove("v").unwrap_or(Value::Null)))),
            Some(2) => state.as_mut().is_some_and(|s| {
                let values = match e.remove("v") {
                    Some(Value::Array(v)) => v,
                    _ => Vec::new(),
                };
                let at = e.get("i").and_then(Value::as_u64).map(|i| i as usize);
                apply_push(s, &path, values, at)
            }),
            Some(3) => state.as_mut().is_some_and(|s| apply_set(s, &path, None)),
            _ => {
                out.stats.skipped_unknown += 1;
                continue;
            }
        };
        if !applied {
            out.stats.malformed += 1;
        }
    }
    state
}

/// The value at `path` inside `root`.
fn walk_mut<'a>(root: &'a mut Value, path: &[Value]) -> Option<&'a mut Value> {
    let mut cur = root;
    for seg in path {
        cur = match (cur, seg) {
            (Value::Object(m), Value::String(k)) => m.get_mut(k)?,
            (Value::Array(a), Value::Number(n)) => a.get_mut(usize::try_from(n.as_u64()?).ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Set (`Some`) or delete (`None`) the value at `path`. False when the parent does not exist.
fn apply_set(root: &mut Value, path: &[Value], value: Option<Value>) -> bool {
    let Some((last, parent)) = path.split_last() else {
        return false;
    };
    match (walk_mut(root, parent), last) {
        (Some(Value::Object(m)), Value::String(k)) => {
            match value {
                Some(v) => {
                    m.insert(k.clone(), v);
                }
                None => {
                    m.remove(k);
                }
            }
            true
        }
        (Some(Value::Array(a)), Value::Number(n)) => {
            let Some(i) = n.as_u64().and_then(|i| usize::try_from(i).ok()) else {
                return false;
            };
            let v = value.unwrap_or(Value::Null);
            if i < a.len() {
                a[i] = v;
                true
            } else if i == a.len() {
                a.push(v);
                true
            } else {
                false
            }
        }
        _ => false,
    }
}

/// Truncate the array at `path` to `at` (when given) and append `values`; a missing array is
/// created. False when the parent does not exist or the target is not an array.
fn apply_push(root: &mut Value, path: &[Value], values: Vec<Value>, at: Option<usize>) -> bool {
    let Some((last, parent)) = path.split_last() else {
        return false;
    };
    let Some(parent) = walk_mut(root, parent) else {
        return false;
    };
    let slot = match (parent, last) {
        (Value::Object(m), Value::String(k)) => m.entry(k.clone()).or_insert(Value::Null),
        (Value::Array(a), Value::Number(n)) => {
            match n
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| a.get_mut(i))
            {
                Some(v) => v,
                None => return false,
            }
        }
        _ => return false,
    };
    if slot.is_null() {
        *slot = Value::Array(Vec::new());
    }
    let Value::Array(arr) = slot else {
        return false;
    };
    if let Some(at) = at {
        arr.truncate(at);
    }
    arr.extend(values);
    true
}

fn num_i64(v: Option<&Value>) -> Option<i64> {
    let v = v?;
    v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))
}

/// Text of an `IMarkdownString` or a plain string.
fn md_text(v: &Value) -> Option<&str> {
    match v {
        Value::String(s) => Some(s),
        Value::Object(m) => m.get("value").and_then(Value::as_str),
        _ => None,
    }
}

fn convert_session(mut doc: Map<String, Value>, out: &mut Batch) {
    if let Some(t) = doc
        .get("customTitle")
        .or_else(|| doc.get("computedTitle"))
        .and_then(Value::as_str)
    {
        let t = title_text(t, 80);
        if !t.is_empty() {
            out.meta.title = Some(t);
        }
    }
    if let Some(c) = num_i64(doc.get("creationDate")) {
        out.meta.started_at = Some(c);
    }
    let last = num_i64(doc.get("lastMessageDate"));
    let requests = match doc.remove("requests") {
        Some(Value::Array(r)) => r,
        _ => {
            out.stats.lines += 1;
            out.stats.malformed += 1;
            Vec::new()
        }
    };
    for (i, req) in requests.into_iter().enumerate() {
        out.stats.lines += 1;
        let Value::Object(req) = req else {
            out.stats.malformed += 1;
            continue;
        };
        let removed = req.get("isHidden").and_then(Value::as_bool) == Some(true)
            || req
                .get("shouldBeRemovedOnSend")
                .is_some_and(|v| !v.is_null() && v != &Value::Bool(false));
        if removed {
            out.stats.skipped_known += 1;
            continue;
        }
        let produced = convert_request(i, req, out);
        if produced == 0 {
            out.stats.skipped_known += 1;
        }
    }
    if let Some(l) = last {
        out.meta.updated_at = Some(out.meta.updated_at.map_or(l, |u| u.max(l)));
    }
}

/// Push the messages of one request; returns how many.
fn convert_request(i: usize, req: Map<String, Value>, out: &mut Batch) -> usize {
    let request_id = req
        .get("requestId")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map_or_else(|| format!("request-{i}"), str::to_string);
    let req_ts = num_i64(req.get("timestamp"));
    let text = match req.get("message") {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(m) => m
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_string(),
        None => String::new(),
    };
    let mut produced = 0;
    if !text.is_empty() {
        if out.meta.title.is_none() {
            out.meta.title = Some(title_text(&text, 80));
        }
        note_time(out, req_ts);
        out.records.push(Record::Message(Message {
            id: request_id.clone(),
            role: Role::User,
            kind: crate::model::Kind::Text,
            parts: vec![Part::Text { text }],
            timestamp: req_ts,
            model: None,
        }));
        produced += 1;
    }
    let response_id = req
        .get("responseId")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map_or_else(|| format!("{request_id}:response"), str::to_string);
    let call_results = req
        .get("result")
        .and_then(|r| r.get("metadata"))
        .and_then(|m| m.get("toolCallResults"));
    let mut rounds = RoundCalls::of(&req);
    let mut parts = Vec::new();
    let mut text_buf = String::new();
    let flush = |buf: &mut String, parts: &mut Vec<Part>| {
        let t = buf.trim();
        if !t.is_empty() {
            parts.push(Part::Text {
                text: t.to_string(),
            });
        }
        buf.clear();
    };
    if let Some(Value::Array(resp)) = req.get("response") {
        for (k, part) in resp.iter().enumerate() {
            let kind = match part.get("kind") {
                _ if !part.is_object() => {
                    out.stats.skipped_unknown += 1;
                    continue;
                }
                None => None,
                Some(Value::String(k)) => Some(k.as_str()),
                Some(_) => {
                    out.stats.skipped_unknown += 1;
                    continue;
                }
            };
            match kind {
                None => {
                    if let Some(t) = part.get("value").and_then(Value::as_str) {
                        text_buf.push_str(t);
                    }
                }
                Some("markdownContent" | "markdownVuln") => {
                    if let Some(t) = part
                        .get("content")
                        .and_then(md_text)
                        .or_else(|| md_text(part))
                    {
                        text_buf.push_str(t);
                    }
                }
                Some("inlineReference") => {
                    if let Some(name) = inline_reference_name(part) {
                        text_buf.push_str(&name);
                    }
                }
                Some("thinking") => {
                    flush(&mut text_buf, &mut parts);
                    let t = match part.get("value") {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
                        _ => String::new(),
                    };
                    let t = t.trim();
                    if !t.is_empty() {
                        parts.push(Part::Thinking {
                            text: t.to_string(),
                        });
                    }
                }
                Some("toolInvocationSerialized" | "toolInvocation") => {
                    flush(&mut text_buf, &mut parts);
                    let name = part.get("toolId").and_then(Value::as_str).unwrap_or("");
                    let round = rounds.take(name);
                    parts.push(Part::ToolCall(tool_call_of(
                        part,
                        &format!("{response_id}-{k}"),
                        call_results,
                        round,
                    )));
                }
                Some(k) if KNOWN_PART_KINDS.contains(&k) => {}
                Some(_) => out.stats.skipped_unknown += 1,
            }
        }
    }
    flush(&mut text_buf, &mut parts);
    if let Some(msg) = req
        .get("result")
        .and_then(|r| r.get("errorDetails"))
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .filter(|m| !m.trim().is_empty())
    {
        parts.push(Part::Text {
            text: format!("Error: {}", msg.trim()),
        });
    }
    if !parts.is_empty() {
        let completed = req
            .get("modelState")
            .and_then(|m| m.get("completedAt"))
            .and_then(|c| num_i64(Some(c)));
        let elapsed = req
            .get("result")
            .and_then(|r| r.get("timings"))
            .and_then(|t| num_i64(t.get("totalElapsed")));
        let ts = completed.or(match (req_ts, elapsed) {
            (Some(t), Some(e)) => Some(t + e),
            (t, _) => t,
        });
        let model = req
            .get("modelId")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .map(str::to_string);
        if model.is_some() {
            out.meta.model.clone_from(&model);
        }
        note_time(out, ts);
        out.records.push(Record::Message(Message {
            id: response_id,
            role: Role::Assistant,
            kind: Message::infer_kind(&parts),
            parts,
            timestamp: ts,
            model,
        }));
        produced += 1;
    }
    produced
}

/// The display name of an `inlineReference` part: its `name`, else the file name of its URI /
/// location.
fn inline_reference_name(part: &Value) -> Option<String> {
    if let Some(n) = part
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        return Some(n.to_string());
    }
    let r = part.get("inlineReference")?;
    let path = r
        .get("path")
        .or_else(|| r.get("uri").and_then(|u| u.get("path")))
        .or_else(|| r.get("fsPath"))
        .and_then(Value::as_str)?;
    path.rsplit('/')
        .next()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The model's tool calls of one request, `result.metadata.toolCallRounds[].toolCalls[]`
/// (`{name, arguments, id}`, upstream `vscode-copilot-chat` `IToolCallRound`), in order, to be
/// matched with the request's tool-invocation parts.
struct RoundCalls<'a> {
    calls: Vec<(&'a str, &'a str, Option<&'a Value>)>,
    used: Vec<bool>,
}

impl<'a> RoundCalls<'a> {
    fn of(req: &'a Map<String, Value>) -> Self {
        let mut calls = Vec::new();
        if let Some(Value::Array(rounds)) = req
            .get("result")
            .and_then(|r| r.get("metadata"))
            .and_then(|m| m.get("toolCallRounds"))
        {
            for round in rounds {
                if let Some(Value::Array(tc)) = round.get("toolCalls") {
                    for c in tc {
                        let id = c.get("id").and_then(Value::as_str).unwrap_or("");
                        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
                        calls.push((id, name, c.get("arguments")));
                    }
                }
            }
        }
        let used = vec![false; calls.len()];
        RoundCalls { calls, used }
    }

    /// The call for the next part named `tool_id`: the first unused call of that name, else of
    /// the same [`tool_vocabulary`] word, else the next unused call (parts and calls come in the
    /// same order). `None` when every call is used.
    fn take(&mut self, tool_id: &str) -> Option<(&'a str, Option<&'a Value>)> {
        let free = |i: &usize| !self.used[*i];
        let idx = (0..self.calls.len())
            .filter(free)
            .find(|&i| self.calls[i].1 == tool_id)
            .or_else(|| {
                let word = tool_vocabulary(tool_id);
                (0..self.calls.len())
                    .filter(free)
                    .find(|&i| tool_vocabulary(self.calls[i].1) == word)
            })
            .or_else(|| (0..self.calls.len()).find(free))?;
        self.used[idx] = true;
        Some((self.calls[idx].0, self.calls[idx].2))
    }
}

/// The text of a serialized `LanguageModelToolResult` (`toolCallResults[<id>]`): its `content`
/// items in order; a text part's `value` (or `text`) string, a prompt-tsx part's tree
/// (`value.node`) by its text leaves (`{text}` nodes under `children`, a newline before a leaf
/// with `lineBreakBefore`). A `content` string as it is.
fn tool_result_text(r: &Value) -> String {
    fn leaves(v: &Value, out: &mut String, depth: usize) {
        if depth > 64 {
            return;
        }
        if let Some(t) = v.get("text").and_then(Value::as_str) {
            if v.get("lineBreakBefore").and_then(Value::as_bool) == Some(true) && !out.is_empty() {
                out.push('\n');
            }
            out.push_str(t);
        }
        if let Some(Value::Array(children)) = v.get("children") {
            for c in children {
                leaves(c, out, depth + 1);
            }
        }
    }
    match r.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => {
            let mut texts = Vec::new();
            for item in items {
                let t = match item {
                    Value::String(s) => s.clone(),
                    _ => match item.get("value").or_else(|| item.get("text")) {
                        Some(Value::String(s)) => s.clone(),
                        Some(v @ Value::Object(_)) => {
                            let mut out = String::new();
                            leaves(v.get("node").unwrap_or(v), &mut out, 0);
                            out
                        }
                        _ => String::new(),
                    },
                };
                if !t.is_empty() {
                    texts.push(t);
                }
            }
            texts.join("\n")
        }
        _ => r.to_string(),
    }
}

/// A `toolInvocationSerialized` part as a [`ToolCall`]; `round` is the model's call matched to
/// it ([`RoundCalls::take`]): its id and `arguments`, used when the part has no input or output.
fn tool_call_of(
    part: &Value,
    fallback_id: &str,
    call_results: Option<&Value>,
    round: Option<(&str, Option<&Value>)>,
) -> ToolCall {
    let id = part
        .get("toolCallId")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(fallback_id)
        .to_string();
    let name = part
        .get("toolId")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let specific = part.get("toolSpecificData");
    let details = part.get("resultDetails");
    let specific_kind = specific.and_then(|s| s.get("kind")).and_then(Value::as_str);
    let input = match specific_kind {
        Some("input") => specific
            .and_then(|s| s.get("rawInput"))
            .cloned()
            .unwrap_or(Value::Null),
        Some("terminal") => {
            let s = specific.unwrap_or(&Value::Null);
            let cmd = s
                .get("commandLine")
                .and_then(|c| {
                    ["userEdited", "toolEdited", "original"]
                        .iter()
                        .find_map(|k| c.get(*k).and_then(Value::as_str))
                })
                .or_else(|| s.get("command").and_then(Value::as_str));
            cmd.map_or(Value::Null, |c| json!({ "command": c }))
        }
        _ => Value::Null,
    };
    let input = if input.is_null() {
        parse_arguments(details.and_then(|d| d.get("input")).cloned())
    } else {
        input
    };
    let input = match (&input, round) {
        (Value::Null, Some((_, args))) => parse_arguments(args.cloned()),
        _ => input,
    };
    let mut output = match details.and_then(|d| d.get("output")) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(items)) => {
            let texts: Vec<&str> = items
                .iter()
                .filter(|o| {
                    o.get("isText").and_then(Value::as_bool) != Some(false)
                        && o.get("type").and_then(Value::as_str) != Some("ref")
                })
                .filter_map(|o| o.get("value").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    };
    if output.is_none() && specific_kind == Some("terminal") {
        output = specific
            .and_then(|s| s.get("terminalCommandOutput"))
            .and_then(|o| o.get("text"))
            .and_then(Value::as_str)
            .map(str::to_string);
    }
    if output.is_none()
        && let Some(r) =
            call_results.and_then(|r| r.get(&id).or_else(|| round.and_then(|(rid, _)| r.get(rid))))
    {
        output = Some(tool_result_text(r));
    }
    let denied = match part.get("isConfirmed") {
        Some(Value::Bool(b)) => !b,
        Some(Value::Object(c)) => c.get("type").and_then(Value::as_i64) == Some(0),
        _ => false,
    };
    let exit_code = specific
        .and_then(|s| s.get("terminalCommandState"))
        .and_then(|s| s.get("exitCode"))
        .and_then(Value::as_i64);
    let is_error = details
        .and_then(|d| d.get("isError"))
        .and_then(Value::as_bool)
        == Some(true)
        || denied
        || exit_code.is_some_and(|c| c != 0);
    ToolCall {
        id,
        tool: tool_vocabulary(&name),
        name,
        input,
        output,
        is_error,
        exit_code,
    }
}

// ---------------------------------------------------------------------------------------------
// Session identity, reader choice, discovery
// ---------------------------------------------------------------------------------------------

/// Which session a VS Code file holds: `external_id` = the file stem (the `sessionId` of the hook
/// payloads for transcripts, VS Code's chat session id for `chatSessions` files), no parent. The
/// file is not opened.
///
/// Errors: `InvalidInput` when the path has no file name.
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
    Ok(SessionRef {
        agent: Agent::Vscode,
        external_id: stem,
        parent_external_id: None,
    })
}

/// How to read a VS Code file: a [`ChatSessionReader`] (whole file) for files in `chatSessions/`
/// or `emptyWindowChatSessions/`, else a [`VscodeReader`] (JSONL, incremental). Both get the
/// project folder from `workspace.json`.
pub fn source_for(path: &Path) -> crate::Source {
    if is_chat_session_path(path) {
        crate::Source::Doc(Box::new(ChatSessionReader::for_path(path)))
    } else {
        crate::Source::Lines(Box::new(VscodeReader::for_path(path)))
    }
}

/// Every VS Code session file for `memtrail import`, from [`user_dirs`]; see [`discover_in`].
pub fn discover() -> std::io::Result<Vec<PathBuf>> {
    discover_in(&user_dirs())
}

/// Every session file under the given user folders:
///
/// 1. agent transcripts, sorted: `<user>/workspaceStorage/*/GitHub.copilot-chat/transcripts/*.jsonl`;
/// 2. then chat sessions, sorted: `<user>/workspaceStorage/*/chatSessions/*.json` and `*.jsonl`,
///    and `<user>/globalStorage/emptyWindowChatSessions/*.json[l]`. A chat session whose file stem
///    equals a transcript's stem in the same workspace folder is left out (the same session;
///    the transcript has the tool results).
///
/// Missing folders give nothing; unreadable ones are skipped (see [`discover_in_with_errors`]).
/// Never fails today (the `Result` leaves room for errors worth stopping an import for).
pub fn discover_in(user_dirs: &[PathBuf]) -> std::io::Result<Vec<PathBuf>> {
    discover_in_with_errors(user_dirs).map(|(files, _)| files)
}

/// [`discover`], also returning the folders that exist but could not be listed, with the reason.
#[allow(clippy::type_complexity)]
pub fn discover_with_errors() -> std::io::Result<(Vec<PathBuf>, Vec<(PathBuf, String)>)> {
    discover_in_with_errors(&user_dirs())
}

/// [`discover_in`], also returning the folders that exist but could not be listed.
#[allow(clippy::type_complexity)]
pub fn discover_in_with_errors(
    user_dirs: &[PathBuf],
) -> std::io::Result<(Vec<PathBuf>, Vec<(PathBuf, String)>)> {
    let mut transcripts = Vec::new();
    let mut sessions = Vec::new();
    let mut unreadable = Vec::new();
    for user in user_dirs {
        let storage = user.join("workspaceStorage");
        match std::fs::read_dir(&storage) {
            Ok(rd) => {
                for ws in rd.flatten() {
                    let ws = ws.path();
                    if !ws.is_dir() {
                        continue;
                    }
                    let t = list_files(
                        &ws.join("GitHub.copilot-chat").join("transcripts"),
                        &["jsonl"],
                        &mut unreadable,
                    );
                    let stems: Vec<_> = t.iter().filter_map(|p| p.file_stem()).collect();
                    let chats: Vec<PathBuf> = list_files(
                        &ws.join("chatSessions"),
                        &["json", "jsonl"],
                        &mut unreadable,
                    )
                    .into_iter()
                    .filter(|p| p.file_stem().is_none_or(|s| !stems.contains(&s)))
                    .collect();
                    sessions.extend(chats);
                    transcripts.extend(t);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => unreadable.push((storage, e.to_string())),
        }
        sessions.extend(list_files(
            &user.join("globalStorage").join("emptyWindowChatSessions"),
            &["json", "jsonl"],
            &mut unreadable,
        ));
    }
    transcripts.sort();
    transcripts.dedup();
    sessions.sort();
    sessions.dedup();
    transcripts.extend(sessions);
    unreadable.sort();
    unreadable.dedup();
    Ok((transcripts, unreadable))
}

/// The files of `dir` with one of `exts`; a folder that exists but cannot be listed is added to
/// `unreadable` (a missing one is normal).
fn list_files(dir: &Path, exts: &[&str], unreadable: &mut Vec<(PathBuf, String)>) -> Vec<PathBuf> {
    match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| exts.iter().any(|x| e == *x)) && p.is_file())
            .collect(),
        Err(e) => {
            if e.kind() != std::io::ErrorKind::NotFound && dir.exists() {
                unreadable.push((dir.to_path_buf(), e.to_string()));
            }
            Vec::new()
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Hooks (`docs/agents/vscode.md#hooks`; vscode-docs hooks.md)
// ---------------------------------------------------------------------------------------------

/// Parse a VS Code hook payload (stdin of `memtrail hook vscode`) into a [`HookEvent`].
///
/// Common input (vscode-docs `hooks.md`): `timestamp` (ISO string), `cwd`, `sessionId`,
/// `hookEventName`, `transcript_path` — camelCase and snake_case mixed. Events: `SessionStart`
/// (`source: "new"`), `UserPromptSubmit` (`prompt`), `PreToolUse`, `PostToolUse`, `PreCompact`
/// (`trigger: "auto"`), `SubagentStart`, `SubagentStop`, `Stop` (`stop_hook_active`). VS Code has
/// **no `SessionEnd`** (`ChatHookType` in `vscode.proposed.chatHooks.d.ts`). Mapping:
///
/// - `event` ← `hookEventName` (else `hook_event_name`); `session_id` ← `sessionId` (else
///   `session_id`); `transcript_path` ← `transcript_path` (else `transcriptPath`); `cwd` ←
///   `cwd`; `source` ← `source` or `trigger`; `agent_transcript_path` ← none (VS Code's
///   SubagentStop has no transcript); `extra` ← the whole payload.
/// - `agent`: VS Code when `sessionId` or `hookEventName` is present; Cursor when the payload has
///   `conversation_id` / `cursor_version`; Claude Code when it has snake_case `session_id` and
///   `hook_event_name` only; otherwise VS Code.
///
/// Errors (for the hook log): empty, not JSON, not an object; or a GitHub Copilot **CLI** payload
/// (numeric `timestamp`, no session id, no event name), which the CLI sends to the same
/// `~/.copilot/hooks` files and which carries nothing memtrail can use.
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
    let has = |k: &str| payload.get(k).is_some_and(|v| !v.is_null());
    let agent = if has("sessionId") || has("hookEventName") {
        Agent::Vscode
    } else if has("conversation_id") || has("cursor_version") {
        Agent::Cursor
    } else if has("session_id") && has("hook_event_name") {
        Agent::Claude
    } else if payload.get("timestamp").is_some_and(Value::is_number) {
        return Err(crate::Error::ForeignPayload(
            "GitHub Copilot CLI",
            "no sessionId, no hookEventName",
        ));
    } else {
        Agent::Vscode
    };
    let get = |keys: &[&str]| -> Option<String> {
        keys.iter()
            .find_map(|k| payload.get(*k)?.as_str().filter(|s| !s.is_empty()))
            .map(str::to_string)
    };
    Ok(HookEvent {
        agent,
        event: get(&["hookEventName", "hook_event_name"]).unwrap_or_default(),
        session_id: get(&["sessionId", "session_id"]),
        transcript_path: get(&["transcript_path", "transcriptPath"]),
        cwd: get(&["cwd"]),
        source: get(&["source", "trigger"]),
        agent_transcript_path: None,
        extra: Value::Object(payload),
    })
}

/// The transcripts a VS Code hook event should ingest; see [`transcripts_for_event_in`]
/// (searching [`user_dirs`]).
pub fn transcripts_for_event(ev: &HookEvent) -> Vec<PathBuf> {
    transcripts_for_event_in(ev, &user_dirs())
}

/// The payload's `transcript_path`; without one, the first
/// `<user>/workspaceStorage/*/GitHub.copilot-chat/transcripts/<sessionId>.jsonl` that exists
/// (user folders in order, workspace folders sorted). A session id that is empty or not a plain
/// file name resolves nothing (empty list).
pub fn transcripts_for_event_in(ev: &HookEvent, user_dirs: &[PathBuf]) -> Vec<PathBuf> {
    if let Some(t) = ev.transcript_path.as_deref().filter(|t| !t.is_empty()) {
        return vec![PathBuf::from(t)];
    }
    let Some(id) = ev.session_id.as_deref().filter(|id| {
        let mut c = Path::new(id).components();
        !id.contains(['/', '\\'])
            && matches!(c.next(), Some(Component::Normal(_)))
            && c.next().is_none()
    }) else {
        return Vec::new();
    };
    for user in user_dirs {
        let Ok(rd) = std::fs::read_dir(user.join("workspaceStorage")) else {
            continue;
        };
        let mut wss: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        wss.sort();
        for ws in wss {
            let p = ws
                .join("GitHub.copilot-chat")
                .join("transcripts")
                .join(format!("{id}.jsonl"));
            if p.is_file() {
                return vec![p];
            }
        }
    }
    Vec::new()
}

/// The stdout reply to a `SessionStart` hook that adds `context` to the agent's conversation
/// (vscode-docs `hooks.md`, "SessionStart output"):
/// `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"<context>"}}`,
/// one line of JSON without a trailing newline. Always `Some`.
pub fn session_start_reply(context: &str) -> Option<String> {
    Some(
        json!({
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
pub mod registration;
