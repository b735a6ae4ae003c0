//! OpenCode's entry in the registry ([`crate::AgentAdapter`]).

use super::registration::Locations;
use crate::env::Env;
use crate::model::{Agent, HookEvent, LineReader, SessionRef};
use crate::registry::{AgentAdapter, Database, ProjectAmong, TranscriptRetention};
use crate::spec::{AgentSpec, SpecContext, SpecError};
use crate::{Discovery, Source};
use std::path::{Path, PathBuf};

/// OpenCode.
pub struct Opencode;

impl AgentAdapter for Opencode {
    fn agent(&self) -> Agent {
        Agent::Opencode
    }
    fn name(&self) -> &'static str {
        "opencode"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    fn display_name(&self) -> &'static str {
        "OpenCode"
    }
    fn docs_file(&self) -> &'static str {
        "docs/agents/opencode.md"
    }
    fn fixtures_dir(&self) -> &'static str {
        "fixtures/opencode"
    }
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf> {
        let loc = Locations::resolve(env);
        vec![loc.config_dir, loc.data_dir]
    }
    fn discover(&self) -> std::io::Result<Discovery> {
        Ok(Discovery {
            files: super::discover()?,
            unreadable: Vec::new(),
        })
    }
    fn source_for(&self, path: &Path) -> Option<Source> {
        match super::source_kind(path) {
            super::SourceKind::Database => Some(Source::Database),
            _ => super::source_for(path),
        }
    }
    fn transcript_reader(&self) -> Option<Box<dyn LineReader>> {
        None
    }
    fn identify(&self, path: &Path) -> std::io::Result<SessionRef> {
        super::identify(path)
    }
    fn database(&self) -> Option<Database> {
        Some(Database {
            read: |path, session, since| match session {
                Some(s) => super::read_db_session(path, s, since),
                None => super::read_db(path, since),
            },
            sessions: super::db_session_ids,
        })
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
        true
    }
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value {
        serde_json::json!({
            "hook_event_name": "session.start", "session_id": session_id, "cwd": cwd,
        })
    }
    fn registration(&self, ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
        super::registration::spec(ctx)
    }
    fn tool_name(&self, tool: &str) -> String {
        format!("memtrail_{tool}")
    }
}
