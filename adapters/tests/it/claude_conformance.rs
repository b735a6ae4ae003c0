//! Conformance of the Claude Code reader with the real transcripts in
//! `../shared/fixtures/claude` (documented in `docs/agents/README.md#fixtures` and
//! `docs/agents/claude.md#one-line-per-content-block`). Expected values were checked against the
//! files themselves (line by line), not only against the README.
//!
//! The folder lives outside the repository. When it is missing the tests print a note and pass,
//! unless `MEMTRAIL_REQUIRE_SHARED_FIXTURES=1`, which turns a missing folder into a failure.

use crate::common;

use common::{assert_split_equivalence, messages, part_text, read_file, shape};
use memtrail_adapters::claude::{self, ClaudeReader};
use memtrail_adapters::{
    Agent, Batch, Kind, LineReader, ParseStats, Role, SessionRef, parse_rfc3339_ms,
};
use std::path::PathBuf;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures/claude");

/// The shared fixture folder, or `None` (with a note) when it is absent and not required.
fn shared() -> Option<PathBuf> {
    memtrail_testkit::shared_fixtures(SHARED, "shared Claude fixture tests")
}

fn fixture(name: &str) -> Option<Batch> {
    Some(read_file(&shared()?.join(name)))
}

fn ts(s: &str) -> Option<i64> {
    Some(parse_rfc3339_ms(s).expect("valid timestamp"))
}

fn stats(lines: u64, skipped_known: u64) -> ParseStats {
    ParseStats {
        lines,
        skipped_known,
        skipped_unknown: 0,
        malformed: 0,
    }
}

#[test]
fn every_shared_fixture_reads_cleanly_and_splits_equivalently() {
    let Some(dir) = shared() else { return };
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("list shared fixtures")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    names.sort();
    for documented in [
        "claude-session.jsonl",
        "claude-turn1.jsonl",
        "codemie-tmp-private-4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
        "codemie-tmp-private-agent-50243ee8.jsonl",
        "entire-cli-ckpt-9b3838281539.jsonl",
        "entire-cli-ckpt-dc49cb8a2a42.jsonl",
    ] {
        assert!(
            names.iter().any(|p| p.ends_with(documented)),
            "missing shared fixture {documented}"
        );
    }
    for path in names {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let bytes = std::fs::read(&path).unwrap();
        let batch = read_file(&path);
        assert_eq!(batch.stats.skipped_unknown, 0, "{name}: unknown line types");
        assert_eq!(batch.stats.malformed, 0, "{name}: malformed lines");
        assert!(!messages(&batch).is_empty(), "{name}: no messages");
        for m in messages(&batch) {
            assert!(!m.parts.is_empty(), "{name}: empty message {}", m.id);
        }
        assert_split_equivalence(&name, &bytes);
    }
}

#[test]
fn turn1_three_messages() {
    let Some(b) = fixture("claude-turn1.jsonl") else {
        return;
    };
    // 6 lines: 2 queue-operation (skipped), 2 user, 2 assistant.
    assert_eq!(b.stats, stats(6, 2));
    let ms = messages(&b);
    let ids: Vec<&str> = ms.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "493c7f09-50ae-43ad-ac95-6c348617b310",
            "msg_01Xvahj6AWHefEdTtJbptgKQ",
            "msg_01Sfwrs28f9ukoRh9BuQDjGZ",
        ]
    );
    assert_eq!(
        ms.iter().map(|m| m.role).collect::<Vec<_>>(),
        [Role::User, Role::Assistant, Role::Assistant]
    );
    assert_eq!(shape(ms[0]), ["text"]);
    assert_eq!(
        part_text(ms[0], 0),
        "List files in the current directory using the Bash tool. Just run: ls -1"
    );
    assert_eq!(shape(ms[1]), ["Bash"]);
    assert_eq!(ms[1].kind, Kind::ToolCall);
    let call = ms[1].tool_calls().next().unwrap();
    assert_eq!(call.id, "toolu_01QZeuKVnEWzQSf1wKdKXmfD");
    assert_eq!(call.tool, "shell");
    assert_eq!(call.input["command"], "ls -1");
    assert_eq!(
        call.output.as_deref(),
        Some(
            "README.md\nTODO\ndist\nmcp\nnode_modules\npackage-lock.json\npackage.json\nplugin\n\
             scripts\nskill\nsrc\ntests\ntsconfig.json\nvitest.config.ts"
        )
    );
    assert!(!call.is_error);
    assert_eq!(shape(ms[2]), ["text"]);
    assert_eq!(ms[2].kind, Kind::Text);
    assert_eq!(ms[2].model.as_deref(), Some("claude-sonnet-4-6"));
    assert_eq!(ms[2].timestamp, ts("2026-02-20T14:24:30.042Z"));
    // The result was attached in place: no separate ToolResult record.
    assert_eq!(b.records.len(), 3);

    let meta = &b.meta;
    assert_eq!(
        meta.project_dir.as_deref(),
        Some("/home/user/Documents/ai/opencode-memory")
    );
    assert_eq!(meta.git_branch.as_deref(), Some("main"));
    assert_eq!(meta.agent_version.as_deref(), Some("2.1.49"));
    assert_eq!(meta.model.as_deref(), Some("claude-sonnet-4-6"));
    assert_eq!(
        meta.title.as_deref(),
        Some("List files in the current directory using the Bash tool. Just run: ls -1")
    );
    assert_eq!(meta.started_at, ts("2026-02-20T14:24:25.763Z"));
    assert_eq!(meta.updated_at, ts("2026-02-20T14:24:30.042Z"));
}

#[test]
fn session_five_messages_extending_turn1() {
    let (Some(turn1), Some(b)) = (
        fixture("claude-turn1.jsonl"),
        fixture("claude-session.jsonl"),
    ) else {
        return;
    };
    assert_eq!(b.stats, stats(10, 4));
    let ms = messages(&b);
    assert_eq!(ms.len(), 5);
    let t1: Vec<&str> = messages(&turn1).iter().map(|m| m.id.as_str()).collect();
    let first3: Vec<&str> = ms[..3].iter().map(|m| m.id.as_str()).collect();
    assert_eq!(first3, t1);
    assert_eq!(ms[3].id, "8f6f8872-94c4-4e23-8eec-f258ebc02053");
    assert_eq!(ms[3].role, Role::User);
    assert_eq!(
        part_text(ms[3], 0),
        "How many files did you list? Just give me a number."
    );
    assert_eq!(ms[4].id, "msg_01HfrQkNUfJPsvmbS25KLnuK");
    assert_eq!(shape(ms[4]), ["text"]);
    assert_eq!(part_text(ms[4], 0), "14");

    // Reading only the bytes after turn 1 (the file grew) gives exactly the two new messages.
    let dir = shared().unwrap();
    let a = std::fs::read(dir.join("claude-turn1.jsonl")).unwrap();
    let full = std::fs::read(dir.join("claude-session.jsonl")).unwrap();
    assert!(full.starts_with(&a), "turn1 is a byte prefix of session");
    let rest = common::read(&common::lines(&full[a.len()..]));
    let new: Vec<&str> = messages(&rest).iter().map(|m| m.id.as_str()).collect();
    assert_eq!(
        new,
        [
            "8f6f8872-94c4-4e23-8eec-f258ebc02053",
            "msg_01HfrQkNUfJPsvmbS25KLnuK"
        ]
    );
}

#[test]
fn dc49_blocks_split_over_lines_are_merged() {
    let Some(b) = fixture("entire-cli-ckpt-dc49cb8a2a42.jsonl") else {
        return;
    };
    // 16 lines: 1 file-history-snapshot, 5 user, 10 assistant.
    assert_eq!(b.stats, stats(16, 1));
    let ms = messages(&b);
    let ids: Vec<&str> = ms.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "4c5435c6-5027-4ae1-97f1-62eff3de6b8d",
            "msg_01NA37N5cqGogDMy6Bb8AJ8v",
            "msg_01WLT8gzCQP4qvgTSWk4rLpt",
            "msg_013nBkTkfRsE8UABbCi7FTB5",
        ]
    );
    // The docs list [text, Bash, Bash] etc. because CSM drops thinking; we keep the (non-empty)
    // thinking block as the first part.
    assert_eq!(shape(ms[0]), ["text"]);
    assert_eq!(shape(ms[1]), ["thinking", "text", "Bash", "Bash"]);
    assert_eq!(shape(ms[2]), ["thinking", "text", "Task", "Task"]);
    assert_eq!(shape(ms[3]), ["thinking", "text"]);
    assert_eq!(
        part_text(ms[1], 1),
        "I'll review the changes in this branch compared to main."
    );
    assert!(part_text(ms[1], 0).starts_with("The user wants me to review the changes"));

    let bash: Vec<_> = ms[1].tool_calls().collect();
    assert_eq!(bash[0].id, "toolu_01L6bnxdocQ6RpLgu7JpFhQm");
    assert_eq!(bash[1].id, "toolu_01Wz397Kqx5Ubc2USkR2nMau");
    for c in &bash {
        assert_eq!(c.tool, "shell");
        assert!(!c.is_error);
    }
    assert_eq!(bash[0].output.as_ref().map(String::len), Some(2263));
    assert!(
        bash[1]
            .output
            .as_deref()
            .unwrap()
            .starts_with("0eca510 add chunking")
    );

    // Task results are arrays of text blocks, joined by "\n".
    let task: Vec<_> = ms[2].tool_calls().collect();
    assert_eq!(task[0].id, "toolu_01Hp3Cebp2EZRty3WAiW2wvj");
    assert_eq!(task[1].id, "toolu_01ExXkfHpXgw64oCoaKE3WVD");
    for c in &task {
        assert_eq!(c.tool, "subagent");
    }
    let out0 = task[0].output.as_deref().expect("Task result attached");
    let out1 = task[1].output.as_deref().expect("Task result attached");
    assert!(out0.starts_with("I have completed my code review."));
    assert!(
        out0.ends_with("\nagentId: a81fed1 (for resuming to continue this agent's work if needed)")
    );
    assert!(out1.starts_with("I have completed the code review."));
    assert!(
        out1.ends_with("\nagentId: a983775 (for resuming to continue this agent's work if needed)")
    );
    assert_eq!((out0.len(), out1.len()), (2055, 1886));
    assert_eq!(b.records.len(), 4, "all four results attached in place");
    assert_eq!(b.meta.git_branch.as_deref(), Some("user/chunking"));
    assert_eq!(b.meta.model.as_deref(), Some("claude-opus-4-5-20251101"));
}

#[test]
fn codemie_three_writes_in_one_message() {
    let Some(b) = fixture("codemie-tmp-private-4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl") else {
        return;
    };
    // 25 lines: 6 file-history-snapshot, 9 user, 10 assistant.
    assert_eq!(b.stats, stats(25, 6));
    let ms = messages(&b);
    let shapes: Vec<Vec<String>> = ms.iter().map(|m| shape(m)).collect();
    assert_eq!(
        shapes,
        [
            vec!["text"],
            vec!["text", "Write", "Write", "Write"],
            vec!["text"],
            vec!["text"],
            vec!["Read"],
            vec!["Edit"],
            vec!["text"],
            vec!["text"],
            vec!["Bash"],
            vec!["text"],
        ]
    );
    let roles: Vec<Role> = ms.iter().map(|m| m.role).collect();
    use Role::{Assistant as A, User as U};
    assert_eq!(roles, [U, A, A, U, A, A, A, U, A, A]);
    assert_eq!(ms[1].id, "msg_bdrk_013SYvCzWGkVVXBeihWmL3gF");
    let writes: Vec<_> = ms[1].tool_calls().collect();
    for (c, file) in writes.iter().zip(["hello.py", "hello.md", "hello.js"]) {
        assert_eq!(c.tool, "write");
        assert_eq!(
            c.output.as_deref(),
            Some(format!("File created successfully at: /tmp/private/{file}").as_str())
        );
    }
    // `rm hello.js` produced an empty result: attached as Some(""), not missing.
    let rm = ms[8].tool_calls().next().unwrap();
    assert_eq!(rm.output.as_deref(), Some(""));
    assert_eq!(b.meta.title.as_deref(), Some("create hello.py, md and js"));
    assert_eq!(b.meta.agent_version.as_deref(), Some("2.0.64"));
    assert_eq!(b.meta.git_branch.as_deref(), Some("analytics-v2"));
}

#[test]
fn ckpt_9b38_nine_messages() {
    let Some(b) = fixture("entire-cli-ckpt-9b3838281539.jsonl") else {
        return;
    };
    // 31 lines: 4 file-history-snapshot + 11 progress + 2 system are skipped, and so is the
    // assistant line whose only block is the text "\n\n" (empty once trimmed).
    assert_eq!(b.stats, stats(31, 18));
    let ms = messages(&b);
    use Role::{Assistant as A, User as U};
    assert_eq!(
        ms.iter().map(|m| m.role).collect::<Vec<_>>(),
        [U, A, U, A, A, A, U, A, A]
    );
    let shapes: Vec<Vec<String>> = ms.iter().map(|m| shape(m)).collect();
    assert_eq!(
        shapes,
        [
            vec!["text"],
            vec!["text"],
            vec!["text"],
            vec!["thinking", "Glob"],
            vec!["Write"],
            vec!["text"],
            vec!["text"],
            vec!["Bash"],
            vec!["text"],
        ]
    );
    assert_eq!(part_text(ms[1], 0), "Hello! How can I help you today?");
    assert_eq!(ms[3].id, "msg_01VVVEY4DosRUDcGkTzS5ps2");
    // The message's first non-empty line is the thinking block.
    assert_eq!(ms[3].timestamp, ts("2026-02-06T06:43:15.015Z"));
    assert_eq!(ms[3].tool_calls().next().unwrap().tool, "list");
    assert_eq!(
        ms[7].tool_calls().next().unwrap().output.as_deref(),
        Some("")
    );
    assert_eq!(b.meta.title.as_deref(), Some("hello"));
    assert_eq!(
        b.meta.project_dir.as_deref(),
        Some("/home/user/workspace/cli/.worktrees/3")
    );
    assert_eq!(b.meta.agent_version.as_deref(), Some("2.1.33"));
}

#[test]
fn subagent_2_0_file_and_its_parent() {
    let Some(dir) = shared() else { return };
    let b = read_file(&dir.join("codemie-tmp-private-agent-50243ee8.jsonl"));
    assert_eq!(b.stats, stats(2, 0));
    let ms = messages(&b);
    assert_eq!(shape(ms[0]), ["text"]);
    assert_eq!(part_text(ms[0], 0), "Warmup");
    assert_eq!(ms[1].role, Role::Assistant);
    assert_eq!(ms[1].id, "msg_1a8efe42-fc43-448d-a3ae-bb8eef814eba");
    assert_eq!(shape(ms[1]), ["text"]);

    // Lay the pair out as Claude Code 2.0 does: `<projects>/<project>/{<session>,agent-<id>}.jsonl`.
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("projects").join("-tmp-private");
    std::fs::create_dir_all(&proj).unwrap();
    let parent = "4c2ddfdc-b619-4525-8d03-1950fb1b0257";
    std::fs::copy(
        dir.join(format!("codemie-tmp-private-{parent}.jsonl")),
        proj.join(format!("{parent}.jsonl")),
    )
    .unwrap();
    std::fs::copy(
        dir.join("codemie-tmp-private-agent-50243ee8.jsonl"),
        proj.join("agent-50243ee8.jsonl"),
    )
    .unwrap();
    let found = claude::discover(&tmp.path().join("projects")).unwrap();
    assert_eq!(
        found,
        [
            proj.join(format!("{parent}.jsonl")),
            proj.join("agent-50243ee8.jsonl")
        ]
    );
    assert_eq!(
        claude::identify(&found[0]).unwrap(),
        SessionRef {
            agent: Agent::Claude,
            external_id: parent.to_string(),
            parent_external_id: None,
        }
    );
    assert_eq!(
        claude::identify(&found[1]).unwrap(),
        SessionRef {
            agent: Agent::Claude,
            external_id: format!("{parent}/agent-50243ee8"),
            parent_external_id: Some(parent.to_string()),
        }
    );
}

#[test]
fn truncated_shared_lines_never_panic() {
    let Some(dir) = shared() else { return };
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let bytes = std::fs::read(entry.path()).unwrap();
        for line in common::lines(&bytes) {
            // Cut every line at a handful of points, including inside multi-byte characters.
            for cut in [1, 2, 7, line.len() / 3, line.len() / 2, line.len() - 1] {
                let mut reader = ClaudeReader::new();
                let mut batch = Batch::default();
                reader.line(&line[..cut.min(line.len())], &mut batch);
                reader.finish(&mut batch);
                assert_eq!(batch.stats.lines, 1);
                assert_eq!(batch.stats.malformed, 1, "a cut line is malformed");
                assert!(batch.records.is_empty());
            }
        }
    }
}
