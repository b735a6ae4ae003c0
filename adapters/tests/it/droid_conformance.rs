//! Factory Droid: the session reader (Claude Code's block reading under Droid's envelope), hook
//! payloads (Claude Code's schema), identity and discovery on the project's own fixtures
//! (`fixtures/droid/`, described in its README and in `docs/agents/droid.md`). Expected values
//! are read off the fixture by hand.

use crate::common;

use common::{Store, assert_split_equivalence_with, lines, part_text};
use memtrail_adapters::droid::{self, DroidReader};
use memtrail_adapters::{
    Agent, Batch, Env, Kind, LineReader, ParseStats, Part, Role, ToolCall, canonical_event,
};
use std::path::{Path, PathBuf};

const SID: &str = "4d7e2a91-6c3b-4f58-9e1a-b2c4d6e8f013";
const SUB: &str = "9b3f6c20-1e4d-4a7b-8c5e-d0f2a4b6c819";

fn sessions() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/droid/sessions")
}

fn transcript(id: &str) -> PathBuf {
    sessions()
        .join("-home-user-demo")
        .join(format!("{id}.jsonl"))
}

fn make() -> Box<dyn LineReader> {
    Box::new(DroidReader::new())
}

/// The fixture's message id `n` (`0f<nn>c3a1-…`).
fn mid(n: u32) -> String {
    format!("0f{n:02}c3a1-2b4d-4e6f-8a0b-1c2d3e4f5a{n:02}")
}

fn call(parts: &[Part], i: usize) -> &ToolCall {
    match &parts[i] {
        Part::ToolCall(c) => c,
        other => panic!("part {i} is not a call: {other:?}"),
    }
}

/// 2026-11-28T14:00:00Z in ms.
const T0: i64 = 1_795_874_400_000;

#[test]
fn the_session_in_one_pass() {
    let bytes = std::fs::read(transcript(SID)).unwrap();
    let ls = lines(&bytes);
    assert_eq!(ls.len(), 18);
    let mut reader = DroidReader::new();
    let mut b = Batch::default();
    for l in &ls {
        reader.line(l, &mut b);
    }
    reader.finish(&mut b);
    // session_start, todo_state, session_settings and agent_turn_outcome are known and store
    // nothing (the four lines of tool results attach them to their calls); one type is unknown.
    assert_eq!(
        b.stats,
        ParseStats {
            lines: 18,
            skipped_known: 4,
            skipped_unknown: 1,
            malformed: 0
        }
    );
    assert_eq!(
        b.meta.title.as_deref(),
        Some("Run the tests and tell me what fails")
    );
    assert_eq!(b.meta.project_dir.as_deref(), Some("/home/user/demo"));
    assert_eq!(b.meta.started_at, Some(T0 + 1_000));
    assert_eq!(b.meta.updated_at, Some(T0 + 104_000));

    let mut s = Store::default();
    s.apply(b);
    assert!(s.orphans.is_empty(), "{:?}", s.orphans);
    let ids: Vec<&str> = s.messages.iter().map(|m| m.id.as_str()).collect();
    let (m1, m2, m4, m5, m6, m8, m10, m11, m12) = (
        mid(1),
        mid(2),
        mid(4),
        mid(5),
        mid(6),
        mid(8),
        mid(10),
        mid(11),
        mid(12),
    );
    assert_eq!(
        ids,
        [
            m1.as_str(),
            &m2,
            &m4,
            &m5,
            &m6,
            &m8,
            &m10,
            "cs-1",
            &m11,
            &m12
        ]
    );
    let m = &s.messages;
    // The prompt without Droid's <system-reminder> block.
    assert_eq!(m[0].role, Role::User);
    assert_eq!(m[0].parts.len(), 1);
    assert_eq!(part_text(&m[0], 0), "Run the tests and tell me what fails");
    assert_eq!(m[0].timestamp, Some(T0 + 1_000));
    // Thinking, text and an `Execute` call (tool `shell`) whose result is an error.
    assert_eq!(m[1].kind, Kind::ToolCall);
    assert_eq!(part_text(&m[1], 0), "Run the suite first.");
    assert_eq!(part_text(&m[1], 1), "Running the tests.");
    let exec = call(&m[1].parts, 2);
    assert_eq!(
        (exec.name.as_str(), exec.tool.as_str(), exec.is_error),
        ("Execute", "shell", true)
    );
    assert_eq!(exec.input["command"], "cargo test --quiet");
    assert!(
        exec.output
            .as_deref()
            .unwrap()
            .ends_with("11 passed; 1 failed")
    );
    // Japanese, a sub-droid (`Task`) with its answer, a `Create` (tool `write`).
    assert!(part_text(&m[3], 0).starts_with("日本語で説明して"));
    let task = call(&m[4].parts, 0);
    assert_eq!(task.name, "Task");
    assert_eq!(
        task.output.as_deref(),
        Some("parse_date splits on '/', the test passes an ISO date.")
    );
    let create = call(&m[5].parts, 0);
    assert_eq!((create.tool.as_str(), create.is_error), ("write", false));
    assert!(part_text(&m[6], 0).starts_with("原因: parse_date"));
    // The compaction's summary.
    assert_eq!((m[7].role, m[7].kind), (Role::System, Kind::Summary));
    assert!(part_text(&m[7], 0).starts_with("## Goal\nMake parse::dates pass."));
    assert_eq!(m[7].timestamp, Some(T0 + 90_000));
}

/// The session grows across Stop hooks: reading it at the ends of turns, and cut at every line,
/// stores what one pass stores.
#[test]
fn growth_across_hooks_stores_what_one_pass_stores() {
    let bytes = std::fs::read(transcript(SID)).unwrap();
    let ls = lines(&bytes);
    let whole = Store::read_in_pieces_with(&make, &ls, &[]);
    assert_eq!(whole.messages.len(), 10);
    assert_eq!(
        Store::read_in_pieces_with(&make, &ls, &[5, 12, 13, 16]),
        whole
    );
    assert_split_equivalence_with(&make, "droid", &bytes);
    // The sub-droid's own session file.
    let sub = std::fs::read(transcript(SUB)).unwrap();
    let s = Store::read_in_pieces_with(&make, &lines(&sub), &[]);
    assert_eq!(s.messages.len(), 3);
    assert_eq!(call(&s.messages[1].parts, 0).tool, "read");
    assert_split_equivalence_with(&make, "droid sub-droid", &sub);
}

#[test]
fn identity_and_discovery() {
    let s = droid::identify(&transcript(SID)).unwrap();
    assert_eq!(
        (s.agent, s.external_id.as_str(), s.parent_external_id),
        (Agent::Droid, SID, None)
    );
    let settings = sessions().join(format!("-home-user-demo/{SID}.settings.json"));
    assert!(droid::identify(&settings).is_err());
    assert!(droid::source_for(&settings).is_none());
    assert!(droid::source_for(&transcript(SID)).is_some());
    let found = memtrail_adapters::pi::discover_in(&sessions()).unwrap();
    assert_eq!(found.files, [transcript(SID), transcript(SUB)]);
}

#[test]
fn hook_payloads_are_claude_codes() {
    let hooks = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/droid/hooks");
    // Even where Claude Code's parser would name another caller (a Cursor terminal's variables),
    // the caller is Droid.
    let env = Env::sandbox("/h").with_var("CURSOR_VERSION", "2.0");
    for (file, event, source) in [
        ("SessionStart", "SessionStart", Some("startup")),
        ("Stop", "Stop", None),
        ("PreCompact", "PreCompact", Some("manual")),
        ("SessionStart-compact", "SessionStart", Some("compact")),
        ("SessionEnd", "SessionEnd", Some("prompt_input_exit")),
    ] {
        let bytes = std::fs::read(hooks.join(format!("{file}.json"))).unwrap();
        let ev = droid::parse_hook_payload(&bytes, &env).unwrap();
        assert_eq!(ev.agent, Agent::Droid, "{file}");
        assert_eq!(canonical_event(&ev.event), event, "{file}");
        assert_eq!(ev.session_id.as_deref(), Some(SID));
        assert_eq!(ev.source.as_deref(), source, "{file}");
        assert_eq!(
            droid::transcripts_for_event(&ev),
            [PathBuf::from(format!(
                "/home/user/.factory/sessions/-home-user-demo/{SID}.jsonl"
            ))]
        );
    }
    assert!(droid::parse_hook_payload(b"", &env).is_err());
    assert_eq!(
        droid::session_start_reply("x").as_deref(),
        Some(r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"x"}}"#)
    );
}
