//! The common model every agent adapter produces and the runtime stores.
//!
//! An adapter turns an agent's own transcript (one JSON object per line for Claude Code, see
//! `docs/agents/README.md`) into [`Record`]s: messages with ordered
//! [`Part`]s, late tool results and session metadata. The runtime writes them into the store with
//! *merge* semantics keyed by [`Message::id`], so a message whose blocks are spread over several
//! ingest steps ends up whole, exactly once.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;

/// Declares [`Agent`] and [`Agent::ALL`] from one list, so a variant cannot exist without being
/// in `ALL` (which drives `--agent` parsing, install, import, status and doctor). A new agent is
/// one line here (see `docs/adding-an-agent.md`).
macro_rules! agents {
    ($(#[$attr:meta])* pub enum Agent { $($variant:ident,)+ }) => {
        $(#[$attr])*
        pub enum Agent {
            $($variant,)+
        }

        impl Agent {
            /// Every agent, in display order (the order of the variants).
            pub const ALL: [Agent; [$(Agent::$variant,)+].len()] = [$(Agent::$variant,)+];
        }
    };
}

agents! {
    /// A coding agent memtrail knows. The string form (`claude`, `codex`, …) is what the CLI, the
    /// store and the MCP tools use.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Agent {
        Claude,
        Codex,
        Gemini,
        Cursor,
        Vscode,
        Opencode,
        Copilotcli,
        Qwen,
        Pi,
        Droid,
        Continue,
        Goose,
        Crush,
        Aider,
        Cline,
        Roo,
    }
}

impl Agent {
    /// The short name used on the command line and in the store (`claude`, `codex`, …), from
    /// the agent's adapter ([`crate::registry::Names`]).
    pub fn as_str(self) -> &'static str {
        self.adapter().names().name
    }

    /// The product name shown to people (`Claude Code`, …), from the agent's adapter.
    pub fn display_name(self) -> &'static str {
        self.adapter().names().display
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Agent {
    type Err = String;
    /// An agent's name or one of its aliases ([`crate::registry::Names::aliases`]), in any case.
    ///
    /// Errors: `unknown agent `<s>` (expected one of: claude, codex, …)`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.to_ascii_lowercase();
        Agent::ALL
            .into_iter()
            .find(|a| {
                let n = a.adapter().names();
                n.name == lower || n.aliases.contains(&lower.as_str())
            })
            .ok_or_else(|| {
                format!(
                    "unknown agent `{lower}` (expected one of: {})",
                    crate::registry::agent_names(", ")
                )
            })
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    Tool,
    System,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::System => "system",
        }
    }
}

impl FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "tool" => Ok(Role::Tool),
            "system" => Ok(Role::System),
            other => Err(format!(
                "unknown role `{other}` (expected user, assistant, tool or system)"
            )),
        }
    }
}

/// What a message mainly is. A message holding any tool call is `ToolCall`; a compaction summary
/// is `Summary`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Text,
    ToolCall,
    ToolResult,
    Thinking,
    Summary,
    /// A note an agent asked memtrail to keep (MCP `remember`); never read from a transcript.
    Note,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::ToolCall => "tool_call",
            Kind::ToolResult => "tool_result",
            Kind::Thinking => "thinking",
            Kind::Summary => "summary",
            Kind::Note => "note",
        }
    }
}

/// One tool invocation with its result, as far as it is known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The agent's own call id (`toolu_…` for Claude Code). Unique within a session.
    pub id: String,
    /// The tool name exactly as the agent wrote it (`Bash`, `mcp__github__get_issue`, …).
    pub name: String,
    /// The tool name in memtrail's common vocabulary (see [`normalize_tool_name`]).
    pub tool: String,
    /// The tool's input object, as the agent wrote it.
    pub input: Value,
    /// The tool's output as text, once the result has been seen.
    pub output: Option<String>,
    /// True when the agent marked the result as an error (`is_error` for Claude Code), or its
    /// exit code is not 0.
    pub is_error: bool,
    /// The exit code of a shell command, from the agent's own field where it has one (OpenCode
    /// `state.metadata.exit`, Codex `exec_command_end.exit_code` / output `metadata.exit_code`,
    /// VS Code `toolSpecificData.terminalCommandState.exitCode`), else from the agent's own
    /// header line in the output (Codex `Process exited with code N`, Gemini `Exit Code: N`,
    /// Claude `Exit code N`). `None` when unknown (not a shell call, no result yet). Stored in
    /// the message's parts; absent in rows written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
}

/// One ordered piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        text: String,
    },
    Thinking {
        text: String,
    },
    ToolCall(ToolCall),
    /// A tool result that could not be attached to a call (its call is in no known message).
    ToolResult {
        call_id: String,
        output: String,
        is_error: bool,
    },
}

/// One message of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Deterministic id, stable across re-reads of the same transcript (for Claude Code: the
    /// API `message.id` of an assistant message, else the line's `uuid`). Unique within a session.
    pub id: String,
    pub role: Role,
    pub kind: Kind,
    /// Ordered content blocks.
    pub parts: Vec<Part>,
    /// When the message was written, in milliseconds since the Unix epoch (UTC).
    pub timestamp: Option<i64>,
    /// The model that wrote an assistant message.
    pub model: Option<String>,
}

impl Message {
    /// The message's prose: its text parts (and thinking, summary) joined by blank lines.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.parts {
            let t = match p {
                Part::Text { text } | Part::Thinking { text } => text.as_str(),
                _ => continue,
            };
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(t);
        }
        out
    }

    /// The tool calls of the message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.parts.iter().filter_map(|p| match p {
            Part::ToolCall(c) => Some(c),
            _ => None,
        })
    }

    /// The kind implied by the parts: `ToolCall` if any part is a call, `Thinking` if all parts
    /// are thinking, else `Text`. Adapters set `Summary` themselves.
    pub fn infer_kind(parts: &[Part]) -> Kind {
        if parts.iter().any(|p| matches!(p, Part::ToolCall(_))) {
            Kind::ToolCall
        } else if !parts.is_empty() && parts.iter().all(|p| matches!(p, Part::ToolResult { .. })) {
            Kind::ToolResult
        } else if !parts.is_empty() && parts.iter().all(|p| matches!(p, Part::Thinking { .. })) {
            Kind::Thinking
        } else {
            Kind::Text
        }
    }

    /// Merge `other` (a later write of the same message id) into `self`: new blocks are appended
    /// in order; a tool call already present (same call id) is updated, never duplicated; a text or
    /// thinking block already present is skipped. This handles both Claude Code 2.x (one block
    /// per line) and older cumulative re-emission.
    pub fn merge(&mut self, other: Message) {
        for part in other.parts {
            merge_part(&mut self.parts, part);
        }
        if self.kind != Kind::Summary {
            self.kind = if other.kind == Kind::Summary {
                Kind::Summary
            } else {
                Message::infer_kind(&self.parts)
            };
        }
        if self.timestamp.is_none() {
            self.timestamp = other.timestamp;
        }
        if self.model.is_none() {
            self.model = other.model;
        }
    }
}

fn merge_part(parts: &mut Vec<Part>, part: Part) {
    match part {
        Part::ToolCall(call) => {
            if let Some(existing) = parts.iter_mut().find_map(|p| match p {
                Part::ToolCall(c) if c.id == call.id => Some(c),
                _ => None,
            }) {
                if call.output.is_some() {
                    existing.output = call.output;
                    existing.is_error = call.is_error;
                    existing.exit_code = call.exit_code.or(existing.exit_code);
                }
                if existing.input.is_null() {
                    existing.input = call.input;
                }
            } else {
                parts.push(Part::ToolCall(call));
            }
        }
        other => {
            if !parts.contains(&other) {
                parts.push(other);
            }
        }
    }
}

/// Metadata about a session learned while reading its transcript. Every field is optional;
/// the store keeps the first non-empty title and the latest of the rest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionMeta {
    /// The project (working) directory.
    pub project_dir: Option<String>,
    /// A title candidate: the first real user prompt, whitespace collapsed.
    pub title: Option<String>,
    pub model: Option<String>,
    pub git_branch: Option<String>,
    /// Agent version that wrote the transcript (e.g. Claude Code `2.1.49`).
    pub agent_version: Option<String>,
    /// Earliest and latest message time seen, in ms since the Unix epoch.
    pub started_at: Option<i64>,
    pub updated_at: Option<i64>,
}

impl SessionMeta {
    /// Fold `other` into `self`: keep the first title and start time, take the latest of the rest.
    pub fn absorb(&mut self, other: SessionMeta) {
        if self.title.is_none() {
            self.title = other.title;
        }
        if other.project_dir.is_some() {
            self.project_dir = other.project_dir;
        }
        if other.model.is_some() {
            self.model = other.model;
        }
        if other.git_branch.is_some() {
            self.git_branch = other.git_branch;
        }
        if other.agent_version.is_some() {
            self.agent_version = other.agent_version;
        }
        self.started_at = match (self.started_at, other.started_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.updated_at = match (self.updated_at, other.updated_at) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
}

/// Which session a transcript file belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRef {
    pub agent: Agent,
    /// The session id as the agent knows it (Claude Code: the file stem, a UUID). Sub-agent
    /// sessions get `<parent id>/agent-<agent id>`.
    pub external_id: String,
    /// The parent session's external id, for sub-agent sessions.
    pub parent_external_id: Option<String>,
}

/// What a transcript reader emits, in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// Insert the message, or merge it into the stored message with the same id.
    Message(Message),
    /// A tool result whose call was emitted in an earlier batch: attach it to the stored call
    /// with this id in the same session.
    ToolResult {
        call_id: String,
        output: String,
        is_error: bool,
        /// The shell command's exit code, when the agent gave one ([`ToolCall::exit_code`]).
        exit_code: Option<i64>,
        timestamp: Option<i64>,
    },
    /// Insert the message, or REPLACE the stored message with the same id (its parts, kind, time
    /// and model; its position in the session stays). For formats where a later write of the
    /// same id supersedes the earlier one (Gemini CLI's JSONL: "last write wins").
    Replace(Message),
    /// The conversation was rewound: delete the message with this id and every later message of
    /// the session (Gemini CLI's `$rewindTo`). Unknown ids delete nothing.
    Rewind { message_id: String },
}

/// Counts of what a reader did with the lines it saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseStats {
    /// Complete lines read.
    pub lines: u64,
    /// Lines of known types that carry no conversation content (meta, progress, snapshots, …).
    pub skipped_known: u64,
    /// Lines of a type this reader does not know.
    pub skipped_unknown: u64,
    /// Lines that are not valid JSON (or not an object), or over the line size limit.
    pub malformed: u64,
}

impl ParseStats {
    pub fn add(&mut self, o: ParseStats) {
        self.lines += o.lines;
        self.skipped_known += o.skipped_known;
        self.skipped_unknown += o.skipped_unknown;
        self.malformed += o.malformed;
    }

    /// All lines not turned into content.
    pub fn skipped(&self) -> u64 {
        self.skipped_known + self.skipped_unknown + self.malformed
    }
}

/// The output of a reader for a run of lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    pub meta: SessionMeta,
    pub records: Vec<Record>,
    pub stats: ParseStats,
}

/// A line-oriented (JSONL) transcript reader. The runtime owns the file, the cursor and the
/// transaction; the reader only turns complete lines into records. One reader instance lives for
/// one ingest of one file; state that must survive across ingests is in the store (records merge
/// by message id), so a reader may start at any line boundary.
pub trait LineReader {
    /// Parse one complete line (without its `\n`). Bad lines are counted in `out.stats`, never fatal.
    fn line(&mut self, line: &[u8], out: &mut Batch);
    /// Flush anything held back (e.g. a message whose blocks may continue on the next line).
    fn finish(&mut self, out: &mut Batch);
    /// State that the next ingest of the same file needs to continue where this one stopped
    /// (e.g. Codex's current turn id). The runtime stores it with the cursor, in the same
    /// transaction, and hands it to [`LineReader::restore_state`] before the next line. Keep it
    /// small. Default: stateless.
    fn save_state(&self) -> Option<Value> {
        None
    }
    /// Restore what [`LineReader::save_state`] returned at the end of the previous ingest.
    fn restore_state(&mut self, _state: &Value) {}
}

/// A reader for formats that are rewritten whole (Gemini CLI's legacy `session-*.json`, VS Code's
/// `chatSessions/*.json`): given the whole file, every message of the session. The runtime
/// replaces the session's stored messages with these, in one transaction, when the file's
/// content changed.
pub trait DocReader {
    fn read(&mut self, bytes: &[u8], out: &mut Batch);
}

/// A hook invocation, parsed from the agent's payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookEvent {
    /// The agent that really called (a Claude-format hook may be run by VS Code or Cursor).
    pub agent: Agent,
    /// The hook event name as the agent spells it (`Stop`, `SessionStart`, …).
    pub event: String,
    pub session_id: Option<String>,
    pub transcript_path: Option<String>,
    pub cwd: Option<String>,
    /// SessionStart `source` (`startup|resume|clear|compact`), PreCompact `trigger`, SessionEnd `reason`.
    pub source: Option<String>,
    /// Sub-agent transcript (`agent_transcript_path` on Claude Code SubagentStop).
    pub agent_transcript_path: Option<String>,
    /// The whole payload, for fields not lifted above.
    pub extra: Value,
}

/// The hook event name in Claude Code's spelling, whatever the agent's spelling (Cursor:
/// `sessionStart`, `stop`, `preCompact`, `beforeSubmitPrompt`; Gemini: `PreCompress`,
/// `AfterAgent`; OpenCode plugin: `session.idle`, `session.compacted`), so the runtime compares
/// one vocabulary. Unknown names are returned unchanged.
pub fn canonical_event(e: &str) -> &str {
    match e.to_ascii_lowercase().as_str() {
        "sessionstart" | "session.start" | "session.created" => "SessionStart",
        "sessionend" | "session.end" | "session.deleted" => "SessionEnd",
        "precompact" | "precompress" | "session.compacting" => "PreCompact",
        "stop" | "afteragent" | "session.idle" | "agent-turn-complete" => "Stop",
        "subagentstop" => "SubagentStop",
        "beforesubmitprompt" | "userpromptsubmit" | "beforeagent" => "UserPromptSubmit",
        "session.compacted" | "postcompact" => "PostCompact",
        _ => e,
    }
}

/// Map an agent's tool name to memtrail's common vocabulary, so that `Edit`, `apply_patch`,
/// `write_file`, `editFiles`, … can be queried as one. Unknown names are returned unchanged;
/// MCP tools (`mcp__server__tool`) become `mcp`.
pub fn normalize_tool_name(name: &str) -> String {
    let n = name.trim();
    if n.starts_with("mcp__") || n.starts_with("mcp_") {
        return "mcp".to_string();
    }
    let lower = n.to_ascii_lowercase();
    let common = match lower.as_str() {
        "bash" | "shell" | "exec_command" | "run_shell_command" | "runterminalcommand"
        | "run_in_terminal" | "local_shell" | "terminal" => "shell",
        "read" | "read_file" | "readfile" | "read_file_v2" | "view" => "read",
        "write" | "write_file" | "writefile" | "create_file" | "createfile" => "write",
        "edit"
        | "multiedit"
        | "str_replace"
        | "strreplace"
        | "replace"
        | "editfiles"
        | "edit_file"
        | "apply_patch"
        | "notebookedit"
        | "insert_edit_into_file" => "edit",
        "glob" | "list_dir" | "list_directory" | "ls" | "file_search" | "listfiles" => "list",
        "grep" | "search_file_content" | "grep_search" | "codebase_search" | "text_search" => {
            "search"
        }
        "webfetch" | "web_fetch" | "fetch" | "fetch_webpage" => "web_fetch",
        "websearch" | "web_search" | "google_web_search" | "web_search_call" => "web_search",
        "task" | "agent" | "subagent" | "runsubagent" => "subagent",
        "todowrite" | "update_plan" | "write_todos" | "todo_write" | "manage_todo_list" => "todo",
        _ => return n.to_string(),
    };
    common.to_string()
}

/// Standard base64 (RFC 4648 §4, with padding): what OSC 52 carries to the clipboard
/// (`memtrail browse`) and what a CSP hash-source holds (`memtrail export --format html`).
pub fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A session title from `text` (a first prompt, or an agent's own title): each line's
/// whitespace collapsed to single spaces, blank lines dropped, the lines kept apart by `\n`, cut
/// to `max_chars` characters (the `\n`s counted) ending with `…` when cut. The lines stay apart
/// so that the store's redaction, which runs after the adapter, still finds a secret that
/// starts a line of the prompt (`password: …`, `DB_PASS=…` on a line of their own); the store
/// joins them into one line after redacting (`memtrail_runtime::redact::redact_title`).
pub fn title_text(text: &str, max_chars: usize) -> String {
    let lines: Vec<String> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect();
    let joined = lines.join("\n");
    if joined.chars().count() <= max_chars {
        return joined;
    }
    let mut out: String = joined.chars().take(max_chars.saturating_sub(1)).collect();
    if out.ends_with('\n') {
        out.pop();
    }
    out.push('…');
    out
}

/// Collapse whitespace and cut to at most `max_chars` characters (adding `…` when cut).
/// Used for titles and one-line previews.
pub fn one_line(text: &str, max_chars: usize) -> String {
    let collapsed: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max_chars {
        return collapsed;
    }
    let mut out: String = collapsed
        .chars()
        .take(max_chars.saturating_sub(1))
        .collect();
    out.push('…');
    out
}

/// Parse an RFC 3339 / ISO-8601 UTC timestamp (`2026-02-23T13:19:38.123Z`, with or without
/// fraction, `Z` or `±hh:mm` offset) into milliseconds since the Unix epoch. `None` if it does not
/// parse.
pub fn parse_rfc3339_ms(s: &str) -> Option<i64> {
    let b = s.trim().as_bytes();
    if b.len() < 19 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = std::str::from_utf8(b.get(r)?).ok()?;
        if !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b[4] != b'-' || b[7] != b'-' || !(b[10] == b'T' || b[10] == b't' || b[10] == b' ') {
        return None;
    }
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut i = 19;
    let mut ms = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let frac = std::str::from_utf8(&b[start..i]).ok()?;
        let mut digits: String = frac.chars().take(3).collect();
        while digits.len() < 3 {
            digits.push('0');
        }
        ms = digits.parse().ok()?;
    }
    let offset_min = match b.get(i) {
        None | Some(b'Z') | Some(b'z') => 0,
        Some(&sign @ (b'+' | b'-')) => {
            let oh = num(i + 1..i + 3)?;
            let om = num(i + 4..i + 6)?;
            let v = oh * 60 + om;
            if sign == b'+' { v } else { -v }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + se - offset_min * 60;
    Some(secs * 1000 + ms)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339() {
        assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339_ms("1970-01-02T00:00:01.5Z"), Some(86_401_500));
        // 2026-02-23 is day 20507 since the epoch (2026-01-01 is 20454, +31 Jan +22).
        assert_eq!(
            parse_rfc3339_ms("2026-02-23T13:19:38.123Z"),
            Some((20_507 * 86_400 + 13 * 3600 + 19 * 60 + 38) * 1000 + 123)
        );
        assert_eq!(
            parse_rfc3339_ms("1970-01-01T01:00:00+01:00"),
            Some(0),
            "offsets are applied"
        );
        assert_eq!(parse_rfc3339_ms("yesterday"), None);
    }

    #[test]
    fn merge_dedups_tool_calls_and_text() {
        let call = |id: &str, out: Option<&str>| {
            Part::ToolCall(ToolCall {
                id: id.into(),
                name: "Bash".into(),
                tool: "shell".into(),
                input: serde_json::json!({"command": "ls"}),
                output: out.map(str::to_string),
                is_error: false,
                exit_code: None,
            })
        };
        let mut a = Message {
            id: "m".into(),
            role: Role::Assistant,
            kind: Kind::Text,
            parts: vec![Part::Text { text: "hi".into() }],
            timestamp: None,
            model: None,
        };
        let b = Message {
            parts: vec![Part::Text { text: "hi".into() }, call("t1", None)],
            ..a.clone()
        };
        a.merge(b);
        a.merge(Message {
            parts: vec![call("t1", Some("ok")), call("t2", None)],
            ..a.clone()
        });
        assert_eq!(a.parts.len(), 3);
        assert_eq!(a.kind, Kind::ToolCall);
        assert_eq!(a.tool_calls().next().unwrap().output.as_deref(), Some("ok"));
    }

    #[test]
    fn tool_vocabulary() {
        assert_eq!(normalize_tool_name("Edit"), "edit");
        assert_eq!(normalize_tool_name("apply_patch"), "edit");
        assert_eq!(normalize_tool_name("editFiles"), "edit");
        assert_eq!(normalize_tool_name("write_file"), "write");
        assert_eq!(normalize_tool_name("mcp__github__get_issue"), "mcp");
        assert_eq!(normalize_tool_name("SomethingNew"), "SomethingNew");
    }
}

/// Format milliseconds since the Unix epoch as RFC 3339 UTC with millisecond precision
/// (`2026-02-23T13:19:38.123Z`).
pub fn format_rfc3339_ms(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let milli = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// The proleptic Gregorian date `(year, month, day)` of a day count since 1970-01-01
/// (inverse of [`days_from_civil`]).
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod time_tests {
    use super::*;
    #[test]
    fn format_roundtrip() {
        assert_eq!(format_rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        let s = "2026-02-23T13:19:38.123Z";
        assert_eq!(format_rfc3339_ms(parse_rfc3339_ms(s).unwrap()), s);
        assert_eq!(
            format_rfc3339_ms(parse_rfc3339_ms("2024-02-29T23:59:59Z").unwrap()),
            "2024-02-29T23:59:59.000Z"
        );
    }
}

/// A JSONL line as readers take it: without a trailing `\r` (CRLF files) and a leading UTF-8
/// BOM; `None` when nothing but whitespace is left (a blank line: nothing to read, nothing wrong).
pub fn trim_line(line: &[u8]) -> Option<&[u8]> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    line.iter()
        .any(|b| !b.is_ascii_whitespace())
        .then_some(line)
}

/// Parse a transcript line that must be a JSON object (its first non-space byte is `{`: a
/// derived struct would also accept an array), repairing it once with [`repair_json_line`] when
/// it does not parse. `None` means malformed: the reader counts it and goes on.
///
/// A line nested deeper than serde_json parses (128 levels: a tool's result an agent stored
/// whole) is read with every value below [`LINE_DEPTH_KEPT`] levels as `null`
/// ([`flatten_deep_json`]): the message it carries is kept, not dropped for a field memtrail
/// does not read.
pub fn parse_object_line<T: serde::de::DeserializeOwned>(line: &[u8]) -> Option<T> {
    if line.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    parse_json_doc(line).ok()
}

/// Parse a JSON document (a whole-file transcript, a journal's line) as [`parse_object_line`]
/// reads a line, whatever its first byte: repaired once with [`repair_json_line`] when it does
/// not parse, and read with every value below [`LINE_DEPTH_KEPT`] levels as `null` when it
/// nests deeper than serde_json parses.
///
/// Errors: serde_json's error for `bytes` as they are, when none of the three reads parses.
pub fn parse_json_doc<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    serde_json::from_slice(bytes).or_else(|e| {
        let repaired = repair_json_line(bytes);
        if let Some(fixed) = &repaired
            && let Ok(v) = serde_json::from_slice(fixed)
        {
            return Ok(v);
        }
        flatten_deep_json(repaired.as_deref().unwrap_or(bytes), LINE_DEPTH_KEPT)
            .and_then(|flat| serde_json::from_slice(&flat).ok())
            .ok_or(e)
    })
}

/// How many levels of objects and arrays [`parse_object_line`] keeps of a line nested deeper
/// than serde_json's limit (128).
pub const LINE_DEPTH_KEPT: usize = 100;

/// `line` (JSON text) with each object or array that opens at depth `max` (the top-level value
/// is at depth 0) written as `null`, the rest byte for byte; `None` when none is that deep.
/// Strings are skipped whole (brackets and escaped quotes in them are text); the scan is one
/// pass and keeps no stack, so a hostile line of millions of `[` costs its length.
pub fn flatten_deep_json(line: &[u8], max: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(line.len());
    let mut depth = 0usize;
    // Within a value being cut: the depth at which it opened.
    let mut cutting: Option<usize> = None;
    let mut in_string = false;
    let mut escaped = false;
    let mut cut_any = false;
    for &b in line {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            if cutting.is_none() {
                out.push(b);
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                if cutting.is_none() && depth == max {
                    cutting = Some(depth);
                    cut_any = true;
                    out.extend_from_slice(b"null");
                }
                depth += 1;
                if cutting.is_some() {
                    continue;
                }
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if let Some(at) = cutting {
                    if depth == at {
                        cutting = None;
                    }
                    continue;
                }
            }
            _ => {}
        }
        if cutting.is_none() {
            out.push(b);
        }
    }
    cut_any.then_some(out)
}

/// Make a JSON line that failed to parse readable, losing as little as possible: invalid UTF-8
/// sequences become U+FFFD, and `\u` escapes of lone UTF-16 surrogates (what JavaScript's
/// `JSON.stringify` writes when a string was cut inside an emoji) become `\ufffd`. Returns `None`
/// when there was nothing to repair (the line is broken in some other way).
pub fn repair_json_line(line: &[u8]) -> Option<Vec<u8>> {
    let text = String::from_utf8_lossy(line);
    let mut changed = matches!(text, std::borrow::Cow::Owned(_));
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let hex4 = |at: usize| -> Option<u32> {
        let s = std::str::from_utf8(b.get(at..at + 4)?).ok()?;
        u32::from_str_radix(s, 16).ok()
    };
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        if b.get(i + 1) != Some(&b'u') {
            // Any other escape: copy both bytes so that `\\u…` stays a literal backslash.
            out.extend_from_slice(&b[i..(i + 2).min(b.len())]);
            i += 2;
            continue;
        }
        match hex4(i + 2) {
            Some(hi @ 0xD800..=0xDBFF) => {
                let low = if b.get(i + 6) == Some(&b'\\') && b.get(i + 7) == Some(&b'u') {
                    hex4(i + 8)
                } else {
                    None
                };
                if matches!(low, Some(0xDC00..=0xDFFF)) {
                    out.extend_from_slice(&b[i..i + 12]);
                    i += 12;
                } else {
                    let _ = hi;
                    out.extend_from_slice(b"\\ufffd");
                    changed = true;
                    i += 6;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                out.extend_from_slice(b"\\ufffd");
                changed = true;
                i += 6;
            }
            _ => {
                out.extend_from_slice(&b[i..(i + 6).min(b.len())]);
                i += 6;
            }
        }
    }
    if changed { Some(out) } else { None }
}

#[cfg(test)]
mod depth_tests {
    use super::{flatten_deep_json, parse_object_line};
    use serde_json::{Value, json};

    fn nested(levels: usize, leaf: &str) -> String {
        format!("{}{leaf}{}", "[".repeat(levels), "]".repeat(levels))
    }

    /// Values opening at the cut depth (the line's object at 0) become `null`; strings holding brackets, quotes and
    /// backslashes are copied as they are; a line within the depth is left alone.
    #[test]
    fn values_below_the_depth_become_null_and_strings_stay_whole() {
        // The strings: `x]}"[` and `{[\"}` (a backslash, then a quote).
        let line = br#"{"a":{"b":[1,{"c":"x]}\"["}],"s":"{[\\\"}"},"t":"keep"}"#;
        assert!(serde_json::from_slice::<Value>(line).is_ok());
        assert_eq!(flatten_deep_json(line, 9), None);
        let cut = flatten_deep_json(line, 3).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&cut).unwrap(),
            json!({"a": {"b": [1, null], "s": "{[\\\"}"}, "t": "keep"})
        );
        let cut = flatten_deep_json(line, 1).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&cut).unwrap(),
            json!({"a": null, "t": "keep"})
        );
    }

    /// A transcript line whose unread field nests past serde_json's 128 levels is read, its text
    /// kept (attack review: the line was counted malformed and its prompt lost); one of a
    /// million levels costs one pass.
    #[test]
    fn a_line_nested_past_the_parsers_limit_keeps_its_message() {
        for levels in [100, 130, 200, 1_000_000] {
            let line = format!(
                r#"{{"type":"user","text":"deepcase{levels}","toolUseResult":{}}}"#,
                nested(levels, "1")
            );
            let v: Value = parse_object_line(line.as_bytes()).expect("read");
            assert_eq!(v["text"], format!("deepcase{levels}"));
        }
        // A whole-file transcript (VS Code's chat session, Cline's task: an array) with such a
        // field is read the same way (a review: the session was lost, retried every import).
        let doc = format!(
            r#"{{"requests":[{{"message":{{"text":"deepdoc"}}}}],"x":{}}}"#,
            nested(150, "1")
        );
        let v: Value = super::parse_json_doc(doc.as_bytes()).expect("read");
        assert_eq!(v["requests"][0]["message"]["text"], "deepdoc");
        let array = format!(r#"[{{"say":"deeptask"}},{}]"#, nested(150, "2"));
        let v: Value = super::parse_json_doc(array.as_bytes()).expect("read");
        assert_eq!(v[0]["say"], "deeptask");
        // A lone surrogate is still repaired, and a broken document still fails.
        let v: Value = super::parse_json_doc(br#"{"t":"cut \ud83d"}"#).unwrap();
        assert_eq!(v["t"], "cut \u{fffd}");
        assert!(super::parse_json_doc::<Value>(b"{\"t\":").is_err());
        // Broken past the depth too: still malformed.
        let broken = format!(r#"{{"text":"x","r":{}"#, nested(300, "1"));
        assert!(parse_object_line::<Value>(broken.trim_end_matches(']').as_bytes()).is_none());
    }
}

#[cfg(test)]
mod repair_tests {
    use super::repair_json_line;

    fn parse(b: &[u8]) -> serde_json::Value {
        serde_json::from_slice(b).unwrap()
    }

    #[test]
    fn lone_surrogates_and_bad_utf8_are_replaced() {
        let lone_high = br#"{"t":"cut here \ud83d"}"#;
        assert!(serde_json::from_slice::<serde_json::Value>(lone_high).is_err());
        assert_eq!(
            parse(&repair_json_line(lone_high).unwrap())["t"],
            "cut here \u{fffd}"
        );
        let lone_low = br#"{"t":"\ude00 x"}"#;
        assert_eq!(
            parse(&repair_json_line(lone_low).unwrap())["t"],
            "\u{fffd} x"
        );
        let pair = br#"{"t":"ok \ud83d\ude00 \ud83d"}"#;
        assert_eq!(
            parse(&repair_json_line(pair).unwrap())["t"],
            "ok \u{1F600} \u{fffd}"
        );
        let literal = br#"{"t":"a \\ud83d b"}"#;
        assert_eq!(
            repair_json_line(literal),
            None,
            "an escaped backslash is not an escape"
        );
        let bad_utf8 = b"{\"t\":\"caf\xe9 \xff\"}";
        assert_eq!(
            parse(&repair_json_line(bad_utf8).unwrap())["t"],
            "caf\u{fffd} \u{fffd}"
        );
        assert_eq!(repair_json_line(br#"{"t": truncated"#), None);
    }

    #[test]
    fn object_lines_are_trimmed_parsed_and_repaired() {
        use super::{parse_object_line, trim_line};
        assert_eq!(trim_line(b"  \r"), None);
        assert_eq!(
            trim_line(b"\xEF\xBB\xBF{\"a\":1}\r"),
            Some(&b"{\"a\":1}"[..])
        );
        let v: serde_json::Value = parse_object_line(br#"{"t":"cut \ud83d"}"#).unwrap();
        assert_eq!(v["t"], "cut \u{fffd}");
        assert_eq!(parse_object_line::<serde_json::Value>(b"[1,2]"), None);
        assert_eq!(
            parse_object_line::<serde_json::Value>(br#"{"t": cut"#),
            None
        );
    }
}
