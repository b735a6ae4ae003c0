//! The installer's error type.

use std::path::PathBuf;

/// Why a plan, an apply or a status failed. Every variant that concerns a file names it; a file
/// named in an error was left untouched (byte for byte).
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The binary to register must be an absolute path that is valid UTF-8 (config files are
    /// JSON, whose strings cannot hold other bytes).
    #[error("the memtrail binary path must be absolute and valid UTF-8: {}", .0.display())]
    BadBinary(PathBuf),
    /// A config file is not valid JSON / JSONC / TOML (or not UTF-8), or holds a key twice
    /// where memtrail reads. `line` and `col` are 1-based.
    #[error("{}: line {line}, column {col}: {msg}; fix the file (it was left untouched)", .path.display())]
    Parse {
        /// The configured path of the file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column (in characters).
        col: usize,
        /// What is wrong there (`Expected comma`, `Unterminated array`, …).
        msg: String,
    },
    /// A config file its agent reads as strict JSON holds a comment or a trailing comma (valid
    /// JSONC): the agent would ignore it whole, memtrail's entries included, so install refuses.
    #[error("{}: line {line}, column {col}: {what}: the file is not strict JSON and {consequence}; remove comments and trailing commas, then install again (left untouched)", .path.display())]
    NotStrictJson {
        /// The configured path of the file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// `a comment`, `a trailing comma`, or what else is not JSON there.
        what: String,
        /// What the agent does with such a file (`Claude Code skips the whole file: it will
        /// not run these hooks`).
        consequence: &'static str,
    },
    /// A config file's top-level value is not a JSON object.
    #[error("{}: the top-level value is not a JSON object; left untouched", .path.display())]
    NotAnObject {
        /// The configured path of the file.
        path: PathBuf,
    },
    /// A value memtrail needs to edit has an unexpected type (e.g. `"hooks": 3`).
    #[error("{}: `{json_path}` is not {expected}; left untouched", .path.display())]
    Conflict {
        /// The configured path of the file.
        path: PathBuf,
        /// Where in the document (`hooks.Stop`).
        json_path: String,
        /// What memtrail needs there (`an object`, `an array`).
        expected: &'static str,
    },
    /// A file memtrail would own (a plugin, a skill) exists and is not memtrail's.
    #[error("{} exists and is not memtrail's; move it away to let memtrail install there (left untouched)", .path.display())]
    Foreign {
        /// The configured path of the file.
        path: PathBuf,
    },
    /// memtrail's entry by name (its MCP server) exists and runs another program: another
    /// tool's entry under memtrail's name, which install neither overwrites nor removes.
    #[error("{}: `{json_path}` runs {program}, not memtrail: another tool's entry under memtrail's name; rename or remove it to let memtrail install there (left untouched)", .path.display())]
    ForeignEntry {
        /// The configured path of the file.
        path: PathBuf,
        /// Where in the document (`mcpServers.memtrail`).
        json_path: String,
        /// What it runs (`npx`), or `no program` when it names none (a URL).
        program: String,
    },
    /// A config file that needs a change is read-only (no write permission bit set).
    #[error("{} is read-only; make it writable to let memtrail edit it (left untouched)", .path.display())]
    ReadOnly {
        /// The configured path of the file.
        path: PathBuf,
    },
    /// Reading, writing, renaming or backing up a file failed.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Another program kept rewriting the file while memtrail tried to edit it.
    #[error("{} kept changing while memtrail edited it ({attempts} attempts); try again", .path.display())]
    Contended {
        /// The configured path of the file.
        path: PathBuf,
        /// How many times the edit was tried.
        attempts: u32,
    },
    /// An apply failed (`error`) and its changes were undone, except in `changed`: files
    /// another program rewrote after memtrail's write, left as they are.
    #[error("{error}; memtrail's changes were undone except in {} (changed by another program meanwhile): run `memtrail uninstall` for this agent", .changed.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    Incomplete {
        /// What made the apply fail.
        error: Box<InstallError>,
        /// The files that stay changed.
        changed: Vec<PathBuf>,
    },
    /// Another memtrail install or uninstall held the install lock for the whole wait.
    #[error("another memtrail install or uninstall{} still holds {} after {waited_secs} s; try again once it is done (nothing was changed)", .pid.map(|p| format!(" (pid {p})")).unwrap_or_default(), .path.display())]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// The holder's pid, when the lock file names one.
        pid: Option<u32>,
        /// How long it waited.
        waited_secs: u64,
    },
    /// A bug: an edit produced text that does not parse. Nothing was written.
    #[error("internal error while editing {}: {msg} (nothing was written)", .path.display())]
    Internal {
        /// The configured path of the file.
        path: PathBuf,
        /// What went wrong.
        msg: String,
    },
}

impl InstallError {
    /// What is wrong, without the file's path and without the advice meant for an install
    /// (`line 3, column 5: Expected comma`, `Is a directory (os error 21)`): for reports that
    /// name the file themselves, like `status`.
    pub fn reason(&self) -> String {
        match self {
            InstallError::Parse { line, col, msg, .. } => {
                format!("line {line}, column {col}: {msg}")
            }
            InstallError::NotAnObject { .. } => "the top-level value is not a JSON object".into(),
            InstallError::NotStrictJson {
                line,
                col,
                what,
                consequence,
                ..
            } => format!(
                "not strict JSON (line {line}, column {col}: {what}), so {consequence}; remove comments and trailing commas"
            ),
            InstallError::Io { source, .. } => source.to_string(),
            InstallError::ReadOnly { .. } => "read-only".into(),
            InstallError::Foreign { .. } => "the file exists and is not memtrail's".into(),
            InstallError::ForeignEntry {
                json_path, program, ..
            } => format!(
                "`{json_path}` runs {program}, not memtrail: another tool's entry under memtrail's name"
            ),
            other => other.to_string(),
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> InstallError {
        InstallError::Io {
            path: path.into(),
            source,
        }
    }
}
