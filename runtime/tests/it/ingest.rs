//! Incremental ingest of Claude Code transcripts into the store: growth turn by turn, a line cut
//! mid-write, a rewritten file, sub-agents, tool errors, non-Latin text, a line over 1 MB, and the
//! exactly-once guarantee. The transcript lines are written here in Claude Code 2.x's format
//! (one line per content block, shared `message.id`; see
//! `docs/agents/claude.md#transcript-format`).

use memtrail_adapters::Agent;
use memtrail_runtime::Store;
use memtrail_runtime::ingest::{ingest_at_rest, ingest_file};
use memtrail_runtime::query::{self, SearchFilter};
use memtrail_runtime::records::Standard;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};

const SID: &str = "5f0c7a52-3c1e-4d7e-9a51-0a1b2c3d4e5f";

fn envelope(uuid: &str, parent: Option<&str>, ts: &str) -> serde_json::Value {
    json!({
        "parentUuid": parent, "isSidechain": false, "userType": "external",
        "cwd": "/home/user/demo", "sessionId": SID, "version": "2.1.49",
        "gitBranch": "main", "uuid": uuid, "timestamp": ts
    })
}

fn user(uuid: &str, text: &str, ts: &str) -> String {
    let mut v = envelope(uuid, None, ts);
    v["type"] = json!("user");
    v["message"] = json!({"role": "user", "content": text});
    v.to_string()
}

fn assistant_block(uuid: &str, msg_id: &str, block: serde_json::Value, ts: &str) -> String {
    let mut v = envelope(uuid, None, ts);
    v["type"] = json!("assistant");
    v["requestId"] = json!(format!("req_{msg_id}"));
    v["message"] = json!({
        "model": "claude-sonnet-4-5", "id": msg_id, "type": "message", "role": "assistant",
        "content": [block], "stop_reason": null, "usage": {"input_tokens": 3, "output_tokens": 5}
    });
    v.to_string()
}

fn tool_result(uuid: &str, call: &str, content: &str, is_error: bool, ts: &str) -> String {
    let mut v = envelope(uuid, None, ts);
    v["type"] = json!("user");
    v["message"] = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call, "content": content, "is_error": is_error}
    ]});
    v.to_string()
}

fn text(t: &str) -> serde_json::Value {
    json!({"type": "text", "text": t})
}

fn bash(id: &str, cmd: &str) -> serde_json::Value {
    json!({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": cmd}})
}

/// Turn 1: prompt, assistant [text, Bash] over two lines, a failing result, then a final text.
fn turn1() -> Vec<String> {
    vec![
        user(
            "u1",
            "Run the test suite please",
            "2026-11-20T10:00:00.000Z",
        ),
        assistant_block(
            "a1",
            "msg_01",
            text("Running the tests."),
            "2026-11-20T10:00:01.000Z",
        ),
        assistant_block(
            "a2",
            "msg_01",
            bash("toolu_01", "cargo test"),
            "2026-11-20T10:00:01.500Z",
        ),
        tool_result(
            "u2",
            "toolu_01",
            "error[E0382]: borrow of moved value",
            true,
            "2026-11-20T10:00:05.000Z",
        ),
        assistant_block(
            "a3",
            "msg_02",
            text("The build fails with E0382."),
            "2026-11-20T10:00:06.000Z",
        ),
    ]
}

/// Turn 2: a non-Latin prompt, a fix with a succeeding result, an answer.
fn turn2() -> Vec<String> {
    vec![
        user(
            "u3",
            "直してください — исправь это 🙏",
            "2026-11-20T10:01:00.000Z",
        ),
        assistant_block(
            "a4",
            "msg_03",
            bash("toolu_02", "cargo test --quiet"),
            "2026-11-20T10:01:02.000Z",
        ),
        tool_result(
            "u4",
            "toolu_02",
            "test result: ok. 12 passed",
            false,
            "2026-11-20T10:01:09.000Z",
        ),
        assistant_block(
            "a5",
            "msg_04",
            text("修正しました。All 12 tests pass."),
            "2026-11-20T10:01:10.000Z",
        ),
    ]
}

struct Env {
    _dir: tempfile::TempDir,
    root: PathBuf,
    store: Store,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let store = Store::open(&root.join("store/memtrail.db")).unwrap();
    Env {
        _dir: dir,
        root,
        store,
    }
}

fn transcript_path(root: &Path) -> PathBuf {
    let p = root.join(format!("projects/-home-user-demo/{SID}.jsonl"));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    p
}

fn append(path: &Path, lines: &[String]) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

fn ids(store: &Store) -> Vec<String> {
    query::get_session(store, SID, None, 0, 1000, None)
        .unwrap()
        .messages
        .into_iter()
        .map(|m| m.id)
        .collect()
}

#[test]
fn grows_turn_by_turn_with_exactly_the_new_messages() {
    let mut e = env();
    let p = transcript_path(&e.root);
    append(&p, &turn1());
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(
        r.inserted, 3,
        "user, assistant msg_01 (text+Bash), assistant msg_02"
    );
    assert_eq!(ids(&e.store), ["u1", "msg_01", "msg_02"]);

    // Nothing new: nothing changes.
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert!(r.unchanged);
    assert_eq!(r.inserted, 0);

    append(&p, &turn2());
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(r.inserted, 3, "u3, msg_03, msg_04");
    assert_eq!(
        ids(&e.store),
        ["u1", "msg_01", "msg_02", "u3", "msg_03", "msg_04"]
    );

    let v = query::get_session(&e.store, SID, None, 0, 100, None).unwrap();
    assert_eq!(v.total, 6);
    assert_eq!(
        v.session.title.as_deref(),
        Some("Run the test suite please")
    );
    assert_eq!(v.session.project.as_deref(), Some("/home/user/demo"));
    assert_eq!(v.session.git_branch.as_deref(), Some("main"));
    // msg_01 holds both blocks, in order, and the failing result is attached as an error.
    let m1 = &v.messages[1];
    assert_eq!(m1.text, "Running the tests.");
    assert_eq!(m1.tool_calls.len(), 1);
    assert_eq!(m1.tool_calls[0].name, "Bash");
    assert_eq!(m1.tool_calls[0].tool, "shell");
    assert!(m1.tool_calls[0].is_error);
    assert_eq!(
        m1.tool_calls[0].output.as_deref(),
        Some("error[E0382]: borrow of moved value")
    );
    let m4 = &v.messages[4];
    assert!(!m4.tool_calls[0].is_error);
    assert_eq!(
        m4.tool_calls[0].output.as_deref(),
        Some("test result: ok. 12 passed")
    );
    // Non-Latin text is stored byte for byte.
    assert_eq!(v.messages[3].text, "直してください — исправь это 🙏");
    assert_eq!(v.messages[5].text, "修正しました。All 12 tests pass.");
}

#[test]
fn a_line_cut_mid_write_waits_until_complete_then_is_ingested_once() {
    let mut e = env();
    let p = transcript_path(&e.root);
    let lines = turn1();
    append(&p, &lines[..4]);
    // Half of the last line, no newline yet.
    let last = &lines[4];
    let cut = last.len() / 2;
    {
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(&last.as_bytes()[..cut]).unwrap();
    }
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(ids(&e.store), ["u1", "msg_01"]);
    assert_eq!(r.stats.malformed, 0, "the partial line is not read at all");
    let size_before = std::fs::metadata(&p).unwrap().len();
    assert_eq!(
        e.store
            .cursor(&p.to_string_lossy())
            .unwrap()
            .unwrap()
            .offset,
        size_before - cut as u64,
        "the cursor stops before the partial line"
    );
    // Ingesting again while still partial changes nothing.
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(r.inserted, 0);
    // The writer finishes the line.
    {
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(&last.as_bytes()[cut..]).unwrap();
        f.write_all(b"\n").unwrap();
    }
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(r.inserted, 1);
    assert_eq!(ids(&e.store), ["u1", "msg_01", "msg_02"]);
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(r.inserted, 0);
}

/// Issue 11 item 15: a whole last line without its '\n' is read once the file is at rest
/// (import, SessionEnd), and the session going on afterwards stores nothing twice.
#[test]
fn a_whole_last_line_without_a_newline_is_read_at_rest_and_only_once() {
    let mut e = env();
    let p = transcript_path(&e.root);
    let lines = turn1();
    append(&p, &lines[..4]);
    {
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(lines[4].as_bytes()).unwrap();
    }
    let size = std::fs::metadata(&p).unwrap().len();
    let offset = |e: &Env| {
        e.store
            .cursor(&p.to_string_lossy())
            .unwrap()
            .unwrap()
            .offset
    };
    // A hook mid-session waits for the '\n'.
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(ids(&e.store), ["u1", "msg_01"]);
    assert_eq!(offset(&e), size - lines[4].len() as u64);
    // At rest, it is read; the cursor ends at the file's last byte.
    let r = ingest_at_rest(&mut e.store, Agent::Claude, &p, None, None).unwrap();
    assert_eq!(r.inserted, 1);
    assert_eq!(r.bytes, lines[4].len() as u64);
    assert_eq!(ids(&e.store), ["u1", "msg_01", "msg_02"]);
    assert_eq!(offset(&e), size);
    assert!(
        ingest_at_rest(&mut e.store, Agent::Claude, &p, None, None)
            .unwrap()
            .unchanged
    );
    // The agent goes on: its '\n', then the next turn.
    {
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"\n").unwrap();
    }
    append(&p, &turn2());
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(r.inserted, 3);
    assert_eq!(
        ids(&e.store),
        ["u1", "msg_01", "msg_02", "u3", "msg_03", "msg_04"]
    );
    // A last line that is not a whole value waits, even at rest.
    let half = &lines[0][..lines[0].len() / 2];
    {
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(half.as_bytes()).unwrap();
    }
    let before = offset(&e);
    let r = ingest_at_rest(&mut e.store, Agent::Claude, &p, None, None).unwrap();
    assert_eq!((r.inserted, r.stats.malformed), (0, 0));
    assert_eq!(offset(&e), before);
}

#[test]
fn split_assistant_blocks_and_late_results_merge_across_ingests() {
    let mut e = env();
    let p = transcript_path(&e.root);
    let lines = turn1();
    // Stop after the text block of msg_01: the Bash block and its result come later.
    append(&p, &lines[..2]);
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    append(&p, &lines[2..3]);
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    append(&p, &lines[3..]);
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(r.inserted, 1, "only msg_02 is new");
    let v = query::get_session(&e.store, SID, None, 0, 100, None).unwrap();
    assert_eq!(v.total, 3);
    assert_eq!(v.messages[1].text, "Running the tests.");
    assert_eq!(v.messages[1].tool_calls.len(), 1);
    assert!(v.messages[1].tool_calls[0].is_error);
    // The late tool output is searchable.
    let hits = query::search(
        &e.store,
        "E0382 borrow",
        &SearchFilter {
            limit: 10,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(hits.iter().any(|h| h.message_id == "msg_01"));
}

/// Issue 11 item 17: a transcript that shrank or was rewritten by another tool, with no
/// rewind record, is read again from its start without deleting what was captured.
#[test]
fn a_shrunk_or_rewritten_file_is_reread_and_deletes_nothing() {
    let mut e = env();
    let p = transcript_path(&e.root);
    let mut all = turn1();
    all.extend(turn2());
    append(&p, &all);
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    let six = ["u1", "msg_01", "msg_02", "u3", "msg_03", "msg_04"];
    assert_eq!(ids(&e.store), six);

    // Rewritten in place to a shorter history (a tool kept two of its lines).
    std::fs::write(&p, format!("{}\n{}\n", all[0], all[4])).unwrap();
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert!(r.reread);
    assert_eq!((r.inserted, r.stats.lines), (0, 2));
    assert_eq!(ids(&e.store), six);
    let v = query::get_session(&e.store, SID, None, 0, 100, None).unwrap();
    assert_eq!(
        v.messages[1].tool_calls.len(),
        1,
        "the tool call and its output stay"
    );
    assert_eq!(
        v.messages[1].tool_calls[0].output.as_deref(),
        Some("error[E0382]: borrow of moved value")
    );

    // Truncated to nothing, then the session goes on in it: only the new message is added.
    std::fs::write(&p, "").unwrap();
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(ids(&e.store), six);
    append(
        &p,
        &[user("u9", "One more thing", "2026-11-20T10:09:00.000Z")],
    );
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(r.inserted, 1);
    let mut seven = six.to_vec();
    seven.push("u9");
    assert_eq!(ids(&e.store), seven);
    // And a replaced file (new inode) holding the whole history again adds nothing twice.
    let tmp = p.with_extension("tmp");
    std::fs::write(&tmp, format!("{}\n", all.join("\n"))).unwrap();
    std::fs::rename(&tmp, &p).unwrap();
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert!(r.reread);
    assert_eq!(r.inserted, 0);
    assert_eq!(ids(&e.store), seven);
}

/// Issue 11 item 17: rewinds the format records (Gemini `$rewindTo`) still delete, also in a
/// transcript read again after it shrank.
#[test]
fn a_recorded_rewind_is_honoured_after_a_shrink() {
    let mut e = env();
    let dir = e.root.join("gemini/tmp/weather-app/chats");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("session-2026-03-14T09-21-4f1c2a9e.jsonl");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/gemini");
    let turn3 = std::fs::read(fixture.join("grow-turn3.jsonl")).unwrap();
    std::fs::write(&p, &turn3).unwrap();
    let count = |e: &Env| {
        rusqlite_conn(&e.root.join("store/memtrail.db"))
            .query_row("SELECT COUNT(*) FROM messages", [], |r| r.get::<_, i64>(0))
            .unwrap()
    };
    ingest_file(&mut e.store, Agent::Gemini, &p, None).unwrap();
    // fixtures/gemini/README.md: 11 messages after turn 3, 4 after turn 1 (5317 bytes).
    assert_eq!(count(&e), 11);
    std::fs::write(&p, &turn3[..5317]).unwrap();
    let r = ingest_file(&mut e.store, Agent::Gemini, &p, None).unwrap();
    assert!(r.reread);
    assert_eq!(count(&e), 11, "the shrink deletes nothing");
    // A rewind to G1 (the second message): G1 and everything after it go; U1 stays.
    append(
        &p,
        &[r#"{"$rewindTo":"1c7a3e5f-2b4d-4f6a-9b8c-0d1e2f3a4b5c"}"#.to_string()],
    );
    ingest_file(&mut e.store, Agent::Gemini, &p, None).unwrap();
    let left: String = rusqlite_conn(&e.root.join("store/memtrail.db"))
        .query_row("SELECT group_concat(ext_id) FROM messages", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(left, "0b6f2d4e-1a3c-4e5f-8a7b-9c0d1e2f3a4b");
}

/// Issue 11 item 18: `claude --resume ID --fork-session` writes a new transcript that copies
/// every earlier line with its `uuid`, `message.id` and `timestamp`, only `sessionId` changed
/// (seen with the real Claude Code 2.1.332 against the e2e stub). Both sessions keep their
/// whole history; a search shows each copied hit once.
#[test]
fn a_forked_session_shows_each_copied_hit_once() {
    let mut e = env();
    let p = transcript_path(&e.root);
    append(&p, &turn1());
    let fork = "9d05d2bc-19f1-4db5-aee2-fd5d7b4f600b";
    let fp = p.with_file_name(format!("{fork}.jsonl"));
    let mut copied: Vec<String> = turn1().iter().map(|l| l.replace(SID, fork)).collect();
    copied.push(
        user(
            "u5",
            "Now fix the borrow in the fork",
            "2026-11-20T11:00:00.000Z",
        )
        .replace(SID, fork),
    );
    append(&fp, &copied);
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    ingest_file(&mut e.store, Agent::Claude, &fp, None).unwrap();
    let total = |sid: &str| {
        query::get_session(&e.store, sid, None, 0, 100, None)
            .unwrap()
            .total
    };
    assert_eq!((total(SID), total(fork)), (3, 4));
    let search = |q: &str, session: Option<&str>| {
        let f = SearchFilter {
            limit: 10,
            session: session.map(str::to_string),
            ..Default::default()
        };
        let mut hits: Vec<(String, String)> = query::search(&e.store, q, &f)
            .unwrap()
            .into_iter()
            .map(|h| (h.session_id, h.message_id))
            .collect();
        hits.sort();
        hits
    };
    // The copied prompt and the copied tool output: once each.
    let once = search("test suite", None);
    assert_eq!(once.len(), 1, "{once:?}");
    assert_eq!(once[0].1, "u1");
    // "borrow": the copied tool output (msg_01) once, and the fork's own new prompt.
    let borrow = search("borrow", None);
    assert_eq!(
        borrow.iter().map(|h| h.1.as_str()).collect::<Vec<_>>(),
        ["msg_01", "u5"],
        "{borrow:?}"
    );
    assert_eq!(borrow[1].0, fork);
    // Within one session, its own copy is found.
    assert_eq!(
        search("test suite", Some(fork)),
        [(fork.to_string(), "u1".to_string())]
    );
    assert_eq!(
        search("test suite", Some(SID)),
        [(SID.to_string(), "u1".to_string())]
    );
}

/// Two sessions that are not copies of each other but whose messages carry the same ids and
/// times (transcripts written by a script, or a tool with positional ids): each keeps its own
/// hits in a search; only a copy (same text too) is shown once.
#[test]
fn different_messages_with_the_same_id_and_time_are_not_taken_for_copies() {
    let mut e = env();
    let p = transcript_path(&e.root);
    append(&p, &turn1());
    let other = "5b2e9c1d-7a40-4f3e-9d21-6c8b0a4f1e27";
    let op = p.with_file_name(format!("{other}.jsonl"));
    let lines: Vec<String> = turn1()
        .iter()
        .map(|l| {
            l.replace(SID, other)
                .replace("Run the test suite please", "Run the test suite twice")
        })
        .collect();
    append(&op, &lines);
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    ingest_file(&mut e.store, Agent::Claude, &op, None).unwrap();
    let f = SearchFilter {
        limit: 10,
        ..Default::default()
    };
    let mut hits: Vec<(String, String)> = query::search(&e.store, "test suite", &f)
        .unwrap()
        .into_iter()
        .map(|h| (h.session_id, h.message_id))
        .collect();
    hits.sort();
    assert_eq!(
        hits,
        [
            (other.to_string(), "u1".to_string()),
            (SID.to_string(), "u1".to_string())
        ]
    );
}

#[test]
fn subagent_file_is_a_child_session() {
    let mut e = env();
    let p = transcript_path(&e.root);
    append(&p, &turn1());
    let sub = p
        .parent()
        .unwrap()
        .join(SID)
        .join("subagents/agent-a485154.jsonl");
    std::fs::create_dir_all(sub.parent().unwrap()).unwrap();
    let mut v = envelope("s1", None, "2026-11-20T10:00:02.000Z");
    v["isSidechain"] = json!(true);
    v["agentId"] = json!("a485154");
    v["type"] = json!("user");
    v["message"] = json!({"role": "user", "content": "Find every TODO in src"});
    let mut w = envelope("s2", Some("s1"), "2026-11-20T10:00:03.000Z");
    w["isSidechain"] = json!(true);
    w["agentId"] = json!("a485154");
    w["type"] = json!("assistant");
    w["message"] = json!({"model": "claude-haiku-4-5", "id": "msg_sub1", "type": "message",
        "role": "assistant", "content": [{"type": "text", "text": "Found 3 TODOs."}]});
    append(&sub, &[v.to_string(), w.to_string()]);

    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    ingest_file(&mut e.store, Agent::Claude, &sub, None).unwrap();
    let child_id = format!("{SID}/agent-a485154");
    let child = query::get_session(&e.store, &child_id, None, 0, 10, None).unwrap();
    assert_eq!(child.session.parent_session_id.as_deref(), Some(SID));
    assert_eq!(child.total, 2);
    let parent = query::get_session(&e.store, SID, None, 0, 10, None).unwrap();
    assert_eq!(parent.children, [child_id]);
    assert_eq!(
        parent.total, 3,
        "the sub-agent's messages are not in the parent"
    );
}

#[test]
fn a_line_over_one_megabyte_is_ingested() {
    let mut e = env();
    let p = transcript_path(&e.root);
    let big: String = "0123456789abcdef".repeat(96 * 1024); // 1.5 MiB
    let lines = vec![
        user("u1", "Dump the log", "2026-11-20T10:00:00.000Z"),
        assistant_block(
            "a1",
            "msg_01",
            bash("toolu_01", "cat big.log"),
            "2026-11-20T10:00:01.000Z",
        ),
        tool_result(
            "u2",
            "toolu_01",
            &format!("{big} needle-at-the-end"),
            false,
            "2026-11-20T10:00:02.000Z",
        ),
        assistant_block(
            "a2",
            "msg_02",
            text("That is a large log."),
            "2026-11-20T10:00:03.000Z",
        ),
    ];
    assert!(lines[2].len() > 1024 * 1024);
    append(&p, &lines);
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(r.inserted, 3);
    assert_eq!(r.stats.malformed, 0);
    let v = query::get_session(&e.store, SID, None, 0, 10, None).unwrap();
    assert_eq!(
        v.messages[1].tool_calls[0].output.as_ref().unwrap().len(),
        big.len() + " needle-at-the-end".len(),
        "the full output is kept"
    );
}

#[test]
fn hook_then_import_then_hook_never_duplicates() {
    // Two store handles on one file, like a hook process and an import running side by side.
    let mut e = env();
    let p = transcript_path(&e.root);
    append(&p, &turn1());
    let mut other = Store::open(e.store.path()).unwrap();
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    ingest_file(&mut other, Agent::Claude, &p, None).unwrap();
    append(&p, &turn2());
    ingest_file(&mut other, Agent::Claude, &p, None).unwrap();
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(ids(&e.store).len(), 6);
    let stats = e.store.stats().unwrap();
    assert_eq!((stats.sessions, stats.messages), (1, 6));
}

#[test]
fn search_filters_and_hostile_queries() {
    let mut e = env();
    let p = transcript_path(&e.root);
    let mut all = turn1();
    all.extend(turn2());
    append(&p, &all);
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    let f = |limit| SearchFilter {
        limit,
        ..Default::default()
    };
    // Stemming: "tests" matches "test".
    let hits = query::search(&e.store, "tests pass", &f(10)).unwrap();
    assert_eq!(hits[0].message_id, "msg_04");
    assert!(hits[0].snippet.contains('\u{1}'), "highlighted");
    // Role filter.
    let hits = query::search(
        &e.store,
        "test",
        &SearchFilter {
            role: Some("user".into()),
            limit: 10,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        hits.iter()
            .map(|h| h.message_id.as_str())
            .collect::<Vec<_>>(),
        ["u1"]
    );
    // Time filter: only turn 2 (from 10:00:30).
    let hits = query::search(
        &e.store,
        "test",
        &SearchFilter {
            since: memtrail_adapters::parse_rfc3339_ms("2026-11-20T10:00:30Z"),
            limit: 10,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(
        hits.iter()
            .all(|h| h.timestamp.as_deref().unwrap() >= "2026-11-20T10:00:30")
    );
    assert!(!hits.is_empty());
    // Project filter: a parent folder matches, a sibling does not.
    for (proj, n) in [
        ("/home/user", true),
        ("/home/user/demo", true),
        ("/home/user/dem", false),
    ] {
        let hits = query::search(
            &e.store,
            "test",
            &SearchFilter {
                project: Some(proj.into()),
                limit: 10,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(!hits.is_empty(), n, "project {proj}");
    }
    // Non-Latin words.
    let hits = query::search(&e.store, "исправь", &f(10)).unwrap();
    assert_eq!(hits[0].message_id, "u3");
    // Nothing a user types surfaces an SQLite error.
    for q in [
        "\"unbalanced",
        "a AND",
        "OR b",
        "* foo",
        "(((",
        "NEAR(x y)",
        "col:val",
        "-x",
        "a\"b",
        "^start",
        "foo' OR 1=1 --",
        "東京",
        "🙏",
        "AND OR NOT",
        "x*y",
        "{a}",
        "[b]",
    ] {
        match query::search(&e.store, q, &f(5)) {
            Ok(_) => {}
            Err(memtrail_runtime::Error::Invalid(_)) => {}
            Err(other) => panic!("query {q:?} failed: {other}"),
        }
    }
}

#[test]
fn newer_store_is_refused_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    drop(Store::open(&db).unwrap());
    {
        let c = rusqlite_conn(&db);
        c.pragma_update(None, "user_version", 99).unwrap();
    }
    let err = Store::open(&db).err().expect("refused");
    let msg = err.to_string();
    assert!(msg.contains("schema version 99"), "{msg}");
    assert!(msg.contains("upgrade memtrail"), "{msg}");
}

fn rusqlite_conn(p: &Path) -> rusqlite::Connection {
    crate::support::open_raw(p).unwrap()
}

#[cfg(unix)]
#[test]
fn store_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new/dir/m.db");
    drop(Store::open(&db).unwrap());
    let mode = std::fs::metadata(&db).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dmode = std::fs::metadata(db.parent().unwrap())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dmode, 0o700);
}

/// An existing store others can read (left 0644 by a copy or an older version, its WAL files
/// too) is tightened to 0600 at the next open; a store path that is a symlink is followed, and
/// the target it creates is 0600 in a 0700 folder.
#[cfg(unix)]
#[test]
fn existing_and_symlinked_stores_become_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    {
        let s = Store::open(&db).unwrap();
        // Keep the WAL files while the modes are opened up.
        for p in [
            db.clone(),
            dir.path().join("m.db-wal"),
            dir.path().join("m.db-shm"),
        ] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        drop(Store::open(&db).unwrap());
        for p in [
            db.clone(),
            dir.path().join("m.db-wal"),
            dir.path().join("m.db-shm"),
        ] {
            assert_eq!(mode(&p), 0o600, "{}", p.display());
        }
        drop(s);
    }
    // A dangling link: the target is created owner-only, the link kept.
    let link = dir.path().join("link.db");
    let target = dir.path().join("other disk/store.db");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    drop(Store::open(&link).unwrap());
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(mode(&target), 0o600);
    assert_eq!(mode(target.parent().unwrap()), 0o700);
    // A link to an existing store that others can read.
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
    drop(Store::open(&link).unwrap());
    assert_eq!(mode(&target), 0o600);
}

#[test]
fn rewind_deletes_the_message_and_everything_after_it() {
    use memtrail_adapters::{Kind, Message, Part, Record, Role, SessionMeta, SessionRef};
    let mut e = env();
    let sref = SessionRef {
        agent: Agent::Gemini,
        external_id: "g1".into(),
        parent_external_id: None,
    };
    let msg = |id: &str, text: &str| {
        Record::Message(Message {
            id: id.into(),
            role: Role::User,
            kind: Kind::Text,
            parts: vec![Part::Text { text: text.into() }],
            timestamp: Some(1000),
            model: None,
        })
    };
    e.store
        .write(|w| {
            let sid = w.upsert_session(&sref, &SessionMeta::default(), &Standard)?;
            w.apply(
                sid,
                vec![msg("m1", "one"), msg("m2", "two"), msg("m3", "three")],
            )?;
            let a = w.apply(
                sid,
                vec![
                    Record::Rewind {
                        message_id: "m2".into(),
                    },
                    msg("m4", "four"),
                ],
            )?;
            assert_eq!(a.rewound, 2);
            // An unknown id deletes nothing.
            let a = w.apply(
                sid,
                vec![Record::Rewind {
                    message_id: "zz".into(),
                }],
            )?;
            assert_eq!(a.rewound, 0);
            Ok(())
        })
        .unwrap();
    let v = query::get_session(&e.store, "g1", None, 0, 10, None).unwrap();
    let got: Vec<(&str, i64)> = v
        .messages
        .iter()
        .map(|m| (m.id.as_str(), m.index))
        .collect();
    assert_eq!(got, [("m1", 0), ("m4", 1)]);
    assert_eq!(v.total, 2);
    // The deleted text is gone from the index too.
    let hits = query::search(
        &e.store,
        "three",
        &SearchFilter {
            limit: 5,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(hits.is_empty());
}

#[test]
fn replace_supersedes_the_stored_message_in_place() {
    use memtrail_adapters::{Kind, Message, Part, Record, Role, SessionMeta, SessionRef};
    let mut e = env();
    let sref = SessionRef {
        agent: Agent::Gemini,
        external_id: "g2".into(),
        parent_external_id: None,
    };
    let msg = |id: &str, text: &str| Message {
        id: id.into(),
        role: Role::Assistant,
        kind: Kind::Text,
        parts: vec![Part::Text { text: text.into() }],
        timestamp: Some(1000),
        model: None,
    };
    e.store
        .write(|w| {
            let sid = w.upsert_session(&sref, &SessionMeta::default(), &Standard)?;
            w.apply(
                sid,
                vec![
                    Record::Replace(msg("m1", "draft answer")),
                    Record::Replace(msg("m2", "second")),
                    Record::Replace(msg("m1", "final answer")),
                ],
            )?;
            Ok(())
        })
        .unwrap();
    let v = query::get_session(&e.store, "g2", None, 0, 10, None).unwrap();
    let got: Vec<(&str, &str, i64)> = v
        .messages
        .iter()
        .map(|m| (m.id.as_str(), m.text.as_str(), m.index))
        .collect();
    assert_eq!(got, [("m1", "final answer", 0), ("m2", "second", 1)]);
    let f = SearchFilter {
        limit: 5,
        ..Default::default()
    };
    assert!(query::search(&e.store, "draft", &f).unwrap().is_empty());
    assert_eq!(query::search(&e.store, "final", &f).unwrap().len(), 1);
}

#[test]
fn cjk_substrings_are_found_and_snippets_read_naturally() {
    let mut e = env();
    let p = transcript_path(&e.root);
    append(
        &p,
        &[
            user(
                "u1",
                "テストを実行します。東京タワーの写真",
                "2026-11-20T10:00:00.000Z",
            ),
            assistant_block(
                "a1",
                "msg_01",
                text("한국어 문장입니다"),
                "2026-11-20T10:00:01.000Z",
            ),
        ],
    );
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    let f = SearchFilter {
        limit: 5,
        ..Default::default()
    };
    for (q, id) in [
        ("テスト", "u1"),
        ("タワー", "u1"),
        ("東京", "u1"),
        ("문장", "msg_01"),
    ] {
        let hits = query::search(&e.store, q, &f).unwrap();
        assert_eq!(hits.len(), 1, "{q}");
        assert_eq!(hits[0].message_id, id, "{q}");
        let plain = hits[0].snippet.replace(['\u{1}', '\u{2}'], "");
        assert!(
            !plain.contains("テ ス"),
            "no spaced-out characters: {plain}"
        );
    }
    assert!(
        query::search(&e.store, "タワ写", &f).unwrap().is_empty(),
        "not a substring"
    );
}

#[test]
fn truncated_and_regrown_past_the_head_is_reread() {
    let mut e = env();
    let p = transcript_path(&e.root);
    let mut all = turn1();
    // Pad turn 1 beyond the 4 KiB head with a long answer.
    all.push(assistant_block(
        "a9",
        "msg_09",
        text(&"long answer ".repeat(600)),
        "2026-11-20T10:00:07.000Z",
    ));
    all.extend(turn2());
    append(&p, &all);
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(ids(&e.store).len(), 7);
    // Truncate after msg_09 (keeps the head), then append different lines of the same length
    // class: the bytes before the old cursor changed.
    let keep: usize = all[..6].iter().map(|l| l.len() + 1).sum();
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(keep as u64).unwrap();
    drop(f);
    append(
        &p,
        &[
            user(
                "u7",
                "A different second prompt",
                "2026-11-20T10:02:00.000Z",
            ),
            assistant_block(
                "a7",
                "msg_07",
                text("A different answer."),
                "2026-11-20T10:02:01.000Z",
            ),
            user(
                "u8",
                "And a third prompt to make it longer than before",
                "2026-11-20T10:03:00.000Z",
            ),
            assistant_block(
                "a8",
                "msg_08",
                text(&"padding ".repeat(100)),
                "2026-11-20T10:03:01.000Z",
            ),
        ],
    );
    assert!(std::fs::metadata(&p).unwrap().len() > keep as u64);
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert!(r.reread, "the change before the cursor is seen");
    // What was captured of the old tail (turn 2) stays (issue 11 item 17).
    assert_eq!(
        ids(&e.store),
        [
            "u1", "msg_01", "msg_02", "msg_09", "u3", "msg_03", "msg_04", "u7", "msg_07", "u8",
            "msg_08"
        ]
    );
}

#[test]
fn role_tool_finds_tool_calls_and_outputs() {
    let mut e = env();
    let p = transcript_path(&e.root);
    append(&p, &turn1());
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    let hits = query::search(
        &e.store,
        "cargo",
        &SearchFilter {
            role: Some("tool".into()),
            limit: 5,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        hits.iter()
            .map(|h| h.message_id.as_str())
            .collect::<Vec<_>>(),
        ["msg_01"]
    );
}

#[test]
fn a_prefix_names_the_main_session_not_its_subagents() {
    let mut e = env();
    let p = transcript_path(&e.root);
    append(&p, &turn1());
    let sub = p
        .parent()
        .unwrap()
        .join(SID)
        .join("subagents/agent-b1.jsonl");
    std::fs::create_dir_all(sub.parent().unwrap()).unwrap();
    let mut v = envelope("s1", None, "2026-11-20T10:00:02.000Z");
    v["isSidechain"] = json!(true);
    v["type"] = json!("user");
    v["message"] = json!({"role": "user", "content": "sub task"});
    append(&sub, &[v.to_string()]);
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    ingest_file(&mut e.store, Agent::Claude, &sub, None).unwrap();
    let v = query::get_session(&e.store, &SID[..8], None, 0, 10, None).unwrap();
    assert_eq!(v.session.session_id, SID);
    let child = query::get_session(&e.store, &format!("{SID}/agent-b"), None, 0, 10, None).unwrap();
    assert_eq!(child.session.session_id, format!("{SID}/agent-b1"));
}

#[cfg(unix)]
#[test]
fn a_fifo_or_a_directory_is_refused_without_blocking() {
    let mut e = env();
    let dir = e.root.join("projects/-x");
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("f.jsonl");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let err = ingest_file(&mut e.store, Agent::Claude, &fifo, None).unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
    let err = ingest_file(&mut e.store, Agent::Claude, &dir, None).unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
}

/// A tool result in the same batch as its call is folded into the call's message before it is
/// written (one insert, no re-index): the store ends exactly as when each record is applied on
/// its own, and the output is searchable.
#[test]
fn a_result_in_the_same_batch_as_its_call_gives_the_same_store() {
    use memtrail_adapters::{Kind, Message, Part, Record, Role, SessionMeta, SessionRef, ToolCall};
    let call = |id: &str| Message {
        id: format!("msg-{id}"),
        role: Role::Assistant,
        kind: Kind::ToolCall,
        parts: vec![Part::ToolCall(ToolCall {
            id: id.to_string(),
            name: "Bash".into(),
            tool: "Bash".into(),
            input: json!({"command": "cargo test"}),
            output: None,
            is_error: false,
            exit_code: None,
        })],
        timestamp: Some(1_000),
        model: None,
    };
    let result = |id: &str, out: &str, err: bool| Record::ToolResult {
        call_id: id.to_string(),
        output: out.to_string(),
        is_error: err,
        timestamp: Some(2_000),
        exit_code: None,
    };
    let sref = SessionRef {
        agent: Agent::Claude,
        external_id: "s1".into(),
        parent_external_id: None,
    };
    let dump = |store: &Store| -> Vec<(String, i64, String, String)> {
        let db = crate::support::open_raw(store.path()).unwrap();
        let mut st = db
            .prepare(
                "SELECT m.ext_id, m.seq, memtrail_parts(m.parts_zdict, m.body), memtrail_tools(m.tools_text, m.parts_zdict) || '|' || c.has_output || c.is_error
                 FROM messages m JOIN tool_calls c ON c.message_id = m.id ORDER BY m.seq",
            )
            .unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    // Folded: the whole batch at once.
    let mut a = Store::open(&dir.path().join("a.db")).unwrap();
    let applied = a
        .write(|w| {
            let sid = w.upsert_session(&sref, &SessionMeta::default(), &Standard)?;
            w.apply(
                sid,
                vec![
                    Record::Message(call("c1")),
                    Record::Message(call("c2")),
                    result("c2", "error: quokka failed", true),
                    result("c1", "test result: ok. 3 passed", false),
                    result("c9", "orphan output", false),
                ],
            )
        })
        .unwrap();
    assert_eq!(
        (applied.inserted, applied.results, applied.orphan_results),
        (3, 2, 1)
    );
    // One by one: one record per batch.
    let mut b = Store::open(&dir.path().join("b.db")).unwrap();
    for rec in [
        Record::Message(call("c1")),
        Record::Message(call("c2")),
        result("c2", "error: quokka failed", true),
        result("c1", "test result: ok. 3 passed", false),
        result("c9", "orphan output", false),
    ] {
        b.write(|w| {
            let sid = w.upsert_session(&sref, &SessionMeta::default(), &Standard)?;
            w.apply(sid, vec![rec])
        })
        .unwrap();
    }
    let (da, db) = (dump(&a), dump(&b));
    assert_eq!(da, db);
    assert_eq!(da.len(), 2);
    assert_eq!(
        da[1].3, "Bash cargo test \nerror: quokka failed\n|11",
        "the call with its output, flagged as an error"
    );
    let hits = query::search(
        &a,
        "quokka",
        &SearchFilter {
            limit: 5,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].message_id, "msg-c2");
}

/// The import's fast path (`unchanged_since`, no file opened) agrees with the ingest: a file as
/// its cursor left it is unchanged; grown, touched (new mtime) or replaced, it is not; nor is any
/// file whose cursor holds a skip marker (an excluded project may have been let in since).
#[test]
fn metadata_fast_path_matches_only_files_exactly_as_their_cursor_left_them() {
    use memtrail_runtime::ingest::unchanged_since;
    let mut e = env();
    let p = transcript_path(&e.root);
    append(&p, &turn1());
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    let key = p.to_string_lossy().to_string();
    let stat = |s: &Store| s.cursor_stats().unwrap().remove(&key).unwrap();
    let md = || std::fs::metadata(&p).unwrap();
    assert!(unchanged_since(&md(), &stat(&e.store)));
    assert!(
        ingest_file(&mut e.store, Agent::Claude, &p, None)
            .unwrap()
            .unchanged
    );
    // Grown.
    append(&p, &turn2());
    assert!(!unchanged_since(&md(), &stat(&e.store)));
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert!(unchanged_since(&md(), &stat(&e.store)));
    // Same bytes, new modification time.
    let f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    drop(f);
    assert!(!unchanged_since(&md(), &stat(&e.store)));
    // A cursor with a skip marker never passes.
    let mut marked = stat(&e.store);
    marked.mtime_ns = {
        use std::os::unix::fs::MetadataExt;
        Some(md().mtime() * 1_000_000_000 + md().mtime_nsec())
    };
    assert!(unchanged_since(&md(), &marked));
    marked.marked = true;
    assert!(!unchanged_since(&md(), &marked));
}

/// Issue 11 item 16: a Cursor transcript whose project folder is not on this disk (its slug
/// resolves to nothing) and a legacy Gemini session in a hash folder no Gemini registry names
/// get the project of another stored session that their path names (the slug of the folder, the
/// SHA-256 of the folder).
#[test]
fn cursor_and_legacy_gemini_sessions_take_a_known_project_their_path_names() {
    const GONE: &str = "/nonexistent-memtrail-test/gone app";
    let mut e = env();
    // A Claude session of that folder is in the store.
    let claude = e.root.join(format!(
        "projects/-nonexistent-memtrail-test-gone-app/{SID}.jsonl"
    ));
    std::fs::create_dir_all(claude.parent().unwrap()).unwrap();
    let mut env_line = envelope("u-gone", None, "2026-03-02T09:00:00.000Z");
    env_line["cwd"] = json!(GONE);
    env_line["type"] = json!("user");
    env_line["message"] = json!({"role": "user", "content": "start"});
    append(&claude, &[env_line.to_string()]);
    ingest_file(&mut e.store, Agent::Claude, &claude, None).unwrap();

    let cursor = e.root.join(
        "cursor/projects/nonexistent-memtrail-test-gone-app/agent-transcripts/0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f.jsonl",
    );
    std::fs::create_dir_all(cursor.parent().unwrap()).unwrap();
    append(
        &cursor,
        &[r#"{"role":"user","message":{"content":[{"type":"text","text":"<user_query>\nhello\n</user_query>"}]}}"#.to_string()],
    );
    ingest_file(&mut e.store, Agent::Cursor, &cursor, None).unwrap();

    let gemini = e.root.join(
        "gemini/.gemini/tmp/f327fb6bb0a499c4bb98f600fee30dd6903e510386c921fc957d806bb0d15f8c/chats/session-2025-11-02T08-15-1d2e3f4a.json",
    );
    std::fs::create_dir_all(gemini.parent().unwrap()).unwrap();
    std::fs::write(
        &gemini,
        json!({
            "sessionId": "1d2e3f4a-5b6c-4d7e-8f90-a1b2c3d4e5f6",
            "projectHash": "f327fb6bb0a499c4bb98f600fee30dd6903e510386c921fc957d806bb0d15f8c",
            "startTime": "2025-11-02T08:15:07.000Z",
            "lastUpdated": "2025-11-02T08:15:20.412Z",
            "messages": [{"id": "m1", "timestamp": "2025-11-02T08:15:07.100Z",
                          "type": "user", "content": "hello"}]
        })
        .to_string(),
    )
    .unwrap();
    ingest_file(&mut e.store, Agent::Gemini, &gemini, None).unwrap();

    let c = crate::support::open_raw(e.store.path()).unwrap();
    let project = |agent: &str| -> Option<String> {
        c.query_row(
            "SELECT project_dir FROM sessions WHERE agent = ?1",
            [agent],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!(project("claude").as_deref(), Some(GONE));
    assert_eq!(project("cursor").as_deref(), Some(GONE));
    assert_eq!(project("gemini").as_deref(), Some(GONE));
}
