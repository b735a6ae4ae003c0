//! A session's transcript that its agent finishes writing after the hooks that end the session
//! ([`memtrail_adapters::Quirks::written_after_session_end`]: GitHub Copilot CLI writes
//! `events.jsonl` asynchronously, at times whole at shutdown, after its `agentStop` and
//! `sessionEnd` hooks ran). Nothing of that session would call memtrail again, so its end's hook
//! starts `memtrail hook-settle` detached ([`spawn`]): it waits for the transcript to settle
//! ([`wait`]), then ingests it at rest and catches up the full-text index ([`run`]). Cline CLI
//! 3.x runs its hooks detached and may write a task's last answer while the task's `Stop` hook
//! reads the file ([`memtrail_adapters::Quirks::written_after_stop`]): that hook starts the same
//! wait, which ends when the file has been unchanged for [`QUIET`].
//!
//! The same process reads a whole-file source (Gemini legacy JSON, VS Code chat sessions, Cline
//! task files) that a hook left because parsing it would not fit in the hook's time left
//! ([`crate::ingest::IngestReport::deferred`]): it waits for the file to be unchanged for
//! [`QUIET`], then reads it without a deadline, again while the agent rewrote it meanwhile
//! ([`run`]), at a lower CPU and I/O priority; one such process reads a file at a time, one more waits
//! behind it ([`crate::pending::claim_worker`]), and at most
//! [`crate::pending::MAX_BACKGROUND_READS`] read at once, whatever the file
//! ([`crate::pending::read_slot`]).
//!
//! Like a hook it never opens a network connection, logs to the hook log, and never creates a
//! store: when the store is gone (a deleted sandbox) it does nothing. The hook also leaves the
//! transcript in [`crate::pending`] first, so if this process dies, the next hook of any session
//! still catches it up (or, for a whole-file source too large for it, starts this again).

use crate::ingest::{IngestReport, ingest_at_rest};
use crate::store::{Store, StoreLocation};
use crate::{Error, Result};
use memtrail_adapters::Agent;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Duration, Instant};

/// The longest [`run`] waits for a transcript to settle before it ingests what is there.
pub const MAX_WAIT: Duration = Duration::from_secs(30);
/// How long a transcript without its final record must stay unchanged (size and modification
/// time) to count as settled.
pub const QUIET: Duration = Duration::from_secs(2);
/// How often the transcript is looked at while waiting.
const POLL: Duration = Duration::from_millis(50);
/// How much of the transcript's end is read to find its last line (a longer last line is not
/// seen as final: the wait then ends by [`QUIET`]).
const TAIL_BYTES: u64 = 64 * 1024;
/// How long [`run`] waits for the store's write lock (then the ingest itself takes the time the
/// transcript needs).
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// How the wait for a transcript ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// Its last line is the agent's final record.
    Final,
    /// It exists and was unchanged for the quiet period.
    Quiet,
    /// The maximum wait ran out (it may not exist).
    TimedOut,
}

/// Wait until `path` ends with a line `is_final` accepts, or exists unchanged for `quiet`, or
/// `max` has passed, looking every 50 ms. A final line that was already there when the wait
/// began does not count (a resumed session goes on in the file that ends with its previous
/// run's final record): the file must have changed since. Anything but a regular file counts as
/// absent (a FIFO is never opened).
pub fn wait(path: &Path, is_final: fn(&[u8]) -> bool, max: Duration, quiet: Duration) -> Settled {
    let start = Instant::now();
    let state_of = |md: &std::fs::Metadata| (md.len(), md.modified().ok());
    let regular = || std::fs::metadata(path).ok().filter(|m| m.is_file());
    let initial = regular().map(|md| state_of(&md));
    let mut last = initial;
    let mut since = start;
    loop {
        if let Some(md) = regular() {
            let state = state_of(&md);
            if last != Some(state) {
                last = Some(state);
                since = Instant::now();
                if Some(state) != initial && last_line(path).is_some_and(|l| is_final(&l)) {
                    return Settled::Final;
                }
            } else if since.elapsed() >= quiet {
                return Settled::Quiet;
            }
        }
        if start.elapsed() >= max {
            return Settled::TimedOut;
        }
        std::thread::sleep(POLL);
    }
}

/// The last line of the file at `path` (without its `\n`; a final line without `\n` counts),
/// from its last [`TAIL_BYTES`] bytes; `None` when it cannot be read or is empty.
fn last_line(path: &Path) -> Option<Vec<u8>> {
    let mut f = crate::ingest::open_regular(path).ok()?;
    let len = f.metadata().ok()?.len();
    let from = len.saturating_sub(TAIL_BYTES);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut tail = Vec::new();
    f.take(TAIL_BYTES).read_to_end(&mut tail).ok()?;
    while tail.last() == Some(&b'\n') || tail.last() == Some(&b'\r') {
        tail.pop();
    }
    let start = tail.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    (start < tail.len()).then(|| tail[start..].to_vec())
}

/// Most reads of a whole-file source by one [`run`]: it reads the file again while the agent
/// rewrote it during the previous read; past this many, the next hook starts another run.
pub const MAX_WHOLE_FILE_ROUNDS: usize = 5;

/// Wait for `path` (a transcript of `agent`, session `session`) to settle ([`wait`] with
/// [`MAX_WAIT`] and [`QUIET`]), then ingest it at rest into the store at `db`, catch up the
/// full-text index and what earlier hooks left pending.
///
/// A whole-file source (of any agent) is read without a deadline, after its
/// [`crate::pending::claim_worker`] claim and a [`crate::pending::read_slot`] (waited for), at
/// a lower CPU and I/O priority, into a store opened without a deadline (each write waits up to 10 s
/// for the lock from when it asks), and read again (after
/// another quiet wait) while it changed during the read, at most [`MAX_WHOLE_FILE_ROUNDS`]
/// times; the report is that of the last read that stored something.
///
/// Returns `Ok(None)` when the store does not exist (nothing is created), or for a whole-file
/// source when another process reads it and one more waits to, or when every read slot and
/// every place in their queue are held ([`crate::pending::read_slot`]); else the ingest's
/// report.
/// Errors: the agent has no such quirk and the file is not a whole-file source, the store's
/// lock stayed taken for 10 s, or the transcript cannot be read (it never appeared).
pub fn run(
    agent: Agent,
    path: &Path,
    session: Option<&str>,
    db: &StoreLocation,
) -> Result<Option<(Settled, IngestReport)>> {
    if matches!(
        memtrail_adapters::source_for(agent, path),
        Some(memtrail_adapters::Source::Doc(_))
    ) {
        return run_whole_file(agent, path, session, db);
    }
    let quirks = agent.adapter().quirks();
    // An agent whose hooks run detached (Cline CLI 3.x): its files have no final record either.
    let Some(is_final) = quirks.written_after_session_end.or(quirks
        .written_after_stop
        .then_some(never_final as fn(&[u8]) -> bool))
    else {
        return Err(Error::Invalid(format!(
            "{} writes its transcripts before its hooks end a session; nothing to wait for",
            agent.display_name()
        )));
    };
    // A `Stop` comes at every task's end: as for a whole-file source, one process reads a file
    // at a time and one more waits behind it (a session's end comes once).
    let _claim = match quirks.written_after_session_end {
        Some(_) => None,
        None => match crate::pending::claim_worker(db, path)? {
            Some(c) => Some(c),
            None => return Ok(None),
        },
    };
    let settled = wait(path, is_final, MAX_WAIT, QUIET);
    if db.sqlite_path().is_some_and(|p| !p.exists()) {
        return Ok(None);
    }
    let mut store = open_background(db, LOCK_WAIT)?;
    let report = ingest_at_rest(&mut store, agent, path, session, None)?;
    let deadline = Instant::now() + LOCK_WAIT;
    store.catch_up_index(Some(deadline))?;
    let _ = crate::pending::catch_up(&mut store, db, deadline);
    Ok(Some((settled, report)))
}

/// A whole-file source has no final record: it settles by [`QUIET`].
fn never_final(_: &[u8]) -> bool {
    false
}

/// [`run`] for a whole-file source.
fn run_whole_file(
    agent: Agent,
    path: &Path,
    session: Option<&str>,
    db: &StoreLocation,
) -> Result<Option<(Settled, IngestReport)>> {
    if db.sqlite_path().is_some_and(|p| !p.exists()) {
        return Ok(None);
    }
    let Some(_claim) = crate::pending::claim_worker(db, path)? else {
        return Ok(None);
    };
    lower_priority();
    // Each read holds the file and its parse in memory: a few at once, all files together.
    // A bounded queue: past it, the next hook starts this read again.
    let Some(_slot) = crate::pending::read_slot()? else {
        return Ok(None);
    };
    let mut settled = wait(path, never_final, MAX_WAIT, QUIET);
    if db.sqlite_path().is_some_and(|p| !p.exists()) {
        return Ok(None);
    }
    let mut store = open_background(db, LOCK_WAIT)?;
    let mut last: Option<(Settled, IngestReport)> = None;
    for round in 0..MAX_WHOLE_FILE_ROUNDS {
        if round > 0 {
            // Changed while it was read, or just after: read it again once it is quiet.
            settled = wait(path, never_final, MAX_WAIT, QUIET);
        }
        let stamp = |m: std::fs::Metadata| (m.len(), m.modified().ok());
        let before = std::fs::metadata(path).ok().map(stamp);
        let report = match ingest_at_rest(&mut store, agent, path, session, None) {
            Ok(r) => r,
            Err(e) => {
                // The file itself cannot be stored (it does not parse, it is over the cap):
                // its entry goes, as the catch-up drops such an entry, unless the file changed
                // since (its hook noted it again). Kept, every later hook would start this
                // read again, of a file unchanged. Busy, a full disk, a config that does not
                // load: nothing is wrong with the file; it waits.
                let of_the_file = !matches!(e, Error::Busy { .. } | Error::Full)
                    && crate::privacy::Privacy::load().is_ok();
                if of_the_file && std::fs::metadata(path).ok().map(stamp) == before {
                    let _ = crate::pending::remove(db, agent, path, session);
                }
                return Err(e);
            }
        };
        let unchanged = report.unchanged;
        if !unchanged || last.is_none() {
            last = Some((settled, report));
        }
        if unchanged {
            break;
        }
    }
    let deadline = Instant::now() + LOCK_WAIT;
    store.catch_up_index(Some(deadline))?;
    let _ = crate::pending::catch_up(&mut store, db, deadline);
    Ok(last)
}

/// The store as this process opens it (for a Copilot CLI transcript too, whose ingest of a
/// long `events.jsonl` writes batch after batch): without a deadline, so that each write waits for
/// the lock up to `lock_wait` from when it asks for it (and first yields to hooks, as any
/// background writer does: [`Store::write`]). A deadline set at the open
/// ([`Store::open_until`]) would be spent by the parse of a large file, or by the wait for a
/// rewritten file to be quiet again: past it, a write fails at once with [`Error::Busy`]
/// whenever another process holds the lock, and the whole parse is lost.
///
/// Errors: as [`Store::open_with_timeout`].
fn open_background(db: &StoreLocation, lock_wait: Duration) -> Result<Store> {
    Store::open_with_timeout(db, lock_wait)
}

/// Lower this process's CPU priority (nice 10; on Linux, of the calling thread) and, on
/// Linux, its I/O priority (best effort, lowest level): a background read of a large file
/// yields to the agent, its hooks and the user's builds.
fn lower_priority() {
    #[cfg(unix)]
    // SAFETY: getpriority and setpriority on the calling process/thread (who = 0); a nicer
    // one is left as it is (never raised).
    unsafe {
        if libc::getpriority(libc::PRIO_PROCESS, 0) < 10 {
            libc::setpriority(libc::PRIO_PROCESS, 0, 10);
        }
    }
    // Its reads too (up to 256 MiB of one file): the lowest level of the best-effort I/O
    // class (`ioprio_set(2)`: class 2 in the bits from 13, level 7), as `ionice -c2 -n7`.
    #[cfg(target_os = "linux")]
    // SAFETY: ioprio_get and ioprio_set on the calling thread (who = 0) only lower its I/O
    // priority: a thread in the idle class, which yields more, is left as it is.
    unsafe {
        const IOPRIO_WHO_PROCESS: libc::c_long = 1;
        const IDLE: libc::c_long = 3;
        const BEST_EFFORT_LOWEST: libc::c_long = (2 << 13) | 7;
        let now: libc::c_long =
            libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0 as libc::c_long);
        if now < 0 || now >> 13 != IDLE {
            libc::syscall(
                libc::SYS_ioprio_set,
                IOPRIO_WHO_PROCESS,
                0 as libc::c_long,
                BEST_EFFORT_LOWEST,
            );
        }
    }
}

/// Start `exe --db DB hook-settle [--session=SESSION] -- AGENT PATH` detached (see
/// [`crate::autosync::spawn_detached`]).
///
/// Errors: the process could not be started.
pub fn spawn(
    exe: &Path,
    db: &Path,
    agent: Agent,
    path: &Path,
    session: Option<&str>,
) -> std::io::Result<()> {
    // `--session=…` and `--` before the positionals: a path or id from a payload that starts
    // with `-` stays a value.
    // Absolute: the process runs in `/` ([`crate::autosync::spawn_detached`]).
    let (db, path) = (std::path::absolute(db)?, std::path::absolute(path)?);
    let mut args: Vec<std::ffi::OsString> = vec!["--db".into(), db.into(), "hook-settle".into()];
    if let Some(s) = session {
        let mut flag = std::ffi::OsString::from("--session=");
        flag.push(s);
        args.push(flag);
    }
    args.extend(["--".into(), agent.as_str().into(), path.into_os_string()]);
    crate::autosync::spawn_detached(exe, &args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ends_with_done(line: &[u8]) -> bool {
        line == b"done"
    }

    /// A background read runs at nice 10 and the lowest best-effort I/O priority (this
    /// thread's, on Linux: set in a thread of its own here).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_background_read_yields_its_cpu_and_disk() {
        // SAFETY: getpriority and ioprio_get on the calling thread read only.
        let now = || unsafe {
            (
                libc::getpriority(libc::PRIO_PROCESS, 0),
                libc::syscall(libc::SYS_ioprio_get, 1 as libc::c_long, 0 as libc::c_long),
            )
        };
        let (before, after) = std::thread::spawn(move || {
            let before = now();
            lower_priority();
            (before, now())
        })
        .join()
        .unwrap();
        // Never raised: a thread already nicer, or in the idle I/O class, stays so.
        assert_eq!(after.0, before.0.max(10), "{before:?} {after:?}");
        if before.1 >> 13 != 3 {
            assert_eq!(after.1, (2 << 13) | 7, "{before:?} {after:?}");
        }
    }

    /// The detached process runs in `/` (it does not hold the agent's project folder) and gets
    /// the paths absolute, as they were meant from the hook's folder.
    #[cfg(unix)]
    #[test]
    fn the_background_process_runs_in_the_root_with_absolute_paths() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        let exe = d.path().join("fake-memtrail");
        std::fs::write(
            &exe,
            format!(
                "#!/bin/sh\n{{ pwd; printf '%s\\n' \"$@\"; }} > '{}.tmp' && mv '{0}.tmp' '{0}'\n",
                out.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o700)).unwrap();
        spawn(
            &exe,
            Path::new("rel/m.db"),
            Agent::Gemini,
            Path::new("chats/session.json"),
            Some("s-1"),
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !out.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let here = std::env::current_dir().unwrap();
        let got = std::fs::read_to_string(&out).unwrap();
        let want = [
            "/".to_string(),
            "--db".into(),
            here.join("rel/m.db").display().to_string(),
            "hook-settle".into(),
            "--session=s-1".into(),
            "--".into(),
            "gemini".into(),
            here.join("chats/session.json").display().to_string(),
        ];
        assert_eq!(got.lines().collect::<Vec<_>>(), want);
    }

    #[test]
    fn a_background_write_waits_for_the_lock_from_when_it_asks() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("m.db");
        let db = StoreLocation::Sqlite(path.clone());
        drop(Store::open(&db).unwrap());
        let lock_wait = Duration::from_secs(1);
        let mut store = open_background(&db, lock_wait).unwrap();
        // The parse of a large file, longer than the lock wait.
        std::thread::sleep(lock_wait + Duration::from_millis(200));
        // Then a hook holds the write lock for a moment.
        let (tx, rx) = std::sync::mpsc::channel();
        let holder = std::thread::spawn(move || {
            let mut other = Store::open(&path).unwrap();
            other
                .write(|_| {
                    tx.send(()).unwrap();
                    std::thread::sleep(Duration::from_millis(200));
                    Ok(())
                })
                .unwrap();
        });
        rx.recv().unwrap();
        let written = store.write(|_| Ok(()));
        holder.join().unwrap();
        assert!(written.is_ok(), "{written:?}");
    }

    #[test]
    fn the_last_line_is_read_without_its_newline() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t");
        std::fs::write(&p, "a\nb\n\n").unwrap();
        assert_eq!(last_line(&p).unwrap(), b"b");
        std::fs::write(&p, "a\nhalf").unwrap();
        assert_eq!(last_line(&p).unwrap(), b"half");
        std::fs::write(&p, "").unwrap();
        assert_eq!(last_line(&p), None);
        assert_eq!(last_line(&d.path().join("absent")), None);
        // Only the tail is read: a last line longer than it is cut from the left.
        let long = format!("x\n{}", "y".repeat(TAIL_BYTES as usize + 10));
        std::fs::write(&p, long).unwrap();
        assert_eq!(last_line(&p).unwrap().len(), TAIL_BYTES as usize);
    }

    #[test]
    fn the_wait_ends_at_the_final_line_at_quiet_or_at_the_maximum() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t");
        let long = Duration::from_secs(60);
        // Written later by another thread, ending with the final record: found before `quiet`.
        let writer = {
            let p = p.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                std::fs::write(&p, "a\n").unwrap();
                std::thread::sleep(Duration::from_millis(200));
                std::fs::write(&p, "a\ndone\n").unwrap();
            })
        };
        let t = Instant::now();
        assert_eq!(wait(&p, ends_with_done, long, long), Settled::Final);
        assert!(t.elapsed() < long);
        writer.join().unwrap();
        // No final record: settled once unchanged for `quiet`.
        std::fs::write(&p, "a\n").unwrap();
        let quiet = Duration::from_millis(300);
        let t = Instant::now();
        assert_eq!(wait(&p, ends_with_done, long, quiet), Settled::Quiet);
        assert!(t.elapsed() >= quiet);
        // Never written: the maximum.
        let absent = d.path().join("absent");
        let max = Duration::from_millis(200);
        assert_eq!(wait(&absent, ends_with_done, max, quiet), Settled::TimedOut);
        // Already ending with the final record when the wait begins (a resumed session's file):
        // not final until it changes; unchanged, it settles by `quiet`.
        std::fs::write(&p, "a\ndone\n").unwrap();
        let t = Instant::now();
        assert_eq!(wait(&p, ends_with_done, long, quiet), Settled::Quiet);
        assert!(t.elapsed() >= quiet);
        let writer = {
            let p = p.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                std::fs::write(&p, "a\ndone\nb\ndone\n").unwrap();
            })
        };
        assert_eq!(wait(&p, ends_with_done, long, long), Settled::Final);
        writer.join().unwrap();
        // A FIFO is never opened (the open would block): it counts as absent.
        let fifo = d.path().join("fifo");
        memtrail_testkit::mkfifo(&fifo);
        assert_eq!(wait(&fifo, ends_with_done, max, quiet), Settled::TimedOut);
        assert_eq!(last_line(&fifo), None);
    }
}
