//! Factory Droid's entry in the registry ([`crate::AgentAdapter`]).

use super::paths::Locations;
use crate::env::Env;
use crate::model::{Agent, LineReader};
use crate::registry::{AgentAdapter, Names, Quirks, module_capabilities, stdin_hook};
use crate::vocabulary::Vocabulary;
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// Factory Droid (`droid`).
pub struct Droid;

/// Its names; the short name is also its hook argument (`memtrail hook droid`).
pub const NAMES: Names = Names::new("droid", &["factory-droid", "factory"], "Factory Droid");

impl AgentAdapter for Droid {
    fn names(&self) -> Names {
        NAMES
    }
    fn vocabulary(&self) -> &'static Vocabulary {
        &VOCABULARY
    }
    /// Claude Code's MCP tool names (`mcp__<server>__<tool>`), which Droid's Claude-identical
    /// hooks reference uses for MCP tools (not seen with a real Droid).
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
        crate::registry::claude_shaped_session_start(session_id, cwd)
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
        Agent::Droid
    }
    module_capabilities!();
    #[cfg(test)]
    fn expected(&self) -> crate::registry::Expected {
        crate::registry::Expected {
            fixture: "droid/sessions/-home-user-demo/4d7e2a91-6c3b-4f58-9e1a-b2c4d6e8f013.jsonl",
            session_id: "4d7e2a91-6c3b-4f58-9e1a-b2c4d6e8f013",
            transcripts_per_event: 1,
            search_tool: "mcp__memtrail__search",
        }
    }
}

fn new_reader() -> Box<dyn LineReader> {
    Box::new(super::DroidReader::new())
}

/// Droid's spellings for event extraction (see [`crate::vocabulary`]): its tools carry Claude
/// Code's names where they have one (`Read`, `Edit`, `Grep`, `Glob`, `LS`, `Task`, `TodoWrite`,
/// in the shared table); the reader maps `Execute` and `Create` itself. Its rule file is
/// `AGENTS.md`.
static VOCABULARY: Vocabulary = Vocabulary {
    rule_files: &["AGENTS.md"],
    ..Vocabulary::NONE
};
