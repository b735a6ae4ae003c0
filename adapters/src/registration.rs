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

/// True when `text` is memtrail's skill (any version): its front matter names it `memtrail`.
pub fn is_memtrail_skill(text: &str) -> bool {
    text.starts_with("---") && text.lines().take(10).any(|l| l.trim() == "name: memtrail")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
