//! Print the events and the snapshot of a transcript:
//! `cargo run -p memtrail-runtime --example dump_fixture -- <agent> <path> [budget] [project dir]`.
#[path = "../tests/it/support/mod.rs"]
mod support;

use memtrail_runtime::events::{StoredEvent, correlate, extract};
use memtrail_runtime::snapshot::{SnapshotInput, build};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 3 {
        eprintln!("usage: dump_fixture <agent> <path> [budget]");
        std::process::exit(2);
    }
    let agent: memtrail_adapters::Agent = a[1].parse().expect("agent");
    let budget = a.get(3).and_then(|b| b.parse().ok()).unwrap_or(2048);
    let mut events = Vec::new();
    for (seq, m) in support::load(agent, std::path::Path::new(&a[2]))
        .iter()
        .enumerate()
    {
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
    for e in events.iter().chain(&derived) {
        let ev = &e.event;
        println!(
            "{:>3} {:<14} {:<9} p{} {:?} {:?} {:?}",
            e.seq,
            ev.category.as_str(),
            ev.action,
            ev.priority,
            ev.subject,
            ev.detail
                .as_deref()
                .map(|d| memtrail_adapters::one_line(d, 80)),
            ev.tool
        );
    }
    events.extend(derived);
    events.sort_by_key(|e| (e.seq, e.id));
    let snap = build(
        &SnapshotInput {
            agent: agent.to_string(),
            session_id: "S".into(),
            project_dir: a.get(4).cloned(),
            events,
            ..Default::default()
        },
        budget,
    );
    println!(
        "---- snapshot ({} bytes of {budget})\n{}",
        snap.text.len(),
        snap.text
    );
}
