//! Conformance of the VS Code transcript reader with `../shared/fixtures/vscode/vscode-session.jsonl`
//! (code-session-memory's synthetic transcript; `docs/agents/README.md#fixtures`,
//! `docs/agents/vscode.md#agent-transcripts`). Expected values were checked against the
//! file itself.
//!
//! The file differs from what VS Code writes in two ways the reader must absorb: each
//! `tool.execution_complete` comes **before** the `assistant.message` whose `toolRequests` name
//! the call, and requests use `toolName` with object `arguments` (VS Code's
//! `sessionTranscriptService.ts` writes `name` and a JSON-string `arguments`, and the result as
//! `{content}`).
//!
//! The folder lives outside the repository. When it is missing the tests print a note and pass,
//! unless `MEMTRAIL_REQUIRE_SHARED_FIXTURES=1`.

use crate::common;

use common::{assert_split_equivalence_with, lines, messages, part_text, shape};
use memtrail_adapters::vscode::VscodeReader;
use memtrail_adapters::{Batch, LineReader, ParseStats, Record, Role, parse_rfc3339_ms};
use serde_json::json;
use std::path::PathBuf;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures/vscode");

fn shared() -> Option<PathBuf> {
    memtrail_testkit::shared_fixtures(SHARED, "shared VS Code fixture tests")
}

fn ts(s: &str) -> Option<i64> {
    Some(parse_rfc3339_ms(s).expect("valid timestamp"))
}

#[test]
fn csm_session_two_prompts_two_answers_two_tool_calls() {
    let Some(dir) = shared() else { return };
    let bytes = std::fs::read(dir.join("vscode-session.jsonl")).unwrap();
    assert_eq!(bytes.len(), 2675);
    let mut reader = VscodeReader::new();
    let mut b = Batch::default();
    for l in lines(&bytes) {
        reader.line(l, &mut b);
    }
    reader.finish(&mut b);
    // 13 events: session.start, 2 × turn_start, 2 × execution_start, 2 × turn_end are known;
    // 2 user.message, 2 execution_complete, 2 assistant.message carry content.
    assert_eq!(
        b.stats,
        ParseStats {
            lines: 13,
            skipped_known: 7,
            skipped_unknown: 0,
            malformed: 0
        }
    );
    // The results came first and were held, then attached: four messages, no loose results.
    assert_eq!(b.records.len(), 4);
    assert!(b.records.iter().all(|r| matches!(r, Record::Message(_))));
    let ms = messages(&b);
    assert_eq!(
        ms.iter()
            .map(|m| (m.id.as_str(), m.role))
            .collect::<Vec<_>>(),
        [
            ("evt-002", Role::User),
            ("evt-006", Role::Assistant),
            ("evt-008", Role::User),
            ("evt-012", Role::Assistant),
        ]
    );
    assert_eq!(part_text(ms[0], 0), "Show me the contents of package.json");
    assert_eq!(ms[0].timestamp, ts("2026-02-22T10:00:01.000Z"));
    assert_eq!(shape(ms[1]), ["text", "readFile"]);
    assert!(part_text(ms[1], 0).starts_with("Here's the contents of your package.json:"));
    let read = ms[1].tool_calls().next().unwrap();
    assert_eq!(
        (read.id.as_str(), read.tool.as_str(), &read.input),
        ("tool-001", "read", &json!({"path": "package.json"}))
    );
    assert_eq!(
        read.output.as_deref(),
        Some("{ \"name\": \"my-project\", \"version\": \"1.0.0\" }")
    );
    assert!(!read.is_error);
    assert_eq!(part_text(ms[2], 0), "Now add a description field to it");
    assert_eq!(shape(ms[3]), ["text", "editFiles"]);
    let edit = ms[3].tool_calls().next().unwrap();
    assert_eq!(
        (edit.id.as_str(), edit.tool.as_str(), &edit.input),
        ("tool-002", "edit", &json!({"files": ["package.json"]}))
    );
    assert_eq!(edit.output.as_deref(), Some("File edited successfully"));
    assert_eq!(ms[3].timestamp, ts("2026-02-22T10:01:02.000Z"));

    let meta = &b.meta;
    assert_eq!(
        meta.title.as_deref(),
        Some("Show me the contents of package.json")
    );
    assert_eq!(meta.agent_version.as_deref(), Some("0.37.8"));
    assert_eq!(meta.started_at, ts("2026-02-22T10:00:00.000Z"));
    assert_eq!(meta.updated_at, ts("2026-02-22T10:01:02.000Z"));
    assert_eq!((&meta.project_dir, &meta.model), (&None, &None));

    // Split anywhere, including between a held result and its request: the same store.
    assert_split_equivalence_with(
        &|| Box::new(VscodeReader::new()),
        "vscode-session.jsonl",
        &bytes,
    );
}
