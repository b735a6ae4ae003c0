//! What memtrail registers in Codex CLI's config, in Codex's own dialect.
//!
//! Sources: `../shared/reference/agent-specs.md` §2.1 (`CODEX_HOME`), §2.2 (MCP), §2.3
//! (`notify`), §2.4 (hooks and their trust), §2.6 (skills), checked against upstream
//! `openai/codex`: `codex-rs/config/src/hook_config.rs` (`hooks.json` is
//! `{"hooks":{"<Event>":[{"matcher"?,"hooks":[{"type":"command","command",…}]}]}}`, parsed as
//! strict JSON; a handler needs `"type"`), `codex-rs/hooks/src/engine/discovery.rs` (trust is
//! per handler, keyed `<hooks.json path>:<event label>:<group>:<handler>` in
//! `[hooks.state."<key>"]` of the user `config.toml`, and holds a hash of the handler: a changed
//! command is untrusted again) and `codex-rs/hooks/src/legacy_notify.rs` (`notify` runs its argv
//! plus one JSON argument, whatever the trust).
//!
//! Four things:
//!
//! - **`notify`** in `$CODEX_HOME/config.toml`: `["<binary>", "hook", "codex"]`. A user's own
//!   `notify` is kept working: it becomes `["<binary>", "hook", "codex", "--then", <theirs>…]`
//!   (the runtime runs it, see [`super::split_notify_args`]), and uninstall puts their line
//!   back byte for byte.
//! - **An MCP server** `[mcp_servers.memtrail]` with `command = "<binary>"`, `args = ["mcp"]`.
//! - **Hooks** in `$CODEX_HOME/hooks.json` (Claude Code's shape): SessionStart (context after
//!   compaction), PreCompact (snapshot), Stop (capture). Codex runs them only once the user
//!   trusts them in `/hooks`; until then `notify` captures.
//! - **A skill** at `$CODEX_HOME/skills/memtrail/SKILL.md` (Codex reads it there as well as in
//!   `~/.agents/skills`; checked with codex 0.171.0 `debug prompt-input`). Not in
//!   `~/.agents/skills`: Gemini CLI reads that folder too, after its own, and a skill of the
//!   same name there overrides Gemini's own skill (gemini 0.61.0 `skills list`). An older
//!   install's skill in `~/.agents/skills` ([`Locations::legacy_skill`]) is removed.

use crate::shell::{is_memtrail_program, shell_quote};
use serde_json::{Value, json};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Codex's executable, looked up on `PATH` (detection, `codex --version`).
pub const EXECUTABLE: &str = "codex";

/// The `<agent>` argument of `memtrail hook <agent>`.
pub const HOOK_AGENT_ARG: &str = "codex";

/// The `config.toml` key of the turn-complete program.
pub const NOTIFY_KEY: &str = "notify";

/// The `config.toml` table holding MCP servers, and memtrail's server name.
pub const MCP_SERVERS_KEY: &str = "mcp_servers";
/// memtrail's MCP server name.
pub const MCP_SERVER_NAME: &str = "memtrail";

/// One hook event, with its timeout in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookSpec {
    /// The event name as `hooks.json` spells it.
    pub event: &'static str,
    /// The label Codex uses for it in trust keys.
    pub label: &'static str,
    /// Timeout in seconds.
    pub timeout_secs: u64,
}

/// SessionStart (context, after compaction), PreCompact (snapshot), Stop (capture).
pub const HOOKS: [HookSpec; 3] = [
    HookSpec {
        event: "SessionStart",
        label: "session_start",
        timeout_secs: 30,
    },
    HookSpec {
        event: "PreCompact",
        label: "pre_compact",
        timeout_secs: 30,
    },
    HookSpec {
        event: "Stop",
        label: "stop",
        timeout_secs: 30,
    },
];

/// The key of `hooks.json` holding events, and of a group holding its handlers.
pub const HOOKS_KEY: &str = "hooks";

/// Handler keys written only when missing.
pub const HANDLER_SOFT_KEYS: [&str; 1] = ["timeout"];

/// What to tell the user about hook trust.
pub const HOW_TO_TRUST: &str = "open /hooks in Codex and trust memtrail's hooks (until then \
                                memtrail captures through `notify` only)";

/// The skill (from `skills/agents/memtrail/SKILL.md`).
pub const SKILL_MD: &str = include_str!("../../../../skills/agents/memtrail/SKILL.md");

/// Where Codex keeps the files memtrail edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// `$CODEX_HOME` (non-empty; relative to the current directory when relative), else
    /// `~/.codex`.
    pub config_dir: PathBuf,
    /// `<home>/config.toml`.
    pub config_toml: PathBuf,
    /// `<home>/hooks.json`.
    pub hooks_json: PathBuf,
    /// `<home>/skills/memtrail/SKILL.md`.
    pub skill: PathBuf,
    /// `~/.agents/skills/memtrail/SKILL.md`, where memtrail put the skill before: removed.
    pub legacy_skill: PathBuf,
}

impl Locations {
    /// The locations for a home directory and an environment lookup (the same answers as
    /// [`super::config_toml_path`], [`super::hooks_json_path`], [`super::skill_path`]).
    pub fn resolve_with(home: &Path, var: &dyn Fn(&str) -> Option<OsString>) -> Locations {
        let config_dir = match var("CODEX_HOME").filter(|v| !v.is_empty()) {
            Some(v) => {
                let p = PathBuf::from(v);
                if p.is_absolute() {
                    p
                } else {
                    std::env::current_dir().map(|d| d.join(&p)).unwrap_or(p)
                }
            }
            None => home.join(".codex"),
        };
        Locations {
            config_toml: config_dir.join("config.toml"),
            hooks_json: config_dir.join("hooks.json"),
            skill: config_dir.join("skills").join("memtrail").join("SKILL.md"),
            legacy_skill: home
                .join(".agents")
                .join("skills")
                .join("memtrail")
                .join("SKILL.md"),
            config_dir,
        }
    }
}

/// memtrail's `notify` argv: `["<binary>", "hook", "codex"]` (no shell: the path as is).
pub fn notify_argv(binary: &Path) -> Option<Vec<String>> {
    Some(vec![
        binary.to_str()?.to_string(),
        "hook".into(),
        HOOK_AGENT_ARG.into(),
    ])
}

/// True when a `notify` argv is memtrail's (any binary named `memtrail`), chained or not.
pub fn is_memtrail_notify(argv: &[String]) -> bool {
    argv.len() >= 3
        && is_memtrail_program(&argv[0])
        && argv[1] == "hook"
        && argv[2] == HOOK_AGENT_ARG
        && (argv.len() == 3 || argv[3] == super::NOTIFY_CHAIN_FLAG)
}

/// `<binary, shell-quoted if needed> hook codex`; `None` when the path is not UTF-8.
pub fn hook_command(binary: &Path) -> Option<String> {
    Some(format!(
        "{} hook {HOOK_AGENT_ARG}",
        shell_quote(binary.to_str()?)
    ))
}

/// One handler: `{"type":"command","command":"<binary> hook codex","timeout":N}`.
pub fn hook_handler(binary: &Path, timeout_secs: u64) -> Option<Value> {
    Some(json!({ "type": "command", "command": hook_command(binary)?, "timeout": timeout_secs }))
}

/// One group without a `matcher` holding memtrail's handler.
pub fn hook_group(binary: &Path, timeout_secs: u64) -> Option<Value> {
    Some(json!({ HOOKS_KEY: [hook_handler(binary, timeout_secs)?] }))
}

fn program_and_args(handler: &Value) -> Option<(String, Vec<String>)> {
    crate::registration::command_program_and_args(handler, false)
}

/// True when `handler` is memtrail's Codex hook handler.
pub fn is_memtrail_hook_handler(handler: &Value) -> bool {
    program_and_args(handler)
        .is_some_and(|(p, a)| is_memtrail_program(&p) && a == ["hook", HOOK_AGENT_ARG])
}

/// The binary a handler runs.
pub fn hook_handler_program(handler: &Value) -> Option<String> {
    program_and_args(handler).map(|(p, _)| p)
}

/// `handler` with its command written the way [`hook_command`] writes it.
pub fn canonical_hook_handler(handler: &Value) -> Value {
    crate::registration::canonical_command_handler(handler)
}

/// The label Codex uses in trust keys for an event memtrail registers.
pub fn event_label(event: &str) -> Option<&'static str> {
    HOOKS.iter().find(|h| h.event == event).map(|h| h.label)
}

/// True when `text` is memtrail's skill (any version).
pub fn is_memtrail_skill(text: &str) -> bool {
    crate::registration::is_memtrail_skill(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notify_and_handlers() {
        let argv = notify_argv(Path::new("/opt/m t/memtrail")).unwrap();
        assert!(is_memtrail_notify(&argv));
        let mut chained = argv.clone();
        chained.extend(["--then".into(), "notify-send".into()]);
        assert!(is_memtrail_notify(&chained));
        let s = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(!is_memtrail_notify(&s(&["notify-send", "hook", "codex"])));
        assert!(!is_memtrail_notify(&s(&["/x/memtrail", "hook", "claude"])));
        assert!(!is_memtrail_notify(&s(&[
            "/x/memtrail",
            "hook",
            "codex",
            "x"
        ])));
        let h = hook_handler(Path::new("/usr/bin/memtrail"), 30).unwrap();
        assert!(is_memtrail_hook_handler(&h));
        assert_eq!(event_label("PreCompact"), Some("pre_compact"));
        let l = Locations::resolve_with(Path::new("/h"), &|k| {
            (k == "CODEX_HOME").then(|| OsString::from("/c"))
        });
        assert_eq!(l.config_toml, Path::new("/c/config.toml"));
        assert_eq!(l.skill, Path::new("/c/skills/memtrail/SKILL.md"));
        assert_eq!(
            l.legacy_skill,
            Path::new("/h/.agents/skills/memtrail/SKILL.md")
        );
    }
}
