//! Gemini CLI's entry in the registry ([`crate::AgentAdapter`]).

use super::paths::Locations;
use crate::env::Env;
use crate::model::Agent;
use crate::registry::{
    AgentAdapter, Names, Quirks, claude_shaped_session_start, module_capabilities, stdin_hook,
};
use crate::vocabulary::{ToolAction, Vocabulary};
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// Gemini CLI.
pub struct Gemini;

/// Its names; the short name is also its hook argument (`memtrail hook gemini`).
pub const NAMES: Names = Names::new("gemini", &["gemini-cli"], "Gemini CLI");

/// The environment variables this adapter reads ([`Quirks::environment`]).
const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "GEMINI_CLI_HOME",
        "Gemini CLI's home, holding .gemini [default: ~].",
    ),
    (
        "GEMINI_SESSION_ID",
        "Gemini CLI's session, when its hook payload lacks it.",
    ),
    (
        "GEMINI_CWD",
        "Gemini CLI's working folder, when its hook payload lacks it.",
    ),
    (
        "GEMINI_PROJECT_DIR",
        "Gemini CLI's project folder, when its hook payload lacks it.",
    ),
];

impl AgentAdapter for Gemini {
    fn names(&self) -> Names {
        NAMES
    }
    fn discover(&self) -> std::io::Result<Discovery> {
        Ok(super::discover()?.into())
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        vec![Locations::resolve(env).config_dir]
    }
    fn vocabulary(&self) -> &'static Vocabulary {
        &VOCABULARY
    }
    fn tool_name(&self, tool: &str) -> String {
        format!("mcp_memtrail_{tool}")
    }
    fn quirks(&self) -> Quirks {
        Quirks {
            project_among: Some(super::project_among),
            environment: ENVIRONMENT,
            ..Quirks::NONE
        }
    }
    fn source_for(&self, path: &Path) -> Option<Source> {
        super::source_for(path)
    }
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value {
        claude_shaped_session_start(session_id, cwd)
    }
    stdin_hook!();
    fn agent(&self) -> Agent {
        Agent::Gemini
    }
    module_capabilities!();
    #[cfg(test)]
    fn expected(&self) -> crate::registry::Expected {
        crate::registry::Expected {
            fixture: "gemini/home/.gemini/tmp/project/chats/session-2026-03-15T11-02-7e6d5c4b.jsonl",
            session_id: "7e6d5c4b-3a29-4817-8f6e-5d4c3b2a1908",
            transcripts_per_event: 1,
            search_tool: "mcp_memtrail_search",
        }
    }
}

/// Gemini CLI's spellings for event extraction (see [`crate::vocabulary`]).
static VOCABULARY: Vocabulary = Vocabulary {
    tools: &[
        ("readmanyfiles", "read"),
        ("writefile", "write"),
        ("writetodos", "todo"),
        ("webfetch", "web_fetch"),
    ],
    actions: &[
        ("ask_user", ToolAction::AskUser),
        ("activate_skill", ToolAction::Skill),
        ("enter_plan_mode", ToolAction::EnterPlan),
        ("exit_plan_mode", ToolAction::ExitPlan),
    ],
    rule_files: &["GEMINI.md"],
    // Gemini CLI's web_fetch takes the URLs inside its prompt.
    url_prompt_fields: &["prompt"],
    ..Vocabulary::NONE
};
