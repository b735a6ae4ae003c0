//! Where Gemini CLI keeps its config and transcripts: one resolver ([`Locations::resolve`]) from an
//! explicit environment ([`Env`]), for ingest, the hook and the installer alike.

use crate::env::Env;
use std::path::PathBuf;

/// Where Gemini CLI keeps the files memtrail edits (`docs/agents/gemini.md#paths`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// `$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`.
    pub config_dir: PathBuf,
    /// `<config>/settings.json` (hooks and MCP).
    pub settings: PathBuf,
    /// `<config>/skills/memtrail/SKILL.md`.
    pub skill: PathBuf,
}

impl Locations {
    /// The locations in `env` (its home and variables): the one resolver of Gemini CLI's paths,
    /// used by the transcript reader and the hook (with `Env::from_process()`) as by the
    /// installer.
    pub fn resolve(env: &Env) -> Locations {
        let home = env.home();
        let base = match env.var("GEMINI_CLI_HOME").filter(|v| !v.is_empty()) {
            Some(v) => {
                let p = PathBuf::from(v);
                if p.is_absolute() {
                    p
                } else {
                    std::env::current_dir().map(|d| d.join(&p)).unwrap_or(p)
                }
            }
            None => home.to_path_buf(),
        };
        let config_dir = base.join(".gemini");
        Locations {
            settings: config_dir.join("settings.json"),
            skill: config_dir.join("skills").join("memtrail").join("SKILL.md"),
            config_dir,
        }
    }
}
