//! The continuity evaluation: for each session of `fixtures/continuity/` (six agents, real
//! formats), read the transcript, extract and correlate its events, build the snapshot at
//! 1, 2 and 4 KB, and check which of the session's facts (its `.facts` file: what a resumed
//! agent needs) the snapshot states. A fact is present when its text, whitespace collapsed and
//! lowercased, is a substring of the snapshot's (a path fact may appear relative or absolute).
//!
//! Prints the table with `cargo test -p memtrail-runtime --test it continuity:: -- --nocapture`.
//! Goal (issue 5): at least 95% of the core facts within 2 KB.

use crate::support;

use memtrail_adapters::Agent;
use memtrail_runtime::events::{StoredEvent, correlate, extract};
use memtrail_runtime::snapshot::{SnapshotInput, build};
use std::path::Path;

struct Fact {
    core: bool,
    kind: String,
    text: String,
}

struct Session {
    name: String,
    agent: Agent,
    project: String,
    session_id: String,
    events: Vec<StoredEvent>,
    facts: Vec<Fact>,
}

fn norm(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

fn sessions() -> Vec<Session> {
    let dir = support::fixtures().join("continuity");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".facts"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(&n)).unwrap();
            let name = n.trim_end_matches(".facts").to_string();
            let agent: Agent = name.split('-').next().unwrap().parse().unwrap();
            let (mut project, mut transcript) = (String::new(), String::new());
            let mut facts = Vec::new();
            for line in text
                .lines()
                .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            {
                let (head, rest) = line.split_once(' ').unwrap();
                match head {
                    "project" => project = rest.to_string(),
                    "transcript" => transcript = rest.to_string(),
                    "core" | "extra" => {
                        let (kind, fact) = rest.split_once(' ').unwrap();
                        facts.push(Fact {
                            core: head == "core",
                            kind: kind.to_string(),
                            text: fact.to_string(),
                        });
                    }
                    other => panic!("{n}: unknown line kind {other}"),
                }
            }
            let path = dir.join(&transcript);
            let msgs = support::load(agent, &path);
            let mut events = Vec::new();
            for (seq, m) in msgs.iter().enumerate() {
                for e in extract(agent, m) {
                    events.push(StoredEvent {
                        id: events.len() as i64 + 1,
                        seq: seq as i64,
                        message_id: m.id.clone(),
                        event: e,
                    });
                }
            }
            let derived = correlate(&events);
            events.extend(derived);
            events.sort_by_key(|e| (e.seq, e.id));
            // The session id as long as the agents' own (a UUID is 36 bytes).
            let stem = Path::new(&transcript)
                .file_stem()
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            let session_id = stem[stem.len().saturating_sub(36)..].to_string();
            Session {
                name,
                agent,
                project,
                session_id,
                events,
                facts,
            }
        })
        .collect()
}

fn present(snapshot: &str, project: &str, f: &Fact) -> bool {
    let text = norm(snapshot);
    let fact = norm(&f.text);
    text.contains(&fact)
        || (f.kind == "file" && text.contains(&norm(&format!("{project}/{}", f.text))))
}

struct Row {
    budget: usize,
    core: (usize, usize),
    all: (usize, usize),
    bytes: Vec<usize>,
}

fn evaluate(sessions: &[Session], budget: usize, misses: &mut Vec<String>) -> Row {
    let mut row = Row {
        budget,
        core: (0, 0),
        all: (0, 0),
        bytes: Vec::new(),
    };
    for s in sessions {
        let input = SnapshotInput {
            agent: s.agent.to_string(),
            session_id: s.session_id.clone(),
            project_dir: Some(s.project.clone()),
            title: None,
            git_branch: None,
            events: s.events.clone(),
        };
        let snap = build(&input, budget);
        assert!(snap.text.len() <= budget, "{}: over budget", s.name);
        row.bytes.push(snap.text.len());
        for f in &s.facts {
            let ok = present(&snap.text, &s.project, f);
            row.all.1 += 1;
            row.all.0 += ok as usize;
            if f.core {
                row.core.1 += 1;
                row.core.0 += ok as usize;
                if !ok {
                    misses.push(format!("{} B {}: {} {}", budget, s.name, f.kind, f.text));
                }
            }
        }
    }
    row
}

fn pct((n, d): (usize, usize)) -> f64 {
    100.0 * n as f64 / d.max(1) as f64
}

#[test]
fn continuity_evaluation() {
    let sessions = sessions();
    let agents: std::collections::BTreeSet<&str> =
        sessions.iter().map(|s| s.agent.as_str()).collect();
    assert!(sessions.len() >= 20, "{} sessions", sessions.len());
    assert!(agents.len() >= 3, "{agents:?}");
    let mut misses = Vec::new();
    let rows: Vec<Row> = [1024, 2048, 4096]
        .into_iter()
        .map(|b| evaluate(&sessions, b, &mut misses))
        .collect();
    let core_facts = rows[0].core.1;
    let all_facts = rows[0].all.1;
    println!(
        "\ncontinuity: {} sessions ({}), {core_facts} core facts, {all_facts} facts in all\n",
        sessions.len(),
        agents.into_iter().collect::<Vec<_>>().join(", ")
    );
    println!(
        "| budget | core facts present | all facts present | bytes used (mean) | bytes used (max) |"
    );
    println!("|---|---|---|---|---|");
    for r in &rows {
        let mean = r.bytes.iter().sum::<usize>() as f64 / r.bytes.len() as f64;
        let max = r.bytes.iter().max().copied().unwrap_or(0);
        println!(
            "| {} KB | {:.1}% ({}/{}) | {:.1}% ({}/{}) | {:.0} | {} |",
            r.budget / 1024,
            pct(r.core),
            r.core.0,
            r.core.1,
            pct(r.all),
            r.all.0,
            r.all.1,
            mean,
            max
        );
    }
    if !misses.is_empty() {
        println!("\ncore facts missing:");
        for m in &misses {
            println!("  {m}");
        }
    }
    let at2 = &rows[1];
    assert!(
        pct(at2.core) >= 95.0,
        "only {:.1}% of core facts within 2 KB",
        pct(at2.core)
    );
}
