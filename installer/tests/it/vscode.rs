//! VS Code: memtrail's hook file `~/.config/memtrail/vscode-hooks.json`, its entry in
//! `chat.hookFilesLocations` of each user `settings.json` (JSONC), and `servers.memtrail` in each
//! user `mcp.json`.

use crate::common;

use common::{AgentBox, round_trip};
use memtrail_adapters::vscode::registration as vscode;
use memtrail_installer::{Action, Agent, InstallError, apply, plan_in};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const SETTINGS: &str = r#"{
    // editor
    "editor.fontSize": 14,
    "http.proxy": "http://proxy.example:8080", // a URL inside a string
    "files.exclude": {"**/.git": true,},
    /* "chat.hookFilesLocations": {"old": true}, */
    "github.copilot.enable": {"*": true, "markdown": false},
}
"#;

const WITH_LOCATIONS: &str = r#"{
  "workbench.colorTheme": "Default Dark Modern",
  "chat.hookFilesLocations": {
    ".github/hooks": true,
    "~/.claude/settings.json": false
  },
  "chat.useHooks": true
}
"#;

const MCP: &str = r#"{
	"servers": {
		"github": {
			"type": "http",
			"url": "https://api.githubcopilot.com/mcp/"
		}
	},
	"inputs": [
		{"type": "promptString", "id": "token", "description": "Token", "password": true}
	]
}"#;

fn user(b: &AgentBox, insiders: bool) -> PathBuf {
    b.home.join(if insiders {
        ".config/Code - Insiders/User"
    } else {
        ".config/Code/User"
    })
}

fn hook_file(b: &AgentBox) -> PathBuf {
    b.home.join(".config/memtrail/vscode-hooks.json")
}

fn check(b: &AgentBox, dir: &Path, settings_before: Option<&str>) {
    let h = b.json(&hook_file(b));
    for e in vscode::HOOKS {
        assert_eq!(
            h["hooks"][e.event],
            json!([{"type": "command", "command": format!("'{}' hook vscode", b.bin.display()),
                    "timeout": e.timeout_secs}]),
            "{}",
            e.event
        );
    }
    let s = b.json(&dir.join("settings.json"));
    assert_eq!(
        s["chat.hookFilesLocations"]["~/.config/memtrail/vscode-hooks.json"],
        Value::Bool(true)
    );
    if let Some(o) = settings_before {
        let o = common::jsonc(o);
        for (k, v) in o.as_object().unwrap() {
            if k == "chat.hookFilesLocations" {
                for (p, on) in v.as_object().unwrap() {
                    assert_eq!(&s[k][p], on);
                }
            } else {
                assert_eq!(&s[k], v, "{k}");
            }
        }
        if o.get("http.proxy").is_some() {
            let text = b.read(&dir.join("settings.json"));
            assert!(text.contains("\"http.proxy\": \"http://proxy.example:8080\", // a URL"));
        }
    }
    let m = b.json(&dir.join("mcp.json"));
    assert_eq!(
        m["servers"]["memtrail"],
        json!({"type": "stdio", "command": b.bin.to_str().unwrap(), "args": ["mcp"]})
    );
}

#[test]
fn round_trips_real_world_settings() {
    let cases: Vec<(&str, Option<String>, Option<String>)> = vec![
        ("nothing yet", None, None),
        (
            "JSONC with comments, trailing commas, a URL",
            Some(SETTINGS.into()),
            Some(MCP.into()),
        ),
        (
            "existing chat.hookFilesLocations",
            Some(WITH_LOCATIONS.into()),
            None,
        ),
        (
            "CRLF",
            Some(WITH_LOCATIONS.replace('\n', "\r\n")),
            Some(MCP.replace('\n', "\r\n")),
        ),
        ("empty objects", Some("{}".into()), Some("{\n}\n".into())),
    ];
    for (name, settings, mcp) in cases {
        let b = AgentBox::new(Agent::Vscode);
        let dir = user(&b, false);
        let s0 = settings.clone();
        round_trip(
            &b,
            name,
            &[
                (dir.join("settings.json"), settings),
                (dir.join("mcp.json"), mcp),
            ],
            &|b| check(b, &dir, s0.as_deref()),
        );
    }
}

#[test]
fn stable_and_insiders_both_get_it() {
    let b = AgentBox::new(Agent::Vscode);
    let (stable, insiders) = (user(&b, false), user(&b, true));
    round_trip(
        &b,
        "both",
        &[
            (stable.join("settings.json"), Some(SETTINGS.into())),
            (insiders.join("settings.json"), Some(WITH_LOCATIONS.into())),
        ],
        &|b| {
            check(b, &stable, Some(SETTINGS));
            check(b, &insiders, Some(WITH_LOCATIONS));
        },
    );
    // Insiders alone: only Insiders.
    let b = AgentBox::new(Agent::Vscode);
    let insiders = user(&b, true);
    std::fs::create_dir_all(&insiders).unwrap();
    b.install();
    assert!(insiders.join("mcp.json").exists());
    assert!(!user(&b, false).exists());
    assert!(b.status().detected);
}

#[test]
fn malformed_settings_are_left_untouched() {
    for text in [
        "{\n  \"editor.fontSize\": 14,\n  \"chat.hookFilesLocations\": {\n",
        "{\"chat.hookFilesLocations\": [\".github/hooks\"]}",
        "{\"chat.hookFilesLocations\": {}, \"chat.hookFilesLocations\": {}}",
    ] {
        let b = AgentBox::new(Agent::Vscode);
        let p = user(&b, false).join("settings.json");
        b.put(&p, Some(text));
        let before = b.snapshot();
        match plan_in(&b.env, Agent::Vscode, Action::Install, &b.bin) {
            Err(InstallError::Parse { path, .. }) | Err(InstallError::Conflict { path, .. }) => {
                assert_eq!(path, p)
            }
            other => panic!("{text}: {other:?}"),
        }
        assert_eq!(b.snapshot(), before);
    }
}

#[test]
fn moved_binary_and_a_disabled_entry() {
    let b = AgentBox::new(Agent::Vscode);
    let dir = user(&b, false);
    b.put(&dir.join("settings.json"), Some(WITH_LOCATIONS));
    let original = b.snapshot();
    b.install();
    let new_bin = b.dir.path().join("moved/memtrail");
    apply(&b.plan_with(Action::Install, &new_bin)).unwrap();
    assert_eq!(
        b.json(&hook_file(&b))["hooks"]["Stop"][0]["command"],
        format!("{} hook vscode", new_bin.display())
    );
    assert!(b.plan_with(Action::Install, &new_bin).is_empty());
    apply(&b.plan_with(Action::Uninstall, &new_bin)).unwrap();
    common::assert_same("moved", &original, &b.snapshot());
    // The user switched memtrail's file off: install switches it on, uninstall puts `false`
    // back.
    let off = WITH_LOCATIONS.replace(
        "\"~/.claude/settings.json\": false",
        "\"~/.claude/settings.json\": false,\n    \"~/.config/memtrail/vscode-hooks.json\": false",
    );
    b.put(&dir.join("settings.json"), Some(&off));
    b.install();
    assert_eq!(
        b.json(&dir.join("settings.json"))["chat.hookFilesLocations"]["~/.config/memtrail/vscode-hooks.json"],
        true
    );
    b.uninstall();
    assert_eq!(b.read(&dir.join("settings.json")), off);
}

/// The user added a hook of their own to memtrail's hook file: uninstall takes memtrail's
/// hooks out of it but keeps the file and its entry in `chat.hookFilesLocations` (without it,
/// VS Code would stop loading the user's hook), and says so. Once the file holds nothing of
/// theirs, a later uninstall takes the entry out.
#[test]
fn uninstall_keeps_the_hook_file_entry_while_it_holds_a_users_hook() {
    let b = AgentBox::new(Agent::Vscode);
    let dir = user(&b, false);
    b.put(&dir.join("settings.json"), Some(WITH_LOCATIONS));
    b.install();
    let hf = hook_file(&b);
    let mut v = b.json(&hf);
    v["hooks"]["Stop"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "command", "command": "./my-stop.sh"}));
    std::fs::write(&hf, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let settings_installed = b.read(&dir.join("settings.json"));

    let plan = b.plan(Action::Uninstall);
    let said = plan.describe();
    let keep = "~/.config/Code/User/settings.json: keep hook file in chat.hookFilesLocations: ~/.config/memtrail/vscode-hooks.json holds hooks memtrail did not write (Stop), which this keeps loading";
    assert!(said.iter().any(|l| l == keep), "{said:#?}");
    apply(&plan).expect("uninstall");
    assert_eq!(b.read(&dir.join("settings.json")), settings_installed);
    assert_eq!(
        b.json(&hf),
        json!({"hooks": {"Stop": [{"type": "command", "command": "./my-stop.sh"}]}})
    );
    assert!(!dir.join("mcp.json").exists(), "memtrail's mcp.json goes");
    // Said again by the next uninstall, which changes nothing.
    let again = b.plan(Action::Uninstall);
    assert_eq!(again.describe(), vec![keep.to_string()]);
    // What stays is said, and counted as no change (it was "1 change").
    assert_eq!(plan.change_count(), plan.describe().len() - 1);
    assert_eq!(again.change_count(), 0);

    // The user moves their hook elsewhere: the entry goes, the file (theirs now) stays.
    std::fs::write(&hf, "{\"hooks\": {\"Stop\": []}}\n").unwrap();
    b.uninstall();
    assert_eq!(b.read(&dir.join("settings.json")), WITH_LOCATIONS);
    assert_eq!(b.read(&hf), "{\"hooks\": {\"Stop\": []}}\n");
}
