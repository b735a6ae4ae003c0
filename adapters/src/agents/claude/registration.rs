//! What memtrail registers in Claude Code's config files, in Claude Code's own dialect.
//!
//! The installer (crate `memtrail-installer`) is generic: it knows how to add, update, find and
//! remove an entry in a JSON file. This module says *what* the entries are for Claude Code and how
//! to recognise memtrail's own ones. Sources: `docs/agents/claude.md#paths` (files),
//! `docs/agents/claude.md#what-memtrail-registers` (hook schema), `docs/agents/claude.md#hooks`
//! (events), `docs/agents/claude.md#what-memtrail-registers` (MCP) and
//! `docs/agents/claude.md#what-memtrail-registers` (skills).
//!
//! Three things are registered:
//!
//! - **Hooks** in `<config>/settings.json` → `"hooks"`
//!   (`docs/agents/claude.md#what-memtrail-registers`): for each event of [`HOOKS`], one matcher
//!   group `{"hooks":[{"type":"command","command":"<binary> hook claude","timeout":N}]}` appended
//!   to that event's array. No `matcher` key, so it matches everything. The shell form (one
//!   `command` string, no `args`) is used because every Claude Code version runs it.
//! - **An MCP server** at user scope in the global state file (`~/.claude.json`, or
//!   `$CLAUDE_CONFIG_DIR/.claude.json`) → `"mcpServers"` → `"memtrail"`
//!   (`docs/agents/claude.md#what-memtrail-registers`):
//!   `{"type":"stdio","command":"<binary>","args":["mcp"],"env":{}}`.
//! - **A personal skill** at `<config>/skills/memtrail/SKILL.md`
//!   (`docs/agents/claude.md#what-memtrail-registers`), content [`SKILL_MD`].

pub use super::paths::Locations;
use crate::shell::{is_memtrail_program, shell_quote, shell_split, unwrap_command};
use crate::spec::*;
use serde_json::{Value, json};
use std::path::Path;

/// The name of Claude Code's executable, looked up on `PATH` to detect an installation.
pub const EXECUTABLE: &str = "claude";

/// The `<agent>` argument of `memtrail hook <agent>` for Claude Code: its short name.
pub const HOOK_AGENT_ARG: &str = super::adapter::NAMES.name;

/// One hook event memtrail registers, with its handler timeout in **seconds**
/// (`docs/agents/claude.md#what-memtrail-registers`: Claude Code timeouts are seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookSpec {
    /// The event name exactly as Claude Code spells it (`docs/agents/claude.md#hooks`).
    pub event: &'static str,
    /// Handler timeout in seconds.
    pub timeout_secs: u64,
}

/// The hook events memtrail registers, in the order they are written.
///
/// SessionEnd gets 5 s: Claude Code gives SessionEnd hooks a 1.5 s shared budget that a per-hook
/// timeout can raise (`docs/agents/claude.md#what-memtrail-registers`), and a hook must never hold
/// the exit up for long.
pub const HOOKS: [HookSpec; 6] = [
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
        event: "SubagentStop",
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

/// The top-level key of `settings.json` that holds hooks, and also the key of a matcher group
/// that holds its handlers (`docs/agents/claude.md#what-memtrail-registers`: event → array of
/// matcher groups → `hooks` array of handlers).
pub const HOOKS_KEY: &str = "hooks";

/// The top-level key of `.claude.json` that holds user-scope MCP servers
/// (`docs/agents/claude.md#what-memtrail-registers`).
pub const MCP_SERVERS_KEY: &str = "mcpServers";

/// The name memtrail's MCP server is registered under.
pub const MCP_SERVER_NAME: &str = "memtrail";

/// Handler keys memtrail writes only when they are missing, so that a user's change (a longer
/// timeout, say) survives a re-install. The other keys of [`hook_handler`] (`type`, `command`)
/// are rewritten when they differ.
pub const HANDLER_SOFT_KEYS: [&str; 1] = ["timeout"];

/// Handler keys that contradict memtrail's shell-form handler and are removed when an install
/// updates one (`args` would turn `command` into an exec-form program path).
pub const HANDLER_DROPPED_KEYS: [&str; 1] = ["args"];

/// MCP entry keys that are written only when missing (the user may add variables to `env`).
pub const MCP_SOFT_KEYS: [&str; 1] = ["env"];

/// The skill installed at [`Locations::skill`] (from `skills/memtrail/SKILL.md`).
pub const SKILL_MD: &str = include_str!("../../../../skills/memtrail/SKILL.md");

/// The hook command for `binary`: `<binary, shell-quoted if needed> hook claude`. `None` when the
/// path is not valid UTF-8 (JSON strings cannot hold it).
pub fn hook_command(binary: &Path) -> Option<String> {
    let b = binary.to_str()?;
    Some(format!("{} hook {HOOK_AGENT_ARG}", shell_quote(b)))
}

/// One hook handler (`docs/agents/claude.md#what-memtrail-registers`):
/// `{"type":"command","command":"<binary> hook claude","timeout":N}`.
pub fn hook_handler(binary: &Path, timeout_secs: u64) -> Option<Value> {
    Some(json!({
        "type": "command",
        "command": hook_command(binary)?,
        "timeout": timeout_secs,
    }))
}

/// One matcher group without a `matcher` (matches all) holding memtrail's handler
/// (`docs/agents/claude.md#what-memtrail-registers`): `{"hooks":[<handler>]}`.
pub fn hook_group(binary: &Path, timeout_secs: u64) -> Option<Value> {
    Some(json!({ HOOKS_KEY: [hook_handler(binary, timeout_secs)?] }))
}

/// True when `handler` is memtrail's Claude Code hook handler: a command handler whose program is
/// a file named `memtrail` (in any directory, or bare) and whose arguments are exactly
/// `hook claude`. Both the shell form (one `command` string) and the exec form (`command` plus
/// `args`) are recognised.
pub fn is_memtrail_hook_handler(handler: &Value) -> bool {
    let Some((program, args)) = handler_program_and_args(handler) else {
        return false;
    };
    is_memtrail_program(&program) && args == ["hook", HOOK_AGENT_ARG]
}

/// `handler` with its shell-form command written the way [`hook_command`] writes it, so that
/// `"/a b/memtrail" hook claude` and `'/a b/memtrail'  hook claude` compare equal; a hook the
/// user wrapped (`nice -n 5 /a/memtrail hook claude`, see [`unwrap_command`]) compares equal to
/// the plain one, so that an install keeps the wrapper. Anything else is returned unchanged.
pub fn canonical_hook_handler(handler: &Value) -> Value {
    let mut h = handler.clone();
    if let Some(obj) = h.as_object_mut()
        && !obj.contains_key("args")
        && let Some(Value::String(cmd)) = obj.get("command")
        && let Some(words) = shell_split(cmd).map(unwrap_command)
        && !words.is_empty()
    {
        let canonical = words
            .iter()
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" ");
        obj.insert("command".into(), Value::String(canonical));
    }
    h
}

/// The program (binary path) a hook handler runs, for status reports. `None` when the handler
/// is not a command handler or its command cannot be split into words.
pub fn hook_handler_program(handler: &Value) -> Option<String> {
    handler_program_and_args(handler).map(|(p, _)| p)
}

fn handler_program_and_args(handler: &Value) -> Option<(String, Vec<String>)> {
    let obj = handler.as_object()?;
    match obj.get("type") {
        None => {}
        Some(Value::String(t)) if t == "command" => {}
        Some(_) => return None,
    }
    let command = obj.get("command")?.as_str()?;
    match obj.get("args") {
        Some(Value::Array(args)) => {
            let args = args
                .iter()
                .map(|a| a.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()?;
            Some((command.to_string(), args))
        }
        Some(_) => None,
        None => {
            let mut words = unwrap_command(shell_split(command)?).into_iter();
            let program = words.next()?;
            Some((program, words.collect()))
        }
    }
}

/// What Claude Code does with a `settings.json` that is not strict JSON (a comment, a trailing
/// comma): it reports "Invalid or malformed JSON" and skips the whole file (checked with Claude
/// Code 2.1.332; issue 11 reports 2.1.197 alike).
pub const SETTINGS_NOT_STRICT: &str =
    "Claude Code skips the whole file (\"Invalid or malformed JSON\"): it will not run these hooks";

/// What Claude Code does with a `.claude.json` that is not strict JSON: it stops with a
/// configuration error ("JSON Parse error: Unrecognized token") and does not start (2.1.332).
pub const GLOBAL_STATE_NOT_STRICT: &str =
    "Claude Code refuses to start with it (\"Configuration error … JSON Parse error\")";

/// memtrail's user-scope MCP server entry (`docs/agents/claude.md#what-memtrail-registers`):
/// `{"type":"stdio","command":"<binary>","args":["mcp"],"env":{}}`. `None` when the path is not
/// valid UTF-8.
pub fn mcp_server_entry(binary: &Path) -> Option<Value> {
    Some(json!({
        "type": "stdio",
        "command": binary.to_str()?,
        "args": ["mcp"],
        "env": {},
    }))
}

/// The program an MCP server entry runs (its `command`), for status reports.
pub fn mcp_server_program(entry: &Value) -> Option<String> {
    entry.get("command")?.as_str().map(str::to_string)
}

/// Claude Code: `docs/agents/claude.md#what-memtrail-registers` (hooks in settings.json),
/// `docs/agents/claude.md#what-memtrail-registers` (user-scope MCP in `.claude.json`),
/// `docs/agents/claude.md#what-memtrail-registers` (personal skill).
pub(crate) fn spec(ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
    let (env, binary) = (ctx.env, ctx.binary);
    let loc = Locations::resolve(env);
    let bad = || SpecError::BadBinary(binary.to_path_buf());
    let handler_policy = Policy {
        soft: strings(&HANDLER_SOFT_KEYS),
        drop: strings(&HANDLER_DROPPED_KEYS),
    };
    let mut hooks = Vec::new();
    for h in HOOKS {
        hooks.push(JsonItem::Handler(HandlerItem {
            label: format!("hook {}", h.event),
            array_path: strings(&[HOOKS_KEY, h.event]),
            nested_key: Some(HOOKS_KEY.to_string()),
            entry: hook_group(binary, h.timeout_secs).ok_or_else(bad)?,
            handler: hook_handler(binary, h.timeout_secs).ok_or_else(bad)?,
            policy: handler_policy.clone(),
            is_ours: is_memtrail_hook_handler,
            points_at: hook_handler_program,
            canonical: canonical_hook_handler,
        }));
    }
    let mcp = JsonItem::Property(PropertyItem {
        label: format!("MCP server {}", MCP_SERVER_NAME),
        object_path: strings(&[MCP_SERVERS_KEY]),
        key: MCP_SERVER_NAME.to_string(),
        value: mcp_server_entry(binary).ok_or_else(bad)?,
        policy: Policy {
            soft: strings(&MCP_SOFT_KEYS),
            drop: Vec::new(),
        },
        points_at: mcp_server_program,
        shared: false,
        loads: None,
    });
    let skill_dir = loc.skill.parent().map(Path::to_path_buf);
    Ok(AgentSpec {
        // `"disableAllHooks": true` in settings.json: Claude Code runs no hook at all.
        off_switches: vec![OffSwitch {
            file: loc.settings.clone(),
            path: strings(&["disableAllHooks"]),
            when: OffWhen::Is(true),
            covers: OffCovers::Hooks,
            reason: "switched off: settings.json has \"disableAllHooks\": true, so Claude Code runs no hook; remove it to capture again".to_string(),
        }],
        files: vec![
            FileSpec {
                path: loc.settings.clone(),
                body: Body::Json(hooks),
                new_file_mode: None,
                strict_json: Some(SETTINGS_NOT_STRICT),
            },
            FileSpec {
                path: loc.global_state.clone(),
                body: Body::Json(vec![mcp]),
                // It also holds OAuth and per-project state: owner only.
                new_file_mode: Some(0o600),
                strict_json: Some(GLOBAL_STATE_NOT_STRICT),
            },
            FileSpec {
                path: loc.skill.clone(),
                body: Body::Whole(WholeItem {
                    label: "skill memtrail".to_string(),
                    content: SKILL_MD.to_string(),
                    owned_dirs: skill_dir.into_iter().collect(),
                    // A skill of the user's own named `memtrail` is theirs: never replaced.
                    is_ours: Some(crate::registration::is_memtrail_skill),
                    points_at: None,
                    retired: false,
                }),
                new_file_mode: None,
                strict_json: None,
            },
        ],
        config_dirs: vec![loc.config_dir],
        executables: vec![EXECUTABLE.to_string()],
        // npm links `claude` to the package's `bin/claude.exe`.
        version: env.version_of(EXECUTABLE, &["@anthropic-ai/claude-code"]),
        trust: None,
        advice: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Env;

    #[test]
    fn recognises_memtrail_handlers() {
        let bin = Path::new("/opt/mem trail/memtrail");
        let h = hook_handler(bin, 30).unwrap();
        assert!(is_memtrail_hook_handler(&h));
        assert_eq!(
            hook_handler_program(&h).as_deref(),
            Some("/opt/mem trail/memtrail")
        );
        let yes = [
            json!({"type": "command", "command": "memtrail hook claude"}),
            json!({"command": "/a/b/memtrail   hook claude"}),
            json!({"type": "command", "command": "/a/memtrail", "args": ["hook", "claude"]}),
        ];
        for h in &yes {
            assert!(is_memtrail_hook_handler(h), "{h}");
        }
        let no = [
            json!({"type": "command", "command": "/a/memtrail hook codex"}),
            json!({"type": "command", "command": "/a/memtrail hook claude --x"}),
            json!({"type": "command", "command": "/a/memtrail-old hook claude"}),
            json!({"type": "command", "command": "echo memtrail hook claude"}),
            json!({"type": "http", "command": "/a/memtrail hook claude"}),
            json!({"type": "command", "command": "/a/memtrail hook claude; rm x"}),
            json!("memtrail hook claude"),
        ];
        for h in &no {
            assert!(!is_memtrail_hook_handler(h), "{h}");
        }
        // Wrapped by the user: still memtrail's hook, and the same as the plain one.
        let wrapped = [
            "nice -n 5 /a/memtrail hook claude",
            "/usr/bin/timeout 10 /a/memtrail hook claude",
            "env MEMTRAIL_HOOK_BUDGET_MS=500 nice /a/memtrail hook claude",
            "MEMTRAIL_DB=/x/m.db /a/memtrail hook claude",
        ];
        for c in wrapped {
            let h = json!({"type": "command", "command": c});
            assert!(is_memtrail_hook_handler(&h), "{c}");
            assert_eq!(hook_handler_program(&h).as_deref(), Some("/a/memtrail"));
            assert_eq!(
                canonical_hook_handler(&h),
                json!({"type": "command", "command": "/a/memtrail hook claude"})
            );
        }
        for c in [
            "echo nice /a/memtrail hook claude",
            "nice x; /a/memtrail hook claude",
            "nice $(x) /a/memtrail hook claude",
            "nice -n 5 /a/memtrail hook claude --x",
        ] {
            let h = json!({"type": "command", "command": c});
            assert!(!is_memtrail_hook_handler(&h), "{c}");
        }
        assert_eq!(
            canonical_hook_handler(
                &json!({"command": "\"/opt/mem trail/memtrail\"   hook claude"})
            ),
            json!({"command": "'/opt/mem trail/memtrail' hook claude"})
        );
    }

    #[test]
    fn locations_follow_claude_config_dir() {
        let home = Path::new("/home/u");
        let l = Locations::resolve(&Env::sandbox(home));
        assert_eq!(l.settings, Path::new("/home/u/.claude/settings.json"));
        assert_eq!(l.global_state, Path::new("/home/u/.claude.json"));
        assert_eq!(
            l.skill,
            Path::new("/home/u/.claude/skills/memtrail/SKILL.md")
        );
        let l = Locations::resolve(&Env::sandbox(home).with_var("CLAUDE_CONFIG_DIR", "/cfg"));
        assert_eq!(l.settings, Path::new("/cfg/settings.json"));
        assert_eq!(l.global_state, Path::new("/cfg/.claude.json"));
        let l = Locations::resolve(&Env::sandbox(home).with_var("CLAUDE_CONFIG_DIR", "relative"));
        assert_eq!(l.config_dir, Path::new("/home/u/.claude"));
    }

    #[test]
    fn resolve_agrees_with_the_process_paths() {
        let l = Locations::resolve(&crate::Env::from_process());
        assert_eq!(l.config_dir, super::super::config_dir());
        assert_eq!(l.settings, super::super::settings_path());
        assert_eq!(l.global_state, super::super::global_state_path());
        assert_eq!(l.skill, super::super::skill_path());
    }

    #[test]
    fn skill_has_frontmatter() {
        assert!(SKILL_MD.starts_with("---\n"));
        assert!(SKILL_MD.contains("\nname: memtrail\n"));
        assert!(SKILL_MD.contains("\ndescription: "));
        assert!(SKILL_MD.lines().count() < 80);
    }
}
