//! `memtrail doctor`'s checks: every registration item of every agent memtrail is registered
//! with (as [`crate::status`] reports it), then each distinct hook command run exactly as the
//! config file holds it and as the agent runs it (`sh -c <command>`, a SessionStart payload on
//! stdin, a throwaway store and state folder), with its exit code, stdout protocol (JSON or
//! nothing) and time (at most 1000 ms) checked. The shape of `memtrail doctor --json`
//! (docs/json.md).

use memtrail_adapters::Agent;
use memtrail_adapters::Env;
use serde::Serialize;
use std::io::Write;
use std::path::Path;

/// What `memtrail doctor` found (`doctor --json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DoctorReport {
    /// How many distinct hook commands were run.
    pub hook_programs_checked: usize,
    /// One per problem; none means the hooks work.
    pub problems: Vec<DoctorProblem>,
    /// Items in place that the agent will not run until the user trusts them (Codex hooks
    /// before `/hooks`): not failures, as `status` says.
    pub notices: Vec<DoctorNotice>,
}

/// One problem and its fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DoctorProblem {
    /// The agent whose registration or hook has the problem.
    pub agent: Agent,
    /// What is wrong (`hook Stop is missing from /home/u/.claude/settings.json`).
    pub problem: String,
    /// What to do (`memtrail install --agent claude`).
    pub fix: String,
}

/// An item awaiting the agent's trust.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DoctorNotice {
    /// The agent.
    pub agent: Agent,
    /// `<item> will not run: <reason>`.
    pub notice: String,
    /// The item (`hook Stop`).
    pub item: String,
    /// What is the matter, and what to do (`not trusted yet; open /hooks in Codex …`).
    pub reason: String,
}

/// Run doctor's checks in `env` against the memtrail binary at `binary`, in `scratch` (a private
/// folder the caller made and removes: each hook gets `scratch/<agent>.db` as its store and
/// `scratch/state` as its state folder). `recorded(agent, store)` says whether the hook run
/// recorded itself in that store (the binary reads it with the runtime crate, which this crate
/// does not depend on). Never fails: what cannot be checked is a problem.
pub fn doctor_in(
    env: &Env,
    binary: &Path,
    scratch: &Path,
    recorded: &dyn Fn(Agent, &Path) -> bool,
) -> DoctorReport {
    let mut problems: Vec<DoctorProblem> = Vec::new();
    // Pending trust (Codex skips hooks it does not trust yet) is a notice, as in `status`:
    // notify captures meanwhile, so it does not fail doctor.
    let mut notices: Vec<DoctorNotice> = Vec::new();
    let mut checked = 0usize;
    let mut problem = |agent: Agent, what: String, fix: String| {
        problems.push(DoctorProblem {
            agent,
            problem: what,
            fix,
        });
    };
    for &agent in memtrail_adapters::supported_agents() {
        let st = match crate::status_in(env, agent, binary) {
            Ok(st) => st,
            Err(e) => {
                problem(agent, e.to_string(), "fix the file named above".into());
                continue;
            }
        };
        // An agent memtrail is not installed in (another tool's entry under memtrail's name
        // is none of memtrail's) has nothing to check.
        if st.not_installed() {
            continue;
        }
        let mut unreadable: Vec<&std::path::Path> = Vec::new();
        for item in &st.items {
            use crate::{ItemState as S, UnreadableKind};
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
                S::Untrusted { reason } => notices.push(DoctorNotice {
                    agent,
                    notice: format!("{} will not run: {reason}", item.item),
                    item: item.item.clone(),
                    reason: reason.clone(),
                }),
                // Valid JSONC that the agent ignores whole (Claude Code's settings.json).
                S::Unreadable {
                    error,
                    kind: UnreadableKind::NotStrictJson,
                } => problem(
                    agent,
                    format!("{}: {error}", item.file.display()),
                    format!(
                        "rewrite {} as strict JSON (no comments, no trailing commas), then `memtrail install --agent {agent}`",
                        item.file.display()
                    ),
                ),
                // A file, or an entry under memtrail's name, that is another tool's.
                S::Unreadable {
                    error,
                    kind: UnreadableKind::Foreign,
                } => problem(
                    agent,
                    format!("{}: {error}", item.file.display()),
                    format!(
                        "rename or move that one away in {} (it is left as it is), then `memtrail install --agent {agent}`",
                        item.file.display()
                    ),
                ),
                S::Unreadable { error, .. } => problem(
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
                    .or_else(|| {
                        // The program as a shell word: a path with a space or a quote in it.
                        i.binary.as_ref().map(|b| {
                            format!("{} hook {agent}", memtrail_adapters::shell::shell_quote(b))
                        })
                    })
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
                            memtrail_adapters::synthetic_session_start(agent, scratch).as_bytes(),
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
                    let ran = recorded(agent, &store);
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
    DoctorReport {
        hook_programs_checked: checked,
        problems,
        notices,
    }
}
