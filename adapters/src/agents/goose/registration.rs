//! What memtrail registers for Goose: a plugin of its own, in Goose's Open Plugins layout.
//!
//! Sources: `docs/agents/goose.md#what-memtrail-registers`, checked against block/goose
//! `crates/goose/src/plugins/` (`discovery.rs`: every folder of `~/.agents/plugins` is a
//! plugin, enabled unless a settings file or `config.yaml`'s `plugins` map disables it;
//! `mcp_servers.rs`: the servers of `<plugin>/.mcp.json` `mcpServers`, named
//! `<plugin>:<server>`; `formats/open_plugins.rs`: the manifest is optional, the plugin is then
//! named after its folder) and `crates/goose/src/hooks/mod.rs` (`<plugin>/hooks/hooks.json`:
//! `{"hooks": {"<Event>": [{"matcher"?, "hooks": [{"type": "command", "command", "timeout"}]}]}}`,
//! `timeout` in **seconds**, default 30).
//!
//! Three files in `<plugins>/memtrail/` (`<plugins>` = `~/.agents/plugins`, or
//! `$GOOSE_PATH_ROOT/.agents/plugins`), nothing in Goose's own `config.yaml`:
//!
//! - **Hooks** in `hooks/hooks.json`: [`HOOKS`], each one group `{"hooks": [{"type":
//!   "command", "command": "<binary> hook goose", "timeout": N}]}`.
//! - **An MCP server** in `.mcp.json` → `"mcpServers"` → `"memtrail"`: `{"command":
//!   "<binary>", "args": ["mcp"]}`; Goose shows its tools as `memtrail:memtrail__<tool>`.
//! - **A skill** at `skills/memtrail/SKILL.md` (the generic skill).

pub use super::paths::Locations;
use crate::shell::{is_memtrail_program, shell_quote};
use crate::spec::*;
use serde_json::{Value, json};
use std::path::Path;

/// Goose's executable, looked up on `PATH` to detect an installation.
pub const EXECUTABLE: &str = "goose";

/// The `<agent>` argument of `memtrail hook <agent>`: the agent's short name.
pub const HOOK_AGENT_ARG: &str = super::adapter::NAMES.name;

/// One hook event memtrail registers, with its timeout in **seconds**.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookSpec {
    /// The event name exactly as Goose spells it.
    pub event: &'static str,
    /// Handler timeout in seconds.
    pub timeout_secs: u64,
}

/// Stop (capture after each turn; Goose runs it as a blocking hook, and memtrail prints
/// nothing, which allows) and SessionEnd (capture at the end). No SessionStart: Goose ignores
/// what it prints. No compaction event exists.
pub const HOOKS: [HookSpec; 2] = [
    HookSpec {
        event: "Stop",
        timeout_secs: 30,
    },
    HookSpec {
        event: "SessionEnd",
        timeout_secs: 10,
    },
];

/// The top-level key of `hooks.json`, and the key of a group holding its handlers.
pub const HOOKS_KEY: &str = "hooks";

/// The key of `.mcp.json` holding MCP servers.
pub const MCP_SERVERS_KEY: &str = "mcpServers";

/// The name memtrail's MCP server is registered under in its plugin.
pub const MCP_SERVER_NAME: &str = "memtrail";

/// Handler keys written only when missing (a user's longer timeout survives a re-install).
pub const HANDLER_SOFT_KEYS: [&str; 1] = ["timeout"];

/// The skill (from `skills/agents/memtrail/SKILL.md`, which names every agent's tool names).
pub const SKILL_MD: &str = include_str!("../../../../skills/agents/memtrail/SKILL.md");

/// `<binary, shell-quoted if needed> hook goose`; `None` when the path is not UTF-8.
pub fn hook_command(binary: &Path) -> Option<String> {
    Some(format!(
        "{} hook {HOOK_AGENT_ARG}",
        shell_quote(binary.to_str()?)
    ))
}

/// One handler: `{"type":"command","command":"<binary> hook goose","timeout":N}` (seconds).
pub fn hook_handler(binary: &Path, timeout_secs: u64) -> Option<Value> {
    Some(json!({
        "type": "command",
        "command": hook_command(binary)?,
        "timeout": timeout_secs,
    }))
}

/// True when `handler` is memtrail's Goose hook handler (any binary named `memtrail`,
/// arguments exactly `hook goose`).
pub fn is_memtrail_hook_handler(handler: &Value) -> bool {
    crate::registration::command_program_and_args(handler, false)
        .is_some_and(|(p, a)| is_memtrail_program(&p) && a == ["hook", HOOK_AGENT_ARG])
}

/// The binary a handler runs, for status reports.
pub fn hook_handler_program(handler: &Value) -> Option<String> {
    crate::registration::command_program_and_args(handler, false).map(|(p, _)| p)
}

/// memtrail's MCP server entry: `{"command":"<binary>","args":["mcp"]}`.
pub fn mcp_server_entry(binary: &Path) -> Option<Value> {
    Some(json!({ "command": binary.to_str()?, "args": ["mcp"] }))
}

/// Goose: `docs/agents/goose.md#what-memtrail-registers` (memtrail's plugin folder).
pub(crate) fn spec(ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
    let (env, binary) = (ctx.env, ctx.binary);
    let loc = Locations::resolve(env);
    let bad = || SpecError::BadBinary(binary.to_path_buf());
    let fns = HandlerFns {
        is_ours: is_memtrail_hook_handler,
        points_at: hook_handler_program,
        canonical: crate::registration::canonical_command_handler,
    };
    let mut items = Vec::new();
    for h in HOOKS {
        let handler = hook_handler(binary, h.timeout_secs).ok_or_else(bad)?;
        items.push(handler_item(
            h.event,
            strings(&[HOOKS_KEY, h.event]),
            Some(HOOKS_KEY),
            json!({ HOOKS_KEY: [handler.clone()] }),
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
        crate::registration::entry_command,
    );
    Ok(AgentSpec {
        off_switches: Vec::new(),
        files: vec![
            json_file(&loc.hooks_json, items),
            json_file(&loc.mcp_json, vec![mcp]),
            skill_file(&loc.skill, SKILL_MD, crate::registration::is_memtrail_skill),
        ],
        config_dirs: vec![loc.config_dir, loc.data_dir],
        executables: vec![EXECUTABLE.to_string()],
        // Goose ships as a standalone binary (not npm): its version is not read.
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
    fn handlers_and_locations() {
        let h = hook_handler(Path::new("/opt/mem trail/memtrail"), 30).unwrap();
        assert_eq!(
            h,
            json!({"type": "command", "command": "'/opt/mem trail/memtrail' hook goose",
                   "timeout": 30})
        );
        assert!(is_memtrail_hook_handler(&h));
        assert!(!is_memtrail_hook_handler(
            &json!({"type": "command", "command": "/x/memtrail hook qwen"})
        ));
        let l = Locations::resolve(&Env::sandbox(Path::new("/h")));
        assert_eq!(
            l.database,
            Path::new("/h/.local/share/goose/sessions/sessions.db")
        );
        assert_eq!(
            l.hooks_json,
            Path::new("/h/.agents/plugins/memtrail/hooks/hooks.json")
        );
        assert_eq!(
            l.mcp_json,
            Path::new("/h/.agents/plugins/memtrail/.mcp.json")
        );
        assert_eq!(l.config_dir, Path::new("/h/.config/goose"));
        let l =
            Locations::resolve(&Env::sandbox(Path::new("/h")).with_var("GOOSE_PATH_ROOT", "/g"));
        assert_eq!(l.database, Path::new("/g/data/sessions/sessions.db"));
        assert_eq!(
            l.skill,
            Path::new("/g/.agents/plugins/memtrail/skills/memtrail/SKILL.md")
        );
        let l = Locations::resolve(
            &Env::sandbox(Path::new("/h"))
                .with_var("GOOSE_PATH_ROOT", "rel")
                .with_var("XDG_DATA_HOME", "/d"),
        );
        assert_eq!(l.database, Path::new("/d/goose/sessions/sessions.db"));
        assert!(SKILL_MD.contains("Goose"));
    }
}
