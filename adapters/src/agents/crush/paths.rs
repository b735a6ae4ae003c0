//! Where Crush keeps its config, its projects list and its databases: one resolver
//! ([`Locations::resolve`]) from an explicit environment ([`Env`]).

use crate::env::Env;
use std::path::PathBuf;

/// Where Crush keeps the files memtrail reads and edits (`docs/agents/crush.md#paths`), after
/// Crush's `internal/config/load.go` (`GlobalConfig`, `GlobalConfigData`, `GlobalSkillsDirs`)
/// and `internal/home`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// The user config folder: `$CRUSH_GLOBAL_CONFIG`, else `$XDG_CONFIG_HOME/crush`, else
    /// `~/.config/crush`.
    pub config_dir: PathBuf,
    /// `<config>/crush.json`: the user's config, `mcp` included.
    pub config_file: PathBuf,
    /// `<skills>/memtrail/SKILL.md`, `<skills>` = `$CRUSH_SKILLS_DIR`, else
    /// `$XDG_CONFIG_HOME/crush/skills` or `~/.config/crush/skills`.
    pub skill: PathBuf,
    /// The global data folder: `$CRUSH_GLOBAL_DATA`, else `$XDG_DATA_HOME/crush`, else
    /// `~/.local/share/crush` (detection; `projects.json`).
    pub data_dir: PathBuf,
    /// `<data>/projects.json`: every project Crush ran in, with its data folder (where its
    /// `crush.db` is).
    pub projects: PathBuf,
}

impl Locations {
    /// The locations in `env`: the one resolver of Crush's paths.
    pub fn resolve(env: &Env) -> Locations {
        let home = env.home().to_path_buf();
        let xdg_config = env
            .abs_var("XDG_CONFIG_HOME")
            .unwrap_or_else(|| home.join(".config"));
        let config_dir = env
            .abs_var("CRUSH_GLOBAL_CONFIG")
            .unwrap_or_else(|| xdg_config.join("crush"));
        let skills = env
            .abs_var("CRUSH_SKILLS_DIR")
            .unwrap_or_else(|| xdg_config.join("crush").join("skills"));
        let data_dir = env.abs_var("CRUSH_GLOBAL_DATA").unwrap_or_else(|| {
            env.abs_var("XDG_DATA_HOME")
                .unwrap_or_else(|| home.join(".local").join("share"))
                .join("crush")
        });
        Locations {
            config_file: config_dir.join("crush.json"),
            skill: skills.join("memtrail").join("SKILL.md"),
            projects: data_dir.join("projects.json"),
            config_dir,
            data_dir,
        }
    }
}
