//! Hooks first: the write gate between a hook and the background writers of the same store
//! (an import, `memtrail embed`, sync pulls, a server's indexer and embedder, a repair).
//!
//! SQLite serializes writers but gives them no order: a hook that finds the write lock taken
//! polls for it, and a background writer that commits and at once begins its next transaction
//! wins again and again (measured: a Stop hook beside an import of the 1 GB corpus waited 1.4 s
//! at p90 and 2.7 s at p99; `scripts/bench-hook-load`). The gate is a file beside the store,
//! `<store>-gate` (0600, empty), locked with `flock(2)`:
//!
//! - a hook (a store with a deadline: [`super::Store::set_deadline`]) holds it **shared** from
//!   before it asks for the write lock until its transaction ends;
//! - a background writer takes it **exclusive** for an instant before each transaction it
//!   begins, so it waits while any hook is waiting for or holding the write lock. It waits at
//!   most [`YIELD_MAX`] (a hook stopped in a debugger must not stall an import), then goes on.
//!
//! A hook therefore waits for at most the one transaction a background writer had already
//! begun. `flock` locks are released by the kernel when their process ends, however it ends.
//! When the gate file cannot be opened or created (a read-only folder, another platform),
//! there is no gate and writers behave as before: the gate only ever orders, it never refuses.

use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

/// Longest wait of a background writer for the hooks before it begins a transaction anyway.
pub const YIELD_MAX: Duration = Duration::from_secs(2);

/// The gate file of the store at `db` (`<db>-gate`): opened, created owner-only when missing.
pub(super) fn open(db: &Path) -> Option<File> {
    let mut p = db.as_os_str().to_owned();
    p.push("-gate");
    let mut o = std::fs::OpenOptions::new();
    o.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW);
    }
    o.open(p).ok()
}

/// A hook's hold on the gate (shared), released when dropped.
pub(super) struct Held<'a>(#[allow(dead_code)] &'a File);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        #[cfg(unix)]
        // SAFETY: flock on a descriptor this process owns; unlocking cannot fail harmfully.
        unsafe {
            use std::os::fd::AsRawFd;
            libc::flock(self.0.as_raw_fd(), libc::LOCK_UN);
        }
    }
}

/// Hold `gate` shared (a hook about to write). A background writer holds it exclusive for an
/// instant only, so the first try nearly always takes it; otherwise it is tried again every
/// millisecond until `deadline` (a writer stopped in that instant must not hang a hook).
/// `None` when it cannot be had by then, or at all (no gate): the hook goes on without it.
pub(super) fn hold(gate: &File, deadline: Instant) -> Option<Held<'_>> {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        loop {
            // SAFETY: flock on a descriptor this process owns.
            if unsafe { libc::flock(gate.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0 {
                return Some(Held(gate));
            }
            let err = std::io::Error::last_os_error().raw_os_error();
            if (err != Some(libc::EWOULDBLOCK) && err != Some(libc::EINTR))
                || Instant::now() >= deadline
            {
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (gate, deadline);
        None
    }
}

/// Wait until no hook holds `gate` (at most [`YIELD_MAX`]), before a background writer begins a
/// transaction. Polls with a non-blocking exclusive lock every millisecond, released at once.
pub(super) fn yield_to_hooks(gate: &File) {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let fd = gate.as_raw_fd();
        let until = Instant::now() + YIELD_MAX;
        loop {
            // SAFETY: flock on a descriptor this process owns.
            if unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                // SAFETY: as above.
                unsafe { libc::flock(fd, libc::LOCK_UN) };
                return;
            }
            let err = std::io::Error::last_os_error().raw_os_error();
            if err != Some(libc::EWOULDBLOCK) && err != Some(libc::EINTR) {
                return;
            }
            if Instant::now() >= until {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    #[cfg(not(unix))]
    let _ = (gate, Instant::now());
}

/// True when a hook holds `gate` (it waits for the write lock a background writer holds, or
/// is about to ask for it): the background writer should commit what it has and let it in.
/// One non-blocking `flock` (and its release); false without a gate or on another platform.
pub(super) fn hooks_waiting(gate: &File) -> bool {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let fd = gate.as_raw_fd();
        // SAFETY: flock on a descriptor this process owns.
        if unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            // SAFETY: as above.
            unsafe { libc::flock(fd, libc::LOCK_UN) };
            return false;
        }
        std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
    }
    #[cfg(not(unix))]
    {
        let _ = gate;
        false
    }
}

/// Mark this process as a bulk writer of the store (an import) for as long as `gate` stays
/// open: a read lock on the gate file's first byte, an open-file-description lock (`fcntl`
/// `F_OFD_SETLK`, Linux; independent of the `flock` above, released by the kernel with the
/// descriptor, however the process ends). Hooks ask [`bulk_writer_active`] before they
/// checkpoint. False when it could not be taken (another platform: hooks then go by the
/// WAL's size alone).
pub(super) fn mark_bulk_writer(gate: &File) -> bool {
    #[cfg(target_os = "linux")]
    {
        ofd_lock(gate, libc::F_OFD_SETLK, libc::F_RDLCK as libc::c_short).is_some()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = gate;
        false
    }
}

/// Release [`mark_bulk_writer`]'s mark (the bulk writes are over, the store stays open).
pub(super) fn unmark_bulk_writer(gate: &File) {
    #[cfg(target_os = "linux")]
    {
        let _ = ofd_lock(gate, libc::F_OFD_SETLK, libc::F_UNLCK as libc::c_short);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = gate;
}

/// True while a bulk writer ([`mark_bulk_writer`]) has the store open; false when none has
/// or when it cannot be told (another platform, an error). One `fcntl`.
pub(super) fn bulk_writer_active(gate: &File) -> bool {
    #[cfg(target_os = "linux")]
    {
        ofd_lock(gate, libc::F_OFD_GETLK, libc::F_WRLCK as libc::c_short)
            .is_some_and(|l| l.l_type != libc::F_UNLCK as libc::c_short)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = gate;
        false
    }
}

/// `fcntl(cmd)` with a lock of type `kind` on byte 0 of `gate`; the lock description as the
/// kernel left it, `None` on an error.
#[cfg(target_os = "linux")]
fn ofd_lock(gate: &File, cmd: libc::c_int, kind: libc::c_short) -> Option<libc::flock> {
    use std::os::fd::AsRawFd;
    // SAFETY: a zeroed `flock` is a valid value of the plain C struct.
    let mut l: libc::flock = unsafe { std::mem::zeroed() };
    l.l_type = kind;
    l.l_whence = libc::SEEK_SET as libc::c_short;
    l.l_start = 0;
    l.l_len = 1;
    // SAFETY: fcntl on a descriptor this process owns, with a pointer to a live `flock`.
    let r = unsafe { libc::fcntl(gate.as_raw_fd(), cmd, &mut l) };
    (r == 0).then_some(l)
}

#[cfg(all(test, unix))]
mod tests {
    use crate::store::Store;
    use std::time::{Duration, Instant};

    /// A background writer begins no transaction while a hook holds the gate, and begins as
    /// soon as it lets go; the gate file is created owner-only beside the store.
    #[test]
    fn a_background_write_waits_for_a_hook_holding_the_gate() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("m.db");
        let hook =
            Store::open_until(db.as_path(), Instant::now() + Duration::from_secs(30)).unwrap();
        let held = hook.pass_gate().expect("a hook holds the gate");
        let path = db.clone();
        let background = std::thread::spawn(move || {
            let mut s = Store::open(path.as_path()).unwrap();
            s.write(|_| Ok(())).unwrap();
            Instant::now()
        });
        std::thread::sleep(Duration::from_millis(300));
        let released = Instant::now();
        drop(held);
        let began = background.join().unwrap();
        assert!(
            began >= released,
            "the background write did not wait for the hook"
        );
        // Let in at once, not at the end of its longest wait (which would also begin after
        // the release: 2 s after it asked, 1.7 s after the release).
        assert!(
            began - released < Duration::from_millis(1000),
            "the background write began {:?} after the hook let go",
            began - released
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("m.db-gate"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // Two hooks hold it at once (shared): neither waits for the other.
        let other =
            Store::open_until(db.as_path(), Instant::now() + Duration::from_secs(30)).unwrap();
        let a = hook.pass_gate().expect("first hook");
        let b = other.pass_gate().expect("second hook");
        drop((a, b));
    }

    /// `hooks_waiting` is true exactly while a hook holds the gate.
    #[test]
    fn hooks_waiting_sees_a_hook_holding_the_gate() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("m.db");
        let background = Store::open(db.as_path()).unwrap();
        assert!(!background.hooks_waiting());
        let hook =
            Store::open_until(db.as_path(), Instant::now() + Duration::from_secs(30)).unwrap();
        let held = hook.pass_gate().expect("a hook holds the gate");
        assert!(background.hooks_waiting());
        // A hook's own store never asks (its shared hold would be converted).
        assert!(!hook.hooks_waiting());
        drop(held);
        assert!(!background.hooks_waiting());
    }

    /// Size of the database file (the WAL's frames reach it only by a checkpoint).
    fn db_len(db: &std::path::Path) -> u64 {
        std::fs::metadata(db).unwrap().len()
    }

    fn write_blob(s: &mut Store, bytes: usize) {
        s.write(|w| {
            w.tx.execute_batch("CREATE TABLE IF NOT EXISTS t_blob (b BLOB)")
                .unwrap();
            w.tx.execute("INSERT INTO t_blob VALUES (zeroblob(?1))", [bytes as i64])
                .unwrap();
            Ok(())
        })
        .unwrap();
    }

    /// A hook's commit does not checkpoint a bulk writer's WAL (its frames stay out of the
    /// database file) while that writer has the store open, and does once it is gone; a hook
    /// alone still checkpoints a WAL past 256 pages.
    #[test]
    fn a_hook_leaves_a_bulk_writers_wal_to_it_and_checkpoints_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("m.db");
        let mut bulk = Store::open(db.as_path()).unwrap();
        bulk.tune_for_bulk_writes().unwrap();
        // ~1,500 pages: fewer than the bulk writer's own 8,192.
        write_blob(&mut bulk, 6_000_000);
        let before = db_len(&db);
        let mut hook =
            Store::open_until(db.as_path(), Instant::now() + Duration::from_secs(30)).unwrap();
        write_blob(&mut hook, 100);
        assert_eq!(
            db_len(&db),
            before,
            "the hook checkpointed the bulk writer's WAL"
        );
        #[cfg(target_os = "linux")]
        {
            let gate = std::fs::File::open(dir.path().join("m.db-gate")).unwrap();
            assert!(super::bulk_writer_active(&gate));
            // The bulk writer gone (its lock went with its descriptor), the next hook's
            // commit checkpoints what it left.
            bulk.end_bulk_writes();
            assert!(!super::bulk_writer_active(&gate));
            write_blob(&mut hook, 100);
            assert!(db_len(&db) > before + 5_000_000, "the hook left the WAL");
        }
        drop(hook);

        let db2 = dir.path().join("h.db");
        let mut hook =
            Store::open_until(db2.as_path(), Instant::now() + Duration::from_secs(30)).unwrap();
        let before = db_len(&db2);
        // ~300 pages in one commit: past 256.
        write_blob(&mut hook, 1_200_000);
        assert!(
            db_len(&db2) > before + 1_000_000,
            "the hook did not checkpoint"
        );
    }

    #[test]
    fn when_a_hook_checkpoints() {
        use crate::store::hook_checkpoints;
        assert!(!hook_checkpoints(255, || false));
        assert!(hook_checkpoints(256, || false));
        assert!(hook_checkpoints(12_289, || true));
        #[cfg(target_os = "linux")]
        {
            assert!(hook_checkpoints(5_000, || false));
            assert!(!hook_checkpoints(256, || true));
            assert!(!hook_checkpoints(12_288, || true));
        }
        #[cfg(not(target_os = "linux"))]
        assert!(hook_checkpoints(5_000, || true));
    }

    /// A hook waits for the gate only until its deadline: a background writer stopped while
    /// holding it exclusive does not hang it.
    #[test]
    fn a_hook_waits_for_the_gate_only_until_its_deadline() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("m.db");
        let writer = super::open(&db).unwrap();
        // SAFETY: flock on a descriptor this test owns.
        assert_eq!(unsafe { libc::flock(writer.as_raw_fd(), libc::LOCK_EX) }, 0);
        let gate = super::open(&db).unwrap();
        let t = Instant::now();
        assert!(super::hold(&gate, t + Duration::from_millis(50)).is_none());
        assert!(t.elapsed() >= Duration::from_millis(50));
        // SAFETY: as above.
        unsafe { libc::flock(writer.as_raw_fd(), libc::LOCK_UN) };
        assert!(super::hold(&gate, Instant::now()).is_some());
    }
}
