//! One install or uninstall at a time: an exclusive lock (`flock`, through `std::fs::File::lock`)
//! on `<state dir>/install.lock`, a file of the owner's only, held across a whole command.
//!
//! Two installs at once each read a config, its mode and the install state, and write them back:
//! without the lock the second one could take the first one's 0600 for the file's own mode (its
//! 0644 was then lost for good) or save an install state that lacks the first one's record.
//!
//! The lock is per open file (`flock`), so two threads of one process exclude each other too; a
//! thread that holds it and asks again (the CLI holds it around [`crate::apply`], which takes it
//! as well) gets it at once. The lock file holds the holder's pid, for the waiter's message.
//! Released, it is deleted (and the state folder too when the lock made it and it is empty): a
//! waiter that then gets the lock of a file no longer at the path (deleted by its holder, or by
//! `uninstall --purge` with the whole state folder) tries again on the file there now, so that
//! a waiter and a newcomer never hold two different files.

use crate::error::InstallError;
use memtrail_adapters::Env;
use std::cell::RefCell;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a second install or uninstall waits for the first before it fails
/// ([`InstallError::Locked`]).
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(120);

/// How long it waits before it says that it is waiting.
pub const LOCK_NOTICE_AFTER: Duration = Duration::from_millis(500);

thread_local! {
    /// The lock files this thread holds (a nested [`lock_in`] gets them at once).
    static HELD: RefCell<Vec<PathBuf>> = const { RefCell::new(Vec::new()) };
}

/// The install lock, released when dropped.
#[derive(Debug)]
pub struct InstallLock {
    /// `None`: a nested lock (this thread already held it; the outer one releases it).
    file: Option<File>,
    path: PathBuf,
    /// The folders made for the lock file, removed with it when empty.
    new_dirs: Vec<PathBuf>,
}

impl InstallLock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for InstallLock {
    fn drop(&mut self) {
        if let Some(f) = self.file.take() {
            HELD.with(|h| h.borrow_mut().retain(|p| p != &self.path));
            // No trace left: the file goes before the lock is released (a waiter that then
            // locks the deleted file sees it is gone and tries again), and so do the folders
            // made for it once empty.
            if same_file(&f, &self.path) {
                let _ = std::fs::remove_file(&self.path);
            }
            let _ = f.unlock();
            drop(f);
            crate::fsutil::remove_empty_dirs(&self.new_dirs);
        }
    }
}

/// The lock file of `env`: `<state dir>/install.lock`.
pub fn lock_path(env: &Env) -> PathBuf {
    env.state_dir().join("install.lock")
}

/// Take the install lock of `env`, waiting up to `timeout` for another install or uninstall to
/// finish; after `notice_after` of waiting, `on_wait` is called once with the holder's pid (when
/// the lock file names one). Creates the state folder (0700) and the lock file (0600) as needed.
///
/// Errors: [`InstallError::Locked`] after `timeout`, [`InstallError::Io`].
pub fn lock_in(
    env: &Env,
    notice_after: Duration,
    timeout: Duration,
    on_wait: &mut dyn FnMut(Option<u32>),
) -> Result<InstallLock, InstallError> {
    let path = lock_path(env);
    if HELD.with(|h| h.borrow().contains(&path)) {
        return Ok(InstallLock {
            file: None,
            path,
            new_dirs: Vec::new(),
        });
    }
    // Never in a planted link's target (the backups' rule: see `backup::refuse_links`).
    crate::backup::refuse_links(env)?;
    let started = Instant::now();
    let mut told = false;
    let mut new_dirs = Vec::new();
    loop {
        let dir = env.state_dir();
        let made = crate::fsutil::missing_dirs(&dir);
        crate::fsutil::create_dirs_like_parent(&dir)?;
        for d in made {
            if !new_dirs.contains(&d) {
                new_dirs.push(d);
            }
        }
        let file = match open(&path) {
            Ok(f) => f,
            // The holder before removed the folder just now: make it again.
            Err(InstallError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound && started.elapsed() < timeout =>
            {
                continue;
            }
            Err(e) => return Err(e),
        };
        crate::fsutil::match_owner(&path, &dir);
        match file.try_lock() {
            Ok(()) => {
                // Locked: but is it still the file at `path` (a purge may have deleted it)?
                if !same_file(&file, &path) {
                    continue;
                }
                write_pid(&file, &path)?;
                HELD.with(|h| h.borrow_mut().push(path.clone()));
                return Ok(InstallLock {
                    file: Some(file),
                    path,
                    new_dirs,
                });
            }
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(InstallError::io(&path, e)),
        }
        let waited = started.elapsed();
        if waited >= timeout {
            return Err(InstallError::Locked {
                pid: holder(&path),
                path,
                waited_secs: waited.as_secs(),
            });
        }
        if !told && waited >= notice_after {
            told = true;
            on_wait(holder(&path));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Open the lock file, creating it owner-only; a symlink or a hard link there is refused.
fn open(path: &Path) -> Result<File, InstallError> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    // A symlink at the lock's path is refused, not followed.
    if std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_file()) {
        return Err(InstallError::io(
            path,
            std::io::Error::other("not a regular file; move it away"),
        ));
    }
    let file = o.open(path).map_err(|e| {
        let e = if e.kind() == std::io::ErrorKind::PermissionDenied {
            // A lock file left by `sudo memtrail install` with HOME kept.
            std::io::Error::new(
                e.kind(),
                format!("{e}; another user owns it (root, after a sudo install?): remove it"),
            )
        } else {
            e
        };
        InstallError::io(path, e)
    })?;
    // Nor a hard link to another file (the pid written into it would replace its bytes).
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = file.metadata().map_err(|e| InstallError::io(path, e))?;
        if meta.nlink() > 1 {
            return Err(InstallError::io(
                path,
                std::io::Error::other("the file has other names (hard links); move it away"),
            ));
        }
    }
    Ok(file)
}

/// Whether the open `file` is the one at `path` now.
fn same_file(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::symlink_metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

fn write_pid(mut file: &File, path: &Path) -> Result<(), InstallError> {
    let io = |e| InstallError::io(path, e);
    file.set_len(0).map_err(io)?;
    file.rewind().map_err(io)?;
    writeln!(file, "{}", std::process::id()).map_err(io)
}

/// The pid the lock file names (its holder's, while it is held).
fn holder(path: &Path) -> Option<u32> {
    let mut text = String::new();
    File::open(path).ok()?.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(dir: &Path) -> Env {
        Env::sandbox(dir.join("home"))
    }

    #[test]
    fn owner_only_and_nested_in_one_thread() {
        let tmp = tempfile::tempdir().unwrap();
        let env = env(tmp.path());
        let never = &mut |_: Option<u32>| panic!("no wait");
        let outer = lock_in(&env, Duration::ZERO, Duration::ZERO, never).unwrap();
        // The thread holding it gets it again at once (apply inside the CLI's lock).
        let inner = lock_in(&env, Duration::ZERO, Duration::ZERO, never).unwrap();
        drop(inner);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(outer.path()), 0o600);
            assert_eq!(mode(outer.path().parent().unwrap()), 0o700);
        }
        assert_eq!(
            std::fs::read_to_string(outer.path()).unwrap(),
            format!("{}\n", std::process::id())
        );
        // Still held by the outer lock: another thread waits, says so once, and times out.
        let env2 = env.clone();
        let got = std::thread::spawn(move || {
            let mut told = Vec::new();
            let r = lock_in(
                &env2,
                Duration::from_millis(50),
                Duration::from_millis(300),
                &mut |pid| told.push(pid),
            );
            (r.map(|_| ()), told)
        })
        .join()
        .unwrap();
        assert_eq!(got.1, vec![Some(std::process::id())]);
        let err = got.0.unwrap_err();
        assert!(matches!(err, InstallError::Locked { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "another memtrail install or uninstall (pid {}) still holds {} after 0 s; try again once it is done (nothing was changed)",
                std::process::id(),
                outer.path().display()
            )
        );
        drop(outer);
        // Released: another thread gets it at once.
        let env3 = env.clone();
        std::thread::spawn(move || lock_in(&env3, Duration::ZERO, Duration::ZERO, &mut |_| {}))
            .join()
            .unwrap()
            .unwrap();
        assert!(!lock_path(&env).exists());
    }

    /// A hard link planted at the lock's path (to `~/.bashrc`, say) is refused before a byte
    /// of the file it names is written: the lock writes its pid into the file it opens.
    #[cfg(unix)]
    #[test]
    fn a_hard_linked_lock_file_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let env = env(tmp.path());
        let other = tmp.path().join("bashrc");
        std::fs::write(&other, "export KEEP=1\n").unwrap();
        crate::fsutil::create_dirs_like_parent(&env.state_dir()).unwrap();
        std::fs::hard_link(&other, lock_path(&env)).unwrap();
        let err = lock_in(&env, Duration::ZERO, Duration::ZERO, &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("other names"), "{err}");
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "export KEEP=1\n");
    }

    /// `uninstall --purge` deletes the state folder while it holds the lock: a waiter that
    /// then locks the deleted file tries again on the file at the path now.
    #[test]
    fn a_deleted_lock_file_is_not_trusted() {
        let tmp = tempfile::tempdir().unwrap();
        let env = env(tmp.path());
        let first = lock_in(&env, Duration::ZERO, Duration::ZERO, &mut |_| {}).unwrap();
        let env2 = env.clone();
        let waiter = std::thread::spawn(move || {
            let l = lock_in(&env2, Duration::ZERO, Duration::from_secs(10), &mut |_| {}).unwrap();
            assert!(same_file(l.file.as_ref().unwrap(), l.path()));
        });
        std::thread::sleep(Duration::from_millis(100));
        std::fs::remove_dir_all(env.state_dir()).unwrap();
        drop(first);
        waiter.join().unwrap();
        // Released, it leaves nothing: no lock file, no state folder it made.
        assert!(!env.state_dir().exists());
    }
}
