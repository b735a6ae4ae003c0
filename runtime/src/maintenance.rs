//! Privacy maintenance of the store: delete a session, purge old messages, re-apply the current
//! redaction rules to what was stored earlier, and the retention check of `memtrail status`.
//!
//! Deleted text is gone from the files, not only from queries: every connection to the store
//! runs with `PRAGMA secure_delete = ON` (freed space is overwritten with zeros, so the old
//! versions of rows that hooks rewrote are gone too), and these operations then merge the full-text
//! index (`'optimize'`, which drops the deleted entries' tokens from its segments) and truncate
//! the WAL (`wal_checkpoint(TRUNCATE)`). When a reader of an older snapshot keeps the WAL from
//! being folded back, they say so (`wal_kept`) and leave a marker beside the store
//! ([`scrub_marker`]), so that the next hook or `memtrail import` finishes it
//! ([`scrub_pending`]).

use crate::Result;
use crate::store::Store;
use serde::Serialize;
use std::path::PathBuf;

pub use crate::store::maintenance::{
    Purged, RESCAN_BATCH, Recaptured, Rescanned, SameId, SessionInfo, capture_again, delete_rows,
    delete_session, is_deleted, purge, rescan as rescan_with, scrub_marker, scrub_pending,
    session_info, session_row,
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

/// A transcript old enough to be near its agent's deletion ([`old_transcripts`]).
#[derive(Debug, Clone, PartialEq)]
pub struct OldTranscript {
    /// The transcript.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Its modification time (ms since the Unix epoch).
    pub mtime_ms: i64,
}

/// The retention horizon: files modified before it (ms since the Unix epoch) are deleted by
/// the agent within [`RETENTION_WARNING_DAYS`] days (`cleanupPeriodDays` − that, before
/// `now_ms`).
pub fn retention_horizon_ms(policy: &memtrail_adapters::TranscriptRetention, now_ms: i64) -> i64 {
    now_ms - (policy.days.saturating_sub(RETENTION_WARNING_DAYS) as i64) * 86_400_000
}

/// How long before [`ReadFile::read_at_ms`] [`may_be_at_risk`] takes the file's reading to
/// have been (one day: the time an ingest can take between reading a file and storing its
/// cursor, with room to spare).
///
/// [`ReadFile::read_at_ms`]: crate::store::ReadFile::read_at_ms
pub const READ_AT_MARGIN_MS: i64 = 86_400_000;

/// Whether a transcript that an ingest read as `read` may be at risk: always, unless that
/// ingest read it to its end at or after `horizon_ms` ([`retention_horizon_ms`]): either its
/// modification time then was at or after the horizon, or the ingest itself was
/// ([`ReadFile::read_at_ms`], less [`READ_AT_MARGIN_MS`]). A file changed after it was read has
/// a later modification time than that reading, so such a file is either unchanged and
/// captured or too recent to be deleted: no `stat` needed. (A tool that writes a file and
/// then sets its time back, `touch -d`, defeats this.) Old transcripts imported in the last
/// weeks (the 1 GB bench corpus's 7,487 Claude Code transcripts: a `stat` each, ~35 ms of
/// `status`) are cleared so.
///
/// [`ReadFile::read_at_ms`]: crate::store::ReadFile::read_at_ms
pub fn may_be_at_risk(read: Option<&crate::store::ReadFile>, horizon_ms: i64) -> bool {
    match read {
        None => true,
        Some(r) => {
            r.offset < r.size
                || !(r.mtime_ns.is_some_and(|ns| ns / 1_000_000 >= horizon_ms)
                    || r.read_at_ms
                        .is_some_and(|at| at.saturating_sub(READ_AT_MARGIN_MS) >= horizon_ms))
        }
    }
}

/// The transcripts among `transcripts` modified before `policy`'s horizon
/// ([`retention_horizon_ms`]): one `stat` each, no store. Those that cannot be statted are
/// left out. The first half of [`transcript_retention`].
pub fn old_transcripts<'a>(
    policy: &memtrail_adapters::TranscriptRetention,
    transcripts: impl IntoIterator<Item = &'a PathBuf>,
    now_ms: i64,
) -> Vec<OldTranscript> {
    let horizon = retention_horizon_ms(policy, now_ms);
    transcripts
        .into_iter()
        .filter_map(|p| {
            let md = std::fs::metadata(p).ok()?;
            let mtime_ms = md
                .modified()
                .ok()?
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?
                .as_millis() as i64;
            (mtime_ms < horizon).then(|| OldTranscript {
                path: p.clone(),
                size: md.len(),
                mtime_ms,
            })
        })
        .collect()
}

/// The retention check over `transcripts` (an agent's, from `discover`) under `policy` (the
/// agent's [`memtrail_adapters::Quirks::transcript_retention`]), at time `now_ms`: the old
/// ones ([`old_transcripts`]) whose cursor in `store` is behind their size.
pub fn transcript_retention(
    store: Option<&Store>,
    policy: &memtrail_adapters::TranscriptRetention,
    transcripts: &[PathBuf],
    now_ms: i64,
) -> Result<Retention> {
    retention_of(
        policy,
        old_transcripts(policy, transcripts, now_ms),
        &mut |path| {
            Ok(match store {
                Some(s) => s.cursor(path)?.map_or(0, |c| c.offset),
                None => 0,
            })
        },
    )
}

/// The second half of [`transcript_retention`]: which of the `old` transcripts are not fully
/// captured, `captured(path)` giving the bytes memtrail has read of each (its cursor's
/// offset, 0 without one).
///
/// Errors: those of `captured`.
pub fn retention_of(
    policy: &memtrail_adapters::TranscriptRetention,
    old: Vec<OldTranscript>,
    captured: &mut dyn FnMut(&str) -> Result<u64>,
) -> Result<Retention> {
    let (settings, days, from_settings) = (&policy.settings, policy.days, policy.from_settings);
    let day_ms: i64 = 86_400_000;
    let mut at_risk = Vec::new();
    for t in old {
        let key = t.path.to_string_lossy();
        let captured = captured(&key)?;
        if captured >= t.size {
            continue;
        }
        at_risk.push(AtRisk {
            path: key.into_owned(),
            size: t.size,
            captured,
            deletes_at_ms: t.mtime_ms + days as i64 * day_ms,
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

#[cfg(test)]
mod tests {
    use super::may_be_at_risk;
    use crate::store::ReadFile;

    /// Only a file read to its end while it was at or after the horizon, or read to its end
    /// by an ingest at least a day after the horizon, is cleared without a `stat`; every other
    /// case is checked.
    #[test]
    fn a_cursor_clears_only_a_file_read_whole_after_the_horizon() {
        use super::READ_AT_MARGIN_MS;
        let horizon = 100 * READ_AT_MARGIN_MS;
        let read = |offset, size, mtime_ms: Option<i64>| ReadFile {
            offset,
            size,
            mtime_ns: mtime_ms.map(|ms| ms * 1_000_000),
            read_at_ms: None,
        };
        assert!(may_be_at_risk(None, horizon), "never read");
        assert!(
            may_be_at_risk(Some(&read(10, 20, Some(horizon))), horizon),
            "read in part"
        );
        assert!(
            may_be_at_risk(Some(&read(20, 20, None)), horizon),
            "time unknown"
        );
        assert!(
            may_be_at_risk(Some(&read(20, 20, Some(horizon - 1))), horizon),
            "read when old"
        );
        assert!(!may_be_at_risk(Some(&read(20, 20, Some(horizon))), horizon));
        assert!(!may_be_at_risk(
            Some(&read(20, 20, Some(horizon + 5))),
            horizon
        ));
        // An old file read whole by an ingest: cleared when the ingest was a day or more
        // after the horizon (a change since would have a time after that).
        let ingested = |at: i64, offset| ReadFile {
            read_at_ms: Some(at),
            ..read(offset, 20, Some(horizon - 50 * READ_AT_MARGIN_MS))
        };
        assert!(!may_be_at_risk(
            Some(&ingested(horizon + READ_AT_MARGIN_MS, 20)),
            horizon
        ));
        assert!(
            may_be_at_risk(
                Some(&ingested(horizon + READ_AT_MARGIN_MS - 1, 20)),
                horizon
            ),
            "ingested less than a day after the horizon"
        );
        assert!(
            may_be_at_risk(
                Some(&ingested(horizon + 10 * READ_AT_MARGIN_MS, 10)),
                horizon
            ),
            "read in part"
        );
    }
}
