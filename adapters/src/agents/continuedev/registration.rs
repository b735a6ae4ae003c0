//! What memtrail registers for Continue's CLI: the skill and the MCP server.
//!
//! Sources: `docs/agents/continue.md#what-memtrail-registers`, checked against `@continuedev/cli`
//! 1.5.47 (`src/util/loadMarkdownSkills.ts`: skills in `<config>/skills/<name>/SKILL.md`, shown
//! to the model through its `Skills` tool; `src/configLoader.ts` and `src/services/MCPService.ts`:
//! the MCP servers of `<config>/config.yaml`'s `mcpServers` list, `{name, command, args, env}`).
//!
//! - **An MCP server** `memtrail` = `- name: memtrail` / `command: <binary>` / `args: [mcp]`
//!   (block style) in `mcpServers` of `config.yaml`, only when that file exists: `cn` without a
//!   `config.yaml` uses the Continue Hub's default config, which a file memtrail created would
//!   replace. `cn` 1.5.47 ignores `<config>/mcpServers/*.yaml` (checked with the real `cn`), so
//!   the user's `config.yaml` is edited (surgically, see the installer's YAML editor).
//! - **A skill** at `<config>/skills/memtrail/SKILL.md`.
//!
//! Continue has no hooks memtrail can use (1.5.47 fires only PreToolUse and PostToolUse): its
//! sessions come in by `memtrail import`.

use super::paths::Locations;
use crate::spec::*;

/// Continue's CLI executable, looked up on `PATH` to detect an installation.
pub const EXECUTABLE: &str = "cn";

/// The top-level list of `config.yaml` holding MCP servers.
pub const MCP_SERVERS_KEY: &str = "mcpServers";

/// The name memtrail's MCP server is registered under.
pub const MCP_SERVER_NAME: &str = "memtrail";

/// memtrail's MCP server item in `config.yaml`: `name: memtrail`, `command: <binary>`, `args:
/// [mcp]`; `None` when the binary's path is not UTF-8.
pub fn mcp_item(binary: &std::path::Path) -> Option<YamlItem> {
    Some(YamlItem {
        label: format!("MCP server {MCP_SERVER_NAME}"),
        list_key: MCP_SERVERS_KEY.to_string(),
        name_key: "name".to_string(),
        name: MCP_SERVER_NAME.to_string(),
        keys: vec![
            (
                "command".to_string(),
                TomlValue::Str(binary.to_str()?.to_string()),
            ),
            (
                "args".to_string(),
                TomlValue::Strings(vec!["mcp".to_string()]),
            ),
        ],
    })
}

/// The skill (from `skills/agents/memtrail/SKILL.md`).
pub const SKILL_MD: &str = include_str!("../../../../skills/agents/memtrail/SKILL.md");

/// Continue: `docs/agents/continue.md#what-memtrail-registers` (the MCP server in an existing
/// `config.yaml`, the personal skill).
pub(crate) fn spec(ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
    let env = ctx.env;
    let loc = Locations::resolve(env);
    let mut files = Vec::new();
    if loc.config_yaml.is_file() {
        let item = mcp_item(ctx.binary).ok_or_else(|| SpecError::BadBinary(ctx.binary.into()))?;
        files.push(FileSpec {
            path: loc.config_yaml.clone(),
            body: Body::Yaml(vec![item]),
            new_file_mode: None,
            strict_json: None,
        });
    }
    files.push(skill_file(
        &loc.skill,
        SKILL_MD,
        crate::registration::is_memtrail_skill,
    ));
    Ok(AgentSpec {
        off_switches: Vec::new(),
        files,
        config_dirs: vec![loc.config_dir],
        executables: vec![EXECUTABLE.to_string()],
        // npm links `cn` to the package's `dist/cn.js`.
        version: env.version_of(EXECUTABLE, &["@continuedev/cli"]),
        trust: None,
        advice: Vec::new(),
    })
}
