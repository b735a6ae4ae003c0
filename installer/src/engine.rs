//! The engine: given a file's current bytes and memtrail's entries for it, compute the new bytes
//! for an install or an uninstall, and describe each change. Pure (no writes), so that a plan and
//! an apply that must redo its work on newer bytes use the same code.

use crate::action::Action;
use crate::edit::{Computed, Found, History, decode, new_dirs};
use crate::error::InstallError;
use crate::jsonedit::{EditError, JsonDoc, Kind, Seg, keys, show_path};
use crate::spec::{Body, FileSpec, HandlerItem, JsonItem, PropertyItem, WholeItem, json_scope};
use crate::state::{EntryRecord, FileState};
use serde_json::Value;
use std::path::Path;

pub(crate) fn map_edit(path: &Path, e: EditError) -> InstallError {
    let path = path.to_path_buf();
    match e {
        EditError::Parse { line, col, msg } => InstallError::Parse {
            path,
            line,
            col,
            msg,
        },
        EditError::NotAnObject => InstallError::NotAnObject { path },
        EditError::WrongType {
            path: json_path,
            expected,
        } => InstallError::Conflict {
            path,
            json_path,
            expected,
        },
        EditError::Missing { path: p } => InstallError::Internal {
            path,
            msg: format!("nothing at `{p}`"),
        },
        EditError::Internal(msg) => InstallError::Internal { path, msg },
    }
}

/// Parse a config file's bytes (`None`: missing, parsed as an empty document) in `scope` (the
/// top-level keys memtrail reads; see [`JsonDoc::parse_scoped`]). The whole file must parse;
/// within the scope, and at the top level, no object may hold a key twice: JSON.parse keeps the
/// last one, so an edit of the first would go where the agent does not look.
pub(crate) fn parse_doc(
    path: &Path,
    bytes: Option<&[u8]>,
    scope: &[String],
) -> Result<JsonDoc, InstallError> {
    let text = decode(path, bytes.unwrap_or(b""))?;
    let doc = JsonDoc::parse_scoped(text, scope).map_err(|e| map_edit(path, e))?;
    doc.check_object_root().map_err(|e| map_edit(path, e))?;
    doc.check_unique_keys().map_err(|e| map_edit(path, e))?;
    Ok(doc)
}

/// Where `text` stops being strict JSON (RFC 8259, what `JSON.parse` accepts) although it is
/// valid JSONC: `(line, column, what)`, 1-based, `what` being `a comment`, `a trailing comma`
/// or the parser's message. `None` for strict JSON and for a blank file (memtrail writes `{}`).
/// A leading byte order mark is allowed (Claude Code 2.1.332 reads such a file).
pub(crate) fn not_strict_json(text: &str) -> Option<(usize, usize, String)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return None;
    }
    let err = serde_json::from_str::<serde::de::IgnoredAny>(text).err()?;
    let (line, col) = (err.line(), err.column());
    let msg = err.to_string();
    let msg = msg
        .rsplit_once(" at line ")
        .map_or(msg.as_str(), |(m, _)| m);
    // The byte offset of the error (serde_json counts columns in bytes).
    let offset = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum::<usize>()
        + col.saturating_sub(1);
    let mut cut = offset.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    // Told by the bytes at the error, not by the parser's message: serde_json reports a
    // trailing comma (its `TrailingComma`, not public) at the `}` or `]` that follows the
    // comma and JSON whitespace, and no other error there.
    let (before, at) = text.split_at(cut);
    let closes_after_comma =
        (at.starts_with('}') || at.starts_with(']')) && before.trim_end().ends_with(',');
    let what = if closes_after_comma {
        "a trailing comma".to_string()
    } else if at.starts_with("//") || at.starts_with("/*") {
        "a comment".to_string()
    } else {
        msg.to_string()
    };
    Some((line, col, what))
}

/// The error for a file its agent reads as strict JSON ([`FileSpec::strict_json`]) when its
/// bytes are not.
pub(crate) fn strict_json_error(spec: &FileSpec, bytes: &[u8]) -> Option<InstallError> {
    let consequence = spec.strict_json?;
    let (line, col, what) = not_strict_json(std::str::from_utf8(bytes).ok()?)?;
    Some(InstallError::NotStrictJson {
        path: spec.path.clone(),
        line,
        col,
        what,
        consequence,
    })
}

/// Compute one file's change for `action` from its current bytes (`None`: missing). An install
/// into a file its agent would ignore (not strict JSON where the agent requires it) is refused.
pub(crate) fn compute(
    spec: &FileSpec,
    action: Action,
    current: Option<&[u8]>,
    history: &History<'_>,
) -> Result<Computed, InstallError> {
    match &spec.body {
        Body::Json(items) => {
            // Checked before the edit (whose copies of a big `.claude.json` would add to this
            // parse's peak); a file that is not even JSONC still gets its parse error.
            let strict = match action {
                Action::Install => current.and_then(|b| strict_json_error(spec, b)),
                Action::Uninstall => None,
            };
            let c = compute_json(&spec.path, items, action, current, history)?;
            match strict {
                Some(e) => Err(e),
                None => Ok(c),
            }
        }
        Body::Whole(w) => compute_whole(&spec.path, w, action, current, history),
        Body::Toml(items) => crate::tomledit::compute(&spec.path, items, action, current, history),
        Body::Yaml(items) => crate::yamledit::compute(&spec.path, items, action, current, history),
    }
}

/// Whether an existing whole file is memtrail's (always, for an item without a recogniser).
pub(crate) fn whole_is_ours(w: &WholeItem, bytes: &[u8]) -> bool {
    match w.is_ours {
        None => true,
        Some(f) => std::str::from_utf8(bytes).is_ok_and(f),
    }
}

fn compute_whole(
    path: &Path,
    w: &WholeItem,
    action: Action,
    current: Option<&[u8]>,
    history: &History<'_>,
) -> Result<Computed, InstallError> {
    let mut out = Computed {
        after: current.map(<[u8]>::to_vec),
        lines: Vec::new(),
        record: None,
        remove_dirs: Vec::new(),
    };
    // A retired place: memtrail's file there goes, at install as at uninstall.
    let action = if w.retired { Action::Uninstall } else { action };
    match action {
        Action::Install => match current {
            Some(b) if b == w.content.as_bytes() => {}
            Some(b) if !whole_is_ours(w, b) => {
                return Err(InstallError::Foreign {
                    path: path.to_path_buf(),
                });
            }
            Some(_) => {
                out.after = Some(w.content.clone().into_bytes());
                out.lines.push(format!("update {}", w.label));
                out.record = Some(FileState::default());
            }
            None => {
                out.after = Some(w.content.clone().into_bytes());
                out.lines.push(format!("add {}", w.label));
                out.record = Some(FileState {
                    created_file: true,
                    created_dirs: new_dirs(history.target),
                    ..FileState::default()
                });
            }
        },
        Action::Uninstall => {
            if current.is_some_and(|b| whole_is_ours(w, b)) {
                out.after = None;
                out.lines.push(format!("remove {}", w.label));
                out.remove_dirs = w.owned_dirs.clone();
                if let Some(st) = history.state {
                    out.remove_dirs.extend(st.created_dirs.iter().cloned());
                } else if history.unknown() {
                    // With nothing to tell, the folder holding memtrail's own (`skills/` above
                    // `skills/memtrail/`) goes too when that was all it held (removed only if
                    // empty).
                    out.remove_dirs.extend(
                        w.owned_dirs
                            .iter()
                            .filter_map(|d| d.parent())
                            .map(Path::to_path_buf),
                    );
                }
            }
        }
    }
    Ok(out)
}

fn compute_json(
    path: &Path,
    items: &[JsonItem],
    action: Action,
    current: Option<&[u8]>,
    history: &History<'_>,
) -> Result<Computed, InstallError> {
    let mut doc = parse_doc(path, current, &json_scope(items))?;
    let e = |err: EditError| map_edit(path, err);
    let mut lines = Vec::new();
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
            if let Some(blank) = doc.ensure_root_object().map_err(e)?
                && current.is_some()
            {
                rec.blank_text = Some(blank);
            }
            // Per item whose entry install writes: the entry's original text, when install
            // replaces one that predates memtrail's install.
            let mut written: Vec<(&JsonItem, Option<String>)> = Vec::new();
            if let Some(err) = items.iter().find_map(|it| foreign_entry(path, &doc, it)) {
                return Err(err);
            }
            for item in items {
                let w = match item {
                    JsonItem::Handler(h) => install_handler(&mut doc, h, &mut rec, &mut lines),
                    JsonItem::Property(p) => install_property(&mut doc, p, &mut rec, &mut lines),
                }
                .map_err(e)?;
                if let (Some(Written::Added), JsonItem::Property(p)) = (&w, item)
                    && p.shared
                {
                    // Not memtrail's entry: only remember that install created it.
                    rec.add_created(item.entry_path());
                    continue;
                }
                if let Some(w) = w {
                    let path = item.entry_path();
                    let original = match (w, history.entry(&path)) {
                        (Written::Added, _) => None,
                        // Updated again: what it replaced the first time is what was there.
                        (Written::Updated(_), Some(r)) => r.original.clone(),
                        (Written::Updated(text), None) => Some(text),
                    };
                    written.push((item, original));
                }
            }
            // The texts install leaves, taken once every edit is made. (An entry is not found
            // when the binary is not named like memtrail's: then there is nothing to record.)
            for (item, original) in written {
                if let Some(installed) = entry_text(&doc, item) {
                    rec.set_entry(EntryRecord {
                        path: item.entry_path(),
                        original,
                        installed: installed.to_string(),
                    });
                }
            }
            let after = doc.into_text();
            let unchanged = current == Some(after.as_bytes());
            Ok(Computed {
                after: if unchanged {
                    current.map(<[u8]>::to_vec)
                } else {
                    Some(after.into_bytes())
                },
                lines,
                record: (!unchanged).then_some(rec),
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
            if doc.is_blank() {
                return Ok(Computed {
                    after: Some(cur.to_vec()),
                    lines,
                    record: None,
                    remove_dirs: Vec::new(),
                });
            }
            let held = &held_containers(&doc, items);
            let is_shared = |it: &JsonItem| matches!(it, JsonItem::Property(p) if p.shared);
            for item in items.iter().filter(|it| !is_shared(it)) {
                match item {
                    JsonItem::Handler(h) => {
                        uninstall_handler(&mut doc, h, history, held, &mut lines)
                    }
                    JsonItem::Property(p) => {
                        uninstall_property(&mut doc, p, history, held, &mut lines)
                    }
                }
                .map_err(e)?;
            }
            // A shared key goes last, and only when install created it (or, with nothing to
            // tell, when memtrail's entries went and it is memtrail's value) and it is all that
            // is left in its object.
            let removed_any = lines.iter().any(|l| !l.starts_with("keep "));
            for item in items {
                if let JsonItem::Property(p) = item
                    && p.shared
                {
                    uninstall_shared(&mut doc, p, history, held, removed_any).map_err(e)?;
                }
            }
            let mut after = Some(doc.text().into_bytes());
            let mut remove_dirs = Vec::new();
            let root_empty = doc.len(&[]) == Some(0) && doc.is_bare_empty(&[]);
            // Emptied by this uninstall: it held memtrail's entries and nothing else.
            if root_empty && after.as_deref() != Some(cur) {
                if history.created_file() || history.unknown() {
                    after = None;
                    if let Some(st) = history.state {
                        remove_dirs = st.created_dirs.clone();
                    }
                } else if let Some(blank) = history.state.and_then(|s| s.blank_text.as_deref()) {
                    doc.set_text(blank).map_err(e)?;
                    after = Some(doc.text().into_bytes());
                }
            }
            Ok(Computed {
                after,
                lines,
                record: None,
                remove_dirs,
            })
        }
    }
}

/// A place where memtrail's handler was found.
struct Occ {
    /// Path of the handler.
    handler: Vec<Seg>,
    /// Path of the entry in the array (the group, or the handler itself).
    entry: Vec<Seg>,
    /// Number of handlers in that group (1 without nesting).
    group_len: usize,
    value: Value,
}

fn find_handlers(doc: &JsonDoc, item: &HandlerItem) -> Vec<Occ> {
    let arr = keys(&item.array_path);
    let Some(Value::Array(entries)) = doc.get(&arr) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (gi, g) in entries.iter().enumerate() {
        let mut entry = arr.clone();
        entry.push(Seg::Index(gi));
        match &item.nested_key {
            Some(k) => {
                if let Some(Value::Array(hs)) = g.get(k) {
                    for (hi, h) in hs.iter().enumerate() {
                        if (item.is_ours)(h) {
                            let mut handler = entry.clone();
                            handler.push(Seg::Key(k.clone()));
                            handler.push(Seg::Index(hi));
                            out.push(Occ {
                                handler,
                                entry: entry.clone(),
                                group_len: hs.len(),
                                value: h.clone(),
                            });
                        }
                    }
                }
            }
            None => {
                if (item.is_ours)(g) {
                    out.push(Occ {
                        handler: entry.clone(),
                        entry,
                        group_len: 1,
                        value: g.clone(),
                    });
                }
            }
        }
    }
    out
}

/// Where memtrail's handlers of `item` are: (entry index, handler index in its group, the
/// handler, the group's `matcher`), for Codex's positional trust keys.
pub(crate) fn handler_positions(
    doc: &JsonDoc,
    item: &HandlerItem,
) -> Vec<(usize, usize, Value, Option<Value>)> {
    find_handlers(doc, item)
        .into_iter()
        .filter_map(|o| {
            let gi = match o.entry.last()? {
                Seg::Index(i) => *i,
                Seg::Key(_) => return None,
            };
            let hi = match o.handler.last()? {
                Seg::Index(i) if item.nested_key.is_some() => *i,
                _ => 0,
            };
            let matcher = item
                .nested_key
                .as_ref()
                .and_then(|_| doc.get(&o.entry))
                .and_then(|g| g.get("matcher").cloned());
            Some((gi, hi, o.value, matcher))
        })
        .collect()
}

/// Remove one occurrence: the whole group when memtrail's handler is all it holds, else the
/// handler alone.
fn remove_occ(doc: &mut JsonDoc, occ: &Occ, restore: Option<&str>) -> Result<(), EditError> {
    if occ.group_len <= 1 {
        doc.remove(&occ.entry, restore)
    } else {
        doc.remove(&occ.handler, None)
    }
}

/// The error for an existing entry of `item` (a property with a program, memtrail's MCP
/// server) that runs another program than memtrail: another tool's entry under memtrail's
/// name (`"memtrail": {"command": "npx", …}`), which install must not overwrite nor uninstall
/// remove. `None` for memtrail's own entry (any version, wherever its binary is), for no
/// entry, and for items that run nothing.
pub(crate) fn foreign_entry(file: &Path, doc: &JsonDoc, item: &JsonItem) -> Option<InstallError> {
    let JsonItem::Property(p) = item else {
        return None;
    };
    let program = foreign_program(doc, p)?;
    let mut path = p.object_path.clone();
    path.push(p.key.clone());
    Some(InstallError::ForeignEntry {
        path: file.to_path_buf(),
        json_path: path.join("."),
        program,
    })
}

/// What the entry of `p` in `doc` runs when that is not memtrail ([`foreign_entry`]).
fn foreign_program(doc: &JsonDoc, p: &PropertyItem) -> Option<String> {
    if p.shared {
        return None;
    }
    let ours = (p.points_at)(&p.value)?;
    let mut full = keys(&p.object_path);
    full.push(Seg::Key(p.key.clone()));
    let cur = doc.get(&full)?;
    crate::edit::foreign_program((p.points_at)(&cur), &ours)
}

/// What install did to memtrail's entry of an item (nothing: it was already in place).
enum Written {
    Added,
    /// Updated in place; the entry's text before the update.
    Updated(String),
}

/// The exact text of memtrail's entry of `item` (the first handler, or the property).
fn entry_text<'d>(doc: &'d JsonDoc, item: &JsonItem) -> Option<&'d str> {
    match item {
        JsonItem::Handler(h) => {
            let occ = find_handlers(doc, h).into_iter().next()?;
            doc.text_at(&occ.handler)
        }
        JsonItem::Property(p) => {
            let mut full = keys(&p.object_path);
            full.push(Seg::Key(p.key.clone()));
            doc.text_at(&full)
        }
    }
}

fn install_handler(
    doc: &mut JsonDoc,
    item: &HandlerItem,
    rec: &mut FileState,
    lines: &mut Vec<String>,
) -> Result<Option<Written>, EditError> {
    let arr = keys(&item.array_path);
    match doc.kind(&arr) {
        None => {
            let (depth, inner) =
                doc.set_creating(&item.array_path, &Value::Array(vec![item.entry.clone()]))?;
            for i in depth..item.array_path.len() {
                rec.add_created(item.array_path[..=i].to_vec());
            }
            if let Some(inner) = inner {
                rec.add_inner(item.array_path[..depth].to_vec(), inner);
            }
            lines.push(format!("add {}", item.label));
            Ok(Some(Written::Added))
        }
        Some(Kind::Array) => {
            let mut removed = 0;
            loop {
                let occs = find_handlers(doc, item);
                if occs.len() <= 1 {
                    break;
                }
                if let Some(last) = occs.last() {
                    remove_occ(doc, last, None)?;
                    removed += 1;
                }
            }
            if removed > 0 {
                lines.push(format!(
                    "remove {removed} duplicate{} of {}",
                    if removed == 1 { "" } else { "s" },
                    item.label
                ));
            }
            let occs = find_handlers(doc, item);
            match occs.first() {
                None => {
                    if let Some(inner) = doc.append(&arr, None, &item.entry)? {
                        rec.add_inner(item.array_path.clone(), inner);
                    }
                    lines.push(format!("add {}", item.label));
                    Ok(Some(Written::Added))
                }
                Some(occ) => {
                    let old = (item.points_at)(&occ.value);
                    let same = item
                        .policy
                        .conforms(&(item.canonical)(&occ.value), &item.handler);
                    let before = doc.text_at(&occ.handler).unwrap_or_default().to_string();
                    if !same
                        && update_entry(doc, &occ.handler, &occ.value, &item.handler, &item.policy)?
                    {
                        lines.push(update_line(
                            "update",
                            &item.label,
                            old,
                            (item.points_at)(&item.handler),
                        ));
                        return Ok(Some(Written::Updated(before)));
                    }
                    Ok(None)
                }
            }
        }
        Some(_) => Err(EditError::WrongType {
            path: show_path(&arr),
            expected: "an array",
        }),
    }
}

/// `update hook Stop: /old/memtrail → /new/memtrail` (`verb` is `update` or `restore`).
fn update_line(verb: &str, label: &str, old: Option<String>, new: Option<String>) -> String {
    match (old, new) {
        (Some(o), Some(n)) if o != n => format!("{verb} {label}: {o} → {n}"),
        _ => format!("{verb} {label}"),
    }
}

/// Bring the entry at `path` (currently `cur`) in line with `want` under `policy`, key by key,
/// so that only what differs changes. Returns whether anything changed.
fn update_entry(
    doc: &mut JsonDoc,
    path: &[Seg],
    cur: &Value,
    want: &Value,
    policy: &crate::spec::Policy,
) -> Result<bool, EditError> {
    if policy.conforms(cur, want) {
        return Ok(false);
    }
    let (Some(cur_obj), Some(want_obj)) = (cur.as_object(), want.as_object()) else {
        doc.replace(path, want)?;
        return Ok(true);
    };
    for (k, v) in want_obj {
        let mut p = path.to_vec();
        p.push(Seg::Key(k.clone()));
        match cur_obj.get(k) {
            Some(_) if policy.soft.contains(k) => {}
            Some(c) if c == v => {}
            // A command the user wrapped around memtrail's hook (`nice -n 5 /old/memtrail hook
            // claude`): only memtrail's program changes, their words around it stay.
            Some(c) => match c.as_str().zip(v.as_str()) {
                Some((c, want)) => match memtrail_adapters::shell::rewrap_command(c, want) {
                    Some(w) => doc.replace(&p, &Value::String(w))?,
                    None => doc.replace(&p, v)?,
                },
                None => doc.replace(&p, v)?,
            },
            None => {
                doc.append(path, Some(k), v)?;
            }
        }
    }
    for k in &policy.drop {
        if cur_obj.contains_key(k) {
            let mut p = path.to_vec();
            p.push(Seg::Key(k.clone()));
            doc.remove(&p, None)?;
        }
    }
    Ok(true)
}

fn install_property(
    doc: &mut JsonDoc,
    item: &PropertyItem,
    rec: &mut FileState,
    lines: &mut Vec<String>,
) -> Result<Option<Written>, EditError> {
    let obj = keys(&item.object_path);
    let mut full = item.object_path.clone();
    full.push(item.key.clone());
    match doc.kind(&obj) {
        None => {
            let (depth, inner) = doc.set_creating(&full, &item.value)?;
            for i in depth..item.object_path.len() {
                rec.add_created(item.object_path[..=i].to_vec());
            }
            if let Some(inner) = inner {
                rec.add_inner(item.object_path[..depth].to_vec(), inner);
            }
            lines.push(format!("add {}", item.label));
            Ok(Some(Written::Added))
        }
        Some(Kind::Object) => match doc.get(&keys(&full)) {
            None => {
                if let Some(inner) = doc.append(&obj, Some(&item.key), &item.value)? {
                    rec.add_inner(item.object_path.clone(), inner);
                }
                lines.push(format!("add {}", item.label));
                Ok(Some(Written::Added))
            }
            // A shared key already there is the user's, whatever its value.
            Some(_) if item.shared => Ok(None),
            Some(cur) => {
                let old = (item.points_at)(&cur);
                let before = doc.text_at(&keys(&full)).unwrap_or_default().to_string();
                if update_entry(doc, &keys(&full), &cur, &item.value, &item.policy)? {
                    lines.push(update_line(
                        "update",
                        &item.label,
                        old,
                        (item.points_at)(&item.value),
                    ));
                    return Ok(Some(Written::Updated(before)));
                }
                Ok(None)
            }
        },
        Some(_) => Err(EditError::WrongType {
            path: show_path(&obj),
            expected: "an object",
        }),
    }
}

/// The containers on the paths of `items` (a handler's array, a property's object, and those
/// above them) that hold something: taken before uninstall, see [`History::emptied`].
fn held_containers(doc: &JsonDoc, items: &[JsonItem]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for item in items {
        let path = match item {
            JsonItem::Handler(h) => &h.array_path,
            JsonItem::Property(p) => &p.object_path,
        };
        for depth in 1..=path.len() {
            let p = path[..depth].to_vec();
            if doc.len(&keys(&p)).is_some_and(|n| n > 0) && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// After memtrail's entries are gone, remove the containers on `path` (deepest first) that are
/// empty and that install created (or that held only memtrail's entries: `held`, see
/// [`History::emptied`]).
fn cleanup(
    doc: &mut JsonDoc,
    path: &[String],
    history: &History<'_>,
    held: &[Vec<String>],
) -> Result<(), EditError> {
    for depth in (1..=path.len()).rev() {
        let p = &path[..depth];
        let sp = keys(p);
        if doc.len(&sp) != Some(0)
            || !doc.is_bare_empty(&sp)
            || !history.emptied(p, held.iter().any(|h| h == p))
        {
            break;
        }
        doc.remove(&sp, history.inner_for(&path[..depth - 1]))?;
    }
    Ok(())
}

/// The record of an entry install replaced (the ones it added have no `original`).
fn replaced<'h>(history: &'h History<'_>, path: &[String]) -> Option<(&'h str, &'h str)> {
    let r = history.entry(path)?;
    Some((r.original.as_deref()?, r.installed.as_str()))
}

/// What an entry's text says it runs (for the change lines).
fn points_at_text(text: &str, points_at: fn(&Value) -> Option<String>) -> Option<String> {
    JsonDoc::parse(text)
        .ok()?
        .value()
        .as_ref()
        .and_then(points_at)
}

fn uninstall_handler(
    doc: &mut JsonDoc,
    item: &HandlerItem,
    history: &History<'_>,
    held: &[Vec<String>],
    lines: &mut Vec<String>,
) -> Result<(), EditError> {
    // The entry install replaced, if it is still as install left it, gets its old text back;
    // every other memtrail handler goes.
    let put_back = replaced(history, &item.array_path);
    let mut removed = 0;
    let kept = loop {
        let occs = find_handlers(doc, item);
        let keep = put_back.and_then(|(_, installed)| {
            occs.iter()
                .position(|o| doc.text_at(&o.handler) == Some(installed))
        });
        let victim = (0..occs.len()).rev().find(|&i| Some(i) != keep);
        let Some(v) = victim else {
            break keep.map(|k| occs[k].handler.clone());
        };
        let restore = history.inner_for(&item.array_path);
        remove_occ(doc, &occs[v], restore)?;
        removed += 1;
    };
    if removed > 0 {
        lines.push(format!("remove {}", item.label));
        cleanup(doc, &item.array_path, history, held)?;
    }
    if let (Some(path), Some((original, installed))) = (kept, put_back) {
        doc.replace_raw(&path, original)?;
        lines.push(update_line(
            "restore",
            &item.label,
            points_at_text(installed, item.points_at),
            points_at_text(original, item.points_at),
        ));
    }
    Ok(())
}

fn uninstall_property(
    doc: &mut JsonDoc,
    item: &PropertyItem,
    history: &History<'_>,
    held: &[Vec<String>],
    lines: &mut Vec<String>,
) -> Result<(), EditError> {
    let mut full = keys(&item.object_path);
    full.push(Seg::Key(item.key.clone()));
    if doc.kind(&keys(&item.object_path)) != Some(Kind::Object) || doc.get(&full).is_none() {
        return Ok(());
    }
    // Another tool's entry under memtrail's name (install refused it): not memtrail's to remove.
    if let Some(program) = foreign_program(doc, item) {
        lines.push(format!(
            "keep {}: it runs {program}, not memtrail (another tool's entry)",
            item.label
        ));
        return Ok(());
    }
    // The entry makes the agent load a file that holds someone else's things too: it stays.
    if let Some(why) = item.loads.as_ref().and_then(still_loaded) {
        lines.push(format!("keep {}: {} {why}", item.label, item.key));
        return Ok(());
    }
    let mut path = item.object_path.clone();
    path.push(item.key.clone());
    // As install left it, whatever its formatting (Claude Code rewrites `.claude.json` with
    // its own): the entry it replaced comes back.
    let as_installed = |installed: &str| {
        doc.text_at(&full) == Some(installed)
            || JsonDoc::parse(installed)
                .ok()
                .and_then(|d| d.value())
                .is_some_and(|v| doc.get(&full).as_ref() == Some(&v))
    };
    if let Some((original, installed)) = replaced(history, &path)
        && as_installed(installed)
    {
        doc.replace_raw(&full, original)?;
        lines.push(update_line(
            "restore",
            &item.label,
            points_at_text(installed, item.points_at),
            points_at_text(original, item.points_at),
        ));
        return Ok(());
    }
    // Keys memtrail did not write (a token the user added under the server's `env`…): the
    // entry stays, with a line saying why, as Codex's table does.
    if let (Some(cur), Some(ours)) = (doc.get(&full), item.value.as_object())
        && let Some(cur) = cur.as_object()
    {
        let theirs: Vec<&str> = cur
            .keys()
            .filter(|k| !ours.contains_key(*k) && !item.policy.drop.contains(*k))
            .map(String::as_str)
            .collect();
        if !theirs.is_empty() {
            lines.push(format!(
                "keep {}: it holds keys memtrail did not write ({}); remove it by hand",
                item.label,
                theirs.join(", ")
            ));
            return Ok(());
        }
    }
    doc.remove(&full, history.inner_for(&item.object_path))?;
    lines.push(format!("remove {}", item.label));
    cleanup(doc, &item.object_path, history, held)
}

/// Why the agent must keep loading `loaded` (what in it memtrail did not write), or `None`
/// when nothing but memtrail's is there (or the file is gone).
fn still_loaded(loaded: &crate::spec::LoadedFile) -> Option<String> {
    let bytes = crate::fsutil::resolve_target(&loaded.path)
        .and_then(|t| crate::fsutil::read_opt(&t))
        .ok()??;
    let doc = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|t| JsonDoc::parse(t).ok());
    let Some(doc) = doc else {
        return Some(
            "does not parse, and may hold hooks of someone else's; fix or remove it by hand"
                .to_string(),
        );
    };
    let theirs = (loaded.foreign)(&doc.value()?);
    (!theirs.is_empty()).then(|| {
        format!(
            "holds {} memtrail did not write ({}), which this keeps loading",
            loaded.what,
            theirs.join(", ")
        )
    })
}

fn uninstall_shared(
    doc: &mut JsonDoc,
    item: &PropertyItem,
    history: &History<'_>,
    held: &[Vec<String>],
    removed_any: bool,
) -> Result<(), EditError> {
    let obj = keys(&item.object_path);
    let mut path = item.object_path.clone();
    path.push(item.key.clone());
    let value = doc.get(&keys(&path));
    // With nothing to tell: memtrail's value, left alone by memtrail's entries' removal.
    let emptied = removed_any && history.unknown() && value.as_ref() == Some(&item.value);
    if doc.kind(&obj) == Some(Kind::Object)
        && doc.len(&obj) == Some(1)
        && value.is_some()
        && (history.created(&path) || emptied)
    {
        doc.remove(&keys(&path), history.inner_for(&item.object_path))?;
        cleanup(doc, &item.object_path, history, held)?;
    }
    Ok(())
}

pub(crate) fn inspect(doc: &JsonDoc, item: &JsonItem) -> Found {
    match item {
        JsonItem::Handler(h) => {
            let occs = find_handlers(doc, h);
            match occs.as_slice() {
                [] => Found::Missing,
                [one] => {
                    let at = (h.points_at)(&one.value);
                    if h.policy.conforms(&(h.canonical)(&one.value), &h.handler) {
                        Found::Present(at)
                    } else {
                        Found::Stale(at)
                    }
                }
                many => Found::Duplicate(many.len(), (h.points_at)(&many[0].value)),
            }
        }
        JsonItem::Property(p) => {
            let mut full = keys(&p.object_path);
            full.push(Seg::Key(p.key.clone()));
            match doc.get(&full) {
                None => Found::Missing,
                Some(v) => {
                    let at = (p.points_at)(&v);
                    if p.shared || p.policy.conforms(&v, &p.value) {
                        Found::Present(at)
                    } else {
                        Found::Stale(at)
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::not_strict_json;

    /// A trailing comma is told by the bytes at the parser's error (the `}` or `]` after a
    /// comma), never by the parser's message; everything else keeps the parser's message.
    #[test]
    fn not_strict_json_names_what_is_there() {
        for (text, want) in [
            ("[1,]", Some((1, 4, "a trailing comma"))),
            ("{\"a\": [1, 2 ,\n\t ]}", Some((2, 3, "a trailing comma"))),
            ("{\"a\": 1,\r\n}", Some((2, 1, "a trailing comma"))),
            ("\u{feff}{\"a\": 1,}", Some((1, 9, "a trailing comma"))),
            ("{\"a\": 1, // c\n}", Some((1, 10, "a comment"))),
            ("/* c */ {}", Some((1, 1, "a comment"))),
            ("{\"a\": 1 \"b\": 2}", Some((1, 9, "expected `,` or `}`"))),
            ("{\"a\": 1},", Some((1, 9, "trailing characters"))),
            ("{\"a\": [1, 2]}", None),
            ("\u{feff}{}", None),
            (" \n", None),
        ] {
            let got = not_strict_json(text);
            let got = got.as_ref().map(|(l, c, w)| (*l, *c, w.as_str()));
            assert_eq!(got, want, "{text:?}");
        }
    }
}
