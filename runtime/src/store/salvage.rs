//! Salvage: a store whose file is damaged below what `repair` rebuilds (a corrupt b-tree page of
//! `messages`, say) is rebuilt as a new store from every row that can still be read, and the
//! damaged file is kept aside, never deleted.
//!
//! SQLite's `.recover` is a feature of its command-line shell, not of the library, so rows are
//! copied table by table: each table is read in rowid order until a row cannot be read (a
//! corrupt page ends the scan), then in reverse order from its last row down to that point, so
//! the rows on both sides of a damaged page are kept. Tables without a rowid are read until the
//! first error. A row that does not fit the new store (its session was lost, say) is dropped.
//!
//! What is copied: every table of the current schema that the old file also has, column by
//! column (columns both have). The full-text index and its queue are not copied (the caller
//! rebuilds them), nor are the vectors and their backlog (a later `memtrail embed` makes them
//! again); of the transcript cursors (`sources`) only the skip markers are kept
//! (deleted sessions and excluded projects stay out), so that an import reads every transcript
//! still on disk from its start again and restores what the damaged pages held.

use super::Db;
use crate::Result;
use crate::store::{Store, StoreLocation};
use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags, params_from_iter};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What was read from one table.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TableSalvage {
    /// The table's name.
    pub table: String,
    /// Rows copied into the new store.
    pub rows: u64,
    /// Rows read but not copied (they reference a row that was lost).
    pub dropped: u64,
    /// A read stopped at a damaged page: rows there are lost (unless an import restores them).
    pub damaged: bool,
}

/// The result of [`salvage`].
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Salvaged {
    /// Where the damaged file now is: `<store>.damaged-<YYYYMMDDTHHMMSSZ>` (its `-wal` and
    /// `-shm` beside it, with the same suffix).
    pub kept_aside: PathBuf,
    /// Per table, in copy order.
    pub tables: Vec<TableSalvage>,
}

/// Tables copied first, in this order (a row is copied after the rows it references); the other
/// tables of the schema follow in name order.
const ORDER: &[&str] = &[
    "sessions",
    "messages",
    "tool_calls",
    "events",
    "snapshots",
    "sources",
    "hook_runs",
];

/// Rebuild the store at `location` from what can be read of it: a new store with the current schema
/// is made beside it (`<store>.salvage-<stamp>`), every readable row is copied into it (see the
/// module docs), the damaged file is renamed to `<store>.damaged-<stamp>` and the new one takes
/// its place. The new store has no full-text index yet and no cursors: run an import (to read
/// the transcripts still on disk again) and [`Store::repair`] next.
///
/// Call it with no [`Store`] of `location` open in this process. Errors: the new store cannot be
/// created or renamed into place ([`crate::Error::Io`], [`crate::Error::Store`]); the damaged
/// file is then left where it was. A damaged file whose schema cannot even be read gives a new,
/// empty store (and the import restores what the transcripts hold).
pub fn salvage(location: &StoreLocation) -> Result<Salvaged> {
    let db = location.sqlite_file("repair")?;
    // `2026-12-01T16:45:12.345Z` → `20261201T164512Z`.
    let mut stamp: String = memtrail_adapters::format_rfc3339_ms(crate::now_ms())
        .chars()
        .take(19)
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    stamp.push('Z');
    let with_suffix = |p: &Path, suffix: &str| {
        let mut s = p.as_os_str().to_owned();
        s.push(suffix);
        PathBuf::from(s)
    };
    let fresh_path = with_suffix(db, &format!(".salvage-{stamp}"));
    let aside = with_suffix(db, &format!(".damaged-{stamp}"));
    let mut tables = Vec::new();
    {
        let fresh = Store::open(&fresh_path)?;
        let new = &fresh.conn;
        let old = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).db()?;
        let names = |c: &Connection| -> Vec<String> {
            c.prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
                   AND name NOT LIKE 'messages_fts%' AND name != 'fts_pending'
                   AND name NOT IN ('embed_state', 'embed_pending', 'message_vectors')",
            )
            .and_then(|mut s| {
                s.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .unwrap_or_default()
        };
        let in_new = names(new);
        let mut in_old: Vec<String> = names(&old)
            .into_iter()
            .filter(|t| in_new.contains(t))
            .collect();
        in_old.sort_by_key(|t| {
            (
                ORDER.iter().position(|o| o == t).unwrap_or(ORDER.len()),
                t.clone(),
            )
        });
        new.execute_batch("BEGIN IMMEDIATE").db()?;
        for table in in_old {
            tables.push(copy_table(&old, new, &table)?);
        }
        new.execute_batch("COMMIT").db()?;
        // Everything into the main file, so that it can be moved alone.
        new.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .db()?;
    }
    // The damaged file (with its WAL, which the copy has read) goes aside; the new one in.
    for suffix in ["", "-wal", "-shm"] {
        let from = with_suffix(db, suffix);
        if from.exists() {
            std::fs::rename(&from, with_suffix(&aside, suffix))?;
        }
    }
    // (A WAL left by the checkpoint, if any, moves with its file.)
    for suffix in ["", "-wal", "-shm"] {
        let from = with_suffix(&fresh_path, suffix);
        if from.exists() {
            std::fs::rename(&from, with_suffix(db, suffix))?;
        }
    }
    Ok(Salvaged {
        kept_aside: aside,
        tables,
    })
}

fn columns(c: &Connection, table: &str) -> Vec<String> {
    c.prepare(&format!("PRAGMA table_info(\"{table}\")"))
        .and_then(|mut s| {
            s.query_map([], |r| r.get::<_, String>(1))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .unwrap_or_default()
}

/// Copy the readable rows of `table` (see the module docs).
fn copy_table(old: &Connection, new: &Connection, table: &str) -> Result<TableSalvage> {
    let new_cols = columns(new, table);
    let cols: Vec<String> = columns(old, table)
        .into_iter()
        .filter(|c| new_cols.contains(c))
        .collect();
    let mut out = TableSalvage {
        table: table.to_string(),
        rows: 0,
        dropped: 0,
        damaged: false,
    };
    if cols.is_empty() {
        return Ok(out);
    }
    let list = cols
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let marks = vec!["?"; cols.len()].join(", ");
    let mut insert = new
        .prepare(&format!(
            "INSERT OR IGNORE INTO \"{table}\" ({list}) VALUES ({marks})"
        ))
        .db()?;
    // Only the skip markers of the cursors (deleted sessions, excluded projects).
    let only = if table == "sources" {
        " AND reader_state LIKE '%\"memtrail_skip\"%'"
    } else {
        ""
    };
    let mut put =
        |vals: Vec<Value>, out: &mut TableSalvage| match insert.execute(params_from_iter(vals)) {
            Ok(_) => out.rows += 1,
            Err(_) => out.dropped += 1,
        };
    let n = cols.len();
    let forward = old.prepare(&format!(
        "SELECT rowid, {list} FROM \"{table}\" WHERE 1{only} ORDER BY rowid"
    ));
    let Ok(mut forward) = forward else {
        // No rowid (WITHOUT ROWID): one scan, until the first error.
        let Ok(mut all) = old.prepare(&format!("SELECT {list} FROM \"{table}\" WHERE 1{only}"))
        else {
            out.damaged = true;
            return Ok(out);
        };
        let Ok(mut rows) = all.query([]) else {
            out.damaged = true;
            return Ok(out);
        };
        loop {
            match rows.next() {
                Ok(Some(r)) => {
                    let vals: rusqlite::Result<Vec<Value>> = (0..n).map(|i| r.get(i)).collect();
                    match vals {
                        Ok(v) => put(v, &mut out),
                        Err(_) => out.dropped += 1,
                    }
                }
                Ok(None) => break,
                Err(_) => {
                    out.damaged = true;
                    break;
                }
            }
        }
        return Ok(out);
    };
    let mut last: Option<i64> = None;
    let mut complete = false;
    if let Ok(mut rows) = forward.query([]) {
        loop {
            match rows.next() {
                Ok(Some(r)) => {
                    let rowid: rusqlite::Result<i64> = r.get(0);
                    let vals: rusqlite::Result<Vec<Value>> = (1..=n).map(|i| r.get(i)).collect();
                    match (rowid, vals) {
                        (Ok(id), Ok(v)) => {
                            last = Some(id);
                            put(v, &mut out);
                        }
                        _ => out.dropped += 1,
                    }
                }
                Ok(None) => {
                    complete = true;
                    break;
                }
                Err(_) => break,
            }
        }
    }
    if complete {
        return Ok(out);
    }
    out.damaged = true;
    // From the end back to where the forward scan stopped.
    let floor = last.unwrap_or(i64::MIN);
    let Ok(mut backward) = old.prepare(&format!(
        "SELECT rowid, {list} FROM \"{table}\" WHERE rowid > ?1{only} ORDER BY rowid DESC"
    )) else {
        return Ok(out);
    };
    let Ok(mut rows) = backward.query([floor]) else {
        return Ok(out);
    };
    while let Ok(Some(r)) = rows.next() {
        let vals: rusqlite::Result<Vec<Value>> = (1..=n).map(|i| r.get(i)).collect();
        match vals {
            Ok(v) => put(v, &mut out),
            Err(_) => out.dropped += 1,
        }
    }
    Ok(out)
}

/// What [`reimport`] did.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Reimported {
    /// Messages stored from the transcripts read again.
    pub messages: u64,
    /// Transcripts not read (see [`reimport`]), by path.
    pub left_out: Vec<String>,
}

/// Read the transcripts still on disk into a store that [`salvage`] just rebuilt, restoring
/// what the damaged pages held.
///
/// `markers_whole`: every skip marker of the cursors (`sources`) was copied. Then every
/// transcript is read, as by `memtrail import` (sessions the user deleted stay marked, so they
/// stay out). Otherwise a marker of a deleted session may be among the lost rows, and reading
/// every transcript could bring that session back: only the transcripts of sessions the
/// salvaged store holds (or whose parent session it holds) are read, and the others are listed
/// in [`Reimported::left_out`] for the user to import if they want them (`memtrail import`).
///
/// Errors: a store error, or a memtrail config that cannot be read (as `memtrail import`).
/// A transcript that cannot be read is passed over.
pub fn reimport(store: &mut Store, markers_whole: bool) -> Result<Reimported> {
    let agents = memtrail_adapters::supported_agents();
    let mut out = Reimported::default();
    if markers_whole {
        let s = crate::import::import(store, agents, None, &mut |_| {})?;
        out.messages = s.agents.iter().map(|a| a.messages).sum();
        return Ok(out);
    }
    crate::privacy::Privacy::load()?;
    for &agent in agents {
        let Ok(found) = memtrail_adapters::discover(agent) else {
            continue;
        };
        for path in found.files {
            let held = memtrail_adapters::identify(agent, &path)
                .ok()
                .filter(|_| {
                    !matches!(
                        memtrail_adapters::source_for(agent, &path),
                        Some(memtrail_adapters::Source::Database)
                    )
                })
                .map(|sref| {
                    let ids = std::iter::once(sref.external_id.clone())
                        .chain(sref.parent_external_id.clone());
                    ids.into_iter().any(|id| {
                        store
                            .conn
                            .query_row(
                                "SELECT EXISTS (SELECT 1 FROM sessions
                                 WHERE agent = ?1 AND external_id = ?2 AND origin = '')",
                                rusqlite::params![agent.as_str(), id],
                                |r| r.get::<_, bool>(0),
                            )
                            .unwrap_or(false)
                    })
                });
            if held != Some(true) {
                out.left_out.push(path.display().to_string());
                continue;
            }
            match crate::ingest::ingest_at_rest(store, agent, &path, None, None) {
                Ok(r) => out.messages += r.inserted,
                Err(
                    crate::Error::Io(_) | crate::Error::Invalid(_) | crate::Error::Unsupported(_),
                ) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(out)
}
