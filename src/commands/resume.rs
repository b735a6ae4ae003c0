//! `memtrail resume`: print a session's snapshot.

use crate::common::{absolute, open_reader};
use anyhow::{Context, Result, bail};
use memtrail_runtime::StoreLocation;
use memtrail_runtime::query::SessionSummary;
use memtrail_runtime::resume;
use memtrail_runtime::snapshot::Snapshot;
use serde::Serialize;
use std::process::ExitCode;

/// `resume --json` (schema: docs/json.md).
#[derive(Serialize)]
struct Resumed<'a> {
    session: &'a SessionSummary,
    snapshot: &'a Snapshot,
}

/// `memtrail resume [SESSION]`: the snapshot's text (or JSON) within `budget` bytes.
pub fn resume(
    db: &StoreLocation,
    session: Option<String>,
    budget: usize,
    json: bool,
) -> Result<ExitCode> {
    let cwd = absolute(&std::env::current_dir().context("cannot read the current directory")?);
    let Some(store) = open_reader(db)? else {
        bail!(
            "nothing to resume: the store at {} is empty (run `memtrail import`)",
            db
        );
    };
    let store = store.as_ref();
    let rowid = resume::resolve_or_latest(store, session.as_deref(), &cwd)?;
    let summary = store.session_summary(rowid)?;
    let snap = resume::build_snapshot(store, rowid, budget)?;
    if json {
        out!(
            "{}",
            crate::output::json(&Resumed {
                session: &summary,
                snapshot: &snap
            })?
        );
    } else if snap.text.trim().is_empty() {
        out!(
            "Session {} ({}) has no events to build a snapshot from.",
            summary.session_id,
            summary.agent
        );
    } else {
        outn!("{}", snap.text);
        if !snap.text.ends_with('\n') {
            out!("");
        }
    }
    Ok(ExitCode::SUCCESS)
}
