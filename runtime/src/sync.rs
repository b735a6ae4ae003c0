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

/// The longest value, in bytes, PostgreSQL is given to index as it is ([`postgres_key`]):
/// its B-tree entries hold at most 2,704 bytes, and an index holds up to two such values
/// beside short ones (sessions are unique on machine, agent and id; an agent is memtrail's own
/// name for it).
pub const KEY_MAX: usize = 1200;

/// How much of a value [`postgres_key`] keeps before its hash, in bytes at most.
const KEY_KEPT: usize = 1100;

/// Whether `k` ends as [`postgres_key`]'s keys do: `…#` and 32 lowercase hex digits.
fn looks_keyed(k: &str) -> bool {
    k.len() >= 36
        && k.is_char_boundary(k.len() - 36)
        && k[..k.len() - 32].ends_with("…#")
        && k[k.len() - 32..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// `k` as PostgreSQL stores and indexes it ([`PushBatch::fit_for_postgres`]): `k` itself when
/// it has no NUL, is at most [`KEY_MAX`] bytes and does not end as a key does; else a key: `k`
/// with each NUL replaced by U+FFFD, cut to at most 1,100 bytes at a character's end, then
/// `…#` and the first 32 hex digits of the BLAKE3 hash of the whole of `k` (at most 1,136
/// bytes). A value kept as it is never ends as a key does, so two different values give the
/// same result only on a hash collision; a key is not a key of itself (`postgres_key` of a
/// key is another key): give it only values of this machine, never ones PostgreSQL gave.
pub fn postgres_key(k: &str) -> std::borrow::Cow<'_, str> {
    if k.len() <= KEY_MAX && !k.contains('\0') && !looks_keyed(k) {
        return std::borrow::Cow::Borrowed(k);
    }
    let shown = k.replace('\0', "\u{FFFD}");
    let mut cut = shown.len().min(KEY_KEPT);
    while !shown.is_char_boundary(cut) {
        cut -= 1;
    }
    let hash = blake3::hash(k.as_bytes()).to_hex();
    std::borrow::Cow::Owned(format!("{}…#{}", &shown[..cut], &hash[..32]))
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

    /// The batch made fit for PostgreSQL, whose `text` cannot hold NUL (it refuses the whole
    /// statement: SQLSTATE 22021, "invalid byte sequence for encoding \"UTF8\": 0x00") and
    /// whose B-tree indexes refuse an entry over 2,704 bytes (SQLSTATE 54000), either of which
    /// made every later push fail:
    ///
    /// - the values PostgreSQL indexes (session, message and tool call ids, agents, a
    ///   session's project folder, models, tool names) go through [`postgres_key`]: one that
    ///   holds a NUL or is over [`KEY_MAX`] bytes becomes its beginning and a hash of it, the
    ///   same wherever it occurs (a message's id in its tool calls, events, vectors and its
    ///   session's message set), and never equal to another id, with a NUL or without. The
    ///   deletions of sessions of other machines (`me` is this one) keep their ids: those came
    ///   from PostgreSQL as it holds them;
    /// - every other text has each U+0000 replaced by U+FFFD, the replacement character (a
    ///   tool's output of a binary file; JSON's `\u0000`). Both are word separators to both
    ///   stores' full-text search.
    ///
    /// The parts' JSON never holds a raw NUL (JSON escapes it). The local store keeps its text
    /// and ids as they are. Returns how many values were changed. Cost: one `memchr` pass over
    /// the batch's text when nothing needs changing.
    pub fn fit_for_postgres(&mut self, me: &str) -> usize {
        let mut changed = 0;
        let mut key = |t: &mut String| {
            if let std::borrow::Cow::Owned(k) = postgres_key(t) {
                *t = k;
                changed += 1;
            }
        };
        for d in self.deletions.iter_mut().filter(|d| d.machine == me) {
            key(&mut d.agent);
            key(&mut d.external_id);
        }
        for s in &mut self.sessions {
            let x = &mut s.session;
            key(&mut x.agent);
            key(&mut x.external_id);
            for t in [&mut x.parent_external_id, &mut x.project_dir, &mut x.model] {
                t.as_mut().map(&mut key);
            }
            for m in &mut s.messages {
                key(&mut m.ext_id);
                m.model.as_mut().map(&mut key);
                for c in &mut m.tool_calls {
                    key(&mut c.call_id);
                    key(&mut c.name);
                    key(&mut c.tool);
                }
                for e in &mut m.events {
                    for t in [&mut e.call_id, &mut e.tool] {
                        t.as_mut().map(&mut key);
                    }
                }
            }
            for id in s.message_set.iter_mut().flatten() {
                key(id);
            }
            for snap in s.snapshots.iter_mut().flatten() {
                // The id of the session that consumed it.
                snap.consumed_by.as_mut().map(&mut key);
            }
            for v in &mut s.vectors {
                key(&mut v.ext_id);
                key(&mut v.model);
            }
        }
        let mut fix = |t: &mut String| {
            if t.contains('\0') {
                *t = t.replace('\0', "\u{FFFD}");
                changed += 1;
            }
        };
        for d in &mut self.deletions {
            // A deletion of another machine's session: its ids as PostgreSQL gave them.
            fix(&mut d.machine);
            fix(&mut d.agent);
            fix(&mut d.external_id);
        }
        for s in &mut self.sessions {
            fix(&mut s.machine);
            let x = &mut s.session;
            for t in [&mut x.title, &mut x.git_branch, &mut x.agent_version] {
                t.as_mut().map(&mut fix);
            }
            for m in &mut s.messages {
                for t in [
                    &mut m.role,
                    &mut m.kind,
                    &mut m.body,
                    &mut m.tools,
                    &mut m.parts,
                ] {
                    fix(t);
                }
                m.cjk.as_mut().map(&mut fix);
                for e in &mut m.events {
                    fix(&mut e.category);
                    fix(&mut e.action);
                    fix(&mut e.subject);
                    e.detail.as_mut().map(&mut fix);
                }
            }
            for snap in s.snapshots.iter_mut().flatten() {
                fix(&mut snap.trigger);
                fix(&mut snap.text);
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

    /// Every text of a push batch loses its NUL (PostgreSQL's `text` holds none): an indexed
    /// value becomes its [`postgres_key`], the same wherever it occurs, another text has U+FFFD
    /// in its place; a batch without one is left as it is.
    #[test]
    fn every_text_of_a_push_batch_loses_its_nul() {
        let mut b = batch_with_nul();
        let before = serde_json::to_string(&b).unwrap();
        assert_eq!(before.matches("\\u0000").count(), 35);
        assert_eq!(b.fit_for_postgres("dm\0dm"), 35);
        let after = serde_json::to_string(&b).unwrap();
        assert!(!after.contains("\\u0000"), "{after}");
        let m = &b.sessions[0].messages[0];
        assert_eq!(m.body, "b\u{FFFD}b");
        assert_eq!(b.sessions[0].session.title.as_deref(), Some("ti\u{FFFD}ti"));
        assert_eq!(m.ext_id, postgres_key("x\0x"));
        assert!(m.ext_id.starts_with("x\u{FFFD}x…#"), "{}", m.ext_id);
        assert_eq!(b.sessions[0].message_set.as_ref().unwrap()[0], m.ext_id);
        assert_eq!(b.sessions[0].vectors[0].ext_id, m.ext_id);
        assert_eq!(m.tool_calls[0].call_id, postgres_key("ci\0ci"));
        assert_eq!(b.deletions[0].external_id, postgres_key("de\0de"));
        assert_eq!(
            b.sessions[0].snapshots.as_ref().unwrap()[0]
                .consumed_by
                .as_deref(),
            Some(postgres_key("cb\0cb").as_ref())
        );
        // A deletion of another machine's session keeps the id PostgreSQL gave it, even one
        // in the form of a key.
        let mut other = batch_with_nul();
        let pulled = postgres_key("de\0de").into_owned();
        other.deletions[0].external_id = pulled.clone();
        other.fit_for_postgres("this machine");
        assert_eq!(other.deletions[0].external_id, pulled);
        assert_eq!(other.deletions[0].agent, "da\u{FFFD}da");
    }

    /// An id with a NUL, or too long to index, becomes its beginning and a hash: never the id
    /// it would be with U+FFFD for the NUL, short enough, cut at a character's end.
    #[test]
    fn a_key_postgresql_cannot_index_becomes_its_beginning_and_a_hash() {
        assert!(matches!(
            postgres_key("dup"),
            std::borrow::Cow::Borrowed("dup")
        ));
        let nul = postgres_key("dup\0");
        assert!(
            nul.starts_with("dup\u{FFFD}…#") && nul.len() == 3 + 3 + 4 + 32,
            "{nul}"
        );
        assert_ne!(nul, postgres_key("dup\0\0"));
        // A value written in the form of another's key is made a key of its own: no two
        // values give the same result (they would be one row, or two rows of one statement).
        let forged = postgres_key(&nul).into_owned();
        let distinct = std::collections::HashSet::from([
            nul.clone().into_owned(),
            forged.clone(),
            postgres_key("dup\u{FFFD}").into_owned(),
        ]);
        assert_eq!(distinct.len(), 3, "{distinct:?}");
        assert!(looks_keyed(&nul) && looks_keyed(&forged) && !looks_keyed("dup\u{FFFD}"));
        // NULs grow by two bytes each as U+FFFD: the key is cut after, within its bound.
        let nuls = postgres_key(&"\0".repeat(600)).into_owned();
        assert_eq!(nuls.len(), 1098 + 4 + 32);
        assert!(!nuls.contains('\0') && nuls.len() <= KEY_MAX);
        let kept = "é".repeat(KEY_MAX / 2);
        assert_eq!(postgres_key(&kept), kept.as_str());
        let long = "é".repeat(KEY_MAX / 2 + 1);
        let k = postgres_key(&long);
        assert!(k.starts_with(&"é".repeat(550)), "{k}");
        assert_eq!(k.len(), 1100 + "…#".len() + 32);
        assert_ne!(k, postgres_key(&"é".repeat(KEY_MAX)));
        // Cut at a character's end: 1,098 bytes of a 3-byte character's run.
        let euros = "€".repeat(500);
        let k = postgres_key(&euros);
        assert!(k.starts_with(&"€".repeat(366)) && !k.starts_with(&"€".repeat(367)));
    }
}
