//! memtrail-runtime: the store, incremental ingest, search, sessions, hook handling and the MCP
//! server. It knows nothing of agents' config files; agent formats come from
//! `memtrail-adapters`.

pub mod analytics;
pub mod autosync;
pub mod background;
pub mod config;
pub mod events;
pub mod hook;
pub mod import;
pub mod ingest;
pub mod machine;
pub mod maintenance;
pub mod mcp;
pub mod pending;
pub mod privacy;
pub mod query;
pub mod read;
pub mod records;
pub mod redact;
pub mod resume;
pub mod safe_text;
pub mod seams;
pub mod settle;
pub mod snapshot;
pub mod status;
pub mod store;
pub mod sync;
#[cfg(test)]
mod test_rng;
pub mod time;

pub use store::salvage;
pub use store::{Store, StoreLocation};

use std::path::PathBuf;

/// Errors of the runtime.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An error of the store's database (SQLite today): its message is the database's. See
    /// [`store::StoreError`].
    #[error("store error: {0}")]
    Store(#[from] store::StoreError),
    /// A file or folder could not be read or written (the I/O error, with its path where known).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// JSON that could not be parsed or written (a hook payload, a reader state, a report).
    #[error("JSON error: {0}")]
    Json(#[from] serde_json::Error),
    /// The store was written by a newer memtrail (a higher schema version): it is not opened,
    /// nothing is read or written.
    #[error(
        "the store at {path} has schema version {found}, but this memtrail understands up to version {supported}; upgrade memtrail (cargo install memtrail) or point --db at another store (a memtrail started before an upgrade, such as an agent's MCP server, is to be started again)"
    )]
    NewerSchema {
        /// The store's file.
        path: PathBuf,
        /// The schema version the store holds (`PRAGMA user_version`).
        found: i64,
        /// The newest schema version this memtrail knows.
        supported: i64,
    },
    /// A file memtrail cannot read as the agent's transcript; the text names the agent and file.
    #[error("{0}")]
    Unsupported(String),
    /// An error of a PostgreSQL store (connecting, a query): its message, the URL in it
    /// with its password masked.
    #[error("PostgreSQL: {0}")]
    Remote(String),
    /// No such session (or message) in the store; the text names the id asked for.
    #[error("{0}")]
    NotFound(String),
    /// Input refused (a bad id, payload, scope or path); the text says what and why.
    #[error("{0}")]
    Invalid(String),
    /// Another process advanced this transcript's cursor while this one was reading: its step
    /// was rolled back (the other process has those lines). Not a failure; ingest stops.
    #[error("another memtrail process ingested this transcript meanwhile")]
    Superseded,
    /// A reader panicked on this input (caught; the transaction was rolled back).
    #[error("internal error (panic) while reading: {0}")]
    Panicked(String),
    /// Another memtrail process held the store's write lock for longer than this one could wait
    /// (busy timeout, retries, or a hook's time budget). Nothing was written.
    #[error(
        "the store is busy (another memtrail process held the write lock; gave up after {waited_ms} ms); nothing was written"
    )]
    Busy {
        /// How long this process waited for the lock, in milliseconds.
        waited_ms: u64,
    },
    /// An error ingesting one transcript (`path`), as a hook reports it.
    #[error("{}: {source}", path.display())]
    Transcript {
        path: PathBuf,
        #[source]
        source: Box<Error>,
    },
    /// `SQLITE_FULL`: the disk (or the store's size limit) is full. The transaction was rolled
    /// back; the store holds everything committed before.
    #[error(
        "the store's disk is full (SQLITE_FULL): nothing of this step was written and the store is intact; free some disk space and run the command again"
    )]
    Full,
}

impl Error {
    /// True for [`Error::Busy`], also when it is the cause of an [`Error::Transcript`].
    pub fn is_busy(&self) -> bool {
        match self {
            Error::Busy { .. } => true,
            Error::Transcript { source, .. } => source.is_busy(),
            _ => false,
        }
    }
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

#[cfg(test)]
mod tests {
    use super::Error;

    /// The hook tells "store busy" (timing line `busy`, no second wait to record the run) from
    /// the error's variant, also when the error is reported for a transcript.
    #[test]
    fn busy_is_a_variant_also_under_a_transcript() {
        let busy = Error::Busy { waited_ms: 12 };
        assert!(busy.is_busy());
        let in_transcript = Error::Transcript {
            path: "/t/s.jsonl".into(),
            source: Box::new(Error::Busy { waited_ms: 12 }),
        };
        assert!(in_transcript.is_busy());
        assert_eq!(
            in_transcript.to_string(),
            "/t/s.jsonl: the store is busy (another memtrail process held the write lock; gave up after 12 ms); nothing was written"
        );
        let other = Error::Transcript {
            path: "/t/s.jsonl".into(),
            source: Box::new(Error::Invalid("the store is busy".into())),
        };
        assert!(!other.is_busy());
        assert!(!Error::Full.is_busy());
    }
}
