//! What a plan does: install or uninstall.

use serde::{Deserialize, Serialize};

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Register memtrail (hooks, MCP server, skill).
    Install,
    /// Remove exactly what is memtrail's, and what its install created.
    Uninstall,
}
