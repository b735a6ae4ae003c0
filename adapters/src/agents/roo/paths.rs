//! Where Roo Code keeps its config and tasks: one resolver ([`Locations::resolve`]) from an
//! explicit environment ([`Env`]), for ingest and the installer alike. The editors' folders are
//! Cline's ([`crate::cline::paths::extension_dirs`]) under Roo Code's extension id.

use crate::env::Env;
use std::path::PathBuf;

/// Roo Code's VS Code extension id (its `globalStorage` folder name).
pub const EXTENSION_ID: &str = "rooveterinaryinc.roo-cline";

/// Roo Code's MCP settings file name (`GlobalFileNames.mcpSettings`).
pub const MCP_SETTINGS_FILE: &str = "mcp_settings.json";

/// Where Roo Code keeps the files memtrail reads and edits (`docs/agents/roo.md#paths`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// Every editor's `…/globalStorage/rooveterinaryinc.roo-cline` folder (existing or not),
    /// holding `tasks/<id>/` and `settings/mcp_settings.json`.
    pub extension_dirs: Vec<PathBuf>,
    /// The extension folders memtrail registers its MCP server in: those that exist, else VS
    /// Code's (the first).
    pub registered_dirs: Vec<PathBuf>,
    /// Roo Code's global folder `~/.roo` (rules, skills).
    pub global_dir: PathBuf,
    /// The skill `~/.roo/skills/memtrail/SKILL.md`.
    pub skill: PathBuf,
}

impl Locations {
    /// The locations in `env` (its home and VS Code's variables). The setting
    /// `roo-cline.customStoragePath` (tasks elsewhere) is not read (`docs/agents/roo.md#paths`).
    pub fn resolve(env: &Env) -> Locations {
        let extension_dirs = crate::cline::paths::extension_dirs(env, EXTENSION_ID);
        let mut registered_dirs: Vec<PathBuf> = extension_dirs
            .iter()
            .filter(|d| d.is_dir())
            .cloned()
            .collect();
        if registered_dirs.is_empty() {
            registered_dirs.extend(extension_dirs.first().cloned());
        }
        let global_dir = env.home().join(".roo");
        Locations {
            skill: global_dir.join("skills").join("memtrail").join("SKILL.md"),
            extension_dirs,
            registered_dirs,
            global_dir,
        }
    }

    /// Every folder holding task folders: each editor's `<extension>/tasks`.
    pub fn task_roots(&self) -> Vec<PathBuf> {
        self.extension_dirs
            .iter()
            .map(|d| d.join("tasks"))
            .collect()
    }
}
