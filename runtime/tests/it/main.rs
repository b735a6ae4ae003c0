//! The runtime crate's integration tests: one test binary, one module per area (run one with
//! `cargo test -p memtrail-runtime --test it ingest::`). `support` reads a transcript fixture
//! with its agent's reader and folds the records as the store does; `tests/data` holds data files.

mod support;

mod continuity;
mod events;
mod events_conformance;
mod hostile;
mod index_queue;
mod ingest;
mod list_pages;
mod long_line;
mod privacy;
mod redact;
mod resume;
mod skills;
mod stop;
mod sync;
mod vectors;
mod whole_file;
