//! Where Codex CLI keeps its config and transcripts: one resolver ([`Locations::resolve`]) from an
//! explicit environment ([`Env`]), for ingest, the hook and the installer alike.

use crate::env::Env;
use std::path::PathBuf;

/// Where Codex keeps the files memtrail edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// `$CODEX_HOME` (non-empty; relative to the current directory when relative), else
    /// `~/.codex`.
    pub config_dir: PathBuf,
    /// `<home>/config.toml`.
    pub config_toml: PathBuf,
    /// `<home>/hooks.json`.
    pub hooks_json: PathBuf,
    /// `<home>/skills/memtrail/SKILL.md`.
    pub skill: PathBuf,
    /// `~/.agents/skills/memtrail/SKILL.md`, where memtrail put the skill before: removed.
    pub legacy_skill: PathBuf,
}

impl Locations {
    /// The locations in `env` (its home and variables): the one resolver of Codex CLI's paths,
    /// used by the transcript reader and the hook (with `Env::from_process()`) as by the
    /// installer.
    pub fn resolve(env: &Env) -> Locations {
        let home = env.home();
        let config_dir = match env.var("CODEX_HOME").filter(|v| !v.is_empty()) {
            Some(v) => {
                let p = PathBuf::from(v);
                if p.is_absolute() {
                    p
                } else {
                    std::env::current_dir().map(|d| d.join(&p)).unwrap_or(p)
                }
            }
            None => home.join(".codex"),
        };
        Locations {
            config_toml: config_dir.join("config.toml"),
            hooks_json: config_dir.join("hooks.json"),
            skill: config_dir.join("skills").join("memtrail").join("SKILL.md"),
            legacy_skill: home
                .join(".agents")
                .join("skills")
                .join("memtrail")
                .join("SKILL.md"),
            config_dir,
        }
    }
}
