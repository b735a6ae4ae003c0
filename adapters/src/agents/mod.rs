//! One folder per coding agent: its paths, detection, transcript reader, hook payloads and
//! reply dialect, and what memtrail registers in its config.

pub mod claude;
pub mod cline;
pub mod codex;
pub mod copilotcli;
pub mod cursor;
pub mod gemini;
pub mod opencode;
pub mod qwen;
pub mod roo;
pub mod vscode;
