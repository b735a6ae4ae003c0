//! `memtrail handoff SESSION --to AGENT`: a Markdown restart document for another agent.

use crate::common::open_store_read;
use anyhow::{Result, bail};
use memtrail_adapters::Agent;
use memtrail_runtime::StoreLocation;
use memtrail_runtime::query::{self};
use memtrail_runtime::resume;
use std::process::ExitCode;

/// `memtrail handoff SESSION --to AGENT`: prints the Markdown document; fails on an empty store
/// or an unknown session.
pub fn handoff(db: &StoreLocation, session: &str, to: Agent) -> Result<ExitCode> {
    let Some(store) = open_store_read(db)? else {
        bail!(
            "no session `{session}`: the store at {} is empty (run `memtrail import`)",
            db
        );
    };
    let rowid = query::resolve_session(&store, session, None)?;
    outn!("{}", resume::handoff(&store, rowid, to)?);
    Ok(ExitCode::SUCCESS)
}
