//! Helpers shared by the reader tests (every agent): feed a transcript to a reader the way the runtime
//! does, and a small in-memory model of the store's merge semantics (`runtime::store::apply`).

#![allow(dead_code)]

use memtrail_adapters::claude::ClaudeReader;
use memtrail_adapters::{Batch, LineReader, Message, ParseStats, Part, Record, SessionMeta};
use std::path::{Path, PathBuf};

/// The project's own fixtures (`fixtures/claude`).
pub fn own_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/claude")
}

/// The complete lines of a transcript, without their `\n` (a last line without `\n` counts as
/// complete, as for a finished file). Empty lines are dropped, as the runtime does.
pub fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect()
}

/// One reader instance over `lines`, then `finish`.
pub fn read(lines: &[&[u8]]) -> Batch {
    let mut reader = ClaudeReader::new();
    let mut batch = Batch::default();
    for l in lines {
        reader.line(l, &mut batch);
    }
    reader.finish(&mut batch);
    batch
}

/// Read a whole file in one pass.
pub fn read_file(path: &Path) -> Batch {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    read(&lines(&bytes))
}

/// The messages of a batch, in order (tool results that were not attached are ignored).
pub fn messages(batch: &Batch) -> Vec<&Message> {
    batch
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Message(m) => Some(m),
            _ => None,
        })
        .collect()
}

/// An in-memory store with the runtime's merge semantics: a message record is inserted, or
/// merged (`Message::merge`) into the stored message with the same id; a tool result is
/// attached to the stored call with that id (or kept as an orphan).
#[derive(Debug, Default, PartialEq)]
pub struct Store {
    pub messages: Vec<Message>,
    pub orphans: Vec<(String, String, bool)>,
    pub meta: SessionMeta,
    pub stats: ParseStats,
}

impl Store {
    pub fn apply(&mut self, batch: Batch) {
        self.meta.absorb(batch.meta);
        self.stats.add(batch.stats);
        for rec in batch.records {
            match rec {
                Record::Message(m) => match self.messages.iter_mut().find(|s| s.id == m.id) {
                    Some(stored) => stored.merge(m),
                    None => self.messages.push(m),
                },
                Record::Replace(m) => match self.messages.iter_mut().find(|s| s.id == m.id) {
                    Some(stored) => *stored = m,
                    None => self.messages.push(m),
                },
                Record::Rewind { message_id } => {
                    if let Some(i) = self.messages.iter().position(|m| m.id == message_id) {
                        self.messages.truncate(i);
                    }
                }
                Record::ToolResult {
                    call_id,
                    output,
                    is_error,
                    exit_code,
                    ..
                } => {
                    let call = self.messages.iter_mut().find_map(|m| {
                        m.parts.iter_mut().find_map(|p| match p {
                            Part::ToolCall(c) if c.id == call_id => Some(c),
                            _ => None,
                        })
                    });
                    match call {
                        Some(c) => {
                            c.output = Some(output);
                            c.exit_code = exit_code;
                            c.is_error = is_error;
                        }
                        None => self.orphans.push((call_id, output, is_error)),
                    }
                }
            }
        }
    }

    /// Read `lines` in consecutive pieces that end at `cuts` (line indexes), one Claude reader
    /// per piece.
    pub fn read_in_pieces(lines: &[&[u8]], cuts: &[usize]) -> Store {
        Store::read_in_pieces_with(&|| Box::new(ClaudeReader::new()), lines, cuts)
    }

    /// Read `lines` in consecutive pieces that end at `cuts`, one reader from `make` per piece,
    /// handing each reader the state the previous one saved (as the runtime does through the
    /// cursor).
    pub fn read_in_pieces_with(
        make: &dyn Fn() -> Box<dyn LineReader>,
        lines: &[&[u8]],
        cuts: &[usize],
    ) -> Store {
        let mut store = Store::default();
        let mut start = 0;
        let mut state: Option<serde_json::Value> = None;
        for &cut in cuts.iter().chain(std::iter::once(&lines.len())) {
            let mut reader = make();
            if let Some(s) = &state {
                reader.restore_state(s);
            }
            let mut batch = Batch::default();
            for l in &lines[start..cut] {
                reader.line(l, &mut batch);
            }
            reader.finish(&mut batch);
            state = reader.save_state();
            store.apply(batch);
            start = cut;
        }
        store
    }
}

/// Assert that reading `bytes` in one pass stores the same thing as reading it split at every
/// single line boundary, and as reading every line with its own reader.
pub fn assert_split_equivalence(name: &str, bytes: &[u8]) {
    assert_split_equivalence_with(&|| Box::new(ClaudeReader::new()), name, bytes)
}

/// [`assert_split_equivalence`] for any line reader.
pub fn assert_split_equivalence_with(
    make: &dyn Fn() -> Box<dyn LineReader>,
    name: &str,
    bytes: &[u8],
) {
    let lines = lines(bytes);
    let whole = Store::read_in_pieces_with(make, &lines, &[]);
    assert!(
        whole.orphans.is_empty(),
        "{name}: one pass left orphan results"
    );
    for cut in 0..=lines.len() {
        let split = Store::read_in_pieces_with(make, &lines, &[cut]);
        assert_eq!(split, whole, "{name}: split at line {cut} differs");
    }
    let every: Vec<usize> = (1..lines.len()).collect();
    let each = Store::read_in_pieces_with(make, &lines, &every);
    assert_eq!(each, whole, "{name}: one reader per line differs");
}

/// A short description of a message's parts: `text`, `thinking`, the tool name of a call
/// (`Bash`), or `result`.
pub fn shape(m: &Message) -> Vec<String> {
    m.parts
        .iter()
        .map(|p| match p {
            Part::Text { .. } => "text".to_string(),
            Part::Thinking { .. } => "thinking".to_string(),
            Part::ToolCall(c) => c.name.clone(),
            Part::ToolResult { .. } => "result".to_string(),
        })
        .collect()
}

/// The text of the `i`th part (text or thinking).
pub fn part_text(m: &Message, i: usize) -> &str {
    match &m.parts[i] {
        Part::Text { text } | Part::Thinking { text } => text,
        other => panic!("part {i} of {} is not text: {other:?}", m.id),
    }
}

/// All recursive files under `dir`, relative, sorted.
pub fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).expect("prefix").to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// Copy a directory tree.
pub use memtrail_testkit::copy_tree;

/// A small deterministic pseudo-random generator for the robustness tests (no extra
/// dev-dependency): Knuth's MMIX linear congruential constants, the high 31 bits.
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}
