//! Factory Droid end to end, on the hook path only (Droid is not on npm and needs a Factory login:
//! no real CLI here). `memtrail hook droid` in a sandboxed HOME, fed the Claude Code-shaped
//! payloads of `fixtures/droid/hooks/` while the fixture session grows in
//! `~/.factory/sessions/-home-user-demo/`: each message stored once, the compaction's snapshot
//! back at SessionStart(`compact`) in Claude Code's dialect; `import` alone stores the same and
//! the sub-droid's session.
#![cfg(unix)]

use crate::common::repo_root;
use crate::support::Sandbox;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const SID: &str = "4d7e2a91-6c3b-4f58-9e1a-b2c4d6e8f013";

fn fixture(rel: &str) -> PathBuf {
    repo_root().join("fixtures/droid").join(rel)
}

fn head(n: usize) -> String {
    let text =
        std::fs::read_to_string(fixture(&format!("sessions/-home-user-demo/{SID}.jsonl"))).unwrap();
    text.lines().take(n).map(|l| format!("{l}\n")).collect()
}

fn payload(name: &str, transcript: &Path) -> String {
    let mut v: Value =
        serde_json::from_slice(&std::fs::read(fixture(&format!("hooks/{name}"))).unwrap()).unwrap();
    v["transcript_path"] = json!(transcript);
    v.to_string()
}

fn mid(n: u32) -> String {
    format!("0f{n:02}c3a1-2b4d-4e6f-8a0b-1c2d3e4f5a{n:02}")
}

#[test]
fn hook_path_grows_the_session_once_and_gives_the_snapshot_back() {
    let sb = Sandbox::new();
    let dir = sb.home.join(".factory/sessions/-home-user-demo");
    std::fs::create_dir_all(&dir).unwrap();
    let t = dir.join(format!("{SID}.jsonl"));
    let hook = |name: &str| sb.hook("droid", payload(name, &t));

    std::fs::write(&t, head(1)).unwrap();
    assert_eq!(hook("SessionStart.json"), "");
    // Turn 1 (Stop): the prompt, the call and its failed result, the answer.
    std::fs::write(&t, head(5)).unwrap();
    assert_eq!(hook("Stop.json"), "");
    assert_eq!(sb.message_ids(SID), [mid(1), mid(2), mid(4)]);
    hook("Stop.json");
    assert_eq!(sb.message_ids(SID).len(), 3);
    let shown = sb.json(&["sessions", "show", SID, "--json"]);
    let call = &shown["messages"][1]["tool_calls"][0];
    assert_eq!(
        (&call["name"], &call["tool"], &call["is_error"]),
        (&json!("Execute"), &json!("shell"), &json!(true))
    );
    assert_eq!(shown["session"]["agent"], "droid");

    // Turn 2 and PreCompact: the snapshot is saved (no reply: Droid takes context at a start).
    std::fs::write(&t, head(12)).unwrap();
    assert_eq!(hook("Stop.json"), "");
    assert_eq!(hook("PreCompact.json"), "");
    assert_eq!(sb.message_ids(SID).len(), 7);
    let hits = sb.json(&["search", "原因", "--agent", "droid", "--json"]);
    assert!(
        hits["hits"].as_array().is_some_and(|h| !h.is_empty()),
        "{hits}"
    );

    // SessionStart(compact): the compaction record is stored and the snapshot given back once.
    std::fs::write(&t, head(13)).unwrap();
    let reply = hook("SessionStart-compact.json");
    let v: Value = serde_json::from_str(reply.trim()).unwrap_or_else(|e| panic!("{e}: {reply}"));
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(ctx.contains(SID), "{ctx}");
    assert!(ctx.contains("- tests/iso.rs (written"), "{ctx}");
    assert!(
        ctx.contains("- `cargo test --quiet` failed (shell)"),
        "{ctx}"
    );
    // Consumed: the next start of this session is not given it again.
    assert_eq!(hook("SessionStart.json"), "", "given once");

    std::fs::write(&t, head(18)).unwrap();
    assert_eq!(hook("SessionEnd.json"), "");
    let ids = sb.message_ids(SID);
    assert_eq!(ids.len(), 10);
    assert_eq!(ids[7..], ["cs-1".to_string(), mid(11), mid(12)]);
}

#[test]
fn import_alone_stores_the_session_and_the_sub_droids() {
    let sb = Sandbox::new();
    let dir = sb.home.join(".factory/sessions/-home-user-demo");
    std::fs::create_dir_all(&dir).unwrap();
    for f in [
        format!("{SID}.jsonl"),
        format!("{SID}.settings.json"),
        "9b3f6c20-1e4d-4a7b-8c5e-d0f2a4b6c819.jsonl".to_string(),
    ] {
        std::fs::copy(
            fixture(&format!("sessions/-home-user-demo/{f}")),
            dir.join(&f),
        )
        .unwrap();
    }
    let imp = sb.json(&["import", "--agent", "droid", "--json"]);
    let a = &imp["agents"][0];
    assert_eq!(
        (a["files"].as_u64(), a["messages"].as_u64()),
        (Some(2), Some(13)),
        "{imp}"
    );
    assert_eq!(sb.message_ids(SID).len(), 10);
    let v = sb.json(&["sessions", "show", SID, "--json"]);
    assert_eq!(v["session"]["project"], "/home/user/demo");
    assert_eq!(
        v["session"]["title"],
        "Run the tests and tell me what fails"
    );
    let imp = sb.json(&["import", "--agent", "droid", "--json"]);
    assert_eq!(imp["agents"][0]["messages"], 0, "{imp}");
}
