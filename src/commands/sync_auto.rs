//! Automatic sync: `memtrail sync --background` (what hooks start at a session's or a turn's
//! end, see `memtrail_runtime::autosync`) and `memtrail sync --watch` (a long-running process).
//!
//! Both take the lock `memtrail sync` takes ([`SyncLock`], one sync at a time per store). A
//! background sync that finds it taken leaves a rerun mark (`<store>.sync.rerun`, mode 0600)
//! and exits: whoever holds the lock syncs once more when it is done, so the turn that started
//! the background sync is pushed. The mark is written before the lock is tried, and the holder
//! looks for it after releasing the lock, so no mark is missed.

use crate::common::open_store;
use crate::output::error_chain;
use anyhow::{Context, Result, bail};
use memtrail_pg::engine::{self, Identity, SyncLock, SyncOptions, SyncReport};
use memtrail_pg::migrate::{MIGRATIONS, Vector, migrate};
use memtrail_pg::settings::{SyncSettings, hostname};
use memtrail_pg::{Pg, PgConfig};
use memtrail_runtime::privacy::{Privacy, config_path};
use memtrail_runtime::status::PGVECTOR_STATE;
use memtrail_runtime::{Store, StoreLocation};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The rerun mark of the store at `store_path`: `<store_path>.sync.rerun`.
pub fn rerun_path(store_path: &Path) -> PathBuf {
    let mut p = store_path.as_os_str().to_owned();
    p.push(".sync.rerun");
    PathBuf::from(p)
}

/// Leave the rerun mark (mode 0600; never follows a symlink).
fn leave_mark(mark: &Path) -> std::io::Result<()> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    o.open(mark).map(drop)
}

/// After a local change that sync carries (a session deleted, a purge, a rescan): when a sync
/// of the store `db` is running, leave its rerun mark, so that it goes once more and carries
/// the change now rather than at the next sync (it may have read what to push before the
/// change). Nothing when no sync ever ran on this store (no lock file) or none runs now. Best
/// effort: a mark left just as the sync ended makes the next one go once more, no harm.
pub fn mark_running_sync(db: &StoreLocation) {
    let Some(path) = db.sqlite_path() else {
        return;
    };
    if !SyncLock::path_for(path).exists() {
        return;
    }
    if let Ok(None) = SyncLock::try_acquire(path) {
        let _ = leave_mark(&rerun_path(path));
    }
}

/// Remove the rerun mark; whether there was one.
pub fn take_mark(mark: &Path) -> bool {
    std::fs::remove_file(mark).is_ok()
}

/// What sync needs from memtrail's config.
struct Setup {
    url: String,
    me: Identity,
}

/// The `[sync]` settings; `None` when sync is not configured.
fn setup() -> Result<Option<Setup>> {
    let path = config_path();
    let s = SyncSettings::load(&path)?;
    let Some(url) = s.url.filter(|u| !u.trim().is_empty()) else {
        return Ok(None);
    };
    let Some(machine) = s.machine else {
        bail!(
            "memtrail's config {} has a [sync] url but no machine id: run `memtrail sync --init` \
             with the URL again",
            path.display()
        );
    };
    Ok(Some(Setup {
        url,
        me: Identity {
            machine,
            label: s.label.unwrap_or_else(hostname),
        },
    }))
}

/// The store, with sync enabled in it as this machine.
///
/// Errors: the store's; a store set up as another machine than the config's (the check and
/// message of plain `memtrail sync`), kept as the store's `last_error` too.
fn open_enabled(db: &StoreLocation, me: &Identity) -> Result<Store> {
    let mut store = open_store(db)?;
    let store_machine = store.sync_state("machine")?;
    if let Err(e) = super::sync::check_store_machine(store_machine.as_deref(), &me.machine, db) {
        let _ = store.set_sync_state("last_error", Some(&error_chain(&e)));
        return Err(e);
    }
    if !store.sync_enabled()? {
        store.sync_enable(&me.machine)?;
    }
    Ok(store)
}

/// Keep pgvector's state in the store for `memtrail status` (`sync_state` `pgvector`: its
/// version, `""` when the database has none).
///
/// Errors: the store's.
pub fn record_pgvector(store: &mut Store, vector: &Vector) -> Result<()> {
    let v = match vector {
        Vector::Installed(v) => v.as_str(),
        _ => "",
    };
    if store.sync_state(PGVECTOR_STATE)?.as_deref() != Some(v) {
        store.set_sync_state(PGVECTOR_STATE, Some(v))?;
    }
    Ok(())
}

/// Connect and check (or migrate) the schema ([`record_pgvector`]).
fn connect(url: &str, store: &mut Store) -> Result<Pg> {
    let mut pg = Pg::connect(&PgConfig::parse(url)?)?;
    let schema = migrate(&mut pg, MIGRATIONS)?;
    record_pgvector(store, &schema.vector)?;
    Ok(pg)
}

/// `a` (when there is one) and `b` summed ([`SyncReport::followed_by`]): each session counted once.
pub fn add_reports(a: Option<SyncReport>, b: SyncReport) -> SyncReport {
    match a {
        Some(a) => a.followed_by(b),
        None => b,
    }
}

/// One sync through `pg`, its outcome recorded in the store (`last_error` set, or cleared and
/// `last_sync_at` set). `stop` is looked at between batches: when set, the process exits there
/// (every batch before it is committed on both sides; nothing is in flight).
fn sync_once(
    store: &mut Store,
    pg: &mut Pg,
    me: &Identity,
    privacy: &Privacy,
    options: &SyncOptions,
) -> Result<SyncReport> {
    let result = engine::sync(store, pg, me, privacy, options, &mut |p| {
        if let Some(n) = progress_note(&p) {
            note(&n);
        }
        if stop_requested() {
            note("stopped (between batches)");
            std::process::exit(0);
        }
    });
    match result {
        Ok(r) => {
            store.record_sync_error(None)?;
            store.set_sync_state(
                "last_sync_at",
                Some(&memtrail_runtime::now_ms().to_string()),
            )?;
            Ok(r)
        }
        Err(e) => {
            // The text holds no password (the pg crate masks it); redacted when shown.
            let _ = store.record_sync_error(Some(&e.to_string()));
            Err(e.into())
        }
    }
}

/// `memtrail sync --background`: one sync, silent (nothing on stdout or stderr); an error is
/// kept in the store (`last_error`, shown by `status`) and in the hook log. Exits at once
/// when sync is not configured, or, after leaving the rerun mark, when another sync holds the
/// lock. Exit code 1 on an error (nobody waits for it).
pub fn background(db: &StoreLocation) -> ExitCode {
    match background_inner(db) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            memtrail_runtime::hook::log_raw(
                "sync",
                Some("background"),
                None,
                &format!("error: {}", error_chain(&e)),
            );
            ExitCode::FAILURE
        }
    }
}

fn background_inner(db: &StoreLocation) -> Result<()> {
    let Some(setup) = setup()? else {
        return Ok(());
    };
    let path = local_path(db)?;
    let mark = rerun_path(path);
    leave_mark(&mark).with_context(|| format!("cannot write {}", mark.display()))?;
    let Some(mut lock) = SyncLock::try_acquire(path)? else {
        // The holder syncs once more when it sees the mark.
        return Ok(());
    };
    let privacy = Privacy::load()?;
    let options = SyncOptions::from_env()?;
    let mut store = open_enabled(db, &setup.me)?;
    let mut pg: Option<Pg> = None;
    loop {
        take_mark(&mark);
        let conn = match pg.as_mut() {
            Some(c) => c,
            None => pg.insert(connect(&setup.url, &mut store).inspect_err(|e| {
                let _ = store.record_sync_error(Some(&error_chain(e)));
            })?),
        };
        sync_once(&mut store, conn, &setup.me, &privacy, &options)?;
        drop(lock);
        // Marked while this one synced: once more (unless another took the lock since).
        if !mark.exists() {
            return Ok(());
        }
        match SyncLock::try_acquire(path)? {
            Some(l) => lock = l,
            None => return Ok(()),
        }
    }
}

/// The intervals of `memtrail sync --watch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchOptions {
    /// How often the store is looked at for something to push (a query of the outbox, well
    /// under a millisecond): a change is pushed within this time. Default 2 s.
    pub push_every: Duration,
    /// How often the other machines' pushes are pulled when nothing is pushed. Default 30 s.
    pub pull_every: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            push_every: Duration::from_secs(2),
            pull_every: Duration::from_secs(30),
        }
    }
}

/// The longest wait between two attempts while PostgreSQL cannot be reached (the wait starts
/// at the push interval and doubles).
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// SIGINT/SIGTERM received (a second one exits at once).
static SIGNALS: AtomicUsize = AtomicUsize::new(0);

fn stop_requested() -> bool {
    SIGNALS.load(Ordering::SeqCst) > 0
}

#[cfg(unix)]
extern "C" fn on_signal(_: libc::c_int) {
    if SIGNALS.fetch_add(1, Ordering::SeqCst) > 0 {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
}

/// SIGINT and SIGTERM set [`SIGNALS`] instead of ending the process.
fn catch_signals() {
    #[cfg(unix)]
    // SAFETY: the handler only touches an atomic and calls _exit, both async-signal-safe.
    unsafe {
        let h = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::signal(libc::SIGINT, h);
        libc::signal(libc::SIGTERM, h);
    }
}

/// A line on stderr: `<time> memtrail sync: <msg>` (redacted).
/// What `memtrail sync` says on stderr of a step of its progress that the user should know
/// about (a database new to this store or gone back in time, a machine id or label shared with
/// another machine); `None` for the others (a progress bar shows them).
pub fn progress_note(p: &engine::Progress<'_>) -> Option<String> {
    let time = memtrail_adapters::format_rfc3339_ms;
    Some(match *p {
        engine::Progress::NewDatabase {
            sessions,
            deletions,
        } => format!(
            "this database is new to this machine: sending all {}{}",
            crate::output::plural(sessions, "session", "sessions"),
            if deletions > 0 {
                format!(
                    " and the {} made here",
                    crate::output::plural(deletions, "deletion", "deletions")
                )
            } else {
                String::new()
            }
        ),
        engine::Progress::RestoredDatabase { reached, revision } => format!(
            "the database went back in time (restored from a backup?): it has given out \
             revisions up to {revision}, but this machine saw them reach {reached}; giving it a \
             new identity, so that every machine sends its sessions again and pulls from the \
             start"
        ),
        engine::Progress::SharedMachineId { database_push_at } => format!(
            "warning: another store pushes as this machine: the database shows a push from \
             this machine's id at {} that this store did not make. Was memtrail's config \
             copied from this machine to another? The two do not see each other's sessions; \
             docs/sync.md (\"Machines\") says how to give one its own id",
            time(database_push_at)
        ),
        engine::Progress::SharedLabel { machine } => format!(
            "warning: machine {machine} also pushes under this machine's label: sessions of \
             the two show the same machine name; give this one its own with `memtrail sync \
             --init URL --label NAME`"
        ),
        engine::Progress::Push { .. }
        | engine::Progress::Pull { .. }
        | engine::Progress::VectorIndex { .. } => return None,
    })
}

fn note(msg: &str) {
    eprintln!(
        "{} memtrail sync: {}",
        memtrail_adapters::format_rfc3339_ms(memtrail_runtime::now_ms()),
        crate::output::terminal_safe(&memtrail_runtime::redact::redact(msg))
    );
}

/// Sleep `d` in slices of 100 ms, returning early when a stop was asked for.
fn sleep_unless_stopped(d: Duration) {
    let until = Instant::now() + d;
    while !stop_requested() {
        let now = Instant::now();
        if now >= until {
            return;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(100)));
    }
}

/// `memtrail sync --watch`: sync whenever the store has something to push (looked at every
/// `push_every`) or a rerun mark was left, and at least every `pull_every`; keeps going when
/// PostgreSQL goes away (the error logged once per outage on stderr and kept in the store,
/// retried with a doubling wait up to [`MAX_BACKOFF`]); stops on SIGINT or SIGTERM, between
/// batches. Each sync holds the lock only while it runs (`memtrail sync` may run between).
/// A line on stderr for each sync that moved something.
///
/// Errors: sync is not configured; the store cannot be opened.
pub fn watch(db: &StoreLocation, opts: WatchOptions) -> Result<ExitCode> {
    let Some(setup) = setup()? else {
        bail!(
            "sync is not set up: run `memtrail sync --init postgres://USER@HOST/DB` (see \
             `memtrail sync --help`)"
        );
    };
    catch_signals();
    let privacy = Privacy::load()?;
    let options = SyncOptions::from_env()?;
    let path = local_path(db)?;
    let mut store = open_enabled(db, &setup.me)?;
    let mark = rerun_path(path);
    note(&format!(
        "watching {db} as {}: pushing within {} s of a change, pulling every {} s (Ctrl-C stops)",
        setup.me.label,
        opts.push_every.as_secs_f64(),
        opts.pull_every.as_secs_f64()
    ));
    let mut pg: Option<Pg> = None;
    let mut next_pull = Instant::now();
    // While PostgreSQL is out of reach: when the outage began, the current wait, next try.
    let mut outage: Option<(Instant, Duration, Instant)> = None;
    while !stop_requested() {
        let now = Instant::now();
        let retry_ok = outage.is_none_or(|(_, _, at)| now >= at);
        let due = retry_ok
            && (now >= next_pull || mark.exists() || {
                let p = store.sync_pending()?;
                p.sessions + p.deletions > 0
            });
        if due && let Some(lock) = SyncLock::try_acquire(path)? {
            take_mark(&mark);
            let result = (|| -> Result<SyncReport> {
                let conn = match pg.as_mut() {
                    Some(c) => c,
                    None => pg.insert(connect(&setup.url, &mut store)?),
                };
                sync_once(&mut store, conn, &setup.me, &privacy, &options)
            })();
            drop(lock);
            match result {
                Ok(r) => {
                    if let Some((since, _, _)) = outage.take() {
                        note(&format!(
                            "PostgreSQL reached again after {:.0} s; synced",
                            since.elapsed().as_secs_f64()
                        ));
                    }
                    let (p, q) = (&r.pushed, &r.pulled);
                    if p.messages + p.deletions + p.sessions + q.messages + q.deleted_sessions > 0 {
                        note(&watch_line(&r));
                    }
                    next_pull = Instant::now() + opts.pull_every;
                }
                Err(e) => {
                    // The connection may be broken: a new one next time.
                    pg = None;
                    let now = Instant::now();
                    outage = Some(match outage {
                        None => {
                            let msg = error_chain(&e);
                            note(&format!("error: {msg}; retrying (logged once per outage)"));
                            memtrail_runtime::hook::log_raw(
                                "sync",
                                Some("watch"),
                                None,
                                &format!("error: {msg}"),
                            );
                            let _ = store.record_sync_error(Some(&msg));
                            (now, opts.push_every, now + opts.push_every)
                        }
                        Some((since, wait, _)) => {
                            let wait = (wait * 2).min(MAX_BACKOFF.max(opts.push_every));
                            (since, wait, now + wait)
                        }
                    });
                }
            }
        }
        sleep_unless_stopped(opts.push_every);
    }
    note("stopped");
    Ok(ExitCode::SUCCESS)
}

/// The local store's file: `memtrail sync` carries the local store to PostgreSQL, so a
/// `--store` naming PostgreSQL is refused.
pub fn local_path(db: &StoreLocation) -> Result<&std::path::Path> {
    db.sqlite_path().with_context(|| {
        format!(
            "`memtrail sync` works on this machine's local store; leave out --store (it names \
             {db}), or give the local store's path with --db PATH"
        )
    })
}

/// The line `--watch` prints after a sync that moved something: `pushed 1 message (1 session,
/// 0 deletions), pulled 3 messages (2 sessions, 0 deleted) in 41 ms`.
fn watch_line(r: &SyncReport) -> String {
    use crate::output::plural;
    let (p, q) = (&r.pushed, &r.pulled);
    format!(
        "pushed {} ({}, {}), pulled {} ({}, {} deleted) in {} ms",
        plural(p.messages, "message", "messages"),
        plural(p.sessions, "session", "sessions"),
        plural(p.deletions, "deletion", "deletions"),
        plural(q.messages, "message", "messages"),
        plural(q.sessions, "session", "sessions"),
        q.deleted_sessions,
        r.elapsed_ms
    )
}

#[cfg(test)]
mod watch_line_tests {
    use super::*;

    #[test]
    fn the_watch_line_counts_in_words_that_agree() {
        let mut r = SyncReport {
            machine: "m".into(),
            label: "l".into(),
            url: "postgres://h/db".into(),
            pushed: Default::default(),
            pulled: Default::default(),
            vector_index: None,
            vector_index_error: None,
            elapsed_ms: 41,
            counted: Default::default(),
        };
        r.pushed.messages = 1;
        r.pushed.sessions = 1;
        r.pulled.messages = 3;
        r.pulled.sessions = 2;
        assert_eq!(
            watch_line(&r),
            "pushed 1 message (1 session, 0 deletions), pulled 3 messages (2 sessions, 0 deleted) \
             in 41 ms"
        );
    }
}
