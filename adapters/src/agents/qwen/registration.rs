//! What memtrail registers in Qwen Code's config, in Qwen Code's own dialect.
//!
//! Sources: `docs/agents/qwen.md#what-memtrail-registers`, checked against Qwen Code 0.24.4
//! (`hooks/hookRegistry.ts`: a definition is `{matcher?, sequential?, hooks: [...]}` and a
//! command hook needs `type: "command"` and `command`; `hooks/hookRunner.ts`
//! `readCommandHookTimeout`: `timeout` in **seconds**, default 60, values that look like
//! milliseconds accepted as such; what `qwen mcp add` writes; `config/storage.ts`: user skills
//! in `<config>/skills/<name>/SKILL.md`).
//!
//! Three things, in `<config>` = `$QWEN_HOME` or `~/.qwen`:
//!
//! - **Hooks** in `settings.json` → `"hooks"`: for each event of [`HOOKS`], one definition
//!   `{"hooks":[{"type":"command","command":"<binary> hook qwen","name":"memtrail",
//!   "timeout":N}]}` (no `matcher`: every source).
//! - **An MCP server** in `settings.json` → `"mcpServers"` → `"memtrail"`:
//!   `{"command":"<binary>","args":["mcp"]}`, the shape `qwen mcp add` writes; Qwen Code shows
//!   its tools to the model as `mcp__memtrail__<tool>`.
//! - **A skill** at `<config>/skills/memtrail/SKILL.md` (the generic skill).

pub use super::paths::Locations;
use crate::shell::{is_memtrail_program, shell_quote};
use crate::spec::*;
use serde_json::{Value, json};
use std::path::Path;

/// Qwen Code's executable, looked up on `PATH` to detect an installation.
pub const EXECUTABLE: &str = "qwen";

/// The `<agent>` argument of `memtrail hook <agent>`: the agent's short name.
pub const HOOK_AGENT_ARG: &str = super::adapter::NAMES.name;

/// The `name` of memtrail's hooks (what `/hooks` shows and `hooks.disabled` lists).
pub const HOOK_NAME: &str = "memtrail";

/// One hook event memtrail registers, with its timeout in **seconds**.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookSpec {
    /// The event name exactly as Qwen Code spells it (Claude Code's names).
    pub event: &'static str,
    /// Handler timeout in seconds.
    pub timeout_secs: u64,
}

/// SessionStart (context, `hookSpecificOutput.additionalContext`), Stop (capture after each
/// turn: the whole turn is in the transcript when it fires), PreCompact (snapshot), SessionEnd
/// (capture at the end).
pub const HOOKS: [HookSpec; 4] = [
    HookSpec {
        event: "SessionStart",
        timeout_secs: 30,
    },
    HookSpec {
        event: "Stop",
        timeout_secs: 30,
    },
    HookSpec {
        event: "PreCompact",
        timeout_secs: 30,
    },
    HookSpec {
        event: "SessionEnd",
        timeout_secs: 5,
    },
];

/// The top-level key of `settings.json` holding hooks, and the key of a definition holding its
/// handlers.
pub const HOOKS_KEY: &str = "hooks";

/// The top-level key of `settings.json` holding MCP servers.
pub const MCP_SERVERS_KEY: &str = "mcpServers";

/// The name memtrail's MCP server is registered under (the tools' prefix `mcp__memtrail__`).
pub const MCP_SERVER_NAME: &str = "memtrail";

/// Handler keys written only when missing (a user's longer timeout or another name survives a
/// re-install).
pub const HANDLER_SOFT_KEYS: [&str; 2] = ["timeout", "name"];

/// The skill (from `skills/agents/memtrail/SKILL.md`, which names every agent's tool names).
pub const SKILL_MD: &str = include_str!("../../../../skills/agents/memtrail/SKILL.md");

/// `<binary, shell-quoted if needed> hook qwen`; `None` when the path is not UTF-8.
pub fn hook_command(binary: &Path) -> Option<String> {
    Some(format!(
        "{} hook {HOOK_AGENT_ARG}",
        shell_quote(binary.to_str()?)
    ))
}

/// One handler: `{"type":"command","command":"<binary> hook qwen","name":"memtrail",
/// "timeout":N}` (seconds).
pub fn hook_handler(binary: &Path, timeout_secs: u64) -> Option<Value> {
    Some(json!({
        "type": "command",
        "command": hook_command(binary)?,
        "name": HOOK_NAME,
        "timeout": timeout_secs,
    }))
}

/// The program and arguments of a `type: "command"` handler (its command split as `sh` would).
fn program_and_args(handler: &Value) -> Option<(String, Vec<String>)> {
    crate::registration::command_program_and_args(handler, false)
}

/// True when `handler` is memtrail's Qwen Code hook handler (any binary named `memtrail`,
/// arguments exactly `hook qwen`).
pub fn is_memtrail_hook_handler(handler: &Value) -> bool {
    program_and_args(handler)
        .is_some_and(|(p, a)| is_memtrail_program(&p) && a == ["hook", HOOK_AGENT_ARG])
}

/// The binary a handler runs, for status reports.
pub fn hook_handler_program(handler: &Value) -> Option<String> {
    program_and_args(handler).map(|(p, _)| p)
}

/// memtrail's MCP server entry: `{"command":"<binary>","args":["mcp"]}`.
pub fn mcp_server_entry(binary: &Path) -> Option<Value> {
    Some(json!({ "command": binary.to_str()?, "args": ["mcp"] }))
}

/// Qwen Code: `docs/agents/qwen.md#what-memtrail-registers` (hooks and MCP in the user
/// `settings.json`, timeouts in seconds; user skill).
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
    items.push(mcp_item(
        &[MCP_SERVERS_KEY],
        MCP_SERVER_NAME,
        mcp_server_entry(binary).ok_or_else(bad)?,
        &[],
        crate::registration::entry_command,
    ));
    Ok(AgentSpec {
        off_switches: Vec::new(),
        files: vec![
            json_file(&loc.settings, items),
            skill_file(&loc.skill, SKILL_MD, crate::registration::is_memtrail_skill),
        ],
        config_dirs: vec![loc.config_dir],
        executables: vec![EXECUTABLE.to_string()],
        // npm links `qwen` to the package's `cli-entry.js`.
        version: env.version_of(EXECUTABLE, &["@qwen-code/qwen-code"]),
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
            json!({"type": "command", "command": "'/opt/mem trail/memtrail' hook qwen",
                   "name": "memtrail", "timeout": 30})
        );
        assert!(is_memtrail_hook_handler(&h));
        assert!(!is_memtrail_hook_handler(
            &json!({"type": "command", "command": "/x/memtrail hook gemini"})
        ));
        let l = Locations::resolve(&Env::sandbox(Path::new("/h")));
        assert_eq!(l.settings, Path::new("/h/.qwen/settings.json"));
        assert_eq!(l.projects, Path::new("/h/.qwen/projects"));
        let env = Env::sandbox(Path::new("/h"))
            .with_var("QWEN_HOME", "~/q")
            .with_var("QWEN_RUNTIME_DIR", "/r");
        let l = Locations::resolve(&env);
        assert_eq!(l.skill, Path::new("/h/q/skills/memtrail/SKILL.md"));
        assert_eq!(l.projects, Path::new("/r/projects"));
        assert!(crate::registration::is_memtrail_skill(SKILL_MD));
        assert!(SKILL_MD.contains("Qwen Code"));
        assert_eq!(
            super::super::paths::project_folder("/home/u/my proj.é"),
            "-home-u-my-proj--"
        );
    }
}
