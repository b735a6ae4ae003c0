//! `memtrail install` and `memtrail uninstall [--purge]`: plan, confirm and apply the
//! registrations (hooks, MCP server, skill) of each agent; `--purge` deletes the store and state.

use crate::cli::InstallArgs;
use crate::common::binary_path;
use crate::output::plural;
use crate::prompt::ask;
use anyhow::{Context, Result, bail};
use memtrail_adapters::Agent;
use memtrail_installer::AgentResult;
use memtrail_runtime::StoreLocation;
use std::io::IsTerminal;
use std::process::ExitCode;

/// `memtrail install` and `memtrail uninstall` (`action`), then `--purge` (`purge_too`). Exit
/// code 1 when an agent was left out or the user declined.
pub fn install(
    a: InstallArgs,
    purge_too: bool,
    action: memtrail_installer::Action,
    db: &StoreLocation,
) -> Result<ExitCode> {
    // `memtrail install --yes | head -1`: every agent is still done (a closed pipe between
    // two agents' edits would leave some wired and some not).
    crate::output::finish_after_stdout_closes();
    // Refuse before anything changes, not after the registrations are gone.
    if purge_too
        && !a.dry_run
        && !a.yes
        && (db.exists()
            || memtrail_installer::state_dir_in(&memtrail_installer::Env::from_process()).exists())
        && !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal())
    {
        bail!(
            "--purge deletes the store {} and memtrail's state (config backups, install state, logs) and installed models too; add --yes to confirm (nothing was changed)",
            db
        );
    }
    let binary = binary_path()?;
    // The entries written are found again (by `uninstall`, `status`, a second `install`) by
    // their program's file name: one of another name could never be taken out.
    if matches!(action, memtrail_installer::Action::Install)
        && !memtrail_adapters::shell::is_memtrail_program(&binary.to_string_lossy())
    {
        bail!(
            "install needs the binary to be named `{}` (this one is {}): the hooks and MCP entries it writes are recognised by that name, so uninstall and status could not find them. Copy or link it as `memtrail` and run that (nothing was changed)",
            memtrail_adapters::shell::PROGRAM_NAME,
            binary.display()
        );
    }
    // One install or uninstall at a time, from the first read of a config to the last write
    // (a dry run writes nothing, not even the lock file).
    let _lock = if a.dry_run { None } else { Some(take_lock()?) };
    let mut agents: Vec<Agent> = Vec::new();
    for ag in &a.agents {
        if !agents.contains(ag) {
            agents.push(*ag);
        }
    }
    if agents.is_empty() {
        // Install where the agent is found; uninstall wherever memtrail may be registered.
        agents = match action {
            memtrail_installer::Action::Install => memtrail_installer::found_agents(&binary)
                .into_iter()
                .filter(|(_, detected)| *detected)
                .map(|(ag, _)| ag)
                .collect(),
            memtrail_installer::Action::Uninstall => memtrail_installer::registered_agents(&binary),
        };
        // On a terminal, without --yes: let the user pick, detected agents preselected.
        let interactive_pick = matches!(action, memtrail_installer::Action::Install)
            && !a.yes
            && !a.dry_run
            && !a.json
            && std::io::stdin().is_terminal()
            && std::io::stderr().is_terminal();
        if interactive_pick {
            let candidates: Vec<(Agent, bool)> = memtrail_installer::found_agents(&binary);
            let labels: Vec<String> = candidates
                .iter()
                .map(|(ag, found)| {
                    format!(
                        "{}{}",
                        ag.display_name(),
                        if *found { "  (found)" } else { "  (not found)" }
                    )
                })
                .collect();
            let defaults: Vec<bool> = candidates.iter().map(|(_, d)| *d).collect();
            let picked = ask(|| {
                dialoguer::MultiSelect::new()
                    .with_prompt("Install memtrail into (space to toggle, enter to confirm)")
                    .items(&labels)
                    .defaults(&defaults)
                    .interact()
            })?;
            agents = picked.into_iter().map(|i| candidates[i].0).collect();
            if agents.is_empty() {
                eprintln!("nothing selected; nothing changed");
                return Ok(ExitCode::SUCCESS);
            }
        }
        if agents.is_empty() && matches!(action, memtrail_installer::Action::Uninstall) {
            let note = "memtrail is not registered with any agent: nothing to uninstall";
            if a.json {
                // One JSON value on stdout (no agent acted on), the note on stderr.
                out!("[]");
                eprintln!("{note}");
            } else {
                out!("{note}");
            }
            // --purge still deletes the store (hooks removed earlier, the store left behind).
            if purge_too {
                return purge(db, a.yes, a.json, a.dry_run);
            }
            return Ok(ExitCode::SUCCESS);
        }
        if agents.is_empty() {
            bail!(
                "no supported agent found on this machine (looked for: {}); name one with --agent to install anyway",
                memtrail_adapters::supported_agents()
                    .iter()
                    .map(|a| a.display_name())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let verb = match action {
        memtrail_installer::Action::Install => "install",
        memtrail_installer::Action::Uninstall => "uninstall",
    };
    // With agents named on the command line, one that cannot be planned stops everything. Found
    // by detection, it is left out (its files untouched) and the others go ahead; the exit code
    // is then 1.
    let auto = a.agents.is_empty();
    let mut plans = Vec::new();
    let mut left_out: Vec<(Agent, String)> = Vec::new();
    for agent in &agents {
        match memtrail_installer::plan(*agent, action, &binary) {
            // A file the apply would refuse (read-only) is treated like one that does not
            // parse: that agent is left out (or, named, stops everything) before any change.
            Ok(p) if !a.dry_run && !p.notes().is_empty() => {
                let why = p.notes().join("; ");
                if !auto {
                    bail!("{}: {why} (nothing was changed)", agent.display_name());
                }
                eprintln!(
                    "memtrail: {}: {why}; {} (run `memtrail {verb}` again once it is fixed)",
                    agent.display_name(),
                    left_out_words(agents.len())
                );
                left_out.push((*agent, why));
            }
            // A dry run shows the change, and says (exit code 1) that the agent would be left out.
            Ok(p) if !p.notes().is_empty() => {
                left_out.push((*agent, p.notes().join("; ")));
                plans.push((*agent, p));
            }
            Ok(p) => plans.push((*agent, p)),
            Err(e) if auto => {
                eprintln!(
                    "memtrail: {}: {e}; {} (run `memtrail {verb}` again once it is fixed)",
                    agent.display_name(),
                    left_out_words(agents.len())
                );
                left_out.push((*agent, e.to_string()));
            }
            Err(e) => return Err(e.into()),
        }
    }
    if a.dry_run {
        if a.json {
            // Every agent, with `error` for one that would be left out (and why).
            let why = |ag: &Agent| left_out.iter().find(|(a, _)| a == ag).map(|(_, e)| e);
            let mut v: Vec<AgentResult> = left_out
                .iter()
                .filter(|(ag, _)| !plans.iter().any(|(a, _)| a == ag))
                .map(|(ag, e)| left_out_result(*ag, e.clone()))
                .collect();
            v.extend(plans.iter().map(|(ag, p)| AgentResult {
                agent: *ag,
                error: why(ag).cloned(),
                changes: p.describe(),
                diff: Some(p.diff()),
            }));
            out!("{}", crate::output::json(&v)?);
        } else {
            for (_, p) in &plans {
                if !p.is_empty() {
                    outn!("{}", p.diff());
                }
            }
            // After the diffs, what they add up to, per agent.
            for (ag, p) in &plans {
                if p.is_empty() {
                    out!("{}", nothing_to_do(*ag, p, verb, &binary));
                } else {
                    out!("{}: would {verb} ({})", ag.display_name(), count_changes(p));
                }
            }
            out!("Nothing was changed (a dry run).");
        }
        if matches!(action, memtrail_installer::Action::Uninstall) && purge_too {
            purge(db, a.yes, a.json, true)?;
        }
        return Ok(if left_out.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    let interactive = !a.yes && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if interactive && plans.iter().any(|(_, p)| !p.is_empty()) {
        for (ag, p) in &plans {
            eprintln!("{}:", ag.display_name());
            for line in p.describe() {
                eprintln!("  {line}");
            }
        }
        let ok = ask(|| {
            dialoguer::Confirm::new()
                .with_prompt(format!("{verb} these changes?"))
                .default(true)
                .interact()
        })?;
        if !ok {
            eprintln!("nothing changed");
            return Ok(ExitCode::FAILURE);
        }
    }
    let mut results: Vec<AgentResult> = left_out
        .iter()
        .map(|(ag, e)| left_out_result(*ag, e.clone()))
        .collect();
    for (i, (ag, p)) in plans.iter().enumerate() {
        if p.is_empty() {
            if !a.json {
                out!("{}", nothing_to_do(*ag, p, verb, &binary));
            }
            results.push(AgentResult {
                agent: *ag,
                error: None,
                changes: Vec::new(),
                diff: None,
            });
            continue;
        }
        // Each agent all or nothing (the installer undoes a failed apply); the others go ahead.
        if let Err(e) = memtrail_installer::apply(p) {
            // Said only when other agents come after it (one agent named: its error is all
            // there is).
            if i + 1 < plans.len() {
                eprintln!(
                    "memtrail: {}: {e}; the other agents go ahead",
                    ag.display_name()
                );
            } else {
                eprintln!("memtrail: {}: {e}", ag.display_name());
            }
            left_out.push((*ag, e.to_string()));
            results.push(left_out_result(*ag, e.to_string()));
            continue;
        }
        if !a.json && interactive {
            // The changes were listed before the confirmation.
            out!("{}: done ({})", ag.display_name(), count_changes(p));
        } else if !a.json {
            out!("{}: {verb}ed ({}):", ag.display_name(), count_changes(p));
            for line in p.describe() {
                out!("  {line}");
            }
        }
        results.push(AgentResult {
            agent: *ag,
            error: None,
            changes: p.describe(),
            diff: None,
        });
    }
    if a.json {
        out!("{}", crate::output::json(&results)?);
    } else if matches!(action, memtrail_installer::Action::Install)
        && plans
            .iter()
            .any(|(ag, p)| !p.is_empty() && !left_out.iter().any(|(l, _)| l == ag))
    {
        // Only when an agent was wired (not after the one named failed).
        out!("\nNext: `memtrail import` brings in the sessions you already have.");
    }
    if matches!(action, memtrail_installer::Action::Uninstall) && purge_too {
        return purge(db, a.yes, a.json, a.dry_run);
    }
    if !left_out.is_empty() {
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// What follows an agent's error when it is left out: the others go ahead only when there are
/// others (`agents`: how many were to be installed or uninstalled).
fn left_out_words(agents: usize) -> &'static str {
    if agents > 1 {
        "this agent was left out, the others go ahead"
    } else {
        "this agent was left out"
    }
}

/// The line for an agent whose plan is empty: already installed (uninstalled), or, for an
/// agent memtrail registers nothing in (Aider), that there is nothing to do there at all, and
/// whether the agent is on this machine (as `status` says).
fn nothing_to_do(
    agent: Agent,
    plan: &memtrail_installer::Plan,
    verb: &str,
    binary: &std::path::Path,
) -> String {
    let name = agent.display_name();
    if !plan.registers_nothing() {
        return format!("{name}: already {verb}ed, nothing to do");
    }
    let found = memtrail_installer::status(agent, binary).is_ok_and(|s| s.detected);
    format!(
        "{name}: nothing to {verb}: memtrail registers nothing in {name} (no hooks, MCP server or skill; `memtrail import` reads its sessions){}",
        if found {
            String::new()
        } else {
            format!("; {name} is not on this machine")
        }
    )
}

/// The install lock ([`memtrail_installer::lock_in`]): when another install or uninstall holds
/// it, a line on stderr after a moment, then a wait of up to [`memtrail_installer::LOCK_TIMEOUT`].
fn take_lock() -> Result<memtrail_installer::InstallLock> {
    let env = memtrail_installer::Env::from_process();
    Ok(memtrail_installer::lock_in(
        &env,
        memtrail_installer::LOCK_NOTICE_AFTER,
        memtrail_installer::LOCK_TIMEOUT,
        &mut |pid| {
            eprintln!(
                "memtrail: another memtrail install or uninstall{} is running; waiting for it to finish (up to {} s)",
                pid.map(|p| format!(" (pid {p})")).unwrap_or_default(),
                memtrail_installer::LOCK_TIMEOUT.as_secs()
            )
        },
    )?)
}

/// `install --json`'s entry for an agent left out: why, and no change.
fn left_out_result(agent: Agent, error: String) -> AgentResult {
    AgentResult {
        agent,
        error: Some(error),
        changes: Vec::new(),
        diff: None,
    }
}

/// `uninstall --purge`, after the uninstall gave the configs their original bytes back: delete
/// the store (and its WAL files), then memtrail's state folder (config backups, which hold
/// copies of the agents' configs with their API keys and tokens; the install state; the logs),
/// after one confirmation. The state goes only once memtrail is registered with no agent: one
/// left out (its config did not parse, say) still needs its backups and install state to be
/// uninstalled; the exit code is then 1. With `json` (after `uninstall --json` printed its
/// array) what was deleted goes to stderr, so stdout stays one JSON value. With `dry_run` it
/// says what it would delete (the state as if the uninstall had succeeded) and deletes nothing.
pub fn purge(db: &StoreLocation, yes: bool, json: bool, dry_run: bool) -> Result<ExitCode> {
    let say = |line: String| {
        if json {
            eprintln!("{line}");
        } else {
            out!("{line}");
        }
    };
    let env = memtrail_installer::Env::from_process();
    let state = memtrail_installer::state_dir_in(&env);
    let binary = binary_path()?;
    // An agent where the uninstall left only what holds the user's own hooks or keys (VS
    // Code's hook file entry while the file holds a hook of theirs: `keep …`) has nothing of
    // memtrail's left to uninstall: its state is not needed there (the purge exited 1).
    let still: Vec<Agent> = memtrail_installer::registered_agents(&binary)
        .into_iter()
        .filter(|ag| {
            memtrail_installer::plan(*ag, memtrail_installer::Action::Uninstall, &binary)
                .map_or(true, |p| p.change_count() > 0)
        })
        .collect();
    // A dry run changed no config: the state goes if the uninstall it shows succeeds.
    // The lock file this uninstall holds is not state of its own.
    let purge_state = (still.is_empty() || dry_run) && memtrail_installer::has_state_in(&env);
    let backups = memtrail_installer::backups_in(&env);
    // Read without changing it (a dry run changes nothing; a store is not migrated to be
    // deleted); a file that is not a memtrail store (MEMTRAIL_DB naming another file) is
    // refused, not deleted.
    let store_what = match db.sqlite_path().filter(|_| db.exists()) {
        Some(path) => match memtrail_runtime::store::peek_counts(path) {
            Ok(Some(Some((sessions, messages)))) => Some(format!(
                "{}, {}",
                plural(sessions as u64, "session", "sessions"),
                plural(messages as u64, "message", "messages")
            )),
            Ok(Some(None)) => Some("its content: it cannot be read".to_string()),
            _ => bail!(
                "{db} is not a memtrail store: --purge does not delete it (nothing was deleted)"
            ),
        },
        None => None,
    };
    let state_what = format!(
        "memtrail's state {} ({}, the install state, the logs)",
        state.display(),
        plural(backups.folders as u64, "config backup", "config backups")
    );
    // The installed models (`memtrail models install`) in memtrail's own data folder: its
    // data too (a folder named by MEMTRAIL_MODELS_DIR is the user's, left alone).
    let models = crate::commands::models::models_root();
    let users_folder = std::env::var_os("MEMTRAIL_MODELS_DIR").is_some_and(|v| !v.is_empty());
    let models_what = (!users_folder
        && std::fs::symlink_metadata(&models).is_ok_and(|m| m.is_dir()))
    .then(|| {
        format!(
            "the models {} ({:.1} MB)",
            models.display(),
            dir_bytes(&models) as f64 / 1e6
        )
    });
    let mut parts = Vec::new();
    if let Some(w) = &store_what {
        parts.push(format!("the store {} ({w})", db));
    }
    if purge_state {
        parts.push(state_what.clone());
    }
    if let Some(m) = &models_what {
        parts.push(m.clone());
    }
    if dry_run {
        say(if parts.is_empty() {
            "--purge would delete nothing more: no store, state or models".to_string()
        } else {
            format!("--purge would delete {}", parts.join(" and "))
        });
        return Ok(ExitCode::SUCCESS);
    }
    if !parts.is_empty() {
        let what = parts.join(" and ");
        if !yes {
            let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
            if !interactive {
                bail!("--purge deletes {what}; add --yes to confirm");
            }
            let ok = ask(|| {
                dialoguer::Confirm::new()
                    .with_prompt(format!("Delete {what}?"))
                    .default(false)
                    .interact()
            })?;
            if !ok {
                eprintln!("nothing was deleted");
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    match &store_what {
        Some(w) => {
            // Processes that hold the file open (`memtrail web`, an MCP server) keep reading
            // it until they notice it is gone, and its space is given back when they close it.
            let holders = db.sqlite_path().map(store_holders).unwrap_or_default();
            db.remove_files()
                .with_context(|| format!("cannot delete {db}"))?;
            say(format!("deleted the store {db} ({w})"));
            if !holders.is_empty() {
                say(format!(
                    "note: still open in {} ({}): each lets it go at its next request (an MCP server, `memtrail web`) or when it stops; the deleted file's space comes back then",
                    plural(holders.len() as u64, "process", "processes"),
                    holders
                        .iter()
                        .map(|(pid, name)| format!("{name} pid {pid}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        None => say(format!("no store at {}: nothing to delete there", db)),
    }
    if let Some(m) = &models_what {
        std::fs::remove_dir_all(&models)
            .with_context(|| format!("cannot delete {}", models.display()))?;
        // memtrail's data folder goes too once empty (the store may have been elsewhere).
        if let Some(parent) = models.parent() {
            let _ = std::fs::remove_dir(parent);
        }
        say(format!("deleted {m}"));
    }
    if purge_state {
        memtrail_installer::purge_state_in(&env)?;
        say(format!("deleted {state_what}"));
    } else if !still.is_empty() {
        say(format!(
            "kept memtrail's state {}: memtrail is still registered with {} (uninstalling it there needs its backups and install state); once that is fixed, run `memtrail uninstall --purge` again",
            state.display(),
            still
                .iter()
                .map(|a| a.display_name())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The processes of this user, other than this one, with the store at `db` (or its `-wal`)
/// open: their ids and names (`/proc/<pid>/comm`, shown through `terminal_safe`), by id.
/// Read from `/proc/<pid>/fd` (Linux); empty elsewhere and where `/proc` cannot be read.
pub(crate) fn store_holders(db: &std::path::Path) -> Vec<(u32, String)> {
    #[cfg(target_os = "linux")]
    {
        let real = std::fs::canonicalize(db).unwrap_or_else(|_| db.to_path_buf());
        let mut wal = real.clone().into_os_string();
        wal.push("-wal");
        let wal = std::path::PathBuf::from(wal);
        let me = std::process::id();
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut found: Vec<(u32, String)> = procs
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| pid != me)
            .filter(|pid| {
                std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
                    fds.flatten().any(|fd| {
                        std::fs::read_link(fd.path()).is_ok_and(|t| t == real || t == wal)
                    })
                })
            })
            .map(|pid| {
                let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
                (
                    pid,
                    crate::output::terminal_safe(name.trim_end()).into_owned(),
                )
            })
            .collect();
        found.sort();
        found
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = db;
        Vec::new()
    }
}

/// The bytes of the files under `dir` (symlinks not followed; what cannot be read counts 0).
pub(crate) fn dir_bytes(dir: &std::path::Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) if m.is_file() => m.len(),
            _ => 0,
        })
        .sum()
}

/// `3 changes`, `1 change`, or `no change` for a plan whose lines only say what stays
/// (`keep …`) or note something.
fn count_changes(p: &memtrail_installer::Plan) -> String {
    match p.change_count() {
        0 => "no change".to_string(),
        n => plural(n as u64, "change", "changes"),
    }
}
