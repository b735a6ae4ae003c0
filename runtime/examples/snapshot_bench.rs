//! Figures for the snapshot path of a hook: extraction per message, correlation and the build of
//! a snapshot, on a synthetic session of N messages (default 5000: prompts, reads, edits of 300
//! files, shell runs failing then passing, todo lists, commits).
//!
//! Then the path a PreCompact hook takes, from a store holding that session: load its events
//! (`resume::session_events`: the SQL and the row decoding), correlate, build; and the whole of
//! `resume::build_snapshot`. Each figure is the median of RUNS runs (default 21).
//!
//! `cargo run --release -p memtrail-runtime --example snapshot_bench -- [messages [runs]]`
//! (a message gives about two events: 500 messages ≈ 1k events, 5000 ≈ 10k).
//!
//! Instruction counts (independent of the machine's load): build with symbols
//! (`CARGO_PROFILE_RELEASE_STRIP=false`), then `valgrind --tool=callgrind
//! --toggle-collect='*store_path*' target/release/examples/snapshot_bench 5000 1` counts only
//! `store_path` (= `resume::build_snapshot`); `callgrind_annotate --inclusive=yes` splits it.

use memtrail_adapters::{
    Agent, Kind, Message, Part, Record, Role, SessionMeta, SessionRef, ToolCall,
};
use memtrail_runtime::events::{StoredEvent, correlate, extract};
use memtrail_runtime::records::Standard;
use memtrail_runtime::snapshot::{DEFAULT_BUDGET, Snapshot, SnapshotInput, build};
use memtrail_runtime::store::Store;
use memtrail_runtime::{query, resume};
use serde_json::json;
use std::time::{Duration, Instant};

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
            exit_code: None,
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

/// Load + correlate + build from the store, as `resume::build_snapshot` does; one function so
/// that callgrind reports its inclusive cost.
#[inline(never)]
fn store_path(store: &Store, rowid: i64) -> Snapshot {
    resume::build_snapshot(store, rowid, DEFAULT_BUDGET).unwrap()
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(5000);
    let runs = args.get(1).copied().unwrap_or(21).max(1);
    let msgs = session(n);
    let t = Instant::now();
    let _ = extract(Agent::Claude, &msgs[0]);
    let t_first = t.elapsed();
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
        "  first extract in a process (compiles the regexes) {:.3} ms",
        t_first.as_secs_f64() * 1e3
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

    // The same session in a store, as a hook finds it.
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("bench.db")).unwrap();
    let rowid = store
        .write(|w| {
            w.upsert_session(
                &SessionRef {
                    agent: Agent::Claude,
                    external_id: "bench".into(),
                    parent_external_id: None,
                },
                &SessionMeta {
                    project_dir: Some("/p".into()),
                    ..SessionMeta::default()
                },
                &Standard,
            )
        })
        .unwrap();
    for chunk in msgs.chunks(500) {
        let records: Vec<Record> = chunk.iter().cloned().map(Record::Message).collect();
        store.write(|w| w.apply(rowid, records)).unwrap();
    }
    let (mut load, mut corr, mut bld, mut whole) = (vec![], vec![], vec![], vec![]);
    let mut input_times = vec![];
    let mut stored = 0;
    let mut same = true;
    for _ in 0..runs {
        let t = Instant::now();
        let events = resume::session_events(&store, rowid).unwrap();
        load.push(t.elapsed());
        stored = events.len();
        let t = Instant::now();
        let derived = correlate(&events);
        corr.push(t.elapsed());
        let mut all = events;
        all.extend(derived);
        all.sort_by_key(|e| (e.seq, e.id));
        let summary = query::session_summary(&store, rowid).unwrap();
        let input = SnapshotInput {
            agent: summary.agent,
            session_id: summary.session_id,
            project_dir: summary.project,
            title: summary.title,
            git_branch: summary.git_branch,
            events: all,
        };
        let t = Instant::now();
        let s = build(&input, DEFAULT_BUDGET);
        bld.push(t.elapsed());
        let t = Instant::now();
        drop(resume::snapshot_input(&store, rowid).unwrap());
        input_times.push(t.elapsed());
        let t = Instant::now();
        let w = store_path(&store, rowid);
        whole.push(t.elapsed());
        same &= s == w;
    }
    println!("from the store ({stored} stored events), median of {runs} runs:");
    println!(
        "  load      {:>9.3} ms (session_events: every field)",
        median(load)
    );
    println!("  correlate {:>9.3} ms", median(corr));
    println!("  build     {:>9.3} ms", median(bld));
    println!(
        "  snapshot_input (summary + load of what a snapshot reads + correlate) {:>9.3} ms",
        median(input_times)
    );
    println!(
        "  build_snapshot (snapshot_input + build) {:>9.3} ms{}",
        median(whole),
        if same {
            ""
        } else {
            " (DIFFERS from the phases!)"
        }
    );
}
