//! Continue's CLI entry in the registry ([`crate::AgentAdapter`]).

use super::paths::Locations;
use crate::env::Env;
use crate::model::Agent;
use crate::registry::{AgentAdapter, Database, Names, Quirks, module_capabilities, stdin_hook};
use crate::vocabulary::Vocabulary;
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// Continue (its CLI, `cn`).
pub struct Continue;

/// Its names; the short name is also its hook argument (`memtrail hook continue`).
pub const NAMES: Names = Names::new("continue", &["continue-cli", "cn"], "Continue");

/// The environment variables this adapter reads ([`Quirks::environment`]).
const ENVIRONMENT: &[(&str, &str)] = &[(
    "CONTINUE_GLOBAL_DIR",
    "Continue's folder [default: ~/.continue].",
)];

impl AgentAdapter for Continue {
    fn names(&self) -> Names {
        NAMES
    }
    fn vocabulary(&self) -> &'static Vocabulary {
        &VOCABULARY
    }
    /// Continue shows an MCP server's tools to the model under their own names (`search`),
    /// seen with 1.5.47.
    fn tool_name(&self, tool: &str) -> String {
        tool.to_string()
    }
    fn source_for(&self, path: &Path) -> Option<Source> {
        super::source_for(path)
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        vec![Locations::resolve(env).config_dir]
    }
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value {
        crate::registry::claude_shaped_session_start(session_id, cwd)
    }
    stdin_hook!();
    fn discover(&self) -> std::io::Result<Discovery> {
        super::discover()
    }
    fn quirks(&self) -> Quirks {
        Quirks {
            // Each session file is read as a one-session database: rewritten whole, merged,
            // never pruned by a compaction (see the module docs).
            database: Some(Database {
                read: super::read_session,
                sessions: super::session_ids,
                sqlite: false,
            }),
            import_only: true,
            environment: ENVIRONMENT,
            ..Quirks::NONE
        }
    }
    fn agent(&self) -> Agent {
        Agent::Continue
    }
    module_capabilities!();
    #[cfg(test)]
    fn expected(&self) -> crate::registry::Expected {
        crate::registry::Expected {
            fixture: "continue/sessions/3c9e1f70-2a4b-4d6e-8f01-a2b3c4d5e6f7.json",
            session_id: "3c9e1f70-2a4b-4d6e-8f01-a2b3c4d5e6f7",
            transcripts_per_event: 1,
            search_tool: "search",
        }
    }
}

/// Continue's rule files for event extraction (see [`crate::vocabulary`]): `AGENTS.md` and
/// `.continue/rules/`. Its tools (`Read`, `Write`, `Edit`, `MultiEdit`, `Bash`, `List`,
/// `Search`, `Fetch`) are in the shared table by those names.
static VOCABULARY: Vocabulary = Vocabulary {
    rule_files: &["AGENTS.md"],
    rule_folders: &[".continue/rules/"],
    ..Vocabulary::NONE
};
