//! The real Claude Code, Codex, Gemini CLI and OpenCode accept the config `memtrail install`
//! writes, offline, and `memtrail uninstall` takes it back byte for byte.
//!
//! Runs `scripts/check-agent-clis` (Python, standard library only): for each agent, in a
//! sandbox of its own, "the user's" config, one warm-up start of the agent, memtrail's config,
//! then what the real CLI reports: Claude Code (`claude mcp list` connects), Codex (`codex mcp list`, and its app server:
//! `mcpServerStatus/list` really connects to `memtrail mcp`, `hooks/list`, `config/read` for
//! `notify`, `skills/list`), Gemini (`gemini mcp list` connects, `gemini skills list`, the
//! hooks fire in a `gemini -p` run against a loopback model that refuses at once), OpenCode
//! (`opencode mcp list` connects, `opencode debug skill`, `opencode debug config` lists the
//! plugin). Every agent command runs under strace when it is installed, and any connection
//! attempt outside loopback (a DNS query included) fails the check "offline".
//!
//! With [`USE_INSTALL_BY_DEFAULT`] (the default) the script runs `memtrail install --agent <x>
//! --yes`, the checks, `memtrail uninstall --agent <x> --yes`, compares every file install
//! touched with its pre-install copy, byte for byte, and checks the agents no longer list
//! memtrail. Set it to false to check the hand-written config of the script's
//! `write_config_by_hand` instead (what install is meant to write).
//!
//! Needs the agent binaries (`MEMTRAIL_CODEX_BIN`, `MEMTRAIL_GEMINI_BIN`,
//! `MEMTRAIL_OPENCODE_BIN`, else what `scripts/e2e-deps` installs in `target/e2e-tools`, else
//! PATH), `node` for Gemini, and `python3`. An agent whose binary is missing is skipped
//! ("skipped: ..."), unless `MEMTRAIL_REQUIRE_E2E=1`: then it fails. `MEMTRAIL_E2E_KEEP=1` keeps
//! the sandboxes (they are always kept for an agent with a FAIL); `MEMTRAIL_E2E_MEMTRAIL_BIN`
//! tests another memtrail binary; `MEMTRAIL_E2E_PYTHON` picks the interpreter.
#![cfg(unix)]

use crate::common;

use common::{drain, env_flag, memtrail_bin, repo_root};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Configure with `memtrail install` / check `memtrail uninstall` instead of the hand-written
/// config.
const USE_INSTALL_BY_DEFAULT: bool = true;

/// The whole script is killed after this long (it bounds each agent command to 60 s itself).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(600);

/// The checks that must pass for each agent the script did not skip.
const REQUIRED: &[(&str, &[&str])] = &[
    (
        "codex",
        &[
            "version",
            "mcp-list",
            "mcp-connect",
            "hooks",
            "notify",
            "skills",
        ],
    ),
    ("gemini", &["version", "mcp-list", "skills", "hooks"]),
    ("opencode", &["version", "mcp-list", "skills", "plugin"]),
];

fn python() -> Result<PathBuf, String> {
    let py = std::env::var_os("MEMTRAIL_E2E_PYTHON").unwrap_or_else(|| "python3".into());
    let out = Command::new(&py)
        .args(["-c", "import sys; print(sys.executable)"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", py.to_string_lossy()))?;
    if !out.status.success() {
        return Err(format!("{} does not run", py.to_string_lossy()));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

#[test]
fn agent_clis_accept_memtrail_config() {
    let t0 = Instant::now();
    if env_flag("MEMTRAIL_SKIP_E2E") {
        eprintln!("skipped: MEMTRAIL_SKIP_E2E=1");
        return;
    }
    let require = env_flag("MEMTRAIL_REQUIRE_E2E");
    let python = match python() {
        Ok(p) => p,
        Err(why) if require => panic!("MEMTRAIL_REQUIRE_E2E=1 but the e2e cannot run: {why}"),
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let memtrail = memtrail_bin();
    let use_install = USE_INSTALL_BY_DEFAULT || env_flag("MEMTRAIL_E2E_USE_INSTALL");

    let mut cmd = Command::new(&python);
    cmd.arg(repo_root().join("scripts/check-agent-clis"))
        .arg("--memtrail")
        .arg(&memtrail)
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if use_install {
        cmd.arg("--use-install");
    }
    if require {
        cmd.arg("--require");
    }
    if env_flag("MEMTRAIL_E2E_KEEP") {
        cmd.arg("--keep");
    }
    let mut child = cmd.spawn().expect("start scripts/check-agent-clis");
    let out_rx = drain(child.stdout.take().unwrap());
    let err_rx = drain(child.stderr.take().unwrap());
    let status = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st;
        }
        if t0.elapsed() > SCRIPT_TIMEOUT {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            panic!("scripts/check-agent-clis timed out after {SCRIPT_TIMEOUT:?}");
        }
        thread::sleep(Duration::from_millis(50));
    };
    let stdout = String::from_utf8_lossy(&out_rx.recv().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_rx.recv().unwrap_or_default()).into_owned();
    for line in stdout.lines() {
        eprintln!("e2e: {line}");
    }
    if !stderr.trim().is_empty() {
        eprintln!("e2e: --- stderr of the script\n{stderr}");
    }

    let fails: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL ")).collect();
    assert!(
        fails.is_empty() && status.success(),
        "scripts/check-agent-clis: {status}, {} FAIL:\n{}",
        fails.len(),
        fails.join("\n")
    );
    let skipped: Vec<&str> = stdout.lines().filter(|l| l.starts_with("skip ")).collect();
    let mut checked = Vec::new();
    for (agent, checks) in REQUIRED {
        if skipped
            .iter()
            .any(|l| l.starts_with(&format!("skip {agent} ")))
        {
            continue;
        }
        for check in *checks {
            let prefix = format!("ok {agent} {check}:");
            assert!(
                stdout.lines().any(|l| l.starts_with(&prefix)),
                "scripts/check-agent-clis did not report `{prefix}`"
            );
        }
        if use_install {
            let prefix = format!("ok {agent} restored:");
            assert!(
                stdout.lines().any(|l| l.starts_with(&prefix)),
                "scripts/check-agent-clis did not report `{prefix}`"
            );
        }
        checked.push(*agent);
    }
    if checked.is_empty() {
        eprintln!("skipped: {}", skipped.join("; "));
        return;
    }
    if !skipped.is_empty() {
        eprintln!("e2e: NOTE: {}", skipped.join("; "));
    }
    eprintln!(
        "e2e: {} accept memtrail's config ({}) in {:.1?}",
        checked.join(", "),
        if use_install {
            "memtrail install/uninstall"
        } else {
            "written by hand"
        },
        t0.elapsed()
    );
}
