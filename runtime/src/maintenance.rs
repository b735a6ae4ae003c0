//! Privacy maintenance of the store: delete a session, purge old messages, re-apply the current
//! redaction rules to what was stored earlier, and the retention check of `memtrail status`.
//!
//! Deleted text is gone from the files, not only from queries: every connection to the store
//! runs with `PRAGMA secure_delete = ON` (freed space is overwritten with zeros, so the old
//! versions of rows that hooks rewrote are gone too), and these operations then merge the full-text
//! index (`'optimize'`, which drops the deleted entries' tokens from its segments) and truncate
//! the WAL (`wal_checkpoint(TRUNCATE)`).

use crate::Result;
use crate::store::Store;
use serde::Serialize;
use std::path::PathBuf;

pub use crate::store::maintenance::{
    Purged, RESCAN_BATCH, Recaptured, Rescanned, SessionInfo, capture_again, delete_rows,
    delete_session, is_deleted, purge, session_info, session_row,
};

/// Apply memtrail's current redaction rules ([`crate::records::Standard`]) to everything stored:
/// see [`crate::store::maintenance::rescan`] (what is rewritten, batches of [`RESCAN_BATCH`]
/// messages, `progress` after each batch with the messages read so far; idempotent). The
/// rules include the user's (`[privacy] redact` in memtrail's config, read first).
///
/// Errors: the config cannot be read or a rule of it does not compile
/// ([`crate::privacy::Privacy::load`]; nothing is rewritten), or the store fails.
pub fn rescan(store: &mut Store, progress: &mut dyn FnMut(u64)) -> Result<Rescanned> {
    crate::privacy::Privacy::load()?;
    crate::store::maintenance::rescan(store, progress, &crate::records::Standard)
}

/// An agent's transcript retention (Claude Code's `cleanupPeriodDays`) against what memtrail
/// has captured, for `memtrail status`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Retention {
    /// The settings file read (`<Claude config dir>/settings.json`).
    pub settings: String,
    /// `cleanupPeriodDays` from it, or 30 (Claude Code's default) when absent.
    pub cleanup_period_days: u64,
    /// Whether the value came from the settings file.
    pub from_settings: bool,
    /// Transcripts that Claude Code deletes within 7 days (older than `cleanupPeriodDays` − 7
    /// days by modification time) and that memtrail has not fully captured (no cursor, or a
    /// cursor behind the file's size).
    pub at_risk: Vec<AtRisk>,
    /// When the first of them is deleted (ms since the Unix epoch).
    pub first_deletion_ms: Option<i64>,
}

/// One transcript at risk (see [`Retention::at_risk`]).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AtRisk {
    /// The transcript (a path).
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Bytes memtrail has read (0 without a cursor).
    pub captured: u64,
    /// When Claude Code deletes it: modification time + `cleanupPeriodDays` (ms since the epoch).
    pub deletes_at_ms: i64,
}

/// Days before Claude Code's deletion from which a transcript counts as at risk.
pub const RETENTION_WARNING_DAYS: u64 = 7;

/// The retention check over `transcripts` (an agent's, from `discover`) under `policy` (the
/// agent's [`memtrail_adapters::Quirks::transcript_retention`]), at time `now_ms`.
pub fn transcript_retention(
    store: Option<&Store>,
    policy: &memtrail_adapters::TranscriptRetention,
    transcripts: &[PathBuf],
    now_ms: i64,
) -> Result<Retention> {
    let (settings, days, from_settings) = (&policy.settings, policy.days, policy.from_settings);
    let day_ms: i64 = 86_400_000;
    let horizon = now_ms - (days.saturating_sub(RETENTION_WARNING_DAYS) as i64) * day_ms;
    let mut at_risk = Vec::new();
    for p in transcripts {
        let Ok(md) = std::fs::metadata(p) else {
            continue;
        };
        let Some(mtime) = md
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as i64)
        else {
            continue;
        };
        if mtime >= horizon {
            continue;
        }
        let key = p.to_string_lossy();
        let captured = match store {
            Some(s) => s.cursor(&key)?.map_or(0, |c| c.offset),
            None => 0,
        };
        if captured >= md.len() {
            continue;
        }
        at_risk.push(AtRisk {
            path: key.into_owned(),
            size: md.len(),
            captured,
            deletes_at_ms: mtime + days as i64 * day_ms,
        });
    }
    at_risk.sort_by_key(|a| a.deletes_at_ms);
    Ok(Retention {
        settings: settings.display().to_string(),
        cleanup_period_days: days,
        from_settings,
        first_deletion_ms: at_risk.first().map(|a| a.deletes_at_ms),
        at_risk,
    })
}
