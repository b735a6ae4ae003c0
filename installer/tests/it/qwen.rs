//! Qwen Code: hooks (Claude Code's shape, timeouts in seconds) and `mcpServers.memtrail` in the
//! user `settings.json`, and the skill, on realistic existing configs.

use crate::common;

use common::{AgentBox, round_trip};
use memtrail_adapters::qwen::registration as qwen;
use memtrail_installer::{Action, Agent, ItemState, apply};
use serde_json::{Value, json};

/// A user's `settings.json` as Qwen Code 0.24.4 writes it (`qwen mcp add` output, `$version`),
/// with auth, model, UI settings, a `PreToolUse` hook of the user's and a `Stop` hook of another
/// tool.
const USER_SETTINGS: &str = r#"{
  "security": {
    "auth": {
      "selectedType": "openai"
    }
  },
  "model": {
    "name": "qwen3-coder-plus"
  },
  "ui": {
    "theme": "Qwen Dark"
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "run_shell_command",
        "hooks": [
          {
            "type": "command",
            "command": "~/.qwen/guard.sh",
            "timeout": 10
          }
        ]
      }
    ],
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send 'Qwen is done'"
          }
        ]
      }
    ]
  },
  "mcpServers": {
    "playwright": {
      "command": "npx",
      "args": [
        "@playwright/mcp@latest"
      ]
    }
  },
  "$version": 4
}
"#;

fn ours(v: &Value, event: &str) -> Vec<Value> {
    v["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|d| d["hooks"].as_array().into_iter().flatten())
        .filter(|h| qwen::is_memtrail_hook_handler(h))
        .cloned()
        .collect()
}

#[test]
fn round_trips_realistic_configs() {
    let cases: Vec<(&str, Option<String>)> = vec![
        ("nothing yet", None),
        ("a user's settings", Some(USER_SETTINGS.into())),
        ("CRLF", Some(USER_SETTINGS.replace('\n', "\r\n"))),
        (
            "tabs, comments and a trailing comma",
            Some(
                "{\n\t// mine\n\t\"general\": {\"vimMode\": true},\n\t\"mcpServers\": {},\n}\n"
                    .into(),
            ),
        ),
    ];
    for (name, settings) in cases {
        let b = AgentBox::new(Agent::Qwen);
        let dir = b.home.join(".qwen");
        let (sp, skill) = (
            dir.join("settings.json"),
            dir.join("skills/memtrail/SKILL.md"),
        );
        let s0 = settings.clone();
        round_trip(&b, name, &[(sp.clone(), settings)], &|b| {
            let v = b.json(&sp);
            for h in qwen::HOOKS {
                assert_eq!(
                    ours(&v, h.event),
                    [json!({"type": "command",
                            "command": format!("'{}' hook qwen", b.bin.display()),
                            "name": "memtrail",
                            "timeout": h.timeout_secs})],
                    "{name}: {}",
                    h.event
                );
            }
            assert_eq!(
                v["mcpServers"]["memtrail"],
                json!({"command": b.bin.to_str().unwrap(), "args": ["mcp"]})
            );
            if s0.as_deref() == Some(USER_SETTINGS) {
                assert_eq!(
                    v["hooks"]["Stop"][0]["hooks"][0]["command"],
                    "notify-send 'Qwen is done'"
                );
                assert_eq!(v["hooks"]["PreToolUse"][0]["matcher"], "run_shell_command");
                assert_eq!(v["mcpServers"]["playwright"]["command"], "npx");
                assert_eq!(v["$version"], 4);
            }
            assert_eq!(b.read(&skill), qwen::SKILL_MD);
        });
    }
}

#[test]
fn a_user_timeout_is_kept_and_qwen_home_is_followed() {
    let b = AgentBox::new(Agent::Qwen);
    let elsewhere = b.dir.path().join("qwen-home");
    let b = b.with_var("QWEN_HOME", &elsewhere);
    let sp = elsewhere.join("settings.json");
    b.put(&sp, Some(USER_SETTINGS));
    b.install();
    assert!(!b.home.join(".qwen").exists());
    assert!(elsewhere.join("skills/memtrail/SKILL.md").is_file());
    let mut v = b.json(&sp);
    let stop = v["hooks"]["Stop"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|d| qwen::is_memtrail_hook_handler(&d["hooks"][0]))
        .unwrap();
    stop["hooks"][0]["timeout"] = json!(90);
    std::fs::write(&sp, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    assert!(b.plan(Action::Install).is_empty(), "nothing to redo");
    let st = b.status();
    assert!(
        st.items.iter().all(|i| i.state == ItemState::Present),
        "{st}"
    );
    assert_eq!(ours(&b.json(&sp), "Stop")[0]["timeout"], 90);
    // A moved binary is updated in place.
    let new_bin = b.dir.path().join("elsewhere/memtrail");
    apply(&b.plan_with(Action::Install, &new_bin)).unwrap();
    assert_eq!(
        ours(&b.json(&sp), "SessionStart")[0]["command"],
        format!("{} hook qwen", new_bin.display())
    );
    apply(&b.plan_with(Action::Uninstall, &new_bin)).unwrap();
    let v = b.json(&sp);
    assert!(v["mcpServers"].get("memtrail").is_none());
    for h in qwen::HOOKS {
        assert!(ours(&v, h.event).is_empty(), "{}", h.event);
    }
    // The settings were rewritten by hand in between (pretty-printed), so only memtrail's
    // entries are compared: the user's are all there.
    assert_eq!(
        v["hooks"]["PreToolUse"],
        common::jsonc(USER_SETTINGS)["hooks"]["PreToolUse"]
    );
}
