//! cursor adapter (in progress).
