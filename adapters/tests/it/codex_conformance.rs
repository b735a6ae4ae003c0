//! Conformance of the Codex rollout reader with the rollouts in `../shared/fixtures/codex`
//! (documented in `docs/agents/README.md#fixtures` and `docs/agents/codex.md#transcript-format`).
//! Expected values were checked against the files line by line, not only against the README: our
//! ids are `<turn>:user:<k>` / `<turn>:assistant:<k>`, not CSM's line-based ones, and commentary
//! and reasoning summaries are kept (CSM keeps only the final text).
//!
//! The folder lives outside the repository. When it is missing the tests print a note and pass,
//! unless `MEMTRAIL_REQUIRE_SHARED_FIXTURES=1`, which turns a missing folder into a failure.

use crate::common;

use common::{Store, assert_split_equivalence_with, lines, messages, part_text, shape};
use memtrail_adapters::codex::{self, CodexReader};
use memtrail_adapters::{
    Agent, Batch, Kind, LineReader, Message, ParseStats, Part, Record, Role, SessionRef,
    parse_rfc3339_ms,
};
use serde_json::json;
use std::path::PathBuf;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures/codex");
const SESSION: &str = "codex-session.jsonl";
const COMPLETE: &str =
    "localpush-rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl";
const INTERRUPTED: &str =
    "localpush-rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl";

/// The shared fixture folder, or `None` (with a note) when it is absent and not required.
fn shared() -> Option<PathBuf> {
    memtrail_testkit::shared_fixtures(SHARED, "shared Codex fixture tests")
}

fn make() -> Box<dyn LineReader> {
    Box::new(CodexReader::new())
}

fn read_bytes(bytes: &[u8]) -> Batch {
    let mut reader = CodexReader::new();
    let mut batch = Batch::default();
    for l in lines(bytes) {
        reader.line(l, &mut batch);
    }
    reader.finish(&mut batch);
    batch
}

fn bytes(name: &str) -> Option<Vec<u8>> {
    Some(std::fs::read(shared()?.join(name)).expect("read shared fixture"))
}

fn stats(lines: u64, skipped_known: u64) -> ParseStats {
    ParseStats {
        lines,
        skipped_known,
        skipped_unknown: 0,
        malformed: 0,
    }
}

fn ts(s: &str) -> Option<i64> {
    Some(parse_rfc3339_ms(s).expect("valid timestamp"))
}

#[test]
fn every_shared_fixture_reads_cleanly_and_splits_equivalently() {
    let Some(dir) = shared() else { return };
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("list shared fixtures")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    names.sort();
    for documented in [SESSION, COMPLETE, INTERRUPTED] {
        assert!(
            names.iter().any(|p| p.ends_with(documented)),
            "missing shared fixture {documented}"
        );
    }
    for path in names {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let data = std::fs::read(&path).unwrap();
        let batch = read_bytes(&data);
        assert_eq!(batch.stats.skipped_unknown, 0, "{name}: unknown records");
        assert_eq!(batch.stats.malformed, 0, "{name}: malformed lines");
        assert_split_equivalence_with(&make, &name, &data);
    }
}

#[test]
fn codex_session_gives_one_prompt_and_the_answer_in_file_order() {
    let Some(data) = bytes(SESSION) else { return };
    let b = read_bytes(&data);
    // 10 lines: meta, developer, environment context, task_started and task_complete are
    // skipped; the user_message, function_call, its output and both assistant messages are read.
    assert_eq!(b.stats, stats(10, 5));
    let m = messages(&b);
    assert_eq!(
        m.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        [
            "turn-abc-001:user:0",
            "turn-abc-001:assistant:0",
            "turn-abc-001:assistant:0.1"
        ]
    );
    assert_eq!((m[0].role, m[0].kind), (Role::User, Kind::Text));
    assert_eq!(part_text(m[0], 0), "What's this project about?");
    assert_eq!(m[0].timestamp, ts("2026-02-22T09:29:21.826Z"));
    // The file has the call (lines 6-7) before both assistant messages (lines 8-9): the call,
    // then the texts after it, as two messages.
    let a = m[1];
    assert_eq!((a.role, a.kind), (Role::Assistant, Kind::ToolCall));
    assert_eq!(shape(a), ["exec_command"]);
    let Part::ToolCall(c) = &a.parts[0] else {
        unreachable!()
    };
    assert_eq!(
        (c.id.as_str(), c.tool.as_str(), c.input.clone(), c.is_error),
        ("call-001", "shell", json!({"cmd": "ls -la"}), false)
    );
    assert!(c.output.as_deref().unwrap().contains("README.md"));
    assert_eq!(a.timestamp, ts("2026-02-22T09:29:26.259Z"), "line 6");
    assert_eq!(a.model, None, "no turn_context in this file");
    let t = m[2];
    assert_eq!((t.role, t.kind), (Role::Assistant, Kind::Text));
    assert_eq!(shape(t), ["text", "text"]);
    assert_eq!(
        part_text(t, 0),
        "I'll quickly inspect the repo.",
        "commentary kept"
    );
    assert_eq!(part_text(t, 1), "This is a test project with a README.");
    assert_eq!(b.meta.project_dir.as_deref(), Some("/test/project"));
    assert_eq!(b.meta.agent_version.as_deref(), Some("0.104.0"));
    assert_eq!(b.meta.title.as_deref(), Some("What's this project about?"));
    assert_eq!(b.meta.git_branch, None);
}

#[test]
fn complete_localpush_turn_gives_one_prompt_and_six_answer_steps_with_five_calls() {
    let Some(data) = bytes(COMPLETE) else { return };
    let b = read_bytes(&data);
    // 63 lines; content: 1 user_message, 6 agent_reasoning, 6 agent_message, 5 function_call,
    // 5 function_call_output (23 lines). The 6 reasoning and 6 assistant response_items repeat
    // the events (with different redaction placeholders) and are skipped as duplicates.
    assert_eq!(b.stats, stats(63, 40));
    let m = messages(&b);
    let turn = "019c8bfe-ed40-7a21-b57f-6447436c5881";
    // Transcript order: each model response (reasoning, commentary, call) is one message, as
    // for Claude Code; the final answer is the sixth.
    assert_eq!(
        m.iter().map(|m| m.id.clone()).collect::<Vec<_>>(),
        [
            format!("{turn}:user:0"),
            format!("{turn}:assistant:0"),
            format!("{turn}:assistant:0.1"),
            format!("{turn}:assistant:0.2"),
            format!("{turn}:assistant:0.3"),
            format!("{turn}:assistant:0.4"),
            format!("{turn}:assistant:0.5"),
        ]
    );
    assert_eq!(
        part_text(m[0], 0),
        "[REDACTED_MESSAGE len=98 sha=c002ff99]",
        "line 10, the event"
    );
    let steps = [
        "mcp__cloud-associates__search_workflows",
        "[REDACTED_NAME len=43 sha=c186413b]",
        "mcp__cloud-associates__execute_workflow",
        "mcp__cloud-associates__execute_workflow",
        "mcp__cloud-associates__execute_workflow",
    ];
    for (i, call) in steps.iter().enumerate() {
        assert_eq!(shape(m[1 + i]), ["thinking", "text", call], "step {i}");
        assert_eq!(m[1 + i].kind, Kind::ToolCall);
    }
    assert_eq!(shape(m[6]), ["thinking", "text"]);
    assert_eq!(m[6].kind, Kind::Text);
    // The whole answer, joined in order, is what one message held before.
    let a = Message {
        parts: m[1..].iter().flat_map(|m| m.parts.clone()).collect(),
        ..m[1].clone()
    };
    assert_eq!(a.parts.len(), 17);
    let calls: Vec<_> = a.tool_calls().collect();
    assert_eq!(calls.len(), 5);
    assert!(calls.iter().all(|c| c.output.is_some() && !c.is_error));
    assert_eq!(calls[0].tool, "mcp");
    assert_eq!(
        calls[0].input,
        json!("[REDACTED_ARGUMENTS len=46 sha=4cb9a2fc]"),
        "non-JSON arguments kept as a string"
    );
    assert_eq!(
        calls[4].output.as_deref(),
        Some("[REDACTED_OUTPUT len=75079 sha=b86c851d]")
    );
    assert_eq!(part_text(&a, 0), "[REDACTED_TEXT len=32 sha=beedaecc]");
    assert_eq!(
        part_text(&a, 16),
        "[REDACTED_MESSAGE len=647 sha=10502814]",
        "the final answer (line 60), once"
    );
    let texts = a
        .parts
        .iter()
        .filter(|p| matches!(p, Part::Text { .. }))
        .count();
    assert_eq!(texts, 6, "5 commentary + 1 final, none duplicated");
    assert!(
        m[1..]
            .iter()
            .all(|s| s.model.as_deref() == Some("gpt-5.3-codex"))
    );
    assert_eq!(
        b.meta.project_dir.as_deref(),
        Some("/redacted/path/ea96e59ed9")
    );
    assert_eq!(b.meta.git_branch.as_deref(), Some("main"));
    assert_eq!(b.meta.agent_version.as_deref(), Some("0.104.0-alpha.1"));
    assert_eq!(b.meta.model.as_deref(), Some("gpt-5.3-codex"));
    assert_eq!(b.meta.started_at, ts("2026-02-23T19:34:26.099Z"), "line 10");
}

#[test]
fn interrupted_turn_is_kept_and_completed_by_a_later_ingest() {
    let Some(data) = bytes(INTERRUPTED) else {
        return;
    };
    let turn = "019c8a70-ebe7-7e83-92b2-f77ddd49c5f9";
    let call_id = "call_UtYwHmwWekzvq83m8Rb9K8jJ";

    // First ingest: the file as it is (19 lines, task_started without task_complete).
    let mut r1 = CodexReader::new();
    let mut b1 = Batch::default();
    for l in lines(&data) {
        r1.line(l, &mut b1);
    }
    r1.finish(&mut b1);
    assert_eq!(b1.stats, stats(19, 15));
    let m = messages(&b1);
    assert_eq!(
        m.iter().map(|m| m.id.clone()).collect::<Vec<_>>(),
        [format!("{turn}:user:0"), format!("{turn}:assistant:0")]
    );
    assert_eq!(shape(m[1]), ["thinking", "text", "exec_command"]);
    let pending = m[1].tool_calls().next().unwrap();
    assert_eq!(
        (pending.id.as_str(), pending.output.as_ref()),
        (call_id, None)
    );

    // The rest of the turn arrives (hand-written, same shapes as the complete fixture).
    let rest = [
        json!({"timestamp": "2026-02-23T12:19:55.000Z", "type": "response_item",
               "payload": {"type": "function_call_output", "call_id": call_id, "output": "Process exited with code 0\nOutput:\nok\n"}}),
        json!({"timestamp": "2026-02-23T12:19:58.000Z", "type": "event_msg",
               "payload": {"type": "agent_message", "message": "All done."}}),
        json!({"timestamp": "2026-02-23T12:19:58.001Z", "type": "response_item",
               "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "All done."}], "phase": "final_answer"}}),
        json!({"timestamp": "2026-02-23T12:19:58.010Z", "type": "event_msg",
               "payload": {"type": "task_complete", "turn_id": turn, "last_agent_message": "All done."}}),
    ]
    .iter()
    .map(|v| format!("{v}\n"))
    .collect::<String>();
    let mut r2 = CodexReader::new();
    r2.restore_state(&r1.save_state().unwrap());
    let mut b2 = Batch::default();
    for l in lines(rest.as_bytes()) {
        r2.line(l, &mut b2);
    }
    r2.finish(&mut b2);
    assert_eq!(
        b2.records[0],
        Record::ToolResult {
            call_id: call_id.into(),
            output: "Process exited with code 0\nOutput:\nok\n".into(),
            is_error: false,
            timestamp: ts("2026-02-23T12:19:55.000Z"),
            exit_code: Some(0),
        }
    );
    // The answer after the call's output is the next message of the turn, after the call.
    assert_eq!(
        messages(&b2)
            .iter()
            .map(|m| m.id.clone())
            .collect::<Vec<_>>(),
        [format!("{turn}:assistant:0.1")]
    );
    assert_eq!(b2.stats, stats(4, 2));

    let mut store = Store::default();
    store.apply(b1);
    store.apply(b2);
    assert!(store.orphans.is_empty());
    assert_eq!(store.messages.len(), 3, "no duplicate message");
    let a = &store.messages[1];
    assert_eq!(shape(a), ["thinking", "text", "exec_command"]);
    assert_eq!(
        a.tool_calls().next().unwrap().output.as_deref(),
        Some("Process exited with code 0\nOutput:\nok\n")
    );
    assert_eq!(shape(&store.messages[2]), ["text"]);
    assert_eq!(part_text(&store.messages[2], 0), "All done.");

    // The same bytes read at once, or split at any line, give the same store.
    let mut all = data.clone();
    all.extend_from_slice(rest.as_bytes());
    assert_eq!(Store::read_in_pieces_with(&make, &lines(&all), &[]), store);
    assert_split_equivalence_with(&make, "interrupted + rest", &all);
}

#[test]
fn shared_rollouts_identify_by_their_session_meta() {
    let Some(dir) = shared() else { return };
    for (name, id) in [
        (INTERRUPTED, "019c8a70-dda7-7f33-98ea-f30553347322"),
        (COMPLETE, "019c8bfe-ec25-79e0-97d7-bda6a9c575ff"),
        (SESSION, "test-session-001"),
    ] {
        assert_eq!(
            codex::identify(&dir.join(name)).unwrap(),
            SessionRef {
                agent: Agent::Codex,
                external_id: id.into(),
                parent_external_id: None,
            },
            "{name}"
        );
    }
}
