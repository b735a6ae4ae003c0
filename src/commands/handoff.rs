//! `memtrail handoff [SESSION] --to AGENT`: a Markdown restart document for another agent.

use crate::common::{absolute, open_reader};
use anyhow::{Context, Result, bail};
use memtrail_adapters::Agent;
use memtrail_runtime::StoreLocation;
use memtrail_runtime::resume;
use std::process::ExitCode;

/// `memtrail handoff [SESSION] --to AGENT`: prints the Markdown document of `session`, else of
/// the latest session of the project at or above the current folder (as `memtrail resume`);
/// fails on an empty store, an unknown session, or no session of this project.
pub fn handoff(db: &StoreLocation, session: Option<&str>, to: Agent) -> Result<ExitCode> {
    let cwd = absolute(&std::env::current_dir().context("cannot read the current directory")?);
    let Some(store) = open_reader(db)? else {
        bail!(
            "nothing to hand off: the store at {} is empty (run `memtrail import`)",
            db
        );
    };
    let rowid = resume::resolve_or_latest(store.as_ref(), session, &cwd)?;
    outn!("{}", resume::handoff(store.as_ref(), rowid, to)?);
    Ok(ExitCode::SUCCESS)
}
