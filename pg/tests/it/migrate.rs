//! Migrations: applied once, in order, under the advisory lock (concurrent runs migrate once),
//! a newer schema refused, pgvector created when allowed and reported when not.

use memtrail_pg::Pg;
use memtrail_pg::migrate::{MIGRATIONS, Migration, Vector, migrate};

fn vector_expected() -> bool {
    std::env::var("MEMTRAIL_TEST_PG_VECTOR").is_ok_and(|v| v == "1")
}

fn count(pg: &Pg, sql: &str) -> i64 {
    pg.block_on(pg.client().query_one(sql, &[])).unwrap().get(0)
}

#[test]
fn migrates_once_then_finds_the_schema_current() {
    let Some((_, mut pg)) = crate::fresh("migrate_once") else {
        return;
    };
    let report = migrate(&mut pg, MIGRATIONS).unwrap();
    let last = MIGRATIONS.len() as i64;
    assert_eq!(
        (report.from_version, report.version, report.applied.clone()),
        (0, last, (1..=last).collect::<Vec<_>>())
    );
    if vector_expected() {
        assert_eq!(report.vector, Vector::Installed("0.8.6".into()));
        assert_eq!(
            report.to_string(),
            format!("schema version {last} (migrated from 0); pgvector 0.8.6")
        );
    }
    for table in [
        "machines",
        "sessions",
        "messages",
        "tool_calls",
        "events",
        "snapshots",
        "deletions",
    ] {
        assert_eq!(
            count(
                &pg,
                &format!("SELECT count(*) FROM pg_tables WHERE tablename = '{table}'")
            ),
            1,
            "{table}"
        );
    }
    let again = migrate(&mut pg, MIGRATIONS).unwrap();
    assert_eq!(
        (again.from_version, again.version, again.applied.len()),
        (last, last, 0)
    );
    assert!(
        again
            .to_string()
            .starts_with(&format!("schema version {last} (current)"))
    );
    assert_eq!(
        count(
            &pg,
            "SELECT value::bigint FROM memtrail_meta WHERE key = 'schema_version'"
        ),
        last
    );
}

#[test]
fn a_newer_schema_is_refused_and_left_alone() {
    let Some((_, mut pg)) = crate::fresh("migrate_newer") else {
        return;
    };
    migrate(&mut pg, MIGRATIONS).unwrap();
    pg.batch_execute("UPDATE memtrail_meta SET value = '99' WHERE key = 'schema_version'")
        .unwrap();
    let err = migrate(&mut pg, MIGRATIONS).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "the database's memtrail schema is version 99, newer than this memtrail's {}: \
             upgrade memtrail on this machine",
            MIGRATIONS.len()
        )
    );
    assert_eq!(
        count(
            &pg,
            "SELECT value::bigint FROM memtrail_meta WHERE key = 'schema_version'"
        ),
        99
    );
}

#[test]
fn a_failing_migration_leaves_nothing_and_later_ones_apply_in_order() {
    let Some((_, mut pg)) = crate::fresh("migrate_fail") else {
        return;
    };
    let bad = [
        Migration {
            version: 1,
            name: "one",
            sql: "CREATE TABLE t1 (x int)",
        },
        Migration {
            version: 2,
            name: "two",
            sql: "CREATE TABLE t2 (x int); SELECT 1/0",
        },
    ];
    let err = migrate(&mut pg, &bad).unwrap_err().to_string();
    assert_eq!(
        err,
        "PostgreSQL: migration 2 (two): division by zero (SQLSTATE 22012)"
    );
    assert_eq!(
        count(
            &pg,
            "SELECT count(*) FROM pg_tables WHERE tablename IN ('t1', 't2')"
        ),
        0
    );
    let good = [
        bad[0],
        Migration {
            version: 2,
            name: "two",
            sql: "CREATE TABLE t2 (x int)",
        },
    ];
    let r = migrate(&mut pg, &good[..1]).unwrap();
    assert_eq!(r.applied, [1]);
    let r = migrate(&mut pg, &good).unwrap();
    assert_eq!((r.from_version, r.applied.clone()), (1, vec![2]));
    let gap = [
        bad[0],
        Migration {
            version: 3,
            name: "three",
            sql: "",
        },
    ];
    assert_eq!(
        migrate(&mut pg, &gap).unwrap_err().to_string(),
        "migration 3 (three) is out of sequence: expected 2"
    );
}

#[test]
fn four_concurrent_migrations_migrate_once() {
    let Some((url, _)) = crate::fresh("migrate_concurrent") else {
        return;
    };
    let reports: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let url = format!("{url}?sslmode=disable");
                s.spawn(move || migrate(&mut Pg::connect_url(&url).unwrap(), MIGRATIONS).unwrap())
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let migrated = reports.iter().filter(|r| !r.applied.is_empty()).count();
    assert_eq!(migrated, 1);
    assert!(reports.iter().all(|r| r.version == MIGRATIONS.len() as i64));
}

#[test]
fn a_role_that_may_not_create_pgvector_is_told_what_to_ask_for() {
    if !vector_expected() {
        eprintln!(
            "note: MEMTRAIL_TEST_PG_VECTOR is not 1 (no pgvector in the test cluster); skipped"
        );
        return;
    }
    let Some((url, admin)) = crate::fresh("migrate_novector") else {
        return;
    };
    let db = url.rsplit('/').next().unwrap().to_string();
    let role = format!("u_{db}");
    admin
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN; GRANT ALL ON DATABASE {db} TO {role}; \
             GRANT ALL ON SCHEMA public TO {role}"
        ))
        .unwrap();
    let user_url = url.replacen("postgres@", &format!("{role}@"), 1);
    let mut pg = Pg::connect_url(&format!("{user_url}?sslmode=disable")).unwrap();
    let report = migrate(&mut pg, MIGRATIONS).unwrap();
    let command = format!("psql -d {db} -c 'CREATE EXTENSION vector' (as a superuser)");
    assert_eq!(
        report.vector,
        Vector::NotAllowed {
            command: command.clone()
        }
    );
    assert_eq!(
        report.to_string(),
        format!(
            "schema version {} (migrated from 0); pgvector is installed on the server but this \
             role may not create it; an administrator runs: {command}; lexical search only meanwhile",
            MIGRATIONS.len()
        )
    );
    // The schema is there all the same, owned by the role; without the vectors' table
    // (migration 7 needs pgvector's type).
    assert_eq!(count(&pg, "SELECT count(*) FROM sessions"), 0);
    let vectors_table = |pg: &Pg| -> bool {
        pg.block_on(
            pg.client()
                .query_one("SELECT to_regclass('message_vectors') IS NOT NULL", &[]),
        )
        .unwrap()
        .get(0)
    };
    assert!(!vectors_table(&pg));
    // Once the administrator ran it, the next migration reports it and creates the table.
    admin.batch_execute("CREATE EXTENSION vector").unwrap();
    let again = migrate(&mut pg, MIGRATIONS).unwrap();
    assert_eq!(again.vector, Vector::Installed("0.8.6".into()));
    assert!(again.applied.is_empty());
    assert!(vectors_table(&pg));
    assert_eq!(count(&pg, "SELECT count(*) FROM message_vectors"), 0);
}

#[test]
fn a_role_that_may_not_create_tables_is_told_what_to_ask_for() {
    let Some((url, admin)) = crate::fresh("migrate_nocreate") else {
        return;
    };
    let db = url.rsplit('/').next().unwrap().to_string();
    let role = format!("n_{db}");
    // PostgreSQL 15: the schema public gives no CREATE to ordinary roles.
    admin
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN; GRANT CONNECT ON DATABASE {db} TO {role}"
        ))
        .unwrap();
    let user_url = url.replacen("postgres@", &format!("{role}@"), 1);
    let mut pg = Pg::connect_url(&format!("{user_url}?sslmode=disable")).unwrap();
    let err = migrate(&mut pg, MIGRATIONS).err().unwrap().to_string();
    assert_eq!(
        err,
        "PostgreSQL: permission denied for schema public (SQLSTATE 42501); memtrail creates its \
         tables at the first sync: give its role a database of its own (as an administrator: \
         CREATE DATABASE memtrail OWNER <role>) or CREATE on the schema (GRANT CREATE ON SCHEMA \
         public TO <role>)"
    );
    // Nothing was created.
    assert_eq!(
        count(
            &admin,
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ),
        0
    );
}

#[test]
fn the_written_tables_have_no_foreign_keys_and_compress_with_lz4() {
    let Some((_, mut pg)) = crate::fresh("migrate_lean") else {
        return;
    };
    migrate(&mut pg, MIGRATIONS).unwrap();
    // Migration 4: the push deletes what is under a session or a message itself.
    assert_eq!(
        count(
            &pg,
            "SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND conrelid IN \
             ('messages'::regclass, 'tool_calls'::regclass, 'events'::regclass, \
              'snapshots'::regclass)"
        ),
        0
    );
    // Debian's PostgreSQL 15 is built with lz4: the large columns use it.
    assert_eq!(
        count(
            &pg,
            "SELECT count(*) FROM pg_attribute WHERE attrelid = 'messages'::regclass \
             AND attname IN ('body', 'tools', 'cjk', 'parts', 'tsv') AND attcompression = 'l'"
        ),
        5
    );
}

#[test]
fn session_lists_are_read_in_index_order() {
    let Some((_, mut pg)) = crate::fresh("migrate_list_order") else {
        return;
    };
    migrate(&mut pg, MIGRATIONS).unwrap();
    // The reader's order (pg/src/read.rs, list_sessions), whole and after an agent: an index
    // gives it, so no sort of the table, whatever its size (the planner told not to scan).
    for filter in ["", "WHERE s.agent = 'claude'"] {
        let plan: Vec<String> = pg
            .block_on(async {
                pg.client()
                    .batch_execute("SET enable_seqscan = off")
                    .await?;
                pg.client()
                    .query(
                        &format!(
                            "EXPLAIN SELECT s.id FROM sessions s {filter} \
                             ORDER BY s.updated_at DESC NULLS LAST, s.id DESC LIMIT 20"
                        ),
                        &[],
                    )
                    .await
            })
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let plan = plan.join("\n");
        assert!(plan.contains("sessions_by_"), "{plan}");
        assert!(!plan.contains("Sort"), "{plan}");
    }
}
