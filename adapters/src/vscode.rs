//! vscode adapter (in progress).
