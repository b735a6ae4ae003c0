//! The Cursor agent-transcript reader, identity/discovery, paths and hook payloads, over the
//! project's own fixtures in `fixtures/cursor` (see its README.md) and hand-made lines. Expected
//! values are computed by hand from the fixtures.

use crate::common;

use common::{Lcg, Store, assert_split_equivalence_with, lines, messages, part_text, shape};
use memtrail_adapters::cursor::{
    self, CursorReader, clean_user_text, parse_cursor_timestamp, parse_hook_payload,
    project_dir_from_slug, project_slug, transcripts_for_event_in,
};
use memtrail_adapters::{
    Agent, Batch, Env, HookEvent, Kind, LineReader, ParseStats, Part, Record, Role, SessionRef,
    Source, parse_rfc3339_ms,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/cursor")
}

fn grow(n: u8) -> Vec<u8> {
    std::fs::read(fixtures().join(format!("grow-turn{n}.jsonl"))).expect("grow fixture")
}

fn make() -> Box<dyn LineReader> {
    Box::new(CursorReader::new())
}

fn read_with(mut reader: CursorReader, lines: &[&[u8]]) -> (Batch, CursorReader) {
    let mut batch = Batch::default();
    for l in lines {
        reader.line(l, &mut batch);
    }
    reader.finish(&mut batch);
    (batch, reader)
}

fn read(lines: &[&[u8]]) -> Batch {
    read_with(CursorReader::new(), lines).0
}

fn one(line: &str) -> Batch {
    read(&[line.as_bytes()])
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

const P1: &str = "このリポジトリのテストを実行してください 🧪";
const AR1: &str = "ترجم الملف README إلى العربية من فضلك";
const RU3: &str = "Покажи git diff, пожалуйста 🙏";
const TURN1_IDS: [&str; 6] = ["line-0", "line-1", "line-2", "line-3", "line-4", "line-5"];
const TURN2_IDS: [&str; 3] = ["line-7", "line-8", "line-11"];
const TURN3_IDS: [&str; 5] = ["line-13", "line-14", "line-15", "line-16", "line-17"];

#[test]
fn grow_files_are_byte_prefixes() {
    let (a, b, c) = (grow(1), grow(2), grow(3));
    assert!(b.starts_with(&a) && c.starts_with(&b));
    assert_eq!((a.len(), b.len(), c.len()), (1033, 1953, 2836));
    assert_eq!(
        (lines(&a).len(), lines(&b).len(), lines(&c).len()),
        (7, 13, 19)
    );
}

#[test]
fn split_at_every_line_equals_one_pass_for_own_fixtures() {
    for entry in std::fs::read_dir(fixtures()).unwrap().flatten() {
        let p = entry.path();
        if p.extension().is_some_and(|e| e == "jsonl") {
            let bytes = std::fs::read(&p).unwrap();
            assert_split_equivalence_with(&make, &p.display().to_string(), &bytes);
        }
    }
}

#[test]
fn grow_session_turn_by_turn_with_saved_state_gives_exactly_the_new_messages() {
    let (a, b, c) = (grow(1), grow(2), grow(3));
    let pieces = [&a[..], &b[a.len()..], &c[b.len()..]];
    let expected: [&[&str]; 3] = [&TURN1_IDS, &TURN2_IDS, &TURN3_IDS];
    let expected_stats = [stats(7, 1, 0, 0), stats(6, 1, 1, 1), stats(6, 1, 0, 0)];
    let mut store = Store::default();
    let mut state: Option<Value> = None;
    for (turn, piece) in pieces.iter().enumerate() {
        let mut reader = CursorReader::new();
        if let Some(s) = &state {
            reader.restore_state(s);
        }
        let (batch, reader) = read_with(reader, &lines(piece));
        assert_eq!(ids(&batch), expected[turn], "turn {}", turn + 1);
        assert_eq!(batch.stats, expected_stats[turn], "turn {}", turn + 1);
        state = reader.save_state();
        store.apply(batch);
    }
    assert_eq!(state, Some(json!({"line": 19})));
    assert_eq!(store, Store::read_in_pieces_with(&make, &lines(&c), &[]));
    assert_eq!(store.messages.len(), 14);
    assert_eq!(store.stats, stats(19, 3, 1, 1));
}

#[test]
fn a_reader_started_mid_file_without_state_would_reuse_ids() {
    // Why the line counter is reader state: without it, turn 2 numbers its lines from 0 and
    // would merge into turn 1's messages.
    let (a, b) = (grow(1), grow(2));
    let batch = read(&lines(&b[a.len()..]));
    assert_eq!(ids(&batch), ["line-0", "line-1", "line-4"]);
    let mut reader = CursorReader::new();
    reader.restore_state(&json!({"line": 7}));
    let (batch, _) = read_with(reader, &lines(&b[a.len()..]));
    assert_eq!(ids(&batch), TURN2_IDS);
}

#[test]
fn grow_turn1_messages_and_tool_calls() {
    let b = read(&lines(&grow(1)));
    let ms = messages(&b);
    assert_eq!(ids(&b), TURN1_IDS);
    use Role::{Assistant as A, User as U};
    assert_eq!(
        ms.iter().map(|m| m.role).collect::<Vec<_>>(),
        [U, A, A, A, A, A]
    );
    // <timestamp> and <user_query> removed; the timestamp is 10:00 AM GMT+1 = 09:00Z.
    assert_eq!(ms[0].parts, [Part::Text { text: P1.into() }]);
    assert_eq!(ms[0].timestamp, ts("2026-03-02T09:00:00Z"));
    assert_eq!(ms[0].kind, Kind::Text);

    assert_eq!(shape(ms[1]), ["text", "Shell"]);
    assert_eq!(ms[1].kind, Kind::ToolCall);
    assert_eq!(part_text(ms[1], 0), "テストを実行します。");
    assert_eq!(ms[1].timestamp, None, "Cursor writes no times for answers");
    let shell = ms[1].tool_calls().next().unwrap();
    assert_eq!(shell.id, "line-1-0");
    assert_eq!(shell.tool, "shell");
    assert_eq!(shell.input, json!({"command": "cargo test"}));
    assert_eq!(shell.output, None, "Cursor does not write tool results");
    assert!(!shell.is_error);

    // The failure shows only in the next answer's text.
    assert_eq!(
        ms[2].parts,
        [Part::Text {
            text: "Компиляция не удалась: переменная `x` не определена. Исправляю.".into()
        }]
    );
    let edit = ms[3].tool_calls().next().unwrap();
    assert_eq!(
        (edit.id.as_str(), edit.name.as_str(), edit.tool.as_str()),
        ("line-3-0", "StrReplace", "edit")
    );
    assert_eq!(edit.input["path"], "/home/user/demo/src/lib.rs");
    assert_eq!(ms[4].tool_calls().next().unwrap().id, "line-4-0");
    assert_eq!(
        part_text(ms[5], 0),
        "すべてのテストが通りました ✅ (3 passed)"
    );

    let meta = &b.meta;
    assert_eq!(meta.title.as_deref(), Some(P1));
    assert_eq!(meta.started_at, ts("2026-03-02T09:00:00Z"));
    assert_eq!(meta.updated_at, ts("2026-03-02T09:00:00Z"));
    assert_eq!(
        (
            &meta.project_dir,
            &meta.model,
            &meta.agent_version,
            &meta.git_branch
        ),
        (&None, &None, &None, &None)
    );
    assert!(b.records.iter().all(|r| matches!(r, Record::Message(_))));
}

#[test]
fn grow_turn2_two_calls_in_one_line_unknown_and_malformed() {
    let (a, b) = (grow(1), grow(2));
    let mut reader = CursorReader::new();
    reader.restore_state(&json!({"line": 7}));
    let (batch, _) = read_with(reader, &lines(&b[a.len()..]));
    assert_eq!(batch.stats, stats(6, 1, 1, 1));
    let ms = messages(&batch);
    assert_eq!(ms[0].parts, [Part::Text { text: AR1.into() }]);
    assert_eq!(ms[0].timestamp, ts("2026-03-02T09:05:00Z"));
    assert_eq!(batch.meta.title.as_deref(), Some(AR1));
    assert_eq!(shape(ms[1]), ["text", "Read", "Write"]);
    let calls: Vec<_> = ms[1].tool_calls().collect();
    assert_eq!(
        calls
            .iter()
            .map(|c| (c.id.as_str(), c.tool.as_str()))
            .collect::<Vec<_>>(),
        [("line-8-0", "read"), ("line-8-1", "write")]
    );
    assert_eq!(
        calls[1].input["contents"],
        "# عرض توضيحي\n\nمشروع صغير للاختبار.\n"
    );
    assert_eq!(
        part_text(ms[2], 0),
        "Готово! README переведён на арабский. 🎉"
    );
}

#[test]
fn grow_turn3_parallel_calls_prompt_without_timestamp_and_aborted_turn() {
    let (b, c) = (grow(2), grow(3));
    let mut reader = CursorReader::new();
    reader.restore_state(&json!({"line": 13}));
    let (batch, _) = read_with(reader, &lines(&c[b.len()..]));
    assert_eq!(ids(&batch), TURN3_IDS);
    assert_eq!(batch.stats, stats(6, 1, 0, 0));
    let ms = messages(&batch);
    assert_eq!(ms[0].parts, [Part::Text { text: RU3.into() }]);
    let calls: Vec<_> = ms[1].tool_calls().collect();
    assert_eq!(
        calls
            .iter()
            .map(|c| (c.id.as_str(), c.input["command"].as_str().unwrap()))
            .collect::<Vec<_>>(),
        [
            ("line-14-0", "git diff --stat"),
            ("line-14-1", "git status --short")
        ]
    );
    assert_eq!(
        ms[3].parts,
        [Part::Text {
            text: "Delete the target/ folder, please.".into()
        }]
    );
    assert_eq!(ms[3].timestamp, None, "no <timestamp> element");
    assert_eq!(
        ms[4].tool_calls().next().unwrap().input["command"],
        "rm -rf target"
    );
    assert_eq!(batch.meta.title.as_deref(), Some(RU3));
    assert_eq!(batch.meta.started_at, ts("2026-03-02T09:21:00Z"));
    assert_eq!(batch.meta.updated_at, ts("2026-03-02T09:21:00Z"));
}

#[test]
fn whole_grow_file_meta_and_roles() {
    let store = Store::read_in_pieces_with(&make, &lines(&grow(3)), &[]);
    assert_eq!(store.meta.title.as_deref(), Some(P1));
    assert_eq!(store.meta.started_at, ts("2026-03-02T09:00:00Z"));
    assert_eq!(store.meta.updated_at, ts("2026-03-02T09:21:00Z"));
    use Role::{Assistant as A, User as U};
    assert_eq!(
        store.messages.iter().map(|m| m.role).collect::<Vec<_>>(),
        [U, A, A, A, A, A, U, A, A, U, A, A, U, A]
    );
    let calls: usize = store.messages.iter().map(|m| m.tool_calls().count()).sum();
    assert_eq!(calls, 8);
}

#[test]
fn user_text_cleanup() {
    let t = |s: &str| clean_user_text(s).0;
    assert_eq!(
        t("<user_query>\n\nRead a file\n</user_query>"),
        "Read a file"
    );
    assert_eq!(t("plain prompt  "), "plain prompt");
    // A timestamp the user pasted at the head of the query survives (the wrapper comes first).
    assert_eq!(
        t("<user_query>\n<timestamp>2026-01-01</timestamp> marks when\n</user_query>"),
        "<timestamp>2026-01-01</timestamp> marks when"
    );
    // Only a single-line timestamp at the very start is Cursor's.
    assert_eq!(
        t("<timestamp> element\nand update </timestamp> closers too"),
        "<timestamp> element\nand update </timestamp> closers too"
    );
    assert_eq!(
        t("see <timestamp>a</timestamp> here"),
        "see <timestamp>a</timestamp> here"
    );
    let (text, when) = clean_user_text(
        "<timestamp tz=\"GMT+2\">Tuesday, Aug 18, 2026, 2:37 PM GMT+2</timestamp>\nfix it",
    );
    assert_eq!(text, "fix it");
    assert_eq!(when, ts("2026-08-18T12:37:00Z"));
    // Only the wrapper pair is removed: a pasted <user_query> inside stays.
    assert_eq!(
        t("<user_query>explain <user_query>x</user_query> tags</user_query>"),
        "explain <user_query>x</user_query> tags"
    );
    // Text around the wrapper is kept.
    assert_eq!(
        t("<attached_files>a.rs</attached_files>\n<user_query>\nfix\n</user_query>"),
        "<attached_files>a.rs</attached_files>\n\nfix"
    );
    // An unclosed timestamp is left alone.
    assert_eq!(t("<timestamp>Mon, Mar 2"), "<timestamp>Mon, Mar 2");
}

#[test]
fn cursor_timestamps() {
    let p = parse_cursor_timestamp;
    assert_eq!(
        p("Tuesday, Aug 18, 2026, 2:37 PM GMT+2"),
        ts("2026-08-18T12:37:00Z")
    );
    assert_eq!(
        p("Monday, Mar 2, 2026, 12:05 AM GMT+1"),
        ts("2026-03-01T23:05:00Z")
    );
    assert_eq!(
        p("Monday, March 2, 2026, 12:05 PM UTC"),
        ts("2026-03-02T12:05:00Z")
    );
    assert_eq!(
        p("Mar 2, 2026, 18:30:15 GMT-05:30"),
        ts("2026-03-03T00:00:15Z")
    );
    assert_eq!(p("Mar 2, 2026, 9:00 +0200"), ts("2026-03-02T07:00:00Z"));
    assert_eq!(p("2026-03-02T09:00:00Z"), ts("2026-03-02T09:00:00Z"));
    assert_eq!(
        p("Mar 2, 2026, 9:00 AM"),
        None,
        "no offset: local time unknown"
    );
    assert_eq!(p("Mar 2, 2026, 13:00 PM GMT"), None);
    assert_eq!(p("Foo 2, 2026, 9:00 GMT"), None);
    assert_eq!(p("Mar 32, 2026, 9:00 GMT"), None);
    assert_eq!(p("Mar 2, 2026, 9:00 GMT+99"), None);
    assert_eq!(p(""), None);
    assert_eq!(p("2026-01-01"), None);
}

#[test]
fn stats_and_ids_for_each_line_kind() {
    let cases: [(&str, ParseStats, usize); 14] = [
        (
            r#"{"role":"user","message":{"content":[{"type":"text","text":"hi"}]}}"#,
            stats(1, 0, 0, 0),
            1,
        ),
        (
            r#"{"role":"user","message":{"content":"plain string prompt"}}"#,
            stats(1, 0, 0, 0),
            1,
        ),
        (
            r#"{"role":"user","message":{"content":[{"type":"text","text":"<user_query>\n \n</user_query>"}]}}"#,
            stats(1, 1, 0, 0),
            0,
        ),
        (
            r#"{"role":"user","message":{"content":[{"type":"image","url":"x"}]}}"#,
            stats(1, 1, 0, 0),
            0,
        ),
        (
            r#"{"role":"assistant","message":{"content":[]}}"#,
            stats(1, 1, 0, 0),
            0,
        ),
        (
            r#"{"role":"assistant","message":{"content":[{"type":"tool_result","content":"x"}]}}"#,
            stats(1, 1, 0, 0),
            0,
        ),
        (
            r#"{"role":"system","message":{"content":"You are…"}}"#,
            stats(1, 0, 1, 0),
            0,
        ),
        (
            r#"{"type":"turn_ended","status":"error","error":"boom"}"#,
            stats(1, 1, 0, 0),
            0,
        ),
        (r#"{"type":"checkpoint"}"#, stats(1, 0, 1, 0), 0),
        ("{}", stats(1, 0, 1, 0), 0),
        (r#"[{"role":"user"}]"#, stats(1, 0, 0, 1), 0),
        ("not json", stats(1, 0, 0, 1), 0),
        (r#"{"role":"user","message":"#, stats(1, 0, 0, 1), 0),
        ("   \t", stats(1, 1, 0, 0), 0),
    ];
    for (line, want, n) in cases {
        let b = one(line);
        assert_eq!(b.stats, want, "{line}");
        assert_eq!(messages(&b).len(), n, "{line}");
    }
    // The role may also be inside `message`; thinking blocks; a block's own id is kept.
    let b = one(
        r#"{"message":{"role":"assistant","content":[{"type":"thinking","thinking":" plan "},{"type":"tool_use","id":"toolu_1","name":"Glob","input":{"glob_pattern":"*.rs"}},{"type":"tool_use","input":{}}]}}"#,
    );
    let m = messages(&b)[0];
    assert_eq!(m.role, Role::Assistant);
    assert_eq!(shape(m), ["thinking", "Glob", ""]);
    assert_eq!(part_text(m, 0), "plan");
    let calls: Vec<_> = m.tool_calls().collect();
    assert_eq!(
        (calls[0].id.as_str(), calls[0].tool.as_str()),
        ("toolu_1", "list")
    );
    assert_eq!(
        calls[1].id, "line-0-1",
        "k counts every tool_use block of the line"
    );
    // Blank lines are not numbered (the runtime never passes them); malformed ones are.
    let (b, r) = read_with(
        CursorReader::new(),
        &[
            b"  ",
            b"garbage",
            br#"{"role":"user","message":{"content":"a"}}"#,
        ],
    );
    assert_eq!(ids(&b), ["line-1"]);
    assert_eq!(r.save_state(), Some(json!({"line": 2})));
}

#[test]
fn crlf_and_bom_lines_read_like_plain_ones() {
    let plain = r#"{"role":"user","message":{"content":[{"type":"text","text":"<user_query>hé</user_query>"}]}}"#;
    let crlf = format!("{plain}\r");
    let bom = format!("\u{feff}{plain}");
    for l in [crlf.as_str(), bom.as_str()] {
        let b = one(l);
        assert_eq!(b.stats, stats(1, 0, 0, 0));
        assert_eq!(messages(&b)[0].parts, [Part::Text { text: "hé".into() }]);
    }
}

#[test]
fn restore_state_is_lenient() {
    for s in [
        json!(null),
        json!("x"),
        json!({"line": "7"}),
        json!({"line": -1}),
        json!([1]),
    ] {
        let mut r = CursorReader::new();
        r.restore_state(&s);
        assert_eq!(r.save_state(), Some(json!({"line": 0})), "{s}");
    }
}

#[test]
fn random_bytes_and_mutated_lines_never_panic() {
    let mut rng = Lcg(0xC0550);
    let mut reader = CursorReader::new();
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
        for _ in 0..60 {
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
        }
    }
    reader.finish(&mut batch);
    assert_eq!(batch.stats.lines, n);
    assert!(batch.stats.malformed > 0);
    // Every truncation of every line of the fixture, too.
    for line in lines(&bytes) {
        for cut in 0..line.len() {
            let b = read(&[&line[..cut]]);
            assert_eq!(b.stats.lines, 1);
        }
    }
}

#[test]
fn weird_types_inside_valid_json_never_panic() {
    for line in [
        r#"{"role":5,"type":7,"message":[]}"#,
        r#"{"role":"user","message":{"content":42}}"#,
        r#"{"role":"user","message":{"content":[1,"x",null,{"type":"text","text":9}]}}"#,
        r#"{"role":"assistant","message":{"content":[{"type":"tool_use","id":5,"name":["x"],"input":"s"}]}}"#,
        r#"{"role":"assistant","message":{"content":[{"type":"thinking"},{"type":7}]}}"#,
        r#"{"role":"assistant","message":null}"#,
        r#"{"role":null,"type":null}"#,
        r#"{"role":"user","message":{"content":[{"type":"text","text":"<timestamp>Mar 99, 99999999999, 99:99 PM GMT+1</timestamp>x"}]}}"#,
    ] {
        assert_eq!(one(line).stats.lines, 1, "{line}");
    }
    let b = one(
        r#"{"role":"assistant","message":{"content":[{"type":"tool_use","id":5,"name":["x"],"input":"s"}]}}"#,
    );
    let call = messages(&b)[0].tool_calls().next().unwrap().clone();
    assert_eq!(
        (call.id.as_str(), call.name.as_str(), call.input),
        ("line-0-0", "", json!("s"))
    );
}

// ---- paths, identity, discovery ----

#[test]
fn config_dir_and_projects_dirs_honour_cursor_config_dir() {
    let home = Env::sandbox("/home/u");
    assert_eq!(cursor::config_dir_in(&home), Path::new("/home/u/.cursor"));
    assert_eq!(
        cursor::projects_dirs_in(&home),
        [PathBuf::from("/home/u/.cursor/projects")]
    );
    let relocated = Env::sandbox("/home/u").with_var("CURSOR_CONFIG_DIR", "/data/cursor");
    assert_eq!(cursor::config_dir_in(&relocated), Path::new("/data/cursor"));
    assert_eq!(
        cursor::projects_dirs_in(&relocated),
        [
            PathBuf::from("/data/cursor/projects"),
            PathBuf::from("/home/u/.cursor/projects")
        ]
    );
    let relative = Env::sandbox("/home/u").with_var("CURSOR_CONFIG_DIR", "rel/dir");
    assert_eq!(
        cursor::config_dir_in(&relative),
        Path::new("/home/u/.cursor")
    );
}

#[test]
fn project_slugs() {
    assert_eq!(project_slug("/home/user/demo"), "home-user-demo");
    assert_eq!(project_slug("/home/u/my_app.v2"), "home-u-my-app-v2");
    assert_eq!(project_slug("/home/u/.config/x y"), "home-u--config-x-y");
    assert_eq!(
        project_slug("/tmp/café"),
        "tmp-caf-",
        "one dash per character"
    );
    assert_eq!(project_slug("//srv"), "srv");
    assert_eq!(project_slug("/"), "");
}

#[test]
fn project_dir_is_found_from_a_lossy_slug() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    // Two folders whose slugs start alike; only the full match is the project.
    let target = root.join("my_app.v2").join("sub dir");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::create_dir_all(root.join("my-app")).unwrap();
    let slug = project_slug(&target.to_string_lossy());
    assert_eq!(project_dir_from_slug(&slug), Some(target.clone()));
    assert_eq!(project_dir_from_slug(&format!("{slug}-nope")), None);
    assert_eq!(project_dir_from_slug(""), None);

    // The reader built for a transcript path puts it into the batch meta.
    let transcript = root
        .join(".cursor/projects")
        .join(&slug)
        .join("agent-transcripts/c1.jsonl");
    let reader = CursorReader::for_path(&transcript);
    let (b, _) = read_with(reader, &[br#"{"role":"user","message":{"content":"hi"}}"#]);
    assert_eq!(
        b.meta.project_dir.as_deref(),
        Some(target.to_str().unwrap())
    );
    let (b, _) = read_with(CursorReader::with_project_dir(Some("/w".into())), &[b"{}"]);
    assert_eq!(b.meta.project_dir.as_deref(), Some("/w"));
}

#[test]
fn identify_flat_nested_and_subagent_files() {
    let r = |id: &str, parent: Option<&str>| SessionRef {
        agent: Agent::Cursor,
        external_id: id.to_string(),
        parent_external_id: parent.map(str::to_string),
    };
    let base = Path::new("/h/.cursor/projects/home-u-app/agent-transcripts");
    assert_eq!(
        cursor::identify(&base.join("c1.jsonl")).unwrap(),
        r("c1", None)
    );
    assert_eq!(
        cursor::identify(&base.join("c2/c2.jsonl")).unwrap(),
        r("c2", None)
    );
    assert_eq!(
        cursor::identify(&base.join("c2/subagents/s9.jsonl")).unwrap(),
        r("c2/s9", Some("c2"))
    );
    assert!(cursor::identify(Path::new("/")).is_err());
    assert!(matches!(
        cursor::source_for(&base.join("c1.jsonl")),
        Source::Lines(_)
    ));
}

fn touch(p: &Path, body: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

#[test]
fn discover_lists_conversations_then_subagents() {
    let tmp = tempfile::tempdir().unwrap();
    let projects = tmp.path().join("projects");
    let other = tmp.path().join("other-projects");
    let at = projects.join("home-u-app/agent-transcripts");
    touch(&at.join("c1.jsonl"), "{}\n");
    touch(&at.join("c2/c2.jsonl"), "{}\n");
    touch(&at.join("c2/subagents/s1.jsonl"), "{}\n");
    touch(&at.join("c2/subagents/s0.jsonl"), "{}\n");
    touch(&at.join("c2/subagents/notes.txt"), "x");
    touch(&at.join("c3/readme.md"), "a folder without c3.jsonl");
    touch(&at.join("notes.txt"), "x");
    touch(
        &projects.join("home-u-lib/agent-transcripts/a0.jsonl"),
        "{}\n",
    );
    touch(&projects.join("home-u-lib/other/x.jsonl"), "{}\n");
    touch(&other.join("z-proj/agent-transcripts/z1.jsonl"), "{}\n");
    let found = cursor::discover_in(&[
        projects.clone(),
        tmp.path().join("missing"),
        other.clone(),
        projects.clone(),
    ])
    .unwrap();
    assert_eq!(
        found,
        [
            other.join("z-proj/agent-transcripts/z1.jsonl"),
            at.join("c1.jsonl"),
            at.join("c2/c2.jsonl"),
            projects.join("home-u-lib/agent-transcripts/a0.jsonl"),
            at.join("c2/subagents/s0.jsonl"),
            at.join("c2/subagents/s1.jsonl"),
        ]
    );
    assert!(
        cursor::discover_in(&[tmp.path().join("nope")])
            .unwrap()
            .is_empty()
    );
}

// ---- hooks ----

fn payload(v: Value) -> Vec<u8> {
    v.to_string().into_bytes()
}

fn base(event: &str, extra: Value) -> Value {
    let mut v = json!({
        "conversation_id": "7a1c9e2b-3d4f-4a5b-8c6d-0e1f2a3b4c5d",
        "generation_id": "g-1",
        "model": "gpt-5.2-codex",
        "hook_event_name": event,
        "cursor_version": "2.5.26",
        "workspace_roots": ["/home/u/app"],
        "user_email": "user@example.com",
        "transcript_path": "/home/u/.cursor/projects/home-u-app/agent-transcripts/7a1c9e2b-3d4f-4a5b-8c6d-0e1f2a3b4c5d/7a1c9e2b-3d4f-4a5b-8c6d-0e1f2a3b4c5d.jsonl",
    });
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    v
}

#[test]
fn hook_payloads_for_each_cursor_event() {
    let id = "7a1c9e2b-3d4f-4a5b-8c6d-0e1f2a3b4c5d";
    let cases = [
        (
            base(
                "sessionStart",
                json!({"session_id": id, "is_background_agent": false, "composer_mode": "agent"}),
            ),
            None,
        ),
        (
            base(
                "beforeSubmitPrompt",
                json!({"prompt": "fix it", "attachments": []}),
            ),
            None,
        ),
        (
            base("stop", json!({"status": "completed", "loop_count": 0})),
            None,
        ),
        (base("preCompact", json!({"trigger": "auto"})), Some("auto")),
        (
            base(
                "sessionEnd",
                json!({"session_id": id, "reason": "completed", "duration_ms": 5505, "final_status": "completed"}),
            ),
            Some("completed"),
        ),
    ];
    for (v, source) in cases {
        let ev = parse_hook_payload(&payload(v.clone()), &no_env()).unwrap();
        assert_eq!(ev.agent, Agent::Cursor);
        assert_eq!(ev.event, v["hook_event_name"].as_str().unwrap());
        assert_eq!(ev.session_id.as_deref(), Some(id));
        assert_eq!(ev.transcript_path.as_deref(), v["transcript_path"].as_str());
        assert_eq!(ev.cwd.as_deref(), Some("/home/u/app"));
        assert_eq!(ev.source.as_deref(), source, "{}", ev.event);
        assert_eq!(ev.agent_transcript_path, None);
        assert_eq!(ev.extra, v);
    }
    let stop = parse_hook_payload(
        &payload(base(
            "subagentStop",
            json!({"subagent_id": "s1", "agent_transcript_path": "/t/s1.jsonl", "status": "completed"}),
        )),
        &no_env(),
    )
    .unwrap();
    assert_eq!(stop.agent_transcript_path.as_deref(), Some("/t/s1.jsonl"));
}

#[test]
fn cli_payload_without_transcript_path_and_file_uri_roots() {
    // The CLI sends `transcript_path: null`; the hook environment may name it.
    let v = json!({"conversation_id": "c-1", "hook_event_name": "sessionEnd", "transcript_path": null,
        "workspace_roots": ["file:///home/u/my%20app"], "cursor_version": "2026.02.13-41ac335"});
    let ev = parse_hook_payload(&payload(v.clone()), &no_env()).unwrap();
    assert_eq!(ev.transcript_path, None);
    assert_eq!(ev.cwd.as_deref(), Some("/home/u/my app"));
    let env = memtrail_adapters::Env::sandbox("/")
        .with_var("CURSOR_TRANSCRIPT_PATH", "/t/c-1.jsonl")
        .with_var("CURSOR_PROJECT_DIR", "/env/dir");
    let ev = parse_hook_payload(&payload(v), &env).unwrap();
    assert_eq!(ev.transcript_path.as_deref(), Some("/t/c-1.jsonl"));
    assert_eq!(
        ev.cwd.as_deref(),
        Some("/home/u/my app"),
        "the payload wins"
    );
    let bare = json!({"conversation_id": "c-2", "hook_event_name": "stop"});
    let ev = parse_hook_payload(&payload(bare), &env).unwrap();
    assert_eq!(ev.cwd.as_deref(), Some("/env/dir"));
    // A Windows workspace root.
    let win = json!({"conversation_id": "c", "workspace_roots": ["file:///c%3A/Users/u/app"]});
    let ev = parse_hook_payload(&payload(win), &no_env()).unwrap();
    assert_eq!(ev.cwd.as_deref(), Some("c:/Users/u/app"));
}

#[test]
fn hook_payload_callers_and_errors() {
    let vscode = json!({"sessionId": "s", "hookEventName": "Stop", "transcript_path": "/x.jsonl"});
    assert_eq!(
        parse_hook_payload(&payload(vscode), &no_env())
            .unwrap()
            .agent,
        Agent::Vscode
    );
    let claude = json!({"session_id": "s", "hook_event_name": "Stop",
        "transcript_path": "/home/u/.claude/projects/-home-u-app/s.jsonl"});
    assert_eq!(
        parse_hook_payload(&payload(claude), &no_env())
            .unwrap()
            .agent,
        Agent::Claude
    );
    let minimal = json!({"hook_event_name": "stop"});
    let ev = parse_hook_payload(&payload(minimal), &no_env()).unwrap();
    assert_eq!((ev.agent, ev.session_id), (Agent::Cursor, None));
    for bad in [&b""[..], b" \n", b"nope", b"[1]", b"\"x\"", b"{\"a\":"] {
        assert!(parse_hook_payload(bad, &no_env()).is_err(), "{bad:?}");
    }
    let e = parse_hook_payload(b"\xEF\xBB\xBF{\"hook_event_name\":\"stop\"}", &no_env()).unwrap();
    assert_eq!(e.event, "stop");
}

fn event(transcript: Option<&str>, roots: Value, agent_transcript: Option<&str>) -> HookEvent {
    let mut extra = json!({"conversation_id": "c9", "workspace_roots": roots});
    extra["transcript_path"] = transcript.map_or(Value::Null, |t| json!(t));
    parse_hook_payload(&payload(extra), &no_env())
        .map(|mut e| {
            e.agent_transcript_path = agent_transcript.map(str::to_string);
            e
        })
        .unwrap()
}

#[test]
fn transcripts_for_event_resolves_null_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let projects = tmp.path().join("projects");
    let dirs = [projects.clone()];
    let base = projects.join("home-u-app/agent-transcripts");

    // Nothing on disk yet: the predicted CLI (flat) path.
    let ev = event(None, json!(["/home/u/app"]), None);
    assert_eq!(
        transcripts_for_event_in(&ev, &dirs),
        [base.join("c9.jsonl")]
    );

    // Flat file.
    touch(&base.join("c9.jsonl"), "{}\n");
    assert_eq!(
        transcripts_for_event_in(&ev, &dirs),
        [base.join("c9.jsonl")]
    );

    // Nested folder (IDE) wins over the flat file, with its sub-agents.
    touch(&base.join("c9/c9.jsonl"), "{}\n");
    touch(&base.join("c9/subagents/b.jsonl"), "{}\n");
    touch(&base.join("c9/subagents/a.jsonl"), "{}\n");
    touch(&base.join("c9/subagents/x.txt"), "");
    assert_eq!(
        transcripts_for_event_in(&ev, &dirs),
        [
            base.join("c9/c9.jsonl"),
            base.join("c9/subagents/a.jsonl"),
            base.join("c9/subagents/b.jsonl"),
        ]
    );

    // A slug Cursor truncated: found by conversation id in any project folder.
    let lossy = projects.join("home-u-very-long-proj-3f9a2c1/agent-transcripts");
    touch(&lossy.join("c7.jsonl"), "{}\n");
    let mut ev7 = event(None, json!(["/home/u/very/long/project/path"]), None);
    ev7.session_id = Some("c7".into());
    assert_eq!(
        transcripts_for_event_in(&ev7, &dirs),
        [lossy.join("c7.jsonl")]
    );

    // A given path is used as is; the sub-agents beside a flat file are in `<id>/subagents`.
    let given = base.join("c9.jsonl");
    let ev = event(
        Some(given.to_str().unwrap()),
        json!([]),
        Some("/t/sub.jsonl"),
    );
    assert_eq!(
        transcripts_for_event_in(&ev, &dirs),
        [
            given.clone(),
            base.join("c9/subagents/a.jsonl"),
            base.join("c9/subagents/b.jsonl"),
            PathBuf::from("/t/sub.jsonl"),
        ]
    );

    // Ids that are not plain file names resolve nothing; no roots and no file: nothing.
    for bad in ["../c9", "a/b", "", ".."] {
        let mut e = event(None, json!(["/home/u/app"]), None);
        e.session_id = Some(bad.into());
        assert!(transcripts_for_event_in(&e, &dirs).is_empty(), "{bad}");
    }
    let mut e = event(None, json!([]), None);
    e.cwd = None;
    e.session_id = Some("nothing-here".into());
    assert!(transcripts_for_event_in(&e, &dirs).is_empty());
}

#[test]
fn session_start_reply_shape() {
    let context = "Goal: fix the build.\nFiles: src/lib.rs — \"quoted\" ✅";
    let reply = cursor::session_start_reply(context).unwrap();
    assert!(!reply.contains('\n'));
    let v: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(v, json!({"additional_context": context}));
    assert_eq!(
        cursor::session_start_reply("x").unwrap(),
        r#"{"additional_context":"x"}"#
    );
}

#[test]
fn lines_with_a_cut_emoji_or_bad_utf8_are_repaired_not_lost() {
    let lone = br#"{"role":"user","message":{"content":[{"type":"text","text":"<user_query>cut here \ud83d</user_query>"}]}}"#;
    let b = read(&[&lone[..]]);
    assert_eq!(b.stats, stats(1, 0, 0, 0));
    assert_eq!(
        messages(&b)[0].parts,
        [Part::Text {
            text: "cut here \u{fffd}".into()
        }]
    );
    let bad = b"{\"role\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"caf\xe9\"}]}}";
    let b = read(&[&bad[..]]);
    assert_eq!(part_text(messages(&b)[0], 0), "caf\u{fffd}");
    // Still broken after repair: malformed.
    assert_eq!(
        one(r#"{"role":"user","message":"\ud83d"#).stats,
        stats(1, 0, 0, 1)
    );
}

#[test]
fn discover_reports_folders_it_cannot_list() {
    let tmp = tempfile::tempdir().unwrap();
    let projects = tmp.path().join("projects");
    // A file where a folder is expected cannot be listed (permissions do not stop root).
    touch(&projects.join("p1/agent-transcripts"), "not a folder");
    let at = projects.join("p2/agent-transcripts");
    touch(&at.join("c1/c1.jsonl"), "{}\n");
    touch(&at.join("c1/subagents"), "not a folder");
    touch(&projects.join("stray-file"), "");
    let (files, unreadable) =
        cursor::discover_in_with_errors(std::slice::from_ref(&projects)).unwrap();
    assert_eq!(files, [at.join("c1/c1.jsonl")]);
    assert_eq!(
        unreadable
            .iter()
            .map(|(p, _)| p.clone())
            .collect::<Vec<_>>(),
        [
            projects.join("p1/agent-transcripts"),
            at.join("c1/subagents")
        ]
    );
    assert!(unreadable.iter().all(|(_, why)| !why.is_empty()));
}

/// Issue 11 item 16: Cursor lines have no times; the file's times are their bounds. A message
/// without a `<timestamp>` gets the file's modification time, the session starts no later than
/// the file's creation time (the modification time here: the file was back-dated after it was
/// created), so time filters and `purge` see the session.
#[test]
fn cursor_messages_without_timestamps_take_the_file_times() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("projects/home-user-demo/agent-transcripts");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f.jsonl");
    std::fs::write(
        &path,
        concat!(
            r#"{"role":"user","message":{"content":[{"type":"text","text":"<user_query>\nfix the login bug\n</user_query>"}]}}"#,
            "\n",
            r#"{"role":"assistant","message":{"content":[{"type":"text","text":"Checking."},{"type":"tool_use","name":"Shell","input":{"command":"make"}}]}}"#,
            "\n",
            r#"{"type":"turn_ended","status":"success"}"#,
            "\n"
        ),
    )
    .unwrap();
    // 2026-03-02T09:00:00Z
    let t: i64 = 1_772_442_000_000;
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_millis(t as u64);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(when)
        .unwrap();
    let Source::Lines(mut reader) = cursor::source_for(&path) else {
        panic!("a line reader")
    };
    let bytes = std::fs::read(&path).unwrap();
    let mut b = Batch::default();
    for l in lines(&bytes) {
        reader.line(l, &mut b);
    }
    reader.finish(&mut b);
    let m = messages(&b);
    assert_eq!(m.len(), 2);
    assert_eq!(m[0].timestamp, Some(t));
    assert_eq!(m[1].timestamp, Some(t));
    assert_eq!((b.meta.started_at, b.meta.updated_at), (Some(t), Some(t)));
    // A prompt's own `<timestamp>` still wins.
    let (own, _) = read_with(
        CursorReader::new().with_file_times(Some((t - 5_000, t))),
        &[br#"{"role":"user","message":{"content":[{"type":"text","text":"<timestamp>Monday, Mar 2, 2026, 9:00 AM GMT+0</timestamp>\n<user_query>\nhi\n</user_query>"}]}}"#],
    );
    let own_ts = parse_cursor_timestamp("Monday, Mar 2, 2026, 9:00 AM GMT+0");
    assert_eq!(own_ts, Some(t));
    assert_eq!(messages(&own)[0].timestamp, own_ts);
    assert_eq!(
        (own.meta.started_at, own.meta.updated_at),
        (Some(t - 5_000), Some(t)),
        "the creation time bounds the start"
    );
}
