//! OpenCode: paths, the plugin, hook payloads, and the readers for OpenCode's own session storage.
//!
//! Sources: `docs/agents/opencode.md` and `docs/agents/opencode.md#transcript-format`, checked
//! against the upstream source (`anomalyco/opencode`, formerly `sst/opencode`):
//! `packages/opencode/src/session/session.sql.ts` (tables), `packages/opencode/src/storage/db.ts`
//! (path, WAL), `packages/opencode/src/storage/json-migration.ts` (legacy JSON tree),
//! `packages/plugin/src/index.ts` (V1 plugin hooks), `packages/core/src/session/message.ts` and
//! `message-backfill.ts` (OpenCode 2.x `session_message`).
//!
//! # Where OpenCode keeps sessions
//!
//! OpenCode has no transcript file per session. Three storages exist, all read here:
//!
//! 1. **SQLite** (1.2 and later): `$XDG_DATA_HOME/opencode/opencode.db` (default
//!    `~/.local/share/opencode/opencode.db`; non-stable channels use `opencode-<channel>.db`).
//!    Drizzle tables `session`, `message(id, session_id, time_created, time_updated, data)` and
//!    `part(id, message_id, session_id, time_created, time_updated, data)`, where `data` is the
//!    JSON of the message info (`role`, `time`, `modelID`, …) or of the part (`type` `text`,
//!    `reasoning`, `tool`, `file`, `step-start`, …) without its ids. Times are ms since the
//!    epoch; `time_updated` is bumped on every upsert. The database is **live and in WAL mode**:
//!    [`read_db`] opens it read-only, never writes and never checkpoints, and reads incrementally
//!    by `time_updated` (a watermark). OpenCode 2.x adds `session_v2` and `session_message`
//!    (one row per message, `type` `user|assistant|compaction|shell|…`, content inline); those
//!    are read too.
//! 2. **The legacy JSON tree** (before 1.2, migrated into the database on first start but left
//!    on disk): `storage/session/<projectID>/<sessionID>.json`,
//!    `storage/message/<sessionID>/<messageID>.json`, `storage/part/<messageID>/<partID>.json`.
//!    Read by [`read_storage_session`] ([`StorageReader`] as a [`DocReader`]), for `memtrail
//!    import`.
//! 3. **`opencode export <sessionID>`** output: `{info, messages:[{info, parts}]}`, the same JSON
//!    as the REST API. Read by [`ExportReader`] (a [`DocReader`]).
//!
//! [`source_kind`] tells them apart by path; [`source_for`] gives the runtime a reader for the
//! two file kinds. All three use OpenCode's own ids (`ses_…`, `msg_…`, `prt_…`), so the same
//! message read from any of them has the same [`Message::id`].
//!
//! # Hooks
//!
//! OpenCode has no command hooks; memtrail installs a plugin, `templates/opencode/memtrail.ts`
//! (see [`plugin_source`]), that runs `<memtrail> hook opencode` with a small JSON payload on
//! stdin (see [`parse_hook_payload`]) when a session goes idle and around compaction.

use crate::Source;
use crate::model::{
    Agent, Batch, DocReader, HookEvent, Kind, Message, ParseStats, Part, Record, Role, SessionMeta,
    SessionRef, ToolCall, normalize_tool_name, title_text,
};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// Paths (`docs/agents/opencode.md#paths`)
// ---------------------------------------------------------------------------------------------

/// OpenCode's global config folder: `$XDG_CONFIG_HOME/opencode`, default `~/.config/opencode`
/// (also on macOS and Windows: OpenCode uses XDG paths everywhere). `$OPENCODE_CONFIG_DIR`
/// is an *additional* config folder in OpenCode, not a relocation, so it is not used here.
///
/// One resolver with the installer's: [`paths::Locations`].
pub fn config_dir() -> PathBuf {
    locations().config_dir
}

/// OpenCode's data folder (database, legacy storage, auth): `$XDG_DATA_HOME/opencode`, default
/// `~/.local/share/opencode`.
pub fn data_dir() -> PathBuf {
    locations().data_dir
}

/// The stable channel's session database: `<data>/opencode.db`.
pub fn db_path() -> PathBuf {
    data_dir().join("opencode.db")
}

/// The legacy JSON storage (before 1.2): `<data>/storage`.
pub fn storage_dir() -> PathBuf {
    data_dir().join("storage")
}

/// The global plugin folder: `<config>/plugins` (`docs/agents/opencode.md#the-plugin`; the plural
/// name is the documented one for 1.x and the one OpenCode 2.x loads from; 1.x also scans a
/// singular `plugin/`, which memtrail does not use).
pub fn plugins_dir() -> PathBuf {
    config_dir().join("plugins")
}

/// Where memtrail's plugin is installed: `<config>/plugins/memtrail.ts`.
pub fn plugin_path() -> PathBuf {
    locations().plugin
}

/// The global config file: `<config>/opencode.jsonc` when it exists, else `<config>/opencode.json`
/// (`docs/agents/opencode.md#paths`; both names are read by OpenCode).
pub fn config_file() -> PathBuf {
    locations().config_file
}

/// True when OpenCode looks installed: its config folder or its data folder exists (OpenCode
/// creates both at first start). The installer adds a `PATH` check for `opencode`.
pub fn detect() -> bool {
    config_dir().is_dir() || data_dir().is_dir()
}

/// The session databases in `data_dir`: `opencode.db` first, then `opencode-<channel>.db`
/// (beta, local builds), sorted. WAL side files (`*.db-wal`, `*.db-shm`) are not databases.
pub fn database_files(data_dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let main = data_dir.join("opencode.db");
    if main.is_file() {
        out.push(main);
    }
    let mut channels: Vec<PathBuf> = std::fs::read_dir(data_dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("opencode-") && n.ends_with(".db"))
                        && p.is_file()
                })
                .collect()
        })
        .unwrap_or_default();
    channels.sort();
    out.extend(channels);
    out
}

/// Every OpenCode session source on this machine, for `memtrail import`: see [`discover_in`]
/// with [`data_dir`].
pub fn discover() -> std::io::Result<Vec<PathBuf>> {
    discover_in(&data_dir())
}

/// Every session source under an OpenCode data folder:
///
/// 1. the databases ([`database_files`]; each holds many sessions, read with [`read_db`] or,
///    session by session, [`db_session_ids`] + [`read_db_session`]);
/// 2. then the legacy session files `storage/session/<projectID>/<sessionID>.json`, sorted,
///    **except** those whose session is already in one of the databases (OpenCode migrated
///    them; the database copy may have grown since, and reading both would replace the newer
///    content with the older one).
///
/// A missing folder gives an empty list. Unreadable sub-folders are skipped.
///
/// Errors: `data_dir/storage/session` exists but cannot be listed.
pub fn discover_in(data_dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = database_files(data_dir);
    let mut in_db = BTreeSet::new();
    for db in &out {
        if let Ok(ids) = db_session_ids(db) {
            in_db.extend(ids);
        }
    }
    let sessions = data_dir.join("storage").join("session");
    let projects = match std::fs::read_dir(&sessions) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    let mut legacy = Vec::new();
    for project in projects.flatten() {
        let Ok(files) = std::fs::read_dir(project.path()) else {
            continue;
        };
        for f in files.flatten() {
            let p = f.path();
            let is_json = p.extension().is_some_and(|e| e == "json");
            let known = p
                .file_stem()
                .and_then(|s| s.to_str())
                .is_some_and(|s| in_db.contains(s));
            if is_json && !known && p.is_file() {
                legacy.push(p);
            }
        }
    }
    legacy.sort();
    out.extend(legacy);
    Ok(out)
}

/// How a session source is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// An `opencode*.db` SQLite database: [`read_db`] / [`read_db_session`] with a
    /// `time_updated` watermark (many sessions per file).
    Database,
    /// A legacy `storage/session/<projectID>/<sessionID>.json`: [`read_storage_session`]
    /// (whole session; the messages live in sibling folders).
    StorageSession,
    /// Any other `.json`: `opencode export` output, read whole with [`ExportReader`].
    Export,
}

/// Which reader a path needs: `*.db` → [`SourceKind::Database`]; a `.json` two levels below a
/// `session` folder inside a `storage` folder → [`SourceKind::StorageSession`]; else
/// [`SourceKind::Export`]. The file is not opened.
pub fn source_kind(path: &Path) -> SourceKind {
    if path.extension().is_some_and(|e| e == "db") {
        return SourceKind::Database;
    }
    let up = |n: usize| {
        let mut p = path.parent();
        for _ in 0..n {
            p = p.and_then(Path::parent);
        }
        p.and_then(Path::file_name)
    };
    if up(1).is_some_and(|n| n == "session") && up(2).is_some_and(|n| n == "storage") {
        return SourceKind::StorageSession;
    }
    SourceKind::Export
}

/// The reader for a session source, in the runtime's terms (see [`source_kind`]):
///
/// - a legacy session file → [`Source::Doc`] with a [`StorageReader`] (the session with all its
///   message and part files, re-read whole when the session file changes);
/// - an `opencode export` document → [`Source::Doc`] with an [`ExportReader`];
/// - a database → `None`: it holds many sessions and is read by watermark, with [`read_db`] /
///   [`read_db_session`], not as one file of one session.
pub fn source_for(path: &Path) -> Option<Source> {
    match source_kind(path) {
        SourceKind::Database => None,
        SourceKind::StorageSession => Some(Source::Doc(Box::new(StorageReader::new(path)))),
        SourceKind::Export => Some(Source::Doc(Box::new(ExportReader::new()))),
    }
}

/// Largest JSON document (export or legacy session file) read whole.
const MAX_DOC_BYTES: u64 = 512 * 1024 * 1024;

/// Which session a session source holds.
///
/// - legacy `storage/session/<projectID>/<sessionID>.json`: `external_id` = the file stem; the
///   file is read for `parentID` (sub-agent sessions), which becomes `parent_external_id`;
/// - an `opencode export` document: `info.id` and `info.parentID`.
///
/// Errors: a database (`InvalidInput`: it holds many sessions, see [`read_db`]); the file cannot
/// be read; an export without `info.id` (`InvalidData`).
pub fn identify(path: &Path) -> std::io::Result<SessionRef> {
    let invalid = |msg: String| std::io::Error::new(std::io::ErrorKind::InvalidData, msg);
    match source_kind(path) {
        SourceKind::Database => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} is an OpenCode database holding many sessions; read it with opencode::read_db",
                path.display()
            ),
        )),
        SourceKind::StorageSession => {
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .filter(|s| !s.is_empty())
                .ok_or_else(|| invalid(format!("not a session file: {}", path.display())))?
                .to_string();
            let info = read_json_file(path)?;
            Ok(SessionRef {
                agent: Agent::Opencode,
                external_id: stem,
                parent_external_id: str_field(&info, "parentID").map(str::to_string),
            })
        }
        SourceKind::Export => {
            let doc = read_json_file(path)?;
            let info = doc.get("info").unwrap_or(&Value::Null);
            let id = str_field(info, "id")
                .ok_or_else(|| invalid(format!("no info.id in {}", path.display())))?;
            Ok(SessionRef {
                agent: Agent::Opencode,
                external_id: id.to_string(),
                parent_external_id: str_field(info, "parentID").map(str::to_string),
            })
        }
    }
}

fn read_json_file(path: &Path) -> std::io::Result<Value> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_DOC_BYTES)
        .read_to_end(&mut bytes)?;
    parse_doc(&bytes).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is not a JSON object", path.display()),
        )
    })
}

/// A JSON object from a whole document: a UTF-8 BOM and surrounding whitespace are allowed; a
/// line of text before the JSON (a note captured along with `opencode export`'s stdout) is skipped.
fn parse_doc(bytes: &[u8]) -> Option<Value> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if let Ok(v @ Value::Object(_)) = serde_json::from_slice::<Value>(bytes) {
        return Some(v);
    }
    let start = bytes.windows(2).position(|w| w == b"\n{").map(|i| i + 1)?;
    match serde_json::from_slice::<Value>(&bytes[start..]) {
        Ok(v @ Value::Object(_)) => Some(v),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Message and part conversion (shared by the database, the legacy tree and export JSON)
// ---------------------------------------------------------------------------------------------

/// Part `type`s that carry no conversation content (counted in `stats.skipped_known`):
/// `step-start`/`step-finish` (LLM step boundaries with snapshot, cost, tokens), `snapshot`,
/// `patch` (file hashes of a step), `retry`, `compaction` (the marker on the user message that
/// asked for a compaction), `agent` and `subtask` (an `@agent` mention and the sub-agent request,
/// both already in the user's text and the assistant's `task` call).
const SKIPPED_PART_TYPES: &[&str] = &[
    "step-start",
    "step-finish",
    "snapshot",
    "patch",
    "retry",
    "compaction",
    "agent",
    "subtask",
];

/// The title OpenCode gives a session before it has generated one (`New session - <ISO time>`,
/// `Child session - <ISO time>`); such a title is not used.
fn is_default_title(t: &str) -> bool {
    t.starts_with("New session - ") || t.starts_with("Child session - ")
}

/// What is known about a session from its own record (session row, session JSON or export
/// `info`).
#[derive(Debug, Default, Clone)]
struct SessionInfo {
    id: String,
    parent_id: Option<String>,
    directory: Option<String>,
    title: Option<String>,
    version: Option<String>,
    time_created: Option<i64>,
    time_updated: Option<i64>,
}

impl SessionInfo {
    /// From a session JSON object (`storage/session/…json` or export `info`).
    fn from_json(v: &Value) -> SessionInfo {
        SessionInfo {
            id: str_field(v, "id").unwrap_or_default().to_string(),
            parent_id: str_field(v, "parentID").map(str::to_string),
            directory: str_field(v, "directory").map(str::to_string),
            title: str_field(v, "title").map(str::to_string),
            version: str_field(v, "version").map(str::to_string),
            time_created: v.pointer("/time/created").and_then(as_ms),
            time_updated: v.pointer("/time/updated").and_then(as_ms),
        }
    }

    fn session_ref(&self) -> SessionRef {
        SessionRef {
            agent: Agent::Opencode,
            external_id: self.id.clone(),
            parent_external_id: self.parent_id.clone(),
        }
    }

    /// The session-level metadata: directory, version, title (unless a placeholder) and the
    /// session's own creation and update times.
    fn meta(&self) -> SessionMeta {
        SessionMeta {
            project_dir: self.directory.clone().filter(|d| !d.is_empty()),
            title: self
                .title
                .as_deref()
                .map(|t| title_text(t, 80))
                .filter(|t| !t.is_empty() && !is_default_title(t)),
            agent_version: self.version.clone().filter(|v| !v.is_empty()),
            started_at: self.time_created,
            updated_at: self.time_updated,
            ..SessionMeta::default()
        }
    }
}

/// A message row/file (`info` = `data` of the `message` table, a `storage/message` file, or
/// export `messages[].info`) with its parts, in order, turned into a [`Message`].
///
/// Roles: `user` → [`Role::User`], `assistant` → [`Role::Assistant`]; an assistant message with
/// `summary: true` (the compaction summary) gets [`Kind::Summary`]. Each part is one of
/// [`part_into`]. `timestamp` = `info.time.created`, else `fallback_ts`; `model` =
/// `info.modelID` (assistant). An assistant `error` (`{name, data:{message}}`) is appended as a
/// text note `[error] <name>: <message>`.
///
/// Stats: the message itself and each part count one line. A message with an unknown role is
/// `skipped_unknown` together with its parts; a message left without content (only step
/// boundaries, a pending tool, …) is `skipped_known` (its parts are counted one by one). Also
/// updates `meta` (model, times, project dir from `path.cwd`, title from the first user prompt's
/// first text part).
fn convert_message(
    id: &str,
    info: &Value,
    parts: Vec<Value>,
    fallback_ts: Option<i64>,
    stats: &mut ParseStats,
    meta: &mut SessionMeta,
) -> Option<Message> {
    stats.lines += 1 + parts.len() as u64;
    if id.is_empty() || !info.is_object() {
        stats.malformed += 1 + parts.len() as u64;
        return None;
    }
    let role = match str_field(info, "role") {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        _ => {
            stats.skipped_unknown += 1 + parts.len() as u64;
            return None;
        }
    };
    let ts = info
        .pointer("/time/created")
        .and_then(as_ms)
        .or(fallback_ts);
    let mut out_parts = Vec::new();
    for p in parts {
        part_into(p, &mut out_parts, stats);
    }
    if role == Role::Assistant
        && let Some(err) = info.get("error").filter(|e| e.is_object())
    {
        let name = str_field(err, "name").unwrap_or("error");
        let msg = err
            .pointer("/data/message")
            .and_then(Value::as_str)
            .unwrap_or("");
        let text = if msg.is_empty() {
            format!("[error] {name}")
        } else {
            format!("[error] {name}: {msg}")
        };
        out_parts.push(Part::Text { text });
    }
    let model = if role == Role::Assistant {
        str_field(info, "modelID").map(str::to_string)
    } else {
        None
    };
    if model.is_some() {
        meta.model.clone_from(&model);
    } else if let Some(m) = info.pointer("/model/modelID").and_then(Value::as_str)
        && !m.is_empty()
    {
        meta.model = Some(m.to_string());
    }
    if meta.project_dir.is_none()
        && let Some(cwd) = info.pointer("/path/cwd").and_then(Value::as_str)
        && !cwd.is_empty()
    {
        meta.project_dir = Some(cwd.to_string());
    }
    if out_parts.is_empty() {
        stats.skipped_known += 1;
        return None;
    }
    note_time(meta, ts);
    if let Some(done) = info.pointer("/time/completed").and_then(as_ms) {
        note_time(meta, Some(done));
    }
    let kind = if role == Role::Assistant && info.get("summary") == Some(&Value::Bool(true)) {
        Kind::Summary
    } else {
        Message::infer_kind(&out_parts)
    };
    let msg = Message {
        id: id.to_string(),
        role,
        kind,
        parts: out_parts,
        timestamp: ts,
        model,
    };
    if role == Role::User && meta.title.is_none() {
        meta.title = prompt_title(&msg.parts);
    }
    Some(msg)
}

/// A title from a user message: its first text part that is not a file note, whitespace
/// collapsed, at most 80 characters.
fn prompt_title(parts: &[Part]) -> Option<String> {
    parts.iter().find_map(|p| match p {
        Part::Text { text } if !text.starts_with("[file: ") => {
            Some(title_text(text, 80)).filter(|t| !t.is_empty())
        }
        _ => None,
    })
}

/// One 1.x part (`part.data`, a `storage/part` file, or export `parts[]`) into `parts`:
///
/// - `text` → [`Part::Text`] (trimmed; empty dropped); `synthetic` or `ignored` text (context
///   OpenCode injected, e.g. the content of an attached file) is skipped (known);
/// - `reasoning` → [`Part::Thinking`] (trimmed; empty dropped);
/// - `tool` → [`Part::ToolCall`]: `id` = `callID` (else the part id), `name` = `tool`, `input` =
///   `state.input`, `output` = `state.output` when `state.status` is `completed`, `state.error`
///   with `is_error` when it is `error`, none while `pending`/`running`; `exit_code` =
///   `state.metadata.exit` (the bash tool), and a non-zero one sets `is_error`;
/// - `file` → a text note `[file: <filename> (<mime>)]` (never the content or a `data:` URL);
/// - [`SKIPPED_PART_TYPES`] → `skipped_known`; other types → `skipped_unknown`; not an object or
///   no `type` → `malformed`.
fn part_into(p: Value, parts: &mut Vec<Part>, stats: &mut ParseStats) {
    let Value::Object(mut p) = p else {
        stats.malformed += 1;
        return;
    };
    let Some(ty) = p.get("type").and_then(Value::as_str).map(str::to_string) else {
        stats.malformed += 1;
        return;
    };
    match ty.as_str() {
        "text" => {
            let flagged = |k: &str| p.get(k) == Some(&Value::Bool(true));
            if flagged("synthetic") || flagged("ignored") {
                stats.skipped_known += 1;
                return;
            }
            match take_string(p.get_mut("text")).map(trim_owned) {
                Some(text) if !text.is_empty() => parts.push(Part::Text { text }),
                _ => stats.skipped_known += 1,
            }
        }
        "reasoning" => match take_string(p.get_mut("text")).map(trim_owned) {
            Some(text) if !text.is_empty() => parts.push(Part::Thinking { text }),
            _ => stats.skipped_known += 1,
        },
        "tool" => {
            let id = take_string(p.get_mut("callID"))
                .or_else(|| take_string(p.get_mut("id")))
                .unwrap_or_default();
            let name = take_string(p.get_mut("tool")).unwrap_or_default();
            if id.is_empty() || name.is_empty() {
                stats.malformed += 1;
                return;
            }
            let state = p.remove("state").unwrap_or(Value::Null);
            parts.push(Part::ToolCall(tool_call(id, name, state)));
        }
        "file" => {
            let p = Value::Object(p);
            let name = str_field(&p, "filename")
                .or_else(|| p.get("source").and_then(|s| str_field(s, "path")));
            parts.push(Part::Text {
                text: file_note(name, str_field(&p, "url"), str_field(&p, "mime")),
            });
        }
        t if SKIPPED_PART_TYPES.contains(&t) => stats.skipped_known += 1,
        _ => stats.skipped_unknown += 1,
    }
}

/// A tool call from OpenCode's tool `state` (1.x `{status, input, output, error, …}`; 2.x
/// `{status, input, content:[{type:"text",text}|{type:"file",…}], error:{type,message}}`).
fn tool_call(id: String, name: String, mut state: Value) -> ToolCall {
    let status = str_field(&state, "status").unwrap_or("").to_string();
    let input = match state.get_mut("input").map(Value::take) {
        Some(v @ Value::Object(_)) => v,
        // 2.x `pending` keeps the raw, still-streaming input as a string.
        _ => Value::Null,
    };
    // The bash tool's own exit code (`state.metadata.exit`, upstream `tool/bash.ts`): a
    // command that exits non-zero still completes.
    let exit_code = state
        .get("metadata")
        .and_then(|m| m.get("exit"))
        .and_then(Value::as_i64);
    let (output, is_error) = match status.as_str() {
        "completed" => (
            tool_text(&state, "output"),
            exit_code.is_some_and(|c| c != 0),
        ),
        "error" => {
            let err = match state.get("error") {
                Some(Value::String(s)) => Some(s.clone()),
                Some(e @ Value::Object(_)) => str_field(e, "message").map(str::to_string),
                _ => None,
            };
            (
                err.or_else(|| tool_text(&state, "output"))
                    .or(Some(String::new())),
                true,
            )
        }
        _ => (None, false),
    };
    ToolCall {
        tool: opencode_tool_name(&name),
        id,
        name,
        input,
        output,
        is_error,
        exit_code,
    }
}

/// A tool's output text: `state.<key>` when it is a string, else 2.x `state.content` (text items
/// joined by `\n`, files as `[file: name (mime)]`).
fn tool_text(state: &Value, key: &str) -> Option<String> {
    if let Some(s) = state.get(key).and_then(Value::as_str) {
        return Some(s.to_string());
    }
    let items = state.get("content")?.as_array()?;
    let texts: Vec<String> = items
        .iter()
        .filter_map(|c| match str_field(c, "type") {
            Some("text") => str_field(c, "text").map(str::to_string),
            Some("file") => Some(file_note(
                str_field(c, "name"),
                str_field(c, "uri"),
                str_field(c, "mime"),
            )),
            _ => None,
        })
        .collect();
    Some(texts.join("\n"))
}

/// OpenCode tool names not in the common vocabulary of [`normalize_tool_name`]: `patch` /
/// `apply_patch` edit files, `list` lists a folder, `todoread` reads the todo list,
/// `codesearch` searches code. Everything else goes through [`normalize_tool_name`] (`bash`,
/// `read`, `write`, `edit`, `multiedit`, `glob`, `grep`, `webfetch`, `websearch`, `task`,
/// `todowrite`).
fn opencode_tool_name(name: &str) -> String {
    match name.trim().to_ascii_lowercase().as_str() {
        "patch" | "apply_patch" => "edit".to_string(),
        "list" => "list".to_string(),
        "todoread" => "todo".to_string(),
        "codesearch" => "search".to_string(),
        _ => normalize_tool_name(name),
    }
}

/// `[file: <name> (<mime>)]`: the name is the file name, else the last segment of a non-`data:`
/// URL, else `file`.
fn file_note(name: Option<&str>, url: Option<&str>, mime: Option<&str>) -> String {
    let name = name
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .or_else(|| {
            url.filter(|u| !u.starts_with("data:"))
                .and_then(|u| u.trim_end_matches('/').rsplit('/').next())
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "file".to_string());
    match mime.filter(|m| !m.is_empty()) {
        Some(m) => format!("[file: {name} ({m})]"),
        None => format!("[file: {name}]"),
    }
}

// ---------------------------------------------------------------------------------------------
// `opencode export` JSON (`docs/agents/opencode.md#opencode-export`)
// ---------------------------------------------------------------------------------------------

/// Reader for `opencode export <sessionID>` output (also the REST `GET /session/:id` +
/// `/session/:id/message` pair), `{info:{id, parentID?, directory, title, version, time:{created,
/// updated}, …}, messages:[{info:{id, role, time, modelID?, …}, parts:[{id, type, …}]}]}`;
/// implements [`DocReader`].
///
/// Every message becomes a [`Record::Message`] (see `convert_message` for roles, parts and
/// stats: each message and each part counts one line), in the document's order. `meta` gets
/// `project_dir` (`info.directory`), `agent_version` (`info.version`), `title` (`info.title`
/// unless it is OpenCode's `New session - …` placeholder, else the first user prompt), `model`
/// (the last assistant `modelID`) and the earliest/latest of the session and message times.
/// A document that is not a JSON object with a `messages` array counts one malformed line.
#[derive(Debug, Default)]
pub struct ExportReader;

impl ExportReader {
    pub fn new() -> Self {
        Self
    }
}

impl DocReader for ExportReader {
    fn read(&mut self, bytes: &[u8], out: &mut Batch) {
        let _ = read_export_into(bytes, out);
    }
}

/// Read an `opencode export` document (see [`ExportReader`]); also returns the session it
/// holds (`info.id`, `info.parentID`), when it has an id.
pub fn read_export(bytes: &[u8]) -> (Option<SessionRef>, Batch) {
    let mut out = Batch::default();
    let sref = read_export_into(bytes, &mut out);
    (sref, out)
}

fn read_export_into(bytes: &[u8], out: &mut Batch) -> Option<SessionRef> {
    let Some(Value::Object(mut doc)) = parse_doc(bytes) else {
        out.stats.lines += 1;
        out.stats.malformed += 1;
        return None;
    };
    let info = doc.remove("info").unwrap_or(Value::Null);
    let session = SessionInfo::from_json(&info);
    let Some(Value::Array(messages)) = doc.remove("messages") else {
        out.stats.lines += 1;
        out.stats.malformed += 1;
        return None;
    };
    let mut meta = session.meta();
    for m in messages {
        let Value::Object(mut m) = m else {
            out.stats.lines += 1;
            out.stats.malformed += 1;
            continue;
        };
        let info = m.remove("info").unwrap_or(Value::Null);
        let parts = match m.remove("parts") {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        };
        let id = str_field(&info, "id").unwrap_or_default().to_string();
        if let Some(msg) = convert_message(&id, &info, parts, None, &mut out.stats, &mut meta) {
            out.records.push(Record::Message(msg));
        }
    }
    out.meta.absorb(meta);
    (!session.id.is_empty()).then(|| session.session_ref())
}

// ---------------------------------------------------------------------------------------------
// Legacy JSON storage (`docs/agents/opencode.md#legacy-json-storage`; upstream
// storage/json-migration.ts)
// ---------------------------------------------------------------------------------------------

/// One session read from the legacy JSON tree.
#[derive(Debug, Clone, PartialEq)]
pub struct StorageSession {
    pub session: SessionRef,
    /// The whole session: messages in order, meta, stats (each message file and each part file
    /// counts one line; an unreadable or non-JSON file is `malformed`).
    pub batch: Batch,
}

/// Read one session of the legacy JSON storage (OpenCode before 1.2), given its session file
/// `<storage>/session/<projectID>/<sessionID>.json`. The messages are
/// `<storage>/message/<sessionID>/*.json` (ordered by `time.created`, then id) and their parts
/// `<storage>/part/<messageID>/*.json` (ordered by id, which OpenCode makes ascending in time).
/// Ids come from the file names, as OpenCode's own migration does. Conversion as for
/// [`ExportReader`]. A session without a message folder has no messages.
///
/// Errors: the session file cannot be read or is not a JSON object, or the path is not inside a
/// `storage/session/<projectID>/` folder.
pub fn read_storage_session(session_json: &Path) -> Result<StorageSession, crate::Error> {
    let storage = session_json
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .filter(|_| source_kind(session_json) == SourceKind::StorageSession)
        .ok_or_else(|| crate::Error::NotStorageSession(session_json.to_path_buf()))?;
    let info = read_json_file(session_json)?;
    let mut session = SessionInfo::from_json(&info);
    if let Some(stem) = session_json.file_stem().and_then(|s| s.to_str()) {
        session.id = stem.to_string();
    }
    let mut batch = Batch::default();
    let mut meta = session.meta();
    let mut messages: Vec<(Option<i64>, String, Value)> = Vec::new();
    for file in json_files(&storage.join("message").join(&session.id)) {
        let id = stem_of(&file);
        match read_json_file(&file) {
            Ok(v) => messages.push((v.pointer("/time/created").and_then(as_ms), id, v)),
            Err(_) => {
                batch.stats.lines += 1;
                batch.stats.malformed += 1;
            }
        }
    }
    messages.sort_by(|a, b| (a.0.unwrap_or(i64::MAX), &a.1).cmp(&(b.0.unwrap_or(i64::MAX), &b.1)));
    for (_, id, info) in messages {
        let mut parts = Vec::new();
        for file in json_files(&storage.join("part").join(&id)) {
            match read_json_file(&file) {
                Ok(v) => parts.push(v),
                Err(_) => parts.push(Value::Null),
            }
        }
        if let Some(msg) = convert_message(&id, &info, parts, None, &mut batch.stats, &mut meta) {
            batch.records.push(Record::Message(msg));
        }
    }
    batch.meta.absorb(meta);
    Ok(StorageSession {
        session: session.session_ref(),
        batch,
    })
}

/// [`DocReader`] for a legacy session file (see [`read_storage_session`]). The bytes handed to
/// [`DocReader::read`] are those of the session file; the messages are read from the sibling
/// `message/` and `part/` folders of the storage tree. A session that cannot be read counts one
/// malformed line.
#[derive(Debug, Clone)]
pub struct StorageReader {
    session_json: PathBuf,
}

impl StorageReader {
    /// A reader for `<storage>/session/<projectID>/<sessionID>.json`.
    pub fn new(session_json: &Path) -> Self {
        Self {
            session_json: session_json.to_path_buf(),
        }
    }
}

impl DocReader for StorageReader {
    fn read(&mut self, _bytes: &[u8], out: &mut Batch) {
        match read_storage_session(&self.session_json) {
            Ok(s) => {
                out.meta.absorb(s.batch.meta);
                out.records.extend(s.batch.records);
                out.stats.add(s.batch.stats);
            }
            Err(_) => {
                out.stats.lines += 1;
                out.stats.malformed += 1;
            }
        }
    }
}

/// The `*.json` files of a folder, sorted by name (empty when the folder is missing).
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn stem_of(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// The SQLite database (`docs/agents/opencode.md#the-database`; upstream session/session.sql.ts,
// storage/db.ts)
// ---------------------------------------------------------------------------------------------

/// How far back (ms) before the caller's watermark [`read_db`] looks again. OpenCode stamps
/// `time_updated` with `Date.now()` *before* its write waits for the database lock (up to its
/// 5 s `busy_timeout` when several OpenCode processes share the database), so a row may commit
/// with a time older than rows already read. Re-reading this window costs little and is
/// idempotent (messages are emitted as [`Record::Replace`]).
pub const DB_REREAD_OVERLAP_MS: i64 = 10_000;

/// How long a read waits for a lock (WAL readers rarely wait; only during WAL recovery).
const DB_BUSY_TIMEOUT: Duration = Duration::from_millis(1000);

/// The id prefix OpenCode 2.x gives the `session_message` copies it makes of 1.x messages
/// (`message-backfill.ts`). Those copies are skipped while the 1.x `message` table still holds
/// the originals, so a migrated message is not stored twice under two ids.
const BACKFILL_PREFIX: &str = "evt_legacy_backfill_";

/// One session touched by a database read.
#[derive(Debug, Clone, PartialEq)]
pub struct DbSession {
    pub session: SessionRef,
    /// Session metadata (directory, title, version, model, times).
    pub meta: SessionMeta,
    /// The messages changed since the watermark, each whole, as [`Record::Replace`] (insert, or
    /// replace the stored message with the same id), in conversation order. Empty when only
    /// the session row changed (e.g. its title).
    pub records: Vec<Record>,
    /// Each message row and each part row read counts one line.
    pub stats: ParseStats,
}

/// The result of a database read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DbBatch {
    /// Sessions with changes, parents before their sub-agent sessions, then by creation time.
    pub sessions: Vec<DbSession>,
    /// The largest `time_updated` (ms since the epoch) seen in this read, or the `since` given
    /// when nothing changed: pass it as `since` to the next read of the same scope.
    pub watermark: i64,
}

impl DbBatch {
    /// All stats of the read, added up.
    pub fn stats(&self) -> ParseStats {
        let mut s = ParseStats::default();
        for d in &self.sessions {
            s.add(d.stats);
        }
        s
    }
}

/// Read every change in an OpenCode database since `since_time_updated` (ms since the epoch;
/// `0` or less reads everything): the messages whose row or any of whose parts has a
/// `time_updated` later than `since_time_updated - DB_REREAD_OVERLAP_MS`, each **whole** (all its
/// parts), plus sessions whose own row changed. 1.x tables (`session`, `message`, `part`) and
/// 2.x tables (`session_v2`, `session_message`) are both read when present.
///
/// The database is opened with `SQLITE_OPEN_READ_ONLY` (never written, never checkpointed,
/// checkpoint-on-close disabled), read in one transaction (a consistent snapshot of the live
/// WAL database), and closed. Deleted messages (OpenCode's undo/revert) are not reported.
/// A read from `0` holds the whole database in memory: for an import, prefer
/// [`db_session_ids`] + [`read_db_session`].
///
/// Conversion of each message and part: see [`ExportReader`]; 2.x `session_message` rows: `user`
/// (`text`, `files` as notes), `assistant` (`content` of `text`/`reasoning`/`tool`), `compaction`
/// (its `summary`, [`Kind::Summary`]), `shell` (a user-run command as a `shell` tool call);
/// `system`, `synthetic`, `agent-switched`, `model-switched`, `location-switched`, `idle` are
/// skipped (known).
///
/// Errors: the file cannot be opened as a SQLite database, or has neither a `message` nor a
/// `session_message` table, or a query fails.
pub fn read_db(db: &Path, since_time_updated: i64) -> Result<DbBatch, crate::Error> {
    read_db_scoped(db, None, since_time_updated)
}

/// [`read_db`] restricted to one session (and using OpenCode's `session_id` indexes, so it stays
/// fast on a large database): what a hook for that session needs. The watermark is then that
/// session's own: keep one per (database, session), separate from the global one of [`read_db`].
pub fn read_db_session(
    db: &Path,
    session_id: &str,
    since_time_updated: i64,
) -> Result<DbBatch, crate::Error> {
    read_db_scoped(db, Some(session_id), since_time_updated)
}

/// The ids of every session in an OpenCode database (1.x `session` and 2.x `session_v2`),
/// sorted, for an import session by session.
///
/// Errors: as [`read_db`].
pub fn db_session_ids(db: &Path) -> Result<Vec<String>, crate::Error> {
    let conn = open_db(db)?;
    let tables = Tables::of(&conn)?;
    let mut ids = BTreeSet::new();
    for (present, table) in [
        (tables.session, "session"),
        (tables.session_v2, "session_v2"),
    ] {
        if present {
            let mut stmt = conn
                .prepare(&format!("SELECT id FROM \"{table}\""))
                .map_err(crate::Error::from)?;
            let rows = stmt
                .query_map([], |r| Ok(text_of(r.get_ref(0)?)))
                .map_err(crate::Error::from)?;
            ids.extend(rows.flatten().flatten());
        }
    }
    Ok(ids.into_iter().collect())
}

/// Open read-only, without creating the file, and make sure closing never checkpoints.
fn open_db(db: &Path) -> Result<Connection, crate::Error> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn =
        Connection::open_with_flags(db, flags).map_err(|source| crate::Error::OpenDatabase {
            path: db.to_path_buf(),
            source: DbError(source),
        })?;
    let _ = conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    );
    conn.busy_timeout(DB_BUSY_TIMEOUT)
        .map_err(crate::Error::from)?;
    Ok(conn)
}

/// Which OpenCode tables a database has.
#[derive(Debug, Default, Clone, Copy)]
struct Tables {
    session: bool,
    message: bool,
    part: bool,
    session_v2: bool,
    session_message: bool,
}

impl Tables {
    fn of(conn: &Connection) -> Result<Tables, crate::Error> {
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .map_err(crate::Error::from)?;
        let names: Vec<String> = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(crate::Error::from)?
            .flatten()
            .collect();
        let has = |n: &str| names.iter().any(|x| x == n);
        let t = Tables {
            session: has("session"),
            message: has("message"),
            part: has("part"),
            session_v2: has("session_v2"),
            session_message: has("session_message"),
        };
        if !t.message && !t.session_message {
            return Err(crate::Error::NotOpencodeDatabase);
        }
        Ok(t)
    }
}

/// Builder for one session of a database read.
#[derive(Default)]
struct Acc {
    info: Option<SessionInfo>,
    /// `(timestamp, source order, message)`.
    messages: Vec<(i64, usize, Message)>,
    meta: SessionMeta,
    stats: ParseStats,
}

fn read_db_scoped(db: &Path, session: Option<&str>, since: i64) -> Result<DbBatch, crate::Error> {
    let mut conn = open_db(db)?;
    let tables = Tables::of(&conn)?;
    // One read transaction: every query sees the same snapshot of the WAL database.
    let tx = conn.transaction().map_err(crate::Error::from)?;
    let after = if since <= 0 {
        i64::MIN
    } else {
        since.saturating_sub(DB_REREAD_OVERLAP_MS)
    };
    // ?1 = the time after which rows count as changed; ?2 = the session, when scoped.
    let mut params = vec![rusqlite::types::Value::Integer(after)];
    if let Some(s) = session {
        params.push(rusqlite::types::Value::Text(s.to_string()));
    }
    let mut watermark = since;
    let mut accs: BTreeMap<String, Acc> = BTreeMap::new();
    let mut order = 0usize;

    // Sessions whose own row changed (title, times), 1.x then 2.x.
    for (present, table) in [
        (tables.session, "session"),
        (tables.session_v2, "session_v2"),
    ] {
        if !present {
            continue;
        }
        let sql = match session {
            Some(_) => format!(
                "SELECT id, time_updated FROM \"{table}\" WHERE id = ?2 AND time_updated > ?1"
            ),
            None => format!("SELECT id, time_updated FROM \"{table}\" WHERE time_updated > ?1"),
        };
        let rows = id_time_rows(&tx, &sql, &params)?;
        for (id, t) in rows {
            if let Some(id) = id {
                accs.entry(id).or_default();
            }
            watermark = watermark.max(t.unwrap_or(i64::MIN));
        }
    }

    // 1.x: changed messages (their row, or any of their parts, updated after the watermark).
    if tables.message {
        let mut changed: BTreeSet<String> = BTreeSet::new();
        let scope = if session.is_some() {
            " AND session_id = ?2"
        } else {
            ""
        };
        let mut queries = vec![format!(
            "SELECT id, time_updated FROM message WHERE time_updated > ?1{scope}"
        )];
        if tables.part {
            queries.push(format!(
                "SELECT message_id, time_updated FROM part WHERE time_updated > ?1{scope}"
            ));
        }
        for sql in queries {
            let rows = id_time_rows(&tx, &sql, &params)?;
            for (id, t) in rows {
                if let Some(id) = id {
                    changed.insert(id);
                }
                watermark = watermark.max(t.unwrap_or(i64::MIN));
            }
        }
        let mut rows: Vec<(String, String, Option<i64>, Option<String>)> = Vec::new();
        {
            let mut stmt = tx
                .prepare_cached("SELECT session_id, time_created, data FROM message WHERE id = ?1")
                .map_err(crate::Error::from)?;
            for id in &changed {
                let row = stmt
                    .query_row([id], |r| {
                        Ok((
                            text_of(r.get_ref(0)?),
                            int_of(r.get_ref(1)?),
                            text_of(r.get_ref(2)?),
                        ))
                    })
                    .optional()
                    .map_err(crate::Error::from)?;
                if let Some((Some(sid), created, data)) = row {
                    rows.push((id.clone(), sid, created, data));
                }
            }
        }
        rows.sort_by(|a, b| (&a.1, a.2, &a.0).cmp(&(&b.1, b.2, &b.0)));
        let mut parts_stmt = if tables.part {
            Some(
                tx.prepare_cached("SELECT data FROM part WHERE message_id = ?1 ORDER BY id")
                    .map_err(crate::Error::from)?,
            )
        } else {
            None
        };
        for (id, sid, created, data) in rows {
            let info = data
                .as_deref()
                .and_then(|d| serde_json::from_str::<Value>(d).ok())
                .unwrap_or(Value::Null);
            let mut parts = Vec::new();
            if let Some(stmt) = parts_stmt.as_mut() {
                let found: Vec<Option<String>> = stmt
                    .query_map([&id], |r| Ok(text_of(r.get_ref(0)?)))
                    .map_err(crate::Error::from)?
                    .flatten()
                    .collect();
                for d in found {
                    parts.push(
                        d.as_deref()
                            .and_then(|d| serde_json::from_str::<Value>(d).ok())
                            .unwrap_or(Value::Null),
                    );
                }
            }
            let acc = accs.entry(sid).or_default();
            if let Some(msg) =
                convert_message(&id, &info, parts, created, &mut acc.stats, &mut acc.meta)
            {
                acc.messages
                    .push((msg.timestamp.unwrap_or(i64::MAX), order, msg));
                order += 1;
            }
        }
    }

    // 2.x: changed session_message rows (content inline, one row per message).
    if tables.session_message {
        let scope = if session.is_some() {
            " AND session_id = ?2"
        } else {
            ""
        };
        let sql = format!(
            "SELECT id, session_id, type, time_created, time_updated, data FROM session_message \
             WHERE time_updated > ?1{scope} ORDER BY session_id, seq, id"
        );
        let has_seq = table_columns(&tx, "session_message")?
            .iter()
            .any(|c| c == "seq");
        let sql = if has_seq {
            sql
        } else {
            sql.replace(" seq,", " time_created,")
        };
        let mut stmt = tx.prepare(&sql).map_err(crate::Error::from)?;
        type Row2 = (
            Option<String>,
            Option<String>,
            Option<String>,
            Option<i64>,
            Option<i64>,
            Option<String>,
        );
        let map = |r: &rusqlite::Row<'_>| -> rusqlite::Result<Row2> {
            Ok((
                text_of(r.get_ref(0)?),
                text_of(r.get_ref(1)?),
                text_of(r.get_ref(2)?),
                int_of(r.get_ref(3)?),
                int_of(r.get_ref(4)?),
                text_of(r.get_ref(5)?),
            ))
        };
        let rows: Vec<Row2> = stmt
            .query_map(rusqlite::params_from_iter(params.iter()), map)
            .map_err(crate::Error::from)?
            .flatten()
            .collect();
        for (id, sid, ty, created, updated, data) in rows {
            watermark = watermark.max(updated.unwrap_or(i64::MIN));
            let Some(sid) = sid else { continue };
            let acc = accs.entry(sid).or_default();
            let id = id.unwrap_or_default();
            if tables.message && id.starts_with(BACKFILL_PREFIX) {
                acc.stats.lines += 1;
                acc.stats.skipped_known += 1;
                continue;
            }
            let data = data
                .as_deref()
                .and_then(|d| serde_json::from_str::<Value>(d).ok())
                .unwrap_or(Value::Null);
            if let Some(msg) = convert_v2(
                &id,
                ty.as_deref().unwrap_or(""),
                data,
                created,
                &mut acc.stats,
                &mut acc.meta,
            ) {
                acc.messages
                    .push((msg.timestamp.unwrap_or(i64::MAX), order, msg));
                order += 1;
            }
        }
    }

    // Session rows for every session touched (2.x row preferred, 1.x as fallback).
    for (id, acc) in accs.iter_mut() {
        for (present, table) in [
            (tables.session_v2, "session_v2"),
            (tables.session, "session"),
        ] {
            if present && acc.info.is_none() {
                acc.info = session_row(&tx, table, id)?;
            }
        }
    }
    drop(tx);

    let mut sessions: Vec<DbSession> = accs
        .into_iter()
        .map(|(id, acc)| {
            let info = acc.info.unwrap_or_else(|| SessionInfo {
                id: id.clone(),
                ..SessionInfo::default()
            });
            let mut meta = info.meta();
            // The title from the session row wins over a prompt-derived one.
            let mut from_messages = acc.meta;
            if meta.title.is_some() {
                from_messages.title = None;
            }
            meta.absorb(from_messages);
            let mut messages = acc.messages;
            messages.sort_by_key(|(ts, order, _)| (*ts, *order));
            DbSession {
                session: info.session_ref(),
                meta,
                records: messages
                    .into_iter()
                    .map(|(_, _, m)| Record::Replace(m))
                    .collect(),
                stats: acc.stats,
            }
        })
        .collect();
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

/// An `(id, time_updated)` row; either may be NULL or of an unexpected type in a damaged
/// database.
type IdTime = (Option<String>, Option<i64>);

/// `(id, time_updated)` rows of a query taking `params` (`?1` time, `?2` session).
fn id_time_rows(
    conn: &Connection,
    sql: &str,
    params: &[rusqlite::types::Value],
) -> Result<Vec<IdTime>, crate::Error> {
    let mut stmt = conn.prepare(sql).map_err(crate::Error::from)?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(params.iter()), |r| {
            Ok((text_of(r.get_ref(0)?), int_of(r.get_ref(1)?)))
        })
        .map_err(crate::Error::from)?
        .flatten()
        .collect();
    Ok(rows)
}

fn table_columns(conn: &Connection, table: &str) -> Result<Vec<String>, crate::Error> {
    let mut stmt = conn
        .prepare(&format!("PRAGMA table_info(\"{table}\")"))
        .map_err(crate::Error::from)?;
    let cols = stmt
        .query_map([], |r| r.get::<_, String>(1))
        .map_err(crate::Error::from)?
        .flatten()
        .collect();
    Ok(cols)
}

/// One session row, reading only the columns this table has (forks and versions add and drop
/// columns).
fn session_row(
    conn: &Connection,
    table: &str,
    id: &str,
) -> Result<Option<SessionInfo>, crate::Error> {
    const WANTED: [&str; 6] = [
        "parent_id",
        "directory",
        "title",
        "version",
        "time_created",
        "time_updated",
    ];
    let cols = table_columns(conn, table)?;
    let select: Vec<String> = WANTED
        .iter()
        .map(|c| {
            if cols.iter().any(|x| x == c) {
                format!("\"{c}\"")
            } else {
                "NULL".to_string()
            }
        })
        .collect();
    let sql = format!(
        "SELECT {} FROM \"{table}\" WHERE id = ?1",
        select.join(", ")
    );
    conn.query_row(&sql, [id], |r| {
        Ok(SessionInfo {
            id: id.to_string(),
            parent_id: text_of(r.get_ref(0)?).filter(|s| !s.is_empty()),
            directory: text_of(r.get_ref(1)?),
            title: text_of(r.get_ref(2)?),
            version: text_of(r.get_ref(3)?),
            time_created: int_of(r.get_ref(4)?),
            time_updated: int_of(r.get_ref(5)?),
        })
    })
    .optional()
    .map_err(crate::Error::from)
}

/// One OpenCode 2.x `session_message` row (`type` column + `data` JSON, ids stripped; upstream
/// `packages/core/src/session/message.ts`) into a [`Message`]. Counts one line.
fn convert_v2(
    id: &str,
    ty: &str,
    data: Value,
    created: Option<i64>,
    stats: &mut ParseStats,
    meta: &mut SessionMeta,
) -> Option<Message> {
    stats.lines += 1;
    if id.is_empty() || !data.is_object() {
        stats.malformed += 1;
        return None;
    }
    let ts = data.pointer("/time/created").and_then(as_ms).or(created);
    let mut parts = Vec::new();
    let mut model = None;
    let (role, kind) = match ty {
        "user" => {
            if let Some(t) = str_field(&data, "text").map(str::trim)
                && !t.is_empty()
            {
                parts.push(Part::Text {
                    text: t.to_string(),
                });
            }
            for f in data
                .get("files")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                parts.push(Part::Text {
                    text: file_note(
                        str_field(f, "name"),
                        str_field(f, "uri"),
                        str_field(f, "mime"),
                    ),
                });
            }
            (Role::User, None)
        }
        "assistant" => {
            model = data
                .pointer("/model/id")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .map(str::to_string);
            let content = match data.get("content") {
                Some(Value::Array(a)) => a.clone(),
                _ => Vec::new(),
            };
            for mut c in content {
                match str_field(&c, "type") {
                    Some("text") => {
                        let flagged = |k: &str| c.get(k) == Some(&Value::Bool(true));
                        if flagged("ignored") || flagged("synthetic") {
                            continue;
                        }
                        if let Some(t) = str_field(&c, "text").map(str::trim)
                            && !t.is_empty()
                        {
                            parts.push(Part::Text {
                                text: t.to_string(),
                            });
                        }
                    }
                    Some("reasoning") => {
                        if let Some(t) = str_field(&c, "text").map(str::trim)
                            && !t.is_empty()
                        {
                            parts.push(Part::Thinking {
                                text: t.to_string(),
                            });
                        }
                    }
                    Some("tool") => {
                        let call_id = str_field(&c, "callID")
                            .or_else(|| str_field(&c, "id"))
                            .unwrap_or("")
                            .to_string();
                        let name = str_field(&c, "name").unwrap_or("").to_string();
                        if !call_id.is_empty() && !name.is_empty() {
                            let state = c.get_mut("state").map(Value::take).unwrap_or(Value::Null);
                            parts.push(Part::ToolCall(tool_call(call_id, name, state)));
                        }
                    }
                    _ => {}
                }
            }
            if let Some(err) = data.get("error").filter(|e| e.is_object()) {
                let t = str_field(err, "type").unwrap_or("error");
                let text = match str_field(err, "message") {
                    Some(m) => format!("[error] {t}: {m}"),
                    None => format!("[error] {t}"),
                };
                parts.push(Part::Text { text });
            }
            (Role::Assistant, None)
        }
        "compaction" => {
            if let Some(s) = str_field(&data, "summary").map(str::trim)
                && !s.is_empty()
            {
                parts.push(Part::Text {
                    text: s.to_string(),
                });
            }
            (Role::Assistant, Some(Kind::Summary))
        }
        "shell" => {
            let call_id = str_field(&data, "callID").unwrap_or(id).to_string();
            let command = str_field(&data, "command").unwrap_or("").to_string();
            let output = match data.get("output") {
                Some(Value::String(s)) => Some(s.clone()),
                Some(o @ Value::Object(_)) => str_field(o, "output").map(str::to_string),
                _ => None,
            };
            parts.push(Part::ToolCall(ToolCall {
                id: call_id,
                name: "shell".to_string(),
                tool: "shell".to_string(),
                input: json!({ "command": command }),
                output,
                is_error: false,
                exit_code: None,
            }));
            (Role::User, Some(Kind::ToolCall))
        }
        "system" | "synthetic" | "agent-switched" | "model-switched" | "location-switched"
        | "idle" => {
            stats.skipped_known += 1;
            return None;
        }
        _ => {
            stats.skipped_unknown += 1;
            return None;
        }
    };
    if parts.is_empty() {
        stats.skipped_known += 1;
        return None;
    }
    if model.is_some() {
        meta.model.clone_from(&model);
    }
    note_time(meta, ts);
    let msg = Message {
        id: id.to_string(),
        role,
        kind: kind.unwrap_or_else(|| Message::infer_kind(&parts)),
        parts,
        timestamp: ts,
        model,
    };
    if role == Role::User && msg.kind == Kind::Text && meta.title.is_none() {
        meta.title = prompt_title(&msg.parts);
    }
    Some(msg)
}

fn text_of(v: ValueRef<'_>) -> Option<String> {
    match v {
        ValueRef::Text(t) | ValueRef::Blob(t) => std::str::from_utf8(t).ok().map(str::to_string),
        ValueRef::Integer(i) => Some(i.to_string()),
        _ => None,
    }
}

fn int_of(v: ValueRef<'_>) -> Option<i64> {
    match v {
        ValueRef::Integer(i) => Some(i),
        ValueRef::Real(f) if f.is_finite() => Some(f as i64),
        ValueRef::Text(t) => std::str::from_utf8(t).ok()?.trim().parse().ok(),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Small JSON helpers
// ---------------------------------------------------------------------------------------------

/// A non-empty string field of an object.
fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key)?.as_str().filter(|s| !s.is_empty())
}

/// Milliseconds from a JSON number (integer or float).
fn as_ms(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
}

fn take_string(v: Option<&mut Value>) -> Option<String> {
    match v.map(Value::take) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

fn trim_owned(s: String) -> String {
    let t = s.trim();
    if t.len() == s.len() { s } else { t.to_string() }
}

fn note_time(meta: &mut SessionMeta, ts: Option<i64>) {
    let Some(t) = ts else { return };
    meta.started_at = Some(meta.started_at.map_or(t, |s| s.min(t)));
    meta.updated_at = Some(meta.updated_at.map_or(t, |u| u.max(t)));
}

// ---------------------------------------------------------------------------------------------
// Hooks (the plugin's payload) and context injection
// ---------------------------------------------------------------------------------------------

/// The events the plugin sends as `hook_event_name`.
pub mod events {
    /// A turn finished (OpenCode's `session.idle` bus event): capture.
    pub const IDLE: &str = "session.idle";
    /// Compaction is about to run (`experimental.session.compacting` in 1.x, the `compaction`
    /// session hook in 2.x): capture and build the snapshot; a reply is added to the
    /// compaction prompt's context.
    pub const COMPACTING: &str = "session.compacting";
    /// Compaction finished (`session.compacted`): a reply is injected into the session's
    /// system prompt from then on.
    pub const COMPACTED: &str = "session.compacted";
    /// A new top-level session was created (`session.created` without a parent): a reply is
    /// injected into its system prompt.
    pub const START: &str = "session.start";
}

/// Parse the payload memtrail's OpenCode plugin writes on stdin:
/// `{"hook_event_name": "session.idle"|"session.compacting"|"session.compacted"|"session.start",
/// "session_id": "ses_…", "cwd": "/project", "db_path"?: "/…/opencode.db", "plugin_api"?:
/// "v1"|"v2"}`.
///
/// - `event` ← `hook_event_name` (also accepted: `event`, `type`); empty when absent;
/// - `session_id` ← `session_id` (also `sessionID`);
/// - `transcript_path` ← `db_path` (also `transcript_path`), when given;
/// - `cwd` ← `cwd` (also `directory`), else `$PWD` from `env`;
/// - `source` ← `compact` for `session.compacting`/`session.compacted`, `startup` for
///   `session.start`, else the payload's `source`;
/// - `extra` ← the whole payload.
///
/// Errors (for the hook log): empty, not JSON, or not a JSON object.
pub fn parse_hook_payload(bytes: &[u8], env: &crate::Env) -> Result<HookEvent, crate::Error> {
    let env = |k: &str| env.var_utf8(k);
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(crate::Error::EmptyPayload);
    }
    let payload: Value = serde_json::from_slice(bytes).map_err(crate::Error::PayloadNotJson)?;
    if !payload.is_object() {
        return Err(crate::Error::PayloadNotObject);
    }
    let get = |keys: &[&str]| -> Option<String> {
        keys.iter()
            .find_map(|k| str_field(&payload, k))
            .map(str::to_string)
    };
    let event = get(&["hook_event_name", "event", "type"]).unwrap_or_default();
    let source = match event.as_str() {
        events::COMPACTING | events::COMPACTED => Some("compact".to_string()),
        events::START => Some("startup".to_string()),
        _ => get(&["source"]),
    };
    Ok(HookEvent {
        agent: Agent::Opencode,
        session_id: get(&["session_id", "sessionID"]),
        transcript_path: get(&["db_path", "transcript_path"]),
        cwd: get(&["cwd", "directory"]).or_else(|| env("PWD").filter(|p| !p.is_empty())),
        source,
        agent_transcript_path: None,
        extra: payload,
        event,
    })
}

/// What to ingest for a hook event: see [`transcripts_for_event_in`] with [`data_dir`].
pub fn transcripts_for_event(ev: &HookEvent) -> Vec<PathBuf> {
    transcripts_for_event_in(ev, &data_dir())
}

/// What to ingest for a hook event, given OpenCode's data folder:
///
/// 1. the payload's `db_path` when that file exists;
/// 2. else every database in `data_dir` ([`database_files`]; read the event's session with
///    [`read_db_session`]);
/// 3. else (OpenCode before 1.2) the legacy session file
///    `storage/session/*/<session_id>.json`.
///
/// Nothing that does not exist is returned.
pub fn transcripts_for_event_in(ev: &HookEvent, data_dir: &Path) -> Vec<PathBuf> {
    if let Some(p) = ev.transcript_path.as_deref().map(PathBuf::from)
        && p.is_file()
    {
        return vec![p];
    }
    let dbs = database_files(data_dir);
    if !dbs.is_empty() {
        return dbs;
    }
    let Some(sid) = ev.session_id.as_deref().filter(|s| is_safe_id(s)) else {
        return Vec::new();
    };
    let Ok(projects) = std::fs::read_dir(data_dir.join("storage").join("session")) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = projects
        .flatten()
        .map(|p| p.path().join(format!("{sid}.json")))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    found
}

/// A session id that can be used as a file name (no separators, no `..`).
fn is_safe_id(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// What `memtrail hook opencode` prints to hand `context` to the plugin:
/// `{"additionalContext":"<context>"}` (one line of JSON). The plugin reads it from the hook's
/// stdout (at most 2 s after the event) and adds the text to the session's system prompt through
/// `experimental.chat.system.transform` (1.x) or the `context` session hook (2.x), and to the
/// compaction prompt through `experimental.session.compacting` (1.x) or the `compaction` session
/// hook (2.x). `None` when `context` is blank (print nothing).
pub fn session_start_reply(context: &str) -> Option<String> {
    if context.trim().is_empty() {
        return None;
    }
    Some(json!({ "additionalContext": context }).to_string())
}

// ---------------------------------------------------------------------------------------------
// The plugin (`docs/agents/opencode.md#the-plugin`)
// ---------------------------------------------------------------------------------------------

/// The plugin's file name in [`plugins_dir`].
pub const PLUGIN_FILE_NAME: &str = "memtrail.ts";

/// The plugin source as shipped (`templates/opencode/memtrail.ts`), with [`BIN_PLACEHOLDER`].
pub const PLUGIN_TEMPLATE: &str = include_str!("../../../../templates/opencode/memtrail.ts");

/// The string literal in [`PLUGIN_TEMPLATE`] that [`plugin_source`] replaces with the JSON-quoted
/// absolute path of the memtrail binary.
pub const BIN_PLACEHOLDER: &str = "\"__MEMTRAIL_BIN__\"";

/// A line present in every memtrail plugin, to recognise memtrail's own file (for uninstall and
/// status) without relying on its name.
pub const PLUGIN_MARKER: &str = "memtrail-opencode-plugin";

/// The template's module export, for OpenCode 1.3.4 and later and 2.x: one default export
/// carrying both plugin APIs.
const EXPORT_CURRENT: &str = "export default { id: \"memtrail\", setup, server }";
/// The export for OpenCode before 1.3.4, whose loader calls every export as a plugin function.
const EXPORT_LEGACY: &str = "export const MemtrailPlugin = server";

/// Which module shape the plugin must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginApi {
    /// OpenCode before 1.3.4: every export is called as `fn(input)`, so the only export is the
    /// 1.x plugin function (`export const MemtrailPlugin = server`).
    Legacy,
    /// OpenCode 1.3.4+ and 2.x: `export default { id, setup, server }`. 2.x decodes the default
    /// export as `{ id, setup }` (extra keys ignored) and calls `setup(ctx)`; 1.3.4+ sees the
    /// object's `server` and calls it with the 1.x plugin input. Also used when the version is
    /// unknown.
    Current,
}

impl PluginApi {
    /// The shape for an OpenCode version string as printed by `opencode --version` (`1.2.10`,
    /// `v2.0.25`, `opencode 1.14.3`): [`PluginApi::Legacy`] below 1.3.4, else (and when no
    /// version can be read) [`PluginApi::Current`].
    pub fn for_version(version: Option<&str>) -> PluginApi {
        match version.and_then(parse_version) {
            Some(v) if v < (1, 3, 4) => PluginApi::Legacy,
            _ => PluginApi::Current,
        }
    }
}

/// The first `major.minor.patch` in a string (`"opencode v1.2.10-beta"` → `(1, 2, 10)`).
pub fn parse_version(s: &str) -> Option<(u64, u64, u64)> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_digit()) {
            let rest = &s[i..];
            let mut nums = rest.splitn(4, '.').map(|p| {
                let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
                digits.parse::<u64>().ok()
            });
            if let (Some(Some(a)), Some(Some(b)), Some(Some(c))) =
                (nums.next(), nums.next(), nums.next())
            {
                return Some((a, b, c));
            }
        }
        i += 1;
    }
    None
}

/// The plugin file's content for the memtrail binary at `bin` (absolute), in the module shape
/// `api` needs: [`PLUGIN_TEMPLATE`] with [`BIN_PLACEHOLDER`] replaced by the JSON string of
/// `bin` (so quotes and backslashes are escaped) and, for [`PluginApi::Legacy`], the default
/// export replaced by a single named export.
pub fn plugin_source(bin: &Path, api: PluginApi) -> String {
    let quoted = Value::String(bin.to_string_lossy().into_owned()).to_string();
    let src = PLUGIN_TEMPLATE.replace(BIN_PLACEHOLDER, &quoted);
    match api {
        PluginApi::Current => src,
        PluginApi::Legacy => src.replace(EXPORT_CURRENT, EXPORT_LEGACY),
    }
}

/// True when `text` is a memtrail plugin file (it carries [`PLUGIN_MARKER`]).
pub fn is_memtrail_plugin(text: &str) -> bool {
    text.contains(PLUGIN_MARKER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(parse_version("1.2.10"), Some((1, 2, 10)));
        assert_eq!(parse_version("opencode v2.0.25-beta.1\n"), Some((2, 0, 25)));
        assert_eq!(parse_version("2.0"), None);
        assert_eq!(PluginApi::for_version(Some("1.2.10")), PluginApi::Legacy);
        assert_eq!(PluginApi::for_version(Some("1.3.3")), PluginApi::Legacy);
        assert_eq!(PluginApi::for_version(Some("1.3.4")), PluginApi::Current);
        assert_eq!(PluginApi::for_version(Some("2.0.25")), PluginApi::Current);
        assert_eq!(PluginApi::for_version(None), PluginApi::Current);
    }

    #[test]
    fn tool_names() {
        assert_eq!(opencode_tool_name("bash"), "shell");
        assert_eq!(opencode_tool_name("glob"), "list");
        assert_eq!(opencode_tool_name("patch"), "edit");
        assert_eq!(opencode_tool_name("todoread"), "todo");
        assert_eq!(opencode_tool_name("github_get_issue"), "github_get_issue");
    }

    #[test]
    fn file_notes() {
        assert_eq!(
            file_note(Some("a.ts"), None, Some("text/plain")),
            "[file: a.ts (text/plain)]"
        );
        assert_eq!(
            file_note(None, Some("data:image/png;base64,AAAA"), Some("image/png")),
            "[file: file (image/png)]"
        );
        assert_eq!(
            file_note(None, Some("file:///x/y/z.md"), None),
            "[file: z.md]"
        );
    }
}
pub mod adapter;
pub mod paths;

/// Where the agent lives in the process environment ([`paths::Locations::resolve`]).
fn locations() -> paths::Locations {
    paths::Locations::resolve(&crate::Env::from_process())
}
pub mod registration;

/// An error of OpenCode's own SQLite database (opaque: the SQLite driver stays inside this
/// folder, the only place outside memtrail's store that reads SQLite).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct DbError(#[from] rusqlite::Error);

impl From<rusqlite::Error> for crate::Error {
    fn from(e: rusqlite::Error) -> Self {
        crate::Error::Database(DbError(e))
    }
}
