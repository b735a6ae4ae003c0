//! Cursor: `~/.cursor/hooks.json` (`version: 1`, flat entries per event, absolute commands),
//! `~/.cursor/mcp.json` (`mcpServers.memtrail`) and the skill.

use crate::common;

use common::{AgentBox, round_trip};
use memtrail_adapters::cursor::registration as cursor;
use memtrail_installer::{Action, Agent, InstallError, ItemState, apply, plan_in};
use serde_json::{Value, json};

const OTHER_HOOKS: &str = r#"{
  "version": 1,
  "hooks": {
    "beforeShellExecution": [
      { "command": "/opt/guard/bin/check-shell", "matcher": "rm" }
    ],
    "stop": [
      { "command": "/usr/local/bin/say-done", "loop_limit": 3 }
    ]
  }
}
"#;

const OTHER_MCP: &str = r#"{
  "mcpServers": {
    "linear": {
      "url": "https://mcp.linear.app/sse"
    },
    "postgres": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://localhost/db"]
    }
  }
}
"#;

fn memtrail_entries(v: &Value, event: &str) -> Vec<Value> {
    v["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|h| cursor::is_memtrail_hook_handler(h))
        .cloned()
        .collect()
}

#[test]
fn round_trips_real_world_files() {
    let cases: Vec<(&str, Option<String>, Option<String>)> = vec![
        ("nothing yet", None, None),
        ("empty objects, no version", Some("{}".into()), Some("{}\n".into())),
        ("other tools' hooks", Some(OTHER_HOOKS.into()), Some(OTHER_MCP.into())),
        (
            "CRLF",
            Some(OTHER_HOOKS.replace('\n', "\r\n")),
            Some(OTHER_MCP.replace('\n', "\r\n")),
        ),
        (
            "tabs and a version after the hooks",
            Some("{\n\t\"hooks\": {\n\t\t\"stop\": []\n\t},\n\t\"version\": 1\n}\n".into()),
            Some("{\n\t\"mcpServers\": {}\n}".into()),
        ),
        (
            "comments",
            Some("{\n  // team hooks\n  \"version\": 1,\n  \"hooks\": {\n    \"preCompact\": [\n      {\"command\": \"/bin/true\"}, // keep\n    ],\n  },\n}\n".into()),
            None,
        ),
    ];
    for (name, hooks, mcp) in cases {
        let b = AgentBox::new(Agent::Cursor);
        let dir = b.home.join(".cursor");
        let (hp, mp, sp) = (
            dir.join("hooks.json"),
            dir.join("mcp.json"),
            dir.join("skills/memtrail/SKILL.md"),
        );
        let (h0, m0) = (hooks.clone(), mcp.clone());
        round_trip(&b, name, &[(hp.clone(), hooks), (mp.clone(), mcp)], &|b| {
            let v = b.json(&hp);
            assert!(v["version"].is_number(), "{name}: version");
            for h in cursor::HOOKS {
                let es = memtrail_entries(&v, h.event);
                assert_eq!(
                    es,
                    vec![
                        json!({"command": format!("'{}' hook cursor", b.bin.display()),
                                "timeout": h.timeout_secs})
                    ],
                    "{name}: {}",
                    h.event
                );
            }
            if let Some(orig) = &h0 {
                let o = common::jsonc(orig);
                for (event, entries) in o["hooks"].as_object().into_iter().flatten() {
                    let old = entries.as_array().unwrap();
                    assert_eq!(
                        &v["hooks"][event].as_array().unwrap()[..old.len()],
                        &old[..]
                    );
                }
            }
            let m = b.json(&mp);
            assert_eq!(
                m["mcpServers"]["memtrail"],
                json!({"command": b.bin.to_str().unwrap(), "args": ["mcp"]})
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
            assert_eq!(b.read(&sp), cursor::SKILL_MD);
        });
    }
}

#[test]
fn version_stays_when_the_user_added_hooks_to_the_file_install_created() {
    let b = AgentBox::new(Agent::Cursor);
    let hp = b.home.join(".cursor/hooks.json");
    b.install();
    let mut v = b.json(&hp);
    v["hooks"]["afterFileEdit"] = json!([{"command": "/bin/fmt"}]);
    std::fs::write(&hp, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    b.uninstall();
    let v = b.json(&hp);
    assert_eq!(
        v,
        json!({"version": 1, "hooks": {"afterFileEdit": [{"command": "/bin/fmt"}]}})
    );
}

#[test]
fn a_user_version_is_kept_and_duplicates_collapse() {
    let b = AgentBox::new(Agent::Cursor);
    let hp = b.home.join(".cursor/hooks.json");
    let cmd = format!("'{}' hook cursor", b.bin.display());
    let text = format!(
        "{{\n  \"version\": 2,\n  \"hooks\": {{\n    \"stop\": [\n      {{\"command\": \"{0}\"}},\n      {{\"command\": \"/x/y\"}},\n      {{\"command\": \"{0}\", \"timeout\": 9}}\n    ]\n  }}\n}}\n",
        cmd
    );
    b.put(&hp, Some(&text));
    let st = b.status();
    let stop = st.items.iter().find(|i| i.item == "hook stop").unwrap();
    assert_eq!(stop.state, ItemState::Duplicate { count: 2 }, "{st}");
    let version = st
        .items
        .iter()
        .find(|i| i.item == "hooks.json version")
        .unwrap();
    assert_eq!(
        version.state,
        ItemState::Present,
        "any version is the user's"
    );
    b.install();
    let v = b.json(&hp);
    assert_eq!(v["version"], 2);
    assert_eq!(memtrail_entries(&v, "stop").len(), 1);
    assert_eq!(v["hooks"]["stop"][1]["command"], "/x/y");
    b.uninstall();
    // memtrail's entry that predates the install (the first one) comes back as it was; the
    // duplicate install collapsed does not.
    let v = b.json(&hp);
    assert_eq!(
        v,
        json!({"version": 2, "hooks": {"stop": [{"command": cmd}, {"command": "/x/y"}]}})
    );
}

#[test]
fn malformed_files_are_left_untouched() {
    for (file, text) in [
        ("hooks.json", "{\"version\": 1, \"hooks\": {\"stop\": [\n"),
        ("mcp.json", "[]"),
        ("hooks.json", "{\"hooks\": {\"stop\": {}}}"),
    ] {
        let b = AgentBox::new(Agent::Cursor);
        let p = b.home.join(".cursor").join(file);
        b.put(&p, Some(text));
        let before = b.snapshot();
        let e = plan_in(&b.env, Agent::Cursor, Action::Install, &b.bin).expect_err(text);
        match e {
            InstallError::Parse { path, .. }
            | InstallError::NotAnObject { path }
            | InstallError::Conflict { path, .. } => assert_eq!(path, p),
            other => panic!("{other}"),
        }
        assert_eq!(b.snapshot(), before);
    }
}

#[test]
fn moved_binary_is_updated_in_place() {
    let b = AgentBox::new(Agent::Cursor);
    let hp = b.home.join(".cursor/hooks.json");
    b.put(&hp, Some(OTHER_HOOKS));
    let original = b.snapshot();
    b.install();
    let new_bin = b.dir.path().join("elsewhere/memtrail");
    apply(&b.plan_with(Action::Install, &new_bin)).unwrap();
    let v = b.json(&hp);
    assert_eq!(
        memtrail_entries(&v, "stop")[0]["command"],
        format!("{} hook cursor", new_bin.display())
    );
    assert!(b.plan_with(Action::Install, &new_bin).is_empty());
    apply(&b.plan_with(Action::Uninstall, &new_bin)).unwrap();
    common::assert_same("upgrade", &original, &b.snapshot());
}

/// memtrail created `~/.cursor/hooks.json`, then the user deleted memtrail's state folder:
/// uninstall deletes the file again (it held memtrail's entries and the `version` it wrote, and
/// nothing else), instead of leaving a skeleton `{"version": 1, "hooks": {}}`. A hooks.json
/// with a hook of the user's keeps it, and its `version`.
#[test]
fn uninstall_without_state_leaves_no_skeleton_hooks_json() {
    let b = AgentBox::new(Agent::Cursor);
    let hp = b.home.join(".cursor/hooks.json");
    std::fs::create_dir_all(b.home.join(".cursor")).unwrap();
    b.install();
    assert!(hp.exists());
    std::fs::remove_dir_all(b.state_dir()).unwrap();
    b.uninstall();
    assert!(!hp.exists(), "{}", b.read(&hp));
    assert!(b.home.join(".cursor").is_dir(), "Cursor's own folder stays");

    let b = AgentBox::new(Agent::Cursor);
    let hp = b.home.join(".cursor/hooks.json");
    let theirs = "{\n  \"version\": 1,\n  \"hooks\": {\n    \"stop\": [\n      {\n        \"command\": \"./mine.sh\"\n      }\n    ]\n  }\n}\n";
    b.put(&hp, Some(theirs));
    b.install();
    std::fs::remove_dir_all(b.state_dir()).unwrap();
    b.uninstall();
    assert_eq!(b.read(&hp), theirs);
}
