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
        "-s",
        "4096",
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
    // The hook's own threads: no socket, no connect, nothing sent. The one socket call
    // allowed is the local pair std's spawn reads the child's exec outcome from
    // (`socketpair(AF_UNIX…)`, then a `recvfrom` on it that sees it close at the exec).
    let of_hook: Vec<&String> = net
        .iter()
        .filter(|(t, _)| !in_background(**t))
        .flat_map(|(_, c)| c)
        .collect();
    let network: Vec<&&String> = of_hook
        .iter()
        .filter(|c| {
            !(c.starts_with("socketpair(AF_UNIX,")
                || c.starts_with("recvfrom(")
                || c.starts_with("<... recvfrom resumed>"))
        })
        .collect();
    assert!(
        network.is_empty(),
        "the hook made network calls: {network:?}"
    );
    assert_eq!(
        of_hook
            .iter()
            .filter(|c| c.starts_with("socketpair("))
            .count(),
        1,
        "{of_hook:?}"
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

fn pg_count(pg: &memtrail_pg::Pg, sql: &str) -> i64 {
    pg.block_on(pg.client().query_one(sql, &[])).unwrap().get(0)
}

/// A machine set up with `sync --init url` (a session of `lines` lines imported first, so the
/// set-up's sync pushes it; no hook: a hook would start a background sync).
fn machine(url: &str, label: &str, n: u32, lines: u64) -> (Sandbox, PathBuf, String) {
    let sb = Sandbox::new();
    let (t, sid) = transcript(&sb, n, lines);
    sb.acmd().args(["import"]).assert().success();
    let r = sb.json(&["sync", "--init", url, "--label", label, "--json"]);
    assert_eq!(r["sync"]["pushed"]["messages"], json!(lines), "{r}");
    (sb, t, sid)
}

/// Append lines `from..from + more` to the transcript of session `n` and import them.
fn grow(sb: &Sandbox, t: &Path, n: u32, from: u64, more: u64) {
    let sid = session_id(n);
    let text: String = (from..from + more)
        .map(|i| claude_line(&sid, "/home/user/auto", i) + "\n")
        .collect();
    memtrail_testkit::append(t, text.as_bytes());
    sb.acmd().args(["import"]).assert().success();
}

#[test]
fn a_background_sync_pushes_and_one_that_finds_the_lock_taken_leaves_a_rerun_mark() {
    let Some(url) = memtrail_testkit::pg::test_database("autosync_background") else {
        return;
    };
    let pg = memtrail_pg::Pg::connect_url(&url).unwrap();
    let (sb, t, sid) = machine(&url, "a", 3, 4);
    let messages = "SELECT count(*) FROM messages";
    assert_eq!(pg_count(&pg, messages), 4);
    // A turn's end: the hook stores 2 new lines and starts a background sync, which pushes them.
    let text: String = (4..6)
        .map(|i| claude_line(&sid, "/home/user/auto", i) + "\n")
        .collect();
    memtrail_testkit::append(&t, text.as_bytes());
    hook(&sb, &t, &sid, "Stop");
    wait_for("the background sync's push", || {
        pg_count(&pg, messages) == 6
    });
    wait_for("the background sync's end", || {
        sb.json(&["status", "--json"])["sync"]["last_sync_at"] != json!(null)
            && sb.json(&["status", "--json"])["sync"]["pending"]["messages"] == json!(0)
    });
    assert!(!sb.hook_log().exists(), "no error logged");
    // Another sync holds the lock: a background one leaves the mark, exits 0 and pushes nothing.
    grow(&sb, &t, 3, 6, 3);
    let db = sb.db();
    let mark = PathBuf::from(format!("{}.sync.rerun", db.display()));
    let lock = memtrail_pg::engine::SyncLock::try_acquire(&db)
        .unwrap()
        .expect("the lock is free");
    let out = sb.cmd().args(["sync", "--background"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        (out.stdout.as_slice(), out.stderr.as_slice()),
        (&b""[..], &b""[..])
    );
    assert!(mark.exists());
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&mark).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert_eq!(pg_count(&pg, messages), 6);
    drop(lock);
    // The next sync takes the mark and pushes the 3 lines.
    let r = sb.json(&["sync", "--json"]);
    assert_eq!(r["sync"]["pushed"]["messages"], json!(3), "{r}");
    assert!(!mark.exists());
    assert_eq!(pg_count(&pg, messages), 9);
    let s = sb.json(&["status", "--json"])["sync"].clone();
    assert_eq!(s["last_error"], json!(null));
    assert_eq!(
        s["pending"],
        json!({"sessions": 0, "messages": 0, "deletions": 0})
    );
    let vector = std::env::var("MEMTRAIL_TEST_PG_VECTOR").is_ok_and(|v| v == "1");
    // `sync --init` creates pgvector when the server has it (the test cluster's superuser may).
    assert_eq!(s["pgvector"], json!(vector), "{s}");
}

/// Reads `child`'s stderr lines into a shared buffer.
fn collect_lines(
    r: impl std::io::Read + Send + 'static,
) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    use std::io::BufRead;
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let l = lines.clone();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(r).lines().map_while(Result::ok) {
            l.lock().unwrap().push(line);
        }
    });
    lines
}

#[test]
fn watch_pushes_changes_pulls_survives_postgresql_going_away_and_stops_on_sigterm() {
    let Some(url) = memtrail_testkit::pg::test_database("autosync_watch") else {
        return;
    };
    let super_url = std::env::var(memtrail_testkit::pg::URL_VAR).unwrap();
    let dbname = url.rsplit('/').next().unwrap().to_string();
    let pg = memtrail_pg::Pg::connect_url(&url).unwrap();
    let (a, ta, _) = machine(&url, "a", 4, 2);
    let (b, tb, sid_b) = machine(&url, "b", 5, 3);
    let messages = "SELECT count(*) FROM messages";
    assert_eq!(pg_count(&pg, messages), 5);
    let mut watch = a
        .cmd()
        .args([
            "sync",
            "--watch",
            "--push-every",
            "0.2",
            "--pull-every",
            "1",
        ])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = collect_lines(watch.stderr.take().unwrap());
    // A's new lines are pushed by the watch, B's session is pulled by it.
    grow(&a, &ta, 4, 2, 2);
    wait_for("the watch's push", || pg_count(&pg, messages) == 7);
    let a_has_b = || {
        a.json(&["sessions", "list", "--json"])["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["session_id"] == json!(sid_b))
    };
    wait_for("the watch's pull of b's session", a_has_b);
    // PostgreSQL goes away (the database refuses connections, the watch's one is cut).
    let admin = memtrail_pg::Pg::connect_url(&super_url).unwrap();
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {dbname} ALLOW_CONNECTIONS false; \
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{dbname}'"
        ))
        .unwrap();
    drop(pg);
    grow(&a, &ta, 4, 4, 1);
    let errors = || {
        stderr
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(" memtrail sync: error: "))
            .count()
    };
    wait_for("the outage's error", || errors() == 1);
    // Several retries later (0.2 s, 0.4 s, 0.8 s, …): still one line for the outage.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(errors(), 1, "{:?}", stderr.lock().unwrap());
    let s = a.json(&["status", "--json"])["sync"].clone();
    // The outage's error (the cut connection, or the refused one) is kept for status.
    assert!(s["last_error"].is_string(), "{s}");
    assert_eq!(
        s["pending"],
        json!({"sessions": 1, "messages": 1, "deletions": 0})
    );
    // Back: the watch resumes, pushes the line written meanwhile, and says so.
    admin
        .batch_execute(&format!("ALTER DATABASE {dbname} ALLOW_CONNECTIONS true"))
        .unwrap();
    let pg = memtrail_pg::Pg::connect_url(&url).unwrap();
    wait_for("the push after the outage", || pg_count(&pg, messages) == 8);
    wait_for("the resumed line", || {
        stderr
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("PostgreSQL reached again after"))
    });
    wait_for("last_error cleared", || {
        a.json(&["status", "--json"])["sync"]["last_error"] == json!(null)
    });
    // B's next turn reaches A through the watch's pull.
    grow(&b, &tb, 5, 3, 2);
    b.acmd().args(["sync"]).assert().success();
    wait_for("b's new lines on a", || {
        a.json(&["sessions", "show", &sid_b, "--json"])["total"] == json!(5)
    });
    // SIGTERM: it stops, exit 0.
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(watch.id() as i32, libc::SIGTERM) };
    let status = watch.wait().unwrap();
    assert!(status.success(), "{status:?}");
    wait_for("the stop line", || {
        stderr
            .lock()
            .unwrap()
            .last()
            .is_some_and(|l| l.ends_with(" memtrail sync: stopped"))
    });
}

#[test]
fn background_and_watch_syncs_refuse_a_config_whose_machine_id_is_not_the_stores() {
    let Some(url) = memtrail_testkit::pg::test_database("autosync_machine") else {
        return;
    };
    let pg = memtrail_pg::Pg::connect_url(&url).unwrap();
    let (sb, t, _) = machine(&url, "a", 5, 4);
    let mine = sb.json(&["status", "--json"])["sync"]["machine"]
        .as_str()
        .unwrap()
        .to_string();
    grow(&sb, &t, 5, 4, 2);
    // The config's machine id changed (copied from another machine, edited by hand).
    let config = sb.home.join(".config/memtrail/config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains(&mine), "{text}");
    std::fs::write(&config, text.replace(&mine, MACHINE)).unwrap();
    let expected = format!(
        "the store {} syncs as machine {mine} but memtrail's config says {MACHINE}: put \
         `machine = \"{mine}\"` under [sync] in {} (or use another store)",
        sb.db().display(),
        config.display()
    );
    let out = sb.cmd().args(["sync", "--background"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        (out.stdout.as_slice(), out.stderr.as_slice()),
        (&b""[..], &b""[..])
    );
    let s = sb.json(&["status", "--json"])["sync"].clone();
    assert_eq!(s["last_error"], json!(expected), "{s}");
    let logged = background_errors(&sb);
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert!(
        logged[0].ends_with(&format!("error: {expected}")),
        "{logged:?}"
    );
    let out = sb
        .acmd()
        .args(["sync", "--watch"])
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&expected), "{err}");
    // Plain `memtrail sync` says the same; nothing was pushed under the config's id.
    let out = sb.cmd().args(["sync"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(&expected));
    assert_eq!(
        pg_count(&pg, "SELECT count(*) FROM messages"),
        4,
        "the 2 new lines stay queued"
    );
    assert_eq!(
        pg_count(&pg, "SELECT count(DISTINCT machine_id) FROM sessions"),
        1
    );
    assert_eq!(
        pg_count(
            &pg,
            &format!("SELECT count(*) FROM machines WHERE id = '{MACHINE}'")
        ),
        0
    );
}
