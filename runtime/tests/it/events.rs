//! Events extracted from real-format transcripts of the six agents, asserted one by one, plus
//! the extraction rules on single tool calls, the correlations, and the snapshot's properties
//! (never over budget, deterministic, never empty when there are events).
//!
//! The per-agent sessions are `fixtures/continuity/<agent>-standard--*` (written by
//! `scripts/gen-continuity-fixtures.py` in each agent's own format): a prompt, a todo list, a
//! read, an edit, `cargo test` failing (exit 101), a second edit, `cargo test` passing, the todo
//! list updated, a closing answer, then a prompt with two decisions.

use crate::support;

use memtrail_adapters::{Agent, Kind, Message, Part, Role, ToolCall};
use memtrail_runtime::events::{self, Category, Event, StoredEvent, correlate, extract};
use memtrail_runtime::snapshot::{self, MIN_NONEMPTY_BUDGET, SnapshotInput, build};
use serde_json::{Value, json};

/// (category, action, subject, detail, tool). For `error` events the detail is its most
/// telling line ([`events::error_line`]); the whole output is checked separately.
type Row = (
    &'static str,
    &'static str,
    String,
    Option<String>,
    Option<&'static str>,
);

fn stored(agent: Agent, msgs: &[Message]) -> Vec<StoredEvent> {
    let mut out = Vec::new();
    for (seq, m) in msgs.iter().enumerate() {
        for e in extract(agent, m) {
            out.push(StoredEvent {
                id: out.len() as i64 + 1,
                seq: seq as i64,
                message_id: m.id.clone(),
                event: e,
            });
        }
    }
    out
}

/// `fixtures/continuity/<agent>-standard--*`: the agent's standard session.
fn standard_path(agent: Agent) -> std::path::PathBuf {
    let prefix = format!("{agent}-standard--");
    std::fs::read_dir(support::fixtures().join("continuity"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(&prefix)
        })
        .expect("standard fixture")
}

fn standard(agent: Agent) -> (Vec<StoredEvent>, Vec<StoredEvent>) {
    let path = standard_path(agent);
    let evs = stored(agent, &support::load(agent, &path));
    let derived = correlate(&evs);
    (evs, derived)
}

fn rows(evs: &[StoredEvent]) -> Vec<Row> {
    evs.iter()
        .map(|s| {
            let e = &s.event;
            let cat: &'static str = e.category.as_str();
            let action: &'static str = Box::leak(e.action.clone().into_boxed_str());
            let tool: Option<&'static str> = e
                .tool
                .as_ref()
                .map(|t| &*Box::leak(t.clone().into_boxed_str()));
            let detail = if e.category == Category::Error {
                e.detail.as_deref().map(events::error_line)
            } else {
                e.detail.clone()
            };
            (cat, action, e.subject.clone(), detail, tool)
        })
        .collect()
}

fn r(
    cat: &'static str,
    action: &'static str,
    subject: &str,
    detail: Option<&str>,
    tool: Option<&'static str>,
) -> Row {
    (
        cat,
        action,
        subject.to_string(),
        detail.map(str::to_string),
        tool,
    )
}

const P: &str = "/home/user/projects/tempconv";
const GOAL: &str =
    "Add Kelvin support to the temperature converter in src/convert.rs and make the tests pass.";
const LAST: &str = "Don't touch the public API names; use f64 everywhere instead of f32.";
const FAILED_LINE: &str = "test tests::kelvin_roundtrip ... FAILED";

fn todo1() -> Vec<Row> {
    vec![
        r(
            "task",
            "updated",
            "Add Kelvin conversions",
            Some("in_progress"),
            Some("todo"),
        ),
        r(
            "task",
            "created",
            "Update the CLI help text",
            Some("pending"),
            Some("todo"),
        ),
        r(
            "task",
            "created",
            "Add a changelog entry",
            Some("pending"),
            Some("todo"),
        ),
    ]
}

fn todo2() -> Vec<Row> {
    vec![
        r(
            "task",
            "done",
            "Add Kelvin conversions",
            Some("completed"),
            Some("todo"),
        ),
        r(
            "task",
            "updated",
            "Update the CLI help text",
            Some("in_progress"),
            Some("todo"),
        ),
        r(
            "task",
            "created",
            "Add a changelog entry",
            Some("pending"),
            Some("todo"),
        ),
    ]
}

fn decisions() -> Vec<Row> {
    vec![
        r("prompt", "submitted", LAST, None, None),
        r(
            "decision",
            "stated",
            "Don't touch the public API names",
            None,
            None,
        ),
        r(
            "decision",
            "stated",
            "use f64 everywhere instead of f32.",
            None,
            None,
        ),
    ]
}

/// The expected events of a standard session: `read` is the read's events, `paths` turns a
/// project path into the path as the agent wrote it, `fail`/`pass` are the two test runs'
/// events.
fn expected(
    read: Vec<Row>,
    path: &dyn Fn(&str) -> String,
    fail: Vec<Row>,
    pass: Vec<Row>,
) -> Vec<Row> {
    let mut v = vec![r("prompt", "submitted", GOAL, None, None)];
    v.extend(todo1());
    v.extend(read);
    v.push(r(
        "file",
        "edited",
        &path("src/convert.rs"),
        Some("+7 -3"),
        Some("edit"),
    ));
    v.extend(fail);
    v.push(r(
        "file",
        "edited",
        &path("tests/kelvin.rs"),
        Some("+1 -1"),
        Some("edit"),
    ));
    v.extend(pass);
    v.extend(todo2());
    v.extend(decisions());
    v
}

fn abs(p: &str) -> String {
    format!("{P}/{p}")
}

fn resolved(first_line: &str) -> Vec<Row> {
    vec![r(
        "error_resolved",
        "resolved",
        "shell: cargo test",
        Some(first_line),
        Some("shell"),
    )]
}

#[test]
fn claude_code_session() {
    let (evs, derived) = standard(Agent::Claude);
    let want = expected(
        vec![r(
            "file",
            "read",
            &abs("src/convert.rs"),
            None,
            Some("read"),
        )],
        &abs,
        vec![
            r(
                "command",
                "failed",
                "cargo test",
                Some("exit 101"),
                Some("shell"),
            ),
            r(
                "error",
                "exit",
                "shell: cargo test",
                Some(FAILED_LINE),
                Some("shell"),
            ),
        ],
        // Claude Code writes no exit code for a command that succeeds.
        vec![r("command", "ok", "cargo test", None, Some("shell"))],
    );
    assert_eq!(rows(&evs), want);
    let err = evs
        .iter()
        .find(|e| e.event.category == Category::Error)
        .unwrap();
    assert!(
        err.event
            .detail
            .as_deref()
            .unwrap()
            .starts_with("Exit code 101\nrunning 6 tests\n")
    );
    assert_eq!(err.event.priority, 1);
    assert_eq!(rows(&derived), resolved(FAILED_LINE));
    // The resolution sits at the passing run.
    let pass = evs.iter().find(|e| e.event.action == "ok").unwrap();
    assert_eq!((derived[0].seq, derived[0].id), (pass.seq, pass.id));
    assert_eq!(derived[0].event.call_id, pass.event.call_id);
}

#[test]
fn codex_session() {
    let (evs, derived) = standard(Agent::Codex);
    // Codex reads files with the shell and writes edits as `apply_patch` patches (relative paths).
    let want = expected(
        vec![r(
            "command",
            "ok",
            "sed -n '1,200p' src/convert.rs",
            Some("exit 0"),
            Some("shell"),
        )],
        &|p| p.to_string(),
        vec![
            r(
                "command",
                "failed",
                "cargo test",
                Some("exit 101"),
                Some("shell"),
            ),
            r(
                "error",
                "exit",
                "shell: cargo test",
                Some(FAILED_LINE),
                Some("shell"),
            ),
        ],
        vec![r(
            "command",
            "ok",
            "cargo test",
            Some("exit 0"),
            Some("shell"),
        )],
    );
    assert_eq!(rows(&evs), want);
    assert_eq!(rows(&derived), resolved(FAILED_LINE));
}

#[test]
fn gemini_cli_session() {
    let (evs, derived) = standard(Agent::Gemini);
    // Gemini reads with the path as given (relative) and edits with absolute paths.
    let want = expected(
        vec![r("file", "read", "src/convert.rs", None, Some("read"))],
        &abs,
        vec![
            r(
                "command",
                "failed",
                "cargo test",
                Some("exit 101"),
                Some("shell"),
            ),
            r(
                "error",
                "exit",
                "shell: cargo test",
                Some(FAILED_LINE),
                Some("shell"),
            ),
        ],
        vec![r("command", "ok", "cargo test", None, Some("shell"))],
    );
    assert_eq!(rows(&evs), want);
    assert_eq!(rows(&derived), resolved(FAILED_LINE));
}

#[test]
fn vscode_copilot_session() {
    let (evs, derived) = standard(Agent::Vscode);
    // The terminal tool reports no exit code: the failure is seen in the output
    // (`test result: FAILED`), so the error is `tool`, not `exit`.
    let want = expected(
        vec![r(
            "file",
            "read",
            &abs("src/convert.rs"),
            None,
            Some("read"),
        )],
        &abs,
        vec![
            r("command", "failed", "cargo test", None, Some("shell")),
            r(
                "error",
                "tool",
                "shell: cargo test",
                Some(FAILED_LINE),
                Some("shell"),
            ),
        ],
        vec![r("command", "ok", "cargo test", None, Some("shell"))],
    );
    assert_eq!(rows(&evs), want);
    assert_eq!(rows(&derived), resolved(FAILED_LINE));
}

#[test]
fn cursor_session() {
    let (evs, derived) = standard(Agent::Cursor);
    // Cursor's transcript records no tool results: the runs are `ran`, their outcome unknown,
    // so there is no error to extract and nothing to resolve.
    let want = expected(
        vec![r(
            "file",
            "read",
            &abs("src/convert.rs"),
            None,
            Some("read"),
        )],
        &abs,
        vec![r("command", "ran", "cargo test", None, Some("shell"))],
        vec![r("command", "ran", "cargo test", None, Some("shell"))],
    );
    assert_eq!(rows(&evs), want);
    assert_eq!(rows(&derived), Vec::<Row>::new());
}

#[test]
fn opencode_session() {
    let (evs, derived) = standard(Agent::Opencode);
    let want = expected(
        vec![r(
            "file",
            "read",
            &abs("src/convert.rs"),
            None,
            Some("read"),
        )],
        &abs,
        vec![
            r(
                "command",
                "failed",
                "cargo test",
                Some("exit 101"),
                Some("shell"),
            ),
            r(
                "error",
                "exit",
                "shell: cargo test",
                Some(FAILED_LINE),
                Some("shell"),
            ),
        ],
        vec![r("command", "ok", "cargo test", None, Some("shell"))],
    );
    assert_eq!(rows(&evs), want);
    assert_eq!(rows(&derived), resolved(FAILED_LINE));
}

#[test]
fn claude_question_answered_is_a_decision() {
    let dir = support::fixtures().join("continuity");
    let path = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_str().unwrap().contains("claude-profile--"))
        .unwrap();
    let evs = stored(Agent::Claude, &support::load(Agent::Claude, &path));
    let answered: Vec<Row> = rows(&evs)
        .into_iter()
        .filter(|r| r.0 == "decision")
        .collect();
    assert_eq!(
        answered,
        vec![
            r(
                "decision",
                "answered",
                "Which approach should I take for the JSON decoding hot spot? → Switch to a streaming decoder",
                None,
                Some("AskUserQuestion")
            ),
            r(
                "decision",
                "stated",
                "Keep the old decodeAll behind a flag so we can compare.",
                None,
                None
            )
        ]
    );
    // go vet failed and nothing ran it again: unresolved; the 6 `git log` runs differ: no loop.
    let derived = correlate(&evs);
    assert!(derived.is_empty(), "{derived:?}");
}

// -------------------------------------------------------------------------------------------
// Single tool calls

fn call_msg(name: &str, tool: &str, input: Value, output: Option<&str>, is_error: bool) -> Message {
    Message {
        id: "m1".into(),
        role: Role::Assistant,
        kind: Kind::ToolCall,
        parts: vec![Part::ToolCall(ToolCall {
            id: "c1".into(),
            name: name.into(),
            tool: tool.into(),
            input,
            output: output.map(str::to_string),
            is_error,
            exit_code: None,
        })],
        timestamp: Some(1_000),
        model: None,
    }
}

fn one(name: &str, input: Value, output: Option<&str>, is_error: bool) -> Vec<Row> {
    let tool = memtrail_adapters::normalize_tool_name(name);
    let m = call_msg(name, &tool, input, output, is_error);
    let evs: Vec<StoredEvent> = extract(Agent::Claude, &m)
        .into_iter()
        .map(|event| StoredEvent {
            id: 1,
            seq: 0,
            message_id: "m1".into(),
            event,
        })
        .collect();
    rows(&evs)
}

#[test]
fn git_commit_with_heredoc_message_and_push() {
    let cmd = "git add -A && git commit -m \"$(cat <<'EOF'\nFix Kelvin rounding\n\nCo-Authored-By: Claude <noreply@anthropic.com>\nEOF\n)\" && git push origin feat/kelvin";
    let got = one(
        "Bash",
        json!({"command": cmd}),
        Some("[feat/kelvin 1a2b3c4] Fix Kelvin rounding"),
        false,
    );
    let seg1 = "git commit -m \"$(cat <<'EOF' Fix Kelvin rounding Co-Authored-By: Claude <noreply@anthropic.com> EOF )\"";
    assert_eq!(
        got,
        vec![
            r(
                "command",
                "ok",
                &cmd.split_whitespace().collect::<Vec<_>>().join(" "),
                None,
                Some("shell")
            ),
            r(
                "git",
                "commit",
                "Fix Kelvin rounding",
                Some(seg1),
                Some("shell")
            ),
            r(
                "git",
                "push",
                "origin feat/kelvin",
                Some("git push origin feat/kelvin"),
                Some("shell")
            ),
        ]
    );
}

#[test]
fn codex_argv_and_exit_codes() {
    let got = one(
        "shell",
        json!({"command": ["bash", "-lc", "git checkout -b fix/x"], "workdir": "/r"}),
        Some(
            "{\"output\":\"Switched to a new branch 'fix/x'\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.1}}",
        ),
        false,
    );
    assert_eq!(
        got,
        vec![
            r(
                "command",
                "ok",
                "git checkout -b fix/x",
                Some("exit 0"),
                Some("shell")
            ),
            r(
                "git",
                "checkout",
                "fix/x",
                Some("git checkout -b fix/x"),
                Some("shell")
            ),
        ]
    );
    // A failed git commit is an error, not a git action.
    let got = one(
        "exec_command",
        json!({"cmd": "git commit -m wip"}),
        Some(
            "Chunk ID: a\nWall time: 0.1 seconds\nProcess exited with code 1\nOriginal token count: 3\nOutput:\nnothing to commit, working tree clean\n",
        ),
        false,
    );
    assert_eq!(
        got,
        vec![
            r(
                "command",
                "failed",
                "git commit -m wip",
                Some("exit 1"),
                Some("shell")
            ),
            r(
                "error",
                "exit",
                "shell: git commit -m wip",
                Some("nothing to commit, working tree clean"),
                Some("shell")
            ),
        ]
    );
}

/// Issue 11 item 13: the agent's own exit-code field (OpenCode `state.metadata.exit`, read
/// into `ToolCall::exit_code`) counts when the output text does not say it.
#[test]
fn an_exit_code_field_makes_a_failed_command_with_its_code() {
    let mut m = call_msg(
        "bash",
        "shell",
        json!({"command": "grep -r needle src"}),
        Some("grep: src: No such file or directory\n"),
        true,
    );
    if let Part::ToolCall(c) = &mut m.parts[0] {
        c.exit_code = Some(2);
    }
    let evs: Vec<StoredEvent> = extract(Agent::Opencode, &m)
        .into_iter()
        .map(|event| StoredEvent {
            id: 1,
            seq: 0,
            message_id: "m1".into(),
            event,
        })
        .collect();
    assert_eq!(
        rows(&evs),
        vec![
            r(
                "command",
                "failed",
                "grep -r needle src",
                Some("exit 2"),
                Some("shell")
            ),
            r(
                "error",
                "exit",
                "shell: grep -r needle src",
                Some("grep: src: No such file or directory"),
                Some("shell")
            ),
        ]
    );
    // The snapshot line names the code although the text does not.
    assert_eq!(
        evs[1].event.detail.as_deref(),
        Some("Exit code 2\ngrep: src: No such file or directory")
    );
}

#[test]
fn apply_patch_names_every_file_with_line_counts() {
    let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-old\n+new\n+more\n*** Add File: src/b.rs\n+line1\n+line2\n+line3\n*** Delete File: src/c.rs\n*** Update File: src/d.rs\n*** Move to: src/e.rs\n@@\n-x\n+y\n*** End Patch\n";
    let got = one(
        "apply_patch",
        Value::String(patch.into()),
        Some("Success."),
        false,
    );
    assert_eq!(
        got,
        vec![
            r("file", "edited", "src/a.rs", Some("+2 -1"), Some("edit")),
            r("file", "written", "src/b.rs", Some("+3 -0"), Some("edit")),
            r("file", "deleted", "src/c.rs", None, Some("edit")),
            r("file", "edited", "src/e.rs", Some("+1 -1"), Some("edit")),
        ]
    );
}

#[test]
fn other_tools() {
    assert_eq!(
        one(
            "Read",
            json!({"file_path": "/p/CLAUDE.md"}),
            Some("x"),
            false
        ),
        vec![r("rule", "read", "/p/CLAUDE.md", None, Some("read"))]
    );
    assert_eq!(
        one(
            "mcp__github__get_issue",
            json!({"number": 7}),
            Some("{}"),
            false
        ),
        vec![r("mcp", "used", "github/get_issue", None, Some("mcp"))]
    );
    assert_eq!(
        one("Skill", json!({"skill": "pdf"}), Some("ok"), false),
        vec![r("skill", "used", "pdf", None, Some("Skill"))]
    );
    assert_eq!(
        one(
            "WebFetch",
            json!({"url": "https://example.com/a", "prompt": "x"}),
            Some("ok"),
            false
        ),
        vec![r(
            "reference",
            "url",
            "https://example.com/a",
            None,
            Some("web_fetch")
        )]
    );
    assert_eq!(
        one(
            "Task",
            json!({"description": "Find TODOs", "prompt": "…", "subagent_type": "Explore"}),
            Some("Found 3"),
            false
        ),
        vec![
            r(
                "subagent",
                "launched",
                "Find TODOs",
                Some("Explore"),
                Some("subagent")
            ),
            r(
                "subagent",
                "finished",
                "Find TODOs",
                Some("Found 3"),
                Some("subagent")
            ),
        ]
    );
    assert_eq!(
        one(
            "ExitPlanMode",
            json!({"plan": "# Kelvin plan\n1. add c_to_k"}),
            Some("User has approved your plan."),
            false
        ),
        vec![r(
            "plan",
            "approved",
            "Kelvin plan",
            Some("# Kelvin plan\n1. add c_to_k"),
            Some("ExitPlanMode")
        )]
    );
    assert_eq!(
        one(
            "MultiEdit",
            json!({"file_path": "/p/a.rs", "edits": [{"old_string": "a", "new_string": "b\nc"}, {"old_string": "d\ne", "new_string": ""}]}),
            Some("ok"),
            false
        ),
        vec![r("file", "edited", "/p/a.rs", Some("+2 -3"), Some("edit"))]
    );
    assert_eq!(
        one(
            "editFiles",
            json!({"files": ["package.json", "README.md"]}),
            Some("ok"),
            false
        ),
        vec![
            r("file", "edited", "package.json", None, Some("edit")),
            r("file", "edited", "README.md", None, Some("edit")),
        ]
    );
    assert_eq!(
        one(
            "Edit",
            json!({"file_path": "/p/a.rs", "old_string": "x", "new_string": "y"}),
            Some("String to replace not found in file."),
            true
        ),
        vec![r(
            "error",
            "tool",
            "edit: /p/a.rs",
            Some("String to replace not found in file."),
            Some("edit")
        )]
    );
}

#[test]
fn prompts_decisions_and_references() {
    let m = Message {
        id: "u1".into(),
        role: Role::User,
        kind: Kind::Text,
        parts: vec![Part::Text {
            text: "Fix #42 as described in https://github.com/acme/app/issues/42. Let's go with the retry queue. Add tests to src/queue.rs.".into(),
        }],
        timestamp: Some(5),
        model: None,
    };
    let evs: Vec<StoredEvent> = extract(Agent::Codex, &m)
        .into_iter()
        .map(|event| StoredEvent {
            id: 1,
            seq: 0,
            message_id: "u1".into(),
            event,
        })
        .collect();
    let text = "Fix #42 as described in https://github.com/acme/app/issues/42. Let's go with the retry queue. Add tests to src/queue.rs.";
    assert_eq!(
        rows(&evs),
        vec![
            r("prompt", "submitted", text, None, None),
            r(
                "decision",
                "stated",
                "Let's go with the retry queue.",
                None,
                None
            ),
            r(
                "reference",
                "url",
                "https://github.com/acme/app/issues/42",
                None,
                None
            ),
            r("reference", "issue", "#42", None, None),
        ]
    );
    assert!(evs.iter().all(|e| e.event.ts == Some(5)));
}

#[test]
fn long_subjects_are_cut_on_char_boundaries() {
    let long = "é".repeat(2000);
    let m = Message {
        id: "u".into(),
        role: Role::User,
        kind: Kind::Text,
        parts: vec![Part::Text { text: long.clone() }],
        timestamp: None,
        model: None,
    };
    let e = &extract(Agent::Claude, &m)[0];
    assert!(e.subject.len() <= events::MAX_SUBJECT && e.subject.ends_with('…'));
    let d = e.detail.as_deref().unwrap();
    assert!(d.len() <= events::MAX_DETAIL && d.ends_with('…'));
}

// -------------------------------------------------------------------------------------------
// Correlations

fn se(
    id: i64,
    seq: i64,
    cat: Category,
    action: &str,
    subject: &str,
    call: &str,
    tool: &str,
) -> StoredEvent {
    StoredEvent {
        id,
        seq,
        message_id: format!("m{seq}"),
        event: Event {
            category: cat,
            action: action.into(),
            priority: 3,
            subject: subject.into(),
            detail: None,
            call_id: Some(call.into()),
            tool: Some(tool.into()),
            ts: None,
        },
    }
}

#[test]
fn retry_loop_and_relative_path_resolution() {
    use Category::*;
    let evs = vec![
        se(1, 0, Command, "failed", "npm test", "a", "shell"),
        se(2, 0, Error, "exit", "shell: npm test", "a", "shell"),
        se(3, 1, Command, "failed", "npm test", "b", "shell"),
        se(4, 1, Error, "exit", "shell: npm test", "b", "shell"),
        se(5, 2, Command, "failed", "npm test", "c", "shell"),
        se(6, 2, Error, "exit", "shell: npm test", "c", "shell"),
        se(7, 3, Error, "tool", "edit: /p/src/a.rs", "d", "edit"),
        // Parallel calls in one message: the later success on the relative path resolves it.
        se(8, 4, File, "read", "src/b.rs", "e", "read"),
        se(9, 4, File, "edited", "src/a.rs", "f", "edit"),
    ];
    let d = correlate(&evs);
    assert_eq!(
        rows(&d),
        vec![
            r(
                "retry",
                "loop",
                "shell: npm test",
                Some("3 times in a row"),
                Some("shell")
            ),
            r(
                "error_resolved",
                "resolved",
                "edit: /p/src/a.rs",
                None,
                Some("edit")
            ),
        ]
    );
    assert_eq!((d[0].id, d[0].seq), (5, 2));
    assert_eq!((d[1].id, d[1].seq), (9, 4));
}

// -------------------------------------------------------------------------------------------
// Snapshot properties

/// A small deterministic generator (LCG, Knuth's MMIX constants).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const WORDS: &[&str] = &[
    "src/lib.rs",
    "cargo",
    "test",
    "日本語",
    "ошибка",
    "🧪",
    "fix",
    "the",
    "parser",
    "é",
    "a\nb",
    "  ",
    "/home/user/p/src/main.rs",
    "don't",
    "use",
    "instead",
    "x",
];

fn random_events(g: &mut Lcg) -> Vec<StoredEvent> {
    let n = g.below(60) as usize;
    let cats = events::ALL_CATEGORIES;
    (0..n)
        .map(|i| {
            let cat = cats[g.below(cats.len() as u64) as usize];
            let len = g.below(80) as usize;
            let subject: String = (0..len)
                .map(|_| WORDS[g.below(WORDS.len() as u64) as usize])
                .collect::<Vec<_>>()
                .join(" ");
            let actions = [
                "read", "edited", "written", "created", "updated", "done", "exit", "tool", "ok",
                "failed", "commit", "approved",
            ];
            StoredEvent {
                id: i as i64 + 1,
                seq: i as i64 / 2,
                message_id: format!("m{}", i / 2),
                event: Event {
                    category: cat,
                    action: actions[g.below(actions.len() as u64) as usize].into(),
                    priority: 1 + g.below(4) as u8,
                    subject,
                    detail: (g.below(2) == 0)
                        .then(|| "+3 -1\nerror: boom".repeat(g.below(5) as usize)),
                    call_id: Some(format!("c{}", g.below(8))),
                    tool: Some(["shell", "edit", "read", "todo"][g.below(4) as usize].into()),
                    ts: Some(i as i64),
                },
            }
        })
        .collect()
}

#[test]
fn snapshot_never_exceeds_budget_is_deterministic_and_never_empty() {
    let mut g = Lcg(0x5eed_1234);
    for round in 0..300 {
        let events = random_events(&mut g);
        let input = SnapshotInput {
            agent: "claude".into(),
            session_id: "2f7864b9-6aad-5e4b-a314-b87db9e1bb17".into(),
            project_dir: Some("/home/user/p".into()),
            title: None,
            git_branch: Some("main".into()),
            events: events.clone(),
        };
        for _ in 0..6 {
            let budget = match g.below(4) {
                0 => g.below(64) as usize,
                1 => g.below(600) as usize,
                _ => g.below(8193) as usize,
            };
            let a = build(&input, budget);
            assert!(
                a.text.len() <= budget,
                "round {round}: {} > {budget}",
                a.text.len()
            );
            assert_eq!(a, build(&input, budget), "round {round}: not deterministic");
            assert_eq!(a.budget, budget);
            assert_eq!(a.events, events.len());
            if !events.is_empty() && budget >= MIN_NONEMPTY_BUDGET {
                assert!(
                    !a.text.is_empty(),
                    "round {round}: empty at budget {budget}"
                );
            }
        }
    }
}

#[test]
fn snapshot_of_the_claude_session() {
    let (mut evs, derived) = standard(Agent::Claude);
    evs.extend(derived);
    evs.sort_by_key(|e| (e.seq, e.id));
    let input = SnapshotInput {
        agent: "claude".into(),
        session_id: "2f7864b9".into(),
        project_dir: Some(P.into()),
        title: None,
        git_branch: Some("main".into()),
        events: evs,
    };
    let s = build(&input, snapshot::DEFAULT_BUDGET);
    let want = "Working state of claude session 2f7864b9 (branch main, 17 events). More: MCP timeline(session_id=\"2f7864b9\", category=\"<a section's [category]>\") or `memtrail search \"<words>\" --session 2f7864b9`.
## Last request [prompt]
- Don't touch the public API names; use f64 everywhere instead of f32.
## Open tasks [task]
- Update the CLI help text (in progress)
- Add a changelog entry (pending)
- done (1 of 3): Add Kelvin conversions
## Files changed [file]
- tests/kelvin.rs (+1 -1)
- src/convert.rs (+7 -3)
## Decisions [decision]
- use f64 everywhere instead of f32.
- Don't touch the public API names
## Goal [prompt]
- Add Kelvin support to the temperature converter in src/convert.rs and make the tests pass.
## Also [timeline]
- fixed: cargo test";
    assert_eq!(s.text, want);
    // A tiny budget keeps the most critical item, cut.
    let tiny = build(&input, 40);
    assert_eq!(tiny.text, "Don't touch the public API names; use…");
    // Outside a git repository Claude Code records the branch as `HEAD`: not named.
    let no_repo = SnapshotInput {
        git_branch: Some("HEAD".into()),
        ..input.clone()
    };
    let first = build(&no_repo, snapshot::DEFAULT_BUDGET).text;
    assert!(
        first.starts_with("Working state of claude session 2f7864b9 (17 events)."),
        "{first}"
    );
    assert_eq!(snapshot::estimate_tokens("abcd"), 1);
    assert_eq!(snapshot::estimate_tokens("abcde"), 2);
    assert_eq!(snapshot::estimate_tokens("日本語"), 3);
    assert_eq!(snapshot::estimate_tokens(""), 0);
}

#[test]
fn what_is_and_is_not_a_decision() {
    let stated = |text: &str| -> Vec<String> {
        let m = Message {
            id: "u".into(),
            role: Role::User,
            kind: Kind::Text,
            parts: vec![Part::Text { text: text.into() }],
            timestamp: None,
            model: None,
        };
        extract(Agent::Claude, &m)
            .into_iter()
            .filter(|e| e.category == Category::Decision)
            .map(|e| e.subject)
            .collect()
    };
    assert_eq!(
        stated("No, don't delete anything. Just summarise the diff."),
        vec!["No, don't delete anything."]
    );
    assert_eq!(
        stated("Please never push to main"),
        vec!["Please never push to main"]
    );
    assert_eq!(
        stated("Use rustls instead of openssl."),
        vec!["Use rustls instead of openssl."]
    );
    assert_eq!(
        stated("We should go with SQLite rather than Postgres for now."),
        vec!["We should go with SQLite rather than Postgres for now."]
    );
    assert_eq!(
        stated("We decided to use exponential backoff with jitter, max 5 attempts."),
        vec!["We decided to use exponential backoff with jitter, max 5 attempts."]
    );
    // Not decisions: a task, a statement of fact, a question.
    assert!(stated("Use pattern src/**/*.ts to list the files").is_empty());
    assert!(stated("The test always fails on CI and I don't know why.").is_empty());
    assert!(stated("Should we use serde instead of hand parsing?").is_empty());
}

#[test]
fn files_removed_by_the_shell() {
    assert_eq!(
        one(
            "Bash",
            json!({"command": "rm docs/geese.md && git rm -q old.rs"}),
            Some(""),
            false
        ),
        vec![
            r(
                "command",
                "ok",
                "rm docs/geese.md && git rm -q old.rs",
                None,
                Some("shell")
            ),
            r("file", "deleted", "docs/geese.md", None, Some("shell")),
            r("file", "deleted", "old.rs", None, Some("shell")),
        ]
    );
    // Declined by the user: nothing was removed, nothing failed; the user decided.
    assert_eq!(
        one(
            "Bash",
            json!({"command": "rm -rf target"}),
            Some("The user doesn't want to proceed with this tool use."),
            true
        ),
        vec![r(
            "decision",
            "declined",
            "declined Bash: rm -rf target",
            None,
            Some("shell")
        )]
    );
}

#[test]
fn tool_name_spellings_the_adapters_leave_as_they_are() {
    assert_eq!(
        one(
            "copilot_replaceString",
            json!({"filePath": "/p/a.ts", "oldString": "a", "newString": "b"}),
            Some("ok"),
            false
        ),
        vec![r("file", "edited", "/p/a.ts", Some("+1 -1"), Some("edit"))]
    );
    assert_eq!(
        one(
            "read_many_files",
            json!({"paths": ["a.md", "b.md"]}),
            Some("…"),
            false
        ),
        vec![
            r("file", "read", "a.md", None, Some("read")),
            r("file", "read", "b.md", None, Some("read")),
        ]
    );
    assert_eq!(
        one("Delete", json!({"path": "/p/old.ts"}), None, false),
        vec![r("file", "deleted", "/p/old.ts", None, Some("Delete"))]
    );
    assert_eq!(
        one(
            "web_fetch",
            json!({"prompt": "Summarise https://example.org/spec.html please"}),
            Some("…"),
            false
        ),
        vec![r(
            "reference",
            "url",
            "https://example.org/spec.html",
            None,
            Some("web_fetch")
        )]
    );
    // OpenCode's `patch` tool: the patch in `patchText`.
    let patch = "*** Begin Patch\n*** Add File: notes.md\n+hello\n*** End Patch";
    let m = call_msg(
        "patch",
        "edit",
        json!({"patchText": patch}),
        Some("ok"),
        false,
    );
    let got: Vec<(Category, String, String)> = extract(Agent::Opencode, &m)
        .into_iter()
        .map(|e| (e.category, e.action, e.subject))
        .collect();
    assert_eq!(
        got,
        vec![(
            Category::File,
            "written".to_string(),
            "notes.md".to_string()
        )]
    );
}

fn random_value(g: &mut Lcg, depth: u32) -> Value {
    let keys = [
        "command",
        "cmd",
        "file_path",
        "filePath",
        "path",
        "paths",
        "files",
        "content",
        "contents",
        "old_string",
        "new_string",
        "oldString",
        "newString",
        "edits",
        "todos",
        "plan",
        "todoList",
        "status",
        "content",
        "step",
        "title",
        "questions",
        "url",
        "urls",
        "prompt",
        "input",
        "patch",
        "patchText",
        "replacements",
        "skill",
        "description",
        "operation",
    ];
    match if depth > 2 { g.below(3) } else { g.below(6) } {
        0 => {
            let mut parts: Vec<&str> = (0..g.below(12))
                .map(|_| WORDS[g.below(WORDS.len() as u64) as usize])
                .collect();
            for extra in [
                "*** Update File: ",
                "\n",
                "git commit -m '",
                "rm ",
                "$(cat <<'EOF'",
                "&&",
                "\"",
                "Exit code 7",
            ] {
                if g.below(3) == 0 {
                    parts.push(extra);
                }
            }
            Value::String(parts.join(""))
        }
        1 => json!(g.below(1000) as i64 - 500),
        2 => Value::Null,
        3 | 4 => Value::Object(
            (0..g.below(5))
                .map(|_| {
                    (
                        keys[g.below(keys.len() as u64) as usize].to_string(),
                        random_value(g, depth + 1),
                    )
                })
                .collect(),
        ),
        _ => Value::Array(
            (0..g.below(4))
                .map(|_| random_value(g, depth + 1))
                .collect(),
        ),
    }
}

#[test]
fn extract_never_panics_and_bounds_its_fields() {
    let names = [
        "Bash",
        "shell",
        "exec_command",
        "Edit",
        "MultiEdit",
        "Write",
        "Read",
        "apply_patch",
        "TodoWrite",
        "update_plan",
        "write_todos",
        "manage_todo_list",
        "Task",
        "Skill",
        "ExitPlanMode",
        "AskUserQuestion",
        "request_user_input",
        "WebFetch",
        "mcp__a__b",
        "editFiles",
        "run_in_terminal",
        "copilot_replaceString",
        "Delete",
        "read_many_files",
        "TaskCreate",
        "Other",
    ];
    let mut g = Lcg(42);
    for _ in 0..4000 {
        let name = names[g.below(names.len() as u64) as usize];
        let input = random_value(&mut g, 0);
        let output = match g.below(3) {
            0 => None,
            1 => Some("Process exited with code 3\nerror: x".repeat(g.below(400) as usize)),
            _ => Some(format!(
                "User has answered your questions: \"{}\"=\"{}\"",
                "q".repeat(g.below(900) as usize),
                "é".repeat(g.below(900) as usize)
            )),
        };
        let is_error = g.below(4) == 0;
        let tool = memtrail_adapters::normalize_tool_name(name);
        let mut m = call_msg(name, &tool, input, output.as_deref(), is_error);
        if g.below(3) == 0 {
            m.role = Role::User;
            m.parts.push(Part::Text {
                text: random_value(&mut g, 3)
                    .to_string()
                    .repeat(g.below(60) as usize),
            });
        }
        let evs = extract(Agent::Codex, &m);
        for e in &evs {
            assert!(e.subject.len() <= events::MAX_SUBJECT);
            assert!(
                e.detail
                    .as_ref()
                    .is_none_or(|d| d.len() <= events::MAX_DETAIL)
            );
            assert!((1..=4).contains(&e.priority));
        }
        assert_eq!(evs, extract(Agent::Codex, &m), "deterministic");
    }
}

#[test]
fn snapshot_without_prompts_states_the_title_and_unresolved_errors() {
    use Category::*;
    let mut failed = se(2, 0, Error, "exit", "shell: make", "a", "shell");
    failed.event.detail = Some("Process exited with code 2\nmake: *** [all] Error 2".into());
    let input = SnapshotInput {
        agent: "codex".into(),
        session_id: "t1".into(),
        title: Some("Fix the  build".into()),
        events: vec![se(1, 0, Command, "failed", "make", "a", "shell"), failed],
        ..Default::default()
    };
    let s = build(&input, 2048);
    assert_eq!(
        s.text,
        "Working state of codex session t1 (2 events). More: MCP timeline(session_id=\"t1\", category=\"<a section's [category]>\") or `memtrail search \"<words>\" --session t1`.
## Unresolved errors [error]
- `make` failed (shell, exit 2): make: *** [all] Error 2
## Goal [prompt]
- session title: Fix the build"
    );
}

#[test]
fn reading_the_same_file_three_times_in_a_row_is_a_loop_an_edit_between_breaks_it() {
    use Category::*;
    let evs = vec![
        se(1, 0, File, "read", "src/a.rs", "a", "read"),
        se(2, 1, File, "read", "src/a.rs", "b", "read"),
        se(3, 2, File, "edited", "src/a.rs", "c", "edit"),
        se(4, 3, File, "read", "src/a.rs", "d", "read"),
        se(5, 4, File, "read", "src/a.rs", "e", "read"),
        se(6, 5, File, "read", "src/a.rs", "f", "read"),
        se(7, 6, File, "read", "src/a.rs", "g", "read"),
    ];
    let d = correlate(&evs);
    assert_eq!(
        rows(&d),
        vec![r(
            "retry",
            "loop",
            "read: src/a.rs",
            Some("4 times in a row"),
            Some("read")
        )]
    );
    assert_eq!((d[0].id, d[0].seq), (7, 6));
}

#[test]
fn snapshot_merges_a_file_written_relative_and_absolute() {
    use Category::*;
    let mut a = se(1, 0, File, "edited", "/elsewhere/p/src/a.rs", "a", "edit");
    a.event.detail = Some("+2 -1".into());
    let mut b = se(2, 1, File, "edited", "src/a.rs", "b", "edit");
    b.event.detail = Some("+1 -0".into());
    let input = SnapshotInput {
        session_id: "x".into(),
        events: vec![a, b],
        ..Default::default()
    };
    let text = build(&input, 300).text;
    assert!(
        text.ends_with("## Files changed [file]\n- src/a.rs (2 changes, +3 -1)"),
        "{text}"
    );
}

/// Each agent's standard session through the store: the events it gives back (what snapshots,
/// `resume` and sync read) are the ones extracted from the transcript, field for field, and a
/// prompt whose subject is its message's body keeps no copy of it (schema 22): stored empty.
#[test]
fn stored_events_read_back_as_extracted_and_prompts_are_kept_once() {
    use memtrail_runtime::read::ReadStore;
    for agent in [
        Agent::Claude,
        Agent::Codex,
        Agent::Gemini,
        Agent::Cursor,
        Agent::Vscode,
        Agent::Opencode,
    ] {
        let path = standard_path(agent);
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("memtrail.db");
        let mut store = memtrail_runtime::store::Store::open(&db).unwrap();
        memtrail_runtime::ingest::ingest_file(&mut store, agent, &path, None).unwrap();
        let raw = support::open_raw(&db).unwrap();
        let rowid: i64 = raw
            .query_row("SELECT id FROM sessions", [], |r| r.get(0))
            .unwrap();
        let read = store.session_events(rowid).unwrap();
        let field = |e: &StoredEvent| {
            let ev = &e.event;
            (
                e.seq,
                ev.category,
                ev.action.clone(),
                ev.subject.clone(),
                ev.detail.clone(),
                ev.call_id.clone(),
                ev.tool.clone(),
            )
        };
        let extracted = stored(agent, &support::load(agent, &path));
        assert_eq!(
            read.iter().map(field).collect::<Vec<_>>(),
            extracted.iter().map(field).collect::<Vec<_>>(),
            "{agent}"
        );
        let prompts = read
            .iter()
            .filter(|e| e.event.category == Category::Prompt)
            .count();
        let (kept_once, empty_elsewhere): (i64, i64) = raw
            .query_row(
                "SELECT count(*) FILTER (WHERE category = 'prompt'),
                        count(*) FILTER (WHERE category <> 'prompt')
                 FROM events WHERE subject = ''",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert!(prompts >= 2, "{agent}: {prompts} prompts");
        assert!(kept_once >= 1, "{agent}: no prompt stored once");
        assert_eq!(empty_elsewhere, 0, "{agent}");
    }
}
