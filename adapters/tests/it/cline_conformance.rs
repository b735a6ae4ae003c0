//! Conformance of the Cline task reader, hook parser and discovery with `fixtures/cline/`
//! (written by `fixtures/cline/gen.py` in the shapes Cline v3.89.2 / 4.1.13 writes;
//! `docs/agents/cline.md`). Expected values were worked out by hand from the fixtures.

use memtrail_adapters::cline::{self, Flavor, TaskReader};
use memtrail_adapters::{Agent, Batch, DocReader, Env, ParseStats, Part, Record};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/cline")
        .join(rel)
}

const NATIVE: &str = "data/tasks/1764661500123/api_conversation_history.json";
const XML: &str = "vscode/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1731000000000/api_conversation_history.json";
const T0: i64 = 1_764_666_300_000;

fn read(bytes: &[u8]) -> Batch {
    let mut b = Batch::default();
    TaskReader::new(Flavor::Cline).read(bytes, &mut b);
    b
}

/// Each record as `[id, role, kind, ts, model, [parts]]`, a part as `["text", t]`,
/// `["thinking", t]` or `["call", id, name, tool, input, output, is_error]`.
pub(crate) fn shape(b: &Batch) -> Vec<Value> {
    b.records
        .iter()
        .map(|r| {
            let Record::Message(m) = r else {
                panic!("not a message: {r:?}")
            };
            let parts: Vec<Value> = m
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text { text } => json!(["text", text]),
                    Part::Thinking { text } => json!(["thinking", text]),
                    Part::ToolCall(c) => {
                        json!(["call", c.id, c.name, c.tool, c.input, c.output, c.is_error])
                    }
                    Part::ToolResult { call_id, .. } => json!(["result", call_id]),
                })
                .collect();
            json!([
                m.id,
                m.role.as_str(),
                m.kind.as_str(),
                m.timestamp,
                m.model,
                parts
            ])
        })
        .collect()
}

#[test]
fn native_tool_calls_with_results_errors_and_feedback() {
    let b = read(&std::fs::read(fixture(NATIVE)).unwrap());
    assert_eq!(
        b.stats,
        ParseStats {
            lines: 10,
            skipped_known: 0,
            skipped_unknown: 0,
            malformed: 0
        }
    );
    let m = Some("claude-sonnet-4-5");
    assert_eq!(
        shape(&b),
        [
            json!([
                "0",
                "user",
                "text",
                T0 + 200,
                null,
                [["text", "Mets à jour le README et lance les tests"]]
            ]),
            json!(["1", "assistant", "tool_call", T0 + 3000, m, [
                ["thinking", "Je dois d'abord lire le README."],
                ["text", "Je commence par lire le README."],
                ["call", "toolu_01", "read_file", "read", {"path": "README.md"},
                 "# demo\nUn petit projet.", false]]]),
            json!(["3", "assistant", "tool_call", T0 + 5000, m, [
                ["text", "Maintenant les tests."],
                ["call", "toolu_02", "execute_command", "shell",
                 {"command": "cargo test", "requires_approval": false},
                 "error[E0425]: cannot find value `x` in this scope\nerror: could not compile `demo`",
                 true]]]),
            json!(["5", "assistant", "tool_call", T0 + 11000, m, [
                ["call", "toolu_03", "replace_in_file", "edit",
                 {"path": "src/lib.rs", "diff": "------- SEARCH\nx\n=======\n1\n+++++++ REPLACE"},
                 "The tool execution failed with the following error:\n<error>\nThe SEARCH block:\nx\n...does not match anything in the file.\n</error>",
                 true]]]),
            json!(["7", "assistant", "tool_call", T0 + 13000, m, [
                ["call", "toolu_04", "use_mcp_tool", "mcp",
                 {"server_name": "memtrail", "tool_name": "search",
                  "arguments": "{\"query\":\"E0425\"}"},
                 "No results.", false]]]),
            json!([
                "8",
                "user",
                "text",
                T0 + 20000,
                null,
                [["text", "テストは後で直してください。"]]
            ]),
            json!(["9", "assistant", "tool_call", T0 + 22000, m, [
                ["text", "D'accord."],
                ["call", "toolu_05", "attempt_completion", "attempt_completion",
                 {"result": "README mis à jour ; les tests échouent encore (E0425)."},
                 null, false]]]),
        ]
    );
    assert_eq!(b.meta.project_dir.as_deref(), Some("/home/user/demo"));
    assert_eq!(
        b.meta.title.as_deref(),
        Some("Mets à jour le README et lance les tests")
    );
    assert_eq!(b.meta.model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(
        (b.meta.started_at, b.meta.updated_at),
        (Some(T0 + 200), Some(T0 + 22000))
    );
}

#[test]
fn xml_tool_use_in_text_denial_and_condensing() {
    let b = read(&std::fs::read(fixture(XML)).unwrap());
    assert_eq!(
        b.stats,
        ParseStats {
            lines: 11,
            skipped_known: 0,
            skipped_unknown: 0,
            malformed: 0
        }
    );
    let summary = "1. Primary request: a --verbose flag, with clap.\n2. Done: clap added to \
                   Cargo.toml.\n3. Next: derive the Args struct.";
    assert_eq!(
        shape(&b),
        [
            json!([
                "0",
                "user",
                "text",
                null,
                null,
                [["text", "Add a --verbose flag"]]
            ]),
            json!(["1", "assistant", "tool_call", null, null, [
                ["thinking", "I should read main.rs first."],
                ["call", "1.1", "read_file", "read", {"path": "src/main.rs"},
                 "fn main() {\n    println!(\"hi\");\n}", false]]]),
            json!(["3", "assistant", "tool_call", null, null, [
                ["text", "I'll add the flag."],
                ["call", "3.1", "replace_in_file", "edit",
                 {"path": "src/main.rs", "diff": "------- SEARCH\nfn main() {\n=======\nfn main() {\n    let verbose = std::env::args().any(|a| a == \"--verbose\");\n+++++++ REPLACE"},
                 "The user denied this operation and provided the following feedback:\n<feedback>\nUse clap instead\n</feedback>",
                 true]]]),
            json!(["5", "assistant", "tool_call", null, null, [
                ["call", "5.1", "execute_command", "shell",
                 {"command": "cargo add clap --features derive", "requires_approval": "false"},
                 "Command executed.\nOutput:\n    Updating crates.io index\n      Adding clap v4.5.20 to dependencies",
                 false]]]),
            json!(["7", "assistant", "tool_call", null, null, [
                ["call", "7.1", "summarize_task", "summarize_task", {"context": summary},
                 "This session is being continued from a previous conversation that ran out of \
                  context. The conversation is summarized below:\n1. Primary request: a --verbose \
                  flag, with clap.\n2. Done: clap added to Cargo.toml.\n3. Next: derive the Args \
                  struct..\n\n\n[Context Modification from PreCompact Hook]\nmemtrail: open task: \
                  derive the Args struct",
                 false]]]),
            json!([
                "7.summary",
                "system",
                "summary",
                null,
                null,
                [["text", summary]]
            ]),
            json!([
                "9",
                "user",
                "text",
                null,
                null,
                [[
                    "text",
                    "[TASK RESUMPTION] This task was interrupted 2 minutes ago. It may or may not be \
                 complete, so please reassess the task context."
                ]]
            ]),
            json!(["10", "assistant", "tool_call", null, null, [
                ["text", "Done: the flag is parsed by clap."],
                ["call", "10.1", "attempt_completion", "attempt_completion",
                 {"result": "Added --verbose (clap derive)."}, null, false]]]),
        ]
    );
    assert_eq!(b.meta.project_dir.as_deref(), Some("/home/user/cli tool"));
    assert_eq!(b.meta.title.as_deref(), Some("Add a --verbose flag"));
    assert_eq!((b.meta.started_at, b.meta.model.as_deref()), (None, None));
}

/// The task grows and is rewritten whole: the second read holds the first read's messages
/// unchanged (same ids), the call now answered, and the new message.
#[test]
fn a_task_rewritten_whole_reads_as_a_superset() {
    let one = read(&std::fs::read(fixture("grow/turn1.json")).unwrap());
    let two = read(&std::fs::read(fixture("grow/turn2.json")).unwrap());
    let (s1, s2) = (shape(&one), shape(&two));
    let ids = |s: &[Value]| s.iter().map(|m| m[0].clone()).collect::<Vec<_>>();
    assert_eq!(ids(&s1), [json!("0"), json!("1"), json!("3")]);
    assert_eq!(ids(&s2), [json!("0"), json!("1"), json!("3"), json!("5")]);
    assert_eq!(s1[..2], s2[..2]);
    assert_eq!(s1[2][5][1][5], Value::Null, "no result yet");
    assert_eq!(s2[2][5][1][6], true, "the failed cargo test");
}

#[test]
fn bad_documents_yield_nothing() {
    for (bytes, stats) in [
        (&b"{\"role\":\"user\"}"[..], (1, 1, 0)),
        (b"[{\"role\":\"user\",\"content\":\"hi\"", (1, 1, 0)),
        (
            b"[1, {\"content\":\"x\"}, {\"type\":\"reasoning\",\"summary\":[]}]",
            (3, 1, 1),
        ),
    ] {
        let b = read(bytes);
        assert!(b.records.is_empty(), "{bytes:?}");
        assert_eq!(
            (b.stats.lines, b.stats.malformed, b.stats.skipped_unknown),
            stats,
            "{bytes:?}"
        );
    }
}

#[test]
fn identity_discovery_and_hooks() {
    let native = fixture(NATIVE);
    let id = cline::identify(&native).unwrap();
    assert_eq!(
        (id.agent, id.external_id.as_str(), id.parent_external_id),
        (Agent::Cline, "1764661500123", None)
    );
    assert!(cline::identify(&fixture("grow/turn1.json")).is_err());
    assert!(cline::source_for(&fixture("grow/turn1.json")).is_none());

    let roots = [
        fixture("data/tasks"),
        fixture("vscode/Code/User/globalStorage/saoudrizwan.claude-dev/tasks"),
        fixture("nowhere/tasks"),
    ];
    let found = cline::discover_in(&roots);
    assert_eq!(found.files, [native.clone(), fixture(XML)]);
    assert!(found.unreadable.is_empty());

    let env = Env::sandbox(Path::new("/h"));
    let expect = [
        ("TaskStart", "SessionStart", Some("startup")),
        ("TaskResume", "SessionStart", Some("resume")),
        ("UserPromptSubmit", "UserPromptSubmit", None),
        ("TaskComplete", "Stop", None),
        ("TaskCancel", "Stop", None),
        ("PreCompact", "PreCompact", Some("auto-condense")),
    ];
    for (name, event, source) in expect {
        let bytes = std::fs::read(fixture(&format!("hooks/{name}.json"))).unwrap();
        let ev = cline::parse_hook_payload(&bytes, &env).unwrap();
        assert_eq!(ev.event, event, "{name}");
        assert_eq!(ev.source.as_deref(), source, "{name}");
        assert_eq!(ev.session_id.as_deref(), Some("1764661500123"), "{name}");
        assert_eq!(ev.cwd.as_deref(), Some("/home/user/demo"), "{name}");
        assert_eq!(ev.transcript_path, None);
        assert_eq!(
            cline::transcripts_for_event_in(&ev, &roots),
            std::slice::from_ref(&native)
        );
    }
    // The CLI 3.0.65 runs the same scripts with its SDK's event names (seen in its bundle).
    for (hook, event, source) in [
        ("agent_start", "SessionStart", Some("startup")),
        ("agent_resume", "SessionStart", Some("resume")),
        ("prompt_submit", "UserPromptSubmit", None),
        ("agent_end", "Stop", None),
        ("agent_abort", "Stop", None),
        ("agent_error", "Stop", None),
        ("session_shutdown", "SessionEnd", None),
    ] {
        let payload = json!({"clineVersion": "", "hookName": hook, "timestamp":
            "2026-12-02T06:00:00.000Z", "taskId": "sess_1", "workspaceRoots": ["/w"],
            "userId": "u", "agent_id": "a-1"});
        let ev = cline::parse_hook_payload(payload.to_string().as_bytes(), &env).unwrap();
        assert_eq!(
            (
                ev.event.as_str(),
                ev.source.as_deref(),
                ev.session_id.as_deref()
            ),
            (event, source, Some("sess_1")),
            "{hook}"
        );
    }
    assert_eq!(
        cline::parse_hook_payload(b"{\"taskId\":\"1\"}", &env)
            .unwrap_err()
            .to_string(),
        "hook payload has no `hookName`"
    );
    assert!(cline::parse_hook_payload(b"  ", &env).is_err());
    assert_eq!(
        cline::session_start_reply("ctx <x>").unwrap(),
        r#"{"cancel":false,"contextModification":"ctx <x>"}"#
    );
}

// ---------------------------------------------------------------------------------------------
// The CLI 3.x's sessions (`fixtures/cline/gen_sessions.py`, in the shapes `cline` 3.0.65 wrote)
// ---------------------------------------------------------------------------------------------

const SID: &str = "1764666300000_k3v9q";

fn session_file() -> PathBuf {
    fixture(&format!("data/sessions/{SID}/{SID}.messages.json"))
}

/// `read_db` of one file: its session, its records (each a replace, shown as messages), the
/// watermark.
fn read_db(
    path: &Path,
    session: Option<&str>,
    since: i64,
) -> (memtrail_adapters::SessionRef, Batch, i64) {
    let db = cline::sessions::read_db(path, session, since).unwrap();
    assert_eq!(db.sessions.len(), 1);
    let s = db.sessions.into_iter().next().unwrap();
    let records = s
        .records
        .into_iter()
        .map(|r| match r {
            Record::Replace(m) => Record::Message(m),
            other => panic!("not a replace: {other:?}"),
        })
        .collect();
    let b = Batch {
        meta: s.meta,
        records,
        stats: s.stats,
    };
    (s.session, b, db.watermark)
}

fn read_session(bytes: &[u8]) -> Batch {
    let mut b = Batch::default();
    cline::sessions::SessionReader::new(Some("/home/user/cli-demo".into())).read(bytes, &mut b);
    b
}

#[test]
fn cli_session_prompts_calls_results_and_a_shown_error() {
    let b = read_session(&std::fs::read(session_file()).unwrap());
    let fail =
        "[Command exited with code 101]\n\n[stderr]\nerror[E0382]: borrow of moved value: `v`";
    assert_eq!(
        shape(&b),
        [
            json!([
                "0f6e2a52-3c1d-4b8e-9a57-2d4c8e1f7a90",
                "user",
                "text",
                T0 + 100,
                null,
                [["text", "Lance les tests et corrige l'échec"]]
            ]),
            json!(["msg_Qp4uN1xa", "assistant", "tool_call", T0 + 1200, "claude-sonnet-4-5", [
                ["thinking", "Run the suite first."],
                ["text", "Je lance les tests."],
                ["call", "toolu_01A", "run_commands", "shell", {"commands": ["cargo test"]},
                    fail, true]]]),
            json!(["msg_Zc3kW7yd", "assistant", "tool_call", T0 + 5200, "claude-sonnet-4-5", [
                ["call", "toolu_01B", "read_files", "read",
                    {"files": [{"path": "src/lib.rs"}, {"path": "Cargo.toml"}]},
                    "1 | let v = vec![1];\n2 | drop(v);\n1 | [package]", false]]]),
            json!([
                "msg_Ye1sJ5uf",
                "assistant",
                "text",
                T0 + 6100,
                "claude-sonnet-4-5",
                [["text", "`v` は drop の後に使われています。修正しました。"]]
            ]),
            json!(["msg_Sa9gT4hk", "assistant", "tool_call", T0 + 6500, "claude-sonnet-4-5", [
                ["call", "toolu_01C", "spawn_agent", "subagent",
                    {"systemPrompt": "You review Rust code.", "task": "Relis src/lib.rs"},
                    "{\"text\":\"Rien à signaler.\",\"iterations\":1,\"finishReason\":\"completed\",\"usage\":{\"inputTokens\":2313,\"outputTokens\":11}}",
                    false]]]),
            json!([
                "5b1d9c3e-8f2a-4e6b-a1c7-0e9d4f3b2a18",
                "user",
                "text",
                T0 + 60000,
                null,
                [["text", "et maintenant ?"]]
            ]),
            json!([
                "error_7c2e4f18-9b3d-4a5e-8f61-3d2c1b0a9e87",
                "system",
                "text",
                T0 + 61000,
                null,
                [[
                    "text",
                    "Cannot connect to API: Was there a typo in the url or port? (FailedToOpenSocket)"
                ]]
            ]),
        ]
    );
    let Record::Message(m) = &b.records[1] else {
        panic!()
    };
    let Part::ToolCall(c) = &m.parts[2] else {
        panic!()
    };
    assert_eq!(c.exit_code, Some(101));
    assert_eq!(
        b.stats,
        ParseStats {
            lines: 10,
            skipped_known: 3,
            ..ParseStats::default()
        }
    );
    assert_eq!(b.meta.project_dir.as_deref(), Some("/home/user/cli-demo"));
    assert_eq!(
        b.meta.title.as_deref(),
        Some("Lance les tests et corrige l'échec")
    );
    assert_eq!(b.meta.model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(
        (b.meta.started_at, b.meta.updated_at),
        (Some(T0 + 100), Some(T0 + 61000))
    );
}

#[test]
fn a_cli_session_rewritten_whole_keeps_its_ids() {
    let one = read_session(&std::fs::read(fixture("grow-cli/turn1.messages.json")).unwrap());
    let two = read_session(&std::fs::read(fixture("grow-cli/turn2.messages.json")).unwrap());
    let full = read_session(&std::fs::read(session_file()).unwrap());
    let ids = |b: &Batch| -> Vec<String> {
        shape(b)
            .iter()
            .map(|m| m[0].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        ids(&one),
        ["0f6e2a52-3c1d-4b8e-9a57-2d4c8e1f7a90", "msg_Qp4uN1xa"]
    );
    assert_eq!(ids(&two), ids(&full)[..4]);
    // The first read already had the failed command's output: a later read changes nothing of it.
    assert_eq!(shape(&one)[1], shape(&full)[1]);
    // Caught mid-write: nothing, one malformed line.
    let cut = std::fs::read(session_file()).unwrap();
    let b = read_session(&cut[..cut.len() / 2]);
    assert!(b.records.is_empty());
    assert_eq!(
        b.stats,
        ParseStats {
            lines: 1,
            malformed: 1,
            ..ParseStats::default()
        }
    );
}

#[test]
fn cli_sessions_are_found_identified_and_their_hooks_parsed() {
    let file = session_file();
    let id = cline::identify(&file).unwrap();
    assert_eq!(
        (id.agent, id.external_id.as_str(), id.parent_external_id),
        (Agent::Cline, SID, None)
    );
    assert!(cline::identify(&fixture(&format!("data/sessions/{SID}/{SID}.json"))).is_err());
    // Read as a one-session database: every message a replace-or-insert, the project from the
    // manifest beside the conversation.
    assert!(matches!(
        cline::source_for(&file),
        Some(memtrail_adapters::Source::Database)
    ));
    let (sref, b, mark) = read_db(&file, None, 0);
    assert_eq!(
        (sref.external_id.as_str(), sref.parent_external_id),
        (SID, None)
    );
    assert_eq!(b.meta.project_dir.as_deref(), Some("/home/user/cli-demo"));
    assert_eq!(
        shape(&b),
        shape(&read_session(&std::fs::read(&file).unwrap()))
    );
    // Unchanged since the watermark, or another session's key: nothing.
    let again = cline::sessions::read_db(&file, Some(SID), mark).unwrap();
    assert!(again.sessions.is_empty());
    assert_eq!(again.watermark, mark);
    assert!(
        cline::sessions::read_db(&file, Some("other"), 0)
            .unwrap()
            .sessions
            .is_empty()
    );
    assert_eq!(cline::sessions::session_ids(&file).unwrap(), [SID]);

    // The sub-agent `spawn_agent` started: its own file beside the session's, a child session.
    let sub = fixture(&format!(
        "data/sessions/{SID}/agent_1764666306600_r4t2w1.messages.json"
    ));
    let id = cline::identify(&sub).unwrap();
    assert_eq!(
        (id.external_id.as_str(), id.parent_external_id.as_deref()),
        ("1764666300000_k3v9q__agent_1764666306600_r4t2w1", Some(SID))
    );
    // Read under the session's key (the one its hooks name), as its own child session.
    assert_eq!(cline::sessions::session_ids(&sub).unwrap(), [SID]);
    let (sref, b, _) = read_db(&sub, Some(SID), 0);
    assert_eq!(sref.external_id, id.external_id);
    assert_eq!(sref.parent_external_id.as_deref(), Some(SID));
    assert_eq!(
        shape(&b),
        [
            json!([
                "9a7c5e31-2b4d-4f6a-8c1e-3d5b7f9a1c2e",
                "user",
                "text",
                T0 + 6700,
                null,
                [["text", "Relis src/lib.rs"]]
            ]),
            json!([
                "msg_Tn3wV6pz",
                "assistant",
                "text",
                T0 + 8800,
                "claude-sonnet-4-5",
                [["text", "Rien à signaler."]]
            ]),
        ]
    );
    assert_eq!(b.meta.project_dir.as_deref(), Some("/home/user/cli-demo"));

    let found = cline::discover_sessions_in(&fixture("data/sessions"));
    assert_eq!(found.files, [file.clone(), sub]);
    assert!(found.unreadable.is_empty());
    assert!(
        cline::discover_sessions_in(&fixture("nowhere/sessions"))
            .files
            .is_empty()
    );

    // The CLI's hooks: `taskId` is a `conv_` id; the session is `sessionContext.rootSessionId`.
    let env = Env::sandbox(Path::new("/h"));
    for (name, event, source) in [
        ("TaskStart", "SessionStart", Some("startup")),
        ("TaskComplete", "Stop", None),
    ] {
        let bytes = std::fs::read(fixture(&format!("hooks-cli/{name}.json"))).unwrap();
        let ev = cline::parse_hook_payload(&bytes, &env).unwrap();
        assert_eq!(
            (
                ev.event.as_str(),
                ev.source.as_deref(),
                ev.session_id.as_deref(),
                ev.cwd.as_deref()
            ),
            (event, source, Some(SID), Some("/home/user/cli-demo")),
            "{name}"
        );
    }
}
