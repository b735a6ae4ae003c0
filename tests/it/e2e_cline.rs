//! Cline end to end, the hook path (no Cline needed): `memtrail hook cline` in a sandboxed HOME,
//! fed the payloads of `fixtures/cline/hooks/` while the fixture task is rewritten whole in
//! `~/.cline/data/tasks/<id>/api_conversation_history.json`; each message is stored once, the
//! grown file replaces what was stored, the PreCompact reply carries the snapshot in Cline's
//! dialect, and `memtrail import` afterwards adds nothing.
//!
//! And the real CLI (npm `cline`, from `MEMTRAIL_CLINE_BIN`, else `$MEMTRAIL_E2E_TOOLS` or
//! `target/e2e-tools` `node_modules/.bin/cline`, else PATH; skipped without it unless
//! `MEMTRAIL_REQUIRE_E2E=1`; verified with 3.0.65): "the user's" `cline_mcp_settings.json`,
//! `memtrail install --agent cline`, `cline config mcp --json` lists memtrail's server from that
//! file, `uninstall` gives the file back byte for byte and removes every hook script; and a real
//! `cline "<prompt>"` session against the loopback Anthropic stub (its provider `anthropic` with
//! a `baseUrl` in `providers.json`) is stored by memtrail's hooks (`agent_start`, `agent_end` in
//! the `TaskStart` / `TaskComplete` scripts), exactly once: `memtrail import` adds nothing.
#![cfg(unix)]

use crate::common::{
    self, SandboxDir, Stub, bin_from_env, is_executable, memtrail_bin, repo_root, resolve_python,
    run, run_ok, sandbox_cmd, sandbox_env, show, stdout_json, text, tools_or_skip, which,
};
use crate::support::Sandbox;

use serde_json::{Value, json};
use std::path::PathBuf;

const TASK: &str = "1764661500123";

fn fixture(rel: &str) -> PathBuf {
    repo_root().join("fixtures/cline").join(rel)
}

fn payload(name: &str) -> String {
    std::fs::read_to_string(fixture(&format!("hooks/{name}.json"))).unwrap()
}

#[test]
fn hook_path_stores_a_rewritten_task_once() {
    let sb = Sandbox::new();
    let dir = sb.home.join(".cline/data/tasks").join(TASK);
    std::fs::create_dir_all(&dir).unwrap();
    let t = dir.join("api_conversation_history.json");

    // TaskStart: no transcript yet, nothing stored, nothing printed.
    assert_eq!(sb.hook("cline", payload("TaskStart")), "");
    assert_eq!(sb.sessions(), 0);

    // Cline wrote the first turn; the next prompt's hook stores it.
    std::fs::copy(fixture("grow/turn1.json"), &t).unwrap();
    assert_eq!(sb.hook("cline", payload("UserPromptSubmit")), "");
    assert_eq!(sb.message_ids(TASK), ["0", "1", "3"]);

    // Rewritten whole with two more messages: TaskComplete stores the grown task; twice is once.
    std::fs::copy(fixture("grow/turn2.json"), &t).unwrap();
    sb.hook("cline", payload("TaskComplete"));
    sb.hook("cline", payload("TaskComplete"));
    assert_eq!(sb.message_ids(TASK), ["0", "1", "3", "5"]);
    let shown = sb.json(&["sessions", "show", TASK, "--json"]);
    let call = &shown["messages"][2]["tool_calls"][0];
    assert_eq!(call["name"], "execute_command");
    assert_eq!(call["is_error"], true);
    assert_eq!(shown["session"]["project"], "/home/user/demo", "{shown}");

    // The whole task: PreCompact saves a snapshot and answers with it (Cline appends it to the
    // condensed conversation).
    std::fs::copy(
        fixture(&format!("data/tasks/{TASK}/api_conversation_history.json")),
        &t,
    )
    .unwrap();
    let reply = sb.hook("cline", payload("PreCompact"));
    let v: Value = serde_json::from_str(reply.trim()).unwrap_or_else(|e| panic!("{e}: {reply}"));
    assert_eq!(v["cancel"], false);
    let ctx = v["contextModification"].as_str().unwrap();
    assert!(ctx.contains("Mets à jour le README"), "{ctx}");
    assert_eq!(sb.message_ids(TASK).len(), 7);

    // `memtrail import` over the same home finds the task and adds nothing.
    let imp = sb.json(&["import", "--agent", "cline", "--json"]);
    let a = &imp["agents"][0];
    assert_eq!(
        (
            a["agent"].as_str(),
            a["files"].as_u64(),
            a["messages"].as_u64()
        ),
        (Some("cline"), Some(1), Some(0)),
        "{imp}"
    );
    assert_eq!(sb.message_ids(TASK).len(), 7);
    let hits = sb.json(&["search", "後で直して", "--agent", "cline", "--json"]);
    assert!(
        hits["hits"].as_array().is_some_and(|h| h.len() == 1),
        "{hits}"
    );
}

/// The CLI fixture session's id.
const SID: &str = "1764666300000_k3v9q";

/// The CLI fixture session's folder in `sb` (`~/.cline/data/sessions/<id>/`, holding its state
/// file), the fixture's own folder, and the path of its messages file (not written yet).
fn cli_session(sb: &Sandbox) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let dir = sb.home.join(".cline/data/sessions").join(SID);
    std::fs::create_dir_all(&dir).unwrap();
    let src = fixture(&format!("data/sessions/{SID}"));
    std::fs::copy(
        src.join(format!("{SID}.json")),
        dir.join(format!("{SID}.json")),
    )
    .unwrap();
    let t = dir.join(format!("{SID}.messages.json"));
    (dir, src, t)
}

/// The CLI 3.x's hook path (no Cline needed): `memtrail hook cline` fed the CLI's payloads of
/// `fixtures/cline/hooks-cli/` (`taskId` a `conv_` id, the session `sessionContext.rootSessionId`)
/// while the fixture session is rewritten whole in `~/.cline/data/sessions/<id>/`, its sub-agent's
/// file appearing beside it; each message is stored once, the sub-agent as a child session, and
/// `memtrail import` afterwards adds nothing.
#[test]
fn cli_hook_path_stores_a_rewritten_session_once() {
    let sb = Sandbox::new();
    let (dir, src, t) = cli_session(&sb);
    const SUB: &str = "agent_1764666306600_r4t2w1.messages.json";
    let cli =
        |name: &str| std::fs::read_to_string(fixture(&format!("hooks-cli/{name}.json"))).unwrap();

    // agent_start before the first write: nothing stored, nothing printed.
    assert_eq!(sb.hook("cline", cli("TaskStart")), "");
    assert_eq!(sb.sessions(), 0);

    // Rewritten whole twice; agent_end stores what is there; twice is once.
    std::fs::copy(fixture("grow-cli/turn1.messages.json"), &t).unwrap();
    sb.hook("cline", cli("TaskComplete"));
    assert_eq!(
        sb.message_ids(SID),
        ["0f6e2a52-3c1d-4b8e-9a57-2d4c8e1f7a90", "msg_Qp4uN1xa"]
    );
    std::fs::copy(src.join(format!("{SID}.messages.json")), &t).unwrap();
    std::fs::copy(src.join(SUB), dir.join(SUB)).unwrap();
    sb.hook("cline", cli("TaskComplete"));
    sb.hook("cline", cli("TaskComplete"));
    assert_eq!(
        sb.message_ids(SID),
        [
            "0f6e2a52-3c1d-4b8e-9a57-2d4c8e1f7a90",
            "msg_Qp4uN1xa",
            "msg_Zc3kW7yd",
            "msg_Ye1sJ5uf",
            "msg_Sa9gT4hk",
            "5b1d9c3e-8f2a-4e6b-a1c7-0e9d4f3b2a18",
            "error_7c2e4f18-9b3d-4a5e-8f61-3d2c1b0a9e87",
        ]
    );
    let shown = sb.json(&["sessions", "show", SID, "--json"]);
    assert_eq!(
        shown["session"]["project"], "/home/user/cli-demo",
        "{shown}"
    );
    let call = &shown["messages"][1]["tool_calls"][0];
    assert_eq!(
        (&call["tool"], &call["is_error"], &call["exit_code"]),
        (&json!("shell"), &json!(true), &json!(101)),
        "{call}"
    );

    // The sub-agent's file beside it, stored by the same hook as a child session.
    let child = format!("{SID}__agent_1764666306600_r4t2w1");
    assert_eq!(
        sb.message_ids(&child),
        ["9a7c5e31-2b4d-4f6a-8c1e-3d5b7f9a1c2e", "msg_Tn3wV6pz"]
    );
    let list = sb.json(&["sessions", "list", "--agent", "cline", "--json"]);
    let sub = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == child.as_str())
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(sub["parent_session_id"], SID, "{list}");
    assert_eq!(sb.sessions(), 2);

    let imp = sb.json(&["import", "--agent", "cline", "--json"]);
    assert_eq!(
        (
            &imp["agents"][0]["files"],
            &imp["agents"][0]["messages"],
            &imp["agents"][0]["updated"]
        ),
        (&json!(2), &json!(0), &json!(0)),
        "{imp}"
    );

    // Rewritten shorter (what a compaction or a restored checkpoint would leave): nothing
    // stored is lost, nothing is added twice.
    let before = sb.message_ids(SID);
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::copy(fixture("grow-cli/turn1.messages.json"), &t).unwrap();
    sb.hook("cline", cli("TaskComplete"));
    assert_eq!(sb.message_ids(SID), before);
}

fn find_cline() -> Result<PathBuf, String> {
    let in_tools = common::e2e_tools_dir().join("node_modules/.bin/cline");
    let cline = match bin_from_env("MEMTRAIL_CLINE_BIN")? {
        Some(p) => p,
        None if is_executable(&in_tools) => in_tools,
        None => which("cline").ok_or(
            "no cline (set MEMTRAIL_CLINE_BIN, or install the npm package `cline` in \
             target/e2e-tools)",
        )?,
    };
    which("node").ok_or("no node on PATH (cline's launcher needs it)")?;
    Ok(cline)
}

/// A user's `cline_mcp_settings.json` as Cline writes it (`JSON.stringify(…, null, 2)`).
const USER_MCP: &str = r#"{
  "mcpServers": {
    "fetch": {
      "command": "uvx",
      "args": [
        "mcp-server-fetch"
      ],
      "disabled": false,
      "autoApprove": [],
      "type": "stdio"
    }
  }
}"#;

#[test]
fn real_cline_lists_memtrails_mcp_server() {
    let Some(cline) = tools_or_skip(find_cline) else {
        return;
    };
    let (_keep, root) = SandboxDir::new("memtrail-e2e-cline-");
    let (home, state, tmp) = (
        root.join("home"),
        root.join("home/.local/state"),
        root.join("tmp"),
    );
    for d in [&home, &tmp] {
        std::fs::create_dir_all(d).unwrap();
    }
    let env = sandbox_env(
        std::env::var_os("PATH").unwrap_or_default(),
        &home,
        &state,
        &tmp,
        Vec::new(),
    );
    let settings = home.join(".cline/data/settings/cline_mcp_settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, USER_MCP).unwrap();

    let mut install = sandbox_cmd(&env, &home, memtrail_bin());
    install.args(["install", "--agent", "cline", "--yes"]);
    run_ok(install, "memtrail install --agent cline");
    let hooks = home.join("Documents/Cline/Hooks");
    assert!(hooks.join("TaskComplete").is_file());

    let mut list = sandbox_cmd(&env, &home, &cline);
    list.args(["config", "mcp", "--json"]);
    let out = run_ok(list, "cline config mcp --json");
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let servers = v.as_array().expect("a list");
    let ours = servers
        .iter()
        .find(|s| s["name"] == "memtrail")
        .unwrap_or_else(|| panic!("memtrail not listed: {v}"));
    assert_eq!(
        (&ours["transportType"], &ours["disabled"], &ours["path"]),
        (&json!("stdio"), &json!(false), &json!(settings)),
        "{v}"
    );
    assert!(servers.iter().any(|s| s["name"] == "fetch"), "{v}");

    let mut uninstall = sandbox_cmd(&env, &home, memtrail_bin());
    uninstall.args(["uninstall", "--agent", "cline", "--yes"]);
    run_ok(uninstall, "memtrail uninstall --agent cline");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), USER_MCP);
    assert!(!hooks.join("TaskComplete").exists());
}

/// The Cline CLI's hub daemons this test started (`cline --cline-hub-daemon --cwd <the
/// sandbox's project> …`, which run the sessions and outlive the command), stopped when dropped:
/// each process whose command line names the hub flag and this sandbox's unique folder.
struct Hubs(PathBuf);

impl Drop for Hubs {
    /// Stops them and waits (up to 10 s) until they are gone: a hub still shutting down would
    /// write its lock files into the sandbox while it is being removed.
    fn drop(&mut self) {
        let ours = self.0.to_string_lossy().into_owned();
        let Ok(rd) = std::fs::read_dir("/proc") else {
            return;
        };
        let mut pids = Vec::new();
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else {
                continue;
            };
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let args: Vec<String> = cmdline
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            if args.iter().any(|a| a == "--cline-hub-daemon") && args.contains(&ours) {
                let _ = std::process::Command::new("kill")
                    .arg(pid.to_string())
                    .status();
                pids.push(pid);
            }
        }
        for _ in 0..200 {
            if pids
                .iter()
                .all(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

#[test]
fn real_cline_session_is_stored_by_the_hooks_once() {
    let Some(cline) = tools_or_skip(find_cline) else {
        return;
    };
    let Some(python) = tools_or_skip(|| {
        resolve_python("import sys; print(sys.executable)", "cannot run the stub")
    }) else {
        return;
    };
    let sb = common::CliSandbox::new("memtrail-e2e-cline-run-", "hello-from-cline.txt");
    // Its own hub on a free port: never a hub another HOME started (it probes a fixed port).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let mut base = sb.env.clone();
    base.push(("CLINE_HUB_PORT".into(), port.to_string().into()));
    base.push(("CLINE_NO_AUTO_UPDATE".into(), "1".into()));
    let data = sb.home.join(".cline/data");
    let _hubs = Hubs(sb.proj.clone());
    let stub = Stub::start(
        sandbox_cmd(&base, &sb.root, &python),
        &sb.root,
        "stub_anthropic.py",
        &json!({"rules": [{"match": "run ls",
            "reply": [{"type": "tool_use", "name": "run_commands",
                "input": {"commands": ["ls"]}}],
            "after_tool": "Listed the files."},
            {"match": "delegate",
            "reply": [{"type": "tool_use", "name": "spawn_agent",
                "input": {"systemPrompt": "You review.", "task": "review the folder"}}],
            "after_tool": "Delegated."}],
            "fallback": "sub-agent ok"}),
    );
    std::fs::create_dir_all(data.join("settings")).unwrap();
    std::fs::write(
        data.join("settings/providers.json"),
        json!({"version": 1, "lastUsedProvider": "anthropic", "modes": {},
            "providers": {"anthropic": {"settings": {"provider": "anthropic",
                "model": "claude-sonnet-4-5", "apiKey": "stub",
                "baseUrl": format!("http://127.0.0.1:{}/v1", stub.port)},
                "updatedAt": "2026-12-02T08:00:00.000Z", "tokenSource": "manual"}}})
        .to_string(),
    )
    .unwrap();
    let memtrail = |args: &[&str]| {
        let mut c = sandbox_cmd(&base, &sb.root, memtrail_bin());
        c.args(args);
        c
    };
    run_ok(
        memtrail(&["install", "--agent", "cline", "--yes"]),
        "install",
    );

    let listed = || {
        stdout_json(
            &run_ok(
                memtrail(&["sessions", "list", "--agent", "cline", "--json"]),
                "sessions list",
            ),
            "sessions list",
        )
    };
    let mut c = sandbox_cmd(&base, &sb.proj, &cline);
    c.arg("please run ls");
    let out = run(c, "cline");
    assert!(out.status.success(), "cline failed\n{}", show(&out));
    assert!(
        text(&out.stdout).contains("Listed the files."),
        "{}",
        show(&out)
    );

    // Stored by the hooks (no import yet): the session folder's id, the run's three messages.
    let v = listed();
    let sessions = v["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{v}");
    let sid = sessions[0]["session_id"].as_str().unwrap().to_string();
    assert!(
        data.join("sessions")
            .join(&sid)
            .join(format!("{sid}.messages.json"))
            .is_file(),
        "{sid}"
    );
    assert_eq!(sessions[0]["project"], json!(sb.proj), "{v}");
    let shown = stdout_json(
        &run_ok(memtrail(&["sessions", "show", &sid, "--json"]), "show"),
        "show",
    );
    let msgs = shown["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "assistant"], "{shown}");
    assert_eq!(msgs[0]["text"], "please run ls");
    let call = &msgs[1]["tool_calls"][0];
    assert_eq!(
        (&call["name"], &call["tool"], &call["is_error"]),
        (&json!("run_commands"), &json!("shell"), &json!(false))
    );
    assert_eq!(call["output"], "hello-from-cline.txt");
    assert_eq!(msgs[2]["text"], "Listed the files.");

    // A sub-agent (`spawn_agent`): its conversation beside the session's, stored by the hooks
    // as a child session.
    let mut c = sandbox_cmd(&base, &sb.proj, &cline);
    c.arg("please delegate");
    let out = run(c, "cline (delegate)");
    assert!(out.status.success(), "cline failed\n{}", show(&out));
    let v = listed();
    let sessions = v["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 3, "{v}");
    let child = sessions
        .iter()
        .find(|s| s["parent_session_id"].is_string())
        .unwrap_or_else(|| panic!("no sub-agent session: {v}"));
    let parent = child["parent_session_id"].as_str().unwrap();
    let child_id = child["session_id"].as_str().unwrap();
    assert!(
        child_id.starts_with(&format!("{parent}__agent_")),
        "{child_id}"
    );
    let shown = stdout_json(
        &run_ok(memtrail(&["sessions", "show", child_id, "--json"]), "show"),
        "show",
    );
    let texts: Vec<&str> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(texts, ["review the folder", "sub-agent ok"], "{shown}");

    // The task's final answer is stored without an import: by its `agent_end` hook, or, when
    // Cline wrote it while that hook read the file (it runs its hooks detached), by the
    // `hook-settle` the hook left, once the file has been quiet for 2 s.
    let parent_texts = || -> Vec<String> {
        let shown = stdout_json(
            &run_ok(memtrail(&["sessions", "show", parent, "--json"]), "show"),
            "show",
        );
        shown["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| m["text"].as_str().unwrap_or("").to_string())
            .collect()
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let mut texts = parent_texts();
    while !texts.iter().any(|t| t == "Delegated.") && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(200));
        texts = parent_texts();
    }
    assert!(texts.iter().any(|t| t == "Delegated."), "{texts:?}");

    // Captured once: an import afterwards adds nothing.
    let imp = stdout_json(
        &run_ok(
            memtrail(&["import", "--agent", "cline", "--json"]),
            "import",
        ),
        "import",
    );
    assert_eq!(
        (&imp["agents"][0]["files"], &imp["agents"][0]["messages"]),
        (&json!(3), &json!(0)),
        "{imp}"
    );
}

/// Cline CLI 3.x runs its hooks detached and may write a task's last answer after the `Stop`
/// hook (`agent_end`) read the file: that hook leaves a detached `memtrail hook-settle`, which
/// reads the file again once it has been unchanged for 2 s, with no hook after it.
#[test]
fn a_task_end_written_after_its_hook_is_read_again_once_quiet() {
    let sb = Sandbox::new();
    let (_, src, t) = cli_session(&sb);
    std::fs::copy(fixture("grow-cli/turn1.messages.json"), &t).unwrap();
    let complete = std::fs::read_to_string(fixture("hooks-cli/TaskComplete.json")).unwrap();
    sb.hook("cline", complete);
    assert_eq!(
        sb.message_ids(SID),
        ["0f6e2a52-3c1d-4b8e-9a57-2d4c8e1f7a90", "msg_Qp4uN1xa"]
    );
    // The task's last write, after its hook: no hook follows.
    std::fs::copy(src.join(format!("{SID}.messages.json")), &t).unwrap();
    let want = 7;
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut got = sb.message_ids(SID);
    while got.len() < want && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(200));
        got = sb.message_ids(SID);
    }
    assert_eq!(got.len(), want, "{got:?}");
    assert_eq!(
        got.last().map(String::as_str),
        Some("error_7c2e4f18-9b3d-4a5e-8f61-3d2c1b0a9e87")
    );
}
