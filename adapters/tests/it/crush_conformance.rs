//! Crush: the database reader (read-only, incremental by `updated_at`, messages updated in
//! place), discovery through `projects.json`, hook payloads, on the project's own fixtures
//! (`fixtures/crush/`, described in its README and in `docs/agents/crush.md`). Expected values
//! are read off the fixtures by hand.

use memtrail_adapters::crush;
use memtrail_adapters::{
    Agent, DbBatch, Env, HookEvent, Kind, Message, ParseStats, Part, Record, Role, ToolCall,
};
use rusqlite::Connection;
use serde_json::json;
use std::path::{Path, PathBuf};

const SID: &str = "7b3e1c9a-2f4d-4e6b-8a1c-5d9e0f2a3b4c";
/// 2026-03-01T10:15:00Z in seconds: the fixture's first message.
const T: i64 = 1_772_360_100;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/crush")
}

fn sql(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).unwrap()
}

/// A project `app` with its `.crush/crush.db`, written by a connection as Crush's (WAL).
struct CrushDb {
    dir: tempfile::TempDir,
    path: PathBuf,
}

impl CrushDb {
    fn closed(scripts: &[&str]) -> CrushDb {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("app/.crush");
        std::fs::create_dir_all(&data).unwrap();
        let db = CrushDb {
            path: data.join("crush.db"),
            dir,
        };
        let conn = db.writer();
        conn.execute_batch(&sql("schema.sql")).unwrap();
        for s in scripts {
            conn.execute_batch(&sql(s)).unwrap();
        }
        db
    }

    fn writer(&self) -> Connection {
        let conn = Connection::open(&self.path).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;")
            .unwrap();
        conn
    }

    fn files(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn read(&self, since: i64) -> DbBatch {
        crush::read_db(&self.path, Some(SID), since).unwrap()
    }
}

fn msgs(b: &DbBatch) -> Vec<&Message> {
    b.sessions[0]
        .records
        .iter()
        .map(|r| match r {
            Record::Replace(m) => m,
            other => panic!("not a replace: {other:?}"),
        })
        .collect()
}

fn call(m: &Message, i: usize) -> &ToolCall {
    match &m.parts[i] {
        Part::ToolCall(c) => c,
        other => panic!("part {i} of {} is not a call: {other:?}", m.id),
    }
}

#[test]
fn turn1_whole_with_results_on_their_calls() {
    let db = CrushDb::closed(&["turn1.sql"]);
    assert_eq!(db.files(), ["crush.db"]);
    let b = db.read(0);
    assert_eq!(db.files(), ["crush.db"], "a read must not create -wal/-shm");
    assert_eq!(b.watermark, (T + 20) * 1000);
    assert_eq!(b.sessions.len(), 1);
    let s = &b.sessions[0];
    assert_eq!(
        (s.session.agent, s.session.external_id.as_str()),
        (Agent::Crush, SID)
    );
    assert_eq!(s.session.parent_external_id, None);
    let project = db.dir.path().join("app");
    assert_eq!(s.meta.project_dir.as_deref(), project.to_str());
    assert_eq!(
        s.meta.title.as_deref(),
        Some("Ajouter un test pour parse_date")
    );
    assert_eq!(s.meta.model.as_deref(), Some("claude-sonnet-4"));
    assert_eq!(s.meta.started_at, Some(T * 1000));
    assert_eq!(
        s.stats,
        ParseStats {
            lines: 6,
            ..ParseStats::default()
        }
    );
    let m = msgs(&b);
    let ids: Vec<&str> = m.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["m1", "m2", "m4", "m6"]);
    assert_eq!((m[0].role, m[0].kind), (Role::User, Kind::Text));
    assert_eq!(m[0].text(), "Ajoute un test pour parse_date — 日付のテスト");
    assert_eq!(m[0].timestamp, Some(T * 1000));
    assert_eq!(m[0].model, None);

    assert_eq!((m[1].role, m[1].kind), (Role::Assistant, Kind::ToolCall));
    assert_eq!(m[1].timestamp, Some((T + 2) * 1000));
    assert_eq!(m[1].model.as_deref(), Some("claude-sonnet-4"));
    assert_eq!(
        m[1].parts[0],
        Part::Thinking {
            text: "Je lis d'abord le fichier.".into()
        }
    );
    let c = call(m[1], 1);
    assert_eq!(
        (c.id.as_str(), c.name.as_str(), c.tool.as_str()),
        ("toolu_01", "view", "read")
    );
    assert_eq!(c.input, json!({"file_path": "/home/user/app/src/date.rs"}));
    assert_eq!(
        c.output.as_deref(),
        Some("<file>\n     1|pub fn parse_date(s: &str) -> Option<Date> {\n</file>")
    );
    assert!(!c.is_error);

    let c = call(m[2], 0);
    assert_eq!((c.name.as_str(), c.tool.as_str()), ("bash", "shell"));
    assert_eq!(
        c.input,
        json!({"command": "cargo test date", "description": "run the date tests"})
    );
    assert_eq!(
        c.output.as_deref(),
        Some("error[E0425]: cannot find function `parse_date` in this scope")
    );
    assert!(c.is_error);
    assert_eq!(
        m[3].text(),
        "Le test échoue : la fonction n'est pas exportée."
    );
}

/// The session grows while Crush runs: the read from the watermark gives the last message of
/// turn 1 again (within the overlap: Crush's times have one-second resolution), the new ones,
/// the reply Crush updated in place whole (its first word replaced), its call's result, the
/// user's shell command and the summary; a read at the end gives only what was written in the
/// watermark's last seconds.
#[test]
fn growth_and_in_place_updates() {
    let db = CrushDb::closed(&["turn1.sql"]);
    let first = db.read(0);
    let w = db.writer();
    w.execute_batch(&sql("turn2.sql")).unwrap();
    let before = db.files();
    assert_eq!(before, ["crush.db", "crush.db-shm", "crush.db-wal"]);
    let b = db.read(first.watermark);
    assert_eq!(db.files(), before);
    assert!(b.watermark > (T + 80) * 1000, "the update's time is now");
    let m = msgs(&b);
    let ids: Vec<&str> = m.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["m6", "m7", "m8", "m10", "m11"]);
    // Every row of the session was looked at.
    assert_eq!(
        b.sessions[0].stats,
        ParseStats {
            lines: 11,
            ..ParseStats::default()
        }
    );
    assert_eq!(m[2].text(), "Je l'exporte.");
    let c = call(m[2], 1);
    assert_eq!((c.id.as_str(), c.tool.as_str()), ("toolu_03", "edit"));
    assert_eq!(
        c.output.as_deref(),
        Some("<result>\nContent replaced in file: /home/user/app/src/date.rs\n</result>")
    );
    assert_eq!((m[3].role, m[3].kind), (Role::User, Kind::ToolCall));
    let sh = call(m[3], 0);
    assert_eq!(
        (sh.id.as_str(), sh.name.as_str(), sh.tool.as_str()),
        ("m10-shell-0", "shell_command", "shell")
    );
    assert_eq!(sh.input, json!({"command": "git status --short"}));
    assert_eq!(
        (sh.output.as_deref(), sh.exit_code, sh.is_error),
        (Some(" M src/date.rs"), Some(0), false)
    );
    assert_eq!((m[4].role, m[4].kind), (Role::Assistant, Kind::Summary));
    assert_eq!(
        m[4].text(),
        "Résumé : parse_date est exportée ; le test passe."
    );

    // At the end: only the reply updated in the watermark's second comes again.
    let again = db.read(b.watermark);
    let ids: Vec<&str> = msgs(&again).iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["m8"]);
    assert_eq!(again.watermark, b.watermark);

    // The sub-agent session, and the order of an import.
    assert_eq!(
        crush::db_session_ids(&db.path).unwrap(),
        [SID, "m8$$toolu_04"]
    );
    let child = crush::read_db(&db.path, Some("m8$$toolu_04"), 0).unwrap();
    assert_eq!(
        child.sessions[0].session.parent_external_id.as_deref(),
        Some(SID)
    );
    assert_eq!(msgs(&child)[0].text(), "Trouve les appels de parse_date");
    drop(w);
}

#[test]
fn discovery_hooks_and_foreign_databases() {
    let db = CrushDb::closed(&["turn1.sql"]);
    // projects.json names the project's data folder; a listed project without a database is
    // left out.
    let pj = db.dir.path().join("projects.json");
    let data = db.path.parent().unwrap();
    std::fs::write(
        &pj,
        json!({"projects": [
            {"path": db.dir.path().join("app"), "data_dir": data, "last_accessed": "2026-03-01T10:16:40Z"},
            {"path": "/nowhere", "data_dir": "/nowhere/.crush", "last_accessed": "2026-03-01T10:16:40Z"},
        ]})
        .to_string(),
    )
    .unwrap();
    assert_eq!(
        crush::discover_in(&pj).files,
        std::slice::from_ref(&db.path)
    );
    assert_eq!(
        crush::projects(&fixtures().join("projects.json")),
        [(
            PathBuf::from("/home/user/app"),
            PathBuf::from("/home/user/app/.crush")
        )]
    );
    assert!(
        crush::discover_in(&fixtures().join("projects.json"))
            .files
            .is_empty()
    );
    assert!(
        crush::discover_in(&db.dir.path().join("none.json"))
            .files
            .is_empty()
    );

    // Crush's hook payload (internal/hooks/input.go); the database of the working folder's
    // nearest `.crush`.
    let env = Env::sandbox("/h");
    let sub = db.dir.path().join("app/src");
    std::fs::create_dir_all(&sub).unwrap();
    let payload = json!({"event": "PreToolUse", "session_id": SID, "cwd": sub,
                         "tool_name": "bash", "tool_input": {"command": "ls"}});
    let ev: HookEvent = crush::parse_hook_payload(payload.to_string().as_bytes(), &env).unwrap();
    assert_eq!(
        (ev.agent, ev.event.as_str(), ev.session_id.as_deref()),
        (Agent::Crush, "PreToolUse", Some(SID))
    );
    assert_eq!(
        crush::transcripts_for_event(&ev),
        std::slice::from_ref(&db.path)
    );
    assert!(crush::parse_hook_payload(b"", &env).is_err());
    assert!(crush::identify(&db.path).is_err());

    let other = db.dir.path().join("other.db");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE messages (id TEXT);")
        .unwrap();
    let e = crush::read_db(&other, None, 0).unwrap_err();
    assert!(e.to_string().contains("not a Crush database"), "{e}");
}
