//! Activity figures of a store for `memtrail web`'s analytics page (issue 15): per day and
//! agent, per day and model, active time per project, tools and their failures, files most
//! edited. Answered by [`crate::read::ReadStore::analytics`]: the SQLite store reads summary
//! tables its triggers keep up to date (schema 8, `store/migrations/0008_activity.sql`), never
//! the messages themselves; PostgreSQL aggregates its tables for the range.
//!
//! Days are UTC: day `d` is the 24 hours from `d × 86 400 000` ms since the Unix epoch.
//! Messages without a time are not counted. Token usage is not here: no adapter keeps the
//! transcripts' usage fields (Claude Code's `message.usage`, Codex's `token_count`, Copilot
//! CLI's `assistant.usage`), so the store has none to count.

/// Milliseconds of a day.
pub const DAY_MS: i64 = 86_400_000;
/// Milliseconds of an activity slot: a slot with at least one message of a project counts
/// as this much active time of the project.
pub const SLOT_MS: i64 = 300_000;
/// Most rows of each ranked list ([`Analytics::projects`], [`Analytics::tools`],
/// [`Analytics::files`]).
pub const TOP: usize = 15;

/// The days asked for: `first_day` to `last_day`, both included (days since 1970-01-01 UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayRange {
    pub first_day: i64,
    pub last_day: i64,
}

impl DayRange {
    /// The first millisecond of the range (ms since the Unix epoch).
    pub fn start_ms(&self) -> i64 {
        self.first_day * DAY_MS
    }
    /// The first millisecond after the range.
    pub fn end_ms(&self) -> i64 {
        (self.last_day + 1) * DAY_MS
    }
}

/// One agent's day: main sessions started (sub-agent sessions are part of their parent's),
/// messages written (any session's, sub-agents' included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDay {
    pub day: i64,
    pub agent: String,
    pub sessions: i64,
    pub messages: i64,
}

/// One model's day: messages that name the model (the assistant's); `model` is `""` for
/// messages that name none (the user's, tool results).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelDay {
    pub day: i64,
    pub model: String,
    pub messages: i64,
}

/// A project's active time in the range: [`SLOT_MS`] per slot in which any of its sessions
/// wrote a message (slots of parallel sessions counted once). `project` is the session's
/// folder, `""` when unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectTime {
    pub project: String,
    pub active_ms: i64,
}

/// A tool by its name as the agent calls it: calls stored, and those that failed (an error
/// result or a non-zero exit). All time, not the range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolUse {
    pub name: String,
    pub calls: i64,
    pub errors: i64,
}

/// A file by the path its events name: how many times it was edited or written (file events
/// `edited` and `written`). All time, not the range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEdits {
    pub path: String,
    pub edits: i64,
}

/// The figures of [`crate::read::ReadStore::analytics`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analytics {
    /// Days of the range with a session or a message, by day then agent.
    pub agent_days: Vec<AgentDay>,
    /// Days of the range with a message, by day then model.
    pub model_days: Vec<ModelDay>,
    /// The [`TOP`] most active projects of the range, most active first.
    pub projects: Vec<ProjectTime>,
    /// The [`TOP`] most called tools, most calls first.
    pub tools: Vec<ToolUse>,
    /// The [`TOP`] most edited files, most edits first.
    pub files: Vec<FileEdits>,
}

/// `(day, name, count)` rows, as both backends' grouped queries give them.
pub type DayRows = Vec<(i64, String, i64)>;

impl Analytics {
    /// The figures from a backend's rows: sessions started and messages per (day, agent), in
    /// any order (merged into [`Analytics::agent_days`]); messages per (day, model), sorted; and
    /// the ranked lists as they are.
    pub fn from_rows(
        sessions: DayRows,
        messages: DayRows,
        models: DayRows,
        projects: Vec<ProjectTime>,
        tools: Vec<ToolUse>,
        files: Vec<FileEdits>,
    ) -> Analytics {
        let mut by: std::collections::BTreeMap<(i64, String), (i64, i64)> = Default::default();
        for (day, agent, n) in sessions {
            by.entry((day, agent)).or_default().0 += n;
        }
        for (day, agent, n) in messages {
            by.entry((day, agent)).or_default().1 += n;
        }
        Analytics {
            agent_days: by
                .into_iter()
                .map(|((day, agent), (sessions, messages))| AgentDay {
                    day,
                    agent,
                    sessions,
                    messages,
                })
                .collect(),
            model_days: models
                .into_iter()
                .map(|(day, model, messages)| ModelDay {
                    day,
                    model,
                    messages,
                })
                .collect(),
            projects,
            tools,
            files,
        }
    }
}
