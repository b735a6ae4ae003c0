//! Where Qwen Code keeps its config and transcripts: one resolver ([`Locations::resolve`]) from
//! an explicit environment ([`Env`]), for ingest, the hook and the installer alike.

use crate::env::Env;
use std::path::{Path, PathBuf};

/// Where Qwen Code keeps the files memtrail reads and edits (`docs/agents/qwen.md#paths`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// The global config folder: `$QWEN_HOME` when set and not empty, else `~/.qwen`
    /// (`Storage.getGlobalQwenDir`).
    pub config_dir: PathBuf,
    /// `<config>/settings.json`: user settings, `hooks` and `mcpServers` included.
    pub settings: PathBuf,
    /// `<config>/skills/memtrail/SKILL.md` (user skills).
    pub skill: PathBuf,
    /// The runtime folder holding the sessions: `$QWEN_RUNTIME_DIR` when set and not empty, else
    /// the config folder (`Storage.getRuntimeBaseDir`).
    pub runtime_dir: PathBuf,
    /// `<runtime>/projects`: one folder per project, `<sanitized cwd>/chats/<session id>.jsonl`.
    pub projects: PathBuf,
}

/// A directory variable as Qwen Code reads it (`Storage.resolvePath`): `~` and `~/…` expanded
/// against `home`, a relative path taken against the current directory; unset or empty: `None`.
fn dir_var(env: &Env, key: &str, home: &Path) -> Option<PathBuf> {
    let v = env.var(key).filter(|v| !v.is_empty())?;
    let s = v.to_string_lossy();
    let p = if s == "~" {
        home.to_path_buf()
    } else if let Some(rest) = s.strip_prefix("~/") {
        home.join(rest)
    } else {
        PathBuf::from(v)
    };
    Some(if p.is_absolute() {
        p
    } else {
        std::env::current_dir().map(|d| d.join(&p)).unwrap_or(p)
    })
}

impl Locations {
    /// The locations in `env` (its home, `QWEN_HOME`, `QWEN_RUNTIME_DIR`): the one resolver of
    /// Qwen Code's paths, used by the reader and the hook (with `Env::from_process()`) as by the
    /// installer. The setting `advanced.runtimeOutputDir` (a runtime folder set in
    /// `settings.json`) is not read (`docs/agents/qwen.md#paths`).
    pub fn resolve(env: &Env) -> Locations {
        let home = env.home().to_path_buf();
        let config_dir = dir_var(env, "QWEN_HOME", &home).unwrap_or_else(|| home.join(".qwen"));
        let runtime_dir =
            dir_var(env, "QWEN_RUNTIME_DIR", &home).unwrap_or_else(|| config_dir.clone());
        Locations {
            settings: config_dir.join("settings.json"),
            skill: config_dir.join("skills").join("memtrail").join("SKILL.md"),
            projects: runtime_dir.join("projects"),
            runtime_dir,
            config_dir,
        }
    }
}

/// Qwen Code's project folder name for a working directory (`sanitizeCwd`): every character
/// that is not an ASCII letter or digit becomes `-` (one `-` per UTF-16 code unit, as
/// JavaScript's `replace(/[^a-zA-Z0-9]/g, "-")` counts them).
pub fn project_folder(cwd: &str) -> String {
    cwd.chars()
        .flat_map(|c| {
            let n = if c.is_ascii_alphanumeric() {
                0
            } else {
                c.len_utf16()
            };
            let keep = (n == 0).then_some(c);
            keep.into_iter().chain(std::iter::repeat_n('-', n))
        })
        .collect()
}
