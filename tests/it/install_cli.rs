//! `memtrail install` and `uninstall` as processes, in a sandboxed HOME: several at once take
//! turns (the install lock), and what they print is what is true.
#![cfg(unix)]

use crate::support;

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};
use support::Sandbox;

/// Every file and folder under the home but `.local` (memtrail's state: backups, install state),
/// by its path below the home, with its mode and bytes (the home's path written `<HOME>`).
fn tree(sb: &Sandbox) -> BTreeMap<String, (u32, Option<String>)> {
    let home = sb.home.to_string_lossy().into_owned();
    let mut out = BTreeMap::new();
    let mut stack = vec![sb.home.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(&sb.home).unwrap().display().to_string();
            // memtrail's state (and the folders made for it); no agent's config is there.
            if rel == ".local" {
                continue;
            }
            let m = std::fs::symlink_metadata(&p).unwrap();
            let bytes = if m.is_dir() {
                stack.push(p.clone());
                None
            } else {
                Some(String::from_utf8_lossy(&std::fs::read(&p).unwrap()).replace(&home, "<HOME>"))
            };
            out.insert(rel, (m.permissions().mode() & 0o7777, bytes));
        }
    }
    out
}

/// A home with Claude Code's and Codex's configs, 0644 as an editor leaves them.
fn two_agents() -> Sandbox {
    let sb = Sandbox::new();
    for (rel, text) in [
        (".claude/settings.json", "{\n  \"model\": \"opus\"\n}\n"),
        (".claude.json", "{\n  \"numStartups\": 3\n}\n"),
        (".codex/config.toml", "model = \"o3\"\n"),
    ] {
        let p = sb.home.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    sb
}

const AGENTS: [&str; 4] = ["--agent", "claude", "--agent", "codex"];

/// [`two_agents`]' tree, and the tree one `memtrail install` leaves of it.
type Tree = BTreeMap<String, (u32, Option<String>)>;
fn trees_before_and_after_install() -> (Tree, Tree) {
    let reference = two_agents();
    let original = tree(&reference);
    ok(
        start(&reference, "install").wait_with_output().unwrap(),
        "install",
    );
    (original, tree(&reference))
}

fn start(sb: &Sandbox, verb: &str) -> Child {
    sb.cmd()
        .arg(verb)
        .args(AGENTS)
        .arg("--yes")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn ok(out: Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `verbs` at once, as processes.
fn at_once(sb: &Sandbox, verbs: &[&str]) {
    let children: Vec<Child> = verbs.iter().map(|v| start(sb, v)).collect();
    for (c, v) in children.into_iter().zip(verbs) {
        ok(c.wait_with_output().unwrap(), v);
    }
}

/// Six `memtrail install` processes at once leave every file, folder and mode exactly as one
/// does; an uninstall after them gives back the original bytes and modes (0644, not the 0600
/// install leaves: before the lock, one install could record the other's 0600 as the original,
/// and an empty `~/.codex/skills` could stay). Then installs racing uninstalls: the tree is
/// exactly one of the two, and an uninstall after them gives back the original. No lock file
/// is left behind.
#[test]
fn concurrent_install_processes_leave_what_one_does() {
    let (original, installed) = trees_before_and_after_install();
    assert_ne!(original, installed);
    for round in 0..3 {
        let sb = two_agents();
        at_once(&sb, &["install"; 6]);
        assert_eq!(tree(&sb), installed, "round {round}: 6 installs at once");
        at_once(&sb, &["uninstall"]);
        assert_eq!(tree(&sb), original, "round {round}: uninstall after them");
        assert!(!sb.home.join(".local/state/memtrail/install.lock").exists());

        let sb = two_agents();
        at_once(&sb, &["install"]);
        at_once(
            &sb,
            &[
                "install",
                "uninstall",
                "install",
                "uninstall",
                "install",
                "uninstall",
            ],
        );
        let got = tree(&sb);
        assert!(
            got == installed || got == original,
            "round {round}: installs racing uninstalls left {got:#?}"
        );
        at_once(&sb, &["uninstall"]);
        assert_eq!(
            tree(&sb),
            original,
            "round {round}: uninstall after the race"
        );
    }
}

/// While another install holds the lock, `memtrail install` says on stderr that it waits, and
/// for whom, changes nothing meanwhile, and goes ahead once the lock is released.
#[test]
fn an_install_waits_for_the_one_holding_the_lock_and_says_so() {
    let sb = two_agents();
    let lock_path = sb.home.join(".local/state/memtrail/install.lock");
    std::fs::create_dir_all(lock_path.parent().unwrap()).unwrap();
    let before = tree(&sb);
    let held = std::fs::File::create(&lock_path).unwrap();
    held.lock().unwrap();
    std::fs::write(&lock_path, "4242\n").unwrap();
    let mut child = start(&sb, "install");
    let mut stderr = child.stderr.take().unwrap();
    let said = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(2000));
    assert!(child.try_wait().unwrap().is_none(), "it waits");
    assert_eq!(tree(&sb), before, "nothing changed while it waits");
    held.unlock().unwrap();
    drop(held);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(
        said.join().unwrap(),
        "memtrail: another memtrail install or uninstall (pid 4242) is running; waiting for it to finish (up to 120 s)\n"
    );
    let v: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(sb.home.join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    assert!(v["hooks"]["Stop"].is_array(), "{v}");
}

/// Aider gets nothing from memtrail (no hooks, MCP server or skill): `install --agent aider`
/// says so, not "already installed", and says the agent is not on this machine when `status`
/// says it is not; `uninstall` the same.
#[test]
fn install_of_an_agent_memtrail_registers_nothing_in_says_so() {
    let sb = Sandbox::new();
    // PATH without an `aider` on it: detection by `~/.aider` alone.
    let run = |args: &[&str]| sb.ok_with(args, &[("PATH", "/usr/bin:/bin")]);
    let note = "Aider: nothing to install: memtrail registers nothing in Aider (no hooks, MCP server or skill; `memtrail import` reads its sessions)";
    assert_eq!(
        run(&["install", "--agent", "aider", "--yes"]),
        format!("{note}; Aider is not on this machine\n")
    );
    let status = run(&["status"]);
    let absent = status
        .lines()
        .find(|l| l.starts_with("Not on this machine (nothing registered, no transcripts): "))
        .unwrap_or_else(|| panic!("{status}"));
    assert!(absent.contains("Aider"), "{absent}");
    assert_eq!(
        run(&["install", "--agent", "aider", "--dry-run"]),
        format!("{note}; Aider is not on this machine\nNothing was changed (a dry run).\n")
    );
    std::fs::create_dir_all(sb.home.join(".aider")).unwrap();
    assert_eq!(
        run(&["install", "--agent", "aider", "--yes"]),
        format!("{note}\n")
    );
    assert_eq!(
        run(&["uninstall", "--agent", "aider", "--yes"]),
        "Aider: nothing to uninstall: memtrail registers nothing in Aider (no hooks, MCP server or skill; `memtrail import` reads its sessions)\n"
    );
    // An agent with something to register still says "already installed" when it is.
    std::fs::create_dir_all(sb.home.join(".cursor")).unwrap();
    run(&["install", "--agent", "cursor", "--yes"]);
    assert_eq!(
        run(&["install", "--agent", "cursor", "--yes"]),
        "Cursor: already installed, nothing to do\n"
    );
}

/// A named agent whose install fails while it is applied (its install state cannot be written)
/// prints its error, and "the other agents go ahead" only when there are others.
#[test]
fn a_failing_single_agent_does_not_mention_other_agents() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.claude_dir()).unwrap();
    std::fs::create_dir_all(sb.home.join(".cursor")).unwrap();
    let state = sb.home.join(".local/state/memtrail/install-state.json");
    std::fs::create_dir_all(&state).unwrap();
    // Exit code 1, and what it said on stderr; no "Next: `memtrail import`" when nothing was
    // wired.
    let failed = |args: &[&str]| {
        let out = sb.cmd().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(!stdout.contains("Next:"), "{stdout}");
        String::from_utf8(out.stderr).unwrap()
    };
    let why = format!("{}: Is a directory (os error 21)", state.display());
    assert_eq!(
        failed(&["install", "--agent", "claude", "--yes"]),
        format!("memtrail: Claude Code: {why}\n")
    );
    assert!(!sb.claude_dir().join("settings.json").exists(), "undone");
    assert_eq!(
        failed(&["install", "--agent", "claude", "--agent", "cursor", "--yes"]),
        format!(
            "memtrail: Claude Code: {why}; the other agents go ahead\nmemtrail: Cursor: {why}\n"
        )
    );
}

/// The install lock is no state of memtrail's: `uninstall --purge` in a home where memtrail
/// never ran says it deleted nothing but what it did (it said it deleted "memtrail's state"
/// that the lock had just made), and leaves no folder behind.
#[test]
fn purge_where_memtrail_never_ran_deletes_no_state() {
    let sb = Sandbox::new();
    assert_eq!(
        sb.ok(&["uninstall", "--purge", "--yes"]),
        format!(
            "memtrail is not registered with any agent: nothing to uninstall\nno store at {}: nothing to delete there\n",
            sb.db().display()
        )
    );
    assert!(!sb.home.join(".local").exists());
}

/// A user added a hook of their own to memtrail's VS Code hook file: uninstall keeps the file
/// and its `chat.hookFilesLocations` entry for them, and says so without counting it as a
/// change; `--purge` then deletes memtrail's state (nothing of memtrail's is left to
/// uninstall) and exits 0. It kept the state and exited 1, saying memtrail was still
/// registered with VS Code.
#[test]
fn purge_goes_ahead_when_only_the_users_vscode_hooks_are_kept() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home.join(".config/Code/User")).unwrap();
    sb.ok(&["install", "--agent", "vscode", "--yes"]);
    let hooks = sb.home.join(".config/memtrail/vscode-hooks.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&hooks).unwrap()).unwrap();
    v["hooks"]["Stop"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"type": "command", "command": "./my-stop.sh"}));
    std::fs::write(&hooks, v.to_string()).unwrap();
    let state = sb.home.join(".local/state/memtrail");
    assert!(state.is_dir());

    let keep = "  ~/.config/Code/User/settings.json: keep hook file in chat.hookFilesLocations: ~/.config/memtrail/vscode-hooks.json holds hooks memtrail did not write (Stop), which this keeps loading\n";
    let out = sb.ok(&["uninstall", "--purge", "--yes"]);
    assert!(
        out.starts_with("VS Code Copilot: uninstalled (5 changes):\n"),
        "{out}"
    );
    assert!(out.contains(keep), "{out}");
    assert!(out.ends_with(&format!(
        "no store at {}: nothing to delete there\ndeleted memtrail's state {} (2 config backups, the install state, the logs)\n",
        sb.db().display(),
        state.display()
    )), "{out}");
    assert!(!state.exists());
    // The user's hook stays where VS Code loads it.
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&hooks).unwrap()).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"hooks": {"Stop": [{"type": "command", "command": "./my-stop.sh"}]}})
    );
    // Nothing more to do, and it says so as no change.
    assert_eq!(
        sb.ok(&["uninstall", "--agent", "vscode", "--yes"]),
        format!("VS Code Copilot: uninstalled (no change):\n{keep}")
    );
}

/// `memtrail install --yes | head -1`: a stdout closed after the first line does not stop the
/// install between two agents (it did: Claude Code wired, Codex not, exit status 0), nor the
/// uninstall.
#[test]
fn a_closed_stdout_does_not_stop_install_or_uninstall_half_way() {
    let (original, installed) = trees_before_and_after_install();
    let sb = two_agents();
    for (verb, want) in [("install", &installed), ("uninstall", &original)] {
        let mut child = start(&sb, verb);
        // The reading end closed before the first line: every write meets a closed pipe.
        drop(child.stdout.take());
        let status = child.wait().unwrap();
        assert!(status.success(), "{verb}: {status}");
        assert_eq!(&tree(&sb), want, "{verb} with its stdout closed");
    }
}
