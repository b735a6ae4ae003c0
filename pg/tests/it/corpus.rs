//! Shared by the PostgreSQL read tests: a database of its own per test in the cluster of
//! `MEMTRAIL_TEST_PG_URL`, and the same sessions written into an SQLite store and pushed from
//! it to PostgreSQL (docs/sync.md).

use memtrail_adapters::{Agent, Kind, Message, Part, Record, Role, SessionMeta, SessionRef};
use memtrail_runtime::records::Prepared;
use memtrail_runtime::{Store, StoreLocation};

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

/// Write `corpus` into the SQLite store at `db` (as ingest does), then push the store to the
/// PostgreSQL database at `pg` as machine `machine` (label `label`) with the real sync:
/// [`Store::push_batch`], [`memtrail_pg::Pg::push`], [`Store::ack_push`], until nothing waits.
pub fn write_both(db: &std::path::Path, pg: &str, machine: &str, label: &str, corpus: &[Session]) {
    let mut store = write_store(db, corpus);
    push_all(&mut store, pg, machine, label);
}

/// Write `corpus` into the SQLite store at `db` (as ingest does); the store, open.
pub fn write_store(db: &std::path::Path, corpus: &[Session]) -> Store {
    let mut store = Store::open(StoreLocation::from(db)).unwrap();
    for s in corpus {
        store
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
    }
    store
}

/// Push everything `store` holds for sync to `pg` as machine `machine` (label `label`),
/// enabling sync first.
pub fn push_all(store: &mut Store, pg: &str, machine: &str, label: &str) {
    store.sync_enable(machine).unwrap();
    let mut pg = memtrail_pg::Pg::connect_url(pg).unwrap();
    let privacy = memtrail_runtime::privacy::Privacy::default();
    loop {
        let batch = store.push_batch(machine, &privacy, 1000, 64 << 20).unwrap();
        if batch.is_empty() {
            break;
        }
        pg.push(machine, label, &batch).unwrap();
        store.ack_push(&batch, None).unwrap();
    }
}
