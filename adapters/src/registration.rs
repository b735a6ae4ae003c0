//! Registration helpers shared by the agents whose hooks are shell-command handlers
//! (`{"type": "command", "command": "<program> <args…>"}`: Codex `hooks.json`, Gemini CLI,
//! Cursor, VS Code). Each agent's `registration` module keeps its own dialect (events, keys,
//! timeouts) and passes these to the installer through its own functions.

use crate::shell::{shell_quote, shell_split, unwrap_command};
use serde_json::Value;

/// The program and arguments of a command handler, its `command` split as `sh` would.
/// A wrapped memtrail hook (`nice -n 5 /a/memtrail hook cursor`) gives memtrail's program and
/// arguments ([`unwrap_command`]).
/// `type` must be `"command"`, or may be absent when `type_optional` (Cursor writes no type).
/// `None` for any other handler.
pub fn command_program_and_args(
    handler: &Value,
    type_optional: bool,
) -> Option<(String, Vec<String>)> {
    let obj = handler.as_object()?;
    match obj.get("type") {
        None if type_optional => {}
        Some(Value::String(t)) if t == "command" => {}
        _ => return None,
    }
    let mut words = unwrap_command(shell_split(obj.get("command")?.as_str()?)?).into_iter();
    Some((words.next()?, words.collect()))
}

/// `handler` with its `command` re-quoted the way memtrail writes commands, so that two
/// spellings of the same command (other quoting, or a wrapper the user put around memtrail's
/// hook: [`unwrap_command`]) compare equal.
pub fn canonical_command_handler(handler: &Value) -> Value {
    let mut h = handler.clone();
    if let Some(obj) = h.as_object_mut()
        && let Some(Value::String(cmd)) = obj.get("command")
        && let Some(words) = shell_split(cmd).map(unwrap_command)
        && !words.is_empty()
    {
        let c = words
            .iter()
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" ");
        obj.insert("command".into(), Value::String(c));
    }
    h
}

/// The program of an MCP server entry `{"command": "<program>", …}`.
pub fn entry_command(entry: &Value) -> Option<String> {
    entry.get("command")?.as_str().map(str::to_string)
}

/// How the `description:` of every skill memtrail has shipped begins (skills/*/SKILL.md, each
/// version in the repository's history).
const SKILL_DESCRIPTIONS: [&str; 2] = [
    "description: Search and restore the user's past coding-agent sessions",
    "description: Search the user's past coding-agent sessions",
];

/// True when `text` is memtrail's skill (any version): its front matter (the lines between the
/// first two `---`) names it `memtrail` and has the description memtrail writes. A skill of
/// the user's own that is also named `memtrail` is not memtrail's: install refuses to replace
/// it and uninstall leaves it.
pub fn is_memtrail_skill(text: &str) -> bool {
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return false;
    }
    let front: Vec<&str> = lines
        .take(10)
        .take_while(|l| l.trim_end() != "---")
        .collect();
    front.iter().any(|l| l.trim() == "name: memtrail")
        && front
            .iter()
            .any(|l| SKILL_DESCRIPTIONS.iter().any(|d| l.starts_with(d)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every skill memtrail ships is recognised; a user's own skill named `memtrail` is not.
    #[test]
    fn memtrail_skills_and_a_users_own_of_the_same_name() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills");
        let mut shipped = 0;
        for dir in ["memtrail", "agents/memtrail", "gemini/memtrail"] {
            let path = root.join(dir).join("SKILL.md");
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            assert!(is_memtrail_skill(&text), "{}", path.display());
            shipped += 1;
        }
        assert!(shipped >= 1);
        // The first version's description.
        assert!(is_memtrail_skill(
            "---\nname: memtrail\ndescription: Search the user's past coding-agent sessions (this agent and others)\n---\nbody\n"
        ));
        // The user's own skill of the same name, and look-alikes.
        for theirs in [
            "---\nname: memtrail\ndescription: my own skill\n---\nmine\n",
            "---\nname: memtrail\n---\ndescription: Search and restore the user's past coding-agent sessions\n",
            "name: memtrail\ndescription: Search and restore the user's past coding-agent sessions\n",
            "---\nname: other\ndescription: Search and restore the user's past coding-agent sessions\n---\n",
            "",
        ] {
            assert!(!is_memtrail_skill(theirs), "{theirs:?}");
        }
    }

    /// A hook the user wrapped gives memtrail's program and arguments, and compares equal to
    /// the plain one.
    #[test]
    fn wrapped_command_handlers() {
        let h = json!({"type": "command", "command": "nice -n 5 '/a b/memtrail' hook codex"});
        assert_eq!(
            command_program_and_args(&h, false),
            Some((
                "/a b/memtrail".to_string(),
                vec!["hook".into(), "codex".into()]
            ))
        );
        assert_eq!(
            canonical_command_handler(&h),
            json!({"type": "command", "command": "'/a b/memtrail' hook codex"})
        );
        let h = json!({"command": "echo /a/memtrail hook cursor"});
        assert_eq!(
            command_program_and_args(&h, true)
                .map(|(p, _)| p)
                .as_deref(),
            Some("echo")
        );
    }
}
