//! A 200 MB transcript line (issue 7, item 3): skipped while streaming, counted as malformed,
//! the lines after it read, with bounded memory. Alone in a process of its own
//! (`memtrail_testkit::alone`) so that the process's peak memory (VmHWM) is this test's.

use memtrail_adapters::Agent;
use memtrail_runtime::Store;
use memtrail_runtime::ingest::{MAX_LINE_BYTES, ingest_file};
use memtrail_testkit::append;
use serde_json::json;
use std::path::Path;

const SID: &str = "9d3c1e2f-4a5b-4c6d-8e7f-0a1b2c3d4e5f";

fn user(uuid: &str, text: &str) -> String {
    json!({
        "parentUuid": null, "isSidechain": false, "userType": "external",
        "cwd": "/home/user/demo", "sessionId": SID, "version": "2.1.49", "gitBranch": "main",
        "type": "user", "message": {"role": "user", "content": text},
        "uuid": uuid, "timestamp": "2026-11-20T10:00:00.000Z"
    })
    .to_string()
}

fn line(s: &str) -> Vec<u8> {
    format!("{s}\n").into_bytes()
}

struct Env {
    _dir: tempfile::TempDir,
    db: std::path::PathBuf,
    p: std::path::PathBuf,
    store: Store,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store/memtrail.db");
    let store = Store::open(&db).unwrap();
    let p = dir
        .path()
        .join(format!("projects/-home-user-demo/{SID}.jsonl"));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    Env {
        _dir: dir,
        db,
        p,
        store,
    }
}

impl Env {
    fn transcript(&self) -> std::path::PathBuf {
        self.p.clone()
    }

    fn messages(&self) -> Vec<(i64, String, String)> {
        let c = crate::support::open_raw(&self.db).unwrap();
        let mut st = c
            .prepare("SELECT seq, ext_id, body FROM messages ORDER BY seq")
            .unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    fn cursor(&self, p: &Path) -> Option<(i64, i64, i64)> {
        let c = crate::support::open_raw(&self.db).unwrap();
        c.query_row(
            "SELECT offset, lines, malformed FROM sources WHERE path = ?1",
            [p.to_string_lossy()],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .ok()
    }
}

fn assert_intact(store: &Store) {
    assert_eq!(store.quick_check().unwrap(), Ok(()));
}

/// Peak resident memory of this process (VmHWM), bytes.
fn peak_rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

#[test]
fn a_200_mb_line_is_skipped_with_bounded_memory_and_counted() {
    memtrail_testkit::alone!(a_200_mb_line_is_skipped_with_bounded_memory_and_counted);
    let before = peak_rss();
    let mut e = env();
    let p = e.transcript();
    let first = line(&user("u1", "first"));
    append(&p, &first);
    // 200 MB of one line, written 1 MB at a time and not finished yet (no '\n').
    let piece = vec![b'a'; 1024 * 1024];
    append(
        &p,
        br#"{"type":"user","message":{"role":"user","content":""#,
    );
    for _ in 0..200 {
        append(&p, &piece);
    }
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!(r.inserted, 1);
    assert_eq!(r.stats.malformed, 0);
    // The cursor stays at the start of the unfinished line.
    assert_eq!(e.cursor(&p), Some((first.len() as i64, 1, 0)));

    // The line ends; the next one must be read.
    append(&p, b"\"}}\n");
    append(&p, &line(&user("u2", "after the long line")));
    let r = ingest_file(&mut e.store, Agent::Claude, &p, None).unwrap();
    assert_eq!((r.inserted, r.stats.lines, r.stats.malformed), (1, 2, 1));
    let len = std::fs::metadata(&p).unwrap().len() as i64;
    assert_eq!(e.cursor(&p), Some((len, 3, 1)));
    assert_eq!(
        e.messages(),
        vec![
            (0, "u1".into(), "first".into()),
            (1, "u2".into(), "after the long line".into())
        ]
    );
    assert_intact(&e.store);
    // The line was never held whole: the read buffer is bounded by MAX_LINE_BYTES plus two
    // chunks (66 MB); the rest of this process stays far below 100 MB (measured: 81 MB peak).
    let peak = peak_rss();
    eprintln!("peak RSS {peak} bytes (before the test: {before})");
    assert!(
        peak < (MAX_LINE_BYTES as u64) + 100 * 1024 * 1024,
        "peak RSS {peak} bytes (before: {before})"
    );
}

/// A hook's deadline holds while an over-long line is skipped: a transcript whose last line
/// is gigabytes long (a sparse file here: 4 GiB of NULs after one message, no '\n') is not
/// read to its end once the deadline has passed; the ingest stops, says it is incomplete, and
/// keeps its cursor at that line's start (an import, without a deadline, gets past it). The
/// deadline comes after the first 64 MiB are read, so that the line is being skipped (the
/// attack review found release-build hooks reading 4-8 GiB past a 300 ms budget).
#[test]
fn skipping_an_over_long_line_stops_at_the_deadline() {
    let mut e = env();
    let p = e.transcript();
    let first = line(&user("u1", "first"));
    append(&p, &first);
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(first.len() as u64 + 4 * 1024 * 1024 * 1024)
        .unwrap();
    drop(f);
    let started = std::time::Instant::now();
    let deadline = started + std::time::Duration::from_millis(1500);
    let r = ingest_file(&mut e.store, Agent::Claude, &p, Some(deadline)).unwrap();
    let took = started.elapsed();
    assert_eq!(r.inserted, 1);
    assert!(r.incomplete, "the ingest must say it stopped early");
    assert_eq!(e.cursor(&p), Some((first.len() as i64, 1, 0)));
    // Reading the 4 GiB takes seconds (2 s in a release build, half a minute in a debug one); the deadline,
    // one chunk and scheduling slack far less.
    assert!(
        took < std::time::Duration::from_millis(5000),
        "took {took:?} past a 1.5 s deadline"
    );
    assert_intact(&e.store);
}
