//! Conformance of Roo Code's tasks (read by Cline's reader with `Flavor::Roo`) with
//! `fixtures/roo/` (written by `fixtures/roo/gen.py` in the shapes Roo Code 3.52.1 writes;
//! `docs/agents/roo.md`). Expected values were worked out by hand from the fixtures.

use crate::cline_conformance::shape;
use memtrail_adapters::{Agent, Batch, Env, ParseStats, Record, Source, roo};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const ROOT: &str = "vscode/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks";
const PARENT: &str = "0b6f2c1e-4d5a-4e7b-9c8d-1a2b3c4d5e6f";
const CHILD: &str = "7e1d9a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b";
const T0: i64 = 1_764_669_600_000;

fn task(id: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/roo")
        .join(ROOT)
        .join(id)
        .join("api_conversation_history.json")
}

fn read(path: &Path) -> Batch {
    let Some(Source::Doc(mut reader)) = roo::source_for(path) else {
        panic!("no document reader for {}", path.display())
    };
    let mut b = Batch::default();
    reader.read(&std::fs::read(path).unwrap(), &mut b);
    b
}

/// The exit code of the tool call `id` among the batch's messages.
fn exit_code(b: &Batch, id: &str) -> Option<i64> {
    b.records.iter().find_map(|r| match r {
        Record::Message(m) => m.tool_calls().find(|c| c.id == id)?.exit_code,
        _ => None,
    })
}

#[test]
fn parent_task_with_reasoning_sub_task_exit_code_and_condensing() {
    let b = read(&task(PARENT));
    assert_eq!(
        b.stats,
        ParseStats {
            lines: 12,
            skipped_known: 1,
            skipped_unknown: 0,
            malformed: 0
        }
    );
    let n = Value::Null;
    assert_eq!(
        shape(&b),
        [
            json!([
                "0",
                "user",
                "text",
                T0 + 100,
                n,
                [["text", "Ajoute un test pour parse_price"]]
            ]),
            json!(["2", "assistant", "tool_call", T0 + 2000, n, [
                ["text", "Je lis le fichier."],
                ["call", "call_1", "read_file", "read", {"path": "src/price.rs"},
                 "File: src/price.rs\n1 | pub fn parse_price(s: &str) -> u32 { s.parse().unwrap() }",
                 false]]]),
            json!(["4", "assistant", "tool_call", T0 + 4000, n, [
                ["call", "call_2", "new_task", "new_task",
                 {"mode": "code", "message": "Écris le test", "todos": ""},
                 format!("Subtask {CHILD} completed.\n\nResult:\nTest ajouté dans tests/price.rs"),
                 false]]]),
            json!(["6", "assistant", "tool_call", T0 + 61000, n, [
                ["call", "call_3", "execute_command", "shell", {"command": "cargo test"},
                 "Command executed in terminal  within working directory '/home/user/shop'. \
                  Command execution was not successful, inspect the cause and adjust as \
                  needed.\nExit code: 101\nOutput:\nthread 'parses' panicked: ParseIntError",
                 true]]]),
            json!([
                "8",
                "system",
                "summary",
                T0 + 70001,
                n,
                [[
                    "text",
                    "## Résumé\n1. Demande : un test pour parse_price.\n2. Fait : test ajouté ; \
                 cargo test échoue (exit 101)."
                ]]
            ]),
            json!(["9", "assistant", "tool_call", T0 + 80000, n, [
                ["text", "On continue : je corrige parse_price."],
                ["call", "call_4", "mcp--memtrail--search", "mcp", {"query": "parse_price"},
                 "[]", false]]]),
            json!([
                "10",
                "user",
                "text",
                T0 + 81000,
                n,
                [["text", "日本語でも説明してください"]]
            ]),
            json!(["11", "assistant", "tool_call", T0 + 90000, n, [
                ["call", "call_5", "attempt_completion", "attempt_completion",
                 {"result": "parse_price renvoie une erreur au lieu de paniquer. 説明：エラーを返します。"},
                 n, false]]]),
        ]
    );
    assert_eq!(exit_code(&b, "call_3"), Some(101));
    assert_eq!(exit_code(&b, "call_1"), None, "not a shell call");
    assert_eq!(b.meta.project_dir.as_deref(), Some("/home/user/shop"));
    assert_eq!(
        b.meta.title.as_deref(),
        Some("Ajoute un test pour parse_price")
    );
    assert_eq!(
        (b.meta.started_at, b.meta.updated_at),
        (Some(T0 + 100), Some(T0 + 90000))
    );
}

#[test]
fn sub_task_identity_discovery_and_payload() {
    let p = roo::identify(&task(PARENT)).unwrap();
    assert_eq!(
        (p.agent, p.external_id.as_str(), p.parent_external_id),
        (Agent::Roo, PARENT, None)
    );
    let c = roo::identify(&task(CHILD)).unwrap();
    assert_eq!(
        (c.external_id.as_str(), c.parent_external_id.as_deref()),
        (CHILD, Some(PARENT))
    );
    let b = read(&task(CHILD));
    let n = Value::Null;
    assert_eq!(
        shape(&b),
        [
            json!([
                "0",
                "user",
                "text",
                T0 + 5000,
                n,
                [["text", "Écris le test"]]
            ]),
            json!(["1", "assistant", "tool_call", T0 + 20000, n, [
                ["call", "call_c1", "write_to_file", "write",
                 {"path": "tests/price.rs",
                  "content": "#[test]\nfn parses() {\n    assert_eq!(shop::parse_price(\"3\"), 3);\n}\n",
                  "line_count": 4},
                 "<file_write_result>\n<path>tests/price.rs</path>\n<operation>created</operation>\n</file_write_result>",
                 false]]]),
            json!(["3", "assistant", "tool_call", T0 + 30000, n, [
                ["call", "call_c2", "attempt_completion", "attempt_completion",
                 {"result": "Test ajouté dans tests/price.rs"}, n, false]]]),
        ]
    );
    let root = task(PARENT)
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let found = memtrail_adapters::cline::discover_in(&[root]);
    assert_eq!(found.files, [task(PARENT), task(CHILD)]);

    let ev = roo::parse_hook_payload(
        br#"{"hookName":"TaskStart","taskId":"t-1","workspaceRoots":["/w"]}"#,
        &Env::sandbox(Path::new("/h")),
    )
    .unwrap();
    assert_eq!(
        (
            ev.agent,
            ev.event.as_str(),
            ev.session_id.as_deref(),
            ev.cwd.as_deref()
        ),
        (Agent::Roo, "SessionStart", Some("t-1"), Some("/w"))
    );
}
