//! Cursor's entry in the registry ([`crate::AgentAdapter`]).

use crate::env::Env;
use crate::model::Agent;
use crate::registry::{AgentAdapter, Names, Quirks, module_capabilities, stdin_hook};
use crate::vocabulary::Vocabulary;
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// Cursor.
pub struct Cursor;

/// Its names; the short name is also its hook argument (`memtrail hook cursor`).
pub const NAMES: Names = Names::new("cursor", &[], "Cursor");

/// The environment variables this adapter reads ([`Quirks::environment`]).
const ENVIRONMENT: &[(&str, &str)] = &[
    ("CURSOR_CONFIG_DIR", "Cursor's folder [default: ~/.cursor]."),
    (
        "CURSOR_VERSION",
        "Set in Cursor's hooks: tells a Cursor hook from Claude Code's.",
    ),
    (
        "CURSOR_PROJECT_DIR",
        "Cursor's project folder, when its hook payload lacks it.",
    ),
    (
        "CURSOR_TRANSCRIPT_PATH",
        "Cursor's transcript, when its hook payload lacks it.",
    ),
];

impl AgentAdapter for Cursor {
    fn names(&self) -> Names {
        NAMES
    }
    fn vocabulary(&self) -> &'static Vocabulary {
        &VOCABULARY
    }
    fn tool_name(&self, tool: &str) -> String {
        tool.to_string()
    }
    fn source_for(&self, path: &Path) -> Option<Source> {
        Some(super::source_for(path))
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        vec![super::paths::Locations::resolve(env).config_dir]
    }
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value {
        serde_json::json!({
            "conversation_id": session_id, "generation_id": "doctor",
            "hook_event_name": "sessionStart", "workspace_roots": [cwd], "transcript_path": null,
        })
    }
    stdin_hook!();
    fn discover(&self) -> std::io::Result<Discovery> {
        let (files, unreadable) = super::discover_with_errors()?;
        Ok(Discovery { files, unreadable })
    }
    fn quirks(&self) -> Quirks {
        Quirks {
            project_among: Some(super::project_among),
            environment: ENVIRONMENT,
            ..Quirks::NONE
        }
    }
    fn agent(&self) -> Agent {
        Agent::Cursor
    }
    module_capabilities!();
    #[cfg(test)]
    fn expected(&self) -> crate::registry::Expected {
        crate::registry::Expected {
            fixture: "cursor/grow-turn1.jsonl",
            session_id: "grow-turn1",
            transcripts_per_event: 1,
            search_tool: "search",
        }
    }
}

/// Cursor's spellings for event extraction (see [`crate::vocabulary`]).
static VOCABULARY: Vocabulary = Vocabulary {
    tools: &[
        ("delete", "delete"),
        ("deletefile", "delete"),
        ("editfile", "edit"),
    ],
    rule_files: &[".cursorrules", "AGENTS.md"],
    rule_folders: &[".cursor/rules/"],
    rule_suffixes: &[(".mdc", "/rules/")],
    ..Vocabulary::NONE
};
