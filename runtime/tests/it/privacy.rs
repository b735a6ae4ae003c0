//! Privacy controls (issue 7): `<private>` spans, excluded projects (`.memtrailignore`), session
//! deletion, purge by age, `redact --rescan` over data stored before the rules, and Claude Code's
//! retention check. The config file's `exclude` list is tested end to end in tests/it/cli.rs (it is
//! read from `$XDG_CONFIG_HOME`, which only a sandboxed process may point elsewhere).

use memtrail_adapters::Agent;
use memtrail_runtime::Store;
use memtrail_runtime::ingest::ingest_file;
use memtrail_runtime::maintenance::{self, AtRisk};
use memtrail_runtime::query::{self, SearchFilter};
use memtrail_runtime::records::Standard;
use memtrail_runtime::redact::{redact, strip_private};
use serde_json::json;
use std::io::Write;
use std::path::Path;

const SID: &str = "5d0c9a31-2b7e-4f61-8c3d-9e8f7a6b5c4d";
const TOKEN: &str = "ghp_R7mQ2xK9vL4nB8wT3yH6jD1fG5sA0cZ2pE9u";

fn line(kind: &str, uuid: &str, cwd: &str, ts: &str, content: serde_json::Value) -> String {
    let mut v = json!({
        "parentUuid": null, "isSidechain": false, "userType": "external",
        "cwd": cwd, "sessionId": SID, "version": "2.1.49",
        "gitBranch": "main", "uuid": uuid, "timestamp": ts, "type": kind,
    });
    v["message"] = if kind == "user" {
        json!({"role": "user", "content": content})
    } else {
        json!({"model": "claude-sonnet-4-5", "id": format!("msg_{uuid}"), "type": "message",
               "role": "assistant", "content": content, "stop_reason": null})
    };
    v.to_string()
}

fn write_lines(path: &Path, lines: &[String], append: bool) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(append)
        .write(true)
        .truncate(!append)
        .open(path)
        .unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

fn count(store_path: &Path, sql: &str) -> i64 {
    let c = crate::support::open_raw(store_path).unwrap();
    c.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The scan of the store's files that the tests above rely on sees inside compressed rows: a
/// string that is only in a tool output (compressed in `parts`; the index holds its words
/// lowercased and apart) is found in the files, and not in their raw bytes.
#[test]
fn the_file_scan_sees_inside_compressed_rows() {
    let (_dir, db, t, cwd, mut store) = session_dir();
    write_lines(
        &t,
        &[
            line(
                "assistant",
                "a1",
                &cwd,
                "2026-11-20T10:00:01.000Z",
                json!([{"type": "tool_use", "id": "toolu_01scan", "name": "Bash",
                        "input": {"command": "cat notes.txt"}}]),
            ),
            line(
                "user",
                "r1",
                &cwd,
                "2026-11-20T10:00:02.000Z",
                json!([{"type": "tool_result", "tool_use_id": "toolu_01scan",
                        "content": marked_output()}]),
            ),
        ],
        false,
    );
    ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    drop(store);
    assert!(
        !raw_files(&db)
            .iter()
            .any(|b| contains(b, "Zebra-Finch_Marker"))
    );
    assert!(in_files(&db, "Zebra-Finch_Marker"));
}

/// A tool output of numbered lines around `Zebra-Finch_Marker`: varied enough that zstd codes
/// its literals (Huffman, RFC 8878 §4.2.1), so the marker is not in the frame's bytes as it is
/// (a short output's literals, with the parts dictionary, are stored raw).
fn marked_output() -> String {
    let before: String = (0..40)
        .map(|i| format!("note {i} of {}\n", i * 7919 % 1000))
        .collect();
    let after: String = (0..40).map(|i| format!("end {}\n", i * 31 % 97)).collect();
    format!("{before} Zebra-Finch_Marker {after}")
}

/// The bytes of the database file and its WAL (those that exist), as they are on disk.
fn raw_files(db: &Path) -> Vec<Vec<u8>> {
    ["", "-wal"]
        .iter()
        .filter_map(|s| {
            let mut p = db.to_path_buf().into_os_string();
            p.push(s);
            std::fs::read(p).ok()
        })
        .collect()
}

/// How many of `needles` are in the database file or its WAL.
fn frames_in_files(db: &Path, needles: &[Vec<u8>]) -> usize {
    let files = raw_files(db);
    needles
        .iter()
        .filter(|n| {
            files
                .iter()
                .any(|b| b.windows(n.len()).any(|w| w == &n[..]))
        })
        .count()
}

/// True when `needle` is in the database file or its WAL, compressed rows decoded
/// ([`memtrail_testkit::store_file_bytes`]).
fn in_files(db: &Path, needle: &str) -> bool {
    memtrail_testkit::store_file_bytes(db)
        .iter()
        .any(|b| contains(b, needle))
}

fn search(store: &Store, q: &str) -> usize {
    let f = SearchFilter {
        limit: 50,
        ..Default::default()
    };
    query::search(store, q, &f).unwrap().len()
}

#[test]
fn private_spans() {
    let p = |s: &str| strip_private(s).into_owned();
    assert_eq!(p("a <private>b c</private> d"), "a [private] d");
    assert_eq!(
        p("<PRIVATE>x</Private> y <private>z</private>"),
        "[private] y [private]"
    );
    // Unclosed: the rest is hidden, with the marker of a span left open.
    assert_eq!(p("keep <private>rest\nof it"), "keep [private…]");
    assert_eq!(p("multi <private>line\none</private>!"), "multi [private]!");
    assert_eq!(
        p("stray </private> and <privat> <privateer> <private-key>"),
        "stray </private> and <privat> <privateer> <private-key>"
    );
    // Spelled with blanks inside the brackets, in capitals, with an attribute.
    assert_eq!(p("a <private >b</private > c"), "a [private] c");
    assert_eq!(p("a < private>b< / PRIVATE> c"), "a [private] c");
    assert_eq!(p("a <PRIVATE>b</private>"), "a [private]");
    assert_eq!(p("a <private reason=\"pw\">b</private> c"), "a [private] c");
    assert_eq!(p("a <Private\n>b"), "a [private…]");
    assert!(matches!(
        strip_private("no tags here"),
        std::borrow::Cow::Borrowed(_)
    ));
    // Through redact: private spans first, then secrets; idempotent.
    let once = redact(&format!("<private>{TOKEN}</private> and {TOKEN}")).into_owned();
    assert_eq!(once, "[private] and [redacted:github_token]");
    assert_eq!(redact(&once), once.as_str());
}

#[test]
fn private_spans_never_reach_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let t = dir.path().join(format!("{SID}.jsonl"));
    let cwd = dir.path().display().to_string();
    write_lines(
        &t,
        &[
            line(
                "user",
                "u1",
                &cwd,
                "2026-11-20T10:00:00.000Z",
                json!("deploy with <private>hunter2quokka</private> please"),
            ),
            line(
                "assistant",
                "a1",
                &cwd,
                "2026-11-20T10:00:01.000Z",
                json!([{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                        "input": {"command": "echo <private>wombatpass"}}]),
            ),
        ],
        false,
    );
    let mut store = Store::open(&db).unwrap();
    ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    let body: String = crate::support::open_raw(&db)
        .unwrap()
        .query_row("SELECT title FROM sessions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(body, "deploy with [private] please");
    assert_eq!(search(&store, "private"), 2);
    assert_eq!(search(&store, "hunter2quokka"), 0);
    drop(store);
    let c = crate::support::open_raw(&db).unwrap();
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    assert!(!in_files(&db, "hunter2quokka"));
    assert!(!in_files(&db, "wombatpass"));
}

#[test]
fn excluded_project_is_never_stored_until_the_exclusion_is_lifted() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("client/app");
    std::fs::create_dir_all(&project).unwrap();
    let ignore = dir.path().join("client/.memtrailignore");
    std::fs::write(&ignore, "").unwrap();
    let db = dir.path().join("m.db");
    let t = dir.path().join(format!("{SID}.jsonl"));
    let cwd = project.display().to_string();
    let first = [
        line(
            "user",
            "u1",
            &cwd,
            "2026-11-20T10:00:00.000Z",
            json!("quasarfig secret plans"),
        ),
        line(
            "assistant",
            "a1",
            &cwd,
            "2026-11-20T10:00:01.000Z",
            json!([{"type": "text", "text": "quasarfig noted"}]),
        ),
    ];
    write_lines(&t, &first, false);
    let mut store = Store::open(&db).unwrap();
    let rep = ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    assert_eq!(rep.inserted, 0);
    assert_eq!(
        rep.skipped.as_deref(),
        Some(format!("project {cwd} is excluded").as_str())
    );
    assert_eq!(count(&db, "SELECT COUNT(*) FROM sessions"), 0);
    assert_eq!(count(&db, "SELECT COUNT(*) FROM messages"), 0);
    let size = std::fs::metadata(&t).unwrap().len() as i64;
    assert_eq!(count(&db, "SELECT offset FROM sources"), size);
    // Its cursor is marked, so an import never passes over it on metadata alone.
    let stats = store.cursor_stats().unwrap();
    assert_eq!(stats.len(), 1);
    assert!(stats.values().all(|c| c.marked), "{stats:?}");
    // More lines: skipped without parsing, the cursor follows the file.
    write_lines(
        &t,
        &[line(
            "user",
            "u2",
            &cwd,
            "2026-11-20T10:01:00.000Z",
            json!("quasarfig again"),
        )],
        true,
    );
    let rep = ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    assert_eq!((rep.inserted, rep.unchanged), (0, false));
    assert!(rep.skipped.is_some());
    assert_eq!(count(&db, "SELECT COUNT(*) FROM messages"), 0);
    let size = std::fs::metadata(&t).unwrap().len() as i64;
    assert_eq!(count(&db, "SELECT offset FROM sources"), size);
    assert_eq!(search(&store, "quasarfig"), 0);
    // The exclusion is lifted: the whole transcript is read from its start.
    std::fs::remove_file(&ignore).unwrap();
    let rep = ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    assert_eq!(rep.inserted, 3);
    assert_eq!(rep.skipped, None);
    assert_eq!(search(&store, "quasarfig"), 3);
}

/// Issue 11 item 8: exclusion is decided per message. An import of a whole transcript stores
/// what a hook at every turn would: nothing from the first message in an excluded folder on.
#[test]
fn exclusion_is_by_message_when_a_session_moves_between_folders() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("client/app");
    let open = dir.path().join("open");
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::create_dir_all(&open).unwrap();
    std::fs::write(dir.path().join("client/.memtrailignore"), "").unwrap();
    let (secret, open) = (secret.display().to_string(), open.display().to_string());
    let db = dir.path().join("m.db");
    let mut store = Store::open(&db).unwrap();
    let ts = "2026-11-20T10:00:00.000Z";
    let say = |uuid: &str, cwd: &str, text: &str| line("user", uuid, cwd, ts, json!(text));
    let answer = |uuid: &str, cwd: &str, text: &str| {
        line(
            "assistant",
            uuid,
            cwd,
            ts,
            json!([{"type": "text", "text": text}]),
        )
    };
    // Starts in the excluded folder, then moves out: nothing is stored.
    let t = dir.path().join(format!("{SID}.jsonl"));
    write_lines(
        &t,
        &[
            say("u1", &secret, "lynxquill secret plan"),
            answer("a1", &secret, "lynxquill noted"),
            say("u2", &open, "lynxquill elsewhere now"),
            answer("a2", &open, "lynxquill ok"),
        ],
        false,
    );
    let rep = ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    assert_eq!(rep.inserted, 0);
    assert_eq!(
        rep.skipped.as_deref(),
        Some(format!("project {secret} is excluded").as_str())
    );
    assert_eq!(count(&db, "SELECT COUNT(*) FROM messages"), 0);
    assert_eq!(count(&db, "SELECT COUNT(*) FROM sessions"), 0);
    let size = std::fs::metadata(&t).unwrap().len() as i64;
    assert_eq!(count(&db, "SELECT offset FROM sources"), size);
    // Starts outside, moves in, and out again: the two first messages only.
    let sid2 = "6e1d0b42-3c8f-4a72-9d4e-0f9a8b7c6d5e";
    let t2 = dir.path().join(format!("{sid2}.jsonl"));
    let lines: Vec<String> = [
        say("v1", &open, "yakmosaic first"),
        answer("w1", &open, "yakmosaic fine"),
        say("v2", &secret, "yakmosaic secret"),
        answer("w2", &secret, "yakmosaic hidden"),
        say("v3", &open, "yakmosaic back out"),
    ]
    .iter()
    .map(|l| l.replace(SID, sid2))
    .collect();
    write_lines(&t2, &lines, false);
    let rep = ingest_file(&mut store, Agent::Claude, &t2, None).unwrap();
    assert_eq!(rep.inserted, 2);
    assert_eq!(
        rep.skipped.as_deref(),
        Some(format!("project {secret} is excluded").as_str())
    );
    let bodies: Vec<String> = {
        let c = crate::support::open_raw(&db).unwrap();
        let mut st = c.prepare("SELECT body FROM messages ORDER BY seq").unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert_eq!(bodies, ["yakmosaic first", "yakmosaic fine"]);
    // The session's project is the folder of what was stored.
    let c = crate::support::open_raw(&db).unwrap();
    let project: String = c
        .query_row("SELECT project_dir FROM sessions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(project, open);
}

#[test]
fn deleted_session_is_gone_and_does_not_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let t = dir.path().join(format!("{SID}.jsonl"));
    let cwd = dir.path().display().to_string();
    write_lines(
        &t,
        &[
            line(
                "user",
                "u1",
                &cwd,
                "2026-11-20T10:00:00.000Z",
                json!("marmotwhistle database password"),
            ),
            line(
                "assistant",
                "a1",
                &cwd,
                "2026-11-20T10:00:01.000Z",
                json!([{"type": "tool_use", "id": "toolu_1", "name": "Read",
                        "input": {"file_path": "/srv/marmotwhistle.env"}}]),
            ),
        ],
        false,
    );
    let mut store = Store::open(&db).unwrap();
    ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    assert_eq!(search(&store, "marmotwhistle"), 2);
    let info = maintenance::session_info(&store, &SID[..8]).unwrap();
    assert_eq!(info.session_id, SID);
    assert_eq!((info.messages, info.subagents), (2, 0));
    let del = maintenance::delete_session(&mut store, SID).unwrap();
    assert_eq!(del, info);
    for table in ["sessions", "messages", "tool_calls"] {
        assert_eq!(count(&db, &format!("SELECT COUNT(*) FROM {table}")), 0);
    }
    assert_eq!(search(&store, "marmotwhistle"), 0);
    assert!(
        !in_files(&db, "marmotwhistle"),
        "deleted text left in the files"
    );
    // The transcript grows; neither a hook nor an import brings the session back.
    write_lines(
        &t,
        &[line(
            "user",
            "u2",
            &cwd,
            "2026-11-20T10:02:00.000Z",
            json!("marmotwhistle more"),
        )],
        true,
    );
    let rep = ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    assert_eq!(rep.skipped.as_deref(), Some("the session was deleted"));
    assert_eq!(count(&db, "SELECT COUNT(*) FROM messages"), 0);
    let rep = ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    assert!(rep.unchanged);
    assert!(matches!(
        maintenance::session_info(&store, SID),
        Err(memtrail_runtime::Error::NotFound(_))
    ));
}

/// Issue 11 item 7: a hook that read the cursor, then waited for the write lock while
/// `sessions delete` committed, must not bring the session back when it gets the lock.
#[test]
fn a_delete_that_commits_while_a_hook_waits_for_the_lock_sticks() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let t = dir.path().join(format!("{SID}.jsonl"));
    let cwd = dir.path().display().to_string();
    let mk =
        |uuid: &str, text: &str| line("user", uuid, &cwd, "2026-11-20T10:00:00.000Z", json!(text));
    write_lines(&t, &[mk("u1", "ocelotbanjo one")], false);
    let mut store = Store::open(&db).unwrap();
    ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    assert_eq!(count(&db, "SELECT COUNT(*) FROM messages"), 1);
    let row = count(&db, "SELECT id FROM sessions");
    // The session goes on: the hook of that new line starts while the delete holds the lock.
    write_lines(&t, &[mk("u2", "ocelotbanjo two")], true);
    let mut hook_store = Store::open(&db).unwrap();
    let hook = store
        .write(|w| {
            let t = t.clone();
            let hook =
                std::thread::spawn(move || ingest_file(&mut hook_store, Agent::Claude, &t, None));
            // The hook reads its cursor and the new line, then waits for the write lock.
            std::thread::sleep(std::time::Duration::from_millis(600));
            maintenance::delete_rows(w, &[row])?;
            Ok(hook)
        })
        .unwrap();
    let rep = hook.join().unwrap().unwrap();
    assert_eq!(rep.inserted, 0);
    for table in ["sessions", "messages"] {
        assert_eq!(count(&db, &format!("SELECT COUNT(*) FROM {table}")), 0);
    }
    // And the next hook or import leaves it deleted too.
    let rep = ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    assert_eq!(rep.skipped.as_deref(), Some("the session was deleted"));
    assert_eq!(count(&db, "SELECT COUNT(*) FROM sessions"), 0);
}

#[test]
fn purge_older_than() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let mut store = Store::open(&db).unwrap();
    let cwd = dir.path().display().to_string();
    // Session A: two old messages (Nov 2025). Session B: one old, one recent.
    let a = dir
        .path()
        .join("11111111-1111-4111-8111-111111111111.jsonl");
    let b = dir
        .path()
        .join("22222222-2222-4222-8222-222222222222.jsonl");
    let mk = |uuid: &str, ts: &str, text: &str| line("user", uuid, &cwd, ts, json!(text));
    write_lines(
        &a,
        &[
            mk("a1", "2025-11-01T10:00:00.000Z", "oldlemur one"),
            mk("a2", "2025-11-02T10:00:00.000Z", "oldlemur two"),
        ],
        false,
    );
    write_lines(
        &b,
        &[
            mk("b1", "2025-11-03T10:00:00.000Z", "oldlemur three"),
            mk("b2", "2026-11-20T10:00:00.000Z", "newlemur four"),
        ],
        false,
    );
    ingest_file(&mut store, Agent::Claude, &a, None).unwrap();
    ingest_file(&mut store, Agent::Claude, &b, None).unwrap();
    // A session with no time known at all is never purged.
    {
        let c = crate::support::open_raw(&db).unwrap();
        c.execute_batch(
            "INSERT INTO sessions (id, agent, external_id, message_count) VALUES (99, 'vscode', 'undated', 1);
             INSERT INTO messages (session_id, ext_id, seq, role, kind, body, tools_text, parts_zdict)
             VALUES (99, 'u', 0, 'user', 'text', 'undated', '', '[]');",
        )
        .unwrap();
    }
    // Cutoff 2026-01-01T00:00:00Z.
    let cutoff = 1_767_225_600_000;
    {
        // Snapshots of session B: one built before the cutoff (it quotes what is purged), one after.
        let c = crate::support::open_raw(&db).unwrap();
        c.execute_batch(&format!(
            "INSERT INTO snapshots (session_id, built_at, trigger, budget, events, text)
                 SELECT id, {}, 'precompact', 2048, 1, '- oldlemur three' FROM sessions
                 WHERE external_id = '22222222-2222-4222-8222-222222222222';
             INSERT INTO snapshots (session_id, built_at, trigger, budget, events, text)
                 SELECT id, {}, 'precompact', 2048, 1, '- newlemur four' FROM sessions
                 WHERE external_id = '22222222-2222-4222-8222-222222222222';",
            cutoff - 1,
            cutoff + 1
        ))
        .unwrap();
    }
    let dry = maintenance::purge(&mut store, cutoff, false, true).unwrap();
    assert_eq!((dry.messages, dry.sessions, dry.dry_run), (3, 1, true));
    assert_eq!(count(&db, "SELECT COUNT(*) FROM messages"), 5);
    let done = maintenance::purge(&mut store, cutoff, true, false).unwrap();
    assert_eq!((done.messages, done.sessions, done.vacuumed), (3, 1, true));
    assert_eq!(count(&db, "SELECT COUNT(*) FROM messages"), 2);
    assert_eq!(count(&db, "SELECT COUNT(*) FROM sessions"), 2);
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM sessions WHERE title IS NULL AND agent = 'claude'"
        ),
        1
    );
    assert_eq!(search(&store, "oldlemur"), 0);
    assert_eq!(search(&store, "newlemur"), 1);
    assert!(!in_files(&db, "oldlemur"));
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM snapshots WHERE text = '- newlemur four'"
        ),
        1
    );
    assert_eq!(count(&db, "SELECT COUNT(*) FROM snapshots"), 1);
    // Session B counts its one message left, and a new message sorts after it.
    let b_count = "SELECT message_count FROM sessions WHERE external_id = '22222222-2222-4222-8222-222222222222'";
    assert_eq!(count(&db, b_count), 1);
    write_lines(
        &b,
        &[mk("b3", "2026-11-21T10:00:00.000Z", "newlemur five")],
        true,
    );
    ingest_file(&mut store, Agent::Claude, &b, None).unwrap();
    assert_eq!(count(&db, b_count), 2);
    assert_eq!(
        count(&db, "SELECT seq FROM messages WHERE ext_id = 'b3'"),
        2,
        "after b2 (seq 1)"
    );
    // Nothing older is left: a second purge deletes nothing.
    let again = maintenance::purge(&mut store, cutoff, false, false).unwrap();
    assert_eq!((again.messages, again.sessions), (0, 0));
}

#[test]
fn rescan_redacts_what_was_stored_before() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let mut store = Store::open(&db).unwrap();
    // Rows written by an older memtrail without redaction, straight through SQL.
    let stripe = "sk_live_51HqW8eK2vL9nT4yB7mX3cR6p";
    {
        let c = crate::support::open_raw(&db).unwrap();
        c.execute(
            "INSERT INTO sessions (id, agent, external_id, title, message_count)
             VALUES (1, 'claude', 's1', ?1, 3)",
            [format!("use {TOKEN} now")],
        )
        .unwrap();
        let parts1 = json!([{"type": "text", "text": format!("token {TOKEN} and <private>okapimoon</private>")}]);
        let parts2 = json!([{"type": "tool_call", "id": "t1", "name": "Bash", "tool": "shell",
            "input": {"command": format!("curl -u x:{stripe}")},
            "output": format!("ok {stripe}"), "is_error": false}]);
        let parts3 = json!([{"type": "text", "text": "nothing to hide here"}]);
        for (i, (p, body, tools)) in [
            (
                &parts1,
                format!("token {TOKEN} and <private>okapimoon</private>"),
                String::new(),
            ),
            (
                &parts2,
                String::new(),
                format!("Bash curl -u x:{stripe} \nok {stripe}\n"),
            ),
            (&parts3, "nothing to hide here".to_string(), String::new()),
        ]
        .into_iter()
        .enumerate()
        {
            c.execute(
                "INSERT INTO messages (session_id, ext_id, seq, role, kind, body, tools_text, parts_zdict)
                 VALUES (1, ?1, ?2, 'user', 'text', ?3, ?4, ?5)",
                rusqlite::params![format!("m{i}"), i as i64, body, tools, p.to_string()],
            )
            .unwrap();
        }
    }
    {
        // Derived rows an older memtrail kept: an event quoting the command, a saved snapshot.
        let c = crate::support::open_raw(&db).unwrap();
        c.execute(
            "INSERT INTO events (session_id, message_id, seq, category, action, priority, subject)
             SELECT 1, id, seq, 'command', 'ran', 3, ?1 FROM messages WHERE ext_id = 'm1'",
            [format!("curl -u x:{stripe}")],
        )
        .unwrap();
        c.execute(
            "INSERT INTO snapshots (session_id, built_at, trigger, budget, events, text)
             VALUES (1, 0, 'precompact', 2048, 1, ?1)",
            [format!("## Last request [prompt]\n- token {TOKEN}")],
        )
        .unwrap();
        // A VS Code result held in a cursor's reader state, stored raw by an older memtrail.
        c.execute(
            "INSERT INTO sources (path, agent, session_id, reader_state) VALUES ('/t/v.jsonl', 'vscode', 1, ?1)",
            [json!({"line": 4, "pending": [{"id": "call_1", "output": format!("ok {stripe}"),
                                           "error": false, "ts": null}]})
            .to_string()],
        )
        .unwrap();
    }
    {
        // A hook error stored raw by an older memtrail (it quoted the line it failed on).
        let c = crate::support::open_raw(&db).unwrap();
        c.execute(
            "INSERT INTO hook_runs (agent, event, at, duration_us, error, session)
             VALUES ('claude', 'Stop', 1, 5, ?1, ?2)",
            [
                format!("bad line: {{\"k\": \"{stripe}\""),
                format!("s-{TOKEN}"),
            ],
        )
        .unwrap();
        // A machine label pulled by an older memtrail, which did not redact labels.
        c.execute(
            "INSERT INTO machines (id, label) VALUES ('cccccccccccccccccccccccccccccccc', ?1)",
            [format!("box {TOKEN}")],
        )
        .unwrap();
    }
    assert_eq!(search(&store, "okapimoon"), 1);
    let mut seen = Vec::new();
    let r = maintenance::rescan(&mut store, &mut |n| seen.push(n)).unwrap();
    assert_eq!(
        (
            r.messages,
            r.messages_changed,
            r.titles_changed,
            r.snapshots_changed,
            r.reader_states_changed,
            r.hook_errors_changed,
            r.labels_changed
        ),
        (3, 2, 1, 1, 1, 2, 1)
    );
    assert_eq!(seen, vec![3]);
    let c = crate::support::open_raw(&db).unwrap();
    let (title,): (String,) = c
        .query_row("SELECT title FROM sessions", [], |r| Ok((r.get(0)?,)))
        .unwrap();
    assert_eq!(title, "use [redacted:github_token] now");
    let error: String = c
        .query_row("SELECT error FROM hook_runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(error, "bad line: {\"k\": \"[redacted:stripe_key]\"");
    let session: String = c
        .query_row("SELECT session FROM hook_runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(session, "s-[redacted:github_token]");
    let label: String = c
        .query_row("SELECT label FROM machines", [], |r| r.get(0))
        .unwrap();
    assert_eq!(label, "box [redacted:github_token]");
    let body: String = c
        .query_row("SELECT body FROM messages WHERE ext_id = 'm0'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(body, "token [redacted:github_token] and [private]");
    let tools: String = c
        .query_row(
            "SELECT memtrail_tools(tools_text, parts_zdict) FROM messages WHERE ext_id = 'm1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        tools,
        "Bash curl -u x:[redacted:stripe_key] \nok [redacted:stripe_key]\n"
    );
    let (snapshot,): (String,) = c
        .query_row("SELECT text FROM snapshots", [], |r| Ok((r.get(0)?,)))
        .unwrap();
    assert_eq!(
        snapshot,
        "## Last request [prompt]\n- token [redacted:github_token]"
    );
    // The events of the changed messages are extracted again from their redacted text.
    let subjects: Vec<String> = c
        .prepare("SELECT subject FROM events ORDER BY seq, id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        subjects
            .iter()
            .all(|s| !s.contains(stripe) && !s.contains(TOKEN)),
        "{subjects:?}"
    );
    assert!(
        subjects.contains(&"curl -u x:[redacted:stripe_key]".to_string()),
        "{subjects:?}"
    );
    assert_eq!(search(&store, "okapimoon"), 0);
    assert_eq!(search(&store, "redacted"), 2);
    // Byte for byte: no secret left in the database or its WAL.
    for s in [TOKEN, stripe, "okapimoon", &TOKEN[24..], &stripe[16..]] {
        assert!(!in_files(&db, s), "{s} still in the store files");
    }
    // Idempotent.
    let again = maintenance::rescan(&mut store, &mut |_| {}).unwrap();
    let state: String = c
        .query_row("SELECT reader_state FROM sources", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&state).unwrap(),
        json!({"line": 4, "pending": [{"id": "call_1", "output": "ok [redacted:stripe_key]",
                                      "error": false, "ts": null}]})
    );
    assert_eq!(
        (
            again.messages,
            again.messages_changed,
            again.titles_changed,
            again.snapshots_changed,
            again.reader_states_changed,
            again.hook_errors_changed
        ),
        (3, 0, 0, 0, 0, 0)
    );
}

/// A title cut from a first prompt whose secret only its lines show (`pass: …` on a line of
/// its own): redacted as the prompt at ingest (the adapters keep the title's lines until it is
/// redacted), and repaired by `redact --rescan` in a store where an older memtrail kept it
/// squashed with the secret (ported from the redact-fixes branch).
#[test]
fn a_title_is_redacted_as_its_prompt_at_ingest_and_rescan() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let transcript = dir.path().join(format!("{SID}.jsonl"));
    let prompt = "deploy it\npass: hunter2xyz\nDB_PASSWORD=Summer2024xyz\nthanks";
    write_lines(
        &transcript,
        &[line(
            "user",
            "u1",
            "/p",
            "2026-11-20T10:00:00.000Z",
            json!(prompt),
        )],
        false,
    );
    let mut store = Store::open(&db).unwrap();
    ingest_file(&mut store, Agent::Claude, &transcript, None).unwrap();
    let title = |db: &Path| -> String {
        crate::support::open_raw(db)
            .unwrap()
            .query_row("SELECT title FROM sessions", [], |r| r.get(0))
            .unwrap()
    };
    let want = "deploy it pass: [redacted:secret_assignment] \
                DB_PASSWORD=[redacted:secret_assignment] thanks";
    assert_eq!(title(&db), want);

    // What an older memtrail stored: the squashed prompt as the title, the prompt redacted.
    let db2 = dir.path().join("old.db");
    let mut old = Store::open(&db2).unwrap();
    {
        let c = crate::support::open_raw(&db2).unwrap();
        c.execute(
            "INSERT INTO sessions (id, agent, external_id, title, message_count)
             VALUES (1, 'claude', 's1', ?1, 1)",
            ["deploy it pass: hunter2xyz DB_PASSWORD=[redacted:secret_assignment] thanks"],
        )
        .unwrap();
        let body = "deploy it\npass: hunter2xyz\nDB_PASSWORD=[redacted:secret_assignment]\nthanks";
        c.execute(
            "INSERT INTO messages (session_id, ext_id, seq, role, kind, body, tools_text, parts_zdict)
             VALUES (1, 'm0', 0, 'user', 'text', ?1, '', ?2)",
            rusqlite::params![body, json!([{"type": "text", "text": body}]).to_string()],
        )
        .unwrap();
    }
    let r = maintenance::rescan(&mut old, &mut |_| {}).unwrap();
    assert_eq!((r.messages_changed, r.titles_changed), (1, 1));
    assert_eq!(title(&db2), want);
    let again = maintenance::rescan(&mut old, &mut |_| {}).unwrap();
    assert_eq!((again.messages_changed, again.titles_changed), (0, 0));
    assert!(!in_files(&db2, "hunter2xyz"));
}

/// Claude Code's retention policy from its `settings.json` (its adapter reads
/// `cleanupPeriodDays`).
fn claude_policy(settings: &Path) -> memtrail_adapters::TranscriptRetention {
    memtrail_adapters::claude::transcript_retention(settings)
}

#[test]
fn retention_warns_about_transcripts_claude_code_will_delete() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    let now: i64 = 1_780_000_000_000;
    let day = 86_400_000i64;
    let set_mtime = |p: &Path, ms: i64| {
        let f = std::fs::File::options().write(true).open(p).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64))
            .unwrap();
    };
    let mk = |name: &str, bytes: &[u8], age_days: i64| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        set_mtime(&p, now - age_days * day);
        p
    };
    let old_uncaptured = mk("a.jsonl", b"{}\n{}\n", 25);
    let old_captured = mk("b.jsonl", b"{}\n", 28);
    let young = mk("c.jsonl", b"{}\n", 10);
    let old_partial = mk("d.jsonl", b"{}\n{}\n{}\n", 40);
    let db = dir.path().join("m.db");
    let mut store = Store::open(&db).unwrap();
    let stats = memtrail_adapters::ParseStats::default();
    store
        .write(|w| {
            for (p, off) in [(&old_captured, 3u64), (&old_partial, 3)] {
                let c = memtrail_runtime::store::Cursor {
                    offset: off,
                    size: off,
                    ..Default::default()
                };
                w.save_cursor(
                    &p.to_string_lossy(),
                    Agent::Claude,
                    &c,
                    &stats,
                    now,
                    &Standard,
                )?;
            }
            Ok(())
        })
        .unwrap();
    let files = vec![
        old_uncaptured.clone(),
        old_captured,
        young,
        old_partial.clone(),
    ];
    // Default 30 days: at risk from 23 days of age.
    let r = maintenance::transcript_retention(Some(&store), &claude_policy(&settings), &files, now)
        .unwrap();
    assert_eq!((r.cleanup_period_days, r.from_settings), (30, false));
    assert_eq!(
        r.at_risk,
        vec![
            AtRisk {
                path: old_partial.display().to_string(),
                size: 9,
                captured: 3,
                deletes_at_ms: now - 10 * day,
            },
            AtRisk {
                path: old_uncaptured.display().to_string(),
                size: 6,
                captured: 0,
                deletes_at_ms: now + 5 * day,
            },
        ]
    );
    assert_eq!(r.first_deletion_ms, Some(now - 10 * day));
    // cleanupPeriodDays = 60: nothing within a week of deletion.
    std::fs::write(&settings, r#"{"cleanupPeriodDays": 60, "model": "opus"}"#).unwrap();
    let r = maintenance::transcript_retention(Some(&store), &claude_policy(&settings), &files, now)
        .unwrap();
    assert_eq!((r.cleanup_period_days, r.from_settings), (60, true));
    assert_eq!(r.at_risk, vec![]);
    // cleanupPeriodDays = 14: the 10-day-old one too; without a store nothing is captured.
    std::fs::write(&settings, r#"{"cleanupPeriodDays": 14}"#).unwrap();
    let r =
        maintenance::transcript_retention(None, &claude_policy(&settings), &files, now).unwrap();
    assert_eq!(r.at_risk.len(), 4);
}

/// Appends the second line of assistant message `msg_a1`: a `Read` of `path` (Claude Code
/// writes an answer's text and each tool call as lines of their own, with the same message id).
fn append_read_call(t: &Path, cwd: &str, call_id: &str, path: &str) {
    write_lines(
        t,
        &[line(
            "assistant",
            "a1",
            cwd,
            "2026-11-20T10:00:02.000Z",
            json!([{"type": "tool_use", "id": call_id, "name": "Read",
                    "input": {"file_path": path}}]),
        )],
        true,
    );
}

/// A temporary folder with a store `m.db` and the path of a Claude transcript `<SID>.jsonl`
/// (the folder is the session's working directory `cwd`).
fn session_dir() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    std::path::PathBuf,
    String,
    Store,
) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let t = dir.path().join(format!("{SID}.jsonl"));
    let cwd = dir.path().display().to_string();
    let store = Store::open(&db).unwrap();
    (dir, db, t, cwd, store)
}

/// Issue 11 item 5: a deleted session leaves no byte of itself in the database file or its WAL,
/// including the old versions of its rows that hooks rewrote before (a message that grew by a
/// content block, a tool call whose output came later, its events re-extracted each time).
#[test]
fn deleted_session_leaves_no_old_versions_in_the_files() {
    let (_dir, db, t, cwd, mut store) = session_dir();
    // Three ingests, as three hooks would: each rewrites the assistant message's row (and
    // re-extracts its events), leaving the previous version in freed space (the rows are
    // larger than a page: their overflow pages are freed whole).
    write_lines(
        &t,
        &[
            line(
                "user",
                "u1",
                &cwd,
                "2026-11-20T10:00:00.000Z",
                json!("read the capybarazest settings"),
            ),
            line(
                "assistant",
                "a1",
                &cwd,
                "2026-11-20T10:00:01.000Z",
                // Thinking beside the text: the parts are more than the body, so a frame.
                json!([{"type": "thinking", "thinking": "the settings first", "signature": "c2ln"},
                       {"type": "text", "text": format!("Looking at wapitifirstblock now.\n{}", "lorem ipsum ".repeat(800))}]),
            ),
        ],
        false,
    );
    ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    // Each version of a compressed `parts` (whose words are not in the file as such): 32 bytes
    // from the middle of each stored frame, looked for after the delete.
    let mut frames: Vec<Vec<u8>> = Vec::new();
    let keep_frames = |frames: &mut Vec<Vec<u8>>| {
        let c = crate::support::open_raw(&db).unwrap();
        let mut stmt = c
            .prepare("SELECT parts_zdict FROM messages WHERE typeof(parts_zdict) = 'blob'")
            .unwrap();
        let blobs = stmt.query_map([], |r| r.get::<_, Vec<u8>>(0)).unwrap();
        for b in blobs.map(|b| b.unwrap()).filter(|b| b.len() >= 64) {
            let mid = b.len() / 2;
            frames.push(b[mid - 16..mid + 16].to_vec());
        }
    };
    keep_frames(&mut frames);
    append_read_call(&t, &cwd, "toolu_01ibexcallid", "/srv/gnusubjectpath.env");
    ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    keep_frames(&mut frames);
    write_lines(
        &t,
        &[line(
            "user",
            "r1",
            &cwd,
            "2026-11-20T10:00:03.000Z",
            json!([{"type": "tool_result", "tool_use_id": "toolu_01ibexcallid",
                    "content": format!("DB_HOST=okapioutput\n{}", "dolor sit ".repeat(900))}]),
        )],
        true,
    );
    ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    keep_frames(&mut frames);
    // The first version of the assistant message, the second (its tool call added: 1,000
    // bytes of lorem ipsum, compressed), the third (the output added).
    frames.dedup();
    assert!(frames.len() >= 3, "{}", frames.len());
    let c = crate::support::open_raw(&db).unwrap();
    let parts: String = c
        .query_row(
            "SELECT memtrail_parts(parts_zdict, body) FROM messages WHERE ext_id = 'msg_a1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(parts.contains("okapioutput"), "{parts}");
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM events WHERE subject LIKE '%gnusubjectpath%'"
        ),
        1
    );
    drop(c);
    assert!(frames_in_files(&db, &frames) > 0);
    maintenance::delete_session(&mut store, SID).unwrap();
    drop(store);
    const MARKERS: [&str; 6] = [
        "capybarazest",
        "wapitifirstblock",
        "ibexcallid",
        "gnusubjectpath",
        "okapioutput",
        "okapi",
    ];
    let left: Vec<&str> = MARKERS.into_iter().filter(|m| in_files(&db, m)).collect();
    assert_eq!(left, Vec::<&str>::new(), "left in the store files");
    assert_eq!(
        frames_in_files(&db, &frames),
        0,
        "compressed parts left in the store files"
    );
}

/// Schema 14: a message whose parts are its body as one text part (a prompt, an answer) keeps
/// nothing beside the body, reads back as the same JSON, and a later line of the same message
/// (Claude Code writes an answer's text and its tool call as two lines) merges into it.
#[test]
fn a_prose_message_keeps_its_text_once_and_a_later_line_merges_into_it() {
    let (_dir, db, t, cwd, mut store) = session_dir();
    let answer = format!(
        "Looking at quaggaanswer now.\n{}",
        ["lorem ipsum"; 200].join(" ")
    );
    write_lines(
        &t,
        &[
            line(
                "user",
                "u1",
                &cwd,
                "2026-11-20T10:00:00.000Z",
                json!("read the \"zorillaprompt\" settings"),
            ),
            line(
                "assistant",
                "a1",
                &cwd,
                "2026-11-20T10:00:01.000Z",
                json!([{"type": "text", "text": answer}]),
            ),
        ],
        false,
    );
    ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    let rows = |db: &Path| -> Vec<(String, String, i64, String, String)> {
        let c = crate::support::open_raw(db).unwrap();
        let mut st = c
            .prepare(
                "SELECT ext_id, typeof(parts_zdict), length(parts_zdict), body,
                        memtrail_parts(parts_zdict, body)
                 FROM messages ORDER BY seq",
            )
            .unwrap();
        st.query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
    };
    let text_part = |t: &str| json!([{"type": "text", "text": t}]).to_string();
    let got = rows(&db);
    assert_eq!(got.len(), 2);
    assert_eq!(
        (got[0].1.as_str(), got[0].2, got[0].3.as_str()),
        ("blob", 0, "read the \"zorillaprompt\" settings")
    );
    assert_eq!(got[0].4, text_part(&got[0].3));
    assert_eq!((got[1].1.as_str(), got[1].2), ("blob", 0));
    assert_eq!(
        (got[1].3.as_str(), got[1].4.clone()),
        (answer.as_str(), text_part(&answer))
    );
    // The answer's tool call, a line of its own with the same message id.
    append_read_call(&t, &cwd, "toolu_01quagga", "/srv/quaggapath.env");
    ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    let got = rows(&db);
    let parts: serde_json::Value = serde_json::from_str(&got[1].4).unwrap();
    assert_eq!(parts[0], json!({"type": "text", "text": answer}), "{parts}");
    assert_eq!(parts[1]["type"], "tool_call", "{parts}");
    assert_eq!(parts.as_array().unwrap().len(), 2, "{parts}");
    assert_eq!(
        (got[1].1.as_str(), got[1].2 > 0, got[1].3.as_str()),
        ("blob", true, answer.as_str()),
        "more than the body: a frame"
    );
    assert_eq!(search(&store, "quaggaanswer"), 1);
    assert_eq!(search(&store, "quaggapath"), 1);
    assert_eq!(search(&store, "zorillaprompt"), 1);
}

/// The secret set of [`nothing_unredacted_reaches_any_column`]: `(as written, the part that must
/// never be stored)`, one per class that redaction covers (runtime/src/redact.rs) plus a
/// `<private>` span. To test a larger corpus, return its entries here.
fn secret_set() -> Vec<(String, String)> {
    let pair = |written: &str, secret: &str| (written.to_string(), secret.to_string());
    let key_body = "MIIEowIBAAKCAQEAw7Zq3kP9mXvT2nB8hR4sL6yD1fJ0cW5eA9uK3iG7oQ2pN8tV";
    vec![
        (
            format!("-----BEGIN RSA PRIVATE KEY-----\n{key_body}\n-----END RSA PRIVATE KEY-----"),
            key_body.to_string(),
        ),
        pair("AKIAQ7RMZX4TN2VKL8PW", "AKIAQ7RMZX4TN2VKL8PW"),
        pair(
            "aws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCYzq8Rb3vT1hQe",
            "wJalrXUtnFEMIK7MDENGbPxRfiCYzq8Rb3vT1hQe",
        ),
        pair(
            "sk-ant-api03-Xq7Lm2Rt9Vb4Nc8Kd1Hf6Jg3Pw5Zs0Ay",
            "sk-ant-api03-Xq7Lm2Rt9Vb4Nc8Kd1Hf6Jg3Pw5Zs0Ay",
        ),
        pair(
            "sk-proj-Rk4Tq9Wm2Xv7Lb3Nc8Hd1Jf6Gs5Pz0Ay",
            "sk-proj-Rk4Tq9Wm2Xv7Lb3Nc8Hd1Jf6Gs5Pz0Ay",
        ),
        pair(TOKEN, TOKEN),
        pair("glpat-Zx8Kq2Wm7Rt4Vb9Nc3Hd", "glpat-Zx8Kq2Wm7Rt4Vb9Nc3Hd"),
        pair(
            "xoxb-482910375612-Qm7Rt2Kx9Vb4Lc8N",
            "xoxb-482910375612-Qm7Rt2Kx9Vb4Lc8N",
        ),
        pair(
            "sk_live_51HqW8eK2vL9nT4yB7mX3cR6p",
            "sk_live_51HqW8eK2vL9nT4yB7mX3cR6p",
        ),
        pair(
            "npm_Wq8Rt3Kx7Vb2Lm9Nc4Hd6Jf1Gs5Pz0AyBe3T",
            "npm_Wq8Rt3Kx7Vb2Lm9Nc4Hd6Jf1Gs5Pz0AyBe3T",
        ),
        pair(
            "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZjEyLTM0NTYtNzg5MC1hYmNkLWVmMTIzNDU2Nzg5MAACKlsz",
            "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZjEyLTM0NTYtNzg5MC1hYmNkLWVmMTIzNDU2Nzg5MAACKlsz",
        ),
        pair(
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJxdW9ra2E3NzIxIn0.Zm9vYmFyYmF6cXV4cXV1eHg3Nzk",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJxdW9ra2E3NzIxIn0.Zm9vYmFyYmF6cXV4cXV1eHg3Nzk",
        ),
        pair(
            "Authorization: Bearer Qm9Rt2Kx7Vb4Lc8NzP3wYh6J",
            "Qm9Rt2Kx7Vb4Lc8NzP3wYh6J",
        ),
        pair(
            "postgres://app:Tr0ub4dorQuokka9Zeta@db.internal:5432/prod",
            "Tr0ub4dorQuokka9Zeta",
        ),
        pair("--password Wombat7Falafel3Zing", "Wombat7Falafel3Zing"),
        pair("DB_PASSWORD=Pangolin4Harbor8Quiz", "Pangolin4Harbor8Quiz"),
        pair(
            "<private>Marmoset5Lantern2Opal</private>",
            "Marmoset5Lantern2Opal",
        ),
    ]
}

/// One entry of the redaction corpus `tests/data/secrets.json` (its format: `CorpusEntry` in
/// `tests/it/redact.rs`): the secret's class, the place it is written for, the text, the secret.
#[derive(serde::Deserialize)]
struct CorpusSecret {
    context: String,
    text: String,
    secret: String,
}

fn secret_corpus() -> Vec<CorpusSecret> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/secrets.json");
    let corpus: Vec<CorpusSecret> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(
        corpus.len() >= 150,
        "the corpus has {} secrets",
        corpus.len()
    );
    corpus
}

/// Every value of every column of every table of the store at `db`, as bytes (a compressed
/// value decompressed): the tables are listed from `sqlite_master` (FTS5's shadow tables,
/// `sources.reader_state` and any column a later schema adds included), each column read with
/// `PRAGMA table_info`.
fn every_stored_value(db: &Path) -> Vec<(String, String, Vec<u8>)> {
    let c = crate::support::open_raw(db).unwrap();
    let tables: Vec<String> = c
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        tables.iter().any(|t| t == "messages_fts_data"),
        "{tables:?}"
    );
    let mut out = Vec::new();
    for t in &tables {
        let cols: Vec<String> = c
            .prepare(&format!("SELECT name FROM pragma_table_info('{t}')"))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for col in cols {
            let mut stmt = c
                .prepare(&format!("SELECT \"{col}\" FROM \"{t}\""))
                .unwrap();
            let mut rows = stmt.query([]).unwrap();
            while let Some(r) = rows.next().unwrap() {
                use rusqlite::types::ValueRef;
                let bytes = match r.get_ref(0).unwrap() {
                    // A compressed value (`messages.parts`: one zstd frame, RFC 8878) is
                    // searched as what it holds.
                    ValueRef::Blob(b) if b.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) => {
                        zstd::stream::read::Decoder::with_dictionary(
                            b,
                            memtrail_runtime::store::PARTS_DICTIONARY.as_bytes(),
                        )
                        .and_then(|mut d| {
                            let mut v = Vec::new();
                            std::io::Read::read_to_end(&mut d, &mut v).map(|_| v)
                        })
                        .unwrap()
                    }
                    ValueRef::Text(b) | ValueRef::Blob(b) => b.to_vec(),
                    ValueRef::Integer(i) => i.to_string().into_bytes(),
                    ValueRef::Real(f) => f.to_string().into_bytes(),
                    ValueRef::Null => continue,
                };
                out.push((t.clone(), col.clone(), bytes));
            }
        }
    }
    out
}

/// What betrays `secret` in stored bytes: the secret itself, and, for the full-text index
/// (which keeps lowercased, stemmed and prefix-compressed terms), the inner part of each run of
/// 16 or more letters and digits, lowercased.
fn traces(secret: &str) -> Vec<Vec<u8>> {
    let mut out = vec![secret.as_bytes().to_vec()];
    for run in secret.split(|c: char| !c.is_ascii_alphanumeric()) {
        if run.len() >= 16 {
            out.push(run[3..run.len() - 3].to_ascii_lowercase().into_bytes());
        }
    }
    out
}

fn has_trace(hay: &[u8], secret: &str) -> bool {
    let lower = hay.to_ascii_lowercase();
    traces(secret).iter().enumerate().any(|(i, t)| {
        let h = if i == 0 { hay } else { &lower };
        h.windows(t.len()).any(|w| w == t.as_slice())
    })
}

/// Issue 11 item 3: every write path redacts. The secret set goes where secrets occur in real
/// sessions (prompt and title, thinking, answer text, Bash and Write and MCP tool inputs, tool
/// outputs, a VS Code result held in the reader state because it came before its request, a
/// `remember` note, a snapshot), and then no column of any table holds any of them, nor does
/// the database file or its WAL.
#[test]
fn nothing_unredacted_reaches_any_column() {
    let (dir, db, t, cwd, mut store) = session_dir();
    let secrets = secret_set();

    // Claude Code: one turn per secret, each content block on its own line.
    let mut lines = Vec::new();
    for (k, (s, _)) in secrets.iter().enumerate() {
        let ts = |i: u32| format!("2026-11-20T10:{k:02}:{i:02}.000Z");
        let a = format!("a{k}");
        let call = |n: &str| format!("toolu_{k}_{n}");
        lines.push(line(
            "user",
            &format!("u{k}"),
            &cwd,
            &ts(0),
            json!(format!("please deploy with {s} now")),
        ));
        for block in [
            json!({"type": "thinking", "thinking": format!("The user gave {s}."), "signature": "x"}),
            json!({"type": "text", "text": format!("Using {s} as asked.")}),
            json!({"type": "tool_use", "id": call("bash"), "name": "Bash",
                   "input": {"command": format!("deploy.sh '{s}'")}}),
            json!({"type": "tool_use", "id": call("write"), "name": "Write",
                   "input": {"file_path": "/srv/app/.env", "content": format!("{s}\n")}}),
            json!({"type": "tool_use", "id": call("mcp"), "name": "mcp__vault__put",
                   "input": {"value": s}}),
        ] {
            lines.push(line("assistant", &a, &cwd, &ts(1), json!([block])));
        }
        for (i, n) in ["bash", "write", "mcp"].iter().enumerate() {
            lines.push(line(
                "user",
                &format!("r{k}{n}"),
                &cwd,
                &ts(2 + i as u32),
                json!([{"type": "tool_result", "tool_use_id": call(n),
                        "content": format!("echo: {s}")}]),
            ));
        }
    }
    // The redaction corpus (`tests/data/secrets.json`, 172 secrets of 50 classes), each in the
    // place it was written for: a prompt, a tool output, a Bash, Write or MCP tool input.
    let corpus = secret_corpus();
    for (k, e) in corpus.iter().enumerate() {
        let ts = format!("2026-11-21T{:02}:{:02}:00.000Z", k / 60, k % 60);
        let call = format!("toolu_corpus_{k}");
        let (name, input) = match e.context.as_str() {
            "prompt" => {
                lines.push(line("user", &format!("cu{k}"), &cwd, &ts, json!(e.text)));
                continue;
            }
            "tool_output" => ("Bash", json!({"command": "cat config"})),
            "bash_input" => ("Bash", json!({"command": e.text, "description": "Run it"})),
            "write_input" => (
                "Write",
                json!({"file_path": "/srv/app/settings", "content": e.text}),
            ),
            "mcp_input" => (
                "mcp__vault__put",
                serde_json::from_str(&e.text).expect("an MCP input is JSON"),
            ),
            other => panic!("unknown context {other}"),
        };
        lines.push(line(
            "assistant",
            &format!("ca{k}"),
            &cwd,
            &ts,
            json!([{"type": "tool_use", "id": call, "name": name, "input": input}]),
        ));
        let output = if e.context == "tool_output" {
            e.text.as_str()
        } else {
            "done"
        };
        lines.push(line(
            "user",
            &format!("cr{k}"),
            &cwd,
            &ts,
            json!([{"type": "tool_result", "tool_use_id": call, "content": output}]),
        ));
    }
    write_lines(&t, &lines, false);
    ingest_file(&mut store, Agent::Claude, &t, None).unwrap();

    // VS Code: tool results and starts that come before the message requesting them are held
    // in the reader state, which is stored with the cursor.
    let v = dir.path().join("vscode-session.jsonl");
    let ev = |n: usize, kind: &str, data: serde_json::Value| {
        json!({"type": kind, "data": data, "id": format!("ev{n}"),
               "timestamp": format!("2026-11-20T11:00:{n:02}.000Z"), "parentId": null})
        .to_string()
    };
    let mut vl = vec![
        ev(
            0,
            "session.start",
            json!({"sessionId": "vs1", "copilotVersion": "0.37.8",
                                        "context": {"cwd": cwd}}),
        ),
        ev(1, "user.message", json!({"content": "run the deploy"})),
    ];
    for (k, (s, _)) in secrets.iter().enumerate() {
        vl.push(ev(
            2 + 2 * k,
            "tool.execution_start",
            json!({"toolCallId": format!("call_{k}"),
            "toolName": "run_in_terminal", "arguments": {"command": format!("deploy '{s}'")}}),
        ));
        vl.push(ev(
            3 + 2 * k,
            "tool.execution_complete",
            json!({"toolCallId": format!("call_{k}"),
            "success": true, "result": format!("deployed with {s}")}),
        ));
    }
    write_lines(&v, &vl, false);
    ingest_file(&mut store, Agent::Vscode, &v, None).unwrap();
    let state: String = crate::support::open_raw(&db)
        .unwrap()
        .query_row(
            "SELECT reader_state FROM sources WHERE path LIKE '%vscode-session.jsonl'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let state: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert_eq!(
        state["pending"].as_array().map(Vec::len),
        Some(secrets.len()),
        "{state}"
    );
    assert_eq!(
        state["pending"][1]["output"],
        "deployed with [redacted:aws_access_key]"
    );

    // A note kept with `remember`, and a snapshot as PreCompact saves it.
    let sid: i64 = crate::support::open_raw(&db)
        .unwrap()
        .query_row(
            "SELECT id FROM sessions WHERE external_id = ?1",
            [SID],
            |r| r.get(0),
        )
        .unwrap();
    let note = format!("remember {}", secrets[5].0);
    store
        .write(|w| w.add_note(sid, &note, 1, &Standard))
        .unwrap();
    let snap = memtrail_runtime::resume::build_snapshot(&store, sid, 8000).unwrap();
    store
        .write(|w| {
            w.save_snapshot(
                &memtrail_runtime::records::Standard,
                sid,
                "precompact",
                &snap,
                2,
                None,
            )
        })
        .unwrap();
    // A hook run whose error quotes what it failed on.
    store
        .record_hook_run(
            &memtrail_runtime::records::Standard,
            &memtrail_runtime::store::HookRun {
                agent: "claude".into(),
                event: "Stop".into(),
                at: 3,
                duration_us: 1,
                session: Some(SID.into()),
                messages: 0,
                error: Some(format!("cannot parse {}", secrets[13].0)),
            },
        )
        .unwrap();
    store.catch_up_index(None).unwrap();
    store.checkpoint().unwrap();
    drop(store);

    let values = every_stored_value(&db);
    let mut found = Vec::new();
    let all_secrets = secrets
        .iter()
        .map(|(_, secret)| secret.as_str())
        .chain(corpus.iter().map(|e| e.secret.as_str()));
    for secret in all_secrets {
        for (table, col, bytes) in &values {
            if has_trace(bytes, secret) {
                found.push(format!("{table}.{col}: {secret}"));
            }
        }
        if in_files(&db, secret) {
            found.push(format!("file: {secret}"));
        }
    }
    found.dedup();
    assert_eq!(found, Vec::<String>::new(), "secrets stored");
}

/// The body of the stored message `ext_id` and the outputs of its tool calls.
fn stored(db: &Path, ext_id: &str) -> (String, Vec<String>) {
    let c = crate::support::open_raw(db).unwrap();
    let (body, parts): (String, String) = c
        .query_row(
            "SELECT body, memtrail_parts(parts_zdict, body) FROM messages WHERE ext_id = ?1",
            [ext_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap_or_else(|e| panic!("{ext_id}: {e}"));
    let parts: serde_json::Value = serde_json::from_str(&parts).unwrap();
    let outputs = parts
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["output"].as_str().map(str::to_string))
        .collect();
    (body, outputs)
}

/// Issue 11 items 1 (third list) and 4: a secret split across two content blocks (Claude Code
/// writes one transcript line per block) or a PEM key across two tool outputs is redacted, and
/// a `<private>` span hides what it covers across blocks, ingests and prompts.
#[test]
fn secrets_and_private_spans_across_blocks_and_outputs() {
    let (_dir, db, t, cwd, mut store) = session_dir();
    let ts = |s: u32| format!("2026-11-20T10:00:{s:02}.000Z");
    let text = |t: &str| json!([{"type": "text", "text": t}]);
    let bash = |id: &str, cmd: &str| json!([{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": cmd}}]);
    let result =
        |id: &str, out: &str| json!([{"type": "tool_result", "tool_use_id": id, "content": out}]);
    // A span opened in one prompt and closed in the next; one opened in a block and closed two
    // blocks later, the first block ingested alone.
    write_lines(
        &t,
        &[
            line(
                "user",
                "u1",
                &cwd,
                &ts(0),
                json!("deploy < PRIVATE >the vault phrase is"),
            ),
            line(
                "user",
                "u2",
                &cwd,
                &ts(1),
                json!("quokkaphrase9</private > then run it"),
            ),
            line(
                "assistant",
                "a1",
                &cwd,
                &ts(2),
                text("Here <private>wombatblock1"),
            ),
        ],
        false,
    );
    ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    assert_eq!(stored(&db, "msg_a1").0, "Here [private…]");
    let key1 = "-----BEGIN OPENSSH PRIVATE KEY-----\n\
        b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n\
        QyNTUxOQAAACBb9xWgXcOYnIRMbPXUl2JHpxE2DJ3nAvxFBSekfALquAAAAJiJZF5KiWRe";
    let key2 = "SgAAAAtzc2gtZWQyNTUxOQAAACBb9xWgXcOYnIRMbPXUl2JHpxE2DJ3nAvxFBSekfALquA\n\
        AAAECrQpf0Zp8tN1fM2Xb3Rk7YwLsVe5Hq9JdGcZ4uIoTnW1tvHFaBdw5icihFs9dSXYkenE\n\
        -----END OPENSSH PRIVATE KEY-----\n";
    write_lines(
        &t,
        &[
            line("assistant", "a1", &cwd, &ts(3), text("numbatblock2")),
            line(
                "assistant",
                "a1",
                &cwd,
                &ts(4),
                text("dingoblock3 </private> visible tail"),
            ),
            // A token split across two text blocks, and one whose second half follows a
            // complete match.
            line(
                "assistant",
                "a2",
                &cwd,
                &ts(5),
                text("The token is ghp_R7mQ2xK9vL4nB8w"),
            ),
            line(
                "assistant",
                "a2",
                &cwd,
                &ts(6),
                text("T3yH6jD1fG5sA0cZ2pE9u, stored."),
            ),
            line(
                "assistant",
                "a3",
                &cwd,
                &ts(7),
                text(&format!("key {TOKEN}")),
            ),
            line("assistant", "a3", &cwd, &ts(8), text("XtraTail99 rest")),
            // A private key read in two steps.
            line(
                "assistant",
                "a4",
                &cwd,
                &ts(9),
                bash("toolu_k1", "head -3 ~/.ssh/id_ed25519"),
            ),
            line("user", "r1", &cwd, &ts(10), result("toolu_k1", key1)),
            line(
                "assistant",
                "a5",
                &cwd,
                &ts(11),
                bash("toolu_k2", "tail -n +4 ~/.ssh/id_ed25519"),
            ),
            line("user", "r2", &cwd, &ts(12), result("toolu_k2", key2)),
        ],
        true,
    );
    ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    assert_eq!(stored(&db, "u1").0, "deploy [private…]");
    assert_eq!(stored(&db, "u2").0, "[private] then run it");
    assert_eq!(
        stored(&db, "msg_a1").0,
        "Here [private]\n\n[private]\n\n[private] visible tail"
    );
    assert_eq!(
        stored(&db, "msg_a2").0,
        "The token is [redacted:github_token]\n\n, stored."
    );
    assert_eq!(
        stored(&db, "msg_a3").0,
        "key [redacted:github_token]\n\n rest"
    );
    assert_eq!(stored(&db, "msg_a4").1, ["[redacted:private_key]"]);
    assert_eq!(stored(&db, "msg_a5").1, ["[redacted:private_key]\n"]);
    store.catch_up_index(None).unwrap();
    store.checkpoint().unwrap();
    drop(store);
    let left: Vec<&str> = [
        "wombatblock1",
        "numbatblock2",
        "dingoblock3",
        "quokkaphrase9",
        "the vault phrase",
        "ghp_R7mQ2xK9vL4nB8w",
        "T3yH6jD1fG5sA0cZ2pE9u",
        "XtraTail99",
        "b3BlbnNzaC1rZXktdjEA",
        "AAAECrQpf0Zp8tN1fM2Xb3Rk7Y",
    ]
    .into_iter()
    .filter(|s| in_files(&db, s))
    .collect();
    assert_eq!(left, Vec::<&str>::new(), "left in the store files");
}

/// A copy of a deleted session's transcript at another path (a renamed project folder), seen
/// for the first time, is marked deleted, not stored; `capture_again` brings every copy back.
#[test]
fn a_copy_of_a_deleted_sessions_transcript_does_not_bring_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let t = dir.path().join(format!("{SID}.jsonl"));
    let cwd = dir.path().display().to_string();
    write_lines(
        &t,
        &[
            line(
                "user",
                "u1",
                &cwd,
                "2026-11-20T10:00:00.000Z",
                json!("quokkabridge plan"),
            ),
            line(
                "assistant",
                "a1",
                &cwd,
                "2026-11-20T10:00:01.000Z",
                json!([{"type": "text", "text": "quokkabridge done"}]),
            ),
        ],
        false,
    );
    let mut store = Store::open(&db).unwrap();
    ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    maintenance::delete_session(&mut store, SID).unwrap();
    let moved = dir.path().join("renamed-project");
    std::fs::create_dir(&moved).unwrap();
    let copy = moved.join(format!("{SID}.jsonl"));
    std::fs::copy(&t, &copy).unwrap();
    let rep = ingest_file(&mut store, Agent::Claude, &copy, None).unwrap();
    assert_eq!(rep.skipped.as_deref(), Some("the session was deleted"));
    assert_eq!(count(&db, "SELECT COUNT(*) FROM sessions"), 0);
    assert_eq!(count(&db, "SELECT COUNT(*) FROM messages"), 0);
    assert_eq!(search(&store, "quokkabridge"), 0);
    let again = maintenance::capture_again(&mut store, SID).unwrap();
    assert_eq!((again.session_id.as_str(), again.transcripts), (SID, 2));
    assert_eq!(count(&db, "SELECT COUNT(*) FROM sessions"), 1);
    assert_eq!(count(&db, "SELECT COUNT(*) FROM messages"), 2);
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM sources WHERE reader_state LIKE '%memtrail_skip%'"
        ),
        0
    );
}

/// OpenCode keeps sessions in its SQLite database: a child session (a sub-agent's) that first
/// appears after its parent was deleted is marked deleted, not stored, as a session read from a
/// copy of the database is.
#[test]
fn an_opencode_child_session_of_a_deleted_session_is_not_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let oc = dir.path().join("opencode.db");
    let conn = crate::support::open_raw(&oc).unwrap();
    conn.execute_batch(include_str!("../../../fixtures/opencode/schema-v1.sql"))
        .unwrap();
    let cwd = dir.path().display().to_string();
    conn.execute(
        "INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes)
         VALUES ('p1', ?1, 'git', 1, 1, '[]')",
        [&cwd],
    )
    .unwrap();
    let add = |sid: &str, parent: Option<&str>, t: i64, text: &str| {
        conn.execute(
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version,
             time_created, time_updated) VALUES (?1, 'p1', ?2, 's', ?3, 't', '1.0.0', ?4, ?4)",
            rusqlite::params![sid, parent, cwd, t],
        )
        .unwrap();
        let mid = format!("msg_{sid}");
        conn.execute(
            "INSERT INTO message (id, session_id, time_created, time_updated, data)
             VALUES (?1, ?2, ?3, ?3, ?4)",
            rusqlite::params![
                mid,
                sid,
                t,
                json!({"role": "user", "time": {"created": t}}).to_string()
            ],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)
             VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
            rusqlite::params![
                format!("prt_{sid}"),
                mid,
                sid,
                t,
                json!({"type": "text", "text": text}).to_string()
            ],
        )
        .unwrap();
    };
    add(
        "ses_parent",
        None,
        1_700_000_000_000,
        "wombatlantern parent",
    );
    let mut store = Store::open(&db).unwrap();
    ingest_file(&mut store, Agent::Opencode, &oc, None).unwrap();
    assert_eq!(search(&store, "wombatlantern"), 1);
    maintenance::delete_session(&mut store, "ses_parent").unwrap();
    add(
        "ses_child",
        Some("ses_parent"),
        1_700_000_060_000,
        "wombatlantern child",
    );
    let rep = ingest_file(&mut store, Agent::Opencode, &oc, None).unwrap();
    assert_eq!(rep.skipped.as_deref(), Some("the session was deleted"));
    assert_eq!(count(&db, "SELECT COUNT(*) FROM sessions"), 0);
    assert_eq!(count(&db, "SELECT COUNT(*) FROM messages"), 0);
    // A copy of the database at another path brings neither back.
    let copy = dir.path().join("copy.db");
    drop(conn);
    std::fs::copy(&oc, &copy).unwrap();
    ingest_file(&mut store, Agent::Opencode, &copy, None).unwrap();
    assert_eq!(count(&db, "SELECT COUNT(*) FROM sessions"), 0);
    assert_eq!(search(&store, "wombatlantern"), 0);
}

/// The project folder renamed after a delete: the transcript at its new path stays deleted,
/// and `capture_again` brings the session back from it (the old path, gone from disk, is not
/// an error).
#[test]
fn a_deleted_session_moved_elsewhere_can_be_captured_again() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let old = dir.path().join("old-name");
    std::fs::create_dir(&old).unwrap();
    let t = old.join(format!("{SID}.jsonl"));
    let cwd = dir.path().display().to_string();
    write_lines(
        &t,
        &[line(
            "user",
            "u1",
            &cwd,
            "2026-11-20T10:00:00.000Z",
            json!("platypusferry plan"),
        )],
        false,
    );
    let mut store = Store::open(&db).unwrap();
    ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    maintenance::delete_session(&mut store, SID).unwrap();
    let new = dir.path().join("new-name");
    std::fs::rename(&old, &new).unwrap();
    let moved = new.join(format!("{SID}.jsonl"));
    let rep = ingest_file(&mut store, Agent::Claude, &moved, None).unwrap();
    assert_eq!(rep.skipped.as_deref(), Some("the session was deleted"));
    assert_eq!(count(&db, "SELECT COUNT(*) FROM messages"), 0);
    let again = maintenance::capture_again(&mut store, SID).unwrap();
    assert_eq!((again.transcripts, again.messages), (1, 1));
    assert_eq!(search(&store, "platypusferry"), 1);
    assert_eq!(count(&db, "SELECT COUNT(*) FROM sources"), 1);
}

/// True when `needle` (lowercase ASCII) is in the database file or its WAL, in any case,
/// compressed rows decoded ([`memtrail_testkit::store_file_bytes`]).
fn in_files_any_case(db: &Path, needle: &str) -> bool {
    memtrail_testkit::store_file_bytes(db)
        .iter()
        .any(|b| contains(&b.to_ascii_lowercase(), needle))
}

/// Issue 11 item 5, the full-text index: text that leaves a message (half of a token indexed
/// before the next content block let redaction see the whole, a deleted session) leaves the
/// FTS5 segments too, not only a 'delete' record beside the old terms until segments merge.
/// FTS5 stores terms lowercased and may share a term's first bytes with the term before it on
/// the page, so each word is looked for by its last 10 characters, in any case.
#[test]
fn deleted_text_leaves_the_search_index() {
    let (dir, db, t, cwd, mut store) = session_dir();
    let ts = |s: u32| format!("2026-11-20T10:00:{s:02}.000Z");
    let text = |t: &str| json!([{"type": "text", "text": t}]);
    // Another session stays, so that the index is not emptied.
    const KEPT: &str = "7c1e4b2a-9d3f-4e8a-b6c5-1f2e3d4c5b6a";
    let kept = dir.path().join(format!("{KEPT}.jsonl"));
    write_lines(
        &kept,
        &[line(
            "user",
            "k1",
            &cwd,
            &ts(0),
            json!("the kept session about rust"),
        )
        .replace(SID, KEPT)],
        false,
    );
    ingest_file(&mut store, Agent::Claude, &kept, None).unwrap();
    write_lines(
        &t,
        &[
            line(
                "user",
                "u1",
                &cwd,
                &ts(1),
                json!("Ship Operation NarwhalQix tomorrow"),
            ),
            line(
                "assistant",
                "a1",
                &cwd,
                &ts(2),
                text("The token is ghp_R7mQ2xK9vL4nB8w"),
            ),
        ],
        false,
    );
    ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    // The search indexes the queue: the first half of the token is in the index now.
    assert_eq!(search(&store, "r7mq2xk9vl4nb8w"), 1);
    write_lines(
        &t,
        &[line(
            "assistant",
            "a1",
            &cwd,
            &ts(3),
            text("T3yH6jD1fG5sA0cZ2pE9u, stored."),
        )],
        true,
    );
    ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    assert_eq!(search(&store, "r7mq2xk9vl4nb8w"), 0);
    assert_eq!(search(&store, "narwhalqix"), 1);
    let checkpoint = || {
        let c = crate::support::open_raw(&db).unwrap();
        c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
    };
    checkpoint();
    assert!(
        !in_files_any_case(&db, "2xk9vl4nb8w"),
        "the redacted half of the token is left in the store files"
    );
    maintenance::delete_session(&mut store, SID).unwrap();
    assert_eq!(search(&store, "narwhalqix"), 0);
    assert_eq!(search(&store, "rust"), 1);
    drop(store);
    // The delete turned `secure-delete` off for its own merge only.
    assert_eq!(
        count(
            &db,
            "SELECT v FROM messages_fts_config WHERE k = 'secure-delete'"
        ),
        1
    );
    checkpoint();
    assert!(
        !in_files_any_case(&db, "arwhalqix"),
        "left in the store files"
    );
    assert!(in_files_any_case(&db, "kept session about rust"));
}

/// A message stored raw (by an older memtrail, without redaction), its secret `secret`.
fn store_raw_message(db: &Path, ext: &str, secret: &str) {
    let c = crate::support::open_raw(db).unwrap();
    c.execute(
        "INSERT OR IGNORE INTO sessions (id, agent, external_id, message_count)
         VALUES (1, 'claude', 's1', 0)",
        [],
    )
    .unwrap();
    let text = format!("the token is {secret}");
    let parts = json!([{"type": "text", "text": text}]);
    c.execute(
        "INSERT INTO messages (session_id, ext_id, seq, role, kind, body, tools_text, parts_zdict)
         VALUES (1, ?1, (SELECT count(*) FROM messages), 'user', 'text', ?2, '', ?3)",
        rusqlite::params![ext, text, parts.to_string()],
    )
    .unwrap();
}

/// `redact --rescan` while another connection reads the store: it waits for the reader (up to
/// 5 s) to fold the write-ahead log back, so that the old text leaves the files; a reader that
/// holds on longer is reported (`wal_kept`) and a rescan after it is gone finishes the job,
/// though it has nothing left to change.
#[test]
fn rescan_waits_for_readers_and_says_when_one_held_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let mut store = Store::open(&db).unwrap();
    store_raw_message(&db, "m0", TOKEN);
    let read_open = || {
        let reader = crate::support::open_raw(&db).unwrap();
        reader.execute_batch("BEGIN").unwrap();
        let n: i64 = reader
            .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
            .unwrap();
        assert!(n >= 1);
        reader
    };
    // A reader that lets go after half a second.
    let reader = read_open();
    let letting_go = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(500));
        reader.execute_batch("COMMIT").unwrap();
    });
    let r = maintenance::rescan(&mut store, &mut |_| {}).unwrap();
    letting_go.join().unwrap();
    assert_eq!((r.messages_changed, r.wal_kept), (1, false));
    assert!(!in_files(&db, TOKEN));
    // A reader that holds on.
    let second = "ghp_Z1xW2vU3tS4rQ5pO6nM7lK8jI9hG0fE1dC2b";
    store_raw_message(&db, "m1", second);
    let reader = read_open();
    let r = maintenance::rescan(&mut store, &mut |_| {}).unwrap();
    assert_eq!((r.messages_changed, r.wal_kept), (1, true));
    assert!(
        in_files(&db, second),
        "the old page is still in the database file"
    );
    drop(reader);
    let r = maintenance::rescan(&mut store, &mut |_| {}).unwrap();
    assert_eq!((r.messages_changed, r.wal_kept), (0, false));
    assert!(!in_files(&db, second));
}
