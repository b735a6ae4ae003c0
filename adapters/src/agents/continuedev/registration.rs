//! What memtrail registers for Continue's CLI: the skill.
//!
//! Sources: `docs/agents/continue.md#what-memtrail-registers`, checked against `@continuedev/cli`
//! 1.5.47 (`src/util/loadMarkdownSkills.ts`: skills in `<config>/skills/<name>/SKILL.md`, shown
//! to the model through its `Skills` tool).
//!
//! Continue has no hooks memtrail can use (1.5.47 fires only PreToolUse and PostToolUse): its
//! sessions come in by `memtrail import`. Its MCP servers live in `config.yaml`, a YAML file
//! memtrail does not edit yet (`docs/agents/continue.md#mcp` gives the entry to add by hand).

use super::paths::Locations;
use crate::spec::*;

/// Continue's CLI executable, looked up on `PATH` to detect an installation.
pub const EXECUTABLE: &str = "cn";

/// The skill (from `skills/agents/memtrail/SKILL.md`).
pub const SKILL_MD: &str = include_str!("../../../../skills/agents/memtrail/SKILL.md");

/// Continue: `docs/agents/continue.md#what-memtrail-registers` (the personal skill).
pub(crate) fn spec(ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
    let env = ctx.env;
    let loc = Locations::resolve(env);
    Ok(AgentSpec {
        files: vec![skill_file(
            &loc.skill,
            SKILL_MD,
            crate::registration::is_memtrail_skill,
        )],
        config_dirs: vec![loc.config_dir],
        executables: vec![EXECUTABLE.to_string()],
        // npm links `cn` to the package's `dist/cn.js`.
        version: env.version_of(EXECUTABLE, &["@continuedev/cli"]),
        trust: None,
        advice: Vec::new(),
    })
}
