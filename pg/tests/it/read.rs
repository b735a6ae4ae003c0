//! The PostgreSQL reader against a real PostgreSQL (`MEMTRAIL_TEST_PG_URL`): the same sessions
//! in an SQLite store and in PostgreSQL give the same hits, sessions, snapshots and handoffs.

use crate::corpus::*;
use memtrail_adapters::{Agent, Kind, Message, Part, Role, ToolCall};
use memtrail_pg::PgReader;
use memtrail_runtime::query::{HL_END, HL_START, ListFilter, SearchFilter};
use memtrail_runtime::read::ReadStore;
use memtrail_runtime::{Store, StoreLocation, resume};

/// 2026-11-01T00:00:00Z, in ms.
const T0: i64 = 1_793_491_200_000;
const MIN: i64 = 60_000;

/// The corpus: three sessions whose hits are worked out by hand, and 20 sessions of filler (ten
/// messages each, all holding `weather`).
fn corpus() -> Vec<Session> {
    let bash = ToolCall {
        id: "call-1".into(),
        name: "Bash".into(),
        tool: "shell".into(),
        input: serde_json::json!({"command": "cargo run -- --dry-run"}),
        output: Some("ok, dry run finished".into()),
        is_error: false,
        exit_code: Some(0),
    };
    let mut v = vec![
        session(
            Agent::Claude,
            "aaaa-1111",
            "/p/alpha",
            "fix the config parser",
            vec![
                text(
                    "a0",
                    Role::User,
                    T0,
                    "How do I fix parse_config in src/main.rs?",
                ),
                text(
                    "a1",
                    Role::Assistant,
                    T0 + MIN,
                    "The parse_config function reads config.rs; call HashMap::new first.",
                ),
                text(
                    "a2",
                    Role::User,
                    T0 + 2 * MIN,
                    "Run it with --dry-run please",
                ),
                Message {
                    id: "a3".into(),
                    role: Role::Assistant,
                    kind: Kind::ToolCall,
                    parts: vec![Part::ToolCall(bash)],
                    timestamp: Some(T0 + 3 * MIN),
                    model: Some("claude-opus".into()),
                },
            ],
        ),
        session(
            Agent::Codex,
            "bbbb-2222",
            "/p/beta",
            "locked database",
            vec![
                text(
                    "b0",
                    Role::User,
                    T0 + 10 * MIN,
                    "the database is locked again",
                ),
                text(
                    "b1",
                    Role::Assistant,
                    T0 + 11 * MIN,
                    "database database database locked: retry with a busy timeout",
                ),
                text("b2", Role::User, T0 + 12 * MIN, "日本語のテストです"),
            ],
        ),
        session(
            Agent::Gemini,
            "cccc-3333",
            "/p/alpha/sub",
            "yaml",
            vec![
                text(
                    "c0",
                    Role::User,
                    T0 + 20 * MIN,
                    "configure the parser for yaml, said keith",
                ),
                text(
                    "c1",
                    Role::Assistant,
                    T0 + 21 * MIN,
                    "parsing yaml config works now",
                ),
                text(
                    "c2",
                    Role::User,
                    T0 + 22 * MIN,
                    "generously shared news of the skies with partners: keys, a keyboard and errorlatency",
                ),
            ],
        ),
    ];
    for s in 0..20 {
        let msgs = (0..10)
            .map(|i| {
                let n = s * 10 + i;
                text(
                    &format!("f{n}"),
                    if i % 2 == 0 {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    T0 + (100 + n) * MIN,
                    &format!("the weather today is fine, entry {n}"),
                )
            })
            .collect();
        v.push(session(
            Agent::Claude,
            &format!("ffff-{s:04}"),
            "/p/filler",
            &format!("filler {s}"),
            msgs,
        ));
    }
    v
}

/// The machine id of the store the tests write (this machine).
const HERE: &str = "5f0c3e2a9b1d4c7e8a6f2b3c4d5e6f70";
/// Another machine, labelled `desk`.
const DESK: &str = "0123456789abcdef0123456789abcdef";

/// An SQLite store and a PostgreSQL reader holding [`corpus`]; `None` without a test cluster.
fn both(name: &str) -> Option<(tempfile::TempDir, Store, PgReader)> {
    both_holding(name, &corpus())
}

/// An SQLite store and a PostgreSQL reader holding `sessions`; `None` without a test cluster.
fn both_holding(name: &str, sessions: &[Session]) -> Option<(tempfile::TempDir, Store, PgReader)> {
    let pg = fresh_database(name)?;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    // Pushed with this machine's label: the SQLite store shows its own sessions with it.
    write_both(
        &db,
        &pg,
        HERE,
        memtrail_runtime::machine::local_label(),
        sessions,
    );
    let store = Store::open(StoreLocation::from(&db)).unwrap();
    let reader = PgReader::connect(&pg).unwrap();
    Some((dir, store, reader))
}

fn ids(store: &dyn ReadStore, q: &str, f: &SearchFilter) -> Vec<String> {
    store
        .search(q, f)
        .unwrap()
        .into_iter()
        .map(|h| h.message_id)
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn the_same_queries_find_the_same_messages_in_sqlite_and_postgresql() {
    let Some((_dir, sqlite, pg)) = both("same_hits") else {
        return;
    };
    let all = SearchFilter {
        limit: 500,
        ..SearchFilter::default()
    };
    // (query, the messages that match it, worked out from the corpus)
    let cases: &[(&str, &[&str])] = &[
        // Code identifiers: by the whole identifier and by each part.
        ("parse_config", &["a0", "a1"]),
        ("config.rs", &["a1"]),
        ("HashMap::new", &["a1"]),
        ("hashmap", &["a1"]),
        ("src/main.rs", &["a0"]),
        ("main", &["a0"]),
        ("--dry-run", &["a2", "a3"]),
        ("dry", &["a2", "a3"]),
        // Stemming: `locked` and `lock`, `parsing` and `parse`.
        ("lock", &["b0", "b1"]),
        ("database locked", &["b0", "b1"]),
        ("\"database is locked\"", &["b0"]),
        ("parse", &["a0", "a1", "c1"]),
        // A prefix the stemmer changes (`pars` → `par`) finds the words that begin with it
        // as typed (`parse`, `parser`, `parsing`), not c2's `partners`, which `par*` finds.
        ("pars*", &["a0", "a1", "c0", "c1"]),
        ("par*", &["a0", "a1", "c0", "c1", "c2"]),
        ("partners*", &["c2"]),
        ("pars.*", &["a0", "a1", "c0", "c1"]),
        // `keys` stems to `kei`, found by `key*`; `keith` begins with `kei`, not `key`.
        ("key*", &["c2"]),
        ("kei*", &["c0", "c2"]),
        // `errorlatency` is indexed as `errorlat`, between `errorlate`'s stem and itself.
        ("errorlate*", &["c2"]),
        ("parsing*", &["a0", "a1", "c1"]),
        // The original Porter stemmer on both sides: `news` and `new` (a1's `HashMap::new`),
        // `general` and `generously`.
        ("news", &["a1", "c2"]),
        ("general", &["c2"]),
        ("yaml OR locked", &["b0", "b1", "c0", "c1"]),
        // `config` is a part of `parse_config` (a0) and of `config.rs` (a1); c0's
        // `configure` stems to `configur`.
        ("config -yaml", &["a0", "a1"]),
        ("config NOT yaml", &["a0", "a1"]),
        // An excluded phrase: b0 holds "is locked", b1 does not.
        ("database -\"is locked\"", &["b1"]),
        // CJK: a substring of a run, through the cjk column.
        ("日本", &["b2"]),
        ("テスト", &["b2"]),
        ("nothing-like-this", &[]),
    ];
    for (q, expected) in cases {
        let want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        assert_eq!(sorted(ids(&sqlite, q, &all)), want, "SQLite: {q}");
        assert_eq!(sorted(ids(&pg, q, &all)), want, "PostgreSQL: {q}");
    }
    // Filters: agent, project (and below it), role, time, session.
    let f = |agent: Option<&str>, project: Option<&str>, role: Option<&str>| SearchFilter {
        agent: agent.map(str::to_string),
        project: project.map(str::to_string),
        role: role.map(str::to_string),
        limit: 500,
        ..SearchFilter::default()
    };
    for (q, filter, expected) in [
        ("config", f(Some("claude"), None, None), vec!["a0", "a1"]),
        (
            "config",
            f(None, Some("/p/alpha"), None),
            vec!["a0", "a1", "c1"],
        ),
        ("config", f(None, Some("/p/alpha/sub/"), None), vec!["c1"]),
        ("dry", f(None, None, Some("tool")), vec!["a3"]),
        ("dry", f(None, None, Some("user")), vec!["a2"]),
    ] {
        assert_eq!(sorted(ids(&sqlite, q, &filter)), expected, "SQLite: {q}");
        assert_eq!(sorted(ids(&pg, q, &filter)), expected, "PostgreSQL: {q}");
    }
    let window = SearchFilter {
        since: Some(T0 + MIN),
        until: Some(T0 + 11 * MIN),
        limit: 500,
        ..SearchFilter::default()
    };
    for store in [&sqlite as &dyn ReadStore, &pg] {
        assert_eq!(
            sorted(ids(store, "database OR config", &window)),
            ["a1", "b0", "b1"]
        );
        let in_session = SearchFilter {
            session: Some("bbbb".into()),
            limit: 500,
            ..SearchFilter::default()
        };
        assert_eq!(sorted(ids(store, "database", &in_session)), ["b0", "b1"]);
        assert!(matches!(
            store.search("( ) -", &all),
            Err(memtrail_runtime::Error::Invalid(_))
        ));
    }
}

/// The filtered searches of a database of schema 7 (no `session_bounds`): a reader walks it
/// from its newest match and finds what the SQLite store finds. Migration 8 then gives every
/// session with messages its bound, their largest id exactly; the triggers raise it on an
/// insert and on an update that renumbers a message; the same searches find the same hits.
#[test]
fn filtered_searches_agree_before_and_after_the_sessions_bounds() {
    use memtrail_pg::migrate::{MIGRATIONS, migrate};
    let Some(url) = memtrail_testkit::pg::test_database("scope_bounds") else {
        return;
    };
    let mut pg = memtrail_pg::Pg::connect_url(&url).unwrap();
    migrate(&mut pg, &MIGRATIONS[..7]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    write_both(&db, &url, HERE, "desk", &corpus());
    let sqlite = Store::open(StoreLocation::from(&db)).unwrap();
    let filtered =
        |agent: Option<&str>, session: Option<&str>, project: Option<&str>| SearchFilter {
            agent: agent.map(str::to_string),
            session: session.map(str::to_string),
            project: project.map(str::to_string),
            limit: 500,
            ..SearchFilter::default()
        };
    let cases = [
        (
            "config",
            filtered(Some("claude"), None, None),
            vec!["a0", "a1"],
        ),
        (
            "database",
            filtered(None, Some("bbbb"), None),
            vec!["b0", "b1"],
        ),
        (
            "config",
            filtered(None, None, Some("/p/alpha")),
            vec!["a0", "a1", "c1"],
        ),
        (
            "database",
            filtered(Some("codex"), None, None),
            vec!["b0", "b1"],
        ),
        (
            "weather",
            filtered(Some("codex"), Some("bbbb"), None),
            vec![],
        ),
        ("weather", filtered(Some("gemini"), None, None), vec![]),
    ];
    let check = |reader: &PgReader, when: &str| {
        for (q, f, want) in &cases {
            assert_eq!(sorted(ids(&sqlite, q, f)), *want, "SQLite: {q} {f:?}");
            assert_eq!(sorted(ids(reader, q, f)), *want, "{when}: {q} {f:?}");
        }
    };
    let old = PgReader::connect(&url).unwrap();
    check(&old, "schema 7");
    let report = migrate(&mut pg, MIGRATIONS).unwrap();
    assert_eq!(
        report.applied,
        (8..=MIGRATIONS.len() as i64).collect::<Vec<_>>()
    );
    let q = |sql: &str| -> i64 { pg.block_on(pg.client().query_one(sql, &[])).unwrap().get(0) };
    let off = "SELECT count(*) FROM (SELECT session_uid, max(id) AS mx FROM messages GROUP BY 1) x
               FULL JOIN session_bounds b USING (session_uid)
               WHERE b.last_message_id IS DISTINCT FROM x.mx";
    assert_eq!(
        q(off),
        0,
        "a bound that is not its session's largest message id"
    );
    assert_eq!(q("SELECT count(*) FROM session_bounds"), 23);
    check(&PgReader::connect(&url).unwrap(), "schema 8");
    check(&old, "schema 8, a reader opened at 7");
    // A message renumbered past every other keeps its session's bound above it.
    q(
        "WITH x AS (UPDATE messages SET id = id + 1000000 WHERE ext_id = 'b0' RETURNING 1)
       SELECT count(*) FROM x",
    );
    assert_eq!(q(off), 0, "after an update");
    check(&PgReader::connect(&url).unwrap(), "after an update");
    // A session's bound goes with it; a message written without its session (never by the
    // push) is stored, without a bound.
    q(
        "WITH x AS (DELETE FROM sessions WHERE external_id = 'cccc-3333' RETURNING 1)
       SELECT count(*) FROM x",
    );
    q(
        "WITH x AS (INSERT INTO messages (session_uid, machine_id, ext_id, seq, role, kind, ts,
         model, body, tools, cjk, parts, tsv, rev)
       SELECT 'stray', machine_id, ext_id, seq, role, kind, ts, model, body, tools, cjk, parts,
         tsv, rev FROM messages WHERE ext_id = 'a0' RETURNING 1) SELECT count(*) FROM x",
    );
    assert_eq!(q("SELECT count(*) FROM session_bounds"), 22);
    assert_eq!(
        q("SELECT count(*) FROM session_bounds b WHERE NOT EXISTS
             (SELECT 1 FROM sessions s WHERE s.uid = b.session_uid)"),
        0
    );
}

#[test]
fn the_top_hits_and_their_order_agree() {
    let Some((_dir, sqlite, pg)) = both("top_hits") else {
        return;
    };
    let limit = |n| SearchFilter {
        limit: n,
        ..SearchFilter::default()
    };
    for store in [&sqlite as &dyn ReadStore, &pg] {
        // `database` three times in b1 against once in the shorter b0: b1 first in both.
        assert_eq!(ids(store, "database", &limit(5)), ["b1", "b0"]);
        // 200 equal filler messages: equal relevance, so the newest first (the recency prior,
        // then the row order), f199 down to f180.
        let want: Vec<String> = (180..200).rev().map(|n| format!("f{n}")).collect();
        assert_eq!(ids(store, "weather", &limit(20)), want);
        assert_eq!(ids(store, "weather fine", &limit(20)), want);
    }
    // The hit's fields, as the SQLite store gives them (but the snippet and the score).
    let a = sqlite.search("HashMap::new", &limit(1)).unwrap();
    let b = pg.search("HashMap::new", &limit(1)).unwrap();
    assert_eq!((a.len(), b.len()), (1, 1));
    let (mut a, mut b) = (a[0].clone(), b[0].clone());
    // The same snippet (docs/postgres.md): a text of up to 16 tokens shown whole, a phrase's
    // parts in a row marked as one run.
    assert_eq!(
        a.snippet,
        format!(
            "The parse_config function reads config.rs; call {HL_START}HashMap::new{HL_END} first."
        )
    );
    assert!(a.score > 0.0 && b.score > 0.0);
    (a.score, b.score) = (0.0, 0.0);
    assert_eq!(a, b);
    // An identifier's snippet shows the text as written, the phrase of its parts one run, as
    // SQLite's does.
    let hit = &pg.search("src/main.rs", &limit(1)).unwrap()[0];
    assert_eq!(
        hit.snippet,
        format!("How do I fix parse_config in {HL_START}src/main.rs{HL_END}?")
    );
    assert_eq!(
        sqlite.search("src/main.rs", &limit(1)).unwrap()[0].snippet,
        hit.snippet
    );
    // A CJK hit's snippet comes from the cjk column, its spaces dropped.
    let hit = &pg.search("日本", &limit(1)).unwrap()[0];
    assert_eq!(
        hit.snippet,
        format!("{HL_START}日{HL_END}{HL_START}本{HL_END}語のテストです")
    );
}

#[test]
fn sessions_snapshots_and_handoffs_read_the_same_from_both() {
    let Some((_dir, sqlite, pg)) = both("sessions") else {
        return;
    };
    // The agents an agent filter offers: those with sessions, in the registry's order.
    for s in [&sqlite as &dyn ReadStore, &pg] {
        assert_eq!(
            s.agents_with_sessions().unwrap(),
            [Agent::Claude, Agent::Codex, Agent::Gemini]
        );
    }
    let list = |s: &dyn ReadStore, f: &ListFilter| s.list_sessions(f).unwrap();
    for f in [
        ListFilter {
            limit: 100,
            ..ListFilter::default()
        },
        ListFilter {
            agent: Some("claude".into()),
            limit: 5,
            ..ListFilter::default()
        },
        ListFilter {
            project: Some("/p/alpha".into()),
            limit: 100,
            ..ListFilter::default()
        },
    ] {
        assert_eq!(list(&pg, &f), list(&sqlite, &f));
    }
    let alpha = list(
        &pg,
        &ListFilter {
            project: Some("/p/alpha".into()),
            limit: 100,
            ..ListFilter::default()
        },
    );
    assert_eq!(
        alpha
            .iter()
            .map(|s| s.session_id.as_str())
            .collect::<Vec<_>>(),
        ["cccc-3333", "aaaa-1111"]
    );
    assert_eq!(
        list(
            &pg,
            &ListFilter {
                limit: 100,
                ..ListFilter::default()
            }
        )
        .len(),
        23
    );
    for (id, offset, limit) in [("aaaa", 0, 100), ("aaaa-1111", 2, 1), ("bbbb", 1, 5)] {
        let a = sqlite
            .get_session(id, None, offset, limit, Some(10))
            .unwrap();
        let b = pg.get_session(id, None, offset, limit, Some(10)).unwrap();
        assert_eq!(a, b, "{id}");
    }
    let v = pg.get_session("aaaa", None, 3, 1, Some(4)).unwrap();
    assert_eq!(v.total, 4);
    assert_eq!(
        v.messages[0].tool_calls[0].output.as_deref(),
        Some("ok, \n… [16 more bytes]")
    );
    assert!(matches!(
        pg.get_session("ffff", None, 0, 1, None),
        Err(memtrail_runtime::Error::Invalid(_))
    ));
    assert!(matches!(
        pg.resolve_session("zzzz", None),
        Err(memtrail_runtime::Error::NotFound(_))
    ));
    assert!(pg.has_messages_from("claude", "aaaa-1111", 3).unwrap());
    assert!(!pg.has_messages_from("claude", "aaaa-1111", 4).unwrap());
    // Resume and handoff: the same documents from either store.
    for id in ["aaaa-1111", "bbbb-2222"] {
        let (ra, rb) = (
            sqlite.resolve_session(id, None).unwrap(),
            pg.resolve_session(id, None).unwrap(),
        );
        assert_eq!(
            resume::build_snapshot(&pg, rb, 4096).unwrap().text,
            resume::build_snapshot(&sqlite, ra, 4096).unwrap().text
        );
        assert_eq!(
            resume::handoff(&pg, rb, Agent::Codex).unwrap(),
            resume::handoff(&sqlite, ra, Agent::Codex).unwrap()
        );
        assert_eq!(
            resume::resume_context(&pg, rb, None, Some("database config"), 800)
                .unwrap()
                .text,
            resume::resume_context(&sqlite, ra, None, Some("database config"), 800)
                .unwrap()
                .text
        );
    }
    let latest = |s: &dyn ReadStore, dir: &str| {
        s.latest_session_for_dir(dir, None, None)
            .unwrap()
            .map(|r| s.session_summary(r).unwrap().session_id)
    };
    for s in [&sqlite as &dyn ReadStore, &pg] {
        assert_eq!(
            latest(s, "/p/alpha/sub/deeper").as_deref(),
            Some("cccc-3333")
        );
        assert_eq!(latest(s, "/p/alpha").as_deref(), Some("aaaa-1111"));
        assert_eq!(latest(s, "/p/alphabet"), None);
        assert_eq!(
            s.earlier_sessions_of_dir("/p/alpha/sub", None).unwrap(),
            (2, Some(T0 + 22 * MIN))
        );
    }
}

#[test]
fn a_database_without_memtrail_is_refused_with_what_to_do() {
    let Some(url) = memtrail_testkit::pg::test_database("refused") else {
        return;
    };
    // No memtrail table at all.
    let e = PgReader::connect(&url).err().unwrap().to_string();
    assert!(
        e.starts_with("PostgreSQL: no memtrail tables in postgres://")
            && e.ends_with(": run `memtrail sync --init` with this URL on a machine first"),
        "{e}"
    );
    // The schema of migration 1 only (no full-text search).
    let mut pg = memtrail_pg::Pg::connect_url(&url).unwrap();
    memtrail_pg::migrate::migrate(&mut pg, &memtrail_pg::migrate::MIGRATIONS[..1]).unwrap();
    let e = PgReader::connect(&url).err().unwrap().to_string();
    assert_eq!(
        e,
        "PostgreSQL: this database holds no memtrail store (or one without full-text search): run `memtrail sync --init URL` to create it, then `memtrail sync`"
    );
    // A schema newer than this build's.
    pg.batch_execute(&format!(
        "UPDATE memtrail_meta SET value = '{}' WHERE key = 'schema_version'",
        memtrail_pg::migrate::MIGRATIONS.len() + 1
    ))
    .unwrap();
    let e = PgReader::connect(&url).err().unwrap().to_string();
    assert_eq!(
        e,
        format!(
            "PostgreSQL: the database's memtrail schema is version {}, newer than this memtrail's {}: upgrade memtrail on this machine",
            memtrail_pg::migrate::MIGRATIONS.len() + 1,
            memtrail_pg::migrate::MIGRATIONS.len()
        )
    );
}

#[test]
fn machines_are_labelled_and_filtered_alike() {
    let Some(pg) = fresh_database("machines") else {
        return;
    };
    let here_label = memtrail_runtime::machine::local_label();
    let all = corpus();
    let (mine, theirs): (Vec<Session>, Vec<Session>) = all
        .into_iter()
        .take(3)
        .partition(|s| s.sref.agent != Agent::Gemini);
    // This machine: sessions aaaa and bbbb; the desk: cccc. Both push; this machine pulls.
    let dir = tempfile::tempdir().unwrap();
    write_both(&dir.path().join("here.db"), &pg, HERE, here_label, &mine);
    write_both(&dir.path().join("desk.db"), &pg, DESK, "desk", &theirs);
    let mut here = Store::open(StoreLocation::from(&dir.path().join("here.db"))).unwrap();
    let mut remote = memtrail_pg::Pg::connect_url(&pg).unwrap();
    loop {
        let from = here.pull_position(DESK).unwrap();
        let batch = remote.pull_batch(HERE, DESK, from, 1000).unwrap();
        here.apply_pull(&batch, &memtrail_runtime::records::Standard)
            .unwrap();
        if batch.to_rev == from {
            break;
        }
    }
    let reader = PgReader::connect(&pg).unwrap();
    let everything = ListFilter {
        limit: 100,
        ..ListFilter::default()
    };
    let machine = |name: &str| ListFilter {
        machine: Some(name.into()),
        limit: 100,
        ..ListFilter::default()
    };
    for (n, store) in [&here as &dyn ReadStore, &reader].into_iter().enumerate() {
        let labels: Vec<(String, String)> = store
            .list_sessions(&everything)
            .unwrap()
            .into_iter()
            .map(|s| (s.session_id, s.machine))
            .collect();
        assert_eq!(
            labels,
            [
                ("cccc-3333".to_string(), "desk".to_string()),
                ("bbbb-2222".into(), here_label.into()),
                ("aaaa-1111".into(), here_label.into()),
            ]
        );
        let ids = |f: &ListFilter| -> Vec<String> {
            store
                .list_sessions(f)
                .unwrap()
                .into_iter()
                .map(|s| s.session_id)
                .collect()
        };
        assert_eq!(ids(&machine("desk")), ["cccc-3333"]);
        assert_eq!(ids(&machine(DESK)), ["cccc-3333"]);
        assert_eq!(ids(&machine(here_label)), ["bbbb-2222", "aaaa-1111"]);
        assert_eq!(ids(&machine(HERE)), ["bbbb-2222", "aaaa-1111"]);
        // A name matching no machine is an error listing the machines known: the local store
        // knows this machine and those it pulled from, PostgreSQL those that pushed (by label).
        let known = if n == 0 {
            format!("{here_label} (this machine), desk")
        } else {
            let mut l = ["desk", here_label];
            l.sort();
            l.join(", ")
        };
        let unknown = format!(
            "no machine `nowhere`; the machines known: {known} (give a machine's label or its id)"
        );
        assert_eq!(
            store
                .list_sessions(&machine("nowhere"))
                .unwrap_err()
                .to_string(),
            unknown
        );
        let f = SearchFilter {
            machine: Some("nowhere".into()),
            limit: 50,
            ..SearchFilter::default()
        };
        assert_eq!(store.search("alpha", &f).unwrap_err().to_string(), unknown);
        // Search: the hit's machine, and the filter.
        let search = |m: Option<&str>| -> Vec<(String, String)> {
            let f = SearchFilter {
                machine: m.map(str::to_string),
                limit: 50,
                ..SearchFilter::default()
            };
            let mut v: Vec<(String, String)> = store
                .search("config", &f)
                .unwrap()
                .into_iter()
                .map(|h| (h.message_id, h.machine))
                .collect();
            v.sort();
            v
        };
        let a = |id: &str| (id.to_string(), here_label.to_string());
        let c = |id: &str| (id.to_string(), "desk".to_string());
        assert_eq!(search(None), [a("a0"), a("a1"), c("c1")]);
        assert_eq!(search(Some("desk")), [c("c1")]);
        assert_eq!(search(Some(here_label)), [a("a0"), a("a1")]);
        assert_eq!(
            store
                .get_session("cccc", None, 0, 1, None)
                .unwrap()
                .session
                .machine,
            "desk"
        );
    }
}

/// An `OR` query ranks the newest `SEARCH_CANDIDATES` matches of each of its alternatives, on
/// both stores: the one old message holding a rare word is found below more than that many
/// newer messages holding a common one (`rare OR common`), and an alternative of two words
/// and an exclusion is one alternative (`AND` and `NOT` bind tighter than `OR`). An old
/// message that is among the newest matches of neither alternative is not ranked (the rule
/// that bounds the work), until a filter brings it in.
#[test]
fn or_queries_rank_the_newest_matches_of_each_alternative_on_both_stores() {
    let n = memtrail_runtime::query::SEARCH_CANDIDATES + 300;
    let messages: Vec<Message> = (0..n)
        .map(|i| {
            let body = match i {
                3 => "refactor refactor refactor step",
                5 => "refactor step quokka",
                7 => "refactor step wombat numbat",
                9 => "refactor step wombat numbat echidna",
                _ => "refactor step",
            };
            text(&format!("u{i}"), Role::User, T0 + i as i64 * MIN, body)
        })
        .collect();
    let sessions = [session(Agent::Claude, "orororor", "/p/or", "or", messages)];
    let Some((_dir, sqlite, reader)) = both_holding("or_alternatives", &sessions) else {
        return;
    };
    let first = |store: &dyn ReadStore, q: &str, limit: usize| -> Vec<String> {
        let f = SearchFilter {
            limit,
            ..SearchFilter::default()
        };
        ids(store, q, &f)
    };
    for (name, store) in [
        ("SQLite", &sqlite as &dyn ReadStore),
        ("PostgreSQL", &reader),
    ] {
        assert_eq!(first(store, "quokka OR refactor", 1), ["u5"], "{name}");
        assert_eq!(first(store, "refactor OR quokka", 1), ["u5"], "{name}");
        // `wombat numbat -echidna` is one alternative: u7 only.
        assert_eq!(
            sorted(first(store, "quokka OR wombat numbat -echidna", 10)),
            ["u5", "u7"],
            "{name}"
        );
        // A word after an exclusion is ANDed (FTS5 alone would read `wombat NOT (echidna
        // refactor)`), and an exclusion after `OR` belongs to the next alternative.
        assert_eq!(
            first(store, "wombat -echidna refactor", 10),
            ["u7"],
            "{name}"
        );
        assert_eq!(
            sorted(first(store, "quokka OR -echidna numbat", 10)),
            ["u5", "u7"],
            "{name}"
        );
        // u3 (the highest BM25 of all) is older than both alternatives' newest matches.
        let all = first(store, "refactor OR step", 500);
        assert_eq!(all.len(), 500, "{name}");
        assert!(!all.contains(&"u3".to_string()), "{name}");
        let early = SearchFilter {
            until: Some(T0 + 20 * MIN),
            limit: 500,
            ..SearchFilter::default()
        };
        assert_eq!(ids(store, "refactor OR step", &early).len(), 21, "{name}");
    }
}

#[test]
fn a_stopped_reader_cancels_its_statement_on_the_server_and_sends_no_more() {
    // A search held behind a lock taken by another connection runs until the lock is
    // released; stopping the reader must end it at once (PostgreSQL's cancel request), and
    // every later call of the reader must fail before reaching the server.
    let Some(url) = fresh_database("pg_read_stop") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let label = memtrail_runtime::machine::local_label();
    write_both(&dir.path().join("m.db"), &url, HERE, label, &corpus());
    let mut reader = PgReader::connect(&url).unwrap();
    let stop = reader.make_stoppable();
    let f = SearchFilter {
        limit: 5,
        ..SearchFilter::default()
    };
    assert_eq!(
        ids(&reader, "weather", &f).len(),
        5,
        "searches before the stop"
    );

    let mut locker = memtrail_pg::Pg::connect_url(&url).unwrap();
    let (rt, c) = locker.parts_mut();
    let tx = rt.block_on(c.transaction()).unwrap();
    rt.block_on(tx.batch_execute("LOCK TABLE messages IN ACCESS EXCLUSIVE MODE"))
        .unwrap();

    let (sent, got) = std::sync::mpsc::channel();
    let searching = std::thread::spawn(move || {
        let out = reader.search("weather", &f).map(|h| h.len());
        let after = reader.search("weather", &f).map(|h| h.len());
        sent.send((out, after)).unwrap();
    });
    // Wait until the search waits for the lock on the server.
    let watcher = memtrail_pg::Pg::connect_url(&url).unwrap();
    let mut waiting = false;
    for _ in 0..200 {
        let n: i64 = watcher
            .block_on(watcher.client().query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND wait_event_type = 'Lock'",
                &[],
            ))
            .unwrap()
            .get(0);
        if n > 0 {
            waiting = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(waiting, "the search never waited for the lock");
    stop.stop();
    // Without the cancel, the search would wait for the lock as long as it is held (the
    // transaction stays open until after this check).
    let answer = got.recv_timeout(std::time::Duration::from_secs(30));
    rt.block_on(tx.rollback()).unwrap();
    let (out, after) = answer.expect("the stopped search ran on behind the lock");
    let e = out.unwrap_err().to_string();
    assert!(e.contains("canceling statement due to user request"), "{e}");
    let e = after.unwrap_err().to_string();
    assert!(e.contains("stopped"), "{e}");
    searching.join().unwrap();
    let n: i64 = watcher
        .block_on(watcher.client().query_one(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
               AND backend_type = 'client backend'",
            &[],
        ))
        .unwrap()
        .get(0);
    assert_eq!(n, 0, "a statement still runs on the server");
}
