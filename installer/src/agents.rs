//! Per-agent registration specs, in the engine's generic model. Adding an agent means adding its
//! dialect to its adapter (`memtrail_adapters::<agent>::registration`) and a function here that
//! maps it onto [`FileSpec`]s.

use crate::error::InstallError;
use crate::spec::{
    AgentSpec, Body, FileSpec, HandlerItem, JsonItem, Policy, PropertyItem, TomlItem, TomlValue,
    TrustSpec, WholeItem,
};
use memtrail_adapters::Agent;
use memtrail_adapters::Env;
use memtrail_adapters::claude::registration as claude;
use memtrail_adapters::codex::registration as codex;
use memtrail_adapters::cursor::registration as cursor;
use memtrail_adapters::gemini::registration as gemini;
use memtrail_adapters::opencode::{self, registration as oc};
use memtrail_adapters::vscode::registration as vscode;
use serde_json::Value;
use std::ffi::OsString;
use std::path::Path;

/// The registration spec of `agent` for the memtrail binary at `binary`.
pub(crate) fn spec(agent: Agent, env: &Env, binary: &Path) -> Result<AgentSpec, InstallError> {
    if !binary.is_absolute() || binary.to_str().is_none() {
        return Err(InstallError::BadBinary(binary.to_path_buf()));
    }
    match agent {
        Agent::Claude => claude_spec(env, binary),
        Agent::Gemini => gemini_spec(env, binary),
        Agent::Cursor => cursor_spec(env, binary),
        Agent::Opencode => opencode_spec(env, binary),
        Agent::Vscode => vscode_spec(env, binary),
        Agent::Codex => codex_spec(env, binary),
    }
}

fn strings(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

/// An environment lookup for the adapters' `resolve_with` functions.
fn os_var(env: &Env) -> impl Fn(&str) -> Option<OsString> + '_ {
    |k| env.var(k).map(|v| v.to_os_string())
}

/// The functions that recognise and describe one agent's hook handler.
struct HandlerFns {
    is_ours: fn(&Value) -> bool,
    points_at: fn(&Value) -> Option<String>,
    canonical: fn(&Value) -> Value,
}

/// A hook handler item: memtrail's `handler` in the array at `array_path`, inside a group
/// `entry` (`nested_key`) or directly (`entry` = `handler`).
fn handler_item(
    event: &str,
    array_path: Vec<String>,
    nested_key: Option<&str>,
    entry: Value,
    handler: Value,
    soft: &[&str],
    fns: &HandlerFns,
) -> JsonItem {
    JsonItem::Handler(HandlerItem {
        label: format!("hook {event}"),
        array_path,
        nested_key: nested_key.map(str::to_string),
        entry,
        handler,
        policy: Policy {
            soft: strings(soft),
            drop: Vec::new(),
        },
        is_ours: fns.is_ours,
        points_at: fns.points_at,
        canonical: fns.canonical,
    })
}

/// memtrail's MCP server `name` in the object at `object_path`.
fn mcp_item(
    object_path: &[&str],
    name: &str,
    value: Value,
    soft: &[&str],
    points_at: fn(&Value) -> Option<String>,
) -> JsonItem {
    JsonItem::Property(PropertyItem {
        label: format!("MCP server {name}"),
        object_path: strings(object_path),
        key: name.to_string(),
        value,
        policy: Policy {
            soft: strings(soft),
            drop: Vec::new(),
        },
        points_at,
        shared: false,
    })
}

/// A skill file memtrail owns: its folder is memtrail's too.
fn skill_file(path: &Path, content: &str, is_ours: fn(&str) -> bool) -> FileSpec {
    FileSpec {
        path: path.to_path_buf(),
        body: Body::Whole(WholeItem {
            label: "skill memtrail".to_string(),
            content: content.to_string(),
            owned_dirs: path.parent().map(Path::to_path_buf).into_iter().collect(),
            is_ours: Some(is_ours),
            points_at: None,
            retired: false,
        }),
        new_file_mode: None,
        strict_json: None,
    }
}

/// memtrail's skill where an older version put it: removed by install and uninstall alike.
fn retired_skill_file(path: &Path, is_ours: fn(&str) -> bool) -> FileSpec {
    let mut f = skill_file(path, "", is_ours);
    if let Body::Whole(w) = &mut f.body {
        w.label = "skill memtrail (former place)".to_string();
        w.retired = true;
    }
    f
}

fn json_file(path: &Path, items: Vec<JsonItem>) -> FileSpec {
    FileSpec {
        path: path.to_path_buf(),
        body: Body::Json(items),
        new_file_mode: None,
        strict_json: None,
    }
}

/// Cursor: agent-specs.md §4.1/§4.2 (user `hooks.json`: `version: 1`, flat entries per event,
/// absolute commands), §4.4 (`mcp.json`), §4.5 (skill).
fn cursor_spec(env: &Env, binary: &Path) -> Result<AgentSpec, InstallError> {
    let loc = cursor::Locations::resolve_with(env.home(), &os_var(env));
    let bad = || InstallError::BadBinary(binary.to_path_buf());
    let fns = HandlerFns {
        is_ours: cursor::is_memtrail_hook_handler,
        points_at: cursor::hook_handler_program,
        canonical: cursor::canonical_hook_handler,
    };
    let mut hooks = vec![JsonItem::Property(PropertyItem {
        label: "hooks.json version".to_string(),
        object_path: Vec::new(),
        key: cursor::VERSION_KEY.to_string(),
        value: Value::from(cursor::VERSION),
        policy: Policy::default(),
        points_at: |_| None,
        shared: true,
    })];
    for h in cursor::HOOKS {
        let handler = cursor::hook_handler(binary, h.timeout_secs).ok_or_else(bad)?;
        hooks.push(handler_item(
            h.event,
            strings(&[cursor::HOOKS_KEY, h.event]),
            None,
            handler.clone(),
            handler,
            &cursor::HANDLER_SOFT_KEYS,
            &fns,
        ));
    }
    let mcp = mcp_item(
        &[cursor::MCP_SERVERS_KEY],
        cursor::MCP_SERVER_NAME,
        cursor::mcp_server_entry(binary).ok_or_else(bad)?,
        &[],
        cursor::mcp_server_program,
    );
    Ok(AgentSpec {
        files: vec![
            json_file(&loc.hooks, hooks),
            json_file(&loc.mcp, vec![mcp]),
            skill_file(&loc.skill, cursor::SKILL_MD, cursor::is_memtrail_skill),
        ],
        config_dirs: vec![loc.config_dir],
        executables: strings(&cursor::EXECUTABLES),
        version: None,
        trust: None,
        advice: Vec::new(),
    })
}

/// Codex CLI: agent-specs.md §2.2 (`[mcp_servers.memtrail]`), §2.3 (`notify`, chained with a
/// user's own), §2.4 (`hooks.json`, and the trust Codex needs before it runs them), §2.6
/// (skill in `$CODEX_HOME/skills`; memtrail's former skill in `~/.agents/skills` is removed).
fn codex_spec(env: &Env, binary: &Path) -> Result<AgentSpec, InstallError> {
    let loc = codex::Locations::resolve_with(env.home(), &os_var(env));
    let bad = || InstallError::BadBinary(binary.to_path_buf());
    let bin = binary.to_str().ok_or_else(bad)?.to_string();
    let toml = vec![
        TomlItem::ChainedArgv {
            label: "notify".to_string(),
            key: codex::NOTIFY_KEY.to_string(),
            ours: codex::notify_argv(binary).ok_or_else(bad)?,
            chain_flag: memtrail_adapters::codex::NOTIFY_CHAIN_FLAG.to_string(),
            is_ours: codex::is_memtrail_notify,
        },
        TomlItem::Table {
            label: format!("MCP server {}", codex::MCP_SERVER_NAME),
            table_path: strings(&[codex::MCP_SERVERS_KEY]),
            key: codex::MCP_SERVER_NAME.to_string(),
            keys: vec![
                ("command".to_string(), TomlValue::Str(bin)),
                (
                    "args".to_string(),
                    TomlValue::Strings(vec!["mcp".to_string()]),
                ),
            ],
        },
    ];
    let fns = HandlerFns {
        is_ours: codex::is_memtrail_hook_handler,
        points_at: codex::hook_handler_program,
        canonical: codex::canonical_hook_handler,
    };
    let mut hooks = Vec::new();
    for h in codex::HOOKS {
        hooks.push(handler_item(
            h.event,
            strings(&[codex::HOOKS_KEY, h.event]),
            Some(codex::HOOKS_KEY),
            codex::hook_group(binary, h.timeout_secs).ok_or_else(bad)?,
            codex::hook_handler(binary, h.timeout_secs).ok_or_else(bad)?,
            &codex::HANDLER_SOFT_KEYS,
            &fns,
        ));
    }
    // Codex keys trust by the hooks.json path it sees: as configured, or resolved.
    let mut key_sources = vec![loc.hooks_json.display().to_string()];
    if let Ok(real) = std::fs::canonicalize(&loc.config_dir) {
        let k = real.join("hooks.json").display().to_string();
        if !key_sources.contains(&k) {
            key_sources.push(k);
        }
    }
    Ok(AgentSpec {
        files: vec![
            FileSpec {
                path: loc.config_toml.clone(),
                body: Body::Toml(toml),
                // It may hold tokens (MCP env, providers): owner only when memtrail creates it.
                new_file_mode: Some(0o600),
                strict_json: None,
            },
            json_file(&loc.hooks_json, hooks),
            skill_file(&loc.skill, codex::SKILL_MD, codex::is_memtrail_skill),
            retired_skill_file(&loc.legacy_skill, codex::is_memtrail_skill),
        ],
        trust: Some(TrustSpec {
            config_toml: loc.config_toml.clone(),
            hooks_json: loc.hooks_json.clone(),
            key_sources,
            event_label: codex::event_label,
            how_to_trust: codex::HOW_TO_TRUST.to_string(),
        }),
        advice: vec![(
            loc.hooks_json.clone(),
            "Codex runs new or changed hooks only once you trust them: open /hooks in Codex \
             (until then memtrail captures through `notify`)"
                .to_string(),
        )],
        config_dirs: vec![loc.config_dir],
        executables: vec![codex::EXECUTABLE.to_string()],
        version: env.version_of(codex::EXECUTABLE, &["@openai/codex"]),
    })
}

/// VS Code: agent-specs.md §5.1–§5.3 (memtrail's own hook file, registered in
/// `chat.hookFilesLocations` of each user `settings.json`; `servers.memtrail` in each user
/// `mcp.json`).
fn vscode_spec(env: &Env, binary: &Path) -> Result<AgentSpec, InstallError> {
    let loc = vscode::Locations::resolve_with(env.home(), &os_var(env));
    let bad = || InstallError::BadBinary(binary.to_path_buf());
    let fns = HandlerFns {
        is_ours: vscode::is_memtrail_hook_handler,
        points_at: vscode::hook_handler_program,
        canonical: vscode::canonical_hook_handler,
    };
    let mut hooks = Vec::new();
    for h in vscode::HOOKS {
        let handler = vscode::hook_handler(binary, h.timeout_secs).ok_or_else(bad)?;
        hooks.push(handler_item(
            h.event,
            strings(&[vscode::HOOKS_KEY, h.event]),
            None,
            handler.clone(),
            handler,
            &vscode::HANDLER_SOFT_KEYS,
            &fns,
        ));
    }
    let mut files = vec![json_file(&loc.hook_file, hooks)];
    for u in &loc.user_dirs {
        let location = JsonItem::Property(PropertyItem {
            label: format!("hook file in {}", vscode::HOOK_FILES_SETTING),
            object_path: strings(&[vscode::HOOK_FILES_SETTING]),
            key: vscode::HOOK_FILE_SETTING.to_string(),
            value: Value::Bool(true),
            policy: Policy::default(),
            points_at: |_| None,
            shared: false,
        });
        files.push(json_file(&u.settings, vec![location]));
        files.push(json_file(
            &u.mcp,
            vec![mcp_item(
                &[vscode::MCP_SERVERS_KEY],
                vscode::MCP_SERVER_NAME,
                vscode::mcp_server_entry(binary).ok_or_else(bad)?,
                &vscode::MCP_SOFT_KEYS,
                vscode::mcp_server_program,
            )],
        ));
    }
    Ok(AgentSpec {
        files,
        config_dirs: loc.detect_dirs,
        executables: strings(&vscode::EXECUTABLES),
        version: None,
        trust: None,
        advice: Vec::new(),
    })
}

/// OpenCode: agent-specs.md §6.1–§6.3 (the plugin in `<config>/plugins/`, in the module shape
/// the installed version loads; `mcp.memtrail` in `opencode.jsonc` or `opencode.json`).
fn opencode_spec(env: &Env, binary: &Path) -> Result<AgentSpec, InstallError> {
    let loc = oc::Locations::resolve_with(env.home(), &os_var(env));
    let bad = || InstallError::BadBinary(binary.to_path_buf());
    let version = env.version_of(oc::EXECUTABLE, &["opencode-ai", "opencode"]);
    let api = opencode::PluginApi::for_version(version.as_deref());
    let major = version
        .as_deref()
        .and_then(opencode::parse_version)
        .map(|v| v.0);
    // A config already in OpenCode 2's native shape gets memtrail's server in that shape (unless
    // the installed OpenCode is known to be 1.x); everything else gets the V1 shape, which both
    // read.
    let v2 = major.is_none_or(|m| m >= 2)
        && std::fs::read(&loc.config_file)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|t| crate::jsonedit::JsonDoc::parse(&t).ok())
            .and_then(|d| d.value())
            .is_some_and(|v| oc::uses_v2_mcp_shape(&v));
    let mcp = if v2 {
        mcp_item(
            &[oc::MCP_KEY, oc::V2_SERVERS_KEY],
            oc::MCP_SERVER_NAME,
            oc::mcp_server_entry_v2(binary).ok_or_else(bad)?,
            &[],
            oc::mcp_server_program,
        )
    } else {
        mcp_item(
            &[oc::MCP_KEY],
            oc::MCP_SERVER_NAME,
            oc::mcp_server_entry(binary).ok_or_else(bad)?,
            &[],
            oc::mcp_server_program,
        )
    };
    let plugin = FileSpec {
        path: loc.plugin.clone(),
        body: Body::Whole(WholeItem {
            label: "plugin memtrail".to_string(),
            content: opencode::plugin_source(binary, api),
            owned_dirs: Vec::new(),
            is_ours: Some(opencode::is_memtrail_plugin),
            points_at: Some(oc::plugin_binary),
            retired: false,
        }),
        new_file_mode: None,
        strict_json: None,
    };
    Ok(AgentSpec {
        files: vec![
            plugin,
            json_file(&loc.config_file, vec![mcp]),
            skill_file(&loc.skill, oc::SKILL_MD, codex::is_memtrail_skill),
        ],
        config_dirs: vec![loc.config_dir, loc.data_dir],
        executables: vec![oc::EXECUTABLE.to_string()],
        version,
        trust: None,
        advice: Vec::new(),
    })
}

/// Gemini CLI: agent-specs.md §3.1–§3.3 (hooks and MCP in the user `settings.json`, timeouts in
/// milliseconds; user skill).
fn gemini_spec(env: &Env, binary: &Path) -> Result<AgentSpec, InstallError> {
    let loc = gemini::Locations::resolve_with(env.home(), &os_var(env));
    let bad = || InstallError::BadBinary(binary.to_path_buf());
    let fns = HandlerFns {
        is_ours: gemini::is_memtrail_hook_handler,
        points_at: gemini::hook_handler_program,
        canonical: gemini::canonical_hook_handler,
    };
    let mut items = Vec::new();
    for h in gemini::HOOKS {
        items.push(handler_item(
            h.event,
            strings(&[gemini::HOOKS_KEY, h.event]),
            Some(gemini::HOOKS_KEY),
            gemini::hook_group(binary, h.timeout_ms).ok_or_else(bad)?,
            gemini::hook_handler(binary, h.timeout_ms).ok_or_else(bad)?,
            &gemini::HANDLER_SOFT_KEYS,
            &fns,
        ));
    }
    items.push(mcp_item(
        &[gemini::MCP_SERVERS_KEY],
        gemini::MCP_SERVER_NAME,
        gemini::mcp_server_entry(binary).ok_or_else(bad)?,
        &[],
        gemini::mcp_server_program,
    ));
    Ok(AgentSpec {
        files: vec![
            json_file(&loc.settings, items),
            skill_file(&loc.skill, gemini::SKILL_MD, gemini::is_memtrail_skill),
        ],
        config_dirs: vec![loc.config_dir],
        executables: vec![gemini::EXECUTABLE.to_string()],
        // npm links `gemini` to the package's `bundle/gemini.js`.
        version: env.version_of(gemini::EXECUTABLE, &["@google/gemini-cli"]),
        trust: None,
        advice: Vec::new(),
    })
}

/// Claude Code: agent-specs.md §1.3 (hooks in settings.json), §1.7 (user-scope MCP in
/// `.claude.json`), §1.8 (personal skill).
fn claude_spec(env: &Env, binary: &Path) -> Result<AgentSpec, InstallError> {
    let loc =
        claude::Locations::resolve_with(env.home(), &|k| env.var(k).map(|v| v.to_os_string()));
    let bad = || InstallError::BadBinary(binary.to_path_buf());
    let handler_policy = Policy {
        soft: strings(&claude::HANDLER_SOFT_KEYS),
        drop: strings(&claude::HANDLER_DROPPED_KEYS),
    };
    let mut hooks = Vec::new();
    for h in claude::HOOKS {
        hooks.push(JsonItem::Handler(HandlerItem {
            label: format!("hook {}", h.event),
            array_path: strings(&[claude::HOOKS_KEY, h.event]),
            nested_key: Some(claude::HOOKS_KEY.to_string()),
            entry: claude::hook_group(binary, h.timeout_secs).ok_or_else(bad)?,
            handler: claude::hook_handler(binary, h.timeout_secs).ok_or_else(bad)?,
            policy: handler_policy.clone(),
            is_ours: claude::is_memtrail_hook_handler,
            points_at: claude::hook_handler_program,
            canonical: claude::canonical_hook_handler,
        }));
    }
    let mcp = JsonItem::Property(PropertyItem {
        label: format!("MCP server {}", claude::MCP_SERVER_NAME),
        object_path: strings(&[claude::MCP_SERVERS_KEY]),
        key: claude::MCP_SERVER_NAME.to_string(),
        value: claude::mcp_server_entry(binary).ok_or_else(bad)?,
        policy: Policy {
            soft: strings(&claude::MCP_SOFT_KEYS),
            drop: Vec::new(),
        },
        points_at: claude::mcp_server_program,
        shared: false,
    });
    let skill_dir = loc.skill.parent().map(Path::to_path_buf);
    Ok(AgentSpec {
        files: vec![
            FileSpec {
                path: loc.settings.clone(),
                body: Body::Json(hooks),
                new_file_mode: None,
                strict_json: Some(claude::SETTINGS_NOT_STRICT),
            },
            FileSpec {
                path: loc.global_state.clone(),
                body: Body::Json(vec![mcp]),
                // It also holds OAuth and per-project state: owner only.
                new_file_mode: Some(0o600),
                strict_json: Some(claude::GLOBAL_STATE_NOT_STRICT),
            },
            FileSpec {
                path: loc.skill.clone(),
                body: Body::Whole(WholeItem {
                    label: "skill memtrail".to_string(),
                    content: claude::SKILL_MD.to_string(),
                    owned_dirs: skill_dir.into_iter().collect(),
                    is_ours: None,
                    points_at: None,
                    retired: false,
                }),
                new_file_mode: None,
                strict_json: None,
            },
        ],
        config_dirs: vec![loc.config_dir],
        executables: vec![claude::EXECUTABLE.to_string()],
        // npm links `claude` to the package's `bin/claude.exe`.
        version: env.version_of(claude::EXECUTABLE, &["@anthropic-ai/claude-code"]),
        trust: None,
        advice: Vec::new(),
    })
}
