//! The background work of long-running servers (the MCP server, `memtrail web`) on an SQLite
//! store: the full-text index kept current (hooks queue what they write) and the backlog of
//! search by meaning embedded while no request comes. Each runs on a thread and a connection of
//! its own, ends with the process, and never holds the write lock long (a hook waits at most
//! that long).

use crate::mcp::MeaningSearch;
use crate::store::{Store, StoreLocation};
use std::sync::Arc;
use std::time::Duration;

/// How often a server's indexer looks for queued messages.
pub const INDEX_INTERVAL: Duration = Duration::from_secs(2);

/// How long a server's indexer merges the index's small segments per [`INDEX_INTERVAL`]
/// ([`Store::tidy_index`]).
pub const TIDY_ROUND: Duration = Duration::from_millis(50);

/// The embedder embeds waiting messages only when no request (an MCP tool call, a web page)
/// came for this long.
pub const IDLE_BEFORE_EMBEDDING: Duration = Duration::from_secs(2);

/// At most this long of embedding per [`INDEX_INTERVAL`] (half of one core at most), in
/// small write transactions.
pub const EMBED_SLICE: Duration = Duration::from_millis(1000);

/// While a server runs (the MCP server of an agent session, `memtrail web`), a thread of its
/// own, on a connection of its own, brings the full-text index up to date every [`INDEX_INTERVAL`] (hooks queue what they write:
/// see [`crate::store::Store::catch_up_index`]), 250 messages per transaction, waiting at most
/// 100 ms for the write lock, so that searches find the queue indexed and hooks never wait
/// long; after each catch-up (and once for the store it opens) it merges the index's small
/// segments, [`TIDY_ROUND`] a round ([`Store::tidy_index`]). It ends with the process;
/// an unfinished transaction is rolled back.
pub fn spawn_indexer(db: StoreLocation) {
    let _ = std::thread::Builder::new()
        .name("memtrail-indexer".into())
        .spawn(move || {
            let mut store: Option<Store> = None;
            // A store opened may hold the segments of earlier catch-ups: tidy it once.
            let mut untidy = true;
            loop {
                std::thread::sleep(INDEX_INTERVAL);
                if store.as_ref().is_some_and(|s| !s.is_current()) {
                    store = None;
                }
                if store.is_none() && db.exists() {
                    store = Store::open_with_timeout(&db, Duration::from_millis(100)).ok();
                    untidy = true;
                }
                let Some(s) = &store else { continue };
                if s.pending_index().unwrap_or(0) > 0 {
                    let _ = s.catch_up_index(Some(std::time::Instant::now() + INDEX_INTERVAL));
                    untidy = true;
                }
                if untidy {
                    // Each catch-up wrote a segment: merge the small ones, a bounded step a
                    // round until none is left to merge (a busy store: the next round).
                    untidy = !matches!(s.tidy_index(TIDY_ROUND), Ok(true));
                }
            }
        });
}

/// With search by meaning, a second thread on a connection of its own embeds waiting messages
/// every [`INDEX_INTERVAL`] once no request came for [`IDLE_BEFORE_EMBEDDING`] (`last_request`:
/// when the last one came, ms since the Unix epoch, kept by the server), at most
/// [`EMBED_SLICE`] a round, at a lower CPU priority (a thread apart from the indexer's, so that
/// the full-text catch-up, which holds the write lock longer, keeps its priority).
pub fn spawn_embedder(
    db: StoreLocation,
    meaning: Arc<dyn MeaningSearch>,
    last_request: Arc<std::sync::atomic::AtomicI64>,
) {
    let _ = std::thread::Builder::new()
        .name("memtrail-embedder".into())
        .spawn(move || {
            lower_thread_priority();
            let mut store: Option<Store> = None;
            loop {
                std::thread::sleep(INDEX_INTERVAL);
                let idle = crate::now_ms()
                    - last_request.load(std::sync::atomic::Ordering::Relaxed)
                    >= IDLE_BEFORE_EMBEDDING.as_millis() as i64;
                if !idle {
                    continue;
                }
                if store.as_ref().is_some_and(|s| !s.is_current()) {
                    store = None;
                }
                if store.is_none() && db.exists() {
                    store = Store::open_with_timeout(&db, Duration::from_millis(100)).ok();
                }
                if let Some(s) = &store {
                    meaning.embed_some(s, std::time::Instant::now() + EMBED_SLICE);
                }
            }
        });
}

/// Lowers the calling thread's CPU priority (nice 10, Linux: a thread has its own), so that
/// background embedding yields to the agent, its hooks and the user's builds.
fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid has no precondition; setpriority on our own thread id only lowers it.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}
