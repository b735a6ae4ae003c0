//! Crush's entry in the registry ([`crate::AgentAdapter`]).

use super::paths::Locations;
use crate::env::Env;
use crate::model::Agent;
use crate::registry::{AgentAdapter, Database, Names, Quirks, module_capabilities, stdin_hook};
use crate::vocabulary::Vocabulary;
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// Crush (charmbracelet/crush).
pub struct Crush;

/// Its names; the short name is also its hook argument (`memtrail hook crush`).
pub const NAMES: Names = Names::new("crush", &["charm-crush"], "Crush");

/// The environment variables this adapter reads ([`Quirks::environment`]).
const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "CRUSH_GLOBAL_CONFIG",
        "Crush's config folder [default: $XDG_CONFIG_HOME/crush].",
    ),
    (
        "CRUSH_GLOBAL_DATA",
        "Crush's data folder (projects.json) [default: $XDG_DATA_HOME/crush].",
    ),
    (
        "CRUSH_SKILLS_DIR",
        "Crush's skills folder [default: $XDG_CONFIG_HOME/crush/skills].",
    ),
];

impl AgentAdapter for Crush {
    fn names(&self) -> Names {
        NAMES
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        let loc = Locations::resolve(env);
        vec![loc.config_dir, loc.data_dir]
    }
    fn source_for(&self, path: &Path) -> Option<Source> {
        super::source_for(path)
    }
    fn quirks(&self) -> Quirks {
        Quirks {
            database: Some(Database {
                read: super::read_db,
                sessions: super::db_session_ids,
                sqlite: true,
            }),
            import_only: true,
            environment: ENVIRONMENT,
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
    /// Crush names an MCP tool `mcp_<server>_<tool>` (`internal/agent/tools/mcp-tools.go`).
    fn tool_name(&self, tool: &str) -> String {
        format!("mcp_memtrail_{tool}")
    }
    fn agent(&self) -> Agent {
        Agent::Crush
    }
    module_capabilities!();
    #[cfg(test)]
    fn expected(&self) -> crate::registry::Expected {
        crate::registry::Expected {
            fixture: "crush/project/.crush/crush.db",
            session_id: "",
            transcripts_per_event: 1,
            search_tool: "mcp_memtrail_search",
        }
    }
}

/// Crush's spellings for event extraction (see [`crate::vocabulary`]): its reader gives each
/// call its common tool name (`view` → read, `bash` → shell, `todos` → todo); its rule files
/// are `CRUSH.md` and `AGENTS.md`.
static VOCABULARY: Vocabulary = Vocabulary {
    rule_files: &["CRUSH.md", "AGENTS.md"],
    ..Vocabulary::NONE
};
