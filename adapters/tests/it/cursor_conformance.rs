//! Conformance of the Cursor reader with the files in `../shared/fixtures/cursor` (documented in
//! `docs/agents/README.md#fixtures` and `docs/agents/cursor.md#transcript-format`). Expected
//! values were checked against the files themselves.
//!
//! - `cursor-transcript.jsonl`: code-session-memory's synthetic agent transcript, read as a
//!   Cursor transcript.
//! - `cursor-session.json` / `cursor-turn1.json`: code-session-memory's **conversion** of
//!   Cursor's `state.vscdb` into its own `FullMessage[]` shape. That is not a Cursor file format,
//!   and memtrail does not read it (nor `state.vscdb`); the tests only pin that fact.
//!
//! The folder lives outside the repository. When it is missing the tests print a note and pass,
//! unless `MEMTRAIL_REQUIRE_SHARED_FIXTURES=1`.

use crate::common;

use common::{assert_split_equivalence_with, lines, messages, part_text};
use memtrail_adapters::cursor::{self, CursorReader};
use memtrail_adapters::{Batch, Kind, LineReader, ParseStats, Role};
use std::path::PathBuf;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures/cursor");

fn shared() -> Option<PathBuf> {
    memtrail_testkit::shared_fixtures(SHARED, "shared Cursor fixture tests")
}

fn read(bytes: &[u8]) -> Batch {
    let mut reader = CursorReader::new();
    let mut batch = Batch::default();
    for l in lines(bytes) {
        reader.line(l, &mut batch);
    }
    reader.finish(&mut batch);
    batch
}

#[test]
fn csm_transcript_five_messages_with_user_query_removed() {
    let Some(dir) = shared() else { return };
    let bytes = std::fs::read(dir.join("cursor-transcript.jsonl")).unwrap();
    assert_eq!(bytes.len(), 545);
    let b = read(&bytes);
    assert_eq!(
        b.stats,
        ParseStats {
            lines: 5,
            skipped_known: 0,
            skipped_unknown: 0,
            malformed: 0
        }
    );
    let ms = messages(&b);
    assert_eq!(
        ms.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        ["line-0", "line-1", "line-2", "line-3", "line-4"]
    );
    use Role::{Assistant as A, User as U};
    assert_eq!(
        ms.iter().map(|m| m.role).collect::<Vec<_>>(),
        [U, A, A, U, A]
    );
    let texts: Vec<&str> = ms.iter().map(|m| part_text(m, 0)).collect();
    assert_eq!(
        texts,
        [
            "Read a file",
            "Checking the project structure.",
            "There's no such file. Which one do you want?",
            "Read another one",
            "Here are two files from the project.",
        ]
    );
    assert!(
        ms.iter()
            .all(|m| m.parts.len() == 1 && m.kind == Kind::Text && m.timestamp.is_none())
    );
    assert_eq!(b.meta.title.as_deref(), Some("Read a file"));
    assert_eq!((b.meta.started_at, b.meta.updated_at), (None, None));
    assert_split_equivalence_with(
        &|| Box::new(CursorReader::new()),
        "cursor-transcript.jsonl",
        &bytes,
    );
}

#[test]
fn csm_session_dumps_are_not_a_cursor_format_and_are_not_read() {
    let Some(dir) = shared() else { return };
    let session = std::fs::read(dir.join("cursor-session.json")).unwrap();
    let turn1 = std::fs::read(dir.join("cursor-turn1.json")).unwrap();
    assert_eq!(session.len(), 2408);
    assert_eq!(session, turn1, "the two dumps are byte-identical upstream");
    // CSM's own shape: {composerId, name, messages:[{info, parts}]}.
    let v: serde_json::Value = serde_json::from_slice(&session).unwrap();
    assert!(v.get("composerId").is_some() && v.get("messages").is_some());
    // Import never lists them: they are not under `<projects>/<slug>/agent-transcripts/`.
    let tmp = tempfile::tempdir().unwrap();
    let at = tmp.path().join("projects/p/agent-transcripts");
    std::fs::create_dir_all(&at).unwrap();
    std::fs::write(tmp.path().join("projects/p/cursor-session.json"), &session).unwrap();
    assert!(
        cursor::discover_in(&[tmp.path().join("projects")])
            .unwrap()
            .is_empty()
    );
    // Fed to the transcript reader anyway (pretty-printed JSON, 57 lines), every line is
    // malformed and nothing is invented.
    let b = read(&session);
    assert_eq!(b.stats.lines, 57);
    assert_eq!(b.stats.malformed, 57);
    assert!(b.records.is_empty());
}
