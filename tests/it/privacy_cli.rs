//! Privacy controls end to end, in a sandboxed HOME: the config file's `exclude` list (import
//! and hooks), `sessions delete`, `purge --older-than`, `redact --rescan`, and the Claude Code
//! retention warning of `status`.

use crate::support;

use serde_json::{Value, json};
use support::Sandbox;

const SID: &str = "3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1e83";

#[test]
fn config_exclude_list_keeps_a_project_out_of_import_and_hooks() {
    let sb = Sandbox::new();
    let projects = sb.install_fixture_projects();
    let cfg = sb.home.join(".config/memtrail/config.toml");
    std::fs::create_dir_all(cfg.parent().unwrap()).unwrap();
    std::fs::write(&cfg, "exclude = [\"/home/user/demo\"]\n").unwrap();
    let imp = sb.json(&["import", "--json"]);
    assert_eq!(imp["agents"][0]["messages"], 0, "{imp}");
    assert_eq!(sb.sessions(), 0);
    // A hook for the same session stores nothing either, and exits 0 silently.
    let t = projects.join(format!("-home-user-demo/{SID}.jsonl"));
    let payload = json!({"session_id": SID, "transcript_path": t, "cwd": "/home/user/demo",
        "hook_event_name": "Stop", "stop_hook_active": false});
    let out = sb
        .acmd()
        .args(["hook", "claude"])
        .write_stdin(payload.to_string())
        .output()
        .unwrap();
    assert!(out.status.success() && out.stdout.is_empty());
    assert_eq!(sb.sessions(), 0);
    // A config that does not parse: an error naming the file, and nothing stored.
    std::fs::write(&cfg, "exclude = [\n").unwrap();
    let out = sb.acmd().args(["import", "--json"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        text.contains(&format!("memtrail's config {}", cfg.display())),
        "{text}"
    );
    assert_eq!(sb.sessions(), 0);
    // The exclusion lifted: everything comes in, from the start of each transcript.
    std::fs::remove_file(&cfg).unwrap();
    let imp = sb.json(&["import", "--json"]);
    assert!(imp["agents"][0]["messages"].as_u64().unwrap() > 0, "{imp}");
    assert_eq!(sb.sessions(), 2);
}

#[test]
fn sessions_delete_asks_deletes_and_the_session_stays_deleted() {
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    let first = sb.json(&["import", "--json"]);
    let all = first["agents"][0]["messages"].as_u64().unwrap();
    assert_eq!(sb.sessions(), 2);
    // No terminal and no --yes: refused, nothing deleted.
    let out = sb
        .acmd()
        .args(["sessions", "delete", &SID[..8]])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("add --yes"));
    assert_eq!(sb.sessions(), 2);
    let out = sb
        .acmd()
        .args(["sessions", "delete", &SID[..8], "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().next(),
        Some(
            format!("deleted claude session {SID} (Find the TODO comments in this project; 6 messages, 1 sub-agent session, in /home/user/demo)")
                .as_str()
        )
    );
    assert_eq!(sb.sessions(), 0);
    // show says it was deleted and how to bring it back.
    let out = sb
        .acmd()
        .args(["sessions", "show", &SID[..8]])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "memtrail: session `{}` was deleted; `memtrail sessions capture {0}` brings it back (its transcript is still on disk)\n",
            &SID[..8]
        )
    );
    // import does not bring it back.
    let imp = sb.json(&["import", "--json"]);
    assert_eq!(imp["agents"][0]["messages"], 0, "{imp}");
    assert_eq!(sb.sessions(), 0);
    let out = sb
        .acmd()
        .args(["sessions", "delete", SID, "--yes"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session"));
    // Captured again on request: the session and its sub-agent, every message.
    let cap = sb.json(&["sessions", "capture", &SID[..8], "--json"]);
    assert_eq!(cap["captured"]["session_id"], SID, "{cap}");
    assert_eq!(cap["captured"]["transcripts"], 2, "{cap}");
    assert_eq!(cap["captured"]["messages"].as_u64(), Some(all), "{cap}");
    assert_eq!(sb.sessions(), 2);
    let out = sb
        .acmd()
        .args(["sessions", "capture", SID])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "memtrail: session `{SID}` is not deleted: it is in the store (`memtrail sessions show {SID}`)\n"
        )
    );
}

/// Counts are printed in the singular for one (`1 session`, `1 message`): `status`, `purge
/// --dry-run`, `uninstall --purge`; and `uninstall --purge` removes memtrail's own data folder
/// once the store is gone from it.
#[test]
fn counts_of_one_are_singular_and_purge_leaves_no_empty_data_folder() {
    let sb = Sandbox::new();
    let projects = sb.install_fixture_projects();
    // Only the main session's transcript: 1 session, 3 messages.
    std::fs::remove_dir_all(projects.join(format!("-home-user-demo/{SID}"))).unwrap();
    let imp = sb.json(&["import", "--json"]);
    assert_eq!(imp["agents"][0]["messages"], 3, "{imp}");
    let out = sb.acmd().args(["status"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l == "  claude: 1 session, 3 messages"),
        "{text}"
    );
    let out = sb
        .acmd()
        .args([
            "purge",
            "--older-than",
            "2030-01-01",
            "--dry-run",
            "--force",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "would delete 3 messages from before 2030-01-01 00:00 and 1 session left empty (nothing deleted: dry run)\n"
    );
    let data = sb.home.join(".local/share/memtrail");
    let out = sb
        .acmd()
        .args(["uninstall", "--purge", "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l
            == format!(
                "deleted the store {} (1 session, 3 messages)",
                data.join("memtrail.db").display()
            )),
        "{text}"
    );
    assert!(!data.exists(), "{} is left", data.display());
}

/// A sub-agent the user runs in a deleted session after the delete (its transcript appears
/// only then) is part of "what is added to the session later": neither the hook nor import
/// stores it, and `sessions capture` brings it back with its parent.
#[test]
fn a_sub_agent_transcript_that_appears_after_the_delete_stays_out() {
    let sb = Sandbox::new();
    let projects = sb.install_fixture_projects();
    let sub = projects.join(format!(
        "-home-user-demo/{SID}/subagents/agent-a7f3c21.jsonl"
    ));
    let held = sb.home.join("agent-a7f3c21.jsonl");
    std::fs::rename(&sub, &held).unwrap();
    let imp = sb.json(&["import", "--json"]);
    assert_eq!(imp["agents"][0]["messages"], 3, "{imp}");
    sb.json(&["sessions", "delete", SID, "--yes", "--json"]);
    assert_eq!(sb.sessions(), 0);
    // The session goes on: its sub-agent's transcript is written now.
    std::fs::rename(&held, &sub).unwrap();
    let t = projects.join(format!("-home-user-demo/{SID}.jsonl"));
    sb.acmd()
        .args(["hook", "claude"])
        .write_stdin(support::stop_payload(&t, SID, "/home/user/demo"))
        .assert()
        .success();
    assert_eq!(sb.sessions(), 0);
    let imp = sb.json(&["import", "--json"]);
    assert_eq!(imp["agents"][0]["messages"], 0, "{imp}");
    assert_eq!(sb.sessions(), 0);
    let cap = sb.json(&["sessions", "capture", SID, "--json"]);
    assert_eq!(cap["captured"]["transcripts"], 2, "{cap}");
    assert_eq!(cap["captured"]["messages"], 6, "{cap}");
    assert_eq!(sb.sessions(), 2);
}

#[test]
fn purge_and_rescan() {
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    sb.json(&["import", "--json"]);
    // (status exits 1 here: nothing is installed; its JSON is complete all the same.)
    let out = sb.acmd().args(["status", "--json"]).output().unwrap();
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    let messages = status["store"]["messages"].as_u64().unwrap();
    assert!(messages > 0);
    // Already redacted at capture: a rescan changes nothing.
    let r = sb.json(&["redact", "--rescan", "--json"]);
    assert_eq!(r["messages"], messages);
    assert_eq!(
        (r["messages_changed"].as_u64(), r["titles_changed"].as_u64()),
        (Some(0), Some(0))
    );
    // Nothing is older than 2000-01-01.
    let p = sb.json(&["purge", "--older-than", "2000-01-01", "--json"]);
    assert_eq!(
        (p["messages"].as_u64(), p["sessions"].as_u64()),
        (Some(0), Some(0))
    );
    // An age under one hour deletes (nearly) everything: refused, even with --yes, unless
    // --force; nothing is deleted. A dry run may still show it.
    for age in ["0d", "1m", "59m", "2999-01-01"] {
        let out = sb
            .acmd()
            .args(["purge", "--older-than", age, "--yes"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{age}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "memtrail: --older-than {age:?} is less than one hour ago: it would delete (nearly) every message, the sessions running now included; nothing was deleted (add --force if you mean it, or --dry-run to see what it would delete)\n"
            )
        );
        assert_eq!(sb.sessions(), 2, "{age}");
    }
    let dry = sb.json(&["purge", "--older-than", "0d", "--dry-run", "--json"]);
    assert_eq!(dry["messages"], messages);
    // Everything is older than 2999-01-01: dry run, refusal without --yes, then the purge.
    let dry = sb.json(&["purge", "--older-than", "2999-01-01", "--dry-run", "--json"]);
    assert_eq!(dry["messages"], messages);
    assert_eq!(dry["sessions"], 2);
    assert_eq!(dry["dry_run"], true);
    let out = sb
        .acmd()
        .args(["purge", "--older-than", "2999-01-01", "--force"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(sb.sessions(), 2);
    let done = sb.json(&[
        "purge",
        "--older-than",
        "2999-01-01",
        "--vacuum",
        "--yes",
        "--force",
        "--json",
    ]);
    assert_eq!(done["messages"], messages);
    assert_eq!(
        (done["sessions"].as_u64(), done["vacuumed"].as_bool()),
        (Some(2), Some(true))
    );
    assert_eq!(sb.sessions(), 0);
    let bad = sb
        .acmd()
        .args(["purge", "--older-than", "ninety days", "--yes"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--older-than"));
}

#[test]
fn status_warns_before_claude_code_deletes_uncaptured_transcripts() {
    let sb = Sandbox::new();
    let projects = sb.install_fixture_projects();
    std::fs::write(
        sb.claude_dir().join("settings.json"),
        r#"{"cleanupPeriodDays": 20}"#,
    )
    .unwrap();
    // The main transcript was last written 15 days ago: Claude Code deletes it in 5 days.
    let t = projects.join(format!("-home-user-demo/{SID}.jsonl"));
    let now = std::time::SystemTime::now();
    let day = std::time::Duration::from_secs(86_400);
    std::fs::File::options()
        .write(true)
        .open(&t)
        .unwrap()
        .set_modified(now - 15 * day)
        .unwrap();
    let status = |sb: &Sandbox| {
        let out = sb.acmd().args(["status", "--json"]).output().unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["claude_retention"].clone()
    };
    let r = status(&sb);
    assert_eq!(r["cleanup_period_days"], 20);
    assert_eq!(r["from_settings"], true);
    assert_eq!(r["at_risk"], 1, "{r}");
    assert_eq!(r["transcripts"][0]["path"], t.display().to_string());
    assert_eq!(r["transcripts"][0]["captured"], 0);
    assert_eq!(r["memtrail_keeps_captured"], true);
    let text = sb.acmd().arg("status").output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("WARNING: Claude Code deletes transcripts after 20 days")
            && text.contains("(cleanupPeriodDays in ")
            && text.contains("  1 transcript not fully captured by memtrail will be deleted"),
        "{text}"
    );
    // Once imported, nothing is at risk.
    sb.json(&["import", "--json"]);
    let r = status(&sb);
    assert_eq!(r["at_risk"], 0, "{r}");
}

/// Issue 11 item 5 follow-up: an error that quotes what a hook was given (a transcript path, a
/// session id, a hook command line) is redacted before it is written to the hook log or the
/// store's `hook_runs` (shown by `status`), and a hook writes nothing to stderr. A CLI error
/// on stderr is redacted too.
#[test]
fn errors_that_quote_a_secret_are_redacted_in_the_hook_log_the_store_and_stderr() {
    const TOKEN: &str = "ghp_R7mQ2xK9vL4nB8wT3yH6jD1fG5sA0cZ2pE9u";
    let sb = Sandbox::new();
    // A transcript path that cannot be read (a folder), named with a token, and a token in
    // the session id.
    let t = sb.home.join(format!("proj/{TOKEN}/{SID}.jsonl"));
    std::fs::create_dir_all(&t).unwrap();
    let payload = json!({"session_id": format!("s-{TOKEN}"), "transcript_path": t,
        "cwd": "/home/user/demo", "hook_event_name": "Stop", "stop_hook_active": false});
    let hook = |args: &[&str], stdin: String| {
        let out = sb.acmd().args(args).write_stdin(stdin).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!((out.stdout.len(), out.stderr.len()), (0, 0), "{out:?}");
    };
    hook(&["hook", "claude"], payload.to_string());
    // A hook command line that does not parse (clap quotes the bad value).
    hook(&["hook", TOKEN], String::new());
    let log = std::fs::read_to_string(sb.hook_log()).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2, "{log}");
    // clap lowercases the value it quotes a second time.
    assert!(
        !log.to_lowercase().contains(&TOKEN[4..].to_lowercase()),
        "{log}"
    );
    assert!(
        lines[0].contains("session=s-[redacted:github_token] error: ")
            && lines[0].contains("/proj/[redacted:github_token]/"),
        "{log}"
    );
    assert!(lines[1].contains("[redacted:github_token]"), "{log}");
    let c = rusqlite::Connection::open(sb.db()).unwrap();
    let (session, error): (String, String) = c
        .query_row("SELECT session, error FROM hook_runs", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(session, "s-[redacted:github_token]");
    assert!(
        error.contains("/proj/[redacted:github_token]/") && !error.contains(&TOKEN[4..]),
        "{error}"
    );
    let status = sb.cmd().args(["status"]).output().unwrap();
    let shown = String::from_utf8_lossy(&status.stdout).to_string()
        + &String::from_utf8_lossy(&status.stderr);
    assert!(!shown.contains(&TOKEN[4..]), "{shown}");
    // The CLI: an error on stderr that quotes a path with a token in it (a store path that is
    // a folder).
    let out = sb
        .cmd()
        .arg("--db")
        .arg(&t)
        .args(["sessions", "list"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        err.starts_with("memtrail: cannot open the store at ")
            && err.contains("/proj/[redacted:github_token]/"),
        "{err}"
    );
    assert!(!err.contains(&TOKEN[4..]), "{err}");
}

/// On a terminal, `sessions delete` asks, saying how the delete is undone (`sessions capture`
/// while the transcript is on disk), not that it cannot be; "n" deletes nothing. The terminal
/// is util-linux `script`'s pseudo-terminal.
#[cfg(target_os = "linux")]
#[test]
fn sessions_delete_prompt_says_how_to_bring_the_session_back() {
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    sb.json(&["import", "--json"]);
    let mut script = std::process::Command::new("script");
    script.env_clear();
    for (k, v) in sb.cmd().get_envs() {
        if let Some(v) = v {
            script.env(k, v);
        }
    }
    script.env("TERM", "dumb").args([
        "-qec",
        &format!(
            "'{}' sessions delete {}",
            support::memtrail_bin().display(),
            &SID[..8]
        ),
        "/dev/null",
    ]);
    let out = assert_cmd::Command::from_std(script)
        .write_stdin("n")
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "Delete claude session {SID} (Find the TODO comments in this project; 6 messages, 1 sub-agent session, in /home/user/demo)? `memtrail sessions capture {SID}` brings it back while its transcript is still on disk [y/N] "
        )),
        "{text}"
    );
    assert!(text.contains("nothing deleted"), "{text}");
    assert_eq!(sb.sessions(), 2);
}

/// A delete that a reader of the store keeps from folding the write-ahead log back (found by
/// review: the deleted text stayed in the files, and nothing said so): the command says so
/// (`wal_kept`, a warning), leaves `<store>-scrub`, and the next hook, once the reader has let
/// go, folds the WAL back: the text is then gone from the files and the marker with it.
#[test]
fn a_delete_a_reader_held_back_is_finished_by_the_next_hook() {
    let sb = Sandbox::new();
    let sid = support::session_id(71);
    let other = support::session_id(72);
    let t = sb.transcript("scrub", &sid);
    std::fs::write(
        &t,
        support::claude_prompt(&sid, "/home/user/scrub", "u0", "the quokkazebra plan") + "\n",
    )
    .unwrap();
    let t2 = sb.transcript("scrub", &other);
    std::fs::write(
        &t2,
        support::claude_prompt(&other, "/home/user/scrub", "u0", "another session") + "\n",
    )
    .unwrap();
    sb.json(&["import", "--json"]);
    assert_eq!(sb.sessions(), 2);
    let db = sb.db();
    let in_files = |needle: &str| {
        memtrail_testkit::store_file_bytes(&db)
            .iter()
            .any(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
    };
    assert!(in_files("quokkazebra"));
    let marker = {
        let mut p = db.clone().into_os_string();
        p.push("-scrub");
        std::path::PathBuf::from(p)
    };
    // A reader in the middle of a read transaction, as a long export or query would be.
    let reader = rusqlite::Connection::open(&db).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let n: i64 = reader
        .query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 2);
    let out = sb
        .acmd()
        .args(["sessions", "delete", &sid, "--yes", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["wal_kept"], true, "{v}");
    assert_eq!(v["deleted"]["session_id"], sid.as_str(), "{v}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the deleted text is still in the store's files")
            && err.contains("the next hook or `memtrail import` does it once no reader holds on"),
        "{err}"
    );
    assert!(marker.exists());
    assert!(in_files("quokkazebra"), "the reader kept the old pages");
    // `status` says so, until it is done.
    let pending = || sb.json(&["status", "--json"])["store"]["deleted_text_pending"].clone();
    assert_eq!(pending(), true);
    let text = sb.ok(&["status"]);
    assert!(
        text.contains("deleted text is still in the store's files"),
        "{text}"
    );
    // A hook while the reader still holds on: nothing to do yet, the marker stays.
    std::fs::write(
        &t2,
        support::claude_prompt(&other, "/home/user/scrub", "u0", "another session")
            + "\n"
            + &support::claude_line(&other, "/home/user/scrub", 1)
            + "\n",
    )
    .unwrap();
    sb.hook(
        "claude",
        support::stop_payload(&t2, &other, "/home/user/scrub"),
    );
    assert!(marker.exists());
    // The reader lets go: the next hook folds the WAL back.
    reader.execute_batch("COMMIT").unwrap();
    drop(reader);
    sb.hook(
        "claude",
        support::stop_payload(&t2, &other, "/home/user/scrub"),
    );
    assert!(!marker.exists());
    assert!(!in_files("quokkazebra"));
    assert_eq!(pending(), false);
    assert!(!std::fs::read_to_string(sb.hook_log()).is_ok_and(|l| l.contains("error")));
    // Without a reader, a delete says nothing of the kind.
    let out = sb
        .acmd()
        .args(["sessions", "delete", &other, "--yes", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["wal_kept"], false, "{v}");
    assert!(out.stderr.is_empty(), "{out:?}");
    assert!(!marker.exists());
}
