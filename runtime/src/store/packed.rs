//! How a message's parts are kept (schema 13): `messages.parts` is the parts' JSON, compressed
//! with zstd when that makes it smaller, and the tool calls flattened for the full-text index
//! are not stored but rendered from the parts when they are read.
//!
//! - `parts`: a BLOB holding one zstd frame (RFC 8878, with its content checksum) of the JSON,
//!   or the JSON as TEXT when compressing saves less than an eighth (short messages) and in rows
//!   written before schema 13. `memtrail_parts(parts)` gives the JSON whatever the row's form
//!   (`[]` for a damaged frame, as JSON that does not parse always read).
//! - `tools_text` (`tools` before schema 13): NULL for a row whose index text is
//!   [`render_tools`] of its stored parts (every row written since schema 13, but a pulled or
//!   rescanned one whose parts do not parse, or whose text was capped apart by sync); TEXT
//!   otherwise (rows written before, until `memtrail repair` compresses them).
//!   `memtrail_tools(tools_text, parts)` gives the text either way; the full-text index reads it
//!   through the view `messages_text` (its external content, column `tools`), and the triggers
//!   that take a message out of the index pass it too, so that a message leaves the index with
//!   exactly the text it was indexed with. That holds as long as [`render_tools`] does not
//!   change (a test pins it).
//!
//! Both functions are registered on every connection of [`super::Store`] ([`register`]). A
//! connection without them (the `sqlite3` shell) reads every column, but not `messages_fts`'s
//! snippets, and fails to delete a message or change its text (the triggers call them).

use super::index_text::render_tools;
use crate::{Error, Result};
use memtrail_adapters::Part;
use rusqlite::Connection;
use rusqlite::ToSql;
use rusqlite::functions::FunctionFlags;
use rusqlite::types::{ToSqlOutput, ValueRef};
use std::cell::RefCell;

/// The SQL function that gives a row's parts as JSON text: `memtrail_parts(parts)`.
pub const PARTS_FUNCTION: &str = "memtrail_parts";
/// The SQL function that gives a row's index text of tool calls:
/// `memtrail_tools(tools_text, parts)`.
pub const TOOLS_FUNCTION: &str = "memtrail_tools";

/// zstd's level for `parts`. Levels 1 to 19 differ by under 4% on transcript JSON compressed
/// one message at a time (docs/benchmarks.md, "Parts compressed"); 3 is zstd's default and
/// compresses at several hundred MB/s.
const LEVEL: i32 = 3;

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

/// A message's `parts` as the store keeps them ([`pack`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredParts {
    /// The JSON itself (SQLite TEXT).
    Text(String),
    /// One zstd frame of the JSON (SQLite BLOB).
    Packed(Vec<u8>),
}

impl ToSql for StoredParts {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            StoredParts::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
            StoredParts::Packed(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

/// `parts` as stored: the JSON compressed when that makes it smaller by at least an eighth,
/// else the JSON itself.
///
/// Errors: none in practice (zstd's compression of a buffer in memory fails only when it
/// cannot allocate); [`Error::Invalid`] if it does.
pub(crate) fn pack(json: String) -> Result<StoredParts> {
    if json.len() < MIN_PACKED {
        return Ok(StoredParts::Text(json));
    }
    let packed = COMPRESSOR.with(|c| -> std::io::Result<Vec<u8>> {
        let mut c = c.borrow_mut();
        if c.is_none() {
            let mut new = zstd::bulk::Compressor::new(LEVEL)?;
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

/// A message's parts as stored: their JSON ([`Part`]'s serde form) through [`pack`].
///
/// Errors: a part does not serialize (JSON), and [`pack`]'s.
pub(crate) fn pack_parts(parts: &[Part]) -> Result<StoredParts> {
    pack(serde_json::to_string(parts)?)
}

/// The JSON of a stored `parts` value ([`pack`]'s output, or TEXT from an older row).
///
/// Errors: [`Error::Invalid`] for a BLOB that is not one whole zstd frame of UTF-8 text (a
/// damaged row), or for a value of another type.
pub(crate) fn unpack(v: ValueRef<'_>) -> Result<String> {
    match v {
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
            *d = Some(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?);
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

/// The parts of a stored row (`parts` as [`unpack`] reads it, then parsed).
///
/// Errors: [`unpack`]'s, and [`Error::Invalid`] when the JSON is not a list of parts.
pub(crate) fn stored_parts(v: ValueRef<'_>) -> Result<Vec<Part>> {
    let json = unpack(v)?;
    serde_json::from_str(&json)
        .map_err(|e| Error::Invalid(format!("a stored message's parts are not parts: {e}")))
}

/// The index text of a row's tool calls: `tools` when the row stores it, else [`render_tools`]
/// of its parts, or nothing when they cannot be read (a damaged row: its other columns are
/// still indexed, and since the result depends only on the row, the row leaves the index with
/// the text it was indexed with).
fn tools_of(tools: ValueRef<'_>, parts: ValueRef<'_>) -> String {
    match tools {
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        _ => stored_parts(parts)
            .map(|p| render_tools(&p))
            .unwrap_or_default(),
    }
}

/// Register [`PARTS_FUNCTION`] and [`TOOLS_FUNCTION`] on `conn`. Call once per connection,
/// before anything reads `messages_fts`'s content or changes a message (the triggers call
/// them). [`super::Store`] does; a program that opens a store with `rusqlite` itself (a test,
/// a benchmark) calls it to read `parts` as JSON or to search with snippets.
///
/// Errors: SQLite's, when a registration fails.
pub fn register(conn: &Connection) -> Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8
        | FunctionFlags::SQLITE_DETERMINISTIC
        | FunctionFlags::SQLITE_INNOCUOUS;
    conn.create_scalar_function(PARTS_FUNCTION, 1, flags, move |ctx| {
        // A damaged row reads as a message without parts (as JSON that did not parse always
        // did), so that one row does not stop every read and write of its session.
        Ok(unpack(ctx.get_raw(0)).unwrap_or_else(|_| "[]".to_string()))
    })
    .map_err(super::db_err)?;
    conn.create_scalar_function(TOOLS_FUNCTION, 2, flags, move |ctx| {
        Ok(tools_of(ctx.get_raw(0), ctx.get_raw(1)))
    })
    .map_err(super::db_err)
}

/// `memtrail repair`'s step for rows written before schema 13, one slice of at most 2,000 rows
/// after row `after`: `parts` compressed ([`pack`]) and `tools_text` set to NULL where
/// [`render_tools`] of the parts gives exactly the stored text (a row pulled by sync whose text
/// was capped apart keeps it). What the row holds does not change (`memtrail_parts` and
/// `memtrail_tools` give the same text before and after), so the triggers on `messages`
/// (full-text queue, embedding queue, sync outbox, activity) are dropped for the rewrite and
/// created again from their own SQL, in their order, in the same transaction: nothing is
/// indexed, embedded or pushed again. A row that cannot be read as UTF-8 text is left as it is.
/// Returns how many rows were rewritten and the last row id looked at (`None`: no rows left).
///
/// Errors: SQLite's.
pub(super) fn pack_old_rows(w: &super::Writer<'_>, after: i64) -> Result<(u64, Option<i64>)> {
    use super::Db;
    use rusqlite::types::Value;
    const SLICE: i64 = 2_000;
    // Rows an older memtrail wrote: their parts are text (every row since keeps the text only
    // when it does not compress; those are looked at again, and left).
    let rows: Vec<(i64, Value, Value)> =
        w.tx.prepare_cached(
            "SELECT id, tools_text, parts FROM messages
             WHERE id > ?1 AND typeof(parts) = 'text' ORDER BY id LIMIT ?2",
        )
        .db()?
        .query_map([after, SLICE], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    let Some(&(last, _, _)) = rows.last() else {
        return Ok((0, None));
    };
    let mut todo = Vec::new();
    for (id, tools, parts) in rows {
        let Value::Text(json) = parts else { continue };
        let tools = match tools {
            Value::Text(t) => Some(t),
            Value::Null => None,
            _ => continue,
        };
        let had_tools = tools.is_some();
        let tools = tools.filter(|t| {
            serde_json::from_str::<Vec<Part>>(&json).map_or(true, |p| render_tools(&p) != *t)
        });
        let parts = pack(json)?;
        if matches!(parts, StoredParts::Packed(_)) || had_tools && tools.is_none() {
            todo.push((id, parts, tools));
        }
    }
    if todo.is_empty() {
        return Ok((0, Some(last)));
    }
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
    for (id, parts, tools) in &todo {
        w.tx.prepare_cached("UPDATE messages SET parts = ?2, tools_text = ?3 WHERE id = ?1")
            .db()?
            .execute(rusqlite::params![id, parts, tools])
            .db()?;
    }
    for (_, sql) in &triggers {
        w.tx.execute_batch(sql).db()?;
    }
    Ok((todo.len() as u64, Some(last)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_parts_come_back_byte_for_byte_and_short_ones_stay_text() {
        let short = r#"[{"type":"text","text":"hi"}]"#.to_string();
        assert_eq!(
            pack(short.clone()).unwrap(),
            StoredParts::Text(short.clone())
        );
        let long = format!(
            r#"[{{"type":"text","text":"{}"}}]"#,
            "the auth middleware returned 401 ".repeat(40)
        );
        let StoredParts::Packed(b) = pack(long.clone()).unwrap() else {
            panic!("a repetitive text is compressed")
        };
        assert!(b.len() < long.len() / 4, "{} of {}", b.len(), long.len());
        // A zstd frame: magic number 0xFD2FB528, little-endian (RFC 8878, 3.1.1).
        assert_eq!(&b[..4], &[0x28, 0xB5, 0x2F, 0xFD]);
        assert_eq!(unpack(ValueRef::Blob(&b)).unwrap(), long);
        assert_eq!(unpack(ValueRef::Text(short.as_bytes())).unwrap(), short);
    }

    #[test]
    fn a_damaged_blob_is_an_error_not_a_guess() {
        let long = "x".repeat(500);
        let StoredParts::Packed(mut b) = pack(format!("\"{long}\"")).unwrap() else {
            panic!()
        };
        let n = b.len();
        b.truncate(n - 3);
        let e = unpack(ValueRef::Blob(&b)).unwrap_err().to_string();
        assert!(e.contains("damaged"), "{e}");
        let e = unpack(ValueRef::Blob(b"not zstd at all"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a zstd frame"), "{e}");
        assert!(unpack(ValueRef::Integer(3)).is_err());
        // One byte changed inside a frame: its content checksum no longer matches.
        let text: String = (0..400)
            .map(|i| format!("line {i} of the build log\n"))
            .collect();
        let StoredParts::Packed(mut b) = pack(format!("\"{text}\"")).unwrap() else {
            panic!()
        };
        let mid = b.len() / 2;
        b[mid] ^= 0x20;
        assert!(unpack(ValueRef::Blob(&b)).is_err());
    }

    #[test]
    fn the_sql_functions_read_both_forms_of_a_row() {
        let c = Connection::open_in_memory().unwrap();
        register(&c).unwrap();
        let parts = format!(
            r#"[{{"type":"text","text":"{}"}},{{"type":"tool_call","id":"c1","name":"Bash","tool":"shell","input":{{"command":"ls -la"}},"output":"total 0","is_error":false}}]"#,
            "prose ".repeat(30)
        );
        let packed = pack(parts.clone()).unwrap();
        assert!(matches!(packed, StoredParts::Packed(_)));
        let (json, tools): (String, String) = c
            .query_row(
                "SELECT memtrail_parts(?1), memtrail_tools(NULL, ?1)",
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
            .query_row("SELECT memtrail_parts(x'28b52ffd00')", [], |r| r.get(0))
            .unwrap();
        assert_eq!(damaged, "[]");
    }
}
