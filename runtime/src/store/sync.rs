//! The SQL of sync's local side (docs/sync.md): the outbox that migration 6's triggers fill,
//! the push batches read from it and acknowledged, the pull batches applied, and the sync
//! state (`sync_state`, `machines`).
//!
//! A session of this machine has `origin` `''`; a pulled session has the id of the machine it
//! comes from. The triggers queue only this machine's sessions, and only once
//! [`Store::sync_enable`] ran.

use super::index_text::{cap, kind_from_str};
use super::maintenance::{StoredText, delete_rows, redact_stored};
use super::{Db, Store, Writer, cjk_index_text, packed, render_index_text};
use crate::Result;
use crate::events::{MAX_DETAIL, MAX_SUBJECT};
use crate::privacy::Privacy;
use crate::records::Enrich;
use crate::sync::{
    Deletion, PullApplied, PullBatch, PushBatch, PushCursor, SessionChanges, SyncEvent,
    SyncMessage, SyncPending, SyncSession, SyncSnapshot, SyncToolCall, SyncVectors,
};
use memtrail_adapters::{Message, Part, Role, one_line};
use rusqlite::{OptionalExtension, params};
use std::collections::HashMap;

/// `sync_state` key whose presence turns the outbox triggers on; its value is when sync was
/// enabled (Unix milliseconds).
const ENABLED: &str = "enabled";
/// `sync_state` key holding this machine's id (see [`Store::sync_enable`]).
const MACHINE: &str = "machine";

/// `sync_state` key holding the id of the PostgreSQL database last synced with (see
/// [`Store::sync_database`]).
const DATABASE: &str = "database_id";

/// `sync_state` key holding the `last_push_at` the last push PostgreSQL committed recorded in
/// this machine's `machines` row (Unix milliseconds; see [`Store::ack_push`]).
const DATABASE_PUSH_AT: &str = "database_push_at";

/// `sync_state` key holding the `last_push_at` of the push under way or last tried (recorded
/// before its first batch is sent; see [`Store::database_push_marks`]).
const DATABASE_PUSH_TRIED: &str = "database_push_tried";

/// `sync_state` key holding the revision the last push PostgreSQL committed reached (the
/// sequence's last value then; see [`Store::ack_push`]).
const DATABASE_PUSH_REV: &str = "database_push_rev";

/// What [`Store::sync_database`] queued for a database new to the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requeued {
    /// This machine's sessions, queued whole.
    pub sessions: u64,
    /// The deletions made here (`sync_deleted`), queued as tombstones.
    pub deletions: u64,
}

/// Keep the tombstone `?1` (a `sync_tombstones.seq`) among the deletions the store knows of
/// (`sync_deleted`, migration 17), the later one when the session was deleted twice.
const KEEP_TOMBSTONE: &str = "INSERT INTO sync_deleted (origin, agent, external_id, deleted_at)
     SELECT origin, agent, external_id, deleted_at FROM sync_tombstones WHERE seq = ?1
     ON CONFLICT (origin, agent, external_id)
     DO UPDATE SET deleted_at = max(deleted_at, excluded.deleted_at)";

/// Queue every session of this machine (its row and snapshots: outbox item 0) and every
/// message of them, in session order; entries already queued stay. Returns how many it added.
fn queue_all(w: &Writer<'_>) -> Result<u64> {
    let n =
        w.tx.execute(
            "INSERT OR IGNORE INTO sync_outbox (session_id, item)
             SELECT session_id, item FROM (
                 SELECT id AS session_id, 0 AS item FROM sessions WHERE origin = ''
                 UNION ALL
                 SELECT m.session_id, m.id FROM messages m
                 JOIN sessions s ON s.id = m.session_id WHERE s.origin = ''
             ) ORDER BY session_id, item",
            [],
        )
        .db()?;
    Ok(n as u64)
}

/// What the push reads of a session row: (origin, project_dir, the row as pushed).
type SessionRow = (String, Option<String>, SyncSession);

/// Which projects [`Privacy`] excludes, each project asked once ([`Privacy::excluded`] looks
/// for `.memtrailignore` files up the project's folders): one per push, so that a push of many
/// batches does not look again for every session of every batch, and a file added since the
/// last push counts at the next.
pub struct Exclusions<'a> {
    privacy: &'a Privacy,
    known: HashMap<String, bool>,
}

impl<'a> Exclusions<'a> {
    pub fn new(privacy: &'a Privacy) -> Exclusions<'a> {
        Exclusions {
            privacy,
            known: HashMap::new(),
        }
    }

    /// Whether the project at `project_dir` is excluded.
    pub fn excluded(&mut self, project_dir: &str) -> bool {
        if let Some(&e) = self.known.get(project_dir) {
            return e;
        }
        let e = self.privacy.excluded(project_dir).is_some();
        self.known.insert(project_dir.to_string(), e);
        e
    }
}

impl Store {
    /// Turn sync on for this store, as machine `machine` (its id, 32 hex digits: the
    /// `[sync] machine` of the config), and queue every session of this machine already stored
    /// (its row and snapshots: outbox item 0) and every message of them (one entry each), in
    /// session order, so that the first push sends everything. From then on the triggers of
    /// migration 6 queue each change. Idempotent: once enabled, a second call queues nothing
    /// and returns 0 (the machine id is kept as first given). Returns how many entries it
    /// queued. One transaction.
    ///
    /// Errors: a store error ([`crate::Error::Busy`] when the write lock cannot be had).
    pub fn sync_enable(&mut self, machine: &str) -> Result<u64> {
        let now = crate::now_ms().to_string();
        self.write(|w| {
            let new =
                w.tx.execute(
                    "INSERT OR IGNORE INTO sync_state (key, value) VALUES (?1, ?2)",
                    params![ENABLED, now],
                )
                .db()?;
            if new == 0 {
                return Ok(0);
            }
            w.tx.execute(
                "INSERT OR IGNORE INTO sync_state (key, value) VALUES (?1, ?2)",
                params![MACHINE, machine],
            )
            .db()?;
            queue_all(w)
        })
    }

    /// Make the store ready for PostgreSQL database `database_id` (`memtrail_pg`'s
    /// `Pg::database_id`): when it is not the database the store last synced with
    /// (`sync_state` `database_id`; none yet counts as another), queue every session of this
    /// machine again (as [`Store::sync_enable`] does), forget every pull position (so every
    /// machine's pushes are pulled again from the start), queue again every deletion made here
    /// (`sync_deleted`: the tombstones PostgreSQL acknowledged, so that a database restored
    /// from a backup loses none; each machine sends its own, so each is recorded as its
    /// deleter's), and record `database_id`, in one transaction. Returns what it queued when it
    /// did, `None` when the database is the same.
    ///
    /// Errors: a store error (nothing changed).
    pub fn sync_database(&mut self, database_id: &str) -> Result<Option<Requeued>> {
        if self.sync_state(DATABASE)?.as_deref() == Some(database_id) {
            return Ok(None);
        }
        self.write(|w| {
            queue_all(w)?;
            // Deletions first, oldest first, as they were made: the database may hold the
            // sessions again (restored from a backup taken before), or another machine may
            // send it one of them (pushed before that machine pulled the deletion). Only the
            // ones made here: PostgreSQL records a deletion as its pusher's, and one machine's
            // deletion sent by another would count as "deleted elsewhere" against the session's
            // own machine (which may have captured it again since).
            let deletions =
                w.tx.execute(
                    "INSERT INTO sync_tombstones (origin, agent, external_id, deleted_at)
                     SELECT origin, agent, external_id, deleted_at FROM sync_deleted
                     ORDER BY deleted_at, origin, agent, external_id",
                    [],
                )
                .db()? as u64;
            w.tx.execute(
                "DELETE FROM sync_state WHERE key LIKE 'pull:%' OR key IN (?1, ?2, ?3)",
                [DATABASE_PUSH_AT, DATABASE_PUSH_TRIED, DATABASE_PUSH_REV],
            )
            .db()?;
            w.tx.execute(
                "INSERT INTO sync_state (key, value) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![DATABASE, database_id],
            )
            .db()?;
            let n: i64 =
                w.tx.query_row("SELECT COUNT(*) FROM sessions WHERE origin = ''", [], |r| {
                    r.get(0)
                })
                .db()?;
            Ok(Some(Requeued {
                sessions: n as u64,
                deletions,
            }))
        })
    }

    /// The id of the PostgreSQL database this store last synced with ([`Store::sync_database`]),
    /// `None` before its first sync.
    pub fn synced_database(&self) -> Result<Option<String>> {
        self.sync_state(DATABASE)
    }

    /// What this store last pushed to that database, for telling another store's pushes
    /// under the same machine id, and a database gone back in time: (the `last_push_at` of the
    /// last push PostgreSQL committed, that of the push tried last, the revision the last
    /// committed push reached), each `None` when there was none since the store began syncing
    /// with it. A push killed after its commit leaves the tried one in PostgreSQL; one killed
    /// before, the committed one.
    pub fn database_push_marks(&self) -> Result<(Option<i64>, Option<i64>, Option<i64>)> {
        let get = |k: &str| -> Result<Option<i64>> {
            Ok(self.sync_state(k)?.and_then(|v| v.parse().ok()))
        };
        Ok((
            get(DATABASE_PUSH_AT)?,
            get(DATABASE_PUSH_TRIED)?,
            get(DATABASE_PUSH_REV)?,
        ))
    }

    /// Record that a push whose `last_push_at` is `at` (Unix milliseconds) is about to be sent
    /// ([`Store::database_push_marks`]).
    pub fn push_tried(&mut self, at: i64) -> Result<()> {
        self.set_sync_state(DATABASE_PUSH_TRIED, Some(&at.to_string()))
    }

    /// The highest PostgreSQL revision this store has pulled any machine's pushes up to (the
    /// greatest `pull:<machine>`); 0 when it never pulled. A database whose revisions have not
    /// reached it went back in time.
    pub fn max_pull_position(&self) -> Result<i64> {
        self.conn
            .query_row(
                "SELECT coalesce(max(CAST(value AS INTEGER)), 0) FROM sync_state \
                 WHERE key LIKE 'pull:%'",
                [],
                |r| r.get(0),
            )
            .db()
    }

    /// Whether sync is enabled ([`Store::sync_enable`] ran on this store).
    pub fn sync_enabled(&self) -> Result<bool> {
        Ok(self.sync_state(ENABLED)?.is_some())
    }

    /// The value of `sync_state` key `key` (`enabled`, `machine`, `pull:<machine>`,
    /// `last_push_at`, `last_pull_at`, `last_error`, …), `None` when unset.
    pub fn sync_state(&self, key: &str) -> Result<Option<String>> {
        self.conn
            .prepare_cached("SELECT value FROM sync_state WHERE key = ?1")
            .db()?
            .query_row([key], |r| r.get(0))
            .optional()
            .db()
    }

    /// Set (`Some`) or remove (`None`) `sync_state` key `key`. Setting or removing `enabled`
    /// here turns the outbox triggers on or off without queuing anything (use
    /// [`Store::sync_enable`] to turn sync on).
    pub fn set_sync_state(&mut self, key: &str, value: Option<&str>) -> Result<()> {
        self.write(|w| {
            match value {
                Some(v) => w.tx.execute(
                    "INSERT INTO sync_state (key, value) VALUES (?1, ?2)
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    params![key, v],
                ),
                None => w.tx.execute("DELETE FROM sync_state WHERE key = ?1", [key]),
            }
            .db()?;
            Ok(())
        })
    }

    /// Record how the last sync ended: `Some(error)` (redacted text, never the password) sets
    /// `sync_state` `last_error` and, when no failure was recorded before it, `failing_since`
    /// (Unix milliseconds now); `None` (it succeeded) removes both. One transaction.
    ///
    /// Errors: a store error.
    pub fn record_sync_error(&mut self, error: Option<&str>) -> Result<()> {
        let now = crate::now_ms().to_string();
        self.write(|w| {
            match error {
                Some(e) => {
                    w.tx.execute(
                        "INSERT INTO sync_state (key, value) VALUES ('last_error', ?1)
                         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        [e],
                    )
                    .db()?;
                    w.tx.execute(
                        "INSERT OR IGNORE INTO sync_state (key, value) VALUES ('failing_since', ?1)",
                        [&now],
                    )
                    .db()?;
                }
                None => {
                    w.tx.execute(
                        "DELETE FROM sync_state WHERE key IN ('last_error', 'failing_since')",
                        [],
                    )
                    .db()?;
                }
            }
            Ok(())
        })
    }

    /// The labels of the machines pulled from: (machine id, label), by id.
    pub fn machine_labels(&self) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, label FROM machines ORDER BY id")
            .db()?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .db()?
            .collect::<rusqlite::Result<_>>()
            .db()?;
        Ok(rows)
    }

    /// What waits to be pushed: sessions with a queued entry, queued messages, and deleted
    /// sessions (entries of excluded projects included until a push drops them).
    pub fn sync_pending(&self) -> Result<SyncPending> {
        self.conn
            .query_row(
                "SELECT (SELECT COUNT(DISTINCT session_id) FROM sync_outbox),
                        (SELECT COUNT(*) FROM sync_outbox WHERE item > 0),
                        (SELECT COUNT(*) FROM sync_tombstones)",
                [],
                |r| {
                    Ok(SyncPending {
                        sessions: r.get::<_, i64>(0)? as u64,
                        messages: r.get::<_, i64>(1)? as u64,
                        deletions: r.get::<_, i64>(2)? as u64,
                    })
                },
            )
            .db()
    }

    /// The PostgreSQL revision this store has pulled machine `machine`'s pushes up to
    /// (`sync_state` `pull:<machine>`); 0 when never pulled.
    pub fn pull_position(&self, machine: &str) -> Result<i64> {
        Ok(self
            .sync_state(&format!("pull:{machine}"))?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    }

    /// The next batch to push, read from one consistent snapshot of the store: every deleted
    /// session first (`sync_tombstones`, in order; a session of this machine carries `machine`
    /// as its machine, a pulled one its origin), then the outbox entries in `seq` order, grouped
    /// by session ([`SessionChanges`]: the session row always; for a message entry the message
    /// with its tool calls and events; for item 0 `snapshots: Some(all of them)`; for item -1
    /// `message_set: Some(every ext_id stored)`).
    ///
    /// Entries that have nothing to send are covered (their `seq` in `outbox`, so
    /// [`Store::ack_push`] drops them) without being sent: a message deleted since, a session
    /// gone, a pulled session (never pushed from here), a session whose project `privacy`
    /// excludes ([`Privacy::excluded`]; an excluded project is never pushed).
    ///
    /// Bounds: entries are taken while the batch sends fewer than `max_messages` entries
    /// (a message, a deletion, a session's snapshots or message set: one each) and fewer than
    /// `max_bytes` bytes of text (message bodies and parts, snapshot texts: approximate); the
    /// first entry is always taken, so a batch is never empty while something is queued. An empty batch ([`PushBatch::is_empty`]): nothing is queued.
    ///
    /// Errors: a store read error.
    pub fn push_batch(
        &self,
        machine: &str,
        privacy: &Privacy,
        max_messages: usize,
        max_bytes: usize,
    ) -> Result<PushBatch> {
        self.push_batch_after(
            machine,
            &mut Exclusions::new(privacy),
            max_messages,
            max_bytes,
            PushCursor::default(),
        )
    }

    /// [`Store::push_batch`] of the entries after `after` only (outbox and tombstone entries
    /// with a greater `seq`): the next batch while the ones before it are still being pushed
    /// (not yet acknowledged). An entry changed meanwhile was queued again with a greater
    /// `seq`, so it is in a later batch; nothing is skipped.
    ///
    /// Errors: a store read error.
    pub fn push_batch_after(
        &self,
        machine: &str,
        exclusions: &mut Exclusions<'_>,
        max_messages: usize,
        max_bytes: usize,
        after: PushCursor,
    ) -> Result<PushBatch> {
        // One read transaction: every row read comes from the same snapshot.
        let tx = self.conn.unchecked_transaction().db()?;
        let mut batch = PushBatch::default();
        let (mut count, mut bytes) = (0usize, 0usize);
        let full = |count: usize, bytes: usize| count >= max_messages.max(1) || bytes >= max_bytes;
        {
            let mut stmt = tx
                .prepare(
                    "SELECT seq, origin, agent, external_id, deleted_at FROM sync_tombstones
                     WHERE seq > ?1 ORDER BY seq",
                )
                .db()?;
            let mut rows = stmt.query([after.tombstones]).db()?;
            while let Some(r) = rows.next().db()? {
                if count > 0 && full(count, bytes) {
                    return Ok(batch);
                }
                let origin: String = r.get(1).db()?;
                batch.tombstones.push(r.get(0).db()?);
                batch.deletions.push(Deletion {
                    machine: if origin.is_empty() {
                        machine.to_string()
                    } else {
                        origin
                    },
                    agent: r.get(2).db()?,
                    external_id: r.get(3).db()?,
                    deleted_at: r.get(4).db()?,
                });
                count += 1;
            }
        }
        // Per session row id: its index in `batch.sessions`, or `None` when it is not pushed.
        let mut at: HashMap<i64, Option<usize>> = HashMap::new();
        // Per message row id taken: (its session's index, its index there), for its tool calls
        // and events, read for the whole batch at the end.
        let mut at_message: HashMap<i64, (usize, usize)> = HashMap::new();
        // Message row ids whose vectors this batch already carries: a message queued, then
        // embedded before the push, has both entries (its own and its vectors'), and its
        // vectors must be sent once (PostgreSQL refuses one statement that writes a row twice).
        let mut with_vectors: std::collections::HashSet<i64> = std::collections::HashSet::new();
        // The model of the store's vectors (`embed_state`), sent with them.
        let model: Option<String> = tx
            .query_row("SELECT model FROM embed_state WHERE id = 1", [], |r| {
                r.get(0)
            })
            .optional()
            .db()?;
        let mut stmt = tx
            .prepare("SELECT seq, session_id, item FROM sync_outbox WHERE seq > ?1 ORDER BY seq")
            .db()?;
        let mut rows = stmt.query([after.outbox]).db()?;
        while let Some(r) = rows.next().db()? {
            let (seq, sid, item): (i64, i64, i64) =
                (r.get(0).db()?, r.get(1).db()?, r.get(2).db()?);
            if count > 0 && full(count, bytes) {
                break;
            }
            let slot = match at.get(&sid) {
                Some(slot) => *slot,
                None => {
                    let slot = match session_row(&tx, sid)? {
                        Some((origin, project, session))
                            if origin.is_empty()
                                && project.as_deref().is_none_or(|p| !exclusions.excluded(p)) =>
                        {
                            batch.sessions.push(SessionChanges {
                                machine: machine.to_string(),
                                session,
                                messages: Vec::new(),
                                snapshots: None,
                                message_set: None,
                                vectors: Vec::new(),
                            });
                            Some(batch.sessions.len() - 1)
                        }
                        _ => None,
                    };
                    at.insert(sid, slot);
                    slot
                }
            };
            batch.outbox.push(seq);
            let Some(i) = slot else { continue };
            let changes = &mut batch.sessions[i];
            match item {
                0 => {
                    let snaps = snapshots_of(&tx, sid)?;
                    bytes += snaps.iter().map(|s| s.text.len()).sum::<usize>();
                    count += 1;
                    changes.snapshots = Some(snaps);
                }
                -1 => {
                    count += 1;
                    changes.message_set = Some(ext_ids_of(&tx, sid)?);
                }
                id if id <= VECTORS_ITEM => {
                    // The vectors of a message embedded after it was queued or pushed.
                    let message = VECTORS_ITEM - id;
                    if with_vectors.contains(&message) {
                        continue;
                    }
                    if let Some(v) = vectors_of(&tx, sid, message, model.as_deref())? {
                        bytes += v.chunks.iter().map(|c| c.1.len()).sum::<usize>();
                        count += 1;
                        changes.vectors.push(v);
                        with_vectors.insert(message);
                    }
                }
                id => {
                    if let Some(m) = message_of(&tx, sid, id)? {
                        bytes += m.body.len() + m.parts.len();
                        count += 1;
                        // With its vectors (none when it waits to be embedded: that removes
                        // any PostgreSQL holds for an earlier text of it).
                        if !with_vectors.contains(&id)
                            && let Some(v) = vectors_of(&tx, sid, id, model.as_deref())?
                        {
                            changes.vectors.push(v);
                            with_vectors.insert(id);
                        }
                        changes.messages.push(m);
                        at_message.insert(id, (i, changes.messages.len() - 1));
                    }
                }
            }
        }
        drop(rows);
        drop(stmt);
        calls_and_events_of(&tx, &mut batch, &at_message)?;
        Ok(batch)
    }

    /// Queue the vectors of every embedded message of this machine that is not queued itself
    /// (outbox items [`VECTORS_ITEM`] − id), once per database: when the store's
    /// `sync_state` `vectors_database` is not `database` (the database's id). For a database
    /// whose vectors' table appeared after the messages were pushed (pgvector created later,
    /// or pushed by a build without vectors). Returns how many messages were queued.
    ///
    /// Errors: a store error.
    pub fn sync_queue_vectors(&mut self, database: &str) -> Result<u64> {
        if self.sync_state("vectors_database")?.as_deref() == Some(database) {
            return Ok(0);
        }
        self.write(|w| {
            let n =
                w.tx.execute(
                    "INSERT OR IGNORE INTO sync_outbox (session_id, item)
                     SELECT m.session_id, ?1 - m.id FROM messages m
                     JOIN sessions s ON s.id = m.session_id AND s.origin = ''
                     WHERE m.id IN (SELECT DISTINCT message_id FROM message_vectors)
                       AND NOT EXISTS (SELECT 1 FROM sync_outbox o
                                       WHERE o.session_id = m.session_id AND o.item = m.id)
                     ORDER BY m.id",
                    [VECTORS_ITEM],
                )
                .db()?;
            w.tx.execute(
                "INSERT INTO sync_state (key, value) VALUES ('vectors_database', ?1)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [database],
            )
            .db()?;
            Ok(n as u64)
        })
    }

    /// Acknowledge a pushed batch, once PostgreSQL committed it: exactly the outbox and
    /// tombstone entries it covers (`batch.outbox`, `batch.tombstones`) are removed, in one
    /// transaction. An entry changed during the push was queued again with a new `seq`, so it
    /// stays for the next push. Also records `last_push_at` (Unix milliseconds, now) and, when
    /// the batch was written, `database_at`: the `last_push_at` PostgreSQL recorded for this
    /// machine and the revision the push reached ([`Store::database_push_marks`]).
    ///
    /// Errors: a store error (nothing is removed then; the next push sends the batch again,
    /// which PostgreSQL applies idempotently).
    pub fn ack_push(&mut self, batch: &PushBatch, database_at: Option<(i64, i64)>) -> Result<()> {
        let now = crate::now_ms().to_string();
        self.write(|w| {
            let mut outbox =
                w.tx.prepare_cached("DELETE FROM sync_outbox WHERE seq = ?1")
                    .db()?;
            for seq in &batch.outbox {
                outbox.execute([seq]).db()?;
            }
            let mut keep = w.tx.prepare_cached(KEEP_TOMBSTONE).db()?;
            let mut tombstones =
                w.tx.prepare_cached("DELETE FROM sync_tombstones WHERE seq = ?1")
                    .db()?;
            for seq in &batch.tombstones {
                keep.execute([seq]).db()?;
                tombstones.execute([seq]).db()?;
            }
            w.tx.execute(
                "INSERT INTO sync_state (key, value) VALUES ('last_push_at', ?1)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [&now],
            )
            .db()?;
            if let Some((at, rev)) = database_at {
                for (k, v) in [(DATABASE_PUSH_AT, at), (DATABASE_PUSH_REV, rev)] {
                    w.tx.execute(
                        "INSERT INTO sync_state (key, value) VALUES (?1, ?2)
                         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        params![k, v.to_string()],
                    )
                    .db()?;
                }
            }
            Ok(())
        })
    }
}

impl Store {
    /// Apply what one pull step brought from machine `batch.machine`, in ONE transaction
    /// together with the new pull position (`pull:<machine>` = `batch.to_rev`) and the
    /// machine's label (`machines`): a pull killed at any point leaves the store as before it,
    /// and applying the same batch twice leaves what applying it once left.
    ///
    /// In order:
    /// - deletions: the sessions named (origin = the deletion's machine; this machine's own
    ///   sessions when it is this machine's id, see [`Store::sync_enable`]) are deleted as by
    ///   `memtrail sessions delete` (their transcripts' cursors marked deleted, so they are not
    ///   read again). The tombstones the delete trigger writes for them are dropped in the same
    ///   transaction: a deletion pulled is not pushed back.
    /// - sessions: upserted with `origin` = their machine, the title redacted again by
    ///   `enrich` ([`Enrich::redact_title`]) and cut to [`PULLED_TITLE_CHARS`], every other text
    ///   field redacted and capped at [`PULLED_FIELD_CAP`] bytes; the message count is recounted
    ///   from the stored messages.
    /// - messages: upserted by (session, `ext_id`), their parts capped at
    ///   [`PULLED_MESSAGE_CAP`] bytes of text and redacted again by `enrich` (as `memtrail redact
    ///   --rescan` redacts stored rows); what the local writer derives from the parts (the
    ///   search columns `body`, `tools`, `cjk`, the tool calls, the events) is derived again,
    ///   never taken from the pull (see `apply_message`). They are queued for the full-text
    ///   index like any written message, and never queued for a push (they are not this
    ///   machine's).
    /// - snapshots, when `Some`: replaced whole (every text redacted again).
    /// - times (session start and update, message, event, snapshot) more than a day in the
    ///   future are taken as now.
    /// - the machine's label: control characters replaced by spaces, at most 64 characters.
    /// - message set, when `Some`: the session's stored messages not in it are deleted.
    ///
    /// A session that `batch` holds for this machine itself (its own pushes) is skipped.
    ///
    /// Errors: a store error ([`crate::Error::Busy`], [`crate::Error::Full`]); nothing of the
    /// batch is written then, and the pull position is unchanged.
    pub fn apply_pull(&mut self, batch: &PullBatch, enrich: &impl Enrich) -> Result<PullApplied> {
        let own = self.sync_state(MACHINE)?;
        let now_ms = crate::now_ms();
        let now = now_ms.to_string();
        self.write(|w| {
            let mut out = PullApplied::default();
            let tombstones_before: i64 =
                w.tx.query_row(
                    "SELECT COALESCE(MAX(seq), 0) FROM sync_tombstones",
                    [],
                    |r| r.get(0),
                )
                .db()?;
            for d in &batch.deletions {
                let mine = own.as_deref() == Some(d.machine.as_str());
                let mut ids: Vec<i64> = {
                    let mut stmt =
                        w.tx.prepare_cached(
                            "SELECT id FROM sessions WHERE agent = ?1 AND external_id = ?2
                             AND (origin = ?3 OR (?4 AND origin = ''))",
                        )
                        .db()?;
                    stmt.query_map(params![d.agent, d.external_id, d.machine, mine], |r| {
                        r.get(0)
                    })
                    .db()?
                    .collect::<rusqlite::Result<_>>()
                    .db()?
                };
                if mine && ids.is_empty() && d.external_id.contains("…#") {
                    // A session of this machine whose id PostgreSQL holds as its key form (the
                    // id has a NUL or is too long to index: `sync::postgres_key`), deleted on
                    // another machine: found among this machine's sessions of the agent.
                    let mut stmt =
                        w.tx.prepare_cached(
                            "SELECT id, external_id FROM sessions WHERE agent = ?1 AND origin = ''",
                        )
                        .db()?;
                    let rows = stmt
                        .query_map(params![d.agent], |r| {
                            // An id that is not UTF-8 (a damaged row) is no key's.
                            let ext = r.get_ref(1)?.as_str().ok().map(str::to_owned);
                            Ok((r.get::<_, i64>(0)?, ext))
                        })
                        .db()?;
                    for r in rows {
                        if let (id, Some(ext)) = r.db()?
                            && crate::sync::postgres_key(&ext) == d.external_id
                        {
                            ids.push(id);
                        }
                    }
                }
                delete_rows(w, &ids)?;
                out.deleted_sessions += ids.len() as u64;
            }
            w.tx.execute(
                "DELETE FROM sync_tombstones WHERE seq > ?1",
                [tombstones_before],
            )
            .db()?;
            for changes in &batch.sessions {
                if own.as_deref() == Some(changes.machine.as_str()) || changes.machine.is_empty() {
                    continue;
                }
                let (sid, deleted) = apply_session(w, changes, enrich, now_ms)?;
                out.sessions += 1;
                out.messages += changes.messages.len() as u64;
                out.deleted_messages += deleted;
                w.tx.execute(
                    "UPDATE sessions SET message_count =
                         (SELECT COUNT(*) FROM messages WHERE session_id = ?1)
                     WHERE id = ?1",
                    [sid],
                )
                .db()?;
            }
            w.tx.execute(
                "INSERT INTO machines (id, label) VALUES (?1, ?2)
                 ON CONFLICT (id) DO UPDATE SET label = excluded.label",
                params![
                    batch.machine,
                    crate::machine::sanitize_label(&enrich.redact(&batch.label))
                        .unwrap_or_else(|| batch.machine.clone())
                ],
            )
            .db()?;
            let mut set =
                w.tx.prepare_cached(
                    "INSERT INTO sync_state (key, value) VALUES (?1, ?2)
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                )
                .db()?;
            set.execute(params![
                format!("pull:{}", batch.machine),
                batch.to_rev.to_string()
            ])
            .db()?;
            set.execute(params!["last_pull_at", now]).db()?;
            Ok(out)
        })
    }
}

/// Write one pulled session's changes (see [`Store::apply_pull`]). Returns the session's row
/// id and how many of its messages the message set deleted.
fn apply_session<E: Enrich>(
    w: &Writer<'_>,
    changes: &SessionChanges,
    enrich: &E,
    now: i64,
) -> Result<(i64, u64)> {
    let s = &changes.session;
    let at = |t: Option<i64>| t.map(|t| crate::sync::not_future(t, now));
    let title = s.title.as_deref().map(|t| {
        let t = no_controls(&enrich.redact_title(cap(t, PULLED_FIELD_CAP)));
        if t.chars().count() > PULLED_TITLE_CHARS {
            one_line(&t, PULLED_TITLE_CHARS)
        } else {
            t
        }
    });
    let field = |t: &Option<String>| t.as_deref().map(|t| pulled_field(enrich, t));
    let sid: i64 =
        w.tx.prepare_cached(
            "INSERT INTO sessions (agent, external_id, origin, parent_external_id, project_dir,
                                   title, model, git_branch, agent_version, started_at,
                                   updated_at, message_count)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
             ON CONFLICT (agent, external_id, origin) DO UPDATE SET
                parent_external_id = excluded.parent_external_id,
                project_dir = excluded.project_dir, title = excluded.title,
                model = excluded.model, git_branch = excluded.git_branch,
                agent_version = excluded.agent_version, started_at = excluded.started_at,
                updated_at = excluded.updated_at, message_count = excluded.message_count
             RETURNING id",
        )
        .db()?
        .query_row(
            params![
                s.agent,
                s.external_id,
                changes.machine,
                field(&s.parent_external_id),
                field(&s.project_dir),
                title,
                field(&s.model),
                field(&s.git_branch),
                field(&s.agent_version),
                at(s.started_at),
                at(s.updated_at),
                s.message_count,
            ],
            |r| r.get(0),
        )
        .db()?;
    for m in &changes.messages {
        apply_message(w, sid, m, enrich, now)?;
    }
    if let Some(snaps) = &changes.snapshots {
        w.tx.execute("DELETE FROM snapshots WHERE session_id = ?1", [sid])
            .db()?;
        let mut stmt =
            w.tx.prepare_cached(
                "INSERT INTO snapshots (session_id, built_at, trigger, budget, events, text,
                                        consumed_at, consumed_by)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .db()?;
        for snap in snaps {
            stmt.execute(params![
                sid,
                crate::sync::not_future(snap.built_at, now),
                pulled_field(enrich, &snap.trigger),
                snap.budget,
                snap.events,
                redact_capped(enrich, &snap.text, PULLED_MESSAGE_CAP),
                snap.consumed_at.map(|t| crate::sync::not_future(t, now)),
                snap.consumed_by.as_deref().map(|t| pulled_field(enrich, t)),
            ])
            .db()?;
        }
    }
    let mut deleted = 0;
    if let Some(set) = &changes.message_set {
        let keep: std::collections::HashSet<&str> = set.iter().map(String::as_str).collect();
        let stored: Vec<(i64, String)> = {
            let mut stmt =
                w.tx.prepare_cached("SELECT id, ext_id FROM messages WHERE session_id = ?1")
                    .db()?;
            stmt.query_map([sid], |r| Ok((r.get(0)?, r.get(1)?)))
                .db()?
                .collect::<rusqlite::Result<_>>()
                .db()?
        };
        let mut stmt =
            w.tx.prepare_cached("DELETE FROM messages WHERE id = ?1")
                .db()?;
        for (id, ext_id) in stored {
            if !keep.contains(ext_id.as_str()) {
                // Its tool calls and events go with it (`ON DELETE CASCADE`).
                stmt.execute([id]).db()?;
                deleted += 1;
            }
        }
    }
    Ok((sid, deleted))
}

/// Upsert one pulled message of session `sid` (see [`Store::apply_pull`]). Nothing of what
/// the local writer derives from a message's parts is taken from the pull: the parts are
/// capped ([`cap_pulled_parts`]) and redacted, and the search columns (`body`, `tools`, `cjk`),
/// the tool calls and the events are derived from them again as the writer derives them. Parts
/// that do not parse (no event or tool call can be read from them) keep their pulled search
/// columns and tool calls, capped and redacted, and their pulled events, every text redacted.
fn apply_message<E: Enrich>(
    w: &Writer<'_>,
    sid: i64,
    m: &SyncMessage,
    enrich: &E,
    now: i64,
) -> Result<()> {
    let ts = m.ts.map(|t| crate::sync::not_future(t, now));
    // Cut before redaction (its cost grows with the text) with room to spare, and again at
    // the cap after it: a secret the first cut splits is past the second.
    let before = PULLED_MESSAGE_CAP + CAP_SLACK;
    let parsed = serde_json::from_str::<Vec<Part>>(&m.parts)
        .ok()
        .map(|mut parts| {
            cap_pulled_parts(&mut parts, before);
            Message {
                id: m.ext_id.clone(),
                role: m.role.parse().unwrap_or(Role::System),
                kind: kind_from_str(&m.kind),
                parts,
                timestamp: ts,
                model: None,
            }
        });
    let capped = match &parsed {
        Some(msg) => serde_json::to_string(&msg.parts)?,
        None => cap(&m.parts, before).to_string(),
    };
    let redacted = redact_stored(
        enrich,
        StoredText {
            ext_id: m.ext_id.clone(),
            role: &m.role,
            kind: &m.kind,
            ts,
            body: cap(&m.body, before),
            tools: cap(&m.tools, before),
            parts: &capped,
        },
    )?;
    // The message as stored: its parts (JSON), search columns and, when the parts parse, the
    // message they hold (the search columns rendered from it).
    let (parts, body, tools, message) = match (redacted, parsed) {
        (Some(r), _) => (r.parts, r.body, r.tools, r.message),
        (None, parsed) => (
            capped,
            cap(&m.body, before).to_string(),
            cap(&m.tools, before).to_string(),
            parsed,
        ),
    };
    let (parts, body, tools, message) = match message {
        Some(mut msg) => {
            cap_pulled_parts(&mut msg.parts, PULLED_MESSAGE_CAP);
            let (body, tools) = render_index_text(&msg);
            (serde_json::to_string(&msg.parts)?, body, tools, Some(msg))
        }
        None => (
            cap(&parts, PULLED_MESSAGE_CAP).to_string(),
            cap(&body, PULLED_MESSAGE_CAP).to_string(),
            cap(&tools, PULLED_MESSAGE_CAP).to_string(),
            None,
        ),
    };
    let cjk = cjk_index_text(&body, &tools);
    // `tools` is rendered from the parts when read (`packed`), unless the parts did not parse.
    let tools = message.is_none().then_some(tools);
    let parts = packed::pack(parts, &body)?;
    let model = m.model.as_deref().map(|t| pulled_field(enrich, t));
    // Not an upsert: an `ON CONFLICT … DO UPDATE` would impose its conflict handling on the
    // triggers' `INSERT OR IGNORE INTO fts_pending` (SQLite's rule for statements in triggers).
    let stored: Option<i64> =
        w.tx.prepare_cached("SELECT id FROM messages WHERE session_id = ?1 AND ext_id = ?2")
            .db()?
            .query_row(params![sid, m.ext_id], |r| r.get(0))
            .optional()
            .db()?;
    let id = match stored {
        Some(id) => {
            w.tx.prepare_cached(
                "UPDATE messages SET seq = ?2, role = ?3, kind = ?4, ts = ?5, model = ?6,
                    body = ?7, tools_text = ?8, cjk = ?9, parts_zdict = ?10 WHERE id = ?1",
            )
            .db()?
            .execute(params![
                id, m.seq, m.role, m.kind, ts, model, body, tools, cjk, parts
            ])
            .db()?;
            id
        }
        None => {
            w.tx.prepare_cached(
                "INSERT INTO messages (session_id, ext_id, seq, role, kind, ts, model, body,
                                       tools_text, cjk, parts_zdict)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )
            .db()?
            .execute(params![
                sid, m.ext_id, m.seq, m.role, m.kind, ts, model, body, tools, cjk, parts
            ])
            .db()?;
            w.tx.last_insert_rowid()
        }
    };
    w.tx.prepare_cached("DELETE FROM tool_calls WHERE message_id = ?1")
        .db()?
        .execute([id])
        .db()?;
    if let Some(msg) = &message {
        w.index_calls(sid, id, msg)?;
        return w.index_events(enrich, sid, id, msg);
    }
    let mut calls =
        w.tx.prepare_cached(
            "INSERT INTO tool_calls (session_id, call_id, message_id, name, tool, is_error,
                                     has_output)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (session_id, call_id) DO UPDATE SET message_id = excluded.message_id,
                name = excluded.name, tool = excluded.tool, is_error = excluded.is_error,
                has_output = excluded.has_output",
        )
        .db()?;
    for c in &m.tool_calls {
        calls
            .execute(params![
                sid,
                pulled_field(enrich, &c.call_id),
                id,
                pulled_field(enrich, &c.name),
                pulled_field(enrich, &c.tool),
                c.is_error,
                c.has_output
            ])
            .db()?;
    }
    w.tx.prepare_cached("DELETE FROM events WHERE message_id = ?1")
        .db()?
        .execute([id])
        .db()?;
    let mut events = w.tx.prepare_cached(super::recall::INSERT_EVENT).db()?;
    for e in &m.events {
        events
            .execute(params![
                sid,
                id,
                e.seq,
                pulled_field(enrich, &e.category),
                pulled_field(enrich, &e.action),
                e.priority,
                redact_capped(enrich, &e.subject, MAX_SUBJECT),
                e.detail
                    .as_deref()
                    .map(|d| redact_capped(enrich, d, MAX_DETAIL)),
                e.call_id.as_deref().map(|t| pulled_field(enrich, t)),
                e.tool.as_deref().map(|t| pulled_field(enrich, t)),
                e.ts.map(|t| crate::sync::not_future(t, now)),
            ])
            .db()?;
    }
    Ok(())
}

/// Cap on the bytes of one pulled message's text (the strings of its parts together, in
/// order; each of its search columns when its parts do not parse): what is past it is
/// dropped, so that one huge message of another machine is not stored (and indexed) whole
/// by every machine that pulls it.
pub const PULLED_MESSAGE_CAP: usize = 1024 * 1024;

/// Room past a cap that pulled text is cut to before it is redacted (then cut at the cap).
const CAP_SLACK: usize = 64 * 1024;

/// Cap on the bytes of a pulled short field (a project directory, branch, model, tool name,
/// …), after redaction.
pub const PULLED_FIELD_CAP: usize = 4096;

/// Cap on the characters of a pulled session title (longer ones are cut to one line of this
/// many characters, as the adapters cut titles).
pub const PULLED_TITLE_CHARS: usize = 200;

/// Cap the text of pulled `parts` in place: every text, thinking, tool input string and tool
/// output cut so that together they hold at most `max` bytes (the first ones first).
fn cap_pulled_parts(parts: &mut [Part], max: usize) {
    fn take(s: &mut String, left: &mut usize) {
        let keep = cap(s, *left).len();
        s.truncate(keep);
        *left -= keep;
    }
    fn take_json(v: &mut serde_json::Value, left: &mut usize) {
        match v {
            serde_json::Value::String(s) => take(s, left),
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| take_json(x, left)),
            serde_json::Value::Object(o) => o.values_mut().for_each(|x| take_json(x, left)),
            _ => {}
        }
    }
    let mut left = max;
    for p in parts {
        match p {
            Part::Text { text } | Part::Thinking { text } => take(text, &mut left),
            Part::ToolCall(c) => {
                take_json(&mut c.input, &mut left);
                if let Some(o) = &mut c.output {
                    take(o, &mut left);
                }
            }
            Part::ToolResult { output, .. } => take(output, &mut left),
        }
    }
}

/// Pulled `text` redacted and cut at `max` bytes (cut at `max` + [`CAP_SLACK`] before, so
/// that a huge text costs no more to redact than that).
fn redact_capped<E: Enrich>(enrich: &E, text: &str, max: usize) -> String {
    cap(&enrich.redact(cap(text, max + CAP_SLACK)), max).to_string()
}

/// A pulled short field as stored: redacted, capped at [`PULLED_FIELD_CAP`] bytes, its
/// control characters (terminal escapes, line breaks) replaced by spaces.
fn pulled_field<E: Enrich>(enrich: &E, text: &str) -> String {
    no_controls(&redact_capped(enrich, text, PULLED_FIELD_CAP))
}

/// `text` with every control character replaced by a space.
fn no_controls(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The session row `sid` as pushed, with its origin and project; `None` when it is gone.
/// The project folder, model and agent version as stored: the push redacts them
/// ([`PushBatch::redact_session_fields`]).
fn session_row(tx: &rusqlite::Connection, sid: i64) -> Result<Option<SessionRow>> {
    tx.prepare_cached(
        "SELECT origin, project_dir, agent, external_id, parent_external_id, title, model,
                git_branch, agent_version, started_at, updated_at, message_count
         FROM sessions WHERE id = ?1",
    )
    .db()?
    .query_row([sid], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            SyncSession {
                agent: r.get(2)?,
                external_id: r.get(3)?,
                parent_external_id: r.get(4)?,
                project_dir: r.get(1)?,
                title: r.get(5)?,
                model: r.get(6)?,
                git_branch: r.get(7)?,
                agent_version: r.get(8)?,
                started_at: r.get(9)?,
                updated_at: r.get(10)?,
                message_count: r.get(11)?,
            },
        ))
    })
    .optional()
    .db()
}

/// Every snapshot of session `sid`, in order (`built_at`, then `id`).
fn snapshots_of(tx: &rusqlite::Connection, sid: i64) -> Result<Vec<SyncSnapshot>> {
    let mut stmt = tx
        .prepare_cached(
            "SELECT built_at, trigger, budget, events, text, consumed_at, consumed_by
             FROM snapshots WHERE session_id = ?1 ORDER BY built_at, id",
        )
        .db()?;
    let rows = stmt
        .query_map([sid], |r| {
            Ok(SyncSnapshot {
                built_at: r.get(0)?,
                trigger: r.get(1)?,
                budget: r.get(2)?,
                events: r.get(3)?,
                text: r.get(4)?,
                consumed_at: r.get(5)?,
                consumed_by: r.get(6)?,
            })
        })
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    Ok(rows)
}

/// The `ext_id` of every message of session `sid`, by `seq`.
fn ext_ids_of(tx: &rusqlite::Connection, sid: i64) -> Result<Vec<String>> {
    let mut stmt = tx
        .prepare_cached("SELECT ext_id FROM messages WHERE session_id = ?1 ORDER BY seq, id")
        .db()?;
    let rows = stmt
        .query_map([sid], |r| r.get(0))
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    Ok(rows)
}

/// Outbox items at or below this one are the vectors of message row `VECTORS_ITEM - item`
/// (written by the trigger of migration 10 when a message of this machine is embedded):
/// -2 is message 0, -3 message 1, …
pub const VECTORS_ITEM: i64 = -2;

/// The vectors of message row `id` of session `sid`, made by `model` (the store's), in chunk
/// order; `None` when the message is gone (its deletion reaches PostgreSQL by the session's
/// message set). No vectors (`chunks` empty) when it has none (yet).
fn vectors_of(
    tx: &rusqlite::Connection,
    sid: i64,
    id: i64,
    model: Option<&str>,
) -> Result<Option<SyncVectors>> {
    let ext: Option<String> = tx
        .prepare_cached("SELECT ext_id FROM messages WHERE id = ?1 AND session_id = ?2")
        .db()?
        .query_row(params![id, sid], |r| r.get(0))
        .optional()
        .db()?;
    let Some(ext_id) = ext else { return Ok(None) };
    let mut chunks = Vec::new();
    if model.is_some() {
        let mut stmt = tx
            .prepare_cached(
                "SELECT scale, vec FROM message_vectors WHERE message_id = ?1 ORDER BY chunk",
            )
            .db()?;
        let mut rows = stmt.query([id]).db()?;
        while let Some(r) = rows.next().db()? {
            let scale: f64 = r.get(0).db()?;
            let bytes: Vec<u8> = r.get(1).db()?;
            chunks.push((scale as f32, bytes.into_iter().map(|b| b as i8).collect()));
        }
    }
    Ok(Some(SyncVectors {
        ext_id,
        model: if chunks.is_empty() {
            String::new()
        } else {
            model.unwrap_or_default().to_string()
        },
        chunks,
    }))
}

/// Message row `id` of session `sid` with its tool calls (by `call_id`) and events (by `seq`,
/// then `id`); `None` when it is gone.
fn message_of(tx: &rusqlite::Connection, sid: i64, id: i64) -> Result<Option<SyncMessage>> {
    let m = tx
        .prepare_cached(
            "SELECT ext_id, seq, role, kind, ts, model, body, memtrail_tools(tools_text, parts_zdict), cjk,
                    memtrail_parts(parts_zdict, body)
             FROM messages WHERE id = ?1 AND session_id = ?2",
        )
        .db()?
        .query_row(params![id, sid], |r| {
            Ok(SyncMessage {
                ext_id: r.get(0)?,
                seq: r.get(1)?,
                role: r.get(2)?,
                kind: r.get(3)?,
                ts: r.get(4)?,
                model: r.get(5)?,
                body: r.get(6)?,
                tools: r.get(7)?,
                cjk: r.get(8)?,
                parts: r.get(9)?,
                tool_calls: Vec::new(),
                events: Vec::new(),
            })
        })
        .optional()
        .db()?;
    Ok(m)
}

/// Fills in the tool calls (by `call_id`) and events (by `seq`, then row id) of every message
/// of `batch` (`at`: message row id → (session index, message index)), in two queries.
fn calls_and_events_of(
    tx: &rusqlite::Connection,
    batch: &mut PushBatch,
    at: &HashMap<i64, (usize, usize)>,
) -> Result<()> {
    if at.is_empty() {
        return Ok(());
    }
    let ids = serde_json::to_string(&at.keys().collect::<Vec<_>>())
        .map_err(|e| crate::Error::Invalid(format!("message ids: {e}")))?;
    let mut stmt = tx
        .prepare_cached(
            "SELECT message_id, call_id, name, tool, is_error, has_output FROM tool_calls
             WHERE message_id IN (SELECT value FROM json_each(?1)) ORDER BY message_id, call_id",
        )
        .db()?;
    let mut rows = stmt.query([&ids]).db()?;
    while let Some(r) = rows.next().db()? {
        let (i, j) = at[&r.get::<_, i64>(0).db()?];
        batch.sessions[i].messages[j].tool_calls.push(SyncToolCall {
            call_id: r.get(1).db()?,
            name: r.get(2).db()?,
            tool: r.get(3).db()?,
            is_error: r.get(4).db()?,
            has_output: r.get(5).db()?,
        });
    }
    let mut stmt = tx
        .prepare_cached(concat!(
            "SELECT message_id, seq, category, action, priority, ",
            super::recall::event_subject!(),
            ", detail, call_id, tool, ts
                 FROM events WHERE message_id IN (SELECT value FROM json_each(?1))
                 ORDER BY message_id, seq, id"
        ))
        .db()?;
    let mut rows = stmt.query([&ids]).db()?;
    while let Some(r) = rows.next().db()? {
        let (i, j) = at[&r.get::<_, i64>(0).db()?];
        batch.sessions[i].messages[j].events.push(SyncEvent {
            seq: r.get(1).db()?,
            category: r.get(2).db()?,
            action: r.get(3).db()?,
            priority: r.get(4).db()?,
            subject: r.get(5).db()?,
            detail: r.get(6).db()?,
            call_id: r.get(7).db()?,
            tool: r.get(8).db()?,
            ts: r.get(9).db()?,
        });
    }
    Ok(())
}
