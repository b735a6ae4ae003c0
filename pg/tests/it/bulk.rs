//! A bulk push through the whole engine (`memtrail_pg::engine::sync`): 6,000 messages, more
//! than the bulk threshold, so the pipelined push runs beside the connection that merges the
//! full-text index's pending list. Everything arrives once, and the index (merged part and
//! pending list alike) finds every message; a token in a project folder's name is not sent.

use memtrail_adapters::{Agent, Role};
use memtrail_pg::engine::{Identity, SyncOptions, sync};
use memtrail_runtime::privacy::Privacy;

use crate::corpus::{session, text};

const TOKEN: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";

#[test]
fn a_bulk_push_writes_everything_once_and_the_index_finds_it() {
    let Some(url) = crate::corpus::fresh_database("bulk_push") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.db");
    let corpus: Vec<_> = (0..6)
        .map(|s| {
            let messages = (0..1000)
                .map(|i| {
                    let n = s * 1000 + i;
                    text(
                        &format!("m{n}"),
                        if i % 2 == 0 {
                            Role::User
                        } else {
                            Role::Assistant
                        },
                        1_700_000_000_000 + n as i64,
                        &format!("bulkword marker{n} parse_config({n})"),
                    )
                })
                .collect();
            // The last session's folder holds a token: it is pushed redacted.
            let project = if s == 5 {
                format!("/p/{TOKEN}")
            } else {
                "/p".into()
            };
            session(Agent::Claude, &format!("s{s}"), &project, "bulk", messages)
        })
        .collect();
    let mut store = crate::corpus::write_store(&db, &corpus);
    let me = Identity {
        machine: "0123456789abcdef0123456789abcdef".into(),
        label: "bulk".into(),
    };
    // Every message, and each session's snapshots entry.
    assert_eq!(store.sync_enable(&me.machine).unwrap(), 6006);
    let mut pg = memtrail_pg::Pg::connect_url(&url).unwrap();
    let mut steps = 0;
    let report = sync(
        &mut store,
        &mut pg,
        &me,
        &Privacy::default(),
        &SyncOptions {
            batch_messages: 500,
            ..SyncOptions::default()
        },
        &mut |_| steps += 1,
    )
    .unwrap();
    assert_eq!(report.pushed.messages, 6000);
    // 6,006 queued entries (the 6,000 messages and each session's snapshots entry), 500 a
    // batch.
    assert_eq!(report.pushed.batches, 13);
    assert_eq!(store.sync_pending().unwrap().messages, 0);
    let count = |sql: &str| -> i64 {
        pg.block_on(async {
            pg.client()
                .batch_execute("SET enable_seqscan = off")
                .await?;
            pg.client().query_one(sql, &[]).await
        })
        .unwrap()
        .get(0)
    };
    assert_eq!(count("SELECT count(*) FROM messages"), 6000);
    assert_eq!(
        count("SELECT count(DISTINCT ext_id) FROM messages WHERE tsv @@ 'bulkword'::tsquery"),
        6000
    );
    let folders: Vec<String> = pg
        .block_on(
            pg.client()
                .query("SELECT DISTINCT project_dir FROM sessions ORDER BY 1", &[]),
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(folders, ["/p", "/p/[redacted:github_token]"]);
    // One message by its own word, and a phrase of an identifier's parts.
    assert_eq!(
        count("SELECT count(*) FROM messages WHERE tsv @@ 'marker4321'::tsquery"),
        1
    );
    assert_eq!(
        count(
            "SELECT count(*) FROM messages WHERE tsv @@ '''pars'' <-> ''config'' <-> ''4321'''::tsquery"
        ),
        1
    );
    // A second sync has nothing to send.
    let again = sync(
        &mut store,
        &mut pg,
        &me,
        &Privacy::default(),
        &SyncOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(again.pushed.messages, 0);
    assert!(steps >= 13);
}
