//! Where Continue's CLI (`cn`) keeps its config and sessions: one resolver
//! ([`Locations::resolve`]) from an explicit environment ([`Env`]), for ingest and the installer
//! alike.

use crate::env::Env;
use std::path::PathBuf;

/// Where Continue keeps the files memtrail reads and writes (`docs/agents/continue.md#paths`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// `$CONTINUE_GLOBAL_DIR` when set and not empty, else `~/.continue` (`env.ts`,
    /// `session.ts`).
    pub config_dir: PathBuf,
    /// `<config>/config.yaml`: models, MCP servers (`mcpServers`), rules.
    pub config_yaml: PathBuf,
    /// `<config>/skills/memtrail/SKILL.md` (`util/loadMarkdownSkills.ts`).
    pub skill: PathBuf,
    /// `<config>/sessions`: `<session id>.json`, and the index `sessions.json`.
    pub sessions: PathBuf,
}

impl Locations {
    /// The locations in `env` (its home, `CONTINUE_GLOBAL_DIR`): the one resolver of Continue's
    /// paths, used by the reader (with `Env::from_process()`) as by the installer.
    pub fn resolve(env: &Env) -> Locations {
        let config_dir = env
            .var_utf8("CONTINUE_GLOBAL_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| env.home().join(".continue"));
        Locations {
            config_yaml: config_dir.join("config.yaml"),
            skill: config_dir.join("skills").join("memtrail").join("SKILL.md"),
            sessions: config_dir.join("sessions"),
            config_dir,
        }
    }
}
