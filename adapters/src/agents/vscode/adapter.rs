//! VS Code Copilot's entry in the registry ([`crate::AgentAdapter`]).

use super::registration::Locations;
use crate::env::Env;
use crate::model::{Agent, HookEvent, LineReader, SessionRef};
use crate::registry::{AgentAdapter, Database, ProjectAmong, TranscriptRetention};
use crate::spec::{AgentSpec, SpecContext, SpecError};
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// VS Code Copilot.
pub struct Vscode;

impl AgentAdapter for Vscode {
    fn agent(&self) -> Agent {
        Agent::Vscode
    }
    fn name(&self) -> &'static str {
        "vscode"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["copilot", "vs-code"]
    }
    fn display_name(&self) -> &'static str {
        "VS Code Copilot"
    }
    fn docs_file(&self) -> &'static str {
        "docs/agents/vscode.md"
    }
    fn fixtures_dir(&self) -> &'static str {
        "fixtures/vscode"
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        Locations::resolve(env).detect_dirs
    }
    fn discover(&self) -> std::io::Result<Discovery> {
        let (files, unreadable) = super::discover_with_errors()?;
        Ok(Discovery { files, unreadable })
    }
    fn source_for(&self, path: &Path) -> Option<Source> {
        Some(super::source_for(path))
    }
    fn transcript_reader(&self) -> Option<Box<dyn LineReader>> {
        None
    }
    fn identify(&self, path: &Path) -> std::io::Result<SessionRef> {
        super::identify(path)
    }
    fn database(&self) -> Option<Database> {
        None
    }
    fn project_among(&self) -> Option<ProjectAmong> {
        None
    }
    fn transcript_retention(&self) -> Option<TranscriptRetention> {
        None
    }
    fn parse_hook(
        &self,
        stdin: &[u8],
        _args: &[String],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<HookEvent, crate::Error> {
        super::parse_hook_payload(stdin, env)
    }
    fn chained_command(&self, _args: &[String]) -> Option<Vec<String>> {
        None
    }
    fn transcripts_for_event(&self, ev: &HookEvent) -> Vec<PathBuf> {
        super::transcripts_for_event(ev)
    }
    fn session_start_reply(&self, context: &str) -> Option<String> {
        super::session_start_reply(context)
    }
    fn replies_at_pre_compact(&self) -> bool {
        false
    }
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value {
        serde_json::json!({
            "sessionId": session_id, "hookEventName": "SessionStart", "cwd": cwd,
            "source": "new",
        })
    }
    fn registration(&self, ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
        super::registration::spec(ctx)
    }
    fn tool_name(&self, tool: &str) -> String {
        format!("mcp_memtrail_{tool}")
    }
}
