//! What memtrail registers for pi: one extension file.
//!
//! Sources: `docs/agents/pi.md#what-memtrail-registers`, checked against pi 0.73.1
//! (`docs/extensions.md`: `~/.pi/agent/extensions/*.ts` are auto-discovered and loaded with jiti;
//! the events `session_start`, `agent_end`, `session_before_compact`, `session_compact`,
//! `session_shutdown`, `before_agent_start`; `pi.registerTool`).
//!
//! pi has no hooks file and no MCP client: memtrail writes **the extension**
//! `<agent>/extensions/memtrail.ts` ([`super::extension_source`], from
//! `templates/pi/memtrail.ts`), a file memtrail owns (recognised by
//! [`super::is_memtrail_extension`]). It runs `<binary> hook pi` on those events and registers
//! memtrail's MCP tools as pi tools `memtrail_<tool>`. No skill: pi's skills would point at
//! tools the extension already describes.

use super::paths::Locations;
use crate::spec::*;

/// pi's executable, looked up on `PATH` to detect an installation.
pub const EXECUTABLE: &str = "pi";

/// The npm package `pi` comes from (for `memtrail status`'s version).
pub const PACKAGE: &str = "@mariozechner/pi-coding-agent";

/// pi: `docs/agents/pi.md#what-memtrail-registers` (the extension in `<agent>/extensions/`).
pub(crate) fn spec(ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
    let (env, binary) = (ctx.env, ctx.binary);
    let loc = Locations::resolve(env);
    binary
        .to_str()
        .ok_or_else(|| SpecError::BadBinary(binary.to_path_buf()))?;
    let extension = FileSpec {
        path: loc.extension.clone(),
        body: Body::Whole(WholeItem {
            label: "extension memtrail".to_string(),
            content: super::extension_source(binary),
            owned_dirs: Vec::new(),
            is_ours: Some(super::is_memtrail_extension),
            points_at: Some(crate::opencode::registration::plugin_binary),
            retired: false,
        }),
        new_file_mode: None,
        strict_json: None,
    };
    Ok(AgentSpec {
        off_switches: Vec::new(),
        files: vec![extension],
        config_dirs: vec![loc.agent_dir],
        executables: vec![EXECUTABLE.to_string()],
        version: env.version_of(EXECUTABLE, &[PACKAGE]),
        trust: None,
        advice: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Env;
    use std::path::Path;

    #[test]
    fn extension_and_locations() {
        let bin = Path::new("/opt/a \"b\"/memtrail");
        let src = super::super::extension_source(bin);
        assert!(super::super::is_memtrail_extension(&src));
        assert!(!src.contains("__MEMTRAIL_BIN__"));
        assert_eq!(
            crate::opencode::registration::plugin_binary(&src).as_deref(),
            bin.to_str()
        );
        assert!(src.contains(r#"run(["hook", "pi"]"#));
        let l = Locations::resolve(&Env::sandbox(Path::new("/h")));
        assert_eq!(
            l.extension,
            Path::new("/h/.pi/agent/extensions/memtrail.ts")
        );
        assert_eq!(l.sessions, Path::new("/h/.pi/agent/sessions"));
        let env = Env::sandbox(Path::new("/h"))
            .with_var("PI_CODING_AGENT_DIR", "~/p")
            .with_var("PI_CODING_AGENT_SESSION_DIR", "/s");
        let l = Locations::resolve(&env);
        assert_eq!(l.extension, Path::new("/h/p/extensions/memtrail.ts"));
        assert_eq!(l.sessions, Path::new("/s"));
    }
}
