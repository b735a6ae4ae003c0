//! Goose: the database reader (read-only, incremental, rewrites), the legacy JSONL reader, hook
//! payloads, identity and discovery on the project's own fixtures (`fixtures/goose/`, described
//! in its README and in `docs/agents/goose.md`). Expected values are read off the fixtures by
//! hand.

use memtrail_adapters::goose::{self, LegacyReader};
use memtrail_adapters::{
    Agent, Batch, DbBatch, DocReader, Env, Kind, Message, ParseStats, Part, Record, Role, ToolCall,
};
use rusqlite::Connection;
use serde_json::json;
use std::path::{Path, PathBuf};

const SID: &str = "20260301_1";
/// 2026-03-01T10:15:00Z in seconds: the fixture's first message.
const T: i64 = 1_772_360_100;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/goose")
}

fn sql(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).unwrap()
}

/// A Goose database in a folder of its own, written by a connection in WAL mode as Goose's.
struct GooseDb {
    dir: tempfile::TempDir,
    path: PathBuf,
}

impl GooseDb {
    /// The schema and `scripts`, written by a writer that is closed afterwards (Goose not
    /// running: its last connection checkpointed and removed the WAL).
    fn closed(scripts: &[&str]) -> GooseDb {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let db = GooseDb { dir, path };
        let conn = db.writer();
        conn.execute_batch(&sql("schema.sql")).unwrap();
        for s in scripts {
            conn.execute_batch(&sql(s)).unwrap();
        }
        drop(conn);
        db
    }

    /// A writer as Goose opens one (WAL; automatic checkpoints off so the WAL keeps the writes).
    fn writer(&self) -> Connection {
        let conn = Connection::open(&self.path).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;")
            .unwrap();
        conn
    }

    fn files(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn read(&self, since: i64) -> DbBatch {
        goose::read_db(&self.path, Some(SID), since).unwrap()
    }
}

fn msgs(b: &DbBatch) -> Vec<&Message> {
    b.sessions[0]
        .records
        .iter()
        .map(|r| match r {
            Record::Message(m) => m,
            other => panic!("not a message: {other:?}"),
        })
        .collect()
}

fn call(m: &Message, i: usize) -> &ToolCall {
    match &m.parts[i] {
        Part::ToolCall(c) => c,
        other => panic!("part {i} of {} is not a call: {other:?}", m.id),
    }
}

fn text(m: &Message) -> String {
    m.text()
}

/// Turn 1 read whole from a closed database: four messages (the two responses are attached to
/// their calls), the session's row, and no file created next to Goose's database.
#[test]
fn turn1_from_a_closed_database() {
    let db = GooseDb::closed(&["turn1.sql"]);
    assert_eq!(db.files(), ["sessions.db"]);
    let b = db.read(0);
    assert_eq!(
        db.files(),
        ["sessions.db"],
        "a read must not create -wal/-shm"
    );
    assert_eq!(b.watermark, 6);
    assert_eq!(b.sessions.len(), 1);
    let s = &b.sessions[0];
    assert_eq!(s.session.agent, Agent::Goose);
    assert_eq!(s.session.external_id, SID);
    assert_eq!(s.session.parent_external_id, None);
    assert_eq!(s.meta.project_dir.as_deref(), Some("/home/user/demo"));
    assert_eq!(s.meta.title.as_deref(), Some("Réparer le test du parseur"));
    assert_eq!(s.meta.model.as_deref(), Some("gpt-4.1"));
    assert_eq!(s.meta.started_at, Some(T * 1000));
    // The row's updated_at (10:15:40) is later than the last message (10:15:20).
    assert_eq!(s.meta.updated_at, Some((T + 40) * 1000));
    assert_eq!(
        s.stats,
        ParseStats {
            lines: 6,
            skipped_known: 0,
            skipped_unknown: 0,
            malformed: 0
        }
    );
    let m = msgs(&b);
    assert_eq!(m.len(), 4);

    assert_eq!(
        (m[0].id.as_str(), m[0].role, m[0].kind),
        ("msg_a1", Role::User, Kind::Text)
    );
    assert_eq!(
        text(m[0]),
        "Corrige le test qui échoue dans src/parser.rs — テストを直して"
    );
    assert_eq!(m[0].timestamp, Some(T * 1000));

    assert_eq!(
        (m[1].id.as_str(), m[1].role, m[1].kind),
        ("msg_a2", Role::Assistant, Kind::ToolCall)
    );
    assert_eq!(m[1].timestamp, Some((T + 5) * 1000));
    assert_eq!(text(m[1]), "Je lance d'abord les tests.");
    let c = call(m[1], 1);
    assert_eq!(
        (c.id.as_str(), c.name.as_str(), c.tool.as_str()),
        ("call_1", "developer__shell", "shell")
    );
    assert_eq!(c.input, json!({"command": "cargo test"}));
    assert_eq!(
        c.output.as_deref(),
        Some(
            "running 2 tests\ntest parse_empty ... FAILED\nerror: test failed, to rerun pass `--lib`"
        )
    );
    assert!(c.is_error, "isError: true");

    // The row without message_id: a content hash id, the same at every read.
    assert!(
        m[2].id.starts_with("goose-") && m[2].id.len() == 22,
        "{}",
        m[2].id
    );
    assert_eq!(m[2].id, msgs(&db.read(0))[2].id);
    assert_eq!(m[2].kind, Kind::ToolCall);
    assert_eq!(
        m[2].parts[0],
        Part::Thinking {
            text: "The empty input must give an empty list.".into()
        }
    );
    let c = call(m[2], 1);
    assert_eq!((c.id.as_str(), c.tool.as_str()), ("call_2", "edit"));
    assert_eq!(
        c.output.as_deref(),
        Some("The file /home/user/demo/src/parser.rs has been edited.")
    );
    assert!(!c.is_error);

    assert_eq!((m[3].id.as_str(), m[3].role), ("msg_a6", Role::Assistant));
    assert_eq!(
        text(m[3]),
        "Corrigé : `parse(\"\")` renvoie maintenant une liste vide."
    );
    assert_eq!(m[3].timestamp, Some((T + 20) * 1000));
}

/// The session grows while Goose runs (its WAL holds the new rows): the read from the cursor
/// gives the three new rows only, creates no file, and a read at the end gives nothing.
#[test]
fn growth_while_goose_writes() {
    let db = GooseDb::closed(&["turn1.sql"]);
    let first = db.read(0);
    assert_eq!(first.watermark, 6);
    let w = db.writer();
    w.execute_batch(&sql("turn2.sql")).unwrap();
    let before = db.files();
    assert_eq!(
        before,
        ["sessions.db", "sessions.db-shm", "sessions.db-wal"]
    );
    let b = db.read(first.watermark);
    assert_eq!(db.files(), before);
    assert_eq!(b.watermark, 9);
    assert_eq!(
        b.sessions[0].stats,
        ParseStats {
            lines: 3,
            ..ParseStats::default()
        }
    );
    let m = msgs(&b);
    assert_eq!(m.len(), 2);
    assert_eq!(
        (m[0].id.as_str(), text(m[0]).as_str()),
        ("msg_b1", "Lance clippy maintenant.")
    );
    assert_eq!(m[1].id, "msg_b2");
    assert_eq!(m[1].parts.len(), 1, "the image block is not kept");
    let c = call(m[1], 0);
    assert_eq!(c.input, json!({"command": "cargo clippy -- -D warnings"}));
    assert_eq!(
        c.output.as_deref(),
        Some("Execution failed: command timed out after 300s")
    );
    assert!(c.is_error, "status: error");
    assert_eq!(b.sessions[0].meta.updated_at, Some((T + 130) * 1000));

    let again = db.read(b.watermark);
    assert!(again.sessions.is_empty());
    assert_eq!(again.watermark, 9);
    drop(w);
}

/// Goose's compaction deletes the session's rows and inserts them again: the read after it
/// gives the same message ids (the row without `message_id` included), so nothing is stored
/// twice, plus the summary, for the model only.
#[test]
fn compaction_rewrite_keeps_the_ids() {
    let db = GooseDb::closed(&["turn1.sql", "turn2.sql"]);
    let before = db.read(0);
    let ids: Vec<String> = msgs(&before).iter().map(|m| m.id.clone()).collect();
    assert_eq!(ids.len(), 6);
    assert_eq!(before.watermark, 9);
    let w = db.writer();
    w.execute_batch(&sql("turn3-compaction.sql")).unwrap();
    let b = db.read(before.watermark);
    assert_eq!(b.watermark, 19);
    let m = msgs(&b);
    let after: Vec<String> = m.iter().map(|m| m.id.clone()).collect();
    let mut want = ids.clone();
    want.push("msg_c1".into());
    assert_eq!(after, want);
    let last = m.last().unwrap();
    assert_eq!((last.role, last.kind), (Role::System, Kind::Summary));
    assert_eq!(
        text(last),
        "Résumé : le test parse_empty a été corrigé dans src/parser.rs ; clippy a expiré."
    );
    // The re-inserted calls carry their outputs again.
    assert_eq!(
        call(m[1], 1).output.as_deref(),
        call(msgs(&before)[1], 1).output.as_deref()
    );
    drop(w);
}

/// A cursor beyond the session's last row (the database was restored from a backup): the whole
/// session is read again.
#[test]
fn a_cursor_past_the_end_reads_again() {
    let db = GooseDb::closed(&["turn1.sql"]);
    let b = db.read(100);
    assert_eq!(msgs(&b).len(), 4);
    assert_eq!(b.watermark, 6);
}

/// Sessions, sub-agent sessions (`parent_session_id`, in later schemas), and a database that is
/// not Goose's.
#[test]
fn sessions_parents_and_foreign_databases() {
    let db = GooseDb::closed(&["turn1.sql"]);
    {
        let w = db.writer();
        w.execute_batch(
            "ALTER TABLE sessions ADD COLUMN parent_session_id TEXT; \
             INSERT INTO sessions (id, working_dir, session_type, parent_session_id) \
             VALUES ('20260301_2', '/home/user/demo', 'sub_agent', '20260301_1');",
        )
        .unwrap();
    }
    assert_eq!(
        goose::db_session_ids(&db.path).unwrap(),
        ["20260301_1", "20260301_2"]
    );
    let child = goose::read_db(&db.path, Some("20260301_2"), 0).unwrap();
    assert_eq!(child.sessions.len(), 1);
    assert_eq!(
        child.sessions[0].session.parent_external_id.as_deref(),
        Some(SID)
    );
    assert!(child.sessions[0].records.is_empty());
    // An unknown session: nothing.
    let none = goose::read_db(&db.path, Some("nope"), 0).unwrap();
    assert!(none.sessions.is_empty());

    let other = db.dir.path().join("other.db");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t (x);")
        .unwrap();
    let e = goose::read_db(&other, Some(SID), 0).unwrap_err();
    assert!(
        e.to_string().contains("not a Goose sessions database"),
        "{e}"
    );
}

/// The legacy session file: metadata line, four messages, the tool response (the older bare
/// content list) attached to its call.
#[test]
fn legacy_jsonl() {
    let path = fixtures().join("legacy/sessions/20250301_101500.jsonl");
    let mut out = Batch::default();
    LegacyReader.read(&std::fs::read(&path).unwrap(), &mut out);
    assert_eq!(
        out.stats,
        ParseStats {
            lines: 5,
            skipped_known: 1,
            skipped_unknown: 0,
            malformed: 0
        }
    );
    assert_eq!(out.meta.project_dir.as_deref(), Some("/home/user/old"));
    assert_eq!(out.meta.title.as_deref(), Some("Lister les fichiers"));
    // 2025-03-01T10:15:00Z.
    let l = 1_740_824_100_000;
    assert_eq!(
        (out.meta.started_at, out.meta.updated_at),
        (Some(l), Some(l + 6000))
    );
    let m: Vec<&Message> = out
        .records
        .iter()
        .map(|r| match r {
            Record::Message(m) => m,
            other => panic!("{other:?}"),
        })
        .collect();
    let ids: Vec<&str> = m.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["legacy-2", "legacy-3", "legacy-5"]);
    let c = call(m[1], 0);
    assert_eq!(
        (c.name.as_str(), c.tool.as_str()),
        ("developer__shell", "shell")
    );
    assert_eq!(c.output.as_deref(), Some("Cargo.toml\nsrc"));
    assert_eq!(text(m[2]), "Deux entrées : Cargo.toml et src.");
    let sref = goose::identify(&path).unwrap();
    assert_eq!(sref.external_id, "20250301_101500");
}

/// Hook payloads as Goose sends them, the database a hook ingests, and discovery.
#[test]
fn hooks_and_discovery() {
    let env = Env::sandbox("/h");
    let stop = std::fs::read(fixtures().join("hooks/Stop.json")).unwrap();
    let ev = goose::parse_hook_payload(&stop, &env).unwrap();
    assert_eq!(
        (ev.agent, ev.event.as_str(), ev.session_id.as_deref()),
        (Agent::Goose, "Stop", Some(SID))
    );
    assert_eq!(
        (ev.transcript_path.as_deref(), ev.cwd.as_deref()),
        (None, None)
    );
    let start = std::fs::read(fixtures().join("hooks/SessionStart.json")).unwrap();
    let ev2 = goose::parse_hook_payload(&start, &env).unwrap();
    assert_eq!(ev2.cwd.as_deref(), Some("/home/user/demo"));
    assert!(goose::parse_hook_payload(b" ", &env).is_err());
    assert!(goose::parse_hook_payload(b"[1]", &env).is_err());

    let db = GooseDb::closed(&["turn1.sql"]);
    assert_eq!(
        goose::transcripts_for_event_in(&ev, &db.path),
        std::slice::from_ref(&db.path)
    );
    let mut bad = ev.clone();
    bad.session_id = Some("../x".into());
    assert!(goose::transcripts_for_event_in(&bad, &db.path).is_empty());
    assert!(goose::transcripts_for_event_in(&ev, &db.dir.path().join("none.db")).is_empty());

    // Discovery: the database when there is one, else the legacy files.
    assert_eq!(
        goose::discover_in(db.dir.path()).unwrap().files,
        std::slice::from_ref(&db.path)
    );
    let legacy = fixtures().join("legacy/sessions");
    assert_eq!(
        goose::discover_in(&legacy).unwrap().files,
        [legacy.join("20250301_101500.jsonl")]
    );
    assert!(goose::identify(&db.path).is_err());
    assert!(
        goose::discover_in(&db.dir.path().join("missing"))
            .unwrap()
            .files
            .is_empty()
    );
    assert_eq!(
        goose::session_start_reply("ctx").as_deref(),
        Some(r#"{"banner":"ctx"}"#)
    );
}
