//! The schema: its version, the numbered migrations (`migrations/NNNN_*.sql`) and the upgrade
//! of an older store.

use super::Db;
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
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .db()
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
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .db()?;
        // Re-check under the write lock: another process may have migrated meanwhile.
        let v: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0)).db()?;
        if v > SCHEMA_VERSION {
            return Err(Error::NewerSchema {
                path: self.path.clone(),
                found: v,
                supported: SCHEMA_VERSION,
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(v as usize) {
            tx.execute_batch(sql).db()?;
            if (i + 1) as i64 == EVENTS_SCHEMA && v > 0 {
                Writer::new(&tx).backfill_events(&crate::records::Standard)?;
            }
            tx.pragma_update(None, "user_version", (i + 1) as i64)
                .db()?;
        }
        tx.commit().db()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sqlite_master` (type, name, SQL), sorted: the schema as SQLite keeps it.
    fn schema_of(c: &rusqlite::Connection) -> Vec<(String, String, Option<String>)> {
        let mut stmt = c
            .prepare("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    /// A store left at every older version by the migrations up to it is upgraded to the same
    /// schema, byte for byte, as a new store, with the version and FTS5 options of a new store.
    #[test]
    fn every_older_version_upgrades_to_the_schema_of_a_new_store() {
        assert_eq!(MIGRATIONS.len() as i64, SCHEMA_VERSION);
        let d = tempfile::tempdir().unwrap();
        let fresh = Store::open(&d.path().join("new.db")).unwrap();
        let want = schema_of(&fresh.conn);
        assert!(want.iter().any(|(_, n, _)| n == "fts_pending"));
        for v in 1..SCHEMA_VERSION {
            let path = d.path().join(format!("v{v}.db"));
            {
                let c = rusqlite::Connection::open(&path).unwrap();
                for sql in &MIGRATIONS[..v as usize] {
                    c.execute_batch(sql).unwrap();
                }
                c.pragma_update(None, "user_version", v).unwrap();
            }
            let s = Store::open(&path).unwrap();
            assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION, "from {v}");
            assert_eq!(schema_of(&s.conn), want, "from {v}");
            let secure: i64 = s
                .conn
                .query_row(
                    "SELECT v FROM messages_fts_config WHERE k = 'secure-delete'",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(secure, 1, "from {v}");
        }
    }

    /// A released migration never changes (a store that ran it would not run it again): the
    /// BLAKE3 hash of each `migrations/NNNN_*.sql`, as released. A new schema adds a file.
    #[test]
    fn released_migrations_are_unchanged() {
        let hashes: Vec<String> = MIGRATIONS
            .iter()
            .map(|m| blake3::hash(m.as_bytes()).to_hex()[..16].to_string())
            .collect();
        assert_eq!(
            hashes,
            [
                "d8550f5602b9adf4",
                "e7ec67f8ee15695d",
                "045657e0c2c086d9",
                "8319364360ac35f1",
                "102ba1d0c4582330",
            ]
        );
    }
}
