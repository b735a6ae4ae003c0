//! gemini adapter (in progress).
