//! The Gemini CLI readers (JSONL and legacy JSON), identity, discovery, paths and hook payloads,
//! over the project's own fixtures in `fixtures/gemini` (see its README.md) and hand-made lines.
//! Expected values are computed by hand from the fixtures.

use crate::common;

use common::{Store, copy_tree, lines, messages, part_text, shape};
use memtrail_adapters::gemini::{
    self, GeminiDocReader, GeminiReader, discover_in, identify, parse_hook_payload,
    project_dir_for, session_start_reply, source_for, transcripts_for_event_in,
};
use memtrail_adapters::{
    Agent, Batch, DocReader, Env, HookEvent, Kind, LineReader, Message, ParseStats, Record, Role,
    SessionRef, Source, ToolCall, parse_rfc3339_ms,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

// ---- helpers ----

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/gemini")
}

/// The fixture Gemini CLI folder (`fixtures/gemini/home/.gemini`).
fn home_gemini() -> PathBuf {
    fixtures().join("home/.gemini")
}

fn grow(n: u8) -> Vec<u8> {
    std::fs::read(fixtures().join(format!("grow-turn{n}.jsonl"))).expect("grow fixture")
}

fn make() -> Box<dyn LineReader> {
    Box::new(GeminiReader::new())
}

/// One reader over `lines`, then `finish`.
fn read(lines: &[&[u8]]) -> Batch {
    let mut r = GeminiReader::new();
    let mut batch = Batch::default();
    for l in lines {
        r.line(l, &mut batch);
    }
    r.finish(&mut batch);
    batch
}

fn read_bytes(bytes: &[u8]) -> Batch {
    read(&lines(bytes))
}

fn one(line: &str) -> Batch {
    read(&[line.as_bytes()])
}

fn read_doc(bytes: &[u8]) -> Batch {
    let mut batch = Batch::default();
    GeminiDocReader::new().read(bytes, &mut batch);
    batch
}

/// The whole file read with the store's semantics (one reader).
fn store_of(bytes: &[u8]) -> Store {
    Store::read_in_pieces_with(&make, &lines(bytes), &[])
}

fn ts(s: &str) -> Option<i64> {
    Some(parse_rfc3339_ms(s).expect("valid timestamp"))
}

fn stats(lines: u64, known: u64, unknown: u64, malformed: u64) -> ParseStats {
    ParseStats {
        lines,
        skipped_known: known,
        skipped_unknown: unknown,
        malformed,
    }
}

fn ids(ms: &[Message]) -> Vec<&str> {
    ms.iter().map(|m| m.id.as_str()).collect()
}

fn calls(m: &Message) -> Vec<&ToolCall> {
    m.tool_calls().collect()
}

/// A hook process's environment with no variable set.
fn no_env() -> memtrail_adapters::Env {
    memtrail_adapters::Env::sandbox("/")
}

fn event(transcript: Option<&str>, session: Option<&str>, cwd: Option<&str>) -> HookEvent {
    HookEvent {
        agent: Agent::Gemini,
        event: "AfterAgent".into(),
        session_id: session.map(str::to_string),
        transcript_path: transcript.map(str::to_string),
        cwd: cwd.map(str::to_string),
        source: None,
        agent_transcript_path: None,
        extra: Value::Null,
    }
}

// ---- expected content of the grow fixtures (fixtures/gemini/README.md) ----

const SID: &str = "4f1c2a9e-7b3d-4e8a-9c21-5d6e7f8a9b0c";
const U1: &str = "0b6f2d4e-1a3c-4e5f-8a7b-9c0d1e2f3a4b";
const G1: &str = "1c7a3e5f-2b4d-4f6a-9b8c-0d1e2f3a4b5c";
const G2: &str = "3e9c5a7b-4d6f-4b8c-9d0e-2f3a4b5c6d7e";
const G3: &str = "5abe7c9d-6f8b-4dae-9f2a-4b5c6d7e8f9a";
const U2: &str = "6bcf8dae-7a9c-4ebf-8a3b-5c6d7e8f9a0b";
const G4: &str = "7cd09ebf-8bad-4fca-9b4c-6d7e8f9a0b1c";
const U3: &str = "9ef2badb-adcf-4bec-9d6e-8f9a0b1c2d3e";
const G5: &str = "a0f3cbec-bed0-4cfd-8e7f-9a0b1c2d3e4f";
const G6: &str = "c215ed0e-d0f2-4e1f-8091-1c2d3e4f5a6b";
const U4: &str = "d326fe1f-e103-4f20-91a2-2d3e4f5a6b7c";
const G7: &str = "e4370f20-f214-4031-82b3-3e4f5a6b7c8d";
const U5: &str = "5f0e8d7c6b5a49382716f5e4d3c2b1a0";
const G8: &str = "6a1f9e8d7c6b5a4938271605f4e3d2c1";

const TURN1: [&str; 4] = [U1, G1, G2, G3];
const TURN2: [&str; 7] = [U1, G1, G2, G3, U3, G5, G6];
const TURN3: [&str; 11] = [U1, G1, G2, G3, U3, G5, G6, U4, G7, U5, G8];

const P1: &str = "src/parse.rs の parse_temp に負の値のテストを追加して 🌡️";
const P3: &str = "Нет, запусти только `cargo test parse` — полный прогон слишком долгий.";
const P4: &str = "解释一下 @src/parse.rs 里的 parse_temp";
const PARSE_RS: &str = "pub fn parse_temp(s: &str) -> Option<f64> {\n    s.trim().trim_end_matches(\"°C\").parse().ok()\n}\n";
const RP_ERR: &str = "Failed to edit, 0 occurrences found for old_string (#[cfg(test)]\nmod tests {). Original old_string was (#[cfg(test)]\nmod tests {) in /home/user/src/weather-app/src/parse.rs. No edits made. The exact text in old_string was not found.";
const SH2_OUT: &str = "Output: running 1 test\ntest parse::tests::positive ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored\nProcess Group PGID: 48213";
const G7_FINAL: &str =
    "parse_temp 会先去掉首尾空白和结尾的 °C，再把剩下的字符串解析成 f64；解析失败时返回 None。";

// =============================================================================================
// The JSONL reader over the grow fixtures
// =============================================================================================

#[test]
fn grow_files_are_byte_prefixes_with_the_documented_sizes() {
    let (a, b, c) = (grow(1), grow(2), grow(3));
    assert_eq!((a.len(), b.len(), c.len()), (5317, 9444, 13558));
    assert!(b.starts_with(&a) && c.starts_with(&b));
    assert_eq!(
        (lines(&a).len(), lines(&b).len(), lines(&c).len()),
        (16, 32, 43)
    );
}

#[test]
fn turn1_reads_to_four_messages() {
    let batch = read_bytes(&grow(1));
    assert_eq!(batch.stats, stats(16, 10, 0, 0));
    assert!(
        batch
            .records
            .iter()
            .all(|r| matches!(r, Record::Replace(_))),
        "the JSONL reader emits only Replace (and Rewind) records"
    );
    let store = store_of(&grow(1));
    assert_eq!(ids(&store.messages), TURN1);
    let m = &store.messages;

    assert_eq!((m[0].role, m[0].kind), (Role::User, Kind::Text));
    assert_eq!(part_text(&m[0], 0), P1);
    assert_eq!(m[0].timestamp, ts("2026-03-14T09:21:08.143Z"));

    // G1: first written with a thought only, rewritten with its read_file call (line 7).
    assert_eq!(shape(&m[1]), ["thinking", "read_file"]);
    assert_eq!(
        part_text(&m[1], 0),
        "Locating the parser\n\nI should read src/parse.rs before writing the test."
    );
    let rf = calls(&m[1])[0];
    assert_eq!(rf.id, "read_file-1773480071842-5d2c9a0e1b7f3");
    assert_eq!((rf.tool.as_str(), rf.is_error), ("read", false));
    assert_eq!(rf.input, json!({"file_path": "src/parse.rs"}));
    assert_eq!(rf.output.as_deref(), Some(PARSE_RS));
    assert_eq!(
        (m[1].kind, m[1].model.as_deref()),
        (Kind::ToolCall, Some("gemini-2.5-pro"))
    );

    // G2: text and a failed `replace` whose error is unwrapped from response.error.
    assert_eq!(shape(&m[2]), ["text", "replace"]);
    assert_eq!(part_text(&m[2], 0), "テストを追加します。");
    let rp = calls(&m[2])[0];
    assert_eq!((rp.tool.as_str(), rp.is_error), ("edit", true));
    assert_eq!(rp.output.as_deref(), Some(RP_ERR));

    assert_eq!(shape(&m[3]), ["text"]);
    assert!(part_text(&m[3], 0).starts_with("`src/parse.rs` にはまだ `mod tests` がないため"));

    assert_eq!(store.meta.title.as_deref(), Some(P1));
    assert_eq!(store.meta.model.as_deref(), Some("gemini-2.5-pro"));
    assert_eq!(store.meta.started_at, ts("2026-03-14T09:21:03.112Z"));
    assert_eq!(store.meta.updated_at, ts("2026-03-14T09:21:24.422Z"));
    assert_eq!(store.meta.project_dir, None);
}

#[test]
fn turn2_rewind_drops_the_rewound_prompt_and_its_answer() {
    let batch = read_bytes(&grow(2));
    assert_eq!(batch.stats, stats(32, 19, 0, 0));
    let rewinds: Vec<&str> = batch
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Rewind { message_id } => Some(message_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(rewinds, [U2]);
    // Before the rewind the batch holds U2 and G4 (with its cancelled call) …
    let before: Vec<&str> = batch
        .records
        .iter()
        .take_while(|r| !matches!(r, Record::Rewind { .. }))
        .filter_map(|r| match r {
            Record::Replace(m) => Some(m.id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(before, [U1, G1, G2, G3, U2, G4]);
    let g4 = batch
        .records
        .iter()
        .find_map(|r| match r {
            Record::Replace(m) if m.id == G4 => Some(m),
            _ => None,
        })
        .expect("G4");
    let cancelled = calls(g4)[0];
    assert_eq!(
        (cancelled.tool.as_str(), cancelled.is_error),
        ("shell", true)
    );
    assert_eq!(
        cancelled.output.as_deref(),
        Some("[Operation Cancelled] Reason: User cancelled tool execution.")
    );

    // … and the store, after the rewind, does not.
    let store = store_of(&grow(2));
    assert_eq!(ids(&store.messages), TURN2);
    let m = &store.messages;
    assert_eq!(part_text(&m[4], 0), P3);
    // G5 was first written empty (skipped), then with its shell call.
    assert_eq!(shape(&m[5]), ["run_shell_command"]);
    let sh = calls(&m[5])[0];
    assert_eq!(sh.id, "run_shell_command-1773480482031-6b8d0f2a4c6e8");
    assert_eq!(
        sh.input,
        json!({"command": "cargo test parse", "description": "Run only the parse tests."})
    );
    assert_eq!((sh.output.as_deref(), sh.is_error), (Some(SH2_OUT), false));
    assert_eq!(
        part_text(&m[6], 0),
        "Тесты parse прошли: 1 passed, 0 failed ✅"
    );
}

#[test]
fn turn3_rewrites_set_messages_and_bad_lines() {
    let batch = read_bytes(&grow(3));
    assert_eq!(batch.stats, stats(43, 22, 1, 1));
    let store = store_of(&grow(3));
    assert_eq!(ids(&store.messages), TURN3);
    let m = &store.messages;

    // U4: displayContent (what was typed), not the @file expansion sent to the model.
    assert_eq!((m[7].role, m[7].parts.len()), (Role::User, 1));
    assert_eq!(part_text(&m[7], 0), P4);

    // G7: the last write wins; the first text is gone, not merged.
    assert_eq!(shape(&m[8]), ["thinking", "text"]);
    assert_eq!(
        part_text(&m[8], 0),
        "Explaining parse_temp\n\nSummarize trim, suffix strip and parse."
    );
    assert_eq!(part_text(&m[8], 1), G7_FINAL);
    assert!(!m[8].text().contains("再把剩下的部分"));

    // U5: the compression summary, a System message of kind Summary.
    assert_eq!((m[9].role, m[9].kind), (Role::System, Kind::Summary));
    assert!(part_text(&m[9], 0).starts_with("<state_snapshot>\n    <overall_goal>"));
    // G8: the synthetic acknowledgment, with no model.
    assert_eq!(
        part_text(&m[10], 0),
        "Got it. Thanks for the additional context!"
    );
    assert_eq!(m[10].model, None);

    // Messages the `$set.messages` re-listing leaves out (U1 … G6) are kept.
    assert_eq!(store.meta.title.as_deref(), Some(P1));
    assert_eq!(store.meta.model.as_deref(), Some("gemini-2.5-pro"));
    assert_eq!(store.meta.started_at, ts("2026-03-14T09:21:03.112Z"));
    assert_eq!(store.meta.updated_at, ts("2026-03-14T09:37:04.122Z"));
    assert!(store.orphans.is_empty());
}

#[test]
fn a_batch_coalesces_rewrites_of_one_message() {
    let batch = read_bytes(&grow(3));
    let replaced: Vec<&str> = batch
        .records
        .iter()
        .map(|r| match r {
            Record::Replace(m) => m.id.as_str(),
            Record::Rewind { .. } => "<rewind>",
            _ => "<other>",
        })
        .collect();
    // G1, G2, G4, G7 are written twice, U4/U5/G8/G7 again in `$set.messages`: one record each
    // per batch, except that writes after the rewind start new records.
    assert_eq!(
        replaced,
        [
            U1, G1, G2, G3, U2, G4, "<rewind>", U3, G5, G6, U4, G7, U5, G8
        ]
    );
}

#[test]
fn growing_file_read_turn_by_turn_equals_one_pass() {
    let all = grow(3);
    let ls = lines(&all);
    let turns = Store::read_in_pieces_with(&make, &ls, &[16, 32]);
    assert_eq!(turns, store_of(&all));
    assert_eq!(ids(&turns.messages), TURN3);
}

#[test]
fn every_split_of_the_grow_files_is_equivalent() {
    for n in 1..=3 {
        common::assert_split_equivalence_with(&make, &format!("grow-turn{n}"), &grow(n));
    }
}

#[test]
fn reader_reports_the_project_dir_it_was_built_with() {
    let mut r = GeminiReader::with_project_dir(Some("/home/user/src/weather-app".into()));
    let mut batch = Batch::default();
    for l in lines(&grow(1)) {
        r.line(l, &mut batch);
    }
    r.finish(&mut batch);
    assert_eq!(
        batch.meta.project_dir.as_deref(),
        Some("/home/user/src/weather-app")
    );
}

// =============================================================================================
// Hand-made lines
// =============================================================================================

fn user_line(id: &str, text: &str) -> String {
    json!({"id": id, "timestamp": "2026-03-14T10:00:00.000Z", "type": "user", "content": [{"text": text}]})
        .to_string()
}

fn gemini_line(id: &str, content: Value) -> String {
    json!({"id": id, "timestamp": "2026-03-14T10:00:01.000Z", "type": "gemini", "content": content, "model": "gemini-2.5-flash"})
        .to_string()
}

#[test]
fn a_rewrite_with_changed_text_replaces_across_batches() {
    let a = gemini_line("m1", json!("draft answer"));
    let b = user_line("u2", "next");
    let c = gemini_line("m1", json!("final answer"));
    let ls: Vec<&[u8]> = vec![a.as_bytes(), b.as_bytes(), c.as_bytes()];
    for cuts in [&[][..], &[1], &[2], &[1, 2]] {
        let store = Store::read_in_pieces_with(&make, &ls, cuts);
        assert_eq!(ids(&store.messages), ["m1", "u2"], "cuts {cuts:?}");
        assert_eq!(store.messages[0].text(), "final answer", "cuts {cuts:?}");
    }
}

#[test]
fn a_rolled_back_turn_keeps_its_prompt() {
    // Shape of a real 0.58 recording (a turn whose API call failed): the start-up context in a
    // `$set.messages`, the typed prompt, then a `$set.messages` rollback that no longer lists it.
    let ctx = json!({"$set": {"messages": [{"id": "d04923d38bb0f6017037e74183378ef4",
        "timestamp": "2026-09-05T17:43:47.367Z", "type": "user",
        "content": [{"text": "<session_context>\nMy operating system is: linux\n</session_context>"}]}],
        "lastUpdated": "2026-09-05T17:43:47.367Z"}})
    .to_string();
    let prompt = user_line("2824c40b-916a-4676-8d1c-3d0a8794b489", "say hi");
    let ls: Vec<&[u8]> = vec![
        br#"{"sessionId":"f8c061f4-df54-4b44-9010-3e6e59bca14e","projectHash":"9c60","startTime":"2026-09-05T17:43:47.366Z","lastUpdated":"2026-09-05T17:43:47.366Z","kind":"main"}"#,
        ctx.as_bytes(),
        prompt.as_bytes(),
        br#"{"$set":{"lastUpdated":"2026-09-05T17:43:47.865Z"}}"#,
        ctx.as_bytes(),
    ];
    let batch = read(&ls);
    assert_eq!(batch.stats, stats(5, 4, 0, 0));
    let store = Store::read_in_pieces_with(&make, &ls, &[]);
    assert_eq!(
        ids(&store.messages),
        ["2824c40b-916a-4676-8d1c-3d0a8794b489"]
    );
    assert_eq!(store.meta.title.as_deref(), Some("say hi"));
}

#[test]
fn skipped_and_malformed_lines_are_counted() {
    let cases: &[(&str, ParseStats)] = &[
        ("", stats(1, 1, 0, 0)),
        ("not json", stats(1, 0, 0, 1)),
        ("[1,2]", stats(1, 0, 0, 1)),
        ("{\"id\":", stats(1, 0, 0, 1)),
        (
            "{\"id\":\"\",\"type\":\"user\",\"content\":\"x\"}",
            stats(1, 0, 0, 1),
        ),
        (
            "{\"id\":7,\"type\":\"user\",\"content\":\"x\"}",
            stats(1, 0, 0, 1),
        ),
        ("{\"$rewindTo\":42}", stats(1, 0, 0, 1)),
        ("{\"$rewindTo\":\"\"}", stats(1, 0, 0, 1)),
        ("{\"$future\":{}}", stats(1, 0, 1, 0)),
        (
            "{\"id\":\"n1\",\"type\":\"notice\",\"content\":\"x\"}",
            stats(1, 0, 1, 0),
        ),
        ("{\"id\":\"n2\",\"content\":\"no type\"}", stats(1, 0, 1, 0)),
        (
            "{\"id\":\"i1\",\"type\":\"info\",\"content\":\"Request cancelled.\"}",
            stats(1, 1, 0, 0),
        ),
        (
            "{\"id\":\"e1\",\"type\":\"error\",\"content\":\"[API Error]\"}",
            stats(1, 1, 0, 0),
        ),
        (
            "{\"id\":\"w1\",\"type\":\"warning\",\"content\":\"slow\"}",
            stats(1, 1, 0, 0),
        ),
        (
            "{\"id\":\"g0\",\"type\":\"gemini\",\"content\":\"\",\"thoughts\":[]}",
            stats(1, 1, 0, 0),
        ),
        ("{\"$set\":{\"summary\":\"s\"}}", stats(1, 1, 0, 0)),
        ("{\"$set\":{\"messages\":[]}}", stats(1, 1, 0, 0)),
        ("{\"$set\":\"not an object\"}", stats(1, 0, 1, 0)),
        (
            "{\"sessionId\":\"s\",\"projectHash\":\"p\"}",
            stats(1, 1, 0, 0),
        ),
    ];
    for (line, want) in cases {
        let batch = one(line);
        assert_eq!(batch.stats, *want, "line {line:?}");
        assert!(batch.records.is_empty(), "line {line:?}");
    }
}

#[test]
fn crlf_and_bom_are_tolerated() {
    let line = format!("\u{feff}{}\r", user_line("u1", "hello"));
    let batch = one(&line);
    assert_eq!(batch.stats, stats(1, 0, 0, 0));
    assert_eq!(messages(&batch).len(), 0, "Replace records, not Message");
    let Record::Replace(m) = &batch.records[0] else {
        panic!("expected Replace")
    };
    assert_eq!(m.text(), "hello");
}

#[test]
fn rewind_to_an_unknown_id_is_passed_to_the_store() {
    let batch = one("{\"$rewindTo\":\"nope\"}");
    assert_eq!(batch.stats, stats(1, 0, 0, 0));
    assert_eq!(
        batch.records,
        [Record::Rewind {
            message_id: "nope".into()
        }]
    );
    let a = user_line("u1", "kept");
    let ls: Vec<&[u8]> = vec![a.as_bytes(), b"{\"$rewindTo\":\"nope\"}"];
    let store = Store::read_in_pieces_with(&make, &ls, &[]);
    assert_eq!(ids(&store.messages), ["u1"]);
}

#[test]
fn a_message_written_again_after_a_rewind_lands_after_it() {
    let a = user_line("u1", "first");
    let b = gemini_line("g1", json!("answer one"));
    let c = gemini_line("g1", json!("answer one, rewritten after the rewind"));
    let ls: Vec<&[u8]> = vec![
        a.as_bytes(),
        b.as_bytes(),
        b"{\"$rewindTo\":\"g1\"}",
        c.as_bytes(),
    ];
    let batch = read(&ls);
    assert_eq!(batch.records.len(), 4, "no in-place update across a rewind");
    let store = Store::read_in_pieces_with(&make, &ls, &[]);
    assert_eq!(ids(&store.messages), ["u1", "g1"]);
    assert_eq!(
        store.messages[1].text(),
        "answer one, rewritten after the rewind"
    );
}

#[test]
fn injected_context_and_tool_echoes_are_not_prompts() {
    let echo = json!({"id": "e1", "timestamp": "2026-03-14T10:00:00Z", "type": "user",
        "content": [{"functionResponse": {"id": "c1", "name": "ls", "response": {"output": "a\nb"}}}]});
    assert_eq!(one(&echo.to_string()).stats, stats(1, 1, 0, 0));
    assert_eq!(
        one(&user_line(
            "s1",
            "<session_context>\nI'm in /tmp\n</session_context>"
        ))
        .stats,
        stats(1, 1, 0, 0)
    );
    assert_eq!(
        one(&user_line(
            "s2",
            "<hook_context>memtrail snapshot, never closed"
        ))
        .stats,
        stats(1, 1, 0, 0)
    );
    // A prompt with hook context appended keeps the prompt, and it is the title.
    let line = json!({"id": "u1", "timestamp": "2026-03-14T10:00:00Z", "type": "user",
        "content": [{"text": "fix the build"}, {"text": "\n<hook_context>recent errors: none</hook_context>"}]});
    let batch = one(&line.to_string());
    let Record::Replace(m) = &batch.records[0] else {
        panic!("expected Replace")
    };
    assert_eq!(m.text(), "fix the build");
    assert_eq!(batch.meta.title.as_deref(), Some("fix the build"));
    // A slash command or `?` is kept as a message but is not a title.
    assert_eq!(one(&user_line("u2", "/memory show")).meta.title, None);
    assert_eq!(one(&user_line("u3", "?")).meta.title, None);
}

#[test]
fn function_call_parts_are_deduplicated_against_tool_calls() {
    let line = json!({"id": "g1", "timestamp": "2026-03-14T10:00:00Z", "type": "gemini",
    "content": [
        {"text": "Let me look.", "thought": true},
        {"text": "Checking "}, {"text": "the folder."},
        {"functionCall": {"id": "c1", "name": "list_directory", "args": {"dir_path": "."}}},
        {"functionCall": {"name": "glob", "args": {"pattern": "*.rs"}}},
        {"functionCall": {"name": "read_file", "args": {"file_path": "a.rs"}}}
    ],
    "toolCalls": [
        {"id": "c1", "name": "list_directory", "args": {"dir_path": "."}, "status": "success",
         "result": [{"functionResponse": {"id": "c1", "name": "list_directory", "response": {"output": "a.rs"}}}]},
        {"id": "c2", "name": "glob", "args": {"pattern": "*.rs"}, "status": "executing"}
    ]});
    let batch = one(&line.to_string());
    let Record::Replace(m) = &batch.records[0] else {
        panic!("expected Replace")
    };
    assert_eq!(
        shape(m),
        ["thinking", "text", "list_directory", "glob", "read_file"]
    );
    assert_eq!(part_text(m, 0), "Let me look.");
    assert_eq!(part_text(m, 1), "Checking the folder.");
    let c = calls(m);
    assert_eq!(
        (c[0].id.as_str(), c[0].output.as_deref()),
        ("c1", Some("a.rs"))
    );
    assert_eq!(
        (c[1].id.as_str(), c[1].output.as_deref()),
        ("c2", None),
        "pending: no output"
    );
    assert_eq!(
        c[2].id, "g1#call-2",
        "an unrecorded call without id gets a derived id"
    );
    assert_eq!((c[2].tool.as_str(), c[2].output.as_deref()), ("read", None));
}

#[test]
fn tool_results_are_unwrapped() {
    let call = |result: Value, status: &str| -> ToolCall {
        let line = json!({"id": "g", "timestamp": "2026-03-14T10:00:00Z", "type": "gemini", "content": "",
            "toolCalls": [{"id": "t", "name": "x", "args": {}, "status": status, "result": result,
                           "resultDisplay": "shown to the user"}]});
        let batch = one(&line.to_string());
        let Record::Replace(m) = &batch.records[0] else {
            panic!("expected Replace")
        };
        calls(m)[0].clone()
    };
    let c = call(json!("plain"), "success");
    assert_eq!((c.output.as_deref(), c.is_error), (Some("plain"), false));
    let c = call(
        json!([{"functionResponse": {"id": "t", "name": "x", "response": {"output": "partial", "error": "[Operation Cancelled] Reason: stop"}}}]),
        "cancelled",
    );
    assert_eq!(
        (c.output.as_deref(), c.is_error),
        (Some("partial\n[Operation Cancelled] Reason: stop"), true)
    );
    let c = call(
        json!([{"functionResponse": {"id": "t", "name": "x", "response": {"output": "Binary content provided (1 item(s))."}}},
               {"inlineData": {"mimeType": "image/png", "data": "iVBOR"}}, {"text": "caption"}]),
        "success",
    );
    assert_eq!(
        c.output.as_deref(),
        Some("Binary content provided (1 item(s)).\n[inline data: image/png]\ncaption")
    );
    let c = call(
        json!({"functionResponse": {"id": "t", "name": "x", "response": {"matches": 3}}}),
        "success",
    );
    assert_eq!(c.output.as_deref(), Some("{\"matches\":3}"));
    let c = call(
        json!({"functionResponse": {"response": {"output": {"n": 1}}}}),
        "success",
    );
    assert_eq!(c.output.as_deref(), Some("{\"n\":1}"));
    let c = call(
        json!({"functionResponse": {"response": {"error": "boom"}}}),
        "success",
    );
    assert!(c.is_error, "a response.error marks the call failed");
    // A shell command that exited non-zero is recorded as `success` with an `Exit Code:` line.
    let shell = |out: &str| -> bool {
        let line = json!({"id": "g", "timestamp": "2026-03-14T10:00:00Z", "type": "gemini", "content": "",
            "toolCalls": [{"id": "t", "name": "run_shell_command", "args": {"command": "cargo test"},
                "status": "success",
                "result": [{"functionResponse": {"id": "t", "name": "run_shell_command", "response": {"output": out}}}]}]});
        let batch = one(&line.to_string());
        let Record::Replace(m) = &batch.records[0] else {
            panic!("expected Replace")
        };
        calls(m)[0].is_error
    };
    assert!(shell(
        "Output: error[E0425]\nExit Code: 101\nProcess Group PGID: 9"
    ));
    assert!(!shell("Output: ok\nProcess Group PGID: 9"));
    assert!(!shell(
        "Output: Exit Code: 3 mentioned inline\nProcess Group PGID: 9"
    ));
    // A finished call without a result keeps its display text; a pending one has no output.
    let c = call(Value::Null, "error");
    assert_eq!(
        (c.output.as_deref(), c.is_error),
        (Some("shown to the user"), true)
    );
    let c = call(Value::Null, "awaiting_approval");
    assert_eq!((c.output.as_deref(), c.is_error), (None, false));
}

#[test]
fn thoughts_render_subject_and_description() {
    let line = json!({"id": "g", "timestamp": "2026-03-14T10:00:00Z", "type": "gemini", "content": "ok",
        "thoughts": [{"subject": "S", "description": ""}, {"subject": "", "description": "only d"},
                     {"subject": " ", "description": " "}, "a plain string", 42]});
    let batch = one(&line.to_string());
    let Record::Replace(m) = &batch.records[0] else {
        panic!("expected Replace")
    };
    assert_eq!(shape(m), ["thinking", "thinking", "thinking", "text"]);
    assert_eq!(
        [part_text(m, 0), part_text(m, 1), part_text(m, 2)],
        ["S", "only d", "a plain string"]
    );
}

// =============================================================================================
// Robustness
// =============================================================================================

/// A small deterministic generator (no external crates).
fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *seed >> 33
}

#[test]
fn random_bytes_and_truncations_never_panic() {
    let all = grow(3);
    // Every line cut at every byte is a (malformed or valid) line; none panics.
    for line in lines(&all) {
        for cut in 0..=line.len() {
            let mut r = GeminiReader::new();
            let mut batch = Batch::default();
            r.line(&line[..cut], &mut batch);
            r.finish(&mut batch);
            assert_eq!(batch.stats.lines, 1);
        }
    }
    let mut seed = 7u64;
    for _ in 0..400 {
        let len = (lcg(&mut seed) % 300) as usize;
        let mut bytes: Vec<u8> = (0..len).map(|_| lcg(&mut seed) as u8).collect();
        if !bytes.is_empty() && lcg(&mut seed).is_multiple_of(2) {
            bytes[0] = b'{';
        }
        let _ = read(&[&bytes]);
        let _ = read_doc(&bytes);
        let _ = parse_hook_payload(&bytes, &no_env());
    }
    // Bytes flipped inside valid lines.
    for (i, line) in lines(&all).iter().enumerate() {
        let mut l = line.to_vec();
        let at = (lcg(&mut seed) as usize) % l.len();
        l[at] = lcg(&mut seed) as u8;
        let b = read(&[&l]);
        assert_eq!(b.stats.lines, 1, "line {i}");
    }
}

// =============================================================================================
// Legacy whole-file JSON (DocReader)
// =============================================================================================

fn chats() -> PathBuf {
    home_gemini().join("tmp/weather-app/chats")
}

const LEGACY: &str = "session-2026-03-10T16-05-9a8b7c6d";
const LSID: &str = "9a8b7c6d-1e2f-4a3b-8c4d-5e6f7a8b9c0d";

fn replaced(batch: &Batch) -> Vec<&Message> {
    batch
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Replace(m) => Some(m),
            _ => None,
        })
        .collect()
}

#[test]
fn legacy_json_and_its_migration_agree() {
    let doc = read_doc(&std::fs::read(chats().join(format!("{LEGACY}.json"))).expect("legacy"));
    assert_eq!(doc.stats, stats(2, 0, 0, 0));
    let legacy = replaced(&doc);
    assert_eq!(
        ids(&legacy.iter().map(|m| (*m).clone()).collect::<Vec<_>>()),
        [
            "0e1d2c3b-4a59-4687-9766-554433221100",
            "1f2e3d4c-5b6a-4798-8877-665544332211"
        ]
    );
    assert_eq!(legacy[0].text(), "What does build.rs do here?");
    assert_eq!(shape(legacy[1]), ["thinking", "text"]);
    assert_eq!(doc.meta.model.as_deref(), Some("gemini-2.5-flash"));
    assert_eq!(doc.meta.started_at, ts("2026-03-10T16:05:38.001Z"));
    assert_eq!(doc.meta.updated_at, ts("2026-03-10T16:05:49.930Z"));
    assert_eq!(
        doc.meta.title.as_deref(),
        Some("What does build.rs do here?")
    );

    // The `.jsonl` the session was migrated to: the same two messages, then the resumed turn.
    let jsonl = std::fs::read(chats().join(format!("{LEGACY}.jsonl"))).expect("migrated");
    let batch = read_bytes(&jsonl);
    assert_eq!(batch.stats, stats(9, 5, 0, 0));
    let store = store_of(&jsonl);
    assert_eq!(store.messages.len(), 4);
    assert_eq!(store.messages[0], *legacy[0]);
    assert_eq!(store.messages[1], *legacy[1]);
    let sub = calls(&store.messages[3])[0];
    assert_eq!(sub.name, "codebase_investigator");
    assert_eq!(
        sub.output.as_deref(),
        Some("GIT_SHA is read in src/version.rs (env!(\"GIT_SHA\")) only.")
    );
}

#[test]
fn legacy_notices_are_skipped() {
    let path = home_gemini().join(
        "tmp/1d2153cbefce8414b5fa5cf06404ef93d4ac38b250e8f635c166db23587628dd/chats/session-2025-11-02T08-15-1d2e3f4a.json",
    );
    let doc = read_doc(&std::fs::read(path).expect("legacy hash fixture"));
    assert_eq!(doc.stats, stats(3, 1, 0, 0));
    let ms = replaced(&doc);
    assert_eq!(
        ms.iter().map(|m| (m.role, m.text())).collect::<Vec<_>>(),
        [
            (Role::User, "hello".to_string()),
            (Role::Assistant, "Hello! How can I help?".to_string())
        ]
    );
}

#[test]
fn a_broken_document_yields_no_records() {
    let bytes = std::fs::read(chats().join(format!("{LEGACY}.json"))).expect("legacy");
    for cut in 0..bytes.len() {
        let doc = read_doc(&bytes[..cut]);
        assert!(doc.records.is_empty(), "cut at {cut}");
        assert_eq!(doc.stats, stats(1, 0, 0, 1), "cut at {cut}");
    }
    assert_eq!(read_doc(b"[]").stats, stats(1, 0, 0, 1));
    assert_eq!(read_doc(b"{\"sessionId\":\"x\"}").stats, stats(1, 0, 1, 0));
    let doc =
        read_doc(b"{\"sessionId\":\"x\",\"messages\":[1,{\"type\":\"user\",\"content\":\"hi\"}]}");
    assert_eq!(doc.stats, stats(2, 0, 0, 1));
    assert_eq!(
        replaced(&doc)[0].id,
        "x-1",
        "a message without id gets <session>-<index>"
    );
}

// =============================================================================================
// Paths, identity, discovery, sources
// =============================================================================================

#[test]
fn config_dir_honours_gemini_cli_home_only() {
    let home = memtrail_adapters::paths::home_dir();
    let config_dir_from = |env: Env| gemini::paths::Locations::resolve(&env).config_dir;
    let env = Env::sandbox(&home)
        .with_var("GEMINI_CLI_HOME", "/srv/gem-home")
        .with_var("GEMINI_CONFIG_DIR", "/ignored");
    assert_eq!(config_dir_from(env), PathBuf::from("/srv/gem-home/.gemini"));
    let rel = Env::sandbox(&home).with_var("GEMINI_CLI_HOME", "rel-home");
    let cwd = std::env::current_dir().expect("cwd");
    assert_eq!(config_dir_from(rel), cwd.join("rel-home/.gemini"));
    let empty = Env::sandbox(&home).with_var("GEMINI_CLI_HOME", "");
    let none = Env::sandbox(&home).with_var("GEMINI_CONFIG_DIR", "/ignored");
    let default = home.join(".gemini");
    assert_eq!(config_dir_from(empty), default);
    assert_eq!(config_dir_from(none), default);
}

#[test]
fn discovery_lists_mains_then_subagents() {
    let tmp = home_gemini().join("tmp");
    let found = discover_in(&tmp).expect("discover");
    let rel: Vec<String> = found
        .iter()
        .map(|p| {
            p.strip_prefix(&tmp)
                .expect("under tmp")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        rel,
        [
            "1d2153cbefce8414b5fa5cf06404ef93d4ac38b250e8f635c166db23587628dd/chats/session-2025-11-02T08-15-1d2e3f4a.json",
            "project/chats/session-2026-03-15T11-02-7e6d5c4b.jsonl",
            "weather-app/chats/session-2026-03-10T16-05-9a8b7c6d.jsonl",
            "weather-app/chats/9a8b7c6d-1e2f-4a3b-8c4d-5e6f7a8b9c0d/codebase_investigator-7f3a9c.jsonl",
        ]
    );
    assert_eq!(
        discover_in(&tmp.join("missing")).expect("missing"),
        Vec::<PathBuf>::new()
    );
}

#[test]
fn identify_reads_the_session_id_from_the_file() {
    let sref = |rel: &str| identify(&home_gemini().join(rel)).expect("identify");
    let main = |id: &str| SessionRef {
        agent: Agent::Gemini,
        external_id: id.into(),
        parent_external_id: None,
    };
    assert_eq!(
        sref("tmp/weather-app/chats/session-2026-03-10T16-05-9a8b7c6d.jsonl"),
        main(LSID)
    );
    assert_eq!(
        sref("tmp/weather-app/chats/session-2026-03-10T16-05-9a8b7c6d.json"),
        main(LSID),
        "a legacy file and its migration are one session"
    );
    assert_eq!(
        sref(
            "tmp/weather-app/chats/9a8b7c6d-1e2f-4a3b-8c4d-5e6f7a8b9c0d/codebase_investigator-7f3a9c.jsonl"
        ),
        SessionRef {
            agent: Agent::Gemini,
            external_id: format!("{LSID}/codebase_investigator-7f3a9c"),
            parent_external_id: Some(LSID.into()),
        }
    );
    assert_eq!(
        sref("tmp/project/chats/session-2026-03-15T11-02-7e6d5c4b.jsonl"),
        main("7e6d5c4b-3a29-4817-8f6e-5d4c3b2a1908")
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let grow_path = dir.path().join("session-2026-03-14T09-21-4f1c2a9e.jsonl");
    std::fs::write(&grow_path, grow(1)).expect("write");
    assert_eq!(identify(&grow_path).expect("identify"), main(SID));
    // Without a session id in the head: the file stem.
    let empty = dir.path().join("session-2026-03-14T09-22-abcdef01.jsonl");
    std::fs::write(&empty, b"").expect("write");
    assert_eq!(
        identify(&empty).expect("identify").external_id,
        "session-2026-03-14T09-22-abcdef01"
    );
    assert!(identify(&dir.path().join("absent.jsonl")).is_err());
    assert!(identify(Path::new("/")).is_err());
}

#[test]
fn project_dir_comes_from_the_marker_or_the_registry() {
    let g = home_gemini();
    assert_eq!(
        project_dir_for(&g.join("tmp/weather-app/chats/session-2026-03-10T16-05-9a8b7c6d.jsonl"))
            .as_deref(),
        Some("/home/user/src/weather-app")
    );
    assert_eq!(
        project_dir_for(&g.join("tmp/weather-app/chats/9a8b7c6d-1e2f-4a3b-8c4d-5e6f7a8b9c0d/codebase_investigator-7f3a9c.jsonl")).as_deref(),
        Some("/home/user/src/weather-app")
    );
    assert_eq!(
        project_dir_for(&g.join("tmp/project/chats/session-2026-03-15T11-02-7e6d5c4b.jsonl"))
            .as_deref(),
        Some("/home/user/src/погода")
    );
    assert_eq!(
        project_dir_for(&g.join("tmp/1d2153cbefce8414b5fa5cf06404ef93d4ac38b250e8f635c166db23587628dd/chats/session-2025-11-02T08-15-1d2e3f4a.json")),
        None
    );
    // Without the `.project_root` marker, projects.json maps the slug back.
    let dir = tempfile::tempdir().expect("tempdir");
    copy_tree(&home_gemini(), dir.path());
    std::fs::remove_file(dir.path().join("tmp/project/.project_root")).expect("rm marker");
    assert_eq!(
        project_dir_for(
            &dir.path()
                .join("tmp/project/chats/session-2026-03-15T11-02-7e6d5c4b.jsonl")
        )
        .as_deref(),
        Some("/home/user/src/погода")
    );
    assert_eq!(project_dir_for(Path::new("/nowhere/file.jsonl")), None);
}

/// A hook resolves the project from Gemini CLI's small files: a `.project_root`,
/// `projects.json` or `trustedFolders.json` that is a FIFO or a link to /dev/zero (planted by a
/// prompt-injected agent, say) is passed over at once, as an unreadable one is; before, the
/// FIFO hung every Gemini hook and /dev/zero grew it past 12 GB of memory (attack review).
#[cfg(unix)]
#[test]
fn project_dir_passes_over_a_fifo_or_a_device() {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_tree(&home_gemini(), dir.path());
    let marker = dir.path().join("tmp/project/.project_root");
    std::fs::remove_file(&marker).expect("rm marker");
    std::os::unix::fs::symlink("/dev/zero", &marker).expect("link");
    let other = dir.path().join("tmp/weather-app/.project_root");
    std::fs::remove_file(&other).expect("rm marker");
    memtrail_testkit::mkfifo(&other);
    for name in ["projects.json", "trustedFolders.json"] {
        let _ = std::fs::remove_file(dir.path().join(name));
        std::os::unix::fs::symlink("/dev/zero", dir.path().join(name)).expect("link");
    }
    let within = |path: std::path::PathBuf| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(project_dir_for(&path));
        });
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("the project must be resolved at once")
    };
    let root = dir.path();
    assert_eq!(
        within(root.join("tmp/project/chats/session-2026-03-15T11-02-7e6d5c4b.jsonl")),
        None
    );
    assert_eq!(
        within(root.join("tmp/weather-app/chats/session-2026-03-10T16-05-9a8b7c6d.jsonl")),
        None
    );
    assert_eq!(
        within(root.join("tmp/1d2153cbefce8414b5fa5cf06404ef93d4ac38b250e8f635c166db23587628dd/chats/session-2025-11-02T08-15-1d2e3f4a.json")),
        None
    );
}

/// Issue 11 item 16: a legacy folder is named by the SHA-256 of the project path
/// (`sha256("/home/user/old-project")` = `1d2153cb…28dd`); it is matched against the folders Gemini
/// CLI knows: `trustedFolders.json`, `projects.json`, and the `.project_root` of other project
/// folders. Unknown stays unknown.
#[test]
fn a_legacy_hash_folder_resolves_to_the_known_folder_with_that_hash() {
    const LEGACY: &str = "tmp/1d2153cbefce8414b5fa5cf06404ef93d4ac38b250e8f635c166db23587628dd/chats/session-2025-11-02T08-15-1d2e3f4a.json";
    // Trusted folders.
    let dir = tempfile::tempdir().expect("tempdir");
    copy_tree(&home_gemini(), dir.path());
    std::fs::write(
        dir.path().join("trustedFolders.json"),
        r#"{"/home/user/src": "TRUST_PARENT", "/home/user/old-project": "TRUST_FOLDER"}"#,
    )
    .unwrap();
    assert_eq!(
        project_dir_for(&dir.path().join(LEGACY)).as_deref(),
        Some("/home/user/old-project")
    );
    // Another project folder's marker.
    let dir = tempfile::tempdir().expect("tempdir");
    copy_tree(&home_gemini(), dir.path());
    std::fs::create_dir_all(dir.path().join("tmp/old-project")).unwrap();
    std::fs::write(
        dir.path().join("tmp/old-project/.project_root"),
        "/home/user/old-project\n",
    )
    .unwrap();
    assert_eq!(
        project_dir_for(&dir.path().join(LEGACY)).as_deref(),
        Some("/home/user/old-project")
    );
    // The registry's keys; and a hash that matches nothing.
    assert_eq!(
        gemini::project_for_hash(
            &home_gemini(),
            "2fcd7228849fc1fa170c48df99d71b3a4c08e37669b942187084946a0893e09e"
        )
        .as_deref(),
        Some("/home/user/src/weather-app")
    );
    assert_eq!(
        gemini::project_for_hash(
            &home_gemini(),
            "0000000000000000000000000000000000000000000000000000000000000000"
        ),
        None
    );
    assert_eq!(
        gemini::project_for_hash(&home_gemini(), "weather-app"),
        None
    );
}

#[test]
fn source_for_picks_the_reader_by_extension() {
    let g = home_gemini().join("tmp/weather-app/chats");
    let jsonl = g.join("session-2026-03-10T16-05-9a8b7c6d.jsonl");
    let Some(Source::Lines(mut r)) = source_for(&jsonl) else {
        panic!("jsonl is read by lines")
    };
    let mut batch = Batch::default();
    for l in lines(&std::fs::read(&jsonl).expect("read")) {
        r.line(l, &mut batch);
    }
    r.finish(&mut batch);
    assert_eq!(
        batch.meta.project_dir.as_deref(),
        Some("/home/user/src/weather-app")
    );
    let json_path = g.join("session-2026-03-10T16-05-9a8b7c6d.json");
    let Some(Source::Doc(mut d)) = source_for(&json_path) else {
        panic!("json is read whole")
    };
    let mut batch = Batch::default();
    d.read(&std::fs::read(&json_path).expect("read"), &mut batch);
    assert_eq!(batch.records.len(), 2);
    assert_eq!(
        batch.meta.project_dir.as_deref(),
        Some("/home/user/src/weather-app")
    );
    assert!(source_for(&g.join("session-2026-03-10T16-05-9a8b7c6d.meta.json")).is_none());
    assert!(source_for(&g.join("notes.txt")).is_none());
}

// =============================================================================================
// Hooks
// =============================================================================================

#[test]
fn hook_payloads_parse_into_events() {
    let payload = br#"{"session_id":"4f1c2a9e-7b3d-4e8a-9c21-5d6e7f8a9b0c","transcript_path":"/home/user/.gemini/tmp/weather-app/chats/session-2026-03-14T09-21-4f1c2a9e.jsonl","cwd":"/home/user/src/weather-app","hook_event_name":"AfterAgent","timestamp":"2026-03-14T09:21:24.500Z","prompt":"p","prompt_response":"r","stop_hook_active":false}"#;
    let ev = parse_hook_payload(payload, &no_env()).expect("parse");
    assert_eq!(ev.agent, Agent::Gemini);
    assert_eq!(ev.event, "AfterAgent");
    assert_eq!(ev.session_id.as_deref(), Some(SID));
    assert_eq!(
        ev.transcript_path.as_deref(),
        Some("/home/user/.gemini/tmp/weather-app/chats/session-2026-03-14T09-21-4f1c2a9e.jsonl")
    );
    assert_eq!(ev.cwd.as_deref(), Some("/home/user/src/weather-app"));
    assert_eq!((ev.source, ev.agent_transcript_path), (None, None));
    assert_eq!(ev.extra["prompt_response"], "r");

    let start = br#"{"session_id":"s","transcript_path":"","cwd":"/w","hook_event_name":"SessionStart","timestamp":"t","source":"resume"}"#;
    let ev = parse_hook_payload(start, &no_env()).expect("parse");
    assert_eq!(
        (ev.transcript_path, ev.source.as_deref()),
        (None, Some("resume"))
    );
    let pre = br#"{"session_id":"s","transcript_path":"/t.jsonl","cwd":"/w","hook_event_name":"PreCompress","timestamp":"t","trigger":"auto"}"#;
    assert_eq!(
        parse_hook_payload(pre, &no_env())
            .expect("parse")
            .source
            .as_deref(),
        Some("auto")
    );
    let end = br#"{"session_id":"s","transcript_path":"/t.jsonl","cwd":"/w","hook_event_name":"SessionEnd","timestamp":"t","reason":"prompt_input_exit"}"#;
    assert_eq!(
        parse_hook_payload(end, &no_env())
            .expect("parse")
            .source
            .as_deref(),
        Some("prompt_input_exit")
    );

    // Environment fallbacks (hookRunner sets GEMINI_SESSION_ID, GEMINI_CWD, GEMINI_PROJECT_DIR).
    let env = memtrail_adapters::Env::sandbox("/")
        .with_var("GEMINI_SESSION_ID", "env-session")
        .with_var("GEMINI_PROJECT_DIR", "/env/project");
    let ev = parse_hook_payload(b"\xEF\xBB\xBF{\"hook_event_name\":\"SessionEnd\"}", &env)
        .expect("parse");
    assert_eq!(ev.session_id.as_deref(), Some("env-session"));
    assert_eq!(ev.cwd.as_deref(), Some("/env/project"));

    for bad in [&b""[..], b"  \n", b"nope", b"[1]", b"\"s\""] {
        assert!(parse_hook_payload(bad, &no_env()).is_err(), "{bad:?}");
    }
}

#[test]
fn session_start_reply_is_hook_specific_output() {
    let reply = session_start_reply("Resume: \"fix\" <tests>\nnext").expect("gemini has a reply");
    assert!(!reply.contains('\n'), "one line of JSON");
    let v: Value = serde_json::from_str(&reply).expect("JSON");
    assert_eq!(
        v,
        json!({"hookSpecificOutput": {"hookEventName": "SessionStart",
                                      "additionalContext": "Resume: \"fix\" <tests>\nnext"}})
    );
}

/// The fixture folder copied to a temp dir, with the grow session placed where Gemini CLI
/// writes it.
fn sandbox() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_tree(&home_gemini(), dir.path());
    std::fs::write(
        dir.path()
            .join("tmp/weather-app/chats/session-2026-03-14T09-21-4f1c2a9e.jsonl"),
        grow(3),
    )
    .expect("write grow");
    dir
}

#[test]
fn transcripts_for_event_uses_the_payload_path_and_subagents() {
    let dir = sandbox();
    let g = dir.path();
    let chats = g.join("tmp/weather-app/chats");
    let main = chats.join("session-2026-03-14T09-21-4f1c2a9e.jsonl");
    let got = transcripts_for_event_in(
        &event(Some(main.to_str().expect("utf8")), Some(SID), None),
        g,
    );
    assert_eq!(got, std::slice::from_ref(&main));

    // A legacy path whose migration exists → the .jsonl, then the session's sub-agents.
    let legacy = chats.join(format!("{LEGACY}.json"));
    let got = transcripts_for_event_in(
        &event(Some(legacy.to_str().expect("utf8")), Some(LSID), None),
        g,
    );
    assert_eq!(
        got,
        [
            chats.join(format!("{LEGACY}.jsonl")),
            chats.join(format!("{LSID}/codebase_investigator-7f3a9c.jsonl")),
        ]
    );
    // Without a session id in the payload, the recording's head names it.
    let got = transcripts_for_event_in(&event(Some(legacy.to_str().expect("utf8")), None, None), g);
    assert_eq!(got.len(), 2);
}

#[test]
fn transcripts_for_event_resolves_an_empty_path_from_the_session() {
    let dir = sandbox();
    let g = dir.path();
    let chats = g.join("tmp/weather-app/chats");
    for cwd in [Some("/home/user/src/weather-app"), Some("/elsewhere"), None] {
        let got = transcripts_for_event_in(&event(Some(""), Some(SID), cwd), g);
        assert_eq!(
            got,
            [chats.join("session-2026-03-14T09-21-4f1c2a9e.jsonl")],
            "cwd {cwd:?}"
        );
    }
    let got = transcripts_for_event_in(&event(None, Some(LSID), None), g);
    assert_eq!(
        got,
        [
            chats.join(format!("{LEGACY}.jsonl")),
            chats.join(format!("{LSID}/codebase_investigator-7f3a9c.jsonl")),
        ],
        "the .jsonl wins over the stale .json"
    );
    // Same 8-char prefix, different session: the head decides.
    let got = transcripts_for_event_in(
        &event(None, Some("4f1c2a9e-0000-4000-8000-000000000000"), None),
        g,
    );
    assert_eq!(got, Vec::<PathBuf>::new());
    assert_eq!(
        transcripts_for_event_in(&event(None, None, None), g),
        Vec::<PathBuf>::new()
    );
    assert_eq!(
        transcripts_for_event_in(&event(None, Some("../../etc"), None), g),
        Vec::<PathBuf>::new()
    );
}

#[test]
fn the_sandbox_session_reads_with_its_project() {
    let dir = sandbox();
    let path = dir
        .path()
        .join("tmp/weather-app/chats/session-2026-03-14T09-21-4f1c2a9e.jsonl");
    let Some(Source::Lines(mut r)) = source_for(&path) else {
        panic!("lines")
    };
    let mut batch = Batch::default();
    for l in lines(&grow(3)) {
        r.line(l, &mut batch);
    }
    r.finish(&mut batch);
    assert_eq!(
        batch.meta.project_dir.as_deref(),
        Some("/home/user/src/weather-app")
    );
    assert_eq!(gemini::identify(&path).expect("identify").external_id, SID);
}

#[test]
fn subagent_and_non_latin_project_recordings_read() {
    let g = home_gemini();
    let sub = g.join(format!(
        "tmp/weather-app/chats/{LSID}/codebase_investigator-7f3a9c.jsonl"
    ));
    let bytes = std::fs::read(&sub).expect("subagent");
    assert_eq!(read_bytes(&bytes).stats, stats(5, 3, 0, 0));
    let store = store_of(&bytes);
    assert_eq!(
        store
            .messages
            .iter()
            .map(|m| (m.role, m.text()))
            .collect::<Vec<_>>(),
        [
            (Role::User, "Find every reader of GIT_SHA".to_string()),
            (
                Role::Assistant,
                "GIT_SHA is read in src/version.rs (env!(\"GIT_SHA\")) only.".to_string()
            ),
        ]
    );

    let pg = std::fs::read(g.join("tmp/project/chats/session-2026-03-15T11-02-7e6d5c4b.jsonl"))
        .expect("project");
    let store = store_of(&pg);
    assert_eq!(store.stats, stats(5, 3, 0, 0));
    assert_eq!(store.messages.len(), 2);
    assert_eq!(
        store.meta.title.as_deref(),
        Some("Какая погода в Москве? ☔")
    );
    assert_eq!(
        store.messages[1].text(),
        "У меня нет доступа к погоде в реальном времени."
    );
    for (name, bytes) in [("subagent", &bytes), ("project", &pg)] {
        common::assert_split_equivalence_with(&make, name, bytes);
    }
}
