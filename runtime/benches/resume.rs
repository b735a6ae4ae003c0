//! Figures for the resume path: what events cost at ingest, what the PreCompact and
//! SessionStart hooks spend on snapshots, `resume_context`, and the v2 → v3 backfill.
//!
//! `cargo bench -p memtrail-runtime --bench resume [-- SESSIONS MESSAGES]` (default 20 sessions
//! of 1000 messages). Prints one line per figure; asserts nothing (targets are judged by people).

use memtrail_adapters::{
    Agent, HookEvent, Kind, Message, Part, Record, Role, SessionMeta, SessionRef, ToolCall,
};
use memtrail_runtime::hook::respond;
use memtrail_runtime::records::Standard;
use memtrail_runtime::resume;
use memtrail_runtime::store::Store;
use serde_json::json;
use std::time::{Duration, Instant};

const T0: i64 = 1_780_000_000_000;

fn records(n: usize) -> Vec<Record> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let ts = Some(T0 + i as i64 * 1000);
        let call = |name: &str, input: serde_json::Value| {
            Record::Message(Message {
                id: format!("a{i}"),
                role: Role::Assistant,
                kind: Kind::ToolCall,
                parts: vec![
                    Part::Text {
                        text: format!("Step {i}: working on module {}", i % 17),
                    },
                    Part::ToolCall(ToolCall {
                        id: format!("c{i}"),
                        name: name.into(),
                        tool: memtrail_adapters::normalize_tool_name(name),
                        input,
                        output: None,
                        is_error: false,
                        exit_code: None,
                    }),
                ],
                timestamp: ts,
                model: None,
            })
        };
        out.push(match i % 5 {
            0 => Record::Message(Message {
                id: format!("u{i}"),
                role: Role::User,
                kind: Kind::Text,
                parts: vec![Part::Text {
                    text: format!("Please fix the failing test number {i} in the parser module"),
                }],
                timestamp: ts,
                model: None,
            }),
            1 => call(
                "Edit",
                json!({"file_path": format!("/w/app/src/m{}.rs", i % 23), "old_string": "a", "new_string": "b\nc"}),
            ),
            2 => call("Bash", json!({"command": format!("cargo test m{}", i % 7)})),
            3 => Record::ToolResult {
                call_id: format!("c{}", i - 1),
                output: if i % 3 == 0 {
                    "test failed\nExit code 101".into()
                } else {
                    "ok".into()
                },
                is_error: i % 3 == 0,
                timestamp: ts,
                exit_code: None,
            },
            _ => call("Read", json!({"file_path": format!("/w/app/src/m{}.rs", i % 29)})),
        });
    }
    out
}

fn session(store: &mut Store, id: &str) -> i64 {
    store
        .write(|w| {
            w.upsert_session(
                &SessionRef {
                    agent: Agent::Claude,
                    external_id: id.into(),
                    parent_external_id: None,
                },
                &SessionMeta {
                    project_dir: Some("/w/app".into()),
                    updated_at: Some(T0),
                    ..SessionMeta::default()
                },
                &Standard,
            )
        })
        .unwrap()
}

fn per(d: Duration, n: usize) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6 / n.max(1) as f64)
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sessions = args.first().copied().unwrap_or(20);
    let messages = args.get(1).copied().unwrap_or(1000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.db");
    let mut store = Store::open(&path).unwrap();

    // Ingest with events, in hook-sized batches of 20 records.
    let t = Instant::now();
    let mut ids = Vec::new();
    for s in 0..sessions {
        let rowid = session(&mut store, &format!("s{s}"));
        for chunk in records(messages).chunks(20) {
            store.write(|w| w.apply(rowid, chunk.to_vec())).unwrap();
        }
        ids.push(rowid);
    }
    let total = sessions * messages;
    let ingest = t.elapsed();
    let events = resume::session_events(&store, ids[0]).unwrap().len();
    println!(
        "ingest with events: {total} records in {:.2} s ({} per record); {events} events in a session of {messages} records",
        ingest.as_secs_f64(),
        per(ingest, total)
    );

    // The hooks' snapshot work on the last session.
    let hook = |event: &str, source: Option<&str>| HookEvent {
        agent: Agent::Claude,
        event: event.into(),
        session_id: Some(format!("s{}", sessions - 1)),
        transcript_path: None,
        cwd: Some("/w/app".into()),
        source: source.map(str::to_string),
        agent_transcript_path: None,
        extra: serde_json::Value::Null,
    };
    let runs = 20;
    let t = Instant::now();
    for _ in 0..runs {
        respond(
            &mut store,
            Agent::Claude,
            &hook("PreCompact", None),
            "PreCompact",
        )
        .unwrap();
    }
    println!(
        "PreCompact (build + save the snapshot): {} per hook",
        per(t.elapsed(), runs)
    );
    let t = Instant::now();
    for _ in 0..runs {
        let r = respond(
            &mut store,
            Agent::Claude,
            &hook("SessionStart", Some("compact")),
            "SessionStart",
        )
        .unwrap();
        assert!(r.is_some());
    }
    println!(
        "SessionStart compact (take the saved snapshot): {} per hook",
        per(t.elapsed(), runs)
    );
    let t = Instant::now();
    for _ in 0..runs {
        respond(
            &mut store,
            Agent::Claude,
            &hook("SessionStart", Some("startup")),
            "SessionStart",
        )
        .unwrap();
    }
    println!(
        "SessionStart startup (pointer line): {} per hook",
        per(t.elapsed(), runs)
    );

    let t = Instant::now();
    let mut used = 0;
    for i in 0..runs {
        let r = resume::resume_context(
            &store,
            ids[i % ids.len()],
            None,
            Some("failing test parser"),
            2000,
        )
        .unwrap();
        used = used.max(r.used_tokens);
    }
    println!(
        "resume_context (query, 2000 tokens): {} per call (at most {used} tokens used)",
        per(t.elapsed(), runs)
    );

    // The v2 → v3 migration's backfill of every stored message.
    drop(store);
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("DROP TABLE events; DROP TABLE snapshots; PRAGMA user_version = 2;")
            .unwrap();
    }
    let t = Instant::now();
    let store = Store::open(&path).unwrap();
    let d = t.elapsed();
    let stored: i64 = store.stats().unwrap().messages;
    println!(
        "migration v2 -> v3 with backfill: {stored} messages in {:.2} s ({} per message)",
        d.as_secs_f64(),
        per(d, stored as usize)
    );
}
