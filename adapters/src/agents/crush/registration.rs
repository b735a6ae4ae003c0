//! What memtrail registers in Crush's config: its MCP server and the skill. No hooks: Crush
//! runs only `PreToolUse` hooks, so memtrail imports its sessions (`docs/agents/crush.md`).
//!
//! Sources: `internal/config/config.go` (`MCPConfig`: `{"type": "stdio", "command", "args"}`
//! under `"mcp"` of `crush.json`), `internal/config/load.go` (`GlobalConfig`,
//! `GlobalSkillsDirs`), `internal/agent/tools/mcp-tools.go` (tools named
//! `mcp_<server>_<tool>`).

pub use super::paths::Locations;
use crate::spec::*;
use serde_json::{Value, json};
use std::path::Path;

/// Crush's executable, looked up on `PATH` to detect an installation.
pub const EXECUTABLE: &str = "crush";

/// The key of `crush.json` holding MCP servers.
pub const MCP_KEY: &str = "mcp";

/// The name memtrail's MCP server is registered under (tools `mcp_memtrail_<tool>`).
pub const MCP_SERVER_NAME: &str = "memtrail";

/// The skill (from `skills/agents/memtrail/SKILL.md`, which names every agent's tool names).
pub const SKILL_MD: &str = include_str!("../../../../skills/agents/memtrail/SKILL.md");

/// memtrail's MCP server entry: `{"type":"stdio","command":"<binary>","args":["mcp"]}`.
pub fn mcp_server_entry(binary: &Path) -> Option<Value> {
    Some(json!({ "type": "stdio", "command": binary.to_str()?, "args": ["mcp"] }))
}

/// Crush: `docs/agents/crush.md#what-memtrail-registers`.
pub(crate) fn spec(ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
    let (env, binary) = (ctx.env, ctx.binary);
    let loc = Locations::resolve(env);
    let bad = || SpecError::BadBinary(binary.to_path_buf());
    let mcp = mcp_item(
        &[MCP_KEY],
        MCP_SERVER_NAME,
        mcp_server_entry(binary).ok_or_else(bad)?,
        &[],
        crate::registration::entry_command,
    );
    Ok(AgentSpec {
        off_switches: Vec::new(),
        files: vec![
            json_file(&loc.config_file, vec![mcp]),
            skill_file(&loc.skill, SKILL_MD, crate::registration::is_memtrail_skill),
        ],
        config_dirs: vec![loc.config_dir, loc.data_dir],
        executables: vec![EXECUTABLE.to_string()],
        // npm `@charmland/crush` (its install script downloads the binary).
        version: env.version_of(EXECUTABLE, &["@charmland/crush"]),
        trust: None,
        advice: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Env;

    #[test]
    fn entry_and_locations() {
        assert_eq!(
            mcp_server_entry(Path::new("/b/memtrail")).unwrap(),
            json!({"type": "stdio", "command": "/b/memtrail", "args": ["mcp"]})
        );
        let l = Locations::resolve(&Env::sandbox(Path::new("/h")));
        assert_eq!(l.config_file, Path::new("/h/.config/crush/crush.json"));
        assert_eq!(
            l.skill,
            Path::new("/h/.config/crush/skills/memtrail/SKILL.md")
        );
        assert_eq!(l.projects, Path::new("/h/.local/share/crush/projects.json"));
        let l = Locations::resolve(
            &Env::sandbox(Path::new("/h"))
                .with_var("CRUSH_GLOBAL_CONFIG", "/c")
                .with_var("CRUSH_GLOBAL_DATA", "/d")
                .with_var("CRUSH_SKILLS_DIR", "/s"),
        );
        assert_eq!(l.config_file, Path::new("/c/crush.json"));
        assert_eq!(l.projects, Path::new("/d/projects.json"));
        assert_eq!(l.skill, Path::new("/s/memtrail/SKILL.md"));
        assert!(SKILL_MD.contains("Crush"));
    }
}
