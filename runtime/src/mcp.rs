//! `memtrail mcp`: a stdio MCP server (rmcp) that lets agents search past sessions.
//!
//! Tools:
//! - `search`: BM25 full-text search over every captured session, with the CLI's filters.
//!   Returns `{query, hits: [Hit]}` (see [`crate::query::Hit`]) as structured content.
//! - `get_session`: the ordered messages of one session, paged by message index. Returns
//!   [`crate::query::SessionView`] as structured content.
//! - `list_sessions`: sessions, most recent first, paged (`{sessions, offset, limit}`).
//! - `timeline`: a session's events (stored and derived), filterable by category, paged
//!   ([`crate::resume::Timeline`]).
//! - `resume_context`: a session's snapshot plus the messages most relevant to a query, packed
//!   to a token budget never exceeded ([`crate::resume::ResumeContext`]).
//! - `remember`: keep a note (a message of kind `note` and a `note` event), searchable.
//!
//! Where a session is optional, the default is the latest session of the project the server
//! runs in (its working directory, which agents set to the project).
//!
//! User errors (no such session, a bad date) come back as a tool result with `isError: true`
//! and a message the agent can act on; logging goes to stderr only (stdout is the protocol).

use crate::events::{ALL_CATEGORIES, Category};
use crate::query::{self, HL_END, HL_START, SearchFilter};
use crate::resume;
use crate::store::Store;
use crate::time::{Bound, parse_date};
use rmcp::{
    ServerHandler, ServiceExt,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig},
    schemars, tool, tool_handler, tool_router,
};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Default and largest page sizes.
const DEFAULT_SEARCH_LIMIT: u32 = 10;
const MAX_SEARCH_LIMIT: u32 = 50;
const DEFAULT_PAGE: u32 = 40;
const MAX_PAGE: u32 = 200;
/// Tool outputs in `get_session` are cut to this many bytes (the CLI shows them whole).
const MAX_TOOL_OUTPUT: usize = 4000;
const DEFAULT_SESSIONS: u32 = 20;
const MAX_SESSIONS: u32 = 100;
const DEFAULT_EVENTS: u32 = 100;
const MAX_EVENTS: u32 = 500;
/// `resume_context` budget in tokens: default and bounds.
const DEFAULT_BUDGET_TOKENS: u32 = 2000;
const MIN_BUDGET_TOKENS: u32 = 1;
const MAX_BUDGET_TOKENS: u32 = 32_000;
/// Longest note `remember` keeps, in bytes.
const MAX_NOTE_BYTES: usize = 8000;

/// Arguments of the `list_sessions` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct ListSessionsArgs {
    /// Only sessions of this agent: claude, codex, gemini, cursor, vscode or opencode.
    #[serde(default)]
    pub agent: Option<String>,
    /// Only sessions whose project directory is this absolute path or lies below it.
    #[serde(default)]
    pub project: Option<String>,
    /// How many sessions to skip (for the next page).
    #[serde(default)]
    pub offset: Option<u32>,
    /// How many sessions to return (default 20, at most 100).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Arguments of the `timeline` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct TimelineArgs {
    /// The session id (or a unique prefix). Default: the latest session of this project.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Only this category, or several separated by commas: file, task, plan, prompt, decision,
    /// git, command, error, error_resolved, retry, rule, subagent, skill, mcp, reference, note.
    /// Default: all.
    #[serde(default)]
    pub category: Option<String>,
    /// Index of the first event to return (among the filtered ones).
    #[serde(default)]
    pub offset: Option<u32>,
    /// How many events to return (default 100, at most 500).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Arguments of the `resume_context` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct ResumeContextArgs {
    /// The session whose state to restore (id or unique prefix). Default: the latest session
    /// of this project.
    #[serde(default)]
    pub session_id: Option<String>,
    /// What you are about to work on: the messages most relevant to it (BM25) are added after
    /// the snapshot. Without it, the session's latest messages are added.
    #[serde(default)]
    pub query: Option<String>,
    /// Search the whole project (this absolute directory and below) for relevant messages
    /// instead of only the session.
    #[serde(default)]
    pub project: Option<String>,
    /// Most tokens of `text` (default 2000, 1 to 32000), counted with the estimator named in
    /// the answer (`estimator`); never exceeded.
    #[serde(default)]
    pub budget_tokens: Option<u32>,
}

/// Arguments of the `remember` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct RememberArgs {
    /// The note: a fact, decision or finding worth keeping (at most 8000 bytes). Secrets are
    /// redacted before it is stored.
    pub text: String,
    /// The session to attach it to (id or unique prefix). Default: the latest session of
    /// `project`, else of this project.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The project directory (absolute) whose latest session gets the note, when no
    /// session_id is given.
    #[serde(default)]
    pub project: Option<String>,
}

/// Arguments of the `search` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct SearchArgs {
    /// What to look for: plain words (stemmed, all must match), "a quoted phrase", a prefix*,
    /// or words joined by OR. Example: `sqlite "database is locked"`.
    pub query: String,
    /// Only sessions of this agent: claude, codex, gemini, cursor, vscode or opencode.
    #[serde(default)]
    pub agent: Option<String>,
    /// Only sessions whose project directory is this absolute path or lies below it.
    #[serde(default)]
    pub project: Option<String>,
    /// Only this session (its id, or a unique prefix of it).
    #[serde(default)]
    pub session_id: Option<String>,
    /// Only messages at or after this time: YYYY-MM-DD, RFC 3339, or an age such as 7d or 12h.
    #[serde(default)]
    pub since: Option<String>,
    /// Only messages at or before this time (same forms as `since`).
    #[serde(default)]
    pub until: Option<String>,
    /// Only messages of this role: user, assistant, tool or system.
    #[serde(default)]
    pub role: Option<String>,
    /// How many hits to return (default 10, at most 50).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Arguments of the `get_session` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct GetSessionArgs {
    /// The session id from a search hit (`session_id`), or a unique prefix of it.
    pub session_id: String,
    /// Index of the first message to return (0-based; a search hit's `message_index`).
    /// Negative values count as 0.
    #[serde(default)]
    pub offset: Option<i64>,
    /// How many messages to return (default 40, at most 200).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// The MCP server. It opens the store once and serves every call from that connection.
#[derive(Clone)]
pub struct MemtrailMcp {
    db: PathBuf,
    store: Arc<Mutex<Option<Store>>>,
    tool_router: ToolRouter<Self>,
}

fn tool_error(msg: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(msg.into())])
}

fn highlight_markdown(s: &str) -> String {
    s.replace([HL_START, HL_END], "**")
}

#[tool_router]
impl MemtrailMcp {
    /// A server over the store at `db` (opened at the first call).
    pub fn new(db: PathBuf) -> Self {
        Self {
            db,
            store: Arc::new(Mutex::new(None)),
            tool_router: Self::tool_router(),
        }
    }

    /// The tools this server offers (name, description, input schema), as `tools/list` gives
    /// them.
    pub fn tools() -> Vec<rmcp::model::Tool> {
        Self::tool_router().list_all()
    }

    fn with_store<T>(&self, f: impl FnOnce(&Store) -> crate::Result<T>) -> Result<T, String> {
        self.with_store_mut(|s| f(s))
    }

    fn with_store_mut<T>(
        &self,
        f: impl FnOnce(&mut Store) -> crate::Result<T>,
    ) -> Result<T, String> {
        let mut guard = self
            .store
            .lock()
            .map_err(|_| "internal error: store lock poisoned".to_string())?;
        // A store deleted or replaced since it was opened (`uninstall --purge`, a restored
        // backup) is opened again: never answer from a deleted file.
        if guard.as_ref().is_some_and(|s| !s.is_current()) {
            *guard = None;
        }
        if guard.is_none() {
            *guard = Some(Store::open(&self.db).map_err(|e| e.to_string())?);
        }
        let store = guard.as_mut().expect("opened above");
        f(store).map_err(|e| e.to_string())
    }

    /// The directory the server runs in (the agent's project), for default sessions.
    fn cwd() -> String {
        std::env::current_dir()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    }

    fn run_list_sessions(&self, a: ListSessionsArgs) -> Result<serde_json::Value, String> {
        if let Some(agent) = &a.agent {
            agent.parse::<memtrail_adapters::Agent>()?;
        }
        let offset = a.offset.unwrap_or(0) as usize;
        let limit = a.limit.unwrap_or(DEFAULT_SESSIONS).clamp(1, MAX_SESSIONS) as usize;
        let list = self.with_store(|s| {
            query::list_sessions(
                s,
                &query::ListFilter {
                    agent: a.agent.map(|x| x.to_ascii_lowercase()),
                    project: a.project,
                    limit: offset + limit,
                },
            )
        })?;
        let sessions: Vec<_> = list.into_iter().skip(offset).collect();
        Ok(serde_json::json!({ "offset": offset, "limit": limit, "sessions": sessions }))
    }

    fn run_timeline(&self, a: TimelineArgs) -> Result<serde_json::Value, String> {
        let mut cats = Vec::new();
        for c in a
            .category
            .as_deref()
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
        {
            cats.push(Category::parse(&c.to_ascii_lowercase()).ok_or_else(|| {
                format!(
                    "unknown category `{c}`; use one of: {}",
                    ALL_CATEGORIES.map(|c| c.as_str()).join(", ")
                )
            })?);
        }
        let offset = a.offset.unwrap_or(0) as usize;
        let limit = a.limit.unwrap_or(DEFAULT_EVENTS).clamp(1, MAX_EVENTS) as usize;
        let t = self.with_store(|s| {
            let rowid = resume::resolve_or_latest(s, a.session_id.as_deref(), &Self::cwd())?;
            let id = query::session_summary(s, rowid)?.session_id;
            resume::timeline(s, &id, &cats, offset, limit)
        })?;
        serde_json::to_value(&t).map_err(|e| format!("internal error: {e}"))
    }

    fn run_resume_context(&self, a: ResumeContextArgs) -> Result<serde_json::Value, String> {
        let budget = a
            .budget_tokens
            .unwrap_or(DEFAULT_BUDGET_TOKENS)
            .clamp(MIN_BUDGET_TOKENS, MAX_BUDGET_TOKENS) as usize;
        let r = self.with_store(|s| {
            let rowid = resume::resolve_or_latest(s, a.session_id.as_deref(), &Self::cwd())?;
            resume::resume_context(s, rowid, a.project.as_deref(), a.query.as_deref(), budget)
        })?;
        serde_json::to_value(&r).map_err(|e| format!("internal error: {e}"))
    }

    fn run_remember(&self, a: RememberArgs) -> Result<serde_json::Value, String> {
        let text = a.text.trim();
        if text.is_empty() {
            return Err("the note is empty; pass the text to keep".to_string());
        }
        if text.len() > MAX_NOTE_BYTES {
            return Err(format!(
                "the note has {} bytes; keep it under {MAX_NOTE_BYTES} (split it or summarize)",
                text.len()
            ));
        }
        let dir = a.project.clone().unwrap_or_else(Self::cwd);
        self.with_store_mut(|s| {
            let rowid = resume::resolve_or_latest(s, a.session_id.as_deref(), &dir)?;
            let summary = query::session_summary(s, rowid)?;
            let now = crate::now_ms();
            let (message_id, index) = s.write(|w| w.add_note(rowid, text, now))?;
            Ok(serde_json::json!({
                "kept": true,
                "session_id": summary.session_id,
                "agent": summary.agent,
                "message_id": message_id,
                "message_index": index,
            }))
        })
    }

    fn run_search(&self, a: SearchArgs) -> Result<serde_json::Value, String> {
        let since = a
            .since
            .as_deref()
            .map(|s| parse_date(s, Bound::Start))
            .transpose()
            .map_err(|e| e.to_string())?;
        let until = a
            .until
            .as_deref()
            .map(|s| parse_date(s, Bound::End))
            .transpose()
            .map_err(|e| e.to_string())?;
        if let Some(agent) = &a.agent {
            agent.parse::<memtrail_adapters::Agent>()?;
        }
        if let Some(role) = &a.role {
            role.parse::<memtrail_adapters::Role>()?;
        }
        let filter = SearchFilter {
            agent: a.agent.map(|s| s.to_ascii_lowercase()),
            project: a.project,
            session: a.session_id,
            since,
            until,
            role: a.role.map(|s| s.to_ascii_lowercase()),
            limit: a
                .limit
                .unwrap_or(DEFAULT_SEARCH_LIMIT)
                .clamp(1, MAX_SEARCH_LIMIT) as usize,
        };
        let (mut hits, unindexed) = self.with_store(|s| {
            let hits = query::search(s, &a.query, &filter)?;
            // Messages the search could not index first (another process held the write lock)
            // were not searched: say how many, so the agent can search again.
            Ok((hits, s.pending_index().unwrap_or(0)))
        })?;
        for h in &mut hits {
            h.snippet = highlight_markdown(&h.snippet);
        }
        let mut out = serde_json::json!({ "query": a.query, "hits": hits });
        if unindexed > 0 {
            out["unindexed_messages"] = unindexed.into();
            out["note"] = format!(
                "{unindexed} new message(s) were not searched: not yet in the search index (the store is busy); search again in a moment"
            )
            .into();
        }
        Ok(out)
    }

    fn run_get_session(&self, a: GetSessionArgs) -> Result<serde_json::Value, String> {
        let offset = a.offset.unwrap_or(0).max(0);
        let limit = a.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE) as i64;
        let view = self.with_store(|s| {
            query::get_session(s, &a.session_id, None, offset, limit, Some(MAX_TOOL_OUTPUT))
        })?;
        serde_json::to_value(&view).map_err(|e| format!("internal error: {e}"))
    }

    #[tool(
        description = "Search the user's past coding-agent sessions (Claude Code and other agents on this machine) by full text, BM25-ranked. Use it when the user refers to earlier work (\"like we did last week\", \"that bug we fixed\"), before re-deriving a decision, command, fix or error that may already be in history, or to find how something was done in this project before. Returns hits with session_id, message_index, role, time and a snippet (matched words in **bold**); fetch the surrounding conversation with get_session."
    )]
    fn search(&self, Parameters(a): Parameters<SearchArgs>) -> CallToolResult {
        match self.run_search(a) {
            Ok(v) => CallToolResult::structured(v),
            Err(e) => tool_error(e),
        }
    }

    #[tool(
        description = "List past sessions, most recently active first: id, agent, title, project, branch, times and message count. Use it to find a session to read or resume when you know roughly when or where it happened but not what words to search for (e.g. \"what was I doing yesterday in this repo\"). Filter by agent or project; page with offset and limit."
    )]
    fn list_sessions(&self, Parameters(a): Parameters<ListSessionsArgs>) -> CallToolResult {
        match self.run_list_sessions(a) {
            Ok(v) => CallToolResult::structured(v),
            Err(e) => tool_error(e),
        }
    }

    #[tool(
        description = "A session's events in order: files read and changed, tasks, plans, user prompts, decisions, git actions, errors (and which were resolved later), retry loops, rules read, sub-agents, notes. Use it to see what happened in a session without reading every message, e.g. which files were edited or which errors are still open; filter by category. Default session: the latest of this project. Page with offset and limit; `total` counts the filtered events."
    )]
    fn timeline(&self, Parameters(a): Parameters<TimelineArgs>) -> CallToolResult {
        match self.run_timeline(a) {
            Ok(v) => CallToolResult::structured(v),
            Err(e) => tool_error(e),
        }
    }

    #[tool(
        description = "Restore working state: a session's snapshot (goal, last request, open tasks, files touched, unresolved errors, decisions) plus the messages most relevant to `query`, packed into `text` within `budget_tokens` (never exceeded; `used_tokens` tells the cost). Use it after a compaction or restart when you need to know where the work stood, or before continuing work begun in an earlier session. Default session: the latest of this project."
    )]
    fn resume_context(&self, Parameters(a): Parameters<ResumeContextArgs>) -> CallToolResult {
        match self.run_resume_context(a) {
            Ok(v) => CallToolResult::structured(v),
            Err(e) => tool_error(e),
        }
    }

    #[tool(
        description = "Keep a note in memtrail: a decision, a finding, a command that worked, a constraint the user stated. Use it for what a later session (yours or another agent's) should know and would not easily find in the conversation. The note is stored in the session (default: the latest of this project) as a message of kind `note`, found by `search` and listed by `timeline` (category note)."
    )]
    fn remember(&self, Parameters(a): Parameters<RememberArgs>) -> CallToolResult {
        match self.run_remember(a) {
            Ok(v) => CallToolResult::structured(v),
            Err(e) => tool_error(e),
        }
    }

    #[tool(
        description = "Read one past session in order: its title, project, times and a page of messages (user prompts, assistant answers, tool calls with input and output; long outputs are cut). Use it after search to see the context around a hit (pass the hit's session_id, and offset = message_index minus a few), or to review what was done in a session. Page with offset and limit; `total` tells how many messages the session has."
    )]
    fn get_session(&self, Parameters(a): Parameters<GetSessionArgs>) -> CallToolResult {
        match self.run_get_session(a) {
            Ok(v) => CallToolResult::structured(v),
            Err(e) => tool_error(e),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MemtrailMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("memtrail", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "memtrail is the memory of the user's coding agents: every past session of Claude Code \
                 (and other agents) on this machine, searchable. Use `search` to find earlier work, \
                 decisions, commands and errors; `get_session` to read a session around a hit; \
                 `list_sessions` to browse; `timeline` for a session's events; `resume_context` to \
                 restore where work stood (after compaction); `remember` to keep a note for later.",
            )
    }
}

/// Serve MCP over stdin/stdout until the client closes stdin.
pub fn serve_stdio(db: PathBuf) -> anyhow_like::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    spawn_indexer(db.clone());
    rt.block_on(async move {
        let server = MemtrailMcp::new(db)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        server
            .waiting()
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(())
    })
}

/// How often the MCP server's indexer looks for queued messages.
pub const INDEX_INTERVAL: Duration = Duration::from_secs(2);

/// While the server runs (an agent session), a thread of its own, on a connection of its own,
/// brings the full-text index up to date every [`INDEX_INTERVAL`] (hooks queue what they write:
/// see [`crate::store::Store::catch_up_index`]), 250 messages per transaction, waiting at most
/// 100 ms for the write lock, so that searches find the queue indexed and hooks never wait
/// long. It ends with the process; an unfinished transaction is rolled back.
fn spawn_indexer(db: PathBuf) {
    let _ = std::thread::Builder::new()
        .name("memtrail-indexer".into())
        .spawn(move || {
            let mut store: Option<Store> = None;
            loop {
                std::thread::sleep(INDEX_INTERVAL);
                if store.as_ref().is_some_and(|s| !s.is_current()) {
                    store = None;
                }
                if store.is_none() && db.exists() {
                    store = Store::open_with_timeout(&db, Duration::from_millis(100)).ok();
                }
                if let Some(s) = &store
                    && s.pending_index().unwrap_or(0) > 0
                {
                    let _ = s.catch_up_index(Some(std::time::Instant::now() + INDEX_INTERVAL));
                }
            }
        });
}

/// A minimal boxed error type for [`serve_stdio`] (the runtime does not depend on anyhow).
pub mod anyhow_like {
    pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;
}
