//! Another tool's entry under memtrail's name (an MCP server `memtrail` that runs `npx`, a
//! cloud service's): install refuses to overwrite it and names it, uninstall leaves it, status
//! says whose it is. And what a user added inside memtrail's own entry survives uninstall.

use crate::common;

use common::{AgentBox, Sandbox};
use memtrail_installer::{Action, Agent, InstallError, ItemState, UnreadableKind, plan_in};
use serde_json::json;

/// The MCP item's state in `b`'s status.
fn mcp_state(b: &AgentBox) -> ItemState {
    let st = b.status();
    st.items
        .iter()
        .find(|i| i.item.starts_with("MCP server"))
        .unwrap_or_else(|| panic!("no MCP item:\n{st}"))
        .state
        .clone()
}

/// Install refuses, naming the file, the entry and its program; nothing is written; uninstall
/// leaves the file as it is; status shows the entry as another tool's.
fn refused_and_kept(b: &AgentBox, file: &std::path::Path, entry: &str) {
    let before = b.snapshot();
    match plan_in(&b.env, b.agent, Action::Install, &b.bin) {
        Err(e @ InstallError::ForeignEntry { .. }) => {
            let InstallError::ForeignEntry {
                path,
                json_path,
                program,
            } = &e
            else {
                unreachable!()
            };
            assert_eq!(path, file);
            assert_eq!(json_path, entry);
            assert_eq!(program, "npx");
            let msg = e.to_string();
            assert!(msg.contains("runs npx, not memtrail"), "{msg}");
        }
        other => panic!("{:?}: {other:?}", b.agent),
    }
    assert_eq!(b.snapshot(), before, "{:?}: install wrote", b.agent);
    let plan = b.plan(Action::Uninstall);
    memtrail_installer::apply(&plan).expect("uninstall");
    assert_eq!(b.snapshot(), before, "{:?}: uninstall changed it", b.agent);
    assert!(
        matches!(
            mcp_state(b),
            ItemState::Unreadable {
                kind: UnreadableKind::Foreign,
                ..
            }
        ),
        "{:?}: {:?}",
        b.agent,
        mcp_state(b)
    );
    // memtrail is not installed there: healthy, as an agent memtrail was never installed in.
    assert!(b.status().not_installed(), "{}", b.status());
    assert!(b.status().healthy(), "{}", b.status());
    // Said as another tool's, not as a file that cannot be read; doctor says what to do.
    let shown = b.status().to_string();
    assert!(shown.contains("not memtrail's: `"), "{shown}");
    assert!(!shown.contains("unreadable"), "{shown}");
    // Nothing of memtrail's to check there: doctor has no problem with that agent.
    let doctor = doctor_of(b);
    assert!(
        doctor.problems.iter().all(|p| p.agent != b.agent),
        "{doctor:?}"
    );
}

fn doctor_of(b: &AgentBox) -> memtrail_installer::DoctorReport {
    let scratch = b.dir.path().join("doctor");
    std::fs::create_dir_all(&scratch).unwrap();
    memtrail_installer::doctor_in(&b.env, &b.bin, &scratch, &|_, _| false)
}

/// Another tool's entry put under memtrail's name after memtrail was installed: status is not
/// healthy and doctor says to rename it; uninstall takes memtrail's hooks out and keeps it.
#[test]
fn another_tools_entry_after_install_is_reported_by_doctor() {
    let s = Sandbox::new();
    s.install();
    let mut v = s.json(&s.global);
    v["mcpServers"]["memtrail"] = json!({"command": "npx", "args": ["-y", "x"]});
    s.put(&s.global, Some(&serde_json::to_string_pretty(&v).unwrap()));
    assert!(!s.status().healthy(), "{}", s.status());
    let said = format!("{:?}", doctor_of(&s));
    assert!(said.contains("rename or move that one away"), "{said}");
    s.uninstall();
    assert_eq!(
        s.json(&s.global)["mcpServers"]["memtrail"]["command"],
        "npx"
    );
    assert!(s.status().not_installed(), "{}", s.status());
}

#[test]
fn another_tools_mcp_server_named_memtrail_is_neither_overwritten_nor_removed() {
    let theirs = json!({
        "command": "npx",
        "args": ["-y", "memtrail-cloud-mcp"],
        "env": {"MEMTRAIL_API_KEY": "sk-123"}
    });
    // Claude Code: `.claude.json`.
    let s = Sandbox::new();
    let text = serde_json::to_string_pretty(&json!({"mcpServers": {"memtrail": theirs}})).unwrap();
    s.put(&s.global, Some(&text));
    refused_and_kept(&s, &s.global, "mcpServers.memtrail");
    // Gemini CLI: `settings.json`, JSONC.
    let b = AgentBox::new(Agent::Gemini);
    let settings = b.home.join(".gemini/settings.json");
    b.put(
        &settings,
        Some(
            "{\n  // mine\n  \"mcpServers\": {\"memtrail\": {\"command\": \"npx\", \"args\": [\"-y\", \"x\"]},},\n}\n",
        ),
    );
    refused_and_kept(&b, &settings, "mcpServers.memtrail");
    // Codex: `config.toml`.
    let b = AgentBox::new(Agent::Codex);
    let config = b.home.join(".codex/config.toml");
    b.put(
        &config,
        Some(
            "model = \"o3\"\n\n[mcp_servers.memtrail]\ncommand = \"npx\"\nargs = [\"-y\", \"memtrail-cloud-mcp\"]\n",
        ),
    );
    refused_and_kept(&b, &config, "mcp_servers.memtrail");
    // Continue: `config.yaml`'s `mcpServers` list.
    let b = AgentBox::new(Agent::Continue);
    let config = b.home.join(".continue/config.yaml");
    b.put(
        &config,
        Some(
            "name: Local\nmcpServers:\n  - name: memtrail\n    command: npx\n    args:\n      - memtrail-cloud-mcp\n",
        ),
    );
    refused_and_kept(&b, &config, "mcpServers.memtrail");
}

/// memtrail's own entry from an older install place (`/old/bin/memtrail`) is still updated in
/// place, and uninstall gives it back even after the agent reformatted the file (Claude Code
/// rewrites `.claude.json` with its own indentation).
#[test]
fn an_older_memtrail_entry_comes_back_after_the_agent_reformats_the_file() {
    let s = Sandbox::new();
    let original = serde_json::to_string_pretty(&json!({
        "mcpServers": {"memtrail": {"type": "stdio", "command": "/old/bin/memtrail", "args": ["mcp"], "env": {}}}
    }))
    .unwrap()
        + "\n";
    s.put(&s.global, Some(&original));
    s.install();
    let installed = s.json(&s.global);
    assert_eq!(
        installed["mcpServers"]["memtrail"]["command"],
        s.bin.to_str().unwrap()
    );
    // Reformatted: same value, other bytes.
    s.put(
        &s.global,
        Some(&(serde_json::to_string(&installed).unwrap() + "\n")),
    );
    s.uninstall();
    assert_eq!(
        s.json(&s.global)["mcpServers"]["memtrail"]["command"],
        "/old/bin/memtrail",
        "{}",
        s.read(&s.global)
    );
}

/// A key the user added to memtrail's entry (a token under Gemini's server) is not thrown
/// away: uninstall keeps the entry and says so, as it does for Codex's table.
#[test]
fn a_key_the_user_added_to_memtrails_entry_keeps_it_at_uninstall() {
    let b = AgentBox::new(Agent::Gemini);
    let settings = b.home.join(".gemini/settings.json");
    b.put(&settings, Some("{}\n"));
    b.install();
    let mut v = b.json(&settings);
    v["mcpServers"]["memtrail"]["env"] = json!({"MY_TOKEN": "secret"});
    b.put(&settings, Some(&serde_json::to_string_pretty(&v).unwrap()));
    let plan = b.plan(Action::Uninstall);
    let said = plan.describe().join("\n");
    assert!(
        said.contains("keep MCP server memtrail: it holds keys memtrail did not write (env)"),
        "{said}"
    );
    memtrail_installer::apply(&plan).expect("uninstall");
    let after = b.json(&settings);
    assert_eq!(after["mcpServers"]["memtrail"]["env"]["MY_TOKEN"], "secret");
    // The hooks went.
    assert!(after.get("hooks").is_none(), "{after}");
}
