//! Cline (VS Code extension `saoudrizwan.claude-dev`, and its CLI): paths, hook payloads, task
//! identity, discovery and the task reader, which Roo Code (a fork with the same task layout)
//! reads through too.
//!
//! Sources: `docs/agents/cline.md`, checked against Cline's source (github.com/cline/cline) at
//! v3.89.2 and 4.1.13 (`apps/vscode/src/core/storage/disk.ts`, `shared/messages/content.ts`,
//! `core/hooks/*`, `proto/cline/hooks.proto`, `sdk/legacy-state-reader.ts`).
//!
//! # Where things are
//!
//! One folder per task, `tasks/<task id>/`, under `~/.cline/data` (Cline 4.x and the CLI) or an
//! editor's `globalStorage/saoudrizwan.claude-dev` (Cline 3.x). It holds
//! `api_conversation_history.json` (the conversation as sent to the model: read here),
//! `ui_messages.json` (what the panel shows) and `task_metadata.json` (files in context, model
//! usage). The task id is the folder's name (a millisecond timestamp for 3.x tasks).
//!
//! # The transcript
//!
//! `api_conversation_history.json` is a JSON array of Anthropic-style messages `{role:
//! "user"|"assistant", content: string | [block], ts?, id?, modelInfo?: {modelId, providerId,
//! mode}, metrics?}`, **rewritten whole** at every change (read as a document: the runtime
//! re-reads it when its length or content hash changed and replaces the task's messages). Tool
//! use comes in two spellings, and one task may hold both:
//!
//! - XML-ish, inside assistant text (every version before native tool calls, and still with
//!   models that lack them): `<read_file>\n<path>src/a.rs</path>\n</read_file>`. The result
//!   comes back in the next user message as a text block `[read_file for 'src/a.rs'] Result:`
//!   followed by the output (in the same block or the next text blocks).
//! - Native `tool_use` blocks `{id, name, input}` answered by `tool_result` blocks
//!   `{tool_use_id, content, is_error?}`.
//!
//! Every user message carries `<environment_details>…</environment_details>` (open tabs,
//! terminals, time; the first one also the working folder `# Current Working Directory (<dir>)
//! Files`): dropped from the text, the folder taken as the task's project.

use crate::Source;
use crate::model::{
    Agent, Batch, DocReader, HookEvent, Kind, Message, Part, Record, Role, SessionRef, ToolCall,
    normalize_tool_name, title_text,
};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

pub mod adapter;
pub mod paths;
pub mod registration;
pub mod sessions;

/// Where Cline lives in the process environment ([`paths::Locations::resolve`]).
fn locations() -> paths::Locations {
    paths::Locations::resolve(&crate::Env::from_process())
}

/// The transcript's file name inside a task folder (`GlobalFileNames.apiConversationHistory`).
pub const HISTORY_FILE: &str = "api_conversation_history.json";

/// The folder holding task folders.
pub const TASKS_DIR: &str = "tasks";

// ---------------------------------------------------------------------------------------------
// The reader
// ---------------------------------------------------------------------------------------------

/// The tools Cline and Roo Code write as XML-ish tags in assistant text (Cline's `ClineDefaultTool`
/// names and Roo Code's tool names): a tag `<name>` at the start of a line with one of these
/// names opens a tool call.
const XML_TOOLS: &[&str] = &[
    "execute_command",
    "read_file",
    "write_to_file",
    "replace_in_file",
    "apply_diff",
    "insert_content",
    "search_and_replace",
    "search_files",
    "list_files",
    "list_code_definition_names",
    "codebase_search",
    "browser_action",
    "use_mcp_tool",
    "access_mcp_resource",
    "load_mcp_documentation",
    "ask_followup_question",
    "attempt_completion",
    "plan_mode_respond",
    "act_mode_respond",
    "new_task",
    "switch_mode",
    "update_todo_list",
    "focus_chain",
    "web_fetch",
    "web_search",
    "condense",
    "summarize_task",
    "report_bug",
    "new_rule",
    "apply_patch",
    "use_skill",
    "use_subagents",
    "fetch_instructions",
];

/// The tools whose call carries a summary of the conversation so far (Cline's context
/// condensing: `summarize_task` `{context}`, `condense` `{context}`).
const SUMMARY_TOOLS: &[&str] = &["summarize_task", "condense"];

/// The common tool name of a Cline / Roo Code tool (`docs/agents/cline.md#tools`).
fn common_tool(name: &str) -> String {
    match name {
        "execute_command" => "shell",
        "read_file" => "read",
        "write_to_file" => "write",
        "replace_in_file" | "apply_diff" | "insert_content" | "search_and_replace"
        | "search_replace" | "edit_file" | "apply_patch" => "edit",
        "search_files" | "codebase_search" => "search",
        "list_files" => "list",
        "use_mcp_tool" | "access_mcp_resource" => "mcp",
        n if n.starts_with("mcp--") => "mcp",
        "use_subagents" | "spawn_agent" => "subagent",
        // The CLI 3.x's tools (SDK names).
        "run_commands" => "shell",
        "read_files" => "read",
        "editor" => "edit",
        "search_codebase" => "search",
        "fetch_web_content" => "web_fetch",
        "focus_chain" | "update_todo_list" => "todo",
        other => return normalize_tool_name(other),
    }
    .to_string()
}

/// Which fork wrote a task: the working-folder line of its environment details differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Cline: `# Current Working Directory (<dir>) Files`.
    Cline,
    /// Roo Code: `# Current Workspace Directory (<dir>) Files`; summary messages
    /// (`isSummary: true`); reasoning items (`type: "reasoning"`).
    Roo,
}

impl Flavor {
    fn cwd_marker(self) -> &'static str {
        match self {
            Flavor::Cline => "# Current Working Directory (",
            Flavor::Roo => "# Current Workspace Directory (",
        }
    }
}

/// Reader for one task's `api_conversation_history.json` (Cline's, or Roo Code's with
/// [`Flavor::Roo`]); implements [`DocReader`]. Format: the module docs and
/// `docs/agents/cline.md#transcript-format`.
///
/// Element `i` of the array (an object with `role` and `content`) becomes, in order:
///
/// - **assistant**: one message, id `<i>`, role `Assistant`, with a part per block: `text`
///   (its XML-ish tool calls cut out as [`Part::ToolCall`]s with id `<i>.<n>`, input the
///   parameters as strings; `<thinking>…</thinking>` as [`Part::Thinking`]), `thinking`,
///   `tool_use` (id, name, input); model `modelInfo.modelId`. A call of `summarize_task` or
///   `condense` with a `context` also gives a message `<i>.summary`, role `System`, kind
///   `Summary` (the context).
/// - **user**: its `tool_result` blocks and `[<tool> …] Result:` texts set the output of the
///   call they answer (`is_error` from `is_error`, or an output starting with Cline's error or
///   denial texts, or a shell output whose `Exit code: <n>` line is not 0, which sets
///   `exit_code`); the rest (environment details dropped, a `<task>`/`<feedback>`/`<answer>`/
///   `<user_message>` wrapper removed) is one message `<i>`, role `User`, when any text is left.
/// - Roo Code's `isSummary: true` (a user message holding the condensed conversation, written
///   after every message it replaces): one message `<i>`, role `System`, kind `Summary` (its text
///   blocks without environment details); its `type: "reasoning"` items: skipped (known).
///
/// Times are `ts` (ms since the epoch). Counting: `stats.lines` is the number of elements;
/// a non-object element is `malformed`; an element without `role` `unknown`. A document that
/// is not a JSON array counts one malformed line and yields no records (the runtime keeps what
/// it has stored). [`Batch::meta`]: project from the first working-folder line (or the
/// reader's own, see [`TaskReader::with_project`]), title from the first user text, model from
/// the last assistant message, start and end from the times.
#[derive(Debug)]
pub struct TaskReader {
    flavor: Flavor,
    project_dir: Option<String>,
}

impl TaskReader {
    /// A reader of `flavor` that learns the project from the messages.
    pub fn new(flavor: Flavor) -> Self {
        TaskReader {
            flavor,
            project_dir: None,
        }
    }

    /// A reader that reports `project_dir` (Roo Code's `history_item.json` `workspace`) before
    /// what the messages say.
    pub fn with_project(flavor: Flavor, project_dir: Option<String>) -> Self {
        TaskReader {
            flavor,
            project_dir,
        }
    }
}

/// A tool call emitted so far: where it is, to attach its result.
struct CallAt {
    msg: usize,
    part: usize,
    name: String,
}

/// The messages being built, and the calls waiting for a result.
#[derive(Default)]
struct Build {
    msgs: Vec<Message>,
    calls: Vec<(String, CallAt)>,
    /// The XML-ish calls of the last assistant message, in order, not yet answered.
    pending_xml: Vec<String>,
}

impl Build {
    fn call_mut(&mut self, id: &str) -> Option<&mut ToolCall> {
        let at = &self.calls.iter().find(|(k, _)| k == id)?.1;
        match self.msgs.get_mut(at.msg)?.parts.get_mut(at.part)? {
            Part::ToolCall(c) => Some(c),
            _ => None,
        }
    }

    fn set_output(&mut self, id: &str, output: String, is_error: bool) -> bool {
        match self.call_mut(id) {
            Some(c) => {
                if c.tool == "shell" {
                    c.exit_code = exit_code(&output);
                }
                c.is_error =
                    is_error || looks_failed(&output) || c.exit_code.is_some_and(|e| e != 0);
                c.output = Some(output);
                true
            }
            None => false,
        }
    }
}

/// The exit code of a shell result: Roo Code's line `Exit code: <n>` (Cline writes none).
fn exit_code(output: &str) -> Option<i64> {
    output
        .lines()
        .find_map(|l| l.strip_prefix("Exit code: ")?.trim().parse().ok())
}

/// Cline's and Roo Code's texts for a failed or refused tool (`formatResponse.toolError`,
/// `toolDenied`, `missingToolParameterError`).
fn looks_failed(output: &str) -> bool {
    let o = output.trim_start();
    o.starts_with("The tool execution failed")
        || o.starts_with("The user denied this operation")
        || o.starts_with("Missing value for required parameter")
        || o.starts_with("[ERROR]")
}

impl DocReader for TaskReader {
    fn read(&mut self, bytes: &[u8], out: &mut Batch) {
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let Ok(Value::Array(items)) = crate::model::parse_json_doc::<Value>(bytes) else {
            out.stats.lines += 1;
            out.stats.malformed += 1;
            return;
        };
        if out.meta.project_dir.is_none() {
            out.meta.project_dir.clone_from(&self.project_dir);
        }
        read_messages(items, out, |i, m, ts, b, out| {
            if m.get("type").and_then(Value::as_str) == Some("reasoning") {
                out.stats.skipped_known += 1;
                return;
            }
            let role = m.get("role").and_then(Value::as_str);
            let content = m.get("content").cloned().unwrap_or(Value::Null);
            if m.get("isSummary").and_then(Value::as_bool) == Some(true) {
                let text = self.strip_env(&blocks_text(&content), out);
                if text.is_empty() {
                    out.stats.skipped_known += 1;
                    return;
                }
                b.msgs.push(message(
                    i.to_string(),
                    Role::System,
                    Kind::Summary,
                    vec![Part::Text { text }],
                    ts,
                    None,
                ));
                return;
            }
            match role {
                Some("assistant") => assistant(b, i, &m, content, ts, out),
                Some("user") => self.user(b, i, content, ts, out),
                _ => out.stats.skipped_unknown += 1,
            }
        });
    }
}

/// The loop both Cline readers share over a document's messages: each element counts as a
/// line; a non-object is malformed; the others have their `ts` noted and go to `each` (index,
/// object, time, the messages built so far, the batch); then every built message is a record.
fn read_messages(
    items: Vec<Value>,
    out: &mut Batch,
    mut each: impl FnMut(usize, Map<String, Value>, Option<i64>, &mut Build, &mut Batch),
) {
    let mut b = Build::default();
    for (i, item) in items.into_iter().enumerate() {
        out.stats.lines += 1;
        let Value::Object(m) = item else {
            out.stats.malformed += 1;
            continue;
        };
        let ts = m.get("ts").and_then(Value::as_i64);
        note_time(out, ts);
        each(i, m, ts, &mut b, out);
    }
    for msg in b.msgs {
        out.records.push(Record::Message(msg));
    }
}

fn message(
    id: String,
    role: Role,
    kind: Kind,
    parts: Vec<Part>,
    timestamp: Option<i64>,
    model: Option<String>,
) -> Message {
    Message {
        id,
        role,
        kind,
        parts,
        timestamp,
        model,
    }
}

fn note_time(out: &mut Batch, ts: Option<i64>) {
    if let Some(t) = ts.filter(|t| *t > 0) {
        out.meta.started_at = Some(out.meta.started_at.map_or(t, |s| s.min(t)));
        out.meta.updated_at = Some(out.meta.updated_at.map_or(t, |s| s.max(t)));
    }
}

/// The content as blocks: a string is one text block.
fn blocks(content: Value) -> Vec<Map<String, Value>> {
    match content {
        Value::String(text) => {
            let mut m = Map::new();
            m.insert("type".into(), "text".into());
            m.insert("text".into(), Value::String(text));
            vec![m]
        }
        Value::Array(items) => items
            .into_iter()
            .filter_map(|b| match b {
                Value::Object(m) => Some(m),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The text blocks of a content, joined by blank lines and trimmed.
fn blocks_text(content: &Value) -> String {
    let parts: Vec<String> = blocks(content.clone())
        .into_iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str).map(str::to_string))
        .collect();
    parts.join("\n\n").trim().to_string()
}

/// The model of an assistant message (`modelInfo.<key>`), also the session's (the last one
/// wins).
fn note_model(m: &Map<String, Value>, key: &str, out: &mut Batch) -> Option<String> {
    let model = m
        .get("modelInfo")
        .and_then(|mi| mi.get(key))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    if model.is_some() {
        out.meta.model.clone_from(&model);
    }
    model
}

fn assistant(
    b: &mut Build,
    i: usize,
    m: &Map<String, Value>,
    content: Value,
    ts: Option<i64>,
    out: &mut Batch,
) {
    let model = note_model(m, "modelId", out);
    let msg_index = b.msgs.len();
    let mut parts = Vec::new();
    let mut summaries = Vec::new();
    let mut xml_n = 0;
    b.pending_xml.clear();
    for block in blocks(content) {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                for piece in split_xml(text) {
                    match piece {
                        Piece::Text(t) => parts.push(Part::Text { text: t }),
                        Piece::Thinking(t) => parts.push(Part::Thinking { text: t }),
                        Piece::Call(name, input) => {
                            xml_n += 1;
                            let id = format!("{i}.{xml_n}");
                            b.pending_xml.push(id.clone());
                            parts.push(call_part(id, name, Value::Object(input)));
                        }
                    }
                }
            }
            Some("thinking") => {
                let t = block.get("thinking").and_then(Value::as_str).unwrap_or("");
                if !t.trim().is_empty() {
                    parts.push(Part::Thinking {
                        text: t.trim().to_string(),
                    });
                }
            }
            Some("tool_use") => parts.extend(native_call(&block)),
            _ => {}
        }
    }
    for (n, p) in parts.iter().enumerate() {
        if let Part::ToolCall(c) = p {
            b.calls.push((
                c.id.clone(),
                CallAt {
                    msg: msg_index,
                    part: n,
                    name: c.name.clone(),
                },
            ));
            if SUMMARY_TOOLS.contains(&c.name.as_str())
                && let Some(ctx) = c.input.get("context").and_then(Value::as_str)
                && !ctx.trim().is_empty()
            {
                summaries.push(ctx.trim().to_string());
            }
        }
    }
    if parts.is_empty() {
        out.stats.skipped_known += 1;
        return;
    }
    let kind = Message::infer_kind(&parts);
    b.msgs.push(message(
        i.to_string(),
        Role::Assistant,
        kind,
        parts,
        ts,
        model,
    ));
    for text in summaries {
        b.msgs.push(message(
            format!("{i}.summary"),
            Role::System,
            Kind::Summary,
            vec![Part::Text { text }],
            ts,
            None,
        ));
    }
}

/// A native `tool_use` block `{id, name, input}` as a call part; `None` without an id or a name.
fn native_call(block: &Map<String, Value>) -> Option<Part> {
    let id = block
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())?;
    let name = block
        .get("name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())?;
    let input = block.get("input").cloned().unwrap_or(Value::Null);
    Some(call_part(id.to_string(), name.to_string(), input))
}

fn call_part(id: String, name: String, input: Value) -> Part {
    Part::ToolCall(ToolCall {
        tool: common_tool(&name),
        id,
        name,
        input,
        output: None,
        is_error: false,
        exit_code: None,
    })
}

impl TaskReader {
    fn user(&self, b: &mut Build, i: usize, content: Value, ts: Option<i64>, out: &mut Batch) {
        let mut texts: Vec<String> = Vec::new();
        // A result was attached or stored: the message is not empty even without text.
        let mut used = false;
        // The XML-ish call whose `[…] Result:` is being read, and its output so far.
        let mut open: Option<(String, String)> = None;
        let mut pending = std::mem::take(&mut b.pending_xml).into_iter();
        let close = |b: &mut Build, open: &mut Option<(String, String)>| {
            if let Some((id, output)) = open.take() {
                b.set_output(&id, output.trim().to_string(), false);
            }
        };
        for block in blocks(content) {
            match block.get("type").and_then(Value::as_str) {
                Some("tool_result") => {
                    close(b, &mut open);
                    let id = block
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let output = result_text(block.get("content"));
                    let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
                    used = true;
                    if !b.set_output(id, output.clone(), is_error) && !id.is_empty() {
                        let part = Part::ToolResult {
                            call_id: id.to_string(),
                            is_error: is_error || looks_failed(&output),
                            output,
                        };
                        b.msgs.push(message(
                            format!("{i}.{id}"),
                            Role::Tool,
                            Kind::ToolResult,
                            vec![part],
                            ts,
                            None,
                        ));
                    }
                }
                Some("text") => {
                    let raw = block.get("text").and_then(Value::as_str).unwrap_or("");
                    let text = self.strip_env(raw, out);
                    if text.is_empty() {
                        continue;
                    }
                    if let Some((name, rest)) = result_header(&text) {
                        close(b, &mut open);
                        // The next unanswered XML call (of that name, when it matches).
                        let id = pending.next().filter(|id| {
                            b.calls
                                .iter()
                                .any(|(k, at)| k == id && (at.name == name || name.is_empty()))
                        });
                        match id {
                            Some(id) => {
                                used = true;
                                open = Some((id, rest.to_string()));
                            }
                            None => texts.push(text),
                        }
                    } else if let Some((_, output)) = open.as_mut() {
                        if !output.is_empty() {
                            output.push_str("\n\n");
                        }
                        output.push_str(&text);
                    } else {
                        texts.push(text);
                    }
                }
                _ => {}
            }
        }
        close(b, &mut open);
        let text = texts
            .iter()
            .map(|t| unwrap_prompt(t.trim()))
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        if text.is_empty() {
            if !used {
                out.stats.skipped_known += 1;
            }
            return;
        }
        if out.meta.title.is_none() {
            out.meta.title = Some(title_text(&text, 120));
        }
        b.msgs.push(message(
            i.to_string(),
            Role::User,
            Kind::Text,
            vec![Part::Text { text }],
            ts,
            None,
        ));
    }

    /// `text` without its `<environment_details>` blocks; the first working folder seen becomes
    /// the project.
    fn strip_env(&self, text: &str, out: &mut Batch) -> String {
        const OPEN: &str = "<environment_details>";
        const CLOSE: &str = "</environment_details>";
        let mut kept = String::new();
        let mut rest = text;
        while let Some(start) = rest.find(OPEN) {
            kept.push_str(&rest[..start]);
            let body = &rest[start + OPEN.len()..];
            let (env, after) = match body.find(CLOSE) {
                Some(end) => (&body[..end], &body[end + CLOSE.len()..]),
                None => (body, ""),
            };
            if out.meta.project_dir.is_none()
                && let Some(dir) = working_folder(env, self.flavor.cwd_marker())
            {
                out.meta.project_dir = Some(dir);
            }
            rest = after;
        }
        kept.push_str(rest);
        kept.trim().to_string()
    }
}

/// The folder of a `<marker><dir>) Files` line (Cline's multi-root `Primary: <name>` is not a
/// folder: `None`).
fn working_folder(env: &str, marker: &str) -> Option<String> {
    let at = env.find(marker)? + marker.len();
    let line = env[at..].lines().next()?;
    let dir = line
        .strip_suffix(") Files")
        .unwrap_or(line.trim_end_matches(')'));
    (dir.starts_with('/') || dir.get(1..3) == Some(":/") || dir.get(1..3) == Some(":\\"))
        .then(|| dir.to_string())
}

/// `[<tool> for '<what>'] Result:` or `[<tool>] Result:` at the start of `text`: the tool name
/// and what follows the header (trimmed).
fn result_header(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('[')?;
    let end = rest.find("] Result:")?;
    let head = &rest[..end];
    if head.contains('\n') {
        return None;
    }
    let name = head.split_once(" for ").map_or(head, |(n, _)| n).trim();
    let name = if name
        .bytes()
        .all(|c| c.is_ascii_lowercase() || c == b'_' || c.is_ascii_digit())
    {
        name
    } else {
        ""
    };
    Some((name, rest[end + "] Result:".len()..].trim()))
}

/// A prompt without the wrapper tag Cline puts around it (`<task>`, `<feedback>`, `<answer>`,
/// `<user_message>`).
fn unwrap_prompt(text: &str) -> String {
    for tag in ["task", "feedback", "answer", "user_message"] {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        if let Some(inner) = text
            .strip_prefix(open.as_str())
            .and_then(|r| r.strip_suffix(close.as_str()))
        {
            return inner.trim().to_string();
        }
    }
    text.to_string()
}

/// A tool result's content: a string, or its text blocks joined (an image as `[image]`).
fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b.get("text").and_then(Value::as_str).map(str::to_string),
                Some("image") => Some("[image]".to_string()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n\n")
            .trim()
            .to_string(),
        _ => String::new(),
    }
}

/// A piece of assistant text.
enum Piece {
    Text(String),
    Thinking(String),
    Call(String, Map<String, Value>),
}

/// Split assistant text into prose, `<thinking>` and XML-ish tool calls: a line that starts with
/// `<name>` for a name of [`XML_TOOLS`] opens a call that ends at `</name>` (or the end of the
/// text: a call cut short by the stream's end); its parameters are the `<param>value</param>`
/// pairs inside, values trimmed of one leading and trailing newline.
fn split_xml(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut prose = String::new();
    let mut rest = text;
    let flush = |prose: &mut String, out: &mut Vec<Piece>| {
        let t = prose.trim();
        if !t.is_empty() {
            out.push(Piece::Text(t.to_string()));
        }
        prose.clear();
    };
    loop {
        let Some((at, name)) = next_tag(rest) else {
            prose.push_str(rest);
            break;
        };
        prose.push_str(&rest[..at]);
        let open = format!("<{name}>");
        let close = format!("</{name}>");
        let body = &rest[at + open.len()..];
        let (inner, after) = match body.find(&close) {
            Some(end) => (&body[..end], &body[end + close.len()..]),
            None => (body, ""),
        };
        flush(&mut prose, &mut out);
        if name == "thinking" {
            let t = inner.trim();
            if !t.is_empty() {
                out.push(Piece::Thinking(t.to_string()));
            }
        } else {
            out.push(Piece::Call(name.to_string(), params(inner)));
        }
        rest = after;
    }
    flush(&mut prose, &mut out);
    out
}

/// The first `<thinking>` or `<tool>` tag of [`XML_TOOLS`] that starts a line: its byte offset
/// and name.
fn next_tag(text: &str) -> Option<(usize, &'static str)> {
    let mut from = 0;
    while let Some(rel) = text[from..].find('<') {
        let at = from + rel;
        let line_start = at == 0 || text[..at].ends_with('\n');
        if line_start {
            let after = &text[at + 1..];
            let found = std::iter::once("thinking")
                .chain(XML_TOOLS.iter().copied())
                .find(|n| after.strip_prefix(n).is_some_and(|r| r.starts_with('>')));
            if let Some(n) = found {
                return Some((at, n));
            }
        }
        from = at + 1;
    }
    None
}

/// The `<param>value</param>` pairs of an XML-ish call, in order.
fn params(inner: &str) -> Map<String, Value> {
    let mut out = Map::new();
    let mut rest = inner;
    while let Some(start) = rest.find('<') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('>') else { break };
        let name = &after[..end];
        if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
            rest = &after[end + 1..];
            continue;
        }
        let body = &after[end + 1..];
        let close = format!("</{name}>");
        let Some(stop) = body.find(&close) else {
            break;
        };
        let v = &body[..stop];
        let v = v.strip_prefix('\n').unwrap_or(v);
        let v = v.strip_suffix('\n').unwrap_or(v);
        out.insert(name.to_string(), Value::String(v.to_string()));
        rest = &body[stop + close.len()..];
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Tasks, identity and discovery (shared with Roo Code)
// ---------------------------------------------------------------------------------------------

/// A task id usable as a path component.
fn is_safe_name(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The task id of `…/tasks/<id>/api_conversation_history.json`.
pub fn task_of(path: &Path) -> Option<&str> {
    if path.file_name()? != HISTORY_FILE {
        return None;
    }
    let dir = path.parent()?;
    let id = dir.file_name()?.to_str()?;
    (dir.parent()?.file_name()? == TASKS_DIR && is_safe_name(id)).then_some(id)
}

/// [`Source::Doc`] with a Cline [`TaskReader`] for a task's `api_conversation_history.json`;
/// [`Source::Database`] for a CLI conversation file (`<id>.messages.json`, a sub-agent's
/// `agent_<n>.messages.json`), read by [`sessions::read_db`].
pub fn source_for(path: &Path) -> Option<Source> {
    if sessions::conversation_of(path).is_some() {
        return Some(Source::Database);
    }
    task_of(path).map(|_| Source::Doc(Box::new(TaskReader::new(Flavor::Cline))))
}

/// The task that `path` (a task's `api_conversation_history.json`) is, for `agent`, with
/// `parent` as its parent task.
///
/// Errors: `InvalidInput` when `path` is not `…/tasks/<id>/api_conversation_history.json`.
pub fn identify_task(
    agent: Agent,
    path: &Path,
    parent: Option<String>,
) -> std::io::Result<SessionRef> {
    let id = task_of(path).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("not a task's {HISTORY_FILE}: {}", path.display()),
        )
    })?;
    Ok(SessionRef {
        agent,
        external_id: id.to_string(),
        parent_external_id: parent.filter(|p| p != id && is_safe_name(p)),
    })
}

/// Which task a Cline transcript is: the task folder's name (Cline records no parent task), or
/// the CLI session's id for `<id>/<id>.messages.json`.
///
/// Errors: as [`identify_task`].
pub fn identify(path: &Path) -> std::io::Result<SessionRef> {
    if let Some((id, parent)) = sessions::conversation_of(path) {
        return Ok(SessionRef {
            agent: Agent::Cline,
            external_id: id,
            parent_external_id: parent,
        });
    }
    identify_task(Agent::Cline, path, None)
}

/// Every `<root>/<id>/api_conversation_history.json` that is a file, for each of `roots`
/// (folders of task folders), sorted by path. A missing root gives nothing; a root that exists
/// but cannot be listed is reported in `unreadable`.
pub fn discover_in(roots: &[PathBuf]) -> crate::Discovery {
    let mut found = crate::Discovery::default();
    for root in roots {
        let entries = match std::fs::read_dir(root) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                found.unreadable.push((root.clone(), e.to_string()));
                continue;
            }
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path().join(HISTORY_FILE))
            .filter(|p| task_of(p).is_some() && p.is_file())
            .collect();
        files.sort();
        found.files.extend(files);
    }
    found
}

/// Every Cline task on this machine: `~/.cline/data/tasks` and each editor's extension folder,
/// then the CLI's sessions (`~/.cline/data/sessions/<id>/<id>.messages.json`).
///
/// Errors: none (folders that cannot be listed are in `unreadable`).
pub fn discover() -> std::io::Result<crate::Discovery> {
    let loc = locations();
    let mut found = discover_in(&loc.task_roots());
    let more = discover_sessions_in(&loc.data_sessions);
    found.files.extend(more.files);
    found.unreadable.extend(more.unreadable);
    Ok(found)
}

/// Every `<dir>/<id>/<id>.messages.json` that is a file (the CLI's sessions), sorted by path,
/// each followed by its sub-agents' `<dir>/<id>/agent_<n>.messages.json`.
/// A missing `dir` gives nothing; one that cannot be listed is reported in `unreadable`.
pub fn discover_sessions_in(dir: &Path) -> crate::Discovery {
    let mut found = crate::Discovery::default();
    match std::fs::read_dir(dir) {
        Ok(rd) => {
            let mut files: Vec<PathBuf> = rd
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .map(|id| sessions::messages_file(dir, &id))
                .filter(|p| sessions::session_of(p).is_some() && p.is_file())
                .collect();
            files.sort();
            for f in files {
                let subs = f.parent().map(sessions::subagent_files).unwrap_or_default();
                found.files.push(f);
                found.files.extend(subs);
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => found.unreadable.push((dir.to_path_buf(), e.to_string())),
    }
    found
}

/// The transcript of task `id` in the first of `roots` that holds it.
pub fn task_file_in(roots: &[PathBuf], id: &str) -> Option<PathBuf> {
    if !is_safe_name(id) {
        return None;
    }
    roots
        .iter()
        .map(|r| r.join(id).join(HISTORY_FILE))
        .find(|p| p.is_file())
}

// ---------------------------------------------------------------------------------------------
// Hooks (`docs/agents/cline.md#hooks`)
// ---------------------------------------------------------------------------------------------

/// The common event name of a Cline hook (`HookInput.hookName`): `TaskStart` and `TaskResume`
/// are `SessionStart` (sources `startup` and `resume`), `TaskComplete` and `TaskCancel` are
/// `Stop`, `UserPromptSubmit` and `PreCompact` keep their names. The CLI 3.x runs the same
/// script files but names its events after its SDK's (`agent_start`, `agent_resume`,
/// `agent_end`, `agent_abort`, `agent_error`, `prompt_submit`, `session_shutdown`; seen with
/// 3.0.65: `agent_start` in `TaskStart`, `agent_end` in `TaskComplete`, `tool_call` /
/// `tool_result` in `PreToolUse` / `PostToolUse`): mapped alike, `session_shutdown` to
/// `SessionEnd`. Others are returned unchanged.
fn common_event(hook: &str) -> (&str, Option<&'static str>) {
    match hook {
        "TaskStart" | "agent_start" => ("SessionStart", Some("startup")),
        "TaskResume" | "agent_resume" => ("SessionStart", Some("resume")),
        "TaskComplete" | "TaskCancel" | "agent_end" | "agent_abort" | "agent_error" => {
            ("Stop", None)
        }
        "prompt_submit" => ("UserPromptSubmit", None),
        "pre_compact" => ("PreCompact", None),
        "session_shutdown" => ("SessionEnd", None),
        other => (other, None),
    }
}

/// Parse a Cline hook payload (`HookInput.toJSON`, camelCase: `{clineVersion, hookName,
/// timestamp, taskId, workspaceRoots, userId, model, <event data>}`) into a [`HookEvent`]:
/// event as [`common_event`] names it, session id `taskId` (the CLI 3.x's
/// `sessionContext.rootSessionId` when present: its `taskId` is a `conv_…` id, its session the
/// folder `sessions/<rootSessionId>/`), working folder the first of `workspaceRoots`, no
/// transcript path (Cline sends none; [`transcripts_for_event`] finds the
/// task's file), source `startup`/`resume` for a task start; `preCompact.compactionStrategy`
/// as the PreCompact source.
///
/// Errors: empty payload, not JSON, not an object, no `hookName`.
pub fn parse_hook_payload(bytes: &[u8], env: &crate::Env) -> Result<HookEvent, crate::Error> {
    parse_payload(Agent::Cline, bytes, env)
}

/// [`parse_hook_payload`] for `agent` (Cline or Roo Code, which has no hooks of its own).
///
/// Errors: as [`parse_hook_payload`].
pub fn parse_payload(
    agent: Agent,
    bytes: &[u8],
    env: &crate::Env,
) -> Result<HookEvent, crate::Error> {
    let _ = env;
    let payload = crate::registry::payload_object(bytes)?;
    let str_of = |k: &str| payload.get(k).and_then(Value::as_str).map(str::to_string);
    let hook = str_of("hookName").ok_or(crate::Error::PayloadMissing("hookName"))?;
    let (event, source) = common_event(&hook);
    let source = source.map(str::to_string).or_else(|| {
        payload
            .pointer("/preCompact/compactionStrategy")
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    Ok(HookEvent {
        agent,
        event: event.to_string(),
        // The CLI 3.x's `taskId` is its conversation's (`conv_…`); its session (the folder
        // `sessions/<id>/`) is `sessionContext.rootSessionId`.
        session_id: payload
            .get("sessionContext")
            .and_then(|c| c.get("rootSessionId"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| str_of("taskId"))
            .filter(|s| !s.is_empty()),
        transcript_path: None,
        cwd: payload
            .pointer("/workspaceRoots/0")
            .and_then(Value::as_str)
            .map(str::to_string),
        source,
        agent_transcript_path: None,
        extra: payload,
    })
}

/// The files a hook event should ingest: its `transcript_path` when set, else the task's
/// `api_conversation_history.json` in the first task folder root that holds it (`~/.cline/data`,
/// then each editor's extension folder: a few `stat`s), else the CLI session's
/// `<data>/sessions/<id>/<id>.messages.json` and its sub-agents' `agent_<n>.messages.json`.
pub fn transcripts_for_event(ev: &HookEvent) -> Vec<PathBuf> {
    let loc = locations();
    let found = transcripts_for_event_in(ev, &loc.task_roots());
    if !found.is_empty() {
        return found;
    }
    // The CLI 3.x: its session's conversation (one more `stat`), and its sub-agents' beside it
    // (one `readdir` of that folder).
    let Some(file) = ev
        .session_id
        .as_deref()
        .filter(|id| is_safe_name(id))
        .map(|id| sessions::messages_file(&loc.data_sessions, id))
        .filter(|p| p.is_file())
    else {
        return Vec::new();
    };
    let subs = file
        .parent()
        .map(sessions::subagent_files)
        .unwrap_or_default();
    std::iter::once(file).chain(subs).collect()
}

/// [`transcripts_for_event`] with explicit task roots.
pub fn transcripts_for_event_in(ev: &HookEvent, roots: &[PathBuf]) -> Vec<PathBuf> {
    if let Some(t) = ev.transcript_path.as_deref().filter(|t| !t.is_empty()) {
        return vec![PathBuf::from(t)];
    }
    ev.session_id
        .as_deref()
        .and_then(|id| task_file_in(roots, id))
        .into_iter()
        .collect()
}

/// The reply that puts `context` into a Cline task: `{"cancel": false, "contextModification":
/// "<context>"}` (Cline adds it to the conversation; it cuts it at 50,000 characters).
pub fn session_start_reply(context: &str) -> Option<String> {
    Some(serde_json::json!({"cancel": false, "contextModification": context}).to_string())
}

/// The first `"key": "<value>"` string of a small JSON file (`history_item.json`), read whole
/// up to 1 MiB; `None` when missing, unreadable, not an object or without the key.
pub fn json_field(path: &Path, key: &str) -> Option<String> {
    // Without blocking on a FIFO in its place (`paths::read_small`).
    let bytes = crate::paths::read_small(path, 1 << 20).ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}
