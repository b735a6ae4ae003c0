//! Reliability of the `memtrail` binary (issue 7): a hook facing a locked store, hostile hook
//! payloads, a reader that panics during import, and `memtrail repair` / `status` checks. Each
//! runs in a sandboxed HOME.

use crate::support;

use serde_json::{Value, json};
use std::io::Write;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};
use support::{Sandbox, append, claude_line, message_count, session_id, stop_payload};

const CWD: &str = "/home/user/rel";

/// Run a hook with `payload` on stdin; its output and wall time.
fn hook(sb: &Sandbox, payload: &[u8], budget_ms: Option<u64>) -> (Output, Duration) {
    let mut c = sb.cmd();
    c.args(["hook", "claude"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(b) = budget_ms {
        c.env("MEMTRAIL_HOOK_BUDGET_MS", b.to_string());
    }
    let t = Instant::now();
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let payload = payload.to_vec();
    let writer = std::thread::spawn(move || {
        // The hook may stop reading early (a payload over the limit): EPIPE is fine.
        let _ = stdin.write_all(&payload);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (out, t.elapsed())
}

fn assert_silent_success(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}: {:?}", out.status);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{what}: stdout");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{what}: stderr");
}

fn write_lines(path: &std::path::Path, sid: &str, range: std::ops::Range<u64>) {
    let mut text = String::new();
    for i in range {
        text.push_str(&claude_line(sid, CWD, i));
        text.push('\n');
    }
    append(path, text.as_bytes());
}

#[test]
fn a_hook_facing_a_locked_store_gives_up_within_its_budget_and_the_next_catches_up() {
    let sb = Sandbox::new();
    let sid = session_id(1);
    let t = sb.transcript("rel", &sid);
    write_lines(&t, &sid, 0..4);
    let payload = stop_payload(&t, &sid, CWD);
    let (out, _) = hook(&sb, payload.as_bytes(), None);
    assert_silent_success(&out, "first hook");
    assert_eq!(message_count(&sb.db()), 4);

    write_lines(&t, &sid, 4..10);
    // Another process holds the write lock for longer than the hook's budget.
    let other = rusqlite::Connection::open(sb.db()).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (out, took) = hook(&sb, payload.as_bytes(), Some(400));
    assert_silent_success(&out, "hook on a locked store");
    // It waited for the lock up to its budget, then gave up (slack: process start and exit).
    assert!(took >= Duration::from_millis(350), "{took:?}");
    assert!(took < Duration::from_millis(400 + 1500), "{took:?}");
    let log = std::fs::read_to_string(sb.hook_log()).unwrap();
    assert!(log.contains("the store is busy"), "{log}");
    other.execute_batch("COMMIT").unwrap();
    assert_eq!(message_count(&sb.db()), 4);

    // The lock is free: the next hook catches up from the cursor, nothing lost or doubled.
    let (out, _) = hook(&sb, payload.as_bytes(), None);
    assert_silent_success(&out, "next hook");
    assert_eq!(message_count(&sb.db()), 10);
}

/// `[[[ ... ]]]` nested `depth` deep.
fn nested(depth: usize) -> Vec<u8> {
    let mut v = vec![b'['; depth];
    v.extend(std::iter::repeat_n(b']', depth));
    v
}

#[test]
fn hostile_hook_payloads_fail_open_silently_and_are_logged() {
    let sb = Sandbox::new();
    let sid = session_id(2);
    let t = sb.transcript("rel", &sid);
    write_lines(&t, &sid, 0..2);
    let valid = stop_payload(&t, &sid, CWD);
    // A valid payload padded past 4 MB with a long extra field.
    let mut huge: Value = serde_json::from_str(&valid).unwrap();
    huge["padding"] = json!("p".repeat(5 * 1024 * 1024));
    // A payload nested 100,000 deep inside a valid object.
    let mut deep = br#"{"session_id":"x","hook_event_name":"Stop","extra":"#.to_vec();
    deep.extend(nested(100_000));
    deep.push(b'}');
    let binary: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 256) as u8).collect();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("not JSON", b"this is not json {".to_vec(), "error: "),
        (
            "over 4 MB",
            huge.to_string().into_bytes(),
            "hook payload larger than 4194304 bytes",
        ),
        ("nested 100k deep", deep, "error: "),
        ("bare deep array", nested(100_000), "error: "),
        ("binary", binary, "error: "),
    ];
    for (i, (what, payload, logged)) in cases.iter().enumerate() {
        let (out, _) = hook(&sb, payload, None);
        assert_silent_success(&out, what);
        let log = std::fs::read_to_string(sb.hook_log()).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), i + 1, "{what}: one log line each: {log}");
        assert!(lines[i].contains(logged), "{what}: {}", lines[i]);
        assert!(!log.contains("panic"), "{what}: {log}");
    }
    // Nothing was stored by the bad payloads; a good one still works.
    assert!(!sb.db().exists() || message_count(&sb.db()) == 0);
    let (out, _) = hook(&sb, valid.as_bytes(), None);
    assert_silent_success(&out, "valid payload");
    assert_eq!(message_count(&sb.db()), 2);
}

#[test]
fn import_contains_a_panicking_reader_and_imports_the_rest() {
    let sb = Sandbox::new();
    let (a, b) = (session_id(3), session_id(4));
    let ta = sb.transcript("rel", &a);
    let tb = sb.transcript("boom", &b);
    write_lines(&ta, &a, 0..7);
    write_lines(&tb, &b, 0..5);
    let out = sb
        .cmd()
        .args(["import", "--json"])
        .env("MEMTRAIL_FAULT_PANIC_PATH", "-home-user-boom")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let claude = &v["agents"][0];
    assert_eq!(claude["panicked"], 1, "{v}");
    assert_eq!(claude["messages"], 7, "{v}");
    let bad = claude["unreadable"].as_array().unwrap();
    assert_eq!(bad.len(), 1, "{v}");
    assert_eq!(bad[0][0], tb.display().to_string());
    assert!(
        bad[0][1]
            .as_str()
            .unwrap()
            .starts_with("internal error (panic) while reading: fault injection"),
        "{v}"
    );
    assert_eq!(message_count(&sb.db()), 7);
    // Without the fault the next import takes the other file, and only it.
    let out = sb.cmd().args(["import", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["agents"][0]["messages"], 5, "{v}");
    assert_eq!(message_count(&sb.db()), 12);
}

#[test]
fn repair_rebuilds_the_index_and_status_runs_a_quick_check() {
    let sb = Sandbox::new();
    let sid = session_id(5);
    let t = sb.transcript("rel", &sid);
    write_lines(&t, &sid, 0..12);
    assert!(sb.cmd().args(["import"]).output().unwrap().status.success());
    // Damage: the index loses every entry, a session count is wrong.
    let c = rusqlite::Connection::open(sb.db()).unwrap();
    c.execute_batch(
        "INSERT INTO messages_fts (messages_fts) VALUES ('delete-all');
         UPDATE sessions SET message_count = 3;",
    )
    .unwrap();
    drop(c);
    let search = |q: &str| -> usize {
        let out = sb.cmd().args(["search", q, "--json"]).output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["hits"].as_array().unwrap().len()
    };
    assert_eq!(search("module"), 0);

    let out = sb.cmd().args(["repair", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let fixed: Vec<(String, u64)> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().into(),
                s["fixed"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        fixed,
        vec![
            ("stored text".into(), 0),
            ("damaged parts".into(), 0),
            ("full-text index".into(), 1),
            ("tool calls".into(), 0),
            ("events".into(), 0),
            ("message counts".into(), 1)
        ]
    );
    assert_eq!(v["integrity"], json!(["ok"]));
    // Even prompts (i = 0, 2, .., 10) say "the module": 6 hits.
    assert_eq!(search("module"), 6);

    let out = sb.cmd().args(["repair"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    for (i, want) in [
        "stored text: messages written before schema 13 compressed, their tool text no longer stored twice, the prose of messages written before schema 14 stored once, and the parts of messages written before schema 21 compressed with the parts dictionary; nothing to rewrite (",
        "damaged parts: the compressed parts that can no longer be read taken out (their messages keep their text); 0 taken out (",
        "full-text index: rebuilt from the stored messages (body, tools, CJK); nothing was wrong (",
        "tool calls: checked for tool calls whose message is gone (deleted when found); nothing was wrong (",
        "events: extracted again from the stored messages; nothing was wrong (",
        "message counts: each session's recounted from the stored messages; nothing was wrong (",
    ]
    .iter()
    .enumerate()
    {
        assert!(lines[i].starts_with(want), "{text}");
    }
    assert!(text.contains("integrity check: ok"), "{text}");

    let out = sb.cmd().args(["status"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("quick integrity check ok"), "{text}");
    let out = sb.cmd().args(["status", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["store"]["integrity"], "ok", "{v}");
    assert_eq!(v["store"]["integrity_check"], "quick_check", "{v}");
    assert_eq!(v["store"]["messages"], 12, "{v}");

    // No store: a clear error.
    let out = sb
        .cmd()
        .args(["--db", "/nonexistent/m.db", "repair"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "memtrail: there is no store at /nonexistent/m.db (nothing to repair)\n"
    );
}

/// A transcript the user cannot read (mode 000) is named in the import's summary as an error,
/// and every other transcript is still imported. As root, permissions are not enforced, so
/// the import then runs as `nobody` (with `setpriv`) on a sandbox that `nobody` owns.
#[cfg(unix)]
#[test]
fn import_names_an_unreadable_transcript_and_imports_the_rest() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let (a, b) = (session_id(21), session_id(22));
    let ta = sb.transcript("rel", &a);
    let tb = sb.transcript("rel", &b);
    write_lines(&ta, &a, 0..3);
    write_lines(&tb, &b, 0..5);
    // /proc/self belongs to the process's effective user.
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    let mut cmd = sb.cmd();
    if root {
        let Some(setpriv) = ["/usr/bin/setpriv", "/bin/setpriv"]
            .into_iter()
            .map(std::path::PathBuf::from)
            .find(|p| p.exists())
        else {
            eprintln!("skipped: running as root without setpriv");
            return;
        };
        // `nobody` must be able to reach the binary and own the sandbox.
        let top = sb.home.parent().unwrap();
        let bin = top.join("memtrail");
        std::fs::copy(support::memtrail_bin(), &bin).unwrap();
        let st = std::process::Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(top)
            .status()
            .unwrap();
        assert!(st.success());
        let mut c = std::process::Command::new(setpriv);
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin)
            .env_clear();
        for (k, v) in cmd.get_envs() {
            if let Some(v) = v {
                c.env(k, v);
            }
        }
        c.current_dir(top);
        cmd = c;
    }
    std::fs::set_permissions(&tb, std::fs::Permissions::from_mode(0o000)).unwrap();
    let out = cmd.args(["import", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let claude = &v["agents"][0];
    assert_eq!(claude["agent"], "claude");
    assert_eq!(claude["files"], 2);
    assert_eq!(claude["messages"], 3);
    assert_eq!(claude["unreadable"].as_array().unwrap().len(), 1, "{v:#}");
    assert_eq!(claude["unreadable"][0][0], tb.to_str().unwrap());
    assert!(
        claude["unreadable"][0][1]
            .as_str()
            .unwrap()
            .starts_with("Permission denied"),
        "{v:#}"
    );
    std::fs::set_permissions(&tb, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(
        message_count(&sb.db()),
        3,
        "the readable transcript is imported"
    );
}

/// An agent that never closes the hook's stdin does not hold it: the hook waits at most its
/// budget (at least `MIN_STDIN_WAIT_MS`, 2 s) for the payload, then exits 0 silently and logs why.
#[test]
fn a_hook_whose_stdin_stays_open_exits_within_its_budget() {
    let sb = Sandbox::new();
    let mut child = sb
        .cmd()
        .args(["hook", "claude"])
        .env("MEMTRAIL_HOOK_BUDGET_MS", "300")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"session_id\": \"s\"").unwrap();
    let t = Instant::now();
    let deadline = t + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "the hook still waits on stdin");
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let log = std::fs::read_to_string(sb.hook_log()).unwrap();
    assert!(log.contains("stdin was not closed"), "{log}");
}

/// A torn copy whose full-text index data is corrupt (the FTS5 shadow table `messages_fts_data`
/// holds garbage): `repair` rebuilds the index from the messages and the store is whole again.
#[test]
fn repair_fixes_corrupt_full_text_index_data() {
    let sb = Sandbox::new();
    let sid = session_id(6);
    let t = sb.transcript("rel", &sid);
    write_lines(&t, &sid, 0..8);
    assert!(sb.cmd().args(["import"]).output().unwrap().status.success());
    // Four more messages captured by a hook: queued for the index, not in it yet.
    write_lines(&t, &sid, 8..12);
    let (out, _) = hook(&sb, stop_payload(&t, &sid, CWD).as_bytes(), None);
    assert_silent_success(&out, "hook");
    let c = rusqlite::Connection::open(sb.db()).unwrap();
    let queued: i64 = c
        .query_row("SELECT COUNT(*) FROM fts_pending", [], |r| r.get(0))
        .unwrap();
    assert_eq!(queued, 4);
    // Every index block, the structure record (id 10) included, becomes garbage.
    let n = c
        .execute(
            "UPDATE messages_fts_data SET block = randomblob(length(block))",
            [],
        )
        .unwrap();
    assert!(n > 0);
    drop(c);
    let out = sb.cmd().args(["repair", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["integrity"], json!(["ok"]), "{v}");
    assert_eq!(v["steps"][2]["name"], "full-text index");
    assert_eq!(v["steps"][2]["fixed"], 1, "{v}");
    // Even prompts (i = 0, 2, .., 10) say "the module": 6 hits.
    let out = sb
        .cmd()
        .args(["search", "module", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hits"].as_array().unwrap().len(), 6, "{v}");
    let c = rusqlite::Connection::open(sb.db()).unwrap();
    memtrail_runtime::store::register_sql_functions(&c).unwrap();
    let check: String = c
        .query_row(
            "INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1) RETURNING 'ok'",
            [],
            |r| r.get(0),
        )
        .unwrap_or_else(|e| e.to_string());
    assert_eq!(check, "ok");
}

/// The rowids of the cells of a table b-tree leaf page (`0x0D`), read from the file as the
/// format defines it (<https://sqlite.org/fileformat2.html#b_tree_pages>): the cell count at
/// header offset 3, the cell pointers after the 8-byte header, each cell a varint payload size
/// then a varint rowid.
fn leaf_rowids(file: &[u8], page_size: usize, pgno: usize) -> Vec<i64> {
    let page = &file[(pgno - 1) * page_size..pgno * page_size];
    assert_eq!(page[0], 0x0D, "page {pgno} is a table leaf");
    let varint = |mut at: usize| -> (i64, usize) {
        let mut v: i64 = 0;
        for i in 0..9 {
            let b = page[at];
            at += 1;
            if i == 8 {
                return ((v << 8) | b as i64, at);
            }
            v = (v << 7) | (b & 0x7f) as i64;
            if b & 0x80 == 0 {
                break;
            }
        }
        (v, at)
    };
    let cells = u16::from_be_bytes([page[3], page[4]]) as usize;
    (0..cells)
        .map(|i| {
            let ptr = u16::from_be_bytes([page[8 + 2 * i], page[9 + 2 * i]]) as usize;
            let (_, at) = varint(ptr);
            varint(at).0
        })
        .collect()
}

/// A store whose cursors (`sources`, which hold the marks of deleted sessions) are on a damaged
/// page: `repair` does not bring a deleted session back from its transcript. Only the sessions
/// the salvaged store still holds are read again; the other transcripts are listed for the user
/// to import by hand.
#[test]
fn repair_of_damaged_cursors_does_not_bring_a_deleted_session_back() {
    let sb = Sandbox::new();
    let sids: Vec<String> = (21..23).map(session_id).collect();
    let mut transcripts = Vec::new();
    for sid in &sids {
        let t = sb.transcript("rel", sid);
        write_lines(&t, sid, 0..40);
        transcripts.push(t);
    }
    assert!(sb.cmd().args(["import"]).output().unwrap().status.success());
    sb.json(&["sessions", "delete", &sids[1], "--yes", "--json"]);
    assert_eq!(message_count(&sb.db()), 40);
    let c = rusqlite::Connection::open(sb.db()).unwrap();
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    let page_size: usize = c
        .query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
        .unwrap() as usize;
    let pages: Vec<usize> = c
        .prepare("SELECT pageno FROM dbstat WHERE name = 'sources'")
        .unwrap()
        .query_map([], |r| r.get::<_, i64>(0))
        .unwrap()
        .map(|p| p.unwrap() as usize)
        .collect();
    drop(c);
    let mut bytes = std::fs::read(sb.db()).unwrap();
    for p in pages {
        bytes[(p - 1) * page_size..p * page_size].fill(0xFF);
    }
    std::fs::write(sb.db(), &bytes).unwrap();

    let out = sb.cmd().args(["repair"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("  sources: 0 rows kept, some unreadable\n"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "transcripts still on disk imported again: 0 messages restored\n\
             1 transcript not imported again: their sessions are not in the salvaged store, \
             and the list of sessions you deleted was damaged, so they may be among them; \
             `memtrail import` reads them:\n  {}\n",
            transcripts[1].display()
        )),
        "{text}"
    );
    assert!(text.ends_with("integrity check: ok\n"), "{text}");
    let list = sb.json(&["sessions", "list", "--json"]);
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![sids[0].as_str()]);
    assert_eq!(message_count(&sb.db()), 40);
}

/// A store with a corrupt b-tree page of `messages` (garbage written over one leaf page):
/// `repair` salvages every readable row into a new store, keeps the damaged file aside (its
/// path printed), imports the transcripts still on disk again, and ends with an intact store.
/// Only the rows on the damaged page of a session whose transcript is gone are lost.
#[test]
fn repair_salvages_a_store_with_a_corrupt_btree_page() {
    let sb = Sandbox::new();
    let sids: Vec<String> = (11..14).map(session_id).collect();
    let mut transcripts = Vec::new();
    for sid in &sids {
        let t = sb.transcript("rel", sid);
        write_lines(&t, sid, 0..40);
        transcripts.push(t);
    }
    assert!(sb.cmd().args(["import"]).output().unwrap().status.success());
    assert_eq!(message_count(&sb.db()), 120);
    // The second session's transcript is gone (Claude Code's cleanup): only the store has it.
    std::fs::remove_file(&transcripts[1]).unwrap();
    let c = rusqlite::Connection::open(sb.db()).unwrap();
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    let page_size: usize = c
        .query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
        .unwrap() as usize;
    let leaves: Vec<usize> = c
        .prepare("SELECT pageno FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf' ORDER BY pageno")
        .unwrap()
        .query_map([], |r| r.get::<_, i64>(0))
        .unwrap()
        .map(|p| p.unwrap() as usize)
        .collect();
    assert!(leaves.len() >= 3, "{leaves:?}");
    let session_of: std::collections::HashMap<i64, String> = c
        .prepare(
            "SELECT m.id, s.external_id FROM messages m JOIN sessions s ON s.id = m.session_id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    drop(c);
    let bytes = std::fs::read(sb.db()).unwrap();
    // The leaf (not the first or last) holding the most rows of the second session.
    let (page, lost) = leaves[1..leaves.len() - 1]
        .iter()
        .map(|&p| {
            let of_second = leaf_rowids(&bytes, page_size, p)
                .iter()
                .filter(|id| session_of[id] == sids[1])
                .count();
            (p, of_second)
        })
        .max_by_key(|&(_, n)| n)
        .unwrap();
    assert!(lost > 0);
    let mut damaged = bytes.clone();
    damaged[(page - 1) * page_size..page * page_size].fill(0xFF);
    std::fs::write(sb.db(), &damaged).unwrap();

    let out = sb.cmd().args(["repair"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("the store's file is damaged ("), "{text}");
    let aside = text
        .lines()
        .find_map(|l| l.strip_prefix("the damaged file is kept at "))
        .and_then(|l| l.strip_suffix(" (delete it once you are content)"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        aside.starts_with(&format!("{}.damaged-", sb.db().display())),
        "{aside}"
    );
    assert_eq!(std::fs::read(aside).unwrap(), damaged, "kept as it was");
    assert!(text.ends_with("integrity check: ok\n"), "{text}");
    // The transcripts on disk are whole again; of the gone one, all but the damaged page.
    let c = rusqlite::Connection::open(sb.db()).unwrap();
    let count = |sid: &str| -> usize {
        c.query_row(
            "SELECT COUNT(*) FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.external_id = ?1",
            [sid],
            |r| r.get::<_, i64>(0),
        )
        .unwrap() as usize
    };
    assert_eq!(
        sids.iter().map(|s| count(s)).collect::<Vec<_>>(),
        vec![40, 40 - lost, 40]
    );
    let ok: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    drop(c);
    // Searchable again: even prompts say "the module" (20 per session, fewer for the second).
    let out = sb
        .cmd()
        .args(["search", "module", "--limit", "500", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["hits"].as_array().unwrap().len() >= 40, "{v}");
}

/// `status` stays fast on a large store: the quick integrity check (which reads the whole file)
/// runs by default only up to 8 MB; `status --check` runs it on any store.
#[test]
fn status_checks_integrity_of_a_large_store_only_when_asked() {
    let sb = Sandbox::new();
    let sid = session_id(21);
    let t = sb.transcript("rel", &sid);
    write_lines(&t, &sid, 0..2);
    assert!(sb.cmd().args(["import"]).output().unwrap().status.success());
    let status = |args: &[&str]| -> Value {
        let out = sb.cmd().args(args).output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let v = status(&["status", "--json"]);
    assert_eq!(v["store"]["integrity_check"], "quick_check", "{v}");
    // Over 8 MB: a 9 MB store file.
    let c = rusqlite::Connection::open(sb.db()).unwrap();
    c.execute_batch(
        "CREATE TABLE padding (b BLOB); INSERT INTO padding VALUES (zeroblob(9 * 1024 * 1024));
         PRAGMA wal_checkpoint(TRUNCATE);",
    )
    .unwrap();
    drop(c);
    assert!(std::fs::metadata(sb.db()).unwrap().len() > 8 << 20);
    let v = status(&["status", "--json"]);
    assert_eq!(
        (&v["store"]["integrity_check"], &v["store"]["integrity"]),
        (&json!("skipped"), &json!("not checked")),
        "{v}"
    );
    let text = String::from_utf8(sb.cmd().arg("status").output().unwrap().stdout).unwrap();
    assert!(
        text.contains(", integrity not checked: over 8 MB, `memtrail status --check` checks it)"),
        "{text}"
    );
    let v = status(&["status", "--check", "--json"]);
    assert_eq!(
        (&v["store"]["integrity_check"], &v["store"]["integrity"]),
        (&json!("quick_check"), &json!("ok")),
        "{v}"
    );
}

/// A VS Code chat session (`chatSessions/<id>.json`) in `ws`, made of the fixture's first three
/// requests repeated `copies` times (ids made unique): 6 messages per copy.
fn chat_session(ws: &std::path::Path, sid: &str, copies: usize) -> std::path::PathBuf {
    let fx = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vscode");
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(fx.join("chat-session.json")).unwrap()).unwrap();
    let requests: Vec<Value> = doc["requests"].as_array().unwrap()[..3].to_vec();
    let mut all = Vec::new();
    for c in 0..copies {
        for r in &requests {
            let mut r = r.clone();
            for k in ["requestId", "responseId"] {
                r[k] = json!(format!("{}-{c}", r[k].as_str().unwrap()));
            }
            all.push(r);
        }
    }
    doc["requests"] = Value::Array(all);
    doc["sessionId"] = json!(sid);
    std::fs::create_dir_all(ws.join("chatSessions")).unwrap();
    std::fs::copy(fx.join("workspace.json"), ws.join("workspace.json")).unwrap();
    let p = ws.join("chatSessions").join(format!("{sid}.json"));
    std::fs::write(&p, serde_json::to_vec(&doc).unwrap()).unwrap();
    p
}

fn vscode_stop(sb: &Sandbox, path: &std::path::Path, sid: &str, budget_ms: u64) -> Output {
    let payload = json!({"hookEventName": "Stop", "sessionId": sid,
        "transcript_path": path, "cwd": "/home/user/my demo"});
    sb.cmd()
        .args(["hook", "vscode"])
        .env("MEMTRAIL_HOOK_BUDGET_MS", budget_ms.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin
                .take()
                .unwrap()
                .write_all(payload.to_string().as_bytes())?;
            c.wait_with_output()
        })
        .unwrap()
}

/// A whole-file session too large for the time a hook has is not parsed by the hook: it is
/// noted as waiting (with its size: `status` says so, and that a background read has it), and
/// a detached `memtrail hook-settle` stores it once the file is quiet; a small one is still
/// stored by the hook itself.
#[test]
fn a_whole_file_session_too_large_for_a_hook_is_stored_in_the_background() {
    let sb = Sandbox::new();
    let ws = sb.home.join(".config/Code/User/workspaceStorage/0a1b2c");
    // Small (17 KB): stored by the hook at once, even with a 100 ms budget.
    let small_sid = "9d8e7f6a-0000-4000-8000-000000000001";
    let small = chat_session(&ws, small_sid, 2);
    let out = vscode_stop(&sb, &small, small_sid, 3000);
    assert_silent_success(&out, "small, first hook");
    assert_eq!(message_count(&sb.db()), 12);

    // Large (2.4 MB: 0.3 s at the assumed rate, past a 100 ms budget's 90 ms).
    let sid = "9d8e7f6a-0000-4000-8000-000000000002";
    let big = chat_session(&ws, sid, 300);
    let size = std::fs::metadata(&big).unwrap().len();
    assert!(size > 2_000_000, "{size}");
    // The agent keeps rewriting it (same content) for now: the background read waits for it
    // to be quiet.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let toucher = {
        let (stop, big) = (stop.clone(), big.clone());
        let bytes = std::fs::read(&big).unwrap();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(250));
                std::fs::write(&big, &bytes).unwrap();
            }
        })
    };
    let out = vscode_stop(&sb, &big, sid, 100);
    assert_silent_success(&out, "large");
    let log = std::fs::read_to_string(sb.hook_log()).unwrap_or_default();
    assert!(log.contains("it is stored in the background"), "{log}");
    assert_eq!(message_count(&sb.db()), 12);

    // `status` tells: waiting, its size, a background read has it.
    let start = Instant::now();
    let waiting = loop {
        let v = sb.json(&["status", "--json"]);
        let w = v["waiting_for_next_hook"].clone();
        if w[0]["reading_now"] == true {
            break w;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{v}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(waiting.as_array().unwrap().len(), 1, "{waiting}");
    assert_eq!(waiting[0]["agent"], "vscode");
    assert_eq!(waiting[0]["session"], sid);
    assert_eq!(waiting[0]["whole_file_bytes"], size);
    let text = sb.ok(&["status"]);
    assert!(
        text.contains("1 whole-file session waits for a background read")
            && text.contains("MB): being stored now; `memtrail import` reads it now"),
        "{text}"
    );
    assert_eq!(message_count(&sb.db()), 12);

    // Quiet: stored, 6 messages per copy, and no longer waiting.
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    toucher.join().unwrap();
    let start = Instant::now();
    while message_count(&sb.db()) < 12 + 1800
        || !sb.json(&["status", "--json"])["waiting_for_next_hook"]
            .as_array()
            .unwrap()
            .is_empty()
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "not stored; hook log: {}",
            std::fs::read_to_string(sb.hook_log()).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(message_count(&sb.db()), 12 + 1800);
    assert_eq!(sb.message_ids(sid).len(), 1800);
    let log = std::fs::read_to_string(sb.hook_log()).unwrap_or_default();
    assert!(!log.contains("error"), "{log}");
}
