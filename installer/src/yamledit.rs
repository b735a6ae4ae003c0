//! Format-preserving edits of a YAML file (Continue's `config.yaml`): memtrail's named item in a
//! top-level block list (`mcpServers:` / `- name: memtrail`).
//!
//! There is no format-preserving YAML editor in Rust, and memtrail needs very little of one:
//! saphyr-parser (a YAML 1.2 parser that gives each event its span) parses the whole file, which
//! both refuses a malformed file (line and column, nothing written) and locates the list and its
//! items. The edits are then made on the text, by whole lines:
//!
//! - **install** appends memtrail's item after the list's last item, with the indentation of the
//!   list's first `- `; with no list key at all, it appends `<list_key>:` and the item at the end
//!   of the file (adding a final newline the file lacked, recorded); an item of memtrail's name
//!   that differs (another binary) is replaced whole, its original text recorded;
//! - **uninstall** removes memtrail's item's lines (from its `- ` line to the line of its last
//!   value), then the list key's line when install created it and nothing else is left in it,
//!   puts a replaced item's original text back, and takes away a final newline install added.
//!
//! So install then uninstall gives back the original bytes, comments and blank lines included.
//! Only block lists are edited: a flow list (`mcpServers: []`), a list key holding something
//! else, a file of several documents or whose top level is not a block mapping is refused as a
//! [`InstallError::Conflict`] and left untouched. A missing file is never created (Continue's
//! `cn` sets up its own `config.yaml` on first run). Line endings follow the file's (CRLF when
//! its first line has one); a byte order mark is kept.

use crate::action::Action;
use crate::edit::{Computed, Found, History, decode};
use crate::error::InstallError;
use crate::spec::{TomlValue, YamlItem};
use crate::state::{EntryRecord, FileState};
use saphyr_parser::{Event, Parser, ScalarStyle};
use std::path::Path;

/// A node of the parsed document, with its byte range in the text.
#[derive(Debug)]
struct Node {
    kind: Kind,
    /// The byte where the node starts (for a block mapping: its first key).
    start: usize,
    /// The byte after its last character (for a block collection: its last value's end).
    end: usize,
}

#[derive(Debug)]
enum Kind {
    /// A scalar's value, and whether it is plain and empty (`key:` with nothing after it).
    Scalar(String, bool),
    Seq {
        flow: bool,
        items: Vec<Node>,
    },
    Map {
        flow: bool,
        pairs: Vec<(Node, Node)>,
    },
    Alias,
}

impl Node {
    fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::Scalar(s, _) => Some(s),
            _ => None,
        }
    }

    fn get(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Map { pairs, .. } => pairs
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    fn matches(&self, want: &TomlValue) -> bool {
        match (want, &self.kind) {
            (TomlValue::Str(s), Kind::Scalar(v, _)) => v == s,
            (TomlValue::Strings(xs), Kind::Seq { items, .. }) => {
                items.len() == xs.len()
                    && items
                        .iter()
                        .zip(xs)
                        .all(|(n, x)| n.as_str() == Some(x.as_str()))
            }
            _ => false,
        }
    }
}

/// A parsed YAML file: its text (without a byte order mark) and the top-level node (`None`: an
/// empty document, or only comments).
pub(crate) struct Parsed {
    bom: bool,
    text: String,
    root: Option<Node>,
}

/// Parse a YAML file's bytes (`None`: missing, parsed as empty).
///
/// Errors: not UTF-8 or not YAML ([`InstallError::Parse`], 1-based line and column).
pub(crate) fn parse(path: &Path, bytes: Option<&[u8]>) -> Result<Parsed, InstallError> {
    let text = decode(path, bytes.unwrap_or(b""))?;
    let (bom, body) = match text.strip_prefix('\u{feff}') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let root = parse_text(path, body)?;
    Ok(Parsed {
        bom,
        text: body.to_string(),
        root,
    })
}

/// The top-level node of `text`, or `None` for an empty document.
///
/// Errors: a syntax error ([`InstallError::Parse`]); several documents
/// ([`InstallError::Conflict`]).
fn parse_text(path: &Path, text: &str) -> Result<Option<Node>, InstallError> {
    // saphyr's markers count characters; the edits need bytes.
    let offs: Vec<usize> = text
        .char_indices()
        .map(|(b, _)| b)
        .chain(std::iter::once(text.len()))
        .collect();
    let byte = |i: usize| offs[i.min(offs.len() - 1)];
    let mut parser = Parser::new_from_str(text);
    // Open collections: (node, pending key of a mapping).
    let mut stack: Vec<(Node, Option<Node>)> = Vec::new();
    let mut root: Option<Node> = None;
    let mut docs = 0;
    while let Some(ev) = parser.next_event() {
        let (ev, span) = ev.map_err(|e| {
            let m = e.marker();
            InstallError::Parse {
                path: path.to_path_buf(),
                line: m.line(),
                col: m.col() + 1,
                msg: e.info().to_string(),
            }
        })?;
        let (start, end) = (byte(span.start.index()), byte(span.end.index()));
        let node = match ev {
            Event::DocumentStart(_) => {
                docs += 1;
                if docs > 1 {
                    return Err(conflict(
                        path,
                        &["(top level)".into()],
                        "a single YAML document",
                    ));
                }
                continue;
            }
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                let flow = matches!(text.as_bytes().get(start), Some(b'[' | b'{'));
                let kind = match ev {
                    Event::SequenceStart(..) => Kind::Seq {
                        flow,
                        items: Vec::new(),
                    },
                    _ => Kind::Map {
                        flow,
                        pairs: Vec::new(),
                    },
                };
                stack.push((Node { kind, start, end }, None));
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some((mut node, _)) = stack.pop() else {
                    continue;
                };
                let flow = matches!(
                    node.kind,
                    Kind::Seq { flow: true, .. } | Kind::Map { flow: true, .. }
                );
                node.end = if flow {
                    end
                } else {
                    match &node.kind {
                        Kind::Seq { items, .. } => items.last().map_or(node.start, |n| n.end),
                        Kind::Map { pairs, .. } => pairs.last().map_or(node.start, |(_, v)| v.end),
                        _ => node.start,
                    }
                };
                node
            }
            Event::Scalar(value, style, ..) => {
                let empty = style == ScalarStyle::Plain && value.is_empty();
                Node {
                    kind: Kind::Scalar(value.into_owned(), empty),
                    // An empty scalar's span may lie past the line it belongs to.
                    start,
                    end: if empty { start.min(end) } else { end },
                }
            }
            Event::Alias(_) => Node {
                kind: Kind::Alias,
                start,
                end,
            },
            _ => continue,
        };
        match stack.last_mut() {
            None => root = Some(node),
            Some((parent, pending)) => match &mut parent.kind {
                Kind::Seq { items, .. } => items.push(node),
                Kind::Map { pairs, .. } => match pending.take() {
                    None => *pending = Some(node),
                    Some(k) => pairs.push((k, node)),
                },
                _ => {}
            },
        }
    }
    Ok(root.filter(|r| !matches!(&r.kind, Kind::Scalar(s, true) if s.is_empty())))
}

fn conflict(path: &Path, at: &[String], expected: &'static str) -> InstallError {
    InstallError::Conflict {
        path: path.to_path_buf(),
        json_path: at.join("."),
        expected,
    }
}

/// `s` as a YAML scalar: plain when it is a simple path or word that YAML reads back as the same
/// string, else double-quoted (a JSON string is a valid YAML double-quoted scalar).
fn scalar(s: &str) -> String {
    let simple = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'_' | b'.' | b'-' | b'+'))
        && !s.starts_with(['-', '.', '+'])
        && !s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n"
        );
    if simple {
        s.to_string()
    } else {
        serde_json::Value::from(s).to_string()
    }
}

/// memtrail's item as block-style lines, its `- ` at column `indent`.
fn item_text(item: &YamlItem, indent: usize, nl: &str) -> String {
    let pad = " ".repeat(indent);
    let mut out = format!(
        "{pad}- {}: {}{nl}",
        scalar(&item.name_key),
        scalar(&item.name)
    );
    for (k, v) in &item.keys {
        match v {
            TomlValue::Str(s) => out.push_str(&format!("{pad}  {}: {}{nl}", scalar(k), scalar(s))),
            TomlValue::Strings(xs) => {
                out.push_str(&format!("{pad}  {}:{nl}", scalar(k)));
                for x in xs {
                    out.push_str(&format!("{pad}    - {}{nl}", scalar(x)));
                }
            }
        }
    }
    out
}

/// The byte where the line holding byte `at` starts.
fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

/// The byte after the end of the line holding the last character before `end` (after its
/// newline; the text's length when it has none).
fn after_line(text: &str, end: usize) -> usize {
    if end > 0 && text.as_bytes()[end - 1] == b'\n' {
        return end;
    }
    text[end..].find('\n').map_or(text.len(), |i| end + i + 1)
}

/// `end` (a line start) moved back over whole blank lines, not before `start`: a block scalar's
/// span (`|`) takes the blank lines after it, which belong to no item.
fn before_blank_lines(text: &str, start: usize, end: usize) -> usize {
    let mut end = end;
    while end > start {
        let line_start = text[..end - 1].rfind('\n').map_or(0, |i| i + 1).max(start);
        if !text[line_start..end].trim().is_empty() {
            break;
        }
        end = line_start;
    }
    end
}

/// The start of the line of an item's `- ` (the item's node may start after it, on the same or
/// a later line).
fn dash_line(text: &str, item_start: usize) -> Option<usize> {
    let before = text[..item_start].trim_end_matches([' ', '\t', '\r', '\n']);
    before
        .ends_with('-')
        .then(|| line_start(text, before.len() - 1))
}

/// Where memtrail's item is in the list: its line range and the node.
struct Ours<'a> {
    /// From the start of its `- ` line to after its last line.
    range: std::ops::Range<usize>,
    node: &'a Node,
}

/// The list's key and value nodes, when the key is there, and memtrail's items in it.
type ListAndOurs<'a> = (Option<(&'a Node, &'a Node)>, Vec<Ours<'a>>);

/// The list at `item.list_key` in `root` (a block mapping), and the items named `item.name`.
fn find<'a>(
    path: &Path,
    text: &str,
    root: Option<&'a Node>,
    item: &YamlItem,
) -> Result<ListAndOurs<'a>, InstallError> {
    let Some(root) = root else {
        return Ok((None, Vec::new()));
    };
    let Kind::Map { flow: false, pairs } = &root.kind else {
        return Err(conflict(
            path,
            &["(top level)".into()],
            "a block mapping at the top level",
        ));
    };
    let Some((key, list)) = pairs
        .iter()
        .find(|(k, _)| k.as_str() == Some(item.list_key.as_str()))
    else {
        return Ok((None, Vec::new()));
    };
    let at = [item.list_key.clone()];
    let items = match &list.kind {
        Kind::Scalar(_, true) => return Ok((Some((key, list)), Vec::new())),
        Kind::Seq { flow: false, items } => items,
        _ => return Err(conflict(path, &at, "a block list (`- ` items)")),
    };
    let mut ours = Vec::new();
    for n in items {
        if n.get(&item.name_key).and_then(Node::as_str) == Some(item.name.as_str()) {
            let start = dash_line(text, n.start)
                .ok_or_else(|| conflict(path, &at, "a block list (`- ` items)"))?;
            ours.push(Ours {
                range: start..before_blank_lines(text, start, after_line(text, n.end)),
                node: n,
            });
        }
    }
    Ok((Some((key, list)), ours))
}

/// True when memtrail's item holds every key of `item` with its value.
fn conforms(node: &Node, item: &YamlItem) -> bool {
    item.keys
        .iter()
        .all(|(k, v)| node.get(k).is_some_and(|n| n.matches(v)))
}

fn command_of(node: &Node) -> Option<String> {
    node.get("command")
        .and_then(Node::as_str)
        .map(str::to_string)
}

/// The file's line ending: `\r\n` when its first line ends so.
fn newline_of(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// What the item named like memtrail's runs when that is not memtrail (another tool's server
/// under memtrail's name), or `no program` when it names none; `None` for memtrail's own.
fn foreign_program(node: &Node, item: &YamlItem) -> Option<String> {
    crate::edit::foreign_program(command_of(node), &bin_of(item))
}

/// The state of memtrail's item, for `status` (an error for another tool's item under
/// memtrail's name).
pub(crate) fn inspect(
    parsed: &Parsed,
    path: &Path,
    item: &YamlItem,
) -> Result<Found, InstallError> {
    let (_, ours) = find(path, &parsed.text, parsed.root.as_ref(), item)?;
    if let Some(program) = ours.first().and_then(|o| foreign_program(o.node, item)) {
        return Err(InstallError::ForeignEntry {
            path: path.to_path_buf(),
            json_path: format!("{}.{}", item.list_key, item.name),
            program,
        });
    }
    let at = ours.first().and_then(|o| command_of(o.node));
    Ok(match ours.len() {
        0 => Found::Missing,
        1 if conforms(ours[0].node, item) => Found::Present(at),
        1 => Found::Stale(at),
        n => Found::Duplicate(n, at),
    })
}

/// Compute one YAML file's change.
pub(crate) fn compute(
    path: &Path,
    items: &[YamlItem],
    action: Action,
    current: Option<&[u8]>,
    history: &History<'_>,
) -> Result<Computed, InstallError> {
    let unchanged = |lines: Vec<String>| Computed {
        after: current.map(<[u8]>::to_vec),
        lines,
        record: None,
        remove_dirs: Vec::new(),
    };
    // Never created: Continue sets up its own config on first run.
    let Some(cur) = current else {
        return Ok(unchanged(Vec::new()));
    };
    let Parsed { bom, mut text, .. } = parse(path, Some(cur))?;
    let nl = newline_of(&text);
    let mut lines = Vec::new();
    let mut rec = FileState::default();
    for item in items {
        // Each item is located in the text as it is after the previous one's edit.
        let root = parse_text(path, &text)?;
        let (list, ours) = find(path, &text, root.as_ref(), item)?;
        let entry_path = vec![item.list_key.clone(), item.name.clone()];
        match action {
            Action::Install => {
                if let Some(o) = ours.first() {
                    if conforms(o.node, item) {
                        continue;
                    }
                    // Another tool's server under memtrail's name: not memtrail's to overwrite.
                    if let Some(program) = foreign_program(o.node, item) {
                        return Err(InstallError::ForeignEntry {
                            path: path.to_path_buf(),
                            json_path: entry_path.join("."),
                            program,
                        });
                    }
                    let indent = text[o.range.start..].len()
                        - text[o.range.start..].trim_start_matches(' ').len();
                    let new = item_text(item, indent, nl);
                    let old = text[o.range.clone()].to_string();
                    let original = match history.entry(&entry_path) {
                        Some(r) => r.original.clone(),
                        None => Some(old),
                    };
                    lines.push(match command_of(o.node) {
                        Some(c) => format!("update {}: {c} → {}", item.label, bin_of(item)),
                        None => format!("update {}", item.label),
                    });
                    text.replace_range(o.range.clone(), &new);
                    rec.set_entry(EntryRecord {
                        path: entry_path,
                        original,
                        installed: new,
                    });
                    continue;
                }
                let (at, new) = match list {
                    // A list with items: after the last one, indented as the first.
                    Some((_, l)) if matches!(&l.kind, Kind::Seq { items, .. } if !items.is_empty()) =>
                    {
                        let Kind::Seq { items: seq, .. } = &l.kind else {
                            unreachable!()
                        };
                        let first = dash_line(&text, seq[0].start).ok_or_else(|| {
                            conflict(
                                path,
                                std::slice::from_ref(&item.list_key),
                                "a block list (`- ` items)",
                            )
                        })?;
                        let indent =
                            text[first..].len() - text[first..].trim_start_matches(' ').len();
                        let last = seq.last().map_or(l.end, |n| n.end);
                        let at = before_blank_lines(&text, first, after_line(&text, last));
                        (at, item_text(item, indent, nl))
                    }
                    // `<list_key>:` with nothing: under its line, two spaces in.
                    Some((k, _)) => {
                        let ks = line_start(&text, k.start);
                        let indent = k.start - ks + 2;
                        (after_line(&text, k.end), item_text(item, indent, nl))
                    }
                    // No list: appended at the end of the file.
                    None => {
                        rec.add_created(vec![item.list_key.clone()]);
                        (
                            text.len(),
                            format!("{}:{nl}{}", scalar(&item.list_key), item_text(item, 2, nl)),
                        )
                    }
                };
                let mut at = at;
                if at == text.len() && !text.is_empty() && !text.ends_with('\n') {
                    text.push_str(nl);
                    rec.final_newline_added = true;
                    at = text.len();
                }
                text.insert_str(at, &new);
                lines.push(format!("add {}", item.label));
                let installed = match new.strip_prefix(&format!("{}:{nl}", scalar(&item.list_key)))
                {
                    Some(i) if list.is_none() => i.to_string(),
                    _ => new,
                };
                rec.set_entry(EntryRecord {
                    path: entry_path,
                    original: None,
                    installed,
                });
            }
            Action::Uninstall => {
                let Some(o) = ours.first() else { continue };
                // Another tool's server under memtrail's name (install refused it): it stays.
                if let Some(program) = foreign_program(o.node, item) {
                    lines.push(format!(
                        "keep {}: it runs {program}, not memtrail (another tool's entry)",
                        item.label
                    ));
                    continue;
                }
                let now = &text[o.range.clone()];
                let rec_entry = history.entry(&entry_path);
                if let Some(orig) = rec_entry
                    .filter(|r| r.installed == now)
                    .and_then(|r| r.original.clone())
                {
                    text.replace_range(o.range.clone(), &orig);
                    lines.push(format!("restore {}", item.label));
                    continue;
                }
                let mut range = o.range.clone();
                // The list key too, when install created it and memtrail's item was its only one
                // (also without the install state: an empty `mcpServers:` is null, which
                // Continue refuses, "Expected array, received null").
                if let Some((
                    k,
                    Node {
                        kind: Kind::Seq { items: seq, .. },
                        ..
                    },
                )) = list
                    && seq.len() == 1
                    && (history.state.is_none()
                        || history.created(std::slice::from_ref(&item.list_key)))
                {
                    let ks = line_start(&text, k.start);
                    if after_line(&text, k.end) == range.start {
                        range.start = ks;
                    }
                }
                text.replace_range(range, "");
                lines.push(format!("remove {}", item.label));
            }
        }
    }
    if lines.is_empty() {
        return Ok(unchanged(lines));
    }
    if action == Action::Uninstall
        && history.state.is_some_and(|s| s.final_newline_added)
        && let Some(s) = text.strip_suffix(nl)
    {
        text = s.to_string();
    }
    // Whatever was done, the result must parse.
    parse_text(path, &text).map_err(|e| InstallError::Internal {
        path: path.to_path_buf(),
        msg: format!("an edit produced text that does not parse: {e}"),
    })?;
    if bom {
        text.insert(0, '\u{feff}');
    }
    Ok(Computed {
        after: Some(text.into_bytes()),
        lines,
        record: (action == Action::Install).then_some(rec),
        remove_dirs: Vec::new(),
    })
}

fn bin_of(item: &YamlItem) -> String {
    item.keys
        .iter()
        .find_map(|(k, v)| match v {
            TomlValue::Str(s) if k == "command" => Some(s.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours() -> YamlItem {
        YamlItem {
            label: "MCP server memtrail".into(),
            list_key: "mcpServers".into(),
            name_key: "name".into(),
            name: "memtrail".into(),
            keys: vec![
                ("command".into(), TomlValue::Str("/opt/bin/memtrail".into())),
                ("args".into(), TomlValue::Strings(vec!["mcp".into()])),
            ],
        }
    }

    #[test]
    fn scalars_round_trip_as_the_same_string() {
        assert_eq!(scalar("/usr/local/bin/memtrail"), "/usr/local/bin/memtrail");
        assert_eq!(
            scalar("/opt/mem trail/memtrail"),
            "\"/opt/mem trail/memtrail\""
        );
        assert_eq!(scalar("yes"), "\"yes\"");
        assert_eq!(scalar("1.5"), "\"1.5\"");
        assert_eq!(scalar("-x"), "\"-x\"");
        assert_eq!(scalar("a: b"), "\"a: b\"");
    }

    #[test]
    fn item_text_is_block_style() {
        assert_eq!(
            item_text(&ours(), 2, "\n"),
            "  - name: memtrail\n    command: /opt/bin/memtrail\n    args:\n      - mcp\n"
        );
    }

    #[test]
    fn finds_the_list_and_memtrails_item_with_its_lines() {
        let text = "models: []\nmcpServers:\n  - name: other\n    command: x\n  # note\n  - name: memtrail\n    command: /b/memtrail # old\n    args:\n      - mcp\n\nrules:\n  - Be brief.\n";
        let root = parse_text(Path::new("c.yaml"), text).unwrap();
        let (list, found) = find(Path::new("c.yaml"), text, root.as_ref(), &ours()).unwrap();
        assert!(list.is_some());
        assert_eq!(found.len(), 1);
        assert_eq!(
            &text[found[0].range.clone()],
            "  - name: memtrail\n    command: /b/memtrail # old\n    args:\n      - mcp\n"
        );
        assert_eq!(command_of(found[0].node).as_deref(), Some("/b/memtrail"));
        assert!(!conforms(found[0].node, &ours()));
    }

    #[test]
    fn refuses_what_it_does_not_edit() {
        let p = Path::new("c.yaml");
        for (text, expected) in [
            ("mcpServers: []\n", "a block list (`- ` items)"),
            ("mcpServers: {a: 1}\n", "a block list (`- ` items)"),
            ("- a\n- b\n", "a block mapping at the top level"),
            ("{a: 1}\n", "a block mapping at the top level"),
        ] {
            let root = parse_text(p, text).unwrap();
            match find(p, text, root.as_ref(), &ours()) {
                Err(InstallError::Conflict { expected: e, .. }) => {
                    assert_eq!(e, expected, "{text}")
                }
                other => panic!("{text}: {:?}", other.map(|(_, o)| o.len())),
            }
        }
        match parse_text(p, "a: 1\n---\nb: 2\n") {
            Err(InstallError::Conflict { expected, .. }) => {
                assert_eq!(expected, "a single YAML document")
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
        match parse_text(p, "models:\n  - name: a\n bad: [\n") {
            Err(InstallError::Parse { line, .. }) => assert!(line >= 3, "line {line}"),
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
}
