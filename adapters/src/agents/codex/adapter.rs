//! Codex CLI's entry in the registry ([`crate::AgentAdapter`]).

use super::paths::Locations;
use crate::env::Env;
use crate::model::{Agent, HookEvent};
use crate::registry::{
    AgentAdapter, HookInput, Names, Quirks, claude_shaped_session_start, module_capabilities,
};
use crate::vocabulary::{ToolAction, Vocabulary};
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// Codex CLI.
pub struct Codex;

/// Its names; the short name is also its hook argument (`memtrail hook codex`).
pub const NAMES: Names = Names::new("codex", &[], "Codex CLI");

/// The environment variables this adapter reads ([`Quirks::environment`]).
const ENVIRONMENT: &[(&str, &str)] = &[("CODEX_HOME", "Codex CLI's folder [default: ~/.codex].")];

impl AgentAdapter for Codex {
    fn names(&self) -> Names {
        NAMES
    }
    fn source_for(&self, _path: &Path) -> Option<Source> {
        Some(Source::Lines(super::transcript_reader()))
    }
    fn quirks(&self) -> Quirks {
        Quirks {
            transcript_reader: Some(super::transcript_reader),
            chained_command: Some(|args| super::split_notify_args(args).0),
            environment: ENVIRONMENT,
            ..Quirks::NONE
        }
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        vec![Locations::resolve(env).config_dir]
    }
    fn discover(&self) -> std::io::Result<Discovery> {
        Ok(super::discover()?.into())
    }
    fn parse_hook(&self, hook: HookInput<'_>) -> Result<HookEvent, crate::Error> {
        // Codex `notify` passes its JSON as the last argument; hooks.json events use stdin.
        match super::split_notify_args(hook.args).1 {
            Some(arg) => super::parse_notify_argv(arg),
            None => super::parse_hook_payload(hook.stdin, hook.env),
        }
    }
    fn vocabulary(&self) -> &'static Vocabulary {
        &VOCABULARY
    }
    fn tool_name(&self, tool: &str) -> String {
        format!("mcp__memtrail__{tool}")
    }
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value {
        claude_shaped_session_start(session_id, cwd)
    }
    fn agent(&self) -> Agent {
        Agent::Codex
    }
    module_capabilities!();
    #[cfg(test)]
    fn expected(&self) -> crate::registry::Expected {
        crate::registry::Expected {
            fixture: "codex/paginated-turn1.jsonl",
            session_id: "01a0c4b4-ef41-7b8e-a2a5-c37d19f04e6a",
            transcripts_per_event: 1,
            search_tool: "mcp__memtrail__search",
        }
    }
}

/// Codex's spellings for event extraction (see [`crate::vocabulary`]).
static VOCABULARY: Vocabulary = Vocabulary {
    tools: &[("applypatch", "edit")],
    actions: &[("request_user_input", ToolAction::AskUser)],
    rule_files: &["AGENTS.md", "AGENTS.override.md"],
    // Codex normalizes every human denial at its approval prompt to one of these, whole.
    declined_results: &["exec command rejected by user", "patch rejected by user"],
    ..Vocabulary::NONE
};
