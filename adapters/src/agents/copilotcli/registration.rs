//! What memtrail registers in GitHub Copilot CLI's config, in Copilot CLI's own dialect.
//!
//! Sources: `docs/agents/copilotcli.md#what-memtrail-registers`, checked against Copilot CLI
//! 1.0.102 itself (`copilot help config`, `copilot help environment`, `copilot mcp --help`,
//! `copilot skill --help`, what `copilot mcp add` writes, and hooks observed firing in a
//! sandboxed run) and GitHub's hooks reference (`version: 1`, `type: "command"`, `bash`,
//! `timeoutSec`).
//!
//! Three files, in `<config>` = `$COPILOT_HOME` or `~/.copilot`:
//!
//! - **Hooks** in memtrail's own file `hooks/memtrail.json` (Copilot CLI loads every
//!   `<config>/hooks/*.json`): `"version": 1` and, for each event of [`HOOKS`], the entry
//!   `{"type":"command","bash":"<binary> hook copilotcli","timeoutSec":N}` (seconds).
//! - **An MCP server** in `mcp-config.json` → `"mcpServers"` → `"memtrail"`:
//!   `{"type":"local","command":"<binary>","args":["mcp"],"tools":["*"]}`, the shape
//!   `copilot mcp add` writes. Copilot CLI shows its tools to the model as `memtrail-<tool>`.
//! - **A skill** at `<config>/skills/memtrail/SKILL.md` (the generic skill).

use super::paths::Locations;
use crate::shell::{is_memtrail_program, shell_quote};
use crate::spec::*;
use serde_json::{Value, json};
use std::path::Path;

/// Copilot CLI's executable, looked up on `PATH` to detect an installation.
pub const EXECUTABLE: &str = "copilot";

/// The `<agent>` argument of `memtrail hook <agent>`: the agent's short name.
pub const HOOK_AGENT_ARG: &str = super::adapter::NAMES.name;

/// One hook event memtrail registers, with its timeout in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookSpec {
    /// The event name exactly as Copilot CLI spells it (lowerCamelCase).
    pub event: &'static str,
    /// `timeoutSec`.
    pub timeout_secs: u64,
}

/// sessionStart (context via `additionalContext`), agentStop (capture after each turn; it
/// carries `transcriptPath`), preCompact (snapshot), sessionEnd (capture at the end).
pub const HOOKS: [HookSpec; 4] = [
    HookSpec {
        event: "sessionStart",
        timeout_secs: 30,
    },
    HookSpec {
        event: "agentStop",
        timeout_secs: 30,
    },
    HookSpec {
        event: "preCompact",
        timeout_secs: 30,
    },
    HookSpec {
        event: "sessionEnd",
        timeout_secs: 5,
    },
];

/// The key of a hook file holding the events.
pub const HOOKS_KEY: &str = "hooks";
/// The top-level `version` key a hook file needs, and the value memtrail writes when missing.
pub const VERSION_KEY: &str = "version";
/// The hook file format version (GitHub's hooks reference: version 1).
pub const VERSION: u64 = 1;
/// The key of `mcp-config.json` holding servers.
pub const MCP_SERVERS_KEY: &str = "mcpServers";
/// memtrail's MCP server name (the tools' prefix: `memtrail-search`).
pub const MCP_SERVER_NAME: &str = "memtrail";
/// Hook entry keys written only when missing (a user's longer timeout survives a re-install).
pub const HANDLER_SOFT_KEYS: [&str; 1] = ["timeoutSec"];
/// MCP entry keys written only when missing (a user's tool filter is kept).
pub const MCP_SOFT_KEYS: [&str; 1] = ["tools"];
/// The skill (from `skills/agents/memtrail/SKILL.md`, which names every agent's tool names).
pub const SKILL_MD: &str = include_str!("../../../../skills/agents/memtrail/SKILL.md");

/// `<binary, shell-quoted if needed> hook copilotcli`; `None` when the path is not UTF-8.
pub fn hook_command(binary: &Path) -> Option<String> {
    Some(format!(
        "{} hook {HOOK_AGENT_ARG}",
        shell_quote(binary.to_str()?)
    ))
}

/// One hook entry: `{"type":"command","bash":"<binary> hook copilotcli","timeoutSec":N}`.
pub fn hook_handler(binary: &Path, timeout_secs: u64) -> Option<Value> {
    Some(json!({
        "type": "command",
        "bash": hook_command(binary)?,
        "timeoutSec": timeout_secs,
    }))
}

/// `handler` with its `bash` command under `command` (the key the shared command-handler
/// helpers of [`crate::registration`] read), or `None` when it has no `bash` string.
fn as_command_handler(handler: &Value) -> Option<Value> {
    let mut h = handler.as_object()?.clone();
    let cmd = h.remove("bash")?;
    cmd.is_string().then_some(())?;
    h.insert("command".into(), cmd);
    Some(Value::Object(h))
}

/// The program and arguments of a `type: "command"` entry: its `bash` command split as `sh`
/// would, a wrapper around memtrail's hook seen through. `None` for any other entry.
fn program_and_args(handler: &Value) -> Option<(String, Vec<String>)> {
    crate::registration::command_program_and_args(&as_command_handler(handler)?, false)
}

/// True when `handler` is memtrail's Copilot CLI hook entry (a binary named `memtrail`,
/// arguments exactly `hook copilotcli`).
pub fn is_memtrail_hook_handler(handler: &Value) -> bool {
    program_and_args(handler)
        .is_some_and(|(p, a)| is_memtrail_program(&p) && a == ["hook", HOOK_AGENT_ARG])
}

/// The binary a hook entry runs.
pub fn hook_handler_program(handler: &Value) -> Option<String> {
    program_and_args(handler).map(|(p, _)| p)
}

/// `handler` with its `bash` command re-quoted the way [`hook_command`] writes it (a wrapper
/// removed), so that equivalent spellings compare equal.
pub fn canonical_hook_handler(handler: &Value) -> Value {
    let Some(Value::Object(mut h)) =
        as_command_handler(handler).map(|c| crate::registration::canonical_command_handler(&c))
    else {
        return handler.clone();
    };
    if let Some(cmd) = h.remove("command") {
        h.insert("bash".into(), cmd);
    }
    Value::Object(h)
}

/// memtrail's MCP server entry: `{"type":"local","command":"<binary>","args":["mcp"],
/// "tools":["*"]}`.
pub fn mcp_server_entry(binary: &Path) -> Option<Value> {
    Some(json!({
        "type": "local",
        "command": binary.to_str()?,
        "args": ["mcp"],
        "tools": ["*"],
    }))
}

/// The program an MCP server entry runs.
pub fn mcp_server_program(entry: &Value) -> Option<String> {
    crate::registration::entry_command(entry)
}

/// True when `text` is memtrail's skill (any version).
pub fn is_memtrail_skill(text: &str) -> bool {
    crate::registration::is_memtrail_skill(text)
}

/// GitHub Copilot CLI: `docs/agents/copilotcli.md#what-memtrail-registers` (memtrail's hook
/// file, `mcp-config.json`, the personal skill).
pub(crate) fn spec(ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
    let (env, binary) = (ctx.env, ctx.binary);
    let loc = Locations::resolve(env);
    let bad = || SpecError::BadBinary(binary.to_path_buf());
    let fns = HandlerFns {
        is_ours: is_memtrail_hook_handler,
        points_at: hook_handler_program,
        canonical: canonical_hook_handler,
    };
    let mut hooks = vec![JsonItem::Property(PropertyItem {
        label: "hook file version".to_string(),
        object_path: Vec::new(),
        key: VERSION_KEY.to_string(),
        value: Value::from(VERSION),
        policy: Policy::default(),
        points_at: |_| None,
        shared: true,
        loads: None,
    })];
    for h in HOOKS {
        let handler = hook_handler(binary, h.timeout_secs).ok_or_else(bad)?;
        hooks.push(handler_item(
            h.event,
            strings(&[HOOKS_KEY, h.event]),
            None,
            handler.clone(),
            handler,
            &HANDLER_SOFT_KEYS,
            &fns,
        ));
    }
    let mcp = mcp_item(
        &[MCP_SERVERS_KEY],
        MCP_SERVER_NAME,
        mcp_server_entry(binary).ok_or_else(bad)?,
        &MCP_SOFT_KEYS,
        mcp_server_program,
    );
    Ok(AgentSpec {
        off_switches: Vec::new(),
        files: vec![
            json_file(&loc.hooks, hooks),
            json_file(&loc.mcp, vec![mcp]),
            skill_file(&loc.skill, SKILL_MD, is_memtrail_skill),
        ],
        config_dirs: vec![loc.config_dir],
        executables: vec![EXECUTABLE.to_string()],
        // npm links `copilot` to the package's `npm-loader.js`.
        version: env.version_of(EXECUTABLE, &["@github/copilot"]),
        trust: None,
        advice: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Env;

    #[test]
    fn entries_and_locations() {
        let h = hook_handler(Path::new("/opt/mem trail/memtrail"), 30).unwrap();
        assert_eq!(
            h,
            json!({"type": "command", "bash": "'/opt/mem trail/memtrail' hook copilotcli",
                   "timeoutSec": 30})
        );
        assert!(is_memtrail_hook_handler(&h));
        assert!(is_memtrail_hook_handler(
            &json!({"type": "command", "bash": "nice -n 5 /x/memtrail hook copilotcli"})
        ));
        assert!(!is_memtrail_hook_handler(
            &json!({"type": "command", "bash": "/x/memtrail hook vscode"})
        ));
        assert!(!is_memtrail_hook_handler(
            &json!({"type": "prompt", "bash": "/x/memtrail hook copilotcli"})
        ));
        assert!(!is_memtrail_hook_handler(
            &json!({"type": "command", "command": "/x/memtrail hook copilotcli"})
        ));
        assert_eq!(
            canonical_hook_handler(
                &json!({"type": "command", "bash": "nice \"/a b/memtrail\" hook copilotcli"})
            ),
            json!({"type": "command", "bash": "'/a b/memtrail' hook copilotcli"})
        );
        let l = Locations::resolve(&Env::sandbox(Path::new("/h")));
        assert_eq!(l.hooks, Path::new("/h/.copilot/hooks/memtrail.json"));
        assert_eq!(l.mcp, Path::new("/h/.copilot/mcp-config.json"));
        assert_eq!(l.session_state, Path::new("/h/.copilot/session-state"));
        let l = Locations::resolve(&Env::sandbox(Path::new("/h")).with_var("COPILOT_HOME", "/c"));
        assert_eq!(l.skill, Path::new("/c/skills/memtrail/SKILL.md"));
        let l = Locations::resolve(&Env::sandbox(Path::new("/h")).with_var("COPILOT_HOME", "rel"));
        assert_eq!(
            l.config_dir,
            Path::new("/h/.copilot"),
            "a relative value is ignored"
        );
        assert!(is_memtrail_skill(SKILL_MD));
        assert!(SKILL_MD.contains("`memtrail-search`"));
    }
}
