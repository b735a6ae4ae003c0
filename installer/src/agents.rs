//! Per-agent registration specs, in the engine's generic model. Adding an agent means adding its
//! dialect to its adapter (`memtrail_adapters::<agent>::registration`) and a function here that
//! maps it onto [`FileSpec`]s.

use crate::env::Env;
use crate::error::InstallError;
use crate::spec::{
    AgentSpec, Body, FileSpec, HandlerItem, JsonItem, Policy, PropertyItem, WholeItem,
};
use memtrail_adapters::Agent;
use memtrail_adapters::claude::registration as claude;
use std::path::Path;

/// The registration spec of `agent` for the memtrail binary at `binary`.
pub(crate) fn spec(agent: Agent, env: &Env, binary: &Path) -> Result<AgentSpec, InstallError> {
    if !binary.is_absolute() || binary.to_str().is_none() {
        return Err(InstallError::BadBinary(binary.to_path_buf()));
    }
    match agent {
        Agent::Claude => claude_spec(env, binary),
        other => Err(InstallError::Unsupported(other)),
    }
}

fn strings(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
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
    });
    let skill_dir = loc.skill.parent().map(Path::to_path_buf);
    Ok(AgentSpec {
        files: vec![
            FileSpec {
                path: loc.settings.clone(),
                body: Body::Json(hooks),
                new_file_mode: None,
            },
            FileSpec {
                path: loc.global_state.clone(),
                body: Body::Json(vec![mcp]),
                // It also holds OAuth and per-project state: owner only.
                new_file_mode: Some(0o600),
            },
            FileSpec {
                path: loc.skill.clone(),
                body: Body::Whole(WholeItem {
                    label: "skill memtrail".to_string(),
                    content: claude::SKILL_MD.to_string(),
                    owned_dirs: skill_dir.into_iter().collect(),
                }),
                new_file_mode: None,
            },
        ],
        config_dir: loc.config_dir,
        executable: claude::EXECUTABLE.to_string(),
    })
}
