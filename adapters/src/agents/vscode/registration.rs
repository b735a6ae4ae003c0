//! What memtrail registers in VS Code (GitHub Copilot agent mode), in VS Code's own dialect.
//!
//! Sources: `docs/agents/vscode.md#what-memtrail-registers` (hook file locations,
//! `chat.hookFilesLocations`), `docs/agents/vscode.md#hooks` (hook file format and events),
//! `docs/agents/vscode.md#what-memtrail-registers` (`mcp.json`), checked against upstream
//! `microsoft/vscode-docs` `docs/agent-customization/hooks.md` (a location is a folder or a `.json`
//! file; only relative and `~` paths; entries are added to the defaults, and `false` switches one
//! off) and `docs/copilot/reference/mcp-configuration.md`.
//!
//! - **A hook file** memtrail owns, [`HOOK_FILE_SETTING`] (`~/.config/memtrail/vscode-hooks.json`):
//!   `{"hooks":{"SessionStart":[{"type":"command","command":"<binary> hook vscode","timeout":30}],
//!   …}}`, a flat list per event. It is deliberately *not* in `~/.copilot/hooks`: GitHub Copilot
//!   CLI reads every file there too, and would run memtrail's VS Code hook for its own
//!   sessions. The same path on every machine, so a synced `settings.json` stays right.
//! - **Its registration** in each user `settings.json` (JSONC): `"chat.hookFilesLocations"` →
//!   `{"~/.config/memtrail/vscode-hooks.json": true}`. (VS Code also reads the Claude Code hooks
//!   in `~/.claude/settings.json`; memtrail's Claude hook ignores VS Code's payloads, so this
//!   file is what captures VS Code sessions.)
//! - **An MCP server** in each user `mcp.json` → `"servers"` → `"memtrail"`:
//!   `{"type":"stdio","command":"<binary>","args":["mcp"]}`.
//!
//! "Each user folder": VS Code's (`~/.config/Code/User`, …) and VS Code Insiders' (a separate
//! profile), those that exist; VS Code's when neither does.

use super::paths::Locations;
use crate::shell::{is_memtrail_program, shell_quote};
use crate::spec::*;
use serde_json::{Value, json};
use std::path::Path;

/// VS Code's executables, looked up on `PATH` to detect an installation.
pub const EXECUTABLES: [&str; 2] = ["code", "code-insiders"];

/// The `<agent>` argument of `memtrail hook <agent>`: the agent's short name.
pub const HOOK_AGENT_ARG: &str = super::adapter::NAMES.name;

/// memtrail's hook file, relative to the home directory.
pub const HOOK_FILE_IN_HOME: &str = ".config/memtrail/vscode-hooks.json";

/// memtrail's hook file as `chat.hookFilesLocations` names it.
pub const HOOK_FILE_SETTING: &str = "~/.config/memtrail/vscode-hooks.json";

/// The user setting listing hook files.
pub const HOOK_FILES_SETTING: &str = "chat.hookFilesLocations";

/// One hook event, with its timeout in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookSpec {
    /// The event name as VS Code spells it.
    pub event: &'static str,
    /// Timeout in seconds.
    pub timeout_secs: u64,
}

/// SessionStart (context), UserPromptSubmit, Stop (capture), PreCompact (snapshot). VS Code has
/// no SessionEnd.
pub const HOOKS: [HookSpec; 4] = [
    HookSpec {
        event: "SessionStart",
        timeout_secs: 30,
    },
    HookSpec {
        event: "UserPromptSubmit",
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
];

/// The key of the hook file holding the events.
pub const HOOKS_KEY: &str = "hooks";

/// The key of `mcp.json` holding servers, and memtrail's server name.
pub const MCP_SERVERS_KEY: &str = "servers";
/// memtrail's MCP server name.
pub const MCP_SERVER_NAME: &str = "memtrail";

/// Hook entry keys written only when missing.
pub const HANDLER_SOFT_KEYS: [&str; 1] = ["timeout"];

/// MCP entry keys written only when missing.
pub const MCP_SOFT_KEYS: [&str; 0] = [];

/// `<binary, shell-quoted if needed> hook vscode`; `None` when the path is not UTF-8.
pub fn hook_command(binary: &Path) -> Option<String> {
    Some(format!(
        "{} hook {HOOK_AGENT_ARG}",
        shell_quote(binary.to_str()?)
    ))
}

/// One hook entry: `{"type":"command","command":"<binary> hook vscode","timeout":N}`.
pub fn hook_handler(binary: &Path, timeout_secs: u64) -> Option<Value> {
    Some(json!({ "type": "command", "command": hook_command(binary)?, "timeout": timeout_secs }))
}

fn program_and_args(handler: &Value) -> Option<(String, Vec<String>)> {
    crate::registration::command_program_and_args(handler, false)
}

/// True when `handler` is memtrail's VS Code hook entry.
pub fn is_memtrail_hook_handler(handler: &Value) -> bool {
    program_and_args(handler)
        .is_some_and(|(p, a)| is_memtrail_program(&p) && a == ["hook", HOOK_AGENT_ARG])
}

/// What memtrail's hook file holds that memtrail did not write: the events with a hook of
/// someone else's (in the file's order), and any other top-level key.
pub fn foreign_hooks(file: &Value) -> Vec<String> {
    let Some(top) = file.as_object() else {
        return vec!["its content".to_string()];
    };
    let mut out = Vec::new();
    for (k, v) in top {
        if k != HOOKS_KEY {
            out.push(k.clone());
            continue;
        }
        let Some(events) = v.as_object() else {
            out.push(k.clone());
            continue;
        };
        for (event, hs) in events {
            let theirs = match hs.as_array() {
                Some(hs) => hs.iter().any(|h| !is_memtrail_hook_handler(h)),
                None => true,
            };
            if theirs {
                out.push(event.clone());
            }
        }
    }
    out
}

/// The binary a hook entry runs.
pub fn hook_handler_program(handler: &Value) -> Option<String> {
    program_and_args(handler).map(|(p, _)| p)
}

/// `handler` with its command written the way [`hook_command`] writes it.
pub fn canonical_hook_handler(handler: &Value) -> Value {
    crate::registration::canonical_command_handler(handler)
}

/// memtrail's MCP server entry: `{"type":"stdio","command":"<binary>","args":["mcp"]}`.
pub fn mcp_server_entry(binary: &Path) -> Option<Value> {
    Some(json!({ "type": "stdio", "command": binary.to_str()?, "args": ["mcp"] }))
}

/// The program an MCP server entry runs.
pub fn mcp_server_program(entry: &Value) -> Option<String> {
    crate::registration::entry_command(entry)
}

/// VS Code: `docs/agents/vscode.md#what-memtrail-registers` (memtrail's own hook file, registered
/// in `chat.hookFilesLocations` of each user `settings.json`; `servers.memtrail` in each user
/// `mcp.json`).
pub(crate) fn spec(ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
    let (env, binary) = (ctx.env, ctx.binary);
    let loc = Locations::resolve(env);
    let bad = || SpecError::BadBinary(binary.to_path_buf());
    let fns = HandlerFns {
        is_ours: is_memtrail_hook_handler,
        points_at: hook_handler_program,
        canonical: canonical_hook_handler,
    };
    let mut hooks = Vec::new();
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
    let mut files = vec![json_file(&loc.hook_file, hooks)];
    for u in &loc.user_dirs {
        let location = JsonItem::Property(PropertyItem {
            label: format!("hook file in {}", HOOK_FILES_SETTING),
            object_path: strings(&[HOOK_FILES_SETTING]),
            key: HOOK_FILE_SETTING.to_string(),
            value: Value::Bool(true),
            policy: Policy::default(),
            points_at: |_| None,
            shared: false,
            loads: Some(LoadedFile {
                path: loc.hook_file.clone(),
                foreign: foreign_hooks,
                what: "hooks",
            }),
        });
        files.push(json_file(&u.settings, vec![location]));
        files.push(json_file(
            &u.mcp,
            vec![mcp_item(
                &[MCP_SERVERS_KEY],
                MCP_SERVER_NAME,
                mcp_server_entry(binary).ok_or_else(bad)?,
                &MCP_SOFT_KEYS,
                mcp_server_program,
            )],
        ));
    }
    Ok(AgentSpec {
        off_switches: Vec::new(),
        files,
        config_dirs: loc.detect_dirs,
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
    fn locations_prefer_existing_user_folders() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let l = Locations::resolve(&Env::sandbox(&home));
        assert_eq!(l.user_dirs.len(), 1);
        assert_eq!(l.hook_file, home.join(".config/memtrail/vscode-hooks.json"));
        if cfg!(target_os = "linux") {
            std::fs::create_dir_all(home.join(".config/Code - Insiders/User")).unwrap();
            let l = Locations::resolve(&Env::sandbox(&home));
            assert_eq!(
                l.user_dirs[0].settings,
                home.join(".config/Code - Insiders/User/settings.json")
            );
            assert_eq!(l.user_dirs.len(), 1);
        }
        drop(tmp);
        let h = hook_handler(Path::new("/bin/memtrail"), 30).unwrap();
        assert!(is_memtrail_hook_handler(&h));
        assert!(HOOK_FILE_SETTING.ends_with(HOOK_FILE_IN_HOME));
    }
}
