//! pi end to end.
//!
//! 1. The hook path (no pi needed): `memtrail hook pi` in a sandboxed HOME, fed the payloads of
//!    `fixtures/pi/hooks/` (what memtrail's extension writes) while the fixture session grows in
//!    `~/.pi/agent/sessions/--home-user-demo--/` prompt by prompt, a branch left through `/tree`
//!    included; each message is stored once, the dead branch is dropped, the compaction's
//!    snapshot comes back at PostCompact; `import` alone stores the same.
//! 2. The real CLI (`@mariozechner/pi-coding-agent`, from `MEMTRAIL_PI_BIN`, else
//!    `$MEMTRAIL_E2E_TOOLS` or `target/e2e-tools` `node_modules/.bin/pi`, else PATH; skipped
//!    without it unless `MEMTRAIL_REQUIRE_E2E=1`): `memtrail install --agent pi` then
//!    `uninstall` gives "the user's" agent folder back byte for byte; installed again, pi loads
//!    memtrail's extension with its own loader (the model is offered the extension's
//!    `memtrail_search` tool); a `pi -p` session against the loopback stub model runs a shell
//!    command and is captured exactly once by the extension's hooks (an import adds nothing); an
//!    RPC-mode compaction is stored once as a summary and its snapshot reaches the system prompt
//!    of the next prompt.
#![cfg(unix)]

use crate::common;
use crate::support::Sandbox;

use common::{
    Stub, bin_from_env, is_executable, memtrail_bin, repo_root, resolve_python, run, run_ok,
    sandbox_cmd, show, stdout_json, text, tools_or_skip, which,
};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const SID: &str = "019ad0c2-7e41-7a3b-9c5d-2f8e6a1b4c07";
const FILE: &str = "2026-11-30T09-12-03-481Z_019ad0c2-7e41-7a3b-9c5d-2f8e6a1b4c07.jsonl";

fn fixture(rel: &str) -> PathBuf {
    repo_root().join("fixtures/pi").join(rel)
}

/// The fixture session's first `n` lines.
fn head(n: usize) -> String {
    let text =
        std::fs::read_to_string(fixture(&format!("sessions/--home-user-demo--/{FILE}"))).unwrap();
    text.lines().take(n).map(|l| format!("{l}\n")).collect()
}

/// A fixture payload with its session file moved into the sandbox.
fn payload(name: &str, transcript: &Path) -> String {
    let mut v: Value =
        serde_json::from_slice(&std::fs::read(fixture(&format!("hooks/{name}"))).unwrap()).unwrap();
    v["transcript_path"] = json!(transcript);
    v.to_string()
}

#[test]
fn hook_path_grows_the_session_once_and_gives_the_snapshot_back() {
    let sb = Sandbox::new();
    let dir = sb.home.join(".pi/agent/sessions/--home-user-demo--");
    std::fs::create_dir_all(&dir).unwrap();
    let t = dir.join(FILE);
    let hook = |name: &str| sb.hook("pi", payload(name, &t));

    // A new session: pi has written nothing yet; nothing to ingest, nothing to say.
    assert_eq!(hook("SessionStart.json"), "");
    let v = sb.json(&["sessions", "list", "--agent", "pi", "--json"]);
    assert_eq!(v["sessions"], json!([]), "{v}");

    // Prompt 1 ends (agent_end): 3 messages, the failing command's exit code; again: nothing new.
    std::fs::write(&t, head(7)).unwrap();
    assert_eq!(hook("Stop.json"), "");
    assert_eq!(sb.message_ids(SID), ["a0e4c6d2", "b17f3e90", "d4b2e7f6"]);
    hook("Stop.json");
    assert_eq!(sb.message_ids(SID).len(), 3);
    let shown = sb.json(&["sessions", "show", SID, "--json"]);
    let call = &shown["messages"][1]["tool_calls"][0];
    assert_eq!(
        (&call["tool"], &call["exit_code"], &call["is_error"]),
        (&json!("shell"), &json!(101), &json!(true))
    );
    assert_eq!(shown["session"]["project"], "/home/user/demo");

    // Prompts 2 and 3; then the branch left through /tree: the next agent_end drops it.
    std::fs::write(&t, head(11)).unwrap();
    hook("Stop.json");
    std::fs::write(&t, head(15)).unwrap();
    hook("Stop.json");
    assert_eq!(sb.message_ids(SID).len(), 9);
    std::fs::write(&t, head(20)).unwrap();
    hook("Stop.json");
    let after_branch = [
        "a0e4c6d2", "b17f3e90", "d4b2e7f6", "e58c1a2f", "f6a9d3c0", "1c8d5a3e", "6b3c0f8d",
        "7c4d1a9e", "8d5e2b0f", "af702d4b",
    ];
    assert_eq!(sb.message_ids(SID), after_branch);
    let hits = sb.json(&["search", "失敗", "--agent", "pi", "--json"]);
    assert!(
        hits["hits"].as_array().is_some_and(|h| !h.is_empty()),
        "{hits}"
    );

    // Compaction: session_before_compact saves the snapshot; session_compact stores the
    // compaction entry and gets the snapshot back, once.
    std::fs::write(&t, head(23)).unwrap();
    assert_eq!(hook("PreCompact.json"), "");
    std::fs::write(&t, head(24)).unwrap();
    let reply = hook("PostCompact.json");
    let v: Value = serde_json::from_str(reply.trim()).unwrap_or_else(|e| panic!("{e}: {reply}"));
    let ctx = v["additionalContext"].as_str().unwrap();
    assert!(ctx.contains(SID), "{ctx}");
    // Built from the active branch: the request and the file of the dead one are not in it.
    assert!(
        ctx.contains("## Last request [prompt]\n- Instead, add a test for the ISO case first"),
        "{ctx}"
    );
    assert!(ctx.contains("- tests/dates.rs (written"), "{ctx}");
    assert!(!ctx.contains("Fix it with an edit"), "{ctx}");
    // Consumed: pi restarted on this session (`pi -c`) is not given it again.
    assert_eq!(hook("SessionStart.json"), "", "the snapshot is given once");

    // The rest, and the end of the session.
    std::fs::write(&t, head(29)).unwrap();
    assert_eq!(hook("SessionEnd.json"), "");
    let ids = sb.message_ids(SID);
    assert_eq!(ids.len(), 15);
    assert_eq!(ids[..10], after_branch);
    assert_eq!(
        ids[10..],
        ["b0813e5c", "e3b4618f", "f4c57290", "16e794b2", "27f8a5c3"]
    );
    let v = sb.json(&["sessions", "list", "--agent", "pi", "--json"]);
    assert_eq!(v["sessions"].as_array().unwrap().len(), 1, "{v}");
}

#[test]
fn import_alone_stores_what_the_hooks_store() {
    let sb = Sandbox::new();
    let dir = sb.home.join(".pi/agent/sessions/--home-user-demo--");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(FILE), head(29)).unwrap();
    std::fs::write(dir.join("notes.txt"), "not a session").unwrap();
    let imp = sb.json(&["import", "--agent", "pi", "--json"]);
    let a = &imp["agents"][0];
    // 18 messages stored in one pass, 3 of them (the dead branch) rewound: 15 left.
    assert_eq!(a["files"].as_u64(), Some(1), "{imp}");
    let ids = sb.message_ids(SID);
    assert_eq!(ids.len(), 15);
    assert_eq!(ids[6], "6b3c0f8d");
    let v = sb.json(&["sessions", "show", SID, "--json"]);
    assert_eq!(
        v["session"]["title"],
        "Run the tests and tell me what fails"
    );
    let imp = sb.json(&["import", "--agent", "pi", "--json"]);
    assert_eq!(imp["agents"][0]["messages"], 0, "{imp}");
}

// ------------------------------------------------------------------------------------ real CLI

struct Tools {
    pi: PathBuf,
    python: PathBuf,
}

fn find_tools() -> Result<Tools, String> {
    let in_tools = common::e2e_tools_dir().join("node_modules/.bin/pi");
    let pi = match bin_from_env("MEMTRAIL_PI_BIN")? {
        Some(p) => p,
        None if is_executable(&in_tools) => in_tools,
        None => which("pi").ok_or(
            "no pi (set MEMTRAIL_PI_BIN, or run scripts/e2e-deps to install \
             @mariozechner/pi-coding-agent in target/e2e-tools)",
        )?,
    };
    which("node").ok_or("no node on PATH (pi needs it)")?;
    let python = resolve_python("import sys; print(sys.executable)", "does not run")?;
    Ok(Tools { pi, python })
}

/// "The user's" own extension, kept through install and uninstall.
const USER_EXTENSION: &str = "// the user's own extension\nexport default function (pi: any) {\n  pi.on(\"session_start\", async () => {})\n}\n";

#[test]
fn real_pi_loads_memtrails_extension_and_a_session_is_captured_once() {
    let Some(tools) = tools_or_skip(find_tools) else {
        return;
    };
    let sb = common::CliSandbox::new("memtrail-e2e-pi-", "hello-from-pi.txt");
    let (root, home, proj, base) = (
        sb.root.clone(),
        sb.home.clone(),
        sb.proj.clone(),
        sb.env.clone(),
    );
    let stub = Stub::start(
        sandbox_cmd(&base, &root, &tools.python),
        &root,
        "stub_openai.py",
        &json!({"rules": [{"match": "run ls",
            "reply": [{"type": "function_call", "name": "bash", "arguments": {"command": "ls"}}],
            "after_tool": "Listed the files."}],
            "fallback": "ok"}),
    );

    // "The user's" agent folder: settings, a custom provider (the stub), an extension of theirs.
    let agent = home.join(".pi/agent");
    std::fs::create_dir_all(agent.join("extensions")).unwrap();
    std::fs::write(
        agent.join("settings.json"),
        "{\n  \"defaultThinkingLevel\": \"off\",\n  \"quietStartup\": true\n}\n",
    )
    .unwrap();
    std::fs::write(
        agent.join("models.json"),
        json!({"providers": {"stub": {
            "baseUrl": format!("http://127.0.0.1:{}/v1", stub.port),
            "api": "openai-responses", "apiKey": "stub",
            "models": [{"id": "gpt-5", "reasoning": false}]}}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(agent.join("extensions/user.ts"), USER_EXTENSION).unwrap();

    let memtrail = |args: &[&str]| -> Command {
        let mut c = sandbox_cmd(&base, &root, memtrail_bin());
        c.args(args);
        c
    };
    let pi = |args: &[&str]| -> Command {
        let mut c = sandbox_cmd(&base, &proj, &tools.pi);
        c.args(["--provider", "stub", "--model", "gpt-5"])
            .args(args);
        c
    };

    // Install then uninstall: the agent folder is byte-identical.
    let before = common::files_under(&agent, &["sessions"]);
    run_ok(memtrail(&["install", "--agent", "pi", "--yes"]), "install");
    let ext = agent.join("extensions/memtrail.ts");
    let src = std::fs::read_to_string(&ext).unwrap();
    assert!(src.contains(&format!("const MEMTRAIL_BIN = {}", json!(memtrail_bin()))));
    run_ok(
        memtrail(&["uninstall", "--agent", "pi", "--yes"]),
        "uninstall",
    );
    assert_eq!(
        common::files_under(&agent, &["sessions"]),
        before,
        "uninstall is exact"
    );
    run_ok(
        memtrail(&["install", "--agent", "pi", "--yes"]),
        "install (2)",
    );
    let status = stdout_json(&run_ok(memtrail(&["status", "--json"]), "status"), "status");
    assert!(
        status.to_string().contains("extension memtrail"),
        "{status}"
    );

    // One real session: a shell call, then the answer.
    let out = run(pi(&["-p", "please run ls"]), "pi");
    assert!(out.status.success(), "pi failed\n{}", show(&out));
    assert!(
        text(&out.stdout).contains("Listed the files."),
        "{}",
        show(&out)
    );
    // pi loaded memtrail's extension: its tools were offered to the model.
    let requests = stub.requests();
    assert!(
        requests
            .iter()
            .any(|r| r["body"].to_string().contains("\"memtrail_search\"")),
        "memtrail_search was not offered to the model"
    );

    let sessions = || -> Vec<String> {
        let v = stdout_json(
            &run_ok(
                memtrail(&["sessions", "list", "--agent", "pi", "--json"]),
                "sessions list",
            ),
            "sessions list",
        );
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["session_id"].as_str().unwrap().to_string())
            .collect()
    };
    let ids = sessions();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let sid = ids[0].clone();
    let show_session = || {
        stdout_json(
            &run_ok(
                memtrail(&["sessions", "show", &sid, "--json"]),
                "sessions show",
            ),
            "sessions show",
        )
    };
    let shown = show_session();
    let roles: Vec<&str> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "assistant"], "{shown}");
    assert_eq!(shown["messages"][0]["text"], "please run ls");
    assert_eq!(shown["messages"][2]["text"], "Listed the files.");
    let call = &shown["messages"][1]["tool_calls"][0];
    assert_eq!(
        (&call["name"], &call["tool"]),
        (&json!("bash"), &json!("shell"))
    );
    assert_eq!(call["exit_code"], 0);
    assert!(
        call["output"]
            .as_str()
            .is_some_and(|o| o.contains("hello-from-pi.txt")),
        "{call}"
    );
    assert_eq!(shown["session"]["project"], json!(proj));

    // Captured once: an import finds nothing new.
    let imp = stdout_json(
        &run_ok(memtrail(&["import", "--agent", "pi", "--json"]), "import"),
        "import",
    );
    assert_eq!(imp["agents"][0]["messages"], 0, "captured once: {imp}");

    // A compaction in RPC mode (`pi -c --mode rpc`), then a prompt in the same process: the
    // compaction entry is stored once as a summary, and the snapshot memtrail gave back at
    // session_compact is in that prompt's system prompt.
    let mut c = pi(&["-c", "--mode", "rpc"]);
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, answers) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line + "\n").is_err() {
                break;
            }
        }
    });
    writeln!(stdin, "{}", json!({"id": "c", "type": "compact"})).unwrap();
    let mut seen = String::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let wait_for = |needle: &str, seen: &mut String| {
        while !seen.contains(needle) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match answers.recv_timeout(left) {
                Ok(line) => seen.push_str(&line),
                Err(_) => panic!("pi --mode rpc: no {needle} in\n{seen}"),
            }
        }
    };
    wait_for("\"command\":\"compact\"", &mut seen);
    writeln!(
        stdin,
        "{}",
        json!({"id": "p", "type": "prompt", "message": "what next"})
    )
    .unwrap();
    wait_for("\"type\":\"agent_end\"", &mut seen);
    drop(stdin);
    let _ = child.wait();
    let last = stub
        .requests()
        .into_iter()
        .rev()
        .find(|r| r["body"].to_string().contains("what next"))
        .expect("the prompt after the compaction reached the stub");
    assert!(
        last["body"].to_string().contains(&sid),
        "the snapshot is not in the system prompt: {}",
        last["body"]
    );
    let shown = show_session();
    let summaries: Vec<&Value> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["kind"] == "summary")
        .collect();
    assert_eq!(summaries.len(), 1, "{shown}");
    let n = shown["messages"].as_array().unwrap().len();
    assert_eq!(n, 6, "3 + the summary + the prompt and its answer: {shown}");
    let imp = stdout_json(
        &run_ok(
            memtrail(&["import", "--agent", "pi", "--json"]),
            "import (2)",
        ),
        "import",
    );
    assert_eq!(imp["agents"][0]["messages"], 0, "captured once: {imp}");
}
