//! `memtrail mcp`: the MCP server on stdin/stdout.

use anyhow::Result;
use memtrail_runtime::StoreLocation;
use std::process::ExitCode;

/// `memtrail mcp`: serves until stdin closes; a PostgreSQL store (`--store postgres://…`) is
/// read by the read tools (`remember` refuses: it writes the local store).
pub fn mcp(db: StoreLocation) -> Result<ExitCode> {
    let open: std::sync::Arc<memtrail_runtime::mcp::OpenReader> =
        std::sync::Arc::new(crate::common::open_remote_reader);
    memtrail_runtime::mcp::serve_stdio_with(db, Some(open)).map_err(|e| anyhow::anyhow!(e))?;
    Ok(ExitCode::SUCCESS)
}
