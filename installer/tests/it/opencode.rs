//! OpenCode: the plugin `~/.config/opencode/plugins/memtrail.ts` (a file memtrail owns, in the
//! module shape the installed OpenCode loads) and `mcp.memtrail` in `opencode.jsonc` or
//! `opencode.json`.

use crate::common;

use common::{AgentBox, round_trip};
use memtrail_adapters::opencode::{self, PluginApi, registration as oc};
use memtrail_installer::{Action, Agent, InstallError, ItemState, apply, plan_in};
use serde_json::json;
use std::path::{Path, PathBuf};

const JSONC: &str = r#"{
  "$schema": "https://opencode.ai/config.json",
  // models
  "model": "anthropic/claude-sonnet-4-5",
  "mcp": {
    /* the team's DB */
    "postgres": {
      "type": "local",
      "command": ["npx", "-y", "@modelcontextprotocol/server-postgres"],
      "enabled": true,
    },
  },
  "plugin": ["opencode-wakatime"],
}
"#;

const JSON: &str = r#"{
  "$schema": "https://opencode.ai/config.json",
  "theme": "opencode",
  "mcp": {
    "sentry": {
      "type": "remote",
      "url": "https://mcp.sentry.dev/mcp",
      "enabled": false
    }
  }
}
"#;

/// A fake `opencode` on PATH that prints `version`.
/// OpenCode `version` installed the way npm does (`bin/opencode` → the package's
/// `bin/opencode`, its `package.json` above); returns the `PATH`. The program, if anyone ran it,
/// would leave a file `ran` in the box: memtrail reads the version from the package and never
/// runs it.
fn fake_opencode(b: &AgentBox, version: &str) -> std::ffi::OsString {
    let dir = b.dir.path().join("bin");
    let pkg = b.dir.path().join("lib/node_modules/opencode-ai");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(pkg.join("bin")).unwrap();
    std::fs::write(
        pkg.join("package.json"),
        format!("{{\n  \"name\": \"opencode-ai\",\n  \"version\": \"{version}\"\n}}\n"),
    )
    .unwrap();
    let exe = pkg.join("bin/opencode");
    std::fs::write(
        &exe,
        format!(
            "#!/bin/sh\ntouch '{}'\necho 'opencode {version}'\n",
            b.dir.path().join("ran").display()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let link = dir.join("opencode");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("../lib/node_modules/opencode-ai/bin/opencode", &link).unwrap();
    }
    dir.into_os_string()
}

fn paths(b: &AgentBox) -> (PathBuf, PathBuf, PathBuf) {
    let c = b.home.join(".config/opencode");
    (
        c.join("plugins/memtrail.ts"),
        c.join("opencode.json"),
        c.join("opencode.jsonc"),
    )
}

fn check_v1(b: &AgentBox, config: &Path, original: Option<&str>) {
    let v = b.json(config);
    assert_eq!(
        v["mcp"]["memtrail"],
        json!({"type": "local", "command": [b.bin.to_str().unwrap(), "mcp"], "enabled": true})
    );
    if let Some(o) = original {
        let o = common::jsonc(o);
        for (k, val) in o.as_object().unwrap() {
            if k == "mcp" {
                for (s, e) in val.as_object().unwrap() {
                    assert_eq!(&v["mcp"][s], e);
                }
            } else {
                assert_eq!(&v[k], val);
            }
        }
    }
}

#[test]
fn round_trips_real_world_configs() {
    let cases: Vec<(&str, Option<String>, Option<String>)> = vec![
        ("nothing yet", None, None),
        ("opencode.json", Some(JSON.into()), None),
        ("opencode.jsonc with comments", None, Some(JSONC.into())),
        ("CRLF", Some(JSON.replace('\n', "\r\n")), None),
        ("empty object, tabs", Some("{\n\t\n}".into()), None),
    ];
    for (name, json_file, jsonc_file) in cases {
        let b = AgentBox::new(Agent::Opencode);
        let (plugin, json, jsonc) = paths(&b);
        let target = if jsonc_file.is_some() {
            jsonc.clone()
        } else {
            json.clone()
        };
        let original = jsonc_file.clone().or(json_file.clone());
        round_trip(&b, name, &[(json, json_file), (jsonc, jsonc_file)], &|b| {
            check_v1(b, &target, original.as_deref());
            assert_eq!(
                b.read(&plugin),
                opencode::plugin_source(&b.bin, PluginApi::Current)
            );
        });
    }
}

#[test]
fn the_plugin_follows_the_installed_version() {
    #[cfg(unix)]
    {
        let b = AgentBox::new(Agent::Opencode);
        let path = fake_opencode(&b, "1.2.10");
        let b = b.with_var("PATH", path);
        let (plugin, ..) = paths(&b);
        let st = b.status();
        assert_eq!(st.version.as_deref(), Some("1.2.10"));
        assert!(st.detected);
        b.install();
        let text = b.read(&plugin);
        assert_eq!(text, opencode::plugin_source(&b.bin, PluginApi::Legacy));
        assert!(text.contains("export const MemtrailPlugin = server"));
        // An upgrade of OpenCode makes the plugin stale; install rewrites it.
        fake_opencode(&b, "1.14.3");
        let st = b.status();
        let p = st
            .items
            .iter()
            .find(|i| i.item == "plugin memtrail")
            .unwrap();
        assert!(matches!(p.state, ItemState::Stale { .. }), "{st}");
        b.install();
        assert_eq!(
            b.read(&plugin),
            opencode::plugin_source(&b.bin, PluginApi::Current)
        );
        b.uninstall();
        assert!(!plugin.exists());
        assert!(!plugin.parent().unwrap().exists(), "plugins/ was install's");
        // The version came from the package: OpenCode itself never ran.
        assert!(!b.dir.path().join("ran").exists());
    }
}

#[cfg(unix)]
#[test]
fn a_native_v2_config_gets_the_v2_shape() {
    let b = AgentBox::new(Agent::Opencode);
    let path = fake_opencode(&b, "2.0.25");
    let b = b.with_var("PATH", path);
    let (_, json, _) = paths(&b);
    let text = "{\n  \"mcp\": {\n    \"servers\": {\n      \"db\": {\"type\": \"local\", \"command\": [\"db-mcp\"]}\n    }\n  }\n}\n";
    round_trip(&b, "v2", &[(json.clone(), Some(text.into()))], &|b| {
        let v = b.json(&json);
        assert_eq!(
            v["mcp"]["servers"]["memtrail"],
            json!({"type": "local", "command": [b.bin.to_str().unwrap(), "mcp"]})
        );
        assert!(v["mcp"].get("memtrail").is_none());
    });
}

#[test]
fn a_users_plugins_folder_and_a_foreign_file_are_kept() {
    let b = AgentBox::new(Agent::Opencode);
    let (plugin, json, _) = paths(&b);
    let theirs = plugin.parent().unwrap().join("mine.ts");
    b.put(&theirs, Some("export const Mine = async () => ({})\n"));
    let original = b.snapshot();
    b.install();
    assert!(plugin.exists());
    b.uninstall();
    common::assert_same("plugins folder", &original, &b.snapshot());
    // A memtrail.ts that is not memtrail's is never replaced nor removed.
    b.put(&plugin, Some("// my own memtrail.ts\n"));
    b.put(&json, Some(JSON));
    let before = b.snapshot();
    match plan_in(&b.env, Agent::Opencode, Action::Install, &b.bin) {
        Err(InstallError::Foreign { path }) => assert_eq!(path, plugin),
        other => panic!("{other:?}"),
    }
    assert!(b.plan(Action::Uninstall).is_empty());
    assert_eq!(b.snapshot(), before);
}

#[test]
fn moved_binary_and_malformed_config() {
    let b = AgentBox::new(Agent::Opencode);
    let (plugin, json, _) = paths(&b);
    b.put(&json, Some(JSON));
    let original = b.snapshot();
    b.install();
    let new_bin = b.dir.path().join("v2/memtrail");
    let st = memtrail_installer::status_in(&b.env, Agent::Opencode, &new_bin).unwrap();
    let p = st
        .items
        .iter()
        .find(|i| i.item == "plugin memtrail")
        .unwrap();
    assert_eq!(
        p.state,
        ItemState::Stale {
            points_at: Some(b.bin.to_str().unwrap().into())
        }
    );
    apply(&b.plan_with(Action::Install, &new_bin)).unwrap();
    assert_eq!(
        oc::plugin_binary(&b.read(&plugin)).unwrap(),
        new_bin.to_str().unwrap()
    );
    assert!(b.plan_with(Action::Install, &new_bin).is_empty());
    apply(&b.plan_with(Action::Uninstall, &new_bin)).unwrap();
    common::assert_same("moved", &original, &b.snapshot());

    b.put(&json, Some("{\n  \"mcp\": {\n"));
    let before = b.snapshot();
    assert!(matches!(
        plan_in(&b.env, Agent::Opencode, Action::Install, &b.bin),
        Err(InstallError::Parse { .. })
    ));
    assert_eq!(b.snapshot(), before);
}
