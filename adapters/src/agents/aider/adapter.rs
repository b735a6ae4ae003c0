//! Aider's entry in the registry ([`crate::AgentAdapter`]).

use super::paths::Locations;
use crate::env::Env;
use crate::model::Agent;
use crate::registry::{AgentAdapter, Names, Quirks, module_capabilities, stdin_hook};
use crate::vocabulary::Vocabulary;
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// Aider.
pub struct Aider;

/// Its names; the short name is also its `--agent` name.
pub const NAMES: Names = Names::new("aider", &["aider-chat"], "Aider");

impl AgentAdapter for Aider {
    fn names(&self) -> Names {
        NAMES
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        vec![Locations::resolve(env).aider_dir]
    }
    fn source_for(&self, path: &Path) -> Option<Source> {
        super::source_for(path)
    }
    fn quirks(&self) -> Quirks {
        Quirks {
            discover_in_projects: Some(super::discover_in_projects),
            import_only: true,
            no_mcp_client: true,
            ..Quirks::NONE
        }
    }
    stdin_hook!();
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value {
        serde_json::json!({ "event": "SessionStart", "session_id": session_id, "cwd": cwd })
    }
    fn discover(&self) -> std::io::Result<Discovery> {
        super::discover()
    }
    fn vocabulary(&self) -> &'static Vocabulary {
        &VOCABULARY
    }
    /// Aider has no MCP client; the name memtrail's tool would have.
    fn tool_name(&self, tool: &str) -> String {
        format!("memtrail_{tool}")
    }
    fn agent(&self) -> Agent {
        Agent::Aider
    }
    module_capabilities!();
    #[cfg(test)]
    fn expected(&self) -> crate::registry::Expected {
        crate::registry::Expected {
            fixture: "aider/repo/.aider.chat.history.md",
            session_id: "aider-*",
            transcripts_per_event: 1,
            search_tool: "memtrail_search",
        }
    }
}

/// Aider's rule files (`CONVENTIONS.md`, read with `--read`); it calls no tools.
static VOCABULARY: Vocabulary = Vocabulary {
    rule_files: &["CONVENTIONS.md"],
    ..Vocabulary::NONE
};
