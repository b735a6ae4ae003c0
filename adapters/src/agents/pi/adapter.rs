//! pi's entry in the registry ([`crate::AgentAdapter`]).

use super::paths::Locations;
use crate::env::Env;
use crate::model::{Agent, LineReader};
use crate::registry::{AgentAdapter, Names, Quirks, module_capabilities, stdin_hook};
use crate::vocabulary::Vocabulary;
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// pi, the coding agent of `@mariozechner/pi-coding-agent`.
pub struct Pi;

/// Its names; the short name is also its hook argument (`memtrail hook pi`).
pub const NAMES: Names = Names::new("pi", &["pi-coding-agent", "pi-agent"], "pi");

impl AgentAdapter for Pi {
    fn names(&self) -> Names {
        NAMES
    }
    fn vocabulary(&self) -> &'static Vocabulary {
        &VOCABULARY
    }
    /// memtrail's extension registers each MCP tool as the pi tool `memtrail_<tool>`.
    fn tool_name(&self, tool: &str) -> String {
        format!("memtrail_{tool}")
    }
    fn source_for(&self, path: &Path) -> Option<Source> {
        super::source_for(path)
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        vec![Locations::resolve(env).agent_dir]
    }
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value {
        serde_json::json!({
            "hook_event_name": "SessionStart", "pi_event": "session_start",
            "session_id": session_id, "cwd": cwd, "source": "startup",
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
        Agent::Pi
    }
    module_capabilities!();
    #[cfg(test)]
    fn expected(&self) -> crate::registry::Expected {
        crate::registry::Expected {
            fixture: "pi/sessions/--home-user-demo--/2026-11-30T09-12-03-481Z_019ad0c2-7e41-7a3b-9c5d-2f8e6a1b4c07.jsonl",
            session_id: "019ad0c2-7e41-7a3b-9c5d-2f8e6a1b4c07",
            transcripts_per_event: 1,
            search_tool: "memtrail_search",
        }
    }
}

fn new_reader() -> Box<dyn LineReader> {
    Box::new(super::PiReader::new())
}

/// pi's rule files for event extraction (see [`crate::vocabulary`]): it loads `AGENTS.md` (and
/// `CLAUDE.md`) from the working folder and its parents, and `SYSTEM.md` replaces its system
/// prompt. Its tools `bash`, `read`, `edit`, `write`, `grep` and `ls` are in the shared table
/// (`find`, files by glob, keeps its name).
static VOCABULARY: Vocabulary = Vocabulary {
    rule_files: &["AGENTS.md", "CLAUDE.md", "SYSTEM.md"],
    ..Vocabulary::NONE
};
