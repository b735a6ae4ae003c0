//! Continue (`cn`): the skill `~/.continue/skills/memtrail/SKILL.md` (or under
//! `$CONTINUE_GLOBAL_DIR`), beside the user's own config and skills; nothing else is written.

use crate::common;

use common::{AgentBox, round_trip};
use memtrail_adapters::continuedev::registration as cont;
use memtrail_installer::{Agent, InstallError, ItemState};

const USER_CONFIG: &str = "name: Local\nversion: 1.0.0\nschema: v1\nmodels:\n  - name: sonnet\n    provider: anthropic\n    model: claude-sonnet-4-5\n    apiKey: ${{ secrets.ANTHROPIC_API_KEY }}\n";

#[test]
fn round_trips_a_users_continue_folder() {
    for (name, with_users) in [("nothing yet", false), ("a user's folder", true)] {
        let b = AgentBox::new(Agent::Continue);
        let dir = b.home.join(".continue");
        let skill = dir.join("skills/memtrail/SKILL.md");
        let files = if with_users {
            vec![
                (dir.join("config.yaml"), Some(USER_CONFIG.to_string())),
                (
                    dir.join("skills/review/SKILL.md"),
                    Some("---\nname: review\ndescription: mine\n---\n".to_string()),
                ),
            ]
        } else {
            vec![(skill.clone(), None)]
        };
        round_trip(&b, name, &files, &|b| {
            assert_eq!(b.read(&skill), cont::SKILL_MD, "{name}");
        });
    }
}

#[test]
fn the_global_dir_variable_is_followed() {
    let b = AgentBox::new(Agent::Continue);
    let elsewhere = b.dir.path().join("cont");
    let b = b.with_var("CONTINUE_GLOBAL_DIR", &elsewhere);
    let original = b.snapshot();
    b.install();
    assert!(elsewhere.join("skills/memtrail/SKILL.md").is_file());
    assert!(!b.home.join(".continue").exists());
    b.uninstall();
    common::assert_same("CONTINUE_GLOBAL_DIR", &original, &b.snapshot());
}

/// memtrail's `mcpServers` item as the YAML editor writes it, its `- ` at column `indent`.
fn item(b: &AgentBox, indent: usize, nl: &str) -> String {
    let pad = " ".repeat(indent);
    // The box's binary lives in "opt dir": a space, so the command is double-quoted.
    format!(
        "{pad}- name: memtrail{nl}{pad}  command: \"{}\"{nl}{pad}  args:{nl}{pad}    - mcp{nl}",
        b.bin.display()
    )
}

/// The status of memtrail's MCP item in `config.yaml`.
fn mcp_state(b: &AgentBox) -> ItemState {
    b.status()
        .items
        .into_iter()
        .find(|i| i.item == "MCP server memtrail")
        .map(|i| i.state)
        .expect("no MCP server item")
}

/// The text a case expects after install, from the box (its binary).
type Expected = Box<dyn Fn(&AgentBox) -> String>;

/// A user's `config.yaml` with MCP servers of their own, comments and a list after it.
const USER_SERVERS: &str = "# my Continue config\nname: Local\nversion: 1.0.0\nschema: v1\nmodels:\n  - name: sonnet\n    provider: anthropic\n    model: claude-sonnet-4-5\nmcpServers:\n  # browser automation\n  - name: playwright\n    command: npx\n    args:\n      - \"@playwright/mcp@latest\"\n    env:\n      DEBUG: \"1\" # keep\n\nrules:\n  - Answer briefly.\n";

#[test]
fn the_mcp_entry_goes_into_config_yaml_and_comes_out_byte_for_byte() {
    let no_nl = "name: Local\r\nversion: 1.0.0\r\nschema: v1\r\nmodels: []";
    let cases: Vec<(&str, String, Expected)> = vec![
        (
            "no mcpServers yet",
            USER_CONFIG.to_string(),
            Box::new(|b| format!("{USER_CONFIG}mcpServers:\n{}", item(b, 2, "\n"))),
        ),
        (
            "a user's servers",
            USER_SERVERS.to_string(),
            Box::new(|b| {
                USER_SERVERS.replace(
                    "      DEBUG: \"1\" # keep\n",
                    &format!("      DEBUG: \"1\" # keep\n{}", item(b, 2, "\n")),
                )
            }),
        ),
        (
            "items at column 0",
            "mcpServers:\n- name: fs\n  command: mcp-fs\nrules: []\n".to_string(),
            Box::new(|b| {
                format!(
                    "mcpServers:\n- name: fs\n  command: mcp-fs\n{}rules: []\n",
                    item(b, 0, "\n")
                )
            }),
        ),
        (
            "an empty mcpServers key",
            "models: []\nmcpServers:\nrules: []\n".to_string(),
            Box::new(|b| format!("models: []\nmcpServers:\n{}rules: []\n", item(b, 2, "\n"))),
        ),
        (
            "a list last, without a final newline, under a document start",
            "---\n# servers\nmcpServers:\n  # the file system\n  - name: fs\n    command: mcp-fs"
                .to_string(),
            Box::new(|b| {
                format!(
                    "---\n# servers\nmcpServers:\n  # the file system\n  - name: fs\n    command: mcp-fs\n{}",
                    item(b, 2, "\n")
                )
            }),
        ),
        (
            "a block scalar in the last item",
            "mcpServers:\n  - name: script\n    command: sh\n    args:\n      - -c\n      - |\n        echo hi\n        echo there\n\nrules: []\n".to_string(),
            Box::new(|b| {
                format!(
                    "mcpServers:\n  - name: script\n    command: sh\n    args:\n      - -c\n      - |\n        echo hi\n        echo there\n{}\nrules: []\n",
                    item(b, 2, "\n")
                )
            }),
        ),
        (
            "CRLF, no final newline",
            no_nl.to_string(),
            Box::new(move |b| format!("{no_nl}\r\nmcpServers:\r\n{}", item(b, 2, "\r\n"))),
        ),
    ];
    for (name, config, want) in cases {
        let b = AgentBox::new(Agent::Continue);
        let path = b.home.join(".continue/config.yaml");
        round_trip(&b, name, &[(path.clone(), Some(config))], &|b| {
            assert_eq!(b.read(&path), want(b), "{name}");
        });
    }
}

#[test]
fn the_dry_run_shows_the_item_and_status_names_it() {
    let b = AgentBox::new(Agent::Continue);
    let path = b.home.join(".continue/config.yaml");
    b.put(&path, Some(USER_CONFIG));
    let plan = b.plan(memtrail_installer::Action::Install);
    let lines = plan.describe();
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with("config.yaml: add MCP server memtrail")),
        "{lines:?}"
    );
    let diff = plan.diff();
    assert!(
        diff.contains(&format!(
            "+mcpServers:\n+  - name: memtrail\n+    command: \"{}\"\n+    args:\n+      - mcp\n",
            b.bin.display()
        )),
        "{diff}"
    );
    assert_eq!(b.read(&path), USER_CONFIG, "a dry run writes nothing");
    let item_state = |b: &AgentBox| {
        b.status()
            .items
            .into_iter()
            .find(|i| i.item == "MCP server memtrail")
            .map(|i| (i.file, i.state))
    };
    assert_eq!(item_state(&b), Some((path.clone(), ItemState::Missing)));
    b.install();
    assert_eq!(item_state(&b), Some((path.clone(), ItemState::Present)));
}

#[test]
fn no_config_yaml_gets_no_entry_and_none_is_created() {
    let b = AgentBox::new(Agent::Continue);
    b.install();
    assert!(!b.home.join(".continue/config.yaml").exists());
    assert!(
        b.status()
            .items
            .iter()
            .all(|i| i.item != "MCP server memtrail")
    );
}

#[test]
fn an_older_entry_is_updated_and_put_back_by_uninstall() {
    let b = AgentBox::new(Agent::Continue);
    let path = b.home.join(".continue/config.yaml");
    let old = "models: []\nmcpServers:\n    -   name: memtrail   # mine\n        command: /old/memtrail\n        args: [mcp]\n# end\n";
    b.put(&path, Some(old));
    let original = b.snapshot();
    assert_eq!(
        mcp_state(&b),
        ItemState::Stale {
            points_at: Some("/old/memtrail".into())
        }
    );
    let plan = b.plan(memtrail_installer::Action::Install);
    assert!(
        plan.describe().iter().any(|l| l.ends_with(&format!(
            "update MCP server memtrail: /old/memtrail → {}",
            b.bin.display()
        ))),
        "{:?}",
        plan.describe()
    );
    memtrail_installer::apply(&plan).unwrap();
    assert_eq!(
        b.read(&path),
        format!("models: []\nmcpServers:\n{}# end\n", item(&b, 4, "\n"))
    );
    b.uninstall();
    common::assert_same("older entry", &original, &b.snapshot());
}

#[test]
fn a_config_yaml_it_cannot_edit_is_left_untouched_with_a_clear_error() {
    let cases: [(&str, &str, &str); 4] = [
        (
            "malformed",
            "models:\n  - name: a\n    provider: [openai\n",
            "config.yaml: line 4, column 1:",
        ),
        ("a flow list", "models: []\nmcpServers: []\n", "mcpServers"),
        (
            "two documents",
            "a: 1\n---\nb: 2\n",
            "a single YAML document",
        ),
        (
            "a top-level list",
            "- a\n",
            "a block mapping at the top level",
        ),
    ];
    for (name, text, shown) in cases {
        let b = AgentBox::new(Agent::Continue);
        let path = b.home.join(".continue/config.yaml");
        b.put(&path, Some(text));
        let before = b.snapshot();
        for action in [
            memtrail_installer::Action::Install,
            memtrail_installer::Action::Uninstall,
        ] {
            let err = memtrail_installer::plan_in(&b.env, Agent::Continue, action, &b.bin)
                .expect_err(name);
            assert!(
                matches!(
                    err,
                    InstallError::Parse { .. } | InstallError::Conflict { .. }
                ),
                "{name}: {err}"
            );
            let msg = err.to_string();
            assert!(msg.contains(shown), "{name}: {msg}");
            assert!(msg.contains("left untouched"), "{name}: {msg}");
        }
        assert_eq!(b.snapshot(), before, "{name}: untouched");
        let state = mcp_state(&b);
        assert!(
            matches!(state, ItemState::Unreadable { .. }),
            "{name}: {state:?}"
        );
    }
}

#[test]
fn without_the_install_state_uninstall_leaves_no_empty_list() {
    // `mcpServers:` left empty is null, which `cn` refuses ("Expected array, received null").
    let b = AgentBox::new(Agent::Continue);
    let path = b.home.join(".continue/config.yaml");
    b.put(&path, Some(USER_CONFIG));
    b.install();
    std::fs::remove_file(b.state_dir().join("install-state.json")).unwrap();
    b.uninstall();
    assert_eq!(b.read(&path), USER_CONFIG);
}
