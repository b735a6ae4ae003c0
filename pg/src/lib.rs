//! memtrail-pg: the PostgreSQL side of memtrail (docs/sync.md): `memtrail sync` (push and pull)
//! and direct queries of a team server (`--store postgres://…`).

pub mod read;

pub use read::PgReader;
