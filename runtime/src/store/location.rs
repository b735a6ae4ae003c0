//! Where a store lives: [`StoreLocation`].

use std::fmt;
use std::path::{Path, PathBuf};

/// Where a store lives: an SQLite database file today; a PostgreSQL URL is the next kind
/// (issue 13). Shown (`Display`) as the file's path, as the store's path was shown before.
/// `&Path`, `&PathBuf` and `&StoreLocation` convert into it (what [`super::Store::open`] takes).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreLocation {
    /// An SQLite database file, created (with its folder, owner-only) at the first open.
    Sqlite(PathBuf),
}

impl StoreLocation {
    /// The store of this user: `MEMTRAIL_DB` when set and not empty, else
    /// `$XDG_DATA_HOME/memtrail/memtrail.db` (`~/.local/share/memtrail/memtrail.db`). A `--db`
    /// flag is applied by the caller before this.
    pub fn from_env() -> StoreLocation {
        StoreLocation::Sqlite(db_path_from(
            std::env::var_os("MEMTRAIL_DB"),
            memtrail_adapters::paths::xdg_data_home,
        ))
    }

    /// The store the command line names: `--db PATH` (`flag`, taken as given, even empty)
    /// when given, else [`StoreLocation::from_env`].
    pub fn from_flag_or_env(flag: Option<PathBuf>) -> StoreLocation {
        flag.map_or_else(StoreLocation::from_env, StoreLocation::Sqlite)
    }

    /// The SQLite file of this location.
    pub fn sqlite_path(&self) -> &Path {
        match self {
            StoreLocation::Sqlite(p) => p,
        }
    }

    /// Whether the store has been created (the SQLite file exists).
    pub fn exists(&self) -> bool {
        self.sqlite_path().exists()
    }

    /// The bytes the store takes on disk: the SQLite file and its `-wal` file (0 for a file
    /// that does not exist).
    pub fn size_bytes(&self) -> u64 {
        ["", "-wal"]
            .iter()
            .filter_map(|s| {
                let mut p = self.sqlite_path().as_os_str().to_owned();
                p.push(s);
                std::fs::metadata(p).ok().map(|m| m.len())
            })
            .sum()
    }

    /// Delete the store (`memtrail uninstall --purge`): the SQLite file and its `-wal` and
    /// `-shm` files, those missing skipped; then memtrail's own data folder
    /// (`$XDG_DATA_HOME/memtrail`) when the file was in it and it is now empty (a folder of the
    /// user's, given with `--db` or `MEMTRAIL_DB`, stays). Nothing else is touched.
    ///
    /// Errors: the first file that exists but cannot be deleted (the files before it are gone).
    pub fn remove_files(&self) -> std::io::Result<()> {
        let db = self.sqlite_path();
        for suffix in ["", "-wal", "-shm"] {
            let mut p = db.as_os_str().to_owned();
            p.push(suffix);
            match std::fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        // remove_dir fails on a non-empty folder: what else is there stays.
        let own = memtrail_adapters::paths::xdg_data_home().join("memtrail");
        if db.parent() == Some(own.as_path()) {
            let _ = std::fs::remove_dir(&own);
        }
        Ok(())
    }
}

impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreLocation::Sqlite(p) => write!(f, "{}", p.display()),
        }
    }
}

impl From<&Path> for StoreLocation {
    fn from(p: &Path) -> StoreLocation {
        StoreLocation::Sqlite(p.to_path_buf())
    }
}

impl From<&PathBuf> for StoreLocation {
    fn from(p: &PathBuf) -> StoreLocation {
        StoreLocation::Sqlite(p.clone())
    }
}

impl From<&StoreLocation> for StoreLocation {
    fn from(l: &StoreLocation) -> StoreLocation {
        l.clone()
    }
}

/// The SQLite file of [`StoreLocation::from_env`], from the value of `MEMTRAIL_DB` and the data
/// folder (`$XDG_DATA_HOME`, asked only when `MEMTRAIL_DB` is unset or empty).
fn db_path_from(
    memtrail_db: Option<std::ffi::OsString>,
    data_home: impl FnOnce() -> PathBuf,
) -> PathBuf {
    match memtrail_db {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => data_home().join("memtrail").join("memtrail.db"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_shows_and_converts_as_its_path() {
        let l = StoreLocation::from(Path::new("/data/m.db"));
        assert_eq!(l, StoreLocation::Sqlite(PathBuf::from("/data/m.db")));
        assert_eq!(l.to_string(), "/data/m.db");
        assert_eq!(l.sqlite_path(), Path::new("/data/m.db"));
        assert_eq!(StoreLocation::from(&l), l);
        assert_eq!(StoreLocation::from(&PathBuf::from("/data/m.db")), l);
        assert!(!l.exists());
    }

    #[test]
    fn memtrail_db_comes_before_the_data_folder_unless_empty() {
        let xdg = || PathBuf::from("/x/share");
        assert_eq!(
            db_path_from(Some("/data/m.db".into()), || unreachable!()),
            PathBuf::from("/data/m.db")
        );
        assert_eq!(
            db_path_from(Some("".into()), xdg),
            PathBuf::from("/x/share/memtrail/memtrail.db")
        );
        assert_eq!(
            db_path_from(None, xdg),
            PathBuf::from("/x/share/memtrail/memtrail.db")
        );
    }

    #[test]
    fn remove_files_deletes_the_store_and_its_wal_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("m.db");
        for name in [
            "m.db",
            "m.db-wal",
            "m.db-shm",
            "m.db-journal",
            "m.db.damaged-1",
            "other",
        ] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        let l = StoreLocation::from(&db);
        assert!(l.exists());
        l.remove_files().unwrap();
        assert!(!l.exists());
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["m.db-journal", "m.db.damaged-1", "other"]);
        // Nothing there: nothing to do, no error; a folder not memtrail's own stays.
        l.remove_files().unwrap();
        assert!(dir.path().is_dir());
    }
}
