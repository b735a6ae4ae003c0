//! Goose end to end, the hook path (Goose is not installable here: no npm or PyPI package, see
//! `docs/agents/goose.md`): `memtrail hook goose` in a sandboxed HOME, fed the payloads of
//! `fixtures/goose/hooks/` while the fixture session grows in Goose's own
//! `~/.local/share/goose/sessions/sessions.db`, written by a connection held open as Goose's
//! (WAL): each message is stored once, Goose's compaction (every row deleted and inserted again)
//! adds only its summary, `import` then stores nothing, and neither the hooks nor the import
//! leave a file in Goose's folder.
#![cfg(unix)]

use crate::common::repo_root;
use crate::support::Sandbox;

use rusqlite::Connection;
use serde_json::Value;
use std::path::{Path, PathBuf};

const SID: &str = "20260301_1";

fn fixture(rel: &str) -> PathBuf {
    repo_root().join("fixtures/goose").join(rel)
}

fn script(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

fn payload(name: &str) -> String {
    std::fs::read_to_string(fixture(&format!("hooks/{name}"))).unwrap()
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn hook_path_stores_each_message_once_and_touches_nothing_of_goose() {
    let sb = Sandbox::new();
    let dir = sb.home.join(".local/share/goose/sessions");
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("sessions.db");
    // Goose running: its connection in WAL mode stays open, the WAL keeps its writes.
    let goose = Connection::open(&db).unwrap();
    goose
        .execute_batch("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;")
        .unwrap();
    goose.execute_batch(&script("schema.sql")).unwrap();
    goose.execute_batch(&script("turn1.sql")).unwrap();

    // Turn 1 ends: Stop stores the four messages (the two responses on their calls) and prints
    // nothing (Goose's Stop hook blocks the turn on a `decision: block`); a second Stop adds
    // nothing.
    assert_eq!(sb.hook("goose", payload("Stop.json")), "");
    let ids = sb.message_ids(SID);
    assert_eq!(ids.len(), 4, "{ids:?}");
    assert_eq!([&ids[0], &ids[1], &ids[3]], ["msg_a1", "msg_a2", "msg_a6"]);
    assert!(ids[2].starts_with("goose-"), "{ids:?}");
    sb.hook("goose", payload("Stop.json"));
    assert_eq!(sb.message_ids(SID), ids);
    let shown = sb.json(&["sessions", "show", SID, "--json"]);
    let call = &shown["messages"][1]["tool_calls"][0];
    assert_eq!(call["is_error"], Value::Bool(true), "{call}");
    let v = sb.json(&["sessions", "list", "--agent", "goose", "--json"]);
    let sessions = v["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{v}");
    assert_eq!(sessions[0]["agent"], "goose");
    assert_eq!(sessions[0]["project"], "/home/user/demo", "{v}");
    let hits = sb.json(&["search", "テスト", "--agent", "goose", "--json"]);
    assert!(
        hits["hits"].as_array().is_some_and(|h| !h.is_empty()),
        "{hits}"
    );

    // Turn 2: two more messages.
    goose.execute_batch(&script("turn2.sql")).unwrap();
    sb.hook("goose", payload("Stop.json"));
    let grown = sb.message_ids(SID);
    assert_eq!(grown.len(), 6);
    assert_eq!(grown[..4], ids[..]);
    assert_eq!(grown[4..], ["msg_b1", "msg_b2"]);

    // Goose compacts: every row deleted and inserted again, plus the summary.
    goose
        .execute_batch(&script("turn3-compaction.sql"))
        .unwrap();
    sb.hook("goose", payload("SessionEnd.json"));
    let after = sb.message_ids(SID);
    assert_eq!(after.len(), 7, "{after:?}");
    assert_eq!(after[..6], grown[..]);
    assert_eq!(after[6], "msg_c1");

    // The hooks created nothing next to Goose's database (its own -wal and -shm are there).
    assert_eq!(
        files(&dir),
        ["sessions.db", "sessions.db-shm", "sessions.db-wal"]
    );

    // Goose exits (its WAL checkpointed and removed); an import then stores nothing and leaves
    // no file behind.
    drop(goose);
    assert_eq!(files(&dir), ["sessions.db"]);
    let out = sb
        .cmd()
        .args(["import", "--agent", "goose"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(sb.message_ids(SID), after);
    assert_eq!(files(&dir), ["sessions.db"]);

    // A new session's start: Goose ignores what the hook prints; memtrail prints a banner or
    // nothing.
    let start = sb.hook("goose", payload("SessionStart.json"));
    if !start.trim().is_empty() {
        let v: Value = serde_json::from_str(start.trim()).unwrap();
        assert!(v["banner"].is_string(), "{start}");
    }
}
