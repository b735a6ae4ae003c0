//! The store's file: created and kept owner-only, symlinks followed, its identity.

use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// The identity of the file at `path` (device and inode on Unix; elsewhere only whether it
/// exists), `None` when there is none.
pub(super) fn file_id(path: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Some((0, 0))
    }
}

#[cfg(unix)]
pub(super) fn create_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.exists() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    Ok(())
}

#[cfg(not(unix))]
pub(super) fn create_private_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    Ok(())
}

/// `path` with its symlinks followed (each link's target, relative to the link's folder), to
/// the file really opened, which may not exist yet. At most 40 links, like the kernel.
pub(super) fn resolve_links(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::read_link(&p) {
            Ok(t) if t.is_absolute() => p = t,
            Ok(t) => p = p.parent().unwrap_or(Path::new("/")).join(t),
            Err(_) => break,
        }
    }
    p
}

/// Give the store file at `real` (and its `-wal` and `-shm` files when they exist) mode 0600
/// when anyone but the owner has access: a store left 0644 by an older version, a copy or a
/// umask is tightened at the next open. SQLite gives the files it creates the store's mode.
/// Errors: the mode cannot be changed (e.g. another user's file), naming the file.
#[cfg(unix)]
pub(super) fn make_owner_only(real: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for suffix in ["", "-wal", "-shm"] {
        let mut p = real.as_os_str().to_owned();
        p.push(suffix);
        let p = PathBuf::from(p);
        let Ok(m) = std::fs::metadata(&p) else {
            continue;
        };
        if m.is_file() && m.permissions().mode() & 0o077 != 0 {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).map_err(|e| {
                Error::Invalid(format!(
                    "{} is readable by other users and its mode cannot be changed to 0600: {e}",
                    p.display()
                ))
            })?;
        }
    }
    Ok(())
}

#[cfg(not(unix))]
pub(super) fn make_owner_only(_real: &Path) -> Result<()> {
    Ok(())
}

#[cfg(unix)]
pub(super) fn create_private_file(path: &Path) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(not(unix))]
pub(super) fn create_private_file(_path: &Path) -> Result<()> {
    Ok(())
}
