//! `memtrail mcp`: the MCP server on stdin/stdout.

use anyhow::Result;
use memtrail_runtime::StoreLocation;
use std::process::ExitCode;

/// `memtrail mcp`: serves until stdin closes.
pub fn mcp(db: StoreLocation) -> Result<ExitCode> {
    memtrail_runtime::mcp::serve_stdio(db).map_err(|e| anyhow::anyhow!(e))?;
    Ok(ExitCode::SUCCESS)
}
