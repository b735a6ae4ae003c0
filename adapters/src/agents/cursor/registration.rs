//! What memtrail registers in Cursor's config, in Cursor's own dialect.
//!
//! Sources: `docs/agents/cursor.md#what-memtrail-registers` (user `~/.cursor/hooks.json`: top-level
//! `"version": 1`, a flat list of `{command, timeout…}` per event, commands run from
//! `~/.cursor/` without `~` or variable expansion, so the path is absolute),
//! `docs/agents/cursor.md#hooks` (event names), `docs/agents/cursor.md#what-memtrail-registers`
//! (`~/.cursor/mcp.json` → `mcpServers`), `docs/agents/cursor.md#what-memtrail-registers`
//! (`~/.cursor/skills/`); checked against Cursor's hooks page as quoted by third-party installers
//! (entireio/cli probes, robot-council's stop hook notes) — Cursor publishes no source.
//!
//! Three files, in `<config>` = `$CURSOR_CONFIG_DIR` or `~/.cursor` (the folder the adapter
//! reads, [`super::config_dir`]):
//!
//! - **Hooks** in `hooks.json`: `"version": 1` (kept as it is when there; removed by uninstall
//!   only when install added it and nothing else is left) and, for each event of [`HOOKS`], the
//!   entry `{"command":"<binary> hook cursor","timeout":N}` (seconds) appended to its array.
//! - **An MCP server** in `mcp.json` → `"mcpServers"` → `"memtrail"`:
//!   `{"command":"<binary>","args":["mcp"]}`. Cursor may still ask the user to switch it on.
//! - **A skill** at `<config>/skills/memtrail/SKILL.md`.

use super::paths::Locations;
use crate::shell::{is_memtrail_program, shell_quote};
use crate::spec::*;
use serde_json::{Value, json};
use std::path::Path;

/// Cursor's executables, looked up on `PATH` to detect an installation: the editor's `cursor`
/// and the CLI's `cursor-agent`.
pub const EXECUTABLES: [&str; 2] = ["cursor", "cursor-agent"];

/// The `<agent>` argument of `memtrail hook <agent>`: the agent's short name.
pub const HOOK_AGENT_ARG: &str = super::adapter::NAMES.name;

/// One hook event memtrail registers, with its timeout in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookSpec {
    /// The event name exactly as Cursor spells it (lowerCamelCase).
    pub event: &'static str,
    /// Timeout in seconds.
    pub timeout_secs: u64,
}

/// sessionStart (context via `additional_context`), stop (capture after each turn; the CLI
/// does not fire it), preCompact (snapshot), sessionEnd (capture).
pub const HOOKS: [HookSpec; 4] = [
    HookSpec {
        event: "sessionStart",
        timeout_secs: 30,
    },
    HookSpec {
        event: "stop",
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

/// The key of `hooks.json` holding the events.
pub const HOOKS_KEY: &str = "hooks";

/// The top-level `version` key `hooks.json` needs, and its value.
pub const VERSION_KEY: &str = "version";
/// The value of [`VERSION_KEY`] memtrail writes when it is missing.
pub const VERSION: u64 = 1;

/// The key of `mcp.json` holding servers, and memtrail's server name.
pub const MCP_SERVERS_KEY: &str = "mcpServers";
/// memtrail's MCP server name.
pub const MCP_SERVER_NAME: &str = "memtrail";

/// Hook entry keys written only when missing.
pub const HANDLER_SOFT_KEYS: [&str; 1] = ["timeout"];

/// The skill (from `skills/agents/memtrail/SKILL.md`, which names the tools generically).
pub const SKILL_MD: &str = include_str!("../../../../skills/agents/memtrail/SKILL.md");

/// `<binary, shell-quoted if needed> hook cursor`; `None` when the path is not UTF-8.
pub fn hook_command(binary: &Path) -> Option<String> {
    Some(format!(
        "{} hook {HOOK_AGENT_ARG}",
        shell_quote(binary.to_str()?)
    ))
}

/// One hook entry: `{"command":"<binary> hook cursor","timeout":N}`.
pub fn hook_handler(binary: &Path, timeout_secs: u64) -> Option<Value> {
    Some(json!({ "command": hook_command(binary)?, "timeout": timeout_secs }))
}

fn program_and_args(handler: &Value) -> Option<(String, Vec<String>)> {
    crate::registration::command_program_and_args(handler, true)
}

/// True when `handler` is memtrail's Cursor hook entry (a binary named `memtrail`, arguments
/// exactly `hook cursor`).
pub fn is_memtrail_hook_handler(handler: &Value) -> bool {
    program_and_args(handler)
        .is_some_and(|(p, a)| is_memtrail_program(&p) && a == ["hook", HOOK_AGENT_ARG])
}

/// The binary a hook entry runs.
pub fn hook_handler_program(handler: &Value) -> Option<String> {
    program_and_args(handler).map(|(p, _)| p)
}

/// `handler` with its command written the way [`hook_command`] writes it.
pub fn canonical_hook_handler(handler: &Value) -> Value {
    crate::registration::canonical_command_handler(handler)
}

/// memtrail's MCP server entry: `{"command":"<binary>","args":["mcp"]}`.
pub fn mcp_server_entry(binary: &Path) -> Option<Value> {
    Some(json!({ "command": binary.to_str()?, "args": ["mcp"] }))
}

/// The program an MCP server entry runs.
pub fn mcp_server_program(entry: &Value) -> Option<String> {
    crate::registration::entry_command(entry)
}

/// True when `text` is memtrail's skill (any version).
pub fn is_memtrail_skill(text: &str) -> bool {
    crate::registration::is_memtrail_skill(text)
}

/// Cursor: `docs/agents/cursor.md#what-memtrail-registers`/`docs/agents/cursor.md#hooks` (user
/// `hooks.json`: `version: 1`, flat entries per event, absolute commands),
/// `docs/agents/cursor.md#what-memtrail-registers` (`mcp.json`),
/// `docs/agents/cursor.md#what-memtrail-registers` (skill).
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
        label: "hooks.json version".to_string(),
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
        &[],
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
        executables: strings(&EXECUTABLES),
        version: None,
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
        let h = hook_handler(Path::new("/usr/bin/memtrail"), 30).unwrap();
        assert_eq!(
            h,
            json!({"command": "/usr/bin/memtrail hook cursor", "timeout": 30})
        );
        assert!(is_memtrail_hook_handler(&h));
        assert!(!is_memtrail_hook_handler(
            &json!({"type": "prompt", "command": "/usr/bin/memtrail hook cursor"})
        ));
        let l = Locations::resolve(&Env::sandbox(Path::new("/h")));
        assert_eq!(l.hooks, Path::new("/h/.cursor/hooks.json"));
        let l =
            Locations::resolve(&Env::sandbox(Path::new("/h")).with_var("CURSOR_CONFIG_DIR", "/c"));
        assert_eq!(l.mcp, Path::new("/c/mcp.json"));
        assert!(is_memtrail_skill(SKILL_MD));
    }
}
