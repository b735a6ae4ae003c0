//! `memtrail web`: a local web page over any store (search, sessions, a session's messages,
//! status), served by axum on loopback.
//!
//! The surface sees only the read interface ([`ReadStore`]): the binary decides which backend
//! stands behind it (the local SQLite store, or PostgreSQL with `--store postgres://…`) and
//! hands in the few things a read interface does not do ([`Backend`]: delete, status).
//!
//! Safe by default (docs/web.md): loopback only unless an access token is set; the `Host`
//! header checked against the names the server answers to (DNS rebinding); every change a POST
//! carrying the per-process CSRF token, from the same origin; a Content-Security-Policy that
//! allows scripts and styles from this server only (no inline script, no eval); every piece of
//! transcript text escaped (maud escapes by default; transcripts are never rendered as HTML or
//! Markdown, and no link is ever built from their text).

mod analytics;
pub mod export;
mod pages;
mod peer;
mod security;

use axum::Router;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use memtrail_runtime::maintenance::SessionInfo;
use memtrail_runtime::read::ReadStore;
use serde::Deserialize;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

pub use security::{Access, TOKEN_MIN_LEN};

/// Opens a reader on the store: `Ok(None)` when the store does not exist yet (reading never
/// creates it).
pub type OpenFn = dyn Fn() -> anyhow::Result<Option<Box<dyn ReadStore + Send>>> + Send + Sync;
/// Deletes a session (agent id or unique prefix) and its sub-agent sessions; what was deleted.
pub type DeleteFn = dyn Fn(&str) -> anyhow::Result<SessionInfo> + Send + Sync;
/// What `memtrail status --json` prints, as a JSON value.
pub type StatusFn = dyn Fn() -> anyhow::Result<serde_json::Value> + Send + Sync;

/// How a search ranks: by its words (BM25), by meaning (the configured model's vectors), or
/// both fused (hybrid), as `memtrail search --mode` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Keyword,
    Semantic,
    Hybrid,
}

impl Mode {
    /// The form's value: `keyword`, `semantic`, `hybrid`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Keyword => "keyword",
            Mode::Semantic => "semantic",
            Mode::Hybrid => "hybrid",
        }
    }
}

/// Searches by meaning (`Mode::Semantic` or `Mode::Hybrid`): the hits and the messages not yet
/// searchable, as [`ReadStore::search`] answers.
pub type MeaningFn = dyn Fn(
        &str,
        &memtrail_runtime::query::SearchFilter,
        Mode,
    ) -> anyhow::Result<(Vec<memtrail_runtime::query::Hit>, i64)>
    + Send
    + Sync;
/// Whether searches by meaning can run now: `Ok(model)` with the model's id, or `Err(why)`,
/// a sentence the page shows under the disabled mode selector (what to run to enable it).
pub type MeaningReadyFn = dyn Fn() -> Result<String, String> + Send + Sync;

/// Search by meaning, where the binary offers it.
#[derive(Clone)]
pub struct Meaning {
    pub ready: Arc<MeaningReadyFn>,
    pub search: Arc<MeaningFn>,
}

/// What the page serves: the store behind it and what it may do besides reading.
#[derive(Clone)]
pub struct Backend {
    /// Opens a reader (called once per concurrent request at most; readers are kept for reuse).
    pub open: Arc<OpenFn>,
    /// Session delete; `None` where the store is read-only here (PostgreSQL: deletes go
    /// through the machine that captured the session and `memtrail sync`).
    pub delete: Option<Arc<DeleteFn>>,
    /// The status report; `None` where there is none (the page says so).
    pub status: Option<Arc<StatusFn>>,
    /// The store's name as shown on the page (a path, or a URL with its password masked).
    pub label: String,
    /// Search by meaning; `None` where there is none (the page's mode selector says so).
    pub meaning: Option<Meaning>,
    /// Set to the time (ms since the Unix epoch) each request starts and ends, for background
    /// work that waits until no request came for a while (`memtrail web` embeds the backlog
    /// then: [`memtrail_runtime::background::spawn_embedder`]); `None` when nothing waits.
    pub last_request: Option<Arc<std::sync::atomic::AtomicI64>>,
}

/// How the server listens and whom it lets in.
#[derive(Debug, Clone)]
pub struct Listen {
    /// The address to bind (default 127.0.0.1).
    pub bind: IpAddr,
    /// The port; 0 for one the system picks.
    pub port: u16,
    /// Required on a non-loopback bind: at least [`TOKEN_MIN_LEN`] characters.
    pub token: Option<String>,
    /// More host names the `Host` header may carry (a name that resolves to this machine).
    pub allow_hosts: Vec<String>,
}

/// Default port of `memtrail web`.
pub const DEFAULT_PORT: u16 = 7373;
/// Most store readers kept open for reuse, and most requests that read the store at once
/// (the others wait).
pub const MAX_READERS: usize = 4;

/// Most live streams (a session page following its session) open at once; one more gets 503.
pub const MAX_LIVE: usize = 16;
/// How often a live stream looks for new messages.
pub const LIVE_POLL: std::time::Duration = std::time::Duration::from_secs(1);
/// How long a live stream lasts; the browser reconnects after it (EventSource does).
pub const LIVE_MAX: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// The state every handler shares.
pub(crate) struct App {
    backend: Backend,
    pub(crate) access: Access,
    readers: Mutex<Vec<Box<dyn ReadStore + Send>>>,
    /// Store calls running at once ([`MAX_READERS`]); a permit is held by the blocking work
    /// itself, so a request abandoned mid-call frees its place only when that work ends.
    busy: Arc<Semaphore>,
    /// Live streams open at once ([`MAX_LIVE`]).
    live: Arc<Semaphore>,
}

impl App {
    /// Records that a request is being served now ([`Backend::last_request`]).
    pub(crate) fn mark_activity(&self) {
        if let Some(at) = &self.backend.last_request {
            at.store(
                memtrail_runtime::now_ms(),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
    }

    /// Runs `f` on a reader of the store, on a blocking thread, at most [`MAX_READERS`] at a
    /// time; `Ok(None)` when the store does not exist yet.
    ///
    /// When this future is dropped before `f` returns (the browser closed the connection: it
    /// aborts a search that a newer query replaces), the reader is stopped
    /// ([`ReadStore::stopper`]): `f` fails at its next step of the store instead of running to
    /// the end for nobody, and the stopped reader is dropped rather than kept.
    async fn with_store<T, F>(self: &Arc<Self>, f: F) -> Result<Option<T>, WebError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn ReadStore) -> anyhow::Result<T> + Send + 'static,
    {
        let permit = Arc::clone(&self.busy)
            .acquire_owned()
            .await
            .map_err(|e| WebError::internal(&e))?;
        let app = Arc::clone(self);
        let running = Arc::new(Mutex::new(Running::default()));
        let _stop_if_dropped = StopIfDropped(Arc::clone(&running));
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            // A kept reader whose store file was deleted or replaced since (`uninstall
            // --purge`, a restore) is dropped, with the rest of the pool: the store is opened
            // again, or the page says there is none, instead of answering from a deleted file.
            let reader = app.readers.lock().map(|mut r| r.pop()).unwrap_or(None);
            let reader = match reader {
                Some(r) if !r.is_current() => {
                    drop(r);
                    if let Ok(mut pool) = app.readers.lock() {
                        pool.clear();
                    }
                    None
                }
                r => r,
            };
            let reader = match reader {
                Some(r) => r,
                None => match (app.backend.open)()? {
                    Some(r) => r,
                    None => return Ok(None),
                },
            };
            {
                let mut r = lock(&running);
                if r.abandoned {
                    // Abandoned before it began: nothing to answer.
                    drop(r);
                    app.keep(reader);
                    return Err(anyhow::anyhow!("the request was abandoned"));
                }
                r.stopper = reader.stopper();
            }
            let out = f(reader.as_ref());
            // From here on the reader is no longer stopped for this call (the same lock as
            // `StopIfDropped`'s), so a kept reader is never stopped under another request.
            let stopped = {
                let mut r = lock(&running);
                r.stopper = None;
                r.stopped
            };
            if !stopped {
                app.keep(reader);
            }
            out.map(Some)
        })
        .await
        .map_err(|e| WebError::internal(&e))?
        .map_err(WebError::from)
    }

    /// Back into the pool of readers, unless it is full.
    fn keep(&self, reader: Box<dyn ReadStore + Send>) {
        if let Ok(mut pool) = self.readers.lock()
            && pool.len() < MAX_READERS
        {
            pool.push(reader);
        }
    }
}

/// A reader's call in progress ([`App::with_store`]): its stopper while it runs.
#[derive(Default)]
struct Running {
    stopper: Option<memtrail_runtime::store::Stop>,
    /// The request's future was dropped.
    abandoned: bool,
    /// Its reader was stopped (a reader that was not made stoppable runs its call to the end
    /// and is kept).
    stopped: bool,
}

fn lock(m: &Mutex<Running>) -> std::sync::MutexGuard<'_, Running> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Stops the reader of a call still running when the request's future is dropped.
struct StopIfDropped(Arc<Mutex<Running>>);

impl Drop for StopIfDropped {
    fn drop(&mut self) {
        let mut r = lock(&self.0);
        r.abandoned = true;
        if let Some(s) = r.stopper.take() {
            s.stop();
            r.stopped = true;
        }
    }
}

/// An error page: a status and a message (escaped like everything else).
#[derive(Debug)]
pub(crate) struct WebError {
    status: StatusCode,
    message: String,
}

impl WebError {
    fn internal(e: &dyn std::fmt::Display) -> WebError {
        WebError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: e.to_string(),
        }
    }
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> WebError {
        WebError {
            status,
            message: message.into(),
        }
    }
}

impl From<anyhow::Error> for WebError {
    fn from(e: anyhow::Error) -> WebError {
        let status = match e.downcast_ref::<memtrail_runtime::Error>() {
            Some(memtrail_runtime::Error::NotFound(_)) => StatusCode::NOT_FOUND,
            Some(memtrail_runtime::Error::Invalid(_)) => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        // Redacted: an error may quote a path or a value with a secret in it.
        let message = memtrail_runtime::redact::redact(&format!("{e:#}")).into_owned();
        WebError { status, message }
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        (self.status, pages::error_page(self.status, &self.message)).into_response()
    }
}

type Page = Result<Response, WebError>;

/// The router of the page, with its security layers ([`security`]); `access` from [`Access::new`].
pub fn router(backend: Backend, access: Access) -> Router {
    let app = Arc::new(App {
        backend,
        access,
        readers: Mutex::new(Vec::new()),
        busy: Arc::new(Semaphore::new(MAX_READERS)),
        live: Arc::new(Semaphore::new(MAX_LIVE)),
    });
    Router::new()
        .route("/", get(search_page))
        .route("/search", get(search_page))
        .route("/sessions", get(sessions_page))
        .route("/session", get(session_page))
        .route("/session/events", get(events_fragment))
        .route("/session/snapshot", get(snapshot_fragment))
        .route("/session/handoff", get(handoff_page))
        .route("/session/live", get(live_messages))
        .route("/session/delete", get(delete_confirm).post(delete_session))
        .route("/analytics", get(analytics_page))
        .route("/status", get(status_page))
        .route("/assets/{name}", get(asset))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&app),
            security::guard,
        ))
        .with_state(app)
}

/// Binds per `listen` (refusing a non-loopback address without a token), prints nothing,
/// and returns the listener and the URL to open (with the token, when there is one).
///
/// Errors: a non-loopback bind without a token, a token shorter than [`TOKEN_MIN_LEN`], the
/// address in use.
pub async fn bind(
    listen: &Listen,
    backend: Backend,
) -> anyhow::Result<(tokio::net::TcpListener, Router, String)> {
    if let Some(t) = &listen.token
        && t.chars().count() < TOKEN_MIN_LEN
    {
        anyhow::bail!("the access token must be at least {TOKEN_MIN_LEN} characters long");
    }
    if !listen.bind.is_loopback() && listen.token.is_none() {
        anyhow::bail!(
            "refusing to listen on {} without an access token: anyone who can reach this machine would read every session. Set one with --token or MEMTRAIL_WEB_TOKEN (at least {TOKEN_MIN_LEN} characters), or keep the default --bind 127.0.0.1",
            listen.bind
        );
    }
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(listen.bind, listen.port))
        .await
        .map_err(|e| {
            let hint = if e.kind() == std::io::ErrorKind::AddrInUse {
                " (another program, or another `memtrail web`, has it: choose another with --port, or --port 0 for any free one)"
            } else {
                ""
            };
            anyhow::anyhow!("cannot listen on {}:{}: {e}{hint}", listen.bind, listen.port)
        })?;
    let port = listener.local_addr()?.port();
    let access = Access::new(listen, port)?;
    let host = match listen.bind {
        ip if ip.is_unspecified() || ip.is_loopback() => "127.0.0.1".to_string(),
        IpAddr::V6(ip) => format!("[{ip}]"),
        IpAddr::V4(ip) => ip.to_string(),
    };
    let url = match &listen.token {
        Some(t) => format!("http://{host}:{port}/?token={}", security::encode(t)),
        None => format!("http://{host}:{port}/"),
    };
    Ok((listener, router(backend, access), url))
}

/// Serves until Ctrl-C (or SIGTERM), finishing the requests under way.
pub async fn serve(listener: tokio::net::TcpListener, app: Router) -> anyhow::Result<()> {
    // With each connection's peer and the owner of its socket, told once when it is accepted:
    // the guard tells another local account's from ours.
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<peer::Peer>(),
    )
    .with_graceful_shutdown(async {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("SIGTERM handler");
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = ctrl_c.await;
        }
    })
    .await?;
    Ok(())
}

// ------------------------------------------------------------------------------- handlers

/// The search form's fields (every one optional; empty means unset).
#[derive(Debug, Default, Deserialize, Clone)]
pub(crate) struct SearchParams {
    #[serde(default)]
    pub q: String,
    #[serde(default)]
    pub agent: String,
    #[serde(default)]
    pub project: String,
    #[serde(default)]
    pub machine: String,
    #[serde(default)]
    pub role: String,
    #[serde(default)]
    pub since: String,
    #[serde(default)]
    pub until: String,
    /// `relevance` (default) or `newest`.
    #[serde(default)]
    pub sort: String,
    /// `keyword` (default; `lexical`, the CLI's word, is the same), `semantic` or `hybrid`.
    #[serde(default)]
    pub mode: String,
}

/// The search results and what the page says about them.
pub(crate) struct Found {
    pub hits: Vec<memtrail_runtime::query::Hit>,
    pub unindexed: i64,
    /// A keyword ranking that stopped at its bound: only the newest
    /// [`memtrail_runtime::query::SEARCH_CANDIDATES`] matches were ranked.
    pub newest_only: bool,
    /// The mode the hits were ranked by.
    pub mode: Mode,
    /// Why the search refused the query (no searchable word in it, too many terms), shown in
    /// place of hits.
    pub refused: Option<String>,
}

/// The mode selector's state: the model's id when search by meaning can run, else why not.
pub(crate) type ModeState = Result<String, String>;

/// Said when the binary has no search by meaning for this store.
const NO_MEANING: &str = "Search by meaning is not available for this store.";

/// Hits per search.
pub(crate) const SEARCH_LIMIT: usize = 50;

fn opt(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// Whether the search's fields set a filter (agent, project, machine, role, dates).
pub(crate) fn filtered(p: &SearchParams) -> bool {
    [
        &p.agent, &p.project, &p.machine, &p.role, &p.since, &p.until,
    ]
    .iter()
    .any(|f| opt(f).is_some())
}

/// The filters the page's note on a search ranked only among its newest matches suggests
/// ([`memtrail_runtime::query::narrowing_filters`] of the page's filters): "agent, project or
/// an end date (until)" with none set, fewer as they are.
pub(crate) fn narrowing_hint(p: &SearchParams) -> String {
    use memtrail_runtime::query;
    // Which filters are set is all that counts here (the end date's value does not).
    let f = query::SearchFilter {
        agent: opt(&p.agent),
        project: opt(&p.project),
        until: opt(&p.until).map(|_| 0),
        ..Default::default()
    };
    let mut named = query::narrowing_names(
        &f,
        ["an end date (until)", "an earlier end date (until)"],
        "agent",
        "project",
    );
    // The page names the end date last.
    named.rotate_left(1);
    query::or_list(&named)
}

/// Whether htmx asks for a part of a page (the search results), not a whole page: its
/// `HX-Request`, unless it restores a page from history or targets the whole body.
fn is_htmx(h: &HeaderMap) -> bool {
    h.get("hx-request").is_some_and(|v| v == "true")
        && h.get("hx-history-restore-request").is_none()
        && h.get("hx-request-type").is_none_or(|v| v != "full")
}

async fn search_page(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Query(p): Query<SearchParams>,
) -> Page {
    use memtrail_runtime::time::{Bound, parse_date};
    let fragment = is_htmx(&headers);
    let modes: ModeState = match app.backend.meaning.clone() {
        Some(m) => tokio::task::spawn_blocking(move || (m.ready)())
            .await
            .map_err(|e| WebError::internal(&e))?,
        None => Err(NO_MEANING.to_string()),
    };
    let mode = match (p.mode.as_str(), &modes) {
        // `lexical` is the CLI's and the MCP tool's name for it.
        ("", _) | ("keyword" | "lexical", _) => Ok(Mode::Keyword),
        ("semantic" | "hybrid", Err(why)) => Err(why.clone()),
        ("semantic", Ok(_)) => Ok(Mode::Semantic),
        ("hybrid", Ok(_)) => Ok(Mode::Hybrid),
        (other, _) => Err(format!(
            "no search mode {other:?}: keyword (or lexical), semantic or hybrid"
        )),
    };
    let date = |s: &str, b| {
        opt(s)
            .map(|s| parse_date(&s, b))
            .transpose()
            .map_err(|e| e.to_string())
    };
    // What the form holds that cannot be searched (a date half typed, `7` on the way to `7d`; a
    // mode this page cannot run) is said in place of hits, as a refused query is: the page (or
    // the part htmx swaps in while one types) stays the page.
    let checked = mode.and_then(|mode| {
        Ok((
            mode,
            date(&p.since, Bound::Start)?,
            date(&p.until, Bound::End)?,
        ))
    });
    let results = match checked {
        _ if p.q.trim().is_empty() => None,
        Err(why) => Some(Found {
            hits: Vec::new(),
            unindexed: 0,
            newest_only: false,
            mode: Mode::Keyword,
            // The form's own text, shown: no control or bidi character (`since=%1b…`).
            refused: Some(
                memtrail_runtime::safe_text::one_line_field(why.trim_end_matches('.')).into_owned(),
            ),
        }),
        Ok((mode, since, until)) => {
            let filter = memtrail_runtime::query::SearchFilter {
                agent: opt(&p.agent),
                project: opt(&p.project),
                session: None,
                since,
                until,
                role: opt(&p.role),
                machine: opt(&p.machine),
                limit: SEARCH_LIMIT,
            };
            let q = p.q.clone();
            let (mut hits, unindexed, refused, newest_only) =
                match (mode, app.backend.meaning.clone()) {
                    (Mode::Semantic | Mode::Hybrid, Some(m)) => {
                        let permit = Arc::clone(&app.busy)
                            .acquire_owned()
                            .await
                            .map_err(|e| WebError::internal(&e))?;
                        let (hits, unindexed) = tokio::task::spawn_blocking(move || {
                            let _permit = permit;
                            (m.search)(&q, &filter, mode)
                        })
                        .await
                        .map_err(|e| WebError::internal(&e))?
                        .map_err(WebError::from)?;
                        (hits, unindexed, None, false)
                    }
                    _ => app
                        .with_store(move |s| {
                            Ok(match s.search_ranking(&q, &filter) {
                                // A query the search refuses (no searchable word, too many terms)
                                // finds nothing: the results say why, as `memtrail search` does, in
                                // place of hits (typing `"` or `(` is not an error page).
                                Err(memtrail_runtime::Error::Invalid(why)) => {
                                    (Vec::new(), s.unindexed(), Some(why), false)
                                }
                                r => {
                                    let r = r?;
                                    (r.hits, s.unindexed(), None, r.newest_only)
                                }
                            })
                        })
                        .await?
                        .unwrap_or_default(),
                };
            if p.sort == "newest" {
                hits.sort_by(|a, b| b.timestamp.cmp(&a.timestamp));
            }
            Some(Found {
                hits,
                unindexed,
                newest_only,
                mode,
                refused,
            })
        }
    };
    let body = if fragment {
        pages::search_results(&p, results.as_ref())
    } else {
        // Best effort: a store that cannot be read leaves every agent offered.
        let with_sessions = app
            .with_store(|s| Ok(s.agents_with_sessions()?))
            .await
            .ok()
            .flatten()
            .unwrap_or_default();
        let agents = pages::agent_choices(&with_sessions, &p.agent);
        pages::search_page(&app, &p, &modes, results.as_ref(), &agents)
    };
    Ok(body.into_response())
}

/// The sessions list's fields.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct SessionsParams {
    #[serde(default)]
    pub agent: String,
    #[serde(default)]
    pub project: String,
    #[serde(default)]
    pub machine: String,
    /// 0-based page.
    #[serde(default)]
    pub page: usize,
    /// Set after a delete: the id deleted.
    #[serde(default)]
    pub deleted: String,
    /// `true` after a delete that a reader kept from folding the store's write-ahead log back
    /// (`SessionInfo::wal_kept`): the page says the text is still in the files for now. Any
    /// other value is no such delete (a text, so that a stray value is no 400).
    #[serde(default)]
    pub kept: String,
}

/// Sessions per page of the list.
pub(crate) const SESSIONS_PER_PAGE: usize = 50;
/// The deepest page of the list (the store answers at most 100,000 sessions).
const MAX_SESSIONS_PAGE: usize = 100_000 / SESSIONS_PER_PAGE - 1;

async fn sessions_page(State(app): State<Arc<App>>, Query(p): Query<SessionsParams>) -> Page {
    let page = p.page.min(MAX_SESSIONS_PAGE);
    let filter = memtrail_runtime::query::ListFilter {
        agent: opt(&p.agent),
        project: opt(&p.project),
        machine: opt(&p.machine),
        offset: page * SESSIONS_PER_PAGE,
        // One more than the page holds: whether there is a next page.
        limit: SESSIONS_PER_PAGE + 1,
        ..Default::default()
    };
    let (list, with_sessions) = app
        .with_store(move |s| {
            let list = s.list_sessions(&filter)?;
            // Best effort: every agent is offered when this cannot be read.
            Ok((list, s.agents_with_sessions().unwrap_or_default()))
        })
        .await?
        .unwrap_or_default();
    let more = list.len() > SESSIONS_PER_PAGE;
    let rows: Vec<_> = list.into_iter().take(SESSIONS_PER_PAGE).collect();
    let agents = pages::agent_choices(&with_sessions, &p.agent);
    Ok(pages::sessions_page(&app, &p, page, &rows, more, &agents).into_response())
}

/// Which session, and where in it.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct SessionParams {
    /// The session's id (the agent's own) or a unique prefix.
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub agent: String,
    /// First message shown (0-based).
    #[serde(default)]
    pub offset: Option<i64>,
    /// A message to show (a search hit): its page, scrolled to it.
    #[serde(default)]
    pub at: Option<i64>,
    /// Handoff: the agent that takes over.
    #[serde(default)]
    pub to: String,
}

/// Messages per page of a session.
pub(crate) const MESSAGES_PER_PAGE: i64 = 100;
/// Tool outputs longer than this (bytes) are cut by the store, with a note.
pub(crate) const MAX_OUTPUT: usize = 64 * 1024;
/// A message's text or thinking longer than this (bytes) is cut on the page, with a note
/// (`memtrail sessions show` and `export` give it whole): a 50 MB paste made a 52 MB page.
pub(crate) const MAX_TEXT: usize = 256 * 1024;

/// `view`'s messages with their text and thinking cut to [`MAX_TEXT`].
fn cut_texts(
    mut view: memtrail_runtime::query::SessionView,
) -> memtrail_runtime::query::SessionView {
    use memtrail_runtime::query::truncate_note;
    for m in &mut view.messages {
        truncate_note(&mut m.text, MAX_TEXT);
        if let Some(t) = m.thinking.as_mut() {
            truncate_note(t, MAX_TEXT);
        }
    }
    view
}

fn need_id(p: &SessionParams) -> Result<String, WebError> {
    opt(&p.id).ok_or_else(|| WebError::new(StatusCode::BAD_REQUEST, "which session? (id=…)"))
}

fn no_store() -> WebError {
    WebError::new(
        StatusCode::NOT_FOUND,
        "the store does not exist yet: run `memtrail import`",
    )
}

async fn session_page(State(app): State<Arc<App>>, Query(p): Query<SessionParams>) -> Page {
    let id = need_id(&p)?;
    let offset = match (p.at, p.offset) {
        (Some(at), _) => at.max(0) / MESSAGES_PER_PAGE * MESSAGES_PER_PAGE,
        (None, Some(o)) => o.max(0),
        (None, None) => 0,
    };
    let agent = opt(&p.agent);
    let view = app
        .with_store(move |s| {
            Ok(cut_texts(s.get_session(
                &id,
                agent.as_deref(),
                offset,
                MESSAGES_PER_PAGE,
                Some(MAX_OUTPUT),
            )?))
        })
        .await?
        .ok_or_else(no_store)?;
    Ok(pages::session_page(&app, &view, p.at).into_response())
}

/// Server-sent events for a session page showing its last messages: every [`LIVE_POLL`], the
/// messages from `offset` on, if any, as one `messages` event whose data is their HTML (as the
/// page renders them); then from after them. Ends after [`LIVE_MAX`], on a store error, or
/// when the page goes away; at most [`MAX_LIVE`] at once (503 beyond).
async fn live_messages(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Query(p): Query<SessionParams>,
) -> Page {
    use axum::response::sse::{Event, KeepAlive, Sse};
    let id = need_id(&p)?;
    let agent = opt(&p.agent);
    let permit = Arc::clone(&app.live).try_acquire_owned().map_err(|_| {
        WebError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many pages follow sessions live; reload later",
        )
    })?;
    let started = std::time::Instant::now();
    // A reconnecting browser says where it was (each event's id is the next message's index).
    let resumed = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i64>().ok());
    let from = resumed.or(p.offset).unwrap_or(0).max(0);
    let state = (app, id, agent, from, permit);
    let stream =
        futures_util::stream::unfold(state, move |(app, id, agent, from, permit)| async move {
            loop {
                if started.elapsed() > LIVE_MAX {
                    return None;
                }
                tokio::time::sleep(LIVE_POLL).await;
                let (sid, ag) = (id.clone(), agent.clone());
                let view = app
                    .with_store(move |s| {
                        Ok(cut_texts(s.get_session(
                            &sid,
                            ag.as_deref(),
                            from,
                            MESSAGES_PER_PAGE,
                            Some(MAX_OUTPUT),
                        )?))
                    })
                    .await;
                let v = match view {
                    Ok(Some(v)) => v,
                    _ => return None,
                };
                let Some(last) = v.messages.last() else {
                    continue;
                };
                let next = last.index + 1;
                // A CR would end an event line: as a character reference it stays in the text.
                let html =
                    security::bidi_visible(&pages::messages(&v.messages, None).into_string())
                        .replace('\r', "&#13;");
                let ev = Event::default()
                    .event("messages")
                    .id(next.to_string())
                    .data(html);
                return Some((
                    Ok::<_, std::convert::Infallible>(ev),
                    (app, id, agent, next, permit),
                ));
            }
        });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

async fn events_fragment(State(app): State<Arc<App>>, Query(p): Query<SessionParams>) -> Page {
    let id = need_id(&p)?;
    let t = app
        .with_store(move |s| {
            Ok(memtrail_runtime::resume::timeline(
                s,
                &id,
                &[],
                0,
                pages::MAX_EVENTS,
            )?)
        })
        .await?
        .ok_or_else(no_store)?;
    Ok(pages::events(&t).into_response())
}

/// Bytes of a snapshot shown on the page.
const SNAPSHOT_BUDGET: usize = 16 * 1024;

async fn snapshot_fragment(State(app): State<Arc<App>>, Query(p): Query<SessionParams>) -> Page {
    let id = need_id(&p)?;
    let agent = opt(&p.agent);
    let snap = app
        .with_store(move |s| {
            let row = s.resolve_session(&id, agent.as_deref())?;
            Ok(memtrail_runtime::resume::build_snapshot(
                s,
                row,
                SNAPSHOT_BUDGET,
            )?)
        })
        .await?
        .ok_or_else(no_store)?;
    Ok(pages::snapshot(&snap).into_response())
}

async fn handoff_page(State(app): State<Arc<App>>, Query(p): Query<SessionParams>) -> Page {
    let id = need_id(&p)?;
    let agent = opt(&p.agent);
    let to: memtrail_adapters::Agent = opt(&p.to)
        .unwrap_or_else(|| "claude".into())
        .parse()
        .map_err(|e: String| WebError::new(StatusCode::BAD_REQUEST, e))?;
    let (summary, text) = app
        .with_store(move |s| {
            let row = s.resolve_session(&id, agent.as_deref())?;
            Ok((
                s.session_summary(row)?,
                memtrail_runtime::resume::handoff(s, row, to)?,
            ))
        })
        .await?
        .ok_or_else(no_store)?;
    Ok(pages::handoff_page(&app, &summary, to, &text).into_response())
}

async fn delete_confirm(State(app): State<Arc<App>>, Query(p): Query<SessionParams>) -> Page {
    let id = need_id(&p)?;
    let agent = opt(&p.agent);
    let summary = app
        .with_store(move |s| {
            let row = s.resolve_session(&id, agent.as_deref())?;
            Ok(s.session_summary(row)?)
        })
        .await?
        .ok_or_else(no_store)?;
    Ok(pages::delete_page(&app, &summary, app.backend.delete.is_some()).into_response())
}

/// The delete form: the session and the CSRF token (checked by [`security::guard`]).
#[derive(Debug, Deserialize)]
pub(crate) struct DeleteForm {
    id: String,
}

async fn delete_session(State(app): State<Arc<App>>, Form(f): Form<DeleteForm>) -> Page {
    let Some(delete) = app.backend.delete.clone() else {
        return Err(WebError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "this store is read-only here: delete a session on the machine that captured it (`memtrail sessions delete`); `memtrail sync` carries the deletion",
        ));
    };
    let id = f.id.clone();
    let permit = Arc::clone(&app.busy)
        .acquire_owned()
        .await
        .map_err(|e| WebError::internal(&e))?;
    let info = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        delete(&id)
    })
    .await
    .map_err(|e| WebError::internal(&e))??;
    // Readers kept open hold no stale state (SQLite reads the committed file each time).
    Ok(Redirect::to(&format!(
        "/sessions?deleted={}{}",
        security::encode(&info.session_id),
        if info.wal_kept { "&kept=true" } else { "" }
    ))
    .into_response())
}

/// The analytics page's fields.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct AnalyticsParams {
    /// Days of the per-day charts (1 to [`analytics::MAX_DAYS`]; default
    /// [`analytics::DEFAULT_DAYS`]).
    #[serde(default, deserialize_with = "empty_as_none")]
    pub days: Option<i64>,
    /// The last day shown (`YYYY-MM-DD`, or any date `--until` takes); default today (UTC).
    #[serde(default)]
    pub until: String,
}

/// An empty form field as unset; a number otherwise (a 400 when it is not one).
fn empty_as_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    let s = String::deserialize(d)?;
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    s.parse().map(Some).map_err(serde::de::Error::custom)
}

async fn analytics_page(State(app): State<Arc<App>>, Query(p): Query<AnalyticsParams>) -> Page {
    use memtrail_runtime::analytics::DAY_MS;
    use memtrail_runtime::time::{Bound, parse_date};
    let last_ms = match opt(&p.until) {
        Some(u) => parse_date(&u, Bound::Start)
            .map_err(|e| WebError::new(StatusCode::BAD_REQUEST, e.to_string()))?,
        None => memtrail_runtime::now_ms(),
    };
    let last = last_ms.div_euclid(DAY_MS);
    let days = p
        .days
        .unwrap_or(analytics::DEFAULT_DAYS)
        .clamp(1, analytics::MAX_DAYS);
    let range = analytics::store_range(last, days);
    let a = app
        .with_store(move |s| Ok(s.analytics(range)?))
        .await?
        .unwrap_or_default();
    Ok(pages::layout(
        "Analytics",
        "Analytics",
        analytics::body(&p, &a, last, days),
    )
    .into_response())
}

async fn status_page(State(app): State<Arc<App>>) -> Page {
    let status = match app.backend.status.clone() {
        Some(f) => Some(
            tokio::task::spawn_blocking(move || f())
                .await
                .map_err(|e| WebError::internal(&e))??,
        ),
        None => None,
    };
    let unindexed = app.with_store(|s| Ok(s.unindexed())).await?.unwrap_or(0);
    Ok(pages::status_page(&app, status.as_ref(), unindexed).into_response())
}

/// The embedded assets: vendored htmx (4.0.1, from npm `htmx.org`, BSD-2-Clause: assets/htmx.LICENSE),
/// the page's own script and style sheet.
async fn asset(axum::extract::Path(name): axum::extract::Path<String>) -> Response {
    let (body, mime): (&'static str, &str) = match name.as_str() {
        "htmx.min.js" => (
            include_str!("../assets/htmx.min.js"),
            "text/javascript; charset=utf-8",
        ),
        "app.js" => (
            include_str!("../assets/app.js"),
            "text/javascript; charset=utf-8",
        ),
        "style.css" => (
            include_str!("../assets/style.css"),
            "text/css; charset=utf-8",
        ),
        _ => return not_found().await.into_response(),
    };
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_str(mime).expect("mime"),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=3600"),
            ),
        ],
        body,
    )
        .into_response()
}

async fn not_found() -> WebError {
    WebError::new(StatusCode::NOT_FOUND, "no such page")
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtrail_runtime::query::SearchFilter;
    use memtrail_runtime::{Store, StoreLocation};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A store of one Claude Code session of 3,000 prompts with the word `alpha`: a search
    /// of it walks the newest 1,024 matches (thousands of SQLite steps).
    fn seeded(dir: &std::path::Path) -> std::path::PathBuf {
        let session = "5a1e0c2d-web0-4b6a-9f11-000000000002";
        let t = dir.join(format!("{session}.jsonl"));
        let lines: String = (0..3000)
            .map(|i| {
                serde_json::json!({
                    "parentUuid": null, "isSidechain": false, "type": "user",
                    "cwd": "/home/user/demo", "sessionId": session,
                    "message": {"role": "user", "content": format!("alpha question {i}")},
                    "uuid": format!("00000000-0000-4000-8000-{i:012}"),
                    "timestamp": "2026-03-03T10:00:00.000Z"
                })
                .to_string()
                    + "\n"
            })
            .collect();
        std::fs::write(&t, lines).unwrap();
        let db = dir.join("s.db");
        let mut store = Store::open(StoreLocation::Sqlite(db.clone())).unwrap();
        memtrail_runtime::ingest::ingest_file(
            &mut store,
            memtrail_adapters::Agent::Claude,
            &t,
            None,
        )
        .unwrap();
        db
    }

    fn alpha(s: &dyn ReadStore) -> memtrail_runtime::Result<usize> {
        let f = SearchFilter {
            limit: 20,
            ..Default::default()
        };
        s.search("alpha", &f).map(|h| h.len())
    }

    type Stoppers = Arc<Mutex<Vec<memtrail_runtime::store::Stop>>>;

    /// The page's state over the store at `db`, with a backend that counts the readers it
    /// opens and makes each stoppable when `stoppable`, keeping their stoppers.
    fn app(db: std::path::PathBuf, stoppable: bool) -> (Arc<App>, Arc<AtomicUsize>, Stoppers) {
        let opened = Arc::new(AtomicUsize::new(0));
        let stoppers: Stoppers = Arc::default();
        let (o, st) = (Arc::clone(&opened), Arc::clone(&stoppers));
        let backend = Backend {
            open: Arc::new(move || {
                o.fetch_add(1, Ordering::SeqCst);
                let mut s = Store::open(StoreLocation::Sqlite(db.clone()))?;
                if stoppable {
                    st.lock().unwrap().push(s.make_stoppable()?);
                }
                Ok(Some(Box::new(s) as Box<dyn ReadStore + Send>))
            }),
            delete: None,
            status: None,
            label: String::new(),
            meaning: None,
            last_request: None,
        };
        let listen = Listen {
            bind: "127.0.0.1".parse().unwrap(),
            port: DEFAULT_PORT,
            token: None,
            allow_hosts: Vec::new(),
        };
        let app = Arc::new(App {
            backend,
            access: Access::new(&listen, DEFAULT_PORT).unwrap(),
            readers: Mutex::new(Vec::new()),
            busy: Arc::new(Semaphore::new(MAX_READERS)),
            live: Arc::new(Semaphore::new(MAX_LIVE)),
        });
        (app, opened, stoppers)
    }

    fn pooled(app: &App) -> usize {
        app.readers.lock().unwrap().len()
    }

    /// A request whose future is dropped while its reader works (the browser aborted it);
    /// the search the reader goes on with afterwards, and the readers in the pool once the
    /// call has returned.
    async fn dropped_while_reading(app: &Arc<App>) -> (memtrail_runtime::Result<usize>, usize) {
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (out_tx, out_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let a = Arc::clone(app);
        let request = tokio::spawn(async move {
            a.with_store(move |s| {
                started_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                out_tx.send(alpha(s)).unwrap();
                Ok(done_tx)
            })
            .await
        });
        tokio::task::spawn_blocking(move || started_rx.recv().unwrap())
            .await
            .unwrap();
        request.abort();
        assert!(request.await.unwrap_err().is_cancelled());
        // The abandoned call still holds its place among the readers until it ends.
        assert_eq!(app.busy.available_permits(), MAX_READERS - 1);
        go_tx.send(()).unwrap();
        let out = tokio::task::spawn_blocking(move || {
            let out = out_rx
                .recv_timeout(std::time::Duration::from_secs(20))
                .unwrap();
            // The closure has returned once its sender is dropped with it; then the reader
            // is kept or not.
            let _ = done_rx.recv_timeout(std::time::Duration::from_secs(20));
            out
        })
        .await
        .unwrap();
        assert_eq!(app.busy.available_permits(), MAX_READERS);
        (out, pooled(app))
    }

    /// A kept reader whose store file was deleted since (`uninstall --purge`) is not used
    /// again: the next request opens the store at the path anew (here an empty store, made by
    /// the test's backend) instead of answering from the deleted file.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reader_of_a_deleted_store_is_not_used_again() {
        let dir = tempfile::tempdir().unwrap();
        let db = seeded(dir.path());
        let (app, opened, _) = app(db.clone(), false);
        let n = app.with_store(|s| Ok(alpha(s)?)).await.unwrap().unwrap();
        assert_eq!((n, opened.load(Ordering::SeqCst), pooled(&app)), (20, 1, 1));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
        }
        let n = app.with_store(|s| Ok(alpha(s)?)).await.unwrap().unwrap();
        assert_eq!((n, opened.load(Ordering::SeqCst), pooled(&app)), (0, 2, 1));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_request_dropped_while_it_reads_stops_its_reader_and_drops_it() {
        let dir = tempfile::tempdir().unwrap();
        let (app, opened, stoppers) = app(seeded(dir.path()), true);

        // A request answered: its reader is kept for the next.
        let n = app.with_store(|s| Ok(alpha(s)?)).await.unwrap().unwrap();
        assert_eq!((n, opened.load(Ordering::SeqCst), pooled(&app)), (20, 1, 1));

        // A request dropped while its reader works: the search it goes on with fails, and
        // the reader is not kept.
        let (out, kept) = dropped_while_reading(&app).await;
        assert!(
            matches!(&out, Err(memtrail_runtime::Error::Store(e)) if e.is_interrupted()),
            "the abandoned search ran: {out:?}"
        );
        assert!(stoppers.lock().unwrap()[0].is_stopped());
        assert_eq!(kept, 0, "a stopped reader was kept");

        // The next request opens a reader of its own, not stopped.
        let n = app.with_store(|s| Ok(alpha(s)?)).await.unwrap().unwrap();
        assert_eq!((n, opened.load(Ordering::SeqCst), pooled(&app)), (20, 2, 1));
        assert!(!stoppers.lock().unwrap()[1].is_stopped());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reader_that_cannot_be_stopped_runs_on_and_is_kept() {
        // A reader with no stopper: an abandoned request's call runs to its end, and the
        // reader (a connection) is kept for the next request rather than opened again.
        let dir = tempfile::tempdir().unwrap();
        let (app, opened, _) = app(seeded(dir.path()), false);
        let n = app.with_store(|s| Ok(alpha(s)?)).await.unwrap().unwrap();
        assert_eq!(n, 20);
        let (out, kept) = dropped_while_reading(&app).await;
        assert_eq!((out.unwrap(), kept), (20, 1));
        let n = app.with_store(|s| Ok(alpha(s)?)).await.unwrap().unwrap();
        assert_eq!((n, opened.load(Ordering::SeqCst)), (20, 1));
    }
}
