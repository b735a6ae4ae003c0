//! Continue's CLI end to end (import only: `cn` fires no hook memtrail can use).
//!
//! The real CLI (`@continuedev/cli`, from `MEMTRAIL_CN_BIN`, else `$MEMTRAIL_E2E_TOOLS` or
//! `target/e2e-tools` `node_modules/.bin/cn`, else PATH; skipped without it unless
//! `MEMTRAIL_REQUIRE_E2E=1`) in a sandboxed HOME, its model the loopback Anthropic stub in "the
//! user's" `~/.continue/config.yaml`:
//!
//! - `memtrail install --agent continue` writes the skill and the MCP entry into the user's
//!   `config.yaml`, and `uninstall` gives `~/.continue` back byte for byte;
//! - the entry parses with a real YAML parser (PyYAML) as one `mcpServers` item beside the
//!   user's model, and `cn` loads it: the model is offered memtrail's tools (`search`, …) and
//!   the skill, and a `search` call the stub model makes through `cn` returns memtrail's hit;
//! - a `cn -p` session that runs a shell command is imported once (a second import adds
//!   nothing); `cn --resume` rewrites the file whole and the next import adds only the new turn.
#![cfg(unix)]

use crate::common;

use common::{
    Stub, bin_from_env, is_executable, memtrail_bin, resolve_python, run, run_ok, sandbox_cmd,
    show, stdout_json, text, tools_or_skip, which,
};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;

struct Tools {
    cn: PathBuf,
    python: PathBuf,
}

fn find_tools() -> Result<Tools, String> {
    let in_tools = common::e2e_tools_dir().join("node_modules/.bin/cn");
    let cn = match bin_from_env("MEMTRAIL_CN_BIN")? {
        Some(p) => p,
        None if is_executable(&in_tools) => in_tools,
        None => which("cn").ok_or(
            "no cn (set MEMTRAIL_CN_BIN, or run scripts/e2e-deps to install @continuedev/cli in \
             target/e2e-tools)",
        )?,
    };
    which("node").ok_or("no node on PATH (@continuedev/cli needs it)")?;
    let python = resolve_python(
        "import yaml, sys; print(sys.executable)",
        "has no `yaml` module (scripts/e2e-deps installs PyYAML)",
    )?;
    Ok(Tools { cn, python })
}

#[test]
fn real_cn_loads_the_documented_entry_and_a_session_is_imported_once() {
    let Some(tools) = tools_or_skip(find_tools) else {
        return;
    };
    let sb = common::CliSandbox::new("memtrail-e2e-continue-", "hello-from-cn.txt");
    let (root, home, proj, base) = (
        sb.root.clone(),
        sb.home.clone(),
        sb.proj.clone(),
        sb.env.clone(),
    );
    let stub = Stub::start(
        sandbox_cmd(&base, &root, &tools.python),
        &root,
        "stub_anthropic.py",
        &json!({"rules": [{"match": "run ls",
            "reply": [{"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}],
            "after_tool": "Listed the files."},
            {"match": "what did we list",
            "reply": [{"type": "tool_use", "name": "search", "input": {"query": "run ls"}}],
            "after_tool": "Memory says: {tool_result}"}],
            "fallback": "ok"}),
    );
    // "The user's" config: one model (the stub) and a rule.
    let cfg_dir = home.join(".continue");
    std::fs::create_dir_all(&cfg_dir).unwrap();
    let config = cfg_dir.join("config.yaml");
    let users = format!(
        "name: Local\nversion: 1.0.0\nschema: v1\nmodels:\n  - name: stub\n    provider: anthropic\n    model: claude-sonnet-4-5\n    apiKey: stub\n    apiBase: http://127.0.0.1:{}/v1/\n    roles:\n      - chat\nrules:\n  - Answer briefly.\n",
        stub.port
    );
    std::fs::write(&config, &users).unwrap();

    let memtrail = |args: &[&str]| -> Command {
        let mut c = sandbox_cmd(&base, &root, memtrail_bin());
        c.args(args);
        c
    };
    let cn = |args: &[&str]| -> Command {
        let mut c = sandbox_cmd(&base, &proj, &tools.cn);
        c.args(args);
        c
    };

    // Install then uninstall: ~/.continue is byte-identical; installed again.
    let before = common::files_under(&cfg_dir, &[]);
    run_ok(
        memtrail(&["install", "--agent", "continue", "--yes"]),
        "install",
    );
    let skill = cfg_dir.join("skills/memtrail/SKILL.md");
    assert!(skill.is_file());
    run_ok(
        memtrail(&["uninstall", "--agent", "continue", "--yes"]),
        "uninstall",
    );
    assert_eq!(
        common::files_under(&cfg_dir, &[]),
        before,
        "uninstall is exact"
    );
    run_ok(
        memtrail(&["install", "--agent", "continue", "--yes"]),
        "install (2)",
    );

    // memtrail's MCP entry, written into "the user's" config.yaml by install, read back with a
    // real YAML parser: one `mcpServers` item, the user's keys intact and first, byte for byte.
    let written = std::fs::read_to_string(&config).unwrap();
    let added = written
        .strip_prefix(&users)
        .unwrap_or_else(|| panic!("the user's text is not kept first:\n{written}"));
    assert!(
        added.starts_with("mcpServers:\n  - name: memtrail\n    command: ")
            && added.ends_with("\n    args:\n      - mcp\n")
            && added.lines().count() == 5,
        "{added}"
    );
    let parsed = run_ok(
        {
            let mut c = sandbox_cmd(&base, &root, &tools.python);
            c.args([
                "-c",
                "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
            ])
            .arg(&config);
            c
        },
        "yaml.safe_load",
    );
    let parsed = stdout_json(&parsed, "yaml.safe_load");
    assert_eq!(
        parsed["mcpServers"],
        json!([{"name": "memtrail", "command": memtrail_bin(), "args": ["mcp"]}])
    );
    assert_eq!(
        parsed["models"][0]["name"], "stub",
        "the user's config is intact"
    );

    // A real session; `cn` offered memtrail's tools (the MCP entry loaded) and the skill.
    let out = run(cn(&["-p", "please run ls", "--auto"]), "cn");
    assert!(out.status.success(), "cn failed\n{}", show(&out));
    assert!(
        text(&out.stdout).contains("Listed the files."),
        "{}",
        show(&out)
    );
    let reqs = stub.requests();
    let tools_offered: Vec<String> = reqs
        .iter()
        .filter_map(|r| r["body"]["tools"].as_array())
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    assert!(
        tools_offered.iter().any(|t| t == "search")
            && tools_offered.iter().any(|t| t == "timeline"),
        "{tools_offered:?}"
    );
    assert!(
        reqs.iter()
            .any(|r| r["body"].to_string().contains("name: memtrail")),
        "the skill was not listed"
    );

    // Imported once.
    let import = || {
        stdout_json(
            &run_ok(
                memtrail(&["import", "--agent", "continue", "--json"]),
                "import",
            ),
            "import",
        )
    };
    let imp = import();
    assert_eq!(imp["agents"][0]["messages"], 3, "{imp}");
    let v = stdout_json(
        &run_ok(
            memtrail(&["sessions", "list", "--agent", "continue", "--json"]),
            "sessions list",
        ),
        "sessions list",
    );
    let sessions = v["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{v}");
    let sid = sessions[0]["session_id"].as_str().unwrap().to_string();
    let show_session = || -> Value {
        stdout_json(
            &run_ok(memtrail(&["sessions", "show", &sid, "--json"]), "show"),
            "show",
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
    let call = &shown["messages"][1]["tool_calls"][0];
    assert_eq!(
        (&call["name"], &call["tool"]),
        (&json!("Bash"), &json!("shell"))
    );
    assert!(
        call["output"]
            .as_str()
            .is_some_and(|o| o.contains("hello-from-cn.txt")),
        "{call}"
    );
    assert_eq!(shown["messages"][2]["text"], "Listed the files.");
    assert_eq!(shown["session"]["project"], json!(proj));
    assert_eq!(import()["agents"][0]["messages"], 0, "captured once");

    // `cn --resume` rewrites the session file whole: the next import adds the new turn only.
    let out = run(
        cn(&["--resume", "-p", "hello again", "--auto"]),
        "cn --resume",
    );
    assert!(out.status.success(), "cn --resume failed\n{}", show(&out));
    let imp = import();
    assert_eq!(imp["agents"][0]["messages"], 2, "{imp}");
    let shown = show_session();
    assert_eq!(shown["messages"].as_array().unwrap().len(), 5, "{shown}");
    assert_eq!(shown["messages"][3]["text"], "hello again");
    assert_eq!(shown["messages"][4]["text"], "ok");
    assert_eq!(import()["agents"][0]["messages"], 0, "captured once");

    // `cn` calls memtrail's MCP server: its `search` finds the session imported above.
    let out = run(cn(&["-p", "what did we list?", "--auto"]), "cn (search)");
    assert!(out.status.success(), "cn failed\n{}", show(&out));
    let said = text(&out.stdout);
    assert!(
        said.contains("Memory says:") && said.contains(&sid) && said.contains("run ls"),
        "cn's call of memtrail's search did not return the session: {said:?}"
    );

    // Uninstall takes the entry out of the config `cn` used: the user's bytes again.
    run_ok(
        memtrail(&["uninstall", "--agent", "continue", "--yes"]),
        "uninstall (2)",
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), users);
}
