//! `memtrail doctor`: run each installed hook command the way its agent would.

use crate::common::binary_path;
use anyhow::{Context, Result};
use memtrail_runtime::Store;
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
    let report = memtrail_installer::doctor(&binary, &scratch, &|agent, store| {
        Store::open(store)
            .and_then(|s| s.hook_runs(agent))
            .map(|r| !r.is_empty())
            .unwrap_or(false)
    });
    drop(scratch_dir);
    if json {
        out!("{}", crate::output::json(&report)?);
    } else {
        // Items of one agent with the same reason on one line (Codex's three hooks before
        // they are trusted), the reason said once.
        let mut grouped: Vec<(&memtrail_installer::Agent, &str, Vec<&str>)> = Vec::new();
        for n in &report.notices {
            match grouped
                .iter_mut()
                .find(|(a, r, _)| **a == n.agent && *r == n.reason)
            {
                Some((_, _, items)) => items.push(&n.item),
                None => grouped.push((&n.agent, &n.reason, vec![&n.item])),
            }
        }
        for (agent, reason, items) in grouped {
            let (last, rest) = items.split_last().unwrap_or((&"", &[]));
            let items = if rest.is_empty() {
                last.to_string()
            } else {
                format!("{} and {last}", rest.join(", "))
            };
            out!("{agent}: notice (not a failure): {items} will not run: {reason}");
        }
        if report.problems.is_empty() {
            out!(
                "no problems found ({} run)",
                crate::output::plural(
                    report.hook_programs_checked as u64,
                    "hook program",
                    "hook programs"
                )
            );
        }
        for p in &report.problems {
            out!("{}: {} — fix: {}", p.agent, p.problem, p.fix);
        }
    }
    Ok(if report.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
