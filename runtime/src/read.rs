//! The read side of a store, as one interface: [`ReadStore`]. What `search`, `sessions
//! list/show`, `resume`, `handoff` and the MCP server's read tools ask a store, answered by the
//! local SQLite [`Store`] (the functions of `store::queries` and `store::recall`) and by a
//! PostgreSQL database that `memtrail sync` fills (`memtrail-pg`'s reader, `--store
//! postgres://…`).
//!
//! Sessions are named by a row id (`i64`) that is the backend's own (SQLite's `sessions.id`,
//! PostgreSQL's `sessions.id`): get one from [`ReadStore::resolve_session`] or a list, use it
//! with the same store only.

use crate::Result;
use crate::events::StoredEvent;
use crate::query::{Hit, ListFilter, SearchFilter, SessionSummary, SessionView};
use crate::store::Store;

/// One message as a resume context or a handoff quotes it: its prose, else its tool text.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateMessage {
    /// The session's id (the agent's own).
    pub session_id: String,
    /// 0-based position of the message in its session.
    pub index: i64,
    /// `user`, `assistant`, `tool` or `system`.
    pub role: String,
    /// When it was written: RFC 3339 UTC with milliseconds; `None` when unknown.
    pub timestamp: Option<String>,
    /// Its prose, or its flattened tool calls when it has no prose.
    pub text: String,
}

/// The read operations of a store (object safe: commands and the MCP server take `&dyn
/// ReadStore`). Every method answers from the store as it is now; none writes, except that the
/// SQLite store indexes the messages queued for its full-text index before a search (see
/// [`Store::catch_up_for_search`]).
///
/// Errors: [`crate::Error::NotFound`] for an unknown session, [`crate::Error::Invalid`] for an
/// ambiguous prefix or a query without a searchable word, and the backend's errors
/// ([`crate::Error::Store`] for SQLite, [`crate::Error::Remote`] for PostgreSQL).
pub trait ReadStore {
    /// The row id of the session with agent id `id` (exact, else a unique prefix; a main
    /// session before its sub-agents `<id>/…`), of `agent` when given.
    fn resolve_session(&self, id: &str, agent: Option<&str>) -> Result<i64>;

    /// The session with row id `rowid`.
    fn session_summary(&self, rowid: i64) -> Result<SessionSummary>;

    /// Sessions, most recently updated first, filtered by `f`, at most `f.limit` (1 to 100,000).
    fn list_sessions(&self, f: &ListFilter) -> Result<Vec<SessionSummary>>;

    /// Session `id` (agent id or unique prefix) with its messages from index `offset`, at most
    /// `limit` of them; tool outputs longer than `max_output` bytes cut with a note.
    fn get_session(
        &self,
        id: &str,
        agent: Option<&str>,
        offset: i64,
        limit: i64,
        max_output: Option<usize>,
    ) -> Result<SessionView>;

    /// Whether session `external_id` of `agent` has a message at position `seq` (0-based) or
    /// later.
    fn has_messages_from(&self, agent: &str, external_id: &str, seq: i64) -> Result<bool>;

    /// Full-text search: the best `f.limit` hits (1 to 500), snippets marked with
    /// [`crate::query::HL_START`] / [`crate::query::HL_END`], ranked as
    /// [`crate::query::search`] describes.
    fn search(&self, query: &str, f: &SearchFilter) -> Result<Vec<Hit>> {
        self.search_ranking(query, f).map(|r| r.hits)
    }

    /// [`ReadStore::search`], and whether its ranking stopped at the bound of
    /// [`crate::query::SEARCH_CANDIDATES`] newest matches ([`crate::query::Ranking`]).
    ///
    /// Errors: as [`ReadStore::search`].
    fn search_ranking(&self, query: &str, f: &SearchFilter) -> Result<crate::query::Ranking>;

    /// The handle that stops this reader for good from another thread, when it was made
    /// stoppable ([`crate::store::Store::make_stoppable`], or the PostgreSQL reader's own,
    /// which cancels the statement running on the server); `None` otherwise.
    fn stopper(&self) -> Option<crate::store::Stop> {
        None
    }

    /// False once this reader's store is gone from under it (the SQLite file deleted, e.g. by
    /// `memtrail uninstall --purge`, or replaced): a long-running server opens the store again
    /// instead of answering from the deleted file ([`Store::is_current`]). A server's store
    /// (PostgreSQL) is always current.
    fn is_current(&self) -> bool {
        true
    }

    /// Whether the store ranks vectors itself and holds some made by `model`
    /// (`name@version/dim`): a PostgreSQL store with pgvector ([`ReadStore::nearest`]). The
    /// SQLite store answers `false`: its vectors are scanned in memory by the embedding crate.
    ///
    /// Errors: [`crate::Error::Invalid`] (saying why and what to do) when the store cannot hold
    /// vectors: a PostgreSQL database without pgvector.
    fn has_vectors_of(&self, _model: &str) -> Result<bool> {
        Ok(false)
    }

    /// Search by meaning in the store itself: the messages whose vectors made by `model` are
    /// nearest `query` (the query's vector, `model`'s dimension, unit length), by inner
    /// product (best chunk per message), that pass `f`'s filters and do not match `excluded`
    /// (items of [`crate::query::parse_query`]'s shape, matched as the full-text search
    /// matches them; an empty list excludes nothing); at most `f.limit` hits
    /// (1 to 500), best first, `score` the inner product, snippets the message's first
    /// characters without highlights.
    ///
    /// Errors: [`crate::Error::Invalid`] where the store does not rank vectors (the SQLite store) or
    /// has none (a PostgreSQL server without pgvector); as [`ReadStore::search`].
    fn nearest(
        &self,
        _model: &str,
        _query: &[f32],
        _excluded: &[crate::query::QueryItem],
        _f: &SearchFilter,
    ) -> Result<Vec<Hit>> {
        Err(crate::Error::Invalid(
            "this store does not search by meaning itself".into(),
        ))
    }

    /// Messages stored but not yet searchable (the SQLite store's index queue, when another
    /// process held the write lock during the search); 0 where everything stored is searchable.
    fn unindexed(&self) -> i64 {
        0
    }

    /// The stored events of session `rowid`, in session order (`seq`, then the event's id).
    fn session_events(&self, rowid: i64) -> Result<Vec<StoredEvent>>;

    /// The events a snapshot of session `rowid` is built from: [`ReadStore::session_events`],
    /// where `message_id` and `ts` may be left empty (no snapshot reads them).
    fn snapshot_events(&self, rowid: i64) -> Result<Vec<StoredEvent>> {
        self.session_events(rowid)
    }

    /// The snapshot of session `rowid` within `budget` bytes: [`crate::snapshot::build`] over
    /// [`crate::resume::snapshot_input`]. A local store reads it from the session's running
    /// state when it has a valid one ([`Store::snapshot`]): the same text.
    fn build_snapshot(&self, rowid: i64, budget: usize) -> Result<crate::snapshot::Snapshot> {
        Ok(crate::snapshot::build(
            &crate::resume::snapshot_input(self, rowid)?,
            budget,
        ))
    }

    /// The latest main session whose project is `dir` or contains it, of `agent` when given,
    /// not `exclude`; `None` when there is none. A local store considers only this machine's
    /// own sessions (not pulled ones): the hook injects what this returns.
    fn latest_session_for_dir(
        &self,
        dir: &str,
        agent: Option<&str>,
        exclude: Option<i64>,
    ) -> Result<Option<i64>>;

    /// How many main sessions other than `exclude` have `dir` as (or inside) their project, and
    /// the time (ms since the Unix epoch) of the latest; a local store counts only this
    /// machine's own sessions (not pulled ones).
    fn earlier_sessions_of_dir(
        &self,
        dir: &str,
        exclude: Option<i64>,
    ) -> Result<(usize, Option<i64>)>;

    /// Message `index` of session `session_id` of `agent`; `None` when there is none.
    fn message_text(
        &self,
        agent: &str,
        session_id: &str,
        index: i64,
    ) -> Result<Option<CandidateMessage>>;

    /// The latest `n` user and assistant messages with prose of session `rowid` (whose agent id
    /// is `session_id`), newest first.
    fn recent_messages(
        &self,
        rowid: i64,
        session_id: &str,
        n: usize,
    ) -> Result<Vec<CandidateMessage>>;

    /// The first and the last user prompt of session `rowid` (prose only).
    fn first_and_last_prompt(&self, rowid: i64) -> Result<(Option<String>, Option<String>)>;

    /// The prose of the last assistant message of session `rowid` that has some.
    fn last_answer(&self, rowid: i64) -> Result<Option<String>>;

    /// Whether a session with id (or id prefix) `id` was deleted from this store (`sessions
    /// delete`); false where deletions are not kept.
    fn is_deleted(&self, _id: &str) -> Result<bool> {
        Ok(false)
    }

    /// Activity figures for the days of `range` (tools and files: all time), as
    /// [`crate::analytics`] defines them.
    fn analytics(&self, range: crate::analytics::DayRange) -> Result<crate::analytics::Analytics>;

    /// The agents of [`memtrail_adapters::Agent::ALL`] with at least one stored session (pulled
    /// ones included), in that order: what an agent filter offers. One index lookup per agent.
    fn agents_with_sessions(&self) -> Result<Vec<memtrail_adapters::Agent>>;
}

impl ReadStore for Store {
    fn stopper(&self) -> Option<crate::store::Stop> {
        Store::stopper(self)
    }

    fn is_current(&self) -> bool {
        Store::is_current(self)
    }

    fn resolve_session(&self, id: &str, agent: Option<&str>) -> Result<i64> {
        crate::store::queries::resolve_session(self, id, agent)
    }

    fn session_summary(&self, rowid: i64) -> Result<SessionSummary> {
        crate::store::queries::session_summary(self, rowid)
    }

    fn list_sessions(&self, f: &ListFilter) -> Result<Vec<SessionSummary>> {
        crate::store::queries::list_sessions(self, f)
    }

    fn get_session(
        &self,
        id: &str,
        agent: Option<&str>,
        offset: i64,
        limit: i64,
        max_output: Option<usize>,
    ) -> Result<SessionView> {
        crate::store::queries::get_session(self, id, agent, offset, limit, max_output)
    }

    fn has_messages_from(&self, agent: &str, external_id: &str, seq: i64) -> Result<bool> {
        Store::has_messages_from(self, agent, external_id, seq)
    }

    fn search_ranking(&self, query: &str, f: &SearchFilter) -> Result<crate::query::Ranking> {
        crate::store::queries::search_ranking(self, query, f)
    }

    fn unindexed(&self) -> i64 {
        self.pending_index().unwrap_or(0)
    }

    fn analytics(&self, range: crate::analytics::DayRange) -> Result<crate::analytics::Analytics> {
        crate::store::analytics::analytics(self, range)
    }

    fn agents_with_sessions(&self) -> Result<Vec<memtrail_adapters::Agent>> {
        crate::store::queries::agents_with_sessions(self)
    }

    fn session_events(&self, rowid: i64) -> Result<Vec<StoredEvent>> {
        crate::store::recall::session_events(self, rowid)
    }

    fn snapshot_events(&self, rowid: i64) -> Result<Vec<StoredEvent>> {
        crate::store::recall::snapshot_events(self, rowid)
    }

    fn build_snapshot(&self, rowid: i64, budget: usize) -> Result<crate::snapshot::Snapshot> {
        Store::snapshot(self, rowid, budget)
    }

    fn latest_session_for_dir(
        &self,
        dir: &str,
        agent: Option<&str>,
        exclude: Option<i64>,
    ) -> Result<Option<i64>> {
        crate::store::recall::latest_session_for_dir(self, dir, agent, exclude)
    }

    fn earlier_sessions_of_dir(
        &self,
        dir: &str,
        exclude: Option<i64>,
    ) -> Result<(usize, Option<i64>)> {
        crate::store::recall::earlier_sessions_of_dir(self, dir, exclude)
    }

    fn message_text(
        &self,
        agent: &str,
        session_id: &str,
        index: i64,
    ) -> Result<Option<CandidateMessage>> {
        crate::store::recall::message_text(self, agent, session_id, index)
    }

    fn recent_messages(
        &self,
        rowid: i64,
        session_id: &str,
        n: usize,
    ) -> Result<Vec<CandidateMessage>> {
        crate::store::recall::recent_messages(self, rowid, session_id, n)
    }

    fn first_and_last_prompt(&self, rowid: i64) -> Result<(Option<String>, Option<String>)> {
        crate::store::recall::first_and_last_prompt(self, rowid)
    }

    fn last_answer(&self, rowid: i64) -> Result<Option<String>> {
        crate::store::recall::last_answer(self, rowid)
    }

    fn is_deleted(&self, id: &str) -> Result<bool> {
        crate::store::maintenance::is_deleted(self, id)
    }
}
