//! What a config file looked like before memtrail first touched it, read from the oldest config
//! backup that mentions it (see the `backup` module). Uninstall falls back on it when the install
//! state (the `state` module) is lost: a container absent from that copy was created by install.

use crate::backup;
use crate::fsutil::path_key;
use crate::jsonedit::{JsonDoc, Seg};
use memtrail_adapters::Env;
use serde_json::Value;
use std::path::Path;

/// What the oldest backup says a file looked like before memtrail first touched it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Origin {
    /// No backup mentions the file.
    Unknown,
    /// The file did not exist.
    Absent,
    /// The file's value (`None` when the backup holds no JSON value or does not parse).
    Doc(Option<Value>),
}

impl Origin {
    /// Whether a container at `path` is known to have been absent originally.
    pub fn lacks(&self, path: &[String]) -> bool {
        match self {
            Origin::Unknown => false,
            Origin::Absent => true,
            Origin::Doc(None) => false,
            Origin::Doc(Some(v)) => {
                let mut cur = v;
                for k in path {
                    match cur.get(k) {
                        Some(next) => cur = next,
                        None => return true,
                    }
                }
                false
            }
        }
    }
}

/// Look `original` up in the backups, oldest first. Only the top-level keys in `scope` are
/// read from a JSON copy (the parts memtrail edits; see [`crate::spec::json_scope`]).
pub(crate) fn origin_of(env: &Env, original: &Path, scope: &[String]) -> Origin {
    let want = path_key(original);
    for (dir, index) in backup::list(env) {
        if index.absent.contains(&want) {
            return Origin::Absent;
        }
        if let Some((name, _)) = index.files.iter().find(|(_, orig)| **orig == want) {
            let text = std::fs::read(dir.join(name))
                .ok()
                .and_then(|b| String::from_utf8(b).ok());
            if original.extension().is_some_and(|e| e == "toml") {
                return Origin::Doc(text.as_deref().and_then(presence));
            }
            let value = text
                .and_then(|t| JsonDoc::parse_scoped(&t, scope).ok())
                .filter(|d| !d.is_blank())
                .map(|d| {
                    let mut m = serde_json::Map::new();
                    for k in scope {
                        let p = [Seg::Key(k.clone())];
                        if let Some(v) = d.get(&p) {
                            m.insert(k.clone(), v);
                        }
                    }
                    Value::Object(m)
                });
            return Origin::Doc(value);
        }
    }
    Origin::Unknown
}

/// What a TOML backup says is there (tables as objects, values as `true`), to tell which
/// tables existed before memtrail's first install when the install state is lost.
pub(crate) fn presence(text: &str) -> Option<serde_json::Value> {
    fn walk(t: &dyn toml_edit::TableLike) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        for (k, v) in t.iter() {
            let inner = match v.as_table_like() {
                Some(sub) => walk(sub),
                None => serde_json::Value::Bool(true),
            };
            m.insert(k.to_string(), inner);
        }
        serde_json::Value::Object(m)
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let doc = toml_edit::Document::parse(text.to_string()).ok()?;
    Some(walk(doc.as_table()))
}
