//! Codex hook payloads (`hooks.json` events on stdin, the legacy `notify` JSON in argv), the
//! SessionStart reply, finding a rollout for a hook, and rollout identity and discovery.
//! Sources: `docs/agents/codex.md#hooks`, `docs/agents/codex.md#notify`, upstream
//! `codex-rs/hooks/src/legacy_notify.rs` and `codex-rs/hooks/schema/generated/`.

use memtrail_adapters::codex::{
    self, SourceKind, discover_in, find_rollouts, parse_hook_payload, parse_notify_argv,
    session_start_reply, thread_id_from_file_name, transcripts_for_event_in,
};
use memtrail_adapters::{Agent, HookEvent, SessionRef};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const LEGACY_ID: &str = "019ceb9e-6984-7a3c-a9b4-1e2d07f85c61";
const PAGINATED_ID: &str = "01a0c4b4-ef41-7b8e-a2a5-c37d19f04e6a";

/// A hook process's environment with no variable set.
fn no_env() -> memtrail_adapters::Env {
    memtrail_adapters::Env::sandbox("/")
}

fn own(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/codex")
        .join(name)
}

fn put(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn put_fixture(home: &Path, rel: &str, fixture: &str) -> PathBuf {
    let p = home.join(rel);
    put(&p, &std::fs::read(own(fixture)).unwrap());
    p
}

fn payload(v: &Value) -> Vec<u8> {
    v.to_string().into_bytes()
}

// ---- hooks.json payloads (stdin) ----

#[test]
fn hook_payloads_for_each_codex_event() {
    let base = |event: &str, extra: Value| {
        let mut v = json!({
            "session_id": PAGINATED_ID,
            "transcript_path": "/home/u/.codex/sessions/2026/09/22/rollout-2026-09-22T01-03-07-x.jsonl",
            "cwd": "/home/u/src/tomlette",
            "hook_event_name": event,
            "model": "gpt-5.6-terra",
        });
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    let cases = [
        (
            base("SessionStart", json!({"source": "compact"})),
            Some("compact"),
        ),
        (
            base(
                "UserPromptSubmit",
                json!({"turn_id": "t1", "prompt": "hi", "permission_mode": "default"}),
            ),
            None,
        ),
        (
            base("PreCompact", json!({"turn_id": "t1", "trigger": "manual"})),
            Some("manual"),
        ),
        (
            base(
                "Stop",
                json!({"turn_id": "t1", "stop_hook_active": false, "last_assistant_message": "done"}),
            ),
            None,
        ),
    ];
    for (v, source) in cases {
        let ev = parse_hook_payload(&payload(&v), &no_env()).unwrap();
        assert_eq!(
            ev,
            HookEvent {
                agent: Agent::Codex,
                event: v["hook_event_name"].as_str().unwrap().into(),
                session_id: Some(PAGINATED_ID.into()),
                transcript_path: v["transcript_path"].as_str().map(str::to_string),
                cwd: Some("/home/u/src/tomlette".into()),
                source: source.map(str::to_string),
                agent_transcript_path: None,
                extra: v.clone(),
            }
        );
    }
    // SubagentStop carries the child's rollout as well.
    let v = base(
        "SubagentStop",
        json!({"agent_id": "a1", "agent_type": "worker", "agent_transcript_path": "/x/child.jsonl"}),
    );
    let ev = parse_hook_payload(&payload(&v), &no_env()).unwrap();
    assert_eq!(ev.agent_transcript_path.as_deref(), Some("/x/child.jsonl"));
    // `transcript_path: null` and no cwd: no path; cwd from PWD.
    let v = json!({"session_id": "s", "transcript_path": null, "hook_event_name": "SessionStart", "source": "startup"});
    let env = memtrail_adapters::Env::sandbox("/").with_var("PWD", "/work/dir");
    let ev = parse_hook_payload(&payload(&v), &env).unwrap();
    assert_eq!(
        (ev.transcript_path, ev.cwd, ev.source),
        (None, Some("/work/dir".into()), Some("startup".into()))
    );
    // A BOM and surrounding whitespace are tolerated.
    let mut b = b"\xEF\xBB\xBF \n".to_vec();
    b.extend(payload(
        &json!({"hook_event_name": "Stop", "session_id": "s"}),
    ));
    assert_eq!(parse_hook_payload(&b, &no_env()).unwrap().event, "Stop");
}

#[test]
fn hook_payload_errors() {
    for bad in [
        &b""[..],
        b"  \n",
        b"not json",
        b"[1,2]",
        b"\"Stop\"",
        b"{\"a\":",
    ] {
        assert!(
            parse_hook_payload(bad, &no_env()).is_err(),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

// ---- notify (argv) ----

#[test]
fn notify_argv_payload() {
    // The payload upstream's own test expects (codex-rs/hooks/src/legacy_notify.rs).
    let arg = json!({
        "type": "agent-turn-complete",
        "thread-id": "b5f6c1c2-1111-2222-3333-444455556666",
        "turn-id": "12345",
        "cwd": "/Users/example/project",
        "client": "codex-tui",
        "input-messages": ["Rename `foo` to `bar` and update the callsites."],
        "last-assistant-message": "Rename complete and verified `cargo build` succeeds.",
    })
    .to_string();
    let ev = parse_notify_argv(&arg).unwrap();
    assert_eq!(
        ev,
        HookEvent {
            agent: Agent::Codex,
            event: "agent-turn-complete".into(),
            session_id: Some("b5f6c1c2-1111-2222-3333-444455556666".into()),
            transcript_path: None,
            cwd: Some("/Users/example/project".into()),
            source: None,
            agent_transcript_path: None,
            extra: serde_json::from_str(&arg).unwrap(),
        }
    );
    assert_eq!(ev.extra["turn-id"], json!("12345"));
    // The same JSON arriving on stdin is read the same way.
    assert_eq!(parse_hook_payload(arg.as_bytes(), &no_env()).unwrap(), ev);
    // `last-assistant-message` may be null; `client` is optional.
    let ev = parse_notify_argv(
        r#"{"type":"agent-turn-complete","thread-id":"t","turn-id":"1","cwd":"/p","input-messages":[],"last-assistant-message":null}"#,
    )
    .unwrap();
    assert_eq!(
        (
            ev.session_id.as_deref(),
            ev.extra["last-assistant-message"].clone()
        ),
        (Some("t"), Value::Null)
    );
    // Another type is returned for the caller to ignore.
    assert_eq!(
        parse_notify_argv(r#"{"type":"x-future"}"#).unwrap().event,
        "x-future"
    );
    for bad in ["", "not json", "[]", "{}", r#"{"type":1}"#] {
        assert!(parse_notify_argv(bad).is_err(), "{bad}");
    }
}

#[test]
fn session_start_reply_shape() {
    let reply = session_start_reply("Resume: fix the \"slug\" tests\nnext line").unwrap();
    assert_eq!(
        reply,
        r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"Resume: fix the \"slug\" tests\nnext line"}}"#
    );
    let v: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(v.as_object().unwrap().len(), 1);
}

// ---- which rollout to ingest for a hook ----

fn notify_event(thread: &str) -> HookEvent {
    parse_notify_argv(
        &json!({"type": "agent-turn-complete", "thread-id": thread, "turn-id": "t", "cwd": "/p",
                "input-messages": [], "last-assistant-message": null})
        .to_string(),
    )
    .unwrap()
}

#[test]
fn transcripts_for_an_event() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    // The paginated session started 2026-09-21T16:03Z; in Tokyo that is the 22nd, 01:03, so the
    // file is in the 09/22 folder while its UUIDv7 says the 21st (found at day + 1).
    let p = put_fixture(
        h,
        &format!("sessions/2026/09/22/rollout-2026-09-22T01-03-07-{PAGINATED_ID}.jsonl"),
        "paginated-turn3.jsonl",
    );
    let l = put_fixture(
        h,
        &format!("sessions/2026/03/14/rollout-2026-03-14T10-12-33-{LEGACY_ID}.jsonl"),
        "legacy-turn3.jsonl",
    );
    put(&h.join("sessions/2026/03/14/notes.txt"), b"x");
    assert_eq!(
        transcripts_for_event_in(&notify_event(PAGINATED_ID), h),
        std::slice::from_ref(&p)
    );
    assert_eq!(transcripts_for_event_in(&notify_event(LEGACY_ID), h), [l]);

    // A hook payload with a path: that path (not checked), then a SubagentStop child.
    let mut ev = parse_hook_payload(
        br#"{"hook_event_name":"SubagentStop","session_id":"s","transcript_path":"/a.jsonl","agent_transcript_path":"/b.jsonl"}"#,
        &no_env(),
    )
    .unwrap();
    assert_eq!(
        transcripts_for_event_in(&ev, h),
        [PathBuf::from("/a.jsonl"), PathBuf::from("/b.jsonl")]
    );
    // A null path falls back to the session id.
    ev.transcript_path = None;
    ev.agent_transcript_path = None;
    ev.session_id = Some(PAGINATED_ID.into());
    assert_eq!(transcripts_for_event_in(&ev, h), [p]);
    // Nothing to go on, an unknown id, an id that is not a plain token, a missing home.
    ev.session_id = None;
    assert!(transcripts_for_event_in(&ev, h).is_empty());
    assert!(
        transcripts_for_event_in(&notify_event("019c0000-0000-7000-8000-000000000000"), h)
            .is_empty()
    );
    assert!(transcripts_for_event_in(&notify_event("../../etc/passwd"), h).is_empty());
    assert!(find_rollouts(&h.join("missing"), PAGINATED_ID).is_empty());
    assert!(find_rollouts(h, "").is_empty());
}

#[test]
fn find_rollouts_reverted_archived_and_newest_first() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    // A reverted thread gets `_<rollout id>` after the thread id.
    let rev = h.join("sessions/2026/09/21/rollout-2026-09-21T18-00-00-01a0c4b4-ef41-7b8e-a2a5-c37d19f04e6a_01a0c500-0000-7000-8000-000000000001.jsonl");
    let orig = h.join(format!(
        "sessions/2026/09/21/rollout-2026-09-21T17-03-07-{PAGINATED_ID}.jsonl"
    ));
    put(&rev, b"{}\n");
    put(&orig, b"{}\n");
    // A name that merely contains the id elsewhere does not match.
    put(
        &h.join(format!(
            "sessions/2026/09/21/rollout-x-{PAGINATED_ID}-copy.jsonl"
        )),
        b"{}\n",
    );
    assert_eq!(find_rollouts(h, PAGINATED_ID), [orig, rev]);
    // Ids that are not UUIDv7: newest day folder with a match wins.
    let newer = h.join("sessions/2026/02/22/rollout-2026-02-22T10-29-15-test-session-001.jsonl");
    let older = h.join("sessions/2026/01/03/rollout-2026-01-03T10-29-15-test-session-001.jsonl");
    put(&newer, b"{}\n");
    put(&older, b"{}\n");
    assert_eq!(find_rollouts(h, "test-session-001"), [newer]);
    // Archived rollouts (flat folder) are found last.
    let arch = h.join("archived_sessions/rollout-2025-12-01T08-00-00-old-thread.jsonl");
    put(&arch, b"{}\n");
    assert_eq!(find_rollouts(h, "old-thread"), [arch]);
}

#[test]
fn find_rollouts_is_bounded_but_uuid_v7_ids_jump_to_their_day() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let old_v7 = h.join(format!(
        "sessions/2026/03/14/rollout-2026-03-14T10-12-33-{LEGACY_ID}.jsonl"
    ));
    let old_plain = h.join("sessions/2026/03/14/rollout-2026-03-14T10-12-33-plain-id.jsonl");
    put(&old_v7, b"{}\n");
    put(&old_plain, b"{}\n");
    // 1101 newer day folders (2027-01-01 onward) exceed the 1100-folder scan.
    let first = memtrail_adapters::days_from_civil(2027, 1, 1);
    for day in first..first + 1101 {
        let (y, m, d) = memtrail_adapters::civil_from_days(day);
        std::fs::create_dir_all(h.join(format!("sessions/{y:04}/{m:02}/{d:02}"))).unwrap();
    }
    assert_eq!(
        find_rollouts(h, LEGACY_ID),
        [old_v7],
        "found from the UUID's day"
    );
    assert!(find_rollouts(h, "plain-id").is_empty(), "beyond the bound");
}

// ---- identity and discovery ----

fn sref(id: &str, parent: Option<&str>) -> SessionRef {
    SessionRef {
        agent: Agent::Codex,
        external_id: id.into(),
        parent_external_id: parent.map(str::to_string),
    }
}

#[test]
fn identify_rollouts() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let l = put_fixture(
        h,
        &format!("sessions/2026/03/14/rollout-2026-03-14T10-12-33-{LEGACY_ID}.jsonl"),
        "legacy-turn1.jsonl",
    );
    assert_eq!(codex::identify(&l).unwrap(), sref(LEGACY_ID, None));
    // The id inside wins over the name.
    let p = put_fixture(h, "elsewhere/renamed.jsonl", "paginated-turn1.jsonl");
    assert_eq!(codex::identify(&p).unwrap(), sref(PAGINATED_ID, None));

    // Sub-agent threads: top-level parent_thread_id, or inside `source`.
    let child = h.join("c1.jsonl");
    put(
        &child,
        format!("{}\n", json!({"timestamp": "t", "type": "session_meta", "payload": {"id": "child-1", "parent_thread_id": "parent-1", "cwd": "/p"}})).as_bytes(),
    );
    assert_eq!(
        codex::identify(&child).unwrap(),
        sref("child-1", Some("parent-1"))
    );
    put(
        &child,
        json!({"type": "session_meta", "payload": {"id": "child-2", "source": {"subagent": {"thread_spawn": {"parent_thread_id": "parent-2", "depth": 1}}}}}).to_string().as_bytes(),
    );
    assert_eq!(
        codex::identify(&child).unwrap(),
        sref("child-2", Some("parent-2"))
    );
    // The first format's bare meta line.
    put(&child, br#"{"id":"0198aa00-1111-7222-8333-444455556666","timestamp":"2025-07-01T10:00:00.000Z","instructions":null}"#);
    assert_eq!(
        codex::identify(&child).unwrap(),
        sref("0198aa00-1111-7222-8333-444455556666", None)
    );

    // Unreadable content: the name gives the id (a reverted name: the part before `_`).
    let garbage = h.join("rollout-2026-09-21T18-00-00-abc-123_def-456.jsonl");
    put(&garbage, b"\xff\xfe not json\n");
    assert_eq!(codex::identify(&garbage).unwrap(), sref("abc-123", None));
    // A first line longer than 1 MiB: the name, else a plain search for "id".
    let huge = format!(
        "{{\"timestamp\":\"t\",\"type\":\"session_meta\",\"payload\":{{\"session_id\":\"root-9\",\"id\":\"big-1\",\"base_instructions\":{{\"text\":\"{}\"}}}}}}\n",
        "x".repeat(1_200_000)
    );
    let named = h.join("rollout-2026-01-01T00-00-00-name-id.jsonl");
    put(&named, huge.as_bytes());
    assert_eq!(codex::identify(&named).unwrap(), sref("name-id", None));
    let unnamed = h.join("unnamed.jsonl");
    put(&unnamed, huge.as_bytes());
    assert_eq!(
        codex::identify(&unnamed).unwrap(),
        sref("big-1", None),
        "not session_id"
    );

    // No id anywhere, or no file.
    let empty = h.join("empty.jsonl");
    put(&empty, b"");
    assert_eq!(
        codex::identify(&empty).unwrap_err().kind(),
        std::io::ErrorKind::InvalidData
    );
    assert_eq!(
        codex::identify(&h.join("missing.jsonl"))
            .unwrap_err()
            .kind(),
        std::io::ErrorKind::NotFound
    );
}

#[test]
fn thread_ids_in_file_names() {
    for (name, id) in [
        (
            "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl",
            Some("019c8a70-dda7-7f33-98ea-f30553347322"),
        ),
        (
            "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322_01a0-x.jsonl",
            Some("019c8a70-dda7-7f33-98ea-f30553347322"),
        ),
        ("rollout-some-id.jsonl", Some("some-id")),
        ("codex-session.jsonl", None),
        ("rollout-.jsonl", None),
        ("rollout-2026-02-23T13-19-38-x.json", None),
    ] {
        assert_eq!(
            thread_id_from_file_name(Path::new(name)).as_deref(),
            id,
            "{name}"
        );
    }
}

#[test]
fn discover_sessions_then_archived() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    assert!(discover_in(h).unwrap().is_empty(), "no folders: nothing");
    let files = [
        "sessions/2026/09/22/rollout-2026-09-22T01-03-07-b.jsonl",
        "sessions/2026/03/14/rollout-2026-03-14T10-12-33-a.jsonl",
        "sessions/2026/03/14/rollout-2026-03-14T11-00-00-a2.jsonl",
        "archived_sessions/rollout-2025-12-01T08-00-00-z.jsonl",
        "archived_sessions/rollout-2025-11-01T08-00-00-y.jsonl",
    ];
    for f in files {
        put(&h.join(f), b"{}\n");
    }
    for ignored in [
        "sessions/2026/03/14/notes.jsonl",
        "sessions/2026/03/14/rollout-x.json",
        "sessions/a/b/c/d/e/rollout-too-deep.jsonl",
        "history.jsonl",
    ] {
        put(&h.join(ignored), b"{}\n");
    }
    let got: Vec<String> = discover_in(h)
        .unwrap()
        .iter()
        .map(|p| p.strip_prefix(h).unwrap().display().to_string())
        .collect();
    assert_eq!(
        got,
        [
            "sessions/2026/03/14/rollout-2026-03-14T10-12-33-a.jsonl",
            "sessions/2026/03/14/rollout-2026-03-14T11-00-00-a2.jsonl",
            "sessions/2026/09/22/rollout-2026-09-22T01-03-07-b.jsonl",
            "archived_sessions/rollout-2025-11-01T08-00-00-y.jsonl",
            "archived_sessions/rollout-2025-12-01T08-00-00-z.jsonl",
        ]
    );
    assert_eq!(codex::source_kind(Path::new("x.jsonl")), SourceKind::Lines);
}
