//! What memtrail registers in Cline's config, in Cline's own dialect.
//!
//! Sources: `docs/agents/cline.md#what-memtrail-registers`, checked against Cline v3.89.2 and
//! 4.1.13 (`core/hooks/utils.ts`: `VALID_HOOK_TYPES`, global hooks in
//! `~/Documents/Cline/Hooks/<HookName>`, an extensionless executable on Linux and macOS;
//! `core/hooks/hook-factory.ts`: the payload on stdin, a JSON reply `{cancel,
//! contextModification, errorMessage}` on stdout, none needed; `services/mcp/schemas.ts`: a
//! stdio server `{type?: "stdio", command, args?, …}` in `cline_mcp_settings.json`
//! `mcpServers`; `core/storage/disk.ts`: global skills in `~/.cline/skills/<name>/SKILL.md`).
//!
//! - **Hooks**: one file per event of [`HOOK_EVENTS`] in `~/Documents/Cline/Hooks/`, mode 0700,
//!   [`hook_script`]: `exec <binary> hook cline`. A user's own hook file of the same name is
//!   never overwritten (install reports it).
//! - **An MCP server** `memtrail` = `{"type":"stdio","command":"<binary>","args":["mcp"]}` in
//!   `~/.cline/data/settings/cline_mcp_settings.json` (Cline 4.x, the CLI) and in the
//!   `settings/cline_mcp_settings.json` of each editor's extension folder that exists (Cline
//!   3.x). Cline shows its tools to the model through `use_mcp_tool` (`server_name` `memtrail`,
//!   `tool_name` the tool).
//! - **A skill** at `~/.cline/skills/memtrail/SKILL.md` (the generic skill).

pub use super::paths::Locations;
use crate::shell::{is_memtrail_program, shell_quote, shell_split, unwrap_command};
use crate::spec::*;
use serde_json::{Value, json};
use std::path::Path;

/// The Cline CLI's executable (npm `cline`), looked up on `PATH` to detect an installation.
pub const EXECUTABLE: &str = "cline";

/// The `<agent>` argument of `memtrail hook <agent>`: the agent's short name.
pub const HOOK_AGENT_ARG: &str = super::adapter::NAMES.name;

/// The hooks memtrail installs (Cline's `HookType` names): `TaskStart` and `TaskResume` (context
/// into the task), `UserPromptSubmit` (the turn before is stored when the next prompt comes),
/// `TaskComplete` and `TaskCancel` (capture), `PreCompact` (snapshot).
pub const HOOK_EVENTS: [&str; 6] = [
    "TaskStart",
    "TaskResume",
    "UserPromptSubmit",
    "TaskComplete",
    "TaskCancel",
    "PreCompact",
];

/// The top-level key of `cline_mcp_settings.json` holding MCP servers.
pub const MCP_SERVERS_KEY: &str = "mcpServers";

/// The name memtrail's MCP server is registered under.
pub const MCP_SERVER_NAME: &str = "memtrail";

/// The second line of memtrail's hook scripts, which tells people whose file it is.
pub const SCRIPT_MARK: &str =
    "# memtrail: stores this Cline task (memtrail uninstall removes this file)";

/// The skill (from `skills/agents/memtrail/SKILL.md`, which names every agent's tool names).
pub const SKILL_MD: &str = include_str!("../../../../skills/agents/memtrail/SKILL.md");

/// Why Cline's MCP settings must stay strict JSON.
const MCP_NOT_STRICT: &str =
    "Cline reads cline_mcp_settings.json with JSON.parse: it starts none of its MCP servers";

/// `<binary, shell-quoted if needed> hook cline`; `None` when the path is not UTF-8.
pub fn hook_command(binary: &Path) -> Option<String> {
    Some(format!(
        "{} hook {HOOK_AGENT_ARG}",
        shell_quote(binary.to_str()?)
    ))
}

/// memtrail's hook script: `#!/bin/sh`, [`SCRIPT_MARK`], `exec <hook command>` (no newline at
/// the end: the command is the script's last word).
pub fn hook_script(binary: &Path) -> Option<String> {
    Some(format!(
        "#!/bin/sh\n{SCRIPT_MARK}\nexec {}",
        hook_command(binary)?
    ))
}

/// The program of a hook script whose last non-empty line runs memtrail with `hook cline`
/// (through `exec` or another wrapper), else `None`.
pub fn script_program(text: &str) -> Option<String> {
    let last = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let mut words = unwrap_command(shell_split(last.trim())?).into_iter();
    let program = words.next()?;
    let args: Vec<String> = words.collect();
    (is_memtrail_program(&program) && args == ["hook", HOOK_AGENT_ARG]).then_some(program)
}

/// True when `text` is memtrail's hook script (any binary).
pub fn is_memtrail_script(text: &str) -> bool {
    text.starts_with("#!") && script_program(text).is_some()
}

/// memtrail's MCP server entry: `{"type":"stdio","command":"<binary>","args":["mcp"]}`.
pub fn mcp_server_entry(binary: &Path) -> Option<Value> {
    Some(json!({ "type": "stdio", "command": binary.to_str()?, "args": ["mcp"] }))
}

/// An MCP settings file holding memtrail's server (shared with Roo Code's `mcp_settings.json`).
pub(crate) fn mcp_file(path: &Path, entry: Value, not_strict: &'static str) -> FileSpec {
    let item = mcp_item(
        &[MCP_SERVERS_KEY],
        MCP_SERVER_NAME,
        entry,
        &[],
        crate::registration::entry_command,
    );
    FileSpec {
        strict_json: Some(not_strict),
        ..json_file(path, vec![item])
    }
}

/// Cline: `docs/agents/cline.md#what-memtrail-registers`.
pub(crate) fn spec(ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
    let (env, binary) = (ctx.env, ctx.binary);
    let loc = Locations::resolve(env);
    let bad = || SpecError::BadBinary(binary.to_path_buf());
    let script = hook_script(binary).ok_or_else(bad)?;
    let entry = mcp_server_entry(binary).ok_or_else(bad)?;
    let mut files: Vec<FileSpec> = HOOK_EVENTS
        .iter()
        .map(|event| FileSpec {
            path: loc.hooks_dir.join(event),
            body: Body::Whole(WholeItem {
                label: format!("hook {event}"),
                content: script.clone(),
                owned_dirs: Vec::new(),
                is_ours: Some(is_memtrail_script),
                points_at: Some(script_program),
                retired: false,
            }),
            new_file_mode: Some(0o700),
            strict_json: None,
        })
        .collect();
    files.push(mcp_file(&loc.data_mcp, entry.clone(), MCP_NOT_STRICT));
    for dir in loc.extension_dirs.iter().filter(|d| d.is_dir()) {
        let path = dir.join("settings").join(super::paths::MCP_SETTINGS_FILE);
        files.push(mcp_file(&path, entry.clone(), MCP_NOT_STRICT));
    }
    files.push(skill_file(
        &loc.skill,
        SKILL_MD,
        crate::registration::is_memtrail_skill,
    ));
    let mut config_dirs = vec![loc.home_dir];
    config_dirs.extend(loc.extension_dirs);
    Ok(AgentSpec {
        off_switches: Vec::new(),
        files,
        config_dirs,
        executables: vec![EXECUTABLE.to_string()],
        version: env.version_of(EXECUTABLE, &["cline"]),
        trust: None,
        advice: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Env;

    #[test]
    fn scripts_entries_and_locations() {
        let s = hook_script(Path::new("/opt/mem trail/memtrail")).unwrap();
        assert_eq!(
            s,
            "#!/bin/sh\n# memtrail: stores this Cline task (memtrail uninstall removes this \
             file)\nexec '/opt/mem trail/memtrail' hook cline"
        );
        assert!(is_memtrail_script(&s));
        assert_eq!(
            script_program(&s).as_deref(),
            Some("/opt/mem trail/memtrail")
        );
        assert!(!is_memtrail_script(
            "#!/bin/sh\nexec /x/memtrail hook roo\n"
        ));
        assert!(!is_memtrail_script("#!/bin/sh\necho hello\n"));
        assert!(is_memtrail_script(
            "#!/bin/bash\nnice -n 5 /x/memtrail hook cline\n\n"
        ));
        assert_eq!(
            mcp_server_entry(Path::new("/b/memtrail")).unwrap(),
            json!({"type": "stdio", "command": "/b/memtrail", "args": ["mcp"]})
        );
        let l = Locations::resolve(&Env::sandbox(Path::new("/h")));
        assert_eq!(l.hooks_dir, Path::new("/h/Documents/Cline/Hooks"));
        assert_eq!(
            l.data_mcp,
            Path::new("/h/.cline/data/settings/cline_mcp_settings.json")
        );
        assert_eq!(l.skill, Path::new("/h/.cline/skills/memtrail/SKILL.md"));
        assert_eq!(l.data_sessions, Path::new("/h/.cline/data/sessions"));
        let env = Env::sandbox(Path::new("/h"))
            .with_var("CLINE_DIR", "/c")
            .with_var("XDG_CONFIG_HOME", "/x");
        let l = Locations::resolve(&env);
        assert_eq!(l.data_tasks, Path::new("/c/data/tasks"));
        assert_eq!(
            l.task_roots()[1..],
            [
                "/x/Code/User/globalStorage/saoudrizwan.claude-dev/tasks",
                "/x/Code - Insiders/User/globalStorage/saoudrizwan.claude-dev/tasks",
                "/h/.vscode-server/data/User/globalStorage/saoudrizwan.claude-dev/tasks",
                "/h/.vscode-server-insiders/data/User/globalStorage/saoudrizwan.claude-dev/tasks",
                "/x/VSCodium/User/globalStorage/saoudrizwan.claude-dev/tasks",
                "/x/Cursor/User/globalStorage/saoudrizwan.claude-dev/tasks",
                "/x/Windsurf/User/globalStorage/saoudrizwan.claude-dev/tasks",
            ]
            .map(std::path::PathBuf::from)
        );
        let env = Env::sandbox(Path::new("/h")).with_var("CLINE_DATA_DIR", "/d");
        assert_eq!(Locations::resolve(&env).data_tasks, Path::new("/d/tasks"));
        assert_eq!(
            Locations::resolve(&env).data_sessions,
            Path::new("/d/sessions")
        );
        let env = env.with_var("CLINE_SESSION_DATA_DIR", "/s");
        assert_eq!(Locations::resolve(&env).data_sessions, Path::new("/s"));
        assert!(crate::registration::is_memtrail_skill(SKILL_MD));
    }
}
