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
    /// A shell command run. `subject`: the command line; action `ok|failed`; `detail`: the exit
    /// status when known (`exit 0`, `exit 101`). Low priority; what [`correlate`] uses to see a
    /// failed command later succeed and a command repeated.
    Command,
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
            Category::Command => "command",
        }
    }

    /// The category named `s` (as [`Category::as_str`] writes it).
    pub fn parse(s: &str) -> Option<Category> {
        Some(match s {
            "file" => Category::File,
            "task" => Category::Task,
            "plan" => Category::Plan,
            "prompt" => Category::Prompt,
            "decision" => Category::Decision,
            "git" => Category::Git,
            "error" => Category::Error,
            "error_resolved" => Category::ErrorResolved,
            "retry" => Category::Retry,
            "rule" => Category::Rule,
            "subagent" => Category::Subagent,
            "skill" => Category::Skill,
            "mcp" => Category::Mcp,
            "reference" => Category::Reference,
            "note" => Category::Note,
            "command" => Category::Command,
            _ => return None,
        })
    }
}

/// Every category, in declaration order.
pub const ALL_CATEGORIES: [Category; 16] = [
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
    Category::Command,
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
    /// mcp `used`; reference `url|issue`; note `kept`; command `ok|failed`.
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

mod correlate;
/// What the running state of a snapshot ([`crate::snapshot`]) shares with [`correlate`].
pub(crate) mod correlate_keys {
    pub(crate) use super::correlate::{
        ErrKey, err_key, err_key_of, event_keys, resolves, retry_key,
    };
}
mod extract;

/// Largest `subject`, in bytes.
pub const MAX_SUBJECT: usize = 500;
/// Largest `detail`, in bytes.
pub const MAX_DETAIL: usize = 2000;

/// The events of one message of a session of `agent`, in the order they happened. Pure and
/// deterministic; never panics on odd inputs.
///
/// - a user text message (not a compaction summary) gives `prompt submitted`, a `decision stated`
///   per sentence that states one ("don't …", "use X instead", "always …", "let's go with …"), and
///   `reference url|issue` for the URLs and issue references in it (at most 8 per message);
/// - an assistant text gives its references;
/// - each tool call gives the events of its tool, by the normalized name
///   (`memtrail_adapters::normalize_tool_name`), whatever the agent: file `read|edited|written|
///   deleted` (Codex `apply_patch` names its files in the patch text, `*** Update File:`), rule
///   files read, `command ok|failed` and git actions for shell commands (argv arrays are joined,
///   `bash -lc X` gives X), tasks from todo lists (`TodoWrite`, `update_plan`, `write_todos`,
///   `todowrite`, `manage_todo_list`), plans, sub-agents, skills, MCP tools, answered questions,
///   fetched URLs, and an `error tool|exit` for a call marked as failed or whose output reports a
///   non-zero exit code.
///
/// A todo list gives one `task` event per item, its action from the item's status in that list
/// (pending → `created`, in progress → `updated`, completed or cancelled → `done`; detail: the
/// status as `pending|in_progress|completed|cancelled`); the session's current list is its latest
/// list (what the snapshot shows).
pub fn extract(agent: Agent, msg: &Message) -> Vec<Event> {
    extract::extract(agent, msg)
}

/// The derived events (error resolved, retry loops) of a session's stored events, which must
/// be in session order (`seq`, then `id`). Returned in session order, each placed at the event
/// that completes it (its `id`, `seq` and `message_id`).
///
/// - `error_resolved resolved`: an `error` whose target (a path or a command, see
///   [`error_target`]) later succeeds: a `file` event on the same path (edited/written/deleted for
///   a failed edit or write, any for a failed read; a relative path matches an absolute one
///   ending with it) or an `ok` command with the same command line. Subject and tool are the
///   error's; detail: the error's detail's first line.
/// - `retry loop`: the same call (a shell command, a read of a path, or a failing call of one tool
///   on one target) three or more times in a row among the session's calls; one event per run, at its last call, detail `N times in a row`.
pub fn correlate(events: &[StoredEvent]) -> Vec<StoredEvent> {
    correlate::correlate(events)
}

/// Whether two paths name the same file: equal, or one relative and the other an absolute path
/// ending with it (`src/a.rs` and `/home/u/p/src/a.rs`). `./` prefixes are ignored.
pub fn same_path(a: &str, b: &str) -> bool {
    correlate::same_path(a, b)
}

/// The target of an `error` event: its subject without the leading `<tool>: `.
pub fn error_target(e: &Event) -> &str {
    target_of(e.tool.as_deref(), &e.subject)
}

/// [`error_target`] of an error of tool `tool` with subject `subject`.
pub fn target_of<'a>(tool: Option<&str>, subject: &'a str) -> &'a str {
    match tool {
        Some(t) => subject
            .strip_prefix(t)
            .and_then(|r| r.strip_prefix(": "))
            .unwrap_or(subject),
        None => subject,
    }
}

/// `s` cut to at most `max` bytes on a char boundary, with `…` at the end when cut.
pub fn truncate_str(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let ell = "…";
    if max < ell.len() {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        return s[..end].to_string();
    }
    let mut end = max - ell.len();
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{ell}", &s[..end])
}

/// The exit code a shell output reports, if any (see the extraction rules in [`extract`]).
pub fn extract_exit_code(output: &str) -> Option<i64> {
    extract::exit_code(output)
}

/// The most telling line of an error output: the first that carries a failure marker
/// (`error[`, `error:`, `Error:`, `FAILED`, `FAIL `, `panicked`, `fatal:`, `Traceback`, `×`),
/// else the first that is neither agent boilerplate (Codex's `Chunk ID:`/`Wall time:`/`Process
/// exited…`, Claude's `Exit code N`, Gemini's `Command:`/`Directory:`, OpenCode's `Error: Command
/// failed: exit code N`) nor a tool's preamble (`running N tests`, `> script`, `Compiling …`,
/// `# package`, `=====`). Empty for an empty output.
pub fn error_line(detail: &str) -> String {
    let boiler = |l: &str| {
        let l = l.to_ascii_lowercase();
        l.starts_with("chunk id")
            || l.starts_with("wall time")
            || l.starts_with("original token count")
            || l.starts_with("process exited")
            || l.starts_with("exit code")
            || l == "output:"
            || l.starts_with("command:")
            || l.starts_with("directory:")
            || l.starts_with("error: command failed: exit code")
    };
    let preamble = |l: &str| {
        l.starts_with("running ")
            || l.starts_with("> ")
            || l.starts_with("Compiling ")
            || l.starts_with("# ")
            || l.starts_with("=====")
    };
    const MARKS: &[&str] = &[
        "error[",
        "error:",
        "Error:",
        "FAILED",
        "FAIL ",
        "panicked",
        "fatal:",
        "Traceback",
        "×",
    ];
    let lines: Vec<&str> = detail
        .lines()
        .map(|l| l.trim().trim_start_matches("Output:").trim())
        .filter(|l| !l.is_empty() && !boiler(l))
        .collect();
    lines
        .iter()
        .find(|l| MARKS.iter().any(|m| l.contains(m)))
        .or_else(|| lines.iter().find(|l| !preamble(l)))
        .or(lines.first())
        .map(|l| l.to_string())
        .unwrap_or_default()
}
