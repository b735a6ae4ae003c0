//! The adapters crate's integration tests: one test binary, one module per area (run one with
//! `cargo test -p memtrail-adapters --test it codex_reader::`). `common` holds what the reader
//! tests share.

mod common;

mod aider_conformance;
mod claude_conformance;
mod claude_reader;
mod cline_conformance;
mod codex_conformance;
mod codex_hooks;
mod codex_paths;
mod codex_reader;
mod continue_conformance;
mod copilotcli_conformance;
mod crush_conformance;
mod cursor_conformance;
mod cursor_reader;
mod droid_conformance;
mod gemini_conformance;
mod gemini_reader;
mod goose_conformance;
mod opencode_conformance;
mod opencode_hooks;
mod opencode_reader;
mod pi_conformance;
mod qwen_conformance;
mod roo_conformance;
mod vscode_conformance;
mod vscode_reader;
