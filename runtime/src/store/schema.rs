//! The schema: its version, the numbered migrations (`migrations/NNNN_*.sql`) and the upgrade
//! of an older store.

use super::Db;
use super::{Store, Writer};
use crate::{Error, Result};

/// The schema version this binary writes. A store with a higher version is refused.
pub const SCHEMA_VERSION: i64 = 22;

/// The migrations, in order: migration `i` (1-based) takes a store from schema version `i - 1` to
/// `i`. Each is one SQL batch (`migrations/NNNN_*.sql`), run in the same transaction as the
/// others a store needs; `PRAGMA user_version` is set after each.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_initial.sql"),
    include_str!("migrations/0002_reader_state.sql"),
    include_str!("migrations/0003_events_snapshots.sql"),
    include_str!("migrations/0004_fts_queue.sql"),
    include_str!("migrations/0005_fts_secure_delete.sql"),
    include_str!("migrations/0006_sync.sql"),
    include_str!("migrations/0007_vectors.sql"),
    include_str!("migrations/0008_activity.sql"),
    include_str!("migrations/0009_status_index.sql"),
    include_str!("migrations/0010_sync_vectors.sql"),
    include_str!("migrations/0011_session_last_message.sql"),
    include_str!("migrations/0012_snapshot_states.sql"),
    include_str!("migrations/0013_packed_parts.sql"),
    include_str!("migrations/0014_body_once.sql"),
    include_str!("migrations/0015_snapshot_state_inserts.sql"),
    include_str!("migrations/0016_snapshot_state_after_end.sql"),
    include_str!("migrations/0017_sync_deleted.sql"),
    include_str!("migrations/0018_role_index.sql"),
    include_str!("migrations/0019_events_one_session_index.sql"),
    include_str!("migrations/0020_nul_shown.sql"),
    include_str!("migrations/0021_parts_dictionary.sql"),
    include_str!("migrations/0022_prompt_subject_once.sql"),
];

/// The name of each migration (its file's name without the number), in the order of
/// [`MIGRATIONS`], as [`Migrating::name`] gives it.
const MIGRATION_NAMES: [&str; MIGRATIONS.len()] = [
    "initial",
    "reader_state",
    "events_snapshots",
    "fts_queue",
    "fts_secure_delete",
    "sync",
    "vectors",
    "activity",
    "status_index",
    "sync_vectors",
    "session_last_message",
    "snapshot_states",
    "packed_parts",
    "body_once",
    "snapshot_state_inserts",
    "snapshot_state_after_end",
    "sync_deleted",
    "role_index",
    "events_one_session_index",
    "nul_shown",
    "parts_dictionary",
    "prompt_subject_once",
];

/// A migration about to run, as [`Store::open_with_progress`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migrating {
    /// The store's schema version before the upgrade (0: a new store).
    pub from: i64,
    /// The version this migration takes the store to (its number, `migrations/NNNN_*.sql`).
    pub to: i64,
    /// The version the upgrade ends at ([`SCHEMA_VERSION`]).
    pub last: i64,
    /// The migration's name (`activity` for `0008_activity.sql`).
    pub name: &'static str,
}

/// What [`Store::migrate`] tells before each migration it runs.
pub(super) type MigrationProgress<'a> = Option<&'a mut dyn FnMut(Migrating)>;

/// The schema version whose migration creates the `events` table; a store migrated across it
/// gets the events of its stored messages extracted in the same transaction.
const EVENTS_SCHEMA: i64 = 3;

/// The schema version whose migration (`0013_packed_parts.sql`) is preceded by
/// [`rename_column`] (`tools` to `tools_text`) and followed by
/// [`rewrite_declarations`].
const PACKED_SCHEMA: i64 = 13;

/// The schema version whose migration (`0014_body_once.sql`) is preceded by `messages.parts`
/// renamed `parts_packed` ([`rename_column`]).
const BODY_ONCE_SCHEMA: i64 = 14;

/// The schema version whose migration (`0021_parts_dictionary.sql`) is preceded by
/// `messages.parts_packed` renamed `parts_zdict` ([`rename_column`]): its frames may be
/// compressed with the parts dictionary (`store::parts_dictionary`), which a memtrail from
/// before cannot read.
const DICTIONARY_SCHEMA: i64 = 21;

impl Store {
    pub(super) fn schema_version(&self) -> Result<i64> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .db()
    }

    pub(super) fn migrate(&self, progress: MigrationProgress<'_>) -> Result<()> {
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
        // Migration 6 rebuilds `sessions` (a new table, the rows copied, the old one dropped):
        // with foreign keys on, the drop would delete every message through `ON DELETE
        // CASCADE`. `PRAGMA foreign_keys` is a no-op inside a transaction, so it is turned off
        // around it (and the keys are checked before the commit).
        self.conn.execute_batch("PRAGMA foreign_keys = OFF").db()?;
        let r = self.migrate_from(progress);
        self.conn.execute_batch("PRAGMA foreign_keys = ON").db()?;
        r
    }

    /// The migrations of [`Store::migrate`] from the stored version on (read again under the
    /// write lock), in one transaction, with foreign keys off (the caller's doing); rolled back
    /// when they leave more rows with a broken foreign key than there were before
    /// ([`Error::Invalid`]). `progress` is told of each migration before it runs (the ones run
    /// again after a rollback to count broken rows are not told twice).
    fn migrate_from(&self, mut progress: MigrationProgress<'_>) -> Result<()> {
        let tx = super::begin_immediate(&self.conn).db()?;
        // Re-check under the write lock: another process may have migrated meanwhile.
        let v: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0)).db()?;
        if v > SCHEMA_VERSION {
            return Err(Error::NewerSchema {
                path: self.path.clone(),
                found: v,
                supported: SCHEMA_VERSION,
            });
        }
        if v == SCHEMA_VERSION {
            return Ok(());
        }
        let run = |progress: &mut MigrationProgress<'_>| -> Result<()> {
            for (i, sql) in MIGRATIONS.iter().enumerate().skip(v as usize) {
                if let Some(p) = progress.as_deref_mut() {
                    p(Migrating {
                        from: v,
                        to: (i + 1) as i64,
                        last: SCHEMA_VERSION,
                        name: MIGRATION_NAMES[i],
                    });
                }
                run_migration(&tx, (i + 1) as i64, sql)?;
                if (i + 1) as i64 == EVENTS_SCHEMA && v > 0 {
                    Writer::new(&tx).backfill_events(&crate::records::Standard)?;
                }
                tx.pragma_update(None, "user_version", (i + 1) as i64)
                    .db()?;
            }
            Ok(())
        };
        // Every foreign key is checked once after the migrations (half a second per 300 000
        // messages). Rows already broken before them (a store damaged earlier) do not stop the
        // upgrade, rows they break do: only when some are broken is the store counted before
        // the migrations too (rolled back to the savepoint, counted, migrated again).
        tx.execute_batch("SAVEPOINT migrations").db()?;
        run(&mut progress)?;
        let broken_after = broken_references(&tx)?;
        if broken_after > 0 {
            tx.execute_batch("ROLLBACK TO migrations").db()?;
            let broken_before = broken_references(&tx)?;
            if broken_after > broken_before {
                return Err(Error::Invalid(format!(
                    "the store's upgrade to schema {SCHEMA_VERSION} would leave {} rows \
                     pointing at rows that are gone; nothing was changed",
                    broken_after - broken_before
                )));
            }
            run(&mut None)?;
        }
        tx.execute_batch("RELEASE migrations").db()?;
        tx.commit().db()?;
        Ok(())
    }
}

/// Whether `messages` has a column named `name` (a store's columns change name across
/// migrations: `tools`, `parts`).
///
/// Errors: SQLite's.
pub(super) fn has_message_column(c: &rusqlite::Connection, name: &str) -> Result<bool> {
    c.query_row(
        "SELECT count(*) > 0 FROM pragma_table_info('messages') WHERE name = ?1",
        [name],
        |r| r.get(0),
    )
    .db()
}

/// Migration `to` (its SQL, `sql`) with the steps SQLite's SQL cannot take before or after it
/// ([`rename_column`], [`rewrite_declarations`]); the events' backfill of migration 3 is the
/// caller's.
fn run_migration(tx: &rusqlite::Connection, to: i64, sql: &str) -> Result<()> {
    if to == PACKED_SCHEMA {
        rename_column(tx, "tools", "tools_text")?;
    }
    if to == BODY_ONCE_SCHEMA {
        rename_column(tx, "parts", "parts_packed")?;
    }
    // A store set back by hand to a version from 14 to 20 has the column under its schema 21
    // name; migrations 15 to 20 name it `parts_packed` (20 writes it into the index's content
    // view, which SQLite accepts for a column that does not exist).
    if to > BODY_ONCE_SCHEMA && to < DICTIONARY_SCHEMA {
        rename_column(tx, "parts_zdict", "parts_packed")?;
    }
    if to == DICTIONARY_SCHEMA {
        rename_column(tx, "parts_packed", "parts_zdict")?;
    }
    tx.execute_batch(sql).db()?;
    if to == PACKED_SCHEMA {
        rewrite_declarations(tx)?;
    }
    Ok(())
}

/// A column of `messages` renamed (SQLite rewrites the view and triggers that name it), unless
/// it already was (a store whose version was set back by hand, as tests do): `tools` to
/// `tools_text` before schema 13, `parts` to `parts_packed` before schema 14, `parts_packed` to
/// `parts_zdict` before schema 21. A memtrail from
/// before that still runs (an MCP server or an `import` started before the upgrade) then fails
/// on the column instead of reading or writing a row in a form it does not know.
fn rename_column(tx: &rusqlite::Connection, from: &str, to: &str) -> Result<()> {
    if has_message_column(tx, from)? {
        // Unquoted: SQLite writes the new name into the table's SQL as it is given here.
        tx.execute_batch(&format!(
            "ALTER TABLE messages RENAME COLUMN {from} TO {to}"
        ))
        .db()?;
    }
    Ok(())
}

/// Schema 13's two changes of a declaration, which SQLite's `ALTER TABLE` cannot make: the
/// `NOT NULL` of `messages.tools_text` dropped, and `messages_fts`'s content moved from the table
/// `messages` to the view `messages_text`. Neither changes what is on disk (a constraint, and an
/// argument FTS5 reads when it connects), so the stored SQL is edited in place, in the
/// migrations' transaction, as SQLite documents for such changes
/// (<https://sqlite.org/lang_altertable.html#otheralter>): `writable_schema` on, the two rows of
/// `sqlite_schema` updated, `schema_version` incremented so that every connection reads the
/// schema again, `writable_schema` off.
///
/// Errors: [`Error::Invalid`] when a declaration holds neither the text migrations 1 to 12 wrote
/// (renamed) nor its edit, or holds it more than once (the store was changed by hand): nothing
/// is changed then.
fn rewrite_declarations(tx: &rusqlite::Connection) -> Result<()> {
    const EDITS: [(&str, &str, &str); 2] = [
        ("messages", "tools_text TEXT NOT NULL,", "tools_text TEXT,"),
        (
            "messages_fts",
            "content = 'messages',",
            "content = 'messages_text',",
        ),
    ];
    let mut todo = Vec::new();
    for (table, from, to) in EDITS {
        let sql: String = tx
            .query_row(
                "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?1",
                [table],
                |r| r.get(0),
            )
            .db()?;
        match (sql.matches(from).count(), sql.matches(to).count()) {
            (1, 0) => todo.push((table, from, to)),
            // Already edited (a store whose version was set back by hand, as tests do).
            (0, 1) => {}
            _ => {
                return Err(Error::Invalid(format!(
                    "the store's table `{table}` is not declared as memtrail declares it \
                     (not one `{from}`); it was not upgraded to schema {PACKED_SCHEMA}"
                )));
            }
        }
    }
    if todo.is_empty() {
        return Ok(());
    }
    let version: i64 = tx
        .query_row("PRAGMA schema_version", [], |r| r.get(0))
        .db()?;
    tx.execute_batch("PRAGMA writable_schema = ON").db()?;
    let edited = (|| -> Result<()> {
        for (table, from, to) in todo {
            tx.execute(
                "UPDATE sqlite_schema SET sql = replace(sql, ?2, ?3)
                 WHERE type = 'table' AND name = ?1",
                [table, from, to],
            )
            .db()?;
        }
        tx.pragma_update(None, "schema_version", version + 1).db()
    })();
    tx.execute_batch("PRAGMA writable_schema = OFF").db()?;
    edited
}

/// How many rows `PRAGMA foreign_key_check` reports: rows whose foreign key names a row that
/// does not exist.
fn broken_references(c: &rusqlite::Connection) -> Result<i64> {
    let mut stmt = c.prepare("PRAGMA foreign_key_check").db()?;
    let mut rows = stmt.query([]).db()?;
    let mut n = 0;
    while rows.next().db()?.is_some() {
        n += 1;
    }
    Ok(n)
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

    /// Schema 19: `events` keeps two indexes, and each statement that reads or deletes a session's
    /// or a message's events finds them through one of them, not by scanning the table.
    #[test]
    fn events_are_read_through_their_two_indexes() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(&d.path().join("a.db")).unwrap();
        let indexes: Vec<String> = s
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(indexes, ["events_by_message", "events_by_session_seq"]);
        let plan = |sql: &str| -> String {
            let mut stmt = s
                .conn
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .unwrap();
            let unbound = vec![rusqlite::types::Value::Null; stmt.parameter_count()];
            let steps: Vec<String> = stmt
                .query_map(rusqlite::params_from_iter(unbound), |r| r.get(3))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            steps.join("; ")
        };
        for (sql, index) in [
            (
                super::super::recall::SESSION_EVENTS,
                "events_by_session_seq (session_id=?)",
            ),
            (
                super::super::recall::SNAPSHOT_EVENTS,
                "events_by_session_seq (session_id=?)",
            ),
            (
                "SELECT id FROM events WHERE session_id = ?1 AND seq >= ?2 AND seq < ?3 ORDER BY seq, id",
                "events_by_session_seq (session_id=? AND seq>? AND seq<?)",
            ),
            (
                "DELETE FROM events WHERE message_id = ?1",
                "events_by_message (message_id=?)",
            ),
            (
                "DELETE FROM events WHERE session_id = ?1",
                "events_by_session_seq (session_id=?)",
            ),
        ] {
            let p = plan(sql);
            assert!(p.contains(index), "{sql}: {p}");
            assert!(!p.contains("TEMP B-TREE"), "{sql}: {p}");
        }
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
                // As the migrations left it, the steps around their SQL included.
                for (i, sql) in MIGRATIONS[..v as usize].iter().enumerate() {
                    run_migration(&c, i as i64 + 1, sql).unwrap();
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

    /// Opening a version 6 store tells of migrations 7 and 8, in order, before each runs; a
    /// store at the current version tells nothing.
    #[test]
    fn an_upgrade_tells_each_migration_it_runs() {
        assert_eq!(
            MIGRATIONS.len(),
            std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/src/store/migrations"))
                .unwrap()
                .count()
        );
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("v6.db");
        {
            let c = rusqlite::Connection::open(&path).unwrap();
            for sql in &MIGRATIONS[..6] {
                c.execute_batch(sql).unwrap();
            }
            c.pragma_update(None, "user_version", 6).unwrap();
        }
        let mut told = Vec::new();
        let s = Store::open_with_progress(&path, &mut |m| told.push(m)).unwrap();
        assert_eq!(s.schema_version().unwrap(), 22);
        let m = |to, name| Migrating {
            from: 6,
            to,
            last: 22,
            name,
        };
        assert_eq!(
            told,
            [
                m(7, "vectors"),
                m(8, "activity"),
                m(9, "status_index"),
                m(10, "sync_vectors"),
                m(11, "session_last_message"),
                m(12, "snapshot_states"),
                m(13, "packed_parts"),
                m(14, "body_once"),
                m(15, "snapshot_state_inserts"),
                m(16, "snapshot_state_after_end"),
                m(17, "sync_deleted"),
                m(18, "role_index"),
                m(19, "events_one_session_index"),
                m(20, "nul_shown"),
                m(21, "parts_dictionary"),
                m(22, "prompt_subject_once")
            ]
        );
        drop(s);
        told.clear();
        Store::open_with_progress(&path, &mut |m| told.push(m)).unwrap();
        assert_eq!(told, []);
    }

    /// Every row of table `t` (all columns, as SQLite values), by rowid or primary key.
    fn rows_of(c: &rusqlite::Connection, sql: &str) -> Vec<Vec<rusqlite::types::Value>> {
        let mut stmt = c.prepare(sql).unwrap();
        let n = stmt.column_count();
        stmt.query_map([], |r| (0..n).map(|i| r.get(i)).collect())
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    /// Migration 6 rebuilds `sessions`: a version 5 store keeps every session (same ids, now
    /// of origin `''`) and every row that hangs off one (messages, tool calls, events,
    /// snapshots, cursors), and foreign keys are on again after the upgrade.
    #[test]
    fn a_version_5_store_keeps_its_rows_through_migration_6() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("v5.db");
        const TABLES: [&str; 6] = [
            "SELECT id, agent, external_id, parent_external_id, project_dir, title, model,
                    git_branch, agent_version, started_at, updated_at, message_count
             FROM sessions ORDER BY id",
            "SELECT * FROM messages ORDER BY id",
            "SELECT * FROM tool_calls ORDER BY session_id, call_id",
            // The subject as read (schema 22 keeps a prompt's that is its body once).
            concat!(
                "SELECT id, session_id, message_id, seq, category, action, priority, ",
                crate::store::recall::event_subject!(),
                ", detail, call_id, tool, ts FROM events ORDER BY id"
            ),
            "SELECT * FROM snapshots ORDER BY id",
            "SELECT * FROM sources ORDER BY path",
        ];
        let before: Vec<_> = {
            let c = rusqlite::Connection::open(&path).unwrap();
            for sql in &MIGRATIONS[..5] {
                c.execute_batch(sql).unwrap();
            }
            c.pragma_update(None, "user_version", 5).unwrap();
            c.execute_batch(
                "INSERT INTO sessions (id, agent, external_id, parent_external_id, project_dir,
                     title, model, git_branch, agent_version, started_at, updated_at,
                     message_count)
                 VALUES (7, 'claude', 's1', NULL, '/w/app', 'Fix it', 'opus', 'main', '2.1',
                         1000, 2000, 2),
                        (9, 'claude', 's1/agent-1', 's1', '/w/app', NULL, NULL, NULL, NULL,
                         1500, 1600, 1);
                 INSERT INTO messages (id, session_id, ext_id, seq, role, kind, ts, model, body,
                                       tools, cjk, parts)
                 VALUES (3, 7, 'u1', 0, 'user', 'text', 1000, NULL, 'fix the build', '', NULL,
                         '[]'),
                        (4, 7, 'a1', 1, 'assistant', 'tool_call', 1100, 'opus', '',
                         'Bash cargo build', NULL, '[]'),
                        (5, 9, 'u1', 0, 'user', 'text', 1500, NULL, '修正', '', '修 正',
                         '[]');
                 INSERT INTO tool_calls VALUES (7, 'c1', 4, 'Bash', 'shell', 1, 1);
                 INSERT INTO events (id, session_id, message_id, seq, category, action,
                                     priority, subject, detail, call_id, tool, ts)
                 VALUES (1, 7, 3, 0, 'prompt', 'asked', 2, 'fix the build', NULL, NULL, NULL,
                         1000),
                        (2, 7, 4, 1, 'command', 'ran', 3, 'cargo build', 'exit 1', 'c1',
                         'shell', 1100);
                 INSERT INTO snapshots (id, session_id, built_at, trigger, budget, events, text,
                                        consumed_at, consumed_by)
                 VALUES (1, 7, 1900, 'precompact', 2000, 2, '# Session', NULL, NULL);
                 INSERT INTO sources (path, agent, session_id, offset, size)
                 VALUES ('/t/s1.jsonl', 'claude', 7, 120, 120);",
            )
            .unwrap();
            TABLES.iter().map(|t| rows_of(&c, t)).collect()
        };
        assert_eq!(
            before.iter().map(Vec::len).collect::<Vec<_>>(),
            [2, 3, 1, 2, 1, 1]
        );
        let s = Store::open(&path).unwrap();
        assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
        let after: Vec<_> = TABLES.iter().map(|t| rows_of(&s.conn, t)).collect();
        assert_eq!(after, before);
        // The prompt's subject, its message's body, is stored once (schema 22).
        let stored: Vec<String> = s
            .conn
            .prepare("SELECT subject FROM events ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(stored, ["", "cargo build"]);
        let origins: Vec<String> = s
            .conn
            .prepare("SELECT origin FROM sessions ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(origins, ["", ""]);
        let fk: i64 = s
            .conn
            .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
            .unwrap();
        assert_eq!(fk, 1, "foreign keys on again");
        // And they act: deleting a session deletes its messages (`ON DELETE CASCADE`).
        s.conn
            .execute("DELETE FROM sessions WHERE id = 9", [])
            .unwrap();
        let left: i64 = s
            .conn
            .query_row(
                "SELECT COUNT(*) FROM messages WHERE session_id = 9",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(left, 0);
    }

    /// A store damaged earlier (a message whose session is gone) is upgraded all the same, its
    /// rows kept: only references the migrations would break stop an upgrade.
    #[test]
    fn a_store_with_a_broken_reference_still_upgrades() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("v5.db");
        {
            let c = rusqlite::Connection::open(&path).unwrap();
            for sql in &MIGRATIONS[..5] {
                c.execute_batch(sql).unwrap();
            }
            c.pragma_update(None, "user_version", 5).unwrap();
            c.execute_batch(
                "PRAGMA foreign_keys = OFF;
                 INSERT INTO sessions (id, agent, external_id) VALUES (1, 'claude', 's1');
                 INSERT INTO messages (id, session_id, ext_id, seq, role, kind, body, tools, parts)
                 VALUES (1, 1, 'u1', 0, 'user', 'text', 'kept', '', '[]'),
                        (2, 99, 'u1', 0, 'user', 'text', 'orphan', '', '[]');",
            )
            .unwrap();
        }
        let s = Store::open(&path).unwrap();
        assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(broken_references(&s.conn).unwrap(), 1);
        let want: Vec<Vec<rusqlite::types::Value>> = vec![
            vec![1.into(), 1.into(), "kept".to_string().into()],
            vec![2.into(), 99.into(), "orphan".to_string().into()],
        ];
        assert_eq!(
            rows_of(
                &s.conn,
                "SELECT id, session_id, body FROM messages ORDER BY id"
            ),
            want
        );
    }

    /// A store at schema 12 (migrations 1 to 12 run by hand) at `path`, with `rows` (SQL) added
    /// and indexed as schema 12 indexed them.
    fn v12_store(path: &std::path::Path, rows: &str) -> rusqlite::Connection {
        let c = rusqlite::Connection::open(path).unwrap();
        for sql in &MIGRATIONS[..12] {
            c.execute_batch(sql).unwrap();
        }
        c.pragma_update(None, "user_version", 12).unwrap();
        c.execute_batch(&format!(
            "INSERT INTO sessions (id, agent, external_id, started_at, updated_at)
             VALUES (1, 'claude', 's1', 1000, 2000);
             {rows}
             INSERT INTO messages_fts (rowid, body, tools, cjk)
                 SELECT id, body, tools, cjk FROM messages;
             DELETE FROM fts_pending;"
        ))
        .unwrap();
        c
    }

    /// Migration 13 on a store with indexed rows: their `tools` (now `tools_text`) and `parts`
    /// stay as they were (the index holds that text), the declarations change (`tools_text`
    /// nullable, the index's content the view), an older memtrail's catch-up fails, and the index stays consistent when an old row is deleted and a new
    /// one (compressed, `tools` NULL) is written, indexed and searched.
    #[test]
    fn a_version_12_store_keeps_its_index_through_migration_13() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("v12.db");
        let old_parts = r#"[{"type":"tool_call","id":"c1","name":"Bash","tool":"shell","input":{"command":"cargo build"},"output":"error: linker failed","is_error":true}]"#;
        v12_store(
            &path,
            &format!(
                "INSERT INTO messages (id, session_id, ext_id, seq, role, kind, body, tools, parts)
                 VALUES (1, 1, 'a1', 0, 'assistant', 'tool_call', '',
                         'Bash cargo build \nerror: linker failed\n', '{old_parts}'),
                        (2, 1, 'a2', 1, 'assistant', 'text', 'the linker is mold', '', '[]');"
            ),
        );
        let s = Store::open(&path).unwrap();
        let c = &s.conn;
        let check = || {
            c.execute(
                "INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)",
                [],
            )
            .expect("the index agrees with its content")
        };
        check();
        let (tools, parts): (String, String) = c
            .query_row(
                "SELECT typeof(tools_text), parts_zdict FROM messages WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((tools.as_str(), parts.as_str()), ("text", old_parts));
        let notnull: i64 = c
            .query_row(
                "SELECT \"notnull\" FROM pragma_table_info('messages') WHERE name = 'tools_text'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(notnull, 0);
        // The index catch-up of a memtrail from before (an MCP server still running) fails
        // instead of indexing a new row without its tool text.
        let old = c
            .prepare(
                "INSERT INTO messages_fts (rowid, body, tools, cjk)
                 SELECT m.id, m.body, m.tools, m.cjk FROM fts_pending p JOIN messages m ON m.id = p.id
                 WHERE p.id <= ?1 ORDER BY p.id",
            )
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(old.contains("no such column: m.tools"), "{old}");
        // So does the merge of a memtrail from before schema 14 (an `import` still running),
        // instead of reading a prose row stored as its body alone as a row without parts.
        let old = c
            .prepare("SELECT id, memtrail_parts(parts), kind FROM messages WHERE ext_id = 'a2'")
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(old.contains("no such column: parts"), "{old}");
        let hits = |q: &str| -> Vec<(i64, String)> {
            c.prepare(
                "SELECT rowid, snippet(messages_fts, -1, '[', ']', '…', 8) FROM messages_fts
                 WHERE messages_fts MATCH ?1 ORDER BY rowid",
            )
            .unwrap()
            .query_map([q], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
        };
        assert_eq!(
            hits("linker"),
            [
                (1, "Bash cargo build \nerror: [linker] failed\n".to_string()),
                (2, "the [linker] is mold".to_string())
            ]
        );
        // A new row as the writer writes it: `parts` compressed, `tools` NULL.
        let new_parts = format!(
            r#"[{{"type":"tool_call","id":"c2","name":"Bash","tool":"shell","input":{{"command":"ls"}},"output":"{}","is_error":false}}]"#,
            "target linker.toml ".repeat(20)
        );
        let packed = super::super::packed::pack(new_parts, "").unwrap();
        assert!(matches!(packed, super::super::StoredParts::Packed(_)));
        c.execute(
            "INSERT INTO messages (id, session_id, ext_id, seq, role, kind, body, parts_zdict)
             VALUES (3, 1, 'a3', 2, 'assistant', 'tool_call', '', ?1)",
            [&packed],
        )
        .unwrap();
        c.execute("DELETE FROM messages WHERE id = 1", []).unwrap();
        s.catch_up_index(None).unwrap();
        check();
        let got = hits("linker");
        assert_eq!(got.iter().map(|h| h.0).collect::<Vec<_>>(), [2, 3]);
        assert!(
            got[1].1.starts_with("Bash ls \ntarget [linker]"),
            "{:?}",
            got[1]
        );
        assert!(hits("failed").is_empty());
    }

    /// `memtrail repair` on prose rows written by schema 13 (a frame, or short JSON as text, of
    /// the body as one text part): they keep nothing, read back as the same JSON, and nothing
    /// is queued (index, embedding, sync); a prose row with more than its body keeps its frame.
    #[test]
    fn repair_stores_the_prose_of_version_13_rows_once() {
        use super::super::packed::{StoredParts, pack};
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::open(&d.path().join("v13.db")).unwrap();
        let long = "the linker is mold, not lld. ".repeat(20);
        let body_json = |t: &str| format!(r#"[{{"type":"text","text":"{t}"}}]"#);
        let more =
            format!(r#"[{{"type":"thinking","text":"why"}},{{"type":"text","text":"{long}"}}]"#);
        // As schema 13 wrote them: `pack` without a body to compare with.
        let framed = pack(body_json(&long), "").unwrap();
        assert!(matches!(framed, StoredParts::Packed(_)));
        let framed_more = pack(more.clone(), "").unwrap();
        s.conn
            .execute_batch(
                "INSERT INTO sessions (id, agent, external_id, started_at, updated_at)
                 VALUES (1, 'claude', 's1', 1000, 2000);",
            )
            .unwrap();
        let rows: [(&str, &str, &dyn rusqlite::ToSql); 3] = [
            ("a1", long.as_str(), &framed),
            ("a2", "short", &body_json("short")),
            ("a3", long.as_str(), &framed_more),
        ];
        for (i, (id, body, parts)) in rows.into_iter().enumerate() {
            s.conn
                .execute(
                    "INSERT INTO messages (session_id, ext_id, seq, role, kind, body, parts_zdict)
                     VALUES (1, ?1, ?2, 'assistant', 'text', ?3, ?4)",
                    rusqlite::params![id, i as i64, body, parts],
                )
                .unwrap();
        }
        s.catch_up_index(None).unwrap();
        s.conn
            .execute_batch("INSERT INTO sync_state (key, value) VALUES ('enabled', '1');")
            .unwrap();
        let read = |s: &Store| -> Vec<(String, i64, String)> {
            s.conn
                .prepare(
                    "SELECT ext_id, length(parts_zdict), memtrail_parts(parts_zdict, body)
                     FROM messages ORDER BY id",
                )
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .map(|r| r.unwrap())
                .collect()
        };
        let before = read(&s);
        let fixed = s
            .write(|w| super::super::packed::pack_old_rows(w, 0))
            .unwrap();
        assert_eq!(fixed, (2, Some(3)));
        let after = read(&s);
        let json: Vec<&String> = after.iter().map(|r| &r.2).collect();
        assert_eq!(json, before.iter().map(|r| &r.2).collect::<Vec<_>>());
        assert_eq!(*json[2], more);
        let lengths: Vec<i64> = after.iter().map(|r| r.1).collect();
        assert_eq!(lengths[..2], [0, 0]);
        assert_eq!(
            lengths[2], before[2].1,
            "more than the body: kept as it was"
        );
        assert_eq!(queued(&s), 0);
        index_agrees(&s);
        // Nothing is left to do, and `memtrail repair` agrees.
        assert_eq!(
            s.write(|w| super::super::packed::pack_old_rows(w, 0))
                .unwrap(),
            (0, Some(3))
        );
        let report = s.repair().unwrap();
        assert_eq!(report.steps[0].fixed, 0, "{report:?}");
        assert_eq!(report.steps[2].fixed, 0, "{report:?}");
    }

    /// The work a write left queued: messages to index, to push, to embed.
    fn queued(s: &Store) -> i64 {
        s.conn
            .query_row(
                "SELECT (SELECT count(*) FROM fts_pending) + (SELECT count(*) FROM sync_outbox)
                      + (SELECT count(*) FROM embed_pending)",
                [],
                |r| r.get(0),
            )
            .unwrap()
    }

    /// FTS5's integrity check with rank 1: the index agrees with its content.
    fn index_agrees(s: &Store) {
        s.conn
            .execute(
                "INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)",
                [],
            )
            .expect("the index agrees with its content");
    }

    /// A store set back by hand to schema 19 (as tests do) is upgraded again with its column
    /// renamed for migration 20 and back for 21: its index's content view reads `parts_zdict`,
    /// FTS5's integrity check passes and a search finds a tool call's output.
    #[test]
    fn a_store_set_back_to_19_upgrades_again_with_a_working_index() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("back.db");
        {
            let s = Store::open(&path).unwrap();
            let super::super::StoredParts::Packed(frame) = super::super::packed::pack(
                r#"[{"type":"tool_call","id":"c1","name":"Bash","tool":"shell","input":{"command":"make"},"output":"the quokka linker failed on the quokka target","is_error":true}]"#.to_string(),
                "",
            )
            .unwrap() else {
                panic!("compressed")
            };
            s.conn
                .execute_batch(
                    "INSERT INTO sessions (id, agent, external_id, started_at, updated_at)
                     VALUES (1, 'claude', 's1', 1000, 2000);",
                )
                .unwrap();
            s.conn
                .execute(
                    "INSERT INTO messages (session_id, ext_id, seq, role, kind, body, parts_zdict)
                     VALUES (1, 'a1', 0, 'assistant', 'tool_call', '', ?1)",
                    [&frame],
                )
                .unwrap();
            s.conn.pragma_update(None, "user_version", 19).unwrap();
        }
        let s = Store::open(&path).unwrap();
        assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
        s.catch_up_index(None).unwrap();
        index_agrees(&s);
        let view: String = s
            .conn
            .query_row(
                "SELECT sql FROM sqlite_schema WHERE name = 'messages_text'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(view.contains("parts_zdict"), "{view}");
        let hits: i64 = s
            .conn
            .query_row(
                "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'quokka'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(hits, 1);
    }

    /// `memtrail repair` on frames written before schema 21, without the parts dictionary: the
    /// frame is written again with it, shorter, and reads as the same JSON; a frame written with
    /// it is left byte for byte; nothing is queued (index, embedding, sync); a second repair
    /// has nothing to do.
    #[test]
    fn repair_compresses_frames_of_before_schema_21_with_the_dictionary() {
        use super::super::packed::{StoredParts, pack};
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::open(&d.path().join("v20.db")).unwrap();
        let call = |n: u32| {
            format!(
                r#"[{{"type":"text","text":"Running the tests."}},{{"type":"tool_call","id":"toolu_01Xb7Qm{n}","name":"Bash","tool":"shell","input":{{"command":"cargo test -q","description":"Run the tests"}},"output":"running 12 tests\n............\ntest result: ok. 12 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.3{n}s","is_error":false,"exit_code":0}}]"#
            )
        };
        // As schema 13 to 20 wrote it: zstd at level 3 with its checksum, no dictionary.
        let mut plain = zstd::bulk::Compressor::new(3).unwrap();
        plain
            .set_parameter(zstd::stream::raw::CParameter::ChecksumFlag(true))
            .unwrap();
        let old = plain.compress(call(1).as_bytes()).unwrap();
        let StoredParts::Packed(new) = pack(call(2), "").unwrap() else {
            panic!("compressed")
        };
        s.conn
            .execute_batch(
                "INSERT INTO sessions (id, agent, external_id, started_at, updated_at)
                 VALUES (1, 'claude', 's1', 1000, 2000);",
            )
            .unwrap();
        for (i, frame) in [&old, &new].into_iter().enumerate() {
            s.conn
                .execute(
                    "INSERT INTO messages (session_id, ext_id, seq, role, kind, body, parts_zdict)
                     VALUES (1, ?1, ?2, 'assistant', 'tool_call', '', ?3)",
                    rusqlite::params![format!("a{i}"), i as i64, frame],
                )
                .unwrap();
        }
        s.catch_up_index(None).unwrap();
        s.conn
            .execute_batch("INSERT INTO sync_state (key, value) VALUES ('enabled', '1');")
            .unwrap();
        let read = |s: &Store| -> Vec<(Vec<u8>, String)> {
            s.conn
                .prepare("SELECT parts_zdict, memtrail_parts(parts_zdict, body) FROM messages ORDER BY id")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .map(|r| r.unwrap())
                .collect()
        };
        let before = read(&s);
        assert_eq!(before[0].1, call(1));
        assert_eq!(
            s.write(|w| super::super::packed::pack_old_rows(w, 0))
                .unwrap(),
            (1, Some(2))
        );
        let after = read(&s);
        assert_eq!(after[0].1, call(1), "the same JSON");
        assert!(
            after[0].0.len() * 4 < old.len() * 3,
            "{} bytes, {} before",
            after[0].0.len(),
            old.len()
        );
        assert_eq!(after[1], before[1], "written with the dictionary: left");
        assert_eq!(queued(&s), 0);
        index_agrees(&s);
        assert_eq!(
            s.write(|w| super::super::packed::pack_old_rows(w, 0))
                .unwrap(),
            (0, Some(2))
        );
    }

    /// `memtrail repair` on a store upgraded from schema 12: its rows are compressed and lose
    /// their stored tool text where the parts render it exactly (not the row whose text was
    /// capped apart), without queueing anything (index, embedding, sync) and with the same
    /// triggers after; the index still agrees with its content and finds the same rows.
    #[test]
    fn repair_packs_the_rows_of_a_version_12_store() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("v12.db");
        let call = r#"[{"type":"tool_call","id":"c1","name":"Bash","tool":"shell","input":{"command":"cargo build"},"output":"error: linker failed","is_error":true}]"#;
        let prose = format!(
            r#"[{{"type":"text","text":"{}"}}]"#,
            "the linker is mold, not lld ".repeat(8)
        );
        {
            let c = v12_store(
                &path,
                &format!(
                    "INSERT INTO messages (id, session_id, ext_id, seq, role, kind, body, tools, parts)
                     VALUES (1, 1, 'a1', 0, 'assistant', 'tool_call', '',
                             'Bash cargo build \nerror: linker failed\n', '{call}'),
                            (2, 1, 'a2', 1, 'assistant', 'text',
                             'the linker is mold', '', '{prose}'),
                            (3, 1, 'a3', 2, 'assistant', 'tool_call', '',
                             'Bash cargo build \nerror: link', '{call}');"
                ),
            );
            // A copy with 300 more rows of 4 KB, for `memtrail repair` itself below.
            c.execute_batch(&format!(
                "VACUUM INTO '{}'",
                d.path().join("v12-big.db").display()
            ))
            .unwrap();
            let big = rusqlite::Connection::open(d.path().join("v12-big.db")).unwrap();
            let long = format!(
                r#"[{{"type":"text","text":"{}"}}]"#,
                "cargo build failed: linker `cc` not found. ".repeat(100)
            );
            for i in 0..300 {
                big.execute(
                    "INSERT INTO messages (session_id, ext_id, seq, role, kind, body, tools, parts)
                     VALUES (1, ?1, ?2, 'assistant', 'text', 'x', '', ?3)",
                    rusqlite::params![format!("b{i}"), 10 + i, long],
                )
                .unwrap();
            }
            big.execute_batch(
                "INSERT INTO messages_fts (rowid, body, tools, cjk)
                     SELECT id, body, tools, cjk FROM messages WHERE id > 3;
                 DELETE FROM fts_pending;",
            )
            .unwrap();
        }
        {
            let mut big = Store::open(&d.path().join("v12-big.db")).unwrap();
            let bytes = |s: &Store| s.location().size_bytes();
            let before = bytes(&big);
            let report = big.repair().unwrap();
            let steps: Vec<(&str, bool)> = report
                .steps
                .iter()
                .map(|s| (s.name.as_str(), s.fixed > 0))
                .collect();
            assert_eq!(
                steps,
                [
                    ("stored text", true),
                    ("damaged parts", false),
                    ("full-text index", false),
                    ("tool calls", false),
                    ("events", true),
                    ("message counts", true),
                    ("file size", true)
                ],
                "{report:?}"
            );
            assert_eq!(report.steps[0].fixed, 303);
            assert_eq!(report.integrity, ["ok"]);
            let after = bytes(&big);
            assert!(after < before / 2, "{before} -> {after}");
        }
        let mut s = Store::open(&path).unwrap();
        // Sync on, and message 1 embedded (its vector would be dropped and the message queued
        // again by a trigger that fired).
        s.conn
            .execute_batch(
                "INSERT INTO sync_state (key, value) VALUES ('enabled', '1');
                 INSERT INTO embed_state (id, model, done_through) VALUES (1, 'm@1/4', 3);
                 INSERT INTO message_vectors (message_id, chunk, scale, vec)
                     VALUES (1, 0, 1.0, x'01020304');",
            )
            .unwrap();
        // What waits to be indexed, pushed or embedded, and the vectors kept.
        let queued = |s: &Store| -> Vec<Vec<rusqlite::types::Value>> {
            rows_of(
                &s.conn,
                "SELECT (SELECT count(*) FROM fts_pending), (SELECT count(*) FROM sync_outbox),
                        (SELECT count(*) FROM embed_pending), (SELECT count(*) FROM message_vectors)",
            )
        };
        let queued_before = queued(&s);
        assert_eq!(
            queued_before,
            [[0.into(), 1.into(), 0.into(), 1.into()]],
            "the vector is in the outbox"
        );
        let schema_before = schema_of(&s.conn);
        let hits = |s: &Store, q: &str| -> Vec<i64> {
            s.conn
                .prepare(
                    "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 ORDER BY rowid",
                )
                .unwrap()
                .query_map([q], |r| r.get(0))
                .unwrap()
                .map(|r| r.unwrap())
                .collect()
        };
        let before = (hits(&s, "linker"), hits(&s, "link"), hits(&s, "mold"));
        assert!(
            s.stats().unwrap().uncompressed,
            "status tells of the rows to compress"
        );
        let fixed = s
            .write(|w| super::super::packed::pack_old_rows(w, 0))
            .unwrap();
        assert_eq!(
            s.write(|w| super::super::packed::pack_old_rows(w, 3))
                .unwrap(),
            (0, None)
        );
        let forms: Vec<(i64, String, String, String)> = s
            .conn
            .prepare("SELECT id, typeof(parts_zdict), typeof(tools_text), memtrail_parts(parts_zdict, body) FROM messages ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        let short = |t: &str| t.to_string();
        assert_eq!(
            forms,
            [
                (1, short("blob"), short("null"), call.to_string()),
                (2, short("blob"), short("null"), prose.clone()),
                (3, short("blob"), short("text"), call.to_string()),
            ]
        );
        // Every row; row 3 keeps its `tools`, capped apart from its parts.
        assert_eq!(fixed, (3, Some(3)));
        assert!(!s.stats().unwrap().uncompressed);
        assert_eq!(queued(&s), queued_before);
        assert_eq!(schema_of(&s.conn), schema_before);
        assert_eq!(
            (hits(&s, "linker"), hits(&s, "link"), hits(&s, "mold")),
            before
        );
        s.conn
            .execute(
                "INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)",
                [],
            )
            .unwrap();
        // `memtrail repair` runs it first; nothing is left to do the second time, and the
        // index agrees with its content.
        let report = s.repair().unwrap();
        assert_eq!(report.steps[0].name, "stored text");
        assert_eq!(report.steps[0].fixed, 0, "{report:?}");
        assert_eq!(report.steps[2].fixed, 0, "{report:?}");
        assert!(
            report.steps.iter().all(|s| s.name != "file size"),
            "{report:?}"
        );
        assert_eq!(report.integrity, ["ok"]);
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
                "752f26c6b7ebcced",
                "0b0095ba9b611ce6",
                "ae269a2a9d9dbc65",
                "1bea82aa982a1efb",
                "656e598e36e79c71",
                "1af9feda95c0eeb7",
                "68d594c4269a2bc7",
                "463c359083587f20",
                "2b9c1d9386e21da0",
                "0bc4efd0ce644b6e",
                "6fb5fdf60ed28e53",
                "55b30741e76196b5",
                "c79c618353b92535",
                "cc3b7591c1112996",
                "cd3e80513c3abfd9",
                "7725374fe61faa4b",
                "0a5fac3d996b6f16",
            ]
        );
    }
}
