//! `memtrail import`: ingest every transcript an agent left on this machine, through the same
//! code path as the hooks (so a re-run, or a hook after an import, adds nothing twice).

use crate::ingest::{NoDeleted, Opened, Step, ingest_at_rest, ingest_new_lines, open_new_lines};
use crate::store::Store;
use crate::{Result, now_ms};
use memtrail_adapters::Agent;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;

/// What was imported for one agent.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AgentImport {
    /// The agent (`claude`, `codex`, …).
    pub agent: String,
    /// Transcript files found (after the `since` filter).
    pub files: u64,
    /// Files that had new content.
    pub changed_files: u64,
    /// Sessions that received new messages.
    pub sessions: u64,
    /// Messages inserted.
    pub messages: u64,
    /// Stored messages updated (late blocks or tool results).
    pub updated: u64,
    /// Lines skipped (count): known non-content lines, unknown types, malformed lines.
    pub skipped_lines: u64,
    /// Of `skipped_lines`, lines of a type the reader does not know (count).
    pub unknown_lines: u64,
    /// Of `skipped_lines`, lines that are not valid JSON (count).
    pub malformed_lines: u64,
    /// The files that held them, with how many each (the first [`MALFORMED_FILES_LISTED`]).
    pub malformed_files: Vec<(String, u64)>,
    /// Bytes of transcript read.
    pub bytes: u64,
    /// Files whose reader panicked (caught; each is also in `unreadable`).
    pub panicked: u64,
    /// Files that could not be read, with the reason.
    pub unreadable: Vec<(String, String)>,
}

/// How many files with malformed lines an [`AgentImport`] names.
pub const MALFORMED_FILES_LISTED: usize = 20;

/// The result of an import.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportSummary {
    pub agents: Vec<AgentImport>,
    pub seconds: f64,
}

/// A progress notification.
pub enum Progress<'a> {
    /// The files of every agent were found: the total count and bytes.
    Found { files: u64, bytes: u64 },
    /// One file is done.
    File {
        agent: Agent,
        path: &'a std::path::Path,
        bytes: u64,
        new_messages: u64,
    },
}

/// Import the transcripts of `agents` modified at or after `since` (ms since the epoch).
///
/// A file that cannot be read, does not parse, or whose reader panics is reported in
/// [`AgentImport::unreadable`], never fatal; a store error (busy, full disk) stops the import
/// (everything committed before it stays, and a re-run continues from the cursors), and so does
/// a memtrail config that cannot be read ([`crate::privacy::Privacy::load`]): which projects to
/// keep out must be known before anything is read.
pub fn import(
    store: &mut Store,
    agents: &[Agent],
    since: Option<i64>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<ImportSummary> {
    import_with(store, agents, since, Pipeline::for_this_machine(), progress)
}

/// How [`import_with`] shares the work between threads. Both store exactly the same thing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pipeline {
    /// One thread reads, parses, redacts and writes each file in turn (what hooks do).
    Serial,
    /// A second thread reads, parses, folds and redacts the line transcripts that have no
    /// cursor yet, one step ([`crate::ingest::STEP_LINES`] lines) at a time, and hands the steps
    /// to this thread through a queue of at most [`READ_AHEAD_STEPS`]; this thread writes them
    /// (each step one transaction, as in `Serial`) and ingests every other file itself.
    ReadAhead,
}

impl Pipeline {
    /// `ReadAhead` when the machine has two cores or more, else `Serial`.
    pub fn for_this_machine() -> Pipeline {
        match std::thread::available_parallelism() {
            Ok(n) if n.get() >= 2 => Pipeline::ReadAhead,
            _ => Pipeline::Serial,
        }
    }
}

/// Most steps the reading thread of [`Pipeline::ReadAhead`] holds ready ahead of the writer
/// (each at most [`crate::ingest::CHUNK_BYTES`] of transcript plus its records).
pub const READ_AHEAD_STEPS: usize = 4;

/// [`import`] with the threads `pipeline` says.
///
/// Errors: as [`import`].
pub fn import_with(
    store: &mut Store,
    agents: &[Agent],
    since: Option<i64>,
    pipeline: Pipeline,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<ImportSummary> {
    let r = import_inner(store, agents, since, pipeline, progress);
    // The store may stay open for more (embedding the new messages): as a bulk writer, hooks
    // would leave its WAL to it all that time.
    store.end_bulk_writes();
    r
}

fn import_inner(
    store: &mut Store,
    agents: &[Agent],
    since: Option<i64>,
    pipeline: Pipeline,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<ImportSummary> {
    let t0 = Instant::now();
    crate::privacy::Privacy::load()?;
    type Found = (Agent, Vec<(PathBuf, std::fs::Metadata)>, AgentImport);
    let mut plan: Vec<Found> = Vec::new();
    let (mut total_files, mut total_bytes) = (0u64, 0u64);
    for &agent in agents {
        let mut rep = AgentImport {
            agent: agent.as_str().to_string(),
            ..Default::default()
        };
        let mut files = Vec::new();
        let mut discovered = memtrail_adapters::discover(agent);
        // An agent that keeps its transcripts in the projects themselves (Aider) is also looked
        // for in the folders of the sessions already stored.
        if let Some(in_projects) = agent.adapter().quirks().discover_in_projects
            && let Ok(found) = discovered.as_mut()
        {
            let more = in_projects(&store.known_projects()?);
            for p in more.files {
                if !found.files.contains(&p) {
                    found.files.push(p);
                }
            }
            found.unreadable.extend(more.unreadable);
        }
        match discovered {
            Ok(found) => {
                for (p, why) in found.unreadable {
                    rep.unreadable.push((p.display().to_string(), why));
                }
                for p in found.files {
                    match std::fs::metadata(&p) {
                        Ok(md) => {
                            let mtime = md
                                .modified()
                                .ok()
                                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                                .map(|d| d.as_millis() as i64)
                                .unwrap_or_else(now_ms);
                            if since.is_some_and(|s| mtime < s) {
                                continue;
                            }
                            total_bytes += md.len();
                            files.push((p, md));
                        }
                        Err(e) => rep
                            .unreadable
                            .push((p.display().to_string(), e.to_string())),
                    }
                }
            }
            Err(e) => rep.unreadable.push((
                format!("({} transcripts folder)", agent.display_name()),
                e.to_string(),
            )),
        }
        rep.files = files.len() as u64;
        total_files += rep.files;
        plan.push((agent, files, rep));
    }
    progress(Progress::Found {
        files: total_files,
        bytes: total_bytes,
    });
    let mut summary = ImportSummary::default();
    // Messages written since the full-text index last caught up (see `Store::catch_up_index`):
    // indexing them in batches of this many makes fewer, larger FTS5 segments than one per
    // ingest transaction.
    let mut unindexed = 0u64;
    // Files exactly as their cursors left them are passed over without being opened.
    let cursors = store.cursor_stats()?;
    // A large import is a bulk writer (larger cache and checkpoints, hooks leave its WAL to
    // it); a small one (a re-import of a few changed files) writes as a hook does.
    let to_read: u64 = plan
        .iter()
        .flat_map(|(_, files, _)| files)
        .filter(|(p, md)| {
            !cursors
                .get(p.to_string_lossy().as_ref())
                .is_some_and(|c| crate::ingest::unchanged_since(md, c))
        })
        .map(|(_, md)| md.len())
        .sum();
    if to_read >= BULK_IMPORT_BYTES {
        store.tune_for_bulk_writes()?;
    }
    // The files the reading thread reads ahead: those with no cursor (all of a first import),
    // in the import's order. The others are not handed across: a re-import that finds nothing
    // new starts no thread (one message per file was ~3 futex calls per file, most of the
    // system time of a no-op re-import of 12,104 files).
    let jobs: Vec<(Agent, PathBuf)> = plan
        .iter()
        .flat_map(|(agent, files, _)| {
            files
                .iter()
                .filter(|(p, _)| !cursors.contains_key(p.to_string_lossy().as_ref()))
                .map(|(p, _)| (*agent, p.clone()))
        })
        .collect();
    std::thread::scope(|scope| -> Result<()> {
        let ahead = match pipeline {
            _ if jobs.is_empty() => None,
            Pipeline::Serial => None,
            Pipeline::ReadAhead => {
                let (tx, rx) = std::sync::mpsc::sync_channel(READ_AHEAD_STEPS);
                scope.spawn(move || read_ahead(jobs, tx));
                Some(rx)
            }
        };
        let mut no_deleted = NoDeleted::default();
        for (agent, files, mut rep) in plan {
            let mut sessions = std::collections::HashSet::new();
            for (path, md) in files {
                let len = md.len();
                let cursor = cursors.get(path.to_string_lossy().as_ref());
                // What the reading thread made of a file with no cursor (it goes through them
                // in order).
                let opened = match (&ahead, cursor) {
                    (Some(rx), None) => match rx.recv() {
                        Ok(Ahead::Open(o)) => o,
                        _ => None,
                    },
                    _ => None,
                };
                let mut steps_left = opened.is_some();
                // A file with a cursor was not read ahead: nothing to drain.
                if cursor.is_some_and(|c| crate::ingest::unchanged_since(&md, c)) {
                    progress(Progress::File {
                        agent,
                        path: &path,
                        bytes: len,
                        new_messages: 0,
                    });
                    continue;
                }
                // A panic in one file's reader is caught and counted; the transaction it was in
                // is rolled back as it unwinds, and the import goes on with the next file.
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    fault_injection(&path);
                    if let (Some(o), Some(rx)) = (&opened, &ahead) {
                        let mut next = || match rx.recv() {
                            Ok(Ahead::Step(step)) => (*step).map(Some),
                            Ok(_) => {
                                steps_left = false;
                                Ok(None)
                            }
                            Err(_) => {
                                steps_left = false;
                                Err(crate::Error::Panicked(
                                    "the import's reading thread stopped".into(),
                                ))
                            }
                        };
                        if let Some(r) =
                            ingest_new_lines(store, agent, &path, o, &mut no_deleted, &mut next)?
                        {
                            return Ok(r);
                        }
                    }
                    ingest_at_rest(store, agent, &path, None, None)
                }))
                .unwrap_or_else(|p| Err(crate::Error::Panicked(panic_text(p.as_ref()))));
                if let (true, Some(rx)) = (steps_left, &ahead) {
                    drain(rx);
                }
                match result {
                    Ok(r) => {
                        if !r.unchanged && r.bytes > 0 {
                            rep.changed_files += 1;
                        }
                        if r.inserted > 0
                            && let Some(s) = &r.session
                        {
                            sessions.insert(s.clone());
                        }
                        // Only a speed-up for later snapshots: a failure is not the import's.
                        if r.inserted + r.updated > 0 {
                            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                keep_snapshot_state(store, agent, r.session.as_deref(), &path)
                            }));
                        }
                        rep.messages += r.inserted;
                        rep.updated += r.updated;
                        unindexed += r.inserted + r.updated;
                        if unindexed >= IMPORT_INDEX_EVERY {
                            store.catch_up_index_by(None, IMPORT_INDEX_EVERY as usize)?;
                            unindexed = 0;
                        }
                        rep.skipped_lines += r.stats.skipped();
                        rep.unknown_lines += r.stats.skipped_unknown;
                        rep.malformed_lines += r.stats.malformed;
                        if r.stats.malformed > 0
                            && rep.malformed_files.len() < MALFORMED_FILES_LISTED
                        {
                            rep.malformed_files
                                .push((path.display().to_string(), r.stats.malformed));
                        }
                        rep.bytes += r.bytes;
                        progress(Progress::File {
                            agent,
                            path: &path,
                            bytes: len,
                            new_messages: r.inserted,
                        });
                    }
                    Err(
                        e @ (crate::Error::Io(_)
                        | crate::Error::Panicked(_)
                        | crate::Error::Invalid(_)),
                    ) => {
                        if matches!(e, crate::Error::Panicked(_)) {
                            rep.panicked += 1;
                        }
                        rep.unreadable
                            .push((path.display().to_string(), e.to_string()));
                        progress(Progress::File {
                            agent,
                            path: &path,
                            bytes: len,
                            new_messages: 0,
                        });
                    }
                    Err(e) => return Err(e),
                }
            }
            rep.sessions = sessions.len() as u64;
            summary.agents.push(rep);
        }
        // Dropping the receiver here (also on an early return) stops the reading thread at
        // its next step.
        Ok(())
    })?;
    // Index what is still queued (a busy store leaves it to the next search).
    match store.catch_up_index_by(None, IMPORT_INDEX_EVERY as usize) {
        Ok(_) | Err(crate::Error::Busy { .. }) => {}
        Err(e) => return Err(e),
    }
    // A large import leaves the index in many segments: merge them once, so searches stay fast.
    let written: u64 = summary.agents.iter().map(|a| a.messages + a.updated).sum();
    if written >= IMPORT_OPTIMIZE_AFTER {
        match store.optimize_index() {
            Ok(()) | Err(crate::Error::Busy { .. }) => {}
            Err(e) => return Err(e),
        }
    } else if written > 0 {
        // A smaller import's catch-ups wrote segments: merge the small ones, one bounded step
        // (an optimisation: its errors are not the import's).
        let _ = store.tidy_index(crate::store::TIDY_BUDGET);
    }
    // Fold the WAL back into the database now rather than at some later hook's commit.
    let _ = store.checkpoint();
    summary.seconds = t0.elapsed().as_secs_f64();
    Ok(summary)
}

/// Bring the running snapshot state of the session a file holds up to its message before the
/// last, as the hooks do ([`crate::hook::SNAPSHOT_STATE_EVERY`]), so that the first compaction
/// of an imported session starts from a state instead of every event. Done per file, while its
/// events are still in the page cache; a busy store leaves it to the session's next hook.
fn keep_snapshot_state(
    store: &mut Store,
    agent: Agent,
    session: Option<&str>,
    path: &std::path::Path,
) -> Result<()> {
    let path = path.to_string_lossy();
    let Some(rowid) = crate::resume::session_of_event(store, agent, session, Some(&path))? else {
        return Ok(());
    };
    let every = crate::hook::SNAPSHOT_STATE_EVERY;
    let advanced = if store.snapshot_state_behind(rowid, every)? {
        store.write(|w| w.advance_snapshot_state(rowid, every))
    } else {
        Ok(false)
    };
    match advanced {
        Ok(_) | Err(crate::Error::Busy { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// How many messages an import must have written for it to merge the full-text index into one
/// segment at its end ([`Store::optimize_index`]).
pub const IMPORT_OPTIMIZE_AFTER: u64 = 20_000;

/// How many messages an import writes before it brings the full-text index up to date.
pub const IMPORT_INDEX_EVERY: u64 = 8000;

/// Bytes of transcripts to read (new or changed files, whole) from which an import writes as a
/// bulk writer ([`crate::store::Store::tune_for_bulk_writes`]).
pub const BULK_IMPORT_BYTES: u64 = 32 * 1024 * 1024;

/// What the reading thread of [`Pipeline::ReadAhead`] sends, per file with no cursor in the
/// import's order: `Open(None)` (the writer ingests the file itself), or `Open(Some(..))`, its
/// steps, `End`.
enum Ahead {
    Open(Option<Opened>),
    Step(Box<Result<Step>>),
    End,
}

/// The reading thread: for each file of `jobs` (agent, path: the files with no cursor) in
/// order, the file opened and its steps read, parsed and prepared (a panic in the agent's reader
/// is caught and sent as the step's error). Stops when the writer hangs up.
fn read_ahead(jobs: Vec<(Agent, PathBuf)>, tx: std::sync::mpsc::SyncSender<Ahead>) {
    for (agent, path) in jobs {
        let opened = std::panic::catch_unwind(|| open_new_lines(agent, &path))
            .ok()
            .flatten();
        let Some((o, mut steps)) = opened else {
            if tx.send(Ahead::Open(None)).is_err() {
                return;
            }
            continue;
        };
        if tx.send(Ahead::Open(Some(o))).is_err() {
            return;
        }
        loop {
            let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| steps.next_step()))
                .unwrap_or_else(|p| Err(crate::Error::Panicked(panic_text(p.as_ref()))));
            let (msg, last) = match step {
                Ok(Some(s)) => (Some(Ahead::Step(Box::new(Ok(s)))), false),
                Ok(None) => (None, true),
                Err(e) => (Some(Ahead::Step(Box::new(Err(e)))), true),
            };
            if let Some(m) = msg
                && tx.send(m).is_err()
            {
                return;
            }
            if last {
                break;
            }
        }
        if tx.send(Ahead::End).is_err() {
            return;
        }
    }
}

/// Receive and drop what the reading thread sends up to the end of the current file.
fn drain(rx: &std::sync::mpsc::Receiver<Ahead>) {
    while let Ok(m) = rx.recv() {
        if matches!(m, Ahead::End) {
            break;
        }
    }
}

/// The text of a caught panic's payload.
pub(crate) fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// Test builds only: `MEMTRAIL_FAULT_PANIC_PATH=<text>` makes the import panic on every file
/// whose path contains `<text>`, to check that a panicking reader is contained.
fn fault_injection(path: &std::path::Path) {
    if cfg!(debug_assertions)
        && let Ok(needle) = std::env::var("MEMTRAIL_FAULT_PANIC_PATH")
        && !needle.is_empty()
        && path.to_string_lossy().contains(&needle)
    {
        panic!(
            "fault injection (MEMTRAIL_FAULT_PANIC_PATH) on {}",
            path.display()
        );
    }
}
