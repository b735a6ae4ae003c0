//! VS Code Copilot's entry in the registry ([`crate::AgentAdapter`]).

use crate::env::Env;
use crate::model::Agent;
use crate::registry::{AgentAdapter, Names, Quirks, module_capabilities, stdin_hook};
use crate::vocabulary::{ToolAction, Vocabulary};
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// VS Code Copilot.
pub struct Vscode;

/// Its names; the short name is also its hook argument (`memtrail hook vscode`).
pub const NAMES: Names = Names::new("vscode", &["copilot", "vs-code"], "VS Code Copilot");

impl AgentAdapter for Vscode {
    fn names(&self) -> Names {
        NAMES
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        super::paths::Locations::resolve(env).detect_dirs
    }
    fn quirks(&self) -> Quirks {
        Quirks::NONE
    }
    fn discover(&self) -> std::io::Result<Discovery> {
        let (files, unreadable) = super::discover_with_errors()?;
        Ok(Discovery { files, unreadable })
    }
    fn vocabulary(&self) -> &'static Vocabulary {
        &VOCABULARY
    }
    fn tool_name(&self, tool: &str) -> String {
        format!("mcp_memtrail_{tool}")
    }
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value {
        serde_json::json!({
            "sessionId": session_id, "hookEventName": "SessionStart", "cwd": cwd,
            "source": "new",
        })
    }
    fn source_for(&self, path: &Path) -> Option<Source> {
        Some(super::source_for(path))
    }
    stdin_hook!();
    fn agent(&self) -> Agent {
        Agent::Vscode
    }
    module_capabilities!();
    #[cfg(test)]
    fn expected(&self) -> crate::registry::Expected {
        crate::registry::Expected {
            fixture: "vscode/chat-session-journal.jsonl",
            session_id: "chat-session-journal",
            transcripts_per_event: 1,
            search_tool: "mcp_memtrail_search",
        }
    }
}

/// VS Code's spellings for event extraction (see [`crate::vocabulary`]).
static VOCABULARY: Vocabulary = Vocabulary {
    tool_prefixes: &["copilot_"],
    tools: &[
        ("readfile", "read"),
        ("readnotebookcellsoutput", "read"),
        ("replacestring", "edit"),
        ("replacestringinfile", "edit"),
        ("multireplacestringinfile", "edit"),
        ("applypatch", "edit"),
        ("insertedit", "edit"),
        ("inserteditintofile", "edit"),
        ("editfile", "edit"),
        ("editnotebook", "edit"),
        ("createfile", "write"),
        ("runinterminal", "shell"),
        ("runterminalcommand", "shell"),
        ("managetodolist", "todo"),
        ("runsubagent", "subagent"),
        ("fetchwebpage", "web_fetch"),
    ],
    actions: &[
        ("vscode_askquestions", ToolAction::AskUser),
        ("askquestions", ToolAction::AskUser),
    ],
    rule_files: &["copilot-instructions.md", "AGENTS.md"],
    rule_suffixes: &[(".instructions.md", "")],
    ..Vocabulary::NONE
};
