//! The VS Code Copilot readers (agent transcript and chat sessions), identity/discovery, paths and
//! hook payloads, over the project's own fixtures in `fixtures/vscode` (see its README.md) and
//! hand-made lines. Expected values are computed by hand from the fixtures.

use crate::common;

use common::{Lcg, Store, assert_split_equivalence_with, lines, messages, part_text, shape};
use memtrail_adapters::vscode::{
    self, ChatSessionReader, VscodeReader, parse_hook_payload, tool_vocabulary,
    transcripts_for_event_in, workspace_folder,
};
use memtrail_adapters::{
    Agent, Batch, DocReader, Env, Kind, LineReader, Message, ParseStats, Part, Record, Role,
    SessionRef, Source, ToolCall, parse_rfc3339_ms,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/vscode")
}

fn grow(n: u8) -> Vec<u8> {
    std::fs::read(fixtures().join(format!("grow-turn{n}.jsonl"))).expect("grow fixture")
}

fn make() -> Box<dyn LineReader> {
    Box::new(VscodeReader::new())
}

fn read_with(mut reader: VscodeReader, lines: &[&[u8]]) -> (Batch, VscodeReader) {
    let mut batch = Batch::default();
    for l in lines {
        reader.line(l, &mut batch);
    }
    reader.finish(&mut batch);
    (batch, reader)
}

fn read(lines: &[&[u8]]) -> Batch {
    read_with(VscodeReader::new(), lines).0
}

fn read_doc(bytes: &[u8]) -> Batch {
    let mut batch = Batch::default();
    ChatSessionReader::new().read(bytes, &mut batch);
    batch
}

fn ids(batch: &Batch) -> Vec<&str> {
    messages(batch).iter().map(|m| m.id.as_str()).collect()
}

fn stats(lines: u64, known: u64, unknown: u64, malformed: u64) -> ParseStats {
    ParseStats {
        lines,
        skipped_known: known,
        skipped_unknown: unknown,
        malformed,
    }
}

fn ts(s: &str) -> Option<i64> {
    Some(parse_rfc3339_ms(s).expect("valid timestamp"))
}

/// A hook process's environment with no variable set.
fn no_env() -> memtrail_adapters::Env {
    memtrail_adapters::Env::sandbox("/")
}

fn call(m: &Message, i: usize) -> &ToolCall {
    m.tool_calls().nth(i).expect("tool call")
}

const P1: &str = "このリポジトリのテストを実行してください 🧪";
const AR1: &str = "ترجم الملف README إلى العربية من فضلك";
const RU3: &str = "Покажи git diff, пожалуйста 🙏";
const TURN1_IDS: [&str; 6] = [
    "8e082277-f288-5fb1-a0db-4f5619732201",
    "b4811747-3ab9-5c77-8735-913406a2e2ee",
    "9a2cb83c-606c-5c3d-a11e-2188615b39c6",
    "12c45178-6f8a-57b6-a275-2dae88280e29",
    "1806af7e-9432-5d2f-8b9b-5fbc337eeb34",
    "35263cca-7a79-5d3a-895f-6feb9e7392ab",
];
const TURN2_IDS: [&str; 3] = [
    "d74326bf-5f3f-5e50-b225-b280482b77d7",
    "9628e7b2-4a55-5024-b91d-dda5f6ae0acb",
    "41783682-a274-5f7e-8ad7-ef5fd198b887",
];
const TURN3_IDS: [&str; 3] = [
    "0ebaf210-9bef-584c-9b24-2458dbfb9124",
    "49fedebe-face-5957-bede-fb713be6b4bf",
    "bf1d8e8f-52ab-54d0-a9d5-105ea3c48395",
];

// ---- agent transcript ----

#[test]
fn grow_files_are_byte_prefixes() {
    let (a, b, c) = (grow(1), grow(2), grow(3));
    assert!(b.starts_with(&a) && c.starts_with(&b));
    assert_eq!((a.len(), b.len(), c.len()), (7483, 10156, 13277));
    assert_eq!(
        (lines(&a).len(), lines(&b).len(), lines(&c).len()),
        (26, 37, 48)
    );
}

#[test]
fn split_at_every_line_equals_one_pass_for_the_grow_fixtures() {
    for n in 1..=3 {
        assert_split_equivalence_with(&make, &format!("grow-turn{n}"), &grow(n));
    }
}

#[test]
fn grow_session_turn_by_turn_with_saved_state_gives_exactly_the_new_messages() {
    let (a, b, c) = (grow(1), grow(2), grow(3));
    let pieces = [&a[..], &b[a.len()..], &c[b.len()..]];
    let expected: [&[&str]; 3] = [&TURN1_IDS, &TURN2_IDS, &TURN3_IDS];
    let expected_stats = [stats(26, 16, 0, 0), stats(11, 5, 1, 1), stats(11, 6, 0, 0)];
    let mut store = Store::default();
    let mut state: Option<Value> = None;
    for (turn, piece) in pieces.iter().enumerate() {
        let mut reader = VscodeReader::new();
        if let Some(s) = &state {
            reader.restore_state(s);
        }
        let (batch, reader) = read_with(reader, &lines(piece));
        assert_eq!(ids(&batch), expected[turn], "turn {}", turn + 1);
        assert_eq!(batch.stats, expected_stats[turn], "turn {}", turn + 1);
        assert!(
            batch
                .records
                .iter()
                .all(|r| matches!(r, Record::Message(_))),
            "turn {}: every result is attached inside its turn",
            turn + 1
        );
        state = reader.save_state();
        store.apply(batch);
    }
    // Every call was answered: nothing open or pending is carried forward.
    assert_eq!(
        state,
        Some(json!({"line": 48, "project_dir": "/home/user/demo"}))
    );
    assert_eq!(store, Store::read_in_pieces_with(&make, &lines(&c), &[]));
    assert_eq!(store.messages.len(), 12);
    assert_eq!(store.stats, stats(48, 27, 1, 1));
}

#[test]
fn grow_turn1_messages_tool_failure_and_meta() {
    let b = read(&lines(&grow(1)));
    let ms = messages(&b);
    assert_eq!(ids(&b), TURN1_IDS);
    assert_eq!(ms[0].role, Role::User);
    assert_eq!(ms[0].parts, [Part::Text { text: P1.into() }]);
    assert_eq!(ms[0].timestamp, ts("2026-03-02T09:00:00.200Z"));

    assert_eq!(shape(ms[1]), ["thinking", "text", "read_file"]);
    assert_eq!(
        part_text(ms[1], 0),
        "The user asks (in Japanese) to run the tests. I'll look at the entry point first."
    );
    assert_eq!(part_text(ms[1], 1), "まずプロジェクトを確認します。");
    assert_eq!(ms[1].timestamp, ts("2026-03-02T09:00:02.000Z"));
    assert_eq!(
        ms[1].model, None,
        "VS Code transcripts name no model per message"
    );
    let failed = call(ms[1], 0);
    assert_eq!(
        (failed.id.as_str(), failed.tool.as_str()),
        ("call_T1a", "read")
    );
    assert_eq!(
        failed.input,
        json!({"filePath": "/home/user/demo/src/main.rs", "startLine": 1, "endLine": 50}),
        "the JSON-string arguments are parsed"
    );
    assert!(failed.is_error, "success: false");
    assert_eq!(
        failed.output.as_deref(),
        Some("Error: Unable to read file '/home/user/demo/src/main.rs': file does not exist")
    );

    let term = call(ms[2], 0);
    assert_eq!(
        (term.name.as_str(), term.tool.as_str()),
        ("run_in_terminal", "shell")
    );
    assert_eq!(term.input["command"], "cargo test");
    assert!(
        !term.is_error,
        "the tool ran; the compile error is its output"
    );
    assert!(term.output.as_deref().unwrap().starts_with("error[E0425]"));

    assert_eq!(shape(ms[3]), ["text", "replace_string_in_file"]);
    assert_eq!(
        part_text(ms[3], 0),
        "Компиляция не удалась: переменная `x` не определена. Исправляю."
    );
    assert_eq!(call(ms[3], 0).tool, "edit");
    assert_eq!(
        shape(ms[4]),
        ["run_in_terminal"],
        "an empty content adds no text"
    );
    assert_eq!(
        call(ms[4], 0).output.as_deref(),
        Some("running 3 tests\ntest result: ok. 3 passed; 0 failed")
    );
    assert_eq!(
        ms[5].parts,
        [Part::Text {
            text: "すべてのテストが通りました ✅ (3 passed)".into()
        }]
    );
    assert_eq!(ms[5].kind, Kind::Text);

    let meta = &b.meta;
    assert_eq!(meta.title.as_deref(), Some(P1));
    assert_eq!(meta.agent_version.as_deref(), Some("0.37.8"));
    assert_eq!(meta.project_dir.as_deref(), Some("/home/user/demo"));
    assert_eq!(meta.model.as_deref(), Some("gpt-5"), "from assistant.usage");
    assert_eq!(meta.started_at, ts("2026-03-02T09:00:00.000Z"));
    assert_eq!(meta.updated_at, ts("2026-03-02T09:00:17.000Z"));
}

#[test]
fn grow_turn2_result_without_content_unknown_and_malformed() {
    let (a, b) = (grow(1), grow(2));
    let mut reader = VscodeReader::new();
    reader.restore_state(&json!({"line": 26}));
    let (batch, _) = read_with(reader, &lines(&b[a.len()..]));
    assert_eq!(batch.stats, stats(11, 5, 1, 1));
    let ms = messages(&batch);
    assert_eq!(ms[0].parts, [Part::Text { text: AR1.into() }]);
    let create = call(ms[1], 0);
    assert_eq!(
        (create.name.as_str(), create.tool.as_str()),
        ("create_file", "write")
    );
    assert_eq!(
        create.input["content"],
        "# عرض توضيحي\n\nمشروع صغير للاختبار.\n"
    );
    assert_eq!(
        create.output.as_deref(),
        Some(""),
        "success without a result"
    );
    assert!(!create.is_error);
    assert_eq!(
        part_text(ms[2], 0),
        "Готово! README переведён на арабский. 🎉"
    );
    assert_eq!(batch.meta.title.as_deref(), Some(AR1));
    assert_eq!(batch.meta.started_at, ts("2026-03-02T09:05:00.000Z"));
    assert_eq!(batch.meta.updated_at, ts("2026-03-02T09:05:06.000Z"));
}

#[test]
fn grow_turn3_parallel_calls_answered_out_of_order() {
    let (b, c) = (grow(2), grow(3));
    let mut reader = VscodeReader::new();
    reader.restore_state(&json!({"line": 37}));
    let (batch, _) = read_with(reader, &lines(&c[b.len()..]));
    let ms = messages(&batch);
    assert_eq!(ms[0].parts, [Part::Text { text: RU3.into() }]);
    assert_eq!(shape(ms[1]), ["run_in_terminal", "run_in_terminal"]);
    assert_eq!(
        (call(ms[1], 0).id.as_str(), call(ms[1], 0).output.as_deref()),
        (
            "call_T3a",
            Some(" src/lib.rs | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)")
        )
    );
    assert_eq!(
        (call(ms[1], 1).id.as_str(), call(ms[1], 1).output.as_deref()),
        ("call_T3b", Some(" M src/lib.rs\n?? README.ar.md"))
    );
    assert_eq!(
        part_text(ms[2], 0),
        "差分: src/lib.rs の1行だけ変更 (x → n)、README.ar.md は新規です 👍"
    );
}

#[test]
fn result_in_a_later_ingest_is_a_tool_result_record() {
    // The assistant.message requesting call_T1b is line 9; its result is line 11.
    let bytes = grow(1);
    let ls = lines(&bytes);
    let (first, reader) = read_with(VscodeReader::new(), &ls[..9]);
    assert_eq!(
        reader.save_state(),
        Some(json!({"line": 9, "project_dir": "/home/user/demo", "open": ["call_T1b"]}))
    );
    let mut next = VscodeReader::new();
    next.restore_state(&reader.save_state().unwrap());
    let (second, _) = read_with(next, &ls[9..]);
    assert_eq!(
        second.records[0],
        Record::ToolResult {
            call_id: "call_T1b".into(),
            output: "error[E0425]: cannot find value `x` in this scope\n --> src/lib.rs:3:5\n\nerror: could not compile `demo` (lib) due to 1 previous error".into(),
            is_error: false,
            timestamp: ts("2026-03-02T09:00:09.800Z"),
            exit_code: None,
        }
    );
    let mut store = Store::default();
    store.apply(first);
    store.apply(second);
    assert_eq!(store, Store::read_in_pieces_with(&make, &ls, &[]));
}

fn ev(kind: &str, id: &str, data: Value) -> String {
    json!({"type": kind, "id": id, "timestamp": "2026-01-01T00:00:00.000Z", "data": data})
        .to_string()
}

#[test]
fn results_before_their_request_are_held_then_attached_or_flushed() {
    let l = [
        ev(
            "tool.execution_start",
            "e1",
            json!({"toolCallId": "c1", "toolName": "readFile", "arguments": {"path": "a"}}),
        ),
        ev(
            "tool.execution_complete",
            "e2",
            json!({"toolCallId": "c1", "success": true, "result": "A"}),
        ),
        ev(
            "tool.execution_start",
            "e3",
            json!({"toolCallId": "c2", "toolName": "listDir", "arguments": {"path": "."}}),
        ),
        ev(
            "tool.execution_complete",
            "e4",
            json!({"toolCallId": "c2", "success": false, "error": {"message": "denied", "code": "denied"}}),
        ),
        ev(
            "tool.execution_complete",
            "e5",
            json!({"toolCallId": "c3", "success": true, "result": {"content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]}}),
        ),
        ev(
            "assistant.message",
            "e6",
            json!({"content": "done", "toolRequests": [{"toolCallId": "c1", "toolName": "readFile"}]}),
        ),
        ev("assistant.turn_end", "e7", json!({"turnId": "0"})),
    ];
    let ls: Vec<&[u8]> = l.iter().map(|s| s.as_bytes()).collect();
    let b = read(&ls);
    // c1: attached to the request that came later, input taken from its start.
    let m = messages(&b)[0];
    assert_eq!(m.id, "e6");
    let c1 = call(m, 0);
    assert_eq!(
        (c1.output.as_deref(), c1.input.clone()),
        (Some("A"), json!({"path": "a"}))
    );
    // c2 (start, no request): a message of its own at turn end; c3 (no start): a result record.
    assert_eq!(b.records.len(), 3);
    let Record::Message(orphan) = &b.records[1] else {
        panic!("{:?}", b.records[1])
    };
    assert_eq!(orphan.id, "c2:call");
    let c2 = call(orphan, 0);
    assert_eq!(
        (
            c2.name.as_str(),
            c2.tool.as_str(),
            c2.output.as_deref(),
            c2.is_error
        ),
        ("listDir", "list", Some("denied"), true)
    );
    assert_eq!(
        b.records[2],
        Record::ToolResult {
            call_id: "c3".into(),
            output: "x\ny".into(),
            is_error: false,
            timestamp: ts("2026-01-01T00:00:00Z"),
            exit_code: None,
        }
    );
    // The same in every split: held results travel in the reader state. (c3's result has no
    // call anywhere, so the store keeps it as an orphan: compare stores directly.)
    let whole = Store::read_in_pieces_with(&make, &ls, &[]);
    assert_eq!(
        whole.orphans,
        [("c3".to_string(), "x\ny".to_string(), false)]
    );
    for cut in 0..=ls.len() {
        assert_eq!(
            Store::read_in_pieces_with(&make, &ls, &[cut]),
            whole,
            "cut {cut}"
        );
    }
    let every: Vec<usize> = (1..ls.len()).collect();
    assert_eq!(Store::read_in_pieces_with(&make, &ls, &every), whole);
    let (_, r) = read_with(VscodeReader::new(), &ls[..5]);
    let state = r.save_state().unwrap();
    assert_eq!(state["pending"].as_array().unwrap().len(), 3);
    assert_eq!(state["starts"].as_array().unwrap().len(), 2);
}

#[test]
fn models_from_session_start_and_model_change() {
    let l = [
        ev(
            "session.start",
            "s",
            json!({"sessionId": "x", "selectedModel": "claude-sonnet-4.5", "copilotVersion": "0.0.409"}),
        ),
        ev(
            "assistant.message",
            "a1",
            json!({"content": "one", "toolRequests": []}),
        ),
        ev("session.model_change", "mc", json!({"newModel": "gpt-5"})),
        ev("assistant.message", "a2", json!({"content": "two"})),
        ev(
            "assistant.message",
            "a3",
            json!({"content": "three", "model": "o3"}),
        ),
        ev("assistant.usage", "u", json!({"model": "gpt-5-mini"})),
    ];
    let ls: Vec<&[u8]> = l.iter().map(|s| s.as_bytes()).collect();
    let b = read(&ls);
    let models: Vec<Option<&str>> = messages(&b).iter().map(|m| m.model.as_deref()).collect();
    assert_eq!(
        models,
        [Some("claude-sonnet-4.5"), Some("gpt-5"), Some("o3")]
    );
    assert_eq!(b.meta.model.as_deref(), Some("gpt-5-mini"));
    assert_eq!(b.meta.agent_version.as_deref(), Some("0.0.409"));
    let bytes = l.join("\n") + "\n";
    assert_split_equivalence_with(&make, "models", bytes.as_bytes());
}

#[test]
fn stats_for_each_event_kind() {
    let cases: Vec<(String, ParseStats, usize)> = vec![
        (
            ev(
                "user.message",
                "u",
                json!({"content": "<user_query>\nhi\n</user_query>"}),
            ),
            stats(1, 0, 0, 0),
            1,
        ),
        (
            ev("user.message", "u", json!({"content": "  "})),
            stats(1, 1, 0, 0),
            0,
        ),
        (
            ev("user.message", "u", json!({"content": 5})),
            stats(1, 1, 0, 0),
            0,
        ),
        (
            ev(
                "assistant.message",
                "a",
                json!({"content": "", "toolRequests": []}),
            ),
            stats(1, 1, 0, 0),
            0,
        ),
        (
            ev("tool.execution_complete", "c", json!({"success": true})),
            stats(1, 1, 0, 0),
            0,
        ),
        (
            ev("assistant.turn_start", "t", json!({"turnId": "0"})),
            stats(1, 1, 0, 0),
            0,
        ),
        (
            ev("session.shutdown", "t", json!({"shutdownType": "routine"})),
            stats(1, 1, 0, 0),
            0,
        ),
        (
            ev("assistant.reasoning", "t", json!({"content": "…"})),
            stats(1, 1, 0, 0),
            0,
        ),
        (ev("brand.new", "n", json!({})), stats(1, 0, 1, 0), 0),
        ("{}".to_string(), stats(1, 0, 1, 0), 0),
        ("[]".to_string(), stats(1, 0, 0, 1), 0),
        ("{\"type\":".to_string(), stats(1, 0, 0, 1), 0),
        ("\t ".to_string(), stats(1, 1, 0, 0), 0),
    ];
    for (line, want, n) in cases {
        let b = read(&[line.as_bytes()]);
        assert_eq!(b.stats, want, "{line}");
        assert_eq!(messages(&b).len(), n, "{line}");
    }
    let b = read(&[ev(
        "user.message",
        "u",
        json!({"content": "<user_query>\nhi\n</user_query>"}),
    )
    .as_bytes()]);
    assert_eq!(messages(&b)[0].parts, [Part::Text { text: "hi".into() }]);
    // Events without an id are numbered by line; a toolRequest without id gets `<msg>-<k>`.
    let (b, r) = read_with(
        VscodeReader::new(),
        &[
            b"  ",
            b"x",
            br#"{"type":"assistant.message","data":{"content":"a","toolRequests":[{"name":"t","arguments":"not json"},5]}}"#,
        ],
    );
    let m = messages(&b)[0];
    assert_eq!(m.id, "line-1");
    assert_eq!(
        (call(m, 0).id.as_str(), call(m, 0).input.clone()),
        ("line-1-0", json!("not json"))
    );
    assert_eq!(
        r.save_state(),
        Some(json!({"line": 2, "open": ["line-1-0"]}))
    );
}

#[test]
fn restore_state_is_lenient() {
    for s in [
        json!(null),
        json!([1]),
        json!({"line": "x", "open": 5, "pending": [1, {"id": 2}], "starts": "no"}),
    ] {
        let mut r = VscodeReader::new();
        r.restore_state(&s);
        assert_eq!(r.save_state(), Some(json!({"line": 0})), "{s}");
    }
}

#[test]
fn random_bytes_and_mutated_lines_never_panic() {
    let mut rng = Lcg(0x7C0DE);
    let mut reader = VscodeReader::new();
    let mut batch = Batch::default();
    let mut n = 0u64;
    for _ in 0..2000 {
        let len = (rng.next() % 200) as usize;
        let line: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        reader.line(&line, &mut batch);
        n += 1;
    }
    let bytes = grow(3);
    let noise: [&[u8]; 8] = [
        b"{",
        b"}",
        b"[",
        b"\"",
        b"null",
        b"\\u",
        b"\xff",
        b"\xe3\x81",
    ];
    for line in lines(&bytes) {
        for _ in 0..40 {
            let mut l = line.to_vec();
            match rng.next() % 3 {
                0 => {
                    let i = (rng.next() as usize) % l.len();
                    l[i] = rng.next() as u8;
                }
                1 => l.truncate((rng.next() as usize) % l.len()),
                _ => {
                    let i = (rng.next() as usize) % l.len();
                    let piece = noise[(rng.next() as usize) % noise.len()];
                    l.splice(i..i, piece.iter().copied());
                }
            }
            reader.line(&l, &mut batch);
            n += 1;
            if rng.next().is_multiple_of(30) {
                reader.finish(&mut batch);
            }
        }
    }
    reader.finish(&mut batch);
    assert_eq!(batch.stats.lines, n);
    assert!(batch.stats.malformed > 0);
    // The state stays bounded however many calls stay open.
    let mut r = VscodeReader::new();
    let mut b = Batch::default();
    for i in 0..2000 {
        let l = ev(
            "assistant.message",
            &format!("m{i}"),
            json!({"toolRequests": [{"toolCallId": format!("c{i}"), "name": "t"}]}),
        );
        r.line(l.as_bytes(), &mut b);
        let l = ev(
            "tool.execution_complete",
            &format!("r{i}"),
            json!({"toolCallId": format!("x{i}"), "result": "o"}),
        );
        r.line(l.as_bytes(), &mut b);
    }
    let s = r.save_state().unwrap();
    assert_eq!(s["open"].as_array().unwrap().len(), 512);
    assert!(s["pending"].as_array().unwrap().len() <= 64);
}

#[test]
fn weird_types_inside_valid_json_never_panic() {
    for line in [
        r#"{"type":5,"data":[],"id":{},"timestamp":7}"#,
        r#"{"type":"assistant.message","data":{"content":7,"toolRequests":{"a":1},"reasoningText":[]}}"#,
        r#"{"type":"assistant.message","data":{"toolRequests":[null,1,"x",{"toolCallId":5,"name":[],"arguments":{}}]}}"#,
        r#"{"type":"tool.execution_complete","data":{"toolCallId":"c","success":"no","result":[1,{"value":2}],"error":false}}"#,
        r#"{"type":"tool.execution_start","data":{"toolCallId":[],"toolName":5}}"#,
        r#"{"type":"session.start","data":{"context":"cwd","copilotVersion":1,"startTime":"never"}}"#,
        r#"{"type":"user.message","data":null}"#,
        r#"{"type":"assistant.message"}"#,
    ] {
        assert_eq!(read(&[line.as_bytes()]).stats.lines, 1, "{line}");
    }
}

// ---- chat sessions ----

#[test]
fn chat_session_json_requests_responses_and_tools() {
    let bytes = std::fs::read(fixtures().join("chat-session.json")).unwrap();
    let mut b = Batch::default();
    ChatSessionReader::with_project_dir(Some("/home/user/demo".into())).read(&bytes, &mut b);
    assert_eq!(
        b.stats,
        stats(4, 1, 1, 0),
        "4 requests, 1 removed, 1 unknown part kind"
    );
    assert_eq!(
        ids(&b),
        [
            "request_5c0f3a1e-8d2b-4f6a-9e1c-2b7d4a6f8e01",
            "response_2a9b8c7d-6e5f-4a3b-9c8d-7e6f5a4b3c2d",
            "request_7b3e9f2a-1c4d-4e5b-8a6f-0d9c8b7a6e52",
            "response_4c5d6e7f-8091-4a2b-b3c4-d5e6f7a8b9c0",
            "request_9e8d7c6b-5a4f-4e3d-9c2b-1a0f9e8d7c63",
            "response_6f7a8b9c-0d1e-4f2a-8b3c-4d5e6f7a8b9d",
        ]
    );
    let ms = messages(&b);
    assert_eq!(
        ms[0].parts,
        [Part::Text {
            text: "What does `parse_config` do? 🤔".into()
        }]
    );
    assert_eq!(ms[0].timestamp, Some(1_772_632_800_000));

    // Markdown pieces and the inline reference joined; split by the tool call.
    assert_eq!(
        shape(ms[1]),
        ["text", "copilot_readFile", "thinking", "text"]
    );
    assert_eq!(part_text(ms[1], 0), "Let me look at config.rs first.");
    let read_file = call(ms[1], 0);
    assert_eq!(
        (
            read_file.id.as_str(),
            read_file.tool.as_str(),
            &read_file.input,
            &read_file.output,
            read_file.is_error
        ),
        (
            "8f1e2d3c-4b5a-4968-8776-5a4b3c2d1e0f",
            "read",
            &Value::Null,
            &None,
            false
        )
    );
    assert_eq!(
        part_text(ms[1], 2),
        "It reads demo.toml and falls back to defaults."
    );
    assert_eq!(
        part_text(ms[1], 3),
        "`parse_config` reads `demo.toml`, fills in defaults and returns a `Config`. Выглядит корректно ✅"
    );
    assert_eq!(
        ms[1].timestamp,
        Some(1_772_632_805_400),
        "modelState.completedAt"
    );
    assert_eq!(ms[1].model.as_deref(), Some("copilot/gpt-4.1"));

    let term = call(ms[3], 0);
    assert_eq!(
        (term.tool.as_str(), &term.input),
        ("shell", &json!({"command": "cargo test"}))
    );
    assert_eq!(
        term.output.as_deref(),
        Some("error[E0425]: cannot find value `x` in this scope\n --> src/lib.rs:3:5")
    );
    assert!(term.is_error, "exit code 101");
    assert_eq!(
        part_text(ms[3], 1),
        "Les tests échouent : `x` n'est pas défini dans `src/lib.rs` (ligne 3)."
    );
    assert_eq!(
        ms[3].timestamp,
        Some(1_772_632_920_000 + 7300),
        "request time + totalElapsed"
    );

    let mcp = call(ms[5], 0);
    assert_eq!(
        (
            mcp.name.as_str(),
            mcp.tool.as_str(),
            mcp.is_error,
            &mcp.output
        ),
        ("mcp_github_create_issue", "mcp", true, &None),
        "a denied confirmation is an error"
    );
    assert_eq!(mcp.input["title"], "Test fails: x is not defined");

    let meta = &b.meta;
    assert_eq!(
        meta.title.as_deref(),
        Some("parse_config and failing tests")
    );
    assert_eq!(meta.started_at, Some(1_772_632_770_000));
    assert_eq!(meta.updated_at, Some(1_772_633_160_000), "lastMessageDate");
    assert_eq!(meta.model.as_deref(), Some("copilot/gpt-4.1"));
    assert_eq!(meta.project_dir.as_deref(), Some("/home/user/demo"));
}

/// Issue 11 item 14: in current `chatSessions` files a tool-invocation part has neither input
/// nor output; they are in the request's `result.metadata`: the model's calls in
/// `toolCallRounds[].toolCalls[]` (`{name, arguments, id}`, ids other than the parts'
/// `toolCallId`) and their results in `toolCallResults[<call id>]`, a prompt-tsx tree whose text
/// leaves hold the output, or text parts. Calls and parts are matched within the request by name
/// (the part's `toolId` and the call's `name` are the same tool), then order.
#[test]
fn chat_session_tool_inputs_and_outputs_come_from_the_request_metadata() {
    let part = |id: &str, tool: &str| {
        json!({"kind": "toolInvocationSerialized",
               "invocationMessage": {"value": "Working", "uris": {}},
               "isConfirmed": {"type": 1}, "isComplete": true,
               "source": {"type": "internal", "label": "Built-In"},
               "toolCallId": id, "toolId": tool})
    };
    let tsx_leaf = |text: &str, br: bool| json!({"type": 2, "priority": 9007199254740991_i64, "text": text, "lineBreakBefore": br});
    let doc = json!({
        "version": 3, "sessionId": "s-meta", "creationDate": 1772632770000_i64,
        "requests": [{
            "requestId": "request_m1",
            "message": {"text": "Rename parse_config to load_config", "parts": []},
            "response": [
                {"value": "Reading the file first."},
                part("5f0a9b1c-0000-4000-8000-000000000001", "copilot_readFile"),
                part("5f0a9b1c-0000-4000-8000-000000000002", "copilot_replaceString"),
                {"value": "Renamed."}
            ],
            "responseId": "response_m1",
            "result": {"timings": {"totalElapsed": 4000}, "metadata": {
                "toolCallRounds": [
                    {"response": "Reading the file first.", "id": "round_1",
                     "toolCalls": [{"name": "read_file", "id": "toolu_vrtx_01Read",
                                    "arguments": "{\"filePath\":\"/home/user/demo/src/config.rs\",\"startLine\":1,\"endLine\":40}"}]},
                    {"response": "", "id": "round_2",
                     "toolCalls": [{"name": "replace_string_in_file", "id": "toolu_vrtx_02Edit",
                                    "arguments": "{\"filePath\":\"/home/user/demo/src/config.rs\",\"oldString\":\"fn parse_config\",\"newString\":\"fn load_config\"}"}]},
                    {"response": "Renamed.", "id": "round_3", "toolCalls": []}
                ],
                "toolCallResults": {
                    "toolu_vrtx_01Read": {"$mid": 20, "content": [{"$mid": 23, "value": {"node": {
                        "type": 1, "ctor": 2, "ctorName": "ReadFileResult", "props": {},
                        "children": [
                            tsx_leaf("File: `/home/user/demo/src/config.rs`. Lines 1 to 40 (40 lines total):", false),
                            {"type": 1, "ctor": 2, "ctorName": "CodeBlock", "props": {}, "children": [
                                tsx_leaf("```rust", true),
                                tsx_leaf("pub fn parse_config() -> Config {", true),
                                tsx_leaf("```", true)
                            ]}
                        ]}}}]},
                    "toolu_vrtx_02Edit": {"$mid": 20, "content": [{"$mid": 21,
                        "value": "The following files were successfully edited:\n/home/user/demo/src/config.rs"}]}
                }
            }},
            "timestamp": 1772632800000_i64,
            "modelId": "copilot/claude-sonnet-4"
        }]
    });
    let mut b = Batch::default();
    ChatSessionReader::with_project_dir(Some("/home/user/demo".into()))
        .read(&serde_json::to_vec(&doc).unwrap(), &mut b);
    let m = messages(&b);
    assert_eq!(m.len(), 2);
    let calls: Vec<&ToolCall> = m[1].tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].id, "5f0a9b1c-0000-4000-8000-000000000001");
    assert_eq!(calls[0].tool, "read");
    assert_eq!(
        calls[0].input,
        json!({"filePath": "/home/user/demo/src/config.rs", "startLine": 1, "endLine": 40})
    );
    assert_eq!(
        calls[0].output.as_deref(),
        Some(
            "File: `/home/user/demo/src/config.rs`. Lines 1 to 40 (40 lines total):\n```rust\npub fn parse_config() -> Config {\n```"
        )
    );
    assert_eq!(calls[1].tool, "edit");
    assert_eq!(
        calls[1].input,
        json!({"filePath": "/home/user/demo/src/config.rs", "oldString": "fn parse_config", "newString": "fn load_config"})
    );
    assert_eq!(
        calls[1].output.as_deref(),
        Some("The following files were successfully edited:\n/home/user/demo/src/config.rs")
    );
    assert_eq!(
        shape(m[1]),
        ["text", "copilot_readFile", "copilot_replaceString", "text"]
    );
}

#[test]
fn chat_session_journal_is_replayed() {
    let bytes = std::fs::read(fixtures().join("chat-session-journal.jsonl")).unwrap();
    let b = read_doc(&bytes);
    assert_eq!(
        b.stats,
        stats(10, 0, 0, 0),
        "8 journal entries + 2 requests"
    );
    assert_eq!(
        ids(&b),
        ["request_j1", "response_j1", "request_j2", "response_j2"]
    );
    let ms = messages(&b);
    assert_eq!(
        part_text(ms[1], 0),
        "It matches one or more `a`, and nothing else."
    );
    assert_eq!(ms[1].timestamp, Some(1_772_697_612_500));
    assert_eq!(part_text(ms[3], 0), "You're welcome 😊");
    assert_eq!(ms[3].model.as_deref(), Some("copilot/claude-sonnet-4"));
    // customTitle was deleted by the last entry: the first prompt is the title.
    assert_eq!(b.meta.title.as_deref(), Some("Explain this regex: ^a+$"));
    assert_eq!(b.meta.started_at, Some(1_772_697_600_000));
    assert_eq!(b.meta.updated_at, Some(1_772_697_660_900));
}

#[test]
fn journal_edge_cases_are_counted() {
    let j = |entries: &[&str]| read_doc((entries.join("\n") + "\n").as_bytes());
    let init = r#"{"kind":0,"v":{"requests":[{"requestId":"r","message":"old string message","response":[{"value":"a"}]}]}}"#;
    let b = j(&[
        init,
        r#"{"kind":1,"k":["requests",0,"response",1],"v":{"value":"b"}}"#,
        r#"{"kind":1,"k":["requests",0,"response",5],"v":{"value":"c"}}"#,
        r#"{"kind":1,"k":["nope","x"],"v":1}"#,
        r#"{"kind":2,"k":["requests",0,"message"],"v":[1]}"#,
        r#"{"kind":3,"k":[]}"#,
        r#"{"kind":7,"k":["x"]}"#,
        r#"{"kind":1,"k":["requests",0,"#,
        "[1,2]",
    ]);
    // 9 entries (1 unknown kind, 6 malformed) + 1 request.
    assert_eq!(b.stats, stats(10, 0, 1, 6));
    let ms = messages(&b);
    assert_eq!(part_text(ms[0], 0), "old string message");
    assert_eq!(part_text(ms[1], 0), "ab", "set at index == len appends");
    assert_eq!(ms[1].id, "r:response");
    // Push with `i` truncates first; without an initial entry nothing is a session.
    let b = j(&[
        r#"{"kind":0,"v":{"requests":[{"requestId":"r1","message":{"text":"one"}},{"requestId":"r2","message":{"text":"two"}}]}}"#,
        r#"{"kind":2,"k":["requests"],"i":1,"v":[{"requestId":"r3","message":{"text":"three"}}]}"#,
    ]);
    assert_eq!(ids(&b), ["r1", "r3"]);
    let b = j(&[r#"{"kind":1,"k":["a"],"v":1}"#]);
    assert_eq!(b.stats, stats(2, 0, 0, 2));
    assert!(b.records.is_empty());
}

#[test]
fn chat_session_odd_documents_never_panic() {
    for doc in [
        &b""[..],
        b"[]",
        b"null",
        b"{\"requests\":5}",
        b"{\"requests\":[1,null,{\"message\":7,\"response\":\"x\"},{\"response\":[1,{\"kind\":5},{\"kind\":\"thinking\",\"value\":[\"a\",\"b\"]}]}]}",
        b"{\"requests\":[{\"message\":{\"text\":\"hi\"},\"response\":[{\"kind\":\"toolInvocationSerialized\",\"toolSpecificData\":{\"kind\":\"terminal\",\"command\":\"ls\"},\"resultDetails\":{\"input\":\"{\\\"a\\\":1}\",\"output\":[{\"type\":\"embed\",\"isText\":true,\"value\":\"o\"},{\"type\":\"embed\",\"value\":\"AAAA\",\"isText\":false}],\"isError\":true}}],\"result\":{\"errorDetails\":{\"message\":\"Rate limited\"}}}]}",
        b"\xff\xfe{",
    ] {
        let b = read_doc(doc);
        assert!(b.stats.lines >= 1, "{:?}", String::from_utf8_lossy(doc));
    }
    let b = read_doc(br#"{"requests":[1,null,{"message":7,"response":"x"},{"response":[1,{"kind":5},{"kind":"thinking","value":["a","b"]}]}]}"#);
    assert_eq!(b.stats, stats(4, 1, 2, 2));
    assert_eq!(
        messages(&b)[0].parts,
        [Part::Thinking { text: "ab".into() }]
    );
    let b = read_doc(br#"{"requests":[{"message":{"text":"hi"},"response":[{"kind":"toolInvocationSerialized","toolSpecificData":{"kind":"terminal","command":"ls"},"resultDetails":{"input":"{\"a\":1}","output":[{"type":"embed","isText":true,"value":"o"},{"type":"embed","value":"AAAA","isText":false}],"isError":true}}],"result":{"errorDetails":{"message":"Rate limited"}}}]}"#);
    let m = messages(&b)[1];
    assert_eq!(m.id, "request-0:response");
    let c = call(m, 0);
    assert_eq!(
        (&c.input, c.output.as_deref(), c.is_error, c.id.as_str()),
        (
            &json!({"command": "ls"}),
            Some("o"),
            true,
            "request-0:response-0"
        )
    );
    assert_eq!(part_text(m, 1), "Error: Rate limited");
    let mut rng = Lcg(0xD0C);
    let json = std::fs::read(fixtures().join("chat-session.json")).unwrap();
    for _ in 0..300 {
        let mut d = json.clone();
        let i = (rng.next() as usize) % d.len();
        d[i] = rng.next() as u8;
        d.truncate(d.len() - (rng.next() as usize) % 50);
        read_doc(&d);
    }
}

#[test]
fn tool_names_in_the_common_vocabulary() {
    for (name, tool) in [
        ("read_file", "read"),
        ("copilot_readFile", "read"),
        ("replace_string_in_file", "edit"),
        ("multi_replace_string_in_file", "edit"),
        ("copilot_replaceString", "edit"),
        ("editFiles", "edit"),
        ("apply_patch", "edit"),
        ("create_file", "write"),
        ("run_in_terminal", "shell"),
        ("runTerminalCommand", "shell"),
        ("grep_search", "search"),
        ("copilot_findTextInFiles", "search"),
        ("file_search", "list"),
        ("list_dir", "list"),
        ("fetch_webpage", "web_fetch"),
        ("runSubagent", "subagent"),
        ("manage_todo_list", "todo"),
        ("mcp_github_create_issue", "mcp"),
        ("somethingNew", "somethingNew"),
    ] {
        assert_eq!(tool_vocabulary(name), tool, "{name}");
    }
}

// ---- paths, identity, discovery ----

#[test]
fn config_dir_and_user_dirs() {
    let env = Env::sandbox("/home/u")
        .with_var("XDG_CONFIG_HOME", "/xdg")
        .with_var("APPDATA", "C:\\Users\\u\\AppData\\Roaming");
    let dirs = vscode::user_dirs_in(&env);
    assert_eq!(dirs[0], vscode::config_dir_in(&env));
    if cfg!(target_os = "linux") {
        assert_eq!(
            dirs,
            [
                PathBuf::from("/xdg/Code/User"),
                PathBuf::from("/xdg/Code - Insiders/User"),
                PathBuf::from("/home/u/.vscode-server/data/User"),
                PathBuf::from("/home/u/.vscode-server-insiders/data/User"),
            ]
        );
        let home_only = Env::sandbox("/home/u");
        assert_eq!(
            vscode::config_dir_in(&home_only),
            Path::new("/home/u/.config/Code/User")
        );
    }
    if cfg!(target_os = "macos") {
        assert_eq!(
            dirs[0],
            Path::new("/home/u/Library/Application Support/Code/User")
        );
    }
    let portable = Env::sandbox("/home/u").with_var("VSCODE_PORTABLE", "/opt/vscode/data");
    assert_eq!(
        vscode::config_dir_in(&portable),
        Path::new("/opt/vscode/data/user-data/User")
    );
}

#[test]
fn workspace_folders_from_workspace_json() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = |body: &str| {
        let d = tempfile::tempdir_in(tmp.path()).unwrap();
        std::fs::write(d.path().join("workspace.json"), body).unwrap();
        workspace_folder(d.path())
    };
    let fixture = std::fs::read_to_string(fixtures().join("workspace.json")).unwrap();
    assert_eq!(ws(&fixture).as_deref(), Some("/home/user/my demo"));
    assert_eq!(
        ws(r#"{"folder":"file:///c%3A/Users/u/app"}"#).as_deref(),
        Some("c:/Users/u/app")
    );
    assert_eq!(
        ws(r#"{"folder":"vscode-remote://ssh-remote%2Bbox/home/u/app"}"#).as_deref(),
        Some("/home/u/app")
    );
    assert_eq!(
        ws(r#"{"workspace":"file:///home/u/multi/all.code-workspace"}"#).as_deref(),
        Some("/home/u/multi")
    );
    assert_eq!(ws(r#"{"folder":"not a uri"}"#), None);
    assert_eq!(ws("{}"), None);
    assert_eq!(ws("garbage"), None);
    assert_eq!(workspace_folder(&tmp.path().join("missing")), None);
}

fn touch(p: &Path, body: &[u8]) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

#[test]
fn discover_identify_and_source_kinds() {
    let tmp = tempfile::tempdir().unwrap();
    let user = tmp.path().join("Code/User");
    let h1 = user.join("workspaceStorage/1f0a9c");
    let h2 = user.join("workspaceStorage/2e7b4d");
    touch(
        &h1.join("workspace.json"),
        b"{\"folder\":\"file:///home/user/my%20demo\"}",
    );
    touch(
        &h1.join("GitHub.copilot-chat/transcripts/s1.jsonl"),
        &grow(1),
    );
    touch(&h1.join("GitHub.copilot-chat/transcripts/notes.txt"), b"");
    touch(&h1.join("chatSessions/s1.json"), b"{}");
    touch(&h1.join("chatSessions/s2.json"), b"{}");
    touch(&h1.join("chatSessions/s3.jsonl"), b"");
    touch(&h1.join("chatSessions/readme.md"), b"");
    touch(&h2.join("chatSessions/s4.json"), b"{}");
    touch(&h2.join("GitHub.copilot-chat/debug-logs/x.jsonl"), b"");
    touch(
        &user.join("globalStorage/emptyWindowChatSessions/e1.json"),
        b"{}",
    );
    let found =
        vscode::discover_in(&[user.clone(), tmp.path().join("Code - Insiders/User")]).unwrap();
    assert_eq!(
        found,
        [
            h1.join("GitHub.copilot-chat/transcripts/s1.jsonl"),
            user.join("globalStorage/emptyWindowChatSessions/e1.json"),
            h1.join("chatSessions/s2.json"),
            h1.join("chatSessions/s3.jsonl"),
            h2.join("chatSessions/s4.json"),
        ],
        "s1.json is the transcript's session and is left out"
    );
    assert!(
        vscode::discover_in(&[tmp.path().join("nope")])
            .unwrap()
            .is_empty()
    );

    assert_eq!(
        vscode::identify(&found[0]).unwrap(),
        SessionRef {
            agent: Agent::Vscode,
            external_id: "s1".into(),
            parent_external_id: None
        }
    );
    assert_eq!(vscode::identify(&found[3]).unwrap().external_id, "s3");
    assert!(vscode::identify(Path::new("/")).is_err());

    // Transcripts are line-read, chat sessions document-read; both know the project folder.
    let Source::Lines(mut r) = vscode::source_for(&found[0]) else {
        panic!("transcripts are JSONL")
    };
    let mut b = Batch::default();
    r.line(
        br#"{"type":"user.message","id":"u","data":{"content":"hi"}}"#,
        &mut b,
    );
    r.finish(&mut b);
    assert_eq!(b.meta.project_dir.as_deref(), Some("/home/user/my demo"));
    let Source::Doc(mut d) = vscode::source_for(&found[2]) else {
        panic!("chat sessions are documents")
    };
    let mut b = Batch::default();
    d.read(br#"{"requests":[]}"#, &mut b);
    assert_eq!(b.meta.project_dir.as_deref(), Some("/home/user/my demo"));
    assert!(matches!(vscode::source_for(&found[1]), Source::Doc(_)));
    // session.start's cwd wins over workspace.json, in every split (it is kept in the state).
    let Source::Lines(mut r) = vscode::source_for(&found[0]) else {
        panic!()
    };
    let mut b = Batch::default();
    for l in lines(&grow(1)) {
        r.line(l, &mut b);
    }
    r.finish(&mut b);
    assert_eq!(b.meta.project_dir.as_deref(), Some("/home/user/demo"));
    let path = found[0].clone();
    let make_for_path = move || -> Box<dyn LineReader> { Box::new(VscodeReader::for_path(&path)) };
    assert_split_equivalence_with(&make_for_path, "with workspace.json", &grow(3));
    let store = Store::read_in_pieces_with(&make_for_path, &lines(&grow(3)), &[5, 30]);
    assert_eq!(store.meta.project_dir.as_deref(), Some("/home/user/demo"));
}

// ---- hooks ----

fn payload(v: Value) -> Vec<u8> {
    v.to_string().into_bytes()
}

#[test]
fn hook_payloads_for_each_vscode_event() {
    let common = |event: &str, extra: Value| {
        let mut v = json!({"timestamp": "2026-02-09T10:30:00.000Z", "cwd": "/home/u/app",
            "sessionId": "c3a9e1f4", "hookEventName": event,
            "transcript_path": "/home/u/.config/Code/User/workspaceStorage/1f/GitHub.copilot-chat/transcripts/c3a9e1f4.jsonl"});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    let cases = [
        (
            common("SessionStart", json!({"source": "new"})),
            Some("new"),
        ),
        (common("UserPromptSubmit", json!({"prompt": "hi"})), None),
        (
            common(
                "PreToolUse",
                json!({"tool_name": "editFiles", "tool_input": {"files": ["a"]}, "tool_use_id": "t1"}),
            ),
            None,
        ),
        (
            common(
                "PostToolUse",
                json!({"tool_name": "editFiles", "tool_response": "ok", "tool_use_id": "t1"}),
            ),
            None,
        ),
        (
            common("PreCompact", json!({"trigger": "auto"})),
            Some("auto"),
        ),
        (
            common(
                "SubagentStart",
                json!({"agent_id": "a1", "agent_type": "Plan"}),
            ),
            None,
        ),
        (
            common(
                "SubagentStop",
                json!({"agent_id": "a1", "agent_type": "Plan", "stop_hook_active": false}),
            ),
            None,
        ),
        (common("Stop", json!({"stop_hook_active": false})), None),
    ];
    for (v, source) in cases {
        let ev = parse_hook_payload(&payload(v.clone()), &no_env()).unwrap();
        assert_eq!(ev.agent, Agent::Vscode);
        assert_eq!(ev.event, v["hookEventName"].as_str().unwrap());
        assert_eq!(ev.session_id.as_deref(), Some("c3a9e1f4"));
        assert_eq!(ev.transcript_path.as_deref(), v["transcript_path"].as_str());
        assert_eq!(ev.cwd.as_deref(), Some("/home/u/app"));
        assert_eq!(ev.source.as_deref(), source, "{}", ev.event);
        assert_eq!(ev.agent_transcript_path, None);
        assert_eq!(ev.extra, v);
    }
}

#[test]
fn hook_payload_callers_and_errors() {
    let claude =
        json!({"session_id": "s", "hook_event_name": "Stop", "transcript_path": "/t.jsonl"});
    assert_eq!(
        parse_hook_payload(&payload(claude), &no_env())
            .unwrap()
            .agent,
        Agent::Claude
    );
    let cursor =
        json!({"conversation_id": "c", "hook_event_name": "stop", "workspace_roots": ["/r"]});
    assert_eq!(
        parse_hook_payload(&payload(cursor), &no_env())
            .unwrap()
            .agent,
        Agent::Cursor
    );
    let copilot_cli = json!({"timestamp": 1_704_614_400_000u64, "cwd": "/r", "source": "new", "initialPrompt": "hi"});
    let err = parse_hook_payload(&payload(copilot_cli), &no_env()).unwrap_err();
    assert!(err.to_string().contains("Copilot CLI"), "{err}");
    let bare = parse_hook_payload(b"{}", &no_env()).unwrap();
    assert_eq!((bare.agent, bare.event.as_str()), (Agent::Vscode, ""));
    for bad in [&b""[..], b"\n", b"x", b"[]", b"7", b"{\"a\""] {
        assert!(parse_hook_payload(bad, &no_env()).is_err(), "{bad:?}");
    }
    let e = parse_hook_payload(b"\xEF\xBB\xBF{\"hookEventName\":\"Stop\"}", &no_env()).unwrap();
    assert_eq!(e.event, "Stop");
}

#[test]
fn transcripts_for_event_uses_the_path_or_finds_it_by_session_id() {
    let tmp = tempfile::tempdir().unwrap();
    let user = tmp.path().join("User");
    let t = user.join("workspaceStorage/bb/GitHub.copilot-chat/transcripts/sid-1.jsonl");
    touch(&t, b"");
    touch(
        &user.join("workspaceStorage/aa/chatSessions/sid-1.json"),
        b"{}",
    );
    let dirs = [tmp.path().join("missing"), user.clone()];
    let with = |transcript: Option<&str>, sid: &str| {
        let mut v = json!({"sessionId": sid, "hookEventName": "Stop"});
        if let Some(t) = transcript {
            v["transcript_path"] = json!(t);
        }
        parse_hook_payload(&payload(v), &no_env()).unwrap()
    };
    assert_eq!(
        transcripts_for_event_in(&with(Some("/given.jsonl"), "sid-1"), &dirs),
        [PathBuf::from("/given.jsonl")]
    );
    assert_eq!(transcripts_for_event_in(&with(None, "sid-1"), &dirs), [t]);
    assert!(transcripts_for_event_in(&with(None, "sid-2"), &dirs).is_empty());
    for bad in ["../sid-1", "a/b", ".."] {
        assert!(
            transcripts_for_event_in(&with(None, bad), &dirs).is_empty(),
            "{bad}"
        );
    }
}

#[test]
fn session_start_reply_shape() {
    let context = "Goal: fix the build.\nFiles: src/lib.rs — \"quoted\" ✅";
    let reply = vscode::session_start_reply(context).unwrap();
    assert!(!reply.contains('\n'));
    let v: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(
        v,
        json!({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}})
    );
}

#[test]
fn events_and_sessions_with_a_cut_emoji_are_repaired_not_lost() {
    let lone = br#"{"type":"user.message","id":"u","data":{"content":"cut here \ud83d"}}"#;
    let b = read(&[&lone[..]]);
    assert_eq!(b.stats, stats(1, 0, 0, 0));
    assert_eq!(part_text(messages(&b)[0], 0), "cut here \u{fffd}");
    let doc = br#"{"requests":[{"requestId":"r","message":{"text":"emoji \ud83d"}}]}"#;
    let b = read_doc(doc);
    assert_eq!(b.stats, stats(1, 0, 0, 0));
    assert_eq!(part_text(messages(&b)[0], 0), "emoji \u{fffd}");
    let journal = b"{\"kind\":0,\"v\":{\"requests\":[]}}\n{\"kind\":2,\"k\":[\"requests\"],\"v\":[{\"requestId\":\"r\",\"message\":{\"text\":\"caf\xe9\"}}]}\n";
    let b = read_doc(journal);
    assert_eq!(b.stats, stats(3, 0, 0, 0));
    assert_eq!(part_text(messages(&b)[0], 0), "caf\u{fffd}");
}

#[test]
fn discover_reports_folders_it_cannot_list() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("A/User");
    let b = tmp.path().join("B/User");
    // Files where folders are expected cannot be listed (permissions do not stop root).
    touch(&a.join("workspaceStorage"), b"not a folder");
    touch(&b.join("workspaceStorage/h/chatSessions"), b"not a folder");
    touch(
        &b.join("workspaceStorage/h/GitHub.copilot-chat/transcripts/t.jsonl"),
        b"",
    );
    let (files, unreadable) = vscode::discover_in_with_errors(&[a.clone(), b.clone()]).unwrap();
    assert_eq!(
        files,
        [b.join("workspaceStorage/h/GitHub.copilot-chat/transcripts/t.jsonl")]
    );
    assert_eq!(
        unreadable
            .iter()
            .map(|(p, _)| p.clone())
            .collect::<Vec<_>>(),
        [
            a.join("workspaceStorage"),
            b.join("workspaceStorage/h/chatSessions")
        ]
    );
}
