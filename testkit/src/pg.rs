//! A PostgreSQL database of its own for each test that needs one.
//!
//! The tests reach a throwaway cluster through `MEMTRAIL_TEST_PG_URL`, a superuser URL
//! (`postgres://postgres@127.0.0.1:PORT/postgres`) that `scripts/pg-test-server` sets (and
//! `scripts/test` runs every test under it). Each test creates its own database in that cluster,
//! so tests run in parallel without seeing each other's rows.

use std::sync::atomic::{AtomicU32, Ordering};

/// The variable holding the superuser URL of the test cluster.
pub const URL_VAR: &str = "MEMTRAIL_TEST_PG_URL";
/// With this variable set to `1` (CI sets it), a test that needs PostgreSQL fails instead of
/// skipping when [`URL_VAR`] is unset.
pub const REQUIRE_VAR: &str = "MEMTRAIL_REQUIRE_PG";

/// Creates a fresh, empty database in the test cluster and returns its URL (the cluster's URL
/// with the database name replaced): `postgres://postgres@127.0.0.1:PORT/mt_<hint>_<pid>_<n>`,
/// where `<hint>` is `name_hint` lower-cased with every character outside `[a-z0-9_]` turned into
/// `_`, cut to 30 characters, and `<n>` counts the databases this process made (a name is unique
/// in the cluster as long as the process ids of concurrent test processes differ).
///
/// Returns `None` after printing `note: MEMTRAIL_TEST_PG_URL is not set; <name_hint> skipped`
/// on stderr when [`URL_VAR`] is unset. Panics when it is unset and `MEMTRAIL_REQUIRE_PG=1`,
/// or when the cluster cannot be reached or refuses the `CREATE DATABASE`.
pub fn test_database(name_hint: &str) -> Option<String> {
    let Some(url) = std::env::var(URL_VAR).ok().filter(|u| !u.is_empty()) else {
        let required = std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1");
        assert!(
            !required,
            "{REQUIRE_VAR}=1 but {URL_VAR} is not set (run the tests under scripts/pg-test-server)"
        );
        eprintln!("note: {URL_VAR} is not set; {name_hint} skipped");
        return None;
    };
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = database_name(name_hint, std::process::id(), n);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("cannot connect to {URL_VAR} ({url}): {e}"));
        let driver = tokio::spawn(conn);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        drop(client);
        let _ = driver.await;
    });
    Some(with_database(&url, &name))
}

/// `mt_<hint>_<pid>_<n>` (see [`test_database`]); at most 63 bytes, PostgreSQL's name limit.
fn database_name(hint: &str, pid: u32, n: u32) -> String {
    let hint: String = hint
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '_') => c,
            _ => '_',
        })
        .take(30)
        .collect();
    format!("mt_{hint}_{pid}_{n}")
}

/// `url` with its database (the path after the host, before any `?`) replaced by `name`.
pub fn with_database(url: &str, name: &str) -> String {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[after_scheme..];
    let host_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let tail = &rest[host_end..];
    let query = tail.find('?').map_or("", |i| &tail[i..]);
    format!("{}/{name}{query}", &url[..after_scheme + host_end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names_are_sanitized_and_short() {
        assert_eq!(database_name("sync::Push-1", 42, 7), "mt_sync__push_1_42_7");
        let long = database_name(&"x".repeat(100), u32::MAX, u32::MAX);
        assert_eq!(long, format!("mt_{}_4294967295_4294967295", "x".repeat(30)));
        assert_eq!(long.len(), 55);
    }

    #[test]
    fn with_database_replaces_only_the_path() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/postgres", "t1"),
            "postgres://postgres@127.0.0.1:5432/t1"
        );
        assert_eq!(
            with_database("postgres://u:p@h:1/db?sslmode=require", "t2"),
            "postgres://u:p@h:1/t2?sslmode=require"
        );
        assert_eq!(with_database("postgres://h", "t3"), "postgres://h/t3");
        assert_eq!(
            with_database("postgres://h?x=1", "t4"),
            "postgres://h/t4?x=1"
        );
    }

    /// Two calls give two distinct, empty databases, each named as documented.
    #[test]
    fn test_database_creates_a_fresh_database() {
        let Some(a) = test_database("testkit a") else {
            return;
        };
        let b = test_database("testkit a").unwrap();
        assert_ne!(a, b);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for url in [&a, &b] {
            let name = url.rsplit('/').next().unwrap().to_string();
            assert!(name.starts_with(&format!("mt_testkit_a_{}_", std::process::id())));
            rt.block_on(async {
                let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                    .await
                    .unwrap();
                tokio::spawn(conn);
                let row = client
                    .query_one(
                        "SELECT current_database(), (SELECT count(*) FROM pg_tables \
                         WHERE schemaname = 'public')",
                        &[],
                    )
                    .await
                    .unwrap();
                assert_eq!(row.get::<_, String>(0), name);
                assert_eq!(row.get::<_, i64>(1), 0);
            });
        }
    }
}
