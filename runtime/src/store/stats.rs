//! Figures of the store for `memtrail status`: sizes, counts per agent, hook runs.

use super::Db;
use super::Store;
use crate::Result;
use crate::records::Enrich;
use memtrail_adapters::Agent;
use rusqlite::params;

/// Summary figures of the store.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StoreStats {
    pub path: String,
    pub size_bytes: u64,
    pub schema_version: i64,
    pub sessions: i64,
    pub messages: i64,
    /// Per agent: (agent, sessions, messages).
    pub per_agent: Vec<(String, i64, i64)>,
    /// Messages written but not yet in the full-text index ([`Store::pending_index`]).
    pub unindexed: i64,
    /// The model of the stored vectors (`name@version/dim`); `None` before any `memtrail embed`.
    pub embed_model: Option<String>,
    /// Messages waiting to be embedded by that model ([`Store::embed_backlog`]); 0 without one.
    pub unembedded: i64,
    /// The store holds messages of a memtrail from before schema 13, kept uncompressed until
    /// `memtrail repair` compresses them: more than half its 100 oldest messages store their
    /// tool text (a row written since stores it only when sync capped it apart or its parts do
    /// not parse).
    pub uncompressed: bool,
    /// A delete, purge or rescan could not fold the WAL back (a reader held on): the old text
    /// is still in the store's files until the next hook or import does
    /// ([`crate::maintenance::scrub_pending`]).
    pub scrub_pending: bool,
}

/// The last run of a hook, for status.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HookRun {
    pub agent: String,
    pub event: String,
    /// ms since the Unix epoch.
    pub at: i64,
    pub duration_us: i64,
    pub session: Option<String>,
    pub messages: i64,
    pub error: Option<String>,
}

/// Sessions and messages per agent, from the index `sessions_by_agent_updated` alone (schema 9).
const PER_AGENT: &str = "SELECT agent, COUNT(*), COALESCE(SUM(message_count), 0) FROM sessions
                         GROUP BY agent ORDER BY agent";

impl Store {
    /// Figures for `memtrail status`.
    pub fn stats(&self) -> Result<StoreStats> {
        let size_bytes = self.location.size_bytes();
        let mut per_agent = Vec::new();
        let mut stmt = self.conn.prepare(PER_AGENT).db()?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .db()?;
        for row in rows {
            per_agent.push(row.db()?);
        }
        let sessions = per_agent.iter().map(|(_, s, _)| s).sum();
        let messages = per_agent.iter().map(|(_, _, m)| m).sum();
        let embed_model = self.embed_model()?;
        let (kept, oldest): (i64, i64) = self
            .conn
            .query_row(
                "SELECT count(tools_text), count(*)
                 FROM (SELECT tools_text FROM messages ORDER BY id LIMIT 100)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .db()?;
        Ok(StoreStats {
            uncompressed: kept * 2 > oldest,
            scrub_pending: super::maintenance::scrub_is_pending(self),
            path: self.location.to_string(),
            size_bytes,
            schema_version: self.schema_version()?,
            sessions,
            messages,
            per_agent,
            unindexed: self.pending_index()?,
            unembedded: match &embed_model {
                Some(m) => self.embed_backlog(m)?,
                None => 0,
            },
            embed_model,
        })
    }

    /// `PRAGMA quick_check`: `Ok(())` or the problems SQLite reports.
    pub fn quick_check(&self) -> Result<std::result::Result<(), String>> {
        let mut stmt = self.conn.prepare("PRAGMA quick_check").db()?;
        let rows: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .db()?
            .collect::<rusqlite::Result<_>>()
            .db()?;
        if rows.len() == 1 && rows[0] == "ok" {
            Ok(Ok(()))
        } else {
            Ok(Err(rows.join("; ")))
        }
    }

    /// The last run of each hook event of `agent`, newest first.
    pub fn hook_runs(&self, agent: Agent) -> Result<Vec<HookRun>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT agent, event, at, duration_us, session, messages, error FROM hook_runs
             WHERE agent = ?1 ORDER BY at DESC",
            )
            .db()?;
        let rows = stmt
            .query_map([agent.as_str()], |r| {
                Ok(HookRun {
                    agent: r.get(0)?,
                    event: r.get(1)?,
                    at: r.get(2)?,
                    duration_us: r.get(3)?,
                    session: r.get(4)?,
                    messages: r.get(5)?,
                    error: r.get(6)?,
                })
            })
            .db()?;
        rows.collect::<rusqlite::Result<_>>().db()
    }

    /// Record a hook run (one row per agent and event, replaced each time); `enrich` redacts its
    /// error (ingest's rules).
    pub fn record_hook_run(&mut self, enrich: &impl Enrich, run: &HookRun) -> Result<()> {
        self.write(|w| {
            w.tx.execute(
                "INSERT OR REPLACE INTO hook_runs (agent, event, at, duration_us, session, messages, error)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![run.agent, run.event, run.at, run.duration_us, run.session, run.messages,
                        // An error may quote what it failed on: redacted like any text.
                        run.error.as_deref().map(|e| enrich.redact(e))],
            ).db()?;
            Ok(())
        })
    }
}

/// The sessions and messages of the SQLite store at `path`, read without changing it (opened
/// read-only: no migration, no journal mode, no permission change): for `uninstall --purge`,
/// which says what it deletes before it deletes it. `Ok(None)` when the file is not a memtrail
/// store (not SQLite, or without memtrail's schema); `Ok(Some(None))` for a memtrail store
/// whose counts cannot be read (damaged).
///
/// Errors: none beyond those folded into the answer (kept a `Result` for the caller's `?`).
pub fn peek_counts(path: &std::path::Path) -> Result<Option<Option<(i64, i64)>>> {
    use rusqlite::OpenFlags;
    let Ok(conn) = rusqlite::Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) else {
        return Ok(None);
    };
    // As a store is told from another program's database when it is opened: an empty
    // database is not a store either (nothing of memtrail's to delete).
    let real = super::files::resolve_links(path);
    if !matches!(super::file_kind(&conn, &real), Ok(super::FileKind::Store)) {
        return Ok(None);
    }
    Ok(Some(
        conn.query_row(
            "SELECT COUNT(*), COALESCE(SUM(message_count), 0) FROM sessions",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .ok(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `status` counts per agent without reading a session row: SQLite plans the query on the
    /// covering index, and its figures are the sessions' own.
    #[test]
    fn per_agent_figures_read_the_covering_index() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(&d.path().join("a.db")).unwrap();
        s.conn
            .execute_batch(
                "INSERT INTO sessions (id, agent, external_id, message_count, updated_at)
                 VALUES (1, 'codex', 'a', 3, 10), (2, 'claude', 'b', 5, 20),
                        (3, 'claude', 'c', 7, NULL);",
            )
            .unwrap();
        let plan: Vec<String> = s
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {PER_AGENT}"))
            .unwrap()
            .query_map([], |r| r.get(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(
            plan.iter()
                .any(|p| p.contains("COVERING INDEX sessions_by_agent_updated")),
            "{plan:?}"
        );
        let stats = s.stats().unwrap();
        assert_eq!(
            stats.per_agent,
            [("claude".to_string(), 2, 12), ("codex".to_string(), 1, 3)]
        );
        assert_eq!((stats.sessions, stats.messages), (3, 15));
    }
}
