//! The oracle for `memtrail import`'s read-ahead pipeline (issue 18): the same transcripts
//! imported with [`Pipeline::ReadAhead`] (a second thread reads, parses and redacts while the
//! first writes) and with [`Pipeline::Serial`] (the hooks' path, one thread) give the same store:
//! sessions, messages (every column, order), tool calls, events, cursors with their line
//! counters, full-text hits, and an empty index queue.
//!
//! The transcripts: a generated corpus (`memtrail-corpus generate`, 1 MB, four agents), the
//! project's fixtures of Claude Code, Codex, Gemini CLI (line and whole-file sources) and
//! Cursor in the folders each agent's discovery walks, a last line without its `\n`, a
//! malformed line, a secret to redact, and one excluded project. Imported twice: the first
//! import with the growing fixtures at their first turn, the second after they grew to their
//! third (files with a cursor: the writer reads them itself) and more files appeared.

use memtrail_adapters::Agent;
use memtrail_bench::{Options, generate};
use memtrail_runtime::import::{Pipeline, import_with};
use memtrail_runtime::store::Store;
use memtrail_testkit::copy_tree;
use std::path::{Path, PathBuf};

const AGENTS: [Agent; 4] = [Agent::Claude, Agent::Codex, Agent::Gemini, Agent::Cursor];

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures")
        .join(rel)
}

fn put(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// The id of a Codex rollout (its `session_meta` line's `payload.id`).
fn codex_id(rel: &str) -> String {
    let text = std::fs::read_to_string(fixture(rel)).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    first["payload"]["id"].as_str().unwrap().to_string()
}

/// Where the growing fixtures go (Claude Code, Cursor), at turn `turn`.
fn place_growing(home: &Path, turn: u32) {
    put(
        &home.join(".claude/projects/-home-user-grow/7b1f0c2e-5d4a-4e8b-9c3f-2a6d8e1b4f70.jsonl"),
        &std::fs::read(fixture(&format!("claude/grow-turn{turn}.jsonl"))).unwrap(),
    );
    put(
        &home.join(
            ".cursor/projects/home-user-grow/agent-transcripts/0c3e2b1a-9f8e-4d7c-b6a5-4e3d2c1b0a99.jsonl",
        ),
        &std::fs::read(fixture(&format!("cursor/grow-turn{turn}.jsonl"))).unwrap(),
    );
    for name in ["legacy", "paginated"] {
        let rel = format!("codex/{name}-turn{turn}.jsonl");
        let id = codex_id(&format!("codex/{name}-turn1.jsonl"));
        put(
            &home.join(format!(
                ".codex/sessions/2026/03/14/rollout-2026-03-14T09-12-33-{id}.jsonl"
            )),
            &std::fs::read(fixture(&rel)).unwrap(),
        );
    }
}

/// The corpus of the second import, added to what the first one saw.
fn place_more(home: &Path) {
    copy_tree(&fixture("claude/projects"), &home.join(".claude/projects"));
    copy_tree(&fixture("gemini/home/.gemini"), &home.join(".gemini"));
    // A last line without its '\n' (a copy made by another tool), a malformed line and a secret.
    let sid = "5e0c9a1d-2b3f-4c5d-8e7f-9a0b1c2d3e4f";
    let line = |uuid: &str, text: &str| {
        serde_json::json!({"type": "user", "uuid": uuid, "sessionId": sid, "cwd": "/home/user/tail",
            "timestamp": "2026-03-02T09:00:00.000Z",
            "message": {"role": "user", "content": text}})
        .to_string()
    };
    let text = format!(
        "{}\n{{\"type\": \"user\", broken\n{}",
        line("u1", "deploy with AKIAIOSFODNN7EXAMPLE please"),
        line("u2", "and the last line has no newline")
    );
    put(
        &home.join(format!(".claude/projects/-home-user-tail/{sid}.jsonl")),
        text.as_bytes(),
    );
    // A long session: 150 commands and their results, more events than a hook lets its
    // running snapshot state fall behind (`hook::SNAPSHOT_STATE_EVERY`).
    let sid = "9d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6";
    let mut text = String::new();
    for i in 0..150 {
        let at = format!("2026-03-03T10:{:02}:{:02}.000Z", i / 60, i % 60);
        let call = serde_json::json!({"type": "assistant", "uuid": format!("a{i}"),
            "sessionId": sid, "cwd": "/home/user/long", "timestamp": at,
            "message": {"role": "assistant", "content": [{"type": "tool_use",
                "id": format!("toolu_{i}"), "name": "Bash",
                "input": {"command": format!("cargo test step_{i}")}}]}});
        let result = serde_json::json!({"type": "user", "uuid": format!("r{i}"),
            "sessionId": sid, "cwd": "/home/user/long", "timestamp": at,
            "message": {"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": format!("toolu_{i}"), "content": format!("test step_{i} ... ok")}]}});
        text.push_str(&format!("{call}\n{result}\n"));
    }
    put(
        &home.join(format!(".claude/projects/-home-user-long/{sid}.jsonl")),
        text.as_bytes(),
    );
}

/// Every row that an import decides, in a fixed order (`rowid`s left out where they are
/// only join keys), as text.
fn dump(db: &Path) -> Vec<String> {
    let c = rusqlite::Connection::open(db).unwrap();
    memtrail_runtime::store::register_sql_functions(&c).unwrap();
    let mut out = Vec::new();
    let mut q = |sql: &str| out.extend(memtrail_testkit::rows_as_text(&c, sql));
    q(
        "SELECT agent, external_id, parent_external_id, project_dir, title, model, git_branch,
              agent_version, started_at, updated_at, message_count
       FROM sessions ORDER BY agent, external_id",
    );
    q(
        "SELECT s.agent, s.external_id, m.seq, m.ext_id, m.role, m.kind, m.ts, m.model, m.body,
              m.tools_text, m.cjk, m.parts_zdict
       FROM messages m JOIN sessions s ON s.id = m.session_id
       ORDER BY s.agent, s.external_id, m.seq",
    );
    q(
        "SELECT s.agent, s.external_id, c.call_id, m.ext_id, c.name, c.tool, c.is_error,
              c.has_output
       FROM tool_calls c JOIN sessions s ON s.id = c.session_id
       JOIN messages m ON m.id = c.message_id
       ORDER BY s.agent, s.external_id, c.call_id",
    );
    q(
        "SELECT s.agent, s.external_id, m.ext_id, e.seq, e.category, e.action, e.priority,
              e.subject, e.detail, e.call_id, e.tool, e.ts
       FROM events e JOIN sessions s ON s.id = e.session_id JOIN messages m ON m.id = e.message_id
       ORDER BY s.agent, s.external_id, e.seq, e.id",
    );
    q(
        "SELECT path, agent, offset, size, head_len, head_hash, lines, skipped, malformed, unknown,
              reader_state, tail_len, tail_hash
       FROM sources ORDER BY path",
    );
    for word in [
        "error",
        "test",
        "cargo",
        "migrate",
        "refactor",
        "テスト",
        "newline",
    ] {
        q(&format!(
            "SELECT s.agent, s.external_id, m.ext_id FROM messages_fts f
             JOIN messages m ON m.id = f.rowid JOIN sessions s ON s.id = m.session_id
             WHERE messages_fts MATCH '\"{word}\"' ORDER BY s.agent, s.external_id, m.seq"
        ));
    }
    // The running snapshot states the import saved (`hook::SNAPSHOT_STATE_EVERY`).
    q("SELECT s.agent, s.external_id, t.rows, t.last_seq, t.state
       FROM snapshot_states t JOIN sessions s ON s.id = t.session_id
       ORDER BY s.agent, s.external_id");
    q("SELECT COUNT(*) FROM fts_pending");
    q("PRAGMA integrity_check");
    out
}

/// Fail with the first row where the two dumps differ (the whole dumps are large).
fn assert_same(got: &[String], want: &[String]) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "dumps differ at row {i}");
    }
    assert_eq!(got.len(), want.len(), "dumps differ in length");
}

fn count(db: &Path, sql: &str) -> i64 {
    let c = rusqlite::Connection::open(db).unwrap();
    memtrail_runtime::store::register_sql_functions(&c).unwrap();
    c.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn run(db: &Path, pipeline: Pipeline) -> memtrail_runtime::import::ImportSummary {
    let mut store = Store::open(db).unwrap();
    import_with(&mut store, &AGENTS, None, pipeline, &mut |_| {}).unwrap()
}

/// What the summaries of both pipelines must agree on (all but the time taken).
fn totals(s: &memtrail_runtime::import::ImportSummary) -> Vec<String> {
    s.agents
        .iter()
        .map(|a| {
            format!(
                "{} files {} changed {} sessions {} messages {} updated {} skipped {} unknown {} \
                 malformed {} bytes {} panicked {} unreadable {:?}",
                a.agent,
                a.files,
                a.changed_files,
                a.sessions,
                a.messages,
                a.updated,
                a.skipped_lines,
                a.unknown_lines,
                a.malformed_lines,
                a.bytes,
                a.panicked,
                a.unreadable
            )
        })
        .collect()
}

#[test]
fn read_ahead_import_stores_exactly_what_the_serial_one_stores() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    generate(
        &home,
        &Options {
            seed: 18,
            bytes: 1 << 20,
            session_bytes: 32 << 10,
        },
    )
    .unwrap();
    place_growing(&home, 1);
    let config = dir.path().join("config");
    // One project excluded: its sessions are not stored, their cursors skip to the end.
    put(
        &config.join("memtrail/config.toml"),
        b"exclude = [\"/home/user/projects/kana-slug\"]\n",
    );
    // SAFETY: this is the only test of this binary that reads these variables through
    // discovery; the others pass their folders explicitly.
    unsafe {
        std::env::set_var("HOME", &home);
        std::env::set_var("XDG_CONFIG_HOME", &config);
        std::env::set_var("XDG_DATA_HOME", dir.path().join("data"));
        std::env::set_var("XDG_STATE_HOME", dir.path().join("state"));
        for v in [
            "CLAUDE_CONFIG_DIR",
            "CODEX_HOME",
            "GEMINI_CLI_HOME",
            "CURSOR_CONFIG_DIR",
            "MEMTRAIL_DB",
        ] {
            std::env::remove_var(v);
        }
    }
    let serial = dir.path().join("serial.db");
    let ahead = dir.path().join("ahead.db");

    let s1 = run(&serial, Pipeline::Serial);
    let a1 = run(&ahead, Pipeline::ReadAhead);
    assert_eq!(totals(&a1), totals(&s1));
    let first = dump(&serial);
    assert_same(&dump(&ahead), &first);
    let messages = count(&serial, "SELECT COUNT(*) FROM messages");
    assert!(messages > 500, "the corpus is imported: {messages}");
    assert!(count(&serial, "SELECT COUNT(*) FROM events") > 0);
    assert!(count(&serial, "SELECT COUNT(*) FROM tool_calls") > 0);
    // The excluded project's session is not stored; its cursor is marked.
    assert_eq!(
        count(
            &serial,
            "SELECT COUNT(*) FROM sessions WHERE project_dir = '/home/user/projects/kana-slug'"
        ),
        0
    );
    assert_eq!(
        count(
            &serial,
            "SELECT COUNT(*) FROM sources WHERE reader_state LIKE '%memtrail_skip%'"
        ),
        1,
        "the legacy Codex fixture is in the excluded project"
    );

    // A session with sub-agents is deleted from both stores, and its transcripts appear again
    // under a renamed project folder: new files (no cursor) of a deleted session.
    let deleted: String = {
        let c = rusqlite::Connection::open(&serial).unwrap();
        c.query_row(
            "SELECT external_id FROM sessions s WHERE agent = 'claude'
               AND EXISTS (SELECT 1 FROM sessions c WHERE c.parent_external_id = s.external_id)
             ORDER BY external_id LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    for db in [&serial, &ahead] {
        let mut store = Store::open(db).unwrap();
        memtrail_runtime::maintenance::delete_session(&mut store, &deleted).unwrap();
    }
    let main_file = {
        let c = rusqlite::Connection::open(&serial).unwrap();
        let path: String = c
            .query_row(
                "SELECT path FROM sources WHERE path LIKE ?1",
                [format!("%/{deleted}.jsonl")],
                |r| r.get(0),
            )
            .unwrap();
        PathBuf::from(path)
    };
    let moved = home.join(".claude/projects/-home-dev-src-renamed");
    std::fs::create_dir_all(&moved).unwrap();
    std::fs::copy(&main_file, moved.join(format!("{deleted}.jsonl"))).unwrap();
    copy_tree(&main_file.with_extension(""), &moved.join(&deleted));

    // The growing fixtures reach their third turn; more transcripts appear.
    place_growing(&home, 3);
    place_more(&home);
    let s2 = run(&serial, Pipeline::Serial);
    let a2 = run(&ahead, Pipeline::ReadAhead);
    assert_eq!(totals(&a2), totals(&s2));
    let second = dump(&serial);
    assert_same(&dump(&ahead), &second);
    assert_ne!(second, first, "the second import added messages");
    // The deleted session and its sub-agents did not come back from the copies.
    assert_eq!(
        count(
            &serial,
            &format!(
                "SELECT COUNT(*) FROM sessions WHERE external_id LIKE '{deleted}%'
                 OR parent_external_id = '{deleted}'"
            )
        ),
        0
    );
    assert!(
        count(
            &serial,
            "SELECT COUNT(*) FROM sources WHERE path LIKE '%-home-dev-src-renamed%'
               AND reader_state LIKE '%deleted%'"
        ) >= 2,
        "the copies' cursors are marked deleted"
    );
    // The last line without its '\n' is stored, the malformed one counted, the secret redacted.
    let tail = count(
        &serial,
        "SELECT COUNT(*) FROM messages WHERE body LIKE '%the last line has no newline%'",
    );
    assert_eq!(tail, 1);
    assert_eq!(
        count(
            &serial,
            "SELECT COUNT(*) FROM messages WHERE memtrail_parts(parts_zdict, body) LIKE '%AKIAIOSFODNN7EXAMPLE%'
                OR body LIKE '%AKIAIOSFODNN7EXAMPLE%'"
        ),
        0
    );
    assert_eq!(
        count(
            &serial,
            "SELECT malformed FROM sources WHERE path LIKE '%5e0c9a1d-2b3f-4c5d-8e7f-9a0b1c2d3e4f.jsonl'"
        ),
        1
    );

    snapshot_states_kept(&serial);

    // A third run finds nothing new, either way.
    let s3 = run(&serial, Pipeline::Serial);
    let a3 = run(&ahead, Pipeline::ReadAhead);
    assert_eq!(totals(&a3), totals(&s3));
    assert!(s3.agents.iter().all(|a| a.messages == 0 && a.updated == 0));
    assert_same(&dump(&ahead), &second);
}

/// The import keeps each session's running snapshot state as the hooks do: a session whose
/// messages before its last hold `SNAPSHOT_STATE_EVERY` events or more has a state, fewer than
/// that many of those events after its end; a session with no state has fewer than that many
/// in all. The snapshot read from a state equals the one built from every event.
fn snapshot_states_kept(db: &Path) {
    let every = memtrail_runtime::hook::SNAPSHOT_STATE_EVERY as i64;
    let c = rusqlite::Connection::open(db).unwrap();
    // Per session: its events before its last message, and those after the state's end.
    let rows: Vec<(i64, i64, Option<i64>)> = {
        let mut st = c
            .prepare(
                "SELECT s.id,
                    (SELECT COUNT(*) FROM events e WHERE e.session_id = s.id
                       AND e.seq < (SELECT MAX(seq) FROM messages m WHERE m.session_id = s.id)),
                    (SELECT COUNT(*) FROM events e WHERE e.session_id = s.id
                       AND e.seq > t.last_seq
                       AND e.seq < (SELECT MAX(seq) FROM messages m WHERE m.session_id = s.id))
                 FROM sessions s LEFT JOIN snapshot_states t ON t.session_id = s.id",
            )
            .unwrap();
        st.query_map([], |r| {
            let behind: Option<i64> = r.get(2)?;
            Ok((r.get(0)?, r.get(1)?, behind))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
    };
    let store = Store::open(db).unwrap();
    let mut kept = 0;
    for (sid, before_last, behind) in rows {
        let has_state = c
            .query_row(
                "SELECT COUNT(*) FROM snapshot_states WHERE session_id = ?1",
                [sid],
                |r| r.get::<_, i64>(0),
            )
            .unwrap()
            > 0;
        if has_state {
            assert!(before_last >= every, "session {sid}: {before_last} events");
            let behind = behind.unwrap_or(0);
            assert!(
                behind < every,
                "session {sid}: the state is {behind} events behind"
            );
            let budget = memtrail_runtime::snapshot::DEFAULT_BUDGET;
            let full = memtrail_runtime::resume::build_snapshot_full(&store, sid, budget).unwrap();
            assert_eq!(store.snapshot(sid, budget).unwrap(), full, "session {sid}");
            kept += 1;
        } else {
            assert!(
                before_last < every,
                "session {sid}: {before_last} events, no state"
            );
        }
    }
    assert!(kept >= 1, "sessions with a state: {kept}");
}
