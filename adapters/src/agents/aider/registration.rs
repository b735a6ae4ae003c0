//! What memtrail registers for Aider: nothing. Aider has no hooks, no MCP client and no
//! skills; memtrail imports its chat logs (`docs/agents/aider.md`).

pub use super::paths::Locations;
use crate::spec::*;

/// Aider's executable, looked up on `PATH` to detect an installation.
pub const EXECUTABLE: &str = "aider";

/// Aider: no file (import only).
pub(crate) fn spec(ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
    let loc = Locations::resolve(ctx.env);
    Ok(AgentSpec {
        off_switches: Vec::new(),
        files: Vec::new(),
        config_dirs: vec![loc.aider_dir],
        executables: vec![EXECUTABLE.to_string()],
        // A PyPI package (`aider-chat`), not npm: no version read.
        version: None,
        trust: None,
        advice: Vec::new(),
    })
}
