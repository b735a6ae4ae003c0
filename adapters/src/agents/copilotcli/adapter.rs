//! GitHub Copilot CLI's entry in the registry ([`crate::AgentAdapter`]).

use super::paths::Locations;
use crate::env::Env;
use crate::model::{Agent, LineReader};
use crate::registry::{AgentAdapter, Names, Quirks, module_capabilities, stdin_hook};
use crate::vocabulary::{ToolAction, Vocabulary};
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// GitHub Copilot CLI.
pub struct Copilotcli;

/// Its names; the short name is also its hook argument (`memtrail hook copilotcli`). `copilot`
/// alone is VS Code Copilot's alias.
pub const NAMES: Names = Names::new(
    "copilotcli",
    &["copilot-cli", "github-copilot-cli"],
    "GitHub Copilot CLI",
);

impl AgentAdapter for Copilotcli {
    fn names(&self) -> Names {
        NAMES
    }
    fn vocabulary(&self) -> &'static Vocabulary {
        &VOCABULARY
    }
    fn tool_name(&self, tool: &str) -> String {
        format!("memtrail-{tool}")
    }
    fn source_for(&self, path: &Path) -> Option<Source> {
        super::source_for(path)
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        vec![Locations::resolve(env).config_dir]
    }
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value {
        serde_json::json!({
            "sessionId": session_id, "timestamp": 0, "cwd": cwd, "source": "new",
        })
    }
    stdin_hook!();
    fn discover(&self) -> std::io::Result<Discovery> {
        super::discover()
    }
    fn quirks(&self) -> Quirks {
        Quirks {
            transcript_reader: Some(new_reader),
            ..Quirks::NONE
        }
    }
    fn agent(&self) -> Agent {
        Agent::Copilotcli
    }
    module_capabilities!();
}

fn new_reader() -> Box<dyn LineReader> {
    Box::new(super::CopilotReader::new())
}

/// Copilot CLI's spellings for event extraction (see [`crate::vocabulary`]): `ask_user` asks a
/// question; `skill` loads a skill. (`create`, which writes a new file, is mapped to `write` by
/// the reader itself: a bare `create` in the shared table would misname other agents' tools.)
static VOCABULARY: Vocabulary = Vocabulary {
    actions: &[
        ("ask_user", ToolAction::AskUser),
        ("skill", ToolAction::Skill),
    ],
    rule_files: &["copilot-instructions.md", "AGENTS.md"],
    rule_folders: &[".github/instructions/"],
    ..Vocabulary::NONE
};
