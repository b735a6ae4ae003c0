//! The query thread: every store read of `memtrail browse` runs here, so that the UI thread
//! draws and reads keys without waiting on a query. Requests carry a generation; when several
//! wait, only the newest request of each kind runs (a keystroke supersedes the query of the
//! keystroke before it), and the UI drops an answer whose generation is no longer current.

use crate::common::{open_reader, open_store_read};
use memtrail_adapters::Agent;
use memtrail_runtime::StoreLocation;
use memtrail_runtime::query::{Hit, ListFilter, SearchFilter, SessionSummary, SessionView};
use memtrail_runtime::read::ReadStore;
use memtrail_runtime::store::Interrupt;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};

/// Sessions per page of the results pane.
pub const PAGE: usize = 100;
/// Search hits per page: a search asks for the first page, and again for one page more
/// (the hits before it included) when the cursor nears the end.
pub const HITS_PAGE: usize = 50;
/// Most hits one search shows (the read interface's most).
pub const MOST_HITS: usize = 500;
/// Messages per page of the detail pane.
pub const MESSAGES_PAGE: i64 = 100;
/// Bytes of a tool's output kept per call in the detail pane (the pager shows more).
pub const DETAIL_OUTPUT: usize = 4_000;
/// Bytes of a message's text (and of its thinking) kept in the detail pane, with a note of the
/// rest (the pager shows it whole): a 50 MB message took ~5 s to open.
pub const DETAIL_TEXT: usize = 64 * 1024;
/// Bytes of a tool's output kept per call when a session is opened in the pager.
pub const PAGER_OUTPUT: usize = 64 * 1024;

/// The filters of the results pane, as the store reads them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    /// The search text; empty lists sessions instead.
    pub text: String,
    pub agent: Option<String>,
    pub project: Option<String>,
    pub machine: Option<String>,
    /// Sessions (or messages) at or after this time, ms since the Unix epoch.
    pub since: Option<i64>,
}

/// A text a key asks for, shown in the pager.
#[derive(Debug, Clone, PartialEq)]
pub enum TextKind {
    /// The whole session as Markdown (`sessions show`).
    Markdown,
    /// Its resume snapshot (`memtrail resume`).
    Snapshot,
    /// A handoff document for another agent (`memtrail handoff --to`).
    Handoff(Agent),
}

/// What the UI asks the worker.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// Sessions (empty text) from `offset`, or the search hits of the text.
    Results {
        generation: u64,
        query: Query,
        offset: usize,
    },
    /// Messages of session `id` of `agent` from index `offset`.
    Session {
        generation: u64,
        id: String,
        agent: String,
        offset: i64,
    },
    /// A text about session `id` of `agent`, for the pager.
    Text {
        id: String,
        agent: String,
        kind: TextKind,
    },
    /// What deleting session `id` would delete (for the confirmation).
    DeleteInfo { id: String },
    /// Delete session `id` (and its sub-agent sessions) from the local store.
    Delete { id: String },
}

/// The worker's answers; errors as text, already shown to the user as they are.
#[derive(Debug)]
pub enum Response {
    Sessions {
        generation: u64,
        offset: usize,
        sessions: Result<Vec<SessionSummary>, String>,
    },
    /// All the hits up to the page that starts at `offset`.
    Hits {
        generation: u64,
        offset: usize,
        hits: Result<Vec<Hit>, String>,
        unindexed: i64,
        /// Ranked by hybrid search (BM25 fused with the search by meaning).
        hybrid: bool,
        /// A keyword ranking that stopped at its bound: only the newest
        /// [`memtrail_runtime::query::SEARCH_CANDIDATES`] matches were ranked.
        newest_only: bool,
    },
    Session {
        generation: u64,
        offset: i64,
        view: Result<SessionView, String>,
    },
    Text {
        title: String,
        text: Result<String, String>,
    },
    DeleteInfo {
        id: String,
        info: Result<memtrail_runtime::maintenance::SessionInfo, String>,
    },
    Deleted {
        id: String,
        result: Result<memtrail_runtime::maintenance::SessionInfo, String>,
    },
    /// The store's vectors are loaded: searches are hybrid from now on.
    HybridReady,
    /// The agents with stored sessions (sent once, after the store is open).
    Agents(Vec<memtrail_adapters::Agent>),
}

/// What the UI and the worker share to stop a search that a newer keystroke made stale.
#[derive(Clone, Default)]
pub struct Cancel {
    /// The generation of the results query running now (0: none).
    running: Arc<AtomicU64>,
    /// The local store's interrupt handle, once it is open (none for PostgreSQL).
    handle: Arc<Mutex<Option<Interrupt>>>,
}

impl Cancel {
    /// Stops the results query that runs now when it is older than `generation` (its answer
    /// would be dropped): the worker goes on to the newest request at once.
    pub fn supersede(&self, generation: u64) {
        let running = self.running.load(Ordering::SeqCst);
        if running != 0
            && running < generation
            && let Some(h) = self
                .handle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
        {
            h.interrupt();
        }
    }
}

/// Runs requests until the UI hangs up; opens the store itself (a PostgreSQL reader is made
/// on this thread). A request whose query was interrupted ([`Cancel::supersede`]; a race may
/// stop a query other than the stale one) is run again unless a newer one of its kind waits.
pub fn run(
    db: StoreLocation,
    requests: Receiver<Request>,
    answers: Sender<Response>,
    cancel: Cancel,
) {
    // The local store (its interrupt handle shared), or a PostgreSQL reader.
    let (local, remote) = match db.postgres_url() {
        Some(_) => (Ok(None), open_reader(&db)),
        None => (open_store_read(&db), Ok(None)),
    };
    let (local, remote) = match (local, remote) {
        (Ok(l), Ok(r)) => (l, r),
        (Err(e), _) | (_, Err(e)) => {
            let _ = answers.send(Response::Sessions {
                generation: 0,
                offset: 0,
                sessions: Err(format!("{e:#}")),
            });
            (None, None)
        }
    };
    if let Some(s) = &local {
        *cancel.handle.lock().unwrap_or_else(|e| e.into_inner()) = Some(s.interrupt_handle());
        // It searches at every keystroke, like the web page's readers.
        s.tune_for_serving();
    }
    // The vectors for hybrid search, loaded on a thread of their own (searches are lexical
    // until they are there); none on a store without them.
    let (meaning_tx, meaning_rx) = std::sync::mpsc::channel();
    if local.is_some() {
        let db = db.clone();
        let _ = std::thread::Builder::new()
            .name("browse-vectors".into())
            .spawn(move || {
                let m = open_store_read(&db).ok().flatten().and_then(|s| {
                    let m = crate::commands::search::by_default_meaning(&s)
                        .ok()
                        .flatten()?;
                    // The side file for later searches, when it was missing or far behind.
                    m.maintain(&s);
                    Some(m)
                });
                let _ = meaning_tx.send(m);
            });
    }
    let mut meaning: Option<Meaning> = None;
    let mut meaning_pending = local.is_some();
    let store: Option<&dyn ReadStore> = match (&local, &remote) {
        (Some(s), _) => Some(s),
        (None, Some(r)) => Some(r.as_ref()),
        _ => None,
    };
    if let Some(Ok(agents)) = store.map(|s| s.agents_with_sessions())
        && !agents.is_empty()
        && answers.send(Response::Agents(agents)).is_err()
    {
        return;
    }
    let mut queue: VecDeque<Request> = VecDeque::new();
    loop {
        // While the vectors load, look for them every 50 ms; once there, say so (the UI
        // searches again).
        if meaning_pending && let Ok(m) = meaning_rx.try_recv() {
            meaning_pending = false;
            meaning = m;
            if meaning.is_some() && answers.send(Response::HybridReady).is_err() {
                return;
            }
        }
        if queue.is_empty() {
            if meaning_pending {
                match requests.recv_timeout(std::time::Duration::from_millis(50)) {
                    Ok(r) => queue.push_back(r),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                }
            } else {
                match requests.recv() {
                    Ok(r) => queue.push_back(r),
                    Err(_) => return,
                }
            }
        }
        queue.extend(requests.try_iter());
        // Only the newest request of each kind; texts, deletions and their confirmations all.
        let mut results = None;
        let mut session = None;
        let mut others = Vec::new();
        for r in queue.drain(..) {
            match r {
                Request::Results { .. } => results = Some(r),
                Request::Session { .. } => session = Some(r),
                r => others.push(r),
            }
        }
        for r in others.into_iter().chain(results).chain(session) {
            let generation = match &r {
                Request::Results { generation, .. } => *generation,
                _ => 0,
            };
            let hybrid = local.as_ref().zip(meaning.as_ref());
            cancel.running.store(generation, Ordering::SeqCst);
            let a = answer(&db, store, hybrid, r.clone());
            cancel.running.store(0, Ordering::SeqCst);
            match a {
                Some(a) => {
                    if answers.send(a).is_err() {
                        return;
                    }
                }
                None => queue.push_back(r),
            }
        }
    }
}

/// `r` with an error as its text; `None` when the query was interrupted.
fn done<T>(r: memtrail_runtime::Result<T>) -> Option<Result<T, String>> {
    match r {
        Err(memtrail_runtime::Error::Store(e)) if e.is_interrupted() => None,
        r => Some(r.map_err(|e| e.to_string())),
    }
}

/// The configured model and the store's vectors of it (hybrid search).
type Meaning = crate::commands::search::Meaning;

/// The answer to one request; `None` when its query was interrupted. With `hybrid`, a
/// search is hybrid (`memtrail search`'s default on a store with vectors).
fn answer(
    db: &StoreLocation,
    store: Option<&dyn ReadStore>,
    hybrid: Option<(&memtrail_runtime::Store, &Meaning)>,
    r: Request,
) -> Option<Response> {
    let err = |e: memtrail_runtime::Error| e.to_string();
    Some(match r {
        Request::Results {
            generation,
            query,
            offset,
        } => {
            if query.text.trim().is_empty() {
                let sessions = match store {
                    Some(s) => done(s.list_sessions(&ListFilter {
                        agent: query.agent,
                        project: query.project,
                        machine: query.machine,
                        since: query.since,
                        until: None,
                        offset,
                        limit: PAGE,
                    }))?,
                    None => Ok(Vec::new()),
                };
                Response::Sessions {
                    generation,
                    offset,
                    sessions,
                }
            } else {
                let f = SearchFilter {
                    agent: query.agent,
                    project: query.project,
                    machine: query.machine,
                    since: query.since,
                    limit: (offset + HITS_PAGE).min(MOST_HITS),
                    ..Default::default()
                };
                // A query written with the search syntax asks for exact words.
                let hybrid =
                    hybrid.filter(|_| !memtrail_runtime::query::has_operators(&query.text));
                let (hits, unindexed, newest_only) = match (hybrid, store) {
                    (Some((s, m)), _) => (
                        done(memtrail_embed::search::hybrid(
                            s,
                            m.model.as_ref(),
                            &m.index,
                            &query.text,
                            &f,
                        ))?,
                        s.unindexed(),
                        false,
                    ),
                    (None, Some(s)) => {
                        let ranked = done(s.search_ranking(&query.text, &f))?;
                        let newest_only = ranked.as_ref().is_ok_and(|r| r.newest_only);
                        (ranked.map(|r| r.hits), s.unindexed(), newest_only)
                    }
                    (None, None) => (Ok(Vec::new()), 0, false),
                };
                Response::Hits {
                    generation,
                    offset,
                    hits,
                    unindexed,
                    hybrid: hybrid.is_some(),
                    newest_only,
                }
            }
        }
        Request::Session {
            generation,
            id,
            agent,
            offset,
        } => Response::Session {
            generation,
            offset,
            view: match store {
                Some(s) => done(
                    s.get_session(
                        &id,
                        Some(&agent),
                        offset,
                        MESSAGES_PAGE,
                        Some(DETAIL_OUTPUT),
                    )
                    .map(detail_view),
                )?,
                None => Err("the store is empty".into()),
            },
        },
        Request::Text { id, agent, kind } => {
            let title = match &kind {
                TextKind::Markdown => format!("session {id}"),
                TextKind::Snapshot => format!("resume snapshot of {id}"),
                TextKind::Handoff(to) => format!("handoff of {id} to {}", to.as_str()),
            };
            let text = match store {
                Some(s) => done(text(s, &id, &agent, &kind))?,
                None => Err("the store is empty".into()),
            };
            Response::Text { title, text }
        }
        Request::DeleteInfo { id } => Response::DeleteInfo {
            info: local(db)
                .and_then(|s| memtrail_runtime::maintenance::session_info(&s, &id).map_err(err)),
            id,
        },
        Request::Delete { id } => Response::Deleted {
            result: local(db).and_then(|mut s| {
                let info =
                    memtrail_runtime::maintenance::delete_session(&mut s, &id).map_err(err)?;
                crate::commands::sync_auto::mark_running_sync(db);
                Ok(info)
            }),
            id,
        },
    })
}

/// The local store, for a deletion (the same path as `memtrail sessions delete`).
fn local(db: &StoreLocation) -> Result<memtrail_runtime::Store, String> {
    db.require_local("deleting a session")
        .map_err(|e| e.to_string())?;
    match open_store_read(db) {
        Ok(Some(s)) => Ok(s),
        Ok(None) => Err("the store is empty".into()),
        Err(e) => Err(format!("{e:#}")),
    }
}

/// `v` as the detail pane keeps it: each message's text and thinking cut to [`DETAIL_TEXT`].
fn detail_view(
    mut v: memtrail_runtime::query::SessionView,
) -> memtrail_runtime::query::SessionView {
    for m in &mut v.messages {
        memtrail_runtime::query::truncate_note(&mut m.text, DETAIL_TEXT);
        if let Some(t) = m.thinking.as_mut() {
            memtrail_runtime::query::truncate_note(t, DETAIL_TEXT);
        }
    }
    v
}

/// The text of `kind` for session `id` of `agent`.
fn text(
    s: &dyn ReadStore,
    id: &str,
    agent: &str,
    kind: &TextKind,
) -> memtrail_runtime::Result<String> {
    let rowid = s.resolve_session(id, Some(agent))?;
    Ok(match kind {
        TextKind::Markdown => memtrail_runtime::query::session_markdown(&s.get_session(
            id,
            Some(agent),
            0,
            i64::MAX,
            Some(PAGER_OUTPUT),
        )?),
        TextKind::Snapshot => {
            let snap = memtrail_runtime::resume::build_snapshot(
                s,
                rowid,
                memtrail_runtime::snapshot::DEFAULT_BUDGET,
            )?;
            if snap.text.trim().is_empty() {
                format!("Session {id} ({agent}) has no events to build a snapshot from.\n")
            } else {
                snap.text
            }
        }
        TextKind::Handoff(to) => memtrail_runtime::resume::handoff(s, rowid, *to)?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::{message, summary};
    use memtrail_runtime::query::SessionView;

    /// A message's text and thinking over [`super::DETAIL_TEXT`] are cut with a note of the
    /// bytes left out; shorter ones are left as they are.
    #[test]
    fn the_detail_pane_keeps_a_huge_message_short() {
        let huge = "é".repeat(100_000);
        let mut first = message(0, "user", &huge);
        first.thinking = Some(huge.clone());
        let view = SessionView {
            session: summary("s", "t", 2, None),
            offset: 0,
            total: 2,
            messages: vec![first, message(1, "assistant", "short")],
            children: Vec::new(),
        };
        let v = super::detail_view(view);
        // 65,536 bytes are 32,768 two-byte characters; 200,000 bytes in all.
        let cut = format!(
            "{}\n… [{} more bytes]",
            "é".repeat(32_768),
            200_000 - 65_536
        );
        assert_eq!(v.messages[0].text, cut);
        assert_eq!(v.messages[0].thinking.as_deref(), Some(cut.as_str()));
        assert_eq!(v.messages[1].text, "short");
    }
}
