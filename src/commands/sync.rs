//! `memtrail sync [--init URL [--label NAME]] [--json]`: push this machine's sessions to
//! PostgreSQL and pull the other machines' (docs/sync.md).

use crate::commands::sync_auto;
use crate::common::open_store;
use crate::output::error_chain;
use crate::output::plural;
use anyhow::{Result, bail};
use memtrail_pg::engine::{
    self, Identity, InitReport, Progress, SyncLock, SyncOptions, SyncOutput,
};
use memtrail_pg::migrate::{MIGRATIONS, Vector, migrate};
use memtrail_pg::settings::{SyncSettings, hostname, is_machine_id, new_machine_id};
use memtrail_pg::{Pg, PgConfig};
use memtrail_runtime::StoreLocation;
use memtrail_runtime::privacy::{Privacy, config_path};
use std::io::IsTerminal;
use std::process::ExitCode;

/// `memtrail sync`: with `init`, set up first (connect, migrate, keep the URL and the machine
/// id in the config, queue every stored session); then push and pull until nothing is left.
/// A progress bar on stderr on a terminal; a summary line (or JSON) on stdout.
/// The warning `sync --init URL` gives on stderr when the URL holds a password.
pub const PASSWORD_IN_ARGS: &str = "the password is visible to other local users in the process \
    list while this runs; prefer PGPASSWORD or ~/.pgpass";

pub fn sync(
    db: &StoreLocation,
    init: Option<String>,
    label: Option<String>,
    json: bool,
) -> Result<ExitCode> {
    sync_auto::local_path(db)?;
    if let Some(l) = &label {
        memtrail_runtime::machine::check_label(l)?;
    }
    if let Some(url) = &init
        && PgConfig::parse(url).is_ok_and(|c| c.password.is_some())
    {
        eprintln!("memtrail: warning: {PASSWORD_IN_ARGS}");
    }
    let path = config_path();
    let mut settings = SyncSettings::load(&path)?;
    let privacy = Privacy::load()?;
    let options = SyncOptions::from_env()?;
    // Opening the store creates it (and its 0700 folder), where the lock file goes.
    let mut store = open_store(db)?;
    // One sync at a time: a background one (started by a hook) is usually done in a moment.
    let _lock = match SyncLock::try_acquire(store.path())? {
        Some(l) => l,
        None => {
            eprintln!("memtrail: another sync of the store {db} is running; waiting for it to end");
            SyncLock::acquire(store.path())?
        }
    };
    let url = match (&init, &settings.url) {
        (Some(u), _) => u.clone(),
        (None, Some(u)) => u.clone(),
        (None, None) => bail!(
            "sync is not set up: run `memtrail sync --init postgres://USER@HOST/DB` (see \
             `memtrail sync --help`)"
        ),
    };
    let connected = (|| -> Result<_> {
        let config = PgConfig::parse(&url)?;
        let mut pg = Pg::connect(&config)?;
        for w in pg.warnings() {
            eprintln!("memtrail: warning: {}", crate::output::terminal_safe(w));
        }
        let schema = migrate(&mut pg, MIGRATIONS)?;
        Ok((pg, schema))
    })();
    let (mut pg, schema) = match connected {
        Ok(c) => c,
        Err(e) => {
            // A sync of a machine set up (not `--init`) that cannot reach its database is
            // recorded for `memtrail status`, as a background sync's is.
            if init.is_none() {
                let _ = store.record_sync_error(Some(&error_chain(&e)));
            }
            return Err(e);
        }
    };
    sync_auto::record_pgvector(&mut store, &schema.vector)?;
    let mut init_report = None;
    let store_machine = store.sync_state("machine")?;
    if init.is_some() {
        // The config's id, else the one this store was set up with, else a new one.
        let machine = match settings
            .machine
            .clone()
            .or(store_machine.clone())
            .filter(|m| is_machine_id(m))
        {
            Some(m) => m,
            None => new_machine_id()?,
        };
        check_store_machine(store_machine.as_deref(), &machine, db)?;
        let label = label.or(settings.label.clone()).unwrap_or_else(hostname);
        settings = SyncSettings {
            url: Some(url.clone()),
            machine: Some(machine.clone()),
            label: Some(label.clone()),
        };
        settings.save(&path)?;
        let queued = store.sync_enable(&machine)?;
        let others = pg.machines()?.iter().filter(|m| m.id != machine).count() as u64;
        let (pgvector, pgvector_note) = match &schema.vector {
            Vector::Installed(v) => (Some(v.clone()), None),
            _ => (None, Some(schema.to_string())),
        };
        init_report = Some(InitReport {
            machine,
            label,
            url: pg.target().to_string(),
            schema_version: schema.version,
            migrated: schema.applied.clone(),
            pgvector,
            pgvector_note,
            other_machines: others,
            queued,
        });
    }
    let (Some(machine), label) = (settings.machine.clone(), settings.label.clone()) else {
        bail!(
            "memtrail's config {} has a [sync] url but no machine id: run `memtrail sync --init` \
             with the URL again",
            path.display()
        );
    };
    check_store_machine(store_machine.as_deref(), &machine, db)?;
    if !store.sync_enabled()? {
        // A new store on a machine already set up: queue what it holds.
        store.sync_enable(&machine)?;
    }
    let me = Identity {
        machine,
        label: label.unwrap_or_else(hostname),
    };
    if let Some(r) = &init_report
        && !json
    {
        out!(
            "sync set up: machine {} ({}) with {}; {}; {} other {} already there; {} queued",
            r.machine,
            r.label,
            r.url,
            schema,
            r.other_machines,
            if r.other_machines == 1 {
                "machine"
            } else {
                "machines"
            },
            plural(r.queued, "entry", "entries")
        );
    }
    let bar = progress_bar(json);
    // A background sync that found the lock taken left the rerun mark: once more, so that
    // what its hook stored is pushed too.
    let mark = sync_auto::rerun_path(store.path());
    let mut done: Option<engine::SyncReport> = None;
    let result = loop {
        sync_auto::take_mark(&mark);
        let pass = engine::sync(
            &mut store,
            &mut pg,
            &me,
            &privacy,
            &options,
            &mut |p| match p {
                Progress::Push { messages, queued } => {
                    bar.set_length(queued.max(messages));
                    bar.set_position(messages);
                    bar.set_message("pushing");
                }
                Progress::Pull { label, messages } => {
                    bar.set_message(pull_message(label, messages));
                }
                Progress::NewDatabase { .. }
                | Progress::RestoredDatabase { .. }
                | Progress::SharedMachineId { .. }
                | Progress::SharedLabel { .. } => {
                    if let Some(n) = sync_auto::progress_note(&p) {
                        bar.suspend(|| eprintln!("{}", crate::output::terminal_safe(&n)));
                    }
                }
                Progress::VectorIndex { model } => {
                    bar.set_message(format!("building the search index of {model}'s vectors"));
                }
            },
        );
        match pass {
            Ok(r) => {
                let r = sync_auto::add_reports(done.take(), r);
                if !mark.exists() {
                    break Ok(r);
                }
                done = Some(r);
            }
            Err(e) => break Err(e),
        }
    };
    bar.finish_and_clear();
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            // Kept for `memtrail status`; the text holds no password (errors mask it).
            let _ = store.record_sync_error(Some(&e.to_string()));
            return Err(e.into());
        }
    };
    store.record_sync_error(None)?;
    store.set_sync_state(
        "last_sync_at",
        Some(&memtrail_runtime::now_ms().to_string()),
    )?;
    if report.pushed.vectors_skipped > 0 {
        eprintln!(
            "note: {} not pushed: the database has no pgvector, so search by meaning on it is \
             not available (lexical search works); `memtrail sync --init URL` says what an \
             administrator runs",
            plural(
                report.pushed.vectors_skipped,
                "message vector",
                "message vectors"
            )
        );
    }
    if let Some(e) = &report.vector_index_error {
        eprintln!(
            "memtrail: warning: could not build the search index of the vectors in the \
             database (searches by meaning there score every vector): {}",
            crate::output::terminal_safe(e)
        );
    }
    if let Some(n) = report.vector_index {
        eprintln!(
            "note: built the search index (IVFFlat) of {} in the database: searches by \
             meaning there read the nearest lists instead of scoring every vector",
            plural(n, "vector", "vectors")
        );
    }
    if json {
        let output = SyncOutput {
            init: init_report,
            sync: report,
        };
        out!("{}", crate::output::json(&output)?);
        return Ok(ExitCode::SUCCESS);
    }
    let (p, q) = (&report.pushed, &report.pulled);
    out!(
        "synced with {}: pushed {} in {}{}{}, {}; pulled {} in {} from {}{}; {:.2} s{}",
        report.url,
        plural(p.messages, "message", "messages"),
        plural(p.sessions, "session", "sessions"),
        if p.bytes > 0 {
            format!(" ({})", human_bytes(p.bytes))
        } else {
            String::new()
        },
        if p.vectors > 0 {
            format!(" with {}", plural(p.vectors, "vector", "vectors"))
        } else {
            String::new()
        },
        plural(p.deletions, "deletion", "deletions"),
        plural(q.messages, "message", "messages"),
        plural(q.sessions, "session", "sessions"),
        plural(q.machines, "other machine", "other machines"),
        if q.deleted_sessions > 0 {
            format!(
                ", {} deleted",
                plural(q.deleted_sessions, "session", "sessions")
            )
        } else {
            String::new()
        },
        report.elapsed_ms as f64 / 1000.0,
        deleted_elsewhere_note(p.deleted_elsewhere),
    );
    Ok(ExitCode::SUCCESS)
}

/// The progress bar's message while pulling from the machine labelled `label` (written by
/// whoever can write to PostgreSQL): redacted, and made safe for the terminal
/// ([`crate::output::terminal_safe`]), as every other line memtrail prints.
fn pull_message(label: &str, messages: u64) -> String {
    let msg = format!("pulling from {label}: {messages} messages");
    crate::output::terminal_safe(&memtrail_runtime::redact::redact(&msg)).into_owned()
}

/// The summary line's note on this machine's sessions that another machine deleted
/// (`Pushed::deleted_elsewhere`): empty when there are none.
fn deleted_elsewhere_note(n: u64) -> String {
    match n {
        0 => String::new(),
        1 => "; 1 session was deleted on another machine and is not pushed".to_string(),
        n => format!("; {n} sessions were deleted on another machine and are not pushed"),
    }
}

/// A store set up for sync as one machine is never synced as another: its own sessions would
/// come back from PostgreSQL as the other machine's (a copied or edited config).
///
/// Errors: `store_machine` (the store's `sync_state` `machine`) is set and is not `machine`.
pub(super) fn check_store_machine(
    store_machine: Option<&str>,
    machine: &str,
    db: &StoreLocation,
) -> Result<()> {
    match store_machine {
        Some(m) if m != machine => bail!(
            "the store {db} syncs as machine {m} but memtrail's config says {machine}: put \
             `machine = \"{m}\"` under [sync] in {} (or use another store)",
            config_path().display()
        ),
        _ => Ok(()),
    }
}

/// A progress bar on stderr when it is a terminal (and not `--json`), else hidden.
fn progress_bar(json: bool) -> indicatif::ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} sync [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar
}

/// `n` bytes as `812 B`, `1.2 KB`, `3.4 MB`, `1.1 GB` (powers of 1000).
fn human_bytes(n: u64) -> String {
    match n {
        0..1_000 => format!("{n} B"),
        1_000..1_000_000 => format!("{:.1} KB", n as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} MB", n as f64 / 1e6),
        _ => format!("{:.1} GB", n as f64 / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::pull_message;

    #[test]
    fn the_pull_progress_message_cannot_drive_the_terminal() {
        assert_eq!(
            pull_message("evil\x1b]0;PWNED\x07\x1b[31mRED\x1b[0m\r\x1b[2Kfake", 7),
            "pulling from evil\u{fffd}]0;PWNED\u{fffd}\u{fffd}[31mRED\u{fffd}[0m\u{fffd}\u{fffd}[2Kfake: 7 messages"
        );
        assert_eq!(
            pull_message("lab-AKIAQ7WERTYUI4PASDFG", 1),
            "pulling from lab-[redacted:aws_access_key]: 1 messages"
        );
        assert_eq!(pull_message("desk", 0), "pulling from desk: 0 messages");
    }
}
