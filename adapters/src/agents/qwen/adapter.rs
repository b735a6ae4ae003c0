//! Qwen Code's entry in the registry ([`crate::AgentAdapter`]).

use super::paths::Locations;
use crate::env::Env;
use crate::model::{Agent, LineReader};
use crate::registry::{AgentAdapter, Names, Quirks, module_capabilities, stdin_hook};
use crate::vocabulary::{ToolAction, Vocabulary};
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// Qwen Code.
pub struct Qwen;

/// Its names; the short name is also its hook argument (`memtrail hook qwen`).
pub const NAMES: Names = Names::new("qwen", &["qwen-code", "qwencode"], "Qwen Code");

/// The environment variables this adapter reads ([`Quirks::environment`]).
const ENVIRONMENT: &[(&str, &str)] = &[
    ("QWEN_HOME", "Qwen Code's folder [default: ~/.qwen]."),
    (
        "QWEN_RUNTIME_DIR",
        "Qwen Code's runtime folder [default: QWEN_HOME].",
    ),
];

impl AgentAdapter for Qwen {
    fn names(&self) -> Names {
        NAMES
    }
    fn vocabulary(&self) -> &'static Vocabulary {
        &VOCABULARY
    }
    fn tool_name(&self, tool: &str) -> String {
        format!("mcp__memtrail__{tool}")
    }
    fn source_for(&self, path: &Path) -> Option<Source> {
        super::source_for(path)
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        vec![Locations::resolve(env).config_dir]
    }
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value {
        serde_json::json!({
            "session_id": session_id, "transcript_path": "", "cwd": cwd,
            "hook_event_name": "SessionStart", "source": "startup",
        })
    }
    stdin_hook!();
    fn discover(&self) -> std::io::Result<Discovery> {
        super::discover()
    }
    fn quirks(&self) -> Quirks {
        Quirks {
            transcript_reader: Some(new_reader),
            environment: ENVIRONMENT,
            ..Quirks::NONE
        }
    }
    fn agent(&self) -> Agent {
        Agent::Qwen
    }
    module_capabilities!();
    #[cfg(test)]
    fn expected(&self) -> crate::registry::Expected {
        crate::registry::Expected {
            fixture: "qwen/projects/-home-user-demo/chats/7c1e4b2a-5d3f-4e8a-9b6c-0a1d2e3f4a5b.jsonl",
            session_id: "7c1e4b2a-5d3f-4e8a-9b6c-0a1d2e3f4a5b",
            transcripts_per_event: 2,
            search_tool: "mcp__memtrail__search",
        }
    }
}

fn new_reader() -> Box<dyn LineReader> {
    Box::new(super::QwenReader::new())
}

/// Qwen Code's spellings for event extraction (see [`crate::vocabulary`]): `skill` loads a
/// skill, `exit_plan_mode` presents a plan (`ask_user_question` is in the shared table); its
/// rule files are `QWEN.md` and `AGENTS.md`.
static VOCABULARY: Vocabulary = Vocabulary {
    actions: &[
        ("skill", ToolAction::Skill),
        ("exit_plan_mode", ToolAction::ExitPlan),
    ],
    rule_files: &["QWEN.md", "AGENTS.md"],
    ..Vocabulary::NONE
};
