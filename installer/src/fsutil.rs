//! File-system helpers: symlink targets, atomic writes that keep a file's mode, private
//! directories, UTC time stamps.

use crate::error::InstallError;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The key of a configured path in the install state's `files` and in a backup's `index.json`
/// (`files` values, `absent`): the path as given (not canonicalised), lossily as UTF-8.
pub(crate) fn path_key(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Follow `path` through symlinks to the file that is really edited (which may not exist yet).
/// The link itself is never replaced.
pub(crate) fn resolve_target(path: &Path) -> Result<PathBuf, InstallError> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let t = fs::read_link(&p).map_err(|e| InstallError::io(&p, e))?;
                p = if t.is_absolute() {
                    t
                } else {
                    p.parent().unwrap_or(Path::new("/")).join(t)
                };
            }
            _ => return Ok(p),
        }
    }
    Err(InstallError::io(
        path,
        std::io::Error::other("too many levels of symbolic links"),
    ))
}

/// Largest agent config read (bytes): Claude Code's `~/.claude.json` grows with its history,
/// to a few MB.
pub(crate) const MAX_CONFIG_BYTES: u64 = 256 * 1024 * 1024;

/// The file's bytes, or `None` when it does not exist. Only a regular file of at most
/// [`MAX_CONFIG_BYTES`] is read, opened without blocking: a FIFO or a link to a device where an
/// agent's config should be is an error naming it, not a hang of `status`, `install` or the
/// web page's status (nor a read of `/dev/zero` that fills the memory).
pub(crate) fn read_opt(path: &Path) -> Result<Option<Vec<u8>>, InstallError> {
    match memtrail_adapters::paths::read_small(path, MAX_CONFIG_BYTES) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(InstallError::io(path, e)),
    }
}

/// What identifies one version of a file cheaply: device, inode, size, modification and change
/// times. A rename over the file gives a new inode; an in-place write a new mtime and ctime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

#[cfg(unix)]
fn id_of(m: &fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    FileId {
        dev: m.dev(),
        ino: m.ino(),
        len: m.len(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ctime: (m.ctime(), m.ctime_nsec()),
    }
}

#[cfg(not(unix))]
fn id_of(m: &fs::Metadata) -> FileId {
    let t = |r: std::io::Result<SystemTime>| {
        r.ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| (d.as_secs() as i64, d.subsec_nanos() as i64))
            .unwrap_or((0, 0))
    };
    FileId {
        dev: 0,
        ino: 0,
        len: m.len(),
        mtime: t(m.modified()),
        ctime: t(m.created()),
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::FileId;
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    fn rename2(from: &Path, to: &Path, flags: libc::c_uint) -> std::io::Result<()> {
        let from = CString::new(from.as_os_str().as_bytes())?;
        let to = CString::new(to.as_os_str().as_bytes())?;
        // SAFETY: two NUL-terminated paths that live across the call; renameat2 only reads them.
        let r = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                libc::AT_FDCWD,
                from.as_ptr(),
                libc::AT_FDCWD,
                to.as_ptr(),
                flags,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    fn unsupported(e: &std::io::Error) -> bool {
        matches!(
            e.raw_os_error(),
            Some(libc::EINVAL) | Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP)
        )
    }

    /// Put `tmp` at `target` if `target` is still `id`: `Some(true)` done, `Some(false)` not
    /// done (another version is there; `tmp` still holds ours), `None` the flags are not
    /// supported. An error means a swap could not be undone.
    pub(super) fn swap_in(
        tmp: &Path,
        target: &Path,
        id: Option<FileId>,
    ) -> std::io::Result<Option<bool>> {
        let Some(id) = id else {
            return match rename2(tmp, target, libc::RENAME_NOREPLACE) {
                Ok(()) => Ok(Some(true)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(Some(false)),
                Err(e) if unsupported(&e) => Ok(None),
                Err(e) => Err(e),
            };
        };
        match rename2(tmp, target, libc::RENAME_EXCHANGE) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Some(false)),
            Err(e) if unsupported(&e) => return Ok(None),
            Err(e) => return Err(e),
        }
        // `tmp` now names the displaced version. A rename changes an inode's ctime, so it is
        // compared without it.
        let displaced = std::fs::symlink_metadata(tmp).map(|m| super::id_of(&m))?;
        if displaced.same_content_as(&id) {
            std::fs::remove_file(tmp)?;
            return Ok(Some(true));
        }
        rename2(tmp, target, libc::RENAME_EXCHANGE)?;
        Ok(Some(false))
    }
}

impl FileId {
    /// The same version of a file, by device, inode, size and modification time (not the
    /// change time, which a rename moves).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn same_content_as(&self, other: &FileId) -> bool {
        (self.dev, self.ino, self.len, self.mtime) == (other.dev, other.ino, other.len, other.mtime)
    }
}

/// The file's bytes and the identity of the version read (`None`, `None` when it does not
/// exist). The identity comes from the open file, so it belongs to exactly these bytes.
pub(crate) fn read_with_id(path: &Path) -> Result<(Option<Vec<u8>>, Option<FileId>), InstallError> {
    use std::io::Read;
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((None, None)),
        Err(e) => return Err(InstallError::io(path, e)),
    };
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)
        .map_err(|e| InstallError::io(path, e))?;
    let id = f
        .metadata()
        .map(|m| id_of(&m))
        .map_err(|e| InstallError::io(path, e))?;
    Ok((Some(bytes), Some(id)))
}

/// The identity of the version of the file now at `path` (`None`: missing or unreadable).
pub(crate) fn file_id(path: &Path) -> Option<FileId> {
    fs::metadata(path).ok().map(|m| id_of(&m))
}

/// True when the file at `path` is still the version identified by `id` (`None`: still
/// missing). A stat, so the window before the caller's rename stays a few microseconds wide.
pub(crate) fn still(path: &Path, id: Option<FileId>) -> Result<bool, InstallError> {
    match fs::metadata(path) {
        Ok(m) => Ok(Some(id_of(&m)) == id),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(id.is_none()),
        Err(e) => Err(InstallError::io(path, e)),
    }
}

/// True when the file at `path` has more than one hard link.
pub(crate) fn hard_linked(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(path).is_ok_and(|m| m.nlink() > 1)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// True when the file exists and has no write permission bit at all.
pub(crate) fn is_read_only(path: &Path) -> bool {
    match fs::metadata(path) {
        #[cfg(unix)]
        Ok(m) => {
            use std::os::unix::fs::PermissionsExt;
            m.permissions().mode() & 0o222 == 0
        }
        #[cfg(not(unix))]
        Ok(m) => m.permissions().readonly(),
        Err(_) => false,
    }
}

/// The directories `create_dir_all(dir)` would create, outermost first.
pub(crate) fn missing_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if d.as_os_str().is_empty() || d.exists() {
            break;
        }
        out.push(d.to_path_buf());
        cur = d.parent();
    }
    out.reverse();
    out
}

/// Remove `dirs` (deepest first) when they are empty; anything else is left alone.
pub(crate) fn remove_empty_dirs(dirs: &[PathBuf]) {
    let mut dirs: Vec<&PathBuf> = dirs.iter().collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    dirs.dedup();
    for d in dirs {
        // `remove_dir` fails on a non-empty directory, which is what we want.
        let _ = fs::remove_dir(d);
    }
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary file next to its target, removed on drop unless persisted.
pub(crate) struct TempFile {
    path: PathBuf,
    done: bool,
}

/// Remove the temp files of `name` in `dir` ([`TempFile`]'s `.<name>.memtrail-<pid>-<n>.tmp`)
/// whose process is gone: an install killed between writing one and renaming it over the
/// config left a full copy of the config there (owner-only, but a second copy of its keys).
/// Only where a process's liveness can be told (`/proc`); a file of a live process, or of a
/// pid now someone else's, stays.
fn remove_dead_temp_files(dir: &Path, name: &str) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let prefix = format!(".{name}.memtrail-");
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(rest) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|r| r.strip_suffix(".tmp"))
        else {
            continue;
        };
        let Some((pid, n)) = rest.split_once('-') else {
            continue;
        };
        let (Ok(pid), true) = (pid.parse::<u32>(), n.bytes().all(|b| b.is_ascii_digit())) else {
            continue;
        };
        let is_file = e.file_type().is_ok_and(|t| t.is_file());
        if is_file && pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_file(e.path());
        }
    }
}

impl TempFile {
    /// Create a temp file in `target`'s directory holding `bytes`, flushed to disk. Its mode is
    /// owner-only whatever the umask: `mode` (the target's current mode) without its group and
    /// other bits, else `new_mode`, else 0600. What memtrail writes holds hooks, MCP servers
    /// (programs the agents run), skills or keys: nobody else may change or read it.
    pub fn write(
        target: &Path,
        bytes: &[u8],
        mode: Option<u32>,
        new_mode: Option<u32>,
    ) -> Result<TempFile, InstallError> {
        Self::write_with_mode(target, bytes, owner_only_mode(mode, new_mode))
    }

    /// [`TempFile::write`] with exactly the mode `final_mode` (to put back a file as it was).
    pub fn write_with_mode(
        target: &Path,
        bytes: &[u8],
        final_mode: u32,
    ) -> Result<TempFile, InstallError> {
        let dir = target.parent().unwrap_or(Path::new("."));
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "file".into());
        remove_dead_temp_files(dir, &name);
        let mut attempt = 0;
        let (file, path) = loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!(".{name}.memtrail-{}-{n}.tmp", std::process::id()));
            let mut o = OpenOptions::new();
            o.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                o.mode(0o600);
            }
            match o.open(&path) {
                Ok(f) => break (f, path),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                    attempt += 1;
                }
                Err(e) => return Err(InstallError::io(target, e)),
            }
        };
        let tmp = TempFile { path, done: false };
        write_and_sync(file, bytes).map_err(|e| InstallError::io(target, e))?;
        // Run as root (`sudo memtrail install`), keep the user's file the user's.
        let owner_of = if target.exists() { target } else { dir };
        match_owner(&tmp.path, owner_of);
        #[cfg(unix)]
        {
            // Exactly this mode, whatever the umask took away or would have let through.
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&tmp.path, fs::Permissions::from_mode(final_mode))
                .map_err(|e| InstallError::io(target, e))?;
        }
        #[cfg(not(unix))]
        let _ = final_mode;
        Ok(tmp)
    }

    /// Rename over `target` only if `target` is still the version `id` (`None`: still
    /// missing); `Ok(false)` (and the temp file removed) when another program wrote it
    /// meanwhile, so that the caller redoes its edit on the new bytes.
    ///
    /// On Linux the check and the rename are one step: `renameat2(RENAME_EXCHANGE)` swaps the
    /// two files atomically and the displaced version is checked afterwards; if it was not `id`
    /// (a write landed between the caller's last look and the rename), the swap is undone, so
    /// the other program's write is never lost. A missing target is created with
    /// `RENAME_NOREPLACE`. Elsewhere, or on a filesystem without these flags, a stat just before
    /// the rename (a window of microseconds).
    ///
    /// A target with more than one hard link (a dotfiles folder linking its copy into place) is
    /// written in place instead ([`TempFile::write_into`]): a rename would split the links,
    /// leaving the other name with the old bytes.
    pub fn persist_if_still(self, target: &Path, id: Option<FileId>) -> Result<bool, InstallError> {
        if hard_linked(target) {
            return self.write_into(target, id);
        }
        #[cfg(target_os = "linux")]
        {
            match linux::swap_in(&self.path, target, id) {
                Ok(Some(true)) => {
                    let mut this = self;
                    this.done = true;
                    sync_dir(target);
                    return Ok(true);
                }
                // Undone (or never done): the temp file holds our bytes; dropping it removes them.
                Ok(Some(false)) => return Ok(false),
                Ok(None) => {} // flags not supported here: the portable way below.
                Err(e) => {
                    // The swap could not be undone: the other program's version is left at the
                    // temp path rather than deleted.
                    let mut this = self;
                    this.done = true;
                    return Err(InstallError::io(target, e));
                }
            }
        }
        if !still(target, id)? {
            return Ok(false);
        }
        self.persist(target)?;
        Ok(true)
    }

    /// Copy the temp file's bytes and mode into the file at `target` itself (truncate, write,
    /// fsync: the inode, so every hard link of it, gets them), if it is still the version `id`;
    /// `Ok(false)` otherwise. Not atomic: the caller backed the file up before (apply does), and
    /// the bytes are complete and flushed in the temp file before the target is truncated. The
    /// mode is set first (a file of another owner refuses it before anything changed); a write
    /// that fails after the truncation (a full disk) puts the bytes read just before back, and
    /// the error is returned.
    fn write_into(self, target: &Path, id: Option<FileId>) -> Result<bool, InstallError> {
        use std::io::Write;
        let io = |e| InstallError::io(target, e);
        let bytes = fs::read(&self.path).map_err(io)?;
        let perms = fs::metadata(&self.path).map_err(io)?.permissions();
        if !still(target, id)? {
            return Ok(false);
        }
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .open(target)
            .map_err(io)?;
        let mut old = Vec::new();
        std::io::Read::read_to_end(&mut f, &mut old).map_err(io)?;
        let old_perms = f.metadata().map_err(io)?.permissions();
        f.set_permissions(perms).map_err(io)?;
        let write = |f: &mut File, b: &[u8]| -> std::io::Result<()> {
            f.set_len(0)?;
            std::io::Seek::rewind(f)?;
            f.write_all(b)?;
            f.sync_all()
        };
        if let Err(e) = write(&mut f, &bytes) {
            // Best effort: the file as it was (the backup holds it too).
            let _ = write(&mut f, &old);
            let _ = f.set_permissions(old_perms);
            return Err(io(e));
        }
        Ok(true)
    }

    /// Rename over `target` and flush the directory.
    pub fn persist(mut self, target: &Path) -> Result<(), InstallError> {
        fs::rename(&self.path, target).map_err(|e| InstallError::io(target, e))?;
        self.done = true;
        sync_dir(target);
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Give `path` the owner and group of `like` when they differ and we may (i.e. as root);
/// otherwise leave it.
pub(crate) fn match_owner(path: &Path, like: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(want), Ok(have)) = (fs::metadata(like), fs::metadata(path))
            && (want.uid(), want.gid()) != (have.uid(), have.gid())
        {
            let _ = std::os::unix::fs::chown(path, Some(want.uid()), Some(want.gid()));
        }
    }
    #[cfg(not(unix))]
    let _ = (path, like);
}

/// The mode memtrail gives a file it writes: the current mode `existing` without its group and
/// other bits (the owner's own bits kept), else `new_mode`, else 0600.
pub(crate) fn owner_only_mode(existing: Option<u32>, new_mode: Option<u32>) -> u32 {
    match existing {
        Some(m) => m & 0o7700,
        None => new_mode.unwrap_or(0o600) & 0o7700,
    }
}

/// Give the directory `dir` mode 0700 when others may write to it or read it (best effort): a
/// folder memtrail owns (a skill's) that an older version created under a loose umask.
pub(crate) fn tighten_dir(dir: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(m) = fs::symlink_metadata(dir)
            && m.is_dir()
            && m.permissions().mode() & 0o077 != 0
        {
            let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// `create_dir_all`, giving each created directory mode 0700 (whatever the umask) and the owner
/// of the directory above it.
pub(crate) fn create_dirs_like_parent(dir: &Path) -> Result<(), InstallError> {
    for d in missing_dirs(dir) {
        let mut b = fs::DirBuilder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            b.mode(0o700);
        }
        match b.create(&d) {
            Ok(()) => {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    fs::set_permissions(&d, fs::Permissions::from_mode(0o700))
                        .map_err(|e| InstallError::io(&d, e))?;
                }
                if let Some(parent) = d.parent() {
                    match_owner(&d, parent);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(InstallError::io(&d, e)),
        }
    }
    Ok(())
}

fn write_and_sync(mut f: File, bytes: &[u8]) -> std::io::Result<()> {
    f.write_all(bytes)?;
    f.sync_all()
}

/// Flush a directory entry change (a rename or delete) to disk, where the platform allows it.
pub(crate) fn sync_dir(target: &Path) {
    #[cfg(unix)]
    if let Some(dir) = target.parent()
        && let Ok(d) = File::open(dir)
    {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = target;
}

/// The permission bits of an existing file.
pub(crate) fn mode_of(path: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(path)
            .ok()
            .map(|m| m.permissions().mode() & 0o7777)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Write `bytes` to `target` atomically (temp file, fsync, rename), with the owner's bits of
/// its mode ([`owner_only_mode`]).
pub(crate) fn write_atomic(
    target: &Path,
    bytes: &[u8],
    mode: Option<u32>,
    new_mode: Option<u32>,
) -> Result<(), InstallError> {
    let mode = mode.or_else(|| mode_of(target));
    TempFile::write(target, bytes, mode, new_mode)?.persist(target)
}

/// `YYYYMMDDTHHMMSSZ` for a time (UTC).
pub(crate) fn utc_stamp(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// A temp file an install killed before its rename left (a full copy of the config) goes
    /// at the next write of that file, when its process is gone; a live process's, another
    /// file's, and a name that is not memtrail's stay.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_dead_installs_temp_file_is_removed_at_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("settings.json");
        fs::write(&target, "A").unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let me = std::process::id();
        for name in [
            format!(".settings.json.memtrail-{dead}-3.tmp"),
            format!(".settings.json.memtrail-{me}-900.tmp"),
            ".settings.json.memtrail-1-2.tmp".to_string(),
            format!(".other.json.memtrail-{dead}-1.tmp"),
            ".settings.json.memtrail-x-1.tmp".to_string(),
        ] {
            fs::write(dir.path().join(name), "copy with a key").unwrap();
        }
        let (_, id) = read_with_id(&target).unwrap();
        let tmp = TempFile::write(&target, b"ours", None, None).unwrap();
        assert!(tmp.persist_if_still(&target, id).unwrap());
        let mut want = vec![
            format!(".other.json.memtrail-{dead}-1.tmp"),
            ".settings.json.memtrail-1-2.tmp".to_string(),
            format!(".settings.json.memtrail-{me}-900.tmp"),
            ".settings.json.memtrail-x-1.tmp".to_string(),
            "settings.json".to_string(),
        ];
        want.sort();
        assert_eq!(names(dir.path()), want);
    }

    /// The rename happens only over the version edited; a version another program wrote in
    /// between (new inode, or the file created meanwhile) is kept, and no temp file is left.
    #[test]
    fn persist_if_still_never_replaces_another_programs_write() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("settings.json");
        fs::write(&target, "A").unwrap();
        let (_, id) = read_with_id(&target).unwrap();
        // Unchanged: ours goes in.
        let tmp = TempFile::write(&target, b"ours-1", None, None).unwrap();
        assert!(tmp.persist_if_still(&target, id).unwrap());
        assert_eq!(fs::read(&target).unwrap(), b"ours-1");
        assert_eq!(names(dir.path()), ["settings.json"]);
        // Another program replaces the file after our read: ours is not put in.
        let (_, id) = read_with_id(&target).unwrap();
        let other = dir.path().join("other.tmp");
        fs::write(&other, "theirs").unwrap();
        fs::rename(&other, &target).unwrap();
        let tmp = TempFile::write(&target, b"ours-2", None, None).unwrap();
        assert!(!tmp.persist_if_still(&target, id).unwrap());
        assert_eq!(fs::read(&target).unwrap(), b"theirs");
        assert_eq!(names(dir.path()), ["settings.json"]);
        // A file that did not exist and was created meanwhile: not replaced either.
        let fresh = dir.path().join("mcp.json");
        let tmp = TempFile::write(&fresh, b"ours-3", None, None).unwrap();
        fs::write(&fresh, "created").unwrap();
        assert!(!tmp.persist_if_still(&fresh, None).unwrap());
        assert_eq!(fs::read(&fresh).unwrap(), b"created");
        assert_eq!(names(dir.path()), ["mcp.json", "settings.json"]);
    }

    #[test]
    fn stamps() {
        assert_eq!(utc_stamp(UNIX_EPOCH), "19700101T000000Z");
        let t =
            UNIX_EPOCH + Duration::from_secs(((20_507 * 86_400) + 13 * 3600 + 19 * 60 + 38) as u64);
        assert_eq!(utc_stamp(t), "20260223T131938Z");
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(utc_stamp(t), "20000229T000000Z");
    }
}
