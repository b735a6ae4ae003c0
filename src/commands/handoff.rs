//! `memtrail handoff SESSION --to AGENT`: a Markdown restart document for another agent.

use crate::common::open_reader;
use anyhow::{Result, bail};
use memtrail_adapters::Agent;
use memtrail_runtime::StoreLocation;
use memtrail_runtime::resume;
use std::process::ExitCode;

/// `memtrail handoff SESSION --to AGENT`: prints the Markdown document; fails on an empty store
/// or an unknown session.
pub fn handoff(db: &StoreLocation, session: &str, to: Agent) -> Result<ExitCode> {
    let Some(store) = open_reader(db)? else {
        bail!(
            "no session `{session}`: the store at {} is empty (run `memtrail import`)",
            db
        );
    };
    let rowid = store.resolve_session(session, None)?;
    outn!("{}", resume::handoff(store.as_ref(), rowid, to)?);
    Ok(ExitCode::SUCCESS)
}
