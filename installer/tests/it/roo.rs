//! Roo Code: `mcpServers.memtrail` in each editor's `mcp_settings.json` (VS Code's when none has
//! Roo Code yet) and the skill; no hooks.

use crate::common;

use common::{AgentBox, round_trip};
use memtrail_installer::Agent;
use serde_json::json;

/// `mcp_settings.json` as Roo Code writes it (`JSON.stringify(…, null, 2)`), with a user's
/// server.
const USER_MCP: &str = r#"{
  "mcpServers": {
    "context7": {
      "command": "npx",
      "args": [
        "-y",
        "@upstash/context7-mcp"
      ],
      "alwaysAllow": [],
      "disabled": false
    }
  }
}"#;

#[test]
fn round_trips_realistic_configs() {
    let ext = ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline";
    let cursor = ".config/Cursor/User/globalStorage/rooveterinaryinc.roo-cline";
    for (name, with_cursor) in [("nothing yet", false), ("VS Code and Cursor", true)] {
        let b = AgentBox::new(Agent::Roo);
        let vs = b.home.join(ext).join("settings/mcp_settings.json");
        let cu = b.home.join(cursor).join("settings/mcp_settings.json");
        let skill = b.home.join(".roo/skills/memtrail/SKILL.md");
        let mut put = vec![(vs.clone(), with_cursor.then(|| USER_MCP.to_string()))];
        if with_cursor {
            put.push((cu.clone(), Some(USER_MCP.to_string())));
        }
        round_trip(&b, name, &put, &|b| {
            let entry =
                json!({"type": "stdio", "command": b.bin.to_str().unwrap(), "args": ["mcp"]});
            assert_eq!(b.json(&vs)["mcpServers"]["memtrail"], entry, "{name}");
            if with_cursor {
                let v = b.json(&cu);
                assert_eq!(v["mcpServers"]["memtrail"], entry);
                assert_eq!(v["mcpServers"]["context7"]["command"], "npx");
            } else {
                assert!(!cu.exists(), "no Cursor: not created");
            }
            assert_eq!(
                b.read(&skill),
                memtrail_adapters::roo::registration::SKILL_MD
            );
            assert!(!b.home.join("Documents/Cline").exists(), "no hooks");
        });
    }
}
