//! Roo Code's entry in the registry ([`crate::AgentAdapter`]).

use super::paths::Locations;
use crate::env::Env;
use crate::model::Agent;
use crate::registry::{AgentAdapter, Names, Quirks, module_capabilities, stdin_hook};
use crate::vocabulary::Vocabulary;
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// Roo Code.
pub struct Roo;

/// Its names (`--agent roo`).
pub const NAMES: Names = Names::new("roo", &["roo-code", "roocode", "roo-cline"], "Roo Code");

impl AgentAdapter for Roo {
    fn names(&self) -> Names {
        NAMES
    }
    fn vocabulary(&self) -> &'static Vocabulary {
        &VOCABULARY
    }
    /// Roo Code's native tool calls name an MCP tool `mcp--<server>--<tool>`
    /// (`src/utils/mcp-name.ts`).
    fn tool_name(&self, tool: &str) -> String {
        format!("mcp--memtrail--{tool}")
    }
    fn source_for(&self, path: &Path) -> Option<Source> {
        super::source_for(path)
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        let loc = Locations::resolve(env);
        std::iter::once(loc.global_dir)
            .chain(loc.extension_dirs)
            .collect()
    }
    /// Cline's `TaskStart` shape: Roo Code has no hooks of its own.
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value {
        serde_json::json!({
            "hookName": "TaskStart", "taskId": session_id, "workspaceRoots": [cwd],
        })
    }
    stdin_hook!();
    fn discover(&self) -> std::io::Result<Discovery> {
        super::discover()
    }
    fn quirks(&self) -> Quirks {
        Quirks {
            import_only: true,
            ..Quirks::NONE
        }
    }
    fn agent(&self) -> Agent {
        Agent::Roo
    }
    module_capabilities!();
    #[cfg(test)]
    fn expected(&self) -> crate::registry::Expected {
        crate::registry::Expected {
            fixture: "roo/vscode/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/0b6f2c1e-4d5a-4e7b-9c8d-1a2b3c4d5e6f/api_conversation_history.json",
            session_id: "0b6f2c1e-4d5a-4e7b-9c8d-1a2b3c4d5e6f",
            transcripts_per_event: 1,
            search_tool: "mcp--memtrail--search",
        }
    }
}

/// Roo Code's spellings for event extraction (see [`crate::vocabulary`]): its rule files are
/// `.roorules` (and `.roorules-<mode>`), `.clinerules` (shared) and `AGENTS.md`, its rule
/// folders `.roo/rules/` and `.roo/rules-<mode>/`.
static VOCABULARY: Vocabulary = Vocabulary {
    rule_files: &[".roorules", "AGENTS.md"],
    rule_folders: &[".roo/rules"],
    ..Vocabulary::NONE
};
