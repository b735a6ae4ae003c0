//! Events and snapshots of the real third-party transcripts in `../shared/fixtures/` (outside the
//! repository). Skipped when the folder is absent, unless `MEMTRAIL_REQUIRE_SHARED_FIXTURES=1`
//! (CI), which turns a missing folder into a failure.

use crate::support;

use memtrail_adapters::Agent;
use memtrail_runtime::events::{StoredEvent, correlate, extract};
use memtrail_runtime::snapshot::{SnapshotInput, build};
use std::path::{Path, PathBuf};

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures");

fn shared() -> Option<PathBuf> {
    memtrail_testkit::shared_fixtures(SHARED, "shared event tests")
}

fn events(agent: Agent, path: &Path) -> Vec<StoredEvent> {
    let mut out = Vec::new();
    for (seq, m) in support::load(agent, path).iter().enumerate() {
        for e in extract(agent, m) {
            out.push(StoredEvent {
                id: out.len() as i64 + 1,
                seq: seq as i64,
                message_id: m.id.clone(),
                event: e,
            });
        }
    }
    out
}

/// (category, action, subject, detail) of the events.
fn rows(evs: &[StoredEvent]) -> Vec<(String, String, String, Option<String>)> {
    evs.iter()
        .map(|e| {
            (
                e.event.category.as_str().to_string(),
                e.event.action.clone(),
                e.event.subject.clone(),
                e.event.detail.clone(),
            )
        })
        .collect()
}

fn row(c: &str, a: &str, s: &str, d: Option<&str>) -> (String, String, String, Option<String>) {
    (c.into(), a.into(), s.into(), d.map(str::to_string))
}

#[test]
fn every_shared_transcript_gives_bounded_snapshots() {
    let Some(dir) = shared() else { return };
    let mut seen = 0;
    for (agent, sub) in [
        (Agent::Claude, "claude"),
        (Agent::Codex, "codex"),
        (Agent::Gemini, "gemini"),
        (Agent::Cursor, "cursor"),
        (Agent::Vscode, "vscode"),
        (Agent::Opencode, "opencode"),
    ] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join(sub))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                memtrail_adapters::source_for(agent, p)
                    .is_some_and(|s| !matches!(s, memtrail_adapters::Source::Database))
            })
            .collect();
        files.sort();
        for f in files {
            // Cursor's `.json` files are not transcripts of this reader: skip what it cannot read.
            if agent == Agent::Cursor && f.extension().is_some_and(|e| e != "jsonl") {
                continue;
            }
            let mut evs = events(agent, &f);
            let derived = correlate(&evs);
            evs.extend(derived);
            evs.sort_by_key(|e| (e.seq, e.id));
            let input = SnapshotInput {
                agent: agent.to_string(),
                session_id: "s".into(),
                events: evs.clone(),
                ..Default::default()
            };
            for budget in [0, 1, 64, 200, 1024, 2048] {
                let s = build(&input, budget);
                assert!(s.text.len() <= budget, "{}: {budget}", f.display());
                assert_eq!(
                    s.text.is_empty(),
                    evs.is_empty() || budget == 0,
                    "{}",
                    f.display()
                );
            }
            seen += 1;
        }
    }
    assert!(seen >= 10, "{seen} transcripts");
}

#[test]
fn claude_codemie_session_writes_edits_and_removes() {
    let Some(dir) = shared() else { return };
    let f = dir.join("claude/codemie-tmp-private-4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl");
    assert_eq!(
        rows(&events(Agent::Claude, &f)),
        vec![
            row("prompt", "submitted", "create hello.py, md and js", None),
            row("file", "written", "/tmp/private/hello.py", Some("+7 -0")),
            row("file", "written", "/tmp/private/hello.md", Some("+13 -0")),
            row("file", "written", "/tmp/private/hello.js", Some("+7 -0")),
            row(
                "prompt",
                "submitted",
                "update py with one liner comment",
                None
            ),
            row("file", "read", "/tmp/private/hello.py", None),
            row("file", "edited", "/tmp/private/hello.py", Some("+4 -3")),
            row("prompt", "submitted", "delete js", None),
            row("command", "ok", "rm hello.js", None),
            row("file", "deleted", "hello.js", None),
        ]
    );
}

#[test]
fn vscode_session_reads_then_edits() {
    let Some(dir) = shared() else { return };
    let f = dir.join("vscode/vscode-session.jsonl");
    assert_eq!(
        rows(&events(Agent::Vscode, &f)),
        vec![
            row(
                "prompt",
                "submitted",
                "Show me the contents of package.json",
                None
            ),
            row("file", "read", "package.json", None),
            row(
                "prompt",
                "submitted",
                "Now add a description field to it",
                None
            ),
            row("file", "edited", "package.json", None),
        ]
    );
}

#[test]
fn codex_session_with_mcp_tools() {
    let Some(dir) = shared() else { return };
    let f = dir.join(
        "codex/localpush-rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
    );
    let got = rows(&events(Agent::Codex, &f));
    assert_eq!(
        got[1..],
        [
            row("mcp", "used", "cloud-associates/search_workflows", None),
            row("mcp", "used", "cloud-associates/execute_workflow", None),
            row("mcp", "used", "cloud-associates/execute_workflow", None),
            row("mcp", "used", "cloud-associates/execute_workflow", None),
        ]
    );
}
