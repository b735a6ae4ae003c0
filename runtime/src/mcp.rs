//! `memtrail mcp`: a stdio MCP server (rmcp) that lets agents search past sessions.
//!
//! Tools:
//! - `search`: BM25 full-text search over every captured session, with the CLI's filters.
//!   Returns `{query, hits: [Hit]}` (see [`crate::query::Hit`]) as structured content.
//! - `get_session`: the ordered messages of one session, paged by message index. Returns
//!   [`crate::query::SessionView`] as structured content.
//!
//! User errors (no such session, a bad date) come back as a tool result with `isError: true`
//! and a message the agent can act on; logging goes to stderr only (stdout is the protocol).

use crate::query::{self, HL_END, HL_START, SearchFilter};
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

/// Default and largest page sizes.
const DEFAULT_SEARCH_LIMIT: u32 = 10;
const MAX_SEARCH_LIMIT: u32 = 50;
const DEFAULT_PAGE: u32 = 40;
const MAX_PAGE: u32 = 200;
/// Tool outputs in `get_session` are cut to this many bytes (the CLI shows them whole).
const MAX_TOOL_OUTPUT: usize = 4000;

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

    fn with_store<T>(&self, f: impl FnOnce(&Store) -> crate::Result<T>) -> Result<T, String> {
        let mut guard = self
            .store
            .lock()
            .map_err(|_| "internal error: store lock poisoned".to_string())?;
        if guard.is_none() {
            *guard = Some(Store::open(&self.db).map_err(|e| e.to_string())?);
        }
        let store = guard.as_ref().expect("opened above");
        f(store).map_err(|e| e.to_string())
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
        let mut hits = self.with_store(|s| query::search(s, &a.query, &filter))?;
        for h in &mut hits {
            h.snippet = highlight_markdown(&h.snippet);
        }
        Ok(serde_json::json!({ "query": a.query, "hits": hits }))
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
                 decisions, commands and errors; use `get_session` to read a session around a hit.",
            )
    }
}

/// Serve MCP over stdin/stdout until the client closes stdin.
pub fn serve_stdio(db: PathBuf) -> anyhow_like::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
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

/// A minimal boxed error type for [`serve_stdio`] (the runtime does not depend on anyhow).
pub mod anyhow_like {
    pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;
}
