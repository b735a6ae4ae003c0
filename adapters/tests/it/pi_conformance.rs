//! pi: the session-tree reader, the extension's payloads, identity and discovery on the
//! project's own fixtures (`fixtures/pi/`, described in its README and in `docs/agents/pi.md`).
//! Expected values are read off the fixture by hand.

use crate::common;

use common::{Store, assert_split_equivalence_with, lines, messages, part_text};
use memtrail_adapters::pi::{self, PiReader};
use memtrail_adapters::{
    Agent, Batch, Env, Error, Kind, LineReader, Message, ParseStats, Part, Record, Role, ToolCall,
    canonical_event,
};
use std::path::{Path, PathBuf};

const SID: &str = "019ad0c2-7e41-7a3b-9c5d-2f8e6a1b4c07";

/// The header's time, 2026-11-30T09:12:03.481Z, in ms; entry N of the generator is N s later.
const T0: i64 = 1_796_029_923_481;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/pi")
}

fn transcript() -> PathBuf {
    fixtures()
        .join("sessions/--home-user-demo--")
        .join(format!("2026-11-30T09-12-03-481Z_{SID}.jsonl"))
}

fn read(lines: &[&[u8]]) -> Batch {
    let mut reader = PiReader::new();
    let mut batch = Batch::default();
    for l in lines {
        reader.line(l, &mut batch);
    }
    reader.finish(&mut batch);
    batch
}

fn call(m: &Message, i: usize) -> &ToolCall {
    match &m.parts[i] {
        Part::ToolCall(c) => c,
        other => panic!("part {i} of {} is not a call: {other:?}", m.id),
    }
}

fn make() -> Box<dyn LineReader> {
    Box::new(PiReader::new())
}

fn ids(store: &Store) -> Vec<&str> {
    store.messages.iter().map(|m| m.id.as_str()).collect()
}

#[test]
fn the_whole_file_in_one_pass() {
    let bytes = std::fs::read(transcript()).unwrap();
    let ls = lines(&bytes);
    assert_eq!(ls.len(), 29);
    let b = read(&ls);
    // The header, two model changes, a thinking level, a label, a session name and an
    // extension's state are known and carry no content; the 4 tool results become results.
    assert_eq!(
        b.stats,
        ParseStats {
            lines: 29,
            skipped_known: 7,
            skipped_unknown: 0,
            malformed: 0
        }
    );
    // The branch summary (line 16) hangs below line 11: what followed line 11 is rewound,
    // from its first stored message on.
    let rewind = b
        .records
        .iter()
        .position(|r| matches!(r, Record::Rewind { .. }))
        .unwrap();
    assert_eq!(
        b.records[rewind],
        Record::Rewind {
            message_id: "2d9e6b4f".into()
        }
    );
    assert!(matches!(&b.records[rewind - 1], Record::Message(m) if m.id == "5a2b9e7c"));
    assert!(matches!(&b.records[rewind + 1], Record::Message(m) if m.id == "6b3c0f8d"));
    assert_eq!(
        b.records
            .iter()
            .filter(|r| matches!(r, Record::Rewind { .. }))
            .count(),
        1
    );
    assert_eq!(
        b.meta.title.as_deref(),
        Some("Run the tests and tell me what fails")
    );
    assert_eq!(b.meta.project_dir.as_deref(), Some("/home/user/demo"));
    assert_eq!(b.meta.model.as_deref(), Some("gpt-5.1-codex"));
    assert_eq!(b.meta.started_at, Some(T0));
    assert_eq!(b.meta.updated_at, Some(T0 + 176_000));

    let mut store = Store::default();
    store.apply(b);
    assert!(store.orphans.is_empty(), "{:?}", store.orphans);
    assert_eq!(
        ids(&store),
        [
            "a0e4c6d2", "b17f3e90", "d4b2e7f6", "e58c1a2f", "f6a9d3c0", "1c8d5a3e", "6b3c0f8d",
            "7c4d1a9e", "8d5e2b0f", "af702d4b", "b0813e5c", "e3b4618f", "f4c57290", "16e794b2",
            "27f8a5c3",
        ]
    );
    let m = &store.messages;
    let roles: Vec<Role> = m.iter().map(|m| m.role).collect();
    use Role::*;
    assert_eq!(
        roles,
        [
            User, Assistant, Assistant, User, Assistant, Assistant, System, User, Assistant,
            Assistant, User, System, System, User, Assistant
        ]
    );

    // Turn 1: thinking, then a `bash` call whose command exited with 101.
    assert_eq!(m[1].kind, Kind::ToolCall);
    assert_eq!(
        part_text(&m[1], 0),
        "The user wants the test results; run cargo test."
    );
    let bash = call(&m[1], 1);
    assert_eq!(
        (bash.id.as_str(), bash.name.as_str(), bash.tool.as_str()),
        ("toolu_01PiBashRun0001", "bash", "shell")
    );
    assert_eq!(bash.input["command"], "cargo test --quiet");
    assert_eq!((bash.is_error, bash.exit_code), (true, Some(101)));
    assert!(
        bash.output
            .as_deref()
            .unwrap()
            .ends_with("1 failed\n\n\nCommand exited with code 101")
    );
    assert_eq!(m[1].model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(m[1].timestamp, Some(T0 + 4_000));

    // Turn 2, in Japanese: a `read` that succeeded (no exit code: not a shell).
    assert_eq!(
        part_text(&m[3], 0),
        "日本語で説明して: なぜ parse::dates は失敗するのですか?"
    );
    let r = call(&m[4], 0);
    assert_eq!(
        (r.tool.as_str(), r.is_error, r.exit_code),
        ("read", false, None)
    );
    assert!(r.output.as_deref().unwrap().starts_with("fn parse_date"));
    assert!(part_text(&m[5], 0).starts_with("parse_date は"));

    // The branch summary, then the new branch: a `write`, and a provider error.
    assert_eq!(m[6].kind, Kind::Summary);
    assert!(part_text(&m[6], 0).starts_with("The abandoned branch changed parse_date"));
    let w = call(&m[8], 0);
    assert_eq!((w.tool.as_str(), w.is_error), ("write", false));
    assert_eq!(
        w.output.as_deref(),
        Some("Successfully wrote 61 bytes to tests/dates.rs")
    );
    assert_eq!(m[9].kind, Kind::Text);
    assert_eq!(
        part_text(&m[9], 0),
        "Error: 429 rate_limit_error: Number of request tokens has exceeded your per-minute rate limit"
    );

    // The user's own `!git status`: one shell call with its output and exit code.
    assert_eq!(m[10].kind, Kind::ToolCall);
    let g = call(&m[10], 0);
    assert_eq!(
        (g.id.as_str(), g.tool.as_str(), g.exit_code, g.is_error),
        ("b0813e5c:bash", "shell", Some(0), false)
    );
    assert_eq!(g.input["command"], "git status --short");
    assert_eq!(
        g.output.as_deref(),
        Some(" M src/parse.rs\n?? tests/dates.rs\n")
    );

    // The compaction's summary, an extension's message, and the turn after them.
    assert_eq!(m[11].kind, Kind::Summary);
    assert!(part_text(&m[11], 0).starts_with("## Goal\nMake parse::dates pass."));
    assert_eq!(m[11].timestamp, Some(T0 + 150_000));
    assert_eq!(
        (m[12].kind, part_text(&m[12], 0)),
        (Kind::Text, "Open items: run cargo test; fix parse_date.")
    );
    assert_eq!(m[14].model.as_deref(), Some("gpt-5.1-codex"));
    assert_eq!(
        (part_text(&m[14], 0), part_text(&m[14], 1)),
        (
            "Re-run the suite after the compaction.",
            "The ISO test still fails until parse_date is fixed; fixing it next."
        )
    );
    assert!(matches!(m[14].parts[0], Part::Thinking { .. }));
}

/// The session grows across the extension's hooks (the end of each prompt, the compaction):
/// reading it at those points, each reader taking the state the previous one saved, stores what
/// one pass stores; so does a cut at every line.
#[test]
fn growth_across_hooks_stores_what_one_pass_stores() {
    let bytes = std::fs::read(transcript()).unwrap();
    let ls = lines(&bytes);
    let whole = Store::read_in_pieces_with(&make, &ls, &[]);
    assert_eq!(whole.messages.len(), 15);
    // agent_end after lines 7, 11, 15 and 20; session_before_compact after 23; compact at 24.
    let grown = Store::read_in_pieces_with(&make, &ls, &[7, 11, 15, 20, 23, 24]);
    assert_eq!(grown, whole);
    // After the third prompt the dead branch is still the active one: stored, then rewound.
    let third = Store::read_in_pieces_with(&make, &ls[..15], &[7, 11]);
    assert_eq!(third.messages.len(), 9);
    assert_eq!(ids(&third)[6..], ["2d9e6b4f", "3e0f7c5a", "5a2b9e7c"]);
    assert_split_equivalence_with(&make, "pi", &bytes);
}

#[test]
fn branches_from_the_root_and_from_an_entry_older_than_the_kept_path() {
    let e = |id: &str, parent: Option<&str>, text: &str| {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{},"timestamp":"2026-11-30T10:00:00.000Z","message":{{"role":"user","content":"{text}"}}}}"#,
            parent.map_or("null".to_string(), |p| format!("\"{p}\""))
        )
    };
    let l1 = e("aaaa0001", None, "first");
    let l2 = e("aaaa0002", Some("aaaa0001"), "second");
    // The leaf reset before the first entry (`/tree` to the top): a new root.
    let l3 = e("aaaa0003", None, "again");
    // A parent the reader never saw: nothing is rewound.
    let l4 = e("aaaa0004", Some("ffffffff"), "elsewhere");
    let b = read(&[l1.as_bytes(), l2.as_bytes(), l3.as_bytes(), l4.as_bytes()]);
    let rewinds: Vec<&Record> = b
        .records
        .iter()
        .filter(|r| matches!(r, Record::Rewind { .. }))
        .collect();
    assert_eq!(
        rewinds,
        [&Record::Rewind {
            message_id: "aaaa0001".into()
        }]
    );
    assert_eq!(messages(&b).len(), 4);
    let mut s = Store::default();
    s.apply(b);
    assert_eq!(ids(&s), ["aaaa0003", "aaaa0004"]);
}

#[test]
fn bad_lines_are_counted_and_skipped() {
    let b = read(&[
        b"not json",
        br#"{"type":"message","parentId":null,"message":{"role":"user","content":"no id"}}"#,
        br#"{"type":"future_entry","id":"00000001","parentId":null}"#,
        br#"{"type":"message","id":"00000002","parentId":null,"message":{"role":"toolResult","content":[]}}"#,
        br#"{"type":"message","id":"00000003","parentId":"00000002","message":{"role":"user","content":[{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":" look "}]}}"#,
        b"",
    ]);
    assert_eq!(
        b.stats,
        ParseStats {
            lines: 5,
            skipped_known: 0,
            skipped_unknown: 1,
            malformed: 3
        }
    );
    let m = messages(&b);
    assert_eq!(m.len(), 1);
    assert_eq!(part_text(m[0], 0), "[image]\n\nlook");
}

#[test]
fn identity_from_the_header_else_the_name() {
    let s = pi::identify(&transcript()).unwrap();
    assert_eq!(
        (s.agent, s.external_id.as_str(), s.parent_external_id),
        (Agent::Pi, SID, None)
    );
    let dir = tempfile::tempdir().unwrap();
    // Not written yet (pi writes the file at the first answer): the name.
    let missing = dir
        .path()
        .join("2026-12-01T08-00-00-000Z_0190aaaa-0000-7000-8000-000000000001.jsonl");
    assert_eq!(
        pi::identify(&missing).unwrap().external_id,
        "0190aaaa-0000-7000-8000-000000000001"
    );
    // `--session custom.jsonl`: the header's id, whatever the name.
    let custom = dir.path().join("my_notes.jsonl");
    std::fs::write(
        &custom,
        "{\"type\":\"session\",\"version\":3,\"id\":\"0190bbbb\",\"timestamp\":\"2026-12-01T08:00:00.000Z\",\"cwd\":\"/w\"}\n",
    )
    .unwrap();
    assert_eq!(pi::identify(&custom).unwrap().external_id, "0190bbbb");
    let bare = dir.path().join("nothing.jsonl");
    std::fs::write(&bare, "{\"type\":\"message\"}\n").unwrap();
    assert_eq!(
        pi::identify(&bare).unwrap_err().kind(),
        std::io::ErrorKind::InvalidInput
    );
    assert!(pi::source_for(&custom).is_some());
    assert!(pi::source_for(&dir.path().join("x.json")).is_none());
}

#[test]
fn discovery_finds_session_files_one_level_down_and_flat() {
    let found = pi::discover_in(&fixtures().join("sessions")).unwrap();
    assert_eq!(found.files, [transcript()]);
    assert!(found.unreadable.is_empty());

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("--w--/deeper")).unwrap();
    std::fs::write(root.join("--w--/a_1.jsonl"), "").unwrap();
    std::fs::write(root.join("--w--/deeper/b_2.jsonl"), "").unwrap();
    std::fs::write(root.join("--w--/notes.txt"), "").unwrap();
    std::fs::write(root.join("flat_3.jsonl"), "").unwrap();
    let found = pi::discover_in(root).unwrap();
    assert_eq!(
        found.files,
        [root.join("--w--/a_1.jsonl"), root.join("flat_3.jsonl")]
    );
    assert!(
        pi::discover_in(&root.join("absent"))
            .unwrap()
            .files
            .is_empty()
    );
}

#[test]
fn the_extensions_payloads() {
    let env = Env::sandbox("/h");
    let expect = [
        ("SessionStart", "SessionStart", Some("startup")),
        ("Stop", "Stop", None),
        ("PreCompact", "PreCompact", None),
        ("PostCompact", "PostCompact", None),
        ("SessionEnd", "SessionEnd", Some("quit")),
    ];
    for (file, canonical, source) in expect {
        let bytes = std::fs::read(fixtures().join(format!("hooks/{file}.json"))).unwrap();
        let ev = pi::parse_hook_payload(&bytes, &env).unwrap();
        assert_eq!(ev.agent, Agent::Pi);
        assert_eq!(canonical_event(&ev.event), canonical, "{file}");
        assert_eq!(ev.session_id.as_deref(), Some(SID));
        assert_eq!(ev.cwd.as_deref(), Some("/home/user/demo"));
        assert_eq!(ev.source.as_deref(), source, "{file}");
        let t = ev.transcript_path.clone().unwrap();
        assert!(t.ends_with(&format!("_{SID}.jsonl")), "{t}");
        assert_eq!(pi::transcripts_for_event(&ev), [PathBuf::from(t)]);
    }
    // `--no-session`: no file, nothing to ingest.
    let ev = pi::parse_hook_payload(
        br#"{"hook_event_name":"Stop","session_id":"s","transcript_path":""}"#,
        &env,
    )
    .unwrap();
    assert!(pi::transcripts_for_event(&ev).is_empty());
    assert!(matches!(
        pi::parse_hook_payload(b"  \n", &env),
        Err(Error::EmptyPayload)
    ));
    assert!(matches!(
        pi::parse_hook_payload(b"[1]", &env),
        Err(Error::PayloadNotObject)
    ));
    assert!(matches!(
        pi::parse_hook_payload(b"{", &env),
        Err(Error::PayloadNotJson(_))
    ));
    assert_eq!(
        pi::session_start_reply("ctx \"q\"").as_deref(),
        Some(r#"{"additionalContext":"ctx \"q\""}"#)
    );
}
