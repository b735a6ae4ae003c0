//! Gemini CLI: `~/.gemini/settings.json` (hooks in Gemini's shape, timeouts in ms;
//! `mcpServers.memtrail`) and the skill. Install then uninstall gives back the exact bytes;
//! install twice equals install once; a dry run writes nothing.

use crate::common;

use common::{AgentBox, round_trip};
use memtrail_adapters::gemini::registration as gemini;
use memtrail_installer::{Action, Agent, InstallError, ItemState, UnreadableKind, apply, plan_in};
use serde_json::{Value, json};

const COMMENTED: &str = r#"{
  // my Gemini settings
  "general": {"vimMode": true,},
  /* hooks of another tool */
  "hooks": {
    "AfterAgent": [
      {"matcher": "*", "hooks": [{"type": "command", "command": "notify-send done", "timeout": 1000}]},
    ],
    "BeforeTool": [
      {"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "~/guard.sh"}]}
    ],
  },
  "hooksConfig": {"enabled": true, "notifications": false},
  "mcpServers": {
    "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_TOKEN": "$GH"}},
  },
}
"#;

const PLAIN: &str = r#"{
  "theme": "GitHub",
  "selectedAuthType": "oauth-personal",
  "mcpServers": {
    "context7": {
      "httpUrl": "https://mcp.context7.com/mcp"
    }
  }
}
"#;

fn memtrail_handlers(v: &Value, event: &str) -> Vec<Value> {
    v["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
        .filter(gemini::is_memtrail_hook_handler)
        .collect()
}

fn check(b: &AgentBox, settings: &std::path::Path, original: Option<&str>) {
    let v = b.json(settings);
    for h in gemini::HOOKS {
        let hs = memtrail_handlers(&v, h.event);
        assert_eq!(hs.len(), 1, "{}", h.event);
        assert_eq!(
            hs[0],
            json!({"type": "command", "command": format!("'{}' hook gemini", b.bin.display()),
                   "name": "memtrail", "timeout": h.timeout_ms})
        );
    }
    assert_eq!(
        v["mcpServers"]["memtrail"],
        json!({"command": b.bin.to_str().unwrap(), "args": ["mcp"]})
    );
    if let Some(o) = original {
        let before = common::jsonc(o);
        for (k, val) in before.as_object().unwrap() {
            if k == "hooks" {
                for (event, groups) in val.as_object().unwrap() {
                    let old = groups.as_array().unwrap();
                    assert_eq!(
                        &v["hooks"][event].as_array().unwrap()[..old.len()],
                        &old[..]
                    );
                }
            } else if k == "mcpServers" {
                for (s, e) in val.as_object().unwrap() {
                    assert_eq!(&v[k][s], e);
                }
            } else {
                assert_eq!(&v[k], val, "{k} kept");
            }
        }
        // Strict JSON stays strict.
        if serde_json::from_str::<Value>(o).is_ok() {
            serde_json::from_str::<Value>(&b.read(settings)).expect("still strict JSON");
        }
    }
}

#[test]
fn round_trips_real_world_settings() {
    let crlf = PLAIN.replace('\n', "\r\n");
    let tabs = "{\n\t\"hooks\": {\n\t\t\"SessionEnd\": [\n\t\t\t{\"hooks\": [{\"type\": \"command\", \"command\": \"backup.sh\"}]}\n\t\t]\n\t}\n}";
    let cases: Vec<(&str, Option<String>, bool)> = vec![
        ("nothing yet", None, false),
        ("empty object", Some("{}\n".into()), false),
        (
            "comments, trailing commas, other hooks",
            Some(COMMENTED.into()),
            false,
        ),
        (
            "plain JSON with another MCP server",
            Some(PLAIN.into()),
            false,
        ),
        ("CRLF", Some(crlf), false),
        (
            "tabs, no final newline, odd key order",
            Some(tabs.into()),
            false,
        ),
        ("GEMINI_CLI_HOME", Some(PLAIN.into()), true),
    ];
    for (name, content, relocated) in cases {
        let mut b = AgentBox::new(Agent::Gemini);
        let base = if relocated {
            let g = b.dir.path().join("gemini home");
            b = b.with_var("GEMINI_CLI_HOME", &g);
            g
        } else {
            b.home.clone()
        };
        let settings = base.join(".gemini/settings.json");
        let skill = base.join(".gemini/skills/memtrail/SKILL.md");
        let orig = content.clone();
        round_trip(&b, name, &[(settings.clone(), content)], &|b| {
            check(b, &settings, orig.as_deref());
            assert_eq!(b.read(&skill), gemini::SKILL_MD);
        });
    }
}

#[test]
fn moved_binary_is_updated_in_place_and_duplicates_collapse() {
    let b = AgentBox::new(Agent::Gemini);
    let settings = b.home.join(".gemini/settings.json");
    b.put(&settings, Some(COMMENTED));
    let original = b.snapshot();
    b.install();
    // The binary moves: status says stale, install points every entry at the new one.
    let new_bin = b.dir.path().join("new/memtrail");
    let st = memtrail_installer::status_in(&b.env, Agent::Gemini, &new_bin).unwrap();
    assert!(
        st.items
            .iter()
            .filter(|i| i.item != "skill memtrail")
            .all(|i| matches!(i.state, ItemState::Stale { .. })),
        "{st}"
    );
    let p = b.plan_with(Action::Install, &new_bin);
    assert!(
        p.describe()
            .iter()
            .any(|l| l.contains("update hook AfterAgent") && l.contains("new/memtrail")),
        "{:?}",
        p.describe()
    );
    apply(&p).unwrap();
    let v = b.json(&settings);
    assert_eq!(
        memtrail_handlers(&v, "AfterAgent")[0]["command"],
        format!("{} hook gemini", new_bin.display())
    );
    // A duplicate (a copied group) is reported, then collapsed by install.
    let text = b.read(&settings).replacen(
        "\"AfterAgent\": [",
        &format!(
            "\"AfterAgent\": [\n      {{\"hooks\": [{{\"type\": \"command\", \"command\": \"{} hook gemini\"}}]}},",
            new_bin.display()
        ),
        1,
    );
    std::fs::write(&settings, text).unwrap();
    let st = memtrail_installer::status_in(&b.env, Agent::Gemini, &new_bin).unwrap();
    let after = st
        .items
        .iter()
        .find(|i| i.item == "hook AfterAgent")
        .unwrap();
    assert_eq!(after.state, ItemState::Duplicate { count: 2 });
    apply(&b.plan_with(Action::Install, &new_bin)).unwrap();
    assert_eq!(memtrail_handlers(&b.json(&settings), "AfterAgent").len(), 1);
    apply(&b.plan_with(Action::Uninstall, &new_bin)).unwrap();
    common::assert_same("after upgrade and uninstall", &original, &b.snapshot());
}

#[test]
fn malformed_settings_are_left_untouched() {
    for (text, kind) in [
        ("{\n  \"hooks\": {\n    \"AfterAgent\": [\n", "parse"),
        ("[1, 2]\n", "array"),
        (
            "{\"mcpServers\": {}, \"mcpServers\": {\"x\": {}}}",
            "duplicate",
        ),
        ("{\"hooks\": []}", "conflict"),
    ] {
        let b = AgentBox::new(Agent::Gemini);
        let settings = b.home.join(".gemini/settings.json");
        b.put(&settings, Some(text));
        let before = b.snapshot();
        for action in [Action::Install, Action::Uninstall] {
            if kind == "conflict" && action == Action::Uninstall {
                // Nothing of memtrail's there: nothing to do.
                assert!(b.plan(action).is_empty());
                continue;
            }
            let e = plan_in(&b.env, Agent::Gemini, action, &b.bin).expect_err(kind);
            match (kind, &e) {
                ("parse", InstallError::Parse { path, line, .. }) => {
                    assert_eq!(path, &settings);
                    assert!(*line >= 3, "{e}");
                }
                ("array", InstallError::NotAnObject { .. }) => {}
                ("duplicate", InstallError::Parse { msg, .. }) => {
                    assert!(msg.contains("duplicate key"), "{msg}")
                }
                ("conflict", InstallError::Conflict { .. }) => {}
                _ => panic!("{kind}: {e}"),
            }
        }
        assert_eq!(b.snapshot(), before, "{kind}: untouched");
        let st = b.status();
        assert!(!st.healthy() || kind == "conflict", "{kind}: {st}");
    }
}

#[cfg(unix)]
#[test]
fn read_only_settings_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let b = AgentBox::new(Agent::Gemini);
    let settings = b.home.join(".gemini/settings.json");
    b.put(&settings, Some(PLAIN));
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = b.snapshot();
    let p = b.plan(Action::Install);
    assert!(!p.notes().is_empty());
    assert!(matches!(apply(&p), Err(InstallError::ReadOnly { .. })));
    assert_eq!(b.snapshot(), before);
}

#[test]
fn a_foreign_skill_is_never_overwritten() {
    for theirs in [
        "---\nname: other\n---\nmine\n",
        // The user's own skill that is also named `memtrail`.
        "---\nname: memtrail\ndescription: my own skill\n---\nmine\n",
    ] {
        a_foreign_skill_stays(theirs);
    }
}

fn a_foreign_skill_stays(theirs: &str) {
    let b = AgentBox::new(Agent::Gemini);
    let skill = b.home.join(".gemini/skills/memtrail/SKILL.md");
    b.put(&skill, Some(theirs));
    let before = b.snapshot();
    assert!(matches!(
        plan_in(&b.env, Agent::Gemini, Action::Install, &b.bin),
        Err(InstallError::Foreign { .. })
    ));
    assert!(b.plan(Action::Uninstall).is_empty());
    assert_eq!(b.snapshot(), before);
    let st = b.status();
    let s = st
        .items
        .iter()
        .find(|i| i.item == "skill memtrail")
        .unwrap();
    assert!(
        matches!(
            s.state,
            ItemState::Unreadable {
                kind: UnreadableKind::Foreign,
                ..
            }
        ),
        "{st}"
    );
}

#[test]
fn detection() {
    let b = AgentBox::new(Agent::Gemini);
    let st = b.status();
    assert!(!st.detected && st.healthy(), "{st}");
    std::fs::create_dir_all(b.home.join(".gemini")).unwrap();
    assert!(b.status().detected);
    let b = AgentBox::new(Agent::Gemini);
    let bin_dir = b.dir.path().join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let exe = bin_dir.join("gemini");
    std::fs::write(&exe, "#!/bin/sh\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let b = b.with_var("PATH", &bin_dir);
    assert!(b.status().detected);
}
