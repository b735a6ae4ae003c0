//! The bench crate's integration tests: one test binary, one module per area (run one with
//! `cargo test -p memtrail-bench --test it corpus::`).

mod corpus;
mod import_pipeline;
