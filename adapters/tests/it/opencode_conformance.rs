//! Conformance of the OpenCode export reader with the real `opencode export` output in
//! `../shared/fixtures/opencode` (OpenCode 1.2.10; documented in `docs/agents/README.md#fixtures`
//! and `docs/agents/opencode.md#opencode-export`). Expected values were read off the files
//! themselves (message by message, part by part), not only the README.
//!
//! The folder lives outside the repository. When it is missing the tests print a note and pass,
//! unless `MEMTRAIL_REQUIRE_SHARED_FIXTURES=1`, which turns a missing folder into a failure.

use crate::common;

use common::{Store, messages, part_text, shape};
use memtrail_adapters::opencode::{self, ExportReader, SourceKind};
use memtrail_adapters::{
    Agent, Batch, DocReader, Kind, ParseStats, Record, Role, SessionMeta, SessionRef,
};
use std::path::PathBuf;

const SHARED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/fixtures/opencode"
);
const SESSION: &str = "ses_3848fca4affehAt47TRCjUOD3d";
const DIR: &str = "/home/user/Documents/ai/opencode-memory";
const MODEL: &str = "claude-sonnet-4-6@default";
const IDS: [&str; 5] = [
    "msg_c7b7035d0001RkzIhbIStebEXa",
    "msg_c7b7035d6001pgwAyaVObtxOrl",
    "msg_c7b704023001GDiLuMwwiniAOZ",
    "msg_c7b7058de0010up6kvThEjRoNM",
    "msg_c7b7058f1001YqtlI5yfReOUdv",
];

/// The shared fixture folder, or `None` (with a note) when it is absent and not required.
fn shared() -> Option<PathBuf> {
    memtrail_testkit::shared_fixtures(SHARED, "shared OpenCode fixture tests")
}

fn fixture(name: &str) -> Option<(Vec<u8>, Batch)> {
    let bytes = std::fs::read(shared()?.join(name)).expect("read fixture");
    let mut batch = Batch::default();
    ExportReader::new().read(&bytes, &mut batch);
    Some((bytes, batch))
}

fn stats(lines: u64, skipped_known: u64) -> ParseStats {
    ParseStats {
        lines,
        skipped_known,
        skipped_unknown: 0,
        malformed: 0,
    }
}

#[test]
fn both_fixtures_are_identified_as_exports_of_one_session() {
    let Some(dir) = shared() else { return };
    for name in ["opencode-turn1.json", "opencode-session.json"] {
        let path = dir.join(name);
        assert_eq!(opencode::source_kind(&path), SourceKind::Export);
        assert_eq!(
            opencode::identify(&path).unwrap(),
            SessionRef {
                agent: Agent::Opencode,
                external_id: SESSION.into(),
                parent_external_id: None,
            },
            "{name}"
        );
        let (sref, _) = opencode::read_export(&std::fs::read(&path).unwrap());
        assert_eq!(sref.unwrap().external_id, SESSION);
    }
}

#[test]
fn turn1_user_prompt_and_a_glob_call() {
    let Some((_, b)) = fixture("opencode-turn1.json") else {
        return;
    };
    // 2 messages + 4 parts (text | step-start, tool, step-finish); the step parts are skipped.
    assert_eq!(b.stats, stats(6, 2));
    let ms = messages(&b);
    let ids: Vec<&str> = ms.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, IDS[..2]);
    assert_eq!(ms[0].role, Role::User);
    assert_eq!(ms[0].kind, Kind::Text);
    assert_eq!(shape(ms[0]), ["text"]);
    // Trimmed: the prompt ends with "\n" in the file.
    assert_eq!(
        part_text(ms[0], 0),
        "\"List TypeScript files in the src directory using the Glob tool. Use pattern src/**/*.ts\""
    );
    assert_eq!(ms[0].timestamp, Some(1_771_597_477_328));
    assert_eq!(ms[0].model, None);

    assert_eq!(ms[1].role, Role::Assistant);
    assert_eq!(ms[1].kind, Kind::ToolCall);
    assert_eq!(shape(ms[1]), ["glob"]);
    assert_eq!(ms[1].timestamp, Some(1_771_597_477_334));
    assert_eq!(ms[1].model.as_deref(), Some(MODEL));
    let call = ms[1].tool_calls().next().unwrap();
    assert_eq!(call.id, "toolu_vrtx_01PrRtDGucjM4xguyvMvLwx3");
    assert_eq!(call.tool, "list");
    assert_eq!(call.input, serde_json::json!({"pattern": "src/**/*.ts"}));
    let out = call.output.as_deref().unwrap();
    assert_eq!(out.len(), 773);
    assert_eq!(out.lines().count(), 13);
    assert!(out.starts_with("/home/user/Documents/ai/opencode-memory/src/cli.ts\n"));
    assert!(out.ends_with("/home/user/Documents/ai/opencode-memory/src/embedder.ts"));
    assert!(!call.is_error);

    assert_eq!(
        b.meta,
        SessionMeta {
            project_dir: Some(DIR.into()),
            title: Some("List TypeScript files in src directory".into()),
            model: Some(MODEL.into()),
            git_branch: None,
            agent_version: Some("1.2.10".into()),
            // info.time.created, and info.time.updated (later than the last message's
            // completion, 1771597479970).
            started_at: Some(1_771_597_477_301),
            updated_at: Some(1_771_597_480_002),
        }
    );
}

#[test]
fn session_five_messages_one_tool_call() {
    let Some((_, b)) = fixture("opencode-session.json") else {
        return;
    };
    // 5 messages + 11 parts (4 text, 1 tool, 3 step-start, 3 step-finish).
    assert_eq!(b.stats, stats(16, 6));
    let ms = messages(&b);
    let ids: Vec<&str> = ms.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, IDS);
    assert_eq!(
        ms.iter().map(|m| m.role).collect::<Vec<_>>(),
        [
            Role::User,
            Role::Assistant,
            Role::Assistant,
            Role::User,
            Role::Assistant
        ]
    );
    assert_eq!(
        ms.iter().map(|m| m.kind).collect::<Vec<_>>(),
        [
            Kind::Text,
            Kind::ToolCall,
            Kind::Text,
            Kind::Text,
            Kind::Text
        ]
    );
    assert_eq!(ms.iter().map(|m| m.tool_calls().count()).sum::<usize>(), 1);
    let table = part_text(ms[2], 0);
    assert_eq!(table.chars().count(), 758);
    assert!(table.starts_with("Here are the TypeScript files found in `src/`:"));
    assert!(table.ends_with("13 files total."));
    assert_eq!(
        part_text(ms[3], 0),
        "\"How many TypeScript files are in the src directory?\""
    );
    assert_eq!(
        part_text(ms[4], 0),
        "Based on the results from the previous Glob search, there are **13 TypeScript files** in the `src/` directory."
    );
    assert_eq!(
        ms.iter().map(|m| m.timestamp.unwrap()).collect::<Vec<_>>(),
        [
            1_771_597_477_328,
            1_771_597_477_334,
            1_771_597_479_971,
            1_771_597_486_302,
            1_771_597_486_321
        ]
    );
    assert_eq!(b.meta.started_at, Some(1_771_597_477_301));
    // The last assistant message completed after the session's own `time.updated`.
    assert_eq!(b.meta.updated_at, Some(1_771_597_488_755));
    assert_eq!(
        b.meta.title.as_deref(),
        Some("List TypeScript files in src directory")
    );
}

#[test]
fn turn1_ids_are_a_prefix_and_rereading_the_grown_export_changes_nothing_before() {
    let (Some((_, t1)), Some((_, full))) = (
        fixture("opencode-turn1.json"),
        fixture("opencode-session.json"),
    ) else {
        return;
    };
    let first: Vec<_> = messages(&t1).into_iter().cloned().collect();
    let all: Vec<_> = messages(&full).into_iter().cloned().collect();
    assert_eq!(
        all[..2],
        first[..],
        "turn 1 messages are unchanged in the grown export"
    );
    // Storing turn 1, then the whole export, gives the whole export (merge by id, no duplicates).
    let mut store = Store::default();
    store.apply(t1);
    store.apply(full.clone());
    assert_eq!(store.messages, all);
    assert!(store.orphans.is_empty());
    // Every record of a whole document is a plain message record.
    assert!(full.records.iter().all(|r| matches!(r, Record::Message(_))));
}

#[test]
fn truncated_exports_never_panic_and_are_one_malformed_line() {
    let Some((bytes, _)) = fixture("opencode-session.json") else {
        return;
    };
    for cut in (0..bytes.len()).step_by(97) {
        let (sref, b) = opencode::read_export(&bytes[..cut]);
        assert!(sref.is_none(), "cut at {cut}");
        assert_eq!(b.stats.lines, 1, "cut at {cut}");
        assert_eq!(b.stats.malformed, 1, "cut at {cut}");
        assert!(b.records.is_empty());
    }
}
