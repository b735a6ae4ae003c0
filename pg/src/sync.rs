//! Push and pull (docs/sync.md): a [`PushBatch`] written in one transaction, idempotently
//! (natural keys, upserts, a message's tool calls and events replaced whole), every written row
//! taking `rev = nextval('memtrail_rev')`; a [`PullBatch`] of one other machine's rows with a
//! revision above this machine's position for it, read in one REPEATABLE READ transaction.

use std::collections::{BTreeMap, HashMap, HashSet};

use memtrail_runtime::sync::{
    Deletion, PullBatch, PushBatch, SessionChanges, SyncEvent, SyncMessage, SyncSession,
    SyncSnapshot, SyncToolCall, SyncVectors,
};
use tokio_postgres::IsolationLevel;
use tokio_postgres::Transaction;

use crate::tsv::TsVector;
use crate::{Error, Pg, Result};

/// A session's key in PostgreSQL: the first 32 hex digits of BLAKE3(`"memtrail-session\0"`
/// machine `"\0"` agent `"\0"` external_id) (docs/sync.md, Keys).
pub fn session_uid(machine: &str, agent: &str, external_id: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"memtrail-session\0");
    h.update(machine.as_bytes());
    h.update(b"\0");
    h.update(agent.as_bytes());
    h.update(b"\0");
    h.update(external_id.as_bytes());
    h.finalize().to_hex()[..32].to_string()
}

/// A machine that pushed to the database (the `machines` table). Times are Unix milliseconds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MachineInfo {
    pub id: String,
    pub label: String,
    pub first_push_at: Option<i64>,
    pub last_push_at: Option<i64>,
}

/// What one [`Pg::push`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Pushed {
    /// Sessions deleted (rows removed; a deletion of a session PostgreSQL did not hold is still
    /// recorded for the other machines).
    pub deletions: u64,
    /// Session rows written.
    pub sessions: u64,
    /// Message rows written.
    pub messages: u64,
    /// Messages removed because a session's message set no longer holds them.
    pub messages_removed: u64,
    /// The bytes of message text sent (body, tools, cjk, parts).
    pub bytes: u64,
    /// Sessions of the batch not written because another machine deleted them (a delete is
    /// for good; this machine deletes them when it pulls the deletion).
    pub deleted_elsewhere: u64,
    /// Those sessions, as (agent, external id) pairs as sent: a push of several batches
    /// counts each session once ([`crate::engine::Pushed`]).
    #[serde(skip)]
    pub deleted_elsewhere_sessions: Vec<(String, String)>,
    /// Vectors (chunks) written to `message_vectors`.
    pub vectors: u64,
    /// Vectors (chunks) of the batch not written because the database has no pgvector (no
    /// `message_vectors` table, migration 7).
    pub vectors_skipped: u64,
    /// The `last_push_at` this push recorded in the machine's `machines` row (Unix
    /// milliseconds, the `at` it was given): a store keeps it, and a database that shows
    /// another one had a push from another store under the same machine id ([`Pg::marks`]).
    pub at: i64,
    /// The sequence's last value once the push's rows were written: at least every revision
    /// it gave out. A database whose sequence has not reached it went back in time.
    pub rev: i64,
}

/// What a database shows of its past, for telling that it went back in time (restored from
/// a backup taken before some of the pushes a store saw commit): [`Pg::marks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatabaseMarks {
    /// The machine's `machines.last_push_at` (Unix milliseconds), `None` when it never pushed.
    pub last_push_at: Option<i64>,
    /// The highest revision ever given out (`memtrail_rev`'s last value), 0 when none was.
    pub revision: i64,
}

/// Whether the database has the vectors' table (migration 7 with pgvector).
async fn has_vector_table(tx: &Transaction<'_>) -> Result<bool> {
    Ok(tx
        .query_one("SELECT to_regclass('message_vectors') IS NOT NULL", &[])
        .await?
        .get(0))
}

/// A vector as pgvector's text form, `[x,y,…]`: each component `scale × byte` (f32, shortest
/// representation).
pub fn vector_literal(scale: f32, v: &[i8]) -> String {
    let mut s = String::with_capacity(v.len() * 8 + 2);
    s.push('[');
    for (i, &b) in v.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&(scale * b as f32).to_string());
    }
    s.push(']');
    s
}

/// The vectors of the sessions pushed: every message named in a session's `vectors` has its
/// stored vectors replaced by the ones sent (none: removed).
async fn replace_vectors(
    tx: &Transaction<'_>,
    uids: &[String],
    sessions: &[&SessionChanges],
) -> Result<u64> {
    let (mut keys_s, mut keys_e) = (Vec::<&str>::new(), Vec::<&str>::new());
    let (mut s_, mut e_, mut c_, mut m_, mut v_) = (
        Vec::<&str>::new(),
        Vec::<&str>::new(),
        Vec::<i32>::new(),
        Vec::<&str>::new(),
        Vec::<String>::new(),
    );
    for (uid, s) in uids.iter().zip(sessions) {
        for SyncVectors {
            ext_id,
            model,
            chunks,
        } in &s.vectors
        {
            keys_s.push(uid);
            keys_e.push(ext_id);
            for (i, (scale, v)) in chunks.iter().enumerate() {
                s_.push(uid);
                e_.push(ext_id);
                c_.push(i as i32);
                m_.push(model);
                v_.push(vector_literal(*scale, v));
            }
        }
    }
    if keys_s.is_empty() {
        return Ok(0);
    }
    tx.execute(
        "DELETE FROM message_vectors v USING unnest($1::text[], $2::text[]) AS k(s, e) \
         WHERE v.session_uid = k.s AND v.ext_id = k.e",
        &[&keys_s, &keys_e],
    )
    .await?;
    if s_.is_empty() {
        return Ok(0);
    }
    Ok(tx
        .execute(
            "INSERT INTO message_vectors (session_uid, ext_id, chunk, model, embedding) \
             SELECT s, e, c, m, v::halfvec \
             FROM unnest($1::text[], $2::text[], $3::int4[], $4::text[], $5::text[]) AS k(s, e, c, m, v) \
             ON CONFLICT (session_uid, ext_id, chunk) DO UPDATE \
             SET model = EXCLUDED.model, embedding = EXCLUDED.embedding",
            &[&s_, &e_, &c_, &m_, &v_],
        )
        .await?)
}

/// Vectors a model must have in the database before [`Pg::ensure_vector_index`] builds its
/// index: below it scoring every vector is fast enough (docs/postgres.md).
pub const VECTOR_INDEX_MIN_VECTORS: i64 = 20_000;

/// `maintenance_work_mem` while a vector index is built (pgvector's k-means sample and the
/// lists' assignment run in it).
pub const VECTOR_INDEX_BUILD_MEMORY: &str = "1GB";

/// The index is built again once the model's vectors are this many times those it was built
/// for (`lists²`): its lists' centres were learnt from the vectors of that time, and a list
/// read per probe grows with them.
pub const VECTOR_INDEX_REBUILD_GROWTH: f64 = 4.0;

/// The lists (k-means clusters) of an IVFFlat index of `n` vectors: `√n`, at least 100
/// (pgvector's advice is `n / 1000` up to 1M rows and `√n` above; `√n` measured better on the
/// 1 GB eval, docs/postgres.md).
pub fn vector_index_lists(n: i64) -> i64 {
    ((n.max(0) as f64).sqrt().round() as i64).max(100)
}

/// pgvector's largest `halfvec` an IVFFlat index takes.
const HALFVEC_MAX_DIM: usize = 4000;

/// `s` as an SQL string literal, whatever `standard_conforming_strings` is: an escape string
/// (`E'…'`), each backslash and each quote doubled.
pub fn sql_literal(s: &str) -> String {
    format!("E'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// The dimension at the end of a model id (`name@version/DIM`), when pgvector's IVFFlat index
/// takes it (1–4,000).
fn model_dim(model: &str) -> Option<usize> {
    model
        .rsplit('/')
        .next()
        .and_then(|d| d.parse::<usize>().ok())
        .filter(|d| (1..=HALFVEC_MAX_DIM).contains(d))
}

/// The name of the vector index of `model`'s vectors: `message_vectors_ivf_` and 16 hex digits
/// of the model id's 64-bit FNV-1a hash (a model id may hold any character; index names are
/// at most 63 bytes).
pub fn vector_index_name(model: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in model.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("message_vectors_ivf_{h:016x}")
}

/// The full-text vector of each message of `batch` ([`TsVector::message`] of its body, tool
/// calls and CJK characters): one list per session of `batch.sessions`, one vector per message,
/// for [`Pg::push_with_lexemes`].
pub fn batch_lexemes(batch: &PushBatch) -> Vec<Vec<TsVector>> {
    batch
        .sessions
        .iter()
        .map(|s| {
            s.messages
                .iter()
                .map(|m| TsVector::message(&m.body, &m.tools, m.cjk.as_deref()))
                .collect()
        })
        .collect()
}

/// The bytes of text a message carries (body, tools, cjk, parts).
pub fn message_bytes(m: &SyncMessage) -> u64 {
    (m.body.len() + m.tools.len() + m.cjk.as_ref().map_or(0, |c| c.len()) + m.parts.len()) as u64
}

impl Pg {
    /// The database's identity (`memtrail_meta.database_id`, a random UUID written once by
    /// [`crate::migrate::migrate`]): a database created again under the same URL, or another
    /// URL, has another one, so a store can tell it has not synced with it yet.
    ///
    /// Errors: [`Error::Invalid`] when the schema was never migrated by a build that writes it;
    /// [`Error::Db`].
    pub fn database_id(&self) -> Result<String> {
        let row = self.block_on(self.client().query_opt(
            "SELECT value FROM memtrail_meta WHERE key = 'database_id'",
            &[],
        ))?;
        row.map(|r| r.get(0)).ok_or_else(|| {
            Error::Invalid(
                "the database has no memtrail id yet (memtrail_meta.database_id): run `memtrail sync` with this build so it migrates the schema".into(),
            )
        })
    }

    /// [`DatabaseMarks`] for machine `machine`. `pg_sequence_last_value` needs only `USAGE` on
    /// the sequence, which every role that pushes has.
    ///
    /// Errors: [`Error::Db`].
    pub fn marks(&self, machine: &str) -> Result<DatabaseMarks> {
        let row = self.block_on(self.client().query_one(
            "SELECT (SELECT last_push_at FROM machines WHERE id = $1), \
               coalesce(pg_sequence_last_value('memtrail_rev'::regclass), 0)",
            &[&machine],
        ))?;
        Ok(DatabaseMarks {
            last_push_at: row.get(0),
            revision: row.get(1),
        })
    }

    /// Give the database a new identity (`memtrail_meta.database_id`) in place of `old`, so
    /// that every store takes it for a database it has not synced with: each sends all its
    /// sessions again and pulls every machine's from the start. What a store does on finding
    /// the database restored from a backup ([`DatabaseMarks`]): the pushes made since the
    /// backup are lost there, and the revisions given out since will be given out again. When
    /// another store renewed it first (the identity is no longer `old`), that one is kept.
    /// Returns the identity now.
    ///
    /// Errors: [`Error::Db`] (a role without `UPDATE` on `memtrail_meta`: the database's owner
    /// runs `memtrail sync` once).
    pub fn renew_database_id(&mut self, old: &str) -> Result<String> {
        self.block_on(self.client().execute(
            "UPDATE memtrail_meta SET value = gen_random_uuid()::text \
             WHERE key = 'database_id' AND value = $1",
            &[&old],
        ))?;
        self.database_id()
    }

    /// Whether the database holds the vectors' table (migration 7, created with pgvector):
    /// pushes then send the vectors, and `--store` searches by meaning.
    ///
    /// Errors: [`Error::Db`].
    pub fn has_vector_table(&self) -> Result<bool> {
        Ok(self
            .block_on(
                self.client()
                    .query_one("SELECT to_regclass('message_vectors') IS NOT NULL", &[]),
            )?
            .get(0))
    }

    /// Whether `model`'s vectors have a current index ([`Pg::ensure_vector_index`]), or need
    /// or can have none: `true` too for a model id without a usable dimension, when this role
    /// does not own `message_vectors` (only its owner may index it), or when the database holds
    /// fewer than [`VECTOR_INDEX_MIN_VECTORS`] of the model's vectors (counted through the
    /// index on `model`, at most that many rows read). `false` when there is no index, or when
    /// the model's vectors have grown [`VECTOR_INDEX_REBUILD_GROWTH`] times past what the index
    /// was built for (the index's own row estimate, kept by VACUUM and ANALYZE, against
    /// `lists²`). A sync calls it after pushing vectors: one short statement.
    ///
    /// Errors: [`Error::Db`].
    pub fn has_vector_index(&self, model: &str) -> Result<bool> {
        if model_dim(model).is_none() {
            return Ok(true);
        }
        let row = self.block_on(self.client().query_one(
            "SELECT CASE
                WHEN NOT pg_has_role((SELECT relowner FROM pg_class
                                      WHERE oid = 'message_vectors'::regclass), 'USAGE')
                THEN true
                WHEN to_regclass($1) IS NULL
                THEN (SELECT count(*) FROM
                      (SELECT 1 FROM message_vectors WHERE model = $2 LIMIT $3) x) < $3
                ELSE (SELECT i.reltuples::float8 <= $4 * power(coalesce(substring(
                          array_to_string(i.reloptions, ',') FROM 'lists=([0-9]+)')::float8,
                          0), 2)
                      FROM pg_class i WHERE i.oid = to_regclass($1))
                END",
            &[
                &vector_index_name(model),
                &model,
                &VECTOR_INDEX_MIN_VECTORS,
                &VECTOR_INDEX_REBUILD_GROWTH,
            ],
        ))?;
        Ok(row.get(0))
    }

    /// Builds (or builds again) the IVFFlat index of `model`'s vectors (`name@version/DIM`)
    /// when [`Pg::has_vector_index`] says it is missing or outgrown: a partial expression
    /// index, `USING ivfflat ((embedding::halfvec(DIM)) halfvec_ip_ops) WITH (lists = L)
    /// WHERE model = '…' AND vector_dims(embedding) = DIM` ([`vector_index_lists`] of the
    /// model's vectors), named [`vector_index_name`], which the searches by meaning of
    /// [`crate::PgReader`] match. `Ok(None)` when nothing was built; `Ok(Some(vectors))`, the
    /// vectors indexed, when built.
    ///
    /// Why IVFFlat and not HNSW: on the 1 GB eval, pgvector's HNSW index (m 16,
    /// ef_construction 64) found far fewer of the nearest vectors than a scan (0.086–0.121 of
    /// the paraphrases against 0.241, ef_search 100–1,000); IVFFlat with √n lists and one list
    /// in 20 probed found 0.195–0.224, built in 25–27 s (docs/postgres.md).
    ///
    /// Built with `CREATE INDEX CONCURRENTLY` under a second name (`…_new`; neither searches
    /// nor pushes wait for it), with `maintenance_work_mem` raised to
    /// [`VECTOR_INDEX_BUILD_MEMORY`], then put in place of the old index in one short
    /// transaction. A build that fails leaves an invalid `…_new` index, dropped by the next
    /// attempt. Vectors pushed later go into the list of their nearest centre.
    ///
    /// Errors: [`Error::Db`] (an index another machine built at the same moment is not an
    /// error). A sync reports the error and goes on: the index is an optimisation.
    pub fn ensure_vector_index(&self, model: &str) -> Result<Option<u64>> {
        let Some(dim) = model_dim(model) else {
            return Ok(None);
        };
        if self.has_vector_index(model)? {
            return Ok(None);
        }
        let count: i64 = self
            .block_on(self.client().query_one(
                &format!(
                    "SELECT count(*) FROM message_vectors WHERE model = $1 \
                     AND vector_dims(embedding) = {dim}"
                ),
                &[&model],
            ))?
            .get(0);
        let name = vector_index_name(model);
        let new = format!("{name}_new");
        let lit = sql_literal(model);
        let lists = vector_index_lists(count);
        // Each statement on its own: CREATE INDEX CONCURRENTLY may not run in a transaction.
        let built = (|| -> Result<()> {
            self.batch_execute(&format!(
                "SET maintenance_work_mem = '{VECTOR_INDEX_BUILD_MEMORY}'"
            ))?;
            self.batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {new}"))?;
            self.batch_execute(&format!(
                "CREATE INDEX CONCURRENTLY {new} ON message_vectors
                     USING ivfflat ((embedding::halfvec({dim})) halfvec_ip_ops)
                     WITH (lists = {lists})
                     WHERE model = {lit} AND vector_dims(embedding) = {dim}"
            ))?;
            self.batch_execute(&format!(
                "BEGIN; DROP INDEX IF EXISTS {name}; ALTER INDEX {new} RENAME TO {name}; COMMIT;"
            ))
        })();
        let _ = self.batch_execute("RESET maintenance_work_mem");
        if let Err(e) = built {
            let _ = self.batch_execute("ROLLBACK");
            // Another machine built it at the same moment, or is building it (`…_new` exists
            // already: SQLSTATE 42P07): not an error.
            if matches!(self.has_vector_index(model), Ok(true))
                || e.to_string().contains("SQLSTATE 42P07")
            {
                return Ok(None);
            }
            return Err(e);
        }
        Ok(Some(count as u64))
    }

    /// The machines that pushed to this database, by id.
    pub fn machines(&self) -> Result<Vec<MachineInfo>> {
        let rows = self.block_on(self.client().query(
            "SELECT id, label, first_push_at, last_push_at FROM machines ORDER BY id",
            &[],
        ))?;
        Ok(rows
            .iter()
            .map(|r| MachineInfo {
                id: r.get(0),
                label: r.get(1),
                first_push_at: r.get(2),
                last_push_at: r.get(3),
            })
            .collect())
    }

    /// Writes `batch`, pushed by machine `machine` (labelled `label`), in one transaction:
    /// the machine's row upserted (its label and `last_push_at` = now), then the deletions
    /// (the session and everything under it removed, a `deletions` row recorded once), then
    /// the session rows (except those another machine deleted: [`Pushed::deleted_elsewhere`]),
    /// the messages (upserts on their keys), each pushed message's tool calls
    /// and events replaced, the snapshots of the sessions that carry `Some` replaced, and the
    /// message sets that are `Some` reconciled (messages not in the set removed, the session's
    /// `messages_rev` bumped). Applying the same batch twice leaves what applying it once left
    /// (the second time only takes new revisions).
    ///
    /// Errors: [`Error::Invalid`] when a session of the batch is not `machine`'s (only a
    /// session's own machine pushes it); [`Error::Db`] when a statement fails or the connection
    /// breaks (nothing of the batch is committed).
    pub fn push(&mut self, machine: &str, label: &str, batch: &PushBatch) -> Result<Pushed> {
        // No NUL, no value too long to index ([`PushBatch::fit_for_postgres`]); a copy of the
        // batch, made for that (this entry point keeps the caller's).
        let mut owned = batch.clone();
        let batch = if owned.fit_for_postgres(machine) > 0 {
            &owned
        } else {
            batch
        };
        let lexemes = batch_lexemes(batch);
        self.push_with_lexemes(machine, label, batch, &lexemes, memtrail_runtime::now_ms())
    }

    /// [`Pg::push`] with the full-text vectors of the batch's messages already computed
    /// ([`batch_lexemes`]: one list per session of `batch.sessions`, one vector per message),
    /// so that a caller can compute the next batch's while this one is written, and with the
    /// `last_push_at` to record (`at`, Unix milliseconds: one value for every batch of a
    /// sync, so that a store can tell its own pushes from another's: [`DatabaseMarks`]).
    ///
    /// Errors: as [`Pg::push`]; [`Error::Invalid`] when `lexemes` does not match the batch's
    /// sessions and messages.
    pub fn push_with_lexemes(
        &mut self,
        machine: &str,
        label: &str,
        batch: &PushBatch,
        lexemes: &[Vec<TsVector>],
        at: i64,
    ) -> Result<Pushed> {
        if lexemes.len() != batch.sessions.len()
            || lexemes
                .iter()
                .zip(&batch.sessions)
                .any(|(l, s)| l.len() != s.messages.len())
        {
            return Err(Error::Invalid(
                "the full-text vectors do not match the push batch's messages".into(),
            ));
        }
        if let Some(s) = batch.sessions.iter().find(|s| s.machine != machine) {
            return Err(Error::Invalid(format!(
                "the push batch holds a session of machine {} (agent {}, session {}), not of \
                 the pushing machine {machine}",
                s.machine, s.session.agent, s.session.external_id
            )));
        }
        let (rt, client) = self.parts_mut();
        rt.block_on(async {
            let tx = client.transaction().await?;
            let pushed = push_tx(&tx, machine, label, at, batch, lexemes).await?;
            tx.commit().await?;
            Ok(pushed)
        })
    }

    /// The next batch of machine `machine`'s pushes above revision `from_rev`, for machine
    /// `me` (which never pulls itself: `machine == me` gives an empty batch with `to_rev =
    /// from_rev`), read in one REPEATABLE READ transaction (one snapshot):
    ///
    /// - messages of `machine`'s sessions with `rev > from_rev`, the oldest first, at most
    ///   `max_messages` (at least 1); when that many were found, `to_rev` is the last one's
    ///   revision, else the highest revision of any of `machine`'s rows (sessions, message
    ///   sets, messages, deletions), or `from_rev` when there is none above it;
    /// - the session rows with `rev` in `(from_rev, to_rev]`, plus the session row of every
    ///   message taken; `snapshots` is `Some` (all of them) for the former;
    /// - `message_set` is `Some` (the `ext_id` of every message PostgreSQL holds for it, in
    ///   `seq` order) for sessions whose `messages_rev` is in `(from_rev, to_rev]`;
    /// - the deletions `machine` pushed with `rev` in `(from_rev, to_rev]`, oldest first;
    /// - each message's tool calls (by `call_id`) and events (by ordinal).
    ///
    /// Revisions of one machine's rows grow with its pushes (they are serial), so a pull that
    /// stops at `to_rev` misses nothing at or below it. Errors: [`Error::Db`].
    pub fn pull_batch(
        &mut self,
        me: &str,
        machine: &str,
        from_rev: i64,
        max_messages: usize,
    ) -> Result<PullBatch> {
        self.pull_batch_within(me, machine, from_rev, max_messages, usize::MAX)
    }

    /// [`Pg::pull_batch`], its messages also bounded by bytes: it takes the oldest messages
    /// while their text (`body`, `tools`, `cjk` and `parts`, in bytes, as PostgreSQL stores
    /// them) adds up to at most `max_bytes`, and always the first one (a batch is never empty
    /// while messages remain: one larger message is a batch of its own). When it stops at the
    /// byte bound, `to_rev` is the last message's revision, as at the message bound. The same
    /// 16 MiB the push is bounded by ([`crate::SyncOptions`]'s `batch_bytes`) keeps one pull
    /// step's memory and transaction small. Errors: [`Error::Db`].
    pub fn pull_batch_within(
        &mut self,
        me: &str,
        machine: &str,
        from_rev: i64,
        max_messages: usize,
        max_bytes: usize,
    ) -> Result<PullBatch> {
        let mut batch = PullBatch {
            machine: machine.to_string(),
            from_rev,
            to_rev: from_rev,
            ..PullBatch::default()
        };
        if machine == me {
            return Ok(batch);
        }
        let limit = max_messages.max(1) as i64;
        let max_bytes = i64::try_from(max_bytes).unwrap_or(i64::MAX);
        let (rt, client) = self.parts_mut();
        rt.block_on(async {
            let tx = client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await?;
            pull_tx(&tx, &mut batch, limit, max_bytes).await?;
            tx.commit().await?;
            Ok(batch)
        })
    }
}

/// The transaction-level advisory lock every writing push holds to its commit: the one the
/// activity summaries' triggers take (migration 6, "mtsummar" in ASCII as a big-endian
/// integer).
pub const PUSH_LOCK: i64 = 7887055795616833906;

async fn push_tx(
    tx: &Transaction<'_>,
    machine: &str,
    label: &str,
    now: i64,
    batch: &PushBatch,
    lexemes: &[Vec<TsVector>],
) -> Result<Pushed> {
    let mut pushed = Pushed {
        at: now,
        ..Pushed::default()
    };
    if !batch.deletions.is_empty() || !batch.sessions.is_empty() {
        // Pushes that write take turns from here to their commit. Their triggers take this lock
        // anyway at their first message (migration 6), but the check for sessions another
        // machine deleted below must come after it too: otherwise a deletion committing while
        // this push runs is not seen, and its upsert, having waited on the deleted row, inserts
        // the session again (or the deletion's statements, begun before this push committed,
        // miss the messages it inserted).
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&PUSH_LOCK])
            .await?;
    }
    tx.execute(
        "INSERT INTO machines (id, label, first_push_at, last_push_at) VALUES ($1, $2, $3, $3) \
         ON CONFLICT (id) DO UPDATE SET label = EXCLUDED.label, \
         last_push_at = EXCLUDED.last_push_at",
        &[&machine, &label, &now],
    )
    .await?;
    let vectors_sent: u64 = batch
        .sessions
        .iter()
        .flat_map(|s| &s.vectors)
        .map(|v| v.chunks.len() as u64)
        .sum();
    let vector_table = if batch.deletions.is_empty() && batch.sessions.is_empty() {
        false
    } else {
        has_vector_table(tx).await?
    };
    for d in &batch.deletions {
        push_deletion(tx, machine, d, vector_table).await?;
        pushed.deletions += 1;
    }
    if batch.sessions.is_empty() {
        pushed.rev = sequence_value(tx).await?;
        return Ok(pushed);
    }
    // A session another machine deleted stays deleted: this machine's changes to it (made
    // before it pulled the deletion, which then deletes it here too) are dropped.
    let agents: Vec<&str> = batch
        .sessions
        .iter()
        .map(|s| s.session.agent.as_str())
        .collect();
    let exts: Vec<&str> = batch
        .sessions
        .iter()
        .map(|s| s.session.external_id.as_str())
        .collect();
    let gone: std::collections::HashSet<(String, String)> = tx
        .query(
            "SELECT DISTINCT agent, external_id FROM deletions d \
             JOIN unnest($2::text[], $3::text[]) AS k(a, e) \
               ON d.agent = k.a AND d.external_id = k.e \
             WHERE d.machine_id = $1 AND d.deleted_by <> $1",
            &[&machine, &agents, &exts],
        )
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let (sessions, lexemes): (Vec<&SessionChanges>, Vec<&Vec<TsVector>>) = batch
        .sessions
        .iter()
        .zip(lexemes)
        .filter(|(s, _)| {
            gone.is_empty()
                || !gone.contains(&(s.session.agent.clone(), s.session.external_id.clone()))
        })
        .unzip();
    pushed.deleted_elsewhere = (batch.sessions.len() - sessions.len()) as u64;
    pushed.deleted_elsewhere_sessions = batch
        .sessions
        .iter()
        .map(|s| (s.session.agent.clone(), s.session.external_id.clone()))
        .filter(|k| gone.contains(k))
        .collect();
    let uids: Vec<String> = sessions
        .iter()
        .map(|s| session_uid(&s.machine, &s.session.agent, &s.session.external_id))
        .collect();
    upsert_sessions(tx, machine, &uids, &sessions).await?;
    pushed.sessions = sessions.len() as u64;
    let (messages, bytes) = upsert_messages(tx, machine, &uids, &sessions, &lexemes).await?;
    pushed.messages = messages;
    pushed.bytes = bytes;
    replace_snapshots(tx, &uids, &sessions).await?;
    if vector_table {
        pushed.vectors = replace_vectors(tx, &uids, &sessions).await?;
    } else {
        pushed.vectors_skipped = vectors_sent;
    }
    for (uid, s) in uids.iter().zip(sessions) {
        if let Some(set) = &s.message_set {
            // No foreign keys (migration 4): the removed messages' tool calls, events and
            // vectors go first, by the same rule.
            let vectors: &[&str] = if vector_table {
                &["message_vectors"]
            } else {
                &[]
            };
            for table in vectors {
                tx.execute(
                    &format!(
                        "DELETE FROM {table} WHERE session_uid = $1 AND ext_id <> ALL($2::text[])"
                    ),
                    &[uid, set],
                )
                .await?;
            }
            for table in ["tool_calls", "events"] {
                tx.execute(
                    &format!(
                        "DELETE FROM {table} WHERE session_uid = $1 \
                         AND message_ext_id <> ALL($2::text[])"
                    ),
                    &[uid, set],
                )
                .await?;
            }
            pushed.messages_removed += tx
                .execute(
                    "DELETE FROM messages WHERE session_uid = $1 AND ext_id <> ALL($2::text[])",
                    &[uid, set],
                )
                .await?;
            tx.execute(
                "UPDATE sessions SET messages_rev = nextval('memtrail_rev') WHERE uid = $1",
                &[uid],
            )
            .await?;
        }
    }
    pushed.rev = sequence_value(tx).await?;
    Ok(pushed)
}

/// `memtrail_rev`'s last value (0 when it never gave one out): `pg_sequence_last_value`, which
/// needs only `USAGE` on the sequence.
async fn sequence_value(tx: &Transaction<'_>) -> Result<i64> {
    Ok(tx
        .query_one(
            "SELECT coalesce(pg_sequence_last_value('memtrail_rev'::regclass), 0)",
            &[],
        )
        .await?
        .get(0))
}

/// One deletion: the session's rows removed (its tool calls, events, snapshots and messages, then itself), the `deletions` row recorded unless
/// the same deletion was recorded by an earlier push of this batch.
async fn push_deletion(
    tx: &Transaction<'_>,
    machine: &str,
    d: &Deletion,
    vector_table: bool,
) -> Result<()> {
    let uid = session_uid(&d.machine, &d.agent, &d.external_id);
    // Everything under the session, then the session (no foreign keys: migration 4).
    let vectors = vector_table.then_some("message_vectors");
    for table in vectors
        .into_iter()
        .chain(["tool_calls", "events", "snapshots", "messages"])
    {
        tx.execute(
            &format!("DELETE FROM {table} WHERE session_uid = $1"),
            &[&uid],
        )
        .await?;
    }
    tx.execute("DELETE FROM sessions WHERE uid = $1", &[&uid])
        .await?;
    tx.execute(
        "INSERT INTO deletions (rev, deleted_by, machine_id, agent, external_id, deleted_at) \
         SELECT nextval('memtrail_rev'), $1, $2, $3, $4, $5 WHERE NOT EXISTS ( \
           SELECT 1 FROM deletions WHERE deleted_by = $1 AND machine_id = $2 AND agent = $3 \
           AND external_id = $4 AND deleted_at = $5)",
        &[
            &machine,
            &d.machine,
            &d.agent,
            &d.external_id,
            &d.deleted_at,
        ],
    )
    .await?;
    Ok(())
}

async fn upsert_sessions(
    tx: &Transaction<'_>,
    machine: &str,
    uids: &[String],
    sessions: &[&SessionChanges],
) -> Result<()> {
    let col = |f: fn(&SyncSession) -> Option<&str>| -> Vec<Option<&str>> {
        sessions.iter().map(|s| f(&s.session)).collect()
    };
    let agent: Vec<&str> = sessions.iter().map(|s| s.session.agent.as_str()).collect();
    let ext: Vec<&str> = sessions
        .iter()
        .map(|s| s.session.external_id.as_str())
        .collect();
    let parent = col(|s| s.parent_external_id.as_deref());
    let project = col(|s| s.project_dir.as_deref());
    let title = col(|s| s.title.as_deref());
    let model = col(|s| s.model.as_deref());
    let branch = col(|s| s.git_branch.as_deref());
    let version = col(|s| s.agent_version.as_deref());
    let started: Vec<Option<i64>> = sessions.iter().map(|s| s.session.started_at).collect();
    let updated: Vec<Option<i64>> = sessions.iter().map(|s| s.session.updated_at).collect();
    let count: Vec<i64> = sessions.iter().map(|s| s.session.message_count).collect();
    tx.execute(
        "INSERT INTO sessions (uid, machine_id, agent, external_id, parent_external_id, \
           project_dir, title, model, git_branch, agent_version, started_at, updated_at, \
           message_count, rev) \
         SELECT u, $2, a, e, p, d, t, m, b, v, s, up, c, nextval('memtrail_rev') \
         FROM unnest($1::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], \
           $8::text[], $9::text[], $10::text[], $11::int8[], $12::int8[], $13::int8[]) \
           WITH ORDINALITY AS x(u, a, e, p, d, t, m, b, v, s, up, c, o) ORDER BY o \
         ON CONFLICT (uid) DO UPDATE SET parent_external_id = EXCLUDED.parent_external_id, \
           project_dir = EXCLUDED.project_dir, title = EXCLUDED.title, model = EXCLUDED.model, \
           git_branch = EXCLUDED.git_branch, agent_version = EXCLUDED.agent_version, \
           started_at = EXCLUDED.started_at, updated_at = EXCLUDED.updated_at, \
           message_count = EXCLUDED.message_count, rev = EXCLUDED.rev",
        &[
            &uids, &machine, &agent, &ext, &parent, &project, &title, &model, &branch, &version,
            &started, &updated, &count,
        ],
    )
    .await?;
    Ok(())
}

/// Upserts every message of `sessions`, then replaces their tool calls and events. Returns
/// (messages written, their text bytes).
async fn upsert_messages(
    tx: &Transaction<'_>,
    machine: &str,
    uids: &[String],
    sessions: &[&SessionChanges],
    lexemes: &[&Vec<TsVector>],
) -> Result<(u64, u64)> {
    let mut m_uid: Vec<&str> = Vec::new();
    let mut m: Vec<&SyncMessage> = Vec::new();
    let mut tsv: Vec<&TsVector> = Vec::new();
    for ((uid, s), l) in uids.iter().zip(sessions).zip(lexemes) {
        for (msg, v) in s.messages.iter().zip(l.iter()) {
            m_uid.push(uid);
            m.push(msg);
            tsv.push(v);
        }
    }
    if m.is_empty() {
        return Ok((0, 0));
    }
    let bytes = m.iter().map(|x| message_bytes(x)).sum();
    let ext: Vec<&str> = m.iter().map(|x| x.ext_id.as_str()).collect();
    let seq: Vec<i64> = m.iter().map(|x| x.seq).collect();
    let role: Vec<&str> = m.iter().map(|x| x.role.as_str()).collect();
    let kind: Vec<&str> = m.iter().map(|x| x.kind.as_str()).collect();
    let ts: Vec<Option<i64>> = m.iter().map(|x| x.ts).collect();
    let model: Vec<Option<&str>> = m.iter().map(|x| x.model.as_deref()).collect();
    let body: Vec<&str> = m.iter().map(|x| x.body.as_str()).collect();
    let tools: Vec<&str> = m.iter().map(|x| x.tools.as_str()).collect();
    let cjk: Vec<Option<&str>> = m.iter().map(|x| x.cjk.as_deref()).collect();
    let parts: Vec<&str> = m.iter().map(|x| x.parts.as_str()).collect();
    // The messages that were already there (updated, not inserted: `xmax` is set on a row an
    // ON CONFLICT updated) have their tool calls and events replaced whole; new ones have none
    // to delete (skipping the delete keeps a first push linear in its size).
    let updated = tx
        .query(
            "WITH up AS (INSERT INTO messages (session_uid, machine_id, ext_id, seq, role, kind, \
               ts, model, body, tools, cjk, parts, tsv, rev) \
             SELECT u, $2, e, s, r, k, t, m, b, tl, c, p, v, nextval('memtrail_rev') \
             FROM unnest($1::text[], $3::text[], $4::int8[], $5::text[], $6::text[], $7::int8[], \
               $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::tsvector[]) \
               WITH ORDINALITY AS x(u, e, s, r, k, t, m, b, tl, c, p, v, o) ORDER BY o \
             ON CONFLICT (session_uid, ext_id) DO UPDATE SET seq = EXCLUDED.seq, \
               role = EXCLUDED.role, kind = EXCLUDED.kind, ts = EXCLUDED.ts, \
               model = EXCLUDED.model, body = EXCLUDED.body, tools = EXCLUDED.tools, \
               cjk = EXCLUDED.cjk, parts = EXCLUDED.parts, tsv = EXCLUDED.tsv, rev = EXCLUDED.rev \
             RETURNING session_uid, ext_id, xmax <> 0 AS updated) \
             SELECT session_uid, ext_id FROM up WHERE updated",
            &[
                &m_uid, &machine, &ext, &seq, &role, &kind, &ts, &model, &body, &tools, &cjk,
                &parts, &tsv,
            ],
        )
        .await?;
    if !updated.is_empty() {
        let u_uid: Vec<String> = updated.iter().map(|r| r.get(0)).collect();
        let u_ext: Vec<String> = updated.iter().map(|r| r.get(1)).collect();
        for table in ["tool_calls", "events"] {
            tx.execute(
                &format!(
                    "DELETE FROM {table} t WHERE (t.session_uid, t.message_ext_id) IN \
                     (SELECT * FROM unnest($1::text[], $2::text[]))"
                ),
                &[&u_uid, &u_ext],
            )
            .await?;
        }
    }
    let (mut c_uid, mut c_ext, mut calls): (Vec<&str>, Vec<&str>, Vec<&SyncToolCall>) =
        Default::default();
    let (mut e_uid, mut e_ext, mut e_ord, mut events): (
        Vec<&str>,
        Vec<&str>,
        Vec<i32>,
        Vec<&SyncEvent>,
    ) = Default::default();
    for (uid, msg) in m_uid.iter().zip(&m) {
        for c in &msg.tool_calls {
            c_uid.push(uid);
            c_ext.push(&msg.ext_id);
            calls.push(c);
        }
        for (i, e) in msg.events.iter().enumerate() {
            e_uid.push(uid);
            e_ext.push(&msg.ext_id);
            e_ord.push(i as i32);
            events.push(e);
        }
    }
    if !calls.is_empty() {
        let id: Vec<&str> = calls.iter().map(|c| c.call_id.as_str()).collect();
        let name: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
        let tool: Vec<&str> = calls.iter().map(|c| c.tool.as_str()).collect();
        let err: Vec<bool> = calls.iter().map(|c| c.is_error).collect();
        let out: Vec<bool> = calls.iter().map(|c| c.has_output).collect();
        tx.execute(
            "INSERT INTO tool_calls (session_uid, call_id, message_ext_id, name, tool, \
               is_error, has_output) \
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], \
               $6::bool[], $7::bool[]) \
             ON CONFLICT (session_uid, call_id) DO UPDATE SET \
               message_ext_id = EXCLUDED.message_ext_id, name = EXCLUDED.name, \
               tool = EXCLUDED.tool, is_error = EXCLUDED.is_error, \
               has_output = EXCLUDED.has_output",
            &[&c_uid, &id, &c_ext, &name, &tool, &err, &out],
        )
        .await?;
    }
    if !events.is_empty() {
        let seq: Vec<i64> = events.iter().map(|e| e.seq).collect();
        let cat: Vec<&str> = events.iter().map(|e| e.category.as_str()).collect();
        let act: Vec<&str> = events.iter().map(|e| e.action.as_str()).collect();
        let pri: Vec<i64> = events.iter().map(|e| e.priority).collect();
        let subj: Vec<&str> = events.iter().map(|e| e.subject.as_str()).collect();
        let det: Vec<Option<&str>> = events.iter().map(|e| e.detail.as_deref()).collect();
        let call: Vec<Option<&str>> = events.iter().map(|e| e.call_id.as_deref()).collect();
        let tool: Vec<Option<&str>> = events.iter().map(|e| e.tool.as_deref()).collect();
        let ts: Vec<Option<i64>> = events.iter().map(|e| e.ts).collect();
        tx.execute(
            "INSERT INTO events (session_uid, message_ext_id, ordinal, seq, category, action, \
               priority, subject, detail, call_id, tool, ts) \
             SELECT * FROM unnest($1::text[], $2::text[], $3::int4[], $4::int8[], $5::text[], \
               $6::text[], $7::int8[], $8::text[], $9::text[], $10::text[], $11::text[], \
               $12::int8[])",
            &[
                &e_uid, &e_ext, &e_ord, &seq, &cat, &act, &pri, &subj, &det, &call, &tool, &ts,
            ],
        )
        .await?;
    }
    Ok((m.len() as u64, bytes))
}

/// Replaces the snapshots of the sessions whose `snapshots` is `Some`.
async fn replace_snapshots(
    tx: &Transaction<'_>,
    uids: &[String],
    sessions: &[&SessionChanges],
) -> Result<()> {
    let mut replaced: Vec<&str> = Vec::new();
    let mut s_uid: Vec<&str> = Vec::new();
    let mut ord: Vec<i32> = Vec::new();
    let mut snaps: Vec<&SyncSnapshot> = Vec::new();
    for (uid, s) in uids.iter().zip(sessions) {
        if let Some(list) = &s.snapshots {
            replaced.push(uid);
            for (i, snap) in list.iter().enumerate() {
                s_uid.push(uid);
                ord.push(i as i32);
                snaps.push(snap);
            }
        }
    }
    if replaced.is_empty() {
        return Ok(());
    }
    tx.execute(
        "DELETE FROM snapshots WHERE session_uid = ANY($1::text[])",
        &[&replaced],
    )
    .await?;
    if snaps.is_empty() {
        return Ok(());
    }
    let built: Vec<i64> = snaps.iter().map(|s| s.built_at).collect();
    let trigger: Vec<&str> = snaps.iter().map(|s| s.trigger.as_str()).collect();
    let budget: Vec<i64> = snaps.iter().map(|s| s.budget).collect();
    let events: Vec<i64> = snaps.iter().map(|s| s.events).collect();
    let text: Vec<&str> = snaps.iter().map(|s| s.text.as_str()).collect();
    let consumed_at: Vec<Option<i64>> = snaps.iter().map(|s| s.consumed_at).collect();
    let consumed_by: Vec<Option<&str>> = snaps.iter().map(|s| s.consumed_by.as_deref()).collect();
    tx.execute(
        "INSERT INTO snapshots (session_uid, ordinal, built_at, trigger, budget, events, text, \
           consumed_at, consumed_by) \
         SELECT * FROM unnest($1::text[], $2::int4[], $3::int8[], $4::text[], $5::int8[], \
           $6::int8[], $7::text[], $8::int8[], $9::text[])",
        &[
            &s_uid,
            &ord,
            &built,
            &trigger,
            &budget,
            &events,
            &text,
            &consumed_at,
            &consumed_by,
        ],
    )
    .await?;
    Ok(())
}

async fn pull_tx(
    tx: &Transaction<'_>,
    batch: &mut PullBatch,
    limit: i64,
    max_bytes: i64,
) -> Result<()> {
    let machine = batch.machine.clone();
    let from = batch.from_rev;
    batch.label = tx
        .query_opt("SELECT label FROM machines WHERE id = $1", &[&machine])
        .await?
        .map(|r| r.get(0))
        .unwrap_or_default();
    // The oldest `limit` messages, then those whose running size stays within `max_bytes`
    // (the first always); column 12: how many the message bound took.
    let rows = tx
        .query(
            "SELECT session_uid, ext_id, seq, role, kind, ts, model, body, tools, cjk, parts, \
               rev, taken FROM ( \
               SELECT *, sum(size) OVER (ORDER BY rev) AS run, count(*) OVER () AS taken \
               FROM (SELECT *, octet_length(body) + octet_length(tools) \
                       + octet_length(parts) + coalesce(octet_length(cjk), 0) AS size \
                     FROM messages WHERE machine_id = $1 AND rev > $2 ORDER BY rev LIMIT $3) a \
             ) b WHERE run <= $4 OR run = size ORDER BY rev",
            &[&machine, &from, &limit, &max_bytes],
        )
        .await?;
    let bounded = rows
        .first()
        .is_some_and(|r| r.get::<_, i64>(12) == limit || r.get::<_, i64>(12) > rows.len() as i64);
    let to: i64 = if bounded {
        rows.last().map_or(from, |r| r.get(11))
    } else {
        tx.query_one(
            "SELECT greatest($2::int8, \
               (SELECT max(rev) FROM sessions WHERE machine_id = $1), \
               (SELECT max(messages_rev) FROM sessions WHERE machine_id = $1), \
               (SELECT max(rev) FROM messages WHERE machine_id = $1), \
               (SELECT max(rev) FROM deletions WHERE deleted_by = $1))",
            &[&machine, &from],
        )
        .await?
        .get(0)
    };
    batch.to_rev = to;
    if to == from {
        return Ok(());
    }
    // Messages by session, with their tool calls and events.
    let mut by_session: HashMap<String, Vec<SyncMessage>> = HashMap::new();
    let mut keys_uid: Vec<String> = Vec::new();
    let mut keys_ext: Vec<String> = Vec::new();
    for r in &rows {
        let uid: String = r.get(0);
        let msg = SyncMessage {
            ext_id: r.get(1),
            seq: r.get(2),
            role: r.get(3),
            kind: r.get(4),
            ts: r.get(5),
            model: r.get(6),
            body: r.get(7),
            tools: r.get(8),
            cjk: r.get(9),
            parts: r.get(10),
            tool_calls: Vec::new(),
            events: Vec::new(),
        };
        keys_uid.push(uid.clone());
        keys_ext.push(msg.ext_id.clone());
        by_session.entry(uid).or_default().push(msg);
    }
    if !rows.is_empty() {
        let mut calls: HashMap<(String, String), Vec<SyncToolCall>> = HashMap::new();
        for r in tx
            .query(
                "SELECT t.session_uid, t.message_ext_id, t.call_id, t.name, t.tool, t.is_error, \
                   t.has_output FROM tool_calls t \
                 JOIN unnest($1::text[], $2::text[]) AS k(u, e) \
                   ON t.session_uid = k.u AND t.message_ext_id = k.e \
                 ORDER BY t.session_uid, t.message_ext_id, t.call_id",
                &[&keys_uid, &keys_ext],
            )
            .await?
        {
            calls
                .entry((r.get(0), r.get(1)))
                .or_default()
                .push(SyncToolCall {
                    call_id: r.get(2),
                    name: r.get(3),
                    tool: r.get(4),
                    is_error: r.get(5),
                    has_output: r.get(6),
                });
        }
        let mut events: HashMap<(String, String), Vec<SyncEvent>> = HashMap::new();
        for r in tx
            .query(
                "SELECT t.session_uid, t.message_ext_id, t.seq, t.category, t.action, \
                   t.priority, t.subject, t.detail, t.call_id, t.tool, t.ts FROM events t \
                 JOIN unnest($1::text[], $2::text[]) AS k(u, e) \
                   ON t.session_uid = k.u AND t.message_ext_id = k.e \
                 ORDER BY t.session_uid, t.message_ext_id, t.ordinal",
                &[&keys_uid, &keys_ext],
            )
            .await?
        {
            events
                .entry((r.get(0), r.get(1)))
                .or_default()
                .push(SyncEvent {
                    seq: r.get(2),
                    category: r.get(3),
                    action: r.get(4),
                    priority: r.get(5),
                    subject: r.get(6),
                    detail: r.get(7),
                    call_id: r.get(8),
                    tool: r.get(9),
                    ts: r.get(10),
                });
        }
        for (uid, msgs) in by_session.iter_mut() {
            for m in msgs.iter_mut() {
                let key = (uid.clone(), m.ext_id.clone());
                m.tool_calls = calls.remove(&key).unwrap_or_default();
                m.events = events.remove(&key).unwrap_or_default();
            }
            msgs.sort_by(|a, b| (a.seq, &a.ext_id).cmp(&(b.seq, &b.ext_id)));
        }
    }
    // The session rows: changed in range, message set changed in range, or holding a message.
    let with_messages: Vec<&String> = by_session.keys().collect();
    let sessions = tx
        .query(
            "SELECT uid, agent, external_id, parent_external_id, project_dir, title, model, \
               git_branch, agent_version, started_at, updated_at, message_count, \
               rev > $2 AND rev <= $3, messages_rev > $2 AND messages_rev <= $3 \
             FROM sessions WHERE machine_id = $1 AND ((rev > $2 AND rev <= $3) \
               OR (messages_rev > $2 AND messages_rev <= $3) OR uid = ANY($4::text[])) \
             ORDER BY rev",
            &[&machine, &from, &to, &with_messages],
        )
        .await?;
    let mut snapshot_uids: Vec<String> = Vec::new();
    let mut set_uids: Vec<String> = Vec::new();
    for r in &sessions {
        if r.get::<_, bool>(12) {
            snapshot_uids.push(r.get(0));
        }
        if r.get::<_, bool>(13) {
            set_uids.push(r.get(0));
        }
    }
    let mut snapshots: BTreeMap<String, Vec<SyncSnapshot>> = snapshot_uids
        .iter()
        .map(|u| (u.clone(), Vec::new()))
        .collect();
    if !snapshot_uids.is_empty() {
        for r in tx
            .query(
                "SELECT session_uid, built_at, trigger, budget, events, text, consumed_at, \
                   consumed_by FROM snapshots WHERE session_uid = ANY($1::text[]) \
                 ORDER BY session_uid, ordinal",
                &[&snapshot_uids],
            )
            .await?
        {
            snapshots.entry(r.get(0)).or_default().push(SyncSnapshot {
                built_at: r.get(1),
                trigger: r.get(2),
                budget: r.get(3),
                events: r.get(4),
                text: r.get(5),
                consumed_at: r.get(6),
                consumed_by: r.get(7),
            });
        }
    }
    let mut sets: HashMap<String, Vec<String>> =
        set_uids.iter().map(|u| (u.clone(), Vec::new())).collect();
    if !set_uids.is_empty() {
        for r in tx
            .query(
                "SELECT session_uid, ext_id FROM messages WHERE session_uid = ANY($1::text[]) \
                 ORDER BY session_uid, seq, ext_id",
                &[&set_uids],
            )
            .await?
        {
            sets.entry(r.get(0)).or_default().push(r.get(1));
        }
    }
    let mut seen = HashSet::new();
    for r in &sessions {
        let uid: String = r.get(0);
        if !seen.insert(uid.clone()) {
            continue;
        }
        batch.sessions.push(SessionChanges {
            machine: machine.clone(),
            session: SyncSession {
                agent: r.get(1),
                external_id: r.get(2),
                parent_external_id: r.get(3),
                project_dir: r.get(4),
                title: r.get(5),
                model: r.get(6),
                git_branch: r.get(7),
                agent_version: r.get(8),
                started_at: r.get(9),
                updated_at: r.get(10),
                message_count: r.get(11),
            },
            messages: by_session.remove(&uid).unwrap_or_default(),
            snapshots: snapshots.remove(&uid),
            message_set: sets.remove(&uid),
            vectors: Vec::new(),
        });
    }
    batch.deletions = tx
        .query(
            "SELECT machine_id, agent, external_id, deleted_at FROM deletions \
             WHERE deleted_by = $1 AND rev > $2 AND rev <= $3 ORDER BY rev",
            &[&machine, &from, &to],
        )
        .await?
        .iter()
        .map(|r| Deletion {
            machine: r.get(0),
            agent: r.get(1),
            external_id: r.get(2),
            deleted_at: r.get(3),
        })
        .collect();
    Ok(())
}
