//! Reading another program's SQLite database without writing anything, not even next to it:
//! Goose's `sessions.db`, and Crush's `crush.db` (whose adapter uses this module too).
//!
//! SQLite's read-only connection to a WAL database whose `-wal` file does not exist (the
//! program closed: its last connection checkpointed and deleted it) *creates* `-wal` and `-shm`
//! and leaves them behind (SQLite ≥ 3.22; checked with 3.40 and the bundled library:
//! `docs/agents/goose.md#traps`). So a WAL database without a `-wal` file is opened
//! `immutable=1` (nothing created, no lock taken: the main file holds every commit, and a writer
//! that starts now appends to a new `-wal`, not to the main file), and [`with_db`] reads again
//! through a plain read-only connection when a `-wal` appeared during the read. Otherwise (a
//! `-wal` present, or a rollback-journal database, whose readers create nothing) `mode=ro`.
//! Checkpoint-on-close is switched off in both cases.

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a read waits for a lock (WAL readers rarely wait).
const BUSY_TIMEOUT: Duration = Duration::from_millis(1000);

/// A database error as the adapters report it: `<program> database <path>: <error>`.
pub(crate) fn db_err(program: &str, db: &Path, e: rusqlite::Error) -> crate::Error {
    crate::Error::Io(std::io::Error::other(format!(
        "{program} database {}: {e}",
        db.display()
    )))
}

/// `path` as an SQLite URI (`file:` + the path with `%`, `?` and `#` escaped) with `params`.
fn uri_of(path: &Path, params: &str) -> String {
    let mut s = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => s.push_str("%25"),
            '?' => s.push_str("%3f"),
            '#' => s.push_str("%23"),
            c => s.push(c),
        }
    }
    s.push('?');
    s.push_str(params);
    s
}

/// True when the file's header says WAL (bytes 18 and 19, the write and read versions, are 2).
fn header_says_wal(db: &Path) -> bool {
    use std::io::Read;
    let mut h = [0u8; 20];
    std::fs::File::open(db)
        .and_then(|mut f| f.read_exact(&mut h))
        .is_ok_and(|()| h[18] == 2 && h[19] == 2)
}

fn wal_of(db: &Path) -> PathBuf {
    let mut p = db.as_os_str().to_os_string();
    p.push("-wal");
    PathBuf::from(p)
}

/// Open `db` read-only as the module says; `shared` forces `mode=ro`. Returns whether the
/// connection is immutable.
fn open(program: &str, db: &Path, shared: bool) -> Result<(Connection, bool), crate::Error> {
    let immutable = !shared && header_says_wal(db) && !wal_of(db).exists();
    let params = if immutable {
        "mode=ro&immutable=1"
    } else {
        "mode=ro"
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(uri_of(db, params), flags)
        .map_err(|e| db_err(program, db, e))?;
    let _ = conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    );
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| db_err(program, db, e))?;
    Ok((conn, immutable))
}

/// Run the read `f` on a connection to `program`'s database `db` that writes nothing, and
/// once more on a plain read-only connection when the first was immutable and the program
/// started writing (a `-wal` file appeared) during it, whether the first read succeeded or
/// failed (an immutable read of pages a checkpoint is rewriting can fail as well as mislead).
///
/// Errors: the database cannot be opened, or `f`'s.
pub(crate) fn with_db<T>(
    program: &str,
    db: &Path,
    f: impl Fn(&Connection) -> Result<T, crate::Error>,
) -> Result<T, crate::Error> {
    let (conn, immutable) = open(program, db, false)?;
    let out = f(&conn);
    drop(conn);
    if immutable && wal_of(db).exists() {
        let (conn, _) = open(program, db, true)?;
        return f(&conn);
    }
    out
}

/// The column names of `table` (none when it does not exist).
pub(crate) fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info(\"{table}\")"))?;
    let cols = stmt
        .query_map([], |r| r.get::<_, String>(1))?
        .flatten()
        .collect();
    Ok(cols)
}

/// A text (or integer) value as text; anything else `None`.
pub(crate) fn text_of(v: ValueRef<'_>) -> Option<String> {
    match v {
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Integer(i) => Some(i.to_string()),
        _ => None,
    }
}

/// An integer (or a real, or digits in text) value; anything else `None`.
pub(crate) fn int_of(v: ValueRef<'_>) -> Option<i64> {
    match v {
        ValueRef::Integer(i) => Some(i),
        ValueRef::Real(f) => Some(f as i64),
        ValueRef::Text(t) => std::str::from_utf8(t).ok()?.trim().parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris() {
        assert_eq!(
            uri_of(Path::new("/a b/x?y#z%.db"), "mode=ro"),
            "file:/a b/x%3fy%23z%25.db?mode=ro"
        );
    }
}
