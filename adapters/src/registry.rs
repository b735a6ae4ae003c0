//! The agent registry: one [`AgentAdapter`] per coding agent, and [`Agent::adapter`], the one
//! place that maps an [`Agent`] to it.
//!
//! Everything memtrail knows about one agent is reached through its adapter: where it keeps its
//! config and transcripts, how to read them, what its hooks send and what they answer, what
//! memtrail registers in its config, the names its model sees memtrail's MCP tools under, and
//! its quirks (transcript retention, a reply at PreCompact). Install, import, status, doctor,
//! the hook and the MCP server read from here; nothing outside this crate branches on an agent.
//! The agent lists in help texts and MCP tool arguments are built from [`Agent::ALL`]
//! ([`agent_names`]); those in the README, `docs/json.md` and the skill are typed by hand and
//! checked against the registry by a test (`hand_typed_agent_lists_name_every_agent`).
//! `docs/adding-an-agent.md` is the checklist for a new one.
//!
//! Why a trait (and not a struct of function pointers): every method is required (no default
//! bodies), so an agent that lacks a capability does not compile, and each method carries its
//! contract in one place. What only some agents have (a database, a chained `notify`, a
//! transcript retention, …) is data, [`Quirks`], that each adapter states (`..Quirks::NONE` for
//! the rest). The methods take `&self`, so the registry hands out `&'static dyn AgentAdapter`
//! (no allocation, no generic code in callers).

use crate::env::Env;
use crate::model::{Agent, HookEvent, LineReader, SessionRef};
use crate::spec::{AgentSpec, SpecContext, SpecError};
use crate::{DbBatch, Discovery, Source};
use std::path::{Path, PathBuf};

/// An agent's own database holding many sessions (OpenCode's `opencode.db`).
#[derive(Debug, Clone, Copy)]
pub struct Database {
    /// Read what changed since the watermark `since` (ms since the epoch, the rows'
    /// `time_updated`) for one session or (`None`) every session.
    pub read: fn(&Path, Option<&str>, i64) -> Result<DbBatch, crate::Error>,
    /// The ids of every session in the database.
    pub sessions: fn(&Path) -> Result<Vec<String>, crate::Error>,
    /// The database is an SQLite file of the agent's own (OpenCode's `opencode.db`, Goose's
    /// `sessions.db`, Crush's `crush.db`), opened read-only: the one place outside memtrail's
    /// store modules where SQL is allowed, in the adapter's folder `adapters/src/agents/<name>/`
    /// (runtime's `no_sql_outside` test). `false`: a folder of JSON files read as one
    /// (Cline's, Continue's).
    pub sqlite: bool,
}

/// How long an agent keeps its transcripts before deleting them itself (Claude Code's
/// `cleanupPeriodDays`), for `memtrail status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptRetention {
    /// The settings file the period is read from.
    pub settings: PathBuf,
    /// The setting's name in that file (`cleanupPeriodDays`).
    pub setting: &'static str,
    /// The period in days: the file's value, else the agent's default.
    pub days: u64,
    /// Whether `days` came from the settings file.
    pub from_settings: bool,
}

/// Finds a transcript's project among `known` project folders (of stored sessions): the folder
/// its path names, or `None` when none or several match.
pub type ProjectAmong = fn(&Path, &[String]) -> Option<String>;

/// The command a hook's arguments chain after memtrail's (Codex `notify`: `--then <theirs>…`),
/// or `None`.
pub type ChainedCommand = fn(&[String]) -> Option<Vec<String>>;

/// An agent's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Names {
    /// The short name used on the command line, in hook commands, in the store and in the
    /// agent's page `docs/agents/<name>.md` and fixtures `fixtures/<name>/` (`claude`).
    pub name: &'static str,
    /// Other spellings `--agent` accepts, lower case (`claude-code`).
    pub aliases: &'static [&'static str],
    /// The product name shown to people (`Claude Code`).
    pub display: &'static str,
}

impl Names {
    /// An agent's short name, its other spellings and its product name.
    pub const fn new(
        name: &'static str,
        aliases: &'static [&'static str],
        display: &'static str,
    ) -> Names {
        Names {
            name,
            aliases,
            display,
        }
    }
}

/// A hook invocation as the agent made it.
#[derive(Clone, Copy)]
pub struct HookInput<'a> {
    /// The payload read from stdin (empty when the payload is an argument).
    pub stdin: &'a [u8],
    /// The arguments after `memtrail hook <agent>` (Codex `notify` passes its JSON last).
    pub args: &'a [String],
    /// The hook process's environment (caller detection: which program ran a Claude-format
    /// hook).
    pub env: &'a Env,
}

/// What only some agents have. Each adapter states its own; [`Quirks::NONE`] is an agent with
/// none of them.
#[derive(Clone, Copy)]
pub struct Quirks {
    /// A fresh line reader for the agent's JSONL transcripts (for readers that take any line
    /// reader: continuity fixtures, benchmarks).
    pub transcript_reader: Option<fn() -> Box<dyn LineReader>>,
    /// The agent's own database of sessions (it keeps no transcripts in files).
    pub database: Option<Database>,
    /// For a transcript whose reader found no project folder: the one among stored sessions'
    /// folders that its path names.
    pub project_among: Option<ProjectAmong>,
    /// How long the agent keeps transcripts before it deletes them (process environment).
    pub transcript_retention: Option<fn() -> TranscriptRetention>,
    /// A command the agent's config ran before memtrail took its place and that memtrail keeps
    /// running with the same arguments (Codex's `notify`), from the hook's arguments.
    pub chained_command: Option<ChainedCommand>,
    /// The agent takes context from the PreCompact hook's reply (OpenCode's plugin puts it
    /// into the compaction prompt); others get it at SessionStart after compaction.
    pub replies_at_pre_compact: bool,
    /// The agent has no hook or plugin memtrail can use: its sessions come in by `memtrail
    /// import` only, and its registration writes no hook (Continue, Crush, Aider, Roo Code).
    pub import_only: bool,
    /// The agent keeps its transcripts in the projects themselves (Aider's
    /// `.aider.chat.history.md`): `memtrail import` also looks in the project folders of the
    /// sessions it already stores (absolute paths), through this.
    pub discover_in_projects: Option<fn(&[String]) -> Discovery>,
    /// The agent finishes writing a session's transcript only after the hooks that end it have
    /// run (GitHub Copilot CLI writes `events.jsonl` asynchronously, at times whole at
    /// shutdown, after its `agentStop` and `sessionEnd` hooks). At such a session's end the
    /// hook leaves a detached `memtrail hook-settle` that waits for the transcript to settle
    /// and ingests it. The function says, from the transcript's last line (without its `\n`),
    /// whether the agent has written the session's final record.
    pub written_after_session_end: Option<fn(&[u8]) -> bool>,
    /// The agent runs its hooks without waiting for them and may write a task's files after
    /// its `Stop` hook read them (Cline CLI 3.x logs "hooks.detached_runtime"; once in 29 runs
    /// of its end-to-end test, a task's final answer was written while the hook that ends the
    /// task was reading the file, and waited for the next `import`). At a `Stop`
    /// the hook then also leaves a detached `memtrail hook-settle` for each of the session's
    /// files, which waits for it to be unchanged for 2 s and reads it again.
    pub written_after_stop: bool,
    /// The environment variables the adapter reads, as `(name, what it does)`: one sentence,
    /// the default in brackets (`("CODEX_HOME", "Codex CLI's folder [default: ~/.codex].")`).
    /// `memtrail --help`'s "Environment" section, `memtrail config env` and README list them
    /// under "Agents' folders", in [`Agent::ALL`]'s order (`src/environment.rs`, whose test
    /// fails on a variable read by name and listed nowhere). Variables several agents read
    /// (`VSCODE_PORTABLE`, `APPDATA`, `PWD`) are listed there instead.
    pub environment: &'static [(&'static str, &'static str)],
    /// The agent has no MCP client (Aider): memtrail's tools never reach its model, so a
    /// handoff to it names the shell commands only.
    pub no_mcp_client: bool,
}

impl Quirks {
    /// No quirk at all.
    pub const NONE: Quirks = Quirks {
        transcript_reader: None,
        database: None,
        project_among: None,
        transcript_retention: None,
        chained_command: None,
        replies_at_pre_compact: false,
        import_only: false,
        discover_in_projects: None,
        written_after_session_end: None,
        written_after_stop: false,
        environment: &[],
        no_mcp_client: false,
    };
}

/// Everything memtrail knows about one coding agent. Implemented once per agent, in
/// `adapters/src/agents/<agent>/adapter.rs`; [`module_capabilities!`] writes the methods that
/// every agent's module spells alike.
pub trait AgentAdapter: Sync {
    /// The agent this adapter is for.
    fn agent(&self) -> Agent;
    /// Its names.
    fn names(&self) -> Names;
    /// What only some agents have.
    fn quirks(&self) -> Quirks;

    /// The agent's config folders in `env`, as install, status and doctor resolve them: one of
    /// them existing means the agent is installed (detection; the registration's
    /// `executables` on `PATH` are the other sign).
    fn config_dirs(&self, env: &Env) -> Vec<PathBuf>;

    /// Every transcript of the agent on this machine, for `memtrail import`.
    ///
    /// Errors: the agent's transcript folder exists but cannot be listed.
    fn discover(&self) -> std::io::Result<Discovery>;
    /// How to read `path`, a transcript of this agent; `None` when memtrail cannot read it.
    fn source_for(&self, path: &Path) -> Option<Source>;
    /// Which session the transcript at `path` belongs to.
    ///
    /// Errors: the file cannot be read (for formats that keep the session id inside it), or it
    /// holds many sessions (`ErrorKind::InvalidInput`).
    fn identify(&self, path: &Path) -> std::io::Result<SessionRef>;

    /// Parse a hook invocation: the payload from stdin, or (Codex `notify`) the JSON in the last
    /// argument.
    ///
    /// Errors: why the payload was not understood.
    fn parse_hook(&self, hook: HookInput<'_>) -> Result<HookEvent, crate::Error>;
    /// The transcript files a hook event should ingest.
    fn transcripts_for_event(&self, ev: &HookEvent) -> Vec<PathBuf>;
    /// What to print at SessionStart to put `context` into the agent's context, in its dialect.
    /// Every agent takes context at SessionStart, so a non-blank `context` gives `Some` (the
    /// registry test asserts it); `None` is "print nothing" (OpenCode, for a blank `context`).
    fn session_start_reply(&self, context: &str) -> Option<String>;
    /// A SessionStart payload shaped like the agent's own, with session id `session_id` and
    /// working folder `cwd` (for `memtrail doctor`).
    fn synthetic_session_start(&self, session_id: &str, cwd: &Path) -> serde_json::Value;

    /// What memtrail registers in the agent's config (hooks, MCP server, skill, plugin), for
    /// the memtrail binary at `ctx.binary`, in the installer's declarative model.
    ///
    /// Errors: the binary path cannot be written into the agent's config (not UTF-8).
    fn registration(&self, ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError>;
    /// The name under which the agent shows memtrail's MCP tool `tool` to its model
    /// (`mcp__memtrail__search` for Claude Code).
    fn tool_name(&self, tool: &str) -> String;
    /// The agent's tool names, ask-user tools and rule files, for event extraction
    /// ([`crate::vocabulary`]).
    fn vocabulary(&self) -> &'static crate::vocabulary::Vocabulary;

    /// What the registry's tests expect of this adapter on its fixtures (test builds only):
    /// stated in the agent's folder, so that a new agent adds no row to a shared table.
    #[cfg(test)]
    fn expected(&self) -> Expected;
}

/// What the registry's tests expect of one adapter ([`AgentAdapter::expected`]), typed by hand
/// in its `adapter.rs`.
#[cfg(test)]
pub struct Expected {
    /// One of its fixture transcripts, relative to `fixtures/`.
    pub fixture: &'static str,
    /// The session id [`AgentAdapter::identify`] finds in it; empty: a database of many
    /// sessions (never identified as one); ending in `*`: the prefix of an id made from the
    /// file's absolute path (Aider's).
    pub session_id: &'static str,
    /// How many transcripts a hook event naming the fixture ingests (Claude Code's and Qwen
    /// Code's add their sub-agent's).
    pub transcripts_per_event: usize,
    /// The name under which the agent shows memtrail's MCP tool `search` to its model
    /// ([`AgentAdapter::tool_name`]).
    pub search_tool: &'static str,
}

/// The [`AgentAdapter`] methods that every agent's module spells alike: `identify`,
/// `transcripts_for_event`, `session_start_reply` and `registration::spec` of the module the
/// adapter is in. An agent whose module lacks one does not compile.
macro_rules! module_capabilities {
    () => {
        fn session_start_reply(&self, context: &str) -> Option<String> {
            super::session_start_reply(context)
        }
        fn identify(&self, path: &std::path::Path) -> std::io::Result<crate::SessionRef> {
            super::identify(path)
        }
        fn transcripts_for_event(&self, ev: &crate::HookEvent) -> Vec<std::path::PathBuf> {
            super::transcripts_for_event(ev)
        }
        fn registration(
            &self,
            ctx: &crate::spec::SpecContext<'_>,
        ) -> Result<crate::spec::AgentSpec, crate::spec::SpecError> {
            super::registration::spec(ctx)
        }
    };
}
pub(crate) use module_capabilities;

/// [`AgentAdapter::parse_hook`] for an agent whose hooks send their payload on stdin: its
/// module's `parse_hook_payload(stdin, env)`.
macro_rules! stdin_hook {
    () => {
        fn parse_hook(
            &self,
            hook: crate::registry::HookInput<'_>,
        ) -> Result<crate::HookEvent, crate::Error> {
            super::parse_hook_payload(hook.stdin, hook.env)
        }
    };
}
pub(crate) use stdin_hook;

/// The SessionStart payload of the agents that use Claude Code's hook shape (Claude Code, Codex
/// `hooks.json`, Gemini CLI): `{"session_id", "cwd", "hook_event_name": "SessionStart",
/// "source": "startup"}`.
pub fn claude_shaped_session_start(session_id: &str, cwd: &Path) -> serde_json::Value {
    serde_json::json!({
        "session_id": session_id, "cwd": cwd, "hook_event_name": "SessionStart",
        "source": "startup",
    })
}

/// A hook's stdin as a JSON object (a UTF-8 byte-order mark skipped).
///
/// Errors: [`crate::Error::EmptyPayload`] (nothing but whitespace),
/// [`crate::Error::PayloadNotJson`], [`crate::Error::PayloadNotObject`].
pub fn payload_object(bytes: &[u8]) -> Result<serde_json::Value, crate::Error> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(crate::Error::EmptyPayload);
    }
    match serde_json::from_slice(bytes) {
        Ok(v @ serde_json::Value::Object(_)) => Ok(v),
        Ok(_) => Err(crate::Error::PayloadNotObject),
        Err(e) => Err(crate::Error::PayloadNotJson(e)),
    }
}

impl Agent {
    /// This agent's adapter. The one exhaustive `match` on agents outside the agents' own
    /// folders: a new [`Agent`] variant does not compile until it has an adapter here.
    pub fn adapter(self) -> &'static dyn AgentAdapter {
        use crate::agents::*;
        match self {
            Agent::Claude => &claude::adapter::Claude,
            Agent::Codex => &codex::adapter::Codex,
            Agent::Gemini => &gemini::adapter::Gemini,
            Agent::Cursor => &cursor::adapter::Cursor,
            Agent::Vscode => &vscode::adapter::Vscode,
            Agent::Opencode => &opencode::adapter::Opencode,
            Agent::Copilotcli => &copilotcli::adapter::Copilotcli,
            Agent::Qwen => &qwen::adapter::Qwen,
            Agent::Pi => &pi::adapter::Pi,
            Agent::Droid => &droid::adapter::Droid,
            Agent::Continue => &continuedev::adapter::Continue,
            Agent::Goose => &goose::adapter::Goose,
            Agent::Crush => &crush::adapter::Crush,
            Agent::Aider => &aider::adapter::Aider,
            Agent::Cline => &cline::adapter::Cline,
            Agent::Roo => &roo::adapter::Roo,
        }
    }
}

/// Every agent's short name ([`AgentAdapter::name`]) in [`Agent::ALL`]'s order, joined by `sep`:
/// `claude, codex, gemini, cursor, vscode, opencode` (for help texts, errors and MCP texts).
pub fn agent_names(sep: &str) -> String {
    Agent::ALL.map(Agent::as_str).join(sep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::canonical_event;
    use std::collections::BTreeSet;

    /// Every [`Agent`] variant, typed by hand. The exhaustive `match` makes a new variant fail to
    /// compile here until it is named, and [`registry_lists_every_agent_once`] fails until the
    /// `vec!` lists it too (it compares with [`Agent::ALL`], which the `agents!` macro in
    /// `model.rs` declares from the same list as the enum, so `ALL` cannot miss a variant).
    fn every_variant() -> Vec<Agent> {
        use Agent::*;
        let all = vec![
            Claude, Codex, Gemini, Cursor, Vscode, Opencode, Copilotcli, Qwen, Pi, Droid, Continue,
            Goose, Crush, Aider, Cline, Roo,
        ];
        for a in &all {
            match a {
                Claude | Codex | Gemini | Cursor | Vscode | Opencode | Copilotcli | Qwen | Pi
                | Droid | Continue | Goose | Crush | Aider | Cline | Roo => {}
            }
        }
        all
    }

    fn repo_root() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
    }

    #[test]
    fn registry_lists_every_agent_once() {
        let listed: BTreeSet<&str> = Agent::ALL.iter().map(|a| a.as_str()).collect();
        assert_eq!(listed.len(), Agent::ALL.len(), "an agent is listed twice");
        let variants: BTreeSet<&str> = every_variant().iter().map(|a| a.as_str()).collect();
        assert_eq!(listed, variants);
        assert_eq!(crate::supported_agents(), &Agent::ALL[..]);
        assert_eq!(
            agent_names(", "),
            "claude, codex, gemini, cursor, vscode, opencode, copilotcli, qwen, pi, droid, continue, goose, crush, aider, cline, roo"
        );
        for a in Agent::ALL {
            assert_eq!(
                a.adapter().agent(),
                a,
                "{a}'s registry entry is another agent's"
            );
        }
    }

    /// Every adapter has every capability: names that parse back, its page and fixtures in the
    /// repository, paths inside the home it is given, a registration with files, a hook parser
    /// that reads its own synthetic SessionStart, a reply dialect and MCP tool names.
    #[test]
    fn every_adapter_is_complete() {
        let home = Path::new("/sandbox/home");
        let env = Env::sandbox(home);
        let binary = Path::new("/opt/memtrail/bin/memtrail");
        let no_env = Env::sandbox(home);
        for a in Agent::ALL {
            let ad = a.adapter();
            let name = ad.names().name;
            assert!(
                !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase()),
                "{name}"
            );
            assert_eq!(name.parse::<Agent>(), Ok(a));
            assert_eq!(serde_json::to_value(a).unwrap(), name, "serde name");
            for alias in ad.names().aliases {
                assert_eq!(alias.parse::<Agent>(), Ok(a), "{alias}");
            }
            assert!(!ad.names().display.is_empty(), "{name}: display name");

            let page = repo_root().join(format!("docs/agents/{name}.md"));
            assert!(page.is_file(), "{name}: no page {}", page.display());
            let fixtures = repo_root().join(format!("fixtures/{name}"));
            assert!(
                std::fs::read_dir(&fixtures).is_ok_and(|mut d| d.next().is_some()),
                "{name}: no fixtures in {}",
                fixtures.display()
            );

            let dirs = ad.config_dirs(&env);
            assert!(!dirs.is_empty(), "{name}: no config folder");
            assert!(dirs.iter().all(|d| d.starts_with(home)), "{name}: {dirs:?}");

            let ctx = SpecContext {
                env: &env,
                binary,
                read_jsonc: |_| None,
            };
            let spec = ad.registration(&ctx).expect("registration");
            // Aider has no hooks, no MCP client and no skills: nothing to register.
            assert!(
                !spec.files.is_empty() || a == Agent::Aider,
                "{name}: registers nothing"
            );
            assert!(
                spec.files.iter().all(|f| f.path.starts_with(home)),
                "{name}: a file outside the home"
            );
            assert_eq!(
                spec.config_dirs, dirs,
                "{name}: install and detection disagree"
            );
            assert!(!spec.executables.is_empty(), "{name}: no executable");

            let payload = ad
                .synthetic_session_start("doctor-test", Path::new("/work/p"))
                .to_string();
            let hook = |stdin| HookInput {
                stdin,
                args: &[],
                env: &no_env,
            };
            let ev = ad
                .parse_hook(hook(payload.as_bytes()))
                .unwrap_or_else(|e| panic!("{name}: its own SessionStart: {e}"));
            assert_eq!(ev.agent, a, "{name}");
            assert_eq!(ev.session_id.as_deref(), Some("doctor-test"), "{name}");
            assert_eq!(canonical_event(&ev.event), "SessionStart", "{name}");
            assert!(ad.parse_hook(hook(b"")).is_err(), "{name}");

            let reply = ad.session_start_reply("remember this");
            assert!(
                reply.is_some_and(|r| r.contains("remember this")),
                "{name}: no SessionStart reply"
            );
            let tool = ad.tool_name("search");
            assert!(tool.ends_with("search"), "{name}: {tool}");
        }
    }

    /// Every adapter reads its own fixture ([`AgentAdapter::expected`]): it has a reader for it
    /// ([`AgentAdapter::source_for`]) and finds its session id ([`AgentAdapter::identify`]); a
    /// hook event naming the fixture as its transcript ingests it first
    /// ([`AgentAdapter::transcripts_for_event`]).
    /// ([`AgentAdapter::discover`] reads the process's home, which a unit test cannot move; each
    /// module's discovery is tested on explicit folders in the crate's integration tests.)
    #[test]
    fn every_adapter_reads_its_fixture() {
        for a in Agent::ALL {
            let ad = a.adapter();
            let Expected {
                fixture: file,
                session_id: id,
                transcripts_per_event: count,
                ..
            } = ad.expected();
            let path = repo_root().join("fixtures").join(file);
            assert!(ad.source_for(&path).is_some(), "{a}: no reader for {file}");
            let session = if id.is_empty() {
                // An agent's database of many sessions (Crush's `crush.db`, which has no
                // other format; its reader is tested in the crate's integration tests on
                // databases built from `fixtures/crush/*.sql`): read as a database, never
                // identified as one session, named by a hook with its session id.
                assert!(matches!(
                    ad.source_for(&path),
                    Some(crate::Source::Database)
                ));
                let e = ad.identify(&path).unwrap_err();
                assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{a}: {e}");
                "a-session".to_string()
            } else {
                let sref = ad
                    .identify(&path)
                    .unwrap_or_else(|e| panic!("{a}: {file}: {e}"));
                match id.strip_suffix('*') {
                    // An id made from the file's absolute path (Aider's): its prefix.
                    Some(prefix) => assert!(
                        sref.agent == a && sref.external_id.starts_with(prefix),
                        "{file}: {sref:?}"
                    ),
                    None => {
                        assert_eq!((sref.agent, sref.external_id.as_str()), (a, id), "{file}")
                    }
                }
                sref.external_id
            };
            let ev = HookEvent {
                agent: a,
                event: "Stop".into(),
                session_id: Some(session),
                transcript_path: Some(path.to_string_lossy().into_owned()),
                cwd: None,
                source: None,
                agent_transcript_path: None,
                extra: serde_json::Value::Null,
            };
            let files = ad.transcripts_for_event(&ev);
            assert_eq!(files.first(), Some(&path), "{a}: {files:?}");
            assert_eq!(files.len(), count, "{a}: {files:?}");
        }
    }

    /// `memtrail status` reports one transcript retention (JSON key `claude_retention`, from the
    /// first adapter that declares one): a second agent with a retention must turn that report
    /// into a list first, or status silently ignores it.
    #[test]
    fn at_most_one_agent_declares_a_transcript_retention() {
        let with: Vec<Agent> = Agent::ALL
            .into_iter()
            .filter(|a| a.adapter().quirks().transcript_retention.is_some())
            .collect();
        assert_eq!(
            with,
            [Agent::Claude],
            "status reports one transcript retention (JSON key `claude_retention`); make it a \
             list in src/commands/status.rs and docs/json.md before a second agent declares one"
        );
    }

    /// Every string and argv in what `spec` registers, with the argv's elements joined by spaces.
    fn registered_commands(spec: &AgentSpec) -> Vec<String> {
        fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::String(s) => out.push(s.clone()),
                serde_json::Value::Array(items) => {
                    if items.iter().all(|i| i.is_string()) {
                        let argv: Vec<&str> = items.iter().filter_map(|i| i.as_str()).collect();
                        out.push(argv.join(" "));
                    }
                    items.iter().for_each(|i| walk(i, out));
                }
                serde_json::Value::Object(m) => m.values().for_each(|i| walk(i, out)),
                _ => {}
            }
        }
        use crate::spec::{Body, JsonItem, TomlItem, TomlValue};
        let mut out = Vec::new();
        for f in &spec.files {
            match &f.body {
                Body::Json(items) => {
                    for item in items {
                        match item {
                            JsonItem::Handler(h) => walk(&h.handler, &mut out),
                            JsonItem::Property(p) => walk(&p.value, &mut out),
                        }
                    }
                }
                Body::Whole(w) => out.push(w.content.clone()),
                Body::Toml(items) => {
                    for item in items {
                        match item {
                            TomlItem::Table { keys, .. } => {
                                for (_, v) in keys {
                                    match v {
                                        TomlValue::Str(s) => out.push(s.clone()),
                                        TomlValue::Strings(argv) => out.push(argv.join(" ")),
                                    }
                                }
                            }
                            TomlItem::ChainedArgv { ours, .. } => out.push(ours.join(" ")),
                        }
                    }
                }
                Body::Yaml(items) => {
                    for item in items {
                        for (_, v) in &item.keys {
                            match v {
                                TomlValue::Str(s) => out.push(s.clone()),
                                TomlValue::Strings(argv) => out.push(argv.join(" ")),
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// Every hook memtrail registers for an agent runs `<binary> hook <name>` with the agent's
    /// short name (the `HOOK_AGENT_ARG` of its registration), and a plugin template (OpenCode's)
    /// spawns the binary with `["hook", "<name>"]`: the hook dispatches on that name.
    #[test]
    fn every_registered_hook_names_its_agent() {
        let env = Env::sandbox(Path::new("/sandbox/home"));
        let binary = "/opt/memtrail/bin/memtrail";
        for a in Agent::ALL {
            let name = a.as_str();
            let ctx = SpecContext {
                env: &env,
                binary: Path::new(binary),
                read_jsonc: |_| None,
            };
            let spec = a.adapter().registration(&ctx).unwrap();
            let mut hooks = 0;
            for c in registered_commands(&spec) {
                if c.contains(&format!("{binary} hook")) {
                    assert!(c.ends_with(&format!(" hook {name}")), "{name}: {c}");
                    hooks += 1;
                }
                if c.contains("[\"hook\", ") {
                    assert!(
                        c.contains(&format!("[\"hook\", \"{name}\"]")),
                        "{name}: template"
                    );
                    hooks += 1;
                }
            }
            if a.adapter().quirks().import_only {
                assert_eq!(hooks, 0, "{name}: import only, yet registers a hook");
            } else {
                assert!(hooks > 0, "{name}: registers no hook");
            }
        }
    }

    /// The MCP tool name each agent shows its model (its MCP tool prefix), as its adapter's
    /// [`AgentAdapter::expected`] states it.
    #[test]
    fn tool_names() {
        for a in Agent::ALL {
            let ad = a.adapter();
            assert_eq!(ad.tool_name("search"), ad.expected().search_tool, "{a}");
        }
        assert_eq!(
            Agent::Claude.adapter().tool_name("search"),
            "mcp__memtrail__search"
        );
    }

    /// The agent lists typed by hand in the docs (the README's four, `docs/json.md`'s) name
    /// every agent of the registry, in its order; the shared skill names every agent's MCP tool
    /// name. A new agent fails here until each text names it (the file and line are in the
    /// message). The help texts (`src/cli.rs`) and the MCP tools' `agent` argument
    /// (`runtime/src/mcp.rs`) build their lists from [`Agent::ALL`]; they are scanned too, so
    /// that a list typed there again must be whole.
    #[test]
    fn hand_typed_agent_lists_name_every_agent() {
        let names: Vec<&str> = Agent::ALL.iter().map(|a| a.as_str()).collect();
        let (last, rest) = names.split_last().unwrap();
        let comma = names.join(", ");
        let or = format!("{} or {last}", rest.join(", "));
        let bar = names.join("|");
        let mut lists = 0;
        let ticks: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        let ticks = ticks.join(", ");
        for file in [
            "src/cli.rs",
            "runtime/src/mcp.rs",
            "README.md",
            "docs/json.md",
        ] {
            let text = std::fs::read_to_string(repo_root().join(file)).unwrap();
            for (n, line) in text.lines().enumerate() {
                let at = format!("{file}:{}", n + 1);
                if line.contains("codex, gemini") {
                    assert!(line.contains(&comma) || line.contains(&or), "{at}: {line}");
                    lists += 1;
                }
                if line.contains("claude|codex") {
                    assert!(line.contains(&bar), "{at}: {line}");
                    lists += 1;
                }
                if line.contains("Codex CLI, Gemini CLI") {
                    for a in Agent::ALL {
                        assert!(line.contains(a.display_name()), "{at}: {a}: {line}");
                    }
                    lists += 1;
                }
            }
            // Lists of `name`s in backticks, wrapped over lines (docs/json.md's "Agents are").
            let words: Vec<&str> = text.split_whitespace().collect();
            let words = words.join(" ");
            for (at, _) in words.match_indices("`claude`, `codex`") {
                assert!(
                    words[at..].starts_with(&ticks),
                    "{file}: {}",
                    words[at..].chars().take(ticks.len()).collect::<String>()
                );
                lists += 1;
            }
        }
        assert_eq!(lists, 5, "hand-typed agent lists found");
        let skill =
            std::fs::read_to_string(repo_root().join("skills/agents/memtrail/SKILL.md")).unwrap();
        for a in Agent::ALL {
            let tool = a.adapter().tool_name("search");
            assert!(skill.contains(&format!("`{tool}`")), "{a}: {tool}");
        }
    }
}
