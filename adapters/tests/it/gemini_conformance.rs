//! Conformance of the Gemini CLI legacy-JSON reader with the files in `../shared/fixtures/gemini`
//! (documented in `docs/agents/README.md#fixtures` and `docs/agents/gemini.md#transcript-format`).
//! Expected values were checked against the files themselves, not only the README.
//!
//! The folder lives outside the repository. When it is missing the tests print a note and pass,
//! unless `MEMTRAIL_REQUIRE_SHARED_FIXTURES=1`, which turns a missing folder into a failure.

use crate::common;

use common::{part_text, shape};
use memtrail_adapters::gemini::{self, GeminiDocReader};
use memtrail_adapters::{
    Agent, Batch, DocReader, Kind, Message, ParseStats, Record, Role, SessionRef, Source,
    parse_rfc3339_ms,
};
use serde_json::json;
use std::path::PathBuf;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures/gemini");

/// The shared fixture folder, or `None` (with a note) when it is absent and not required.
fn shared() -> Option<PathBuf> {
    memtrail_testkit::shared_fixtures(SHARED, "shared Gemini fixture tests")
}

fn doc(name: &str) -> Option<Batch> {
    let bytes = std::fs::read(shared()?.join(name)).expect("read shared fixture");
    let mut batch = Batch::default();
    GeminiDocReader::new().read(&bytes, &mut batch);
    Some(batch)
}

fn msgs(batch: &Batch) -> Vec<&Message> {
    batch
        .records
        .iter()
        .map(|r| match r {
            Record::Replace(m) => m,
            other => panic!("a legacy document yields only Replace records, got {other:?}"),
        })
        .collect()
}

fn ts(s: &str) -> Option<i64> {
    Some(parse_rfc3339_ms(s).expect("valid timestamp"))
}

#[test]
fn csm_synthetic_session_gives_three_messages() {
    let Some(batch) = doc("gemini-session.json") else {
        return;
    };
    // 4 messages; the `system` one is not an upstream type: skipped as unknown.
    assert_eq!(
        batch.stats,
        ParseStats {
            lines: 4,
            skipped_known: 0,
            skipped_unknown: 1,
            malformed: 0
        }
    );
    let m = msgs(&batch);
    assert_eq!(
        m.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        ["msg-user-1", "msg-gemini-1", "msg-gemini-2"]
    );
    assert_eq!((m[0].role, m[0].kind), (Role::User, Kind::Text));
    assert_eq!(m[0].text(), "Help me wire MCP server for tests.");
    assert_eq!(m[0].timestamp, ts("2026-02-22T10:00:00.000Z"));

    assert_eq!(shape(m[1]), ["text", "read_file", "list_dir"]);
    assert_eq!(
        part_text(m[1], 0),
        "I will inspect project configuration and hooks."
    );
    let calls: Vec<_> = m[1].tool_calls().collect();
    assert_eq!(
        (calls[0].id.as_str(), calls[0].tool.as_str()),
        ("tool-001", "read")
    );
    assert_eq!(calls[0].input, json!({"path": "package.json"}));
    assert_eq!(calls[0].output.as_deref(), Some("{\"firstLine\":\"{\"}"));
    assert!(!calls[0].is_error);
    assert_eq!(
        (calls[1].id.as_str(), calls[1].tool.as_str()),
        ("tool-002", "list")
    );
    assert_eq!(
        calls[1].input,
        json!({"path": "src"}),
        "`arguments` accepted"
    );
    assert_eq!(calls[1].output, None, "running: no result yet");
    assert_eq!(m[1].kind, Kind::ToolCall);

    assert_eq!(m[2].text(), "Done. I found the files.");
    assert_eq!(m[2].timestamp, None);

    assert_eq!(
        batch.meta.title.as_deref(),
        Some("Help me wire MCP server for tests.")
    );
    assert_eq!(batch.meta.started_at, ts("2026-02-22T10:00:00.000Z"));
    assert_eq!(batch.meta.updated_at, ts("2026-02-22T10:00:05.000Z"));
    assert_eq!(batch.meta.model, None);
}

#[test]
fn entire_real_legacy_session_reads_fully() {
    let Some(batch) = doc("entire-cli-ckpt-513fab7adf0b-session.json") else {
        return;
    };
    assert_eq!(
        batch.stats,
        ParseStats {
            lines: 4,
            ..ParseStats::default()
        }
    );
    let m = msgs(&batch);
    assert_eq!(
        m.iter()
            .map(|m| (m.id.as_str(), m.role))
            .collect::<Vec<_>>(),
        [
            ("01665c1b-14c0-4a3d-a48e-828153ec11c1", Role::User),
            ("51a3e278-75ec-4444-a41b-daf33a49b230", Role::Assistant),
            ("afd7447c-a2cb-409a-a875-8048af60ba1c", Role::User),
            ("bb58d15c-8703-44cf-aa1f-8ac945f39452", Role::Assistant),
        ]
    );
    assert_eq!(
        m[0].text(),
        "write to test-gemini.txt \"hello, gemini\" only"
    );

    // The write_file turn: two thoughts and the call (its content is "").
    assert_eq!(shape(m[1]), ["thinking", "thinking", "write_file"]);
    assert!(part_text(m[1], 0).starts_with(
        "Reflecting on Implementation\n\nI'm now contemplating how to execute this action."
    ));
    assert!(part_text(m[1], 1).starts_with("Formulating the Write Command\n\nI've got the data"));
    let call = m[1].tool_calls().next().expect("write_file");
    assert_eq!(call.id, "write_file-1768075225055-902f304bae8ae");
    assert_eq!(call.tool, "write");
    assert_eq!(
        call.input,
        json!({"file_path": "test-gemini.txt", "content": "hello, gemini"})
    );
    assert_eq!(
        call.output.as_deref(),
        Some(
            "Successfully overwrote file: /home/user/Documents/entire/devenv/entireio/cli/test-gemini.txt."
        ),
        "unwrapped from functionResponse.response.output"
    );
    assert!(!call.is_error);
    assert_eq!(
        (m[1].kind, m[1].model.as_deref()),
        (Kind::ToolCall, Some("gemini-2.5-flash"))
    );
    assert_eq!(m[1].timestamp, ts("2026-01-10T20:00:27.560Z"));

    assert_eq!(m[2].text(), "System: Please continue.");
    assert_eq!(shape(m[3]), ["thinking", "thinking", "text"]);
    // The description starts with literal backslash-n pairs in the file; kept as written.
    assert!(
        part_text(m[3], 0)
            .starts_with("Anticipating Further Directives\n\n\\n\\n\n\nI'm currently poised")
    );
    assert_eq!(
        part_text(m[3], 2),
        "I've completed the previous request. What would you like to do next?"
    );

    assert_eq!(
        batch.meta.title.as_deref(),
        Some("write to test-gemini.txt \"hello, gemini\" only")
    );
    assert_eq!(batch.meta.model.as_deref(), Some("gemini-2.5-flash"));
    assert_eq!(batch.meta.started_at, ts("2026-01-10T20:00:21.501Z"));
    assert_eq!(batch.meta.updated_at, ts("2026-01-10T20:00:32.660Z"));
}

#[test]
fn shared_files_identify_and_route_to_the_doc_reader() {
    let Some(dir) = shared() else { return };
    let entire = dir.join("entire-cli-ckpt-513fab7adf0b-session.json");
    assert_eq!(
        gemini::identify(&entire).expect("identify"),
        SessionRef {
            agent: Agent::Gemini,
            external_id: "fa4593e0-f7e1-4dd1-b656-da95fb4d60fa".into(),
            parent_external_id: None,
        }
    );
    // CSM's synthetic file has `session_id` (snake case).
    assert_eq!(
        gemini::identify(&dir.join("gemini-session.json"))
            .expect("identify")
            .external_id,
        "gemini-session-001"
    );
    assert!(matches!(gemini::source_for(&entire), Some(Source::Doc(_))));
}

#[test]
fn shared_files_survive_every_truncation() {
    let Some(dir) = shared() else { return };
    for name in [
        "gemini-session.json",
        "entire-cli-ckpt-513fab7adf0b-session.json",
    ] {
        let bytes = std::fs::read(dir.join(name)).expect("read");
        // Every cut before the closing brace (a trailing newline is not part of the document).
        for cut in 0..bytes.trim_ascii_end().len() {
            let mut batch = Batch::default();
            GeminiDocReader::new().read(&bytes[..cut], &mut batch);
            assert!(batch.records.is_empty(), "{name} cut at {cut}");
        }
    }
}
