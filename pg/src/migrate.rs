//! The PostgreSQL schema's numbered migrations (`pg/src/migrations/NNNN_*.sql`), applied in
//! order under an advisory lock, the version kept in `memtrail_meta` (`schema_version`).
//!
//! Several machines running `memtrail sync --init` at once are safe: each takes
//! `pg_advisory_xact_lock` first, so one migrates and the others then find the schema current.
//! A database whose version is above this build's last migration is refused
//! ([`Error::NewerSchema`]). pgvector is created when the connected role may (`CREATE EXTENSION
//! IF NOT EXISTS vector`); otherwise the report says why and what an administrator runs, and
//! everything works lexical-only meanwhile.

use std::fmt;

use crate::{Error, Pg, Result};

/// One migration: `version` (the file's number), a short name, and its SQL (run as one batch).
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    pub version: i64,
    pub name: &'static str,
    pub sql: &'static str,
}

/// Every migration this build has, in order.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "initial",
        sql: include_str!("migrations/0001_initial.sql"),
    },
    Migration {
        version: 2,
        name: "search",
        sql: include_str!("migrations/0002_search.sql"),
    },
    Migration {
        version: 3,
        name: "client lexemes",
        sql: include_str!("migrations/0003_client_lexemes.sql"),
    },
    Migration {
        version: 4,
        name: "lean writes",
        sql: include_str!("migrations/0004_lean_writes.sql"),
    },
    Migration {
        version: 5,
        name: "inline vectors",
        sql: include_str!("migrations/0005_inline_vectors.sql"),
    },
    Migration {
        version: 6,
        name: "activity summaries",
        sql: include_str!("migrations/0006_activity.sql"),
    },
    Migration {
        version: 7,
        name: "vectors",
        sql: VECTORS_SQL,
    },
    Migration {
        version: 8,
        name: "scope bound",
        sql: include_str!("migrations/0008_scope_bound.sql"),
    },
    Migration {
        version: 9,
        name: "scope bound index",
        sql: include_str!("migrations/0009_scope_bound_index.sql"),
    },
];

/// Migration 7: the table of message vectors, created when pgvector is (idempotent: run again
/// by [`migrate`] once the extension exists).
const VECTORS_SQL: &str = include_str!("migrations/0007_vectors.sql");

/// The advisory lock key the migrations run under (`pg_advisory_xact_lock`): "memtrail" in
/// ASCII, read as a big-endian integer.
pub const MIGRATION_LOCK: i64 = 0x6d65_6d74_7261_696c;

/// Whether pgvector is usable in the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Vector {
    /// The extension is created; its version.
    Installed(String),
    /// The server has pgvector but the connected role may not create the extension (it is not
    /// a trusted extension): `command` is what an administrator runs.
    NotAllowed { command: String },
    /// The server has no pgvector (`pg_available_extensions` lacks it).
    NotAvailable,
}

/// What [`migrate`] found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaReport {
    /// The schema version before (0: no memtrail schema yet).
    pub from_version: i64,
    /// The schema version now.
    pub version: i64,
    /// The versions this call applied, in order.
    pub applied: Vec<i64>,
    pub vector: Vector,
}

impl fmt::Display for SchemaReport {
    /// `schema version 1 (migrated from 0)` or `schema version 1 (current)`, then `; pgvector
    /// 0.8.6`, or why there is none and what to do, ending `lexical search only`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "schema version {}", self.version)?;
        if self.applied.is_empty() {
            f.write_str(" (current)")?;
        } else {
            write!(f, " (migrated from {})", self.from_version)?;
        }
        match &self.vector {
            Vector::Installed(v) => write!(f, "; pgvector {v}"),
            Vector::NotAllowed { command } => write!(
                f,
                "; pgvector is installed on the server but this role may not create it; \
                 an administrator runs: {command}; lexical search only meanwhile"
            ),
            Vector::NotAvailable => f.write_str(
                "; the server has no pgvector (install postgresql-NN-pgvector, Homebrew's \
                 pgvector, or use a managed PostgreSQL that has it); lexical search only",
            ),
        }
    }
}

/// Brings the database's schema up to the last of `migrations` (sorted by version, numbered
/// from 1 without gaps) in one transaction under [`MIGRATION_LOCK`], then creates pgvector when
/// allowed.
///
/// Errors: [`Error::NewerSchema`] when the database is ahead of `migrations`; [`Error::Db`]
/// when a migration fails (nothing of it stays); [`Error::Invalid`] when `migrations` is not
/// numbered 1, 2, 3, …, or when a database without memtrail's schema is not of encoding UTF8
/// (`SHOW server_encoding`; nothing is created in it).
pub fn migrate(pg: &mut Pg, migrations: &[Migration]) -> Result<SchemaReport> {
    for (i, m) in migrations.iter().enumerate() {
        if m.version != i as i64 + 1 {
            return Err(Error::Invalid(format!(
                "migration {} ({}) is out of sequence: expected {}",
                m.version,
                m.name,
                i + 1
            )));
        }
    }
    let supported = migrations.len() as i64;
    if let Some(report) = current(pg, supported)? {
        return Ok(report);
    }
    let (rt, client) = pg.parts_mut();
    let migrated = rt.block_on(async {
        let tx = client.transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await?;
        // Created only when missing: a role that may use the tables but not create any still
        // syncs.
        let exists: bool = tx
            .query_one("SELECT to_regclass('memtrail_meta') IS NOT NULL", &[])
            .await?
            .get(0);
        if !exists {
            tx.batch_execute(
                "CREATE TABLE memtrail_meta (key text PRIMARY KEY, value text NOT NULL)",
            )
            .await?;
        }
        let row = tx
            .query_opt(
                "SELECT value FROM memtrail_meta WHERE key = 'schema_version'",
                &[],
            )
            .await?;
        let from_version: i64 = match row {
            Some(r) => r.get::<_, String>(0).parse().map_err(|_| {
                Error::Invalid("memtrail_meta.schema_version is not a number".into())
            })?,
            None => 0,
        };
        if from_version > supported {
            return Err(Error::NewerSchema {
                found: from_version,
                supported,
            });
        }
        if from_version == 0 {
            // A database of another encoding takes text it cannot hold (LATIN1) or counts
            // bytes as characters, cutting a snippet inside one (SQL_ASCII).
            let encoding: String = tx.query_one("SHOW server_encoding", &[]).await?.get(0);
            if encoding != "UTF8" {
                return Err(Error::Invalid(format!(
                    "the database's encoding is {encoding}, and memtrail needs UTF8: create \
                     one with `CREATE DATABASE name ENCODING 'UTF8' TEMPLATE template0` (or \
                     `createdb -E UTF8 -T template0 name`)"
                )));
            }
        }
        let mut applied = Vec::new();
        for m in &migrations[from_version as usize..] {
            tx.batch_execute(m.sql).await.map_err(|e| {
                Error::Db(format!(
                    "migration {} ({}): {}",
                    m.version,
                    m.name,
                    crate::describe(&e)
                ))
            })?;
            applied.push(m.version);
        }
        if !applied.is_empty() {
            tx.execute(
                "INSERT INTO memtrail_meta (key, value) VALUES ('schema_version', $1) \
                 ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                &[&supported.to_string()],
            )
            .await?;
        }
        // The database's identity, written once (see `Pg::database_id`); read first so that a
        // role without INSERT on memtrail_meta still syncs with a database that has one.
        let has_id = tx
            .query_opt(
                "SELECT 1 FROM memtrail_meta WHERE key = 'database_id'",
                &[],
            )
            .await?
            .is_some();
        if !has_id {
            tx.execute(
                "INSERT INTO memtrail_meta (key, value) VALUES ('database_id', gen_random_uuid()::text) \
                 ON CONFLICT (key) DO NOTHING",
                &[],
            )
            .await?;
        }
        let vector = create_vector(&tx).await?;
        // pgvector created now (a new database, or by an administrator since): the vectors'
        // table of migration 7, when this schema has it.
        if matches!(vector, Vector::Installed(_))
            && supported.max(from_version) >= 7
            && migrations.len() >= 7
        {
            tx.batch_execute(VECTORS_SQL).await?;
        }
        tx.commit().await?;
        Ok(SchemaReport {
            from_version,
            version: supported.max(from_version),
            applied,
            vector,
        })
    });
    migrated.map_err(|e| match e {
        Error::Db(m) if m.contains("(SQLSTATE 42501)") => Error::Db(format!(
            "{m}; memtrail creates its tables at the first sync: give its role a database of \
             its own (as an administrator: CREATE DATABASE memtrail OWNER <role>) or CREATE on \
             the schema (GRANT CREATE ON SCHEMA public TO <role>)"
        )),
        e => e,
    })
}

/// The report of a database already at `supported`, with its id and pgvector installed (the
/// common case of every sync after the first), read in one statement without the migration
/// lock; `None` when anything is missing or different (the caller then takes the lock).
fn current(pg: &mut Pg, supported: i64) -> Result<Option<SchemaReport>> {
    let (rt, client) = pg.parts_mut();
    rt.block_on(async {
        let row = match client
            .query_one(
                "SELECT (SELECT value FROM memtrail_meta WHERE key = 'schema_version'), \
                   (SELECT value FROM memtrail_meta WHERE key = 'database_id') IS NOT NULL, \
                   (SELECT extversion FROM pg_extension WHERE extname = 'vector'), \
                   to_regclass('message_vectors') IS NOT NULL",
                &[],
            )
            .await
        {
            Ok(r) => r,
            // No memtrail_meta yet: a new database.
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => {
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let version: Option<String> = row.get(0);
        let has_id: bool = row.get(1);
        let vector: Option<String> = row.get(2);
        // From migration 7 on, pgvector's presence means the vectors' table's too.
        let has_table: bool = row.get(3);
        Ok(match (version, has_id, vector) {
            (Some(v), true, Some(vector))
                if v == supported.to_string() && (has_table || supported < 7) =>
            {
                Some(SchemaReport {
                    from_version: supported,
                    version: supported,
                    applied: Vec::new(),
                    vector: Vector::Installed(vector),
                })
            }
            _ => None,
        })
    })
}

/// pgvector's state, creating the extension inside a savepoint when the server has it and the
/// role may (a refusal rolls back only the savepoint).
async fn create_vector(tx: &tokio_postgres::Transaction<'_>) -> Result<Vector> {
    let installed = |v: Option<tokio_postgres::Row>| v.map(|r| r.get::<_, String>(0));
    let sql_installed = "SELECT extversion FROM pg_extension WHERE extname = 'vector'";
    if let Some(v) = installed(tx.query_opt(sql_installed, &[]).await?) {
        return Ok(Vector::Installed(v));
    }
    let available = tx
        .query_one(
            "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'",
            &[],
        )
        .await?
        .get::<_, i64>(0);
    if available == 0 {
        return Ok(Vector::NotAvailable);
    }
    tx.batch_execute("SAVEPOINT memtrail_vector").await?;
    match tx
        .batch_execute("CREATE EXTENSION IF NOT EXISTS vector")
        .await
    {
        Ok(()) => {
            tx.batch_execute("RELEASE SAVEPOINT memtrail_vector")
                .await?;
            let v = installed(tx.query_opt(sql_installed, &[]).await?).unwrap_or_default();
            Ok(Vector::Installed(v))
        }
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) => {
            tx.batch_execute("ROLLBACK TO SAVEPOINT memtrail_vector")
                .await?;
            let db: String = tx.query_one("SELECT current_database()", &[]).await?.get(0);
            Ok(Vector::NotAllowed {
                command: format!(
                    "psql -d {} -c 'CREATE EXTENSION vector' (as a superuser)",
                    quote_db(&db)
                ),
            })
        }
        Err(e) => Err(e.into()),
    }
}

/// A database name as a shell word for the administrator's command.
fn quote_db(db: &str) -> String {
    if db
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        db.to_string()
    } else {
        format!("'{}'", db.replace('\'', r"'\''"))
    }
}
