//! `memtrail status`: what is wired, where it points, when each hook last ran, the store's figures.

use crate::common::{binary_path, open_store, open_store_read};
use crate::output::{error_chain, plural, short_time};
use anyhow::Result;
use memtrail_adapters::Agent;
use memtrail_installer::{AgentStatus, BackupSummary, TrustNotice};
use memtrail_runtime::StoreLocation;
use memtrail_runtime::ingest::PendingTail;
use memtrail_runtime::safe_text::one_line_field;
use memtrail_runtime::status::{
    HookRunReport, RetentionReport, StoreInfo, StoreReport, SyncStatus, TranscriptsReport,
    hook_failed,
};
use serde::Serialize;
use std::path::Path;
use std::process::ExitCode;

/// `status --json` (schema: docs/json.md).
#[derive(Serialize)]
struct StatusReport<'a> {
    healthy: bool,
    binary: &'a Path,
    agents: Vec<AgentReport<'a>>,
    store: StoreReport,
    recent_hook_errors: &'a [String],
    notices: Vec<TrustNotice>,
    claude_retention: Option<RetentionReport>,
    pending_tails: &'a [PendingTail],
    waiting_for_next_hook: &'a [Waiting],
    backups: &'a BackupSummary,
    sync: &'a SyncStatus,
}

/// A transcript a hook could not finish, left for the next hook (`status --json`:
/// `waiting_for_next_hook[]`).
#[derive(Serialize)]
struct Waiting {
    agent: String,
    path: String,
    session: Option<String>,
    /// A whole-file source too large for a hook's time left: its size (bytes) when noted.
    whole_file_bytes: Option<u64>,
    /// A background `memtrail hook-settle` reads it now.
    reading_now: bool,
}

/// One agent in `status --json`.
#[derive(Serialize)]
struct AgentReport<'a> {
    agent: Agent,
    registration: &'a AgentStatus,
    transcripts: &'a TranscriptsReport,
    hook_runs: Vec<HookRunReport>,
}

/// What `status` reads before it prints: the registration per agent, the store, the
/// transcripts, the hook log, backups and sync.
struct Gathered {
    healthy: bool,
    binary: std::path::PathBuf,
    agents: Vec<(Agent, AgentStatus)>,
    store_info: Option<std::result::Result<StoreInfo, String>>,
    transcripts: Vec<TranscriptsReport>,
    errors: Vec<String>,
    retention: Option<AgentRetention>,
    tails: Vec<PendingTail>,
    /// Transcripts a hook could not finish, left for the next hook (`pending/`).
    waiting: Vec<Waiting>,
    backups: BackupSummary,
    sync: SyncStatus,
}

/// Every supported agent's transcripts on disk ([`memtrail_adapters::discover`], in the order
/// of [`memtrail_adapters::supported_agents`]), with when they were listed. Listing walks
/// every folder of every agent (the 1 GB bench corpus: 12,104 files in 6,200 folders; `find`
/// alone takes ~90 ms): the folders' listings are kept between runs and only the changed
/// folders read ([`Listing::now`]), and `memtrail web` keeps one ([`ListingCache`]).
#[derive(Clone)]
pub struct Listing {
    /// Per agent: what was found, or why the agent's transcripts could not be listed.
    pub found: Vec<std::result::Result<memtrail_adapters::Discovery, String>>,
    /// When the listing was made.
    pub at: std::time::Instant,
}

impl Listing {
    /// List every agent's transcripts now. The folders' listings kept by the last run
    /// ([`listing_cache_path`], a [`memtrail_adapters::paths::DirCache`]) answer for the
    /// folders that have not changed since: each folder is `stat`ed, only the changed ones are
    /// read. A cache that cannot be read is ignored (everything is listed), one that cannot be
    /// written is not kept.
    pub fn now() -> Listing {
        let file = listing_cache_path();
        let mut cache = memtrail_adapters::paths::DirCache::load(&file);
        // Each agent's discovery is a job, on two threads.
        let jobs = memtrail_adapters::supported_agents()
            .iter()
            .map(|&a| {
                Box::new(move || memtrail_adapters::discover(a).map_err(|e| e.to_string()))
                    as Box<dyn FnOnce() -> _ + Send>
            })
            .collect();
        let found = cache.run_each(jobs, 2);
        // The state folder is made for the cache only where memtrail keeps data (its data
        // folder exists): a `status` after `uninstall --purge` leaves nothing behind.
        if let Some(dir) = file.parent().filter(|_| {
            memtrail_adapters::paths::xdg_data_home()
                .join("memtrail")
                .is_dir()
        }) {
            use std::os::unix::fs::DirBuilderExt;
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir);
        }
        let _ = cache.save(&file);
        Listing {
            found,
            at: std::time::Instant::now(),
        }
    }
}

/// Where `status` keeps the agents' folder listings between runs: `listing-cache` in
/// memtrail's state folder (owner-only, like the folder; `uninstall --purge` deletes it with
/// the folder). It names the transcripts' folders and files, nothing of their content.
pub fn listing_cache_path() -> std::path::PathBuf {
    memtrail_runtime::state_dir().join("listing-cache")
}

/// A [`Listing`] kept by a long-running process (`memtrail web`'s status page): served while it
/// is younger than [`ListingCache::FRESH`]; an older one is served once more while a thread
/// lists again, so no page waits on the walk after the first.
#[derive(Default)]
pub struct ListingCache {
    last: std::sync::Mutex<Option<std::sync::Arc<Listing>>>,
    refreshing: std::sync::atomic::AtomicBool,
}

impl ListingCache {
    /// How long a listing is served without listing again.
    pub const FRESH: std::time::Duration = std::time::Duration::from_secs(10);

    /// The listing to show: the kept one (a new one made in the background when it is older
    /// than [`Self::FRESH`]), or one made now when none is kept.
    pub fn get(self: &std::sync::Arc<Self>) -> std::sync::Arc<Listing> {
        let kept = self.last.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match kept {
            Some(l) => {
                if l.at.elapsed() >= Self::FRESH {
                    self.refresh_in_background();
                }
                l
            }
            None => self.refresh(),
        }
    }

    /// List now and keep the result.
    pub fn refresh(&self) -> std::sync::Arc<Listing> {
        let l = std::sync::Arc::new(Listing::now());
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(l.clone());
        l
    }

    /// [`Self::refresh`] on a thread of its own, unless one is running.
    pub fn refresh_in_background(self: &std::sync::Arc<Self>) {
        use std::sync::atomic::Ordering;
        if self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = self.clone();
        std::thread::spawn(move || {
            me.refresh();
            me.refreshing.store(false, Ordering::Release);
        });
    }
}

fn gather(
    db: &StoreLocation,
    force_check: bool,
    cache: Option<&std::sync::Arc<ListingCache>>,
) -> Result<Gathered> {
    let binary = binary_path()?;
    // Listing the agents' transcripts (thousands of files) and the unfinished-line check
    // (a `stat` per recently written transcript) run on a second thread beside the rest.
    std::thread::scope(|scope| {
        let listing = scope.spawn(|| match cache {
            Some(c) => c.get(),
            None => std::sync::Arc::new(Listing::now()),
        });
        let mut healthy = true;
        let mut agents = Vec::new();
        for &agent in memtrail_adapters::supported_agents() {
            let st = memtrail_installer::status(agent, &binary)?;
            healthy &= st.healthy();
            agents.push((agent, st));
        }
        // The store: figures, a quick integrity check, and the last run of each hook. A store
        // that cannot be read is reported, not fatal: the registration is still shown.
        let mut read_files = std::collections::HashMap::new();
        let mut tail_candidates = Vec::new();
        let store_info: Option<std::result::Result<StoreInfo, String>> = if db.exists() {
            Some(
                (|| -> Result<StoreInfo> {
                    let store = open_store(db)?;
                    let listed: Vec<Agent> = agents.iter().map(|(a, _)| *a).collect();
                    let mut info = StoreInfo::read(&store, &listed, force_check)?;
                    // With the model installed, the backlog is its own: every message the
                    // store holds no vector of it for (all of them before the first
                    // `memtrail embed`).
                    // Without a model, nothing waits: `memtrail embed` would have none to use.
                    match crate::commands::models::in_use_id(info.stats.embed_model.as_deref()) {
                        Some(model) if info.stats.embed_model.as_deref() != Some(&model) => {
                            info.stats.unembedded = store.embed_backlog(&model)?;
                            info.stats.embed_model = Some(model);
                        }
                        Some(_) => {}
                        None => info.stats.unembedded = 0,
                    }
                    // One read of the cursors for both the transcripts' and the unfinished
                    // lines' checks.
                    let since =
                        memtrail_runtime::ingest::tail_recent_since(memtrail_runtime::now_ms());
                    (read_files, tail_candidates) = store.read_files_and_tail_candidates(since)?;
                    Ok(info)
                })()
                .map_err(|e| error_chain(&e)),
            )
        } else {
            None
        };
        match &store_info {
            Some(Ok(info)) => healthy &= info.healthy(),
            Some(Err(_)) => healthy = false,
            None => {}
        }
        // Transcripts whose last line has no '\n' yet (read by `import` once whole): a `stat`
        // (and a read past the cursor) per candidate, beside the rest.
        let tails = scope.spawn(|| memtrail_runtime::ingest::pending_tails_of(tail_candidates));
        let errors = memtrail_runtime::hook::last_log_errors(3);
        let waiting: Vec<Waiting> = memtrail_runtime::pending::list(db)
            .into_iter()
            .map(|(_, _, e)| Waiting {
                reading_now: e.whole_file_bytes.is_some()
                    && memtrail_runtime::pending::worker_running(&e),
                agent: e.agent,
                path: e.path,
                session: e.session,
                whole_file_bytes: e.whole_file_bytes,
            })
            .collect();
        let backups = memtrail_installer::backups();
        let sync = sync_status(db);
        let listing = listing.join().expect("the transcript listing panicked");
        let found = &listing.found;
        // With the agent that deletes old transcripts (Claude Code) and its policy.
        let retention = retention_policy();
        // The retention check: the agent's old transcripts against the store's cursors. Only
        // those the cursors cannot clear are statted (a few, where a full check would stat
        // every transcript).
        let retention = retention.and_then(|(i, agent, policy)| {
            use memtrail_runtime::maintenance::{
                may_be_at_risk, old_transcripts, retention_horizon_ms, retention_of,
            };
            let files = &found[i].as_ref().ok()?.files;
            if files.is_empty() && !policy.settings.exists() {
                return None;
            }
            let now = memtrail_runtime::now_ms();
            let horizon = retention_horizon_ms(&policy, now);
            let unsure = files
                .iter()
                .filter(|f| may_be_at_risk(read_files.get(f.to_string_lossy().as_ref()), horizon));
            // A store that cannot be read (a PostgreSQL store: no cursors here) has nothing
            // to hold the transcripts against: none is statted.
            let result = match &store_info {
                Some(Err(e)) => Err(e.clone()),
                _ => retention_of(&policy, old_transcripts(&policy, unsure, now), &mut |p| {
                    Ok(read_files.get(p).map_or(0, |r| r.offset))
                })
                .map_err(|e| e.to_string()),
            };
            Some(AgentRetention {
                agent,
                setting: policy.setting,
                result,
            })
        });
        // Which transcripts each agent has, and which cannot be read (never "no sessions"
        // when the truth is "could not read"): those an ingest has read are not opened again.
        // A PostgreSQL store has no cursors of this machine's transcripts: none is opened
        // (opening every one, 12,104 for the 1 GB bench corpus, was most of `memtrail web
        // --store postgres://…`'s status page); only what the listing itself could not read
        // is reported.
        let postgres = db.postgres_url().is_some();
        let read = |p: &Path| postgres || read_files.contains_key(p.to_string_lossy().as_ref());
        let transcripts: Vec<TranscriptsReport> = agents
            .iter()
            .zip(found)
            .map(|((a, _), found)| {
                TranscriptsReport::from_discovery(*a, found.as_ref().map_err(|e| e.as_str()), &read)
            })
            .collect();
        let tails = tails.join().expect("the unfinished-line check panicked");
        Ok(Gathered {
            healthy,
            binary,
            agents,
            store_info,
            transcripts,
            errors,
            retention,
            tails,
            waiting,
            backups,
            sync,
        })
    })
}

/// `status --json`'s report of what [`gather`] read.
fn report<'a>(g: &'a Gathered, db: &StoreLocation) -> StatusReport<'a> {
    StatusReport {
        healthy: g.healthy,
        binary: &g.binary,
        agents: g
            .agents
            .iter()
            .zip(&g.transcripts)
            .enumerate()
            .map(|(i, ((a, st), t))| AgentReport {
                agent: *a,
                registration: st,
                transcripts: t,
                hook_runs: match &g.store_info {
                    Some(Ok(info)) => info.runs[i]
                        .iter()
                        .map(|r| HookRunReport::new(r, &info.runs[i]))
                        .collect(),
                    _ => Vec::new(),
                },
            })
            .collect(),
        store: StoreReport::new(db, &g.store_info),
        recent_hook_errors: &g.errors,
        notices: g
            .agents
            .iter()
            .flat_map(|(_, st)| TrustNotice::of(st))
            .collect(),
        claude_retention: g
            .retention
            .as_ref()
            .map(|r| RetentionReport::new(&r.result)),
        pending_tails: &g.tails,
        waiting_for_next_hook: &g.waiting,
        backups: &g.backups,
        sync: &g.sync,
    }
}

/// What `memtrail status --json` prints, as a JSON value (the web page's Status, in process).
/// `cache`: the transcript listing a long-running caller keeps (`memtrail web`), else `None`
/// (listed now).
pub fn status_json(
    db: &StoreLocation,
    cache: Option<&std::sync::Arc<ListingCache>>,
) -> Result<serde_json::Value> {
    let g = gather(db, false, cache)?;
    Ok(serde_json::to_value(report(&g, db))?)
}

/// `memtrail status`: exit code 1 when not healthy.
pub fn status(db: &StoreLocation, force_check: bool, json: bool) -> Result<ExitCode> {
    let g = gather(db, force_check, None)?;
    let Gathered {
        healthy,
        binary,
        agents,
        store_info,
        transcripts,
        errors,
        retention,
        tails,
        waiting,
        backups,
        sync,
    } = &g;
    let healthy = *healthy;
    let when = |ms: Option<i64>| ms.map(memtrail_adapters::format_rfc3339_ms);
    if json {
        out!("{}", crate::output::json(&report(&g, db))?);
    } else {
        out!(
            "memtrail {} at {}",
            env!("CARGO_PKG_VERSION"),
            binary.display()
        );
        // The agents not on this machine, with nothing of theirs anywhere: one line at the end.
        let mut absent: Vec<&str> = Vec::new();
        for (i, (a, st)) in agents.iter().enumerate() {
            let nothing = st
                .items
                .iter()
                .all(|it| matches!(it.state, memtrail_installer::ItemState::Missing));
            let no_runs = match &store_info {
                Some(Ok(StoreInfo { runs, .. })) => runs[i].is_empty(),
                _ => true,
            };
            if !st.detected
                && nothing
                && no_runs
                && transcripts[i].found == 0
                && transcripts[i].unreadable.is_empty()
            {
                absent.push(a.display_name());
                continue;
            }
            out!("\n{}:", a.display_name());
            if !st.detected && nothing {
                out!("  not found on this machine; nothing registered");
            } else {
                outn!("{st}");
            }
            let (found, bad) = (transcripts[i].found, &transcripts[i].unreadable);
            out!(
                "  transcripts on disk: {found}{}",
                if bad.is_empty() {
                    String::new()
                } else {
                    format!(", {} unreadable", bad.len())
                }
            );
            for u in bad.iter().take(5) {
                out!("    cannot read {}: {}", u.path, u.error);
            }
            if let Some(Ok(StoreInfo { runs, .. })) = &store_info {
                if runs[i].is_empty() {
                    out!("  hooks have not run yet");
                }
                for r in &runs[i] {
                    out!(
                        "  last {} hook: {} ({:.1} ms, +{}){}",
                        // A payload that named no event (a hand-made one, say).
                        if r.event.is_empty() {
                            "(unnamed)"
                        } else {
                            r.event.as_str()
                        },
                        short_time(&memtrail_adapters::format_rfc3339_ms(r.at)),
                        r.duration_us as f64 / 1000.0,
                        plural(r.messages as u64, "message", "messages"),
                        match r.error.as_deref() {
                            None => String::new(),
                            Some(e) if !hook_failed(r, &runs[i]) =>
                                format!(", error: {e} (a later hook caught up)"),
                            Some(e) => format!(
                                ", error: {e} (the agent's next hook that succeeds clears it)"
                            ),
                        }
                    );
                }
            }
        }
        if !absent.is_empty() {
            out!(
                "\nNot on this machine (nothing registered, no transcripts): {}",
                absent.join(", ")
            );
        }
        match &store_info {
            Some(Ok(StoreInfo {
                stats: s, check, ..
            })) => {
                out!(
                    "\nstore: {} ({:.1} MB, schema v{}, {})",
                    s.path,
                    s.size_bytes as f64 / 1e6,
                    s.schema_version,
                    match check {
                        Some(Ok(())) => "quick integrity check ok".to_string(),
                        Some(Err(e)) => format!(
                            "quick integrity check FAILED: {}; run `memtrail repair`",
                            memtrail_adapters::one_line(e, 200)
                        ),
                        None =>
                            "integrity not checked: over 8 MB, `memtrail status --check` checks it"
                                .to_string(),
                    }
                );
                for (agent, sessions, messages) in &s.per_agent {
                    out!(
                        "  {agent}: {}, {}",
                        plural(*sessions as u64, "session", "sessions"),
                        plural(*messages as u64, "message", "messages")
                    );
                }
                if s.unindexed > 0 {
                    out!(
                        "  {} new message{} not yet in the search index (the next search, import or MCP server indexes them)",
                        s.unindexed,
                        if s.unindexed == 1 { "" } else { "s" }
                    );
                }
                if s.scrub_pending {
                    out!(
                        "  deleted text is still in the store's files: a reader kept its write-ahead log from being folded back; the next hook or `memtrail import` folds it back once no reader holds on"
                    );
                }
                if s.uncompressed {
                    out!(
                        "  messages stored by a memtrail from before schema 13 are not compressed: `memtrail repair` compresses them and gives the space back (needs free disk as large as the store)"
                    );
                }
                if let Some(m) = &s.embed_model {
                    if crate::commands::models::in_use_id(Some(m)).as_deref() == Some(m) {
                        out!(
                            "  vectors for search by meaning: {m}, {} waiting for `memtrail embed`",
                            plural(s.unembedded as u64, "message", "messages")
                        );
                    } else {
                        out!(
                            "  vectors for search by meaning: {m}, no model set up to search them (`memtrail models install`)"
                        );
                    }
                }
            }
            Some(Err(e)) => out!("\nstore: {} cannot be read: {e}", db),
            None => out!("\nstore: {} (not created yet)", db),
        }
        print_retention(retention);
        if let Some(first) = tails.first() {
            out!(
                "\n{} transcript{} end{} in a line without a newline, not captured yet (e.g. {}, {} bytes): `memtrail import` reads such a line once it is whole JSON",
                tails.len(),
                if tails.len() == 1 { "" } else { "s" },
                if tails.len() == 1 { "s" } else { "" },
                // A folder named with a line break prints no line of its own (attack review).
                one_line_field(&first.path),
                first.bytes
            );
        }
        // Whole-file sources too large for a hook: read in the background, not by the next
        // hook (which starts that read again if it is not running).
        let (large, waiting): (Vec<&Waiting>, Vec<&Waiting>) =
            waiting.iter().partition(|w| w.whole_file_bytes.is_some());
        if let Some(first) = large.first() {
            let one = large.len() == 1;
            let now = large.iter().filter(|w| w.reading_now).count();
            out!(
                "\n{} for a background read (too large for a hook's time budget: read whole at each change), e.g. {} ({}, {:.1} MB): {}; `memtrail import` reads {} now",
                plural(
                    large.len() as u64,
                    "whole-file session waits",
                    "whole-file sessions wait"
                ),
                one_line_field(&first.path),
                one_line_field(&first.agent),
                first.whole_file_bytes.unwrap_or(0) as f64 / 1e6,
                if now == large.len() {
                    "being stored now".to_string()
                } else if now > 0 {
                    format!("{now} being stored now, the rest once the next hook starts their read")
                } else if one {
                    "the next hook starts its read".to_string()
                } else {
                    "the next hook starts their reads".to_string()
                },
                if one { "it" } else { "them" }
            );
        }
        if let Some(first) = waiting.first() {
            let one = waiting.len() == 1;
            out!(
                "\n{} for the next hook that succeeds (a hook could not finish {}: the store was busy, its time budget ran out, or memtrail's config could not be read), e.g. {} ({}); `memtrail import` reads {} now",
                plural(waiting.len() as u64, "transcript waits", "transcripts wait"),
                if one { "it" } else { "them" },
                one_line_field(&first.path),
                one_line_field(&first.agent),
                if one { "it" } else { "them" }
            );
        }
        if backups.folders == 0 {
            out!("\nconfig backups: none");
        } else {
            let day = |ms: Option<i64>| when(ms).map(|t| short_time(&t)).unwrap_or_default();
            out!(
                "\nconfig backups: {} in {} ({}, {:.1} MB; oldest {}, newest {})",
                plural(backups.folders as u64, "folder", "folders"),
                backups.dir.display(),
                plural(backups.copies as u64, "file copy", "file copies"),
                backups.bytes as f64 / 1e6,
                day(backups.oldest_ms),
                day(backups.newest_ms)
            );
            out!(
                "  copies of your agents' configs as they were, API keys and MCP tokens included (owner-only); kept: each file's first copy and the last five runs of under 30 days; `memtrail uninstall --purge` deletes them"
            );
        }
        print_sync(sync);
        if !errors.is_empty() {
            out!(
                "\nrecent hook errors ({}):",
                memtrail_runtime::hook::log_path().display()
            );
            for e in errors {
                out!("  {e}");
            }
        }
        let notices: Vec<(Agent, usize, String)> = agents
            .iter()
            .filter_map(|(a, st)| {
                let n: Vec<_> = st.notices().collect();
                let reason = match &n.first()?.state {
                    memtrail_installer::ItemState::Untrusted { reason } => reason.clone(),
                    _ => String::new(),
                };
                Some((*a, n.len(), reason))
            })
            .collect();
        if !notices.is_empty() {
            out!("\nnotices (not failures):");
            for (a, n, reason) in &notices {
                out!(
                    "  {}: {} not run by the agent: {reason}",
                    a.display_name(),
                    plural(*n as u64, "item", "items")
                );
            }
        }
        out!(
            "\n{}",
            match (healthy, notices.is_empty(), sync.failing) {
                (true, _, true) => "sync FAILING (see above); capture and search work",
                (true, true, false) => "healthy",
                (true, false, false) => "healthy (see the notices above)",
                (false, _, _) => "NOT healthy: see above",
            }
        );
    }
    Ok(if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The transcript retention of the agent that deletes its own transcripts (the registry's
/// agent with a [`memtrail_adapters::Quirks::transcript_retention`]: Claude Code), checked
/// against what memtrail has captured.
pub struct AgentRetention {
    pub agent: Agent,
    /// The setting that holds the period (`cleanupPeriodDays`).
    pub setting: &'static str,
    /// The check, or why it could not run.
    pub result: std::result::Result<memtrail_runtime::maintenance::Retention, String>,
}

/// The agent whose transcripts are deleted after a period (Claude Code's `cleanupPeriodDays`):
/// its index in [`memtrail_adapters::supported_agents`], itself, and its policy; `None` when
/// no agent declares one.
fn retention_policy() -> Option<(usize, Agent, memtrail_adapters::TranscriptRetention)> {
    memtrail_adapters::supported_agents()
        .iter()
        .enumerate()
        .find_map(|(i, &a)| Some((i, a, a.adapter().quirks().transcript_retention?())))
}

/// The retention paragraph of `status`.
pub fn print_retention(r: &Option<AgentRetention>) {
    let Some(AgentRetention {
        agent,
        setting,
        result,
    }) = r
    else {
        return;
    };
    let name = agent.display_name();
    match result {
        Err(e) => out!("\n{name} retention: cannot check: {e}"),
        Ok(r) if r.at_risk.is_empty() => out!(
            "\n{name} deletes transcripts after {} days{}; every transcript due within {} days is captured (memtrail keeps what it captured)",
            r.cleanup_period_days,
            if r.from_settings { "" } else { " (default)" },
            memtrail_runtime::maintenance::RETENTION_WARNING_DAYS
        ),
        Ok(r) => {
            out!(
                "\nWARNING: {name} deletes transcripts after {} days ({}).",
                r.cleanup_period_days,
                if r.from_settings {
                    format!("{setting} in {}", r.settings)
                } else {
                    format!("the default: {setting} is not set in {}", r.settings)
                }
            );
            out!(
                "  {} not fully captured by memtrail will be deleted, the first on {}: run `memtrail import --agent {agent}` now.",
                plural(r.at_risk.len() as u64, "transcript", "transcripts"),
                r.first_deletion_ms
                    .map(|t| short_time(&memtrail_adapters::format_rfc3339_ms(t)))
                    .unwrap_or_default()
            );
            out!(
                "  memtrail keeps what it has captured after {name} deletes a transcript; raise {setting} to keep the files longer."
            );
        }
    }
}

/// Sync's part of `status`: the config's `[sync]` values (the URL masked) and what the store
/// recorded. Never fails: a config or store that cannot be read is reported in it.
fn sync_status(db: &StoreLocation) -> SyncStatus {
    let settings =
        memtrail_pg::settings::SyncSettings::load(&memtrail_runtime::privacy::config_path());
    let (url, machine, label, config_error) = match settings {
        Ok(s) => (
            s.url.as_deref().map(memtrail_pg::mask_url),
            s.machine,
            s.label,
            None,
        ),
        Err(e) => (None, None, None, Some(e.to_string())),
    };
    let read = |store: Option<&memtrail_runtime::Store>| {
        SyncStatus::read(url.clone(), machine.clone(), label.clone(), store)
    };
    // Without a store (or one that cannot be read) only the config's values are shown.
    let (mut status, store_error) = match open_store_read(db) {
        Ok(Some(store)) => match read(Some(&store)) {
            Ok(s) => (s, None),
            Err(e) => (read(None).unwrap_or_default(), Some(e.to_string())),
        },
        Ok(None) => (read(None).unwrap_or_default(), None),
        Err(e) => (read(None).unwrap_or_default(), Some(error_chain(&e))),
    };
    if let Some(e) = store_error {
        status.last_error = Some(format!("cannot read the sync state: {e}"));
    }
    status.config_error = config_error;
    status
}

/// The sync paragraph of `status`.
fn print_sync(s: &SyncStatus) {
    let when = |t: &Option<String>| t.as_deref().map_or("never".to_string(), short_time);
    if let Some(e) = &s.config_error {
        out!("\nsync: cannot read the config: {e}");
        return;
    }
    let Some(url) = &s.url else {
        out!("\nsync: not set up (`memtrail sync --init postgres://USER@HOST/DB`)");
        return;
    };
    out!(
        "\nsync: {url} as {} ({})",
        // No label set: the host name, as sessions show this machine.
        s.label
            .as_deref()
            .unwrap_or_else(|| memtrail_runtime::machine::local_label()),
        s.machine
            .as_deref()
            .unwrap_or("no machine id: run `memtrail sync --init` again")
    );
    // `last_pull_at` is when another machine's changes were last applied: a sync that found
    // none leaves it unset, which "never" would misreport.
    let pulled = match (&s.last_pull_at, &s.last_sync_at) {
        (None, Some(_)) => "nothing from other machines yet".to_string(),
        (p, _) => when(p),
    };
    out!(
        "  last push: {}; last pull: {}; last sync: {}",
        when(&s.last_push_at),
        pulled,
        when(&s.last_sync_at)
    );
    if let Some(p) = &s.pending {
        out!(
            "  waiting to be pushed: {}, {}, {}",
            plural(p.sessions, "session", "sessions"),
            plural(p.messages, "message", "messages"),
            plural(p.deletions, "deletion", "deletions")
        );
    }
    if !s.machines.is_empty() {
        let names: Vec<&str> = s.machines.iter().map(|m| m.label.as_str()).collect();
        out!("  other machines: {}", names.join(", "));
    }
    match (s.pgvector, &s.pgvector_version) {
        (Some(true), Some(v)) => out!("  pgvector {v} in the database"),
        (Some(false), _) => out!("  no pgvector in the database (lexical search only)"),
        _ => {}
    }
    if let Some(e) = &s.last_error {
        out!("  last error: {e}");
    }
    if s.failing {
        out!(
            "  WARNING: sync failing since {}: what waits is not pushed (run `memtrail sync` to see the error)",
            when(&s.failing_since)
        );
    }
}
