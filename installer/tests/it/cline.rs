//! Cline: hook scripts in `~/Documents/Cline/Hooks/`, `mcpServers.memtrail` in
//! `cline_mcp_settings.json` (4.x data folder, and each 3.x extension folder that exists), and the
//! skill, on realistic existing configs.

use crate::common;

use common::{AgentBox, round_trip};
use memtrail_adapters::cline::registration as cline;
use memtrail_installer::{Action, Agent, InstallError, ItemState};
use serde_json::json;
use std::path::PathBuf;

/// `cline_mcp_settings.json` as Cline writes it (`JSON.stringify(settings, null, 2)`), with a
/// user's server.
const USER_MCP: &str = r#"{
  "mcpServers": {
    "github.com/modelcontextprotocol/servers/tree/main/src/github": {
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-github"
      ],
      "env": {
        "GITHUB_PERSONAL_ACCESS_TOKEN": "<redacted>"
      },
      "disabled": false,
      "autoApprove": []
    }
  }
}"#;

/// A user's own hook script (of an event memtrail does not use: `PreToolUse`).
const USER_HOOK: &str = "#!/bin/bash\necho '{\"cancel\":false}'\n";

fn files(b: &AgentBox) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    (
        b.home.join(".cline/data/settings/cline_mcp_settings.json"),
        b.home.join(".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"),
        b.home.join("Documents/Cline/Hooks"),
        b.home.join(".cline/skills/memtrail/SKILL.md"),
    )
}

#[test]
fn round_trips_realistic_configs() {
    let cases: Vec<(&str, Option<&str>, Option<&str>)> = vec![
        ("nothing yet", None, None),
        ("a user's servers and hook", Some(USER_MCP), Some(USER_HOOK)),
    ];
    for (name, mcp, user_hook) in cases {
        let b = AgentBox::new(Agent::Cline);
        let (data_mcp, legacy_mcp, hooks, skill) = files(&b);
        let mut put = vec![(data_mcp.clone(), mcp.map(str::to_string))];
        if let Some(h) = user_hook {
            // A 3.x extension folder with its settings, and a user's own PreToolUse hook.
            put.push((legacy_mcp.clone(), Some(USER_MCP.to_string())));
            put.push((hooks.join("PreToolUse"), Some(h.to_string())));
        }
        round_trip(&b, name, &put, &|b| {
            let script = format!(
                "#!/bin/sh\n{}\nexec '{}' hook cline",
                cline::SCRIPT_MARK,
                b.bin.display()
            );
            for event in cline::HOOK_EVENTS {
                let p = hooks.join(event);
                assert_eq!(b.read(&p), script, "{name}: {event}");
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
                assert_eq!(mode, 0o700, "{name}: {event}");
            }
            let entry =
                json!({"type": "stdio", "command": b.bin.to_str().unwrap(), "args": ["mcp"]});
            let v = b.json(&data_mcp);
            assert_eq!(v["mcpServers"]["memtrail"], entry);
            if mcp.is_some() {
                assert_eq!(
                    v["mcpServers"]
                        .as_object()
                        .unwrap()
                        .keys()
                        .collect::<Vec<_>>(),
                    [
                        "github.com/modelcontextprotocol/servers/tree/main/src/github",
                        "memtrail"
                    ]
                );
                assert_eq!(b.json(&legacy_mcp)["mcpServers"]["memtrail"], entry);
            } else {
                assert!(!legacy_mcp.exists(), "no 3.x extension folder: not created");
            }
            if user_hook.is_some() {
                assert_eq!(b.read(&hooks.join("PreToolUse")), USER_HOOK);
            }
            assert_eq!(b.read(&skill), cline::SKILL_MD);
        });
    }
}

/// A user's own hook script of an event memtrail uses is never replaced: the plan stops with
/// an error naming the file (Cline runs one script per event), status reports it, nothing is
/// written. `CLINE_DIR` moves the data folder and the skill.
#[test]
fn a_user_hook_stops_the_plan_and_cline_dir_is_followed() {
    let b = AgentBox::new(Agent::Cline);
    let elsewhere = b.dir.path().join("cline-home");
    let b = b.with_var("CLINE_DIR", &elsewhere);
    let hooks = b.home.join("Documents/Cline/Hooks");
    b.put(&hooks.join("PreCompact"), Some(USER_HOOK));
    let before = b.snapshot();
    let err = memtrail_installer::plan_in(&b.env, Agent::Cline, Action::Install, &b.bin)
        .expect_err("a foreign hook script");
    assert!(
        matches!(&err, InstallError::Foreign { path } if *path == hooks.join("PreCompact")),
        "{err:?}"
    );
    common::assert_same("refused", &before, &b.snapshot());
    let st = b.status();
    let pre = st
        .items
        .iter()
        .find(|i| i.item == "hook PreCompact")
        .expect("PreCompact listed");
    assert_ne!(pre.state, ItemState::Present, "{st}");

    std::fs::remove_file(hooks.join("PreCompact")).unwrap();
    b.install();
    assert!(
        elsewhere
            .join("data/settings/cline_mcp_settings.json")
            .is_file()
    );
    assert!(elsewhere.join("skills/memtrail/SKILL.md").is_file());
    assert!(!b.home.join(".cline").exists());
    assert!(
        b.status()
            .items
            .iter()
            .all(|i| i.state == ItemState::Present)
    );
    b.uninstall();
    assert!(!hooks.join("TaskStart").exists());
}
