//! Claude Code rewrites `~/.claude.json` often. An apply that finds the file changed since its
//! plan (or while it edits) recomputes its edit on the new bytes, so neither side's change is
//! lost. Two memtrail installs or uninstalls at once take turns (the install lock).
#![cfg(unix)]

use crate::common;

use common::{AgentBox, Sandbox, big_claude_json};
use memtrail_installer::{Action, Agent, LOCK_NOTICE_AFTER, LOCK_TIMEOUT, apply, lock_in, plan_in};
use serde_json::Value;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[test]
fn change_between_plan_and_apply_is_kept() {
    let sb = Sandbox::new();
    sb.put(&sb.global, Some("{\n  \"numStartups\": 1\n}\n"));
    let plan = sb.plan(Action::Install);
    // Claude Code writes the file after the plan was made.
    std::fs::write(
        &sb.global,
        "{\n  \"numStartups\": 2,\n  \"tipsHistory\": {}\n}\n",
    )
    .unwrap();
    let applied = apply(&plan).unwrap();
    let v = sb.json(&sb.global);
    assert_eq!(v["numStartups"], 2);
    assert_eq!(v["tipsHistory"], serde_json::json!({}));
    assert!(v["mcpServers"]["memtrail"].is_object());
    let f = applied.files.iter().find(|f| f.path == sb.global).unwrap();
    // The backup holds what was really replaced, not what the plan saw.
    assert_eq!(
        std::fs::read_to_string(f.backup.as_ref().unwrap()).unwrap(),
        "{\n  \"numStartups\": 2,\n  \"tipsHistory\": {}\n}\n"
    );
    // And uninstall gives back that newer content exactly.
    sb.uninstall();
    assert_eq!(
        std::fs::read_to_string(&sb.global).unwrap(),
        "{\n  \"numStartups\": 2,\n  \"tipsHistory\": {}\n}\n"
    );
}

/// Identity of a file version: (inode, size, mtime ns).
fn id(m: &std::fs::Metadata) -> (u64, u64, i64, i64) {
    (m.ino(), m.len(), m.mtime(), m.mtime_nsec())
}

/// One read-modify-write by the "other program": add `"writer-<i>": i` as the first key, write a
/// temp file, and rename it over the original unless the original changed meanwhile (then try
/// again). Returns when the key is in.
fn writer_step(path: &Path, i: usize) {
    loop {
        let mut f = std::fs::File::open(path).unwrap();
        let mut text = String::new();
        f.read_to_string(&mut text).unwrap();
        let seen = id(&f.metadata().unwrap());
        let open = text.find('{').unwrap();
        let new = format!(
            "{}{{\n  \"writer-{i}\": {i},{}",
            &text[..open],
            &text[open + 1..]
        );
        let tmp = path.with_extension(format!("writer-{i}.tmp"));
        std::fs::write(&tmp, new).unwrap();
        if id(&std::fs::metadata(path).unwrap()) != seen {
            std::fs::remove_file(&tmp).unwrap();
            continue;
        }
        std::fs::rename(&tmp, path).unwrap();
        return;
    }
}

#[test]
fn writer_in_a_loop_while_apply_runs() {
    let sb = Sandbox::new();
    sb.put(&sb.global, Some(&big_claude_json(300_000)));
    let plan = sb.plan(Action::Install);
    let started = Arc::new(AtomicBool::new(false));
    let writer = {
        let path = sb.global.clone();
        let started = started.clone();
        std::thread::spawn(move || {
            let mut last = 0;
            for i in 0..40 {
                writer_step(&path, i);
                last = i;
                started.store(true, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(3));
            }
            last
        })
    };
    while !started.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let applied = apply(&plan).expect("apply while another program writes");
    let last = writer.join().unwrap();

    let text = std::fs::read_to_string(&sb.global).unwrap();
    let v: Value = serde_json::from_str(&text).expect("still strict JSON");
    assert!(
        v["mcpServers"]["memtrail"].is_object(),
        "memtrail's entry is there"
    );
    assert_eq!(
        v[format!("writer-{last}")],
        last,
        "the other writer's last key is there"
    );
    for i in 0..=last {
        assert_eq!(v[format!("writer-{i}")], i, "writer key {i} was not lost");
    }
    let f = applied.files.iter().find(|f| f.path == sb.global).unwrap();
    eprintln!("apply took {} attempt(s) on .claude.json", f.attempts);
}

/// Every file and folder under the box (the state folder left out), keyed by its path below the
/// box, with its mode and its bytes (the box's own path written `<BOX>`): two boxes that went
/// through the same steps compare equal.
fn tree(b: &AgentBox) -> std::collections::BTreeMap<String, (u32, Option<String>)> {
    use std::os::unix::fs::PermissionsExt;
    let root = b.dir.path().to_string_lossy().into_owned();
    b.snapshot()
        .into_iter()
        .map(|(p, bytes)| {
            let mode = std::fs::symlink_metadata(&p).unwrap().permissions().mode() & 0o7777;
            let rel = p.strip_prefix(b.dir.path()).unwrap().display().to_string();
            let text = bytes.map(|b| String::from_utf8_lossy(&b).replace(&root, "<BOX>"));
            (rel, (mode, text))
        })
        .collect()
}

/// A home with Claude Code's and Codex's configs, 0644 as an editor leaves them.
fn two_agents() -> AgentBox {
    use std::os::unix::fs::PermissionsExt;
    let b = AgentBox::new(Agent::Claude);
    let files = [
        (
            b.home.join(".claude/settings.json"),
            "{\n  \"model\": \"opus\"\n}\n",
        ),
        (b.home.join(".claude.json"), "{\n  \"numStartups\": 3\n}\n"),
        (b.home.join(".codex/config.toml"), "model = \"o3\"\n"),
    ];
    for (p, text) in files {
        b.put(&p, Some(text));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    b
}

/// What `memtrail install|uninstall --agent claude --agent codex` does: the install lock
/// across the plans and the applies.
fn run(b: &AgentBox, action: Action) {
    let _lock = lock_in(&b.env, LOCK_NOTICE_AFTER, LOCK_TIMEOUT, &mut |_| {}).unwrap();
    for agent in [Agent::Claude, Agent::Codex] {
        let plan = plan_in(&b.env, agent, action, &b.bin).unwrap();
        apply(&plan).unwrap();
    }
}

/// `actions` at once, one thread each, started together.
fn at_once(b: &AgentBox, actions: &[Action]) {
    let go = std::sync::Barrier::new(actions.len());
    std::thread::scope(|s| {
        for &action in actions {
            let go = &go;
            s.spawn(move || {
                go.wait();
                run(b, action);
            });
        }
    });
}

/// Eight installs at once leave every file, folder and mode exactly as one install does, and
/// an uninstall after them gives back the original bytes and modes (0644: the install state
/// kept the mode the first install took away). Then installs racing uninstalls: whichever ran
/// last decides, and the tree is exactly one of the two. Repeated, as a race needs.
#[test]
fn concurrent_installs_and_uninstalls_leave_what_one_does() {
    let reference = two_agents();
    let original = tree(&reference);
    run(&reference, Action::Install);
    let installed = tree(&reference);
    assert_ne!(original, installed);
    for round in 0..10 {
        let b = two_agents();
        at_once(&b, &[Action::Install; 8]);
        assert_eq!(tree(&b), installed, "round {round}: 8 installs at once");
        run(&b, Action::Uninstall);
        assert_eq!(tree(&b), original, "round {round}: uninstall after them");

        let b = two_agents();
        run(&b, Action::Install);
        let mut mixed = [Action::Install; 8];
        mixed[1] = Action::Uninstall;
        mixed[4] = Action::Uninstall;
        mixed[6] = Action::Uninstall;
        at_once(&b, &mixed);
        let got = tree(&b);
        assert!(
            got == installed || got == original,
            "round {round}: installs racing uninstalls left {got:#?}"
        );
        run(&b, Action::Uninstall);
        assert_eq!(
            tree(&b),
            original,
            "round {round}: uninstall after the race"
        );
    }
}
