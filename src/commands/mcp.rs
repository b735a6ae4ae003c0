//! `memtrail mcp`: the MCP server on stdin/stdout.

use anyhow::Result;
use memtrail_runtime::StoreLocation;
use std::process::ExitCode;

/// `memtrail mcp`: serves until stdin closes; a PostgreSQL store (`--store postgres://…`) is
/// read by the read tools (`remember` refuses: it writes the local store).
pub fn mcp(db: StoreLocation) -> Result<ExitCode> {
    let open: std::sync::Arc<memtrail_runtime::mcp::OpenReader> =
        std::sync::Arc::new(crate::common::open_remote_reader);
    // Search by meaning on the local store (the model loaded at its first use; the backlog
    // embedded while the server is idle).
    let meaning: std::sync::Arc<dyn memtrail_runtime::mcp::MeaningSearch> =
        std::sync::Arc::new(memtrail_embed::service::Meaning::new(Box::new(|| {
            crate::commands::models::encoder().map_err(|e| format!("{e:#}"))
        })));
    memtrail_runtime::mcp::serve_stdio_full(db, Some(open), Some(meaning))
        .map_err(|e| anyhow::anyhow!(e))?;
    Ok(ExitCode::SUCCESS)
}
