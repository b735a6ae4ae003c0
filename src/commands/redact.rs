//! `memtrail redact --rescan`: re-apply the redaction rules to stored data.

use crate::common::open_store_read;
use crate::output::plural;
use anyhow::{Result, bail};
use memtrail_runtime::StoreLocation;
use std::process::ExitCode;

/// `memtrail redact --rescan`: progress on stderr on a terminal, the counts on stdout.
pub fn redact_rescan(db: &StoreLocation, json: bool) -> Result<ExitCode> {
    let Some(mut store) = open_store_read(db)? else {
        bail!("no store at {}: nothing to rescan", db);
    };
    let pb = crate::output::spinner("rescanned {pos} messages", json);
    let r = memtrail_runtime::maintenance::rescan(&mut store, &mut |n| pb.set_position(n));
    pb.finish_and_clear();
    let mut r = r?;
    crate::commands::sync_auto::mark_running_sync(db);
    r.log_lines_changed = memtrail_runtime::hook::rescan_log(&memtrail_runtime::records::Standard)
        .map_err(|e| anyhow::anyhow!("the store was rescanned, but not the hook log: {e}"))?;
    if json {
        out!("{}", crate::output::json(&r)?);
    } else {
        out!(
            "rescanned {}: {} changed, {} session titles or branches changed, {} snapshots changed, {} reader states changed, {} hook errors changed, {} machine labels changed, {} hook log lines changed",
            plural(r.messages, "message", "messages"),
            r.messages_changed,
            r.titles_changed,
            r.snapshots_changed,
            r.reader_states_changed,
            r.hook_errors_changed,
            r.labels_changed,
            r.log_lines_changed
        );
    }
    if r.wal_kept {
        eprintln!(
            "{}",
            crate::output::wal_kept_warning("replaced", "redact --rescan")
        );
    }
    Ok(ExitCode::SUCCESS)
}
