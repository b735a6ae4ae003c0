//! Whole-file sources under a deadline: a VS Code chat session (`fixtures/vscode/chat-session.json`)
//! that an ingest with a deadline cannot parse in the time left is left untouched and reported
//! `deferred`; the pending catch-up keeps it (noted with its size) and goes on with the next
//! entry; one background reader per file, one more waiting ([`pending::claim_worker`]).

use crate::support::fixtures;
use memtrail_adapters::Agent;
use memtrail_runtime::ingest::{DOC_BYTES_PER_SEC, doc_parse_estimate, ingest_path, read_capped};
use memtrail_runtime::store::StoreLocation;
use memtrail_runtime::{Store, pending};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The fixture's session id (its file stem in `chatSessions/`).
const SID: &str = "2d4f6a8c-0e1b-4d3f-a5c7-e9b1d3f5a7c9";

/// `<root>/workspaceStorage/0a1b/chatSessions/<SID>.json` holding the fixture, then `pad`
/// spaces (JSON allows them after the value: the session is the same, the file larger).
fn chat_session(root: &Path, pad: usize) -> PathBuf {
    let dir = root.join("workspaceStorage/0a1b/chatSessions");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{SID}.json"));
    let mut bytes = std::fs::read(fixtures().join("vscode/chat-session.json")).unwrap();
    bytes.resize(bytes.len() + pad, b' ');
    std::fs::write(&p, bytes).unwrap();
    p
}

/// A temporary home, and this process's environment pointed into it (the caller runs
/// `alone!` first: the only test thread of its process).
fn home_in_env() -> memtrail_testkit::TempHome {
    let home = memtrail_testkit::TempHome::new();
    let state = home.dir.path().join("state");
    for (k, v) in memtrail_testkit::home_vars(&home.home, &state) {
        // SAFETY: the only test thread of this process (`alone!`, by the caller).
        unsafe { std::env::set_var(k, v) };
    }
    home
}

#[test]
fn the_estimate_keeps_small_files_in_the_hook_and_large_ones_out() {
    // The default hook works for 2.7 s (3 s budget, 90%): a 3 MB session fits, the 26 MB one
    // that cost 2.7 s per turn does not.
    assert_eq!(DOC_BYTES_PER_SEC, 8 * 1024 * 1024);
    assert!(doc_parse_estimate(3_000_000) < Duration::from_millis(400));
    assert!(doc_parse_estimate(26_000_000) > Duration::from_millis(2700));
    assert_eq!(doc_parse_estimate(0), Duration::ZERO);
}

#[test]
fn a_whole_file_source_past_the_deadline_is_deferred_untouched_then_read_without_one() {
    let d = tempfile::tempdir().unwrap();
    let mut store = Store::open(&d.path().join("m.db")).unwrap();
    let p = chat_session(d.path(), 0);
    let key = p.to_string_lossy().to_string();

    // A deadline already passed: nothing is read, nothing stored, no cursor.
    let r = ingest_path(&mut store, Agent::Vscode, &p, None, Some(Instant::now())).unwrap();
    assert!(r.deferred && r.incomplete, "{r:?}");
    assert_eq!((r.inserted, r.updated, r.bytes), (0, 0, 0));
    assert_eq!(r.session.as_deref(), Some(SID));
    assert!(store.cursor(&key).unwrap().is_none());

    // Without a deadline (import, the background read): the whole session, 6 messages.
    let r = ingest_path(&mut store, Agent::Vscode, &p, None, None).unwrap();
    assert!(!r.deferred && !r.incomplete, "{r:?}");
    assert_eq!(r.inserted, 6);

    // Unchanged since: the cheap check comes first, whatever the deadline.
    let r = ingest_path(&mut store, Agent::Vscode, &p, None, Some(Instant::now())).unwrap();
    assert!(r.unchanged && !r.deferred, "{r:?}");

    // Rewritten (as VS Code does at each change), with time enough for its 8 KB: read by the
    // ingest with a deadline, as before.
    std::thread::sleep(Duration::from_millis(20));
    chat_session(d.path(), 1);
    let r = ingest_path(
        &mut store,
        Agent::Vscode,
        &p,
        None,
        Some(Instant::now() + Duration::from_secs(60)),
    )
    .unwrap();
    assert!(!r.deferred && r.reread, "{r:?}");
    assert_eq!((r.inserted, r.updated), (0, 6));
}

/// A Claude Code transcript of one prompt, for a line entry beside the whole-file one.
fn claude_transcript(root: &Path) -> PathBuf {
    let dir = root.join(".claude/projects/-home-user-demo");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("5f0c7a52-3c1e-4d7e-9a51-0a1b2c3d4e5f.jsonl");
    let line = serde_json::json!({
        "parentUuid": null, "isSidechain": false, "userType": "external",
        "cwd": "/home/user/demo", "sessionId": "5f0c7a52-3c1e-4d7e-9a51-0a1b2c3d4e5f",
        "version": "2.1.49", "uuid": "u1", "timestamp": "2026-03-01T10:00:00.000Z",
        "type": "user", "message": {"role": "user", "content": "hello"}
    });
    std::fs::write(&p, format!("{line}\n")).unwrap();
    p
}

#[test]
fn the_catch_up_keeps_a_deferred_whole_file_source_and_goes_on_with_the_next() {
    memtrail_testkit::alone!(
        the_catch_up_keeps_a_deferred_whole_file_source_and_goes_on_with_the_next
    );
    let home = home_in_env();
    let db = StoreLocation::Sqlite(home.dir.path().join("m.db"));
    let mut store = Store::open(&home.dir.path().join("m.db")).unwrap();
    // 40 MB of session (the fixture padded): 5 s at the assumed rate, past a 2 s deadline.
    let doc = chat_session(&home.home, 40_000_000);
    let size = std::fs::metadata(&doc).unwrap().len();
    let lines = claude_transcript(&home.home);
    pending::add(&db, Agent::Vscode, &doc, Some(SID)).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    pending::add(&db, Agent::Claude, &lines, None).unwrap();

    let caught = pending::catch_up(&mut store, &db, Instant::now() + Duration::from_secs(2));
    assert_eq!(
        caught.deferred,
        vec![(Agent::Vscode, doc.clone(), Some(SID.to_string()))]
    );
    // The line transcript after it was read, and its entry removed.
    assert_eq!(caught.ingested.iter().map(|r| r.inserted).sum::<u64>(), 1);
    assert_eq!(caught.left, 1);
    let left: Vec<_> = pending::list(&db).into_iter().map(|(_, _, e)| e).collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].path, doc.display().to_string());
    assert_eq!(left[0].whole_file_bytes, Some(size));
    assert!(!pending::worker_running(&left[0]));

    // Read without a deadline, then the next catch-up finds it unchanged and drops the entry.
    let r = ingest_path(&mut store, Agent::Vscode, &doc, Some(SID), None).unwrap();
    assert_eq!(r.inserted, 6);
    let caught = pending::catch_up(&mut store, &db, Instant::now() + Duration::from_secs(2));
    assert!(caught.deferred.is_empty(), "{caught:?}");
    assert!(pending::list(&db).is_empty());
}

#[test]
fn one_background_reader_per_file_and_one_waiting_behind_it() {
    memtrail_testkit::alone!(one_background_reader_per_file_and_one_waiting_behind_it);
    let home = home_in_env();
    let db = StoreLocation::Sqlite(home.dir.path().join("m.db"));
    let doc = chat_session(&home.home, 0);
    let entry = pending::Entry {
        db: db.to_string(),
        agent: "vscode".into(),
        path: doc.display().to_string(),
        session: None,
        whole_file_bytes: Some(1),
    };
    assert!(!pending::worker_running(&entry));
    let first = pending::claim_worker(&db, &doc)
        .unwrap()
        .expect("the first claim");
    assert!(pending::worker_running(&entry));
    // A second claim waits for the first (on a thread: the lock is per open file).
    let (tx, rx) = std::sync::mpsc::channel();
    let second = {
        let (db, doc) = (db.clone(), doc.clone());
        std::thread::spawn(move || {
            let claim = pending::claim_worker(&db, &doc).unwrap();
            tx.send(claim.is_some()).unwrap();
            // Held until the main thread has checked the third claim and this one's.
            std::thread::sleep(Duration::from_millis(300));
            drop(claim);
        })
    };
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
    // A third, while one reads and one waits: refused at once.
    let started = Instant::now();
    let s = db.clone();
    let third = std::thread::spawn(move || pending::claim_worker(&s, &doc).unwrap().is_some())
        .join()
        .unwrap();
    assert!(!third);
    assert!(started.elapsed() < Duration::from_secs(5));
    // Another file has its own claim.
    let other = home.home.join("other.json");
    std::fs::write(&other, "{}").unwrap();
    assert!(pending::claim_worker(&db, &other).unwrap().is_some());
    drop(first);
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(true));
    assert!(pending::worker_running(&entry));
    second.join().unwrap();
    assert!(!pending::worker_running(&entry));
}

/// At most `MAX_BACKGROUND_READS` whole-file reads at once, whatever the file: a background
/// read waits for a slot before it reads (each holds about ten times its file in memory).
#[test]
fn at_most_two_background_reads_at_once_of_all_files() {
    memtrail_testkit::alone!(at_most_two_background_reads_at_once_of_all_files);
    let home = home_in_env();
    assert_eq!(pending::MAX_BACKGROUND_READS, 2);
    let a = pending::try_read_slot().unwrap().expect("a first slot");
    let b = pending::try_read_slot().unwrap().expect("a second slot");
    assert!(pending::try_read_slot().unwrap().is_none());
    drop(a);
    let c = pending::try_read_slot().unwrap().expect("the slot let go");
    assert!(pending::try_read_slot().unwrap().is_none());
    // With the queue full too, a read is not queued: it returns at once.
    assert_eq!(pending::MAX_BACKGROUND_WAITERS, 4);
    let places: Vec<_> = (0..4)
        .map(|_| pending::try_queue_place().unwrap().expect("a place"))
        .collect();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(pending::read_slot().unwrap().is_none()).unwrap());
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(true));
    drop(places);

    // A background read of a file no other process reads waits for a slot.
    let path = home.dir.path().join("m.db");
    let db = StoreLocation::Sqlite(path.clone());
    drop(Store::open(&path).unwrap());
    let doc = chat_session(&home.home, 0);
    let reader = {
        let (db, doc) = (db.clone(), doc.clone());
        std::thread::spawn(move || {
            memtrail_runtime::settle::run(Agent::Vscode, &doc, Some(SID), &db)
                .unwrap()
                .map(|(_, r)| r.inserted)
        })
    };
    // Past the 2 s of quiet it waits for and the read of the 8 KB fixture: nothing stored.
    std::thread::sleep(Duration::from_secs(4));
    let count = |p: &Path| -> i64 {
        rusqlite::Connection::open(p)
            .unwrap()
            .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(count(&path), 0);
    assert!(!reader.is_finished());
    drop((b, c));
    assert_eq!(reader.join().unwrap(), Some(6));
    assert_eq!(count(&path), 6);
}

/// A whole-file source is read to at most its cap, whatever its size said: a session file that
/// is a link to `/proc/self/pagemap` (size 0; 256 GB to a reader) was read by the hook itself
/// (its size fit any time budget) until memory ran out.
#[test]
fn a_reader_longer_than_the_cap_is_read_to_the_cap_at_most() {
    // Endless: refused.
    assert_eq!(read_capped(std::io::repeat(b'x'), 0, 1000).unwrap(), None);
    // Longer than it said, and than the cap: refused; at the cap, or shorter: whole.
    let bytes = vec![b'y'; 1001];
    assert_eq!(read_capped(&bytes[..], 10, 1000).unwrap(), None);
    assert_eq!(
        read_capped(&bytes[..1000], 10, 1000).unwrap(),
        Some(bytes[..1000].to_vec())
    );
    assert_eq!(
        read_capped(&bytes[..3], 1000, 1000).unwrap(),
        Some(b"yyy".to_vec())
    );
}

#[cfg(target_os = "linux")]
#[test]
#[ignore = "reads 256 MiB of /proc/self/pagemap"]
fn a_whole_file_source_linked_to_proc_pagemap_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let mut store = Store::open(&d.path().join("m.db")).unwrap();
    let dir = d.path().join("workspaceStorage/0a1b/chatSessions");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{SID}.json"));
    std::os::unix::fs::symlink("/proc/self/pagemap", &p).unwrap();
    assert_eq!(std::fs::metadata(&p).unwrap().len(), 0);
    let e = ingest_path(&mut store, Agent::Vscode, &p, None, None).unwrap_err();
    assert!(
        e.to_string().contains("is larger than 268435456 bytes"),
        "{e}"
    );
    assert!(store.cursor(&p.to_string_lossy()).unwrap().is_none());
}

/// The lock folder is this user's alone: one that others could write to is tightened to 0700
/// before its locks are used; a lock file of another user's is refused.
#[cfg(unix)]
#[test]
fn the_lock_folder_is_tightened_and_a_lock_file_of_another_user_refused() {
    use std::os::unix::fs::PermissionsExt;
    memtrail_testkit::alone!(the_lock_folder_is_tightened_and_a_lock_file_of_another_user_refused);
    let home = home_in_env();
    let workers = pending::dir().join("workers");
    std::fs::create_dir_all(&workers).unwrap();
    std::fs::set_permissions(&workers, std::fs::Permissions::from_mode(0o777)).unwrap();
    let db = StoreLocation::Sqlite(home.dir.path().join("m.db"));
    let doc = chat_session(&home.home, 0);
    let claim = pending::claim_worker(&db, &doc).unwrap();
    assert!(claim.is_some());
    let mode = std::fs::metadata(&workers).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    drop(claim);
    // Another user's lock file (only root can make one here).
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let slot = workers.join("read-0.slot");
        std::fs::write(&slot, b"").unwrap();
        std::os::unix::fs::chown(&slot, Some(65534), Some(65534)).unwrap();
        let e = pending::try_read_slot().unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}");
    }
}

/// A whole-file source left to the background that cannot be stored (it does not parse) loses
/// its entry once read, as the catch-up drops such an entry: kept, every later hook (of any
/// session) started another background read of the same unchanged file.
#[test]
fn a_background_read_of_a_file_that_does_not_parse_drops_its_entry() {
    memtrail_testkit::alone!(a_background_read_of_a_file_that_does_not_parse_drops_its_entry);
    let home = home_in_env();
    let path = home.dir.path().join("m.db");
    let db = StoreLocation::Sqlite(path.clone());
    drop(Store::open(&path).unwrap());
    let doc = chat_session(&home.home, 0);
    std::fs::write(&doc, b"{\"requests\": [{\"requestId\": ").unwrap();
    let size = std::fs::metadata(&doc).unwrap().len();
    pending::add_whole_file(&db, Agent::Vscode, &doc, Some(SID), size).unwrap();
    assert_eq!(pending::list(&db).len(), 1);
    let e = memtrail_runtime::settle::run(Agent::Vscode, &doc, Some(SID), &db).unwrap_err();
    assert!(e.to_string().contains("does not parse"), "{e}");
    assert!(pending::list(&db).is_empty());
}
