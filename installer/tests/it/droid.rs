//! Factory Droid: hooks in Claude Code's shape in `~/.factory/settings.json`, `mcpServers.memtrail`
//! in `~/.factory/mcp.json`, and the skill, on realistic existing configs.

use crate::common;

use common::{AgentBox, round_trip};
use memtrail_adapters::droid::registration as droid;
use memtrail_installer::{Action, Agent, ItemState, apply};
use serde_json::{Value, json};

/// A user's `settings.json` as Factory's docs show it: model and autonomy settings, a
/// `PreToolUse` hook on `Execute` and a `Stop` notification of the user's.
const USER_SETTINGS: &str = r#"{
  "model": "claude-sonnet-4-5-20250929",
  "reasoningEffort": "medium",
  "autonomyLevel": "auto-low",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Execute",
        "hooks": [
          {
            "type": "command",
            "command": "\"$FACTORY_PROJECT_DIR\"/.factory/hooks/guard.sh",
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
            "command": "notify-send 'Droid is done'"
          }
        ]
      }
    ]
  }
}
"#;

/// A user's `mcp.json` with a stdio and an http server, as `droid mcp add` writes them.
const USER_MCP: &str = r#"{
  "mcpServers": {
    "playwright": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@playwright/mcp@latest"],
      "disabled": false
    },
    "sentry": {
      "type": "http",
      "url": "https://mcp.sentry.dev/mcp"
    }
  }
}
"#;

/// memtrail's handlers among the groups of `event`.
fn ours(v: &Value, event: &str) -> Vec<Value> {
    let groups = v["hooks"][event].as_array().cloned().unwrap_or_default();
    let handlers = groups
        .into_iter()
        .filter_map(|g| g["hooks"].as_array().cloned());
    handlers
        .flatten()
        .filter(droid::is_memtrail_hook_handler)
        .collect()
}

#[test]
fn round_trips_realistic_configs() {
    let cases: Vec<(&str, Option<String>, Option<String>)> = vec![
        ("nothing yet", None, None),
        (
            "a user's settings and servers",
            Some(USER_SETTINGS.into()),
            Some(USER_MCP.into()),
        ),
        (
            "CRLF",
            Some(USER_SETTINGS.replace('\n', "\r\n")),
            Some(USER_MCP.replace('\n', "\r\n")),
        ),
    ];
    for (name, settings, mcp) in cases {
        let b = AgentBox::new(Agent::Droid);
        let dir = b.home.join(".factory");
        let (sp, mp, skill) = (
            dir.join("settings.json"),
            dir.join("mcp.json"),
            dir.join("skills/memtrail/SKILL.md"),
        );
        let with_users = settings.is_some();
        round_trip(
            &b,
            name,
            &[(sp.clone(), settings), (mp.clone(), mcp)],
            &|b| {
                let v = b.json(&sp);
                for (event, timeout) in droid::HOOKS {
                    assert_eq!(
                        ours(&v, event),
                        [json!({"type": "command",
                            "command": format!("'{}' hook droid", b.bin.display()),
                            "timeout": timeout})],
                        "{name}: {event}"
                    );
                }
                let m = b.json(&mp);
                assert_eq!(
                    m["mcpServers"]["memtrail"],
                    json!({"type": "stdio", "command": b.bin.to_str().unwrap(), "args": ["mcp"]})
                );
                if with_users {
                    assert_eq!(v["hooks"]["PreToolUse"][0]["matcher"], "Execute");
                    assert_eq!(
                        v["hooks"]["Stop"][0]["hooks"][0]["command"],
                        "notify-send 'Droid is done'"
                    );
                    assert_eq!(m["mcpServers"]["sentry"]["type"], "http");
                }
                assert_eq!(b.read(&skill), droid::SKILL_MD);
            },
        );
    }
}

#[test]
fn a_users_timeout_is_kept_and_a_moved_binary_updated() {
    let b = AgentBox::new(Agent::Droid);
    let sp = b.home.join(".factory/settings.json");
    b.put(&sp, Some(USER_SETTINGS));
    b.install();
    let mut v = b.json(&sp);
    let group = v["hooks"]["Stop"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|d| droid::is_memtrail_hook_handler(&d["hooks"][0]))
        .unwrap();
    group["hooks"][0]["timeout"] = json!(120);
    std::fs::write(&sp, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    assert!(b.plan(Action::Install).is_empty(), "nothing to redo");
    let st = b.status();
    assert!(
        st.items.iter().all(|i| i.state == ItemState::Present),
        "{st}"
    );
    let new_bin = b.dir.path().join("elsewhere/memtrail");
    apply(&b.plan_with(Action::Install, &new_bin)).unwrap();
    let stop = ours(&b.json(&sp), "Stop");
    assert_eq!(
        stop,
        [
            json!({"type": "command", "command": format!("{} hook droid", new_bin.display()),
                "timeout": 120})
        ]
    );
    apply(&b.plan_with(Action::Uninstall, &new_bin)).unwrap();
    let v = b.json(&sp);
    for (event, _) in droid::HOOKS {
        assert!(ours(&v, event).is_empty(), "{event}");
    }
    assert_eq!(
        v["hooks"]["PreToolUse"],
        common::jsonc(USER_SETTINGS)["hooks"]["PreToolUse"]
    );
}
