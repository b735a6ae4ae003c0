//! Goose's entry in the registry ([`crate::AgentAdapter`]).

use super::paths::Locations;
use crate::env::Env;
use crate::model::Agent;
use crate::registry::{AgentAdapter, Database, Names, Quirks, module_capabilities, stdin_hook};
use crate::vocabulary::Vocabulary;
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// Goose (block/goose).
pub struct Goose;

/// Its names; the short name is also its hook argument (`memtrail hook goose`).
pub const NAMES: Names = Names::new("goose", &["goose-cli", "block-goose"], "Goose");

/// The environment variables this adapter reads ([`Quirks::environment`]).
const ENVIRONMENT: &[(&str, &str)] = &[(
    "GOOSE_PATH_ROOT",
    "Goose's root: its config, data and plugin folders below it [default: the XDG folders].",
)];

impl AgentAdapter for Goose {
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
            environment: ENVIRONMENT,
            ..Quirks::NONE
        }
    }
    stdin_hook!();
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value {
        serde_json::json!({
            "event": "SessionStart", "session_id": session_id, "working_dir": cwd,
        })
    }
    fn discover(&self) -> std::io::Result<Discovery> {
        super::discover()
    }
    fn vocabulary(&self) -> &'static Vocabulary {
        &VOCABULARY
    }
    /// Goose names a plugin's MCP server `<plugin>:<server>` (`memtrail:memtrail`) and shows
    /// its tools as `<extension>__<tool>`.
    fn tool_name(&self, tool: &str) -> String {
        format!("memtrail:memtrail__{tool}")
    }
    fn agent(&self) -> Agent {
        Agent::Goose
    }
    module_capabilities!();
    #[cfg(test)]
    fn expected(&self) -> crate::registry::Expected {
        crate::registry::Expected {
            fixture: "goose/legacy/sessions/20250301_101500.jsonl",
            session_id: "20250301_101500",
            transcripts_per_event: 1,
            search_tool: "memtrail:memtrail__search",
        }
    }
}

/// Goose's spellings for event extraction (see [`crate::vocabulary`]): its reader gives each
/// call its common tool name itself (`developer__shell` → `shell`, `developer__text_editor` by
/// its `command`), so only its rule files are here: `.goosehints` and `AGENTS.md`.
static VOCABULARY: Vocabulary = Vocabulary {
    rule_files: &[".goosehints", "AGENTS.md"],
    ..Vocabulary::NONE
};
