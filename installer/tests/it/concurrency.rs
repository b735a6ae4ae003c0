//! Claude Code rewrites `~/.claude.json` often. An apply that finds the file changed since its
//! plan (or while it edits) recomputes its edit on the new bytes, so neither side's change is
//! lost.
#![cfg(unix)]

use crate::common;

use common::{Sandbox, big_claude_json};
use memtrail_installer::{Action, apply};
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
