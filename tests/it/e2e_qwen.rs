//! Qwen Code end to end.
//!
//! 1. The hook path (no Qwen Code needed): `memtrail hook qwen` in a sandboxed HOME, fed the
//!    payloads of `fixtures/qwen/hooks/` while the fixture session grows in
//!    `~/.qwen/projects/-home-user-demo/chats/<id>.jsonl` run by run, a rewind included; each
//!    message is stored once, the rewound turn is dropped, the compaction's snapshot comes back
//!    at its `SessionStart` (source `compact`).
//! 2. The real CLI (`@qwen-code/qwen-code`, from `MEMTRAIL_QWEN_BIN`, else `$MEMTRAIL_E2E_TOOLS`
//!    or `target/e2e-tools` `node_modules/.bin/qwen`, else PATH; skipped without it unless
//!    `MEMTRAIL_REQUIRE_E2E=1`): "the user's" `settings.json`, `memtrail install --agent qwen`,
//!    `qwen mcp list` accepts memtrail's entry; a `qwen` session against the loopback stub model
//!    (`stub_openai.py`, `--auth-type openai-responses`) runs a shell command: its hooks store
//!    the prompt and the call, the next session's `SessionStart` the answer Qwen Code may write
//!    after them, `import` the rest, and nothing twice; `uninstall` gives the user's
//!    `settings.json` back byte for byte; `/compress` (`--continue`) writes a compaction record,
//!    stored once as a summary.
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

const SID: &str = "7c1e4b2a-5d3f-4e8a-9b6c-0a1d2e3f4a5b";

fn fixture(rel: &str) -> PathBuf {
    repo_root().join("fixtures/qwen").join(rel)
}

/// The fixture's first `n` lines.
fn head(n: usize) -> String {
    let text = std::fs::read_to_string(fixture(&format!(
        "projects/-home-user-demo/chats/{SID}.jsonl"
    )))
    .unwrap();
    text.lines().take(n).map(|l| format!("{l}\n")).collect()
}

/// A fixture payload with its transcript path moved into the sandbox.
fn payload(name: &str, transcript: &Path) -> String {
    let mut v: Value =
        serde_json::from_slice(&std::fs::read(fixture(&format!("hooks/{name}"))).unwrap()).unwrap();
    v["transcript_path"] = json!(transcript);
    v.to_string()
}

fn hook(sb: &Sandbox, stdin: String) -> String {
    sb.hook("qwen", stdin)
}

fn ids(sb: &Sandbox) -> Vec<String> {
    sb.message_ids(SID)
}

#[test]
fn hook_path_grows_the_session_once_and_gives_the_snapshot_back() {
    let sb = Sandbox::new();
    let dir = sb.home.join(".qwen/projects/-home-user-demo/chats");
    std::fs::create_dir_all(&dir).unwrap();
    let t = dir.join(format!("{SID}.jsonl"));

    // A new session: nothing stored yet, nothing to ingest (no transcript yet).
    let first = hook(&sb, payload("SessionStart.json", &t));
    assert!(!first.contains(SID), "{first}");

    // Run 1 ends: Stop ingests 5 messages; a second Stop adds nothing.
    std::fs::write(&t, head(14)).unwrap();
    assert_eq!(hook(&sb, payload("Stop.json", &t)), "");
    assert_eq!(ids(&sb), ["u-1", "a-1", "a-2", "a-3", "a-4"]);
    hook(&sb, payload("Stop.json", &t));
    assert_eq!(ids(&sb).len(), 5);
    let shown = sb.json(&["sessions", "show", SID, "--json"]);
    let call = &shown["messages"][2]["tool_calls"][0];
    assert_eq!(
        (&call["exit_code"], &call["is_error"]),
        (&json!(101), &json!(true))
    );

    // Run 2: a turn is stored, then rewound: the next Stop drops it and stores the new one.
    std::fs::write(&t, head(18)).unwrap();
    hook(&sb, payload("Stop.json", &t));
    assert_eq!(ids(&sb).len(), 9);
    assert_eq!(ids(&sb)[7..], ["u-3", "a-6"]);
    std::fs::write(&t, head(24)).unwrap();
    hook(&sb, payload("Stop.json", &t));
    assert_eq!(
        ids(&sb),
        [
            "u-1", "a-1", "a-2", "a-3", "a-4", "u-2", "a-5", "u-4", "a-7", "a-8"
        ]
    );
    let v = sb.json(&["sessions", "list", "--agent", "qwen", "--json"]);
    let sessions = v["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{v}");
    assert_eq!(sessions[0]["agent"], "qwen");
    let hits = sb.json(&["search", "日本語", "--agent", "qwen", "--json"]);
    assert!(
        hits["hits"].as_array().is_some_and(|h| !h.is_empty()),
        "{hits}"
    );

    // Run 3: compaction. PreCompact saves the snapshot (the summary is not written yet); after
    // the compaction Qwen Code fires SessionStart with source `compact`, which stores the
    // summary and hands the snapshot back as hookSpecificOutput.additionalContext, once.
    std::fs::write(&t, head(24)).unwrap();
    assert_eq!(hook(&sb, payload("PreCompact.json", &t)), "");
    assert_eq!(ids(&sb).len(), 10);
    std::fs::write(&t, head(25)).unwrap();
    let reply = hook(&sb, payload("SessionStart-compact.json", &t));
    let v: Value = serde_json::from_str(reply.trim()).unwrap_or_else(|e| panic!("{e}: {reply}"));
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(ctx.contains("src/prix.rs"), "{ctx}");
    assert_eq!(ids(&sb).len(), 11);
    assert_eq!(ids(&sb)[10], "s-compress-1");
    // A second start (a resume) does not give the same snapshot again.
    let again = hook(&sb, payload("SessionStart-resume.json", &t));
    assert!(!again.contains("src/prix.rs"), "{again}");

    // The session ends: SessionEnd stores the rest.
    std::fs::write(&t, head(33)).unwrap();
    hook(&sb, payload("SessionEnd.json", &t));
    assert_eq!(ids(&sb).len(), 16);

    // `memtrail import` over the same home finds the session and adds nothing.
    let imp = sb.json(&["import", "--agent", "qwen", "--json"]);
    let a = &imp["agents"][0];
    assert_eq!(
        (
            a["agent"].as_str(),
            a["files"].as_u64(),
            a["messages"].as_u64()
        ),
        (Some("qwen"), Some(1), Some(0)),
        "{imp}"
    );
}

/// `memtrail import` alone (no hook ever ran) stores the fixture session as the hooks do.
#[test]
fn import_alone_stores_what_the_hooks_store() {
    let sb = Sandbox::new();
    let dir = sb.home.join(".qwen/projects/-home-user-demo/chats");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{SID}.jsonl")), head(33)).unwrap();
    // The session's sub-agent transcript beside it.
    let subs = sb
        .home
        .join(".qwen/projects/-home-user-demo/subagents")
        .join(SID);
    std::fs::create_dir_all(&subs).unwrap();
    std::fs::copy(
        fixture(&format!(
            "projects/-home-user-demo/subagents/{SID}/agent-explore-1.jsonl"
        )),
        subs.join("agent-explore-1.jsonl"),
    )
    .unwrap();
    // Not transcripts: the runtime sidecar and another project's empty folder.
    std::fs::write(dir.join(format!("{SID}.runtime.json")), "{}").unwrap();
    std::fs::create_dir_all(sb.home.join(".qwen/projects/-tmp-x")).unwrap();
    let imp = sb.json(&["import", "--agent", "qwen", "--json"]);
    let a = &imp["agents"][0];
    // 18 stored, 2 of them (the rewound turn) deleted again: 16 left; 3 of the sub-agent.
    assert_eq!(
        (a["files"].as_u64(), a["messages"].as_u64()),
        (Some(2), Some(21)),
        "{imp}"
    );
    assert_eq!(
        sb.message_ids(&format!("{SID}/agent-explore-1")),
        ["sub-u-1", "sub-a-1", "sub-a-2"]
    );
    assert_eq!(ids(&sb).len(), 16);
    assert_eq!(ids(&sb)[7..10], ["u-4", "a-7", "a-8"]);
    let v = sb.json(&["sessions", "show", SID, "--json"]);
    assert_eq!(v["session"]["project"], "/home/user/demo", "{v}");
    assert_eq!(
        v["children"],
        json!([format!("{SID}/agent-explore-1")]),
        "{v}"
    );
    let imp = sb.json(&["import", "--agent", "qwen", "--json"]);
    assert_eq!(imp["agents"][0]["messages"], 0, "{imp}");
}

// ------------------------------------------------------------------------------------ real CLI

struct Tools {
    qwen: PathBuf,
    python: PathBuf,
}

fn find_tools() -> Result<Tools, String> {
    let in_tools = common::e2e_tools_dir().join("node_modules/.bin/qwen");
    let qwen = match bin_from_env("MEMTRAIL_QWEN_BIN")? {
        Some(p) => p,
        None if is_executable(&in_tools) => in_tools,
        None => which("qwen").ok_or(
            "no qwen (set MEMTRAIL_QWEN_BIN, or run scripts/e2e-deps to install \
             @qwen-code/qwen-code in target/e2e-tools)",
        )?,
    };
    which("node").ok_or("no node on PATH (@qwen-code/qwen-code needs it)")?;
    let python = resolve_python("import sys; print(sys.executable)", "does not run")?;
    Ok(Tools { qwen, python })
}

/// "The user's" settings, as Qwen Code writes them (`qwen mcp add`), with a hook of theirs.
const USER_SETTINGS: &str = "{\n  \"mcpServers\": {\n    \"playwright\": {\n      \"command\": \"/bin/true\",\n      \"args\": [\n        \"@playwright/mcp@latest\"\n      ]\n    }\n  },\n  \"hooks\": {\n    \"SessionEnd\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"true\",\n            \"timeout\": 5\n          }\n        ]\n      }\n    ]\n  },\n  \"$version\": 4\n}\n";

#[test]
fn real_qwen_accepts_memtrails_config_and_a_session_is_captured_once() {
    let Some(tools) = tools_or_skip(find_tools) else {
        return;
    };
    let (_keep, root) = SandboxDir::new("memtrail-e2e-qwen-");
    let (home, state, tmp, proj) = (
        root.join("home"),
        root.join("home/.local/state"),
        root.join("tmp"),
        root.join("proj"),
    );
    for d in [&home, &tmp, &proj] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(proj.join("hello-from-qwen.txt"), "x").unwrap();
    let cfg = home.join(".qwen");
    let settings = cfg.join("settings.json");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(&settings, USER_SETTINGS).unwrap();

    let base = sandbox_env(
        std::env::var_os("PATH").unwrap_or_default(),
        &home,
        &state,
        &tmp,
        vec![(
            "QWEN_CODE_SUPPRESS_YOLO_WARNING".to_string(),
            OsString::from("1"),
        )],
    );
    let stub = Stub::start(
        sandbox_cmd(&base, &root, &tools.python),
        &root,
        "stub_openai.py",
        &json!({"rules": [{"match": "run ls",
            "reply": [{"type": "function_call", "name": "run_shell_command",
                       "arguments": {"command": "ls", "description": "List files"}}],
            "after_tool": "Listed the files."}],
            "fallback": "ok"}),
    );
    let memtrail = |args: &[&str]| -> Command {
        let mut c = sandbox_cmd(&base, &root, memtrail_bin());
        c.args(args);
        c
    };
    let qwen = |args: &[&str]| -> Command {
        let mut c = sandbox_cmd(&base, &proj, &tools.qwen);
        c.args(args);
        c
    };
    let url = format!("http://127.0.0.1:{}/v1", stub.port);
    let session = |prompt: &str| -> Command {
        qwen(&[
            "--auth-type",
            "openai-responses",
            "--openai-base-url",
            &url,
            "--openai-api-key",
            "stub",
            "-m",
            "gpt-5",
            "--yolo",
            prompt,
        ])
    };

    run_ok(
        memtrail(&["install", "--agent", "qwen", "--yes"]),
        "install",
    );
    let bin = memtrail_bin();
    let written: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    assert_eq!(
        written["hooks"]["Stop"][0]["hooks"][0]["command"],
        format!("{} hook qwen", bin.display()),
        "{written}"
    );

    // Qwen Code's own command accepts the MCP entry (and connects to memtrail's server).
    let list = run_ok(qwen(&["mcp", "list"]), "qwen mcp list");
    let list = format!("{}{}", text(&list.stdout), text(&list.stderr));
    assert!(
        list.contains("memtrail") && list.contains("playwright"),
        "{list}"
    );
    let line = list
        .lines()
        .find(|l| l.contains("memtrail"))
        .unwrap_or_default();
    assert!(line.contains("Connected"), "{list}");

    // One real session against the stub: a shell call, then the answer.
    let out = run(session("please run ls"), "qwen");
    assert!(out.status.success(), "qwen failed\n{}", show(&out));
    assert!(
        text(&out.stdout).contains("Listed the files."),
        "{}",
        show(&out)
    );
    // The model was told of memtrail's tools under Qwen Code's names (MCP tools are deferred:
    // listed by name in a reminder, reached through `tool_search` / `tool_call`) and of the
    // skill.
    let requests = stub.requests();
    let told = |needle: &str| {
        requests
            .iter()
            .any(|r| r["body"].to_string().contains(needle))
    };
    assert!(
        told("\\\"mcp__memtrail__search\\\""),
        "mcp__memtrail__search was not offered to the model"
    );
    assert!(
        told("<name>\\nmemtrail\\n</name>"),
        "the skill was not listed"
    );

    // Captured through the hooks. Qwen Code queues its transcript writes and fires Stop from
    // the turn loop, so the turn's final answer may reach the file after the Stop hook ran (and
    // a session run with a prompt fires no SessionEnd): the hooks store the prompt and the
    // call, and the answer when it was on disk in time; the rest waits for the next hook (this
    // session's, or the next session's start in the same project) or an import.
    let sessions = || -> Vec<String> {
        let v = stdout_json(
            &run_ok(
                memtrail(&["sessions", "list", "--agent", "qwen", "--json"]),
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
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap().to_string())
            .collect()
    };
    let shown = show_session(&sid);
    let first = roles(&shown);
    assert!(
        first == ["user", "assistant"] || first == ["user", "assistant", "assistant"],
        "{shown}"
    );
    assert_eq!(shown["messages"][0]["text"], "please run ls");
    let call = &shown["messages"][1]["tool_calls"][0];
    assert_eq!(call["name"], "run_shell_command");
    assert_eq!(call["tool"], "shell");
    // Qwen may write the call's result after its Stop hook, as it does the final answer (seen
    // under load): the output is then stored by the next hook, checked below.
    assert!(call["output"].is_null() || call["exit_code"] == 0, "{call}");
    let transcript = cfg
        .join("projects")
        .join(memtrail_adapters::qwen::paths::project_folder(
            proj.to_str().unwrap(),
        ))
        .join("chats")
        .join(format!("{sid}.jsonl"));
    assert!(transcript.is_file(), "{}", transcript.display());

    // A second session: its SessionStart stores the first session's answer.
    let out = run(session("hello again"), "qwen (2)");
    assert!(out.status.success(), "qwen (2) failed\n{}", show(&out));
    let shown = show_session(&sid);
    assert_eq!(roles(&shown), ["user", "assistant", "assistant"], "{shown}");
    assert_eq!(shown["messages"][2]["text"], "Listed the files.");
    let call = &shown["messages"][1]["tool_calls"][0];
    assert_eq!(call["exit_code"], 0, "{call}");
    // The stored output is what Qwen recorded for the call, to the byte. Qwen's own capture of
    // the command's output comes back empty now and then on a loaded machine ("Output:
    // (empty)", no process group: seen once in 4 runs); when it has it, it lists the file.
    let recorded: String = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| {
            v["message"]["parts"].as_array()?.iter().find_map(|p| {
                let r = &p["functionResponse"];
                (r["id"] == call["id"])
                    .then(|| r["response"]["output"].as_str().map(String::from))?
            })
        })
        .unwrap_or_else(|| panic!("no response to {call} in {}", transcript.display()));
    assert_eq!(call["output"].as_str(), Some(recorded.as_str()), "{call}");
    assert!(
        recorded.contains("hello-from-qwen.txt") || recorded.contains("Output: (empty)"),
        "{recorded}"
    );

    let ids = sessions();
    assert_eq!(ids.len(), 2, "{ids:?}");
    let second = ids.iter().find(|s| **s != sid).unwrap().clone();
    let before_import = roles(&show_session(&second));
    assert!(
        before_import == ["user"] || before_import == ["user", "assistant"],
        "{before_import:?}"
    );

    // Import stores what is left of the second session; a second import adds nothing:
    // captured once.
    let import = || {
        stdout_json(
            &run_ok(memtrail(&["import", "--agent", "qwen", "--json"]), "import"),
            "import",
        )
    };
    let imp = import();
    assert_eq!(
        imp["agents"][0]["messages"],
        2 - before_import.len(),
        "{imp}"
    );
    let shown = show_session(&second);
    assert_eq!(roles(&shown), ["user", "assistant"], "{shown}");
    assert_eq!(shown["messages"][1]["text"], "ok");
    assert_eq!(roles(&show_session(&sid)).len(), 3);
    let imp = import();
    assert_eq!(imp["agents"][0]["messages"], 0, "captured once: {imp}");

    // `/compress` in the second session (`--continue`): Qwen Code writes a `chat_compression`
    // record (the stub's answer "ok" is the summary); it is stored once, as a summary.
    let out = run(
        qwen(&[
            "--auth-type",
            "openai-responses",
            "--openai-base-url",
            &url,
            "--openai-api-key",
            "stub",
            "-m",
            "gpt-5",
            "--yolo",
            "--continue",
            "/compress",
        ]),
        "qwen /compress",
    );
    assert!(
        out.status.success(),
        "qwen /compress failed\n{}",
        show(&out)
    );
    assert!(
        text(&out.stdout).contains("Context compressed"),
        "{}",
        show(&out)
    );
    import();
    let shown = show_session(&second);
    assert_eq!(roles(&shown), ["user", "assistant", "system"], "{shown}");
    assert_eq!(shown["messages"][2]["kind"], "summary");
    assert_eq!(shown["messages"][2]["text"], "ok");
    assert_eq!(sessions().len(), 2);
    let imp = import();
    assert_eq!(imp["agents"][0]["messages"], 0, "captured once: {imp}");
    drop(stub);

    // Uninstall gives the user's settings back byte for byte and removes memtrail's skill.
    run_ok(
        memtrail(&["uninstall", "--agent", "qwen", "--yes"]),
        "uninstall",
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), USER_SETTINGS);
    assert!(!cfg.join("skills/memtrail").exists());
}
