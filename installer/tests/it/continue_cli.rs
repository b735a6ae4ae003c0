//! Continue (`cn`): the skill `~/.continue/skills/memtrail/SKILL.md` (or under
//! `$CONTINUE_GLOBAL_DIR`), beside the user's own config and skills; nothing else is written.

use crate::common;

use common::{AgentBox, round_trip};
use memtrail_adapters::continuedev::registration as cont;
use memtrail_installer::Agent;

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
