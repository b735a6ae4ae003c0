//! memtrail-adapters: the common session model, the agent registry and one folder per coding
//! agent.
//!
//! Everything specific to one agent lives in its folder `agents/<agent>/` (paths and relocation
//! variables, detection, what to register, hook payloads and reply dialect, the transcript
//! reader, import discovery) and is reached through its [`AgentAdapter`]
//! ([`Agent::adapter`], [`registry`]); nothing agent-specific lives anywhere else. The functions
//! below dispatch through the registry. The registration model ([`spec`]) is declarative: the
//! installer's engine edits the config files. This crate reads memtrail's store nowhere (an
//! agent's own database, OpenCode's, is read here).

pub mod agents;
pub mod env;
pub mod error;
pub mod model;
pub mod paths;
pub mod registration;
pub mod registry;
pub mod shell;
pub mod spec;
pub mod vocabulary;

/// Each agent's module under its folder's name (`memtrail_adapters::codex`): every module of
/// [`agents`], so a new agent's folder needs no line here.
pub use agents::*;

pub use env::Env;
pub use error::Error;
pub use model::*;
pub use registry::{AgentAdapter, Database, HookInput, Names, Quirks, TranscriptRetention};

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
/// Errors: the database cannot be read, or the agent keeps no database
/// ([`Error::NoDatabase`]).
pub fn read_database(
    agent: Agent,
    path: &Path,
    session: Option<&str>,
    since: i64,
) -> Result<DbBatch, Error> {
    (database_of(agent)?.read)(path, session, since)
}

/// The ids of every session in an agent's database.
///
/// Errors: as [`read_database`].
pub fn database_sessions(agent: Agent, path: &Path) -> Result<Vec<String>, Error> {
    (database_of(agent)?.sessions)(path)
}

fn database_of(agent: Agent) -> Result<Database, Error> {
    let a = agent.adapter();
    a.quirks()
        .database
        .ok_or(Error::NoDatabase(a.names().display))
}

/// How to read `path`, a transcript of `agent`; `None` when memtrail cannot read it (yet).
pub fn source_for(agent: Agent, path: &Path) -> Option<Source> {
    agent.adapter().source_for(path)
}

/// A fresh line reader for `agent`'s JSONL transcripts, or `None` when the agent has none.
pub fn transcript_reader(agent: Agent) -> Option<Box<dyn LineReader>> {
    agent.adapter().quirks().transcript_reader.map(|new| new())
}

/// Parse a hook invocation of `agent`: the payload from stdin, or (Codex `notify`) the JSON in
/// the last command-line argument. `env` is the hook process's environment (caller detection).
///
/// Errors: why the payload was not understood ([`Error`]'s payload variants).
pub fn parse_hook(
    agent: Agent,
    stdin: &[u8],
    args: &[String],
    env: &Env,
) -> Result<HookEvent, Error> {
    agent.adapter().parse_hook(HookInput { stdin, args, env })
}

/// A command that the agent's config ran before memtrail took its place and that memtrail keeps
/// running with the same payload (Codex's single `notify` program), or `None`.
pub fn chained_command(agent: Agent, args: &[String]) -> Option<Vec<String>> {
    agent
        .adapter()
        .quirks()
        .chained_command
        .and_then(|chained| chained(args))
}

/// The transcript files a hook event of `agent` should ingest (the payload's transcript, its
/// sub-agents, or a path resolved from the session id when the payload has none).
pub fn transcripts_for_event(agent: Agent, ev: &HookEvent) -> Vec<PathBuf> {
    agent.adapter().transcripts_for_event(ev)
}

/// What to print at SessionStart to put `context` into `agent`'s context, in its dialect.
pub fn session_start_reply(agent: Agent, context: &str) -> Option<String> {
    agent.adapter().session_start_reply(context)
}

/// Which session the transcript at `path` belongs to.
///
/// Errors: the file cannot be read (for formats that keep the session id inside the file), or
/// it holds many sessions (an OpenCode database: `ErrorKind::InvalidInput`).
pub fn identify(agent: Agent, path: &Path) -> std::io::Result<SessionRef> {
    agent.adapter().identify(path)
}

/// What discovery found for one agent.
#[derive(Debug, Default, Clone)]
pub struct Discovery {
    /// Every transcript file, parents before sub-agents.
    pub files: Vec<PathBuf>,
    /// Folders or files that could not be read, with the reason.
    pub unreadable: Vec<(PathBuf, String)>,
}

impl From<Vec<PathBuf>> for Discovery {
    /// Transcript files found with nothing unreadable (agents whose discovery reports no
    /// unreadable folders).
    fn from(files: Vec<PathBuf>) -> Discovery {
        Discovery {
            files,
            unreadable: Vec::new(),
        }
    }
}

/// Every transcript of `agent` on this machine, for `memtrail import`.
///
/// Errors: the agent's transcript folder exists but cannot be listed.
pub fn discover(agent: Agent) -> std::io::Result<Discovery> {
    agent.adapter().discover()
}

/// Agents whose transcripts memtrail can read: every agent of the registry ([`Agent::ALL`]).
pub fn supported_agents() -> &'static [Agent] {
    &Agent::ALL
}

/// A synthetic SessionStart hook input for `agent`, shaped like the agent's own payload (for
/// `memtrail doctor`): what to write on stdin. The session id is `doctor-<agent>`; no transcript
/// exists, which every agent's SessionStart allows.
pub fn synthetic_session_start(agent: Agent, cwd: &Path) -> String {
    let sid = format!("doctor-{agent}");
    agent
        .adapter()
        .synthetic_session_start(&sid, cwd)
        .to_string()
}
