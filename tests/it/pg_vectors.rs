//! Search by meaning on a PostgreSQL store (issue 14 on the backend of issue 13), against a real
//! PostgreSQL with pgvector (`MEMTRAIL_TEST_PG_URL`, `MEMTRAIL_TEST_PG_VECTOR=1`): the vectors
//! travel with `memtrail sync` (also those made after their message was pushed), a rewritten
//! or deleted message's vectors do not survive in PostgreSQL, `--store postgres://… search
//! --mode semantic|hybrid` and the MCP `search` tool rank by meaning there as on SQLite, and a
//! database without pgvector syncs without vectors and says so.
//!
//! The model is the tiny 4-dimension one ([`crate::support::write_tiny_model`]): each of its
//! words points along one of four axes (databases, billing, directory listings, themes), so
//! every vector below is known exactly.

use crate::support::{
    Sandbox, fork_session, hit_positions as hits, write_session, write_tiny_model,
};
use memtrail_pg::Pg;
use serde_json::{Value, json};

const TOPICS: [&str; 4] = [
    "Postgres keeps refusing connections after the container restarts.",
    "The invoice total is wrong when a discount and VAT both apply.",
    "I ran ls -la in the project root and saw the hidden files.",
    "Add a dark theme toggle to the settings page.",
];

/// The model's id as recorded with its vectors.
const MODEL: &str = "minilm-l6-static@1/4";

fn pgvector() -> bool {
    let on = std::env::var("MEMTRAIL_TEST_PG_VECTOR").is_ok_and(|v| v == "1");
    if !on {
        eprintln!(
            "note: MEMTRAIL_TEST_PG_VECTOR is not 1 (no pgvector in the test cluster); skipped"
        );
    }
    on
}

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    write_tiny_model(
        &sb.home
            .join(".local/share/memtrail/models/minilm-l6-static"),
    );
    write_session(&sb, "s1", &TOPICS);
    sb
}

fn count(pg: &Pg, sql: &str) -> i64 {
    pg.block_on(pg.client().query_one(sql, &[])).unwrap().get(0)
}

/// The stored vector of message `ext` in pgvector's text form (`None`: no row).
fn vector_of(pg: &Pg, ext: &str) -> Option<String> {
    pg.block_on(pg.client().query_opt(
        "SELECT embedding::text FROM message_vectors WHERE ext_id = $1 AND chunk = 0",
        &[&ext],
    ))
    .unwrap()
    .map(|r| r.get(0))
}

#[test]
fn vectors_travel_with_sync_and_postgresql_searches_by_meaning() {
    let Some(url) = memtrail_testkit::pg::test_database("pg_vectors") else {
        return;
    };
    if !pgvector() {
        return;
    }
    let sb = sandbox();
    // Imported without vectors and pushed: PostgreSQL holds the messages, no vector.
    sb.json(&["import", "--no-embed", "--json"]);
    let init = sb.json(&["sync", "--init", &url, "--label", "laptop", "--json"]);
    assert_eq!(init["sync"]["pushed"]["messages"], 4, "{init}");
    let pg = Pg::connect_url(&url).unwrap();
    assert_eq!(count(&pg, "SELECT count(*) FROM message_vectors"), 0);
    let store = ["--store", url.as_str()];
    let on_pg = |args: &[&str]| sb.json(&[&store[..], args, &["--json"]].concat());

    // No vector of the installed model there yet: an asked mode says what to do, the default
    // is lexical (nothing shares a word with the query).
    let out = sb
        .cmd()
        .args(store)
        .args(["search", "--mode", "semantic", "directory listing"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("holds no vectors of {MODEL}"))
            && err.contains("`memtrail embed`, then `memtrail sync`"),
        "{err}"
    );
    assert_eq!(hits(&on_pg(&["search", "directory listing"])), vec![]);

    // Embedded after the push (as `import` and the MCP server do): the next sync carries the
    // vectors alone, not the messages again.
    assert_eq!(sb.json(&["embed", "--json"])["embedded"], 4);
    let r = sb.json(&["sync", "--json"]);
    assert_eq!(r["sync"]["pushed"]["messages"], 0, "{r}");
    assert_eq!(r["sync"]["pushed"]["vectors"], 4, "{r}");
    assert_eq!(
        count(
            &pg,
            &format!("SELECT count(*) FROM message_vectors WHERE model = '{MODEL}'")
        ),
        4
    );
    // Each message's words lie on one axis: its unit vector, int8 127 × 1/127, is exactly
    // that axis in half precision.
    assert_eq!(vector_of(&pg, "s1-0").as_deref(), Some("[1,0,0,0]"));
    assert_eq!(vector_of(&pg, "s1-1").as_deref(), Some("[0,1,0,0]"));
    assert_eq!(vector_of(&pg, "s1-2").as_deref(), Some("[0,0,1,0]"));
    assert_eq!(vector_of(&pg, "s1-3").as_deref(), Some("[0,0,0,1]"));
    // A second sync has nothing to send.
    let again = sb.json(&["sync", "--json"]);
    assert_eq!(again["sync"]["pushed"]["vectors"], 0, "{again}");

    // Paraphrases (no word in common with the message they seek): the same first hit on
    // PostgreSQL as on SQLite, by meaning and hybrid; the default is hybrid now.
    for (mode, q, want) in [
        ("semantic", "database server rejects clients", 0),
        ("semantic", "billing amount", 1),
        ("hybrid", "directory listing", 2),
        ("hybrid", "appearance colors", 3),
    ] {
        let remote = on_pg(&["search", "--mode", mode, q]);
        let local = sb.json(&["search", "--mode", mode, q, "--json"]);
        assert_eq!(
            hits(&remote)[0],
            ("s1".to_string(), want),
            "{mode} {q}: {remote}"
        );
        assert_eq!(hits(&remote)[0], hits(&local)[0], "{mode} {q}: {local}");
    }
    let default = on_pg(&["search", "directory listing"]);
    assert_eq!(hits(&default)[0], ("s1".to_string(), 2), "{default}");
    // An exact word still ranks its message first in hybrid, with the word marked.
    let exact = on_pg(&["search", "--mode", "hybrid", "invoice"]);
    assert_eq!(hits(&exact)[0], ("s1".to_string(), 1), "{exact}");
    assert!(
        exact["hits"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("**invoice**"),
        "{exact}"
    );
    // A semantic hit's snippet is the message's start.
    let sem = on_pg(&[
        "search",
        "--mode",
        "semantic",
        "billing amount",
        "--limit",
        "1",
    ]);
    assert_eq!(
        sem["hits"][0]["snippet"],
        "The invoice total is wrong when a discount and VAT both apply."
    );
    assert_eq!(hits(&sem).len(), 1);
    // The filters apply to the search by meaning.
    for (filter, found) in [
        (vec!["--agent", "codex"], false),
        (vec!["--agent", "claude"], true),
        (vec!["--since", "2026-02-01"], false),
        (vec!["--until", "2025-12-31"], false),
        (vec!["--project", "/home/user/app"], true),
        (vec!["--project", "/elsewhere"], false),
        (vec!["--machine", "laptop"], true),
        (vec!["--role", "assistant"], false),
    ] {
        let args = [
            &["search", "--mode", "semantic"][..],
            &filter,
            &["billing amount"],
        ]
        .concat();
        let v = on_pg(&args);
        assert_eq!(!hits(&v).is_empty(), found, "{filter:?}: {v}");
        if found {
            assert_eq!(hits(&v)[0], ("s1".to_string(), 1), "{filter:?}: {v}");
        }
    }
    // An excluded word leaves its messages out of a search by meaning (and of hybrid) on
    // PostgreSQL as on SQLite: message 1 holds "VAT", message 0 "Postgres".
    for (mode, q, gone) in [
        ("semantic", "billing amount -vat", vec![1]),
        ("hybrid", "billing amount NOT vat -postgres", vec![0, 1]),
    ] {
        let remote = on_pg(&["search", "--mode", mode, q]);
        let local = sb.json(&["search", "--mode", mode, q, "--json"]);
        let left: Vec<i64> = (0..4).filter(|i| !gone.contains(i)).collect();
        // The messages left all score 0 by meaning (another axis): their order is a tie.
        for v in [&remote, &local] {
            let mut got: Vec<i64> = hits(v).into_iter().map(|h| h.1).collect();
            got.sort();
            assert_eq!(got, left, "{mode} {q}: {v}");
        }
    }

    // The MCP server on the PostgreSQL store, from the Python `mcp` client: mode hybrid and
    // semantic, and the default (hybrid: the database holds the installed model's vectors).
    if let Some(python) = crate::common::mcp_python_or_skip() {
        let calls = json!([
            ["search", {"query": "directory listing", "mode": "hybrid"}],
            ["search", {"query": "billing amount", "mode": "semantic", "limit": 1}],
            ["search", {"query": "database server rejects clients"}],
            ["search", {"query": "directory listing", "mode": "lexical"}],
            ["search", {"query": "billing amount", "mode": "semantic", "agent": "codex"}],
        ])
        .to_string();
        let base = sb.cmd();
        let out = std::process::Command::new(&python)
            .env_clear()
            .envs(base.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
            .arg(crate::common::repo_root().join("tests/e2e/mcp_client.py"))
            .arg(crate::common::memtrail_bin())
            .arg(format!("--server-arg=--store={url}"))
            .args(["--calls", &calls])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let c = v["calls"].as_array().unwrap();
        for call in c {
            assert_eq!(call["is_error"], false, "{v:#}");
        }
        assert_eq!(c[0]["result"]["mode"], "hybrid", "{v:#}");
        assert_eq!(hits(&c[0]["result"])[0], ("s1".to_string(), 2), "{v:#}");
        assert_eq!(c[1]["result"]["mode"], "semantic");
        assert_eq!(hits(&c[1]["result"]), vec![("s1".to_string(), 1)], "{v:#}");
        assert_eq!(c[2]["result"]["mode"], "hybrid", "{v:#}");
        assert_eq!(hits(&c[2]["result"])[0], ("s1".to_string(), 0), "{v:#}");
        assert_eq!(c[3]["result"]["mode"], "lexical");
        assert_eq!(hits(&c[3]["result"]), vec![]);
        assert_eq!(hits(&c[4]["result"]), vec![], "{v:#}");
    }

    // The web page on the PostgreSQL store: its modes by meaning rank there too.
    let (mut web, port) = crate::support::web_on(&sb, &store);
    let (hcode, hybrid) =
        crate::support::web_request(port, "/search?q=directory+listing&mode=hybrid", None);
    let (scode, semantic) =
        crate::support::web_request(port, "/search?q=billing+amount&mode=semantic", None);
    let _ = web.kill();
    let _ = web.wait();
    assert_eq!(hcode, 200, "{hybrid}");
    let first = hybrid
        .split_once("<p class=\"snippet\">")
        .map(|x| x.1)
        .expect(&hybrid);
    assert!(first.starts_with("I ran ls -la"), "{hybrid}");
    assert_eq!(scode, 200, "{semantic}");
    // The first hit's snippet is the billing message (the titles are the session's).
    let first = semantic
        .split_once("<p class=\"snippet\">")
        .map(|x| x.1)
        .expect(&semantic);
    assert!(
        first.starts_with("The invoice total is wrong"),
        "{semantic}"
    );
    assert!(semantic.contains("Ranked by meaning."), "{semantic}");

    // A rewritten message (a late tool result, a redaction) loses its vectors here and waits
    // to be embedded again: its old vector is removed from PostgreSQL with the new text.
    let c = rusqlite::Connection::open(sb.db()).unwrap();
    memtrail_runtime::store::register_sql_functions(&c).unwrap();
    let changed = c
        .execute(
            "UPDATE messages SET body = 'Pick the colors of the appearance toggle.' \
             WHERE ext_id = 's1-1'",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(c);
    let r = sb.json(&["sync", "--json"]);
    assert_eq!(r["sync"]["pushed"]["messages"], 1, "{r}");
    assert_eq!(vector_of(&pg, "s1-1"), None);
    let billing = on_pg(&["search", "--mode", "semantic", "billing amount"]);
    assert!(
        !hits(&billing).contains(&("s1".to_string(), 1)),
        "{billing}"
    );
    // Embedded again: its new vector (the themes' axis) reaches PostgreSQL.
    assert_eq!(sb.json(&["embed", "--json"])["embedded"], 1);
    sb.json(&["sync", "--json"]);
    assert_eq!(vector_of(&pg, "s1-1").as_deref(), Some("[0,0,0,1]"));

    // A deleted session's vectors go with it.
    sb.json(&["sessions", "delete", "s1", "--yes", "--json"]);
    sb.json(&["sync", "--json"]);
    assert_eq!(count(&pg, "SELECT count(*) FROM message_vectors"), 0);
    assert_eq!(count(&pg, "SELECT count(*) FROM messages"), 0);
}

#[test]
fn without_pgvector_sync_skips_the_vectors_and_sends_them_once_it_is_created() {
    let Some(url) = memtrail_testkit::pg::test_database("pg_no_vector") else {
        return;
    };
    if !pgvector() {
        return;
    }
    // A role that owns its database but may not create pgvector (not a trusted extension).
    let db = url.rsplit('/').next().unwrap().to_string();
    let admin = Pg::connect_url(&url).unwrap();
    let role = format!("r_{db}");
    admin
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN; ALTER DATABASE {db} OWNER TO {role}"
        ))
        .unwrap();
    let hostport = url.split('@').nth(1).unwrap().split('/').next().unwrap();
    let user_url = format!("postgres://{role}@{hostport}/{db}?sslmode=disable");

    let sb = sandbox();
    sb.json(&["import", "--json"]);
    let out = crate::support::sync_init(&sb, &user_url);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("4 message vectors not pushed: the database has no pgvector")
            .count(),
        1,
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("CREATE EXTENSION vector") && stdout.contains("lexical search only"),
        "{stdout}"
    );
    assert_eq!(
        count(&admin, "SELECT count(*) FROM messages"),
        4,
        "the messages were pushed"
    );
    let store = ["--store", user_url.as_str()];
    // Lexical search works; semantic says why it cannot.
    let lex = sb.json(&[&store[..], &["search", "invoice", "--json"]].concat());
    assert_eq!(hits(&lex), vec![("s1".to_string(), 1)]);
    let out = sb
        .cmd()
        .args(store)
        .args(["search", "--mode", "hybrid", "billing amount"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("has no pgvector") && err.contains("CREATE EXTENSION vector"),
        "{err}"
    );

    // An administrator creates the extension: the next sync makes the table and sends the
    // vectors made before.
    admin.batch_execute("CREATE EXTENSION vector").unwrap();
    let r = sb.json(&["sync", "--json"]);
    assert_eq!(r["sync"]["pushed"]["vectors"], 4, "{r}");
    assert_eq!(count(&admin, "SELECT count(*) FROM message_vectors"), 4);
    let sem = sb.json(
        &[
            &store[..],
            &["search", "--mode", "semantic", "billing amount", "--json"],
        ]
        .concat(),
    );
    assert_eq!(hits(&sem)[0], ("s1".to_string(), 1), "{sem}");
}

/// A forked session's copies of a message (same `uuid`, time and text in another transcript)
/// have the same vector: PostgreSQL shows each once by meaning and hybrid, the same copy as
/// the SQLite store (the newest), and a message of the same text with an id of its own stays.
#[test]
fn a_forked_sessions_copies_are_shown_once_by_meaning_on_both_stores() {
    let Some(url) = memtrail_testkit::pg::test_database("pg_vectors_fork") else {
        return;
    };
    if !pgvector() {
        return;
    }
    let sb = sandbox();
    fork_session(&sb, "s1", "s1-fork");
    write_session(&sb, "s2", &[TOPICS[2]]);
    assert_eq!(sb.json(&["import", "--json"])["embedded"]["messages"], 9);
    let init = sb.json(&["sync", "--init", &url, "--label", "laptop", "--json"]);
    assert_eq!(init["sync"]["pushed"]["vectors"], 9, "{init}");
    for mode in ["semantic", "hybrid"] {
        for q in ["directory listing", "hidden files"] {
            let args = ["search", "--mode", mode, q, "--limit", "10", "--json"];
            let local = hits(&sb.json(&args));
            let pg = hits(&sb.json(&[&["--store", url.as_str()][..], &args[..]].concat()));
            // Four distinct messages of s1 (one copy each) and s2's own.
            assert_eq!(pg.len(), 5, "{mode} {q}: {pg:?}");
            let ls: Vec<&(String, i64)> = pg.iter().filter(|(s, i)| s == "s2" || *i == 2).collect();
            assert_eq!(ls.len(), 2, "{mode} {q}: {pg:?}");
            // The same messages on both stores (which copy, and the order of equal scores,
            // aside: the stores number their rows each in its own order).
            let same = |hits: &[(String, i64)]| {
                let mut v: Vec<(String, i64)> = hits
                    .iter()
                    .map(|(s, i)| (s.replace("s1-fork", "s1"), *i))
                    .collect();
                v.sort();
                v
            };
            let (a, b) = (same(&local), same(&pg));
            assert_eq!(local.len(), 5, "{mode} {q}: {local:?}");
            assert_eq!(a, b, "{mode} {q}: SQLite {local:?}, PostgreSQL {pg:?}");
        }
    }

    // Copies take rows of the depth PostgreSQL reads (4 chunks a hit): nine copies of the
    // invoice prompt, the nearest to "billing amount" (every other message is orthogonal to
    // it), still leave room for a second hit of `--limit 2`.
    for n in 2..=8 {
        fork_session(&sb, "s1", &format!("s1-fork{n}"));
    }
    sb.json(&["import", "--json"]);
    let r = sb.json(&["sync", "--json"]);
    assert_eq!(r["sync"]["pushed"]["vectors"], 28, "{r}");
    let two = hits(&sb.json(&[
        "--store",
        &url,
        "search",
        "--mode",
        "semantic",
        "billing amount",
        "--limit",
        "2",
        "--json",
    ]));
    assert_eq!(two.len(), 2, "{two:?}");
    assert_eq!(two[0].1, 1, "{two:?}");
    assert_ne!(two[1].1, 1, "{two:?}");
}

/// A message captured after sync was set up and embedded before the next push has two outbox
/// entries, its own and its vectors': the push sends its vectors once. (Sent twice, PostgreSQL
/// refused the whole push, "ON CONFLICT DO UPDATE command cannot affect row a second time",
/// and every later push with it, until this was fixed.)
#[test]
fn a_message_embedded_before_its_first_push_sends_its_vectors_once() {
    let Some(url) = memtrail_testkit::pg::test_database("pg_vectors_once") else {
        return;
    };
    if !pgvector() {
        return;
    }
    let sb = sandbox();
    sb.json(&["import", "--json"]);
    sb.json(&["sync", "--init", &url, "--label", "laptop", "--json"]);
    // Captured and embedded (`import` embeds what it brought in), not pushed yet.
    write_session(&sb, "s3", &TOPICS[..2]);
    let imp = sb.json(&["import", "--json"]);
    assert_eq!(imp["embedded"]["messages"], 2, "{imp}");
    let r = sb.json(&["sync", "--json"]);
    assert_eq!(r["sync"]["pushed"]["messages"], 2, "{r}");
    assert_eq!(r["sync"]["pushed"]["vectors"], 2, "{r}");
    let pg = Pg::connect_url(&url).unwrap();
    assert_eq!(count(&pg, "SELECT count(*) FROM message_vectors"), 6);
    // Nothing is left to send.
    let again = sb.json(&["sync", "--json"]);
    assert_eq!(again["sync"]["pushed"]["vectors"], 0, "{again}");
    assert_eq!(again["sync"]["pushed"]["messages"], 0, "{again}");
}
