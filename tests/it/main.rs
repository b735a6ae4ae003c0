//! The memtrail binary's integration tests: one test binary, one module per area. Run one area
//! with `cargo test --test it cli::`; the real-CLI end-to-end tests are `e2e_claude::`,
//! `e2e_codex::` and `e2e_agent_clis::` (see tests/e2e/README.md).
//!
//! `support` is the sandboxed HOME of the CLI tests (and what they share), `common` the harness
//! of the end-to-end tests; `tests/e2e` holds the stub model servers and the payloads.

mod common;
mod support;

mod autosync;
mod binstall;
mod browse;
mod cli;
mod completions;
mod config_cli;
mod crash;
mod e2e_agent_clis;
mod e2e_aider;
mod e2e_claude;
mod e2e_cline;
mod e2e_codex;
mod e2e_continue;
mod e2e_copilotcli;
mod e2e_crush;
mod e2e_droid;
mod e2e_goose;
mod e2e_pi;
mod e2e_qwen;
mod e2e_roo;
mod embed_cli;
mod export_cli;
mod install_cli;
mod pg_store;
mod pg_vectors;
mod privacy_cli;
mod redact_rules;
mod reliability;
mod stress;
mod sync;
mod terminal;
mod web_browser;
