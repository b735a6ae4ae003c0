//! The installer's parts of the `--json` outputs (schema: docs/json.md): the trust notices of
//! `status --json`, one agent's result of `install --json` and
//! `uninstall --json`.

use crate::status::{AgentStatus, ItemState};
use memtrail_adapters::Agent;
use serde::Serialize;
use std::path::PathBuf;

/// An item that awaits the agent's trust (`status --json`: `notices[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrustNotice {
    /// The agent.
    pub agent: Agent,
    /// The item (`hook Stop`).
    pub item: String,
    /// The file it lives in.
    pub file: PathBuf,
    /// What is the matter, and what to do (the item's `reason`).
    pub notice: String,
}

impl TrustNotice {
    /// The notices of one agent's status ([`AgentStatus::notices`]).
    pub fn of(st: &AgentStatus) -> impl Iterator<Item = TrustNotice> + '_ {
        st.notices().map(|n| TrustNotice {
            agent: st.agent,
            item: n.item.clone(),
            file: n.file.clone(),
            notice: match &n.state {
                ItemState::Untrusted { reason } => reason.clone(),
                _ => String::new(),
            },
        })
    }
}

/// One agent's result in `install --json` and `uninstall --json` (with or without `--dry-run`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentResult {
    /// The agent.
    pub agent: Agent,
    /// Why the agent was (or, in a dry run, would be) left out; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// One line per change made (or, in a dry run, planned); empty when there was nothing to do
    /// or the agent was left out before planning.
    pub changes: Vec<String>,
    /// Dry run only: the unified diff of the plan (absent for an agent left out before planning).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}
