//! Where Factory Droid keeps its config and sessions: one resolver ([`Locations::resolve`]) from
//! an explicit environment ([`Env`]), for ingest, the hook and the installer alike.

use crate::env::Env;
use std::path::PathBuf;

/// Where Factory Droid keeps the files memtrail reads and edits (`docs/agents/droid.md#paths`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// `~/.factory` (Factory documents no variable that moves it).
    pub config_dir: PathBuf,
    /// `<config>/settings.json`: user settings, `hooks` included (Claude Code's shape).
    pub settings: PathBuf,
    /// `<config>/mcp.json`: user MCP servers (`mcpServers`).
    pub mcp: PathBuf,
    /// `<config>/skills/memtrail/SKILL.md` (personal skills).
    pub skill: PathBuf,
    /// `<config>/sessions`: `<project slug>/<session id>.jsonl` (and `.settings.json` beside).
    pub sessions: PathBuf,
}

impl Locations {
    /// The locations in `env` (its home): the one resolver of Droid's paths, used by the reader
    /// and the hook (with `Env::from_process()`) as by the installer.
    pub fn resolve(env: &Env) -> Locations {
        let config_dir = env.home().join(".factory");
        Locations {
            settings: config_dir.join("settings.json"),
            mcp: config_dir.join("mcp.json"),
            skill: config_dir.join("skills").join("memtrail").join("SKILL.md"),
            sessions: config_dir.join("sessions"),
            config_dir,
        }
    }
}
