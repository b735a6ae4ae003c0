//! `memtrail mcp`: the MCP server on stdin/stdout.

use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

/// `memtrail mcp`: serves until stdin closes.
pub fn mcp(db: PathBuf) -> Result<ExitCode> {
    memtrail_runtime::mcp::serve_stdio(memtrail_runtime::StoreLocation::Sqlite(db))
        .map_err(|e| anyhow::anyhow!(e))?;
    Ok(ExitCode::SUCCESS)
}
