//! The SQLite store: sessions, messages, tool calls, ingest cursors, hook runs, and an FTS5 index.
//!
//! Layout (schema version [`SCHEMA_VERSION`], kept in `PRAGMA user_version`):
//! - `sessions`: one row per agent session (`agent`, `external_id` unique together), with its
//!   parent for sub-agents, project directory, title, model, branch, start/update times (ms since
//!   the Unix epoch), a message count, and (schema 11) `last_message_id`: no message of the
//!   session has a larger id (kept by triggers; it never goes down; NULL: no message).
//! - `messages`: one row per message, `(session_id, ext_id)` unique, `seq` the order within the
//!   session (0-based, assigned at first insert, never changed by a merge), indexed by role
//!   (schema 18, `messages_by_role` on `role || ''`: a search filtered by role checks its
//!   matches there). `body` is the prose,
//!   `parts_zdict` (`parts` before schema 14, `parts_packed` before 21) the full ordered parts
//!   as JSON (schema 13: compressed with zstd when that makes it smaller; schema 14: an empty
//!   BLOB when they are the body as one text part; schema 21: compressed with the parts
//!   dictionary, `parts_dictionary`), `tools_text` (`tools` before schema 13) the tool calls
//!   flattened for search (schema 13: NULL, rendered from the parts when read; rows written
//!   before keep their text).
//!   Read them with the SQL functions `memtrail_parts(parts_zdict, body)` and
//!   `memtrail_tools(tools_text, parts_zdict)` (`packed`).
//! - `tool_calls`: `(session_id, call_id)` → message, so a late tool result finds its call.
//! - `messages_fts`: FTS5, external content on the view `messages_text(body, tools, cjk)`
//!   (its text through `memtrail_shown`, schema 20: U+0000–U+0002 shown as U+FFFD)
//!   (schema 13; `messages` itself before), `porter unicode61`,
//!   kept in sync by triggers through a queue (schema 4): a written or changed message is queued
//!   in `fts_pending` and indexed later by [`Store::catch_up_index`] (every search first, imports,
//!   the MCP server in the background, and a hook when the queue is long), so that a hook does
//!   not pay for tokenizing and FTS5's segment flushes. `cjk` holds the Han, kana and Hangul runs of the message with a
//!   space between characters, so that a phrase query over single characters finds any substring
//!   (unicode61 would index a whole unbroken CJK run as one token). Schema 5 turns on FTS5's
//!   `secure-delete`: a deleted or rewritten message's old terms leave the segments at once.
//! - `sources`: the ingest cursor per transcript file (byte offset, size, file identity, a hash of
//!   the first bytes) and line counters.
//! - `hook_runs`: the last run of each (agent, hook event), for `memtrail status`.
//! - `events` (schema 3): the events of each message (as ingest's [`crate::records::Enrich`]
//!   extracts them), with the message's `seq`; deleted with their message (`ON DELETE
//!   CASCADE`: rewinds, re-reads) and re-extracted whenever the message changes (a merge, a
//!   replace, a late tool result); indexed by session order (`session_id, seq, id`) and by
//!   message, nothing else (schema 19 dropped one on `session_id, category` no statement read).
//!   A prompt's subject that is exactly its message's `body` is stored empty and read from the
//!   body (schema 22: `recall::event_subject!`, written by `recall::INSERT_EVENT`).
//!   Correlations are not stored: they are computed when read ([`crate::resume`]).
//! - `snapshots` (schema 3): snapshots built at compaction or restart (`trigger`), and when and
//!   by which session they were consumed (injected), so each is injected once.
//! - sync (schema 6, docs/sync.md): `sessions.origin` (`''` for this machine's sessions, else
//!   the id of the machine a pulled session comes from; sessions are unique on (`agent`,
//!   `external_id`, `origin`)), `sync_outbox` and `sync_tombstones` (what waits to be pushed,
//!   filled by triggers once sync is enabled, for this machine's sessions only), `sync_state`
//!   (enabled, this machine's id, pull positions, last push and pull) and `machines` (labels);
//!   `sync_deleted` (schema 17): the deletions pushed or pulled, sent again to a database new
//!   to this store.
//!
//! The database runs in WAL mode with a busy timeout, and closing it does not checkpoint (commits
//! that grow the WAL past 256 pages do); every write is a `BEGIN IMMEDIATE`
//! transaction (a deferred transaction that upgrades to a write fails at once with
//! `database is locked` instead of waiting; see `docs/architecture.md#the-store`).
//!
//! Every SQL statement of memtrail lives in this folder (a test, `no_sql_outside`, fails on SQL
//! elsewhere), one module per concern: `schema` (the version and the numbered
//! `migrations/NNNN_*.sql`), `writer` (sessions, messages, tool calls, events in one write
//! transaction), `cursors` (ingest cursors), `snapshots`, `stats` (figures and hook runs for
//! status), `sessions` (lookups for ingest and the MCP server), `queries` (search, ranking and
//! snippets, session lists and pages), `rank` (the FTS5 ranking function), `recall` (events and
//! messages for resume, snapshots and handoffs), `maintenance` (delete, purge, rescan), `sync`
//! (push batches from the outbox, pull batches applied), `repair`,
//! `salvage` (copying a damaged file), `files` (the file's mode and identity) and `location`.
//! Callers see domain types only: [`Store`], [`Writer`], [`StoreLocation`], the records of
//! `memtrail-adapters`, and errors as [`Error`] variants ([`StoreError`] is opaque). The read
//! side is also an interface, [`crate::read::ReadStore`] (search, session lists and pages, the
//! events and messages of resume and handoff), implemented by [`Store`] and by the PostgreSQL
//! reader of `memtrail-pg` (`--store postgres://…`); its callers are generic (`S: ReadStore +
//! ?Sized`) or take `&dyn ReadStore`, and the hook path stays on the concrete type. Writing is
//! the local store's only.
//!
//! Redaction and event extraction are the caller's: the writer applies the
//! [`crate::records::Enrich`] it is given (a batch's [`crate::records::Prepared`], or an argument)
//! where it holds the stored copy (a message merged with its stored parts, a late tool result,
//! `redact --rescan`). A test, `no_enrich_inside`, fails when a store module calls
//! `crate::redact`, `crate::seams` or `crate::events::extract`, and lists the few places that
//! still choose memtrail's rules themselves.

use crate::{Error, Result};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub(crate) mod analytics;
mod cursors;
mod files;
mod gate;
mod index_text;
mod location;
pub(crate) mod maintenance;
#[cfg(test)]
mod no_enrich_inside;
#[cfg(test)]
mod no_sql_outside;
mod packed;
mod parts_dictionary;
pub(crate) mod prefix;
pub use prefix::exact_terms as prefix_exact_terms;
pub(crate) mod queries;
pub(crate) mod rank;
pub(crate) mod recall;
mod repair;
pub mod salvage;
mod schema;
pub mod segments;
mod sessions;
mod snapshot_state;
mod snapshots;
mod stats;
mod sync;
mod vectors;
mod writer;

pub use cursors::{Cursor, CursorMark, CursorStat, ReadFile};
use files::{create_private_dir, create_private_file, file_id, make_owner_only, resolve_links};
pub use index_text::{INDEXED_OUTPUT_CAP, cjk_index_text, is_cjk, render_index_text, render_tools};
pub(crate) use index_text::{cap, kind_from_str};
pub use location::{STORE_ENV, StoreLocation, masked_url};
pub(crate) use packed::pack_parts;
pub use packed::{StoredParts, register as register_sql_functions};
pub use parts_dictionary::PARTS_DICTIONARY;
pub use queries::{SEMANTIC_SNIPPET_CHARS, hits_for_messages};
pub use repair::{REPAIR_STEPS, RepairReport, RepairStep, RepairStepReport, is_corrupt};
pub use schema::{Migrating, SCHEMA_VERSION};
pub use snapshots::{PRECOMPACT_TAKEN_EARLY, StoredSnapshot};
pub use stats::{HookRun, StoreStats, peek_counts};
pub use sync::{Exclusions, PULLED_FIELD_CAP, PULLED_MESSAGE_CAP, PULLED_TITLE_CHARS, Requeued};
pub use vectors::{EMBED_BODY_CHARS, EMBED_TOOLS_CHARS, VectorSet, embed_text, quantize};
pub use writer::{Applied, Writer, message_events};

/// Longest wait for the write lock before a search indexes the queue
/// ([`Store::catch_up_for_search`]).
pub const SEARCH_INDEX_WAIT: Duration = Duration::from_secs(1);

/// Pages of the full-text index one step of [`Store::optimize_index`] writes (4 KiB each).
pub const MERGE_STEP_PAGES: i64 = 1000;

/// Pages of one slice of a [`Store::optimize_index`] step: between slices the step ends early
/// when a hook waits for the write lock.
pub const MERGE_SLICE_PAGES: i64 = 100;

/// How long one [`Store::tidy_index`] after a search's catch-up goes on merging: it ends after
/// the statement that passes it (the write lock is held that long and one statement more).
pub const TIDY_BUDGET: Duration = Duration::from_millis(10);

/// The page count of one `'merge'` statement of a [`Store::tidy_index`]. One: FTS5's `'merge'`
/// goes on to the next level while its page budget lasts, so a larger one could begin merging
/// a level [`Store::tidy_index`] leaves alone. A statement still writes at least two leaf
/// pages, and ends only at a term's end: up to one term's merged doclist of the level merged.
const TIDY_STATEMENT_PAGES: i64 = 1;

/// FTS5's `usermerge` for [`Store::tidy_index`]: a level is merged once it holds this many
/// segments (2, FTS5's least).
pub const TIDY_USERMERGE: i64 = 2;

/// Messages one slice of a full-text catch-up indexes ([`Store::catch_up_index_by`]): between
/// slices, a transaction ends early when a hook waits for the write lock.
pub const INDEX_SLICE: usize = 50;

/// How many queued messages one transaction of [`Store::catch_up_index`] indexes.
pub const INDEX_CHUNK: usize = 2000;
/// An open store.
pub struct Store {
    conn: Connection,
    location: StoreLocation,
    /// The SQLite file of `location`.
    path: PathBuf,
    /// Longest wait for the write lock per attempt.
    busy: Duration,
    /// See [`Store::set_deadline`].
    deadline: Option<Instant>,
    /// True once [`crate::rank`]'s function is registered on this connection.
    rank_ready: std::cell::Cell<bool>,
    /// The identity of the file opened (see [`Store::is_current`]).
    file_id: Option<(u64, u64)>,
    /// The last session filter's scope of a search, kept while the store is unchanged (a
    /// long-lived reader — the web page, the MCP server, `browse` — searches with the same
    /// filter at every keystroke): see `queries::session_scope`.
    scope_cache: std::cell::RefCell<Option<queries::ScopeCache>>,
    /// The write gate (`<store>-gate`), opened at the first write: see [`gate`].
    gate: std::cell::OnceCell<Option<std::fs::File>>,
    /// When [`Store::bound_wal`]'s last checkpoint could not restart the WAL.
    wal_bound_failed: Option<Instant>,
    /// The handle of [`Store::make_stoppable`], once it installed its check.
    stop: Option<Stop>,
}

/// The page cache of a serving connection ([`Store::tune_for_serving`]), in `cache_size`'s
/// units: negative, KiB (16 MiB).
const SERVING_CACHE_KIB: i64 = -16384;
/// The memory map asked for by [`Store::map_for_reads`]: 4 GiB (SQLite caps it at its own
/// limit).
pub const READ_MAP_BYTES: i64 = 4 << 30;

/// How many more times a write retries `BEGIN IMMEDIATE` after the busy timeout ran out.
pub const WRITE_RETRIES: u32 = 3;
/// `PRAGMA wal_autocheckpoint`: the WAL is checkpointed by the committing writer once it holds
/// this many pages (4 KiB each); small, because every new process re-reads the WAL to rebuild
/// its index (docs/benchmarks.md).
pub const WAL_AUTOCHECKPOINT_PAGES: i64 = 256;
/// Longest wait of [`Store::checkpoint`] for the writer and readers to let the WAL restart.
pub const CHECKPOINT_WAIT: Duration = Duration::from_millis(250);
/// `PRAGMA journal_size_limit`: after a checkpoint the WAL file is truncated to this many bytes.
pub const WAL_SIZE_LIMIT_BYTES: i64 = 32 * 1024 * 1024;

/// A WAL file larger than this after a background writer's commit is checkpointed by it
/// ([`Store::checkpoint`]): 48 MiB, above an import's own automatic checkpoints (every 8192
/// pages: 33.8 MB with frame headers, [`Store::tune_for_bulk_writes`]), so only a WAL that
/// readers kept from restarting reaches it.
pub const WAL_BOUND_BYTES: u64 = 48 * 1024 * 1024;
/// Least time between two such checkpoints of one store when the first could not restart the
/// WAL (each waits up to [`CHECKPOINT_WAIT`]), so that a reader that never lets go slows a
/// writer by a fraction at most.
const WAL_BOUND_RETRY: Duration = Duration::from_secs(2);
/// Past this WAL size the pause after a failed try is [`WAL_BOUND_URGENT_RETRY`] instead of
/// [`WAL_BOUND_RETRY`]. An import writes ~10–30 MB of WAL a second, so in a 2 s pause a WAL
/// that readers kept from restarting grew from [`WAL_BOUND_BYTES`] to 75 MB under load in the
/// stress test.
const WAL_BOUND_URGENT_BYTES: u64 = 56 * 1024 * 1024;
/// The pause past [`WAL_BOUND_URGENT_BYTES`]: as long as a try may wait
/// ([`CHECKPOINT_WAIT`]), so that a reader that never lets go at most halves a writer's pace.
const WAL_BOUND_URGENT_RETRY: Duration = CHECKPOINT_WAIT;

/// A hook checkpoints a WAL of more than this many frames (48 MiB of pages, ~50 MB with the
/// frame headers: at [`WAL_BOUND_BYTES`], under which background writers keep it) in any
/// case: the bulk writer is not keeping it small (readers kept its checkpoints from
/// restarting the WAL).
pub const HOOK_CHECKPOINT_ANYWAY_PAGES: i32 = 12_288;

/// Should a hook's commit that left `pages` frames in the WAL checkpoint it? SQLite's
/// automatic checkpoint (from [`WAL_AUTOCHECKPOINT_PAGES`]) would copy a bulk writer's frames
/// into the database in the hook's time: beside an import of the 1 GB corpus, ~5,000 page
/// reads and writes and two fsyncs per hook, most of its p99 of 786 ms. So while a bulk writer
/// (an import, which checkpoints every 8,192 pages itself) has the store open, a hook leaves
/// the WAL to it, unless past [`HOOK_CHECKPOINT_ANYWAY_PAGES`].
fn hook_checkpoints(pages: i32, bulk_writer: impl FnOnce() -> bool) -> bool {
    if pages < WAL_AUTOCHECKPOINT_PAGES as i32 {
        return false;
    }
    if pages > HOOK_CHECKPOINT_ANYWAY_PAGES {
        return true;
    }
    #[cfg(target_os = "linux")]
    {
        !bulk_writer()
    }
    #[cfg(not(target_os = "linux"))]
    {
        // No mark to tell a bulk writer by: as SQLite's automatic checkpoint.
        let _ = bulk_writer;
        true
    }
}

/// The process's deadline for lock waits (see [`Store::set_deadline`]).
static DEADLINE: std::sync::Mutex<Option<Instant>> = std::sync::Mutex::new(None);

/// SQLite's process-wide settings, made once before the first connection of the process
/// (SQLite accepts them only before it initializes; later calls are refused and change
/// nothing). Memory statistics off (`SQLITE_CONFIG_MEMSTATUS`): with them on, every allocation
/// and free of SQLite's takes a global mutex and asks the block's size to count it (0.45 ms of
/// a Stop hook, which parses the whole schema: docs/benchmarks.md, "SQLite's memory statistics
/// off"); memtrail reads no statistic and sets no heap limit, the only users of those counts.
fn sqlite_globals() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: `sqlite3_config` with SQLITE_CONFIG_MEMSTATUS takes one int; before
        // `sqlite3_initialize` it only sets the flag, after it returns SQLITE_MISUSE.
        unsafe {
            rusqlite::ffi::sqlite3_config(
                rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS,
                0 as std::ffi::c_int,
            );
        }
    });
}

/// SQLite busy handler for a store with a deadline (a hook): `true` (try again) after a pause
/// of 1 ms (2 ms from the fourth try), capped by the time left; `false` (give up with
/// `SQLITE_BUSY`) once the deadline has passed. Short pauses: a hook holds the write gate
/// ([`gate`]), so the writer it waits for begins no new transaction, and the lock is the
/// hook's as soon as that one ends; a longer pause would only be time after that end (pauses
/// growing to 10 ms added up to 10 ms to a hook that waited for an import's catch-up:
/// docs/benchmarks.md, "A hook's wait for the write lock polled every 2 ms"). A hook waiting
/// for a writer that ignores the gate polls at most 500 times a second until its deadline.
fn deadline_busy_handler(n: i32) -> bool {
    let Some(d) = *DEADLINE.lock().unwrap_or_else(|e| e.into_inner()) else {
        return false;
    };
    let now = Instant::now();
    if now >= d {
        return false;
    }
    std::thread::sleep(hook_busy_pause(n).min(d - now));
    true
}

/// The pause of [`deadline_busy_handler`] before try `n + 1` (`n` counts the tries so far).
fn hook_busy_pause(n: i32) -> Duration {
    const DELAYS_MS: [u64; 4] = [1, 1, 1, 2];
    Duration::from_millis(DELAYS_MS[(n.max(0) as usize).min(DELAYS_MS.len() - 1)])
}

thread_local! {
    /// Until when [`checkpoint_busy_handler`] keeps trying (set by [`Store::checkpoint`]).
    static CHECKPOINT_UNTIL: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// SQLite busy handler of a background checkpoint: `true` (try again) after 1 ms until the
/// thread's [`CHECKPOINT_UNTIL`]. As short a pause as a hook's first ones
/// ([`deadline_busy_handler`]): with SQLite's own busy timeout (pauses growing to 100 ms), a
/// checkpoint asking for the write lock among hooks that commit back to back never got it, and
/// under steady searching the WAL grew past 90 MB in the stress test.
fn checkpoint_busy_handler(_n: i32) -> bool {
    let Some(until) = CHECKPOINT_UNTIL.with(|u| u.get()) else {
        return false;
    };
    let now = Instant::now();
    if now >= until {
        return false;
    }
    std::thread::sleep(Duration::from_millis(1).min(until - now));
    true
}

/// An error of the store's database, opaque to callers: the backend's own error (SQLite's
/// today; a PostgreSQL backend's next), shown with the backend's message. The conditions callers
/// act on are variants of [`Error`] ([`Error::Busy`], [`Error::Full`], [`Error::NewerSchema`])
/// or questions asked here ([`StoreError::is_corrupt`]).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct StoreError(rusqlite::Error);

impl StoreError {
    /// The statement was stopped by an [`Interrupt`] (`SQLITE_INTERRUPT`).
    pub fn is_interrupted(&self) -> bool {
        self.code() == Some(rusqlite::ErrorCode::OperationInterrupted)
    }

    /// `SQLITE_CORRUPT` (or its extended codes, e.g. `SQLITE_CORRUPT_VTAB` from FTS5) or
    /// `SQLITE_NOTADB`: the file's content is damaged.
    pub fn is_corrupt(&self) -> bool {
        self.code().is_some_and(|c| {
            matches!(
                c,
                rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase
            )
        })
    }

    /// `SQLITE_NOMEM`.
    pub fn is_nomem(&self) -> bool {
        self.code() == Some(rusqlite::ErrorCode::OutOfMemory)
    }

    fn code(&self) -> Option<rusqlite::ErrorCode> {
        match &self.0 {
            rusqlite::Error::SqliteFailure(f, _) => Some(f.code),
            _ => None,
        }
    }
}

/// What an existing file at a store's path holds, as [`file_kind`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FileKind {
    /// Nothing yet: no bytes, or an SQLite database with no schema object, user version or
    /// application id (memtrail makes its store there).
    Empty,
    /// memtrail's store, of any schema version (a newer one is refused later, as such).
    Store,
    /// Anything else, and why: not SQLite, or another program's database.
    Foreign(&'static str),
}

/// The tables every schema version of memtrail's store holds.
const STORE_TABLES: [&str; 4] = ["sessions", "messages", "messages_fts", "sources"];

/// What the existing file `real` holds, read through `conn` (a connection to it) without a
/// write: its first 16 bytes must be SQLite's header (`SQLite format 3\0`) unless it has none;
/// then either no schema object, user version 0 and application id 0 ([`FileKind::Empty`]), or
/// every table of [`STORE_TABLES`] and a user version of 1 or more (migrations run in one
/// transaction: a store never has its tables at version 0). Format: <https://sqlite.org/fileformat.html>.
///
/// Errors: reading the file's first bytes; store errors other than "not a database" (a lock held
/// past the busy timeout).
pub(super) fn file_kind(conn: &Connection, real: &Path) -> Result<FileKind> {
    use std::io::Read;
    let mut head = Vec::with_capacity(16);
    std::fs::File::open(real)?.take(16).read_to_end(&mut head)?;
    if !head.is_empty() && head != b"SQLite format 3\0" {
        return Ok(FileKind::Foreign("not an SQLite database"));
    }
    let read = conn.query_row(
        &format!(
            "SELECT (SELECT count(*) FROM sqlite_schema),
                    (SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('{}')),
                    (SELECT user_version FROM pragma_user_version),
                    (SELECT application_id FROM pragma_application_id)",
            STORE_TABLES.join("', '")
        ),
        [],
        |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
            ))
        },
    );
    let another = "an SQLite database whose tables are not memtrail's (another program's?)";
    match read {
        Ok((0, _, 0, 0)) => Ok(FileKind::Empty),
        Ok((0, ..)) => Ok(FileKind::Foreign(another)),
        Ok((_, tables, version, _)) if tables == STORE_TABLES.len() as i64 && version >= 1 => {
            Ok(FileKind::Store)
        }
        Ok(_) => Ok(FileKind::Foreign(another)),
        Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) => {
            Ok(FileKind::Foreign("not an SQLite database"))
        }
        Err(e) => Err(e).db(),
    }
}

/// Refuse an existing file at a store's path unless [`file_kind`] finds it empty or memtrail's
/// store: read only, so a refused file is left as it was.
///
/// Errors: [`Error::Invalid`] naming `path` and why; those of [`file_kind`].
fn refuse_foreign(conn: &Connection, path: &Path, real: &Path) -> Result<()> {
    match file_kind(conn, real)? {
        FileKind::Empty | FileKind::Store => Ok(()),
        FileKind::Foreign(why) => Err(Error::Invalid(format!(
            "{} is not a memtrail store ({why}); it was left as it is",
            path.display()
        ))),
    }
}

/// What [`Store::catch_up_for_search`] returns from its catch-up's result and its tidy-up's:
/// the catch-up's, unless the tidy-up was interrupted (the search it is for is stale: the
/// search stops, as it would in its walk); other errors of a tidy-up leave it to a later search.
fn search_catch_up_outcome(catch_up: Result<u64>, tidy: Result<()>) -> Result<u64> {
    match tidy {
        Err(e) if is_interrupted(&e) => Err(e),
        _ => catch_up,
    }
}

/// Whether `e` is a statement stopped by an [`Interrupt`] or a [`Stop`].
pub fn is_interrupted(e: &Error) -> bool {
    matches!(e, Error::Store(s) if s.is_interrupted())
}

/// Stops, from another thread, the statement its [`Store`] is running (SQLite's
/// `sqlite3_interrupt`): the store's call fails with [`Error::Store`] whose
/// [`StoreError::is_interrupted`] is true. Nothing happens when the store runs nothing; a
/// statement started while an interrupted one still runs is stopped too. Cheap to clone;
/// harmless once the store is closed.
#[derive(Clone)]
pub struct Interrupt(std::sync::Arc<rusqlite::InterruptHandle>);

impl Interrupt {
    /// Stops the running statement (see [`Interrupt`]).
    pub fn interrupt(&self) {
        self.0.interrupt();
    }
}

impl Store {
    /// A handle that stops this store's running statement from another thread.
    pub fn interrupt_handle(&self) -> Interrupt {
        Interrupt(std::sync::Arc::new(self.conn.get_interrupt_handle()))
    }

    /// Makes this store stoppable for good from another thread ([`Stop`]): installs a check of
    /// the stop mark every [`STOP_CHECK_STEPS`] steps of SQLite's virtual machine (SQLite's
    /// progress handler; an atomic load each time). For a long-lived reader whose caller may
    /// go away mid-call (the web page's: a browser that aborts a request); the reader is
    /// dropped once stopped. Calling it again changes nothing.
    ///
    /// Errors: SQLite's.
    pub fn make_stoppable(&mut self) -> Result<Stop> {
        if let Some(s) = &self.stop {
            return Ok(s.clone());
        }
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = std::sync::Arc::clone(&flag);
        self.conn
            .progress_handler(
                STOP_CHECK_STEPS,
                Some(move || seen.load(std::sync::atomic::Ordering::Relaxed)),
            )
            .db()?;
        let interrupt = self.interrupt_handle();
        let stop = Stop {
            flag,
            on_stop: std::sync::Arc::new(move || interrupt.interrupt()),
        };
        self.stop = Some(stop.clone());
        Ok(stop)
    }

    /// The handle of [`Store::make_stoppable`]; `None` before it was called.
    pub fn stopper(&self) -> Option<Stop> {
        self.stop.clone()
    }
}

/// How many steps of SQLite's virtual machine run between two checks of a [`Stop`]'s mark.
pub const STOP_CHECK_STEPS: std::ffi::c_int = 1000;

/// Stops a store for good from another thread ([`Store::make_stoppable`]): the statement it
/// runs now fails (`sqlite3_interrupt`, as [`Interrupt`]), and so does every later statement
/// that runs [`STOP_CHECK_STEPS`] steps, with [`Error::Store`] whose
/// [`StoreError::is_interrupted`] is true. An [`Interrupt`] alone is lost when it comes
/// between two statements of a call; this one is not. There is no way back: drop the store.
/// Cheap to clone; harmless once the store is closed.
///
/// A reader of another kind of store makes its own with [`Stop::with_action`] (PostgreSQL's
/// cancels the statement running on the server).
#[derive(Clone)]
pub struct Stop {
    flag: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Run by the first [`Stop::stop`] only.
    on_stop: std::sync::Arc<dyn Fn() + Send + Sync>,
}

impl Stop {
    /// A stop mark whose first [`Stop::stop`] also runs `on_stop` (on the stopping thread: it
    /// must not block). The reader it stops checks [`Stop::is_stopped`] before each statement,
    /// and `on_stop` stops the one running.
    pub fn with_action(on_stop: impl Fn() + Send + Sync + 'static) -> Stop {
        Stop {
            flag: std::sync::Arc::default(),
            on_stop: std::sync::Arc::new(on_stop),
        }
    }

    /// Stops the store (see [`Stop`]); a second call does nothing more.
    pub fn stop(&self) {
        if !self.flag.swap(true, std::sync::atomic::Ordering::Relaxed) {
            (self.on_stop)();
        }
    }

    /// True once [`Stop::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.flag.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A database error as the store's [`Error`] ([`Error::Store`]). Private to the store (and its
/// modules), so no `rusqlite` type reaches the public API (a `From` impl would be public).
fn db_err(e: rusqlite::Error) -> Error {
    Error::Store(StoreError(e))
}

/// A read transaction (an SQLite savepoint named `name`, nested in any open one) held until
/// dropped: every statement run meanwhile on the connection sees the store as of its first
/// read (in WAL mode, writers go on; a checkpoint does not pass it).
pub(crate) struct ReadSnapshot<'c> {
    conn: &'c rusqlite::Connection,
    name: &'static str,
}

impl<'c> ReadSnapshot<'c> {
    /// Open it. `name` is an SQL identifier.
    ///
    /// Errors: SQLite's.
    pub(crate) fn begin(conn: &'c rusqlite::Connection, name: &'static str) -> Result<Self> {
        conn.execute_batch(&format!("SAVEPOINT {name}")).db()?;
        Ok(ReadSnapshot { conn, name })
    }
}

impl Drop for ReadSnapshot<'_> {
    fn drop(&mut self) {
        // Only reads ran inside: releasing it cannot lose anything.
        let _ = self.conn.execute_batch(&format!("RELEASE {}", self.name));
    }
}

/// `.db()?` inside the store: a `rusqlite` result as the store's [`Result`] (see [`db_err`]).
trait Db<T> {
    /// The result, its error converted by [`db_err`].
    fn db(self) -> Result<T>;
}

impl<T> Db<T> for rusqlite::Result<T> {
    #[inline]
    fn db(self) -> Result<T> {
        self.map_err(db_err)
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}

/// SQLite errors that need a clearer name than SQLite's own.
fn classify(e: Error) -> Error {
    match e {
        Error::Store(ref s) if s.code() == Some(rusqlite::ErrorCode::DiskFull) => Error::Full,
        Error::Store(StoreError(ref s)) if is_busy(s) => Error::Busy { waited_ms: 0 },
        other => other,
    }
}

/// A few random bits for retry jitter (no RNG dependency: the clock's nanoseconds, the
/// process id and a counter, mixed).
fn jitter() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    let mut x =
        t ^ ((std::process::id() as u64) << 32) ^ N.fetch_add(0x9E37_79B9, Ordering::Relaxed);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^ (x >> 33)
}

impl Store {
    /// Open (creating if needed) the store at `path`: parent folder created with mode 0700, the
    /// file with mode 0600, WAL mode, a busy timeout of `busy`, migrations applied. An existing
    /// store (and its `-wal`/`-shm` files) that others could read is tightened to 0600; a `path`
    /// that is a symlink is followed, and its target gets the same treatment.
    ///
    /// Errors: [`Error::NewerSchema`] when the store was written by a newer memtrail; SQLite or
    /// I/O errors otherwise.
    pub fn open_with_timeout(location: impl Into<StoreLocation>, busy: Duration) -> Result<Store> {
        Self::open_inner(location.into(), busy, None, None)
    }

    /// [`Store::open`] telling `progress` of each schema migration before it runs (nothing when
    /// the store is at [`SCHEMA_VERSION`]): a command shows it while an older store is
    /// upgraded (migration 8's backfill reads every message: ~26 s for a 1 GB store).
    ///
    /// Errors: as [`Store::open_with_timeout`].
    pub fn open_with_progress(
        location: impl Into<StoreLocation>,
        progress: &mut dyn FnMut(Migrating),
    ) -> Result<Store> {
        Self::open_inner(
            location.into(),
            Duration::from_secs(5),
            None,
            Some(progress),
        )
    }

    fn open_inner(
        location: StoreLocation,
        busy: Duration,
        deadline: Option<Instant>,
        progress: schema::MigrationProgress<'_>,
    ) -> Result<Store> {
        let Some(path) = location.sqlite_path().map(Path::to_path_buf) else {
            return Err(Error::Unsupported(format!(
                "the store {location} is a PostgreSQL database, which only search, sessions list and show, resume, handoff and mcp read; this command uses the local SQLite store: run it without --store (unset {}) or with --db PATH",
                location::STORE_ENV
            )));
        };
        let path = path.as_path();
        // A store path that is a symlink is followed (the store may live on another disk): the
        // file really opened is its target, created and kept owner-only like any store.
        let real = resolve_links(path);
        let existed = real.exists();
        if !existed {
            if let Some(dir) = real.parent().filter(|d| !d.as_os_str().is_empty()) {
                create_private_dir(dir)?;
            }
            create_private_file(&real)?;
        }
        sqlite_globals();
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI,
        )
        .db()?;
        conn.busy_timeout(busy).db()?;
        // A file that was there already is memtrail's store (of any version) or an empty
        // database; anything else (another program's database or a file that is not SQLite,
        // named by `--db` or `MEMTRAIL_DB` by mistake) is refused before its mode, journal or
        // tables are touched. Read on this connection: no second open on a hook's path.
        if existed {
            refuse_foreign(&conn, path, &real)?;
        }
        make_owner_only(&real)?;
        let file_id = file_id(path);
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
            location,
            busy,
            deadline: None,
            rank_ready: std::cell::Cell::new(false),
            file_id,
            scope_cache: std::cell::RefCell::new(None),
            gate: std::cell::OnceCell::new(),
            wal_bound_failed: None,
            stop: None,
        };
        if deadline.is_some() {
            store.set_deadline(deadline)?;
        }
        let not_a_store = |path: &Path, e: Error| match e {
            Error::Store(ref s) if s.code() == Some(rusqlite::ErrorCode::NotADatabase) => {
                Error::Invalid(format!(
                    "{} is not a memtrail store (not an SQLite database)",
                    path.display()
                ))
            }
            other => other,
        };
        let path = store.path.as_path();
        store.configure().map_err(|e| not_a_store(path, e))?;
        store.migrate(progress).map_err(|e| not_a_store(path, e))?;
        Ok(store)
    }

    /// False once the file at this store's path is no longer the one this connection opened
    /// (deleted, e.g. by `memtrail uninstall --purge`, or replaced), or once a newer memtrail
    /// upgraded it past the schema this one knows: a long-running process (the MCP server, the
    /// web page, their indexer) then reopens instead of serving, and indexing into, a deleted
    /// file, and its reopening says the store is newer ([`Error::NewerSchema`]) instead of
    /// reading and writing rows in a form it does not know. One `PRAGMA user_version` (the
    /// file's header, in the page cache) besides a `stat`.
    pub fn is_current(&self) -> bool {
        self.file_id.is_some()
            && file_id(&self.path) == self.file_id
            && !matches!(self.schema_version(), Ok(v) if v > SCHEMA_VERSION)
    }

    /// [`Store::open_with_timeout`] with a 5 s busy timeout.
    pub fn open(location: impl Into<StoreLocation>) -> Result<Store> {
        Self::open_with_timeout(location, Duration::from_secs(5))
    }

    /// Register [`rank::FUNCTION`] and [`rank::SCOPE_FUNCTION`] on this connection, once (the
    /// first search does).
    pub(crate) fn ensure_rank_function(&self) -> Result<()> {
        if !self.rank_ready.get() {
            rank::register(&self.conn)?;
            rank::register_scope(&self.conn)?;
            self.rank_ready.set(true);
        }
        Ok(())
    }

    /// How many messages are written but not yet in the full-text index (schema 4: hooks
    /// queue them; see [`Store::catch_up_index`]).
    pub fn pending_index(&self) -> Result<i64> {
        self.conn
            .prepare_cached("SELECT COUNT(*) FROM fts_pending")
            .db()?
            .query_row([], |r| r.get(0))
            .db()
    }

    /// Index every queued message, [`INDEX_CHUNK`] per `BEGIN IMMEDIATE` transaction (250
    /// with a deadline, so that one transaction does not overrun it), until the queue is
    /// empty or `deadline` passes. Returns how many were indexed. Works on a
    /// shared borrow (searches hold one); the lock is waited for as any write waits (busy
    /// timeout or deadline), and [`Error::Busy`] is returned when it cannot be had: a caller
    /// that only reads may go on with what is indexed.
    pub fn catch_up_index(&self, deadline: Option<Instant>) -> Result<u64> {
        let chunk = if deadline.is_some() { 250 } else { INDEX_CHUNK };
        self.catch_up_index_by(deadline, chunk)
    }

    /// Merge the full-text index into one segment, as FTS5's `'optimize'` does, but in steps of
    /// [`MERGE_STEP_PAGES`] pages, each its own write transaction (FTS5's incremental `'merge'`:
    /// a negative page count starts merging every segment into one, positive counts go on
    /// until a step changes nothing). Every catch-up adds a segment, and a query positions its
    /// iterators in each: on the 1 GB bench store, 15 segments made 20 snippet lookups cost
    /// 3.6 ms, one segment 0.5 ms. The whole index is rewritten (5 s at 1 GB), so only a large
    /// import runs it; in steps, a hook waits for one step at most, not for the whole merge.
    ///
    /// A step is done in slices of [`MERGE_SLICE_PAGES`]; when a hook comes to wait for the
    /// write lock ([`gate`]), the step ends after the slice at hand.
    pub fn optimize_index(&mut self) -> Result<()> {
        const MERGE: &str = "INSERT INTO messages_fts (messages_fts, rank) VALUES ('merge', ?1)";
        let mut started = false;
        loop {
            // The gate's descriptor, duplicated: `write` holds the store mutably.
            // (A hook's store never asks: its own shared hold would be converted.)
            let gate = self
                .deadline
                .is_none()
                .then(|| self.gate_file().and_then(|g| g.try_clone().ok()))
                .flatten();
            let hooks = gate.as_ref();
            // A slice that merges nothing changes at most one row (the structure record).
            let done = self.write(|w| {
                let mut merged = 0;
                loop {
                    let pages = if started {
                        MERGE_SLICE_PAGES
                    } else {
                        -MERGE_SLICE_PAGES
                    };
                    started = true;
                    let before = w.tx.total_changes();
                    w.tx.execute(MERGE, [pages]).db()?;
                    if w.tx.total_changes() - before < 2 {
                        return Ok(true);
                    }
                    merged += MERGE_SLICE_PAGES;
                    if merged >= MERGE_STEP_PAGES || hooks.is_some_and(gate::hooks_waiting) {
                        return Ok(false);
                    }
                }
            })?;
            if done {
                return Ok(());
            }
        }
    }

    /// Merge the full-text index's small segments for about `budget` (statements of
    /// [`TIDY_STATEMENT_PAGES`] until one ends past it; `Duration::ZERO`: one statement), in one
    /// `BEGIN IMMEDIATE` transaction that ends early when a hook comes to wait for the lock.
    /// A tidy-up never waits for hooks: when one holds the write gate, it returns at once.
    /// Returns `true` when nothing is left to merge.
    ///
    /// Every catch-up of the index writes a segment, and a search seeks each term in each
    /// segment. FTS5's automatic merges of small segments run only as enough pages are
    /// written, so a store indexed by many small catch-ups (the servers' indexer every 2 s,
    /// each search after hooks) piles them up: 20 segments after 300 turns on the 1 GB bench
    /// store (14 of 3 pages at level 0), where `err*` then took 37 ms against 16 ms with one.
    /// FTS5's incremental `'merge'` with a positive page count merges the level holding the
    /// most segments when it holds at least `usermerge` of them ([`TIDY_USERMERGE`], kept in
    /// the index's `_config`), and its output goes one level up. Left to itself that would
    /// climb, after 2^L catch-ups, to the level of an import's large segment (level 8 after an
    /// import of the 1 GB bench corpus, whose catch-ups write a segment per 50-message slice)
    /// and rewrite the whole index, again at each doubling. So each
    /// statement is run only when the level FTS5 would read next does not hold the largest
    /// segment ([`segments::Structure`], read from FTS5's structure record; a record that
    /// does not decode leaves the index to FTS5's own merges): the small segments are merged
    /// down to about one a level, and the largest segment's level is left to FTS5's own
    /// merges, which take it once it holds four segments (over 6,000 turns on the 1 GB bench
    /// store it came to hold two). `usermerge` stays 2 in `_config`, where only `'merge'`
    /// statements read it. When nothing is to be merged, no write transaction is begun.
    /// [`Store::optimize_index`] (a whole-index rewrite) stays for large imports.
    ///
    /// Errors: [`Error::Busy`] when the write lock cannot be had within the busy timeout (or
    /// the deadline), other database errors as [`Error::Db`].
    pub fn tidy_index(&self, budget: Duration) -> Result<bool> {
        const MERGE: &str = "INSERT INTO messages_fts (messages_fts, rank) VALUES ('merge', ?1)";
        // Whether there is anything to merge, read before asking for the write lock.
        if !index_structure_of(&self.conn)?.is_some_and(|st| st.tidy_would_merge()) {
            return Ok(true);
        }
        if self.hooks_waiting() {
            return Ok(false);
        }
        let t0 = Instant::now();
        let _gate = self.pass_gate();
        let tx = begin_immediate(&self.conn).map_err(|e| classify(db_err(e)))?;
        let usermerge: Option<i64> = tx
            .prepare_cached("SELECT v FROM messages_fts_config WHERE k = 'usermerge'")
            .db()?
            .query_row([], |r| r.get(0))
            .optional()
            .db()?;
        if usermerge != Some(TIDY_USERMERGE) {
            tx.execute(
                "INSERT INTO messages_fts (messages_fts, rank) VALUES ('usermerge', ?1)",
                [TIDY_USERMERGE],
            )
            .db()?;
        }
        let done = loop {
            if !index_structure_of(&tx)?.is_some_and(|st| st.tidy_would_merge()) {
                break true;
            }
            let before = tx.total_changes();
            tx.execute(MERGE, [TIDY_STATEMENT_PAGES])
                .map_err(|e| classify(db_err(e)))?;
            // A statement that merges nothing changes at most one row (the structure record).
            if tx.total_changes() - before < 2 {
                break true;
            }
            if t0.elapsed() >= budget || self.hooks_waiting() {
                break false;
            }
        };
        tx.commit().map_err(|e| classify(db_err(e)))?;
        Ok(done)
    }

    /// The full-text index's levels and segments, read from FTS5's structure record
    /// ([`segments::Structure`]); `None` when the record does not decode. Errors: database
    /// errors as [`Error::Db`].
    pub fn index_structure(&self) -> Result<Option<segments::Structure>> {
        index_structure_of(&self.conn)
    }

    /// True when a hook waits for the write lock this background writer holds (see
    /// [`gate::hooks_waiting`]); false for a hook's own store and without a gate.
    fn hooks_waiting(&self) -> bool {
        self.deadline.is_none() && self.gate_file().is_some_and(gate::hooks_waiting)
    }

    /// The write gate's file, opened (and created) at the first call; `None` without a gate.
    fn gate_file(&self) -> Option<&std::fs::File> {
        self.gate.get_or_init(|| gate::open(&self.path)).as_ref()
    }

    /// [`Store::catch_up_index`] for a search: the write lock is waited for at most
    /// [`SEARCH_INDEX_WAIT`] (a search must answer even while an import or a repair holds the
    /// lock: it then searches what is indexed, and the caller can tell the user how many new
    /// messages were left out, [`Store::pending_index`]); once it has the lock, the whole queue
    /// is indexed. Then a [`Store::tidy_index`] step of [`TIDY_BUDGET`]: after a catch-up
    /// that indexed something (it wrote a segment), and also after one that did not when an
    /// earlier tidy-up stopped at its budget, then without waiting for the lock (a read of
    /// the structure record when there is nothing to merge).
    pub fn catch_up_for_search(&self) -> Result<u64> {
        if self.deadline.is_some() {
            // A process with a deadline keeps its own busy handler.
            return self.catch_up_index(None);
        }
        self.conn.busy_timeout(SEARCH_INDEX_WAIT).db()?;
        let r = self.catch_up_index(None);
        let tidied = match r {
            Ok(n) if n > 0 => {
                // The catch-up wrote a segment: merge the small ones (a bounded step; a busy
                // store, or a hook waiting, leaves it to the next search).
                self.tidy_index(TIDY_BUDGET).map(|_| ())
            }
            Ok(_) => {
                // Nothing new, but the last tidy-up may have stopped at its budget (the bench
                // store after its hooks: 8 segments where 2 are left once it is done, `e*` 74
                // against 53 ms): go on with it, unless another writer holds the lock.
                self.conn.busy_timeout(Duration::ZERO).db()?;
                self.tidy_index(TIDY_BUDGET).map(|_| ())
            }
            Err(_) => Ok(()),
        };
        self.conn.busy_timeout(self.busy).db()?;
        search_catch_up_outcome(r, tidied)
    }

    /// One transaction of [`Store::catch_up_index`]: at most `max` queued messages indexed
    /// (the oldest), unless `deadline` has passed. Returns how many were indexed; errors as
    /// [`Store::catch_up_index`].
    pub fn catch_up_index_at_most(&self, deadline: Instant, max: usize) -> Result<u64> {
        self.catch_up_index_within(Some(deadline), max, Some(max as u64))
    }

    /// [`Store::catch_up_index`] with `chunk` messages per transaction (an import indexes
    /// [`crate::import::IMPORT_INDEX_EVERY`] at a time: fewer, larger FTS5 segments).
    pub fn catch_up_index_by(&self, deadline: Option<Instant>, chunk: usize) -> Result<u64> {
        self.catch_up_index_within(deadline, chunk, None)
    }

    /// [`Store::catch_up_index_by`], stopping once `most` messages are indexed (`None`: the
    /// whole queue).
    fn catch_up_index_within(
        &self,
        deadline: Option<Instant>,
        chunk: usize,
        most: Option<u64>,
    ) -> Result<u64> {
        let mut done = 0u64;
        loop {
            if most.is_some_and(|m| done >= m) {
                return Ok(done);
            }
            let queued: bool = self
                .conn
                .prepare_cached("SELECT EXISTS (SELECT 1 FROM fts_pending)")
                .db()?
                .query_row([], |r| r.get(0))
                .db()?;
            if !queued || deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(done);
            }
            let _gate = self.pass_gate();
            let tx = begin_immediate(&self.conn).map_err(|e| classify(db_err(e)))?;
            // In slices, so that a hook that comes to wait for the lock waits for one slice.
            let w = Writer::new(&tx);
            let mut n = 0u64;
            while (n as usize) < chunk {
                let slice = INDEX_SLICE.min(chunk - n as usize);
                let k = w.index_pending(slice).map_err(classify)?;
                n += k;
                if (k as usize) < slice || self.hooks_waiting() {
                    break;
                }
            }
            tx.commit().map_err(|e| classify(db_err(e)))?;
            done += n;
            if n == 0 {
                return Ok(done);
            }
        }
    }

    /// Before a write transaction ([`gate`]): a hook (a store with a deadline) holds the gate
    /// shared until the returned guard drops (after its commit or rollback); any other writer
    /// waits, at most [`gate::YIELD_MAX`], until no hook holds it.
    fn pass_gate(&self) -> Option<gate::Held<'_>> {
        let g = self.gate_file()?;
        if let Some(deadline) = self.deadline {
            gate::hold(g, deadline)
        } else {
            gate::yield_to_hooks(g);
            None
        }
    }

    /// Where this store lives (as opened: a symlink is not followed).
    pub fn location(&self) -> &StoreLocation {
        &self.location
    }

    /// The SQLite file this store was opened at ([`StoreLocation::sqlite_path`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn configure(&self) -> Result<()> {
        // `parts` compressed and `tools` rendered from it (schema 13): the triggers and the
        // full-text index's content view call these.
        packed::register(&self.conn)?;
        let mode: String = self
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .db()?;
        if !mode.eq_ignore_ascii_case("wal") {
            let _: String = self
                .conn
                .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
                .db()?;
        }
        // The last connection to close would checkpoint the WAL into the database and delete
        // it: two to four fsyncs, most of a short hook's wall time on a busy disk. The WAL is
        // checkpointed instead by the commits that grow it past 256 pages (1 MiB; the next
        // process to open the store re-reads the WAL to rebuild its index, so it is kept
        // small), and truncated to at most 32 MiB once checkpointed.
        self.conn
            .set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
            .db()?;
        // The query planner's stability guarantee: a statement's plan does not depend on the
        // values bound to it. Without it, SQLite (built with STAT4) marks bound parameters
        // that could change a plan, and every new binding recompiles the statement: FTS5's own
        // `SELECT pgno FROM …_idx WHERE segid=? AND term<=?`, run once per term and segment,
        // was recompiled 89 times per search on a 1 GB store.
        self.conn
            .set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
            .db()?;
        // `secure_delete`: whatever a write frees (a row's old version when a hook rewrites a
        // message, its overflow pages, deleted events and tool calls) is overwritten with zeros
        // at once, on every connection: a later `memtrail sessions delete` or `redact --rescan`
        // then leaves no copy of the text in free pages (cost: docs/benchmarks.md).
        self.conn
            .execute_batch(
                "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY;
             PRAGMA secure_delete = ON;",
            )
            .db()?;
        // A hook's store has its own WAL callback instead (set by `set_deadline`, which
        // this pragma would replace): see `hook_checkpoints`.
        if self.deadline.is_none() {
            self.conn
                .pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES)
                .db()?;
        }
        self.conn
            .pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT_BYTES)
            .db()?;
        Ok(())
    }

    /// The file SQLite opened (a store reached through a symlink: the link's target, beside
    /// which SQLite keeps `-wal` and `-shm`), else the path given.
    pub(crate) fn real_path(&self) -> PathBuf {
        match self.conn.path() {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => self.path.clone(),
        }
    }

    /// The connection's busy handling as [`Store::set_deadline`] left it (after a call that
    /// changed it for itself): the deadline's handler, else the busy timeout.
    pub(crate) fn restore_busy_handling(&mut self) {
        let _ = match self.deadline {
            Some(_) => self.conn.busy_handler(Some(deadline_busy_handler)),
            None => self.conn.busy_timeout(self.busy),
        };
    }

    /// Bound every later wait for a lock (reads and writes) by `deadline` (a hook's time
    /// budget): until it, SQLite's busy handler waits in growing steps (1 ms to 100 ms) capped
    /// by what is left; past it, nothing waits, and a write fails with [`Error::Busy`] when
    /// another process holds the lock. `None` restores the store's own busy timeout.
    ///
    /// The deadline is process-wide (SQLite's busy handler is a plain function): a process has
    /// one deadline at a time, the last one set.
    pub fn set_deadline(&mut self, deadline: Option<Instant>) -> Result<()> {
        self.deadline = deadline;
        match deadline {
            Some(d) => {
                *DEADLINE.lock().unwrap_or_else(|e| e.into_inner()) = Some(d);
                self.conn.busy_handler(Some(deadline_busy_handler)).db()?;
                // The WAL callback (it replaces `wal_autocheckpoint`): a passive checkpoint
                // (it waits for no lock) when `hook_checkpoints` says so. A checkpoint that
                // cannot finish is no error of the commit, which has happened.
                let gate = self.gate_file().and_then(|g| g.try_clone().ok());
                self.conn
                    .wal_hook(Some(
                        move |wal: &mut rusqlite::hooks::Wal, pages: std::ffi::c_int| {
                            let bulk = || gate.as_ref().is_some_and(gate::bulk_writer_active);
                            if hook_checkpoints(pages, bulk) {
                                let _ = wal.checkpoint();
                            }
                            Ok(())
                        },
                    ))
                    .db()?;
            }
            None => {
                self.conn.busy_timeout(self.busy).db()?;
                // Replaces the hook's WAL callback with SQLite's automatic checkpoint.
                self.conn
                    .pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES)
                    .db()?;
            }
        }
        Ok(())
    }

    /// [`Store::open_with_timeout`] for a process with a deadline (see [`Store::set_deadline`]):
    /// opening (which reads the schema version) waits for locks only until `deadline` too.
    pub fn open_until(location: impl Into<StoreLocation>, deadline: Instant) -> Result<Store> {
        let busy = deadline.saturating_duration_since(Instant::now());
        Self::open_inner(location.into(), busy, Some(deadline), None)
    }

    /// Run `f` inside one `BEGIN IMMEDIATE` transaction; commit when it returns `Ok`, roll back
    /// otherwise (nothing of a failed transaction is ever visible).
    ///
    /// Getting the write lock: SQLite's busy handler waits up to the busy timeout (with a
    /// deadline, see [`Store::set_deadline`]: until the deadline); when the lock is still taken, the attempt is
    /// repeated up to [`WRITE_RETRIES`] times after a jittered pause of 5–50 ms (never past
    /// the deadline), then [`Error::Busy`] is returned. A full disk or a store at its size
    /// limit (`SQLITE_FULL`) is [`Error::Full`]; the transaction is rolled back.
    pub fn write<T>(&mut self, f: impl FnOnce(&Writer<'_>) -> Result<T>) -> Result<T> {
        let started = Instant::now();
        let gate = self.pass_gate();
        let mut attempt = 0u32;
        let tx = loop {
            // With a deadline, the busy handler (see `set_deadline`) does the waiting.
            match begin_immediate(&self.conn) {
                Ok(tx) => break tx,
                Err(e) if is_busy(&e) => {
                    let pause = Duration::from_millis(5 + jitter() % 46);
                    let in_time = self.deadline.is_none_or(|d| Instant::now() + pause < d);
                    if attempt >= WRITE_RETRIES || !in_time {
                        return Err(Error::Busy {
                            waited_ms: started.elapsed().as_millis() as u64,
                        });
                    }
                    attempt += 1;
                    std::thread::sleep(pause);
                }
                Err(e) => return Err(classify(db_err(e))),
            }
        };
        let out = f(&Writer::new(&tx)).map_err(classify)?;
        tx.commit().map_err(|e| classify(db_err(e)))?;
        drop(gate);
        self.bound_wal();
        Ok(out)
    }

    /// Fold the WAL back into the database file and start it over, truncated:
    /// `PRAGMA wal_checkpoint(TRUNCATE)`, waiting at most [`CHECKPOINT_WAIT`] for the writer
    /// and for readers of older snapshots (writers wait meanwhile, so the wait is short); when
    /// they do not finish in time, what could be copied is copied and the WAL is left for a
    /// later checkpoint. Returns (busy: the WAL could not be restarted, WAL frames, frames
    /// checkpointed). Called after an import and a repair: the automatic checkpoint (every
    /// [`WAL_AUTOCHECKPOINT_PAGES`] pages) never restarts a WAL that readers keep using, so
    /// under steady searching the WAL would otherwise only grow.
    ///
    /// A background writer (no deadline) first yields to hooks ([`gate`]) and then asks for the
    /// locks every millisecond, as often as a waiting hook does.
    pub fn checkpoint(&mut self) -> Result<(bool, i64, i64)> {
        let background = self.deadline.is_none();
        if background {
            let _ = self.pass_gate();
            CHECKPOINT_UNTIL.with(|u| u.set(Some(Instant::now() + CHECKPOINT_WAIT)));
            self.conn.busy_handler(Some(checkpoint_busy_handler)).db()?;
        }
        let r = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                Ok((r.get::<_, i64>(0)? != 0, r.get(1)?, r.get(2)?))
            });
        if background {
            CHECKPOINT_UNTIL.with(|u| u.set(None));
            self.conn.busy_timeout(self.busy).db()?;
        }
        if matches!(r, Ok((false, _, _))) {
            // The WAL started over: nothing a delete left is in the files any more.
            maintenance::forget_scrub(self);
        }
        r.db()
    }

    /// After a background writer's commit: when the WAL file has grown past
    /// [`WAL_BOUND_BYTES`] (readers that never all let go kept the automatic checkpoints
    /// from restarting it), [`Store::checkpoint`]. One `stat` of the `-wal` file otherwise. When the
    /// checkpoint cannot restart the WAL in time, the next try is [`WAL_BOUND_RETRY`] later
    /// ([`WAL_BOUND_URGENT_RETRY`] once the WAL is past [`WAL_BOUND_URGENT_BYTES`]).
    fn bound_wal(&mut self) {
        if self.deadline.is_some() {
            return;
        }
        // The WAL beside the file SQLite opened (a store reached through a symlink has it
        // beside the link's target).
        let mut wal = match self.conn.path() {
            Some(p) if !p.is_empty() => std::ffi::OsString::from(p),
            _ => self.path.as_os_str().to_owned(),
        };
        wal.push("-wal");
        let len = std::fs::metadata(&wal).map_or(0, |m| m.len());
        let pause = if len > WAL_BOUND_URGENT_BYTES {
            WAL_BOUND_URGENT_RETRY
        } else {
            WAL_BOUND_RETRY
        };
        if len > WAL_BOUND_BYTES && self.wal_bound_failed.is_none_or(|t| t.elapsed() >= pause) {
            let restarted = matches!(self.checkpoint(), Ok((false, _, _)));
            self.wal_bound_failed = (!restarted).then(Instant::now);
        }
    }

    /// Settings for a connection that answers many searches (the MCP server, the web page's
    /// readers, `memtrail browse`): a 16 MiB page cache instead of SQLite's 2 MiB. A search of two frequent words
    /// reads ~2,000 pages of the full-text index (8 MB), so at 2 MiB each search read them from
    /// the file again: on the 1 GB bench store, in-process `error test` 4.2 ms median with 2
    /// MiB, 2.4–2.5 ms with 16 MiB, 2.5 ms with 64 MiB (docs/benchmarks.md, "Searches of a
    /// long-lived reader"). A one-shot CLI search gains nothing from a larger cache (it costs
    /// more to fill than it saves in one search): it reads through a memory map instead
    /// ([`Store::map_for_reads`]). A hook keeps the default: its memory is part of its targets.
    /// Best effort.
    pub fn tune_for_serving(&self) {
        let _ = self
            .conn
            .pragma_update(None, "cache_size", SERVING_CACHE_KIB);
    }

    /// Settings for a one-shot process that reads many pages once (the CLI's `search`): SQLite
    /// reads the store through a memory map of the file (`PRAGMA mmap_size`, up to
    /// [`READ_MAP_BYTES`]; SQLite caps it at its compile-time limit, 2 GiB, and reads pages past
    /// the map as before) instead of one `pread` per page. A search of two frequent words walks
    /// their whole doclists newest first, ~4,200 page reads on the 1 GB bench store
    /// (docs/benchmarks.md, "The CLI search: one open, pages mapped"). Writes still go through
    /// the WAL as before. Not for long-lived readers (every page they ever touched would stay
    /// in their resident size; their page cache serves them, [`Store::tune_for_serving`]), nor
    /// for hooks, nor before reading every stored vector (they would stay resident too). The
    /// cost of a map: a read error of the disk under a mapped page ends the process (`SIGBUS`)
    /// where `pread` would have returned SQLite's "disk I/O error"; for a one-shot search, which
    /// writes nothing but the index queue's catch-up in its own transaction, the outcome for
    /// the store is the same. Best effort.
    pub fn map_for_reads(&self) {
        let _ = self.conn.pragma_update(None, "mmap_size", READ_MAP_BYTES);
    }

    /// Undo [`Store::tune_for_bulk_writes`]: the bulk writer's mark released, SQLite's
    /// default page cache and [`WAL_AUTOCHECKPOINT_PAGES`] again. Best effort (a store that
    /// was not tuned is left as it is).
    pub fn end_bulk_writes(&self) {
        if let Some(g) = self.gate_file() {
            gate::unmark_bulk_writer(g);
        }
        let _ = self.conn.pragma_update(None, "cache_size", -2000);
        if self.deadline.is_none() {
            let _ = self
                .conn
                .pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES);
        }
    }

    /// Settings for a long run of writes (an import): a 64 MiB page cache (SQLite's default
    /// is 2 MiB, so B-tree pages of a large store are read again and again) and a WAL
    /// checkpointed every 8192 pages (32 MiB) instead of every [`WAL_AUTOCHECKPOINT_PAGES`],
    /// so that pages changed by many small transactions are copied into the database file
    /// less often. For this connection only; the import checkpoints when it ends. While the
    /// connection is open (or until [`Store::end_bulk_writes`]) it is marked a bulk writer:
    /// hooks leave its WAL to it (`hook_checkpoints`).
    pub fn tune_for_bulk_writes(&self) -> Result<()> {
        // Hooks leave the WAL to this connection while it is open (`hook_checkpoints`).
        if let Some(g) = self.gate_file() {
            gate::mark_bulk_writer(g);
        }
        self.conn.pragma_update(None, "cache_size", -65536).db()?;
        self.conn
            .pragma_update(None, "wal_autocheckpoint", 8192)
            .db()?;
        Ok(())
    }

    /// Fault injection for tests: with `full`, this connection may not grow the database file
    /// past its current size (`PRAGMA max_page_count`), so the next write that needs more room
    /// fails as on a full disk ([`Error::Full`]); without, the limit is lifted.
    #[doc(hidden)]
    pub fn simulate_full_disk(&self, full: bool) -> Result<()> {
        let pages: i64 = if full {
            self.conn
                .query_row("PRAGMA page_count", [], |r| r.get(0))
                .db()?
        } else {
            1_073_741_823
        };
        let _: i64 = self
            .conn
            .query_row(&format!("PRAGMA max_page_count = {pages}"), [], |r| {
                r.get(0)
            })
            .db()?;
        Ok(())
    }
}

/// `BEGIN IMMEDIATE` on `conn`, for every write transaction of the store. An interrupt
/// ([`Interrupt`], a [`Stop`]) that stops the `BEGIN` itself leaves the connection in a write
/// transaction with no [`rusqlite::Transaction`] to end it (SQLite 3.54: the write lock is then
/// held until the connection closes, and every hook waits); that transaction is rolled back
/// before the error is returned.
pub(super) fn begin_immediate(conn: &Connection) -> rusqlite::Result<rusqlite::Transaction<'_>> {
    rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate).inspect_err(|_| {
        if !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
    })
}

/// FTS5's structure record of the full-text index (the row of `messages_fts_data` whose id is
/// 10), decoded ([`segments::Structure::decode`]); `None` when missing or not understood.
fn index_structure_of(conn: &Connection) -> Result<Option<segments::Structure>> {
    let record: Option<Vec<u8>> = conn
        .prepare_cached("SELECT block FROM messages_fts_data WHERE id = 10")
        .db()?
        .query_row([], |r| r.get(0))
        .optional()
        .db()?;
    Ok(record.as_deref().and_then(segments::Structure::decode))
}

#[cfg(test)]
mod search_catch_up {
    use super::*;
    use rusqlite::ffi;

    fn failure(code: std::ffi::c_int) -> Error {
        Error::Store(StoreError(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(code),
            None,
        )))
    }

    /// An interrupt in the tidy-up stops the search (`browse` interrupts a search a newer
    /// keystroke made stale: it was lost when it came during the tidy-up); a busy or
    /// read-only store's tidy-up does not; the catch-up's own result is kept otherwise.
    #[test]
    fn an_interrupted_tidy_up_stops_the_search_and_other_errors_do_not() {
        let interrupted = search_catch_up_outcome(Ok(0), Err(failure(ffi::SQLITE_INTERRUPT)));
        assert!(
            matches!(&interrupted, Err(e) if is_interrupted(e)),
            "{interrupted:?}"
        );
        assert!(matches!(
            search_catch_up_outcome(Ok(3), Err(failure(ffi::SQLITE_BUSY))),
            Ok(3)
        ));
        assert!(matches!(
            search_catch_up_outcome(Ok(0), Err(failure(ffi::SQLITE_READONLY))),
            Ok(0)
        ));
        assert!(matches!(search_catch_up_outcome(Ok(5), Ok(())), Ok(5)));
        let caught = search_catch_up_outcome(Err(failure(ffi::SQLITE_INTERRUPT)), Ok(()));
        assert!(matches!(&caught, Err(e) if is_interrupted(e)));
        assert!(!is_interrupted(&failure(ffi::SQLITE_BUSY)));
    }

    /// The same through a search: an interrupt that stops a statement of the tidy-up (the
    /// only write transaction of a search with nothing to index) makes the search fail as
    /// interrupted, where it used to run on; the tidy-up merged nothing.
    #[test]
    fn a_search_whose_tidy_up_is_interrupted_fails_as_interrupted() {
        use crate::query::prefix_oracle::{claude_session, text_message};
        use memtrail_adapters::Record;
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("m.db")).unwrap();
        let sid = claude_session(&mut store, "s");
        // One large segment, then small ones (a tidy-up never merges the largest's level).
        for round in 0..8 {
            let records = (0..if round == 0 { 400 } else { 10 })
                .map(|j| {
                    let id = format!("m{round}-{j}");
                    Record::Message(text_message(id, format!("wombat r{round}x{j}"), 1_000))
                })
                .collect();
            store.write(|w| w.apply(sid, records)).unwrap();
            store.catch_up_index(None).unwrap();
            if round == 0 {
                store.optimize_index().unwrap();
            }
        }
        let before = store.index_structure().unwrap().unwrap();
        assert!(before.tidy_would_merge(), "{before:?}");
        assert_eq!(store.pending_index().unwrap(), 0);
        // The first statement step taken while the connection holds a write transaction is
        // stopped, once (the tidy-up's; its rollback then runs).
        // SAFETY: the handle stays valid while `store` lives; the handler is removed before.
        let db = unsafe { store.conn.handle() } as usize;
        let fired = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let fire = std::sync::Arc::clone(&fired);
        store
            .conn
            .progress_handler(
                1,
                Some(move || {
                    // SAFETY: as above; `sqlite3_txn_state` only reads the connection's state.
                    let state = unsafe {
                        ffi::sqlite3_txn_state(db as *mut ffi::sqlite3, c"main".as_ptr())
                    };
                    state == ffi::SQLITE_TXN_WRITE
                        && !fire.swap(true, std::sync::atomic::Ordering::Relaxed)
                }),
            )
            .unwrap();
        let f = crate::query::SearchFilter::default();
        let r = crate::query::search(&store, "wombat", &f);
        assert!(fired.load(std::sync::atomic::Ordering::Relaxed));
        assert!(matches!(&r, Err(e) if is_interrupted(e)), "{r:?}");
        assert!(store.conn.is_autocommit());
        assert_eq!(store.index_structure().unwrap().unwrap(), before);
        store
            .conn
            .progress_handler(0, None::<fn() -> bool>)
            .unwrap();
        // The lock was let go: the next search tidies and answers.
        assert!(
            !crate::query::search(&store, "wombat", &f)
                .unwrap()
                .is_empty()
        );
        assert!(!store.index_structure().unwrap().unwrap().tidy_would_merge());
    }
}

#[cfg(test)]
mod reader_settings {
    use super::*;

    fn pragma(s: &Store, name: &str) -> i64 {
        s.conn
            .query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
            .unwrap()
    }

    /// A store opened for a one-shot search reads through a memory map (SQLite caps the size
    /// asked for at its own limit, at least 1 GiB in every build we ship); one opened for
    /// serving keeps a 16 MiB page cache; a store opened plainly does neither.
    #[test]
    fn reads_are_mapped_and_servers_cache_only_where_asked() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("a.db");
        let plain = Store::open(db.as_path()).unwrap();
        assert_eq!(pragma(&plain, "mmap_size"), 0);
        assert_eq!(pragma(&plain, "cache_size"), -2000);
        let mapped = Store::open(db.as_path()).unwrap();
        mapped.map_for_reads();
        let size = pragma(&mapped, "mmap_size");
        assert!(
            (1 << 30..=READ_MAP_BYTES).contains(&size),
            "mmap_size {size}"
        );
        let serving = Store::open(db.as_path()).unwrap();
        serving.tune_for_serving();
        assert_eq!(pragma(&serving, "cache_size"), SERVING_CACHE_KIB);
        assert_eq!(pragma(&serving, "mmap_size"), 0);
    }
}

#[cfg(test)]
mod foreign_files {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    fn side_files(p: &Path) -> Vec<String> {
        ["-wal", "-shm", "-journal"]
            .iter()
            .map(|s| format!("{}{s}", p.display()))
            .filter(|s| Path::new(s).exists())
            .collect()
    }

    /// Another program's SQLite database, or a file that is not SQLite, named as the store is
    /// refused and left byte for byte and mode for mode as it was: no memtrail table, no WAL,
    /// no `-wal`/`-shm`, no chmod.
    #[test]
    fn another_programs_database_is_refused_and_left_as_it_was() {
        let d = tempfile::tempdir().unwrap();
        let foreign = d.path().join("notes.db");
        {
            let c = Connection::open(&foreign).unwrap();
            c.execute_batch("CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('keep me');")
                .unwrap();
        }
        let not_sqlite = d.path().join("notes.txt");
        std::fs::write(&not_sqlite, vec![b'x'; 8192]).unwrap();
        // One byte: SQLite would take it for an empty database (a review: it became a store).
        let one_byte = d.path().join("nl.txt");
        std::fs::write(&one_byte, b"\n").unwrap();
        // Tables named as memtrail's but no schema version (a chat program's own).
        let lookalike = d.path().join("chat.db");
        {
            let c = Connection::open(&lookalike).unwrap();
            c.execute_batch(
                "CREATE TABLE sessions (id INTEGER PRIMARY KEY, user TEXT);
                 CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT);",
            )
            .unwrap();
        }
        // No schema object, but a version and an application id of its own.
        let versioned = d.path().join("app.db");
        {
            let c = Connection::open(&versioned).unwrap();
            c.execute_batch("PRAGMA user_version = 7; PRAGMA application_id = 1234; VACUUM;")
                .unwrap();
        }
        for p in [&foreign, &not_sqlite, &one_byte, &lookalike, &versioned] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap();
            let before = std::fs::read(p).unwrap();
            let err = Store::open(p.as_path()).err().expect("refused");
            assert!(matches!(err, Error::Invalid(_)), "{err}");
            let text = err.to_string();
            assert!(
                text.contains("is not a memtrail store") && text.contains("left as it is"),
                "{text}"
            );
            assert_eq!(std::fs::read(p).unwrap(), before, "{}", p.display());
            assert_eq!(mode(p), 0o644, "{}", p.display());
            assert_eq!(side_files(p), Vec::<String>::new());
        }
        let c = Connection::open(&foreign).unwrap();
        let tables: Vec<String> = c
            .prepare("SELECT name FROM sqlite_schema")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(tables, ["notes"]);
        let journal: String = c
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(journal, "delete");
    }

    /// An empty file, an empty SQLite database and a store of an older version are opened (and
    /// made owner-only, then migrated).
    #[test]
    fn an_empty_file_or_database_becomes_a_store() {
        let d = tempfile::tempdir().unwrap();
        let empty_file = d.path().join("empty");
        std::fs::write(&empty_file, b"").unwrap();
        let empty_db = d.path().join("empty.db");
        {
            let c = Connection::open(&empty_db).unwrap();
            c.execute_batch("PRAGMA user_version = 0; VACUUM;").unwrap();
        }
        for p in [&empty_file, &empty_db] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap();
            let s = Store::open(p.as_path()).unwrap();
            assert_eq!(s.schema_version().unwrap(), schema::SCHEMA_VERSION);
            assert_eq!(mode(p), 0o600);
            drop(s);
            // Opened again: now memtrail's own.
            Store::open(p.as_path()).unwrap();
        }
    }
}

#[cfg(test)]
mod hook_busy_pauses {
    use super::*;

    /// A hook waiting for the write lock looks again within 2 ms all along (the writer it waits
    /// for begins nothing new while it waits: any longer pause is only time lost after that
    /// writer's commit), and never spins: every pause is at least 1 ms.
    #[test]
    fn a_waiting_hook_tries_again_every_one_to_two_ms() {
        for n in (-1..64).chain([1_000, i32::MAX]) {
            let p = hook_busy_pause(n);
            assert!(
                (Duration::from_millis(1)..=Duration::from_millis(2)).contains(&p),
                "pause {p:?} before try {n}"
            );
        }
        assert_eq!(hook_busy_pause(0), Duration::from_millis(1));
        assert_eq!(hook_busy_pause(10), Duration::from_millis(2));
    }
}
