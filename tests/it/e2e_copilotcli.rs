//! GitHub Copilot CLI end to end.
//!
//! 1. The hook path (no Copilot needed): `memtrail hook copilotcli` in a sandboxed HOME, fed the
//!    payloads of `fixtures/copilotcli/hooks/` while the fixture session grows in
//!    `~/.copilot/session-state/<id>/events.jsonl` run by run; each message is stored once, the
//!    compaction's snapshot comes back at the next `sessionStart`.
//! 2. The real CLI (`@github/copilot`, from `MEMTRAIL_COPILOT_BIN`, else `$MEMTRAIL_E2E_TOOLS`
//!    or `target/e2e-tools` `node_modules/.bin/copilot`, else PATH; skipped without it unless
//!    `MEMTRAIL_REQUIRE_E2E=1`): "the user's" `mcp-config.json` and hook file, `memtrail
//!    install --agent copilotcli`, `copilot mcp list` / `mcp get` / `skill list` accept
//!    memtrail's entries; a `copilot -p` session against the loopback stub model
//!    (`stub_openai.py`, Copilot's BYOK provider with `COPILOT_OFFLINE=true`) runs a shell
//!    command: its hooks store the prompt and the call, the next session's `sessionStart` the
//!    answer Copilot may write after them, `import` the rest, and nothing twice;
//!    `uninstall` gives the user's
//!    files back byte for byte.
#![cfg(unix)]

use crate::common;
use crate::support::Sandbox;

use common::{
    SandboxDir, Stub, bin_from_env, is_executable, memtrail_bin, repo_root, resolve_python, run,
    run_ok, sandbox_cmd, sandbox_env, show, stdout_json, text, tools_or_skip, which,
};
use serde_json::{Value, json};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

const SID: &str = "5b0c3e7a-91d4-4f2e-b8a6-2c7d9e1f4a30";

fn fixture(rel: &str) -> PathBuf {
    repo_root().join("fixtures/copilotcli").join(rel)
}

/// The fixture's first `n` lines.
fn head(n: usize) -> String {
    let text =
        std::fs::read_to_string(fixture(&format!("session-state/{SID}/events.jsonl"))).unwrap();
    text.lines().take(n).map(|l| format!("{l}\n")).collect()
}

/// A fixture payload with its transcript path moved into the sandbox.
fn payload(name: &str, transcript: &Path) -> String {
    let mut v: Value =
        serde_json::from_slice(&std::fs::read(fixture(&format!("hooks/{name}"))).unwrap()).unwrap();
    if v.get("transcriptPath").is_some() {
        v["transcriptPath"] = json!(transcript);
    }
    v.to_string()
}

fn hook(sb: &Sandbox, stdin: String) -> String {
    let out = sb
        .acmd()
        .args(["hook", "copilotcli"])
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

fn message_count(sb: &Sandbox) -> usize {
    let v = sb.json(&["sessions", "show", SID, "--json"]);
    v["messages"].as_array().map_or(0, Vec::len)
}

#[test]
fn hook_path_grows_the_session_once_and_gives_the_snapshot_back() {
    let sb = Sandbox::new();
    let dir = sb.home.join(".copilot/session-state").join(SID);
    std::fs::create_dir_all(&dir).unwrap();
    let t = dir.join("events.jsonl");

    // A new session: nothing stored yet, nothing to ingest (no transcript yet).
    let first = hook(&sb, payload("sessionStart.json", &t));
    assert!(!first.contains(SID), "{first}");

    // Run 1 ends: agentStop ingests 5 messages; a second agentStop adds nothing.
    std::fs::write(&t, head(28)).unwrap();
    assert_eq!(hook(&sb, payload("agentStop.json", &t)), "");
    assert_eq!(message_count(&sb), 5);
    hook(&sb, payload("agentStop.json", &t));
    assert_eq!(message_count(&sb), 5);

    // Run 2: the sub-agent's agentStop (sub-agent id, parent's transcript) ingests the parent's
    // file: 5 more, and sessionEnd (no transcriptPath) finds the file by the session id.
    std::fs::write(&t, head(43)).unwrap();
    hook(&sb, payload("agentStop-subagent.json", &t));
    assert_eq!(message_count(&sb), 10);
    hook(&sb, payload("sessionEnd.json", &t));
    assert_eq!(message_count(&sb), 10);
    let v = sb.json(&["sessions", "list", "--agent", "copilotcli", "--json"]);
    let sessions = v["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{v}");
    assert_eq!(sessions[0]["agent"], "copilotcli");
    let hits = sb.json(&["search", "テスト", "--agent", "copilotcli", "--json"]);
    assert!(
        hits["hits"].as_array().is_some_and(|h| !h.is_empty()),
        "{hits}"
    );

    // Run 3: compaction. preCompact saves the snapshot (and ingests the summary); the resume's
    // sessionStart hands it to Copilot as additionalContext, once.
    std::fs::write(&t, head(49)).unwrap();
    assert_eq!(hook(&sb, payload("preCompact.json", &t)), "");
    assert_eq!(message_count(&sb), 11);
    let reply = hook(&sb, payload("sessionStart-resume.json", &t));
    let v: Value = serde_json::from_str(reply.trim()).unwrap_or_else(|e| panic!("{e}: {reply}"));
    let ctx = v["additionalContext"].as_str().unwrap();
    assert!(ctx.contains("src/prix.rs"), "{ctx}");
    assert_eq!(v.as_object().unwrap().len(), 1, "{v}");

    // VS Code's payload sent to the same hook file is refused and ingests nothing.
    hook(
        &sb,
        std::fs::read_to_string(fixture("hooks/vscode-foreign.json")).unwrap(),
    );
    let log = std::fs::read_to_string(sb.hook_log()).unwrap_or_default();
    assert!(log.contains("VS Code Copilot"), "{log}");
    assert_eq!(message_count(&sb), 11);

    // `memtrail import` over the same home finds the session and adds nothing.
    let imp = sb.json(&["import", "--agent", "copilotcli", "--json"]);
    let a = &imp["agents"][0];
    assert_eq!(
        (
            a["agent"].as_str(),
            a["files"].as_u64(),
            a["messages"].as_u64()
        ),
        (Some("copilotcli"), Some(1), Some(0)),
        "{imp}"
    );
}

// ------------------------------------------------------------------------------------ real CLI

struct Tools {
    copilot: PathBuf,
    python: PathBuf,
    /// Where Copilot unpacks its package (235 MB) once for every run: `COPILOT_CACHE_HOME`.
    cache: Option<PathBuf>,
}

/// The e2e tools folder: `$MEMTRAIL_E2E_TOOLS`, else `target/e2e-tools`.
fn tools_dir() -> PathBuf {
    std::env::var_os("MEMTRAIL_E2E_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/e2e-tools"))
}

fn find_tools() -> Result<Tools, String> {
    let in_tools = tools_dir().join("node_modules/.bin/copilot");
    let (copilot, cache) = match bin_from_env("MEMTRAIL_COPILOT_BIN")? {
        Some(p) => (p, None),
        None if is_executable(&in_tools) => (in_tools, Some(tools_dir().join("copilot-cache"))),
        None => (
            which("copilot").ok_or(
                "no copilot (set MEMTRAIL_COPILOT_BIN, or run scripts/e2e-deps to install \
                 @github/copilot in target/e2e-tools)",
            )?,
            None,
        ),
    };
    which("node").ok_or("no node on PATH (the npm loader of @github/copilot needs it)")?;
    let python = resolve_python("import sys; print(sys.executable)", "does not run")?;
    Ok(Tools {
        copilot,
        python,
        cache,
    })
}

/// A `sessionEnd` that comes before Copilot has written the session's file (as Copilot 1.0.102
/// does at times): the hook names the file anyway, leaves it pending and starts a detached
/// `memtrail hook-settle`. Another hook's catch-up keeps the young entry although the file is
/// not there; once Copilot writes the file, the settle process stores it (here by the quiet
/// period: the fixture's head has no `session.shutdown`) and the entry is gone.
#[test]
fn a_session_end_before_the_file_exists_is_captured_once_the_file_appears() {
    let sb = Sandbox::new();
    let dir = sb.home.join(".copilot/session-state").join(SID);
    let t = dir.join("events.jsonl");
    let pending = sb.hook_log().parent().unwrap().join("pending");
    let entries = || std::fs::read_dir(&pending).map_or(0, |d| d.count());
    hook(&sb, payload("sessionEnd.json", &t));
    assert_eq!(entries(), 1);
    // The next hook (a new session's start) catches up what is pending: the file is still
    // missing, the young entry stays.
    hook(&sb, payload("sessionStart.json", &t));
    assert_eq!(entries(), 1);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(&t, head(28)).unwrap();
    let stored = || -> u64 {
        let v = sb.json(&["sessions", "list", "--agent", "copilotcli", "--json"]);
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session_id"] == SID)
            .and_then(|s| s["messages"].as_u64())
            .unwrap_or(0)
    };
    let start = std::time::Instant::now();
    while stored() < 5 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(40),
            "not captured; hook log: {}",
            std::fs::read_to_string(sb.hook_log()).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(message_count(&sb), 5);
    let start = std::time::Instant::now();
    while entries() > 0 {
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let log = std::fs::read_to_string(sb.hook_log()).unwrap_or_default();
    assert!(!log.contains("error"), "{log}");
}

/// "The user's" MCP servers, as `copilot mcp add` writes them, with a comment Copilot accepts.
const USER_MCP: &str = "{\n  // added by hand\n  \"mcpServers\": {\n    \"playwright\": {\n      \"tools\": [\"*\"],\n      \"type\": \"local\",\n      \"command\": \"/bin/true\",\n      \"args\": [\"@playwright/mcp@latest\"]\n    }\n  }\n}\n";

/// Another tool's hook file beside memtrail's.
const USER_HOOKS: &str = "{\n  \"version\": 1,\n  \"hooks\": {\n    \"sessionEnd\": [\n      {\"type\": \"command\", \"bash\": \"true\", \"timeoutSec\": 5}\n    ]\n  }\n}\n";

#[test]
fn real_copilot_accepts_memtrails_config_and_a_session_is_captured_once() {
    let Some(tools) = tools_or_skip(find_tools) else {
        return;
    };
    let (_keep, root) = SandboxDir::new("memtrail-e2e-copilot-");
    let (home, state, tmp, proj) = (
        root.join("home"),
        root.join("home/.local/state"),
        root.join("tmp"),
        root.join("proj"),
    );
    for d in [&home, &tmp, &proj] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(proj.join("hello-from-copilot.txt"), "x").unwrap();
    let cfg = home.join(".copilot");
    let (mcp, other_hooks) = (cfg.join("mcp-config.json"), cfg.join("hooks/guard.json"));
    std::fs::create_dir_all(cfg.join("hooks")).unwrap();
    std::fs::write(&mcp, USER_MCP).unwrap();
    std::fs::write(&other_hooks, USER_HOOKS).unwrap();

    let base = sandbox_env(
        std::env::var_os("PATH").unwrap_or_default(),
        &home,
        &state,
        &tmp,
        vec![],
    );
    let stub = Stub::start(
        sandbox_cmd(&base, &root, &tools.python),
        &root,
        "stub_openai.py",
        &json!({"rules": [{"match": "run ls",
            "reply": [{"type": "function_call", "name": "bash",
                       "arguments": {"command": "ls", "description": "List files"}}],
            "after_tool": "Listed: {tool_result}"}],
            "fallback": "ok"}),
    );
    let cache = tools
        .cache
        .clone()
        .unwrap_or_else(|| root.join("copilot-cache"));
    let mut env = base.clone();
    env.extend(
        [
            ("COPILOT_OFFLINE", OsString::from("true")),
            ("COPILOT_AUTO_UPDATE", "false".into()),
            ("COPILOT_CACHE_HOME", cache.into_os_string()),
            (
                "COPILOT_PROVIDER_BASE_URL",
                format!("http://127.0.0.1:{}/v1", stub.port).into(),
            ),
            ("COPILOT_PROVIDER_WIRE_API", "responses".into()),
            ("COPILOT_PROVIDER_API_KEY", "stub".into()),
            ("COPILOT_MODEL", "gpt-5".into()),
        ]
        .map(|(k, v)| (k.to_string(), v)),
    );
    let memtrail = |args: &[&str]| -> Command {
        let mut c = sandbox_cmd(&env, &root, memtrail_bin());
        c.args(args);
        c
    };
    let copilot = |args: &[&str]| -> Command {
        let mut c = sandbox_cmd(&env, &proj, &tools.copilot);
        c.args(args);
        c
    };

    // A session runs under strace when it is installed: it must connect to loopback only.
    let strace = which("strace");
    let session = |prompt: &str, trace: &Path| -> Command {
        match &strace {
            Some(st) => {
                let mut c = sandbox_cmd(&env, &proj, st);
                c.args(["-f", "-qq", "-e", "trace=connect,sendto,sendmsg", "-o"])
                    .arg(trace)
                    .arg(&tools.copilot)
                    .args(["-p", prompt, "--allow-all-tools"]);
                c
            }
            None => copilot(&["-p", prompt, "--allow-all-tools"]),
        }
    };

    run_ok(
        memtrail(&["install", "--agent", "copilotcli", "--yes"]),
        "install",
    );
    let bin = memtrail_bin();
    let hook_file: Value =
        serde_json::from_slice(&std::fs::read(cfg.join("hooks/memtrail.json")).unwrap()).unwrap();
    assert_eq!(
        hook_file["hooks"]["agentStop"][0]["bash"],
        format!("{} hook copilotcli", bin.display()),
        "{hook_file}"
    );

    // Copilot's own commands accept the entries.
    let list = text(&run_ok(copilot(&["mcp", "list"]), "copilot mcp list").stdout);
    assert!(
        list.contains("memtrail") && list.contains("playwright"),
        "{list}"
    );
    let get = run_ok(copilot(&["mcp", "get", "memtrail"]), "copilot mcp get");
    let get = text(&get.stdout);
    assert!(
        get.contains(&bin.display().to_string()) && get.contains("mcp"),
        "{get}"
    );
    let skills = text(&run_ok(copilot(&["skill", "list"]), "copilot skill list").stdout);
    assert!(skills.contains("memtrail"), "{skills}");

    // One real session against the stub: a shell call, then the answer.
    let out = run(
        session("please run ls", &root.join("strace-1.txt")),
        "copilot -p",
    );
    assert!(out.status.success(), "copilot -p failed\n{}", show(&out));
    assert!(
        text(&out.stdout).contains("hello-from-copilot.txt"),
        "{}",
        show(&out)
    );
    // The model was offered memtrail's tools under Copilot's names.
    let offered = stub.requests().iter().any(|r| {
        r["body"]["tools"]
            .as_array()
            .is_some_and(|ts| ts.iter().any(|t| t["name"] == "memtrail-search"))
    });
    assert!(offered, "memtrail-search was not offered to the model");

    // Captured through the hooks, whole. Copilot writes `events.jsonl` asynchronously: when its
    // agentStop and sessionEnd hooks run, the turn's last events (the tool's result, the final
    // answer, `session.shutdown`), at times the whole file, are not on disk yet. The sessionEnd
    // hook leaves a detached `memtrail hook-settle` that waits for `session.shutdown` and
    // ingests the rest: the session is complete shortly after `copilot -p` exits, with no
    // later session or import.
    let list_sessions = || -> Vec<String> {
        let v = stdout_json(
            &run_ok(
                memtrail(&["sessions", "list", "--agent", "copilotcli", "--json"]),
                "sessions list",
            ),
            "sessions list",
        );
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["session_id"].as_str())
            .map(str::to_string)
            .collect()
    };
    let show_session = |sid: &str| {
        stdout_json(
            &run_ok(
                memtrail(&["sessions", "show", sid, "--json"]),
                "sessions show",
            ),
            "sessions show",
        )
    };
    let roles = |shown: &Value| -> Vec<String> {
        shown["messages"]
            .as_array()
            .map(|ms| {
                ms.iter()
                    .map(|m| m["role"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    // Polls `sessions show` until the session other than `except` has `want` roles (the
    // detached process waits for Copilot's last write: well under its 30 s maximum).
    let settled = |except: Option<&str>, want: &[&str]| -> (String, Value) {
        let start = std::time::Instant::now();
        loop {
            let ids: Vec<String> = list_sessions()
                .into_iter()
                .filter(|s| Some(s.as_str()) != except)
                .collect();
            assert!(ids.len() <= 1, "{ids:?}");
            if let Some(id) = ids.first() {
                let shown = show_session(id);
                if roles(&shown) == want {
                    return (id.clone(), shown);
                }
                assert!(
                    start.elapsed() < std::time::Duration::from_secs(45),
                    "not settled: {shown}\nhook log: {}",
                    std::fs::read_to_string(state.join("memtrail/hook.log")).unwrap_or_default()
                );
            } else {
                assert!(
                    start.elapsed() < std::time::Duration::from_secs(45),
                    "no session captured; hook log: {}",
                    std::fs::read_to_string(state.join("memtrail/hook.log")).unwrap_or_default()
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    };
    let (sid, shown) = settled(None, &["user", "assistant", "assistant"]);
    assert_eq!(shown["messages"][1]["tool_calls"][0]["name"], "bash");
    assert_eq!(
        shown["messages"][1]["tool_calls"][0]["output"],
        "hello-from-copilot.txt\n<shellId: 0 completed with exit code 0>"
    );
    assert_eq!(
        shown["messages"][2]["text"],
        "Listed: hello-from-copilot.txt\n<shellId: 0 completed with exit code 0>"
    );
    let transcript = cfg.join("session-state").join(&sid).join("events.jsonl");
    assert!(transcript.is_file());

    // A second session is captured whole the same way, the first one unchanged.
    let out = run(
        session("hello again", &root.join("strace-2.txt")),
        "copilot -p (2)",
    );
    assert!(
        out.status.success(),
        "copilot -p (2) failed\n{}",
        show(&out)
    );
    let (second, _) = settled(Some(&sid), &["user", "assistant"]);
    assert_eq!(roles(&show_session(&sid)).len(), 3);

    // Nothing is left for a later hook, nothing went wrong, and an import adds nothing:
    // captured once.
    let pending = state.join("memtrail/pending");
    let left = std::fs::read_dir(&pending).map_or(0, |d| d.count());
    assert_eq!(left, 0, "entries left in {}", pending.display());
    let log = std::fs::read_to_string(state.join("memtrail/hook.log")).unwrap_or_default();
    assert!(!log.contains("error"), "{log}");
    let imp = stdout_json(
        &run_ok(
            memtrail(&["import", "--agent", "copilotcli", "--json"]),
            "import",
        ),
        "import",
    );
    assert_eq!(imp["agents"][0]["messages"], 0, "captured once: {imp}");
    assert_eq!(list_sessions().len(), 2);
    assert_eq!(roles(&show_session(&second)), ["user", "assistant"]);
    drop(stub);
    if strace.is_some() {
        for n in [1, 2] {
            let log = std::fs::read_to_string(root.join(format!("strace-{n}.txt"))).unwrap();
            let outside = not_loopback(&log);
            assert!(outside.is_empty(), "session {n} left loopback: {outside:?}");
        }
    }

    // Uninstall gives the user's files back byte for byte and removes memtrail's.
    run_ok(
        memtrail(&["uninstall", "--agent", "copilotcli", "--yes"]),
        "uninstall",
    );
    assert_eq!(std::fs::read_to_string(&mcp).unwrap(), USER_MCP);
    assert_eq!(std::fs::read_to_string(&other_hooks).unwrap(), USER_HOOKS);
    assert!(!cfg.join("hooks/memtrail.json").exists());
    assert!(!cfg.join("skills/memtrail").exists());
}

/// The addresses outside loopback in an strace log of `connect`/`send*` calls
/// (`inet_addr("…")`, `inet_pton(AF_INET6, "…")`).
fn not_loopback(log: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in log.lines() {
        for key in ["inet_addr(\"", "inet_pton(AF_INET6, \""] {
            let mut rest = line;
            while let Some(i) = rest.find(key) {
                rest = &rest[i + key.len()..];
                let addr = rest.split('"').next().unwrap_or("");
                if !(addr.starts_with("127.") || addr == "::1" || addr == "::ffff:127.0.0.1") {
                    out.push(addr.to_string());
                }
            }
        }
    }
    out
}

#[test]
fn not_loopback_reads_strace_lines() {
    let log = "12 connect(21, {sa_family=AF_INET, sin_port=htons(38837), sin_addr=inet_addr(\"127.0.0.1\")}, 16) = 0\n\
               13 connect(22, {sa_family=AF_INET6, sin6_port=htons(443), inet_pton(AF_INET6, \"2606:50c0::1\", &sin6_addr)}, 28) = -1\n\
               14 sendto(23, \"x\", 1, 0, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr(\"10.0.0.2\")}, 16) = 1\n";
    assert_eq!(not_loopback(log), ["2606:50c0::1", "10.0.0.2"]);
}
