//! Where GitHub Copilot CLI keeps its config and sessions: one resolver
//! ([`Locations::resolve`]) from an explicit environment ([`Env`]), for ingest, the hook and the
//! installer alike.

use crate::env::Env;
use std::path::PathBuf;

/// Where GitHub Copilot CLI keeps the files memtrail reads and edits
/// (`docs/agents/copilotcli.md#paths`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// `$COPILOT_HOME` (absolute) when set and not empty, else `~/.copilot` (`copilot help
    /// environment`).
    pub config_dir: PathBuf,
    /// `<config>/hooks/memtrail.json`: memtrail's own hook file (Copilot CLI loads every
    /// `<config>/hooks/*.json`).
    pub hooks: PathBuf,
    /// `<config>/mcp-config.json` (user MCP servers, `mcpServers`).
    pub mcp: PathBuf,
    /// `<config>/skills/memtrail/SKILL.md` (personal skills).
    pub skill: PathBuf,
    /// `<config>/session-state`: one folder per session holding `events.jsonl`.
    pub session_state: PathBuf,
}

impl Locations {
    /// The locations in `env` (its home and `COPILOT_HOME`): the one resolver of Copilot CLI's
    /// paths, used by the reader and the hook (with `Env::from_process()`) as by the installer.
    pub fn resolve(env: &Env) -> Locations {
        let config_dir = env
            .abs_var("COPILOT_HOME")
            .unwrap_or_else(|| env.home().join(".copilot"));
        Locations {
            hooks: config_dir.join("hooks").join("memtrail.json"),
            mcp: config_dir.join("mcp-config.json"),
            skill: config_dir.join("skills").join("memtrail").join("SKILL.md"),
            session_state: config_dir.join("session-state"),
            config_dir,
        }
    }
}
