//! VS Code Copilot's entry in the registry ([`crate::AgentAdapter`]).

use crate::env::Env;
use crate::model::Agent;
use crate::registry::{AgentAdapter, Names, Quirks, module_capabilities, stdin_hook};
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
}
