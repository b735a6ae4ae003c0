//! A format-preserving JSON / JSONC editor over byte ranges.
//!
//! jsonc-parser's scanner splits the text into tokens, and a small parser here (jsonc-parser's
//! own grammar and errors, ported so that it can skip building what it does not need; a test
//! checks that both accept, reject and locate errors alike) gives every value and property name
//! its byte range. The gaps between them (blanks, newlines, comments, commas, colons) are split
//! into tokens too, so that every byte of the text belongs to exactly one node of a small syntax
//! tree. Edits are *splices*: an edit replaces exact byte ranges and leaves every other byte as
//! it was. Doing the splicing here (instead of through jsonc-parser's CST and its own insert and
//! remove methods, which also re-flow neighbouring blank lines and single-line objects) is what
//! makes an insert and the matching remove exact inverses, so install then uninstall gives back
//! the original bytes.
//!
//! A document can be parsed *scoped* to some top-level keys ([`JsonDoc::parse_scoped`]): the
//! whole text is still validated, but only the top level and the values of those keys get a
//! syntax tree; the other top-level values are kept as opaque byte ranges. This is what keeps
//! an edit of a multi-megabyte `~/.claude.json` (whose `projects` memtrail never reads) cheap:
//! no tree for the bulk of the file, and no full-file CST.
//!
//! What is preserved: comments, key order, indentation (spaces or tabs, any width), `\r\n` line
//! endings, trailing commas, blank lines, a UTF-8 byte order mark. New content copies the file's
//! style: its newline kind, its indentation unit, whether the container uses trailing commas, and
//! whether the container is written on one line.
//!
//! The rules, for an item (object property or array element) `X`:
//!
//! - **append** to a multi-line container after the last item `L`: a comma after `L` if it has
//!   none, then `newline + indent + X` at the end of `L`'s line (after a same-line comment), plus
//!   a trailing comma if `L` had one. In a one-line container: `, X` after `L`. In an empty
//!   container whose inside is blank: the inside becomes `newline + indent + X + newline + indent`
//!   (the old inside is returned so that a caller can put it back later).
//! - **remove** undoes exactly that: an item alone on its line goes with its line (the newline
//!   before it up to the end of its line, its comma and same-line comment included), and the
//!   previous item loses its comma if `X` was last without one; an item inside a line goes with
//!   its separator; the last item of a container leaves the container's inside as it was before,
//!   or empty.
//!
//! Parsing is lenient (comments, trailing commas, JSON5 literals are accepted and kept) except
//! for missing commas between items, which no consumer accepts. Duplicate keys are accepted by
//! [`JsonDoc::parse`]; [`JsonDoc::check_unique_keys`] refuses them (JSON.parse keeps the last
//! one, while a lookup here finds the first). Every edit re-parses its result; an edit that would
//! produce invalid text is refused.

use jsonc_parser::errors::ParseErrorKind;
use jsonc_parser::tokens::Token;
use jsonc_parser::{CollectOptions, ParseOptions, Scanner, ScannerOptions, parse_to_ast};
use serde_json::Value;
use std::collections::HashSet;
use std::fmt;

/// One step of a path into a document: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Seg {
    /// A property of an object.
    Key(String),
    /// An element of an array (0-based).
    Index(usize),
}

impl Seg {
    /// `Seg::Key(k)`.
    pub fn key(k: &str) -> Seg {
        Seg::Key(k.to_string())
    }
}

/// Turn a list of keys into a path.
pub fn keys(ks: &[String]) -> Vec<Seg> {
    ks.iter().map(|k| Seg::Key(k.clone())).collect()
}

/// A path shown to people: `hooks.Stop[0].hooks` (the root is `(top level)`).
pub fn show_path(path: &[Seg]) -> String {
    if path.is_empty() {
        return "(top level)".to_string();
    }
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// Why an edit could not be made. The document is unchanged when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The text is not JSON / JSONC. `line` and `col` are 1-based.
    #[error("line {line}, column {col}: {msg}")]
    Parse {
        /// 1-based line.
        line: usize,
        /// 1-based column (in characters).
        col: usize,
        /// What is wrong there.
        msg: String,
    },
    /// The top-level value is not an object.
    #[error("the top-level value is not a JSON object")]
    NotAnObject,
    /// A value on the path has another type than the edit needs.
    #[error("`{path}` is not {expected}")]
    WrongType {
        /// The path, as [`show_path`] writes it.
        path: String,
        /// What the edit needs (`an object`, `an array`).
        expected: &'static str,
    },
    /// Nothing at this path.
    #[error("nothing at `{path}`")]
    Missing {
        /// The path, as [`show_path`] writes it.
        path: String,
    },
    /// The edit produced text that does not parse (a bug; nothing is written).
    #[error("internal error: {0}")]
    Internal(String),
}

/// The kind of value at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `{…}`
    Object,
    /// `[…]`
    Array,
    /// A string, number, boolean or null.
    Scalar,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum K {
    Root,
    Object,
    Array,
    Prop,
    Scalar,
    Open,
    Close,
    Comma,
    Colon,
    Whitespace,
    Newline,
    Comment,
}

impl K {
    fn is_value(self) -> bool {
        matches!(self, K::Object | K::Array | K::Scalar)
    }
    fn is_item(self) -> bool {
        matches!(self, K::Object | K::Array | K::Scalar | K::Prop)
    }
    fn is_trivia(self) -> bool {
        matches!(self, K::Whitespace | K::Newline | K::Comment)
    }
}

/// A text edit: replace the bytes `start..end` with the string.
type Splice = (usize, usize, String);

/// A syntax node with its byte range in the text.
#[derive(Debug, Clone)]
struct Syn {
    kind: K,
    start: usize,
    end: usize,
    /// Decoded property name (for `Prop`).
    name: Option<String>,
    children: Vec<Syn>,
    /// A value outside the parsed scope: its range is known, its inside is not.
    folded: bool,
}

impl Syn {
    /// The value node of a property.
    fn prop_value(&self) -> Option<&Syn> {
        let colon = self.children.iter().position(|c| c.kind == K::Colon)?;
        self.children[colon + 1..]
            .iter()
            .find(|c| c.kind.is_value())
    }
    /// Child indices of the items of an object or array.
    fn items(&self) -> Vec<usize> {
        self.children
            .iter()
            .enumerate()
            .filter(|(_, c)| c.kind.is_item())
            .map(|(i, _)| i)
            .collect()
    }
}

/// The style new content is written in.
#[derive(Debug, Clone)]
struct Style {
    newline: &'static str,
    unit: String,
    trailing_commas: bool,
}

/// A parsed JSON / JSONC document that can be edited without disturbing its formatting.
pub struct JsonDoc {
    bom: bool,
    text: String,
    tree: Syn,
    style: Style,
    /// The top-level keys whose values have a syntax tree (`None`: all of them).
    scope: Option<Vec<String>>,
}

impl fmt::Debug for JsonDoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonDoc").field("text", &self.text).finish()
    }
}

impl JsonDoc {
    /// Parse `text` (JSON, or JSONC with comments and trailing commas). Empty or comment-only
    /// text parses to a document without a value.
    pub fn parse(text: &str) -> Result<JsonDoc, EditError> {
        JsonDoc::parse_in(text, None)
    }

    /// Parse `text`, building a syntax tree only for the top level and for the values of the
    /// top-level keys in `keys`. The whole text is validated as by [`JsonDoc::parse`]; paths
    /// that go into another top-level value find nothing, and edits there are refused. Every
    /// edit keeps the scope.
    pub fn parse_scoped(text: &str, keys: &[String]) -> Result<JsonDoc, EditError> {
        JsonDoc::parse_in(text, Some(keys.to_vec()))
    }

    fn parse_in(text: &str, scope: Option<Vec<String>>) -> Result<JsonDoc, EditError> {
        let (bom, body) = match text.strip_prefix('\u{feff}') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        JsonDoc::from_body(bom, body.to_string(), scope)
    }

    /// A document from its text without the byte order mark (`bom`: it had one).
    fn from_body(
        bom: bool,
        body: String,
        scope: Option<Vec<String>>,
    ) -> Result<JsonDoc, EditError> {
        let tree = build_tree(&body, scope.as_deref(), bom)?;
        let style = detect_style(&body, &tree);
        Ok(JsonDoc {
            bom,
            text: body,
            tree,
            style,
            scope,
        })
    }

    /// The document text (with its byte order mark, if it had one).
    pub fn text(&self) -> String {
        if self.bom {
            format!("\u{feff}{}", self.text)
        } else {
            self.text.clone()
        }
    }

    /// The document text, consumed (with its byte order mark, if it had one).
    pub fn into_text(self) -> String {
        if self.bom {
            format!("\u{feff}{}", self.text)
        } else {
            self.text
        }
    }

    /// The whole document as a value (`None` when it has no value). Of duplicate keys, the last
    /// one's value is kept, as JSON.parse does.
    pub fn value(&self) -> Option<Value> {
        serde_value(&self.text)
    }

    fn root_value(&self) -> Option<&Syn> {
        self.tree.children.iter().find(|c| c.kind.is_value())
    }

    /// True when the document holds no value (empty, blank or only comments).
    pub fn is_blank(&self) -> bool {
        self.root_value().is_none()
    }

    /// Check that the top level is an object (or that there is none).
    pub fn check_object_root(&self) -> Result<(), EditError> {
        match self.root_value() {
            None => Ok(()),
            Some(v) if v.kind == K::Object => Ok(()),
            Some(_) => Err(EditError::NotAnObject),
        }
    }

    fn node(&self, path: &[Seg]) -> Option<&Syn> {
        let mut cur = self.root_value()?;
        for seg in path {
            if cur.folded {
                return None;
            }
            cur = match (seg, cur.kind) {
                (Seg::Key(k), K::Object) => cur
                    .children
                    .iter()
                    .find(|c| c.kind == K::Prop && c.name.as_deref() == Some(k.as_str()))?
                    .prop_value()?,
                (Seg::Index(i), K::Array) => {
                    let items = cur.items();
                    &cur.children[*items.get(*i)?]
                }
                _ => return None,
            };
        }
        Some(cur)
    }

    /// The value at `path`, if any.
    pub fn get(&self, path: &[Seg]) -> Option<Value> {
        let n = self.node(path)?;
        // Re-parse just this value.
        serde_value(self.text.get(n.start..n.end)?)
    }

    /// The exact text of the value at `path`, if any.
    pub fn text_at(&self, path: &[Seg]) -> Option<&str> {
        let n = self.node(path)?;
        self.text.get(n.start..n.end)
    }

    /// Replace the value at `path` (which must exist) with `raw`, verbatim: the text of a JSON
    /// value, e.g. one taken earlier with [`JsonDoc::text_at`].
    pub fn replace_raw(&mut self, path: &[Seg], raw: &str) -> Result<(), EditError> {
        let n = self.node(path).ok_or_else(|| EditError::Missing {
            path: show_path(path),
        })?;
        let (start, end) = (n.start, n.end);
        self.apply(vec![(start, end, raw.to_string())])
    }

    /// Refuse an object with the same key twice (among the objects that have a syntax tree:
    /// all of them, or those in the scope of [`JsonDoc::parse_scoped`]). The error points at
    /// the second occurrence: JSON.parse keeps the last one, while paths here find the first,
    /// so an edit would go where the program reading the file does not look.
    pub fn check_unique_keys(&self) -> Result<(), EditError> {
        fn walk<'a>(n: &'a Syn, found: &mut Option<(usize, &'a str)>) {
            if n.kind == K::Object {
                let mut seen = HashSet::new();
                for c in &n.children {
                    if let Some(name) = c.name.as_deref()
                        && !seen.insert(name)
                        && found.is_none_or(|(at, _)| c.start < at)
                    {
                        *found = Some((c.start, name));
                    }
                }
            }
            for c in &n.children {
                walk(c, found);
            }
        }
        let mut found = None;
        walk(&self.tree, &mut found);
        match found {
            None => Ok(()),
            Some((at, name)) => {
                let (line, col) = self.line_col(at);
                Err(EditError::Parse {
                    line,
                    col,
                    msg: format!("duplicate key `{name}` (JSON.parse would keep the last one)"),
                })
            }
        }
    }

    /// 1-based line and column (in characters, counting a byte order mark) of byte `pos`.
    fn line_col(&self, pos: usize) -> (usize, usize) {
        let before = &self.text[..pos];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        let mut col = before[line_start..].chars().count() + 1;
        if self.bom && line == 1 {
            col += 1;
        }
        (line, col)
    }

    /// The kind of the value at `path`, if any.
    pub fn kind(&self, path: &[Seg]) -> Option<Kind> {
        self.node(path).map(|n| match n.kind {
            K::Object => Kind::Object,
            K::Array => Kind::Array,
            _ => Kind::Scalar,
        })
    }

    /// Number of items of the object or array at `path`.
    pub fn len(&self, path: &[Seg]) -> Option<usize> {
        let n = self.node(path)?;
        (matches!(n.kind, K::Object | K::Array) && !n.folded).then(|| n.items().len())
    }

    /// True when the container at `path` has no items and nothing but blanks inside (no
    /// comments).
    pub fn is_bare_empty(&self, path: &[Seg]) -> bool {
        match self.node(path) {
            Some(n)
                if matches!(n.kind, K::Object | K::Array) && !n.folded && n.children.len() >= 2 =>
            {
                n.children[1..n.children.len() - 1]
                    .iter()
                    .all(|c| matches!(c.kind, K::Whitespace | K::Newline))
            }
            _ => false,
        }
    }

    /// The text between the braces of the container at `path`.
    pub fn inner_text(&self, path: &[Seg]) -> Option<String> {
        let n = self.node(path)?;
        if !matches!(n.kind, K::Object | K::Array) || n.folded || n.children.len() < 2 {
            return None;
        }
        let open = &n.children[0];
        let close = &n.children[n.children.len() - 1];
        self.text.get(open.end..close.start).map(str::to_string)
    }

    /// Replace the whole text (keeps the byte order mark flag of the new text).
    pub fn set_text(&mut self, text: &str) -> Result<(), EditError> {
        let bom = self.bom;
        *self = JsonDoc::parse_in(text, self.scope.clone())?;
        self.bom |= bom;
        Ok(())
    }

    /// Apply splices `(start, end, replacement)` given in text order: non-overlapping, and when
    /// two insert at the same offset, the first given comes first in the text.
    fn apply(&mut self, splices: Vec<Splice>) -> Result<(), EditError> {
        let mut splices: Vec<(usize, Splice)> = splices.into_iter().enumerate().collect();
        splices.sort_by(|(ia, a), (ib, b)| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(ia.cmp(ib)));
        // One new string of the right size (a big file is copied once, not once per splice).
        let added: usize = splices.iter().map(|(_, (_, _, with))| with.len()).sum();
        let mut text = String::with_capacity(self.text.len() + added);
        let mut pos = 0;
        for (_, (start, end, with)) in splices {
            if start < pos
                || start > end
                || end > self.text.len()
                || !self.text.is_char_boundary(start)
                || !self.text.is_char_boundary(end)
            {
                return Err(EditError::Internal(format!("bad splice {start}..{end}")));
            }
            text.push_str(&self.text[pos..start]);
            text.push_str(&with);
            pos = end;
        }
        text.push_str(&self.text[pos..]);
        let doc = JsonDoc::from_body(self.bom, text, self.scope.clone()).map_err(|e| {
            EditError::Internal(format!("an edit produced text that does not parse: {e}"))
        })?;
        *self = doc;
        Ok(())
    }

    /// Make the document hold an empty object when it holds no value (empty, blank or only
    /// comments). Returns the text it had when it was blank (to put back later), or `None` when
    /// it already had a value.
    pub fn ensure_root_object(&mut self) -> Result<Option<String>, EditError> {
        if !self.is_blank() {
            self.check_object_root()?;
            return Ok(None);
        }
        let old = self.text.clone();
        let nl = self.style.newline;
        let mut text = old.clone();
        if !text.trim().is_empty() && !text.ends_with('\n') {
            text.push_str(nl);
        }
        if text.trim().is_empty() {
            text.clear();
        }
        text.push_str("{}");
        text.push_str(nl);
        let bom = self.bom;
        *self = JsonDoc::parse_in(&text, self.scope.clone())?;
        self.bom = bom;
        Ok(Some(old))
    }

    /// Append an item to the object or array at `container`: a property `key: value` to an
    /// object, or an element `value` to an array (`key` = `None`). Returns the inside text the
    /// container had when it was empty and blank inside (`Some("")` for `{}`), else `None`.
    pub fn append(
        &mut self,
        container: &[Seg],
        key: Option<&str>,
        value: &Value,
    ) -> Result<Option<String>, EditError> {
        let c = self
            .node(container)
            .ok_or_else(|| EditError::Missing {
                path: show_path(container),
            })?
            .clone();
        match (c.kind, key) {
            (K::Object, Some(_)) | (K::Array, None) => {}
            (_, Some(_)) => {
                return Err(EditError::WrongType {
                    path: show_path(container),
                    expected: "an object",
                });
            }
            (_, None) => {
                return Err(EditError::WrongType {
                    path: show_path(container),
                    expected: "an array",
                });
            }
        }
        let (splices, old_inner) = self.append_splices(&c, key, value)?;
        self.apply(splices)?;
        Ok(old_inner)
    }

    fn append_splices(
        &self,
        c: &Syn,
        key: Option<&str>,
        value: &Value,
    ) -> Result<(Vec<Splice>, Option<String>), EditError> {
        if c.folded {
            return Err(EditError::Internal(
                "an edit outside the parsed scope".into(),
            ));
        }
        let ch = &c.children;
        if ch.len() < 2 || ch[0].kind != K::Open || ch[ch.len() - 1].kind != K::Close {
            return Err(EditError::Internal("container without braces".into()));
        }
        let open = &ch[0];
        let close = &ch[ch.len() - 1];
        let items = c.items();
        let nl = self.style.newline;
        let base = line_indent(&self.text, c.start).to_string();
        let item_text = |indent: &str, compact: bool| -> String {
            let v = render(value, indent, &self.style, compact);
            match key {
                Some(k) => format!("{}: {v}", json_string(k)),
                None => v,
            }
        };
        let multiline = ch.iter().any(|n| n.kind == K::Newline);
        let Some(&last) = items.last() else {
            let inner = &self.text[open.end..close.start];
            let blank_inside = ch[1..ch.len() - 1]
                .iter()
                .all(|n| matches!(n.kind, K::Whitespace | K::Newline));
            let ci = format!("{base}{}", self.style.unit);
            let trail = if self.style.trailing_commas { "," } else { "" };
            if blank_inside {
                // Inside a one-line parent, stay on one line.
                let compact = !multiline && self.parent_is_one_line(c);
                let new_inner = if compact {
                    item_text("", true)
                } else {
                    format!("{nl}{ci}{}{trail}{nl}{base}", item_text(&ci, false))
                };
                return Ok((
                    vec![(open.end, close.start, new_inner)],
                    Some(inner.to_string()),
                ));
            }
            // Comments inside: add the item on a line of its own after them, or after them on
            // the same line when the container is written on one line.
            let at = ch.iter().rposition(|n| n.kind == K::Newline);
            return Ok(match at {
                Some(i) => {
                    let text = format!("{nl}{ci}{}{trail}", item_text(&ci, false));
                    (vec![(ch[i].start, ch[i].start, text)], None)
                }
                None => {
                    let text = format!(" {}", item_text("", true));
                    (vec![(close.start, close.start, text)], None)
                }
            });
        };
        let l = &ch[last];
        let comma = comma_after(ch, last);
        let mut splices = Vec::new();
        if multiline {
            let ci = match own_line(ch, last) {
                Some(_) => line_indent(&self.text, l.start).to_string(),
                None => format!("{base}{}", self.style.unit),
            };
            if comma.is_none() {
                splices.push((l.end, l.end, ",".to_string()));
            }
            let at = tail_end(ch, last);
            let trail = if comma.is_some() { "," } else { "" };
            splices.push((at, at, format!("{nl}{ci}{}{trail}", item_text(&ci, false))));
        } else {
            match comma {
                None => splices.push((l.end, l.end, format!(", {}", item_text("", true)))),
                Some(ci) => {
                    let e = ch[ci].end;
                    splices.push((e, e, format!(" {},", item_text("", true))));
                }
            }
        }
        Ok((splices, None))
    }

    /// True when the container that holds `c` is written on one line.
    fn parent_is_one_line(&self, c: &Syn) -> bool {
        fn find<'a>(n: &'a Syn, target: &Syn, parent: Option<&'a Syn>) -> Option<Option<&'a Syn>> {
            if n.start == target.start && n.end == target.end && n.kind == target.kind {
                return Some(parent);
            }
            let me = if matches!(n.kind, K::Object | K::Array) {
                Some(n)
            } else {
                parent
            };
            for ch in &n.children {
                if ch.start <= target.start
                    && target.end <= ch.end
                    && let Some(p) = find(ch, target, me)
                {
                    return Some(p);
                }
            }
            None
        }
        match find(&self.tree, c, None).flatten() {
            Some(p) => !p.children.iter().any(|n| n.kind == K::Newline),
            None => false,
        }
    }

    /// Put `value` at `path` (a path of keys), creating the objects that are missing on the way.
    /// Returns the index of the first key that did not exist (`path.len()` when the final key
    /// existed and its value was replaced), and the inside text of the container the new
    /// property went into, when that container was empty and blank inside.
    pub fn set_creating(
        &mut self,
        path: &[String],
        value: &Value,
    ) -> Result<(usize, Option<String>), EditError> {
        if path.is_empty() {
            return Err(EditError::Internal("empty path".into()));
        }
        self.ensure_root_object()?;
        let mut depth = 0;
        while depth < path.len() {
            let prefix = keys(&path[..depth]);
            match self.kind(&prefix) {
                Some(Kind::Object) => {}
                Some(_) => {
                    return Err(EditError::WrongType {
                        path: show_path(&prefix),
                        expected: "an object",
                    });
                }
                None => {
                    return Err(EditError::Missing {
                        path: show_path(&prefix),
                    });
                }
            }
            let next = keys(&path[..=depth]);
            if self.node(&next).is_none() {
                break;
            }
            depth += 1;
        }
        if depth == path.len() {
            self.replace(&keys(path), value)?;
            return Ok((depth, None));
        }
        let mut nested = value.clone();
        for k in path[depth + 1..].iter().rev() {
            let mut m = serde_json::Map::new();
            m.insert(k.clone(), nested);
            nested = Value::Object(m);
        }
        let inner = self.append(&keys(&path[..depth]), Some(&path[depth]), &nested)?;
        Ok((depth, inner))
    }

    /// Replace the value at `path` (which must exist) with `value`, written in the style of its
    /// surroundings. Only the old value's bytes change.
    pub fn replace(&mut self, path: &[Seg], value: &Value) -> Result<(), EditError> {
        let n = self
            .node(path)
            .ok_or_else(|| EditError::Missing {
                path: show_path(path),
            })?
            .clone();
        let indent = line_indent(&self.text, n.start).to_string();
        let one_line = !self.text[n.start..n.end].contains('\n')
            && matches!(n.kind, K::Object | K::Array)
            && !is_empty_container(value);
        let text = render(value, &indent, &self.style, one_line);
        self.apply(vec![(n.start, n.end, text)])
    }

    /// Remove the item at `path` (an object property `…/Key(k)` or array element
    /// `…/Index(i)`). When it was the container's last item and nothing but blanks stays inside,
    /// the inside becomes `restore_inner` (default: nothing, e.g. `{}`).
    pub fn remove(&mut self, path: &[Seg], restore_inner: Option<&str>) -> Result<(), EditError> {
        let Some((last, parent)) = path.split_last() else {
            return Err(EditError::Internal(
                "cannot remove the top-level value".into(),
            ));
        };
        let c = self
            .node(parent)
            .ok_or_else(|| EditError::Missing {
                path: show_path(parent),
            })?
            .clone();
        if c.folded {
            return Err(EditError::Internal(
                "an edit outside the parsed scope".into(),
            ));
        }
        let ch = &c.children;
        if ch.len() < 2 || ch[0].kind != K::Open || ch[ch.len() - 1].kind != K::Close {
            return Err(EditError::Internal("container without braces".into()));
        }
        let items = c.items();
        let pos = match (last, c.kind) {
            (Seg::Key(k), K::Object) => items
                .iter()
                .position(|&i| ch[i].name.as_deref() == Some(k.as_str())),
            (Seg::Index(i), K::Array) => (*i < items.len()).then_some(*i),
            _ => None,
        }
        .ok_or_else(|| EditError::Missing {
            path: show_path(path),
        })?;
        let xi = items[pos];
        let x = &ch[xi];
        let comma = comma_after(ch, xi);
        let prev = pos.checked_sub(1).map(|p| items[p]);
        let mut splices: Vec<Splice> = Vec::new();
        let sole = items.len() == 1;
        if sole {
            let start = match own_line(ch, xi) {
                Some(nl) => ch[nl].start,
                None => {
                    // Take the blanks before it along (`{/* c */ X}` gives `{/* c */}`).
                    let mut s = x.start;
                    let mut j = xi;
                    while j > 1 && ch[j - 1].kind == K::Whitespace {
                        j -= 1;
                        s = ch[j].start;
                    }
                    s
                }
            };
            let end = tail_end(ch, xi);
            // Is anything but blanks left inside?
            let open = &ch[0];
            let close = &ch[ch.len() - 1];
            let rest_blank = ch[1..ch.len() - 1]
                .iter()
                .filter(|n| n.end <= start || n.start >= end)
                .all(|n| matches!(n.kind, K::Whitespace | K::Newline));
            if rest_blank {
                splices.push((
                    open.end,
                    close.start,
                    restore_inner.unwrap_or("").to_string(),
                ));
            } else {
                splices.push((start, end, String::new()));
            }
        } else if let Some(nl) = own_line(ch, xi) {
            splices.push((ch[nl].start, tail_end(ch, xi), String::new()));
            if comma.is_none()
                && let Some(p) = prev
                && let Some(pc) = comma_after(ch, p)
            {
                splices.push((ch[pc].start, ch[pc].end, String::new()));
            }
        } else if let Some(p) = prev {
            match (comma, comma_after(ch, p)) {
                (Some(c), Some(pc)) => splices.push((ch[pc].end, ch[c].end, String::new())),
                _ => splices.push((ch[p].end, x.end, String::new())),
            }
        } else {
            // First item, written on the line of the opening brace, with more to follow.
            let end = match comma {
                Some(c) => {
                    let mut e = ch[c].end;
                    for n in &ch[c + 1..] {
                        if n.kind == K::Whitespace {
                            e = n.end;
                        } else {
                            break;
                        }
                    }
                    e
                }
                None => x.end,
            };
            splices.push((x.start, end, String::new()));
        }
        self.apply(splices)
    }
}

fn is_empty_container(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => true,
    }
}

/// The child index of the comma that follows item `i` (only blanks and comments between).
fn comma_after(ch: &[Syn], i: usize) -> Option<usize> {
    for (j, n) in ch.iter().enumerate().skip(i + 1) {
        match n.kind {
            K::Comma => return Some(j),
            k if k.is_trivia() => continue,
            _ => return None,
        }
    }
    None
}

/// When item `i` starts its line (only blanks between it and the previous newline), the child
/// index of that newline.
fn own_line(ch: &[Syn], i: usize) -> Option<usize> {
    let mut j = i;
    while j > 0 {
        j -= 1;
        match ch[j].kind {
            K::Whitespace => continue,
            K::Newline => return Some(j),
            _ => return None,
        }
    }
    None
}

/// The end of item `i`'s line tail: past its comma and any same-line comments (and blanks), up
/// to the newline; or up to the last comment / comma / the item itself when the line goes on
/// with another item or the closing brace.
fn tail_end(ch: &[Syn], i: usize) -> usize {
    let mut end = ch[i].end;
    let mut j = i + 1;
    let comma = comma_after(ch, i);
    if let Some(c) = comma {
        // Only step over the comma when nothing but blanks/comments on the same line precede it.
        if ch[i + 1..c].iter().all(|n| n.kind != K::Newline) {
            end = ch[c].end;
            j = c + 1;
        }
    }
    while j < ch.len() {
        match ch[j].kind {
            K::Newline => return ch[j].start,
            K::Whitespace => {}
            K::Comment => end = ch[j].end,
            _ => return end,
        }
        j += 1;
    }
    end
}

/// The blanks at the start of the line holding byte `pos`.
fn line_indent(text: &str, pos: usize) -> &str {
    let line_start = text[..pos].rfind('\n').map(|p| p + 1).unwrap_or(0);
    let line = &text[line_start..];
    let n = line
        .bytes()
        .take_while(|b| *b == b' ' || *b == b'\t')
        .count();
    &line[..n]
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// Write `v` as JSON. Multi-line: nested containers open onto new lines indented by the style's
/// unit past `indent`; `compact`: on one line with `", "` and `": "`.
fn render(v: &Value, indent: &str, style: &Style, compact: bool) -> String {
    match v {
        Value::Object(m) if !m.is_empty() => {
            if compact {
                let parts: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{}: {}", json_string(k), render(v, "", style, true)))
                    .collect();
                return format!("{{{}}}", parts.join(", "));
            }
            let inner = format!("{indent}{}", style.unit);
            let n = m.len();
            let mut s = String::from("{");
            for (i, (k, v)) in m.iter().enumerate() {
                s.push_str(style.newline);
                s.push_str(&inner);
                s.push_str(&json_string(k));
                s.push_str(": ");
                s.push_str(&render(v, &inner, style, false));
                if i + 1 < n || style.trailing_commas {
                    s.push(',');
                }
            }
            s.push_str(style.newline);
            s.push_str(indent);
            s.push('}');
            s
        }
        Value::Array(a) if !a.is_empty() => {
            if compact {
                let parts: Vec<String> = a.iter().map(|v| render(v, "", style, true)).collect();
                return format!("[{}]", parts.join(", "));
            }
            let inner = format!("{indent}{}", style.unit);
            let n = a.len();
            let mut s = String::from("[");
            for (i, v) in a.iter().enumerate() {
                s.push_str(style.newline);
                s.push_str(&inner);
                s.push_str(&render(v, &inner, style, false));
                if i + 1 < n || style.trailing_commas {
                    s.push(',');
                }
            }
            s.push_str(style.newline);
            s.push_str(indent);
            s.push(']');
            s
        }
        Value::Object(_) => "{}".to_string(),
        Value::Array(_) => "[]".to_string(),
        other => serde_json::to_string(other).unwrap_or_else(|_| "null".to_string()),
    }
}

fn parse_options() -> ParseOptions {
    // Lenient on purpose (settings files are JSON, but people add comments and trailing commas),
    // except for missing commas: no consumer accepts them, and refusing them also catches an
    // edit that would drop one.
    ParseOptions {
        allow_missing_commas: false,
        ..ParseOptions::default()
    }
}

/// Parse `text` (no byte order mark) into a value; `None` when it does not parse or holds none.
fn serde_value(text: &str) -> Option<Value> {
    let parsed = parse_to_ast(text, &CollectOptions::default(), &parse_options()).ok()?;
    parsed.value.map(Value::from)
}

fn leaf(kind: K, start: usize, end: usize) -> Syn {
    Syn {
        kind,
        start,
        end,
        name: None,
        children: Vec::new(),
        folded: false,
    }
}

/// The syntax tree of `body` (the text without its byte order mark). The top-level values of
/// an object root whose keys are not in `scope` are folded: validated, not kept.
fn build_tree(body: &str, scope: Option<&[String]>, bom: bool) -> Result<Syn, EditError> {
    let mut p = Parser {
        text: body,
        sc: Scanner::new(body, &scanner_options()),
        tok: None,
        last_end: 0,
        ranges: Vec::new(),
        bom,
    };
    p.scan()?;
    let value = p.value(true, scope)?;
    p.scan()?;
    if p.tok.is_some() {
        return Err(p.err_tok(ParseErrorKind::MultipleRootJsonValues));
    }
    let mut children = Vec::new();
    let mut pos = 0;
    if let Some(v) = value {
        gap(body, pos, v.start, &mut children)?;
        pos = v.end;
        children.push(v);
    }
    gap(body, pos, body.len(), &mut children)?;
    Ok(Syn {
        kind: K::Root,
        start: 0,
        end: body.len(),
        name: None,
        children,
        folded: false,
    })
}

fn scanner_options() -> ScannerOptions {
    let o = parse_options();
    ScannerOptions {
        allow_single_quoted_strings: o.allow_single_quoted_strings,
        allow_hexadecimal_numbers: o.allow_hexadecimal_numbers,
        allow_unary_plus_numbers: o.allow_unary_plus_numbers,
        allow_bare_decimal_point_numbers: o.allow_bare_decimal_point_numbers,
        allow_non_finite_numbers: o.allow_non_finite_numbers,
        allow_extended_string_escapes: o.allow_extended_string_escapes,
    }
}

/// The same nesting limit as jsonc-parser's.
const MAX_DEPTH: usize = 512;

/// A validating parser over jsonc-parser's scanner that builds [`Syn`] nodes as it goes and
/// nothing for the values it folds, so that a big file costs no more than its text. It accepts
/// and rejects exactly what `jsonc_parser::parse_to_ast` does with [`parse_options`] (a port of
/// its grammar, checked against it by the `parser_agrees_with_jsonc_parser` test), with the
/// same error kinds, lines and columns.
struct Parser<'a> {
    text: &'a str,
    sc: Scanner<'a>,
    /// The current token (comments are skipped, as jsonc-parser does).
    tok: Option<Token<'a>>,
    /// Where the current token ends.
    last_end: usize,
    /// The starts of the open containers and properties (jsonc-parser's range stack: errors
    /// about an unterminated container point at its start).
    ranges: Vec<usize>,
    bom: bool,
}

impl<'a> Parser<'a> {
    fn scan(&mut self) -> Result<(), EditError> {
        loop {
            let t = self.sc.scan().map_err(|e| {
                let (line, col) = (e.line_display(), e.column_display());
                // Shift the column on line 1 past the byte order mark that was taken off.
                let col = if self.bom && line == 1 { col + 1 } else { col };
                EditError::Parse {
                    line,
                    col,
                    msg: e.kind().to_string(),
                }
            })?;
            if !matches!(t, Some(Token::CommentLine(_) | Token::CommentBlock(_))) {
                self.tok = t;
                break;
            }
        }
        self.last_end = self.sc.token_end();
        Ok(())
    }

    fn err_at(&self, start: usize, kind: ParseErrorKind) -> EditError {
        // As jsonc-parser counts: characters, and `\n` or a lone `\r` ends a line.
        let (mut line, mut col) = (1, 1);
        let b = self.text.as_bytes();
        for (i, c) in self.text[..start.min(self.text.len())].char_indices() {
            if c == '\n' || c == '\r' && b.get(i + 1) != Some(&b'\n') {
                line += 1;
                col = 1;
            } else {
                col += 1;
            }
        }
        if self.bom && line == 1 {
            col += 1;
        }
        EditError::Parse {
            line,
            col,
            msg: kind.to_string(),
        }
    }

    fn err_tok(&self, kind: ParseErrorKind) -> EditError {
        self.err_at(self.sc.token_start(), kind)
    }

    fn err_range(&mut self, kind: ParseErrorKind) -> EditError {
        let start = self.ranges.pop().unwrap_or(0);
        self.err_at(start, kind)
    }

    /// The value at the current token (`None` at the end of the text). `build`: make its
    /// node's children; else it is folded. `scope` (top level only): the keys of an object
    /// whose values are built.
    fn value(&mut self, build: bool, scope: Option<&[String]>) -> Result<Option<Syn>, EditError> {
        if self.ranges.len() > MAX_DEPTH {
            return Err(self.err_range(ParseErrorKind::NestingDepthExceeded));
        }
        let start = self.sc.token_start();
        match &self.tok {
            None => Ok(None),
            Some(Token::OpenBrace) => self.object(build, scope).map(Some),
            Some(Token::OpenBracket) => self.array(build).map(Some),
            Some(Token::String(_) | Token::Boolean(_) | Token::Number(_) | Token::Null) => {
                Ok(Some(leaf(K::Scalar, start, self.sc.token_end())))
            }
            Some(Token::CloseBracket) => Err(self.err_tok(ParseErrorKind::UnexpectedCloseBracket)),
            Some(Token::CloseBrace) => Err(self.err_tok(ParseErrorKind::UnexpectedCloseBrace)),
            Some(Token::Comma) => Err(self.err_tok(ParseErrorKind::UnexpectedComma)),
            Some(Token::Colon) => Err(self.err_tok(ParseErrorKind::UnexpectedColon)),
            Some(Token::Word(_)) => Err(self.err_tok(ParseErrorKind::UnexpectedWord)),
            Some(Token::CommentLine(_) | Token::CommentBlock(_)) => {
                Err(EditError::Internal("comment token".into()))
            }
        }
    }

    /// After an item: its comma, or the next token. Missing commas are refused.
    fn after_item(&mut self) -> Result<(), EditError> {
        let after_value_end = self.last_end;
        self.scan()?;
        match &self.tok {
            // Trailing commas are allowed ([`parse_options`]).
            Some(Token::Comma) => self.scan(),
            Some(
                Token::OpenBrace
                | Token::OpenBracket
                | Token::String(_)
                | Token::Word(_)
                | Token::Number(_)
                | Token::Boolean(_)
                | Token::Null,
            ) if self.is_missing_comma() => {
                Err(self.err_at(after_value_end, ParseErrorKind::ExpectedComma))
            }
            _ => Ok(()),
        }
    }

    /// jsonc-parser reports a missing comma before a value start in an array (`{`, `[`,
    /// scalars), and before a property name in an object (strings, words, numbers, booleans,
    /// null: not `{` or `[`).
    fn is_missing_comma(&self) -> bool {
        let in_object = self
            .ranges
            .last()
            .is_some_and(|&s| self.text.as_bytes().get(s) == Some(&b'{'));
        match &self.tok {
            Some(Token::OpenBrace | Token::OpenBracket) => !in_object,
            Some(Token::Word(_)) => in_object,
            Some(_) => true,
            None => false,
        }
    }

    fn object(&mut self, build: bool, scope: Option<&[String]>) -> Result<Syn, EditError> {
        let start = self.sc.token_start();
        self.ranges.push(start);
        let mut ch = Vec::new();
        if build {
            ch.push(leaf(K::Open, start, start + 1));
        }
        let mut pos = start + 1;
        self.scan()?;
        loop {
            let name: Option<String> = match &self.tok {
                Some(Token::CloseBrace) => break,
                None => return Err(self.err_range(ParseErrorKind::UnterminatedObject)),
                Some(Token::String(s)) => build.then(|| s.to_string()),
                Some(Token::Word(w) | Token::Number(w)) => build.then(|| w.to_string()),
                Some(Token::Boolean(b)) => build.then(|| b.to_string()),
                Some(Token::Null) => build.then(|| "null".to_string()),
                Some(_) => return Err(self.err_tok(ParseErrorKind::UnexpectedTokenInObject)),
            };
            let (name_start, name_end) = (self.sc.token_start(), self.sc.token_end());
            self.ranges.push(name_start);
            self.scan()?;
            if self.tok != Some(Token::Colon) {
                return Err(self.err_tok(ParseErrorKind::ExpectedColonAfterObjectKey));
            }
            self.scan()?;
            let expand = build
                && match (scope, &name) {
                    (Some(keys), Some(n)) => keys.contains(n),
                    _ => true,
                };
            let Some(v) = self.value(expand, None)? else {
                return Err(self.err_tok(ParseErrorKind::ExpectedObjectValue));
            };
            self.ranges.pop();
            let v_end = v.end;
            if build {
                gap(self.text, pos, name_start, &mut ch)?;
                let mut pch = vec![leaf(K::Scalar, name_start, name_end)];
                gap(self.text, name_end, v.start, &mut pch)?;
                pch.push(v);
                ch.push(Syn {
                    kind: K::Prop,
                    start: name_start,
                    end: v_end,
                    name,
                    children: pch,
                    folded: false,
                });
            }
            pos = v_end;
            self.after_item()?;
        }
        let end = self.sc.token_end();
        self.ranges.pop();
        if build {
            gap(self.text, pos, end - 1, &mut ch)?;
            ch.push(leaf(K::Close, end - 1, end));
        }
        Ok(Syn {
            kind: K::Object,
            start,
            end,
            name: None,
            children: ch,
            folded: !build,
        })
    }

    fn array(&mut self, build: bool) -> Result<Syn, EditError> {
        let start = self.sc.token_start();
        self.ranges.push(start);
        let mut ch = Vec::new();
        if build {
            ch.push(leaf(K::Open, start, start + 1));
        }
        let mut pos = start + 1;
        self.scan()?;
        loop {
            match &self.tok {
                Some(Token::CloseBracket) => break,
                None => return Err(self.err_range(ParseErrorKind::UnterminatedArray)),
                _ => {}
            }
            let Some(v) = self.value(build, None)? else {
                return Err(self.err_range(ParseErrorKind::UnterminatedArray));
            };
            let v_end = v.end;
            if build {
                gap(self.text, pos, v.start, &mut ch)?;
                ch.push(v);
            }
            pos = v_end;
            self.after_item()?;
        }
        let end = self.sc.token_end();
        self.ranges.pop();
        if build {
            gap(self.text, pos, end - 1, &mut ch)?;
            ch.push(leaf(K::Close, end - 1, end));
        }
        Ok(Syn {
            kind: K::Array,
            start,
            end,
            name: None,
            children: ch,
            folded: !build,
        })
    }
}

/// Split the text between two syntax elements (`from..to`), which the parser accepted, into
/// blanks, newlines (`\n`, `\r\n` or `\r`), comments, commas and colons.
fn gap(text: &str, from: usize, to: usize, out: &mut Vec<Syn>) -> Result<(), EditError> {
    let b = text.as_bytes();
    let mut i = from;
    while i < to {
        let start = i;
        let kind = match b[i] {
            b'\n' => {
                i += 1;
                K::Newline
            }
            b'\r' => {
                i += if i + 1 < to && b[i + 1] == b'\n' {
                    2
                } else {
                    1
                };
                K::Newline
            }
            b',' => {
                i += 1;
                K::Comma
            }
            b':' => {
                i += 1;
                K::Colon
            }
            b'/' if i + 1 < to && b[i + 1] == b'/' => {
                i += 2;
                while i < to && b[i] != b'\n' && b[i] != b'\r' {
                    i += 1;
                }
                K::Comment
            }
            b'/' if i + 1 < to && b[i + 1] == b'*' => {
                let end = text[i + 2..to].find("*/").ok_or_else(|| {
                    EditError::Internal(format!("unterminated comment at byte {i}"))
                })?;
                i += 2 + end + 2;
                K::Comment
            }
            _ => {
                for c in text[i..to].chars() {
                    if c == '\n' || c == '\r' || !c.is_whitespace() {
                        break;
                    }
                    i += c.len_utf8();
                }
                if i == start {
                    return Err(EditError::Internal(format!(
                        "unexpected text at byte {start}"
                    )));
                }
                K::Whitespace
            }
        };
        out.push(leaf(kind, start, i));
    }
    Ok(())
}

fn detect_style(text: &str, tree: &Syn) -> Style {
    let newline = match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    };
    let mut found = (None, None);
    style_of(text, tree, &mut found);
    let (unit, trailing) = found;
    Style {
        newline,
        unit: unit.unwrap_or_else(|| "  ".to_string()),
        trailing_commas: trailing.unwrap_or(false),
    }
}

/// Look for the indentation unit and the trailing-comma habit in document order, outermost
/// first; true once both are known. A folded value is read only if the search gets to it (in a
/// file whose top level is on one line, say), so that the style does not depend on the scope.
fn style_of(text: &str, n: &Syn, found: &mut (Option<String>, Option<bool>)) -> bool {
    if n.folded && matches!(n.kind, K::Object | K::Array) {
        let Ok(sub) = build_tree(&text[n.start..n.end], None, false) else {
            return false;
        };
        return match sub.children.into_iter().find(|c| c.kind.is_value()) {
            Some(mut v) => {
                shift(&mut v, n.start);
                style_of(text, &v, found)
            }
            None => false,
        };
    }
    let (unit, trailing) = found;
    if matches!(n.kind, K::Object | K::Array) {
        let ch = &n.children;
        let items = n.items();
        let multiline = ch.iter().any(|c| c.kind == K::Newline);
        if unit.is_none() {
            let base = line_indent(text, n.start);
            for &i in &items {
                if own_line(ch, i).is_some() {
                    let ind = line_indent(text, ch[i].start);
                    if let Some(u) = ind.strip_prefix(base)
                        && !u.is_empty()
                    {
                        *unit = Some(u.to_string());
                        break;
                    }
                }
            }
        }
        if trailing.is_none()
            && multiline
            && let Some(&l) = items.last()
        {
            *trailing = Some(comma_after(ch, l).is_some());
        }
        if unit.is_some() && trailing.is_some() {
            return true;
        }
    }
    n.children
        .iter()
        .filter(|c| c.kind.is_value() || c.kind == K::Prop || c.kind == K::Root)
        .any(|c| style_of(text, c, found))
}

/// Move a node parsed from a slice to the slice's place in the whole text.
fn shift(n: &mut Syn, by: usize) {
    n.start += by;
    n.end += by;
    for c in &mut n.children {
        shift(c, by);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn group() -> Value {
        json!({"hooks": [{"type": "command", "command": "/x/memtrail hook claude", "timeout": 30}]})
    }

    /// The messages of [`EditError`] (thiserror), each exactly.
    #[test]
    fn edit_error_messages() {
        for (e, want) in [
            (
                EditError::Parse {
                    line: 3,
                    col: 5,
                    msg: "Expected comma".into(),
                },
                "line 3, column 5: Expected comma",
            ),
            (
                EditError::NotAnObject,
                "the top-level value is not a JSON object",
            ),
            (
                EditError::WrongType {
                    path: "hooks.Stop".into(),
                    expected: "an array",
                },
                "`hooks.Stop` is not an array",
            ),
            (
                EditError::Missing {
                    path: "hooks".into(),
                },
                "nothing at `hooks`",
            ),
            (
                EditError::Internal("empty path".into()),
                "internal error: empty path",
            ),
        ] {
            assert_eq!(e.to_string(), want);
        }
    }

    /// Install-like: put a group at hooks.Stop (appending, creating), then undo it.
    pub(super) fn round_trip_pub(src: &str) -> String {
        round_trip(src)
    }

    /// The round trip with a full parse and with one scoped to `hooks` (as the installer
    /// parses): both undo exactly, and make the same edit.
    fn round_trip(src: &str) -> String {
        let full = round_trip_with(src, &|t| JsonDoc::parse(t));
        let scope = ["hooks".to_string()];
        let scoped = round_trip_with(src, &|t| JsonDoc::parse_scoped(t, &scope));
        assert_eq!(full, scoped, "scoped parse edits differently:\n{src}");
        full
    }

    fn round_trip_with(src: &str, parse: &dyn Fn(&str) -> Result<JsonDoc, EditError>) -> String {
        let mut d = parse(src).unwrap();
        let blank = d.ensure_root_object().unwrap();
        let stop = vec!["hooks".to_string(), "Stop".to_string()];
        let mut created = Vec::new();
        let mut inners: Vec<(Vec<Seg>, String)> = Vec::new();
        match d.kind(&keys(&stop)) {
            Some(Kind::Array) => {
                if let Some(inner) = d.append(&keys(&stop), None, &group()).unwrap() {
                    inners.push((keys(&stop), inner));
                }
            }
            None => {
                let (depth, inner) = d.set_creating(&stop, &json!([group()])).unwrap();
                if let Some(inner) = inner {
                    inners.push((keys(&stop[..depth]), inner));
                }
                for i in depth..stop.len() {
                    created.push(keys(&stop[..=i]));
                }
            }
            _ => panic!(),
        }
        // A second container appended next to the first (commas between siblings).
        d.set_creating(&["hooks".to_string(), "Zz".to_string()], &json!([1]))
            .unwrap();
        created.push(keys(&["hooks".to_string(), "Zz".to_string()]));
        let after = d.text();
        assert_strict_stays_strict(src, &after);
        let mut u = parse(&after).unwrap();
        u.remove(&[Seg::key("hooks"), Seg::key("Zz")], None)
            .unwrap();
        let n = u.len(&keys(&stop)).unwrap();
        let mut p = keys(&stop);
        p.push(Seg::Index(n - 1));
        let restore = |path: &[Seg]| {
            inners
                .iter()
                .find(|(p, _)| p == path)
                .map(|(_, s)| s.clone())
        };
        u.remove(&p, restore(&keys(&stop)).as_deref()).unwrap();
        for c in created.iter().rev() {
            if u.len(c) == Some(0) {
                let parent = &c[..c.len() - 1];
                u.remove(c, restore(parent).as_deref()).unwrap();
            }
        }
        if let Some(b) = blank
            && u.len(&[]) == Some(0)
        {
            u.set_text(&b).unwrap();
        }
        let back = u.text();
        assert_eq!(back, src, "after install:\n{after}");
        after
    }

    /// Text that was strict JSON stays strict JSON (no comma lost or added where JSON forbids).
    fn assert_strict_stays_strict(before: &str, after: &str) {
        let strip = |t: &str| t.trim_start_matches('\u{feff}').to_string();
        if serde_json::from_str::<Value>(&strip(before)).is_ok()
            && let Err(e) = serde_json::from_str::<Value>(&strip(after))
        {
            panic!("{e}:\n{after}");
        }
    }

    #[test]
    fn round_trips() {
        let cases = [
            "",
            "   \n",
            "// nothing yet\n",
            "{}",
            "{}\n",
            "{ }",
            "{\n}\n",
            "{\"a\": 1}",
            "{\"a\":1,\"hooks\":{}}",
            "{\n  \"hooks\": {}\n}\n",
            "{\n  \"hooks\": {\n  }\n}\n",
            "{\"hooks\": {}, \"x\": 1}",
            "{\n  \"a\": 1\n\n}\n",
            "{\n\n  \"a\": 1\n}\n",
            "{\n  \"a\": 1 // c\n}\n",
            "{\n  \"a\": 1, // c\n}\n",
            "{\n  \"a\": 1\n  // end\n}\n",
            "{\n  // only a comment\n}\n",
            "{\n  \"a\": 1,\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": []},\n    ],\n  },\n}\n",
            "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [{\"type\": \"command\", \"command\": \"other\"}]\n      }\n    ]\n  }\n}\n",
            "{\n  \"hooks\": {\n    \"Stop\": []\n  }\n}\n",
            "{\n  \"hooks\": {\n    \"Stop\": [{\"hooks\": []}]\n  }\n}\n",
            "{\n  \"hooks\": {\n    \"Stop\": [\n\n      {\"a\": 1}\n\n    ]\n  }\n}\n",
            "{\r\n  \"a\": 1\r\n}\r\n",
            "{\r\n\t\"a\": 1,\r\n\t\"hooks\": {\r\n\t\t\"Other\": []\r\n\t}\r\n}",
            "\u{feff}{\n    \"a\": [1, 2]\n}\n",
            "{\n  \"a\": 1 /* block */ }",
            "{\n  \"a\": 1}",
            "{/* c */}",
        ];
        for c in cases {
            round_trip(c);
        }
    }

    #[test]
    fn style_is_copied() {
        let after = round_trip("{\n\t\"a\": 1\n}\n");
        assert!(
            after.contains("\n\t\"hooks\": {\n\t\t\"Stop\": [\n\t\t\t{\n"),
            "{after}"
        );
        let after = round_trip("{\r\n    \"a\": 1,\r\n}\r\n");
        assert!(!after.replace("\r\n", "").contains('\n'), "{after:?}");
        assert!(
            after.contains("\r\n    \"hooks\": {\r\n        \"Stop\": ["),
            "{after:?}"
        );
        assert!(
            after.contains("\"timeout\": 30,\r\n"),
            "trailing commas copied: {after:?}"
        );
        let after = round_trip("{\"a\": 1}");
        assert!(!after.contains('\n'), "one line stays one line: {after}");
        let after = round_trip("{\n  \"a\": 1 // c\n}\n");
        assert!(
            after.starts_with("{\n  \"a\": 1, // c\n  \"hooks\": {"),
            "{after}"
        );
    }

    #[test]
    fn remove_middle_and_first_items() {
        let cases = [
            ("[1, 2, 3]", 1, "[1, 3]"),
            ("[1, 2, 3]", 0, "[2, 3]"),
            ("[1, 2, 3]", 2, "[1, 2]"),
            ("[\n  1,\n  2,\n  3\n]", 1, "[\n  1,\n  3\n]"),
            ("[\n  1,\n  2,\n  3\n]", 2, "[\n  1,\n  2\n]"),
            ("[\n  1,\n  2, // two\n  3\n]", 1, "[\n  1,\n  3\n]"),
            ("[\n  1,\n  2,\n]", 1, "[\n  1,\n]"),
            ("[2]", 0, "[]"),
            ("[\n  // keep\n  2\n]", 0, "[\n  // keep\n]"),
        ];
        for (src, i, want) in cases {
            let mut d = JsonDoc::parse(&format!("{{\"a\": {src}}}")).unwrap();
            d.remove(&[Seg::key("a"), Seg::Index(i)], None).unwrap();
            assert_eq!(d.text(), format!("{{\"a\": {want}}}"), "{src} - {i}");
        }
    }

    #[test]
    fn replace_is_in_place() {
        let src =
            "{\n  // c\n  \"s\": {\"command\": \"/old\", \"args\": [\"mcp\"]},\n  \"z\": 2,\n}\n";
        let mut d = JsonDoc::parse(src).unwrap();
        d.replace(&[Seg::key("s"), Seg::key("command")], &json!("/new dir/x"))
            .unwrap();
        assert_eq!(
            d.text(),
            src.replace("\"/old\"", "\"/new dir/x\""),
            "only the string changes"
        );
    }

    #[test]
    fn scoped_parse_reads_and_edits_only_its_keys() {
        let src = "{\n  \"big\": {\"a\": [1, 2], \"a\": 3},\n  \"hooks\": {\"x\": 1}\n}\n";
        let scope = ["hooks".to_string()];
        let mut d = JsonDoc::parse_scoped(src, &scope).unwrap();
        // Outside the scope: the value is known as a whole, not inside; a duplicate there is
        // not checked.
        assert_eq!(d.kind(&[Seg::key("big")]), Some(Kind::Object));
        assert_eq!(d.get(&[Seg::key("big")]), Some(json!({"a": 3})));
        assert_eq!(d.kind(&[Seg::key("big"), Seg::key("a")]), None);
        assert_eq!(d.len(&[Seg::key("big")]), None);
        assert_eq!(d.check_unique_keys(), Ok(()));
        assert!(matches!(
            d.append(&[Seg::key("big")], Some("b"), &json!(1)),
            Err(EditError::Internal(_))
        ));
        assert!(matches!(
            d.remove(&[Seg::key("big"), Seg::key("a")], None),
            Err(EditError::Missing { .. } | EditError::Internal(_))
        ));
        assert_eq!(d.text(), src, "refused edits change nothing");
        // Inside it, and at the top level, everything works.
        d.append(&[Seg::key("hooks")], Some("y"), &json!(2))
            .unwrap();
        d.remove(&[Seg::key("big")], None).unwrap();
        assert_eq!(d.text(), "{\n  \"hooks\": {\"x\": 1, \"y\": 2}\n}\n");
        // A full parse sees the duplicate.
        let full = JsonDoc::parse(src).unwrap();
        assert_eq!(
            full.check_unique_keys(),
            Err(EditError::Parse {
                line: 2,
                col: 24,
                msg: "duplicate key `a` (JSON.parse would keep the last one)".into()
            })
        );
        // The value of a document with duplicates is JSON.parse's.
        assert_eq!(full.value().unwrap()["big"], json!({"a": 3}));
    }

    #[test]
    fn errors_are_reported_with_positions() {
        match JsonDoc::parse("{\n  \"a\": 1,\n  \"b\": [1, 2\n}\n") {
            Err(EditError::Parse { line, .. }) => assert!(line >= 3),
            other => panic!("{other:?}"),
        }
        let mut d = JsonDoc::parse("[1]").unwrap();
        assert_eq!(d.ensure_root_object(), Err(EditError::NotAnObject));
        let mut d = JsonDoc::parse("{\"hooks\": 3}").unwrap();
        let before = d.text();
        assert!(matches!(
            d.set_creating(&["hooks".into(), "Stop".into()], &json!([])),
            Err(EditError::WrongType { .. })
        ));
        assert_eq!(d.text(), before);
    }
}

/// Generated documents in many styles: every install-like edit must undo byte for byte, keep
/// strict JSON strict, and no input (including every truncation) may panic the parser.
#[cfg(test)]
mod generated {
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
            xs[self.below(xs.len() as u64) as usize]
        }
    }

    struct Gen {
        rng: Rng,
        nl: &'static str,
        unit: &'static str,
        trailing: bool,
        comments: bool,
    }

    impl Gen {
        fn scalar(&mut self) -> String {
            let r = &mut self.rng;
            match r.below(5) {
                0 => format!("\"s{}\"", r.below(100)),
                1 => r.below(1000).to_string(),
                2 => "true".into(),
                3 => "null".into(),
                _ => "\"a \\\"q\\\" é\"".into(),
            }
        }

        fn value(&mut self, depth: usize, indent: &str, key_hint: Option<&str>) -> String {
            let kind = if key_hint == Some("hooks") {
                0
            } else if key_hint == Some("Stop") {
                1
            } else if depth > 3 {
                2
            } else {
                self.rng.below(3)
            };
            match kind {
                0 => self.container(depth, indent, true),
                1 => self.container(depth, indent, false),
                _ => self.scalar(),
            }
        }

        fn container(&mut self, depth: usize, indent: &str, object: bool) -> String {
            let (open, close) = if object { ("{", "}") } else { ("[", "]") };
            let n = self.rng.below(4) as usize;
            let one_line = self.rng.below(4) == 0;
            let inner = format!("{indent}{}", self.unit);
            let mut s = String::from(open);
            if n == 0 {
                s.push_str(
                    self.rng
                        .pick(&["", " ", "\n", "\n  "])
                        .replace('\n', self.nl)
                        .as_str(),
                );
                s.push_str(close);
                return s;
            }
            let keys = ["hooks", "Stop", "model", "a", "b", "mcpServers", "x y"];
            let mut used = Vec::new();
            for i in 0..n {
                if one_line {
                    if i > 0 {
                        s.push_str(", ");
                    }
                } else {
                    s.push_str(self.nl);
                    if self.comments && self.rng.below(5) == 0 {
                        s.push_str(&inner);
                        s.push_str("// note");
                        s.push_str(self.nl);
                    }
                    s.push_str(&inner);
                }
                if object {
                    let mut k = self.rng.pick(&keys);
                    while used.contains(&k) {
                        k = self.rng.pick(&keys);
                    }
                    used.push(k);
                    s.push_str(&format!("\"{k}\": "));
                    let v = self.value(depth + 1, &inner, Some(k));
                    s.push_str(&v);
                } else {
                    let v = self.value(depth + 1, &inner, None);
                    s.push_str(&v);
                }
                let last = i + 1 == n;
                if !one_line && (!last || self.trailing) {
                    s.push(',');
                }
                if !one_line && self.comments && self.rng.below(6) == 0 {
                    s.push_str(" /* c */");
                }
            }
            if !one_line {
                s.push_str(self.nl);
                s.push_str(indent);
            }
            s.push_str(close);
            s
        }
    }

    /// The parser here must accept and reject exactly what jsonc-parser does, with the same
    /// error (kind, line, column).
    fn assert_agrees(text: &str) {
        let ours = JsonDoc::parse(text).map(|_| ());
        let theirs = parse_to_ast(text, &CollectOptions::default(), &parse_options())
            .map(|_| ())
            .map_err(|e| EditError::Parse {
                line: e.line_display(),
                col: e.column_display(),
                msg: e.kind().to_string(),
            });
        assert_eq!(ours, theirs, "{text:?}");
    }

    #[test]
    fn parser_agrees_with_jsonc_parser() {
        let fixed = [
            "",
            "  ",
            "{",
            "[",
            "}",
            "]",
            "{}",
            "[] []",
            "{} x",
            "1 2",
            "{\"a\" 1}",
            "{\"a\": }",
            "{\"a\":",
            "{\"a\": 1 \"b\": 2}",
            "{\"a\": 1 b: 2}",
            "{\"a\": 1 {}}",
            "{\"a\": 1 []}",
            "[1 2]",
            "[1 {}]",
            "[1 []]",
            "[1 x]",
            "[1 true]",
            "[1,,2]",
            "[,]",
            "{,}",
            "{\"a\": 1,,}",
            "{a: 1, 2: 3, true: 4, null: 5, 'q': 6}",
            "{[]: 1}",
            "{\"a\"}",
            "{\"a\": 1]",
            "[1}",
            "[:]",
            "{:}",
            "/* open",
            "{\"a\": \"open",
            "{\"a\": 1 // c\r\n}",
            "{\r\"a\": @}",
            "{\n  \"a\": 1,\n  \"b\": [1, 2\n}\n",
            "[0x1F, +1, .5, 5., Infinity, -Infinity, NaN]",
            "{\"é\": \"ü\", \"x\": 1 2}",
        ];
        for t in fixed {
            assert_agrees(t);
        }
        let deep = "[".repeat(600) + &"]".repeat(600);
        assert_agrees(&deep);
        let deep = "{\"a\":".repeat(300) + "1" + &"}".repeat(300);
        assert_agrees(&deep);
    }

    #[test]
    fn install_like_edits_undo_exactly() {
        let mut tried = 0;
        for seed in 1..=400u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let nl = if rng.below(3) == 0 { "\r\n" } else { "\n" };
            let unit = rng.pick(&["  ", "    ", "\t"]);
            let trailing = rng.below(3) == 0;
            let comments = rng.below(2) == 0;
            let mut g = Gen {
                rng,
                nl,
                unit,
                trailing,
                comments,
            };
            let mut src = g.container(0, "", true);
            if g.rng.below(2) == 0 {
                src.push_str(nl);
            }
            // Every truncation, and every one-byte deletion or insertion of a piece of syntax,
            // parses or fails exactly as jsonc-parser says.
            for cut in 0..src.len() {
                if src.is_char_boundary(cut) {
                    assert_agrees(&src[..cut]);
                }
            }
            for _ in 0..20 {
                let at = g.rng.below(src.len() as u64 + 1) as usize;
                if !src.is_char_boundary(at) {
                    continue;
                }
                let mut m = src.clone();
                if g.rng.below(2) == 0 && at < m.len() && m.is_char_boundary(at + 1) {
                    m.remove(at);
                } else {
                    m.insert_str(
                        at,
                        g.rng
                            .pick(&[",", ":", "{", "}", "[", "]", "\"", "x", "1", "//", "/*"]),
                    );
                }
                assert_agrees(&m);
            }
            let doc = match JsonDoc::parse(&src) {
                Ok(d) => d,
                Err(e) => panic!("generated text does not parse: {e}\n{src}"),
            };
            let stop = keys(&["hooks".to_string(), "Stop".to_string()]);
            let hooks_ok = matches!(doc.kind(&stop[..1]), None | Some(Kind::Object));
            let stop_ok = matches!(doc.kind(&stop), None | Some(Kind::Array));
            if hooks_ok && stop_ok {
                tests::round_trip_pub(&src);
                tried += 1;
            }
        }
        assert!(tried > 100, "only {tried} documents were usable");
    }
}
