//! Stored snapshots: saved at compaction or restart, consumed (injected) once.

use super::Db;
use super::Writer;
use crate::Result;
use crate::records::Enrich;
use crate::snapshot::Snapshot;
use rusqlite::{OptionalExtension, params};

impl Writer<'_> {
    /// Save a built snapshot of session `session_id`, taken at `trigger` (`precompact`,
    /// `resume`, `compact`, `manual`, …). `consumed_by`: the session it is injected into right
    /// away, if any. `enrich` redacts the text as written (ingest's rules). Returns its row id.
    pub fn save_snapshot(
        &self,
        enrich: &impl Enrich,
        session_id: i64,
        trigger: &str,
        snap: &Snapshot,
        now_ms: i64,
        consumed_by: Option<&str>,
    ) -> Result<i64> {
        self.tx.execute(
            "INSERT INTO snapshots (session_id, built_at, trigger, budget, events, text, consumed_at,
                                    consumed_by)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                session_id,
                now_ms,
                trigger,
                snap.budget as i64,
                snap.events as i64,
                // Built from redacted messages; redacted again as written (its lines join
                // strings that were redacted one by one).
                enrich.redact(&snap.text),
                consumed_by.map(|_| now_ms),
                consumed_by,
            ],
        ).db()?;
        Ok(self.tx.last_insert_rowid())
    }

    /// The latest snapshot of session `session_id` not yet injected, marked as consumed by
    /// `consumer` (the session it goes into) in the same transaction, so two SessionStart hooks
    /// never inject it twice. `None` when there is none.
    pub fn take_snapshot(
        &self,
        session_id: i64,
        consumer: &str,
        now_ms: i64,
    ) -> Result<Option<StoredSnapshot>> {
        let row = self
            .tx
            .query_row(
                "SELECT id, built_at, trigger, budget, events, text FROM snapshots
                 WHERE session_id = ?1 AND consumed_at IS NULL
                 ORDER BY built_at DESC, id DESC LIMIT 1",
                [session_id],
                stored_snapshot_row,
            )
            .optional()
            .db()?;
        if let Some(s) = &row {
            self.tx
                .execute(
                    "UPDATE snapshots SET consumed_at = ?2, consumed_by = ?3 WHERE id = ?1",
                    params![s.id, now_ms, consumer],
                )
                .db()?;
        }
        Ok(row)
    }

    /// Mark snapshot `id`, saved at a PreCompact, as injected by a start of its session before
    /// that compaction's own SessionStart(compact) (its `trigger` becomes
    /// [`PRECOMPACT_TAKEN_EARLY`]); see [`Writer::close_early_compaction`].
    pub fn mark_taken_early(&self, id: i64) -> Result<()> {
        self.tx
            .execute(
                "UPDATE snapshots SET trigger = ?2 WHERE id = ?1 AND trigger = 'precompact'",
                params![id, PRECOMPACT_TAKEN_EARLY],
            )
            .db()?;
        Ok(())
    }

    /// At a SessionStart(compact) of session `session_id` that found no unconsumed snapshot:
    /// true when the session's latest snapshot is its PreCompact snapshot already injected by an
    /// earlier start ([`Writer::mark_taken_early`]; Codex runs PreCompact →
    /// SessionStart(resume) → SessionStart(compact) on `codex exec resume`), so this compaction
    /// has had its snapshot. The mark is cleared (`precompact` again): the compaction is closed.
    pub fn close_early_compaction(&self, session_id: i64) -> Result<bool> {
        let latest: Option<(i64, String)> = self
            .tx
            .query_row(
                "SELECT id, trigger FROM snapshots WHERE session_id = ?1
                 ORDER BY built_at DESC, id DESC LIMIT 1",
                [session_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .db()?;
        match latest {
            Some((id, trigger)) if trigger == PRECOMPACT_TAKEN_EARLY => {
                self.tx
                    .execute(
                        "UPDATE snapshots SET trigger = 'precompact' WHERE id = ?1",
                        [id],
                    )
                    .db()?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

/// The `trigger` of a PreCompact snapshot injected by a start of its session before that
/// compaction's own SessionStart(compact) ([`Writer::mark_taken_early`]).
pub const PRECOMPACT_TAKEN_EARLY: &str = "precompact-taken-early";

/// A snapshot as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StoredSnapshot {
    pub id: i64,
    /// ms since the Unix epoch.
    pub built_at: i64,
    /// What built it: `precompact`, `compact`, `resume`, …
    pub trigger: String,
    /// The byte budget it was built for.
    pub budget: i64,
    /// How many events it was built from.
    pub events: i64,
    pub text: String,
}

fn stored_snapshot_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredSnapshot> {
    Ok(StoredSnapshot {
        id: r.get(0)?,
        built_at: r.get(1)?,
        trigger: r.get(2)?,
        budget: r.get(3)?,
        events: r.get(4)?,
        text: r.get(5)?,
    })
}
