//! Hostile and broken input (issue 7, item 3): invalid UTF-8, binary, empty
//! files, a folder or a FIFO where a transcript should be, permission denied, a transcript
//! deleted between reads, a full store (`SQLITE_FULL`), and a busy store. Every case ends with
//! a clear error or a counted skip, and a store that holds exactly what was committed.
//!
//! The 200 MB line has its own process (`long_line.rs`), so that its memory is measured alone.
//!
//! Transcript lines are Claude Code 2.x user lines (`docs/agents/claude.md#transcript-format`): one
//! message each, id = the line's `uuid`.

use memtrail_adapters::Agent;
use memtrail_runtime::ingest::ingest_file;
use memtrail_runtime::{Error, Store};
use memtrail_testkit::append;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SID: &str = "9d3c1e2f-4a5b-4c6d-8e7f-0a1b2c3d4e5f";

fn user(uuid: &str, text: &str) -> String {
    json!({
        "parentUuid": null, "isSidechain": false, "userType": "external",
        "cwd": "/home/user/demo", "sessionId": SID, "version": "2.1.49", "gitBranch": "main",
        "type": "user", "message": {"role": "user", "content": text},
        "uuid": uuid, "timestamp": "2026-11-20T10:00:00.000Z"
    })
    .to_string()
}

struct Env {
    _dir: tempfile::TempDir,
    root: PathBuf,
    db: PathBuf,
    store: Store,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let db = root.join("store/memtrail.db");
    let store = Store::open(&db).unwrap();
    Env {
        _dir: dir,
        root,
        db,
        store,
    }
}

impl Env {
    fn transcript(&self) -> PathBuf {
        let p = self
            .root
            .join(format!("projects/-home-user-demo/{SID}.jsonl"));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        p
    }

    /// (seq, ext_id, body) of every stored message, in order.
    fn messages(&self) -> Vec<(i64, String, String)> {
        let c = crate::support::open_raw(&self.db).unwrap();
        let mut st = c
            .prepare("SELECT seq, ext_id, body FROM messages ORDER BY session_id, seq")
            .unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    /// (offset, lines, malformed) of the transcript's cursor.
    fn cursor(&self, p: &Path) -> Option<(i64, i64, i64)> {
        let c = crate::support::open_raw(&self.db).unwrap();
        c.query_row(
            "SELECT offset, lines, malformed FROM sources WHERE path = ?1",
            [p.to_string_lossy()],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .ok()
    }
}

fn line(s: &str) -> Vec<u8> {
    format!("{s}\n").into_bytes()
}

fn assert_intact(store: &Store) {
    assert_eq!(store.quick_check().unwrap(), Ok(()));
}

#[test]
fn invalid_utf8_is_replaced_and_the_message_kept() {
    let mut e = env();
    let p = e.transcript();
    // The text holds the bytes FF FE (never valid UTF-8) between two words.
    let l = user("u1", "before XX after");
    let bad = l.replace("XX", "\u{1}\u{2}").into_bytes();
    let bad: Vec<u8> = bad
        .into_iter()
        .map(|b| match b {
            1 => 0xFF,
            2 => 0xFE,
            b => b,
        })
        .collect();
    append(&p, &bad);
    append(&p, b"\n");
    append(&p, &line(&user("u2", "second")));
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(r.inserted, 2);
    assert_eq!(r.stats.malformed, 0);
    assert_eq!(
        e.messages(),
        vec![
            (0, "u1".into(), "before \u{FFFD}\u{FFFD} after".into()),
            (1, "u2".into(), "second".into())
        ]
    );
}

/// Deterministic bytes (64-bit LCG) from 0x80..=0xFF, NUL and '\n': never JSON.
fn binary_bytes(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            match (x >> 33) % 40 {
                0 => b'\n',
                1 => 0,
                v => 0x80 + (v as u8) * 3,
            }
        })
        .collect()
}

#[test]
fn a_binary_file_is_counted_as_malformed_lines_and_nothing_is_stored() {
    let mut e = env();
    let p = e.transcript();
    let bytes = binary_bytes(256 * 1024);
    std::fs::write(&p, &bytes).unwrap();
    let complete = bytes.iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let expected_lines = bytes[..complete]
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .count() as u64;
    assert!(expected_lines > 1000);
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(r.inserted, 0);
    assert_eq!(r.stats.malformed, expected_lines);
    assert_eq!(r.bytes, complete as u64);
    assert!(e.messages().is_empty());
    assert_intact(&e.store);
}

#[test]
fn an_empty_file_stores_nothing_and_later_content_is_read() {
    let mut e = env();
    let p = e.transcript();
    std::fs::write(&p, b"").unwrap();
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!((r.inserted, r.bytes, r.stats.lines), (0, 0, 0));
    assert!(e.messages().is_empty());
    append(&p, &line(&user("u1", "now something")));
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(r.inserted, 1);
    assert_eq!(e.messages(), vec![(0, "u1".into(), "now something".into())]);
}

#[test]
fn a_folder_at_the_transcript_path_is_a_clear_error() {
    let mut e = env();
    let p = e.transcript();
    std::fs::create_dir_all(&p).unwrap();
    let err = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap_err();
    assert!(matches!(err, Error::Io(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("{} is not a regular file", p.display())
    );
    assert_eq!(e.cursor(&p), None);
}

#[cfg(unix)]
#[test]
fn a_fifo_at_the_transcript_path_never_blocks() {
    let e = env();
    let p = e.transcript();
    memtrail_testkit::mkfifo(&p);
    let (tx, rx) = std::sync::mpsc::channel();
    let path = p.clone();
    let mut store = e.store;
    std::thread::spawn(move || {
        let r = ingest_file(&mut store, Agent::Claude, &path, None).map_err(|e| e.to_string());
        let _ = tx.send(r);
    });
    let r = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("ingest of a FIFO blocked");
    assert_eq!(r, Err(format!("{} is not a regular file", p.display())));
}

#[cfg(unix)]
#[test]
fn permission_denied_is_a_clear_error() {
    use std::os::unix::fs::PermissionsExt;
    if unsafe { libc::geteuid() } == 0 {
        eprintln!("skipped: running as root, file permissions are not enforced");
        return;
    }
    let mut e = env();
    let p = e.transcript();
    append(&p, &line(&user("u1", "secret")));
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).unwrap();
    let err = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap_err();
    match &err {
        Error::Io(io) => assert_eq!(io.kind(), std::io::ErrorKind::PermissionDenied),
        other => panic!("{other:?}"),
    }
    assert!(e.messages().is_empty());
}

fn many_lines(from: usize, n: usize, pad: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in from..from + n {
        out.extend(line(&user(
            &format!("u{i}"),
            &format!("line {i} {}", "x".repeat(pad)),
        )));
    }
    out
}

#[test]
fn a_transcript_deleted_between_reads_keeps_what_was_committed() {
    let mut e = env();
    let p = e.transcript();
    append(&p, &many_lines(0, 1000, 10));
    // A spent budget stops after the first 256 lines (one transaction).
    let r = ingest_file(&mut e.store, Agent::Claude, &p, Some(Instant::now())).unwrap();
    assert!(r.incomplete);
    assert_eq!(r.inserted, 256);
    std::fs::remove_file(&p).unwrap();
    let err = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap_err();
    match &err {
        Error::Io(io) => assert_eq!(io.kind(), std::io::ErrorKind::NotFound),
        other => panic!("{other:?}"),
    }
    let m = e.messages();
    assert_eq!(m.len(), 256);
    assert_eq!(
        m[255],
        (255, "u255".into(), format!("line 255 {}", "x".repeat(10)))
    );
    assert_intact(&e.store);
}

#[test]
fn a_full_store_is_a_clear_error_and_stays_intact() {
    let mut e = env();
    let p = e.transcript();
    append(&p, &many_lines(0, 10, 10));
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    let before_cursor = e.cursor(&p).unwrap();
    // No more pages than now: the next insert needs more and hits SQLITE_FULL.
    e.store.simulate_full_disk(true).unwrap();
    append(&p, &many_lines(10, 300, 2000));
    let err = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap_err();
    assert!(matches!(err, Error::Full), "{err:?}");
    assert!(err.to_string().contains("disk is full (SQLITE_FULL)"));
    assert!(err.to_string().contains("the store is intact"));
    assert_eq!(e.messages().len(), 10);
    assert_eq!(e.cursor(&p), Some(before_cursor));
    assert_intact(&e.store);
    // Space again: the same ingest continues from the cursor, nothing lost or doubled.
    e.store.simulate_full_disk(false).unwrap();
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(r.inserted, 300);
    let m = e.messages();
    assert_eq!(m.len(), 310);
    assert!(
        m.iter()
            .enumerate()
            .all(|(i, (seq, id, _))| *seq == i as i64 && *id == format!("u{i}"))
    );
}

#[test]
fn a_writer_that_cannot_get_the_lock_by_its_deadline_fails_with_busy() {
    let mut e = env();
    let p = e.transcript();
    append(&p, &many_lines(0, 5, 10));
    let other = crate::support::open_raw(&e.db).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let t = Instant::now();
    e.store
        .set_deadline(Some(Instant::now() + Duration::from_millis(300)))
        .unwrap();
    let err = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap_err();
    let waited = t.elapsed();
    assert!(matches!(err, Error::Busy { .. }), "{err:?}");
    assert!(err.to_string().starts_with("the store is busy"));
    // It waited for the lock, but not past its deadline (plus scheduling slack).
    assert!(waited >= Duration::from_millis(250), "{waited:?}");
    assert!(waited < Duration::from_millis(1000), "{waited:?}");
    assert!(e.messages().is_empty());
    other.execute_batch("COMMIT").unwrap();
    // The lock is free: the next ingest gets everything, once.
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(r.inserted, 5);
}

#[test]
fn repair_rebuilds_a_broken_index_and_recounts() {
    let mut e = env();
    let p = e.transcript();
    append(&p, &many_lines(0, 20, 10));
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    // Indexed (as any search, import or MCP server leaves the store), then damaged.
    assert_eq!(e.store.catch_up_index(None).unwrap(), 20);
    {
        let c = crate::support::open_raw(e.store.path()).unwrap();
        // Damage the derived data: drop index entries of 3 messages, a wrong count.
        c.execute_batch(
            "INSERT INTO messages_fts (messages_fts, rowid, body, tools, cjk)
                 SELECT 'delete', id, body, memtrail_tools(tools_text, parts_zdict), cjk FROM messages WHERE seq < 3;
             UPDATE sessions SET message_count = 99;
             INSERT INTO events (session_id, message_id, seq, category, action, priority, subject)
                 SELECT session_id, id, seq, 'file', 'edited', 2, 'not/in/any/message.rs'
                 FROM messages WHERE seq = 0;",
        )
        .unwrap();
        let hits: i64 = c
            .query_row(
                "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'line'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(hits, 17);
    }
    let report = e.store.repair().unwrap();
    let fixed: Vec<(&str, u64)> = report
        .steps
        .iter()
        .map(|s| (s.name.as_str(), s.fixed))
        .collect();
    assert_eq!(
        fixed,
        vec![
            ("stored text", 0),
            ("damaged parts", 0),
            ("full-text index", 1),
            ("tool calls", 0),
            ("events", 1),
            ("message counts", 1)
        ]
    );
    assert!(report.ok(), "{:?}", report.integrity);
    let c = crate::support::open_raw(e.store.path()).unwrap();
    let hits: i64 = c
        .query_row(
            "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'line'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(hits, 20);
    let n: i64 = c
        .query_row("SELECT message_count FROM sessions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 20);
    // A second repair finds nothing to fix.
    let again = e.store.repair().unwrap();
    assert!(again.steps.iter().all(|s| s.fixed == 0));
}

#[test]
fn a_line_nested_100k_deep_is_read_without_overflowing_the_stack() {
    let mut e = env();
    let p = e.transcript();
    append(&p, &line(&user("u1", "before")));
    // A JSON object whose `message` is 100,000 nested arrays: serde_json's recursion limit
    // (128) refuses it instead of overflowing the stack, and the line is read again with the
    // values below 100 levels as `null` (`model::parse_object_line`): a `message` that is an
    // array holds no prompt, so the line is passed over as one with nothing to store.
    let mut deep = br#"{"type":"user","uuid":"deep","message":"#.to_vec();
    deep.extend(std::iter::repeat_n(b'[', 100_000));
    deep.extend(std::iter::repeat_n(b']', 100_000));
    deep.extend(b"}\n");
    append(&p, &deep);
    append(&p, &line(&user("u2", "after")));
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(
        (
            r.inserted,
            r.stats.lines,
            r.stats.malformed,
            r.stats.skipped()
        ),
        (2, 3, 0, 1)
    );
    assert_eq!(
        e.messages(),
        vec![
            (0, "u1".into(), "before".into()),
            (1, "u2".into(), "after".into())
        ]
    );
}

/// A compressed row damaged on disk (one byte of its zstd frame changed) cannot give the
/// full-text index its old text back: deleting or rewriting its message is refused with an error
/// that names `memtrail repair`, instead of leaving the message's words in the index pointing at
/// nothing (which made every search meeting them fail, for every session). Repair takes the
/// unreadable parts out and rebuilds the index; the delete then goes through.
#[test]
fn a_damaged_frame_stops_its_delete_until_repair_and_never_breaks_search() {
    use memtrail_runtime::maintenance;
    use memtrail_runtime::query::{self, SearchFilter};
    let mut e = env();
    let a = e.transcript();
    let b = a.with_file_name("0b0c0d0e-1f2a-4b3c-8d4e-5f6a7b8c9d0e.jsonl");
    let cwd = "/home/user/demo";
    let assistant = json!({
        "type": "assistant", "uuid": "a1", "parentUuid": null, "sessionId": SID, "cwd": cwd,
        "timestamp": "2026-11-20T10:00:01.000Z",
        "message": {"model": "claude-sonnet-4-5", "id": "msg_a1", "type": "message",
                    "role": "assistant", "stop_reason": null, "content": [
            {"type": "text", "text": "running the build"},
            {"type": "tool_use", "id": "toolu_01mongoose", "name": "Bash",
             "input": {"command": "cargo build"}}]}
    });
    let output: String = (0..300)
        .map(|i| format!("line {i}: mongooseoutput compiled\n"))
        .collect();
    let result = json!({
        "type": "user", "uuid": "r1", "parentUuid": "a1", "sessionId": SID, "cwd": cwd,
        "timestamp": "2026-11-20T10:00:02.000Z",
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01mongoose", "content": output}]}
    });
    append(&a, &line(&assistant.to_string()));
    append(&a, &line(&result.to_string()));
    append(
        &b,
        &line(
            &user("b1", "the healthy wombatword prompt")
                .replace(SID, "0b0c0d0e-1f2a-4b3c-8d4e-5f6a7b8c9d0e"),
        ),
    );
    ingest_file(&mut e.store, Agent::Claude, &a, None).unwrap();
    ingest_file(&mut e.store, Agent::Claude, &b, None).unwrap();
    e.store.catch_up_index(None).unwrap();
    let search = |s: &Store, q: &str| -> Result<usize, String> {
        query::search(s, q, &SearchFilter::default())
            .map(|h| h.len())
            .map_err(|e| e.to_string())
    };
    assert_eq!(search(&e.store, "mongooseoutput"), Ok(1));
    // One byte in the middle of the frame changed, as on a damaged disk (no trigger fires).
    {
        let c = crate::support::open_raw(&e.db).unwrap();
        let triggers: Vec<(String, String)> = c
            .prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'messages'")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let (id, mut frame): (i64, Vec<u8>) = c
            .query_row(
                "SELECT id, parts_zdict FROM messages WHERE ext_id = 'msg_a1'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(&frame[..4], &[0x28, 0xB5, 0x2F, 0xFD], "a zstd frame");
        let mid = frame.len() / 2;
        frame[mid] ^= 0x20;
        for (name, _) in &triggers {
            c.execute_batch(&format!("DROP TRIGGER \"{name}\""))
                .unwrap();
        }
        c.execute(
            "UPDATE messages SET parts_zdict = ?2 WHERE id = ?1",
            rusqlite::params![id, frame],
        )
        .unwrap();
        for (_, sql) in &triggers {
            c.execute_batch(sql).unwrap();
        }
    }
    let refused = maintenance::delete_session(&mut e.store, SID)
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("damaged") && refused.contains("memtrail repair"),
        "{refused}"
    );
    // Nothing was deleted, and search works for both sessions.
    assert_eq!(e.messages().len(), 2);
    assert_eq!(search(&e.store, "wombatword"), Ok(1));
    assert_eq!(search(&e.store, "mongooseoutput"), Ok(1));
    let report = e.store.repair().unwrap();
    let step = |name: &str| report.steps.iter().find(|s| s.name == name).unwrap().fixed;
    // The step that takes the parts out rebuilds the index in the same transaction: the next
    // step finds nothing wrong.
    assert_eq!(
        (step("damaged parts"), step("full-text index")),
        (1, 0),
        "{report:?}"
    );
    assert!(report.ok(), "{:?}", report.integrity);
    // The message keeps its prose; its output could not be read, so it is not found any more.
    assert_eq!(search(&e.store, "mongooseoutput"), Ok(0));
    assert_eq!(search(&e.store, "running build"), Ok(1));
    maintenance::delete_session(&mut e.store, SID).unwrap();
    assert_eq!(search(&e.store, "running build"), Ok(0));
    assert_eq!(search(&e.store, "wombatword"), Ok(1));
    let c = crate::support::open_raw(&e.db).unwrap();
    c.execute(
        "INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)",
        [],
    )
    .expect("the index agrees with its content");
    assert_intact(&e.store);
}

/// U+0001 and U+0002 mark a snippet's hits (`query::HL_START`, `HL_END`): a transcript that
/// holds them cannot fake a highlight (shown as U+FFFD), and the index still agrees with its
/// content (all three are separators to the tokenizer).
#[test]
fn transcript_text_cannot_fake_a_highlight() {
    use memtrail_runtime::query::{self, HL_END, HL_START, SearchFilter};
    let mut e = env();
    let p = e.transcript();
    append(
        &p,
        &line(&user("u1", "\u{1}FAKEHIT\u{2} and the real otterword\u{1}")),
    );
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    let hits = query::search(&e.store, "otterword", &SearchFilter::default()).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(
        hits[0].snippet,
        format!("\u{FFFD}FAKEHIT\u{FFFD} and the real {HL_START}otterword{HL_END}\u{FFFD}")
    );
    assert_eq!(
        query::search(&e.store, "fakehit", &SearchFilter::default())
            .unwrap()
            .len(),
        1
    );
    // The snippet of a hit ranked by meaning (the message's first characters) too; and an
    // excluded word leaves the message out there.
    let rowid: i64 = crate::support::open_raw(&e.db)
        .unwrap()
        .query_row("SELECT id FROM messages", [], |r| r.get(0))
        .unwrap();
    let f = SearchFilter::default();
    let by_meaning =
        memtrail_runtime::store::hits_for_messages(&e.store, &[(rowid, 0.9)], &[], &f).unwrap();
    assert_eq!(
        by_meaning[0].snippet,
        "\u{FFFD}FAKEHIT\u{FFFD} and the real otterword\u{FFFD}"
    );
    let excluded = query::meaning_query("river -otterword").unwrap().1;
    assert_eq!(
        memtrail_runtime::store::hits_for_messages(&e.store, &[(rowid, 0.9)], &excluded, &f)
            .unwrap(),
        []
    );
    // A message still queued for the index cannot be checked for an excluded word: left out
    // while it waits, there again without an exclusion.
    let other = query::meaning_query("river -zebraword").unwrap().1;
    let hits = |ex: &[query::QueryItem]| {
        memtrail_runtime::store::hits_for_messages(&e.store, &[(rowid, 0.9)], ex, &f)
            .unwrap()
            .len()
    };
    assert_eq!(hits(&other), 1);
    crate::support::open_raw(&e.db)
        .unwrap()
        .execute("INSERT INTO fts_pending (id) VALUES (?1)", [rowid])
        .unwrap();
    assert_eq!((hits(&other), hits(&[])), (0, 1));
    crate::support::open_raw(&e.db)
        .unwrap()
        .execute("DELETE FROM fts_pending", [])
        .unwrap();
    let c = crate::support::open_raw(&e.db).unwrap();
    c.execute(
        "INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)",
        [],
    )
    .expect("the index agrees with its content");
}

/// A query past the term cap is refused by the store's search, not searched without its tail
/// (an exclusion there would be dropped and its matches come back).
#[test]
fn a_query_past_the_term_cap_is_refused_by_the_search() {
    use memtrail_runtime::query::{self, MAX_QUERY_TERMS, SearchFilter};
    let mut e = env();
    let p = e.transcript();
    append(&p, &line(&user("u1", "the keepword and the beta word")));
    ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    let fillers: String = (0..MAX_QUERY_TERMS - 1)
        .map(|i| format!(" -zz{i}"))
        .collect();
    let f = SearchFilter::default();
    assert_eq!(
        query::search(&e.store, &format!("keepword{fillers}"), &f)
            .unwrap()
            .len(),
        1
    );
    match query::search(&e.store, &format!("keepword{fillers} -beta"), &f) {
        Err(Error::Invalid(m)) => assert!(m.contains("more than 32 words"), "{m}"),
        other => panic!("{other:?}"),
    }
}
