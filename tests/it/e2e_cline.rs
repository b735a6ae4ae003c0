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
//! file, `uninstall` gives the file back byte for byte and removes every hook script.
#![cfg(unix)]

use crate::common::{
    self, SandboxDir, bin_from_env, is_executable, memtrail_bin, repo_root, run_ok, sandbox_cmd,
    sandbox_env, tools_or_skip, which,
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
