//! What memtrail registers in Factory Droid's config, in Droid's dialect (Claude Code's hook
//! schema).
//!
//! Sources: `docs/agents/droid.md#what-memtrail-registers`: Factory's hooks reference (hooks in
//! `~/.factory/settings.json`, `{"hooks":{"<Event>":[{"matcher"?,"hooks":[{"type":"command",
//! "command","timeout"}]}]}}`, timeouts in seconds) and MCP page (`droid mcp add`, stdio
//! servers in `~/.factory/mcp.json`).
//!
//! Three things, in `~/.factory`:
//!
//! - **Hooks** in `settings.json` → `"hooks"`: for each event of [`HOOKS`], one group without a
//!   matcher `{"hooks":[{"type":"command","command":"<binary> hook droid","timeout":N}]}`.
//! - **An MCP server** in `mcp.json` → `"mcpServers"` → `"memtrail"`:
//!   `{"type":"stdio","command":"<binary>","args":["mcp"]}`.
//! - **A skill** at `skills/memtrail/SKILL.md` (the generic skill).

use super::paths::Locations;
use crate::shell::{is_memtrail_program, shell_quote};
use crate::spec::*;
use serde_json::{Value, json};
use std::path::Path;

/// Droid's executable, looked up on `PATH` to detect an installation.
pub const EXECUTABLE: &str = "droid";

/// The `<agent>` argument of `memtrail hook <agent>`.
pub const HOOK_AGENT_ARG: &str = super::adapter::NAMES.name;

/// The events memtrail registers with their timeouts in seconds: SessionStart (context),
/// Stop and SubagentStop (capture), PreCompact (snapshot), SessionEnd (capture at the end).
pub const HOOKS: [(&str, u64); 5] = [
    ("SessionStart", 30),
    ("Stop", 30),
    ("SubagentStop", 30),
    ("PreCompact", 30),
    ("SessionEnd", 5),
];

/// The key holding hooks (top level) and a group's handlers.
pub const HOOKS_KEY: &str = "hooks";
/// The key of `mcp.json` holding servers, and memtrail's server name.
pub const MCP_SERVERS_KEY: &str = "mcpServers";
/// memtrail's MCP server name.
pub const MCP_SERVER_NAME: &str = "memtrail";

/// The skill (from `skills/agents/memtrail/SKILL.md`).
pub const SKILL_MD: &str = include_str!("../../../../skills/agents/memtrail/SKILL.md");

/// `{"type":"command","command":"<binary> hook droid","timeout":N}`; `None` when the path is not
/// UTF-8.
pub fn hook_handler(binary: &Path, timeout_secs: u64) -> Option<Value> {
    let command = format!("{} hook {HOOK_AGENT_ARG}", shell_quote(binary.to_str()?));
    Some(json!({ "type": "command", "command": command, "timeout": timeout_secs }))
}

/// True when `handler` is memtrail's Droid handler (a binary named `memtrail`, arguments
/// exactly `hook droid`).
pub fn is_memtrail_hook_handler(handler: &Value) -> bool {
    crate::registration::command_program_and_args(handler, false)
        .is_some_and(|(p, a)| is_memtrail_program(&p) && a == ["hook", HOOK_AGENT_ARG])
}

fn hook_handler_program(handler: &Value) -> Option<String> {
    crate::registration::command_program_and_args(handler, false).map(|(p, _)| p)
}

/// memtrail's MCP entry: `{"type":"stdio","command":"<binary>","args":["mcp"]}`.
pub fn mcp_server_entry(binary: &Path) -> Option<Value> {
    Some(json!({ "type": "stdio", "command": binary.to_str()?, "args": ["mcp"] }))
}

/// Factory Droid: `docs/agents/droid.md#what-memtrail-registers`.
pub(crate) fn spec(ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
    let (env, binary) = (ctx.env, ctx.binary);
    let loc = Locations::resolve(env);
    let bad = || SpecError::BadBinary(binary.to_path_buf());
    let fns = HandlerFns {
        is_ours: is_memtrail_hook_handler,
        points_at: hook_handler_program,
        canonical: crate::registration::canonical_command_handler,
    };
    let mut hooks = Vec::new();
    for (event, timeout) in HOOKS {
        let handler = hook_handler(binary, timeout).ok_or_else(bad)?;
        hooks.push(handler_item(
            event,
            strings(&[HOOKS_KEY, event]),
            Some(HOOKS_KEY),
            json!({ HOOKS_KEY: [handler.clone()] }),
            handler,
            &["timeout"],
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
            json_file(&loc.settings, hooks),
            json_file(&loc.mcp, vec![mcp]),
            skill_file(&loc.skill, SKILL_MD, crate::registration::is_memtrail_skill),
        ],
        config_dirs: vec![loc.config_dir],
        executables: vec![EXECUTABLE.to_string()],
        // Droid installs a standalone binary (not from npm): no version is read.
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
            json!({"type": "command", "command": "'/opt/mem trail/memtrail' hook droid",
                   "timeout": 30})
        );
        assert!(is_memtrail_hook_handler(&h));
        assert!(!is_memtrail_hook_handler(
            &json!({"type": "command", "command": "/x/memtrail hook claude"})
        ));
        let l = Locations::resolve(&Env::sandbox(Path::new("/h")));
        assert_eq!(l.settings, Path::new("/h/.factory/settings.json"));
        assert_eq!(l.mcp, Path::new("/h/.factory/mcp.json"));
        assert_eq!(l.sessions, Path::new("/h/.factory/sessions"));
        assert_eq!(l.skill, Path::new("/h/.factory/skills/memtrail/SKILL.md"));
    }
}
