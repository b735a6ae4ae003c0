//! The adapters crate's integration tests: one test binary, one module per area (run one with
//! `cargo test -p memtrail-adapters --test it codex_reader::`). `common` holds what the reader
//! tests share.

mod common;

mod claude_conformance;
mod claude_reader;
mod cline_conformance;
mod codex_conformance;
mod codex_hooks;
mod codex_paths;
mod codex_reader;
mod copilotcli_conformance;
mod cursor_conformance;
mod cursor_reader;
mod gemini_conformance;
mod gemini_reader;
mod opencode_conformance;
mod opencode_hooks;
mod opencode_reader;
mod qwen_conformance;
mod roo_conformance;
mod vscode_conformance;
mod vscode_reader;
