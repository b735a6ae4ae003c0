//! Incremental ingest of a line-oriented (JSONL) transcript into the store.
//!
//! One code path serves hooks and `memtrail import`. From the stored [`Cursor`] it reads only
//! the complete new lines (a partial last line waits for the next ingest), hands them to the
//! agent's [`LineReader`], and writes the records and the advanced cursor in one transaction per
//! chunk. A file that shrank, was replaced (other device/inode) or whose first bytes changed is
//! re-read from the start; what was stored stays (another tool's copy or truncation must not
//! delete what was captured), and messages the file still holds merge by id, so nothing is
//! duplicated. Only rewinds the transcript records (Gemini `$rewindTo`) delete messages; a
//! whole-file (document) source is the session's whole state and replaces it. Lines longer than [`MAX_LINE_BYTES`] are skipped and counted.
//!
//! Sessions of excluded projects (see [`crate::privacy`]) and sessions the user deleted are not
//! stored: their cursor moves to the end of the file with a [`SkipReason`] marker, so the file is
//! not parsed again at each hook; [`IngestReport::skipped`] says why.

use crate::privacy::{Privacy, SkipReason};
use crate::records::{Prepared, Standard};
use crate::store::{Cursor, CursorMark, Store, Writer};
use crate::{Error, Result, now_ms};
use memtrail_adapters::{Agent, Batch, ParseStats, SessionMeta, Source};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::Instant;

/// Bytes read per step; each step is one short write transaction (its messages and the
/// advanced cursor), so a long import never holds the write lock for long and hooks that run
/// meanwhile get their turn between steps.
pub const CHUNK_BYTES: usize = 1024 * 1024;
/// Most lines applied in one step (one write transaction): a step's transaction stays short
/// (the write lock is held for the inserts of at most this many lines), and a hook checks its
/// deadline between steps.
pub const STEP_LINES: usize = 500;
/// Longest line that is parsed; longer lines are skipped (streamed past, never held whole) and
/// counted as malformed.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;
/// How many leading bytes identify a file's content (hashed with blake3).
pub const HEAD_BYTES: u64 = 4096;

/// What one ingest of one file did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct IngestReport {
    /// The session's external id, when the file was identified.
    pub session: Option<String>,
    /// Messages inserted for the first time.
    pub inserted: u64,
    /// Stored messages updated by a later write of the same message (or a late tool result).
    pub updated: u64,
    /// Bytes of the file consumed by this ingest.
    pub bytes: u64,
    pub stats: ParseStats,
    /// True when the file had been truncated or rewritten and was read again from the start.
    pub reread: bool,
    /// True when the time budget ran out before the end of the file.
    pub incomplete: bool,
    /// True when the file is a whole-file source that changed but was not read: parsing it
    /// ([`doc_parse_estimate`] of its size) would not end before the deadline. Nothing was
    /// stored; [`IngestReport::incomplete`] is also set. Left for a read without a deadline
    /// (`memtrail hook-settle`, `memtrail import`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deferred: bool,
    /// True when the file had nothing new.
    pub unchanged: bool,
    /// Why the file's content was not stored (an excluded project, a deleted session), if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// The project directory stored for a session, if the session is stored.
fn stored_project(store: &Store, sref: &memtrail_adapters::SessionRef) -> Result<Option<String>> {
    store.session_project(sref.agent.as_str(), &sref.external_id)
}

/// The project of a transcript whose reader found none (a Cursor slug folder not on this disk, a
/// legacy Gemini hash folder no registry names): the stored project folder of another session
/// that the path names, for the agents that have one ([`memtrail_adapters::Quirks::project_among`]).
fn known_project(store: &Store, agent: Agent, path: &Path) -> Result<Option<String>> {
    let Some(project_among) = agent.adapter().quirks().project_among else {
        return Ok(None);
    };
    let known = store.known_projects()?;
    Ok(project_among(path, &known))
}

/// For a transcript seen for the first time: the marker it gets when its own session (a copy
/// of a deleted session's transcript at another path, as after a project folder is renamed)
/// or its parent session (a sub-agent's transcript that first appears after the delete) is a
/// session the user deleted (`sessions delete` covers every copy and what is added to the
/// session later), else `None`.
fn deleted_parent(
    store: &Store,
    sref: &memtrail_adapters::SessionRef,
) -> Result<Option<SkipReason>> {
    deleted_session(
        store,
        sref.agent.as_str(),
        &sref.external_id,
        sref.parent_external_id.as_deref(),
    )
}

/// As [`deleted_parent`], for the session `own` (agent's id) of `agent` and its parent, if
/// any: one indexed lookup of each in `sessions`; the sources are scanned for a delete marker
/// only for the ones that are not stored (a stored session was not deleted, or was captured
/// again since).
fn deleted_session(
    store: &Store,
    agent: &str,
    own: &str,
    parent: Option<&str>,
) -> Result<Option<SkipReason>> {
    let stored = |id: &str| store.session_stored(agent, id);
    let mut gone: Vec<&str> = Vec::with_capacity(2);
    for id in std::iter::once(own).chain(parent) {
        if !stored(id)? {
            gone.push(id);
        }
    }
    let Some(first) = gone.first().copied() else {
        return Ok(None);
    };
    let second = gone.get(1).copied().unwrap_or(first);
    let deleted = store.deleted_marker(agent, first, second)?;
    Ok(deleted.then(|| SkipReason::Deleted {
        session: Some(own.to_string()),
    }))
}

/// The skip marker of a stored cursor, and whether it still holds (`Deleted` always does;
/// `Excluded` while its project is excluded). `Ok(None)` for a cursor without a marker.
fn skip_marker(stored: Option<&Cursor>) -> Result<Option<(SkipReason, bool)>> {
    let Some(reason) = SkipReason::from_state(stored.and_then(|c| c.reader_state.as_ref())) else {
        return Ok(None);
    };
    let holds = match &reason {
        SkipReason::Deleted { .. } => true,
        SkipReason::Excluded { project } => Privacy::load()?.excluded(project).is_some(),
    };
    Ok(Some((reason, holds)))
}

fn skip_text(reason: &SkipReason) -> String {
    match reason {
        SkipReason::Excluded { project } => format!("project {project} is excluded"),
        SkipReason::Deleted { .. } => "the session was deleted".to_string(),
    }
}

/// Save `cursor` for `key` with no lines counted (a file skipped, or read no further).
fn save_cursor_only(w: &Writer<'_>, key: &str, agent: Agent, cursor: &Cursor) -> Result<()> {
    w.save_cursor(
        key,
        agent,
        cursor,
        &ParseStats::default(),
        now_ms(),
        &Standard,
    )
}

/// Move the cursor of `key` to the end of the file with the marker `reason`, storing nothing;
/// unless the cursor is no longer `mark` (another process moved or marked it meanwhile: its
/// word stands, e.g. a delete's marker is never replaced by an exclusion's).
#[allow(clippy::too_many_arguments)]
fn skip_to_end(
    store: &mut Store,
    agent: Agent,
    key: &str,
    st: &FileState,
    session_id: Option<i64>,
    reason: &SkipReason,
    mark: &Option<CursorMark>,
    report: &mut IngestReport,
) -> Result<()> {
    let cursor = Cursor {
        session_id,
        offset: st.size,
        size: st.size,
        dev: st.dev,
        ino: st.ino,
        mtime_ns: st.mtime_ns,
        reader_state: Some(reason.to_state()),
        ..Cursor::default()
    };
    let saved = store.write(|w| {
        w.expect_cursor(key, mark)?;
        save_cursor_only(w, key, agent, &cursor)
    });
    match saved {
        Ok(()) | Err(Error::Superseded) => {}
        Err(e) => return Err(e),
    }
    report.skipped = Some(skip_text(reason));
    Ok(())
}

#[derive(Clone, Copy)]
struct FileState {
    size: u64,
    dev: Option<u64>,
    ino: Option<u64>,
    mtime_ns: Option<i64>,
}

impl FileState {
    /// The file is as a cursor left it: size equal to its offset, same device, inode and
    /// modification time.
    fn left_at(
        &self,
        offset: u64,
        dev: Option<u64>,
        ino: Option<u64>,
        mtime_ns: Option<i64>,
    ) -> bool {
        self.size == offset && (self.dev, self.ino, self.mtime_ns) == (dev, ino, mtime_ns)
    }
}

fn file_state(f: &File) -> std::io::Result<FileState> {
    let md = f.metadata()?;
    if !md.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(state_of(&md))
}

/// True when a file with metadata `md` is, by size, identity and modification time, exactly as
/// its cursor `c` left it (so that ingesting it would find nothing new): the test the fast path
/// of [`ingest_file`] makes after opening the file, made here without opening it. A cursor
/// with a skip marker (an excluded project may have been let in since) never matches.
pub fn unchanged_since(md: &std::fs::Metadata, c: &crate::store::CursorStat) -> bool {
    let st = state_of(md);
    md.is_file()
        && !c.marked
        && st.left_at(c.offset, c.dev, c.ino, c.mtime_ns)
        && st.mtime_ns.is_some()
}

fn state_of(md: &std::fs::Metadata) -> FileState {
    #[cfg(unix)]
    let (dev, ino, mtime_ns) = {
        use std::os::unix::fs::MetadataExt;
        (
            Some(md.dev()),
            Some(md.ino()),
            Some(md.mtime() * 1_000_000_000 + md.mtime_nsec()),
        )
    };
    #[cfg(not(unix))]
    let (dev, ino, mtime_ns) = (
        None,
        None,
        md.modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as i64),
    );
    FileState {
        size: md.len(),
        dev,
        ino,
        mtime_ns,
    }
}

fn head_hash(f: &mut File, len: u64) -> std::io::Result<String> {
    hash_range(f, 0, len)
}

/// blake3 (hex) of `len` bytes at `start`; the file position is moved.
fn hash_range(f: &mut File, start: u64, len: u64) -> std::io::Result<String> {
    let mut buf = vec![0u8; len as usize];
    f.seek(SeekFrom::Start(start))?;
    f.read_exact(&mut buf)?;
    Ok(blake3::hash(&buf).to_hex().to_string())
}

/// Open a source for reading after checking that it is a regular file (following symlinks):
/// opening a FIFO would block, and a directory or device is never a transcript.
pub(crate) fn open_regular(path: &Path) -> std::io::Result<File> {
    let md = std::fs::metadata(path)?;
    if !md.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    // Opened non-blocking, so that a FIFO swapped in after the check cannot block the open
    // (`file_state` then refuses it); reads of a regular file ignore the flag.
    #[cfg(unix)]
    let f = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)?
    };
    #[cfg(not(unix))]
    let f = File::open(path)?;
    Ok(f)
}

/// Ingest what is new in the transcript at `path` for `agent`, stopping at a line boundary once
/// `deadline` has passed (the rest is left for the next ingest).
///
/// Errors: the file cannot be opened or read, the agent has no line reader, or the store fails.
/// A store failure rolls back the current chunk; the cursor stays at the last committed chunk.
pub fn ingest_file(
    store: &mut Store,
    agent: Agent,
    path: &Path,
    deadline: Option<Instant>,
) -> Result<IngestReport> {
    ingest_path(store, agent, path, None, deadline)
}

/// [`ingest_file`] with the session the caller is about (a hook's session id): a database
/// source then reads only that session.
pub fn ingest_path(
    store: &mut Store,
    agent: Agent,
    path: &Path,
    session: Option<&str>,
    deadline: Option<Instant>,
) -> Result<IngestReport> {
    ingest_with(store, agent, path, session, deadline, false)
}

/// [`ingest_path`] for a transcript at rest (`memtrail import`, a hook at the session's end):
/// a last line without its `\n` (copies made by other tools often lack it) is ingested too,
/// when it is one complete JSON object or array. The cursor then points just past it; a
/// `\n` and more lines appended later are read from there (the empty line between is
/// skipped), so nothing is stored twice.
///
/// Errors: as [`ingest_file`].
pub fn ingest_at_rest(
    store: &mut Store,
    agent: Agent,
    path: &Path,
    session: Option<&str>,
    deadline: Option<Instant>,
) -> Result<IngestReport> {
    ingest_with(store, agent, path, session, deadline, true)
}

fn ingest_with(
    store: &mut Store,
    agent: Agent,
    path: &Path,
    session: Option<&str>,
    deadline: Option<Instant>,
    at_rest: bool,
) -> Result<IngestReport> {
    // Read before anything is read or written: the exclusions and the redaction rules
    // (installed for every redaction below); a config that cannot be read, or a rule that
    // does not compile, stores nothing and leaves the cursor where it was.
    Privacy::load()?;
    match memtrail_adapters::source_for(agent, path) {
        Some(Source::Lines(reader)) => ingest_lines(store, agent, path, reader, deadline, at_rest),
        Some(Source::Doc(reader)) => ingest_doc(store, agent, path, reader, deadline),
        Some(Source::Database) => ingest_db(store, agent, path, session, deadline),
        None => Err(Error::Unsupported(format!(
            "memtrail cannot read {} files like {}",
            agent.display_name(),
            path.display()
        ))),
    }
}

/// Ingest an agent's database (OpenCode): per session, what changed since that session's
/// watermark (kept as the cursor `offset` of the key `<db path>#<session id>`). With no session
/// given, every session of the database, one transaction each.
fn ingest_db(
    store: &mut Store,
    agent: Agent,
    path: &Path,
    session: Option<&str>,
    deadline: Option<Instant>,
) -> Result<IngestReport> {
    let md = std::fs::metadata(path)?;
    if !md.is_file() {
        return Err(Error::Invalid(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let sessions: Vec<String> = match session {
        Some(s) => vec![s.to_string()],
        None => memtrail_adapters::database_sessions(agent, path)
            .map_err(|e| Error::Invalid(e.to_string()))?,
    };
    let mut report = IngestReport {
        unchanged: true,
        ..Default::default()
    };
    for sid in sessions {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            report.incomplete = true;
            break;
        }
        let key = format!("{}#{sid}", path.display());
        let stored = store.cursor(&key)?;
        let mark = stored.as_ref().map(Cursor::mark);
        let mut since = stored.as_ref().map_or(0, |c| c.offset as i64);
        let mut lifted = false;
        match skip_marker(stored.as_ref())? {
            Some((reason, true)) => {
                report.skipped = Some(skip_text(&reason));
                continue;
            }
            Some((_, false)) => {
                // No longer excluded: read the whole session again.
                since = 0;
                lifted = true;
            }
            None => {}
        }
        let mut batch = memtrail_adapters::read_database(agent, path, Some(&sid), since)
            .map_err(|e| Error::Invalid(e.to_string()))?;
        if batch.sessions.is_empty() && batch.watermark <= since {
            continue;
        }
        // First sight of this session: a child session of a deleted session (or the session
        // itself, read from a copy of the database) is marked deleted, not stored.
        if stored.is_none() {
            let mut reason = None;
            for s in &batch.sessions {
                reason = deleted_parent(store, &s.session)?;
                if reason.is_some() {
                    break;
                }
            }
            if let Some(reason) = reason {
                let end = batch.watermark.max(since).max(0) as u64;
                let cursor = Cursor {
                    offset: end,
                    size: end,
                    reader_state: Some(reason.to_state()),
                    ..Cursor::default()
                };
                store.write(|w| save_cursor_only(w, &key, agent, &cursor))?;
                report.skipped = Some(skip_text(&reason));
                continue;
            }
        }
        let privacy = Privacy::load()?;
        let excluded = batch.sessions.iter().find_map(|s| {
            s.meta
                .project_dir
                .as_deref()
                .filter(|p| privacy.excluded(p).is_some())
        });
        if let Some(project) = excluded {
            let reason = SkipReason::Excluded {
                project: project.to_string(),
            };
            let cursor = Cursor {
                session_id: stored.as_ref().and_then(|c| c.session_id),
                offset: batch.watermark.max(since).max(0) as u64,
                size: batch.watermark.max(since).max(0) as u64,
                reader_state: Some(reason.to_state()),
                ..Cursor::default()
            };
            store.write(|w| save_cursor_only(w, &key, agent, &cursor))?;
            report.skipped = Some(skip_text(&reason));
            continue;
        }
        let stats = batch.stats();
        let watermark = batch.watermark.max(since).max(0) as u64;
        // Folded and redacted before the write lock is taken (see `crate::records`).
        let prepared: Vec<Prepared> = batch
            .sessions
            .iter_mut()
            .map(|s| Prepared::new(std::mem::take(&mut s.records)))
            .collect();
        let applied = store.write(|w| {
            w.expect_cursor(&key, &mark)?;
            let mut total = crate::store::Applied::default();
            let mut first_sid = None;
            for (s, p) in batch.sessions.into_iter().zip(prepared) {
                let id = w.upsert_session(&s.session, &s.meta, &Standard)?;
                if lifted {
                    w.clear_session(id)?;
                    w.upsert_session(&s.session, &s.meta, &Standard)?;
                }
                first_sid.get_or_insert(id);
                let a = w.apply_prepared(id, p)?;
                total.inserted += a.inserted;
                total.merged += a.merged;
            }
            let cursor = Cursor {
                session_id: first_sid,
                offset: watermark,
                size: watermark,
                ..Cursor::default()
            };
            w.save_cursor(&key, agent, &cursor, &stats, now_ms(), &Standard)?;
            Ok(total)
        });
        let applied = match applied {
            // Another process took this session's changes meanwhile.
            Err(Error::Superseded) => continue,
            other => other?,
        };
        report.session.get_or_insert(sid);
        report.unchanged = false;
        report.inserted += applied.inserted;
        report.updated += applied.merged;
        report.stats.add(stats);
    }
    Ok(report)
}

/// Largest whole-file (document) source read; larger ones are refused with an error.
pub const MAX_DOC_BYTES: u64 = 256 * 1024 * 1024;

/// The rate (bytes per second) at which a whole-file source is assumed to be read, parsed,
/// redacted and stored when an ingest with a deadline decides whether it can take it: below
/// every rate measured, so that the estimate errs towards leaving a file to the background.
/// Measured (docs/benchmarks.md, "Hooks on large whole-file sources"): 27-38 MB/s on a quiet
/// machine (VS Code chat sessions and Gemini legacy JSON of 26 and 255 MB), about 10 MB/s on
/// a loaded one.
pub const DOC_BYTES_PER_SEC: u64 = 8 * 1024 * 1024;

/// The time an ingest is assumed to need for a whole-file source of `bytes` bytes, at
/// [`DOC_BYTES_PER_SEC`] (3 MB: 0.36 s; 26 MB: 3.1 s).
pub fn doc_parse_estimate(bytes: u64) -> std::time::Duration {
    std::time::Duration::from_secs_f64(bytes as f64 / DOC_BYTES_PER_SEC as f64)
}

/// All of `r` (`size`: the bytes expected, for the first allocation) when it holds at most
/// `cap` bytes; `None` when it holds more (then at most `cap` + 64 KiB are read, in reads of
/// whole multiples of 8 bytes, as `/proc/self/pagemap` wants).
///
/// Errors: the reader's.
pub fn read_capped(r: impl Read, size: u64, cap: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::with_capacity(size.min(cap) as usize);
    r.take(cap + 64 * 1024).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= cap).then_some(bytes))
}

/// Ingest a whole-file source: when its content changed since the last ingest, parse it whole
/// and replace the session's messages with what it holds now, in one transaction. With a
/// `deadline` that the parse would pass ([`doc_parse_estimate`] of the file's size against
/// the time left), the file is not read: the report says `deferred` (a hook then leaves it to
/// a process without a deadline).
fn ingest_doc(
    store: &mut Store,
    agent: Agent,
    path: &Path,
    mut reader: Box<dyn memtrail_adapters::DocReader>,
    deadline: Option<Instant>,
) -> Result<IngestReport> {
    let key = path.to_string_lossy().to_string();
    let mut file = open_regular(path)?;
    let st = file_state(&file)?;
    let mut stored = store.cursor(&key)?;
    // The cursor as found: the write below commits only if it is still so (not moved by
    // another process, not marked by a delete that ran meanwhile).
    let mark = stored.as_ref().map(Cursor::mark);
    let mut report = IngestReport::default();
    match skip_marker(stored.as_ref())? {
        Some((reason, true)) => {
            let c = stored.as_ref().expect("a marker comes from a cursor");
            if st.left_at(c.offset, c.dev, c.ino, c.mtime_ns) {
                report.unchanged = true;
                report.skipped = Some(skip_text(&reason));
                return Ok(report);
            }
            let sid = c.session_id;
            skip_to_end(store, agent, &key, &st, sid, &reason, &mark, &mut report)?;
            return Ok(report);
        }
        // No longer excluded: read it again as if it were new (its stored messages replaced).
        Some((_, false)) => {
            if let Some(c) = stored.as_mut() {
                c.head_hash = None;
                c.mtime_ns = None;
            }
        }
        None => {}
    }
    if let Some(c) = &stored
        && st.left_at(c.offset, c.dev, c.ino, c.mtime_ns)
        && st.mtime_ns.is_some()
    {
        report.unchanged = true;
        return Ok(report);
    }
    if st.size > MAX_DOC_BYTES {
        return Err(Error::Invalid(format!(
            "{} is larger than {MAX_DOC_BYTES} bytes; not read",
            path.display()
        )));
    }
    // Checked before anything is read: reading and hashing a large file is itself a cost.
    if let Some(d) = deadline
        && Instant::now() + doc_parse_estimate(st.size) > d
    {
        report.session = memtrail_adapters::identify(agent, path)
            .ok()
            .map(|r| r.external_id);
        report.incomplete = true;
        report.deferred = true;
        return Ok(report);
    }
    // The size checked above is the file's when opened: it may grow while it is read, or say
    // less than it holds (a link to a `/proc` file: `pagemap` gives 256 GB to a reader, its
    // size 0).
    let Some(bytes) = read_capped(&mut file, st.size, MAX_DOC_BYTES)? else {
        return Err(Error::Invalid(format!(
            "{} is larger than {MAX_DOC_BYTES} bytes; not read",
            path.display()
        )));
    };
    let hash = blake3::hash(&bytes).to_hex().to_string();
    let sref = memtrail_adapters::identify(agent, path)?;
    report.session = Some(sref.external_id.clone());
    if stored.is_none()
        && let Some(reason) = deleted_parent(store, &sref)?
    {
        skip_to_end(store, agent, &key, &st, None, &reason, &mark, &mut report)?;
        return Ok(report);
    }
    let cursor = Cursor {
        session_id: None,
        offset: bytes.len() as u64,
        size: bytes.len() as u64,
        dev: st.dev,
        ino: st.ino,
        mtime_ns: st.mtime_ns,
        head_len: bytes.len() as u64,
        head_hash: Some(hash.clone()),
        reader_state: None,
        tail_len: 0,
        tail_hash: None,
    };
    if stored.as_ref().and_then(|c| c.head_hash.as_deref()) == Some(hash.as_str()) {
        // Touched but not changed: remember the new identity, nothing else.
        let cursor = Cursor {
            session_id: stored.as_ref().and_then(|c| c.session_id),
            ..cursor
        };
        let saved = store.write(|w| {
            w.expect_cursor(&key, &mark)?;
            save_cursor_only(w, &key, agent, &cursor)
        });
        match saved {
            Ok(()) | Err(Error::Superseded) => {}
            Err(e) => return Err(e),
        }
        report.unchanged = true;
        return Ok(report);
    }
    let mut batch = Batch::default();
    reader.read(&bytes, &mut batch);
    let stats = batch.stats;
    if batch.records.is_empty() && stats.malformed > 0 {
        // Caught mid-rewrite (these files are rewritten in place, not atomically): keep what
        // is stored and read it again next time.
        return Err(Error::Invalid(format!(
            "{} does not parse (being written?); left for the next ingest",
            path.display()
        )));
    }
    let project = match batch.meta.project_dir.clone() {
        Some(p) => Some(p),
        None => match stored_project(store, &sref)? {
            Some(p) => Some(p),
            None => {
                batch.meta.project_dir = known_project(store, agent, path)?;
                batch.meta.project_dir.clone()
            }
        },
    };
    if let Some(project) = project
        && Privacy::load()?.excluded(&project).is_some()
    {
        let sid = stored.as_ref().and_then(|c| c.session_id);
        skip_to_end(
            store,
            agent,
            &key,
            &st,
            sid,
            &SkipReason::Excluded { project },
            &mark,
            &mut report,
        )?;
        return Ok(report);
    }
    let had = stored.is_some();
    // Folded and redacted before the write lock is taken (see `crate::records`).
    let prepared = Prepared::new(batch.records);
    let applied = store.write(|w| {
        w.expect_cursor(&key, &mark)?;
        let sid = w.upsert_session(&sref, &batch.meta, &Standard)?;
        let before = if had { w.clear_session(sid)? } else { 0 };
        if had {
            w.reset_source_counters(&key)?;
            w.upsert_session(&sref, &batch.meta, &Standard)?;
        }
        let applied = w.apply_prepared(sid, prepared)?;
        let cursor = Cursor {
            session_id: Some(sid),
            ..cursor
        };
        w.save_cursor(&key, agent, &cursor, &stats, now_ms(), &Standard)?;
        Ok((applied, before))
    });
    let applied = match applied {
        Err(Error::Superseded) => {
            report.unchanged = true;
            return Ok(report);
        }
        other => other?,
    };
    let (applied, before) = applied;
    // Messages that were there before and still are count as updated, not new.
    report.inserted = applied.inserted.saturating_sub(before);
    report.updated = applied.inserted.min(before);
    report.reread = had;
    report.bytes = bytes.len() as u64;
    report.stats = stats;
    Ok(report)
}

fn ingest_lines(
    store: &mut Store,
    agent: Agent,
    path: &Path,
    reader: Box<dyn memtrail_adapters::LineReader>,
    deadline: Option<Instant>,
    at_rest: bool,
) -> Result<IngestReport> {
    let key = path.to_string_lossy().to_string();
    let mut file = open_regular(path)?;
    let st = file_state(&file)?;
    let stored = store.cursor(&key)?;
    // The cursor as this ingest found it; each step commits only if it is still there, so two
    // processes reading the same file at once never apply the same lines twice, and a step
    // that waited for the write lock while `sessions delete` marked the cursor stands down.
    let mark = stored.as_ref().map(Cursor::mark);
    let mut report = IngestReport::default();

    let mut reread = false;
    let mut start = 0u64;
    match skip_marker(stored.as_ref())? {
        Some((reason, true)) => {
            let c = stored.as_ref().expect("a marker comes from a cursor");
            if st.left_at(c.offset, c.dev, c.ino, c.mtime_ns) {
                report.unchanged = true;
                report.skipped = Some(skip_text(&reason));
                return Ok(report);
            }
            let sid = c.session_id;
            skip_to_end(store, agent, &key, &st, sid, &reason, &mark, &mut report)?;
            return Ok(report);
        }
        // No longer excluded: read the whole file again (what was stored before is replaced).
        Some((_, false)) => reread = true,
        None => {}
    }
    if let Some(c) = stored.as_ref().filter(|_| !reread) {
        // Fast path: same file, same size and modification time as at the last ingest.
        if st.left_at(c.offset, c.dev, c.ino, c.mtime_ns) && st.mtime_ns.is_some() {
            report.unchanged = true;
            return Ok(report);
        }
        let replaced = matches!((c.dev, c.ino, st.dev, st.ino), (Some(a), Some(b), Some(x), Some(y)) if (a, b) != (x, y));
        let shrunk = st.size < c.offset;
        let head_changed = !shrunk
            && c.head_len > 0
            && c.head_hash.as_deref() != Some(head_hash(&mut file, c.head_len)?.as_str());
        // The bytes just before the cursor: catches a file truncated and regrown past its head.
        let tail_changed = !shrunk
            && !head_changed
            && c.tail_len > 0
            && c.tail_len <= c.offset
            && c.tail_hash.as_deref()
                != Some(hash_range(&mut file, c.offset - c.tail_len, c.tail_len)?.as_str());
        if replaced || shrunk || head_changed || tail_changed {
            reread = true;
        } else {
            start = c.offset;
        }
        if !reread && st.size == c.offset {
            report.unchanged = true;
            return Ok(report);
        }
    }
    report.reread = reread;

    let sref = memtrail_adapters::identify(agent, path)?;
    report.session = Some(sref.external_id.clone());
    if stored.is_none()
        && let Some(reason) = deleted_parent(store, &sref)?
    {
        skip_to_end(store, agent, &key, &st, None, &reason, &mark, &mut report)?;
        return Ok(report);
    }
    // Read before anything is written: a config that does not parse stores nothing.
    let privacy = Privacy::load()?;
    let mut steps = LineSteps::new(
        file,
        reader,
        &st,
        reread,
        at_rest,
        deadline,
        privacy.clone(),
    );
    if start > 0 {
        match stored.as_ref().and_then(|c| c.reader_state.as_ref()) {
            Some(state) => steps.reader.restore_state(state),
            // A stateful reader (ids that depend on the position, e.g. Cursor's line numbers)
            // cannot start mid-file without its state: read the file again from the start.
            None if steps.reader.save_state().is_some() => {
                start = 0;
                reread = true;
                report.reread = true;
            }
            None => {}
        }
    }
    steps.start_at(start, reread)?;
    let file = Opened {
        key,
        st,
        sref,
        privacy,
    };
    let session_row = stored.as_ref().and_then(|c| c.session_id);
    let mut next = || steps.next_step();
    apply_steps(
        store,
        agent,
        path,
        &file,
        Resume {
            mark,
            session_row,
            start,
            reread,
        },
        deadline,
        &mut report,
        &mut next,
    )?;
    Ok(report)
}

/// A line transcript opened and identified without the store: what [`ingest_new_lines`] needs
/// besides its steps. Made by [`open_new_lines`] on `memtrail import`'s reading thread.
pub(crate) struct Opened {
    /// The cursor key (the path as text).
    key: String,
    st: FileState,
    sref: memtrail_adapters::SessionRef,
    privacy: Privacy,
}

/// Where [`apply_steps`] begins: the cursor as found, and the file offset of the first step.
struct Resume {
    mark: Option<CursorMark>,
    session_row: Option<i64>,
    start: u64,
    reread: bool,
}

/// One step of a line transcript, read and prepared without the store ([`LineSteps`]): at most
/// [`STEP_LINES`] lines, applied in one write transaction.
pub(crate) struct Step {
    /// The file offset after the step (a line start, or the end of a whole last value).
    new_offset: u64,
    /// What the step writes, when it advanced the cursor (or is the first of a re-read).
    write: Option<StepWrite>,
    /// The project of the line that ended the step because it is excluded.
    excluded_at: Option<String>,
    /// The deadline passed inside the step.
    timed_out: bool,
}

/// The records and the cursor fields of one [`Step`].
struct StepWrite {
    head_len: u64,
    head: Option<String>,
    tail_len: u64,
    tail: Option<String>,
    stats: ParseStats,
    meta: SessionMeta,
    /// Folded and redacted (see `crate::records`).
    prepared: Prepared,
    /// The reader's state after the step ([`memtrail_adapters::LineReader::save_state`]).
    reader_state: Option<serde_json::Value>,
}

/// Reads a line transcript step by step: complete lines from the cursor on, parsed by the
/// agent's reader, exclusion decided per line, records folded and redacted. Touches no store,
/// so `memtrail import` runs it on a thread of its own while the store is written.
pub(crate) struct LineSteps {
    file: File,
    reader: Box<dyn memtrail_adapters::LineReader>,
    at_rest: bool,
    deadline: Option<Instant>,
    privacy: Privacy,
    /// The last project seen and found not excluded.
    checked_project: Option<String>,
    /// True while no step has been handed out yet on a re-read (its first step always writes).
    reset_pending: bool,
    /// The file position of `buf[0]`, always a line start (the cursor never points into a line).
    offset: u64,
    buf: Vec<u8>,
    /// Bytes at the start of `buf` known to hold no '\n'.
    scanned: usize,
    /// While an over-long line is skipped, `buf` is empty and this counts the bytes of it
    /// dropped so far: memory stays below MAX_LINE_BYTES + CHUNK_BYTES.
    skip: Option<u64>,
    /// True when the last step stopped at STEP_LINES with complete lines still in `buf`.
    pending: bool,
    /// True once a '\n' was added after the file's last, whole, value (`at_rest`).
    tail_nl: bool,
    eof: bool,
    /// Bytes still to read: up to the size the file had when this ingest began.
    left: u64,
    size: u64,
    done: bool,
    /// The agent, when each step also computes its new messages' rows ([`Prepared::with_fresh`]:
    /// `memtrail import`'s reading thread); `None` on the hooks' path.
    fresh_for: Option<Agent>,
}

impl LineSteps {
    fn new(
        file: File,
        reader: Box<dyn memtrail_adapters::LineReader>,
        st: &FileState,
        reread: bool,
        at_rest: bool,
        deadline: Option<Instant>,
        privacy: Privacy,
    ) -> LineSteps {
        LineSteps {
            file,
            reader,
            at_rest,
            deadline,
            privacy,
            checked_project: None,
            reset_pending: reread,
            offset: 0,
            buf: Vec::new(),
            scanned: 0,
            skip: None,
            pending: false,
            tail_nl: false,
            eof: false,
            left: st.size,
            size: st.size,
            done: false,
            fresh_for: None,
        }
    }

    /// Read from `start` on (a line start); `reread` when the file is read again from its start.
    fn start_at(&mut self, start: u64, reread: bool) -> std::io::Result<()> {
        self.file.seek(SeekFrom::Start(start))?;
        self.offset = start;
        self.left = self.size.saturating_sub(start);
        self.reset_pending = reread;
        Ok(())
    }

    /// The next step, or `None` at the end of what the file held when the ingest began (or
    /// of its last complete line). Errors: the file cannot be read.
    pub(crate) fn next_step(&mut self) -> Result<Option<Step>> {
        loop {
            if self.done {
                return Ok(None);
            }
            if let Some(step) = self.step()? {
                return Ok(Some(step));
            }
        }
    }

    /// One pass: `None` when it only moved through an over-long line (nothing to hand out).
    fn step(&mut self) -> Result<Option<Step>> {
        if !self.pending {
            self.eof = fill(&mut self.file, &mut self.buf, CHUNK_BYTES, &mut self.left)?;
        }
        let mut batch = Batch::default();
        // Bytes of an over-long line that ended in this step (they precede `buf`).
        let mut skipped_line = 0u64;
        if let Some(dropped) = self.skip {
            match memchr(b'\n', &self.buf) {
                Some(i) => {
                    self.buf.drain(..=i);
                    skipped_line = dropped + i as u64 + 1;
                    self.skip = None;
                    self.scanned = 0;
                    batch.stats.lines += 1;
                    batch.stats.malformed += 1;
                }
                None => {
                    // Still inside the line: drop what was read, keep nothing.
                    self.skip = Some(dropped + self.buf.len() as u64);
                    self.buf.clear();
                    if self.eof {
                        // The line is not finished yet: the cursor stays at its start.
                        self.done = true;
                    } else if self.deadline.is_some_and(|d| Instant::now() >= d) {
                        // A line of gigabytes is not read to its end past a hook's deadline:
                        // the cursor stays at its start, and an import (no deadline) skips it.
                        self.done = true;
                        return Ok(Some(Step {
                            new_offset: self.offset,
                            write: None,
                            timed_out: true,
                            excluded_at: None,
                        }));
                    }
                    return Ok(None);
                }
            }
        }
        let buf = &mut self.buf;
        let reader = &mut self.reader;
        // Only complete lines; everything after the last '\n' waits.
        let mut complete = match memchr_last(b'\n', &buf[self.scanned.min(buf.len())..]) {
            Some(i) => self.scanned + i + 1,
            None => 0,
        };
        if self.at_rest
            && self.eof
            && !self.tail_nl
            && self.skip.is_none()
            && is_whole_json(&buf[complete..])
        {
            // The file at rest ends with a whole value without its '\n': read it as a line
            // (the '\n' added here is not in the file, and not counted in the cursor).
            buf.push(b'\n');
            self.tail_nl = true;
            complete = buf.len();
        }
        let mut timed_out;
        let mut pos;
        let mut count;
        let mut excluded_at: Option<String> = None;
        // Exclusion is decided per message: the line whose project (`cwd`) is first seen
        // excluded ends the step, and the step is parsed again up to it (the reader may have
        // merged that line into a record of an earlier one), then the cursor skips the rest.
        let stats_before = batch.stats;
        let state_before = reader.save_state();
        let mut limit = complete;
        loop {
            (pos, count, timed_out) = (0usize, 0u32, false);
            let mut cut = None;
            while pos < limit {
                let end = pos + memchr(b'\n', &buf[pos..limit]).expect("complete ends with \\n");
                let line = &buf[pos..end];
                if line.len() > MAX_LINE_BYTES {
                    batch.stats.lines += 1;
                    batch.stats.malformed += 1;
                } else if !line.iter().all(u8::is_ascii_whitespace) {
                    reader.line(line, &mut batch);
                    if excluded_at.is_none()
                        && let Some(p) = batch.meta.project_dir.as_deref()
                        && self.checked_project.as_deref() != Some(p)
                    {
                        if self.privacy.excluded(p).is_some() {
                            cut = Some((pos, p.to_string()));
                            break;
                        }
                        self.checked_project = Some(p.to_string());
                    }
                }
                pos = end + 1;
                count += 1;
                if count as usize >= STEP_LINES {
                    // The rest of the chunk goes in the next transaction.
                    break;
                }
                if count.is_multiple_of(256) && self.deadline.is_some_and(|d| Instant::now() >= d) {
                    timed_out = true;
                    break;
                }
            }
            let Some((at, project)) = cut else { break };
            limit = at;
            excluded_at = Some(project);
            batch = Batch {
                stats: stats_before,
                ..Batch::default()
            };
            reader.finish(&mut Batch::default());
            if let Some(state) = &state_before {
                reader.restore_state(state);
            }
        }
        let consumed = pos;
        reader.finish(&mut batch);

        // The '\n' added after a whole last value is not in the file.
        let added = u64::from(self.tail_nl && consumed == buf.len());
        let new_offset = self.offset + skipped_line + consumed as u64 - added;
        let mut write = None;
        if new_offset > self.offset || self.reset_pending {
            let head_len = new_offset.min(HEAD_BYTES);
            let tail_len = new_offset.min(HEAD_BYTES);
            let at = self.file.stream_position()?;
            let head = if head_len > 0 {
                Some(head_hash(&mut self.file, head_len)?)
            } else {
                None
            };
            let tail = if tail_len > 0 {
                Some(hash_range(&mut self.file, new_offset - tail_len, tail_len)?)
            } else {
                None
            };
            self.file.seek(SeekFrom::Start(at))?;
            self.reset_pending = false;
            write = Some(StepWrite {
                head_len,
                head,
                tail_len,
                tail,
                stats: batch.stats,
                meta: batch.meta,
                prepared: match self.fresh_for {
                    Some(agent) => Prepared::with_fresh(batch.records, Standard, agent)?,
                    None => Prepared::new(batch.records),
                },
                reader_state: self.reader.save_state(),
            });
        }
        let step = Step {
            new_offset,
            write,
            timed_out,
            excluded_at,
        };
        if step.excluded_at.is_some() {
            // The rest of the file is skipped.
            self.done = true;
            return Ok(Some(step));
        }
        self.offset = new_offset;
        self.buf.drain(..consumed);
        // Lines left in the buffer (a step cut short) are scanned again.
        self.scanned = if pos < complete { 0 } else { self.buf.len() };
        self.pending = pos < complete;
        if !self.pending {
            if self.skip.is_none() && self.buf.len() > MAX_LINE_BYTES {
                // An unfinished line already over the limit: stop holding it (and its memory).
                self.skip = Some(self.buf.len() as u64);
                self.buf = Vec::new();
                self.scanned = 0;
            } else if self.eof {
                self.done = true;
            }
        }
        Ok(Some(step))
    }
}

/// Apply the steps `next` hands out to the store, in order, each in one write transaction with
/// the advanced cursor; stop at an excluded project (the cursor then skips to the end), when
/// another process moved the cursor meanwhile, or once `deadline` has passed.
#[allow(clippy::too_many_arguments)]
fn apply_steps(
    store: &mut Store,
    agent: Agent,
    path: &Path,
    file: &Opened,
    resume: Resume,
    deadline: Option<Instant>,
    report: &mut IngestReport,
    next: &mut dyn FnMut() -> Result<Option<Step>>,
) -> Result<()> {
    let Opened {
        key,
        st,
        sref,
        privacy,
    } = file;
    let Resume {
        mut mark,
        mut session_row,
        start,
        reread,
    } = resume;
    let st = *st;
    let mut first_step = true;
    // The last project found not excluded.
    let mut checked_project: Option<String> = None;
    let mut offset = start;
    while let Some(step) = next()? {
        let new_offset = step.new_offset;
        if let Some(w) = step.write {
            let mut meta = w.meta;
            if step.excluded_at.is_none() {
                // The project a reader sets only at `finish` (from the transcript's path), or
                // the one stored for the session.
                let project = match meta.project_dir.clone() {
                    Some(p) => Some(p),
                    None => match stored_project(store, sref)? {
                        Some(p) => Some(p),
                        None => {
                            meta.project_dir = known_project(store, agent, path)?;
                            meta.project_dir.clone()
                        }
                    },
                };
                if let Some(project) = project
                    && checked_project.as_deref() != Some(project.as_str())
                {
                    checked_project = Some(project.clone());
                    if privacy.excluded(&project).is_some() {
                        let reason = SkipReason::Excluded { project };
                        let sid = session_row;
                        skip_to_end(store, agent, key, &st, sid, &reason, &mark, report)?;
                        return Ok(());
                    }
                }
            }
            let do_reset = reread && first_step;
            let new_mark = (new_offset, w.head.clone(), false);
            let stats = w.stats;
            let applied = store.write(|wr| {
                wr.expect_cursor(key, &mark)?;
                let sid = wr.upsert_session(sref, &meta, &Standard)?;
                if do_reset {
                    // Read again from the start (the file shrank, was replaced or rewritten,
                    // or its project is no longer excluded). What is stored stays: messages
                    // the file still holds merge into their stored copies by id, and only a
                    // rewind the transcript records (Gemini `$rewindTo`) deletes any.
                    wr.reset_source_counters(key)?;
                }
                let applied = wr.apply_prepared(sid, w.prepared)?;
                let cursor = Cursor {
                    session_id: Some(sid),
                    offset: new_offset,
                    size: st.size.max(new_offset),
                    dev: st.dev,
                    ino: st.ino,
                    mtime_ns: st.mtime_ns,
                    head_len: w.head_len,
                    head_hash: w.head,
                    reader_state: w.reader_state,
                    tail_len: w.tail_len,
                    tail_hash: w.tail,
                };
                wr.save_cursor(key, agent, &cursor, &stats, now_ms(), &Standard)?;
                Ok((applied, sid))
            });
            let applied = match applied {
                Ok((a, sid)) => {
                    session_row = Some(sid);
                    a
                }
                Err(Error::Superseded) => {
                    // Another process is ahead on this file: what it committed stands.
                    report.incomplete = false;
                    break;
                }
                Err(e) => return Err(e),
            };
            mark = Some(new_mark);
            first_step = false;
            report.inserted += applied.inserted;
            report.updated += applied.merged + applied.results;
            report.stats.add(stats);
            report.bytes += new_offset - offset;
        }
        if let Some(project) = step.excluded_at {
            let reason = SkipReason::Excluded { project };
            skip_to_end(store, agent, key, &st, session_row, &reason, &mark, report)?;
            return Ok(());
        }
        offset = new_offset;
        if step.timed_out || deadline.is_some_and(|d| Instant::now() >= d) {
            report.incomplete = offset < st.size;
            break;
        }
    }
    Ok(())
}

/// For `memtrail import`'s reading thread: open the line transcript at `path` of `agent`,
/// identify its session and load the privacy settings, all without the store. `None` when
/// the file is not a line transcript or any of this fails: the import then ingests it the
/// ordinary way ([`ingest_at_rest`]), which reports the failure as it always does.
pub(crate) fn open_new_lines(agent: Agent, path: &Path) -> Option<(Opened, LineSteps)> {
    let Some(Source::Lines(reader)) = memtrail_adapters::source_for(agent, path) else {
        return None;
    };
    let file = open_regular(path).ok()?;
    let st = file_state(&file).ok()?;
    let sref = memtrail_adapters::identify(agent, path).ok()?;
    let privacy = Privacy::load().ok()?;
    let mut steps = LineSteps::new(file, reader, &st, false, true, None, privacy.clone());
    steps.fresh_for = Some(agent);
    let key = path.to_string_lossy().to_string();
    Some((
        Opened {
            key,
            st,
            sref,
            privacy,
        },
        steps,
    ))
}

/// What [`ingest_new_lines`] knows of delete markers across the files of one import: the
/// store's `data_version` when no cursor held one ([`Store::no_deleted_markers`]). The import
/// itself writes a delete marker only for a session whose parent already has one, so the
/// knowledge holds until another connection commits.
#[derive(Debug, Default)]
pub(crate) struct NoDeleted(Option<i64>);

/// Ingest a line transcript opened by [`open_new_lines`] whose steps `next` hands out, as
/// [`ingest_at_rest`] would: `None` (nothing written) when the store has a cursor for it by
/// now (a hook came first, or the path was listed twice), so that the caller ingests it the
/// ordinary way.
///
/// Errors: as [`ingest_file`].
pub(crate) fn ingest_new_lines(
    store: &mut Store,
    agent: Agent,
    path: &Path,
    file: &Opened,
    no_deleted: &mut NoDeleted,
    next: &mut dyn FnMut() -> Result<Option<Step>>,
) -> Result<Option<IngestReport>> {
    if store.cursor(&file.key)?.is_some() {
        return Ok(None);
    }
    let mut report = IngestReport {
        session: Some(file.sref.external_id.clone()),
        ..Default::default()
    };
    let none_deleted = match no_deleted.0 {
        Some(v) if store.unchanged_since_version(v)? => true,
        _ => {
            no_deleted.0 = store.no_deleted_markers()?;
            no_deleted.0.is_some()
        }
    };
    if none_deleted {
        // No session was deleted: nothing to look up for this one (one scan of the cursors
        // per file made a first import quadratic in its files).
    } else if let Some(reason) = deleted_parent(store, &file.sref)? {
        skip_to_end(
            store,
            agent,
            &file.key,
            &file.st,
            None,
            &reason,
            &None,
            &mut report,
        )?;
        return Ok(Some(report));
    }
    let resume = Resume {
        mark: None,
        session_row: None,
        start: 0,
        reread: false,
    };
    apply_steps(store, agent, path, file, resume, None, &mut report, next)?;
    Ok(Some(report))
}

/// Append up to `want` bytes of `file` to `buf`, but no more than `left` (the bytes the file
/// had when this ingest began and that are not read yet; decreased by what was read). True at
/// the end: `left` is spent or the file ended. Bounding reads by the size seen at the start
/// keeps one ingest from chasing a file that its agent keeps appending to.
fn fill(file: &mut File, buf: &mut Vec<u8>, want: usize, left: &mut u64) -> std::io::Result<bool> {
    let want = want.min(usize::try_from(*left).unwrap_or(usize::MAX));
    if want == 0 {
        return Ok(true);
    }
    let old = buf.len();
    let target = old + want;
    if buf.capacity() < target {
        // Doubling, but never far past the longest line kept (MAX_LINE_BYTES + a chunk).
        let limit = (MAX_LINE_BYTES + 2 * CHUNK_BYTES).max(target);
        let grown = (buf.capacity() * 2).clamp(target, limit);
        buf.reserve_exact(grown - old);
    }
    buf.resize(target, 0);
    let mut got = 0usize;
    let result = loop {
        if got == want {
            break Ok(());
        }
        match file.read(&mut buf[old + got..]) {
            Ok(0) => break Ok(()),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    buf.truncate(old + got);
    result?;
    *left -= got as u64;
    Ok(got < want || *left == 0)
}

/// How far back [`pending_tails`] looks at every transcript ingested: 24 hours, in ms.
pub const TAIL_RECENT_MS: i64 = 24 * 3600 * 1000;

/// A transcript whose last line has no `\n` yet, as [`pending_tails`] finds it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PendingTail {
    /// The transcript (a path).
    pub path: String,
    /// Its agent (`claude`, `codex`, …).
    pub agent: String,
    /// Bytes after the cursor (the unfinished last line).
    pub bytes: u64,
}

/// The line transcripts (JSONL) that end, after their cursor, in a line without its `\n`:
/// an agent still writing it, or a copy made by another tool. Hooks wait for the `\n`;
/// [`ingest_at_rest`] (`memtrail import`, a hook at the session's end) reads the line when it
/// is one whole JSON value. Files that grew by complete lines are not listed (the next hook or
/// import reads them). Looks at most 1 MiB past each cursor; a transcript that cannot be read
/// is left out.
///
/// Only the files that can have such a line are looked at ([`Store::tail_candidates`]): those
/// whose last ingest stopped before their end, and those that had been modified in the last
/// [`TAIL_RECENT_MS`] (24 hours) when last ingested. A file at rest since before that, read
/// whole, that gained an unfinished line with no ingest after it is not listed (an agent
/// writing to a session fires its hooks; `memtrail import` reads it): one `stat` per recently
/// written transcript, not one per transcript ever read (12,105 for the 1 GB bench store), and
/// none for the years of old transcripts a first import reads.
///
/// Errors: a store error reading the cursors.
pub fn pending_tails(store: &Store) -> Result<Vec<PendingTail>> {
    Ok(pending_tails_of(
        store.tail_candidates(tail_recent_since(now_ms()))?,
    ))
}

/// The cutoff [`pending_tails`] passes to [`Store::tail_candidates`] (or
/// [`Store::read_files_and_tail_candidates`]) at `now_ms`.
pub fn tail_recent_since(now_ms: i64) -> i64 {
    now_ms.saturating_sub(TAIL_RECENT_MS)
}

/// The second half of [`pending_tails`]: which of the candidates (path, agent, offset, from
/// [`Store::tail_candidates`]) end in an unfinished line.
pub fn pending_tails_of(rows: Vec<(String, String, i64)>) -> Vec<PendingTail> {
    let mut out = Vec::new();
    for (path, agent, offset) in rows {
        let Ok(a) = agent.parse::<Agent>() else {
            continue;
        };
        let p = Path::new(&path);
        let offset = offset.max(0) as u64;
        let Ok(md) = std::fs::metadata(p) else {
            continue;
        };
        if !md.is_file()
            || md.len() <= offset
            || !matches!(memtrail_adapters::source_for(a, p), Some(Source::Lines(_)))
        {
            continue;
        }
        let mut rest = Vec::new();
        let read = open_regular(p).and_then(|mut f| {
            f.seek(SeekFrom::Start(offset))?;
            f.take(1024 * 1024).read_to_end(&mut rest)
        });
        if read.is_ok() && !rest.is_empty() && memchr(b'\n', &rest).is_none() {
            out.push(PendingTail {
                path,
                agent,
                bytes: md.len() - offset,
            });
        }
    }
    out
}

/// True for a line (without its `\n`) that is exactly one JSON object or array, spaces
/// around it allowed: a last line that no more bytes can be part of.
fn is_whole_json(line: &[u8]) -> bool {
    let t = line.trim_ascii();
    matches!(t.first(), Some(b'{' | b'['))
        && line.len() <= MAX_LINE_BYTES
        && serde_json::from_slice::<serde::de::IgnoredAny>(t).is_ok()
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    memchr::memchr(needle, hay)
}

fn memchr_last(needle: u8, hay: &[u8]) -> Option<usize> {
    memchr::memrchr(needle, hay)
}
