//! Crush end to end, the import path (Crush runs no hook memtrail can use, and its npm package
//! downloads the binary at install, which fails offline: see `docs/agents/crush.md`): a project's
//! `.crush/crush.db`, listed in the sandbox's `~/.local/share/crush/projects.json`, written by a
//! connection held open as Crush's (WAL); `memtrail import --agent crush` stores turn 1, then
//! after the session grew (a message updated in place included) the rest, each message once,
//! and leaves no file next to Crush's database.
#![cfg(unix)]

use crate::common::repo_root;
use crate::support::Sandbox;

use rusqlite::Connection;
use serde_json::json;
use std::path::Path;

const SID: &str = "7b3e1c9a-2f4d-4e6b-8a1c-5d9e0f2a3b4c";

fn script(name: &str) -> String {
    std::fs::read_to_string(repo_root().join("fixtures/crush").join(name)).unwrap()
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn import(sb: &Sandbox) {
    let out = sb
        .cmd()
        .args(["import", "--agent", "crush"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn import_stores_each_message_once_as_the_session_grows() {
    let sb = Sandbox::new();
    let project = sb.home.join("work/app");
    let data = project.join(".crush");
    std::fs::create_dir_all(&data).unwrap();
    let global = sb.home.join(".local/share/crush");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::write(
        global.join("projects.json"),
        json!({"projects": [{"path": project, "data_dir": data,
                             "last_accessed": "2026-03-01T10:16:40Z"}]})
        .to_string(),
    )
    .unwrap();
    let crush = Connection::open(data.join("crush.db")).unwrap();
    crush
        .execute_batch("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;")
        .unwrap();
    crush.execute_batch(&script("schema.sql")).unwrap();
    crush.execute_batch(&script("turn1.sql")).unwrap();

    import(&sb);
    assert_eq!(sb.message_ids(SID), ["m1", "m2", "m4", "m6"]);
    let v = sb.json(&["sessions", "list", "--agent", "crush", "--json"]);
    assert_eq!(v["sessions"][0]["project"], json!(project), "{v}");
    import(&sb);
    assert_eq!(sb.message_ids(SID).len(), 4);

    crush.execute_batch(&script("turn2.sql")).unwrap();
    import(&sb);
    import(&sb);
    assert_eq!(
        sb.message_ids(SID),
        ["m1", "m2", "m4", "m6", "m7", "m8", "m10", "m11"]
    );
    let shown = sb.json(&["sessions", "show", SID, "--json"]);
    let m8 = &shown["messages"][5];
    assert_eq!(m8["tool_calls"][0]["name"], "edit", "{m8}");
    assert_eq!(
        sb.message_ids("m8$$toolu_04").len(),
        1,
        "the sub-agent session"
    );
    assert_eq!(files(&data), ["crush.db", "crush.db-shm", "crush.db-wal"]);
    drop(crush);
    assert_eq!(files(&data), ["crush.db"]);
    import(&sb);
    assert_eq!(files(&data), ["crush.db"]);
    assert_eq!(sb.message_ids(SID).len(), 8);
}
