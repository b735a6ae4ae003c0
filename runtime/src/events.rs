//! Events: what happened in a session, in one vocabulary for every agent, extracted from the
//! normalized messages and tool calls (so imported sessions get them too).
//!
//! Extraction is per message and stateless ([`extract`]); the store keeps a message's events
//! next to it (re-extracted when a late tool result arrives, deleted with the message on a
//! rewind). Correlations that need more than one message (an error later resolved, a retry
//! loop, the current task list) are computed from the stored events when they are read
//! ([`correlate`]), never from a process's memory, so they hold with one process per hook and
//! with parallel tool calls.

use memtrail_adapters::{Agent, Message};
use serde::{Deserialize, Serialize};

/// What an event is about. Stored as its `as_str` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// A file read, edited or written. `subject`: the path.
    File,
    /// A task created, updated or done. `subject`: the task text.
    Task,
    /// Plan mode entered or a plan approved. `subject`: the plan (first line).
    Plan,
    /// A user prompt. `subject`: the prompt text.
    Prompt,
    /// A decision the user stated ("don't…", "use X instead") or answered. `subject`: the decision.
    Decision,
    /// A git action (commit, push, checkout, merge, …). `subject`: commit message or ref.
    Git,
    /// A tool error or non-zero exit. `subject`: the tool and its target; `detail`: the error.
    Error,
    /// An error of an earlier call resolved by a later success of the same tool on the same target
    /// (derived by [`correlate`]).
    ErrorResolved,
    /// The same call three or more times in a row (derived by [`correlate`]).
    Retry,
    /// A rule file read (CLAUDE.md, AGENTS.md, GEMINI.md, .cursorrules, …). `subject`: the path.
    Rule,
    /// A sub-agent launched or finished. `subject`: its description.
    Subagent,
    /// A skill used. `subject`: the skill name.
    Skill,
    /// An MCP tool used. `subject`: `server/tool`.
    Mcp,
    /// A URL or an issue reference (`#123`, `owner/repo#123`). `subject`: the reference.
    Reference,
    /// A note an agent asked memtrail to keep (MCP `remember`). `subject`: the note.
    Note,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::File => "file",
            Category::Task => "task",
            Category::Plan => "plan",
            Category::Prompt => "prompt",
            Category::Decision => "decision",
            Category::Git => "git",
            Category::Error => "error",
            Category::ErrorResolved => "error_resolved",
            Category::Retry => "retry",
            Category::Rule => "rule",
            Category::Subagent => "subagent",
            Category::Skill => "skill",
            Category::Mcp => "mcp",
            Category::Reference => "reference",
            Category::Note => "note",
        }
    }

    /// The category named `s` (as [`Category::as_str`] writes it).
    pub fn parse(s: &str) -> Option<Category> {
        ALL_CATEGORIES.iter().copied().find(|c| c.as_str() == s)
    }
}

/// Every category, in declaration order.
pub const ALL_CATEGORIES: [Category; 15] = [
    Category::File,
    Category::Task,
    Category::Plan,
    Category::Prompt,
    Category::Decision,
    Category::Git,
    Category::Error,
    Category::ErrorResolved,
    Category::Retry,
    Category::Rule,
    Category::Subagent,
    Category::Skill,
    Category::Mcp,
    Category::Reference,
    Category::Note,
];

/// One event. Priority: 1 critical (unresolved error, decision, open task), 2 high (file
/// edited/written, last prompt, plan), 3 normal (git, sub-agent, rule, resolved error),
/// 4 low (file read, reference, MCP/skill use).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub category: Category,
    /// The verb within the category: file `read|edited|written|deleted`; task
    /// `created|updated|done`; plan `entered|approved`; prompt `submitted`; decision `stated|answered`;
    /// git `commit|push|checkout|merge|rebase|reset|other`; error `tool|exit`; error_resolved
    /// `resolved`; retry `loop`; rule `read`; subagent `launched|finished`; skill `used`;
    /// mcp `used`; reference `url|issue`; note `kept`.
    pub action: String,
    /// 1 (critical) … 4 (low).
    pub priority: u8,
    /// The main thing (a path, a task, a commit message, a URL, …), at most 500 bytes.
    pub subject: String,
    /// More text (an error message, line counts `+3 -1`, a task status), at most 2000 bytes.
    pub detail: Option<String>,
    /// The tool call this event came from, if any.
    pub call_id: Option<String>,
    /// The normalized tool name (see `memtrail_adapters::normalize_tool_name`), if any.
    pub tool: Option<String>,
    /// When, in milliseconds since the Unix epoch (the message's time).
    pub ts: Option<i64>,
}

/// An event as stored: with its session, message and order in the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// The store's row id (stable order within a session together with `seq`).
    pub id: i64,
    /// The message's position in its session (`messages.seq`).
    pub seq: i64,
    /// The message's own id (`messages.ext_id`).
    pub message_id: String,
    #[serde(flatten)]
    pub event: Event,
}

/// The events of one message of a session of `agent`, in the order they happened. Pure and
/// deterministic; never panics on odd inputs.
pub fn extract(agent: Agent, msg: &Message) -> Vec<Event> {
    let _ = (agent, msg);
    Vec::new()
}

/// The derived events (error resolved, retry loops) of a session's stored events, which must
/// be in session order (`seq`, then `id`). Returned in session order, each placed at the event
/// that completes it.
pub fn correlate(events: &[StoredEvent]) -> Vec<StoredEvent> {
    let _ = events;
    Vec::new()
}
