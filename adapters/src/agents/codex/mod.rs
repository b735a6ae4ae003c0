//! Codex CLI: paths, discovery, hook payloads (`hooks.json` events and the legacy `notify`
//! program) and the rollout reader.
//!
//! Sources: `docs/agents/codex.md` (files, `notify`, hooks, rollouts) and
//! `docs/agents/codex.md#transcript-format` (rollout lines, `notify` payload), checked
//! against upstream `openai/codex`: `codex-rs/protocol/src/models.rs` (`ResponseItem`,
//! `InternalChatMessageMetadataPassthrough`), `codex-rs/protocol/src/items.rs` (`TurnItem`),
//! `codex-rs/protocol/src/protocol.rs` (`EventMsg`, `RolloutItem`), `codex-rs/rollout/src/policy.rs`
//! (which records are persisted in `legacy` and `paginated` history modes),
//! `codex-rs/hooks/src/legacy_notify.rs` and `codex-rs/hooks/schema/generated/*.schema.json`.
//!
//! # Rollout format
//!
//! A session (Codex says *thread*) is one append-only JSONL file,
//! `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl` (archived ones in
//! `$CODEX_HOME/archived_sessions/`). Every line is `{"timestamp", "ordinal"?, "type",
//! "payload"}`; `type` is `session_meta` (first line: thread `id`, `cwd`, `cli_version`, `git`),
//! `turn_context` (per model request: `turn_id`, `model`, `cwd`), `response_item` (what the model
//! saw: messages, reasoning, tool calls and outputs), `event_msg` (the UI stream), `compacted`,
//! and a few newer bookkeeping kinds.
//!
//! Codex writes most things twice, and which copies exist depends on the version:
//!
//! - **legacy history** (≤ 0.1xx, e.g. the 0.104 fixtures): `response_item`s plus
//!   `event_msg` `user_message` (the clean prompt), `agent_message`, `agent_reasoning`,
//!   `patch_apply_end`, `mcp_tool_call_end`, …;
//! - **paginated history** (0.15x+, e.g. 0.171): `response_item`s carrying
//!   `internal_chat_message_metadata_passthrough` (`turn_id`, `create_time`,
//!   `content_item_kinds`, the *provenance* of each content entry: `user.text`,
//!   `environments.environment_context`, `agents_md.instructions`, …) plus `event_msg`
//!   `item_completed` with a `TurnItem` (`UserMessage`, `AgentMessage`, `Reasoning`,
//!   `CommandExecution`, …); no `user_message` / `agent_message` events at all.
//!
//! [`CodexReader`] reads both without knowing which one it has, and stores each prompt, answer
//! and reasoning summary exactly once (see its docs for the rules).

use crate::model::{
    Agent, Batch, HookEvent, Kind, LineReader, Message, Part, Record, Role, SessionRef, ToolCall,
    civil_from_days, normalize_tool_name, parse_rfc3339_ms, title_text,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------------
// Paths (`docs/agents/codex.md#paths`)
// ---------------------------------------------------------------------------------------------

/// The Codex home: `$CODEX_HOME` when set and non-empty (a relative value is taken relative to
/// the current directory, as Codex does), else `~/.codex`. Read from the environment at call
/// time.
///
/// One resolver with the installer's: [`paths::Locations`].
pub fn config_dir() -> PathBuf {
    locations().config_dir
}

/// Where live rollouts are: `<home>/sessions/YYYY/MM/DD/rollout-*.jsonl`.
pub fn sessions_dir() -> PathBuf {
    config_dir().join("sessions")
}

/// Where archived rollouts are: `<home>/archived_sessions/` (flat).
pub fn archived_sessions_dir() -> PathBuf {
    config_dir().join("archived_sessions")
}

/// The user config (`notify`, `[mcp_servers.*]`, hook trust): `<home>/config.toml`.
pub fn config_toml_path() -> PathBuf {
    locations().config_toml
}

/// The user hooks file: `<home>/hooks.json` (`docs/agents/codex.md#paths`).
pub fn hooks_json_path() -> PathBuf {
    locations().hooks_json
}

/// memtrail's user skill: `<home>/skills/memtrail/SKILL.md` (`$CODEX_HOME/skills`, which
/// Codex reads besides `$HOME/.agents/skills`, `docs/agents/codex.md#what-memtrail-registers`; not
/// the latter, where Gemini CLI would take it for its own: see [`registration`]).
pub fn skill_path() -> PathBuf {
    locations().skill
}

/// True when the Codex home exists (the installer adds a `PATH` check for `codex`).
pub fn detect() -> bool {
    config_dir().is_dir()
}

// ---------------------------------------------------------------------------------------------
// Discovery and identity (`docs/agents/codex.md#session-identity-and-discovery`)
// ---------------------------------------------------------------------------------------------

/// How many directory levels below `sessions/` discovery descends (`YYYY/MM/DD` is 3).
const DISCOVER_MAX_DEPTH: usize = 4;

/// Every Codex rollout for `memtrail import`: [`discover_in`] of [`config_dir`].
pub fn discover() -> std::io::Result<Vec<PathBuf>> {
    discover_in(&config_dir())
}

/// Every rollout under the Codex home `home`: first `sessions/**/rollout-*.jsonl` (up to 4
/// levels deep), then `archived_sessions/**/rollout-*.jsonl`, each group sorted by path (which
/// is chronological, the file names start with the local start time). Missing folders give an
/// empty list.
///
/// Errors: `sessions/` or `archived_sessions/` exists but cannot be listed. Unreadable folders
/// below them are skipped, so one bad folder does not stop an import.
pub fn discover_in(home: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for root in [home.join("sessions"), home.join("archived_sessions")] {
        let mut found = Vec::new();
        match crate::paths::list_dir(&root) {
            Ok(entries) => walk_entries(entries, 0, &mut found),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        crate::paths::sort_paths(&mut found);
        out.extend(found);
    }
    Ok(out)
}

/// Folders are listed through `paths::list_dir`: `memtrail status` keeps their listings.
fn walk_rollouts(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = crate::paths::list_dir(dir) else {
        return;
    };
    walk_entries(entries, depth, out);
}

fn walk_entries(entries: Vec<crate::paths::Listed>, depth: usize, out: &mut Vec<PathBuf>) {
    for entry in entries {
        let path = entry.path();
        if entry.is_dir_entry() {
            if depth < DISCOVER_MAX_DEPTH {
                walk_rollouts(path, depth + 1, out);
            }
        } else if is_rollout_name(path) {
            out.push(path.to_path_buf());
        }
    }
}

/// `rollout-….jsonl`.
fn is_rollout_name(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(".jsonl"))
}

/// How much of a rollout [`identify`] reads to find the `session_meta` line (its
/// `base_instructions` alone is ~20 KB in current versions).
const IDENTIFY_HEAD_BYTES: u64 = 1024 * 1024;

/// Which session (thread) a rollout file holds.
///
/// - `external_id`: `payload.id` of the first line (`session_meta`; the very first rollout
///   format had a bare `{"id", "timestamp", "instructions"}` first line, read as well), else the
///   thread id in the file name (`rollout-<YYYY-MM-DDThh-mm-ss>-<thread id>.jsonl`; for a
///   reverted thread `…-<thread id>_<rollout id>.jsonl`, the part before `_`).
/// - `parent_external_id`: for a sub-agent thread, `payload.parent_thread_id`, else
///   `payload.source.subagent.thread_spawn.parent_thread_id`.
///
/// Only the first line is read, at most 1 MiB; a first line cut by that limit is searched for a
/// plain `"id":"…"`.
///
/// Errors: the file cannot be opened or read, or no id is found in the file nor in its name
/// (`InvalidData`).
pub fn identify(path: &Path) -> std::io::Result<SessionRef> {
    let mut head = Vec::new();
    std::fs::File::open(path)?
        .take(IDENTIFY_HEAD_BYTES)
        .read_to_end(&mut head)?;
    let from_name = thread_id_from_file_name(path);
    let (id, parent) = match head_session(&head) {
        HeadId::Parsed { id, parent } => (id.or(from_name), parent),
        HeadId::Cut(id) => (from_name.or(id), None),
    };
    let Some(external_id) = id else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("no Codex session id in {}", path.display()),
        ));
    };
    Ok(SessionRef {
        agent: Agent::Codex,
        external_id,
        parent_external_id: parent,
    })
}

enum HeadId {
    /// The first line parsed: its session id and parent thread id, if any.
    Parsed {
        id: Option<String>,
        parent: Option<String>,
    },
    /// The first line was cut or unreadable: an id found by a plain search.
    Cut(Option<String>),
}

fn head_session(head: &[u8]) -> HeadId {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let line = match head.iter().position(|&b| b == b'\n') {
        Some(i) => &head[..i],
        None => head,
    };
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if let Ok(Value::Object(first)) = serde_json::from_slice::<Value>(line) {
        let meta = match first.get("payload") {
            Some(Value::Object(p)) => p,
            _ => &first,
        };
        let id = str_field(meta, "id").map(str::to_string);
        let parent = str_field(meta, "parent_thread_id")
            .or_else(|| {
                meta.get("source")?
                    .get("subagent")?
                    .get("thread_spawn")?
                    .get("parent_thread_id")?
                    .as_str()
                    .filter(|s| !s.is_empty())
            })
            .map(str::to_string);
        return HeadId::Parsed { id, parent };
    }
    HeadId::Cut(find_plain_string(line, b"\"id\":\""))
}

/// The value of the first `"key":"value"` (given as the needle `"key":"`) in raw bytes, if it
/// has no escapes.
fn find_plain_string(hay: &[u8], needle: &[u8]) -> Option<String> {
    let at = hay.windows(needle.len()).position(|w| w == needle)?;
    let rest = &hay[at + needle.len()..];
    let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    if rest[end] != b'"' || end == 0 {
        return None;
    }
    std::str::from_utf8(&rest[..end]).ok().map(str::to_string)
}

/// The thread id in a rollout file name: `rollout-<YYYY-MM-DDThh-mm-ss>-<id>.jsonl` →
/// `<id>`; `…-<id>_<rollout id>.jsonl` → `<id>`. `None` for other names.
pub fn thread_id_from_file_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix("rollout-")?.strip_suffix(".jsonl")?;
    // `YYYY-MM-DDThh-mm-ss-` is 20 bytes.
    let b = rest.as_bytes();
    let ts_ok = b.len() > 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b'-'
        && b[16] == b'-'
        && b[19] == b'-';
    let id = if ts_ok { &rest[20..] } else { rest };
    let id = id.split('_').next().unwrap_or(id);
    if id.is_empty() {
        None
    } else {
        Some(id.to_string())
    }
}

/// How a Codex file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// Line by line from a byte cursor with a [`LineReader`] ([`CodexReader`]).
    Lines,
    /// Whole file with a `DocReader`. Codex has no such format.
    Doc,
}

/// How `path` is read: every Codex rollout is JSONL, so always [`SourceKind::Lines`].
pub fn source_kind(_path: &Path) -> SourceKind {
    SourceKind::Lines
}

/// A fresh [`CodexReader`] for one ingest of one rollout.
pub fn transcript_reader() -> Box<dyn LineReader> {
    Box::new(CodexReader::new())
}

// ---------------------------------------------------------------------------------------------
// Rollout reader (`docs/agents/codex.md#transcript-format`)
// ---------------------------------------------------------------------------------------------

/// Envelope `type`s that carry no conversation content (counted in `skipped_known`):
/// `world_state` (environment snapshot), `inter_agent_communication*`, `token_usage_record`,
/// `retained_context`, `security_risk_score`, `realtime_item` (newer rollouts, see
/// `codex-rs/rollout/src/policy.rs`).
const SKIPPED_ENVELOPES: &[&str] = &[
    "world_state",
    "inter_agent_communication",
    "inter_agent_communication_metadata",
    "token_usage_record",
    "retained_context",
    "security_risk_score",
    "realtime_item",
];

/// `event_msg` types that carry nothing the reader needs (the conversation comes from the
/// `response_item`s; these are token counts, UI progress, begin/end markers, approvals, …).
const SKIPPED_EVENTS: &[&str] = &[
    "token_count",
    "agent_reasoning_raw_content",
    "agent_reasoning_section_break",
    "context_compacted",
    "entered_review_mode",
    "exited_review_mode",
    "exec_command_begin",
    "terminal_interaction",
    "patch_apply_begin",
    "patch_apply_updated",
    "mcp_tool_call_begin",
    "web_search_begin",
    "web_search_end",
    "image_generation_begin",
    "image_generation_end",
    "view_image_tool_call",
    "turn_diff",
    "plan_update",
    "error",
    "warning",
    "stream_error",
    "background_event",
    "session_configured",
    "item_started",
    "item_updated",
    "thread_goal_updated",
    "thread_settings_applied",
    "thread_name_updated",
    "sub_agent_activity",
    "undo_started",
    "undo_completed",
    "shutdown_complete",
    "deprecation_notice",
    "model_reroute",
    "get_history_entry_response",
    "mcp_list_tools_response",
    "list_custom_prompts_response",
    "list_skills_response",
    "mcp_startup_update",
    "mcp_startup_complete",
    "exec_approval_request",
    "apply_patch_approval_request",
    "request_user_input",
    "request_permissions",
    "elicitation_request",
    "guardian_assessment",
    "hook_started",
    "hook_completed",
    "thread_queue_changed",
    "raw_response_item",
];

/// `TurnItem` types of `item_completed` that are read for failures only or not at all (their
/// content is also in `response_item`s).
const SKIPPED_ITEMS: &[&str] = &[
    "HookPrompt",
    "Plan",
    "WebSearch",
    "ImageView",
    "ImageGeneration",
    "CollabAgentToolCall",
    "SubAgentActivity",
    "ContextCompaction",
    "Sleep",
    "Extension",
    "FunctionCallOutput",
    "EnteredReviewMode",
    "ExitedReviewMode",
    "UserAgentControl",
];

/// `response_item` types that carry no conversation content: provider-side compaction blobs,
/// undo snapshots, tool lists, request controls.
const SKIPPED_RESPONSE_ITEMS: &[&str] = &[
    "compaction",
    "compaction_summary",
    "context_compaction",
    "compaction_trigger",
    "ghost_snapshot",
    "additional_tools",
    "configuration_update",
    "other",
];

/// The `response_item` types of the very first rollout format, where items were written bare
/// (no `type`/`payload` envelope).
const BARE_ITEM_TYPES: &[&str] = &[
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
];

/// Starts of text Codex injects as a user-role message (environment, instructions, skills,
/// AGENTS.md, shell-command echoes, notifications). Such text is never a user prompt.
const INJECTED_PREFIXES: &[&str] = &[
    "<environment_context",
    "<user_instructions",
    "<permissions instructions",
    "<permissions_instructions",
    "<developer_instructions",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<skill>",
    "<skills_instructions",
    "<user_shell_command",
    "<turn_aborted",
    "<subagent_notification",
    "<collaboration_mode",
    "<personality_spec",
    "<model_switch",
    "<apps_instructions",
    "<plugins_instructions",
    "<multi_agent_mode",
    "<hook_prompt",
    "<realtime_conversation",
    "<codex_internal",
];

/// Old Codex prefixed the prompt with instructions and this heading; the prompt is what follows.
const USER_MESSAGE_BEGIN: &str = "## My request for Codex:";

/// At most this many failed call ids and user-prompt ids are kept in the saved state.
const STATE_LIST_CAP: usize = 64;

/// Sources of a double-written item, for [`Dedup`].
const SRC_RESPONSE: usize = 0;
const SRC_EVENT: usize = 1;
const SRC_ITEM: usize = 2;

/// Counts the writes of one kind of item (user prompt, assistant text, reasoning summary) within
/// a turn, per source (`response_item`, legacy `event_msg`, `item_completed`). Each source writes
/// the items of a turn in the same order, so the *n*-th write of any source is the *n*-th item:
/// it is emitted when it is the first write of that item and skipped as a duplicate otherwise.
/// This does not compare texts (the redacted 0.104 fixtures write different placeholders for the
/// two copies of one answer).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct Dedup {
    /// Items emitted so far in the turn.
    n: u32,
    /// Writes seen per source.
    seen: [u32; 3],
}

impl Dedup {
    /// Count a write from `src`; true when it is the first write of its item.
    fn first(&mut self, src: usize) -> bool {
        self.seen[src] = self.seen[src].saturating_add(1);
        if self.seen[src] > self.n {
            self.n = self.seen[src];
            true
        } else {
            false
        }
    }
}

/// What [`CodexReader`] carries from one ingest of a file to the next (through
/// [`LineReader::save_state`]), so that a reader started at any line boundary continues exactly.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct ReaderState {
    /// The current turn key: the turn id, or `seq-<n>` for rollouts without turn ids; empty
    /// before the first turn.
    turn: String,
    /// `turn` is the agent's own turn id.
    explicit: bool,
    /// Turns started without an id so far (numbers the `seq-<n>` keys).
    seq: u64,
    /// Something was emitted in the current turn.
    touched: bool,
    /// Assistant content was emitted since the last user prompt of the turn.
    answered: bool,
    /// The assistant message being filled after the latest prompt (0 = the first; a text or
    /// reasoning after a tool call starts the next one).
    step: u32,
    /// The current assistant message holds a tool call.
    step_has_call: bool,
    users: Dedup,
    texts: Dedup,
    thoughts: Dedup,
    /// Web searches and image generations without an id in this turn.
    synth: u32,
    /// `compacted` records seen in the file.
    compactions: u32,
    /// Inter-agent messages without an id seen in the file.
    agent_msgs: u32,
    /// The model of the latest `turn_context`.
    model: Option<String>,
    /// The file uses the first, envelope-less format.
    bare: bool,
    /// Call ids whose command / patch / MCP call was reported failed before its output arrived.
    failed: Vec<String>,
    /// Ids of the emitted user prompts, oldest first (for `thread_rolled_back`).
    heads: Vec<String>,
    /// Exit codes reported by `exec_command_end` / `CommandExecution` before the call's output
    /// arrived (call id, code; at most 64).
    exits: Vec<(String, i64)>,
}

/// Reader for one Codex rollout (`rollout-*.jsonl`); implements [`LineReader`] with
/// [`LineReader::save_state`]. Format: `docs/agents/codex.md#transcript-format` and the
/// upstream files named in the [module docs](self).
///
/// # Messages and ids
///
/// Conversation is grouped by **turn** (`task_started.turn_id`, also `turn_context.turn_id`).
/// For rollouts without turn ids (≤ 0.4x) the reader numbers turns itself (`seq-<n>`): a prompt
/// that arrives after the assistant answered starts a new one. Ids are deterministic:
///
/// - a user prompt: `<turn>:user:<k>` (`k` = 0 for the turn's first prompt, 1 for a prompt sent
///   while the turn runs, …); role `User`, one text part;
/// - the assistant's work after prompt `k`, in transcript order, as Claude Code's is stored (one
///   message per model response): `<turn>:assistant:<k>`, then `<turn>:assistant:<k>.1`,
///   `….2`, …: a message's parts are, in file order, reasoning summaries ([`Part::Thinking`]),
///   assistant texts ([`Part::Text`]: `phase: commentary` progress notes *and* the
///   `final_answer`, all kept) and tool calls ([`Part::ToolCall`] with their outputs); a text or
///   reasoning that comes after a tool call starts the next message. So text → call → output →
///   text → call → output → text is three messages `[text, call]`, `[text, call]`, `[text]`.
///   Assistant content before the turn's first prompt (what an auto-compaction at the start of a
///   turn writes) is `<turn>:assistant:pre` (`….pre.1`, …), stored before the prompt. The
///   `model` is the turn's `turn_context.model`. Later lines of the same message, in a later
///   ingest, are emitted again under the same id and merged by the store ([`Message::merge`]);
/// - a `compacted` record with a non-empty `message`: `compaction:<n>` (`n` counts the file's
///   `compacted` records from 1), role `System`, kind [`Kind::Summary`];
/// - an inter-agent message (`response_item` `agent_message`, from a sub-agent): its `id`, else
///   `agent-message:<n>`; role `System`.
///
/// # Where each thing is read, and the double writes
///
/// - **Prompts**: `event_msg` `user_message` (legacy; `kind` other than `plain` skipped),
///   `item_completed` `UserMessage` (paginated), and `response_item` user messages whose
///   `internal_chat_message_metadata_passthrough.content_item_kinds` marks content as
///   `user.text` (only those entries are kept). Other user-role `response_item`s (environment
///   context, AGENTS.md, skills, …) and every `developer` message are never prompts; neither is
///   text starting with an injected tag (`<environment_context>`, `<user_instructions>`,
///   `<permissions instructions>`, `# AGENTS.md instructions`, `<skill>`, …). A prompt with only
///   images becomes `[image]`.
/// - **Assistant text**: `response_item` assistant messages (`output_text` joined),
///   `event_msg` `agent_message`, `item_completed` `AgentMessage`.
/// - **Reasoning**: each summary entry of a `response_item` `reasoning`, each `event_msg`
///   `agent_reasoning`, each `summary_text` of `item_completed` `Reasoning`. Encrypted and raw
///   reasoning content is not read.
///
/// Each of these is written by two (sometimes three) sources; the *n*-th write of a kind within
/// a turn is the *n*-th item whichever source wrote it, so only the first write of each item is
/// emitted and the others are skipped (counted in `skipped_known`). Texts are not compared.
///
/// - **Tool calls** come only from `response_item`s: `function_call` (`arguments` parsed as JSON,
///   kept as a string when not JSON; an MCP `namespace` joined to the name, [`function_name`]),
///   `custom_tool_call` (`apply_patch`; `input`, the raw patch,
///   as a JSON string), `local_shell_call` (`action`), `tool_search_call`, `web_search_call` (id
///   = its `id`, else `<turn>:web_search:<n>`; input = `action`; no output),
///   `image_generation_call` (input `{revised_prompt}`, output `[image]`, never the image).
///   Names go through [`normalize_tool_name`] (plus `shell_command`, `container.exec` →
///   `shell`; `grep_files` → `search`).
/// - **Tool outputs**: `function_call_output` / `custom_tool_call_output` / `tool_search_output`
///   by `call_id`. The output is a string, an array of content items (`input_text` texts
///   concatenated, images as `[image]`), or an object (`content`, `success`). A string that is
///   the legacy `{"output": …, "metadata": {"exit_code": …}}` JSON is unwrapped. `is_error` is set
///   when the exit code is not 0 (`metadata.exit_code`, or a `Process exited with code N` /
///   `Exit code: N` header line before `Output:`), when `success` is `false`, or when an earlier
///   `exec_command_end` (exit code ≠ 0), `patch_apply_end` (`success: false`),
///   `mcp_tool_call_end` (`Err`, `isError`) or `item_completed` `CommandExecution` /
///   `FileChange` / `McpToolCall` / `DynamicToolCall` (failed, declined, exit code ≠ 0) reported
///   that call id as failed. An output is attached to its call when the call is in the same
///   batch, else emitted as [`Record::ToolResult`]: a call left without output (an interrupted
///   turn) is completed when its output shows up in a later ingest.
/// - `event_msg` `thread_rolled_back` `{num_turns: n}` emits [`Record::Rewind`] to the *n*-th last
///   user prompt (the last 64 prompts are remembered).
///
/// # Everything else
///
/// `session_meta`, `turn_context`, `task_started`/`task_complete`/`turn_aborted`, token counts,
/// duplicate writes and the types in the skip lists are counted in `skipped_known`. Unknown
/// envelope, `event_msg`, `response_item` and `TurnItem` types: `skipped_unknown`. Lines that are
/// not a JSON object: `malformed`. Nothing panics and no line fails the file.
///
/// [`Batch::meta`]: `project_dir` from `session_meta.cwd` / `turn_context.cwd` (latest),
/// `git_branch` from `session_meta.git.branch`, `agent_version` from `session_meta.cli_version`,
/// `model` from `turn_context.model` (or `session_meta.model`), `title` from the batch's first
/// prompt (at most 80 characters), `started_at`/`updated_at` from the lines that produced
/// content.
#[derive(Debug, Default)]
pub struct CodexReader {
    st: ReaderState,
    /// Message id → index of its record in the current batch (checked before use).
    emitted: HashMap<String, usize>,
    /// Tool call id → id of the message holding the call (current batch).
    call_owner: HashMap<String, String>,
}

impl CodexReader {
    /// A reader with no state (the start of a file).
    pub fn new() -> Self {
        Self::default()
    }

    // ---- turns ----

    fn reset_turn(&mut self, key: String, explicit: bool) {
        let st = &mut self.st;
        st.turn = key;
        st.explicit = explicit;
        st.touched = false;
        st.answered = false;
        st.step = 0;
        st.step_has_call = false;
        st.users = Dedup::default();
        st.texts = Dedup::default();
        st.thoughts = Dedup::default();
        st.synth = 0;
    }

    /// A turn boundary (`task_started`): the given turn id, or a new numbered turn.
    fn begin_turn(&mut self, id: Option<&str>) {
        match id {
            Some(id) => {
                if !(self.st.explicit && self.st.turn == id) {
                    self.reset_turn(id.to_string(), true);
                }
            }
            None => self.begin_seq_turn(),
        }
    }

    fn begin_seq_turn(&mut self) {
        self.st.seq = self.st.seq.saturating_add(1);
        let key = format!("seq-{}", self.st.seq);
        self.reset_turn(key, false);
    }

    /// `turn_context.turn_id`: switch to it unless it is the current turn, or the current turn
    /// is a numbered one that already holds content (then its id is kept, so one turn is never
    /// split across two keys).
    fn context_turn(&mut self, id: &str) {
        if self.st.turn == id && self.st.explicit {
            return;
        }
        if !self.st.explicit && self.st.touched {
            return;
        }
        self.reset_turn(id.to_string(), true);
    }

    fn ensure_turn(&mut self) {
        if self.st.turn.is_empty() {
            self.begin_seq_turn();
        }
    }

    // ---- records ----

    /// Insert `msg` as a new record, or merge it into this batch's record with the same id.
    fn push_message(&mut self, msg: Message, out: &mut Batch) {
        if let Some(existing) = self.record_mut(&msg.id, out) {
            existing.merge(msg);
            return;
        }
        self.emitted.insert(msg.id.clone(), out.records.len());
        out.records.push(Record::Message(msg));
    }

    fn record_mut<'a>(&self, id: &str, out: &'a mut Batch) -> Option<&'a mut Message> {
        let idx = *self.emitted.get(id)?;
        match out.records.get_mut(idx) {
            Some(Record::Message(m)) if m.id == id => Some(m),
            _ => None,
        }
    }

    /// One part of the current assistant message: a text or reasoning that follows a tool call
    /// starts a new message (transcript order, as Claude Code's one message per model response).
    fn assistant_part(&mut self, part: Part, ts: Option<i64>, out: &mut Batch) {
        self.ensure_turn();
        let is_call = matches!(part, Part::ToolCall(_));
        if !is_call && self.st.step_has_call {
            self.st.step = self.st.step.saturating_add(1);
            self.st.step_has_call = false;
        }
        self.st.step_has_call |= is_call;
        // Before the turn's first prompt (e.g. what an auto-compaction at the start of the turn
        // writes): ids of their own, so that the answer after the prompt is not merged into a
        // message stored before the prompt.
        let base = match self.st.users.n {
            0 => format!("{}:assistant:pre", self.st.turn),
            n => format!("{}:assistant:{}", self.st.turn, n - 1),
        };
        let id = match self.st.step {
            0 => base,
            j => format!("{base}.{j}"),
        };
        self.st.touched = true;
        self.st.answered = true;
        if let Part::ToolCall(c) = &part {
            self.call_owner.insert(c.id.clone(), id.clone());
        }
        note_time(out, ts);
        let kind = Message::infer_kind(std::slice::from_ref(&part));
        self.push_message(
            Message {
                id,
                role: Role::Assistant,
                kind,
                parts: vec![part],
                timestamp: ts,
                model: self.st.model.clone(),
            },
            out,
        );
    }

    /// A user prompt from `src`; false when it is injected text, empty or a duplicate write.
    fn user_prompt(&mut self, src: usize, text: &str, ts: Option<i64>, out: &mut Batch) -> bool {
        let Some(text) = clean_prompt(text) else {
            return false;
        };
        self.ensure_turn();
        if !self.st.explicit && self.st.answered {
            self.begin_seq_turn();
        }
        if !self.st.users.first(src) {
            return false;
        }
        let id = format!("{}:user:{}", self.st.turn, self.st.users.n - 1);
        self.st.touched = true;
        self.st.answered = false;
        self.st.step = 0;
        self.st.step_has_call = false;
        self.st.heads.push(id.clone());
        cap_front(&mut self.st.heads);
        note_time(out, ts);
        if out.meta.title.is_none() {
            out.meta.title = Some(title_text(&text, 80));
        }
        self.push_message(
            Message {
                id,
                role: Role::User,
                kind: Kind::Text,
                parts: vec![Part::Text { text }],
                timestamp: ts,
                model: None,
            },
            out,
        );
        true
    }

    /// An assistant text from `src`; false when empty or a duplicate write.
    fn assistant_text(&mut self, src: usize, text: &str, ts: Option<i64>, out: &mut Batch) -> bool {
        let text = text.trim();
        if text.is_empty() {
            return false;
        }
        self.ensure_turn();
        if !self.st.texts.first(src) {
            return false;
        }
        self.assistant_part(
            Part::Text {
                text: text.to_string(),
            },
            ts,
            out,
        );
        true
    }

    /// A reasoning summary entry from `src`; false when empty or a duplicate write.
    fn thinking(&mut self, src: usize, text: &str, ts: Option<i64>, out: &mut Batch) -> bool {
        let text = text.trim();
        if text.is_empty() {
            return false;
        }
        self.ensure_turn();
        if !self.st.thoughts.first(src) {
            return false;
        }
        self.assistant_part(
            Part::Thinking {
                text: text.to_string(),
            },
            ts,
            out,
        );
        true
    }

    fn tool_call(
        &mut self,
        id: String,
        name: String,
        input: Value,
        output: Option<String>,
        ts: Option<i64>,
        out: &mut Batch,
    ) {
        let tool = codex_tool(&name);
        self.assistant_part(
            Part::ToolCall(ToolCall {
                id,
                name,
                tool,
                input,
                output,
                is_error: false,
                exit_code: None,
            }),
            ts,
            out,
        );
    }

    /// Attach a tool output to its call in this batch, or emit a [`Record::ToolResult`].
    fn tool_result(
        &mut self,
        call_id: String,
        output: String,
        is_error: bool,
        exit_code: Option<i64>,
        ts: Option<i64>,
        out: &mut Batch,
    ) {
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
            call.exit_code = exit_code;
            return;
        }
        out.records.push(Record::ToolResult {
            call_id,
            output,
            is_error,
            exit_code,
            timestamp: ts,
        });
    }

    fn mark_failed(&mut self, call_id: Option<&str>) {
        let Some(id) = call_id.filter(|s| !s.is_empty()) else {
            return;
        };
        if !self.st.failed.iter().any(|f| f == id) {
            self.st.failed.push(id.to_string());
            cap_front(&mut self.st.failed);
        }
    }

    /// Remember the exit code an `exec_command_end` / `CommandExecution` reported for `call_id`.
    fn note_exit(&mut self, call_id: Option<&str>, code: Option<i64>) {
        let (Some(id), Some(code)) = (call_id.filter(|s| !s.is_empty()), code) else {
            return;
        };
        self.st.exits.retain(|(c, _)| c != id);
        self.st.exits.push((id.to_string(), code));
        if self.st.exits.len() > STATE_LIST_CAP {
            let extra = self.st.exits.len() - STATE_LIST_CAP;
            self.st.exits.drain(..extra);
        }
    }

    fn take_exit(&mut self, call_id: &str) -> Option<i64> {
        let i = self.st.exits.iter().position(|(c, _)| c == call_id)?;
        Some(self.st.exits.remove(i).1)
    }

    fn take_failed(&mut self, call_id: &str) -> bool {
        match self.st.failed.iter().position(|f| f == call_id) {
            Some(i) => {
                self.st.failed.remove(i);
                true
            }
            None => false,
        }
    }

    // ---- line kinds ----

    fn session_meta(&mut self, p: &Map<String, Value>, out: &mut Batch) {
        if let Some(cwd) = str_field(p, "cwd") {
            out.meta.project_dir = Some(cwd.to_string());
        }
        if let Some(branch) = p
            .get("git")
            .and_then(|g| g.get("branch"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            out.meta.git_branch = Some(branch.to_string());
        }
        if let Some(v) = str_field(p, "cli_version") {
            out.meta.agent_version = Some(v.to_string());
        }
        if let Some(model) = str_field(p, "model") {
            out.meta.model = Some(model.to_string());
            if self.st.model.is_none() {
                self.st.model = Some(model.to_string());
            }
        }
    }

    fn turn_context(&mut self, p: &Map<String, Value>, out: &mut Batch) {
        if let Some(cwd) = str_field(p, "cwd") {
            out.meta.project_dir = Some(cwd.to_string());
        }
        if let Some(model) = str_field(p, "model") {
            out.meta.model = Some(model.to_string());
            self.st.model = Some(model.to_string());
        }
        if let Some(id) = str_field(p, "turn_id") {
            self.context_turn(id);
        }
    }

    /// A `response_item`; true when it produced content.
    fn response_item(&mut self, p: &Map<String, Value>, ts: Option<i64>, out: &mut Batch) -> Seen {
        let kind = str_field(p, "type").unwrap_or("");
        match kind {
            "message" => {
                let content = p.get("content");
                match str_field(p, "role").unwrap_or("") {
                    "assistant" => {
                        let text = join_content_text(content);
                        self.assistant_text(SRC_RESPONSE, &text, ts, out).into()
                    }
                    "user" => {
                        let kinds = p
                            .get("internal_chat_message_metadata_passthrough")
                            .and_then(|m| m.get("content_item_kinds"))
                            .and_then(Value::as_array);
                        let text = match kinds {
                            Some(kinds) => user_text_by_kind(content, kinds),
                            None if self.st.bare => user_text_all(content),
                            None => return Seen::Known,
                        };
                        self.user_prompt(SRC_RESPONSE, &text, ts, out).into()
                    }
                    _ => Seen::Known,
                }
            }
            "reasoning" => {
                let mut any = false;
                if let Some(Value::Array(summary)) = p.get("summary") {
                    for s in summary {
                        if let Some(t) = s.get("text").and_then(Value::as_str) {
                            any |= self.thinking(SRC_RESPONSE, t, ts, out);
                        }
                    }
                }
                any.into()
            }
            "function_call" => {
                let Some(id) = str_field(p, "call_id").or_else(|| str_field(p, "id")) else {
                    return Seen::Malformed;
                };
                let name = function_name(p);
                let input = match p.get("arguments") {
                    Some(Value::String(s)) => {
                        serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
                    }
                    Some(v) => v.clone(),
                    None => Value::Null,
                };
                self.tool_call(id.to_string(), name, input, None, ts, out);
                Seen::Content
            }
            "custom_tool_call" => {
                let Some(id) = str_field(p, "call_id").or_else(|| str_field(p, "id")) else {
                    return Seen::Malformed;
                };
                let name = str_field(p, "name").unwrap_or("").to_string();
                let input = p.get("input").cloned().unwrap_or(Value::Null);
                self.tool_call(id.to_string(), name, input, None, ts, out);
                Seen::Content
            }
            "local_shell_call" => {
                let Some(id) = str_field(p, "call_id").or_else(|| str_field(p, "id")) else {
                    return Seen::Malformed;
                };
                let input = p.get("action").cloned().unwrap_or(Value::Null);
                self.tool_call(id.to_string(), "local_shell".into(), input, None, ts, out);
                Seen::Content
            }
            "tool_search_call" => {
                let Some(id) = str_field(p, "call_id").or_else(|| str_field(p, "id")) else {
                    return Seen::Malformed;
                };
                let input = p.get("arguments").cloned().unwrap_or(Value::Null);
                self.tool_call(id.to_string(), "tool_search".into(), input, None, ts, out);
                Seen::Content
            }
            "web_search_call" => {
                self.ensure_turn();
                let id = match str_field(p, "id") {
                    Some(id) => id.to_string(),
                    None => {
                        self.st.synth = self.st.synth.saturating_add(1);
                        format!("{}:web_search:{}", self.st.turn, self.st.synth)
                    }
                };
                let input = p.get("action").cloned().unwrap_or_else(|| json!({}));
                self.tool_call(id, "web_search".into(), input, None, ts, out);
                Seen::Content
            }
            "image_generation_call" => {
                self.ensure_turn();
                let id = match str_field(p, "id") {
                    Some(id) => id.to_string(),
                    None => {
                        self.st.synth = self.st.synth.saturating_add(1);
                        format!("{}:image_generation:{}", self.st.turn, self.st.synth)
                    }
                };
                let prompt = p.get("revised_prompt").cloned().unwrap_or(Value::Null);
                let output = str_field(p, "result").map(|_| "[image]".to_string());
                self.tool_call(
                    id,
                    "image_generation".into(),
                    json!({ "revised_prompt": prompt }),
                    output,
                    ts,
                    out,
                );
                Seen::Content
            }
            "function_call_output" | "custom_tool_call_output" | "tool_search_output" => {
                let Some(call_id) = str_field(p, "call_id").map(str::to_string) else {
                    return Seen::Malformed;
                };
                let (text, failed, code) = if kind == "tool_search_output" {
                    let tools = p.get("tools").cloned().unwrap_or(Value::Null);
                    (tools.to_string(), false, None)
                } else {
                    output_text(p.get("output").unwrap_or(&Value::Null))
                };
                // The end event's own `exit_code` first, the output's after.
                let code = self.take_exit(&call_id).or(code);
                let is_error = self.take_failed(&call_id) | failed | code.is_some_and(|c| c != 0);
                self.tool_result(call_id, text, is_error, code, ts, out);
                Seen::Content
            }
            "agent_message" => {
                let text = join_content_text(p.get("content"));
                let text = text.trim();
                if text.is_empty() {
                    return Seen::Known;
                }
                let id = match str_field(p, "id") {
                    Some(id) => id.to_string(),
                    None => {
                        self.st.agent_msgs = self.st.agent_msgs.saturating_add(1);
                        format!("agent-message:{}", self.st.agent_msgs)
                    }
                };
                note_time(out, ts);
                self.push_message(
                    Message {
                        id,
                        role: Role::System,
                        kind: Kind::Text,
                        parts: vec![Part::Text {
                            text: text.to_string(),
                        }],
                        timestamp: ts,
                        model: None,
                    },
                    out,
                );
                Seen::Content
            }
            k if SKIPPED_RESPONSE_ITEMS.contains(&k) => Seen::Known,
            _ => Seen::Unknown,
        }
    }

    /// An `event_msg`.
    fn event_msg(&mut self, p: &Map<String, Value>, ts: Option<i64>, out: &mut Batch) -> Seen {
        let kind = str_field(p, "type").unwrap_or("");
        match kind {
            "task_started" | "turn_started" => {
                self.begin_turn(str_field(p, "turn_id"));
                Seen::Known
            }
            "task_complete" | "turn_complete" | "turn_aborted" => Seen::Known,
            "user_message" => {
                if str_field(p, "kind").is_some_and(|k| k != "plain") {
                    return Seen::Known;
                }
                let mut text = str_field(p, "message").unwrap_or("").to_string();
                if text.trim().is_empty()
                    && (non_empty_array(p, "images") || non_empty_array(p, "local_images"))
                {
                    text = "[image]".into();
                }
                self.user_prompt(SRC_EVENT, &text, ts, out).into()
            }
            "agent_message" => {
                let text = str_field(p, "message").unwrap_or("");
                self.assistant_text(SRC_EVENT, text, ts, out).into()
            }
            "agent_reasoning" => {
                let text = str_field(p, "text").unwrap_or("");
                self.thinking(SRC_EVENT, text, ts, out).into()
            }
            "item_completed" => match p.get("item") {
                Some(Value::Object(item)) => self.item_completed(item, ts, out),
                _ => Seen::Malformed,
            },
            "exec_command_end" => {
                let code = p.get("exit_code").and_then(Value::as_i64);
                if code.is_some_and(|c| c != 0) {
                    self.mark_failed(str_field(p, "call_id"));
                }
                self.note_exit(str_field(p, "call_id"), code);
                Seen::Known
            }
            "patch_apply_end" => {
                if p.get("success").and_then(Value::as_bool) == Some(false) {
                    self.mark_failed(str_field(p, "call_id"));
                }
                Seen::Known
            }
            "mcp_tool_call_end" => {
                let result = p.get("result");
                let failed = result.and_then(|r| r.get("Err")).is_some()
                    || result.and_then(|r| r.get("Ok")).is_some_and(|ok| {
                        ok.get("isError")
                            .or_else(|| ok.get("is_error"))
                            .and_then(Value::as_bool)
                            == Some(true)
                    });
                if failed {
                    self.mark_failed(str_field(p, "call_id"));
                }
                Seen::Known
            }
            "thread_rolled_back" => {
                let n = p.get("num_turns").and_then(Value::as_u64).unwrap_or(0);
                let len = self.st.heads.len() as u64;
                if n == 0 || n > len {
                    return Seen::Known;
                }
                let idx = (len - n) as usize;
                let target = self.st.heads[idx].clone();
                self.st.heads.truncate(idx);
                out.records.push(Record::Rewind { message_id: target });
                // Later writes must come after the rewind, not merge into records it deletes.
                self.emitted.clear();
                self.call_owner.clear();
                Seen::Content
            }
            k if SKIPPED_EVENTS.contains(&k)
                || k.ends_with("_delta")
                || k.starts_with("collab_")
                || k.starts_with("realtime_") =>
            {
                Seen::Known
            }
            _ => Seen::Unknown,
        }
    }

    /// The `TurnItem` of an `item_completed` event (`codex-rs/protocol/src/items.rs`).
    fn item_completed(
        &mut self,
        item: &Map<String, Value>,
        ts: Option<i64>,
        out: &mut Batch,
    ) -> Seen {
        let kind = str_field(item, "type").unwrap_or("");
        let status = str_field(item, "status").unwrap_or("");
        let bad_status = matches!(status, "failed" | "declined");
        match kind {
            "UserMessage" => {
                let mut text = String::new();
                let mut images = false;
                if let Some(Value::Array(content)) = item.get("content") {
                    for c in content {
                        match c.get("type").and_then(Value::as_str) {
                            Some("text") => {
                                if let Some(t) = c.get("text").and_then(Value::as_str) {
                                    text.push_str(t);
                                }
                            }
                            Some("image" | "local_image") => images = true,
                            _ => {}
                        }
                    }
                }
                if text.trim().is_empty() && images {
                    text = "[image]".into();
                }
                self.user_prompt(SRC_ITEM, &text, ts, out).into()
            }
            "AgentMessage" => {
                let text = join_content_text(item.get("content"));
                self.assistant_text(SRC_ITEM, &text, ts, out).into()
            }
            "Reasoning" => {
                let mut any = false;
                if let Some(Value::Array(summary)) = item.get("summary_text") {
                    for s in summary {
                        if let Some(t) = s.as_str() {
                            any |= self.thinking(SRC_ITEM, t, ts, out);
                        }
                    }
                }
                any.into()
            }
            "CommandExecution" => {
                // Persisted snake_case (0.15x+ rollouts); the protocol type is camelCase.
                let exit = item
                    .get("exit_code")
                    .or_else(|| item.get("exitCode"))
                    .and_then(Value::as_i64);
                if bad_status || exit.is_some_and(|c| c != 0) {
                    self.mark_failed(str_field(item, "id"));
                }
                self.note_exit(str_field(item, "id"), exit);
                Seen::Known
            }
            "FileChange" => {
                if bad_status {
                    self.mark_failed(str_field(item, "id"));
                }
                Seen::Known
            }
            "McpToolCall" => {
                if bad_status || item.get("error").is_some_and(|e| !e.is_null()) {
                    self.mark_failed(str_field(item, "id"));
                }
                Seen::Known
            }
            "DynamicToolCall" => {
                if bad_status || item.get("success").and_then(Value::as_bool) == Some(false) {
                    self.mark_failed(str_field(item, "id"));
                }
                Seen::Known
            }
            k if SKIPPED_ITEMS.contains(&k) => Seen::Known,
            _ => Seen::Unknown,
        }
    }

    /// A `compacted` record: its `message` as a summary.
    fn compacted(&mut self, p: &Map<String, Value>, ts: Option<i64>, out: &mut Batch) -> Seen {
        self.st.compactions = self.st.compactions.saturating_add(1);
        let text = str_field(p, "message").unwrap_or("").trim();
        if text.is_empty() {
            return Seen::Known;
        }
        note_time(out, ts);
        let id = format!("compaction:{}", self.st.compactions);
        self.push_message(
            Message {
                id,
                role: Role::System,
                kind: Kind::Summary,
                parts: vec![Part::Text {
                    text: text.to_string(),
                }],
                timestamp: ts,
                model: None,
            },
            out,
        );
        Seen::Content
    }
}

/// What became of one line.
enum Seen {
    Content,
    Known,
    Unknown,
    Malformed,
}

impl From<bool> for Seen {
    fn from(content: bool) -> Self {
        if content { Seen::Content } else { Seen::Known }
    }
}

impl LineReader for CodexReader {
    fn line(&mut self, line: &[u8], out: &mut Batch) {
        out.stats.lines += 1;
        let Some(line) = crate::model::trim_line(line) else {
            out.stats.skipped_known += 1;
            return;
        };
        let Some(Value::Object(mut obj)) = crate::model::parse_object_line::<Value>(line) else {
            out.stats.malformed += 1;
            return;
        };
        let ts = obj
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(parse_rfc3339_ms);
        let kind = str_field(&obj, "type").unwrap_or("").to_string();
        let seen = match obj.remove("payload") {
            Some(Value::Object(p)) => match kind.as_str() {
                "session_meta" => {
                    self.session_meta(&p, out);
                    Seen::Known
                }
                "turn_context" => {
                    self.turn_context(&p, out);
                    Seen::Known
                }
                "response_item" => self.response_item(&p, ts, out),
                "event_msg" => self.event_msg(&p, ts, out),
                "compacted" => self.compacted(&p, ts, out),
                k if SKIPPED_ENVELOPES.contains(&k) => Seen::Known,
                _ => Seen::Unknown,
            },
            Some(_) if SKIPPED_ENVELOPES.contains(&kind.as_str()) => Seen::Known,
            Some(_) => match kind.as_str() {
                "session_meta" | "turn_context" | "response_item" | "event_msg" | "compacted" => {
                    Seen::Malformed
                }
                _ => Seen::Unknown,
            },
            // The first rollout format: bare items, a bare meta line, state records.
            None if BARE_ITEM_TYPES.contains(&kind.as_str()) => {
                self.st.bare = true;
                self.response_item(&obj, ts, out)
            }
            None if kind.is_empty() && str_field(&obj, "id").is_some() => {
                self.session_meta(&obj, out);
                Seen::Known
            }
            None if obj.get("record_type").and_then(Value::as_str) == Some("state") => Seen::Known,
            None => Seen::Unknown,
        };
        match seen {
            Seen::Content => {}
            Seen::Known => out.stats.skipped_known += 1,
            Seen::Unknown => out.stats.skipped_unknown += 1,
            Seen::Malformed => out.stats.malformed += 1,
        }
    }

    /// Forget which records are in the current batch (the runtime takes the batch after
    /// `finish`); the turn state stays.
    fn finish(&mut self, _out: &mut Batch) {
        self.emitted.clear();
        self.call_owner.clear();
    }

    /// The turn, dedup counters, model, pending failures and prompt ids (a few hundred bytes to
    /// a few KB; the two lists are capped at 64 entries).
    fn save_state(&self) -> Option<Value> {
        serde_json::to_value(&self.st).ok()
    }

    /// Restore [`LineReader::save_state`]'s value; an unreadable value is ignored (the reader
    /// then starts fresh, as at the top of a file).
    fn restore_state(&mut self, state: &Value) {
        if let Ok(st) = ReaderState::deserialize(state) {
            self.st = st;
        }
    }
}

/// memtrail's tool vocabulary for a Codex tool name: [`normalize_tool_name`], plus Codex names it
/// does not know (`shell_command`, `container.exec`, `unified_exec` → `shell`; `grep_files` →
/// `search`).
fn codex_tool(name: &str) -> String {
    match name {
        "shell_command" | "container.exec" | "unified_exec" => "shell".into(),
        "grep_files" => "search".into(),
        _ => normalize_tool_name(name),
    }
}

/// The name of a `function_call`: its `name`, joined to its `namespace` when that is an MCP
/// server's (`mcp__<server>`). Codex 0.171 offers each MCP server's tools as a namespace and
/// writes a call as `{"name": "search", "namespace": "mcp__memtrail"}`, where earlier versions
/// wrote `{"name": "mcp__memtrail__search"}`: both give `mcp__memtrail__search`, so that an MCP
/// call is not taken for a built-in tool of the same name (`search`, `read_file`, …). Other
/// namespaces (`multi_agent_v1`) keep the bare name.
fn function_name(p: &Map<String, Value>) -> String {
    let name = str_field(p, "name").unwrap_or("");
    match str_field(p, "namespace") {
        Some(ns) if ns.starts_with("mcp__") && !name.starts_with("mcp__") => {
            format!("{ns}__{name}")
        }
        _ => name.to_string(),
    }
}

/// The prompt in `text`: what follows an old `## My request for Codex:` heading, trimmed; `None`
/// when empty or injected context.
fn clean_prompt(text: &str) -> Option<String> {
    let mut t = text;
    if let Some(i) = t.rfind(USER_MESSAGE_BEGIN) {
        t = &t[i + USER_MESSAGE_BEGIN.len()..];
    }
    let t = t.trim();
    if t.is_empty() || INJECTED_PREFIXES.iter().any(|p| t.starts_with(p)) {
        return None;
    }
    Some(t.to_string())
}

/// The text entries of a content array (`input_text`, `output_text`, `text`, `Text`, anything
/// with a string `text`) concatenated; a string content as it is.
fn join_content_text(content: Option<&Value>) -> String {
    let mut out = String::new();
    match content {
        Some(Value::String(s)) => out.push_str(s),
        Some(Value::Array(items)) => {
            for c in items {
                if let Some(t) = c.get("text").and_then(Value::as_str) {
                    out.push_str(t);
                }
            }
        }
        _ => {}
    }
    out
}

/// The user-authored text of a paginated user `response_item`: the entries whose
/// `content_item_kinds` entry (aligned by index) is `user.text`; `[image]` when there is no text
/// but a user image.
fn user_text_by_kind(content: Option<&Value>, kinds: &[Value]) -> String {
    let Some(Value::Array(items)) = content else {
        return String::new();
    };
    let mut text = String::new();
    let mut image = false;
    for (i, c) in items.iter().enumerate() {
        let kind = kinds.get(i).and_then(Value::as_str).unwrap_or("");
        let ty = c.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "user.text" {
            if let Some(t) = c.get("text").and_then(Value::as_str) {
                text.push_str(t);
            }
        } else if kind.starts_with("user.") && ty == "input_image" {
            image = true;
        }
    }
    if text.trim().is_empty() && image {
        return "[image]".into();
    }
    text
}

/// Every text entry of a bare (first-format) user message; `[image]` for an image-only one.
fn user_text_all(content: Option<&Value>) -> String {
    let text = join_content_text(content);
    let image = matches!(content, Some(Value::Array(items))
        if items.iter().any(|c| c.get("type").and_then(Value::as_str) == Some("input_image")));
    if text.trim().is_empty() && image {
        return "[image]".into();
    }
    text
}

/// The text of a tool output and whether it reports a failure. See [`CodexReader`] for the
/// shapes.
fn output_text(v: &Value) -> (String, bool, Option<i64>) {
    let by_code = |text: String, flag: bool| {
        let code = header_exit_code(&text);
        let failed = flag || code.is_some_and(|c| c != 0);
        (text, failed, code)
    };
    match v {
        Value::String(s) => {
            if s.starts_with('{')
                && let Ok(Value::Object(o)) = serde_json::from_str::<Value>(s)
                && let Some(Value::String(inner)) = o.get("output")
            {
                let exit = o
                    .get("metadata")
                    .and_then(|m| m.get("exit_code"))
                    .and_then(Value::as_i64);
                return match exit {
                    Some(code) => (inner.clone(), code != 0, Some(code)),
                    None => by_code(inner.clone(), false),
                };
            }
            by_code(s.clone(), false)
        }
        Value::Array(items) => by_code(items_text(items), false),
        Value::Object(o) => {
            let failed_flag = o.get("success").and_then(Value::as_bool) == Some(false);
            let text = match (o.get("content"), o.get("content_items")) {
                (Some(Value::String(s)), _) => s.clone(),
                (_, Some(Value::Array(items))) | (Some(Value::Array(items)), _) => {
                    items_text(items)
                }
                _ => v.to_string(),
            };
            by_code(text, failed_flag)
        }
        Value::Null => (String::new(), false, None),
        other => (other.to_string(), false, None),
    }
}

/// Output content items as text: texts concatenated (a newline inserted between two texts when
/// the first does not end with one and the second does not start with one), images as
/// `[image]` on their own line.
fn items_text(items: &[Value]) -> String {
    let mut out = String::new();
    for c in items {
        let piece = match c.get("type").and_then(Value::as_str) {
            Some("input_image" | "image") => "[image]".to_string(),
            _ => match c.get("text").and_then(Value::as_str) {
                Some(t) => t.to_string(),
                None => continue,
            },
        };
        if !out.is_empty() && !out.ends_with('\n') && !piece.starts_with('\n') {
            out.push('\n');
        }
        out.push_str(&piece);
    }
    out
}

/// The exit code in the header of a Codex exec output (`Process exited with code N` for
/// `exec_command`, `Exit code: N` for `shell_command`), looked for in the lines before
/// `Output:` (at most 12).
fn header_exit_code(text: &str) -> Option<i64> {
    for line in text.lines().take(12) {
        let line = line.trim();
        if line == "Output:" {
            return None;
        }
        let num = line
            .strip_prefix("Process exited with code ")
            .or_else(|| line.strip_prefix("Exit code: "))
            .or_else(|| line.strip_prefix("Exit code:"));
        if let Some(n) = num {
            return n.trim().parse().ok();
        }
    }
    None
}

fn non_empty_array(p: &Map<String, Value>, key: &str) -> bool {
    matches!(p.get(key), Some(Value::Array(a)) if !a.is_empty())
}

/// A non-empty string field.
fn str_field<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    m.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn note_time(out: &mut Batch, ts: Option<i64>) {
    let Some(t) = ts else { return };
    let meta = &mut out.meta;
    meta.started_at = Some(meta.started_at.map_or(t, |s| s.min(t)));
    meta.updated_at = Some(meta.updated_at.map_or(t, |u| u.max(t)));
}

/// Keep the newest [`STATE_LIST_CAP`] entries.
fn cap_front(list: &mut Vec<String>) {
    if list.len() > STATE_LIST_CAP {
        let extra = list.len() - STATE_LIST_CAP;
        list.drain(..extra);
    }
}

// ---------------------------------------------------------------------------------------------
// Hooks (`docs/agents/codex.md#notify`, `docs/agents/codex.md#hooks`;
// `docs/agents/codex.md#notify`)
// ---------------------------------------------------------------------------------------------

/// Parse the stdin payload of a Codex `hooks.json` hook into a [`HookEvent`]
/// (`docs/agents/codex.md#hooks`; `codex-rs/hooks/schema/generated/*.command.input.schema.json`).
/// The payload is Claude-compatible:
///
/// - `event` ← `hook_event_name` (`SessionStart`, `UserPromptSubmit`, `PreCompact`, `Stop`, …);
/// - `session_id` ← `session_id` (the thread id; sub-agent hooks get the parent's);
/// - `transcript_path` ← `transcript_path` (may be `null`);
/// - `cwd` ← `cwd`, else `env("PWD")` (Codex runs hooks in the session's directory);
/// - `source` ← SessionStart `source` (`startup|resume|clear|compact`), Pre/PostCompact
///   `trigger` (`manual|auto`), or `reason`;
/// - `agent_transcript_path` ← `agent_transcript_path` (SubagentStop);
/// - `extra` ← the whole payload (`turn_id`, `model`, `prompt`, `last_assistant_message`, …).
///
/// A payload in the `notify` shape (`"type": "agent-turn-complete"`) is read as
/// [`parse_notify_argv`] does. `agent` is always [`Agent::Codex`]: this parser is only used for
/// `memtrail hook codex`.
///
/// Errors (a message for the hook log): the bytes are empty, not JSON, or not a JSON object.
pub fn parse_hook_payload(bytes: &[u8], env: &crate::Env) -> Result<HookEvent, crate::Error> {
    let env = |k: &str| env.var_utf8(k);
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(crate::Error::EmptyPayload);
    }
    let payload: Value = serde_json::from_slice(bytes).map_err(crate::Error::PayloadNotJson)?;
    let Value::Object(obj) = &payload else {
        return Err(crate::Error::PayloadNotObject);
    };
    if obj.get("type").and_then(Value::as_str) == Some("agent-turn-complete") {
        return Ok(notify_event(payload));
    }
    let get = |keys: &[&str]| -> Option<String> {
        keys.iter()
            .find_map(|k| str_field(obj, k))
            .map(str::to_string)
    };
    let cwd = get(&["cwd"]).or_else(|| env("PWD").filter(|p| !p.is_empty()));
    Ok(HookEvent {
        agent: Agent::Codex,
        event: get(&["hook_event_name", "hookEventName"]).unwrap_or_default(),
        session_id: get(&["session_id", "sessionId"]),
        transcript_path: get(&["transcript_path", "transcriptPath"]),
        cwd,
        source: get(&["source", "trigger", "reason"]),
        agent_transcript_path: get(&["agent_transcript_path"]),
        extra: payload,
    })
}

/// Parse the JSON that Codex's legacy `notify` program receives as its **last argv element**
/// (`docs/agents/codex.md#notify`, `codex-rs/hooks/src/legacy_notify.rs`):
/// `{"type":"agent-turn-complete","thread-id","turn-id","cwd","client"?,"input-messages":[…],
/// "last-assistant-message":…|null}`.
///
/// `event` ← `type` (`agent-turn-complete`, the only type Codex sends; others are returned as
/// they are for the caller to ignore), `session_id` ← `thread-id`, `cwd` ← `cwd`, no
/// `transcript_path` (see [`transcripts_for_event`]), `extra` ← the payload.
///
/// Errors: the argument is not JSON, not an object, or has no string `type`.
pub fn parse_notify_argv(arg: &str) -> Result<HookEvent, crate::Error> {
    let arg = arg.strip_prefix('\u{feff}').unwrap_or(arg);
    let payload: Value = serde_json::from_str(arg).map_err(crate::Error::NotifyNotJson)?;
    match &payload {
        Value::Object(o) if o.get("type").and_then(Value::as_str).is_some() => {}
        Value::Object(_) => return Err(crate::Error::NotifyNoType),
        _ => return Err(crate::Error::NotifyNotObject),
    }
    Ok(notify_event(payload))
}

fn notify_event(payload: Value) -> HookEvent {
    let get = |k: &str| {
        payload
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    HookEvent {
        agent: Agent::Codex,
        event: get("type").unwrap_or_default(),
        session_id: get("thread-id"),
        transcript_path: None,
        cwd: get("cwd"),
        source: None,
        agent_transcript_path: None,
        extra: payload,
    }
}

/// The files to ingest for a hook event: [`transcripts_for_event_in`] the Codex home
/// ([`config_dir`]).
pub fn transcripts_for_event(ev: &HookEvent) -> Vec<PathBuf> {
    transcripts_for_event_in(ev, &config_dir())
}

/// The files to ingest for `ev`, with `home` as the Codex home:
///
/// 1. the payload's `transcript_path` (and, for SubagentStop, `agent_transcript_path` after it);
/// 2. otherwise (the `notify` payload, a `null` path) the rollouts of `ev.session_id` found by
///    [`find_rollouts`].
///
/// Empty when there is neither a path nor a session id, or nothing is found.
pub fn transcripts_for_event_in(ev: &HookEvent, home: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in [&ev.transcript_path, &ev.agent_transcript_path]
        .into_iter()
        .flatten()
    {
        if !p.is_empty() {
            out.push(PathBuf::from(p));
        }
    }
    if !out.is_empty() {
        return out;
    }
    match &ev.session_id {
        Some(id) => find_rollouts(home, id),
        None => Vec::new(),
    }
}

/// How many `sessions/YYYY/MM/DD` folders [`find_rollouts`] lists at most (about 3 years).
const FIND_MAX_DAY_DIRS: usize = 1100;

/// The rollouts of thread `thread_id` under the Codex home `home`: files named
/// `rollout-…-<thread_id>.jsonl` or `rollout-…-<thread_id>_<rollout id>.jsonl`, sorted.
///
/// The search is bounded: when the id is a UUIDv7 (Codex thread ids are), its timestamp gives
/// the UTC day the session started and the day folders around it (±1 day, for the local-time
/// folder names) are looked at first; then the newest day folders, newest first, up to 1100 of
/// them, stopping at the first folder with a match; then `archived_sessions/`. An id that is not
/// a plain token (letters, digits, `-`, `_`) finds nothing.
pub fn find_rollouts(home: &Path, thread_id: &str) -> Vec<PathBuf> {
    if thread_id.is_empty()
        || !thread_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Vec::new();
    }
    let sessions = home.join("sessions");
    let matches_in = |dir: &Path| -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = match std::fs::read_dir(dir) {
            Ok(rd) => rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| name_matches(p, thread_id))
                .collect(),
            Err(_) => Vec::new(),
        };
        found.sort();
        found
    };
    if let Some(day) = uuid_v7_day(thread_id) {
        for d in [day, day - 1, day + 1] {
            let (y, m, dd) = civil_from_days(d);
            let dir = sessions
                .join(format!("{y:04}"))
                .join(format!("{m:02}"))
                .join(format!("{dd:02}"));
            let found = matches_in(&dir);
            if !found.is_empty() {
                return found;
            }
        }
    }
    let mut listed = 0usize;
    for year in sorted_subdirs_desc(&sessions) {
        for month in sorted_subdirs_desc(&year) {
            for day in sorted_subdirs_desc(&month) {
                if listed >= FIND_MAX_DAY_DIRS {
                    return matches_in(&home.join("archived_sessions"));
                }
                listed += 1;
                let found = matches_in(&day);
                if !found.is_empty() {
                    return found;
                }
            }
        }
    }
    matches_in(&home.join("archived_sessions"))
}

/// `rollout-…-<id>.jsonl` or `rollout-…-<id>_<rollout id>.jsonl`.
fn name_matches(path: &Path, id: &str) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let Some(stem) = name
        .strip_prefix("rollout-")
        .and_then(|n| n.strip_suffix(".jsonl"))
    else {
        return false;
    };
    stem.ends_with(&format!("-{id}")) || stem.contains(&format!("-{id}_"))
}

fn sorted_subdirs_desc(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect(),
        Err(_) => Vec::new(),
    };
    dirs.sort();
    dirs.reverse();
    dirs
}

/// The UTC day (days since 1970-01-01) in the timestamp of a UUIDv7
/// (`xxxxxxxx-xxxx-7xxx-…`, the first 48 bits are milliseconds since the Unix epoch).
fn uuid_v7_day(id: &str) -> Option<i64> {
    let b = id.as_bytes();
    if b.len() < 36 || b[8] != b'-' || b[13] != b'-' || b[14] != b'7' {
        return None;
    }
    let hex = format!("{}{}", &id[..8], &id[9..13]);
    let ms = i64::from_str_radix(&hex, 16).ok()?;
    Some(ms.div_euclid(86_400_000))
}

/// The stdout that adds `context` at a Codex `SessionStart` hook
/// (`docs/agents/codex.md#reply-dialect`; `session-start.command.output.schema.json`):
/// `{"hookSpecificOutput":{"hookEventName": "SessionStart","additionalContext":"<context>"}}` on
/// one line, without a trailing newline. Codex adds the text as extra developer context. Always
/// `Some`.
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

/// The marker in memtrail's `notify` command that introduces the user's own notify program,
/// kept running by memtrail: `notify = ["<memtrail>", "hook", "codex", "--then", "<prog>", "<arg>"…]`.
pub const NOTIFY_CHAIN_FLAG: &str = "--then";

/// Split the arguments Codex passed to `memtrail hook codex` (everything after `codex`): the
/// user's own notify command to run with the same payload (when install chained one with
/// [`NOTIFY_CHAIN_FLAG`]), and the JSON payload (Codex appends it as the last argument).
///
/// `["--then", "notify-send", "-a", "codex", "{…}"]` gives
/// `(Some(["notify-send", "-a", "codex", "{…}"]), Some("{…}"))`; `["{…}"]` gives `(None, Some("{…}"))`.
pub fn split_notify_args(args: &[String]) -> (Option<Vec<String>>, Option<&str>) {
    let payload = args.last().map(String::as_str);
    match args.first() {
        Some(flag) if flag == NOTIFY_CHAIN_FLAG && args.len() >= 3 => {
            (Some(args[1..].to_vec()), payload)
        }
        Some(flag) if flag == NOTIFY_CHAIN_FLAG => (None, payload.filter(|p| *p != flag)),
        _ => (None, payload),
    }
}
pub mod adapter;
pub mod paths;

/// Where the agent lives in the process environment ([`paths::Locations::resolve`]).
fn locations() -> paths::Locations {
    paths::Locations::resolve(&crate::Env::from_process())
}
pub mod registration;
