//! The SQL of a snapshot built from its session's running state (`snapshot_states`, schema 12;
//! [`crate::snapshot::state`]): the saved state, the events appended after it, and a new state
//! saved by a snapshot built in a write.

use super::recall::read_events;
use super::{Db, Store, Writer};
use crate::Result;
use crate::events::{StoredEvent, correlate};
use crate::snapshot::state::State;
use crate::snapshot::{self, Snapshot, SnapshotInput};
use rusqlite::{Connection, OptionalExtension, params};

/// The columns `read_events` reads, without the two no snapshot reads (message id, time).
const COLS: &str =
    "id, seq, NULL, category, action, priority, subject, detail, call_id, tool, NULL";

/// A state to save: it covers the session's first `rows` events, the last at
/// (`last_seq`, `last_id`).
struct Fresh {
    rows: i64,
    last: (i64, i64),
    state: State,
}

/// The snapshot of session `rowid` within `budget` bytes, read in the transaction `conn` is in:
/// from its saved state and the events after it when the state is valid, else from all its
/// events (as [`crate::resume::snapshot_input`] and [`snapshot::build`] make it). With it, the
/// state to save when it is not the one saved.
fn snapshot_on(conn: &Connection, rowid: i64, budget: usize) -> Result<(Snapshot, Option<Fresh>)> {
    let s = super::queries::session_summary_on(conn, rowid)?;
    let meta = SnapshotInput {
        agent: s.agent,
        session_id: s.session_id,
        project_dir: s.project,
        title: s.title,
        git_branch: s.git_branch,
        events: Vec::new(),
    };
    if let Some(r) = from_saved(conn, rowid, &meta, budget)? {
        return Ok(r);
    }
    // All the session's events.
    let mut rows = 0i64;
    let mut last = (i64::MIN, i64::MIN);
    let events = read_events(
        conn,
        &format!("SELECT {COLS} FROM events WHERE session_id = ?1 ORDER BY seq, id"),
        [rowid],
        |seq, id| {
            rows += 1;
            last = last.max((seq, id));
        },
    )?;
    let mut state = State::new(meta.project_dir.as_deref());
    if state.apply(&events) {
        let snap = state.render(&meta, budget);
        let fresh = (rows > 0).then_some(Fresh { rows, last, state });
        return Ok((snap, fresh));
    }
    // A session the state cannot follow: the snapshot as built without one.
    Ok((
        snapshot::build(&with_correlations(events, meta), budget),
        None,
    ))
}

/// The snapshot from the saved state of session `rowid` and the events after it; `None` when
/// there is none or it is not valid (see the migration `0012_snapshot_states.sql`).
fn from_saved(
    conn: &Connection,
    rowid: i64,
    meta: &SnapshotInput,
    budget: usize,
) -> Result<Option<(Snapshot, Option<Fresh>)>> {
    let saved = conn
        .query_row(
            "SELECT rows, last_seq, last_id, state FROM snapshot_states WHERE session_id = ?1",
            [rowid],
            |r| {
                let state = match r.get_ref(3)? {
                    rusqlite::types::ValueRef::Blob(b) => State::decode(b),
                    _ => None,
                };
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    state,
                ))
            },
        )
        .optional()
        .db()?;
    let Some((rows, last_seq, last_id, Some(mut state))) = saved else {
        return Ok(None);
    };
    if state.project != meta.project_dir {
        return Ok(None);
    }
    // The events from the last one covered on: those of its message covered, the others new.
    let mut new_rows = 0i64;
    let mut covered_after = false;
    let mut last = (last_seq, last_id);
    let tail = read_events(
        conn,
        &format!("SELECT {COLS} FROM events WHERE session_id = ?1 AND seq >= ?2 ORDER BY seq, id"),
        params![rowid, last_seq],
        |seq, id| {
            if seq == last_seq && id <= last_id {
                return;
            }
            covered_after |= seq == last_seq;
            new_rows += 1;
            last = last.max((seq, id));
        },
    )?;
    if covered_after {
        // An event added to the last message covered: not an append.
        return Ok(None);
    }
    let tail: Vec<StoredEvent> = tail.into_iter().filter(|e| e.seq > last_seq).collect();
    // An event inserted at or before the last message covered drops the state (the trigger of
    // migration 0015), as a deleted or updated one does (0012): a state that is there covers
    // every event up to it.
    if !state.apply(&tail) {
        return Ok(None);
    }
    let snap = state.render(meta, budget);
    let fresh = (new_rows > 0).then_some(Fresh {
        rows: rows + new_rows,
        last,
        state,
    });
    Ok(Some((snap, fresh)))
}

/// `stored` (in session order) merged with their correlations, in `meta`: what
/// [`crate::resume::snapshot_input`] gives.
fn with_correlations(stored: Vec<StoredEvent>, meta: SnapshotInput) -> SnapshotInput {
    let mut events = stored;
    let derived = correlate(&events);
    if !derived.is_empty() {
        events.extend(derived);
        // Stable: a derived event after the stored event of its place.
        events.sort_by_key(|e| (e.seq, e.id));
    }
    SnapshotInput { events, ..meta }
}

impl Store {
    /// The snapshot of session `rowid` within `budget` bytes: from the session's saved running
    /// state and the events appended since when it is valid, else from all its events; the same
    /// text either way. Read in one read transaction; saves nothing.
    pub fn snapshot(&self, rowid: i64, budget: usize) -> Result<Snapshot> {
        let tx = self.conn.unchecked_transaction().db()?;
        let (snap, _) = snapshot_on(&tx, rowid, budget)?;
        drop(tx);
        Ok(snap)
    }
}

impl Writer<'_> {
    /// [`Store::snapshot`] in this write, saving the session's running state when it moved on
    /// (built again, or new events applied), for the next snapshot to read only what is new.
    pub fn snapshot(&self, rowid: i64, budget: usize) -> Result<Snapshot> {
        let (snap, fresh) = snapshot_on(self.tx, rowid, budget)?;
        if let Some(f) = fresh {
            self.tx
                .execute(
                    "INSERT OR REPLACE INTO snapshot_states (session_id, rows, last_seq, last_id, state)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![rowid, f.rows, f.last.0, f.last.1, f.state.encode()],
                )
                .db()?;
        }
        Ok(snap)
    }
}

#[cfg(test)]
impl Store {
    /// Whether session `sid` has a saved running state (tests).
    pub(crate) fn has_snapshot_state(&self, sid: i64) -> bool {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM snapshot_states WHERE session_id = ?1",
                [sid],
                |r| r.get::<_, i64>(0),
            )
            .unwrap()
            > 0
    }

    /// Insert an edit event of `path` into message `k` (0-based, in session order) of session
    /// `sid`, alone: no event is deleted (tests).
    pub(crate) fn insert_edit_event(&self, sid: i64, k: i64, path: &str) {
        self.conn
            .execute(
                "INSERT INTO events (session_id, message_id, seq, category, action, priority,
                     subject, detail)
                 SELECT ?1, id, seq, 'file', 'edit', 2, ?3, '+1 -0'
                 FROM messages WHERE session_id = ?1 ORDER BY seq LIMIT 1 OFFSET ?2",
                params![sid, k, path],
            )
            .unwrap();
    }

    /// The row ids of every session (tests).
    pub(crate) fn session_rowids(&self) -> Vec<i64> {
        let mut st = self.conn.prepare("SELECT id FROM sessions").unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    /// Delete the message `ext_id` of session `sid` (and, by cascade, its events) (tests).
    pub(crate) fn delete_message(&mut self, sid: i64, ext_id: &str) {
        self.write(|w| {
            w.tx.execute(
                "DELETE FROM messages WHERE session_id = ?1 AND ext_id = ?2",
                params![sid, ext_id],
            )
            .db()?;
            Ok(())
        })
        .unwrap();
    }
}
