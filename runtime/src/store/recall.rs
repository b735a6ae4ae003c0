//! The SQL of recall ([`crate::resume`]): a session's events, the sessions of a folder, the
//! session of a hook event, and the messages a resume context or a handoff quotes.

use super::Db;
use crate::Result;
use crate::events::{self, Category, StoredEvent};
use crate::read::CandidateMessage;
use crate::resume::dir_within;
use crate::store::Store;
use memtrail_adapters::{Agent, format_rfc3339_ms};
use rusqlite::{OptionalExtension, params};

/// An event's subject as a statement reading `events` (unaliased) gives it: a prompt's subject
/// that is exactly its message's body is stored empty (schema 22: the prompt's text is kept
/// once, in `messages.body`) and read from the body (written so by [`INSERT_EVENT`]). A
/// prompt's subject is never empty otherwise (`events::extract` makes none of blank text). SQLite evaluates the
/// lookup only for such rows: one B-tree lookup by row id per prompt.
macro_rules! event_subject {
    () => {
        "CASE WHEN events.subject = '' AND events.category = 'prompt'
              THEN (SELECT body FROM messages WHERE messages.id = events.message_id)
              ELSE events.subject END"
    };
}
pub(super) use event_subject;

/// The one statement that writes an event (ingest and pulls alike): parameters session, message
/// row id (the message written before its events), seq, category, action, priority, subject,
/// detail, call id, tool, time. A prompt whose subject is its message's body stores it empty
/// ([`event_subject!`] reads it back); any other subject is stored as given.
pub(super) const INSERT_EVENT: &str = "INSERT INTO events (session_id, message_id, seq, category,
         action, priority, subject, detail, call_id, tool, ts)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6,
             CASE WHEN ?4 = 'prompt' AND ?7 = (SELECT body FROM messages WHERE id = ?2)
                  THEN '' ELSE ?7 END,
             ?8, ?9, ?10, ?11)";

/// The stored events of session `rowid`, in session order (`seq`, then `id`).
pub fn session_events(store: &Store, rowid: i64) -> Result<Vec<StoredEvent>> {
    load_events(store, rowid, SESSION_EVENTS)
}

/// [`session_events`]'s statement: the session's events by `events_by_session_seq`, each with
/// its message's external id.
pub(super) const SESSION_EVENTS: &str = concat!(
    "SELECT events.id, events.seq, m.ext_id, events.category, events.action, events.priority, ",
    event_subject!(),
    ", events.detail, events.call_id, events.tool, events.ts
     FROM events JOIN messages m ON m.id = events.message_id
     WHERE events.session_id = ?1 ORDER BY events.seq, events.id"
);

/// The stored events of session `rowid` as a snapshot reads them: [`session_events`] without
/// the two fields no snapshot reads, `message_id` (empty) and `ts` (`None`), and without the
/// join with `messages` (one B-tree lookup per event, most of the time for a long session):
/// the same rows, since an event is deleted with its message (`ON DELETE CASCADE`, foreign
/// keys on in every connection the store opens) and `repair` extracts them all again.
pub(crate) fn snapshot_events(store: &Store, rowid: i64) -> Result<Vec<StoredEvent>> {
    load_events(store, rowid, SNAPSHOT_EVENTS)
}

/// [`snapshot_events`]'s statement: the session's events by `events_by_session_seq`.
pub(super) const SNAPSHOT_EVENTS: &str = concat!(
    "SELECT id, seq, NULL, category, action, priority, ",
    event_subject!(),
    ", detail, call_id, tool, NULL
     FROM events WHERE session_id = ?1 ORDER BY seq, id"
);

/// The events `sql` selects for session `?1`: columns id, seq, message ext id (NULL: empty),
/// category, action, priority, subject, detail, call id, tool, ts.
fn load_events(store: &Store, rowid: i64, sql: &str) -> Result<Vec<StoredEvent>> {
    read_events(&store.conn, sql, [rowid], |_, _| {})
}

/// The events `sql` selects with `args` (columns as [`load_events`] reads them); `row` is told
/// the seq and id of every row read, of a category this binary knows or not.
pub(super) fn read_events(
    conn: &rusqlite::Connection,
    sql: &str,
    args: impl rusqlite::Params,
    mut row: impl FnMut(i64, i64),
) -> Result<Vec<StoredEvent>> {
    let mut stmt = conn.prepare_cached(sql).db()?;
    let mut rows = stmt.query(args).db()?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().db()? {
        let (id, seq) = (r.get(0).db()?, r.get(1).db()?);
        row(seq, id);
        // A category this binary does not know (written by a newer one) is skipped.
        let category = match r.get_ref(3).db()?.as_str() {
            Ok(name) => Category::parse(name),
            // Not text: the conversion error, as `get` gives it.
            Err(_) => Category::parse(&r.get::<_, String>(3).db()?),
        };
        let Some(category) = category else {
            continue;
        };
        out.push(StoredEvent {
            id,
            seq,
            message_id: r.get::<_, Option<String>>(2).db()?.unwrap_or_default(),
            event: events::Event {
                category,
                action: r.get(4).db()?,
                priority: r.get::<_, i64>(5).db()?.clamp(1, 4) as u8,
                subject: r.get(6).db()?,
                detail: r.get(7).db()?,
                call_id: r.get(8).db()?,
                tool: r.get(9).db()?,
                ts: r.get(10).db()?,
            },
        });
    }
    Ok(out)
}

/// The latest main (not sub-agent) session whose project directory is `dir` or contains it
/// (the project a shell in `dir` works on), optionally of one agent and not `exclude` (a row
/// id), among this machine's own sessions only (`origin = ''`: a session pulled from another
/// machine is never injected into an agent's context automatically). `None` when there is none.
pub fn latest_session_for_dir(
    store: &Store,
    dir: &str,
    agent: Option<&str>,
    exclude: Option<i64>,
) -> Result<Option<i64>> {
    let mut stmt = store
        .conn
        .prepare_cached(
            "SELECT id, project_dir FROM sessions
         WHERE parent_external_id IS NULL AND project_dir IS NOT NULL AND origin = ''
           AND (?1 IS NULL OR agent = ?1) AND (?2 IS NULL OR id <> ?2)
           AND (project_dir = ?3 OR substr(?3, 1, length(project_dir)) = project_dir)
         ORDER BY updated_at DESC, id DESC",
        )
        .db()?;
    let rows = stmt
        .query_map(params![agent, exclude, dir], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })
        .db()?;
    for row in rows {
        let (id, p) = row.db()?;
        if dir_within(dir, &p) {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// How many main sessions of this machine (`origin = ''`, pulled ones are not counted) other
/// than `exclude` have `dir` as (or inside) their project, and the time (ms) of the latest.
pub fn earlier_sessions_of_dir(
    store: &Store,
    dir: &str,
    exclude: Option<i64>,
) -> Result<(usize, Option<i64>)> {
    let mut stmt = store
        .conn
        .prepare_cached(
            "SELECT project_dir, updated_at FROM sessions
         WHERE parent_external_id IS NULL AND project_dir IS NOT NULL AND origin = ''
           AND (?1 IS NULL OR id <> ?1)
           AND (project_dir = ?2 OR substr(?2, 1, length(project_dir)) = project_dir)",
        )
        .db()?;
    let rows = stmt
        .query_map(params![exclude, dir], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<i64>>(1)?))
        })
        .db()?;
    let (mut n, mut latest) = (0, None::<i64>);
    for row in rows {
        let (p, t) = row.db()?;
        if dir_within(dir, &p) {
            n += 1;
            latest = latest.max(t);
        }
    }
    Ok((n, latest))
}

/// The stored session of a hook event: by its transcript (the cursor's session), else by the
/// agent's session id. `None` when the store has not seen it.
pub fn session_of_event(
    store: &Store,
    agent: Agent,
    session_id: Option<&str>,
    transcript: Option<&str>,
) -> Result<Option<i64>> {
    if let Some(sid) = session_id.filter(|s| !s.is_empty()) {
        let id: Option<i64> = store
            .conn
            .query_row(
                "SELECT id FROM sessions WHERE agent = ?1 AND external_id = ?2 AND origin = ''",
                params![agent.as_str(), sid],
                |r| r.get(0),
            )
            .optional()
            .db()?;
        if id.is_some() {
            return Ok(id);
        }
    }
    if let Some(t) = transcript.filter(|t| !t.is_empty()) {
        let id: Option<Option<i64>> = store
            .conn
            .query_row(
                "SELECT session_id FROM sources WHERE path = ?1 AND agent = ?2",
                params![t, agent.as_str()],
                |r| r.get(0),
            )
            .optional()
            .db()?;
        if let Some(Some(id)) = id {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// The text of one message for packing: its prose, else its tool text.
pub(crate) fn message_text(
    store: &Store,
    agent: &str,
    session_id: &str,
    index: i64,
) -> Result<Option<CandidateMessage>> {
    store
        .conn
        .query_row(
            // The session `resolve_session` picks: this machine's before a pulled one.
            "SELECT m.role, m.ts, m.body, memtrail_tools(m.tools_text, m.parts_zdict) FROM messages m
             WHERE m.session_id = (SELECT id FROM sessions WHERE agent = ?1 AND external_id = ?2
                                   ORDER BY origin != '', updated_at DESC LIMIT 1)
               AND m.seq = ?3",
            params![agent, session_id, index],
            |r| {
                let body: String = r.get(2)?;
                let tools: String = r.get(3)?;
                Ok(CandidateMessage {
                    session_id: session_id.to_string(),
                    index,
                    role: r.get(0)?,
                    timestamp: r.get::<_, Option<i64>>(1)?.map(format_rfc3339_ms),
                    text: if body.trim().is_empty() { tools } else { body },
                })
            },
        )
        .optional()
        .db()
}

/// The latest user and assistant messages with prose, newest first.
pub(crate) fn recent_messages(
    store: &Store,
    rowid: i64,
    session_id: &str,
    n: usize,
) -> Result<Vec<CandidateMessage>> {
    let mut stmt = store.conn.prepare_cached(
        "SELECT seq, role, ts, body FROM messages
         WHERE session_id = ?1 AND role IN ('user', 'assistant') AND kind IN ('text', 'note', 'summary')
           AND length(trim(body)) > 0
         ORDER BY seq DESC LIMIT ?2",
    ).db()?;
    let rows = stmt
        .query_map(params![rowid, n as i64], |r| {
            Ok(CandidateMessage {
                session_id: session_id.to_string(),
                index: r.get(0)?,
                role: r.get(1)?,
                timestamp: r.get::<_, Option<i64>>(2)?.map(format_rfc3339_ms),
                text: r.get(3)?,
            })
        })
        .db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}

/// The first and the last user prompt of session `rowid` (prose only).
pub(crate) fn first_and_last_prompt(
    store: &Store,
    rowid: i64,
) -> Result<(Option<String>, Option<String>)> {
    let q = |order: &str| -> Result<Option<String>> {
        store
            .conn
            .query_row(
                &format!(
                    "SELECT body FROM messages WHERE session_id = ?1 AND role = 'user'
                     AND kind = 'text' AND length(trim(body)) > 0 ORDER BY seq {order} LIMIT 1"
                ),
                [rowid],
                |r| r.get(0),
            )
            .optional()
            .db()
    };
    Ok((q("ASC")?, q("DESC")?))
}

/// The prose of the last assistant message of session `rowid` that has some.
pub(crate) fn last_answer(store: &Store, rowid: i64) -> Result<Option<String>> {
    store
        .conn
        .query_row(
            "SELECT body FROM messages WHERE session_id = ?1 AND role = 'assistant'
             AND kind IN ('text', 'tool_call') AND length(trim(body)) > 0 ORDER BY seq DESC LIMIT 1",
            [rowid],
            |r| r.get(0),
        )
        .optional().db()
}
