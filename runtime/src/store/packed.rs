//! How a message's parts are kept (schema 13, 14, 21): `messages.parts_zdict` is the parts' JSON,
//! compressed with zstd when that makes it smaller, or nothing at all when the parts are the
//! message's body as one text part; the tool calls flattened for the full-text index are not
//! stored but rendered from the parts when they are read.
//!
//! - `parts_zdict` (`parts` before schema 14, `parts_packed` before 21) holds one of:
//!   - an empty BLOB: the parts are exactly one text part whose text is the row's `body`
//!     (`[{"type":"text","text":<body>}]`), so the text is stored once (schema 14; 93% of the
//!     prose messages of the bench corpus);
//!   - a BLOB holding one zstd frame (RFC 8878, with its content checksum) of the JSON, when
//!     that saves an eighth or more: since schema 21 compressed with the parts dictionary
//!     ([`super::parts_dictionary`]), before without one (both read through it);
//!   - the JSON as TEXT otherwise (short messages), and in rows written before schema 13.
//!
//!   `memtrail_parts(parts_zdict, body)` gives the JSON whatever the row's form, byte for byte
//!   what was packed (`[]` for a damaged frame, as JSON that does not parse always read).
//! - `tools_text` (`tools` before schema 13): NULL for a row whose index text is
//!   [`render_tools`] of its stored parts (every row written since schema 13, but a pulled or
//!   rescanned one whose parts do not parse, or whose text was capped apart by sync); TEXT
//!   otherwise (rows written before, until `memtrail repair` compresses them).
//!   `memtrail_tools(tools_text, parts_zdict)` gives the text either way (nothing for a body
//!   alone: a text part has no tool text); the full-text index reads it through the view
//!   `messages_text` (its external content, column `tools`), and the triggers that take a
//!   message out of the index pass it too, so that a message leaves the index with exactly the
//!   text it was indexed with. That holds as long as [`render_tools`] does not change (a test
//!   pins it).
//!
//! Both functions are registered on every connection of [`super::Store`] ([`register`]). A
//! connection without them (the `sqlite3` shell) reads every column, but not `messages_fts`'s
//! snippets, and fails to delete a message or change its text (the triggers call them).
//!
//! The column was renamed at schema 14 so that a memtrail from before, still running (an
//! `import` started before the upgrade), fails on it instead of reading an empty BLOB as a
//! message without parts and writing that back when it merges a later line into the message.

use super::index_text::render_tools;
use crate::{Error, Result};
use memtrail_adapters::Part;
use rusqlite::Connection;
use rusqlite::ToSql;
use rusqlite::functions::FunctionFlags;
use rusqlite::types::{ToSqlOutput, ValueRef};
use std::cell::RefCell;

/// The SQL function that gives a row's parts as JSON text: `memtrail_parts(parts_zdict, body)`.
pub const PARTS_FUNCTION: &str = "memtrail_parts";
/// The SQL function that gives a row's index text of tool calls:
/// `memtrail_tools(tools_text, parts_zdict)`.
pub const TOOLS_FUNCTION: &str = "memtrail_tools";

/// The SQL function the triggers that take a message out of the full-text index call:
/// `memtrail_tools_strict(tools_text, parts_zdict, id)`, [`TOOLS_FUNCTION`]'s text, or an
/// error when the parts are damaged (their text cannot be given back: the index would keep
/// the row's words, pointing at nothing, and every search that meets them would fail).
pub const TOOLS_STRICT_FUNCTION: &str = "memtrail_tools_strict";

/// The SQL function the full-text index's content view (`messages_text`, schema 20) reads a
/// message's text through: `memtrail_shown(text)`, the text with each U+0000, U+0001 and U+0002
/// shown as U+FFFD ([`shown`]).
pub const SHOWN_FUNCTION: &str = "memtrail_shown";

/// `v` as the full-text index's content gives it ([`SHOWN_FUNCTION`]): text with each NUL,
/// U+0001 and U+0002 replaced by U+FFFD, anything else as it is. FTS5's `snippet()` marks a
/// search's hits with U+0001 and U+0002 (`query::HL_START`, `HL_END`), so the text's own would
/// fake highlights, and it builds its output with C strings, so a NUL dropped the text after it
/// up to the next hit or cut (schema 14 replaced the first two with SQL's `replace()`, which
/// cannot look for a NUL). All four are word separators to the tokenizer (`unicode61`), so the
/// index holds the same tokens. Text that is not UTF-8 (a damaged row) is given as a BLOB of
/// its bytes with the same replacements, which FTS5 reads as the same text.
fn shown(v: ValueRef<'_>) -> rusqlite::types::Value {
    use rusqlite::types::Value;
    let ValueRef::Text(t) = v else {
        return owned(v);
    };
    let bytes = if memchr::memchr3(0, 1, 2, t).is_none() {
        t.to_vec()
    } else {
        let mut out = Vec::with_capacity(t.len() + 8);
        for &b in t {
            if b <= 2 {
                out.extend_from_slice("\u{FFFD}".as_bytes());
            } else {
                out.push(b);
            }
        }
        out
    };
    match String::from_utf8(bytes) {
        Ok(s) => Value::Text(s),
        Err(e) => Value::Blob(e.into_bytes()),
    }
}

/// zstd's level for `parts`. Levels 1 to 19 differ by under 4% on transcript JSON compressed
/// one message at a time (docs/benchmarks.md, "Parts compressed"); 3 is zstd's default and
/// compresses at several hundred MB/s.
const LEVEL: i32 = 3;

/// The dictionary every frame is written with (schema 21) and read through: frames written
/// without it (schemas 13 to 20) read the same through it ([`super::parts_dictionary`]).
const DICTIONARY: &[u8] = super::parts_dictionary::PARTS_DICTIONARY.as_bytes();

/// JSON shorter than this is kept as text: a zstd frame's header and a short text's poor
/// ratio leave nothing to save.
const MIN_PACKED: usize = 96;

/// The largest decompressed `parts` accepted (bytes): a frame claiming more is refused as
/// damaged instead of allocated. Far above any message a transcript holds (the largest tool
/// output memtrail has met is 50 MB).
const MAX_UNPACKED: u64 = 1 << 30;

thread_local! {
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// A message's `parts_zdict` as the store keeps them ([`pack`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredParts {
    /// The JSON itself (SQLite TEXT).
    Text(String),
    /// One zstd frame of the JSON (SQLite BLOB).
    Packed(Vec<u8>),
    /// Nothing (an empty SQLite BLOB): the parts are one text part holding the row's `body`.
    Body,
}

impl ToSql for StoredParts {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            StoredParts::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
            StoredParts::Packed(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
            StoredParts::Body => ToSqlOutput::Borrowed(ValueRef::Blob(&[])),
        })
    }
}

/// The JSON of parts that are one text part holding `body`: what [`pack_parts`] serializes for
/// such a message, and what [`unpack`] gives back for [`StoredParts::Body`].
fn body_json(body: &str) -> Result<String> {
    Ok(serde_json::to_string(&[Part::Text {
        text: body.to_owned(),
    }])?)
}

/// `parts_zdict` as stored for a row whose `body` is `body`: nothing when the JSON is exactly
/// one text part holding `body`, else the JSON compressed when that makes it smaller by at
/// least an eighth, else the JSON itself.
///
/// Errors: the body does not serialize (never: a string always does); zstd's compression of
/// a buffer in memory fails only when it cannot allocate ([`Error::Invalid`]).
pub(crate) fn pack(json: String, body: &str) -> Result<StoredParts> {
    // The one JSON that is the body alone starts so and is longer than the body.
    if json.starts_with(r#"[{"type":"text","text":""#)
        && json.len() > body.len()
        && json == body_json(body)?
    {
        return Ok(StoredParts::Body);
    }
    if json.len() < MIN_PACKED {
        return Ok(StoredParts::Text(json));
    }
    let packed = COMPRESSOR.with(|c| -> std::io::Result<Vec<u8>> {
        let mut c = c.borrow_mut();
        if c.is_none() {
            let mut new = zstd::bulk::Compressor::with_dictionary(LEVEL, DICTIONARY)?;
            // A 4-byte checksum of the content in each frame: a damaged row is found when it
            // is read instead of read as other text.
            new.set_parameter(zstd::stream::raw::CParameter::ChecksumFlag(true))?;
            *c = Some(new);
        }
        c.as_mut().expect("set above").compress(json.as_bytes())
    });
    match packed {
        Ok(p) if p.len() < json.len() - json.len() / 8 => Ok(StoredParts::Packed(p)),
        Ok(_) => Ok(StoredParts::Text(json)),
        Err(e) => Err(Error::Invalid(format!(
            "compressing a message's parts: {e}"
        ))),
    }
}

/// A message's parts as stored in a row whose `body` is `body`: their JSON ([`Part`]'s serde
/// form) through [`pack`].
///
/// Errors: a part does not serialize (JSON), and [`pack`]'s.
pub(crate) fn pack_parts(parts: &[Part], body: &str) -> Result<StoredParts> {
    // The body alone, known without serializing it twice (the hook's common case).
    if let [Part::Text { text }] = parts
        && text == body
    {
        return Ok(StoredParts::Body);
    }
    pack(serde_json::to_string(parts)?, body)
}

/// The JSON of a stored `parts_zdict` value ([`pack`]'s output, or TEXT from an older row) of
/// a row whose `body` is `body`.
///
/// Errors: [`Error::Invalid`] for a BLOB that is not empty or one whole zstd frame of UTF-8
/// text (a damaged row), or for a value of another type.
pub(crate) fn unpack(v: ValueRef<'_>, body: &str) -> Result<String> {
    match v {
        ValueRef::Blob([]) => body_json(body),
        ValueRef::Text(t) => String::from_utf8(t.to_vec())
            .map_err(|_| Error::Invalid("a stored message's parts are not UTF-8".into())),
        ValueRef::Blob(b) => {
            let bytes = unpack_bytes(b).map_err(|e| {
                Error::Invalid(format!("a stored message's parts are damaged: {e}"))
            })?;
            String::from_utf8(bytes).map_err(|_| {
                Error::Invalid("a stored message's parts are damaged: not UTF-8".into())
            })
        }
        other => Err(Error::Invalid(format!(
            "a stored message's parts are a {:?}, not JSON",
            other.data_type()
        ))),
    }
}

fn unpack_bytes(b: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let size = match zstd::zstd_safe::get_frame_content_size(b) {
        Ok(Some(n)) if n <= MAX_UNPACKED => n as usize,
        Ok(Some(n)) => return Err(format!("it claims {n} bytes")),
        Ok(None) => return Err("its size is not recorded".into()),
        Err(_) => return Err("not a zstd frame".into()),
    };
    DECOMPRESSOR.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_none() {
            *d = Some(
                zstd::bulk::Decompressor::with_dictionary(DICTIONARY).map_err(|e| e.to_string())?,
            );
        }
        let out = d
            .as_mut()
            .expect("set above")
            .decompress(b, size)
            .map_err(|e| e.to_string())?;
        if out.len() != size {
            return Err(format!("{} bytes where {size} were recorded", out.len()));
        }
        Ok(out)
    })
}

/// The parts of a stored row whose `body` is `body` (`parts_zdict` as [`unpack`] reads it,
/// then parsed).
///
/// Errors: [`unpack`]'s, and [`Error::Invalid`] when the JSON is not a list of parts.
pub(crate) fn stored_parts(v: ValueRef<'_>, body: &str) -> Result<Vec<Part>> {
    let json = unpack(v, body)?;
    serde_json::from_str(&json)
        .map_err(|e| Error::Invalid(format!("a stored message's parts are not parts: {e}")))
}

/// The index text of a row's tool calls: `tools` when the row stores it, else [`render_tools`]
/// of its parts, or nothing when they cannot be read (a damaged row: its other columns are
/// still indexed, and since the result depends only on the row, the row leaves the index with
/// the text it was indexed with).
fn tools_of(tools: ValueRef<'_>, parts: ValueRef<'_>) -> String {
    strict_tools_of(tools, parts).unwrap_or_default()
}

/// [`tools_of`], or [`unpack`]'s error for damaged parts.
fn strict_tools_of(tools: ValueRef<'_>, parts: ValueRef<'_>) -> Result<String> {
    match (tools, parts) {
        (ValueRef::Text(t), _) => Ok(String::from_utf8_lossy(t).into_owned()),
        // A frame that no longer decompresses: its text cannot be given back.
        (_, ValueRef::Blob(b)) if !b.is_empty() => unpack(parts, "").map(|json| {
            serde_json::from_str::<Vec<Part>>(&json)
                .map(|p| render_tools(&p))
                .unwrap_or_default()
        }),
        // The body alone (a text part: no tool text), JSON text, or a hand-made value: what
        // its parts render, and nothing when they do not parse (as always read).
        _ => Ok(stored_parts(parts, "")
            .map(|p| render_tools(&p))
            .unwrap_or_default()),
    }
}

/// Register [`PARTS_FUNCTION`], [`TOOLS_FUNCTION`], [`TOOLS_STRICT_FUNCTION`] and
/// [`SHOWN_FUNCTION`] on `conn`. Call once per connection,
/// before anything reads `messages_fts`'s content or changes a message (the triggers call
/// them). [`super::Store`] does; a program that opens a store with `rusqlite` itself (a test,
/// a benchmark) calls it to read `parts` as JSON or to search with snippets.
///
/// Errors: SQLite's, when a registration fails.
pub fn register(conn: &Connection) -> Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8
        | FunctionFlags::SQLITE_DETERMINISTIC
        | FunctionFlags::SQLITE_INNOCUOUS;
    conn.create_scalar_function(PARTS_FUNCTION, 2, flags, move |ctx| {
        // A damaged row reads as a message without parts (as JSON that did not parse always
        // did), so that one row does not stop every read and write of its session.
        let body = match ctx.get_raw(1) {
            ValueRef::Text(t) => String::from_utf8_lossy(t),
            _ => "".into(),
        };
        Ok(unpack(ctx.get_raw(0), &body).unwrap_or_else(|_| "[]".to_string()))
    })
    .map_err(super::db_err)?;
    conn.create_scalar_function(TOOLS_FUNCTION, 2, flags, move |ctx| {
        Ok(tools_of(ctx.get_raw(0), ctx.get_raw(1)))
    })
    .map_err(super::db_err)?;
    conn.create_scalar_function(SHOWN_FUNCTION, 1, flags, move |ctx| {
        Ok(shown(ctx.get_raw(0)))
    })
    .map_err(super::db_err)?;
    conn.create_scalar_function(TOOLS_STRICT_FUNCTION, 3, flags, move |ctx| {
        strict_tools_of(ctx.get_raw(0), ctx.get_raw(1)).map_err(|e| {
            let id = ctx.get::<i64>(2).unwrap_or_default();
            rusqlite::Error::UserFunctionError(
                format!(
                    "message {id}: {e}; `memtrail repair` takes its unreadable parts out of \
                     the store and rebuilds the full-text index, then it can be changed"
                )
                .into(),
            )
        })
    })
    .map_err(super::db_err)
}

/// A column's value, owned; text that is not UTF-8 (a damaged row) as a BLOB of its bytes,
/// which the caller leaves alone, instead of an error that would stop the whole slice.
fn owned(v: ValueRef<'_>) -> rusqlite::types::Value {
    use rusqlite::types::Value;
    match v {
        ValueRef::Text(t) => match std::str::from_utf8(t) {
            Ok(t) => Value::Text(t.to_owned()),
            Err(_) => Value::Blob(t.to_vec()),
        },
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
        ValueRef::Integer(i) => Value::Integer(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Null => Value::Null,
    }
}

/// `memtrail repair`'s step for rows written in an older form, one slice of at most 2,000 rows
/// after row `after`: rows written before schema 13 get their parts packed ([`pack`]) and
/// `tools_text` set to NULL where [`render_tools`] of the parts gives exactly the stored text (a
/// row pulled by sync whose text was capped apart keeps it); prose rows written before schema
/// 14 whose parts are their body as one text part keep nothing ([`StoredParts::Body`]); frames
/// written before schema 21, without the parts dictionary, are compressed again with it when
/// that makes them smaller (a frame written with it comes out the same and is left). What
/// the row holds does not change (`memtrail_parts` and `memtrail_tools` give the same text
/// before and after), so the triggers on `messages` (full-text queue, embedding queue, sync
/// outbox, activity) are dropped for the rewrite and created again from their own SQL, in
/// their order, in the same transaction: nothing is indexed, embedded or pushed again. A row
/// that cannot be read (not UTF-8, a damaged frame) is left as it is. Returns how many rows
/// were rewritten and the last row id looked at (`None`: no rows left).
///
/// Errors: SQLite's.
pub(super) fn pack_old_rows(w: &super::Writer<'_>, after: i64) -> Result<(u64, Option<i64>)> {
    use super::Db;
    use rusqlite::types::Value;
    const SLICE: i64 = 2_000;
    // Rows an older memtrail wrote: their parts are text (every row since keeps the text only
    // when it does not compress; those are looked at again, and left), a frame of a prose
    // message, summary or note (schema 13; since, only one with more than its body is one), or
    // a frame without the dictionary (before schema 21: every frame is looked at, a frame
    // does not say which it was written with).
    let rows: Vec<(i64, Value, Value, Value)> =
        w.tx.prepare_cached(
            "SELECT id, tools_text, parts_zdict, body FROM messages
             WHERE id > ?1 AND (typeof(parts_zdict) = 'text' OR length(parts_zdict) > 0)
             ORDER BY id LIMIT ?2",
        )
        .db()?
        .query_map([after, SLICE], |r| {
            Ok((
                r.get(0)?,
                owned(r.get_ref(1)?),
                owned(r.get_ref(2)?),
                owned(r.get_ref(3)?),
            ))
        })
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    let Some(&(last, ..)) = rows.last() else {
        return Ok((0, None));
    };
    let mut todo = Vec::new();
    for (id, tools, parts, body) in rows {
        let Value::Text(body) = body else { continue };
        // The stored frame's length (`None`: the parts are text).
        let (json, frame) = match parts {
            Value::Text(json) => (json, None),
            Value::Blob(b) => match unpack(ValueRef::Blob(&b), &body) {
                Ok(json) => (json, Some(b.len())),
                Err(_) => continue,
            },
            _ => continue,
        };
        let tools = match tools {
            Value::Text(t) => Some(t),
            Value::Null => None,
            _ => continue,
        };
        let had_tools = tools.is_some();
        let tools = tools.filter(|t| {
            serde_json::from_str::<Vec<Part>>(&json).map_or(true, |p| render_tools(&p) != *t)
        });
        let parts = pack(json, &body)?;
        let smaller = match &parts {
            StoredParts::Body => true,
            StoredParts::Packed(p) => frame.is_none_or(|n| p.len() < n),
            StoredParts::Text(_) => false,
        };
        if smaller || had_tools && tools.is_none() {
            todo.push((id, parts, tools));
        }
    }
    if todo.is_empty() {
        return Ok((0, Some(last)));
    }
    rewrite_rows(w, &todo)?;
    Ok((todo.len() as u64, Some(last)))
}

/// Rows' `parts_zdict` and `tools_text` set to the given values with the triggers on
/// `messages` dropped for the rewrite and created again from their own SQL, in their order, in
/// the same transaction: nothing is indexed, embedded or pushed again.
fn rewrite_rows(w: &super::Writer<'_>, rows: &[(i64, StoredParts, Option<String>)]) -> Result<()> {
    use super::Db;
    let triggers: Vec<(String, String)> =
        w.tx.prepare(
            "SELECT name, sql FROM sqlite_schema
             WHERE type = 'trigger' AND tbl_name = 'messages' ORDER BY rowid",
        )
        .db()?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    for (name, _) in &triggers {
        w.tx.execute_batch(&format!("DROP TRIGGER \"{name}\""))
            .db()?;
    }
    for (id, parts, tools) in rows {
        w.tx.prepare_cached("UPDATE messages SET parts_zdict = ?2, tools_text = ?3 WHERE id = ?1")
            .db()?
            .execute(rusqlite::params![id, parts, tools])
            .db()?;
    }
    for (_, sql) in &triggers {
        w.tx.execute_batch(sql).db()?;
    }
    Ok(())
}

/// `memtrail repair`'s second step, one slice of at most 2,000 rows after row `after`: the
/// rows whose parts cannot be read (a zstd frame damaged on disk: its checksum, its size or
/// its header wrong) are noted in the connection's temporary table `damaged_parts`; after the
/// last slice, in one transaction, their parts are taken out (`[]`: the row keeps its body
/// and any stored `tools_text`, and reads as it did, a message without parts) and the
/// full-text index is rebuilt, so that the messages can be deleted or changed again (the
/// triggers cannot give the index the old text of a damaged row: see
/// [`TOOLS_STRICT_FUNCTION`]) and no delete can come between the two. The triggers are set
/// aside for the rewrite, as [`pack_old_rows`] does. The slices write nothing; a repair cut
/// short leaves the store as it was. Returns how many rows were rewritten (by the last call)
/// and the last row id looked at (`None`: done).
///
/// Errors: SQLite's.
pub(super) fn clear_damaged_rows(w: &super::Writer<'_>, after: i64) -> Result<(u64, Option<i64>)> {
    use super::Db;
    const SLICE: i64 = 2_000;
    if after == 0 {
        w.tx.execute_batch(
            "DROP TABLE IF EXISTS temp.damaged_parts;
             CREATE TEMP TABLE damaged_parts (id INTEGER PRIMARY KEY);",
        )
        .db()?;
    }
    // (id, whether its parts are a frame that no longer decompresses), read in one pass.
    let rows: Vec<(i64, bool)> = w
        .tx
        .prepare_cached("SELECT id, parts_zdict FROM messages WHERE id > ?1 ORDER BY id LIMIT ?2")
        .db()?
        .query_map([after, SLICE], |r| {
            let parts = r.get_ref(1)?;
            let damaged =
                matches!(parts, ValueRef::Blob(b) if !b.is_empty()) && unpack(parts, "").is_err();
            Ok((r.get(0)?, damaged))
        })
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    if let Some(&(last, _)) = rows.last() {
        for (id, _) in rows.iter().filter(|(_, damaged)| *damaged) {
            w.tx.prepare_cached("INSERT INTO temp.damaged_parts (id) VALUES (?1)")
                .db()?
                .execute([id])
                .db()?;
        }
        return Ok((0, Some(last)));
    }
    let damaged: Vec<(i64, StoredParts, Option<String>)> =
        w.tx.prepare(
            "SELECT m.id, m.tools_text FROM temp.damaged_parts d JOIN messages m ON m.id = d.id
             ORDER BY m.id",
        )
        .db()?
        .query_map([], |r| {
            let tools = match r.get_ref(1)? {
                ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
                _ => None,
            };
            Ok((r.get(0)?, StoredParts::Text("[]".into()), tools))
        })
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    w.tx.execute_batch("DROP TABLE temp.damaged_parts").db()?;
    if !damaged.is_empty() {
        rewrite_rows(w, &damaged)?;
        super::repair::rebuild_index(w)?;
    }
    Ok((damaged.len() as u64, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_parts_come_back_byte_for_byte_and_short_ones_stay_text() {
        let short = r#"[{"type":"text","text":"hi"}]"#.to_string();
        assert_eq!(
            pack(short.clone(), "").unwrap(),
            StoredParts::Text(short.clone())
        );
        let long = format!(
            r#"[{{"type":"text","text":"{}"}}]"#,
            "the auth middleware returned 401 ".repeat(40)
        );
        let StoredParts::Packed(b) = pack(long.clone(), "").unwrap() else {
            panic!("a repetitive text is compressed")
        };
        assert!(b.len() < long.len() / 4, "{} of {}", b.len(), long.len());
        // A zstd frame: magic number 0xFD2FB528, little-endian (RFC 8878, 3.1.1).
        assert_eq!(&b[..4], &[0x28, 0xB5, 0x2F, 0xFD]);
        assert_eq!(unpack(ValueRef::Blob(&b), "").unwrap(), long);
        assert_eq!(unpack(ValueRef::Text(short.as_bytes()), "").unwrap(), short);
    }

    /// Parts as the agents write them: a Claude Code `Bash` call with its output, a Codex
    /// `shell` call, a Gemini CLI `read_file`, each short enough that most of a frame is the
    /// format's own strings.
    fn agent_parts() -> Vec<String> {
        vec![
            r#"[{"type":"text","text":"Running the tests."},{"type":"tool_call","id":"toolu_01Xb7Qm2","name":"Bash","tool":"shell","input":{"command":"cargo test -q","description":"Run the tests"},"output":"running 12 tests\n............\ntest result: ok. 12 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.31s","is_error":false,"exit_code":0}]"#.to_string(),
            r#"[{"type":"tool_call","id":"call_Qm2Xb7","name":"shell","tool":"shell","input":{"command":["bash","-lc","git status"],"workdir":"/home/dev/app","timeout_ms":120000},"output":"On branch main\nYour branch is up to date with 'origin/main'.\n\nnothing to commit, working tree clean\n","is_error":false,"exit_code":0}]"#.to_string(),
            r#"[{"type":"thinking","text":"I should read the config first."},{"type":"tool_call","id":"read_file-1764","name":"read_file","tool":"read","input":{"absolute_path":"/home/dev/app/config.toml"},"output":"[server]\nport = 8080\n","is_error":false}]"#.to_string(),
        ]
    }

    /// Frames written with the parts dictionary (schema 21) are smaller than without it, and
    /// frames written without it (schemas 13 to 20) read back byte for byte through the
    /// decompressor that holds it.
    #[test]
    fn the_dictionary_shrinks_frames_and_frames_without_it_still_read() {
        let mut plain = zstd::bulk::Compressor::new(LEVEL).unwrap();
        plain
            .set_parameter(zstd::stream::raw::CParameter::ChecksumFlag(true))
            .unwrap();
        let (mut with, mut without) = (0, 0);
        for json in agent_parts() {
            let StoredParts::Packed(b) = pack(json.clone(), "").unwrap() else {
                panic!("compressed: {json}")
            };
            assert_eq!(unpack(ValueRef::Blob(&b), "").unwrap(), json);
            let old = plain.compress(json.as_bytes()).unwrap();
            assert_eq!(unpack(ValueRef::Blob(&old), "").unwrap(), json);
            // Without the dictionary the new frame does not read back.
            assert!(zstd::bulk::decompress(&b, json.len()).is_err());
            with += b.len();
            without += old.len();
        }
        assert!(
            with * 4 < without * 3,
            "{with} bytes with it, {without} without"
        );
    }

    #[test]
    fn a_damaged_blob_is_an_error_not_a_guess() {
        let long = "x".repeat(500);
        let StoredParts::Packed(mut b) = pack(format!("\"{long}\""), "").unwrap() else {
            panic!()
        };
        let n = b.len();
        b.truncate(n - 3);
        let e = unpack(ValueRef::Blob(&b), "").unwrap_err().to_string();
        assert!(e.contains("damaged"), "{e}");
        let e = unpack(ValueRef::Blob(b"not zstd at all"), "")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a zstd frame"), "{e}");
        assert!(unpack(ValueRef::Integer(3), "").is_err());
        // One byte changed inside a frame: its content checksum no longer matches.
        let text: String = (0..400)
            .map(|i| format!("line {i} of the build log\n"))
            .collect();
        let StoredParts::Packed(mut b) = pack(format!("\"{text}\""), "").unwrap() else {
            panic!()
        };
        let mid = b.len() / 2;
        b[mid] ^= 0x20;
        assert!(unpack(ValueRef::Blob(&b), "").is_err());
    }

    /// `memtrail_shown` replaces NUL, U+0001 and U+0002 with U+FFFD and nothing else; text
    /// that is not UTF-8 keeps its other bytes (as a BLOB); NULL stays NULL. The index built
    /// from text with those characters stays consistent with the view (FTS5's integrity check
    /// tokenizes the view's text: the same tokens).
    #[test]
    fn the_view_shows_nul_and_the_highlight_marks_as_replacement_characters() {
        let c = Connection::open_in_memory().unwrap();
        register(&c).unwrap();
        let one =
            |sql: &str| -> rusqlite::types::Value { c.query_row(sql, [], |r| r.get(0)).unwrap() };
        use rusqlite::types::Value;
        assert_eq!(
            one(
                "SELECT memtrail_shown('a' || char(0) || 'b' || char(1) || char(2) || 'é ' || char(3))"
            ),
            Value::Text("a\u{FFFD}b\u{FFFD}\u{FFFD}é \u{3}".into())
        );
        assert_eq!(
            one("SELECT memtrail_shown('plain')"),
            Value::Text("plain".into())
        );
        assert_eq!(one("SELECT memtrail_shown(NULL)"), Value::Null);
        assert_eq!(
            one("SELECT memtrail_shown(CAST(x'61ff0062' AS TEXT))"),
            Value::Blob(b"a\xff\xef\xbf\xbdb".to_vec())
        );
        let d = tempfile::tempdir().unwrap();
        let s = super::super::Store::open(&d.path().join("a.db")).unwrap();
        s.conn
            .execute_batch(
                "INSERT INTO sessions (id, agent, external_id) VALUES (1, 'claude', 's');
                 INSERT INTO messages (session_id, ext_id, seq, role, kind, body, parts_zdict)
                     VALUES (1, 'm', 0, 'user', 'text',
                             'zebra' || char(0) || 'foo ' || char(1) || 'bar', x'');
                 INSERT INTO messages_fts (rowid, body, tools, cjk)
                     SELECT id, body, '', cjk FROM messages;
                 INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1);",
            )
            .unwrap();
        let snippet: String = s
            .conn
            .query_row(
                "SELECT snippet(messages_fts, 0, '[', ']', '…', 8) FROM messages_fts
                 WHERE messages_fts MATCH 'foo'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(snippet, "zebra\u{FFFD}[foo] \u{FFFD}bar");
    }

    #[test]
    fn the_sql_functions_read_both_forms_of_a_row() {
        let c = Connection::open_in_memory().unwrap();
        register(&c).unwrap();
        let parts = format!(
            r#"[{{"type":"text","text":"{}"}},{{"type":"tool_call","id":"c1","name":"Bash","tool":"shell","input":{{"command":"ls -la"}},"output":"total 0","is_error":false}}]"#,
            "prose ".repeat(30)
        );
        let packed = pack(parts.clone(), "").unwrap();
        assert!(matches!(packed, StoredParts::Packed(_)));
        let (json, tools): (String, String) = c
            .query_row(
                "SELECT memtrail_parts(?1, ''), memtrail_tools(NULL, ?1)",
                [&packed],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(json, parts);
        assert_eq!(tools, "Bash ls -la \ntotal 0\n");
        let kept: String = c
            .query_row("SELECT memtrail_tools('as indexed', ?1)", [&packed], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(kept, "as indexed");
        let damaged: String = c
            .query_row("SELECT memtrail_tools(NULL, x'28b52ffd00')", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(damaged, "");
        let damaged: String = c
            .query_row("SELECT memtrail_parts(x'28b52ffd00', '')", [], |r| r.get(0))
            .unwrap();
        assert_eq!(damaged, "[]");
    }

    #[test]
    fn a_body_alone_is_stored_as_nothing_and_read_back_byte_for_byte() {
        // The prose of a prompt: quotes, a backslash, a newline, non-Latin text and an emoji,
        // all escaped by serde_json as the parts' JSON has them.
        let body = "why did \"login\" break?\\ see\n日本語 🙂".to_string();
        let parts = vec![Part::Text { text: body.clone() }];
        let json = serde_json::to_string(&parts).unwrap();
        assert_eq!(pack_parts(&parts, &body).unwrap(), StoredParts::Body);
        assert_eq!(pack(json.clone(), &body).unwrap(), StoredParts::Body);
        assert_eq!(unpack(ValueRef::Blob(&[]), &body).unwrap(), json);
        assert_eq!(stored_parts(ValueRef::Blob(&[]), &body).unwrap(), parts);
        // An empty body is a body too.
        assert_eq!(
            pack_parts(
                &[Part::Text {
                    text: String::new()
                }],
                ""
            )
            .unwrap(),
            StoredParts::Body
        );
        // Anything else keeps its JSON (as text or a frame: the dictionary compresses even
        // short JSON): a text that is not the body, a second part, thinking.
        let kept = |parts: &[Part]| -> String {
            let stored = pack_parts(parts, &body).unwrap();
            assert_ne!(stored, StoredParts::Body);
            let v = match &stored {
                StoredParts::Text(t) => ValueRef::Text(t.as_bytes()),
                StoredParts::Packed(b) => ValueRef::Blob(b),
                StoredParts::Body => unreachable!(),
            };
            unpack(v, &body).unwrap()
        };
        let other = vec![Part::Text {
            text: format!("{body}."),
        }];
        assert_eq!(kept(&other), serde_json::to_string(&other).unwrap());
        let two = vec![
            Part::Thinking {
                text: "first".into(),
            },
            Part::Text { text: body.clone() },
        ];
        assert_eq!(kept(&two), serde_json::to_string(&two).unwrap());
        let thinking = [Part::Thinking { text: body.clone() }];
        assert_eq!(kept(&thinking), serde_json::to_string(&thinking).unwrap());
        // Through SQL: the empty BLOB gives the JSON from the body, no tool text, and an empty
        // BLOB is what the value binds as.
        let c = Connection::open_in_memory().unwrap();
        register(&c).unwrap();
        let (back, tools, kind, len): (String, String, String, i64) = c
            .query_row(
                "SELECT memtrail_parts(?1, ?2), memtrail_tools(NULL, ?1), typeof(?1), length(?1)",
                rusqlite::params![StoredParts::Body, body],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .unwrap();
        assert_eq!(
            (back.as_str(), tools.as_str(), kind.as_str(), len),
            (json.as_str(), "", "blob", 0)
        );
    }
}
