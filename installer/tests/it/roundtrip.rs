//! Install then uninstall gives back every file byte for byte; install twice equals install
//! once; a dry run writes nothing. Table-driven over real-world shapes of `settings.json` and
//! `~/.claude.json`.

use crate::common;

use common::{EVENTS, Sandbox, big_claude_json, jsonc, memtrail_handlers};
use memtrail_installer::{Action, Agent, ItemState, UnreadableKind, apply, status_in};
use serde_json::{Value, json};

const COMMENTED: &str = r#"{
  // my settings
  "permissions": {
    "allow": ["Bash(npm run test:*)", "Read(~/.zshrc)",],
    "deny": [],
  },
  /* model choice */
  "model": "opus",
  "env": {"FOO": "1",},
}
"#;

const OTHER_TOOLS: &str = r#"{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "~/.claude/hooks/guard.sh"
          }
        ]
      }
    ],
    "SessionStart": [
      {
        "matcher": "startup",
        "hooks": [
          {
            "type": "command",
            "command": "other-tool session-start",
            "timeout": 10
          }
        ]
      },
      {
        "hooks": [
          {
            "type": "command",
            "command": "/usr/local/bin/third hook",
            "async": true
          }
        ]
      }
    ],
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send done"
          }
        ]
      }
    ]
  },
  "statusLine": {
    "type": "command",
    "command": "~/.claude/statusline.sh"
  }
}
"#;

const OTHER_MCP: &str = r#"{
  "numStartups": 3,
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-github"
      ],
      "env": {
        "GITHUB_TOKEN": "ghp_example"
      }
    }
  },
  "projects": {}
}"#;

struct Case {
    name: &'static str,
    settings: Option<String>,
    global: Option<String>,
}

fn s(x: &str) -> Option<String> {
    Some(x.to_string())
}

fn cases() -> Vec<Case> {
    let crlf = OTHER_TOOLS.replace('\n', "\r\n");
    let tabs = "{\n\t\"model\": \"sonnet\",\n\t\"hooks\": {\n\t\t\"Stop\": [\n\t\t\t{\n\t\t\t\t\"hooks\": [\n\t\t\t\t\t{\"type\": \"command\", \"command\": \"say done\"}\n\t\t\t\t]\n\t\t\t}\n\t\t]\n\t}\n}\n";
    vec![
        Case {
            name: "nothing exists yet",
            settings: None,
            global: None,
        },
        Case {
            name: "empty objects",
            settings: s("{}"),
            global: s("{}\n"),
        },
        Case {
            name: "other tools' hooks in the same arrays",
            settings: s(OTHER_TOOLS),
            global: s("{\n  \"mcpServers\": {}\n}\n"),
        },
        Case {
            name: "CRLF",
            settings: Some(crlf),
            global: Some(OTHER_MCP.replace('\n', "\r\n")),
        },
        Case {
            name: "tabs",
            settings: s(tabs),
            global: s("{\n\t\"numStartups\": 1\n}"),
        },
        Case {
            name: "existing empty hooks",
            settings: s("{\n  \"model\": \"sonnet\",\n  \"hooks\": {}\n}\n"),
            global: s("{\"mcpServers\":{}}"),
        },
        Case {
            name: "empty hooks, blank inside",
            settings: s("{\n  \"hooks\": { },\n  \"x\": [ ]\n}\n"),
            global: s("{ }\n"),
        },
        Case {
            name: "empty event arrays",
            settings: s(
                "{\n  \"hooks\": {\n    \"Stop\": [],\n    \"SessionEnd\": [\n    ]\n  }\n}\n",
            ),
            global: None,
        },
        Case {
            name: "minified",
            settings: s(
                r#"{"model":"opus","hooks":{"Stop":[{"hooks":[{"type":"command","command":"x"}]}]}}"#,
            ),
            global: s(r#"{"mcpServers":{"a":{"command":"b"}},"z":1}"#),
        },
        Case {
            name: "empty and blank files",
            settings: s(""),
            global: s("  \n"),
        },
        Case {
            name: "odd key order and BOM",
            settings: s("{\"z\": 1, \"a\": {\"y\": [], \"b\": null}}"),
            global: s("\u{feff}{\n  \"numStartups\": 2\n}\n"),
        },
        Case {
            name: "huge .claude.json",
            settings: s("{\n  \"model\": \"opus\"\n}\n"),
            global: Some(big_claude_json(1_000_000)),
        },
    ]
}

/// The groups that were in `before` are still there, unchanged and in order, ahead of
/// memtrail's; every other key is unchanged.
fn assert_others_kept(name: &str, before: &Value, after: &Value) {
    let Some(b) = before.as_object() else { return };
    for (k, v) in b {
        if k == "hooks" {
            for (event, groups) in v.as_object().into_iter().flatten() {
                let now = after["hooks"][event].as_array().expect("still an array");
                let old = groups.as_array().unwrap();
                assert_eq!(&now[..old.len()], &old[..], "{name}: {event} groups kept");
            }
        } else if k == "mcpServers" {
            for (server, entry) in v.as_object().into_iter().flatten() {
                assert_eq!(&after[k][server], entry, "{name}: server {server} kept");
            }
        } else {
            assert_eq!(&after[k], v, "{name}: key {k} kept");
        }
    }
}

#[test]
fn install_then_uninstall_gives_back_the_original_bytes() {
    for (i, case) in cases().into_iter().enumerate() {
        let sb = if i % 2 == 0 {
            Sandbox::new()
        } else {
            Sandbox::with_config_dir()
        };
        sb.put(&sb.settings, case.settings.as_deref());
        sb.put(&sb.global, case.global.as_deref());
        let original = sb.snapshot();
        let name = case.name;

        // Dry run: a plan and its diff, nothing written (not even the state dir).
        let plan = sb.plan(Action::Install);
        assert!(!plan.is_empty(), "{name}");
        assert_eq!(plan.files().len(), 3, "{name}: three files change");
        let diff = plan.diff();
        assert!(
            diff.contains("+++ b/") && diff.contains("hook claude"),
            "{name}: {diff}"
        );
        assert!(
            plan.describe()
                .iter()
                .any(|l| l.ends_with("add hook SessionStart")),
            "{name}"
        );
        assert_eq!(sb.snapshot(), original, "{name}: dry run wrote nothing");
        assert!(!sb.state_dir().exists(), "{name}: dry run made no state");

        apply(&plan).expect("install");
        // Strict JSON in, strict JSON out (Claude Code reads these with JSON.parse).
        for (file, input) in [(&sb.settings, &case.settings), (&sb.global, &case.global)] {
            let strict_in = match input {
                None => true,
                Some(t) => {
                    let t = t.trim_start_matches('\u{feff}');
                    t.trim().is_empty() || serde_json::from_str::<Value>(t).is_ok()
                }
            };
            let out = std::fs::read_to_string(file).unwrap();
            if strict_in {
                let out = out.trim_start_matches('\u{feff}');
                if let Err(e) = serde_json::from_str::<Value>(out) {
                    panic!(
                        "{name}: {} is no longer strict JSON: {e}\n{out}",
                        file.display()
                    );
                }
            }
        }
        let settings = sb.json(&sb.settings);
        for (event, timeout) in EVENTS.iter().zip([30, 30, 30, 30, 30, 5]) {
            let hs = memtrail_handlers(&settings, event);
            assert_eq!(hs.len(), 1, "{name}: one handler for {event}");
            let h = &hs[0].1;
            assert_eq!(h["type"], "command");
            assert_eq!(h["timeout"], timeout, "{name}: {event} timeout");
            let cmd = h["command"].as_str().unwrap();
            assert_eq!(cmd, format!("'{}' hook claude", sb.bin.display()), "{name}");
        }
        let global = sb.json(&sb.global);
        assert_eq!(
            global["mcpServers"]["memtrail"],
            json!({"type": "stdio", "command": sb.bin.to_str().unwrap(), "args": ["mcp"], "env": {}}),
            "{name}"
        );
        if let Some(b) = &case.settings {
            assert_others_kept(name, &jsonc(b), &settings);
        }
        if let Some(b) = &case.global {
            assert_others_kept(name, &jsonc(b), &global);
        }
        assert_eq!(
            std::fs::read_to_string(&sb.skill).unwrap(),
            memtrail_adapters::claude::registration::SKILL_MD
        );
        let st = status_in(&sb.env, Agent::Claude, &sb.bin).unwrap();
        assert!(
            st.items.iter().all(|i| i.state == ItemState::Present),
            "{name}: {st}"
        );
        assert!(st.healthy());
        assert_eq!(st.items.len(), 8);

        // A second install changes nothing.
        let again = sb.plan(Action::Install);
        assert!(
            again.is_empty(),
            "{name}: second install:\n{}",
            again.diff()
        );

        sb.uninstall();
        let back = sb.snapshot();
        for (p, bytes) in &original {
            let now = back.get(p);
            assert_eq!(
                now.map(|b| b.as_deref().map(String::from_utf8_lossy)),
                Some(bytes.as_deref().map(String::from_utf8_lossy)),
                "{name}: {} after uninstall",
                p.display()
            );
        }
        assert_eq!(back, original, "{name}: nothing else left behind");
        let st = status_in(&sb.env, Agent::Claude, &sb.bin).unwrap();
        assert!(
            st.items.iter().all(|i| i.state == ItemState::Missing),
            "{name}: {st}"
        );
        assert!(
            sb.plan(Action::Uninstall).is_empty(),
            "{name}: second uninstall is empty"
        );
    }
}

#[test]
fn install_twice_in_a_row_equals_install_once() {
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some(OTHER_TOOLS));
    sb.install();
    let once = sb.snapshot();
    let p = sb.plan(Action::Install);
    assert!(p.is_empty());
    let applied = apply(&p).unwrap();
    assert!(applied.files.is_empty() && applied.backup_dir.is_none());
    assert_eq!(sb.snapshot(), once);
}

#[test]
fn uninstall_without_install_state_uses_the_oldest_backup() {
    for settings in [
        None,
        Some("{}\n"),
        Some(OTHER_TOOLS),
        Some("{\n  \"hooks\": {}\n}\n"),
    ] {
        let sb = Sandbox::new();
        sb.put(&sb.settings, settings);
        sb.put(&sb.global, Some(OTHER_MCP));
        let original = sb.snapshot();
        sb.install();
        std::fs::remove_file(sb.state_dir().join("install-state.json")).unwrap();
        sb.uninstall();
        let back = sb.snapshot();
        // memtrail's entries and the containers it created are gone; an existing empty `hooks`
        // stays. (The skill's parent `skills/` dir is only known from the state: it may stay.)
        for f in [&sb.settings, &sb.global] {
            assert_eq!(
                back.get(f),
                original.get(f),
                "{settings:?}: {}",
                f.display()
            );
        }
        assert!(!sb.skill.exists());
    }
}

/// The user deleted memtrail's whole state folder (install state and backups): uninstall still
/// removes exactly memtrail's entries (told by memtrail's command), and the containers that
/// held nothing else (the `hooks` object and its event arrays, a `settings.json` that held only
/// them), never a container of the user's that was empty already (`Notification: []`, and the
/// `hooks` object that keeps it). Before, every event array stayed behind, empty.
#[test]
fn uninstall_without_state_or_backup_removes_what_held_only_memtrails_entries() {
    for (name, before, after) in [
        (
            "a setting of the user's",
            Some("{\n  \"model\": \"opus\"\n}\n"),
            Some("{\n  \"model\": \"opus\"\n}\n"),
        ),
        (
            "an empty array of the user's",
            Some("{\n  \"hooks\": {\n    \"Notification\": []\n  },\n  \"model\": \"opus\"\n}\n"),
            Some("{\n  \"hooks\": {\n    \"Notification\": []\n  },\n  \"model\": \"opus\"\n}\n"),
        ),
        ("no settings.json", None, None),
    ] {
        let sb = Sandbox::new();
        sb.put(&sb.settings, before);
        sb.install();
        assert!(!memtrail_handlers(&sb.json(&sb.settings), "Stop").is_empty());
        std::fs::remove_dir_all(sb.state_dir()).unwrap();
        sb.uninstall();
        assert_eq!(
            std::fs::read_to_string(&sb.settings).ok().as_deref(),
            after,
            "{name}"
        );
    }
}

/// Without the install state (deleted by hand) but with the backups, the oldest backup says
/// what was there: a user's `Stop: []`, empty before install, stays empty after uninstall,
/// while the event arrays install created go.
#[test]
fn uninstall_without_install_state_keeps_a_users_empty_array() {
    let sb = Sandbox::new();
    let text = "{\n  \"hooks\": {\n    \"Stop\": []\n  }\n}\n";
    sb.put(&sb.settings, Some(text));
    sb.install();
    std::fs::remove_file(sb.state_dir().join("install-state.json")).unwrap();
    sb.uninstall();
    assert_eq!(sb.read(&sb.settings), text);
}

#[test]
fn uninstall_keeps_what_the_user_added_meanwhile() {
    let sb = Sandbox::new();
    sb.install();
    // The user adds their own Stop hook next to memtrail's, and a setting.
    let mut v = sb.json(&sb.settings);
    v["hooks"]["Stop"]
        .as_array_mut()
        .unwrap()
        .push(json!({"hooks": [{"type": "command", "command": "say done"}]}));
    v["model"] = json!("opus");
    std::fs::write(&sb.settings, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    sb.uninstall();
    let v = sb.json(&sb.settings);
    assert_eq!(
        v,
        json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}, "model": "opus"})
    );
}

/// Claude Code reads `settings.json` and `.claude.json` as strict JSON: with a comment or a
/// trailing comma it skips the whole settings file ("Invalid or malformed JSON", checked with
/// Claude Code 2.1.332), and will not start with such a `.claude.json`. Install refuses them,
/// naming the place, and leaves them untouched; status says Claude will not run these hooks.
/// Uninstall still takes memtrail's entries out of such a file (comments kept). Before, install
/// wrote its hooks into the file as if they would run.
#[test]
fn claude_refuses_files_it_would_ignore() {
    for (settings, line, col, what) in [
        (COMMENTED, 2, 3, "a comment"),
        ("// settings go here\n", 1, 1, "a comment"),
        ("{\"model\": \"opus\",}", 1, 18, "a trailing comma"),
    ] {
        let sb = Sandbox::new();
        sb.put(&sb.settings, Some(settings));
        let original = sb.snapshot();
        let err = memtrail_installer::plan_in(&sb.env, Agent::Claude, Action::Install, &sb.bin)
            .expect_err("refused");
        match &err {
            memtrail_installer::InstallError::NotStrictJson {
                path,
                line: l,
                col: c,
                what: w,
                ..
            } => {
                assert_eq!(path, &sb.settings);
                assert_eq!((*l, *c, w.as_str()), (line, col, what), "{settings}");
            }
            other => panic!("{other:?}"),
        }
        let msg = err.to_string();
        assert!(
            msg.contains("will not run these hooks") && msg.contains("left untouched"),
            "{msg}"
        );
        assert_eq!(sb.snapshot(), original);
        let st = status_in(&sb.env, Agent::Claude, &sb.bin).unwrap();
        assert!(!st.healthy());
        let hooks: Vec<_> = st
            .items
            .iter()
            .filter(|i| i.item.starts_with("hook"))
            .collect();
        assert_eq!(hooks.len(), 6);
        for i in hooks {
            match &i.state {
                ItemState::Unreadable {
                    error,
                    kind: UnreadableKind::NotStrictJson,
                } => assert_eq!(
                    error,
                    &format!(
                        "not strict JSON (line {line}, column {col}: {what}), so Claude Code skips the whole file (\"Invalid or malformed JSON\"): it will not run these hooks; remove comments and trailing commas"
                    )
                ),
                other => panic!("{other:?}"),
            }
        }
    }
    // .claude.json: Claude Code does not start with it.
    let sb = Sandbox::new();
    sb.put(&sb.global, Some("{\n  \"numStartups\": 3, /* mine */\n}\n"));
    let err = memtrail_installer::plan_in(&sb.env, Agent::Claude, Action::Install, &sb.bin)
        .expect_err("refused");
    assert!(
        err.to_string().contains("line 2, column 21: a comment")
            && err.to_string().contains("refuses to start"),
        "{err}"
    );
    // An older install's hooks in a file that became JSONC are still uninstalled.
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some("{\n  \"model\": \"opus\"\n}\n"));
    sb.install();
    let text = std::fs::read_to_string(&sb.settings).unwrap();
    let jsonc = text.replacen("{\n", "{\n  // mine\n", 1);
    std::fs::write(&sb.settings, &jsonc).unwrap();
    sb.uninstall();
    assert_eq!(
        std::fs::read_to_string(&sb.settings).unwrap(),
        "{\n  // mine\n  \"model\": \"opus\"\n}\n"
    );
}
