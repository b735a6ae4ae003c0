//! One module per command: each parses nothing (see [`crate::cli`]), calls the library crates
//! and prints.

pub mod browse;
pub mod completions;
pub mod config;
pub mod doctor;
pub mod export;
pub mod handoff;
pub mod hook;
pub mod import;
pub mod install;
pub mod mcp;
pub mod models;
pub mod purge;
pub mod redact;
pub mod repair;
pub mod resume;
pub mod search;
pub mod sessions;
pub mod status;
pub mod sync;
pub mod sync_auto;
pub mod web;
