//! One `memtrail sync`: push this machine's queued changes, then pull every other machine's
//! pushes, each in batches until nothing is left (docs/sync.md).
//!
//! A push batch is acknowledged in the local store only after PostgreSQL committed it, and a
//! pull batch is applied locally in one transaction together with the new pull position, so a
//! sync killed at any point (or cut off from the database) loses nothing and doubles nothing:
//! the next one resends what was not acknowledged (PostgreSQL applies it idempotently) and
//! pulls from the last position applied.
//!
//! One sync at a time per store: [`SyncLock`] (an `flock` on a file beside the store).

use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Instant;

use memtrail_runtime::Store;
use memtrail_runtime::privacy::Privacy;
use memtrail_runtime::records::Standard;
use memtrail_runtime::store::Exclusions;
use memtrail_runtime::sync::{PushBatch, PushCursor};
use serde::Serialize;

use crate::sync::batch_lexemes;
use crate::tsv::TsVector;
use crate::{Error, Pg, Result};

/// Batch sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncOptions {
    /// Most messages per push or pull batch (each batch is one transaction on each side).
    pub batch_messages: usize,
    /// Most bytes of text per push or pull batch (approximate: the first entry is always
    /// taken).
    pub batch_bytes: usize,
}

impl Default for SyncOptions {
    /// 1000 messages, 16 MiB.
    fn default() -> Self {
        SyncOptions {
            batch_messages: 1000,
            batch_bytes: 16 << 20,
        }
    }
}

/// The variable that sets [`SyncOptions::batch_messages`] (a whole number ≥ 1): small batches
/// make many transactions (the tests use it to kill a sync between batches).
pub const BATCH_VAR: &str = "MEMTRAIL_SYNC_BATCH";

impl SyncOptions {
    /// The defaults, with `MEMTRAIL_SYNC_BATCH` when set.
    ///
    /// Errors: [`Error::Invalid`] when the variable is not a whole number ≥ 1.
    pub fn from_env() -> Result<SyncOptions> {
        let mut o = SyncOptions::default();
        if let Some(v) = std::env::var(BATCH_VAR).ok().filter(|v| !v.is_empty()) {
            o.batch_messages = v.parse().ok().filter(|&n| n >= 1).ok_or_else(|| {
                Error::Invalid(format!(
                    "{BATCH_VAR}={v} is not a whole number of messages ≥ 1"
                ))
            })?;
        }
        Ok(o)
    }
}

/// Where a sync is, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress<'a> {
    /// Pushing: `messages` sent so far of the `queued` waiting when the sync started (more may
    /// be queued meanwhile).
    Push { messages: u64, queued: u64 },
    /// Pulling machine `label`'s pushes: `messages` received so far from all machines.
    Pull { label: &'a str, messages: u64 },
    /// The database is not the one this store last synced with (another URL, or a database
    /// created again): all `sessions` of this machine are queued again, and the `deletions`
    /// made on it, and every machine's pushes are pulled from the start
    /// ([`Store::sync_database`]).
    NewDatabase { sessions: u64, deletions: u64 },
    /// The database shows a push as this machine (at `database_push_at`, Unix milliseconds)
    /// that this store did not make: another store pushes with the same machine id, most
    /// likely on a machine whose memtrail config was copied from this one. Neither pulls the
    /// other's sessions (a machine never pulls its own id), and the other machines see the two
    /// as one; the sync goes on.
    SharedMachineId { database_push_at: i64 },
    /// Another machine (id `machine`) pushes under this machine's label: the two are told
    /// apart only by id where sessions show their machine.
    SharedLabel { machine: &'a str },
    /// The database went back in time since this store last synced with it (restored from a
    /// backup): its sequence (`revision`) has not reached the revisions this store saw given
    /// out (`reached`: the highest its pushes reached or its pulls read). The sync gives the
    /// database a new identity ([`Pg::renew_database_id`]), so that every machine sends its
    /// sessions again and pulls from the start; [`Progress::NewDatabase`] follows.
    RestoredDatabase { reached: i64, revision: i64 },
    /// Building the IVFFlat index of this machine's model's vectors (when the database first
    /// holds enough of them, and again each time they have grown fourfold:
    /// [`Pg::ensure_vector_index`]); under a minute at 700,000 vectors.
    VectorIndex { model: &'a str },
}

/// What a push sent, summed over its batches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Pushed {
    /// Batches (PostgreSQL transactions).
    pub batches: u64,
    /// Sessions written (each once, however many batches it took).
    pub sessions: u64,
    /// Messages written.
    pub messages: u64,
    /// Sessions deleted.
    pub deletions: u64,
    /// Bytes of message text sent.
    pub bytes: u64,
    /// Sessions of this machine whose changes were not pushed because another machine deleted
    /// them (a deletion is for good: the next pull deletes them here too), each once.
    pub deleted_elsewhere: u64,
    /// Message vectors (chunks) written for search by meaning.
    pub vectors: u64,
    /// Message vectors not written because the database has no pgvector (lexical search only
    /// there).
    pub vectors_skipped: u64,
}

/// What a pull brought, summed over its batches and machines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Pulled {
    /// Batches (local transactions).
    pub batches: u64,
    /// Other machines that pushed to the database.
    pub machines: u64,
    /// Sessions written locally (each once, however many batches it took).
    pub sessions: u64,
    /// Messages written locally.
    pub messages: u64,
    /// Sessions deleted locally by pulled deletions.
    pub deleted_sessions: u64,
    /// Messages deleted locally because a pulled message set no longer holds them.
    pub deleted_messages: u64,
}

/// The sessions a [`SyncReport`] counted, by key, so that each counts once however many
/// batches it took, and in a sum of reports ([`SyncReport::followed_by`]) however many syncs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CountedSessions {
    /// Pushed: agent and external id as sent (this machine's sessions).
    pub pushed: HashSet<(String, String)>,
    /// Not pushed because another machine deleted them: agent and external id as sent.
    pub deleted_elsewhere: HashSet<(String, String)>,
    /// Pulled: origin machine, agent and external id.
    pub pulled: HashSet<(String, String, String)>,
}

/// What [`sync`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyncReport {
    /// This machine's id.
    pub machine: String,
    /// This machine's label.
    pub label: String,
    /// The database, its URL with the password masked.
    pub url: String,
    pub pushed: Pushed,
    pub pulled: Pulled,
    /// The vectors of the index this sync built, when it built one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_index: Option<u64>,
    /// Why building that index failed (the sync went on without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_index_error: Option<String>,
    /// Wall time, milliseconds.
    pub elapsed_ms: u64,
    /// The sessions behind `pushed.sessions`, `pushed.deleted_elsewhere` and
    /// `pulled.sessions`.
    #[serde(skip)]
    pub counted: CountedSessions,
}

impl SyncReport {
    /// `self` followed by `later` (a second pass of one `memtrail sync`): the counts added, each
    /// session counted once, `later`'s identity, the times added.
    pub fn followed_by(self, mut later: SyncReport) -> SyncReport {
        let (a, b) = (self, &mut later);
        let (p, q) = (&mut b.pushed, &mut b.pulled);
        p.batches += a.pushed.batches;
        p.messages += a.pushed.messages;
        p.deletions += a.pushed.deletions;
        p.bytes += a.pushed.bytes;
        p.vectors += a.pushed.vectors;
        p.vectors_skipped += a.pushed.vectors_skipped;
        q.batches += a.pulled.batches;
        q.machines = q.machines.max(a.pulled.machines);
        q.messages += a.pulled.messages;
        q.deleted_sessions += a.pulled.deleted_sessions;
        q.deleted_messages += a.pulled.deleted_messages;
        let c = &mut b.counted;
        c.pushed.extend(a.counted.pushed);
        c.deleted_elsewhere.extend(a.counted.deleted_elsewhere);
        c.pulled.extend(a.counted.pulled);
        p.sessions = c.pushed.len() as u64;
        p.deleted_elsewhere = c.deleted_elsewhere.len() as u64;
        q.sessions = c.pulled.len() as u64;
        b.vector_index = b.vector_index.or(a.vector_index);
        b.vector_index_error = b.vector_index_error.take().or(a.vector_index_error);
        b.elapsed_ms += a.elapsed_ms;
        later
    }
}

/// This machine as sync knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// 32 hex digits (`[sync] machine`).
    pub machine: String,
    /// `[sync] label`.
    pub label: String,
}

/// Pushes everything queued in `store`, then pulls every other machine's pushes, through `pg`.
/// `progress` is called after each batch. The store must have sync enabled
/// ([`Store::sync_enable`]) for anything to be queued; hold a [`SyncLock`] around it.
///
/// Errors: [`Error::Store`] (a local read or write failed; what was acknowledged or applied
/// stays), [`Error::Db`] (PostgreSQL failed or went away: the batch in flight is sent again or
/// pulled again next time).
pub fn sync(
    store: &mut Store,
    pg: &mut Pg,
    me: &Identity,
    privacy: &Privacy,
    options: &SyncOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<SyncReport> {
    let started = Instant::now();
    let mut report = SyncReport {
        machine: me.machine.clone(),
        label: me.label.clone(),
        url: pg.target().to_string(),
        pushed: Pushed::default(),
        pulled: Pulled::default(),
        vector_index: None,
        vector_index_error: None,
        elapsed_ms: 0,
        counted: CountedSessions::default(),
    };
    let mut database = pg.database_id()?;
    if store.synced_database()?.as_deref() == Some(database.as_str()) {
        let marks = pg.marks(&me.machine)?;
        let (pushed_at, tried_at, pushed_rev) = store.database_push_marks()?;
        let reached = store.max_pull_position()?.max(pushed_rev.unwrap_or(0));
        // Restored from a backup taken before revisions this store saw given out (by its
        // pushes or in its pulls): what was pushed since is lost there, and those revisions
        // will be given out again (a pull from the current position would skip them). The
        // sequence never goes back otherwise, whatever any clock says.
        if reached > marks.revision {
            progress(Progress::RestoredDatabase {
                reached,
                revision: marks.revision,
            });
            database = pg.renew_database_id(&database)?;
        } else if let Some(p) = marks.last_push_at
            && (pushed_at.is_some() || tried_at.is_some())
            && Some(p) != pushed_at
            && Some(p) != tried_at
        {
            // A push as this machine that this store did not make (its own leave the value it
            // tried or the one it committed): another store syncs with the same machine id (a
            // config copied between machines).
            progress(Progress::SharedMachineId {
                database_push_at: p,
            });
        }
    }
    // Read once for the label's check and the pull (a machine whose first push lands during
    // this sync is pulled at the next).
    let machines = pg.machines()?;
    if let Some(other) = machines
        .iter()
        .find(|m| m.id != me.machine && m.label == me.label)
    {
        progress(Progress::SharedLabel { machine: &other.id });
    }
    if let Some(queued) = store.sync_database(&database)? {
        progress(Progress::NewDatabase {
            sessions: queued.sessions,
            deletions: queued.deletions,
        });
    }
    // Vectors made before this database had their table (pgvector created since, or a
    // build that did not push them) are queued once.
    let vectors = pg.has_vector_table()?;
    if vectors {
        store.sync_queue_vectors(&database)?;
    }
    push(store, pg, me, privacy, options, &mut report, progress)?;
    if vectors
        && report.pushed.vectors > 0
        && let Some(model) = store.embed_model()?
        && !matches!(pg.has_vector_index(&model), Ok(true))
    {
        progress(Progress::VectorIndex { model: &model });
        // Best effort: without the index a search by meaning scores every vector.
        match pg.ensure_vector_index(&model) {
            Ok(n) => report.vector_index = n,
            Err(e) => report.vector_index_error = Some(e.to_string()),
        }
    }
    pull(store, pg, me, &machines, options, &mut report, progress)?;
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

/// The push loop, in two threads: this one reads the next batch from the store (after the
/// ones in flight: [`Store::push_batch_after`]) and computes its full-text vectors while a
/// second one writes the previous batch to PostgreSQL. Batches are written in order, one
/// transaction each; each is acknowledged here once PostgreSQL committed it. After a failed
/// batch nothing more is written (the batches after it are sent again next time, with it).
/// A bulk push (a first sync) also merges the full-text index's pending list on a connection
/// of its own ([`GinCleaner`]).
fn push(
    store: &mut Store,
    pg: &mut Pg,
    me: &Identity,
    privacy: &Privacy,
    options: &SyncOptions,
    report: &mut SyncReport,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    let (totals, counted) = (&mut report.pushed, &mut report.counted);
    let queued = store.sync_pending()?.messages;
    // One `last_push_at` for every batch of this push, recorded as tried before the first is
    // sent ([`Store::database_push_marks`]).
    let at = memtrail_runtime::now_ms();
    let mut tried = false;
    let bulk = queued >= BULK_PUSH_MESSAGES;
    // Best effort: without it the push works as before, only slower.
    let raised_work_mem = bulk
        && pg
            .batch_execute(&format!("SET work_mem = '{BULK_WORK_MEM}'"))
            .is_ok();
    let cleaner = bulk.then(|| GinCleaner::start(pg)).flatten();
    type Done = Result<(PushBatch, Option<crate::sync::Pushed>)>;
    let writer: &mut Pg = &mut *pg;
    let result = std::thread::scope(|scope| {
        // One batch waits while one is written: memory stays at about two batches.
        let (to_pg, batches) = mpsc::sync_channel::<(PushBatch, Vec<Vec<TsVector>>)>(1);
        let (done_tx, done) = mpsc::channel::<Done>();
        let cleaner = cleaner.as_ref();
        scope.spawn(move || {
            for (batch, lexemes) in batches {
                let r = if batch.deletions.is_empty() && batch.sessions.is_empty() {
                    Ok(None)
                } else {
                    writer
                        .push_with_lexemes(&me.machine, &me.label, &batch, &lexemes, at)
                        .map(Some)
                };
                if let (Some(c), Ok(Some(_))) = (cleaner, &r) {
                    c.written(
                        lexemes
                            .iter()
                            .flatten()
                            .map(|v| v.encoded_len() as u64)
                            .sum(),
                    );
                }
                let failed = r.is_err();
                if done_tx.send(r.map(|p| (batch, p))).is_err() || failed {
                    break;
                }
            }
        });
        // A session too large for one batch is in several: counted once, by its key in
        // PostgreSQL (origin, agent, external id as sent).
        let mut acknowledge = |store: &mut Store, d: Done| -> Result<()> {
            let (batch, p) = d?;
            if let Some(p) = &p {
                totals.batches += 1;
                for s in &batch.sessions {
                    let key = (s.session.agent.as_str(), s.session.external_id.as_str());
                    if !p
                        .deleted_elsewhere_sessions
                        .iter()
                        .any(|(a, e)| (a.as_str(), e.as_str()) == key)
                    {
                        counted
                            .pushed
                            .insert((key.0.to_string(), key.1.to_string()));
                    }
                }
                counted
                    .deleted_elsewhere
                    .extend(p.deleted_elsewhere_sessions.iter().cloned());
                totals.sessions = counted.pushed.len() as u64;
                totals.messages += p.messages;
                totals.deletions += p.deletions;
                totals.bytes += p.bytes;
                totals.deleted_elsewhere = counted.deleted_elsewhere.len() as u64;
                totals.vectors += p.vectors;
                totals.vectors_skipped += p.vectors_skipped;
            }
            store.ack_push(&batch, p.map(|p| (p.at, p.rev)))?;
            progress(Progress::Push {
                messages: totals.messages,
                queued,
            });
            Ok(())
        };
        let mut cursor = PushCursor::default();
        let mut exclusions = Exclusions::new(privacy);
        loop {
            while let Ok(d) = done.try_recv() {
                acknowledge(store, d)?;
            }
            let batch = store.push_batch_after(
                &me.machine,
                &mut exclusions,
                options.batch_messages,
                options.batch_bytes,
                cursor,
            )?;
            if batch.is_empty() {
                break;
            }
            if !tried && (!batch.deletions.is_empty() || !batch.sessions.is_empty()) {
                store.push_tried(at)?;
                tried = true;
            }
            cursor = batch.cursor_after(cursor);
            let mut batch = batch;
            batch.clamp_future(memtrail_runtime::now_ms());
            batch.redact_session_fields(&Standard);
            batch.fit_for_postgres(&me.machine);
            let lexemes = batch_lexemes(&batch);
            if to_pg.send((batch, lexemes)).is_err() {
                // The writer stopped at a failed batch: its error is in `done`.
                break;
            }
        }
        drop(to_pg);
        for d in done {
            acknowledge(store, d)?;
        }
        Ok(())
    });
    if let Some(c) = cleaner {
        c.stop(pg);
        // Later pushes on this connection (`sync --watch`) merge as usual again.
        let _ = pg.batch_execute("RESET gin_pending_list_limit");
    }
    if raised_work_mem {
        let _ = pg.batch_execute("RESET work_mem");
    }
    result
}

/// The messages queued from which a push counts as a bulk push ([`GinCleaner`]).
const BULK_PUSH_MESSAGES: u64 = 5_000;

/// The pushing connection's `work_mem` during a bulk push. Each batch's upsert sorts its rows
/// into the batch's order (bodies, tool text, parts and vectors: a few MB per 1,000 messages),
/// and the summaries' statement triggers keep them in a transition table; at PostgreSQL's
/// default 4 MB the sort spilled to temporary files: 229 files, 800 MB written and read back in
/// a first sync of the 1 GB bench store, with or without the triggers (docs/benchmarks.md,
/// "First sync, round four").
const BULK_WORK_MEM: &str = "64MB";

/// The full-text vectors (bytes of their binary form) a bulk push writes between two merges of
/// the index's pending list ([`GinCleaner`]). GIN merges a list key by key: each key found in
/// the list is looked up in the index and its posting list decoded, merged and encoded again,
/// once per merge, so a frequent word costs per merge, not per row. Merging after every batch
/// (~1.4 MB of vectors) did that work ~700 times in a first sync of the 1 GB bench store;
/// every 32 MiB, ~30 times (docs/benchmarks.md, issue 13 round three).
const GIN_MERGE_BYTES: u64 = 32 << 20;

/// The pushing connection's `gin_pending_list_limit` during a bulk push: above what
/// accumulates between two merges ([`GIN_MERGE_BYTES`] and what is written while one runs),
/// so that the inserts leave the merging to the [`GinCleaner`].
const BULK_PENDING_LIST_LIMIT: &str = "256MB";

/// The merging connection's `maintenance_work_mem` (what `gin_clean_pending_list` collects the
/// list's keys in): room for one merge's worth of keys, so that a merge writes each key once.
const GIN_MERGE_MEMORY: &str = "256MB";

/// A second connection that merges the pending list of the full-text index
/// (`gin_clean_pending_list('messages_tsv')`) while a bulk push writes: GIN's fast update
/// appends each inserted row's lexemes to that list, and whichever backend finds it over
/// `gin_pending_list_limit` merges it into the index, which was most of a first push's time in
/// PostgreSQL. Here the merging runs on another backend (another core), once
/// [`GIN_MERGE_BYTES`] of vectors were written since the last merge (the writer reports them:
/// [`GinCleaner::written`]), and the pushing connection's limit is raised so it leaves the
/// merging to it. Best effort: a role that does not own the index (PostgreSQL allows only the
/// owner) or any error just stops the cleaner, and the pushes merge as before.
struct GinCleaner {
    shared: std::sync::Arc<CleanerState>,
    thread: std::thread::JoinHandle<()>,
}

/// What the push and the cleaner share: the vector bytes written since the last merge, and
/// whether the push is over.
#[derive(Default)]
struct CleanerState {
    state: std::sync::Mutex<(u64, bool)>,
    wake: std::sync::Condvar,
}

impl GinCleaner {
    fn start(pg: &mut Pg) -> Option<GinCleaner> {
        let other = pg.connect_again().ok()?;
        other
            .batch_execute(&format!(
                "SET maintenance_work_mem = '{GIN_MERGE_MEMORY}'; SET work_mem = '64MB'"
            ))
            .ok()?;
        // One try first: no privilege, no cleaner.
        other
            .batch_execute("SELECT gin_clean_pending_list('messages_tsv'::regclass)")
            .ok()?;
        pg.batch_execute(&format!(
            "SET gin_pending_list_limit = '{BULK_PENDING_LIST_LIMIT}'"
        ))
        .ok()?;
        let shared = std::sync::Arc::new(CleanerState::default());
        let state = shared.clone();
        let thread = std::thread::spawn(move || {
            loop {
                let done = {
                    let mut s = state.state.lock().unwrap_or_else(|e| e.into_inner());
                    while s.0 < GIN_MERGE_BYTES && !s.1 {
                        s = state.wake.wait(s).unwrap_or_else(|e| e.into_inner());
                    }
                    s.0 = 0;
                    s.1
                };
                // The last merge runs after the push, so that searches do not read a long
                // pending list afterwards.
                if other
                    .batch_execute("SELECT gin_clean_pending_list('messages_tsv'::regclass)")
                    .is_err()
                {
                    return;
                }
                if done {
                    return;
                }
            }
        });
        Some(GinCleaner { shared, thread })
    }

    /// The writer committed vectors of `bytes` bytes (their binary form).
    fn written(&self, bytes: u64) {
        let mut s = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        s.0 += bytes;
        if s.0 >= GIN_MERGE_BYTES {
            self.shared.wake.notify_one();
        }
    }

    /// Merges what is left of the list once more, then stops. Meanwhile the pushing
    /// connection `pg` updates the planner's statistics of what the bulk push wrote, on the
    /// other core (best effort: autovacuum gets to it later, and until then a search filtered
    /// by agent was planned as if `messages` were empty: a bitmap scan of every match, 2.7 s
    /// for `error test` on the 1 GB bench store, against 20 ms once analyzed). Each takes ~2 s
    /// on that store; one after the other they were the last 4 s of a first sync.
    fn stop(self, pg: &mut Pg) {
        self.shared
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .1 = true;
        self.shared.wake.notify_one();
        let _ = pg.batch_execute("ANALYZE messages, sessions");
        let _ = self.thread.join();
    }
}

fn pull(
    store: &mut Store,
    pg: &mut Pg,
    me: &Identity,
    machines: &[crate::MachineInfo],
    options: &SyncOptions,
    report: &mut SyncReport,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    let (totals, counted) = (&mut report.pulled, &mut report.counted);
    for m in machines {
        if m.id == me.machine {
            continue;
        }
        totals.machines += 1;
        loop {
            let from = store.pull_position(&m.id)?;
            let batch = pg.pull_batch_within(
                &me.machine,
                &m.id,
                from,
                options.batch_messages,
                options.batch_bytes,
            )?;
            if batch.to_rev == from {
                break;
            }
            let applied = store.apply_pull(&batch, &Standard)?;
            totals.batches += 1;
            // The sessions the batch wrote (`apply_pull` skips this machine's own), each
            // counted once however many batches it took.
            counted.pulled.extend(
                batch
                    .sessions
                    .iter()
                    .filter(|s| s.machine != me.machine && !s.machine.is_empty())
                    .map(|s| {
                        (
                            s.machine.clone(),
                            s.session.agent.clone(),
                            s.session.external_id.clone(),
                        )
                    }),
            );
            totals.sessions = counted.pulled.len() as u64;
            totals.messages += applied.messages;
            totals.deleted_sessions += applied.deleted_sessions;
            totals.deleted_messages += applied.deleted_messages;
            progress(Progress::Pull {
                label: &m.label,
                messages: totals.messages,
            });
        }
    }
    if totals.batches > 0 {
        // A pull rewrites rows (a machine's `redact --rescan`, a deletion): until a checkpoint
        // copies the new pages into the database file, it still holds the old text, which
        // the automatic checkpoints (every 1,000 pages) may not reach for long after a small
        // pull. Best effort, as after an import: a reader that holds on leaves it to the next.
        store.checkpoint()?;
    }
    Ok(())
}

/// One sync at a time per store: an exclusive `flock` on `<store>.sync.lock` (mode 0600),
/// released when this is dropped or the process dies (a `kill -9` leaves no stale lock).
#[derive(Debug)]
pub struct SyncLock {
    _file: File,
    path: PathBuf,
}

impl SyncLock {
    /// The lock file of the store at `store_path`: `<store_path>.sync.lock`.
    pub fn path_for(store_path: &Path) -> PathBuf {
        let mut p = store_path.as_os_str().to_owned();
        p.push(".sync.lock");
        PathBuf::from(p)
    }

    /// The lock file, opened (created 0600 when missing).
    fn open(store_path: &Path) -> Result<(File, PathBuf)> {
        let path = Self::path_for(store_path);
        let mut o = std::fs::OpenOptions::new();
        o.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
        let file = o.open(&path).map_err(|e| {
            Error::Invalid(format!("cannot open the sync lock {}: {e}", path.display()))
        })?;
        Ok((file, path))
    }

    /// Takes the lock without waiting: `Ok(None)` when another sync holds it.
    ///
    /// Errors: [`Error::Invalid`] when the lock file cannot be created or locked.
    pub fn try_acquire(store_path: &Path) -> Result<Option<SyncLock>> {
        let (file, path) = Self::open(store_path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(SyncLock { _file: file, path })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(Error::Invalid(format!(
                "cannot lock {}: {e}",
                path.display()
            ))),
        }
    }

    /// Takes the lock, waiting for another sync to finish.
    ///
    /// Errors: as [`SyncLock::try_acquire`].
    pub fn acquire(store_path: &Path) -> Result<SyncLock> {
        let (file, path) = Self::open(store_path)?;
        file.lock()
            .map_err(|e| Error::Invalid(format!("cannot lock {}: {e}", path.display())))?;
        Ok(SyncLock { _file: file, path })
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// What `memtrail sync --init` set up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InitReport {
    /// This machine's id (kept from the config when it had one, else new).
    pub machine: String,
    /// This machine's label.
    pub label: String,
    /// The database, its URL with the password masked.
    pub url: String,
    /// The memtrail schema version of the database now.
    pub schema_version: i64,
    /// The migrations this run applied (empty when the schema was current).
    pub migrated: Vec<i64>,
    /// pgvector's version, `None` when the extension is not created.
    pub pgvector: Option<String>,
    /// Why there is no pgvector and what to do, `None` when there is.
    pub pgvector_note: Option<String>,
    /// The other machines already syncing with the database (this one joins them).
    pub other_machines: u64,
    /// Entries queued for the first push (every session and message of this machine already
    /// stored; 0 when sync was already enabled in this store).
    pub queued: u64,
}

/// `memtrail sync --json`: the set-up (with `--init`) and the sync.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyncOutput {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub init: Option<InitReport>,
    pub sync: SyncReport,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report of one sync that pushed, and found deleted elsewhere, and pulled the sessions
    /// named.
    fn report(pushed: &[&str], gone: &[&str], pulled: &[&str]) -> SyncReport {
        let key = |s: &&str| ("claude".to_string(), s.to_string());
        let counted = CountedSessions {
            pushed: pushed.iter().map(key).collect(),
            deleted_elsewhere: gone.iter().map(key).collect(),
            pulled: pulled
                .iter()
                .map(|s| ("m2".to_string(), "codex".to_string(), s.to_string()))
                .collect(),
        };
        SyncReport {
            machine: "m1".into(),
            label: "l".into(),
            url: "postgres://h/db".into(),
            pushed: Pushed {
                batches: 1,
                sessions: pushed.len() as u64,
                messages: 10,
                deleted_elsewhere: gone.len() as u64,
                ..Pushed::default()
            },
            pulled: Pulled {
                batches: 1,
                machines: 1,
                sessions: pulled.len() as u64,
                messages: 5,
                ..Pulled::default()
            },
            vector_index: None,
            vector_index_error: None,
            elapsed_ms: 100,
            counted,
        }
    }

    /// A second pass of one `memtrail sync` that pushes the same session again (a hook wrote
    /// to it meanwhile) counts it once; messages, batches and time add up.
    #[test]
    fn two_passes_count_each_session_once() {
        let r = report(&["s1", "s2"], &["g1"], &["p1"]).followed_by(report(
            &["s2"],
            &["g1"],
            &["p1", "p2"],
        ));
        assert_eq!(
            (
                r.pushed.sessions,
                r.pushed.deleted_elsewhere,
                r.pulled.sessions
            ),
            (2, 1, 2)
        );
        assert_eq!((r.pushed.messages, r.pulled.messages), (20, 10));
        assert_eq!(
            (r.pushed.batches, r.pulled.batches, r.pulled.machines),
            (2, 2, 1)
        );
        assert_eq!(r.elapsed_ms, 200);
    }
}
