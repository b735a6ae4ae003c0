//! Goose (block/goose): its sessions database `sessions.db`, its legacy per-session JSONL
//! files, its plugin hooks.
//!
//! Format, traps and sources: `docs/agents/goose.md`. In short:
//!
//! - **The database** `<data>/sessions/sessions.db` (SQLite, WAL) holds every session: a row of
//!   `sessions` (`id` such as `20260301_1`, `working_dir`, `name`, `created_at`/`updated_at` as
//!   `YYYY-MM-DD HH:MM:SS` UTC, `model_config_json`, `session_type`, later `parent_session_id`)
//!   and rows of `messages` (`id` INTEGER AUTOINCREMENT, `message_id`, `session_id`, `role`
//!   `user|assistant`, `content_json` (an array of Goose's `MessageContent`), `created_timestamp`
//!   in **seconds**, `metadata_json` `{"userVisible","agentVisible"}`). Goose appends a row per
//!   message, but `replace_conversation` (compaction, a conversation fix) deletes every row of the
//!   session and inserts them again under new row ids.
//! - The reader's cursor is the largest `messages.id` read for the session: the rows after it
//!   are new, or a rewrite's copies. A message's id is its `message_id`, else a hash of its role,
//!   time and content, so that a rewrite's copies merge into the messages already stored.
//! - The database is another program's: it is opened read-only, never written, never
//!   checkpointed, and without leaving `-wal`/`-shm` files in Goose's folder
//!   ([`readonly`]).
//! - **Legacy** `<data>/sessions/<id>.jsonl` (Goose before its database): a metadata line, then
//!   one message per line, the file rewritten whole; read as a document, and only where no
//!   database exists (Goose imports these files into a new database itself).

pub mod adapter;
pub mod paths;
pub(crate) mod readonly;
pub mod registration;

use crate::model::{
    Agent, Batch, DocReader, HookEvent, Kind, Message, ParseStats, Part, Record, Role, SessionMeta,
    SessionRef, ToolCall, normalize_tool_name, parse_rfc3339_ms, title_text,
};
use crate::{DbBatch, DbSession, Source};
use readonly::{int_of, text_of, with_db};
use rusqlite::{Connection, OptionalExtension};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The folder under Goose's data folder holding its sessions.
pub const SESSIONS_DIR: &str = "sessions";
/// The sessions database's file name.
pub const DB_NAME: &str = "sessions.db";

/// Longest title kept (characters).
const TITLE_CHARS: usize = 200;

fn locations() -> paths::Locations {
    paths::Locations::resolve(&crate::Env::from_process())
}

/// `<data>/sessions/sessions.db` of this process's environment.
pub fn database_path() -> PathBuf {
    locations().database
}

// ---------------------------------------------------------------------------------------------
// Messages: Goose's `MessageContent` array -> memtrail's parts
// ---------------------------------------------------------------------------------------------

/// One Goose message as stored (a database row or a legacy line).
struct Raw<'a> {
    /// memtrail's message id for it.
    id: String,
    role: &'a str,
    content: &'a [Value],
    /// Goose's `created` / `created_timestamp`: seconds since the epoch (ms accepted).
    created: Option<i64>,
    metadata: Option<&'a Value>,
}

/// Seconds (Goose's unit) to ms; a value that already looks like ms is kept.
fn to_ms(t: i64) -> i64 {
    if t.abs() >= 100_000_000_000 {
        t
    } else {
        t.saturating_mul(1000)
    }
}

/// The text of an MCP content list (`[{"type":"text","text":…}, {"type":"resource",…}]`):
/// text items and text resources joined by newlines; images and blobs are left out.
fn content_text(items: &[Value]) -> String {
    let mut out: Vec<&str> = Vec::new();
    for it in items {
        match it.get("type").and_then(Value::as_str) {
            Some("text") => out.extend(it.get("text").and_then(Value::as_str)),
            Some("resource") => out.extend(
                it.get("resource")
                    .and_then(|r| r.get("text"))
                    .and_then(Value::as_str),
            ),
            _ => {}
        }
    }
    out.join("\n")
}

/// A tool response's `toolResult`: `{"status":"success","value":<CallToolResult or content
/// list>}` or `{"status":"error","error":"…"}` → (output, is_error).
fn tool_result(r: &Value) -> (String, bool) {
    if r.get("status").and_then(Value::as_str) == Some("error") {
        let e = r.get("error").and_then(Value::as_str).unwrap_or("error");
        return (e.to_string(), true);
    }
    let v = r.get("value").unwrap_or(&Value::Null);
    match v {
        Value::Array(items) => (content_text(items), false),
        Value::Object(o) => {
            let items = o
                .get("content")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let err = o.get("isError").and_then(Value::as_bool).unwrap_or(false);
            (content_text(items), err)
        }
        _ => (String::new(), false),
    }
}

/// Goose's built-in extensions, whose tools are named `<extension>__<tool>`; tools of any other
/// extension are MCP servers' (`mcp`).
const BUILTIN_EXTENSIONS: &[&str] = &[
    "developer",
    "platform",
    "todo",
    "computercontroller",
    "memory",
    "chatrecall",
    "extensionmanager",
];

/// The common tool name of a Goose tool: a built-in extension's prefix (`developer__`) left
/// out, the text editor by its `command` (`view` reads, `write` writes, the rest edit); another
/// extension's tool is `mcp`.
fn common_tool(name: &str, input: &Value) -> String {
    let (ext, bare) = name.split_once("__").unwrap_or(("", name));
    match bare {
        "text_editor" => match input.get("command").and_then(Value::as_str) {
            Some("view") => "read".to_string(),
            Some("write") => "write".to_string(),
            _ => "edit".to_string(),
        },
        "todo_write" | "todo_read" => "todo".to_string(),
        _ if ext.is_empty() || BUILTIN_EXTENSIONS.contains(&ext) => normalize_tool_name(bare),
        _ => "mcp".to_string(),
    }
}

/// A tool request's call: `{"id","toolCall":{"status":"success","value":{"name","arguments"}}}`;
/// a request Goose could not parse (`status: error`) becomes a failed call with its error.
fn tool_call(c: &Value) -> Option<ToolCall> {
    let id = c.get("id").and_then(Value::as_str)?.to_string();
    let call = c.get("toolCall").unwrap_or(&Value::Null);
    if call.get("status").and_then(Value::as_str) == Some("error") {
        let e = call.get("error").and_then(Value::as_str).unwrap_or("error");
        return Some(ToolCall {
            id,
            name: "invalid".into(),
            tool: "invalid".into(),
            input: Value::Null,
            output: Some(e.to_string()),
            is_error: true,
            exit_code: None,
        });
    }
    let v = call.get("value").unwrap_or(&Value::Null);
    let name = v
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let input = v.get("arguments").cloned().unwrap_or(Value::Null);
    Some(ToolCall {
        tool: common_tool(&name, &input),
        id,
        name,
        input,
        output: None,
        is_error: false,
        exit_code: None,
    })
}

/// Turns Goose messages into records, attaching each tool response to its request when the
/// request is earlier in the same read (Goose writes responses in the next, `user`, message).
#[derive(Default)]
struct Converter {
    records: Vec<Record>,
    /// call id -> (record index, part index).
    calls: HashMap<String, (usize, usize)>,
    meta: SessionMeta,
    stats: ParseStats,
}

impl Converter {
    fn push(&mut self, m: Raw<'_>) {
        self.stats.lines += 1;
        let ts = m.created.map(to_ms);
        let visible = |k: &str| {
            m.metadata
                .and_then(|md| md.get(k))
                .and_then(Value::as_bool)
                .unwrap_or(true)
        };
        // Goose's compaction writes its summary (and the text that follows it) for the model
        // only: `userVisible: false`, `agentVisible: true`.
        let summary = !visible("userVisible") && visible("agentVisible");
        let mut parts = Vec::new();
        for c in m.content {
            match c.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(t) = c.get("text").and_then(Value::as_str)
                        && !t.trim().is_empty()
                    {
                        parts.push(Part::Text {
                            text: t.to_string(),
                        });
                    }
                }
                Some("thinking") => {
                    if let Some(t) = c.get("thinking").and_then(Value::as_str)
                        && !t.trim().is_empty()
                    {
                        parts.push(Part::Thinking {
                            text: t.to_string(),
                        });
                    }
                }
                Some("toolRequest" | "frontendToolRequest") => {
                    if let Some(call) = tool_call(c) {
                        parts.push(Part::ToolCall(call));
                    }
                }
                Some("toolResponse") => {
                    let Some(id) = c.get("id").and_then(Value::as_str) else {
                        continue;
                    };
                    let (output, is_error) =
                        tool_result(c.get("toolResult").unwrap_or(&Value::Null));
                    self.result(id, output, is_error, ts);
                }
                // Images, redacted thinking, confirmations, notifications: nothing to keep.
                _ => {}
            }
        }
        if parts.is_empty() {
            if !m
                .content
                .iter()
                .any(|c| c.get("type").and_then(Value::as_str) == Some("toolResponse"))
            {
                self.stats.skipped_known += 1;
            }
            return;
        }
        let role = match m.role {
            "assistant" => Role::Assistant,
            _ if summary => Role::System,
            _ => Role::User,
        };
        let kind = if summary {
            Kind::Summary
        } else {
            Message::infer_kind(&parts)
        };
        if role == Role::User && kind == Kind::Text && self.meta.title.is_none() {
            let text = Message {
                id: String::new(),
                role,
                kind,
                parts: parts.clone(),
                timestamp: None,
                model: None,
            }
            .text();
            self.meta.title = Some(title_text(&text, TITLE_CHARS));
        }
        self.meta.absorb(SessionMeta {
            started_at: ts,
            updated_at: ts,
            ..SessionMeta::default()
        });
        let at = self.records.len();
        for (k, p) in parts.iter().enumerate() {
            if let Part::ToolCall(c) = p {
                self.calls.insert(c.id.clone(), (at, k));
            }
        }
        self.records.push(Record::Message(Message {
            id: m.id,
            role,
            kind,
            parts,
            timestamp: ts,
            model: None,
        }));
    }

    fn result(&mut self, call_id: &str, output: String, is_error: bool, ts: Option<i64>) {
        if let Some(&(i, k)) = self.calls.get(call_id)
            && let Some(Record::Message(m)) = self.records.get_mut(i)
            && let Some(Part::ToolCall(c)) = m.parts.get_mut(k)
        {
            c.output = Some(output);
            c.is_error = is_error;
            return;
        }
        self.records.push(Record::ToolResult {
            call_id: call_id.to_string(),
            output,
            is_error,
            exit_code: None,
            timestamp: ts,
        });
    }
}

/// A message id that survives Goose's rewrites: the hex of the first 8 bytes of the SHA-256 of
/// the session, role, time and content, for rows that have no `message_id`.
fn content_id(session: &str, role: &str, created: Option<i64>, content: &str) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for piece in [
        session.as_bytes(),
        role.as_bytes(),
        created.unwrap_or(0).to_string().as_bytes(),
        content.as_bytes(),
    ] {
        h.update((piece.len() as u64).to_le_bytes());
        h.update(piece);
    }
    let d = h.finalize();
    let hex: String = d[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("goose-{hex}")
}

// ---------------------------------------------------------------------------------------------
// The database
// ---------------------------------------------------------------------------------------------

fn db_err(db: &Path, e: rusqlite::Error) -> crate::Error {
    readonly::db_err("Goose", db, e)
}

/// A `sessions` row: every column this database has among those memtrail reads.
fn session_info(
    conn: &Connection,
    db: &Path,
    id: &str,
) -> Result<(SessionRef, SessionMeta), crate::Error> {
    const WANTED: [&str; 8] = [
        "working_dir",
        "name",
        "description",
        "created_at",
        "updated_at",
        "model_config_json",
        "parent_session_id",
        "session_type",
    ];
    let have = readonly::columns(conn, "sessions").map_err(|e| db_err(db, e))?;
    let cols: Vec<&str> = WANTED
        .into_iter()
        .filter(|w| have.iter().any(|h| h == w))
        .collect();
    let mut sref = SessionRef {
        agent: Agent::Goose,
        external_id: id.to_string(),
        parent_external_id: None,
    };
    let mut meta = SessionMeta::default();
    if cols.is_empty() {
        return Ok((sref, meta));
    }
    let sql = format!(
        "SELECT {} FROM sessions WHERE id = ?1",
        cols.iter()
            .map(|c| format!("\"{c}\""))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let row: Option<Vec<Option<String>>> = conn
        .query_row(&sql, [id], |r| {
            (0..cols.len())
                .map(|i| Ok(text_of(r.get_ref(i)?)))
                .collect()
        })
        .optional()
        .map_err(|e| db_err(db, e))?;
    let Some(row) = row else {
        return Ok((sref, meta));
    };
    let get = |k: &str| {
        cols.iter()
            .position(|c| *c == k)
            .and_then(|i| row[i].clone())
            .filter(|s| !s.trim().is_empty())
    };
    meta.project_dir = get("working_dir");
    meta.title = get("name")
        .or_else(|| get("description"))
        .map(|t| title_text(&t, TITLE_CHARS));
    meta.started_at = get("created_at").and_then(|t| parse_rfc3339_ms(&t));
    meta.updated_at = get("updated_at").and_then(|t| parse_rfc3339_ms(&t));
    meta.model = get("model_config_json")
        .and_then(|j| serde_json::from_str::<Value>(&j).ok())
        .and_then(|v| v.get("model_name")?.as_str().map(str::to_string));
    sref.parent_external_id = get("parent_session_id").filter(|p| p != id);
    Ok((sref, meta))
}

/// The tables a Goose database must have.
fn check_tables(conn: &Connection, db: &Path) -> Result<Vec<String>, crate::Error> {
    let cols = readonly::columns(conn, "messages").map_err(|e| db_err(db, e))?;
    let needed = ["id", "session_id", "role", "content_json"];
    if needed.iter().any(|n| !cols.iter().any(|c| c == n)) {
        return Err(crate::Error::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{} is not a Goose sessions database (no messages table with id, session_id, \
                 role and content_json)",
                db.display()
            ),
        )));
    }
    Ok(cols)
}

/// Read what is new for `session` in Goose's database since the row id `since` (the largest
/// `messages.id` of that session read before; `0` or less reads everything): the messages of
/// the rows after it, in row order, as [`Record::Message`] (merged by id: the copies a rewrite
/// inserts merge into what is stored), with tool responses attached to their requests. When the
/// session's largest row id is below `since` (the database was restored from a backup), the
/// whole session is read again. The watermark of the result is the largest row id read.
///
/// With `session` `None`, every session (for tests and tools; `memtrail import` reads session
/// by session through [`db_session_ids`]).
///
/// Errors: the file cannot be opened read-only as a SQLite database, has no Goose `messages`
/// table, or a query fails.
pub fn read_db(db: &Path, session: Option<&str>, since: i64) -> Result<DbBatch, crate::Error> {
    with_db("Goose", db, |conn| read_db_on(conn, db, session, since))
}

fn read_db_on(
    conn: &Connection,
    db: &Path,
    session: Option<&str>,
    since: i64,
) -> Result<DbBatch, crate::Error> {
    let cols = check_tables(conn, db)?;
    let has = |c: &str| cols.iter().any(|x| x == c);
    let col = |c: &str| {
        if has(c) {
            format!("\"{c}\"")
        } else {
            "NULL".to_string()
        }
    };
    let mut since = since.max(0);
    if let Some(s) = session {
        let max: Option<i64> = conn
            .query_row(
                "SELECT MAX(id) FROM messages WHERE session_id = ?1",
                [s],
                |r| Ok(int_of(r.get_ref(0)?)),
            )
            .map_err(|e| db_err(db, e))?;
        if max.is_some_and(|m| m < since) {
            since = 0;
        }
    }
    let sql = format!(
        "SELECT id, session_id, role, content_json, {}, {}, {} FROM messages \
         WHERE id > ?1{} ORDER BY session_id, id",
        col("created_timestamp"),
        col("metadata_json"),
        col("message_id"),
        if session.is_some() {
            " AND session_id = ?2"
        } else {
            ""
        },
    );
    type Row = (
        Option<i64>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<i64>,
        Option<String>,
        Option<String>,
    );
    let mut stmt = conn.prepare(&sql).map_err(|e| db_err(db, e))?;
    let map = |r: &rusqlite::Row<'_>| -> rusqlite::Result<Row> {
        Ok((
            int_of(r.get_ref(0)?),
            text_of(r.get_ref(1)?),
            text_of(r.get_ref(2)?),
            text_of(r.get_ref(3)?),
            int_of(r.get_ref(4)?),
            text_of(r.get_ref(5)?),
            text_of(r.get_ref(6)?),
        ))
    };
    let rows: Vec<Row> = match session {
        Some(s) => stmt.query_map(rusqlite::params![since, s], map),
        None => stmt.query_map(rusqlite::params![since], map),
    }
    .map_err(|e| db_err(db, e))?
    .flatten()
    .collect();
    drop(stmt);

    let mut watermark = since;
    let mut by_session: Vec<(String, Converter)> = Vec::new();
    for (rowid, sid, role, content, created, metadata, message_id) in rows {
        watermark = watermark.max(rowid.unwrap_or(0));
        let Some(sid) = sid else { continue };
        if by_session.last().is_none_or(|(s, _)| *s != sid) {
            by_session.push((sid.clone(), Converter::default()));
        }
        let conv = &mut by_session.last_mut().expect("pushed above").1;
        let content_json = content.unwrap_or_default();
        let Ok(Value::Array(items)) = serde_json::from_str::<Value>(&content_json) else {
            conv.stats.lines += 1;
            conv.stats.malformed += 1;
            continue;
        };
        let role = role.unwrap_or_default();
        if role != "user" && role != "assistant" {
            conv.stats.lines += 1;
            conv.stats.skipped_unknown += 1;
            continue;
        }
        let metadata = metadata.and_then(|m| serde_json::from_str::<Value>(&m).ok());
        let id = message_id
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| content_id(&sid, &role, created, &content_json));
        conv.push(Raw {
            id,
            role: &role,
            content: &items,
            created,
            metadata: metadata.as_ref(),
        });
    }
    // A session asked for by a hook is reported even without new rows (its title may have
    // changed): only when it exists.
    if let Some(s) = session
        && by_session.is_empty()
    {
        let exists: Option<i64> = conn
            .query_row("SELECT 1 FROM sessions WHERE id = ?1", [s], |r| {
                Ok(int_of(r.get_ref(0)?))
            })
            .optional()
            .map_err(|e| db_err(db, e))?
            .flatten();
        if exists.is_none() || since > 0 {
            return Ok(DbBatch {
                sessions: Vec::new(),
                watermark,
            });
        }
        by_session.push((s.to_string(), Converter::default()));
    }
    let mut sessions = Vec::new();
    for (sid, conv) in by_session {
        let (sref, mut meta) = session_info(conn, db, &sid)?;
        meta.absorb(conv.meta);
        sessions.push(DbSession {
            session: sref,
            meta,
            records: conv.records,
            stats: conv.stats,
        });
    }
    sessions.sort_by(|a, b| {
        let key = |s: &DbSession| {
            (
                s.session.parent_external_id.is_some(),
                s.meta.started_at.unwrap_or(i64::MAX),
                s.session.external_id.clone(),
            )
        };
        key(a).cmp(&key(b))
    });
    Ok(DbBatch {
        sessions,
        watermark,
    })
}

/// The ids of every session in Goose's database, sorted.
///
/// Errors: as [`read_db`].
pub fn db_session_ids(db: &Path) -> Result<Vec<String>, crate::Error> {
    with_db("Goose", db, |conn| {
        check_tables(conn, db)?;
        let mut stmt = conn
            .prepare("SELECT id FROM sessions ORDER BY id")
            .map_err(|e| db_err(db, e))?;
        let ids = stmt
            .query_map([], |r| Ok(text_of(r.get_ref(0)?)))
            .map_err(|e| db_err(db, e))?
            .flatten()
            .flatten()
            .collect();
        Ok(ids)
    })
}

// ---------------------------------------------------------------------------------------------
// Legacy JSONL (`<data>/sessions/<id>.jsonl`)
// ---------------------------------------------------------------------------------------------

/// Reads a legacy Goose session file whole: its first line is the session's metadata
/// (`working_dir`, `description`, …; a file may lack it), every other line a message
/// `{"role","created","content":[…]}`. Message ids are `legacy-<line number>` (the runtime
/// replaces the session's messages when the file changes).
#[derive(Debug, Default)]
pub struct LegacyReader;

impl DocReader for LegacyReader {
    fn read(&mut self, bytes: &[u8], out: &mut Batch) {
        let mut conv = Converter::default();
        for (n, line) in bytes.split(|b| *b == b'\n').enumerate() {
            let Some(line) = crate::model::trim_line(line) else {
                continue;
            };
            let Some(v) = crate::model::parse_object_line::<Value>(line) else {
                conv.stats.lines += 1;
                conv.stats.malformed += 1;
                continue;
            };
            let Some(content) = v.get("content").and_then(Value::as_array) else {
                conv.stats.lines += 1;
                if n == 0 {
                    conv.stats.skipped_known += 1;
                    out.meta.project_dir = v
                        .get("working_dir")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    out.meta.title = v
                        .get("description")
                        .and_then(Value::as_str)
                        .filter(|d| !d.trim().is_empty())
                        .map(|d| title_text(d, TITLE_CHARS));
                } else {
                    conv.stats.skipped_unknown += 1;
                }
                continue;
            };
            let role = v.get("role").and_then(Value::as_str).unwrap_or("");
            if role != "user" && role != "assistant" {
                conv.stats.lines += 1;
                conv.stats.skipped_unknown += 1;
                continue;
            }
            conv.push(Raw {
                id: format!("legacy-{}", n + 1),
                role,
                content,
                created: v.get("created").and_then(Value::as_i64),
                metadata: v.get("metadata"),
            });
        }
        out.meta.absorb(conv.meta);
        out.records.extend(conv.records);
        out.stats.add(conv.stats);
    }
}

// ---------------------------------------------------------------------------------------------
// Sources, identity, discovery
// ---------------------------------------------------------------------------------------------

fn is_db(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == DB_NAME)
}

fn legacy_id(path: &Path) -> Option<&str> {
    if path.extension()? != "jsonl" {
        return None;
    }
    path.file_stem()?
        .to_str()
        .filter(|s| !s.is_empty() && is_safe_name(s))
}

fn is_safe_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 200
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && s != "."
        && s != ".."
}

/// How to read `path`: the sessions database, or a legacy `<id>.jsonl` document.
pub fn source_for(path: &Path) -> Option<Source> {
    if is_db(path) {
        Some(Source::Database)
    } else if legacy_id(path).is_some() {
        Some(Source::Doc(Box::new(LegacyReader)))
    } else {
        None
    }
}

/// The session of a legacy `<id>.jsonl` (its file stem).
///
/// Errors: `sessions.db` holds many sessions (`ErrorKind::InvalidInput`), as does any other
/// file.
pub fn identify(path: &Path) -> std::io::Result<SessionRef> {
    let id = legacy_id(path).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} is not one Goose session (sessions.db holds many; a legacy session is \
                 <id>.jsonl)",
                path.display()
            ),
        )
    })?;
    Ok(SessionRef {
        agent: Agent::Goose,
        external_id: id.to_string(),
        parent_external_id: None,
    })
}

/// Every Goose source on this machine, for `memtrail import`.
///
/// Errors: the sessions folder exists but cannot be listed.
pub fn discover() -> std::io::Result<crate::Discovery> {
    discover_in(&locations().sessions_dir)
}

/// [`discover`] in an explicit sessions folder: `sessions.db` when it is a file; the legacy
/// `<id>.jsonl` files only when there is no database (Goose copies them into a new database
/// itself, under the same ids: reading both would store each twice).
pub fn discover_in(sessions: &Path) -> std::io::Result<crate::Discovery> {
    let db = sessions.join(DB_NAME);
    if db.is_file() {
        return Ok(vec![db].into());
    }
    let entries = match std::fs::read_dir(sessions) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
        Err(e) => return Err(e),
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| legacy_id(p).is_some() && p.is_file())
        .collect();
    files.sort();
    Ok(files.into())
}

// ---------------------------------------------------------------------------------------------
// Hooks
// ---------------------------------------------------------------------------------------------

/// Parse a Goose hook payload (`HookContext`, `crates/goose/src/hooks/mod.rs`): `{"event",
/// "session_id", "working_dir"?, "matcher_context"?, "tool_name"?, "message"?,
/// "last_assistant_message"?, …}`. Goose sends no transcript path: the session is in its
/// database.
///
/// Errors: an empty payload, not JSON, not an object.
pub fn parse_hook_payload(bytes: &[u8], env: &crate::Env) -> Result<HookEvent, crate::Error> {
    let _ = env;
    let payload = object_payload(bytes)?;
    let get = |k: &str| field(&payload, k);
    Ok(HookEvent {
        agent: Agent::Goose,
        event: get("event")
            .or_else(|| get("hook_event_name"))
            .unwrap_or_default(),
        session_id: get("session_id"),
        transcript_path: None,
        cwd: get("working_dir").or_else(|| get("cwd")),
        source: None,
        agent_transcript_path: None,
        extra: payload,
    })
}

/// A hook payload that must be one JSON object (after a UTF-8 BOM); shared by the adapters of
/// Goose, Crush and Aider.
///
/// Errors: nothing but whitespace, not JSON, not an object.
pub(crate) fn object_payload(bytes: &[u8]) -> Result<Value, crate::Error> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(crate::Error::EmptyPayload);
    }
    match serde_json::from_slice(bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(crate::Error::PayloadNotObject),
        Err(e) => Err(crate::Error::PayloadNotJson(e)),
    }
}

/// A payload's string field `k`, when present and not empty.
pub(crate) fn field(payload: &Value, k: &str) -> Option<String> {
    payload
        .get(k)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The database of this process's environment, when the event names a session and the
/// database exists (see [`transcripts_for_event_in`]).
pub fn transcripts_for_event(ev: &HookEvent) -> Vec<PathBuf> {
    transcripts_for_event_in(ev, &database_path())
}

/// [`transcripts_for_event`] with an explicit database path. An event naming a transcript
/// (Goose's payloads never do; a legacy `<id>.jsonl` given by a caller) ingests that file.
pub fn transcripts_for_event_in(ev: &HookEvent, db: &Path) -> Vec<PathBuf> {
    if let Some(t) = ev.transcript_path.as_deref().filter(|t| !t.is_empty()) {
        return vec![PathBuf::from(t)];
    }
    match ev.session_id.as_deref() {
        Some(s) if is_safe_name(s) && db.is_file() => vec![db.to_path_buf()],
        _ => Vec::new(),
    }
}

/// Goose ignores what a `SessionStart` hook prints (it runs it with `HookManager::emit`); the
/// reply is `{"banner": context}`, the shape Goose shows to the user for the hooks it collects
/// banners from, so that nothing else is printed.
pub fn session_start_reply(context: &str) -> Option<String> {
    Some(serde_json::json!({ "banner": context }).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_and_ids() {
        let v = serde_json::json!({"command": "view", "path": "/a"});
        assert_eq!(common_tool("developer__text_editor", &v), "read");
        assert_eq!(common_tool("developer__shell", &Value::Null), "shell");
        assert_eq!(common_tool("todo__todo_write", &Value::Null), "todo");
        assert_eq!(common_tool("github__get_issue", &Value::Null), "mcp");
        assert_eq!(to_ms(1_772_358_900), 1_772_358_900_000);
        assert_eq!(to_ms(1_772_358_900_123), 1_772_358_900_123);
        let a = content_id("s", "user", Some(1), "[]");
        assert_eq!(a.len(), "goose-".len() + 16);
        assert_ne!(a, content_id("s", "user", Some(2), "[]"));
    }
}
