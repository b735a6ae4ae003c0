//! Where Aider keeps what memtrail reads, and where memtrail looks for it: one resolver
//! ([`Locations::resolve`]) from an explicit environment ([`Env`]).
//!
//! Aider writes its chat log into each repository (`<repo>/.aider.chat.history.md`), so there
//! is no one folder to list: `memtrail import` looks under the roots the user names in
//! memtrail's config, and in the projects memtrail already knows.
//!
//! ```toml
//! # ~/.config/memtrail/config.toml
//! [aider]
//! roots = ["~/code", "/work"]
//! ```

use crate::env::Env;
use std::path::{Path, PathBuf};

/// Where Aider and memtrail's config are (`docs/agents/aider.md#paths`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// The home directory (`~` in the roots).
    pub home: PathBuf,
    /// `~/.aider`: Aider's own folder (caches, analytics); detection.
    pub aider_dir: PathBuf,
    /// memtrail's config: `$XDG_CONFIG_HOME/memtrail/config.toml`, else
    /// `~/.config/memtrail/config.toml`.
    pub memtrail_config: PathBuf,
}

impl Locations {
    /// The locations in `env`.
    pub fn resolve(env: &Env) -> Locations {
        let home = env.home().to_path_buf();
        let config = env
            .abs_var("XDG_CONFIG_HOME")
            .unwrap_or_else(|| home.join(".config"));
        Locations {
            aider_dir: home.join(".aider"),
            memtrail_config: config.join("memtrail").join("config.toml"),
            home,
        }
    }
}

/// The roots of memtrail's config `[aider] roots` (absolute, or `~/…` against `home`), and what
/// could not be used (the file unreadable or not TOML, a root that is not a path string).
/// A missing file or table gives no roots.
pub fn config_roots(config: &Path, home: &Path) -> (Vec<PathBuf>, Vec<(PathBuf, String)>) {
    // memtrail's config: a regular file of at most 1 MiB, as the runtime reads it.
    let text = match crate::paths::read_small_text(config, 1024 * 1024) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Vec::new(), Vec::new()),
        Err(e) => return (Vec::new(), vec![(config.to_path_buf(), e.to_string())]),
    };
    let doc: toml_edit::DocumentMut = match text.parse() {
        Ok(d) => d,
        Err(e) => {
            let e: toml_edit::TomlError = e;
            return (Vec::new(), vec![(config.to_path_buf(), e.to_string())]);
        }
    };
    let mut roots = Vec::new();
    let mut bad = Vec::new();
    let Some(arr) = doc
        .get("aider")
        .and_then(|t| t.get("roots"))
        .and_then(|r| r.as_array())
    else {
        return (roots, bad);
    };
    for v in arr.iter() {
        let p = match v.as_str() {
            Some("~") => Some(home.to_path_buf()),
            Some(s) => match s.strip_prefix("~/") {
                Some(rest) => Some(home.join(rest)),
                None => Some(PathBuf::from(s)).filter(|p| p.is_absolute()),
            },
            None => None,
        };
        match p {
            Some(p) => roots.push(p),
            None => bad.push((
                config.to_path_buf(),
                format!("[aider] roots: {v} is not an absolute or ~/ path"),
            )),
        }
    }
    (roots, bad)
}
