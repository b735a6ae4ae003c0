//! Cline's entry in the registry ([`crate::AgentAdapter`]).

use super::paths::Locations;
use crate::env::Env;
use crate::model::Agent;
use crate::registry::{AgentAdapter, Database, Names, Quirks, module_capabilities, stdin_hook};
use crate::vocabulary::Vocabulary;
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// Cline.
pub struct Cline;

/// Its names; the short name is also its hook argument (`memtrail hook cline`).
pub const NAMES: Names = Names::new("cline", &["claude-dev", "cline-cli"], "Cline");

/// The environment variables this adapter reads ([`Quirks::environment`]).
const ENVIRONMENT: &[(&str, &str)] = &[
    ("CLINE_DIR", "The Cline CLI's folder [default: ~/.cline]."),
    (
        "CLINE_DATA_DIR",
        "Cline's data folder (tasks, settings) [default: CLINE_DIR/data].",
    ),
    (
        "CLINE_SESSION_DATA_DIR",
        "The Cline CLI 3.x's sessions folder [default: CLINE_DATA_DIR/sessions].",
    ),
];

impl AgentAdapter for Cline {
    fn names(&self) -> Names {
        NAMES
    }
    fn vocabulary(&self) -> &'static Vocabulary {
        &VOCABULARY
    }
    /// Cline has no per-tool names: its model calls `use_mcp_tool` with `server_name`
    /// `memtrail` and `tool_name` the tool (as Cursor, the bare name under the server).
    fn tool_name(&self, tool: &str) -> String {
        tool.to_string()
    }
    fn source_for(&self, path: &Path) -> Option<Source> {
        super::source_for(path)
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        let loc = Locations::resolve(env);
        std::iter::once(loc.home_dir)
            .chain(loc.extension_dirs)
            .collect()
    }
    /// `{"clineVersion", "hookName": "TaskStart", "timestamp", "taskId", "workspaceRoots":
    /// [cwd], "taskStart": {"taskMetadata": {}}}`.
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value {
        serde_json::json!({
            "clineVersion": "3.89.2", "hookName": "TaskStart", "timestamp": "0",
            "taskId": session_id, "workspaceRoots": [cwd],
            "taskStart": {"taskMetadata": {}},
        })
    }
    stdin_hook!();
    fn discover(&self) -> std::io::Result<Discovery> {
        super::discover()
    }
    /// Cline appends the PreCompact hook's `contextModification` to the `summarize_task`
    /// result that replaces the condensed conversation: the snapshot goes there.
    ///
    /// The CLI 3.x's conversation files are each read as a one-session database (merged by
    /// message id, never pruned: see `sessions::read_db`).
    fn quirks(&self) -> Quirks {
        Quirks {
            replies_at_pre_compact: true,
            written_after_stop: true,
            database: Some(Database {
                read: super::sessions::read_db,
                sessions: super::sessions::session_ids,
                sqlite: false,
            }),
            environment: ENVIRONMENT,
            ..Quirks::NONE
        }
    }
    fn agent(&self) -> Agent {
        Agent::Cline
    }
    module_capabilities!();
    #[cfg(test)]
    fn expected(&self) -> crate::registry::Expected {
        crate::registry::Expected {
            fixture: "cline/data/tasks/1764661500123/api_conversation_history.json",
            session_id: "1764661500123",
            transcripts_per_event: 1,
            search_tool: "search",
        }
    }
}

/// Cline's spellings for event extraction (see [`crate::vocabulary`]): its rule files are
/// `.clinerules` (a file, or a folder of them) and `AGENTS.md`; `ask_followup_question` and
/// `use_skill` are in the shared table; the reader gives the common tool names itself.
static VOCABULARY: Vocabulary = Vocabulary {
    rule_files: &["AGENTS.md"],
    rule_folders: &[".clinerules/"],
    ..Vocabulary::NONE
};
