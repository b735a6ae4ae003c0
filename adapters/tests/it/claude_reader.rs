//! The Claude Code transcript reader, identity/discovery and hook payloads, over the project's
//! own fixtures in `fixtures/claude` (see its README.md) and hand-made lines. Expected values are
//! computed by hand from the fixtures.

use crate::common;

use common::{
    Lcg, Store, assert_split_equivalence, copy_tree, lines, messages, own_fixtures, part_text,
    read, read_file, shape,
};
use memtrail_adapters::claude::{
    self, ClaudeReader, detect_caller, parse_hook_payload, session_start_reply,
};
use memtrail_adapters::{
    Agent, Batch, Kind, LineReader, Message, ParseStats, Part, Record, Role, SessionRef,
    parse_rfc3339_ms,
};
use serde_json::{Value, json};
use std::path::Path;

const SESSION: &str = "3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1e83";

fn grow(n: u8) -> Vec<u8> {
    std::fs::read(own_fixtures().join(format!("grow-turn{n}.jsonl"))).expect("grow fixture")
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

fn ids(batch: &Batch) -> Vec<&str> {
    messages(batch).iter().map(|m| m.id.as_str()).collect()
}

fn one(line: &str) -> Batch {
    read(&[line.as_bytes()])
}

/// A hook process's environment with no variable set.
fn no_env() -> memtrail_adapters::Env {
    memtrail_adapters::Env::sandbox("/")
}

// ---- expected content of the grow fixtures (fixtures/claude/README.md) ----

const TURN1_IDS: [&str; 5] = [
    "a1c0e5f2-0b7d-4f4e-9a51-3d2c6b8e9f01",
    "msg_01GrowTurnOneAaaaaaaaa",
    "msg_01GrowTurnOneBbbbbbbbb",
    "msg_01GrowTurnOneCcccccccc",
    "msg_01GrowTurnOneDdddddddd",
];
const TURN2_IDS: [&str; 3] = [
    "a1b60893-6fd7-494e-b05b-9768c636f901",
    "msg_01GrowTurnTwoEeeeeeeee",
    "msg_01GrowTurnTwoFfffffffff",
];
const TURN3_IDS: [&str; 7] = [
    "29340b7b-e75f-41c6-b813-1fe034be7189",
    "3a451c8c-f860-42d7-8924-20f145cf829a",
    "msg_01GrowTurnThreeGgggggg",
    "msg_01GrowTurnThreeJjjjjjj",
    "90ab7222-5ec6-483d-af8a-8657ba25e8f0",
    "a1bc8333-6fd7-494e-b09b-9768cb36f901",
    "msg_01GrowTurnThreeIiiiiii",
];

const P1: &str = "このリポジトリのテストを実行してください 🧪";
const AR1: &str = "ترجم الملف README إلى العربية من فضلك";
const AR2: &str = "سأترجم الملف الآن.";
const RU1: &str = "Компиляция не удалась: переменная `x` не определена. Исправляю.";
const RU2: &str = "Готово! README переведён на арабский. 🎉";
const RU3: &str = "Покажи git diff, пожалуйста 🙏";
const JA2: &str = "すべてのテストが通りました ✅ (3 passed)";
const JA3: &str = "差分: src/lib.rs の1行だけ変更 (x → n)、README.ar.md は新規です 👍";

#[test]
fn grow_files_are_byte_prefixes() {
    let (a, b, c) = (grow(1), grow(2), grow(3));
    assert!(b.starts_with(&a) && c.starts_with(&b));
    assert_eq!((a.len(), b.len(), c.len()), (10612, 16912, 25916));
    assert_eq!(
        (lines(&a).len(), lines(&b).len(), lines(&c).len()),
        (16, 27, 40)
    );
}

#[test]
fn split_at_every_line_equals_one_pass_for_own_fixtures() {
    let root = own_fixtures();
    for rel in common::tree(&root) {
        if rel.extension().is_some_and(|e| e == "jsonl") {
            let bytes = std::fs::read(root.join(&rel)).unwrap();
            assert_split_equivalence(&rel.display().to_string(), &bytes);
        }
    }
}

#[test]
fn grow_session_read_turn_by_turn_gives_exactly_the_new_messages() {
    let (a, b, c) = (grow(1), grow(2), grow(3));
    let mut store = Store::default();
    let expected: [&[&str]; 3] = [&TURN1_IDS, &TURN2_IDS, &TURN3_IDS];
    let stats_per_turn = [stats(16, 5, 0, 0), stats(11, 4, 1, 1), stats(13, 3, 0, 0)];
    let pieces = [&a[..], &b[a.len()..], &c[b.len()..]];
    for (turn, piece) in pieces.iter().enumerate() {
        let batch = read(&lines(piece));
        assert_eq!(ids(&batch), expected[turn], "turn {}", turn + 1);
        assert_eq!(batch.stats, stats_per_turn[turn], "turn {}", turn + 1);
        assert!(
            batch
                .records
                .iter()
                .all(|r| matches!(r, Record::Message(_))),
            "turn {}: every result is attached inside the turn",
            turn + 1
        );
        store.apply(batch);
    }
    // The same as reading the final file once.
    let once = Store::read_in_pieces(&lines(&c), &[]);
    assert_eq!(store, once);
    assert_eq!(store.messages.len(), 15);
    assert_eq!(store.stats, stats(40, 12, 1, 1));
}

#[test]
fn grow_turn1_messages_and_tool_error() {
    let b = read(&lines(&grow(1)));
    let ms = messages(&b);
    assert_eq!(ids(&b), TURN1_IDS);

    assert_eq!(ms[0].role, Role::User);
    assert_eq!(ms[0].parts, [Part::Text { text: P1.into() }]);

    assert_eq!(ms[1].role, Role::Assistant);
    assert_eq!(ms[1].kind, Kind::ToolCall);
    assert_eq!(shape(ms[1]), ["thinking", "text", "Bash"]);
    assert_eq!(
        part_text(ms[1], 0),
        "The user asks (in Japanese) to run the tests. I'll run cargo test."
    );
    assert_eq!(part_text(ms[1], 1), "テストを実行します。");
    assert_eq!(ms[1].timestamp, ts("2026-03-02T09:00:02.000Z"));
    assert_eq!(ms[1].model.as_deref(), Some("claude-opus-4-6"));
    let failed = ms[1].tool_calls().next().unwrap();
    assert_eq!(failed.id, "toolu_01GrowBashFailAaaaaaaa");
    assert_eq!(failed.tool, "shell");
    assert_eq!(
        failed.input,
        json!({"command": "cargo test", "description": "Run the test suite"})
    );
    assert!(failed.is_error, "is_error: true is carried over");
    assert_eq!(
        failed.output.as_deref(),
        Some(
            "Exit code 101\nerror[E0425]: cannot find value `x` in this scope\n --> src/lib.rs:3:5\n  |\n3 |     x + 1\n  |     ^ not found in this scope"
        )
    );

    assert_eq!(shape(ms[2]), ["text", "Edit"]);
    assert_eq!(part_text(ms[2], 0), RU1);
    let edit = ms[2].tool_calls().next().unwrap();
    assert_eq!(edit.tool, "edit");
    assert!(!edit.is_error);

    let ok = ms[3].tool_calls().next().unwrap();
    assert_eq!(ok.id, "toolu_01GrowBashOkAaaaaaaaaa");
    assert!(!ok.is_error, "the later run succeeded");
    assert_eq!(
        ok.output.as_deref(),
        Some("running 3 tests\ntest result: ok. 3 passed; 0 failed")
    );
    assert_eq!(ms[4].parts, [Part::Text { text: JA2.into() }]);

    let meta = &b.meta;
    assert_eq!(meta.project_dir.as_deref(), Some("/home/user/demo"));
    assert_eq!(meta.git_branch.as_deref(), Some("main"));
    assert_eq!(meta.agent_version.as_deref(), Some("2.1.49"));
    assert_eq!(meta.model.as_deref(), Some("claude-opus-4-6"));
    assert_eq!(meta.title.as_deref(), Some(P1));
    assert_eq!(meta.started_at, ts("2026-03-02T09:00:00.120Z"));
    assert_eq!(meta.updated_at, ts("2026-03-02T09:00:12.000Z"));
}

#[test]
fn grow_turn2_strips_wrappers_and_skips_echoes() {
    let a = grow(1);
    let b = grow(2);
    let batch = read(&lines(&b[a.len()..]));
    // isMeta caveat, /model echo, local-command-stdout, attachment: known; x-future-record:
    // unknown; the cut-off line: malformed.
    assert_eq!(batch.stats, stats(11, 4, 1, 1));
    let ms = messages(&batch);
    // <ide_opened_file> block dropped, <system-reminder> removed, Arabic kept byte for byte.
    assert_eq!(ms[0].parts, [Part::Text { text: AR1.into() }]);
    assert_eq!(batch.meta.title.as_deref(), Some(AR1));
    assert_eq!(shape(ms[1]), ["text", "Write"]);
    assert_eq!(part_text(ms[1], 0), AR2);
    let write = ms[1].tool_calls().next().unwrap();
    assert_eq!(write.tool, "write");
    assert_eq!(
        write.input["content"],
        "# عرض توضيحي\n\nمشروع صغير للاختبار.\n"
    );
    assert_eq!(ms[2].parts, [Part::Text { text: RU2.into() }]);
    assert_eq!(batch.meta.started_at, ts("2026-03-02T09:05:30.000Z"));
    assert_eq!(batch.meta.updated_at, ts("2026-03-02T09:05:37.000Z"));
}

#[test]
fn grow_turn3_summary_parallel_calls_rejection_and_api_error() {
    let b = grow(2);
    let c = grow(3);
    let batch = read(&lines(&c[b.len()..]));
    assert_eq!(batch.stats, stats(13, 3, 0, 0));
    let ms = messages(&batch);
    assert_eq!(ids(&batch), TURN3_IDS);

    // The compaction summary.
    assert_eq!(ms[0].role, Role::System);
    assert_eq!(ms[0].kind, Kind::Summary);
    assert!(part_text(ms[0], 0).starts_with("This session is being continued"));
    assert!(part_text(ms[0], 0).ends_with("2. Created README.ar.md (عرض توضيحي)."));
    // The summary is not a prompt: the title is the first real prompt of the batch.
    assert_eq!(batch.meta.title.as_deref(), Some(RU3));
    assert_eq!(ms[1].parts, [Part::Text { text: RU3.into() }]);

    // Two parallel calls, results written in the other order.
    assert_eq!(shape(ms[2]), ["Bash", "Bash"]);
    let calls: Vec<_> = ms[2].tool_calls().collect();
    assert_eq!(calls[0].input["command"], "git diff --stat");
    assert_eq!(
        calls[0].output.as_deref(),
        Some(" src/lib.rs | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)")
    );
    assert_eq!(
        calls[1].output.as_deref(),
        Some(" M src/lib.rs\n?? README.ar.md")
    );

    // The rejected call gets the error; the mixed line is a user message with its text only.
    let rm = ms[3].tool_calls().next().unwrap();
    assert!(rm.is_error);
    assert!(
        rm.output
            .as_deref()
            .unwrap()
            .starts_with("The user doesn't want to proceed")
    );
    assert_eq!(ms[4].role, Role::User);
    assert_eq!(
        ms[4].parts,
        [Part::Text {
            text: "[Request interrupted by user for tool use]".into()
        }]
    );
    assert_eq!(
        ms[5].parts,
        [Part::Text {
            text: "No, don't delete anything. Just summarise the diff. 🙂".into()
        }]
    );
    // The API error line (model <synthetic>) is skipped; the next answer is kept.
    assert_eq!(ms[6].parts, [Part::Text { text: JA3.into() }]);
    assert_eq!(batch.meta.model.as_deref(), Some("claude-opus-4-6"));
    assert!(
        ms.iter()
            .all(|m| !m.text().contains("API Error") && m.model.as_deref() != Some("<synthetic>"))
    );
}

#[test]
fn whole_grow_file_meta_keeps_the_first_title() {
    let store = Store::read_in_pieces(&lines(&grow(3)), &[]);
    assert_eq!(store.meta.title.as_deref(), Some(P1));
    assert_eq!(store.meta.started_at, ts("2026-03-02T09:00:00.120Z"));
    assert_eq!(store.meta.updated_at, ts("2026-03-02T09:21:30.000Z"));
    let roles: Vec<Role> = store.messages.iter().map(|m| m.role).collect();
    use Role::{Assistant as A, System as S, User as U};
    assert_eq!(roles, [U, A, A, A, A, U, A, A, S, U, A, A, U, U, A]);
}

#[test]
fn result_after_finish_is_a_tool_result_record() {
    // The runtime keeps one reader over several chunks and calls finish() after each one.
    let bytes = grow(1);
    let ls = lines(&bytes);
    let mut reader = ClaudeReader::new();
    let mut first = Batch::default();
    for l in &ls[..8] {
        reader.line(l, &mut first);
    }
    reader.finish(&mut first);
    let mut second = Batch::default();
    for l in &ls[8..] {
        reader.line(l, &mut second);
    }
    reader.finish(&mut second);
    assert_eq!(
        second.records[0],
        Record::ToolResult {
            call_id: "toolu_01GrowBashFailAaaaaaaa".into(),
            output: "Exit code 101\nerror[E0425]: cannot find value `x` in this scope\n --> src/lib.rs:3:5\n  |\n3 |     x + 1\n  |     ^ not found in this scope".into(),
            is_error: true,
            timestamp: ts("2026-03-02T09:00:04.500Z"),
            exit_code: Some(101),
        }
    );
    let mut store = Store::default();
    store.apply(first);
    store.apply(second);
    assert_eq!(store, Store::read_in_pieces(&ls, &[]));
}

#[test]
fn subagent_layout_identify_and_discover() {
    let tmp = tempfile::tempdir().unwrap();
    let projects = tmp.path().join("projects");
    copy_tree(&own_fixtures().join("projects"), &projects);
    let proj = projects.join("-home-user-demo");
    // Things discover must skip or classify.
    std::fs::create_dir_all(proj.join(SESSION).join("tool-results")).unwrap();
    std::fs::write(
        proj.join(SESSION).join("tool-results/toolu_x.jsonl"),
        "{}\n",
    )
    .unwrap();
    std::fs::write(proj.join("notes.txt"), "not a transcript").unwrap();
    std::fs::write(
        proj.join(SESSION).join("subagents/agent-a7f3c21.meta.json"),
        "{}",
    )
    .unwrap();
    std::fs::write(projects.join("stray.jsonl"), "{}\n").unwrap();
    let other = projects.join("-home-user-other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("0000aaaa-0000-4000-8000-000000000000.jsonl"), "").unwrap();
    // A 2.0 agent file with no sessionId in it.
    std::fs::write(
        other.join("agent-deadbeef.jsonl"),
        "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
    )
    .unwrap();

    let found = claude::discover(&projects).unwrap();
    assert_eq!(
        found,
        [
            proj.join(format!("{SESSION}.jsonl")),
            other.join("0000aaaa-0000-4000-8000-000000000000.jsonl"),
            proj.join(format!("{SESSION}/subagents/agent-a7f3c21.jsonl")),
            other.join("agent-deadbeef.jsonl"),
        ]
    );
    let refs: Vec<SessionRef> = found.iter().map(|p| claude::identify(p).unwrap()).collect();
    let r = |id: &str, parent: Option<&str>| SessionRef {
        agent: Agent::Claude,
        external_id: id.to_string(),
        parent_external_id: parent.map(str::to_string),
    };
    assert_eq!(
        refs,
        [
            r(SESSION, None),
            r("0000aaaa-0000-4000-8000-000000000000", None),
            r(&format!("{SESSION}/agent-a7f3c21"), Some(SESSION)),
            r("agent-deadbeef", None),
        ]
    );

    // The sub-agent transcript reads like any other; its lines carry the parent's sessionId.
    let sub = read_file(&found[2]);
    assert_eq!(sub.stats, stats(4, 0, 0, 0));
    assert_eq!(
        messages(&sub).iter().map(|m| shape(m)).collect::<Vec<_>>(),
        [vec!["text"], vec!["Grep"], vec!["text"]]
    );
    let grep = messages(&sub)[1].tool_calls().next().unwrap().clone();
    assert_eq!(grep.tool, "search");
    assert_eq!(
        grep.output.as_deref(),
        Some("src/lib.rs:7:    // TODO: handle overflow\nsrc/main.rs:12:    // TODO: read config")
    );
    assert_eq!(sub.meta.model.as_deref(), Some("claude-haiku-4-5-20251001"));
    let main = read_file(&found[0]);
    let task = messages(&main)[1].tool_calls().next().unwrap().clone();
    assert_eq!(task.tool, "subagent");
    assert_eq!(
        task.output.as_deref(),
        Some(
            "Found 2 TODO comments:\n- src/lib.rs:7 TODO: handle overflow\n- src/main.rs:12 TODO: read config\nagentId: a7f3c21 (for resuming to continue this agent's work if needed)"
        )
    );
}

#[test]
fn discover_missing_dir_is_empty_and_identify_needs_a_name() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(
        claude::discover(&tmp.path().join("nope"))
            .unwrap()
            .is_empty()
    );
    assert!(claude::identify(Path::new("/")).is_err());
    // A main file is identified by name alone: it need not exist.
    assert_eq!(
        claude::identify(Path::new("/x/projects/-p/abc.jsonl"))
            .unwrap()
            .external_id,
        "abc"
    );
    // A 2.0 agent file is opened; a missing one is an error.
    assert!(claude::identify(&tmp.path().join("agent-1.jsonl")).is_err());
}

#[test]
fn identify_finds_session_id_beyond_non_json_and_in_a_cut_line() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("agent-77.jsonl");
    // First line has no sessionId, second is garbage, third has it.
    std::fs::write(
        &p,
        "{\"type\":\"summary\"}\nnot json\n{\"sessionId\":\"parent-1\",\"type\":\"user\"}\n",
    )
    .unwrap();
    assert_eq!(
        claude::identify(&p).unwrap().parent_external_id.as_deref(),
        Some("parent-1")
    );
    // A first line longer than the 64 KiB head: found by a plain search in the cut line.
    let mut big = String::from(
        "{\"parentUuid\":null,\"isSidechain\":true,\"sessionId\":\"parent-2\",\"x\":\"",
    );
    big.push_str(&"y".repeat(100_000));
    big.push_str("\"}\n");
    std::fs::write(&p, big).unwrap();
    assert_eq!(
        claude::identify(&p).unwrap().external_id,
        "parent-2/agent-77"
    );
}

#[test]
fn stats_counts_are_exact_for_each_line_kind() {
    let cases: &[(&str, ParseStats, usize)] = &[
        (r#"{"type":"progress","data":{}}"#, stats(1, 1, 0, 0), 0),
        (
            r#"{"type":"queue-operation","operation":"enqueue"}"#,
            stats(1, 1, 0, 0),
            0,
        ),
        (
            r#"{"type":"file-history-snapshot","snapshot":{}}"#,
            stats(1, 1, 0, 0),
            0,
        ),
        (
            r#"{"type":"system","subtype":"stop_hook_summary"}"#,
            stats(1, 1, 0, 0),
            0,
        ),
        (
            r#"{"type":"summary","summary":"Old title","leafUuid":"u"}"#,
            stats(1, 1, 0, 0),
            0,
        ),
        (
            r#"{"type":"custom-title","customTitle":"t"}"#,
            stats(1, 1, 0, 0),
            0,
        ),
        (
            r#"{"type":"agent-name","agentName":"n"}"#,
            stats(1, 1, 0, 0),
            0,
        ),
        (
            r#"{"type":"last-prompt","lastPrompt":"p"}"#,
            stats(1, 1, 0, 0),
            0,
        ),
        (
            r#"{"type":"attachment","attachment":{}}"#,
            stats(1, 1, 0, 0),
            0,
        ),
        (
            r#"{"type":"user","uuid":"u","isMeta":true,"message":{"content":"x"}}"#,
            stats(1, 1, 0, 0),
            0,
        ),
        (
            r#"{"type":"assistant","uuid":"u","isApiErrorMessage":true,"message":{"id":"m","content":[{"type":"text","text":"API Error"}]}}"#,
            stats(1, 1, 0, 0),
            0,
        ),
        (r#"{"type":"brand-new","uuid":"u"}"#, stats(1, 0, 1, 0), 0),
        (r#"{"uuid":"u"}"#, stats(1, 0, 1, 0), 0),
        (r#"{"type":7}"#, stats(1, 0, 1, 0), 0),
        (r#"{"type":"user""#, stats(1, 0, 0, 1), 0),
        (r#"[{"type":"user"}]"#, stats(1, 0, 0, 1), 0),
        (r#""user""#, stats(1, 0, 0, 1), 0),
        ("42", stats(1, 0, 0, 1), 0),
        ("\u{FEFF}{\"type\":\"progress\"}", stats(1, 1, 0, 0), 0),
        // A prompt without a uuid cannot get a deterministic id.
        (
            r#"{"type":"user","message":{"content":"hello"}}"#,
            stats(1, 0, 0, 1),
            0,
        ),
        // An assistant line without message.id falls back to the uuid.
        (
            r#"{"type":"assistant","uuid":"u1","message":{"content":[{"type":"text","text":"hi"}]}}"#,
            stats(1, 0, 0, 0),
            1,
        ),
        (
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}"#,
            stats(1, 0, 0, 1),
            0,
        ),
        (
            r#"{"type":"assistant","uuid":"u1","message":"oops"}"#,
            stats(1, 0, 0, 1),
            0,
        ),
        // Nothing left after trimming or unknown blocks only: known, no message.
        (
            r#"{"type":"assistant","uuid":"u1","message":{"id":"m","content":[{"type":"text","text":"  \n"}]}}"#,
            stats(1, 1, 0, 0),
            0,
        ),
        (
            r#"{"type":"assistant","uuid":"u1","message":{"id":"m","content":[{"type":"redacted_thinking","data":"x"}]}}"#,
            stats(1, 1, 0, 0),
            0,
        ),
        (
            r#"{"type":"assistant","uuid":"u1","message":{"id":"m","content":[{"type":"thinking","thinking":"","signature":"sig"}]}}"#,
            stats(1, 1, 0, 0),
            0,
        ),
    ];
    for (line, expected, n_messages) in cases {
        let b = one(line);
        assert_eq!(b.stats, *expected, "{line}");
        assert_eq!(messages(&b).len(), *n_messages, "{line}");
    }
}

#[test]
fn user_text_cleanup() {
    let user = |content: Value| {
        json!({"type": "user", "uuid": "u", "timestamp": "2026-01-01T00:00:00Z",
               "message": {"role": "user", "content": content}})
        .to_string()
    };
    let text_of = |line: String| -> Option<Vec<String>> {
        let b = one(&line);
        messages(&b).first().map(|m| {
            m.parts
                .iter()
                .map(|p| match p {
                    Part::Text { text } => text.clone(),
                    other => panic!("{other:?}"),
                })
                .collect()
        })
    };
    // Echoes of slash commands, local commands and `!` shell commands are not prompts.
    for echo in [
        "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>",
        "<local-command-stdout></local-command-stdout>",
        "<local-command-caveat>Caveat: …</local-command-caveat>",
        "<bash-input>ls</bash-input>",
        "<bash-stdout>a\nb</bash-stdout><bash-stderr></bash-stderr>",
        "<system-reminder>only a reminder</system-reminder>",
        "  <ide_selection>The user selected lines 1-3</ide_selection>  ",
    ] {
        assert_eq!(text_of(user(json!(echo))), None, "{echo:?}");
    }
    // A prompt that merely mentions a tag is kept; wrappers are removed anywhere in the text.
    assert_eq!(
        text_of(user(json!("why does <command-name> show up?"))),
        Some(vec!["why does <command-name> show up?".to_string()])
    );
    assert_eq!(
        text_of(user(json!(
            "<ide_selection>fn main() {}</ide_selection>explain\n<system-reminder>x</system-reminder>  this"
        ))),
        Some(vec!["explain\n  this".to_string()])
    );
    // An unclosed wrapper is left alone rather than eating the prompt.
    assert_eq!(
        text_of(user(json!("<system-reminder>fix the build"))),
        Some(vec!["<system-reminder>fix the build".to_string()])
    );
    // Array content: text blocks kept in order, images ignored, duplicates merged.
    assert_eq!(
        text_of(user(json!([
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
            {"type": "text", "text": " what is in this picture? "},
            {"type": "text", "text": "<ide_opened_file>x</ide_opened_file>"},
            {"type": "text", "text": "and this one"}
        ]))),
        Some(vec![
            "what is in this picture?".to_string(),
            "and this one".to_string()
        ])
    );
}

/// Claude Code 2.1.332 writes a background agent's completion notice as a `user` line of its
/// own (`promptSource: "system"`, `origin.kind: "task-notification"`; the envelope of a real
/// `claude -p` transcript). It was stored as the user's prompt: the snapshot's "Last request"
/// and "Goal", and the session's title, became `<task-notification> <task-id>…`. It is a
/// system message now; the user's own prompt (`promptSource: "sdk"`) stays a prompt.
#[test]
fn a_task_notification_is_not_a_prompt() {
    let notice = "<task-notification>\n<task-id>a3b805c3f19a80ce5</task-id>\n<status>completed</status>\n<summary>Agent \"walrus task\" finished</summary>\n</task-notification>";
    let line = |uuid: &str, extra: Value, text: &str| {
        let mut v = json!({"type": "user", "uuid": uuid, "timestamp": "2026-12-05T21:16:52.343Z",
            "sessionId": SESSION, "cwd": "/tmp/p", "message": {"role": "user", "content": text}});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v.to_string()
    };
    let real = line(
        "n1",
        json!({"promptSource": "system", "turnOrigin": "task_notification",
               "origin": {"kind": "task-notification", "producer": "session-task"}}),
        notice,
    );
    let bare = line("n2", json!({}), notice);
    let prompt = line("p1", json!({"promptSource": "sdk"}), "delegate this please");
    let b = read(&[real.as_bytes(), bare.as_bytes(), prompt.as_bytes()]);
    let roles: Vec<(&str, Role)> = messages(&b)
        .iter()
        .map(|m| (m.id.as_str(), m.role))
        .collect();
    assert_eq!(
        roles,
        [
            ("n1", Role::System),
            ("n2", Role::System),
            ("p1", Role::User)
        ]
    );
    assert!(messages(&b)[0].text().contains("walrus task"));
    assert_eq!(b.meta.title.as_deref(), Some("delegate this please"));
}

#[test]
fn crlf_and_bom_lines_read_like_plain_ones() {
    let bytes = grow(1);
    let plain = read(&lines(&bytes));
    let crlf: Vec<Vec<u8>> = lines(&bytes)
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let mut v = if i == 0 {
                b"\xEF\xBB\xBF".to_vec()
            } else {
                Vec::new()
            };
            v.extend_from_slice(l);
            v.extend_from_slice(b"\r");
            v
        })
        .collect();
    let refs: Vec<&[u8]> = crlf.iter().map(Vec::as_slice).collect();
    assert_eq!(read(&refs), plain);
}

#[test]
fn orphan_result_carries_its_timestamp() {
    let line = json!({"type": "user", "uuid": "u9", "timestamp": "2026-03-02T10:00:00.5Z",
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_old", "is_error": true,
             "content": [{"type": "text", "text": "line 1"},
                         {"type": "image", "source": {"type": "base64", "data": "AA"}},
                         {"type": "tool_reference", "tool_name": "x"},
                         {"type": "text", "text": "line 2"}]},
            {"type": "tool_result", "tool_use_id": "toolu_empty"}]}})
    .to_string();
    let b = one(&line);
    assert_eq!(b.stats, stats(1, 0, 0, 0));
    assert_eq!(
        b.records,
        [
            Record::ToolResult {
                call_id: "toolu_old".into(),
                output: "line 1\n[image]\nline 2".into(),
                is_error: true,
                timestamp: ts("2026-03-02T10:00:00.500Z"),
                exit_code: None,
            },
            Record::ToolResult {
                call_id: "toolu_empty".into(),
                output: String::new(),
                is_error: false,
                timestamp: ts("2026-03-02T10:00:00.500Z"),
                exit_code: None,
            },
        ]
    );
    assert_eq!(b.meta.started_at, ts("2026-03-02T10:00:00.500Z"));
}

#[test]
fn cumulative_re_emission_is_deduplicated() {
    // Older Claude Code wrote the growing message again on each line.
    let a = |content: Value, uuid: &str| {
        json!({"type": "assistant", "uuid": uuid, "timestamp": "2026-01-01T00:00:01Z",
               "message": {"id": "msg_1", "model": "claude-x", "content": content}})
        .to_string()
    };
    let l1 = a(json!([{"type": "text", "text": "Let me look."}]), "u1");
    let l2 = a(
        json!([{"type": "text", "text": "Let me look."},
               {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/a"}}]),
        "u2",
    );
    let l3 = a(
        json!([{"type": "text", "text": "Let me look."},
               {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/a"}},
               {"type": "tool_use", "id": "toolu_2", "name": "mcp__github__get_issue", "input": {}}]),
        "u3",
    );
    let b = read(&[l1.as_bytes(), l2.as_bytes(), l3.as_bytes()]);
    assert_eq!(b.records.len(), 1);
    let m = messages(&b)[0];
    assert_eq!(shape(m), ["text", "Read", "mcp__github__get_issue"]);
    assert_eq!(
        m.tool_calls().map(|c| c.tool.as_str()).collect::<Vec<_>>(),
        ["read", "mcp"]
    );
    assert_eq!(m.model.as_deref(), Some("claude-x"));
    assert_split_equivalence("cumulative", format!("{l1}\n{l2}\n{l3}\n").as_bytes());
}

#[test]
fn a_line_over_one_megabyte() {
    // A 1.5 MB tool result (generated, not committed).
    let big: String = "0123456789abcdé\n".repeat(1_500_000 / 17 + 1);
    assert!(big.len() > 1_500_000);
    let call = json!({"type": "assistant", "uuid": "u1", "timestamp": "2026-01-01T00:00:01Z",
        "message": {"id": "msg_big", "content": [
            {"type": "tool_use", "id": "toolu_big", "name": "Read", "input": {"file_path": "/big.txt"}}]}})
    .to_string();
    let result = json!({"type": "user", "uuid": "u2", "timestamp": "2026-01-01T00:00:02Z",
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_big", "content": big}]},
        "toolUseResult": {"type": "text", "file": {"filePath": "/big.txt", "content": big}}})
    .to_string();
    assert!(result.len() > 3_000_000);
    let b = read(&[call.as_bytes(), result.as_bytes()]);
    assert_eq!(b.stats, stats(2, 0, 0, 0));
    let m = messages(&b)[0];
    assert_eq!(
        m.tool_calls().next().unwrap().output.as_deref(),
        Some(big.as_str())
    );
}

#[test]
fn random_bytes_and_mutated_lines_never_panic() {
    let mut rng = Lcg(0x5eed);
    let mut reader = ClaudeReader::new();
    let mut batch = Batch::default();
    let mut n = 0u64;
    // Pure noise.
    for _ in 0..2000 {
        let len = (rng.next() % 200) as usize;
        let line: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        reader.line(&line, &mut batch);
        n += 1;
    }
    // Real lines with bytes flipped, cut, or JSON-ish noise spliced in.
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
            if rng.next().is_multiple_of(50) {
                reader.finish(&mut batch);
            }
        }
    }
    reader.finish(&mut batch);
    assert_eq!(batch.stats.lines, n);
    assert!(batch.stats.malformed > 0);
    assert!(batch.stats.skipped() <= n);
}

#[test]
fn weird_types_inside_valid_json_never_panic() {
    for line in [
        r#"{"type":"user","uuid":"u","message":{"content":42}}"#,
        r#"{"type":"user","uuid":"u","message":{"content":[1,"x",null,{"type":"tool_result"}]}}"#,
        r#"{"type":"user","uuid":"u","message":{"content":[{"type":"tool_result","tool_use_id":5,"content":{"a":1}}]}}"#,
        r#"{"type":"user","uuid":"u","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[1,{"type":"text","text":7}]}]}}"#,
        r#"{"type":"user","uuid":5,"isMeta":"yes","isCompactSummary":1,"message":{"content":"hi"}}"#,
        r#"{"type":"user","uuid":"u","isCompactSummary":true,"message":{"content":[{"type":"text","text":"  "}]}}"#,
        r#"{"type":"assistant","uuid":"u","message":{"id":["m"],"model":{},"content":[{"type":"tool_use","name":"Bash"}]}}"#,
        r#"{"type":"assistant","uuid":"u","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":null,"input":"str"}]}}"#,
        r#"{"type":"assistant","uuid":"u","timestamp":"not a time","cwd":1,"version":[],"gitBranch":{},"message":{"id":"m","content":"plain string"}}"#,
        r#"{"type":"user","uuid":"u","message":null}"#,
        r#"{"type":"user","type":"assistant"}"#,
        "{}",
        "   ",
    ] {
        let b = one(line);
        assert_eq!(b.stats.lines, 1, "{line}");
    }
    // A tool_use without name still becomes a call with an empty name.
    let b = one(
        r#"{"type":"assistant","uuid":"u","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":null,"input":"str"}]}}"#,
    );
    let call = messages(&b)[0].tool_calls().next().unwrap().clone();
    assert_eq!((call.name.as_str(), call.input.clone()), ("", json!("str")));
    // Wrong-typed envelope fields degrade to "absent" instead of failing the line.
    let b = one(
        r#"{"type":"assistant","uuid":"u","timestamp":"not a time","cwd":1,"version":[],"gitBranch":{},"message":{"id":"m","content":"plain string"}}"#,
    );
    assert_eq!(b.stats, stats(1, 0, 0, 0));
    assert_eq!(
        messages(&b)[0].parts,
        [Part::Text {
            text: "plain string".into()
        }]
    );
    assert_eq!(messages(&b)[0].timestamp, None);
    assert_eq!(b.meta.project_dir, None);
}

#[test]
fn compact_summary_from_text_blocks() {
    let b = one(
        &json!({"type": "user", "uuid": "s1", "isCompactSummary": true, "isVisibleInTranscriptOnly": true,
                "timestamp": "2026-01-01T00:00:00Z",
                "message": {"role": "user", "content": [
                    {"type": "text", "text": "This session is being continued."},
                    {"type": "text", "text": "Summary: done."}]}})
        .to_string(),
    );
    let m: &Message = messages(&b)[0];
    assert_eq!((m.role, m.kind), (Role::System, Kind::Summary));
    assert_eq!(
        m.parts,
        [Part::Text {
            text: "This session is being continued.\nSummary: done.".into()
        }]
    );
    assert_eq!(b.meta.title, None, "a summary is not a title");
}

// ---- hooks ----

fn payload(v: Value) -> Vec<u8> {
    v.to_string().into_bytes()
}

#[test]
fn hook_payloads_for_each_claude_event() {
    let base = |event: &str, extra: Value| {
        let mut v = json!({
            "session_id": "abc123",
            "transcript_path": "/home/u/.claude/projects/-home-u-p/abc123.jsonl",
            "cwd": "/home/u/p",
            "permission_mode": "default",
            "hook_event_name": event,
        });
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    let cases = [
        (
            base(
                "SessionStart",
                json!({"source": "compact", "model": "claude-opus-4-6"}),
            ),
            Some("compact"),
            None,
        ),
        (
            base(
                "Stop",
                json!({"stop_hook_active": false, "last_assistant_message": "done"}),
            ),
            None,
            None,
        ),
        (
            base(
                "SubagentStop",
                json!({"agent_id": "a7f3c21", "agent_type": "Explore",
                "agent_transcript_path": "/home/u/.claude/projects/-home-u-p/abc123/subagents/agent-a7f3c21.jsonl"}),
            ),
            None,
            Some("/home/u/.claude/projects/-home-u-p/abc123/subagents/agent-a7f3c21.jsonl"),
        ),
        (
            base(
                "PreCompact",
                json!({"trigger": "auto", "custom_instructions": ""}),
            ),
            Some("auto"),
            None,
        ),
        (
            base("SessionEnd", json!({"reason": "prompt_input_exit"})),
            Some("prompt_input_exit"),
            None,
        ),
        (
            base("UserPromptSubmit", json!({"prompt": "hello"})),
            None,
            None,
        ),
    ];
    for (v, source, agent_transcript) in cases {
        let ev = parse_hook_payload(&payload(v.clone()), &no_env()).unwrap();
        assert_eq!(ev.agent, Agent::Claude);
        assert_eq!(ev.event, v["hook_event_name"].as_str().unwrap());
        assert_eq!(ev.session_id.as_deref(), Some("abc123"));
        assert_eq!(
            ev.transcript_path.as_deref(),
            Some("/home/u/.claude/projects/-home-u-p/abc123.jsonl")
        );
        assert_eq!(ev.cwd.as_deref(), Some("/home/u/p"));
        assert_eq!(ev.source.as_deref(), source, "{}", ev.event);
        assert_eq!(ev.agent_transcript_path.as_deref(), agent_transcript);
        assert_eq!(ev.extra, v);
    }
}

#[test]
fn hook_payload_errors() {
    assert!(parse_hook_payload(b"", &no_env()).is_err());
    assert!(parse_hook_payload(b"  \n", &no_env()).is_err());
    assert!(parse_hook_payload(b"not json", &no_env()).is_err());
    assert!(parse_hook_payload(b"[1,2]", &no_env()).is_err());
    assert!(parse_hook_payload(b"\"Stop\"", &no_env()).is_err());
    assert!(parse_hook_payload(b"{\"session_id\":", &no_env()).is_err());
    let e = parse_hook_payload(b"{}", &no_env()).unwrap();
    assert_eq!(
        (e.agent, e.event.as_str(), e.session_id),
        (Agent::Claude, "", None)
    );
    let e = parse_hook_payload(b"\xEF\xBB\xBF{\"hook_event_name\":\"Stop\"}\n", &no_env()).unwrap();
    assert_eq!(e.event, "Stop");
}

#[test]
fn vscode_payload_is_detected_and_read() {
    let v = json!({"timestamp": "2026-02-09T10:30:00.000Z", "cwd": "/path/to/workspace",
        "sessionId": "vs-1", "hookEventName": "Stop",
        "transcript_path": "/x/GitHub.copilot-chat/transcripts/vs-1.jsonl", "stop_hook_active": false});
    assert_eq!(detect_caller(&v, &no_env()), Agent::Vscode);
    let ev = parse_hook_payload(&payload(v), &no_env()).unwrap();
    assert_eq!(ev.agent, Agent::Vscode);
    assert_eq!(ev.event, "Stop");
    assert_eq!(ev.session_id.as_deref(), Some("vs-1"));
    assert_eq!(
        ev.transcript_path.as_deref(),
        Some("/x/GitHub.copilot-chat/transcripts/vs-1.jsonl")
    );
    assert_eq!(ev.cwd.as_deref(), Some("/path/to/workspace"));
    let start = json!({"sessionId": "vs-1", "hookEventName": "SessionStart", "source": "new"});
    let ev = parse_hook_payload(&payload(start), &no_env()).unwrap();
    assert_eq!(ev.source.as_deref(), Some("new"));
}

#[test]
fn cursor_payload_is_detected_and_read() {
    let v = json!({"conversation_id": "c-1", "generation_id": "g-1", "model": "m",
        "hook_event_name": "stop", "cursor_version": "2026.02.13-41ac335",
        "workspace_roots": ["file:///home/u/repo"], "user_email": "user@example.com",
        "transcript_path": null, "status": "completed", "loop_count": 0});
    assert_eq!(detect_caller(&v, &no_env()), Agent::Cursor);
    let ev = parse_hook_payload(&payload(v), &no_env()).unwrap();
    assert_eq!(ev.agent, Agent::Cursor);
    assert_eq!(ev.event, "stop");
    assert_eq!(ev.session_id.as_deref(), Some("c-1"));
    assert_eq!(ev.transcript_path, None);
    assert_eq!(ev.cwd.as_deref(), Some("/home/u/repo"));

    let end = json!({"conversation_id": "c-1", "session_id": "c-1", "workspace_roots": ["/r"],
        "hook_event_name": "sessionEnd", "reason": "user_close"});
    let ev = parse_hook_payload(&payload(end), &no_env()).unwrap();
    assert_eq!(
        (ev.agent, ev.source.as_deref()),
        (Agent::Cursor, Some("user_close"))
    );
}

#[test]
fn cursor_environment_marks_a_claude_shaped_payload_as_cursor() {
    let cursor_env = memtrail_adapters::Env::sandbox("/").with_var("CURSOR_VERSION", "2.5.1");
    let dir_env =
        memtrail_adapters::Env::sandbox("/").with_var("CURSOR_PROJECT_DIR", "/home/u/repo");
    let v = json!({"session_id": "s", "hook_event_name": "Stop",
        "transcript_path": "/home/u/.cursor/projects/home-u-repo/agent-transcripts/s.jsonl"});
    assert_eq!(detect_caller(&v, &no_env()), Agent::Claude);
    assert_eq!(detect_caller(&v, &cursor_env), Agent::Cursor);
    assert_eq!(detect_caller(&v, &dir_env), Agent::Cursor);
    let empty_env = memtrail_adapters::Env::sandbox("/").with_var("CURSOR_VERSION", "");
    assert_eq!(detect_caller(&v, &empty_env), Agent::Claude);

    // Claude Code run from a Cursor terminal inherits CURSOR_*: a transcript in a Claude
    // projects folder still means Claude.
    let claude = json!({"session_id": "s", "hook_event_name": "Stop",
        "transcript_path": "/home/u/.claude/projects/-home-u-repo/s.jsonl"});
    assert_eq!(detect_caller(&claude, &cursor_env), Agent::Claude);
    let relocated = json!({"session_id": "s", "hook_event_name": "Stop",
        "transcript_path": "/data/claude/projects/-r/s.jsonl"});
    let both = memtrail_adapters::Env::sandbox("/")
        .with_var("CURSOR_VERSION", "2.5.1")
        .with_var("CLAUDE_CONFIG_DIR", "/data/claude/");
    assert_eq!(detect_caller(&relocated, &both), Agent::Claude);
    assert_eq!(detect_caller(&relocated, &cursor_env), Agent::Cursor);
}

#[test]
fn session_start_reply_shape() {
    let context = "Goal: fix the build.\nFiles: src/lib.rs — \"quoted\" ✅";
    let reply = session_start_reply(context).expect("a reply");
    assert!(!reply.contains('\n'), "one line");
    let v: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(
        v,
        json!({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}})
    );
    assert_eq!(
        session_start_reply("x").as_deref(),
        Some(r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"x"}}"#)
    );
}
