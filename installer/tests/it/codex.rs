//! Codex CLI: `$CODEX_HOME/config.toml` (`notify`, chained with a user's own;
//! `[mcp_servers.memtrail]`), `$CODEX_HOME/hooks.json` (trust reported by status) and the skill
//! in `$CODEX_HOME/skills` (an older install's in `~/.agents/skills` is removed).

use crate::common;

use common::{AgentBox, round_trip};
use memtrail_adapters::codex::registration as codex;
use memtrail_installer::{Action, Agent, InstallError, ItemState, UnreadableKind, apply, plan_in};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const COMMENTED: &str = r#"# my Codex config
model = "gpt-5-codex"
approval_policy = "on-request"   # ask first

[mcp_servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { GITHUB_TOKEN = "ghp_example" }

[tui]
notifications = true # bell
"#;

const NOTIFY: &str = r#"model = "o3"
notify = ["notify-send", "-a", "Codex"]  # desktop ping

[projects."/home/me/app"]
trust_level = "trusted"
"#;

const NOTIFY_MULTILINE: &str = "notify = [\n  \"python3\",\n  '/home/me/.codex/notify.py', # mine\n]\n\n[features]\nhooks = true\n";

const HOOK_STATE: &str = r#"model = "o3"

[hooks.state."/elsewhere/hooks.json:stop:0:0"]
enabled = true
trusted_hash = "sha256:0000"
"#;

const OTHER_HOOKS: &str = r#"{
  "hooks": {
    "SessionStart": [
      {
        "matcher": "startup|resume",
        "hooks": [
          { "type": "command", "command": "~/.codex/hooks/env.sh", "timeout": 10 }
        ]
      }
    ],
    "PreToolUse": [
      { "matcher": "^Bash$", "hooks": [{ "type": "command", "command": "/opt/guard" }] }
    ]
  }
}
"#;

struct Paths {
    config: PathBuf,
    hooks: PathBuf,
    skill: PathBuf,
}

fn paths(_: &AgentBox, codex_home: &Path) -> Paths {
    Paths {
        config: codex_home.join("config.toml"),
        hooks: codex_home.join("hooks.json"),
        skill: codex_home.join("skills/memtrail/SKILL.md"),
    }
}

fn toml(b: &AgentBox, p: &Path) -> toml_edit::DocumentMut {
    b.read(p).parse().expect("valid TOML")
}

fn notify(doc: &toml_edit::DocumentMut) -> Vec<String> {
    doc["notify"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn check(b: &AgentBox, p: &Paths, user_notify: &[&str]) {
    let doc = toml(b, &p.config);
    let bin = b.bin.to_str().unwrap();
    let mut want = vec![bin.to_string(), "hook".into(), "codex".into()];
    if !user_notify.is_empty() {
        want.push("--then".into());
        want.extend(user_notify.iter().map(|s| s.to_string()));
    }
    assert_eq!(notify(&doc), want);
    assert_eq!(
        doc["mcp_servers"]["memtrail"]["command"].as_str(),
        Some(bin)
    );
    assert_eq!(
        doc["mcp_servers"]["memtrail"]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect::<Vec<_>>(),
        ["mcp"]
    );
    // hooks.json stays strict JSON (Codex parses it with serde_json).
    let h: Value = serde_json::from_str(&b.read(&p.hooks)).expect("strict JSON");
    for e in codex::HOOKS {
        let groups = h["hooks"][e.event].as_array().unwrap();
        let last = groups.last().unwrap();
        assert_eq!(
            last,
            &json!({"hooks": [{"type": "command",
                               "command": format!("'{}' hook codex", b.bin.display()),
                               "timeout": e.timeout_secs}]}),
            "{}",
            e.event
        );
    }
    assert_eq!(b.read(&p.skill), codex::SKILL_MD);
}

#[test]
fn round_trips_real_world_configs() {
    type Case<'a> = (&'a str, Option<String>, Option<String>, &'a [&'a str]);
    let cases: Vec<Case> = vec![
        ("nothing yet", None, None, &[]),
        ("empty file", Some(String::new()), Some("{}\n".into()), &[]),
        (
            "comments and other servers",
            Some(COMMENTED.into()),
            Some(OTHER_HOOKS.into()),
            &[],
        ),
        (
            "a user notify",
            Some(NOTIFY.into()),
            None,
            &["notify-send", "-a", "Codex"],
        ),
        (
            "a multi-line notify with a comment",
            Some(NOTIFY_MULTILINE.into()),
            None,
            &["python3", "/home/me/.codex/notify.py"],
        ),
        (
            "CRLF",
            Some(COMMENTED.replace('\n', "\r\n")),
            Some(OTHER_HOOKS.replace('\n', "\r\n")),
            &[],
        ),
        (
            "CRLF notify",
            Some(NOTIFY.replace('\n', "\r\n")),
            None,
            &["notify-send", "-a", "Codex"],
        ),
        (
            "CRLF multi-line notify with a comment",
            Some(NOTIFY_MULTILINE.replace('\n', "\r\n")),
            None,
            &["python3", "/home/me/.codex/notify.py"],
        ),
        (
            "CRLF notify holding a multi-line string",
            Some("model = \"o3\"\r\nnotify = [\r\n  \"bash\",\r\n  \"-c\",\r\n  \"\"\"\r\necho hi\r\necho there\"\"\",\r\n]\r\n".into()),
            None,
            &["bash", "-c", "echo hi\r\necho there"],
        ),
        (
            "mixed line endings",
            Some("model = \"o3\"\r\n[tui]\nnotifications = true\r\n".into()),
            None,
            &[],
        ),
        (
            "tabs, no final newline",
            Some("model = \"o3\"\n[tui]\n\tnotifications = true".into()),
            None,
            &[],
        ),
        (
            "inline mcp_servers",
            Some("mcp_servers = { other = { command = \"x\" } }\n".into()),
            None,
            &[],
        ),
        (
            "someone else's trust records",
            Some(HOOK_STATE.into()),
            None,
            &[],
        ),
    ];
    for (name, config, hooks, user_notify) in cases {
        let b = AgentBox::new(Agent::Codex);
        let p = paths(&b, &b.home.join(".codex"));
        round_trip(
            &b,
            name,
            &[(p.config.clone(), config), (p.hooks.clone(), hooks)],
            &|b| check(b, &p, user_notify),
        );
    }
}

/// memtrail's Codex skill is in `$CODEX_HOME/skills`, never in `~/.agents/skills`: Gemini CLI
/// reads that folder after its own and a skill of the same name there overrides Gemini's own
/// (gemini 0.61.0). An older install's skill there is removed by install (a file there that is
/// not memtrail's stays), and uninstall leaves both places as they were before memtrail.
#[test]
fn the_skill_is_in_codex_home_and_a_former_one_in_agents_skills_goes() {
    let b = AgentBox::new(Agent::Codex);
    let p = paths(&b, &b.home.join(".codex"));
    let former = b.home.join(".agents/skills/memtrail/SKILL.md");
    std::fs::create_dir_all(b.home.join(".codex")).unwrap();
    b.put(&former, Some(codex::SKILL_MD));
    let st = b.status();
    assert!(
        st.items.iter().all(|i| i.file != former),
        "the former place is not an item: {st}"
    );
    b.install();
    assert_eq!(b.read(&p.skill), codex::SKILL_MD);
    assert!(!former.exists());
    assert!(!b.home.join(".agents/skills/memtrail").exists());
    assert!(b.status().healthy(), "{}", b.status());
    b.uninstall();
    assert!(!p.skill.exists());
    assert!(!b.home.join(".codex/skills").exists(), "install made it");
    // A file there that is not memtrail's skill is the user's: another name, or a skill of
    // their own also named `memtrail` (another description).
    for theirs in [
        "---\nname: my-notes\ndescription: my own notes\n---\nmine\n",
        "---\nname: memtrail\ndescription: my own skill\n---\nmine\n",
    ] {
        b.put(&former, Some(theirs));
        b.install();
        assert_eq!(b.read(&former), theirs);
        b.uninstall();
        assert_eq!(b.read(&former), theirs);
    }
}

#[test]
fn codex_home_and_file_modes() {
    let b = AgentBox::new(Agent::Codex);
    let home = b.dir.path().join("codex home");
    std::fs::create_dir_all(&home).unwrap();
    let b = b.with_var("CODEX_HOME", &home);
    let p = paths(&b, &home);
    round_trip(&b, "CODEX_HOME", &[], &|b| check(b, &p, &[]));
    b.install();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&p.config).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "a created config.toml is the owner's only");
    }
    assert!(b.status().detected);
}

/// The `trusted_hash` Codex would record for memtrail's handler of `event` in group `gi`:
/// reconstructed here independently of the installer's code.
fn expected_hash(label: &str, command: &str, timeout: u64) -> String {
    use sha2::Digest;
    let json = format!(
        "{{\"event_name\":{},\"hooks\":[{{\"async\":false,\"command\":{},\"timeout\":{timeout},\"type\":\"command\"}}]}}",
        serde_json::to_string(label).unwrap(),
        serde_json::to_string(command).unwrap()
    );
    let d = sha2::Sha256::digest(json.as_bytes());
    format!(
        "sha256:{}",
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

#[test]
fn status_reports_hook_trust() {
    let b = AgentBox::new(Agent::Codex);
    let p = paths(&b, &b.home.join(".codex"));
    b.put(&p.hooks, Some(OTHER_HOOKS));
    b.install();
    let st = b.status();
    for e in codex::HOOKS {
        let i = st
            .items
            .iter()
            .find(|i| i.item == format!("hook {}", e.event))
            .unwrap();
        match &i.state {
            ItemState::Untrusted { reason } => {
                assert!(reason.contains("not trusted yet") && reason.contains("/hooks"))
            }
            other => panic!("{other:?}"),
        }
    }
    // A notice, not a failure: Codex captures through `notify` until the user trusts them.
    assert!(st.healthy());
    assert_eq!(st.notices().count(), codex::HOOKS.len());
    // Each hook's line says what is the matter; what to do is said once, after them.
    let text = st.to_string();
    for e in codex::HOOKS {
        assert!(
            text.contains(&format!("  hook {}: not trusted yet (", e.event)),
            "{text}"
        );
    }
    assert_eq!(text.matches("open /hooks in Codex").count(), 1, "{text}");
    assert!(
        text.contains(&format!(
            "\n  what to do: {}{}\n",
            codex::HOW_TO_TRUST,
            codex::MEANWHILE
        )),
        "{text}"
    );
    // The user trusts them in /hooks: Codex writes one record per handler.
    let cmd = format!("'{}' hook codex", b.bin.display());
    let hooks_path = p.hooks.display().to_string();
    let mut text = b.read(&p.config);
    for e in codex::HOOKS {
        // memtrail's group is appended: SessionStart has the user's group first.
        let gi = if e.event == "SessionStart" { 1 } else { 0 };
        text.push_str(&format!(
            "\n[hooks.state.\"{hooks_path}:{}:{gi}:0\"]\nenabled = true\ntrusted_hash = \"{}\"\n",
            e.label,
            expected_hash(e.label, &cmd, e.timeout_secs)
        ));
    }
    std::fs::write(&p.config, &text).unwrap();
    let st = b.status();
    assert!(st.healthy(), "{st}");
    // A moved binary changes the command: Codex sees a changed hook.
    let new_bin = b.dir.path().join("moved/memtrail");
    let plan = b.plan_with(Action::Install, &new_bin);
    assert!(
        plan.describe()
            .iter()
            .any(|l| l.contains("hooks.json: note: Codex runs new or changed hooks only once")),
        "{:?}",
        plan.describe()
    );
    apply(&plan).unwrap();
    let st = memtrail_installer::status_in(&b.env, Agent::Codex, &new_bin).unwrap();
    let stop = st.items.iter().find(|i| i.item == "hook Stop").unwrap();
    assert!(
        matches!(&stop.state, ItemState::Untrusted { reason } if reason.contains("earlier version")),
        "{st}"
    );
    // Disabled in /hooks.
    let text = b.read(&p.config).replace(
        &format!("\"{hooks_path}:stop:0:0\"]\nenabled = true"),
        &format!("\"{hooks_path}:stop:0:0\"]\nenabled = false"),
    );
    std::fs::write(&p.config, text).unwrap();
    let st = memtrail_installer::status_in(&b.env, Agent::Codex, &new_bin).unwrap();
    let stop = st.items.iter().find(|i| i.item == "hook Stop").unwrap();
    assert!(
        matches!(&stop.state, ItemState::Untrusted { reason } if reason.contains("disabled")),
        "{st}"
    );
}

/// The trust advice says memtrail captures through `notify` meanwhile only while memtrail's
/// `notify` is in `config.toml`: once the user took it out, it says what to do and no more.
#[test]
fn trust_advice_promises_notify_only_while_it_is_there() {
    let b = AgentBox::new(Agent::Codex);
    let p = paths(&b, &b.home.join(".codex"));
    b.put(&p.config, Some("model = \"o3\"\n"));
    b.install();
    let reasons = |b: &AgentBox| -> Vec<(String, String)> {
        b.status()
            .items
            .into_iter()
            .filter_map(|i| match i.state {
                ItemState::Untrusted { reason } => Some((i.item, reason)),
                _ => None,
            })
            .collect()
    };
    let want = |how: &str| -> Vec<(String, String)> {
        codex::HOOKS
            .iter()
            .map(|e| {
                (
                    format!("hook {}", e.event),
                    format!("not trusted yet; {how}"),
                )
            })
            .collect()
    };
    let with_notify = "open /hooks in Codex and trust memtrail's hooks (until then memtrail captures through `notify` only)";
    assert_eq!(reasons(&b), want(with_notify));
    // The user deletes memtrail's notify line by hand.
    let text = b.read(&p.config);
    let without: String = text
        .lines()
        .filter(|l| !l.starts_with("notify"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(without, text);
    std::fs::write(&p.config, &without).unwrap();
    let st = b.status();
    let notify = st.items.iter().find(|i| i.item == "notify").unwrap();
    assert_eq!(notify.state, ItemState::Missing);
    assert_eq!(
        reasons(&b),
        want("open /hooks in Codex and trust memtrail's hooks")
    );
    let text = st.to_string();
    assert!(
        text.contains("\n  what to do: open /hooks in Codex and trust memtrail's hooks\n"),
        "{text}"
    );
    assert!(!text.contains("through `notify`"), "{text}");
    assert!(!st.healthy(), "notify missing: {st}");
}

#[test]
fn moved_binary_keeps_the_chain_and_uninstall_restores_the_user_notify() {
    let b = AgentBox::new(Agent::Codex);
    let p = paths(&b, &b.home.join(".codex"));
    b.put(&p.config, Some(NOTIFY_MULTILINE));
    let original = b.snapshot();
    b.install();
    let new_bin = b.dir.path().join("moved/memtrail");
    let st = memtrail_installer::status_in(&b.env, Agent::Codex, &new_bin).unwrap();
    let n = st.items.iter().find(|i| i.item == "notify").unwrap();
    assert_eq!(
        n.state,
        ItemState::Stale {
            points_at: Some(b.bin.to_str().unwrap().into())
        }
    );
    let plan = b.plan_with(Action::Install, &new_bin);
    assert!(
        plan.describe().iter().any(|l| l.contains("update notify")),
        "{:?}",
        plan.describe()
    );
    apply(&plan).unwrap();
    let doc = toml(&b, &p.config);
    assert_eq!(
        notify(&doc),
        [
            new_bin.to_str().unwrap(),
            "hook",
            "codex",
            "--then",
            "python3",
            "/home/me/.codex/notify.py"
        ]
    );
    assert!(b.plan_with(Action::Install, &new_bin).is_empty());
    apply(&b.plan_with(Action::Uninstall, &new_bin)).unwrap();
    common::assert_same("moved", &original, &b.snapshot());
}

#[test]
fn uninstall_without_install_state_unchains_notify() {
    let b = AgentBox::new(Agent::Codex);
    let p = paths(&b, &b.home.join(".codex"));
    b.put(&p.config, Some(NOTIFY));
    b.install();
    std::fs::remove_dir_all(b.state_dir()).unwrap();
    b.uninstall();
    let doc = toml(&b, &p.config);
    assert_eq!(notify(&doc), ["notify-send", "-a", "Codex"]);
    assert!(
        doc.get("mcp_servers")
            .is_none_or(|m| m.get("memtrail").is_none())
    );
    assert!(b.read(&p.config).contains("# desktop ping"));
}

/// memtrail created `hooks.json`, `config.toml` and the skill in an empty `~/.codex`, then the
/// user deleted memtrail's state folder: uninstall leaves no skeleton of them behind.
#[test]
fn uninstall_without_state_leaves_no_skeletons() {
    let b = AgentBox::new(Agent::Codex);
    let codex = b.home.join(".codex");
    std::fs::create_dir_all(&codex).unwrap();
    b.install();
    let p = paths(&b, &codex);
    assert!(p.hooks.exists() && p.config.exists() && p.skill.exists());
    std::fs::remove_dir_all(b.state_dir()).unwrap();
    b.uninstall();
    let left: Vec<String> = std::fs::read_dir(&codex)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let texts: Vec<String> = left
        .iter()
        .filter(|n| codex.join(n).is_file())
        .map(|n| format!("{n}: {:?}", b.read(&codex.join(n))))
        .collect();
    assert_eq!(left, Vec::<String>::new(), "{texts:?}");
}

#[test]
fn an_existing_memtrail_server_table_gets_its_values_back() {
    let b = AgentBox::new(Agent::Codex);
    let p = paths(&b, &b.home.join(".codex"));
    let text = "[mcp_servers.memtrail]\ncommand = \"/old/memtrail\" # old\nargs = [\"mcp\"]\nstartup_timeout_sec = 20\n";
    b.put(&p.config, Some(text));
    b.install();
    let doc = toml(&b, &p.config);
    assert_eq!(
        doc["mcp_servers"]["memtrail"]["command"].as_str(),
        b.bin.to_str()
    );
    assert_eq!(
        doc["mcp_servers"]["memtrail"]["startup_timeout_sec"].as_integer(),
        Some(20)
    );
    assert!(b.read(&p.config).contains("# old"), "the comment stays");
    b.uninstall();
    assert_eq!(b.read(&p.config), text);
}

#[test]
fn malformed_config_is_left_untouched() {
    for (text, line, col) in [
        (
            "model = \"o3\"\n\n[tui]\nnotifications = true\nnotifications = false\n",
            5,
            1,
        ),
        ("model = \"o3\"\nnotify = [\"a\",\n", 2, 15),
        ("[mcp_servers.x]\ncommand = \"x\"\n[mcp_servers.x]\n", 3, 14),
    ] {
        let b = AgentBox::new(Agent::Codex);
        let p = paths(&b, &b.home.join(".codex"));
        b.put(&p.config, Some(text));
        let before = b.snapshot();
        for action in [Action::Install, Action::Uninstall] {
            match plan_in(&b.env, Agent::Codex, action, &b.bin) {
                Err(InstallError::Parse {
                    path,
                    line: l,
                    col: c,
                    msg,
                }) => {
                    assert_eq!(path, p.config);
                    assert_eq!((l, c), (line, col), "{text}: {msg}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        assert_eq!(b.snapshot(), before);
        let st = b.status();
        let n = st.items.iter().find(|i| i.item == "notify").unwrap();
        assert!(
            matches!(
                n.state,
                ItemState::Unreadable {
                    kind: UnreadableKind::Parse,
                    ..
                }
            ),
            "{st}"
        );
    }
    // A notify that is not an array of strings, an mcp_servers that is not a table.
    for text in ["notify = \"say done\"\n", "mcp_servers = 3\n"] {
        let b = AgentBox::new(Agent::Codex);
        let p = paths(&b, &b.home.join(".codex"));
        b.put(&p.config, Some(text));
        let before = b.snapshot();
        assert!(matches!(
            plan_in(&b.env, Agent::Codex, Action::Install, &b.bin),
            Err(InstallError::Conflict { .. })
        ));
        assert_eq!(b.snapshot(), before);
    }
}

#[cfg(unix)]
#[test]
fn read_only_config_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let b = AgentBox::new(Agent::Codex);
    let p = paths(&b, &b.home.join(".codex"));
    b.put(&p.config, Some(COMMENTED));
    std::fs::set_permissions(&p.config, std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = b.snapshot();
    let plan = b.plan(Action::Install);
    assert!(
        plan.files()
            .iter()
            .any(|f| f.path == p.config && f.read_only)
    );
    assert!(matches!(apply(&plan), Err(InstallError::ReadOnly { .. })));
    assert_eq!(b.snapshot(), before);
}

/// A line appended to config.toml after install lands in `[mcp_servers.memtrail]` (install
/// put that table last; TOML puts a key in the table above it). Uninstall keeps the table with
/// it, and says so, instead of deleting the user's line; the rest of memtrail goes. The same
/// for a created config.toml: it is not deleted.
#[test]
fn uninstall_keeps_memtrails_table_when_it_holds_a_users_keys() {
    for before in [Some("approval_policy = \"never\"\n"), None] {
        let b = AgentBox::new(Agent::Codex);
        let p = paths(&b, &b.home.join(".codex"));
        std::fs::create_dir_all(b.home.join(".codex")).unwrap();
        b.put(&p.config, before);
        b.install();
        let installed = b.read(&p.config);
        assert!(installed.trim_end().ends_with("\"mcp\"]"), "{installed}");
        let appended = format!("{installed}model_reasoning_effort = \"high\"\n");
        std::fs::write(&p.config, &appended).unwrap();
        let plan = b.plan(Action::Uninstall);
        let said: Vec<String> = plan.files().iter().flat_map(|f| f.lines.clone()).collect();
        assert!(
            said.iter().any(|l| l.starts_with("keep MCP server memtrail: it holds keys memtrail did not write (model_reasoning_effort)")),
            "{said:?}"
        );
        apply(&plan).expect("uninstall");
        let after = b.read(&p.config);
        let doc = toml(&b, &p.config);
        assert_eq!(
            doc["mcp_servers"]["memtrail"]["model_reasoning_effort"].as_str(),
            Some("high"),
            "{after}"
        );
        assert!(
            doc.get("notify").is_none(),
            "memtrail's notify goes: {after}"
        );
        if let Some(before) = before {
            assert!(after.starts_with(before), "{after}");
        }
    }
}
