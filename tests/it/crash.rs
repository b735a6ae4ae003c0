//! Crash safety (issue 7, item 2): `memtrail import` and hook processes killed with SIGKILL at
//! deterministic pseudo-random moments, 50 times, each into its own fresh store; after each, a
//! re-run (`memtrail import`) must give exactly the store of a clean run: the same sessions,
//! messages (order, ids, roles, text, parts), tool calls, cursors and line counters, the same
//! full-text hits, and `PRAGMA integrity_check` = ok (see `support::dump`).
//!
//! The corpus: 4 Claude Code sessions (`docs/agents/claude.md#transcript-format`) of prompts,
//! assistant text and tool-use blocks written one block per line under a shared `message.id`, and
//! tool results on later lines, so kills land between the lines of one message and between a call
//! and its result. `MEMTRAIL_CRASH_RUNS` overrides the number of runs (default 50).

use crate::support;

use serde_json::json;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use support::{Sandbox, dump, session_id, stop_payload};

const SESSIONS: u32 = 4;
/// Turns per session; each turn is 4 lines (prompt, text block, tool-use block, tool result).
const TURNS: u64 = 150;

fn line(sid: &str, cwd: &str, uuid: String, body: serde_json::Value) -> String {
    let mut v = json!({
        "parentUuid": null, "isSidechain": false, "userType": "external", "cwd": cwd,
        "sessionId": sid, "version": "2.1.49", "gitBranch": "main", "uuid": uuid,
        "timestamp": "2026-11-20T10:00:00.000Z",
    });
    for (k, x) in body.as_object().unwrap() {
        v[k] = x.clone();
    }
    v.to_string()
}

fn assistant(sid: &str, cwd: &str, uuid: String, msg: &str, block: serde_json::Value) -> String {
    line(
        sid,
        cwd,
        uuid,
        json!({"type": "assistant", "requestId": format!("req_{msg}"), "message": {
            "model": "claude-sonnet-4-5", "id": msg, "type": "message", "role": "assistant",
            "content": [block], "stop_reason": null,
            "usage": {"input_tokens": 3, "output_tokens": 5}}}),
    )
}

/// The transcript of session `s`: TURNS turns of 4 lines, about 1 KB each.
fn transcript(sid: &str, s: u32) -> String {
    let cwd = format!("/home/user/crash{s}");
    let pad = "lorem ipsum dolor sit amet ".repeat(12);
    let mut out = String::new();
    for t in 0..TURNS {
        let word = support::WORDS[(t as usize + s as usize) % support::WORDS.len()];
        let msg = format!("msg_{s}_{t}");
        let call = format!("toolu_{s}_{t}");
        for l in [
            line(
                sid,
                &cwd,
                format!("p{t}"),
                json!({"type": "user", "message": {"role": "user",
                    "content": format!("turn {t}: please {word} the module {pad}")}}),
            ),
            assistant(
                sid,
                &cwd,
                format!("a{t}"),
                &msg,
                json!({"type": "text", "text": format!("I will {word} it with cargo {pad}")}),
            ),
            assistant(
                sid,
                &cwd,
                format!("b{t}"),
                &msg,
                json!({"type": "tool_use", "id": call, "name": "Bash",
                    "input": {"command": format!("cargo test --{word} {t}")}}),
            ),
            line(
                sid,
                &cwd,
                format!("r{t}"),
                json!({"type": "user", "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": call,
                     "content": format!("test result: ok. {t} passed {pad}"),
                     "is_error": t % 7 == 0}]}}),
            ),
        ] {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

/// A deterministic sequence of numbers (64-bit LCG).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn import(sb: &Sandbox, db: &std::path::Path) -> Child {
    sb.cmd()
        .arg("--db")
        .arg(db)
        .args(["import", "--agent", "claude", "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn hook(sb: &Sandbox, db: &std::path::Path, payload: &str) -> Child {
    let mut c = sb
        .cmd()
        .arg("--db")
        .arg(db)
        .args(["hook", "claude"])
        .env("MEMTRAIL_HOOK_BUDGET_MS", "60000")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write;
    let _ = c.stdin.take().unwrap().write_all(payload.as_bytes());
    c
}

#[test]
fn killed_imports_and_hooks_leave_a_store_that_a_rerun_completes_exactly() {
    let runs: u64 = std::env::var("MEMTRAIL_CRASH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let sb = Sandbox::new();
    let mut payloads = Vec::new();
    let mut bytes = 0;
    for s in 0..SESSIONS {
        let sid = session_id(200 + s);
        let p = sb.transcript(&format!("crash{s}"), &sid);
        let text = transcript(&sid, s);
        bytes += text.len();
        std::fs::write(&p, text).unwrap();
        payloads.push(stop_payload(&p, &sid, &format!("/home/user/crash{s}")));
    }
    let stores = sb.home.join("stores");
    std::fs::create_dir_all(&stores).unwrap();

    // The clean run, timed: kills are spread over its duration.
    let clean_db = stores.join("clean.db");
    let t = Instant::now();
    let st = import(&sb, &clean_db).wait().unwrap();
    let clean_ms = t.elapsed().as_millis() as u64;
    assert!(st.success());
    let clean = dump(&clean_db);
    let messages = clean
        .iter()
        .skip_while(|l| !l.starts_with("## SELECT s.external_id, m.seq"))
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .count();
    // Per turn: the prompt, one assistant message (text + tool call, result attached).
    assert_eq!(messages as u64, SESSIONS as u64 * TURNS * 2);
    assert_eq!(clean.last().map(String::as_str), Some("Text(\"ok\")"));

    let mut rng = Lcg(0x00C0_FFEE);
    let mut killed_mid_work = 0;
    let t0 = Instant::now();
    for run in 0..runs {
        let db = stores.join(format!("run{run}.db"));
        // Who runs: the import alone, or with one or two hooks on the same transcripts.
        let mut children = vec![import(&sb, &db)];
        for h in 0..rng.next(3) {
            children.push(hook(
                &sb,
                &db,
                &payloads[((run + h) % SESSIONS as u64) as usize],
            ));
        }
        let delay = Duration::from_millis(rng.next(clean_ms.max(1) + 50));
        std::thread::sleep(delay);
        for c in &mut children {
            if c.try_wait().unwrap().is_none() {
                killed_mid_work += 1;
            }
            c.kill().unwrap(); // SIGKILL
            c.wait().unwrap();
        }
        // A second kill, sometimes, during the recovery of the first one's store.
        if rng.next(4) == 0 {
            let mut c = import(&sb, &db);
            std::thread::sleep(Duration::from_millis(rng.next(clean_ms.max(1) / 2 + 1)));
            c.kill().unwrap();
            c.wait().unwrap();
        }
        let st = import(&sb, &db).wait().unwrap();
        assert!(st.success(), "run {run}: the re-run failed");
        let got = dump(&db);
        if got != clean {
            let first = got
                .iter()
                .zip(&clean)
                .position(|(a, b)| a != b)
                .unwrap_or(got.len().min(clean.len()));
            panic!(
                "run {run} (killed after {delay:?}): the store differs from a clean run at line {first}:\n  got:   {}\n  clean: {}",
                got.get(first).map(String::as_str).unwrap_or("<end>"),
                clean.get(first).map(String::as_str).unwrap_or("<end>")
            );
        }
        let _ = std::fs::remove_file(&db);
        let _ = std::fs::remove_file(db.with_extension("db-wal"));
        let _ = std::fs::remove_file(db.with_extension("db-shm"));
    }
    eprintln!(
        "crash: {runs} runs passed ({killed_mid_work} processes killed mid-work) over a corpus of \
         {bytes} bytes, {messages} messages; clean import {clean_ms} ms; {:.1} s in all",
        t0.elapsed().as_secs_f64()
    );
    // Most kills must have hit running processes, or the test proves little.
    assert!(
        killed_mid_work >= runs / 2,
        "only {killed_mid_work} kills hit running processes"
    );
}
