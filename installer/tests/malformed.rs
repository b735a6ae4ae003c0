//! Files that cannot be edited are left byte for byte as they were, with a clear error.

mod common;

use common::Sandbox;
use memtrail_installer::{Action, Agent, InstallError, ItemState, apply, plan_in, status_in};
use std::path::Path;

fn plan_err(sb: &Sandbox, action: Action) -> InstallError {
    plan_in(&sb.env, Agent::Claude, action, &sb.bin).expect_err("plan must fail")
}

#[test]
fn unparsable_files_are_left_untouched_with_line_and_column() {
    let cases: [(&str, &[u8], usize); 5] = [
        (
            "truncated",
            b"{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"Stop\": [\n",
            4,
        ),
        ("missing comma", b"{\n  \"a\": 1\n  \"b\": 2\n}\n", 2),
        ("garbage", b"{\n  \"a\": 1,\n  oops!\n}\n", 3),
        ("unterminated comment", b"{\n  \"a\": 1 /* no end\n}\n", 2),
        ("not UTF-8", b"{\n  \"a\": \"caf\xe9\"\n}\n", 2),
    ];
    for (name, bytes, want_line) in cases {
        for action in [Action::Install, Action::Uninstall] {
            let sb = Sandbox::new();
            std::fs::create_dir_all(&sb.config).unwrap();
            std::fs::write(&sb.settings, bytes).unwrap();
            let before = sb.snapshot();
            match plan_err(&sb, action) {
                InstallError::Parse {
                    path,
                    line,
                    col,
                    msg,
                } => {
                    assert_eq!(path, sb.settings, "{name}");
                    assert_eq!(line, want_line, "{name}: {msg} at {line}:{col}");
                    assert!(col >= 1);
                    let shown = InstallError::Parse {
                        path,
                        line,
                        col,
                        msg,
                    }
                    .to_string();
                    assert!(shown.contains("settings.json: line"), "{shown}");
                }
                other => panic!("{name}: {other}"),
            }
            assert_eq!(sb.snapshot(), before, "{name}: untouched");
            let st = status_in(&sb.env, Agent::Claude, &sb.bin).unwrap();
            let stop = st.items.iter().find(|i| i.item == "hook Stop").unwrap();
            assert!(matches!(stop.state, ItemState::Unreadable { .. }), "{name}");
        }
    }
}

#[test]
fn top_level_that_is_not_an_object() {
    for text in ["[1, 2]\n", "\"settings\"", "null", "42"] {
        let sb = Sandbox::new();
        sb.put(&sb.global, Some(text));
        let before = sb.snapshot();
        match plan_err(&sb, Action::Install) {
            InstallError::NotAnObject { path } => assert_eq!(path, sb.global),
            other => panic!("{text}: {other}"),
        }
        assert_eq!(sb.snapshot(), before);
    }
}

#[test]
fn wrong_types_on_the_path() {
    for text in [
        "{\"hooks\": 3}",
        "{\"hooks\": []}",
        "{\"hooks\": {\"Stop\": {}}}",
        "{\"hooks\": {\"Stop\": \"x\"}}",
    ] {
        let sb = Sandbox::new();
        sb.put(&sb.settings, Some(text));
        let before = sb.snapshot();
        match plan_err(&sb, Action::Install) {
            InstallError::Conflict {
                path,
                json_path,
                expected,
            } => {
                assert_eq!(path, sb.settings);
                assert!(json_path.starts_with("hooks"), "{json_path} {expected}");
            }
            other => panic!("{text}: {other}"),
        }
        assert_eq!(sb.snapshot(), before);
    }
}

#[cfg(unix)]
fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[cfg(unix)]
#[test]
fn read_only_file_is_refused() {
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some("{\n  \"model\": \"opus\"\n}\n"));
    chmod(&sb.settings, 0o444);
    let before = sb.snapshot();
    match plan_err(&sb, Action::Install) {
        InstallError::ReadOnly { path } => assert_eq!(path, sb.settings),
        other => panic!("{other}"),
    }
    assert_eq!(sb.snapshot(), before);

    // Made read-only between plan and apply: apply refuses too (even as root, which could write).
    chmod(&sb.settings, 0o644);
    let plan = sb.plan(Action::Install);
    chmod(&sb.settings, 0o444);
    let before = std::fs::read(&sb.settings).unwrap();
    assert!(matches!(apply(&plan), Err(InstallError::ReadOnly { .. })));
    assert_eq!(std::fs::read(&sb.settings).unwrap(), before);
}

#[cfg(unix)]
#[test]
fn unreadable_file_is_an_error() {
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some("{}"));
    chmod(&sb.settings, 0o000);
    if std::fs::read(&sb.settings).is_ok() {
        // Running as root (as CI does): permission bits do not stop reads, so there is no
        // unreadable file to test with. Directory-as-file below covers the read-error path.
        chmod(&sb.settings, 0o644);
    } else {
        match plan_err(&sb, Action::Install) {
            InstallError::Io { path, .. } => assert_eq!(path, sb.settings),
            other => panic!("{other}"),
        }
        chmod(&sb.settings, 0o644);
    }
    // A read error whatever the user: the path is a directory.
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.global).unwrap();
    match plan_err(&sb, Action::Install) {
        InstallError::Io { path, .. } => assert_eq!(path, sb.global),
        other => panic!("{other}"),
    }
    let st = status_in(&sb.env, Agent::Claude, &sb.bin).unwrap();
    let mcp = st
        .items
        .iter()
        .find(|i| i.item == "MCP server memtrail")
        .unwrap();
    assert!(matches!(mcp.state, ItemState::Unreadable { .. }));
}

#[test]
fn a_file_that_breaks_between_plan_and_apply_is_left_alone() {
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some("{}\n"));
    let plan = sb.plan(Action::Install);
    std::fs::write(&sb.settings, "{ broken").unwrap();
    assert!(matches!(apply(&plan), Err(InstallError::Parse { .. })));
    assert_eq!(std::fs::read(&sb.settings).unwrap(), b"{ broken");
}

#[test]
fn unsupported_agents_and_bad_binaries() {
    let sb = Sandbox::new();
    for agent in [
        Agent::Codex,
        Agent::Gemini,
        Agent::Cursor,
        Agent::Vscode,
        Agent::Opencode,
    ] {
        assert!(matches!(
            plan_in(&sb.env, agent, Action::Install, &sb.bin),
            Err(InstallError::Unsupported(a)) if a == agent
        ));
        assert!(matches!(
            status_in(&sb.env, agent, &sb.bin),
            Err(InstallError::Unsupported(_))
        ));
    }
    assert!(matches!(
        plan_in(
            &sb.env,
            Agent::Claude,
            Action::Install,
            Path::new("bin/memtrail")
        ),
        Err(InstallError::BadBinary(_))
    ));
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let bad = Path::new(std::ffi::OsStr::from_bytes(b"/opt/\xff/memtrail"));
        assert!(matches!(
            plan_in(&sb.env, Agent::Claude, Action::Install, bad),
            Err(InstallError::BadBinary(_))
        ));
    }
    assert!(sb.snapshot().len() == 1, "only the empty home");
}
