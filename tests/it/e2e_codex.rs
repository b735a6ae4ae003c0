//! End to end with the real Codex CLI, offline.
//!
//! Codex (`codex exec`) runs in a sandboxed HOME / CODEX_HOME against a scripted stub of the
//! OpenAI Responses API on loopback (`tests/e2e/stub_openai.py`, a `[model_providers.stub]` with
//! `wire_api = "responses"`). memtrail is wired into that sandbox (today by hand, see
//! [`write_config_by_hand`]; with `MEMTRAIL_E2E_USE_INSTALL=1` by `memtrail install --agent codex
//! --yes`): `notify` (chaining the user's own notify program), `hooks.json` next to another
//! tool's hooks, `[mcp_servers.memtrail]` and the skill. The hooks are trusted the way Codex's
//! `/hooks` review does it (the app server's `hooks/list` then `config/batchWrite` of
//! `hooks.state`). Then three real turns: a real shell tool call (`ls`), a resumed turn
//! (`codex exec resume <id>`) with a distinctive phrase, and a turn where the model calls
//! memtrail's MCP `search` inside Codex. The store is checked through the CLI (`search`,
//! `sessions show` has the tool call with its output), Codex's view of the MCP server through
//! `codex mcp list` and the app server's `mcpServerStatus/list`, the skill through `skills/list`.
//!
//! Needs: the `codex` binary (`MEMTRAIL_CODEX_BIN`, else the one `scripts/e2e-deps` installs in
//! `target/e2e-tools`, else `codex` on PATH) and `python3` (standard library only). Without
//! them the test prints "skipped: ..." and passes, unless `MEMTRAIL_REQUIRE_E2E=1`, then it
//! fails. Other knobs: `MEMTRAIL_E2E_KEEP=1` (keep the sandbox), `MEMTRAIL_E2E_PYTHON`,
//! `MEMTRAIL_E2E_MEMTRAIL_BIN`, `MEMTRAIL_E2E_USE_INSTALL=1` (configure with `memtrail install`,
//! and check that `memtrail uninstall` gives back config.toml and hooks.json byte for byte),
//! `MEMTRAIL_E2E_SAVE_PAYLOADS=1` (write the real payloads seen, paths sanitised, to
//! `tests/e2e/payloads/codex-*`).
//!
//! Nothing outside the sandbox is touched: every child gets a cleared environment with HOME,
//! XDG_*, CODEX_HOME and TMPDIR inside a temp folder. The store is memtrail's default path in
//! that HOME (`$XDG_DATA_HOME/memtrail/memtrail.db`), not `MEMTRAIL_DB`: Codex starts MCP servers
//! with only a few variables of its environment (HOME, PATH, ...), so a `MEMTRAIL_DB` would
//! reach the hooks but not `memtrail mcp`.
#![cfg(unix)]

use crate::common;

use common::{
    Stub, env_flag, find, is_executable, kill_group, memtrail_bin, print_files, read, repo_root,
    resolve_python, run, run_ok, sandbox_cmd, sandbox_env, show, stdout_json, text, tools_or_skip,
    which,
};
use serde_json::{Value, json};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// The distinctive phrase of turn 2, searched for afterwards.
const PHRASE: &str = "remember the zanzibar quokka protocol";
/// A file in the project folder: its name must come back through the real shell tool.
const MARKER_FILE: &str = "marker-7f3a9c.txt";
/// The hook events memtrail registers in `hooks.json` (by hand, until the installer does).
const MEMTRAIL_EVENTS: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "SubagentStop",
    "Stop",
    "SessionEnd",
];
/// The events the "other tool" hooks (the payload recorder) listen to.
const OTHER_EVENTS: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SessionEnd",
];

// ------------------------------------------------------------------------------------ tools

struct Tools {
    codex: PathBuf,
    python: PathBuf,
    memtrail: PathBuf,
}

/// The native Codex binary `scripts/e2e-deps` installs:
/// `target/e2e-tools/node_modules/@openai/codex-<os>-<arch>/vendor/<triple>/bin/codex`.
fn e2e_tools_codex() -> Option<PathBuf> {
    let tools = std::env::var_os("MEMTRAIL_E2E_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/e2e-tools"));
    let scope = tools.join("node_modules/@openai");
    let mut found = Vec::new();
    for pkg in fs::read_dir(&scope).ok()?.flatten() {
        if !pkg.file_name().to_string_lossy().starts_with("codex-") {
            continue;
        }
        for triple in fs::read_dir(pkg.path().join("vendor"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let b = triple.path().join("bin/codex");
            if is_executable(&b) {
                found.push(b);
            }
        }
    }
    found.sort();
    found.into_iter().next()
}

/// Finds codex, python and memtrail, or says why not.
fn find_tools() -> Result<Tools, String> {
    let codex = match common::bin_from_env("MEMTRAIL_CODEX_BIN")? {
        Some(p) => p,
        None => e2e_tools_codex().or_else(|| which("codex")).ok_or(
            "no codex binary (set MEMTRAIL_CODEX_BIN, or run scripts/e2e-deps to install it in target/e2e-tools)",
        )?,
    };
    let python = resolve_python("import sys; print(sys.executable)", "does not run")?;
    Ok(Tools {
        codex,
        python,
        memtrail: memtrail_bin(),
    })
}

// ------------------------------------------------------------------------------------ sandbox

struct Sandbox {
    _dir: common::SandboxDir,
    root: PathBuf,
    home: PathBuf,
    codex_home: PathBuf,
    state: PathBuf,
    project: PathBuf,
    bin: PathBuf,
    /// Where the other tool's hook and notify program drop what they receive.
    captures: PathBuf,
    env: Vec<(String, OsString)>,
}

impl Sandbox {
    fn new() -> Sandbox {
        let (dir, root) = common::SandboxDir::new("memtrail-e2e-codex-");
        let home = root.join("home");
        // CODEX_HOME must exist when set.
        let codex_home = home.join(".codex");
        let state = home.join(".local/state");
        let project = root.join("project");
        let bin = root.join("bin");
        let tmp = root.join("tmp");
        let captures = root.join("captures");
        for d in [
            &home,
            &codex_home,
            &state,
            &project,
            &bin,
            &tmp,
            &captures,
            &home.join(".config"),
            &home.join(".local/share"),
            &home.join(".cache"),
        ] {
            fs::create_dir_all(d).expect("create sandbox dir");
        }
        let mut path = OsString::from(bin.as_os_str());
        path.push(":/usr/local/bin:/usr/bin:/bin");
        let env = sandbox_env(
            path,
            &home,
            &state,
            &tmp,
            vec![
                ("CODEX_HOME".into(), codex_home.clone().into()),
                // The stub provider's env_key (Codex sends it as a Bearer token).
                ("MEMTRAIL_STUB_OPENAI_KEY".into(), "sk-stub-test".into()),
                ("MEMTRAIL_E2E_CAPTURES".into(), captures.clone().into()),
            ],
        );
        Sandbox {
            _dir: dir,
            root,
            home,
            codex_home,
            state,
            project,
            bin,
            captures,
            env,
        }
    }

    /// A command with the sandbox environment (and nothing else), run in the project folder.
    fn cmd(&self, program: impl AsRef<OsStr>) -> Command {
        sandbox_cmd(&self.env, &self.project, program)
    }

    fn config_toml(&self) -> PathBuf {
        self.codex_home.join("config.toml")
    }

    fn hooks_json(&self) -> PathBuf {
        self.codex_home.join("hooks.json")
    }

    fn db(&self) -> PathBuf {
        self.home.join(".local/share/memtrail/memtrail.db")
    }

    fn hook_log(&self) -> PathBuf {
        self.state.join("memtrail/hook.log")
    }

    fn skill(&self) -> PathBuf {
        self.codex_home.join("skills/memtrail/SKILL.md")
    }
}

/// The stub of the OpenAI Responses API, run by the sandbox's python.
fn start_stub(sb: &Sandbox, tools: &Tools, script: &Value) -> Stub {
    Stub::start(sb.cmd(&tools.python), &sb.root, "stub_openai.py", script)
}

// ------------------------------------------------------------------------------------ app server

/// A JSON-RPC client of `codex app-server` (stdio, one JSON object per line): what the TUI's
/// `/hooks` review, `/mcp` and `/skills` use. Killed on drop.
struct AppServer {
    child: Child,
    stdin: ChildStdin,
    rx: mpsc::Receiver<String>,
    next_id: u64,
}

impl AppServer {
    fn start(sb: &Sandbox, codex: &Path) -> AppServer {
        let err = fs::File::create(sb.root.join("app-server.stderr")).unwrap();
        let mut cmd = sb.cmd(codex);
        cmd.arg("app-server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(err))
            .process_group(0);
        let mut child = cmd.spawn().expect("start codex app-server");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = AppServer {
            child,
            stdin,
            rx,
            next_id: 1,
        };
        s.request(
            "initialize",
            json!({"clientInfo": {"name": "memtrail-e2e", "version": "0"}}),
        )
        .expect("app-server initialize");
        s.notify("initialized");
        s
    }

    fn notify(&mut self, method: &str) {
        let line = json!({"method": method}).to_string();
        writeln!(self.stdin, "{line}").expect("write to app-server");
    }

    /// Sends a request and waits (30 s at most) for its answer: `Ok(result)` or `Err(error)`.
    fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"id": id, "method": method, "params": params}).to_string();
        writeln!(self.stdin, "{line}").expect("write to app-server");
        self.stdin.flush().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("app-server: no answer to {method} within 30 s"));
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if msg["id"] != json!(id) || msg.get("method").is_some() {
                continue; // a notification or a request of the server
            }
            return match msg.get("error") {
                Some(e) => Err(e.clone()),
                None => Ok(msg["result"].clone()),
            };
        }
    }

    /// `hooks/list` for one cwd: every hook Codex discovered, with key, command, trust status.
    fn hooks(&mut self, cwd: &Path) -> Value {
        let r = self
            .request("hooks/list", json!({"cwds": [cwd]}))
            .unwrap_or_else(|e| panic!("hooks/list failed: {e}"));
        let entry = &r["data"][0];
        assert!(
            entry["errors"].as_array().is_none_or(|e| e.is_empty()),
            "Codex reports errors in the hooks config: {:#}",
            entry["errors"]
        );
        entry.clone()
    }

    /// Trusts every hook that is `untrusted` or `modified`, as the user does in `/hooks`:
    /// `hooks.state."<key>".trusted_hash = <currentHash>` in the user's config.toml. Returns the
    /// keys it trusted.
    fn trust_all(&mut self, cwd: &Path) -> Vec<String> {
        let entry = self.hooks(cwd);
        let mut edits = Vec::new();
        let mut keys = Vec::new();
        for h in entry["hooks"].as_array().into_iter().flatten() {
            if h["trustStatus"] == "untrusted" || h["trustStatus"] == "modified" {
                let key = h["key"].as_str().unwrap().to_string();
                edits.push(json!({
                    "keyPath": format!("hooks.state.\"{key}\""),
                    "mergeStrategy": "upsert",
                    "value": {"trusted_hash": h["currentHash"]},
                }));
                keys.push(key);
            }
        }
        if !edits.is_empty() {
            self.request("config/batchWrite", json!({"edits": edits}))
                .unwrap_or_else(|e| panic!("config/batchWrite (hook trust) failed: {e}"));
        }
        keys
    }
}

impl Drop for AppServer {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

// ------------------------------------------------------------------------------------ config

/// The user's config.toml before memtrail: the stub provider (offline), another MCP server, the
/// user's own `notify` program, comments and odd spacing that an editor must keep.
fn user_config_toml(sb: &Sandbox, port: u16) -> String {
    let other_notify = sb.bin.join("other-notify");
    format!(
        r#"# My Codex config (memtrail's e2e: this comment and the spacing below must survive)
model = "stub-model"
model_provider  =  "stub"
notify = ["{other_notify}", "--from-codex"]
check_for_update_on_startup = false

[features]
# Offline: the plugin marketplace sync clones https://github.com/openai/plugins.git and asks
# api.github.com and chatgpt.com at every start; nothing else reaches the network.
plugins = false

[analytics]
enabled = false

[model_providers.stub]
name = "memtrail e2e stub"
base_url = "http://127.0.0.1:{port}/v1"
wire_api = "responses"
env_key = "MEMTRAIL_STUB_OPENAI_KEY"
request_max_retries = 0
stream_max_retries = 0

[mcp_servers.other-tool]
command = "other-tool-mcp"
args = ["serve", "--quiet"]
enabled = false
"#,
        other_notify = other_notify.display()
    )
}

/// The user's hooks.json before memtrail: another tool's recorder on a few events (it also
/// captures the real payloads for this test), tabs and a key order of its own.
fn user_hooks_json(sb: &Sandbox) -> String {
    let other = sb.bin.join("other-hook");
    let mut s = String::from("{\n\t\"hooks\": {\n");
    for (i, ev) in OTHER_EVENTS.iter().enumerate() {
        let timeout = if *ev == "SessionEnd" { 3 } else { 10 };
        s.push_str(&format!(
            "\t\t\"{ev}\": [\n\t\t\t{{ \"hooks\": [ {{ \"command\": \"{} {ev}\", \"type\": \"command\", \"timeout\": {timeout} }} ] }}\n\t\t]{}\n",
            other.display(),
            if i + 1 < OTHER_EVENTS.len() { "," } else { "" }
        ));
    }
    s.push_str("\t}\n}\n");
    s
}

/// The other tool's programs: `other-hook <event>` keeps its stdin (the payload),
/// `other-notify` its argv (the notify payload is the last argument), one file each.
fn write_other_tool(sb: &Sandbox) {
    use std::os::unix::fs::PermissionsExt;
    let hook = "#!/bin/sh\nf=$(mktemp \"$MEMTRAIL_E2E_CAPTURES/hook-$1-XXXXXX\")\ncat > \"$f\"\n";
    let notify = "#!/bin/sh\nf=$(mktemp \"$MEMTRAIL_E2E_CAPTURES/notify-XXXXXX\")\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > \"$f\"\n";
    for (name, body) in [("other-hook", hook), ("other-notify", notify)] {
        let p = sb.bin.join(name);
        fs::write(&p, body).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// memtrail's Codex config, written by hand until `memtrail install --agent codex` exists: what
/// the installer is expected to write. Switch to the installer with `MEMTRAIL_E2E_USE_INSTALL=1`
/// (or make [`configure_memtrail`] always take that branch once it lands).
///
/// - config.toml: `notify` becomes memtrail, chaining the user's program after `--then`
///   (`memtrail hook codex --then <user's notify...> <payload>` runs it with the same payload);
///   `[mcp_servers.memtrail]` (`command`, `args = ["mcp"]`) appended.
/// - hooks.json: one group `{"hooks": [{"type": "command", "command": "<memtrail> hook codex"}]}`
///   appended to each of [`MEMTRAIL_EVENTS`] (appended, so the other tool's positional trust
///   keys `<path>:<event>:<group>:<handler>` do not move; SessionEnd's timeout is at most 3 s,
///   Codex clamps it and warns otherwise).
/// - the skill: `$CODEX_HOME/skills/memtrail/SKILL.md`.
fn write_config_by_hand(sb: &Sandbox, memtrail: &Path) {
    let m = memtrail.display().to_string();
    // config.toml: a line edit that keeps everything else byte for byte.
    let cfg = fs::read_to_string(sb.config_toml()).unwrap();
    let mut out = String::new();
    let mut replaced = false;
    for line in cfg.split_inclusive('\n') {
        if !replaced && line.starts_with("notify = [") {
            let user_prog = line
                .trim_end()
                .trim_start_matches("notify = [")
                .trim_end_matches(']');
            out.push_str(&format!(
                "notify = [\"{m}\", \"hook\", \"codex\", \"--then\", {user_prog}]\n"
            ));
            replaced = true;
        } else {
            out.push_str(line);
        }
    }
    assert!(replaced, "the user's config.toml has no notify line");
    out.push_str(&format!(
        "\n[mcp_servers.memtrail]\ncommand = \"{m}\"\nargs = [\"mcp\"]\n"
    ));
    fs::write(sb.config_toml(), out).unwrap();

    // hooks.json: append memtrail's group to each event (a JSON edit; the formatting of the
    // user's file is not kept here, the installer's jsonedit does that).
    let mut hooks: Value = serde_json::from_slice(&read(&sb.hooks_json())).unwrap();
    for ev in MEMTRAIL_EVENTS {
        let mut handler = json!({"type": "command", "command": format!("{m} hook codex")});
        if *ev == "SessionEnd" {
            handler["timeout"] = json!(3);
        }
        let group = json!({"hooks": [handler]});
        match hooks["hooks"][*ev].as_array_mut() {
            Some(groups) => groups.push(group),
            None => hooks["hooks"][*ev] = json!([group]),
        }
    }
    fs::write(
        sb.hooks_json(),
        serde_json::to_string_pretty(&hooks).unwrap() + "\n",
    )
    .unwrap();

    let skill = sb.skill();
    fs::create_dir_all(skill.parent().unwrap()).unwrap();
    fs::copy(repo_root().join("skills/memtrail/SKILL.md"), &skill).unwrap();
}

/// Configure with `memtrail install --agent codex --yes` (and check `uninstall`) instead of
/// [`write_config_by_hand`] (the default since the installer supports Codex).
const USE_INSTALL_BY_DEFAULT: bool = true;

fn use_install() -> bool {
    USE_INSTALL_BY_DEFAULT || env_flag("MEMTRAIL_E2E_USE_INSTALL")
}

/// Wires memtrail into the sandbox: by hand (today), or with the installer.
fn configure_memtrail(sb: &Sandbox, tools: &Tools) {
    if use_install() {
        let mut c = sb.cmd(&tools.memtrail);
        c.args(["install", "--agent", "codex", "--yes"]);
        let out = run_ok(c, "memtrail install --agent codex --yes");
        eprintln!(
            "e2e: install said:\n{}",
            String::from_utf8_lossy(&out.stdout).trim_end()
        );
    } else {
        write_config_by_hand(sb, &tools.memtrail);
    }
}

// ------------------------------------------------------------------------------------ helpers

/// One `codex exec --json` turn: the thread id, the agent's messages and every event.
struct Turn {
    thread_id: String,
    messages: Vec<String>,
    events: Vec<Value>,
}

fn codex_turn(sb: &Sandbox, tools: &Tools, resume: Option<&str>, prompt: &str, what: &str) -> Turn {
    let mut c = sb.cmd(&tools.codex);
    c.args(["exec", "--json"]);
    if resume.is_some() {
        c.arg("resume");
    }
    // Root in a container: no bubblewrap sandbox, no approvals (exec never asks anyway).
    c.args([
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
    ]);
    if let Some(id) = resume {
        c.arg(id);
    }
    c.arg(prompt);
    let out = run_ok(c, what);
    let events: Vec<Value> = text(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    if let Some(f) = events.iter().find(|e| e["type"] == "turn.failed") {
        panic!("{what}: the turn failed: {f:#}\n{}", show(&out));
    }
    let thread_id = events
        .iter()
        .find(|e| e["type"] == "thread.started")
        .and_then(|e| e["thread_id"].as_str())
        .unwrap_or_else(|| panic!("{what}: no thread.started event\n{}", show(&out)))
        .to_string();
    let messages = events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "agent_message")
        .filter_map(|e| e["item"]["text"].as_str().map(str::to_string))
        .collect();
    Turn {
        thread_id,
        messages,
        events,
    }
}

/// The rollout files of a thread: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`.
fn rollouts(codex_home: &Path, thread_id: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![codex_home.join("sessions")];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("rollout-") && n.ends_with(&format!("-{thread_id}.jsonl"))
            }) {
                out.push(p);
            }
        }
    }
    out
}

/// What the other tool's programs received: (event, payload) per hook run, and the argv of
/// each notify run, in the order they ran (files are named by mktemp; sort by mtime).
fn captures(sb: &Sandbox) -> (Vec<(String, Value)>, Vec<Vec<String>>) {
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = fs::read_dir(&sb.captures)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| (e.metadata().and_then(|m| m.modified()).unwrap(), e.path()))
        .collect();
    files.sort();
    let mut hooks = Vec::new();
    let mut notifies = Vec::new();
    for (_, p) in files {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let body = read(&p);
        if let Some(rest) = name.strip_prefix("hook-") {
            let event = rest.rsplit_once('-').map(|(e, _)| e).unwrap_or(rest);
            let v: Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
                panic!(
                    "the {event} hook payload is not JSON ({e}): {}",
                    text(&body)
                )
            });
            hooks.push((event.to_string(), v));
        } else if name.starts_with("notify-") {
            notifies.push(
                body.split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .map(text)
                    .collect(),
            );
        }
    }
    (hooks, notifies)
}

/// Replaces the sandbox's paths by stable ones (`/home/user`, ...) in a saved payload.
fn sanitize(s: &str, sb: &Sandbox, tools: &Tools) -> String {
    s.replace(
        &tools.memtrail.display().to_string(),
        "/usr/local/bin/memtrail",
    )
    .replace(&sb.project.display().to_string(), "/home/user/project")
    .replace(&sb.home.display().to_string(), "/home/user")
    .replace(&sb.root.display().to_string(), "/tmp/sandbox")
}

/// `MEMTRAIL_E2E_SAVE_PAYLOADS=1`: the real payloads of this run into tests/e2e/payloads/.
fn save_payloads(
    sb: &Sandbox,
    tools: &Tools,
    hooks: &[(String, Value)],
    notifies: &[Vec<String>],
    rollout: &Path,
) {
    let dir = repo_root().join("tests/e2e/payloads");
    let mut seen = std::collections::BTreeSet::new();
    let mut write = |name: String, body: String| {
        if seen.insert(name.clone()) {
            let p = dir.join(&name);
            fs::write(&p, sanitize(&body, sb, tools)).unwrap();
            eprintln!("e2e: saved {}", p.display());
        }
    };
    for (event, v) in hooks {
        let name = match (
            event.as_str(),
            v["source"].as_str(),
            v["tool_name"].as_str(),
        ) {
            ("SessionStart", Some(src), _) => format!("codex-SessionStart-{src}.json"),
            ("PreToolUse" | "PostToolUse", _, Some(t)) if t.starts_with("mcp__") => {
                format!("codex-{event}-mcp.json")
            }
            _ => format!("codex-{event}.json"),
        };
        write(name, serde_json::to_string_pretty(v).unwrap() + "\n");
    }
    if let Some(argv) = notifies.first() {
        // What the user's notify program got (memtrail ran it with Codex's payload appended).
        let payload: Value = serde_json::from_str(argv.last().unwrap()).unwrap();
        let doc = json!({
            "note": "notify = [\"/usr/local/bin/memtrail\", \"hook\", \"codex\", \"--then\", \"/tmp/sandbox/bin/other-notify\", \"--from-codex\"]: Codex ran memtrail with that argv plus the payload as one last argument; memtrail ran the user's program with its own arguments plus the same payload. `argv` is what that program received (argv[1..]).",
            "argv": argv,
            "payload": payload,
        });
        write(
            "codex-notify-argv.json".into(),
            serde_json::to_string_pretty(&doc).unwrap() + "\n",
        );
    }
    write(
        "codex-rollout-3turns.jsonl".into(),
        fs::read_to_string(rollout).unwrap(),
    );
}

/// The error lines of memtrail's hook log.
fn hook_errors(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains(" error: "))
        .map(str::to_string)
        .collect()
}

/// Prints what helps to understand a failure (only when the test panics).
struct Diagnostics<'a> {
    sb: &'a Sandbox,
    stub_log: PathBuf,
}

impl Drop for Diagnostics<'_> {
    fn drop(&mut self) {
        if !thread::panicking() {
            return;
        }
        eprintln!("\n==================== e2e diagnostics ====================");
        eprintln!("sandbox: {}", self.sb.root.display());
        eprintln!("--- stub requests ({}):", self.stub_log.display());
        for l in fs::read_to_string(&self.stub_log)
            .unwrap_or_default()
            .lines()
        {
            let v: Value = serde_json::from_str(l).unwrap_or(Value::Null);
            let last = v["body"]["input"]
                .as_array()
                .and_then(|m| m.last())
                .map(|m| m.to_string())
                .unwrap_or_default();
            let cut: String = last.chars().take(300).collect();
            eprintln!(
                "  {} {} kind={} rule={} status={} last={}",
                v["method"].as_str().unwrap_or("?"),
                v["path"].as_str().unwrap_or("?"),
                v["kind"],
                v["rule"],
                v["status"],
                cut
            );
        }
        print_files(&[
            ("memtrail hook log", self.sb.hook_log()),
            ("config.toml", self.sb.config_toml()),
            ("hooks.json", self.sb.hooks_json()),
            ("app-server stderr", self.sb.root.join("app-server.stderr")),
        ]);
        eprintln!(
            "--- captures: {:?}",
            fs::read_dir(&self.sb.captures)
                .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
        );
        eprintln!("==========================================================\n");
    }
}

// ------------------------------------------------------------------------------------ the test

#[test]
fn codex_end_to_end() {
    let t0 = Instant::now();
    let Some(tools) = tools_or_skip(find_tools) else {
        return;
    };
    let sb = Sandbox::new();
    // `codex` on the sandbox PATH too (the installer's detection), whatever the binary's name.
    std::os::unix::fs::symlink(&tools.codex, sb.bin.join("codex")).unwrap();
    eprintln!("e2e: codex = {}", tools.codex.display());
    eprintln!("e2e: memtrail = {}", tools.memtrail.display());
    eprintln!("e2e: sandbox = {}", sb.root.display());
    eprintln!(
        "e2e: memtrail config written {}",
        if use_install() {
            "by `memtrail install --agent codex --yes`"
        } else {
            "by hand (write_config_by_hand)"
        }
    );
    let v = run_ok(
        {
            let mut c = sb.cmd(&tools.codex);
            c.arg("--version");
            c
        },
        "codex --version",
    );
    eprintln!("e2e: {}", text(&v.stdout).trim());

    // --- the stub model ---------------------------------------------------------------------
    let script = json!({
        "rules": [
            {
                "match": "run ls",
                "reply": [
                    {"type": "text", "text": "I will list the files in this folder."},
                    {"type": "shell", "command": "ls"}
                ],
                "after_tool": "The folder contains: {tool_result}"
            },
            {"match": "zanzibar quokka", "reply": "Understood: the zanzibar quokka protocol is noted."},
            {
                "match": "what did we decide",
                "reply": [{"type": "function_call", "name_regex": "^mcp__memtrail\\.search$",
                           "arguments": {"query": "zanzibar quokka"}}],
                "after_tool": "Memory says: {tool_result}"
            }
        ],
        "fallback": "OK."
    });
    let stub = start_stub(&sb, &tools, &script);
    let _diag = Diagnostics {
        sb: &sb,
        stub_log: stub.log.clone(),
    };
    eprintln!("e2e: stub on port {}", stub.port);

    // --- a. the user's config, then memtrail's ------------------------------------------------
    write_other_tool(&sb);
    fs::write(sb.config_toml(), user_config_toml(&sb, stub.port)).unwrap();
    fs::write(sb.hooks_json(), user_hooks_json(&sb)).unwrap();
    // The user reviewed and trusted the other tool's hooks long ago (`/hooks`).
    {
        let mut app = AppServer::start(&sb, &tools.codex);
        let trusted = app.trust_all(&sb.project);
        assert_eq!(
            trusted.len(),
            OTHER_EVENTS.len(),
            "expected one untrusted hook per event of the other tool: {trusted:?}"
        );
    }
    let config_a = read(&sb.config_toml());
    let hooks_a = read(&sb.hooks_json());

    configure_memtrail(&sb, &tools);
    let config_b = read(&sb.config_toml());
    let hooks_b = read(&sb.hooks_json());
    assert!(
        config_b != config_a,
        "memtrail's config did not change config.toml"
    );
    eprintln!("e2e: config.toml with memtrail:\n{}", text(&config_b));

    // What Codex sees of it (its app server: the same calls as the TUI's /hooks, /mcp, /skills).
    let mut app = AppServer::start(&sb, &tools.codex);
    let entry = app.hooks(&sb.project);
    let list = entry["hooks"].as_array().cloned().unwrap_or_default();
    let m = tools.memtrail.display().to_string();
    let ours: Vec<&Value> = list
        .iter()
        .filter(|h| h["command"].as_str().is_some_and(|c| c.contains(&m)))
        .collect();
    assert!(
        !ours.is_empty(),
        "Codex does not see any memtrail hook: {:#}",
        entry
    );
    for h in &ours {
        eprintln!(
            "e2e: hook {} {} -> {}",
            h["key"].as_str().unwrap_or("?"),
            h["trustStatus"],
            h["command"]
        );
    }
    if !entry["warnings"].as_array().is_none_or(|w| w.is_empty()) {
        eprintln!(
            "e2e: NOTE: Codex warns about the hooks: {}",
            entry["warnings"]
        );
    }
    // The other tool's hooks keep their trust: memtrail's entries did not shift their keys.
    for h in list.iter().filter(|h| {
        h["command"]
            .as_str()
            .is_some_and(|c| c.contains("other-hook"))
    }) {
        assert_eq!(
            h["trustStatus"], "trusted",
            "the other tool's hook lost its trust after memtrail's config (keys are positional: \
             memtrail must append its groups): {h:#}"
        );
    }
    let untrusted: Vec<&&Value> = ours
        .iter()
        .filter(|h| h["trustStatus"] != "trusted" && h["trustStatus"] != "managed")
        .collect();
    if !untrusted.is_empty() {
        // Codex skips non-managed hooks until the user trusts them (`/hooks`); do what the user
        // does. (An installer could do the same through `codex app-server`.)
        eprintln!(
            "e2e: NOTE: {} of memtrail's {} hooks are untrusted after configuration; trusting them as /hooks does",
            untrusted.len(),
            ours.len()
        );
    }
    let trusted_now = app.trust_all(&sb.project);
    let config_trusted = read(&sb.config_toml());
    let entry = app.hooks(&sb.project);
    for h in entry["hooks"].as_array().into_iter().flatten() {
        assert!(
            h["trustStatus"] == "trusted" || h["trustStatus"] == "managed",
            "a hook is still not trusted: {h:#}"
        );
    }
    // Codex connects to memtrail's MCP server and lists its tools.
    let status = app
        .request("mcpServerStatus/list", json!({}))
        .unwrap_or_else(|e| panic!("mcpServerStatus/list failed: {e}"));
    let mt = find(&status["data"], |s| s["name"] == "memtrail")
        .unwrap_or_else(|| panic!("mcpServerStatus/list has no memtrail: {status:#}"));
    assert_eq!(mt["serverInfo"]["name"], "memtrail", "{mt:#}");
    for tool in ["search", "get_session"] {
        assert!(
            mt["tools"][tool].is_object(),
            "Codex did not get memtrail's {tool} tool: {mt:#}"
        );
    }
    eprintln!(
        "e2e: mcpServerStatus/list: memtrail {} (tools: {:?})",
        mt["serverInfo"]["version"],
        mt["tools"]
            .as_object()
            .map(|o| o.keys().collect::<Vec<_>>())
    );
    // The skill.
    let skills = app
        .request(
            "skills/list",
            json!({"cwds": [sb.project], "forceReload": true}),
        )
        .unwrap_or_else(|e| panic!("skills/list failed: {e}"));
    let skill = find(&skills["data"][0]["skills"], |s| s["name"] == "memtrail")
        .unwrap_or_else(|| panic!("Codex does not list the memtrail skill: {skills:#}"));
    eprintln!(
        "e2e: skills/list: memtrail at {} (scope {})",
        skill["path"], skill["scope"]
    );
    drop(app);
    // `codex mcp list` only reads the config (it does not connect): memtrail, enabled.
    let out = run_ok(
        {
            let mut c = sb.cmd(&tools.codex);
            c.args(["mcp", "list"]);
            c
        },
        "codex mcp list",
    );
    let listing = text(&out.stdout);
    let line = listing
        .lines()
        .find(|l| l.starts_with("memtrail "))
        .unwrap_or_else(|| panic!("codex mcp list does not list memtrail:\n{}", show(&out)));
    assert!(line.contains("enabled"), "{line}");
    eprintln!(
        "e2e: codex mcp list: {}",
        line.split_whitespace().collect::<Vec<_>>().join(" ")
    );

    // --- b. two real turns ----------------------------------------------------------------------
    fs::write(sb.project.join(MARKER_FILE), "quokka\n").unwrap();
    let t1 = codex_turn(
        &sb,
        &tools,
        None,
        "please run ls in this folder",
        "codex turn 1",
    );
    let sid = t1.thread_id.clone();
    let answer1 = t1.messages.last().cloned().unwrap_or_default();
    assert!(
        answer1.contains("The folder contains:") && answer1.contains(MARKER_FILE),
        "the shell tool did not really run ls in the project (answer: {answer1:?})"
    );
    assert!(
        t1.events
            .iter()
            .any(|e| e["type"] == "item.completed" && e["item"]["type"] == "command_execution"),
        "no command_execution item in turn 1: {:#?}",
        t1.events
    );
    let files = rollouts(&sb.codex_home, &sid);
    assert_eq!(files.len(), 1, "expected one rollout for {sid}: {files:?}");
    let rollout = files[0].clone();
    let rel = rollout
        .strip_prefix(&sb.codex_home)
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let parts: Vec<&str> = rel.split('/').collect();
    assert!(
        parts.len() == 5
            && parts[0] == "sessions"
            && parts[1].len() == 4
            && parts[2].len() == 2
            && parts[3].len() == 2,
        "the rollout is not under sessions/YYYY/MM/DD/: {rel}"
    );
    eprintln!("e2e: turn 1 done, thread {sid}, rollout {rel}");

    let t2 = codex_turn(
        &sb,
        &tools,
        Some(&sid),
        PHRASE,
        "codex turn 2 (exec resume)",
    );
    assert_eq!(t2.thread_id, sid, "exec resume started another thread");
    assert!(
        t2.messages
            .iter()
            .any(|m| m.contains("zanzibar quokka protocol is noted")),
        "{:?}",
        t2.messages
    );
    assert_eq!(
        rollouts(&sb.codex_home, &sid),
        vec![rollout.clone()],
        "exec resume did not append to the same rollout"
    );
    let tr = fs::read_to_string(&rollout).unwrap();
    assert!(
        tr.contains("zanzibar quokka") && tr.contains("function_call") && tr.contains(MARKER_FILE)
    );

    // The model got the tool output, and the resumed turn carried the first turn's history.
    let reqs = stub.requests();
    let main: Vec<&Value> = reqs.iter().filter(|r| r["kind"] == "main").collect();
    assert!(
        main.iter().any(|r| {
            let s = r["body"]["input"].to_string();
            s.contains("function_call_output") && s.contains(MARKER_FILE)
        }),
        "no request carried the shell tool's output"
    );
    let last = main.last().expect("main requests");
    let hist = last["body"]["input"].to_string();
    assert!(hist.contains("please run ls in this folder") && hist.contains("zanzibar quokka"));
    assert_eq!(
        last["headers"]["authorization"], "Bearer sk-stub-test",
        "the provider's env_key did not reach the stub"
    );
    for r in &reqs {
        assert!(
            r["status"] == 200,
            "the stub answered {} to {} {}",
            r["status"],
            r["method"],
            r["path"]
        );
    }

    // --- c. what the hooks and notify received ---------------------------------------------------
    // notify runs detached (memtrail starts the user's program and returns): wait a moment.
    let deadline = Instant::now() + Duration::from_secs(10);
    let (hooks, notifies) = loop {
        let (h, n) = captures(&sb);
        if n.len() >= 2 || Instant::now() > deadline {
            break (h, n);
        }
        thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        notifies.len(),
        2,
        "the user's notify program (chained by memtrail) ran {} times for 2 turns",
        notifies.len()
    );
    for (argv, prompt) in notifies
        .iter()
        .zip(["please run ls in this folder", PHRASE])
    {
        assert_eq!(
            argv[0], "--from-codex",
            "the chained notify lost its arguments: {argv:?}"
        );
        let p: Value = serde_json::from_str(argv.last().unwrap())
            .unwrap_or_else(|e| panic!("notify's last argument is not JSON ({e}): {argv:?}"));
        assert_eq!(p["type"], "agent-turn-complete", "{p:#}");
        assert_eq!(p["thread-id"], sid.as_str(), "{p:#}");
        // `input-messages` holds every user message of the thread so far, not only this turn's.
        let inputs = p["input-messages"].as_array().cloned().unwrap_or_default();
        assert_eq!(inputs.last(), Some(&json!(prompt)), "{p:#}");
        assert!(p["turn-id"].is_string() && p["cwd"].is_string(), "{p:#}");
    }
    let by_event = |ev: &str| -> Vec<&Value> {
        hooks
            .iter()
            .filter(|(e, _)| e == ev)
            .map(|(_, v)| v)
            .collect()
    };
    let starts = by_event("SessionStart");
    assert_eq!(
        starts
            .iter()
            .map(|v| v["source"].as_str().unwrap_or("?"))
            .collect::<Vec<_>>(),
        ["startup", "resume"],
        "SessionStart sources"
    );
    for (ev, v) in &hooks {
        assert_eq!(v["hook_event_name"], ev.as_str(), "{v:#}");
        assert_eq!(v["session_id"], sid.as_str(), "{ev}: {v:#}");
        assert_eq!(
            v["transcript_path"],
            rollout.display().to_string().as_str(),
            "{ev}: transcript_path is not the rollout: {v:#}"
        );
    }
    let pre = by_event("PreToolUse");
    let pre = pre.first().expect("no PreToolUse hook ran");
    assert_eq!(pre["tool_name"], "Bash", "{pre:#}");
    assert_eq!(pre["tool_input"]["command"], "ls", "{pre:#}");
    let post = by_event("PostToolUse");
    let post = post.first().expect("no PostToolUse hook ran");
    assert!(
        post["tool_response"].to_string().contains(MARKER_FILE),
        "{post:#}"
    );
    assert_eq!(by_event("UserPromptSubmit").len(), 2);
    assert_eq!(by_event("Stop").len(), 2);
    assert_eq!(by_event("SessionEnd").len(), 2);
    eprintln!(
        "e2e: hooks seen: {:?}",
        hooks.iter().map(|(e, _)| e.as_str()).collect::<Vec<_>>()
    );

    // --- d. the store, through the CLI ------------------------------------------------------------
    let memtrail = |args: &[&str]| {
        let mut c = sb.cmd(&tools.memtrail);
        c.args(args);
        c
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let search = loop {
        let out = run_ok(
            memtrail(&["search", "zanzibar quokka", "--json"]),
            "memtrail search",
        );
        let v = stdout_json(&out, "memtrail search --json");
        let hit = find(&v["hits"], |h| {
            h["session_id"] == sid.as_str() && h["role"] == "user"
        });
        if hit.is_some() || Instant::now() > deadline {
            break v;
        }
        thread::sleep(Duration::from_millis(250));
    };
    let hit = find(&search["hits"], |h| {
        h["session_id"] == sid.as_str() && h["role"] == "user"
    })
    .unwrap_or_else(|| panic!("search found no user hit in thread {sid}: {search:#}"));
    assert_eq!(hit["agent"], "codex", "{hit:#}");
    assert!(
        sb.db().exists(),
        "the store is not at {}",
        sb.db().display()
    );

    let out = run_ok(
        memtrail(&["sessions", "list", "--json"]),
        "memtrail sessions list",
    );
    let list = stdout_json(&out, "memtrail sessions list --json");
    let s = find(&list["sessions"], |s| s["session_id"] == sid.as_str())
        .unwrap_or_else(|| panic!("sessions list lacks {sid}: {list:#}"));
    assert_eq!(s["agent"], "codex", "{s:#}");
    assert_eq!(
        s["project"],
        sb.project.display().to_string().as_str(),
        "{s:#}"
    );

    let out = run_ok(
        memtrail(&["sessions", "show", &sid, "--json"]),
        "memtrail sessions show",
    );
    let shown = stdout_json(&out, "memtrail sessions show --json");
    let calls: Vec<&Value> = shown["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .collect();
    let ls = calls
        .iter()
        .find(|c| c["name"] == "exec_command")
        .unwrap_or_else(|| panic!("no exec_command tool call in the session: {calls:#?}"));
    assert_eq!(ls["input"]["cmd"], "ls", "{ls:#}");
    assert!(
        ls["output"].to_string().contains(MARKER_FILE),
        "the shell call lacks its output: {ls:#}"
    );
    assert_ne!(ls["is_error"], true, "{ls:#}");
    let msgs = shown["messages"].as_array().unwrap();
    for prompt in ["please run ls in this folder", PHRASE] {
        let n = msgs
            .iter()
            .filter(|m| m["role"] == "user" && m["text"] == prompt)
            .count();
        assert_eq!(n, 1, "the prompt {prompt:?} is stored {n} times");
    }

    // Informational: with the hand-written config memtrail does not know it is installed into
    // Codex and status reports unhealthy (exit 1); with the installer it must be healthy.
    let out = run(memtrail(&["status", "--json"]), "memtrail status --json");
    if use_install() {
        assert!(
            out.status.success(),
            "memtrail status after install is not healthy:\n{}",
            show(&out)
        );
    } else if !out.status.success() {
        eprintln!(
            "e2e: NOTE: memtrail status exits {} with the hand-written config",
            out.status
        );
    }
    let st = stdout_json(&out, "memtrail status --json");
    match find(&st["agents"], |a| a["agent"] == "codex").map(|a| &a["hook_runs"]) {
        Some(runs) if runs.as_array().is_some_and(|r| !r.is_empty()) => {
            eprintln!(
                "e2e: status: codex hook runs: {:?}",
                runs.as_array()
                    .unwrap()
                    .iter()
                    .map(|r| format!(
                        "{}{}",
                        r["event"].as_str().unwrap_or("?"),
                        if r["error"].is_null() { "" } else { " (error)" }
                    ))
                    .collect::<Vec<_>>()
            );
            for r in runs.as_array().unwrap() {
                assert!(r["error"].is_null(), "a hook run failed: {r:#}");
            }
        }
        _ => eprintln!("e2e: NOTE: status --json has no agents[codex].hook_runs; not checked"),
    }

    // --- e. Codex itself uses memtrail: turn 3 calls the MCP search tool ----------------------------
    let t3 = codex_turn(
        &sb,
        &tools,
        Some(&sid),
        "what did we decide about that protocol earlier?",
        "codex turn 3 (MCP search)",
    );
    let call = t3
        .events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "mcp_tool_call")
        .unwrap_or_else(|| panic!("turn 3 made no MCP tool call: {:#?}", t3.events));
    assert_eq!(call["item"]["server"], "memtrail", "{call:#}");
    assert_eq!(call["item"]["tool"], "search", "{call:#}");
    assert_eq!(call["item"]["status"], "completed", "{call:#}");
    let answer3 = t3.messages.last().cloned().unwrap_or_default();
    assert!(
        answer3.starts_with("Memory says:")
            && answer3.contains(&sid)
            && answer3.contains("zanzibar"),
        "Codex's call of memtrail's search did not return the hit (the MCP server must read the \
         same store as the hooks): {answer3:?}"
    );
    // What the model was told about memtrail in that turn: the MCP tools and the skill.
    let reqs = stub.requests();
    let turn3 = reqs
        .iter()
        .rev()
        .filter(|r| r["kind"] == "main")
        .find(|r| {
            r["body"]["input"]
                .to_string()
                .contains("what did we decide")
        })
        .expect("the stub saw turn 3");
    let ns = find(&turn3["body"]["tools"], |t| t["name"] == "mcp__memtrail")
        .unwrap_or_else(|| panic!("the model was not offered memtrail's tools"));
    for tool in ["search", "get_session"] {
        assert!(
            find(&ns["tools"], |t| t["name"] == tool).is_some(),
            "the mcp__memtrail namespace lacks {tool}: {ns:#}"
        );
    }
    assert!(
        turn3["body"]["input"]
            .to_string()
            .contains("memtrail/SKILL.md"),
        "the model was not told about the memtrail skill"
    );

    // --- f. the hooks ran cleanly; Codex left its config alone ---------------------------------------
    let log = fs::read_to_string(sb.hook_log()).unwrap_or_default();
    let bad = hook_errors(&log);
    assert!(
        bad.is_empty(),
        "memtrail's hooks logged errors:\n{}",
        bad.join("\n")
    );
    assert!(
        read(&sb.config_toml()) == config_trusted,
        "Codex itself changed config.toml during the sessions"
    );
    assert!(
        read(&sb.hooks_json()) == hooks_b,
        "Codex itself changed hooks.json during the sessions"
    );

    let (hooks, notifies) = captures(&sb);
    if env_flag("MEMTRAIL_E2E_SAVE_PAYLOADS") {
        save_payloads(&sb, &tools, &hooks, &notifies, &rollout);
    }
    if let Some((_, v)) = hooks.iter().find(|(e, v)| {
        e == "PreToolUse"
            && v["tool_name"]
                .as_str()
                .is_some_and(|t| t.starts_with("mcp__"))
    }) {
        eprintln!(
            "e2e: PreToolUse of the MCP call: tool_name {}",
            v["tool_name"]
        );
    }

    // --- g. uninstall gives the user's files back (installer mode only) -------------------------------
    if use_install() {
        run_ok(
            memtrail(&["uninstall", "--agent", "codex", "--yes"]),
            "memtrail uninstall --agent codex",
        );
        let hooks_d = read(&sb.hooks_json());
        assert!(
            hooks_d == hooks_a,
            "hooks.json after uninstall differs from the original:\n--- original\n{}\n--- now\n{}",
            text(&hooks_a),
            text(&hooks_d)
        );
        let config_d = read(&sb.config_toml());
        if config_d != config_a {
            // The trust entries this test wrote for memtrail's hooks (as the user's /hooks review
            // would) are the only acceptable difference, and only if the installer leaves them.
            let stripped = strip_trust_entries(&text(&config_d), &trusted_now);
            assert!(
                stripped == text(&config_a),
                "config.toml after uninstall differs from the original:\n--- original\n{}\n--- now\n{}",
                text(&config_a),
                text(&config_d)
            );
            eprintln!(
                "e2e: NOTE: uninstall left the hooks.state trust entries of memtrail's hooks in config.toml"
            );
        }
        assert!(
            !sb.skill().exists(),
            "uninstall left {}",
            sb.skill().display()
        );
        let out = run_ok(
            {
                let mut c = sb.cmd(&tools.codex);
                c.args(["mcp", "list"]);
                c
            },
            "codex mcp list (after uninstall)",
        );
        assert!(
            !text(&out.stdout)
                .lines()
                .any(|l| l.starts_with("memtrail ")),
            "{}",
            show(&out)
        );
    }

    eprintln!("e2e: passed in {:.1?}", t0.elapsed());
}

/// `config` without the `[hooks.state."<key>"]` tables of the given keys (header, body, and
/// the blank line that separates each from what comes before).
fn strip_trust_entries(config: &str, keys: &[String]) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut skipping = false;
    let mut last_skipped_blank = false;
    for line in config.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with('[') {
            let ours = keys.iter().any(|k| t == format!("[hooks.state.\"{k}\"]"));
            if ours {
                if !skipping && out.last().is_some_and(|l| l.trim().is_empty()) {
                    out.pop();
                    last_skipped_blank = true;
                }
                skipping = true;
                continue;
            }
            if skipping && last_skipped_blank && !out.last().is_some_and(|l| l.trim().is_empty()) {
                out.push("\n");
            }
            skipping = false;
        }
        if skipping {
            last_skipped_blank = t.is_empty();
        } else {
            out.push(line);
        }
    }
    out.concat()
}

#[test]
fn strip_trust_entries_removes_only_those_tables() {
    let k = |s: &str| vec![s.to_string()];
    let cfg = "a = 1\n\n[x]\nb = 2\n\n[hooks.state.\"/h.json:stop:1:0\"]\ntrusted_hash = \"sha256:1\"\n\n[y]\nc = 3\n";
    assert_eq!(
        strip_trust_entries(cfg, &k("/h.json:stop:1:0")),
        "a = 1\n\n[x]\nb = 2\n\n[y]\nc = 3\n"
    );
    assert_eq!(strip_trust_entries(cfg, &[]), cfg);
    // At the end of the file, and two in a row.
    let end = "a = 1\n\n[hooks.state.\"k1\"]\ntrusted_hash = \"x\"\n\n[hooks.state.\"k2\"]\ntrusted_hash = \"y\"\n";
    assert_eq!(
        strip_trust_entries(end, &["k1".to_string(), "k2".to_string()]),
        "a = 1\n"
    );
    // Another key's table stays.
    assert_eq!(
        strip_trust_entries(end, &k("k1")),
        "a = 1\n\n[hooks.state.\"k2\"]\ntrusted_hash = \"y\"\n"
    );
}
