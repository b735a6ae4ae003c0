//! `memtrail repair`: rebuild the derived data; salvage a damaged store.

use crate::common::open_store;
use crate::output::printable;
use anyhow::{Context, Result, bail};
use memtrail_runtime::Store;
use memtrail_runtime::StoreLocation;
use memtrail_runtime::salvage::Salvaged;
use memtrail_runtime::store::RepairStepReport;
use serde::Serialize;
use std::process::ExitCode;

/// `repair --json` when the store's file was damaged and salvaged (schema: docs/json.md); an
/// undamaged store's repair prints its `RepairReport` (`steps`, `integrity`).
#[derive(Serialize)]
struct SalvagedRepair<'a> {
    damage: &'a str,
    salvaged: &'a Salvaged,
    reimported_messages: u64,
    left_out: &'a [String],
    steps: &'a [RepairStepReport],
    integrity: &'a [String],
}

/// `memtrail repair`: rebuild the derived data ([`Store::repair`]). When the file itself is
/// damaged (the repair meets a corrupt page, or the integrity check still fails after it), what
/// can be read is salvaged into a new store, the damaged file is kept aside (its path printed),
/// the transcripts still on disk are imported again, and the repair runs on the new store:
/// never a store with nothing in it while something could be read.
pub fn repair(db: &StoreLocation, json: bool) -> Result<ExitCode> {
    use memtrail_runtime::store::is_corrupt;
    if !db.exists() {
        bail!("there is no store at {} (nothing to repair)", db);
    }
    let pb = crate::output::spinner(
        "repairing: rebuilding the derived data, then the integrity check",
        json,
    );
    let first = Store::open(db).and_then(|mut s| s.repair());
    pb.finish_and_clear();
    let damage = match &first {
        Ok(report) if report.ok() => None,
        Ok(report) => Some(report.integrity.join("; ")),
        Err(e) if is_corrupt(e) => Some(e.to_string()),
        Err(_) => None,
    };
    let Some(damage) = damage else {
        let report = first.context("repair stopped")?;
        print_repair(&report, json)?;
        return Ok(if report.ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    };
    if !json {
        out!(
            "the store's file is damaged ({}): salvaging what can be read into a new store",
            memtrail_adapters::one_line(&damage, 160)
        );
    }
    let salvaged = memtrail_runtime::salvage::salvage(db).context("salvage stopped")?;
    if !json {
        for t in &salvaged.tables {
            out!(
                "  {}: {} rows kept{}{}",
                t.table,
                t.rows,
                if t.dropped > 0 {
                    format!(", {} dropped (they referred to lost rows)", t.dropped)
                } else {
                    String::new()
                },
                if t.damaged { ", some unreadable" } else { "" }
            );
        }
        out!(
            "the damaged file is kept at {} (delete it once you are content)",
            salvaged.kept_aside.display()
        );
    }
    let mut store = open_store(db)?;
    // The cursors' skip markers (sessions the user deleted) all copied, or some lost.
    let markers_whole = salvaged
        .tables
        .iter()
        .any(|t| t.table == "sources" && !t.damaged);
    let reimport = memtrail_runtime::salvage::reimport(&mut store, markers_whole)
        .context("importing the transcripts again")?;
    let added = reimport.messages;
    if !json {
        out!("transcripts still on disk imported again: {added} messages restored");
        if !reimport.left_out.is_empty() {
            out!(
                "{} not imported again: their sessions are not in the salvaged store, and the list of sessions you deleted was damaged, so they may be among them; `memtrail import` reads them:",
                match reimport.left_out.len() {
                    1 => "1 transcript".to_string(),
                    n => format!("{n} transcripts"),
                }
            );
            for p in &reimport.left_out {
                out!("  {}", printable(p, &[]));
            }
        }
    }
    let report = store.repair().context("repair stopped")?;
    if json {
        out!(
            "{}",
            crate::output::json(&SalvagedRepair {
                damage: &damage,
                salvaged: &salvaged,
                reimported_messages: added,
                left_out: &reimport.left_out,
                steps: &report.steps,
                integrity: &report.integrity,
            })?
        );
    } else {
        print_repair(&report, false)?;
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// A repair's report: one line per step and the integrity check, or its JSON.
pub fn print_repair(report: &memtrail_runtime::store::RepairReport, json: bool) -> Result<()> {
    if json {
        out!("{}", crate::output::json(report)?);
        return Ok(());
    }
    for s in &report.steps {
        out!(
            "{}: {}; {} ({} ms)",
            s.name,
            s.what,
            match (s.name.as_str(), s.fixed) {
                ("stored text", 0) => "nothing to rewrite".to_string(),
                ("stored text", n) => format!("{n} rewritten"),
                ("damaged parts", n) => format!("{n} taken out"),
                ("file size", n) => format!("{n} pages given back"),
                (_, 0) => "nothing was wrong".to_string(),
                (_, n) => format!("{n} wrong, fixed"),
            },
            s.millis
        );
    }
    if report.ok() {
        out!("integrity check: ok");
    } else {
        out!("integrity check FAILED:");
        for line in &report.integrity {
            out!("  {line}");
        }
    }
    Ok(())
}
