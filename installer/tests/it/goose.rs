//! Goose: memtrail's plugin folder `~/.agents/plugins/memtrail/` (hooks in `hooks/hooks.json`,
//! the MCP server in `.mcp.json`, the skill), next to a realistic Goose config that memtrail
//! never touches.

use crate::common;

use common::{AgentBox, round_trip};
use memtrail_adapters::goose::registration as goose;
use memtrail_installer::{Action, Agent, ItemState, apply};
use serde_json::{Value, json};

/// A user's `config.yaml` as Goose writes it (`goose configure`), with a comment: memtrail does
/// not edit it, so it must come out byte-identical.
const CONFIG_YAML: &str = "# goose configuration\nGOOSE_PROVIDER: openai\nGOOSE_MODEL: gpt-4.1\nextensions:\n  developer:\n    bundled: true\n    enabled: true\n    name: developer\n    timeout: 300\n    type: builtin\n";

/// Another plugin's hooks (Open Plugins layout), which stay as they are.
const OTHER_HOOKS: &str = "{\n  \"hooks\": {\n    \"PostToolUse\": [\n      {\n        \"matcher\": \"developer__shell\",\n        \"hooks\": [{\"type\": \"command\", \"command\": \"${PLUGIN_ROOT}/log.sh\"}]\n      }\n    ]\n  }\n}\n";

/// memtrail's plugin folder where the user added a hook of their own to its `hooks.json`.
const USER_EDITED: &str = "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"notify-send 'Goose is done'\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";

fn ours(v: &Value, event: &str) -> Vec<Value> {
    v["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|d| d["hooks"].as_array().into_iter().flatten())
        .filter(|h| goose::is_memtrail_hook_handler(h))
        .cloned()
        .collect()
}

#[test]
fn round_trips_realistic_configs() {
    let cases: Vec<(&str, Option<String>)> = vec![
        ("nothing yet", None),
        (
            "a hook of the user's in memtrail's plugin",
            Some(USER_EDITED.into()),
        ),
        ("CRLF", Some(USER_EDITED.replace('\n', "\r\n"))),
    ];
    for (name, hooks) in cases {
        let b = AgentBox::new(Agent::Goose);
        let plugin = b.home.join(".agents/plugins/memtrail");
        let (hp, mp, skill) = (
            plugin.join("hooks/hooks.json"),
            plugin.join(".mcp.json"),
            plugin.join("skills/memtrail/SKILL.md"),
        );
        let config = b.home.join(".config/goose/config.yaml");
        let other = b.home.join(".agents/plugins/lint/hooks/hooks.json");
        let user_hooks = hooks.is_some();
        round_trip(
            &b,
            name,
            &[
                (hp.clone(), hooks),
                (config.clone(), Some(CONFIG_YAML.into())),
                (other.clone(), Some(OTHER_HOOKS.into())),
            ],
            &|b| {
                let v = b.json(&hp);
                for h in goose::HOOKS {
                    assert_eq!(
                        ours(&v, h.event),
                        [json!({"type": "command",
                                "command": format!("'{}' hook goose", b.bin.display()),
                                "timeout": h.timeout_secs})],
                        "{name}: {}",
                        h.event
                    );
                }
                assert!(v["hooks"].get("SessionStart").is_none());
                if user_hooks {
                    assert_eq!(
                        v["hooks"]["Stop"][0]["hooks"][0]["command"],
                        "notify-send 'Goose is done'"
                    );
                }
                assert_eq!(
                    b.json(&mp),
                    json!({"mcpServers": {"memtrail":
                        {"command": b.bin.to_str().unwrap(), "args": ["mcp"]}}})
                );
                assert_eq!(b.read(&skill), goose::SKILL_MD);
                assert_eq!(b.read(&config), CONFIG_YAML, "config.yaml untouched");
                assert_eq!(b.read(&other), OTHER_HOOKS);
            },
        );
    }
}

#[test]
fn goose_path_root_is_followed_and_a_user_timeout_kept() {
    let b = AgentBox::new(Agent::Goose);
    let root = b.dir.path().join("goose-root");
    let b = b.with_var("GOOSE_PATH_ROOT", &root);
    b.put(&root.join("config/config.yaml"), Some(CONFIG_YAML));
    b.install();
    let hp = root.join(".agents/plugins/memtrail/hooks/hooks.json");
    assert!(!b.home.join(".agents").exists());
    let mut v = b.json(&hp);
    v["hooks"]["Stop"][0]["hooks"][0]["timeout"] = json!(90);
    std::fs::write(&hp, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    assert!(b.plan(Action::Install).is_empty(), "nothing to redo");
    let st = b.status();
    assert!(
        st.items.iter().all(|i| i.state == ItemState::Present),
        "{st}"
    );
    assert_eq!(ours(&b.json(&hp), "Stop")[0]["timeout"], 90);
    // A moved binary is updated in place.
    let new_bin = b.dir.path().join("elsewhere/memtrail");
    apply(&b.plan_with(Action::Install, &new_bin)).unwrap();
    assert_eq!(
        ours(&b.json(&hp), "SessionEnd")[0]["command"],
        format!("{} hook goose", new_bin.display())
    );
    apply(&b.plan_with(Action::Uninstall, &new_bin)).unwrap();
    assert!(!root.join(".agents").exists(), "the plugin folder is gone");
    assert_eq!(b.read(&root.join("config/config.yaml")), CONFIG_YAML);
}
