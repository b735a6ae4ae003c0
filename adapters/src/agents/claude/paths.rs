//! Where Claude Code keeps its config and transcripts: one resolver ([`Locations::resolve`]) from an
//! explicit environment ([`Env`]), for ingest, the hook and the installer alike.

use crate::env::Env;
use std::path::PathBuf;

/// Where Claude Code keeps the files memtrail edits (`docs/agents/claude.md#paths`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub config_dir: PathBuf,
    /// `<config>/settings.json` (hooks).
    pub settings: PathBuf,
    /// `<config>/.claude.json` when `CLAUDE_CONFIG_DIR` is set, else `~/.claude.json` (MCP).
    pub global_state: PathBuf,
    /// `<config>/skills/memtrail/SKILL.md`.
    pub skill: PathBuf,
}

impl Locations {
    /// The locations in `env` (its home and variables): the one resolver of Claude Code's
    /// paths, used by the transcript reader and the hook (with `Env::from_process()`) as by
    /// the installer. A relative or empty `CLAUDE_CONFIG_DIR` is ignored, as in
    /// [`crate::paths::env_abs`].
    pub fn resolve(env: &Env) -> Locations {
        let home = env.home();
        let config_override = env.abs_var("CLAUDE_CONFIG_DIR");
        let config_dir = config_override
            .clone()
            .unwrap_or_else(|| home.join(".claude"));
        let global_state = match config_override {
            Some(dir) => dir.join(".claude.json"),
            None => home.join(".claude.json"),
        };
        Locations {
            settings: config_dir.join("settings.json"),
            skill: config_dir.join("skills").join("memtrail").join("SKILL.md"),
            global_state,
            config_dir,
        }
    }
}
