//! `--store postgres://…` end to end, against a real PostgreSQL (`MEMTRAIL_TEST_PG_URL`, skipped
//! without it unless `MEMTRAIL_REQUIRE_PG=1`): a store imported from the fixtures is synced to
//! PostgreSQL (`memtrail sync --init`), then `search`, `sessions list`, `sessions show`, `resume`, `handoff` and the MCP
//! server (a real MCP client, the Python `mcp` SDK) answer the same from either store; the
//! commands that write refuse a PostgreSQL store and never show its password.

use crate::common::{repo_root, resolve_python};
use crate::support::{Sandbox, claude_line, session_id, stop_payload, web_on, web_request};
use serde_json::Value;

/// A sandbox whose store holds the fixture projects (imported) and was synced, as machine
/// `laptop`, to a fresh PostgreSQL database (`memtrail sync --init URL --label laptop`), and
/// that database's URL; `None` without a test cluster.
fn pushed(name: &str) -> Option<(Sandbox, String)> {
    let url = memtrail_testkit::pg::test_database(name)?;
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    sb.json(&["import", "--json"]);
    crate::support::sync_init(&sb, &url);
    Some((sb, url))
}

/// `v` without what differs between the stores by design (docs/postgres.md): each hit's
/// `score` and `snippet`, and the order of hits of different relevance (BM25 and `ts_rank`
/// weigh term frequency and length differently): the hits sorted by session and message.
fn without_scores(mut v: Value) -> Value {
    if let Some(hits) = v["hits"].as_array_mut() {
        for h in hits.iter_mut() {
            let h = h.as_object_mut().unwrap();
            h.remove("score");
            h.remove("snippet");
        }
        hits.sort_by_key(|h| (h["session_id"].to_string(), h["message_id"].to_string()));
    }
    v
}

#[test]
fn read_commands_answer_the_same_from_sqlite_and_postgresql() {
    let Some((sb, url)) = pushed("cli_read") else {
        return;
    };
    let db = sb.db();
    let db = db.to_str().unwrap();
    let list = sb.json(&["--db", db, "sessions", "list", "--json", "--limit", "100"]);
    let sessions = list["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{list}");
    assert!(sessions.iter().all(|s| s["machine"] == "laptop"), "{list}");
    assert_eq!(
        sb.json(&[
            "--store", &url, "sessions", "list", "--json", "--limit", "100"
        ]),
        list
    );
    let first = &sessions[0];
    let sid = first["session_id"].as_str().unwrap();
    // A word of the fixtures' titles ("Find the TODO comments in this project").
    let word = "comments";
    for args in [
        vec!["search", word, "--json"],
        vec!["search", word, "--json", "--session", sid],
        vec!["search", word, "--json", "--machine", "laptop"],
        vec!["search", "TODO", "--json", "--role", "assistant"],
    ] {
        let local = without_scores(sb.json(&[&["--db", db][..], &args].concat()));
        assert!(!local["hits"].as_array().unwrap().is_empty(), "{args:?}");
        let remote = without_scores(sb.json(&[&["--store", url.as_str()][..], &args].concat()));
        assert_eq!(remote, local, "{args:?}");
    }
    // A machine nobody knows: an error listing the machines, from either store.
    for store in [vec!["--store", url.as_str()], vec!["--db", db]] {
        let out = sb
            .cmd()
            .args(&store)
            .args(["search", word, "--json", "--machine", "desk"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{store:?}");
        let known = if store[0] == "--db" {
            "laptop (this machine)"
        } else {
            "laptop"
        };
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "memtrail: no machine `desk`; the machines known: {known} (give a machine's label or its id)\n"
            ),
            "{store:?}"
        );
    }
    for args in [
        vec!["sessions", "show", sid, "--json"],
        vec!["resume", sid, "--json"],
    ] {
        assert_eq!(
            sb.json(&[&["--store", url.as_str()][..], &args].concat()),
            sb.json(&[&["--db", db][..], &args].concat()),
            "{args:?}"
        );
    }
    let text = |args: &[&str]| {
        let out = sb.cmd().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(
        text(&["--store", &url, "handoff", sid, "--to", "codex"]),
        text(&["--db", db, "handoff", sid, "--to", "codex"])
    );
    assert_eq!(
        text(&["--store", &url, "sessions", "show", sid]),
        text(&["--db", db, "sessions", "show", sid])
    );
    // MEMTRAIL_STORE names the store as --store does.
    let out = sb
        .cmd()
        .env("MEMTRAIL_STORE", &url)
        .args(["sessions", "list", "--json", "--limit", "100"])
        .output()
        .unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap(), list);
}

#[test]
fn write_commands_refuse_a_postgresql_store_and_never_show_its_password() {
    let Some((sb, url)) = pushed("cli_refuse") else {
        return;
    };
    // The test cluster trusts every connection: the password is never checked, only carried.
    let with_password = url.replacen("postgres@", "postgres:hunter2@", 1);
    // Masked (every error memtrail prints is redacted too, which keeps the `****`).
    let masked = url.replacen("postgres@", "postgres:****@", 1);
    let before = sb.sessions();
    for args in [
        vec!["import"],
        vec!["repair"],
        vec!["purge", "--older-than", "1d", "--yes"],
        vec!["redact", "--rescan"],
        vec!["sessions", "delete", "x", "--yes"],
        vec!["sessions", "capture", "x"],
        vec!["uninstall", "--purge", "--yes"],
        // `memtrail sync` says it in its own words (the test of status and sync below).
    ] {
        let out = sb
            .cmd()
            .args(["--store", &with_password])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert_eq!(out.stdout, b"", "{args:?}");
        assert_eq!(
            err.trim_end(),
            format!(
                "memtrail: memtrail {} writes the local SQLite store, and the store named ({masked}, by --store or MEMTRAIL_STORE) is a PostgreSQL database, which memtrail only reads; run it without --store (unset MEMTRAIL_STORE) or with --db PATH, and `memtrail sync` carries the local store to PostgreSQL",
                match args[0] {
                    "sessions" => format!("sessions {}", args[1]),
                    "uninstall" => "uninstall --purge".into(),
                    a => a.to_string(),
                }
            ),
            "{args:?}"
        );
        assert!(!err.contains("hunter2"));
    }
    assert_eq!(sb.sessions(), before, "nothing written");
    // A store that cannot be reached: the error names it, password masked.
    let port = url.rsplit(':').next().unwrap().split('/').next().unwrap();
    let closed = with_password.replacen(&format!(":{port}/"), ":1/", 1);
    let out = sb
        .cmd()
        .args(["--store", &closed, "search", "x"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.starts_with(&format!(
            "memtrail: cannot read the store at {}",
            closed.replacen("hunter2", "****", 1)
        )),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
    // A hook ignores a PostgreSQL MEMTRAIL_STORE (a shell set up to query the team server,
    // whose agents inherit it): it captures into the local store.
    let sid = session_id(7);
    let t = sb.transcript("hooked", &sid);
    let lines: String = (0..2)
        .map(|i| claude_line(&sid, "/home/user/hooked", i) + "\n")
        .collect();
    std::fs::write(&t, lines).unwrap();
    let hook = sb
        .acmd()
        .env("MEMTRAIL_STORE", &with_password)
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&t, &sid, "/home/user/hooked"))
        .output()
        .unwrap();
    assert!(hook.status.success());
    assert_eq!(hook.stdout, b"");
    assert_eq!(
        sb.sessions(),
        before + 1,
        "the hook captured into the local store"
    );
}

#[test]
fn the_mcp_server_reads_a_postgresql_store_for_a_real_client() {
    let Some((sb, url)) = pushed("mcp_read") else {
        return;
    };
    let Some(python) = crate::common::mcp_python_or_skip() else {
        return;
    };
    let list = sb.json(&["sessions", "list", "--json"]);
    let sid = list["sessions"][0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let calls = serde_json::json!([
        ["list_sessions", {"limit": 5}],
        ["list_sessions", {"machine": "laptop", "limit": 5}],
        ["search", {"query": "TODO comment", "limit": 5}],
        ["search", {"query": "TODO comment", "machine": "desk"}],
        ["get_session", {"session_id": sid, "limit": 3}],
        ["timeline", {"session_id": sid, "limit": 5}],
        ["resume_context", {"session_id": sid, "query": "tests", "budget_tokens": 500}],
        ["remember", {"text": "a note", "session_id": sid}],
    ])
    .to_string();
    let run = |store: &[&str]| -> Value {
        // The client runs with the sandbox's environment (the server inherits it).
        let base = sb.cmd();
        let mut c = std::process::Command::new(&python);
        c.env_clear()
            .envs(base.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
            .env("MEMTRAIL_MCP_NOTES", "any")
            .arg(repo_root().join("tests/e2e/mcp_client.py"))
            .arg(crate::common::memtrail_bin());
        for a in store {
            c.arg(format!("--server-arg={a}"));
        }
        let out = c.args(["--calls", &calls]).output().unwrap();
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let db = sb.db();
    let local = run(&["--db", db.to_str().unwrap()]);
    let remote = run(&["--store", &url]);
    let calls_of = |v: &Value| v["calls"].as_array().unwrap().clone();
    let (local, remote) = (calls_of(&local), calls_of(&remote));
    assert_eq!(remote.len(), 8);
    for (i, (l, r)) in local.iter().zip(&remote).enumerate() {
        let tool = r["tool"].as_str().unwrap();
        match tool {
            "remember" => {
                assert_eq!(l["is_error"], false, "{l}");
                assert_eq!(r["is_error"], true, "{r}");
                assert_eq!(
                    r["text"].as_str().unwrap(),
                    format!(
                        "remember writes the local store, and this server reads the PostgreSQL store {url} (read only); run the agent's memtrail MCP server without --store to keep notes"
                    )
                );
            }
            // The machine `desk` pushed nothing: an error listing the machines known.
            "search" if i == 3 => {
                for (v, known) in [(l, "laptop (this machine)"), (r, "laptop")] {
                    assert_eq!(v["is_error"], true, "{v}");
                    assert_eq!(
                        v["text"].as_str().unwrap(),
                        format!(
                            "no machine `desk`; the machines known: {known} (give a machine's label or its id)"
                        )
                    );
                }
            }
            "search" => {
                assert_eq!(r["is_error"], false, "{r}");
                assert_eq!(
                    without_scores(r["result"].clone()),
                    without_scores(l["result"].clone()),
                    "call {i}"
                );
            }
            // Event ids are positions in PostgreSQL, row ids in SQLite (docs/postgres.md).
            "timeline" => {
                let ids = |v: &Value| -> Vec<Value> {
                    v["result"]["events"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|e| {
                            let mut e = e.clone();
                            e.as_object_mut().unwrap().remove("id");
                            e
                        })
                        .collect()
                };
                assert_eq!(ids(r), ids(l), "call {i}");
                assert_eq!(r["result"]["total"], l["result"]["total"]);
            }
            _ => assert_eq!(r, l, "call {i} ({tool})"),
        }
    }
    assert!(
        !remote[2]["result"]["hits"].as_array().unwrap().is_empty(),
        "{}",
        remote[2]
    );
    assert_eq!(remote[3]["is_error"], true);
    assert_eq!(
        remote[1]["result"]["sessions"],
        remote[0]["result"]["sessions"]
    );
}

#[test]
fn status_and_sync_keep_to_the_local_store_and_an_empty_database_says_how_it_fills() {
    let Some(url) = memtrail_testkit::pg::test_database("cli_empty") else {
        return;
    };
    let mut pg = memtrail_pg::Pg::connect_url(&url).unwrap();
    memtrail_pg::migrate::migrate(&mut pg, memtrail_pg::migrate::MIGRATIONS).unwrap();
    let sb = Sandbox::new();
    sb.install_fixture_projects();
    sb.json(&["import", "--json"]);
    let run = |env: bool, args: &[&str]| {
        let mut c = sb.cmd();
        if env {
            c.env("MEMTRAIL_STORE", &url);
        } else {
            c.args(["--store", &url]);
        }
        c.args(args).output().unwrap()
    };
    // `status` reports on this machine's local store, however PostgreSQL is named; given
    // `--store` it says so, MEMTRAIL_STORE is left aside quietly.
    let local = sb.json(&["status", "--json"]);
    for env in [true, false] {
        let out = run(env, &["status", "--json"]);
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            if env {
                ""
            } else {
                "memtrail: note: `status` reports on this machine (its hooks and its local store); \
                 the PostgreSQL store is not read (`memtrail sync` shows its state)\n"
            },
            "MEMTRAIL_STORE: {env}"
        );
        assert!(out.status.success());
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["store"], local["store"], "MEMTRAIL_STORE: {env}");
        assert_eq!(
            v["store"]["path"],
            sb.db().display().to_string(),
            "MEMTRAIL_STORE: {env}"
        );
    }
    let shown = memtrail_runtime::StoreLocation::parse(&url).to_string();
    let out = run(false, &["sync"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "memtrail: `memtrail sync` works on this machine's local store; leave out --store (it \
             names {shown}), or give the local store's path with --db PATH\n"
        )
    );
    let out = run(false, &["sessions", "list"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "No sessions yet: the PostgreSQL database {shown} holds none. `memtrail sync` on a \
             machine fills it.\n"
        )
    );
}

/// An AWS access key id and a GitHub token, as a teammate could write them into PostgreSQL
/// directly (not through memtrail, which redacts before it pushes).
const AK: &str = "AKIAQ7WERTYUI4PASDFG";
const GH: &str = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5";

/// Rows holding [`AK`] and [`GH`] in every text column the reader returns, written with SQL
/// into the store at `url`: session `evil-0001` of machine `lab-AK`, a user message, an
/// assistant message with a tool call, an event.
fn write_secret_rows(url: &str) {
    let pg = memtrail_pg::Pg::connect_url(url).unwrap();
    let parts1 = serde_json::json!([
        {"type": "text", "text": format!("platypus body key {AK} token {GH}")},
        {"type": "thinking", "text": format!("think {GH}")},
    ]);
    let parts2 = serde_json::json!([
        {"type": "text", "text": "platypus call"},
        {"type": "tool_call", "id": format!("call-{AK}"), "name": format!("Bash-{GH}"),
         "tool": format!("shell-{AK}"), "input": {"command": format!("echo {GH}")},
         "output": format!("out {AK}"), "is_error": false},
    ]);
    pg.batch_execute(&format!(
        "INSERT INTO machines (id, label, first_push_at, last_push_at)
         VALUES ('eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', 'lab-{AK}', 1, 1);
         INSERT INTO sessions (uid, machine_id, agent, external_id, project_dir, title, model,
                               git_branch, agent_version, started_at, updated_at, message_count,
                               rev, messages_rev)
         VALUES ('e0000000000000000000000000000001', 'eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', 'claude',
                 'evil-0001', '/home/evil/proj-{GH}', 'Title {AK} and {GH}', 'model-{AK}',
                 'branch-{GH}', '9', 1796029200000, 1796029300000, 2,
                 nextval('memtrail_rev'), nextval('memtrail_rev'));
         INSERT INTO messages (session_uid, machine_id, ext_id, seq, role, kind, ts, model, body,
                               tools, cjk, parts, rev)
         VALUES ('e0000000000000000000000000000001', 'eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', 'm1', 0,
                 'user', 'text', 1796029200000, 'mod-{AK}', 'platypus body key {AK} token {GH}',
                 '', NULL, '{parts1}', nextval('memtrail_rev')),
                ('e0000000000000000000000000000001', 'eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', 'm2', 1,
                 'assistant', 'tool_call', 1796029201000, NULL, 'platypus call',
                 'Bash echo {GH}', NULL, '{parts2}', nextval('memtrail_rev'));
         -- The full-text vectors as memtrail would compute them (migration 2's rule, which
         -- the client's agrees with: pg/src/tsv.rs), of the unredacted text.
         UPDATE messages SET tsv =
             setweight(to_tsvector('memtrail', memtrail_split(body)), 'A')
             || setweight(to_tsvector('memtrail', memtrail_split(tools)), 'B')
           WHERE session_uid = 'e0000000000000000000000000000001';
         INSERT INTO events (session_uid, message_ext_id, ordinal, seq, category, action,
                             priority, subject, detail, call_id, tool, ts)
         VALUES ('e0000000000000000000000000000001', 'm2', 0, 1, 'file', 'edit', 1,
                 '/src/{AK}', 'detail {GH}', 'call-{AK}', 'Edit-{GH}', 1796029201000);"
    ))
    .unwrap();
}

/// `text` holds neither secret, nor the part of the token after `ghp_` (a fragment cut there).
fn assert_no_secret(what: &str, text: &str) {
    for s in [AK, GH, &GH[4..]] {
        assert!(!text.contains(s), "{what} shows {s}: {text}");
    }
}

const RED_AK: &str = "[redacted:aws_access_key]";
const RED_GH: &str = "[redacted:github_token]";

#[test]
fn a_postgresql_store_never_shows_a_secret_written_into_it_directly() {
    let Some(url) = memtrail_testkit::pg::test_database("redact_read") else {
        return;
    };
    let sb = Sandbox::new();
    crate::support::sync_init(&sb, &url);
    write_secret_rows(&url);
    let store = |args: &[&str]| sb.json(&[&["--store", url.as_str()][..], args].concat());

    let list = store(&["sessions", "list", "--json"]);
    let s = &list["sessions"][0];
    assert_eq!(s["title"], format!("Title {RED_AK} and {RED_GH}"), "{list}");
    assert_eq!(s["project"], format!("/home/evil/proj-{RED_GH}"));
    assert_eq!(s["model"], format!("model-{RED_AK}"));
    assert_eq!(s["git_branch"], format!("branch-{RED_GH}"));
    assert_eq!(s["machine"], format!("lab-{RED_AK}"));

    let show = store(&["sessions", "show", "evil-0001", "--json"]);
    let m = &show["messages"];
    assert_eq!(
        m[0]["text"],
        format!("platypus body key {RED_AK} token {RED_GH}"),
        "{show}"
    );
    assert_eq!(m[0]["thinking"], format!("think {RED_GH}"));
    assert_eq!(m[0]["model"], format!("mod-{RED_AK}"));
    let call = &m[1]["tool_calls"][0];
    assert_eq!(call["id"], format!("call-{RED_AK}"), "{show}");
    assert_eq!(call["name"], format!("Bash-{RED_GH}"));
    assert_eq!(call["tool"], format!("shell-{RED_AK}"));
    assert_eq!(call["input"]["command"], format!("echo {RED_GH}"));
    assert_eq!(call["output"], format!("out {RED_AK}"));
    assert_no_secret("sessions show", &show.to_string());

    // The snippet is of the redacted text, its highlight markers kept (`--json` shows them as
    // `**`).
    let hits = store(&["search", "platypus", "--json"]);
    let hit = hits["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["message_id"] == "m1")
        .unwrap_or_else(|| panic!("{hits}"));
    assert_eq!(
        hit["snippet"],
        format!("**platypus** body key {RED_AK} token {RED_GH}"),
        "{hits}"
    );
    assert_eq!(hit["title"], format!("Title {RED_AK} and {RED_GH}"));
    assert_eq!(hit["machine"], format!("lab-{RED_AK}"));
    assert_no_secret("search", &hits.to_string());
    // Searching for the secret itself finds the message, never shows the secret.
    // (The key is in m1's body, the token in m1's body and m2's tool calls.)
    for (q, n) in [(AK, 1), (&GH[4..], 2), ("ghp", 2), ("echo", 1)] {
        let hits = store(&["search", q, "--json"]);
        assert_eq!(hits["hits"].as_array().unwrap().len(), n, "{q}: {hits}");
        // (The answer repeats the query, typed by the user.)
        assert_no_secret(q, &hits["hits"].to_string());
    }
    for args in [
        vec!["resume", "evil-0001", "--json"],
        vec!["sessions", "show", "evil-0001"],
        vec!["handoff", "evil-0001", "--to", "codex"],
        vec!["search", "platypus"],
    ] {
        let out = sb
            .cmd()
            .args(["--store", &url])
            .args(&args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("[redacted:"), "{args:?}: {text}");
        assert_no_secret(&format!("{args:?}"), &text);
    }

    // An ambiguous prefix lists the sessions' ids, redacted.
    memtrail_pg::Pg::connect_url(&url)
        .unwrap()
        .batch_execute(&format!(
            "INSERT INTO sessions (uid, machine_id, agent, external_id, started_at, updated_at,
                                   message_count, rev)
             VALUES ('e0000000000000000000000000000002', 'eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee',
                     'claude', 'evil-{AK}', 1, 1, 0, nextval('memtrail_rev'))"
        ))
        .unwrap();
    let out = sb
        .cmd()
        .args(["--store", &url, "sessions", "show", "evil-"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "`evil-` matches several sessions: evil-0001, evil-{RED_AK}"
        )),
        "{err}"
    );
    assert_no_secret("an ambiguous prefix", &err);

    let Ok(python) = resolve_python(
        "import mcp, sys; print(sys.executable)",
        "has no `mcp` module (scripts/e2e-deps)",
    ) else {
        assert_ne!(std::env::var("MEMTRAIL_REQUIRE_E2E").as_deref(), Ok("1"));
        eprintln!("skipped the MCP part: no Python `mcp`");
        return;
    };
    let calls = serde_json::json!([
        ["list_sessions", {"limit": 5}],
        ["search", {"query": "platypus", "limit": 5}],
        ["search", {"query": "ghp", "limit": 5}],
        ["get_session", {"session_id": "evil-0001"}],
        ["timeline", {"session_id": "evil-0001"}],
        ["resume_context", {"session_id": "evil-0001", "query": "platypus"}],
    ])
    .to_string();
    let base = sb.cmd();
    let out = std::process::Command::new(&python)
        .env_clear()
        .envs(base.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .arg(repo_root().join("tests/e2e/mcp_client.py"))
        .arg(crate::common::memtrail_bin())
        .arg(format!("--server-arg=--store={url}"))
        .args(["--calls", &calls])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls = v["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 6, "{v}");
    for c in calls {
        assert_eq!(c["is_error"], false, "{c}");
        assert_no_secret(c["tool"].as_str().unwrap(), &c.to_string());
    }
    assert_eq!(
        calls[0]["result"]["sessions"][0]["title"],
        format!("Title {RED_AK} and {RED_GH}")
    );
    assert_eq!(
        calls[3]["result"]["messages"][0]["text"],
        format!("platypus body key {RED_AK} token {RED_GH}")
    );
    let events = calls[4]["result"]["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{}", calls[4]);
    assert_eq!(events[0]["subject"], format!("/src/{RED_AK}"));
    assert_eq!(events[0]["detail"], format!("detail {RED_GH}"));
    assert_eq!(events[0]["tool"], format!("Edit-{RED_GH}"));
}

#[test]
fn a_postgresql_store_without_memtrail_tables_or_with_a_newer_schema_is_refused() {
    let Some(url) = memtrail_testkit::pg::test_database("schema_read") else {
        return;
    };
    let sb = Sandbox::new();
    let refused = |args: &[&str]| -> String {
        let out = sb
            .cmd()
            .args(["--store", &url])
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        assert_eq!(out.stdout, b"", "{args:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    // An empty database.
    for args in [&["sessions", "list"][..], &["search", "x"]] {
        let err = refused(args);
        assert!(
            err.contains("no memtrail tables in postgres://")
                && err.contains(": run `memtrail sync --init` with this URL on a machine first"),
            "{err}"
        );
    }
    crate::support::sync_init(&sb, &url);
    let supported = memtrail_pg::migrate::MIGRATIONS.len();
    memtrail_pg::Pg::connect_url(&url)
        .unwrap()
        .batch_execute(&format!(
            "UPDATE memtrail_meta SET value = '{}' WHERE key = 'schema_version'",
            supported + 1
        ))
        .unwrap();
    let newer = format!(
        "the database's memtrail schema is version {}, newer than this memtrail's {supported}: upgrade memtrail on this machine",
        supported + 1
    );
    for args in [&["sessions", "list"][..], &["search", "x"]] {
        let err = refused(args);
        assert!(err.contains(&newer), "{err}");
    }
    // `memtrail sync` gives the same message.
    let out = sb.cmd().args(["sync"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&newer), "{err}");
}

#[test]
fn the_web_page_reads_a_postgresql_store_and_deletes_nothing_there() {
    use std::io::BufRead;
    let Some((sb, url)) = pushed("web_page") else {
        return;
    };
    let list = sb.json(&["--store", &url, "sessions", "list", "--json"]);
    let sid = list["sessions"][0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut web = sb
        .cmd()
        .args(["--store", &url, "web", "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(web.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let mut second = String::new();
    out.read_line(&mut second).unwrap();
    let port = crate::support::web_port(&first);
    let (code, sessions) = crate::support::web_request(port, "/sessions", None);
    let (scode, search) = crate::support::web_request(port, "/search?q=comments", None);
    let (pcode, page) = crate::support::web_request(port, &format!("/session?id={sid}"), None);
    let (dcode, confirm) =
        crate::support::web_request(port, &format!("/session/delete?id={sid}"), None);
    let (xcode, _) =
        crate::support::web_request(port, "/session/delete", Some(&format!("id={sid}&csrf=x")));
    // SIGTERM stops it cleanly: its PostgreSQL readers (each with its own runtime) are dropped
    // inside the server's runtime, which panicked before.
    assert!(
        std::process::Command::new("kill")
            .arg(web.id().to_string())
            .status()
            .unwrap()
            .success()
    );
    let stopped = web.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&stopped.stderr);
    assert!(stopped.status.success(), "{:?}: {said}", stopped.status);
    assert!(!said.contains("panicked"), "{said}");
    assert_eq!(code, 200);
    assert_eq!(list["sessions"].as_array().unwrap().len(), 2);
    assert_eq!(sessions.matches("<tr").count(), 1 + 2, "{sessions}");
    assert!(sessions.contains(&sid));
    assert!(sessions.contains("<td>laptop</td>"), "{sessions}");
    assert_eq!(scode, 200);
    assert!(search.contains("<mark>comments</mark>"), "{search}");
    assert_eq!(pcode, 200);
    assert!(page.contains(&format!("<code>{sid}</code>")), "{page}");
    // No delete button, and the confirmation says why; a forged POST is refused first.
    assert!(!page.contains("Delete…"));
    assert_eq!(dcode, 200);
    assert!(confirm.contains("This store is read-only here"));
    assert!(!confirm.contains("name=\"csrf\""));
    assert_eq!(xcode, 403);
    // The password of the URL is never printed.
    if let Some(pw) = url
        .split_once("://")
        .and_then(|(_, r)| r.split_once('@'))
        .and_then(|(u, _)| u.split_once(':'))
        .map(|(_, p)| p.to_string())
    {
        assert!(
            !second.contains(&pw) && !first.contains(&pw),
            "{first}{second}"
        );
    }
}

/// The statements of `memtrail`'s connections other than this one's that wait for a lock.
fn memtrail_waiting(watcher: &memtrail_pg::Pg) -> i64 {
    watcher
        .block_on(watcher.client().query_one(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND application_name = 'memtrail'
               AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'",
            &[],
        ))
        .unwrap()
        .get(0)
}

/// A search of `memtrail web --store postgres://…` whose browser goes away is cancelled on
/// the server, not left to run (here: behind a lock, for as long as the lock is held); the
/// page goes on answering.
#[test]
fn the_web_page_cancels_the_postgresql_search_of_an_abandoned_request() {
    use std::io::Write;
    let Some((sb, url)) = pushed("web_cancel") else {
        return;
    };
    let (web, port) = web_on(&sb, &["--store", &url]);
    let _web = crate::support::KillOnDrop(web);
    // A first request opens a reader and checks the schema before the lock is taken.
    assert_eq!(web_request(port, "/search?q=comments", None).0, 200);
    let mut locker = memtrail_pg::Pg::connect_url(&url).unwrap();
    let watcher = memtrail_pg::Pg::connect_url(&url).unwrap();
    let (rt, c) = locker.parts_mut();
    let tx = rt.block_on(c.transaction()).unwrap();
    rt.block_on(tx.batch_execute("LOCK TABLE messages IN ACCESS EXCLUSIVE MODE"))
        .unwrap();
    let mut browser = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        browser,
        "GET /search?q=comments HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    )
    .unwrap();
    let waits = |want: bool| {
        (0..400).any(|_| {
            let found = memtrail_waiting(&watcher) > 0;
            if found != want {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            found == want
        })
    };
    assert!(waits(true), "the search never waited for the lock");
    // The browser goes away; the lock is still held.
    drop(browser);
    let cancelled = waits(false);
    rt.block_on(tx.rollback()).unwrap();
    assert!(cancelled, "the abandoned search still waits on the server");
    let (code, page) = web_request(port, "/search?q=comments", None);
    assert_eq!(code, 200);
    assert!(page.contains("<mark>comments</mark>"), "{page}");
}

/// `memtrail export --store postgres://…`: every format gives what the local store gives (the
/// session synced from it), and `--all` pages through the PostgreSQL sessions.
#[test]
fn export_reads_a_postgresql_store_as_it_reads_sqlite() {
    let Some((sb, url)) = pushed("export_pg") else {
        return;
    };
    let sid = "3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1e83";
    let run = |args: &[&str]| -> String {
        let out = sb.cmd().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    for format in ["md", "jsonl", "json", "html"] {
        let local = run(&["export", sid, "--format", format]);
        let remote = run(&["--store", &url, "export", sid, "--format", format]);
        if format == "json" {
            // The events' row ids are each store's own; everything else is the same.
            let strip = |t: &str| -> Value {
                let mut v: Value = serde_json::from_str(t).unwrap();
                for e in v["events"].as_array_mut().unwrap() {
                    e.as_object_mut().unwrap().remove("id");
                }
                v
            };
            assert_eq!(strip(&local), strip(&remote));
        } else {
            assert_eq!(local, remote, "--format {format}");
        }
    }
    let local = run(&["export", "--all", "--format", "jsonl"]);
    let remote = run(&["--store", &url, "export", "--all", "--format", "jsonl"]);
    assert_eq!(local.lines().count(), remote.lines().count());
    assert!(!remote.is_empty());
}

/// The analytics page answers the same from PostgreSQL (its tables aggregated for the range)
/// as from the SQLite store it was synced from (the summary tables): the demo session and its
/// sub-agent, on 2026-03-03 within 10:00:00–10:00:23 UTC: one main session, 3 + 3 messages
/// (tool results are folded into their calls), one 5-minute slot of /home/user/demo, a Task
/// and a Grep call.
#[test]
fn the_analytics_page_is_the_same_from_postgresql() {
    let Some((sb, url)) = pushed("web_analytics") else {
        return;
    };
    let path = "/analytics?until=2026-03-03&days=7";
    let mut main = Vec::new();
    for args in [vec![], vec!["--store", url.as_str()]] {
        let (mut web, port) = crate::support::web_on(&sb, &args);
        let (code, page) = crate::support::web_request(port, path, None);
        let _ = web.kill();
        let _ = web.wait();
        assert_eq!(code, 200, "{args:?}: {page}");
        let start = page.find("<main").unwrap();
        let end = page.find("</main>").unwrap();
        main.push(page[start..end].to_string());
    }
    assert_eq!(main[0], main[1]);
    let pg = &main[1];
    for shown in [
        "<tbody><tr><td><span class=\"badge agent\">claude</span></td><td class=\"num\">1</td><td class=\"num\">6</td><td class=\"num\">1</td></tr></tbody>",
        "<title>2026-03-03 · claude: 6 messages</title>",
        "<title>2026-03-03 · claude-opus-4-6: 2 messages</title>",
        "<title>2026-03-03 · claude-haiku-4-5-20251001: 2 messages</title>",
        "<td class=\"path\">/home/user/demo</td>",
        "data-ms=\"300000\">5 min</td>",
        "<code>Grep</code>",
        "<code>Task</code>",
        "No file edited.",
    ] {
        assert!(pg.contains(shown), "missing {shown}: {pg}");
    }
}

/// The `<main>` of the analytics page at `path` from the local SQLite store and from the
/// PostgreSQL store at `url`, each served by its own `memtrail web`; they must be equal.
fn analytics_both(sb: &Sandbox, url: &str, path: &str) -> String {
    let mut main = Vec::new();
    for args in [vec![], vec!["--store", url]] {
        let (mut web, port) = web_on(sb, &args);
        let (code, page) = web_request(port, path, None);
        let _ = web.kill();
        let _ = web.wait();
        assert_eq!(code, 200, "{args:?}: {page}");
        let start = page.find("<main").unwrap();
        let end = page.find("</main>").unwrap();
        main.push(page[start..end].to_string());
    }
    assert_eq!(main[0], main[1], "{path}");
    main.pop().unwrap()
}

/// The analytics page from PostgreSQL (its summaries kept by the pushes) stays the same as from
/// the SQLite store it was synced from, through a redaction and a delete: the fixture projects
/// and a session that edits `src/ACME-123456.rs` (the `grow` fixture, 2026-03-02) are pushed;
/// then a `[privacy] redact` rule for `ACME-[0-9]{6}`, `redact --rescan` and a sync rewrite the
/// edited path in PostgreSQL's summaries too; then `sessions delete` of that session and a
/// sync take its figures out of both.
#[test]
fn the_analytics_page_stays_the_same_from_postgresql_through_a_redaction_and_a_delete() {
    let Some(url) = memtrail_testkit::pg::test_database("web_analytics_steps") else {
        return;
    };
    let sb = Sandbox::new();
    let projects = sb.install_fixture_projects();
    let grow = std::fs::read_to_string(repo_root().join("fixtures/claude/grow-turn3.jsonl"))
        .unwrap()
        .replace(
            "/home/user/demo/src/lib.rs",
            "/home/user/demo/src/ACME-123456.rs",
        );
    std::fs::write(
        projects.join("-home-user-demo/7b1f0c2e-5d4a-4e8b-9c3f-2a6d8e1b4f70.jsonl"),
        grow,
    )
    .unwrap();
    sb.json(&["import", "--json"]);
    crate::support::sync_init(&sb, &url);
    let path = "/analytics?until=2026-03-31&days=60";
    let page = analytics_both(&sb, &url, path);
    for shown in [
        "<td class=\"path\">/home/user/demo/src/ACME-123456.rs</td>",
        "<td class=\"path\">/home/user/demo/README.ar.md</td>",
        "<title>2026-03-02 · claude",
        "<title>2026-03-03 · claude: 6 messages</title>",
    ] {
        assert!(page.contains(shown), "missing {shown}: {page}");
    }
    let pg = memtrail_pg::Pg::connect_url(&url).unwrap();
    let count = |sql: &str| -> i64 { pg.block_on(pg.client().query_one(sql, &[])).unwrap().get(0) };
    let acme = "SELECT count(*) FROM file_edits WHERE path LIKE '%ACME-123456%'";
    assert_eq!(count(acme), 1);

    let out = sb
        .cmd()
        .args([
            "config",
            "set",
            "privacy.redact",
            r#"[{ name = "acme-ticket", pattern = "ACME-[0-9]{6}" }]"#,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rescan = sb.json(&["redact", "--rescan", "--json"]);
    assert!(
        rescan["messages_changed"].as_u64().unwrap() >= 1,
        "{rescan}"
    );
    sb.json(&["sync", "--json"]);
    let page = analytics_both(&sb, &url, path);
    assert!(!page.contains("ACME-123456"), "{page}");
    assert!(
        page.contains("<td class=\"path\">/home/user/demo/src/[redacted:acme-ticket].rs</td>"),
        "{page}"
    );
    assert_eq!(
        count(acme),
        0,
        "the redaction reached PostgreSQL's summaries"
    );
    assert_eq!(
        count("SELECT count(*) FROM file_edits WHERE path LIKE '%[redacted:acme-ticket]%'"),
        1
    );

    sb.json(&["sessions", "delete", "7b1f0c2e", "--yes", "--json"]);
    sb.json(&["sync", "--json"]);
    let page = analytics_both(&sb, &url, path);
    assert!(!page.contains("2026-03-02 · "), "{page}");
    assert!(page.contains("No file edited."), "{page}");
    assert!(page.contains("<title>2026-03-03 · claude: 6 messages</title>"));
    assert_eq!(count("SELECT count(*) FROM file_edits"), 0);
}

/// A search filtered by sessions walks the matches from the scope's newest message
/// (`session_bounds`, PostgreSQL migration 8): the bound must rise with every push of
/// a session's new messages, else they would fall outside their own scope. Here a session's
/// new turn is pushed after every other session's messages: filtered by its agent and by the
/// session, the search finds it, as the SQLite store does; and every session's bound is at
/// least its largest message id.
#[test]
fn a_filtered_search_finds_a_sessions_messages_pushed_after_the_others() {
    let Some((sb, url)) = pushed("scope_bound") else {
        return;
    };
    let sid = session_id(9);
    let cwd = "/home/user/bounded";
    let t = sb.transcript("bounded", &sid);
    let line = |i: u64| {
        let l = claude_line(&sid, cwd, i);
        if i >= 2 {
            l.replace("the module", "the zebraquartz module")
                .replace("it now", "zebraquartz now")
        } else {
            l
        }
    };
    let hook = |upto: u64| {
        let lines: String = (0..upto).map(|i| line(i) + "\n").collect();
        std::fs::write(&t, lines).unwrap();
        let out = sb
            .acmd()
            .args(["hook", "claude"])
            .write_stdin(stop_payload(&t, &sid, cwd))
            .output()
            .unwrap();
        assert!(out.status.success());
        let out = sb.cmd().args(["sync"]).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    hook(2);
    // Another session's messages after the first push of this one.
    let other = session_id(10);
    let t2 = sb.transcript("other", &other);
    std::fs::write(
        &t2,
        (0..6)
            .map(|i| claude_line(&other, "/home/user/other", i) + "\n")
            .collect::<String>(),
    )
    .unwrap();
    let out = sb
        .acmd()
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&t2, &other, "/home/user/other"))
        .output()
        .unwrap();
    assert!(out.status.success());
    hook(4);
    let db = sb.db();
    let db = db.to_str().unwrap();
    for args in [
        vec!["search", "zebraquartz", "--json", "--agent", "claude"],
        vec!["search", "zebraquartz", "--json", "--session", &sid],
        vec!["search", "zebraquartz", "--json", "--project", cwd],
    ] {
        let local = without_scores(sb.json(&[&["--db", db][..], &args].concat()));
        assert_eq!(
            local["hits"].as_array().unwrap().len(),
            2,
            "{args:?}: {local}"
        );
        let remote = without_scores(sb.json(&[&["--store", url.as_str()][..], &args].concat()));
        assert_eq!(remote, local, "{args:?}");
    }
    let pg = memtrail_pg::Pg::connect_url(&url).unwrap();
    let below: i64 = pg
        .block_on(pg.client().query_one(
            "SELECT count(*) FROM sessions s LEFT JOIN session_bounds b ON b.session_uid = s.uid
             WHERE EXISTS (SELECT 1 FROM messages m
               WHERE m.session_uid = s.uid
                 AND (b.last_message_id IS NULL OR m.id > b.last_message_id))",
            &[],
        ))
        .unwrap()
        .get(0);
    assert_eq!(
        below, 0,
        "a session whose bound is below one of its messages"
    );
}

/// Issue 18: a PostgreSQL store ranks a search's newest 1024 matches (per alternative, among
/// those its filters pass) as the SQLite store does, and says the same when that was not
/// every match (`newest_only`, the note on stderr).
#[test]
fn a_postgresql_search_says_when_only_its_newest_matches_were_ranked() {
    let Some(url) = memtrail_testkit::pg::test_database("newest_only") else {
        return;
    };
    let sb = Sandbox::new();
    crate::support::long_session(&sb);
    crate::support::sync_init(&sb, &url);
    let db = sb.db();
    let db = db.to_str().unwrap();
    for &(q, filters, newest_only) in crate::support::NEWEST_ONLY_CASES {
        for store in [["--db", db], ["--store", url.as_str()]] {
            let v = sb.json(&[&store[..], &["search", q, "--json"], filters].concat());
            assert!(!v["hits"].as_array().unwrap().is_empty(), "{q} {store:?}");
            assert_eq!(
                v["newest_only"], newest_only,
                "{q} {filters:?} {store:?}: {v}"
            );
        }
    }
    let out = sb
        .cmd()
        .args(["--store", &url, "search", "module"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("only the newest 1024 matches were ranked"),
        "{out:?}"
    );
}
