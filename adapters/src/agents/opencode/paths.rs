//! Where OpenCode keeps its config and transcripts: one resolver ([`Locations::resolve`]) from an
//! explicit environment ([`Env`]), for ingest, the hook and the installer alike.

use crate::env::Env;
use std::path::PathBuf;

/// Where OpenCode keeps the files memtrail edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// `$XDG_CONFIG_HOME/opencode` (absolute), else `~/.config/opencode`.
    pub config_dir: PathBuf,
    /// `$XDG_DATA_HOME/opencode` (absolute), else `~/.local/share/opencode` (detection).
    pub data_dir: PathBuf,
    /// `<config>/plugins/memtrail.ts`.
    pub plugin: PathBuf,
    /// `<config>/opencode.jsonc` when it is a file, else `<config>/opencode.json`.
    pub config_file: PathBuf,
    /// `<config>/skills/memtrail/SKILL.md`.
    pub skill: PathBuf,
}

impl Locations {
    /// The locations in `env` (its home and variables): the one resolver of OpenCode's paths,
    /// used by the transcript reader and the hook (with `Env::from_process()`) as by the
    /// installer.
    pub fn resolve(env: &Env) -> Locations {
        let home = env.home();
        let config_dir = env
            .abs_var("XDG_CONFIG_HOME")
            .unwrap_or_else(|| home.join(".config"))
            .join("opencode");
        let data_dir = env
            .abs_var("XDG_DATA_HOME")
            .unwrap_or_else(|| home.join(".local").join("share"))
            .join("opencode");
        let jsonc = config_dir.join("opencode.jsonc");
        let config_file = if jsonc.is_file() {
            jsonc
        } else {
            config_dir.join("opencode.json")
        };
        Locations {
            plugin: config_dir.join("plugins").join(super::PLUGIN_FILE_NAME),
            skill: config_dir.join("skills").join("memtrail").join("SKILL.md"),
            config_file,
            config_dir,
            data_dir,
        }
    }
}
