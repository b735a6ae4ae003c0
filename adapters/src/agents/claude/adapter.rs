//! Claude Code's entry in the registry ([`crate::AgentAdapter`]).

use super::paths::Locations;
use crate::env::Env;
use crate::model::Agent;
use crate::registry::{
    AgentAdapter, Names, Quirks, claude_shaped_session_start, module_capabilities, stdin_hook,
};
use crate::vocabulary::{ToolAction, Vocabulary};
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// Claude Code.
pub struct Claude;

/// Its names; the short name is also its hook argument (`memtrail hook claude`).
pub const NAMES: Names = Names::new("claude", &["claude-code", "claudecode"], "Claude Code");

/// The environment variables this adapter reads ([`Quirks::environment`]).
const ENVIRONMENT: &[(&str, &str)] = &[(
    "CLAUDE_CONFIG_DIR",
    "Claude Code's folder [default: ~/.claude].",
)];

impl AgentAdapter for Claude {
    fn names(&self) -> Names {
        NAMES
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        vec![Locations::resolve(env).config_dir]
    }
    fn quirks(&self) -> Quirks {
        Quirks {
            transcript_reader: Some(|| Box::new(super::ClaudeReader::new())),
            transcript_retention: Some(|| super::transcript_retention(&super::settings_path())),
            environment: ENVIRONMENT,
            ..Quirks::NONE
        }
    }
    fn discover(&self) -> std::io::Result<Discovery> {
        let (files, unreadable) = super::discover_with_errors(&super::projects_dir())?;
        Ok(Discovery { files, unreadable })
    }
    fn source_for(&self, _path: &Path) -> Option<Source> {
        Some(Source::Lines(Box::new(super::ClaudeReader::new())))
    }
    stdin_hook!();
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value {
        claude_shaped_session_start(session_id, cwd)
    }
    fn vocabulary(&self) -> &'static Vocabulary {
        &VOCABULARY
    }
    fn tool_name(&self, tool: &str) -> String {
        format!("mcp__memtrail__{tool}")
    }
    fn agent(&self) -> Agent {
        Agent::Claude
    }
    module_capabilities!();
    #[cfg(test)]
    fn expected(&self) -> crate::registry::Expected {
        crate::registry::Expected {
            fixture: "claude/projects/-home-user-demo/3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1e83.jsonl",
            session_id: "3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1e83",
            transcripts_per_event: 2,
            search_tool: "mcp__memtrail__search",
        }
    }
}

/// Claude Code's spellings for event extraction (see [`crate::vocabulary`]).
static VOCABULARY: Vocabulary = Vocabulary {
    tools: &[("todowrite", "todo"), ("webfetch", "web_fetch")],
    actions: &[
        ("askuserquestion", ToolAction::AskUser),
        ("skill", ToolAction::Skill),
        ("enterplanmode", ToolAction::EnterPlan),
        ("exitplanmode", ToolAction::ExitPlan),
        ("taskcreate", ToolAction::CreateTask),
    ],
    rule_files: &["CLAUDE.md", "CLAUDE.local.md"],
    // The results of a call declined at the permission prompt (`is_error: true`).
    declined_results: &[
        "The user doesn't want to proceed with this tool use.",
        "The user doesn't want to take this action right now.",
    ],
    ..Vocabulary::NONE
};
