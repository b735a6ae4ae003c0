//! The full-text index queue (schema 4): a write queues its messages in `fts_pending` instead of
//! indexing them; `Store::catch_up_index` (searches, imports, the MCP server, a hook with a long
//! queue) indexes them. Checked here: what is queued and indexed when, that a search finds what
//! was just written, that a change to an indexed message replaces its index entry (the old text
//! is no longer found), that deleting a queued or an indexed message leaves a consistent index
//! (FTS5's own integrity check), and that a v3 store migrates with its index intact.

use crate::support::{bash, text};
use memtrail_adapters::{Agent, Record, SessionMeta, SessionRef};
use memtrail_runtime::query::{self, SearchFilter};
use memtrail_runtime::records::Standard;
use memtrail_runtime::store::{INDEX_CHUNK, Store, TIDY_BUDGET, TIDY_USERMERGE};
use std::time::Duration;

pub(crate) fn open() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("m.db")).unwrap();
    (dir, store)
}

pub(crate) fn session(store: &mut Store, id: &str) -> i64 {
    store
        .write(|w| {
            w.upsert_session(
                &SessionRef {
                    agent: Agent::Claude,
                    external_id: id.to_string(),
                    parent_external_id: None,
                },
                &SessionMeta {
                    project_dir: Some("/w/app".to_string()),
                    ..SessionMeta::default()
                },
                &Standard,
            )
        })
        .unwrap()
}

fn hits(store: &Store, q: &str) -> Vec<String> {
    full_hits(store, q)
        .into_iter()
        .map(|h| h.message_id)
        .collect()
}

fn fts_ok(store: &Store) {
    crate::support::open_raw(store.path())
        .unwrap()
        .execute(
            "INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)",
            [],
        )
        .expect("FTS5 index consistent with its content");
}

fn indexed(store: &Store, term: &str) -> i64 {
    // The index alone (no catch-up): how many rows hold `term`.
    crate::support::open_raw(store.path())
        .unwrap()
        .query_row(
            "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?1",
            [term],
            |r| r.get(0),
        )
        .unwrap()
}

#[test]
fn writes_are_queued_and_a_search_indexes_them_first() {
    let (_d, mut store) = open();
    let s = session(&mut store, "s1");
    store
        .write(|w| {
            w.apply(
                s,
                vec![
                    text("u1", "the flamingo migration"),
                    bash("a1", "c1", "cargo build"),
                ],
            )
        })
        .unwrap();
    assert_eq!(store.pending_index().unwrap(), 2);
    assert_eq!(indexed(&store, "flamingo"), 0, "not indexed by the write");
    // The search catches up first, so it finds what was just written.
    assert_eq!(hits(&store, "flamingo"), vec!["u1"]);
    assert_eq!(store.pending_index().unwrap(), 0);
    assert_eq!(indexed(&store, "flamingo"), 1);
    fts_ok(&store);
}

#[test]
fn a_change_to_an_indexed_message_replaces_its_entry() {
    let (_d, mut store) = open();
    let s = session(&mut store, "s1");
    store
        .write(|w| w.apply(s, vec![bash("a1", "c1", "cargo build")]))
        .unwrap();
    assert_eq!(store.catch_up_index(None).unwrap(), 1);
    // A late tool result (another hook process): the message changes, is queued again, and
    // its old entry leaves the index in the same transaction.
    store
        .write(|w| {
            w.apply(
                s,
                vec![Record::ToolResult {
                    call_id: "c1".into(),
                    output: "error[E0308]: mismatched zeppelin".into(),
                    is_error: true,
                    timestamp: None,
                    exit_code: None,
                }],
            )
        })
        .unwrap();
    assert_eq!(store.pending_index().unwrap(), 1);
    assert_eq!(indexed(&store, "cargo"), 0, "old entry deleted");
    // (FTS5's integrity check counts a queued message as missing: checked after the search.)
    assert_eq!(hits(&store, "zeppelin"), vec!["a1"]);
    assert_eq!(hits(&store, "cargo build"), vec!["a1"]);
    fts_ok(&store);
}

#[test]
fn deleting_queued_and_indexed_messages_keeps_the_index_consistent() {
    let (_d, mut store) = open();
    let s = session(&mut store, "s1");
    store
        .write(|w| {
            w.apply(
                s,
                vec![text("u1", "indexed walrus"), text("u2", "second walrus")],
            )
        })
        .unwrap();
    store.catch_up_index(None).unwrap();
    store
        .write(|w| w.apply(s, vec![text("u3", "queued walrus")]))
        .unwrap();
    assert_eq!(store.pending_index().unwrap(), 1);
    // A rewind to u2 deletes u2 (indexed) and u3 (queued).
    store
        .write(|w| {
            w.apply(
                s,
                vec![Record::Rewind {
                    message_id: "u2".into(),
                }],
            )
        })
        .unwrap();
    assert_eq!(store.pending_index().unwrap(), 0, "u3 left the queue");
    fts_ok(&store);
    assert_eq!(hits(&store, "walrus"), vec!["u1"]);
}

#[test]
fn catch_up_works_in_chunks_and_stops_at_its_deadline() {
    let (_d, mut store) = open();
    let s = session(&mut store, "s1");
    let n = INDEX_CHUNK + 500;
    let recs: Vec<Record> = (0..n)
        .map(|i| text(&format!("u{i}"), &format!("narwhal number{i}")))
        .collect();
    store.write(|w| w.apply(s, recs)).unwrap();
    assert_eq!(store.pending_index().unwrap(), n as i64);
    // A deadline already past: nothing is done.
    let past = std::time::Instant::now();
    assert_eq!(store.catch_up_index(Some(past)).unwrap(), 0);
    assert_eq!(store.catch_up_index(None).unwrap(), n as u64);
    assert_eq!(indexed(&store, "narwhal"), n as i64);
    assert_eq!(hits(&store, "number2100"), vec!["u2100"]);
    fts_ok(&store);
}

/// A hook's share of the chore: one transaction of at most `max` messages, the oldest
/// queued first, none once the deadline has passed.
#[test]
fn catch_up_at_most_indexes_the_oldest_share_of_the_queue() {
    let (_d, mut store) = open();
    let s = session(&mut store, "s1");
    let recs: Vec<Record> = (0..600)
        .map(|i| text(&format!("u{i}"), &format!("narwhal number{i}")))
        .collect();
    store.write(|w| w.apply(s, recs)).unwrap();
    let soon = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let past = std::time::Instant::now();
    assert_eq!(store.catch_up_index_at_most(past, 250).unwrap(), 0);
    assert_eq!(store.catch_up_index_at_most(soon, 250).unwrap(), 250);
    assert_eq!(store.pending_index().unwrap(), 350);
    assert_eq!(indexed(&store, "narwhal"), 250);
    assert_eq!(indexed(&store, "number249"), 1);
    assert_eq!(indexed(&store, "number250"), 0);
    assert_eq!(store.catch_up_index_at_most(soon, 1000).unwrap(), 350);
    assert_eq!(store.pending_index().unwrap(), 0);
    fts_ok(&store);
}

/// A background catch-up (an import's, a server's) commits after the slice at hand when a hook
/// comes to wait for the write lock (it holds the store's gate shared), so the hook waits for
/// one slice, not a whole chunk (here the chunk is the whole queue: without the early commit
/// the first transaction would index all of it).
/// A hook's hold on the write gate of the store `m.db` in `dir` (shared `flock`), as
/// `Store::pass_gate` takes it with a deadline; released with `LOCK_UN` or when dropped.
#[cfg(unix)]
fn hold_gate(dir: &std::path::Path) -> std::fs::File {
    use std::os::fd::AsRawFd;
    let gate = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join("m.db-gate"))
        .unwrap();
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(unsafe { libc::flock(gate.as_raw_fd(), libc::LOCK_SH) }, 0);
    gate
}

#[cfg(unix)]
#[test]
fn a_background_catch_up_commits_after_one_slice_when_a_hook_waits() {
    use memtrail_runtime::store::INDEX_SLICE;
    use std::os::fd::AsRawFd;
    let (dir, mut store) = open();
    let s = session(&mut store, "s1");
    let recs: Vec<Record> = (0..200)
        .map(|i| text(&format!("u{i}"), &format!("walrus number{i}")))
        .collect();
    store.write(|w| w.apply(s, recs)).unwrap();
    let db = dir.path().join("m.db");
    // A hook's hold on the gate, as `Store::pass_gate` takes it with a deadline.
    let gate = hold_gate(dir.path());
    let path = db.clone();
    let background = std::thread::spawn(move || {
        let s = Store::open(&path).unwrap();
        s.catch_up_index_by(None, 200).unwrap()
    });
    // The first transaction (after the writer's wait for the gate, at most gate::YIELD_MAX)
    // ends after one slice; then the hook is done.
    let reader = Store::open(&db).unwrap();
    let t = std::time::Instant::now();
    while reader.pending_index().unwrap() > 200 - INDEX_SLICE as i64
        && t.elapsed() < std::time::Duration::from_secs(30)
    {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert_eq!(
        reader.pending_index().unwrap(),
        200 - INDEX_SLICE as i64,
        "the first transaction indexed one slice"
    );
    // SAFETY: as above.
    unsafe { libc::flock(gate.as_raw_fd(), libc::LOCK_UN) };
    assert_eq!(background.join().unwrap(), 200);
    assert_eq!(indexed(&store, "walrus"), 200);
    fts_ok(&store);
}

#[test]
fn a_v3_store_migrates_with_its_index_and_queues_from_then_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    {
        let mut store = Store::open(&path).unwrap();
        let s = session(&mut store, "s1");
        store
            .write(|w| w.apply(s, vec![text("u1", "old platypus")]))
            .unwrap();
        store.catch_up_index(None).unwrap();
    }
    // Make it a v3 store: the schema 3 triggers (index inside the write), no queue.
    {
        let c = crate::support::open_raw(&path).unwrap();
        c.execute_batch(
            "ALTER TABLE messages RENAME COLUMN tools_text TO tools;
             ALTER TABLE messages RENAME COLUMN parts_zdict TO parts;
             DROP TRIGGER messages_session_last_ai; DROP TRIGGER messages_session_last_au;
             ALTER TABLE sessions DROP COLUMN last_message_id;
             DROP TRIGGER events_snapshot_state_ad; DROP TRIGGER events_snapshot_state_au;
                 DROP TRIGGER events_snapshot_state_ai;
             DROP TABLE snapshot_states;
             DROP TABLE fts_pending;
             DROP TRIGGER messages_ai; DROP TRIGGER messages_ad; DROP TRIGGER messages_au;
             CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
                 INSERT INTO messages_fts (rowid, body, tools, cjk)
                     VALUES (new.id, new.body, new.tools, new.cjk);
             END;
             CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
                 INSERT INTO messages_fts (messages_fts, rowid, body, tools, cjk)
                     VALUES ('delete', old.id, old.body, old.tools, old.cjk);
             END;
             CREATE TRIGGER messages_au AFTER UPDATE OF body, tools, cjk ON messages BEGIN
                 INSERT INTO messages_fts (messages_fts, rowid, body, tools, cjk)
                     VALUES ('delete', old.id, old.body, old.tools, old.cjk);
                 INSERT INTO messages_fts (rowid, body, tools, cjk)
                     VALUES (new.id, new.body, new.tools, new.cjk);
             END;
             PRAGMA user_version = 3;",
        )
        .unwrap();
    }
    let mut store = Store::open(&path).unwrap();
    assert_eq!(
        store.stats().unwrap().schema_version,
        memtrail_runtime::store::SCHEMA_VERSION
    );
    // Schema 5: FTS5 removes deleted terms from the segments at once.
    let secure: i64 = crate::support::open_raw(&path)
        .unwrap()
        .query_row(
            "SELECT v FROM messages_fts_config WHERE k = 'secure-delete'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(secure, 1);
    assert_eq!(store.pending_index().unwrap(), 0);
    assert_eq!(indexed(&store, "platypus"), 1);
    let s = session(&mut store, "s1");
    store
        .write(|w| w.apply(s, vec![text("u2", "new platypus")]))
        .unwrap();
    assert_eq!(store.pending_index().unwrap(), 1);
    assert_eq!(hits(&store, "platypus").len(), 2);
    fts_ok(&store);
}

/// A long-running process (the MCP server and its indexer) asks `is_current` before using its
/// connection: false once the store file was deleted (`uninstall --purge`) or replaced, so
/// that it reopens instead of answering from, and indexing into, a deleted file.
#[test]
fn is_current_is_false_once_the_store_file_is_deleted_or_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let old = Store::open(&db).unwrap();
    assert!(old.is_current());
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    assert!(!old.is_current(), "deleted");
    let new = Store::open(&db).unwrap();
    assert!(new.is_current());
    assert!(!old.is_current(), "replaced by another file");
}

/// A store a newer memtrail upgraded while a long-running one had it open (an agent's MCP
/// server started before the upgrade) is no longer current to it, and opening it again says
/// the store is newer, naming the restart: it does not go on reading and writing rows in a
/// form it does not know.
#[test]
fn is_current_is_false_once_a_newer_memtrail_upgraded_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let old = Store::open(&db).unwrap();
    assert!(old.is_current());
    let newer = memtrail_runtime::store::SCHEMA_VERSION + 1;
    rusqlite::Connection::open(&db)
        .unwrap()
        .pragma_update(None, "user_version", newer)
        .unwrap();
    assert!(!old.is_current(), "upgraded past this build");
    let e = Store::open(&db).err().expect("refused").to_string();
    assert!(
        e.contains(&format!("has schema version {newer}")) && e.contains("started again"),
        "{e}"
    );
}

/// An `OR` query ranks the newest matches of each of its alternatives: `rare OR common` finds the
/// one old message holding the rare word even when more than `SEARCH_CANDIDATES` newer messages
/// hold the common one; and among equal scores the newest message comes first, with or without
/// a filter.
#[test]
fn or_queries_rank_each_alternatives_matches_and_ties_go_to_the_newest() {
    let (_d, mut store) = open();
    let s = session(&mut store, "s1");
    let n = memtrail_runtime::query::SEARCH_CANDIDATES + 500;
    let recs: Vec<Record> = (0..n)
        .map(|i| {
            let extra = if i == 5 { " quokka" } else { "" };
            text(&format!("u{i}"), &format!("refactor step{extra}"))
        })
        .collect();
    store.write(|w| w.apply(s, recs)).unwrap();
    let first = |q: &str, agent: Option<&str>| -> Vec<String> {
        query::search(
            &store,
            q,
            &SearchFilter {
                limit: 3,
                agent: agent.map(str::to_string),
                ..SearchFilter::default()
            },
        )
        .unwrap()
        .into_iter()
        .map(|h| h.message_id)
        .collect()
    };
    assert_eq!(first("quokka OR refactor", None)[0], "u5");
    assert_eq!(first("quokka OR refactor", Some("claude"))[0], "u5");
    // Every message scores the same for `refactor`: the newest first, filtered or not.
    let newest: Vec<String> = (n - 3..n).rev().map(|i| format!("u{i}")).collect();
    assert_eq!(first("refactor", None), newest);
    assert_eq!(first("refactor", Some("claude")), newest);
}

/// With a filter the bound still holds over the matches that pass it: only the newest
/// `SEARCH_CANDIDATES` of them are ranked. A message that BM25 would rank first (the word three
/// times) but that is older than `SEARCH_CANDIDATES` newer matches of the filter is not found by
/// a plain query, filtered or not; with fewer newer matches in the filter's session it is.
#[test]
fn a_filtered_query_ranks_the_newest_matches_that_pass_the_filter() {
    let (_d, mut store) = open();
    let s1 = session(&mut store, "s1");
    let n = memtrail_runtime::query::SEARCH_CANDIDATES + 10;
    let mut recs: Vec<Record> = vec![text("best", "wallaby wallaby wallaby")];
    recs.extend((0..n).map(|i| text(&format!("u{i}"), &format!("wallaby step {i}"))));
    store.write(|w| w.apply(s1, recs)).unwrap();
    // A second session, newer, with a few matches of its own and a best one, oldest in it.
    let s2 = session(&mut store, "s2");
    let mut recs: Vec<Record> = vec![text("best2", "wallaby wallaby wallaby")];
    recs.extend((0..5).map(|i| text(&format!("v{i}"), &format!("wallaby walk {i}"))));
    store.write(|w| w.apply(s2, recs)).unwrap();
    let top = |f: SearchFilter| -> String {
        query::search(&store, "wallaby", &SearchFilter { limit: 1, ..f }).unwrap()[0]
            .message_id
            .clone()
    };
    // s1's best is behind more than SEARCH_CANDIDATES newer matches: not ranked, with the
    // agent filter (which every session passes) as without.
    assert_eq!(top(SearchFilter::default()), "best2");
    assert_eq!(
        top(SearchFilter {
            agent: Some("claude".into()),
            ..SearchFilter::default()
        }),
        "best2"
    );
    // In s1 alone its best is still behind SEARCH_CANDIDATES newer matches; in s2 it is ranked.
    assert_ne!(
        top(SearchFilter {
            session: Some("s1".into()),
            ..SearchFilter::default()
        }),
        "best"
    );
    assert_eq!(
        top(SearchFilter {
            session: Some("s2".into()),
            ..SearchFilter::default()
        }),
        "best2"
    );
}

/// A session `id` of Claude Code in `project`.
fn session_in(store: &mut Store, id: &str, project: &str) -> i64 {
    store
        .write(|w| {
            w.upsert_session(
                &SessionRef {
                    agent: Agent::Claude,
                    external_id: id.to_string(),
                    parent_external_id: None,
                },
                &SessionMeta {
                    project_dir: Some(project.to_string()),
                    ..SessionMeta::default()
                },
                &Standard,
            )
        })
        .unwrap()
}

/// A project or session filter that admits a small share of the store is checked against the
/// admitted sessions' messages (a bitmap of their rowids) instead of joining each match: the
/// hits are exactly those sessions' matches, interleaved with other sessions' rows or not,
/// message-level filters apply on top, and a filter no session passes finds nothing.
#[test]
fn a_session_filter_finds_exactly_the_admitted_sessions_matches() {
    let (_d, mut store) = open();
    // `big` (/w/other) holds 40 of the 52 messages: /w/small's 12 are under half the store.
    let big = session_in(&mut store, "big", "/w/other");
    let a = session_in(&mut store, "a", "/w/small");
    let b = session_in(&mut store, "b", "/w/small/sub");
    for i in 0..4 {
        let filler: Vec<Record> = (0..10)
            .map(|j| text(&format!("big{i}-{j}"), "koala filler"))
            .collect();
        store.write(|w| w.apply(big, filler)).unwrap();
        let recs = vec![
            text(&format!("a{i}"), &format!("koala note {i}")),
            bash(&format!("a{i}x"), &format!("call{i}"), "koala --build"),
        ];
        store.write(|w| w.apply(a, recs)).unwrap();
        store
            .write(|w| w.apply(b, vec![text(&format!("b{i}"), "wombat only")]))
            .unwrap();
    }
    let found = |q: &str, f: SearchFilter| -> Vec<String> {
        let mut ids: Vec<String> = query::search(&store, q, &SearchFilter { limit: 100, ..f })
            .unwrap()
            .into_iter()
            .map(|h| h.message_id)
            .collect();
        ids.sort();
        ids
    };
    let project = |p: &str| SearchFilter {
        project: Some(p.into()),
        ..SearchFilter::default()
    };
    assert_eq!(
        found("koala", project("/w/small")),
        ["a0", "a0x", "a1", "a1x", "a2", "a2x", "a3", "a3x"]
    );
    assert_eq!(
        found("wombat", project("/w/small")),
        ["b0", "b1", "b2", "b3"]
    );
    assert_eq!(
        found("koala", project("/w/small/sub")),
        Vec::<String>::new()
    );
    assert_eq!(found("koala", project("/w/nowhere")), Vec::<String>::new());
    assert_eq!(
        found(
            "koala",
            SearchFilter {
                role: Some("assistant".into()),
                ..project("/w/small")
            }
        ),
        ["a0x", "a1x", "a2x", "a3x"]
    );
    assert_eq!(
        found(
            "koala",
            SearchFilter {
                session: Some("a".into()),
                role: Some("user".into()),
                ..SearchFilter::default()
            }
        ),
        ["a0", "a1", "a2", "a3"]
    );
    // The big session is over half the store: its filter joins each match, same answer form.
    let bigs = found("koala", project("/w/other"));
    assert_eq!(bigs.len(), 40);
    assert!(bigs.iter().all(|id| id.starts_with("big")));
}

/// A reader keeps its last filtered search's scope while the store is unchanged, and makes it
/// again after a write by another connection (a hook) or by itself: the new message of an
/// admitted session is found, the filter's other sessions still are not.
#[test]
fn a_kept_session_scope_follows_every_write() {
    let (_d, mut writer) = open();
    let big = session_in(&mut writer, "big", "/w/other");
    let a = session_in(&mut writer, "a", "/w/small");
    let filler: Vec<Record> = (0..20)
        .map(|j| text(&format!("big-{j}"), "koala filler"))
        .collect();
    writer.write(|w| w.apply(big, filler)).unwrap();
    writer
        .write(|w| w.apply(a, vec![text("a0", "koala note")]))
        .unwrap();
    let mut reader = Store::open(writer.path()).unwrap();
    let found = |store: &Store, project: &str| -> Vec<String> {
        let f = SearchFilter {
            project: Some(project.into()),
            limit: 100,
            ..SearchFilter::default()
        };
        let mut ids: Vec<String> = query::search(store, "koala", &f)
            .unwrap()
            .into_iter()
            .map(|h| h.message_id)
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(found(&reader, "/w/small"), ["a0"]);
    assert_eq!(found(&reader, "/w/small"), ["a0"], "kept, same answer");
    // Another connection writes to the admitted session, and to the other one.
    writer
        .write(|w| w.apply(a, vec![text("a1", "koala again")]))
        .unwrap();
    writer
        .write(|w| w.apply(big, vec![text("big-x", "koala late")]))
        .unwrap();
    assert_eq!(found(&reader, "/w/small"), ["a0", "a1"]);
    // The reader itself writes.
    reader
        .write(|w| w.apply(a, vec![text("a2", "koala third")]))
        .unwrap();
    assert_eq!(found(&reader, "/w/small"), ["a0", "a1", "a2"]);
    // Another filter is its own scope.
    assert_eq!(found(&reader, "/w/nowhere"), Vec::<String>::new());
    assert_eq!(found(&reader, "/w/small"), ["a0", "a1", "a2"]);
}

/// `optimize_index` (run at the end of a large import) leaves one FTS5 segment and the same
/// results.
#[test]
fn optimize_merges_the_segments_and_keeps_the_results() {
    let (_d, mut store) = open();
    let s = session(&mut store, "s1");
    for batch in 0..4 {
        let recs: Vec<Record> = (0..50)
            .map(|i| {
                text(
                    &format!("u{batch}-{i}"),
                    &format!("wombat batch{batch} item{i}"),
                )
            })
            .collect();
        store.write(|w| w.apply(s, recs)).unwrap();
        store.catch_up_index(None).unwrap();
    }
    assert_eq!(segments(&store), 4, "one segment per catch-up");
    let before = hits(&store, "batch2 item7");
    store.optimize_index().unwrap();
    assert_eq!(segments(&store), 1);
    assert_eq!(hits(&store, "batch2 item7"), before);
    assert_eq!(before, vec!["u2-7"]);
    assert_eq!(indexed(&store, "wombat"), 200);
    fts_ok(&store);
}

fn segments(store: &Store) -> i64 {
    crate::support::open_raw(store.path())
        .unwrap()
        .query_row(
            "SELECT COUNT(DISTINCT segid) FROM messages_fts_idx",
            [],
            |r| r.get(0),
        )
        .unwrap()
}

fn full_hits(store: &Store, q: &str) -> Vec<query::Hit> {
    query::search(
        store,
        q,
        &SearchFilter {
            limit: 50,
            ..SearchFilter::default()
        },
    )
    .unwrap()
}

/// Session `s1` with 3,000 messages indexed and merged into one segment, as a large import
/// leaves the index; returns the session's row id.
fn with_large_segment(store: &mut Store) -> i64 {
    let s = session(store, "s1");
    let recs: Vec<Record> = (0..3000)
        .map(|i| {
            let words: Vec<String> = (0..24).map(|k| format!("w{i}y{k}")).collect();
            text(
                &format!("old-{i}"),
                &format!(
                    "wombat errand{} item{i} erratic {} {}",
                    i % 97,
                    "filler ".repeat(i % 13),
                    words.join(" ")
                ),
            )
        })
        .collect();
    store.write(|w| w.apply(s, recs)).unwrap();
    store.catch_up_index(None).unwrap();
    store.optimize_index().unwrap();
    assert_eq!(segments(store), 1);
    s
}

/// A store with one segment from 3,000 messages (optimized) and 60 small catch-ups after it, of
/// 40 messages each: 16 segments, as hooks and searches leave them.
fn store_with_small_segments() -> (tempfile::TempDir, Store) {
    let (d, mut store) = open();
    // One large segment (an import's, optimized), then 60 small catch-ups (the hooks' turns).
    let s = with_large_segment(&mut store);
    for batch in 0..60 {
        let recs: Vec<Record> = (0..40)
            .map(|i| {
                let n = batch * 40 + i;
                let words: Vec<String> = (0..12).map(|k| format!("e{}x{k}", n * 7)).collect();
                text(
                    &format!("u{batch}-{i}"),
                    &format!(
                        "wombat errors batch{batch} item{i} err{n} {}",
                        words.join(" ")
                    ),
                )
            })
            .collect();
        store.write(|w| w.apply(s, recs)).unwrap();
        store.catch_up_index(None).unwrap();
    }
    (d, store)
}

/// `tidy_index` (after a search's catch-up, and in the servers' indexer) merges the segments
/// that many small catch-ups leave, in bounded steps, without the whole-index rewrite of
/// `optimize_index`, and every search gives the same hits, scores and snippets after it.
#[test]
fn tidy_merges_the_small_segments_in_bounded_steps_and_keeps_the_results() {
    let (_d, store) = store_with_small_segments();
    let before_count = segments(&store);
    let before_levels = store.index_structure().unwrap().unwrap();
    let queries = [
        "wombat",
        "err*",
        "e*",
        "batch7 item3",
        "wombat -errors",
        "item1 OR errand5",
    ];
    // Searched on a store with a deadline (a hook's kind), whose searches do not tidy.
    let untidied = Store::open_until(
        store.path(),
        std::time::Instant::now() + Duration::from_secs(3600),
    )
    .unwrap();
    let before: Vec<Vec<query::Hit>> = queries.iter().map(|q| full_hits(&untidied, q)).collect();
    assert!(before.iter().all(|h| !h.is_empty()));
    assert_eq!(store.index_structure().unwrap().unwrap(), before_levels);
    // One statement at a time (no time budget): each call says whether more is left.
    let mut calls = 0;
    while !store.tidy_index(Duration::ZERO).unwrap() {
        calls += 1;
        assert!(calls < 100, "a tidy-up that never ends");
    }
    let after_count = segments(&store);
    let after_levels = store.index_structure().unwrap().unwrap();
    // The record's segments are FTS5's (its `_idx` rows name the same number).
    assert_eq!(before_levels.segments() as i64, before_count);
    assert_eq!(after_levels.segments() as i64, after_count);
    assert!(before_count >= 8, "{before_count}");
    assert!(
        after_count < before_count - 4,
        "{before_count} -> {after_count}"
    );
    assert!(calls >= 2, "each call stops once past its budget: {calls}");
    // What FTS5 would merge next is the large segment's level, or nothing; the large segment
    // is where it was, untouched.
    let large = before_levels.largest_level().unwrap();
    assert_ne!(before_levels.merge_pick(2), Some(large));
    assert!(after_levels.merge_pick(2).is_none_or(|l| l == large));
    assert_eq!(after_levels.largest_level(), Some(large));
    assert!(
        after_levels.levels[large]
            .pages
            .contains(before_levels.levels[large].pages.iter().max().unwrap())
    );
    let usermerge: i64 = crate::support::open_raw(store.path())
        .unwrap()
        .query_row(
            "SELECT v FROM messages_fts_config WHERE k = 'usermerge'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(usermerge, TIDY_USERMERGE);
    // Nothing left: a second tidy-up changes nothing.
    assert!(store.tidy_index(TIDY_BUDGET).unwrap());
    assert_eq!(segments(&store), after_count);
    // The same hits and snippets; the scores within rounding (FTS5's counts are summed per
    // segment).
    let key = |h: &query::Hit| (h.message_id.clone(), h.snippet.clone());
    for (q, b) in queries.iter().zip(&before) {
        let a = full_hits(&store, q);
        assert_eq!(
            a.iter().map(key).collect::<Vec<_>>(),
            b.iter().map(key).collect::<Vec<_>>(),
            "{q}"
        );
        for (x, y) in a.iter().zip(b) {
            assert!(
                (x.score - y.score).abs() <= 1e-9 * y.score.abs(),
                "{q}: {} {}",
                x.score,
                y.score
            );
        }
    }
    assert_eq!(indexed(&store, "wombat"), 5400);
    fts_ok(&store);
}

/// A search's catch-up tidies the segments it writes (`catch_up_for_search`), round after round,
/// and never rewrites the large segment an import left: the small ones stay few, below it.
#[test]
fn searches_keep_the_segments_few_without_rewriting_the_large_one() {
    let (_d, mut store) = open();
    let s = with_large_segment(&mut store);
    let first = store.index_structure().unwrap().unwrap();
    let large = first.largest_level().unwrap();
    let large_pages = first.levels[large].pages[0];
    let mut most = 0;
    for round in 0..600 {
        let recs: Vec<Record> = (0..5)
            .map(|i| {
                text(
                    &format!("r{round}-{i}"),
                    &format!("wombat r{round}x{i} turn"),
                )
            })
            .collect();
        store.write(|w| w.apply(s, recs)).unwrap();
        // A search: the catch-up, then the tidy-up.
        assert_eq!(store.catch_up_for_search().unwrap(), 5);
        let st = store.index_structure().unwrap().unwrap();
        most = most.max(st.segments());
        assert_eq!(st.largest_level(), Some(large), "round {round}: {st:?}");
        assert!(
            st.levels[large].pages.contains(&large_pages),
            "round {round}: {st:?}"
        );
    }
    // 5 here; 19 without the tidy-ups (15 of one page at level 0).
    assert!(most <= 6, "{most}");
    assert_eq!(indexed(&store, "wombat"), 6000);
    fts_ok(&store);
}

/// A tidy-up that stopped at its budget is taken up by the next searches even when they have
/// nothing to index; while another connection holds the write lock, such a search neither
/// waits for it nor fails.
#[test]
fn searches_with_nothing_to_index_finish_an_unfinished_tidy_up() {
    let (_d, store) = store_with_small_segments();
    assert_eq!(store.pending_index().unwrap(), 0);
    // One statement: the tidy-up stops with more left.
    assert!(!store.tidy_index(Duration::ZERO).unwrap());
    let before = store.index_structure().unwrap().unwrap();
    assert!(before.tidy_would_merge());
    let raw = crate::support::open_raw(store.path()).unwrap();
    raw.execute_batch("BEGIN IMMEDIATE").unwrap();
    let t0 = std::time::Instant::now();
    assert_eq!(store.catch_up_for_search().unwrap(), 0);
    // Not the wait for the lock a catch-up with something to index makes.
    assert!(t0.elapsed() < memtrail_runtime::store::SEARCH_INDEX_WAIT / 2);
    assert_eq!(store.index_structure().unwrap().unwrap(), before);
    raw.execute_batch("ROLLBACK").unwrap();
    let mut searches = 0;
    while store.index_structure().unwrap().unwrap().tidy_would_merge() {
        assert_eq!(store.catch_up_for_search().unwrap(), 0);
        searches += 1;
        assert!(searches < 100, "a tidy-up that never ends");
    }
    assert!(searches >= 1);
    let after = store.index_structure().unwrap().unwrap();
    assert!(
        after.segments() < before.segments(),
        "{before:?} -> {after:?}"
    );
    // Nothing left: a search changes nothing.
    assert_eq!(store.catch_up_for_search().unwrap(), 0);
    assert_eq!(store.index_structure().unwrap().unwrap(), after);
    assert_eq!(indexed(&store, "wombat"), 5400);
    fts_ok(&store);
}

/// A tidy-up is an optimisation: while a hook holds the write gate it does not wait for it
/// (a search would pay that wait), it says that more is left and merges nothing.
#[cfg(unix)]
#[test]
fn a_tidy_up_leaves_the_merge_to_later_when_a_hook_holds_the_gate() {
    use std::os::fd::AsRawFd;
    let (dir, store) = store_with_small_segments();
    let before = segments(&store);
    let gate = hold_gate(dir.path());
    // After the writer's wait for the gate (at most gate::YIELD_MAX), one slice, then commit.
    let structure = store.index_structure().unwrap();
    assert!(!store.tidy_index(Duration::from_secs(60)).unwrap());
    // Nothing merged: it did not wait for the hook and go on.
    assert_eq!(store.index_structure().unwrap(), structure);
    // SAFETY: as above.
    unsafe { libc::flock(gate.as_raw_fd(), libc::LOCK_UN) };
    assert!(store.tidy_index(Duration::from_secs(60)).unwrap());
    assert!(segments(&store) < before);
    fts_ok(&store);
}

#[test]
fn snippets_are_fts5_snippets_whether_the_hits_are_close_together_or_spread() {
    // 1,200 messages holding `alpha beta` (the newest 20 are the hits: close together, read in
    // one pass), and `gamma` in every 100th (spread over the store: looked up one by one; as a
    // prefix, `gamm*`, read in one pass however spread, also beside `OR`).
    let (_d, mut store) = open();
    let sid = session(&mut store, "s");
    let recs: Vec<Record> = (0..1200)
        .map(|i| {
            let mut t = format!("note {i}: alpha beta, then padding{i} words follow here");
            if i % 100 == 7 {
                t.push_str(&format!(" and gamma marks row {i} among filler"));
            }
            text(&format!("m{i}"), &t)
        })
        .collect();
    store.write(|w| w.apply(sid, recs)).unwrap();
    for (q, n) in [
        ("alpha beta", 20),
        ("gamma", 12),
        ("gamm*", 12),
        ("alph* gamma", 12),
        // `OR` with a prefix term: one pass too (each lookup would merge the prefix again).
        ("gamm* OR absentword", 12),
        ("gamma OR alph*", 20),
    ] {
        let found = query::search(
            &store,
            q,
            &SearchFilter {
                limit: 20,
                ..SearchFilter::default()
            },
        )
        .unwrap();
        assert_eq!(found.len(), n, "{q}");
        let fts_q = query::fts_query(q).unwrap();
        for h in &found {
            let want: String = crate::support::open_raw(store.path())
                .unwrap()
                .query_row(
                    "SELECT snippet(messages_fts, -1, char(1), char(2), '…', 16) FROM messages_fts
                     WHERE messages_fts MATCH ?1
                       AND rowid = (SELECT id FROM messages WHERE ext_id = ?2)",
                    [&fts_q, &h.message_id],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(h.snippet, want, "{q}: {}", h.message_id);
            assert!(h.snippet.contains('\u{1}'), "{q}: a hit is marked");
        }
    }
}
