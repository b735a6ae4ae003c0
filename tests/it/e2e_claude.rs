//! End to end with the real Claude Code CLI, offline.
//!
//! Claude Code (`claude -p`) runs in a sandboxed HOME against a scripted stub of the Anthropic
//! Messages API on loopback (`tests/e2e/stub_anthropic.py`). memtrail is installed into that
//! sandbox the way a user would (`memtrail install --agent claude --yes`), Claude's own hooks
//! capture two real turns (one with a real Bash tool call), and then the store is checked through
//! the CLI, through `claude mcp list`, and through a real MCP client (`tests/e2e/mcp_client.py`,
//! the Python MCP SDK). Finally `memtrail uninstall` must give back the user's config files.
//!
//! Needs: the `claude` binary (`MEMTRAIL_CLAUDE_BIN`, else `claude` on PATH) and `python3` with
//! the `mcp` package; `scripts/e2e-deps` installs both. Without them the test prints
//! "skipped: ..." and passes, unless `MEMTRAIL_REQUIRE_E2E=1` (set by `scripts/test`), then it
//! fails. Other knobs: `MEMTRAIL_E2E_PYTHON` (the interpreter), `MEMTRAIL_E2E_KEEP=1` (keep the
//! sandbox folder and print its path), `MEMTRAIL_E2E_MEMTRAIL_BIN` (test another memtrail
//! binary, e.g. a release build).
//!
//! Nothing outside the sandbox is touched: every child process gets a cleared environment with
//! HOME, XDG_*, CLAUDE_CONFIG_DIR, TMPDIR and MEMTRAIL_DB inside a temp folder.
#![cfg(unix)]

use crate::common;

use common::{
    Stub, find, memtrail_bin, print_files, read, repo_root, resolve_python, run_ok, sandbox_cmd,
    sandbox_env, show, stdout_json, text, tools_or_skip, which,
};
use serde_json::{Value, json};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

/// The distinctive phrase of turn 2, searched for afterwards.
const PHRASE: &str = "remember the zanzibar quokka protocol";
/// A file in the project folder: its name must come back through the real Bash tool.
const MARKER_FILE: &str = "marker-7f3a9c.txt";
/// A file the real Write tool creates before compaction: the snapshot must name it.
const NOTES_FILE: &str = "wombat-notes-4b1e.md";
/// The prompt of that turn, the session's last request before compaction.
const NOTES_PROMPT: &str = "please write the wombat notes file";

// ------------------------------------------------------------------------------------ tools

struct Tools {
    claude: PathBuf,
    python: PathBuf,
    memtrail: PathBuf,
}

/// Finds claude, python (with `mcp`) and memtrail, or says why not.
fn find_tools() -> Result<Tools, String> {
    let claude = match common::bin_from_env("MEMTRAIL_CLAUDE_BIN")? {
        Some(p) => p,
        None => which("claude")
            .ok_or("no claude binary (set MEMTRAIL_CLAUDE_BIN or run scripts/e2e-deps)")?,
    };
    let python = resolve_python(
        "import sys, mcp.client.stdio; print(sys.executable)",
        "cannot import the mcp package (pip install mcp, or scripts/e2e-deps)",
    )?;
    Ok(Tools {
        claude,
        python,
        memtrail: memtrail_bin(),
    })
}

// ------------------------------------------------------------------------------------ sandbox

struct Sandbox {
    _dir: common::SandboxDir,
    root: PathBuf,
    config: PathBuf,
    state: PathBuf,
    project: PathBuf,
    warmup: PathBuf,
    db: PathBuf,
    other_log: PathBuf,
    env: Vec<(String, OsString)>,
}

impl Sandbox {
    fn new() -> Sandbox {
        let (dir, root) = common::SandboxDir::new("memtrail-e2e-");
        let home = root.join("home");
        let config = home.join(".claude");
        let state = home.join(".local/state");
        let project = root.join("project");
        let warmup = root.join("warmup");
        let bin = root.join("bin");
        let tmp = root.join("tmp");
        for d in [
            &home,
            &config,
            &state,
            &project,
            &warmup,
            &bin,
            &tmp,
            &home.join(".config"),
        ] {
            fs::create_dir_all(d).expect("create sandbox dir");
        }
        let db = root.join("store/memtrail.db");
        let other_log = root.join("other-tool-hooks.log");
        let mut path = OsString::from(bin.as_os_str());
        if let Some(p) = std::env::var_os("PATH") {
            path.push(":");
            path.push(p);
        }
        let env = sandbox_env(
            path,
            &home,
            &state,
            // Claude keeps per-session scratch (`claude-<uid>/`, `cc-socks/`) under TMPDIR.
            &tmp,
            vec![
                ("CLAUDE_CONFIG_DIR".into(), config.clone().into()),
                ("MEMTRAIL_DB".into(), db.clone().into()),
                ("ANTHROPIC_API_KEY".into(), "sk-ant-test".into()),
                (
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
                    "1".into(),
                ),
                ("DISABLE_AUTOUPDATER".into(), "1".into()),
                ("DISABLE_TELEMETRY".into(), "1".into()),
                ("DISABLE_ERROR_REPORTING".into(), "1".into()),
            ],
        );
        Sandbox {
            _dir: dir,
            root,
            config,
            state,
            project,
            warmup,
            db,
            other_log,
            env,
        }
    }

    fn set_env(&mut self, key: &str, value: impl Into<OsString>) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.into(), value.into()));
    }

    /// A command with the sandbox environment (and nothing else), run in the project folder.
    fn cmd(&self, program: impl AsRef<OsStr>) -> Command {
        sandbox_cmd(&self.env, &self.project, program)
    }

    fn settings(&self) -> PathBuf {
        self.config.join("settings.json")
    }

    fn claude_json(&self) -> PathBuf {
        // With CLAUDE_CONFIG_DIR set, the global state file lives inside it.
        self.config.join(".claude.json")
    }

    fn hook_log(&self) -> PathBuf {
        self.state.join("memtrail/hook.log")
    }
}

/// The stub of the Anthropic Messages API, run by the sandbox's python.
fn start_stub(sb: &Sandbox, tools: &Tools, script: &Value) -> Stub {
    Stub::start(sb.cmd(&tools.python), &sb.root, "stub_anthropic.py", script)
}

// ------------------------------------------------------------------------------------ diagnostics

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
        let db_len = fs::metadata(&self.sb.db)
            .map(|m| m.len().to_string())
            .unwrap_or_else(|e| e.to_string());
        eprintln!("store: {} ({db_len})", self.sb.db.display());
        eprintln!("--- stub requests ({}):", self.stub_log.display());
        for l in fs::read_to_string(&self.stub_log)
            .unwrap_or_default()
            .lines()
        {
            let v: Value = serde_json::from_str(l).unwrap_or(Value::Null);
            let body = &v["body"];
            let last = body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .cloned()
                .unwrap_or(Value::Null);
            let mut last = last.to_string();
            if last.len() > 300 {
                let mut cut = 300;
                while !last.is_char_boundary(cut) {
                    cut -= 1;
                }
                last.truncate(cut);
                last.push('…');
            }
            eprintln!(
                "  {} {} kind={} rule={} model={} last={}",
                v["method"].as_str().unwrap_or("?"),
                v["path"].as_str().unwrap_or("?"),
                v["kind"],
                v["rule"],
                body["model"],
                last
            );
        }
        print_files(&[
            ("memtrail hook log", self.sb.hook_log()),
            ("other tool's hook log", self.sb.other_log.clone()),
            ("settings.json", self.sb.settings()),
            (".claude.json", self.sb.claude_json()),
        ]);
        let projects = self.sb.config.join("projects");
        eprintln!("--- transcripts under {}:", projects.display());
        if let Ok(rd) = fs::read_dir(&projects) {
            for d in rd.flatten() {
                for f in fs::read_dir(d.path()).into_iter().flatten().flatten() {
                    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                    eprintln!("  {} ({len} bytes)", f.path().display());
                }
            }
        }
        eprintln!("==========================================================\n");
    }
}

// ------------------------------------------------------------------------------------ helpers

/// Claude's transcript folder name for a cwd: every non-alphanumeric character becomes '-'
/// (paths over 200 characters get a hash suffix; the sandbox path is far shorter).
/// Every string inside `v` (object values and array items, recursively), e.g. the text blocks
/// and system prompt of a Messages API request.
fn strings(v: &Value) -> Vec<&str> {
    match v {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a.iter().flat_map(strings).collect(),
        Value::Object(o) => o.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

fn encode_project(dir: &Path) -> String {
    dir.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// `before` and `after` differ only by one removed span that holds memtrail's entry, and `after`
/// is `before` without `mcpServers.memtrail` as JSON.
fn only_memtrail_entry_removed(before: &[u8], after: &[u8]) -> Result<(), String> {
    let p = before.iter().zip(after).take_while(|(a, b)| a == b).count();
    let max_s = before.len().min(after.len()) - p;
    let s = before
        .iter()
        .rev()
        .zip(after.iter().rev())
        .take(max_s)
        .take_while(|(a, b)| a == b)
        .count();
    let removed = text(&before[p..before.len() - s]);
    let added = text(&after[p..after.len() - s]);
    if !removed.contains("memtrail")
        || !added
            .trim_matches(|c: char| c.is_whitespace() || c == ',')
            .is_empty()
    {
        return Err(format!(
            "uninstall changed more than memtrail's entry in .claude.json:\n--- removed\n{removed}\n--- added\n{added}"
        ));
    }
    let mut expected: Value = serde_json::from_slice(before).map_err(|e| e.to_string())?;
    if let Some(servers) = expected["mcpServers"].as_object_mut() {
        servers.remove("memtrail");
    }
    let got: Value = serde_json::from_slice(after).map_err(|e| e.to_string())?;
    if got != expected {
        return Err(format!(
            ".claude.json after uninstall is not the file before uninstall minus memtrail: {got:#}"
        ));
    }
    Ok(())
}

/// The error lines of memtrail's hook log (`<time> <agent> <event> session=<id> error: <message>`).
/// Claude Code 2.1.332 fires hooks whose transcript does not exist (yet): UserPromptSubmit of a
/// new session, SessionEnd of the throwaway session of `claude mcp list`, SubagentStop of the
/// compaction agent. memtrail treats those as normal, so any error line is a failure.
fn unexpected_hook_errors(log: &str, _sid: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains(" error: "))
        .map(str::to_string)
        .collect()
}

// ------------------------------------------------------------------------------------ the test

#[test]
fn claude_code_end_to_end() {
    let t0 = Instant::now();
    let Some(tools) = tools_or_skip(find_tools) else {
        return;
    };
    let mut sb = Sandbox::new();
    // `claude` on the sandbox PATH too (hooks, the installer's detection), whatever the binary's name.
    std::os::unix::fs::symlink(&tools.claude, sb.root.join("bin/claude")).unwrap();
    eprintln!("e2e: claude = {}", tools.claude.display());
    eprintln!("e2e: memtrail = {}", tools.memtrail.display());
    eprintln!("e2e: sandbox = {}", sb.root.display());

    let v = run_ok(
        {
            let mut c = sb.cmd(&tools.claude);
            c.arg("--version");
            c
        },
        "claude --version",
    );
    eprintln!("e2e: {}", text(&v.stdout).trim());

    // --- the stub model ---------------------------------------------------------------------
    let script = json!({
        "rules": [
            {
                "match": "run ls",
                "reply": [
                    {"type": "text", "text": "I will list the files in this folder."},
                    {"type": "tool_use", "name": "Bash", "input": {"command": "ls", "description": "List files"}}
                ],
                "after_tool": "The folder contains: {tool_result}"
            },
            {"match": "zanzibar quokka", "reply": "Understood: the zanzibar quokka protocol is noted."},
            {
                "match": "write the wombat notes",
                "reply": [{"type": "tool_use", "name": "Write", "input": {"file_path": sb.project.join(NOTES_FILE), "content": "wombat checksum: 42\n"}}],
                "after_tool": "Wrote the wombat notes."
            },
            {
                "match": "what did we decide",
                "reply": [{"type": "tool_use", "name": "mcp__memtrail__search", "input": {"query": "zanzibar quokka"}}],
                "after_tool": "Memory says: {tool_result}"
            }
        ],
        "fallback": "OK.",
        "title": "Listing files"
    });
    let stub = start_stub(&sb, &tools, &script);
    sb.set_env(
        "ANTHROPIC_BASE_URL",
        format!("http://127.0.0.1:{}", stub.port),
    );
    let _diag = Diagnostics {
        sb: &sb,
        stub_log: stub.log.clone(),
    };
    eprintln!("e2e: stub on port {}", stub.port);

    let claude = |args: &[&str], cwd: &Path| {
        let mut c = sb.cmd(&tools.claude);
        c.args(args).current_dir(cwd);
        c
    };

    // --- warm-up ------------------------------------------------------------------------------
    // Claude Code rewrites `.claude.json` on its first start in a fresh config dir: it adds
    // firstStartTime, machineID, userID, migrationVersion, pluginUsage..., re-serializes the whole
    // file with 2-space indentation and migrates legacy keys (even into settings.json). A real
    // user's file has been through that long before memtrail comes along, so the sandbox gets one
    // throwaway run first (no transcript, other folder). After it, `claude -p` runs leave
    // `.claude.json` alone, which the uninstall check below relies on (and verifies).
    let out = run_ok(
        claude(
            &[
                "-p",
                "warm up",
                "--no-session-persistence",
                "--output-format",
                "json",
            ],
            &sb.warmup,
        ),
        "claude warm-up run",
    );
    assert_eq!(
        stdout_json(&out, "warm-up")["result"],
        "OK.",
        "the stub did not answer the warm-up"
    );
    assert!(
        sb.claude_json().exists(),
        "Claude did not create {}",
        sb.claude_json().display()
    );

    // --- a. the user's config, as another tool left it -----------------------------------------
    // settings.json: tabs, odd key order, a permissions block, another tool's hooks (which must
    // keep firing next to memtrail's).
    let other_log = sb.other_log.display().to_string();
    let settings_a = format!(
        "{{\n\t\"permissions\" : {{\n\t\t\"deny\": [\"Bash(rm -rf /:*)\"],\n\t\t\"allow\": [\"Bash(ls:*)\", \"Read\"]\n\t}},\n\
         \t\"hooks\": {{\n\
         \t\t\"Stop\": [\n\t\t\t{{ \"hooks\": [ {{ \"type\": \"command\", \"command\": \"echo other-tool Stop >> '{other_log}'\" }} ] }}\n\t\t],\n\
         \t\t\"SessionStart\": [\n\t\t\t{{\n\t\t\t\t\"matcher\": \"startup|resume\",\n\t\t\t\t\"hooks\": [\n\
         \t\t\t\t\t{{\"command\": \"true\", \"type\": \"command\"}},\n\
         \t\t\t\t\t{{\"type\": \"command\", \"command\": \"echo other-tool SessionStart >> '{other_log}'\", \"timeout\": 5}}\n\
         \t\t\t\t]\n\t\t\t}}\n\t\t]\n\t}},\n\
         \t\"cleanupPeriodDays\":365\n}}\n"
    );
    serde_json::from_str::<Value>(&settings_a).expect("settings_a is valid JSON");
    fs::write(sb.settings(), &settings_a).unwrap();
    // .claude.json: what Claude wrote, plus another MCP server (user scope and project scope)
    // and a key of our own, re-serialized with tabs and mcpServers first.
    let claude_state: Value = serde_json::from_slice(&read(&sb.claude_json())).unwrap();
    let mut user_state = serde_json::Map::new();
    user_state.insert(
        "mcpServers".into(),
        json!({"other-tool": {"type": "stdio", "command": "other-tool-mcp", "args": ["serve", "--quiet"], "env": {"OTHER_TOOL_HOME": "/nonexistent"}}}),
    );
    user_state.insert(
        "otherToolSetting".into(),
        json!({"enabled": true, "since": "2026-01-01"}),
    );
    for (k, v) in claude_state.as_object().unwrap() {
        user_state.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let projects = user_state.entry("projects").or_insert_with(|| json!({}));
    projects
        .as_object_mut()
        .expect("projects is an object")
        .insert(
            "/srv/elsewhere".into(),
            json!({"allowedTools": [], "mcpServers": {"project-only": {"command": "project-mcp"}}}),
        );
    let mut claude_json_a = Vec::new();
    {
        use serde::Serialize;
        let fmt = serde_json::ser::PrettyFormatter::with_indent(b"\t");
        let mut ser = serde_json::Serializer::with_formatter(&mut claude_json_a, fmt);
        Value::Object(user_state).serialize(&mut ser).unwrap();
    }
    claude_json_a.push(b'\n');
    fs::write(sb.claude_json(), &claude_json_a).unwrap();
    let settings_a = settings_a.into_bytes();

    // --- b. install ---------------------------------------------------------------------------
    let memtrail = |args: &[&str]| {
        let mut c = sb.cmd(&tools.memtrail);
        c.args(args);
        c
    };
    // A dry run writes nothing.
    let out = run_ok(
        memtrail(&["install", "--agent", "claude", "--yes", "--dry-run"]),
        "memtrail install --dry-run",
    );
    assert!(
        text(&out.stdout).contains("memtrail"),
        "the dry run shows no change:\n{}",
        show(&out)
    );
    assert!(
        read(&sb.settings()) == settings_a,
        "install --dry-run changed settings.json"
    );
    assert!(
        read(&sb.claude_json()) == claude_json_a,
        "install --dry-run changed .claude.json"
    );
    assert!(
        !sb.config.join("skills/memtrail").exists(),
        "install --dry-run wrote the skill"
    );

    let out = run_ok(
        memtrail(&["install", "--agent", "claude", "--yes"]),
        "memtrail install",
    );
    eprintln!("e2e: install said:\n{}", text(&out.stdout).trim_end());
    let settings_b = read(&sb.settings());
    let claude_json_b = read(&sb.claude_json());
    {
        let s: Value =
            serde_json::from_slice(&settings_b).expect("settings.json after install is JSON");
        let hooks = s["hooks"].to_string();
        assert!(
            hooks.contains("memtrail"),
            "install registered no memtrail hook: {s:#}"
        );
        assert!(
            hooks.contains("other-tool Stop"),
            "install lost the other tool's hooks: {s:#}"
        );
        assert_eq!(s["permissions"]["allow"], json!(["Bash(ls:*)", "Read"]));
        let c: Value =
            serde_json::from_slice(&claude_json_b).expect(".claude.json after install is JSON");
        assert!(
            c["mcpServers"]["memtrail"].is_object(),
            "no mcpServers.memtrail: {c:#}"
        );
        assert!(
            c["mcpServers"]["other-tool"].is_object(),
            "install lost mcpServers.other-tool"
        );
        assert_eq!(
            c["otherToolSetting"],
            json!({"enabled": true, "since": "2026-01-01"})
        );
    }
    let skill_dir = sb.config.join("skills/memtrail");
    let skill_installed = skill_dir.join("SKILL.md").exists();
    eprintln!("e2e: skill installed: {skill_installed}");
    // Idempotent: a second install changes nothing.
    run_ok(
        memtrail(&["install", "--agent", "claude", "--yes"]),
        "memtrail install (again)",
    );
    assert!(
        read(&sb.settings()) == settings_b,
        "a second install changed settings.json"
    );
    assert!(
        read(&sb.claude_json()) == claude_json_b,
        "a second install changed .claude.json"
    );
    let out = run_ok(memtrail(&["status", "--json"]), "memtrail status --json");
    let _status = stdout_json(&out, "memtrail status --json");

    // --- c. two real turns --------------------------------------------------------------------
    fs::write(sb.project.join(MARKER_FILE), "quokka\n").unwrap();
    let out = run_ok(
        claude(
            &[
                "-p",
                "please run ls in this folder",
                "--output-format",
                "json",
                "--allowedTools",
                "Bash",
            ],
            &sb.project,
        ),
        "claude turn 1",
    );
    let r1 = stdout_json(&out, "claude turn 1");
    assert_eq!(
        r1["is_error"],
        false,
        "turn 1 failed: {r1:#}\n{}",
        show(&out)
    );
    let sid = r1["session_id"]
        .as_str()
        .expect("session_id in turn 1")
        .to_string();
    let answer1 = r1["result"].as_str().unwrap_or_default();
    assert!(
        answer1.contains(MARKER_FILE),
        "the Bash tool did not really run ls in the project (answer: {answer1:?})"
    );
    let out = run_ok(
        claude(
            &[
                "-p",
                "--resume",
                &sid,
                PHRASE,
                "--output-format",
                "json",
                "--allowedTools",
                "Bash",
            ],
            &sb.project,
        ),
        "claude turn 2 (--resume)",
    );
    let r2 = stdout_json(&out, "claude turn 2");
    assert_eq!(r2["is_error"], false, "turn 2 failed: {r2:#}");
    assert_eq!(
        r2["session_id"].as_str(),
        Some(sid.as_str()),
        "--resume started another session"
    );
    assert!(
        r2["result"]
            .as_str()
            .unwrap_or_default()
            .contains("zanzibar quokka protocol is noted")
    );

    // The model really got the tool result, and the resumed turn carried the first turn's history.
    let reqs = stub.requests();
    let main: Vec<&Value> = reqs.iter().filter(|r| r["kind"] == "main").collect();
    assert!(
        main.iter()
            .any(|r| r["body"]["messages"].to_string().contains(MARKER_FILE)
                && r["body"]["messages"].to_string().contains("tool_result")),
        "no request carried the Bash tool_result"
    );
    let last = main.last().expect("main requests");
    let hist = last["body"]["messages"].to_string();
    assert!(hist.contains("please run ls in this folder") && hist.contains("zanzibar quokka"));

    // The real transcript.
    let transcript = sb
        .config
        .join("projects")
        .join(encode_project(&sb.project))
        .join(format!("{sid}.jsonl"));
    let tr = fs::read_to_string(&transcript)
        .unwrap_or_else(|e| panic!("no transcript at {}: {e}", transcript.display()));
    assert!(tr.contains("zanzibar quokka") && tr.contains("tool_use") && tr.contains(MARKER_FILE));
    // The other tool's hooks still fire next to memtrail's.
    let other = fs::read_to_string(&sb.other_log).unwrap_or_default();
    assert!(
        other.matches("other-tool Stop").count() >= 2
            && other.matches("other-tool SessionStart").count() >= 2,
        "the other tool's hooks did not fire on both turns: {other:?}"
    );
    eprintln!("e2e: two turns done, session {sid}");

    // `memtrail status` saw the hooks run for this session (hook_runs: the last run per event).
    let out = run_ok(
        memtrail(&["status", "--json"]),
        "memtrail status --json (after the turns)",
    );
    let status = stdout_json(&out, "memtrail status --json");
    match find(&status["agents"], |a| a["agent"] == "claude").map(|a| &a["hook_runs"]) {
        Some(runs) if runs.is_array() => {
            let stop = find(runs, |r| r["event"] == "Stop")
                .unwrap_or_else(|| panic!("status shows no Stop hook run: {runs:#}"));
            assert_eq!(stop["session"], sid.as_str(), "{stop:#}");
            assert!(
                stop["error"].is_null(),
                "the last Stop hook failed: {stop:#}"
            );
        }
        _ => eprintln!("e2e: NOTE: status --json has no agents[claude].hook_runs; not checked"),
    }

    // --- d. the store, through the CLI -------------------------------------------------------
    // Hooks run synchronously inside Claude (Stop, SessionEnd), so the store is up to date when
    // `claude -p` exits; the short retry only guards against a slow disk.
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
    .unwrap_or_else(|| panic!("search found no user hit in session {sid}: {search:#}"));
    assert_eq!(hit["agent"], "claude", "{hit:#}");
    assert_eq!(search["query"], "zanzibar quokka");

    let out = run_ok(
        memtrail(&["sessions", "list", "--json"]),
        "memtrail sessions list",
    );
    let list = stdout_json(&out, "memtrail sessions list --json");
    let s = find(&list["sessions"], |s| s["session_id"] == sid.as_str())
        .unwrap_or_else(|| panic!("sessions list lacks {sid}: {list:#}"));
    assert_eq!(s["agent"], "claude", "{s:#}");
    assert!(
        s["messages"].as_u64().unwrap_or(0) >= 4,
        "too few messages: {s:#}"
    );

    let out = run_ok(
        memtrail(&["sessions", "show", &sid, "--json"]),
        "memtrail sessions show",
    );
    let shown = stdout_json(&out, "memtrail sessions show --json");
    assert_eq!(
        shown["session"]["session_id"],
        sid.as_str(),
        "{:#}",
        shown["session"]
    );
    let calls: Vec<&Value> = shown["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .collect();
    let bash = calls
        .iter()
        .find(|c| c["name"] == "Bash" || c["tool"] == "Bash")
        .unwrap_or_else(|| panic!("no Bash tool call in the session: {calls:#?}"));
    assert_eq!(bash["input"]["command"], "ls", "{bash:#}");
    assert!(
        bash["output"].to_string().contains(MARKER_FILE),
        "the Bash call lacks its output: {bash:#}"
    );
    assert_ne!(bash["is_error"], true, "{bash:#}");
    let texts = shown["messages"].to_string();
    assert!(texts.contains("zanzibar quokka") && texts.contains("please run ls in this folder"));

    // --- d2. Claude itself uses memtrail: turn 3 calls the MCP search tool -----------------------
    let out = run_ok(
        claude(
            &[
                "-p",
                "--resume",
                &sid,
                "what did we decide about that protocol earlier?",
                "--output-format",
                "json",
                "--allowedTools",
                "Bash mcp__memtrail__search",
            ],
            &sb.project,
        ),
        "claude turn 3 (MCP search)",
    );
    let r3 = stdout_json(&out, "claude turn 3");
    assert_eq!(r3["is_error"], false, "turn 3 failed: {r3:#}");
    let answer3 = r3["result"].as_str().unwrap_or_default();
    assert!(
        answer3.starts_with("Memory says:")
            && answer3.contains(&sid)
            && answer3.contains("zanzibar"),
        "Claude's call of mcp__memtrail__search did not return the hit: {answer3:?}"
    );
    // What the model was told about memtrail in that turn: the MCP tools, the server's
    // instructions and the skill.
    let reqs = stub.requests();
    let turn3 = reqs
        .iter()
        .rev()
        .filter(|r| r["kind"] == "main")
        .find(|r| {
            r["body"]["messages"]
                .to_string()
                .contains("what did we decide")
        })
        .expect("the stub saw turn 3");
    let context = turn3["body"].to_string();
    for needle in [
        "mcp__memtrail__search",
        "mcp__memtrail__get_session",
        "## memtrail",
        "- memtrail:",
    ] {
        assert!(
            context.contains(needle),
            "the model was not told {needle:?} in turn 3"
        );
    }

    // --- d3. a real Write before compaction: the file edit and the last request of the snapshot --
    let out = run_ok(
        claude(
            &[
                "-p",
                "--resume",
                &sid,
                NOTES_PROMPT,
                "--output-format",
                "json",
                "--allowedTools",
                "Write",
            ],
            &sb.project,
        ),
        "claude turn 4 (Write)",
    );
    let r = stdout_json(&out, "claude turn 4");
    assert_eq!(r["is_error"], false, "turn 4 failed: {r:#}");
    assert!(
        sb.project.join(NOTES_FILE).exists(),
        "the Write tool did not run: {r:#}"
    );

    // --- d4. compaction: /compact (PreCompact, SessionStart "compact", PostCompact, SubagentStop
    // of the compaction agent all fire), then one more turn --------------------------------------
    let before_compact = stub.requests().len();
    let out = run_ok(
        claude(
            &[
                "-p",
                "--resume",
                &sid,
                "/compact",
                "--output-format",
                "json",
            ],
            &sb.project,
        ),
        "claude /compact",
    );
    let r4 = stdout_json(&out, "claude /compact");
    assert_eq!(r4["is_error"], false, "/compact failed: {r4:#}");
    assert!(
        stub.requests().iter().any(|r| r["kind"] == "compact"),
        "the stub saw no compaction request"
    );
    let out = run_ok(
        claude(
            &[
                "-p",
                "--resume",
                &sid,
                "after compaction note the wombat checksum",
                "--output-format",
                "json",
            ],
            &sb.project,
        ),
        "claude turn 5 (after compaction)",
    );
    let r5 = stdout_json(&out, "claude turn 5");
    assert_eq!(r5["session_id"].as_str(), Some(sid.as_str()), "{r5:#}");
    // memtrail's snapshot (built at PreCompact, injected at SessionStart "compact") is in the
    // context of the first model request after the compaction, exactly once.
    let reqs = stub.requests();
    let after = reqs[before_compact..]
        .iter()
        .filter(|r| r["kind"] == "main")
        .find(|r| {
            r["body"]
                .to_string()
                .contains("after compaction note the wombat")
        })
        .unwrap_or_else(|| panic!("the stub saw no request for the turn after compaction"));
    let header = format!("memtrail: the working state of this session (claude session {sid}");
    assert_eq!(
        after["body"].to_string().matches(&header).count(),
        1,
        "the snapshot is not in the request after compaction exactly once"
    );
    let block = strings(&after["body"])
        .into_iter()
        .find(|t| t.contains(&header))
        .expect("the block with the snapshot");
    // Claude Code puts it in a system-reminder block with other context: from the header on.
    let snapshot = &block[block.find(&header).unwrap()..];
    for needle in [
        format!("## Last request [prompt]\n- {NOTES_PROMPT}"),
        format!("## Files changed [file]\n- {NOTES_FILE} (written"),
        "before its compaction".to_string(),
    ] {
        assert!(
            snapshot.contains(&needle),
            "the injected snapshot lacks {needle:?}:\n{snapshot}"
        );
    }
    eprintln!("e2e: snapshot injected after compaction:\n{snapshot}");
    // The snapshot was saved at PreCompact and consumed by this session.
    let out = run_ok(
        memtrail(&["resume", &sid, "--json"]),
        "memtrail resume --json",
    );
    let resumed = stdout_json(&out, "memtrail resume --json");
    assert_eq!(resumed["session"]["session_id"], sid.as_str());
    assert!(
        resumed["snapshot"]["text"]
            .as_str()
            .unwrap_or_default()
            .contains(NOTES_FILE),
        "{resumed:#}"
    );
    let out = run_ok(
        memtrail(&["search", "wombat checksum", "--json"]),
        "memtrail search (after compaction)",
    );
    let v = stdout_json(&out, "memtrail search --json");
    assert!(
        find(&v["hits"], |h| h["session_id"] == sid.as_str()
            && h["role"] == "user")
        .is_some(),
        "the turn after compaction was not captured: {v:#}"
    );
    // Exactly once: compaction rewrote nothing that memtrail would ingest twice.
    let out = run_ok(
        memtrail(&["sessions", "show", &sid, "--json"]),
        "memtrail sessions show (after compaction)",
    );
    let shown = stdout_json(&out, "memtrail sessions show --json");
    let msgs = shown["messages"].as_array().expect("messages");
    for prompt in [
        "please run ls in this folder",
        PHRASE,
        "after compaction note the wombat checksum",
    ] {
        let n = msgs
            .iter()
            .filter(|m| m["role"] == "user" && m["text"] == prompt)
            .count();
        assert_eq!(n, 1, "the prompt {prompt:?} is stored {n} times");
    }
    assert!(
        msgs.iter().any(|m| m["kind"] == "summary"),
        "the compaction summary was not captured (kinds: {:?})",
        msgs.iter().map(|m| m["kind"].clone()).collect::<Vec<_>>()
    );

    // --- e. Claude sees memtrail's MCP server -------------------------------------------------
    let out = run_ok(claude(&["mcp", "list"], &sb.project), "claude mcp list");
    let listing = text(&out.stdout);
    let line = listing
        .lines()
        .find(|l| l.starts_with("memtrail:"))
        .unwrap_or_else(|| panic!("claude mcp list does not list memtrail:\n{}", show(&out)));
    assert!(
        line.contains("Connected"),
        "memtrail is not connected: {line}\n{}",
        show(&out)
    );
    eprintln!("e2e: {line}");

    // --- f. a real MCP client -----------------------------------------------------------------
    let mcp_client = |tool: &str, args: &Value| {
        let mut c = sb.cmd(&tools.python);
        c.arg(repo_root().join("tests/e2e/mcp_client.py"))
            .arg(&tools.memtrail)
            .arg(tool)
            .arg(args.to_string());
        let out = run_ok(c, &format!("mcp_client.py {tool}"));
        stdout_json(&out, "mcp_client.py")
    };
    let m = mcp_client("search", &json!({"query": "zanzibar quokka"}));
    assert_eq!(m["is_error"], false, "{m:#}");
    assert_eq!(
        m["structured"], true,
        "the search tool returned no structuredContent: {m:#}"
    );
    for name in ["search", "get_session"] {
        assert!(
            find(&m["tools"], |t| t == name).is_some(),
            "the MCP server lacks the tool {name}: {m:#}"
        );
    }
    assert!(
        find(&m["result"]["hits"], |h| h["session_id"] == sid.as_str()
            && h["role"] == "user")
        .is_some(),
        "MCP search found no hit in {sid}: {m:#}"
    );
    let g = mcp_client("get_session", &json!({"session_id": sid}));
    assert_eq!(g["is_error"], false, "{g:#}");
    assert_eq!(
        g["structured"], true,
        "get_session returned no structuredContent: {g:#}"
    );
    assert!(
        g["result"].to_string().contains("zanzibar quokka"),
        "get_session lacks turn 2: {g:#}"
    );

    // The six tools with their schemas, each called once in one client session, from the
    // project folder (the default session of the tools that take one).
    let calls = json!([
        ["list_sessions", {"project": sb.project, "limit": 5}],
        ["timeline", {"session_id": sid, "category": "file"}],
        ["resume_context", {"query": "zanzibar quokka", "budget_tokens": 600}],
        ["remember", {"text": "The wombat checksum is 42; the notes file keeps it."}],
        ["search", {"query": "wombat checksum notes file keeps", "session_id": sid}],
        ["timeline", {"category": "note"}],
        ["timeline", {"session_id": sid, "category": "bogus"}],
    ]);
    let mut c = sb.cmd(&tools.python);
    c.arg(repo_root().join("tests/e2e/mcp_client.py"))
        .arg(&tools.memtrail)
        .arg("--calls")
        .arg(calls.to_string())
        .current_dir(&sb.project);
    let out = run_ok(c, "mcp_client.py --calls");
    let m = stdout_json(&out, "mcp_client.py --calls");
    let six = [
        ("search", "query"),
        ("list_sessions", "limit"),
        ("get_session", "session_id"),
        ("timeline", "category"),
        ("resume_context", "budget_tokens"),
        ("remember", "text"),
    ];
    let mut names: Vec<&str> = m["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    names.sort();
    let mut want: Vec<&str> = six.iter().map(|(n, _)| *n).collect();
    want.sort();
    assert_eq!(names, want, "{m:#}");
    for (name, prop) in six {
        let sch = &m["schemas"][name];
        assert!(
            sch["description"]
                .as_str()
                .is_some_and(|d| d.contains("Use it")),
            "{name}: the description does not say when to use it: {sch:#}"
        );
        assert_eq!(sch["input_schema"]["type"], "object", "{name}: {sch:#}");
        assert!(
            sch["input_schema"]["properties"][prop].is_object(),
            "{name}: no {prop} in its input schema: {sch:#}"
        );
    }
    // The `agent` argument's description names every agent of the registry, in its order.
    let agents: Vec<&str> = memtrail_adapters::Agent::ALL
        .iter()
        .map(|a| a.as_str())
        .collect();
    let (last, rest) = agents.split_last().unwrap();
    let described = format!(
        "Only sessions of this agent: {} or {last}.",
        rest.join(", ")
    );
    assert!(described.starts_with("Only sessions of this agent: claude, codex, gemini, "));
    for name in ["search", "list_sessions"] {
        assert_eq!(
            m["schemas"][name]["input_schema"]["properties"]["agent"]["description"],
            described.as_str(),
            "{name}"
        );
    }
    for (name, required) in [
        ("search", "query"),
        ("get_session", "session_id"),
        ("remember", "text"),
    ] {
        assert_eq!(
            m["schemas"][name]["input_schema"]["required"],
            json!([required]),
            "{name}"
        );
    }
    let r = |i: usize| &m["calls"][i];
    for i in 0..6 {
        assert_eq!(r(i)["is_error"], false, "call {i}: {:#}", r(i));
        assert_eq!(r(i)["structured"], true, "call {i}: {:#}", r(i));
    }
    assert!(
        find(&r(0)["result"]["sessions"], |s| s["session_id"]
            == sid.as_str())
        .is_some(),
        "list_sessions: {:#}",
        r(0)
    );
    let file_events = &r(1)["result"]["events"];
    assert!(
        find(file_events, |e| e["action"] == "written"
            && e["subject"]
                .as_str()
                .is_some_and(|p| p.ends_with(NOTES_FILE)))
        .is_some(),
        "timeline (file) lacks the Write of {NOTES_FILE}: {:#}",
        r(1)
    );
    let rc = &r(2)["result"];
    assert_eq!(rc["session_id"], sid.as_str(), "{rc:#}");
    assert_eq!(rc["budget_tokens"], 600);
    assert!(rc["used_tokens"].as_u64().unwrap() <= 600, "{rc:#}");
    assert!(
        rc["text"].as_str().unwrap().contains("zanzibar quokka")
            && rc["snapshot"] == true
            && !rc["messages"].as_array().unwrap().is_empty(),
        "resume_context: {rc:#}"
    );
    assert_eq!(r(3)["result"]["kept"], true);
    assert_eq!(r(3)["result"]["session_id"], sid.as_str(), "{:#}", r(3));
    let note_hit = find(&r(4)["result"]["hits"], |h| h["kind"] == "note")
        .unwrap_or_else(|| panic!("search does not find the note: {:#}", r(4)));
    assert_eq!(note_hit["message_index"], r(3)["result"]["message_index"]);
    assert_eq!(r(5)["result"]["total"], 1, "{:#}", r(5));
    assert_eq!(
        r(5)["result"]["events"][0]["subject"],
        "The wombat checksum is 42; the notes file keeps it."
    );
    assert_eq!(r(6)["is_error"], true, "{:#}", r(6));
    assert!(
        r(6)["text"]
            .as_str()
            .unwrap()
            .starts_with("unknown category `bogus`"),
        "{:#}",
        r(6)
    );

    // --- the hooks ran cleanly ------------------------------------------------------------------
    let hook_log = fs::read_to_string(sb.hook_log()).unwrap_or_default();
    let bad = unexpected_hook_errors(&hook_log, &sid);
    assert!(
        bad.is_empty(),
        "memtrail's hooks logged errors:\n{}",
        bad.join("\n")
    );

    // --- g. uninstall gives the user's files back ---------------------------------------------
    let settings_c = read(&sb.settings());
    let claude_json_c = read(&sb.claude_json());
    assert!(
        settings_c == settings_b,
        "Claude Code itself changed settings.json during the sessions"
    );
    run_ok(
        memtrail(&["uninstall", "--agent", "claude", "--yes"]),
        "memtrail uninstall",
    );
    let settings_d = read(&sb.settings());
    let claude_json_d = read(&sb.claude_json());
    assert!(
        settings_d == settings_a,
        "settings.json after uninstall differs from the original:\n--- original\n{}\n--- now\n{}",
        text(&settings_a),
        text(&settings_d)
    );
    if claude_json_c == claude_json_b {
        // Claude did not write .claude.json during the sessions (the case with 2.1.x after the
        // warm-up): install then uninstall must give back the original bytes.
        assert!(
            claude_json_d == claude_json_a,
            ".claude.json after uninstall differs from the original:\n--- original\n{}\n--- now\n{}",
            text(&claude_json_a),
            text(&claude_json_d)
        );
    } else {
        // Claude rewrote it while running (a newer version may): byte identity with the original
        // cannot hold, but uninstall must still undo exactly install's edit of what Claude wrote.
        eprintln!(
            "e2e: NOTE: Claude Code rewrote .claude.json during the sessions; checking that uninstall removed only memtrail's entry"
        );
        if let Err(e) = only_memtrail_entry_removed(&claude_json_c, &claude_json_d) {
            panic!("{e}");
        }
    }
    if skill_installed {
        assert!(
            !skill_dir.exists(),
            "uninstall left {}",
            skill_dir.display()
        );
    }
    let out = run_ok(
        claude(&["mcp", "list"], &sb.project),
        "claude mcp list (after uninstall)",
    );
    assert!(
        !text(&out.stdout)
            .lines()
            .any(|l| l.starts_with("memtrail:")),
        "{}",
        show(&out)
    );

    eprintln!("e2e: passed in {:.1?}", t0.elapsed());
}

/// The fallback check of step g, on its own (the e2e only takes that branch when Claude Code
/// rewrote `.claude.json` during the sessions).
#[test]
fn only_memtrail_entry_removed_check() {
    let before = b"{\n  \"mcpServers\": {\n    \"other\": {\n      \"command\": \"x\"\n    },\n    \"memtrail\": {\n      \"command\": \"/bin/memtrail\",\n      \"args\": [\"mcp\"]\n    }\n  },\n  \"k\": 1\n}";
    let after = b"{\n  \"mcpServers\": {\n    \"other\": {\n      \"command\": \"x\"\n    }\n  },\n  \"k\": 1\n}";
    assert_eq!(only_memtrail_entry_removed(before, after), Ok(()));
    let first = b"{\"mcpServers\": {\"memtrail\": {\"command\": \"m\"}, \"other\": {}}, \"k\": 1}";
    assert_eq!(
        only_memtrail_entry_removed(first, b"{\"mcpServers\": {\"other\": {}}, \"k\": 1}"),
        Ok(())
    );
    let reformatted = b"{\"mcpServers\":{\"other\":{\"command\":\"x\"}},\"k\":1}";
    assert!(only_memtrail_entry_removed(before, reformatted).is_err());
    let other_change = b"{\n  \"mcpServers\": {\n    \"other\": {\n      \"command\": \"x\"\n    }\n  },\n  \"k\": 2\n}";
    assert!(only_memtrail_entry_removed(before, other_change).is_err());
    assert!(only_memtrail_entry_removed(before, before).is_err());
}
