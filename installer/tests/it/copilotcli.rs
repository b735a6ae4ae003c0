//! GitHub Copilot CLI: memtrail's own hook file `~/.copilot/hooks/memtrail.json` (`version: 1`,
//! flat `{"type":"command","bash",…,"timeoutSec"}` entries per event), `mcp-config.json`
//! (`mcpServers.memtrail`) and the skill, on realistic existing configs.

use crate::common;

use common::{AgentBox, round_trip};
use memtrail_adapters::copilotcli::registration as copilot;
use memtrail_installer::{Action, Agent, ItemState, apply};
use serde_json::{Value, json};

/// What `copilot mcp add` leaves in a user's `mcp-config.json`, with a remote server beside it.
const USER_MCP: &str = r#"{
  "mcpServers": {
    "playwright": {
      "tools": [
        "*"
      ],
      "type": "local",
      "command": "npx",
      "args": [
        "@playwright/mcp@latest"
      ]
    },
    "linear": {
      "type": "http",
      "url": "https://mcp.linear.app/mcp",
      "headers": {},
      "tools": ["*"]
    }
  }
}
"#;

/// Another tool's hook file in the same folder: never touched.
const OTHER_HOOK_FILE: &str = r#"{
  "version": 1,
  "hooks": {
    "preToolUse": [
      {"type": "command", "bash": "./scripts/guard.sh", "powershell": "./scripts/guard.ps1", "timeoutSec": 10}
    ]
  }
}
"#;

fn ours(v: &Value, event: &str) -> Vec<Value> {
    v["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|h| copilot::is_memtrail_hook_handler(h))
        .cloned()
        .collect()
}

#[test]
fn round_trips_realistic_configs() {
    let cases: Vec<(&str, Option<String>, Option<String>)> = vec![
        ("nothing yet", None, None),
        ("the user's MCP servers", Some(USER_MCP.into()), None),
        ("CRLF", Some(USER_MCP.replace('\n', "\r\n")), None),
        (
            "comments and a trailing comma (Copilot CLI reads them)",
            Some("{\n  // mine\n  \"mcpServers\": {\"x\": {\"type\": \"local\", \"command\": \"/bin/x\", \"args\": []},},\n}\n".into()),
            None,
        ),
        (
            "memtrail's hook file with a user's hook in it",
            Some("{\"mcpServers\": {}}".into()),
            Some("{\n\t\"hooks\": {\n\t\t\"sessionEnd\": [\n\t\t\t{\"type\": \"command\", \"bash\": \"notify-send bye\"}\n\t\t]\n\t},\n\t\"version\": 1\n}\n".into()),
        ),
    ];
    for (name, mcp, hooks) in cases {
        let b = AgentBox::new(Agent::Copilotcli);
        let dir = b.home.join(".copilot");
        let (hp, mp, sp, other) = (
            dir.join("hooks/memtrail.json"),
            dir.join("mcp-config.json"),
            dir.join("skills/memtrail/SKILL.md"),
            dir.join("hooks/guard.json"),
        );
        let (m0, h0) = (mcp.clone(), hooks.clone());
        round_trip(
            &b,
            name,
            &[
                (mp.clone(), mcp),
                (hp.clone(), hooks),
                (other.clone(), Some(OTHER_HOOK_FILE.into())),
            ],
            &|b| {
                let v = b.json(&hp);
                assert_eq!(v["version"], 1, "{name}");
                for h in copilot::HOOKS {
                    assert_eq!(
                        ours(&v, h.event),
                        [json!({"type": "command",
                                "bash": format!("'{}' hook copilotcli", b.bin.display()),
                                "timeoutSec": h.timeout_secs})],
                        "{name}: {}",
                        h.event
                    );
                }
                if h0.is_some() {
                    assert_eq!(v["hooks"]["sessionEnd"][0]["bash"], "notify-send bye");
                }
                let m = b.json(&mp);
                assert_eq!(
                    m["mcpServers"]["memtrail"],
                    json!({"type": "local", "command": b.bin.to_str().unwrap(),
                           "args": ["mcp"], "tools": ["*"]})
                );
                if let Some(orig) = &m0 {
                    for (k, e) in common::jsonc(orig)["mcpServers"]
                        .as_object()
                        .into_iter()
                        .flatten()
                    {
                        assert_eq!(&m["mcpServers"][k], e, "{name}: {k} kept");
                    }
                }
                assert_eq!(b.read(&sp), copilot::SKILL_MD);
                assert_eq!(b.read(&other), OTHER_HOOK_FILE, "{name}: another hook file");
            },
        );
    }
}

#[test]
fn a_user_tool_filter_and_timeout_are_kept() {
    let b = AgentBox::new(Agent::Copilotcli);
    let dir = b.home.join(".copilot");
    let (hp, mp) = (dir.join("hooks/memtrail.json"), dir.join("mcp-config.json"));
    b.install();
    let mut m = b.json(&mp);
    m["mcpServers"]["memtrail"]["tools"] = json!(["search", "get_session"]);
    std::fs::write(&mp, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    let mut h = b.json(&hp);
    h["hooks"]["agentStop"][0]["timeoutSec"] = json!(60);
    std::fs::write(&hp, serde_json::to_string_pretty(&h).unwrap()).unwrap();
    assert!(b.plan(Action::Install).is_empty(), "nothing to redo");
    let st = b.status();
    assert!(
        st.items.iter().all(|i| i.state == ItemState::Present),
        "{st}"
    );
    b.uninstall();
    // Both files were install's: nothing is left of them.
    assert!(!hp.exists(), "memtrail's hook file is gone");
    assert!(!mp.exists(), "the MCP file install created is gone");
}

#[test]
fn moved_binary_is_updated_in_place_and_copilot_home_is_followed() {
    let b = AgentBox::new(Agent::Copilotcli);
    let elsewhere = b.dir.path().join("copilot-home");
    let b = b.with_var("COPILOT_HOME", &elsewhere);
    let mp = elsewhere.join("mcp-config.json");
    b.put(&mp, Some(USER_MCP));
    let original = b.snapshot();
    b.install();
    assert!(elsewhere.join("hooks/memtrail.json").is_file());
    assert!(!b.home.join(".copilot").exists());
    let new_bin = b.dir.path().join("elsewhere/memtrail");
    apply(&b.plan_with(Action::Install, &new_bin)).unwrap();
    let v = b.json(&elsewhere.join("hooks/memtrail.json"));
    assert_eq!(
        ours(&v, "agentStop")[0]["bash"],
        format!("{} hook copilotcli", new_bin.display())
    );
    assert!(b.plan_with(Action::Install, &new_bin).is_empty());
    apply(&b.plan_with(Action::Uninstall, &new_bin)).unwrap();
    common::assert_same("moved binary", &original, &b.snapshot());
}
