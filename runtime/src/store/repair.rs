//! `memtrail repair`: every derived structure rebuilt from the stored messages.

use super::Db;
use super::{INDEX_CHUNK, Store, Writer};
use crate::{Error, Result};
use std::time::Instant;

/// One step of [`Store::repair`]: rebuilds or re-derives one kind of derived data from the
/// stored messages (or, `stored text`, rewrites the rows an older memtrail stored in the
/// current form). `run` returns how many rows (or index entries) it found wrong and fixed; 0
/// means it was already right.
pub struct RepairStep {
    /// Short name, shown by `memtrail repair` (e.g. `full-text index`).
    pub name: &'static str,
    /// What the step does, a clause after its name (`tool calls: checked for …`), for the
    /// report.
    pub what: &'static str,
    pub run: StepRun,
}

/// How a [`RepairStep`] runs.
pub enum StepRun {
    /// In one write transaction.
    Once(fn(&Writer<'_>) -> Result<u64>),
    /// In a write transaction per slice, so that the WAL stays small and a hook waits for one
    /// slice at most: called with the last row id done (0 first), it returns how many rows it
    /// fixed and the id to go on after (`None`: done).
    Sliced(SliceFn),
}

/// A [`StepRun::Sliced`] step's function.
pub type SliceFn = fn(&Writer<'_>, i64) -> Result<(u64, Option<i64>)>;

/// The derived data `memtrail repair` rebuilds, in order. A table derived from `messages`
/// (e.g. events) adds its step here.
pub const REPAIR_STEPS: &[RepairStep] = &[
    RepairStep {
        name: "stored text",
        what: "messages written before schema 13 compressed, their tool text no longer stored twice, the prose of messages written before schema 14 stored once, and the parts of messages written before schema 21 compressed with the parts dictionary",
        run: StepRun::Sliced(super::packed::pack_old_rows),
    },
    RepairStep {
        name: "damaged parts",
        what: "the compressed parts that can no longer be read taken out (their messages keep their text)",
        run: StepRun::Sliced(super::packed::clear_damaged_rows),
    },
    RepairStep {
        name: "full-text index",
        what: "rebuilt from the stored messages (body, tools, CJK)",
        run: StepRun::Once(repair_fts),
    },
    RepairStep {
        name: "tool calls",
        what: "checked for tool calls whose message is gone (deleted when found)",
        run: StepRun::Once(repair_tool_calls),
    },
    RepairStep {
        name: "events",
        what: "extracted again from the stored messages",
        run: StepRun::Once(repair_events),
    },
    RepairStep {
        name: "message counts",
        what: "each session's recounted from the stored messages",
        run: StepRun::Once(repair_message_counts),
    },
];

/// The FTS5 index checked against its content table (`'integrity-check'` with rank 1, see
/// <https://sqlite.org/fts5.html#the_integrity_check_command>) and rebuilt either way. Returns
/// 1 when the check had failed, else 0.
fn repair_fts(w: &Writer<'_>) -> Result<u64> {
    rebuild_index(w)
}

/// [`repair_fts`]'s work, also run by the step that takes damaged parts out (in its own
/// transaction, right after it rewrote them).
pub(super) fn rebuild_index(w: &Writer<'_>) -> Result<u64> {
    // Queued messages are not in the index yet: index them first, or the check would count
    // them as missing. An index whose data is corrupt cannot take them: it is broken.
    let queued_in = loop {
        match w.index_pending(INDEX_CHUNK) {
            Ok(0) => break true,
            Ok(_) => {}
            // SQLite may roll a transaction back on SQLITE_NOMEM: then stop, with the error,
            // rather than go on outside it.
            Err(e) if is_nomem(&e) && w.tx.is_autocommit() => return Err(e),
            Err(e) if is_corrupt(&e) || is_nomem(&e) => break false,
            Err(e) => return Err(e),
        }
    };
    let broken = !queued_in
        || w.tx
            .execute(
                "INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)",
                [],
            )
            .is_err();
    if broken {
        // 'rebuild' reads the old index as it replaces it, which fails on corrupt data:
        // empty the index first ('delete-all' drops its shadow tables' rows unread).
        w.tx.execute(
            "INSERT INTO messages_fts (messages_fts) VALUES ('delete-all')",
            [],
        )
        .db()?;
    }
    w.tx.execute(
        "INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')",
        [],
    )
    .db()?;
    // 'rebuild' indexed every message, queued or not.
    w.tx.execute("DELETE FROM fts_pending", []).db()?;
    Ok(broken as u64)
}

/// `SQLITE_CORRUPT` (or its extended codes, e.g. `SQLITE_CORRUPT_VTAB` from FTS5) or
/// `SQLITE_NOTADB`: the file's content is damaged.
pub fn is_corrupt(e: &Error) -> bool {
    matches!(e, Error::Store(s) if s.is_corrupt())
}

/// `SQLITE_NOMEM`: what FTS5 also answers when damaged index data gives a size it cannot
/// allocate (seen with random bytes in `messages_fts_data`: about one run in 200 of
/// `repair_fixes_corrupt_full_text_index_data`).
fn is_nomem(e: &Error) -> bool {
    matches!(e, Error::Store(s) if s.is_nomem())
}

fn repair_tool_calls(w: &Writer<'_>) -> Result<u64> {
    Ok(w.tx
        .execute(
            "DELETE FROM tool_calls WHERE message_id NOT IN (SELECT id FROM messages)",
            [],
        )
        .db()? as u64)
}

/// Events rebuilt from the messages; returns how many event rows differed (missing, extra or
/// changed) from what the messages give now.
fn repair_events(w: &Writer<'_>) -> Result<u64> {
    const COLS: &str =
        "message_id, seq, category, action, priority, subject, detail, call_id, tool";
    w.tx.execute("DROP TABLE IF EXISTS temp.events_before", [])
        .db()?;
    w.tx.execute(
        &format!("CREATE TEMP TABLE events_before AS SELECT {COLS} FROM events"),
        [],
    )
    .db()?;
    w.backfill_events(&crate::records::Standard)?;
    let differ: i64 = w.tx.query_row(
        &format!(
            "SELECT (SELECT COUNT(*) FROM (SELECT {COLS} FROM events EXCEPT SELECT {COLS} FROM temp.events_before))
                  + (SELECT COUNT(*) FROM (SELECT {COLS} FROM temp.events_before EXCEPT SELECT {COLS} FROM events))"
        ),
        [],
        |r| r.get(0),
    ).db()?;
    w.tx.execute("DROP TABLE temp.events_before", []).db()?;
    Ok(differ as u64)
}

fn repair_message_counts(w: &Writer<'_>) -> Result<u64> {
    Ok(w.tx
        .execute(
            "UPDATE sessions SET message_count = n FROM (
             SELECT s.id AS sid, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS n
             FROM sessions s
         ) WHERE sessions.id = sid AND sessions.message_count != n",
            [],
        )
        .db()? as u64)
}

/// What one repair step did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RepairStepReport {
    /// The step's name (`full-text index`, `tool calls`, …).
    pub name: String,
    /// What it did, one sentence.
    pub what: String,
    /// Rows or index entries found wrong and fixed (0: it was right); for `file size`, the
    /// pages given back to the disk.
    pub fixed: u64,
    /// How long it took: wall-clock milliseconds.
    pub millis: u64,
}

/// The result of [`Store::repair`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct RepairReport {
    /// The steps, in the order they ran.
    pub steps: Vec<RepairStepReport>,
    /// `PRAGMA integrity_check` after the steps: `["ok"]` or SQLite's list of problems.
    pub integrity: Vec<String>,
}

impl RepairReport {
    /// True when the store passed `PRAGMA integrity_check` after the repair.
    pub fn ok(&self) -> bool {
        self.integrity.len() == 1 && self.integrity[0] == "ok"
    }
}

impl Store {
    /// Rebuild every derived structure ([`REPAIR_STEPS`]) from the stored messages, each step
    /// in its own `BEGIN IMMEDIATE` transaction (a transaction per slice for `stored text` and
    /// `damaged parts`), so hooks running meanwhile wait at most one step, or fail open and
    /// catch up; then, when `stored text` rewrote rows of an older memtrail or a tenth or more
    /// of the file is free pages, `VACUUM` it (step `file size`); then run `PRAGMA
    /// integrity_check`. What the messages hold is never changed (`stored text` changes only
    /// how they are kept), but for parts that can no longer be read, which `damaged parts`
    /// takes out (the message keeps its text); nor sessions or cursors.
    ///
    /// Errors: the store is busy past its timeout ([`Error::Busy`]), the disk is full
    /// ([`Error::Full`]), or an SQLite error (a step that fails is rolled back).
    pub fn repair(&mut self) -> Result<RepairReport> {
        let mut steps = Vec::new();
        for step in REPAIR_STEPS {
            let t = Instant::now();
            let fixed = match step.run {
                StepRun::Once(run) => self.write(run)?,
                StepRun::Sliced(run) => {
                    let (mut fixed, mut after) = (0, Some(0));
                    while let Some(last) = after {
                        let (n, next) = self.write(|w| run(w, last))?;
                        fixed += n;
                        after = next;
                    }
                    fixed
                }
            };
            steps.push(RepairStepReport {
                name: step.name.into(),
                what: step.what.into(),
                fixed,
                millis: t.elapsed().as_millis() as u64,
            });
        }
        // The first repair after the upgrade to schema 13 compressed the older rows: the space
        // they held goes back to the disk. Also whenever a tenth or more of the file is free
        // pages, so that a repair that failed here (a full disk) does it the next time (the
        // compression of a 1 GB store left 19% of its pages free, and most of the rest of what
        // it freed in part-filled pages).
        let pages = |c: &rusqlite::Connection, what: &str| -> Result<u64> {
            c.query_row(&format!("PRAGMA {what}"), [], |r| r.get::<_, i64>(0))
                .db()
                .map(|n| n as u64)
        };
        let _ = self.checkpoint();
        let before = pages(&self.conn, "page_count")?;
        let packed = steps
            .first()
            .is_some_and(|s| s.name == "stored text" && s.fixed > 0);
        if packed || pages(&self.conn, "freelist_count")? * 10 >= before && before > 0 {
            let t = Instant::now();
            super::maintenance::vacuum_file(self)?;
            steps.push(RepairStepReport {
                name: "file size".into(),
                what: "the file's free space given back to the disk (VACUUM; pages)".into(),
                fixed: before.saturating_sub(pages(&self.conn, "page_count")?),
                millis: t.elapsed().as_millis() as u64,
            });
        }
        let _ = self.checkpoint();
        let mut stmt = self.conn.prepare("PRAGMA integrity_check").db()?;
        let integrity = stmt
            .query_map([], |r| r.get(0))
            .db()?
            .collect::<rusqlite::Result<Vec<String>>>()
            .db()?;
        Ok(RepairReport { steps, integrity })
    }
}
