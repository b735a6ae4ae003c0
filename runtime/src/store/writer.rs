//! The writer: sessions, messages, tool calls and events inside one write transaction.

use super::Db;
use super::cap;
use super::index_text::{cjk_index_text, kind_from_str, render_index_text};
use super::packed;
use crate::Result;
use crate::events::{Category, Event};
use crate::records::{Enrich, Fresh, Prepared};
use memtrail_adapters::{Agent, Kind, Message, Part, Record, Role, SessionMeta, SessionRef};
use rusqlite::{OptionalExtension, params};

/// Write access inside one transaction (see [`super::Store::write`]).
pub struct Writer<'a> {
    pub(super) tx: &'a rusqlite::Transaction<'a>,
    /// The agent of the last session looked up (session row id, agent), for event extraction.
    agent_of: std::cell::Cell<Option<(i64, Option<Agent>)>>,
}

/// What applying records changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applied {
    /// Messages inserted for the first time.
    pub inserted: u64,
    /// Stored messages that a record merged into.
    pub merged: u64,
    /// Tool results attached to stored calls.
    pub results: u64,
    /// Tool results whose call was not found (kept as their own tool message).
    pub orphan_results: u64,
    /// Messages deleted by a rewind.
    pub rewound: u64,
}

impl Writer<'_> {
    /// Insert the session if new, and fold `meta` into it; its title and git branch are
    /// redacted by `enrich` ([`Enrich::redact_title`], [`Enrich::redact`]). The session is this machine's (`origin` `''`; a pulled
    /// session with the same ids is another row). Returns the session's row id.
    pub fn upsert_session<E: Enrich>(
        &self,
        sref: &SessionRef,
        meta: &SessionMeta,
        enrich: &E,
    ) -> Result<i64> {
        let tx = self.tx;
        // DESIGN principle 5: the title is user text; redact it before it is written.
        let title = meta
            .title
            .as_deref()
            .filter(|t| !t.is_empty())
            .map(|t| enrich.redact_title(t));
        // The branch is the user's name too (`fix/token-ghp_…` has been seen): redacted.
        let branch = meta.git_branch.as_deref().map(|b| enrich.redact(b));
        tx.prepare_cached(
            "INSERT INTO sessions (agent, external_id, parent_external_id) VALUES (?1, ?2, ?3)
             ON CONFLICT (agent, external_id, origin) DO NOTHING",
        )
        .db()?
        .execute(params![
            sref.agent.as_str(),
            sref.external_id,
            sref.parent_external_id
        ])
        .db()?;
        let id: i64 = tx
            .prepare_cached(
                "SELECT id FROM sessions WHERE agent = ?1 AND external_id = ?2 AND origin = ''",
            )
            .db()?
            .query_row(params![sref.agent.as_str(), sref.external_id], |r| r.get(0))
            .db()?;
        tx.prepare_cached(
            "UPDATE sessions SET
                parent_external_id = COALESCE(parent_external_id, ?2),
                project_dir = COALESCE(?3, project_dir),
                title = COALESCE(title, ?4),
                model = COALESCE(?5, model),
                git_branch = COALESCE(?6, git_branch),
                agent_version = COALESCE(?7, agent_version),
                started_at = CASE WHEN started_at IS NULL OR ?8 < started_at THEN COALESCE(?8, started_at) ELSE started_at END,
                updated_at = CASE WHEN updated_at IS NULL OR ?9 > updated_at THEN COALESCE(?9, updated_at) ELSE updated_at END
             WHERE id = ?1",
        ).db()?
        .execute(params![
                id,
                sref.parent_external_id,
                meta.project_dir,
                title.as_deref(),
                meta.model,
                branch.as_deref(),
                meta.agent_version,
                meta.started_at,
                meta.updated_at,
            ],
        ).db()?;
        Ok(id)
    }

    /// Delete every message of a session that came from its transcript (used when the
    /// transcript was rewritten and is re-read: the store mirrors it). Notes kept with MCP
    /// `remember` are not in any transcript and stay. Returns how many messages were deleted.
    pub fn clear_session(&self, session_id: i64) -> Result<u64> {
        self.tx
            .execute(
                "DELETE FROM tool_calls WHERE session_id = ?1
             AND message_id IN (SELECT id FROM messages WHERE session_id = ?1 AND kind != 'note')",
                [session_id],
            )
            .db()?;
        let n = self
            .tx
            .execute(
                "DELETE FROM messages WHERE session_id = ?1 AND kind != 'note'",
                [session_id],
            )
            .db()?;
        self.tx
            .execute(
                "UPDATE sessions SET title = NULL,
                 message_count = (SELECT COUNT(*) FROM messages WHERE session_id = ?1)
             WHERE id = ?1",
                [session_id],
            )
            .db()?;
        Ok(n as u64)
    }

    /// Apply prepared records (tool results folded into their calls, every text redacted: see
    /// [`Prepared`]) to a session, with merge semantics (see `model::Record`). A message merged
    /// with its stored copy is redacted, and the events of each written message extracted, by
    /// the batch's [`Enrich`].
    pub fn apply_prepared<E: Enrich>(
        &self,
        session_id: i64,
        prepared: Prepared<E>,
    ) -> Result<Applied> {
        let (records, folded, enrich, fresh) = prepared.into_parts();
        let e = &enrich;
        let mut applied = Applied::default();
        applied.results += folded;
        let mut fresh = fresh.into_iter();
        for rec in records {
            let ahead = fresh.next().flatten();
            match rec {
                Record::Message(m) => {
                    if self.upsert_message_with(session_id, m, e, ahead)? {
                        applied.inserted += 1;
                    } else {
                        applied.merged += 1;
                    }
                }
                Record::Replace(m) => {
                    if self.replace_message(session_id, m, e)? {
                        applied.inserted += 1;
                    } else {
                        applied.merged += 1;
                    }
                }
                Record::Rewind { message_id } => {
                    applied.rewound += self.rewind(session_id, &message_id)?;
                }
                Record::ToolResult {
                    call_id,
                    output,
                    is_error,
                    exit_code,
                    timestamp,
                } => {
                    if self.attach_result(session_id, &call_id, &output, is_error, exit_code, e)? {
                        applied.results += 1;
                    } else {
                        // Keep the output: a tool message of its own, id derived from the call id.
                        applied.orphan_results += 1;
                        let m = Message {
                            id: format!("result:{call_id}"),
                            role: Role::Tool,
                            kind: Kind::ToolResult,
                            parts: vec![Part::ToolResult {
                                call_id,
                                output,
                                is_error,
                            }],
                            timestamp,
                            model: None,
                        };
                        if self.upsert_message(session_id, m, e)? {
                            applied.inserted += 1;
                        }
                    }
                }
            }
        }
        Ok(applied)
    }

    pub(super) fn new<'a>(tx: &'a rusqlite::Transaction<'a>) -> Writer<'a> {
        Writer {
            tx,
            agent_of: std::cell::Cell::new(None),
        }
    }

    /// The agent of session `session_id` (`None` for an unknown agent name), looked up once per
    /// transaction and session.
    fn session_agent(&self, session_id: i64) -> Result<Option<Agent>> {
        if let Some((id, agent)) = self.agent_of.get()
            && id == session_id
        {
            return Ok(agent);
        }
        let name: String = self
            .tx
            .prepare_cached("SELECT agent FROM sessions WHERE id = ?1")
            .db()?
            .query_row([session_id], |r| r.get(0))
            .db()?;
        let agent = name.parse::<Agent>().ok();
        self.agent_of.set(Some((session_id, agent)));
        Ok(agent)
    }

    /// Index the `max` oldest queued messages (`fts_pending`) and take them off the queue.
    /// Returns how many.
    pub fn index_pending(&self, max: usize) -> Result<u64> {
        let last: Option<i64> = self
            .tx
            .prepare_cached("SELECT id FROM fts_pending ORDER BY id LIMIT 1 OFFSET ?1")
            .db()?
            .query_row([max.saturating_sub(1) as i64], |r| r.get(0))
            .optional()
            .db()?;
        let last = last.unwrap_or(i64::MAX);
        self.tx
            .prepare_cached(
                "INSERT INTO messages_fts (rowid, body, tools, cjk)
                 SELECT m.id, m.body, memtrail_tools(m.tools_text, m.parts_zdict), m.cjk
                 FROM fts_pending p JOIN messages m ON m.id = p.id
                 WHERE p.id <= ?1 ORDER BY p.id",
            )
            .db()?
            .execute([last])
            .db()?;
        Ok(self
            .tx
            .prepare_cached("DELETE FROM fts_pending WHERE id <= ?1")
            .db()?
            .execute([last])
            .db()? as u64)
    }

    /// Delete the message `message_id` and every later message of the session. Returns how
    /// many were deleted (0 when the id is unknown).
    fn rewind(&self, session_id: i64, message_id: &str) -> Result<u64> {
        let seq: Option<i64> = self
            .tx
            .query_row(
                "SELECT seq FROM messages WHERE session_id = ?1 AND ext_id = ?2",
                params![session_id, message_id],
                |r| r.get(0),
            )
            .optional()
            .db()?;
        let Some(seq) = seq else { return Ok(0) };
        let n = self
            .tx
            .execute(
                "DELETE FROM messages WHERE session_id = ?1 AND seq >= ?2",
                params![session_id, seq],
            )
            .db()?;
        self.tx
            .execute(
                "UPDATE sessions SET message_count =
                 (SELECT COUNT(*) FROM messages WHERE session_id = ?1) WHERE id = ?1",
                params![session_id],
            )
            .db()?;
        Ok(n as u64)
    }

    /// Insert a message or replace the stored one with the same id. True when inserted.
    fn replace_message<E: Enrich>(&self, session_id: i64, mut m: Message, e: &E) -> Result<bool> {
        e.redact_merged(&mut m);
        let rowid: Option<i64> = self
            .tx
            .prepare_cached("SELECT id FROM messages WHERE session_id = ?1 AND ext_id = ?2")
            .db()?
            .query_row(params![session_id, m.id], |r| r.get(0))
            .optional()
            .db()?;
        match rowid {
            Some(rowid) => {
                self.tx
                    .prepare_cached("DELETE FROM tool_calls WHERE message_id = ?1")
                    .db()?
                    .execute([rowid])
                    .db()?;
                self.tx
                    .prepare_cached(
                        "UPDATE messages SET role = ?2, ts = ?3, model = ?4 WHERE id = ?1",
                    )
                    .db()?
                    .execute(params![rowid, m.role.as_str(), m.timestamp, m.model])
                    .db()?;
                self.update_message_row(session_id, rowid, &m, e)?;
                Ok(false)
            }
            None => self.upsert_message(session_id, m, e),
        }
    }

    /// Insert a message or merge it into the stored one with the same id. True when inserted.
    fn upsert_message<E: Enrich>(&self, session_id: i64, m: Message, e: &E) -> Result<bool> {
        self.upsert_message_with(session_id, m, e, None)
    }

    /// [`Writer::upsert_message`], with the row `fresh` computed ahead for `m` (used when no
    /// message of its id is stored).
    fn upsert_message_with<E: Enrich>(
        &self,
        session_id: i64,
        mut m: Message,
        e: &E,
        fresh: Option<Fresh>,
    ) -> Result<bool> {
        let existing: Option<(i64, String, String)> = self
            .tx
            .prepare_cached(
                "SELECT id, memtrail_parts(parts_zdict, body), kind FROM messages WHERE session_id = ?1 AND ext_id = ?2",
            )
            .db()?
            .query_row(params![session_id, m.id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()
            .db()?;
        match existing {
            Some((rowid, parts_json, kind)) => {
                let parts: Vec<Part> = serde_json::from_str(&parts_json).unwrap_or_default();
                let mut stored = Message {
                    id: m.id.clone(),
                    role: m.role,
                    kind: kind_from_str(&kind),
                    parts,
                    timestamp: None,
                    model: None,
                };
                let before = stored.parts.clone();
                let before_kind = stored.kind;
                stored.merge(m);
                // Secrets and `<private>` spans across the merged parts.
                e.redact_merged(&mut stored);
                if stored.parts != before || stored.kind != before_kind {
                    self.update_message_row(session_id, rowid, &stored, e)?;
                }
                Ok(false)
            }
            None => {
                let f = match fresh {
                    Some(f) => f,
                    None => {
                        e.redact_merged(&mut m);
                        let (body, tools) = render_index_text(&m);
                        let cjk = cjk_index_text(&body, &tools);
                        let parts = packed::pack_parts(&m.parts, &body)?;
                        Fresh {
                            message: m,
                            body,
                            cjk,
                            parts,
                            agent: None,
                            events: Vec::new(),
                        }
                    }
                };
                self.insert_fresh(session_id, f, e)
            }
        }
    }

    /// Insert a message new to the store from its row ([`Fresh`]; its events are used when they
    /// were extracted for the session's agent, else extracted here). True (a row was inserted).
    fn insert_fresh<E: Enrich>(&self, session_id: i64, f: Fresh, e: &E) -> Result<bool> {
        let m = &f.message;
        let seq: i64 = self
            .tx
            // After the last stored message: `message_count` is a count, which a purge of old
            // messages makes smaller than the next position.
            .prepare_cached("SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE session_id = ?1")
            .db()?
            .query_row([session_id], |r| r.get(0))
            .db()?;
        self.tx
            .prepare_cached(
                "INSERT INTO messages (session_id, ext_id, seq, role, kind, ts, model, body, parts_zdict, cjk)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            ).db()?
            .execute(params![
                session_id,
                m.id,
                seq,
                m.role.as_str(),
                m.kind.as_str(),
                m.timestamp,
                m.model,
                f.body,
                f.parts,
                f.cjk,
            ]).db()?;
        let rowid = self.tx.last_insert_rowid();
        self.tx
            .prepare_cached("UPDATE sessions SET message_count = message_count + 1 WHERE id = ?1")
            .db()?
            .execute([session_id])
            .db()?;
        self.index_calls(session_id, rowid, m)?;
        // A new row has no events yet, and its seq and time are known.
        if let Some(agent) = self.session_agent(session_id)? {
            if f.agent == Some(agent) {
                self.insert_events(session_id, rowid, seq, m.timestamp, &f.events, e)?;
            } else {
                let events = events_of(agent, m, e);
                self.insert_events(session_id, rowid, seq, m.timestamp, &events, e)?;
            }
        }
        Ok(true)
    }

    fn update_message_row<E: Enrich>(
        &self,
        session_id: i64,
        rowid: i64,
        m: &Message,
        e: &E,
    ) -> Result<()> {
        let (body, tools) = render_index_text(m);
        let cjk = cjk_index_text(&body, &tools);
        self.tx
            .prepare_cached(
                "UPDATE messages SET kind = ?2, body = ?3, tools_text = NULL, parts_zdict = ?4,
                    ts = COALESCE(ts, ?5), model = COALESCE(model, ?6), cjk = ?7 WHERE id = ?1",
            )
            .db()?
            .execute(params![
                rowid,
                m.kind.as_str(),
                body,
                packed::pack_parts(&m.parts, &body)?,
                m.timestamp,
                m.model,
                cjk,
            ])
            .db()?;
        self.index_calls(session_id, rowid, m)?;
        self.index_events(e, session_id, rowid, m)
    }

    /// Replace the stored events of message `rowid` by what `e` ([`Enrich::events`]) finds in
    /// `m` (its current, whole content). Events without a time get the message's.
    pub(crate) fn index_events<E: Enrich>(
        &self,
        e: &E,
        session_id: i64,
        rowid: i64,
        m: &Message,
    ) -> Result<()> {
        self.tx
            .prepare_cached("DELETE FROM events WHERE message_id = ?1")
            .db()?
            .execute([rowid])
            .db()?;
        let (agent, seq, ts): (String, i64, Option<i64>) = self
            .tx
            .prepare_cached(
                "SELECT s.agent, m.seq, m.ts FROM messages m JOIN sessions s ON s.id = m.session_id
                 WHERE m.id = ?1",
            )
            .db()?
            .query_row([rowid], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .db()?;
        let Ok(agent) = agent.parse::<Agent>() else {
            return Ok(());
        };
        let events = events_of(agent, m, e);
        self.insert_events(session_id, rowid, seq, ts, &events, e)
    }

    fn insert_events<E: Enrich>(
        &self,
        session_id: i64,
        rowid: i64,
        seq: i64,
        ts: Option<i64>,
        events: &[Event],
        enrich: &E,
    ) -> Result<()> {
        let mut stmt = self.tx.prepare_cached(super::recall::INSERT_EVENT).db()?;
        for e in events {
            stmt.execute(params![
                session_id,
                rowid,
                seq,
                e.category.as_str(),
                e.action,
                e.priority as i64,
                // Extracted from the redacted message, but an event may join strings that
                // were redacted one by one (a command's arguments): redacted as written.
                enrich.redact(&e.subject),
                e.detail.as_deref().map(|d| enrich.redact(d)),
                e.call_id,
                e.tool,
                e.ts.or(ts),
            ])
            .db()?;
        }
        Ok(())
    }

    /// Extract the events of every stored message with `e` (migration to schema 3; also usable
    /// to rebuild them). Returns how many messages were read.
    pub fn backfill_events<E: Enrich>(&self, e: &E) -> Result<u64> {
        self.tx.execute("DELETE FROM events", []).db()?;
        // The migration to schema 3 runs this on a store whose column has its old name.
        let column = if super::schema::has_message_column(self.tx, "parts_zdict")? {
            "parts_zdict"
        } else if super::schema::has_message_column(self.tx, "parts_packed")? {
            "parts_packed"
        } else {
            "parts"
        };
        let mut stmt = self
            .tx
            .prepare(&format!(
                "SELECT m.id, m.session_id, m.ext_id, m.role, m.kind, m.ts,
                        memtrail_parts(m.{column}, m.body) FROM messages m
                 ORDER BY m.session_id, m.seq"
            ))
            .db()?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, Option<i64>>(5)?,
                    r.get::<_, String>(6)?,
                ))
            })
            .db()?;
        let mut n = 0;
        for row in rows {
            let (rowid, session_id, ext_id, role, kind, ts, parts) = row.db()?;
            let m = Message {
                id: ext_id,
                role: role.parse().unwrap_or(Role::System),
                kind: kind_from_str(&kind),
                parts: serde_json::from_str(&parts).unwrap_or_default(),
                timestamp: ts,
                model: None,
            };
            self.index_events(e, session_id, rowid, &m)?;
            n += 1;
        }
        Ok(n)
    }

    /// Keep a note (MCP `remember`) in session `session_id`: a message of kind `note` (role
    /// assistant, redacted like any record by `e`, searchable) at the end of the session, and its
    /// `note` event. Returns the message's id and position in the session.
    pub fn add_note<E: Enrich>(
        &self,
        session_id: i64,
        text: &str,
        now_ms: i64,
        e: &E,
    ) -> Result<(String, i64)> {
        let id = format!(
            "note:{now_ms}:{}",
            &blake3::hash(text.as_bytes()).to_hex()[..12]
        );
        let mut rec = Record::Message(Message {
            id: id.clone(),
            role: Role::Assistant,
            kind: Kind::Note,
            parts: vec![Part::Text {
                text: text.to_string(),
            }],
            timestamp: Some(now_ms),
            model: None,
        });
        e.redact_record(&mut rec);
        let Record::Message(m) = rec else {
            unreachable!("redaction keeps the record's variant")
        };
        self.upsert_message(session_id, m, e)?;
        self.tx
            .execute(
                "UPDATE sessions SET updated_at = MAX(COALESCE(updated_at, 0), ?2) WHERE id = ?1",
                params![session_id, now_ms],
            )
            .db()?;
        let seq: i64 = self
            .tx
            .query_row(
                "SELECT seq FROM messages WHERE session_id = ?1 AND ext_id = ?2",
                params![session_id, id],
                |r| r.get(0),
            )
            .db()?;
        Ok((id, seq))
    }

    pub(crate) fn index_calls(&self, session_id: i64, rowid: i64, m: &Message) -> Result<()> {
        let mut stmt = self.tx.prepare_cached(
            "INSERT INTO tool_calls (session_id, call_id, message_id, name, tool, is_error, has_output)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (session_id, call_id) DO UPDATE SET message_id = excluded.message_id,
                name = excluded.name, tool = excluded.tool, is_error = excluded.is_error,
                has_output = excluded.has_output",
        ).db()?;
        for c in m.tool_calls() {
            stmt.execute(params![
                session_id,
                c.id,
                rowid,
                c.name,
                c.tool,
                c.is_error,
                c.output.is_some()
            ])
            .db()?;
        }
        Ok(())
    }

    /// Attach a tool result to the stored call `call_id`. False when no such call is stored.
    fn attach_result<E: Enrich>(
        &self,
        session_id: i64,
        call_id: &str,
        output: &str,
        is_error: bool,
        exit_code: Option<i64>,
        e: &E,
    ) -> Result<bool> {
        let row: Option<(i64, String, String, String)> = self
            .tx
            .prepare_cached(
                "SELECT m.id, m.ext_id, memtrail_parts(m.parts_zdict, m.body), m.kind FROM tool_calls c JOIN messages m ON m.id = c.message_id
                 WHERE c.session_id = ?1 AND c.call_id = ?2",
            ).db()?
            .query_row(params![session_id, call_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional().db()?;
        let Some((rowid, ext_id, parts_json, kind)) = row else {
            return Ok(false);
        };
        let mut parts: Vec<Part> = serde_json::from_str(&parts_json).unwrap_or_default();
        let mut changed = false;
        for p in parts.iter_mut() {
            if let Part::ToolCall(c) = p
                && c.id == call_id
                && (c.output.as_deref() != Some(output)
                    || c.is_error != is_error
                    || c.exit_code != exit_code)
            {
                c.output = Some(output.to_string());
                c.is_error = is_error;
                c.exit_code = exit_code;
                changed = true;
            }
        }
        if changed {
            let mut m = Message {
                id: ext_id,
                role: Role::Assistant,
                kind: kind_from_str(&kind),
                parts,
                timestamp: None,
                model: None,
            };
            e.redact_merged(&mut m);
            self.update_message_row(session_id, rowid, &m, e)?;
        }
        Ok(true)
    }
}

/// The events of message `m` of an `agent` session, as `e` extracts them.
/// The events of message `m` of an `agent` session as the store writes them (before their
/// texts are redacted): what `e` extracts, and a note's own event.
pub fn message_events<E: Enrich>(agent: Agent, m: &Message, e: &E) -> Vec<Event> {
    events_of(agent, m, e)
}

fn events_of<E: Enrich>(agent: Agent, m: &Message, e: &E) -> Vec<Event> {
    let mut events = e.events(agent, m);
    if m.kind == Kind::Note && !events.iter().any(|e| e.category == Category::Note) {
        // A note is its own event whatever the extractor makes of its text.
        events.push(note_event(m));
    }
    events
}

/// The `note` event of a note message (its first line as the subject, at most 500 bytes).
fn note_event(m: &Message) -> Event {
    let text = m.text();
    Event {
        category: Category::Note,
        action: "kept".to_string(),
        priority: 1,
        subject: cap(text.lines().next().unwrap_or(""), 500).to_string(),
        detail: (text.len() > 500 || text.lines().count() > 1)
            .then(|| cap(&text, 2000).to_string()),
        call_id: None,
        tool: None,
        ts: m.timestamp,
    }
}
