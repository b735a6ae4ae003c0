//! The activity summaries of migration 6 (`pg/src/migrations/0006_activity.sql`) against a real
//! PostgreSQL: the analytics a [`PgReader`] gives equal those of the SQLite store the same
//! sessions were pushed from, after the push, a rewrite, a redaction and a delete; the summary
//! tables equal their recount from the stored rows after every kind of write (upserts, message
//! sets reconciled, deletions, rows changed by hand); the migration builds them for rows
//! stored before it; two machines pushing at once never deadlock on the shared rows.

use crate::corpus::*;
use memtrail_adapters::{Agent, Kind, Message, Part, Role, ToolCall};
use memtrail_pg::migrate::{MIGRATIONS, migrate};
use memtrail_pg::{Pg, PgReader};
use memtrail_runtime::analytics::{
    AgentDay, Analytics, DAY_MS, DayRange, FileEdits, ModelDay, ProjectTime, SLOT_MS, ToolUse,
};
use memtrail_runtime::read::ReadStore;
use memtrail_runtime::records::{Enrich, Prepared, Standard};
use memtrail_runtime::sync::{
    Deletion, PushBatch, SessionChanges, SyncEvent, SyncMessage, SyncSession, SyncToolCall,
};
use memtrail_runtime::{Store, StoreLocation};
use std::borrow::Cow;

/// 2026-11-01T00:00:00Z, in ms: day [`D0`].
const T0: i64 = 1_793_491_200_000;
const D0: i64 = T0 / DAY_MS;
const MIN: i64 = 60_000;
const HERE: &str = "5f0c3e2a9b1d4c7e8a6f2b3c4d5e6f70";

fn call(id: &str, name: &str, tool: &str, input: serde_json::Value, error: bool) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        tool: tool.into(),
        input,
        output: Some(if error { "failed" } else { "ok" }.into()),
        is_error: error,
        exit_code: Some(if error { 1 } else { 0 }),
    }
}

fn calling(id: &str, ts: Option<i64>, model: &str, c: ToolCall) -> Message {
    Message {
        id: id.into(),
        role: Role::Assistant,
        kind: Kind::ToolCall,
        parts: vec![Part::ToolCall(c)],
        timestamp: ts,
        model: Some(model.into()),
    }
}

fn edit(path: &str) -> serde_json::Value {
    serde_json::json!({"file_path": path, "old_string": "x + 1", "new_string": "n + 1"})
}

/// Three sessions over days D0..D0+2: claude's `a` in /p/alpha (a Bash call that works and one
/// that fails, an Edit and a Write a day later), its sub-agent `a/sub` in /p/alpha (an Edit in
/// `a`'s first 5-minute slot), codex's `b` in /p/beta (a message without a time, a Read).
fn corpus() -> Vec<Session> {
    let bash = |id, error| {
        call(
            id,
            "Bash",
            "shell",
            serde_json::json!({"command": "make"}),
            error,
        )
    };
    let mut sub = session(
        Agent::Claude,
        "a/sub",
        "/p/alpha",
        "sub-agent",
        vec![calling(
            "s0",
            Some(T0 + MIN / 2),
            "haiku",
            call("c-s0", "Edit", "edit", edit("/p/alpha/src/lib.rs"), false),
        )],
    );
    sub.sref.parent_external_id = Some("a".into());
    vec![
        session(
            Agent::Claude,
            "a",
            "/p/alpha",
            "alpha",
            vec![
                text("a0", Role::User, T0, "build it"),
                calling("a1", Some(T0 + MIN), "opus", bash("c-a1", false)),
                calling("a2", Some(T0 + 2 * MIN), "opus", bash("c-a2", true)),
                calling(
                    "a3",
                    Some(T0 + DAY_MS + 5 * MIN),
                    "sonnet",
                    call("c-a3", "Edit", "edit", edit("/p/alpha/src/lib.rs"), false),
                ),
                calling(
                    "a4",
                    Some(T0 + DAY_MS + 6 * MIN),
                    "sonnet",
                    call(
                        "c-a4",
                        "Write",
                        "write",
                        serde_json::json!({"file_path": "/p/alpha/README.md", "content": "# a\n"}),
                        false,
                    ),
                ),
            ],
        ),
        sub,
        session(
            Agent::Codex,
            "b",
            "/p/beta",
            "beta",
            vec![
                text("b0", Role::User, T0 + 2 * DAY_MS, "read the notes"),
                Message {
                    model: Some("gpt-5".into()),
                    timestamp: None,
                    ..text("b1", Role::Assistant, 0, "no time here")
                },
                calling(
                    "b2",
                    Some(T0 + 2 * DAY_MS + 10 * MIN),
                    "gpt-5",
                    call(
                        "c-b2",
                        "Read",
                        "read",
                        serde_json::json!({"file_path": "/p/beta/notes.md"}),
                        false,
                    ),
                ),
            ],
        ),
    ]
}

/// What an older memtrail stored: the same events, no redaction.
struct Unredacted;

impl Enrich for Unredacted {
    fn redact<'s>(&self, text: &'s str) -> Cow<'s, str> {
        Cow::Borrowed(text)
    }
    fn redact_title<'s>(&self, title: &'s str) -> Cow<'s, str> {
        Cow::Borrowed(title)
    }
    fn redact_json(&self, _: &mut serde_json::Value) {}
    fn redact_record(&self, _: &mut memtrail_adapters::Record) {}
    fn redact_parts(&self, _: &mut Message) {}
    fn redact_merged(&self, _: &mut Message) {}
    fn events(&self, agent: Agent, m: &Message) -> Vec<memtrail_runtime::events::Event> {
        Standard.events(agent, m)
    }
}

/// [`write_store`] without redaction (as a store written before a rule existed holds it).
fn write_store_unredacted(db: &std::path::Path, corpus: &[Session]) -> Store {
    let mut store = Store::open(StoreLocation::from(db)).unwrap();
    for s in corpus {
        store
            .write(|w| {
                let id = w.upsert_session(&s.sref, &s.meta, &Unredacted)?;
                w.apply_prepared(
                    id,
                    Prepared::with(
                        s.messages
                            .iter()
                            .cloned()
                            .map(memtrail_adapters::Record::Message)
                            .collect(),
                        Unredacted,
                    ),
                )?;
                Ok(id)
            })
            .unwrap();
    }
    store
}

/// [`corpus`] rewritten: a3 moved to day 2 and to opus (which the SQLite writer keeps as
/// stored), the failed Bash call succeeded.
fn rewritten() -> Vec<Session> {
    let mut changed = corpus();
    for m in &mut changed[0].messages {
        if m.id == "a3" {
            m.timestamp = Some(T0 + 2 * DAY_MS + 3 * MIN);
            m.model = Some("opus".into());
        }
        if let Part::ToolCall(c) = &mut m.parts[0]
            && c.id == "c-a2"
        {
            c.is_error = false;
            c.exit_code = Some(0);
            c.output = Some("ok".into());
        }
    }
    changed
}

fn day(day: i64, agent: &str, sessions: i64, messages: i64) -> AgentDay {
    AgentDay {
        day: D0 + day,
        agent: agent.into(),
        sessions,
        messages,
    }
}

fn model(day: i64, model: &str, messages: i64) -> ModelDay {
    ModelDay {
        day: D0 + day,
        model: model.into(),
        messages,
    }
}

fn tool(name: &str, calls: i64, errors: i64) -> ToolUse {
    ToolUse {
        name: name.into(),
        calls,
        errors,
    }
}

fn file(path: &str, edits: i64) -> FileEdits {
    FileEdits {
        path: path.into(),
        edits,
    }
}

fn project(project: &str, slots: i64) -> ProjectTime {
    ProjectTime {
        project: project.into(),
        active_ms: slots * SLOT_MS,
    }
}

/// The ranges compared: the three days, each day alone, and a range with none of them.
fn ranges() -> Vec<DayRange> {
    let mut v = vec![DayRange {
        first_day: D0 - 5,
        last_day: D0 + 5,
    }];
    for d in -1..=3 {
        v.push(DayRange {
            first_day: D0 + d,
            last_day: D0 + d,
        });
    }
    v
}

const ALL: DayRange = DayRange {
    first_day: D0 - 5,
    last_day: D0 + 5,
};

/// The SQLite store's analytics equal the reader's for every range of [`ranges`]; the whole
/// range's, returned.
fn assert_same(store: &Store, reader: &PgReader, when: &str) -> Analytics {
    for r in ranges() {
        assert_eq!(
            store.analytics(r).unwrap(),
            reader.analytics(r).unwrap(),
            "{when}: days {}..={}",
            r.first_day - D0,
            r.last_day - D0
        );
    }
    reader.analytics(ALL).unwrap()
}

/// The summaries as their definition gives them, recomputed from the stored rows: (what the
/// triggers kept, the recount).
const RECOUNT: [(&str, &str); 6] = [
    (
        "SELECT day, agent, model, messages FROM activity_agents ORDER BY 1, 2, 3",
        "SELECT m.ts / 86400000, s.agent, coalesce(m.model, ''), count(*) FROM messages m
         JOIN sessions s ON s.uid = m.session_uid
         WHERE m.ts IS NOT NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
    ),
    (
        "SELECT slot, session_uid, '', messages FROM activity_slots ORDER BY 1, 2",
        "SELECT ts / 300000, session_uid, '', count(*) FROM messages
         WHERE ts IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2",
    ),
    (
        "SELECT 0::int8, name, '', calls * 1000 + errors FROM tool_use ORDER BY 2",
        "SELECT 0::int8, name, '', count(*) * 1000 + count(*) FILTER (WHERE is_error)
         FROM tool_calls GROUP BY 2 ORDER BY 2",
    ),
    (
        "SELECT 0::int8, path, '', edits FROM file_edits ORDER BY 2",
        "SELECT 0::int8, subject, '', count(*) FROM events
         WHERE category = 'file' AND action IN ('edited', 'written') GROUP BY 2 ORDER BY 2",
    ),
    (
        "SELECT slot, project, '', messages FROM project_slots ORDER BY 1, 2",
        "SELECT m.ts / 300000, coalesce(s.project_dir, ''), '', count(*) FROM messages m
         JOIN sessions s ON s.uid = m.session_uid
         WHERE m.ts IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2",
    ),
    (
        "SELECT day, project, '', slots FROM project_days ORDER BY 1, 2",
        "SELECT m.ts / 86400000, coalesce(s.project_dir, ''), '', count(DISTINCT m.ts / 300000)
         FROM messages m JOIN sessions s ON s.uid = m.session_uid
         WHERE m.ts IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2",
    ),
];

type SummaryRow = (i64, String, String, i64);

fn summary_rows(pg: &Pg, sql: &str) -> Vec<SummaryRow> {
    pg.block_on(pg.client().query(sql, &[]))
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect()
}

/// Every summary equals its recount; how many summary rows there are.
fn assert_recounted(pg: &Pg, when: &str) -> usize {
    let mut n = 0;
    for (kept, recount) in RECOUNT {
        let (a, b) = (summary_rows(pg, kept), summary_rows(pg, recount));
        assert_eq!(a, b, "{when}: {kept}");
        n += a.len();
    }
    n
}

fn open(url: &str) -> Pg {
    Pg::connect_url(&format!("{url}?sslmode=disable")).unwrap()
}

/// The figures of [`corpus`] worked out by hand, equal on both stores after the push; then
/// after a rewrite (a call's outcome changed), a redaction (`redact --rescan`'s rewrite of a message whose file path held a
/// secret: its events extracted again) and a session deleted.
#[test]
fn analytics_equal_the_sqlite_store_after_push_rewrite_redaction_and_delete() {
    let Some(url) = fresh_database("activity_same") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let mut store = write_store(&db, &corpus());
    push_all(&mut store, &url, HERE, "laptop");
    let reader = PgReader::connect(&url).unwrap();
    let pg = open(&url);
    let a = assert_same(&store, &reader, "after the push");
    let by_hand = Analytics {
        // Day 0: `a` started (its sub-agent is part of it), a0 a1 a2 and the sub-agent's s0;
        // day 1: a3 a4; day 2: `b` started, b0 b2 (b1 has no time).
        agent_days: vec![
            day(0, "claude", 1, 4),
            day(1, "claude", 0, 2),
            day(2, "codex", 1, 2),
        ],
        model_days: vec![
            model(0, "", 1),
            model(0, "haiku", 1),
            model(0, "opus", 2),
            model(1, "sonnet", 2),
            model(2, "", 1),
            model(2, "gpt-5", 1),
        ],
        // /p/alpha: the first slot of day 0 (a and its sub-agent at once, counted once) and
        // minutes 5-6 of day 1; /p/beta: minutes 0 and 10 of day 2.
        projects: vec![project("/p/alpha", 2), project("/p/beta", 2)],
        tools: vec![
            tool("Bash", 2, 1),
            tool("Edit", 2, 0),
            tool("Read", 1, 0),
            tool("Write", 1, 0),
        ],
        files: vec![
            file("/p/alpha/src/lib.rs", 2),
            file("/p/alpha/README.md", 1),
        ],
    };
    assert_eq!(a, by_hand);
    let rows = assert_recounted(&pg, "after the push");
    assert!(rows >= 12, "{rows}");
    // Pushed again (sync enabled again queues every session): nothing changes.
    push_all(&mut store, &url, HERE, "laptop");
    assert_eq!(assert_same(&store, &reader, "after a second push"), by_hand);
    assert_eq!(assert_recounted(&pg, "after a second push"), rows);

    // A rewrite: the failed Bash call now succeeds (the writer keeps a stored message's time
    // and model, so a3's stay: `summaries_follow_every_write` moves them in PostgreSQL).
    let changed = rewritten();
    drop(store);
    let mut store = write_store(&db, &changed);
    push_all(&mut store, &url, HERE, "laptop");
    let a = assert_same(&store, &reader, "after a rewrite");
    assert_eq!(a.tools[0], tool("Bash", 2, 0));
    assert_recounted(&pg, "after a rewrite");

    // A redaction: the Write's path held a key (stored by an older memtrail, written here
    // directly: the writer would have redacted it); the rescan rewrites the message and
    // extracts its events again, and the push carries both.
    let key = "AKIAQYLPMN5HHHFPZAM2";
    let mut leaky = rewritten();
    leaky[0].messages.push(calling(
        "a5",
        Some(T0 + DAY_MS + 7 * MIN),
        "sonnet",
        call(
            "c-a5",
            "Write",
            "write",
            serde_json::json!({"file_path": format!("/p/alpha/{key}.md"), "content": "k\n"}),
            false,
        ),
    ));
    drop(store);
    let mut store = write_store_unredacted(&db, &leaky);
    push_all(&mut store, &url, HERE, "laptop");
    // The reader redacts what it reads: the secret is never shown, even before the rescan.
    let shown = reader.analytics(ALL).unwrap();
    assert!(
        shown.files.iter().all(|f| !f.path.contains(key)),
        "{:?}",
        shown.files
    );
    let raw = |pg: &Pg| -> i64 {
        pg.block_on(pg.client().query_one(
            &format!("SELECT count(*) FROM file_edits WHERE path LIKE '%{key}%'"),
            &[],
        ))
        .unwrap()
        .get(0)
    };
    assert_eq!(raw(&pg), 1, "the secret path reached file_edits");
    let rescan =
        memtrail_runtime::maintenance::rescan_with(&mut store, &mut |_| {}, &Standard).unwrap();
    assert!(rescan.messages_changed >= 1, "{rescan:?}");
    push_all(&mut store, &url, HERE, "laptop");
    let a = assert_same(&store, &reader, "after the redaction");
    assert_eq!(raw(&pg), 0, "the redaction reached file_edits");
    assert_eq!(a.files.len(), 3, "{:?}", a.files);
    assert!(
        a.files.iter().all(|f| !f.path.contains(key)),
        "{:?}",
        a.files
    );
    assert!(
        a.files
            .iter()
            .any(|f| f.path.starts_with("/p/alpha/[redacted")),
        "{:?}",
        a.files
    );
    assert_recounted(&pg, "after the redaction");

    // A delete: codex's session goes, and with it day 2's codex figures, /p/beta and Read.
    memtrail_runtime::maintenance::delete_session(&mut store, "b").unwrap();
    push_all(&mut store, &url, HERE, "laptop");
    let a = assert_same(&store, &reader, "after a delete");
    assert!(a.agent_days.iter().all(|d| d.agent == "claude"), "{a:?}");
    assert_eq!(a.projects, [project("/p/alpha", 2)]);
    assert_eq!(a.files.len(), 3);
    assert!(a.tools.iter().all(|t| t.name != "Read"), "{:?}", a.tools);
    assert_recounted(&pg, "after a delete");
    let left: i64 = pg
        .block_on(pg.client().query_one(
            "SELECT (SELECT count(*) FROM activity_agents WHERE agent = 'codex')
                  + (SELECT count(*) FROM project_days WHERE project = '/p/beta')",
            &[],
        ))
        .unwrap()
        .get(0);
    assert_eq!(left, 0);
}

/// A database of schema 5 that holds the pushed sessions gets the same summaries from the
/// migration's backfill as the triggers keep, and the reader answers from them.
#[test]
fn the_migration_builds_the_summaries_of_rows_stored_before_it() {
    let Some(url) = memtrail_testkit::pg::test_database("activity_backfill") else {
        return;
    };
    let mut pg = open(&url);
    migrate(&mut pg, &MIGRATIONS[..5]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut store = write_store(&dir.path().join("m.db"), &corpus());
    push_all(&mut store, &url, HERE, "laptop");
    // Schema 5: the reader adds up the messages.
    let old = PgReader::connect(&url).unwrap();
    let before = old.analytics(ALL).unwrap();
    assert_eq!(before, store.analytics(ALL).unwrap());
    let report = migrate(&mut pg, MIGRATIONS).unwrap();
    assert_eq!(
        report.applied,
        (6..=MIGRATIONS.len() as i64).collect::<Vec<_>>()
    );
    let rows = assert_recounted(&pg, "after the migration");
    assert!(rows >= 12, "{rows}");
    // The reader opened before the migration finds the summaries now.
    let after = assert_same(&store, &old, "after the migration");
    assert_eq!(after, before);
}

fn sync_message(
    ext: &str,
    ts: Option<i64>,
    model: Option<&str>,
    calls: &[(&str, bool)],
    files: &[&str],
) -> SyncMessage {
    SyncMessage {
        ext_id: ext.into(),
        seq: 0,
        role: "assistant".into(),
        kind: "tool_call".into(),
        ts,
        model: model.map(str::to_string),
        body: String::new(),
        tools: String::new(),
        cjk: None,
        parts: "[]".into(),
        tool_calls: calls
            .iter()
            .enumerate()
            .map(|(i, (name, error))| SyncToolCall {
                call_id: format!("{ext}-{i}"),
                name: name.to_string(),
                tool: "other".into(),
                is_error: *error,
                has_output: true,
            })
            .collect(),
        events: files
            .iter()
            .map(|f| SyncEvent {
                seq: 0,
                category: "file".into(),
                action: "edited".into(),
                priority: 1,
                subject: f.to_string(),
                detail: None,
                call_id: None,
                tool: None,
                ts,
            })
            .collect(),
    }
}

fn sync_session(machine: &str, ext: &str, messages: Vec<SyncMessage>) -> SessionChanges {
    SessionChanges {
        machine: machine.into(),
        session: SyncSession {
            agent: "claude".into(),
            external_id: ext.into(),
            parent_external_id: None,
            project_dir: Some("/p".into()),
            title: None,
            model: None,
            git_branch: None,
            agent_version: None,
            started_at: Some(T0),
            updated_at: Some(T0),
            message_count: messages.len() as i64,
        },
        messages,
        snapshots: None,
        message_set: None,
        vectors: Vec::new(),
    }
}

fn batch(sessions: Vec<SessionChanges>, deletions: Vec<Deletion>) -> PushBatch {
    PushBatch {
        deletions,
        sessions,
        outbox: vec![],
        tombstones: vec![],
    }
}

/// Every write path of the push, and rows changed by hand, keep the summaries equal to their
/// recount: new messages, the same ones again, messages rewritten (time, model, calls and
/// events replaced), a message set that drops messages, a session deleted, and `UPDATE`s of
/// messages, tool calls and events written directly.
#[test]
fn summaries_follow_every_write() {
    let Some(url) = fresh_database("activity_writes") else {
        return;
    };
    let mut pg = open(&url);
    let m = |ext, ts, model, calls: &[(&str, bool)], files: &[&str]| {
        sync_message(ext, ts, model, calls, files)
    };
    let first = batch(
        vec![
            sync_session(
                HERE,
                "s1",
                vec![
                    m(
                        "m1",
                        Some(T0),
                        Some("opus"),
                        &[("Bash", false), ("Bash", true)],
                        &["/a", "/b"],
                    ),
                    m("m2", Some(T0 + MIN), None, &[("Read", false)], &["/a"]),
                    m("m3", None, Some("opus"), &[], &[]),
                ],
            ),
            sync_session(
                HERE,
                "s2",
                vec![m(
                    "n1",
                    Some(T0 + DAY_MS),
                    Some("haiku"),
                    &[("Bash", false)],
                    &[],
                )],
            ),
        ],
        vec![],
    );
    pg.push(HERE, "laptop", &first).unwrap();
    assert_recounted(&pg, "first push");
    let tools = summary_rows(&pg, RECOUNT[2].0);
    assert_eq!(
        tools,
        [
            (0, "Bash".to_string(), String::new(), 3001),
            (0, "Read".to_string(), String::new(), 1000)
        ]
    );
    pg.push(HERE, "laptop", &first).unwrap();
    assert_eq!(summary_rows(&pg, RECOUNT[2].0), tools);
    assert_recounted(&pg, "the same push again");

    // m1 rewritten: another day and model, one call (now failed under another name), one file.
    let rewrite = batch(
        vec![sync_session(
            HERE,
            "s1",
            vec![m(
                "m1",
                Some(T0 + 3 * DAY_MS),
                Some("sonnet"),
                &[("Grep", true)],
                &["/c"],
            )],
        )],
        vec![],
    );
    pg.push(HERE, "laptop", &rewrite).unwrap();
    assert_recounted(&pg, "a rewrite");
    assert_eq!(
        summary_rows(&pg, RECOUNT[3].0),
        [
            (0, "/a".to_string(), String::new(), 1),
            (0, "/c".to_string(), String::new(), 1)
        ]
    );

    // s1 moves to another folder (its session row pushed again): its slots move with it.
    let mut moved = sync_session(HERE, "s1", vec![]);
    moved.session.project_dir = Some("/q".into());
    pg.push(HERE, "laptop", &batch(vec![moved], vec![]))
        .unwrap();
    assert_recounted(&pg, "a folder changed");
    assert_eq!(
        summary_rows(
            &pg,
            "SELECT 0::int8, project, '', sum(slots)::int8 FROM project_days GROUP BY 2 ORDER BY 2"
        ),
        [
            (0, "/p".to_string(), String::new(), 1),
            (0, "/q".to_string(), String::new(), 2)
        ]
    );

    // The message set of s1 keeps m1 only.
    let mut set = sync_session(HERE, "s1", vec![]);
    set.message_set = Some(vec!["m1".into()]);
    pg.push(HERE, "laptop", &batch(vec![set], vec![])).unwrap();
    assert_recounted(&pg, "a message set");
    let slots = summary_rows(&pg, RECOUNT[1].0);
    assert_eq!(slots.len(), 2, "{slots:?}");

    // Written by hand: times, models, names, outcomes and actions changed.
    pg.batch_execute(
        "UPDATE messages SET ts = ts + 86400000, model = 'x' WHERE ext_id = 'n1';
         UPDATE tool_calls SET is_error = NOT is_error;
         UPDATE tool_calls SET name = 'Renamed' WHERE name = 'Bash';
         UPDATE events SET action = 'read' WHERE subject = '/c';
         UPDATE events SET subject = '/d';
         UPDATE sessions SET project_dir = NULL WHERE external_id = 's2';",
    )
    .unwrap();
    assert_recounted(&pg, "updates by hand");

    // s2 deleted: nothing of it is left in the summaries.
    let gone = Deletion {
        machine: HERE.into(),
        agent: "claude".into(),
        external_id: "s2".into(),
        deleted_at: T0,
    };
    pg.push(HERE, "laptop", &batch(vec![], vec![gone])).unwrap();
    assert_recounted(&pg, "a deletion");
    assert_eq!(summary_rows(&pg, RECOUNT[2].0).len(), 1);
    assert!(
        summary_rows(&pg, RECOUNT[1].0)
            .iter()
            .all(|r| r.1 == memtrail_pg::session_uid(HERE, "claude", "s1"))
    );
}

/// Two machines pushing at once, each push rewriting its messages' tool calls and files under
/// names rotated the other way from the other machine's (the calls a rewrite deletes and those
/// it inserts take the shared `tool_use` and `file_edits` rows in opposite orders on the two
/// machines, the interleaving the advisory lock rules out), finish without an error, and the
/// shared summaries add up both. The machines' messages share no other summary row (another
/// agent, model and folder each), which would make them take turns anyway. (Without the lock
/// this test still passed in 5 runs here: the window between a push's delete and insert of
/// calls is short; it checks the summaries under concurrency, it does not prove the lock.)
#[test]
fn two_machines_pushing_at_once_share_the_summaries() {
    let Some(url) = fresh_database("activity_concurrent") else {
        return;
    };
    const OTHER: &str = "0123456789abcdef0123456789abcdef";
    let names = ["Bash", "Read", "Edit", "Grep", "Write"];
    let run = |machine: &'static str, turn: usize| {
        let url = url.clone();
        std::thread::spawn(move || {
            let mut pg = open(&url);
            for round in 0..40usize {
                // Message k calls names[(k ± round) mod 5]: each push replaces every call.
                let name = |k: usize| names[(k + 5 * 40 + turn * round) % 5];
                let files: Vec<String> = (0..4).map(|k| format!("/shared/{}", name(k))).collect();
                let msgs = (0..4)
                    .map(|k| {
                        sync_message(
                            &format!("m{k}"),
                            Some(T0 + k as i64),
                            Some(machine),
                            &[(name(k), false), (name(k + 1), true)],
                            &[files[k].as_str()],
                        )
                    })
                    .collect();
                let mut s = sync_session(machine, "s", msgs);
                s.session.agent = machine.into();
                s.session.project_dir = Some(format!("/p/{machine}"));
                pg.push(machine, machine, &batch(vec![s], vec![])).unwrap();
            }
        })
    };
    let a = run(HERE, 1);
    let b = run(OTHER, 4);
    a.join().unwrap();
    b.join().unwrap();
    let pg = open(&url);
    assert_recounted(&pg, "two machines");
    // Each machine holds 1 session of 4 messages with 2 calls each.
    let calls: i64 = pg
        .block_on(
            pg.client()
                .query_one("SELECT sum(calls)::int8 FROM tool_use", &[]),
        )
        .unwrap()
        .get(0);
    assert_eq!(calls, 2 * 4 * 2);
}
