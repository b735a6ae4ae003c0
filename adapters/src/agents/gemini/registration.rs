//! What memtrail registers in Gemini CLI's config, in Gemini CLI's own dialect.
//!
//! Sources: `docs/agents/gemini.md#paths` (files, `GEMINI_CLI_HOME`),
//! `docs/agents/gemini.md#what-memtrail-registers` (MCP), `docs/agents/gemini.md#hooks` (hooks),
//! checked against upstream `google-gemini/gemini-cli`: `packages/core/src/hooks/hookRegistry.ts`
//! (a definition is `{matcher?, sequential?, hooks: [...]}`, a hook needs `type: "command"` and
//! `command`; its `name`, else its command, is what `hooksConfig.disabled` lists),
//! `packages/core/src/hooks/types.ts` (event names), `packages/core/src/tools/mcp-tool.ts` (MCP
//! tools are exposed as `mcp_<server>_<tool>`, so the server alias has no `_`),
//! `docs/cli/skills.md` (user skills in `~/.gemini/skills/`).
//!
//! Three things, all in `<config>` = `$GEMINI_CLI_HOME/.gemini` (default `~/.gemini`):
//!
//! - **Hooks** in `settings.json` → `"hooks"`: for each event of [`HOOKS`], one definition
//!   `{"hooks":[{"type":"command","command":"<binary> hook gemini","name":"memtrail",
//!   "timeout":N}]}` (no `matcher`: every source). Timeouts are in **milliseconds**.
//! - **An MCP server** in `settings.json` → `"mcpServers"` → `"memtrail"`:
//!   `{"command":"<binary>","args":["mcp"]}`.
//! - **A skill** at `<config>/skills/memtrail/SKILL.md`, content [`SKILL_MD`] (it names the tools
//!   the way Gemini CLI shows them).

pub use super::paths::Locations;
use crate::shell::{is_memtrail_program, shell_quote};
use crate::spec::*;
use serde_json::{Value, json};
use std::path::Path;

/// Gemini CLI's executable, looked up on `PATH` to detect an installation.
pub const EXECUTABLE: &str = "gemini";

/// The `<agent>` argument of `memtrail hook <agent>`: the agent's short name.
pub const HOOK_AGENT_ARG: &str = super::adapter::NAMES.name;

/// The `name` of memtrail's hooks (what `/hooks` shows and `hooksConfig.disabled` lists).
pub const HOOK_NAME: &str = "memtrail";

/// One hook event memtrail registers, with its timeout in **milliseconds**
/// (`docs/agents/gemini.md#hooks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookSpec {
    /// The event name exactly as Gemini CLI spells it.
    pub event: &'static str,
    /// Handler timeout in milliseconds.
    pub timeout_ms: u64,
}

/// The events: SessionStart (context), AfterAgent (capture after each turn), PreCompress
/// (snapshot; advisory), SessionEnd (capture; best effort, the CLI does not wait for it).
pub const HOOKS: [HookSpec; 4] = [
    HookSpec {
        event: "SessionStart",
        timeout_ms: 30_000,
    },
    HookSpec {
        event: "AfterAgent",
        timeout_ms: 30_000,
    },
    HookSpec {
        event: "PreCompress",
        timeout_ms: 30_000,
    },
    HookSpec {
        event: "SessionEnd",
        timeout_ms: 5_000,
    },
];

/// The top-level key of `settings.json` holding hooks, and the key of a definition holding its
/// handlers.
pub const HOOKS_KEY: &str = "hooks";

/// The top-level key of `settings.json` holding MCP servers.
pub const MCP_SERVERS_KEY: &str = "mcpServers";

/// The alias memtrail's MCP server is registered under (no `_`:
/// `docs/agents/gemini.md#what-memtrail-registers`).
pub const MCP_SERVER_NAME: &str = "memtrail";

/// Handler keys written only when missing (a user's longer timeout or another name survives a
/// re-install).
pub const HANDLER_SOFT_KEYS: [&str; 2] = ["timeout", "name"];

/// The skill installed at [`Locations::skill`] (from `skills/gemini/memtrail/SKILL.md`).
pub const SKILL_MD: &str = include_str!("../../../../skills/gemini/memtrail/SKILL.md");

/// `<binary, shell-quoted if needed> hook gemini`; `None` when the path is not UTF-8.
pub fn hook_command(binary: &Path) -> Option<String> {
    Some(format!(
        "{} hook {HOOK_AGENT_ARG}",
        shell_quote(binary.to_str()?)
    ))
}

/// One handler: `{"type":"command","command":"<binary> hook gemini","name":"memtrail",
/// "timeout":N}`.
pub fn hook_handler(binary: &Path, timeout_ms: u64) -> Option<Value> {
    Some(json!({
        "type": "command",
        "command": hook_command(binary)?,
        "name": HOOK_NAME,
        "timeout": timeout_ms,
    }))
}

/// One definition without a `matcher` holding memtrail's handler: `{"hooks":[<handler>]}`.
pub fn hook_group(binary: &Path, timeout_ms: u64) -> Option<Value> {
    Some(json!({ HOOKS_KEY: [hook_handler(binary, timeout_ms)?] }))
}

/// The program and arguments of a `type: "command"` handler (its command split as `sh` would).
fn program_and_args(handler: &Value) -> Option<(String, Vec<String>)> {
    crate::registration::command_program_and_args(handler, false)
}

/// True when `handler` is memtrail's Gemini CLI hook handler (any binary named `memtrail`,
/// arguments exactly `hook gemini`).
pub fn is_memtrail_hook_handler(handler: &Value) -> bool {
    program_and_args(handler)
        .is_some_and(|(p, a)| is_memtrail_program(&p) && a == ["hook", HOOK_AGENT_ARG])
}

/// The binary a handler runs, for status reports.
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

/// True when `text` is memtrail's skill (any version): its front matter names it `memtrail`.
pub fn is_memtrail_skill(text: &str) -> bool {
    crate::registration::is_memtrail_skill(text)
}

/// Gemini CLI: `docs/agents/gemini.md#what-memtrail-registers` (hooks and MCP in the user
/// `settings.json`, timeouts in milliseconds; user skill).
pub(crate) fn spec(ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
    let (env, binary) = (ctx.env, ctx.binary);
    let loc = Locations::resolve(env);
    let bad = || SpecError::BadBinary(binary.to_path_buf());
    let fns = HandlerFns {
        is_ours: is_memtrail_hook_handler,
        points_at: hook_handler_program,
        canonical: canonical_hook_handler,
    };
    let mut items = Vec::new();
    for h in HOOKS {
        items.push(handler_item(
            h.event,
            strings(&[HOOKS_KEY, h.event]),
            Some(HOOKS_KEY),
            hook_group(binary, h.timeout_ms).ok_or_else(bad)?,
            hook_handler(binary, h.timeout_ms).ok_or_else(bad)?,
            &HANDLER_SOFT_KEYS,
            &fns,
        ));
    }
    items.push(mcp_item(
        &[MCP_SERVERS_KEY],
        MCP_SERVER_NAME,
        mcp_server_entry(binary).ok_or_else(bad)?,
        &[],
        mcp_server_program,
    ));
    // Gemini CLI's own switches in settings.json (its settings schema: `hooksConfig.enabled`,
    // default true; `hooksConfig.disabled`, hook names; `mcp.excluded`, server names).
    let off = |path: &[&str], when: OffWhen, covers: OffCovers, reason: &str| OffSwitch {
        file: loc.settings.clone(),
        path: strings(path),
        when,
        covers,
        reason: reason.to_string(),
    };
    Ok(AgentSpec {
        off_switches: vec![
            off(
                &["hooksConfig", "enabled"],
                OffWhen::Is(false),
                OffCovers::Hooks,
                "switched off: settings.json has \"hooksConfig\": {\"enabled\": false} (Gemini CLI runs no hook)",
            ),
            off(
                &["hooksConfig", "disabled"],
                OffWhen::Lists(HOOK_NAME.to_string()),
                OffCovers::Hooks,
                "switched off: settings.json lists \"memtrail\" in \"hooksConfig.disabled\" (/hooks in Gemini CLI turns it back on)",
            ),
            off(
                &["mcp", "excluded"],
                OffWhen::Lists(MCP_SERVER_NAME.to_string()),
                OffCovers::Mcp,
                "switched off: settings.json lists \"memtrail\" in \"mcp.excluded\"",
            ),
        ],
        files: vec![
            json_file(&loc.settings, items),
            skill_file(&loc.skill, SKILL_MD, is_memtrail_skill),
        ],
        config_dirs: vec![loc.config_dir],
        executables: vec![EXECUTABLE.to_string()],
        // npm links `gemini` to the package's `bundle/gemini.js`.
        version: env.version_of(EXECUTABLE, &["@google/gemini-cli"]),
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
        let bin = Path::new("/opt/mem trail/memtrail");
        let h = hook_handler(bin, 30_000).unwrap();
        assert_eq!(h["command"], "'/opt/mem trail/memtrail' hook gemini");
        assert!(is_memtrail_hook_handler(&h));
        assert!(!is_memtrail_hook_handler(
            &json!({"type": "command", "command": "/x/memtrail hook claude"})
        ));
        assert!(!is_memtrail_hook_handler(
            &json!({"command": "/x/memtrail hook gemini"})
        ));
        let l = Locations::resolve(&Env::sandbox(Path::new("/h")));
        assert_eq!(l.settings, Path::new("/h/.gemini/settings.json"));
        let l =
            Locations::resolve(&Env::sandbox(Path::new("/h")).with_var("GEMINI_CLI_HOME", "/g"));
        assert_eq!(l.skill, Path::new("/g/.gemini/skills/memtrail/SKILL.md"));
        assert!(is_memtrail_skill(SKILL_MD));
        assert!(SKILL_MD.contains("mcp_memtrail_search"));
        assert!(!MCP_SERVER_NAME.contains('_'));
    }
}
