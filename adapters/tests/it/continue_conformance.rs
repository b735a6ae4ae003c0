//! Continue: the session file read as a one-session database (rewritten whole; merged, never
//! pruned by a compaction), identity and discovery on the project's own fixtures
//! (`fixtures/continue/`, described in its README and in `docs/agents/continue.md`). Expected
//! values are read off the fixture by hand.

use crate::common;

use common::{Store, part_text};
use memtrail_adapters::continuedev::{self as cont, message_id};
use memtrail_adapters::{Agent, Batch, Kind, ParseStats, Part, Role, ToolCall};
use serde_json::Value;
use sha2::Digest;
use std::path::{Path, PathBuf};

const SID: &str = "3c9e1f70-2a4b-4d6e-8f01-a2b3c4d5e6f7";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/continue")
}

fn session() -> PathBuf {
    fixtures().join(format!("sessions/{SID}.json"))
}

fn call(m: &memtrail_adapters::Message, i: usize) -> &ToolCall {
    match &m.parts[i] {
        Part::ToolCall(c) => c,
        other => panic!("part {i} of {} is not a call: {other:?}", m.id),
    }
}

/// What the runtime stores from one read: the session's records applied to a store.
fn apply(store: &mut Store, path: &Path, since: i64) -> i64 {
    let batch = cont::read_session(path, Some(SID), since).unwrap();
    for s in batch.sessions {
        assert_eq!(
            (s.session.agent, s.session.external_id.as_str()),
            (Agent::Continue, SID)
        );
        store.apply(Batch {
            meta: s.meta,
            records: s.records,
            stats: s.stats,
        });
    }
    batch.watermark
}

#[test]
fn the_session_file() {
    let mut s = Store::default();
    let mark = apply(&mut s, &session(), 0);
    assert!(mark > 0);
    assert_eq!(
        s.stats,
        ParseStats {
            lines: 9,
            ..ParseStats::default()
        }
    );
    assert_eq!(
        s.meta.title.as_deref(),
        Some("Run the tests and tell me what fails")
    );
    assert_eq!(s.meta.project_dir.as_deref(), Some("/home/user/demo"));
    assert_eq!(s.meta.model.as_deref(), Some("claude-sonnet-4-5"));
    let m = &s.messages;
    let roles: Vec<Role> = m.iter().map(|m| m.role).collect();
    use Role::*;
    assert_eq!(
        roles,
        [
            User, Assistant, Assistant, User, Assistant, Assistant, Assistant, User, Assistant
        ]
    );
    // The first id from its definition: `c` + SHA-256("" NUL message JSON)[..8] in hex.
    let doc: Value = serde_json::from_slice(&std::fs::read(session()).unwrap()).unwrap();
    let first = &doc["history"][0]["message"];
    let mut h = sha2::Sha256::new();
    h.update(b"\0");
    h.update(first.to_string().as_bytes());
    let hex: String = h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(m[0].id, format!("c{hex}"));
    assert_eq!(m[1].id, message_id(&m[0].id, &doc["history"][1]["message"]));
    // A shell call with its output; a failed read, then one that worked.
    let bash = call(&m[1], 0);
    assert_eq!(
        (bash.name.as_str(), bash.tool.as_str(), bash.is_error),
        ("Bash", "shell", false)
    );
    assert_eq!(bash.input["command"], "cargo test --quiet");
    assert!(bash.output.as_deref().unwrap().contains("1 failed"));
    assert_eq!(m[1].kind, Kind::ToolCall);
    let failed = call(&m[4], 0);
    assert_eq!((failed.tool.as_str(), failed.is_error), ("read", true));
    assert_eq!(
        failed.output.as_deref(),
        Some("Error: File src/parse.rs does not exist")
    );
    assert!(!call(&m[5], 0).is_error);
    assert_eq!(
        part_text(&m[3], 0),
        "日本語で説明して: src/parse.rs を読んで"
    );
    assert!(part_text(&m[6], 0).starts_with("parse_date は"));
    assert!(m.iter().all(|m| m.timestamp.is_none()));

    // Unchanged since the watermark: nothing read.
    let again = cont::read_session(&session(), Some(SID), mark).unwrap();
    assert!(again.sessions.is_empty());
    assert_eq!(again.watermark, mark);
    // Another session's id: nothing.
    assert!(
        cont::read_session(&session(), Some("other"), 0)
            .unwrap()
            .sessions
            .is_empty()
    );
}

/// A compaction rewrites the file with the summary and what follows: read again, the earlier
/// messages stay, the summary and the new turn are added after them, nothing twice.
#[test]
fn a_compaction_rewrite_keeps_what_was_stored() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(format!("{SID}.json"));
    std::fs::copy(session(), &file).unwrap();
    let mut s = Store::default();
    let mark = apply(&mut s, &file, 0);
    let before: Vec<String> = s.messages.iter().map(|m| m.id.clone()).collect();
    assert_eq!(before.len(), 9);
    // Reading the same content again changes nothing.
    apply(&mut s, &file, 0);
    assert_eq!(s.messages.len(), 9);

    std::fs::copy(
        fixtures().join(format!("rewrites/{SID}.after-compaction.json")),
        &file,
    )
    .unwrap();
    // The copy may keep the same second: force a later modification time.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let mark2 = apply(&mut s, &file, mark);
    assert!(mark2 > mark);
    let ids: Vec<&str> = s.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids.len(), 13);
    assert_eq!(
        ids[..9],
        before.iter().map(String::as_str).collect::<Vec<_>>()[..]
    );
    let m = &s.messages[9..];
    assert_eq!((m[0].role, m[0].kind), (Role::System, Kind::Summary));
    assert!(part_text(&m[0], 0).starts_with("## Summary\nThe user asked"));
    // The second `continue` follows the summary: another id than the first one.
    assert_eq!(part_text(&m[1], 0), "continue");
    assert_ne!(m[1].id, s.messages[7].id);
    assert_eq!(call(&m[2], 0).tool, "edit");
    assert_eq!(part_text(&m[3], 0), "Done: parse_date now splits on '-'.");
    // The title the first read found stays.
    assert_eq!(
        s.meta.title.as_deref(),
        Some("Run the tests and tell me what fails")
    );
}

#[test]
fn identity_discovery_and_bad_files() {
    let s = cont::identify(&session()).unwrap();
    assert_eq!(
        (s.agent, s.external_id.as_str(), s.parent_external_id),
        (Agent::Continue, SID, None)
    );
    let index = fixtures().join("sessions/sessions.json");
    assert!(cont::identify(&index).is_err());
    assert!(cont::source_for(&index).is_none());
    let found = cont::discover_in(&fixtures().join("sessions")).unwrap();
    assert_eq!(found.files, [session()]);
    assert!(
        cont::discover_in(&fixtures().join("absent"))
            .unwrap()
            .files
            .is_empty()
    );

    let dir = tempfile::tempdir().unwrap();
    let half = dir.path().join("half.json");
    std::fs::write(&half, "{\"sessionId\":\"half\",\"history\":[{\"message\"").unwrap();
    assert!(cont::read_session(&half, None, 0).is_err());
    let nohist = dir.path().join("x.json");
    std::fs::write(&nohist, "{\"sessionId\":\"x\"}").unwrap();
    assert!(cont::read_session(&nohist, None, 0).is_err());
}
