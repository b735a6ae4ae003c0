//! `memtrail sync` end to end: the real binary, sandboxed HOMEs (one per machine, each with its
//! own store), a real PostgreSQL (`MEMTRAIL_TEST_PG_URL`, a database per test). Four machines
//! sync concurrently and each then finds the others' sessions offline; PostgreSQL holds exactly
//! the union of the machines' own sessions (every column of every table compared); syncs killed
//! with SIGKILL at random points, or cut off by the database, lose and double nothing; deletions
//! and redactions propagate.

use crate::support::{Sandbox, claude_line, session_id, stop_payload};
use memtrail_pg::{Pg, session_uid};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Output};
use std::time::Duration;

/// A machine: a sandboxed HOME with its own store and config.
struct Machine {
    sb: Sandbox,
    label: String,
}

impl Machine {
    fn new(label: &str) -> Machine {
        Machine {
            sb: Sandbox::new(),
            label: label.to_string(),
        }
    }

    /// `memtrail ARGS` in this machine's HOME, with `MEMTRAIL_SYNC_BATCH=batch`.
    fn cmd(&self, args: &[&str], batch: usize) -> std::process::Command {
        let mut c = self.sb.cmd();
        c.args(args).env("MEMTRAIL_SYNC_BATCH", batch.to_string());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args, 1000).output().unwrap()
    }

    /// `memtrail ARGS --json`, which must succeed.
    fn json(&self, args: &[&str]) -> Value {
        self.sb.json(args)
    }

    fn spawn_sync(&self, batch: usize) -> Child {
        self.cmd(&["sync", "--json"], batch)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn config(&self) -> PathBuf {
        self.sb.home.join(".config/memtrail/config.toml")
    }

    /// `[sync] machine` of the config.
    fn id(&self) -> String {
        let text = std::fs::read_to_string(self.config()).unwrap();
        let doc: toml_edit::DocumentMut = text.parse().unwrap();
        doc["sync"]["machine"].as_str().unwrap().to_string()
    }

    /// `memtrail sync --init URL --label LABEL`, which must succeed.
    fn init(&self, url: &str) {
        let out = self.run(&["sync", "--init", url, "--label", &self.label]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `memtrail sync --init URL --json` in batches of `batch` messages, which must succeed:
    /// its JSON.
    fn init_json(&self, url: &str, batch: usize) -> Value {
        let out = self
            .cmd(
                &["sync", "--init", url, "--label", &self.label, "--json"],
                batch,
            )
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Marks a background sync as started just now, so that the hook's turn ends start none
    /// for autosync's interval (the test's own syncs are then the only ones).
    fn no_autosync(&self) {
        let stamp = self.sb.home.join(".local/state/memtrail/sync-started");
        std::fs::create_dir_all(stamp.parent().unwrap()).unwrap();
        std::fs::write(&stamp, b"0").unwrap();
    }

    /// Points the config's URL somewhere nothing listens (as if the database were gone).
    fn point_nowhere(&self) {
        let text = std::fs::read_to_string(self.config()).unwrap();
        let mut doc: toml_edit::DocumentMut = text.parse().unwrap();
        doc["sync"]["url"] =
            toml_edit::value("postgres://nobody:pw-nowhere@127.0.0.1:1/memtrail?sslmode=disable");
        std::fs::write(self.config(), doc.to_string()).unwrap();
    }
}

/// A fresh database of the test cluster for test `name` (`memtrail_testkit::pg::test_database`),
/// its URL with `sslmode=disable`; `None` when the tests run without PostgreSQL.
fn database(name: &str) -> Option<String> {
    memtrail_testkit::pg::test_database(name).map(|u| format!("{u}?sslmode=disable"))
}

/// A Claude Code session of `lines` lines brought in through the real Stop hook; returns its id.
fn hook_session(m: &Machine, n: u32, lines: u64) -> String {
    let sid = session_id(n);
    let cwd = format!("/home/user/{}", m.label);
    let t = m.sb.transcript(&m.label, &sid);
    let text: String = (0..lines)
        .map(|i| claude_line(&sid, &cwd, i) + "\n")
        .collect();
    std::fs::write(&t, text).unwrap();
    m.sb.acmd()
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&t, &sid, &cwd))
        .assert()
        .success();
    sid
}

/// Appends `more` lines to a hook session and runs the Stop hook again (a new turn).
fn grow_session(m: &Machine, n: u32, from: u64, more: u64) {
    let sid = session_id(n);
    let cwd = format!("/home/user/{}", m.label);
    let t = m.sb.transcript(&m.label, &sid);
    let text: String = (from..from + more)
        .map(|i| claude_line(&sid, &cwd, i) + "\n")
        .collect();
    memtrail_testkit::append(&t, text.as_bytes());
    m.sb.acmd()
        .args(["hook", "claude"])
        .write_stdin(stop_payload(&t, &sid, &cwd))
        .assert()
        .success();
}

/// The project's continuity fixtures (Claude Code, Codex CLI, Gemini CLI, Cursor, VS Code
/// transcripts) whose index is `k` modulo `of`, put where each agent keeps them, then
/// `memtrail import`. Returns how many transcripts it placed.
fn import_fixtures(m: &Machine, k: usize, of: usize) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/continuity");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".jsonl") && !f.starts_with("opencode"))
        .collect();
    files.sort();
    let mut placed = 0;
    for (i, f) in files.iter().enumerate() {
        if i % of != k {
            continue;
        }
        let (scenario, name) = f.split_once("--").unwrap();
        let (agent, topic) = scenario.split_once('-').unwrap();
        let dst = match agent {
            "claude" => format!(".claude/projects/-home-user-{topic}/{name}"),
            "codex" => format!(".codex/sessions/2026/03/02/{name}"),
            "gemini" => format!(".gemini/tmp/{topic}/chats/{name}"),
            "cursor" => format!(".cursor/projects/home-user-{topic}/agent-transcripts/{name}"),
            "vscode" => format!(
                ".config/Code/User/workspaceStorage/{topic}0/GitHub.copilot-chat/transcripts/{name}"
            ),
            other => panic!("fixture of {other}"),
        };
        let dst = m.sb.home.join(dst);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(dir.join(f), dst).unwrap();
        placed += 1;
    }
    let out = m.run(&["import"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    placed
}

/// Canonical rows (`table: {json, keys sorted}`) of a store's sessions: its own (`pulled` false:
/// origin `''`, machine `own`) or the pulled ones (origin = their machine), keyed and shaped as
/// PostgreSQL's tables are (see [`pg_rows`]).
fn store_rows(db: &Path, own: &str, pulled: bool) -> Vec<String> {
    let c = rusqlite::Connection::open(db).unwrap();
    memtrail_runtime::store::register_sql_functions(&c).unwrap();
    let filter = if pulled {
        "s.origin <> ''"
    } else {
        "s.origin = ''"
    };
    let session_cols = "'agent', s.agent, 'external_id', s.external_id, 'origin', s.origin";
    let queries = [
        (
            "sessions",
            format!(
                "SELECT json_object({session_cols}, 'parent_external_id', s.parent_external_id,
                   'project_dir', s.project_dir, 'title', s.title, 'model', s.model,
                   'git_branch', s.git_branch, 'agent_version', s.agent_version,
                   'started_at', s.started_at, 'updated_at', s.updated_at,
                   'message_count', s.message_count) FROM sessions s WHERE {filter}"
            ),
        ),
        (
            "messages",
            format!(
                "SELECT json_object({session_cols}, 'ext_id', m.ext_id, 'seq', m.seq,
                   'role', m.role, 'kind', m.kind, 'ts', m.ts, 'model', m.model, 'body', m.body,
                   'tools', memtrail_tools(m.tools_text, m.parts_zdict), 'cjk', m.cjk,
                   'parts', memtrail_parts(m.parts_zdict, m.body))
                 FROM messages m JOIN sessions s ON s.id = m.session_id WHERE {filter}"
            ),
        ),
        (
            "tool_calls",
            format!(
                "SELECT json_object({session_cols}, 'call_id', c.call_id,
                   'message_ext_id', m.ext_id, 'name', c.name, 'tool', c.tool,
                   'is_error', c.is_error, 'has_output', c.has_output)
                 FROM tool_calls c JOIN messages m ON m.id = c.message_id
                 JOIN sessions s ON s.id = c.session_id WHERE {filter}"
            ),
        ),
        (
            "events",
            format!(
                "SELECT json_object({session_cols}, 'message_ext_id', m.ext_id,
                   'ordinal', e.ordinal, 'seq', e.seq, 'category', e.category,
                   'action', e.action, 'priority', e.priority,
                   -- A prompt's subject that is its message's body is stored empty (schema
                   -- 22) and read from the body, as the store's readers do.
                   'subject', CASE WHEN e.subject = '' AND e.category = 'prompt'
                                   THEN m.body ELSE e.subject END,
                   'detail', e.detail, 'call_id', e.call_id, 'tool', e.tool, 'ts', e.ts)
                 FROM (SELECT *, row_number() OVER (PARTITION BY message_id ORDER BY seq, id) - 1
                         AS ordinal FROM events) e
                 JOIN messages m ON m.id = e.message_id
                 JOIN sessions s ON s.id = e.session_id WHERE {filter}"
            ),
        ),
        (
            "snapshots",
            format!(
                "SELECT json_object({session_cols}, 'ordinal', n.ordinal,
                   'built_at', n.built_at, 'trigger', n.trigger, 'budget', n.budget,
                   'events', n.events, 'text', n.text, 'consumed_at', n.consumed_at,
                   'consumed_by', n.consumed_by)
                 FROM (SELECT *, row_number() OVER (PARTITION BY session_id ORDER BY built_at, id)
                         - 1 AS ordinal FROM snapshots) n
                 JOIN sessions s ON s.id = n.session_id WHERE {filter}"
            ),
        ),
    ];
    let mut out = Vec::new();
    for (table, sql) in queries {
        let mut st = c.prepare(&sql).unwrap();
        let rows = st.query_map([], |r| r.get::<_, String>(0)).unwrap();
        for row in rows {
            let mut v: Map<String, Value> = serde_json::from_str(&row.unwrap()).unwrap();
            let origin = v.remove("origin").unwrap();
            let machine = match origin.as_str().unwrap() {
                "" => own.to_string(),
                o => o.to_string(),
            };
            let agent = v.remove("agent").unwrap();
            let ext = v.remove("external_id").unwrap();
            let uid = session_uid(&machine, agent.as_str().unwrap(), ext.as_str().unwrap());
            match table {
                "sessions" => {
                    v.insert("uid".into(), uid.into());
                    v.insert("machine_id".into(), machine.into());
                    v.insert("agent".into(), agent);
                    v.insert("external_id".into(), ext);
                }
                "messages" => {
                    v.insert("session_uid".into(), uid.into());
                    v.insert("machine_id".into(), machine.into());
                }
                _ => {
                    v.insert("session_uid".into(), uid.into());
                }
            }
            out.push(canonical(table, v));
        }
    }
    out.sort();
    out
}

fn canonical(table: &str, v: Map<String, Value>) -> String {
    let sorted: BTreeMap<String, Value> = v.into_iter().collect();
    format!("{table}: {}", serde_json::to_string(&sorted).unwrap())
}

/// Canonical rows of PostgreSQL's synced tables (without revisions and row ids), as
/// [`store_rows`] shapes them.
fn pg_rows(pg: &Pg) -> Vec<String> {
    let queries = [
        (
            "sessions",
            "SELECT uid, machine_id, agent, external_id, parent_external_id, project_dir, title, \
             model, git_branch, agent_version, started_at, updated_at, message_count FROM sessions",
        ),
        (
            "messages",
            "SELECT session_uid, machine_id, ext_id, seq, role, kind, ts, model, body, tools, cjk, \
             parts FROM messages",
        ),
        (
            "tool_calls",
            "SELECT session_uid, call_id, message_ext_id, name, tool, is_error::int AS is_error, \
             has_output::int AS has_output FROM tool_calls",
        ),
        (
            "events",
            "SELECT session_uid, message_ext_id, ordinal, seq, category, action, priority, \
             subject, detail, call_id, tool, ts FROM events",
        ),
        (
            "snapshots",
            "SELECT session_uid, ordinal, built_at, trigger, budget, events, text, consumed_at, \
             consumed_by FROM snapshots",
        ),
    ];
    let mut out = Vec::new();
    for (table, sql) in queries {
        let rows = pg
            .block_on(
                pg.client()
                    .query(&format!("SELECT row_to_json(t)::text FROM ({sql}) t"), &[]),
            )
            .unwrap();
        for r in rows {
            out.push(canonical(
                table,
                serde_json::from_str(&r.get::<_, String>(0)).unwrap(),
            ));
        }
    }
    out.sort();
    out
}

fn pg_count(pg: &Pg, sql: &str) -> i64 {
    pg.block_on(pg.client().query_one(sql, &[])).unwrap().get(0)
}

/// Runs `memtrail sync` on every machine at once (`rounds` times), each of which must succeed;
/// returns the last round's reports.
fn sync_all(machines: &[Machine], rounds: usize) -> Vec<Value> {
    let mut last = Vec::new();
    for _ in 0..rounds {
        let children: Vec<Child> = machines.iter().map(|m| m.spawn_sync(1000)).collect();
        last = children
            .into_iter()
            .map(|c| {
                let out = c.wait_with_output().unwrap();
                assert!(
                    out.status.success(),
                    "sync: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                serde_json::from_slice(&out.stdout).unwrap()
            })
            .collect();
    }
    last
}

/// PostgreSQL holds exactly the union of the machines' own sessions, and each machine holds
/// exactly the other machines' sessions as pulled ones.
fn assert_converged(pg: &Pg, machines: &[Machine]) {
    let ids: Vec<String> = machines.iter().map(Machine::id).collect();
    let mut union: Vec<String> = machines
        .iter()
        .zip(&ids)
        .flat_map(|(m, id)| store_rows(&m.sb.db(), id, false))
        .collect();
    union.sort();
    let in_pg = pg_rows(pg);
    assert!(!union.is_empty());
    assert_eq!(
        in_pg.len(),
        union.len(),
        "rows in PostgreSQL vs the stores' own rows"
    );
    assert_eq!(in_pg, union);
    for (i, m) in machines.iter().enumerate() {
        let mut others: Vec<String> = machines
            .iter()
            .zip(&ids)
            .enumerate()
            .filter(|(j, _)| *j != i)
            .flat_map(|(_, (o, id))| store_rows(&o.sb.db(), id, false))
            .collect();
        others.sort();
        assert_eq!(
            store_rows(&m.sb.db(), &ids[i], true),
            others,
            "{}'s pulled sessions",
            m.label
        );
    }
}

/// The URL of a fresh database owned by a role that logs in with a password (a member of the
/// test cluster's `memtrail_password` group), pgvector created by the superuser; and a
/// superuser connection to it.
fn password_database(name: &str, password: &str) -> Option<(String, Pg)> {
    let url = memtrail_testkit::pg::test_database(name)?;
    let db = url.rsplit('/').next().unwrap().to_string();
    let admin = Pg::connect_url(&format!("{url}?sslmode=disable")).unwrap();
    let role = format!("r_{db}");
    admin
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN PASSWORD '{password}' IN ROLE memtrail_password; \
             ALTER DATABASE {db} OWNER TO {role}"
        ))
        .unwrap();
    if std::env::var("MEMTRAIL_TEST_PG_VECTOR").is_ok_and(|v| v == "1") {
        admin.batch_execute("CREATE EXTENSION vector").unwrap();
    }
    let hostport = url.split('@').nth(1).unwrap().split('/').next().unwrap();
    Some((
        format!("postgres://{role}:{password}@{hostport}/{db}?sslmode=disable"),
        admin,
    ))
}

#[test]
fn four_machines_sync_concurrently_and_find_each_other_offline() {
    let secret = "Pw-4machines-s3cret";
    let Some((url, pg)) = password_database("four_machines", secret) else {
        return;
    };
    let machines: Vec<Machine> = (0..4).map(|k| Machine::new(&format!("m{k}"))).collect();
    let mut placed = 0;
    for (k, m) in machines.iter().enumerate() {
        placed += import_fixtures(m, k, 4);
        hook_session(m, 0x9000 + k as u32, 6);
    }
    assert_eq!(placed, 23);
    // Every machine sets sync up at the same moment (one migrates, the others join).
    let children: Vec<Child> = machines
        .iter()
        .map(|m| {
            m.cmd(
                &["sync", "--init", &url, "--label", &m.label, "--json"],
                1000,
            )
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let mut migrated = 0;
    for c in children {
        let out = c.wait_with_output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "sync --init: {stderr}");
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{stdout} {stderr}"
        );
        let v: Value = serde_json::from_str(&stdout).unwrap();
        assert!(v["init"]["url"].as_str().unwrap().contains(":****@"), "{v}");
        migrated += v["init"]["migrated"].as_array().unwrap().len();
    }
    assert_eq!(migrated, memtrail_pg::migrate::MIGRATIONS.len());
    // The password lives only in the owner-only config.
    for m in &machines {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(m.config()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(
            std::fs::read_to_string(m.config())
                .unwrap()
                .contains(secret)
        );
    }
    // Two concurrent rounds: everyone has pushed before the second round's pulls.
    let reports = sync_all(&machines, 2);
    for r in &reports {
        assert_eq!(r["sync"]["pulled"]["machines"], 3, "{r}");
        assert_eq!(r["sync"]["pushed"]["messages"], 0, "{r}");
    }
    assert_converged(&pg, &machines);
    assert_eq!(pg_count(&pg, "SELECT count(*) FROM machines"), 4);
    assert_eq!(
        pg_count(&pg, "SELECT count(DISTINCT machine_id) FROM sessions"),
        4
    );
    // Offline: the database unreachable, each machine finds every other machine's hook session.
    for m in &machines {
        m.point_nowhere();
        let out = m.run(&["sync"]);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            // The URL as memtrail masks it (the error printer's redaction keeps the `****`).
            err.starts_with(
                "memtrail: cannot connect to postgres://nobody:****@127.0.0.1:1/memtrail?sslmode=disable: "
            ),
            "{err}"
        );
        assert!(!err.contains("pw-nowhere"));
    }
    for (k, m) in machines.iter().enumerate() {
        for j in 0..4u32 {
            let sid = session_id(0x9000 + j);
            let word = &sid[..8];
            let found = m.json(&["search", word, "--json"]);
            let hits = found["hits"].as_array().unwrap();
            // The three prompts (even lines) of the six name their session.
            let mut ids: Vec<&str> = hits
                .iter()
                .map(|h| h["message_id"].as_str().unwrap())
                .collect();
            ids.sort();
            assert_eq!(
                ids,
                ["u0", "u2", "u4"],
                "machine {k} searching {word}: {found}"
            );
            assert!(
                hits.iter().all(|h| h["session_id"] == sid.as_str()),
                "{found}"
            );
        }
        let list = m.json(&["sessions", "list", "--limit", "1000", "--json"]);
        // 23 fixtures (some with sub-agent sessions) and 4 hook sessions, on every machine.
        let n = list["sessions"].as_array().unwrap().len();
        assert_eq!(
            n as i64,
            pg_count(&pg, "SELECT count(*) FROM sessions"),
            "{list}"
        );
    }
}

/// A small deterministic generator for the kill points.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Two machines set up to sync with `url`: half of the fixtures each, and a hook session of
/// `lines` lines (session numbers `first` and `first + 1`).
fn two_machines(url: &str, labels: [&str; 2], first: u32, lines: u64) -> [Machine; 2] {
    let machines = labels.map(Machine::new);
    for (k, m) in machines.iter().enumerate() {
        import_fixtures(m, k, 2);
        hook_session(m, first + k as u32, lines);
        let out = m.run(&["sync", "--init", url, "--label", &m.label]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    machines
}

#[test]
fn syncs_killed_at_random_points_lose_and_double_nothing() {
    let Some(url) = memtrail_testkit::pg::test_database("kill_9") else {
        return;
    };
    let url = format!("{url}?sslmode=disable");
    let pg = Pg::connect_url(&url).unwrap();
    let machines = two_machines(&url, ["ka", "kb"], 0xa000, 40);
    // Each run: a new turn on both machines, then both sync at once in batches of 2 messages,
    // and SIGKILL hits one of them, or both, at a random point of the time a sync takes here.
    // That time varies with the machine's load, so the range of the kill point follows what
    // the kills find: it shrinks when a kill finds the sync already ended, grows when it finds
    // it running (a fixed 0-300 ms range let a quiet machine's syncs end before most kills;
    // one timed sync first under the full suite's load made the range 925 ms).
    let mut rng = Lcg(13);
    let (mut killed, mut tried, mut lines, mut span) = (0, 0, 40, 300u64);
    for run in 0..80 {
        if run >= 20 && killed >= 10 {
            break;
        }
        for (k, m) in machines.iter().enumerate() {
            grow_session(m, 0xa000 + k as u32, lines, 6);
        }
        lines += 6;
        let mut children: Vec<Child> = machines.iter().map(|m| m.spawn_sync(2)).collect();
        std::thread::sleep(Duration::from_millis(rng.below(span)));
        let which = run % 3;
        for (i, c) in children.iter_mut().enumerate() {
            if which == 2 || which == i {
                tried += 1;
                if c.try_wait().unwrap().is_none() {
                    killed += 1;
                    span = (span + span / 8).min(2_000);
                } else {
                    span = (span * 2 / 3).max(5);
                }
                let _ = c.kill();
            }
        }
        for c in children {
            let out = c.wait_with_output().unwrap();
            // A sync that was not killed succeeded (a kill leaves no stale lock behind).
            if out.status.code().is_some() {
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }
    eprintln!("kill-9: {killed} of {tried} syncs killed while running (range {span} ms)");
    assert!(
        killed >= 10,
        "only {killed} of {tried} syncs were still running when killed (range at the end: {span} ms)"
    );
    // The next syncs resume and converge: nothing lost, nothing doubled.
    sync_all(&machines, 2);
    assert_converged(&pg, &machines);
}

#[test]
fn a_database_that_goes_away_mid_sync_loses_and_doubles_nothing() {
    let Some(url) = database("goes_away") else {
        return;
    };
    let db = url
        .rsplit('/')
        .next()
        .unwrap()
        .split('?')
        .next()
        .unwrap()
        .to_string();
    let pg = Pg::connect_url(&url).unwrap();
    let machines = two_machines(&url, ["ga", "gb"], 0xc000, 30);
    let mut rng = Lcg(7);
    let mut cut = 0;
    // The delay before the database goes away: shortened after a run whose syncs had all ended
    // by then (a machine faster than the one it was tuned on), so that at least three are cut
    // in six to sixteen runs.
    let mut span = 120;
    for run in 0..16u64 {
        if run >= 6 && cut >= 3 {
            break;
        }
        for (k, m) in machines.iter().enumerate() {
            grow_session(m, 0xc000 + k as u32, 30 + run * 8, 8);
        }
        let mut children: Vec<Child> = machines.iter().map(|m| m.spawn_sync(1)).collect();
        std::thread::sleep(Duration::from_millis(5 + rng.below(span)));
        let cut_before = cut;
        // Every connection to the database but ours is terminated, and again every 2 ms until
        // both syncs have ended: a sync still running is cut wherever it is (on a loaded
        // machine one may not have connected yet when the first goes).
        let until = std::time::Instant::now() + Duration::from_secs(30);
        while children.iter_mut().any(|c| c.try_wait().unwrap().is_none())
            && std::time::Instant::now() < until
        {
            pg.block_on(pg.client().execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = $1 AND pid <> pg_backend_pid()",
                &[&db],
            ))
            .unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        for c in children {
            let out = c.wait_with_output().unwrap();
            if !out.status.success() {
                cut += 1;
                let err = String::from_utf8_lossy(&out.stderr);
                // The hook's background sync (at a turn's end) may hold the store's sync
                // lock: the sync then says it waits, before the database's error.
                let mut lines = err.lines().skip_while(|l| {
                    l.contains("another sync of the store") && l.ends_with("waiting for it to end")
                });
                assert!(
                    lines
                        .next()
                        .is_some_and(|l| l.starts_with("memtrail: PostgreSQL: ")),
                    "{err}"
                );
            }
        }
        if cut == cut_before {
            span = (span * 2 / 3).max(1);
        }
    }
    assert!(
        cut >= 3,
        "only {cut} syncs were cut off (delay range at the end: {span} ms)"
    );
    // The next syncs resume and converge.
    sync_all(&machines, 2);
    assert_converged(&pg, &machines);
    // The last error was recorded and then cleared by a successful sync.
    let c = rusqlite::Connection::open(machines[0].sb.db()).unwrap();
    let last: Option<String> = c
        .query_row(
            "SELECT value FROM sync_state WHERE key = 'last_error'",
            [],
            |r| r.get(0),
        )
        .ok();
    assert_eq!(last, None);
}

#[test]
fn deletions_and_redactions_propagate_to_postgres_and_the_other_machines() {
    let Some(url) = database("propagate") else {
        return;
    };
    let pg = Pg::connect_url(&url).unwrap();
    let (a, b) = (Machine::new("pa"), Machine::new("pb"));
    let doomed = hook_session(&a, 0xd000, 8);
    let kept = hook_session(&a, 0xd001, 8);
    hook_session(&b, 0xd002, 4);
    a.init(&url);
    b.init(&url);
    let machines = [a, b];
    sync_all(&machines, 1);
    let [a, b] = &machines;
    let doomed_uid = session_uid(&a.id(), "claude", &doomed);
    let in_pg = |uid: &str| {
        pg_count(
            &pg,
            &format!("SELECT count(*) FROM messages WHERE session_uid = '{uid}'"),
        )
    };
    assert_eq!(in_pg(&doomed_uid), 8);
    let b_sessions = |b: &Machine| -> Vec<String> {
        b.json(&["sessions", "list", "--json"])["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["session_id"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(b_sessions(b).contains(&doomed));

    // A deletes a session: gone from PostgreSQL after A's sync, from B after B's.
    a.sb.acmd()
        .args(["sessions", "delete", &doomed, "--yes"])
        .assert()
        .success();
    let r = a.json(&["sync", "--json"]);
    assert_eq!(r["sync"]["pushed"]["deletions"], 1, "{r}");
    assert_eq!(in_pg(&doomed_uid), 0);
    assert_eq!(
        pg_count(
            &pg,
            &format!("SELECT count(*) FROM sessions WHERE uid = '{doomed_uid}'")
        ),
        0
    );
    assert_eq!(pg_count(&pg, "SELECT count(*) FROM deletions"), 1);
    let r = b.json(&["sync", "--json"]);
    assert_eq!(r["sync"]["pulled"]["deleted_sessions"], 1, "{r}");
    let left = b_sessions(b);
    assert!(!left.contains(&doomed) && left.contains(&kept), "{left:?}");

    // A message of A's holds a secret stored by an older memtrail (written here directly); the
    // current rules redact it at `redact --rescan`, and the change propagates.
    let key = "AKIAQYLPMN5HHHFPZAM2";
    let c = rusqlite::Connection::open(a.sb.db()).unwrap();
    memtrail_runtime::store::register_sql_functions(&c).unwrap();
    let changed = c
        .execute(
            &format!(
                "UPDATE messages SET body = body || ' aws key {key}' WHERE ext_id = 'u2' \
                 AND session_id = (SELECT id FROM sessions WHERE external_id = '{kept}')"
            ),
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(c);
    a.json(&["sync", "--json"]);
    let with_key = |pg: &Pg| {
        pg_count(
            pg,
            &format!("SELECT count(*) FROM messages WHERE body LIKE '%{key}%'"),
        )
    };
    assert_eq!(with_key(&pg), 1, "the legacy secret reached PostgreSQL");
    b.json(&["sync", "--json"]);
    // B redacts what it pulls with its own rules: the secret never reached B's store.
    let b_has_key = |b: &Machine| {
        let c = rusqlite::Connection::open(b.sb.db()).unwrap();
        memtrail_runtime::store::register_sql_functions(&c).unwrap();
        c.query_row(
            &format!(
                "SELECT count(*) FROM messages
                 WHERE body LIKE '%{key}%' OR memtrail_parts(parts_zdict, body) LIKE '%{key}%'"
            ),
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
    };
    assert_eq!(b_has_key(b), 0);
    let rescan = a.json(&["redact", "--rescan", "--json"]);
    assert_eq!(rescan["messages_changed"], 1, "{rescan}");
    a.json(&["sync", "--json"]);
    assert_eq!(
        with_key(&pg),
        0,
        "redact --rescan's change reached PostgreSQL"
    );
    b.json(&["sync", "--json"]);
    assert_eq!(b_has_key(b), 0);
    assert_converged(&pg, &machines);
}

/// A store set up for sync as one machine is never synced as another (its own sessions would
/// come back as the other machine's); `--init` on a config without an id adopts the store's.
#[test]
fn a_store_keeps_the_machine_id_it_was_set_up_with() {
    let Some(url) = database("machine_id") else {
        return;
    };
    let m = Machine::new("mid");
    hook_session(&m, 0xe000, 4);
    let first = m.json(&["sync", "--init", &url, "--json"]);
    let id = m.id();
    assert_eq!(first["init"]["machine"], id.as_str());
    assert_eq!(first["init"]["queued"], 5, "{first}");
    let edit = |machine: Option<&str>| {
        let text = std::fs::read_to_string(m.config()).unwrap();
        let mut doc: toml_edit::DocumentMut = text.parse().unwrap();
        match machine {
            Some(v) => doc["sync"]["machine"] = toml_edit::value(v),
            None => {
                doc["sync"].as_table_mut().unwrap().remove("machine");
            }
        }
        std::fs::write(m.config(), doc.to_string()).unwrap();
    };
    let other = "0123456789abcdef0123456789abcdef";
    edit(Some(other));
    let out = m.run(&["sync"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "memtrail: the store {} syncs as machine {id} but memtrail's config says {other}: put \
             `machine = \"{id}\"` under [sync] in {} (or use another store)\n",
            m.sb.db().display(),
            m.config().display()
        )
    );
    edit(None);
    let again = m.json(&["sync", "--init", &url, "--json"]);
    assert_eq!(again["init"]["machine"], id.as_str());
    assert_eq!(again["init"]["queued"], 0, "{again}");
    assert_eq!(m.id(), id);
}

/// Sessions of `m`'s store as (session id, messages), sorted.
fn listed(m: &Machine) -> Vec<(String, u64)> {
    let v = m.json(&["sessions", "list", "--json"]);
    let mut out: Vec<(String, u64)> = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["session_id"].as_str().unwrap().to_string(),
                s["messages"].as_u64().unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn switching_between_two_databases_sends_everything_to_each_and_misses_nothing() {
    let (Some(x), Some(y)) = (
        memtrail_testkit::pg::test_database("switch_x"),
        memtrail_testkit::pg::test_database("switch_y"),
    ) else {
        return;
    };
    let (x, y) = (
        format!("{x}?sslmode=disable"),
        format!("{y}?sslmode=disable"),
    );
    let (a, b) = (Machine::new("sa"), Machine::new("sb"));
    let s1 = hook_session(&a, 0xe100, 4);
    let s2 = hook_session(&b, 0xe101, 3);
    // `sync --init URL` (then a sync) on machine m: its stderr line about a new database.
    let init = |m: &Machine, url: &str| {
        let out = m.run(&["sync", "--init", url, "--label", &m.label]);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{err}");
        err.lines()
            .filter(|l| l.contains("new to this machine"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let note = |n: &str| {
        vec![format!(
            "this database is new to this machine: sending all {n}"
        )]
    };
    assert_eq!(init(&a, &x), note("1 session"));
    assert_eq!(init(&b, &x), note("1 session"));
    // A database it already synced with says nothing.
    assert!(a.run(&["sync"]).status.success());
    assert_eq!(init(&a, &x), Vec::<String>::new());
    // Both move to Y; A gets a session there.
    assert_eq!(init(&a, &y), note("1 session"));
    let s3 = hook_session(&a, 0xe102, 2);
    assert_eq!(init(&b, &y), note("1 session"));
    assert!(a.run(&["sync"]).status.success());
    // And back to X, which never saw s3.
    assert_eq!(init(&a, &x), note("2 sessions"));
    assert_eq!(init(&b, &x), note("1 session"));
    assert!(a.run(&["sync"]).status.success());
    let mut all = vec![(s1, 4), (s2, 3), (s3, 2)];
    all.sort();
    for m in [&a, &b] {
        assert_eq!(listed(m), all, "machine {}", m.label);
    }
    for url in [&x, &y] {
        let pg = Pg::connect_url(url).unwrap();
        // Y got s3 while both machines were on it, and X after the switch back.
        assert_eq!(pg_count(&pg, "SELECT count(*) FROM sessions"), 3, "{url}");
        assert_eq!(pg_count(&pg, "SELECT count(*) FROM messages"), 9, "{url}");
    }
}

#[test]
fn a_sync_by_hand_that_fails_is_recorded_and_status_says_sync_is_failing() {
    let Some(url) = database("by_hand_fail") else {
        return;
    };
    let m = Machine::new("hf");
    hook_session(&m, 0xe200, 2);
    assert!(m.run(&["sync", "--init", &url]).status.success());
    let status = |m: &Machine| m.json(&["status", "--json"])["sync"].clone();
    assert_eq!(status(&m)["failing"], false);
    // A new session waits; the database is out of reach. A background sync started just now
    // (the stamp): the hook's turn end starts none that would push it first.
    m.no_autosync();
    hook_session(&m, 0xe201, 3);
    m.point_nowhere();
    let out = m.run(&["sync"]);
    assert_eq!(out.status.code(), Some(1));
    let s = status(&m);
    assert!(
        s["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("127.0.0.1:1")),
        "{s}"
    );
    assert!(s["failing_since"].is_string(), "{s}");
    assert_eq!(s["failing"], true, "{s}");
    assert_eq!(
        s["pending"],
        serde_json::json!({"sessions": 1, "messages": 3, "deletions": 0})
    );
    // A second failure keeps when it started failing.
    assert_eq!(m.run(&["sync"]).status.code(), Some(1));
    assert_eq!(status(&m)["failing_since"], s["failing_since"]);
    let text = String::from_utf8_lossy(&m.run(&["status"]).stdout).to_string();
    assert!(
        text.contains(&format!(
            "\n  WARNING: sync failing since {}: what waits is not pushed (run `memtrail sync` to see the error)\n",
            s["failing_since"].as_str().unwrap()[..16].replace('T', " ")
        )),
        "{text}"
    );
    assert!(
        text.ends_with("\nsync FAILING (see above); capture and search work\n"),
        "{text}"
    );
    // Set up again with the reachable URL: the sync succeeds and the failure is forgotten.
    assert!(m.run(&["sync", "--init", &url]).status.success());
    let s = status(&m);
    assert_eq!(
        (&s["last_error"], &s["failing_since"], &s["failing"]),
        (&Value::Null, &Value::Null, &Value::Bool(false))
    );
}

#[test]
fn sync_init_refuses_an_unusable_label_before_connecting() {
    let m = Machine::new("lbl");
    let url = "postgres://nobody@127.0.0.1:1/memtrail?sslmode=disable";
    for (label, why) in [
        ("", "it is empty".to_string()),
        (
            "desk\nbox",
            "it holds a control character (a newline, a tab, ESC, …)".into(),
        ),
        (
            "desk\u{1b}[31m",
            "it holds a control character (a newline, a tab, ESC, …)".into(),
        ),
        (
            &"x".repeat(65),
            "it is 65 characters long, more than 64".into(),
        ),
    ] {
        let out = m.run(&["sync", "--init", url, "--label", label]);
        assert_eq!(out.status.code(), Some(1), "{label:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "memtrail: --label {label:?} is not a usable machine label: {why}; give a short \
                 name such as `laptop` (it is shown in `sessions list` and `status`)\n"
            ),
            "{label:?}"
        );
        assert!(!m.config().exists());
    }
}

#[test]
fn sync_texts_say_what_they_mean() {
    let m = Machine::new("txt");
    let out = m.run(&["sync", "--watch", "--push-every", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with(
            "error: invalid value '0' for '--push-every <SECS>': \"0\" is not a number of seconds \
             greater than 0 and at most 86400 (a day)\n"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = m.run(&["sync", "--init", "postgres://u:p%zz@127.0.0.1:1/db"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "memtrail: bad PostgreSQL URL: the password has a bad %-escape: percent-encode special \
         characters in the password (@ → %40, : → %3A, / → %2F, % → %25)\n"
    );
    // Help texts are wrapped to the terminal's width: compared with single spaces.
    let words = |s: Vec<u8>| {
        String::from_utf8(s)
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let help = words(m.run(&["--help"]).stdout);
    assert!(
        help.contains(
            "nothing leaves this machine unless you set up `memtrail sync` (which sends the \
             stored, redacted sessions to the PostgreSQL database you give it) or an `[embed]` \
             endpoint (which is sent the texts to embed and the queries searched by meaning, \
             redacted)."
        ),
        "{help}"
    );
    let help = words(m.run(&["sync", "--help"]).stdout);
    assert!(
        help.contains(
            "(postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require|verify-ca|verify-full&sslrootcert=FILE])"
        ),
        "{help}"
    );
}

#[test]
fn sync_init_warns_when_the_url_on_the_command_line_holds_a_password() {
    let sb = Sandbox::new();
    let warning = "memtrail: warning: the password is visible to other local users in the \
                   process list while this runs; prefer PGPASSWORD or ~/.pgpass\n";
    // Nothing listens on port 1 of the loopback: the connection is refused at once.
    let init = |url: &str| {
        let out = sb.cmd().args(["sync", "--init", url]).output().unwrap();
        assert!(!out.status.success());
        String::from_utf8(out.stderr).unwrap()
    };
    let err = init("postgres://me:hunter2pw@127.0.0.1:1/db");
    assert!(err.starts_with(warning), "{err}");
    assert!(!err.contains("hunter2pw"), "{err}");
    let err = init("postgres://me@127.0.0.1:1/db?password=hunter2pw");
    assert!(err.starts_with(warning), "{err}");
    // Without a password in the URL (PGPASSWORD or ~/.pgpass give it): no warning.
    let out = sb
        .cmd()
        .env("PGPASSWORD", "hunter2pw")
        .args(["sync", "--init", "postgres://me@127.0.0.1:1/db"])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!err.contains("warning"), "{err}");
    assert!(
        err.contains("cannot connect to postgres://me@127.0.0.1:1/db"),
        "{err}"
    );
    // The help recommends it.
    let help = sb.cmd().args(["sync", "--help"]).output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(
        help.contains(
            "Give the URL without its password and put the password in PGPASSWORD or ~/.pgpass"
        ),
        "{help}"
    );
}

#[test]
fn purge_and_delete_of_another_machines_session_say_what_happens_where() {
    let Some(url) = database("purge_pulled") else {
        return;
    };
    let (a, b) = (Machine::new("pa"), Machine::new("pb"));
    let theirs = hook_session(&a, 0xe300, 3);
    let other = hook_session(&a, 0xe301, 2);
    hook_session(&b, 0xe302, 2);
    for m in [&a, &b] {
        assert!(
            m.run(&["sync", "--init", &url, "--label", &m.label])
                .status
                .success()
        );
    }
    assert!(b.run(&["sync"]).status.success());
    // Everything in B's store is older than the cutoff: 3 sessions, 2 of them A's.
    let out = b.run(&["purge", "--older-than", "2100-01-01", "--dry-run"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(" and 3 sessions left empty, 2 of them other machines' (kept there) (nothing deleted: dry run)"),
        "{text}"
    );
    // An explicit delete of A's session is for good, and says where it goes.
    let out = b.run(&["sessions", "delete", &theirs, "--yes"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.ends_with(
            "\nit belonged to machine pa: the next `memtrail sync` deletes it from PostgreSQL, and machine pa deletes it at its next sync\n"
        ),
        "{text}"
    );
    let v = b.json(&["sessions", "delete", &other, "--yes", "--json"]);
    assert_eq!(v["deleted"]["machine"], "pa", "{v}");
    assert!(b.run(&["sync"]).status.success());
    assert!(a.run(&["sync"]).status.success());
    let ids: Vec<String> = listed(&a).into_iter().map(|(id, _)| id).collect();
    assert!(!ids.contains(&theirs) && !ids.contains(&other), "{ids:?}");
}

#[test]
fn changes_to_a_session_deleted_on_another_machine_are_reported_not_pushed() {
    let Some(url) = database("deleted_elsewhere") else {
        return;
    };
    let (a, b) = (Machine::new("ea"), Machine::new("eb"));
    let first = hook_session(&a, 0xe000, 4);
    let second = hook_session(&a, 0xe001, 4);
    a.init(&url);
    b.init(&url);
    // B pulled both (its `sync --init` synced), deletes the first and pushes the deletion; A
    // then adds to it and syncs: the change is not pushed (the deletion stands), and A pulls
    // the deletion.
    b.sb.acmd()
        .args(["sessions", "delete", &first, "--yes"])
        .assert()
        .success();
    let r = b.json(&["sync", "--json"]);
    assert_eq!(r["sync"]["pushed"]["deletions"], 1, "{r}");
    a.no_autosync();
    grow_session(&a, 0xe000, 4, 2);
    let r = a.json(&["sync", "--json"]);
    assert_eq!(r["sync"]["pushed"]["deleted_elsewhere"], 1, "{r}");
    assert_eq!(r["sync"]["pushed"]["sessions"], 0, "{r}");
    assert_eq!(r["sync"]["pulled"]["deleted_sessions"], 1, "{r}");
    // The same with the summary line.
    b.sb.acmd()
        .args(["sessions", "delete", &second, "--yes"])
        .assert()
        .success();
    b.json(&["sync", "--json"]);
    a.no_autosync();
    grow_session(&a, 0xe001, 4, 2);
    let out = a.run(&["sync"]);
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(
        line.trim_end()
            .ends_with(" s; 1 session was deleted on another machine and is not pushed"),
        "{line}"
    );
}

/// A session larger than a batch is pushed and pulled in several: the summary counts it once
/// (it said "20 messages in 5 sessions" for two sessions of ten messages in batches of four),
/// and so does the count of sessions another machine deleted.
#[test]
fn a_session_in_several_batches_counts_once() {
    let Some(url) = database("several_batches") else {
        return;
    };
    let (a, b) = (Machine::new("sa"), Machine::new("sb"));
    let first = hook_session(&a, 0xf000, 10);
    hook_session(&a, 0xf001, 10);
    // Ten messages each, four to a batch: at least five batches each way.
    let r = a.init_json(&url, 4);
    let pushed = &r["sync"]["pushed"];
    assert!(pushed["batches"].as_u64().unwrap() >= 5, "{r}");
    assert_eq!(pushed["messages"], 20, "{r}");
    assert_eq!(pushed["sessions"], 2, "{r}");
    let r = b.init_json(&url, 4);
    let pulled = &r["sync"]["pulled"];
    assert!(pulled["batches"].as_u64().unwrap() >= 5, "{r}");
    assert_eq!(pulled["messages"], 20, "{r}");
    assert_eq!(pulled["sessions"], 2, "{r}");
    // The summary line says the same.
    a.no_autosync();
    grow_session(&a, 0xf001, 10, 10);
    let out = a.cmd(&["sync"], 4).output().unwrap();
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(
        line.contains(": pushed 10 messages in 1 session ("),
        "{line}"
    );
    b.no_autosync();
    let out = b.cmd(&["sync"], 4).output().unwrap();
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(
        line.contains("; pulled 10 messages in 1 session from 1 other machine"),
        "{line}"
    );
    // B deletes the first; A, not knowing yet, adds ten messages to it: one session whose
    // changes are not pushed, in three batches.
    b.sb.acmd()
        .args(["sessions", "delete", &first, "--yes"])
        .assert()
        .success();
    b.json(&["sync", "--json"]);
    a.no_autosync();
    grow_session(&a, 0xf000, 10, 10);
    let out = a.cmd(&["sync", "--json"], 4).output().unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["sync"]["pushed"]["deleted_elsewhere"], 1, "{r}");
    assert_eq!(r["sync"]["pushed"]["sessions"], 0, "{r}");
    assert_eq!(r["sync"]["pulled"]["deleted_sessions"], 1, "{r}");
}

/// Runs `sql` in the test cluster's maintenance database (`CREATE DATABASE … TEMPLATE`, which
/// fails while a backend of a just-finished sync is still on the source: retried).
fn cluster_sql(sql: &str) {
    let admin = std::env::var(memtrail_testkit::pg::URL_VAR).unwrap();
    let pg = Pg::connect_url(&format!("{admin}?sslmode=disable")).unwrap();
    let mut tries = 0;
    while let Err(e) = pg.block_on(pg.client().batch_execute(sql)) {
        tries += 1;
        assert!(tries < 100, "{sql}: {}", memtrail_pg::describe(&e));
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The database restored from a backup taken between two syncs: the sessions pushed since are
/// gone from it and its revisions start again below what the machines pulled. The first
/// machine to sync notices (by its own last push when it pushed since the backup, else by the
/// revisions it pulled), says so, and gives the database a new identity; every machine then
/// sends its sessions again, and every deletion made on it, and pulls from the start: both end
/// up with all the sessions, and the two deleted since the backup (one by its own machine, one
/// by the other) stay deleted.
#[test]
fn a_database_restored_from_a_backup_is_noticed_and_filled_again() {
    for pusher_first in [true, false] {
        let Some(url) = memtrail_testkit::pg::test_database("restored") else {
            return;
        };
        let name = url.rsplit('/').next().unwrap().to_string();
        let backup = format!("{name}_backup");
        let url = format!("{url}?sslmode=disable");
        let (a, b) = (Machine::new("ra"), Machine::new("rb"));
        let s1 = hook_session(&a, 0xd000, 4);
        // Two more of A's sessions: after the backup, A deletes one and B the other.
        let by_a = hook_session(&a, 0xd010, 2);
        let by_b = hook_session(&a, 0xd011, 2);
        a.init(&url);
        b.init(&url);
        // No background sync started by the turns below: the syncs are the test's.
        a.no_autosync();
        b.no_autosync();
        cluster_sql(&format!("CREATE DATABASE {backup} TEMPLATE {name}"));
        // After the backup: A pushes a second session, B pulls it; the deletions go everywhere.
        let s2 = hook_session(&a, 0xd001, 6);
        assert!(
            a.run(&["sessions", "delete", &by_a, "--yes"])
                .status
                .success()
        );
        assert!(
            b.run(&["sessions", "delete", &by_b, "--yes"])
                .status
                .success()
        );
        a.json(&["sync", "--json"]);
        let r = b.json(&["sync", "--json"]);
        assert_eq!(r["sync"]["pulled"]["sessions"], 1, "{r}");
        assert_eq!(r["sync"]["pulled"]["deleted_sessions"], 1, "{r}");
        let r = a.json(&["sync", "--json"]);
        assert_eq!(r["sync"]["pulled"]["deleted_sessions"], 1, "{r}");
        cluster_sql(&format!("DROP DATABASE {name} WITH (FORCE)"));
        cluster_sql(&format!("CREATE DATABASE {name} TEMPLATE {backup}"));
        let s3 = hook_session(&b, 0xd002, 2);
        let (first, second) = if pusher_first { (&a, &b) } else { (&b, &a) };
        let out = first.run(&["sync"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(
            err.contains(
                "the database went back in time (restored from a backup?): it has given out \
                 revisions up to "
            ) && err.contains(", but this machine saw them reach ")
                && err.contains(&format!(
                    "this database is new to this machine: sending all {} and the 1 deletion \
                     made here",
                    if pusher_first {
                        "2 sessions"
                    } else {
                        "1 session"
                    }
                )),
            "{err}"
        );
        let out = second.run(&["sync"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && err.contains("this database is new to this machine"),
            "{err}"
        );
        assert!(!err.contains("went back in time"), "{err}");
        assert!(first.run(&["sync"]).status.success());
        let ids =
            |m: &Machine| -> Vec<String> { listed(m).into_iter().map(|(id, _)| id).collect() };
        let mut all = vec![s1.clone(), s2.clone(), s3.clone()];
        all.sort();
        assert_eq!(ids(&a), all, "pusher first: {pusher_first}");
        assert_eq!(ids(&b), all, "pusher first: {pusher_first}");
        let pg = Pg::connect_url(&url).unwrap();
        let n: i64 = pg
            .block_on(pg.client().query_one("SELECT count(*) FROM sessions", &[]))
            .unwrap()
            .get(0);
        assert_eq!(n, 3, "pusher first: {pusher_first}");
        drop(pg);
        cluster_sql(&format!("DROP DATABASE {backup} WITH (FORCE)"));
    }
}

/// A transcript copied between machines: A holds its own session and B's copy of the same id.
/// `sessions delete ID` deletes A's own (the id means it), says that B's copy stays and how
/// to delete it; the same command again deletes B's copy, saying it is B's (`--json`: no other
/// copy left).
#[test]
fn deleting_an_id_two_machines_hold_says_which_one_and_that_the_other_stays() {
    let Some(url) = database("same_id") else {
        return;
    };
    let (a, b) = (Machine::new("sa"), Machine::new("sb"));
    let id = hook_session(&a, 0xc000, 4);
    assert_eq!(hook_session(&b, 0xc000, 2), id);
    b.init(&url);
    a.init(&url);
    assert_eq!(listed(&a), vec![(id.clone(), 2), (id.clone(), 4)]);
    let out = a.run(&["sessions", "delete", &id, "--yes"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("deleted claude session {id} (")) && text.contains("4 messages"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "\nanother session with this id stays: the claude session pulled from machine sb \
             (`memtrail sessions delete {id}` again deletes it)\n"
        )),
        "{text}"
    );
    let v = a.json(&["sessions", "delete", &id, "--yes", "--json"]);
    assert_eq!(v["deleted"]["messages"], 2, "{v}");
    assert_eq!(v["deleted"]["machine"], "sb", "{v}");
    assert!(v["deleted"].get("same_id").is_none(), "{v}");
    assert_eq!(listed(&a), vec![]);
}

/// A config copied to another machine (the same machine id, another store) and a second machine
/// given the same label: syncs say so, and go on.
#[test]
fn a_shared_machine_id_or_label_is_reported() {
    let Some(url) = database("shared_id") else {
        return;
    };
    let (a, copy) = (Machine::new("ma"), Machine::new("ma"));
    hook_session(&a, 0xb000, 2);
    a.init(&url);
    std::fs::create_dir_all(copy.config().parent().unwrap()).unwrap();
    std::fs::copy(a.config(), copy.config()).unwrap();
    hook_session(&copy, 0xb001, 2);
    let out = copy.run(&["sync"]);
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
    a.no_autosync();
    let out = a.run(&["sync"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: another store pushes as this machine: the database shows a push from this machine's id at ")
            && err.contains("Was memtrail's config copied from this machine to another?"),
        "{err}"
    );
    // Until this store pushes again, each sync says so; after its push, the next is quiet.
    hook_session(&a, 0xb002, 2);
    let out = a.run(&["sync"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("another store pushes as this machine"),
        "{err}"
    );
    let out = a.run(&["sync"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !err.contains("warning"), "{err}");
    let pg = Pg::connect_url(&url).unwrap();
    let set_pushed_at = |sql: &str| {
        pg.block_on(pg.client().execute(sql, &[&a.id()])).unwrap();
    };
    let store_state = |key: &str, value: &str| {
        let c = rusqlite::Connection::open(a.sb.db()).unwrap();
        c.execute(
            "UPDATE sync_state SET value = ?2 WHERE key = ?1",
            [key, value],
        )
        .unwrap();
    };
    // A push of this store killed after its commit, before the store recorded it: the
    // database shows the push it tried, which is not another store's.
    store_state("database_push_at", "1");
    let out = a.run(&["sync"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !err.contains("warning"), "{err}");
    // The copy pushing with a clock an hour behind: still another store's push, and no sign
    // of a database gone back in time (its revisions went on).
    set_pushed_at("UPDATE machines SET last_push_at = last_push_at - 3600000 WHERE id = $1");
    let out = a.run(&["sync"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("another store pushes as this machine") && !err.contains("back in time"),
        "{err}"
    );
    // Another machine labelled as A.
    let b = Machine::new("ma");
    let out = b.run(&["sync", "--init", &url, "--label", "ma"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "warning: machine {} also pushes under this machine's label",
            a.id()
        )),
        "{err}"
    );
}

/// A machine's `redact --rescan` with a rule of its own rewrites a session another machine
/// pulled: the puller's rows are rewritten at its next sync, and its store files (database and
/// write-ahead log) no longer hold the old text, which a pull used to leave there until some
/// later checkpoint.
#[test]
fn a_pulled_rewrite_leaves_no_old_text_in_the_pullers_files() {
    let Some(url) = database("pulled_rewrite") else {
        return;
    };
    let (a, b) = (Machine::new("wa"), Machine::new("wb"));
    let sid = hook_session(&a, 0xa000, 4);
    a.init(&url);
    b.init(&url);
    a.no_autosync();
    b.no_autosync();
    let needle = format!("of session {sid}");
    let holds = |m: &Machine| {
        memtrail_testkit::store_file_bytes(&m.sb.db())
            .iter()
            .any(|f| f.windows(needle.len()).any(|w| w == needle.as_bytes()))
    };
    assert!(holds(&b), "B pulled the prompts as they are");
    let mut config = std::fs::read_to_string(a.config()).unwrap();
    config.push_str(
        "\n[privacy]\nredact = [{ name = \"session-ref\", pattern = \"of session [0-9a-f-]{36}\" }]\n",
    );
    std::fs::write(a.config(), config).unwrap();
    let r = a.json(&["redact", "--rescan", "--json"]);
    assert_eq!(r["messages_changed"], 2, "{r}");
    assert!(!holds(&a));
    a.json(&["sync", "--json"]);
    let r = b.json(&["sync", "--json"]);
    assert_eq!(r["sync"]["pulled"]["messages"], 2, "{r}");
    assert!(
        !holds(&b),
        "B's files still hold the text A's rescan replaced"
    );
}

/// The rights docs/postgres.md ("A team: one role per person") gives a member, run as written
/// (the role's name and the database's put in): a member's machine syncs, pulls the owner's
/// sessions, pushes its own and deletes one of the owner's.
#[test]
fn a_team_member_with_the_documented_rights_syncs() {
    let Some(url) = memtrail_testkit::pg::test_database("team_role") else {
        return;
    };
    let database = url.rsplit('/').next().unwrap().to_string();
    let role = format!("member_{database}");
    let (owner, member) = (Machine::new("owner"), Machine::new("member"));
    let theirs = hook_session(&owner, 0x9000, 4);
    owner.init(&format!("{url}?sslmode=disable"));
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/postgres.md"))
            .unwrap();
    let section = doc.split("## A team: one role per person").nth(1).unwrap();
    let sql = section
        .split("```sql\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap()
        .replace("alice", &role)
        .replace("DATABASE memtrail", &format!("DATABASE {database}"));
    let owner_pg = Pg::connect_url(&format!("{url}?sslmode=disable")).unwrap();
    owner_pg
        .block_on(owner_pg.client().batch_execute(&sql))
        .unwrap_or_else(|e| panic!("{sql}: {}", memtrail_pg::describe(&e)));
    let member_url = memtrail_testkit::pg::with_database(
        &url.replacen("postgres://postgres@", &format!("postgres://{role}@"), 1),
        &database,
    );
    let mine = hook_session(&member, 0x9001, 2);
    let out = member.run(&[
        "sync",
        "--init",
        &format!("{member_url}?sslmode=disable"),
        "--label",
        "member",
        "--json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let ids = |m: &Machine| -> Vec<String> { listed(m).into_iter().map(|(id, _)| id).collect() };
    let mut both = vec![theirs.clone(), mine.clone()];
    both.sort();
    assert_eq!(ids(&member), both);
    member
        .sb
        .acmd()
        .args(["sessions", "delete", &theirs, "--yes"])
        .assert()
        .success();
    let r = member.json(&["sync", "--json"]);
    assert_eq!(r["sync"]["pushed"]["deletions"], 1, "{r}");
    let r = owner.json(&["sync", "--json"]);
    assert_eq!(r["sync"]["pulled"]["deleted_sessions"], 1, "{r}");
    assert_eq!(ids(&owner), vec![mine]);
    // The role stays in the test cluster with the test's database (its name is as unique).
}

/// A session deleted while a sync of the store runs (here: its lock held) leaves the sync's
/// rerun mark, so that the running sync goes once more and pushes the deletion now, not at
/// the next sync; with no sync running, it leaves none.
#[test]
fn a_delete_during_a_running_sync_has_it_go_once_more() {
    let Some(url) = memtrail_testkit::pg::test_database("delete_mark") else {
        return;
    };
    let m = Machine::new("dm");
    let first = hook_session(&m, 0x8000, 2);
    let second = hook_session(&m, 0x8001, 2);
    m.init(&format!("{url}?sslmode=disable"));
    let db = m.sb.db();
    let suffixed = |s: &str| {
        let mut p = db.clone().into_os_string();
        p.push(s);
        PathBuf::from(p)
    };
    let (lock, mark) = (suffixed(".sync.lock"), suffixed(".sync.rerun"));
    assert!(lock.exists() && !mark.exists());
    let running = std::fs::File::options()
        .read(true)
        .write(true)
        .open(&lock)
        .unwrap();
    running.lock().unwrap();
    m.sb.acmd()
        .args(["sessions", "delete", &first, "--yes"])
        .assert()
        .success();
    assert!(
        mark.exists(),
        "the running sync was not asked to go once more"
    );
    drop(running);
    std::fs::remove_file(&mark).unwrap();
    m.sb.acmd()
        .args(["sessions", "delete", &second, "--yes"])
        .assert()
        .success();
    assert!(!mark.exists());
}

/// A deleted its own session, B pulled the deletion, then A captured the session again. B,
/// offline meanwhile, meets a database new to it (restored, or another URL) and sends the
/// deletions made on it, not the one it pulled: A's session captured again survives, on A and
/// on B (found by the attack review: B sent A's deletion as its own).
#[test]
fn a_resent_deletion_spares_a_session_captured_again() {
    let (Some(url1), Some(url2)) = (database("resend_1"), database("resend_2")) else {
        return;
    };
    let (a, b) = (Machine::new("xa"), Machine::new("xb"));
    let s1 = hook_session(&a, 0xe000, 4);
    a.init(&url1);
    b.init(&url1);
    a.no_autosync();
    b.no_autosync();
    assert_eq!(listed(&b).len(), 1);
    assert!(
        a.run(&["sessions", "delete", &s1, "--yes"])
            .status
            .success()
    );
    a.json(&["sync", "--json"]);
    let r = b.json(&["sync", "--json"]);
    assert_eq!(r["sync"]["pulled"]["deleted_sessions"], 1, "{r}");
    // A captures it again and pushes it; B does not sync (offline).
    let out = a.run(&["sessions", "capture", &s1]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    a.json(&["sync", "--json"]);
    assert_eq!(listed(&a).len(), 1);
    // Both move to another database: A first, then B, then A again.
    a.init(&url2);
    a.json(&["sync", "--json"]);
    b.init(&url2);
    b.json(&["sync", "--json"]);
    a.json(&["sync", "--json"]);
    assert_eq!(
        listed(&a),
        vec![(s1.clone(), 4)],
        "A lost the session it captured again"
    );
    assert_eq!(listed(&b), vec![(s1.clone(), 4)]);
}

/// On a machine whose sessions all come from another one (a new machine after `sync --init`),
/// `sessions list` shows the MACHINE column: `--machine`'s help points at it, and it showed
/// none while every session listed came from the same machine. A machine's own sessions alone
/// show none.
#[test]
fn sessions_list_shows_the_machine_of_sessions_from_another_machine() {
    let Some(url) = database("machine_column") else {
        return;
    };
    let (a, b) = (Machine::new("laptop-a"), Machine::new("desk-b"));
    let id = hook_session(&a, 0xc010, 3);
    a.init(&url);
    b.init(&url);
    a.json(&["sync", "--json"]);
    b.json(&["sync", "--json"]);
    let text = |m: &Machine| {
        let out = m.run(&["sessions", "list"]);
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let on_b = text(&b);
    let line = on_b.lines().find(|l| l.contains(&id)).expect(&on_b);
    assert!(line.contains(" claude  laptop-a "), "{on_b}");
    let on_a = text(&a);
    let line = on_a.lines().find(|l| l.contains(&id)).expect(&on_a);
    assert!(!line.contains("laptop-a"), "{on_a}");
}

/// Line `i` of a Claude Code transcript of session `sid` in `cwd`: an entry of type `kind`
/// (`user`, `assistant`) with id `uuid` holding `message`, and its line break.
fn claude_json_line(
    sid: &str,
    cwd: &str,
    i: u64,
    uuid: &str,
    kind: &str,
    message: Value,
) -> String {
    serde_json::json!({
        "parentUuid": null, "isSidechain": false, "userType": "external", "cwd": cwd,
        "sessionId": sid, "version": "2.1.49", "gitBranch": "main", "type": kind,
        "uuid": uuid, "timestamp": format!("2026-11-20T10:00:0{i}.000Z"),
        "requestId": format!("req_{i}"), "message": message,
    })
    .to_string()
        + "\n"
}

/// Imports `a`'s transcripts, sets up sync on both machines with `url`, and syncs them twice.
fn import_and_sync(a: Machine, b: Machine, url: &str) -> [Machine; 2] {
    a.json(&["import", "--json"]);
    a.init(url);
    b.init(url);
    let machines = [a, b];
    sync_all(&machines, 2);
    machines
}

/// How many messages of session `uid` PostgreSQL holds that pass `and` (SQL after `WHERE
/// session_uid = …`, empty for all).
fn messages_of(pg: &Pg, uid: &str, and: &str) -> i64 {
    pg_count(
        pg,
        &format!("SELECT count(*) FROM messages WHERE session_uid = '{uid}' {and}"),
    )
}

/// A NUL in a transcript (JSON's `\u0000`: a tool's output of a binary file) reaches PostgreSQL
/// as U+FFFD, the replacement character: PostgreSQL's `text` holds no NUL, and before, the
/// first such message made every push fail ("invalid byte sequence for encoding UTF8: 0x00")
/// so that nothing of the machine was sent again. The words around it are kept, searchable
/// on PostgreSQL and on the machine that pulled them; the local store keeps the text as is.
#[test]
fn a_nul_in_a_transcript_reaches_postgres_as_a_replacement_character() {
    let Some(url) = database("nul") else {
        return;
    };
    let pg = Pg::connect_url(&url).unwrap();
    let (a, b) = (Machine::new("na"), Machine::new("nb"));
    let sid = session_id(0x0a11);
    let cwd = "/home/user/na";
    let line = |i: u64, kind: &str, message: Value| {
        claude_json_line(&sid, cwd, i, &format!("u{i}"), kind, message)
    };
    // Two messages: the prompt, and the tool call with its result.
    let text = [
        line(
            0,
            "user",
            serde_json::json!({"role": "user",
            "content": "inspect the zebrafoo header \u{0} then the remaining words"}),
        ),
        line(
            1,
            "assistant",
            serde_json::json!({"model": "claude-sonnet-4-5", "id": "msg_n1",
            "type": "message", "role": "assistant", "stop_reason": null,
            "content": [{"type": "tool_use", "id": "toolu_n1", "name": "Bash",
                "input": {"command": "head -c 8 zebrafoo.bin\u{0}"}}]}),
        ),
        line(
            2,
            "user",
            serde_json::json!({"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": "toolu_n1", "content": "ELF\u{0}\u{0} zebrafoo quokka output"}]}),
        ),
    ]
    .concat();
    std::fs::write(a.sb.transcript("na", &sid), text).unwrap();
    let machines = import_and_sync(a, b, &url);
    let [a, b] = &machines;
    let uid = session_uid(&a.id(), "claude", &sid);
    assert_eq!(messages_of(&pg, &uid, ""), 2);
    assert_eq!(
        messages_of(&pg, &uid, "AND body || tools LIKE '%' || chr(65533) || '%'"),
        2
    );
    assert_eq!(
        pg_count(
            &pg,
            &format!(
                "SELECT count(*) FROM sessions WHERE uid = '{uid}' \
                 AND title LIKE 'inspect the zebrafoo header ' || chr(65533) || '%'"
            )
        ),
        1
    );
    // Searched on PostgreSQL and on the machine that pulled it: the words after the NUL too.
    let on_pg = a.json(&["--store", &url, "search", "remaining", "--json"]);
    assert_eq!(on_pg["hits"].as_array().unwrap().len(), 1, "{on_pg}");
    let pulled = b.json(&["search", "quokka", "--json"]);
    let hits = pulled["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{pulled}");
    assert_eq!(hits[0]["session_id"], sid.as_str(), "{pulled}");
    let pulled = b.json(&["search", "zebrafoo", "--json"]);
    assert_eq!(pulled["hits"].as_array().unwrap().len(), 2, "{pulled}");
    // The local store keeps the NUL.
    let here = a.json(&["sessions", "show", &sid, "--json"]);
    assert!(here.to_string().contains("header \\u0000 then"), "{here}");
}

/// Ids and indexed values too long for PostgreSQL's B-tree indexes (over 2,704 bytes an entry)
/// or holding a NUL reach it as their beginning and a hash (`sync::postgres_key`): before, one
/// such value (a message id, a tool call's id or name, a model, a project folder) made every
/// push fail ("index row size … exceeds btree version 4 maximum 2704"), and with NUL sent as
/// U+FFFD, `dup\0` and `dup\u{FFFD}` were one message. Both machines keep every message; a
/// deletion of such a session on the machine that pulled it deletes it at its origin too.
#[test]
fn ids_postgresql_cannot_index_reach_it_as_a_beginning_and_a_hash() {
    let Some(url) = database("longkeys") else {
        return;
    };
    let pg = Pg::connect_url(&url).unwrap();
    let (a, b) = (Machine::new("ka"), Machine::new("kb"));
    let sid = session_id(0x0a12);
    // Random-looking (incompressible) text: PostgreSQL compresses a long repetitive value
    // below its index limit.
    let noise = |seed: u64, n: usize| -> String {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'a' + (x % 26) as u8)
            })
            .collect()
    };
    let cwd = format!("/home/user/{}", noise(1, 4000));
    let line = |i: u64, uuid: &str, kind: &str, message: Value| {
        claude_json_line(&sid, &cwd, i, uuid, kind, message)
    };
    let long_id = noise(2, 3000);
    let model = format!("claude-{}", noise(3, 3000));
    let tool = format!("Tool{}", noise(4, 3000));
    let call = format!("toolu_{}", noise(5, 3000));
    let text = [
        line(
            0,
            &long_id,
            "user",
            serde_json::json!({"role": "user", "content": "first wombat prompt"}),
        ),
        line(
            1,
            "dup\u{0}",
            "user",
            serde_json::json!({"role": "user", "content": "second wombat prompt"}),
        ),
        line(
            2,
            "dup\u{FFFD}",
            "user",
            serde_json::json!({"role": "user", "content": "third wombat prompt"}),
        ),
        line(
            3,
            "a3",
            "assistant",
            serde_json::json!({"model": model, "id": "msg_k3",
            "type": "message", "role": "assistant", "stop_reason": null,
            "content": [{"type": "tool_use", "id": call, "name": tool, "input": {"x": "wombat"}}]}),
        ),
    ]
    .concat();
    let t = a.sb.transcript("ka", &sid);
    std::fs::write(&t, text).unwrap();
    // A Claude Code 2.0 sub-agent's transcript: its session id is `<sessionId>/agent-abc`,
    // here with 400 NULs (as U+FFFD they are over the bytes a key keeps).
    let sub = serde_json::json!({
        "parentUuid": null, "isSidechain": true, "userType": "external", "cwd": "/home/user/ka",
        "sessionId": format!("x{}y", "\u{0}".repeat(400)), "version": "2.0.1", "gitBranch": "main", "type": "user",
        "uuid": "s0", "timestamp": "2026-11-20T10:01:00.000Z",
        "message": {"role": "user", "content": "a numbat task for the sub-agent"},
    });
    std::fs::write(t.with_file_name("agent-abc.jsonl"), format!("{sub}\n")).unwrap();
    let machines = import_and_sync(a, b, &url);
    let [a, b] = &machines;
    let uid = session_uid(&a.id(), "claude", &sid);
    assert_eq!(messages_of(&pg, &uid, ""), 4);
    // The long id and `dup\0` as keys; `dup\u{FFFD}` and the answer's `msg_k3` as they are.
    assert_eq!(messages_of(&pg, &uid, "AND ext_id LIKE '%…#%'"), 2);
    assert_eq!(
        messages_of(&pg, &uid, "AND ext_id IN ('msg_k3', 'dup' || chr(65533))"),
        2
    );
    assert_eq!(pg_count(&pg, "SELECT count(*) FROM tool_calls"), 1);
    let pulled = b.json(&["search", "wombat", "--json"]);
    assert_eq!(pulled["hits"].as_array().unwrap().len(), 4, "{pulled}");
    let numbat = b.json(&["search", "numbat", "--json"]);
    let sub_id = numbat["hits"][0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        sub_id.starts_with(&format!("x{}", "\u{FFFD}".repeat(366))),
        "{numbat}"
    );
    assert!(sub_id.len() < 1200 && sub_id.contains("…#"), "{numbat}");
    assert_eq!(
        a.json(&["search", "numbat", "--json"])["hits"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // Deleted on the machine that pulled them: gone from PostgreSQL and from their origin.
    for id in [&sid, &sub_id] {
        b.sb.acmd()
            .args(["sessions", "delete", id, "--yes"])
            .assert()
            .success();
    }
    sync_all(&machines, 2);
    let here = a.json(&["search", "numbat", "--json"]);
    assert_eq!(here["hits"].as_array().unwrap().len(), 0, "{here}");
    assert_eq!(messages_of(&pg, &uid, ""), 0);
    let here = a.json(&["search", "wombat", "--json"]);
    assert_eq!(here["hits"].as_array().unwrap().len(), 0, "{here}");
}

/// `sync --init` refuses a database whose encoding is not UTF8, saying how to make one, and
/// creates nothing in it (SQL_ASCII counts bytes as characters, so a snippet was cut inside a
/// character and every search that met it failed; LATIN1 cannot hold most text).
#[test]
fn sync_init_refuses_a_database_that_is_not_utf8() {
    let Some(url) = database("notutf8") else {
        return;
    };
    let name = format!(
        "{}_ascii",
        url.rsplit('/').next().unwrap().split('?').next().unwrap()
    );
    cluster_sql(&format!(
        "CREATE DATABASE {name} ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"
    ));
    let base = url.rsplit_once('/').unwrap().0;
    let ascii = format!("{base}/{name}?sslmode=disable");
    let m = Machine::new("enc");
    let out = m.run(&["sync", "--init", &ascii, "--label", "enc"]);
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the database's encoding is SQL_ASCII, and memtrail needs UTF8")
            && err.contains("ENCODING 'UTF8' TEMPLATE template0"),
        "{err}"
    );
    let pg = Pg::connect_url(&ascii).unwrap();
    assert_eq!(
        pg_count(
            &pg,
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ),
        0
    );
    // The same machine then sets up sync with a UTF8 database.
    m.init(&url);
}
