//! The oracle for the plans of a filtered search (see `session_scope`): joining each match to
//! its message and session, listing the admitted sessions' messages, and checking each match's
//! session must give the same hits (same messages, scores and snippets, in the same order) for
//! every query shape and filter, over a generated store whose filters admit more matches than
//! are ranked ([`SEARCH_CANDIDATES`]), so that which matches each plan walks matters.

use crate::query::{self, Hit, SEARCH_CANDIDATES, SearchFilter};
use crate::records::Standard;
use crate::store::Store;
use crate::store::queries::{
    DATES_LISTED, FORCED_PLAN, ForcedPlan, ROLES_LISTED, every_match_scored, scatter_message_times,
    scope_is_listed,
};
use crate::test_rng::Xorshift;
use memtrail_adapters::{
    Agent, Kind, Message, Part, Record, Role, SessionMeta, SessionRef, ToolCall,
};

const T0: i64 = 1_760_000_000_000;

/// A store of 48 sessions (half of them Claude Code's, in four projects, one nested in another)
/// written in interleaved rounds, 9,600 messages in all: words drawn so that `alpha` is in
/// about 60% of the messages, `beta` 30%, `gamma` 5%, `delta` 1%, `zeta` 0.2%.
/// Also returns how many messages of Claude Code's sessions hold `alpha`.
fn generated() -> (tempfile::TempDir, Store, usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("m.db")).unwrap();
    let mut rng = Xorshift(0x5c0e_0dd1);
    let agents = [Agent::Claude, Agent::Codex, Agent::Gemini, Agent::Cursor];
    let projects = [Some("/w/app"), Some("/w/app/sub"), Some("/w/other"), None];
    let sessions: Vec<i64> = (0..48)
        .map(|i| {
            let agent = if i % 2 == 0 { agents[0] } else { agents[i % 4] };
            store
                .write(|w| {
                    w.upsert_session(
                        &SessionRef {
                            agent,
                            external_id: format!("sess-{i:02}"),
                            parent_external_id: None,
                        },
                        &SessionMeta {
                            project_dir: projects[(i / 3) % 4].map(str::to_string),
                            ..SessionMeta::default()
                        },
                        &Standard,
                    )
                })
                .unwrap()
        })
        .collect();
    let mut n = 0i64;
    let mut claude_alpha = 0;
    for round in 0..20 {
        for (k, &sid) in sessions.iter().enumerate() {
            // Sessions grow at different rates: some write nothing in a round.
            if (k + round) % 5 == 4 {
                continue;
            }
            let records: Vec<Record> = (0..12)
                .map(|j| {
                    n += 1;
                    let mut words: Vec<&str> = Vec::new();
                    for (w, per_mille) in [
                        ("alpha", 600),
                        ("beta", 300),
                        ("gamma", 50),
                        ("delta", 10),
                        ("zeta", 2),
                    ] {
                        if rng.below(1000) < per_mille {
                            words.push(w);
                        }
                    }
                    if k % 2 == 0 && words.contains(&"alpha") {
                        claude_alpha += 1;
                    }
                    words.push(["filler", "words", "here"][rng.below(3)]);
                    let text = words.join(" ");
                    let id = format!("r{round}-s{k}-{j}");
                    let ts = Some(T0 + n * 1000);
                    let (role, kind, parts) = match rng.below(3) {
                        0 => (Role::User, Kind::Text, vec![Part::Text { text }]),
                        1 => (Role::Assistant, Kind::Text, vec![Part::Text { text }]),
                        // A shell call whose command and output hold the words.
                        _ => (
                            Role::Assistant,
                            Kind::ToolCall,
                            vec![Part::ToolCall(ToolCall {
                                id: format!("call-{id}"),
                                name: "Bash".into(),
                                tool: "shell".into(),
                                input: serde_json::json!({ "command": format!("echo {text}") }),
                                output: Some(text),
                                is_error: false,
                                exit_code: Some(0),
                            })],
                        ),
                    };
                    let message = Message {
                        id,
                        role,
                        kind,
                        parts,
                        timestamp: ts,
                        model: None,
                    };
                    Record::Message(message)
                })
                .collect();
            store.write(|w| w.apply(sid, records)).unwrap();
        }
    }
    (dir, store, claude_alpha)
}

/// The hits of `q` under `f` with the scope plan `plan` (`None`: the one the search picks).
fn with_plan(store: &Store, plan: Option<ForcedPlan>, q: &str, f: &SearchFilter) -> Vec<Hit> {
    FORCED_PLAN.set(plan);
    let hits = query::search(store, q, f);
    FORCED_PLAN.set(None);
    hits.unwrap_or_else(|e| panic!("{q} {f:?}: {e}"))
}

/// `a` and `b` are the same hits in the same order, their scores equal within 1e-9 of them: a
/// score's recency prior moves with the clock, by about 1e-14 of it between two searches here.
fn assert_same(a: &[Hit], b: &[Hit], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: number of hits");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x.score - y.score).abs() <= 1e-9 * y.score.abs(),
            "{what}: hit {i}: score {} against {}",
            x.score,
            y.score
        );
        let y = Hit {
            score: x.score,
            ..y.clone()
        };
        assert_eq!(x, &y, "{what}: hit {i}");
    }
}

#[test]
fn every_plan_of_a_filtered_search_gives_the_same_hits() {
    let (_dir, store, claude_alpha) = generated();
    let mid = T0 + 4_000 * 1000;
    let base = SearchFilter {
        limit: 20,
        ..SearchFilter::default()
    };
    let agent = |a: &str| SearchFilter {
        agent: Some(a.into()),
        ..base.clone()
    };
    let project = |p: &str| SearchFilter {
        project: Some(p.into()),
        ..base.clone()
    };
    let filters: Vec<SearchFilter> = [
        agent("claude"),
        agent("codex"),
        agent("gemini"),
        agent("aider"),
        project("/w/app"),
        project("/w/app/sub"),
        project("/w/other"),
        SearchFilter {
            session: Some("sess-07".into()),
            ..base.clone()
        },
        SearchFilter {
            role: Some("user".into()),
            ..agent("claude")
        },
        SearchFilter {
            role: Some("tool".into()),
            ..project("/w/app")
        },
        SearchFilter {
            since: Some(mid),
            ..agent("claude")
        },
        SearchFilter {
            until: Some(mid),
            ..agent("claude")
        },
        SearchFilter {
            since: Some(mid),
            until: Some(mid + 2_000_000),
            role: Some("assistant".into()),
            ..project("/w/app")
        },
        SearchFilter {
            limit: 200,
            ..agent("claude")
        },
        SearchFilter {
            agent: Some("codex".into()),
            ..project("/w/app")
        },
        SearchFilter {
            since: Some(T0 + 20_000_000),
            ..base.clone()
        },
        // A role alone: each match checked in `messages_by_role`.
        SearchFilter {
            role: Some("user".into()),
            ..base.clone()
        },
        SearchFilter {
            role: Some("assistant".into()),
            ..base.clone()
        },
    ]
    .into_iter()
    // Dates with no session-level part: their messages listed by time.
    .chain(date_filters(&base, mid))
    .collect();
    let queries = [
        "alpha",
        "alpha beta",
        "gamma",
        "delta",
        "zeta",
        "\"alpha beta\"",
        "alp*",
        "alpha -beta",
        "alpha OR zeta",
        "absent",
    ];
    let (mut compared, mut nonempty, mut over_bound) = (0, 0, 0);
    for f in &filters {
        for q in queries {
            let join = with_plan(&store, Some(ForcedPlan::Join), q, f);
            let list = with_plan(&store, Some(ForcedPlan::List), q, f);
            let sessions = with_plan(&store, Some(ForcedPlan::Sessions), q, f);
            // A walk that gives up (at once, or part way for frequent words) and lists.
            let gave_up = with_plan(&store, Some(ForcedPlan::SessionsWithin(1)), q, f);
            let part_way = with_plan(&store, Some(ForcedPlan::SessionsWithin(700)), q, f);
            let default = with_plan(&store, None, q, f);
            let what = |plan: &str| format!("{plan} vs join: {q} {f:?}");
            assert_same(&list, &join, &what("list"));
            assert_same(&sessions, &join, &what("sessions"));
            assert_same(&gave_up, &join, &what("sessions within 1"));
            assert_same(&part_way, &join, &what("sessions within 700"));
            assert_same(&default, &join, &what("default"));
            compared += 1;
            nonempty += usize::from(!join.is_empty());
            // Hits with all the filter's matches would rank more than the bound.
            if q == "alpha" && join.len() == f.limit {
                over_bound += 1;
            }
        }
    }
    assert_eq!(compared, filters.len() * queries.len());
    // Most combinations find something (not a comparison of empty lists), and the frequent
    // word's matches in one agent exceed what is ranked.
    assert!(nonempty >= 100, "{nonempty}");
    assert!(over_bound >= 10, "{over_bound}");

    assert!(
        claude_alpha > SEARCH_CANDIDATES,
        "{claude_alpha} matches in one agent"
    );
}

/// Filters on dates with no session-level part, around `mid`: since, until, both, and until
/// with a role.
fn date_filters(base: &SearchFilter, mid: i64) -> Vec<SearchFilter> {
    vec![
        SearchFilter {
            since: Some(mid),
            ..base.clone()
        },
        SearchFilter {
            until: Some(mid),
            ..base.clone()
        },
        SearchFilter {
            since: Some(mid),
            until: Some(mid + 300_000),
            ..base.clone()
        },
        SearchFilter {
            until: Some(mid),
            role: Some("user".into()),
            ..base.clone()
        },
    ]
}

/// A filter on dates alone lists the messages of its range by their time: both its bounds are
/// inclusive, and the messages at both ends are found (the 41 `delta` messages from the 51st
/// newest to the 11th, the range's ends on two of them), as the join finds them.
#[test]
fn a_date_range_keeps_the_messages_at_both_its_ends() {
    let (_dir, store, _) = generated();
    // A search catches the index up. Message n (the n-th written: row n) is at T0 + n s.
    with_plan(&store, None, "delta", &SearchFilter::default());
    let rows = crate::store::prefix::rows_matching(&store, "\"delta\"", 10_000);
    assert!(rows.len() > 60, "{}", rows.len());
    let (newest, oldest) = (rows[10], rows[50]);
    let f = SearchFilter {
        since: Some(T0 + oldest * 1000),
        until: Some(T0 + newest * 1000),
        limit: 500,
        ..SearchFilter::default()
    };
    DATES_LISTED.set(0);
    let listed = with_plan(&store, None, "delta", &f);
    assert_eq!(DATES_LISTED.get(), 1, "listed by time");
    let join = with_plan(&store, Some(ForcedPlan::Join), "delta", &f);
    assert_same(&listed, &join, "dates listed vs join");
    assert_eq!(listed.len(), 41);
    // One second past either end leaves that message out.
    for f in [
        SearchFilter {
            since: Some(T0 + oldest * 1000 + 1),
            ..f.clone()
        },
        SearchFilter {
            until: Some(T0 + newest * 1000 - 1),
            ..f.clone()
        },
    ] {
        assert_eq!(with_plan(&store, None, "delta", &f).len(), 40, "{f:?}");
    }
}

/// A walk over budget gives up and the search lists the scope (kept as the filter's scope); a
/// walk within budget does not, also when the same statement runs again (the count of matches
/// walked starts anew with each run).
#[test]
fn a_walk_over_budget_lists_the_scope_instead() {
    let (_dir, store, _) = generated();
    let f = SearchFilter {
        agent: Some("claude".into()),
        limit: 20,
        ..SearchFilter::default()
    };
    let join = with_plan(&store, Some(ForcedPlan::Join), "alpha", &f);
    // Half the sessions are Claude Code's: the 1,024 newest of its `alpha` matches lie among
    // the newest ~2,000 matches, so a budget of 3,000 suffices every time.
    for _ in 0..3 {
        let hits = with_plan(&store, Some(ForcedPlan::SessionsWithin(3000)), "alpha", &f);
        assert_same(&hits, &join, "within 3000");
        assert!(
            !scope_is_listed(&store),
            "the walk within budget did not give up"
        );
    }
    let hits = with_plan(&store, Some(ForcedPlan::SessionsWithin(1000)), "alpha", &f);
    assert_same(&hits, &join, "within 1000");
    assert!(
        scope_is_listed(&store),
        "the walk over budget gave up and listed the scope"
    );
}

/// `n` text messages holding `word`, ids `{prefix}-{i}`, one a second from `t0` (ms).
fn texts(prefix: &str, word: &str, n: usize, t0: i64) -> Vec<Record> {
    (0..n)
        .map(|i| {
            Record::Message(Message {
                id: format!("{prefix}-{i}"),
                role: Role::User,
                kind: Kind::Text,
                parts: vec![Part::Text {
                    text: format!("{word} number{i}"),
                }],
                timestamp: Some(t0 + i as i64 * 1000),
                model: None,
            })
        })
        .collect()
}

/// A scope among the oldest messages: the walk starts at its sessions' largest message id
/// (`sessions.last_message_id`), not at the store's newest match, so it stays within a budget
/// that every newer match would spend; the hits stay the join's when the bound is stale (the
/// session's last message deleted) and when it moves (a message appended later).
#[test]
fn a_walk_starts_at_the_scopes_newest_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("m.db")).unwrap();
    let mut session = |agent, id: &str| {
        store
            .write(|w| {
                w.upsert_session(
                    &SessionRef {
                        agent,
                        external_id: id.into(),
                        parent_external_id: None,
                    },
                    &SessionMeta::default(),
                    &Standard,
                )
            })
            .unwrap()
    };
    let old = session(Agent::Gemini, "old");
    let new = session(Agent::Claude, "new");
    store
        .write(|w| w.apply(old, texts("o", "alpha", 300, T0)))
        .unwrap();
    store
        .write(|w| w.apply(new, texts("n", "alpha", 3000, T0 + 300_000)))
        .unwrap();
    let f = SearchFilter {
        agent: Some("gemini".into()),
        limit: 20,
        ..SearchFilter::default()
    };
    // The hits of the walk are the join's; `within`: the walk did not give up (list).
    let check = |store: &Store, what: &str, within: bool| {
        let join = with_plan(store, Some(ForcedPlan::Join), "alpha", &f);
        let walked = with_plan(store, Some(ForcedPlan::SessionsWithin(500)), "alpha", &f);
        assert_same(&walked, &join, what);
        assert_eq!(
            !scope_is_listed(store),
            within,
            "{what}: walked within budget"
        );
        join
    };
    let hits = check(&store, "oldest scope", true);
    assert_eq!(hits.len(), 20);
    assert!(hits.iter().all(|h| h.message_id.starts_with("o-")));
    // The old session's newest message deleted: its bound is stale, the hits the same.
    crate::store::queries::delete_newest_message(&store, old);
    check(&store, "after a delete", true);
    // A message appended to the old session after all the others: the bound moves with it.
    store
        .write(|w| w.apply(old, texts("late", "alpha", 1, T0 + 4_000_000)))
        .unwrap();
    // (The scope's newest message is now the store's: the walk crosses the newer session's
    // 3,000 matches, gives up and lists.)
    let hits = check(&store, "after an append", false);
    assert!(hits.iter().any(|h| h.message_id == "late-0"), "{hits:?}");
}

/// An `OR` query ranks the newest [`SEARCH_CANDIDATES`] matches of each alternative, a message
/// scored by the sum of its BM25 for the alternatives among whose candidates it is (see
/// `search`). The oracle computes that from every match of each alternative and of the whole
/// query, scored by plain SQL: when no alternative has more matches than are ranked, the hits
/// are those of ranking every match of the whole query (same messages, order and scores);
/// when one has (`alpha`, in 60% of the messages), the rule above, and a message found by a
/// rare alternative scores for the frequent one only within its candidates.
#[test]
fn or_queries_rank_each_alternatives_newest_matches() {
    let (_dir, store, _) = generated();
    let now = crate::now_ms();
    let limit = 40;
    let ranked = |scored: Vec<(i64, String, f64)>,
                  ts: &std::collections::HashMap<i64, Option<i64>>| {
        let mut v: Vec<(i64, String, f64)> = scored
            .into_iter()
            .map(|(id, ext, bm25)| (id, ext, query::with_recency(-bm25, ts[&id], now)))
            .collect();
        v.sort_by(|a, b| b.2.total_cmp(&a.2).then(b.0.cmp(&a.0)));
        v.truncate(limit);
        v
    };
    let check = |q: &str, alternatives: &[&str], exact: bool| {
        let whole = every_match_scored(&store, q).unwrap();
        let ts: std::collections::HashMap<i64, Option<i64>> =
            whole.iter().map(|m| (m.0, m.3)).collect();
        let mut summed: std::collections::HashMap<i64, (String, f64)> = Default::default();
        let mut over_bound = false;
        for alt in alternatives {
            let matches = every_match_scored(&store, alt).unwrap();
            over_bound |= matches.len() > SEARCH_CANDIDATES;
            // Newest first: the first SEARCH_CANDIDATES are the candidates.
            for (id, ext, bm25, _) in matches.into_iter().take(SEARCH_CANDIDATES) {
                summed.entry(id).or_insert((ext, 0.0)).1 += bm25;
            }
        }
        assert_eq!(over_bound, !exact, "{q}: an alternative over the bound");
        let expected = ranked(
            summed
                .into_iter()
                .map(|(id, (ext, s))| (id, ext, s))
                .collect(),
            &ts,
        );
        if exact {
            let full = ranked(whole.iter().map(|m| (m.0, m.1.clone(), m.2)).collect(), &ts);
            assert_eq!(expected.len(), full.len(), "{q}");
            for (e, f) in expected.iter().zip(&full) {
                assert_eq!(
                    e.1, f.1,
                    "{q}: the sum of the alternatives ranks as the whole"
                );
                assert!(
                    (e.2 - f.2).abs() <= 1e-9 * f.2.abs(),
                    "{q}: {} vs {}",
                    e.2,
                    f.2
                );
            }
        }
        let hits = with_plan(
            &store,
            None,
            q,
            &SearchFilter {
                limit,
                ..SearchFilter::default()
            },
        );
        assert_eq!(hits.len(), expected.len(), "{q}: number of hits");
        for (i, (h, e)) in hits.iter().zip(&expected).enumerate() {
            assert_eq!(h.message_id, e.1, "{q}: hit {i}");
            assert!(
                (h.score - e.2).abs() <= 1e-9 * e.2.abs(),
                "{q}: hit {i}: {} vs {}",
                h.score,
                e.2
            );
        }
    };
    check("delta OR zeta", &["delta", "zeta"], true);
    check("gamma OR delta OR zeta", &["gamma", "delta", "zeta"], true);
    // An alternative of two words, a phrase, an exclusion, a prefix.
    check("gamma delta OR zeta", &["gamma delta", "zeta"], true);
    // A word in two alternatives: each counts it (as the whole query does).
    check(
        "gamma delta OR gamma zeta",
        &["gamma delta", "gamma zeta"],
        true,
    );
    check(
        "\"delta filler\" OR zeta -beta",
        &["\"delta filler\"", "zeta -beta"],
        true,
    );
    check("gam* OR zeta", &["gam*", "zeta"], true);
    check("alpha OR zeta", &["alpha", "zeta"], false);
    check("zeta OR alpha beta", &["zeta", "alpha beta"], false);
}

/// Message times not in the order of their rows (history imported out of order), some
/// missing: every filter on dates alone (with roles, empty and inverted ranges, the extreme
/// bounds) finds what the join finds, for every query shape, prefixes and `OR` included.
/// (Written by a review of the change.)
#[test]
fn dates_out_of_row_order_find_what_the_join_finds() {
    let (_dir, store, _) = generated();
    with_plan(&store, None, "alpha", &SearchFilter::default());
    scatter_message_times(&store, T0);
    let base = SearchFilter {
        limit: 20,
        ..SearchFilter::default()
    };
    let mid = T0 + 4_000 * 1000;
    let filters: Vec<SearchFilter> = date_filters(&base, mid)
        .into_iter()
        .chain([
            SearchFilter {
                since: Some(mid),
                until: Some(mid + 300_000),
                role: Some("tool".into()),
                ..base.clone()
            },
            SearchFilter {
                since: Some(mid),
                until: Some(mid - 1),
                ..base.clone()
            },
            SearchFilter {
                since: Some(i64::MIN),
                ..base.clone()
            },
            SearchFilter {
                until: Some(i64::MAX),
                ..base.clone()
            },
            SearchFilter {
                since: Some(i64::MIN),
                until: Some(i64::MAX),
                ..base.clone()
            },
            SearchFilter {
                since: Some(T0 + 9_000 * 1000),
                limit: 500,
                ..base.clone()
            },
        ])
        .collect();
    let queries = [
        "alpha",
        "alpha beta",
        "delta",
        "zeta",
        "\"alpha beta\"",
        "alp*",
        "a*",
        "alpha -beta",
        "alpha OR zeta",
        "zeta OR d*",
        "absent",
    ];
    DATES_LISTED.set(0);
    for f in &filters {
        for q in queries {
            let join = with_plan(&store, Some(ForcedPlan::Join), q, f);
            let default = with_plan(&store, None, q, f);
            assert_same(&default, &join, &format!("default vs join: {q} {f:?}"));
        }
    }
    assert!(DATES_LISTED.get() > 0);
}

/// A role few messages hold (`system`) is listed through `messages_by_role` and walked over its
/// own rows: every query finds what the join (each match's row read) finds, alone, with dates
/// and with an agent, and as many hits as the notes written hold its words; a role no message
/// holds finds nothing. The notes lie among older and newer messages of the other roles, which
/// hold the same words.
#[test]
fn a_rare_role_is_listed_and_finds_what_the_join_finds() {
    let (_dir, mut store, _) = generated();
    let t1 = T0 + 10_000 * 1000;
    let mut n = 0i64;
    for round in 0..3 {
        for k in 0..8 {
            let agent = if k % 2 == 0 {
                Agent::Claude
            } else {
                Agent::Codex
            };
            let sid = store
                .write(|w| {
                    w.upsert_session(
                        &SessionRef {
                            agent,
                            external_id: format!("notes-{k}"),
                            parent_external_id: None,
                        },
                        &SessionMeta::default(),
                        &Standard,
                    )
                })
                .unwrap();
            let records: Vec<Record> = (0..8)
                .map(|j| {
                    n += 1;
                    // Two system notes (j 0 and 1) among six assistant answers; a note holds
                    // `delta` when (k + j) % 4 == 0: 4 of the 16 notes a round.
                    let (role, text) = if j < 2 {
                        let word = if (k + j) % 4 == 0 { "delta" } else { "gamma" };
                        (Role::System, format!("alpha {word} note"))
                    } else {
                        (Role::Assistant, "alpha beta delta gamma answer".to_string())
                    };
                    Record::Message(Message {
                        id: format!("n{round}-{k}-{j}"),
                        role,
                        kind: Kind::Text,
                        parts: vec![Part::Text { text }],
                        timestamp: Some(t1 + n * 1000),
                        model: None,
                    })
                })
                .collect();
            store.write(|w| w.apply(sid, records)).unwrap();
        }
    }
    let system = SearchFilter {
        role: Some("system".into()),
        limit: 500,
        ..SearchFilter::default()
    };
    ROLES_LISTED.set(0);
    let count = |q: &str| with_plan(&store, None, q, &system).len();
    assert_eq!(count("delta"), 12);
    assert_eq!(count("gamma"), 36);
    assert_eq!(count("alpha"), 48);
    assert_eq!(count("alpha -gamma"), 12);
    assert_eq!(count("beta"), 0);
    assert_eq!(ROLES_LISTED.get(), 5, "each search listed the role");
    let mid = t1 + 96 * 1000;
    let filters = [
        system.clone(),
        SearchFilter {
            since: Some(mid),
            ..system.clone()
        },
        SearchFilter {
            until: Some(mid),
            ..system.clone()
        },
        SearchFilter {
            agent: Some("claude".into()),
            ..system.clone()
        },
        SearchFilter {
            role: Some("nobody".into()),
            ..system.clone()
        },
        SearchFilter {
            limit: 5,
            ..system.clone()
        },
    ];
    let queries = [
        "alpha",
        "delta",
        "gamma note",
        "\"alpha delta\"",
        "alp*",
        "a*",
        "alpha -delta",
        "delta OR zeta",
        "absent",
    ];
    for f in &filters {
        for q in queries {
            let join = with_plan(&store, Some(ForcedPlan::Join), q, f);
            let default = with_plan(&store, None, q, f);
            assert_same(&default, &join, &format!("default vs join: {q} {f:?}"));
            if f.role.as_deref() == Some("nobody") {
                assert!(default.is_empty());
            }
        }
    }
    // Dates and an agent halve the notes: some of each filter's `delta` notes are found.
    for f in &filters[1..4] {
        let hits = with_plan(&store, None, "delta", f).len();
        assert!(hits > 0 && hits < 12, "{hits} {f:?}");
    }
}

/// A ranking says whether a walk stopped at its bound ([`query::Ranking::newest_only`]):
/// exactly when an alternative of the query has at least [`SEARCH_CANDIDATES`] matches its
/// filter passes, counted here from every match (plain SQL, nothing bounded), under every plan
/// of a filtered search.
#[test]
fn a_ranking_says_when_only_the_newest_matches_were_ranked() {
    let (_dir, store, claude_alpha) = generated();
    assert!(claude_alpha > SEARCH_CANDIDATES, "{claude_alpha}");
    let base = SearchFilter {
        limit: 20,
        ..SearchFilter::default()
    };
    // Matches of `q` at or after `since` (ms; `None`: all).
    let matches = |q: &str, since: Option<i64>| {
        crate::store::queries::every_match_scored(&store, q)
            .unwrap()
            .iter()
            .filter(|m| since.is_none_or(|s| m.3.is_some_and(|t| t >= s)))
            .count()
    };
    let ranking = |plan: Option<ForcedPlan>, q: &str, f: &SearchFilter| {
        FORCED_PLAN.set(plan);
        let r = query::search_ranking(&store, q, f);
        FORCED_PLAN.set(None);
        r.unwrap_or_else(|e| panic!("{q} {f:?}: {e}"))
    };
    let mut seen = [0; 2];
    for (q, alternatives) in [
        ("alpha", &["alpha"][..]),
        ("gamma", &["gamma"]),
        ("delta OR zeta", &["delta", "zeta"]),
        ("alpha OR zeta", &["alpha", "zeta"]),
        ("zeta OR gamma delta", &["zeta", "gamma delta"]),
        ("alpha -beta", &["alpha -beta"]),
        ("gam*", &["gam*"]),
        ("\"delta filler\" OR beta", &["\"delta filler\"", "beta"]),
    ] {
        let over = alternatives
            .iter()
            .any(|a| matches(a, None) >= SEARCH_CANDIDATES);
        let r = ranking(None, q, &base);
        assert!(!r.hits.is_empty(), "{q}");
        assert_eq!(r.newest_only, over, "{q}");
        seen[usize::from(over)] += 1;
    }
    // Under a filter: `alpha` in Claude Code's sessions (over the bound), `gamma` there (under
    // it, as under no filter), and dates: the newest 800 and 2,600 of the 9,600 messages.
    let claude = SearchFilter {
        agent: Some("claude".into()),
        ..base.clone()
    };
    let mut filtered = vec![
        (claude.clone(), "alpha", true),
        (claude.clone(), "gamma", false),
    ];
    for since in [T0 + 8_800 * 1000, T0 + 7_000 * 1000] {
        filtered.push((
            SearchFilter {
                since: Some(since),
                ..base.clone()
            },
            "alpha",
            matches("alpha", Some(since)) >= SEARCH_CANDIDATES,
        ));
    }
    assert_eq!(
        filtered.iter().filter(|f| f.2).count(),
        2,
        "one date range over the bound, one under it"
    );
    for (f, q, over) in &filtered {
        for plan in [
            None,
            Some(ForcedPlan::Join),
            Some(ForcedPlan::List),
            Some(ForcedPlan::Sessions),
            Some(ForcedPlan::SessionsWithin(50)),
        ] {
            let r = ranking(plan, q, f);
            assert!(!r.hits.is_empty(), "{q} {f:?} {plan:?}");
            assert_eq!(r.newest_only, *over, "{q} {f:?} {plan:?}");
        }
    }
    assert!(seen[0] >= 3 && seen[1] >= 3, "{seen:?}");
}
