//! The data that `memtrail sync` moves between the local store and a PostgreSQL database (the
//! design is in `docs/sync.md`).
//!
//! The local store produces a [`PushBatch`] from its outbox (every session, message and snapshot
//! written or changed since the last push, and every session deleted); the PostgreSQL side
//! applies it idempotently (natural keys: a batch applied twice leaves what applying it once
//! left) and produces [`PullBatch`]es of what other machines pushed, which the local store
//! applies in one transaction together with the new pull position.
//!
//! Text in these types is already redacted (it comes out of a store, where nothing unredacted is
//! written); the local store redacts pulled text again with its own rules before writing it.

use serde::Serialize;

/// A machine's stable id: 32 lowercase hex digits, generated once by `memtrail sync --init` and
/// kept in memtrail's config (`[sync] machine`). The hostname is only its label.
pub type MachineId = String;

/// A session row (the local `sessions` table without its row id). Times are Unix milliseconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyncSession {
    /// The agent's name (`claude`, `codex`, …).
    pub agent: String,
    /// The agent's own session id.
    pub external_id: String,
    pub parent_external_id: Option<String>,
    pub project_dir: Option<String>,
    pub title: Option<String>,
    pub model: Option<String>,
    pub git_branch: Option<String>,
    pub agent_version: Option<String>,
    pub started_at: Option<i64>,
    pub updated_at: Option<i64>,
    pub message_count: i64,
}

/// A message row, with the tool calls and events that hang off it (both replaced whole when the
/// message is pushed or pulled again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyncMessage {
    /// The message's id within its session (the local `messages.ext_id`): with the session's
    /// key, the message's key everywhere.
    pub ext_id: String,
    pub seq: i64,
    pub role: String,
    pub kind: String,
    pub ts: Option<i64>,
    pub model: Option<String>,
    pub body: String,
    pub tools: String,
    pub cjk: Option<String>,
    /// The message's parts, JSON as stored locally.
    pub parts: String,
    pub tool_calls: Vec<SyncToolCall>,
    /// In the local order (`events.seq`, then `events.id`); the index is the event's ordinal.
    pub events: Vec<SyncEvent>,
}

/// A tool call row (the local `tool_calls` table; its message is the one it is in).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyncToolCall {
    pub call_id: String,
    pub name: String,
    pub tool: String,
    pub is_error: bool,
    pub has_output: bool,
}

/// An event row (the local `events` table; its session and message are the ones it is in).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyncEvent {
    pub seq: i64,
    pub category: String,
    pub action: String,
    pub priority: i64,
    pub subject: String,
    pub detail: Option<String>,
    pub call_id: Option<String>,
    pub tool: Option<String>,
    pub ts: Option<i64>,
}

/// A snapshot row (the local `snapshots` table); a session's snapshots travel together, in the
/// local order (`built_at`, then `id`), the index being the snapshot's ordinal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyncSnapshot {
    pub built_at: i64,
    pub trigger: String,
    pub budget: i64,
    pub events: i64,
    pub text: String,
    pub consumed_at: Option<i64>,
    pub consumed_by: Option<String>,
}

/// The vectors of one message for search by meaning (the local `message_vectors` rows, see
/// [`crate::store::VectorSet`]): one int8 vector per chunk of its text, `value ≈ scale ×
/// byte`, made by `model` (`name@version/dim`). They replace whatever PostgreSQL holds for the
/// message: an empty `chunks` removes its vectors (the message was rewritten and waits to be
/// embedded again).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyncVectors {
    /// The message's `ext_id` in its session.
    pub ext_id: String,
    /// The model that made them (`name@version/dim`); empty when `chunks` is empty.
    pub model: String,
    /// (scale, int8 components) per chunk, in chunk order.
    pub chunks: Vec<(f32, Vec<i8>)>,
}

/// What changed in one session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionChanges {
    /// The machine whose session it is (its origin).
    pub machine: MachineId,
    /// The session row, always sent whole (it is small).
    pub session: SyncSession,
    /// Messages written or changed (each replaces the stored one with the same `ext_id`).
    pub messages: Vec<SyncMessage>,
    /// `Some`: the session's snapshots, all of them (they replace the stored ones).
    pub snapshots: Option<Vec<SyncSnapshot>>,
    /// `Some`: the `ext_id` of every message the session holds now; stored messages not in
    /// it are deleted (after a rewind, a re-read transcript, `purge`).
    pub message_set: Option<Vec<String>>,
    /// The vectors of the messages pushed (each message's, even none) and of messages
    /// embedded since they were pushed (outbox items below -1).
    pub vectors: Vec<SyncVectors>,
}

/// A deleted session (`sessions delete`, `purge`, or a deletion pulled from another machine).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Deletion {
    /// The session's origin machine.
    pub machine: MachineId,
    pub agent: String,
    pub external_id: String,
    /// When it was deleted, Unix milliseconds.
    pub deleted_at: i64,
}

/// What one push sends: deletions first, then changed sessions. `outbox` and `tombstones`
/// are the local queue entries it covers, acknowledged (removed) only after PostgreSQL
/// committed the batch; an entry changed again meanwhile has a new sequence number and stays.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PushBatch {
    pub deletions: Vec<Deletion>,
    pub sessions: Vec<SessionChanges>,
    /// The local `sync_outbox.seq` values this batch covers.
    pub outbox: Vec<i64>,
    /// The local `sync_tombstones.seq` values this batch covers.
    pub tombstones: Vec<i64>,
}

/// How far in the future (ms) a synced time may be before it is taken as now: a day, for
/// clocks that drift.
pub const FUTURE_SLACK_MS: i64 = 86_400_000;

/// A synced time (ms since the Unix epoch) as pushed or applied: `now` when it is more than
/// [`FUTURE_SLACK_MS`] after `now` (a row dated in the future, by a hostile transcript or a
/// clock set wrong, would stay "the latest" forever).
pub fn not_future(t: i64, now: i64) -> i64 {
    if t > now.saturating_add(FUTURE_SLACK_MS) {
        now
    } else {
        t
    }
}

impl PushBatch {
    /// Every time of the batch more than [`FUTURE_SLACK_MS`] after `now` (Unix milliseconds)
    /// made `now` ([`not_future`]): sessions' start and update, messages', events', snapshots'
    /// builds and uses (a deletion's time is this machine's clock, and it identifies the
    /// deletion: kept). What a pull does to what it applies, done before PostgreSQL
    /// too, where `--store` readers sort by these times.
    pub fn clamp_future(&mut self, now: i64) {
        let at = |t: &mut Option<i64>| {
            if let Some(v) = t {
                *v = not_future(*v, now);
            }
        };
        for s in &mut self.sessions {
            at(&mut s.session.started_at);
            at(&mut s.session.updated_at);
            for m in &mut s.messages {
                at(&mut m.ts);
                for e in &mut m.events {
                    at(&mut e.ts);
                }
            }
            for snap in s.snapshots.iter_mut().flatten() {
                snap.built_at = not_future(snap.built_at, now);
                at(&mut snap.consumed_at);
            }
        }
    }

    /// The session fields the store keeps as the agent wrote them, redacted by `enrich`
    /// before they leave the machine: the project folder (the store matches `.memtrailignore`
    /// files and a project's snapshots by it, so a token in a folder's name stays there), the
    /// model (the session's and each message's) and the agent's version. The title and the
    /// branch were redacted when written, as was every message's text.
    pub fn redact_session_fields(&mut self, enrich: &impl crate::records::Enrich) {
        let redact = |t: &mut Option<String>| {
            if let Some(v) = t
                && let std::borrow::Cow::Owned(r) = enrich.redact(v)
            {
                *v = r;
            }
        };
        for s in &mut self.sessions {
            redact(&mut s.session.project_dir);
            redact(&mut s.session.model);
            redact(&mut s.session.agent_version);
            // Each message's model, kept as written like the session's (a pull redacts it).
            for m in &mut s.messages {
                redact(&mut m.model);
            }
        }
    }

    /// Every U+0000 (NUL) in the batch's texts replaced by U+FFFD, the replacement character:
    /// PostgreSQL's `text` cannot hold NUL (it refuses the whole statement, SQLSTATE 22021,
    /// "invalid byte sequence for encoding \"UTF8\": 0x00"), and transcripts can (a tool's
    /// output of a binary file; JSON's `\u0000`). Every string field is visited, keys too
    /// (consistently, so a session's messages, tool calls, events and message set still agree);
    /// the local store keeps the text as it is. The parts' JSON never holds a raw NUL (JSON
    /// escapes it). Returns how many texts were changed. Cost: one `memchr` pass over the
    /// batch's text when it holds no NUL.
    pub fn replace_nul(&mut self) -> usize {
        let mut changed = 0;
        let mut fix = |t: &mut String| {
            if t.contains('\0') {
                *t = t.replace('\0', "\u{FFFD}");
                changed += 1;
            }
        };
        for d in &mut self.deletions {
            fix(&mut d.machine);
            fix(&mut d.agent);
            fix(&mut d.external_id);
        }
        for s in &mut self.sessions {
            fix(&mut s.machine);
            let x = &mut s.session;
            fix(&mut x.agent);
            fix(&mut x.external_id);
            for t in [
                &mut x.parent_external_id,
                &mut x.project_dir,
                &mut x.title,
                &mut x.model,
                &mut x.git_branch,
                &mut x.agent_version,
            ] {
                t.as_mut().map(&mut fix);
            }
            for m in &mut s.messages {
                for t in [
                    &mut m.ext_id,
                    &mut m.role,
                    &mut m.kind,
                    &mut m.body,
                    &mut m.tools,
                    &mut m.parts,
                ] {
                    fix(t);
                }
                m.model.as_mut().map(&mut fix);
                m.cjk.as_mut().map(&mut fix);
                for c in &mut m.tool_calls {
                    fix(&mut c.call_id);
                    fix(&mut c.name);
                    fix(&mut c.tool);
                }
                for e in &mut m.events {
                    fix(&mut e.category);
                    fix(&mut e.action);
                    fix(&mut e.subject);
                    for t in [&mut e.detail, &mut e.call_id, &mut e.tool] {
                        t.as_mut().map(&mut fix);
                    }
                }
            }
            for snap in s.snapshots.iter_mut().flatten() {
                fix(&mut snap.trigger);
                fix(&mut snap.text);
                snap.consumed_by.as_mut().map(&mut fix);
            }
            for id in s.message_set.iter_mut().flatten() {
                fix(id);
            }
            for v in &mut s.vectors {
                fix(&mut v.ext_id);
                fix(&mut v.model);
            }
        }
        changed
    }

    /// Whether there is nothing to send nor to acknowledge.
    pub fn is_empty(&self) -> bool {
        self.deletions.is_empty()
            && self.sessions.is_empty()
            && self.outbox.is_empty()
            && self.tombstones.is_empty()
    }

    /// The messages the batch carries.
    pub fn message_count(&self) -> usize {
        self.sessions.iter().map(|s| s.messages.len()).sum()
    }

    /// Where the next batch starts when this one follows `before`: after the last outbox and
    /// tombstone entries it covers.
    pub fn cursor_after(&self, before: PushCursor) -> PushCursor {
        PushCursor {
            outbox: self.outbox.last().copied().unwrap_or(before.outbox),
            tombstones: self.tombstones.last().copied().unwrap_or(before.tombstones),
        }
    }
}

/// Where a push has read up to in the local queues: the last `sync_outbox.seq` and
/// `sync_tombstones.seq` taken into a batch (0: nothing yet). Batches read after a cursor
/// ([`crate::Store::push_batch_after`]) let the next batch be read while the previous one is
/// still being pushed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PushCursor {
    pub outbox: i64,
    pub tombstones: i64,
}

/// What one pull step brings from one other machine: its changes with a PostgreSQL revision in
/// `(from_rev, to_rev]`. The local store applies it and sets that machine's pull position to
/// `to_rev` in the same transaction.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PullBatch {
    /// The machine whose pushes these are.
    pub machine: MachineId,
    /// Its label (hostname), for `sessions list`.
    pub label: String,
    pub from_rev: i64,
    pub to_rev: i64,
    /// Sessions that machine deleted (of any origin, this machine's too).
    pub deletions: Vec<Deletion>,
    pub sessions: Vec<SessionChanges>,
}

/// What applying one [`PullBatch`] wrote in the local store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PullApplied {
    /// Sessions written (inserted or updated).
    pub sessions: u64,
    /// Messages written (inserted or updated).
    pub messages: u64,
    /// Sessions deleted by the batch's deletions.
    pub deleted_sessions: u64,
    /// Messages deleted because a session's message set no longer holds them.
    pub deleted_messages: u64,
}

/// What waits in the local store to be pushed (`memtrail sync --status`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SyncPending {
    /// Sessions with at least one queued change.
    pub sessions: u64,
    /// Queued messages (written or changed).
    pub messages: u64,
    /// Deleted sessions not yet pushed.
    pub deletions: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch with a NUL in every text it has (`n` says which, so none equals another).
    fn batch_with_nul() -> PushBatch {
        let t = |n: &str| format!("{n}\0{n}");
        let o = |n: &str| Some(t(n));
        PushBatch {
            deletions: vec![Deletion {
                machine: t("dm"),
                agent: t("da"),
                external_id: t("de"),
                deleted_at: 1,
            }],
            sessions: vec![SessionChanges {
                machine: t("m"),
                session: SyncSession {
                    agent: t("a"),
                    external_id: t("e"),
                    parent_external_id: o("pe"),
                    project_dir: o("pd"),
                    title: o("ti"),
                    model: o("mo"),
                    git_branch: o("gb"),
                    agent_version: o("av"),
                    started_at: Some(1),
                    updated_at: Some(2),
                    message_count: 1,
                },
                messages: vec![SyncMessage {
                    ext_id: t("x"),
                    seq: 0,
                    role: t("r"),
                    kind: t("k"),
                    ts: None,
                    model: o("mm"),
                    body: t("b"),
                    tools: t("to"),
                    cjk: o("c"),
                    parts: t("p"),
                    tool_calls: vec![SyncToolCall {
                        call_id: t("ci"),
                        name: t("n"),
                        tool: t("tt"),
                        is_error: false,
                        has_output: true,
                    }],
                    events: vec![SyncEvent {
                        seq: 0,
                        category: t("ca"),
                        action: t("ac"),
                        priority: 1,
                        subject: t("su"),
                        detail: o("de"),
                        call_id: o("ec"),
                        tool: o("et"),
                        ts: None,
                    }],
                }],
                snapshots: Some(vec![SyncSnapshot {
                    built_at: 1,
                    trigger: t("tr"),
                    budget: 1,
                    events: 1,
                    text: t("st"),
                    consumed_at: None,
                    consumed_by: o("cb"),
                }]),
                message_set: Some(vec![t("x")]),
                vectors: vec![SyncVectors {
                    ext_id: t("x"),
                    model: t("vm"),
                    chunks: vec![(1.0, vec![1])],
                }],
            }],
            outbox: vec![1],
            tombstones: vec![],
        }
    }

    /// Every text of a push batch loses its NUL (PostgreSQL's `text` holds none), each for
    /// U+FFFD and nothing else; a batch without one is left as it is.
    #[test]
    fn every_text_of_a_push_batch_loses_its_nul() {
        let mut b = batch_with_nul();
        let before = serde_json::to_string(&b).unwrap();
        let nuls = before.matches("\\u0000").count();
        assert_eq!(nuls, 35);
        assert_eq!(b.replace_nul(), nuls);
        let after = serde_json::to_string(&b).unwrap();
        assert!(!after.contains("\\u0000"), "{after}");
        assert_eq!(after, before.replace("\\u0000", "\u{FFFD}"));
        assert_eq!(b.sessions[0].messages[0].body, "b\u{FFFD}b");
        let clean = b.clone();
        assert_eq!(b.replace_nul(), 0);
        assert_eq!(b, clean);
    }
}
