//! The schema: its version, the numbered migrations (`migrations/NNNN_*.sql`) and the upgrade
//! of an older store.

use super::{Store, Writer};
use crate::{Error, Result};
use rusqlite::TransactionBehavior;

/// The schema version this binary writes. A store with a higher version is refused.
pub const SCHEMA_VERSION: i64 = 5;

/// The migrations, in order: migration `i` (1-based) takes a store from schema version `i - 1` to
/// `i`. Each is one SQL batch (`migrations/NNNN_*.sql`), run in the same transaction as the
/// others a store needs; `PRAGMA user_version` is set after each.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_initial.sql"),
    include_str!("migrations/0002_reader_state.sql"),
    include_str!("migrations/0003_events_snapshots.sql"),
    include_str!("migrations/0004_fts_queue.sql"),
    include_str!("migrations/0005_fts_secure_delete.sql"),
];

/// The schema version whose migration creates the `events` table; a store migrated across it
/// gets the events of its stored messages extracted in the same transaction.
const EVENTS_SCHEMA: i64 = 3;

impl Store {
    pub(super) fn schema_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    pub(super) fn migrate(&self) -> Result<()> {
        let v = self.schema_version()?;
        if v == SCHEMA_VERSION {
            return Ok(());
        }
        if v > SCHEMA_VERSION {
            return Err(Error::NewerSchema {
                path: self.path.clone(),
                found: v,
                supported: SCHEMA_VERSION,
            });
        }
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        // Re-check under the write lock: another process may have migrated meanwhile.
        let v: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if v > SCHEMA_VERSION {
            return Err(Error::NewerSchema {
                path: self.path.clone(),
                found: v,
                supported: SCHEMA_VERSION,
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(v as usize) {
            tx.execute_batch(sql)?;
            if (i + 1) as i64 == EVENTS_SCHEMA && v > 0 {
                Writer::new(&tx).backfill_events()?;
            }
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        }
        tx.commit()?;
        Ok(())
    }
}
