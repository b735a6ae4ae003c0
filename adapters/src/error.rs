//! The adapters' errors. Their messages are what the hook log and `memtrail import` print.

use std::path::PathBuf;

/// Why a hook payload or an agent's database could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The hook got nothing on stdin (whitespace only, after a UTF-8 BOM).
    #[error("empty hook payload")]
    EmptyPayload,
    /// The hook payload is not JSON.
    #[error("hook payload is not JSON: {0}")]
    PayloadNotJson(serde_json::Error),
    /// The hook payload is JSON but not an object.
    #[error("hook payload is not a JSON object")]
    PayloadNotObject,
    /// The hook payload lacks a field the agent always sends (Cline's `hookName`).
    #[error("hook payload has no `{0}`")]
    PayloadMissing(&'static str),
    /// Codex's `notify` argument is not JSON.
    #[error("notify payload is not JSON: {0}")]
    NotifyNotJson(serde_json::Error),
    /// Codex's `notify` argument is an object without `type`.
    #[error("notify payload has no `type`")]
    NotifyNoType,
    /// Codex's `notify` argument is JSON but not an object.
    #[error("notify payload is not a JSON object")]
    NotifyNotObject,
    /// A payload of another program that runs the same hooks (GitHub Copilot CLI in VS Code's
    /// hook files): ignored on purpose.
    #[error("a {0} hook payload ({1}): ignored")]
    ForeignPayload(&'static str, &'static str),
    /// The agent keeps no database (its display name).
    #[error("{0} keeps no database")]
    NoDatabase(&'static str),
    /// An agent's database could not be opened read-only.
    #[error("cannot open {} read-only: {source}", path.display())]
    OpenDatabase {
        path: PathBuf,
        source: crate::agents::opencode::DbError,
    },
    /// A query on OpenCode's database failed.
    #[error("OpenCode database: {0}")]
    Database(#[from] crate::agents::opencode::DbError),
    /// The file is a SQLite database but not OpenCode's.
    #[error("not an OpenCode database: no message or session_message table")]
    NotOpencodeDatabase,
    /// A path that is not a `storage/session/<project>/<session>.json` file of OpenCode.
    #[error("{} is not a storage/session/<project>/<session>.json file", .0.display())]
    NotStorageSession(PathBuf),
    /// A file could not be read or parsed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
