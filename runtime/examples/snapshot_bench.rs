//! Figures for the snapshot path of a hook: extraction per message, correlation and the build of
//! a snapshot, on a synthetic session of N messages (default 5000: prompts, reads, edits of 300
//! files, shell runs failing then passing, todo lists, commits).
//!
//! `cargo run --release -p memtrail-runtime --example snapshot_bench -- [messages]`

use memtrail_adapters::{Agent, Kind, Message, Part, Role, ToolCall};
use memtrail_runtime::events::{StoredEvent, correlate, extract};
use memtrail_runtime::snapshot::{DEFAULT_BUDGET, SnapshotInput, build};
use serde_json::json;
use std::time::Instant;

fn call(
    i: usize,
    name: &str,
    tool: &str,
    input: serde_json::Value,
    output: &str,
    is_error: bool,
) -> Message {
    Message {
        id: format!("m{i}"),
        role: Role::Assistant,
        kind: Kind::ToolCall,
        parts: vec![Part::ToolCall(ToolCall {
            id: format!("c{i}"),
            name: name.into(),
            tool: tool.into(),
            input,
            output: Some(output.into()),
            is_error,
        })],
        timestamp: Some(i as i64),
        model: None,
    }
}

fn session(n: usize) -> Vec<Message> {
    (0..n)
        .map(|i| match i % 10 {
            0 => Message {
                id: format!("m{i}"),
                role: Role::User,
                kind: Kind::Text,
                parts: vec![Part::Text { text: format!("Step {i}: don't change the API; fix issue #{i} per https://example.com/{i}.") }],
                timestamp: Some(i as i64),
                model: None,
            },
            1 | 2 => call(i, "Read", "read", json!({"file_path": format!("/p/src/m{}.rs", i % 300)}), "fn main() {}", false),
            3 | 4 => call(i, "Edit", "edit", json!({"file_path": format!("/p/src/m{}.rs", i % 300), "old_string": "a\nb", "new_string": "c\nd\ne"}), "ok", false),
            5 => call(i, "Bash", "shell", json!({"command": "cargo test"}), "Exit code 101\nerror[E0425]: cannot find value `x`", true),
            6 => call(i, "Bash", "shell", json!({"command": "cargo test"}), "test result: ok. 3 passed", false),
            7 => call(i, "TodoWrite", "todo", json!({"todos": (0..8).map(|k| json!({"content": format!("task {k} of {i}"), "status": if k < 3 {"completed"} else {"pending"}})).collect::<Vec<_>>()}), "ok", false),
            8 => call(i, "Bash", "shell", json!({"command": format!("git commit -m \"step {i}\"")}), "[main abc] step", false),
            _ => call(i, "Grep", "search", json!({"pattern": "x"}), "", false),
        })
        .collect()
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5000);
    let msgs = session(n);
    let t = Instant::now();
    let mut events = Vec::new();
    for (seq, m) in msgs.iter().enumerate() {
        for e in extract(Agent::Claude, m) {
            events.push(StoredEvent {
                id: events.len() as i64 + 1,
                seq: seq as i64,
                message_id: m.id.clone(),
                event: e,
            });
        }
    }
    let t_extract = t.elapsed();
    let t = Instant::now();
    let derived = correlate(&events);
    let t_correlate = t.elapsed();
    let n_derived = derived.len();
    events.extend(derived);
    events.sort_by_key(|e| (e.seq, e.id));
    let input = SnapshotInput {
        agent: "claude".into(),
        session_id: "bench".into(),
        project_dir: Some("/p".into()),
        events,
        ..Default::default()
    };
    let t = Instant::now();
    let snap = build(&input, DEFAULT_BUDGET);
    let t_build = t.elapsed();
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!(
        "snapshot_bench ({profile}): {n} messages, {} events ({n_derived} derived)",
        input.events.len()
    );
    println!(
        "  extract   {:>9.3} ms total, {:.2} µs per message",
        t_extract.as_secs_f64() * 1e3,
        t_extract.as_secs_f64() * 1e6 / n as f64
    );
    println!("  correlate {:>9.3} ms", t_correlate.as_secs_f64() * 1e3);
    println!(
        "  build     {:>9.3} ms ({} bytes of {DEFAULT_BUDGET})",
        t_build.as_secs_f64() * 1e3,
        snap.text.len()
    );
}
