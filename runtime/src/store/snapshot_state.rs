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
const COLS: &str = concat!(
    "id, seq, NULL, category, action, priority, ",
    super::recall::event_subject!(),
    ", detail, call_id, tool, NULL"
);

/// A running state: it covers the session's first `rows` events, the last at
/// (`last_seq`, `last_id`).
struct Fresh {
    rows: i64,
    last: (i64, i64),
    state: State,
}

/// The running state of a session over its events before some message, read in a transaction.
enum Covered {
    /// The state; `moved` when it is not the saved one (built again, or events applied to
    /// it), so that it is to be saved.
    State { fresh: Box<Fresh>, moved: bool },
    /// A session the state cannot follow: its events, for [`snapshot::build`].
    Unfollowable(Vec<StoredEvent>),
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
    match covered_on(conn, rowid, meta.project_dir.as_deref(), i64::MAX)? {
        Covered::State { fresh, moved } => {
            let snap = fresh.state.render(&meta, budget);
            Ok((snap, moved.then_some(*fresh)))
        }
        Covered::Unfollowable(events) => Ok((
            snapshot::build(&with_correlations(events, meta), budget),
            None,
        )),
    }
}

/// The running state of session `rowid` (of project `project`) over its events of the messages
/// before `before_seq` (`i64::MAX`: all): the saved state and the events after it when it is
/// valid, else built from all of them.
fn covered_on(
    conn: &Connection,
    rowid: i64,
    project: Option<&str>,
    before_seq: i64,
) -> Result<Covered> {
    if let Some(c) = from_saved(conn, rowid, project, before_seq)? {
        return Ok(c);
    }
    let mut rows = 0i64;
    let mut last = (i64::MIN, i64::MIN);
    let events = read_events(
        conn,
        &format!("SELECT {COLS} FROM events WHERE session_id = ?1 AND seq < ?2 ORDER BY seq, id"),
        params![rowid, before_seq],
        |seq, id| {
            rows += 1;
            last = last.max((seq, id));
        },
    )?;
    let mut state = State::new(project);
    if state.apply(&events) {
        return Ok(Covered::State {
            fresh: Box::new(Fresh { rows, last, state }),
            moved: rows > 0,
        });
    }
    Ok(Covered::Unfollowable(events))
}

/// The saved state of session `rowid` with the events after it (before `before_seq`) applied;
/// `None` when there is none or it is not valid (see the migration `0012_snapshot_states.sql`).
fn from_saved(
    conn: &Connection,
    rowid: i64,
    project: Option<&str>,
    before_seq: i64,
) -> Result<Option<Covered>> {
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
    if state.project.as_deref() != project || last_seq >= before_seq {
        return Ok(None);
    }
    // The events from the last one covered on: those of its message covered, the others new.
    let mut new_rows = 0i64;
    let mut covered_after = false;
    let mut last = (last_seq, last_id);
    let tail = read_events(
        conn,
        &format!(
            "SELECT {COLS} FROM events WHERE session_id = ?1 AND seq >= ?2 AND seq < ?3
             ORDER BY seq, id"
        ),
        params![rowid, last_seq, before_seq],
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
    Ok(Some(Covered::State {
        fresh: Box::new(Fresh {
            rows: rows + new_rows,
            last,
            state,
        }),
        moved: new_rows > 0,
    }))
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

/// The seq of session `rowid`'s last message when at least `min_new` (≥ 1) events of the
/// messages before it are not in its saved running state, else `None`: three index lookups.
fn behind_on(conn: &Connection, rowid: i64, min_new: usize) -> Result<Option<i64>> {
    let Some(last_message) = conn
        .prepare_cached("SELECT max(seq) FROM messages WHERE session_id = ?1")
        .db()?
        .query_row([rowid], |r| r.get::<_, Option<i64>>(0))
        .db()?
    else {
        return Ok(None);
    };
    let covered: i64 = conn
        .prepare_cached("SELECT last_seq FROM snapshot_states WHERE session_id = ?1")
        .db()?
        .query_row([rowid], |r| r.get(0))
        .optional()
        .db()?
        .unwrap_or(i64::MIN);
    let min_new = min_new.max(1) as i64;
    let new: i64 = conn
        .prepare_cached(
            "SELECT count(*) FROM (SELECT 1 FROM events
             WHERE session_id = ?1 AND seq > ?2 AND seq < ?3 LIMIT ?4)",
        )
        .db()?
        .query_row(params![rowid, covered, last_message, min_new], |r| r.get(0))
        .db()?;
    Ok((new >= min_new).then_some(last_message))
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

    /// Whether session `rowid`'s running state is at least `min_new` events behind the
    /// message before its last ([`Writer::advance_snapshot_state`] would save one), read
    /// without taking the write lock.
    pub fn snapshot_state_behind(&self, rowid: i64, min_new: usize) -> Result<bool> {
        Ok(behind_on(&self.conn, rowid, min_new)?.is_some())
    }
}

impl Writer<'_> {
    /// [`Store::snapshot`] in this write, saving the session's running state when it moved on
    /// (built again, or new events applied), for the next snapshot to read only what is new.
    pub fn snapshot(&self, rowid: i64, budget: usize) -> Result<Snapshot> {
        let (snap, fresh) = snapshot_on(self.tx, rowid, budget)?;
        if let Some(f) = fresh {
            self.save_state(rowid, &f)?;
        }
        Ok(snap)
    }

    /// Bring session `rowid`'s saved running state up to the message before its last, when at
    /// least `min_new` events of those messages are not in it yet (a session without a state:
    /// when it has that many). The hooks call it after their ingest, so that a compaction's
    /// snapshot applies only the events of the last few turns ([`Writer::snapshot`]). The last
    /// message is left out: a later line of it (a streamed answer, a late tool result) would
    /// rewrite its events and drop the state. Returns whether a state was saved.
    ///
    /// Cost: three index lookups when there is too little to apply; else the state's decode,
    /// the new events' apply and the encode (a first state: every event of the session).
    pub fn advance_snapshot_state(&self, rowid: i64, min_new: usize) -> Result<bool> {
        let Some(last_message) = behind_on(self.tx, rowid, min_new)? else {
            return Ok(false);
        };
        let project: Option<String> = self
            .tx
            .prepare_cached("SELECT project_dir FROM sessions WHERE id = ?1")
            .db()?
            .query_row([rowid], |r| r.get(0))
            .db()?;
        match covered_on(self.tx, rowid, project.as_deref(), last_message)? {
            Covered::State { fresh, moved: true } => {
                self.save_state(rowid, &fresh)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn save_state(&self, rowid: i64, f: &Fresh) -> Result<()> {
        self.tx
            .prepare_cached(
                "INSERT OR REPLACE INTO snapshot_states (session_id, rows, last_seq, last_id, state)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .db()?
            .execute(params![rowid, f.rows, f.last.0, f.last.1, f.state.encode()])
            .db()?;
        Ok(())
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
