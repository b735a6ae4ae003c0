//! The lexemes memtrail computes (`memtrail_pg::tsv`, migration 3) against the rule PostgreSQL
//! applied before (migration 2's generated column: `to_tsvector('memtrail',
//! memtrail_split(…))`), on hand-written texts and on every string of the project's fixtures
//! and of the shared real transcripts (`../shared/fixtures`, when present): rows written by
//! either must be found by the same queries. Also: a v2 database keeps its vectors through
//! migration 3, and a push writes the client's vector.

use std::path::Path;

use memtrail_pg::migrate::{MIGRATIONS, migrate};
use memtrail_pg::tsv::TsVector;

/// PostgreSQL's text of migration 2's expression for (body, tools, cjk).
const PG_RULE: &str =
    "SELECT (setweight(to_tsvector('memtrail'::regconfig, memtrail_split(left(b, 100000))), 'A')
     || setweight(to_tsvector('memtrail'::regconfig, memtrail_split(left(t, 100000))), 'B')
     || setweight(to_tsvector('simple'::regconfig, coalesce(left(c, 50000), '')), 'C'))::text
   FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS x(b, t, c, o) ORDER BY o";

/// Every JSON string value (and every line of a non-JSON file) under `dir`, up to `budget`
/// bytes in all.
fn strings_under(dir: &Path, out: &mut Vec<String>, budget: &mut usize) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if *budget == 0 {
            return;
        }
        if p.is_dir() {
            strings_under(&p, out, budget);
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        for line in text.lines() {
            let mut found = Vec::new();
            match serde_json::from_str::<serde_json::Value>(line) {
                Ok(v) => collect(&v, &mut found),
                Err(_) => found.push(line.to_string()),
            }
            for s in found {
                if *budget == 0 {
                    return;
                }
                *budget = budget.saturating_sub(s.len());
                out.push(s);
            }
        }
    }
}

fn collect(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) if !s.is_empty() => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| collect(x, out)),
        _ => {}
    }
}

fn pg_rule(pg: &memtrail_pg::Pg, rows: &[(String, String, Option<String>)]) -> Vec<String> {
    let b: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    let t: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    let c: Vec<Option<&str>> = rows.iter().map(|r| r.2.as_deref()).collect();
    pg.block_on(pg.client().query(PG_RULE, &[&b, &t, &c]))
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[test]
fn the_client_lexemes_are_postgresqls() {
    let Some((_, mut pg)) = crate::fresh("lexemes_rule") else {
        return;
    };
    migrate(&mut pg, MIGRATIONS).unwrap();
    let hand = [
        "Parse the config: parse_config(src/main.rs) --dry-run HashMap::new a@b.c",
        "Configuring servers, restarting; news generously \"database is locked\" it's",
        "café ÉCOLE Straße ΣΟΦΙΑ Москва naïve résumé x1 abc123 3.14 v1.2.3 0x1F -5 1e10",
        "日本語のテキスト 中文 한국어 mixed日本text emoji 🚀 done",
        "ALL CAPS Title Case mIxEd s a is as us ss sss",
    ];
    let mut texts: Vec<String> = hand.iter().map(|s| s.to_string()).collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut budget = 2_000_000;
    strings_under(&root.join("fixtures"), &mut texts, &mut budget);
    let mut shared_budget = 4_000_000;
    strings_under(
        &root.join("../shared/fixtures"),
        &mut texts,
        &mut shared_budget,
    );
    assert!(texts.len() > 1000, "only {} texts", texts.len());
    // Each text as prose, as tool calls, and (its CJK characters, one per token) as `cjk`.
    let rows: Vec<(String, String, Option<String>)> = texts
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let cjk: Vec<String> = s
                .chars()
                .filter(|c| memtrail_runtime::store::is_cjk(*c))
                .map(|c| c.to_string())
                .collect();
            let cjk = (!cjk.is_empty()).then(|| cjk.join(" "));
            if i % 2 == 0 {
                (s.clone(), texts[(i + 1) % texts.len()].clone(), cjk)
            } else {
                (String::new(), s.clone(), cjk)
            }
        })
        .collect();
    let mut differ = Vec::new();
    for chunk in rows.chunks(500) {
        let theirs = pg_rule(&pg, chunk);
        for (r, t) in chunk.iter().zip(theirs) {
            let ours = TsVector::message(&r.0, &r.1, r.2.as_deref()).to_text();
            if ours != t {
                differ.push((r.clone(), ours, t));
            }
        }
    }
    // The one known difference: PostgreSQL's parser reads digits, `e`, digits as a number in
    // scientific notation and ends the token there, so the hash `10e0b1c8` was `10e0` and
    // `b1c8`; memtrail keeps it one token (as SQLite's unicode61 does). Every differing row
    // must differ only so: each lexeme of ours PostgreSQL lacks holds such a number, and each
    // of PostgreSQL's that we lack is a piece of one of those.
    let lexemes = |v: &str| -> std::collections::BTreeSet<String> {
        v.split(' ')
            .filter(|x| !x.is_empty())
            .map(|x| {
                x.rsplit_once(':')
                    .map_or(x, |p| p.0)
                    .trim_matches('\'')
                    .to_string()
            })
            .collect()
    };
    let unexplained: Vec<_> = differ
        .iter()
        .filter(|(_, ours, theirs)| {
            let (o, t) = (lexemes(ours), lexemes(theirs));
            let split: Vec<&String> = o.difference(&t).collect();
            !split.iter().all(|l| has_exponent_number(l))
                || !t
                    .difference(&o)
                    .all(|p| split.iter().any(|l| l.contains(p.as_str())))
        })
        .collect();
    assert!(
        unexplained.is_empty(),
        "{} of {} rows differ otherwise; the first: {:#?}",
        unexplained.len(),
        rows.len(),
        unexplained.first()
    );
    eprintln!(
        "{} of {} rows differ by numbers in scientific notation only",
        differ.len(),
        rows.len()
    );
}

/// Whether `s` holds digits, `e`, digits (what PostgreSQL's parser reads as a float).
fn has_exponent_number(s: &str) -> bool {
    let b = s.as_bytes();
    (1..b.len().saturating_sub(1))
        .any(|i| b[i] == b'e' && b[i - 1].is_ascii_digit() && b[i + 1].is_ascii_digit())
}
