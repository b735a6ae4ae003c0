//! memtrail-adapters: the common session model and one module per coding agent.
//!
//! Everything specific to one agent lives in its module (paths and relocation variables,
//! detection, what to register, hook payloads and reply dialect, the transcript reader, import
//! discovery); nothing agent-specific lives anywhere else. This crate knows nothing of SQLite
//! or of config-file editing.

pub mod agents;
pub mod env;
pub mod model;
pub mod paths;
pub mod registration;
pub mod shell;

pub use agents::{claude, codex, cursor, gemini, opencode, vscode};

pub use env::Env;
pub use model::*;

use std::path::{Path, PathBuf};

/// How a source file of an agent is read.
pub enum Source {
    /// An append-only JSONL transcript, read incrementally from a byte offset.
    Lines(Box<dyn LineReader>),
    /// A file rewritten whole: re-read when its content changes, and the session's messages
    /// replaced.
    Doc(Box<dyn DocReader>),
    /// An agent's own database holding many sessions (OpenCode's `opencode.db`), read through
    /// [`read_database`] from a `time_updated` watermark.
    Database,
}

pub use opencode::{DbBatch, DbSession};

/// Read what changed in an agent's database since the watermark `since` (ms since the epoch),
/// for one session or (None) every session.
///
/// Errors: the database cannot be read (message), or the agent keeps no database.
pub fn read_database(
    agent: Agent,
    path: &Path,
    session: Option<&str>,
    since: i64,
) -> Result<DbBatch, String> {
    match (agent, session) {
        (Agent::Opencode, Some(s)) => opencode::read_db_session(path, s, since),
        (Agent::Opencode, None) => opencode::read_db(path, since),
        (other, _) => Err(format!("{} keeps no database", other.display_name())),
    }
}

/// The ids of every session in an agent's database.
pub fn database_sessions(agent: Agent, path: &Path) -> Result<Vec<String>, String> {
    match agent {
        Agent::Opencode => opencode::db_session_ids(path),
        other => Err(format!("{} keeps no database", other.display_name())),
    }
}

/// How to read `path`, a transcript of `agent`; `None` when memtrail cannot read it (yet).
pub fn source_for(agent: Agent, path: &Path) -> Option<Source> {
    match agent {
        Agent::Claude => Some(Source::Lines(Box::new(claude::ClaudeReader::new()))),
        Agent::Gemini => gemini::source_for(path),
        Agent::Codex => Some(Source::Lines(codex::transcript_reader())),
        Agent::Cursor => Some(cursor::source_for(path)),
        Agent::Vscode => Some(vscode::source_for(path)),
        Agent::Opencode => match opencode::source_kind(path) {
            opencode::SourceKind::Database => Some(Source::Database),
            _ => opencode::source_for(path),
        },
    }
}

/// A fresh line reader for `agent`'s JSONL transcripts, or `None` when the agent has none.
pub fn transcript_reader(agent: Agent) -> Option<Box<dyn LineReader>> {
    match agent {
        Agent::Claude => Some(Box::new(claude::ClaudeReader::new())),
        Agent::Codex => Some(codex::transcript_reader()),
        _ => None,
    }
}

/// Parse a hook invocation of `agent`: the payload from stdin, or (Codex `notify`) the JSON in
/// the last command-line argument. `env` reads the hook process's environment (caller detection).
///
/// Errors: a message saying why the payload was not understood.
pub fn parse_hook(
    agent: Agent,
    stdin: &[u8],
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<HookEvent, String> {
    match agent {
        Agent::Claude => claude::parse_hook_payload_with_env(stdin, env),
        Agent::Gemini => gemini::parse_hook_payload(stdin, env),
        // Codex `notify` passes its JSON as the last argument; hooks.json events use stdin.
        Agent::Codex => match codex::split_notify_args(args).1 {
            Some(arg) => codex::parse_notify_argv(arg),
            None => codex::parse_hook_payload(stdin, env),
        },
        Agent::Cursor => cursor::parse_hook_payload(stdin, env),
        Agent::Vscode => vscode::parse_hook_payload(stdin, env),
        Agent::Opencode => opencode::parse_hook_payload(stdin, env),
    }
}

/// A command that the agent's config ran before memtrail took its place and that memtrail keeps
/// running with the same payload (Codex's single `notify` program), or `None`.
pub fn chained_command(agent: Agent, args: &[String]) -> Option<Vec<String>> {
    match agent {
        Agent::Codex => codex::split_notify_args(args).0,
        _ => None,
    }
}

/// The transcript files a hook event of `agent` should ingest (the payload's transcript, its
/// sub-agents, or a path resolved from the session id when the payload has none).
pub fn transcripts_for_event(agent: Agent, ev: &HookEvent) -> Vec<PathBuf> {
    match agent {
        Agent::Claude => claude::transcripts_for_event(ev),
        Agent::Gemini => gemini::transcripts_for_event(ev),
        Agent::Codex => codex::transcripts_for_event(ev),
        Agent::Cursor => cursor::transcripts_for_event(ev),
        Agent::Vscode => vscode::transcripts_for_event(ev),
        Agent::Opencode => opencode::transcripts_for_event(ev),
    }
}

/// What to print at SessionStart to put `context` into `agent`'s context, in its dialect.
pub fn session_start_reply(agent: Agent, context: &str) -> Option<String> {
    match agent {
        Agent::Claude => Some(claude::session_start_reply(context)),
        Agent::Gemini => gemini::session_start_reply(context),
        Agent::Codex => codex::session_start_reply(context),
        Agent::Cursor => cursor::session_start_reply(context),
        Agent::Vscode => vscode::session_start_reply(context),
        Agent::Opencode => opencode::session_start_reply(context),
    }
}

/// Which session the transcript at `path` belongs to.
///
/// Errors: the file cannot be read (for formats that keep the session id inside the file), or
/// it holds many sessions (an OpenCode database: `ErrorKind::InvalidInput`).
pub fn identify(agent: Agent, path: &Path) -> std::io::Result<SessionRef> {
    match agent {
        Agent::Claude => claude::identify(path),
        Agent::Gemini => gemini::identify(path),
        Agent::Codex => codex::identify(path),
        Agent::Cursor => cursor::identify(path),
        Agent::Vscode => vscode::identify(path),
        Agent::Opencode => opencode::identify(path),
    }
}

/// What discovery found for one agent.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Every transcript file, parents before sub-agents.
    pub files: Vec<PathBuf>,
    /// Folders or files that could not be read, with the reason.
    pub unreadable: Vec<(PathBuf, String)>,
}

/// Every transcript of `agent` on this machine, for `memtrail import`.
///
/// Errors: the agent's transcript folder exists but cannot be listed.
pub fn discover(agent: Agent) -> std::io::Result<Discovery> {
    match agent {
        Agent::Claude => {
            let (files, unreadable) = claude::discover_with_errors(&claude::projects_dir())?;
            Ok(Discovery { files, unreadable })
        }
        Agent::Gemini => Ok(Discovery {
            files: gemini::discover()?,
            unreadable: Vec::new(),
        }),
        Agent::Codex => Ok(Discovery {
            files: codex::discover()?,
            unreadable: Vec::new(),
        }),
        Agent::Cursor => {
            let (files, unreadable) = cursor::discover_with_errors()?;
            Ok(Discovery { files, unreadable })
        }
        Agent::Vscode => {
            let (files, unreadable) = vscode::discover_with_errors()?;
            Ok(Discovery { files, unreadable })
        }
        Agent::Opencode => Ok(Discovery {
            files: opencode::discover()?,
            unreadable: Vec::new(),
        }),
    }
}

/// Agents whose transcripts memtrail can read.
pub fn supported_agents() -> &'static [Agent] {
    &[
        Agent::Claude,
        Agent::Codex,
        Agent::Gemini,
        Agent::Cursor,
        Agent::Vscode,
        Agent::Opencode,
    ]
}

/// A synthetic SessionStart hook input for `agent`, shaped like the agent's own payload (for
/// `memtrail doctor`): what to write on stdin. The session id is `doctor-<agent>`; no transcript
/// exists, which every agent's SessionStart allows.
pub fn synthetic_session_start(agent: Agent, cwd: &Path) -> String {
    let sid = format!("doctor-{agent}");
    let v = match agent {
        Agent::Claude | Agent::Codex | Agent::Gemini => serde_json::json!({
            "session_id": sid, "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup",
        }),
        Agent::Cursor => serde_json::json!({
            "conversation_id": sid, "generation_id": "doctor", "hook_event_name": "sessionStart",
            "workspace_roots": [cwd], "transcript_path": null,
        }),
        Agent::Vscode => serde_json::json!({
            "sessionId": sid, "hookEventName": "SessionStart", "cwd": cwd, "source": "new",
        }),
        Agent::Opencode => serde_json::json!({
            "hook_event_name": "session.start", "session_id": sid, "cwd": cwd,
        }),
    };
    v.to_string()
}
