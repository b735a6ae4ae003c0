//! Owner-only files and folders (0600 / 0700 on Unix).

use std::path::Path;

/// Creates `dir` and its missing parents, each new one owner-only (0700).
///
/// Errors: the I/O error, with the path.
pub fn create_private_dir(dir: &Path) -> Result<(), String> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

/// Writes `data` to a new owner-only (0600) file at `path`, replacing any file there.
///
/// Errors: the I/O error, with the path.
pub fn write_private(path: &Path, data: &[u8]) -> Result<(), String> {
    use std::io::Write;
    let err = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let _ = std::fs::remove_file(path);
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let mut f = o.open(path).map_err(err)?;
    f.write_all(data).map_err(err)?;
    f.sync_all().map_err(err)
}

/// The bytes of the regular file at `path` (a symbolic link to one is followed), of at most
/// `max` bytes: a FIFO, a device (`/dev/zero`) or a folder in its place is refused before it is
/// opened (reading one would block or never end).
///
/// Errors: a message naming the path: not a regular file, larger than `max`, or the I/O error.
pub fn read_regular(path: &Path, max: u64) -> Result<Vec<u8>, String> {
    let meta =
        std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{}: not a regular file", path.display()));
    }
    if meta.len() > max {
        return Err(format!(
            "{}: {} bytes, more than the {max} expected",
            path.display(),
            meta.len()
        ));
    }
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}
