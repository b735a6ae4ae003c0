//! Where Cline keeps its config and transcripts: one resolver ([`Locations::resolve`]) from an
//! explicit environment ([`Env`]), for ingest, the hook and the installer alike. The editor
//! folders are shared with Roo Code (a fork that keeps the same layout under its own
//! extension id): [`extension_dirs`].

use crate::env::Env;
use std::path::{Path, PathBuf};

/// Cline's VS Code extension id (its `globalStorage` folder name).
pub const EXTENSION_ID: &str = "saoudrizwan.claude-dev";

/// The editors whose user folders hold a `globalStorage/<extension id>/` folder, next to VS
/// Code's `Code/` in the platform's application-data folder: VSCodium, Cursor and Windsurf
/// (VS Code forks that install the same extensions).
const FORKS: [&str; 3] = ["VSCodium", "Cursor", "Windsurf"];

/// Every `<user folder>/globalStorage/<extension>` folder an editor may hold (existing or not):
/// VS Code's user folders ([`crate::vscode::user_dirs_in`]: stable, Insiders and the remote
/// servers), then VSCodium's, Cursor's and Windsurf's (`<app data>/<fork>/User`, the folder
/// holding VS Code's `Code/User`; not in VS Code's portable mode).
pub fn extension_dirs(env: &Env, extension: &str) -> Vec<PathBuf> {
    let users = crate::vscode::user_dirs_in(env);
    let app_data = (env.abs_var("VSCODE_PORTABLE").is_none())
        .then(|| users.first().and_then(|u| u.parent()?.parent()))
        .flatten()
        .map(Path::to_path_buf);
    let forks = app_data
        .into_iter()
        .flat_map(|a| FORKS.map(|f| a.join(f).join("User")));
    users
        .iter()
        .cloned()
        .chain(forks)
        .map(|u| u.join("globalStorage").join(extension))
        .collect()
}

/// Where Cline keeps the files memtrail reads and edits (`docs/agents/cline.md#paths`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// Cline's own folder `~/.cline` (`$CLINE_DIR` when set and absolute).
    pub home_dir: PathBuf,
    /// Its data folder: `$CLINE_DATA_DIR`, else `$CLINE_DIR/data`, else `~/.cline/data`
    /// (`resolveDataDirFromEnv`). The 4.x extension keeps its tasks in `<data>/tasks/<id>/`;
    /// the extension and the CLI keep their MCP servers in
    /// `<data>/settings/cline_mcp_settings.json`; the CLI 3.x its sessions in `<data>/sessions/`.
    pub data_dir: PathBuf,
    /// `<data>/tasks`.
    pub data_tasks: PathBuf,
    /// The CLI 3.x's sessions: `$CLINE_SESSION_DATA_DIR` when set and absolute, else
    /// `<data>/sessions` (`<id>/<id>.messages.json`, see `cline::sessions`).
    pub data_sessions: PathBuf,
    /// `<data>/settings/cline_mcp_settings.json`.
    pub data_mcp: PathBuf,
    /// The editors' extension folders (`…/globalStorage/saoudrizwan.claude-dev`, see
    /// [`extension_dirs`]): Cline 3.x keeps its tasks in `<dir>/tasks/<id>/` and its MCP
    /// servers in `<dir>/settings/cline_mcp_settings.json`.
    pub extension_dirs: Vec<PathBuf>,
    /// The global hooks folder `~/Documents/Cline/Hooks`: one executable file per hook, named
    /// after its event (`TaskComplete`).
    pub hooks_dir: PathBuf,
    /// The skill `~/.cline/skills/memtrail/SKILL.md` (Cline's global skills folder).
    pub skill: PathBuf,
}

impl Locations {
    /// The locations in `env` (its home, `CLINE_DIR`, `CLINE_DATA_DIR`, and VS Code's
    /// variables for the editors' folders). The Documents folder is `~/Documents`: Cline asks
    /// `xdg-user-dir DOCUMENTS` on Linux, which memtrail does not run
    /// (`docs/agents/cline.md#paths`).
    pub fn resolve(env: &Env) -> Locations {
        let home = env.home().to_path_buf();
        let home_dir = env
            .abs_var("CLINE_DIR")
            .unwrap_or_else(|| home.join(".cline"));
        let data_dir = env
            .abs_var("CLINE_DATA_DIR")
            .or_else(|| env.abs_var("CLINE_DIR").map(|d| d.join("data")))
            .unwrap_or_else(|| home.join(".cline").join("data"));
        Locations {
            data_tasks: data_dir.join("tasks"),
            data_sessions: env
                .abs_var("CLINE_SESSION_DATA_DIR")
                .unwrap_or_else(|| data_dir.join(super::sessions::SESSIONS_DIR)),
            data_mcp: data_dir.join("settings").join(MCP_SETTINGS_FILE),
            extension_dirs: extension_dirs(env, EXTENSION_ID),
            hooks_dir: home.join("Documents").join("Cline").join("Hooks"),
            skill: home_dir.join("skills").join("memtrail").join("SKILL.md"),
            home_dir,
            data_dir,
        }
    }

    /// Every folder holding task folders: `<data>/tasks`, then each editor's
    /// `<extension>/tasks`.
    pub fn task_roots(&self) -> Vec<PathBuf> {
        std::iter::once(self.data_tasks.clone())
            .chain(self.extension_dirs.iter().map(|d| d.join("tasks")))
            .collect()
    }
}

/// Cline's MCP settings file name (`GlobalFileNames.mcpSettings`).
pub const MCP_SETTINGS_FILE: &str = "cline_mcp_settings.json";
