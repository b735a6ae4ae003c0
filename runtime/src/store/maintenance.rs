//! The SQL of privacy maintenance ([`crate::maintenance`]): delete a session, purge old
//! messages, re-apply the current redaction rules to what was stored earlier.

use super::Db;
use super::packed;
use crate::Result;
use crate::privacy::SkipReason;
use crate::records::Enrich;
use crate::store::{Store, cjk_index_text, kind_from_str, render_index_text};
use memtrail_adapters::{Agent, Message, Part, Role};
use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Messages re-redacted per transaction by [`rescan`] (each transaction stays short, so hooks
/// running meanwhile wait milliseconds, not the whole rescan).
pub const RESCAN_BATCH: usize = 500;

/// One stored session, as shown before it is deleted.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SessionInfo {
    /// The agent (`claude`, `codex`, …).
    pub agent: String,
    /// The session's id (the agent's own).
    pub session_id: String,
    /// Its title; `None` when untitled.
    pub title: Option<String>,
    /// Its project folder (a path); `None` when unknown.
    pub project: Option<String>,
    /// Messages of the session and of its sub-agent sessions.
    pub messages: u64,
    /// Sub-agent sessions deleted with it.
    pub subagents: u64,
    /// The label of the machine the session was pulled from (`sync`); `None` for this
    /// machine's own session (absent from the JSON then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// The other stored sessions with the same id, which stay (a transcript copied between
    /// machines: this machine's own and ones pulled from others; the id names this machine's
    /// first, then the latest updated). Empty when there is none (absent from the JSON then).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub same_id: Vec<SameId>,
    /// Set by [`delete_session`]: a reader (`memtrail web`, an MCP server, a search) held an
    /// older snapshot past the wait, so the deleted text is still in the store's files until a
    /// later checkpoint ([`scrub_pending`]). Not in this struct's JSON: the command's output
    /// gives it beside the session.
    #[serde(skip)]
    pub wal_kept: bool,
}

/// Another stored session with the id of the one [`SessionInfo`] describes.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SameId {
    /// Its agent.
    pub agent: String,
    /// The label of the machine it was pulled from; `None` for this machine's own (absent
    /// from the JSON then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
}

fn session_and_children(store: &Store, row_id: i64) -> Result<(SessionInfo, Vec<i64>)> {
    let (agent, ext, title, project, origin): (
        String,
        String,
        Option<String>,
        Option<String>,
        String,
    ) = store
        .conn
        .query_row(
            "SELECT agent, external_id, title, project_dir, origin FROM sessions WHERE id = ?1",
            [row_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .db()?;
    let mut ids = vec![row_id];
    // Its sub-agent sessions are those of the same machine.
    let mut stmt = store
        .conn
        .prepare(
            "SELECT id FROM sessions WHERE agent = ?1 AND parent_external_id = ?2 AND origin = ?3",
        )
        .db()?;
    for id in stmt
        .query_map(params![agent, ext, origin], |r| r.get::<_, i64>(0))
        .db()?
    {
        ids.push(id.db()?);
    }
    let mut messages = 0u64;
    for id in &ids {
        messages += store
            .conn
            .query_row(
                "SELECT COUNT(*) FROM messages WHERE session_id = ?1",
                [id],
                |r| r.get::<_, i64>(0),
            )
            .db()? as u64;
    }
    let mut same_id = Vec::new();
    let mut stmt = store
        .conn
        .prepare(
            "SELECT agent, origin FROM sessions WHERE external_id = ?1 AND id <> ?2
             ORDER BY origin != '', updated_at DESC",
        )
        .db()?;
    let rows = stmt
        .query_map(params![ext, row_id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })
        .db()?;
    for r in rows {
        let (agent, origin) = r.db()?;
        same_id.push(SameId {
            agent,
            machine: origin_label(store, &origin)?,
        });
    }
    Ok((
        SessionInfo {
            agent,
            session_id: ext,
            title,
            project,
            messages,
            subagents: ids.len() as u64 - 1,
            machine: origin_label(store, &origin)?,
            same_id,
            wal_kept: false,
        },
        ids,
    ))
}

/// The label of machine `origin` (its id when no label is known); `None` for `''`, this machine.
fn origin_label(store: &Store, origin: &str) -> Result<Option<String>> {
    if origin.is_empty() {
        return Ok(None);
    }
    let label: Option<String> = store
        .conn
        .query_row("SELECT label FROM machines WHERE id = ?1", [origin], |r| {
            r.get(0)
        })
        .optional()
        .db()?;
    Ok(Some(label.unwrap_or_else(|| origin.to_string())))
}

/// What [`delete_session`] would delete: the session (agent id or unique prefix, as
/// `query::resolve_session`) and its sub-agent sessions.
///
/// Errors: [`crate::Error::NotFound`], or [`crate::Error::Invalid`] for an ambiguous prefix.
pub fn session_info(store: &Store, id: &str) -> Result<SessionInfo> {
    let row = crate::query::resolve_session(store, id, None)?;
    Ok(session_and_children(store, row)?.0)
}

/// Delete a session and its sub-agent sessions: messages (with their full-text entries, tool
/// calls and, through `ON DELETE CASCADE`, anything else hanging off a message), then the
/// session rows, in one transaction. The transcripts' cursors are kept, marked
/// [`SkipReason::Deleted`]: the next hook or `memtrail import` does not read those transcripts
/// again, so the session does not come back. Then the WAL is folded back into the file
/// ([`checkpoint`]), so that the deleted text is gone from the store's files; when a reader
/// keeps that from happening, `wal_kept` says so and a later hook or import finishes it.
///
/// Errors: as [`session_info`]; a store error rolls everything back.
pub fn delete_session(store: &mut Store, id: &str) -> Result<SessionInfo> {
    let row = crate::query::resolve_session(store, id, None)?;
    let (mut info, ids) = session_and_children(store, row)?;
    secure(store)?;
    store.write(|w| bulk_delete(w, |w| delete_rows(w, &ids)))?;
    info.wal_kept = !checkpoint(store)?;
    Ok(info)
}

/// The writes of [`delete_session`] for the sessions with row ids `ids`, inside the caller's
/// transaction: their transcripts' cursors are marked [`SkipReason::Deleted`] (an ingest that
/// read a cursor before this commits stands down: [`crate::store::Writer::expect_cursor`]), and
/// their tool calls, messages and session rows are deleted.
///
/// Errors: a store error (the caller's transaction is then rolled back).
pub fn delete_rows(w: &crate::store::Writer<'_>, ids: &[i64]) -> Result<()> {
    for sid in ids {
        let session: Option<String> =
            w.tx.query_row(
                "SELECT external_id FROM sessions WHERE id = ?1",
                [sid],
                |r| r.get(0),
            )
            .optional()
            .db()?;
        let marker = SkipReason::Deleted { session }.to_state().to_string();
        w.tx.execute(
            "UPDATE sources SET reader_state = ?2 WHERE session_id = ?1",
            params![sid, marker],
        )
        .db()?;
        w.tx.execute("DELETE FROM tool_calls WHERE session_id = ?1", [sid])
            .db()?;
        w.tx.execute("DELETE FROM messages WHERE session_id = ?1", [sid])
            .db()?;
        w.tx.execute("DELETE FROM sessions WHERE id = ?1", [sid])
            .db()?;
    }
    Ok(())
}

/// What [`capture_again`] did.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Recaptured {
    /// The agent (`claude`, `codex`, …).
    pub agent: String,
    /// The session's id (the agent's own).
    pub session_id: String,
    /// Transcripts read again (the session's and its sub-agents').
    pub transcripts: u64,
    /// Messages stored from them.
    pub messages: u64,
}

/// A deleted session whose transcript is still on disk: (cursor key, agent, transcript,
/// database session, the session's id, its parent's id).
type Found = (
    String,
    Agent,
    PathBuf,
    Option<String>,
    String,
    Option<String>,
);

/// The sessions [`delete_session`] (or [`purge`]) marked deleted whose transcripts the agent
/// still keeps, one entry per transcript (a session's sub-agents have their own).
fn deleted_found(store: &Store) -> Result<Vec<Found>> {
    let marked: Vec<(String, String)> = {
        let mut stmt = store
            .conn
            .prepare(
                "SELECT path, agent FROM sources WHERE json_valid(reader_state)
             AND json_extract(reader_state, '$.memtrail_skip') = 'deleted' ORDER BY path",
            )
            .db()?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .db()?
            .collect::<rusqlite::Result<_>>()
            .db()?
    };
    let mut found: Vec<Found> = Vec::new();
    for (key, agent) in marked {
        let Ok(agent) = agent.parse::<Agent>() else {
            continue;
        };
        // A database source's cursor is `<database>#<session id>` (see `ingest`).
        if let Some((db, sid)) = key.rsplit_once('#')
            && matches!(
                memtrail_adapters::source_for(agent, Path::new(db)),
                Some(memtrail_adapters::Source::Database)
            )
        {
            let (db, sid) = (PathBuf::from(db), sid.to_string());
            found.push((key.clone(), agent, db, Some(sid.clone()), sid, None));
            continue;
        }
        let path = PathBuf::from(&key);
        if let Ok(sref) = memtrail_adapters::identify(agent, &path) {
            found.push((
                key,
                agent,
                path,
                None,
                sref.external_id,
                sref.parent_external_id,
            ));
        }
    }
    Ok(found)
}

/// Whether `id` (a session's id or a prefix of it) names a deleted session whose transcript is
/// still on disk, so that [`capture_again`] can bring it back. Errors: a store read error.
pub fn is_deleted(store: &Store, id: &str) -> Result<bool> {
    Ok(!id.is_empty() && deleted_found(store)?.iter().any(|f| f.4.starts_with(id)))
}

/// Capture a deleted session again: the cursors that [`delete_session`] (or [`purge`]) marked
/// [`SkipReason::Deleted`] for the session `id` (its agent's id, or a unique prefix of it) and
/// for its sub-agent sessions are dropped, and their transcripts are read again from the start,
/// now, as by `memtrail import`: every copy of them (a transcript seen at another path after
/// the delete is marked too). Only transcripts still on disk are read; the markers of the
/// others are dropped.
///
/// Errors: [`Error::NotFound`](crate::Error::NotFound) when no deleted session with that id
/// has a transcript on disk; [`Error::Invalid`](crate::Error::Invalid) for an ambiguous
/// prefix; a store or read error of an ingest (what was read before it stays).
pub fn capture_again(store: &mut Store, id: &str) -> Result<Recaptured> {
    let found = deleted_found(store)?;
    let matches = |s: &str| s == id || !id.is_empty() && s.starts_with(id);
    // A sub-agent session goes with its parent (its id often starts with the parent's).
    let mut ids: Vec<(Agent, &str)> = found
        .iter()
        .filter(|f| matches(&f.4) && !f.5.as_deref().is_some_and(matches))
        .map(|f| (f.1, f.4.as_str()))
        .collect();
    ids.sort_by_key(|(a, s)| (a.as_str(), *s));
    ids.dedup();
    if let Some(exact) = ids.iter().find(|(_, s)| *s == id) {
        ids = vec![*exact];
    }
    let (agent, target) = match ids.as_slice() {
        [] if crate::query::resolve_session(store, id, None).is_ok() => {
            return Err(crate::Error::NotFound(format!(
                "session `{id}` is not deleted: it is in the store (`memtrail sessions show {id}`)"
            )));
        }
        [] => {
            return Err(crate::Error::NotFound(format!(
                "no deleted session `{id}` whose transcript is still on disk"
            )));
        }
        [one] => (one.0, one.1.to_string()),
        many => {
            return Err(crate::Error::Invalid(format!(
                "`{id}` matches {} deleted sessions ({}); give more of the id",
                many.len(),
                many.iter().map(|m| m.1).collect::<Vec<_>>().join(", ")
            )));
        }
    };
    let mine: Vec<&Found> = found
        .iter()
        .filter(|f| f.1 == agent && (f.4 == target || f.5.as_deref() == Some(target.as_str())))
        .collect();
    // A transcript gone from disk (its project folder renamed, say) loses its marker and is
    // not read; the session comes back from the ones still there (copies included).
    if !mine.iter().any(|f| f.2.is_file()) {
        return Err(crate::Error::NotFound(format!(
            "no deleted session `{id}` whose transcript is still on disk"
        )));
    }
    store.write(|w| {
        for f in &mine {
            w.tx.execute("DELETE FROM sources WHERE path = ?1", [&f.0])
                .db()?;
        }
        Ok(())
    })?;
    let mine: Vec<&Found> = mine.into_iter().filter(|f| f.2.is_file()).collect();
    let mut out = Recaptured {
        agent: agent.as_str().to_string(),
        session_id: target.clone(),
        ..Default::default()
    };
    for f in mine {
        let r = crate::ingest::ingest_at_rest(store, f.1, &f.2, f.3.as_deref(), None)?;
        out.transcripts += 1;
        out.messages += r.inserted;
    }
    Ok(out)
}

/// What [`purge`] deleted (or, in a dry run, would delete).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Purged {
    /// Messages older than the cutoff.
    pub messages: u64,
    /// Sessions that had only such messages (deleted whole).
    pub sessions: u64,
    /// Of those, sessions pulled from other machines (`sync`): deleted here only, they stay
    /// on their machine and in PostgreSQL.
    pub other_machines: u64,
    /// Bytes of the store (database and WAL) before the purge.
    pub bytes_before: u64,
    /// Bytes of the store (database and WAL) after it (in a dry run, the same as before).
    pub bytes_after: u64,
    /// True when nothing was deleted (the figures are what would be).
    pub dry_run: bool,
    /// True when the file was `VACUUM`ed afterwards (its free pages given back).
    pub vacuumed: bool,
    /// True when a reader (a `memtrail web` or `mcp` request, a search) held on to an older
    /// snapshot of the store for the whole wait, so the write-ahead log could not be folded
    /// back: the database file still holds the deleted text until a later checkpoint (the next
    /// purge, rescan, delete or import).
    pub wal_kept: bool,
}

/// Delete every message older than `cutoff_ms` (ms since the Unix epoch; a message without a
/// timestamp takes its session's last activity; with no time known at all, it is kept), then
/// every session left without messages whose last activity is older than the cutoff; with `vacuum`, `VACUUM` the file afterwards.
/// One transaction. Cursors of deleted sessions are marked [`SkipReason::Deleted`] so an import
/// does not bring them back. A partly purged session keeps its message numbering (`seq`), so
/// later messages still sort after, and its `message_count` is recounted; its title, taken
/// from its first prompt, is cleared when that prompt is purged. Snapshots built before the
/// cutoff are deleted (they quote the purged messages).
///
/// Retention is per machine: a session pulled from another machine (`sync`) is purged here
/// only (no tombstone is pushed; it stays on its machine and in PostgreSQL); its pull position
/// is unchanged, so it does not come back by itself, but when its machine pushes more of it,
/// the next pull brings the session back with what was added (its purged messages stay gone).
/// This machine's own sessions deleted whole are deleted everywhere at the next sync.
///
/// Known limit: a whole-file source (Gemini CLI's legacy JSON, VS Code chat sessions) that
/// changes again is re-read whole, which brings its purged messages back.
pub fn purge(store: &mut Store, cutoff_ms: i64, vacuum: bool, dry_run: bool) -> Result<Purged> {
    const OLD: &str = "FROM messages m JOIN sessions s ON s.id = m.session_id
         WHERE COALESCE(m.ts, s.updated_at, s.started_at) < ?1";
    const EMPTY: &str = "FROM sessions s WHERE COALESCE(s.updated_at, s.started_at) < ?1
         AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)";
    let mut out = Purged {
        bytes_before: store.location().size_bytes(),
        dry_run,
        ..Default::default()
    };
    if dry_run {
        out.messages = store
            .conn
            .query_row(&format!("SELECT COUNT(*) {OLD}"), [cutoff_ms], |r| {
                r.get::<_, i64>(0)
            })
            .db()? as u64;
        // Sessions whose every message is old (or that have none), and that are old themselves.
        let count = |origin: &str| {
            store.conn.query_row(
                &format!("SELECT COUNT(*) FROM sessions s WHERE COALESCE(s.updated_at, s.started_at) < ?1
                 AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id
                                 AND NOT COALESCE(COALESCE(m.ts, s.updated_at, s.started_at) < ?1, 0)) {origin}"),
                [cutoff_ms],
                |r| r.get::<_, i64>(0),
            ).db().map(|n| n as u64)
        };
        out.sessions = count("")?;
        out.other_machines = count("AND s.origin != ''")?;
        out.bytes_after = out.bytes_before;
        return Ok(out);
    }
    secure(store)?;
    let (messages, sessions, other_machines) = store.write(|w| bulk_delete(w, |w| {
        let tombstones_before: i64 = w.tx.query_row(
            "SELECT COALESCE(MAX(seq), 0) FROM sync_tombstones", [], |r| r.get(0),
        ).db()?;
        w.tx.execute(
            &format!(
                "DELETE FROM tool_calls WHERE message_id IN (SELECT m.id {OLD})"
            ),
            [cutoff_ms],
        ).db()?;
        let messages = w.tx.execute(
            &format!("DELETE FROM messages WHERE id IN (SELECT m.id {OLD})"),
            [cutoff_ms],
        ).db()?;
        let marker = SkipReason::Deleted { session: None }.to_state().to_string();
        w.tx.execute(
            &format!(
                "UPDATE sources SET reader_state = ?2 WHERE session_id IN (SELECT s.id {EMPTY})"
            ),
            params![cutoff_ms, marker],
        ).db()?;
        let other_machines: i64 = w.tx.query_row(
            &format!("SELECT COUNT(*) {EMPTY} AND s.origin != ''"),
            [cutoff_ms],
            |r| r.get(0),
        ).db()?;
        let sessions = w.tx.execute(
            &format!("DELETE FROM sessions WHERE id IN (SELECT s.id {EMPTY})"),
            [cutoff_ms],
        ).db()?;
        // Retention is per machine: other machines' sessions are dropped here only.
        w.tx.execute(
            "DELETE FROM sync_tombstones WHERE seq > ?1 AND origin != ''",
            [tombstones_before],
        ).db()?;
        // Snapshots quote the messages they were built from.
        w.tx.execute("DELETE FROM snapshots WHERE built_at < ?1", [cutoff_ms]).db()?;
        // The title comes from the first prompt: gone with it.
        w.tx.execute(
            "UPDATE sessions SET title = NULL WHERE title IS NOT NULL AND message_count > 0
             AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = sessions.id AND m.seq = 0)",
            [],
        ).db()?;
        w.tx.execute(
            "UPDATE sessions SET message_count =
                 (SELECT COUNT(*) FROM messages m WHERE m.session_id = sessions.id)
             WHERE message_count != (SELECT COUNT(*) FROM messages m WHERE m.session_id = sessions.id)",
            [],
        ).db()?;
        Ok((messages as u64, sessions as u64, other_machines as u64))
    }))?;
    out.messages = messages;
    out.sessions = sessions;
    out.other_machines = other_machines;
    out.wal_kept = !checkpoint(store)?;
    if vacuum {
        vacuum_file(store)?;
        store
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .db()?;
        out.vacuumed = true;
    }
    out.bytes_after = store.location().size_bytes();
    Ok(out)
}

/// What [`rescan`] changed.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Rescanned {
    /// Messages read.
    pub messages: u64,
    /// Messages whose text, tool inputs or outputs changed (their search entries rebuilt).
    pub messages_changed: u64,
    /// Sessions whose title or git branch changed.
    pub titles_changed: u64,
    /// Saved snapshots (see [`crate::snapshot`]) whose text changed.
    pub snapshots_changed: u64,
    /// Transcript cursors whose reader state (content a reader holds between ingests, e.g. a
    /// VS Code tool result that came before its request) changed.
    pub reader_states_changed: u64,
    /// Errors and session ids of the last hook runs (`status` shows them) that changed (each
    /// one counted).
    pub hook_errors_changed: u64,
    /// Labels of machines pulled from (`sync`) that changed.
    pub labels_changed: u64,
    /// Lines of the hook log (`hook.log` and `hook.log.1`) that changed (`memtrail redact
    /// --rescan` rescans the log; the store's rescan alone leaves it: 0).
    pub log_lines_changed: u64,
    /// True when a reader (a `memtrail web` or `mcp` request, a search) held on to an older
    /// snapshot of the store for the whole wait, so the write-ahead log could not be folded
    /// back: the database file still holds the old text until a later checkpoint (`redact
    /// --rescan` again, a purge, a delete or an import).
    pub wal_kept: bool,
}

/// How many of a session's first user prompts [`rescan`] looks for its title in: adapters cut
/// it from the first prompt they keep (a command or a file note may come before it).
const TITLE_PROMPTS: i64 = 4;

/// Apply the redaction rules of `e` (secrets and `<private>` spans, [`Enrich`]) to everything
/// stored: every message's parts (text, thinking, tool inputs and outputs), its search columns
/// (rebuilt by the `UPDATE` trigger), its events (extracted again by `e`), every session title
/// (one an older memtrail cut from a prompt redacted as that prompt now is,
/// [`Enrich::redact_title_as_prompt`]), saved snapshot, transcript cursor's reader state, hook
/// run's error and session id, and
/// pulled machine's label. Runs in transactions of
/// [`RESCAN_BATCH`] messages; idempotent (a second run changes nothing). `progress` is called
/// after each batch with the messages read so far.
pub fn rescan<E: Enrich>(
    store: &mut Store,
    progress: &mut dyn FnMut(u64),
    e: &E,
) -> Result<Rescanned> {
    let mut out = Rescanned::default();
    secure(store)?;
    let mut last_id = i64::MIN;
    loop {
        type Row = (
            i64,
            String,
            String,
            String,
            String,
            String,
            i64,
            String,
            Option<i64>,
        );
        let rows: Vec<Row> = {
            let mut stmt = store.conn.prepare(
                "SELECT id, ext_id, kind, body, memtrail_tools(tools_text, parts_zdict), memtrail_parts(parts_zdict, body),
                        session_id, role, ts
                 FROM messages WHERE id > ?1 ORDER BY id LIMIT ?2",
            ).db()?;
            stmt.query_map(params![last_id, RESCAN_BATCH as i64], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                ))
            })
            .db()?
            .collect::<rusqlite::Result<_>>()
            .db()?
        };
        let Some(last) = rows.last() else { break };
        last_id = last.0;
        out.messages += rows.len() as u64;
        let changed = store.write(|w| {
            let mut changed = 0u64;
            for (id, ext_id, kind, body, tools, parts_json, session_id, role, ts) in rows {
                let Some(r) = redact_stored(
                    e,
                    StoredText {
                        ext_id,
                        role: &role,
                        kind: &kind,
                        ts,
                        body: &body,
                        tools: &tools,
                        parts: &parts_json,
                    },
                )?
                else {
                    continue;
                };
                let (new_parts, new_body, new_tools, redacted) =
                    (r.parts, r.body, r.tools, r.message);
                let cjk = cjk_index_text(&new_body, &new_tools);
                // `tools` is rendered from the parts when read (`packed`), unless they do not
                // parse.
                let new_tools = redacted.is_none().then_some(new_tools);
                w.tx.execute(
                    "UPDATE messages SET parts_zdict = ?2, body = ?3, tools_text = ?4, cjk = ?5 WHERE id = ?1",
                    params![id, packed::pack(new_parts, &new_body)?, new_body, new_tools, cjk],
                )
                .db()?;
                // The message's events quote it (paths, prompts, errors): extracted again from
                // the redacted message, or dropped when its parts cannot be read.
                match &redacted {
                    Some(m) => w.index_events(e, session_id, id, m)?,
                    None => {
                        w.tx.execute("DELETE FROM events WHERE message_id = ?1", [id])
                            .db()?;
                    }
                }
                changed += 1;
            }
            Ok(changed)
        })?;
        out.messages_changed += changed;
        progress(out.messages);
    }
    out.titles_changed = store.write(|w| {
        type Row = (i64, Option<String>, Option<String>);
        let sessions: Vec<Row> = {
            let mut stmt =
                w.tx.prepare(
                    "SELECT id, title, git_branch FROM sessions
                     WHERE title IS NOT NULL OR git_branch IS NOT NULL",
                )
                .db()?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .db()?
                .collect::<rusqlite::Result<_>>()
                .db()?
        };
        let mut n = 0u64;
        let mut prompts =
            w.tx.prepare(
                "SELECT body FROM messages WHERE session_id = ?1 AND role = 'user'
                 AND kind = 'text' AND body != '' ORDER BY seq LIMIT ?2",
            )
            .db()?;
        for (id, title, branch) in sessions {
            // A title an older memtrail cut from one of the first prompts, squashed before it
            // was redacted: redacted as that prompt now is (its lines, redacted above).
            let from_prompt = match title.as_deref() {
                Some(t) => {
                    let bodies: Vec<String> = prompts
                        .query_map(params![id, TITLE_PROMPTS], |r| r.get(0))
                        .db()?
                        .collect::<rusqlite::Result<_>>()
                        .db()?;
                    bodies.iter().find_map(|b| e.redact_title_as_prompt(t, b))
                }
                None => None,
            };
            let new_title = from_prompt
                .as_deref()
                .or(title.as_deref())
                .map(|t| e.redact_title(t).into_owned());
            let new_branch = branch.as_deref().map(|b| e.redact(b));
            if new_title.as_deref() != title.as_deref()
                || new_branch.as_deref() != branch.as_deref()
            {
                w.tx.execute(
                    "UPDATE sessions SET title = ?2, git_branch = ?3 WHERE id = ?1",
                    params![id, new_title.as_deref(), new_branch.as_deref()],
                )
                .db()?;
                n += 1;
            }
        }
        Ok(n)
    })?;
    out.snapshots_changed = store.write(|w| redact_column(w, "snapshots", &["id"], "text", e))?;
    out.reader_states_changed = store.write(|w| {
        let states: Vec<(String, String)> = {
            let mut stmt = w
                .tx
                .prepare("SELECT path, reader_state FROM sources WHERE reader_state IS NOT NULL")
                .db()?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .db()?
                .collect::<rusqlite::Result<_>>()
                .db()?
        };
        let mut n = 0u64;
        for (path, text) in states {
            // A state that is not JSON is redacted as text (it is never restored then).
            let new = match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(v) => {
                    let mut r = v.clone();
                    e.redact_json(&mut r);
                    (r != v).then(|| r.to_string())
                }
                Err(_) => match e.redact(&text) {
                    std::borrow::Cow::Owned(r) => Some(r),
                    std::borrow::Cow::Borrowed(_) => None,
                },
            };
            if let Some(new) = new {
                w.tx.execute(
                    "UPDATE sources SET reader_state = ?2 WHERE path = ?1",
                    params![path, new],
                )
                .db()?;
                n += 1;
            }
        }
        Ok(n)
    })?;
    out.hook_errors_changed = store.write(|w| {
        let keys = ["agent", "event"];
        Ok(redact_column(w, "hook_runs", &keys, "error", e)?
            + redact_column(w, "hook_runs", &keys, "session", e)?)
    })?;
    out.labels_changed = store.write(|w| redact_column(w, "machines", &["id"], "label", e))?;
    if out.messages_changed
        + out.titles_changed
        + out.snapshots_changed
        + out.reader_states_changed
        + out.hook_errors_changed
        + out.labels_changed
        > 0
    {
        scrub(store)?;
    }
    // Always: a rescan that finds nothing to change still folds back the WAL an earlier one,
    // or a delete, had to leave.
    out.wal_kept = !checkpoint(store)?;
    Ok(out)
}

/// Redact column `column` of every row of `table` (its key columns `keys`) with `e`, inside
/// the caller's transaction; returns how many rows changed. Names come from this module only.
///
/// Errors: a store error (the caller's transaction is then rolled back).
fn redact_column<E: Enrich>(
    w: &crate::store::Writer<'_>,
    table: &str,
    keys: &[&str],
    column: &str,
    e: &E,
) -> Result<u64> {
    use rusqlite::types::Value;
    let rows: Vec<(Vec<Value>, String)> = {
        let mut stmt =
            w.tx.prepare(&format!(
                "SELECT {}, {column} FROM {table} WHERE {column} IS NOT NULL",
                keys.join(", ")
            ))
            .db()?;
        stmt.query_map([], |r| {
            let key = (0..keys.len())
                .map(|i| r.get(i))
                .collect::<rusqlite::Result<Vec<Value>>>()?;
            Ok((key, r.get(keys.len())?))
        })
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?
    };
    let update = format!(
        "UPDATE {table} SET {column} = ?{} WHERE {}",
        keys.len() + 1,
        keys.iter()
            .enumerate()
            .map(|(i, k)| format!("{k} = ?{}", i + 1))
            .collect::<Vec<_>>()
            .join(" AND ")
    );
    let mut n = 0u64;
    for (key, text) in rows {
        let new = e.redact(&text);
        if new != text.as_str() {
            let mut args = key;
            args.push(Value::Text(new.into_owned()));
            w.tx.execute(&update, rusqlite::params_from_iter(args))
                .db()?;
            n += 1;
        }
    }
    Ok(n)
}

/// A stored message's text, as read from its row (see [`redact_stored`]).
pub(crate) struct StoredText<'a> {
    pub ext_id: String,
    pub role: &'a str,
    pub kind: &'a str,
    pub ts: Option<i64>,
    pub body: &'a str,
    pub tools: &'a str,
    /// The parts, JSON.
    pub parts: &'a str,
}

/// A message's text after [`redact_stored`] changed it.
pub(crate) struct RedactedText {
    /// The parts, JSON.
    pub parts: String,
    pub body: String,
    pub tools: String,
    /// The redacted message, when its parts parse (its events are extracted again from it);
    /// `None` when the stored strings were redacted as they are.
    pub message: Option<Message>,
}

/// Apply the redaction rules of `e` to a stored (or pulled) message's text: its parts
/// ([`Enrich::redact_parts`], [`Enrich::redact_merged`]), its search columns rendered again from
/// them; parts that do not parse as JSON are redacted as strings. `None` when nothing changes.
/// Used by [`rescan`] and by sync's pull (`Store::apply_pull`).
///
/// Errors: the redacted parts cannot be serialized.
pub(crate) fn redact_stored<E: Enrich>(e: &E, t: StoredText<'_>) -> Result<Option<RedactedText>> {
    let parsed: Option<Vec<Part>> = serde_json::from_str(t.parts).ok();
    let out = match parsed {
        Some(parts) => {
            let mut m = Message {
                id: t.ext_id,
                role: t.role.parse().unwrap_or(Role::System),
                kind: kind_from_str(t.kind),
                parts: parts.clone(),
                timestamp: t.ts,
                model: None,
            };
            e.redact_parts(&mut m);
            e.redact_merged(&mut m);
            let parts_changed = m.parts != parts;
            if !parts_changed && e.redact(t.body) == t.body && e.redact(t.tools) == t.tools {
                return Ok(None);
            }
            let (body, tools) = render_index_text(&m);
            RedactedText {
                parts: serde_json::to_string(&m.parts)?,
                body,
                tools,
                message: Some(m),
            }
        }
        None => {
            let (p, b, t2) = (e.redact(t.parts), e.redact(t.body), e.redact(t.tools));
            if p == t.parts && b == t.body && t2 == t.tools {
                return Ok(None);
            }
            RedactedText {
                parts: p.into_owned(),
                body: b.into_owned(),
                tools: t2.into_owned(),
                message: None,
            }
        }
    };
    if out.parts == t.parts && out.body == t.body && out.tools == t.tools {
        return Ok(None);
    }
    Ok(Some(out))
}

/// `VACUUM`, with its copy of the store in a temporary file instead of memory (the connection's
/// `temp_store` is MEMORY for sorts and small temporary tables; a vacuum of a 1 GB store held
/// 1.1 GB in memory), in the store's own folder (the store's filesystem, not a shared `/tmp`):
/// SQLite removes the file's name as soon as it opens it, and the file when the vacuum ends.
/// It needs free space there as large as the store, and the WAL grows as large again until the
/// checkpoint that follows. The temporary folder is a setting of the whole process (SQLite's
/// `temp_store_directory`), set back after.
pub(super) fn vacuum_file(store: &Store) -> Result<()> {
    let conn = &store.conn;
    let dir = store
        .path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.to_string_lossy().replace('\'', "''"));
    if let Some(d) = &dir {
        conn.execute_batch(&format!("PRAGMA temp_store_directory = '{d}'"))
            .db()?;
    }
    conn.execute_batch("PRAGMA temp_store = FILE").db()?;
    let r = conn.execute_batch("VACUUM").db();
    conn.execute_batch("PRAGMA temp_store = MEMORY").db()?;
    if dir.is_some() {
        conn.execute_batch("PRAGMA temp_store_directory = ''")
            .db()?;
    }
    r
}

/// Overwrite deleted content with zeros from now on, on this connection.
fn secure(store: &Store) -> Result<()> {
    store.conn.pragma_update(None, "secure_delete", "ON").db()?;
    Ok(())
}

/// Drop deleted entries' tokens from the full-text index (the caller then truncates the WAL,
/// which may hold older copies of the pages: [`checkpoint`]).
fn scrub(store: &mut Store) -> Result<()> {
    store.write(|w| {
        w.tx.execute(
            "INSERT INTO messages_fts (messages_fts) VALUES ('optimize')",
            [],
        )
        .db()?;
        Ok(())
    })
}

/// How long [`checkpoint`] keeps trying while readers hold snapshots older than the last
/// write (a `memtrail web` or `mcp` request, a search): each of them ends in milliseconds.
const SCRUB_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Truncate the WAL (see [`scrub`]): copy every page written into the database file and start
/// the WAL over, retried for up to [`SCRUB_WAIT`] while a reader of an older snapshot keeps
/// it. Until that happens, the database file still holds the old versions of the pages
/// rewritten (redacted, deleted), and the WAL the new ones beside older frames. Returns whether
/// it happened (`false`: a reader held on past the wait; a later checkpoint finishes it).
///
/// When a reader held on, the file [`scrub_marker`] is left beside the store, so that the next
/// hook or `memtrail import` finishes the checkpoint once the readers let go
/// ([`scrub_pending`]); it is removed when a checkpoint happens.
fn checkpoint(store: &mut Store) -> Result<bool> {
    let until = std::time::Instant::now() + SCRUB_WAIT;
    loop {
        if truncate_wal(store)? {
            forget_scrub(store);
            return Ok(true);
        }
        if std::time::Instant::now() >= until {
            // Best effort: without the marker, the next delete, purge or rescan (or a WAL past
            // its bound) still folds the WAL back.
            let _ = super::files::create_private_file(&scrub_marker(&store.real_path()));
            return Ok(false);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// One `PRAGMA wal_checkpoint(TRUNCATE)`: whether it copied every frame into the database
/// file and started the WAL over (`false`: a reader of an older snapshot, or the connection's
/// busy handler gave up).
fn truncate_wal(store: &mut Store) -> Result<bool> {
    store
        .conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            Ok(r.get::<_, i64>(0)? == 0)
        })
        .db()
}

/// `<store>-scrub`: an empty owner-only file that says a delete, purge or rescan could not
/// fold the WAL back ([`checkpoint`]): the old text is still in the store's files until a
/// checkpoint, which [`scrub_pending`] tries.
pub fn scrub_marker(db: &Path) -> PathBuf {
    let mut p = db.as_os_str().to_owned();
    p.push("-scrub");
    PathBuf::from(p)
}

/// Remove [`scrub_marker`] (after a checkpoint that started the WAL over): only a file (a
/// directory or anything else put there is not memtrail's).
pub(super) fn forget_scrub(store: &Store) {
    let marker = scrub_marker(&store.real_path());
    // Best effort: a marker left behind only costs one more checkpoint.
    if std::fs::symlink_metadata(&marker).is_ok_and(|m| m.is_file()) {
        let _ = std::fs::remove_file(marker);
    }
}

/// Whether [`scrub_marker`] of `store` is there (a regular file; one `stat`).
pub fn scrub_is_pending(store: &Store) -> bool {
    std::fs::symlink_metadata(scrub_marker(&store.real_path())).is_ok_and(|m| m.is_file())
}

/// Finish what a delete, purge or rescan left ([`scrub_marker`]): when the marker is there,
/// one `wal_checkpoint(TRUNCATE)` that does not wait for readers (the connection's busy
/// timeout set to 0 for it), and the marker removed when it succeeds. Returns whether a
/// checkpoint was made. Costs one `stat` when there is no marker. Called by hooks (in their
/// time left); any other checkpoint that starts the WAL over (`import`'s last step, a WAL past
/// its bound, the next delete, purge or rescan) also removes the marker.
///
/// Errors: the checkpoint's, other than a reader or writer holding on.
pub fn scrub_pending(store: &mut Store) -> Result<bool> {
    if !scrub_is_pending(store) {
        return Ok(false);
    }
    // A WAL past the bound is a background writer's to checkpoint (`Store::bound_wal`), and
    // a hook's past 12,288 frames: copying it would hold the write lock longer than a hook
    // should make other hooks wait.
    let mut wal = store.real_path().into_os_string();
    wal.push("-wal");
    if std::fs::metadata(&wal).is_ok_and(|m| m.len() > super::WAL_BOUND_BYTES) {
        return Ok(false);
    }
    let _ = store.conn.busy_timeout(std::time::Duration::ZERO);
    let done = truncate_wal(store);
    store.restore_busy_handling();
    match done {
        Ok(true) => {
            forget_scrub(store);
            Ok(true)
        }
        Ok(false) => Ok(false),
        Err(e) => match super::classify(e) {
            crate::Error::Busy { .. } => Ok(false),
            e => Err(e),
        },
    }
}

/// Run `deletes` (many messages at once) with FTS5's `secure-delete` off, merge the index
/// (`optimize`: every deleted entry is dropped as the segments are rewritten, and the freed
/// pages are zeroed by `PRAGMA secure_delete`), and turn the option on again, all in the
/// caller's transaction, so no other connection sees it off. Removing each deleted message's
/// terms from every segment one by one cost 8 times the CPU of a `sessions delete` that merges
/// the index right after anyway (docs/benchmarks.md).
fn bulk_delete<T>(
    w: &crate::store::Writer<'_>,
    deletes: impl FnOnce(&crate::store::Writer<'_>) -> Result<T>,
) -> Result<T> {
    const SET: &str = "INSERT INTO messages_fts (messages_fts, rank) VALUES ('secure-delete', ?1)";
    w.tx.execute(SET, [0]).db()?;
    let out = deletes(w)?;
    w.tx.execute(
        "INSERT INTO messages_fts (messages_fts) VALUES ('optimize')",
        [],
    )
    .db()?;
    w.tx.execute(SET, [1]).db()?;
    Ok(out)
}

/// The row id of this machine's session (`origin` `''`) by its agent id, for tests and tools
/// (`None` when not stored).
pub fn session_row(store: &Store, agent: &str, external_id: &str) -> Result<Option<i64>> {
    store
        .conn
        .query_row(
            "SELECT id FROM sessions WHERE agent = ?1 AND external_id = ?2 AND origin = ''",
            params![agent, external_id],
            |r| r.get(0),
        )
        .optional()
        .db()
}
