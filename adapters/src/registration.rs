//! Registration helpers shared by the agents whose hooks are shell-command handlers
//! (`{"type": "command", "command": "<program> <args…>"}`: Codex `hooks.json`, Gemini CLI,
//! Cursor, VS Code). Each agent's `registration` module keeps its own dialect (events, keys,
//! timeouts) and passes these to the installer through its own functions.

use crate::claude::registration::{shell_quote, shell_split};
use serde_json::Value;

/// The program and arguments of a command handler, its `command` split as `sh` would.
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
    let mut words = shell_split(obj.get("command")?.as_str()?)?.into_iter();
    Some((words.next()?, words.collect()))
}

/// `handler` with its `command` re-quoted the way memtrail writes commands, so that two
/// spellings of the same command (other quoting) compare equal.
pub fn canonical_command_handler(handler: &Value) -> Value {
    let mut h = handler.clone();
    if let Some(obj) = h.as_object_mut()
        && let Some(Value::String(cmd)) = obj.get("command")
        && let Some(words) = shell_split(cmd)
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
