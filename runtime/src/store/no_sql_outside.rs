//! Enforcement (issue 12): SQL and `rusqlite` appear only in the store's own modules
//! (`runtime/src/store/`), so that a second backend implements the store's interface and nothing
//! else. Scanned: every `.rs` file under `runtime/src`, `src`, `installer/src` and
//! `adapters/src`, comment lines left out. One exception: the OpenCode adapter (a file or
//! folder named `opencode` under `adapters/src`) reads OpenCode's own SQLite database read-only;
//! that is the agent's transcript format, not memtrail's store.

use std::path::{Path, PathBuf};

/// What counts as SQL in product code: statement calls, the driver, and SQL keywords as a
/// statement starts them.
const SQL_MARKERS: &[&str] = &[
    ".prepare(",
    ".prepare_cached(",
    ".execute(",
    ".execute_batch(",
    ".query_row(",
    ".query_map(",
    ".pragma_update(",
    "rusqlite",
    "SELECT ",
    "INSERT INTO",
    "INSERT OR ",
    "DELETE FROM",
    "UPDATE sessions",
    "UPDATE messages",
    "UPDATE sources",
    "UPDATE snapshots",
    "CREATE TABLE",
    "CREATE INDEX",
    "CREATE TRIGGER",
    "CREATE VIRTUAL TABLE",
    "PRAGMA ",
];

/// The SQL markers on the code lines (not `//` comment lines) of `text`, as `line: marker`.
fn sql_lines(text: &str) -> Vec<String> {
    marker_lines(text, SQL_MARKERS)
}

/// Each of `markers` found on a code line (not a `//` comment line) of `text`, as
/// `line: marker` (line numbers from 1).
pub(super) fn marker_lines(text: &str, markers: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        for m in markers {
            if line.contains(m) {
                out.push(format!("{}: {m}", i + 1));
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// True for the files allowed to hold SQL: the store's modules, and the OpenCode adapter.
fn allowed(rel: &Path) -> bool {
    rel.starts_with("runtime/src/store")
        || rel.starts_with("adapters/src")
            && rel
                .components()
                .any(|c| c.as_os_str() == "opencode" || c.as_os_str() == "opencode.rs")
}

#[test]
fn the_scanner_finds_sql_and_skips_comments() {
    let text = "fn f(c: &C) {\n    // SELECT in a comment\n    c.query_row(\"SELECT id FROM sessions\", [], |r| r.get(0))\n}\n";
    assert_eq!(
        sql_lines(text),
        vec!["3: .query_row(".to_string(), "3: SELECT ".to_string()]
    );
    assert!(allowed(Path::new("runtime/src/store/writer.rs")));
    assert!(allowed(Path::new("adapters/src/opencode.rs")));
    assert!(allowed(Path::new("adapters/src/agents/opencode/reader.rs")));
    assert!(!allowed(Path::new("adapters/src/codex.rs")));
    assert!(!allowed(Path::new("runtime/src/query.rs")));
    assert!(!allowed(Path::new("src/opencode.rs")));
}

#[test]
fn no_sql_outside_the_store_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["runtime/src", "src", "installer/src", "adapters/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(
        files.len() > 20,
        "the source tree was not found under {}",
        root.display()
    );
    let mut found = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap_or(f);
        if allowed(rel) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for hit in sql_lines(&text) {
            found.push(format!("{}:{hit}", rel.display()));
        }
    }
    assert!(
        found.is_empty(),
        "SQL outside runtime/src/store/ (move it into a store module behind a domain method):\n{}",
        found.join("\n")
    );
}
