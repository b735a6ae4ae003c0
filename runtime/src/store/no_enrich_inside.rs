//! Enforcement (issue 12): the store does not decide or perform redaction or event extraction
//! itself; ingest supplies them ([`crate::records::Enrich`], [`crate::records::Prepared`]), so
//! every backend gets the same. Scanned: every `.rs` file under `runtime/src/store/` (this one
//! left out), comment lines left out. The store may name the types its schema holds
//! (`crate::events::{Category, Event, StoredEvent}`), not the functions of `crate::redact`,
//! `crate::seams` or `crate::events::extract`. The places that still pick memtrail's rules
//! ([`crate::records::Standard`], or [`crate::records::Prepared::new`] which picks them) because
//! their callers do not pass an [`crate::records::Enrich`] yet are listed in [`REMAINING`].

use std::collections::BTreeMap;
use std::path::Path;

/// Redaction and extraction entry points a store module must not call.
const FORBIDDEN: &[&str] = &["redact::", "seams::", "events::extract", "extract::"];

/// Store modules that still choose the rules themselves, and on how many code lines: each is a
/// caller that does not supply an `Enrich` yet (issue 12, what remains). Lowering a count here
/// is the way to record progress; a new place fails the test.
const REMAINING: &[(&str, usize)] = &[
    // The schema-3 migration at open (events of stored messages).
    ("schema.rs", 1),
    // `memtrail repair` (events rebuilt).
    ("repair.rs", 1),
];

/// `line: marker` for each forbidden call on a code line (not a `//` comment line) of `text`,
/// and how many code lines pick the rules themselves (`Standard`, `Prepared::new(`).
fn scan(text: &str) -> (Vec<String>, usize) {
    let mut hits = super::no_sql_outside::marker_lines(text, FORBIDDEN);
    let mut choices = 0;
    let code = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"));
    for (i, line) in code {
        if line.trim_start().starts_with("use crate::{")
            && (line.contains("redact") || line.contains("seams"))
        {
            hits.push(format!("{}: use crate::{{redact|seams}}", i + 1));
        }
        if line.contains("Standard") || line.contains("Prepared::new(") {
            choices += 1;
        }
    }
    (hits, choices)
}

#[test]
fn the_scanner_finds_calls_and_choices_and_skips_comments() {
    let text = "use crate::records::{Enrich, Standard};\n\
                // crate::redact::redact in a comment\n\
                let t = crate::redact::redact(s);\n\
                let e = crate::events::extract(a, m);\n\
                use crate::{redact, Result};\n\
                let ev: crate::events::Event;\n";
    assert_eq!(
        scan(text),
        (
            vec![
                "3: redact::".to_string(),
                "4: events::extract".to_string(),
                "5: use crate::{redact|seams}".to_string(),
            ],
            1
        )
    );
}

#[test]
fn the_store_leaves_redaction_and_extraction_to_ingest() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("runtime/src/store")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    assert!(
        files.len() > 10,
        "store modules not found in {}",
        dir.display()
    );
    let mut found = Vec::new();
    let mut choices = BTreeMap::new();
    for f in &files {
        let name = f
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if name == "no_enrich_inside.rs" {
            continue;
        }
        let (hits, n) = scan(&std::fs::read_to_string(f).unwrap_or_default());
        found.extend(
            hits.into_iter()
                .map(|h| format!("runtime/src/store/{name}:{h}")),
        );
        if n > 0 {
            choices.insert(name, n);
        }
    }
    assert!(
        found.is_empty(),
        "redaction or event extraction called inside the store (take it from the caller's \
         records::Enrich):\n{}",
        found.join("\n")
    );
    let remaining: BTreeMap<String, usize> =
        REMAINING.iter().map(|(f, n)| (f.to_string(), *n)).collect();
    assert_eq!(
        choices, remaining,
        "store modules choosing the redaction and extraction rules themselves (records::Standard, \
         Prepared::new): take an Enrich from the caller, or update REMAINING"
    );
}
