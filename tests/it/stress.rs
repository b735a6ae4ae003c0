//! Stress (issue 7): many processes on one store at once. For `MEMTRAIL_STRESS_SECS` seconds
//! (default 60): a writer grows 8 Claude Code transcripts line by line (some lines written in
//! two halves, as an agent mid-write), 16 hook workers each run `memtrail hook claude` with a
//! Stop payload back to back (16 hook processes at any moment), `memtrail import` runs in a
//! loop, `memtrail repair` runs every 5 s, and 4 `memtrail mcp` servers answer `search` calls
//! in a loop. Then one last import
//! catches up, and:
//! - the store holds exactly every line written, each once, in order (per session: messages
//!   `0..n` with the ids written), with the cursors' line counters equal to the lines written
//!   (no line applied twice) and no malformed line (no half line was ever read);
//! - no hook exited non-zero or printed anything; no import failed; every MCP call returned a
//!   result and no error;
//! - the WAL stayed bounded under the load, and the last import's checkpoint truncated it to
//!   nothing while the MCP servers were still up, idle (no process holds a read snapshot
//!   between calls);
//! - every hook process finished within its budget (`MEMTRAIL_HOOK_BUDGET_MS`=[`BUDGET_MS`])
//!   plus [`SLACK_MS`] of process start, exit and scheduling on a loaded 2-core machine (the
//!   hook's own clock starts after the process is up).
//!
//! Figures are printed: hooks run, hooks that gave up the lock (logged as busy), imports, MCP
//! calls, messages, max and p99 hook wall time.

use crate::support;

use serde_json::Value;
use std::io::Write;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{Mcp, Sandbox, WORDS, claude_line, message_count, session_id, stop_payload};

const SESSIONS: u32 = 8;
const HOOK_WORKERS: u32 = 16;
const MCP_SERVERS: u32 = 4;
/// The hooks' time budget.
const BUDGET_MS: u64 = 2000;
/// Allowance on top of the budget for starting and ending a process on a loaded machine.
const SLACK_MS: u64 = 1500;
/// Allowance on the hook's own clock: scheduling latency of a loaded (shared, 2-core) machine
/// between the hook's last check of its deadline and its exit. The hook stops working at 90%
/// of its budget, so on an idle machine it ends well within it.
const TOLERANCE_MS: u64 = 250;

/// One hook process: exited 0, its stdout, its stderr, wall time in ms.
type HookRun = (bool, String, String, u64);

fn cwd(s: u32) -> String {
    format!("/home/user/stress{s}")
}

#[test]
fn hooks_import_and_mcp_servers_share_one_store_under_load() {
    let secs: u64 = std::env::var("MEMTRAIL_STRESS_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let sb = Arc::new(Sandbox::new());
    let sessions: Vec<(String, std::path::PathBuf)> = (0..SESSIONS)
        .map(|s| {
            let sid = session_id(100 + s);
            let p = sb.transcript(&format!("stress{s}"), &sid);
            (sid, p)
        })
        .collect();
    // Each transcript starts with two lines; a first import creates the store.
    let written: Arc<Vec<AtomicU64>> = Arc::new((0..SESSIONS).map(|_| AtomicU64::new(0)).collect());
    for (s, (sid, p)) in sessions.iter().enumerate() {
        let text = format!(
            "{}\n{}\n",
            claude_line(sid, &cwd(s as u32), 0),
            claude_line(sid, &cwd(s as u32), 1)
        );
        std::fs::write(p, text).unwrap();
        written[s].store(2, Ordering::SeqCst);
    }
    let out = sb.cmd().args(["import", "--json"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(message_count(&sb.db()), 2 * SESSIONS as i64);

    let stop = Arc::new(AtomicBool::new(false));
    let end = Instant::now() + Duration::from_secs(secs);
    let mut threads = Vec::new();

    // The writer: one line per session per round, every 7th line in two halves.
    {
        let (stop, written, sessions) = (stop.clone(), written.clone(), sessions.clone());
        threads.push(std::thread::spawn(move || {
            let mut files: Vec<std::fs::File> = sessions
                .iter()
                .map(|(_, p)| std::fs::OpenOptions::new().append(true).open(p).unwrap())
                .collect();
            while !stop.load(Ordering::SeqCst) {
                for (s, (sid, _)) in sessions.iter().enumerate() {
                    let i = written[s].load(Ordering::SeqCst);
                    let line = format!("{}\n", claude_line(sid, &cwd(s as u32), i));
                    let f = &mut files[s];
                    if i % 7 == 3 {
                        let (a, b) = line.as_bytes().split_at(line.len() / 2);
                        f.write_all(a).unwrap();
                        std::thread::sleep(Duration::from_millis(2));
                        f.write_all(b).unwrap();
                    } else {
                        f.write_all(line.as_bytes()).unwrap();
                    }
                    written[s].store(i + 1, Ordering::SeqCst);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }));
    }

    // Hook workers: (exit ok, stdout, stderr, wall ms) of every run.
    let hook_runs: Arc<Mutex<Vec<HookRun>>> = Arc::default();
    for w in 0..HOOK_WORKERS {
        let (stop, sb, runs) = (stop.clone(), sb.clone(), hook_runs.clone());
        let (sid, path) = sessions[(w % SESSIONS) as usize].clone();
        let payload = stop_payload(&path, &sid, &cwd(w % SESSIONS));
        let timing = sb.home.join("hook-timing.txt");
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let t = Instant::now();
                let mut child = sb
                    .cmd()
                    .args(["hook", "claude"])
                    .env("MEMTRAIL_HOOK_BUDGET_MS", BUDGET_MS.to_string())
                    .env("MEMTRAIL_HOOK_TIMING", &timing)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(payload.as_bytes())
                    .unwrap();
                let out = child.wait_with_output().unwrap();
                let ms = t.elapsed().as_millis() as u64;
                runs.lock().unwrap().push((
                    out.status.success(),
                    String::from_utf8_lossy(&out.stdout).into_owned(),
                    String::from_utf8_lossy(&out.stderr).into_owned(),
                    ms,
                ));
            }
        }));
    }

    // Imports in a loop: (exit ok, stderr, summary).
    let imports: Arc<Mutex<Vec<(bool, String, Value)>>> = Arc::default();
    {
        let (stop, sb, imports) = (stop.clone(), sb.clone(), imports.clone());
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let out = sb
                    .cmd()
                    .args(["import", "--agent", "claude", "--json"])
                    .output()
                    .unwrap();
                let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
                imports.lock().unwrap().push((
                    out.status.success(),
                    String::from_utf8_lossy(&out.stderr).into_owned(),
                    v,
                ));
            }
        }));
    }

    // `memtrail repair` every 5 s (it must be safe while hooks and imports run): its reports.
    let repairs: Arc<Mutex<Vec<(bool, Value)>>> = Arc::default();
    {
        let (stop, sb, repairs) = (stop.clone(), sb.clone(), repairs.clone());
        threads.push(std::thread::spawn(move || {
            let mut next = Instant::now() + Duration::from_secs(5);
            while !stop.load(Ordering::SeqCst) {
                if Instant::now() < next {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
                next += Duration::from_secs(5);
                let out = sb.cmd().args(["repair", "--json"]).output().unwrap();
                let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
                repairs.lock().unwrap().push((out.status.success(), v));
            }
        }));
    }

    // MCP servers searching in a loop: (calls, failures as text).
    let mcp_calls = Arc::new(AtomicU64::new(0));
    let mcp_failures: Arc<Mutex<Vec<String>>> = Arc::default();
    let idle_servers: Arc<Mutex<Vec<(u32, Mcp)>>> = Arc::default();
    for m in 0..MCP_SERVERS {
        let (stop, sb, calls, failures, idle) = (
            stop.clone(),
            sb.clone(),
            mcp_calls.clone(),
            mcp_failures.clone(),
            idle_servers.clone(),
        );
        threads.push(std::thread::spawn(move || {
            let mut server = Mcp::start(&sb);
            let mut k = m as usize;
            while !stop.load(Ordering::SeqCst) {
                let r = server.search(WORDS[k % WORDS.len()]);
                k += 1;
                calls.fetch_add(1, Ordering::SeqCst);
                let result = &r["result"];
                if !r["error"].is_null()
                    || result["isError"] == Value::Bool(true)
                    || !result["structuredContent"]["hits"].is_array()
                {
                    failures.lock().unwrap().push(r.to_string());
                }
            }
            // Kept running, idle, until the WAL's last check below.
            idle.lock().unwrap().push((m, server));
        }));
    }

    // Checkpoints keep the WAL small (autocheckpoint; a TRUNCATE one after each import and
    // repair, and by any background writer that finds the WAL past WAL_BOUND_BYTES): its size
    // is sampled while everything runs.
    let mut wal_path = sb.db().into_os_string();
    wal_path.push("-wal");
    let mut max_wal = 0u64;
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100));
        max_wal = max_wal.max(std::fs::metadata(&wal_path).map_or(0, |m| m.len()));
    }
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        t.join().unwrap();
    }

    // One last import catches up what the last hooks left, while the MCP servers stay up,
    // idle: its closing checkpoint restarts the WAL and truncates it to nothing, which it
    // cannot do while any process still holds a read snapshot (a server that kept a statement
    // open between calls would keep the WAL growing for as long as it runs). A server's indexer
    // may still be indexing what the last hooks queued when that import ends (the import then
    // leaves it the queue and the WAL holds its commit): up to two more imports, half a second
    // apart, find nothing left to write.
    let mut wal_after = u64::MAX;
    for attempt in 0..3 {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(500));
        }
        sb.json(&["import", "--agent", "claude", "--json"]);
        // The file must be there (a WAL deleted by the last connection to close would say
        // nothing about the servers; memtrail's connections never delete it).
        wal_after = std::fs::metadata(&wal_path).map_or(u64::MAX, |m| m.len());
        if wal_after == 0 {
            break;
        }
    }
    for (m, server) in std::mem::take(&mut *idle_servers.lock().unwrap()) {
        let status = server.stop();
        if !status.success() {
            mcp_failures
                .lock()
                .unwrap()
                .push(format!("mcp server {m} exited {status}"));
        }
    }

    let runs = hook_runs.lock().unwrap();
    let imports = imports.lock().unwrap();
    let failures = mcp_failures.lock().unwrap();
    let total_written: u64 = written.iter().map(|w| w.load(Ordering::SeqCst)).sum();
    let messages = message_count(&sb.db());
    let mut walls: Vec<u64> = runs.iter().map(|r| r.3).collect();
    walls.sort_unstable();
    let max_wall = walls.last().copied().unwrap_or(0);
    let p99 = walls.get(walls.len() * 99 / 100).copied().unwrap_or(0);
    let log = std::fs::read_to_string(sb.hook_log()).unwrap_or_default();
    // The hooks' own record (MEMTRAIL_HOOK_TIMING): `claude Stop <ok|busy|error> <µs>` per run.
    let budget_spent = log.matches("time budget spent").count();
    let timing = std::fs::read_to_string(sb.home.join("hook-timing.txt")).unwrap_or_default();
    let outcomes: Vec<&str> = timing
        .lines()
        .map(|l| l.split(' ').nth(2).unwrap())
        .collect();
    let busy = outcomes.iter().filter(|o| **o == "busy").count();
    let mut took: Vec<u64> = timing
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap() / 1000)
        .collect();
    took.sort_unstable();
    let max_took = took.last().copied().unwrap_or(0);
    let p99_took = took.get(took.len() * 99 / 100).copied().unwrap_or(0);
    let db_size = std::fs::metadata(sb.db()).map_or(0, |m| m.len());
    eprintln!(
        "stress: store {db_size} bytes; largest WAL seen {max_wal} bytes, {wal_after} bytes after the last import"
    );
    eprintln!(
        "stress: {secs} s; {hooks} hook runs ({busy} gave up the lock, {budget_spent} hit the budget), \
         {imports} imports, {repairs} repairs, {calls} MCP calls, {total_written} lines written, {messages} messages; \
         hook duration (own clock) max {max_took} ms, p99 {p99_took} ms; \
         wall time max {max_wall} ms, p99 {p99} ms (budget {BUDGET_MS} ms; wall slack {SLACK_MS} ms)",
        hooks = runs.len(),
        repairs = repairs.lock().unwrap().len(),
        imports = imports.len(),
        calls = mcp_calls.load(Ordering::SeqCst),
    );

    // No error surfaced to any caller, and none logged but "busy" (the fail-open case).
    assert!(
        outcomes.iter().all(|o| *o == "ok" || *o == "busy"),
        "hook errors: {}",
        log.lines()
            .filter(|l| l.contains(" error: ") && !l.contains("the store is busy"))
            .take(5)
            .collect::<Vec<_>>()
            .join("\n")
    );
    for (ok, stdout, stderr, ms) in runs.iter() {
        assert!(
            *ok && stdout.is_empty() && stderr.is_empty(),
            "hook ({ms} ms): stdout {stdout:?} stderr {stderr:?}"
        );
    }
    for (ok, stderr, v) in imports.iter() {
        assert!(*ok, "import failed: {stderr}");
        assert_eq!(v["agents"][0]["unreadable"], serde_json::json!([]), "{v}");
    }
    for (ok, v) in repairs.lock().unwrap().iter() {
        // Nothing derived was wrong, and SQLite's full check passed.
        assert!(*ok, "repair failed: {v}");
        assert_eq!(v["integrity"], serde_json::json!(["ok"]), "{v}");
        assert!(
            v["steps"]
                .as_array()
                .unwrap()
                .iter()
                .all(|s| s["fixed"] == 0 || s["name"] == "file size"),
            "repair found something to fix: {v}"
        );
    }
    assert!(
        failures.is_empty(),
        "MCP failures: {:?}",
        &failures[..failures.len().min(5)]
    );
    assert!(runs.len() >= HOOK_WORKERS as usize, "every worker ran");
    assert!(mcp_calls.load(Ordering::SeqCst) >= MCP_SERVERS as u64);
    // Every hook within its budget: by its own clock (one timing line per run), and from the
    // outside with the slack for process start and exit.
    assert_eq!(took.len(), runs.len(), "one timing line per hook run");
    assert!(
        max_took <= BUDGET_MS + TOLERANCE_MS,
        "slowest hook by its clock: {max_took} ms"
    );
    assert!(
        max_wall <= BUDGET_MS + SLACK_MS,
        "slowest hook (wall): {max_wall} ms"
    );
    // Once the readers let go, the WAL is restarted and truncated: nothing holds it.
    assert_eq!(wal_after, 0, "WAL after the last import's checkpoint");
    // Under load it is kept near WAL_BOUND_BYTES (48 MiB), past which a background writer
    // checkpoints, but no checkpoint can copy a page while a reader that started before it
    // still reads: a repair's `PRAGMA integrity_check` is one read of 0.5–4 s on a loaded
    // 2-core machine, while the writers here add 5–10 MB of WAL a second (sampled locally:
    // 29–32 MB at most; CI saw 85 MB with other tests beside it, and 92 MB before the bound
    // existed). 128 MB still catches a WAL that grows for the whole run (~5 MB a second).
    assert!(max_wal <= 128 * 1024 * 1024, "WAL of {max_wal} bytes");
    // Exactly every line written, each once, in order.
    assert_eq!(messages as u64, total_written);
    let c = rusqlite::Connection::open(sb.db()).unwrap();
    for (s, (sid, path)) in sessions.iter().enumerate() {
        let n = written[s].load(Ordering::SeqCst);
        let ids: Vec<(i64, String)> = c
            .prepare(
                "SELECT m.seq, m.ext_id FROM messages m JOIN sessions s ON s.id = m.session_id
                 WHERE s.external_id = ?1 ORDER BY m.seq",
            )
            .unwrap()
            .query_map([sid], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let expected: Vec<(i64, String)> = (0..n)
            .map(|i| {
                let id = if i % 2 == 0 {
                    format!("u{i}")
                } else {
                    format!("msg_{}_{i}", &sid[..8])
                };
                (i as i64, id)
            })
            .collect();
        assert_eq!(ids, expected, "session {s}");
        let (count, lines, malformed): (i64, i64, i64) = c
            .query_row(
                "SELECT s.message_count, src.lines, src.malformed FROM sources src
                 JOIN sessions s ON s.id = src.session_id WHERE src.path = ?1",
                [path.to_string_lossy()],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(
            (count, lines, malformed),
            (n as i64, n as i64, 0),
            "session {s}"
        );
    }
    let check: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}
