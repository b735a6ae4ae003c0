//! Crush: `mcp.memtrail` in the user's `crush.json` and the skill (no hooks: Crush is imported),
//! on realistic existing configs.

use crate::common;

use common::{AgentBox, round_trip};
use memtrail_adapters::crush::registration as crush;
use memtrail_installer::{Agent, ItemState};
use serde_json::json;

/// A user's `crush.json` in the shape of Crush's schema (`$schema`, `options`, `lsp`, another
/// MCP server with env, a provider).
const USER_CONFIG: &str = r#"{
  "$schema": "https://charm.land/crush.json",
  "options": {
    "debug": false,
    "tui": { "compact_mode": true }
  },
  "lsp": {
    "rust": { "command": "rust-analyzer" }
  },
  "mcp": {
    "github": {
      "type": "stdio",
      "command": "github-mcp-server",
      "args": ["stdio"],
      "env": { "GITHUB_TOKEN": "$GH_TOKEN" }
    }
  },
  "providers": {
    "local": {
      "type": "openai",
      "base_url": "http://127.0.0.1:11434/v1",
      "models": [{ "id": "qwen3", "name": "Qwen 3" }]
    }
  }
}
"#;

#[test]
fn round_trips_realistic_configs() {
    let cases: Vec<(&str, Option<String>)> = vec![
        ("nothing yet", None),
        ("a user's crush.json", Some(USER_CONFIG.into())),
        ("CRLF", Some(USER_CONFIG.replace('\n', "\r\n"))),
    ];
    for (name, config) in cases {
        let b = AgentBox::new(Agent::Crush);
        let dir = b.home.join(".config/crush");
        let (cp, skill) = (dir.join("crush.json"), dir.join("skills/memtrail/SKILL.md"));
        let user = config.is_some();
        round_trip(&b, name, &[(cp.clone(), config)], &|b| {
            let v = b.json(&cp);
            assert_eq!(
                v["mcp"]["memtrail"],
                json!({"type": "stdio", "command": b.bin.to_str().unwrap(), "args": ["mcp"]}),
                "{name}"
            );
            if user {
                assert_eq!(v["mcp"]["github"]["env"]["GITHUB_TOKEN"], "$GH_TOKEN");
                assert_eq!(v["lsp"]["rust"]["command"], "rust-analyzer");
            }
            assert_eq!(b.read(&skill), crush::SKILL_MD);
        });
    }
}

#[test]
fn crush_global_config_is_followed() {
    let b = AgentBox::new(Agent::Crush);
    let elsewhere = b.dir.path().join("crush-config");
    let b = b.with_var("CRUSH_GLOBAL_CONFIG", &elsewhere);
    let cp = elsewhere.join("crush.json");
    b.put(&cp, Some(USER_CONFIG));
    b.install();
    assert_eq!(
        b.json(&cp)["mcp"]["memtrail"]["command"],
        b.bin.to_str().unwrap()
    );
    assert!(!b.home.join(".config/crush/crush.json").exists());
    let st = b.status();
    assert!(
        st.items.iter().all(|i| i.state == ItemState::Present),
        "{st}"
    );
    b.uninstall();
    assert_eq!(b.read(&cp), USER_CONFIG);
    assert_eq!(
        common::jsonc(&b.read(&cp))["mcp"]["github"]["command"],
        "github-mcp-server"
    );
}
