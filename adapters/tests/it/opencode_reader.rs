//! The OpenCode readers on the project's own fixtures (`fixtures/opencode`, see its README):
//! the legacy JSON storage tree, an `opencode.db` built here at run time with OpenCode's own
//! schema (growing over two turns, read by watermark while a writer holds it open in WAL mode),
//! an OpenCode 2.x database, and export documents; plus robustness on malformed rows and bytes.

use crate::common;

use common::{Lcg, Store, part_text, shape};
use memtrail_adapters::opencode::{
    self, DB_REREAD_OVERLAP_MS, DbBatch, DbSession, ExportReader, SourceKind,
};
use memtrail_adapters::{
    Agent, Batch, DocReader, Kind, Message, ParseStats, Part, Record, Role, SessionMeta, SessionRef,
};
use rusqlite::Connection;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------------
// The fixture session (fixtures/opencode/storage)
// ---------------------------------------------------------------------------------------------

/// Time origin of the fixture session (2026-02-21T18:53:20Z), ms.
const T: i64 = 1_771_700_000_000;
const PROJECT: &str = "9d8c7b6a5f4e3d2c1b0a99887766554433221100";
const SES: &str = "ses_2f1e0c9a3ffeKq7Lm2Np4Rs6Tu";
const CWD: &str = "/home/user/projects/kalender";
const M1: &str = "msg_d1a3c0f2e001Xq8Wv5Ut3Sr1Qp";
const M2: &str = "msg_d1a3c0f4b001Lk9Jh7Gf5Dd3Sa";
const M3: &str = "msg_d1a3c1e6c001Zx2Cv4Bn6Mm8Qw";
const M4: &str = "msg_d1a3c1ea4001Po9Iu7Yt5Re3Ww";
const PROMPT1: &str =
    "Pourquoi le test `parse_date` échoue-t-il le 29 février ? 🤔 Regarde @src/date.ts";
const BASH_ERROR: &str = "Error: Command failed: exit code 1\n✗ parse_date › 2024-02-29 → expected 2024-02-29, got 2024-03-01";

fn storage() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/opencode/storage")
}

fn session_file() -> PathBuf {
    storage()
        .join("session")
        .join(PROJECT)
        .join(format!("{SES}.json"))
}

fn load(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap()
}

/// A message file of the fixture and its part files, sorted by id (as OpenCode stores them).
fn fixture_message(id: &str) -> (Value, Vec<Value>) {
    let info = load(
        &storage()
            .join("message")
            .join(SES)
            .join(format!("{id}.json")),
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(storage().join("part").join(id))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    (info, files.iter().map(|p| load(p)).collect())
}

fn msgs(b: &Batch) -> Vec<&Message> {
    common::messages(b)
}

fn stats(lines: u64, known: u64, unknown: u64, malformed: u64) -> ParseStats {
    ParseStats {
        lines,
        skipped_known: known,
        skipped_unknown: unknown,
        malformed,
    }
}

/// What the fixture session must read as, whatever the source (storage, database, export).
fn assert_fixture_messages(ms: &[&Message]) {
    let ids: Vec<&str> = ms.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, [M1, M2, M3, M4]);
    assert_eq!(
        ms.iter().map(|m| (m.role, m.kind)).collect::<Vec<_>>(),
        [
            (Role::User, Kind::Text),
            (Role::Assistant, Kind::ToolCall),
            (Role::User, Kind::Text),
            (Role::Assistant, Kind::ToolCall),
        ]
    );
    assert_eq!(
        ms.iter()
            .map(|m| m.timestamp.unwrap() - T)
            .collect::<Vec<_>>(),
        [1000, 1500, 60000, 61000]
    );
    // Turn 1, user: the prompt (trimmed) and the attached file as a note; the synthetic part
    // OpenCode added (the file's content as a Read call) is not the user's words.
    assert_eq!(shape(ms[0]), ["text", "text"]);
    assert_eq!(part_text(ms[0], 0), PROMPT1);
    assert_eq!(part_text(ms[0], 1), "[file: src/date.ts (text/plain)]");
    assert_eq!(ms[0].model, None);
    // Turn 1, assistant: reasoning, a read, a failed bash, the answer.
    assert_eq!(shape(ms[1]), ["thinking", "read", "bash", "text"]);
    assert_eq!(ms[1].model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(
        part_text(ms[1], 0),
        "L'utilisateur écrit en français. Je lis d'abord le test, puis je le lance."
    );
    let calls: Vec<_> = ms[1].tool_calls().collect();
    assert_eq!(calls[0].id, "toolu_01ReadDateTs");
    assert_eq!(calls[0].tool, "read");
    assert_eq!(
        calls[0].input,
        json!({"filePath": "/home/user/projects/kalender/src/date.ts"})
    );
    assert!(
        calls[0]
            .output
            .as_deref()
            .unwrap()
            .starts_with("<file>\n00001| export function parseDate(s: string): Date {")
    );
    assert!(!calls[0].is_error);
    assert_eq!(calls[1].id, "toolu_01BashNpmTest");
    assert_eq!(calls[1].name, "bash");
    assert_eq!(calls[1].tool, "shell");
    assert_eq!(calls[1].input["command"], "npm test -- date");
    assert_eq!(calls[1].output.as_deref(), Some(BASH_ERROR));
    assert!(calls[1].is_error);
    assert_eq!(
        part_text(ms[1], 3),
        "Le test échoue parce que `parseDate` ne vérifie pas la date : le 2024-02-29 devient le 1er mars."
    );
    // Turn 2.
    assert_eq!(shape(ms[2]), ["text"]);
    assert_eq!(part_text(ms[2], 0), "Corrige-le, s'il te plaît. Merci ! 🙏");
    assert_eq!(shape(ms[3]), ["edit", "bash", "text"]);
    let calls: Vec<_> = ms[3].tool_calls().collect();
    assert_eq!(calls[0].tool, "edit");
    assert_eq!(
        calls[0].output.as_deref(),
        Some(""),
        "completed, empty output"
    );
    assert_eq!(
        calls[1].output.as_deref(),
        Some("✓ parse_date (3 tests) 12ms\n")
    );
    assert!(!calls[1].is_error);
    assert_eq!(
        part_text(ms[3], 2),
        "C'est corrigé ✅ — les années bissextiles (闰年) sont gérées et les 3 tests passent."
    );
}

fn fixture_meta() -> SessionMeta {
    SessionMeta {
        project_dir: Some(CWD.into()),
        title: Some("Fix the parse_date leap-year test".into()),
        model: Some("claude-sonnet-4-5".into()),
        git_branch: None,
        agent_version: Some("1.1.53".into()),
        started_at: Some(T),
        updated_at: Some(T + 95000),
    }
}

// ---------------------------------------------------------------------------------------------
// Legacy storage tree
// ---------------------------------------------------------------------------------------------

#[test]
fn storage_tree_reads_the_whole_session() {
    let path = session_file();
    assert_eq!(opencode::source_kind(&path), SourceKind::StorageSession);
    assert_eq!(
        opencode::identify(&path).unwrap(),
        SessionRef {
            agent: Agent::Opencode,
            external_id: SES.into(),
            parent_external_id: None,
        }
    );
    let s = opencode::read_storage_session(&path).unwrap();
    assert_eq!(s.session.external_id, SES);
    // 4 message files + 15 part files; skipped: the synthetic text and 2 × (step-start,
    // step-finish).
    assert_eq!(s.batch.stats, stats(19, 5, 0, 0));
    assert_fixture_messages(&msgs(&s.batch));
    assert!(
        s.batch
            .records
            .iter()
            .all(|r| matches!(r, Record::Message(_)))
    );
    assert_eq!(s.batch.meta, fixture_meta());
    // The same through the runtime's source dispatch (a whole-document reader).
    let Some(memtrail_adapters::Source::Doc(mut reader)) = opencode::source_for(&path) else {
        panic!("a legacy session file is a document source");
    };
    let mut b = Batch::default();
    reader.read(&std::fs::read(&path).unwrap(), &mut b);
    assert_eq!(b, s.batch);
}

#[test]
fn storage_errors_and_missing_message_folders() {
    // Not inside storage/session/<project>/.
    assert!(opencode::read_storage_session(Path::new("/tmp/x.json")).is_err());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("storage/session/p1");
    std::fs::create_dir_all(&dir).unwrap();
    // Missing file.
    assert!(opencode::read_storage_session(&dir.join("ses_none.json")).is_err());
    // Not JSON.
    std::fs::write(dir.join("ses_bad.json"), b"{not json").unwrap();
    assert!(opencode::read_storage_session(&dir.join("ses_bad.json")).is_err());
    // A session without messages; a sub-agent session names its parent.
    std::fs::write(
        dir.join("ses_child.json"),
        br#"{"id":"ses_child","parentID":"ses_parent","title":"Child session - 2026-02-21T18:53:20.000Z","directory":"/p","version":"0.15.0","time":{"created":5,"updated":6}}"#,
    )
    .unwrap();
    let s = opencode::read_storage_session(&dir.join("ses_child.json")).unwrap();
    assert_eq!(s.session.parent_external_id.as_deref(), Some("ses_parent"));
    assert!(s.batch.records.is_empty());
    assert_eq!(s.batch.stats, ParseStats::default());
    // The placeholder title is not a title.
    assert_eq!(s.batch.meta.title, None);
    assert_eq!(s.batch.meta.started_at, Some(5));
    // A message file that is not JSON, and a part file that is not JSON.
    let msg_dir = tmp.path().join("storage/message/ses_child");
    std::fs::create_dir_all(&msg_dir).unwrap();
    std::fs::write(msg_dir.join("msg_a.json"), b"\xff\xfe").unwrap();
    std::fs::write(
        msg_dir.join("msg_b.json"),
        br#"{"id":"msg_b","role":"user","time":{"created":7}}"#,
    )
    .unwrap();
    let part_dir = tmp.path().join("storage/part/msg_b");
    std::fs::create_dir_all(&part_dir).unwrap();
    std::fs::write(
        part_dir.join("prt_1.json"),
        br#"{"type":"text","text":"hi"}"#,
    )
    .unwrap();
    std::fs::write(part_dir.join("prt_2.json"), b"[").unwrap();
    let s = opencode::read_storage_session(&dir.join("ses_child.json")).unwrap();
    assert_eq!(s.batch.stats, stats(4, 0, 0, 2));
    let ms = msgs(&s.batch);
    assert_eq!(ms.len(), 1);
    assert_eq!(part_text(ms[0], 0), "hi");
    assert_eq!(s.batch.meta.title.as_deref(), Some("hi"));
}

// ---------------------------------------------------------------------------------------------
// The database, built with OpenCode's schema
// ---------------------------------------------------------------------------------------------

/// OpenCode 1.x's tables as drizzle-kit creates them: the initial migration
/// (`20260127222353_familiar_lady_ursula`), plus `session.workspace_id`
/// (`20260227213759_add_session_workspace_id`), the later session columns of
/// `packages/opencode/src/session/session.sql.ts` (path, cost, tokens, agent, model) and the
/// current index names (`message_session_time_created_id_idx`, `part_message_id_id_idx`).
const SCHEMA_V1: &str = include_str!("../../../fixtures/opencode/schema-v1.sql");

/// OpenCode 2.x's session tables (as in `sqlite_master` of a 2.0.25 database, reported by a
/// third-party reader; upstream `packages/core/src/session/message.ts` gives the row `data`).
const SCHEMA_V2: &str = r#"
CREATE TABLE `session_v2` (
	`id` text PRIMARY KEY,
	`project_id` text NOT NULL,
	`workspace_id` text,
	`parent_id` text,
	`fork_session_id` text,
	`fork_boundary` text,
	`slug` text NOT NULL,
	`directory` text NOT NULL,
	`path` text,
	`title` text,
	`version` text NOT NULL,
	`share_url` text,
	`summary_additions` integer,
	`summary_deletions` integer,
	`summary_files` integer,
	`summary_diffs` text,
	`metadata` text,
	`cost` real DEFAULT 0 NOT NULL,
	`tokens_input` integer DEFAULT 0 NOT NULL,
	`tokens_output` integer DEFAULT 0 NOT NULL,
	`tokens_reasoning` integer DEFAULT 0 NOT NULL,
	`tokens_cache_read` integer DEFAULT 0 NOT NULL,
	`tokens_cache_write` integer DEFAULT 0 NOT NULL,
	`revert` text,
	`permission` text,
	`agent` text,
	`model` text,
	`time_created` integer NOT NULL,
	`time_updated` integer NOT NULL,
	`time_idle` integer,
	`time_viewed` integer,
	`idle_outcome` text,
	`time_compacting` integer,
	`time_archived` integer,
	`time_suspended` integer,
	`resume_attempts` integer DEFAULT 0 NOT NULL,
	CONSTRAINT `fk_session_v2_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
);
CREATE INDEX `session_v2_parent_idx` ON `session_v2` (`parent_id`);
CREATE TABLE `session_message` (
	`id` text PRIMARY KEY,
	`session_id` text NOT NULL,
	`type` text NOT NULL,
	`seq` integer NOT NULL,
	`time_created` integer NOT NULL,
	`time_updated` integer NOT NULL,
	`data` text NOT NULL,
	CONSTRAINT `fk_session_message_session_id_session_v2_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session_v2`(`id`) ON DELETE CASCADE
);
CREATE UNIQUE INDEX `session_message_session_seq_idx` ON `session_message` (`session_id`,`seq`);
CREATE INDEX `session_message_session_time_created_id_idx` ON `session_message` (`session_id`,`time_created`,`id`);
"#;

/// A live OpenCode database: a writer connection in WAL mode (as OpenCode opens it, with
/// automatic checkpoints off so the WAL keeps every write) that stays open during reads.
struct OcDb {
    _dir: tempfile::TempDir,
    path: PathBuf,
    conn: Connection,
}

impl OcDb {
    fn new(schema: &str) -> OcDb {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("opencode.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; \
             PRAGMA wal_autocheckpoint = 0;",
        )
        .unwrap();
        conn.execute_batch(schema).unwrap();
        conn.execute(
            "INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) \
             VALUES (?1, ?2, 'git', ?3, ?3, '[]')",
            rusqlite::params![PROJECT, CWD, T - 86_400_000],
        )
        .unwrap();
        OcDb {
            _dir: dir,
            path,
            conn,
        }
    }

    /// Upsert a session row from a session JSON (as OpenCode's migration maps it).
    fn session(&self, info: &Value, title: &str, updated: i64) {
        self.conn
            .execute(
                "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, \
                 time_created, time_updated) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
                 ON CONFLICT(id) DO UPDATE SET title = excluded.title, \
                 time_updated = excluded.time_updated",
                rusqlite::params![
                    info["id"].as_str().unwrap(),
                    PROJECT,
                    info["parentID"].as_str(),
                    info["slug"].as_str().unwrap_or(""),
                    info["directory"].as_str().unwrap_or(""),
                    title,
                    info["version"].as_str().unwrap_or(""),
                    info["time"]["created"].as_i64().unwrap(),
                    updated,
                ],
            )
            .unwrap();
    }

    /// Upsert a message row: `data` is the info without `id` and `sessionID`.
    fn message(&self, info: &Value, updated: i64) {
        let mut data = info.clone();
        let obj = data.as_object_mut().unwrap();
        let id = obj.remove("id").unwrap();
        let sid = obj.remove("sessionID").unwrap();
        self.conn
            .execute(
                "INSERT INTO message (id, session_id, time_created, time_updated, data) \
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(id) DO UPDATE SET \
                 data = excluded.data, time_updated = excluded.time_updated",
                rusqlite::params![
                    id.as_str().unwrap(),
                    sid.as_str().unwrap(),
                    info["time"]["created"].as_i64().unwrap(),
                    updated,
                    data.to_string()
                ],
            )
            .unwrap();
    }

    /// Upsert a part row: `data` is the part without `id`, `messageID` and `sessionID`.
    fn part(&self, part: &Value, updated: i64) {
        let mut data = part.clone();
        let obj = data.as_object_mut().unwrap();
        let id = obj.remove("id").unwrap();
        let mid = obj.remove("messageID").unwrap();
        let sid = obj.remove("sessionID").unwrap();
        self.conn
            .execute(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) \
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5) ON CONFLICT(id) DO UPDATE SET \
                 data = excluded.data, time_updated = excluded.time_updated",
                rusqlite::params![
                    id.as_str().unwrap(),
                    mid.as_str().unwrap(),
                    sid.as_str().unwrap(),
                    updated,
                    data.to_string()
                ],
            )
            .unwrap();
    }

    fn raw(&self, sql: &str) {
        self.conn.execute_batch(sql).unwrap();
    }
}

fn only(b: &DbBatch) -> &DbSession {
    assert_eq!(
        b.sessions.len(),
        1,
        "one session expected: {:?}",
        b.sessions
    );
    &b.sessions[0]
}

fn replaced(s: &DbSession) -> Vec<&Message> {
    s.records
        .iter()
        .map(|r| match r {
            Record::Replace(m) => m,
            other => panic!("database records are Replace, got {other:?}"),
        })
        .collect()
}

fn apply(store: &mut Store, s: &DbSession) {
    store.apply(Batch {
        meta: s.meta.clone(),
        records: s.records.clone(),
        stats: s.stats,
    });
}

/// Turn 1 in progress: the prompt, and the assistant message up to a bash call still running.
fn phase1(db: &OcDb) {
    let session = load(&session_file());
    db.session(
        &session,
        "New session - 2026-02-21T18:53:20.000Z",
        T + 14000,
    );
    let (m1, p1) = fixture_message(M1);
    db.message(&m1, T + 1000);
    for p in &p1 {
        db.part(p, T + 1000);
    }
    let (mut m2, p2) = fixture_message(M2);
    let obj = m2.as_object_mut().unwrap();
    obj.remove("finish");
    obj["time"].as_object_mut().unwrap().remove("completed");
    db.message(&m2, T + 1500);
    db.part(&p2[0], T + 2000); // step-start
    db.part(&p2[1], T + 3500); // reasoning
    db.part(&p2[2], T + 4100); // read, completed
    let mut running = p2[3].clone(); // bash, not finished yet
    running["state"] = json!({
        "status": "running",
        "input": {"command": "npm test -- date", "description": "Run the date tests"},
        "time": {"start": T + 13000}
    });
    db.part(&running, T + 14000);
}

/// The end of turn 1 (bash fails, the answer, the step end) and all of turn 2.
fn phase2(db: &OcDb) {
    let (m2, p2) = fixture_message(M2);
    db.part(&p2[3], T + 30000); // bash: error
    db.part(&p2[4], T + 31900); // text
    db.part(&p2[5], T + 32000); // step-finish
    db.message(&m2, T + 32000); // completed
    let (m3, p3) = fixture_message(M3);
    db.message(&m3, T + 60000);
    db.part(&p3[0], T + 60000);
    let (m4, p4) = fixture_message(M4);
    db.message(&m4, T + 61000);
    for (p, t) in p4.iter().zip([61500, 70200, 85000, 89500, 90000]) {
        db.part(p, T + t);
    }
    db.message(&m4, T + 90000);
    db.session(
        &load(&session_file()),
        "Fix the parse_date leap-year test",
        T + 95000,
    );
}

fn file_bytes(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

#[test]
fn database_grows_over_two_turns_and_the_watermark_reads_only_what_changed() {
    let db = OcDb::new(SCHEMA_V1);
    phase1(&db);
    let wal = db.path.with_extension("db-wal");
    let (main_before, wal_before) = (file_bytes(&db.path), file_bytes(&wal));
    assert!(!wal_before.is_empty(), "the writes are in the WAL");

    // Read 1: everything (mid-turn).
    let b1 = opencode::read_db(&db.path, 0).unwrap();
    assert_eq!(b1.watermark, T + 14000);
    let s1 = only(&b1);
    assert_eq!(s1.session.external_id, SES);
    let ms = replaced(s1);
    assert_eq!(
        ms.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        [M1, M2]
    );
    assert_eq!(shape(ms[1]), ["thinking", "read", "bash"]);
    let bash = ms[1].tool_calls().nth(1).unwrap();
    assert_eq!(bash.output, None, "still running");
    assert!(!bash.is_error);
    // 2 messages + 3 + 4 parts; skipped: the synthetic text and the step-start.
    assert_eq!(s1.stats, stats(9, 2, 0, 0));
    // The session has no title yet (OpenCode's placeholder): the first prompt stands in.
    assert_eq!(
        s1.meta,
        SessionMeta {
            project_dir: Some(CWD.into()),
            title: Some(PROMPT1.into()),
            model: Some("claude-sonnet-4-5".into()),
            git_branch: None,
            agent_version: Some("1.1.53".into()),
            started_at: Some(T),
            updated_at: Some(T + 14000),
        }
    );
    // Reading changed nothing on disk: no write, no checkpoint.
    assert_eq!(file_bytes(&db.path), main_before);
    assert_eq!(file_bytes(&wal), wal_before);

    // Read 2, from the watermark: the assistant message again (a part changed), whole, and
    // turn 2; not the prompt of turn 1.
    phase2(&db);
    let b2 = opencode::read_db(&db.path, b1.watermark).unwrap();
    assert_eq!(b2.watermark, T + 95000);
    let s2 = only(&b2);
    let ms = replaced(s2);
    assert_eq!(
        ms.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        [M2, M3, M4]
    );
    let bash = ms[0].tool_calls().nth(1).unwrap();
    assert_eq!(bash.output.as_deref(), Some(BASH_ERROR));
    assert!(bash.is_error);
    // 3 messages + 6 + 1 + 5 parts; skipped: 2 × (step-start, step-finish).
    assert_eq!(s2.stats, stats(15, 4, 0, 0));
    assert_eq!(
        s2.meta.title.as_deref(),
        Some("Fix the parse_date leap-year test")
    );
    // The same read scoped to the session (what a hook does) gives the same.
    assert_eq!(
        opencode::read_db_session(&db.path, SES, b1.watermark).unwrap(),
        b2
    );

    // Stored one after the other, the two reads give exactly the legacy tree's session.
    let mut store = Store::default();
    apply(&mut store, s1);
    apply(&mut store, s2);
    let expected = opencode::read_storage_session(&session_file()).unwrap();
    assert_eq!(
        store.messages,
        msgs(&expected.batch)
            .into_iter()
            .cloned()
            .collect::<Vec<_>>()
    );
    assert_fixture_messages(&store.messages.iter().collect::<Vec<_>>());
    // The store keeps the first title (the prompt) and the widest times.
    assert_eq!(store.meta.title.as_deref(), Some(PROMPT1));
    assert_eq!(store.meta.started_at, Some(T));
    assert_eq!(store.meta.updated_at, Some(T + 95000));

    // Read 3, nothing new: the overlap window re-reads the last message, harmlessly.
    let b3 = opencode::read_db(&db.path, b2.watermark).unwrap();
    assert_eq!(b3.watermark, b2.watermark);
    let ids: Vec<String> = replaced(only(&b3)).iter().map(|m| m.id.clone()).collect();
    assert_eq!(ids, [M4]);
    let before = store.messages.clone();
    apply(&mut store, only(&b3));
    assert_eq!(store.messages, before);
    // Past the overlap window there is nothing at all.
    let b4 = opencode::read_db(&db.path, b2.watermark + DB_REREAD_OVERLAP_MS).unwrap();
    assert!(b4.sessions.is_empty());
    assert_eq!(b4.watermark, b2.watermark + DB_REREAD_OVERLAP_MS);
    // One pass over the grown database equals the two incremental reads.
    let whole = opencode::read_db(&db.path, 0).unwrap();
    let mut once = Store::default();
    apply(&mut once, only(&whole));
    assert_eq!(once.messages, store.messages);
    assert_eq!(only(&whole).stats, stats(19, 5, 0, 0));
    assert_eq!(only(&whole).meta, fixture_meta());
    assert_eq!(opencode::db_session_ids(&db.path).unwrap(), [SES]);
}

#[test]
fn an_export_of_the_fixture_session_reads_like_the_database_and_the_tree() {
    let mut messages = Vec::new();
    for id in [M1, M2, M3, M4] {
        let (info, parts) = fixture_message(id);
        messages.push(json!({"info": info, "parts": parts}));
    }
    let doc = json!({"info": load(&session_file()), "messages": messages});
    let bytes = serde_json::to_vec_pretty(&doc).unwrap();
    let (sref, b) = opencode::read_export(&bytes);
    assert_eq!(sref.unwrap().external_id, SES);
    assert_eq!(b.stats, stats(19, 5, 0, 0));
    assert_fixture_messages(&msgs(&b));
    assert_eq!(b.meta, fixture_meta());
    // With a line of text before the JSON, and a BOM.
    let mut noisy = b"Exporting session: ses_x\n".to_vec();
    noisy.extend_from_slice(&bytes);
    let (_, b2) = opencode::read_export(&noisy);
    assert_eq!(b2, b);
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(&bytes);
    let mut b3 = Batch::default();
    ExportReader::new().read(&bom, &mut b3);
    assert_eq!(b3, b);
}

#[test]
fn malformed_and_unknown_rows_are_counted_never_fatal() {
    let db = OcDb::new(SCHEMA_V1);
    db.session(
        &json!({"id": "ses_odd", "directory": "/odd", "version": "1.3.0", "time": {"created": 10}}),
        "Odd rows",
        100,
    );
    let m = |id: &str, created: i64, data: &str| {
        db.conn
            .execute(
                "INSERT INTO message (id, session_id, time_created, time_updated, data) \
                 VALUES (?1, 'ses_odd', ?2, 100, ?3)",
                rusqlite::params![id, created, data],
            )
            .unwrap();
    };
    let p = |id: &str, mid: &str, data: &str| {
        db.conn
            .execute(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) \
                 VALUES (?1, ?2, 'ses_odd', 100, 100, ?3)",
                rusqlite::params![id, mid, data],
            )
            .unwrap();
    };
    // 1: a user message with a good text, an unknown part type, a part that is not JSON, a part
    //    that is an array, a part without type, and a text that is only whitespace.
    m("msg_1", 20, r#"{"role":"user","time":{"created":20}}"#);
    p("prt_1a", "msg_1", r#"{"type":"text","text":"  bonjour  "}"#);
    p("prt_1b", "msg_1", r#"{"type":"hologram","beam":1}"#);
    p("prt_1c", "msg_1", "{oops");
    p("prt_1d", "msg_1", "[1,2]");
    p("prt_1e", "msg_1", r#"{"text":"no type"}"#);
    p("prt_1f", "msg_1", r#"{"type":"text","text":"   "}"#);
    // 2: an unknown role, with one part.
    m("msg_2", 30, r#"{"role":"narrator","time":{"created":30}}"#);
    p(
        "prt_2a",
        "msg_2",
        r#"{"type":"text","text":"once upon a time"}"#,
    );
    // 3: data that is not JSON (the row's time_created is used for nothing then).
    m("msg_3", 40, "not json");
    // 4: an assistant message with only step boundaries and a tool without a call id.
    m(
        "msg_4",
        50,
        r#"{"role":"assistant","time":{"created":50},"modelID":"m"}"#,
    );
    p("prt_4a", "msg_4", r#"{"type":"step-start"}"#);
    p(
        "prt_4b",
        "msg_4",
        r#"{"type":"tool","tool":"bash","state":{}}"#,
    );
    p("prt_4c", "msg_4", r#"{"type":"step-finish"}"#);
    // 5: weird types everywhere: time as a string, text as a number, tool state fields of the
    //    wrong type, an error object, a file part with only a data URL.
    m(
        "msg_5",
        60,
        r#"{"role":"assistant","time":{"created":"soon"},"modelID":7,"error":{"name":"APIError","data":{"message":"overloaded"}}}"#,
    );
    p("prt_5a", "msg_5", r#"{"type":"text","text":42}"#);
    p(
        "prt_5b",
        "msg_5",
        r#"{"type":"tool","callID":"c5","tool":"grep","state":{"status":"error","input":"x","error":{"message":"bad regex"}}}"#,
    );
    p(
        "prt_5c",
        "msg_5",
        r#"{"type":"tool","callID":"c6","tool":"webfetch","state":{"status":"completed","input":{"url":"u"},"output":null}}"#,
    );
    p(
        "prt_5d",
        "msg_5",
        r#"{"type":"file","mime":"image/png","url":"data:image/png;base64,AAAA"}"#,
    );
    // A part of a message that does not exist (no foreign key check in this insert).
    db.raw("PRAGMA foreign_keys = OFF;");
    p("prt_x", "msg_missing", r#"{"type":"text","text":"orphan"}"#);

    let b = opencode::read_db(&db.path, 0).unwrap();
    let s = only(&b);
    let ms = replaced(s);
    assert_eq!(
        ms.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        ["msg_1", "msg_5"]
    );
    assert_eq!(shape(ms[0]), ["text"]);
    assert_eq!(part_text(ms[0], 0), "bonjour");
    // msg_5: its timestamp falls back to the row's time_created; no model (not a string).
    assert_eq!(ms[1].timestamp, Some(60));
    assert_eq!(ms[1].model, None);
    assert_eq!(shape(ms[1]), ["grep", "webfetch", "text", "text"]);
    let calls: Vec<_> = ms[1].tool_calls().collect();
    assert_eq!(calls[0].input, Value::Null);
    assert_eq!(calls[0].output.as_deref(), Some("bad regex"));
    assert!(calls[0].is_error);
    assert_eq!(
        calls[1].output, None,
        "a completed call whose output is null"
    );
    assert_eq!(part_text(ms[1], 2), "[file: file (image/png)]");
    assert_eq!(part_text(ms[1], 3), "[error] APIError: overloaded");
    // Lines: 5 messages + 6 + 1 + 0 + 3 + 4 parts = 19 (the orphan part has no message row).
    //   known (5): prt_1f (blank text); msg_4 (no content) with prt_4a, prt_4c; prt_5a (a text
    //              that is a number).
    //   unknown (3): prt_1b (hologram); msg_2 (role narrator) and prt_2a.
    //   malformed (5): prt_1c, prt_1d, prt_1e; msg_3; prt_4b (a tool without a call id).
    assert_eq!(s.stats, stats(19, 5, 3, 5));
    assert!(s.stats.skipped() <= s.stats.lines);
}

#[test]
fn opening_is_read_only_and_bad_files_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    // A missing database is an error, and is not created.
    let missing = tmp.path().join("opencode.db");
    assert!(opencode::read_db(&missing, 0).is_err());
    assert!(!missing.exists());
    // Random bytes, an empty file, and a SQLite database of something else.
    let junk = tmp.path().join("junk.db");
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    let bytes: Vec<u8> = (0..8192)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&junk, &bytes).unwrap();
    assert!(opencode::read_db(&junk, 0).is_err());
    assert!(opencode::db_session_ids(&junk).is_err());
    assert_eq!(file_bytes(&junk), bytes, "never written");
    let empty = tmp.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let e = opencode::read_db(&empty, 0).unwrap_err();
    assert!(e.to_string().contains("not an OpenCode database"), "{e}");
    let other = tmp.path().join("other.db");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t(x);")
        .unwrap();
    assert!(opencode::read_db(&other, 0).is_err());
    // A real SQLite header followed by garbage.
    let mut cut = file_bytes(&other);
    cut.truncate(100);
    cut.extend_from_slice(&bytes[..4000]);
    std::fs::write(&other, &cut).unwrap();
    assert!(opencode::read_db(&other, 0).is_err());
}

#[test]
fn sessions_only_changed_in_their_row_and_sub_agents() {
    let db = OcDb::new(SCHEMA_V1);
    db.session(
        &json!({"id": "ses_parent", "directory": "/p", "version": "1.14.0", "time": {"created": 1000}}),
        "Parent work",
        2000,
    );
    db.session(
        &json!({"id": "ses_child", "parentID": "ses_parent", "directory": "/p", "version": "1.14.0", "time": {"created": 500}}),
        "Review the diff (@general subagent)",
        2500,
    );
    db.message(
        &json!({"id": "msg_c1", "sessionID": "ses_child", "role": "user", "time": {"created": 1500}}),
        1500,
    );
    db.part(
        &json!({"id": "prt_c1", "messageID": "msg_c1", "sessionID": "ses_child", "type": "text", "text": "Review the diff"}),
        1500,
    );
    let b = opencode::read_db(&db.path, 0).unwrap();
    // The parent first (even though the child was created earlier), with no message.
    assert_eq!(b.sessions.len(), 2);
    assert_eq!(b.sessions[0].session.external_id, "ses_parent");
    assert!(b.sessions[0].records.is_empty());
    assert_eq!(b.sessions[0].meta.title.as_deref(), Some("Parent work"));
    assert_eq!(
        b.sessions[1].session,
        SessionRef {
            agent: Agent::Opencode,
            external_id: "ses_child".into(),
            parent_external_id: Some("ses_parent".into()),
        }
    );
    assert_eq!(b.sessions[1].records.len(), 1);
    assert_eq!(b.watermark, 2500);
    // Scoped to the child.
    let c = opencode::read_db_session(&db.path, "ses_child", 0).unwrap();
    assert_eq!(only(&c).session.external_id, "ses_child");
    assert_eq!(c.watermark, 2500);
    assert!(
        opencode::read_db_session(&db.path, "ses_nope", 0)
            .unwrap()
            .sessions
            .is_empty()
    );
    assert_eq!(
        opencode::db_session_ids(&db.path).unwrap(),
        ["ses_child", "ses_parent"]
    );
}

// ---------------------------------------------------------------------------------------------
// OpenCode 2.x: session_v2 + session_message, next to the migrated 1.x tables
// ---------------------------------------------------------------------------------------------

const T2: i64 = 1_790_000_000_000;

#[test]
fn opencode_2_session_messages_and_the_migrated_1x_rows() {
    let db = OcDb::new(SCHEMA_V1);
    db.raw(SCHEMA_V2);
    // The session as 1.x knew it, with one message, and its 2.x row.
    db.session(
        &json!({"id": "ses_v2a", "directory": "/home/user/projects/tool", "version": "1.14.0", "time": {"created": T2 - 200_000}}),
        "Port the CLI",
        T2 - 100_000,
    );
    db.message(
        &json!({"id": "msg_old1", "sessionID": "ses_v2a", "role": "user", "time": {"created": T2 - 100_000}}),
        T2 - 100_000,
    );
    db.part(
        &json!({"id": "prt_old1", "messageID": "msg_old1", "sessionID": "ses_v2a", "type": "text", "text": "Old question from 1.x"}),
        T2 - 100_000,
    );
    let sess = |id: &str, parent: Option<&str>, title: &str, created: i64, updated: i64| {
        db.conn
            .execute(
                "INSERT INTO session_v2 (id, project_id, parent_id, slug, directory, title, \
                 version, model, time_created, time_updated) VALUES (?1, ?2, ?3, 'slug', \
                 '/home/user/projects/tool', ?4, '2.0.25', '{\"id\":\"gpt-5.2\",\"providerID\":\"openai\"}', ?5, ?6)",
                rusqlite::params![id, PROJECT, parent, title, created, updated],
            )
            .unwrap();
    };
    sess(
        "ses_v2a",
        None,
        "Port the CLI to clap",
        T2 - 200_000,
        T2 + 50_000,
    );
    sess(
        "ses_v2child",
        Some("ses_v2a"),
        "Review (@general subagent)",
        T2 + 3000,
        T2 + 4000,
    );
    let row = |sid: &str, seq: i64, id: &str, ty: &str, t: i64, data: Value| {
        db.conn
            .execute(
                "INSERT INTO session_message (id, session_id, type, seq, time_created, \
                 time_updated, data) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6)",
                rusqlite::params![id, sid, ty, seq, t, data.to_string()],
            )
            .unwrap();
    };
    let at = |d: i64| json!({"created": T2 + d});
    row(
        "ses_v2a",
        1,
        "evt_legacy_backfill_m_00000000_5f2a9c0e1b3d4a6f8e7c9b1a",
        "user",
        T2 - 100_000,
        json!({"text": "Old question from 1.x", "files": [], "agents": [], "references": [], "time": {"created": T2 - 100_000}}),
    );
    row(
        "ses_v2a",
        2,
        "msg_v2u1",
        "user",
        T2 + 1000,
        json!({"text": "Passe la CLI à clap 4 🚀", "files": [{"uri": "file:///home/user/projects/tool/Cargo.toml", "mime": "text/plain", "name": "Cargo.toml"}], "agents": [], "references": [], "time": at(1000)}),
    );
    row(
        "ses_v2a",
        3,
        "msg_v2x1",
        "agent-switched",
        T2 + 1100,
        json!({"agent": "plan", "time": at(1100)}),
    );
    row(
        "ses_v2a",
        4,
        "msg_v2a1",
        "assistant",
        T2 + 2000,
        json!({
            "agent": "build", "model": {"id": "gpt-5.2", "providerID": "openai"},
            "content": [
                {"type": "reasoning", "id": "r1", "text": "Lire Cargo.toml d'abord."},
                {"type": "tool", "id": "c1", "name": "read",
                 "state": {"status": "completed", "input": {"filePath": "/home/user/projects/tool/Cargo.toml"},
                           "content": [{"type": "text", "text": "[package]"}, {"type": "text", "text": "name = \"tool\""}], "structured": {}},
                 "time": at(2500)},
                {"type": "tool", "id": "c2", "name": "bash",
                 "state": {"status": "error", "input": {"command": "cargo build"}, "content": [], "structured": {},
                           "error": {"type": "unknown", "message": "exit code 101"}},
                 "time": at(3000)},
                {"type": "tool", "id": "c3", "name": "write",
                 "state": {"status": "pending", "input": "{\"filePath\": \"/x\""}, "time": at(3500)},
                {"type": "text", "id": "t1", "text": "La compilation échoue."}
            ],
            "finish": "tool-calls", "time": {"created": T2 + 2000, "completed": T2 + 9000}
        }),
    );
    row(
        "ses_v2a",
        5,
        "msg_v2s1",
        "shell",
        T2 + 10_000,
        json!({"callID": "sh_1", "command": "ls -la", "output": "total 0", "time": {"created": T2 + 10_000, "completed": T2 + 10_100}}),
    );
    row(
        "ses_v2a",
        6,
        "msg_v2c1",
        "compaction",
        T2 + 20_000,
        json!({"reason": "auto", "summary": "We are porting the CLI to clap 4; cargo build fails.", "recent": "msg_v2s1", "time": at(20_000)}),
    );
    row(
        "ses_v2a",
        7,
        "msg_v2i1",
        "idle",
        T2 + 21_000,
        json!({"outcome": "succeeded", "time": at(21_000)}),
    );
    row(
        "ses_v2a",
        8,
        "msg_v2f1",
        "future-thing",
        T2 + 22_000,
        json!({"time": at(22_000)}),
    );
    row(
        "ses_v2a",
        9,
        "msg_v2a2",
        "assistant",
        T2 + 30_000,
        json!({"agent": "build", "model": {"id": "gpt-5.2", "providerID": "openai"}, "content": [],
               "error": {"type": "aborted", "message": "The operation was aborted."}, "time": at(30_000)}),
    );
    row(
        "ses_v2child",
        1,
        "msg_v2cu",
        "user",
        T2 + 3100,
        json!({"text": "Review the diff", "time": at(3100)}),
    );
    row(
        "ses_v2child",
        2,
        "msg_v2ca",
        "assistant",
        T2 + 3200,
        json!({"agent": "general", "model": {"id": "gpt-5.2-mini", "providerID": "openai"},
               "content": [{"type": "text", "id": "t", "text": "Looks good."}], "time": at(3200)}),
    );

    let b = opencode::read_db(&db.path, 0).unwrap();
    assert_eq!(b.watermark, T2 + 50_000);
    assert_eq!(b.sessions.len(), 2);
    let s = &b.sessions[0];
    assert_eq!(s.session.external_id, "ses_v2a");
    assert_eq!(s.session.parent_external_id, None);
    let ms = replaced(s);
    // The 1.x message, then the 2.x ones; the backfilled copy of msg_old1 is not read twice.
    assert_eq!(
        ms.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        [
            "msg_old1", "msg_v2u1", "msg_v2a1", "msg_v2s1", "msg_v2c1", "msg_v2a2"
        ]
    );
    assert_eq!(shape(ms[1]), ["text", "text"]);
    assert_eq!(part_text(ms[1], 0), "Passe la CLI à clap 4 🚀");
    assert_eq!(part_text(ms[1], 1), "[file: Cargo.toml (text/plain)]");
    assert_eq!(shape(ms[2]), ["thinking", "read", "bash", "write", "text"]);
    assert_eq!(ms[2].model.as_deref(), Some("gpt-5.2"));
    assert_eq!(ms[2].timestamp, Some(T2 + 2000));
    let calls: Vec<_> = ms[2].tool_calls().collect();
    assert_eq!(
        calls[0].output.as_deref(),
        Some("[package]\nname = \"tool\"")
    );
    assert_eq!(
        (calls[1].output.as_deref(), calls[1].is_error),
        (Some("exit code 101"), true)
    );
    assert_eq!(
        (&calls[2].input, calls[2].output.as_deref()),
        (&Value::Null, None),
        "pending: raw input string dropped, no output"
    );
    assert_eq!(
        (ms[3].role, ms[3].kind),
        (Role::User, Kind::ToolCall),
        "a user-run shell command"
    );
    let sh = ms[3].tool_calls().next().unwrap();
    assert_eq!(
        (sh.id.as_str(), sh.tool.as_str(), sh.output.as_deref()),
        ("sh_1", "shell", Some("total 0"))
    );
    assert_eq!(sh.input, json!({"command": "ls -la"}));
    assert_eq!((ms[4].role, ms[4].kind), (Role::Assistant, Kind::Summary));
    assert_eq!(
        part_text(ms[4], 0),
        "We are porting the CLI to clap 4; cargo build fails."
    );
    assert_eq!(
        part_text(ms[5], 0),
        "[error] aborted: The operation was aborted."
    );
    // 1.x: 1 message + 1 part; 2.x: 9 rows (backfill copy, agent-switched, idle known;
    // future-thing unknown).
    assert_eq!(s.stats, stats(11, 3, 1, 0));
    // The 2.x session row wins over the 1.x one.
    assert_eq!(s.meta.title.as_deref(), Some("Port the CLI to clap"));
    assert_eq!(s.meta.agent_version.as_deref(), Some("2.0.25"));
    assert_eq!(s.meta.model.as_deref(), Some("gpt-5.2"));
    assert_eq!(s.meta.started_at, Some(T2 - 200_000));
    assert_eq!(s.meta.updated_at, Some(T2 + 50_000));

    let c = &b.sessions[1];
    assert_eq!(c.session.parent_external_id.as_deref(), Some("ses_v2a"));
    assert_eq!(
        replaced(c).iter().map(|m| m.text()).collect::<Vec<_>>(),
        ["Review the diff", "Looks good."]
    );
    // Without the 1.x message table, the backfilled copies are the only ones: read them.
    db.raw("PRAGMA foreign_keys = OFF; DROP TABLE part; DROP TABLE message;");
    let b = opencode::read_db_session(&db.path, "ses_v2a", 0).unwrap();
    let ids: Vec<String> = replaced(only(&b)).iter().map(|m| m.id.clone()).collect();
    assert_eq!(
        ids[0],
        "evt_legacy_backfill_m_00000000_5f2a9c0e1b3d4a6f8e7c9b1a"
    );
    assert_eq!(ids.len(), 6);
    assert_eq!(
        opencode::db_session_ids(&db.path).unwrap(),
        ["ses_v2a", "ses_v2child"]
    );
}

// ---------------------------------------------------------------------------------------------
// Discovery and identification
// ---------------------------------------------------------------------------------------------

#[test]
fn discover_lists_databases_then_legacy_sessions_not_in_them() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("opencode");
    assert!(opencode::discover_in(&data).unwrap().is_empty());
    common::copy_tree(&storage(), &data.join("storage"));
    assert_eq!(
        opencode::discover_in(&data).unwrap(),
        [data.join(format!("storage/session/{PROJECT}/{SES}.json"))]
    );
    // Databases: the stable channel first, then the others; WAL side files are not databases.
    let db = OcDb::new(SCHEMA_V1);
    phase1(&db);
    db.raw("PRAGMA wal_checkpoint(TRUNCATE);");
    std::fs::copy(&db.path, data.join("opencode.db")).unwrap();
    std::fs::copy(&db.path, data.join("opencode-beta.db")).unwrap();
    std::fs::write(data.join("opencode.db-wal"), b"").unwrap();
    std::fs::write(data.join("opencode.db-shm"), b"").unwrap();
    // A legacy session that was never migrated.
    let other = data.join(format!("storage/session/{PROJECT}/ses_zzLegacyOnly.json"));
    std::fs::write(
        &other,
        br#"{"id":"ses_zzLegacyOnly","title":"t","time":{"created":1}}"#,
    )
    .unwrap();
    assert_eq!(
        opencode::discover_in(&data).unwrap(),
        [
            data.join("opencode.db"),
            data.join("opencode-beta.db"),
            other.clone()
        ],
        "the migrated legacy session is left out"
    );
    assert!(opencode::source_for(&data.join("opencode.db")).is_none());
    assert!(matches!(
        opencode::source_for(&tmp.path().join("export.json")),
        Some(memtrail_adapters::Source::Doc(_))
    ));
    // A legacy file whose session cannot be read is one malformed line.
    let mut b = Batch::default();
    opencode::StorageReader::new(&tmp.path().join("storage/session/p/ses_gone.json"))
        .read(b"", &mut b);
    assert_eq!(b.stats, stats(1, 0, 0, 1));
    for (p, kind) in [
        (data.join("opencode.db"), SourceKind::Database),
        (other.clone(), SourceKind::StorageSession),
        (tmp.path().join("export.json"), SourceKind::Export),
    ] {
        assert_eq!(opencode::source_kind(&p), kind, "{}", p.display());
    }
    let e = opencode::identify(&data.join("opencode.db")).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert_eq!(
        opencode::identify(&other).unwrap().external_id,
        "ses_zzLegacyOnly"
    );
    // An export without info.id cannot be identified.
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, br#"{"info":{},"messages":[]}"#).unwrap();
    assert_eq!(
        opencode::identify(&bad).unwrap_err().kind(),
        std::io::ErrorKind::InvalidData
    );
    assert!(opencode::identify(&tmp.path().join("missing.json")).is_err());
}

// ---------------------------------------------------------------------------------------------
// Bytes that are not what they should be
// ---------------------------------------------------------------------------------------------

#[test]
fn mutated_exports_and_random_bytes_never_panic() {
    let mut messages = Vec::new();
    for id in [M1, M2, M3, M4] {
        let (info, parts) = fixture_message(id);
        messages.push(json!({"info": info, "parts": parts}));
    }
    let doc =
        serde_json::to_vec(&json!({"info": load(&session_file()), "messages": messages})).unwrap();
    let mut rng = Lcg(0x0c0de);
    for _ in 0..300 {
        let mut d = doc.clone();
        match rng.next() % 3 {
            0 => {
                let i = (rng.next() as usize) % d.len();
                d[i] = rng.next() as u8;
            }
            1 => d.truncate((rng.next() as usize) % d.len()),
            _ => {
                let i = (rng.next() as usize) % d.len();
                d.splice(i..i, b"\"\xff{[".iter().copied());
            }
        }
        let (_, b) = opencode::read_export(&d);
        assert!(b.stats.skipped() <= b.stats.lines);
    }
    for _ in 0..300 {
        let len = (rng.next() % 300) as usize;
        let d: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let (sref, b) = opencode::read_export(&d);
        assert!(sref.is_none());
        assert_eq!(b.stats, stats(1, 0, 0, 1));
    }
}

#[test]
fn weird_types_inside_valid_export_json_never_panic() {
    for doc in [
        json!([]),
        json!({"info": 1, "messages": 2}),
        json!({"info": {"id": 5}, "messages": [1, "x", null, {}]}),
        json!({"messages": [{"info": {"id": "m", "role": "user"}, "parts": {"type": "text"}}]}),
        json!({"messages": [{"info": {"id": "m", "role": "assistant", "time": {"created": 1.5e300}},
                              "parts": [{"type": "tool", "callID": "c", "tool": "bash", "state": "done"},
                                        {"type": "reasoning", "text": ["a"]},
                                        {"type": "file"}]}]}),
        json!({"info": {"id": "s", "title": 3, "time": "x"}, "messages": [{"info": {"id": "m", "role": "user", "time": {"created": -5}}, "parts": [{"type": "text", "text": "ok"}]}]}),
    ] {
        let bytes = serde_json::to_vec(&doc).unwrap();
        let (_, b) = opencode::read_export(&bytes);
        assert!(b.stats.skipped() <= b.stats.lines, "{doc}");
    }
    // Spot checks: a tool whose state is a string is a call with nothing known; a file part
    // without anything is a bare note.
    let (_, b) = opencode::read_export(
        &serde_json::to_vec(&json!({"messages": [{"info": {"id": "m", "role": "assistant"},
            "parts": [{"type": "tool", "callID": "c", "tool": "bash", "state": "done"}, {"type": "file"}]}]}))
        .unwrap(),
    );
    let m = msgs(&b)[0];
    let call = m.tool_calls().next().unwrap();
    assert_eq!((call.output.as_deref(), call.is_error), (None, false));
    assert_eq!(part_text(m, 1), "[file: file]");
    assert!(matches!(m.parts[0], Part::ToolCall(_)));
}

/// Issue 11 item 13: the bash tool completes a command that exits non-zero (upstream
/// `tool/bash.ts` puts the code in `state.metadata.exit`, the output holds no `exit code N`).
/// The call is an error with that exit code; a zero exit is recorded as 0 and no error.
#[test]
fn a_completed_bash_call_with_a_non_zero_metadata_exit_is_a_failure_with_its_code() {
    let part = |id: &str, exit: i64, output: &str| {
        json!({
            "id": format!("prt_{id}"), "sessionID": "ses_x", "messageID": "msg_a",
            "type": "tool", "callID": id, "tool": "bash",
            "state": {
                "status": "completed",
                "input": {"command": "grep -r needle src", "description": "Search"},
                "output": output,
                "title": "grep -r needle src",
                "metadata": {"output": output, "exit": exit, "description": "Search"},
                "time": {"start": T, "end": T + 5}
            }
        })
    };
    let doc = json!({
        "info": {"id": "ses_x", "directory": CWD, "time": {"created": T, "updated": T + 9}},
        "messages": [{
            "info": {"id": "msg_a", "sessionID": "ses_x", "role": "assistant",
                     "time": {"created": T, "completed": T + 9}},
            "parts": [part("call_fail", 2, "grep: src: No such file or directory\n"),
                      part("call_ok", 0, "src/a.rs: needle\n")]
        }]
    });
    let (_, b) = opencode::read_export(&serde_json::to_vec(&doc).unwrap());
    let calls: Vec<_> = msgs(&b)
        .iter()
        .flat_map(|m| m.tool_calls().cloned().collect::<Vec<_>>())
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].id, "call_fail");
    assert!(calls[0].is_error);
    assert_eq!(calls[0].exit_code, Some(2));
    assert_eq!(
        calls[0].output.as_deref(),
        Some("grep: src: No such file or directory\n")
    );
    assert_eq!(calls[1].id, "call_ok");
    assert!(!calls[1].is_error);
    assert_eq!(calls[1].exit_code, Some(0));
}
