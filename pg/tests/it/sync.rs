//! Push and pull against a real PostgreSQL: exact round trips, idempotent pushes, pull batches
//! bounded by message count, message sets, deletions, replaced tool calls and events.

use memtrail_pg::migrate::{MIGRATIONS, migrate};
use memtrail_pg::{Pg, session_uid};
use memtrail_runtime::sync::{
    Deletion, PullBatch, PushBatch, SessionChanges, SyncEvent, SyncMessage, SyncSession,
    SyncSnapshot, SyncToolCall, SyncVectors,
};

const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn db(name: &str) -> Option<Pg> {
    let (_, mut pg) = crate::fresh(name)?;
    migrate(&mut pg, MIGRATIONS).unwrap();
    Some(pg)
}

fn session(ext: &str, count: i64) -> SyncSession {
    SyncSession {
        agent: "claude".into(),
        external_id: ext.into(),
        parent_external_id: None,
        project_dir: Some("/home/u/proj".into()),
        title: Some(format!("title {ext}")),
        model: Some("opus".into()),
        git_branch: Some("main".into()),
        agent_version: Some("2.1.0".into()),
        started_at: Some(1_700_000_000_000),
        updated_at: Some(1_700_000_100_000),
        message_count: count,
    }
}

fn message(ext: &str, seq: i64, calls: usize, events: usize) -> SyncMessage {
    SyncMessage {
        ext_id: ext.into(),
        seq,
        role: if seq % 2 == 0 { "user" } else { "assistant" }.into(),
        kind: "text".into(),
        ts: Some(1_700_000_000_000 + seq),
        model: (seq % 2 == 1).then(|| "opus".to_string()),
        body: format!("body of {ext} with ünïcode and 'quotes'"),
        tools: if calls > 0 {
            "Bash".into()
        } else {
            String::new()
        },
        cjk: (seq == 3).then(|| "日本語".to_string()),
        parts: format!("[{{\"t\":\"{ext}\"}}]"),
        tool_calls: (0..calls)
            .map(|i| SyncToolCall {
                call_id: format!("{ext}-call{i}"),
                name: "Bash".into(),
                tool: "shell".into(),
                is_error: i == 1,
                has_output: i == 0,
            })
            .collect(),
        events: (0..events)
            .map(|i| SyncEvent {
                seq,
                category: "file".into(),
                action: "edit".into(),
                priority: i as i64,
                subject: format!("src/{ext}/{i}.rs"),
                detail: (i == 0).then(|| "detail".to_string()),
                call_id: (calls > 0).then(|| format!("{ext}-call0")),
                tool: Some("Edit".into()),
                ts: None,
            })
            .collect(),
    }
}

fn snapshot(i: i64) -> SyncSnapshot {
    SyncSnapshot {
        built_at: 1_700_000_050_000 + i,
        trigger: "compact".into(),
        budget: 2000,
        events: 3 + i,
        text: format!("snapshot {i}"),
        consumed_at: (i == 0).then_some(1_700_000_060_000),
        consumed_by: (i == 0).then(|| "s2".to_string()),
    }
}

fn changes(machine: &str, ext: &str, messages: Vec<SyncMessage>) -> SessionChanges {
    SessionChanges {
        machine: machine.into(),
        session: session(ext, messages.len() as i64),
        messages,
        snapshots: None,
        message_set: None,
        vectors: Vec::new(),
    }
}

fn two_sessions() -> PushBatch {
    let mut s1 = changes(
        A,
        "s1",
        vec![
            message("m1", 1, 2, 3),
            message("m2", 2, 0, 0),
            message("m3", 3, 1, 1),
        ],
    );
    s1.snapshots = Some(vec![snapshot(0), snapshot(1)]);
    let s2 = changes(A, "s2", vec![message("n1", 1, 0, 2)]);
    PushBatch {
        deletions: vec![],
        sessions: vec![s1, s2],
        outbox: vec![1, 2, 3],
        tombstones: vec![],
    }
}

fn count(pg: &Pg, sql: &str) -> i64 {
    pg.block_on(pg.client().query_one(sql, &[])).unwrap().get(0)
}

/// Every row of every synced table, as text, without the revision columns and row ids (which
/// a second push renews), sorted.
fn content(pg: &Pg) -> Vec<String> {
    let mut out = Vec::new();
    for (table, cols) in [
        ("machines", "id, label"),
        (
            "sessions",
            "uid, machine_id, agent, external_id, parent_external_id, project_dir, title, model, \
             git_branch, agent_version, started_at, updated_at, message_count",
        ),
        (
            "messages",
            "session_uid, machine_id, ext_id, seq, role, kind, ts, model, body, tools, cjk, parts",
        ),
        ("tool_calls", "*"),
        ("events", "*"),
        ("snapshots", "*"),
        (
            "deletions",
            "deleted_by, machine_id, agent, external_id, deleted_at",
        ),
    ] {
        let rows = pg
            .block_on(pg.client().query(
                &format!("SELECT t::text FROM (SELECT {cols} FROM {table}) t ORDER BY 1"),
                &[],
            ))
            .unwrap();
        out.extend(
            rows.iter()
                .map(|r| format!("{table}: {}", r.get::<_, String>(0))),
        );
    }
    out
}

#[test]
fn a_push_pulls_back_exactly_and_a_second_pull_is_empty() {
    let Some(mut pg) = db("sync_round_trip") else {
        return;
    };
    let batch = two_sessions();
    let pushed = pg.push(A, "laptop", &batch).unwrap();
    assert_eq!(
        (pushed.sessions, pushed.messages, pushed.deletions),
        (2, 4, 0)
    );
    let bytes: u64 = batch
        .sessions
        .iter()
        .flat_map(|s| &s.messages)
        .map(memtrail_pg::sync::message_bytes)
        .sum();
    assert_eq!(pushed.bytes, bytes);
    // Revisions: 2 sessions, then 4 messages, one each.
    let pulled = pg.pull_batch(B, A, 0, 100).unwrap();
    let mut expected = batch.sessions.clone();
    expected[1].snapshots = Some(vec![]);
    assert_eq!(
        pulled,
        PullBatch {
            machine: A.into(),
            label: "laptop".into(),
            from_rev: 0,
            to_rev: 6,
            deletions: vec![],
            sessions: expected,
        }
    );
    let again = pg.pull_batch(B, A, 6, 100).unwrap();
    assert_eq!(
        (again.to_rev, again.sessions.len(), again.deletions.len()),
        (6, 0, 0)
    );
    // A machine never pulls itself.
    let own = pg.pull_batch(A, A, 0, 100).unwrap();
    assert_eq!((own.to_rev, own.sessions.len()), (0, 0));
    let machines = pg.machines().unwrap();
    assert_eq!(machines.len(), 1);
    assert_eq!(
        (machines[0].id.as_str(), machines[0].label.as_str()),
        (A, "laptop")
    );
    assert_eq!(
        count(
            &pg,
            &format!(
                "SELECT count(*) FROM sessions WHERE uid = '{}'",
                session_uid(A, "claude", "s1")
            )
        ),
        1
    );
}

#[test]
fn pushing_the_same_batch_twice_leaves_what_once_left() {
    let Some(mut pg) = db("sync_twice") else {
        return;
    };
    let batch = two_sessions();
    pg.push(A, "laptop", &batch).unwrap();
    let once = content(&pg);
    pg.push(A, "laptop", &batch).unwrap();
    assert_eq!(content(&pg), once);
    assert_eq!(
        once.iter().filter(|r| r.starts_with("messages:")).count(),
        4
    );
    assert_eq!(
        once.iter().filter(|r| r.starts_with("tool_calls:")).count(),
        3
    );
    assert_eq!(once.iter().filter(|r| r.starts_with("events:")).count(), 6);
    assert_eq!(
        once.iter().filter(|r| r.starts_with("snapshots:")).count(),
        2
    );
    // The second push took new revisions: a puller at the first push's end gets it all again.
    let pulled = pg.pull_batch(B, A, 6, 100).unwrap();
    assert_eq!((pulled.to_rev, pulled.sessions.len()), (12, 2));
}

#[test]
fn pull_batches_are_bounded_by_message_count_and_cover_everything() {
    let Some(mut pg) = db("sync_bounded") else {
        return;
    };
    let batch = two_sessions();
    pg.push(A, "laptop", &batch).unwrap();
    let mut from = 0;
    let mut got: Vec<(String, String)> = Vec::new();
    let mut tos = Vec::new();
    loop {
        let b = pg.pull_batch(B, A, from, 3).unwrap();
        if b.to_rev == from {
            break;
        }
        for s in &b.sessions {
            for m in &s.messages {
                got.push((s.session.external_id.clone(), m.ext_id.clone()));
            }
        }
        tos.push(b.to_rev);
        from = b.to_rev;
    }
    // Revisions: s1 = 1, s2 = 2, m1..m3 = 3..5, n1 = 6: batches end at 5 (three messages) and 6.
    assert_eq!(tos, [5, 6]);
    got.sort();
    assert_eq!(
        got,
        [("s1", "m1"), ("s1", "m2"), ("s1", "m3"), ("s2", "n1")]
            .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    // The first batch carried both session rows (both revisions are in range).
    let first = pg.pull_batch(B, A, 0, 3).unwrap();
    assert_eq!(first.sessions.len(), 2);
    assert_eq!(first.sessions[1].messages.len(), 0);
    // A batch starting past the session rows still carries the row of each message's session.
    let second = pg.pull_batch(B, A, 5, 3).unwrap();
    assert_eq!(second.sessions.len(), 1);
    assert_eq!(second.sessions[0].session, session("s2", 1));
    assert_eq!(second.sessions[0].snapshots, None);
}

#[test]
fn pull_batches_are_bounded_by_bytes_too_and_never_empty() {
    let Some(mut pg) = db("sync_bounded_bytes") else {
        return;
    };
    // Messages of 100, 200 and 300 bytes of body and 2 of parts ("[]"): 102, 202, 302 bytes.
    let sized = |ext: &str, seq: i64, n: usize| SyncMessage {
        body: "x".repeat(n),
        tools: String::new(),
        cjk: None,
        parts: "[]".into(),
        tool_calls: vec![],
        events: vec![],
        ..message(ext, seq, 0, 0)
    };
    let batch = PushBatch {
        deletions: vec![],
        sessions: vec![changes(
            A,
            "s1",
            vec![
                sized("m1", 1, 100),
                sized("m2", 2, 200),
                sized("m3", 3, 300),
            ],
        )],
        outbox: vec![1],
        tombstones: vec![],
    };
    pg.push(A, "laptop", &batch).unwrap();
    // Revisions: s1 = 1, m1..m3 = 2..4.
    let steps = |pg: &mut Pg, max_bytes: usize| {
        let mut from = 0;
        let mut out = Vec::new();
        loop {
            let b = pg.pull_batch_within(B, A, from, 100, max_bytes).unwrap();
            if b.to_rev == from {
                return out;
            }
            let ids: Vec<String> = b
                .sessions
                .iter()
                .flat_map(|s| s.messages.iter().map(|m| m.ext_id.clone()))
                .collect();
            out.push((b.to_rev, ids));
            from = b.to_rev;
        }
    };
    let v = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    // 102 + 202 = 304 fit in 305, 304 + 302 do not; 302 alone does.
    assert_eq!(
        steps(&mut pg, 305),
        [(3, v(&["m1", "m2"])), (4, v(&["m3"]))]
    );
    // Each message larger than the bound: one a batch.
    assert_eq!(
        steps(&mut pg, 100),
        [(2, v(&["m1"])), (3, v(&["m2"])), (4, v(&["m3"]))]
    );
    // Exactly the total: one batch.
    assert_eq!(steps(&mut pg, 606), [(4, v(&["m1", "m2", "m3"]))]);
}

#[test]
fn a_message_set_removes_what_it_lacks_and_is_pulled() {
    let Some(mut pg) = db("sync_message_set") else {
        return;
    };
    pg.push(A, "laptop", &two_sessions()).unwrap();
    let mut s1 = changes(A, "s1", vec![message("m4", 4, 0, 0)]);
    s1.message_set = Some(vec!["m1".into(), "m2".into(), "m4".into()]);
    let pushed = pg
        .push(
            A,
            "laptop",
            &PushBatch {
                sessions: vec![s1],
                ..PushBatch::default()
            },
        )
        .unwrap();
    assert_eq!((pushed.messages, pushed.messages_removed), (1, 1));
    let uid = session_uid(A, "claude", "s1");
    assert_eq!(
        count(
            &pg,
            &format!("SELECT count(*) FROM messages WHERE session_uid = '{uid}'")
        ),
        3
    );
    // m3's tool call and event went with it; m1's stay.
    for (sql, n) in [
        (
            "SELECT count(*) FROM tool_calls WHERE message_ext_id = 'm3'",
            0,
        ),
        ("SELECT count(*) FROM events WHERE message_ext_id = 'm3'", 0),
        (
            "SELECT count(*) FROM tool_calls WHERE message_ext_id = 'm1'",
            2,
        ),
        ("SELECT count(*) FROM events WHERE message_ext_id = 'm1'", 3),
    ] {
        assert_eq!(count(&pg, sql), n, "{sql}");
    }
    // Revisions of the second push: s1 = 7, m4 = 8, messages_rev = 9.
    let pulled = pg.pull_batch(B, A, 6, 100).unwrap();
    assert_eq!(pulled.to_rev, 9);
    assert_eq!(pulled.sessions.len(), 1);
    let s = &pulled.sessions[0];
    assert_eq!(
        s.messages
            .iter()
            .map(|m| m.ext_id.as_str())
            .collect::<Vec<_>>(),
        ["m4"]
    );
    assert_eq!(
        s.message_set.as_deref(),
        Some(&["m1".to_string(), "m2".into(), "m4".into()][..])
    );
    assert_eq!(s.snapshots.as_ref().map(Vec::len), Some(2));
}

#[test]
fn tool_calls_and_events_of_a_pushed_message_are_replaced_whole() {
    let Some(mut pg) = db("sync_replace") else {
        return;
    };
    pg.push(A, "laptop", &two_sessions()).unwrap();
    let mut m1 = message("m1", 1, 1, 1);
    m1.body = "edited".into();
    let mut s1 = changes(A, "s1", vec![m1.clone()]);
    s1.snapshots = Some(vec![snapshot(5)]);
    pg.push(
        A,
        "laptop",
        &PushBatch {
            sessions: vec![s1],
            ..PushBatch::default()
        },
    )
    .unwrap();
    assert_eq!(
        count(
            &pg,
            "SELECT count(*) FROM tool_calls WHERE message_ext_id = 'm1'"
        ),
        1
    );
    assert_eq!(
        count(
            &pg,
            "SELECT count(*) FROM events WHERE message_ext_id = 'm1'"
        ),
        1
    );
    assert_eq!(count(&pg, "SELECT count(*) FROM snapshots"), 1);
    let pulled = pg.pull_batch(B, A, 0, 100).unwrap();
    let s = pulled
        .sessions
        .iter()
        .find(|s| s.session.external_id == "s1")
        .unwrap();
    assert_eq!(s.messages.iter().find(|m| m.ext_id == "m1").unwrap(), &m1);
    assert_eq!(s.snapshots, Some(vec![snapshot(5)]));
}

#[test]
fn a_deletion_removes_the_session_everywhere_and_is_recorded_once() {
    let Some(mut pg) = db("sync_deletion") else {
        return;
    };
    pg.push(A, "laptop", &two_sessions()).unwrap();
    let deletion = Deletion {
        machine: A.into(),
        agent: "claude".into(),
        external_id: "s1".into(),
        deleted_at: 1_700_000_200_000,
    };
    let batch = PushBatch {
        deletions: vec![deletion.clone()],
        tombstones: vec![1],
        ..PushBatch::default()
    };
    assert_eq!(pg.push(B, "desktop", &batch).unwrap().deletions, 1);
    pg.push(B, "desktop", &batch).unwrap();
    assert_eq!(count(&pg, "SELECT count(*) FROM deletions"), 1);
    let uid = session_uid(A, "claude", "s1");
    for table in [
        "sessions WHERE uid",
        "messages WHERE session_uid",
        "tool_calls WHERE session_uid",
        "events WHERE session_uid",
        "snapshots WHERE session_uid",
    ] {
        assert_eq!(
            count(&pg, &format!("SELECT count(*) FROM {table} = '{uid}'")),
            0,
            "{table}"
        );
    }
    assert_eq!(count(&pg, "SELECT count(*) FROM messages"), 1);
    // A pulls B's deletion.
    let pulled = pg.pull_batch(A, B, 0, 100).unwrap();
    assert_eq!(pulled.deletions, [deletion]);
    assert_eq!((pulled.label.as_str(), pulled.to_rev), ("desktop", 7));
    assert!(pulled.sessions.is_empty());
    let names: Vec<String> = pg
        .machines()
        .unwrap()
        .into_iter()
        .map(|m| m.label)
        .collect();
    assert_eq!(names, ["laptop", "desktop"]);
}

#[test]
fn a_push_of_another_machines_session_is_refused() {
    let Some(mut pg) = db("sync_foreign") else {
        return;
    };
    let err = pg.push(B, "desktop", &two_sessions()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "the push batch holds a session of machine {A} (agent claude, session s1), not of \
             the pushing machine {B}"
        )
    );
    assert_eq!(count(&pg, "SELECT count(*) FROM machines"), 0);
}

#[test]
fn a_session_another_machine_deleted_is_not_pushed_again() {
    let Some(mut pg) = db("sync_deleted_elsewhere") else {
        return;
    };
    pg.push(A, "laptop", &two_sessions()).unwrap();
    let deletion = |by_a: bool| PushBatch {
        deletions: vec![Deletion {
            machine: A.into(),
            agent: "claude".into(),
            external_id: if by_a { "s2" } else { "s1" }.into(),
            deleted_at: 1_700_000_200_000,
        }],
        ..PushBatch::default()
    };
    pg.push(B, "desktop", &deletion(false)).unwrap();
    // A, not having pulled B's deletion yet, pushes a new message of s1 and one of s2.
    let later = PushBatch {
        sessions: vec![
            changes(A, "s1", vec![message("m9", 9, 0, 0)]),
            changes(A, "s2", vec![message("n9", 9, 0, 0)]),
        ],
        ..PushBatch::default()
    };
    let pushed = pg.push(A, "laptop", &later).unwrap();
    assert_eq!(
        (pushed.sessions, pushed.messages, pushed.deleted_elsewhere),
        (1, 1, 1)
    );
    assert_eq!(
        count(
            &pg,
            "SELECT count(*) FROM sessions WHERE external_id = 's1'"
        ),
        0
    );
    assert_eq!(count(&pg, "SELECT count(*) FROM messages"), 2);
    // A session its own machine deleted may come back (`sessions capture` after a delete).
    pg.push(A, "laptop", &deletion(true)).unwrap();
    let again = PushBatch {
        sessions: vec![changes(A, "s2", vec![message("n9", 9, 0, 0)])],
        ..PushBatch::default()
    };
    assert_eq!(pg.push(A, "laptop", &again).unwrap().deleted_elsewhere, 0);
    assert_eq!(count(&pg, "SELECT count(*) FROM messages"), 1);
}

/// The vectors of `ext`: (chunk, model, embedding as text), in chunk order.
fn vectors(pg: &Pg, ext: &str) -> Vec<(i32, String, String)> {
    pg.block_on(pg.client().query(
        "SELECT chunk, model, embedding::text FROM message_vectors WHERE ext_id = $1 \
         ORDER BY chunk",
        &[&ext],
    ))
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1), r.get(2)))
    .collect()
}

#[test]
fn vectors_are_replaced_per_message_and_go_with_their_messages() {
    if !std::env::var("MEMTRAIL_TEST_PG_VECTOR").is_ok_and(|v| v == "1") {
        return;
    }
    let Some(mut pg) = db("push_vectors") else {
        return;
    };
    let v = |ext: &str, chunks: Vec<(f32, Vec<i8>)>| SyncVectors {
        ext_id: ext.into(),
        model: if chunks.is_empty() { "" } else { "m@1/3" }.into(),
        chunks,
    };
    let mut batch = two_sessions();
    // m1: two chunks; 0.5 × (2, -1, 0) and 0.25 × (127, 0, -127) are exact in half precision.
    batch.sessions[0].vectors = vec![
        v(
            "m1",
            vec![(0.5, vec![2, -1, 0]), (0.25, vec![127, 0, -127])],
        ),
        v("m2", vec![(1.0 / 127.0, vec![127, 0, 0])]),
    ];
    let p = pg.push(A, "laptop", &batch).unwrap();
    assert_eq!(p.vectors, 3);
    assert_eq!(
        vectors(&pg, "m1"),
        vec![
            (0, "m@1/3".to_string(), "[1,-0.5,0]".to_string()),
            (1, "m@1/3".to_string(), "[31.75,0,-31.75]".to_string()),
        ]
    );
    assert_eq!(
        vectors(&pg, "m2"),
        vec![(0, "m@1/3".into(), "[1,0,0]".into())]
    );
    // Pushed again with one chunk: the second one goes; with none (rewritten, waiting to be
    // embedded again): all go.
    let mut again = two_sessions();
    again.sessions[0].vectors = vec![v("m1", vec![(1.0, vec![0, 1, 0])]), v("m2", vec![])];
    pg.push(A, "laptop", &again).unwrap();
    assert_eq!(
        vectors(&pg, "m1"),
        vec![(0, "m@1/3".into(), "[0,1,0]".into())]
    );
    assert_eq!(vectors(&pg, "m2"), vec![]);
    // A message set without m1 removes its vectors with it.
    let mut set = PushBatch::default();
    let mut s1 = changes(A, "s1", vec![]);
    s1.message_set = Some(vec!["m2".into()]);
    set.sessions.push(s1);
    pg.push(A, "laptop", &set).unwrap();
    assert_eq!(vectors(&pg, "m1"), vec![]);
    // A deleted session's vectors go with it.
    let mut more = two_sessions();
    more.sessions[0].vectors = vec![v("m2", vec![(1.0, vec![1, 1, 1])])];
    pg.push(A, "laptop", &more).unwrap();
    assert_eq!(count(&pg, "SELECT count(*) FROM message_vectors"), 1);
    let gone = PushBatch {
        deletions: vec![Deletion {
            machine: A.into(),
            agent: "claude".into(),
            external_id: "s1".into(),
            deleted_at: 1_700_000_100_000,
        }],
        ..PushBatch::default()
    };
    pg.push(A, "laptop", &gone).unwrap();
    assert_eq!(count(&pg, "SELECT count(*) FROM message_vectors"), 0);
}

#[test]
fn a_models_vector_index_is_built_once_it_has_enough_vectors_and_searches_read_it() {
    if !std::env::var("MEMTRAIL_TEST_PG_VECTOR").is_ok_and(|v| v == "1") {
        return;
    }
    let Some((url, mut pg)) = crate::fresh("vector_index") else {
        return;
    };
    migrate(&mut pg, MIGRATIONS).unwrap();
    let model = "m@1/3";
    // Two vectors: too few for an index; none is built.
    let mut few = two_sessions();
    few.sessions[0].vectors = vec![SyncVectors {
        ext_id: "m3".into(),
        model: model.into(),
        chunks: vec![
            (1.0 / 127.0, vec![0, 0, 127]),
            (1.0 / 127.0, vec![0, 0, -127]),
        ],
    }];
    assert_eq!(pg.push(A, "laptop", &few).unwrap().vectors, 2);
    assert!(pg.has_vector_index(model).unwrap());
    assert_eq!(pg.ensure_vector_index(model).unwrap(), None);
    let name = memtrail_pg::sync::vector_index_name(model);
    let exists = |pg: &Pg| {
        count(
            pg,
            &format!("SELECT count(*) FROM pg_indexes WHERE indexname = '{name}'"),
        )
    };
    assert_eq!(exists(&pg), 0);
    // About 20,000 more (of messages that do not exist: a search joins them away), spread
    // evenly over the sphere (a Fibonacci lattice) but none within 5.7° of the x or y axis, so
    // m1 and m2 stay the nearest to their axes; and 10 of another dimension under the same
    // model id, which the index skips.
    pg.batch_execute(
        "INSERT INTO message_vectors (session_uid, ext_id, chunk, model, embedding)
         SELECT 'synthetic', 'e' || g, 0, 'm@1/3', ARRAY[x, y, z]::real[]::halfvec
         FROM (SELECT g, sqrt(1 - z * z) * cos(g * 2.399963) AS x,
                      sqrt(1 - z * z) * sin(g * 2.399963) AS y, z
               FROM (SELECT g, 1 - 2 * (g + 0.5) / 25600 AS z
                     FROM generate_series(0, 25599) g) a) b
         WHERE abs(x) < 0.995 AND abs(y) < 0.995;
         INSERT INTO message_vectors (session_uid, ext_id, chunk, model, embedding)
         SELECT 'synthetic', 'f' || g, 0, 'm@1/3', ARRAY[1, 0, 0, 0]::real[]::halfvec
         FROM generate_series(1, 10) g;",
    )
    .unwrap();
    let synthetic = count(
        &pg,
        "SELECT count(*) FROM message_vectors WHERE session_uid = 'synthetic' AND ext_id LIKE 'e%'",
    );
    assert!(synthetic >= 20_000, "{synthetic}");
    assert!(!pg.has_vector_index(model).unwrap());
    assert_eq!(
        pg.ensure_vector_index(model).unwrap(),
        Some(synthetic as u64 + 2)
    );
    assert_eq!(exists(&pg), 1);
    assert!(pg.has_vector_index(model).unwrap());
    // Not again while the model's vectors have not outgrown it, however many vectors other
    // models have (the index's own row estimate is what counts).
    assert_eq!(pg.ensure_vector_index(model).unwrap(), None);
    pg.batch_execute(
        "INSERT INTO message_vectors (session_uid, ext_id, chunk, model, embedding)
         SELECT 'synthetic', 'o' || g, 0, 'other@1/3', ARRAY[1, 0, 0]::real[]::halfvec
         FROM generate_series(1, 110000) g;
         ANALYZE message_vectors;",
    )
    .unwrap();
    assert!(pg.has_vector_index(model).unwrap());
    assert_eq!(pg.ensure_vector_index(model).unwrap(), None);
    // Vectors pushed after the build go into the index: m1 along x, m2 along y.
    let mut batch = two_sessions();
    batch.sessions[0].vectors = vec![
        SyncVectors {
            ext_id: "m1".into(),
            model: model.into(),
            chunks: vec![(1.0 / 127.0, vec![127, 0, 0])],
        },
        SyncVectors {
            ext_id: "m2".into(),
            model: model.into(),
            chunks: vec![(1.0 / 127.0, vec![0, 127, 0])],
        },
    ];
    assert_eq!(pg.push(A, "laptop", &batch).unwrap().vectors, 2);
    // A search by meaning reads it (the plan of the reader's statement shape names it) and
    // finds the nearest message first (the synthetic vectors are joined away; the other
    // message is farther than the 8 nearest chunks read for 2 hits).
    let plan: Vec<String> = pg
        .block_on(pg.client().query(
            "EXPLAIN SELECT ext_id FROM message_vectors v
             WHERE v.model = E'm@1/3' AND vector_dims(v.embedding) = 3
             ORDER BY v.embedding::halfvec(3) <#> '[1,0,0]'::halfvec(3) LIMIT 40",
            &[],
        ))
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(plan.iter().any(|l| l.contains(&name)), "{plan:#?}");
    let reader = memtrail_pg::PgReader::connect(&format!("{url}?sslmode=disable")).unwrap();
    let f = memtrail_runtime::query::SearchFilter {
        limit: 2,
        ..Default::default()
    };
    let near = |q: [f32; 3]| -> Vec<String> {
        memtrail_runtime::read::ReadStore::nearest(&reader, model, &q, &[], &f)
            .unwrap()
            .into_iter()
            .map(|h| h.message_id)
            .collect()
    };
    assert_eq!(near([1.0, 0.0, 0.0]), ["m1"]);
    assert_eq!(near([0.0, 1.0, 0.0]), ["m2"]);
    let lists = |pg: &Pg| -> String {
        pg.block_on(pg.client().query_one(
            "SELECT array_to_string(reloptions, ',') FROM pg_class WHERE oid = to_regclass($1)",
            &[&name],
        ))
        .unwrap()
        .get(0)
    };
    assert_eq!(
        lists(&pg),
        format!(
            "lists={}",
            memtrail_pg::sync::vector_index_lists(synthetic + 2)
        )
    );
    // Grown more than fourfold past what it was built for (lists², PostgreSQL's row estimate
    // after ANALYZE): built again, with more lists, and still found.
    pg.batch_execute(
        "INSERT INTO message_vectors (session_uid, ext_id, chunk, model, embedding)
         SELECT 'synthetic', 'g' || g, 0, 'm@1/3',
                ARRAY[0.1 * sin(g), 0.1 * cos(g), -1]::real[]::halfvec
         FROM generate_series(1, 90000) g;
         ANALYZE message_vectors;",
    )
    .unwrap();
    assert!(!pg.has_vector_index(model).unwrap());
    let all = pg.ensure_vector_index(model).unwrap().unwrap();
    assert_eq!(all, synthetic as u64 + 4 + 90_000);
    assert_eq!(
        lists(&pg),
        format!(
            "lists={}",
            memtrail_pg::sync::vector_index_lists(all as i64)
        )
    );
    assert!(pg.has_vector_index(model).unwrap());
    assert_eq!(near([1.0, 0.0, 0.0]), ["m1"]);
    assert_eq!(
        near([0.6, 0.8, 0.0]),
        ["m2", "m1"][..near([0.6, 0.8, 0.0]).len()]
    );
}

#[test]
fn model_ids_are_quoted_and_named_safely() {
    use memtrail_pg::sync::{sql_literal, vector_index_name};
    assert_eq!(sql_literal("m@1/3"), "E'm@1/3'");
    assert_eq!(sql_literal(r"it's\a"), r"E'it''s\\a'");
    let n = vector_index_name("it's@1/3");
    assert!(
        n.len() <= 63 && n.starts_with("message_vectors_ivf_"),
        "{n}"
    );
    assert!(
        n["message_vectors_ivf_".len()..]
            .chars()
            .all(|c| c.is_ascii_hexdigit())
    );
    assert_ne!(vector_index_name("a@1/3"), vector_index_name("b@1/3"));
}

/// Waits until `n` sessions wait for an advisory lock (the pushes queued behind the holder).
fn wait_for_lock_waiters(pg: &Pg, n: i64) {
    let t = std::time::Instant::now();
    while count(
        pg,
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
    ) < n
    {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(30),
            "{n} pushes never waited"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Machine B deletes A's session s1 while A pushes new messages of it, in both orders of the
/// two transactions: the session stays deleted, with nothing of it left in PostgreSQL. (Before
/// pushes took their lock first, A's check for deletions ran before B's deletion committed and
/// its upsert then inserted s1 again: 1 message, a `deletions` row, s1 shown everywhere.)
#[test]
fn a_deletion_overlapping_the_owners_push_keeps_the_session_deleted() {
    for deletion_first in [true, false] {
        let name = format!("sync_delete_race_{deletion_first}");
        let Some((url, mut pg)) = crate::fresh(&name) else {
            return;
        };
        migrate(&mut pg, MIGRATIONS).unwrap();
        pg.push(A, "laptop", &two_sessions()).unwrap();
        let connect = || Pg::connect_url(&format!("{url}?sslmode=disable")).unwrap();
        // A third connection holds the push lock, so that both pushes queue behind it in a
        // known order and run the moment it is released.
        let holder = connect();
        holder
            .block_on(holder.client().batch_execute(&format!(
                "BEGIN; SELECT pg_advisory_xact_lock({})",
                memtrail_pg::sync::PUSH_LOCK
            )))
            .unwrap();
        let delete = move || {
            let mut b = connect();
            std::thread::spawn(move || {
                let batch = PushBatch {
                    deletions: vec![Deletion {
                        machine: A.into(),
                        agent: "claude".into(),
                        external_id: "s1".into(),
                        deleted_at: 1_700_000_200_000,
                    }],
                    ..PushBatch::default()
                };
                b.push(B, "desktop", &batch).unwrap()
            })
        };
        let connect = || Pg::connect_url(&format!("{url}?sslmode=disable")).unwrap();
        let update = move || {
            let mut a = connect();
            std::thread::spawn(move || {
                let batch = PushBatch {
                    sessions: vec![changes(A, "s1", vec![message("m9", 9, 1, 1)])],
                    ..PushBatch::default()
                };
                a.push(A, "laptop", &batch).unwrap()
            })
        };
        let (first, second) = if deletion_first {
            let d = delete();
            wait_for_lock_waiters(&pg, 1);
            (d, update())
        } else {
            let u = update();
            wait_for_lock_waiters(&pg, 1);
            (u, delete())
        };
        wait_for_lock_waiters(&pg, 2);
        holder
            .block_on(holder.client().batch_execute("COMMIT"))
            .unwrap();
        let (first, second) = (first.join().unwrap(), second.join().unwrap());
        let (deleted, updated) = if deletion_first {
            (first, second)
        } else {
            (second, first)
        };
        assert_eq!(deleted.deletions, 1, "deletion first: {deletion_first}");
        // Pushed after the deletion, A's change is dropped; pushed before, it is written and
        // then deleted with the rest of s1.
        assert_eq!(
            (updated.sessions, updated.deleted_elsewhere),
            if deletion_first { (0, 1) } else { (1, 0) },
            "deletion first: {deletion_first}"
        );
        let s1 = session_uid(A, "claude", "s1");
        for table in ["sessions", "messages", "tool_calls", "events", "snapshots"] {
            let column = if table == "sessions" {
                "uid"
            } else {
                "session_uid"
            };
            assert_eq!(
                count(
                    &pg,
                    &format!("SELECT count(*) FROM {table} WHERE {column} = '{s1}'")
                ),
                0,
                "{table} of s1, deletion first: {deletion_first}"
            );
        }
        // s2 is untouched: its one message.
        assert_eq!(count(&pg, "SELECT count(*) FROM messages"), 1);
        assert_eq!(count(&pg, "SELECT count(*) FROM deletions"), 1);
    }
}
