//! Qwen Code: the reader, hook payloads, identity and discovery on the project's own fixtures
//! (`fixtures/qwen/`, described in its README and in `docs/agents/qwen.md`). Expected values
//! are read off the fixture by hand.

use crate::common;

use common::{Store, assert_split_equivalence_with, lines, messages, part_text};
use memtrail_adapters::qwen::{self, QwenReader};
use memtrail_adapters::{
    Agent, Batch, Env, Error, Kind, LineReader, Message, ParseStats, Part, Record, Role, ToolCall,
};
use std::path::{Path, PathBuf};

const SID: &str = "7c1e4b2a-5d3f-4e8a-9b6c-0a1d2e3f4a5b";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/qwen")
}

fn transcript() -> PathBuf {
    fixtures()
        .join("projects/-home-user-demo/chats")
        .join(format!("{SID}.jsonl"))
}

fn subagent() -> PathBuf {
    fixtures()
        .join("projects/-home-user-demo/subagents")
        .join(SID)
        .join("agent-explore-1.jsonl")
}

fn read(lines: &[&[u8]]) -> Batch {
    let mut reader = QwenReader::new();
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

fn make() -> Box<dyn LineReader> {
    Box::new(QwenReader::new())
}

/// 2026-03-14T09:00:00Z in ms; the fixture's line N is written N seconds later.
const T0: i64 = 1_773_478_800_000;

fn shell_out(cmd: &str, out: &str, code: i64) -> String {
    format!(
        "Command: {cmd}\nDirectory: (root)\nOutput: {out}\nError: (none)\nExit Code: {code}\nSignal: (none)\nProcess Group PGID: (none)"
    )
}

#[test]
fn the_three_runs_in_one_pass() {
    let bytes = std::fs::read(transcript()).unwrap();
    let ls = lines(&bytes);
    assert_eq!(ls.len(), 33);
    let b = read(&ls);
    // 7 bookkeeping system records, 1 record of an unknown type; the 6 tool_result records
    // become results.
    assert_eq!(
        b.stats,
        ParseStats {
            lines: 33,
            skipped_known: 7,
            skipped_unknown: 1,
            malformed: 0
        }
    );
    // The rewind (line 19) comes after the two messages it drops.
    let rewinds: Vec<_> = b
        .records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Record::Rewind { message_id } => Some((i, message_id.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(rewinds.len(), 1);
    assert_eq!(rewinds[0].1, "u-3");
    let results = b
        .records
        .iter()
        .filter(|r| matches!(r, Record::ToolResult { .. }))
        .count();
    assert_eq!(results, 6);

    let mut store = Store::default();
    store.apply(b.clone());
    assert!(store.orphans.is_empty());
    let ms: Vec<&Message> = store.messages.iter().collect();
    assert_eq!(
        ms.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        [
            "u-1",
            "a-1",
            "a-2",
            "a-3",
            "a-4",
            "u-2",
            "a-5",
            "u-4",
            "a-7",
            "a-8",
            "s-compress-1",
            "u-5",
            "a-9",
            "a-10",
            "u-6",
            "a-11",
        ]
    );
    use Role::{Assistant as A, System as S, User as U};
    assert_eq!(
        ms.iter().map(|m| m.role).collect::<Vec<_>>(),
        [U, A, A, A, A, U, A, U, A, A, S, U, A, A, S, A]
    );
    use Kind::{Summary as Sum, Text as T, ToolCall as C};
    assert_eq!(
        ms.iter().map(|m| m.kind).collect::<Vec<_>>(),
        [T, C, C, C, T, T, T, T, C, T, Sum, T, T, C, T, T]
    );
    assert_eq!(
        part_text(ms[0], 0),
        "Liste les fichiers puis corrige le test qui échoue"
    );
    assert_eq!(ms[0].timestamp, Some(T0 + 1_000));
    // Thought, text, then the shell call with its output and exit code 0.
    assert!(matches!(ms[1].parts[0], Part::Thinking { .. }));
    assert_eq!(part_text(ms[1], 0), "I should list the files first.");
    assert_eq!(part_text(ms[1], 1), "Je regarde le projet.");
    assert_eq!(ms[1].model.as_deref(), Some("qwen3-coder-plus"));
    let c = call(ms[1], 2);
    assert_eq!(
        (c.id.as_str(), c.name.as_str(), c.tool.as_str()),
        ("call_ls", "run_shell_command", "shell")
    );
    assert_eq!(c.input["command"], "ls");
    assert_eq!(
        c.output.as_deref(),
        Some(&*shell_out("ls", "Cargo.toml\nsrc", 0))
    );
    assert_eq!((c.exit_code, c.is_error), (Some(0), false));
    // The failing test: `response.error`, exit code 101.
    let c = call(ms[2], 0);
    assert_eq!(
        c.output.as_deref(),
        Some(&*shell_out(
            "cargo test prix",
            "test prix::arrondi ... FAILED",
            101
        ))
    );
    assert_eq!((c.exit_code, c.is_error), (Some(101), true));
    // Two calls in one message: a read, and an edit that failed (no exit code).
    let (r, e) = (call(ms[3], 0), call(ms[3], 1));
    assert_eq!(
        (r.tool.as_str(), r.is_error, r.exit_code),
        ("read", false, None)
    );
    assert_eq!(
        r.output.as_deref(),
        Some("pub fn arrondi(x: f64) -> f64 {\n    x.round()\n}")
    );
    assert_eq!(
        (e.tool.as_str(), e.is_error, e.exit_code),
        ("edit", true, None)
    );
    assert_eq!(
        e.output.as_deref(),
        Some("Failed to edit, 0 occurrences found for old_string in /home/user/demo/src/prix.rs.")
    );
    assert_eq!(part_text(ms[5], 0), "日本語で変更を説明してください");
    assert_eq!(
        part_text(ms[6], 0),
        "`arrondi` は小数点以下二桁に丸めるようになりました。"
    );
    // After the rewind: the new prompt and its shell call.
    assert_eq!(part_text(ms[7], 0), "lance plutôt clippy");
    assert_eq!(ms[7].timestamp, Some(T0 + 21_000));
    assert_eq!(call(ms[8], 0).exit_code, Some(0));
    assert_eq!(part_text(ms[9], 0), "Clippy ne signale rien. ✅");
    // The compaction summary without Qwen Code's resume sentence.
    assert_eq!(
        part_text(ms[10], 0),
        "<state_snapshot>\n<overall_goal>Fix arrondi in src/prix.rs</overall_goal>\n\
         <current_plan>1. [DONE] fix rounding 2. [TODO] benchmarks</current_plan>\n</state_snapshot>"
    );
    assert_eq!(ms[10].parts.len(), 1);
    // The hook context part of the prompt is left out.
    assert_eq!(ms[11].parts.len(), 1);
    assert_eq!(part_text(ms[11], 0), "continue avec la doc");
    // Two fragments of one record: one message, both texts.
    assert_eq!(ms[12].parts.len(), 2);
    assert_eq!(
        part_text(ms[12], 0),
        "Je cherche d'abord dans l'historique."
    );
    assert_eq!(part_text(ms[12], 1), "Puis j'écris la doc.");
    // memtrail's MCP tool, deferred: called through `tool_call`.
    let c = call(ms[13], 0);
    assert_eq!(c.input["name"], "mcp__memtrail__search");
    assert_eq!(
        (c.name.as_str(), c.tool.as_str(), c.output.as_deref()),
        (
            "tool_call",
            "mcp",
            Some("1 hit: session 7c1e4b2a, arrondi fixed")
        )
    );
    // A notification Qwen Code injects as a user record: role System.
    assert_eq!(
        part_text(ms[14], 0),
        "Background task bg-1 finished: cargo doc"
    );

    let m = &store.meta;
    assert_eq!(
        m.title.as_deref(),
        Some("Liste les fichiers puis corrige le test qui échoue")
    );
    assert_eq!(m.project_dir.as_deref(), Some("/home/user/demo"));
    assert_eq!(m.model.as_deref(), Some("qwen3-coder-plus"));
    assert_eq!(m.git_branch.as_deref(), Some("main"));
    assert_eq!(m.agent_version.as_deref(), Some("0.24.4"));
    assert_eq!(
        (m.started_at, m.updated_at),
        (Some(T0 + 1_000), Some(T0 + 31_000))
    );
}

/// The session grows across hooks: read at the first `Stop` (14 lines), at the Stop before the
/// rewind (18: the dropped turn is stored), after the rewind (24) and at the end, with the
/// reader's state carried over, it stores what one pass stores; so does a cut at any line, and
/// at every line.
#[test]
fn a_session_that_grows_across_hooks_is_stored_once() {
    let bytes = std::fs::read(transcript()).unwrap();
    let ls = lines(&bytes);
    let whole = Store::read_in_pieces_with(&make, &ls, &[]);
    let grown = Store::read_in_pieces_with(&make, &ls, &[14, 18, 24]);
    assert_eq!(grown, whole);
    assert_eq!(whole.messages.len(), 16);
    // What the Stop before the rewind sees: 9 messages, the last two of them dropped later.
    let before = Store::read_in_pieces_with(&make, &ls[..18], &[14]);
    assert_eq!(
        before
            .messages
            .iter()
            .map(|m| m.id.as_str())
            .collect::<Vec<_>>(),
        [
            "u-1", "a-1", "a-2", "a-3", "a-4", "u-2", "a-5", "u-3", "a-6"
        ]
    );
    assert_split_equivalence_with(&make, "qwen chats jsonl", &bytes);
}

/// A rewind to the very first prompt (`parentUuid: null`) drops everything stored; a record
/// whose parent is not on the chain (older than what the reader keeps) drops nothing.
#[test]
fn rewinds_to_the_root_and_to_an_unknown_parent() {
    let rec = |uuid: &str, parent: Option<&str>, text: &str| -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "uuid": uuid, "parentUuid": parent, "sessionId": SID, "type": "user",
            "timestamp": "2026-03-14T09:00:01.000Z",
            "message": {"role": "user", "parts": [{"text": text}]},
        }))
        .unwrap()
    };
    let l1 = rec("p1", None, "un");
    let l2 = rec("p2", Some("p1"), "deux");
    let l3 = rec("p3", None, "trois");
    let l4 = rec("p4", Some("elsewhere"), "quatre");
    let b = read(&[&l1, &l2, &l3, &l4]);
    let mut store = Store::default();
    store.apply(b);
    assert_eq!(
        store
            .messages
            .iter()
            .map(|m| m.id.as_str())
            .collect::<Vec<_>>(),
        ["p3", "p4"]
    );
}

#[test]
fn lines_written_another_way_still_parse() {
    // Keys in another order and spaces.
    let l = br#"{ "type": "user", "message": {"parts": [{"text": "salut"}], "role": "user"}, "sessionId": "s", "parentUuid": null, "uuid": "k1" }"#;
    let b = read(&[&l[..]]);
    assert_eq!(messages(&b).len(), 1);
    assert_eq!(part_text(messages(&b)[0], 0), "salut");
    // No uuid, garbage, an array: malformed; an empty assistant record: known.
    let no_id = br#"{"type": "user", "message": {"parts": [{"text": "x"}]}}"#;
    let empty = br#"{"uuid": "k2", "parentUuid": "k1", "type": "assistant", "message": {"role": "model", "parts": []}}"#;
    let b = read(&[&no_id[..], b"{not json", b"[1,2]", &empty[..]]);
    assert_eq!(
        b.stats,
        ParseStats {
            lines: 4,
            skipped_known: 1,
            skipped_unknown: 0,
            malformed: 3
        }
    );
}

fn payload(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join("hooks").join(name)).unwrap()
}

#[test]
fn hook_payloads() {
    let env = Env::sandbox("/home/user");
    let t = format!("/home/user/.qwen/projects/-home-user-demo/chats/{SID}.jsonl");
    for (file, event, source) in [
        ("SessionStart.json", "SessionStart", Some("startup")),
        ("SessionStart-resume.json", "SessionStart", Some("resume")),
        ("SessionStart-compact.json", "SessionStart", Some("compact")),
        ("Stop.json", "Stop", None),
        ("PreCompact.json", "PreCompact", Some("auto")),
        ("SessionEnd.json", "SessionEnd", Some("prompt_input_exit")),
    ] {
        let ev = qwen::parse_hook_payload(&payload(file), &env).unwrap();
        assert_eq!(ev.agent, Agent::Qwen, "{file}");
        assert_eq!(ev.event, event, "{file}");
        assert_eq!(ev.session_id.as_deref(), Some(SID), "{file}");
        assert_eq!(ev.transcript_path.as_deref(), Some(t.as_str()), "{file}");
        assert_eq!(ev.cwd.as_deref(), Some("/home/user/demo"), "{file}");
        assert_eq!(ev.source.as_deref(), source, "{file}");
    }
    let ev = qwen::parse_hook_payload(&payload("Stop-no-recording.json"), &env).unwrap();
    assert_eq!(ev.transcript_path, None);
    assert!(matches!(
        qwen::parse_hook_payload(b" \n", &env),
        Err(Error::EmptyPayload)
    ));
    assert!(matches!(
        qwen::parse_hook_payload(b"[]", &env),
        Err(Error::PayloadNotObject)
    ));
    assert!(matches!(
        qwen::parse_hook_payload(b"{", &env),
        Err(Error::PayloadNotJson(_))
    ));
    assert_eq!(
        qwen::session_start_reply("a <b> & c").unwrap(),
        r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"a <b> & c"}}"#
    );
}

#[test]
fn transcripts_identity_and_discovery() {
    let s = qwen::identify(&transcript()).unwrap();
    assert_eq!((s.agent, s.external_id.as_str()), (Agent::Qwen, SID));
    assert!(qwen::identify(Path::new("/x/chats/a.runtime.json")).is_err());
    assert!(qwen::identify(Path::new("/x/other/a.jsonl")).is_err());
    let found = qwen::discover_in(&fixtures().join("projects")).unwrap();
    assert_eq!(found.files, [transcript(), subagent()]);
    assert!(found.unreadable.is_empty());
    assert!(
        qwen::discover_in(&fixtures().join("nothing-here"))
            .unwrap()
            .files
            .is_empty()
    );
    // A payload without transcript_path (chat recording off): the session's file under the
    // project folder of its cwd when it exists, else nothing.
    let env = Env::sandbox("/home/user");
    let mut ev = qwen::parse_hook_payload(&payload("Stop-no-recording.json"), &env).unwrap();
    assert_eq!(
        qwen::transcripts_for_event_in(&ev, &fixtures().join("projects")),
        [transcript(), subagent()]
    );
    ev.cwd = Some("/home/user/other".into());
    assert!(qwen::transcripts_for_event_in(&ev, &fixtures().join("projects")).is_empty());
    let ev = qwen::parse_hook_payload(&payload("Stop.json"), &env).unwrap();
    assert_eq!(
        qwen::transcripts_for_event_in(&ev, Path::new("/nowhere")),
        [PathBuf::from(format!(
            "/home/user/.qwen/projects/-home-user-demo/chats/{SID}.jsonl"
        ))]
    );
}

/// A `SessionStart` also ingests the transcript written last among the other sessions of the
/// same project (its final answer may have reached the file after its `Stop` hook ran); other
/// events, and other projects' sessions, do not.
#[test]
fn a_session_start_catches_up_the_previous_session_of_its_project() {
    let tmp = tempfile::tempdir().unwrap();
    let projects = tmp.path().join("projects");
    let chats = projects.join("-home-user-demo/chats");
    let elsewhere = projects.join("-home-user-other/chats");
    std::fs::create_dir_all(&chats).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let (older, newer, theirs) = (
        chats.join("aaaa.jsonl"),
        chats.join("bbbb.jsonl"),
        elsewhere.join("cccc.jsonl"),
    );
    std::fs::write(&older, "{}\n").unwrap();
    std::fs::write(chats.join("bbbb.runtime.json"), "{}").unwrap();
    let set = |p: &Path, secs: u64| {
        let f = std::fs::File::options().write(true).open(p).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
            .unwrap();
    };
    std::fs::write(&newer, "{}\n").unwrap();
    std::fs::write(&theirs, "{}\n").unwrap();
    set(&older, 1_000);
    set(&newer, 2_000);
    set(&theirs, 3_000);
    let env = Env::sandbox("/home/user");
    let mut ev = qwen::parse_hook_payload(&payload("SessionStart.json"), &env).unwrap();
    let current = chats.join(format!("{SID}.jsonl"));
    ev.transcript_path = Some(current.to_str().unwrap().to_string());
    assert_eq!(
        qwen::transcripts_for_event_in(&ev, &projects),
        [current.clone(), newer.clone()]
    );
    // The newest is the session starting itself (a resume): the one before it.
    ev.session_id = Some("bbbb".into());
    ev.transcript_path = Some(newer.to_str().unwrap().to_string());
    assert_eq!(
        qwen::transcripts_for_event_in(&ev, &projects),
        [newer.clone(), older.clone()]
    );
    // Stop: its own transcript only.
    let mut stop = qwen::parse_hook_payload(&payload("Stop.json"), &env).unwrap();
    stop.transcript_path = Some(current.to_str().unwrap().to_string());
    assert_eq!(qwen::transcripts_for_event_in(&stop, &projects), [current]);
    assert_eq!(qwen::latest_other(&tmp.path().join("none"), None), None);
}

/// A sub-agent's transcript: its own session (`<parent>/agent-<id>`, parent the session that
/// ran it), read like a main one, found by discovery and by the parent's hooks.
#[test]
fn a_sub_agent_transcript() {
    let s = qwen::identify(&subagent()).unwrap();
    assert_eq!(s.external_id, format!("{SID}/agent-explore-1"));
    assert_eq!(s.parent_external_id.as_deref(), Some(SID));
    assert!(qwen::source_for(&subagent()).is_some());
    assert!(qwen::identify(Path::new("/x/subagents/s/notes.jsonl")).is_err());
    let bytes = std::fs::read(subagent()).unwrap();
    let b = read(&lines(&bytes));
    let mut store = Store::default();
    store.apply(b);
    let ms = &store.messages;
    assert_eq!(
        ms.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        ["sub-u-1", "sub-a-1", "sub-a-2"]
    );
    assert_eq!(part_text(&ms[0], 0), "Trouve où `arrondi` est défini");
    let c = call(&ms[1], 0);
    assert_eq!((c.tool.as_str(), c.is_error), ("search", false));
    assert_eq!(
        c.output.as_deref(),
        Some("src/prix.rs:1:pub fn arrondi(x: f64) -> f64 {")
    );
    // A SubagentStop names it; the parent's Stop lists it from the session's folder.
    let env = Env::sandbox("/home/user");
    let mut ev = qwen::parse_hook_payload(&payload("Stop.json"), &env).unwrap();
    ev.transcript_path = Some(transcript().to_str().unwrap().to_string());
    assert_eq!(
        qwen::transcripts_for_event_in(&ev, Path::new("/nowhere")),
        [transcript(), subagent()]
    );
    ev.event = "SubagentStop".into();
    ev.agent_transcript_path = Some("/elsewhere/agent-x.jsonl".into());
    assert_eq!(
        qwen::transcripts_for_event_in(&ev, Path::new("/nowhere")),
        [
            transcript(),
            subagent(),
            PathBuf::from("/elsewhere/agent-x.jsonl")
        ]
    );
}
