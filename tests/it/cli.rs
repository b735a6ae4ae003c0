//! End-to-end tests of the `memtrail` binary in a sandboxed HOME: the Claude Code hook (fed
//! payloads shaped like the real ones), import, search, sessions, and failing open.

use crate::support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::{Sandbox, copy_tree};

/// The growing fixture session (`fixtures/claude/grow-turn*.jsonl`), placed where Claude Code
/// keeps transcripts.
fn grow_transcript(sb: &Sandbox, turn: u32) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("fixtures/claude/grow-turn{turn}.jsonl"));
    let sid = session_id_of(&src);
    let dst = sb
        .claude_dir()
        .join(format!("projects/-home-user-grow/{sid}.jsonl"));
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    std::fs::copy(src, &dst).unwrap();
    dst
}

fn stop_payload(transcript: &Path, sid: &str) -> String {
    json!({
        "session_id": sid,
        "transcript_path": transcript,
        "cwd": "/home/user/grow",
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": false
    })
    .to_string()
}

fn session_id_of(path: &Path) -> String {
    let first = std::fs::read_to_string(path).unwrap();
    first
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v["sessionId"].as_str().map(str::to_string))
        .unwrap()
}

#[test]
fn stop_hook_ingests_each_turn_once_and_prints_nothing() {
    let sb = Sandbox::new();
    let mut counts = Vec::new();
    for turn in 1..=3 {
        let t = grow_transcript(&sb, turn);
        let sid = session_id_of(&t);
        let out = sb
            .acmd()
            .args(["hook", "claude"])
            .write_stdin(stop_payload(&t, &sid))
            .output()
            .unwrap();
        assert!(out.status.success());
        assert!(
            out.stdout.is_empty(),
            "Stop prints nothing: {:?}",
            String::from_utf8_lossy(&out.stdout)
        );
        // A second identical hook (Claude Code may fire Stop and SessionEnd back to back) adds nothing.
        sb.acmd()
            .args(["hook", "claude"])
            .write_stdin(stop_payload(&t, &sid))
            .assert()
            .success();
        let v = sb.json(&["sessions", "show", &sid, "--json"]);
        counts.push(v["messages"].as_array().unwrap().len());
        let ids: Vec<&str> = v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        let mut dedup = ids.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(dedup.len(), ids.len(), "no duplicate message ids");
    }
    assert!(
        counts[0] < counts[1] && counts[1] < counts[2],
        "grows: {counts:?}"
    );
    assert!(
        !sb.hook_log().exists()
            || !std::fs::read_to_string(sb.hook_log())
                .unwrap()
                .contains("error")
    );

    let list = sb.json(&["sessions", "list", "--json"]);
    let s = &list["sessions"][0];
    assert_eq!(s["agent"], "claude");
    assert_eq!(s["messages"].as_u64().unwrap() as usize, counts[2]);

    // status shows when the Stop hook last ran.
    // Not installed, though Claude Code's folder exists: a user may install for some agents
    // only, so that is not a fault (exit 0); the text says how to wire it.
    let out = sb.acmd().args(["status"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("not wired: its sessions are not captured as they happen (`memtrail install --agent claude`"),
        "{text}"
    );
    let out = sb.acmd().args(["status", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let st: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(st["healthy"], true);
    let runs = &st["agents"][0]["hook_runs"];
    assert!(
        runs.as_array()
            .unwrap()
            .iter()
            .any(|r| r["event"] == "Stop"),
        "{st}"
    );
    // The hooks queued their messages for the search index; a search indexes them first, so
    // it finds the latest turn, and the queue is then empty.
    assert_eq!(
        st["store"]["unindexed_messages"].as_u64().unwrap() as usize,
        counts[2],
        "{st}"
    );
    assert!(text.contains(&format!(
        "{} new messages not yet in the search index",
        counts[2]
    )));
    let hits = sb.json(&["search", "passed", "--json"]);
    assert!(!hits["hits"].as_array().unwrap().is_empty(), "{hits}");
    let st = sb.json(&["status", "--json"]);
    assert_eq!(st["store"]["unindexed_messages"], 0, "{st}");
}

#[test]
fn hook_fails_open_on_bad_input() {
    let sb = Sandbox::new();
    for payload in [
        "not json at all".to_string(),
        "[1,2,3]".to_string(),
        json!({"session_id": "x", "hook_event_name": "Stop", "transcript_path": "/nonexistent/x.jsonl"}).to_string(),
        String::new(),
    ] {
        let out = sb
            .acmd()
            .args(["hook", "claude"])
            .write_stdin(payload.clone())
            .output()
            .unwrap();
        assert!(out.status.success(), "exit 0 for {payload:?}");
        assert!(out.stdout.is_empty(), "nothing on stdout for {payload:?}");
    }
    let log = std::fs::read_to_string(sb.hook_log()).unwrap();
    assert_eq!(log.matches(" error: ").count(), 4, "{log}");
    assert!(log.contains("/nonexistent/x.jsonl"), "{log}");

    // A store that cannot be opened (its path is a folder): still exit 0.
    let out = sb
        .acmd()
        .args(["--db", sb.home.to_str().unwrap(), "hook", "claude"])
        .write_stdin({
            let t = grow_transcript(&sb, 1);
            stop_payload(&t, &session_id_of(&t))
        })
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
}

#[test]
fn claude_format_hook_run_by_vscode_or_cursor_is_not_stored() {
    let sb = Sandbox::new();
    let t = grow_transcript(&sb, 1);
    // VS Code runs ~/.claude/settings.json hooks with camelCase fields.
    let vscode =
        json!({"sessionId": "vs-1", "hookEventName": "Stop", "transcript_path": t, "cwd": "/w"});
    // Cursor with third-party hooks on: conversation_id + workspace_roots.
    let cursor = json!({"conversation_id": "c-1", "workspace_roots": ["/w"], "hook_event_name": "stop",
        "transcript_path": t});
    for p in [vscode, cursor] {
        sb.acmd()
            .args(["hook", "claude"])
            .write_stdin(p.to_string())
            .assert()
            .success()
            .stdout("");
    }
    let list = sb.json(&["sessions", "list", "--json"]);
    assert_eq!(list["sessions"].as_array().unwrap().len(), 0);
    let log = std::fs::read_to_string(sb.hook_log()).unwrap();
    assert!(log.contains("invoked by VS Code Copilot"), "{log}");
    assert!(log.contains("invoked by Cursor"), "{log}");
}

#[test]
fn a_tiny_time_budget_defers_the_rest_to_the_next_hook() {
    let sb = Sandbox::new();
    // A session of 3000 user/assistant pairs.
    let sid = "0b5e8d9c-1111-4222-8333-944455566677";
    let path = sb
        .claude_dir()
        .join(format!("projects/-home-user-big/{sid}.jsonl"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut text = String::new();
    for i in 0..3000 {
        let env = |uuid: String| {
            json!({"parentUuid": null, "isSidechain": false, "userType": "external", "cwd": "/home/user/big",
                "sessionId": sid, "version": "2.1.49", "gitBranch": "main", "uuid": uuid,
                "timestamp": "2026-11-20T10:00:00.000Z"})
        };
        let mut u = env(format!("u{i}"));
        u["type"] = json!("user");
        u["message"] = json!({"role": "user", "content": format!("question number {i}")});
        let mut a = env(format!("a{i}"));
        a["type"] = json!("assistant");
        a["message"] = json!({"id": format!("msg_{i}"), "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": format!("answer number {i}")}]});
        text.push_str(&format!("{u}\n{a}\n"));
    }
    std::fs::write(&path, text).unwrap();
    let mut seen = Vec::new();
    for _ in 0..40 {
        sb.acmd()
            .env("MEMTRAIL_HOOK_BUDGET_MS", "0")
            .args(["hook", "claude"])
            .write_stdin(stop_payload(&path, sid))
            .assert()
            .success()
            .stdout("");
        let n = sb.json(&["sessions", "list", "--json"])["sessions"][0]["messages"]
            .as_u64()
            .unwrap();
        seen.push(n);
        if n == 6000 {
            break;
        }
    }
    assert!(seen[0] < 6000, "the first hook stopped early: {seen:?}");
    assert_eq!(
        *seen.last().unwrap(),
        6000,
        "later hooks caught up: {seen:?}"
    );
    let log = std::fs::read_to_string(sb.hook_log()).unwrap();
    assert!(log.contains("time budget spent"), "{log}");
}

/// Claude Code session `n` in project folder `folder` (cwd `/home/user/<cwd>`): two lines, the
/// second without its '\n', read by a Stop hook (which stores the first); its path and the
/// unfinished line.
fn unfinished_after_a_hook(
    sb: &Sandbox,
    n: u32,
    folder: &str,
    cwd: &str,
) -> (std::path::PathBuf, String) {
    let sid = support::session_id(n);
    let path = sb.transcript(folder, &sid);
    let cwd = format!("/home/user/{cwd}");
    let (l0, l1) = (
        support::claude_line(&sid, &cwd, 0),
        support::claude_line(&sid, &cwd, 1),
    );
    std::fs::write(&path, format!("{l0}\n{l1}")).unwrap();
    sb.acmd()
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&path, &sid))
        .assert()
        .success();
    (path, l1)
}

/// Issue 11 item 15: a copied transcript whose last line has no '\n' is reported by `status`,
/// left alone by a hook mid-session, and read by `import` (once) when it is whole JSON.
#[test]
fn a_last_line_without_a_newline_is_reported_then_imported() {
    let sb = Sandbox::new();
    let (path, l1) = unfinished_after_a_hook(&sb, 7, "copied", "copied");
    let messages =
        |sb: &Sandbox| sb.json(&["sessions", "list", "--json"])["sessions"][0]["messages"].as_u64();
    assert_eq!(messages(&sb), Some(1));
    let out = sb.acmd().args(["status", "--json"]).output().unwrap();
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        status["pending_tails"],
        json!([{"path": path.display().to_string(), "agent": "claude", "bytes": l1.len()}])
    );
    let out = sb.acmd().args(["status"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!(
            "1 transcript ends in a line without a newline, not captured yet (e.g. {}, {} bytes)",
            path.display(),
            l1.len()
        )),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let imp = sb.json(&["import", "--json"]);
    assert_eq!(imp["agents"][0]["messages"], 1, "{imp}");
    assert_eq!(messages(&sb), Some(2));
    let out = sb.acmd().args(["status", "--json"]).output().unwrap();
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["pending_tails"], json!([]));
    assert_eq!(sb.json(&["import", "--json"])["agents"][0]["messages"], 0);
}

/// A project folder named with line breaks (a prompt-injected agent can make one) prints no
/// line of its own in `status`: the unfinished-line notice named the path as it was, so a
/// folder `-r\nclaude: OK, 0 problems (forged)\nx` printed a forged agent line (attack review).
#[test]
fn status_prints_no_line_a_folder_name_forges() {
    let sb = Sandbox::new();
    unfinished_after_a_hook(&sb, 9, "r\nclaude: OK, 0 problems (forged)\nx", "r");
    let out = sb.acmd().args(["status"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("claude: OK, 0 problems")),
        "{text}"
    );
    assert!(
        text.contains("-home-user-r claude: OK, 0 problems (forged) x/"),
        "{text}"
    );
}

/// `status` counts every transcript but opens only those the store has not read; a FIFO named
/// like a transcript is reported as unreadable, never waited on.
#[test]
fn status_reports_a_fifo_transcript_without_waiting_on_it() {
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    let files = sb.json(&["import", "--json"])["agents"][0]["files"]
        .as_u64()
        .unwrap();
    let fifo = sb.transcript("pipe", &support::session_id(9));
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let mut child = sb
        .cmd()
        .args(["status", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("status is stuck on the FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let claude = &v["agents"][0];
    assert_eq!(claude["agent"], "claude");
    assert_eq!(claude["transcripts"]["found"], files + 1, "{claude}");
    let bad = claude["transcripts"]["unreadable"].as_array().unwrap();
    assert_eq!(bad.len(), 1, "{claude}");
    assert_eq!(bad[0]["path"], fifo.to_str().unwrap());
    assert!(
        bad[0]["error"]
            .as_str()
            .unwrap()
            .ends_with("is not a regular file"),
        "{claude}"
    );
}

/// `status` keeps the agents' folder listings between runs (`listing-cache` in the state
/// folder, owner-only) and reads again only the folders that changed: a transcript added to or
/// removed from a folder it kept is counted, one that grows is still seen growing, and a
/// damaged cache is ignored (everything listed again) and replaced.
#[test]
fn status_keeps_folder_listings_and_sees_every_change_in_them() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    let files = sb.json(&["import", "--json"])["agents"][0]["files"]
        .as_u64()
        .unwrap();
    let status = || {
        let v = sb.json(&["status", "--json"]);
        let claude = v["agents"][0].clone();
        assert_eq!(claude["agent"], "claude");
        (claude["transcripts"]["found"].as_u64().unwrap(), v)
    };
    // A folder changed within the last 2 s is listed every time, not kept: let the fixture's
    // folders settle so that the next runs answer from the cache.
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    assert_eq!(status().0, files);
    let cache = sb.home.join(".local/state/memtrail/listing-cache");
    let md = std::fs::metadata(&cache).unwrap();
    assert_eq!(md.permissions().mode() & 0o777, 0o600);
    assert!(md.len() > 0);
    assert_eq!(status().0, files, "from the cache");
    // Added to a kept folder: counted, and opened to prove it readable.
    let added = sb.transcript("demo", &support::session_id(7));
    std::fs::write(
        &added,
        support::claude_line(&support::session_id(7), "/home/user/demo", 0) + "\n",
    )
    .unwrap();
    let fifo = sb.transcript("demo", &support::session_id(8));
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let (found, v) = status();
    assert_eq!(found, files + 2, "{v}");
    let bad = v["agents"][0]["transcripts"]["unreadable"]
        .as_array()
        .unwrap();
    assert_eq!(bad.len(), 1, "{v}");
    assert_eq!(bad[0]["path"], fifo.to_str().unwrap());
    // A captured transcript grows by a line without its newline: listed as before, and the
    // unfinished line is reported.
    let grown = sb.transcript("demo", "3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1e83");
    assert!(grown.is_file());
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&grown)
        .unwrap();
    std::io::Write::write_all(&mut f, b"{\"type\":\"user\",\"partial").unwrap();
    drop(f);
    let (found, v) = status();
    assert_eq!(found, files + 2, "{v}");
    let tails = v["pending_tails"].as_array().unwrap();
    assert!(
        tails.iter().any(|t| t["path"] == grown.to_str().unwrap()),
        "{v}"
    );
    // Removed: no longer counted.
    std::fs::remove_file(&added).unwrap();
    std::fs::remove_file(&fifo).unwrap();
    let (found, v) = status();
    assert_eq!(found, files, "{v}");
    assert_eq!(v["agents"][0]["transcripts"]["unreadable"], json!([]));
    // A damaged cache is ignored and written again.
    std::fs::write(&cache, b"not a listing cache").unwrap();
    assert_eq!(status().0, files);
    assert_ne!(std::fs::read(&cache).unwrap(), b"not a listing cache");
    assert_eq!(
        std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(status().0, files);
}

#[test]
fn import_finds_every_transcript_and_is_a_noop_the_second_time() {
    let sb = Sandbox::new();
    let projects = sb.install_fixture_projects();
    assert!(projects.exists());
    let first = sb.json(&["import", "--json"]);
    let a = &first["agents"][0];
    assert_eq!(a["agent"], "claude");
    let files = a["files"].as_u64().unwrap();
    assert!(files >= 2, "main session + sub-agent: {first}");
    assert_eq!(a["changed_files"].as_u64().unwrap(), files);
    assert!(a["messages"].as_u64().unwrap() > 0);
    assert_eq!(a["unreadable"].as_array().unwrap().len(), 0);

    let second = sb.json(&["import", "--json"]);
    let b = &second["agents"][0];
    assert_eq!(b["messages"], 0, "{second}");
    assert_eq!(b["changed_files"], 0, "{second}");

    // The sub-agent is a child session of its parent.
    let list = sb.json(&["sessions", "list", "--json"]);
    let sessions = list["sessions"].as_array().unwrap();
    let child = sessions
        .iter()
        .find(|s| !s["parent_session_id"].is_null())
        .expect("a child session");
    let parent = child["parent_session_id"].as_str().unwrap();
    assert!(sessions.iter().any(|s| s["session_id"] == parent));

    // Plain output names the counts too.
    let out = sb.acmd().args(["import"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("claude:") && text.contains("0 new messages"),
        "{text}"
    );

    // --since in the future imports nothing.
    let none = sb.json(&["import", "--since", "2999-01-01", "--json"]);
    assert_eq!(none["agents"][0]["files"], 0);
}

/// `--since` after `--until`: said, not answered "No matches … (without them there may be
/// some)", which sent the user to drop the filters rather than swap them.
#[test]
fn search_with_a_range_that_ends_before_it_starts_says_so() {
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    sb.json(&["import", "--json"]);
    let out = sb
        .acmd()
        .args([
            "search",
            "TODO",
            "--since",
            "2026-03-04",
            "--until",
            "2026-03-02",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "memtrail: --since 2026-03-04 is after --until 2026-03-02: no message can be in that range (swap them?)\n"
    );
    // One day as both ends is that day.
    let res = sb.json(&[
        "search",
        "TODO",
        "--json",
        "--since",
        "2026-03-03",
        "--until",
        "2026-03-03",
    ]);
    assert!(!res["hits"].as_array().unwrap().is_empty(), "{res}");
}

#[test]
fn search_cli_finds_filters_and_never_shows_sqlite_errors() {
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    sb.json(&["import", "--json"]);
    let list = sb.json(&["sessions", "list", "--json"]);
    let first = list["sessions"][0].clone();
    let sid = first["session_id"].as_str().unwrap();
    // Take a word from the session's title and find it.
    let title = first["title"].as_str().unwrap();
    let word = title
        .split(|c: char| !c.is_alphanumeric())
        .find(|w| w.len() >= 5)
        .unwrap_or(title);
    let res = sb.json(&["search", word, "--json", "--limit", "5"]);
    let hits = res["hits"].as_array().unwrap();
    assert!(!hits.is_empty(), "{word}: {res}");
    assert!(hits.len() <= 5);
    assert!(hits.iter().any(|h| h["session_id"] == sid), "{res}");
    assert!(hits[0]["snippet"].as_str().unwrap().contains("**"));
    for key in [
        "agent",
        "title",
        "project",
        "message_id",
        "role",
        "timestamp",
        "score",
    ] {
        assert!(hits[0].get(key).is_some(), "hit has {key}");
    }
    let only = sb.json(&["search", word, "--session", sid, "--json"]);
    assert!(
        only["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["session_id"] == sid)
    );
    let none = sb.json(&["search", word, "--agent", "codex", "--json"]);
    assert_eq!(none["hits"].as_array().unwrap().len(), 0);
    // An exclusion applies wherever it stands: `-overflow todo` is `todo -overflow` (2 of
    // the fixture's 6 `todo` messages), not `todo`.
    let ids = |args: &[&str]| -> Vec<String> {
        sb.json(args)["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["message_id"].as_str().unwrap().to_string())
            .collect()
    };
    let after = ids(&["search", "--json", "--", "todo -overflow"]);
    assert_eq!(
        (after.len(), ids(&["search", "--json", "todo"]).len()),
        (2, 6)
    );
    assert_eq!(ids(&["search", "--json", "--", "-overflow todo"]), after);
    assert_eq!(ids(&["search", "--json", "NOT overflow todo"]), after);
    // Exit code, stdout and stderr of a run.
    let run = |args: &[&str]| {
        let out = sb.acmd().args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // A limit out of range is a usage error, said in words.
    let (code, _, err) = run(&["search", "todo", "-n", "1000"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("`1000` is not a whole number from 1 to 500"),
        "{err}"
    );
    // Exactly as many hits as the limit: nothing more to show, no note.
    let (code, _, err) = run(&["search", "todo", "-n", "6"]);
    assert_eq!((code, err.as_str()), (Some(0), ""));
    // No match because of a filter: said so.
    let (_, said, _) = run(&[
        "search",
        "todo",
        "--agent",
        "codex",
        "--since",
        "2020-01-01",
    ]);
    assert_eq!(
        said,
        "No matches for \"todo\" with --agent, --since (without them there may be some).\n"
    );
    // A list cut at the limit says so on stderr, with the option that shows more.
    assert!(hits.len() > 1, "{res}");
    let (code, _, err) = run(&["search", word, "-n", "1"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        err,
        "note: the list stops at 1 hit; a larger -n (--limit) shows more\n"
    );
    let (code, _, err) = run(&["sessions", "list", "--limit", "1"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        err,
        "note: the list stops at 1 session; a larger -n (--limit) shows more\n"
    );

    for q in [
        "\"unbalanced",
        "a AND",
        "OR",
        "(((",
        "-- DROP TABLE",
        "東京",
        "x*y",
        "NEAR(",
        "col:val",
    ] {
        let out = sb.acmd().args(["search", q]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.to_lowercase().contains("syntax error") && !err.contains("fts5"),
            "{q}: {err}"
        );
    }
    // A bad date is a clear error.
    let out = sb
        .acmd()
        .args(["search", "x", "--since", "last tuesday"])
        .output()
        .unwrap();
    // A usage error, as a bad --agent or --role is.
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("YYYY-MM-DD"));
    // So is a count of nothing (`sessions show --limit 0` printed a header and no message).
    for args in [
        ["sessions", "show", "x", "--limit", "0"],
        ["sessions", "list", "--limit", "0", "--json"],
    ] {
        let out = sb.acmd().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("`0` is not a whole number"),
            "{args:?}"
        );
    }
}

#[test]
fn sessions_show_prints_markdown_with_tool_calls() {
    let sb = Sandbox::new();
    let t = grow_transcript(&sb, 3);
    let sid = session_id_of(&t);
    sb.acmd()
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&t, &sid))
        .assert()
        .success();
    let out = sb
        .acmd()
        .args(["sessions", "show", &sid[..8]])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.starts_with("# "), "{md}");
    assert!(md.contains("## User"), "{md}");
    assert!(md.contains("## Assistant"), "{md}");
    assert!(md.contains("### Tool: "), "{md}");
    assert!(
        md.contains("**Error:**") || md.contains("**Output:**"),
        "{md}"
    );
    // The whole session: no note. A part: which, and the next offset; past the end: said.
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let total = sb.json(&["sessions", "show", &sid[..8], "--json"])["total"]
        .as_i64()
        .unwrap();
    assert!(total >= 4, "{total}");
    let note = |args: &[&str]| {
        let mut all = vec!["sessions", "show", &sid[..8]];
        all.extend_from_slice(args);
        String::from_utf8(sb.acmd().args(&all).output().unwrap().stderr).unwrap()
    };
    assert_eq!(
        note(&["--offset", "1", "--limit", "2"]),
        format!("note: messages #1–#2 of {total} shown; --offset 3 shows the next\n")
    );
    assert_eq!(
        note(&["--offset", "1", "--limit", "1"]),
        format!("note: message #1 of {total} shown; --offset 2 shows the next\n")
    );
    assert_eq!(
        note(&["--offset", "999"]),
        format!(
            "note: --offset 999 is past the session's end: it has {total} messages (#0–#{})\n",
            total - 1
        )
    );
    let out = sb
        .acmd()
        .args(["sessions", "show", "no-such-session"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session"));
}

#[test]
fn a_bad_hook_command_line_never_blocks_the_agent() {
    let sb = Sandbox::new();
    let t = grow_transcript(&sb, 1);
    let payload = stop_payload(&t, &session_id_of(&t));
    for args in [
        vec!["hook"],
        vec!["hook", "bogus-agent"],
        vec!["--db", "", "hook", "claude", "--unknown-flag"],
    ] {
        let out = sb
            .acmd()
            .args(&args)
            .write_stdin(payload.clone())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let log = std::fs::read_to_string(sb.hook_log()).unwrap();
    assert_eq!(log.matches("bad hook command line").count(), 3, "{log}");
    // An empty MEMTRAIL_DB means "not set": the default store is used and the hook works.
    sb.acmd()
        .env("MEMTRAIL_DB", "")
        .args(["hook", "claude"])
        .write_stdin(payload)
        .assert()
        .success()
        .stdout("");
    assert!(sb.home.join(".local/share/memtrail/memtrail.db").exists());
    // A non-hook command with bad arguments still fails loudly.
    sb.acmd().args(["search"]).assert().failure();
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    sb.json(&["import", "--json"]);
    let mut child = sb
        .cmd()
        .args(["sessions", "show", "3f2a9c4e"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

#[test]
fn a_file_that_is_not_a_store_is_named_as_such() {
    let sb = Sandbox::new();
    let bad = sb.home.join("not-a-db");
    std::fs::write(&bad, vec![b'x'; 8192]).unwrap();
    let out = sb
        .acmd()
        .args(["--db", bad.to_str().unwrap(), "sessions", "list"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not a memtrail store"), "{err}");
    assert_eq!(
        err.matches("not a memtrail store").count(),
        1,
        "said once: {err}"
    );
    assert!(!err.contains("Error code"), "no raw SQLite text: {err}");
    // status still shows the registration, and is not healthy.
    std::fs::create_dir_all(sb.claude_dir()).unwrap();
    let out = sb
        .acmd()
        .args(["--db", bad.to_str().unwrap(), "status"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("hook Stop:"), "{text}");
    assert!(text.contains("cannot be read"), "{text}");
}

#[test]
fn reading_commands_do_not_create_the_store() {
    let sb = Sandbox::new();
    let db = sb.home.join(".local/share/memtrail/memtrail.db");
    let list = sb.json(&["sessions", "list", "--json"]);
    assert_eq!(list["sessions"].as_array().unwrap().len(), 0);
    let hits = sb.json(&["search", "anything", "--json"]);
    assert_eq!(hits["hits"].as_array().unwrap().len(), 0);
    assert!(!db.exists());
}

/// Gemini CLI: the AfterAgent hook as Gemini fires it (JSON on stdin), turn by turn, with the
/// rewind of turn 2 honoured; then `import` over a whole `~/.gemini` (legacy `.json`, migrated
/// `.jsonl`, a sub-agent) with counts per agent, a no-op the second time.
#[test]
fn gemini_after_agent_hook_and_import() {
    let sb = Sandbox::new();
    let chats = sb.home.join(".gemini/tmp/weather-app/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let t = chats.join("session-2026-03-14T09-30-4f1c2a9e.jsonl");
    let sid = "4f1c2a9e-7b3d-4e8a-9c21-5d6e7f8a9b0c";
    let mut counts = Vec::new();
    for turn in 1..=3 {
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(format!("fixtures/gemini/grow-turn{turn}.jsonl")),
            &t,
        )
        .unwrap();
        let payload = json!({"session_id": sid, "transcript_path": t, "cwd": "/home/user/src/weather-app",
            "hook_event_name": "AfterAgent", "timestamp": "2026-03-14T09:40:00.000Z",
            "prompt": "x", "prompt_response": "y", "stop_hook_active": false});
        let out = sb
            .acmd()
            .args(["hook", "gemini"])
            .write_stdin(payload.to_string())
            .output()
            .unwrap();
        assert!(out.status.success());
        assert!(out.stdout.is_empty(), "AfterAgent prints nothing");
        let v = sb.json(&["sessions", "show", sid, "--json"]);
        counts.push(v["messages"].as_array().unwrap().len());
    }
    // Per the fixture README: 4 messages after turn 1, 7 after turn 2 (rewind applied), 11 after 3.
    assert_eq!(counts, [4, 7, 11]);
    let hits = sb.json(&["search", "Сначала запусти", "--json"]);
    assert_eq!(
        hits["hits"].as_array().unwrap().len(),
        0,
        "the rewound prompt is gone"
    );
    let hits = sb.json(&[
        "search",
        "Тесты parse прошли",
        "--agent",
        "gemini",
        "--json",
    ]);
    assert_eq!(hits["hits"][0]["session_id"], sid);
    assert_eq!(hits["hits"][0]["agent"], "gemini");

    // Import of a whole Gemini home, plus Claude's: counts per agent; the second run adds nothing.
    let sb = Sandbox::new();
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/gemini/home/.gemini"),
        &sb.home.join(".gemini"),
    );
    sb.install_fixture_projects();
    let first = sb.json(&["import", "--json"]);
    let by = |v: &Value, agent: &str, key: &str| {
        v["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == agent)
            .unwrap()[key]
            .as_u64()
            .unwrap()
    };
    assert!(by(&first, "gemini", "messages") > 0, "{first}");
    assert!(by(&first, "claude", "messages") > 0, "{first}");
    assert_eq!(
        by(&first, "gemini", "files"),
        4,
        "the .json twin of a .jsonl and the sidecar are skipped: {first}"
    );
    let second = sb.json(&["import", "--json"]);
    assert_eq!(by(&second, "gemini", "messages"), 0, "{second}");
    assert_eq!(by(&second, "claude", "messages"), 0, "{second}");
}

/// Builds a hook's input from the transcript path: (stdin, extra arguments).
type PayloadFn<'a> = dyn Fn(&Path) -> (Option<String>, Vec<String>) + 'a;

/// Fire `memtrail hook <agent>` for each growing turn of a fixture, placed where the agent keeps
/// it, with the payload built by `payload` (stdin, or argv for Codex notify). Checks: exit 0,
/// stdout empty, each turn adds messages without duplicates, and a word of the last user prompt
/// is found in that session. Returns the session id.
fn check_hook_flow(
    sb: &Sandbox,
    agent: &str,
    fixture: &str,
    dest: &Path,
    payload: &PayloadFn<'_>,
) -> String {
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    // Install as a user would, remembering every file of the home first.
    let before = snapshot(&sb.home);
    let out = sb
        .acmd()
        .args(["install", "--agent", agent, "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{agent} install: {out:?}");
    assert_ne!(
        snapshot(&sb.home),
        before,
        "{agent}: install changed something"
    );
    let mut counts = Vec::new();
    for turn in 1..=3 {
        let src =
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/{fixture}{turn}.jsonl"));
        std::fs::copy(src, dest).unwrap();
        let (stdin, args) = payload(dest);
        let mut cmd = sb.acmd();
        cmd.args(["hook", agent]).args(&args);
        if let Some(s) = stdin {
            cmd.write_stdin(s);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{agent}: {out:?}");
        assert!(
            out.stdout.is_empty(),
            "{agent}: stdout {:?}",
            String::from_utf8_lossy(&out.stdout)
        );
        let list = sb.json(&["sessions", "list", "--agent", agent, "--json"]);
        let sessions = list["sessions"].as_array().unwrap();
        assert_eq!(sessions.len(), 1, "{agent} turn {turn}: {list}");
        counts.push(sessions[0]["messages"].as_u64().unwrap());
    }
    assert!(
        counts[0] > 0 && counts[0] < counts[1] && counts[1] < counts[2],
        "{agent}: {counts:?}"
    );
    if let Ok(log) = std::fs::read_to_string(sb.hook_log()) {
        assert!(!log.contains(" error: "), "{agent}: {log}");
    }
    let list = sb.json(&["sessions", "list", "--agent", agent, "--json"]);
    let sid = list["sessions"][0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let v = sb.json(&["sessions", "show", &sid, "--json"]);
    let msgs = v["messages"].as_array().unwrap();
    let mut ids: Vec<&str> = msgs.iter().map(|m| m["id"].as_str().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), msgs.len(), "{agent}: no duplicate ids");
    let last_prompt = msgs
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["text"].as_str())
        .unwrap()
        .to_string();
    let word = last_prompt
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 4)
        .max_by_key(|w| w.chars().count())
        .unwrap_or_else(|| panic!("{agent}: a word in {last_prompt:?}"))
        .to_string();
    let hits = sb.json(&["search", &word, "--agent", agent, "--json"]);
    assert!(
        hits["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["session_id"] == sid.as_str()),
        "{agent}: {word}: {hits}"
    );
    // Uninstall gives back every file byte for byte (memtrail's own store, state and the
    // transcript the test wrote aside).
    sb.acmd()
        .args(["uninstall", "--agent", agent, "--yes"])
        .assert()
        .success();
    let mut after = snapshot(&sb.home);
    after.retain(|p, _| !sb.home.join(p).starts_with(dest.parent().unwrap()));
    let mut before = before;
    before.retain(|p, _| !sb.home.join(p).starts_with(dest.parent().unwrap()));
    assert_eq!(after, before, "{agent}: uninstall restores every file");
    sid
}

/// Every file below `home` (relative path → bytes), except memtrail's own store and state.
fn snapshot(home: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![home.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.ends_with(".local/share/memtrail") || p.ends_with(".local/state/memtrail") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(home).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap_or_default(),
                );
            }
        }
    }
    out
}

#[test]
fn codex_notify_argv_and_hooks_json_stdin() {
    let sb = Sandbox::new();
    let dest = sb
        .home
        .join(".codex/sessions/2026/03/14/rollout-2026-03-14T10-12-33-019ceb9e-6984-7a3c-a9b4-1e2d07f85c61.jsonl");
    // `notify`: the JSON payload is the last argument; no transcript path in it, so the rollout
    // is found from the thread id.
    let sid = check_hook_flow(&sb, "codex", "codex/legacy-turn", &dest, &|_| {
        let notify = json!({"type": "agent-turn-complete", "thread-id": "019ceb9e-6984-7a3c-a9b4-1e2d07f85c61",
            "turn-id": "t1", "cwd": "/home/user/projects/kana-slug",
            "input-messages": ["x"], "last-assistant-message": "y"});
        (None, vec![notify.to_string()])
    });
    assert_eq!(sid, "019ceb9e-6984-7a3c-a9b4-1e2d07f85c61");

    // hooks.json Stop: a Claude-compatible payload on stdin with transcript_path.
    let sb = Sandbox::new();
    let dest = sb
        .home
        .join(".codex/sessions/2026/09/22/rollout-2026-09-22T01-03-07-01a0c4b4-ef41-7b8e-a2a5-c37d19f04e6a.jsonl");
    check_hook_flow(&sb, "codex", "codex/paginated-turn", &dest, &|p| {
        let stop = json!({"session_id": "01a0c4b4-ef41-7b8e-a2a5-c37d19f04e6a", "transcript_path": p,
            "cwd": "/home/user/src/tomlette", "hook_event_name": "Stop", "model": "gpt-5.2-codex",
            "turn_id": "t", "stop_hook_active": false, "last_assistant_message": "done"});
        (Some(stop.to_string()), vec![])
    });
}

#[test]
fn cursor_stop_hook() {
    let sb = Sandbox::new();
    let conv = "5b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d";
    let dest = sb.home.join(format!(
        ".cursor/projects/home-user-demo/agent-transcripts/{conv}.jsonl"
    ));
    check_hook_flow(&sb, "cursor", "cursor/grow-turn", &dest, &|p| {
        let stop = json!({"conversation_id": conv, "generation_id": "g1", "hook_event_name": "stop",
            "workspace_roots": ["/home/user/demo"], "transcript_path": p, "status": "completed",
            "cursor_version": "2.4.21", "loop_count": 0});
        (Some(stop.to_string()), vec![])
    });
}

#[test]
fn vscode_stop_hook() {
    let sb = Sandbox::new();
    let sid = "c3a9e1f4-7b2d-4e8a-9f6c-1d5b3a7e2c90";
    let dest = sb.home.join(format!(
        ".config/Code/User/workspaceStorage/0a1b2c/GitHub.copilot-chat/transcripts/{sid}.jsonl"
    ));
    check_hook_flow(&sb, "vscode", "vscode/grow-turn", &dest, &|p| {
        let stop = json!({"timestamp": "2026-03-02T09:05:00.000Z", "cwd": "/home/user/demo",
            "sessionId": sid, "hookEventName": "Stop", "transcript_path": p, "stop_hook_active": false});
        (Some(stop.to_string()), vec![])
    });
}

/// OpenCode: the plugin's `session.idle` payload; the session is read from OpenCode's own
/// database (built here with OpenCode's schema from the fixture's storage tree), read-only.
#[test]
fn opencode_session_idle_hook_reads_the_database() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home.join(".config/opencode")).unwrap();
    let before_install = snapshot(&sb.home);
    sb.acmd()
        .args(["install", "--agent", "opencode", "--yes"])
        .assert()
        .success();
    assert!(
        sb.home
            .join(".config/opencode/plugins/memtrail.ts")
            .is_file()
    );
    let data = sb.home.join(".local/share/opencode");
    std::fs::create_dir_all(&data).unwrap();
    let db = data.join("opencode.db");
    let storage = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/opencode/storage");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("PRAGMA journal_mode = WAL;").unwrap();
    conn.execute_batch(include_str!("../../fixtures/opencode/schema-v1.sql"))
        .unwrap();
    let load =
        |p: PathBuf| -> Value { serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap() };
    let sess_dir = std::fs::read_dir(storage.join("session"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let sess_file = std::fs::read_dir(&sess_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let s = load(sess_file);
    let sid = s["id"].as_str().unwrap().to_string();
    conn.execute(
        "INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) VALUES (?1, ?2, 'git', 1, 1, '[]')",
        rusqlite::params![s["projectID"].as_str().unwrap(), s["directory"].as_str().unwrap()],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
        rusqlite::params![sid, s["projectID"].as_str().unwrap(), s["slug"].as_str().unwrap_or(""),
            s["directory"].as_str().unwrap(), s["title"].as_str().unwrap_or(""), s["version"].as_str().unwrap_or(""),
            s["time"]["created"].as_i64().unwrap()],
    )
    .unwrap();
    let mut msg_files: Vec<PathBuf> = std::fs::read_dir(storage.join("message").join(&sid))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    msg_files.sort();
    let idle = |sb: &Sandbox| {
        let payload = json!({"hook_event_name": "session.idle", "session_id": sid, "cwd": "/w", "db_path": db});
        sb.acmd()
            .args(["hook", "opencode"])
            .write_stdin(payload.to_string())
            .assert()
            .success()
            .stdout("");
        let v = sb.json(&["sessions", "show", &sid, "--json"]);
        v["messages"].as_array().unwrap().len()
    };
    let mut counts = Vec::new();
    for (i, mf) in msg_files.iter().enumerate() {
        let mut m = load(mf.clone());
        let obj = m.as_object_mut().unwrap();
        let mid = obj.remove("id").unwrap();
        obj.remove("sessionID");
        // Each message is written a minute after the previous one (and after the session row).
        let t = s["time"]["created"].as_i64().unwrap() + 60_000 * (i as i64 + 1);
        conn.execute(
            "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)",
            rusqlite::params![mid.as_str().unwrap(), sid, t, m.to_string()],
        )
        .unwrap();
        let mut parts: Vec<PathBuf> =
            std::fs::read_dir(storage.join("part").join(mid.as_str().unwrap()))
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
        parts.sort();
        for pf in parts {
            let mut p = load(pf);
            let o = p.as_object_mut().unwrap();
            let pid = o.remove("id").unwrap();
            o.remove("messageID");
            o.remove("sessionID");
            conn.execute(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                rusqlite::params![pid.as_str().unwrap(), mid.as_str().unwrap(), sid, t, p.to_string()],
            )
            .unwrap();
        }
        counts.push(idle(&sb));
    }
    // Each message added (with a watermark overlap that re-reads recent rows) appears exactly once.
    assert_eq!(counts.len(), msg_files.len());
    // fixtures/opencode/README.md: the session is 4 messages, one more after each insert.
    assert_eq!(counts, [1, 2, 3, 4]);
    let before = std::fs::read(&db).unwrap();
    assert_eq!(
        idle(&sb),
        *counts.last().unwrap(),
        "a repeated idle adds nothing"
    );
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "OpenCode's database is never written"
    );
    let list = sb.json(&["sessions", "list", "--agent", "opencode", "--json"]);
    assert_eq!(list["sessions"][0]["session_id"], sid.as_str());
    // Uninstall restores every file (OpenCode's own data folder aside, which the test wrote).
    sb.acmd()
        .args(["uninstall", "--agent", "opencode", "--yes"])
        .assert()
        .success();
    let mut after = snapshot(&sb.home);
    after.retain(|p, _| !p.starts_with(".local/share/opencode"));
    assert_eq!(after, before_install);
}

/// The user's own Codex `notify` program keeps running: install chains it after `--then`, and
/// the hook runs it with the same arguments (the payload last), whatever memtrail does.
#[cfg(unix)]
#[test]
fn codex_notify_runs_the_users_program_too() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let out = sb.home.join("notified.txt");
    let script = sb.home.join("my-notify.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > {}.tmp && mv {0}.tmp {0}\n",
            out.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let payload =
        json!({"type": "agent-turn-complete", "thread-id": "019ceb9e-0000-7000-8000-000000000000",
        "turn-id": "t", "cwd": "/w", "input-messages": [], "last-assistant-message": "ok"})
        .to_string();
    sb.acmd()
        .args([
            "hook",
            "codex",
            "--then",
            script.to_str().unwrap(),
            "--sound",
            "ping",
            &payload,
        ])
        .assert()
        .success()
        .stdout("");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !out.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let got = std::fs::read_to_string(&out).expect("the user's notify program ran");
    assert_eq!(got, format!("--sound\nping\n{payload}\n"));
}

/// `doctor` runs the installed hook program as the agent would, and catches a hook whose
/// binary no longer exists.
#[test]
fn doctor_runs_installed_hooks_and_catches_a_missing_binary() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.claude_dir()).unwrap();
    sb.acmd()
        .args(["install", "--agent", "claude", "--yes"])
        .assert()
        .success();
    let ok = sb.json(&["doctor", "--json"]);
    assert_eq!(ok["problems"].as_array().unwrap().len(), 0, "{ok}");
    assert_eq!(ok["hook_programs_checked"], 1);

    // Install from a copy of the binary, then delete the copy: every hook now fails.
    let copy = sb.home.join("bin/memtrail");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_memtrail"), &copy).unwrap();
    let st = run_copy(&copy, &sb, &["install", "--agent", "claude", "--yes"]).status;
    assert!(st.success());
    std::fs::remove_file(&copy).unwrap();
    let out = sb.acmd().args(["doctor"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("does not exist"), "{text}");
    assert!(
        text.contains("fix: memtrail install --agent claude"),
        "{text}"
    );
    // The fix works.
    sb.acmd()
        .args(["install", "--agent", "claude", "--yes"])
        .assert()
        .success();
    let ok = sb.json(&["doctor", "--json"]);
    assert_eq!(ok["problems"].as_array().unwrap().len(), 0, "{ok}");
}

/// A hook program whose path has a space and a quote in it is run by `doctor` as the agent
/// runs it: Copilot CLI's hooks name the program alone, and doctor made the command line from
/// it unquoted (exit 127).
/// Run a copy of memtrail's binary (`copy`) in `sb`'s sandboxed environment. A copy just
/// written may be "text file busy" for a moment: another test's child forked while the copy's
/// descriptor was open holds it until it execs.
fn run_copy(copy: &std::path::Path, sb: &Sandbox, args: &[&str]) -> std::process::Output {
    for _ in 0..100 {
        match std::process::Command::new(copy)
            .env_clear()
            .env("HOME", &sb.home)
            .env("XDG_STATE_HOME", sb.home.join(".local/state"))
            .env("XDG_DATA_HOME", sb.home.join(".local/share"))
            .env("XDG_CONFIG_HOME", sb.home.join(".config"))
            .env("CLAUDE_CONFIG_DIR", sb.claude_dir())
            .args(args)
            .output()
        {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            r => return r.unwrap(),
        }
    }
    panic!("{} stays busy", copy.display())
}

#[test]
fn doctor_runs_a_hook_program_whose_path_has_a_space_and_a_quote() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home.join(".copilot")).unwrap();
    let copy = sb.home.join("my bin's/memtrail");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_memtrail"), &copy).unwrap();
    let run = |args: &[&str]| run_copy(&copy, &sb, args);
    let out = run(&["install", "--agent", "copilotcli", "--yes"]);
    assert!(out.status.success(), "{out:?}");
    let out = run(&["doctor", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert!(doc["hook_programs_checked"].as_u64().unwrap() >= 1, "{doc}");
    assert_eq!(doc["problems"].as_array().unwrap().len(), 0, "{doc}");
}

#[test]
fn uninstall_purge_needs_a_confirmation() {
    let sb = Sandbox::new();
    install_claude_over_fixtures(&sb);
    let settings = sb.claude_dir().join("settings.json");
    let installed = std::fs::read(&settings).unwrap();
    let db = sb.home.join(".local/share/memtrail/memtrail.db");
    // A dry run shows the uninstall's diff and what --purge would delete, and changes nothing.
    crate::support::write_tiny_model(
        &sb.home
            .join(".local/share/memtrail/models/minilm-l6-static"),
    );
    let out = sb
        .acmd()
        .args(["uninstall", "--agent", "claude", "--purge", "--dry-run"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let state = sb.home.join(".local/state/memtrail");
    let models = sb.home.join(".local/share/memtrail/models");
    // The diffs, then what they add up to.
    assert!(
        text.contains("Claude Code: would uninstall (")
            && text.contains("Nothing was changed (a dry run).\n"),
        "{text}"
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("--purge would delete "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains(&format!("the store {} (", db.display())),
        "{line}"
    );
    assert!(
        line.contains(&format!("memtrail's state {} (", state.display())),
        "{line}"
    );
    assert!(
        line.contains(&format!("the models {} (", models.display())),
        "{line}"
    );
    assert!(db.exists() && state.exists() && models.exists());
    assert_eq!(std::fs::read(&settings).unwrap(), installed);
    let out = sb
        .acmd()
        .args(["uninstall", "--agent", "claude", "--purge"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("add --yes"));
    assert!(db.exists());
    // Refused before anything changed: the registration is still there.
    assert_eq!(std::fs::read(&settings).unwrap(), installed);
    // `--purge` is an uninstall flag: `install --help` does not offer it, `install` rejects it.
    let help = |sub: &str| {
        let out = sb.acmd().args([sub, "--help"]).output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(!help("install").contains("--purge"), "{}", help("install"));
    assert!(
        help("uninstall").contains("--purge"),
        "{}",
        help("uninstall")
    );
    let out = sb.acmd().args(["install", "--purge"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unexpected argument '--purge' found"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sb.acmd()
        .args(["uninstall", "--agent", "claude", "--purge", "--yes"])
        .assert()
        .success();
    assert!(!db.exists() && !state.exists());
    assert!(
        !sb.home.join(".local/share/memtrail").exists(),
        "the models and the data folder go too"
    );
    // A `status` to check writes nothing back.
    sb.acmd().args(["status"]).output().unwrap();
    assert!(!state.exists() && !sb.home.join(".local/share/memtrail").exists());
}

/// `doctor` reports a Codex hook that Codex does not trust yet (it skips untrusted hooks), with
/// the way to trust it said once, as a notice (exit 0), as `status` does: notify captures
/// meanwhile.
#[test]
fn doctor_reports_untrusted_codex_hooks() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home.join(".codex")).unwrap();
    sb.acmd()
        .args(["install", "--agent", "codex", "--yes"])
        .assert()
        .success();
    let out = sb.acmd().args(["doctor"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let reason = "not trusted yet; open /hooks in Codex and trust memtrail's hooks (until then memtrail captures through `notify` only)";
    let expected = format!(
        "codex: notice (not a failure): hook SessionStart, hook PreCompact and hook Stop will not run: {reason}\n\
         no problems found (1 hook program run)\n"
    );
    assert_eq!(text, expected);
    let j = sb.json(&["doctor", "--json"]);
    assert_eq!(j["problems"], serde_json::json!([]));
    assert_eq!(j["notices"].as_array().unwrap().len(), 3, "{j}");
    // status says the same, as a notice: healthy (notify captures meanwhile).
    let out = sb.acmd().args(["status", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let st: Value = serde_json::from_slice(&out.stdout).unwrap();
    let codex = st["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "codex")
        .unwrap();
    assert!(
        codex["registration"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["state"] == "untrusted"),
        "{codex}"
    );
}

/// `memtrail import` with no flags imports every agent it finds, with counts per agent, and is
/// a no-op the second time.
#[test]
fn import_reads_every_agent_once() {
    let sb = Sandbox::new();
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    sb.install_fixture_projects();
    copy_tree(&fx.join("gemini/home/.gemini"), &sb.home.join(".gemini"));
    let place = |src: &str, dst: &str| {
        let d = sb.home.join(dst);
        std::fs::create_dir_all(d.parent().unwrap()).unwrap();
        std::fs::copy(fx.join(src), d).unwrap();
    };
    place(
        "codex/legacy-turn3.jsonl",
        ".codex/sessions/2026/03/14/rollout-2026-03-14T10-12-33-019ceb9e-6984-7a3c-a9b4-1e2d07f85c61.jsonl",
    );
    place(
        "cursor/grow-turn3.jsonl",
        ".cursor/projects/home-user-demo/agent-transcripts/5b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d.jsonl",
    );
    place(
        "vscode/grow-turn3.jsonl",
        ".config/Code/User/workspaceStorage/0a1b2c/GitHub.copilot-chat/transcripts/c3a9e1f4-7b2d-4e8a-9f6c-1d5b3a7e2c90.jsonl",
    );
    place(
        "vscode/chat-session.json",
        ".config/Code/User/workspaceStorage/0a1b2c/chatSessions/9d8e7f6a-0000-4000-8000-000000000001.json",
    );
    place(
        "vscode/workspace.json",
        ".config/Code/User/workspaceStorage/0a1b2c/workspace.json",
    );
    copy_tree(
        &fx.join("opencode/storage"),
        &sb.home.join(".local/share/opencode/storage"),
    );

    let first = sb.json(&["import", "--json"]);
    let agents = first["agents"].as_array().unwrap();
    for agent in ["claude", "codex", "gemini", "cursor", "vscode", "opencode"] {
        let a = agents
            .iter()
            .find(|a| a["agent"] == agent)
            .unwrap_or_else(|| panic!("{agent} in {first}"));
        assert!(a["messages"].as_u64().unwrap() > 0, "{agent}: {a}");
        assert!(a["sessions"].as_u64().unwrap() > 0, "{agent}: {a}");
        assert_eq!(a["unreadable"].as_array().unwrap().len(), 0, "{agent}: {a}");
    }
    let second = sb.json(&["import", "--json"]);
    for a in second["agents"].as_array().unwrap() {
        assert_eq!(a["messages"], 0, "{second}");
        assert_eq!(a["changed_files"], 0, "{second}");
    }
    // The plain output gives a line per agent.
    let out = sb.acmd().args(["import"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for agent in [
        "claude:",
        "codex:",
        "gemini:",
        "cursor:",
        "vscode:",
        "opencode:",
    ] {
        assert!(text.contains(agent), "{text}");
    }
}

#[test]
fn gemini_after_agent_hook_with_install_and_uninstall() {
    let sb = Sandbox::new();
    let sid = "4f1c2a9e-7b3d-4e8a-9c21-5d6e7f8a9b0c";
    let dest = sb
        .home
        .join(".gemini/tmp/weather-app/chats/session-2026-03-14T09-30-4f1c2a9e.jsonl");
    let got = check_hook_flow(&sb, "gemini", "gemini/grow-turn", &dest, &|p| {
        let after = json!({"session_id": sid, "transcript_path": p, "cwd": "/home/user/src/weather-app",
            "hook_event_name": "AfterAgent", "timestamp": "2026-03-14T09:40:00.000Z",
            "prompt": "x", "prompt_response": "y", "stop_hook_active": false});
        (Some(after.to_string()), vec![])
    });
    assert_eq!(got, sid);
}

/// Another process rewrites `.claude.json` in a loop (read, add a key, write a temp file,
/// rename it over the original unless the file changed meanwhile: how a careful program such
/// as Claude Code saves it) while `memtrail install` runs: neither write is lost.
#[cfg(unix)]
#[test]
fn install_while_another_process_rewrites_claude_json() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.claude_dir()).unwrap();
    let global = sb.claude_dir().join(".claude.json");
    let projects: serde_json::Map<String, Value> = (0..3000)
        .map(|i| {
            (
                format!("/home/user/p{i}"),
                json!({"allowedTools": [], "history": ["x", "y", "z"]}),
            )
        })
        .collect();
    std::fs::write(
        &global,
        serde_json::to_string_pretty(&json!({"numStartups": 3, "projects": projects})).unwrap(),
    )
    .unwrap();
    let writer = r#"
import json, os, sys, time
path, n = sys.argv[1], int(sys.argv[2])
def ident(st): return (st.st_ino, st.st_size, st.st_mtime_ns)
for i in range(n):
    while True:
        with open(path, "rb") as f:
            seen = ident(os.fstat(f.fileno())); v = json.loads(f.read())
        v[f"writer-{i}"] = i
        tmp = f"{path}.writer.tmp"
        with open(tmp, "w") as f: json.dump(v, f, indent=2)
        if ident(os.stat(path)) != seen:
            os.remove(tmp); continue
        os.rename(tmp, path); break
    if i == 0: print("started", flush=True)
    time.sleep(0.003)
"#;
    let mut child = std::process::Command::new("python3")
        .args(["-c", writer, global.to_str().unwrap(), "60"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "started");
    let out = sb
        .acmd()
        .args(["install", "--agent", "claude", "--yes"])
        .output()
        .unwrap();
    // The writer ends on its own (60 writes); wait for it before judging, so that a failed
    // install does not remove the sandbox under it.
    let writer_ok = child.wait().unwrap().success();
    assert!(
        out.status.success(),
        "install failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(writer_ok, "the other writer failed");
    let v: Value = serde_json::from_slice(&std::fs::read(&global).unwrap()).unwrap();
    assert!(
        v["mcpServers"]["memtrail"].is_object(),
        "memtrail's entry is there"
    );
    for i in 0..60 {
        assert_eq!(
            v[format!("writer-{i}")],
            i,
            "the other process's key {i} is there"
        );
    }
    assert_eq!(v["projects"].as_object().unwrap().len(), 3000);
}

/// The grow fixture's last turn with its project moved into the sandbox (`project`), where
/// Claude Code keeps transcripts. Returns (transcript, session id).
fn transcript_in(sb: &Sandbox, project: &Path) -> (PathBuf, String) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/claude/grow-turn3.jsonl");
    let sid = session_id_of(&src);
    let text = std::fs::read_to_string(&src)
        .unwrap()
        .replace("/home/user/demo", project.to_str().unwrap());
    let dst = sb
        .claude_dir()
        .join(format!("projects/-sandbox-demo/{sid}.jsonl"));
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    std::fs::write(&dst, text).unwrap();
    (dst, sid)
}

fn hook_json(sb: &Sandbox, payload: Value) -> Option<Value> {
    let out = sb
        .acmd()
        .args(["hook", "claude"])
        .write_stdin(payload.to_string())
        .output()
        .unwrap();
    assert!(out.status.success());
    (!out.stdout.is_empty()).then(|| serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn compaction_snapshot_resume_and_handoff() {
    let sb = Sandbox::new();
    let project = sb.home.join("demo");
    std::fs::create_dir_all(project.join("src")).unwrap();
    let (t, sid) = transcript_in(&sb, &project);
    let payload = |event: &str, extra: Value| {
        let mut v = json!({"session_id": sid, "transcript_path": t, "cwd": project,
                           "hook_event_name": event});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    // PreCompact ingests, snapshots, and prints nothing (Claude Code reads no reply there).
    assert_eq!(
        hook_json(
            &sb,
            payload(
                "PreCompact",
                json!({"trigger": "manual", "custom_instructions": ""})
            )
        ),
        None
    );
    // SessionStart "compact": the snapshot, as Claude Code's additionalContext.
    let reply = hook_json(&sb, payload("SessionStart", json!({"source": "compact"}))).unwrap();
    assert_eq!(reply["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let ctx = reply["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    let header = format!(
        "memtrail: the working state of this session (claude session {sid}) before its compaction"
    );
    assert!(ctx.starts_with(&header), "{ctx}");
    // The project is named inside the recalled-data frame, not before it.
    let frame = ctx.find("\n<memtrail-recalled-").unwrap();
    assert!(
        ctx[frame..].contains(&format!("\nProject: {}\n", project.display())),
        "{ctx}"
    );
    for needle in [
        "## Last request [prompt]\n- No, don't delete anything. Just summarise the diff. 🙂\n",
        "## Files changed [file]\n- README.ar.md (written, +3 -0)\n- src/lib.rs (",
        "## Decisions [decision]\n- No, don't delete anything.\n",
        "## Goal [prompt]\n- このリポジトリのテストを実行してください 🧪\n",
    ] {
        assert!(ctx.contains(needle), "{needle:?} not in:\n{ctx}");
    }
    // `memtrail resume` from the project (or below it) prints the same snapshot.
    // (The injection frames it as recalled data: the snapshot ends at the closing tag.)
    let snapshot = &ctx[ctx.find("Working state of claude session").unwrap()..];
    let snapshot = &snapshot[..snapshot.rfind("\n</memtrail-recalled-").unwrap()];
    let out = sb
        .acmd()
        .arg("resume")
        .current_dir(project.join("src"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // Piped (an agent may read it): framed as recalled data, as the injection frames it.
    let (tag, framed) = memtrail_runtime::resume::quote(snapshot);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!(
            "{}\n\n{framed}\n",
            memtrail_runtime::resume::quote_notice(&tag)
        )
    );
    // On a terminal (a person reads it): the snapshot as it is.
    let tty = crate::terminal::on_a_pty(&sb, 200, &["resume", &sid[..8]], &[]);
    assert_eq!(tty, format!("{snapshot}\n"));
    // Within the byte budget, and JSON.
    let v = sb.json(&["resume", &sid[..8], "--budget", "300", "--json"]);
    assert!(
        v["recalled"].as_str().unwrap().contains("not instructions"),
        "{v}"
    );
    assert_eq!(v["session"]["session_id"], sid.as_str());
    assert_eq!(v["snapshot"]["budget"], 300);
    let text = v["snapshot"]["text"].as_str().unwrap();
    assert!(
        text.len() <= 300 && text.contains("## Last request [prompt]"),
        "{text}"
    );
    // From a folder of no project: a clear error.
    let out = sb
        .acmd()
        .arg("resume")
        .current_dir(&sb.home)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!(
            "no session of a project at or above {} in the store",
            sb.home.display()
        )),
        "{out:?}"
    );

    // A new session of the same project starts with one pointer line.
    let start = hook_json(
        &sb,
        json!({"session_id": "n-1", "cwd": project, "hook_event_name": "SessionStart", "source": "startup"}),
    )
    .unwrap();
    assert_eq!(
        start["hookSpecificOutput"]["additionalContext"],
        "memtrail has 1 earlier session of this project, the latest on 2026-03-02; search them with the `mcp__memtrail__search` tool (or `memtrail search --json QUERY`) before redoing past work."
    );

    // The handoff to Codex.
    let out = sb
        .acmd()
        .args(["handoff", &sid[..8], "--to", "codex"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let doc = String::from_utf8(out.stdout).unwrap();
    // Without an id, from the project's folder: its latest session, as `resume` takes it.
    let here = sb
        .acmd()
        .args(["handoff", "--to", "codex"])
        .current_dir(project.join("src"))
        .output()
        .unwrap();
    assert!(here.status.success(), "{here:?}");
    assert_eq!(String::from_utf8(here.stdout).unwrap(), doc);
    for needle in [
        "# Handoff: continuing a Claude Code session in Codex CLI\n",
        "- First request: このリポジトリのテストを実行してください 🧪\n",
        // The `rm -rf target` the user declined at the permission prompt is a decision, not
        // an open problem.
        "## Decisions\n\n- declined Bash: rm -rf target\n- No, don't delete anything.\n",
        "## Current state\n\n- Last request: No, don't delete anything. Just summarise the diff. 🙂\n- Before that: Покажи git diff, пожалуйста 🙏\n",
        "- Last answer: 差分: src/lib.rs の1行だけ変更 (x → n)、README.ar.md は新規です 👍\n",
        "## Files changed\n\n- src/lib.rs (edited)\n- README.ar.md (written)\n",
        "`mcp__memtrail__search`",
        &format!("`memtrail resume {sid}`"),
    ] {
        assert!(doc.contains(needle), "{needle:?} not in:\n{doc}");
    }
    assert!(!doc.contains("## Open problems"), "{doc}");
    // --help documents both commands.
    let out = sb.acmd().args(["resume", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(
        help.contains("--budget <BYTES>") && help.contains("--json"),
        "{help}"
    );
    let out = sb.acmd().args(["handoff", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("--to <AGENT>"), "{help}");
}

#[test]
fn codex_precompact_then_session_start_compact_injects_the_snapshot() {
    // A real Codex rollout and real Codex hook payloads (tests/e2e/payloads, captured from
    // codex-cli 0.171.0), moved into the sandbox. Codex's PreCompact and SessionStart "compact"
    // have the shape of its other hook events (`docs/agents/codex.md`: `trigger`, `source`).
    let sb = Sandbox::new();
    let project = sb.home.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let payloads = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/payloads");
    let fix = |s: String| {
        s.replace(
            "/home/user/.codex",
            sb.home.join(".codex").to_str().unwrap(),
        )
        .replace("/home/user/project", project.to_str().unwrap())
    };
    let read = |name: &str| fix(std::fs::read_to_string(payloads.join(name)).unwrap());
    let start: Value = serde_json::from_str(&read("codex-SessionStart-resume.json")).unwrap();
    let rollout = PathBuf::from(start["transcript_path"].as_str().unwrap());
    std::fs::create_dir_all(rollout.parent().unwrap()).unwrap();
    std::fs::write(&rollout, read("codex-rollout-3turns.jsonl")).unwrap();
    let sid = start["session_id"].as_str().unwrap().to_string();

    let run = |v: &Value| {
        let out = sb
            .acmd()
            .args(["hook", "codex"])
            .write_stdin(v.to_string())
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let mut pre: Value = serde_json::from_str(&read("codex-Stop.json")).unwrap();
    pre["hook_event_name"] = json!("PreCompact");
    pre["trigger"] = json!("manual");
    assert_eq!(run(&pre), "", "PreCompact prints nothing");
    let mut compact = start.clone();
    compact["source"] = json!("compact");
    let reply: Value = serde_json::from_str(&run(&compact)).unwrap();
    assert_eq!(reply["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let ctx = reply["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        ctx.starts_with(&format!(
            "memtrail: the working state of this session (codex session {sid}) before its compaction"
        )),
        "{ctx}"
    );
    assert!(ctx.contains("## Last request [prompt]\n- "), "{ctx}");
    // Injected once: a resume right after finds nothing left to inject.
    assert_eq!(run(&start), "");
    // A new session in another folder gets no pointer to this project's sessions.
    let mut other = start.clone();
    other["source"] = json!("startup");
    other["session_id"] = json!("another");
    other["cwd"] = json!(sb.home.join("elsewhere"));
    other["transcript_path"] = Value::Null;
    assert_eq!(run(&other), "");
}

/// With no `--agent`, an agent whose config file does not parse is left out (its file byte for
/// byte untouched) and the other agents are installed; the exit code says not everything was.
#[test]
fn install_leaves_out_an_agent_with_a_broken_config_and_wires_the_others() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.claude_dir()).unwrap();
    let cursor = sb.home.join(".cursor");
    std::fs::create_dir_all(&cursor).unwrap();
    let broken = b"{\"version\": 1, \"hooks\": {\n";
    std::fs::write(cursor.join("hooks.json"), broken).unwrap();
    let out = sb.acmd().args(["install", "--yes"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Cursor") && err.contains("this agent was left out"),
        "{err}"
    );
    assert_eq!(std::fs::read(cursor.join("hooks.json")).unwrap(), broken);
    let settings = std::fs::read_to_string(sb.claude_dir().join("settings.json")).unwrap();
    assert!(
        settings.contains("memtrail"),
        "Claude Code is wired: {settings}"
    );
    // doctor names the file once, with a fix that can work (not an install that fails the same way).
    let out = sb.acmd().args(["doctor"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let cursor_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("cursor:") && l.contains("hooks.json"))
        .collect();
    assert_eq!(cursor_lines.len(), 1, "{text}");
    assert!(
        cursor_lines[0].contains("hooks.json cannot be read (line 1, column 25")
            && cursor_lines[0].contains("fix: repair"),
        "{text}"
    );
    // Named on the command line, the broken agent stops the install before any change.
    let sb2 = Sandbox::new();
    std::fs::create_dir_all(sb2.claude_dir()).unwrap();
    let cursor2 = sb2.home.join(".cursor");
    std::fs::create_dir_all(&cursor2).unwrap();
    std::fs::write(cursor2.join("hooks.json"), broken).unwrap();
    let out = sb2
        .acmd()
        .args(["install", "--agent", "claude", "--agent", "cursor", "--yes"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!sb2.claude_dir().join("settings.json").exists());
}

/// A search while another process holds the write lock cannot index the queue first: it
/// answers with what is indexed and says on stderr that the newest messages were not searched
/// (before, it printed only "No matches" for a message just captured).
#[test]
fn search_while_the_store_is_locked_says_new_messages_were_not_searched() {
    let sb = Sandbox::new();
    let t = grow_transcript(&sb, 1);
    let sid = session_id_of(&t);
    sb.acmd()
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&t, &sid))
        .assert()
        .success();
    let conn = rusqlite::Connection::open(sb.db()).unwrap();
    let queued: i64 = conn
        .query_row("SELECT COUNT(*) FROM fts_pending", [], |r| r.get(0))
        .unwrap();
    assert!(queued > 0, "the hook queued its messages");
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    let out = sb.acmd().args(["search", "the"]).output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{queued} new message")) && err.contains("not searched"),
        "{err}"
    );
    conn.execute_batch("ROLLBACK").unwrap();
    // Once the lock is free, the search indexes the queue and says nothing more.
    let out = sb.acmd().args(["search", "the"]).output().unwrap();
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 11 item 26: a hook that gave up on a locked store leaves its transcript on a pending
/// list, and the next hook of another session catches it up (no `memtrail import` needed).
#[test]
fn a_session_whose_hook_gave_up_on_a_locked_store_is_caught_up_by_the_next_hook() {
    let sb = Sandbox::new();
    let (a, b) = (support::session_id(1), support::session_id(2));
    let (ta, tb) = (sb.transcript("alpha", &a), sb.transcript("beta", &b));
    let lines = |sid: &str, cwd: &str, n: u64| -> String {
        (0..n)
            .map(|i| support::claude_line(sid, cwd, i) + "\n")
            .collect()
    };
    std::fs::write(&ta, lines(&a, "/home/user/alpha", 4)).unwrap();
    std::fs::write(&tb, lines(&b, "/home/user/beta", 2)).unwrap();
    sb.json(&["import", "--json"]);
    // Session alpha goes on while another process holds the write lock: its hook gives up.
    support::append(
        &ta,
        format!("{}\n", support::claude_line(&a, "/home/user/alpha", 4)).as_bytes(),
    );
    let conn = rusqlite::Connection::open(sb.db()).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    sb.acmd()
        .env("MEMTRAIL_HOOK_BUDGET_MS", "200")
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&ta, &a))
        .assert()
        .success()
        .stdout("");
    conn.execute_batch("ROLLBACK").unwrap();
    let pending = sb.home.join(".local/state/memtrail/pending");
    assert_eq!(std::fs::read_dir(&pending).unwrap().count(), 1);
    let count = |sid: &str| -> i64 {
        conn.query_row(
            "SELECT message_count FROM sessions WHERE external_id = ?1",
            [sid],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!(count(&a), 4, "nothing written while the store was locked");
    // Alpha's session is over; the next hook is one of session beta.
    sb.acmd()
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&tb, &b))
        .assert()
        .success()
        .stdout("");
    assert_eq!(count(&a), 5);
    assert_eq!(count(&b), 2);
    assert_eq!(std::fs::read_dir(&pending).unwrap().count(), 0);
}

/// A session that ran and ended while memtrail's config did not parse: its hooks stored
/// nothing (the config decides what is excluded and redacted), and once the file is fixed the
/// next hook, of another session, catches it up. Before, it stayed out of the store until a
/// `memtrail import`, while `status` (whose record keeps the last run of each hook event, by
/// then the other session's successful one) said healthy.
#[test]
fn a_session_whose_hooks_met_a_broken_config_is_caught_up_by_the_next_hook_once_fixed() {
    let sb = Sandbox::new();
    let (a, b) = (support::session_id(1), support::session_id(2));
    let (ta, tb) = (sb.transcript("alpha", &a), sb.transcript("beta", &b));
    let lines = |sid: &str, cwd: &str, n: u64| -> String {
        (0..n)
            .map(|i| support::claude_line(sid, cwd, i) + "\n")
            .collect()
    };
    std::fs::write(&tb, lines(&b, "/home/user/beta", 2)).unwrap();
    sb.json(&["import", "--json"]);
    let cfg = sb.home.join(".config/memtrail/config.toml");
    std::fs::create_dir_all(cfg.parent().unwrap()).unwrap();
    std::fs::write(&cfg, "exclude = [\n").unwrap();
    // Session alpha's whole life while the config is broken: its hook fails open.
    std::fs::write(&ta, lines(&a, "/home/user/alpha", 3)).unwrap();
    sb.acmd()
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&ta, &a))
        .assert()
        .success()
        .stdout("");
    let conn = rusqlite::Connection::open(sb.db()).unwrap();
    let count = |sid: &str| -> i64 {
        conn.query_row(
            "SELECT COALESCE((SELECT message_count FROM sessions WHERE external_id = ?1), 0)",
            [sid],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!(count(&a), 0, "nothing stored while the config is broken");
    // Another session's hook while the config is still broken: alpha stays waiting.
    support::append(
        &tb,
        format!("{}\n", support::claude_line(&b, "/home/user/beta", 2)).as_bytes(),
    );
    sb.acmd()
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&tb, &b))
        .assert()
        .success();
    assert_eq!((count(&a), count(&b)), (0, 2));
    // `status` names what waits for the next hook (beta's new line too, oldest first).
    let waiting = |sb: &Sandbox| {
        let out = sb.acmd().args(["status", "--json"]).output().unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["waiting_for_next_hook"].clone()
    };
    assert_eq!(
        waiting(&sb),
        json!([{"agent": "claude", "path": ta.display().to_string(), "session": a,
                "whole_file_bytes": null, "reading_now": false},
               {"agent": "claude", "path": tb.display().to_string(), "session": b,
                "whole_file_bytes": null, "reading_now": false}])
    );
    // The config fixed; alpha's session is over, the next hook is one of session beta.
    std::fs::write(&cfg, "exclude = []\n").unwrap();
    support::append(
        &tb,
        format!("{}\n", support::claude_line(&b, "/home/user/beta", 3)).as_bytes(),
    );
    sb.acmd()
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&tb, &b))
        .assert()
        .success()
        .stdout("");
    assert_eq!(count(&b), 4);
    assert_eq!(count(&a), 3, "alpha was not caught up by the next hook");
    let pending = sb.home.join(".local/state/memtrail/pending");
    assert_eq!(std::fs::read_dir(&pending).unwrap().count(), 0);
    assert_eq!(waiting(&sb), json!([]));
}

/// A pending folder that is a symlink to another folder (planted by a prompt-injected agent,
/// say): hooks neither read nor delete the files there (before, every hook deleted each file of
/// that folder as a torn entry), and a hook that gives up writes no entry through it.
#[cfg(unix)]
#[test]
fn hooks_never_delete_files_through_a_symlinked_pending_folder() {
    let sb = Sandbox::new();
    let a = support::session_id(1);
    let ta = sb.transcript("alpha", &a);
    support::append(
        &ta,
        format!("{}\n", support::claude_line(&a, "/home/user/alpha", 0)).as_bytes(),
    );
    sb.json(&["import", "--json"]);
    let notes = sb.home.join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(notes.join("todo.txt"), "my notes\n").unwrap();
    std::fs::write(
        notes.join("0123456789abcdef0123456789abcdef"),
        "not an entry",
    )
    .unwrap();
    let pending = sb.home.join(".local/state/memtrail/pending");
    std::fs::create_dir_all(pending.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&notes, &pending).unwrap();
    support::append(
        &ta,
        format!("{}\n", support::claude_line(&a, "/home/user/alpha", 1)).as_bytes(),
    );
    // A hook that gives up on the locked store, then one that runs.
    let conn = rusqlite::Connection::open(sb.db()).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    sb.acmd()
        .env("MEMTRAIL_HOOK_BUDGET_MS", "200")
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&ta, &a))
        .assert()
        .success();
    conn.execute_batch("ROLLBACK").unwrap();
    sb.acmd()
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&ta, &a))
        .assert()
        .success();
    let mut names: Vec<String> = std::fs::read_dir(&notes)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["0123456789abcdef0123456789abcdef", "todo.txt"]);
    assert_eq!(
        std::fs::read_to_string(notes.join("todo.txt")).unwrap(),
        "my notes\n"
    );
    let n: i64 = conn
        .query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 2);
}

/// Files in the pending folder that are not entries memtrail wrote: a FIFO and a symlink to
/// /dev/zero named like entries (planted by a prompt-injected agent, say). A hook reads
/// neither: before, it read each one before checking what it was, so the FIFO hung every hook
/// and the link grew it past 12 GB of memory (attack review).
#[cfg(unix)]
#[test]
fn hooks_read_no_fifo_or_device_in_the_pending_folder() {
    let sb = Sandbox::new();
    let a = support::session_id(1);
    let ta = sb.transcript("alpha", &a);
    support::append(
        &ta,
        format!("{}\n", support::claude_line(&a, "/home/user/alpha", 0)).as_bytes(),
    );
    sb.json(&["import", "--json"]);
    let pending = sb.home.join(".local/state/memtrail/pending");
    std::fs::create_dir_all(&pending).unwrap();
    let fifo = pending.join("0123456789abcdef0123456789abcdef");
    memtrail_testkit::mkfifo(&fifo);
    std::os::unix::fs::symlink(
        "/dev/zero",
        pending.join("fedcba9876543210fedcba9876543210"),
    )
    .unwrap();
    support::append(
        &ta,
        format!("{}\n", support::claude_line(&a, "/home/user/alpha", 1)).as_bytes(),
    );
    sb.acmd()
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&ta, &a))
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .success();
    let conn = rusqlite::Connection::open(sb.db()).unwrap();
    let n: i64 = conn
        .query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 2);
}

/// A hook log that is a FIFO (or a link to /dev/zero) is passed over by `status`, which shows
/// the log's last errors (and so does the web page's status): before, the FIFO hung it and
/// /dev/zero grew it past 8 GB of memory (attack review).
#[cfg(unix)]
#[test]
fn status_reads_no_fifo_as_the_hook_log() {
    let sb = Sandbox::new();
    let state = sb.home.join(".local/state/memtrail");
    std::fs::create_dir_all(&state).unwrap();
    let log = state.join("hook.log");
    memtrail_testkit::mkfifo(&log);
    let out = sb
        .acmd()
        .args(["status", "--json"])
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(v.is_object(), "{v}");
}

/// An agent's config that is a FIFO: `status` (and the web page's status, which runs it in
/// process) and `install` name it as not a regular file instead of hanging on it (attack
/// review: both hung, and a link to /dev/zero grew them without bound).
#[cfg(unix)]
#[test]
fn status_and_install_name_a_fifo_config_instead_of_hanging() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.claude_dir()).unwrap();
    let settings = sb.claude_dir().join("settings.json");
    memtrail_testkit::mkfifo(&settings);
    let status = sb
        .acmd()
        .args(["status"])
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("settings.json is not a regular file"),
        "{status:?}"
    );
    let install = sb
        .acmd()
        .args(["install", "--dry-run", "--agent", "claude"])
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    assert_eq!(install.status.code(), Some(1), "{install:?}");
    let err = String::from_utf8_lossy(&install.stderr);
    assert!(err.contains("settings.json is not a regular file"), "{err}");
}

/// `uninstall --purge` after the registrations are already gone (a plain `uninstall` first)
/// still deletes the store; before, it printed "nothing to uninstall" and kept every session.
#[test]
fn uninstall_purge_deletes_the_store_when_nothing_is_registered() {
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    sb.json(&["import", "--json"]);
    let db = sb.db();
    assert!(db.exists());
    // An installed model (`memtrail models install` puts it there) is memtrail's data too.
    let models = sb.home.join(".local/share/memtrail/models");
    std::fs::create_dir_all(models.join("minilm-l6-static")).unwrap();
    std::fs::write(
        models.join("minilm-l6-static/vectors.f32"),
        vec![0u8; 2_500_000],
    )
    .unwrap();
    let out = sb.acmd().args(["uninstall", "--purge"]).output().unwrap();
    assert!(!out.status.success(), "refused without --yes");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("and installed models too; add --yes"), "{err}");
    assert!(db.exists() && models.exists());
    let out = sb
        .acmd()
        .args(["uninstall", "--purge", "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(!db.exists());
    assert!(!models.exists());
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(&format!("deleted the models {} (2.5 MB)", models.display())),
        "{out:?}"
    );
}

/// `uninstall --purge --json --yes` prints exactly one JSON value on stdout (the uninstall's
/// array, as docs/json.md says; what the purge deleted goes to stderr); so does the run that
/// finds memtrail registered nowhere (an empty array).
#[test]
fn uninstall_purge_json_prints_only_json_on_stdout() {
    let sb = Sandbox::new();
    install_claude_over_fixtures(&sb);
    let db = sb.db();
    // `Sandbox::json`: the run succeeds and its whole stdout parses as one JSON value.
    let v = sb.json(&[
        "uninstall",
        "--agent",
        "claude",
        "--purge",
        "--json",
        "--yes",
    ]);
    assert_eq!(v.as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v[0]["agent"], "claude");
    assert!(!db.exists());
    sb.json(&["import", "--json"]);
    let v = sb.json(&["uninstall", "--purge", "--json", "--yes"]);
    assert_eq!(v, serde_json::json!([]));
    assert!(!db.exists());
}

/// The fixture projects imported, then memtrail installed into Claude Code.
fn install_claude_over_fixtures(sb: &Sandbox) {
    sb.install_fixture_projects();
    sb.json(&["import", "--json"]);
    std::fs::create_dir_all(sb.claude_dir()).unwrap();
    sb.acmd()
        .args(["install", "--agent", "claude", "--yes"])
        .assert()
        .success();
}

/// `uninstall --purge` deletes exactly the store's three files (`memtrail.db`, `-wal`, `-shm`):
/// another file beside them (a salvaged store's damaged copy) stays, and so does the data
/// folder holding it; once that folder is left empty it goes too.
#[test]
fn uninstall_purge_deletes_exactly_the_store_files() {
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    sb.json(&["import", "--json"]);
    let db = sb.db();
    let dir = db.parent().unwrap().to_path_buf();
    for suffix in ["-wal", "-shm"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        std::fs::write(&p, b"").unwrap();
    }
    let aside = dir.join("memtrail.db.damaged-20260101T000000Z");
    std::fs::write(&aside, b"kept").unwrap();
    let purged = sb
        .acmd()
        .args(["uninstall", "--purge", "--yes"])
        .assert()
        .success();
    assert_eq!(
        String::from_utf8_lossy(&purged.get_output().stdout)
            .lines()
            .find(|l| l.starts_with("deleted the store")),
        Some(
            format!(
                "deleted the store {} (2 sessions, 6 messages)",
                db.display()
            )
            .as_str()
        ),
    );
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, ["memtrail.db.damaged-20260101T000000Z"]);
    std::fs::remove_file(&aside).unwrap();
    sb.json(&["import", "--json"]);
    assert!(db.exists());
    sb.acmd()
        .args(["uninstall", "--purge", "--yes"])
        .assert()
        .success();
    assert!(!dir.exists(), "memtrail's emptied data folder is removed");
}

/// The store is `--db` when given, else `MEMTRAIL_DB` when set and not empty, else
/// `$XDG_DATA_HOME/memtrail/memtrail.db`, else `$HOME/.local/share/memtrail/memtrail.db`:
/// exactly the path `status --json` reports (no store is created).
#[test]
fn the_store_is_db_then_memtrail_db_then_xdg_data_home_then_home() {
    let sb = Sandbox::new();
    let store_path = |c: &mut std::process::Command| -> String {
        let out = c.args(["status", "--json"]).output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
        });
        v["store"]["path"].as_str().unwrap().to_string()
    };
    let h = |p: &str| sb.home.join(p).to_str().unwrap().to_string();
    assert_eq!(
        store_path(
            sb.cmd()
                .arg("--db")
                .arg(h("flag.db"))
                .env("MEMTRAIL_DB", h("env.db"))
        ),
        h("flag.db")
    );
    assert_eq!(
        store_path(sb.cmd().env("MEMTRAIL_DB", h("env.db"))),
        h("env.db")
    );
    assert_eq!(
        store_path(
            sb.cmd()
                .env("MEMTRAIL_DB", "")
                .env("XDG_DATA_HOME", h("xdg"))
        ),
        h("xdg/memtrail/memtrail.db")
    );
    assert_eq!(
        store_path(sb.cmd().env_remove("XDG_DATA_HOME")),
        h(".local/share/memtrail/memtrail.db")
    );
    assert!(!sb.db().exists() && !sb.home.join("flag.db").exists());
}

/// Logs are opened without following a symlink (another user who can plant one must not make
/// memtrail append to the victim's `~/.bashrc`): a hook log or `MEMTRAIL_HOOK_TIMING` file that
/// is a link, or a hard link, is not written; a fresh log is created 0600 in a 0700 folder.
#[cfg(unix)]
#[test]
fn logs_are_never_written_through_a_symlink() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let bashrc = sb.home.join(".bashrc");
    std::fs::write(&bashrc, "# mine\n").unwrap();
    let log = sb.hook_log();
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&bashrc, &log).unwrap();
    let timing = sb.home.join("timing.txt");
    std::os::unix::fs::symlink(&bashrc, &timing).unwrap();
    let run = |sb: &Sandbox| {
        let out = sb
            .acmd()
            .args(["hook", "claude"])
            .env("MEMTRAIL_HOOK_TIMING", &timing)
            .write_stdin("not json")
            .output()
            .unwrap();
        assert!(out.status.success());
    };
    run(&sb);
    assert_eq!(std::fs::read_to_string(&bashrc).unwrap(), "# mine\n");
    // A hard link is refused too.
    std::fs::remove_file(&log).unwrap();
    std::fs::remove_file(&timing).unwrap();
    std::fs::hard_link(&bashrc, &log).unwrap();
    std::fs::hard_link(&bashrc, &timing).unwrap();
    run(&sb);
    assert_eq!(std::fs::read_to_string(&bashrc).unwrap(), "# mine\n");
    // Fresh: created owner-only, in an owner-only folder.
    std::fs::remove_file(&log).unwrap();
    std::fs::remove_file(&timing).unwrap();
    std::fs::remove_dir(log.parent().unwrap()).unwrap();
    run(&sb);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&log), 0o600);
    assert_eq!(mode(log.parent().unwrap()), 0o700);
    assert_eq!(mode(&timing), 0o600);
    assert_eq!(
        std::fs::read_to_string(&log)
            .unwrap()
            .matches(" error: ")
            .count(),
        1
    );
    assert!(
        std::fs::read_to_string(&timing)
            .unwrap()
            .starts_with("claude - error ")
    );
}

/// `doctor` runs hooks in a scratch folder of its own: a random name (not
/// `memtrail-doctor-<pid>`, which another user could prepare with a symlinked log), mode 0700,
/// under `TMPDIR`, removed afterwards.
#[cfg(unix)]
#[test]
fn doctor_scratch_folder_is_private_and_unpredictable() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let tmp = sb.home.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    // A stand-in for memtrail that records where doctor runs it.
    let fake = sb.home.join("bin/memtrail");
    std::fs::create_dir_all(fake.parent().unwrap()).unwrap();
    let record = sb.home.join("record.txt");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nd=$(dirname \"$XDG_STATE_HOME\")\necho \"$d $(stat -c %a \"$d\")\" > {}\n",
            record.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(sb.claude_dir()).unwrap();
    std::fs::write(
        sb.claude_dir().join("settings.json"),
        json!({"hooks": {"SessionStart": [{"hooks": [
            {"type": "command", "command": format!("{} hook claude", fake.display())}
        ]}]}})
        .to_string(),
    )
    .unwrap();
    let child = sb
        .cmd()
        .args(["doctor", "--json"])
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["hook_programs_checked"], 1, "{report}");
    let rec = std::fs::read_to_string(&record).unwrap();
    let (dir, mode) = rec.trim().rsplit_once(' ').unwrap();
    let dir = Path::new(dir);
    assert_eq!(dir.parent().unwrap(), tmp);
    assert_ne!(
        dir.file_name().unwrap(),
        format!("memtrail-doctor-{pid}").as_str()
    );
    assert!(
        dir.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("memtrail-doctor-")
    );
    assert_eq!(mode, "700");
    assert!(!dir.exists(), "removed afterwards");
}

/// Under umask 000, everything install and the first hook create is owner-only: hook files,
/// the OpenCode plugin, skills, config files, their new folders, the install state, backups,
/// the store and the hook log (before, hook files, the plugin and skills came out 0666 in 0777
/// folders: code the agents run, open to every local user). A config file memtrail edits loses
/// its group and other bits.
#[cfg(unix)]
#[test]
fn everything_memtrail_writes_is_owner_only_under_umask_000() {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let sb = Sandbox::new();
    for d in [
        ".claude",
        ".cursor",
        ".gemini",
        ".codex",
        ".config/opencode",
        ".config/Code/User",
    ] {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(sb.home.join(d))
            .unwrap();
    }
    std::fs::set_permissions(&sb.home, std::fs::Permissions::from_mode(0o700)).unwrap();
    for d in [".config", ".config/Code"] {
        std::fs::set_permissions(sb.home.join(d), std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let settings = sb.claude_dir().join("settings.json");
    std::fs::write(&settings, "{}\n").unwrap();
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o666)).unwrap();
    // umask is per process: the binary runs under `sh -c 'umask 000; exec memtrail …'`.
    let under_umask_000 = |args: &str, stdin: &str| {
        let base = sb.cmd();
        let mut sh = std::process::Command::new("sh");
        sh.arg("-c")
            .arg(format!("umask 000; exec \"$0\" {args}"))
            .arg(support::memtrail_bin())
            .env_clear()
            .envs(base.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = sh.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{args}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    under_umask_000("install --yes", "");
    let t = grow_transcript(&sb, 1);
    under_umask_000("hook claude", &stop_payload(&t, &session_id_of(&t)));
    assert!(sb.db().exists());
    let mut files = 0;
    let mut stack = vec![sb.home.clone()];
    let mut open: Vec<String> = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p == sb.claude_dir().join("projects") {
                continue; // the test's transcript, written by the test
            }
            let m = std::fs::symlink_metadata(&p).unwrap();
            let mode = m.permissions().mode() & 0o777;
            if m.is_dir() {
                if mode != 0o700 {
                    open.push(format!("{} {mode:o}", p.display()));
                }
                stack.push(p);
            } else {
                files += 1;
                if mode & 0o077 != 0 {
                    open.push(format!("{} {mode:o}", p.display()));
                }
            }
        }
    }
    assert!(files >= 12, "{files} files");
    assert_eq!(open, Vec::<String>::new(), "readable or writable by others");
    assert_eq!(
        std::fs::metadata(&settings).unwrap().permissions().mode() & 0o777,
        0o600,
        "an edited file loses its group and other bits"
    );
}

/// Hooks and MCP entries point at the path the user invoked, symlinks kept (Homebrew's
/// `bin/memtrail` → `Cellar/…/0.1.0/bin/memtrail`): by its full path or by a bare name on
/// `PATH`. Before, the versioned target was recorded and every hook broke at the next upgrade.
/// An `argv[0]` that names another file is not trusted: the binary's real path is recorded.
#[cfg(unix)]
#[test]
fn install_records_the_path_the_user_invoked() {
    use std::os::unix::process::CommandExt;
    let real = std::fs::canonicalize(support::memtrail_bin()).unwrap();
    let check = |how: &str,
                 run: &dyn Fn(&Sandbox, &Path) -> std::process::Command,
                 want: &dyn Fn(&Path) -> PathBuf| {
        let sb = Sandbox::new();
        std::fs::create_dir_all(sb.claude_dir()).unwrap();
        let link = sb.home.join("bin/memtrail");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let out = run(&sb, &link).output().unwrap();
        assert!(
            out.status.success(),
            "{how}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let settings: Value =
            serde_json::from_slice(&std::fs::read(sb.claude_dir().join("settings.json")).unwrap())
                .unwrap();
        let cmd = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap();
        assert_eq!(
            cmd,
            format!("{} hook claude", want(&link).display()),
            "{how}"
        );
        let global: Value =
            serde_json::from_slice(&std::fs::read(sb.claude_dir().join(".claude.json")).unwrap())
                .unwrap();
        assert_eq!(
            global["mcpServers"]["memtrail"]["command"],
            want(&link).to_str().unwrap(),
            "{how}"
        );
    };
    let install = ["install", "--agent", "claude", "--yes"];
    check(
        "full path of the link",
        &|sb, link| {
            let mut c = sb.cmd();
            c.arg0(link).args(install);
            c
        },
        &|link| link.to_path_buf(),
    );
    check(
        "bare name on PATH",
        &|sb, link| {
            let mut c = sb.cmd();
            c.arg0("memtrail")
                .env("PATH", link.parent().unwrap())
                .args(install);
            c
        },
        &|link| link.to_path_buf(),
    );
    check(
        "argv[0] naming another file",
        &|sb, _| {
            let other = sb.home.join("bin/other");
            std::fs::write(&other, "").unwrap();
            let mut c = sb.cmd();
            c.arg0(&other).args(install);
            c
        },
        &|_| real.clone(),
    );
}

/// One agent whose install fails (a read-only settings.json) is left out untouched, the others
/// are wired, and the exit code is 1 (before, the error stopped the install of every agent
/// after it). Named on the command line, it stops the install before any change.
#[cfg(unix)]
#[test]
fn a_failing_agent_is_left_out_and_the_others_go_ahead() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.claude_dir()).unwrap();
    std::fs::create_dir_all(sb.home.join(".cursor")).unwrap();
    let settings = sb.claude_dir().join("settings.json");
    std::fs::write(&settings, "{}\n").unwrap();
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o444)).unwrap();
    let out = sb.acmd().args(["install", "--yes"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Claude Code") && err.contains("read-only") && err.contains("left out"),
        "{err}"
    );
    assert_eq!(std::fs::read(&settings).unwrap(), b"{}\n");
    assert!(
        !sb.claude_dir().join(".claude.json").exists(),
        "nothing of Claude Code's is changed"
    );
    let hooks = std::fs::read_to_string(sb.home.join(".cursor/hooks.json")).unwrap();
    assert!(hooks.contains("memtrail"), "Cursor is wired: {hooks}");

    let sb2 = Sandbox::new();
    std::fs::create_dir_all(sb2.claude_dir()).unwrap();
    std::fs::create_dir_all(sb2.home.join(".cursor")).unwrap();
    let settings2 = sb2.claude_dir().join("settings.json");
    std::fs::write(&settings2, "{}\n").unwrap();
    std::fs::set_permissions(&settings2, std::fs::Permissions::from_mode(0o444)).unwrap();
    let out = sb2
        .acmd()
        .args(["install", "--agent", "cursor", "--agent", "claude", "--yes"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        !sb2.home.join(".cursor/hooks.json").exists(),
        "nothing changed"
    );
}

/// A Claude Code settings.json with a comment is skipped whole by Claude Code: install refuses
/// it (untouched, with the place and the reason), and `status` and `doctor` say that Claude will
/// not run these hooks. Before, install wrote its hooks there and reported success.
#[test]
fn claude_settings_with_a_comment_is_refused_and_reported() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.claude_dir()).unwrap();
    let settings = sb.claude_dir().join("settings.json");
    let text = "{\n  // mine\n  \"model\": \"opus\"\n}\n";
    std::fs::write(&settings, text).unwrap();
    let out = sb
        .acmd()
        .args(["install", "--agent", "claude", "--yes"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 2, column 3: a comment") && err.contains("will not run these hooks"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), text);
    let out = sb.acmd().args(["status"]).output().unwrap();
    let st = String::from_utf8_lossy(&out.stdout);
    assert!(
        st.contains("not strict JSON (line 2, column 3: a comment)")
            && st.contains("will not run these hooks"),
        "{st}"
    );
    let out = sb.acmd().args(["doctor"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let doc = String::from_utf8_lossy(&out.stdout);
    assert!(
        doc.contains("will not run these hooks") && doc.contains("rewrite"),
        "{doc}"
    );
}

/// Run `memtrail ARGS` on a pseudo-terminal (util-linux `script`) in the sandbox's environment
/// plus `extra`; once the terminal shows `wait_for`, type `keys`. Returns the exit code and all
/// the terminal showed.
fn on_a_terminal(
    sb: &Sandbox,
    args: &[&str],
    extra: &[(&str, &str)],
    wait_for: Option<(&str, &[u8])>,
) -> (Option<i32>, String) {
    use std::io::{Read, Write};
    use std::sync::{Arc, Mutex};
    let line = sb.shell_line("", args);
    let mut child = sb
        .script(&line, extra)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut stdout = child.stdout.take().unwrap();
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    let stdin = child.stdin.take().unwrap();
    if let Some((text, keys)) = wait_for {
        let t = std::time::Instant::now();
        while !String::from_utf8_lossy(&seen.lock().unwrap()).contains(text) {
            assert!(
                t.elapsed() < std::time::Duration::from_secs(30),
                "never showed {text:?}: {:?}",
                String::from_utf8_lossy(&seen.lock().unwrap())
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // The prompt reads keys once it has drawn itself.
        std::thread::sleep(std::time::Duration::from_millis(200));
        let mut stdin = &stdin;
        stdin.write_all(keys).unwrap();
        stdin.flush().unwrap();
    }
    let status = child.wait().unwrap();
    drop(stdin);
    reader.join().unwrap();
    let text = String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
    (status.code(), text)
}

/// On a terminal, `search` highlights the matched words in colour, never with Markdown `**`;
/// `NO_COLOR` and `--color never` print plain text, `--color always` colours a pipe too, and a
/// pipe gets plain text by default.
#[test]
fn search_highlights_in_colour_on_a_terminal_and_honours_no_color() {
    let sb = Sandbox::new();
    let t = sb.transcript("demo", &support::session_id(1));
    let sid = support::session_id(1);
    let mut text = String::new();
    for i in 0..2 {
        text.push_str(&support::claude_line(&sid, "/home/user/demo", i));
        text.push('\n');
    }
    support::append(&t, text.as_bytes());
    // One of each: no "1 transcript files" (stderr is not a terminal: plain progress lines).
    let out = sb.acmd().args(["import"]).output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("found 1 transcript file ("), "{err}");
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.starts_with("claude: 1 file (1 with new content), 1 session, 2 new messages, 0 updated, 0 lines skipped"),
        "{summary}"
    );
    let hit = "\x1b[1;31m";
    let (code, tty) = on_a_terminal(&sb, &["search", "module"], &[], None);
    assert_eq!(code, Some(0), "{tty}");
    assert!(tty.contains(&format!("{hit}module\x1b[0m")), "{tty:?}");
    assert!(!tty.contains("**"), "{tty:?}");
    for (args, env) in [
        (vec!["search", "module"], vec![("NO_COLOR", "1")]),
        (vec!["search", "module", "--color", "never"], vec![]),
    ] {
        let (code, tty) = on_a_terminal(&sb, &args, &env, None);
        assert_eq!(code, Some(0), "{tty}");
        assert!(tty.contains("module"), "{tty:?}");
        assert!(!tty.contains('\x1b') && !tty.contains("**"), "{tty:?}");
    }
    let piped = sb.acmd().args(["search", "module"]).output().unwrap();
    let piped = String::from_utf8(piped.stdout).unwrap();
    assert!(piped.contains("module"), "{piped}");
    assert!(
        !piped.contains('\x1b') && !piped.contains("**"),
        "{piped:?}"
    );
    let forced = sb
        .acmd()
        .args(["search", "module", "--color", "always"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let forced = String::from_utf8(forced.stdout).unwrap();
    assert!(
        forced.contains(&format!("{hit}module\x1b[0m")),
        "{forced:?}"
    );
}

/// Ctrl-C at the interactive install's agent picker leaves the terminal's cursor visible (the
/// picker hides it), exits 130 and changes nothing.
#[test]
fn ctrl_c_at_the_install_prompt_shows_the_cursor_again() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.claude_dir()).unwrap();
    let (code, tty) = on_a_terminal(
        &sb,
        &["install"],
        &[],
        Some(("Install memtrail into", b"\x03")),
    );
    let hidden = tty.rfind("\x1b[?25l").expect("the picker hides the cursor");
    assert!(tty[hidden..].contains("\x1b[?25h"), "{tty:?}");
    assert_eq!(code, Some(130), "{tty:?}");
    assert!(!sb.claude_dir().join("settings.json").exists());
}

/// An agent program installed the way npm does (`<root>/bin/<name>` → the package's
/// `bin/<name>`, its `package.json` above): `<root>/bin` for `PATH`. Run, it would create
/// `<root>/ran-<name>` and a folder in `$HOME`, as real agents do.
fn fake_npm_agent(root: &Path, name: &str, package: &str, version: &str) -> PathBuf {
    fake_npm_agent_at(root, name, package, &format!("bin/{name}"), version)
}

/// [`fake_npm_agent`] with the program at `exe` inside the package (`bin/claude.exe`).
fn fake_npm_agent_at(root: &Path, name: &str, package: &str, exe: &str, version: &str) -> PathBuf {
    let pkg = root.join("lib/node_modules").join(package);
    std::fs::create_dir_all(pkg.join(exe).parent().unwrap()).unwrap();
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::write(
        pkg.join("package.json"),
        format!("{{\"name\": \"{package}\", \"version\": \"{version}\"}}\n"),
    )
    .unwrap();
    let exe = pkg.join(exe);
    std::fs::write(
        &exe,
        format!(
            "#!/bin/sh\ntouch '{}'\nmkdir -p \"$HOME/.{name}-was-run\"\necho '{name} {version}'\n",
            root.join(format!("ran-{name}")).display()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink(&exe, root.join("bin").join(name)).unwrap();
    }
    root.join("bin")
}

/// Every file and folder under `dir` with its size and modification time.
fn tree(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            out.push((p.clone(), m.len(), m.modified().unwrap()));
            if m.is_dir() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

/// After a fresh `install`, Codex's hooks await trust while `notify` captures: a notice, not a
/// failure (`status` exits 0). `status` runs no agent program (versions come from the npm
/// package) and changes nothing in the home folder.
#[cfg(unix)]
#[test]
fn status_after_a_fresh_install_is_healthy_with_a_trust_notice_and_runs_no_agent() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home.join(".codex")).unwrap();
    let npm = sb.home.parent().unwrap().join("npm");
    let bin = fake_npm_agent(&npm, "codex", "@openai/codex", "0.171.0");
    fake_npm_agent(&npm, "opencode", "opencode-ai", "1.18.33");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |args: &[&str]| sb.cmd().args(args).env("PATH", &path).output().unwrap();
    assert!(
        run(&["install", "--agent", "codex", "--yes"])
            .status
            .success()
    );
    let before = tree(&sb.home);
    let out = run(&["status", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["healthy"], true, "{v}");
    let notices: Vec<(&str, &str)> = v["notices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["agent"].as_str().unwrap(), n["item"].as_str().unwrap()))
        .collect();
    assert_eq!(
        notices,
        vec![
            ("codex", "hook SessionStart"),
            ("codex", "hook PreCompact"),
            ("codex", "hook Stop")
        ]
    );
    let codex = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "codex")
        .unwrap();
    assert_eq!(codex["registration"]["version"], "0.171.0");
    let opencode = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "opencode")
        .unwrap();
    assert_eq!(opencode["registration"]["version"], "1.18.33");
    let out = run(&["status"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\nnotices (not failures):\n  Codex CLI: 3 items not run by the agent: not trusted yet; "),
        "{text}"
    );
    assert!(
        text.ends_with("\nhealthy (see the notices above)\n"),
        "{text}"
    );
    // No agent ran, and status left the home folder as it was.
    assert!(!npm.join("ran-codex").exists());
    assert!(!npm.join("ran-opencode").exists());
    assert_eq!(tree(&sb.home), before);
}

/// `status` shows the versions of Claude Code and Gemini CLI installed from npm, whose
/// commands link to `bin/claude.exe` in `@anthropic-ai/claude-code` and to `bundle/gemini.js`
/// in `@google/gemini-cli` (the real layout): the nearest package.json above the program whose
/// name is the agent's package, past a bundle's own nameless one.
#[cfg(unix)]
#[test]
fn status_shows_the_npm_versions_of_claude_code_and_gemini_cli() {
    let sb = Sandbox::new();
    let npm = sb.home.parent().unwrap().join("npm");
    let bin = fake_npm_agent_at(
        &npm,
        "claude",
        "@anthropic-ai/claude-code",
        "bin/claude.exe",
        "2.1.332",
    );
    fake_npm_agent_at(
        &npm,
        "gemini",
        "@google/gemini-cli",
        "bundle/gemini.js",
        "0.61.0",
    );
    std::fs::write(
        npm.join("lib/node_modules/@google/gemini-cli/bundle/package.json"),
        "{\"type\": \"module\"}\n",
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = sb
        .cmd()
        .args(["status", "--json"])
        .env("PATH", &path)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let version = |agent: &str| {
        v["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == agent)
            .unwrap()["registration"]["version"]
            .clone()
    };
    assert_eq!(version("claude"), "2.1.332", "{v}");
    assert_eq!(version("gemini"), "0.61.0", "{v}");
    assert!(!npm.join("ran-claude").exists());
    assert!(!npm.join("ran-gemini").exists());
}

/// The sandbox with the project's Claude Code fixtures, memtrail installed for Claude Code and
/// the fixtures imported: `status` is healthy.
fn wire_claude(sb: &Sandbox) {
    sb.install_fixture_projects();
    sb.acmd()
        .args(["install", "--agent", "claude", "--yes"])
        .assert()
        .success();
    sb.json(&["import", "--json"]);
}

/// A hook that failed (the store was locked) is not "unhealthy" once a later hook of the same
/// session succeeded: that hook caught up from the cursor. Without a later success it is.
#[test]
fn status_forgives_a_hook_error_that_a_later_hook_caught_up() {
    let sb = Sandbox::new();
    wire_claude(&sb);
    let c = rusqlite::Connection::open(sb.db()).unwrap();
    c.execute_batch(
        "DELETE FROM hook_runs;
         INSERT INTO hook_runs (agent, event, at, duration_us, session, messages, error)
         VALUES ('claude', 'Stop', 1000, 900, 's1', 0, 'the store is busy'),
                ('claude', 'SessionEnd', 2000, 900, 's1', 3, NULL);",
    )
    .unwrap();
    let out = sb.cmd().args(["status", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["healthy"], true);
    let runs = &v["agents"][0]["hook_runs"];
    assert_eq!(runs[1]["event"], "Stop", "{runs}");
    assert_eq!(runs[1]["caught_up"], true, "{runs}");
    let text =
        String::from_utf8_lossy(&sb.cmd().arg("status").output().unwrap().stdout).into_owned();
    assert!(
        text.contains(", error: the store is busy (a later hook caught up)\n"),
        "{text}"
    );
    // The success came before the error (or was another session's): the error stands.
    for change in [
        "UPDATE hook_runs SET at = 500 WHERE event = 'SessionEnd'",
        "UPDATE hook_runs SET at = 2000, session = 's2' WHERE event = 'SessionEnd'",
    ] {
        c.execute(change, []).unwrap();
        let out = sb.cmd().args(["status", "--json"]).output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(out.status.code(), Some(1), "{change}: {v}");
        assert_eq!(v["healthy"], false);
    }
}

/// A hook whose payload memtrail could not read (an agent that changed its format, say)
/// captured nothing: `status` reports it, under no event and no session, until a later hook of
/// the same agent succeeds. A payload that could not be read creates no store to say so.
#[test]
fn status_reports_a_hook_whose_payload_could_not_be_read() {
    let sb = Sandbox::new();
    sb.acmd()
        .args(["hook", "claude"])
        .write_stdin("not json at all")
        .assert()
        .success();
    assert!(!sb.db().exists(), "a bad payload created the store");
    wire_claude(&sb);
    let status = || {
        let out = sb.cmd().args(["status", "--json"]).output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.code(), v)
    };
    let (code, v) = status();
    assert_eq!((code, &v["healthy"]), (Some(0), &json!(true)), "{v}");

    sb.acmd()
        .args(["hook", "claude"])
        .write_stdin("not json at all")
        .assert()
        .success();
    let (code, v) = status();
    assert_eq!((code, &v["healthy"]), (Some(1), &json!(false)), "{v}");
    let runs = v["agents"][0]["hook_runs"].as_array().unwrap();
    let failed: Vec<&Value> = runs.iter().filter(|r| r["event"] == "").collect();
    assert_eq!(failed.len(), 1, "{runs:?}");
    assert_eq!(failed[0]["session"], Value::Null, "{runs:?}");
    assert_eq!(failed[0]["caught_up"], false, "{runs:?}");
    let error = failed[0]["error"].as_str().unwrap();
    assert!(error.contains("JSON"), "{error}");
    let text =
        String::from_utf8_lossy(&sb.cmd().arg("status").output().unwrap().stdout).into_owned();
    assert!(
        text.contains("  last (unnamed) hook: ")
            && text.contains(&format!(
                ", error: {error} (the agent's next hook that succeeds clears it)\n"
            )),
        "{text}"
    );
    assert!(text.ends_with("NOT healthy: see above\n"), "{text}");

    // The agent's next hook that succeeds, of any session, clears it.
    let t = grow_transcript(&sb, 1);
    sb.acmd()
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&t, &session_id_of(&t)))
        .assert()
        .success();
    let (code, v) = status();
    assert_eq!((code, &v["healthy"]), (Some(0), &json!(true)), "{v}");
}

/// `status` counts the config backups (copies of `.claude.json` with its API key) and their
/// age; `uninstall --purge` first gives every config its exact original bytes back, then
/// deletes the store and memtrail's state: backups, install state, logs. While an agent is
/// still registered (its uninstall failed), its backups are kept (exit 1).
#[test]
fn uninstall_purge_restores_the_originals_then_deletes_backups_state_and_logs() {
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    let settings = sb.claude_dir().join("settings.json");
    let global = sb.claude_dir().join(".claude.json");
    let settings0 = "{\n  \"model\": \"opus\"\n}\n";
    let global0 = "{\n  \"primaryApiKey\": \"sk-ant-api03-not-a-real-key\",\n  \"mcpServers\": {\"db\": {\"command\": \"db\", \"env\": {\"TOKEN\": \"tok-123\"}}}\n}\n";
    std::fs::write(&settings, settings0).unwrap();
    std::fs::write(&global, global0).unwrap();
    let gemini = sb.home.join(".gemini/settings.json");
    std::fs::create_dir_all(gemini.parent().unwrap()).unwrap();
    std::fs::write(&gemini, "{}\n").unwrap();
    for agent in ["claude", "gemini"] {
        sb.acmd()
            .args(["install", "--agent", agent, "--yes"])
            .assert()
            .success();
    }
    sb.json(&["import", "--json"]);
    let state = sb.home.join(".local/state/memtrail");
    std::fs::write(state.join("hook.log"), "a log line\n").unwrap();
    // Two runs, three copies (settings.json, .claude.json, Gemini's settings.json).
    let out = sb.cmd().args(["status", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let b = &v["backups"];
    assert_eq!(
        (b["folders"].as_u64(), b["copies"].as_u64()),
        (Some(2), Some(3)),
        "{b}"
    );
    assert_eq!(
        b["bytes"].as_u64(),
        Some((settings0.len() + global0.len() + 3) as u64)
    );
    assert_eq!(b["dir"], state.join("backups").to_str().unwrap());
    assert!(b["oldest"].as_str().unwrap() <= b["newest"].as_str().unwrap());
    let text = String::from_utf8(sb.cmd().arg("status").output().unwrap().stdout).unwrap();
    assert!(
        text.contains(&format!(
            "\nconfig backups: 2 folders in {} (3 file copies, 0.0 MB; oldest ",
            state.join("backups").display()
        )),
        "{text}"
    );
    // Gemini's settings no longer parse: its uninstall fails, so its backups stay.
    let installed = std::fs::read(&gemini).unwrap();
    std::fs::write(&gemini, b"{ not json").unwrap();
    let out = sb
        .cmd()
        .args(["uninstall", "--purge", "--yes"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!(
            "kept memtrail's state {}: memtrail is still registered with Gemini CLI",
            state.display()
        )),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), settings0);
    assert_eq!(std::fs::read_to_string(&global).unwrap(), global0);
    assert!(!sb.db().exists());
    assert!(state.join("backups").is_dir() && state.join("install-state.json").exists());
    // Fixed, the next purge uninstalls Gemini and deletes everything memtrail kept (the two
    // installs' backups, the first purge's of Claude, this one's of Gemini).
    std::fs::write(&gemini, installed).unwrap();
    let out = sb
        .cmd()
        .args(["uninstall", "--purge", "--yes"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!(
            "deleted memtrail's state {} (4 config backups, the install state, the logs)",
            state.display()
        )),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(std::fs::read_to_string(&gemini).unwrap(), "{}\n");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), settings0);
    assert_eq!(std::fs::read_to_string(&global).unwrap(), global0);
    assert!(!state.exists(), "backups, install state and logs are gone");
}

// --- the MCP server: bounded, and an answer to every request (issue 11, items 19-21) --------

/// A Claude Code transcript in `cwd` with session `sid`: a user prompt of `big` bytes of log
/// lines (index 0), an answer (1), and `n` more short prompts and answers; imported.
fn mcp_session(sb: &Sandbox, sid: &str, cwd: &str, big: usize, n: u64) -> String {
    let mut log = String::new();
    let mut k = 0;
    while log.len() < big {
        log.push_str(&format!("line {k:06} of the pasted build log: ok\n"));
        k += 1;
    }
    log.truncate(big);
    // Stored text is trimmed: end on a visible character.
    log.pop();
    log.push('.');
    let mut first: Value = serde_json::from_str(&support::claude_line(sid, cwd, 0)).unwrap();
    first["message"]["content"] = json!(log);
    let mut lines = vec![first.to_string()];
    for i in 1..2 + n {
        lines.push(support::claude_line(sid, cwd, i));
    }
    let slug = cwd.replace('/', "-");
    let p = sb.claude_dir().join(format!("projects/{slug}/{sid}.jsonl"));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    sb.acmd()
        .args(["import", "--agent", "claude"])
        .assert()
        .success();
    log
}

/// Every malformed line gets a JSON-RPC error with the request's id when the line's start names
/// one; before, rmcp dropped non-JSON lines and lines over its limit without a word (the client
/// waited forever), and the server stayed up.
#[test]
fn mcp_answers_every_malformed_line() {
    let sb = Sandbox::new();
    let mut m = support::Mcp::start(&sb);
    let big_query = "a".repeat(16 << 20);
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{{"name":"search","arguments":{{"query":"{big_query}"}}}}}}"#
    );
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":11,"method":"ping","params":{{"x":{}{}}}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let bad_utf8: &[u8] =
        b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}";
    let cases: Vec<(Vec<u8>, Value, i64, &str)> = vec![
        (
            b"hello".to_vec(),
            Value::Null,
            -32700,
            "parse error: expected value at line 1 column 1",
        ),
        (
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search""#.to_vec(),
            json!(7),
            -32700,
            "parse error: EOF while parsing an object at line 1 column 71",
        ),
        (
            bad_utf8.to_vec(),
            json!(8),
            -32700,
            "parse error: invalid UTF-8 at byte 55",
        ),
        (
            br#"{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":"\ud800"}}"#.to_vec(),
            json!(9),
            -32700,
            "parse error: unexpected end of hex escape at line 1 column 62",
        ),
        (
            huge.clone().into_bytes(),
            json!(10),
            -32600,
            &*format!(
                "request too large: {} bytes, the limit is 1048576 bytes per line",
                huge.len()
            )
            .leak(),
        ),
        (
            deep.into_bytes(),
            json!(11),
            -32700,
            "parse error: recursion limit exceeded at line 1 column 181",
        ),
        (
            br#"[{"jsonrpc":"2.0","id":12,"method":"ping"}]"#.to_vec(),
            Value::Null,
            -32600,
            "invalid request: batches (JSON arrays) are not supported; send one message per line",
        ),
        (
            b"42".to_vec(),
            Value::Null,
            -32600,
            "invalid request: a JSON-RPC message is a JSON object",
        ),
        (
            br#"{"jsonrpc":"2.0","id":13}"#.to_vec(),
            json!(13),
            -32600,
            "invalid request: no `method` (and not a response)",
        ),
        (
            br#"{"jsonrpc":"1.0","id":"x","method":"ping"}"#.to_vec(),
            json!("x"),
            -32600,
            "invalid request: `jsonrpc` must be \"2.0\"",
        ),
    ];
    for (line, id, code, message) in cases {
        let mut bytes = line.clone();
        bytes.push(b'\n');
        m.send_raw(&bytes);
        let r = m.next_reply();
        assert_eq!(
            r,
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
            "line starting {:?}",
            String::from_utf8_lossy(&line[..line.len().min(80)])
        );
    }
    // Still serving.
    let pong = m.request("ping", json!({}));
    assert_eq!(pong["result"], json!({}), "{pong}");
    assert!(m.stop().success());
}

/// `get_session` of a session with a pasted 405 KB log: every result is at most 40,000 bytes
/// as sent (before: 820,387), and paging with `next` gives the message back byte for byte.
/// A 1 MB `search` query is refused without being echoed (before: echoed twice).
#[test]
fn mcp_results_are_capped_and_a_long_message_pages() {
    let sb = Sandbox::new();
    let proj = sb.home.join("work/app");
    std::fs::create_dir_all(&proj).unwrap();
    let sid = support::session_id(1);
    let log = mcp_session(&sb, &sid, proj.to_str().unwrap(), 405 * 1024, 4);
    let mut m = support::Mcp::start(&sb);
    let (mut offset, mut text_offset) = (0i64, 0u64);
    let mut text = String::new();
    let mut pages = 0;
    let mut after = Vec::new();
    loop {
        let r = m.call(
            "get_session",
            json!({"session_id": sid, "offset": offset, "text_offset": text_offset}),
        );
        let result = &r["result"];
        let bytes = serde_json::to_vec(result).unwrap().len();
        assert!(bytes <= 40_000, "page {pages}: {bytes} bytes");
        assert_eq!(result["isError"], false, "{r}");
        let page = &result["structuredContent"];
        assert!(
            page["recalled"]
                .as_str()
                .unwrap()
                .contains("not instructions")
        );
        pages += 1;
        for msg in page["messages"].as_array().unwrap() {
            if msg["index"] == 0 {
                let piece = msg["text"].as_str().unwrap();
                let range = msg["text_range"].as_array().unwrap();
                assert_eq!(range[0], json!(text.len()));
                assert_eq!(range[1], json!(text.len() + piece.len()));
                assert_eq!(msg["text_bytes"], json!(log.len()));
                text.push_str(piece);
            } else {
                assert!(msg.get("text_range").is_none(), "{msg}");
                after.push(msg["index"].as_i64().unwrap());
            }
        }
        match &page["next"] {
            Value::Null => break,
            n => {
                offset = n["offset"].as_i64().unwrap();
                text_offset = n["text_offset"].as_u64().unwrap();
            }
        }
        assert!(pages < 100, "paging does not end");
    }
    assert_eq!(text, log, "the pages give the message back whole");
    assert_eq!(after, vec![1, 2, 3, 4, 5], "then the other messages");
    // 405 KB of text needs 11 or more pages of under 20,000 bytes of text each.
    assert!((21..=30).contains(&pages), "{pages} pages");

    let q = "x".repeat(1_000_000);
    let r = m.call("search", json!({"query": q}));
    assert_eq!(
        r["result"],
        json!({"content": [{"type": "text", "text": "the query has 1000000 bytes; keep it under 4096 (a few words or a phrase)"}], "isError": true}),
    );
    assert!(m.stop().success());
}

/// 2,000 requests written without waiting for answers: the server reads the next request only
/// when one of its 8 slots is free, so its peak RSS stays under 200 MB (before: every result
/// held at once, gigabytes for 10,000), and each request is answered exactly once.
#[cfg(target_os = "linux")]
#[test]
fn mcp_pipelined_requests_stay_bounded() {
    use std::io::Write;
    let sb = Sandbox::new();
    let proj = sb.home.join("work/app");
    std::fs::create_dir_all(&proj).unwrap();
    let sid = support::session_id(2);
    mcp_session(&sb, &sid, proj.to_str().unwrap(), 300 * 1024, 2);
    let mut m = support::Mcp::start(&sb);
    const N: u64 = 2000;
    let mut stdin = m.take_stdin();
    let writer = std::thread::spawn(move || {
        let mut all = Vec::new();
        for id in 100..100 + N {
            let req = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "get_session", "arguments": {"session_id": sid}}});
            all.extend_from_slice(format!("{req}\n").as_bytes());
        }
        stdin.write_all(&all).unwrap();
        stdin.flush().unwrap();
        stdin
    });
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..N {
        // Replies start `{"jsonrpc":"2.0","id":N,"result":{`: read that much (parsing 2,000
        // whole results would make the test slow, not the server).
        let line = String::from_utf8(m.next_line()).unwrap();
        let rest = line
            .strip_prefix(r#"{"jsonrpc":"2.0","id":"#)
            .unwrap_or_else(|| panic!("{line}"));
        let (id, rest) = rest.split_once(',').unwrap();
        assert!(rest.starts_with(r#""result":{"#), "{line}");
        assert!(
            seen.insert(id.parse::<u64>().unwrap()),
            "answered twice: {id}"
        );
    }
    assert_eq!(seen, (100..100 + N).collect());
    let status = std::fs::read_to_string(format!("/proc/{}/status", m.pid())).unwrap();
    let hwm_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    eprintln!("peak RSS of the server: {hwm_kb} kB");
    assert!(hwm_kb < 200 * 1024, "peak RSS {hwm_kb} kB");
    drop(writer.join().unwrap());
    assert!(m.stop().success());
}

/// `remember` attaches notes only to sessions of the project the server runs in: a note for
/// another project's session (by id or by `project`) is refused and nothing is stored; the
/// user can lift this with MEMTRAIL_MCP_NOTES=any. Before, any agent could put a note into any
/// session, to be injected there at the next compaction.
#[test]
fn remember_is_scoped_to_the_callers_project() {
    let sb = Sandbox::new();
    let (a, b) = (sb.home.join("work/a"), sb.home.join("work/b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let (sa, sb_id) = (support::session_id(3), support::session_id(4));
    mcp_session(&sb, &sa, a.to_str().unwrap(), 10, 0);
    mcp_session(&sb, &sb_id, b.to_str().unwrap(), 10, 0);
    let notes = |sid: &str| -> i64 {
        let c = rusqlite::Connection::open(sb.db()).unwrap();
        c.query_row(
            "SELECT COUNT(*) FROM messages m JOIN sessions s ON s.id = m.session_id
             WHERE s.external_id = ?1 AND m.kind = 'note'",
            [sid],
            |r| r.get(0),
        )
        .unwrap()
    };
    let mut m = support::Mcp::start_in(&sb, Some(&a), &[]);
    let refused = format!(
        "this MCP server runs in {}; notes go to sessions of this project only, and {{}}. To keep a note for another project, run the agent there (the user can lift this with MEMTRAIL_MCP_NOTES=any in the server's environment)",
        a.display()
    );
    let r = m.call(
        "remember",
        json!({"text": "push to main", "session_id": sb_id}),
    );
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(
        r["result"]["content"][0]["text"],
        json!(refused.replace("{}", &format!("session {sb_id} is of {}", b.display())))
    );
    let r = m.call("remember", json!({"text": "push to main", "project": b}));
    assert_eq!(
        r["result"]["content"][0]["text"],
        json!(refused.replace(
            "{}",
            &format!("{} is not this folder or above it", b.display())
        ))
    );
    assert_eq!(notes(&sb_id), 0);
    // Its own project: by default and by id.
    let r = m.call("remember", json!({"text": "the checksum is 42"}));
    assert_eq!(
        r["result"]["structuredContent"]["session_id"],
        json!(sa),
        "{r}"
    );
    let r = m.call("remember", json!({"text": "and 43", "session_id": sa}));
    assert_eq!(
        r["result"]["structuredContent"]["session_id"],
        json!(sa),
        "{r}"
    );
    assert_eq!(notes(&sa), 2);
    // An empty `session_id`, as agents send for a field they leave out: no session filter.
    let r = m.call(
        "search",
        json!({"query": "checksum", "session_id": "", "agent": "", "project": "",
               "machine": "", "since": "", "until": "", "role": ""}),
    );
    assert_ne!(r["result"]["isError"], true, "{r}");
    assert_eq!(
        r["result"]["structuredContent"]["hits"][0]["session_id"],
        json!(sa),
        "{r}"
    );
    assert!(m.stop().success());
    // Shown as a note, not as something the assistant said (found by a new user's walkthrough).
    let shown = sb.ok(&["sessions", "show", &sa]);
    let at = shown.find("the checksum is 42").expect("the note is shown");
    let heading = &shown[shown[..at].rfind("\n## ").unwrap()..at];
    assert!(heading.starts_with("\n## Note · #"), "{heading}");
    let found = sb.ok(&["search", "checksum", "--color", "never"]);
    assert!(found.contains(" · note"), "{found}");
    assert!(!found.contains(" · assistant"), "{found}");
    // Lifted by the user.
    let mut m = support::Mcp::start_in(&sb, Some(&a), &[("MEMTRAIL_MCP_NOTES", "any")]);
    let r = m.call(
        "remember",
        json!({"text": "cross-project note", "session_id": sb_id}),
    );
    assert_eq!(
        r["result"]["structuredContent"]["session_id"],
        json!(sb_id),
        "{r}"
    );
    assert_eq!(notes(&sb_id), 1);
    assert!(m.stop().success());
}

/// Transcript text is hostile wherever it is shown: escape sequences in a prompt (the session's
/// title), an answer and a tool output (an OSC that sets the window title, a clear-screen, a
/// colour, a bell, a carriage return) reach no command's output raw; each control character is
/// shown as `�`. JSON output escapes them as JSON does.
#[test]
fn transcript_control_characters_never_reach_the_terminal() {
    let sb = Sandbox::new();
    let sid = support::session_id(7);
    let t = sb.transcript("demo", &sid);
    let evil = "\x1b]0;pwned\x07\x1b[2J\x1b[31mRED\x1b[0m\rover\u{9b}31m";
    let mut first: serde_json::Value =
        serde_json::from_str(&support::claude_line(&sid, "/home/user/demo", 0)).unwrap();
    first["message"]["content"] = json!(format!("{evil} please fix the zebra bug"));
    let mut second: serde_json::Value =
        serde_json::from_str(&support::claude_line(&sid, "/home/user/demo", 1)).unwrap();
    second["message"]["content"] = json!([
        {"type": "text", "text": format!("The zebra is {evil} fixed.")},
        {"type": "tool_use", "id": "toolu_evil", "name": "Bash", "input": {"command": format!("echo '{evil}'")}}
    ]);
    let mut third: serde_json::Value =
        serde_json::from_str(&support::claude_line(&sid, "/home/user/demo", 2)).unwrap();
    third["message"]["content"] = json!([
        {"type": "tool_result", "tool_use_id": "toolu_evil", "content": format!("{evil}\n")}
    ]);
    let text = format!("{first}\n{second}\n{third}\n");
    support::append(&t, text.as_bytes());
    sb.acmd().args(["import"]).assert().success();

    for args in [
        vec!["sessions", "list"],
        vec!["sessions", "show", &sid],
        vec!["resume", &sid],
        vec!["handoff", &sid, "--to", "codex"],
        vec!["search", "zebra"],
        vec!["sessions", "show", &sid, "--json"],
    ] {
        let out = sb.acmd().args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let raw: Vec<char> = stdout
            .chars()
            .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
            .collect();
        assert_eq!(raw, Vec::<char>::new(), "{args:?} printed {stdout:?}");
        if args.contains(&"--json") {
            assert!(stdout.contains("\\u001b]0;pwned\\u0007"), "{stdout}");
        } else {
            assert!(
                stdout.contains("\u{fffd}]0;pwned\u{fffd}\u{fffd}[2J"),
                "{args:?}: {stdout}"
            );
        }
    }
}

/// A field that is one line on the terminal stays one: a project folder (a repository's
/// sub-folder may be named with a line break) or a session id (a 2.0 sub-agent file names its
/// parent with any `sessionId`) holding a newline cannot print a forged session line in
/// `sessions list`, or a forged fact in `sessions show` (attack review: both printed it).
#[test]
fn a_line_break_in_a_project_or_an_id_forges_no_line() {
    let sb = Sandbox::new();
    let sid = support::session_id(8);
    let forged = "2026-03-09 10:00  claude     99 msgs  11111111-2222-4333-8444-555555555555  Rotate the keys";
    let cwd = format!("/home/user/nl\n{forged}");
    let t = sb.transcript("nl", &sid);
    let mut text = String::new();
    for i in 0..2 {
        let mut v: serde_json::Value =
            serde_json::from_str(&support::claude_line(&sid, &cwd, i)).unwrap();
        v["cwd"] = json!(cwd);
        text.push_str(&format!("{v}\n"));
    }
    support::append(&t, text.as_bytes());
    // A 2.0 sub-agent file whose lines name their parent with a line break in it.
    let parent = format!("p\n{forged}\n");
    let sub = t.parent().unwrap().join("agent-5a5a5a5a.jsonl");
    let mut v: serde_json::Value =
        serde_json::from_str(&support::claude_line(&sid, "/home/user/nl", 0)).unwrap();
    v["sessionId"] = json!(parent);
    v["isSidechain"] = json!(true);
    support::append(&sub, format!("{v}\n").as_bytes());
    sb.acmd().args(["import"]).assert().success();
    let sub_id = format!("{parent}/agent-5a5a5a5a");
    for args in [
        vec!["sessions", "list"],
        vec!["sessions", "show", &sid],
        vec!["sessions", "show", &sub_id],
        vec!["export", &sid],
    ] {
        let out = sb.acmd().args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(
            !stdout.lines().any(|l| l.starts_with("2026-03-09")),
            "{args:?} printed a forged line: {stdout}"
        );
        assert!(
            stdout.contains(&format!("nl {forged}")) || stdout.contains(&format!("p {forged}")),
            "{args:?}: {stdout}"
        );
    }
}

/// `install --dry-run` says what the real install would do: an agent it would leave out (a
/// read-only settings.json, a hooks.json that does not parse) gives exit code 1 and an `error`
/// in `--json` naming the agent and why; the others are listed without one.
#[cfg(unix)]
#[test]
fn install_dry_run_names_each_agent_it_would_leave_out() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.claude_dir()).unwrap();
    std::fs::create_dir_all(sb.home.join(".gemini")).unwrap();
    let settings = sb.claude_dir().join("settings.json");
    std::fs::write(&settings, "{}\n").unwrap();
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o444)).unwrap();
    broken_cursor_hooks(&sb);
    let out = sb
        .acmd()
        .args(["install", "--dry-run", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let error_of = |agent: &str| -> Option<String> {
        let e = v
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["agent"] == agent)
            .unwrap_or_else(|| panic!("{agent} missing: {v}"));
        e["error"].as_str().map(str::to_string)
    };
    assert_eq!(
        error_of("claude").as_deref(),
        Some(
            "~/.claude/settings.json is read-only: this change cannot be applied until it is made writable"
        )
    );
    assert!(
        error_of("cursor").is_some_and(|e| e.contains("hooks.json") && e.contains("line 1")),
        "{v}"
    );
    assert_eq!(error_of("gemini"), None);
    assert_eq!(std::fs::read(&settings).unwrap(), b"{}\n");
}

/// `memtrail <args> --help` as one line of words (clap wraps it to the terminal's width).
fn help_words(sb: &Sandbox, args: &[&str]) -> String {
    let out = sb.acmd().args(args).arg("--help").output().unwrap();
    assert!(out.status.success(), "{args:?}");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The help texts say what README says: `purge --older-than` lists the forms `parse_date`
/// accepts, `redact --rescan` names everything it rewrites, and each README Usage line of a
/// command whose `--help` has `--json` shows `[--json]`.
#[test]
fn help_texts_agree_with_readme() {
    let sb = Sandbox::new();
    let help = |args: &[&str]| help_words(&sb, args);
    assert!(
        help(&["purge"]).contains(
            "--older-than <AGE> The age or date (messages before it go): an age like 90d, 12h, 30m, 2w; today, yesterday; YYYY-MM-DD (in UTC) or RFC 3339 --"
        ),
        "{}",
        help(&["purge"])
    );
    assert!(
        help(&["redact"]).contains(
            "--rescan Rewrite every stored message, session title, snapshot and reader state that the current rules change --"
        ),
        "{}",
        help(&["redact"])
    );
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    for cmd in [
        "install",
        "uninstall",
        "status",
        "repair",
        "doctor",
        "import",
        "sessions list",
        "sessions show",
        "sessions delete",
        "sessions capture",
        "resume",
        "purge",
        "redact",
        "sync",
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        if !help(&args).contains("--json") {
            continue;
        }
        let line = readme
            .lines()
            .find(|l| l.starts_with(&format!("memtrail {cmd} ")))
            .unwrap_or_else(|| panic!("no README Usage line for `memtrail {cmd}`"));
        assert!(line.contains("[--json]"), "README: {line}");
    }
    assert!(readme.contains(r#"(`memtrail search "ls -1"`)"#));
}

/// The help texts that name the agents name every agent of the registry, in its order
/// (`Agent::ALL`): the short names where an argument takes one (`hook`, `handoff --to`,
/// `install`/`uninstall --agent`), the product names in `memtrail --help`; and every short
/// name listed is accepted by the argument it documents.
#[test]
fn help_texts_list_every_agent_of_the_registry() {
    use memtrail_adapters::Agent;
    let sb = Sandbox::new();
    let help = |args: &[&str]| help_words(&sb, args);
    let short: Vec<&str> = Agent::ALL.iter().map(|a| a.as_str()).collect();
    let short = short.join(", ");
    let products: Vec<&str> = Agent::ALL.iter().map(|a| a.display_name()).collect();
    let products = products.join(", ");
    assert!(
        short.starts_with("claude, codex, gemini, ")
            && products.starts_with("Claude Code, Codex CLI, "),
        "{short} / {products}"
    );
    for (args, text) in [
        (
            &["hook"][..],
            format!("<AGENT> The agent whose hook this is: {short} Options:"),
        ),
        (
            &["handoff"][..],
            format!("--to <AGENT> The agent that takes over: {short} --"),
        ),
        (
            &["install"][..],
            format!(
                "--agent <AGENT> Only this agent (repeatable): {short} [default: every agent found] -"
            ),
        ),
        (
            &["uninstall"][..],
            format!(
                "--agent <AGENT> Only this agent (repeatable): {short} [default: every agent memtrail is registered with] -"
            ),
        ),
        (
            &[][..],
            format!(
                "memtrail captures the sessions of your coding agents ({products}) into one local SQLite store, makes them searchable"
            ),
        ),
    ] {
        let h = help(args);
        assert!(h.contains(&text), "{args:?}: {h}");
    }
    // `memtrail install --agent NAME --dry-run` accepts every name the help lists (and refuses
    // one it does not).
    let out = sb
        .acmd()
        .args(["install", "--agent", "nosuchagent", "--dry-run"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown agent `nosuchagent`"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in short.split(", ") {
        let out = sb
            .acmd()
            .args(["install", "--agent", name, "--dry-run"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("unknown agent"), "{name}: {err}");
    }
}

/// A Cursor `hooks.json` that does not parse (an object left open at line 1, column 25).
fn broken_cursor_hooks(sb: &Sandbox) {
    let cursor = sb.home.join(".cursor");
    std::fs::create_dir_all(&cursor).unwrap();
    std::fs::write(
        cursor.join("hooks.json"),
        b"{\"version\": 1, \"hooks\": {\n",
    )
    .unwrap();
}

/// A field of docs/json.md: its type cell (`integer`, `array of strings`, …) and its
/// "absent / null when" cell (`never`, `null when …`).
type DocField = (String, String);

/// docs/json.md, per command heading (`memtrail … --json`): each documented field's path
/// (`agents[].hook_runs[].at`), its type and when it is absent or null.
fn json_doc() -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, DocField>> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/json.md"))
        .unwrap();
    let mut doc = std::collections::BTreeMap::new();
    let mut current: Vec<String> = Vec::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            current = heading
                .split('`')
                .skip(1)
                .step_by(2)
                .filter(|c| c.starts_with("memtrail ") && c.ends_with(" --json"))
                .map(str::to_string)
                .collect();
            for c in &current {
                doc.insert(c.clone(), std::collections::BTreeMap::new());
            }
        } else if line.starts_with("| `") {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 7, "docs/json.md row: {line}");
            let path = cells[1].trim_matches('`').to_string();
            for c in &current {
                let fields = doc.get_mut(c).unwrap();
                let old = fields.insert(path.clone(), (cells[2].to_string(), cells[5].to_string()));
                assert!(old.is_none(), "{c}: {path} twice in docs/json.md");
            }
        }
    }
    doc
}

/// The paths of every field in `v` (as docs/json.md writes them) into `fields`, each with its
/// value, and of every object into `objects`; a field documented as `any` is not descended into.
fn json_paths<'v>(
    v: &'v Value,
    at: &str,
    doc: &std::collections::BTreeMap<String, DocField>,
    fields: &mut Vec<(String, &'v Value)>,
    objects: &mut std::collections::BTreeSet<String>,
) {
    match v {
        Value::Object(m) => {
            objects.insert(at.to_string());
            for (k, child) in m {
                let p = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                fields.push((p.clone(), child));
                if doc.get(&p).is_none_or(|(ty, _)| ty != "any") {
                    json_paths(child, &p, doc, fields, objects);
                }
            }
        }
        Value::Array(items) => {
            for item in items.iter().filter(|i| i.is_object()) {
                json_paths(item, &format!("{at}[]"), doc, fields, objects);
            }
        }
        _ => {}
    }
}

/// Whether `v` is of docs/json.md's type `ty` (`string`, `integer`, `number`, `bool`,
/// `object`, `array`, `array of strings`, `array of `[path, reason]` string pairs`, `any`).
fn json_type_matches(ty: &str, v: &Value) -> bool {
    match ty {
        "any" => true,
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "bool" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "array of strings" => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
        "array of `[path, reason]` string pairs" => v.as_array().is_some_and(|a| {
            a.iter().all(|p| {
                p.as_array()
                    .is_some_and(|p| p.len() == 2 && p.iter().all(Value::is_string))
            })
        }),
        _ => panic!("docs/json.md: unknown type `{ty}`"),
    }
}

/// Every `--json` output has exactly the fields docs/json.md lists for it: none that the page
/// does not list, and every field listed as never absent wherever its object is; each value is
/// of the page's type, and `null` only where the page says when it is null (never for a field
/// "never" absent). Each command of the page is run (on a store with a session, a hook run,
/// Codex's untrusted hooks and a Cursor config that does not parse, so that the optional parts
/// show; `status` also on an unreadable store and on none), and only those.
#[test]
fn json_outputs_match_docs_json_md() {
    let sb = Sandbox::new();
    let t = grow_transcript(&sb, 3);
    let sid = session_id_of(&t);
    std::fs::create_dir_all(sb.home.join(".codex")).unwrap();
    broken_cursor_hooks(&sb);
    let run = |args: &[&str]| -> Value {
        let out = sb.cmd().args(args).output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "memtrail {args:?} printed no JSON ({e}): {} {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    };
    let mut outputs: Vec<(&str, Value)> = vec![
        (
            "memtrail install --json",
            run(&["install", "--dry-run", "--json"]),
        ),
        (
            "memtrail install --json",
            run(&["install", "--yes", "--json"]),
        ),
        ("memtrail import --json", run(&["import", "--json"])),
    ];
    sb.acmd()
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&t, &sid))
        .assert()
        .success();
    for (doc, args) in [
        ("memtrail status --json", vec!["status", "--json"]),
        ("memtrail doctor --json", vec!["doctor", "--json"]),
        ("memtrail search --json", vec!["search", "cargo", "--json"]),
        (
            "memtrail sessions list --json",
            vec!["sessions", "list", "--json"],
        ),
        (
            "memtrail sessions show --json",
            vec!["sessions", "show", &sid, "--json"],
        ),
        ("memtrail resume --json", vec!["resume", &sid, "--json"]),
        ("memtrail repair --json", vec!["repair", "--json"]),
        (
            "memtrail purge --json",
            vec!["purge", "--older-than", "1d", "--dry-run", "--json"],
        ),
        (
            "memtrail redact --rescan --json",
            vec!["redact", "--rescan", "--json"],
        ),
        (
            "memtrail sessions delete --json",
            vec!["sessions", "delete", &sid, "--yes", "--json"],
        ),
        (
            "memtrail sessions capture --json",
            vec!["sessions", "capture", &sid, "--json"],
        ),
        (
            "memtrail config show --json",
            vec!["config", "show", "--json"],
        ),
        (
            "memtrail uninstall --json",
            vec!["uninstall", "--dry-run", "--json"],
        ),
        (
            "memtrail uninstall --json",
            vec!["uninstall", "--yes", "--json"],
        ),
    ] {
        outputs.push((doc, run(&args)));
    }
    // The models: none, then the tiny test model installed (the store has no vectors).
    outputs.push((
        "memtrail models list --json",
        run(&["models", "list", "--json"]),
    ));
    crate::support::write_tiny_model(
        &sb.home
            .join(".local/share/memtrail/models/minilm-l6-static"),
    );
    outputs.push((
        "memtrail models list --json",
        run(&["models", "list", "--json"]),
    ));
    outputs.push((
        "memtrail models remove --json",
        run(&["models", "remove", "--vectors", "--json"]),
    ));
    outputs.push((
        "memtrail models remove --json",
        run(&["models", "remove", "--json"]),
    ));
    let unreadable = sb.home.join("unreadable.db");
    std::fs::write(
        &unreadable,
        b"not a SQLite database, not even close: 0123456789",
    )
    .unwrap();
    let unreadable = unreadable.to_str().unwrap().to_string();
    outputs.push((
        "memtrail status --json",
        run(&["status", "--db", &unreadable, "--json"]),
    ));
    let missing = sb.home.join("no-such-dir/memtrail.db");
    outputs.push((
        "memtrail status --json",
        run(&["status", "--db", missing.to_str().unwrap(), "--json"]),
    ));
    assert!(!missing.exists(), "status creates no store");
    // `sync` needs a PostgreSQL (skipped with a note without one, unless MEMTRAIL_REQUIRE_PG=1).
    let pg = memtrail_testkit::pg::test_database("json_outputs_sync");
    if let Some(url) = &pg {
        let url = format!("{url}?sslmode=disable");
        outputs.push((
            "memtrail sync --json",
            run(&["sync", "--init", &url, "--label", "json-doc", "--json"]),
        ));
        outputs.push(("memtrail sync --json", run(&["sync", "--json"])));
    }
    let doc = json_doc();
    let run_docs: std::collections::BTreeSet<&str> = outputs.iter().map(|(d, _)| *d).collect();
    let mut documented: std::collections::BTreeSet<&str> = doc.keys().map(String::as_str).collect();
    if pg.is_none() {
        documented.remove("memtrail sync --json");
    }
    assert_eq!(run_docs, documented, "the commands of docs/json.md");
    let mut seen = std::collections::BTreeSet::new();
    for (name, v) in &outputs {
        let fields_doc = &doc[*name];
        let mut values = Vec::new();
        let mut objects = std::collections::BTreeSet::new();
        json_paths(v, "", fields_doc, &mut values, &mut objects);
        for (path, value) in &values {
            let Some((ty, absent)) = fields_doc.get(path) else {
                continue;
            };
            if value.is_null() {
                assert!(
                    absent.contains("null"),
                    "{name}: {path} is null, docs/json.md says \"{absent}\": {v:#}"
                );
            } else {
                assert!(
                    json_type_matches(ty, value),
                    "{name}: {path} is {value}, docs/json.md says {ty}"
                );
            }
        }
        let fields: std::collections::BTreeSet<String> =
            values.into_iter().map(|(p, _)| p).collect();
        let undocumented: Vec<&String> = fields
            .iter()
            .filter(|f| !fields_doc.contains_key(*f))
            .collect();
        assert_eq!(
            undocumented,
            Vec::<&String>::new(),
            "{name}: not in docs/json.md: {v:#}"
        );
        for (path, (_, absent)) in fields_doc {
            let parent = path.rsplit_once('.').map_or("", |(p, _)| p);
            if absent.starts_with("never") && objects.contains(parent) {
                assert!(fields.contains(path), "{name}: {path} is missing: {v:#}");
            }
        }
        seen.extend(fields.into_iter().map(|f| format!("{name} {f}")));
    }
    // The optional parts the scenario is built to show did show.
    for f in [
        "memtrail status --json agents[].hook_runs[].event",
        "memtrail status --json agents[].registration.items[].error",
        "memtrail status --json notices[].notice",
        "memtrail status --json store.error",
        "memtrail status --json store.exists",
        "memtrail status --json claude_retention.error",
        "memtrail doctor --json problems[].fix",
        "memtrail install --json [].error",
        "memtrail install --json [].diff",
        "memtrail search --json hits[].snippet",
        "memtrail sessions show --json messages[].tool_calls[].exit_code",
    ] {
        assert!(seen.contains(f), "{f} was not exercised");
    }
    if pg.is_some() {
        for f in [
            "memtrail sync --json init",
            "memtrail sync --json init.migrated",
        ] {
            assert!(seen.contains(f), "{f} was not exercised");
        }
    }
}

#[test]
fn web_refuses_a_public_address_without_a_token() {
    let sb = Sandbox::new();
    let out = sb
        .cmd()
        .args(["web", "--bind", "0.0.0.0", "--port", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "memtrail: refusing to listen on 0.0.0.0 without an access token: anyone who can reach this machine would read every session. Set one with --token or MEMTRAIL_WEB_TOKEN (at least 16 characters), or keep the default --bind 127.0.0.1\n"
    );
    let out = sb
        .cmd()
        .args(["web", "--bind", "0.0.0.0", "--port", "0"])
        .env("MEMTRAIL_WEB_TOKEN", "fifteen-chars!!")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "memtrail: the access token must be at least 16 characters long\n"
    );
}

/// The Claude Code lines of turn `k` of a session (`docs/agents/claude.md`): a prompt, a Bash
/// call, its result (every fifth one an error), and the answer.
fn tool_turn(sid: &str, cwd: &str, k: u64) -> String {
    let base = |uuid: String, secs: u64| {
        json!({"parentUuid": null, "isSidechain": false, "userType": "external", "cwd": cwd,
               "sessionId": sid, "version": "2.1.49", "gitBranch": "main", "uuid": uuid,
               "timestamp": format!("2026-11-20T{:02}:{:02}:{:02}.000Z", 10 + secs / 3600, (secs / 60) % 60, secs % 60)})
    };
    let mut prompt = base(format!("p{k}"), k * 8);
    prompt["type"] = json!("user");
    prompt["message"] = json!({"role": "user", "content": format!("run the tests of module m{k}")});
    let mut call = base(format!("c{k}"), k * 8 + 1);
    call["type"] = json!("assistant");
    call["message"] = json!({"model": "claude-sonnet-4-5", "id": format!("msg_call_{k}"),
        "type": "message", "role": "assistant",
        "content": [{"type": "tool_use", "id": format!("toolu_{k}"), "name": "Bash",
                     "input": {"command": format!("cargo test -p m{k}")}}],
        "stop_reason": null, "usage": {"input_tokens": 3, "output_tokens": 5}});
    let failed = k.is_multiple_of(5);
    let mut result = base(format!("r{k}"), k * 8 + 2);
    result["type"] = json!("user");
    result["message"] = json!({"role": "user", "content": [{"tool_use_id": format!("toolu_{k}"),
        "type": "tool_result", "is_error": failed,
        "content": if failed { format!("error[E0425]: cannot find value `x{k}`") } else { "test result: ok".to_string() }}]});
    let mut answer = base(format!("a{k}"), k * 8 + 3);
    answer["type"] = json!("assistant");
    answer["message"] = json!({"model": "claude-sonnet-4-5", "id": format!("msg_answer_{k}"),
        "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": format!("module m{k} is done")}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 5}});
    [prompt, call, result, answer]
        .iter()
        .map(|v| format!("{v}\n"))
        .collect()
}

/// The Stop hooks of a growing session keep its running snapshot state at most
/// `SNAPSHOT_STATE_EVERY` (100) events behind the message before its last, and never cover the
/// last message (a later line of it would drop the state); the compaction's snapshot built
/// from that state is the one built from every event.
#[test]
fn stop_hooks_keep_the_snapshot_state_near_the_session_and_compaction_matches_the_full_build() {
    use std::io::Write as _;
    let sb = Sandbox::new();
    let sid = support::session_id(41);
    let cwd = "/home/user/grow";
    let t = sb.transcript("grow", &sid);
    let mut file = std::fs::File::create(&t).unwrap();
    let db = sb.db();
    let state = || {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let last_message: i64 = conn
            .query_row("SELECT max(seq) FROM messages", [], |r| r.get(0))
            .unwrap();
        let covered: Option<i64> = conn
            .query_row("SELECT last_seq FROM snapshot_states", [], |r| r.get(0))
            .ok();
        // Events of the messages before the last one that the state does not hold.
        let behind: i64 = conn
            .query_row(
                "SELECT count(*) FROM events WHERE seq > ?1 AND seq < ?2",
                [covered.unwrap_or(i64::MIN), last_message],
                |r| r.get(0),
            )
            .unwrap();
        (covered, last_message, behind)
    };
    let (mut first_state, mut advances, mut last_covered) = (None, 0, None);
    for k in 1..=120u64 {
        file.write_all(tool_turn(&sid, cwd, k).as_bytes()).unwrap();
        file.flush().unwrap();
        let out = sb
            .acmd()
            .args(["hook", "claude"])
            .write_stdin(support::stop_payload(&t, &sid, cwd))
            .output()
            .unwrap();
        assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
        let (covered, last_message, behind) = state();
        assert!(behind < 100, "turn {k}: {behind} events behind");
        if let Some(c) = covered {
            assert!(c < last_message, "turn {k}: the last message is covered");
            first_state.get_or_insert(k);
            advances += (Some(c) != last_covered) as usize;
        }
        last_covered = covered;
    }
    // A prompt and a command a turn, and an error every fifth turn (the answers have none):
    // 120 + 120 + 24 events. The first state after ~100 of them, then again every ~100.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let events: i64 = conn
        .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(events, 264);
    let first = first_state.expect("a state was saved");
    assert!((20..=60).contains(&first), "first state at turn {first}");
    assert!(advances >= 2, "{advances} advances");
    let log = std::fs::read_to_string(sb.hook_log()).unwrap_or_default();
    assert!(
        !log.contains("error") && !log.contains("snapshot state"),
        "{log}"
    );
    // The snapshot from the state, then from every event (the state removed): the same.
    let from_state = sb.json(&["resume", &sid, "--json"])["snapshot"].clone();
    conn.execute("DELETE FROM snapshot_states", []).unwrap();
    let full = sb.json(&["resume", &sid, "--json"])["snapshot"].clone();
    assert_eq!(from_state, full);
    assert!(
        full["text"].as_str().unwrap().contains("cargo test -p m"),
        "{full}"
    );
}

/// The hook log and `status` hold the payload's own fields (the event's name, the session id)
/// redacted and on one line: a newline cannot forge a log line, an escape sequence cannot
/// drive the terminal of whoever reads the log, a token in the event's name is not kept.
#[test]
fn payload_fields_reach_the_hook_log_and_status_redacted_on_one_line() {
    let sb = Sandbox::new();
    let token = "ghp_E1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8";
    for payload in [
        json!({"hook_event_name": "Stop", "session_id": "abc\n2026-12-04T22:06:21.417Z claude Stop session=FORGED error: fake entry", "transcript_path": "/nonexistent/a.jsonl", "cwd": "/"}),
        json!({"hook_event_name": format!("Stop {token}"), "session_id": "abc", "transcript_path": "/nonexistent/a.jsonl", "cwd": "/"}),
        json!({"hook_event_name": "Stop", "session_id": "s\u{1b}]52;c;aGk=\u{7}\u{1b}[2J\u{0}", "transcript_path": "/nonexistent/\u{1b}[31ma.jsonl", "cwd": "/"}),
    ] {
        let out = sb
            .acmd()
            .args(["hook", "claude"])
            .write_stdin(payload.to_string())
            .output()
            .unwrap();
        assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    }
    let log = std::fs::read_to_string(sb.hook_log()).unwrap();
    assert_eq!(log.lines().count(), 3, "{log}");
    assert!(
        !log.lines()
            .any(|l| l.contains("session=FORGED") && !l.contains("session=abc ")),
        "{log}"
    );
    assert!(!log.contains(token), "{log}");
    assert!(log.contains("[redacted:github_token]"), "{log}");
    assert!(!log.chars().any(|c| c.is_control() && c != '\n'), "{log:?}");
    // Hook errors make `status` exit 1; its JSON is on stdout all the same.
    let out = sb.acmd().args(["status", "--json"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("\"hook_runs\""), "{text}");
    assert!(!text.contains(token), "{text}");
    assert!(!text.contains("\\u001b"), "{text}");
}

/// `install` from a binary of another name (a copy, a link) is refused before anything
/// changes: the entries it would write are recognised by the name `memtrail`, so `uninstall`
/// and `status` could never find them again.
#[test]
fn install_from_a_binary_of_another_name_is_refused() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.claude_dir()).unwrap();
    std::fs::write(sb.claude_dir().join("settings.json"), "{}\n").unwrap();
    let before = snapshot(&sb.home);
    let bin = tempfile::tempdir().unwrap();
    let link = bin.path().join("mt-copy");
    std::os::unix::fs::symlink(support::memtrail_bin(), &link).unwrap();
    let out = std::process::Command::new(&link)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(
            sb.cmd()
                .get_envs()
                .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))),
        )
        .args(["install", "--agent", "claude", "--yes"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("install needs the binary to be named `memtrail`") && err.contains("mt-copy"),
        "{err}"
    );
    assert!(before == snapshot(&sb.home), "install changed files");
}

/// A word found in the index's CJK column gets its snippet from the message's own text, with
/// the words around it (before, only the CJK characters were shown: `src/parse.rs の
/// parse_temp に負の値…` as `の\nに**負の値**…`).
#[test]
fn a_cjk_hit_is_shown_with_the_words_around_it() {
    let sb = Sandbox::new();
    let t = grow_transcript(&sb, 3);
    let out = sb
        .acmd()
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&t, &session_id_of(&t)))
        .output()
        .unwrap();
    assert!(out.status.success());
    let v = sb.json(&["search", "テスト", "--json"]);
    let snippets: Vec<&str> = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["snippet"].as_str().unwrap())
        .collect();
    assert!(
        snippets.contains(&"すべての**テスト**が通りました ✅ (3 passed)"),
        "{snippets:?}"
    );
    assert!(snippets.iter().all(|s| !s.contains('\n')), "{snippets:?}");
    // Korean keeps its spaces; the text's own U+0001/U+0002 (a shell prompt's markers) are not
    // taken for highlight marks.
    let sid = support::session_id(78);
    let t2 = sb.transcript("ko", &sid);
    let line = support::claude_prompt(
        &sid,
        "/home/user/ko",
        "k1",
        "음수 값을 테스트해 주세요 \u{1}ps1\u{2} ok",
    );
    std::fs::write(&t2, format!("{line}\n")).unwrap();
    sb.json(&["import", "--json"]);
    let v = sb.json(&["search", "음수", "--json"]);
    assert_eq!(
        v["hits"][0]["snippet"], "**음수** 값을 테스트해 주세요 \u{fffd}ps1\u{fffd} ok",
        "{v}"
    );
    // A NUL (JSON's `\u0000`) no longer drops the text after it from a snippet (FTS5 builds
    // snippets with C strings): it is shown as U+FFFD, in the prompt and in a tool's output.
    let sid = support::session_id(79);
    let line = support::claude_prompt(
        &sid,
        "/home/user/nul",
        "n1",
        "the zebrafoo header \u{0} then zebrafoo again",
    );
    std::fs::write(sb.transcript("nul", &sid), format!("{line}\n")).unwrap();
    sb.json(&["import", "--json"]);
    let v = sb.json(&["search", "zebrafoo", "--json"]);
    assert_eq!(
        v["hits"][0]["snippet"], "the **zebrafoo** header \u{fffd} then **zebrafoo** again",
        "{v}"
    );
    let v = sb.json(&["search", "then", "--session", &sid, "--json"]);
    assert_eq!(v["hits"].as_array().unwrap().len(), 1, "{v}");
}

/// The MCP server's replies carry transcript text with DEL, C1 and the reordering characters
/// as `\u` escapes (an agent may print a tool result to its terminal): no raw byte of them on
/// the wire, the same text for the client once parsed.
#[test]
fn mcp_replies_escape_what_would_act_on_a_terminal() {
    let sb = Sandbox::new();
    let sid = support::session_id(77);
    let t = sb.transcript("evil", &sid);
    let text = "zebrafish del\u{7f} csi\u{9b}31m \u{202e}gnirts";
    let line = support::claude_prompt(&sid, "/home/user/evil", "u1", text);
    std::fs::write(&t, format!("{line}\n")).unwrap();
    sb.json(&["import", "--json"]);
    let mut m = support::Mcp::start(&sb);
    m.send(&json!({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
                   "params": {"name": "get_session", "arguments": {"session_id": sid}}}));
    let raw = loop {
        let l = m.next_line();
        if serde_json::from_slice::<Value>(&l).is_ok_and(|v| v["id"] == 900) {
            break l;
        }
    };
    for bad in ["\u{7f}", "\u{9b}", "\u{202e}"] {
        assert!(
            !raw.windows(bad.len()).any(|w| w == bad.as_bytes()),
            "{bad:?} raw in {}",
            String::from_utf8_lossy(&raw)
        );
    }
    let v: Value = serde_json::from_slice(&raw).unwrap();
    assert!(v.to_string().contains("zebrafish"), "{v}");
    // The result's text copy, what an agent shows, holds them as escapes even once parsed.
    let shown = v["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        shown.contains("csi\\u009b31m \\u202egnirts")
            && !shown.contains(['\u{7f}', '\u{9b}', '\u{202e}']),
        "{shown}"
    );
    // Parsed, the client has the message's text as stored.
    assert!(
        v["result"]["structuredContent"]
            .to_string()
            .contains("csi\u{9b}31m \u{202e}gnirts"),
        "{v}"
    );
}

/// `import` names the files whose malformed lines it skipped, with how many each (text and
/// JSON), so that a broken transcript can be found.
#[test]
fn import_names_the_files_with_malformed_lines() {
    let sb = Sandbox::new();
    let sid = support::session_id(79);
    let t = sb.transcript("broken", &sid);
    let good = support::claude_line(&sid, "/home/user/broken", 0);
    // A malformed line, a line of a known type that holds no message, one of a type the
    // reader does not know.
    std::fs::write(
        &t,
        format!(
            "{good}\n{{\"type\": \"user\", \"message\": \n{{\"type\":\"file-history-snapshot\"}}\n{{\"type\":\"hologram\"}}\n{good}\n"
        ),
    )
    .unwrap();
    let out = sb.acmd().args(["import"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("3 lines skipped (1 without a message, 1 of an unknown type, 1 malformed)"),
        "{text}"
    );
    assert!(
        text.contains(&format!("  1 malformed line skipped in {}\n", t.display())),
        "{text}"
    );
    // Read again from the start (a fresh store): the same file, in the JSON.
    std::fs::remove_dir_all(sb.home.join(".local/share/memtrail")).unwrap();
    let v = sb.json(&["import", "--json"]);
    let claude = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "claude")
        .unwrap();
    assert_eq!(
        claude["malformed_files"],
        json!([[t.display().to_string(), 1]]),
        "{v}"
    );
}

/// An MCP tool's misspelled argument is an error naming it (not silently ignored, which would
/// search every session for `session`), and a relative `project` is refused with the reason
/// (it would match nothing).
/// The server's instructions, which every agent's model reads (Codex, Gemini CLI, … as well as
/// Claude Code), say whose sessions it holds without telling a Codex model that they are
/// "every past session of Claude Code (and other agents)".
#[test]
fn mcp_instructions_speak_to_every_agent() {
    let sb = Sandbox::new();
    let mut m = support::Mcp::spawn(&sb, None, &[]);
    let init = m.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "codex-mcp-client", "version": "0"}}),
    );
    let text = init["result"]["instructions"].as_str().unwrap_or_default();
    assert!(
        text.contains("every past session of every coding agent on this machine")
            && !text.contains("of Claude Code (and other agents)"),
        "{init}"
    );
}

#[test]
fn mcp_refuses_unknown_arguments_and_a_relative_project() {
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    sb.json(&["import", "--json"]);
    let mut m = support::Mcp::start(&sb);
    let mut call = |id: i64, name: &str, args: Value| -> Value {
        m.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                       "params": {"name": name, "arguments": args}}));
        loop {
            let l = m.next_line();
            if let Ok(v) = serde_json::from_slice::<Value>(&l)
                && v["id"] == id
            {
                return v;
            }
        }
    };
    let v = call(1, "search", json!({"query": "todo", "session": "nope"}));
    let text = v.to_string();
    assert!(text.contains("unknown field `session`"), "{v}");
    let v = call(2, "list_sessions", json!({"project": "relative/path"}));
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert!(
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("project must be an absolute folder"),
        "{v}"
    );
    // The same with an absolute folder works.
    let v = call(3, "list_sessions", json!({"project": "/home/user/demo"}));
    assert_ne!(v["result"]["isError"], true, "{v}");
    assert!(v.to_string().contains("3f2a9c4e"), "{v}");
    // The tools say what they do to the user's machine: five only read, `remember` adds a note;
    // none reaches outside it (a client may let the read-only ones run without asking).
    m.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}));
    let list = loop {
        let l = m.next_line();
        if let Ok(v) = serde_json::from_slice::<Value>(&l)
            && v["id"] == 4
        {
            break v;
        }
    };
    let tools = list["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 6, "{list}");
    for t in tools {
        let a = &t["annotations"];
        let writes = t["name"] == "remember";
        assert_eq!(a["readOnlyHint"], !writes, "{t}");
        assert_eq!(a["openWorldHint"], false, "{t}");
        if writes {
            assert_eq!(a["destructiveHint"], false, "{t}");
        }
    }
}

/// Errors raised before a tool runs (a value of the wrong type, an unknown field, an unknown
/// tool) quote what the client sent: a secret there comes back redacted, as in a tool's own
/// errors (an unknown `category`). Over raw JSON-RPC and, when Python's `mcp` is installed,
/// through the real MCP client (`tests/e2e/mcp_client.py`).
#[test]
fn mcp_errors_never_echo_a_secret_argument() {
    let token = "ghp_R7mQ2xK9vL4nB8wT3yH6jD1fG5sA0cZ2pE9u";
    let marker = "[redacted:github_token]";
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    sb.json(&["import", "--json"]);
    let bad = [
        ("search", json!({"query": "todo", "limit": token})),
        ("search", json!({"query": "todo", token: 1})),
        ("timeline", json!({"category": token})),
    ];
    let mut m = support::Mcp::start(&sb);
    for (tool, args) in &bad {
        let v = m.call(tool, args.clone());
        assert_eq!(v["result"]["isError"], true, "{v}");
        let text = v.to_string();
        assert!(!text.contains(token) && text.contains(marker), "{v}");
    }
    let v = m.call(token, json!({}));
    assert!(
        v["error"].is_object() && !v.to_string().contains(token),
        "{v}"
    );
    let Some(python) = crate::common::mcp_python_or_skip() else {
        return;
    };
    let calls = Value::from(bad.iter().map(|(t, a)| json!([t, a])).collect::<Vec<_>>()).to_string();
    let client = |args: &[&str]| support::mcp_client(&python, &sb, args);
    let out = client(&["--calls", &calls]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && !stdout.contains(token), "{out:?}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    for c in v["calls"].as_array().unwrap() {
        assert_eq!(c["is_error"], true, "{v:#}");
        assert!(c["text"].as_str().unwrap().contains(marker), "{v:#}");
    }
    // An unknown tool: the call fails with the server's error, which does not quote it.
    let out = client(&[token, "{}"]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success() && !said.contains(token), "{said}");
}

/// `uninstall --purge` never changes a file it is pointed at to count it (a dry run changes
/// nothing), and refuses to delete one that is not a memtrail store (`MEMTRAIL_DB` naming
/// another file).
#[test]
fn purge_reads_without_changing_and_refuses_a_foreign_file() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let notes = sb.home.join("notes.txt");
    std::fs::write(&notes, "my notes\n").unwrap();
    std::fs::set_permissions(&notes, std::fs::Permissions::from_mode(0o664)).unwrap();
    let run = |args: &[&str]| {
        sb.acmd()
            .env("MEMTRAIL_DB", &notes)
            .args(args)
            .output()
            .unwrap()
    };
    let dry = run(&["uninstall", "--purge", "--dry-run"]);
    let yes = run(&["uninstall", "--purge", "--yes"]);
    for out in [&dry, &yes] {
        assert!(!out.status.success(), "{out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("is not a memtrail store"),
            "{out:?}"
        );
    }
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes\n");
    let mode = std::fs::metadata(&notes).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o664, "the file's mode is untouched");
    // Another program's SQLite database with a schema version of its own (a review: deleted
    // as "a store whose content cannot be read").
    let app = sb.home.join("app.db");
    {
        let c = rusqlite::Connection::open(&app).unwrap();
        c.execute_batch(
            "PRAGMA user_version = 3; CREATE TABLE notes (x); INSERT INTO notes VALUES ('keep');",
        )
        .unwrap();
    }
    let before = std::fs::read(&app).unwrap();
    let out = sb
        .acmd()
        .env("MEMTRAIL_DB", &app)
        .args(["uninstall", "--purge", "--yes"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not a memtrail store"),
        "{out:?}"
    );
    assert_eq!(std::fs::read(&app).unwrap(), before);
    // A real store: counted, and the dry run leaves its bytes as they were.
    sb.install_fixture_projects();
    sb.json(&["import", "--json"]);
    let db = sb.home.join(".local/share/memtrail/memtrail.db");
    let before = std::fs::read(&db).unwrap();
    let out = sb
        .acmd()
        .args(["uninstall", "--purge", "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("(2 sessions, 6 messages)"),
        "{out:?}"
    );
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

/// `uninstall --purge` says which running processes still hold the store it deleted (their
/// data stays on disk until they let it go; a review: a `memtrail web` kept serving it, silent).
#[test]
fn purge_names_the_processes_that_still_hold_the_store() {
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    sb.json(&["import", "--json"]);
    let db = sb.home.join(".local/share/memtrail/memtrail.db");
    // A process with the store open on a descriptor (as a server's connection is).
    let mut holder = std::process::Command::new("sh")
        .arg("-c")
        .arg("exec 3<\"$1\"; exec sleep 60")
        .arg("sh")
        .arg(&db)
        .spawn()
        .unwrap();
    let pid = holder.id();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default() != "sleep\n" {
        assert!(
            std::time::Instant::now() < deadline,
            "the holder did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = sb
        .acmd()
        .args(["uninstall", "--purge", "--yes"])
        .output()
        .unwrap();
    let _ = holder.kill();
    let _ = holder.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(!db.exists());
    assert!(
        stdout.contains(&format!("note: still open in 1 process (sleep pid {pid})")),
        "{stdout}"
    );
    // Nothing holds it: no note.
    sb.json(&["import", "--json"]);
    let out = sb
        .acmd()
        .args(["uninstall", "--purge", "--yes"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("still open"),
        "{out:?}"
    );
}

/// An access token lets in whoever presents it, another local account too (the check of the
/// connection's account is for a page without one): given with `--token`, it is in the process
/// list for every local user while the page runs, and `web` says so on stderr, as `sync
/// --init` does for a password; from MEMTRAIL_WEB_TOKEN it says nothing (attack review).
#[test]
fn a_token_on_the_command_line_is_warned_about() {
    use std::io::BufRead;
    let sb = Sandbox::new();
    let token = "0123456789abcdef0123";
    for (args, env, warned) in [
        (vec!["--token", token], None, true),
        (vec![], Some(token), false),
    ] {
        let mut cmd = sb.cmd();
        cmd.args(["web", "--port", "0"]).args(&args);
        if let Some(t) = env {
            cmd.env("MEMTRAIL_WEB_TOKEN", t);
        }
        let mut web = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        std::io::BufReader::new(web.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert!(first.starts_with("memtrail web: http://"), "{first}");
        web.kill().unwrap();
        let out = web.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err.contains("visible to other local users in the process list"),
            warned,
            "{args:?}: {err}"
        );
        assert!(!err.contains(token), "{err}");
    }
}

/// `memtrail web` without a token is its user's: another local account connecting to the
/// loopback port is refused (403), the user's own connection answered. Needs root (to run the
/// client as `nobody` with `su`); elsewhere the test says so and checks the user's side only.
#[test]
fn the_web_page_refuses_another_local_account() {
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    sb.json(&["import", "--json"]);
    let (web, port) = support::web_on(&sb, &[]);
    let _web = support::KillOnDrop(web);
    let (code, page) = support::web_request(port, "/sessions", None);
    assert_eq!(code, 200, "{page}");
    let root = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false);
    let su = Path::new("/bin/su").exists() || Path::new("/usr/bin/su").exists();
    if !root || !su {
        eprintln!("not root (or no su): another account's request is not tried");
        return;
    }
    let script = format!(
        "import urllib.request, urllib.error\ntry:\n    urllib.request.urlopen('http://127.0.0.1:{port}/sessions')\n    print(200)\nexcept urllib.error.HTTPError as e:\n    print(e.code, e.read().decode())\n"
    );
    let out = std::process::Command::new("su")
        .args(["-s", "/bin/sh", "nobody", "-c"])
        .arg(format!("python3 -c \"{}\"", script.replace('"', "\\\"")))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.starts_with("403 "), "{out:?}");
    assert!(
        said.contains("another account on this machine is not let in"),
        "{said}"
    );
    assert!(!said.contains("3f2a9c4e"), "no session is shown: {said}");
}

/// A pending entry's fields are shown on one line by `status`: an entry written by something
/// else than memtrail (a prompt-injected agent can write in `pending/`) with line breaks in its
/// agent cannot add lines of its own (`sync: …`) to the report.
#[test]
fn status_shows_a_pending_entrys_agent_on_one_line() {
    let sb = Sandbox::new();
    sb.json(&["import", "--json"]);
    let pending = sb.home.join(".local/state/memtrail/pending");
    std::fs::create_dir_all(&pending).unwrap();
    for (name, bytes) in [
        ("0123456789abcdef0123456789abcdef", json!(50_000_000)),
        ("fedcba9876543210fedcba9876543210", json!(null)),
    ] {
        let entry = json!({"db": sb.db().display().to_string(),
            "agent": "vscode\n\nsync: everything pushed (forged)\n", "path": "/x/a.json",
            "session": null, "whole_file_bytes": bytes});
        std::fs::write(pending.join(name), entry.to_string()).unwrap();
    }
    let text = sb.ok(&["status"]);
    assert!(text.contains("whole-file session waits"), "{text}");
    assert!(text.contains("transcript waits"), "{text}");
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("sync: everything pushed")),
        "{text}"
    );
}

/// Issue 18 ("candidate caps with an honest 'ranked the newest N of M'"): a search whose words
/// are in more messages than it ranks (1024, per alternative, among those its filters pass)
/// says that only the newest were ranked: a note on stderr, `newest_only` in `--json`, in the
/// MCP tool's result (with a `ranking_note`; over raw JSON-RPC and through the real Python
/// client) and a note on the web page; a search whose matches were all ranked says nothing.
#[test]
fn a_search_that_ranked_only_its_newest_matches_says_so() {
    let sb = Sandbox::new();
    let sid = support::long_session(&sb);
    let note = "only the newest 1024 matches";
    let prefix: &[(&str, &[&str], bool)] = &[("modul*", &[], true)];
    let cases = support::NEWEST_ONLY_CASES.iter().chain(prefix);
    for &(q, filters, newest_only) in cases {
        let out = sb.cmd().args(["search", q]).args(filters).output().unwrap();
        assert!(out.status.success(), "{q} {filters:?}: {out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("1. "), "{q} {filters:?}: no hit: {stdout}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.contains(note), newest_only, "{q} {filters:?}: {err}");
        if newest_only {
            assert_eq!(
                err.contains("that pass the filters"),
                !filters.is_empty(),
                "{err}"
            );
        }
        let v = sb.json(&[&["search", q, "--json"][..], filters].concat());
        assert_eq!(v["newest_only"], newest_only, "{q} {filters:?}: {v}");
    }
    // The note names only the options that can still narrow the search: not the agent or the
    // project of a session asked for, nor one already given; an earlier end date when one is.
    for (filters, hint) in [
        (
            &[][..],
            "more words, or --until, --agent or --project, reach them",
        ),
        (
            &["--role", "user"][..],
            "more words, or --until, --agent or --project, reach them",
        ),
        (
            &["--session", &sid[..8]][..],
            "more words, or --until, reach them",
        ),
        (
            &["--agent", "claude"][..],
            "more words, or --until or --project, reach them",
        ),
        (
            &["--until", "2027-01-01", "--project", "/home/user/bound"][..],
            "more words, or an earlier --until or --agent, reach them",
        ),
    ] {
        let out = sb
            .cmd()
            .args(["search", "module"])
            .args(filters)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && err.contains(note),
            "{filters:?}: {out:?}"
        );
        assert!(err.trim_end().ends_with(hint), "{filters:?}: {err}");
    }
    // The MCP tool, over raw JSON-RPC.
    let mut m = support::Mcp::start(&sb);
    for (q, newest_only) in [("module", true), ("refactor", false)] {
        let v = m.call("search", json!({"query": q, "mode": "lexical"}));
        let r = &v["result"]["structuredContent"];
        assert_eq!(r["newest_only"], newest_only, "{q}: {v}");
        assert_eq!(
            r["ranking_note"].as_str().is_some_and(|n| n.contains(note)),
            newest_only,
            "{q}: {v}"
        );
    }
    // Its note names what can still narrow the search, as the CLI's does.
    for (filters, hint) in [
        (
            json!({}),
            "add words, or narrow by until, agent or project, to reach them",
        ),
        (
            json!({"agent": "claude"}),
            "add words, or narrow by until or project, to reach them",
        ),
        (
            json!({"session_id": &sid, "until": "2027-01-01"}),
            "add words, or narrow by an earlier until, to reach them",
        ),
    ] {
        let mut args = json!({"query": "module", "mode": "lexical"});
        args.as_object_mut()
            .unwrap()
            .extend(filters.as_object().unwrap().clone());
        let v = m.call("search", args);
        let n = &v["result"]["structuredContent"]["ranking_note"];
        assert!(
            n.as_str().is_some_and(|n| n.ends_with(hint)),
            "{filters}: {v}"
        );
    }
    drop(m);
    // The web page.
    let (mut web, port) = support::web_on(&sb, &[]);
    for (q, newest_only) in [
        ("module", true),
        ("refactor", false),
        ("module&role=user", true),
        ("module&until=2026-11-20T10:20:00Z", false),
    ] {
        let (code, page) = support::web_request(port, &format!("/search?q={q}"), None);
        assert_eq!(code, 200, "{page}");
        assert!(page.contains("hit"), "{page}");
        assert_eq!(
            page.contains("id=\"newest-only\""),
            newest_only,
            "{q}: {page}"
        );
        assert_eq!(
            page.contains(note.replacen('o', "O", 1).as_str()),
            newest_only,
            "{q}"
        );
        assert_eq!(
            page.contains("matches that pass the filters were ranked"),
            q.contains('&') && newest_only,
            "{q}"
        );
    }
    for (q, hint) in [
        (
            "module",
            "narrow by agent, project or an end date (until), to reach them",
        ),
        (
            "module&agent=claude",
            "narrow by project or an end date (until), to reach them",
        ),
        (
            "module&project=/home/user/bound&until=2027-01-01",
            "narrow by agent or an earlier end date (until), to reach them",
        ),
    ] {
        let (code, page) = support::web_request(port, &format!("/search?q={q}"), None);
        assert_eq!(code, 200, "{page}");
        assert!(page.contains(hint), "{q}: {page}");
    }
    let _ = web.kill();
    let _ = web.wait();
    // The real MCP client.
    let Some(python) = crate::common::mcp_python_or_skip() else {
        return;
    };
    let query = json!({"query": "module"}).to_string();
    let out = support::mcp_client(&python, &sb, &["search", &query]);
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["is_error"], false, "{v:#}");
    assert_eq!(v["result"]["newest_only"], true, "{v:#}");
    assert!(
        v["result"]["ranking_note"]
            .as_str()
            .is_some_and(|n| n.contains(note)),
        "{v:#}"
    );
}
