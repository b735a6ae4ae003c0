//! The oracle for prefix terms searched as the terms they stand for ([`crate::store::prefix`]):
//! the index terms read from FTS5's pages must be FTS5's own (its `fts5vocab` table), and a
//! search with every prefix expanded must give the hits of FTS5's own prefix query (same
//! messages, scores and snippets, in the same order), over a store of many index segments,
//! with deletions, whose prefixes hold frequent terms (doclists over many pages), rare ones,
//! and stems the Porter stemmer does not give back (`errorcase` → `errorcas` → `errorca`).

use crate::query::{self, Hit, SearchFilter};
use crate::records::Standard;
use crate::store::Store;
use crate::store::prefix::{
    EXPAND_MAX_READ_TERMS, FORCED_MAX_TERMS, FORCED_MIN_PAGES, PRUNED, WIDE_SEARCHED, disarm,
    excluded_split_in, expand_in, matches_nothing_in, merge_before_page_reads, merge_some,
    message_row, rows_matching, segments, set_automerge, term_rows_in, terms_in, vocabulary,
    vocabulary_rows, write_before_walk,
};
use crate::store::queries::{FORCED_PLAN, ForcedPlan, LAST_RANKED};
use crate::test_rng::Xorshift;
use memtrail_adapters::{Agent, Kind, Message, Part, Record, Role, SessionMeta, SessionRef};
use std::collections::BTreeSet;

const T0: i64 = 1_760_000_000_000;

/// Words and how many messages in a thousand hold each.
const WORDS: &[(&str, u64)] = &[
    ("error", 300),
    ("errors", 80),
    ("errno", 40),
    ("err", 20),
    ("errorcase", 15),
    ("errorgeneral", 10),
    ("erroneous", 8),
    ("erratic", 5),
    ("test", 400),
    ("testing", 60),
    ("tested", 30),
    ("testcase", 10),
    ("webhook", 50),
    ("alpha", 500),
];

/// A store of 24 sessions written in many small transactions with FTS5's automatic merges
/// off (so the index has many segments, and an unfinished merge), two sessions deleted after
/// the 12th of 30 rounds, 6,480 messages left: the words of [`WORDS`] at their
/// rates, and in one message in 10 one of 300 rare words `errq0` … `errq299`.
fn generated() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = generated_at(&dir.path().join("m.db"));
    (dir, store)
}

/// [`generated`]'s store, at `path`.
fn generated_at(path: &std::path::Path) -> Store {
    let mut store = Store::open(path).unwrap();
    let mut rng = Xorshift(0x0e44_0a5e);
    let agents = [Agent::Claude, Agent::Codex];
    let sessions: Vec<i64> = (0..24)
        .map(|i| {
            store
                .write(|w| {
                    w.upsert_session(
                        &SessionRef {
                            agent: agents[i % 2],
                            external_id: format!("sess-{i:02}"),
                            parent_external_id: None,
                        },
                        &SessionMeta {
                            project_dir: Some(format!("/w/p{}", i % 3)),
                            ..SessionMeta::default()
                        },
                        &Standard,
                    )
                })
                .unwrap()
        })
        .collect();
    // Each write's flush a segment of its own, until FTS5's crisis merge (16 on a level).
    set_automerge(&store, 0);
    let mut n = 0i64;
    for round in 0..30 {
        if round == 12 {
            // Deleting runs FTS5's `optimize` (one segment, deleted entries dropped): the
            // segments of the rounds after stay apart.
            for external in ["sess-03", "sess-10"] {
                crate::store::maintenance::delete_session(&mut store, external).unwrap();
            }
            set_automerge(&store, 0);
        }
        for (k, &sid) in sessions.iter().enumerate() {
            if round >= 12 && (k == 3 || k == 10) {
                continue;
            }
            let records: Vec<Record> = (0..10)
                .map(|j| {
                    n += 1;
                    let mut words: Vec<String> = Vec::new();
                    for &(w, per_mille) in WORDS {
                        if rng.below(1000) < per_mille as usize {
                            words.push(w.to_string());
                        }
                    }
                    if rng.below(10) == 0 {
                        words.push(format!("errq{}", rng.below(300)));
                    }
                    words.push(["filler", "words", "here"][rng.below(3)].to_string());
                    // Words repeated in some messages: frequencies differ within a group.
                    if rng.below(4) == 0 {
                        let again = words[0].clone();
                        words.push(again);
                    }
                    let text = words.join(" ");
                    Record::Message(Message {
                        id: format!("r{round}-s{sid}-{j}"),
                        role: if j % 2 == 0 {
                            Role::User
                        } else {
                            Role::Assistant
                        },
                        kind: Kind::Text,
                        parts: vec![Part::Text { text }],
                        timestamp: Some(T0 + n * 1000),
                        model: None,
                    })
                })
                .collect();
            store.write(|w| w.apply(sid, records)).unwrap();
            let _ = store.catch_up_index(None);
        }
    }
    // An incremental merge left unfinished: its input segments' first pages are gone.
    merge_some(&store, 4);
    store
}

/// The filters the searches are compared under: none, an agent, a project with an end
/// date, a session, a role with a start date (each for the best 50 hits).
fn filters() -> Vec<SearchFilter> {
    let all = fifty();
    vec![
        all.clone(),
        SearchFilter {
            agent: Some("codex".into()),
            ..all.clone()
        },
        SearchFilter {
            project: Some("/w/p1".into()),
            until: Some(T0 + 5_000 * 1000),
            ..all.clone()
        },
        SearchFilter {
            session: Some("sess-05".into()),
            ..all.clone()
        },
        SearchFilter {
            role: Some("user".into()),
            since: Some(T0 + 1_000 * 1000),
            ..all
        },
    ]
}

/// A search for the best 50 hits, with no filter.
fn fifty() -> SearchFilter {
    SearchFilter {
        limit: 50,
        ..SearchFilter::default()
    }
}

/// The hits of `q` under `f`, and every candidate ranked (row id, BM25), best first.
fn search_ranked(
    store: &Store,
    min_pages: i64,
    q: &str,
    f: &SearchFilter,
) -> (Vec<Hit>, Vec<(i64, f64)>) {
    let hits = search(store, min_pages, q, f);
    (hits, LAST_RANKED.take())
}

fn search(store: &Store, min_pages: i64, q: &str, f: &SearchFilter) -> Vec<Hit> {
    search_result(store, min_pages, q, f).unwrap_or_else(|e| panic!("{q} {f:?}: {e}"))
}

fn search_result(
    store: &Store,
    min_pages: i64,
    q: &str,
    f: &SearchFilter,
) -> crate::Result<Vec<Hit>> {
    FORCED_MIN_PAGES.set(Some(min_pages));
    let hits = query::search(store, q, f);
    FORCED_MIN_PAGES.set(None);
    hits
}

/// How the `expanded` hits first differ from the `native` ones (number, then each hit's
/// score, id and snippet, in order); `None` when they do not.
fn first_difference(expanded: &[Hit], native: &[Hit]) -> Option<String> {
    if expanded.len() != native.len() {
        return Some(format!(
            "{} hits, natively {}",
            expanded.len(),
            native.len()
        ));
    }
    expanded
        .iter()
        .zip(native)
        .enumerate()
        .find_map(|(i, (x, y))| {
            ((x.score - y.score).abs() > 1e-9 * y.score.abs()
                || (&x.message_id, &x.snippet) != (&y.message_id, &y.snippet))
                .then(|| format!("hit {i}: {x:?} against {y:?}"))
        })
}

#[test]
fn the_terms_read_from_the_index_pages_are_fts5s_own() {
    let (_dir, store) = generated();
    let segments = segments(&store);
    assert!(segments >= 6, "the index has {segments} segments");
    for prefix in ["err", "error", "errq", "errq1", "tes", "e", "w", "zz", ""] {
        let want = vocabulary(&store, prefix);
        let Some(got) = terms_in(&store, prefix) else {
            // Over the cap of terms: only the whole vocabulary is.
            assert_eq!(prefix, "", "{prefix}: not read");
            continue;
        };
        assert_eq!(got, want, "{prefix}");
    }
    // The rows read from the pages: every row of the term, as FTS5 lists them; the frequent
    // terms' doclists go on over several pages, the rare ones' lie within one.
    let rows = term_rows_in(&store, "e");
    let read = rows.iter().filter(|(_, r)| r.is_some()).count();
    assert!(read > 100 && read < rows.len(), "{read} of {}", rows.len());
    for (term, got) in &rows {
        if let Some(got) = got {
            assert_eq!(got, &vocabulary_rows(&store, term), "{term}");
        }
    }
    assert!(rows.iter().any(|(t, r)| t == "error" && r.is_none()));
    // `err` holds the 300 rare words and the stems of the eight words beginning with it.
    let err = terms_in(&store, "err").unwrap();
    assert!(err.len() > 200, "{}", err.len());
    assert!(err.iter().any(|t| t == "errorcas"));
}

#[test]
fn a_prefix_is_written_as_its_terms_each_a_word_stemmed_to_it() {
    let (_dir, store) = generated();
    let e = expand_in(&store, r#""errorc"* "alpha""#, 0);
    // `errorcas` (the stem of `errorcase`) is stemmed again to `errorca`: written `errorcase`.
    assert_eq!(e.query, r#"("errorcase") AND "alpha""#);
    assert!(e.groups.starts_with("0:1:"), "{}", e.groups);
    let e = expand_in(&store, r#""alpha" NOT "errorg"* AND "test""#, 0);
    // `errorgener` (of `errorgeneral`) is stemmed again to `errorgen`.
    assert_eq!(e.query, r#""alpha" NOT ("errorgenere") AND "test""#);
    assert!(e.groups.starts_with("1:1:"), "{}", e.groups);
    // Under the threshold of pages, and for a phrase of two words: as it was.
    let q = r#""err"* "test""#;
    assert_eq!(expand_in(&store, q, i64::MAX).query, q);
    let q = r#""error code"*"#;
    assert_eq!(expand_in(&store, q, 0).query, q);
    let e = expand_in(&store, r#""err"* "tes"*"#, 0);
    // Two groups, the second's phrases after the first's; `error`, `test` and others are
    // frequent (counted by FTS5), the rare words' rows sampled from the pages.
    let groups: Vec<Vec<usize>> = e
        .groups
        .split(',')
        .map(|g| g.split(':').map(|n| n.parse().unwrap()).collect())
        .collect();
    assert_eq!(groups.len(), 2, "{}", e.groups);
    assert_eq!(
        (groups[0][0], groups[1][0]),
        (0, groups[0][1]),
        "{}",
        e.groups
    );
    assert!(
        groups.iter().all(|g| g[2] > 0 && g[2] < g[1]),
        "{}",
        e.groups
    );
}

#[test]
fn an_expanded_prefix_gives_fts5s_own_hits() {
    let (_dir, store) = generated();
    WIDE_SEARCHED.set(0);
    expanded_prefixes_give_fts5s_own_hits(&store);
    assert_eq!(WIDE_SEARCHED.get(), 0);
}

/// Prefixes with more terms than a walk searches (`err*`: ~280 terms, 8 of them frequent) are
/// searched as their terms only when the walk leaves the rare ones out and few enough are
/// left; else as FTS5's own prefix. The hits are FTS5's either way.
#[test]
fn a_wide_prefix_gives_fts5s_own_hits() {
    let (_dir, store) = generated();
    let twenty = SearchFilter {
        limit: 20,
        ..SearchFilter::default()
    };
    let (native, _) = search_ranked(&store, i64::MAX, "err*", &twenty);
    let terms = terms_in(&store, "err").unwrap().len();
    // (most terms searched, most read, whether `err*` is searched as its terms)
    for (max, max_read, searched) in [
        (terms - 1, EXPAND_MAX_READ_TERMS, true),
        (12, EXPAND_MAX_READ_TERMS, false),
        (12, 100, false),
    ] {
        FORCED_MAX_TERMS.set(Some((max, max_read)));
        // Not expanded as a whole: FTS5's own prefix, no group.
        assert_eq!(expand_in(&store, r#""err"*"#, 0).query, r#""err"*"#);
        WIDE_SEARCHED.set(0);
        PRUNED.set(0);
        let (expanded, _) = search_ranked(&store, 0, "err*", &twenty);
        assert_eq!(WIDE_SEARCHED.get() > 0, searched, "{max} {max_read}");
        // The walk with the frequent terms alone, unless past the cap of terms read.
        assert_eq!(
            PRUNED.get(),
            usize::from(max_read > 100),
            "{max} {max_read}"
        );
        assert_eq!(
            first_difference(&expanded, &native),
            None,
            "{max} {max_read}"
        );
        WIDE_SEARCHED.set(0);
        expanded_prefixes_give_fts5s_own_hits(&store);
        assert_eq!(WIDE_SEARCHED.get() > 0, searched, "{max} {max_read}");
    }
    FORCED_MAX_TERMS.set(None);
}

/// The oracle's queries under three filters (500 hits each): the same candidates, scores,
/// hits and snippets with every prefix expanded as with none.
fn expanded_prefixes_give_fts5s_own_hits(store: &Store) {
    // The first three filters, each for the best 500 hits.
    let filters: Vec<SearchFilter> = filters()
        .into_iter()
        .take(3)
        .map(|f| SearchFilter { limit: 500, ..f })
        .collect();
    let mut checked = 0;
    PRUNED.set(0);
    for q in [
        "err*",
        "errors*",
        "error*",
        "errq*",
        "err* webhook",
        "webhook err*",
        "webhook -err*",
        "alpha -\"errorc\"*",
        "err* OR tes*",
        "errq* OR webhook",
        "tes* err* alpha",
        "e*",
    ] {
        for f in &filters {
            let (native, native_ranked) = search_ranked(store, i64::MAX, q, f);
            let (expanded, expanded_ranked) = search_ranked(store, 0, q, f);
            // Every candidate, with its score: the same rows walked and ranked.
            assert_same_candidates(&expanded_ranked, &native_ranked, &format!("{q} {f:?}"));
            assert!(!native.is_empty(), "{q} {f:?}: no hit");
            if let Some(d) = first_difference(&expanded, &native) {
                panic!("{q} {f:?}: {d}");
            }
            checked += native.len();
        }
    }
    assert!(checked > 1000, "{checked}");
    // Walks that left the rare terms out, the frequent ones having enough matches alone.
    assert!(PRUNED.get() >= 6, "{}", PRUNED.get());
}

/// The same candidates (row ids) in the same order, each with the same score (within 1e-12 of
/// it): `what` names the search in the message.
fn assert_same_candidates(expanded: &[(i64, f64)], native: &[(i64, f64)], what: &str) {
    assert_eq!(expanded.len(), native.len(), "{what}: candidates");
    for (x, y) in expanded.iter().zip(native) {
        assert!(
            x.0 == y.0 && (x.1 - y.1).abs() <= 1e-12 * y.1.abs().max(1e-12),
            "{what}: candidate {x:?} against {y:?}"
        );
    }
}

/// Native (`i64::MAX`) against every prefix expanded (`0`): the same hits (ids, scores,
/// snippets, in order) or both an error. The differences, described.
fn differences(store: &Store, queries: &[&str], filters: &[&SearchFilter]) -> Vec<String> {
    let mut bad = Vec::new();
    for &q in queries {
        for &f in filters {
            let native = search_result(store, i64::MAX, q, f);
            let expanded = search_result(store, 0, q, f);
            let d = match (&native, &expanded) {
                (Ok(n), Ok(e)) => first_difference(e, n),
                (Err(_), Err(_)) => None,
                _ => Some(format!(
                    "{:?}, natively {:?}",
                    expanded.map(|h| h.len()),
                    native.map(|h| h.len())
                )),
            };
            if let Some(d) = d {
                bad.push(format!("{q:?} {f:?}: {d}"));
            }
        }
    }
    bad
}

#[test]
fn odd_queries_give_fts5s_own_hits() {
    let (_dir, store) = generated();
    let filters = filters();
    // `ि` (a Devanagari vowel sign) is a letter to Rust, so the query keeps it, and no token
    // to `unicode61`: an empty phrase, which FTS5 drops beside an implicit AND.
    let queries = [
        "ि err*",
        "err* ि",
        "ि alpha err*",
        "alpha ि err*",
        "err* ि alpha",
        "ि* err*",
        "\"ि ि\" err*",
        "err* OR ि",
        "-ि err*",
        "err* alpha -ि",
        "errq1ि*",
        "-alpha err*",
        "err* -alpha",
        "alpha NOT err* test",
        "\"err*\"",
        "err**",
        "*err",
        "er*r",
        "err* OR OR tes*",
        "\"alpha err\"*",
        "cjk: err*",
        "cjk:err*",
        "中* err*",
        "alpha 中 err*",
        "err* -中",
        "é*",
        "E*",
        "err-*",
        "err.*",
        "err's*",
        "NEAR(err* alpha)",
        "err* && tes*",
        "e* t* a* w* f* h*",
        "err* -err*",
        "x OR err*",
    ];
    let bad = differences(&store, &queries, &filters.iter().collect::<Vec<_>>());
    assert!(bad.is_empty(), "{bad:#?}");
}

/// The index terms read for each of `prefixes` are `fts5vocab`'s, and each of `queries` gives
/// the same hits expanded as natively ([`differences`], no filter).
fn terms_and_hits_are_fts5s_own(store: &Store, prefixes: &[&str], queries: &[&str]) {
    for &prefix in prefixes {
        assert_eq!(
            terms_in(store, prefix),
            Some(vocabulary(store, prefix)),
            "{prefix}"
        );
    }
    let bad = differences(store, queries, &[&fifty()]);
    assert!(bad.is_empty(), "{bad:#?}");
}

/// A new Claude Code session `external` of no project: its id.
pub(crate) fn claude_session(store: &mut Store, external: &str) -> i64 {
    store
        .write(|w| {
            w.upsert_session(
                &SessionRef {
                    agent: Agent::Claude,
                    external_id: external.to_string(),
                    parent_external_id: None,
                },
                &SessionMeta::default(),
                &Standard,
            )
        })
        .unwrap()
}

/// A user's message of `text`, id `id`, at `ts` (ms).
pub(crate) fn text_message(id: String, text: String, ts: i64) -> Message {
    Message {
        id,
        role: Role::User,
        kind: Kind::Text,
        parts: vec![Part::Text { text }],
        timestamp: Some(ts),
        model: None,
    }
}

/// Words beyond ASCII: accents `unicode61` removes, cases it folds, scripts the Porter stemmer
/// leaves as they are, CJK (its own column too), a ligature, full-width letters.
const WIDE_WORDS: &[&str] = &[
    "été",
    "étoile",
    "étude",
    "etude",
    "über",
    "übel",
    "ubel",
    "ошибка",
    "ошибки",
    "ошибок",
    "λάθος",
    "λαθών",
    "straße",
    "strasse",
    "ǅemal",
    "ıstanbul",
    "İstanbul",
    "naïve",
    "naive",
    "ﬁle",
    "file",
    "ｆｕｌｌ",
    "full",
    "x²",
    "中文字",
    "中国",
    "日本語",
    "한국어",
    "café",
    "cafés",
    "caffè",
    "𝔘𝔫𝔦",
    "errata",
    "erreur",
    "érreur",
    "ÉRREUR",
    "e\u{301}t\u{301}e",
];

/// A store of 4 sessions, each write a segment of its own, one session deleted halfway (with
/// FTS5's `secure-delete`) and a merge left unfinished: messages of 2 to 6 [`WIDE_WORDS`].
fn wide() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("m.db")).unwrap();
    let mut rng = Xorshift(0x5eed_1234);
    let sessions: Vec<i64> = (0..4)
        .map(|i| claude_session(&mut store, &format!("wide-{i}")))
        .collect();
    set_automerge(&store, 0);
    let mut n = 0i64;
    for round in 0..16 {
        if round == 8 {
            crate::store::maintenance::delete_session(&mut store, "wide-2").unwrap();
            set_automerge(&store, 0);
        }
        for (k, &sid) in sessions.iter().enumerate() {
            if round >= 8 && k == 2 {
                continue;
            }
            let records: Vec<Record> = (0..10)
                .map(|j| {
                    n += 1;
                    let words: Vec<&str> = (0..2 + rng.below(5))
                        .map(|_| WIDE_WORDS[rng.below(WIDE_WORDS.len())])
                        .collect();
                    Record::Message(text_message(
                        format!("w{round}-{sid}-{j}"),
                        words.join(" "),
                        T0 + n * 1000,
                    ))
                })
                .collect();
            store.write(|w| w.apply(sid, records)).unwrap();
            let _ = store.catch_up_index(None);
        }
    }
    merge_some(&store, 2);
    (dir, store)
}

#[test]
fn prefixes_of_words_beyond_ascii_give_fts5s_own_terms_and_hits() {
    let (_dir, store) = wide();
    let prefixes = [
        "e", "et", "u", "ub", "ош", "λα", "stra", "ı", "i", "na", "fi", "ｆ", "f",
    ];
    let queries = [
        "é*",
        "ét*",
        "e*",
        "É*",
        "üb*",
        "ub*",
        "оши*",
        "ОШ*",
        "λά*",
        "λα*",
        "stra*",
        "straß*",
        "ǅ*",
        "ı*",
        "i*",
        "İ*",
        "na*",
        "naï*",
        "ﬁ*",
        "fi*",
        "ｆ*",
        "f*",
        "中*",
        "中文*",
        "日*",
        "한*",
        "caf*",
        "𝔘*",
        "x*",
        "err*",
        "érr*",
        "e\u{301}*",
        "étude* -ubel",
        "e* OR f*",
    ];
    // Expanded indeed: each a group.
    for q in [r#""ош"*"#, r#""e"*"#, r#""中"*"#, r#""ｆ"*"#] {
        let groups = expand_in(&store, q, 0).groups;
        assert_eq!(groups.split(',').count(), 1, "{q}: {groups}");
        assert_eq!(groups.matches(':').count(), 2, "{q}: {groups}");
    }
    terms_and_hits_are_fts5s_own(&store, &prefixes, &queries);
}

/// Messages rewritten in place (as a hook does when an agent rewrites a message): FTS5's
/// `secure-delete` takes the old terms off the segments' pages at once, with no merge; the
/// terms left on the pages, and the hits, are still FTS5's own.
#[test]
fn terms_taken_off_pages_by_secure_delete_give_fts5s_own_terms_and_hits() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("m.db")).unwrap();
    let sid = claude_session(&mut store, "rewritten");
    set_automerge(&store, 0);
    let message =
        |id: usize, text: String| text_message(format!("m{id}"), text, T0 + id as i64 * 1000);
    // 12 writes of 50 messages, each its own segment: `errqN` words, and frequent ones.
    for round in 0..12 {
        let records = (0..50)
            .map(|j| {
                let id = round * 50 + j;
                Record::Message(message(id, format!("errq{id} error filler errx{}", id % 7)))
            })
            .collect();
        store.write(|w| w.apply(sid, records)).unwrap();
        let _ = store.catch_up_index(None);
    }
    // Every other message rewritten without its `errq` word: half the rare terms leave the
    // index, the first term of many pages among them.
    for round in 0..12 {
        let records = (0..50)
            .filter(|j| j % 2 == 0)
            .map(|j| {
                let id = round * 50 + j;
                Record::Replace(message(id, format!("error filler errx{}", id % 7)))
            })
            .collect();
        store.write(|w| w.apply(sid, records)).unwrap();
        let _ = store.catch_up_index(None);
    }
    assert_eq!(vocabulary(&store, "errq").len(), 300);
    assert!(segments(&store) >= 6, "{}", segments(&store));
    let prefixes = ["errq", "errq1", "err", "e"];
    let queries = [
        "errq*",
        "errq1*",
        "err*",
        "errq* -errx3",
        "errx* errq*",
        "e*",
    ];
    terms_and_hits_are_fts5s_own(&store, &prefixes, &queries);
}

/// A merge that another process commits between the statements that list the index's
/// segments and pages and those that read the pages (a hook's automatic merge while an MCP
/// server searches): the terms read are still all of the prefix's.
#[test]
fn a_merge_between_the_reads_of_the_index_loses_no_term() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("m.db")).unwrap();
    set_automerge(&store, 0);
    // Nine writes, each with words of its own: the first merged into a segment of a level of
    // its own, then eight segments.
    let sid = claude_session(&mut store, "late");
    for round in 0..9 {
        let records = (0..20)
            .map(|j| {
                let id = round * 20 + j;
                Record::Message(text_message(
                    format!("late-{id}"),
                    format!("errz{id} alpha"),
                    T0 + 10_000_000 + id * 1000,
                ))
            })
            .collect();
        store.write(|w| w.apply(sid, records)).unwrap();
        let _ = store.catch_up_index(None);
        if round == 0 {
            merge_some(&store, 1000);
        }
    }
    let want = vocabulary(&store, "errz");
    assert_eq!(want.len(), 180);
    merge_before_page_reads(&mut store, 1);
    let got = terms_in(&store, "errz");
    assert_eq!(vocabulary(&store, "errz"), want);
    assert_eq!(got, Some(want));
}

/// A message stored and indexed by another process in the middle of a search (between the
/// reading of a prefix's terms and the walk): the search sees the store as it was when it
/// began, as FTS5's own prefix query, one statement, would have. The message holds a frequent
/// term of `err*` and a rare one no page read held: seen half, it would be a candidate.
#[test]
fn a_message_written_during_a_search_is_not_half_seen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    drop(generated_at(&path));
    let mut store = Store::open(&path).unwrap();
    let sid = claude_session(&mut store, "sess-00");
    let f = fifty();
    let (before, _) = search_ranked(&store, i64::MAX, "err*", &f);
    write_before_walk(&mut store, sid, "error errzzznew");
    let (during, _) = search_ranked(&store, 0, "err*", &f);
    disarm(&mut store);
    assert_eq!(first_difference(&during, &before), None);
    // Written indeed: the next search has it first (the newest, by far).
    let (after, _) = search_ranked(&store, 0, "err*", &f);
    assert!(
        after.iter().any(|h| h.message_id == "written-mid-search"),
        "{after:?}"
    );
}

/// A group none of whose terms is in the hits (all its terms rare, excluded or in another
/// alternative than the hits'): the snippets' query still holds it (`()` is no FTS5 syntax).
#[test]
fn a_group_with_no_term_in_the_hits_gives_fts5s_own_hits() {
    let (_dir, store) = generated();
    let mut filters = filters();
    filters.push(SearchFilter {
        limit: 5,
        ..fifty()
    });
    let queries = ["alpha -errq*", "webhook -errorc*", "alpha NOT errq*"];
    for wide in [None, Some((12, EXPAND_MAX_READ_TERMS))] {
        FORCED_MAX_TERMS.set(wide);
        let bad = differences(&store, &queries, &filters.iter().collect::<Vec<_>>());
        FORCED_MAX_TERMS.set(None);
        assert!(bad.is_empty(), "{wide:?}: {bad:#?}");
    }
}

/// An excluded group is not walked without its rare terms: leaving out an excluded term lets
/// its rows in, and the walk with the frequent terms alone bounds nothing (`alpha -err*`: the
/// walk went on past that bound, to messages holding a rare `errq…` left out).
#[test]
fn an_excluded_prefix_gives_fts5s_own_candidates() {
    let (_dir, store) = generated();
    let filters: Vec<SearchFilter> = filters()
        .into_iter()
        .take(2)
        .map(|f| SearchFilter { limit: 500, ..f })
        .collect();
    for wide in [None, Some((12, EXPAND_MAX_READ_TERMS))] {
        for q in ["alpha -err*", "filler -e*", "alpha NOT err*", "err* -errq*"] {
            for f in &filters {
                FORCED_MAX_TERMS.set(wide);
                let (native, native_ranked) = search_ranked(&store, i64::MAX, q, f);
                let (expanded, expanded_ranked) = search_ranked(&store, 0, q, f);
                FORCED_MAX_TERMS.set(None);
                let ids = |r: &[(i64, f64)]| r.iter().map(|r| r.0).collect::<Vec<_>>();
                assert_eq!(
                    ids(&expanded_ranked),
                    ids(&native_ranked),
                    "{wide:?} {q} {f:?}: candidates"
                );
                assert_eq!(first_difference(&expanded, &native), None, "{q} {f:?}");
            }
        }
    }
}

/// An excluded group's rare terms are taken out of its `NOT`, and their rows out of the walk
/// one by one (`Prefixed::exclude_rare_terms_by_rows`): under every plan a filtered search
/// can take (each match joined to its session, the scope's messages listed, each match's
/// session checked, and that check giving up at once or part way), the candidates, their
/// scores and the hits are those of FTS5's own prefix.
#[test]
fn an_excluded_prefixs_rare_rows_give_fts5s_own_hits_under_every_plan() {
    let (_dir, store) = generated();
    // `err*` holds frequent terms and rare ones (`errq…`): the rare ones leave the query.
    let (whole, split) = excluded_split_in(&store, r#""alpha" NOT "err"* AND "test""#, 0);
    assert_eq!(whole.excluded_rows, None);
    let Some((lo, bits)) = &split.excluded_rows else {
        panic!("no rows taken out: {split:?}");
    };
    let rows: u32 = bits.iter().map(|b| b.count_ones()).sum();
    let errq = term_rows_in(&store, "errq")
        .into_iter()
        .flat_map(|(_, r)| r.unwrap_or_default())
        .collect::<BTreeSet<i64>>();
    assert!(
        errq.len() > 100 && rows as usize >= errq.len(),
        "{rows} {}",
        errq.len()
    );
    assert!(errq.iter().all(|&r| {
        let i = (r - lo) as usize;
        bits[i / 8] & (1 << (i % 8)) != 0
    }));
    assert!(!split.query.contains("errq") && whole.query.contains("errq"));
    // A wide group (more terms than a walk searches) was FTS5's own prefix; now its frequent
    // terms.
    FORCED_MAX_TERMS.set(Some((12, EXPAND_MAX_READ_TERMS)));
    let (whole, split) = excluded_split_in(&store, r#""alpha" NOT "err"*"#, 0);
    FORCED_MAX_TERMS.set(None);
    assert_eq!(whole.query, r#""alpha" NOT "err"*"#);
    assert!(
        split.query.starts_with(r#""alpha" NOT ("error") NOT ("#) && !split.query.contains('*'),
        "{}",
        split.query
    );
    // A group of rare terms alone: one of them stands for it in the walks.
    let (whole, split) = excluded_split_in(&store, r#""alpha" NOT "errq"*"#, 0);
    assert!(whole.query.matches(" OR ").count() > 200, "{}", whole.query);
    assert!(
        split.query.starts_with(r#""alpha" NOT ("errq"#) && !split.query.contains(" OR "),
        "{}",
        split.query
    );
    assert!(split.excluded_rows.is_some());
    // A group with no rare term, and a query with no excluded group, are left as they were.
    for q in [r#""test" NOT "alph"*"#, r#""err"* "alpha""#] {
        let (whole, split) = excluded_split_in(&store, q, 0);
        assert!(
            split == whole && split.excluded_rows.is_none(),
            "{q}: {}",
            split.query
        );
    }
    // A phrase every match holds, beginning with an excluded prefix: nothing to walk.
    for (q, nothing) in [
        (r#""error" NOT "e"*"#, true),
        (r#""alpha" "errors" NOT "err"*"#, true),
        (r#""alpha test" NOT "te"*"#, true),
        (r#""webhook" NOT "err"*"#, false),
        // A prefix, a phrase under `NOT` or in a disjunction, another column: not every match
        // holds them.
        (r#""err"* NOT "e"*"#, false),
        (r#""alpha" NOT "error" NOT "e"*"#, false),
        (r#"("error" OR "webhook") NOT "e"*"#, false),
        (r#""alpha" AND cjk : "error" NOT "e"*"#, false),
    ] {
        assert_eq!(matches_nothing_in(&store, q), nothing, "{q}");
    }
    let mut filters: Vec<SearchFilter> = filters()
        .into_iter()
        .map(|f| SearchFilter { limit: 200, ..f })
        .collect();
    filters.push(SearchFilter {
        agent: Some("claude".into()),
        limit: 200,
        ..SearchFilter::default()
    });
    let plans = [
        None,
        Some(ForcedPlan::Join),
        Some(ForcedPlan::List),
        Some(ForcedPlan::Sessions),
        Some(ForcedPlan::SessionsWithin(1)),
        Some(ForcedPlan::SessionsWithin(300)),
    ];
    let mut compared = 0;
    let queries = [
        "alpha -err*",
        "test -e*",
        "alpha -err* test",
        "webhook -errq* -tes*",
        "alpha -err* OR webhook",
        "webhook OR alpha -e*",
        "alpha -errq*",
        "errq* OR webhook -errq1*",
        "err* -tes*",
        "tes* alpha -errq*",
        "err* -errq2*",
        "error -e*",
        "test -tes*",
        "alpha test -te*",
        "\"alpha test\" -te*",
        "webhook -al* OR alpha",
        "alpha -alp* OR webhook -err*",
        "errors -err*",
    ];
    PRUNED.set(0);
    // As they are, then as wide groups (more terms than a walk searches).
    for (wide, q, f) in [None, Some((12, EXPAND_MAX_READ_TERMS))]
        .into_iter()
        .flat_map(|w| queries.iter().map(move |q| (w, q)))
        .flat_map(|(w, q)| filters.iter().map(move |f| (w, q, f)))
    {
        FORCED_PLAN.set(Some(ForcedPlan::Join));
        let (native, native_ranked) = search_ranked(&store, i64::MAX, q, f);
        for plan in plans {
            FORCED_PLAN.set(plan);
            FORCED_MAX_TERMS.set(wide);
            let (expanded, expanded_ranked) = search_ranked(&store, 0, q, f);
            FORCED_MAX_TERMS.set(None);
            FORCED_PLAN.set(None);
            let what = format!("{wide:?} {q} {f:?} {plan:?}");
            assert_same_candidates(&expanded_ranked, &native_ranked, &what);
            assert_eq!(first_difference(&expanded, &native), None, "{what}");
            compared += usize::from(!native.is_empty());
        }
    }
    assert!(compared >= 300, "{compared}");
    // Walks of a wide prefix beside an excluded one that left the prefix's rare terms out (only
    // searches whose frequent terms alone have 1,024 matches in scope: 8 here).
    assert!(PRUNED.get() >= 6, "{}", PRUNED.get());
}

/// The candidates of a query with an excluded prefix the stemmer changes (`-errors*`,
/// `-testi*`), which [`differences`] cannot check (such a prefix is expanded however many
/// pages it spans, natively too): FTS5's own rows for the query with every group written whole
/// and no row taken out by a bitmap, at the search's own thresholds and with every prefix
/// expanded, as they are and as wide groups. (Written by a review of the change.)
#[test]
fn stemmed_exclusions_give_fts5s_own_candidates() {
    let (_dir, store) = generated();
    let mut bad = Vec::new();
    for q in [
        "alpha -errors*",
        "errors -errors*",
        "error -errors*",
        "alpha -errorc*",
        "errorcase -errorc*",
        "alpha -testi*",
        "testing -testi*",
        "alpha -teste*",
        "alpha -erroneou*",
        "alpha -erratic*",
        "test -errors* -testi*",
        "err* -errors*",
        "alpha -errq*",
        "alpha -err*",
        "error -e*",
        "errors -err*",
    ] {
        for wide in [None, Some((12, EXPAND_MAX_READ_TERMS))] {
            let fts = crate::query::fts_query(q).unwrap();
            FORCED_MAX_TERMS.set(wide);
            let whole = expand_in(&store, &fts, 0).query;
            let (_, ranked) = search_ranked(
                &store,
                0,
                q,
                &SearchFilter {
                    limit: 500,
                    ..fifty()
                },
            );
            let (_, ranked_prod) = {
                let hits = query::search(
                    &store,
                    q,
                    &SearchFilter {
                        limit: 500,
                        ..fifty()
                    },
                )
                .unwrap();
                (hits, LAST_RANKED.take())
            };
            FORCED_MAX_TERMS.set(None);
            let want: BTreeSet<i64> = rows_matching(&store, &whole, 1024).into_iter().collect();
            let got: BTreeSet<i64> = ranked.iter().map(|r| r.0).collect();
            let got_prod: BTreeSet<i64> = ranked_prod.iter().map(|r| r.0).collect();
            if want != got || want != got_prod {
                bad.push(format!(
                    "{wide:?} {q}: whole `{whole}` {} rows; search {} (prod thresholds {}); only in whole: {:?}",
                    want.len(),
                    got.len(),
                    got_prod.len(),
                    want.difference(&got).take(5).collect::<Vec<_>>()
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// Random queries of positive words, phrases, prefixes, CJK and upper case, `OR` and up to
/// three exclusions (prefixes, stemmed prefixes, words, phrases) under three filters, with
/// every prefix expanded and as wide groups against none, and at the search's own thresholds
/// (on this small store positive prefixes stay FTS5's own while excluded ones are expanded)
/// against FTS5's own. (Written by a review of the change.)
#[test]
fn random_queries_with_exclusions_give_fts5s_own_hits() {
    let (_dir, store) = generated();
    let mut rng = Xorshift(0xdead_beef);
    let pos = [
        "alpha",
        "error",
        "errors",
        "test",
        "testing",
        "webhook",
        "filler",
        "words",
        "err*",
        "tes*",
        "e*",
        "errq1*",
        "\"alpha error\"",
        "\"error test\"",
        "中",
        "ERROR",
        "errq17",
        "here",
    ];
    let neg = [
        "-e*",
        "-err*",
        "-errq*",
        "-errq1*",
        "-errq2*",
        "-tes*",
        "-t*",
        "-w*",
        "-errors*",
        "-testi*",
        "-al*",
        "-f*",
        "-h*",
        "-中*",
        "-errorc*",
        "-error",
        "-\"alpha test\"",
        "-E*",
        "-web*",
    ];
    let mut queries: Vec<String> = Vec::new();
    for _ in 0..100 {
        let mut parts: Vec<String> = Vec::new();
        let n = 1 + rng.below(3);
        for i in 0..n {
            if i > 0 && rng.below(4) == 0 {
                parts.push("OR".into());
            }
            if rng.below(3) == 0 {
                parts.push(neg[rng.below(neg.len())].into());
            }
            parts.push(pos[rng.below(pos.len())].into());
            for _ in 0..rng.below(3) {
                parts.push(neg[rng.below(neg.len())].into());
            }
        }
        queries.push(parts.join(" "));
    }
    let qs: Vec<&str> = queries.iter().map(|s| s.as_str()).collect();
    let fs = filters();
    let fsel = [&fs[0], &fs[1], &fs[4]];
    let mut bad = Vec::new();
    for wide in [None, Some((12, EXPAND_MAX_READ_TERMS))] {
        FORCED_MAX_TERMS.set(wide);
        bad.extend(
            differences(&store, &qs, &fsel)
                .into_iter()
                .map(|d| format!("{wide:?} {d}")),
        );
        FORCED_MAX_TERMS.set(None);
    }
    // Production thresholds (positive prefixes as FTS5's own on this small store, excluded
    // ones expanded) against FTS5's own.
    for q in &qs {
        for f in fsel {
            let native = search_result(&store, i64::MAX, q, f);
            let prod = query::search(&store, q, f);
            match (&native, &prod) {
                (Ok(n), Ok(p)) => {
                    if let Some(d) = first_difference(p, n) {
                        bad.push(format!("prod {q:?} {f:?}: {d}"));
                    }
                }
                (Err(_), Err(_)) => {}
                _ => bad.push(format!(
                    "prod {q:?}: {:?} vs {:?}",
                    prod.as_ref().map(|h| h.len()),
                    native.as_ref().map(|h| h.len())
                )),
            }
            // FTS5's own prefix with its exclusions in the snippets' query.
            crate::store::queries::KEEP_EXCLUSIONS.set(true);
            let kept = search_result(&store, i64::MAX, q, f);
            crate::store::queries::KEEP_EXCLUSIONS.set(false);
            if let (Ok(k), Ok(n)) = (&kept, &native)
                && let Some(d) = first_difference(n, k)
            {
                bad.push(format!("kept exclusions {q:?} {f:?}: {d}"));
            }
        }
    }
    assert!(bad.is_empty(), "{} bad: {bad:#?}", bad.len());
}

/// A message longer than a snippet's 16 tokens: FTS5's snippet picks the window with the most
/// distinct phrases, and a prefix is one phrase where its expansion is one per term (a window
/// of `error … errno` beats one of `error … error … error` only when expanded). Not fixed:
/// the snippets would need FTS5's own prefix (its merge paid again) or a snippet function that
/// counts a group as one phrase.
#[test]
#[ignore = "known difference: an expanded prefix's snippet window in a long message"]
fn a_long_message_gives_fts5s_own_snippet() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("m.db")).unwrap();
    let sid = claude_session(&mut store, "long");
    let fill = |n: usize| {
        (0..n)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let text = format!(
        "{} error one error two error three {} error four errno five {}",
        fill(5),
        fill(30),
        fill(30)
    );
    let records = vec![
        Record::Message(text_message("m0".into(), text, T0)),
        Record::Message(text_message("m1".into(), "errata here".into(), T0 + 1000)),
    ];
    store.write(|w| w.apply(sid, records)).unwrap();
    let _ = store.catch_up_index(None);
    let bad = differences(&store, &["err*", "err* OR w3"], &[&fifty()]);
    assert!(bad.is_empty(), "{bad:#?}");
}

/// A store of one session whose messages are `texts`, message ids `m0`, `m1`, … in order.
fn store_of(texts: &[&str]) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("m.db")).unwrap();
    let sid = store
        .write(|w| {
            w.upsert_session(
                &SessionRef {
                    agent: Agent::Claude,
                    external_id: "sess-words".into(),
                    parent_external_id: None,
                },
                &SessionMeta::default(),
                &Standard,
            )
        })
        .unwrap();
    let records: Vec<Record> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            Record::Message(Message {
                id: format!("m{i}"),
                role: Role::User,
                kind: Kind::Text,
                parts: vec![Part::Text {
                    text: t.to_string(),
                }],
                timestamp: Some(T0 + i as i64 * 1000),
                model: None,
            })
        })
        .collect();
    store.write(|w| w.apply(sid, records)).unwrap();
    let _ = store.catch_up_index(None);
    (dir, store)
}

/// A prefix the Porter stemmer changes (`pars` → `par`, `query` → `queri`) finds the words
/// that begin with what was typed, not every word that begins with its stem (`pars*` found
/// `partners` and `part`), whether or not its terms are many (the rows matched do not depend
/// on the store's size).
#[test]
fn a_prefix_the_stemmer_changes_finds_the_words_that_begin_with_it() {
    let (_dir, store) = store_of(&[
        "parse the file",           // m0: parse → pars
        "the parser works",         // m1: parser
        "parsing done",             // m2: parsing → pars
        "partners meeting",         // m3: partners → partner
        "part two",                 // m4: part
        "pars pro toto",            // m5: pars → par
        "query the table",          // m6: query → queri
        "queries run slowly",       // m7: queries → queri
        "the queryset api",         // m8: queryset
        "quartz clock",             // m9
        "parsimonious explanation", // m10: parsimoni
        "errors everywhere",        // m11: errors → error
        "an errorcase here",        // m12: errorcase → errorcas
        "errorlatency numbers",     // m13: errorlatency → errorlat
        "keys on the keyboard",     // m14: keys → kei, keyboard
        "keith wrote this",         // m15: keith
    ]);
    let all = SearchFilter {
        limit: 100,
        ..SearchFilter::default()
    };
    // (query, the messages whose words begin with the typed prefix; worked out by hand)
    for (q, want) in [
        // `pars` itself stems to `par`: m5 is found by that stem.
        ("pars*", vec!["m0", "m1", "m10", "m2", "m5"]),
        ("Pars*", vec!["m0", "m1", "m10", "m2", "m5"]),
        ("pars.*", vec!["m0", "m1", "m10", "m2", "m5"]),
        // `parse` stems to `pars`, the stem of m0 and m2; `parser` begins with `parse`.
        ("parse*", vec!["m0", "m1", "m2"]),
        ("query*", vec!["m6", "m7", "m8"]),
        ("partner*", vec!["m3"]),
        ("partners*", vec!["m3"]),
        // Prefixes the stemmer leaves alone: every term that begins with them, as before.
        ("par*", vec!["m0", "m1", "m10", "m2", "m3", "m4", "m5"]),
        ("que*", vec!["m6", "m7", "m8"]),
        ("error*", vec!["m11", "m12", "m13"]),
        // `errorlate` stems to `errorl`, and `errorlatency` to `errorlat`: a term between
        // the stem and the typed letters.
        ("errorlate*", vec!["m13"]),
        // `key` and `keys` stem to `kei`; `keith` begins with `kei`, not with `key`.
        ("key*", vec!["m14"]),
        ("kei*", vec!["m14", "m15"]),
        // `errors` stems to `error`: not `errorcase`, which does not begin with `errors`.
        ("errors*", vec!["m11"]),
        ("pars* -parser", vec!["m0", "m10", "m2", "m5"]),
        ("quartz OR pars*", vec!["m0", "m1", "m10", "m2", "m5", "m9"]),
        ("-pars* the", vec!["m14", "m6", "m8"]),
    ] {
        // Every prefix expanded and none; then more terms than a walk searches (a wide group:
        // FTS5's prefix of the typed letters and the exact terms), and more than are read.
        for (min_pages, forced) in [
            (0, None),
            (i64::MAX, None),
            (0, Some((1, EXPAND_MAX_READ_TERMS))),
            (0, Some((1, 1))),
        ] {
            FORCED_MAX_TERMS.set(forced);
            let mut got: Vec<String> = search(&store, min_pages, q, &all)
                .into_iter()
                .map(|h| h.message_id)
                .collect();
            FORCED_MAX_TERMS.set(None);
            got.sort();
            assert_eq!(got, want, "{q} (min_pages {min_pages}, {forced:?})");
        }
    }
    // The snippet marks the words found.
    let hits = search(&store, 0, "pars*", &all);
    let m5 = hits.iter().find(|h| h.message_id == "m5").unwrap();
    assert_eq!(m5.snippet, "\u{1}pars\u{2} pro toto");
    let m1 = hits.iter().find(|h| h.message_id == "m1").unwrap();
    assert_eq!(m1.snippet, "the \u{1}parser\u{2} works");
    // A search by meaning that excludes `pars*` leaves out `parse`, not `partners`.
    let rowid = |ext: &str| message_row(&store, ext);
    let excluded = query::meaning_query("meeting -pars*").unwrap().1;
    let by_meaning = crate::store::hits_for_messages(
        &store,
        &[(rowid("m3"), 0.9), (rowid("m0"), 0.8), (rowid("m4"), 0.7)],
        &excluded,
        &all,
    )
    .unwrap();
    let ids: Vec<&str> = by_meaning.iter().map(|h| h.message_id.as_str()).collect();
    assert_eq!(ids, ["m3", "m4"]);
}

/// On the generated store (many segments, frequent and rare terms): the rows `errors*` and
/// `tested*` match are those of the index terms that begin with the typed prefix, and of the
/// typed word's stem, as FTS5's own vocabulary lists them: the newest of them are the
/// candidates ranked.
#[test]
fn a_stemmed_prefix_matches_the_rows_of_its_terms_in_fts5s_vocabulary() {
    let (_dir, store) = generated();
    for (q, typed, stem) in [
        ("errors*", "errors", "error"),
        ("tested*", "tested", "test"),
    ] {
        let mut rows: BTreeSet<i64> = vocabulary_rows(&store, stem).into_iter().collect();
        for term in vocabulary(&store, typed) {
            rows.extend(vocabulary_rows(&store, &term));
        }
        // The bounded rule: the newest SEARCH_CANDIDATES matches are ranked.
        let want: Vec<i64> = rows
            .iter()
            .rev()
            .take(query::SEARCH_CANDIDATES)
            .copied()
            .collect();
        assert!(want.len() > 500, "{q}: {} rows", want.len());
        for min_pages in [0, i64::MAX] {
            let every = SearchFilter {
                limit: query::SEARCH_CANDIDATES,
                ..SearchFilter::default()
            };
            let (_, ranked) = search_ranked(&store, min_pages, q, &every);
            let mut got: Vec<i64> = ranked.iter().map(|r| r.0).collect();
            got.sort_unstable_by(|a, b| b.cmp(a));
            assert_eq!(got, want, "{q} (min_pages {min_pages})");
        }
    }
}

/// The snippets of a query with exclusions are made without them (`without_exclusions` in
/// `store::queries`): over long messages (a snippet shows 16 of their tokens, so which window
/// is chosen matters) with prose and tool output, CJK words, phrases and prefixes on either
/// side of the `NOT`, each hit (message, score, snippet) is the one made with the exclusions
/// kept, with every prefix expanded and with FTS5's own, unfiltered, for one agent and for a
/// role.
#[test]
fn exclusions_left_out_of_the_snippets_query_give_the_same_hits() {
    use crate::store::queries::{KEEP_EXCLUSIONS, SNIPPETS_WITHOUT_EXCLUSIONS};
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("m.db")).unwrap();
    let mut rng = Xorshift(0x5a1e_0c0d);
    // Filler words, and words each in some messages (per cent), once to three times.
    let filler = [
        "filler", "words", "here", "more", "of", "it", "and", "so", "on", "x",
    ];
    let special = [
        ("alpha", 60),
        ("beta", 30),
        ("gamma", 30),
        ("delta", 20),
        ("error", 40),
        ("errno", 10),
        ("errors", 10),
        ("test", 20),
        ("testing", 10),
        ("the", 20),
        ("that", 10),
        ("to", 20),
        ("code", 20),
        ("config", 10),
        ("cover", 10),
        ("漢字", 20),
        ("日本", 20),
    ];
    let text = |rng: &mut Xorshift, least: usize, more: usize| -> String {
        let n = least + rng.below(more);
        let mut w: Vec<&str> = (0..n).map(|_| filler[rng.below(filler.len())]).collect();
        for (word, per_cent) in special {
            if rng.below(100) < per_cent {
                for _ in 0..1 + rng.below(3) {
                    let at = rng.below(w.len() + 1);
                    w.insert(at, word);
                }
            }
        }
        w.join(" ")
    };
    let mut n = 0i64;
    for (i, agent) in [Agent::Claude, Agent::Codex, Agent::Claude]
        .iter()
        .enumerate()
    {
        let sid = store
            .write(|w| {
                w.upsert_session(
                    &SessionRef {
                        agent: *agent,
                        external_id: format!("long-{i}"),
                        parent_external_id: None,
                    },
                    &SessionMeta::default(),
                    &Standard,
                )
            })
            .unwrap();
        let records: Vec<Record> = (0..200)
            .map(|j| {
                n += 1;
                let mut parts = vec![Part::Text {
                    text: text(&mut rng, 20, 100),
                }];
                if j % 3 == 0 {
                    parts.push(Part::ToolResult {
                        call_id: format!("c{n}"),
                        output: text(&mut rng, 10, 60),
                        is_error: false,
                    });
                }
                Record::Message(Message {
                    id: format!("m{n}"),
                    role: if j % 2 == 0 {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    kind: Kind::Text,
                    parts,
                    timestamp: Some(T0 + n * 1000),
                    model: None,
                })
            })
            .collect();
        store.write(|w| w.apply(sid, records)).unwrap();
    }
    let _ = store.catch_up_index(None);
    let all = SearchFilter {
        limit: 100,
        ..SearchFilter::default()
    };
    let filters = [
        all.clone(),
        SearchFilter {
            agent: Some("codex".into()),
            ..all.clone()
        },
        SearchFilter {
            role: Some("user".into()),
            ..all
        },
    ];
    let queries = [
        "alpha -beta",
        "alpha -be*",
        "al* -beta",
        "alpha -\"beta gamma\"",
        "alpha -t*",
        "error -t*",
        "err* -co*",
        "err* -co* -th*",
        "alpha -漢字",
        "漢字 -alpha",
        "日本 -漢字 gamma",
        "alpha gamma -beta -delta",
        "alpha -beta gamma",
        "\"alpha beta\" -gamma",
        "error -test* -code",
        "-beta alpha",
    ];
    let mut cut = 0;
    for q in queries {
        for f in &filters {
            for min_pages in [0, i64::MAX] {
                KEEP_EXCLUSIONS.set(true);
                let kept = search(&store, min_pages, q, f);
                KEEP_EXCLUSIONS.set(false);
                let stripped = SNIPPETS_WITHOUT_EXCLUSIONS.get();
                let left_out = search(&store, min_pages, q, f);
                // The snippets were asked for without the exclusions (one alternative each).
                assert_eq!(SNIPPETS_WITHOUT_EXCLUSIONS.get(), stripped + 1, "{q}");
                assert!(!kept.is_empty(), "{q} {f:?}: no hit");
                assert_eq!(
                    first_difference(&left_out, &kept),
                    None,
                    "{q} {f:?} (min_pages {min_pages})"
                );
                cut += kept.iter().filter(|h| h.snippet.contains('…')).count();
            }
        }
    }
    // Most hits' snippets are a window of a longer text.
    assert!(cut > 1_000, "{cut} snippets cut");
}

/// An excluded prefix right after its `NOT` is walked as a chain of exclusions in chunks of
/// 1, 2, 4, … terms, its frequent terms first, the most frequent (by the leaf pages their
/// doclists span) leading: on the generated store `err*`'s frequent terms are `error` (in 2,378
/// messages) and `errorgener` (60, its doclist across a page's end). Its rows are the rows of the `OR` of its terms
/// (the oracles above compare the hits); an excluded group inside parentheses (a CJK term's
/// `NOT ("…"* OR (cjk : …))`) stays an `OR`, which the chain would change.
#[test]
fn an_excluded_prefix_is_walked_as_a_chain_most_frequent_first() {
    let (_dir, store) = generated();
    let (whole, _) = excluded_split_in(&store, r#""alpha" NOT "err"*"#, 0);
    let chunks: Vec<&str> = whole.query.split(" NOT ").skip(1).collect();
    let sizes: Vec<usize> = chunks
        .iter()
        .map(|c| c.matches(" OR ").count() + 1)
        .collect();
    assert!(chunks.len() >= 4, "{}", whole.query);
    for (i, &n) in sizes.iter().enumerate() {
        if i + 1 < sizes.len() {
            assert_eq!(n, 1 << i, "{}", whole.query);
        } else {
            assert!(n <= 1 << i, "{}", whole.query);
        }
    }
    let frequent: Vec<(usize, String)> = {
        let mut f: Vec<(usize, String)> = term_rows_in(&store, "err")
            .into_iter()
            .filter(|(_, rows)| rows.is_none())
            .map(|(t, _)| (vocabulary_rows(&store, &t).len(), t))
            .collect();
        f.sort_by(|a, b| b.cmp(a));
        f
    };
    assert!(frequent.len() >= 2, "{frequent:?}");
    assert_eq!(chunks[0], "(\"error\")");
    assert_eq!(frequent[0].1, "error");
    // The next chunk's first term: the second most frequent, before every rare term.
    assert!(
        chunks[1].starts_with(&format!("(\"{}", frequent[1].1)),
        "{} {frequent:?}",
        whole.query
    );
    // In parentheses: one `OR`, no chain.
    let cjk = query::fts_query("alpha -err*漢").unwrap();
    assert!(cjk.contains("NOT ("), "{cjk}");
    let (inside, _) = excluded_split_in(&store, &cjk, 0);
    assert_eq!(inside.query.matches(" NOT ").count(), 1, "{}", inside.query);
}

/// the hits of `q` under `f`, each way (FTS5's own prefix, every prefix expanded,
/// production) with the exclusions left out of the snippets' query against the same way with
/// them kept (ids, scores, snippets); and each way against FTS5's own prefix with them kept
/// (ids and scores; snippets too when `snippets`: an expanded positive prefix's snippet window
/// may differ, a known difference). Errors must agree. The differences, described.
fn exclusion_differences_with(
    store: &Store,
    queries: &[&str],
    filters: &[SearchFilter],
    snippets: bool,
) -> Vec<String> {
    use crate::store::queries::KEEP_EXCLUSIONS;
    let run = |way: &str, q: &str, f: &SearchFilter| match way {
        "native" => search_result(store, i64::MAX, q, f),
        "expanded" => search_result(store, 0, q, f),
        _ => query::search(store, q, f),
    };
    let compare = |got: &crate::Result<Vec<Hit>>, want: &crate::Result<Vec<Hit>>, snip: bool| match (
        got, want,
    ) {
        (Ok(g), Ok(w)) => {
            if snip {
                first_difference(g, w)
            } else {
                let strip = |h: &[Hit]| {
                    h.iter()
                        .map(|h| Hit {
                            snippet: String::new(),
                            ..h.clone()
                        })
                        .collect::<Vec<_>>()
                };
                first_difference(&strip(g), &strip(w))
            }
        }
        (Err(_), Err(_)) => None,
        (g, w) => Some(format!(
            "{:?}, against {:?}",
            g.as_ref().map(|h| h.len()),
            w.as_ref().map(|h| h.len())
        )),
    };
    let mut bad = Vec::new();
    for &q in queries {
        for f in filters {
            KEEP_EXCLUSIONS.set(true);
            let oracle = run("native", q, f);
            KEEP_EXCLUSIONS.set(false);
            for way in ["native", "expanded", "prod"] {
                KEEP_EXCLUSIONS.set(true);
                let kept = run(way, q, f);
                KEEP_EXCLUSIONS.set(false);
                let left_out = run(way, q, f);
                if let Some(d) = compare(&left_out, &kept, true) {
                    bad.push(format!("{way} left out vs kept {q:?} {f:?}: {d}"));
                }
                if let Some(d) = compare(&left_out, &oracle, snippets) {
                    bad.push(format!("{way} vs oracle {q:?} {f:?}: {d}"));
                }
            }
        }
    }
    bad
}

fn exclusion_differences(store: &Store, queries: &[&str], filters: &[SearchFilter]) -> Vec<String> {
    exclusion_differences_with(store, queries, filters, true)
}

/// hostile query shapes with exclusions, on the generated store.
#[test]
fn hostile_exclusions_give_the_same_hits_every_way() {
    let (_dir, store) = generated();
    let queries = [
        r#"alpha -"a ""b""""#,
        r#"alpha -"NOT""#,
        r#"alpha -"NOT error""#,
        r#""NOT error" -test"#,
        r#"error NOT "NOT""#,
        "error -NOT",
        "error -AND",
        "error -OR",
        "error -NEAR",
        "error -NEAR(test",
        "error -(test)",
        "error -test) alpha",
        "error -\"(test\"",
        "error -cjk:test",
        "error -cjk: test",
        "error -\"cjk : test\"",
        "error -cjk",
        "cjk -error",
        "error -中",
        "中 -error",
        "中* -error",
        "error -中*",
        "error -err中*",
        "error -中文 test",
        "error -[test]",
        "error -test* -webhook* -filler* -words* -here* -al*",
        "-alpha -test error",
        "-t* error",
        "-t* -a* error",
        "-t* OR error",
        "error OR test -alpha",
        "error -alpha OR test",
        "error -alpha OR test -webhook",
        "err* -alpha",
        "e* -alpha",
        "e* -t* -a*",
        "er* -error",
        "errors* -error",
        "error -errors*",
        "error -erro*",
        "test -error*",
        "\"error test\" -alpha",
        "\"error alpha\"* -test",
        "error -\"error alpha\"*",
        "error -e*",
        "webhook -e* -t*",
        "error -ि",
        "ि -error",
        "error -ि*",
        "error NOT NOT alpha",
        "error NOT -alpha",
        "error - alpha",
        "error -- alpha",
        "error --alpha",
        "error -1",
        "error -alpha1",
        "error -_alpha",
        "ERROR -ALPHA",
        "error -Alpha*",
        "error -é*",
        "error -\"a:b\"",
        "error \":\" -alpha",
        "error -\"*\"",
        "alpha -\"OR\"",
        "alpha \"OR\" -test",
        "alpha -\")\"",
        "alpha -\"error\"test",
        "alpha -errq1 -errq2 -errq3 -errq* test",
        "NOT alpha error AND NOT test",
        "error && -alpha || test",
        "error -alpha && test",
        "errq1* -alpha",
        "errq1* -errq1",
        "errq* -errq1*",
        "alpha -errq* -errorc* -erron* -erra*",
        "errno -t* -w* -f* -h* -al*",
    ];
    let bad = exclusion_differences(&store, &queries, &filters());
    assert!(bad.is_empty(), "{} bad: {bad:#?}", bad.len());
}

/// texts holding operator words, colons, quotes and CJK, excluded in odd shapes.
#[test]
fn hostile_exclusions_over_texts_of_operators_give_the_same_hits() {
    let (_dir, store) = store_of(&[
        "NOT this one error",
        "error AND that NOT here",
        "error OR other words",
        "cjk: error here",
        "error 漢字 text",
        "error 漢 字 apart",
        "漢字 only here 字",
        "error \"quoted\" text",
        "error NEAR alpha",
        "error (paren) alpha",
        "error plain",
        "error error error NOT NOT",
        "the error that",
        "error 日本語 words",
        "日本 error",
    ]);
    let all = SearchFilter {
        limit: 100,
        ..SearchFilter::default()
    };
    let queries = [
        "error -\"NOT this\"",
        "error -NOT",
        "error -\"NOT\"",
        "\"NOT this\" -error",
        "error -AND",
        "error -OR",
        "error -NEAR",
        "error -cjk",
        "error -cjk:",
        "error -\"cjk:\"",
        "error -漢字",
        "error -漢",
        "error -字",
        "error -漢*",
        "漢字 -error",
        "漢 -error",
        "漢字 -字",
        "error -quoted",
        "error -\"\"\"quoted\"\"\"",
        "error -paren",
        "error -(paren)",
        "error -\"(paren)\"",
        "error -th*",
        "error -t* -p*",
        "error -日本",
        "error -日本*",
        "日本 -error",
        "日本 -日本語",
        "error -the -that",
        "NOT error",
    ];
    let bad = exclusion_differences(&store, &queries, &[all]);
    assert!(bad.is_empty(), "{} bad: {bad:#?}", bad.len());
}

/// The store of [`many_chained_exclusions_stay_within_fts5s_depth`]: 31 prefixes
/// (`qa`…`qz`, `xa`…`xe`) of 300 terms each, most over several pages; `alpha` everywhere.
fn deep_store() -> (tempfile::TempDir, Store, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let mut store = Store::open(&path).unwrap();
    let sid = claude_session(&mut store, "deep");
    crate::store::prefix::set_page_size(&store, 32);
    let prefixes: Vec<String> = ('a'..='z')
        .map(|c| format!("q{c}"))
        .chain(('a'..='e').map(|c| format!("x{c}")))
        .collect();
    let mut words: Vec<String> = Vec::new();
    for p in &prefixes {
        for i in 0..300 {
            for _ in 0..14 {
                words.push(format!("{p}{i:04}"));
            }
        }
    }
    let mut rng = Xorshift(0x00de_e9e5);
    for i in (1..words.len()).rev() {
        words.swap(i, rng.below(i + 1));
    }
    let mut records: Vec<Record> = words
        .chunks(60)
        .enumerate()
        .map(|(i, c)| {
            Record::Message(text_message(
                format!("m{i}"),
                format!("alpha {}", c.join(" ")),
                T0 + i as i64 * 1000,
            ))
        })
        .collect();
    let n = records.len() as i64;
    records.extend((0..50).map(|i| {
        Record::Message(text_message(
            format!("a{i}"),
            "alpha only here".into(),
            T0 + (n + i) * 1000,
        ))
    }));
    store.write(|w| w.apply(sid, records)).unwrap();
    let _ = store.catch_up_index(None);
    (dir, store, prefixes)
}

/// chained exclusions beside positive groups (FTS5's depth not reached): the hits of
/// FTS5's own prefixes, under filters.
#[test]
fn chained_exclusions_beside_groups_give_fts5s_own_hits() {
    let (_dir, store, _) = deep_store();
    let queries = [
        "alpha -qa* -qb* -qc* -qd* -qe* -qf* -qg* -qh* -qi* -qj*",
        "qa* -qb*",
        "-qb* qa*",
        "alpha -qa* qb*",
        "alpha -qa* qb* -qc* xa*",
        "qa0001 -qb* OR qc0002 -qd*",
        "alpha -qa0* -qa1*",
        "qa* -qa1*",
        "qa1* -qa10*",
        "alpha -q*",
        "alpha -q* -x*",
        "here -qa* -qb* -qc*",
    ];
    let mut fs = filters();
    fs.truncate(2);
    let bad = exclusion_differences_with(&store, &queries, &fs, false);
    assert!(bad.is_empty(), "{} bad: {bad:#?}", bad.len());
}

/// 31 excluded prefixes (the most a query holds beside one positive word), each with
/// ~300 terms whose doclists span several leaf pages (as `t*` has ~300 on the 1 GB bench store;
/// here made with FTS5's smallest page size). Walked as chains, each prefix is ~9 nested `NOT`s:
/// ~280 in all, past FTS5's limit of 256 on an expression's depth. FTS5's own prefixes (and
/// the `OR` form before the chain) are 31.
#[test]
fn many_chained_exclusions_stay_within_fts5s_depth() {
    let (_dir, store, prefixes) = deep_store();
    let frequent = term_rows_in(&store, "qa")
        .iter()
        .filter(|(_, r)| r.is_none())
        .count();
    assert!(frequent >= 256, "{frequent} frequent terms of qa*");
    let q = format!(
        "alpha {}",
        prefixes
            .iter()
            .map(|p| format!("-{p}*"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let (_, walked) = excluded_split_in(&store, &query::fts_query(&q).unwrap(), 0);
    let nots = walked.query.matches(" NOT ").count();
    let native = search_result(&store, i64::MAX, &q, &fifty());
    let expanded = search_result(&store, 0, &q, &fifty());
    let prod = query::search(&store, &q, &fifty());
    assert_eq!(
        native.as_ref().map(|h| h.len()).ok(),
        Some(50),
        "{native:?}"
    );
    assert!(
        matches!((&expanded, &prod), (Ok(e), Ok(p)) if e.len() == 50 && p.len() == 50),
        "{nots} NOTs walked: expanded {:?}, production {:?}",
        expanded.as_ref().map(|h| h.len()),
        prod.as_ref().map(|h| h.len())
    );
}

/// Scores with the rare phrases' rows given to `memtrail_bm25` are those without them to the
/// bit (every candidate, in order): over messages whose prose and tool text hold several
/// terms of one prefix each (weights 1.0 and 0.4 summed in a group's frequency, where the
/// order of the sum shows in the last bit: a review found `zz*` one unit off when the listed
/// phrases were summed newest entry first), and over the generated store's prefix queries.
#[test]
fn rare_rows_leave_every_score_the_same_to_the_bit() {
    use crate::store::queries::WITHOUT_RARE_ROWS;
    let bits = |v: &[(i64, f64)]| -> Vec<(i64, u64)> {
        v.iter().map(|&(id, s)| (id, s.to_bits())).collect()
    };
    let compare = |store: &Store, queries: &[&str], filters: &[SearchFilter]| {
        let mut candidates = 0;
        for q in queries {
            for f in filters {
                let (_, listed) = search_ranked(store, 0, q, f);
                WITHOUT_RARE_ROWS.set(true);
                let (_, unlisted) = search_ranked(store, 0, q, f);
                WITHOUT_RARE_ROWS.set(false);
                assert_eq!(bits(&listed), bits(&unlisted), "{q} {f:?}");
                candidates += listed.len();
            }
        }
        candidates
    };
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("m.db")).unwrap();
    let sid = claude_session(&mut store, "sess-bits");
    let rows = [
        ("zzbeta", "zzalpha zzalpha"),
        ("zzalpha filler", "zzbeta zzbeta zzgamma"),
        ("zzgamma zzalpha zzdelta", "zzbeta"),
        ("other words", "zzalpha zzdelta zzdelta"),
    ];
    let records: Vec<Record> = rows
        .iter()
        .enumerate()
        .map(|(i, (prose, command))| {
            Record::Message(Message {
                id: format!("m{i}"),
                role: Role::Assistant,
                kind: Kind::ToolCall,
                parts: vec![
                    Part::Text {
                        text: prose.to_string(),
                    },
                    Part::ToolCall(memtrail_adapters::ToolCall {
                        id: format!("call-{i}"),
                        name: "Bash".into(),
                        tool: "shell".into(),
                        input: serde_json::json!({ "command": command }),
                        output: None,
                        is_error: false,
                        exit_code: Some(0),
                    }),
                ],
                timestamp: Some(T0 + i as i64 * 1000),
                model: None,
            })
        })
        .collect();
    store.write(|w| w.apply(sid, records)).unwrap();
    let _ = store.catch_up_index(None);
    let n = compare(
        &store,
        &["zz*", "zz* other", "zz* OR other", "zz* -zzdelta"],
        &[fifty()],
    );
    assert!(n >= 8, "{n}");
    let (_dir, store) = generated();
    let filters: Vec<SearchFilter> = filters()
        .into_iter()
        .take(3)
        .map(|f| SearchFilter { limit: 50, ..f })
        .collect();
    let n = compare(
        &store,
        &[
            "err*",
            "e*",
            "err* webhook",
            "tes* err* alpha",
            "errq* OR webhook",
            "webhook -err*",
        ],
        &filters,
    );
    assert!(n > 1000, "{n}");
}
