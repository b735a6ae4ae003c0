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
        StoreLocation::Sqlite(default_db_path())
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

/// The path of [`StoreLocation::from_env`]: `MEMTRAIL_DB` when set, else
/// `$XDG_DATA_HOME/memtrail/memtrail.db` (`~/.local/share/memtrail/memtrail.db`). A `--db` flag
/// is applied by the caller before this.
pub fn default_db_path() -> PathBuf {
    match std::env::var_os("MEMTRAIL_DB") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => memtrail_adapters::paths::xdg_data_home()
            .join("memtrail")
            .join("memtrail.db"),
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
}
