//! `list_sessions` pages and dates (what `memtrail browse` asks): `offset` skips the sessions
//! before a page, `since` / `until` keep the sessions last active in that window, both with
//! the usual order (most recently active first).

use memtrail_adapters::{Agent, SessionMeta, SessionRef};
use memtrail_runtime::query::{ListFilter, list_sessions};
use memtrail_runtime::records::Standard;
use memtrail_runtime::store::Store;

/// Five sessions `s1`..`s5`, session `si` last active at `i` × 1000 ms.
fn five() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("m.db")).unwrap();
    for i in 1..=5i64 {
        store
            .write(|w| {
                w.upsert_session(
                    &SessionRef {
                        agent: Agent::Claude,
                        external_id: format!("s{i}"),
                        parent_external_id: None,
                    },
                    &SessionMeta {
                        started_at: Some(i * 1000 - 500),
                        updated_at: Some(i * 1000),
                        ..SessionMeta::default()
                    },
                    &Standard,
                )
            })
            .unwrap();
    }
    (dir, store)
}

fn ids(store: &Store, f: ListFilter) -> Vec<String> {
    list_sessions(store, &f)
        .unwrap()
        .into_iter()
        .map(|s| s.session_id)
        .collect()
}

#[test]
fn pages_follow_each_other_without_gap_or_repeat() {
    let (_d, store) = five();
    let page = |offset| {
        ids(
            &store,
            ListFilter {
                offset,
                limit: 2,
                ..ListFilter::default()
            },
        )
    };
    assert_eq!(page(0), ["s5", "s4"]);
    assert_eq!(page(2), ["s3", "s2"]);
    assert_eq!(page(4), ["s1"]);
    assert!(page(5).is_empty());
}

#[test]
fn since_and_until_bound_the_last_activity() {
    let (_d, store) = five();
    assert_eq!(
        ids(
            &store,
            ListFilter {
                since: Some(3000),
                limit: 10,
                ..ListFilter::default()
            }
        ),
        ["s5", "s4", "s3"]
    );
    assert_eq!(
        ids(
            &store,
            ListFilter {
                since: Some(2001),
                until: Some(4000),
                limit: 10,
                ..ListFilter::default()
            }
        ),
        ["s4", "s3"]
    );
}
