//! What several commands share: opening the store, absolute paths, memtrail's own binary path.

use anyhow::{Context, Result};
use memtrail_runtime::read::ReadStore;
use memtrail_runtime::{Store, StoreLocation};
use std::path::PathBuf;

/// The store for a read-only command: `None` when it does not exist yet (reading never creates it).
pub fn open_store_read(db: &StoreLocation) -> Result<Option<Store>> {
    if !db.exists() {
        return Ok(None);
    }
    open_store(db).map(Some)
}

/// The store for a read command (`search`, `sessions list/show`, `resume`, `handoff`): the
/// local SQLite store (`None` when it does not exist yet: reading never creates it) or a
/// PostgreSQL store (connected now); the error names its location, password masked. What a
/// PostgreSQL store returns is redacted again with this machine's rules, the user's
/// (`[privacy] redact`) included: a config that cannot be read or a rule that does not compile
/// is an error before anything is read.
pub fn open_reader(db: &StoreLocation) -> Result<Option<Box<dyn ReadStore>>> {
    match db.postgres_url() {
        Some(url) => Ok(Some(Box::new({
            memtrail_runtime::privacy::Privacy::load()?;
            memtrail_pg::PgReader::connect(url)
                .with_context(|| format!("cannot read the store at {db}"))?
        }))),
        None => Ok(open_store_read(db)?.map(|s| Box::new(s) as Box<dyn ReadStore>)),
    }
}

/// What the MCP server opens a PostgreSQL store with ([`memtrail_runtime::mcp::OpenReader`]);
/// the user's redaction rules are read first, as [`open_reader`] reads them.
pub fn open_remote_reader(
    db: &StoreLocation,
) -> memtrail_runtime::Result<Box<dyn ReadStore + Send>> {
    Ok(Box::new(connect_pg_reader(db)?))
}

/// The PostgreSQL store at `db`, connected now, after the user's redaction rules are read (as
/// [`open_reader`] reads them).
///
/// Errors: [`memtrail_runtime::Error::Invalid`] when `db` is not a PostgreSQL store, the
/// rules' errors, [`memtrail_pg::read::PgReader::connect`]'s.
pub fn connect_pg_reader(db: &StoreLocation) -> memtrail_runtime::Result<memtrail_pg::PgReader> {
    let url = db.postgres_url().ok_or_else(|| {
        memtrail_runtime::Error::Invalid(format!("{db} is not a PostgreSQL store"))
    })?;
    memtrail_runtime::privacy::Privacy::load()?;
    memtrail_pg::PgReader::connect(url)
}

/// The store at `db`, created if missing; the error names its location.
///
/// An older store is upgraded on opening: a spinner on stderr (hidden off a terminal, see
/// [`crate::output::spinner`]) says which migration runs meanwhile.
pub fn open_store(db: &StoreLocation) -> Result<Store> {
    let mut pb: Option<indicatif::ProgressBar> = None;
    let r = Store::open_with_progress(db, &mut |m| {
        if m.from == 0 {
            // A new store: its migrations take milliseconds.
            return;
        }
        let pb = pb.get_or_insert_with(|| {
            crate::output::spinner(
                &format!("upgrading the store to schema {}: {{msg}}", m.last),
                false,
            )
        });
        pb.set_message(format!("migration {} of {} ({})", m.to, m.last, m.name));
    });
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    r.with_context(|| format!("cannot open the store at {db}"))
}

/// `p` made absolute against the current folder (symlinks kept), as a string.
pub fn absolute(p: &std::path::Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

/// The memtrail binary that hooks and MCP entries run: the path the user invoked, absolute but
/// with its symlinks kept (Homebrew's `bin/memtrail` → `Cellar/memtrail/0.1.0/bin/memtrail`:
/// the versioned target is gone at the next upgrade, the link stays), when it is this very
/// binary; otherwise (an `argv[0]` that names another file) the binary's real path.
pub fn binary_path() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find memtrail's own path")?;
    let real = std::fs::canonicalize(&exe).unwrap_or(exe);
    Ok(invoked_path()
        .filter(|p| std::fs::canonicalize(p).is_ok_and(|c| c == real))
        .unwrap_or(real))
}

/// `argv[0]` made absolute without following symlinks: a path with a `/` against the current
/// folder, a bare name looked up on `PATH` as the shell did. `.` components are dropped.
pub fn invoked_path() -> Option<PathBuf> {
    let arg0 = PathBuf::from(std::env::args_os().next()?);
    let cwd = || std::env::current_dir().ok();
    let found = if arg0.components().count() > 1 || arg0.is_absolute() {
        if arg0.is_absolute() {
            arg0
        } else {
            cwd()?.join(arg0)
        }
    } else {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .filter(|d| !d.as_os_str().is_empty())
            .map(|d| d.join(&arg0))
            .find(|c| c.is_file())
            .and_then(|c| {
                if c.is_absolute() {
                    Some(c)
                } else {
                    cwd().map(|w| w.join(c))
                }
            })?
    };
    Some(
        found
            .components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .collect(),
    )
}
