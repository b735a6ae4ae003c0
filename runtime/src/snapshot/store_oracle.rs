//! The oracle of the snapshot's running state in a store ([`crate::store::Store::snapshot`],
//! `Writer::snapshot`): the snapshot read from the saved state, or built in a write that saves
//! it, equals [`crate::resume::build_snapshot_full`] (`snapshot::build` over all the session's
//! events) after every step of random sessions and of the project's fixtures.

mod random {
    use crate::records::Standard;
    use crate::resume::build_snapshot_full;
    use crate::store::Store;
    use crate::test_rng::Xorshift;
    use memtrail_adapters::{
        Agent, Kind, Message, Part, Record, Role, SessionMeta, SessionRef, ToolCall,
        normalize_tool_name,
    };
    use serde_json::json;

    const FILES: &[&str] = &[
        "/w/app/src/a.rs",
        "src/a.rs",
        "./src/a.rs",
        "/w/app/src/b.rs",
        "lib/b.rs",
        "/elsewhere/b.rs",
        "README.md",
    ];
    const COMMANDS: &[&str] = &[
        "cargo test",
        "cargo build",
        "npm test",
        "git commit -m 'fix the parser'",
        "git push",
    ];
    const PROMPTS: &[&str] = &[
        "fix the parser",
        "use tabs instead of spaces in src/a.rs",
        "don't touch the API; see https://example.com/x and owner/repo#12",
        "日本語のテスト",
        "run the tests again",
    ];

    /// A Claude Code session `ext` of project `project` (titled `title`) in `store`: its row id.
    fn session(store: &mut Store, ext: &str, project: &str, title: Option<&str>) -> i64 {
        store
            .write(|w| {
                w.upsert_session(
                    &SessionRef {
                        agent: Agent::Claude,
                        external_id: ext.into(),
                        parent_external_id: None,
                    },
                    &SessionMeta {
                        project_dir: Some(project.into()),
                        title: title.map(str::to_string),
                        ..SessionMeta::default()
                    },
                    &Standard,
                )
            })
            .unwrap()
    }

    /// A random message `i` of the session: a prompt, or an assistant message with one or two
    /// tool calls. A call's result is left out (to come later as a `ToolResult`) when `late`
    /// says so; the call ids of those are pushed on `pending`.
    fn message(
        g: &mut Xorshift,
        i: usize,
        calls: &mut usize,
        pending: &mut Vec<(String, String, bool)>,
    ) -> Message {
        let ts = Some(1_760_000_000_000 + i as i64 * 1000);
        if g.below(5) == 0 {
            return Message {
                id: format!("m{i}"),
                role: Role::User,
                kind: Kind::Text,
                parts: vec![Part::Text {
                    text: PROMPTS[g.below(PROMPTS.len())].into(),
                }],
                timestamp: ts,
                model: None,
            };
        }
        let mut parts = Vec::new();
        for _ in 0..1 + g.below(2) {
            *calls += 1;
            // Now and then a call id used before (an agent that reuses them).
            let id = if g.below(40) == 0 {
                format!("c{}", g.below(*calls))
            } else {
                format!("c{calls}")
            };
            let f = FILES[g.below(FILES.len())];
            let (name, input) = match g.below(9) {
                0 | 1 => (
                    "Bash",
                    json!({"command": COMMANDS[g.below(COMMANDS.len())]}),
                ),
                2 | 3 => (
                    "Edit",
                    json!({"file_path": f, "old_string": "a\nb", "new_string": "c"}),
                ),
                4 => ("Write", json!({"file_path": f, "content": "x\ny\n"})),
                5 => ("Read", json!({"file_path": f})),
                6 => (
                    "TodoWrite",
                    json!({"todos": (0..1 + g.below(3)).map(|k| {
                        let status = ["pending", "in_progress", "completed"][g.below(3)];
                        json!({
                            "content": format!("task {}", (k + g.below(3)) % 4),
                            "status": status,
                            "activeForm": "working"
                        })
                    }).collect::<Vec<_>>()}),
                ),
                7 => (
                    "Task",
                    json!({"description": "look around", "prompt": "find x"}),
                ),
                _ => ("mcp__github__get_issue", json!({"number": g.below(3)})),
            };
            let fails = g.below(3) == 0;
            let output = if fails {
                "Exit code 101\nerror[E0425]: cannot find value `x`".to_string()
            } else {
                "ok".to_string()
            };
            let late = g.below(3) == 0;
            if late {
                pending.push((id.clone(), output.clone(), fails));
            }
            parts.push(Part::ToolCall(ToolCall {
                id,
                name: name.into(),
                tool: normalize_tool_name(name),
                input,
                output: (!late).then_some(output),
                is_error: !late && fails,
                exit_code: None,
            }));
        }
        Message {
            id: format!("m{i}"),
            role: Role::Assistant,
            kind: Kind::ToolCall,
            parts,
            timestamp: ts,
            model: None,
        }
    }

    /// The snapshot from the running state (read, and built in a write that saves the state)
    /// equals the one built from all the session's events, for random budgets, after every
    /// step of random sessions: appends, late tool results (their message's events extracted
    /// again), rewinds, replaced messages, deleted messages, `redact --rescan`, re-imports, and
    /// the hooks' advance of the state (`Writer::advance_snapshot_state`).
    #[test]
    fn snapshots_from_the_running_state_equal_the_full_build() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let (mut from_state, mut compared, mut advanced) = (0, 0, 0);
        for round in 0..24u64 {
            let mut g = Xorshift(0x5eed_0000 + round * 7919);
            let project = ["/w/app", "/w/app/", ""][g.below(3)];
            let sid = session(&mut store, &format!("s{round}"), project, Some("a title"));
            // What the transcript holds (for a re-import), and results not delivered yet.
            let mut transcript: Vec<Record> = Vec::new();
            let mut pending: Vec<(String, String, bool)> = Vec::new();
            let (mut next, mut calls) = (0usize, 0usize);
            for step in 0..40 {
                let op = g.below(14);
                let records: Vec<Record> = match op {
                    0..=6 => (0..1 + g.below(6))
                        .map(|_| {
                            next += 1;
                            Record::Message(message(&mut g, next, &mut calls, &mut pending))
                        })
                        .collect(),
                    7 | 8 => {
                        let n = g.below(pending.len() + 1);
                        pending
                            .drain(..n)
                            .map(|(call_id, output, is_error)| Record::ToolResult {
                                call_id,
                                output,
                                is_error,
                                exit_code: None,
                                timestamp: None,
                            })
                            .collect()
                    }
                    9 if next > 0 => vec![Record::Rewind {
                        message_id: format!("m{}", 1 + g.below(next)),
                    }],
                    10 if next > 0 => {
                        let at = 1 + g.below(next);
                        let mut m = message(&mut g, at, &mut calls, &mut pending);
                        m.id = format!("m{at}");
                        vec![Record::Replace(m)]
                    }
                    _ => Vec::new(),
                };
                transcript.extend(records.iter().cloned());
                store.write(|w| w.apply(sid, records).map(|_| ())).unwrap();
                match op {
                    11 if next > 0 => {
                        let ext = format!("m{}", 1 + g.below(next));
                        store.delete_message(sid, &ext);
                    }
                    12 => {
                        crate::store::maintenance::rescan(&mut store, &mut |_| {}, &Standard)
                            .unwrap();
                    }
                    13 => {
                        let all = transcript.clone();
                        store
                            .write(|w| {
                                w.clear_session(sid)?;
                                w.apply(sid, all).map(|_| ())
                            })
                            .unwrap();
                    }
                    _ => {}
                }
                // A hook bringing the state up to the message before the last.
                if g.below(3) == 0 {
                    let min_new = 1 + g.below(8);
                    advanced += store
                        .write(|w| w.advance_snapshot_state(sid, min_new))
                        .unwrap() as usize;
                }
                for _ in 0..3 {
                    let budget = match g.below(4) {
                        0 => g.below(80),
                        1 => g.below(800),
                        2 => crate::snapshot::DEFAULT_BUDGET,
                        _ => 16 * 1024,
                    };
                    let full = build_snapshot_full(&store, sid, budget).unwrap();
                    let had = store.has_snapshot_state(sid);
                    let read = store.snapshot(sid, budget).unwrap();
                    assert_eq!(read, full, "round {round}, step {step}, budget {budget}");
                    if g.below(2) == 0 {
                        let written = store.write(|w| w.snapshot(sid, budget)).unwrap();
                        assert_eq!(written, full, "round {round}, step {step}, budget {budget}");
                    }
                    from_state += had as usize;
                    compared += 1;
                }
            }
        }
        // Most comparisons read a saved state (the test is not vacuous).
        assert!(from_state * 2 > compared, "{from_state} of {compared}");
        assert!(advanced > 50, "{advanced}");
    }

    /// The hooks' advance leaves the session's last message out of the state, so a late tool
    /// result for it (its events extracted again) keeps the state; and it saves nothing while
    /// fewer than `min_new` events are new.
    #[test]
    fn the_advance_leaves_the_last_message_out_and_a_late_result_for_it_keeps_the_state() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let sid = session(&mut store, "adv", "/w/app", None);
        let call = |i: usize, command: &str, output: Option<&str>| Message {
            id: format!("m{i}"),
            role: Role::Assistant,
            kind: Kind::ToolCall,
            parts: vec![Part::ToolCall(ToolCall {
                id: format!("c{i}"),
                name: "Bash".into(),
                tool: normalize_tool_name("Bash"),
                input: json!({"command": command}),
                output: output.map(str::to_string),
                is_error: false,
                exit_code: None,
            })],
            timestamp: Some(1_760_000_000_000 + i as i64),
            model: None,
        };
        let records: Vec<Record> = (1..=3)
            .map(|i| Record::Message(call(i, &format!("make step{i}"), Some("ok"))))
            .collect();
        store.write(|w| w.apply(sid, records).map(|_| ())).unwrap();
        // Two events before the last message: fewer than three, then enough for two.
        assert!(!store.write(|w| w.advance_snapshot_state(sid, 3)).unwrap());
        assert!(!store.has_snapshot_state(sid));
        assert!(store.write(|w| w.advance_snapshot_state(sid, 2)).unwrap());
        assert!(store.has_snapshot_state(sid));
        // Nothing new before the last message: nothing saved.
        assert!(!store.write(|w| w.advance_snapshot_state(sid, 1)).unwrap());
        // A fourth message whose result comes later; the state moves up to the third.
        store
            .write(|w| {
                w.apply(sid, vec![Record::Message(call(4, "cargo test", None))])
                    .map(|_| ())
            })
            .unwrap();
        assert!(store.write(|w| w.advance_snapshot_state(sid, 1)).unwrap());
        store
            .write(|w| {
                w.apply(
                    sid,
                    vec![Record::ToolResult {
                        call_id: "c4".into(),
                        output: "Exit code 101\nerror[E0425]: cannot find value `x`".into(),
                        is_error: true,
                        exit_code: None,
                        timestamp: None,
                    }],
                )
                .map(|_| ())
            })
            .unwrap();
        assert!(
            store.has_snapshot_state(sid),
            "the late result dropped the state"
        );
        let budget = crate::snapshot::DEFAULT_BUDGET;
        let full = build_snapshot_full(&store, sid, budget).unwrap();
        assert!(full.text.contains("cargo test"), "{}", full.text);
        assert!(full.text.contains("E0425"), "{}", full.text);
        assert_eq!(store.snapshot(sid, budget).unwrap(), full);
    }

    /// An event inserted into a message the saved state covers, with no delete (a raw insert,
    /// as another writer could make one), drops the state (migration 0015's trigger): the
    /// snapshot is the full build's, with the new event.
    #[test]
    fn an_event_inserted_before_the_end_drops_the_state() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let sid = session(&mut store, "late", "/w/app", None);
        let mut g = Xorshift(0x1a7e);
        let (mut calls, mut pending) = (0usize, Vec::new());
        let records: Vec<Record> = (1..=30)
            .map(|i| Record::Message(message(&mut g, i, &mut calls, &mut pending)))
            .collect();
        store.write(|w| w.apply(sid, records).map(|_| ())).unwrap();
        let budget = crate::snapshot::DEFAULT_BUDGET;
        store.write(|w| w.snapshot(sid, budget)).unwrap();
        assert!(store.has_snapshot_state(sid));
        // An edit event in the session's third message.
        store.insert_edit_event(sid, 2, "/w/app/src/zzz_late.rs");
        assert!(!store.has_snapshot_state(sid));
        let full = build_snapshot_full(&store, sid, budget).unwrap();
        assert!(full.text.contains("zzz_late.rs"), "{}", full.text);
        assert_eq!(store.snapshot(sid, budget).unwrap(), full);
        assert_eq!(store.write(|w| w.snapshot(sid, budget)).unwrap(), full);
        assert!(store.has_snapshot_state(sid));
    }
}

mod fixtures {
    use crate::resume::build_snapshot_full;
    use crate::store::Store;
    use memtrail_adapters::Agent;
    use std::io::Write as _;
    use std::path::{Path, PathBuf};

    fn jsonl_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                jsonl_files(&p, out);
            } else if p.extension().is_some_and(|e| e == "jsonl") {
                out.push(p);
            }
        }
    }

    /// The project's fixture transcripts (JSONL, of every agent folder that names an agent),
    /// each copied in a few lines at a time and ingested after each copy: after every ingest
    /// step, the snapshot of every session from the running state (read, and built in a write
    /// that saves it) equals the full build, for several budgets.
    #[test]
    fn fixture_sessions_ingested_step_by_step() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
        let dir = tempfile::tempdir().unwrap();
        let (mut steps, mut with_events) = (0, 0);
        for agent_dir in std::fs::read_dir(&root).unwrap().flatten() {
            let Ok(agent) = agent_dir.file_name().to_string_lossy().parse::<Agent>() else {
                continue;
            };
            let mut files = Vec::new();
            jsonl_files(&agent_dir.path(), &mut files);
            for (k, f) in files.iter().enumerate() {
                let text = std::fs::read_to_string(f).unwrap();
                let lines: Vec<&str> = text.split_inclusive('\n').collect();
                let db = dir.path().join(format!("{agent}-{k}.db"));
                let mut store = Store::open(&db).unwrap();
                let copy = dir.path().join(format!("{agent}-{k}.jsonl"));
                let mut out = std::fs::File::create(&copy).unwrap();
                let mut at = 0;
                while at < lines.len() {
                    let end = (at + 1 + at % 3).min(lines.len());
                    for l in &lines[at..end] {
                        out.write_all(l.as_bytes()).unwrap();
                    }
                    out.flush().unwrap();
                    at = end;
                    if crate::ingest::ingest_file(&mut store, agent, &copy, None).is_err() {
                        break;
                    }
                    for sid in store.session_rowids() {
                        // As a hook does, now and then (the snapshots below save the state).
                        if at % 2 == 0 {
                            store
                                .write(|w| w.advance_snapshot_state(sid, 1 + at % 5))
                                .unwrap();
                            let full = build_snapshot_full(&store, sid, 2048).unwrap();
                            let read = store.snapshot(sid, 2048).unwrap();
                            assert_eq!(read, full, "{}, line {at}, advanced", f.display());
                        }
                        for budget in [0, 40, 300, 2048, 16 * 1024] {
                            let full = build_snapshot_full(&store, sid, budget).unwrap();
                            let read = store.snapshot(sid, budget).unwrap();
                            assert_eq!(read, full, "{}, line {at}, budget {budget}", f.display());
                            let written = store.write(|w| w.snapshot(sid, budget)).unwrap();
                            assert_eq!(written, full, "{}, line {at}", f.display());
                            with_events += (full.events > 0) as usize;
                        }
                        steps += 1;
                    }
                }
            }
        }
        assert!(steps > 100 && with_events > 200, "{steps} {with_events}");
    }
}
