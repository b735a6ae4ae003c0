//! Cursor (the IDE agent and the `agent` / `cursor-agent` CLI): paths, hook payloads, and the
//! agent-transcript reader.
//!
//! Sources: `docs/agents/cursor.md` (hooks.json, events, payloads, output,
//! transcripts) and `docs/agents/cursor.md#transcript-format` (stop payload, transcript
//! JSONL, `state.vscdb`); upstream third-party probes in `entireio/cli`
//! (`cmd/entire/cli/agent/cursor/{AGENT.md,cursor.go,transcript.go}`,
//! `cmd/entire/cli/textutil/ide_tags.go`), which are the best public description of the format.
//!
//! # Transcript format (`docs/agents/cursor.md#transcript-format`)
//!
//! One conversation is one append-only JSONL file,
//! `<config>/projects/<slug>/agent-transcripts/<conversation id>.jsonl` (CLI, flat) or
//! `…/agent-transcripts/<id>/<id>.jsonl` (IDE, nested), sub-agents in `…/<id>/subagents/*.jsonl`.
//! Lines have no ids, no timestamps and no session id:
//!
//! ```json
//! {"role":"user","message":{"content":[{"type":"text","text":"<timestamp>Tuesday, Aug 18, 2026, 2:37 PM GMT+2</timestamp>\n<user_query>\nfix the login bug\n</user_query>"}]}}
//! {"role":"assistant","message":{"content":[{"type":"text","text":"Checking."},{"type":"tool_use","name":"Shell","input":{"command":"make"}}]}}
//! {"type":"turn_ended","status":"success"}
//! ```
//!
//! Tool calls (`tool_use`, keys like `path` / `contents` / `command`) are written, but **tool
//! results are not**, and records are appended after a tool ran. [`CursorReader`] therefore
//! numbers lines: message id `line-<n>`, tool call id `line-<n>-<k>` (`n` = 0-based index of the
//! line among the non-blank lines of the file, `k` = index of the `tool_use` block in the line),
//! and keeps `n` in its saved state so that an ingest that starts mid-file continues the count.
//! This matches code-session-memory's `<composerId>-<lineIndex>` numbering.
//!
//! The `<slug>` is the workspace path with leading `/` removed and every non-alphanumeric
//! character replaced by `-` ([`project_slug`]); long paths are truncated and given a hash suffix
//! by Cursor (third-party observation), so a transcript is looked up by conversation id when the
//! slug does not match ([`transcripts_for_event`]).
//!
//! What is not read: the IDE's `state.vscdb` (SQLite, `cursorDiskKV`,
//! `docs/agents/cursor.md#transcript-traps`); some IDE builds are reported to write only
//! `turn_ended` markers into the transcript and keep the bodies in that database (third-party,
//! unverified). Code-session-memory's `cursor-session.json` fixture is its own conversion of that
//! database (`FullMessage[]`), not a Cursor format, and is not read either.

use crate::model::{
    Agent, Batch, HookEvent, LineReader, Message, Part, Record, Role, SessionRef, ToolCall,
    days_from_civil, normalize_tool_name, parse_rfc3339_ms, title_text,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::path::{Component, Path, PathBuf};

// ---------------------------------------------------------------------------------------------
// Paths (`docs/agents/cursor.md#paths`)
// ---------------------------------------------------------------------------------------------

/// The Cursor config folder: `$CURSOR_CONFIG_DIR` when set to an absolute path, else `~/.cursor`
/// (`%USERPROFILE%\.cursor` on Windows). Holds `hooks.json`, `mcp.json`, `skills/`,
/// `cli-config.json` and `projects/` (transcripts).
///
/// `CURSOR_CONFIG_DIR` is documented by Cursor for the CLI's configuration location
/// (`cli-config.json`); that it also moves `hooks.json` and `projects/` is reported by third
/// parties only, so [`projects_dirs`] searches `~/.cursor/projects` as well.
pub fn config_dir() -> PathBuf {
    config_dir_in(&crate::Env::from_process())
}

/// [`config_dir`] with an explicit environment (`CURSOR_CONFIG_DIR`, `HOME`).
pub fn config_dir_in(env: &crate::Env) -> PathBuf {
    env.abs_var("CURSOR_CONFIG_DIR")
        .unwrap_or_else(|| env.home().join(".cursor"))
}

/// User hooks: `<config>/hooks.json` (`{"version":1,"hooks":{"stop":[{"command":…}]}}`;
/// commands run from the config folder, so they must be absolute).
pub fn hooks_path() -> PathBuf {
    paths::Locations::resolve(&crate::Env::from_process()).hooks
}

/// User MCP servers: `<config>/mcp.json` (`{"mcpServers":{…}}`).
pub fn mcp_path() -> PathBuf {
    paths::Locations::resolve(&crate::Env::from_process()).mcp
}

/// memtrail's personal skill: `<config>/skills/memtrail/SKILL.md`.
pub fn skill_path() -> PathBuf {
    paths::Locations::resolve(&crate::Env::from_process()).skill
}

/// The folders that hold `<slug>/agent-transcripts/`: `<config>/projects`, then
/// `~/.cursor/projects` when `CURSOR_CONFIG_DIR` points elsewhere (deduplicated, in that order).
pub fn projects_dirs() -> Vec<PathBuf> {
    projects_dirs_in(&crate::Env::from_process())
}

/// [`projects_dirs`] with an explicit environment.
pub fn projects_dirs_in(env: &crate::Env) -> Vec<PathBuf> {
    let mut dirs = vec![config_dir_in(env).join("projects")];
    let default = env.home().join(".cursor").join("projects");
    if !dirs.contains(&default) {
        dirs.push(default);
    }
    dirs
}

/// True when the Cursor config folder exists (the installer adds PATH checks for `cursor` /
/// `agent`).
pub fn detect() -> bool {
    config_dir().is_dir()
}

/// Cursor's project folder name for a workspace path: leading `/` removed, every character that
/// is not an ASCII letter or digit replaced by `-` (one `-` per character, as Go's
/// `[^a-zA-Z0-9]` does per rune). `/home/user/my_app` → `home-user-my-app`. Source: entireio/cli
/// `sanitizePathForCursor`; `docs/agents/cursor.md#transcript-format`.
///
/// Cursor truncates long paths and adds a hash suffix, so the result is only a first guess.
pub fn project_slug(workspace: &str) -> String {
    workspace
        .trim_start_matches('/')
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The workspace folder a project slug stands for, found by walking the filesystem from `/`
/// (a slug is lossy: `-` may be `/`, `.`, `_`, `-` or a space). Returns the first existing
/// directory whose [`project_slug`] equals `slug`, or `None` (no match, a truncated slug, or not
/// a Unix filesystem). Bounded: at most 64 levels and 512 directory listings.
pub fn project_dir_from_slug(slug: &str) -> Option<PathBuf> {
    if slug.is_empty() || !cfg!(unix) {
        return None;
    }
    let mut budget = 512u32;
    resolve_slug(Path::new("/"), slug, 0, &mut budget)
}

fn resolve_slug(dir: &Path, rest: &str, depth: u32, budget: &mut u32) -> Option<PathBuf> {
    if depth > 64 || *budget == 0 {
        return None;
    }
    *budget -= 1;
    let entries = std::fs::read_dir(dir).ok()?;
    let mut candidates: Vec<(PathBuf, usize)> = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let s = project_slug(name);
        if s.is_empty() {
            continue;
        }
        let full = rest == s;
        let prefix =
            rest.len() > s.len() && rest.starts_with(&s) && rest.as_bytes()[s.len()] == b'-';
        if (full || prefix) && e.path().is_dir() {
            candidates.push((e.path(), if full { 0 } else { s.len() + 1 }));
        }
    }
    candidates.sort();
    for (path, cut) in candidates {
        if cut == 0 {
            return Some(path);
        }
        if let Some(found) = resolve_slug(&path, &rest[cut..], depth + 1, budget) {
            return Some(found);
        }
    }
    None
}

/// The project slug of a transcript path: the folder above `agent-transcripts`.
/// The folder among `known` (project folders memtrail already knows, e.g. of other sessions)
/// whose [`project_slug`] is the `<slug>` folder above this transcript's `agent-transcripts`:
/// the project of a transcript whose folder [`project_dir_from_slug`] cannot find (moved,
/// deleted, another machine). `None` when none or several distinct folders match.
pub fn project_among(path: &Path, known: &[String]) -> Option<String> {
    let slug = slug_of_transcript(path)?;
    let mut found = known.iter().filter(|k| project_slug(k) == slug);
    let first = found.next()?;
    found.all(|k| k == first).then(|| first.clone())
}

fn slug_of_transcript(path: &Path) -> Option<String> {
    let mut it = path.ancestors();
    while let Some(a) = it.next() {
        if a.file_name().is_some_and(|n| n == "agent-transcripts") {
            return it
                .next()
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned());
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Transcript reader (`docs/agents/cursor.md#transcript-format`)
// ---------------------------------------------------------------------------------------------

/// The fields of a transcript line the reader uses; each is a [`Value`] so that a wrong type
/// degrades to "absent" instead of failing the line.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Line {
    role: Value,
    #[serde(rename = "type")]
    kind: Value,
    message: Value,
}

/// Line `type`s without a `role` that carry no conversation content (counted as known).
const KNOWN_TYPES: &[&str] = &["turn_ended"];

/// Reader for one Cursor agent transcript (`…/agent-transcripts/<id>.jsonl`, the nested
/// `<id>/<id>.jsonl`, or a sub-agent file); implements [`LineReader`]. Format:
/// `docs/agents/cursor.md#transcript-format` and the module docs.
///
/// What each line becomes (`n` = the line's 0-based index among non-blank lines):
///
/// - `{"role":"user","message":{"content":…}}`: a [`Record::Message`] with role `User`, id
///   `line-<n>`, one [`Part::Text`] per non-empty text block (a string `content` is one block).
///   Each block is cleaned: a leading `<timestamp>…</timestamp>` is removed (and parsed, see
///   below), the `<user_query>` … `</user_query>` wrapper is removed (its content kept, once),
///   whitespace trimmed. The message `timestamp` is the parsed `<timestamp>` (Cursor writes local
///   time with a `GMT±h[:mm]` offset, e.g. `Tuesday, Aug 18, 2026, 2:37 PM GMT+2`; ms since the
///   Unix epoch, `None` when absent or unparseable). A prompt left empty is skipped (known).
/// - `{"role":"assistant",…}`: a message with role `Assistant`, id `line-<n>`, parts in block
///   order: `text` → [`Part::Text`] (trimmed, empty dropped); `thinking` / `reasoning` (field
///   `thinking` or `text`) → [`Part::Thinking`]; `tool_use` → [`Part::ToolCall`] with the
///   block's own `id` when it has one (none do today), else `line-<n>-<k>` (`k` = index among the
///   line's `tool_use` blocks), `name` as written, `tool` from [`normalize_tool_name`]
///   (`Shell`→`shell`, `Read`→`read`, `StrReplace`→`edit`, …), `input` as written, **no output**
///   (Cursor does not write tool results). Other block types are ignored. No parts: skipped
///   (known).
/// - `{"type":"turn_ended","status":…}`: skipped (known). Any other line without a `user` or
///   `assistant` role: skipped (unknown). Not JSON (after [`repair_json_line`] fixed what it
///   can: lone surrogates, invalid UTF-8), not an object: malformed. Blank lines: skipped (known)
///   without advancing `n` (the runtime never hands them to the reader).
///
/// [`repair_json_line`]: crate::model::repair_json_line
///
/// [`Batch::meta`]: `title` = the first user prompt of the batch (whitespace collapsed, at most
/// 80 characters), `started_at`/`updated_at` from the parsed prompt timestamps, `project_dir`
/// from the reader's project folder (see [`CursorReader::for_path`]). Cursor lines carry no model,
/// version or branch, and no time except a prompt's optional `<timestamp>`: with the file's times
/// ([`CursorReader::with_file_times`]), a message without one gets the file's modification time
/// (it was written no later), and a batch with content starts no later than the file's creation
/// time; so `--since`/`--until` and `purge` see every Cursor session.
///
/// State ([`LineReader::save_state`]): `{"line": n}`, the index of the next line. A reader that
/// starts mid-file without it would number lines from 0 and collide with stored ids, so the
/// runtime must restore it (it does, from the cursor).
#[derive(Debug, Default, Clone)]
pub struct CursorReader {
    /// Index of the next non-blank line.
    line: u64,
    /// The workspace folder, when known (from the project slug).
    project_dir: Option<String>,
    /// The transcript file's times (ms since the Unix epoch) when the reader was made for a
    /// file: its creation (else modification) time and its modification time.
    file_times: Option<(i64, i64)>,
}

impl CursorReader {
    /// A reader at the start of a file, with no project folder.
    pub fn new() -> Self {
        Self::default()
    }

    /// A reader at the start of a file whose workspace folder is `project_dir`.
    pub fn with_project_dir(project_dir: Option<String>) -> Self {
        Self {
            line: 0,
            project_dir,
            file_times: None,
        }
    }

    /// This reader with the transcript file's times, `(created, modified)` in ms since the Unix
    /// epoch, as the bounds of its lines' times (Cursor writes none): a line without a
    /// `<timestamp>` was written no later than `modified`, the session started no earlier than
    /// `created`.
    pub fn with_file_times(mut self, times: Option<(i64, i64)>) -> Self {
        self.file_times = times;
        self
    }

    /// A reader for the transcript at `path`: the project folder is the directory whose
    /// [`project_slug`] is the `<slug>` folder above `agent-transcripts` (found with
    /// [`project_dir_from_slug`]; `None` when no directory matches). Does not open the file.
    ///
    /// The file's times ([`CursorReader::with_file_times`]) are read here: its modification time
    /// and its creation time (the modification time where the filesystem has none).
    pub fn for_path(path: &Path) -> Self {
        let dir = slug_of_transcript(path)
            .and_then(|s| project_dir_from_slug(&s))
            .map(|p| p.to_string_lossy().into_owned());
        Self::with_project_dir(dir).with_file_times(file_times(path))
    }

    fn user(&mut self, n: u64, message: Value, out: &mut Batch) {
        let mut parts = Vec::new();
        let mut ts = None;
        for text in texts_of(content_of(message)) {
            let (clean, t) = clean_user_text(&text);
            ts = ts.or(t);
            if !clean.is_empty() {
                parts.push(Part::Text { text: clean });
            }
        }
        if parts.is_empty() {
            out.stats.skipped_known += 1;
            return;
        }
        let ts = ts.or(self.file_times.map(|(_, modified)| modified));
        note_time(out, ts);
        let msg = Message {
            id: format!("line-{n}"),
            role: Role::User,
            kind: Message::infer_kind(&parts),
            parts,
            timestamp: ts,
            model: None,
        };
        if out.meta.title.is_none() {
            let title = title_text(&msg.text(), 80);
            if !title.is_empty() {
                out.meta.title = Some(title);
            }
        }
        out.records.push(Record::Message(msg));
    }

    fn assistant(&mut self, n: u64, message: Value, out: &mut Batch) {
        let mut parts = Vec::new();
        let mut k = 0usize;
        match content_of(message) {
            Value::String(s) => push_text(&mut parts, &s),
            Value::Array(blocks) => {
                for block in blocks {
                    let Value::Object(mut b) = block else {
                        continue;
                    };
                    match b.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            if let Some(t) = b.get("text").and_then(Value::as_str) {
                                push_text(&mut parts, t);
                            }
                        }
                        Some("thinking" | "reasoning") => {
                            let t = b
                                .get("thinking")
                                .and_then(Value::as_str)
                                .or_else(|| b.get("text").and_then(Value::as_str))
                                .unwrap_or("")
                                .trim();
                            if !t.is_empty() {
                                parts.push(Part::Thinking {
                                    text: t.to_string(),
                                });
                            }
                        }
                        Some("tool_use") => {
                            let id = match b.get("id").and_then(Value::as_str) {
                                Some(id) if !id.is_empty() => id.to_string(),
                                _ => format!("line-{n}-{k}"),
                            };
                            k += 1;
                            let name = match b.remove("name") {
                                Some(Value::String(s)) => s,
                                _ => String::new(),
                            };
                            let input = b.remove("input").unwrap_or(Value::Null);
                            parts.push(Part::ToolCall(ToolCall {
                                id,
                                tool: normalize_tool_name(&name),
                                name,
                                input,
                                output: None,
                                is_error: false,
                                exit_code: None,
                            }));
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        if parts.is_empty() {
            out.stats.skipped_known += 1;
            return;
        }
        let ts = self.file_times.map(|(_, modified)| modified);
        note_time(out, ts);
        out.records.push(Record::Message(Message {
            id: format!("line-{n}"),
            role: Role::Assistant,
            kind: Message::infer_kind(&parts),
            parts,
            timestamp: ts,
            model: None,
        }));
    }
}

impl LineReader for CursorReader {
    fn line(&mut self, line: &[u8], out: &mut Batch) {
        out.stats.lines += 1;
        let Some(line) = crate::model::trim_line(line) else {
            out.stats.skipped_known += 1;
            return;
        };
        let n = self.line;
        self.line += 1;
        // One bad character (a lone surrogate from a cut emoji, invalid UTF-8) must not lose a
        // whole prompt: parse_object_line repairs and tries once more.
        let Some(parsed) = crate::model::parse_object_line::<Line>(line) else {
            out.stats.malformed += 1;
            return;
        };
        let role = parsed
            .role
            .as_str()
            .or_else(|| parsed.message.get("role").and_then(Value::as_str));
        match role {
            Some("user") => self.user(n, parsed.message, out),
            Some("assistant") => self.assistant(n, parsed.message, out),
            Some(_) => out.stats.skipped_unknown += 1,
            None => match parsed.kind.as_str() {
                Some(k) if KNOWN_TYPES.contains(&k) => out.stats.skipped_known += 1,
                _ => out.stats.skipped_unknown += 1,
            },
        }
    }

    /// Nothing is held back (every line is a whole message); sets the batch's project folder.
    fn finish(&mut self, out: &mut Batch) {
        if out.meta.project_dir.is_none() {
            out.meta.project_dir.clone_from(&self.project_dir);
        }
        if let Some((created, _)) = self.file_times
            && !out.records.is_empty()
        {
            note_time(out, Some(created));
        }
    }

    fn save_state(&self) -> Option<Value> {
        Some(json!({ "line": self.line }))
    }

    fn restore_state(&mut self, state: &Value) {
        if let Some(n) = state.get("line").and_then(Value::as_u64) {
            self.line = n;
        }
    }
}

/// `message.content`, or `Null`.
fn content_of(message: Value) -> Value {
    match message {
        Value::Object(mut m) => m.remove("content").unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

/// The text blocks of a `content`: a string is one block; an array gives its `text` blocks.
fn texts_of(content: Value) -> Vec<String> {
    match content {
        Value::String(s) => vec![s],
        Value::Array(blocks) => blocks
            .into_iter()
            .filter_map(|b| match b {
                Value::Object(mut b) if b.get("type").and_then(Value::as_str) == Some("text") => {
                    match b.remove("text") {
                        Some(Value::String(s)) => Some(s),
                        _ => None,
                    }
                }
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn push_text(parts: &mut Vec<Part>, text: &str) {
    let t = text.trim();
    if !t.is_empty() {
        parts.push(Part::Text {
            text: t.to_string(),
        });
    }
}

fn note_time(out: &mut Batch, ts: Option<i64>) {
    let Some(t) = ts else { return };
    let meta = &mut out.meta;
    meta.started_at = Some(meta.started_at.map_or(t, |s| s.min(t)));
    meta.updated_at = Some(meta.updated_at.map_or(t, |u| u.max(t)));
}

/// A Cursor prompt without its wrappers, and the time of its leading `<timestamp>` element.
///
/// 1. A `<timestamp>` element at the very start (after whitespace), on one line and without
///    `<` inside, is removed; its content is parsed with [`parse_cursor_timestamp`]. A timestamp
///    anywhere else is the user's text and stays (entireio/cli `ide_tags.go` rule).
/// 2. The first `<user_query>` and the last `</user_query>` after it are removed, their content
///    kept (only the wrapper, so a pasted `<user_query>` inside survives).
/// 3. Whitespace is trimmed.
pub fn clean_user_text(text: &str) -> (String, Option<i64>) {
    let mut rest = text;
    let mut ts = None;
    let lead = rest.trim_start();
    if let Some(after) = lead.strip_prefix("<timestamp")
        && after.starts_with(['>', ' ', '\t'])
        && let Some(gt) = after.find('>')
    {
        let body_and_rest = &after[gt + 1..];
        if let Some(close) = body_and_rest.find("</timestamp") {
            let body = &body_and_rest[..close];
            let tail = &body_and_rest[close + "</timestamp".len()..];
            let tail_trim = tail.trim_start();
            if !body.contains(['<', '\n']) && tail_trim.starts_with('>') {
                ts = parse_cursor_timestamp(body);
                rest = &tail_trim[1..];
            }
        }
    }
    let mut s = rest.to_string();
    if let Some(open) = s.find("<user_query>") {
        s.replace_range(open..open + "<user_query>".len(), "");
        if let Some(close) = s[open..].rfind("</user_query>") {
            let at = open + close;
            s.replace_range(at..at + "</user_query>".len(), "");
        }
    }
    (s.trim().to_string(), ts)
}

/// Parse the text of Cursor's `<timestamp>` element into ms since the Unix epoch.
///
/// Accepts RFC 3339, or `[Weekday,] Mon D, YYYY, h:mm[:ss] [AM|PM] GMT±h[:mm]` (also `UTC`,
/// `GMT`, `Z`, or a numeric `±hh:mm`/`±hhmm` offset; full or 3-letter English month names).
/// Without an explicit offset the time is local and unknown, so `None`.
pub fn parse_cursor_timestamp(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Some(ms) = parse_rfc3339_ms(s) {
        return Some(ms);
    }
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let tokens: Vec<&str> = s
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .collect();
    let mut i = tokens.iter().position(|t| {
        let l = t.to_ascii_lowercase();
        l.len() >= 3 && MONTHS.iter().any(|m| l.starts_with(m))
    })?;
    let month = MONTHS
        .iter()
        .position(|m| tokens[i].to_ascii_lowercase().starts_with(m))? as i64
        + 1;
    i += 1;
    let day: i64 = tokens.get(i)?.parse().ok()?;
    i += 1;
    let year: i64 = tokens.get(i)?.parse().ok()?;
    i += 1;
    let mut hms = tokens.get(i)?.split(':');
    let mut hour: i64 = hms.next()?.parse().ok()?;
    let minute: i64 = hms.next()?.parse().ok()?;
    let second: i64 = hms.next().map_or(Some(0), |x| x.parse().ok())?;
    i += 1;
    if let Some(ampm) = tokens.get(i).map(|t| t.to_ascii_uppercase())
        && (ampm == "AM" || ampm == "PM")
    {
        if !(1..=12).contains(&hour) {
            return None;
        }
        hour %= 12;
        if ampm == "PM" {
            hour += 12;
        }
        i += 1;
    }
    let offset_min = parse_offset(tokens.get(i)?)?;
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || !(0..=23).contains(&hour)
        || !(0..=59).contains(&minute)
        || !(0..=60).contains(&second)
    {
        return None;
    }
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
        - offset_min * 60;
    Some(secs * 1000)
}

/// `GMT+2`, `GMT-05:30`, `UTC`, `GMT`, `Z`, `+0200`, `-05:30` → minutes east of UTC.
fn parse_offset(t: &str) -> Option<i64> {
    let u = t.to_ascii_uppercase();
    let rest = u
        .strip_prefix("GMT")
        .or_else(|| u.strip_prefix("UTC"))
        .unwrap_or(&u);
    if rest.is_empty() || rest == "Z" {
        return Some(0);
    }
    let (sign, digits) = match rest.as_bytes()[0] {
        b'+' => (1, &rest[1..]),
        b'-' => (-1, &rest[1..]),
        _ => return None,
    };
    let (h, m) = match digits.split_once(':') {
        Some((h, m)) => (h.parse::<i64>().ok()?, m.parse::<i64>().ok()?),
        None if digits.len() == 4 => (digits[..2].parse().ok()?, digits[2..].parse().ok()?),
        None => (digits.parse().ok()?, 0),
    };
    if h > 14 || m > 59 {
        return None;
    }
    Some(sign * (h * 60 + m))
}

// ---------------------------------------------------------------------------------------------
// Session identity, reader choice, discovery
// (`docs/agents/cursor.md#session-identity-and-discovery`)
// ---------------------------------------------------------------------------------------------

/// Which conversation a Cursor transcript file belongs to. The file is not opened.
///
/// - `…/agent-transcripts/<id>.jsonl` or `…/<id>/<id>.jsonl`: `external_id` = `<id>` (the
///   `conversation_id` of the hook payloads), no parent.
/// - `…/<id>/subagents/<sub>.jsonl`: `external_id` = `<id>/<sub>`, parent = `<id>`.
///
/// Errors: `InvalidInput` when the path has no file name.
pub fn identify(path: &Path) -> std::io::Result<SessionRef> {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("not a transcript file: {}", path.display()),
            )
        })?;
    let parent = path.parent();
    if parent
        .and_then(Path::file_name)
        .is_some_and(|n| n == "subagents")
        && let Some(session) = parent
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .map(|s| s.to_string_lossy().into_owned())
            .filter(|s| !s.is_empty())
    {
        return Ok(SessionRef {
            agent: Agent::Cursor,
            external_id: format!("{session}/{stem}"),
            parent_external_id: Some(session),
        });
    }
    Ok(SessionRef {
        agent: Agent::Cursor,
        external_id: stem,
        parent_external_id: None,
    })
}

/// `(created, modified)` of the file at `path` in ms since the Unix epoch (created = modified
/// where the filesystem does not record a creation time, or records a later one); `None` when
/// it cannot be read.
fn file_times(path: &Path) -> Option<(i64, i64)> {
    let md = std::fs::metadata(path).ok()?;
    let ms = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .ok()
            .and_then(|d| i64::try_from(d.as_millis()).ok())
    };
    let modified = ms(md.modified().ok()?)?;
    let created = md
        .created()
        .ok()
        .and_then(ms)
        .filter(|&c| c <= modified)
        .unwrap_or(modified);
    Some((created, modified))
}

/// How to read a Cursor file: always a [`CursorReader`] (JSONL, incremental), built with
/// [`CursorReader::for_path`].
pub fn source_for(path: &Path) -> crate::Source {
    crate::Source::Lines(Box::new(CursorReader::for_path(path)))
}

/// Every Cursor transcript for `memtrail import`, from [`projects_dirs`]; see [`discover_in`].
pub fn discover() -> std::io::Result<Vec<PathBuf>> {
    discover_in(&projects_dirs())
}

/// Every transcript under the given `projects` folders:
///
/// 1. conversations, sorted by path: `<projects>/<slug>/agent-transcripts/<id>.jsonl` and
///    `…/agent-transcripts/<id>/<id>.jsonl`;
/// 2. then sub-agents, sorted: `…/agent-transcripts/<id>/subagents/*.jsonl`.
///
/// Missing folders give nothing; a path reached twice (the same folder listed twice) is kept
/// once. Errors: a `projects` folder exists but cannot be listed. Unreadable folders below it are
/// skipped.
pub fn discover_in(projects_dirs: &[PathBuf]) -> std::io::Result<Vec<PathBuf>> {
    discover_in_with_errors(projects_dirs).map(|(files, _)| files)
}

/// [`discover`], also returning the folders that exist but could not be listed, with the reason
/// (for `memtrail import` to report instead of silently skipping them).
#[allow(clippy::type_complexity)]
pub fn discover_with_errors() -> std::io::Result<(Vec<PathBuf>, Vec<(PathBuf, String)>)> {
    discover_in_with_errors(&projects_dirs())
}

/// [`discover_in`], also returning the unreadable folders below the `projects` folders.
#[allow(clippy::type_complexity)]
pub fn discover_in_with_errors(
    projects_dirs: &[PathBuf],
) -> std::io::Result<(Vec<PathBuf>, Vec<(PathBuf, String)>)> {
    let mut mains = Vec::new();
    let mut subs = Vec::new();
    let mut unreadable = Vec::new();
    // A folder that is missing is normal; one that exists but cannot be listed is reported.
    // Folders are listed through `paths::list_dir`: `memtrail status` keeps their listings.
    let mut list = |dir: &Path| -> Option<Vec<crate::paths::Listed>> {
        match crate::paths::list_dir(dir) {
            Ok(rd) => Some(rd),
            Err(e) => {
                if e.kind() != std::io::ErrorKind::NotFound && dir.exists() {
                    unreadable.push((dir.to_path_buf(), e.to_string()));
                }
                None
            }
        }
    };
    for dir in projects_dirs {
        let projects = match crate::paths::list_dir(dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for project in projects {
            if !project.is_dir() {
                continue;
            }
            let Some(entries) = list(&project.path().join("agent-transcripts")) else {
                continue;
            };
            for entry in entries {
                let path = entry.path();
                if entry.is_dir() {
                    let name = entry.file_name();
                    let nested = path.join(format!("{}.jsonl", name.to_string_lossy()));
                    if nested.is_file() {
                        mains.push(nested);
                    }
                    if let Some(rd) = list(&path.join("subagents")) {
                        subs.extend(
                            rd.into_iter()
                                .filter(|e| is_jsonl(e.path()) && e.is_file())
                                .map(|e| e.path().to_path_buf()),
                        );
                    }
                } else if is_jsonl(path) {
                    mains.push(path.to_path_buf());
                }
            }
        }
    }
    crate::paths::sort_paths(&mut mains);
    mains.dedup();
    crate::paths::sort_paths(&mut subs);
    subs.dedup();
    mains.extend(subs);
    unreadable.sort();
    unreadable.dedup();
    Ok((mains, unreadable))
}

fn is_jsonl(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "jsonl")
}

// ---------------------------------------------------------------------------------------------
// Hooks (`docs/agents/README.md#cross-agent-notes`, `docs/agents/cursor.md#hooks`;
// `docs/agents/cursor.md#hooks`)
// ---------------------------------------------------------------------------------------------

/// Parse a Cursor hook payload (the stdin bytes of `memtrail hook cursor`) into a [`HookEvent`].
///
/// Common fields (`docs/agents/cursor.md#hooks`): `conversation_id`, `generation_id`, `model`,
/// `hook_event_name` (`sessionStart`, `beforeSubmitPrompt`, `stop`, `preCompact`, `sessionEnd`,
/// `subagentStop`, …), `cursor_version`, `workspace_roots`, `user_email`, `transcript_path`
/// (`null` in the CLI). Mapping:
///
/// - `event` ← `hook_event_name` as Cursor spells it (camelCase); empty when absent;
/// - `session_id` ← `conversation_id`, else `session_id` (sessionStart/sessionEnd repeat it);
/// - `transcript_path` ← `transcript_path`, else the hook environment's `CURSOR_TRANSCRIPT_PATH`;
/// - `cwd` ← `cwd`, else the first `workspace_roots` entry (`file://` URIs decoded), else
///   `CURSOR_PROJECT_DIR`;
/// - `source` ← `source`, `trigger` (preCompact) or `reason` (sessionEnd);
/// - `agent_transcript_path` ← `agent_transcript_path` (subagentStop);
/// - `extra` ← the whole payload.
///
/// `agent` is Cursor, unless the payload has none of Cursor's fields (`conversation_id`,
/// `generation_id`, `cursor_version`, `workspace_roots`) and is clearly another agent's: VS Code
/// (camelCase `sessionId` / `hookEventName`) or Claude Code (`session_id` with a transcript under
/// `…/.claude/projects/`).
///
/// Errors (for the hook log): the bytes are empty, not JSON, or not a JSON object.
pub fn parse_hook_payload(bytes: &[u8], env: &crate::Env) -> Result<HookEvent, crate::Error> {
    let env = |k: &str| env.var_utf8(k);
    let payload = parse_object(bytes)?;
    let has = |k: &str| payload.get(k).is_some_and(|v| !v.is_null());
    let cursor_shaped = [
        "conversation_id",
        "generation_id",
        "cursor_version",
        "workspace_roots",
    ]
    .iter()
    .any(|k| has(k));
    let agent = if cursor_shaped {
        Agent::Cursor
    } else if has("sessionId") || has("hookEventName") {
        Agent::Vscode
    } else if has("session_id")
        && payload
            .get("transcript_path")
            .and_then(Value::as_str)
            .is_some_and(|p| p.replace('\\', "/").contains("/.claude/projects/"))
    {
        Agent::Claude
    } else {
        Agent::Cursor
    };
    let get = |keys: &[&str]| -> Option<String> {
        keys.iter()
            .find_map(|k| payload.get(*k)?.as_str().filter(|s| !s.is_empty()))
            .map(str::to_string)
    };
    let nonempty = |v: Option<String>| v.filter(|s| !s.is_empty());
    let cwd = get(&["cwd"])
        .or_else(|| workspace_roots(&payload).into_iter().next())
        .or_else(|| nonempty(env("CURSOR_PROJECT_DIR")));
    Ok(HookEvent {
        agent,
        event: get(&["hook_event_name", "hookEventName"]).unwrap_or_default(),
        session_id: get(&["conversation_id", "session_id", "sessionId"]),
        transcript_path: get(&["transcript_path"])
            .or_else(|| nonempty(env("CURSOR_TRANSCRIPT_PATH"))),
        cwd,
        source: get(&["source", "trigger", "reason"]),
        agent_transcript_path: get(&["agent_transcript_path"]),
        extra: Value::Object(payload),
    })
}

fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, crate::Error> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(crate::Error::EmptyPayload);
    }
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(crate::Error::PayloadNotObject),
        Err(e) => Err(crate::Error::PayloadNotJson(e)),
    }
}

/// The `workspace_roots` of a payload as filesystem paths (`file://` URIs decoded).
fn workspace_roots(payload: &Map<String, Value>) -> Vec<String> {
    payload
        .get("workspace_roots")
        .and_then(Value::as_array)
        .map(|roots| {
            roots
                .iter()
                .filter_map(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(uri_to_path)
                .collect()
        })
        .unwrap_or_default()
}

/// `file:///home/u/my%20app` → `/home/u/my app`; `file:///c%3A/x` → `c:/x`; a plain path is
/// returned unchanged.
fn uri_to_path(s: &str) -> String {
    let Some(rest) = s.strip_prefix("file://") else {
        return s.to_string();
    };
    // Skip an authority (`file://host/path`), usually empty.
    let path = match rest.find('/') {
        Some(i) => &rest[i..],
        None => rest,
    };
    let decoded = crate::paths::percent_decode(path);
    let b = decoded.as_bytes();
    if b.len() >= 3 && b[0] == b'/' && b[1].is_ascii_alphabetic() && b[2] == b':' {
        return decoded[1..].to_string();
    }
    decoded
}

/// The transcripts a Cursor hook event should ingest; see [`transcripts_for_event_in`]
/// (searching [`projects_dirs`]).
pub fn transcripts_for_event(ev: &HookEvent) -> Vec<PathBuf> {
    transcripts_for_event_in(ev, &projects_dirs())
}

/// The transcripts a Cursor hook event should ingest, in order:
///
/// 1. the conversation's transcript: `transcript_path` when the payload has one; else (the CLI
///    sends `null`) it is resolved from `conversation_id` and `workspace_roots` / `cwd`: for each
///    `projects` folder and root, `<projects>/<slug>/agent-transcripts/<id>/<id>.jsonl` (nested,
///    also when only the `<id>` folder exists yet) or `…/<id>.jsonl` (flat); then any
///    `<projects>/*/agent-transcripts/` holding that id (Cursor truncates long slugs); else the
///    predicted flat path under the first folder and root (it may not exist yet);
/// 2. its sub-agent transcripts, `<dir>/<id>/subagents/*.jsonl`, sorted;
/// 3. subagentStop's `agent_transcript_path`, unless already listed.
///
/// A conversation id that is empty or not a plain file name (`/`, `\`, `..`) resolves nothing.
pub fn transcripts_for_event_in(ev: &HookEvent, projects_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = Vec::new();
    let main = match ev.transcript_path.as_deref().filter(|t| !t.is_empty()) {
        Some(t) => Some(PathBuf::from(t)),
        None => resolve_transcript(ev, projects_dirs),
    };
    if let Some(main) = main {
        let subagents = match (main.parent(), main.file_stem()) {
            (Some(dir), Some(stem)) if dir.file_name() == Some(stem) => Some(dir.join("subagents")),
            (Some(dir), Some(stem)) => Some(dir.join(stem).join("subagents")),
            _ => None,
        };
        paths.push(main);
        if let Some(Ok(rd)) = subagents.map(std::fs::read_dir) {
            let mut subs: Vec<PathBuf> = rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| is_jsonl(p))
                .collect();
            subs.sort();
            paths.extend(subs);
        }
    }
    if let Some(t) = ev
        .agent_transcript_path
        .as_deref()
        .filter(|t| !t.is_empty())
    {
        let p = PathBuf::from(t);
        if !paths.contains(&p) {
            paths.push(p);
        }
    }
    paths
}

/// A conversation id usable as a file name.
fn plain_id(id: &str) -> Option<&str> {
    let mut comps = Path::new(id).components();
    let ok = !id.is_empty()
        && !id.contains(['/', '\\'])
        && matches!(comps.next(), Some(Component::Normal(_)))
        && comps.next().is_none();
    ok.then_some(id)
}

fn resolve_transcript(ev: &HookEvent, projects_dirs: &[PathBuf]) -> Option<PathBuf> {
    let id = plain_id(ev.session_id.as_deref()?)?;
    let mut roots: Vec<String> = match &ev.extra {
        Value::Object(m) => workspace_roots(m),
        _ => Vec::new(),
    };
    if let Some(cwd) = &ev.cwd
        && !roots.contains(cwd)
    {
        roots.push(cwd.clone());
    }
    let in_base = |base: &Path| -> Option<PathBuf> {
        let nested_dir = base.join(id);
        let nested = nested_dir.join(format!("{id}.jsonl"));
        if nested.is_file() || nested_dir.is_dir() {
            return Some(nested);
        }
        let flat = base.join(format!("{id}.jsonl"));
        flat.is_file().then_some(flat)
    };
    for dir in projects_dirs {
        for root in &roots {
            let slug = project_slug(root);
            if slug.is_empty() {
                continue;
            }
            if let Some(p) = in_base(&dir.join(&slug).join("agent-transcripts")) {
                return Some(p);
            }
        }
    }
    for dir in projects_dirs {
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut projects: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        projects.sort();
        for project in projects {
            if let Some(p) = in_base(&project.join("agent-transcripts")) {
                return Some(p);
            }
        }
    }
    let slug = roots
        .iter()
        .map(|r| project_slug(r))
        .find(|s| !s.is_empty())?;
    Some(
        projects_dirs
            .first()?
            .join(slug)
            .join("agent-transcripts")
            .join(format!("{id}.jsonl")),
    )
}

/// The stdout reply to a `sessionStart` hook that adds `context` to the conversation:
/// `{"additional_context":"<context>"}` (snake_case; `docs/agents/cursor.md#reply-dialect`,
/// confirmed by third-party integrations), one line of JSON without a trailing newline. Cursor also
/// accepts an `env` object there, which memtrail does not use. Always `Some`.
pub fn session_start_reply(context: &str) -> Option<String> {
    Some(json!({ "additional_context": context }).to_string())
}
pub mod adapter;
pub mod paths;
pub mod registration;
