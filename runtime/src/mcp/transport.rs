//! The MCP server's stdio transport: newline-delimited JSON-RPC 2.0 (the MCP stdio transport,
//! <https://modelcontextprotocol.io/specification/2025-06-18/basic/transports#stdio>) with
//! bounded work and an answer to every request.
//!
//! - **Bounded reading.** A line is read only when one of [`MAX_IN_FLIGHT`] slots is free; a
//!   request holds its slot until its response has been written to stdout. A client that sends
//!   thousands of requests without reading the answers therefore stops being read (the pipe
//!   fills), instead of the server holding every request and every result in memory.
//! - **Bounded lines.** A line longer than [`MAX_REQUEST_BYTES`] is never held whole: its first
//!   [`MAX_REQUEST_BYTES`] bytes are kept (to find the request's `id`), the rest is skipped.
//! - **Every request gets an answer.** A line that is not JSON (also: truncated JSON, invalid
//!   UTF-8, a lone UTF-16 surrogate escape, nesting deeper than 128) gets a `-32700` (parse
//!   error) reply; valid JSON that is not a JSON-RPC 2.0 message (a batch array, a scalar, no
//!   `method`, a wrong `jsonrpc`), a line over the size limit, or a second request with the id
//!   of one still in progress gets `-32600` (invalid request). The reply carries the request's
//!   `id` when the start of the line names one at the top level (found by a scan that needs no
//!   valid JSON after it), else `null`. Notifications (no `id`) are never answered, as JSON-RPC
//!   requires; a bad one is only logged to stderr.
//! - **Bounded replies.** A reply longer than [`MAX_REPLY_BYTES`] is replaced by a `-32603`
//!   error for its id (tool results are kept far below it by the tools themselves).
//! - `notifications/cancelled` is not passed on: the tools are synchronous and short, their
//!   answer is sent anyway, and the MCP specification tells the client to ignore an answer
//!   that arrives after its cancellation. A request's slot is freed by its answer alone.

use rmcp::RoleServer;
use rmcp::model::{ContentBlock, ErrorData, JsonRpcMessage, RequestId, ServerResult};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Requests read and not yet answered, at most.
pub const MAX_IN_FLIGHT: usize = 8;
/// Longest request line, in bytes (without its `\n`): 1 MiB.
pub const MAX_REQUEST_BYTES: usize = 1 << 20;
/// Longest reply line, in bytes (without its `\n`): 64 KiB.
pub const MAX_REPLY_BYTES: usize = 64 * 1024;

/// JSON-RPC error codes (<https://www.jsonrpc.org/specification#error_object>).
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const INTERNAL_ERROR: i64 = -32603;

type Writer = Arc<tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;
type InFlight = Arc<Mutex<HashMap<RequestId, OwnedSemaphorePermit>>>;

/// The transport over a reader (stdin) and a writer (stdout).
pub struct BoundedLines<R> {
    read: BufReader<R>,
    /// The line being read (kept across a cancelled `receive`), at most
    /// [`MAX_REQUEST_BYTES`] bytes.
    line: Vec<u8>,
    /// Bytes of the current line beyond what `line` holds.
    overflow: usize,
    write: Writer,
    slots: Arc<Semaphore>,
    in_flight: InFlight,
}

impl<R: AsyncRead + Unpin + Send> BoundedLines<R> {
    pub fn new(read: R, write: impl AsyncWrite + Send + Unpin + 'static) -> Self {
        Self {
            read: BufReader::with_capacity(64 * 1024, read),
            line: Vec::new(),
            overflow: 0,
            write: Arc::new(tokio::sync::Mutex::new(Box::new(write))),
            slots: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            in_flight: Arc::default(),
        }
    }

    /// Read up to the next `\n` into `self.line` (at most [`MAX_REQUEST_BYTES`] of it, the rest
    /// counted in `self.overflow`). `false` at the end of input. Cancellation-safe: nothing is
    /// consumed from the reader that is not recorded in `self`.
    async fn read_line(&mut self) -> std::io::Result<bool> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                // A last line without `\n` is still a line.
                return Ok(!self.line.is_empty() || self.overflow > 0);
            }
            let newline = memchr::memchr(b'\n', available);
            let take = newline.unwrap_or(available.len());
            let room = MAX_REQUEST_BYTES - self.line.len();
            let keep = take.min(room);
            self.line.extend_from_slice(&available[..keep]);
            self.overflow += take - keep;
            let consumed = take + usize::from(newline.is_some());
            self.read.consume(consumed);
            if newline.is_some() {
                return Ok(true);
            }
        }
    }

    /// Write `reply` (a JSON-RPC error) in a task of its own, holding `permit` until written:
    /// a `receive` dropped by the service loop can never leave half a line on stdout.
    fn reply(&self, reply: Value, permit: OwnedSemaphorePermit) {
        let write = self.write.clone();
        tokio::spawn(async move {
            let mut line = serde_json::to_vec(&reply).unwrap_or_default();
            line.push(b'\n');
            let mut w = write.lock().await;
            let _ = w.write_all(&line).await;
            let _ = w.flush().await;
            drop(permit);
        });
    }
}

/// A JSON-RPC error reply, its message redacted (as [`redact_errors`]).
pub fn error_reply(id: Value, code: i64, message: &str) -> Value {
    let message = crate::redact::redact(message);
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Every error text of a message the server sends redacted ([`crate::redact`]): a JSON-RPC
/// error's message and data (an unknown tool or method), and the text of a tool result with
/// `isError` (rmcp answers a call whose arguments do not parse, a value of the wrong type or an
/// unknown field, with such a result). These quote what the client sent, and the agent's
/// transcript keeps them. The tools' own errors are redacted already (`tool_error`): a second
/// pass changes nothing.
fn redact_errors(item: &mut TxJsonRpcMessage<RoleServer>) {
    match item {
        JsonRpcMessage::Error(e) => redact_error(&mut e.error),
        JsonRpcMessage::Response(r) => {
            if let ServerResult::CallToolResult(c) = &mut r.result
                && c.is_error == Some(true)
            {
                for block in &mut c.content {
                    if let ContentBlock::Text(t) = block {
                        crate::redact::redact_string(&mut t.text);
                    }
                }
            }
        }
        _ => {}
    }
}

/// A JSON-RPC error's message and data redacted ([`redact_errors`]).
fn redact_error(error: &mut ErrorData) {
    if let std::borrow::Cow::Owned(m) = crate::redact::redact(&error.message) {
        error.message = m.into();
    }
    if let Some(data) = error.data.as_mut() {
        crate::redact::redact_json(data);
    }
}

/// What one line asks for.
enum Classified {
    /// Whitespace only: nothing to answer.
    Blank,
    /// A message for the service.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// A malformed notification: logged, never answered.
    Ignore(String),
    /// An error reply.
    Reply(Value),
}

fn classify(line: &[u8], overflow: usize) -> Classified {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if overflow == 0 && line.iter().all(u8::is_ascii_whitespace) {
        return Classified::Blank;
    }
    if overflow > 0 {
        let id = scan_id(line).unwrap_or(Value::Null);
        return Classified::Reply(error_reply(
            id,
            INVALID_REQUEST,
            &format!(
                "request too large: {} bytes, the limit is {MAX_REQUEST_BYTES} bytes per line",
                line.len() + overflow
            ),
        ));
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            let what = match std::str::from_utf8(line) {
                Err(u) => format!("invalid UTF-8 at byte {}", u.valid_up_to()),
                Ok(_) => e.to_string(),
            };
            return Classified::Reply(error_reply(
                scan_id(line).unwrap_or(Value::Null),
                PARSE_ERROR,
                &format!("parse error: {what}"),
            ));
        }
    };
    let Value::Object(obj) = &value else {
        let why = if value.is_array() {
            "invalid request: batches (JSON arrays) are not supported; send one message per line"
        } else {
            "invalid request: a JSON-RPC message is a JSON object"
        };
        return Classified::Reply(error_reply(Value::Null, INVALID_REQUEST, why));
    };
    let id = obj.get("id").cloned();
    let valid_id = id
        .clone()
        .filter(|i| i.is_string() || i.as_i64().is_some())
        .unwrap_or(Value::Null);
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Classified::Reply(error_reply(
            valid_id,
            INVALID_REQUEST,
            "invalid request: `jsonrpc` must be \"2.0\"",
        ));
    }
    let method = obj.get("method").and_then(Value::as_str).map(str::to_owned);
    if method.as_deref() == Some("notifications/cancelled") && id.is_none() {
        return Classified::Ignore("notifications/cancelled (answers are sent anyway)".into());
    }
    if id.is_some() && valid_id.is_null() {
        return Classified::Reply(error_reply(
            Value::Null,
            INVALID_REQUEST,
            "invalid request: `id` must be a string or an integer",
        ));
    }
    match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value) {
        Ok(m) => Classified::Message(Box::new(m)),
        Err(e) => match (id, method) {
            (None, Some(m)) => Classified::Ignore(format!("notification {m}: {e}")),
            (_, None) => Classified::Reply(error_reply(
                valid_id,
                INVALID_REQUEST,
                "invalid request: no `method` (and not a response)",
            )),
            (Some(_), Some(_)) => Classified::Reply(error_reply(
                valid_id,
                INVALID_REQUEST,
                &format!("invalid request: {e}"),
            )),
        },
    }
}

/// The `id` member of the JSON object that `line` starts with, when it is a string or an
/// integer and comes before anything malformed: a scan of the top level that skips the other
/// members' values (strings, and arrays and objects by bracket depth) without parsing them, so
/// it works on a truncated line, on invalid UTF-8 inside another member, and at any nesting
/// depth. `None` when the line does not start with an object or the scan finds no such `id`.
pub fn scan_id(line: &[u8]) -> Option<Value> {
    let mut i = 0;
    let ws = |i: &mut usize| {
        while *i < line.len() && line[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    // The end (exclusive) of the string starting at `i` (a `"`).
    let string_end = |mut i: usize| -> Option<usize> {
        i += 1;
        while i < line.len() {
            match line[i] {
                b'\\' => i += 2,
                b'"' => return Some(i + 1),
                _ => i += 1,
            }
        }
        None
    };
    ws(&mut i);
    if line.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        ws(&mut i);
        if line.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(i)?;
        let key: String = serde_json::from_slice(&line[i..key_end]).ok()?;
        i = key_end;
        ws(&mut i);
        if line.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        ws(&mut i);
        let start = i;
        match *line.get(i)? {
            b'"' => i = string_end(i)?,
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *line.get(i)? {
                        b'"' => {
                            i = string_end(i)?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                i += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            _ => {
                while i < line.len() && !matches!(line[i], b',' | b'}' | b' ' | b'\t' | b'\r') {
                    i += 1;
                }
                if i == line.len() {
                    return None; // a number may be cut
                }
            }
        }
        if key == "id" {
            let v: Value = serde_json::from_slice(&line[start..i]).ok()?;
            return (v.is_string() || v.as_i64().is_some()).then_some(v);
        }
        ws(&mut i);
        match line.get(i)? {
            b',' => i += 1,
            _ => return None,
        }
    }
}

fn reply_id(m: &TxJsonRpcMessage<RoleServer>) -> Option<RequestId> {
    match m {
        JsonRpcMessage::Response(r) => Some(r.id.clone()),
        JsonRpcMessage::Error(e) => e.id.clone(),
        _ => None,
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> rmcp::transport::Transport<RoleServer>
    for BoundedLines<R>
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        let in_flight = self.in_flight.clone();
        let mut item = item;
        redact_errors(&mut item);
        async move {
            let id = reply_id(&item);
            // Transcript text in the reply reaches the agent's screen too: DEL, C1 and the
            // reordering characters as `\u` escapes, the same values for the client (the
            // size checked below is the escaped one).
            let mut line = crate::safe_text::json_escaped(
                String::from_utf8(serde_json::to_vec(&item).map_err(std::io::Error::other)?)
                    .map_err(std::io::Error::other)?,
            )
            .into_bytes();
            drop(item);
            if line.len() > MAX_REPLY_BYTES
                && let Some(id) = &id
            {
                let msg = format!(
                    "internal error: the reply would have {} bytes, over the limit of {MAX_REPLY_BYTES}; ask for less (a smaller limit or page)",
                    line.len()
                );
                line = serde_json::to_vec(&error_reply(
                    serde_json::to_value(id).unwrap_or(Value::Null),
                    INTERNAL_ERROR,
                    &msg,
                ))
                .map_err(std::io::Error::other)?;
            }
            line.push(b'\n');
            let result = {
                let mut w = write.lock().await;
                match w.write_all(&line).await {
                    Ok(()) => w.flush().await,
                    Err(e) => Err(e),
                }
            };
            // The request's slot is free once its answer is out (or could not be written).
            if let Some(id) = id {
                in_flight.lock().map(|mut m| m.remove(&id)).ok();
            }
            result
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let permit = self.slots.clone().acquire_owned().await.ok()?;
            match self.read_line().await {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    eprintln!("memtrail mcp: reading stdin: {e}");
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let overflow = std::mem::take(&mut self.overflow);
            let classified = classify(&line, overflow);
            drop(line);
            match classified {
                Classified::Blank => {}
                Classified::Ignore(why) => eprintln!("memtrail mcp: ignored {why}"),
                Classified::Reply(reply) => self.reply(reply, permit),
                Classified::Message(m) => {
                    if let JsonRpcMessage::Request(r) = &*m {
                        let mut in_flight = self.in_flight.lock().ok()?;
                        if in_flight.contains_key(&r.id) {
                            drop(in_flight);
                            let id = serde_json::to_value(&r.id).unwrap_or(Value::Null);
                            self.reply(
                                error_reply(
                                    id,
                                    INVALID_REQUEST,
                                    "invalid request: a request with this id is still in progress",
                                ),
                                permit,
                            );
                            continue;
                        }
                        in_flight.insert(r.id.clone(), permit);
                    }
                    return Some(*m);
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.slots.close();
        let mut w = self.write.lock().await;
        w.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_id_finds_the_top_level_id_of_broken_lines() {
        let cases: [(&[u8], Option<Value>); 10] = [
            (
                br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"#,
                Some(json!(7)),
            ),
            (br#" { "id" : "a\"b" , "x": 1"#, Some(json!("a\"b"))),
            (
                br#"{"params":{"id":1,"s":"}"},"id":-3,"method":"#,
                Some(json!(-3)),
            ),
            (b"{\"x\":\"\xff\xfe\",\"id\":9,", Some(json!(9))),
            (br#"{"params":[[[[[[[]]]]]]],"id":"q""#, Some(json!("q"))),
            // A number at the very end may be cut: not trusted.
            (br#"{"id":12"#, None),
            (br#"{"id":1.5,"m":1}"#, None),
            (br#"{"id":null,"m":1}"#, None),
            (br#"[{"id":1}]"#, None),
            (br#"{"params":{"id":1}"#, None),
        ];
        for (line, want) in cases {
            assert_eq!(scan_id(line), want, "{}", String::from_utf8_lossy(line));
        }
    }
}
