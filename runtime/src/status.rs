//! The store's and the transcripts' part of `memtrail status`: the store's figures, its quick
//! integrity check and the last run of each hook event, the transcripts each agent keeps on
//! disk, and Claude Code's transcript retention, as the serde types of `status --json`
//! (schema: docs/json.md). The registration part is the installer's (`AgentStatus`).

use crate::Store;
use crate::maintenance::Retention;
use crate::store::{HookRun, StoreStats};
use memtrail_adapters::{Agent, format_rfc3339_ms};
use serde::Serialize;

/// The largest store `status` runs the quick integrity check on by default: 8 MB (the check
/// reads the whole file, about 5 ms per MB; `status` stays within 50 ms).
pub const STATUS_CHECK_MAX_BYTES: u64 = 8 << 20;

/// What `status` reads from the store.
#[derive(Debug, Clone)]
pub struct StoreInfo {
    /// The store's figures.
    pub stats: StoreStats,
    /// SQLite's quick integrity check: `Err` holds its findings; `None` when skipped (a store
    /// over [`STATUS_CHECK_MAX_BYTES`] without `--check`).
    pub check: Option<Result<(), String>>,
    /// Per agent asked for (same order), the last run of each of its hook events.
    pub runs: Vec<Vec<HookRun>>,
}

impl StoreInfo {
    /// Read the figures, run the quick integrity check (always with `force_check`, else on a
    /// store of at most [`STATUS_CHECK_MAX_BYTES`]) and each agent's last hook runs.
    ///
    /// Errors: the store's ([`crate::Error`]), for a store that cannot be read.
    pub fn read(store: &Store, agents: &[Agent], force_check: bool) -> crate::Result<StoreInfo> {
        let stats = store.stats()?;
        let check = if force_check || stats.size_bytes <= STATUS_CHECK_MAX_BYTES {
            Some(store.quick_check()?)
        } else {
            None
        };
        let runs = agents
            .iter()
            .map(|a| store.hook_runs(*a))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(StoreInfo { stats, check, runs })
    }

    /// The integrity check passed (or was skipped), and the last run of every hook event
    /// succeeded, or a later hook caught up after it.
    pub fn healthy(&self) -> bool {
        self.check.as_ref().is_none_or(|c| c.is_ok())
            && self
                .runs
                .iter()
                .all(|agent_runs| agent_runs.iter().all(|r| !hook_failed(r, agent_runs)))
    }
}

/// Whether a hook run's error still matters: it failed, and no later run of the same agent for
/// the same session (any session, for a run without one) succeeded. A later run reads the
/// transcript from the cursor the failed run left, so it caught up what that run missed (a
/// race for the store's lock, say).
pub fn hook_failed(r: &HookRun, all: &[HookRun]) -> bool {
    r.error.is_some()
        && !all.iter().any(|o| {
            o.error.is_none() && o.at > r.at && (r.session.is_none() || o.session == r.session)
        })
}

/// The last run of one hook event (`status --json`: `agents[].hook_runs[]`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HookRunReport {
    /// The hook event (`Stop`, `SessionStart`, …).
    pub event: String,
    /// When it ran (RFC 3339, UTC, milliseconds).
    pub at: String,
    /// How long it took, in milliseconds (microsecond precision).
    pub duration_ms: f64,
    /// The session it was for, when the payload named one.
    pub session: Option<String>,
    /// New messages it stored.
    pub messages: i64,
    /// Its error, when it failed.
    pub error: Option<String>,
    /// Only with `error`: whether a later run caught up (see [`hook_failed`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caught_up: Option<bool>,
}

impl HookRunReport {
    /// The report of `r`, one of `all` (the agent's runs).
    pub fn new(r: &HookRun, all: &[HookRun]) -> HookRunReport {
        HookRunReport {
            event: r.event.clone(),
            at: format_rfc3339_ms(r.at),
            duration_ms: r.duration_us as f64 / 1000.0,
            session: r.session.clone(),
            messages: r.messages,
            error: r.error.clone(),
            caught_up: r.error.is_some().then(|| !hook_failed(r, all)),
        }
    }
}

/// The store (`status --json`: `store`): its figures, or why it could not be read, or that it
/// does not exist yet.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum StoreReport {
    /// The store was read.
    Read {
        /// The store's file.
        path: String,
        /// Its size in bytes (the file and its WAL, [`crate::StoreLocation::size_bytes`]).
        size_bytes: u64,
        /// The schema version.
        schema_version: i64,
        /// Sessions stored.
        sessions: i64,
        /// Messages stored.
        messages: i64,
        /// Per agent with sessions, in the store's order.
        per_agent: Vec<AgentFigures>,
        /// Messages written but not yet in the full-text index.
        unindexed_messages: i64,
        /// The model of the stored vectors (`name@version/dim`); `None` before any
        /// `memtrail embed`.
        embedding_model: Option<String>,
        /// Messages waiting for `memtrail embed` (0 without vectors).
        unembedded_messages: i64,
        /// The store holds messages of a memtrail from before schema 13, uncompressed until
        /// `memtrail repair` compresses them.
        uncompressed_messages: bool,
        /// A delete, purge or rescan left deleted text in the store's files (a reader kept
        /// its write-ahead log from being folded back) for the next hook or import to remove.
        deleted_text_pending: bool,
        /// `ok`, the quick check's findings, or `not checked`.
        integrity: String,
        /// `quick_check` or `skipped`.
        integrity_check: &'static str,
    },
    /// The store exists but could not be read.
    Unreadable {
        /// The store's location (as given: the SQLite file's path).
        path: String,
        /// Why (the error and its causes on one line).
        error: String,
    },
    /// There is no store yet.
    Missing {
        /// The store's location (as given: the SQLite file's path).
        path: String,
        /// Always `false`.
        exists: bool,
    },
}

/// One agent's figures in the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentFigures {
    /// The agent (`claude`, …).
    pub agent: String,
    /// Its sessions.
    pub sessions: i64,
    /// Its messages.
    pub messages: i64,
}

impl StoreReport {
    /// The report of the store at `db`: `info` is `None` when it does not exist, `Some(Err)`
    /// with the reason when it could not be read.
    pub fn new(db: &crate::StoreLocation, info: &Option<Result<StoreInfo, String>>) -> StoreReport {
        match info {
            Some(Ok(StoreInfo {
                stats: s, check: c, ..
            })) => StoreReport::Read {
                path: s.path.clone(),
                size_bytes: s.size_bytes,
                schema_version: s.schema_version,
                sessions: s.sessions,
                messages: s.messages,
                per_agent: s
                    .per_agent
                    .iter()
                    .map(|(a, n, m)| AgentFigures {
                        agent: a.clone(),
                        sessions: *n,
                        messages: *m,
                    })
                    .collect(),
                unindexed_messages: s.unindexed,
                embedding_model: s.embed_model.clone(),
                unembedded_messages: s.unembedded,
                uncompressed_messages: s.uncompressed,
                deleted_text_pending: s.scrub_pending,
                integrity: match c {
                    Some(Ok(())) => "ok".to_string(),
                    Some(Err(e)) => e.clone(),
                    None => "not checked".to_string(),
                },
                integrity_check: if c.is_some() {
                    "quick_check"
                } else {
                    "skipped"
                },
            },
            Some(Err(e)) => StoreReport::Unreadable {
                path: db.to_string(),
                error: e.clone(),
            },
            None => StoreReport::Missing {
                path: db.to_string(),
                exists: false,
            },
        }
    }
}

/// The transcripts an agent keeps on disk (`status --json`: `agents[].transcripts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TranscriptsReport {
    /// How many transcript files were found.
    pub found: usize,
    /// The ones that cannot be read (never "no sessions" when the truth is "could not read").
    pub unreadable: Vec<UnreadableTranscript>,
}

/// A transcript (or a folder of them) that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnreadableTranscript {
    /// Its path; `(<Agent> transcripts)` when the agent's transcripts could not be listed.
    pub path: String,
    /// Why.
    pub error: String,
}

impl TranscriptsReport {
    /// Which transcripts `agent` has, and which cannot be read: the report of a discovery
    /// (`found`: [`memtrail_adapters::discover`]'s result for `agent`, or why it failed).
    /// Each file is opened to prove it can be read, except those `read` says an ingest has
    /// read already (a cursor in the store: `status` passes [`crate::store::Store::read_files`]),
    /// so a status over 12,000 transcripts opens only the new ones.
    pub fn from_discovery(
        agent: Agent,
        found: Result<&memtrail_adapters::Discovery, &str>,
        read: &dyn Fn(&std::path::Path) -> bool,
    ) -> TranscriptsReport {
        match found {
            Ok(found) => {
                let mut bad: Vec<UnreadableTranscript> = found
                    .unreadable
                    .iter()
                    .map(|(p, e)| UnreadableTranscript {
                        path: p.display().to_string(),
                        error: e.clone(),
                    })
                    .collect();
                for f in found.files.iter().filter(|f| !read(f)) {
                    // Non-blocking and regular files only: a FIFO named like a transcript
                    // must not hang `status`.
                    if let Err(e) = crate::ingest::open_regular(f) {
                        bad.push(UnreadableTranscript {
                            path: f.display().to_string(),
                            error: e.to_string(),
                        });
                    }
                }
                TranscriptsReport {
                    found: found.files.len(),
                    unreadable: bad,
                }
            }
            Err(e) => TranscriptsReport {
                found: 0,
                unreadable: vec![UnreadableTranscript {
                    path: format!("({} transcripts)", agent.display_name()),
                    error: e.to_string(),
                }],
            },
        }
    }
}

/// Claude Code's transcript retention (`status --json`: `claude_retention`, `null` when Claude
/// Code keeps no transcripts here).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum RetentionReport {
    /// It could not be checked.
    Error {
        /// Why.
        error: String,
    },
    /// It was checked.
    Checked {
        /// The settings file read.
        settings: String,
        /// Days after which Claude Code deletes a transcript.
        cleanup_period_days: u64,
        /// Whether `cleanup_period_days` came from the settings (else the default, 30).
        from_settings: bool,
        /// How many transcripts not fully captured are deleted within 7 days.
        at_risk: usize,
        /// When the first of them is deleted (RFC 3339), if any.
        first_deletion: Option<String>,
        /// Those transcripts.
        transcripts: Vec<AtRiskReport>,
        /// Always `true`: memtrail keeps what it captured after Claude Code deletes a transcript.
        memtrail_keeps_captured: bool,
    },
}

/// A transcript Claude Code deletes soon that memtrail has not fully captured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AtRiskReport {
    /// The transcript.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Bytes memtrail has read.
    pub captured: u64,
    /// When Claude Code deletes it (RFC 3339).
    pub deletes_at: String,
}

impl RetentionReport {
    /// The report of a retention check (`Err`: why it could not be made).
    pub fn new(r: &Result<Retention, String>) -> RetentionReport {
        match r {
            Err(e) => RetentionReport::Error { error: e.clone() },
            Ok(r) => RetentionReport::Checked {
                settings: r.settings.clone(),
                cleanup_period_days: r.cleanup_period_days,
                from_settings: r.from_settings,
                at_risk: r.at_risk.len(),
                first_deletion: r.first_deletion_ms.map(format_rfc3339_ms),
                transcripts: r
                    .at_risk
                    .iter()
                    .map(|a| AtRiskReport {
                        path: a.path.clone(),
                        size: a.size,
                        captured: a.captured,
                        deletes_at: format_rfc3339_ms(a.deletes_at_ms),
                    })
                    .collect(),
                memtrail_keeps_captured: true,
            },
        }
    }
}

/// Sync with PostgreSQL (`status --json`: `sync`): what the config says and what the store
/// recorded of the last syncs. The URL is shown with its password masked by the caller.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SyncStatus {
    /// Whether memtrail's config has a `[sync] url`.
    pub configured: bool,
    /// Why the config's `[sync]` table could not be read (then `configured` is `false`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_error: Option<String>,
    /// The database URL, password masked (`postgres://me:****@db/memtrail`); `null` when not
    /// configured.
    pub url: Option<String>,
    /// This machine's id (`[sync] machine`, 32 hex digits).
    pub machine: Option<String>,
    /// This machine's label (`[sync] label`).
    pub label: Option<String>,
    /// Whether this store queues its changes for a push (sync enabled in it).
    pub enabled: bool,
    /// When the last push batch was acknowledged (RFC 3339, UTC, milliseconds).
    pub last_push_at: Option<String>,
    /// When the last pull batch was applied (RFC 3339).
    pub last_pull_at: Option<String>,
    /// When the last sync ended without error (RFC 3339).
    pub last_sync_at: Option<String>,
    /// What waits to be pushed; `null` when the store could not be read.
    pub pending: Option<crate::sync::SyncPending>,
    /// The last sync's error (kept until a sync succeeds), redacted; the password is never in it.
    pub last_error: Option<String>,
    /// Since when syncs have been failing: the first failed sync after the last one that
    /// succeeded (RFC 3339); `null` when the last sync did not fail.
    pub failing_since: Option<String>,
    /// Sync is failing with something waiting to be pushed: a last error recorded and a
    /// non-empty queue (`status` warns, and its verdict is not "healthy").
    pub failing: bool,
    /// Whether the database has pgvector, as the last sync found it; `null` when unknown.
    pub pgvector: Option<bool>,
    /// pgvector's version in the database, when it has it.
    pub pgvector_version: Option<String>,
    /// The other machines pulled from: id and label, by id.
    pub machines: Vec<MachineLabel>,
}

/// A machine pulled from (`status --json`: `sync.machines[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MachineLabel {
    /// Its id (32 hex digits).
    pub id: String,
    /// Its label (hostname or `--label`).
    pub label: String,
}

/// `sync_state` key holding pgvector's version in the database (`""`: the database has no
/// pgvector), as the last sync found it.
pub const PGVECTOR_STATE: &str = "pgvector";

impl SyncStatus {
    /// The status from the config's `[sync]` values (`masked_url`: the URL with its password
    /// masked, `None` when sync is not configured) and the store, when it exists.
    ///
    /// Errors: the store's, when it cannot be read.
    pub fn read(
        masked_url: Option<String>,
        machine: Option<String>,
        label: Option<String>,
        store: Option<&Store>,
    ) -> crate::Result<SyncStatus> {
        let mut s = SyncStatus {
            configured: masked_url.is_some(),
            config_error: None,
            url: masked_url,
            machine,
            label,
            enabled: false,
            last_push_at: None,
            last_pull_at: None,
            last_sync_at: None,
            pending: None,
            last_error: None,
            failing_since: None,
            failing: false,
            pgvector: None,
            pgvector_version: None,
            machines: Vec::new(),
        };
        let Some(store) = store else {
            return Ok(s);
        };
        let when = |key: &str| -> crate::Result<Option<String>> {
            Ok(store
                .sync_state(key)?
                .and_then(|v| v.parse::<i64>().ok())
                .map(format_rfc3339_ms))
        };
        s.enabled = store.sync_enabled()?;
        s.last_push_at = when("last_push_at")?;
        s.last_pull_at = when("last_pull_at")?;
        s.last_sync_at = when("last_sync_at")?;
        s.failing_since = when("failing_since")?;
        s.pending = Some(store.sync_pending()?);
        s.last_error = store
            .sync_state("last_error")?
            .map(|e| crate::redact::redact(&e).into_owned());
        s.failing = s.last_error.is_some()
            && s.pending
                .is_some_and(|p| p.sessions + p.messages + p.deletions > 0);
        if let Some(v) = store.sync_state(PGVECTOR_STATE)? {
            s.pgvector = Some(!v.is_empty());
            s.pgvector_version = Some(v).filter(|v| !v.is_empty());
        }
        s.machines = store
            .machine_labels()?
            .into_iter()
            .map(|(id, label)| MachineLabel { id, label })
            .collect();
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(at: i64, session: Option<&str>, error: Option<&str>) -> HookRun {
        HookRun {
            agent: "claude".into(),
            event: "Stop".into(),
            at,
            duration_us: 1500,
            session: session.map(str::to_string),
            messages: 2,
            error: error.map(str::to_string),
        }
    }

    #[test]
    fn a_failed_hook_counts_until_a_later_run_of_its_session_succeeds() {
        let failed = run(1_000, Some("s1"), Some("store busy"));
        let other_session = run(2_000, Some("s2"), None);
        assert!(hook_failed(
            &failed,
            &[failed.clone(), other_session.clone()]
        ));
        let caught_up = run(3_000, Some("s1"), None);
        assert!(!hook_failed(&failed, &[failed.clone(), caught_up.clone()]));
        // A run without a session is caught up by any later success.
        let no_session = run(1_000, None, Some("bad payload"));
        assert!(!hook_failed(
            &no_session,
            &[no_session.clone(), other_session]
        ));
        assert!(!hook_failed(&caught_up, std::slice::from_ref(&caught_up)));
    }

    #[test]
    fn sync_status_reads_the_config_values_and_the_store_state() {
        let none = SyncStatus::read(None, None, None, None).unwrap();
        assert_eq!(
            serde_json::to_value(&none).unwrap(),
            serde_json::json!({
                "configured": false, "url": null, "machine": null, "label": null,
                "enabled": false, "last_push_at": null, "last_pull_at": null,
                "last_sync_at": null, "pending": null, "last_error": null,
                "failing_since": null, "failing": false, "pgvector": null,
                "pgvector_version": null, "machines": [],
            })
        );
        let d = tempfile::tempdir().unwrap();
        let mut store = Store::open(&d.path().join("m.db")).unwrap();
        let m = "0123456789abcdef0123456789abcdef";
        store.sync_enable(m).unwrap();
        store.set_sync_state("last_push_at", Some("1000")).unwrap();
        store.set_sync_state("last_sync_at", Some("2000")).unwrap();
        store
            .set_sync_state(
                "last_error",
                Some("cannot connect to postgres://me:pw@db/m: refused"),
            )
            .unwrap();
        store.set_sync_state(PGVECTOR_STATE, Some("0.8.6")).unwrap();
        let s = SyncStatus::read(
            Some("postgres://me:****@db/m".into()),
            Some(m.into()),
            Some("laptop".into()),
            Some(&store),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            serde_json::json!({
                "configured": true, "url": "postgres://me:****@db/m", "machine": m,
                "label": "laptop", "enabled": true,
                "last_push_at": "1970-01-01T00:00:01.000Z", "last_pull_at": null,
                "last_sync_at": "1970-01-01T00:00:02.000Z",
                "pending": {"sessions": 0, "messages": 0, "deletions": 0},
                // Redacted again when shown (a password that slipped in).
                "last_error": "cannot connect to postgres://me:[redacted:url_password]@db/m: refused",
                // Set by hand here, not by a failing sync: no time; nothing waits.
                "failing_since": null, "failing": false,
                "pgvector": true, "pgvector_version": "0.8.6", "machines": [],
            })
        );
        // A database without pgvector: known absent.
        store.set_sync_state(PGVECTOR_STATE, Some("")).unwrap();
        let s = SyncStatus::read(None, None, None, Some(&store)).unwrap();
        assert_eq!((s.pgvector, s.pgvector_version), (Some(false), None));
    }

    #[test]
    fn hook_run_report_says_caught_up_only_for_a_failed_run() {
        let failed = run(1_000, Some("s1"), Some("store busy"));
        let later = run(3_000, Some("s1"), None);
        let all = [failed.clone(), later.clone()];
        assert_eq!(
            serde_json::to_value(HookRunReport::new(&failed, &all)).unwrap(),
            serde_json::json!({
                "event": "Stop",
                "at": "1970-01-01T00:00:01.000Z",
                "duration_ms": 1.5,
                "session": "s1",
                "messages": 2,
                "error": "store busy",
                "caught_up": true,
            })
        );
        let ok = serde_json::to_value(HookRunReport::new(&later, &all)).unwrap();
        assert_eq!(ok.get("caught_up"), None);
        assert_eq!(ok["error"], serde_json::Value::Null);
    }
}
