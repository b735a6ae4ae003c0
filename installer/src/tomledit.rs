//! Format-preserving edits of a TOML file (Codex's `config.toml`).
//!
//! toml_edit parses the file and makes the *structural* edits (adding or removing a key or a
//! table): it keeps comments, key order, blank lines, quoting and indentation of everything it
//! does not touch. Two things it does not keep are handled here:
//!
//! - **line endings**: toml_edit writes `\n` everywhere. The rendered text is mapped back onto
//!   the original line by line (a line diff): an unchanged line keeps its own ending, a new line
//!   gets the file's usual one (`\r\n` when most lines have it). So a CRLF file stays CRLF, and
//!   a file with mixed endings keeps each of them.
//! - **values replaced in place** (a user's `notify`, an older `command`): these are *spliced*
//!   into the byte range of the old value, so that the spacing and the comment around it stay,
//!   and uninstall splices the original text back, byte for byte.
//!
//! A missing final newline that install had to add is recorded and taken away again by
//! uninstall. A file that does not parse, or holds a key twice, is refused with its line and
//! column and left untouched.

use crate::action::Action;
use crate::edit::{Computed, Found, History, decode, new_dirs};
use crate::error::InstallError;
use crate::spec::{TomlItem, TomlValue};
use crate::state::{EntryRecord, FileState};
use std::path::Path;
use toml_edit::{Array, Document, DocumentMut, Item, Table, TableLike, Value};

/// A parsed TOML file: its text (without a byte order mark) and the document.
pub(crate) struct Parsed {
    pub bom: bool,
    pub text: String,
    pub doc: DocumentMut,
}

/// Parse a TOML file's bytes (`None`: missing, parsed as empty).
pub(crate) fn parse(path: &Path, bytes: Option<&[u8]>) -> Result<Parsed, InstallError> {
    let text = decode(path, bytes.unwrap_or(b""))?;
    let (bom, body) = match text.strip_prefix('\u{feff}') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let doc = parse_text(path, body)?;
    Ok(Parsed {
        bom,
        text: body.to_string(),
        doc: doc.into_mut(),
    })
}

fn parse_text(path: &Path, text: &str) -> Result<Document<String>, InstallError> {
    Document::parse(text.to_string()).map_err(|e| {
        let at = e.span().map(|r| r.start).unwrap_or(0).min(text.len());
        let (line, col) = line_col(text, at);
        InstallError::Parse {
            path: path.to_path_buf(),
            line,
            col,
            msg: one_line(e.message()),
        }
    })
}

fn one_line(msg: &str) -> String {
    let m = msg.trim();
    m.lines().next().unwrap_or(m).trim().to_string()
}

/// 1-based line and column (in characters) of byte `at`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let mut at = at;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    (line, before[start..].chars().count() + 1)
}

/// The value of `v` as a list of strings, if it is an array of strings.
pub(crate) fn string_array(v: &Value) -> Option<Vec<String>> {
    v.as_array()?
        .iter()
        .map(|x| x.as_str().map(str::to_string))
        .collect()
}

fn to_value(v: &TomlValue) -> Value {
    match v {
        TomlValue::Str(s) => Value::from(s.as_str()),
        TomlValue::Strings(xs) => Value::Array(Array::from_iter(xs.iter().map(String::as_str))),
    }
}

fn matches_value(cur: &Value, want: &TomlValue) -> bool {
    match want {
        TomlValue::Str(s) => cur.as_str() == Some(s.as_str()),
        TomlValue::Strings(xs) => string_array(cur).as_deref() == Some(xs.as_slice()),
    }
}

/// A value's text as toml_edit writes it, without surrounding blanks.
fn raw_of(v: &Value) -> String {
    let mut v = v.clone();
    v.decor_mut().clear();
    v.to_string()
}

fn strings_raw(xs: &[String]) -> String {
    raw_of(&Value::Array(Array::from_iter(
        xs.iter().map(String::as_str),
    )))
}

/// The item at `path` (keys from the top level), through tables and inline tables.
pub(crate) fn lookup<'a>(root: &'a Table, path: &[String]) -> Option<&'a Item> {
    let (last, parents) = path.split_last()?;
    let mut cur: &dyn TableLike = root;
    for k in parents {
        cur = cur.get(k)?.as_table_like()?;
    }
    cur.get(last)
}

fn lookup_mut<'a>(root: &'a mut Table, path: &[String]) -> Option<&'a mut Item> {
    let (last, parents) = path.split_last()?;
    let mut cur: &mut dyn TableLike = root;
    for k in parents {
        cur = cur.get_mut(k)?.as_table_like_mut()?;
    }
    cur.get_mut(last)
}

fn conflict(path: &Path, at: &[String], expected: &'static str) -> InstallError {
    InstallError::Conflict {
        path: path.to_path_buf(),
        json_path: at.join("."),
        expected,
    }
}

/// A value to write into the byte range of the value at `path`, after the structural edits.
struct Splice {
    path: Vec<String>,
    raw: String,
}

/// Apply splices to `text`: each replaces the bytes of the value at its path.
fn apply_splices(file: &Path, text: &str, splices: &[Splice]) -> Result<String, InstallError> {
    let mut text = text.to_string();
    for s in splices {
        let doc = parse_text(file, &text)?;
        let span = lookup(doc.as_table(), &s.path)
            .and_then(Item::span)
            .ok_or_else(|| InstallError::Internal {
                path: file.to_path_buf(),
                msg: format!("no value at `{}` to replace", s.path.join(".")),
            })?;
        text.replace_range(span, &s.raw);
    }
    Ok(text)
}

/// Map toml_edit's rendering (all `\n`) back onto the original's line endings: unchanged lines
/// keep theirs, new ones get the file's usual ending.
fn remap_newlines(original: &str, rendered: &str) -> String {
    fn split(s: &str) -> Vec<(&str, &str)> {
        let mut out = Vec::new();
        let mut rest = s;
        while !rest.is_empty() {
            match rest.find('\n') {
                Some(i) => {
                    let (line, term) = if i > 0 && rest.as_bytes()[i - 1] == b'\r' {
                        (&rest[..i - 1], &rest[i - 1..=i])
                    } else {
                        (&rest[..i], &rest[i..=i])
                    };
                    out.push((line, term));
                    rest = &rest[i + 1..];
                }
                None => {
                    out.push((rest, ""));
                    rest = "";
                }
            }
        }
        out
    }
    let old = split(original);
    let new = split(rendered);
    let crlf = old.iter().filter(|(_, t)| *t == "\r\n").count();
    let lf = old.iter().filter(|(_, t)| *t == "\n").count();
    let usual = if crlf > lf { "\r\n" } else { "\n" };
    if crlf == 0 {
        return rendered.to_string();
    }
    let old_lines: Vec<&str> = old.iter().map(|(l, _)| *l).collect();
    let new_lines: Vec<&str> = new.iter().map(|(l, _)| *l).collect();
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &old_lines, &new_lines);
    let mut out = String::with_capacity(rendered.len() + crlf);
    for op in ops {
        match op {
            similar::DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                for i in 0..len {
                    let (line, term) = new[new_index + i];
                    out.push_str(line);
                    if !term.is_empty() {
                        let t = old[old_index + i].1;
                        out.push_str(if t.is_empty() { usual } else { t });
                    }
                }
            }
            similar::DiffOp::Insert {
                new_index, new_len, ..
            }
            | similar::DiffOp::Replace {
                new_index, new_len, ..
            } => {
                for (line, term) in &new[new_index..new_index + new_len] {
                    out.push_str(line);
                    if !term.is_empty() {
                        out.push_str(usual);
                    }
                }
            }
            similar::DiffOp::Delete { .. } => {}
        }
    }
    out
}

/// Render the edited document, keep the original's line endings, then splice values.
fn render(
    file: &Path,
    original: &str,
    doc: &DocumentMut,
    splices: &[Splice],
) -> Result<String, InstallError> {
    let text = remap_newlines(original, &doc.to_string());
    let text = apply_splices(file, &text, splices)?;
    // Whatever was done, the result must parse.
    parse_text(file, &text).map_err(|e| InstallError::Internal {
        path: file.to_path_buf(),
        msg: format!("an edit produced text that does not parse: {e}"),
    })?;
    Ok(text)
}

/// Compute one TOML file's change.
pub(crate) fn compute(
    path: &Path,
    items: &[TomlItem],
    action: Action,
    current: Option<&[u8]>,
    history: &History<'_>,
) -> Result<Computed, InstallError> {
    let Parsed { bom, text, mut doc } = parse(path, current)?;
    let mut lines = Vec::new();
    let mut splices = Vec::new();
    match action {
        Action::Install => {
            let mut rec = FileState {
                created_file: current.is_none(),
                created_dirs: match current {
                    None => new_dirs(history.target),
                    Some(_) => Vec::new(),
                },
                ..FileState::default()
            };
            // A value's exact text in the file (its span), for what uninstall puts back: toml_edit
            // gives a value's text with `\n` line ends and a multi-line string's CR as an escape
            // (a user's multi-line `notify` in a CRLF file came back changed).
            let spanned = parse_text(path, &text).ok();
            let source_of = |key: &str| -> Option<String> {
                let span = spanned.as_ref()?.as_table().get(key)?.span()?;
                text.get(span).map(str::to_string)
            };
            for item in items {
                match item {
                    TomlItem::Table {
                        label,
                        table_path,
                        key,
                        keys,
                    } => install_table(
                        path,
                        &mut doc,
                        (label, table_path, key, keys),
                        history,
                        &mut rec,
                        &mut splices,
                        &mut lines,
                    )?,
                    TomlItem::ChainedArgv {
                        label,
                        key,
                        ours,
                        chain_flag,
                        is_ours,
                    } => install_chain(
                        path,
                        &mut doc,
                        (label, key, ours, chain_flag, *is_ours, source_of(key)),
                        history,
                        &mut rec,
                        &mut splices,
                        &mut lines,
                    )?,
                }
            }
            let mut after = render(path, &text, &doc, &splices)?;
            if after == text {
                return Ok(Computed {
                    after: current.map(<[u8]>::to_vec),
                    lines: Vec::new(),
                    record: None,
                    remove_dirs: Vec::new(),
                });
            }
            if !text.is_empty() && !text.ends_with('\n') && after.ends_with('\n') {
                rec.final_newline_added = true;
            }
            if bom {
                after.insert(0, '\u{feff}');
            }
            Ok(Computed {
                after: Some(after.into_bytes()),
                lines,
                record: Some(rec),
                remove_dirs: Vec::new(),
            })
        }
        Action::Uninstall => {
            let Some(cur) = current else {
                return Ok(Computed {
                    after: None,
                    lines,
                    record: None,
                    remove_dirs: Vec::new(),
                });
            };
            for item in items {
                match item {
                    TomlItem::Table {
                        label,
                        table_path,
                        key,
                        keys,
                    } => uninstall_table(
                        &mut doc,
                        (label, table_path, key, keys),
                        history,
                        &mut splices,
                        &mut lines,
                    ),
                    TomlItem::ChainedArgv {
                        label,
                        key,
                        chain_flag,
                        is_ours,
                        ..
                    } => uninstall_chain(
                        &mut doc,
                        (label, key, chain_flag, *is_ours),
                        history,
                        &mut splices,
                        &mut lines,
                    ),
                }
            }
            if lines.is_empty() {
                return Ok(Computed {
                    after: Some(cur.to_vec()),
                    lines,
                    record: None,
                    remove_dirs: Vec::new(),
                });
            }
            let mut after = render(path, &text, &doc, &splices)?;
            if history.state.is_some_and(|s| s.final_newline_added) {
                if let Some(s) = after.strip_suffix("\r\n") {
                    after = s.to_string();
                } else if let Some(s) = after.strip_suffix('\n') {
                    after = s.to_string();
                }
            }
            let mut remove_dirs = Vec::new();
            // Emptied by this uninstall: it held memtrail's entries and nothing else.
            if after.trim().is_empty()
                && !text.trim().is_empty()
                && (history.created_file() || history.unknown())
            {
                if let Some(st) = history.state {
                    remove_dirs = st.created_dirs.clone();
                }
                return Ok(Computed {
                    after: None,
                    lines,
                    record: None,
                    remove_dirs,
                });
            }
            if bom {
                after.insert(0, '\u{feff}');
            }
            Ok(Computed {
                after: Some(after.into_bytes()),
                lines,
                record: None,
                remove_dirs,
            })
        }
    }
}

type TableArgs<'a> = (
    &'a String,
    &'a Vec<String>,
    &'a String,
    &'a Vec<(String, TomlValue)>,
);

fn install_table(
    file: &Path,
    doc: &mut DocumentMut,
    (label, table_path, key, keys): TableArgs<'_>,
    history: &History<'_>,
    rec: &mut FileState,
    splices: &mut Vec<Splice>,
    lines: &mut Vec<String>,
) -> Result<(), InstallError> {
    // The parents (`mcp_servers`), created as implicit tables (no header of their own).
    let mut cur: &mut dyn TableLike = doc.as_table_mut();
    for (i, seg) in table_path.iter().enumerate() {
        if cur.get(seg).is_none() {
            let mut t = Table::new();
            t.set_implicit(true);
            cur.insert(seg, Item::Table(t));
            rec.add_created(table_path[..=i].to_vec());
        }
        cur = match cur.get_mut(seg).and_then(Item::as_table_like_mut) {
            Some(t) => t,
            None => return Err(conflict(file, &table_path[..=i], "a table")),
        };
    }
    let mut full = table_path.clone();
    full.push(key.clone());
    match cur.get_mut(key) {
        None => {
            let mut t = Table::new();
            for (k, v) in keys {
                t.insert(k, Item::Value(to_value(v)));
            }
            cur.insert(key, Item::Table(t));
            rec.add_created(full);
            lines.push(format!("add {label}"));
        }
        Some(item) => {
            let Some(t) = item.as_table_like_mut() else {
                return Err(conflict(file, &full, "a table"));
            };
            let old = t.get("command").and_then(Item::as_str).map(str::to_string);
            // Another tool's server under memtrail's name: not memtrail's to overwrite.
            if let Some(program) = foreign_program(&*t, keys) {
                return Err(InstallError::ForeignEntry {
                    path: file.to_path_buf(),
                    json_path: full.join("."),
                    program,
                });
            }
            let mut changed = false;
            for (k, v) in keys {
                let mut kp = full.clone();
                kp.push(k.clone());
                match t.get(k) {
                    None => {
                        t.insert(k, Item::Value(to_value(v)));
                        rec.set_entry(EntryRecord {
                            path: kp,
                            original: None,
                            installed: raw_of(&to_value(v)),
                        });
                        changed = true;
                    }
                    Some(i) => {
                        let Some(cv) = i.as_value() else {
                            return Err(conflict(file, &kp, "a value"));
                        };
                        if matches_value(cv, v) {
                            continue;
                        }
                        let original = match history.entry(&kp) {
                            Some(r) => r.original.clone(),
                            None => Some(raw_of(cv)),
                        };
                        let raw = raw_of(&to_value(v));
                        splices.push(Splice {
                            path: kp.clone(),
                            raw: raw.clone(),
                        });
                        rec.set_entry(EntryRecord {
                            path: kp,
                            original,
                            installed: raw,
                        });
                        changed = true;
                    }
                }
            }
            if changed {
                let new = keys.iter().find_map(|(k, v)| match v {
                    TomlValue::Str(s) if k == "command" => Some(s.clone()),
                    _ => None,
                });
                lines.push(match (old, new) {
                    (Some(o), Some(n)) if o != n => format!("update {label}: {o} → {n}"),
                    _ => format!("update {label}"),
                });
            }
        }
    }
    Ok(())
}

fn uninstall_table(
    doc: &mut DocumentMut,
    (label, table_path, key, keys): TableArgs<'_>,
    history: &History<'_>,
    splices: &mut Vec<Splice>,
    lines: &mut Vec<String>,
) {
    let mut full = table_path.clone();
    full.push(key.clone());
    let Some(t) = lookup(doc.as_table(), &full).and_then(Item::as_table_like) else {
        return;
    };
    // Another tool's server under memtrail's name (install refused it): it stays.
    if let Some(program) = foreign_program(t, keys) {
        lines.push(format!(
            "keep {label}: it runs {program}, not memtrail (another tool's entry)"
        ));
        return;
    }
    // A table that was there before install gets its replaced values back (when they are
    // still as install left them) and loses the keys install added; any other memtrail table
    // goes whole.
    let mut restores = Vec::new();
    let mut removes = Vec::new();
    let pre_existing = history.state.is_some() && !history.created(&full);
    if pre_existing {
        for (k, v) in keys {
            let mut kp = full.clone();
            kp.push(k.clone());
            let Some(r) = history.entry(&kp) else {
                continue;
            };
            let still = t
                .get(k)
                .and_then(Item::as_value)
                .is_some_and(|cv| matches_value(cv, v));
            match &r.original {
                Some(orig) if still => restores.push((kp, orig.clone())),
                None if t.get(k).is_some() => removes.push(k.clone()),
                _ => {}
            }
        }
    }
    if pre_existing {
        if restores.is_empty() && removes.is_empty() {
            return;
        }
        if let Some(t) = lookup_mut(doc.as_table_mut(), &full).and_then(Item::as_table_like_mut) {
            for k in &removes {
                t.remove(k);
            }
        }
        for (path, raw) in restores {
            splices.push(Splice { path, raw });
        }
        lines.push(format!("restore {label}"));
        return;
    }
    // Keys memtrail did not write: a user's option for the server, or a line appended to the
    // file after install (TOML puts it in the last table, which install made memtrail's). The
    // table stays as it is, with a line saying why: removing it would delete them.
    let theirs: Vec<String> = t
        .iter()
        .map(|(k, _)| k.to_string())
        .filter(|k| !keys.iter().any(|(ours, _)| ours == k))
        .collect();
    if !theirs.is_empty() {
        lines.push(format!(
            "keep {label}: it holds keys memtrail did not write ({}); remove it by hand",
            theirs.join(", ")
        ));
        return;
    }
    let parent: &mut dyn TableLike = if table_path.is_empty() {
        doc.as_table_mut()
    } else {
        match lookup_mut(doc.as_table_mut(), table_path).and_then(Item::as_table_like_mut) {
            Some(p) => p,
            None => return,
        }
    };
    parent.remove(key);
    lines.push(format!("remove {label}"));
    // Parents install created go when they are empty.
    for depth in (1..=table_path.len()).rev() {
        let p = &table_path[..depth];
        let empty = lookup(doc.as_table(), p)
            .and_then(Item::as_table_like)
            .is_some_and(|t| t.is_empty());
        if !empty || !history.created(p) {
            break;
        }
        let (last, up) = p.split_last().expect("depth >= 1");
        let holder: Option<&mut dyn TableLike> = if up.is_empty() {
            Some(doc.as_table_mut())
        } else {
            lookup_mut(doc.as_table_mut(), up).and_then(Item::as_table_like_mut)
        };
        if let Some(h) = holder {
            h.remove(last);
        }
    }
}

/// A chained item's label, key, argv, chain flag and recogniser, and the exact text of the
/// value in the file (its span), when it was read.
type ChainArgs<'a> = (
    &'a String,
    &'a String,
    &'a Vec<String>,
    &'a String,
    fn(&[String]) -> bool,
    Option<String>,
);

/// memtrail's argv chained with `theirs`.
fn chained(ours: &[String], flag: &str, theirs: &[String]) -> Vec<String> {
    let mut v = ours.to_vec();
    if !theirs.is_empty() {
        v.push(flag.to_string());
        v.extend(theirs.iter().cloned());
    }
    v
}

/// The user's argv chained after memtrail's in `argv` (empty when there is none).
fn chained_tail<'a>(argv: &'a [String], ours_len: usize, flag: &str) -> &'a [String] {
    match argv.get(ours_len) {
        Some(f) if f == flag => &argv[ours_len + 1..],
        _ => &[],
    }
}

fn install_chain(
    file: &Path,
    doc: &mut DocumentMut,
    (label, key, ours, flag, is_ours, source): ChainArgs<'_>,
    history: &History<'_>,
    rec: &mut FileState,
    splices: &mut Vec<Splice>,
    lines: &mut Vec<String>,
) -> Result<(), InstallError> {
    let path = vec![key.clone()];
    let root = doc.as_table_mut();
    let Some(item) = root.get(key) else {
        let v = Value::Array(Array::from_iter(ours.iter().map(String::as_str)));
        root.insert(key, Item::Value(v.clone()));
        rec.set_entry(EntryRecord {
            path,
            original: None,
            installed: raw_of(&v),
        });
        lines.push(format!("add {label}"));
        return Ok(());
    };
    let Some(argv) = item.as_value().and_then(string_array) else {
        return Err(conflict(file, &path, "an array of strings"));
    };
    if is_ours(&argv) {
        // memtrail's already (maybe chained): point it at this binary, keep the chain.
        if argv.first() == ours.first() {
            return Ok(());
        }
        let tail = chained_tail(&argv, ours.len(), flag).to_vec();
        let raw = strings_raw(&chained(ours, flag, &tail));
        splices.push(Splice {
            path: path.clone(),
            raw: raw.clone(),
        });
        rec.set_entry(EntryRecord {
            path,
            original: history
                .entry(std::slice::from_ref(key))
                .and_then(|r| r.original.clone()),
            installed: raw,
        });
        lines.push(format!(
            "update {label}: {} → {}",
            argv.first().map(String::as_str).unwrap_or(""),
            ours[0]
        ));
        return Ok(());
    }
    // The user's own program: memtrail runs it after itself, with the same arguments. Its
    // exact text (`source`) is what uninstall puts back.
    let original = source.unwrap_or_else(|| item.as_value().map(raw_of).unwrap_or_default());
    let raw = strings_raw(&chained(ours, flag, &argv));
    splices.push(Splice {
        path: path.clone(),
        raw: raw.clone(),
    });
    rec.set_entry(EntryRecord {
        path,
        original: Some(original),
        installed: raw,
    });
    lines.push(if argv.is_empty() {
        format!("set {label}")
    } else {
        format!("chain {label} before {}", argv[0])
    });
    Ok(())
}

type UnchainArgs<'a> = (&'a String, &'a String, &'a String, fn(&[String]) -> bool);

fn uninstall_chain(
    doc: &mut DocumentMut,
    (label, key, flag, is_ours): UnchainArgs<'_>,
    history: &History<'_>,
    splices: &mut Vec<Splice>,
    lines: &mut Vec<String>,
) {
    let path = vec![key.clone()];
    let Some(argv) = doc
        .as_table()
        .get(key)
        .and_then(Item::as_value)
        .and_then(string_array)
    else {
        return;
    };
    if !is_ours(&argv) {
        return;
    }
    // How long memtrail's own part is: up to the chain flag.
    let ours_len = argv.iter().position(|a| a == flag).unwrap_or(argv.len());
    let tail = chained_tail(&argv, ours_len, flag);
    let original = history.entry(&path).and_then(|r| r.original.clone());
    // The exact original text when it says the same program; else the program itself.
    let restore = match original {
        Some(orig) => {
            let same = orig
                .parse::<Value>()
                .ok()
                .and_then(|v| string_array(&v))
                .is_some_and(|o| o == tail);
            if same {
                Some(orig)
            } else if tail.is_empty() {
                None
            } else {
                Some(strings_raw(tail))
            }
        }
        None if tail.is_empty() => None,
        None => Some(strings_raw(tail)),
    };
    match restore {
        Some(raw) => {
            splices.push(Splice { path, raw });
            lines.push(format!("restore {label}"));
        }
        None => {
            doc.as_table_mut().remove(key);
            lines.push(format!("remove {label}"));
        }
    }
}

/// What the table `t` of memtrail's item runs when that is not memtrail (another tool's
/// server under memtrail's name: `command = "npx"`), or `no program` when it names none;
/// `None` for memtrail's own (any version, wherever its binary is) and for items whose
/// `keys` name no command.
fn foreign_program(t: &dyn TableLike, keys: &[(String, TomlValue)]) -> Option<String> {
    let ours = keys.iter().find_map(|(k, v)| match v {
        TomlValue::Str(s) if k == "command" => Some(s.as_str()),
        _ => None,
    })?;
    let found = t.get("command").and_then(Item::as_str).map(str::to_string);
    crate::edit::foreign_program(found, ours)
}

/// The error for memtrail's table of `item` in `doc` holding another tool's server
/// ([`foreign_program`]), for `status`.
pub(crate) fn foreign_entry(
    file: &Path,
    doc: &DocumentMut,
    item: &TomlItem,
) -> Option<InstallError> {
    let TomlItem::Table {
        table_path,
        key,
        keys,
        ..
    } = item
    else {
        return None;
    };
    let mut full = table_path.clone();
    full.push(key.clone());
    let t = lookup(doc.as_table(), &full).and_then(Item::as_table_like)?;
    let program = foreign_program(t, keys)?;
    Some(InstallError::ForeignEntry {
        path: file.to_path_buf(),
        json_path: full.join("."),
        program,
    })
}

/// The state of one TOML item, for `status`.
pub(crate) fn inspect(doc: &DocumentMut, item: &TomlItem) -> Found {
    match item {
        TomlItem::Table {
            table_path,
            key,
            keys,
            ..
        } => {
            let mut full = table_path.clone();
            full.push(key.clone());
            let Some(t) = lookup(doc.as_table(), &full).and_then(Item::as_table_like) else {
                return Found::Missing;
            };
            let at = t.get("command").and_then(Item::as_str).map(str::to_string);
            let ok = keys.iter().all(|(k, v)| {
                t.get(k)
                    .and_then(Item::as_value)
                    .is_some_and(|cv| matches_value(cv, v))
            });
            if ok {
                Found::Present(at)
            } else {
                Found::Stale(at)
            }
        }
        TomlItem::ChainedArgv {
            key, ours, is_ours, ..
        } => {
            let Some(argv) = doc
                .as_table()
                .get(key)
                .and_then(Item::as_value)
                .and_then(string_array)
            else {
                return Found::Missing;
            };
            if !is_ours(&argv) {
                return Found::Missing;
            }
            let at = argv.first().cloned();
            if argv.first() == ours.first() {
                Found::Present(at)
            } else {
                Found::Stale(at)
            }
        }
    }
}

/// The table `key` inside the table at `table_path` (keys from the top level, through tables and
/// inline tables) of `doc`: its boolean `bool_key` and its string `str_key` (an agent's trust
/// record, e.g. Codex's `[hooks.state."<key>"]` with `enabled` and `trusted_hash`). `None` when
/// there is no such table.
pub(crate) fn record(
    doc: &DocumentMut,
    table_path: &[String],
    key: &str,
    bool_key: &str,
    str_key: &str,
) -> Option<(Option<bool>, Option<String>)> {
    let st = lookup(doc.as_table(), table_path)?
        .as_table_like()?
        .get(key)?
        .as_table_like()?;
    Some((
        st.get(bool_key).and_then(Item::as_bool),
        st.get(str_key).and_then(Item::as_str).map(str::to_string),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newlines_are_mapped_back() {
        let orig = "a = 1\r\nb = 2\r\n";
        let rendered = "a = 1\nx = 3\nb = 2\n";
        assert_eq!(
            remap_newlines(orig, rendered),
            "a = 1\r\nx = 3\r\nb = 2\r\n"
        );
        let mixed = "a = 1\r\nb = 2\nc = 3\r\n";
        assert_eq!(
            remap_newlines(mixed, "a = 1\nb = 2\nc = 3\nd = 4\n"),
            "a = 1\r\nb = 2\nc = 3\r\nd = 4\r\n"
        );
        assert_eq!(
            remap_newlines("a = 1\n", "a = 1\nb = 2\n"),
            "a = 1\nb = 2\n"
        );
    }

    #[test]
    fn records_are_read_through_tables_and_inline_tables() {
        let text = "[hooks.state.\"/c/hooks.json:stop:0:0\"]\nenabled = false\ntrusted_hash = \"sha256:1\"\n\n[other]\nstate = { k = { enabled = true } }\n";
        let doc = parse(Path::new("/c/config.toml"), Some(text.as_bytes()))
            .unwrap()
            .doc;
        let s = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let hooks = s(&["hooks", "state"]);
        assert_eq!(
            record(
                &doc,
                &hooks,
                "/c/hooks.json:stop:0:0",
                "enabled",
                "trusted_hash"
            ),
            Some((Some(false), Some("sha256:1".to_string())))
        );
        assert_eq!(
            record(
                &doc,
                &hooks,
                "/c/hooks.json:stop:1:0",
                "enabled",
                "trusted_hash"
            ),
            None
        );
        assert_eq!(
            record(
                &doc,
                &s(&["other", "state"]),
                "k",
                "enabled",
                "trusted_hash"
            ),
            Some((Some(true), None))
        );
        assert_eq!(
            record(&doc, &s(&["none"]), "k", "enabled", "trusted_hash"),
            None
        );
    }

    #[test]
    fn errors_have_positions() {
        let e = parse(Path::new("/x/config.toml"), Some(b"a = 1\nb = \nc = 3\n"))
            .err()
            .unwrap();
        match e {
            InstallError::Parse { line, .. } => assert_eq!(line, 2),
            other => panic!("{other}"),
        }
        let e = parse(
            Path::new("/x/config.toml"),
            Some(b"model = 1\n\nmodel = 2\n"),
        )
        .err()
        .unwrap();
        match e {
            InstallError::Parse { line, col, msg, .. } => {
                assert_eq!((line, col), (3, 1));
                assert!(msg.contains("duplicate key"), "{msg}");
            }
            other => panic!("{other}"),
        }
    }
}
