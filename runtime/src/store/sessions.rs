//! Lookups of stored sessions for ingest and the MCP server. For ingest, a session named by
//! (agent, external id) is this machine's (`origin` `''`): pulled sessions are never ingested into.

use super::Db;
use super::Store;
use crate::Result;
use rusqlite::{OptionalExtension, params};

impl Store {
    /// The project directory stored for session `external_id` of `agent` (`None` when the
    /// session is not stored or has none).
    pub fn session_project(&self, agent: &str, external_id: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row(
                "SELECT project_dir FROM sessions WHERE agent = ?1 AND external_id = ?2
                 AND origin = ''",
                params![agent, external_id],
                |r| r.get::<_, Option<String>>(0),
            )
            .optional()
            .db()?
            .flatten())
    }

    /// The distinct project directories of the stored sessions (at most 10 000).
    pub fn known_projects(&self) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare(
            "SELECT DISTINCT project_dir FROM sessions WHERE project_dir IS NOT NULL LIMIT 10000",
        ).db()?;
        let known = stmt
            .query_map([], |r| r.get(0))
            .db()?
            .collect::<rusqlite::Result<_>>()
            .db()?;
        Ok(known)
    }

    /// Whether session `external_id` of `agent` is stored.
    pub fn session_stored(&self, agent: &str, external_id: &str) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM sessions WHERE agent = ?1 AND external_id = ?2
                 AND origin = '')",
                params![agent, external_id],
                |r| r.get(0),
            )
            .db()
    }

    /// Whether a transcript cursor of `agent` holds the delete marker
    /// ([`crate::privacy::SkipReason::Deleted`]) of session `first` or `second`.
    pub fn deleted_marker(&self, agent: &str, first: &str, second: &str) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM sources WHERE agent = ?1 AND json_valid(reader_state)
                 AND json_extract(reader_state, '$.memtrail_skip') = 'deleted'
                 AND json_extract(reader_state, '$.session') IN (?2, ?3))",
                params![agent, first, second],
                |r| r.get(0),
            )
            .db()
    }

    /// When no transcript cursor holds a delete marker ([`crate::privacy::SkipReason::Deleted`]),
    /// the store's `PRAGMA data_version` read just before that was checked, else `None`. While
    /// `data_version` stays the same no other connection has committed, so there is still no
    /// marker unless this connection wrote one ([`Store::unchanged_since_version`] tells).
    /// One scan of `sources`, as [`Store::deleted_marker`] makes for one session.
    pub fn no_deleted_markers(&self) -> Result<Option<i64>> {
        let version = self.data_version()?;
        let any: bool = self
            .conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM sources WHERE json_valid(reader_state)
                 AND json_extract(reader_state, '$.memtrail_skip') = 'deleted')",
                [],
                |r| r.get(0),
            )
            .db()?;
        Ok((!any).then_some(version))
    }

    /// True when no other connection has committed to the store since `version` (a
    /// `PRAGMA data_version` this connection read).
    pub fn unchanged_since_version(&self, version: i64) -> Result<bool> {
        Ok(self.data_version()? == version)
    }

    fn data_version(&self) -> Result<i64> {
        self.conn
            .pragma_query_value(None, "data_version", |r| r.get(0))
            .db()
    }

    /// Whether session `external_id` of `agent` has a message at position `seq` (0-based) or
    /// later. The session is the one [`crate::query::resolve_session`] picks (this machine's
    /// before a pulled one with the same ids): the MCP server pages through pulled sessions too.
    pub fn has_messages_from(&self, agent: &str, external_id: &str, seq: i64) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT EXISTS(SELECT 1 FROM messages m WHERE m.session_id =
                    (SELECT id FROM sessions WHERE agent = ?1 AND external_id = ?2
                     ORDER BY origin != '', updated_at DESC LIMIT 1)
                 AND m.seq >= ?3)",
                params![agent, external_id, seq],
                |r| r.get(0),
            )
            .db()
    }
}
