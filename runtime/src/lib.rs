//! memtrail-runtime: the store, incremental ingest, search, sessions, hook handling and the MCP
//! server. It knows nothing of agents' config files; agent formats come from
//! `memtrail-adapters`.

pub mod events;
pub mod hook;
pub mod import;
pub mod ingest;
pub mod maintenance;
pub mod mcp;
pub mod privacy;
pub mod query;
pub mod redact;
pub mod snapshot;
pub mod store;
pub mod time;

pub use store::{Store, default_db_path};

use std::path::PathBuf;

/// Errors of the runtime.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("store error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("JSON error: {0}")]
    Json(#[from] serde_json::Error),
    #[error(
        "the store at {path} has schema version {found}, but this memtrail understands up to version {supported}; upgrade memtrail (cargo install memtrail) or point --db at another store"
    )]
    NewerSchema {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `$XDG_STATE_HOME/memtrail` (`~/.local/state/memtrail`): the hook log and install state.
pub fn state_dir() -> PathBuf {
    memtrail_adapters::paths::xdg_state_home().join("memtrail")
}
