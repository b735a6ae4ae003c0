//! Roo Code end to end (import only: Roo Code runs no hooks). The fixture tasks of
//! `fixtures/roo/` under a sandboxed VS Code `globalStorage/rooveterinaryinc.roo-cline/tasks/`:
//! `memtrail import --agent roo` stores the parent task and its sub-task (linked to its parent),
//! a second import adds nothing, and a task rewritten whole (grown by one message) is stored
//! again with the new message, nothing twice.
#![cfg(unix)]

use crate::common::repo_root;
use crate::support::Sandbox;

use serde_json::Value;
use std::path::PathBuf;

const ROOT: &str = "vscode/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks";
const PARENT: &str = "0b6f2c1e-4d5a-4e7b-9c8d-1a2b3c4d5e6f";
const CHILD: &str = "7e1d9a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b";

fn copy_task(sb: &Sandbox, id: &str) -> PathBuf {
    let from = repo_root().join("fixtures/roo").join(ROOT).join(id);
    let to = sb
        .home
        .join(".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks")
        .join(id);
    std::fs::create_dir_all(&to).unwrap();
    for f in std::fs::read_dir(&from).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, to.join(f.file_name().unwrap())).unwrap();
    }
    to.join("api_conversation_history.json")
}

fn import(sb: &Sandbox) -> (Option<u64>, Option<u64>) {
    let imp = sb.json(&["import", "--agent", "roo", "--json"]);
    let a = &imp["agents"][0];
    assert_eq!(a["agent"], "roo", "{imp}");
    (a["files"].as_u64(), a["messages"].as_u64())
}

#[test]
fn import_stores_tasks_and_sub_tasks_once_and_a_grown_task_again() {
    let sb = Sandbox::new();
    let parent = copy_task(&sb, PARENT);
    copy_task(&sb, CHILD);
    assert_eq!(import(&sb), (Some(2), Some(11)));
    assert_eq!(
        sb.message_ids(PARENT),
        ["0", "2", "4", "6", "8", "9", "10", "11"]
    );
    assert_eq!(sb.message_ids(CHILD), ["0", "1", "3"]);
    let child = sb.json(&["sessions", "show", CHILD, "--json"]);
    let parent_sid = child["session"]["parent_session_id"]
        .as_str()
        .unwrap_or_default();
    assert!(parent_sid.contains(PARENT), "{child}");
    let shown = sb.json(&["sessions", "show", PARENT, "--json"]);
    assert_eq!(shown["session"]["project"], "/home/user/shop", "{shown}");
    assert_eq!(import(&sb), (Some(2), Some(0)));

    // Roo Code rewrites the file whole with one more message.
    let mut v: Value = serde_json::from_slice(&std::fs::read(&parent).unwrap()).unwrap();
    v.as_array_mut().unwrap().push(serde_json::json!({
        "role": "user",
        "content": [{"type": "text", "text": "<user_message>\nmerci\n</user_message>"}],
        "ts": 1_764_669_700_000_i64,
    }));
    std::fs::write(&parent, serde_json::to_vec(&v).unwrap()).unwrap();
    import(&sb);
    assert_eq!(
        sb.message_ids(PARENT),
        ["0", "2", "4", "6", "8", "9", "10", "11", "12"]
    );
    assert_eq!(import(&sb), (Some(2), Some(0)));
}
