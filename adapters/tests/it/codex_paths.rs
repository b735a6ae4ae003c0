//! Codex paths honour `CODEX_HOME` and `HOME`, read at call time (`docs/agents/codex.md#paths`,
//! `docs/agents/codex.md#what-memtrail-registers`).
//!
//! The test changes the process environment, which is only sound while no other thread runs:
//! it runs alone in a process of its own (`memtrail_testkit::alone`).

use memtrail_adapters::codex;
use std::path::PathBuf;

#[test]
fn paths_follow_codex_home_and_home() {
    memtrail_testkit::alone!(paths_follow_codex_home_and_home);
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_path_buf();
    // SAFETY: alone in its process; no other thread reads the environment meanwhile.
    unsafe {
        std::env::set_var("HOME", &h);
        std::env::remove_var("CODEX_HOME");
    }
    assert_eq!(codex::config_dir(), h.join(".codex"));
    assert_eq!(codex::sessions_dir(), h.join(".codex/sessions"));
    assert_eq!(
        codex::archived_sessions_dir(),
        h.join(".codex/archived_sessions")
    );
    assert_eq!(codex::config_toml_path(), h.join(".codex/config.toml"));
    assert_eq!(codex::hooks_json_path(), h.join(".codex/hooks.json"));
    assert_eq!(
        codex::skill_path(),
        h.join(".codex/skills/memtrail/SKILL.md")
    );
    assert!(!codex::detect());
    assert!(codex::discover().unwrap().is_empty());
    std::fs::create_dir_all(h.join(".codex")).unwrap();
    assert!(codex::detect());

    // An empty CODEX_HOME is ignored.
    unsafe { std::env::set_var("CODEX_HOME", "") };
    assert_eq!(codex::config_dir(), h.join(".codex"));

    // An absolute CODEX_HOME relocates everything, including discovery and hook lookups.
    let relocated = h.join("elsewhere");
    let id = "019ceb9e-6984-7a3c-a9b4-1e2d07f85c61";
    let rollout = relocated.join(format!(
        "sessions/2026/03/14/rollout-2026-03-14T10-12-33-{id}.jsonl"
    ));
    std::fs::create_dir_all(rollout.parent().unwrap()).unwrap();
    std::fs::write(&rollout, b"{}\n").unwrap();
    unsafe { std::env::set_var("CODEX_HOME", &relocated) };
    assert_eq!(codex::config_dir(), relocated);
    assert!(codex::detect());
    assert_eq!(codex::discover().unwrap(), std::slice::from_ref(&rollout));
    let ev = codex::parse_notify_argv(&format!(
        r#"{{"type":"agent-turn-complete","thread-id":"{id}","turn-id":"t","cwd":"/p","input-messages":[],"last-assistant-message":null}}"#
    ))
    .unwrap();
    assert_eq!(codex::transcripts_for_event(&ev), [rollout]);
    assert_eq!(
        codex::skill_path(),
        relocated.join("skills/memtrail/SKILL.md"),
        "memtrail's skill is in CODEX_HOME, not in ~/.agents (Gemini CLI reads that too)"
    );

    // A relative CODEX_HOME is taken from the current directory, as Codex does.
    unsafe { std::env::set_var("CODEX_HOME", "rel/codex") };
    assert_eq!(
        codex::config_dir(),
        std::env::current_dir()
            .unwrap()
            .join(PathBuf::from("rel/codex"))
    );
}
