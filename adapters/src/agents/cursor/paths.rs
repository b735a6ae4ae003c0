//! Where Cursor keeps its config: one resolver ([`Locations::resolve`]) from an explicit
//! environment ([`Env`]), for ingest, the hook and the installer alike.

use crate::env::Env;
use std::path::PathBuf;

/// Where Cursor keeps the files memtrail edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// `$CURSOR_CONFIG_DIR` (absolute), else `~/.cursor`.
    pub config_dir: PathBuf,
    /// `<config>/hooks.json`.
    pub hooks: PathBuf,
    /// `<config>/mcp.json`.
    pub mcp: PathBuf,
    /// `<config>/skills/memtrail/SKILL.md`.
    pub skill: PathBuf,
}

impl Locations {
    /// The locations in `env` (its home and `CURSOR_CONFIG_DIR`): the one resolver of Cursor's
    /// paths, used by the reader's [`super::hooks_path`], [`super::mcp_path`] and
    /// [`super::skill_path`] (with `Env::from_process()`) as by the installer.
    pub fn resolve(env: &Env) -> Locations {
        let config_dir = super::config_dir_in(env);
        Locations {
            hooks: config_dir.join("hooks.json"),
            mcp: config_dir.join("mcp.json"),
            skill: config_dir.join("skills").join("memtrail").join("SKILL.md"),
            config_dir,
        }
    }
}
