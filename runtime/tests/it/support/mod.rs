//! Shared by the events and continuity tests: read a transcript fixture with its agent's reader
//! and fold the reader's records into the session's messages, as the store does (merge by
//! message id, late tool results attached to their call, replace, rewind).

#![allow(dead_code)]

use memtrail_adapters::{Agent, Batch, Kind, Message, Part, Record, Role, Source, ToolCall};
use serde_json::json;
use std::path::{Path, PathBuf};

/// The repository's `fixtures/` folder.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

/// The messages of the session in `path`, in order, read whole by `agent`'s reader.
pub fn load(agent: Agent, path: &Path) -> Vec<Message> {
    let mut batch = Batch::default();
    match memtrail_adapters::source_for(agent, path) {
        Some(Source::Lines(mut reader)) => {
            let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            for line in bytes.split_inclusive(|b| *b == b'\n') {
                if line.ends_with(b"\n") {
                    reader.line(&line[..line.len() - 1], &mut batch);
                }
            }
            reader.finish(&mut batch);
        }
        Some(Source::Doc(mut reader)) => {
            let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            reader.read(&bytes, &mut batch);
        }
        _ => panic!("no reader for {}", path.display()),
    }
    fold(batch.records)
}

/// Fold records into messages with the store's semantics.
pub fn fold(records: Vec<Record>) -> Vec<Message> {
    let mut msgs: Vec<Message> = Vec::new();
    for r in records {
        match r {
            Record::Message(m) => match msgs.iter_mut().find(|x| x.id == m.id) {
                Some(x) => x.merge(m),
                None => msgs.push(m),
            },
            Record::Replace(m) => match msgs.iter_mut().find(|x| x.id == m.id) {
                Some(x) => *x = m,
                None => msgs.push(m),
            },
            Record::Rewind { message_id } => {
                if let Some(i) = msgs.iter().position(|x| x.id == message_id) {
                    msgs.truncate(i);
                }
            }
            Record::ToolResult {
                call_id,
                output,
                is_error,
                ..
            } => {
                for m in msgs.iter_mut().rev() {
                    if let Some(c) = m.parts.iter_mut().find_map(|p| match p {
                        Part::ToolCall(c) if c.id == call_id => Some(c),
                        _ => None,
                    }) {
                        c.output = Some(output.clone());
                        c.is_error = is_error;
                        break;
                    }
                }
            }
        }
    }
    msgs
}

/// A user prompt record `id` with text `t`.
pub fn text(id: &str, t: &str) -> Record {
    Record::Message(Message {
        id: id.into(),
        role: Role::User,
        kind: Kind::Text,
        parts: vec![Part::Text { text: t.into() }],
        timestamp: Some(1_780_000_000_000),
        model: None,
    })
}

/// An assistant record `id` with one shell call `call_id` running `command`, no output yet.
pub fn bash(id: &str, call_id: &str, command: &str) -> Record {
    Record::Message(Message {
        id: id.into(),
        role: Role::Assistant,
        kind: Kind::ToolCall,
        parts: vec![Part::ToolCall(ToolCall {
            id: call_id.into(),
            name: "Bash".into(),
            tool: "shell".into(),
            input: json!({"command": command}),
            output: None,
            is_error: false,
            exit_code: None,
        })],
        timestamp: Some(1_780_000_000_001),
        model: None,
    })
}

/// A `rusqlite` connection to the store at `path` with memtrail's SQL functions registered
/// (`memtrail_parts`, `memtrail_tools`: the triggers and the index's content view call them).
pub fn open_raw(path: impl AsRef<Path>) -> rusqlite::Result<rusqlite::Connection> {
    let c = rusqlite::Connection::open(path)?;
    memtrail_runtime::store::register_sql_functions(&c)
        .map_err(|e| rusqlite::Error::UserFunctionError(e.into()))?;
    Ok(c)
}
