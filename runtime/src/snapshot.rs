//! The snapshot: a session's working state in a few kilobytes, built from its events, for an
//! agent that has just lost its context to compaction (and for `memtrail resume`).
//!
//! Bounded: the rendered text never exceeds the byte budget. Deterministic: the same input
//! gives the same bytes.

use crate::events::StoredEvent;
use serde::{Deserialize, Serialize};

/// Default byte budget of a snapshot.
pub const DEFAULT_BUDGET: usize = 2048;

/// What a snapshot is built from.
#[derive(Debug, Clone, Default)]
pub struct SnapshotInput {
    /// The agent (`claude`, `codex`, …).
    pub agent: String,
    /// The session's external id.
    pub session_id: String,
    pub project_dir: Option<String>,
    pub title: Option<String>,
    pub git_branch: Option<String>,
    /// The session's stored events in session order, including derived ones from
    /// [`crate::events::correlate`].
    pub events: Vec<StoredEvent>,
}

/// A built snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The text to inject (Markdown, factual statements), at most `budget` bytes.
    pub text: String,
    /// The budget it was built for, in bytes.
    pub budget: usize,
    /// Number of events it was built from.
    pub events: usize,
}

/// Build the snapshot of `input` within `budget` bytes (UTF-8 bytes of `text`).
pub fn build(input: &SnapshotInput, budget: usize) -> Snapshot {
    Snapshot {
        text: String::new(),
        budget,
        events: input.events.len(),
    }
}
