//! pi: one file memtrail owns, the extension `~/.pi/agent/extensions/memtrail.ts`, beside the
//! user's own agent folder (settings, models, extensions of theirs).

use crate::common;

use common::{AgentBox, round_trip};
use memtrail_adapters::{opencode::registration::plugin_binary, pi};
use memtrail_installer::{Action, Agent, InstallError, ItemState, apply, plan_in};
use std::path::PathBuf;

/// A user's agent folder as pi 0.73.1 keeps it: settings, a custom provider, an extension.
fn users_files(agent: &std::path::Path) -> Vec<(PathBuf, Option<String>)> {
    vec![
        (
            agent.join("settings.json"),
            Some("{\n  \"defaultProvider\": \"anthropic\",\n  \"defaultThinkingLevel\": \"medium\"\n}\n".into()),
        ),
        (
            agent.join("models.json"),
            Some("{\"providers\":{\"ollama\":{\"baseUrl\":\"http://localhost:11434/v1\",\"api\":\"openai-completions\",\"apiKey\":\"ollama\",\"models\":[{\"id\":\"qwen2.5-coder:7b\"}]}}}\n".into()),
        ),
        (
            agent.join("extensions/guard/index.ts"),
            Some("export default function (pi) {\n  pi.on(\"tool_call\", async () => {})\n}\n".into()),
        ),
    ]
}

#[test]
fn round_trips_an_agent_folder() {
    for (name, with_users) in [("nothing yet", false), ("a user's agent folder", true)] {
        let b = AgentBox::new(Agent::Pi);
        let agent = b.home.join(".pi/agent");
        let ext = agent.join("extensions/memtrail.ts");
        let files = if with_users {
            users_files(&agent)
        } else {
            vec![(ext.clone(), None)]
        };
        round_trip(&b, name, &files, &|b| {
            assert_eq!(b.read(&ext), pi::extension_source(&b.bin), "{name}");
            assert_eq!(
                plugin_binary(&b.read(&ext)).as_deref(),
                b.bin.to_str(),
                "{name}"
            );
        });
    }
}

#[test]
fn a_foreign_file_is_kept_the_agent_dir_followed_and_a_moved_binary_updated() {
    let b = AgentBox::new(Agent::Pi);
    let elsewhere = b.dir.path().join("pi-agent");
    let b = b.with_var("PI_CODING_AGENT_DIR", &elsewhere);
    let ext = elsewhere.join("extensions/memtrail.ts");
    let original = b.snapshot();
    b.install();
    assert!(ext.is_file());
    assert!(!b.home.join(".pi").exists());
    let new_bin = b.dir.path().join("v2/memtrail");
    let st = memtrail_installer::status_in(&b.env, Agent::Pi, &new_bin).unwrap();
    let item = st
        .items
        .iter()
        .find(|i| i.item == "extension memtrail")
        .unwrap();
    assert_eq!(
        item.state,
        ItemState::Stale {
            points_at: Some(b.bin.to_str().unwrap().into())
        }
    );
    apply(&b.plan_with(Action::Install, &new_bin)).unwrap();
    assert_eq!(plugin_binary(&b.read(&ext)).as_deref(), new_bin.to_str());
    apply(&b.plan_with(Action::Uninstall, &new_bin)).unwrap();
    common::assert_same("moved", &original, &b.snapshot());
    // A memtrail.ts that is not memtrail's is never replaced nor removed.
    b.put(&ext, Some("// my own memtrail.ts\n"));
    let before = b.snapshot();
    match plan_in(&b.env, Agent::Pi, Action::Install, &b.bin) {
        Err(InstallError::Foreign { path }) => assert_eq!(path, ext),
        other => panic!("{other:?}"),
    }
    assert!(b.plan(Action::Uninstall).is_empty());
    assert_eq!(b.snapshot(), before);
}
