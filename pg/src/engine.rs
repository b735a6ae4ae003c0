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

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use memtrail_runtime::Store;
use memtrail_runtime::privacy::Privacy;
use memtrail_runtime::records::Standard;
use serde::Serialize;

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
    /// created again): all `sessions` of this machine are queued again and every machine's
    /// pushes are pulled from the start ([`Store::sync_database`]).
    NewDatabase { sessions: u64 },
}

/// What a push sent, summed over its batches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Pushed {
    /// Batches (PostgreSQL transactions).
    pub batches: u64,
    /// Session rows written (a session counts once per batch it is in).
    pub sessions: u64,
    /// Messages written.
    pub messages: u64,
    /// Sessions deleted.
    pub deletions: u64,
    /// Bytes of message text sent.
    pub bytes: u64,
    /// Sessions of this machine whose changes were not pushed because another machine deleted
    /// them (a deletion is for good: the next pull deletes them here too), counted once per
    /// batch they are in.
    pub deleted_elsewhere: u64,
}

/// What a pull brought, summed over its batches and machines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Pulled {
    /// Batches (local transactions).
    pub batches: u64,
    /// Other machines that pushed to the database.
    pub machines: u64,
    /// Sessions written locally.
    pub sessions: u64,
    /// Messages written locally.
    pub messages: u64,
    /// Sessions deleted locally by pulled deletions.
    pub deleted_sessions: u64,
    /// Messages deleted locally because a pulled message set no longer holds them.
    pub deleted_messages: u64,
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
    /// Wall time, milliseconds.
    pub elapsed_ms: u64,
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
        elapsed_ms: 0,
    };
    if let Some(sessions) = store.sync_database(&pg.database_id()?)? {
        progress(Progress::NewDatabase { sessions });
    }
    push(
        store,
        pg,
        me,
        privacy,
        options,
        &mut report.pushed,
        progress,
    )?;
    pull(store, pg, me, options, &mut report.pulled, progress)?;
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

fn push(
    store: &mut Store,
    pg: &mut Pg,
    me: &Identity,
    privacy: &Privacy,
    options: &SyncOptions,
    totals: &mut Pushed,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    let queued = store.sync_pending()?.messages;
    loop {
        let batch = store.push_batch(
            &me.machine,
            privacy,
            options.batch_messages,
            options.batch_bytes,
        )?;
        if batch.is_empty() {
            return Ok(());
        }
        if !batch.deletions.is_empty() || !batch.sessions.is_empty() {
            let p = pg.push(&me.machine, &me.label, &batch)?;
            totals.batches += 1;
            totals.sessions += p.sessions;
            totals.messages += p.messages;
            totals.deletions += p.deletions;
            totals.bytes += p.bytes;
            totals.deleted_elsewhere += p.deleted_elsewhere;
        }
        store.ack_push(&batch)?;
        progress(Progress::Push {
            messages: totals.messages,
            queued,
        });
    }
}

fn pull(
    store: &mut Store,
    pg: &mut Pg,
    me: &Identity,
    options: &SyncOptions,
    totals: &mut Pulled,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    for m in pg.machines()? {
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
            totals.sessions += applied.sessions;
            totals.messages += applied.messages;
            totals.deleted_sessions += applied.deleted_sessions;
            totals.deleted_messages += applied.deleted_messages;
            progress(Progress::Pull {
                label: &m.label,
                messages: totals.messages,
            });
        }
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
