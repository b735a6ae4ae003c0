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
//!   kept in sync by triggers. `cjk` holds the Han, kana and Hangul runs of the message with a
//!   space between characters, so that a phrase query over single characters finds any substring
//!   (unicode61 would index a whole unbroken CJK run as one token).
//! - `sources`: the ingest cursor per transcript file (byte offset, size, file identity, a hash of
//!   the first bytes) and line counters.
//! - `hook_runs`: the last run of each (agent, hook event), for `memtrail status`.
//!
//! The database runs in WAL mode with a busy timeout, and closing it does not checkpoint (commits
//! that grow the WAL past 256 pages do); every write is a `BEGIN IMMEDIATE`
//! transaction (a deferred transaction that upgrades to a write fails at once with
//! `database is locked` instead of waiting; see `../shared/reference/crates.md` §1).

use crate::{Error, Result};
use memtrail_adapters::{
    Agent, Kind, Message, Part, Record, Role, SessionMeta, SessionRef, ToolCall,
};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The schema version this binary writes. A store with a higher version is refused.
pub const SCHEMA_VERSION: i64 = 2;

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
];

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
    /// file with mode 0600, WAL mode, a busy timeout of `busy`, migrations applied.
    ///
    /// Errors: [`Error::NewerSchema`] when the store was written by a newer memtrail; SQLite or
    /// I/O errors otherwise.
    pub fn open_with_timeout(path: &Path, busy: Duration) -> Result<Store> {
        let existed = path.exists();
        if !existed {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                create_private_dir(dir)?;
            }
            create_private_file(path)?;
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI,
        )?;
        conn.busy_timeout(busy)?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
        };
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

    /// [`Store::open_with_timeout`] with a 5 s busy timeout.
    pub fn open(path: &Path) -> Result<Store> {
        Self::open_with_timeout(path, Duration::from_secs(5))
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
        self.conn.execute_batch(
            "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY;
             PRAGMA journal_size_limit = 33554432; PRAGMA wal_autocheckpoint = 256;",
        )?;
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
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Run `f` inside one `BEGIN IMMEDIATE` transaction; commit when it returns `Ok`, roll back
    /// otherwise.
    pub fn write<T>(&mut self, f: impl FnOnce(&Writer<'_>) -> Result<T>) -> Result<T> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&Writer { tx: &tx })?;
        tx.commit()?;
        Ok(out)
    }

    /// The stored cursor for a transcript path.
    pub fn cursor(&self, path: &str) -> Result<Option<Cursor>> {
        Ok(self
            .conn
            .query_row(
                "SELECT session_id, offset, size, dev, ino, mtime_ns, head_len, head_hash, reader_state,
                        tail_len, tail_hash
                 FROM sources WHERE path = ?1",
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
                params![run.agent, run.event, run.at, run.duration_us, run.session, run.messages, run.error],
            )?;
            Ok(())
        })
    }
}

/// Write access inside one transaction (see [`Store::write`]).
pub struct Writer<'a> {
    pub(crate) tx: &'a rusqlite::Transaction<'a>,
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
        tx.execute(
            "INSERT INTO sessions (agent, external_id, parent_external_id) VALUES (?1, ?2, ?3)
             ON CONFLICT (agent, external_id) DO NOTHING",
            params![
                sref.agent.as_str(),
                sref.external_id,
                sref.parent_external_id
            ],
        )?;
        let id: i64 = tx.query_row(
            "SELECT id FROM sessions WHERE agent = ?1 AND external_id = ?2",
            params![sref.agent.as_str(), sref.external_id],
            |r| r.get(0),
        )?;
        tx.execute(
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
            params![
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

    /// Delete every message of a session (used when its transcript was rewritten and is re-read).
    pub fn clear_session(&self, session_id: i64) -> Result<u64> {
        self.tx
            .execute("DELETE FROM tool_calls WHERE session_id = ?1", [session_id])?;
        let n = self
            .tx
            .execute("DELETE FROM messages WHERE session_id = ?1", [session_id])?;
        self.tx.execute(
            "UPDATE sessions SET message_count = 0, title = NULL WHERE id = ?1",
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
                    timestamp,
                } => {
                    if self.attach_result(session_id, &call_id, &output, is_error)? {
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
            "UPDATE sessions SET message_count = ?2 WHERE id = ?1",
            params![session_id, seq],
        )?;
        Ok(n as u64)
    }

    /// Insert a message or replace the stored one with the same id. True when inserted.
    fn replace_message(&self, session_id: i64, m: Message) -> Result<bool> {
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
    fn upsert_message(&self, session_id: i64, m: Message) -> Result<bool> {
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
                if stored.parts != before || stored.kind != before_kind {
                    self.update_message_row(session_id, rowid, &stored)?;
                }
                Ok(false)
            }
            None => {
                let seq: i64 = self
                    .tx
                    .prepare_cached("SELECT message_count FROM sessions WHERE id = ?1")?
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
        self.index_calls(session_id, rowid, m)
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
                && (c.output.as_deref() != Some(output) || c.is_error != is_error)
            {
                c.output = Some(output.to_string());
                c.is_error = is_error;
                changed = true;
            }
        }
        if changed {
            let m = Message {
                id: ext_id,
                role: Role::Assistant,
                kind: kind_from_str(&kind),
                parts,
                timestamp: None,
                model: None,
            };
            self.update_message_row(session_id, rowid, &m)?;
        }
        Ok(true)
    }

    /// Store the cursor of a transcript file and add to its line counters.
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
                c.reader_state.as_ref().map(|v| v.to_string()),
                c.tail_len as i64,
                c.tail_hash,
            ])?;
        Ok(())
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
                    output, is_error, ..
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
