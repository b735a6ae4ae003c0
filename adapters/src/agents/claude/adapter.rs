//! Claude Code's entry in the registry ([`crate::AgentAdapter`]).

use super::registration::Locations;
use crate::env::Env;
use crate::model::{Agent, HookEvent, LineReader, SessionRef};
use crate::registry::{AgentAdapter, Database, ProjectAmong, TranscriptRetention};
use crate::spec::{AgentSpec, SpecContext, SpecError};
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// Claude Code.
pub struct Claude;

impl AgentAdapter for Claude {
    fn agent(&self) -> Agent {
        Agent::Claude
    }
    fn name(&self) -> &'static str {
        "claude"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["claude-code", "claudecode"]
    }
    fn display_name(&self) -> &'static str {
        "Claude Code"
    }
    fn docs_file(&self) -> &'static str {
        "docs/agents/claude.md"
    }
    fn fixtures_dir(&self) -> &'static str {
        "fixtures/claude"
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        vec![Locations::resolve(env).config_dir]
    }
    fn discover(&self) -> std::io::Result<Discovery> {
        let (files, unreadable) = super::discover_with_errors(&super::projects_dir())?;
        Ok(Discovery { files, unreadable })
    }
    fn source_for(&self, _path: &Path) -> Option<Source> {
        Some(Source::Lines(Box::new(super::ClaudeReader::new())))
    }
    fn transcript_reader(&self) -> Option<Box<dyn LineReader>> {
        Some(Box::new(super::ClaudeReader::new()))
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
        Some(super::transcript_retention(&super::settings_path()))
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
        Some(super::session_start_reply(context))
    }
    fn replies_at_pre_compact(&self) -> bool {
        false
    }
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value {
        serde_json::json!({
            "session_id": session_id, "cwd": cwd, "hook_event_name": "SessionStart",
            "source": "startup",
        })
    }
    fn registration(&self, ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
        super::registration::spec(ctx)
    }
    fn tool_name(&self, tool: &str) -> String {
        format!("mcp__memtrail__{tool}")
    }
}
