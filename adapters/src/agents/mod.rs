//! One folder per coding agent: its paths, detection, transcript reader, hook payloads and
//! reply dialect, and what memtrail registers in its config.

pub mod aider;
pub mod claude;
pub mod cline;
pub mod codex;
pub mod continuedev;
pub mod copilotcli;
pub mod crush;
pub mod cursor;
pub mod droid;
pub mod gemini;
pub mod goose;
pub mod opencode;
pub mod pi;
pub mod qwen;
pub mod roo;
pub mod vscode;
