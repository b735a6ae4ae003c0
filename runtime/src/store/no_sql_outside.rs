//! Enforcement (issue 12): SQL and `rusqlite` appear only in the store's own modules
//! (`runtime/src/store/`), so that a second backend implements the store's interface and nothing
//! else. Scanned: every `.rs` file under `runtime/src`, `src`, `installer/src`, `web/src` and
//! `adapters/src`, comment lines left out. The exceptions: the adapters that read an agent's own
//! SQLite database read-only (OpenCode's, Goose's, Crush's: [`agent_databases`]); that is the agent's
//! transcript format, not memtrail's store.

use std::path::{Path, PathBuf};

/// What counts as SQL in product code: statement calls, the driver, and SQL keywords as a
/// statement starts them (upper case, as the store writes them; [`sql_literals`] catches the
/// other cases inside string literals).
const SQL_MARKERS: &[&str] = &[
    ".prepare(",
    ".prepare_cached(",
    ".execute(",
    ".execute_batch(",
    ".query(",
    ".query_one(",
    ".query_row(",
    ".query_map(",
    ".transaction(",
    ".pragma_query_value(",
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

/// The SQL markers on the code lines (not `//` comment lines) of `text`, as `line: marker`,
/// then the string literals that hold an SQL statement, as `line: sql "…"` (the line where the
/// literal starts).
fn sql_lines(text: &str) -> Vec<String> {
    let mut out = marker_lines(text, SQL_MARKERS);
    out.extend(sql_literals(text));
    out
}

/// How an SQL statement starts (lower case, whitespace collapsed to one space), and what must
/// follow later in the same literal (`""`: nothing).
const SQL_STATEMENTS: &[(&str, &str)] = &[
    ("select ", " from "),
    ("insert into ", ""),
    ("insert or ", ""),
    ("update ", " set "),
    ("delete from ", ""),
    ("create table ", ""),
    ("create index ", ""),
    ("create unique index ", ""),
    ("create trigger ", ""),
    ("create virtual table ", ""),
    ("drop table ", ""),
    ("drop index ", ""),
    ("drop trigger ", ""),
    ("drop view ", ""),
    ("alter table ", ""),
    ("replace into ", ""),
    ("pragma ", ""),
    ("vacuum", ""),
    ("begin immediate", ""),
];

/// The string literals of the Rust source `text` (outside `//` comments) that hold an SQL
/// statement, in any case: the literal, lower-cased and its whitespace collapsed, starts with
/// (or has after a `;`) one of [`SQL_STATEMENTS`], as `line: sql "<first 40 characters>"`.
/// A statement must start the literal (or follow a `;`) so that prose that merely mentions a
/// keyword ("select the agents") is not SQL.
fn sql_literals(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (line, lit) in string_literals(text) {
        let norm = lit
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase();
        let is_sql = norm.split(';').any(|stmt| {
            let stmt = stmt.trim_start();
            SQL_STATEMENTS.iter().any(|(start, then)| {
                stmt.starts_with(start)
                    && (then.is_empty() || stmt[start.len()..].contains(then))
                    && (*start != "vacuum" || stmt.len() == 6 || stmt[6..].starts_with(' '))
            })
        });
        if is_sql {
            let head: String = norm.chars().take(40).collect();
            out.push(format!("{line}: sql {head:?}"));
        }
    }
    out
}

/// The string literals (`"…"`, `r"…"`, `r#"…"#`, `b"…"`) of the Rust source `text`, with the
/// line (from 1) each starts on; `//` comments, char literals and lifetimes are skipped. Escapes
/// are kept as written (enough to recognise SQL).
fn string_literals(text: &str) -> Vec<(usize, String)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < b.len() {
        match b[i] {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'\'' => {
                // A char literal ('x', '\'', '"') or a lifetime ('a).
                if b.get(i + 1) == Some(&b'\\') {
                    i += 2;
                    while i < b.len() && b[i] != b'\'' {
                        i += 1;
                    }
                    i += 1;
                } else if b.get(i + 2) == Some(&b'\'') {
                    i += 3;
                } else {
                    i += 1;
                }
            }
            b'"' => {
                let start = i + 1;
                let mut k = start;
                while k < b.len() && b[k] != b'"' {
                    k += if b[k] == b'\\' { 2 } else { 1 };
                }
                let end = k.min(b.len());
                let lit = &text[start..end];
                out.push((line, lit.to_string()));
                line += lit.matches('\n').count();
                i = end + 1;
            }
            c if is_ident(c) => {
                // An identifier whole (so a keyword's `r` is no raw string), or a raw string's
                // prefix (`r`, `br`).
                let from = i;
                while i < b.len() && is_ident(b[i]) {
                    i += 1;
                }
                let raw = matches!(&text[from..i], "r" | "br");
                let mut j = i;
                while raw && b.get(j) == Some(&b'#') {
                    j += 1;
                }
                if raw && b.get(j) == Some(&b'"') {
                    let hashes = j - i;
                    let close = format!("\"{}", "#".repeat(hashes));
                    let start = j + 1;
                    let end = text[start..].find(&close).map_or(b.len(), |n| start + n);
                    let lit = &text[start..end];
                    out.push((line, lit.to_string()));
                    line += lit.matches('\n').count();
                    i = (end + close.len()).min(b.len());
                }
            }
            _ => i += 1,
        }
    }
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
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
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for e in entries {
        let p = e
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
            .path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The adapters that read an agent's own SQLite database read-only: the short names of the
/// agents whose adapter says so (`Database::sqlite`: OpenCode's `opencode.db`, Goose's
/// `sessions.db`, Crush's `crush.db`), each allowed as a folder `<name>` or a file `<name>.rs`
/// under `adapters/src`.
fn agent_databases() -> Vec<String> {
    memtrail_adapters::Agent::ALL
        .into_iter()
        .filter(|a| a.adapter().quirks().database.is_some_and(|d| d.sqlite))
        .flat_map(|a| [a.as_str().to_string(), format!("{}.rs", a.as_str())])
        .collect()
}

/// True for the files allowed to hold SQL: the store's modules, and the adapters of
/// [`agent_databases`].
fn allowed(rel: &Path) -> bool {
    let databases = agent_databases();
    rel.starts_with("runtime/src/store")
        || rel.starts_with("adapters/src")
            && rel
                .components()
                .any(|c| databases.iter().any(|a| c.as_os_str() == a.as_str()))
}

#[test]
fn the_scanner_finds_sql_and_skips_comments() {
    let text = "fn f(c: &C) {\n    // SELECT in a comment\n    c.query_row(\"SELECT id FROM sessions\", [], |r| r.get(0))\n}\n";
    assert_eq!(
        sql_lines(text),
        vec![
            "3: .query_row(".to_string(),
            "3: SELECT ".to_string(),
            "3: sql \"select id from sessions\"".to_string()
        ]
    );
    // Any case, across lines (a literal's line is where it starts), in raw strings, after a
    // `;`; prose, char literals and comments are not SQL.
    let text = concat!(
        "let a = \"select id\n  from sessions\";\n",
        "let b = r#\"Insert Into t VALUES (1)\"#; // \"delete from x\"\n",
        "let c = '\"'; let d = \"Select the agents to install\";\n",
        "let e = \"x; vacuum\"; let f = \"vacuumed 3 MB\"; t.transaction()?;\n",
        "let g = \"update the hooks\"; let h = \"pragma journal_mode\"; c.query([])\n",
    );
    assert_eq!(
        sql_lines(text),
        vec![
            "5: .transaction(",
            "6: .query(",
            "1: sql \"select id from sessions\"",
            "3: sql \"insert into t values (1)\"",
            "5: sql \"x; vacuum\"",
            "6: sql \"pragma journal_mode\"",
        ]
    );
    assert!(allowed(Path::new("runtime/src/store/writer.rs")));
    assert!(allowed(Path::new("adapters/src/opencode.rs")));
    assert!(allowed(Path::new("adapters/src/agents/opencode/reader.rs")));
    assert!(allowed(Path::new("adapters/src/agents/goose/mod.rs")));
    assert!(allowed(Path::new("adapters/src/agents/crush/mod.rs")));
    // Derived from the registry (a new SQLite agent adds nothing here): the three of today.
    let databases = agent_databases();
    for name in ["opencode", "opencode.rs", "goose", "crush"] {
        assert!(databases.iter().any(|d| d == name), "{name}: {databases:?}");
    }
    assert!(!allowed(Path::new("adapters/src/agents/cline/sessions.rs")));
    assert!(!allowed(Path::new("adapters/src/codex.rs")));
    assert!(!allowed(Path::new("runtime/src/query.rs")));
    assert!(!allowed(Path::new("src/opencode.rs")));
}

#[test]
fn no_sql_outside_the_store_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in [
        "runtime/src",
        "src",
        "installer/src",
        "adapters/src",
        "web/src",
    ] {
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
        let text = std::fs::read_to_string(f)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", f.display()));
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
