//! Gemini CLI's entry in the registry ([`crate::AgentAdapter`]).

use super::registration::Locations;
use crate::env::Env;
use crate::model::{Agent, HookEvent, LineReader, SessionRef};
use crate::registry::{AgentAdapter, Database, ProjectAmong, TranscriptRetention};
use crate::spec::{AgentSpec, SpecContext, SpecError};
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// Gemini CLI.
pub struct Gemini;

impl AgentAdapter for Gemini {
    fn agent(&self) -> Agent {
        Agent::Gemini
    }
    fn name(&self) -> &'static str {
        "gemini"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["gemini-cli"]
    }
    fn display_name(&self) -> &'static str {
        "Gemini CLI"
    }
    fn docs_file(&self) -> &'static str {
        "docs/agents/gemini.md"
    }
    fn fixtures_dir(&self) -> &'static str {
        "fixtures/gemini"
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        vec![Locations::resolve(env).config_dir]
    }
    fn discover(&self) -> std::io::Result<Discovery> {
        Ok(Discovery {
            files: super::discover()?,
            unreadable: Vec::new(),
        })
    }
    fn source_for(&self, path: &Path) -> Option<Source> {
        super::source_for(path)
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
        Some(super::project_among)
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
            "session_id": session_id, "cwd": cwd, "hook_event_name": "SessionStart",
            "source": "startup",
        })
    }
    fn registration(&self, ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
        super::registration::spec(ctx)
    }
    fn tool_name(&self, tool: &str) -> String {
        format!("mcp_memtrail_{tool}")
    }
}
