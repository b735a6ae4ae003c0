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
    /// What the snapshot's text is: data recalled from a transcript, not instructions (first,
    /// as in the MCP server's results).
    recalled: &'static str,
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
                recalled: memtrail_runtime::mcp::RECALLED_NOTICE,
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
    } else if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        // A person reads it.
        outn!("{}", snap.text);
        if !snap.text.ends_with('\n') {
            out!("");
        }
    } else {
        // Piped: an agent may be reading it (the skill's fallback when MCP is not there), so
        // the transcript's text is framed as recalled data, as the hook and MCP frame it.
        let (tag, framed) = resume::quote(&snap.text);
        out!("{}\n\n{framed}", resume::quote_notice(&tag));
    }
    Ok(ExitCode::SUCCESS)
}
