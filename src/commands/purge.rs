//! `memtrail purge --older-than AGE`: delete old messages.

use crate::common::open_store_read;
use crate::output::{plural, short_time};
use crate::prompt::confirm_destructive;
use anyhow::{Context, Result, bail};
use memtrail_runtime::StoreLocation;
use memtrail_runtime::time::{Bound, parse_date};
use std::process::ExitCode;

/// The youngest cutoff `purge --older-than` accepts without `--force`: one hour ago.
pub const MIN_PURGE_AGE_MS: i64 = 3_600_000;

/// `memtrail purge --older-than AGE`: asks (or needs `--yes`) before deleting anything.
pub fn purge_older(
    db: &StoreLocation,
    older_than: &str,
    vacuum: bool,
    dry_run: bool,
    yes: bool,
    force: bool,
    json: bool,
) -> Result<ExitCode> {
    let cutoff = parse_date(older_than, Bound::Start)
        .with_context(|| format!("--older-than {older_than:?}"))?;
    // An age under an hour (`0d`, `1m`) deletes (nearly) everything, the sessions running now
    // included: a typo more often than a wish. A dry run deletes nothing.
    if !dry_run && !force && memtrail_runtime::now_ms() - cutoff < MIN_PURGE_AGE_MS {
        bail!(
            "--older-than {older_than:?} is less than one hour ago: it would delete (nearly) every message, the sessions running now included; nothing was deleted (add --force if you mean it, or --dry-run to see what it would delete)"
        );
    }
    let when = memtrail_adapters::format_rfc3339_ms(cutoff);
    let Some(mut store) = open_store_read(db)? else {
        if json {
            out!(
                "{}",
                crate::output::json(&memtrail_runtime::maintenance::Purged {
                    dry_run,
                    ..Default::default()
                })?
            );
        } else {
            out!("nothing to purge: the store at {} does not exist", db);
        }
        return Ok(ExitCode::SUCCESS);
    };
    let preview = memtrail_runtime::maintenance::purge(&mut store, cutoff, false, true)?;
    if !dry_run && preview.messages + preview.sessions > 0 {
        let prompt = format!(
            "Delete {} from before {} ({} entirely{})? This cannot be undone",
            plural(preview.messages, "message", "messages"),
            short_time(&when),
            plural(preview.sessions, "session", "sessions"),
            others(preview.other_machines)
        );
        if !confirm_destructive(&prompt, yes)? {
            eprintln!("nothing deleted");
            return Ok(ExitCode::FAILURE);
        }
    }
    let r = if dry_run || preview.messages + preview.sessions == 0 && !vacuum {
        preview
    } else {
        let r = memtrail_runtime::maintenance::purge(&mut store, cutoff, vacuum, false)?;
        crate::commands::sync_auto::mark_running_sync(db);
        r
    };
    if json {
        out!("{}", crate::output::json(&r)?);
    } else if r.dry_run {
        out!(
            "would delete {} from before {} and {} left empty{} (nothing deleted: dry run)",
            plural(r.messages, "message", "messages"),
            short_time(&when),
            plural(r.sessions, "session", "sessions"),
            others(r.other_machines)
        );
        if !force && memtrail_runtime::now_ms() - cutoff < MIN_PURGE_AGE_MS {
            eprintln!(
                "note: without --dry-run this needs --force: --older-than {older_than:?} is less than one hour ago"
            );
        }
    } else {
        out!(
            "deleted {} from before {} and {} left empty{}; store {:.1} MB -> {:.1} MB{}",
            plural(r.messages, "message", "messages"),
            short_time(&when),
            plural(r.sessions, "session", "sessions"),
            others(r.other_machines),
            r.bytes_before as f64 / 1e6,
            r.bytes_after as f64 / 1e6,
            if r.vacuumed { " (vacuumed)" } else { "" }
        );
    }
    if r.wal_kept {
        eprintln!(
            "{}",
            crate::output::wal_kept_warning("deleted", "redact --rescan")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `", N of them other machines' (kept there)"` when some of the sessions purged were pulled
/// from other machines (`sync`): retention is per machine, they are deleted here only.
fn others(n: u64) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(", {n} of them other machines' (kept there)")
    }
}
