//! Shared by the PostgreSQL read tests: a database of its own per test in the cluster of
//! `MEMTRAIL_TEST_PG_URL`, and the same sessions written into an SQLite store and into
//! PostgreSQL (rows as a push writes them: docs/sync.md).

use memtrail_adapters::{Agent, Kind, Message, Part, Record, Role, SessionMeta, SessionRef};
use memtrail_runtime::read::ReadStore;
use memtrail_runtime::records::Prepared;
use memtrail_runtime::store::{cjk_index_text, render_index_text};
use memtrail_runtime::{Store, StoreLocation};

/// Run `f` with a client of `url` on a runtime of its own.
pub fn with_client<T>(url: &str, f: impl AsyncFnOnce(&tokio_postgres::Client) -> T) -> T {
    let pg = memtrail_pg::Pg::connect_url(url).unwrap();
    pg.block_on(f(pg.client()))
}

/// A new database of the test cluster with memtrail's PostgreSQL schema (every migration), its
/// URL; `None` (the test skipped) without a cluster (`memtrail_testkit::pg::test_database`).
pub fn fresh_database(name: &str) -> Option<String> {
    let url = memtrail_testkit::pg::test_database(name)?;
    let mut pg = memtrail_pg::Pg::connect_url(&url).unwrap();
    memtrail_pg::migrate::migrate(&mut pg, memtrail_pg::migrate::MIGRATIONS).unwrap();
    Some(url)
}

/// One session of a corpus: who, its facts, its messages.
pub struct Session {
    pub sref: SessionRef,
    pub meta: SessionMeta,
    pub messages: Vec<Message>,
}

/// A text message.
pub fn text(id: &str, role: Role, ts: i64, body: &str) -> Message {
    Message {
        id: id.into(),
        role,
        kind: Kind::Text,
        parts: vec![Part::Text { text: body.into() }],
        timestamp: Some(ts),
        model: None,
    }
}

/// A session of `agent` in `project`, its times those of its messages.
pub fn session(
    agent: Agent,
    id: &str,
    project: &str,
    title: &str,
    messages: Vec<Message>,
) -> Session {
    let times: Vec<i64> = messages.iter().filter_map(|m| m.timestamp).collect();
    Session {
        sref: SessionRef {
            agent,
            external_id: id.into(),
            parent_external_id: None,
        },
        meta: SessionMeta {
            project_dir: Some(project.into()),
            title: Some(title.into()),
            started_at: times.iter().min().copied(),
            updated_at: times.iter().max().copied(),
            ..SessionMeta::default()
        },
        messages,
    }
}

/// Write `corpus` into the SQLite store at `db` (as ingest does), then the same rows into the
/// PostgreSQL database at `pg` as a push from machine `machine` (label `label`) writes them:
/// the session as stored, each message's searchable text (`render_index_text`, its CJK
/// characters), its parts as JSON, and the events the SQLite store extracted.
pub fn write_both(db: &std::path::Path, pg: &str, machine: &str, label: &str, corpus: &[Session]) {
    let mut store = Store::open(StoreLocation::from(db)).unwrap();
    let mut rows = Vec::new();
    for s in corpus {
        let rowid = store
            .write(|w| {
                let id =
                    w.upsert_session(&s.sref, &s.meta, &memtrail_runtime::records::Standard)?;
                w.apply_prepared(
                    id,
                    Prepared::new(s.messages.iter().cloned().map(Record::Message).collect()),
                )?;
                Ok(id)
            })
            .unwrap();
        let summary = store.session_summary(rowid).unwrap();
        let events = store.session_events(rowid).unwrap();
        rows.push((summary, events));
    }
    with_client(pg, async |c| {
        c.execute(
            "INSERT INTO machines (id, label) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING",
            &[&machine, &label],
        )
        .await
        .unwrap();
        for (s, (summary, events)) in corpus.iter().zip(&rows) {
            let uid = format!("{machine}/{}/{}", summary.agent, summary.session_id);
            let time = |t: &Option<String>| {
                t.as_deref()
                    .map(|t| memtrail_adapters::parse_rfc3339_ms(t).unwrap())
            };
            c.execute(
                "INSERT INTO sessions (uid, machine_id, agent, external_id, parent_external_id,
                    project_dir, title, model, git_branch, started_at, updated_at, message_count,
                    rev)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, nextval('memtrail_rev'))",
                &[
                    &uid,
                    &machine,
                    &summary.agent,
                    &summary.session_id,
                    &summary.parent_session_id,
                    &summary.project,
                    &summary.title,
                    &summary.model,
                    &summary.git_branch,
                    &time(&summary.started_at),
                    &time(&summary.updated_at),
                    &summary.messages,
                ],
            )
            .await
            .unwrap();
            for (seq, m) in s.messages.iter().enumerate() {
                let (body, tools) = render_index_text(m);
                let cjk = cjk_index_text(&body, &tools);
                c.execute(
                    "INSERT INTO messages (session_uid, machine_id, ext_id, seq, role, kind, ts,
                        model, body, tools, cjk, parts, rev)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
                             nextval('memtrail_rev'))",
                    &[
                        &uid,
                        &machine,
                        &m.id,
                        &(seq as i64),
                        &m.role.as_str(),
                        &m.kind.as_str(),
                        &m.timestamp,
                        &m.model,
                        &body,
                        &tools,
                        &cjk,
                        &serde_json::to_string(&m.parts).unwrap(),
                    ],
                )
                .await
                .unwrap();
            }
            let mut ordinal: std::collections::HashMap<&str, i32> = Default::default();
            for e in events {
                let n = ordinal.entry(e.message_id.as_str()).or_insert(0);
                *n += 1;
                c.execute(
                    "INSERT INTO events (session_uid, message_ext_id, ordinal, seq, category,
                        action, priority, subject, detail, call_id, tool, ts)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                    &[
                        &uid,
                        &e.message_id,
                        &*n,
                        &e.seq,
                        &e.event.category.as_str(),
                        &e.event.action,
                        &(e.event.priority as i64),
                        &e.event.subject,
                        &e.event.detail,
                        &e.event.call_id,
                        &e.event.tool,
                        &e.event.ts,
                    ],
                )
                .await
                .unwrap();
            }
        }
    });
}
