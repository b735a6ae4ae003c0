//! The SQLite store: sessions, messages, tool calls, ingest cursors, hook runs, and an FTS5 index.
//!
//! Layout (schema version [`SCHEMA_VERSION`], kept in `PRAGMA user_version`):
//! - `sessions`: one row per agent session (`agent`, `external_id` unique together), with its
//!   parent for sub-agents, project directory, title, model, branch, start/update times (ms since
//!   the Unix epoch) and a message count.
//! - `messages`: one row per message, `(session_id, ext_id)` unique, `seq` the order within the
//!   session (0-based, assigned at first insert, never changed by a merge). `body` is the prose,
//!   `tools` the tool calls flattened for search, `parts` the full ordered parts as JSON.
//! - `tool_calls`: `(session_id, call_id)` → message, so a late tool result finds its call.
//! - `messages_fts`: FTS5, external content on `messages(body, tools, cjk)`, `porter unicode61`,
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
//! - `events` (schema 3): the events of each message ([`crate::events::extract`]), with the
//!   message's `seq`; deleted with their message (`ON DELETE CASCADE`: rewinds, re-reads) and
//!   re-extracted whenever the message changes (a merge, a replace, a late tool result).
//!   Correlations are not stored: they are computed when read ([`crate::resume`]).
//! - `snapshots` (schema 3): snapshots built at compaction or restart (`trigger`), and when and
//!   by which session they were consumed (injected), so each is injected once.
//!
//! The database runs in WAL mode with a busy timeout, and closing it does not checkpoint (commits
//! that grow the WAL past 256 pages do); every write is a `BEGIN IMMEDIATE`
//! transaction (a deferred transaction that upgrades to a write fails at once with
//! `database is locked` instead of waiting; see `../shared/reference/crates.md` §1).

use crate::events::{Category, Event};
use crate::snapshot::Snapshot;
use crate::{Error, Result};
use memtrail_adapters::{
    Agent, Kind, Message, Part, Record, Role, SessionMeta, SessionRef, ToolCall,
};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The schema version this binary writes. A store with a higher version is refused.
pub const SCHEMA_VERSION: i64 = 5;

/// Cap on the bytes of one tool output copied into the search index (the full output stays in
/// `messages.parts`).
pub const INDEXED_OUTPUT_CAP: usize = 32 * 1024;

const MIGRATIONS: &[&str] = &[
    // 1: the initial schema.
    r#"
    CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        agent TEXT NOT NULL,
        external_id TEXT NOT NULL,
        parent_external_id TEXT,
        project_dir TEXT,
        title TEXT,
        model TEXT,
        git_branch TEXT,
        agent_version TEXT,
        started_at INTEGER,
        updated_at INTEGER,
        message_count INTEGER NOT NULL DEFAULT 0,
        UNIQUE (agent, external_id)
    );
    CREATE INDEX sessions_by_updated ON sessions (updated_at DESC);
    CREATE INDEX sessions_by_agent_updated ON sessions (agent, updated_at DESC);
    CREATE INDEX sessions_by_project_updated ON sessions (project_dir, updated_at DESC);
    CREATE INDEX sessions_by_parent ON sessions (agent, parent_external_id);

    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        session_id INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        ext_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL,
        kind TEXT NOT NULL,
        ts INTEGER,
        model TEXT,
        body TEXT NOT NULL,
        tools TEXT NOT NULL,
        cjk TEXT,
        parts TEXT NOT NULL,
        UNIQUE (session_id, ext_id)
    );
    CREATE INDEX messages_by_session_seq ON messages (session_id, seq);
    CREATE INDEX messages_by_ts ON messages (ts);

    CREATE TABLE tool_calls (
        session_id INTEGER NOT NULL,
        call_id TEXT NOT NULL,
        message_id INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        tool TEXT NOT NULL,
        is_error INTEGER NOT NULL DEFAULT 0,
        has_output INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (session_id, call_id)
    ) WITHOUT ROWID;
    CREATE INDEX tool_calls_by_message ON tool_calls (message_id);

    CREATE VIRTUAL TABLE messages_fts USING fts5 (
        body, tools, cjk,
        content = 'messages', content_rowid = 'id',
        tokenize = 'porter unicode61'
    );
    CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, body, tools, cjk)
            VALUES (new.id, new.body, new.tools, new.cjk);
    END;
    CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, tools, cjk)
            VALUES ('delete', old.id, old.body, old.tools, old.cjk);
    END;
    CREATE TRIGGER messages_au AFTER UPDATE OF body, tools, cjk ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, tools, cjk)
            VALUES ('delete', old.id, old.body, old.tools, old.cjk);
        INSERT INTO messages_fts (rowid, body, tools, cjk)
            VALUES (new.id, new.body, new.tools, new.cjk);
    END;

    CREATE TABLE sources (
        path TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        session_id INTEGER REFERENCES sessions (id) ON DELETE SET NULL,
        offset INTEGER NOT NULL DEFAULT 0,
        size INTEGER NOT NULL DEFAULT 0,
        dev INTEGER,
        ino INTEGER,
        mtime_ns INTEGER,
        head_len INTEGER NOT NULL DEFAULT 0,
        head_hash TEXT,
        lines INTEGER NOT NULL DEFAULT 0,
        skipped INTEGER NOT NULL DEFAULT 0,
        malformed INTEGER NOT NULL DEFAULT 0,
        unknown INTEGER NOT NULL DEFAULT 0,
        ingested_at INTEGER
    );

    CREATE TABLE hook_runs (
        agent TEXT NOT NULL,
        event TEXT NOT NULL,
        at INTEGER NOT NULL,
        duration_us INTEGER NOT NULL,
        session TEXT,
        messages INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        PRIMARY KEY (agent, event)
    ) WITHOUT ROWID;
    "#,
    // 2: reader state kept with the cursor (readers that need context across ingests).
    r#"
    ALTER TABLE sources ADD COLUMN reader_state TEXT;
    ALTER TABLE sources ADD COLUMN tail_len INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sources ADD COLUMN tail_hash TEXT;
    "#,
    // 3: events (per message, deleted with it) and snapshots (with their consumption). The
    // events of messages stored before are backfilled right after this batch (see
    // `Store::migrate`).
    r#"
    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        session_id INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        message_id INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        category TEXT NOT NULL,
        action TEXT NOT NULL,
        priority INTEGER NOT NULL,
        subject TEXT NOT NULL,
        detail TEXT,
        call_id TEXT,
        tool TEXT,
        ts INTEGER
    );
    CREATE INDEX events_by_session_seq ON events (session_id, seq, id);
    CREATE INDEX events_by_session_category ON events (session_id, category);
    CREATE INDEX events_by_message ON events (message_id);

    CREATE TABLE snapshots (
        id INTEGER PRIMARY KEY,
        session_id INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        built_at INTEGER NOT NULL,
        trigger TEXT NOT NULL,
        budget INTEGER NOT NULL,
        events INTEGER NOT NULL,
        text TEXT NOT NULL,
        consumed_at INTEGER,
        consumed_by TEXT
    );
    CREATE INDEX snapshots_by_session ON snapshots (session_id, built_at DESC, id DESC);
    "#,
    // 4: the full-text index is brought up to date after the write instead of inside it: a
    // written or changed message is queued in `fts_pending`, and `index_pending` indexes the
    // queue (searches, imports and the MCP server do; see `Store::catch_up_index`). A message
    // leaves the index (FTS5 'delete' with its old values) only if it was indexed, that is,
    // not queued.
    r#"
    CREATE TABLE IF NOT EXISTS fts_pending (id INTEGER PRIMARY KEY);
    DROP TRIGGER IF EXISTS messages_ai;
    DROP TRIGGER IF EXISTS messages_ad;
    DROP TRIGGER IF EXISTS messages_au;
    CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
        INSERT OR IGNORE INTO fts_pending (id) VALUES (new.id);
    END;
    CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, tools, cjk)
            SELECT 'delete', old.id, old.body, old.tools, old.cjk
            WHERE NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
        DELETE FROM fts_pending WHERE id = old.id;
    END;
    CREATE TRIGGER messages_au AFTER UPDATE OF body, tools, cjk ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, tools, cjk)
            SELECT 'delete', old.id, old.body, old.tools, old.cjk
            WHERE NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
        INSERT OR IGNORE INTO fts_pending (id) VALUES (new.id);
    END;
    -- FTS5 flushes its in-memory terms to a new segment every 1 MiB by default; a catch-up of
    -- thousands of messages then makes many small segments, merged again and again.
    INSERT INTO messages_fts (messages_fts, rank) VALUES ('hashsize', 16777216);
    "#,
    // 5: FTS5 `secure-delete` (SQLite 3.44+, kept in the index's config): a 'delete' (a
    // deleted session, a message that a later hook rewrote or `redact --rescan` redacted)
    // removes the old terms from the segments at once, instead of adding a delete marker beside
    // them until the segments merge, so a deleted word is not left in the file. Entries deleted
    // before this migration stay until the next merge (`sessions delete`, `purge` and
    // `redact --rescan` merge the whole index).
    r#"
    INSERT INTO messages_fts (messages_fts, rank) VALUES ('secure-delete', 1);
    "#,
];

/// Longest wait for the write lock before a search indexes the queue
/// ([`Store::catch_up_for_search`]).
pub const SEARCH_INDEX_WAIT: Duration = Duration::from_secs(1);

/// How many queued messages one transaction of [`Store::catch_up_index`] indexes.
pub const INDEX_CHUNK: usize = 2000;

/// The schema version whose migration creates the `events` table; a store migrated across it
/// gets the events of its stored messages extracted in the same transaction.
const EVENTS_SCHEMA: i64 = 3;

/// Where the store lives: `MEMTRAIL_DB` when set, else `$XDG_DATA_HOME/memtrail/memtrail.db`
/// (`~/.local/share/memtrail/memtrail.db`). A `--db` flag is applied by the caller before this.
pub fn default_db_path() -> PathBuf {
    match std::env::var_os("MEMTRAIL_DB") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => memtrail_adapters::paths::xdg_data_home()
            .join("memtrail")
            .join("memtrail.db"),
    }
}

/// An open store.
pub struct Store {
    pub(crate) conn: Connection,
    path: PathBuf,
    /// Longest wait for the write lock per attempt.
    busy: Duration,
    /// See [`Store::set_deadline`].
    deadline: Option<Instant>,
    /// True once [`crate::rank`]'s function is registered on this connection.
    rank_ready: std::cell::Cell<bool>,
    /// The identity of the file opened (see [`Store::is_current`]).
    file_id: Option<(u64, u64)>,
}

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

/// The process's deadline for lock waits (see [`Store::set_deadline`]).
static DEADLINE: std::sync::Mutex<Option<Instant>> = std::sync::Mutex::new(None);

/// SQLite busy handler for a store with a deadline: `true` (try again) after a pause of 1 to
/// 100 ms growing with the number of tries `n`, capped by the time left; `false` (give up with
/// `SQLITE_BUSY`) once the deadline has passed.
fn deadline_busy_handler(n: i32) -> bool {
    const DELAYS_MS: [u64; 12] = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];
    let Some(d) = *DEADLINE.lock().unwrap_or_else(|e| e.into_inner()) else {
        return false;
    };
    let now = Instant::now();
    if now >= d {
        return false;
    }
    let step = DELAYS_MS[(n.max(0) as usize).min(DELAYS_MS.len() - 1)];
    std::thread::sleep(Duration::from_millis(step).min(d - now));
    true
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}

/// SQLite errors that need a clearer name than SQLite's own.
fn classify(e: Error) -> Error {
    match e {
        Error::Sqlite(rusqlite::Error::SqliteFailure(f, _))
            if f.code == rusqlite::ErrorCode::DiskFull =>
        {
            Error::Full
        }
        Error::Sqlite(ref s) if is_busy(s) => Error::Busy { waited_ms: 0 },
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

/// The cursor of one transcript file, as stored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cursor {
    pub session_id: Option<i64>,
    /// Byte offset just past the last complete line ingested.
    pub offset: u64,
    /// File size, identity and modification time at the last ingest.
    pub size: u64,
    pub dev: Option<u64>,
    pub ino: Option<u64>,
    pub mtime_ns: Option<i64>,
    /// Length of the file prefix that `head_hash` covers (min(4096, offset)).
    pub head_len: u64,
    /// blake3 of the first `head_len` bytes, hex.
    pub head_hash: Option<String>,
    /// The reader's state at `offset` (see `LineReader::save_state`), as JSON.
    pub reader_state: Option<serde_json::Value>,
    /// Length of the window just before `offset` that `tail_hash` covers (min(4096, offset)).
    pub tail_len: u64,
    /// blake3 of the `tail_len` bytes before `offset`, hex: a file truncated and regrown past
    /// the first bytes is detected here.
    pub tail_hash: Option<String>,
}

/// Summary figures of the store.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StoreStats {
    pub path: String,
    pub size_bytes: u64,
    pub schema_version: i64,
    pub sessions: i64,
    pub messages: i64,
    /// Per agent: (agent, sessions, messages).
    pub per_agent: Vec<(String, i64, i64)>,
    /// Messages written but not yet in the full-text index ([`Store::pending_index`]).
    pub unindexed: i64,
}

/// The last run of a hook, for status.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HookRun {
    pub agent: String,
    pub event: String,
    /// ms since the Unix epoch.
    pub at: i64,
    pub duration_us: i64,
    pub session: Option<String>,
    pub messages: i64,
    pub error: Option<String>,
}

impl Store {
    /// Open (creating if needed) the store at `path`: parent folder created with mode 0700, the
    /// file with mode 0600, WAL mode, a busy timeout of `busy`, migrations applied. An existing
    /// store (and its `-wal`/`-shm` files) that others could read is tightened to 0600; a `path`
    /// that is a symlink is followed, and its target gets the same treatment.
    ///
    /// Errors: [`Error::NewerSchema`] when the store was written by a newer memtrail; SQLite or
    /// I/O errors otherwise.
    pub fn open_with_timeout(path: &Path, busy: Duration) -> Result<Store> {
        Self::open_inner(path, busy, None)
    }

    fn open_inner(path: &Path, busy: Duration, deadline: Option<Instant>) -> Result<Store> {
        // A store path that is a symlink is followed (the store may live on another disk): the
        // file really opened is its target, created and kept owner-only like any store.
        let real = resolve_links(path);
        if !real.exists() {
            if let Some(dir) = real.parent().filter(|d| !d.as_os_str().is_empty()) {
                create_private_dir(dir)?;
            }
            create_private_file(&real)?;
        }
        make_owner_only(&real)?;
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI,
        )?;
        conn.busy_timeout(busy)?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
            busy,
            deadline: None,
            rank_ready: std::cell::Cell::new(false),
            file_id: file_id(path),
        };
        if deadline.is_some() {
            store.set_deadline(deadline)?;
        }
        let not_a_store = |e: Error| match e {
            Error::Sqlite(rusqlite::Error::SqliteFailure(f, _))
                if f.code == rusqlite::ErrorCode::NotADatabase =>
            {
                Error::Invalid(format!(
                    "{} is not a memtrail store (not an SQLite database)",
                    path.display()
                ))
            }
            other => other,
        };
        store.configure().map_err(not_a_store)?;
        store.migrate().map_err(not_a_store)?;
        Ok(store)
    }

    /// False once the file at this store's path is no longer the one this connection opened
    /// (deleted, e.g. by `memtrail uninstall --purge`, or replaced): a long-running process (the
    /// MCP server) then reopens instead of serving, and indexing into, a deleted file.
    pub fn is_current(&self) -> bool {
        self.file_id.is_some() && file_id(&self.path) == self.file_id
    }

    /// [`Store::open_with_timeout`] with a 5 s busy timeout.
    pub fn open(path: &Path) -> Result<Store> {
        Self::open_with_timeout(path, Duration::from_secs(5))
    }

    /// Register [`crate::rank::FUNCTION`] on this connection, once (the first search does).
    pub(crate) fn ensure_rank_function(&self) -> Result<()> {
        if !self.rank_ready.get() {
            crate::rank::register(&self.conn)?;
            self.rank_ready.set(true);
        }
        Ok(())
    }

    /// How many messages are written but not yet in the full-text index (schema 4: hooks
    /// queue them; see [`Store::catch_up_index`]).
    pub fn pending_index(&self) -> Result<i64> {
        Ok(self
            .conn
            .prepare_cached("SELECT COUNT(*) FROM fts_pending")?
            .query_row([], |r| r.get(0))?)
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

    /// Merge the full-text index into one segment (FTS5 `'optimize'`), in one write
    /// transaction. Every catch-up adds a segment, and a query positions its iterators in each:
    /// on the 1 GB bench store, 15 segments made 20 snippet lookups cost 3.6 ms, one segment
    /// 0.5 ms. It rewrites the whole index (5 s at 1 GB), so only a large import runs it.
    pub fn optimize_index(&mut self) -> Result<()> {
        self.write(|w| {
            w.tx.execute(
                "INSERT INTO messages_fts (messages_fts) VALUES ('optimize')",
                [],
            )?;
            Ok(())
        })
    }

    /// [`Store::catch_up_index`] for a search: the write lock is waited for at most
    /// [`SEARCH_INDEX_WAIT`] (a search must answer even while an import or a repair holds the
    /// lock: it then searches what is indexed, and the caller can tell the user how many new
    /// messages were left out, [`Store::pending_index`]); once it has the lock, the whole queue
    /// is indexed.
    pub fn catch_up_for_search(&self) -> Result<u64> {
        if self.deadline.is_some() {
            // A process with a deadline keeps its own busy handler.
            return self.catch_up_index(None);
        }
        self.conn.busy_timeout(SEARCH_INDEX_WAIT)?;
        let r = self.catch_up_index(None);
        self.conn.busy_timeout(self.busy)?;
        r
    }

    /// [`Store::catch_up_index`] with `chunk` messages per transaction (an import indexes
    /// [`crate::import::IMPORT_INDEX_EVERY`] at a time: fewer, larger FTS5 segments).
    pub fn catch_up_index_by(&self, deadline: Option<Instant>, chunk: usize) -> Result<u64> {
        let mut done = 0u64;
        loop {
            let queued: bool = self
                .conn
                .prepare_cached("SELECT EXISTS (SELECT 1 FROM fts_pending)")?
                .query_row([], |r| r.get(0))?;
            if !queued || deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(done);
            }
            let tx =
                rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
                    .map_err(|e| classify(e.into()))?;
            let n = Writer::new(&tx).index_pending(chunk).map_err(classify)?;
            tx.commit().map_err(|e| classify(e.into()))?;
            done += n;
            if n == 0 {
                return Ok(done);
            }
        }
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn configure(&self) -> Result<()> {
        let mode: String = self
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            let _: String = self
                .conn
                .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        }
        // The last connection to close would checkpoint the WAL into the database and delete
        // it: two to four fsyncs, most of a short hook's wall time on a busy disk. The WAL is
        // checkpointed instead by the commits that grow it past 256 pages (1 MiB; the next
        // process to open the store re-reads the WAL to rebuild its index, so it is kept
        // small), and truncated to at most 32 MiB once checkpointed.
        self.conn
            .set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
        // The query planner's stability guarantee: a statement's plan does not depend on the
        // values bound to it. Without it, SQLite (built with STAT4) marks bound parameters
        // that could change a plan, and every new binding recompiles the statement: FTS5's own
        // `SELECT pgno FROM …_idx WHERE segid=? AND term<=?`, run once per term and segment,
        // was recompiled 89 times per search on a 1 GB store.
        self.conn
            .set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
        // `secure_delete`: whatever a write frees (a row's old version when a hook rewrites a
        // message, its overflow pages, deleted events and tool calls) is overwritten with zeros
        // at once, on every connection: a later `memtrail sessions delete` or `redact --rescan`
        // then leaves no copy of the text in free pages (cost: docs/benchmarks.md).
        self.conn.execute_batch(
            "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY;
             PRAGMA secure_delete = ON;",
        )?;
        self.conn
            .pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES)?;
        self.conn
            .pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT_BYTES)?;
        Ok(())
    }

    fn schema_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    fn migrate(&self) -> Result<()> {
        let v = self.schema_version()?;
        if v == SCHEMA_VERSION {
            return Ok(());
        }
        if v > SCHEMA_VERSION {
            return Err(Error::NewerSchema {
                path: self.path.clone(),
                found: v,
                supported: SCHEMA_VERSION,
            });
        }
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        // Re-check under the write lock: another process may have migrated meanwhile.
        let v: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if v > SCHEMA_VERSION {
            return Err(Error::NewerSchema {
                path: self.path.clone(),
                found: v,
                supported: SCHEMA_VERSION,
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(v as usize) {
            tx.execute_batch(sql)?;
            if (i + 1) as i64 == EVENTS_SCHEMA && v > 0 {
                Writer::new(&tx).backfill_events()?;
            }
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        }
        tx.commit()?;
        Ok(())
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
                self.conn.busy_handler(Some(deadline_busy_handler))?;
            }
            None => self.conn.busy_timeout(self.busy)?,
        }
        Ok(())
    }

    /// [`Store::open_with_timeout`] for a process with a deadline (see [`Store::set_deadline`]):
    /// opening (which reads the schema version) waits for locks only until `deadline` too.
    pub fn open_until(path: &Path, deadline: Instant) -> Result<Store> {
        let busy = deadline.saturating_duration_since(Instant::now());
        Self::open_inner(path, busy, Some(deadline))
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
        let mut attempt = 0u32;
        let tx = loop {
            // With a deadline, the busy handler (see `set_deadline`) does the waiting.
            match rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate) {
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
                Err(e) => return Err(classify(e.into())),
            }
        };
        let out = f(&Writer::new(&tx)).map_err(classify)?;
        tx.commit().map_err(|e| classify(e.into()))?;
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
    pub fn checkpoint(&mut self) -> Result<(bool, i64, i64)> {
        if self.deadline.is_none() {
            self.conn.busy_timeout(CHECKPOINT_WAIT)?;
        }
        let r = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                Ok((r.get::<_, i64>(0)? != 0, r.get(1)?, r.get(2)?))
            });
        if self.deadline.is_none() {
            self.conn.busy_timeout(self.busy)?;
        }
        Ok(r?)
    }

    /// The stored cursor for a transcript path.
    pub fn cursor(&self, path: &str) -> Result<Option<Cursor>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT session_id, offset, size, dev, ino, mtime_ns, head_len, head_hash, reader_state,
                        tail_len, tail_hash
                 FROM sources WHERE path = ?1",
            )?
            .query_row(
                [path],
                |r| {
                    Ok(Cursor {
                        session_id: r.get(0)?,
                        offset: r.get::<_, i64>(1)? as u64,
                        size: r.get::<_, i64>(2)? as u64,
                        dev: r.get::<_, Option<i64>>(3)?.map(|v| v as u64),
                        ino: r.get::<_, Option<i64>>(4)?.map(|v| v as u64),
                        mtime_ns: r.get(5)?,
                        head_len: r.get::<_, i64>(6)? as u64,
                        head_hash: r.get(7)?,
                        reader_state: r
                            .get::<_, Option<String>>(8)?
                            .and_then(|t| serde_json::from_str(&t).ok()),
                        tail_len: r.get::<_, i64>(9)? as u64,
                        tail_hash: r.get(10)?,
                    })
                },
            )
            .optional()?)
    }

    /// Settings for a long run of writes (an import): a 64 MiB page cache (SQLite's default
    /// is 2 MiB, so B-tree pages of a large store are read again and again) and a WAL
    /// checkpointed every 8192 pages (32 MiB) instead of every [`WAL_AUTOCHECKPOINT_PAGES`],
    /// so that pages changed by many small transactions are copied into the database file
    /// less often. For this connection only; the import checkpoints when it ends.
    pub fn tune_for_bulk_writes(&self) -> Result<()> {
        self.conn.pragma_update(None, "cache_size", -65536)?;
        self.conn.pragma_update(None, "wal_autocheckpoint", 8192)?;
        Ok(())
    }

    /// Every transcript cursor's position and file identity, by path (one query; an import
    /// compares them with the files' metadata to pass over unchanged files without opening
    /// them: see [`crate::ingest::unchanged_since`]).
    pub fn cursor_stats(&self) -> Result<std::collections::HashMap<String, CursorStat>> {
        let mut stmt = self.conn.prepare(
            "SELECT path, offset, dev, ino, mtime_ns,
                    COALESCE(reader_state LIKE '%\"memtrail_skip\"%', 0)
             FROM sources",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                CursorStat {
                    offset: r.get::<_, i64>(1)? as u64,
                    dev: r.get::<_, Option<i64>>(2)?.map(|v| v as u64),
                    ino: r.get::<_, Option<i64>>(3)?.map(|v| v as u64),
                    mtime_ns: r.get(4)?,
                    marked: r.get(5)?,
                },
            ))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Figures for `memtrail status`.
    pub fn stats(&self) -> Result<StoreStats> {
        let size_bytes = ["", "-wal"]
            .iter()
            .filter_map(|s| {
                let mut p = self.path.clone().into_os_string();
                p.push(s);
                std::fs::metadata(p).ok().map(|m| m.len())
            })
            .sum();
        let mut per_agent = Vec::new();
        let mut stmt = self.conn.prepare(
            "SELECT agent, COUNT(*), COALESCE(SUM(message_count), 0) FROM sessions
             GROUP BY agent ORDER BY agent",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        for row in rows {
            per_agent.push(row?);
        }
        let sessions = per_agent.iter().map(|(_, s, _)| s).sum();
        let messages = per_agent.iter().map(|(_, _, m)| m).sum();
        Ok(StoreStats {
            path: self.path.display().to_string(),
            size_bytes,
            schema_version: self.schema_version()?,
            sessions,
            messages,
            per_agent,
            unindexed: self.pending_index()?,
        })
    }

    /// `PRAGMA quick_check`: `Ok(())` or the problems SQLite reports.
    pub fn quick_check(&self) -> Result<std::result::Result<(), String>> {
        let mut stmt = self.conn.prepare("PRAGMA quick_check")?;
        let rows: Vec<String> = stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if rows.len() == 1 && rows[0] == "ok" {
            Ok(Ok(()))
        } else {
            Ok(Err(rows.join("; ")))
        }
    }

    /// The last run of each hook event of `agent`, newest first.
    pub fn hook_runs(&self, agent: Agent) -> Result<Vec<HookRun>> {
        let mut stmt = self.conn.prepare(
            "SELECT agent, event, at, duration_us, session, messages, error FROM hook_runs
             WHERE agent = ?1 ORDER BY at DESC",
        )?;
        let rows = stmt.query_map([agent.as_str()], |r| {
            Ok(HookRun {
                agent: r.get(0)?,
                event: r.get(1)?,
                at: r.get(2)?,
                duration_us: r.get(3)?,
                session: r.get(4)?,
                messages: r.get(5)?,
                error: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Record a hook run (one row per agent and event, replaced each time).
    pub fn record_hook_run(&mut self, run: &HookRun) -> Result<()> {
        self.write(|w| {
            w.tx.execute(
                "INSERT OR REPLACE INTO hook_runs (agent, event, at, duration_us, session, messages, error)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![run.agent, run.event, run.at, run.duration_us, run.session, run.messages,
                        // An error may quote what it failed on: redacted like any text.
                        run.error.as_deref().map(crate::redact::redact)],
            )?;
            Ok(())
        })
    }
}

/// Write access inside one transaction (see [`Store::write`]).
pub struct Writer<'a> {
    pub(crate) tx: &'a rusqlite::Transaction<'a>,
    /// The agent of the last session looked up (session row id, agent), for event extraction.
    agent_of: std::cell::Cell<Option<(i64, Option<Agent>)>>,
}

/// What applying records changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applied {
    /// Messages inserted for the first time.
    pub inserted: u64,
    /// Stored messages that a record merged into.
    pub merged: u64,
    /// Tool results attached to stored calls.
    pub results: u64,
    /// Tool results whose call was not found (kept as their own tool message).
    pub orphan_results: u64,
    /// Messages deleted by a rewind.
    pub rewound: u64,
}

impl Writer<'_> {
    /// Insert the session if new, and fold `meta` into it. Returns the session's row id.
    pub fn upsert_session(&self, sref: &SessionRef, meta: &SessionMeta) -> Result<i64> {
        let tx = self.tx;
        // DESIGN principle 5: the title is user text; redact it before it is written.
        let title = meta
            .title
            .as_deref()
            .filter(|t| !t.is_empty())
            .map(crate::redact::redact_title);
        tx.prepare_cached(
            "INSERT INTO sessions (agent, external_id, parent_external_id) VALUES (?1, ?2, ?3)
             ON CONFLICT (agent, external_id) DO NOTHING",
        )?
        .execute(params![
            sref.agent.as_str(),
            sref.external_id,
            sref.parent_external_id
        ])?;
        let id: i64 = tx
            .prepare_cached("SELECT id FROM sessions WHERE agent = ?1 AND external_id = ?2")?
            .query_row(params![sref.agent.as_str(), sref.external_id], |r| r.get(0))?;
        tx.prepare_cached(
            "UPDATE sessions SET
                parent_external_id = COALESCE(parent_external_id, ?2),
                project_dir = COALESCE(?3, project_dir),
                title = COALESCE(title, ?4),
                model = COALESCE(?5, model),
                git_branch = COALESCE(?6, git_branch),
                agent_version = COALESCE(?7, agent_version),
                started_at = CASE WHEN started_at IS NULL OR ?8 < started_at THEN COALESCE(?8, started_at) ELSE started_at END,
                updated_at = CASE WHEN updated_at IS NULL OR ?9 > updated_at THEN COALESCE(?9, updated_at) ELSE updated_at END
             WHERE id = ?1",
        )?
        .execute(params![
                id,
                sref.parent_external_id,
                meta.project_dir,
                title.as_deref(),
                meta.model,
                meta.git_branch,
                meta.agent_version,
                meta.started_at,
                meta.updated_at,
            ],
        )?;
        Ok(id)
    }

    /// Delete every message of a session that came from its transcript (used when the
    /// transcript was rewritten and is re-read: the store mirrors it). Notes kept with MCP
    /// `remember` are not in any transcript and stay. Returns how many messages were deleted.
    pub fn clear_session(&self, session_id: i64) -> Result<u64> {
        self.tx.execute(
            "DELETE FROM tool_calls WHERE session_id = ?1
             AND message_id IN (SELECT id FROM messages WHERE session_id = ?1 AND kind != 'note')",
            [session_id],
        )?;
        let n = self.tx.execute(
            "DELETE FROM messages WHERE session_id = ?1 AND kind != 'note'",
            [session_id],
        )?;
        self.tx.execute(
            "UPDATE sessions SET title = NULL,
                 message_count = (SELECT COUNT(*) FROM messages WHERE session_id = ?1)
             WHERE id = ?1",
            [session_id],
        )?;
        Ok(n as u64)
    }

    /// Apply reader records to a session, with merge semantics (see `model::Record`).
    pub fn apply(&self, session_id: i64, mut records: Vec<Record>) -> Result<Applied> {
        let mut applied = Applied::default();
        applied.results += fold_results(&mut records);
        for mut rec in records {
            // DESIGN principle 5: every record's text, tool inputs and outputs are redacted
            // here, before anything derived from it (parts JSON, FTS columns) is written.
            crate::redact::redact_record(&mut rec);
            match rec {
                Record::Message(m) => {
                    if self.upsert_message(session_id, m)? {
                        applied.inserted += 1;
                    } else {
                        applied.merged += 1;
                    }
                }
                Record::Replace(m) => {
                    if self.replace_message(session_id, m)? {
                        applied.inserted += 1;
                    } else {
                        applied.merged += 1;
                    }
                }
                Record::Rewind { message_id } => {
                    applied.rewound += self.rewind(session_id, &message_id)?;
                }
                Record::ToolResult {
                    call_id,
                    output,
                    is_error,
                    exit_code,
                    timestamp,
                } => {
                    if self.attach_result(session_id, &call_id, &output, is_error, exit_code)? {
                        applied.results += 1;
                    } else {
                        // Keep the output: a tool message of its own, id derived from the call id.
                        applied.orphan_results += 1;
                        let m = Message {
                            id: format!("result:{call_id}"),
                            role: Role::Tool,
                            kind: Kind::ToolResult,
                            parts: vec![Part::ToolResult {
                                call_id,
                                output,
                                is_error,
                            }],
                            timestamp,
                            model: None,
                        };
                        if self.upsert_message(session_id, m)? {
                            applied.inserted += 1;
                        }
                    }
                }
            }
        }
        Ok(applied)
    }

    fn new<'a>(tx: &'a rusqlite::Transaction<'a>) -> Writer<'a> {
        Writer {
            tx,
            agent_of: std::cell::Cell::new(None),
        }
    }

    /// The agent of session `session_id` (`None` for an unknown agent name), looked up once per
    /// transaction and session.
    fn session_agent(&self, session_id: i64) -> Result<Option<Agent>> {
        if let Some((id, agent)) = self.agent_of.get()
            && id == session_id
        {
            return Ok(agent);
        }
        let name: String = self
            .tx
            .prepare_cached("SELECT agent FROM sessions WHERE id = ?1")?
            .query_row([session_id], |r| r.get(0))?;
        let agent = name.parse::<Agent>().ok();
        self.agent_of.set(Some((session_id, agent)));
        Ok(agent)
    }

    /// Index the `max` oldest queued messages (`fts_pending`) and take them off the queue.
    /// Returns how many.
    pub fn index_pending(&self, max: usize) -> Result<u64> {
        let last: Option<i64> = self
            .tx
            .prepare_cached("SELECT id FROM fts_pending ORDER BY id LIMIT 1 OFFSET ?1")?
            .query_row([max.saturating_sub(1) as i64], |r| r.get(0))
            .optional()?;
        let last = last.unwrap_or(i64::MAX);
        self.tx
            .prepare_cached(
                "INSERT INTO messages_fts (rowid, body, tools, cjk)
                 SELECT m.id, m.body, m.tools, m.cjk FROM fts_pending p JOIN messages m ON m.id = p.id
                 WHERE p.id <= ?1 ORDER BY p.id",
            )?
            .execute([last])?;
        Ok(self
            .tx
            .prepare_cached("DELETE FROM fts_pending WHERE id <= ?1")?
            .execute([last])? as u64)
    }

    /// Delete the message `message_id` and every later message of the session. Returns how
    /// many were deleted (0 when the id is unknown).
    fn rewind(&self, session_id: i64, message_id: &str) -> Result<u64> {
        let seq: Option<i64> = self
            .tx
            .query_row(
                "SELECT seq FROM messages WHERE session_id = ?1 AND ext_id = ?2",
                params![session_id, message_id],
                |r| r.get(0),
            )
            .optional()?;
        let Some(seq) = seq else { return Ok(0) };
        let n = self.tx.execute(
            "DELETE FROM messages WHERE session_id = ?1 AND seq >= ?2",
            params![session_id, seq],
        )?;
        self.tx.execute(
            "UPDATE sessions SET message_count =
                 (SELECT COUNT(*) FROM messages WHERE session_id = ?1) WHERE id = ?1",
            params![session_id],
        )?;
        Ok(n as u64)
    }

    /// Insert a message or replace the stored one with the same id. True when inserted.
    fn replace_message(&self, session_id: i64, mut m: Message) -> Result<bool> {
        crate::seams::redact_message(&mut m);
        let rowid: Option<i64> = self
            .tx
            .prepare_cached("SELECT id FROM messages WHERE session_id = ?1 AND ext_id = ?2")?
            .query_row(params![session_id, m.id], |r| r.get(0))
            .optional()?;
        match rowid {
            Some(rowid) => {
                self.tx
                    .prepare_cached("DELETE FROM tool_calls WHERE message_id = ?1")?
                    .execute([rowid])?;
                self.tx
                    .prepare_cached(
                        "UPDATE messages SET role = ?2, ts = ?3, model = ?4 WHERE id = ?1",
                    )?
                    .execute(params![rowid, m.role.as_str(), m.timestamp, m.model])?;
                self.update_message_row(session_id, rowid, &m)?;
                Ok(false)
            }
            None => self.upsert_message(session_id, m),
        }
    }

    /// Insert a message or merge it into the stored one with the same id. True when inserted.
    fn upsert_message(&self, session_id: i64, mut m: Message) -> Result<bool> {
        let existing: Option<(i64, String, String)> = self
            .tx
            .prepare_cached(
                "SELECT id, parts, kind FROM messages WHERE session_id = ?1 AND ext_id = ?2",
            )?
            .query_row(params![session_id, m.id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()?;
        match existing {
            Some((rowid, parts_json, kind)) => {
                let parts: Vec<Part> = serde_json::from_str(&parts_json).unwrap_or_default();
                let mut stored = Message {
                    id: m.id.clone(),
                    role: m.role,
                    kind: kind_from_str(&kind),
                    parts,
                    timestamp: None,
                    model: None,
                };
                let before = stored.parts.clone();
                let before_kind = stored.kind;
                stored.merge(m);
                // Secrets and `<private>` spans across the merged parts (crate::seams).
                crate::seams::redact_message(&mut stored);
                if stored.parts != before || stored.kind != before_kind {
                    self.update_message_row(session_id, rowid, &stored)?;
                }
                Ok(false)
            }
            None => {
                crate::seams::redact_message(&mut m);
                let seq: i64 = self
                    .tx
                    // After the last stored message: `message_count` is a count, which a purge
                    // of old messages makes smaller than the next position.
                    .prepare_cached(
                        "SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE session_id = ?1",
                    )?
                    .query_row([session_id], |r| r.get(0))?;
                let (body, tools) = render_index_text(&m);
                let cjk = cjk_index_text(&body, &tools);
                self.tx
                    .prepare_cached(
                        "INSERT INTO messages (session_id, ext_id, seq, role, kind, ts, model, body, tools, parts, cjk)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                    )?
                    .execute(params![
                        session_id,
                        m.id,
                        seq,
                        m.role.as_str(),
                        m.kind.as_str(),
                        m.timestamp,
                        m.model,
                        body,
                        tools,
                        serde_json::to_string(&m.parts)?,
                        cjk,
                    ])?;
                let rowid = self.tx.last_insert_rowid();
                self.tx
                    .prepare_cached(
                        "UPDATE sessions SET message_count = message_count + 1 WHERE id = ?1",
                    )?
                    .execute([session_id])?;
                self.index_calls(session_id, rowid, &m)?;
                // A new row has no events yet, and its seq and time are known.
                if let Some(agent) = self.session_agent(session_id)? {
                    let events = self.events_of(agent, &m);
                    self.insert_events(session_id, rowid, seq, m.timestamp, &events)?;
                }
                Ok(true)
            }
        }
    }

    fn update_message_row(&self, session_id: i64, rowid: i64, m: &Message) -> Result<()> {
        let (body, tools) = render_index_text(m);
        let cjk = cjk_index_text(&body, &tools);
        self.tx
            .prepare_cached(
                "UPDATE messages SET kind = ?2, body = ?3, tools = ?4, parts = ?5,
                    ts = COALESCE(ts, ?6), model = COALESCE(model, ?7), cjk = ?8 WHERE id = ?1",
            )?
            .execute(params![
                rowid,
                m.kind.as_str(),
                body,
                tools,
                serde_json::to_string(&m.parts)?,
                m.timestamp,
                m.model,
                cjk,
            ])?;
        self.index_calls(session_id, rowid, m)?;
        self.index_events(session_id, rowid, m)
    }

    /// Replace the stored events of message `rowid` by what [`crate::events::extract`] finds
    /// in `m` (its current, whole content). Events without a time get the message's.
    pub(crate) fn index_events(&self, session_id: i64, rowid: i64, m: &Message) -> Result<()> {
        self.tx
            .prepare_cached("DELETE FROM events WHERE message_id = ?1")?
            .execute([rowid])?;
        let (agent, seq, ts): (String, i64, Option<i64>) = self
            .tx
            .prepare_cached(
                "SELECT s.agent, m.seq, m.ts FROM messages m JOIN sessions s ON s.id = m.session_id
                 WHERE m.id = ?1",
            )?
            .query_row([rowid], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        let Ok(agent) = agent.parse::<Agent>() else {
            return Ok(());
        };
        let events = self.events_of(agent, m);
        self.insert_events(session_id, rowid, seq, ts, &events)
    }

    /// The events of message `m` of an `agent` session.
    fn events_of(&self, agent: Agent, m: &Message) -> Vec<Event> {
        let mut events = crate::events::extract(agent, m);
        if m.kind == Kind::Note && !events.iter().any(|e| e.category == Category::Note) {
            // A note is its own event whatever the extractor makes of its text.
            events.push(note_event(m));
        }
        events
    }

    fn insert_events(
        &self,
        session_id: i64,
        rowid: i64,
        seq: i64,
        ts: Option<i64>,
        events: &[Event],
    ) -> Result<()> {
        let mut stmt = self.tx.prepare_cached(
            "INSERT INTO events (session_id, message_id, seq, category, action, priority, subject,
                                 detail, call_id, tool, ts)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )?;
        for e in events {
            stmt.execute(params![
                session_id,
                rowid,
                seq,
                e.category.as_str(),
                e.action,
                e.priority as i64,
                // Extracted from the redacted message, but an event may join strings that
                // were redacted one by one (a command's arguments): redacted as written.
                crate::redact::redact(&e.subject),
                e.detail.as_deref().map(crate::redact::redact),
                e.call_id,
                e.tool,
                e.ts.or(ts),
            ])?;
        }
        Ok(())
    }

    /// Extract the events of every stored message (migration to schema 3; also usable to
    /// rebuild them). Returns how many messages were read.
    pub fn backfill_events(&self) -> Result<u64> {
        self.tx.execute("DELETE FROM events", [])?;
        let mut stmt = self.tx.prepare(
            "SELECT m.id, m.session_id, m.ext_id, m.role, m.kind, m.ts, m.parts FROM messages m
             ORDER BY m.session_id, m.seq",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, Option<i64>>(5)?,
                r.get::<_, String>(6)?,
            ))
        })?;
        let mut n = 0;
        for row in rows {
            let (rowid, session_id, ext_id, role, kind, ts, parts) = row?;
            let m = Message {
                id: ext_id,
                role: role.parse().unwrap_or(Role::System),
                kind: kind_from_str(&kind),
                parts: serde_json::from_str(&parts).unwrap_or_default(),
                timestamp: ts,
                model: None,
            };
            self.index_events(session_id, rowid, &m)?;
            n += 1;
        }
        Ok(n)
    }

    /// Keep a note (MCP `remember`) in session `session_id`: a message of kind `note` (role
    /// assistant, redacted like any record, searchable) at the end of the session, and its `note`
    /// event. Returns the message's id and position in the session.
    pub fn add_note(&self, session_id: i64, text: &str, now_ms: i64) -> Result<(String, i64)> {
        let id = format!(
            "note:{now_ms}:{}",
            &blake3::hash(text.as_bytes()).to_hex()[..12]
        );
        let mut rec = Record::Message(Message {
            id: id.clone(),
            role: Role::Assistant,
            kind: Kind::Note,
            parts: vec![Part::Text {
                text: text.to_string(),
            }],
            timestamp: Some(now_ms),
            model: None,
        });
        crate::redact::redact_record(&mut rec);
        let Record::Message(m) = rec else {
            unreachable!("redaction keeps the record's variant")
        };
        self.upsert_message(session_id, m)?;
        self.tx.execute(
            "UPDATE sessions SET updated_at = MAX(COALESCE(updated_at, 0), ?2) WHERE id = ?1",
            params![session_id, now_ms],
        )?;
        let seq: i64 = self.tx.query_row(
            "SELECT seq FROM messages WHERE session_id = ?1 AND ext_id = ?2",
            params![session_id, id],
            |r| r.get(0),
        )?;
        Ok((id, seq))
    }

    /// Save a built snapshot of session `session_id`, taken at `trigger` (`precompact`,
    /// `resume`, `compact`, `manual`, …). `consumed_by`: the session it is injected into right
    /// away, if any. Returns its row id.
    pub fn save_snapshot(
        &self,
        session_id: i64,
        trigger: &str,
        snap: &Snapshot,
        now_ms: i64,
        consumed_by: Option<&str>,
    ) -> Result<i64> {
        self.tx.execute(
            "INSERT INTO snapshots (session_id, built_at, trigger, budget, events, text, consumed_at,
                                    consumed_by)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                session_id,
                now_ms,
                trigger,
                snap.budget as i64,
                snap.events as i64,
                // Built from redacted messages; redacted again as written (its lines join
                // strings that were redacted one by one).
                crate::redact::redact(&snap.text),
                consumed_by.map(|_| now_ms),
                consumed_by,
            ],
        )?;
        Ok(self.tx.last_insert_rowid())
    }

    /// The latest snapshot of session `session_id` not yet injected, marked as consumed by
    /// `consumer` (the session it goes into) in the same transaction, so two SessionStart hooks
    /// never inject it twice. `None` when there is none.
    pub fn take_snapshot(
        &self,
        session_id: i64,
        consumer: &str,
        now_ms: i64,
    ) -> Result<Option<StoredSnapshot>> {
        let row = self
            .tx
            .query_row(
                "SELECT id, built_at, trigger, budget, events, text FROM snapshots
                 WHERE session_id = ?1 AND consumed_at IS NULL
                 ORDER BY built_at DESC, id DESC LIMIT 1",
                [session_id],
                stored_snapshot_row,
            )
            .optional()?;
        if let Some(s) = &row {
            self.tx.execute(
                "UPDATE snapshots SET consumed_at = ?2, consumed_by = ?3 WHERE id = ?1",
                params![s.id, now_ms, consumer],
            )?;
        }
        Ok(row)
    }

    /// Mark snapshot `id`, saved at a PreCompact, as injected by a start of its session before
    /// that compaction's own SessionStart(compact) (its `trigger` becomes
    /// [`PRECOMPACT_TAKEN_EARLY`]); see [`Writer::close_early_compaction`].
    pub fn mark_taken_early(&self, id: i64) -> Result<()> {
        self.tx.execute(
            "UPDATE snapshots SET trigger = ?2 WHERE id = ?1 AND trigger = 'precompact'",
            params![id, PRECOMPACT_TAKEN_EARLY],
        )?;
        Ok(())
    }

    /// At a SessionStart(compact) of session `session_id` that found no unconsumed snapshot:
    /// true when the session's latest snapshot is its PreCompact snapshot already injected by an
    /// earlier start ([`Writer::mark_taken_early`]; Codex runs PreCompact →
    /// SessionStart(resume) → SessionStart(compact) on `codex exec resume`), so this compaction
    /// has had its snapshot. The mark is cleared (`precompact` again): the compaction is closed.
    pub fn close_early_compaction(&self, session_id: i64) -> Result<bool> {
        let latest: Option<(i64, String)> = self
            .tx
            .query_row(
                "SELECT id, trigger FROM snapshots WHERE session_id = ?1
                 ORDER BY built_at DESC, id DESC LIMIT 1",
                [session_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        match latest {
            Some((id, trigger)) if trigger == PRECOMPACT_TAKEN_EARLY => {
                self.tx.execute(
                    "UPDATE snapshots SET trigger = 'precompact' WHERE id = ?1",
                    [id],
                )?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn index_calls(&self, session_id: i64, rowid: i64, m: &Message) -> Result<()> {
        let mut stmt = self.tx.prepare_cached(
            "INSERT INTO tool_calls (session_id, call_id, message_id, name, tool, is_error, has_output)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (session_id, call_id) DO UPDATE SET message_id = excluded.message_id,
                name = excluded.name, tool = excluded.tool, is_error = excluded.is_error,
                has_output = excluded.has_output",
        )?;
        for c in m.tool_calls() {
            stmt.execute(params![
                session_id,
                c.id,
                rowid,
                c.name,
                c.tool,
                c.is_error,
                c.output.is_some()
            ])?;
        }
        Ok(())
    }

    /// Attach a tool result to the stored call `call_id`. False when no such call is stored.
    fn attach_result(
        &self,
        session_id: i64,
        call_id: &str,
        output: &str,
        is_error: bool,
        exit_code: Option<i64>,
    ) -> Result<bool> {
        let row: Option<(i64, String, String, String)> = self
            .tx
            .prepare_cached(
                "SELECT m.id, m.ext_id, m.parts, m.kind FROM tool_calls c JOIN messages m ON m.id = c.message_id
                 WHERE c.session_id = ?1 AND c.call_id = ?2",
            )?
            .query_row(params![session_id, call_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()?;
        let Some((rowid, ext_id, parts_json, kind)) = row else {
            return Ok(false);
        };
        let mut parts: Vec<Part> = serde_json::from_str(&parts_json).unwrap_or_default();
        let mut changed = false;
        for p in parts.iter_mut() {
            if let Part::ToolCall(c) = p
                && c.id == call_id
                && (c.output.as_deref() != Some(output)
                    || c.is_error != is_error
                    || c.exit_code != exit_code)
            {
                c.output = Some(output.to_string());
                c.is_error = is_error;
                c.exit_code = exit_code;
                changed = true;
            }
        }
        if changed {
            let mut m = Message {
                id: ext_id,
                role: Role::Assistant,
                kind: kind_from_str(&kind),
                parts,
                timestamp: None,
                model: None,
            };
            crate::seams::redact_message(&mut m);
            self.update_message_row(session_id, rowid, &m)?;
        }
        Ok(true)
    }

    /// Store the cursor of a transcript file and add to its line counters. The reader state is
    /// transcript content (a VS Code tool result held until the message requesting it comes,
    /// a tool start's input): it is redacted like a record ([`crate::redact::redact_json`])
    /// before it is written.
    pub fn save_cursor(
        &self,
        path: &str,
        agent: Agent,
        c: &Cursor,
        stats: &memtrail_adapters::ParseStats,
        now_ms: i64,
    ) -> Result<()> {
        self.tx
            .prepare_cached(
                "INSERT INTO sources (path, agent, session_id, offset, size, dev, ino, mtime_ns, head_len,
                                      head_hash, lines, skipped, malformed, unknown, ingested_at, reader_state,
                                      tail_len, tail_hash)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)
                 ON CONFLICT (path) DO UPDATE SET agent = excluded.agent, session_id = excluded.session_id,
                    offset = excluded.offset, size = excluded.size, dev = excluded.dev, ino = excluded.ino,
                    mtime_ns = excluded.mtime_ns, head_len = excluded.head_len, head_hash = excluded.head_hash,
                    lines = lines + excluded.lines, skipped = skipped + excluded.skipped,
                    malformed = malformed + excluded.malformed, unknown = unknown + excluded.unknown,
                    ingested_at = excluded.ingested_at, reader_state = excluded.reader_state,
                    tail_len = excluded.tail_len, tail_hash = excluded.tail_hash",
            )?
            .execute(params![
                path,
                agent.as_str(),
                c.session_id,
                c.offset as i64,
                c.size as i64,
                c.dev.map(|v| v as i64),
                c.ino.map(|v| v as i64),
                c.mtime_ns,
                c.head_len as i64,
                c.head_hash,
                stats.lines as i64,
                stats.skipped_known as i64,
                stats.malformed as i64,
                stats.skipped_unknown as i64,
                now_ms,
                c.reader_state.as_ref().map(|v| {
                    let mut v = v.clone();
                    crate::redact::redact_json(&mut v);
                    v.to_string()
                }),
                c.tail_len as i64,
                c.tail_hash,
            ])?;
        Ok(())
    }

    /// The stored cursor's [`CursorMark`] for `path`, read inside this transaction: an ingest
    /// step compares it with the cursor it started from, and stands down when another process
    /// moved it, or marked it (a `sessions delete` that ran while the step waited for the
    /// write lock), meanwhile (see [`Error::Superseded`]).
    pub fn cursor_mark(&self, path: &str) -> Result<Option<CursorMark>> {
        Ok(self
            .tx
            .prepare_cached(
                "SELECT offset, head_hash, CASE WHEN json_valid(reader_state)
                     THEN json_extract(reader_state, '$.memtrail_skip') IS NOT NULL ELSE 0 END
                 FROM sources WHERE path = ?1",
            )?
            .query_row([path], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get(1)?, r.get(2)?))
            })
            .optional()?)
    }

    /// `Err(`[`Error::Superseded`]`)` unless the stored cursor of `path` is still `expected`
    /// (offset, head hash and skip marker; `None`: no cursor yet).
    pub fn expect_cursor(&self, path: &str, expected: &Option<CursorMark>) -> Result<()> {
        if &self.cursor_mark(path)? == expected {
            Ok(())
        } else {
            Err(Error::Superseded)
        }
    }

    /// Reset the line counters of a source (its file is being re-read from the start).
    pub fn reset_source_counters(&self, path: &str) -> Result<()> {
        self.tx.execute(
            "UPDATE sources SET lines = 0, skipped = 0, malformed = 0, unknown = 0 WHERE path = ?1",
            [path],
        )?;
        Ok(())
    }
}

/// A stored cursor as an ingest step checks it before it commits: its byte offset, its head
/// hash, and whether it holds a skip marker (see [`crate::privacy::SkipReason`]).
pub type CursorMark = (u64, Option<String>, bool);

impl Cursor {
    /// This cursor's [`CursorMark`].
    pub fn mark(&self) -> CursorMark {
        // Any top-level `memtrail_skip` key, as `Writer::cursor_mark` tests it in SQL.
        let marked = self
            .reader_state
            .as_ref()
            .is_some_and(|s| s.get("memtrail_skip").is_some_and(|v| !v.is_null()));
        (self.offset, self.head_hash.clone(), marked)
    }
}

/// What [`Store::cursor_stats`] gives per transcript: the cursor's byte offset, and the file's
/// device, inode and modification time (ns) when it was last read; `marked`: the cursor holds
/// a skip marker (excluded project, deleted session).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorStat {
    pub offset: u64,
    pub dev: Option<u64>,
    pub ino: Option<u64>,
    pub mtime_ns: Option<i64>,
    pub marked: bool,
}

/// The `trigger` of a PreCompact snapshot injected by a start of its session before that
/// compaction's own SessionStart(compact) ([`Writer::mark_taken_early`]).
pub const PRECOMPACT_TAKEN_EARLY: &str = "precompact-taken-early";

/// A snapshot as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StoredSnapshot {
    pub id: i64,
    /// ms since the Unix epoch.
    pub built_at: i64,
    /// What built it: `precompact`, `compact`, `resume`, …
    pub trigger: String,
    /// The byte budget it was built for.
    pub budget: i64,
    /// How many events it was built from.
    pub events: i64,
    pub text: String,
}

fn stored_snapshot_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredSnapshot> {
    Ok(StoredSnapshot {
        id: r.get(0)?,
        built_at: r.get(1)?,
        trigger: r.get(2)?,
        budget: r.get(3)?,
        events: r.get(4)?,
        text: r.get(5)?,
    })
}

/// The `note` event of a note message (its first line as the subject, at most 500 bytes).
fn note_event(m: &Message) -> Event {
    let text = m.text();
    Event {
        category: Category::Note,
        action: "kept".to_string(),
        priority: 1,
        subject: cap(text.lines().next().unwrap_or(""), 500).to_string(),
        detail: (text.len() > 500 || text.lines().count() > 1)
            .then(|| cap(&text, 2000).to_string()),
        call_id: None,
        tool: None,
        ts: m.timestamp,
    }
}

/// Attach each tool result to its call when the call's message is earlier in the same batch,
/// and drop the result record: the message is then written once, with its output, instead of
/// written, then read back, re-rendered and re-indexed (an FTS5 delete and insert) per result.
/// The outcome in the store is the same as applying the records one by one. Batches holding a
/// `Rewind` or `Replace` are left alone (their order matters). Returns how many results were
/// folded.
fn fold_results(records: &mut Vec<Record>) -> u64 {
    if records
        .iter()
        .any(|r| matches!(r, Record::Rewind { .. } | Record::Replace(_)))
    {
        return 0;
    }
    // call id -> (record index, part index) of the latest call with that id seen so far.
    let mut calls: std::collections::HashMap<String, (usize, usize)> =
        std::collections::HashMap::new();
    let mut folded = 0;
    let mut keep = vec![true; records.len()];
    for j in 0..records.len() {
        match &records[j] {
            Record::Message(m) => {
                for (k, p) in m.parts.iter().enumerate() {
                    if let Part::ToolCall(c) = p {
                        calls.insert(c.id.clone(), (j, k));
                    }
                }
            }
            Record::ToolResult { call_id, .. } => {
                let Some(&(i, k)) = calls.get(call_id) else {
                    continue;
                };
                let Record::ToolResult {
                    output,
                    is_error,
                    exit_code,
                    ..
                } = std::mem::replace(
                    &mut records[j],
                    Record::Rewind {
                        message_id: String::new(),
                    },
                )
                else {
                    unreachable!("matched above")
                };
                if let Record::Message(m) = &mut records[i]
                    && let Some(Part::ToolCall(c)) = m.parts.get_mut(k)
                {
                    c.output = Some(output);
                    c.is_error = is_error;
                    c.exit_code = exit_code;
                }
                keep[j] = false;
                folded += 1;
            }
            _ => {}
        }
    }
    if folded > 0 {
        let mut it = keep.into_iter();
        records.retain(|_| it.next().unwrap_or(true));
    }
    folded
}

pub(crate) fn kind_from_str(s: &str) -> Kind {
    match s {
        "tool_call" => Kind::ToolCall,
        "tool_result" => Kind::ToolResult,
        "thinking" => Kind::Thinking,
        "summary" => Kind::Summary,
        "note" => Kind::Note,
        _ => Kind::Text,
    }
}

/// The two indexed columns of a message: its prose, and its tool calls flattened to
/// `name input-values output` lines (outputs capped at [`INDEXED_OUTPUT_CAP`] bytes).
pub fn render_index_text(m: &Message) -> (String, String) {
    let body = m.text();
    let mut tools = String::new();
    for p in &m.parts {
        match p {
            Part::ToolCall(c) => {
                push_call(&mut tools, c);
            }
            Part::ToolResult { output, .. } => {
                tools.push_str(cap(output, INDEXED_OUTPUT_CAP));
                tools.push('\n');
            }
            _ => {}
        }
    }
    (body, tools)
}

/// True for Han ideographs, Hiragana, Katakana and Hangul: scripts written without spaces,
/// which unicode61 would index as one token per unbroken run.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x31F0..=0x31FF    // Katakana phonetic extensions
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0x1100..=0x11FF    // Hangul Jamo
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF66..=0xFF9F    // half-width Katakana
        | 0x20000..=0x2FA1F) // CJK Extensions B-F, compatibility supplement
}

/// The `cjk` column: every run of CJK characters in `body` and `tools`, one character per token
/// (space-separated), runs on their own lines. `None` when there is no CJK text.
pub fn cjk_index_text(body: &str, tools: &str) -> Option<String> {
    let mut out = String::new();
    for text in [body, tools] {
        // Every CJK character is 3 or 4 bytes in UTF-8, led by a byte of 0xE1 or more: text
        // without one (most of it) is passed over without decoding.
        if !text.bytes().any(|b| b >= 0xE1) {
            continue;
        }
        let mut in_run = false;
        for c in text.chars() {
            if is_cjk(c) {
                if !in_run && !out.is_empty() {
                    out.push('\n');
                }
                if in_run {
                    out.push(' ');
                }
                out.push(c);
                in_run = true;
            } else {
                in_run = false;
            }
        }
    }
    if out.is_empty() { None } else { Some(out) }
}

fn push_call(out: &mut String, c: &ToolCall) {
    out.push_str(&c.name);
    out.push(' ');
    flatten_json(&c.input, out);
    out.push('\n');
    if let Some(o) = &c.output {
        out.push_str(cap(o, INDEXED_OUTPUT_CAP));
        out.push('\n');
    }
}

fn flatten_json(v: &serde_json::Value, out: &mut String) {
    match v {
        serde_json::Value::String(s) => {
            out.push_str(cap(s, INDEXED_OUTPUT_CAP));
            out.push(' ');
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| flatten_json(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| flatten_json(x, out)),
        serde_json::Value::Null => {}
        other => {
            out.push_str(&other.to_string());
            out.push(' ');
        }
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
pub(crate) fn cap(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The identity of the file at `path` (device and inode on Unix; elsewhere only whether it
/// exists), `None` when there is none.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Some((0, 0))
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.exists() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    Ok(())
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    Ok(())
}

/// `path` with its symlinks followed (each link's target, relative to the link's folder), to
/// the file really opened, which may not exist yet. At most 40 links, like the kernel.
fn resolve_links(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::read_link(&p) {
            Ok(t) if t.is_absolute() => p = t,
            Ok(t) => p = p.parent().unwrap_or(Path::new("/")).join(t),
            Err(_) => break,
        }
    }
    p
}

/// Give the store file at `real` (and its `-wal` and `-shm` files when they exist) mode 0600
/// when anyone but the owner has access: a store left 0644 by an older version, a copy or a
/// umask is tightened at the next open. SQLite gives the files it creates the store's mode.
/// Errors: the mode cannot be changed (e.g. another user's file), naming the file.
#[cfg(unix)]
fn make_owner_only(real: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for suffix in ["", "-wal", "-shm"] {
        let mut p = real.as_os_str().to_owned();
        p.push(suffix);
        let p = PathBuf::from(p);
        let Ok(m) = std::fs::metadata(&p) else {
            continue;
        };
        if m.is_file() && m.permissions().mode() & 0o077 != 0 {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).map_err(|e| {
                Error::Invalid(format!(
                    "{} is readable by other users and its mode cannot be changed to 0600: {e}",
                    p.display()
                ))
            })?;
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn make_owner_only(_real: &Path) -> Result<()> {
    Ok(())
}

#[cfg(unix)]
fn create_private_file(path: &Path) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(not(unix))]
fn create_private_file(_path: &Path) -> Result<()> {
    Ok(())
}

/// One step of [`Store::repair`]: rebuilds or re-derives one kind of derived data from the
/// stored messages, inside its own short write transaction. `run` returns how many rows (or
/// index entries) it found wrong and fixed; 0 means it was already right.
pub struct RepairStep {
    /// Short name, shown by `memtrail repair` (e.g. `full-text index`).
    pub name: &'static str,
    /// What the step does, a clause after its name (`tool calls: checked for …`), for the
    /// report.
    pub what: &'static str,
    pub run: fn(&Writer<'_>) -> Result<u64>,
}

/// The derived data `memtrail repair` rebuilds, in order. A table derived from `messages`
/// (e.g. events) adds its step here.
pub const REPAIR_STEPS: &[RepairStep] = &[
    RepairStep {
        name: "full-text index",
        what: "rebuilt from the stored messages (body, tools, CJK)",
        run: repair_fts,
    },
    RepairStep {
        name: "tool calls",
        what: "checked for tool calls whose message is gone (deleted when found)",
        run: repair_tool_calls,
    },
    RepairStep {
        name: "events",
        what: "extracted again from the stored messages",
        run: repair_events,
    },
    RepairStep {
        name: "message counts",
        what: "each session's recounted from the stored messages",
        run: repair_message_counts,
    },
];

/// The FTS5 index checked against its content table (`'integrity-check'` with rank 1, see
/// <https://sqlite.org/fts5.html#the_integrity_check_command>) and rebuilt either way. Returns
/// 1 when the check had failed, else 0.
fn repair_fts(w: &Writer<'_>) -> Result<u64> {
    // Queued messages are not in the index yet: index them first, or the check would count
    // them as missing. An index whose data is corrupt cannot take them: it is broken.
    let queued_in = loop {
        match w.index_pending(INDEX_CHUNK) {
            Ok(0) => break true,
            Ok(_) => {}
            Err(e) if is_corrupt(&e) => break false,
            Err(e) => return Err(e),
        }
    };
    let broken = !queued_in
        || w.tx
            .execute(
                "INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)",
                [],
            )
            .is_err();
    if broken {
        // 'rebuild' reads the old index as it replaces it, which fails on corrupt data:
        // empty the index first ('delete-all' drops its shadow tables' rows unread).
        w.tx.execute(
            "INSERT INTO messages_fts (messages_fts) VALUES ('delete-all')",
            [],
        )?;
    }
    w.tx.execute(
        "INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')",
        [],
    )?;
    // 'rebuild' indexed every message, queued or not.
    w.tx.execute("DELETE FROM fts_pending", [])?;
    Ok(broken as u64)
}

/// `SQLITE_CORRUPT` (or its extended codes, e.g. `SQLITE_CORRUPT_VTAB` from FTS5) or
/// `SQLITE_NOTADB`: the file's content is damaged.
pub fn is_corrupt(e: &Error) -> bool {
    matches!(
        e,
        Error::Sqlite(rusqlite::Error::SqliteFailure(f, _))
            if matches!(f.code, rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

fn repair_tool_calls(w: &Writer<'_>) -> Result<u64> {
    Ok(w.tx.execute(
        "DELETE FROM tool_calls WHERE message_id NOT IN (SELECT id FROM messages)",
        [],
    )? as u64)
}

/// Events rebuilt from the messages; returns how many event rows differed (missing, extra or
/// changed) from what the messages give now.
fn repair_events(w: &Writer<'_>) -> Result<u64> {
    const COLS: &str =
        "message_id, seq, category, action, priority, subject, detail, call_id, tool";
    w.tx.execute("DROP TABLE IF EXISTS temp.events_before", [])?;
    w.tx.execute(
        &format!("CREATE TEMP TABLE events_before AS SELECT {COLS} FROM events"),
        [],
    )?;
    w.backfill_events()?;
    let differ: i64 = w.tx.query_row(
        &format!(
            "SELECT (SELECT COUNT(*) FROM (SELECT {COLS} FROM events EXCEPT SELECT {COLS} FROM temp.events_before))
                  + (SELECT COUNT(*) FROM (SELECT {COLS} FROM temp.events_before EXCEPT SELECT {COLS} FROM events))"
        ),
        [],
        |r| r.get(0),
    )?;
    w.tx.execute("DROP TABLE temp.events_before", [])?;
    Ok(differ as u64)
}

fn repair_message_counts(w: &Writer<'_>) -> Result<u64> {
    Ok(w.tx.execute(
        "UPDATE sessions SET message_count = n FROM (
             SELECT s.id AS sid, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS n
             FROM sessions s
         ) WHERE sessions.id = sid AND sessions.message_count != n",
        [],
    )? as u64)
}

/// What one repair step did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RepairStepReport {
    pub name: String,
    pub what: String,
    /// Rows or index entries found wrong and fixed (0: it was right).
    pub fixed: u64,
    pub millis: u64,
}

/// The result of [`Store::repair`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct RepairReport {
    pub steps: Vec<RepairStepReport>,
    /// `PRAGMA integrity_check` after the steps: `["ok"]` or SQLite's list of problems.
    pub integrity: Vec<String>,
}

impl RepairReport {
    /// True when the store passed `PRAGMA integrity_check` after the repair.
    pub fn ok(&self) -> bool {
        self.integrity.len() == 1 && self.integrity[0] == "ok"
    }
}

impl Store {
    /// Rebuild every derived structure ([`REPAIR_STEPS`]) from the stored messages, each step
    /// in its own `BEGIN IMMEDIATE` transaction (so hooks running meanwhile wait at most one
    /// step, or fail open and catch up), then run `PRAGMA integrity_check`. Messages, sessions
    /// and cursors are never changed, only what is derived from them.
    ///
    /// Errors: the store is busy past its timeout ([`Error::Busy`]), the disk is full
    /// ([`Error::Full`]), or an SQLite error (a step that fails is rolled back).
    pub fn repair(&mut self) -> Result<RepairReport> {
        let mut steps = Vec::new();
        for step in REPAIR_STEPS {
            let t = Instant::now();
            let fixed = self.write(|w| (step.run)(w))?;
            steps.push(RepairStepReport {
                name: step.name.into(),
                what: step.what.into(),
                fixed,
                millis: t.elapsed().as_millis() as u64,
            });
        }
        let _ = self.checkpoint();
        let mut stmt = self.conn.prepare("PRAGMA integrity_check")?;
        let integrity = stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Ok(RepairReport { steps, integrity })
    }

    /// The SQLite connection, for maintenance and fault-injection tests (e.g. `PRAGMA
    /// max_page_count` to simulate a full disk). Writes through it bypass the store's rules.
    #[doc(hidden)]
    pub fn raw_connection(&self) -> &Connection {
        &self.conn
    }
}
