//! opencode adapter (in progress).
