//! Where Goose keeps its config, sessions and plugins: one resolver ([`Locations::resolve`]) from
//! an explicit environment ([`Env`]), for ingest, the hook and the installer alike.

use crate::env::Env;
use std::path::PathBuf;

/// Where Goose keeps the files memtrail reads and writes (`docs/agents/goose.md#paths`).
///
/// Goose's `Paths` (`crates/goose/src/config/paths.rs`): with `GOOSE_PATH_ROOT` set to an
/// absolute path, everything lives under it (`config/`, `data/`, `.agents/plugins/`); else the
/// XDG folders of `etcetera`'s strategy (`$XDG_CONFIG_HOME/goose` or `~/.config/goose`,
/// `$XDG_DATA_HOME/goose` or `~/.local/share/goose`) and `~/.agents/plugins`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// Goose's config folder (`config.yaml`; detection).
    pub config_dir: PathBuf,
    /// Goose's data folder (detection).
    pub data_dir: PathBuf,
    /// `<data>/sessions`: `sessions.db`, and the legacy `<id>.jsonl` files.
    pub sessions_dir: PathBuf,
    /// `<data>/sessions/sessions.db`, every session of every project.
    pub database: PathBuf,
    /// `<plugins>/memtrail`: memtrail's Goose plugin folder (Open Plugins layout).
    pub plugin_dir: PathBuf,
    /// `<plugin>/hooks/hooks.json`: the plugin's hooks.
    pub hooks_json: PathBuf,
    /// `<plugin>/.mcp.json`: the plugin's MCP server.
    pub mcp_json: PathBuf,
    /// `<plugin>/skills/memtrail/SKILL.md`: the plugin's skill.
    pub skill: PathBuf,
}

/// The folder name of memtrail's plugin (Goose names the plugin after its folder when it has
/// no manifest, and its MCP servers `<plugin>:<server>`).
pub const PLUGIN_NAME: &str = "memtrail";

impl Locations {
    /// The locations in `env` (its home, `GOOSE_PATH_ROOT`, `XDG_CONFIG_HOME`,
    /// `XDG_DATA_HOME`): the one resolver of Goose's paths.
    pub fn resolve(env: &Env) -> Locations {
        let home = env.home().to_path_buf();
        let (config_dir, data_dir, plugins) = match env.abs_var("GOOSE_PATH_ROOT") {
            Some(root) => (
                root.join("config"),
                root.join("data"),
                root.join(".agents").join("plugins"),
            ),
            None => (
                env.abs_var("XDG_CONFIG_HOME")
                    .unwrap_or_else(|| home.join(".config"))
                    .join("goose"),
                env.abs_var("XDG_DATA_HOME")
                    .unwrap_or_else(|| home.join(".local").join("share"))
                    .join("goose"),
                home.join(".agents").join("plugins"),
            ),
        };
        let sessions_dir = data_dir.join(super::SESSIONS_DIR);
        let plugin_dir = plugins.join(PLUGIN_NAME);
        Locations {
            database: sessions_dir.join(super::DB_NAME),
            hooks_json: plugin_dir.join("hooks").join("hooks.json"),
            mcp_json: plugin_dir.join(".mcp.json"),
            skill: plugin_dir.join("skills").join("memtrail").join("SKILL.md"),
            plugin_dir,
            sessions_dir,
            config_dir,
            data_dir,
        }
    }
}
