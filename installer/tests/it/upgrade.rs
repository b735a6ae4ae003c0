//! A moved binary, duplicated handlers, and what `status` reports about them.

use crate::common;

use common::{EVENTS, Sandbox, memtrail_handlers};
use memtrail_installer::{Action, Agent, ItemState, apply, status_in};
use serde_json::json;

const WITH_OTHERS: &str = r#"{
  "hooks": {
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
  }
}
"#;

#[test]
fn moved_binary_is_updated_in_place() {
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some(WITH_OTHERS));
    sb.put(
        &sb.global,
        Some("{\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}\n  }\n}\n"),
    );
    let original = sb.snapshot();
    sb.install();
    let installed = std::fs::read_to_string(&sb.settings).unwrap();

    let moved = sb.dir.path().join("new-home/bin/memtrail");
    let st = status_in(&sb.env, Agent::Claude, &moved).unwrap();
    let old = sb.bin.to_str().unwrap().to_string();
    for item in st
        .items
        .iter()
        .filter(|i| i.item.starts_with("hook") || i.item.starts_with("MCP"))
    {
        assert_eq!(
            item.state,
            ItemState::Stale {
                points_at: Some(old.clone())
            },
            "{}",
            item.item
        );
        assert_eq!(item.binary.as_deref(), Some(old.as_str()));
    }
    assert!(!st.healthy());

    let plan = sb.plan_with(Action::Install, &moved);
    let lines = plan.describe();
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with(&format!("update hook Stop: {old} → {}", moved.display()))),
        "{lines:#?}"
    );
    assert_eq!(plan.files().len(), 2, "the skill is unchanged");
    apply(&plan).unwrap();

    // Same shape, only the command strings changed: one line per event plus the MCP command.
    let now = std::fs::read_to_string(&sb.settings).unwrap();
    let quoted_old = format!("'{old}' hook claude");
    let new_cmd = format!("{} hook claude", moved.display());
    assert_eq!(now, installed.replace(&quoted_old, &new_cmd));
    let v = sb.json(&sb.settings);
    for e in EVENTS {
        let hs = memtrail_handlers(&v, e);
        assert_eq!(hs.len(), 1, "{e}: no second entry");
        assert_eq!(hs[0].1["command"], json!(new_cmd));
    }
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"][0]["command"],
        "notify-send done"
    );
    assert_eq!(
        sb.json(&sb.global)["mcpServers"]["memtrail"]["command"],
        json!(moved.to_str().unwrap())
    );
    let st = status_in(&sb.env, Agent::Claude, &moved).unwrap();
    assert!(st.healthy(), "{st}");

    // Uninstall (with the new binary) still gives back the original files.
    apply(&sb.plan_with(Action::Uninstall, &moved)).unwrap();
    assert_eq!(sb.snapshot(), original);
}

#[test]
fn user_tweaks_to_memtrail_entries_survive_reinstall() {
    let sb = Sandbox::new();
    sb.install();
    // A longer timeout and an env var are the user's business.
    let text = std::fs::read_to_string(&sb.settings).unwrap().replacen(
        "\"timeout\": 30",
        "\"timeout\": 90",
        1,
    );
    std::fs::write(&sb.settings, text).unwrap();
    let g = std::fs::read_to_string(&sb.global)
        .unwrap()
        .replace("\"env\": {}", "\"env\": {\"MEMTRAIL_DB\": \"/data/m.db\"}");
    std::fs::write(&sb.global, g).unwrap();
    assert!(sb.plan(Action::Install).is_empty());
    let st = status_in(&sb.env, Agent::Claude, &sb.bin).unwrap();
    assert!(st.healthy(), "{st}");
}

#[test]
fn exec_form_handler_is_converted_in_place() {
    let sb = Sandbox::new();
    sb.put(
        &sb.settings,
        Some(r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/old/memtrail", "args": ["hook", "claude"], "timeout": 30}]}]}}"#),
    );
    let st = status_in(&sb.env, Agent::Claude, &sb.bin).unwrap();
    let stop = st.items.iter().find(|i| i.item == "hook Stop").unwrap();
    assert_eq!(
        stop.state,
        ItemState::Stale {
            points_at: Some("/old/memtrail".into())
        }
    );
    sb.install();
    let v = sb.json(&sb.settings);
    let hs = memtrail_handlers(&v, "Stop");
    assert_eq!(hs.len(), 1);
    assert_eq!(
        hs[0].1,
        json!({"type": "command", "command": format!("'{}' hook claude", sb.bin.display()), "timeout": 30})
    );
}

#[test]
fn duplicates_are_reported_and_collapsed() {
    let sb = Sandbox::new();
    let bin = sb.bin.to_str().unwrap();
    let ours = |b: &str| json!({"type": "command", "command": format!("'{b}' hook claude"), "timeout": 30});
    let settings = json!({
        "hooks": {
            "Stop": [
                {"hooks": [ours(bin)]},
                {"hooks": [{"type": "command", "command": "notify-send done"}, ours("/old/memtrail")]},
                {"matcher": "", "hooks": [ours(bin), ours(bin)]},
            ],
            "SessionStart": [{"hooks": [ours(bin)]}, {"hooks": [ours(bin)]}],
        }
    });
    sb.put(
        &sb.settings,
        Some(&serde_json::to_string_pretty(&settings).unwrap()),
    );
    let st = status_in(&sb.env, Agent::Claude, &sb.bin).unwrap();
    let state = |name: &str| {
        st.items
            .iter()
            .find(|i| i.item == name)
            .unwrap()
            .state
            .clone()
    };
    assert_eq!(state("hook Stop"), ItemState::Duplicate { count: 4 });
    assert_eq!(
        state("hook SessionStart"),
        ItemState::Duplicate { count: 2 }
    );
    assert_eq!(state("hook PreCompact"), ItemState::Missing);

    let plan = sb.plan(Action::Install);
    assert!(
        plan.describe()
            .iter()
            .any(|l| l.ends_with("remove 3 duplicates of hook Stop")),
        "{:#?}",
        plan.describe()
    );
    apply(&plan).unwrap();
    let v = sb.json(&sb.settings);
    for e in EVENTS {
        assert_eq!(memtrail_handlers(&v, e).len(), 1, "{e}");
    }
    // The first occurrence is kept; the other tool's handler stays in its group.
    assert_eq!(
        v["hooks"]["Stop"],
        json!([
            {"hooks": [ours(bin)]},
            {"hooks": [{"type": "command", "command": "notify-send done"}]},
        ])
    );
    let st = status_in(&sb.env, Agent::Claude, &sb.bin).unwrap();
    assert!(st.healthy(), "{st}");

    sb.uninstall();
    let v = sb.json(&sb.settings);
    assert_eq!(
        v,
        json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}], "SessionStart": []}})
    );
}

#[test]
fn stale_skill_is_reported_and_rewritten() {
    let sb = Sandbox::new();
    sb.put(&sb.skill, Some("---\nname: memtrail\ndescription: Search the user's past coding-agent sessions (an old version)\n---\nold text\n"));
    let st = status_in(&sb.env, Agent::Claude, &sb.bin).unwrap();
    let skill = st
        .items
        .iter()
        .find(|i| i.item == "skill memtrail")
        .unwrap();
    assert_eq!(skill.state, ItemState::Stale { points_at: None });
    let plan = sb.plan(Action::Install);
    assert!(
        plan.describe()
            .iter()
            .any(|l| l.ends_with("update skill memtrail"))
    );
    let applied = apply(&plan).unwrap();
    let f = applied.files.iter().find(|f| f.path == sb.skill).unwrap();
    assert_eq!(
        std::fs::read(f.backup.as_ref().unwrap()).unwrap(),
        b"---\nname: memtrail\ndescription: Search the user's past coding-agent sessions (an old version)\n---\nold text\n"
    );
    assert_eq!(
        std::fs::read_to_string(&sb.skill).unwrap(),
        memtrail_adapters::claude::registration::SKILL_MD
    );
}

#[test]
fn status_output() {
    let sb = Sandbox::new();
    let st = status_in(&sb.env, Agent::Claude, &sb.bin).unwrap();
    assert!(!st.detected, "no config dir and an empty PATH");
    assert!(st.healthy(), "not detected and nothing registered");
    let v = serde_json::to_value(&st).unwrap();
    assert_eq!(v["agent"], "claude");
    assert_eq!(v["items"][0]["item"], "hook SessionStart");
    assert_eq!(v["items"][0]["state"], "missing");
    sb.install();
    let st = status_in(&sb.env, Agent::Claude, &sb.bin).unwrap();
    assert!(st.detected, "the config dir exists now");
    let text = st.to_string();
    assert!(text.contains("  hook Stop: present ("), "{text}");
    let v = serde_json::to_value(&st).unwrap();
    assert_eq!(v["items"][6]["item"], "MCP server memtrail");
    assert_eq!(v["items"][6]["state"], "present");
    assert_eq!(v["items"][6]["binary"], sb.bin.to_str().unwrap());

    // `claude` on PATH counts as detected too.
    let sb = Sandbox::new();
    let bindir = sb.dir.path().join("pathbin");
    std::fs::create_dir_all(&bindir).unwrap();
    let claude = bindir.join("claude");
    std::fs::write(&claude, "#!/bin/sh\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let env = sb.env.clone().with_var("PATH", &bindir);
    assert!(status_in(&env, Agent::Claude, &sb.bin).unwrap().detected);
}

#[test]
fn equivalent_quoting_counts_as_present() {
    let sb = Sandbox::new();
    sb.install();
    let bin = sb.bin.to_str().unwrap();
    let text = std::fs::read_to_string(&sb.settings).unwrap().replace(
        &format!("'{bin}' hook claude"),
        &format!("\\\"{bin}\\\"  hook claude"),
    );
    std::fs::write(&sb.settings, &text).unwrap();
    let st = status_in(&sb.env, Agent::Claude, &sb.bin).unwrap();
    assert!(st.healthy(), "{st}");
    assert!(sb.plan(Action::Install).is_empty(), "nothing to rewrite");
}

const OLD_SETTINGS: &str = r#"{
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {"type": "command", "command": "/opt/old/memtrail hook claude", "timeout": 45}
        ]
      }
    ]
  }
}
"#;

const OLD_GLOBAL: &str = r#"{
  "mcpServers": {
    "memtrail": {
      "command": "/opt/old/memtrail",
      "args": ["mcp"],
      "env": {"MEMTRAIL_DB": "/data/old.db"}
    }
  }
}
"#;

/// An older install (another binary, extra `env`) is updated in place by install, and given
/// back byte for byte by uninstall.
#[test]
fn an_earlier_memtrail_entry_is_restored_by_uninstall() {
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some(OLD_SETTINGS));
    sb.put(&sb.global, Some(OLD_GLOBAL));
    let original = sb.snapshot();
    let bin = sb.bin.to_str().unwrap().to_string();

    let plan = sb.plan(Action::Install);
    let lines = plan.describe();
    for l in [
        format!("~/.claude/settings.json: update hook Stop: /opt/old/memtrail → {bin}"),
        format!("~/.claude.json: update MCP server memtrail: /opt/old/memtrail → {bin}"),
    ] {
        assert!(lines.contains(&l), "{lines:#?}");
    }
    apply(&plan).unwrap();
    let g = sb.json(&sb.global);
    assert_eq!(g["mcpServers"]["memtrail"]["command"], json!(bin));
    assert_eq!(
        g["mcpServers"]["memtrail"]["env"],
        json!({"MEMTRAIL_DB": "/data/old.db"})
    );
    assert_eq!(memtrail_handlers(&sb.json(&sb.settings), "Stop").len(), 1);
    assert!(
        status_in(&sb.env, Agent::Claude, &sb.bin)
            .unwrap()
            .healthy()
    );

    let un = sb.plan(Action::Uninstall);
    let lines = un.describe();
    for l in [
        format!("~/.claude/settings.json: restore hook Stop: {bin} → /opt/old/memtrail"),
        format!("~/.claude.json: restore MCP server memtrail: {bin} → /opt/old/memtrail"),
    ] {
        assert!(lines.contains(&l), "{lines:#?}");
    }
    apply(&un).unwrap();
    assert_eq!(
        sb.snapshot(),
        original,
        "the old entries are back, byte for byte"
    );

    // Updated again in between (the binary moved): still the first original comes back.
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some(OLD_SETTINGS));
    sb.put(&sb.global, Some(OLD_GLOBAL));
    let original = sb.snapshot();
    sb.install();
    let moved = sb.dir.path().join("moved/memtrail");
    apply(&sb.plan_with(Action::Install, &moved)).unwrap();
    apply(&sb.plan_with(Action::Uninstall, &moved)).unwrap();
    assert_eq!(sb.snapshot(), original);

    // Changed since install: not what install wrote, so it is removed like any memtrail entry
    // (the untouched hook is still restored).
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some(OLD_SETTINGS));
    sb.put(&sb.global, Some(OLD_GLOBAL));
    sb.install();
    let g = std::fs::read_to_string(&sb.global)
        .unwrap()
        .replace("/data/old.db", "/data/new.db");
    std::fs::write(&sb.global, g).unwrap();
    sb.uninstall();
    assert_eq!(sb.json(&sb.global), json!({"mcpServers": {}}));
    assert_eq!(std::fs::read_to_string(&sb.settings).unwrap(), OLD_SETTINGS);
}

/// Hooks the user wrapped (`nice -n 5 …/memtrail hook claude`, `timeout 10 …`) are memtrail's:
/// status counts them present, install keeps the wrapper, and uninstall removes them (before,
/// uninstall left them behind and a reinstall added a second hook next to each).
#[test]
fn hooks_the_user_wrapped_are_found_kept_and_uninstalled() {
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some("{\n  \"model\": \"opus\"\n}\n"));
    let original = sb.snapshot();
    sb.install();
    let bin = sb.bin.to_str().unwrap();
    let plain = format!("'{bin}' hook claude");
    let text = std::fs::read_to_string(&sb.settings).unwrap();
    assert_eq!(text.matches(&plain).count(), 6, "{text}");
    let text = text
        .replacen(&plain, &format!("nice -n 5 {plain}"), 1)
        .replacen(&plain, &format!("timeout 10 {plain}"), 1);
    std::fs::write(&sb.settings, &text).unwrap();

    let st = status_in(&sb.env, Agent::Claude, &sb.bin).unwrap();
    assert!(st.healthy(), "{st}");
    assert!(sb.plan(Action::Install).is_empty(), "the wrappers are kept");

    sb.uninstall();
    let after = std::fs::read_to_string(&sb.settings).unwrap();
    assert!(!after.contains("memtrail"), "{after}");
    assert_eq!(sb.snapshot(), original, "given back byte for byte");
}

/// A hook the user wrapped keeps its wrapper when memtrail's binary moves: a reinstall from the
/// new path replaces only memtrail's path in the command (`env FOO=1 nice -n 5 /old/memtrail
/// hook claude` → `env FOO=1 nice -n 5 '/new dir/memtrail' hook claude`); before, it wrote the
/// plain command. A wrapped entry that was there before memtrail's first install (an older
/// memtrail's) gets its exact text back at uninstall; one that install added goes.
#[test]
fn a_wrapped_hook_keeps_its_wrapper_when_the_binary_moves() {
    let old = "/old/path/memtrail";
    let wrapped = |bin: &str| format!("env FOO=1 nice -n 5 {bin} hook claude");
    let new_bin = std::path::PathBuf::from("/new dir/bin/memtrail");
    let new_wrapped = wrapped("'/new dir/bin/memtrail'");
    let command_of = |sb: &Sandbox, event: &str| {
        memtrail_handlers(&sb.json(&sb.settings), event)
            .first()
            .map(|(_, h)| h["command"].as_str().unwrap().to_string())
    };
    // Wrapped by the user after memtrail's install.
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some("{\n  \"model\": \"opus\"\n}\n"));
    let original = sb.snapshot();
    apply(&sb.plan_with(Action::Install, std::path::Path::new(old))).unwrap();
    let text = std::fs::read_to_string(&sb.settings).unwrap();
    let plain = format!("\"command\": \"{old} hook claude\"");
    assert_eq!(text.matches(&plain).count(), 6, "{text}");
    let text = text.replacen(&plain, &format!("\"command\": \"{}\"", wrapped(old)), 1);
    std::fs::write(&sb.settings, &text).unwrap();
    let plan = sb.plan_with(Action::Install, &new_bin);
    apply(&plan).unwrap();
    assert_eq!(command_of(&sb, "SessionStart"), Some(new_wrapped.clone()));
    for e in &EVENTS[1..] {
        assert_eq!(
            command_of(&sb, e),
            Some(format!("'{}' hook claude", new_bin.display())),
            "{e}"
        );
    }
    let st = status_in(&sb.env, Agent::Claude, &new_bin).unwrap();
    assert!(st.healthy(), "{st}");
    assert!(sb.plan_with(Action::Install, &new_bin).is_empty());
    apply(&sb.plan_with(Action::Uninstall, &new_bin)).unwrap();
    assert_eq!(sb.snapshot(), original, "given back byte for byte");

    // Wrapped before memtrail's first install (an older memtrail): uninstall restores it.
    let sb = Sandbox::new();
    let before = format!(
        "{{\n  \"hooks\": {{\n    \"Stop\": [\n      {{\n        \"hooks\": [\n          {{\n            \"type\": \"command\",\n            \"command\": \"{}\"\n          }}\n        ]\n      }}\n    ]\n  }}\n}}\n",
        wrapped(old)
    );
    sb.put(&sb.settings, Some(&before));
    apply(&sb.plan_with(Action::Install, &new_bin)).unwrap();
    assert_eq!(command_of(&sb, "Stop"), Some(new_wrapped));
    apply(&sb.plan_with(Action::Uninstall, &new_bin)).unwrap();
    assert_eq!(std::fs::read_to_string(&sb.settings).unwrap(), before);
}

/// A hook command of the user's that runs memtrail on a line after a command of its own
/// (`nice -n 5 curl -s https://x/ping` then `…/memtrail hook claude`) is two commands to `sh`,
/// not memtrail's hook wrapped: uninstall leaves it whole (before, it was taken for memtrail's
/// and deleted, the user's first line with it).
#[test]
fn a_users_command_with_memtrail_on_its_next_line_is_not_memtrails() {
    let sb = Sandbox::new();
    let bin = sb.bin.to_str().unwrap().to_string();
    let theirs = format!("nice -n 5 curl -s https://x.example/ping\n'{bin}' hook claude");
    let before = serde_json::to_string_pretty(&json!({
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": theirs}]}]}
    }))
    .unwrap()
        + "\n";
    sb.put(&sb.settings, Some(&before));
    sb.install();
    let installed = sb.json(&sb.settings);
    assert_eq!(
        installed["hooks"]["Stop"][0]["hooks"][0]["command"],
        json!(theirs),
        "kept as written"
    );
    sb.uninstall();
    assert_eq!(std::fs::read_to_string(&sb.settings).unwrap(), before);
}
