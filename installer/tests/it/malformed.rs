//! Files that cannot be edited are left byte for byte as they were, with a clear error.

use crate::common;

use common::Sandbox;
use memtrail_installer::{
    Action, Agent, InstallError, ItemState, UnreadableKind, apply, plan_in, status_in,
};
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
            assert!(
                matches!(
                    stop.state,
                    ItemState::Unreadable {
                        kind: UnreadableKind::Parse,
                        ..
                    }
                ),
                "{name}: {:?}",
                stop.state
            );
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
fn read_only_file_dry_run_shows_the_change_and_apply_refuses() {
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some("{\n  \"model\": \"opus\"\n}\n"));
    chmod(&sb.settings, 0o444);
    let before = sb.snapshot();
    // The dry run works: the diff is there, with a note that the file is read-only.
    let plan = sb.plan(Action::Install);
    let f = plan.files().iter().find(|f| f.path == sb.settings).unwrap();
    assert!(f.read_only);
    assert!(
        plan.files()
            .iter()
            .all(|f| f.path == sb.settings || !f.read_only)
    );
    let diff = plan.diff();
    assert!(
        diff.contains(&format!("+++ b{}\n", sb.settings.display())),
        "{diff}"
    );
    assert!(diff.contains("+  \"hooks\": {\n"), "{diff}");
    assert!(
        diff.contains(&format!("note: {} is read-only", sb.settings.display())),
        "{diff}"
    );
    assert_eq!(
        plan.notes(),
        vec![
            "~/.claude/settings.json is read-only: this change cannot be applied until it is \
             made writable"
                .to_string()
        ]
    );
    assert!(
        plan.describe()
            .iter()
            .any(|l| l.starts_with("~/.claude/settings.json: note: ") && l.contains("read-only"))
    );
    assert_eq!(sb.snapshot(), before, "a dry run writes nothing");
    // Applying it is refused, before anything is written (not even the other files).
    match apply(&plan) {
        Err(InstallError::ReadOnly { path }) => assert_eq!(path, sb.settings),
        other => panic!("{other:?}"),
    }
    assert_eq!(sb.snapshot(), before);
    assert!(!sb.state_dir().exists(), "no backup, no state");

    // The second file of the plan read-only: the first one is not written either.
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some("{}\n"));
    sb.put(&sb.global, Some("{}\n"));
    chmod(&sb.global, 0o400);
    let before = sb.snapshot();
    let plan = sb.plan(Action::Install);
    assert!(matches!(apply(&plan), Err(InstallError::ReadOnly { path }) if path == sb.global));
    assert_eq!(sb.snapshot(), before);

    // Made read-only between plan and apply: apply refuses too (even as root, which could write).
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some("{\n  \"model\": \"opus\"\n}\n"));
    let plan = sb.plan(Action::Install);
    assert!(plan.notes().is_empty());
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
    assert!(
        matches!(
            mcp.state,
            ItemState::Unreadable {
                kind: UnreadableKind::Io,
                ..
            }
        ),
        "{:?}",
        mcp.state
    );
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
fn bad_binaries() {
    let sb = Sandbox::new();
    // Every agent has a spec now; each refuses a binary that is not absolute.
    for agent in [
        Agent::Claude,
        Agent::Codex,
        Agent::Gemini,
        Agent::Cursor,
        Agent::Vscode,
        Agent::Opencode,
    ] {
        assert!(matches!(
            plan_in(&sb.env, agent, Action::Install, Path::new("memtrail")),
            Err(InstallError::BadBinary(_))
        ));
        assert!(matches!(
            status_in(&sb.env, agent, Path::new("memtrail")),
            Err(InstallError::BadBinary(_))
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

/// The second `"hooks"` of `{"hooks": {}, "hooks": {...}}` is the one Claude Code reads
/// (JSON.parse keeps the last); editing the first registered nothing while status said healthy.
#[test]
fn duplicate_keys_where_memtrail_reads_are_refused() {
    let text = "{\n  \"hooks\": {},\n  \"hooks\": {\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}]\n  }\n}\n";
    for action in [Action::Install, Action::Uninstall] {
        let sb = Sandbox::new();
        sb.put(&sb.settings, Some(text));
        let before = sb.snapshot();
        match plan_err(&sb, action) {
            InstallError::Parse {
                path,
                line,
                col,
                msg,
            } => {
                assert_eq!(path, sb.settings);
                assert_eq!((line, col), (3, 3), "the second occurrence");
                assert_eq!(
                    msg,
                    "duplicate key `hooks` (JSON.parse would keep the last one)"
                );
            }
            other => panic!("{action:?}: {other}"),
        }
        assert_eq!(sb.snapshot(), before, "untouched");
        let st = status_in(&sb.env, Agent::Claude, &sb.bin).unwrap();
        assert!(!st.healthy(), "{st}");
        for i in st.items.iter().filter(|i| i.file == sb.settings) {
            assert_eq!(
                i.state,
                ItemState::Unreadable {
                    error: "line 3, column 3: duplicate key `hooks` (JSON.parse would keep the \
                            last one)"
                        .into(),
                    kind: UnreadableKind::Parse,
                },
                "{}",
                i.item
            );
        }
    }

    // Anywhere on memtrail's paths: the top level, `hooks` and everything in it, `mcpServers`
    // and everything in it.
    let cases: [(bool, &str, &str); 7] = [
        (true, r#"{"model": "a", "model": "b"}"#, "model"),
        (true, r#"{"hooks": {"Stop": [], "Stop": []}}"#, "Stop"),
        (
            true,
            r#"{"hooks": {"Stop": [{"hooks": [], "hooks": []}]}}"#,
            "hooks",
        ),
        (
            true,
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/a/memtrail hook claude", "command": "x"}]}]}}"#,
            "command",
        ),
        (
            false,
            r#"{"mcpServers": {"memtrail": {}, "memtrail": {}}}"#,
            "memtrail",
        ),
        (
            false,
            r#"{"mcpServers": {"x": {"env": {"A": "1", "A": "2"}}}}"#,
            "A",
        ),
        // The same key spelled with an escape is the same key.
        (
            false,
            r#"{"mcpServers": {}, "mcpServer\u0073": {}}"#,
            "mcpServers",
        ),
    ];
    for (in_settings, text, key) in cases {
        let sb = Sandbox::new();
        let file = if in_settings {
            &sb.settings
        } else {
            &sb.global
        };
        sb.put(file, Some(text));
        let before = sb.snapshot();
        match plan_err(&sb, Action::Install) {
            InstallError::Parse { path, msg, .. } => {
                assert_eq!(&path, file, "{text}");
                assert!(
                    msg.starts_with(&format!("duplicate key `{key}`")),
                    "{text}: {msg}"
                );
            }
            other => panic!("{text}: {other}"),
        }
        assert_eq!(sb.snapshot(), before, "{text}");
    }

    // Elsewhere a duplicate is not memtrail's business (its edits do not go there): the file
    // is edited, and gets back its exact bytes.
    for (in_settings, text) in [
        (
            true,
            "{\n  \"permissions\": {\"allow\": [], \"allow\": [\"Read\"]}\n}\n",
        ),
        (
            false,
            "{\n  \"projects\": {\n    \"/p\": {\"mcpServers\": {\"a\": {}, \"a\": {}}}\n  }\n}\n",
        ),
    ] {
        let sb = Sandbox::new();
        let file = if in_settings {
            &sb.settings
        } else {
            &sb.global
        };
        sb.put(file, Some(text));
        sb.install();
        let st = status_in(&sb.env, Agent::Claude, &sb.bin).unwrap();
        assert!(st.healthy(), "{st}");
        sb.uninstall();
        assert_eq!(std::fs::read_to_string(file).unwrap(), text);
    }
}

/// A file that cannot be used is named once, with why, and without the advice meant for
/// install; its items say `unreadable`.
#[test]
fn status_reports_an_unusable_file_once() {
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some("{\n  \"a\": 1\n  \"b\": 2\n}\n"));
    let st = status_in(&sb.env, Agent::Claude, &sb.bin).unwrap();
    assert!(!st.healthy());
    let text = st.to_string();
    let settings = sb.settings.display().to_string();
    let why = "line 2, column 9: Expected comma";
    assert_eq!(text.matches("Expected comma").count(), 1, "{text}");
    assert!(
        text.contains(&format!("  {settings}: unreadable: {why}\n")),
        "{text}"
    );
    for e in common::EVENTS {
        assert!(
            text.contains(&format!("  hook {e}: unreadable ({settings})\n")),
            "{text}"
        );
    }
    for install_words in ["untouched", "fix the file"] {
        assert!(!text.contains(install_words), "{text}");
    }
    // The file line comes before its items.
    let file_line = text.find(&format!("{settings}: unreadable:")).unwrap();
    assert!(
        file_line < text.find("hook SessionStart").unwrap(),
        "{text}"
    );
    // Other files are reported as usual.
    assert!(text.contains("  MCP server memtrail: missing ("), "{text}");
    for i in &st.items {
        if i.file == sb.settings {
            assert_eq!(
                i.state,
                ItemState::Unreadable {
                    error: why.into(),
                    kind: UnreadableKind::Parse
                }
            );
        }
    }
    // In JSON: the reason per item, without the path (that is `file`).
    let v = serde_json::to_value(&st).unwrap();
    assert_eq!(v["items"][0]["state"], "unreadable");
    assert_eq!(v["items"][0]["error"], why);
    assert_eq!(
        v["items"][0].get("kind"),
        None,
        "the kind is not serialized"
    );
    assert_eq!(v["items"][0]["file"], settings.as_str());

    // A read error: the OS's reason, once.
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.settings).unwrap();
    let text = status_in(&sb.env, Agent::Claude, &sb.bin)
        .unwrap()
        .to_string();
    assert_eq!(text.matches("unreadable:").count(), 1, "{text}");
    assert_eq!(text.matches(": unreadable (").count(), 6, "{text}");
}

/// `doctor` picks its fix by the kind of problem (not by the reason's text): a settings file
/// Claude Code ignores for not being strict JSON is to be rewritten as strict JSON; one that
/// does not parse is to be repaired by hand. One problem per file, whatever it holds.
#[test]
fn doctor_fix_follows_the_kind_of_unusable_file() {
    let settings_json = "{\n  // mine\n  \"model\": \"opus\"\n}\n";
    let broken = "{\n  \"a\": 1\n  \"b\": 2\n}\n";
    for (text, problem, fix) in [
        (
            settings_json,
            "{s}: not strict JSON (line 2, column 3: a comment), so Claude Code skips the whole \
             file (\"Invalid or malformed JSON\"): it will not run these hooks; remove comments \
             and trailing commas",
            "rewrite {s} as strict JSON (no comments, no trailing commas), then `memtrail \
             install --agent claude`",
        ),
        (
            broken,
            "{s} cannot be read (line 2, column 9: Expected comma); memtrail's entries in it \
             cannot be checked",
            "repair {s} by hand (memtrail never edits a file it cannot read or parse)",
        ),
    ] {
        let sb = Sandbox::new();
        sb.put(&sb.settings, Some(text));
        let scratch = sb.dir.path().join("scratch");
        std::fs::create_dir_all(&scratch).unwrap();
        let report = memtrail_installer::doctor_in(&sb.env, &sb.bin, &scratch, &|_, _| true);
        let s = sb.settings.display().to_string();
        let about_settings: Vec<_> = report
            .problems
            .iter()
            .filter(|p| p.problem.starts_with(&s))
            .cloned()
            .collect();
        assert_eq!(
            about_settings,
            vec![memtrail_installer::DoctorProblem {
                agent: Agent::Claude,
                problem: problem.replace("{s}", &s),
                fix: fix.replace("{s}", &s),
            }],
            "{text}"
        );
        assert_eq!(report.hook_programs_checked, 0, "{report:?}");
    }
}
