//! `Store::make_stoppable` and `Stop`: a long-lived reader stopped from another thread (the web
//! page stops the reader of a request the browser abandoned).

use memtrail_adapters::Agent;
use memtrail_runtime::query::SearchFilter;
use memtrail_runtime::{Error, Store, StoreLocation};
use std::io::Write;

/// A store holding one Claude Code session of `n` prompts, each with the word `alpha`.
fn store_of_prompts(dir: &std::path::Path, n: usize) -> Store {
    let session = "5a1e0c2d-stop-4b6a-9f11-000000000001";
    let t = dir.join(format!("{session}.jsonl"));
    let mut f = std::fs::File::create(&t).unwrap();
    for i in 0..n {
        writeln!(
            f,
            "{}",
            serde_json::json!({
                "parentUuid": null, "isSidechain": false, "userType": "external",
                "cwd": "/home/user/demo", "sessionId": session, "version": "2.1.49",
                "type": "user", "message": {"role": "user", "content": format!("alpha prompt {i}")},
                "uuid": format!("00000000-0000-4000-8000-{i:012}"),
                "timestamp": "2026-03-03T10:00:00.000Z"
            })
        )
        .unwrap();
    }
    drop(f);
    let mut store = Store::open(StoreLocation::Sqlite(dir.join("s.db"))).unwrap();
    memtrail_runtime::ingest::ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    store
}

fn alpha(store: &Store) -> memtrail_runtime::Result<usize> {
    let f = SearchFilter {
        limit: 20,
        ..Default::default()
    };
    memtrail_runtime::query::search(store, "alpha", &f).map(|h| h.len())
}

fn interrupted(r: &memtrail_runtime::Result<usize>) -> bool {
    matches!(r, Err(Error::Store(e)) if e.is_interrupted())
}

#[test]
fn a_stopped_store_fails_every_later_search() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_of_prompts(dir.path(), 3000);
    assert_eq!(alpha(&store).unwrap(), 20);
    // An interrupt with nothing running is forgotten when the next statement starts, so it
    // cannot stop a call between two of its statements: the search runs whole.
    store.interrupt_handle().interrupt();
    assert_eq!(alpha(&store).unwrap(), 20);
    let stop = store.make_stoppable().unwrap();
    assert!(!stop.is_stopped());
    assert_eq!(alpha(&store).unwrap(), 20, "stoppable, not stopped");
    stop.stop();
    assert!(stop.is_stopped());
    // The walk of the newest 1,024 matches runs thousands of steps: each later search fails.
    for _ in 0..3 {
        let r = alpha(&store);
        assert!(interrupted(&r), "a stopped store searched: {r:?}");
    }
    // A second call of `make_stoppable` hands back the same, stopped, handle.
    assert!(store.make_stoppable().unwrap().is_stopped());
    assert!(store.stopper().unwrap().is_stopped());
}

#[test]
fn a_store_stopped_from_another_thread_fails_the_search_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_of_prompts(dir.path(), 3000);
    let stop = store.make_stoppable().unwrap();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let stopper = std::thread::spawn(move || {
        started_rx.recv().unwrap();
        stop.stop();
    });
    // Searches until one fails: the stop comes while one runs or between two; either way the
    // next long statement fails.
    let mut runs = 0;
    let outcome = loop {
        let r = alpha(&store);
        runs += 1;
        if runs == 1 {
            started_tx.send(()).unwrap();
        }
        if r.is_err() || runs > 10_000 {
            break r;
        }
    };
    stopper.join().unwrap();
    assert!(interrupted(&outcome), "after {runs} searches: {outcome:?}");
}
