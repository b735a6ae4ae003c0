//! The Codex rollout reader over the project's own fixtures in `fixtures/codex` (see its
//! README.md) and hand-made lines. Expected values are computed by hand from the fixture lines
//! (line numbers below are 1-based lines of the `*-turn3.jsonl` files).

use crate::common;

use common::{Lcg, Store, assert_split_equivalence_with, lines, messages, part_text, shape};
use memtrail_adapters::codex::CodexReader;
use memtrail_adapters::{
    Batch, Kind, LineReader, Message, ParseStats, Part, Record, Role, ToolCall, parse_rfc3339_ms,
};
use serde_json::{Value, json};
use std::path::PathBuf;

// ---- helpers ----

fn make() -> Box<dyn LineReader> {
    Box::new(CodexReader::new())
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/codex")
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// One reader over `lines`, then `finish`.
fn read(lines: &[&[u8]]) -> Batch {
    let mut reader = CodexReader::new();
    let mut batch = Batch::default();
    for l in lines {
        reader.line(l, &mut batch);
    }
    reader.finish(&mut batch);
    batch
}

fn read_str(text: &str) -> Batch {
    read(&lines(text.as_bytes()))
}

/// Read the whole text in one pass into the store model.
fn store_of(text: &str) -> Store {
    Store::read_in_pieces_with(&make, &lines(text.as_bytes()), &[])
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

fn call(m: &Message, i: usize) -> &ToolCall {
    match &m.parts[i] {
        Part::ToolCall(c) => c,
        other => panic!("part {i} of {} is not a call: {other:?}", m.id),
    }
}

/// A rollout line `{"timestamp","type","payload"}`.
fn line(kind: &str, payload: Value) -> String {
    json!({"timestamp": "2026-05-01T10:00:00.000Z", "type": kind, "payload": payload}).to_string()
}

fn ev(payload: Value) -> String {
    line("event_msg", payload)
}

fn ri(payload: Value) -> String {
    line("response_item", payload)
}

fn text_of(text: &str) -> Part {
    Part::Text { text: text.into() }
}

fn join(lines: &[String]) -> String {
    let mut s = lines.join("\n");
    s.push('\n');
    s
}

// ---- expected content of the fixtures (fixtures/codex/README.md) ----

const L_T1: &str = "019ceb9e-a294-71f0-a4c2-a9e7b3d58e02";
const L_T2: &str = "019ceba0-ce5c-72b1-a7d3-e4f9a0c61b57";
const L_T4: &str = "019ceba4-03a6-74d3-a9f5-a6b1c2e83d79";
const P_U1: &str = "01a0c4b4-efd6-751a-a2b3-c4d5e6f708a9";
const P_U2: &str = "01a0c4ba-3e50-762b-a3c4-d5e6f708192a";
const P_U3: &str = "01a0c4bd-886c-773c-a4d5-e6f70819203b";

const L_P1: &str = "Les tests de slugify échouent avec des titres japonais (« 日本語のタイトル ») — corrige-les, s'il te plaît.";
const L_P2: &str =
    "Найди в интернете, какую версию Unicode поддерживает Rust 1.85, и добавь ссылку в README.";
const L_P4: &str = "شغّل كل الاختبارات مرة أخرى من فضلك، مع clippy أيضًا.";
const L_A1: &str = "Corrigé : `slugify` garde maintenant les lettres non ASCII (« 日本語のタイトル » → `日本語のタイトル`). Les 4 tests passent.";
const L_A2: &str = "Готово: Rust 1.85 поддерживает Unicode 16.0, ссылка добавлена в README. 📚";
const L_C4: &str = "سأشغّل clippy ثم كل الاختبارات الآن.";
const L_A4: &str =
    "فشل clippy بسبب `needless_borrow` في src/slug.rs:14، لذلك لم تُشغَّل الاختبارات. هل أصلحه؟";
const P_Q1: &str = "Переименуй функцию `parse_cfg` в `parse_config` во всём проекте 🙏";
const P_Q2: &str = "运行 cargo clippy，然后查一下 clippy::needless_borrow 的文档。";
const P_Q3: &str = "Corrige el aviso y explícame el cambio en griego, por favor: Τι άλλαξε;";

fn legacy_ids() -> [Vec<String>; 3] {
    [
        vec![
            format!("{L_T1}:user:0"),
            format!("{L_T1}:assistant:0"),
            format!("{L_T1}:assistant:0.1"),
            format!("{L_T1}:assistant:0.2"),
        ],
        vec![
            format!("{L_T2}:user:0"),
            format!("{L_T2}:assistant:0"),
            format!("{L_T2}:assistant:0.1"),
        ],
        vec![
            "compaction:1".to_string(),
            format!("{L_T4}:user:0"),
            format!("{L_T4}:assistant:0"),
            format!("{L_T4}:assistant:0.1"),
        ],
    ]
}

fn paginated_ids() -> [Vec<String>; 3] {
    [
        vec![
            format!("{P_U1}:user:0"),
            format!("{P_U1}:assistant:0"),
            format!("{P_U1}:assistant:0.1"),
        ],
        vec![
            format!("{P_U2}:user:0"),
            format!("{P_U2}:assistant:0"),
            format!("{P_U2}:assistant:0.1"),
        ],
        vec![
            format!("{P_U3}:user:0"),
            "compaction:1".to_string(),
            format!("{P_U3}:assistant:0"),
            format!("{P_U3}:assistant:0.1"),
        ],
    ]
}

/// One answer of the assistant: the assistant messages from `m[from]` up to the next message of
/// another role, joined into one (so its parts can be checked by index, in transcript order), and
/// the shapes of the messages it is stored as (a text or reasoning after a call starts the next).
fn answer(m: &[&Message], from: usize) -> (Message, Vec<Vec<String>>) {
    let steps: Vec<&Message> = m[from..]
        .iter()
        .take_while(|x| x.role == Role::Assistant)
        .copied()
        .collect();
    assert!(!steps.is_empty(), "no assistant message at {from}");
    for (j, s) in steps.iter().enumerate() {
        let want = match j {
            0 => steps[0].id.clone(),
            j => format!("{}.{j}", steps[0].id),
        };
        assert_eq!(s.id, want, "step ids");
    }
    let joined = Message {
        parts: steps.iter().flat_map(|s| s.parts.clone()).collect(),
        kind: Message::infer_kind(
            &steps
                .iter()
                .flat_map(|s| s.parts.clone())
                .collect::<Vec<_>>(),
        ),
        ..steps[0].clone()
    };
    (joined, steps.iter().map(|s| shape(s)).collect())
}

/// The three prefixes of a growing fixture and the new bytes of each turn.
fn grow(prefix: &str) -> [Vec<u8>; 3] {
    [1, 2, 3].map(|n| fixture(&format!("{prefix}-turn{n}.jsonl")))
}

// ---- the fixtures as files ----

#[test]
fn grow_files_are_byte_prefixes() {
    for (prefix, sizes, counts) in [
        ("legacy", [10920, 16166, 22874], [28, 45, 64]),
        ("paginated", [14331, 22266, 28967], [24, 38, 52]),
    ] {
        let [a, b, c] = grow(prefix);
        assert!(b.starts_with(&a) && c.starts_with(&b), "{prefix}");
        assert_eq!([a.len(), b.len(), c.len()], sizes, "{prefix} sizes");
        assert_eq!(
            [lines(&a).len(), lines(&b).len(), lines(&c).len()],
            counts,
            "{prefix} line counts"
        );
        assert!(c.ends_with(b"\n"), "{prefix} ends with a newline");
    }
}

#[test]
fn split_at_every_line_equals_one_pass_for_own_fixtures() {
    let mut n = 0;
    for entry in std::fs::read_dir(fixtures()).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            let bytes = std::fs::read(&path).unwrap();
            assert_split_equivalence_with(&make, &path.display().to_string(), &bytes);
            n += 1;
        }
    }
    assert_eq!(n, 6);
}

#[test]
fn growing_sessions_read_turn_by_turn_give_exactly_the_new_messages() {
    for (prefix, expected, per_turn) in [
        (
            "legacy",
            legacy_ids(),
            [stats(28, 17, 0, 0), stats(17, 9, 1, 1), stats(19, 12, 0, 0)],
        ),
        (
            "paginated",
            paginated_ids(),
            [stats(24, 16, 0, 0), stats(14, 7, 1, 1), stats(14, 9, 0, 0)],
        ),
    ] {
        let [a, b, c] = grow(prefix);
        let pieces = [&a[..], &b[a.len()..], &c[b.len()..]];
        let mut state: Option<Value> = None;
        let mut store = Store::default();
        for (turn, piece) in pieces.iter().enumerate() {
            // A new reader per ingest, continuing from the saved state, as the runtime does.
            let mut reader = CodexReader::new();
            if let Some(s) = &state {
                reader.restore_state(s);
            }
            let mut batch = Batch::default();
            for l in lines(piece) {
                reader.line(l, &mut batch);
            }
            reader.finish(&mut batch);
            state = reader.save_state();
            assert_eq!(ids(&batch), expected[turn], "{prefix} turn {}", turn + 1);
            assert_eq!(batch.stats, per_turn[turn], "{prefix} turn {}", turn + 1);
            assert!(
                batch
                    .records
                    .iter()
                    .all(|r| matches!(r, Record::Message(_))),
                "{prefix}: every output belongs to a call of the same ingest"
            );
            store.apply(batch);
        }
        let whole = Store::read_in_pieces_with(&make, &lines(&c), &[]);
        assert_eq!(store, whole, "{prefix}: ingest by turn equals one pass");
        let n = expected.iter().map(Vec::len).sum::<usize>();
        assert_eq!(n, if prefix == "legacy" { 11 } else { 10 });
        assert_eq!(
            store.messages.len(),
            n,
            "{prefix}: {n} messages, none duplicated"
        );
        assert!(store.orphans.is_empty());
    }
}

// ---- the older shape (legacy history) ----

#[test]
fn legacy_turn1_prompt_reasoning_commentary_failing_exec_patch_and_answer() {
    let b = read(&lines(&grow("legacy")[0]));
    let m = messages(&b);
    assert_eq!(m.len(), 4);
    // Line 8 (event user_message); lines 3, 4 (AGENTS.md, environment context) and 7 (the
    // response_item copy) are not prompts, line 2 (developer) neither.
    assert_eq!((m[0].role, m[0].kind), (Role::User, Kind::Text));
    assert_eq!(m[0].parts, [text_of(L_P1)]);
    assert_eq!(m[0].timestamp, ts("2026-03-14T09:12:48.023Z"));
    // Stored in transcript order: reasoning, commentary and the exec; reasoning, the patch and
    // the rerun; the answer.
    let (joined, steps) = answer(&m, 1);
    assert_eq!(
        steps,
        [
            vec!["thinking", "text", "exec_command"],
            vec!["thinking", "apply_patch", "exec_command"],
            vec!["text"]
        ]
    );
    let a = &joined;
    assert_eq!((a.role, a.kind), (Role::Assistant, Kind::ToolCall));
    assert_eq!(
        shape(a),
        [
            "thinking",
            "text",
            "exec_command",
            "thinking",
            "apply_patch",
            "exec_command",
            "text"
        ]
    );
    assert_eq!(part_text(a, 0), "**Reproducing the failing slug test**");
    assert_eq!(
        part_text(a, 1),
        "Je lance d'abord les tests de `slugify` pour voir l'échec.",
        "commentary is kept"
    );
    assert_eq!(part_text(a, 3), "**Allowing non-ASCII letters**");
    assert_eq!(part_text(a, 6), L_A1, "the final answer, once");
    assert_eq!(a.timestamp, ts("2026-03-14T09:12:51.283Z"), "line 10");
    assert_eq!(a.model.as_deref(), Some("gpt-5.2-codex"));

    let exec = call(a, 2);
    assert_eq!(
        (exec.id.as_str(), exec.tool.as_str()),
        ("call_kS1exec1", "shell")
    );
    assert_eq!(
        exec.input,
        json!({"cmd": "cargo test slugify", "workdir": "/home/user/projects/kana-slug", "yield_time_ms": 10000})
    );
    assert!(exec.is_error, "exit code 101");
    let out = exec.output.as_deref().unwrap();
    assert!(out.starts_with(
        "Chunk ID: 7f3a2c\nWall time: 2.4130 seconds\nProcess exited with code 101\n"
    ));
    assert!(out.contains("test slug::tests::japanese_title ... FAILED"));

    let patch = call(a, 4);
    assert_eq!(
        (patch.id.as_str(), patch.name.as_str(), patch.tool.as_str()),
        ("call_kS1patch1", "apply_patch", "edit")
    );
    let Value::String(p) = &patch.input else {
        panic!("apply_patch input is the raw patch string")
    };
    assert!(p.starts_with("*** Begin Patch\n*** Update File: src/slug.rs\n"));
    assert_eq!(
        patch.output.as_deref(),
        Some("Success. Updated the following files:\nM src/slug.rs\n"),
        "the legacy {{output, metadata}} JSON is unwrapped"
    );
    assert!(!patch.is_error);

    let exec2 = call(a, 5);
    assert_eq!(exec2.id, "call_kS1exec2");
    assert!(!exec2.is_error);
    assert!(
        exec2
            .output
            .as_deref()
            .unwrap()
            .ends_with("test result: ok. 4 passed; 0 failed; 0 ignored\n")
    );
}

#[test]
fn legacy_turn2_web_search_unknown_and_malformed_lines() {
    let [a, b, _] = grow("legacy");
    let batch = read(&lines(&b[a.len()..]));
    let m = messages(&batch);
    assert_eq!(m[0].parts, [text_of(L_P2)]);
    let (joined, steps) = answer(&m, 1);
    assert_eq!(
        steps,
        [vec!["thinking", "web_search", "apply_patch"], vec!["text"]]
    );
    let asst = &joined;
    assert_eq!(
        shape(asst),
        ["thinking", "web_search", "apply_patch", "text"]
    );
    let search = call(asst, 1);
    assert_eq!(
        (search.id.as_str(), search.tool.as_str()),
        ("ws_0c6e1f2a9b8d7c6e", "web_search")
    );
    assert_eq!(
        search.input["query"],
        json!("Rust 1.85 Unicode version char is_alphanumeric")
    );
    assert_eq!(search.output, None, "a web search has no output");
    assert_eq!(
        call(asst, 2).output.as_deref(),
        Some("Success. Updated the following files:\nM README.md\n")
    );
    assert_eq!(part_text(asst, 3), L_A2);
    assert_eq!(
        batch.meta.title.as_deref(),
        Some("Найди в интернете, какую версию Unicode поддерживает Rust 1.85, и добавь ссылку…"),
        "cut to 80 characters"
    );
}

#[test]
fn legacy_turn3_compaction_summary_and_failing_shell() {
    let [_, b, c] = grow("legacy");
    let batch = read(&lines(&c[b.len()..]));
    let m = messages(&batch);
    assert_eq!(
        (m[0].id.as_str(), m[0].role, m[0].kind),
        ("compaction:1", Role::System, Kind::Summary)
    );
    assert!(part_text(m[0], 0).starts_with("Résumé de la session : `slugify` accepte"));
    assert_eq!(m[0].timestamp, ts("2026-03-14T09:18:11.106Z"));
    assert_eq!(m[1].parts, [text_of(L_P4)]);
    let (joined, steps) = answer(&m, 2);
    assert_eq!(steps, [vec!["thinking", "text", "shell"], vec!["text"]]);
    let a = &joined;
    assert_eq!(shape(a), ["thinking", "text", "shell", "text"]);
    assert_eq!(part_text(a, 1), L_C4);
    let shell = call(a, 2);
    assert_eq!(
        (shell.id.as_str(), shell.tool.as_str(), shell.is_error),
        ("call_kS4shell1", "shell", true),
        "metadata.exit_code 101"
    );
    assert_eq!(
        shell.input["command"],
        json!([
            "bash",
            "-lc",
            "cargo clippy --all-targets -- -D warnings && cargo test"
        ])
    );
    assert!(shell.output.as_deref().unwrap().starts_with(
        "error: this expression creates a reference which is immediately dereferenced"
    ));
    assert_eq!(part_text(a, 3), L_A4);
    assert_eq!(batch.meta.title.as_deref(), Some(L_P4));
}

#[test]
fn legacy_whole_file_meta() {
    let b = read(&lines(&grow("legacy")[2]));
    assert_eq!(b.stats, stats(64, 38, 1, 1));
    let meta = &b.meta;
    assert_eq!(
        meta.project_dir.as_deref(),
        Some("/home/user/projects/kana-slug")
    );
    assert_eq!(meta.git_branch.as_deref(), Some("fix/unicode-slugs"));
    assert_eq!(meta.agent_version.as_deref(), Some("0.98.0"));
    assert_eq!(meta.model.as_deref(), Some("gpt-5.2-codex"));
    assert_eq!(
        meta.title.as_deref(),
        Some(
            "Les tests de slugify échouent avec des titres japonais (« 日本語のタイトル ») — corrige…"
        ),
        "first prompt, cut to 80 characters"
    );
    assert_eq!(meta.started_at, ts("2026-03-14T09:12:48.023Z"), "line 8");
    assert_eq!(meta.updated_at, ts("2026-03-14T09:18:48.625Z"), "line 62");
}

// ---- the current shape (paginated history, 0.171) ----

#[test]
fn paginated_turn1_item_completed_and_provenance() {
    let b = read(&lines(&grow("paginated")[0]));
    let m = messages(&b);
    assert_eq!(m.len(), 3);
    // Line 7 (response_item with content_item_kinds ["user.text"]) is emitted, line 8
    // (item_completed UserMessage) is its duplicate; line 4 (AGENTS.md + environment context
    // kinds) and line 3 (developer) are not prompts.
    assert_eq!(m[0].parts, [text_of(P_Q1)]);
    assert_eq!(m[0].timestamp, ts("2026-09-21T16:03:07.409Z"));
    let (joined, steps) = answer(&m, 1);
    assert_eq!(
        steps,
        [
            vec!["thinking", "text", "exec_command", "apply_patch"],
            vec!["text"]
        ]
    );
    let a = &joined;
    assert_eq!(
        shape(a),
        ["thinking", "text", "exec_command", "apply_patch", "text"]
    );
    assert_eq!(part_text(a, 0), "**Finding every call site**");
    assert_eq!(part_text(a, 1), "Ищу все вызовы `parse_cfg`.");
    assert_eq!(
        part_text(a, 4),
        "Готово: `parse_cfg` переименована в `parse_config` в трёх файлах (src/config.rs, src/lib.rs, src/main.rs)."
    );
    assert_eq!(a.timestamp, ts("2026-09-21T16:03:10.359Z"), "line 9");
    assert_eq!(a.model.as_deref(), Some("gpt-5.6-terra"));
    let rg = call(a, 2);
    assert_eq!((rg.id.as_str(), rg.is_error), ("call_p1rgA7wq2", false));
    assert!(
        rg.output
            .as_deref()
            .unwrap()
            .ends_with("src/main.rs:8:    let cfg = tomlette::parse_cfg(&text)?;\n")
    );
    let patch = call(a, 3);
    assert_eq!(patch.id, "call_p1patchQ3");
    assert_eq!(
        patch.output.as_deref(),
        Some(
            "Success. Updated the following files:\nM src/config.rs\nM src/lib.rs\nM src/main.rs\n"
        ),
        "output as an array of input_text items"
    );
    assert_eq!(b.stats, stats(24, 16, 0, 0));
}

#[test]
fn paginated_turn2_keeps_only_user_text_and_marks_the_failed_clippy() {
    let [a, b, _] = grow("paginated");
    let batch = read(&lines(&b[a.len()..]));
    let m = messages(&batch);
    assert_eq!(
        m[0].parts,
        [text_of(P_Q2)],
        "the environment_context entry of line 27 is dropped"
    );
    let (joined, steps) = answer(&m, 1);
    assert_eq!(steps, [vec!["exec_command", "web_search"], vec!["text"]]);
    let asst = &joined;
    assert_eq!(shape(asst), ["exec_command", "web_search", "text"]);
    let clippy = call(asst, 0);
    assert_eq!(
        (clippy.id.as_str(), clippy.is_error),
        ("call_p2clipZ9", true)
    );
    assert!(
        clippy
            .output
            .as_deref()
            .unwrap()
            .contains("#needless_borrow")
    );
    let search = call(asst, 1);
    assert_eq!(search.id, "ws_0b7e91d2c4a5f6e70169c0a2e3d9e7f8");
    assert_eq!(
        search.input["queries"],
        json!([
            "clippy needless_borrow",
            "rust-clippy needless_borrow lint documentation"
        ])
    );
    assert!(part_text(asst, 2).starts_with("clippy 报错：src/main.rs:8"));
    assert_eq!(batch.stats, stats(14, 7, 1, 1));
}

#[test]
fn paginated_turn3_compaction_inside_the_turn_and_empty_reasoning() {
    let [_, b, c] = grow("paginated");
    let batch = read(&lines(&c[b.len()..]));
    let m = messages(&batch);
    assert_eq!(m[0].parts, [text_of(P_Q3)]);
    assert_eq!((m[1].role, m[1].kind), (Role::System, Kind::Summary));
    assert!(part_text(m[1], 0).starts_with("Σύνοψη: η parse_cfg μετονομάστηκε"));
    let (joined, steps) = answer(&m, 2);
    assert_eq!(steps, [vec!["apply_patch"], vec!["text"]]);
    let a = &joined;
    assert_eq!(
        shape(a),
        ["apply_patch", "text"],
        "reasoning without summary adds nothing"
    );
    assert_eq!(
        call(a, 0).output.as_deref(),
        Some("Success. Updated the following files:\nM src/main.rs\n")
    );
    assert!(part_text(a, 1).starts_with("Αφαίρεσα τον περιττό δανεισμό"));
}

#[test]
fn paginated_whole_file_meta() {
    let b = read(&lines(&grow("paginated")[2]));
    assert_eq!(b.stats, stats(52, 32, 1, 1));
    let meta = &b.meta;
    assert_eq!(meta.project_dir.as_deref(), Some("/home/user/src/tomlette"));
    assert_eq!(meta.git_branch.as_deref(), Some("main"));
    assert_eq!(meta.agent_version.as_deref(), Some("0.171.0"));
    assert_eq!(meta.model.as_deref(), Some("gpt-5.6-terra"));
    assert_eq!(meta.title.as_deref(), Some(P_Q1));
    assert_eq!(meta.started_at, ts("2026-09-21T16:03:07.409Z"), "line 7");
    assert_eq!(meta.updated_at, ts("2026-09-21T16:12:47.832Z"), "line 50");
}

// ---- double writes ----

#[test]
fn double_writes_map_to_one_item_in_any_order_without_comparing_texts() {
    let start = ev(json!({"type": "task_started", "turn_id": "t1"}));
    let evt = |t: &str| ev(json!({"type": "agent_message", "message": t}));
    let resp = |t: &str| {
        ri(json!({"type": "message", "role": "assistant",
                  "content": [{"type": "output_text", "text": t}]}))
    };
    let item = |t: &str| {
        ev(json!({"type": "item_completed", "turn_id": "t1",
                  "item": {"type": "AgentMessage", "id": "x", "content": [{"type": "Text", "text": t}]}}))
    };
    // Event first, response first, interleaved, and three sources: always two texts, the first
    // write of each wins even when the copies differ (as in the redacted 0.104 fixtures).
    for order in [
        vec![
            start.clone(),
            evt("one"),
            resp("ONE"),
            evt("two"),
            resp("TWO"),
        ],
        vec![
            start.clone(),
            resp("one"),
            evt("ONE"),
            resp("two"),
            evt("TWO"),
        ],
        vec![
            start.clone(),
            evt("one"),
            evt("two"),
            resp("ONE"),
            resp("TWO"),
        ],
        vec![
            start.clone(),
            item("one"),
            resp("ONE"),
            evt("1"),
            resp("two"),
            item("TWO"),
            evt("2"),
        ],
    ] {
        let text = join(&order);
        let s = store_of(&text);
        assert_eq!(s.messages.len(), 1);
        assert_eq!(
            s.messages[0].parts,
            [text_of("one"), text_of("two")],
            "{text}"
        );
        assert_split_equivalence_with(&make, "double writes", text.as_bytes());
    }
    // Empty texts are not items in any source.
    let s = store_of(&join(&[start, evt("  "), resp("a"), evt("a")]));
    assert_eq!(s.messages[0].parts, [text_of("a")]);
}

#[test]
fn reasoning_summaries_dedup_per_entry() {
    let lines_ = [
        ev(json!({"type": "task_started", "turn_id": "t"})),
        ev(json!({"type": "agent_reasoning", "text": "**A**"})),
        ev(json!({"type": "agent_reasoning", "text": "**B**"})),
        ri(json!({"type": "reasoning", "summary": [
            {"type": "summary_text", "text": "**A**"}, {"type": "summary_text", "text": "**B**"}],
            "content": null, "encrypted_content": "gAAA"})),
        ev(json!({"type": "item_completed", "turn_id": "t",
                  "item": {"type": "Reasoning", "id": "rs", "summary_text": ["a", "b", "**C**"]}})),
    ];
    let b = read_str(&join(&lines_));
    let m = messages(&b);
    assert_eq!(
        m[0].parts,
        [
            Part::Thinking {
                text: "**A**".into()
            },
            Part::Thinking {
                text: "**B**".into()
            },
            Part::Thinking {
                text: "**C**".into()
            },
        ]
    );
    assert_eq!(m[0].kind, Kind::Thinking);
    assert_eq!(
        b.stats,
        stats(5, 2, 0, 0),
        "task_started + the response_item"
    );
}

#[test]
fn prompt_sent_during_a_turn_opens_a_new_assistant_segment() {
    let text = join(&[
        ev(json!({"type": "task_started", "turn_id": "t"})),
        ev(json!({"type": "user_message", "message": "first"})),
        ev(json!({"type": "agent_message", "message": "working"})),
        ev(json!({"type": "user_message", "message": "also do X"})),
        ev(json!({"type": "agent_message", "message": "done, X too"})),
    ]);
    let b = read_str(&text);
    assert_eq!(
        ids(&b),
        ["t:user:0", "t:assistant:0", "t:user:1", "t:assistant:1"]
    );
}

// ---- turns without ids (≤ 0.4x) and the first, envelope-less format ----

#[test]
fn rollouts_without_turn_ids_number_their_turns() {
    let text = join(&[
        line(
            "session_meta",
            json!({"id": "s", "cwd": "/p", "cli_version": "0.36.0"}),
        ),
        ri(
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}),
        ),
        ev(json!({"type": "user_message", "message": "hello", "kind": "plain"})),
        line("turn_context", json!({"cwd": "/p", "model": "gpt-5"})),
        ev(json!({"type": "agent_message", "message": "hi"})),
        ri(
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}),
        ),
        ev(json!({"type": "user_message", "message": "again"})),
        ev(json!({"type": "user_message", "message": "and more"})),
        ev(json!({"type": "agent_message", "message": "ok"})),
    ]);
    let b = read_str(&text);
    assert_eq!(
        ids(&b),
        [
            "seq-1:user:0",
            "seq-1:assistant:0",
            "seq-2:user:0",
            "seq-2:user:1",
            "seq-2:assistant:1"
        ]
    );
    assert_eq!(messages(&b)[1].model.as_deref(), Some("gpt-5"));
    assert_split_equivalence_with(&make, "no turn ids", text.as_bytes());
}

#[test]
fn first_rollout_format_with_bare_items() {
    let text = [
        r#"{"id":"0198aa00-1111-7222-8333-444455556666","timestamp":"2025-07-01T10:00:00.000Z","instructions":null}"#,
        r#"{"record_type":"state"}"#,
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"<user_instructions>\nbe brief\n</user_instructions>"}]}"#,
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n<cwd>/p</cwd>\n</environment_context>"}]}"#,
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"list the files"}]}"#,
        r#"{"type":"local_shell_call","id":"lsh_1","call_id":"call_1","status":"completed","action":{"type":"exec","command":["ls"]}}"#,
        r#"{"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"a\\nb\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.01}}"}"#,
        r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a and b"}]}"#,
        r#"{"record_type":"state"}"#,
    ]
    .join("\n");
    let b = read_str(&text);
    assert_eq!(
        ids(&b),
        ["seq-1:user:0", "seq-1:assistant:0", "seq-1:assistant:0.1"]
    );
    let m = messages(&b);
    assert_eq!(m[0].parts, [text_of("list the files")]);
    assert_eq!(
        m[2].parts,
        [text_of("a and b")],
        "the answer after the call"
    );
    let c = call(m[1], 0);
    assert_eq!(
        (c.name.as_str(), c.tool.as_str(), c.output.as_deref()),
        ("local_shell", "shell", Some("a\nb\n"))
    );
    assert_eq!(c.input, json!({"type": "exec", "command": ["ls"]}));
    assert_eq!(b.stats, stats(9, 5, 0, 0));
}

// ---- what is never a prompt ----

#[test]
fn injected_context_is_never_a_user_message() {
    let start = ev(json!({"type": "task_started", "turn_id": "t"}));
    let user_ev = |m: &str| ev(json!({"type": "user_message", "message": m}));
    for injected in [
        "<environment_context>\n  <cwd>/p</cwd>\n</environment_context>",
        "<user_instructions>\nAlways answer in French.\n</user_instructions>",
        "<permissions instructions>\nsandbox\n</permissions instructions>",
        "# AGENTS.md instructions for /p\n\n<INSTRUCTIONS>\nx\n</INSTRUCTIONS>",
        "<skill>\n<name>pdf</name>\n</skill>",
        "<user_shell_command>\nls\n</user_shell_command>",
        "<turn_aborted>\nThe user interrupted.\n</turn_aborted>",
        "   ",
    ] {
        let b = read_str(&join(&[start.clone(), user_ev(injected)]));
        assert!(ids(&b).is_empty(), "{injected:?}");
        assert_eq!(b.stats, stats(2, 2, 0, 0));
    }
    let cases = [
        // kind other than plain (0.3x)
        ev(
            json!({"type": "user_message", "message": "<environment_context/>", "kind": "environment_context"}),
        ),
        // developer role, with and without provenance
        ri(
            json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be nice"}]}),
        ),
        ri(
            json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "x"}],
                  "internal_chat_message_metadata_passthrough": {"content_item_kinds": ["hooks.additional_context"]}}),
        ),
        // legacy user response_item (no provenance): the event is the prompt source
        ri(
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}),
        ),
        // paginated user item whose provenance is all context
        ri(json!({"type": "message", "role": "user",
                  "content": [{"type": "input_text", "text": "AGENTS"}, {"type": "input_text", "text": "env"}],
                  "internal_chat_message_metadata_passthrough": {"turn_id": "t",
                      "content_item_kinds": ["agents_md.instructions", "environments.environment_context"]}})),
        // paginated with only a turn id (no kinds)
        ri(
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}],
                  "internal_chat_message_metadata_passthrough": {"turn_id": "t"}}),
        ),
        // a hook prompt item
        ev(
            json!({"type": "item_completed", "item": {"type": "HookPrompt", "id": "h", "fragments": []}}),
        ),
    ];
    for case in cases {
        let b = read_str(&join(&[start.clone(), case.clone()]));
        assert!(ids(&b).is_empty(), "{case}");
        assert_eq!(b.stats, stats(2, 2, 0, 0), "{case}");
    }
}

#[test]
fn prompt_cleanup_and_images() {
    let start = ev(json!({"type": "task_started", "turn_id": "t"}));
    let one = |l: String| {
        let b = read_str(&join(&[start.clone(), l]));
        messages(&b).first().map(|m| part_text(m, 0).to_string())
    };
    assert_eq!(
        one(ev(json!({"type": "user_message",
            "message": "<user_instructions>x</user_instructions>\n\n## My request for Codex:\n  fix the bug \n"}))),
        Some("fix the bug".into()),
        "old prompts after the request heading"
    );
    assert_eq!(
        one(ev(
            json!({"type": "user_message", "message": "", "images": ["data:image/png;base64,AA=="]})
        )),
        Some("[image]".into())
    );
    assert_eq!(
        one(ev(
            json!({"type": "user_message", "message": "", "local_images": ["/tmp/a.png"]})
        )),
        Some("[image]".into())
    );
    assert_eq!(
        one(ev(
            json!({"type": "item_completed", "item": {"type": "UserMessage", "id": "u",
            "content": [{"type": "local_image", "path": "/tmp/a.png"}]}})
        )),
        Some("[image]".into())
    );
    assert_eq!(
        one(ri(json!({"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "<image name=[Image #1]>"}, {"type": "input_image", "image_url": "data:x"}, {"type": "input_text", "text": "</image>"}],
            "internal_chat_message_metadata_passthrough": {"content_item_kinds": ["user.image_open_tag", "user.image", "user.image_close_tag"]}}))),
        Some("[image]".into())
    );
    assert_eq!(
        one(ev(
            json!({"type": "item_completed", "item": {"type": "UserMessage", "id": "u",
            "content": [{"type": "text", "text": "look at "}, {"type": "image", "image_url": "data:x"}, {"type": "text", "text": "this"}]}})
        )),
        Some("look at this".into()),
        "UserMessage texts are joined as Codex joins them"
    );
}

// ---- tool outputs and errors ----

#[test]
fn tool_output_shapes_and_error_detection() {
    let start = ev(json!({"type": "task_started", "turn_id": "t"}));
    let fc = ri(
        json!({"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"x\"}", "call_id": "c"}),
    );
    let result = |output: Value| -> (Option<String>, bool) {
        let out = ri(json!({"type": "function_call_output", "call_id": "c", "output": output}));
        let b = read_str(&join(&[start.clone(), fc.clone(), out]));
        let c = call(messages(&b)[0], 0).clone();
        (c.output, c.is_error)
    };
    assert_eq!(
        result(json!(
            "Exit code: 2\nWall time: 0.1 seconds\nOutput:\nno such file\n"
        )),
        (
            Some("Exit code: 2\nWall time: 0.1 seconds\nOutput:\nno such file\n".into()),
            true
        )
    );
    assert!(!result(json!("Exit code: 0\nOutput:\nok\n")).1);
    assert!(
        !result(json!("Output:\nProcess exited with code 1\n")).1,
        "an exit line inside the output is not the header"
    );
    assert_eq!(
        result(json!({"content": "err: timeout", "success": false})),
        (Some("err: timeout".into()), true)
    );
    assert_eq!(
        result(
            json!([{"type": "input_text", "text": "Script completed\nOutput:\n"},
                      {"type": "input_text", "text": "line"},
                      {"type": "input_image", "image_url": "data:x"}])
        ),
        (
            Some("Script completed\nOutput:\nline\n[image]".into()),
            false
        )
    );
    assert_eq!(
        result(json!(
            "{\"output\":\"boom\",\"metadata\":{\"exit_code\":1}}"
        )),
        (Some("boom".into()), true)
    );
    assert_eq!(
        result(json!("{\"not\":\"the legacy shape\"}")),
        (Some("{\"not\":\"the legacy shape\"}".into()), false)
    );
    assert_eq!(result(Value::Null), (Some(String::new()), false));
    assert_eq!(result(json!(42)), (Some("42".into()), false));

    // Non-JSON arguments are kept as a string.
    let b = read_str(&join(&[
        start.clone(),
        ri(
            json!({"type": "function_call", "name": "mcp__gh__issue", "arguments": "[REDACTED]", "call_id": "c"}),
        ),
    ]));
    let c = call(messages(&b)[0], 0);
    assert_eq!(
        (c.input.clone(), c.tool.as_str(), c.output.clone()),
        (json!("[REDACTED]"), "mcp", None)
    );
}

/// Codex 0.171 offers each MCP server's tools as a namespace and writes the call as
/// `{"name": "search", "namespace": "mcp__memtrail"}` (a real rollout of `codex exec` calling
/// memtrail's MCP `search`). It is an MCP call named as before (`mcp__memtrail__search`), not
/// a built-in tool of the bare name; another namespace keeps the bare name.
#[test]
fn a_namespaced_mcp_call_keeps_its_server() {
    let start = ev(json!({"type": "task_started", "turn_id": "t"}));
    let b = read_str(&join(&[
        start,
        ri(
            json!({"type": "function_call", "status": "completed", "id": "fc_1", "name": "search",
                   "namespace": "mcp__memtrail", "arguments": "{\"query\": \"notes\"}", "call_id": "c1"}),
        ),
        ri(
            json!({"type": "function_call", "name": "read_file", "namespace": "mcp__filesystem",
                   "arguments": "{\"path\": \"/etc/hosts\"}", "call_id": "c2"}),
        ),
        ri(
            json!({"type": "function_call", "name": "spawn_agent", "namespace": "multi_agent_v1",
                   "arguments": "{}", "call_id": "c3"}),
        ),
        ri(
            json!({"type": "function_call", "name": "mcp__gh__issue", "namespace": "mcp__gh",
                   "arguments": "{}", "call_id": "c4"}),
        ),
    ]));
    let m = messages(&b)[0];
    let named = |i: usize| (call(m, i).name.as_str(), call(m, i).tool.as_str());
    assert_eq!(named(0), ("mcp__memtrail__search", "mcp"));
    assert_eq!(named(1), ("mcp__filesystem__read_file", "mcp"));
    assert_eq!(named(2), ("spawn_agent", "spawn_agent"));
    assert_eq!(named(3), ("mcp__gh__issue", "mcp"));
}

#[test]
fn failures_reported_before_the_output_mark_the_call() {
    let start = ev(json!({"type": "task_started", "turn_id": "t"}));
    let fc = |id: &str| {
        ri(
            json!({"type": "function_call", "name": "shell_command", "arguments": "{}", "call_id": id}),
        )
    };
    let out =
        |id: &str| ri(json!({"type": "function_call_output", "call_id": id, "output": "plain"}));
    for failure in [
        ev(json!({"type": "exec_command_end", "call_id": "c", "exit_code": 127})),
        ev(json!({"type": "patch_apply_end", "call_id": "c", "success": false})),
        ev(json!({"type": "mcp_tool_call_end", "call_id": "c", "result": {"Err": "timeout"}})),
        ev(
            json!({"type": "mcp_tool_call_end", "call_id": "c", "result": {"Ok": {"content": [], "isError": true}}}),
        ),
        ev(
            json!({"type": "item_completed", "item": {"type": "CommandExecution", "id": "c", "exitCode": 1, "status": "completed"}}),
        ),
        ev(
            json!({"type": "item_completed", "item": {"type": "CommandExecution", "id": "c", "status": "declined"}}),
        ),
        ev(
            json!({"type": "item_completed", "item": {"type": "FileChange", "id": "c", "status": "failed"}}),
        ),
        ev(
            json!({"type": "item_completed", "item": {"type": "McpToolCall", "id": "c", "status": "completed", "error": {"message": "x"}}}),
        ),
        ev(
            json!({"type": "item_completed", "item": {"type": "DynamicToolCall", "id": "c", "success": false}}),
        ),
    ] {
        let text = join(&[
            start.clone(),
            fc("c"),
            failure.clone(),
            out("c"),
            fc("d"),
            out("d"),
        ]);
        let b = read_str(&text);
        let m = messages(&b)[0];
        assert!(call(m, 0).is_error, "{failure}");
        assert!(!call(m, 1).is_error, "only the reported call: {failure}");
        assert_eq!(call(m, 0).tool, "shell");
        assert_split_equivalence_with(&make, "failure", text.as_bytes());
    }
    for success in [
        ev(json!({"type": "exec_command_end", "call_id": "c", "exit_code": 0})),
        ev(json!({"type": "patch_apply_end", "call_id": "c", "success": true})),
        ev(
            json!({"type": "mcp_tool_call_end", "call_id": "c", "result": {"Ok": {"content": [], "isError": false}}}),
        ),
        ev(
            json!({"type": "item_completed", "item": {"type": "CommandExecution", "id": "c", "exit_code": 0, "status": "completed"}}),
        ),
    ] {
        let b = read_str(&join(&[start.clone(), fc("c"), success.clone(), out("c")]));
        assert!(!call(messages(&b)[0], 0).is_error, "{success}");
    }
}

#[test]
fn other_tool_items() {
    let text = join(&[
        ev(json!({"type": "task_started", "turn_id": "t"})),
        ri(
            json!({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "a"}}),
        ),
        ri(json!({"type": "web_search_call", "status": "completed"})),
        ri(
            json!({"type": "image_generation_call", "id": "ig_1", "status": "completed", "revised_prompt": "a cat", "result": "iVBORw0KGgo="}),
        ),
        ri(
            json!({"type": "tool_search_call", "call_id": "ts", "execution": "client", "arguments": {"query": "pdf"}}),
        ),
        ri(
            json!({"type": "tool_search_output", "call_id": "ts", "status": "completed", "execution": "client", "tools": [{"name": "pdf"}]}),
        ),
        ri(
            json!({"type": "custom_tool_call", "call_id": "cc", "name": "exec", "input": "const r = 1;"}),
        ),
        ri(
            json!({"type": "custom_tool_call_output", "call_id": "cc", "output": "Script completed\nWall time 0.1 seconds\nOutput:\n"}),
        ),
    ]);
    let b = read_str(&text);
    let m = messages(&b)[0];
    assert_eq!(
        shape(m),
        [
            "web_search",
            "web_search",
            "image_generation",
            "tool_search",
            "exec"
        ]
    );
    assert_eq!(call(m, 0).id, "t:web_search:1");
    assert_eq!(call(m, 1).id, "t:web_search:2");
    assert_eq!(call(m, 1).input, json!({}));
    let img = call(m, 2);
    assert_eq!(
        (img.id.as_str(), img.input.clone(), img.output.as_deref()),
        ("ig_1", json!({"revised_prompt": "a cat"}), Some("[image]")),
        "never the image bytes"
    );
    assert_eq!(call(m, 3).output.as_deref(), Some(r#"[{"name":"pdf"}]"#));
    assert_eq!(call(m, 4).input, json!("const r = 1;"));
    assert_eq!(b.stats, stats(8, 1, 0, 0));
}

#[test]
fn inter_agent_messages_are_system_messages() {
    let b = read_str(&join(&[
        ri(
            json!({"type": "agent_message", "id": "amsg_1", "author": "/root/review", "recipient": "/root",
                  "content": [{"type": "input_text", "text": "Message Type: FINAL_ANSWER\nPASS"},
                              {"type": "encrypted_content", "encrypted_content": "gAAA"}]}),
        ),
        ri(
            json!({"type": "agent_message", "author": "/root/x", "content": [{"type": "input_text", "text": "hi"}]}),
        ),
        ri(
            json!({"type": "agent_message", "author": "/root/x", "content": [{"type": "encrypted_content", "encrypted_content": "gAAA"}]}),
        ),
    ]));
    assert_eq!(ids(&b), ["amsg_1", "agent-message:1"]);
    let m = messages(&b);
    assert_eq!(
        (m[0].role, m[0].parts.clone()),
        (
            Role::System,
            vec![text_of("Message Type: FINAL_ANSWER\nPASS")]
        )
    );
    assert_eq!(b.stats, stats(3, 1, 0, 0));
}

// ---- interruption, rollback, compaction ----

#[test]
fn output_in_a_later_ingest_completes_the_call() {
    let first = join(&[
        ev(json!({"type": "task_started", "turn_id": "t"})),
        ev(json!({"type": "user_message", "message": "run it"})),
        ri(
            json!({"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c"}),
        ),
    ]);
    let second = join(&[
        ri(json!({"type": "function_call_output", "call_id": "c", "output": "done"})),
        ev(json!({"type": "agent_message", "message": "finished"})),
        ri(
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "finished"}]}),
        ),
    ]);
    let mut r = CodexReader::new();
    let mut b1 = Batch::default();
    for l in lines(first.as_bytes()) {
        r.line(l, &mut b1);
    }
    r.finish(&mut b1);
    let state = r.save_state().unwrap();
    let mut r2 = CodexReader::new();
    r2.restore_state(&state);
    let mut b2 = Batch::default();
    for l in lines(second.as_bytes()) {
        r2.line(l, &mut b2);
    }
    r2.finish(&mut b2);
    assert_eq!(
        b2.records[0],
        Record::ToolResult {
            call_id: "c".into(),
            output: "done".into(),
            is_error: false,
            timestamp: ts("2026-05-01T10:00:00.000Z"),
            exit_code: None,
        }
    );
    assert_eq!(
        ids(&b2),
        ["t:assistant:0.1"],
        "the answer after the call's output is the next message"
    );
    let mut store = Store::default();
    store.apply(b1);
    store.apply(b2);
    assert_eq!(store.messages.len(), 3);
    assert_eq!(store.messages[2].parts, [text_of("finished")]);
    assert_eq!(
        store.messages[1].parts,
        [Part::ToolCall(ToolCall {
            id: "c".into(),
            name: "exec_command".into(),
            tool: "shell".into(),
            input: json!({}),
            output: Some("done".into()),
            is_error: false,
            exit_code: None,
        }),]
    );
}

/// Issue 11 item 11: a turn is stored in transcript order (text → call → output → text → call →
/// output → text gives `[text, call]`, `[text, call]`, `[text]`, as Claude Code's one message per
/// model response), and what a turn writes before its prompt (here: an auto-compaction at the
/// start of the turn, its summary and a progress note) stays before the prompt, the answer after.
#[test]
fn a_turn_is_stored_in_transcript_order_and_its_answer_after_its_prompt() {
    let text = |t: &str| {
        ri(
            json!({"type": "message", "role": "assistant", "phase": "commentary",
                  "content": [{"type": "output_text", "text": t}]}),
        )
    };
    let fcall = |id: &str, cmd: &str| {
        ri(
            json!({"type": "function_call", "name": "exec_command", "call_id": id,
                  "arguments": json!({"cmd": cmd}).to_string()}),
        )
    };
    let output = |id: &str, out: &str| {
        ri(json!({"type": "function_call_output", "call_id": id,
                  "output": format!("Process exited with code 0\nOutput:\n{out}")}))
    };
    let rollout = join(&[
        ev(json!({"type": "task_started", "turn_id": "t"})),
        line(
            "compacted",
            json!({"message": "Summary: the parser was rewritten.", "replacement_history": []}),
        ),
        text("Context compacted; continuing."),
        ev(json!({"type": "user_message", "message": "now run the tests"})),
        text("Running the tests."),
        fcall("c1", "cargo test"),
        output("c1", "1 failed"),
        text("One test fails; fixing it."),
        fcall("c2", "cargo test --lib"),
        output("c2", "ok"),
        text("All tests pass."),
        ev(json!({"type": "task_complete", "turn_id": "t"})),
    ]);
    let b = read_str(&rollout);
    assert_eq!(
        ids(&b),
        [
            "compaction:1",
            "t:assistant:pre",
            "t:user:0",
            "t:assistant:0",
            "t:assistant:0.1",
            "t:assistant:0.2"
        ]
    );
    let m = messages(&b);
    assert_eq!(m[1].parts, [text_of("Context compacted; continuing.")]);
    assert_eq!(m[2].parts, [text_of("now run the tests")]);
    assert_eq!(shape(m[3]), ["text", "exec_command"]);
    assert_eq!(part_text(m[3], 0), "Running the tests.");
    assert_eq!(
        call(m[3], 1).output.as_deref(),
        Some("Process exited with code 0\nOutput:\n1 failed")
    );
    assert_eq!(shape(m[4]), ["text", "exec_command"]);
    assert_eq!(part_text(m[4], 0), "One test fails; fixing it.");
    assert_eq!(call(m[4], 1).id, "c2");
    assert_eq!(m[5].parts, [text_of("All tests pass.")]);
    assert_eq!(
        m[3..].iter().map(|m| m.kind).collect::<Vec<_>>(),
        [Kind::ToolCall, Kind::ToolCall, Kind::Text]
    );
    // Read in two ingests split anywhere, the same messages in the same order.
    assert_split_equivalence_with(&make, "transcript order", rollout.as_bytes());
}

#[test]
fn thread_rollback_rewinds_to_the_dropped_prompt() {
    let turn = |id: &str, prompt: &str, answer: &str| {
        vec![
            ev(json!({"type": "task_started", "turn_id": id})),
            ev(json!({"type": "user_message", "message": prompt})),
            ev(json!({"type": "agent_message", "message": answer})),
            ev(json!({"type": "task_complete", "turn_id": id})),
        ]
    };
    let mut all = Vec::new();
    all.extend(turn("a", "one", "1"));
    all.extend(turn("b", "two", "2"));
    all.extend(turn("c", "three", "3"));
    all.push(ev(json!({"type": "thread_rolled_back", "num_turns": 2})));
    all.extend(turn("d", "two again", "2'"));
    all.push(ev(json!({"type": "thread_rolled_back", "num_turns": 9})));
    let text = join(&all);
    let b = read_str(&text);
    assert!(b.records.contains(&Record::Rewind {
        message_id: "b:user:0".into()
    }));
    assert_eq!(b.stats, stats(18, 9, 0, 0), "too many turns: ignored");
    let s = store_of(&text);
    assert_eq!(
        s.messages.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        ["a:user:0", "a:assistant:0", "d:user:0", "d:assistant:0"]
    );
    assert_split_equivalence_with(&make, "rollback", text.as_bytes());
}

#[test]
fn rollback_within_one_batch_does_not_merge_into_deleted_records() {
    let text = join(&[
        ev(json!({"type": "task_started", "turn_id": "a"})),
        ev(json!({"type": "user_message", "message": "one"})),
        ev(json!({"type": "agent_message", "message": "1"})),
        ev(json!({"type": "thread_rolled_back", "num_turns": 1})),
        ev(json!({"type": "agent_message", "message": "late"})),
    ]);
    let s = store_of(&text);
    assert_eq!(s.messages.len(), 1);
    assert_eq!(s.messages[0].id, "a:assistant:0");
    assert_eq!(s.messages[0].parts, [text_of("late")]);
    assert_split_equivalence_with(&make, "rollback in batch", text.as_bytes());
}

#[test]
fn compacted_records_are_numbered_and_empty_ones_skipped() {
    let b = read_str(&join(&[
        line(
            "compacted",
            json!({"message": "", "replacement_history": []}),
        ),
        line("compacted", json!({"message": "  summary two  "})),
        line("compacted", json!("not an object")),
    ]));
    assert_eq!(ids(&b), ["compaction:2"]);
    assert_eq!(messages(&b)[0].parts, [text_of("summary two")]);
    assert_eq!(b.stats, stats(3, 1, 0, 1));
    assert_eq!(b.meta.title, None, "a summary is not a title");
}

// ---- state ----

#[test]
fn state_round_trips_and_stays_small() {
    let bytes = grow("paginated")[2].clone();
    let mut r = CodexReader::new();
    let mut b = Batch::default();
    for l in lines(&bytes) {
        r.line(l, &mut b);
    }
    let state = r.save_state().expect("state");
    assert!(state.to_string().len() < 1024, "{}", state);
    let mut r2 = CodexReader::new();
    r2.restore_state(&state);
    assert_eq!(r2.save_state(), Some(state));
    // Unreadable state is ignored: the reader starts fresh.
    let mut r3 = CodexReader::new();
    r3.restore_state(&json!("garbage"));
    r3.restore_state(&json!({"turn": 5}));
    assert_eq!(r3.save_state(), CodexReader::new().save_state());
    // Saturated counters in a tampered state do not overflow.
    let mut r4 = CodexReader::new();
    r4.restore_state(
        &json!({"turn": "", "seq": u64::MAX, "compactions": u32::MAX,
        "agent_msgs": u32::MAX, "synth": u32::MAX,
        "users": {"n": u32::MAX, "seen": [u32::MAX, u32::MAX, u32::MAX]}}),
    );
    let mut b4 = Batch::default();
    for l in lines(&bytes) {
        r4.line(l, &mut b4);
    }
    r4.line(
        line("compacted", json!({"message": "s"})).as_bytes(),
        &mut b4,
    );
    assert_eq!(b4.stats.lines, 53);
}

#[test]
fn saved_lists_are_capped() {
    let mut all = Vec::new();
    for i in 0..100 {
        all.push(ev(
            json!({"type": "task_started", "turn_id": format!("t{i}")}),
        ));
        all.push(ev(
            json!({"type": "user_message", "message": format!("p{i}")}),
        ));
        all.push(ev(
            json!({"type": "exec_command_end", "call_id": format!("c{i}"), "exit_code": 1}),
        ));
    }
    let text = join(&all);
    let mut r = CodexReader::new();
    let mut b = Batch::default();
    for l in lines(text.as_bytes()) {
        r.line(l, &mut b);
    }
    let state = r.save_state().unwrap();
    assert_eq!(state["heads"].as_array().unwrap().len(), 64);
    assert_eq!(state["failed"].as_array().unwrap().len(), 64);
    assert_eq!(state["heads"][0], json!("t36:user:0"));
    assert!(state.to_string().len() < 4096);
}

// ---- robustness ----

#[test]
fn unknown_types_are_counted() {
    let b = read_str(&join(&[
        line("x_future", json!({})),
        line("x_future", json!("scalar payload")),
        ev(json!({"type": "x_future_event"})),
        ri(json!({"type": "x_future_item"})),
        ev(json!({"type": "item_completed", "item": {"type": "XFutureItem", "id": "i"}})),
        r#"{"no_type":true}"#.to_string(),
        // known bookkeeping
        line("world_state", json!({"full": true, "state": {}})),
        line("token_usage_record", json!({})),
        ev(json!({"type": "agent_message_content_delta", "delta": "x"})),
        ev(json!({"type": "collab_agent_spawn_end"})),
        ri(json!({"type": "ghost_snapshot", "ghost_commit": {}})),
        ri(json!({"type": "compaction", "encrypted_content": "gAAA"})),
    ]));
    assert_eq!(b.stats, stats(12, 6, 6, 0));
    assert!(b.records.is_empty());
}

#[test]
fn crlf_bom_and_blank_lines() {
    let l = ev(json!({"type": "user_message", "message": "hi"}));
    let text = format!("\u{feff}{l}\r\n   \r\n");
    let b = read(&[text.lines().next().unwrap().as_bytes(), b"   \r"]);
    assert_eq!(ids(&b), ["seq-1:user:0"]);
    assert_eq!(b.stats, stats(2, 1, 0, 0));
}

#[test]
fn malformed_lines() {
    let b = read(&[
        b"not json",
        b"[1,2]",
        b"{\"type\":",
        b"\xff\xfe{}",
        br#"{"type":"event_msg","payload":[1]}"#,
        br#"{"type":"event_msg","payload":{"type":"item_completed","item":"x"}}"#,
        br#"{"type":"response_item","payload":{"type":"function_call","name":"x"}}"#,
        br#"{"type":"response_item","payload":{"type":"function_call_output","output":"x"}}"#,
    ]);
    assert_eq!(b.stats, stats(8, 0, 0, 8));
}

#[test]
fn a_line_over_one_megabyte() {
    let big: String = "0123456789abcdé\n".repeat(1_500_000 / 17 + 1);
    let text = join(&[
        ri(
            json!({"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c"}),
        ),
        ri(json!({"type": "function_call_output", "call_id": "c", "output": big})),
    ]);
    assert!(text.len() > 1_500_000);
    let b = read_str(&text);
    assert_eq!(
        call(messages(&b)[0], 0).output.as_deref(),
        Some(big.as_str())
    );
}

#[test]
fn weird_types_inside_valid_json_never_panic() {
    for l in [
        r#"{"type":"session_meta","payload":{"id":5,"cwd":[],"git":"main","cli_version":{}}}"#,
        r#"{"type":"turn_context","payload":{"turn_id":7,"model":null,"cwd":false}}"#,
        r#"{"type":"event_msg","payload":{"type":"task_started","turn_id":[]}}"#,
        r#"{"type":"event_msg","payload":{"type":"user_message","message":7,"images":"x"}}"#,
        r#"{"type":"event_msg","payload":{"type":"agent_message","message":null}}"#,
        r#"{"type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":-3}}"#,
        r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","content":"x"}}}"#,
        r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"Reasoning","summary_text":[1,null]}}}"#,
        r#"{"type":"event_msg","payload":{"type":"mcp_tool_call_end","call_id":1,"result":"x"}}"#,
        r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":1}],"internal_chat_message_metadata_passthrough":{"content_item_kinds":"user.text"}}}"#,
        r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":{"text":"x"}}}"#,
        r#"{"type":"response_item","payload":{"type":"reasoning","summary":"x"}}"#,
        r#"{"type":"response_item","payload":{"type":"function_call","call_id":"c","arguments":{"a":1}}}"#,
        r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":{"content_items":[{"type":"input_text","text":"t"}],"success":false}}}"#,
        r#"{"type":"response_item","payload":{"type":"web_search_call","id":7}}"#,
        r#"{"type":"compacted","payload":{"message":{"x":1}}}"#,
        r#"{"timestamp":12,"type":"event_msg","payload":{"type":"agent_message","message":"x"}}"#,
        "{}",
        "   ",
    ] {
        let b = read_str(l);
        assert_eq!(b.stats.lines, 1, "{l}");
        if !b
            .records
            .iter()
            .any(|r| matches!(r, Record::ToolResult { .. }))
        {
            assert_split_equivalence_with(&make, l, format!("{l}\n").as_bytes());
        }
    }
    // Arguments already parsed (an object) are kept; a non-string timestamp is no time.
    let b = read_str(
        r#"{"timestamp":12,"type":"response_item","payload":{"type":"function_call","call_id":"c","arguments":{"a":1}}}"#,
    );
    let m = messages(&b)[0];
    assert_eq!(
        (call(m, 0).input.clone(), m.timestamp),
        (json!({"a": 1}), None)
    );
}

#[test]
fn random_bytes_truncations_and_mutations_never_panic() {
    let mut rng = Lcg(0xc0de);
    let mut reader = CodexReader::new();
    let mut batch = Batch::default();
    let mut n = 0u64;
    for _ in 0..2000 {
        let len = (rng.next() % 200) as usize;
        let l: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        reader.line(&l, &mut batch);
        n += 1;
    }
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
    for name in ["legacy-turn3.jsonl", "paginated-turn3.jsonl"] {
        let bytes = fixture(name);
        for l in lines(&bytes) {
            // Every truncation of short lines, sampled ones of long lines.
            let step = (l.len() / 60).max(1);
            for cut in (0..l.len()).step_by(step) {
                reader.line(&l[..cut], &mut batch);
                n += 1;
            }
            for _ in 0..20 {
                let mut m = l.to_vec();
                match rng.next() % 2 {
                    0 => {
                        let i = (rng.next() as usize) % m.len();
                        m[i] = rng.next() as u8;
                    }
                    _ => {
                        let i = (rng.next() as usize) % m.len();
                        let piece = noise[(rng.next() as usize) % noise.len()];
                        m.splice(i..i, piece.iter().copied());
                    }
                }
                reader.line(&m, &mut batch);
                n += 1;
                if rng.next().is_multiple_of(40) {
                    reader.finish(&mut batch);
                    let s = reader.save_state().unwrap();
                    reader = CodexReader::new();
                    reader.restore_state(&s);
                }
            }
        }
    }
    reader.finish(&mut batch);
    assert_eq!(batch.stats.lines, n);
    assert!(batch.stats.malformed > 0);
    assert!(batch.stats.skipped() <= n);
}
