//! `memtrail browse` end to end under tmux: a real terminal (tmux's), a store seeded from the
//! project's fixtures in a sandboxed HOME, keys sent with `send-keys`, the screen read with
//! `capture-pane`. Needs tmux (CI installs it); without it the test says so and passes unless
//! CI is set.

use crate::support::{self, Sandbox, claude_line};
use memtrail_testkit::{agent_vars, home_vars};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server of its own (its socket in the sandbox), one 120×40 window.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket).arg("-f").arg("/dev/null");
        c
    }

    fn run(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "t"])
    }

    /// Types `text` literally (no key names).
    fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", "t", "-l", text]);
    }

    fn key(&self, key: &str) {
        self.run(&["send-keys", "-t", "t", key]);
    }

    /// Waits (at most 15 s) for the screen to hold `what`; the screen then.
    fn wait_for(&self, what: &str) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(what) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "the screen never showed {what:?}; it shows:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}

/// A Claude Code transcript whose prompt carries an OSC 52 clipboard write, a clear-screen
/// and a right-to-left override.
fn hostile_transcript(sb: &Sandbox) -> String {
    let sid = support::session_id(7);
    let mut first: serde_json::Value =
        serde_json::from_str(&claude_line(&sid, "/home/user/evil", 0)).unwrap();
    first["message"] = json!({"role": "user",
        "content": "hostile \u{1b}]52;c;cHduZWQ=\u{7}clip \u{1b}[2Jclear \u{202e}gnirts"});
    let text = format!("{first}\n{}\n", claude_line(&sid, "/home/user/evil", 1));
    let dir = sb.claude_dir().join("projects/-home-user-evil");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{sid}.jsonl")), text).unwrap();
    sid
}

fn shell_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

/// Whether tmux is installed; without it a test passes (saying so), except under CI.
fn have_tmux() -> bool {
    if crate::common::which("tmux").is_some() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "tmux is missing (CI installs it in .ci/run)"
    );
    eprintln!("tmux is not installed: the browse end-to-end test is skipped");
    false
}

/// `memtrail browse` in a 120×40 tmux window, with only the sandbox's environment and a
/// pager that never waits, started by a script once the tmux options are set; the script
/// says `browse exited N` after it. The script outlives a Ctrl-C (SIGINT to the pane's
/// foreground group, the script included), as an interactive shell does; browse gets it.
fn launch(sb: &Sandbox) -> Tmux {
    launch_with(sb, "cat")
}

/// [`launch`] with `pager` as `$PAGER`.
fn launch_with(sb: &Sandbox, pager: &str) -> Tmux {
    let mut env = format!(
        "PATH={} TERM=xterm-256color PAGER={}",
        shell_quote(Path::new(&std::env::var("PATH").unwrap())),
        shell_quote(Path::new(pager))
    );
    for (k, v) in home_vars(&sb.home, &sb.home.join(".local/state"))
        .into_iter()
        .chain(agent_vars(&sb.home))
    {
        env.push_str(&format!(" {k}={}", shell_quote(&v)));
    }
    let go = sb.home.join("go");
    let script = sb.home.join("run.sh");
    let run = format!(
        "env -i {env} {bin} browse",
        bin = shell_quote(&support::memtrail_bin())
    );
    let run = format!("{run}\necho \"browse exited $?\"\nsleep 600\n");
    std::fs::write(
        &script,
        format!(
            "trap : INT\nwhile [ ! -e {go} ]; do sleep 0.05; done\n{run}",
            go = shell_quote(&go),
        ),
    )
    .unwrap();
    let tmux = Tmux {
        socket: sb.home.join("tmux.sock"),
    };
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "t",
        "-x",
        "120",
        "-y",
        "40",
        &format!("sh {}", shell_quote(&script)),
    ]);
    // OSC 52 from the application fills tmux's paste buffer: how the test sees a copy.
    tmux.run(&["set-option", "-g", "set-clipboard", "on"]);
    std::fs::write(&go, "").unwrap();
    tmux
}

#[test]
fn a_resize_redraws_and_sigterm_ends_browse_with_the_terminal_restored() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    sb.acmd()
        .args(["import", "--agent", "claude"])
        .assert()
        .success();
    let tmux = launch(&sb);
    tmux.wait_for("Sessions (2)");
    assert_eq!(
        tmux.run(&[
            "display-message",
            "-p",
            "-t",
            "t",
            "#{alternate_on} #{cursor_flag}"
        ]),
        "1 0\n",
        "the browser draws on the alternate screen, the cursor hidden"
    );
    // A resize redraws at the new size: the search box's top border spans the 90 columns.
    tmux.run(&["resize-window", "-t", "t", "-x", "90", "-y", "30"]);
    let border = format!("┌ Search {}┐", "─".repeat(90 - 10));
    let s = tmux.wait_for(&border);
    assert_eq!(s.lines().count(), 30, "{s}");
    assert!(s.lines().all(|l| l.chars().count() <= 90), "{s}");
    // The browser: the only child of the window's shell (`env` execs it).
    let shell = tmux.run(&["display-message", "-p", "-t", "t", "#{pane_pid}"]);
    let shell = shell.trim();
    let pid = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
    let killed = Command::new("kill")
        .args(["-TERM", pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    // 128 + SIGTERM (15); the main screen back, the cursor shown.
    tmux.wait_for("browse exited 143");
    assert_eq!(
        tmux.run(&[
            "display-message",
            "-p",
            "-t",
            "t",
            "#{alternate_on} #{cursor_flag}"
        ]),
        "0 1\n"
    );
}

#[test]
fn a_closed_terminal_ends_browse() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    sb.acmd()
        .args(["import", "--agent", "claude"])
        .assert()
        .success();
    let tmux = launch(&sb);
    tmux.wait_for("Sessions (2)");
    let shell = tmux.run(&["display-message", "-p", "-t", "t", "#{pane_pid}"]);
    let shell = shell.trim();
    let pid = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
    let pid = pid.trim().to_string();
    // The window goes: the browser's terminal hangs up under it.
    tmux.run(&["kill-server"]);
    let start = Instant::now();
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Gone, or a zombie waiting for its parent: it ended.
        if state.is_empty() || state.split_whitespace().nth(2) == Some("Z") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "memtrail browse ({pid}) still runs after its terminal closed: {state}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Ctrl-C in the pager is the pager's (as with git's): it is SIGINT to the whole foreground
/// group, browse included, and browse goes on after the pager; `q` then ends it with 0.
#[test]
fn ctrl_c_in_the_pager_is_the_pagers_and_browse_goes_on() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    sb.acmd()
        .args(["import", "--agent", "claude"])
        .assert()
        .success();
    // A pager that waits for its Ctrl-C, as less does.
    let pager = sb.home.join("pager.sh");
    std::fs::write(
        &pager,
        "cat >/dev/null\ntrap 'exit 0' INT\necho pager-open\nwhile :; do sleep 0.05; done\n",
    )
    .unwrap();
    let tmux = launch_with(&sb, &format!("sh {}", pager.display()));
    tmux.wait_for("Sessions (2)");
    tmux.type_text("overflow");
    tmux.wait_for("Hits (");
    tmux.key("Enter");
    tmux.key("Enter");
    tmux.wait_for("── Assistant");
    tmux.type_text("o");
    tmux.wait_for("pager-open");
    tmux.key("C-c");
    // Back in browse, which still answers keys.
    tmux.wait_for("closed");
    tmux.type_text("q");
    let s = tmux.wait_for("browse exited");
    assert!(s.contains("browse exited 0"), "{s}");
}

#[test]
fn browse_searches_opens_finds_copies_deletes_and_restores_the_terminal() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    let evil = hostile_transcript(&sb);
    sb.acmd()
        .args(["import", "--agent", "claude"])
        .assert()
        .success();
    let tmux = launch(&sb);

    // First screen: the three sessions, newest first; the hostile title defused.
    let s = tmux.wait_for("Sessions (3)");
    assert!(s.contains("hostile �clip �clear �gnirts"), "{s}");
    assert!(
        s.contains("a agent: all  p project: all  m machine: all  d date: any time"),
        "{s}"
    );
    assert_eq!(
        tmux.run(&["list-buffers"]),
        "",
        "no clipboard write got through"
    );

    // `a` cycles through the agents the store holds (the worker says which): only Claude
    // Code's here, so the second press is back to all (not on to Codex, the next agent).
    tmux.key("Down");
    tmux.type_text("a");
    tmux.wait_for("a agent: claude  p project");
    tmux.type_text("a");
    tmux.wait_for("a agent: all  p project");
    tmux.type_text("s");

    // Search as you type, then open the first hit.
    tmux.type_text("overflow");
    // Two answers and two tool outputs name it; the main session's answer first.
    let s = tmux.wait_for("Hits (4)");
    assert!(s.contains("│overflow▏"), "{s}");
    assert!(
        s.contains("…src/lib.rs:7 (handle overflow) and src/main"),
        "{s}"
    );
    tmux.key("Enter");
    tmux.key("Enter");
    let s = tmux.wait_for("── Assistant #2");
    assert!(
        s.contains("There are 2 TODOs: src/lib.rs:7 (handle overflow)"),
        "{s}"
    );

    // Find in session: one line holds "config".
    tmux.type_text("/");
    tmux.type_text("config");
    tmux.key("Enter");
    tmux.wait_for("find: config (1/1)");
    tmux.wait_for("match 1 of 1");

    // The pager (PAGER=cat: it prints and returns), the resume snapshot, a handoff to codex.
    tmux.type_text("o");
    tmux.wait_for("session 3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1e83 closed");
    tmux.type_text("r");
    tmux.wait_for("resume snapshot of 3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1e83 closed");
    tmux.type_text("h");
    tmux.wait_for("Write a handoff for:");
    tmux.type_text("2");
    tmux.wait_for("handoff of 3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1e83 to codex closed");

    // Copy the id: tmux's buffer gets it.
    tmux.key("Escape");
    tmux.type_text("y");
    let copied = tmux.wait_for("copied ");
    let id_line = copied
        .lines()
        .find(|l| l.contains("copied "))
        .unwrap()
        .trim();
    let id = id_line.trim_start_matches("copied ").to_string();
    assert_eq!(tmux.run(&["show-buffer"]), id);

    // Delete it, confirmed.
    tmux.type_text("D");
    tmux.wait_for("y: delete   any other key: keep it");
    tmux.type_text("y");
    tmux.wait_for(&format!("deleted claude session {id}"));

    // Quit: the main screen is back, the cursor shown, the exit status 0.
    tmux.type_text("q");
    tmux.wait_for("browse exited 0");
    assert_eq!(
        tmux.run(&[
            "display-message",
            "-p",
            "-t",
            "t",
            "#{alternate_on} #{cursor_flag}"
        ]),
        "0 1\n"
    );
    let list = sb.json(&["sessions", "list", "--json"]);
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    // The main session and its sub-agent's are gone; the other one stays.
    assert_eq!(id, "3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1e83");
    assert_eq!(ids, [evil.as_str()]);
}

#[test]
fn without_a_terminal_sessions_lists_and_browse_says_why_not() {
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    sb.acmd()
        .args(["import", "--agent", "claude"])
        .assert()
        .success();
    let list = sb.cmd().args(["sessions", "list"]).output().unwrap();
    let bare = sb.cmd().arg("sessions").output().unwrap();
    assert!(bare.status.success());
    assert_eq!(
        String::from_utf8_lossy(&bare.stdout),
        String::from_utf8_lossy(&list.stdout)
    );
    let browse = sb.cmd().arg("browse").output().unwrap();
    assert_eq!(browse.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&browse.stderr),
        "memtrail: memtrail browse needs a terminal (stdin and stdout); `memtrail sessions list` and `memtrail search` print to a pipe\n"
    );
}

/// With the real model's vectors in the store ([`crate::support::real_model`]), the browser searches as `memtrail search` does by default:
/// hybrid, so a query none of whose words is in the message finds it.
#[test]
fn browse_searches_hybrid_once_the_store_has_vectors() {
    let Some(model) = crate::support::real_model() else {
        return;
    };
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    let dest = sb
        .home
        .join(".local/share/memtrail/models/minilm-l6-static");
    std::fs::create_dir_all(&dest).unwrap();
    for f in ["model.json", "vocab.txt", "vectors.f32"] {
        std::fs::copy(model.join(f), dest.join(f)).unwrap();
    }
    let sid = "hybrid-1";
    let mut text = String::new();
    for (i, t) in [
        "Postgres keeps refusing connections after the container restarts.",
        "Add a dark theme toggle to the settings page.",
    ]
    .iter()
    .enumerate()
    {
        text.push_str(
            &json!({"type": "user", "sessionId": sid, "uuid": format!("{sid}-{i}"),
                "parentUuid": null, "cwd": "/home/user/app",
                "timestamp": format!("2026-01-01T00:00:0{i}.000Z"),
                "message": {"role": "user", "content": t}})
            .to_string(),
        );
        text.push('\n');
    }
    std::fs::write(sb.transcript("app", sid), text).unwrap();
    sb.json(&["import", "--json", "--no-embed"]);
    assert_eq!(sb.json(&["embed", "--json"])["embedded"], 2);
    let tmux = launch(&sb);
    tmux.wait_for("Sessions (1)");
    tmux.type_text("database server rejects clients");
    let s = tmux.wait_for("Search (hybrid: ≈ found by meaning alone)");
    assert!(s.contains("Hits ("), "{s}");
    assert!(s.contains("Postgres keeps refusing connections"), "{s}");
}

/// Once the store holds vectors, browse searches by meaning as `memtrail search` does (hybrid
/// by default): with the tiny 4-dimension model installed and the session embedded at import,
/// "directory listing", which shares no word with "I ran ls -la in the project root and saw
/// the hidden files", finds that message first.
#[test]
fn browse_searches_by_meaning_once_the_store_holds_vectors() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    support::write_tiny_model(
        &sb.home
            .join(".local/share/memtrail/models/minilm-l6-static"),
    );
    support::write_session(
        &sb,
        "meaning-1",
        &[
            "Postgres keeps refusing connections after the container restarts.",
            "The invoice total is wrong when a discount and VAT both apply.",
            "I ran ls -la in the project root and saw the hidden files.",
            "Add a dark theme toggle to the settings page.",
        ],
    );
    let imp = sb.json(&["import", "--json"]);
    assert_eq!(imp["embedded"]["messages"], 4, "{imp}");
    // The CLI's answer, which browse must show first.
    let cli = sb.json(&["search", "directory listing", "--json"]);
    assert_eq!(cli["hits"][0]["message_index"], 2, "{cli}");
    let lexical = sb.json(&["search", "--mode", "lexical", "directory listing", "--json"]);
    assert_eq!(lexical["hits"].as_array().unwrap().len(), 0, "{lexical}");

    let tmux = launch(&sb);
    tmux.wait_for("Sessions (1)");
    tmux.type_text("directory listing");
    // Waits for the answer to the whole query (the keystrokes before it may show others).
    let s = tmux.wait_for("ls -la");
    // The results pane: the first hit's title line, then its snippet.
    let first_snippet = s
        .lines()
        .skip_while(|l| !l.contains("┌ Hits ("))
        .nth(2)
        .unwrap_or("");
    assert!(first_snippet.contains("ls -la"), "{s}");
    tmux.key("Enter");
    tmux.key("Enter");
    let s = tmux.wait_for("── User #3");
    assert!(s.contains("I ran ls -la in the project root"), "{s}");
}
