//! What memtrail registers in Roo Code's config: its MCP server and the skill (Roo Code runs no
//! hooks).
//!
//! Sources: `docs/agents/roo.md#what-memtrail-registers`, checked against Roo Code 3.52.1
//! (`src/services/mcp/McpHub.ts`: a stdio server `{type?: "stdio", command, args?, …}` in
//! `mcp_settings.json` `mcpServers`, read with `JSON.parse`; `src/utils/mcp-name.ts`: the model
//! sees `mcp--<server>--<tool>`; `src/services/skills/SkillsManager.ts`: global skills in
//! `~/.roo/skills/<name>/SKILL.md`).
//!
//! - **An MCP server** `memtrail` = `{"type":"stdio","command":"<binary>","args":["mcp"]}` in
//!   `<extension folder>/settings/mcp_settings.json` of each editor that has Roo Code (VS Code's
//!   when none has yet).
//! - **A skill** at `~/.roo/skills/memtrail/SKILL.md` (the generic skill).

pub use super::paths::Locations;
use crate::spec::*;

/// The Roo Code CLI (npm `@roo-code/cli`, `roo`), looked up on `PATH` to detect an installation.
pub const EXECUTABLE: &str = "roo";

/// The skill (from `skills/agents/memtrail/SKILL.md`, which names every agent's tool names).
pub const SKILL_MD: &str = include_str!("../../../../skills/agents/memtrail/SKILL.md");

/// Why Roo Code's MCP settings must stay strict JSON.
const MCP_NOT_STRICT: &str =
    "Roo Code reads mcp_settings.json with JSON.parse: it starts none of its MCP servers";

/// Roo Code: `docs/agents/roo.md#what-memtrail-registers`.
pub(crate) fn spec(ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
    let (env, binary) = (ctx.env, ctx.binary);
    let loc = Locations::resolve(env);
    let entry = crate::cline::registration::mcp_server_entry(binary)
        .ok_or_else(|| SpecError::BadBinary(binary.to_path_buf()))?;
    let mut files: Vec<FileSpec> = loc
        .registered_dirs
        .iter()
        .map(|d| {
            let path = d.join("settings").join(super::paths::MCP_SETTINGS_FILE);
            crate::cline::registration::mcp_file(&path, entry.clone(), MCP_NOT_STRICT)
        })
        .collect();
    files.push(skill_file(
        &loc.skill,
        SKILL_MD,
        crate::registration::is_memtrail_skill,
    ));
    let mut config_dirs = vec![loc.global_dir];
    config_dirs.extend(loc.extension_dirs);
    Ok(AgentSpec {
        off_switches: Vec::new(),
        files,
        config_dirs,
        executables: vec![EXECUTABLE.to_string()],
        version: env.version_of(EXECUTABLE, &["@roo-code/cli"]),
        trust: None,
        advice: Vec::new(),
    })
}
