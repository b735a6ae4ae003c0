//! Codex CLI's entry in the registry ([`crate::AgentAdapter`]).

use super::registration::Locations;
use crate::env::Env;
use crate::model::{Agent, HookEvent, LineReader, SessionRef};
use crate::registry::{AgentAdapter, Database, ProjectAmong, TranscriptRetention};
use crate::spec::{AgentSpec, SpecContext, SpecError};
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// Codex CLI.
pub struct Codex;

impl AgentAdapter for Codex {
    fn agent(&self) -> Agent {
        Agent::Codex
    }
    fn name(&self) -> &'static str {
        "codex"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    fn display_name(&self) -> &'static str {
        "Codex CLI"
    }
    fn docs_file(&self) -> &'static str {
        "docs/agents/codex.md"
    }
    fn fixtures_dir(&self) -> &'static str {
        "fixtures/codex"
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
    fn source_for(&self, _path: &Path) -> Option<Source> {
        Some(Source::Lines(super::transcript_reader()))
    }
    fn transcript_reader(&self) -> Option<Box<dyn LineReader>> {
        Some(super::transcript_reader())
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
        args: &[String],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<HookEvent, crate::Error> {
        // Codex `notify` passes its JSON as the last argument; hooks.json events use stdin.
        match super::split_notify_args(args).1 {
            Some(arg) => super::parse_notify_argv(arg),
            None => super::parse_hook_payload(stdin, env),
        }
    }
    fn chained_command(&self, args: &[String]) -> Option<Vec<String>> {
        super::split_notify_args(args).0
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
        format!("mcp__memtrail__{tool}")
    }
}
