//! GitHub Copilot CLI: the reader, hook payloads, identity and discovery on the project's own
//! fixtures (`fixtures/copilotcli/`, described in its README and in
//! `docs/agents/copilotcli.md`). Expected values are read off the fixture by hand.

use crate::common;

use common::{Store, assert_split_equivalence_with, lines, messages, part_text};
use memtrail_adapters::copilotcli::{self, CopilotReader};
use memtrail_adapters::{
    Agent, Batch, Env, Error, Kind, LineReader, Message, ParseStats, Part, Role, ToolCall,
};
use std::path::{Path, PathBuf};

const SID: &str = "5b0c3e7a-91d4-4f2e-b8a6-2c7d9e1f4a30";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/copilotcli")
}

fn transcript() -> PathBuf {
    fixtures()
        .join("session-state")
        .join(SID)
        .join("events.jsonl")
}

fn read(lines: &[&[u8]]) -> Batch {
    let mut reader = CopilotReader::new();
    let mut batch = Batch::default();
    for l in lines {
        reader.line(l, &mut batch);
    }
    reader.finish(&mut batch);
    batch
}

fn call(m: &Message, i: usize) -> &ToolCall {
    match &m.parts[i] {
        Part::ToolCall(c) => c,
        other => panic!("part {i} of {} is not a call: {other:?}", m.id),
    }
}

#[test]
fn the_three_runs_in_one_pass() {
    let bytes = std::fs::read(transcript()).unwrap();
    let ls = lines(&bytes);
    assert_eq!(ls.len(), 49);
    let b = read(&ls);
    assert_eq!(
        b.stats,
        ParseStats {
            lines: 49,
            skipped_known: 29,
            skipped_unknown: 1,
            malformed: 0
        }
    );
    let ms = messages(&b);
    assert_eq!(
        ms.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        [
            "ev-user-1",
            "ev-asst-1",
            "ev-asst-2",
            "ev-asst-3",
            "ev-asst-4",
            "ev-user-2",
            "ev-asst-5",
            "ev-sub-asst-1",
            "ev-sub-asst-2",
            "ev-asst-6",
            "ev-compact-1",
        ]
    );
    use Role::{Assistant as A, System as S, User as U};
    assert_eq!(
        ms.iter().map(|m| m.role).collect::<Vec<_>>(),
        [U, A, A, A, A, U, A, A, A, A, S]
    );
    assert_eq!(
        ms.iter().map(|m| m.kind).collect::<Vec<_>>(),
        [
            Kind::Text,
            Kind::ToolCall,
            Kind::ToolCall,
            Kind::ToolCall,
            Kind::Text,
            Kind::Text,
            Kind::ToolCall,
            Kind::ToolCall,
            Kind::Text,
            Kind::Text,
            Kind::Summary,
        ]
    );
    // The typed prompt, not `transformedContent` with its `<current_datetime>`.
    assert_eq!(
        part_text(ms[0], 0),
        "Corrige le test qui échoue dans src/prix.rs"
    );
    assert_eq!(ms[0].timestamp, Some(1_773_478_801_000));
    // Thinking, text, then the shell call: exit code 101 although Copilot says success.
    assert_eq!(
        part_text(ms[1], 0),
        "The user wants the failing test fixed; run cargo test first."
    );
    assert!(matches!(ms[1].parts[0], Part::Thinking { .. }));
    assert_eq!(part_text(ms[1], 1), "Je lance d'abord les tests.");
    let c = call(ms[1], 2);
    assert_eq!(
        (c.id.as_str(), c.name.as_str(), c.tool.as_str()),
        ("toolu_01", "bash", "shell")
    );
    assert_eq!(c.input["command"], "cargo test prix");
    assert_eq!((c.exit_code, c.is_error), (Some(101), true));
    assert!(
        c.output
            .as_deref()
            .unwrap()
            .starts_with("test prix::arrondi ... FAILED\n")
    );
    assert_eq!(ms[1].model.as_deref(), Some("claude-sonnet-4.6"));
    // Two views in parallel: one read, one error with the error's message as output.
    let (ok, err) = (call(ms[2], 0), call(ms[2], 1));
    assert_eq!(
        (ok.tool.as_str(), ok.is_error, ok.exit_code),
        ("read", false, None)
    );
    assert_eq!(
        ok.output.as_deref(),
        Some("1. pub fn arrondi(x: f64) -> f64 {\n2.     (x * 100.0).round() / 100.0\n3. }")
    );
    assert_eq!(
        (err.is_error, err.output.as_deref()),
        (
            true,
            Some("Path does not exist: /home/dev/atelier/src/taux.rs")
        )
    );
    // `edit` and `create` (a new file: `write`).
    assert_eq!(part_text(ms[3], 0), "J'écris la correction.");
    assert_eq!(
        (call(ms[3], 1).tool.as_str(), call(ms[3], 2).tool.as_str()),
        ("edit", "write")
    );
    assert_eq!(call(ms[3], 2).name, "create");
    assert_eq!(
        part_text(ms[4], 0),
        "Corrigé : l'arrondi tronque désormais au centime."
    );
    // Second run: the Japanese prompt (the skill injection and the sub-agent's prompt are not
    // user messages), the sub-agent call and an MCP call.
    assert_eq!(
        part_text(ms[5], 0),
        "サブエージェントで残りのテストを確認して、memtrailで前回の作業も探して"
    );
    let (task, mcp) = (call(ms[6], 0), call(ms[6], 1));
    assert_eq!(
        (task.tool.as_str(), task.output.as_deref()),
        ("subagent", Some("All 14 tests pass."))
    );
    assert_eq!(
        (mcp.name.as_str(), mcp.tool.as_str(), mcp.output.as_deref()),
        (
            "memtrail-search",
            "mcp",
            Some("1 hit: session 5b0c3e7a … arrondi")
        )
    );
    let sub = call(ms[7], 0);
    assert_eq!(
        (sub.id.as_str(), sub.exit_code, sub.is_error),
        ("toolu_s1", Some(0), false)
    );
    assert_eq!(ms[7].model.as_deref(), Some("claude-haiku-4.5"));
    assert_eq!(part_text(ms[8], 0), "All 14 tests pass.");
    assert_eq!(part_text(ms[9], 0), "すべてのテストが通りました（14件）。");
    // Third run: the compaction's summary; the failed one and the snapshot of messages are not.
    assert_eq!(
        part_text(ms[10], 0),
        "Summary: the price rounding test in src/prix.rs was fixed (floor to the cent); all 14 tests pass."
    );
    assert_eq!(ms[10].timestamp, Some(1_773_480_003_000));
    assert!(
        b.records
            .iter()
            .all(|r| matches!(r, memtrail_adapters::Record::Message(_)))
    );

    assert_eq!(
        b.meta.title.as_deref(),
        Some("Corrige le test qui échoue dans src/prix.rs")
    );
    assert_eq!(b.meta.project_dir.as_deref(), Some("/home/dev/atelier"));
    assert_eq!(b.meta.agent_version.as_deref(), Some("1.0.102"));
    assert_eq!(b.meta.model.as_deref(), Some("claude-sonnet-4.6"));
    assert_eq!(
        (b.meta.started_at, b.meta.updated_at),
        (Some(1_773_478_800_000), Some(1_773_480_003_000))
    );
}

/// The session grows across hooks: read at the first `agentStop` (28 lines), at the second run's
/// end (43) and after the resume, with the reader's state carried over, it stores what one pass
/// stores; so does a cut at any line.
#[test]
fn a_session_that_grows_across_hooks_is_stored_once() {
    let bytes = std::fs::read(transcript()).unwrap();
    let ls = lines(&bytes);
    let make = || -> Box<dyn LineReader> { Box::new(CopilotReader::new()) };
    let whole = Store::read_in_pieces_with(&make, &ls, &[]);
    let grown = Store::read_in_pieces_with(&make, &ls, &[28, 43]);
    assert_eq!(grown, whole);
    assert_eq!(whole.messages.len(), 11);
    // The exit code of the first run's shell call survives a cut between call and result.
    let split = Store::read_in_pieces_with(&make, &ls, &[9]);
    let c = match &split.messages[1].parts[2] {
        Part::ToolCall(c) => c,
        other => panic!("{other:?}"),
    };
    assert_eq!((c.exit_code, c.is_error), (Some(101), true));
    assert_split_equivalence_with(&make, "copilotcli events.jsonl", &bytes);
}

#[test]
fn lines_written_another_way_still_parse() {
    // Keys in another order and spaces: the type is read from the parsed object.
    let l = br#"{ "id": "x1", "data": {"content": "salut"}, "type": "user.message", "timestamp": "2026-03-14T09:00:01.000Z" }"#;
    let b = read(&[&l[..]]);
    assert_eq!(messages(&b).len(), 1);
    assert_eq!(part_text(messages(&b)[0], 0), "salut");
    // Known bookkeeping in another order is known; garbage is malformed.
    let l2 = br#"{"data": {}, "type": "model.turn_started", "id": "x2"}"#;
    let b = read(&[&l2[..], b"{not json", b"[1,2]"]);
    assert_eq!(
        b.stats,
        ParseStats {
            lines: 3,
            skipped_known: 1,
            skipped_unknown: 0,
            malformed: 2
        }
    );
}

fn payload(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join("hooks").join(name)).unwrap()
}

#[test]
fn hook_payloads_name_their_event_by_their_fields() {
    let env = Env::sandbox(Path::new("/sandbox/home"));
    let t = format!("/home/dev/.copilot/session-state/{SID}/events.jsonl");
    let cases: [(&str, &str, Option<&str>, Option<&str>); 8] = [
        ("sessionStart.json", "sessionStart", None, Some("new")),
        (
            "sessionStart-resume.json",
            "sessionStart",
            None,
            Some("resume"),
        ),
        (
            "userPromptSubmitted.json",
            "userPromptSubmitted",
            None,
            None,
        ),
        ("agentStop.json", "agentStop", Some(&t), None),
        ("agentStop-subagent.json", "agentStop", Some(&t), None),
        ("subagentStop.json", "subagentStop", Some(&t), None),
        ("preCompact.json", "preCompact", Some(&t), Some("manual")),
        ("sessionEnd.json", "sessionEnd", None, Some("complete")),
    ];
    for (file, event, transcript, source) in cases {
        let ev = copilotcli::parse_hook_payload(&payload(file), &env).unwrap();
        assert_eq!(ev.agent, Agent::Copilotcli, "{file}");
        assert_eq!(ev.event, event, "{file}");
        // A sub-agent's stop names the sub-agent; the session is the transcript's.
        assert_eq!(ev.session_id.as_deref(), Some(SID), "{file}");
        assert_eq!(ev.transcript_path.as_deref(), transcript, "{file}");
        assert_eq!(ev.source.as_deref(), source, "{file}");
        assert_eq!(ev.cwd.as_deref(), Some("/home/dev/atelier"), "{file}");
    }
    let err = copilotcli::parse_hook_payload(&payload("vscode-foreign.json"), &env).unwrap_err();
    assert!(
        matches!(err, Error::ForeignPayload("VS Code Copilot", _)),
        "{err}"
    );
    assert!(matches!(
        copilotcli::parse_hook_payload(b" \n", &env),
        Err(Error::EmptyPayload)
    ));
    assert!(matches!(
        copilotcli::parse_hook_payload(b"[]", &env),
        Err(Error::PayloadNotObject)
    ));
    assert!(matches!(
        copilotcli::parse_hook_payload(b"{", &env),
        Err(Error::PayloadNotJson(_))
    ));
}

#[test]
fn transcripts_identity_and_discovery() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("session-state");
    let s1 = state.join(SID);
    std::fs::create_dir_all(&s1).unwrap();
    std::fs::copy(transcript(), s1.join("events.jsonl")).unwrap();
    std::fs::create_dir_all(state.join("0aa-no-events")).unwrap();
    std::fs::create_dir_all(state.join(".session-operation-locks")).unwrap();
    std::fs::write(state.join("stray.jsonl"), "{}\n").unwrap();
    let found = copilotcli::discover_in(&state).unwrap();
    assert_eq!(found.files, [s1.join("events.jsonl")]);
    assert!(found.unreadable.is_empty());
    assert!(
        copilotcli::discover_in(&tmp.path().join("none"))
            .unwrap()
            .files
            .is_empty()
    );

    let r = copilotcli::identify(&s1.join("events.jsonl")).unwrap();
    assert_eq!(
        (r.agent, r.external_id.as_str(), r.parent_external_id),
        (Agent::Copilotcli, SID, None)
    );
    assert!(copilotcli::identify(&state.join("stray.jsonl")).is_err());
    assert!(copilotcli::source_for(&state.join("stray.jsonl")).is_none());

    // sessionStart and sessionEnd name no transcript: the session's folder gives it.
    let env = Env::sandbox(tmp.path());
    let mut ev = copilotcli::parse_hook_payload(&payload("sessionEnd.json"), &env).unwrap();
    assert_eq!(
        copilotcli::transcripts_for_event_in(&ev, &state),
        [s1.join("events.jsonl")]
    );
    // A new session's start also catches up the session written last before it (whose final
    // answer Copilot wrote after that session's last hooks).
    let newer = state.join("7d1e0f2a-0000-4000-8000-000000000001");
    std::fs::create_dir_all(&newer).unwrap();
    let older = std::fs::File::open(s1.join("events.jsonl")).unwrap();
    older
        .set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000))
        .unwrap();
    std::fs::write(newer.join("events.jsonl"), "{}\n").unwrap();
    let start = copilotcli::parse_hook_payload(
        br#"{"sessionId":"8e2f1a3b-0000-4000-8000-000000000002","timestamp":1,"cwd":"/p","source":"new"}"#,
        &env,
    )
    .unwrap();
    assert_eq!(
        copilotcli::transcripts_for_event_in(&start, &state),
        [newer.join("events.jsonl")]
    );
    // Its own transcript first when it has one (a resume); never itself twice.
    let mut resume = start.clone();
    resume.session_id = Some(SID.into());
    assert_eq!(
        copilotcli::transcripts_for_event_in(&resume, &state),
        [s1.join("events.jsonl"), newer.join("events.jsonl")]
    );
    resume.session_id = Some("7d1e0f2a-0000-4000-8000-000000000001".into());
    assert_eq!(
        copilotcli::transcripts_for_event_in(&resume, &state),
        [newer.join("events.jsonl"), s1.join("events.jsonl")]
    );
    // Other events look at their own session only.
    assert_eq!(
        copilotcli::transcripts_for_event_in(&ev, &state),
        [s1.join("events.jsonl")]
    );
    ev.session_id = Some("../escape".into());
    assert!(copilotcli::transcripts_for_event_in(&ev, &state).is_empty());
    // A session not written yet: at its end (this sessionEnd) the hook still names its file,
    // as Copilot may write it only after the hook ran (the hook leaves a wait for it); any
    // other event of it has nothing to read.
    ev.session_id = Some("unknown-session".into());
    assert_eq!(
        copilotcli::transcripts_for_event_in(&ev, &state),
        [state.join("unknown-session/events.jsonl")]
    );
    ev.event = "agentStop".into();
    assert!(copilotcli::transcripts_for_event_in(&ev, &state).is_empty());
}

#[test]
fn session_start_reply_is_additional_context() {
    assert_eq!(
        copilotcli::session_start_reply("keep \"this\"\nline").as_deref(),
        Some(r#"{"additionalContext":"keep \"this\"\nline"}"#)
    );
}
