//! The installer crate's integration tests: one test binary, one module per area (run one with
//! `cargo test -p memtrail-installer --test it codex::`). `common` is the sandbox (a temp home
//! and state dir passed to the installer as an explicit `Env`) and what the modules share.

mod common;

mod cline;
mod codex;
mod concurrency;
mod continue_cli;
mod copilotcli;
mod crush;
mod cursor;
mod droid;
mod files;
mod foreign_entries;
mod gemini;
mod goose;
mod malformed;
mod memory;
mod opencode;
mod pi;
mod qwen;
mod roo;
mod roundtrip;
mod switches;
mod upgrade;
mod vscode;
