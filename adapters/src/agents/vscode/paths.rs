//! Where VS Code keeps the files memtrail edits: one resolver ([`Locations::resolve`]) from an
//! explicit environment ([`Env`]), for detection and the installer alike.

use crate::env::Env;
use std::path::PathBuf;

/// One VS Code user folder memtrail registers in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserDir {
    /// The folder (`…/Code/User`, `…/Code - Insiders/User`).
    pub dir: PathBuf,
    /// `<dir>/settings.json`.
    pub settings: PathBuf,
    /// `<dir>/mcp.json`.
    pub mcp: PathBuf,
}

/// Where memtrail's VS Code files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// memtrail's hook file (`~/.config/memtrail/vscode-hooks.json`).
    pub hook_file: PathBuf,
    /// The user folders to register in.
    pub user_dirs: Vec<UserDir>,
    /// Every folder whose existence means VS Code is installed (including remote-server ones).
    pub detect_dirs: Vec<PathBuf>,
}

impl Locations {
    /// The locations in `env` (its home and variables; the user folders of
    /// [`super::user_dirs_in`]): the one resolver of memtrail's VS Code files, for the installer,
    /// detection and status alike.
    pub fn resolve(env: &Env) -> Locations {
        let home = env.home();
        let all = super::user_dirs_in(env);
        let desktop: Vec<PathBuf> = all.iter().take(2).cloned().collect();
        let mut chosen: Vec<PathBuf> = desktop.iter().filter(|d| d.is_dir()).cloned().collect();
        if chosen.is_empty() {
            chosen = desktop.into_iter().take(1).collect();
        }
        Locations {
            hook_file: home.join(super::registration::HOOK_FILE_IN_HOME),
            user_dirs: chosen
                .into_iter()
                .map(|dir| UserDir {
                    settings: dir.join("settings.json"),
                    mcp: dir.join("mcp.json"),
                    dir,
                })
                .collect(),
            detect_dirs: all,
        }
    }
}
