//! The agents' own switches that stop memtrail's entries without removing them: `status`
//! shows each covered entry as in place but not run, with the setting to change, and never as
//! healthy-and-running. Settings from each agent's documentation or settings schema: Claude
//! Code `disableAllHooks`; Gemini CLI `hooksConfig.enabled`, `hooksConfig.disabled` (hook
//! names), `mcp.excluded` (server names); Codex `enabled` in an `[mcp_servers.<name>]` table.

use crate::common::AgentBox;
use memtrail_installer::{Agent, ItemState};

/// The reasons shown for the items whose label starts with `prefix` (empty unless every one
/// of them is shown as not run); panics when any other item is not present.
fn off_items(b: &AgentBox, prefix: &str) -> Vec<String> {
    let st = b.status();
    let mut out = Vec::new();
    for i in &st.items {
        match &i.state {
            ItemState::Untrusted { reason } if i.item.starts_with(prefix) => {
                out.push(reason.clone())
            }
            ItemState::Present => {}
            other => {
                if i.item.starts_with(prefix) {
                    return Vec::new();
                }
                panic!("{}: {other:?}\n{st}", i.item)
            }
        }
    }
    out
}

fn edit_json(path: &std::path::Path, f: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

#[test]
fn claude_code_disable_all_hooks() {
    let b = AgentBox::new(Agent::Claude);
    std::fs::create_dir_all(b.home.join(".claude")).unwrap();
    b.install();
    assert!(off_items(&b, "hook").is_empty());
    let settings = b.home.join(".claude/settings.json");
    edit_json(&settings, |v| v["disableAllHooks"] = true.into());
    let off = off_items(&b, "hook");
    let hooks = b
        .status()
        .items
        .iter()
        .filter(|i| i.item.starts_with("hook"))
        .count();
    assert!(hooks >= 4);
    assert_eq!(off.len(), hooks, "every hook: {off:?}");
    assert!(off[0].contains("disableAllHooks"), "{off:?}");
    // `status` shows what is the matter on each line and what to do once after them (the
    // reason was split inside its parentheses: `… (Claude Code runs no hook (…/settings.json)`
    // then `what to do: remove it to capture again)`).
    let shown = b.status().to_string();
    assert!(
        shown.contains(&format!(
            "  hook Stop: switched off: settings.json has \"disableAllHooks\": true, so Claude Code runs no hook ({})\n",
            settings.display()
        )) && shown.contains("\n  what to do: remove it to capture again\n"),
        "{shown}"
    );
    // The MCP server is not covered; `false` is not off.
    edit_json(&settings, |v| v["disableAllHooks"] = false.into());
    assert!(off_items(&b, "hook").is_empty());
}

#[test]
fn gemini_cli_hooks_config_and_excluded_servers() {
    let b = AgentBox::new(Agent::Gemini);
    std::fs::create_dir_all(b.home.join(".gemini")).unwrap();
    b.install();
    let settings = b.home.join(".gemini/settings.json");
    assert!(off_items(&b, "hook").is_empty());
    edit_json(&settings, |v| {
        v["hooksConfig"] = serde_json::json!({"enabled": false})
    });
    let off = off_items(&b, "hook");
    assert!(!off.is_empty() && off[0].contains("hooksConfig"), "{off:?}");
    // Switched off, not "untrusted".
    let shown = b.status().to_string();
    assert!(
        shown.contains(": switched off: settings.json has") && !shown.contains("untrusted"),
        "{shown}"
    );
    edit_json(
        &settings,
        |v| {
            v["hooksConfig"] =
                serde_json::json!({"enabled": true, "disabled": ["other", "memtrail"]})
        },
    );
    let off = off_items(&b, "hook");
    assert!(
        !off.is_empty() && off[0].contains("hooksConfig.disabled"),
        "{off:?}"
    );
    // Another hook's name is not memtrail's.
    edit_json(&settings, |v| {
        v["hooksConfig"] = serde_json::json!({"disabled": ["other"]})
    });
    assert!(off_items(&b, "hook").is_empty());
    assert!(off_items(&b, "MCP server").is_empty());
    edit_json(&settings, |v| {
        v["mcp"] = serde_json::json!({"excluded": ["memtrail"]})
    });
    let off = off_items(&b, "MCP server");
    assert_eq!(off.len(), 1, "{off:?}");
    assert!(off[0].contains("mcp.excluded"), "{off:?}");
}

#[test]
fn codex_mcp_server_enabled_false() {
    let b = AgentBox::new(Agent::Codex);
    std::fs::create_dir_all(b.home.join(".codex")).unwrap();
    b.install();
    let config = b.home.join(".codex/config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}enabled = false\n")).unwrap();
    let st = b.status();
    let mcp = st
        .items
        .iter()
        .find(|i| i.item.starts_with("MCP server"))
        .unwrap();
    assert!(
        matches!(&mcp.state, ItemState::Untrusted { reason } if reason.contains("enabled = false")),
        "{st}"
    );
    assert!(
        !st.to_string().contains("MCP server memtrail: present"),
        "{st}"
    );
}
