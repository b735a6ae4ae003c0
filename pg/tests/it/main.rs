//! memtrail-pg's integration tests, against a real PostgreSQL 15 (`MEMTRAIL_TEST_PG_URL`, from
//! `scripts/pg-test-server`; each test makes its own database). Without the variable they skip
//! themselves, unless `MEMTRAIL_REQUIRE_PG=1`.

mod activity;
mod bulk;
mod connect;
mod corpus;
mod lexemes;
mod migrate;
mod read;
mod sync;

/// A fresh database for the test `name` and a connection to it, or `None` (skipped).
pub fn fresh(name: &str) -> Option<(String, memtrail_pg::Pg)> {
    let url = memtrail_testkit::pg::test_database(name)?;
    let pg = memtrail_pg::Pg::connect_url(&format!("{url}?sslmode=disable")).unwrap();
    Some((url, pg))
}
