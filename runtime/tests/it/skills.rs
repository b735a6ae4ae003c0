//! The skills name every MCP tool the server offers, in each agent's own tool naming, and
//! each tool's description says when to use it.

use memtrail_adapters::{claude, codex, gemini, opencode};
use memtrail_runtime::mcp::MemtrailMcp;

#[test]
fn every_tool_is_in_every_skill_with_the_agents_naming() {
    let mut names: Vec<String> = MemtrailMcp::tools()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "get_session",
            "list_sessions",
            "remember",
            "resume_context",
            "search",
            "timeline"
        ]
    );
    for t in MemtrailMcp::tools() {
        let d = t.description.as_deref().unwrap_or_default();
        assert!(d.contains("Use it"), "{}: {d}", t.name);
    }
    let skills = [
        ("claude", claude::registration::SKILL_MD, "mcp__memtrail__"),
        ("gemini", gemini::registration::SKILL_MD, "mcp_memtrail_"),
        ("agents", codex::registration::SKILL_MD, ""),
    ];
    for (which, md, prefix) in skills {
        for n in &names {
            assert!(
                md.contains(&format!("| `{prefix}{n}` |")),
                "the {which} skill lacks `{prefix}{n}`"
            );
        }
        assert!(md.contains("memtrail search \"database is locked\" --json"));
        assert!(md.contains("memtrail resume"));
    }
    assert!(!claude::registration::SKILL_MD.contains("mcp_memtrail_"));
    assert!(!gemini::registration::SKILL_MD.contains("mcp__memtrail__"));
    // The shared skill (Codex, Cursor, OpenCode) maps the prefixes.
    assert_eq!(
        codex::registration::SKILL_MD,
        opencode::registration::SKILL_MD
    );
    for naming in [
        "`mcp__memtrail__search` (Codex CLI",
        "`memtrail_search` (OpenCode)",
    ] {
        assert!(codex::registration::SKILL_MD.contains(naming), "{naming}");
    }
}
