//! `memtrail hook <agent>`: what runs each time an agent fires one of memtrail's hooks.
//!
//! Each run ingests the session's transcript first; then, at compaction and restart, it saves or
//! injects the session's snapshot (see [`respond`]), all from the store.
//!
//! A hook fails open: whatever happens, it returns normally with either nothing or a valid reply
//! for stdout, and the error goes to `$XDG_STATE_HOME/memtrail/hook.log`. The work is bounded by
//! a time budget (`MEMTRAIL_HOOK_BUDGET_MS`, default [`DEFAULT_BUDGET_MS`]); what is not ingested
//! in time is picked up by the next hook from the cursor: the next hook of any session, since a
//! hook that gives up notes its transcript in [`crate::pending`].

use crate::ingest::{IngestReport, ingest_at_rest, ingest_path};
use crate::records::Standard;
use crate::store::{HookRun, Store, StoreLocation};
use crate::{Result, now_ms, query, resume, snapshot, state_dir};
use memtrail_adapters::{Agent, HookEvent, format_rfc3339_ms};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The largest payload read from stdin; a larger one is rejected (and logged).
pub const MAX_PAYLOAD_BYTES: u64 = 4 * 1024 * 1024;
/// Default time budget of one hook, in milliseconds.
pub const DEFAULT_BUDGET_MS: u64 = 3000;
/// Share of the budget (percent) spent on work before the hook stops and leaves the rest for
/// the next hook.
pub const WORK_SHARE_PERCENT: u64 = 90;
/// Queued, unindexed messages (see [`crate::store::Store::catch_up_index`]) past which a hook
/// indexes some of them itself ([`HOOK_INDEX_MESSAGES`]): twice what an import leaves queued
/// between its own catch-ups ([`crate::import::IMPORT_INDEX_EVERY`]), so that a hook beside an
/// import leaves the import's queue to it (at 5,000, hooks beside an import of the 1 GB corpus
/// indexed its messages for up to their whole budget: p99 706 ms).
pub const HOOK_INDEX_BACKLOG: i64 = 2 * crate::import::IMPORT_INDEX_EVERY as i64;
/// The most queued messages one hook indexes (a session's end, or a queue past
/// [`HOOK_INDEX_BACKLOG`]), in one transaction: a share of the chore, never the whole of it.
/// Every search indexes the rest before it reads (`Store::catch_up_for_search`).
pub const HOOK_INDEX_MESSAGES: usize = 250;
/// Events of a session's earlier turns not yet in its running snapshot state past which a hook
/// brings the state up to date ([`crate::store::Writer::advance_snapshot_state`]): a
/// compaction's snapshot then applies fewer than this many plus its last turns' (100 new
/// events on a 10k-event state: 1.7 ms, docs/benchmarks.md), and a hook that advances the
/// state pays about that once every few turns.
pub const SNAPSHOT_STATE_EVERY: usize = 100;
/// Budget for Claude Code's SessionEnd, whose hooks share a 1.5 s allowance.
pub const SESSION_END_BUDGET_MS: u64 = 1000;
/// The hook log is rotated (to `hook.log.1`) past this size.
const LOG_ROTATE_BYTES: u64 = 1024 * 1024;

/// What the hook process should print and how it went.
#[derive(Debug, Default)]
pub struct HookOutcome {
    /// What to print on stdout (already in the agent's reply dialect), if anything.
    pub stdout: Option<String>,
    /// The parsed event, when the payload parsed.
    pub event: Option<HookEvent>,
    /// Ingest results, one per transcript touched.
    pub ingested: Vec<IngestReport>,
    /// The error that was logged, if any.
    pub error: Option<String>,
    /// Whether the caller should now start a background sync ([`crate::autosync::spawn`]):
    /// sync is configured and this is a session's end, or a turn's end past the interval
    /// ([`crate::autosync::claim`], which noted the start).
    pub background_sync: bool,
    /// Transcripts the agent finishes writing after this session-ending hook: the caller starts
    /// a detached `memtrail hook-settle` for each ([`crate::settle::spawn`]). Each is also left
    /// in [`crate::pending`], for the next hook should that process not get to it.
    pub settle: Vec<std::path::PathBuf>,
    /// Whole-file sources (agent, file, session) this hook did not parse because they would
    /// not fit in its time left ([`crate::ingest::IngestReport::deferred`]), its own or left by
    /// earlier hooks: the caller starts a detached `memtrail hook-settle` for each
    /// ([`crate::settle::spawn`]), which reads it without a deadline. Each is also left in
    /// [`crate::pending`] (with its size), for the next hook should that process not get to it.
    pub background: Vec<(Agent, std::path::PathBuf, Option<String>)>,
}

/// The hook log path: `$XDG_STATE_HOME/memtrail/hook.log`.
pub fn log_path() -> PathBuf {
    state_dir().join("hook.log")
}

/// Read a hook payload from this process's stdin, waiting at most `wait` for the agent to
/// close it: a hook whose stdin never ends must not hold the agent (fail open). Returns at most
/// [`MAX_PAYLOAD_BYTES`] + 1 bytes (so that [`run`] still sees and rejects an oversized payload;
/// the rest is drained in the background while the hook works), or `None` when stdin was still
/// open after `wait`.
pub fn read_stdin_within(wait: Duration) -> Option<Vec<u8>> {
    #[cfg(unix)]
    {
        read_fd_within(0, wait)
    }
    #[cfg(not(unix))]
    {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut payload = Vec::new();
            let _ = (&mut stdin)
                .take(MAX_PAYLOAD_BYTES + 1)
                .read_to_end(&mut payload);
            let oversized = payload.len() as u64 > MAX_PAYLOAD_BYTES;
            let _ = tx.send(payload);
            if oversized {
                let _ = std::io::copy(&mut stdin, &mut std::io::sink());
            }
        });
        rx.recv_timeout(wait).ok()
    }
}

/// [`read_stdin_within`] for the open file `fd`: `poll(2)` for the time left, then `read(2)`,
/// until end of file (`Some` of what was read), more than [`MAX_PAYLOAD_BYTES`] (`Some` of the
/// first `MAX_PAYLOAD_BYTES + 1` bytes; a thread drains the rest, so that the agent's write end
/// does not fail with EPIPE while the hook works) or `wait` (`None`). A read error ends the
/// payload where it is, as `read_to_end` would; a closed `fd` reads as an empty payload. No
/// thread is started for a payload of normal size (a thread was ~2% of a Stop hook).
///
/// Never blocked past `wait`: a pipe, a FIFO or a terminal, whose bytes another reader of the
/// same file may take between the `poll` and the `read`, is read through a non-blocking twin
/// (the same file opened again through `/proc/self/fd`, so that `fd`'s own flags, which it may
/// share with another process, stay as they are); a socket, which cannot be opened again, with
/// `recv(MSG_DONTWAIT)` (non-blocking for that call only); anything else that may block and
/// has no twin (no `/proc`), only as many bytes as `FIONREAD` counts. Once the wait is over,
/// what is already there is still read (a hook stopped past its deadline, then resumed, with
/// the whole payload waiting): `None` only when nothing more is ready.
#[cfg(unix)]
fn read_fd_within(fd: std::os::fd::RawFd, wait: Duration) -> Option<Vec<u8>> {
    let deadline = Instant::now() + wait;
    // SAFETY: F_GETFL only reads the descriptor's flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags >= 0 && flags & libc::O_ACCMODE == libc::O_WRONLY {
        // Not readable (a read fails at once, as `read_to_end` would): no payload. A twin
        // opened for reading would be the pipe's other end, with nothing ever to read.
        return Some(Vec::new());
    }
    let may_block = reads_may_block(fd);
    let twin = if may_block {
        nonblocking_twin(fd)
    } else {
        None
    };
    let rfd = twin.as_ref().map_or(fd, std::os::fd::AsRawFd::as_raw_fd);
    let socket = may_block && twin.is_none() && is_socket(fd);
    let counted = may_block && twin.is_none() && !socket;
    let mut payload = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        // Rounded up, so that a wait under a millisecond does not spin; 0 past the deadline.
        let ms = i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX);
        let mut pfd = libc::pollfd {
            fd: rfd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is one valid pollfd for the length of the call.
        let ready = unsafe { libc::poll(&mut pfd, 1, ms) };
        if ready < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Some(payload);
        }
        if ready == 0 {
            if left.is_zero() {
                return None;
            }
            continue;
        }
        if pfd.revents & libc::POLLNVAL != 0 {
            return Some(payload);
        }
        let want = if counted {
            match bytes_ready(rfd) {
                Some(0) if pfd.revents & (libc::POLLHUP | libc::POLLERR) == 0 => {
                    // Taken by another reader (or a terminal's end of file): nothing to read
                    // without blocking.
                    if left.is_zero() {
                        return None;
                    }
                    std::thread::sleep(Duration::from_millis(1).min(left));
                    continue;
                }
                // Hung up: the read returns what is left, then end of file, at once.
                Some(0) => chunk.len(),
                Some(n) => n.min(chunk.len()),
                None => chunk.len(),
            }
        } else {
            chunk.len()
        };
        let n = read_ready(rfd, socket, &mut chunk[..want]);
        if n == 0 {
            return Some(payload);
        }
        if n < 0 {
            match std::io::Error::last_os_error().kind() {
                std::io::ErrorKind::Interrupted => continue,
                // Taken by another reader: poll again, while there is time.
                std::io::ErrorKind::WouldBlock if !left.is_zero() => continue,
                std::io::ErrorKind::WouldBlock => return None,
                _ => return Some(payload),
            }
        }
        payload.extend_from_slice(&chunk[..n as usize]);
        if payload.len() as u64 > MAX_PAYLOAD_BYTES {
            payload.truncate(MAX_PAYLOAD_BYTES as usize + 1);
            std::thread::spawn(move || drain_fd(fd));
            return Some(payload);
        }
    }
}

/// One `read(2)` of `fd` into `buf`, or for a socket one `recv(2)` with `MSG_DONTWAIT`, which
/// returns `EAGAIN` instead of blocking when another reader took the bytes `poll` saw, without
/// setting `O_NONBLOCK` on a file description another process may share. The call's result:
/// bytes read, 0 at end of file, -1 with `errno` set.
#[cfg(unix)]
fn read_ready(fd: std::os::fd::RawFd, socket: bool, buf: &mut [u8]) -> isize {
    if socket {
        // SAFETY: `buf` is writable for its whole length.
        unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) }
    } else {
        // SAFETY: as above.
        unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) }
    }
}

/// Whether `fd` is a socket (`fstat`).
#[cfg(unix)]
fn is_socket(fd: std::os::fd::RawFd) -> bool {
    // SAFETY: fstat fills `st`.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFSOCK
    }
}

/// Whether a `read` of `fd` may block after `poll` said it was readable: a pipe, a socket or a
/// terminal (another process may read the same file). A regular file or another character
/// device (`/dev/null`) never blocks a read.
#[cfg(unix)]
fn reads_may_block(fd: std::os::fd::RawFd) -> bool {
    // SAFETY: fstat fills `st`; isatty only asks.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 {
            return true;
        }
        match st.st_mode & libc::S_IFMT {
            libc::S_IFREG | libc::S_IFDIR | libc::S_IFBLK => false,
            libc::S_IFCHR => libc::isatty(fd) == 1,
            _ => true,
        }
    }
}

/// The file open as `fd` opened again, for reading without blocking (`/proc/self/fd/N`: a
/// pipe, a FIFO or a terminal gets a new open file description of its own, whose
/// `O_NONBLOCK` leaves `fd`'s untouched). `None` where it cannot be (a socket, no `/proc`).
#[cfg(unix)]
fn nonblocking_twin(fd: std::os::fd::RawFd) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let path = std::ffi::CString::new(format!("/proc/self/fd/{fd}")).ok()?;
    // SAFETY: `path` is a NUL-terminated string; the descriptor returned is owned here.
    let t = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY,
        )
    };
    // SAFETY: `t` was just opened and nothing else owns it.
    (t >= 0).then(|| unsafe { std::os::fd::OwnedFd::from_raw_fd(t) })
}

/// How many bytes a `read` of `fd` finds at once (`FIONREAD`), or `None` when the file does not
/// say.
#[cfg(unix)]
fn bytes_ready(fd: std::os::fd::RawFd) -> Option<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int.
    let r = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
    (r == 0).then(|| usize::try_from(n).unwrap_or(0))
}

/// Read `fd` to its end and drop what is read (the rest of an oversized payload).
#[cfg(unix)]
fn drain_fd(fd: std::os::fd::RawFd) {
    let mut sink = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: `sink` is writable for its whole length.
        let n = unsafe { libc::read(fd, sink.as_mut_ptr().cast(), sink.len()) };
        if n > 0 {
            continue;
        }
        if n < 0 {
            match std::io::Error::last_os_error().kind() {
                std::io::ErrorKind::Interrupted => continue,
                std::io::ErrorKind::WouldBlock => {
                    let mut pfd = libc::pollfd {
                        fd,
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // SAFETY: as in `read_fd_within`.
                    if unsafe { libc::poll(&mut pfd, 1, -1) } >= 0 {
                        continue;
                    }
                }
                _ => {}
            }
        }
        return;
    }
}

/// The shortest wait for a payload on stdin, whatever the budget: an agent writes its payload
/// and closes stdin at once, but a loaded machine may take a while to schedule it.
pub const MIN_STDIN_WAIT_MS: u64 = 2000;

/// How long a hook waits for its payload on stdin: its time budget, at least
/// [`MIN_STDIN_WAIT_MS`].
pub fn stdin_wait() -> Duration {
    Duration::from_millis(budget_ms().max(MIN_STDIN_WAIT_MS))
}

fn budget_ms() -> u64 {
    std::env::var("MEMTRAIL_HOOK_BUDGET_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_BUDGET_MS)
}

/// Run one hook for `agent`: read the payload from `stdin` (at most [`MAX_PAYLOAD_BYTES`]), or
/// from `args` when the agent passes it there (Codex `notify`),
/// ingest the session's transcript into the store at `db`, and return what to print. Never
/// panics and never returns an error: failures are logged and reported in the outcome.
pub fn run(agent: Agent, stdin: &mut dyn Read, args: &[String], db: &StoreLocation) -> HookOutcome {
    let started = Instant::now();
    let mut outcome = HookOutcome::default();
    // memtrail's config is read once for the whole run: the ingest's exclusions and whether
    // sync is configured.
    let (result, config) = crate::privacy::with_config_read_once(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_inner(agent, stdin, args, db, started, &mut outcome)
        }))
    });
    // `Error::Busy`: the store's write lock was not free within the budget.
    let busy = matches!(&result, Ok(Err(e)) if e.is_busy());
    let error = match result {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e.to_string()),
        Err(p) => Some(format!(
            "internal error (panic): {}",
            p.downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default()
        )),
    };
    if let Some(path) = std::env::var_os("MEMTRAIL_HOOK_TIMING").filter(|p| !p.is_empty()) {
        // One line per run, `<agent> <event> <ok|busy|error> <µs>`, for measuring hooks (best
        // effort). `busy`: the store's write lock was not free within the budget.
        let how = match &error {
            None => "ok",
            Some(_) if busy => "busy",
            Some(_) => "error",
        };
        let line = format!(
            "{} {} {how} {}\n",
            agent.as_str(),
            outcome
                .event
                .as_ref()
                .map(|e| e.event.as_str())
                .filter(|e| !e.is_empty())
                .unwrap_or("-"),
            started.elapsed().as_micros()
        );
        let _ =
            open_private_append(Path::new(&path)).and_then(|mut f| f.write_all(line.as_bytes()));
    }
    // A session's or a turn's end: a background sync, when configured (whatever happened
    // above: it pushes what is stored). Not for a hook of another agent's (skipped above).
    if let Some(ev) = outcome.event.as_ref().filter(|e| e.agent == agent) {
        let canonical = memtrail_adapters::canonical_event(&ev.event);
        outcome.background_sync = crate::autosync::claim(
            canonical,
            config.as_ref(),
            &crate::autosync::stamp_path(),
            std::time::SystemTime::now(),
        );
    }
    if let Some(e) = &error {
        log_line(agent, outcome.event.as_ref(), &format!("error: {e}"));
        outcome.error = Some(e.clone());
        // Still record that the hook ran and failed, if the store opens.
        if !busy {
            // Busy: the lock was not free within the budget; waiting again would only overrun it.
            record(agent, db, started, &outcome);
        }
    }
    outcome
}

fn run_inner(
    agent: Agent,
    stdin: &mut dyn Read,
    args: &[String],
    db: &StoreLocation,
    started: Instant,
    outcome: &mut HookOutcome,
) -> Result<()> {
    // The user's own program that memtrail's entry replaced (Codex `notify`): run it first, with
    // the same arguments, detached, so it behaves as before install whatever happens here.
    if let Some(cmd) = memtrail_adapters::chained_command(agent, args)
        && let Err(e) = spawn_detached(&cmd)
    {
        log_raw(
            agent.as_str(),
            None,
            None,
            &format!("error: could not run the chained command {:?}: {e}", cmd[0]),
        );
    }
    // A payload in the arguments (Codex `notify`) means stdin is not the payload: don't wait on it.
    let mut payload = Vec::new();
    if args.is_empty() {
        stdin
            .take(MAX_PAYLOAD_BYTES + 1)
            .read_to_end(&mut payload)?;
    }
    if payload.len() as u64 > MAX_PAYLOAD_BYTES {
        // Drain the rest so the agent's write end does not fail with EPIPE.
        let _ = std::io::copy(stdin, &mut std::io::sink());
        return Err(crate::Error::Invalid(format!(
            "hook payload larger than {MAX_PAYLOAD_BYTES} bytes; ignored"
        )));
    }
    let env = memtrail_adapters::Env::from_process();
    let event = memtrail_adapters::parse_hook(agent, &payload, args, &env)
        .map_err(|e| crate::Error::Invalid(e.to_string()))?;
    outcome.event = Some(event.clone());
    if event.agent != agent {
        // A Claude-format hook run by VS Code or Cursor: their own hooks capture their
        // sessions; ingesting here would store a foreign transcript twice.
        log_line(
            agent,
            Some(&event),
            &format!(
                "skipped: this {agent} hook was invoked by {}",
                event.agent.display_name()
            ),
        );
        return Ok(());
    }

    let canonical = memtrail_adapters::canonical_event(&event.event);
    // The agent finishes its transcript after its hooks (Copilot CLI): a missing file is
    // expected, and the session's end leaves a wait for it (`crate::settle`).
    let written_later = agent.adapter().quirks().written_after_session_end.is_some();
    let budget = if canonical == "SessionEnd" {
        budget_ms().min(SESSION_END_BUDGET_MS)
    } else {
        budget_ms()
    };
    // Work (reading, waiting for the lock, writing) stops at 90% of the budget: the last step,
    // recording the run and exiting fit in the rest.
    let deadline = started + Duration::from_millis(budget * WORK_SHARE_PERCENT / 100);
    // Every wait for a lock ends at the deadline: a hook that cannot get the write lock in time
    // fails open ([`crate::Error::Busy`], logged) and the next hook catches up from the cursor,
    // which only ever moves with the messages it covers.
    let paths = memtrail_adapters::transcripts_for_event(agent, &event);
    let session = event.session_id.as_deref();
    let mut store = match Store::open_until(db, deadline) {
        Ok(s) => s,
        Err(e @ crate::Error::Busy { .. }) => {
            // The next hook of any session catches these up (see `crate::pending`).
            for p in &paths {
                leave_pending(agent, &event, db, p, session);
            }
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    if paths.is_empty() && transcript_may_be_absent(canonical) {
        // E.g. SessionStart before the agent wrote anything: nothing to ingest yet.
        reply_step(&mut store, agent, &event, canonical, outcome);
        record_with(&mut store, agent, started, outcome, None);
        return Ok(());
    }
    if paths.is_empty() {
        return Err(crate::Error::Invalid(format!(
            "the {} payload names no transcript (transcript_path)",
            if event.event.is_empty() {
                "hook"
            } else {
                event.event.as_str()
            }
        )));
    }

    let mut first_err: Option<crate::Error> = None;
    for (i, p) in paths.iter().enumerate() {
        // The first transcript always gets a step (at least one chunk), so a tiny budget still
        // makes progress; the others wait for the next hook once the budget is spent.
        if i > 0 && Instant::now() >= deadline {
            log_line(
                agent,
                Some(&event),
                "time budget spent; the rest is left for the next hook",
            );
            for p in &paths[i..] {
                leave_pending(agent, &event, db, p, session);
            }
            break;
        }
        // At the session's end the transcript is at rest: a last line without its '\n' is read.
        let ingest = if canonical == "SessionEnd" {
            ingest_at_rest
        } else {
            ingest_path
        };
        match ingest(
            &mut store,
            agent,
            p,
            event.session_id.as_deref(),
            Some(deadline),
        ) {
            Ok(r) if r.deferred => {
                let bytes = std::fs::metadata(p).map_or(0, |m| m.len());
                log_line(
                    agent,
                    Some(&event),
                    &format!(
                        "{} ({:.1} MB, read whole) would take longer than this hook's time left; \
                         it is stored in the background",
                        p.display(),
                        bytes as f64 / 1e6
                    ),
                );
                if let Err(e) = crate::pending::add_whole_file(db, agent, p, session, bytes) {
                    log_line(
                        agent,
                        Some(&event),
                        &format!("could not note {} for the next hook: {e}", p.display()),
                    );
                }
                outcome
                    .background
                    .push((agent, p.clone(), session.map(str::to_string)));
                outcome.ingested.push(r);
            }
            Ok(r) => {
                if r.incomplete {
                    log_line(
                        agent,
                        Some(&event),
                        &format!(
                            "time budget spent in {}; the rest is left for the next hook",
                            p.display()
                        ),
                    );
                    leave_pending(agent, &event, db, p, session);
                }
                outcome.ingested.push(r);
            }
            // A transcript that does not exist yet is normal for these events: Claude Code
            // creates it after the first UserPromptSubmit, `claude mcp list` ends a throwaway
            // session, and the compaction agent's SubagentStop names a file never written.
            // An agent that writes after its hooks (Copilot CLI) may not have created it yet.
            Err(crate::Error::Io(e))
                if e.kind() == std::io::ErrorKind::NotFound
                    && (transcript_may_be_absent(canonical) || written_later) => {}
            Err(e) => {
                // Busy, or stopped by memtrail's own config (a file that does not parse, a
                // redaction rule that does not compile), or a full disk: nothing of the
                // transcript is wrong, so the next hook that succeeds (of any session: this one
                // may have ended) catches it up once the cause is gone, not only an `import`.
                if matches!(e, crate::Error::Busy { .. } | crate::Error::Full)
                    || crate::privacy::Privacy::load().is_err()
                {
                    leave_pending(agent, &event, db, p, session);
                }
                if first_err.is_none() {
                    first_err = Some(crate::Error::Transcript {
                        path: p.clone(),
                        source: Box::new(e),
                    });
                }
            }
        }
    }
    // The full-text index is caught up by searches and the MCP server; a hook indexes a share
    // of the queue only at a session's end or when it is long (nothing searched for a while).
    if canonical == "SessionEnd" || store.pending_index().unwrap_or(0) >= HOOK_INDEX_BACKLOG {
        let _ = store.catch_up_index_at_most(deadline, HOOK_INDEX_MESSAGES);
    }
    // The session's running snapshot state follows its turns; a compaction or a start builds
    // and saves it itself in its reply step.
    if !matches!(canonical, "PreCompact" | "SessionStart" | "PostCompact")
        && Instant::now() < deadline
        && let Err(e) = advance_snapshot_state(&mut store, agent, &event)
    {
        log_line(
            agent,
            Some(&event),
            &format!("could not update the session's snapshot state: {e}"),
        );
    }
    // Whatever could be ingested is in the store: snapshot or inject from it.
    reply_step(&mut store, agent, &event, canonical, outcome);
    // Then what earlier hooks (of any session) could not finish, in the time left.
    if first_err.is_none() && Instant::now() < deadline {
        let caught = crate::pending::catch_up(&mut store, db, deadline);
        for (path, why) in &caught.dropped {
            log_line(
                agent,
                Some(&event),
                &format!("pending transcript {path} dropped: {why}"),
            );
        }
        outcome.ingested.extend(caught.ingested);
        for d in caught.deferred {
            if !outcome.background.contains(&d) {
                outcome.background.push(d);
            }
        }
    }
    // The agent writes the rest of this session after its last hook ran (Copilot CLI): a
    // detached process waits for the transcript to settle and ingests it. Left pending only now,
    // after this hook's own catch-up, which would take the entry off at once.
    // An agent that runs its hooks detached (Cline CLI 3.x) may write a task's last answer
    // after its `Stop` hook read the file: the same wait, for the files there.
    let after_stop = canonical == "Stop" && agent.adapter().quirks().written_after_stop;
    if (canonical == "SessionEnd" && written_later) || after_stop {
        // Only a path that is not there yet or is a regular file: anything else (a FIFO, a
        // folder) was refused by the ingest above and would only keep a process waiting.
        for p in paths
            .iter()
            .filter(|p| std::fs::symlink_metadata(p).map_or(!after_stop, |m| m.is_file()))
        {
            leave_pending(agent, &event, db, p, session);
            outcome.settle.push(p.clone());
        }
    }
    record_with(&mut store, agent, started, outcome, first_err.as_ref());
    // A delete, purge or rescan that a reader kept from folding the WAL back left the deleted
    // text in the store's files: fold it back now if no reader holds on (one `stat` when
    // nothing is left to do).
    if Instant::now() < deadline
        && let Err(e) = crate::maintenance::scrub_pending(&mut store)
    {
        log_line(
            agent,
            outcome.event.as_ref(),
            &format!("could not fold back the store's write-ahead log: {e}"),
        );
    }
    // The hook's process ends once its reply is printed, and every write above has committed
    // or rolled back: closing the connection would only free what it parsed and prepared (the
    // schema's 29 triggers, ~30 statements; ~2% of a Stop hook, docs/benchmarks.md, "A hook's
    // fixed costs"). The kernel closes the files and releases the locks at exit, as SQLite
    // expects of any process that ends; the WAL holds only committed transactions.
    std::mem::forget(store);
    match first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Bring the running snapshot state of the event's session up to date when it is
/// [`SNAPSHOT_STATE_EVERY`] events behind; checked without the write lock.
fn advance_snapshot_state(store: &mut Store, agent: Agent, event: &HookEvent) -> Result<()> {
    let Some(rowid) = resume::session_of_event(
        store,
        agent,
        event.session_id.as_deref(),
        event.transcript_path.as_deref(),
    )?
    else {
        return Ok(());
    };
    if store.snapshot_state_behind(rowid, SNAPSHOT_STATE_EVERY)? {
        store.write(|w| w.advance_snapshot_state(rowid, SNAPSHOT_STATE_EVERY))?;
    }
    Ok(())
}

/// Record `path` for the next hook ([`crate::pending::add`]); a failure is logged.
fn leave_pending(
    agent: Agent,
    event: &HookEvent,
    db: &StoreLocation,
    path: &Path,
    session: Option<&str>,
) {
    if let Err(e) = crate::pending::add(db, agent, path, session) {
        log_line(
            agent,
            Some(event),
            &format!("could not note {} for the next hook: {e}", path.display()),
        );
    }
}

/// The snapshot and context step of a hook, after its ingest (see [`respond`]); an error is
/// logged and leaves the hook's reply empty.
fn reply_step(
    store: &mut Store,
    agent: Agent,
    event: &HookEvent,
    canonical: &str,
    outcome: &mut HookOutcome,
) {
    match respond(store, agent, event, canonical) {
        Ok(reply) => outcome.stdout = reply,
        Err(e) => log_line(agent, Some(event), &format!("error: context step: {e}")),
    }
}

/// What memtrail does at compaction and restart, from the store alone (so it holds with one
/// process per hook):
///
/// - PreCompact (Claude, Codex, Cursor, VS Code `PreCompact`, Gemini `PreCompress`, OpenCode
///   `session.compacting`): build the session's snapshot ([`snapshot::DEFAULT_BUDGET`] bytes)
///   and save it, unconsumed. OpenCode adds the reply to its compaction prompt, so it gets the
///   snapshot as its reply; the others get nothing.
/// - SessionStart (and OpenCode `session.compacted`): the latest unconsumed snapshot of this
///   same session is injected and marked consumed (whatever the source: Cursor and VS Code do
///   not say why a session starts). Else, at source `compact` (or `session.compacted`), one is
///   built now from the store; at `resume`, the latest unconsumed snapshot of the latest other
///   session of the same project directory, if any (the agent reloads the resumed conversation
///   itself, so nothing is built). Nothing is injected into a session of another project. At
///   any other start, at most one line saying that earlier sessions of the project exist.
///   A snapshot is injected once per compaction whatever the hook order: when a start injected
///   the PreCompact snapshot before the compaction's own SessionStart(compact) (Codex on
///   `codex exec resume`: PreCompact → SessionStart(resume) → SessionStart(compact)), that
///   compact start injects nothing.
///
/// Returns the reply in the agent's dialect, or `None`.
pub fn respond(
    store: &mut Store,
    agent: Agent,
    event: &HookEvent,
    canonical: &str,
) -> Result<Option<String>> {
    if !matches!(canonical, "PreCompact" | "SessionStart" | "PostCompact") {
        return Ok(None);
    }
    let now = now_ms();
    let session = resume::session_of_event(
        store,
        agent,
        event.session_id.as_deref(),
        event.transcript_path.as_deref(),
    )?;
    let cwd = event.cwd.as_deref().filter(|c| !c.is_empty());
    match canonical {
        "PreCompact" => {
            let Some(rowid) = session else {
                return Ok(None);
            };
            // Built in the write that saves it, which also saves the session's running state
            // for the next snapshot (`Writer::snapshot`).
            let snap = store.write(|w| {
                let snap = w.snapshot(rowid, snapshot::DEFAULT_BUDGET)?;
                if !snap.text.trim().is_empty() {
                    w.save_snapshot(&Standard, rowid, "precompact", &snap, now, None)?;
                }
                Ok(snap)
            })?;
            if snap.text.trim().is_empty() {
                return Ok(None);
            }
            if agent.adapter().quirks().replies_at_pre_compact {
                let s = query::session_summary(store, rowid)?;
                let text = resume::injection_text(&s, "before this compaction", &snap.text);
                return Ok(memtrail_adapters::session_start_reply(agent, &text));
            }
            Ok(None)
        }
        "SessionStart" | "PostCompact" => {
            let source = event.source.as_deref().unwrap_or("");
            let compact = canonical == "PostCompact" || source == "compact";
            let resumed = source == "resume";
            let consumer = event.session_id.clone().unwrap_or_default();
            if let Some(rowid) = session {
                let s = query::session_summary(store, rowid)?;
                if same_project(s.project.as_deref(), cwd)
                    && let Some(snap) = store.write(|w| {
                        let snap = w.take_snapshot(rowid, &consumer, now)?;
                        // Taken before its compaction's own start: that start injects nothing.
                        if let Some(sn) = snap.as_ref().filter(|_| !compact) {
                            w.mark_taken_early(sn.id)?;
                        }
                        Ok(snap)
                    })?
                {
                    let why = if compact {
                        "before its compaction"
                    } else {
                        "as saved at its last compaction"
                    };
                    let text = resume::injection_text(&s, why, &snap.text);
                    return Ok(memtrail_adapters::session_start_reply(agent, &text));
                }
            }
            if compact {
                // No snapshot was saved (no PreCompact hook ran): build one now from the store.
                let Some(rowid) = session else {
                    return Ok(None);
                };
                let s = query::session_summary(store, rowid)?;
                if !same_project(s.project.as_deref(), cwd) {
                    return Ok(None);
                }
                // Once per compaction: an earlier start already injected its snapshot.
                if store.write(|w| w.close_early_compaction(rowid))? {
                    return Ok(None);
                }
                let snap = store.write(|w| {
                    let snap = w.snapshot(rowid, snapshot::DEFAULT_BUDGET)?;
                    if !snap.text.trim().is_empty() {
                        w.save_snapshot(&Standard, rowid, "compact", &snap, now, Some(&consumer))?;
                    }
                    Ok(snap)
                })?;
                if snap.text.trim().is_empty() {
                    return Ok(None);
                }
                let text = resume::injection_text(&s, "before its compaction", &snap.text);
                return Ok(memtrail_adapters::session_start_reply(agent, &text));
            }
            if resumed {
                // The agent reloads the resumed conversation itself; what it lacks is a snapshot
                // saved at a compaction that was never followed by its restart: of this session
                // (taken above), else of the latest other session of this project.
                let Some(dir) = cwd else {
                    return Ok(None);
                };
                let Some(rowid) =
                    resume::latest_session_for_dir(store, dir, Some(agent.as_str()), session)?
                else {
                    return Ok(None);
                };
                let s = query::session_summary(store, rowid)?;
                if let Some(snap) = store.write(|w| w.take_snapshot(rowid, &consumer, now))? {
                    let text =
                        resume::injection_text(&s, "as saved at its last compaction", &snap.text);
                    return Ok(memtrail_adapters::session_start_reply(agent, &text));
                }
                return Ok(None);
            }
            if canonical == "SessionStart"
                && let Some(dir) = cwd
                && let Some(line) = resume::startup_pointer(store, agent, dir, session)?
            {
                return Ok(memtrail_adapters::session_start_reply(agent, &line));
            }
            Ok(None)
        }
        _ => Ok(None),
    }
}

/// A session of project `project` may take context in a hook run from `cwd` when either is
/// unknown or one contains the other.
fn same_project(project: Option<&str>, cwd: Option<&str>) -> bool {
    match (project, cwd) {
        (Some(p), Some(c)) => resume::dir_within(c, p) || resume::dir_within(p, c),
        _ => true,
    }
}

/// Start `cmd` (program and arguments) with no stdin/stdout/stderr, and do not wait for it.
fn spawn_detached(cmd: &[String]) -> std::io::Result<()> {
    let (prog, rest) = cmd
        .split_first()
        .ok_or_else(|| std::io::Error::other("empty command"))?;
    std::process::Command::new(prog)
        .args(rest)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    Ok(())
}

/// Events at which a missing transcript is expected rather than an error.
fn transcript_may_be_absent(event: &str) -> bool {
    matches!(
        event,
        "SessionStart" | "UserPromptSubmit" | "SessionEnd" | "SubagentStop"
    )
}

/// How long a failed hook may still wait for the lock to record its failure.
const RECORD_FAILURE_WAIT: Duration = Duration::from_millis(50);

fn record(agent: Agent, db: &StoreLocation, started: Instant, outcome: &HookOutcome) {
    // A payload that could not be read creates no store to say so.
    if outcome.event.is_none() && !db.exists() {
        return;
    }
    if let Ok(mut store) = Store::open_until(db, Instant::now() + RECORD_FAILURE_WAIT) {
        let err = outcome.error.clone().map(crate::Error::Invalid);
        record_with(&mut store, agent, started, outcome, err.as_ref());
    }
}

fn record_with(
    store: &mut Store,
    agent: Agent,
    started: Instant,
    outcome: &HookOutcome,
    err: Option<&crate::Error>,
) {
    // A payload that could not be read (not JSON, too large, not this agent's format) names
    // no event: the run is recorded under the empty event, of no session, so that `status`
    // reports it until a later hook of the agent succeeds (an agent whose payloads memtrail no
    // longer reads captures nothing).
    let ev = outcome.event.as_ref();
    if ev.is_none() && err.is_none() {
        return;
    }
    let run = HookRun {
        agent: agent.as_str().to_string(),
        // Redacted and on one line as the hook log is: the payload's own field.
        event: ev.map(|e| log_field(&e.event)).unwrap_or_default(),
        at: now_ms(),
        duration_us: started.elapsed().as_micros() as i64,
        // Redacted as the hook log is: shown by `memtrail status`.
        session: ev.and_then(|e| e.session_id.as_deref()).map(log_field),
        messages: outcome.ingested.iter().map(|r| r.inserted as i64).sum(),
        error: err.map(|e| log_field(&e.to_string())),
    };
    if let Err(e) = store.record_hook_run(&Standard, &run) {
        log_line(agent, ev, &format!("could not record the hook run: {e}"));
    }
}

/// Append one line to the hook log (best effort; never fails the hook).
pub fn log_line(agent: Agent, event: Option<&HookEvent>, msg: &str) {
    log_raw(
        agent.as_str(),
        event.map(|e| e.event.as_str()).filter(|e| !e.is_empty()),
        event.and_then(|e| e.session_id.as_deref()),
        msg,
    )
}

/// Append one line `<time> <agent> <event|-> session=<id|-> <msg>` to the hook log (best effort).
/// The session id and the message are redacted ([`crate::redact::redact`]) first: an error may
/// quote what the hook was given (a transcript path, a payload's value, a command line).
pub fn log_raw(agent: &str, event: Option<&str>, session: Option<&str>, msg: &str) {
    // Every field redacted and kept on its line: the event and the session come from the
    // payload, the message may quote a transcript.
    let event = event.map(log_field);
    let session = session.map(log_field);
    let msg = log_field(msg);
    let path = log_path();
    let _ = (|| -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            create_private_dir_all(dir)?;
        }
        // `symlink_metadata`: a link is refused by the open below, never followed here.
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() > LOG_ROTATE_BYTES)
        {
            let _ = std::fs::rename(&path, path.with_extension("log.1"));
        }
        let mut f = open_private_append(&path)?;
        let line = format!(
            "{} {} {} session={} {}\n",
            format_rfc3339_ms(now_ms()),
            agent,
            event.as_deref().unwrap_or("-"),
            session.as_deref().unwrap_or("-"),
            msg
        );
        f.write_all(line.as_bytes())
    })();
}

/// Apply `e`'s redaction rules (the built-in ones and the user's) to the hook log and its
/// rotated copy (`hook.log`, `hook.log.1`, [`log_path`]) for `redact --rescan`: a line written
/// before a rule existed loses what the rule matches now. A file is replaced whole (a new one
/// beside it, mode 0600, renamed over it) only when one of its lines changed; a line a hook
/// appends between the read and the rename is lost (it is a log). Returns the lines changed.
///
/// Errors: a log that cannot be read (not a regular file of this user's: refused) or replaced.
pub fn rescan_log(e: &impl crate::records::Enrich) -> std::io::Result<u64> {
    let log = log_path();
    let mut changed = 0u64;
    for path in [log.clone(), log.with_extension("log.1")] {
        let Ok(m) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            // SAFETY: geteuid has no preconditions and cannot fail.
            if !m.is_file() || m.uid() != unsafe { libc::geteuid() } {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!(
                        "{}: not a regular file of this user's; not rescanned",
                        path.display()
                    ),
                ));
            }
        }
        let text = String::from_utf8_lossy(&std::fs::read(&path)?).into_owned();
        let mut out = String::with_capacity(text.len());
        let mut n = 0u64;
        for line in text.split_inclusive('\n') {
            let (body, end) = match line.strip_suffix('\n') {
                Some(b) => (b, "\n"),
                None => (line, ""),
            };
            let new = e.redact(body);
            if new != body {
                n += 1;
            }
            out.push_str(&new);
            out.push_str(end);
        }
        if n == 0 {
            continue;
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut tmp = tempfile::Builder::new()
            .prefix(".hook.log.")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .tempfile_in(dir)?;
        tmp.write_all(out.as_bytes())?;
        tmp.persist(&path).map_err(|e| e.error)?;
        changed += n;
    }
    Ok(changed)
}

/// `s` as a field of the hook log or of a recorded hook run: redacted
/// ([`crate::redact::redact`]) and on one line ([`crate::safe_text::one_line_field`]).
fn log_field(s: &str) -> String {
    crate::safe_text::one_line_field(&crate::redact::redact(s)).into_owned()
}

/// Open a log file of memtrail's (the hook log, `MEMTRAIL_HOOK_TIMING`) for appending, creating
/// it with mode 0600. The last component is never followed (`O_NOFOLLOW`: a symlink planted at
/// the path fails with `ELOOP`), and what is opened must be a regular file owned by this user
/// with a single link (a hard link to another file, say `~/.bashrc`, is refused); a log left
/// readable by others is tightened to 0600. Errors: the open fails, or the file is refused
/// (`PermissionDenied`, naming why).
#[cfg(unix)]
pub fn open_private_append(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        // O_NONBLOCK: a FIFO planted at the path cannot block the hook.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let m = f.metadata()?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let refuse = |why: &str| {
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{}: {why}; not written to", path.display()),
        ))
    };
    if !m.is_file() {
        return refuse("not a regular file");
    }
    if m.uid() != me {
        return refuse("owned by another user");
    }
    if m.nlink() != 1 {
        return refuse("has another hard link");
    }
    if m.mode() & 0o077 != 0 {
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(f)
}

/// Open a log file of memtrail's for appending (elsewhere than Unix: no ownership checks).
#[cfg(not(unix))]
pub fn open_private_append(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}

/// `create_dir_all` giving the folders it creates mode 0700 (whatever the umask).
fn create_private_dir_all(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

/// The last error lines of the hook log (at most `n`), for status.
pub fn last_log_errors(n: usize) -> Vec<String> {
    // A regular file of bounded size only (it rotates at 1 MiB): a FIFO or a link to a device
    // in its place must not hang `status` or the web page's status.
    let Ok(bytes) = memtrail_adapters::paths::read_small(&log_path(), 16 * LOG_ROTATE_BYTES) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.contains(" error: "))
        .map(str::to_string)
        .collect();
    let keep = lines.len().saturating_sub(n);
    lines.drain(..keep);
    lines
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    fn pipe() -> (OwnedFd, std::fs::File) {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors were just opened and are owned here only.
        unsafe {
            (
                OwnedFd::from_raw_fd(fds[0]),
                std::fs::File::from_raw_fd(fds[1]),
            )
        }
    }

    /// `f`'s result, or a failed test (not a hung one) when it takes longer than `limit`: for
    /// the reads that must not block.
    fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(limit)
            .expect("blocked: the call did not return in time")
    }

    /// One [`read_ready`] of up to 8 bytes: its result and `errno`'s kind; a failed test if it
    /// blocks for 5 s.
    fn read_once(fd: std::os::fd::RawFd, socket: bool) -> (isize, std::io::ErrorKind) {
        within(Duration::from_secs(5), move || {
            let mut buf = [0u8; 8];
            let n = read_ready(fd, socket, &mut buf);
            (n, std::io::Error::last_os_error().kind())
        })
    }

    /// A socket (no twin can be opened): the payload is read whole, in pieces; an empty socket
    /// whose writer is still there gives `EAGAIN` at once (so bytes another reader took between
    /// the `poll` and the read cannot hold the hook), without `O_NONBLOCK` set on it.
    #[test]
    fn a_socket_is_read_without_blocking() {
        use std::os::unix::net::UnixStream;
        let (r, mut w) = UnixStream::pair().unwrap();
        assert!(reads_may_block(r.as_raw_fd()) && is_socket(r.as_raw_fd()));
        assert!(nonblocking_twin(r.as_raw_fd()).is_none());
        let fd = r.as_raw_fd();
        assert_eq!(read_once(fd, true), (-1, std::io::ErrorKind::WouldBlock));
        // SAFETY: F_GETFL only reads the flags.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        assert_eq!(flags & libc::O_NONBLOCK, 0, "the socket's flags changed");
        let writer = std::thread::spawn(move || {
            for piece in [&b"{\"session_id\":"[..], b" \"s\"}"] {
                w.write_all(piece).unwrap();
                std::thread::sleep(Duration::from_millis(30));
            }
        });
        let got = within(Duration::from_secs(10), move || {
            read_fd_within(fd, Duration::from_secs(5))
        });
        writer.join().unwrap();
        assert_eq!(got.as_deref(), Some(&b"{\"session_id\": \"s\"}"[..]));
        drop(r);
    }

    /// A payload written in pieces, with pauses, is read whole once the writer closes.
    #[test]
    fn payload_in_pieces_is_read_whole() {
        let (r, mut w) = pipe();
        let writer = std::thread::spawn(move || {
            for piece in [&b"{\"session_id\":"[..], b" \"s\",", b" \"x\": 1}"] {
                w.write_all(piece).unwrap();
                std::thread::sleep(Duration::from_millis(30));
            }
        });
        let got = read_fd_within(r.as_raw_fd(), Duration::from_secs(10));
        writer.join().unwrap();
        assert_eq!(
            got.as_deref(),
            Some(&b"{\"session_id\": \"s\", \"x\": 1}"[..])
        );
    }

    /// A writer that never closes: `None` after the wait, not before it.
    #[test]
    fn open_stdin_times_out() {
        let (r, mut w) = pipe();
        w.write_all(b"{\"partial\"").unwrap();
        let t = Instant::now();
        let got = read_fd_within(r.as_raw_fd(), Duration::from_millis(300));
        assert_eq!(got, None);
        assert!(
            t.elapsed() >= Duration::from_millis(300),
            "{:?}",
            t.elapsed()
        );
        drop(w);
    }

    /// Past the limit: the first `MAX_PAYLOAD_BYTES + 1` bytes, and the writer still writes
    /// its whole payload (the rest is drained) and sees no broken pipe.
    #[test]
    fn oversized_payload_is_cut_and_drained() {
        let (r, mut w) = pipe();
        let total = MAX_PAYLOAD_BYTES as usize + 3 * 65_536 + 17;
        // Non-blocking, so that a reader that stops draining fails the test instead of
        // hanging it.
        // SAFETY: fcntl on a descriptor this test owns.
        unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        let writer = std::thread::spawn(move || {
            let block = vec![b'p'; 65_536];
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut left = total;
            while left > 0 {
                match w.write(&block[..left.min(block.len())]) {
                    Ok(n) => left -= n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        if Instant::now() > deadline {
                            return Err(e);
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok::<_, std::io::Error>(())
        });
        let got = read_fd_within(r.as_raw_fd(), Duration::from_secs(20)).unwrap();
        assert_eq!(got.len() as u64, MAX_PAYLOAD_BYTES + 1);
        writer.join().unwrap().expect("the writer wrote everything");
        // The drain thread holds the read end's number; keep the descriptor open until the
        // writer is done (it is), then let it go.
        std::mem::forget(r);
    }

    /// The whole payload and its end waiting when the wait is already over (a hook stopped
    /// past its deadline, then resumed): read, not given up.
    #[test]
    fn a_waiting_payload_is_read_past_the_deadline() {
        let (r, mut w) = pipe();
        w.write_all(b"{\"session_id\": \"s\"}").unwrap();
        drop(w);
        assert_eq!(
            read_fd_within(r.as_raw_fd(), Duration::ZERO).as_deref(),
            Some(&b"{\"session_id\": \"s\"}"[..])
        );
        // Nothing waiting and the writer still there: given up at once.
        let (r, w) = pipe();
        assert_eq!(read_fd_within(r.as_raw_fd(), Duration::ZERO), None);
        drop(w);
    }

    /// The read end of a pipe read through its twin: an empty pipe whose writer is still there
    /// gives `EAGAIN` at once instead of blocking (so a byte another reader took between the
    /// `poll` and the `read` cannot hold the hook), the original descriptor stays blocking (its
    /// flags may be shared with another process), and what is written is read.
    #[test]
    fn a_pipe_is_read_through_a_nonblocking_twin() {
        let (r, mut w) = pipe();
        assert!(reads_may_block(r.as_raw_fd()));
        let twin = nonblocking_twin(r.as_raw_fd()).expect("a pipe can be opened again");
        let mut buf = [0u8; 8];
        assert_eq!(
            read_once(twin.as_raw_fd(), false),
            (-1, std::io::ErrorKind::WouldBlock)
        );
        // SAFETY: F_GETFL only reads the flags.
        let flags = unsafe { libc::fcntl(r.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(
            flags & libc::O_NONBLOCK,
            0,
            "the original descriptor's flags changed"
        );
        w.write_all(b"ab").unwrap();
        // SAFETY: as above.
        let n = unsafe { libc::read(twin.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        assert_eq!(&buf[..n as usize], b"ab");
        // A regular file is read as it is (a twin would start again at its first byte).
        let f = tempfile::tempfile().unwrap();
        assert!(!reads_may_block(f.as_raw_fd()));
    }

    /// The write end of a pipe as stdin: an empty payload at once, not a wait on the pipe's
    /// read end opened again.
    #[test]
    fn a_write_only_stdin_is_an_empty_payload() {
        let (r, w) = pipe();
        let t = Instant::now();
        assert_eq!(
            read_fd_within(w.as_raw_fd(), Duration::from_secs(5)).as_deref(),
            Some(&[][..])
        );
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        drop(r);
    }

    /// A closed descriptor reads as an empty payload, at once.
    #[test]
    fn closed_stdin_is_an_empty_payload() {
        // A number no descriptor of this process has (closing one of ours would let another
        // test's file take its number).
        let fd = i32::MAX - 1;
        let t = Instant::now();
        assert_eq!(
            read_fd_within(fd, Duration::from_secs(5)).as_deref(),
            Some(&[][..])
        );
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
