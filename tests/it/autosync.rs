//! Automatic sync from hooks (runtime/src/autosync.rs): with `[sync] url` in the config, a
//! session's end and a turn's end (at most once a minute) start a detached
//! `memtrail sync --background`; the hook process itself never opens a socket (checked with
//! strace: the hook's own threads make no network call, the background process does); without
//! sync configured nothing is started and no file is written.
#![cfg(unix)]

use crate::support::{Sandbox, claude_line, session_id};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const MACHINE: &str = "0123456789abcdef0123456789abcdef";
/// Nothing listens on port 1 of the loopback: a connection is refused at once.
const URL: &str = "postgres://memtrail@127.0.0.1:1/nothing";

fn payload(transcript: &Path, sid: &str, event: &str) -> String {
    json!({
        "session_id": sid,
        "transcript_path": transcript,
        "cwd": "/home/user/auto",
        "hook_event_name": event,
    })
    .to_string()
}

/// A transcript of session `n` with `lines` lines.
fn transcript(sb: &Sandbox, n: u32, lines: u64) -> (PathBuf, String) {
    let sid = session_id(n);
    let t = sb.transcript("auto", &sid);
    let text: String = (0..lines)
        .map(|i| claude_line(&sid, "/home/user/auto", i) + "\n")
        .collect();
    std::fs::write(&t, text).unwrap();
    (t, sid)
}

fn configure_sync(sb: &Sandbox) {
    let dir = sb.home.join(".config/memtrail");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!("[sync]\nurl = \"{URL}\"\nmachine = \"{MACHINE}\"\nlabel = \"box\"\n"),
    )
    .unwrap();
}

fn stamp(sb: &Sandbox) -> PathBuf {
    sb.home.join(".local/state/memtrail/sync-started")
}

fn hook(sb: &Sandbox, transcript: &Path, sid: &str, event: &str) {
    sb.acmd()
        .args(["hook", "claude"])
        .write_stdin(payload(transcript, sid, event))
        .assert()
        .success()
        .stdout("");
}

/// The background syncs' lines in the hook log.
fn background_errors(sb: &Sandbox) -> Vec<String> {
    std::fs::read_to_string(sb.hook_log())
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(" sync background session=- error: "))
        .map(str::to_string)
        .collect()
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(20);
    while !ok() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn without_sync_configured_a_hook_starts_nothing_and_writes_no_extra_file() {
    let sb = Sandbox::new();
    let (t, sid) = transcript(&sb, 1, 4);
    hook(&sb, &t, &sid, "Stop");
    hook(&sb, &t, &sid, "SessionEnd");
    assert!(!stamp(&sb).exists());
    let files: BTreeSet<String> = std::fs::read_dir(sb.db().parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        files.iter().all(|f| !f.contains(".sync.")),
        "no sync lock or mark: {files:?}"
    );
    assert!(!sb.hook_log().exists(), "nothing logged");
    let status = sb.json(&["status", "--json"]);
    assert_eq!(status["sync"]["configured"], json!(false));
    assert_eq!(status["sync"]["enabled"], json!(false));
}

/// One strace line: `PID syscall(args) = result`.
fn trace_lines(path: &Path) -> Vec<(u32, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (pid, rest) = l.split_once(' ')?;
            Some((pid.parse().ok()?, rest.trim_start().to_string()))
        })
        .collect()
}

#[test]
fn with_sync_configured_a_session_end_and_a_turn_end_start_a_background_sync_the_hook_opens_no_socket()
 {
    let sb = Sandbox::new();
    let (t, sid) = transcript(&sb, 2, 4);
    configure_sync(&sb);
    // The first turn's end starts a background sync; under strace -f both processes are
    // traced (strace returns once the background one has ended too).
    let Some(strace) = crate::common::which("strace") else {
        eprintln!("skipped: strace is not installed");
        return;
    };
    let trace = sb.home.join("trace.txt");
    let c = sb.cmd();
    let mut st = std::process::Command::new(strace);
    st.args([
        "-f",
        "-qq",
        "-e",
        "trace=%network,setsid,execve,clone,clone3,fork,vfork",
        "-o",
    ])
    .arg(&trace)
    .arg(c.get_program())
    .args(["hook", "claude"])
    .env_clear()
    .envs(c.get_envs().filter_map(|(k, v)| Some((k, v?))));
    let out = assert_cmd::Command::from_std(st)
        .write_stdin(payload(&t, &sid, "Stop"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, b"");
    // Per task (process or thread): its first execve's arguments, its network calls, and who
    // created it (clone/fork results).
    let mut argv: BTreeMap<u32, String> = BTreeMap::new();
    let mut net: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut setsid = BTreeSet::new();
    let mut parent: BTreeMap<u32, u32> = BTreeMap::new();
    for (pid, call) in trace_lines(&trace) {
        let created = |c: &str| c.rsplit_once("= ").and_then(|(_, n)| n.trim().parse().ok());
        if call.starts_with("execve(") {
            argv.entry(pid).or_insert(call);
        } else if call.starts_with("setsid(") {
            setsid.insert(pid);
        } else if call.contains("clone") || call.contains("fork") {
            if let Some(child) = created(&call) {
                parent.insert(child, pid);
            }
        } else if !call.starts_with("+++") && !call.starts_with("---") {
            net.entry(pid).or_default().push(call);
        }
    }
    let (bg_pid, bg_argv) = argv
        .iter()
        .find(|(_, a)| a.contains("\"sync\", \"--background\""))
        .map(|(p, a)| (*p, a.clone()))
        .expect("the background sync's execve");
    let db = sb.db();
    assert!(
        bg_argv.contains(&format!("\"--db\", \"{}\", \"sync\"", db.display())),
        "{bg_argv}"
    );
    assert!(
        setsid.contains(&bg_pid),
        "the background sync runs in a session of its own"
    );
    // The background process and its threads: the tasks descending from it.
    let in_background = |mut t: u32| loop {
        if t == bg_pid {
            return true;
        }
        match parent.get(&t) {
            Some(p) => t = *p,
            None => return false,
        }
    };
    // The hook's own threads: no socket, no connect, nothing sent.
    let of_hook: Vec<_> = net.iter().filter(|(t, _)| !in_background(**t)).collect();
    assert!(
        of_hook.is_empty(),
        "the hook made network calls: {of_hook:?}"
    );
    // The background process did try PostgreSQL (the trace sees network calls).
    let bg_net: Vec<&String> = net
        .iter()
        .filter(|(t, _)| in_background(**t))
        .flat_map(|(_, c)| c)
        .collect();
    assert!(
        bg_net
            .iter()
            .any(|c| c.starts_with("connect(") && c.contains("htons(1)")),
        "{bg_net:?}"
    );
    // It recorded the refusal: in the store (status) and in the hook log.
    let status = sb.json(&["status", "--json"]);
    let s = &status["sync"];
    assert_eq!(s["configured"], json!(true));
    assert_eq!(s["url"], json!(URL));
    assert_eq!(s["machine"], json!(MACHINE));
    assert_eq!(s["label"], json!("box"));
    assert_eq!(s["enabled"], json!(true));
    let err = s["last_error"].as_str().unwrap();
    assert!(
        err.starts_with(&format!("cannot connect to {URL}: ")),
        "{err}"
    );
    // Enabling queued the stored session (its row and its 4 messages), still waiting.
    assert_eq!(
        s["pending"],
        json!({"sessions": 1, "messages": 4, "deletions": 0})
    );
    assert_eq!(background_errors(&sb).len(), 1);
    let stamp_time = std::fs::metadata(stamp(&sb)).unwrap().modified().unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(stamp(&sb)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // The next turn's end, within the minute: no background sync (the stamp is not touched).
    hook(&sb, &t, &sid, "Stop");
    assert_eq!(
        std::fs::metadata(stamp(&sb)).unwrap().modified().unwrap(),
        stamp_time
    );
    // The session's end: one more, whatever the time.
    hook(&sb, &t, &sid, "SessionEnd");
    wait_for("the second background sync's error", || {
        background_errors(&sb).len() == 2
    });
    assert_ne!(
        std::fs::metadata(stamp(&sb)).unwrap().modified().unwrap(),
        stamp_time
    );
}
