//! OpenCode's entry in the registry ([`crate::AgentAdapter`]).

use super::paths::Locations;
use crate::env::Env;
use crate::model::Agent;
use crate::registry::{AgentAdapter, Database, Names, Quirks, module_capabilities, stdin_hook};
use crate::vocabulary::Vocabulary;
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// OpenCode.
pub struct Opencode;

/// Its names; the short name is also its hook argument (`memtrail hook opencode`).
pub const NAMES: Names = Names::new("opencode", &[], "OpenCode");

impl AgentAdapter for Opencode {
    fn names(&self) -> Names {
        NAMES
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        let loc = Locations::resolve(env);
        vec![loc.config_dir, loc.data_dir]
    }
    fn source_for(&self, path: &Path) -> Option<Source> {
        match super::source_kind(path) {
            super::SourceKind::Database => Some(Source::Database),
            _ => super::source_for(path),
        }
    }
    fn quirks(&self) -> Quirks {
        Quirks {
            database: Some(Database {
                read: |path, session, since| match session {
                    Some(s) => super::read_db_session(path, s, since),
                    None => super::read_db(path, since),
                },
                sessions: super::db_session_ids,
                sqlite: true,
            }),
            replies_at_pre_compact: true,
            ..Quirks::NONE
        }
    }
    stdin_hook!();
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value {
        serde_json::json!({
            "hook_event_name": "session.start", "session_id": session_id, "cwd": cwd,
        })
    }
    fn discover(&self) -> std::io::Result<Discovery> {
        Ok(super::discover()?.into())
    }
    fn vocabulary(&self) -> &'static Vocabulary {
        &VOCABULARY
    }
    fn tool_name(&self, tool: &str) -> String {
        format!("memtrail_{tool}")
    }
    fn agent(&self) -> Agent {
        Agent::Opencode
    }
    module_capabilities!();
    #[cfg(test)]
    fn expected(&self) -> crate::registry::Expected {
        crate::registry::Expected {
            fixture: "opencode/storage/session/9d8c7b6a5f4e3d2c1b0a99887766554433221100/ses_2f1e0c9a3ffeKq7Lm2Np4Rs6Tu.json",
            session_id: "ses_2f1e0c9a3ffeKq7Lm2Np4Rs6Tu",
            transcripts_per_event: 1,
            search_tool: "memtrail_search",
        }
    }
}

/// OpenCode's spellings for event extraction (see [`crate::vocabulary`]).
static VOCABULARY: Vocabulary = Vocabulary {
    tools: &[
        ("patch", "edit"),
        ("todowrite", "todo"),
        ("webfetch", "web_fetch"),
    ],
    rule_files: &["AGENTS.md"],
    ..Vocabulary::NONE
};
