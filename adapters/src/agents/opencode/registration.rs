//! What memtrail registers in OpenCode's config, in OpenCode's own dialect.
//!
//! Sources: `docs/agents/opencode.md#paths` (config files: `opencode.jsonc` or
//! `opencode.json` in `$XDG_CONFIG_HOME/opencode`),
//! `docs/agents/opencode.md#what-memtrail-registers` (MCP), `docs/agents/opencode.md#the-plugin`
//! (plugins); upstream `anomalyco/opencode` `packages/web/src/content/docs/mcp-servers.mdx` (a
//! local server is `{"type":"local","command":[…],"enabled":true}` under `"mcp"`; 1.15 refuses a
//! server without `enabled`, anomalyco/opencode#28625) and the V2 migration guide (V2 reads the
//! same files and normalizes V1 fields in memory, so the V1 shape works on both; a config already
//! converted to the native V2 shape keeps its servers under `mcp.servers`).
//!
//! Two things, in `<config>` = `$XDG_CONFIG_HOME/opencode` (default `~/.config/opencode`):
//!
//! - **The plugin** `<config>/plugins/memtrail.ts` ([`super::plugin_source`]), a file memtrail
//!   owns (recognised by [`super::is_memtrail_plugin`]): it runs `<binary> hook opencode` when
//!   a session goes idle and around compaction.
//! - **An MCP server** in `<config>/opencode.jsonc` when it exists, else `opencode.json`:
//!   `"mcp"` → `"memtrail"` → `{"type":"local","command":["<binary>","mcp"],"enabled":true}`
//!   ([`mcp_server_entry`]); in a config that already uses the native V2 shape, `"mcp"` →
//!   `"servers"` → `"memtrail"` → `{"type":"local","command":["<binary>","mcp"]}`.
//!
//! - **A skill** `<config>/skills/memtrail/SKILL.md`
//!   (`docs/agents/opencode.md#what-memtrail-registers`: OpenCode's own user skills folder; it also
//!   reads `~/.claude/skills` and `~/.agents/skills`, but an OpenCode-only user has neither),
//!   content [`SKILL_MD`].

pub use super::paths::Locations;
use crate::spec::*;
use serde_json::{Value, json};
use std::path::Path;

/// OpenCode's executable, looked up on `PATH` (detection, and `opencode --version` for the
/// plugin's module shape).
pub const EXECUTABLE: &str = "opencode";

/// The top-level key holding MCP servers, and (in the native V2 shape) the key under it.
pub const MCP_KEY: &str = "mcp";
/// The key under [`MCP_KEY`] holding servers in OpenCode 2's native config shape.
pub const V2_SERVERS_KEY: &str = "servers";
/// memtrail's MCP server name (OpenCode names its tools `memtrail_<tool>`).
pub const MCP_SERVER_NAME: &str = "memtrail";

/// The skill installed for OpenCode: the agent-neutral variant (OpenCode names memtrail's MCP
/// tools `memtrail_search` and `memtrail_get_session`).
pub const SKILL_MD: &str = include_str!("../../../../skills/agents/memtrail/SKILL.md");

/// memtrail's MCP server entry in the V1 shape (which OpenCode 2 reads too):
/// `{"type":"local","command":["<binary>","mcp"],"enabled":true}`.
pub fn mcp_server_entry(binary: &Path) -> Option<Value> {
    Some(json!({ "type": "local", "command": [binary.to_str()?, "mcp"], "enabled": true }))
}

/// memtrail's MCP server entry in OpenCode 2's native shape (`enabled` became `disabled`):
/// `{"type":"local","command":["<binary>","mcp"]}`.
pub fn mcp_server_entry_v2(binary: &Path) -> Option<Value> {
    Some(json!({ "type": "local", "command": [binary.to_str()?, "mcp"] }))
}

/// The program an MCP server entry runs (the first word of its `command` array).
pub fn mcp_server_program(entry: &Value) -> Option<String> {
    entry
        .get("command")?
        .as_array()?
        .first()?
        .as_str()
        .map(str::to_string)
}

/// True when a parsed config already uses OpenCode 2's native MCP shape (`mcp.servers` is an
/// object), so memtrail's server goes there too.
pub fn uses_v2_mcp_shape(config: &Value) -> bool {
    config
        .get(MCP_KEY)
        .and_then(|m| m.get(V2_SERVERS_KEY))
        .is_some_and(Value::is_object)
}

/// The binary a version of memtrail's plugin runs (its `const MEMTRAIL_BIN = "…"` line).
pub fn plugin_binary(text: &str) -> Option<String> {
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("const MEMTRAIL_BIN ="))?;
    serde_json::from_str::<String>(line.trim().trim_end_matches(';')).ok()
}

/// OpenCode: `docs/agents/opencode.md#what-memtrail-registers` (the plugin in `<config>/plugins/`,
/// in the module shape the installed version loads; `mcp.memtrail` in `opencode.jsonc` or
/// `opencode.json`).
pub(crate) fn spec(ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
    let (env, binary) = (ctx.env, ctx.binary);
    let loc = Locations::resolve(env);
    let bad = || SpecError::BadBinary(binary.to_path_buf());
    let version = env.version_of(EXECUTABLE, &["opencode-ai", "opencode"]);
    let api = super::PluginApi::for_version(version.as_deref());
    let major = version
        .as_deref()
        .and_then(super::parse_version)
        .map(|v| v.0);
    // A config already in OpenCode 2's native shape gets memtrail's server in that shape (unless
    // the installed OpenCode is known to be 1.x); everything else gets the V1 shape, which both
    // read.
    let v2 = major.is_none_or(|m| m >= 2)
        && (ctx.read_jsonc)(&loc.config_file).is_some_and(|v| uses_v2_mcp_shape(&v));
    let mcp = if v2 {
        mcp_item(
            &[MCP_KEY, V2_SERVERS_KEY],
            MCP_SERVER_NAME,
            mcp_server_entry_v2(binary).ok_or_else(bad)?,
            &[],
            mcp_server_program,
        )
    } else {
        mcp_item(
            &[MCP_KEY],
            MCP_SERVER_NAME,
            mcp_server_entry(binary).ok_or_else(bad)?,
            &[],
            mcp_server_program,
        )
    };
    let plugin = FileSpec {
        path: loc.plugin.clone(),
        body: Body::Whole(WholeItem {
            label: "plugin memtrail".to_string(),
            content: super::plugin_source(binary, api),
            owned_dirs: Vec::new(),
            is_ours: Some(super::is_memtrail_plugin),
            points_at: Some(plugin_binary),
            retired: false,
        }),
        new_file_mode: None,
        strict_json: None,
    };
    Ok(AgentSpec {
        off_switches: Vec::new(),
        files: vec![
            plugin,
            json_file(&loc.config_file, vec![mcp]),
            skill_file(
                &loc.skill,
                SKILL_MD,
                crate::codex::registration::is_memtrail_skill,
            ),
        ],
        config_dirs: vec![loc.config_dir, loc.data_dir],
        executables: vec![EXECUTABLE.to_string()],
        version,
        trust: None,
        advice: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Env;
    use crate::opencode::{PluginApi, is_memtrail_plugin, plugin_source};

    #[test]
    fn plugin_and_entries() {
        let bin = Path::new("/opt/a \"b\"/memtrail");
        let src = plugin_source(bin, PluginApi::Current);
        assert!(is_memtrail_plugin(&src));
        assert_eq!(plugin_binary(&src).as_deref(), bin.to_str());
        let legacy = plugin_source(bin, PluginApi::Legacy);
        assert_ne!(legacy, src);
        assert_eq!(plugin_binary(&legacy).as_deref(), bin.to_str());
        let e = mcp_server_entry(Path::new("/usr/bin/memtrail")).unwrap();
        assert_eq!(mcp_server_program(&e).as_deref(), Some("/usr/bin/memtrail"));
        assert!(uses_v2_mcp_shape(&json!({"mcp": {"servers": {}}})));
        assert!(!uses_v2_mcp_shape(&json!({"mcp": {"x": {}}})));
        let l = Locations::resolve(&Env::sandbox(Path::new("/h")));
        assert_eq!(
            l.plugin,
            Path::new("/h/.config/opencode/plugins/memtrail.ts")
        );
        assert_eq!(
            l.config_file,
            Path::new("/h/.config/opencode/opencode.json")
        );
    }
}
