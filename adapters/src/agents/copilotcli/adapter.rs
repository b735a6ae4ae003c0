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

/// The environment variables this adapter reads ([`Quirks::environment`]).
const ENVIRONMENT: &[(&str, &str)] = &[(
    "COPILOT_HOME",
    "GitHub Copilot CLI's folder [default: ~/.copilot].",
)];

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
            written_after_session_end: Some(is_final_line),
            environment: ENVIRONMENT,
            ..Quirks::NONE
        }
    }
    fn agent(&self) -> Agent {
        Agent::Copilotcli
    }
    module_capabilities!();
    #[cfg(test)]
    fn expected(&self) -> crate::registry::Expected {
        crate::registry::Expected {
            fixture: "copilotcli/session-state/5b0c3e7a-91d4-4f2e-b8a6-2c7d9e1f4a30/events.jsonl",
            session_id: "5b0c3e7a-91d4-4f2e-b8a6-2c7d9e1f4a30",
            transcripts_per_event: 1,
            search_tool: "memtrail-search",
        }
    }
}

/// Whether `line` (one line of `events.jsonl`) is the session's last record: Copilot appends
/// `{"type":"session.shutdown",…}` when the process ends, after its last hooks ran.
fn is_final_line(line: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Typed<'a> {
        #[serde(borrow, rename = "type")]
        kind: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Typed<'_>>(line)
        .is_ok_and(|t| t.kind.as_deref() == Some("session.shutdown"))
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

#[cfg(test)]
mod tests {
    use super::is_final_line;

    #[test]
    fn only_the_shutdown_record_is_final() {
        assert!(is_final_line(
            br#"{"type":"session.shutdown","data":{"shutdownType":"routine"},"id":"x"}"#
        ));
        assert!(!is_final_line(
            br#"{"type":"hook.end","data":{"hookType":"sessionEnd"}}"#
        ));
        assert!(!is_final_line(br#"{"data":{"type":"session.shutdown"}}"#));
        // A line cut short while Copilot writes it is not the end.
        assert!(!is_final_line(br#"{"type":"session.shutdown","data":{"#));
        assert!(!is_final_line(b""));
    }
}
