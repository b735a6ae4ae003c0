//! Where a store lives: [`StoreLocation`].

use std::fmt;
use std::path::{Path, PathBuf};

/// Where a store lives: an SQLite database file, or a PostgreSQL database that `memtrail sync`
/// fills (issue 13), queried directly by the read commands (`search`, `sessions list/show`,
/// `resume`, `handoff`, the MCP server's read tools). Shown (`Display`) as the file's path, or
/// as the URL with its password masked ([`masked_url`]). `&Path`, `&PathBuf` and
/// `&StoreLocation` convert into it (what [`super::Store::open`] takes).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreLocation {
    /// An SQLite database file, created (with its folder, owner-only) at the first open.
    Sqlite(PathBuf),
    /// A PostgreSQL database, by its URL (`postgres://…` or `postgresql://…`, libpq's form; the
    /// password, when the URL holds one, is never shown). Read only: memtrail writes the local
    /// SQLite store, and `memtrail sync` carries it to PostgreSQL.
    Postgres(String),
}

/// The environment variable naming the store (a path or a `postgres://` URL), before
/// `MEMTRAIL_DB`.
pub const STORE_ENV: &str = "MEMTRAIL_STORE";

impl StoreLocation {
    /// The store of this user: `MEMTRAIL_STORE` when set and not empty (a path or a
    /// `postgres://` URL, see [`StoreLocation::parse`]), else `MEMTRAIL_DB` when set and not
    /// empty, else `$XDG_DATA_HOME/memtrail/memtrail.db` (`~/.local/share/memtrail/memtrail.db`).
    /// A `--store` or `--db` flag is applied by the caller before this.
    pub fn from_env() -> StoreLocation {
        match std::env::var_os(STORE_ENV).filter(|v| !v.is_empty()) {
            Some(v) => StoreLocation::parse(&v.to_string_lossy()),
            None => StoreLocation::local_from_env(),
        }
    }

    /// The local SQLite store of this user, `MEMTRAIL_STORE` left aside: `MEMTRAIL_DB` when set
    /// and not empty, else `$XDG_DATA_HOME/memtrail/memtrail.db`. What a hook writes when
    /// `MEMTRAIL_STORE` names a PostgreSQL database (a shell that queries a team server must not
    /// stop its agents' capture).
    pub fn local_from_env() -> StoreLocation {
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

    /// A store named by a user: a `postgres://` or `postgresql://` URL (the scheme in any case)
    /// is a PostgreSQL store, anything else the path of an SQLite file (as `--db` takes it).
    pub fn parse(s: &str) -> StoreLocation {
        if is_postgres_url(s) {
            StoreLocation::Postgres(s.to_string())
        } else {
            StoreLocation::Sqlite(PathBuf::from(s))
        }
    }

    /// The SQLite file of this location; `None` for a PostgreSQL store.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match self {
            StoreLocation::Sqlite(p) => Some(p),
            StoreLocation::Postgres(_) => None,
        }
    }

    /// The URL of a PostgreSQL store (password included: never print it; `Display` masks it);
    /// `None` for an SQLite store.
    pub fn postgres_url(&self) -> Option<&str> {
        match self {
            StoreLocation::Postgres(u) => Some(u),
            StoreLocation::Sqlite(_) => None,
        }
    }

    /// The SQLite file of this location; for a PostgreSQL store, [`crate::Error::Unsupported`]
    /// saying that `what` (a command: `import`, `purge`, …) writes the local store, how to
    /// name it instead, and that `memtrail sync` carries the local store to PostgreSQL.
    pub fn sqlite_file(&self, what: &str) -> crate::Result<&Path> {
        match self {
            StoreLocation::Sqlite(p) => Ok(p),
            StoreLocation::Postgres(_) => Err(crate::Error::Unsupported(format!(
                "{what} writes the local SQLite store, and the store named ({self}, by --store or {STORE_ENV}) is a PostgreSQL database, which memtrail only reads; run it without --store (unset {STORE_ENV}) or with --db PATH, and `memtrail sync` carries the local store to PostgreSQL"
            ))),
        }
    }

    /// `Ok(())` for an SQLite store; the error of [`StoreLocation::sqlite_file`] for a
    /// PostgreSQL store.
    pub fn require_local(&self, what: &str) -> crate::Result<()> {
        self.sqlite_file(what).map(|_| ())
    }

    /// Whether the store has been created (the SQLite file exists). A PostgreSQL store is
    /// taken to exist (connecting says otherwise).
    pub fn exists(&self) -> bool {
        match self {
            StoreLocation::Sqlite(p) => p.exists(),
            StoreLocation::Postgres(_) => true,
        }
    }

    /// The bytes the store takes on disk: the SQLite file and its `-wal` file (0 for a file
    /// that does not exist, and for a PostgreSQL store).
    pub fn size_bytes(&self) -> u64 {
        let Some(db) = self.sqlite_path() else {
            return 0;
        };
        ["", "-wal"]
            .iter()
            .filter_map(|s| {
                let mut p = db.as_os_str().to_owned();
                p.push(s);
                std::fs::metadata(p).ok().map(|m| m.len())
            })
            .sum()
    }

    /// Delete the store (`memtrail uninstall --purge`): the SQLite file, its `-wal` and `-shm`
    /// files, the vectors' side file `-vectors` (search by meaning), the write gate `-gate`
    /// (an empty lock file) and the marker `-scrub` (an empty file: a checkpoint left to do,
    /// `maintenance::scrub_marker`), those missing skipped; then memtrail's own data folder
    /// (`$XDG_DATA_HOME/memtrail`) when the file was in it and it is now empty (a folder of the
    /// user's, given with `--db` or `MEMTRAIL_DB`, stays). A path that is a symlink: the file
    /// it leads to (and its `-wal`, `-shm`, …) is deleted as well as the link. Nothing else is
    /// touched.
    ///
    /// Errors: the first file that exists but cannot be deleted (the files before it are gone);
    /// [`std::io::ErrorKind::Unsupported`] for a PostgreSQL store (memtrail deletes no
    /// database).
    pub fn remove_files(&self) -> std::io::Result<()> {
        let Some(db) = self.sqlite_path() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                format!("{self} is a PostgreSQL database: memtrail does not delete it"),
            ));
        };
        // A store path that is a symlink (the store on another disk): the file it leads to
        // and SQLite's `-wal`/`-shm` beside it (named after the file really opened) go first,
        // then the link and what memtrail keeps beside the path it was given.
        let real = super::files::resolve_links(db);
        let paths: &[&Path] = if real != *db { &[&real, db] } else { &[db] };
        for base in paths {
            for suffix in ["", "-wal", "-shm", "-vectors", "-gate", "-scrub"] {
                let mut p = base.as_os_str().to_owned();
                p.push(suffix);
                match std::fs::remove_file(&p) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    // Not memtrail's marker (a folder put there): left, as anything else is.
                    Err(_) if suffix == "-scrub" => {}
                    Err(e) => return Err(e),
                }
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
            StoreLocation::Postgres(u) => f.write_str(&masked_url(u)),
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

/// True for a `postgres://` or `postgresql://` URL (the scheme in any case).
pub fn is_postgres_url(s: &str) -> bool {
    let lower = s.get(..13).unwrap_or(s).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// A PostgreSQL URL fit to show: the password of its user info (`user:PASSWORD@`) and the
/// value of a `password=` query parameter replaced by `****`; the rest as given. A URL without
/// a password is returned unchanged; text with an `@` but no `scheme://` (not a URL: it could
/// be anything) is shown as `****`. The one masking rule of memtrail (the PostgreSQL crate's
/// `mask_url` is this).
pub fn masked_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None if url.contains('@') => return "****".into(),
        None => ("", url),
    };
    // The authority ends at the first `/`, `?` or `#`; the user info at its last `@`.
    let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (auth, tail) = rest.split_at(auth_end);
    let auth = match auth.rfind('@') {
        Some(at) => {
            let (info, host) = auth.split_at(at);
            match info.find(':') {
                Some(c) => format!("{}:****{host}", &info[..c]),
                None => auth.to_string(),
            }
        }
        None => auth.to_string(),
    };
    let tail = match tail.find('?') {
        Some(q) => {
            let (path, query) = tail.split_at(q + 1);
            let params: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if names_a_password(k) => format!("{k}=****"),
                    _ => kv.to_string(),
                })
                .collect();
            format!("{path}{}", params.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}{auth}{tail}")
}

/// Whether the query parameter named `key` (as written: percent-encoded or not, any case)
/// holds a password: libpq's `password`, or its `sslpassword` (not one memtrail reads, but
/// a URL that holds it is shown in the error that says so).
fn names_a_password(key: &str) -> bool {
    let mut name = Vec::with_capacity(key.len());
    let b = key.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                name.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                name.push(c);
                i += 1;
            }
        }
    }
    let name = String::from_utf8_lossy(&name).to_ascii_lowercase();
    name == "password" || name == "sslpassword"
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
        assert_eq!(l.sqlite_path(), Some(Path::new("/data/m.db")));
        assert_eq!(l.postgres_url(), None);
        assert_eq!(StoreLocation::from(&l), l);
        assert_eq!(StoreLocation::from(&PathBuf::from("/data/m.db")), l);
        assert!(!l.exists());
    }

    #[test]
    fn a_postgres_url_is_a_postgres_store_shown_without_its_password() {
        let l =
            StoreLocation::parse("postgres://me:s3cr%40t@db.example:5433/memtrail?sslmode=require");
        assert_eq!(
            l.to_string(),
            "postgres://me:****@db.example:5433/memtrail?sslmode=require"
        );
        assert_eq!(l.sqlite_path(), None);
        assert_eq!(
            l.postgres_url(),
            Some("postgres://me:s3cr%40t@db.example:5433/memtrail?sslmode=require")
        );
        assert!(l.exists());
        assert_eq!(l.size_bytes(), 0);
        assert_eq!(
            l.remove_files().unwrap_err().kind(),
            std::io::ErrorKind::Unsupported
        );
        let e = l.require_local("import").unwrap_err().to_string();
        assert!(e.starts_with("import writes the local SQLite store"), "{e}");
        assert!(e.contains("postgres://me:****@db.example"), "{e}");
        assert!(!e.contains("s3cr"), "{e}");
        assert!(e.contains("`memtrail sync`"), "{e}");
        assert_eq!(
            StoreLocation::parse("PostgreSQL://h/db"),
            StoreLocation::Postgres("PostgreSQL://h/db".into())
        );
        assert_eq!(
            StoreLocation::parse("postgres.db"),
            StoreLocation::Sqlite(PathBuf::from("postgres.db"))
        );
        assert!(
            StoreLocation::parse("/x/m.db")
                .require_local("import")
                .is_ok()
        );
    }

    #[test]
    fn a_postgres_store_is_not_opened_as_an_sqlite_file() {
        let e = crate::Store::open(StoreLocation::parse("postgres://me:pw@h/db"))
            .err()
            .unwrap();
        assert!(matches!(e, crate::Error::Unsupported(_)));
        assert_eq!(
            e.to_string(),
            "the store postgres://me:****@h/db is a PostgreSQL database, which only search, sessions list and show, resume, handoff and mcp read; this command uses the local SQLite store: run it without --store (unset MEMTRAIL_STORE) or with --db PATH"
        );
    }

    #[test]
    fn masked_url_hides_every_password_and_nothing_else() {
        assert_eq!(masked_url("postgres://h/db"), "postgres://h/db");
        assert_eq!(masked_url("postgres://me@h/db"), "postgres://me@h/db");
        assert_eq!(masked_url("postgres://me:pw@h"), "postgres://me:****@h");
        // An `@` in the password: the user info ends at the last `@` of the authority.
        assert_eq!(
            masked_url("postgres://me:p@w@h/db"),
            "postgres://me:****@h/db"
        );
        assert_eq!(
            masked_url("postgresql://h/db?user=me&password=pw&sslmode=verify-full"),
            "postgresql://h/db?user=me&password=****&sslmode=verify-full"
        );
        assert_eq!(masked_url("postgres://me:@h"), "postgres://me:****@h");
        // The name as PostgreSQL reads it: percent-encoded, in any case (attack review: a
        // `pass%77ord=` value was shown by `web --store` and in every connection error).
        assert_eq!(
            masked_url("postgres://h/db?pass%77ord=pw&PASSWORD=pw2&sslpassword=pw3&passfile=/p"),
            "postgres://h/db?pass%77ord=****&PASSWORD=****&sslpassword=****&passfile=/p"
        );
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
            "m.db-vectors",
            "m.db-gate",
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

    /// A store path that is a symlink to a file on another disk (README: "the store may live
    /// on another disk"): `uninstall --purge` said "deleted the store" and removed only the
    /// link, leaving every captured message in the file it led to.
    #[cfg(unix)]
    #[test]
    fn remove_files_deletes_the_file_a_symlinked_store_leads_to() {
        let dir = tempfile::tempdir().unwrap();
        let (share, disk) = (dir.path().join("share"), dir.path().join("disk"));
        std::fs::create_dir_all(&share).unwrap();
        std::fs::create_dir_all(&disk).unwrap();
        for name in ["real.db", "real.db-wal", "real.db-shm", "other"] {
            std::fs::write(disk.join(name), b"x").unwrap();
        }
        let db = share.join("memtrail.db");
        std::os::unix::fs::symlink("../disk/real.db", &db).unwrap();
        std::fs::write(share.join("memtrail.db-gate"), b"").unwrap();
        StoreLocation::from(&db).remove_files().unwrap();
        let names = |d: &Path| {
            let mut v: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names(&disk), ["other"]);
        assert!(names(&share).is_empty(), "{:?}", names(&share));
    }
}
