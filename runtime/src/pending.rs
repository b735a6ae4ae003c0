//! Transcripts a hook could not finish: the store's write lock stayed taken past its time
//! budget ([`crate::Error::Busy`]), the budget ran out before the end of the file, or the
//! ingest stopped for a cause outside the transcript (memtrail's config does not parse or holds
//! a redaction rule that does not compile, the disk is full). Such a
//! hook records the transcript here, and the next hook of any session catches it up after its
//! own work, within its own budget ([`catch_up`]), so a session whose last hook gave up is not
//! left behind until someone runs `memtrail import`.
//!
//! The list lives outside the store (whose lock is what a giving-up hook could not get): one
//! small file per transcript in `$XDG_STATE_HOME/memtrail/pending/` (folder 0700, files 0600),
//! named by a hash of the store, agent, transcript and session, holding them as one JSON
//! object. Writing one again only refreshes it. An entry is removed once an ingest that started
//! after it was last written has reached the end of its transcript.
//!
//! A whole-file source (Gemini legacy JSON, VS Code chat sessions, Cline task files) that a
//! hook could not parse in the time it had left ([`crate::ingest::doc_parse_estimate`]) is
//! noted with its size ([`add_whole_file`]) and read by a detached `memtrail hook-settle`
//! ([`crate::settle::run`]), which has no deadline; at most one such process reads a file at a
//! time, and one more waits behind it ([`claim_worker`]); at most [`MAX_BACKGROUND_READS`]
//! read at once, whatever the file, and [`MAX_BACKGROUND_WAITERS`] more wait for their turn
//! ([`read_slot`]).

use crate::ingest::{IngestReport, ingest_path};
use crate::store::{Store, StoreLocation};
use crate::{Error, state_dir};
use memtrail_adapters::Agent;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `$XDG_STATE_HOME/memtrail/pending`.
pub fn dir() -> PathBuf {
    state_dir().join("pending")
}

/// One transcript left for the next hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The store the hook wrote to.
    pub db: String,
    pub agent: String,
    /// The transcript (for a database source, the database).
    pub path: String,
    /// The hook's session id (a database source reads only this session).
    pub session: Option<String>,
    /// For a whole-file source too large for the time a hook had left: its size in bytes when
    /// it was noted (it is read by a detached `memtrail hook-settle`). `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_file_bytes: Option<u64>,
}

impl Entry {
    fn new(
        db: &StoreLocation,
        agent: Agent,
        path: &Path,
        session: Option<&str>,
        whole_file_bytes: Option<u64>,
    ) -> Entry {
        Entry {
            db: db.to_string(),
            agent: agent.as_str().to_string(),
            path: path.display().to_string(),
            session: session.map(str::to_string),
            whole_file_bytes,
        }
    }

    fn file_name(&self) -> String {
        let key = format!(
            "{}\0{}\0{}\0{}",
            self.db,
            self.agent,
            self.path,
            self.session.as_deref().unwrap_or("")
        );
        blake3::hash(key.as_bytes()).to_hex()[..32].to_string()
    }

    /// The name of the worker locks of this entry's transcript (see [`claim_worker`]): one per
    /// store and file, whatever the agent and session.
    fn worker_name(&self) -> String {
        worker_name(&self.db, &self.path)
    }
}

fn worker_name(db: &str, path: &str) -> String {
    let key = format!("{db}\0{path}");
    blake3::hash(key.as_bytes()).to_hex()[..32].to_string()
}

/// Record that `path` (of `agent`, session `session`) still has to be ingested into the store
/// at `db`. Errors: the folder or file cannot be written (the caller logs it; the transcript is
/// still caught up by the next hook of its own session or by `memtrail import`).
pub fn add(
    db: &StoreLocation,
    agent: Agent,
    path: &Path,
    session: Option<&str>,
) -> std::io::Result<()> {
    write_entry(db, agent, path, session, None)
}

/// [`add`] for a whole-file source of `bytes` bytes that a hook left to a detached
/// `memtrail hook-settle` (too large for the time it had left); `status` shows it so.
///
/// Errors: as [`add`].
pub fn add_whole_file(
    db: &StoreLocation,
    agent: Agent,
    path: &Path,
    session: Option<&str>,
    bytes: u64,
) -> std::io::Result<()> {
    write_entry(db, agent, path, session, Some(bytes))
}

fn write_entry(
    db: &StoreLocation,
    agent: Agent,
    path: &Path,
    session: Option<&str>,
    whole_file_bytes: Option<u64>,
) -> std::io::Result<()> {
    let entry = Entry::new(db, agent, path, session, whole_file_bytes);
    create_private_dir(&dir())?;
    let dir = own_dir().ok_or_else(|| {
        std::io::Error::other(format!("{} is not a folder of its own", dir().display()))
    })?;
    let name = entry.file_name();
    let tmp = dir.join(format!(".{name}.{}", std::process::id()));
    let text = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
    write_private(&tmp, &text)?;
    std::fs::rename(&tmp, dir.join(name)).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Remove the entry [`add`] (or [`add_whole_file`]) wrote for `path` (of `agent`, session
/// `session`) and the store at `db`, if there is one (in a pending folder that is not a
/// symlink).
///
/// Errors: the file is there and cannot be removed.
pub fn remove(
    db: &StoreLocation,
    agent: Agent,
    path: &Path,
    session: Option<&str>,
) -> std::io::Result<()> {
    let entry = Entry::new(db, agent, path, session, None);
    let Some(dir) = own_dir() else {
        return Ok(());
    };
    match std::fs::remove_file(dir.join(entry.file_name())) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Whether `name` is the name [`add`] gives an entry: 32 lowercase hex digits.
fn is_entry_name(name: &str) -> bool {
    name.len() == 32 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The pending folder, when it is a real folder (not a symlink to one: its files are then not
/// memtrail's, and a torn entry is deleted).
fn own_dir() -> Option<PathBuf> {
    let dir = dir();
    std::fs::symlink_metadata(&dir)
        .is_ok_and(|m| m.is_dir())
        .then_some(dir)
}

/// The entries waiting for the store at `db`, oldest first, with their files and times. Only
/// files named as [`add`] names them are read (and dropped when they are not an entry), in a
/// pending folder that is not a symlink: a link planted there to another folder never makes a
/// hook delete that folder's files.
pub fn list(db: &StoreLocation) -> Vec<(PathBuf, std::time::SystemTime, Entry)> {
    let Some(rd) = own_dir().and_then(|d| std::fs::read_dir(d).ok()) else {
        return Vec::new();
    };
    let db = db.to_string();
    let mut out = Vec::new();
    for de in rd.flatten() {
        let file = de.path();
        if !is_entry_name(&de.file_name().to_string_lossy()) {
            continue;
        }
        let Ok(md) = std::fs::symlink_metadata(&file) else {
            continue;
        };
        // Only a small regular file is read (checked before, and again on what is opened):
        // a FIFO or a link to a device named like an entry must not hang or fill a hook.
        let entry = (md.is_file() && md.len() <= MAX_ENTRY_BYTES)
            .then(|| read_entry(&file))
            .flatten()
            .and_then(|b| serde_json::from_slice::<Entry>(&b).ok());
        match entry {
            Some(e) if e.db == db => {
                out.push((file, md.modified().unwrap_or(std::time::UNIX_EPOCH), e))
            }
            Some(_) => {}
            // Not an entry: nothing memtrail wrote, or a torn write. Drop it.
            None => {
                let _ = std::fs::remove_file(&file);
            }
        }
    }
    out.sort_by_key(|(_, t, _)| *t);
    out
}

/// What [`catch_up`] did.
#[derive(Debug, Default)]
pub struct CatchUp {
    /// One report per transcript ingested.
    pub ingested: Vec<IngestReport>,
    /// Entries still waiting (the deadline came, the store was busy, or a whole-file source is
    /// [`CatchUp::deferred`]).
    pub left: usize,
    /// Entries dropped because their transcript could not be read, with the reason.
    pub dropped: Vec<(String, String)>,
    /// Whole-file sources skipped because they could not be parsed before the deadline
    /// ([`crate::ingest::IngestReport::deferred`]): agent, file, session, for the caller to hand
    /// to a process without a deadline (`memtrail hook-settle`). They stay listed.
    pub deferred: Vec<(Agent, PathBuf, Option<String>)>,
}

/// How long an entry whose transcript does not exist yet is kept: a session-ending hook of an
/// agent that writes its transcript after its hooks leaves one before the file exists
/// ([`crate::settle`]); an older entry for a missing file is dropped.
pub const NOT_WRITTEN_YET_GRACE: std::time::Duration = std::time::Duration::from_secs(120);

/// Ingest the transcripts waiting for the store `store` (at `db`), oldest first, until
/// `deadline`. An entry whose transcript is read to its end is removed (unless it was written
/// again meanwhile); a busy store or the deadline stops the catch-up and keeps the rest; a
/// whole-file source that cannot be parsed before the deadline is kept, noted with its size
/// ([`add_whole_file`]), returned in [`CatchUp::deferred`], and the catch-up goes on with the
/// next entry; an entry whose transcript cannot be read (gone, not a transcript) is dropped,
/// except a missing one younger than [`NOT_WRITTEN_YET_GRACE`].
pub fn catch_up(store: &mut Store, db: &StoreLocation, deadline: Instant) -> CatchUp {
    let mut out = CatchUp::default();
    let entries = list(db);
    let total = entries.len();
    for (i, (file, written, e)) in entries.into_iter().enumerate() {
        if Instant::now() >= deadline {
            out.left = total - i + out.deferred.len();
            break;
        }
        let Ok(agent) = e.agent.parse::<Agent>() else {
            let _ = std::fs::remove_file(&file);
            continue;
        };
        let path = PathBuf::from(&e.path);
        match ingest_path(store, agent, &path, e.session.as_deref(), Some(deadline)) {
            Ok(r) if r.deferred => {
                if let Ok(md) = std::fs::metadata(&path)
                    && e.whole_file_bytes != Some(md.len())
                {
                    let _ = add_whole_file(db, agent, &path, e.session.as_deref(), md.len());
                }
                out.deferred.push((agent, path, e.session.clone()));
                out.ingested.push(r);
            }
            Ok(r) if r.incomplete => {
                out.ingested.push(r);
                out.left = total - i + out.deferred.len();
                break;
            }
            Ok(r) => {
                out.ingested.push(r);
                let same = std::fs::symlink_metadata(&file)
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t == written);
                if same {
                    let _ = std::fs::remove_file(&file);
                }
            }
            // Busy, or a full disk: nothing is wrong with the transcripts; they wait for a
            // later hook.
            Err(Error::Busy { .. } | Error::Full) => {
                out.left = total - i + out.deferred.len();
                break;
            }
            // A transcript its agent has not written yet (Copilot CLI writes it after its
            // last hook, `crate::settle`): kept while the entry is young.
            Err(Error::Io(io))
                if io.kind() == std::io::ErrorKind::NotFound
                    && written
                        .elapsed()
                        .is_ok_and(|age| age < NOT_WRITTEN_YET_GRACE) => {}
            Err(err) => {
                out.dropped.push((e.path.clone(), err.to_string()));
                let _ = std::fs::remove_file(&file);
            }
        }
    }
    if out.left == 0 {
        out.left = out.deferred.len();
    }
    out
}

/// The right of one background process to read one transcript ([`claim_worker`]), held until
/// it is dropped.
#[derive(Debug)]
pub struct WorkerClaim {
    _run: std::fs::File,
}

/// `$XDG_STATE_HOME/memtrail/pending/workers`: the lock files of [`claim_worker`] (two per
/// file ever read in the background, of a few bytes' worth of inode each; never removed, as
/// removing a lock file others may hold open would let two processes lock two files).
fn workers_dir() -> PathBuf {
    dir().join("workers")
}

/// Claim the reading of `path` for the store at `db` by this (background) process: at most one
/// process reads a file at a time, and one more waits behind it. Blocks while another process
/// reads it and none waits (the waiting one reads after it, so it sees every change made to
/// the file until then); returns `Ok(None)` at once when one reads and one already waits.
///
/// Errors: the lock files cannot be created or locked (a `pending/workers` that is not a
/// folder of memtrail's own is refused).
pub fn claim_worker(db: &StoreLocation, path: &Path) -> std::io::Result<Option<WorkerClaim>> {
    let name = worker_name(&db.to_string(), &path.display().to_string());
    let dir = own_workers_dir()?;
    let run = open_lock(&dir.join(format!("{name}.run")))?;
    if try_lock(&run)? {
        return Ok(Some(WorkerClaim { _run: run }));
    }
    let next = open_lock(&dir.join(format!("{name}.next")))?;
    if !try_lock(&next)? {
        return Ok(None);
    }
    lock(&run)?;
    drop(next);
    Ok(Some(WorkerClaim { _run: run }))
}

/// `pending/workers`, created (0700) if missing; one of this user's that others could write
/// to is tightened to 0700 (a lock file another user made there is refused by [`open_lock`]).
/// Errors: it cannot be created, it is not a folder of its own (a symlink), or it belongs to
/// another user (`PermissionDenied`: its locks are not used).
fn own_workers_dir() -> std::io::Result<PathBuf> {
    let dir = workers_dir();
    create_private_dir(&dir)?;
    let m = std::fs::symlink_metadata(&dir)?;
    if !m.is_dir() {
        return Err(std::io::Error::other(format!(
            "{} is not a folder of its own",
            dir.display()
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if m.uid() != euid() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("{} belongs to another user; not used", dir.display()),
            ));
        }
        if m.mode() & 0o077 != 0 {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    Ok(dir)
}

/// This process's effective user id.
#[cfg(unix)]
fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Most whole-file sources read in the background at once by this user's processes, all
/// stores and files together: a read holds the file and what is parsed of it in memory, about
/// ten times its size (a 23 MB VS Code chat session: 250 MB; one at
/// [`crate::ingest::MAX_DOC_BYTES`], some 2.5 GB), and [`claim_worker`] bounds the readers of
/// one file only.
pub const MAX_BACKGROUND_READS: usize = 2;

/// How often [`read_slot`] looks for a free slot.
const READ_SLOT_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// One of the [`MAX_BACKGROUND_READS`] rights to read a whole-file source in the background
/// ([`read_slot`]), held until it is dropped.
#[derive(Debug)]
pub struct ReadSlot {
    _slot: std::fs::File,
}

/// A free read slot (a lock file `pending/workers/read-N.slot`, N below
/// [`MAX_BACKGROUND_READS`]), without waiting; `Ok(None)` when every slot is held.
///
/// Errors: as [`claim_worker`].
pub fn try_read_slot() -> std::io::Result<Option<ReadSlot>> {
    try_slot("read", MAX_BACKGROUND_READS)
}

/// Most background reads waiting for a [`read_slot`] at once, all files together: past them,
/// a read is not queued (the next hook starts it again), so that a flood of hooks naming many
/// large files leaves a bounded number of processes behind.
pub const MAX_BACKGROUND_WAITERS: usize = 4;

/// A free place in the queue for a read slot (a lock file `pending/workers/wait-N.slot`, N
/// below [`MAX_BACKGROUND_WAITERS`]), without waiting; `Ok(None)` when every place is held.
///
/// Errors: as [`claim_worker`].
pub fn try_queue_place() -> std::io::Result<Option<ReadSlot>> {
    try_slot("wait", MAX_BACKGROUND_WAITERS)
}

fn try_slot(kind: &str, n: usize) -> std::io::Result<Option<ReadSlot>> {
    let dir = own_workers_dir()?;
    for i in 0..n {
        let slot = open_lock(&dir.join(format!("{kind}-{i}.slot")))?;
        if try_lock(&slot)? {
            return Ok(Some(ReadSlot { _slot: slot }));
        }
    }
    Ok(None)
}

/// A read slot ([`try_read_slot`]): at once when one is free; else, holding a place in the
/// queue ([`try_queue_place`]), waiting (looking every 250 ms) until one is; `Ok(None)` at
/// once when the queue is full too.
///
/// Errors: as [`claim_worker`].
pub fn read_slot() -> std::io::Result<Option<ReadSlot>> {
    if let Some(slot) = try_read_slot()? {
        return Ok(Some(slot));
    }
    let Some(_place) = try_queue_place()? else {
        return Ok(None);
    };
    loop {
        std::thread::sleep(READ_SLOT_POLL);
        if let Some(slot) = try_read_slot()? {
            return Ok(Some(slot));
        }
    }
}

/// Whether a background process reads the transcript of `entry` now (holds its
/// [`claim_worker`] lock). Creates nothing.
pub fn worker_running(entry: &Entry) -> bool {
    let file = workers_dir().join(format!("{}.run", entry.worker_name()));
    open_own_regular(&file).is_some_and(|f| matches!(try_lock(&f), Ok(false)))
}

#[cfg(unix)]
fn open_lock(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(std::io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    // A lock file another user made (and may hold) would stop this user's reads.
    if std::os::unix::fs::MetadataExt::uid(&m) != euid() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{} belongs to another user; not used", path.display()),
        ));
    }
    Ok(f)
}

#[cfg(not(unix))]
fn open_lock(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

/// Take `f`'s exclusive lock without waiting: `Ok(false)` when another holder has it.
#[cfg(unix)]
fn try_lock(f: &std::fs::File) -> std::io::Result<bool> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock on a descriptor this function borrows; no memory is passed.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.kind() == std::io::ErrorKind::WouldBlock {
        Ok(false)
    } else {
        Err(e)
    }
}

/// Take `f`'s exclusive lock, waiting for it.
#[cfg(unix)]
fn lock(f: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    loop {
        // SAFETY: as in `try_lock`.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Elsewhere than Unix there is no lock: every claim is granted.
#[cfg(not(unix))]
fn try_lock(_: &std::fs::File) -> std::io::Result<bool> {
    Ok(true)
}

#[cfg(not(unix))]
fn lock(_: &std::fs::File) -> std::io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// Largest entry read (bytes); [`add`] writes a few hundred.
const MAX_ENTRY_BYTES: u64 = 64 * 1024;

/// The bytes of the entry file `path`: `None` unless it opens, without following a symlink and
/// without blocking, as a regular file of at most [`MAX_ENTRY_BYTES`].
fn read_entry(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = open_own_regular(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_ENTRY_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    (bytes.len() as u64 <= MAX_ENTRY_BYTES).then_some(bytes)
}

/// `path` opened for reading without following a symlink and without blocking, when what is
/// opened is a regular file; else `None`.
fn open_own_regular(path: &Path) -> Option<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NOFOLLOW | libc::O_NONBLOCK,
    );
    let file = options.open(path).ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?
        .write_all(bytes)
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}
