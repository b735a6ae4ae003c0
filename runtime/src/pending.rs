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
}

impl Entry {
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
    let entry = Entry {
        db: db.to_string(),
        agent: agent.as_str().to_string(),
        path: path.display().to_string(),
        session: session.map(str::to_string),
    };
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
    /// Entries still waiting (the deadline came, or the store was busy).
    pub left: usize,
    /// Entries dropped because their transcript could not be read, with the reason.
    pub dropped: Vec<(String, String)>,
}

/// How long an entry whose transcript does not exist yet is kept: a session-ending hook of an
/// agent that writes its transcript after its hooks leaves one before the file exists
/// ([`crate::settle`]); an older entry for a missing file is dropped.
pub const NOT_WRITTEN_YET_GRACE: std::time::Duration = std::time::Duration::from_secs(120);

/// Ingest the transcripts waiting for the store `store` (at `db`), oldest first, until
/// `deadline`. An entry whose transcript is read to its end is removed (unless it was written
/// again meanwhile); a busy store or the deadline stops the catch-up and keeps the rest; an
/// entry whose transcript cannot be read (gone, not a transcript) is dropped, except a missing
/// one younger than [`NOT_WRITTEN_YET_GRACE`].
pub fn catch_up(store: &mut Store, db: &StoreLocation, deadline: Instant) -> CatchUp {
    let mut out = CatchUp::default();
    let entries = list(db);
    let total = entries.len();
    for (i, (file, written, e)) in entries.into_iter().enumerate() {
        if Instant::now() >= deadline {
            out.left = total - i;
            break;
        }
        let Ok(agent) = e.agent.parse::<Agent>() else {
            let _ = std::fs::remove_file(&file);
            continue;
        };
        let path = PathBuf::from(&e.path);
        match ingest_path(store, agent, &path, e.session.as_deref(), Some(deadline)) {
            Ok(r) if r.incomplete => {
                out.ingested.push(r);
                out.left = total - i;
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
                out.left = total - i;
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
    out
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
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NOFOLLOW | libc::O_NONBLOCK,
    );
    let file = options.open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_ENTRY_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    (bytes.len() as u64 <= MAX_ENTRY_BYTES).then_some(bytes)
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
