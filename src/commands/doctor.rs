//! `memtrail doctor`: run each installed hook command the way its agent would.

use crate::common::binary_path;
use anyhow::{Context, Result};
use memtrail_adapters::Agent;
use memtrail_runtime::Store;
use std::io::Write;
use std::process::ExitCode;

/// `memtrail doctor`: registration problems from `status`, then each hook command (as its config
/// file holds it) run the way its agent runs it (`sh -c`, a SessionStart payload on stdin, a
/// throwaway store and state folder), with its exit code, stdout protocol and time checked.
pub fn doctor(json: bool) -> Result<ExitCode> {
    let binary = binary_path()?;
    // A private scratch folder: a random name made with mkdir (which fails on anything already
    // there, a planted symlink included), mode 0700, removed on return.
    let mut builder = tempfile::Builder::new();
    builder.prefix("memtrail-doctor-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o700));
    }
    let scratch_dir = builder
        .tempdir()
        .context("cannot make doctor's scratch folder")?;
    let scratch = scratch_dir.path().to_path_buf();
    let mut problems: Vec<serde_json::Value> = Vec::new();
    // Pending trust (Codex skips hooks it does not trust yet) is a notice, as in `status`:
    // notify captures meanwhile, so it does not fail doctor.
    let mut notices: Vec<serde_json::Value> = Vec::new();
    let mut checked = 0usize;
    let mut problem = |agent: Agent, what: String, fix: String| {
        problems.push(serde_json::json!({"agent": agent, "problem": what, "fix": fix}));
    };
    for &agent in memtrail_adapters::supported_agents() {
        let st = match memtrail_installer::status(agent, &binary) {
            Ok(st) => st,
            Err(memtrail_installer::InstallError::Unsupported(_)) => continue,
            Err(e) => {
                problem(agent, e.to_string(), "fix the file named above".into());
                continue;
            }
        };
        let registered: Vec<_> = st
            .items
            .iter()
            .filter(|i| !matches!(i.state, memtrail_installer::ItemState::Missing))
            .collect();
        if registered.is_empty() {
            continue;
        }
        let mut unreadable: Vec<&std::path::Path> = Vec::new();
        for item in &st.items {
            use memtrail_installer::ItemState as S;
            let fix = format!("memtrail install --agent {agent}");
            if matches!(item.state, S::Unreadable { .. }) {
                // One line per file, not one per item it holds.
                if unreadable.contains(&item.file.as_path()) {
                    continue;
                }
                unreadable.push(&item.file);
            }
            match &item.state {
                S::Present => {}
                S::Missing => problem(
                    agent,
                    format!("{} is missing from {}", item.item, item.file.display()),
                    fix,
                ),
                S::Stale { points_at } => problem(
                    agent,
                    format!(
                        "{} points at {} instead of {}",
                        item.item,
                        points_at.as_deref().unwrap_or("another program"),
                        binary.display()
                    ),
                    fix,
                ),
                S::Duplicate { count } => problem(
                    agent,
                    format!("{} is registered {count} times", item.item),
                    fix,
                ),
                S::Untrusted { reason } => notices.push(serde_json::json!({
                    "agent": agent,
                    "notice": format!("{} will not run: {reason}", item.item),
                })),
                // Valid JSONC that the agent ignores whole (Claude Code's settings.json).
                S::Unreadable { error } if error.starts_with("not strict JSON") => problem(
                    agent,
                    format!("{}: {error}", item.file.display()),
                    format!(
                        "rewrite {} as strict JSON (no comments, no trailing commas), then `memtrail install --agent {agent}`",
                        item.file.display()
                    ),
                ),
                S::Unreadable { error } => problem(
                    agent,
                    format!(
                        "{} cannot be read ({error}); memtrail's entries in it cannot be checked",
                        item.file.display()
                    ),
                    format!(
                        "repair {} by hand (memtrail never edits a file it cannot read or parse)",
                        item.file.display()
                    ),
                ),
            }
        }
        // Run each distinct hook command once, exactly as the config file holds it and as the
        // agent runs it (`sh -c <command>`, the payload on stdin).
        let mut commands: Vec<(String, Option<String>)> = st
            .items
            .iter()
            .filter(|i| i.item.starts_with("hook"))
            .filter_map(|i| {
                i.command
                    .clone()
                    .or_else(|| i.binary.as_ref().map(|b| format!("{b} hook {agent}")))
                    .map(|c| (c, i.binary.clone()))
            })
            .collect();
        commands.sort();
        commands.dedup();
        for (command, prog) in commands {
            checked += 1;
            if let Some(prog) = &prog
                && !std::path::Path::new(prog).is_file()
            {
                problem(
                    agent,
                    format!("the hook program {prog} does not exist: every {agent} hook fails"),
                    format!(
                        "memtrail install --agent {agent} (points the hooks at {})",
                        binary.display()
                    ),
                );
                continue;
            }
            let store = scratch.join(format!("{agent}.db"));
            let t0 = std::time::Instant::now();
            let out = std::process::Command::new("sh")
                .args(["-c", &command])
                .env("MEMTRAIL_DB", &store)
                .env("XDG_STATE_HOME", scratch.join("state"))
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .and_then(|mut child| {
                    if let Some(mut stdin) = child.stdin.take() {
                        let _ = stdin.write_all(
                            memtrail_adapters::synthetic_session_start(agent, &scratch).as_bytes(),
                        );
                    }
                    child.wait_with_output()
                });
            let ms = t0.elapsed().as_secs_f64() * 1000.0;
            match out {
                Err(e) => problem(
                    agent,
                    format!("the hook `{command}` cannot run: {e}"),
                    format!("memtrail install --agent {agent}"),
                ),
                Ok(o) => {
                    if !o.status.success() {
                        problem(
                            agent,
                            format!(
                                "the hook exited with {} (agents may treat this as a failure or a block)",
                                o.status
                            ),
                            "reinstall memtrail; see the hook log".into(),
                        );
                    }
                    let stdout = String::from_utf8_lossy(&o.stdout);
                    if !stdout.trim().is_empty()
                        && serde_json::from_str::<serde_json::Value>(stdout.trim()).is_err()
                    {
                        problem(
                            agent,
                            format!(
                                "the hook printed non-JSON on stdout: {}",
                                memtrail_adapters::one_line(&stdout, 80)
                            ),
                            "reinstall memtrail".into(),
                        );
                    }
                    if ms > 1000.0 {
                        problem(
                            agent,
                            format!("the hook took {ms:.0} ms"),
                            "check the store's disk and the hook log".into(),
                        );
                    }
                    let ran = Store::open(&store)
                        .and_then(|s| s.hook_runs(agent))
                        .map(|r| !r.is_empty())
                        .unwrap_or(false);
                    if !ran {
                        let log = std::fs::read_to_string(scratch.join("state/memtrail/hook.log"))
                            .unwrap_or_default();
                        problem(
                            agent,
                            format!(
                                "the hook ran but recorded nothing: {}",
                                memtrail_adapters::one_line(
                                    log.lines().last().unwrap_or("no log line"),
                                    160
                                )
                            ),
                            "see the hook log".into(),
                        );
                    }
                }
            }
        }
    }
    drop(scratch_dir);
    if json {
        out!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"hook_programs_checked": checked, "problems": problems, "notices": notices})
            )?
        );
    } else {
        for n in &notices {
            out!(
                "{}: notice (not a failure): {}",
                n["agent"].as_str().unwrap_or("?"),
                n["notice"].as_str().unwrap_or("")
            );
        }
        if problems.is_empty() {
            out!("no problems found ({checked} hook program(s) run)");
        }
        for p in &problems {
            out!(
                "{}: {} — fix: {}",
                p["agent"].as_str().unwrap_or("?"),
                p["problem"].as_str().unwrap_or(""),
                p["fix"].as_str().unwrap_or("")
            );
        }
    }
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
