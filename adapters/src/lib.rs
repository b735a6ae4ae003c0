//! memtrail-adapters: the common session model and one module per coding agent.
//!
//! Everything specific to one agent lives in its module (paths and relocation variables,
//! detection, what to register, hook payloads and reply dialect, the transcript reader, import
//! discovery); nothing agent-specific lives anywhere else. This crate knows nothing of SQLite
//! or of config-file editing.

pub mod claude;
pub mod codex;
pub mod cursor;
pub mod gemini;
pub mod model;
pub mod opencode;
pub mod paths;
pub mod vscode;

pub use model::*;

use std::path::{Path, PathBuf};

/// A fresh transcript reader for `agent`, or `None` when memtrail cannot read that agent's
/// transcripts yet.
pub fn transcript_reader(agent: Agent) -> Option<Box<dyn LineReader>> {
    match agent {
        Agent::Claude => Some(Box::new(claude::ClaudeReader::new())),
        _ => None,
    }
}

/// Which session the transcript at `path` belongs to.
///
/// Errors: the file cannot be read (for formats that keep the session id inside the file), or
/// the agent is not supported yet (`ErrorKind::Unsupported`).
pub fn identify(agent: Agent, path: &Path) -> std::io::Result<SessionRef> {
    match agent {
        Agent::Claude => claude::identify(path),
        other => Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            format!(
                "reading {} transcripts is not supported yet",
                other.display_name()
            ),
        )),
    }
}

/// Every transcript of `agent` on this machine, for `memtrail import`.
pub fn discover(agent: Agent) -> std::io::Result<Vec<PathBuf>> {
    match agent {
        Agent::Claude => claude::discover(&claude::projects_dir()),
        _ => Ok(Vec::new()),
    }
}

/// Agents whose transcripts memtrail can read.
pub fn supported_agents() -> &'static [Agent] {
    &[Agent::Claude]
}
