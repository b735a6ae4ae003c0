//! The generic registration model the engine works on: which files, and what memtrail's entries
//! in them are. An agent contributes its spec (see [`crate::agents`]); the engine knows nothing
//! agent-specific beyond this model.

use serde_json::Value;
use std::path::PathBuf;

/// One file the installer edits, and memtrail's entries in it.
#[derive(Debug, Clone)]
pub(crate) struct FileSpec {
    /// The configured path (may be a symlink; the installer then edits its target).
    pub path: PathBuf,
    pub body: Body,
    /// Permission bits for a file the installer creates (`None`: the process default, i.e.
    /// `0666 & !umask`).
    pub new_file_mode: Option<u32>,
}

#[derive(Debug, Clone)]
pub(crate) enum Body {
    /// A JSON / JSONC document holding the entries (created as `{}` when missing).
    Json(Vec<JsonItem>),
    /// A file memtrail owns entirely.
    Whole(WholeItem),
}

/// A whole file owned by memtrail (e.g. a skill).
#[derive(Debug, Clone)]
pub(crate) struct WholeItem {
    /// What people see: `skill memtrail`.
    pub label: String,
    pub content: String,
    /// Directories that are memtrail's own (removed on uninstall when left empty).
    pub owned_dirs: Vec<PathBuf>,
}

/// How an install treats the keys of an entry that already exists.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy {
    /// Keys written only when missing (a user's value is kept).
    pub soft: Vec<String>,
    /// Keys removed when present.
    pub drop: Vec<String>,
}

impl Policy {
    /// True when `current` already matches `desired` under this policy.
    pub fn conforms(&self, current: &Value, desired: &Value) -> bool {
        let (Some(cur), Some(want)) = (current.as_object(), desired.as_object()) else {
            return current == desired;
        };
        want.iter()
            .all(|(k, v)| cur.get(k) == Some(v) || (self.soft.contains(k) && cur.contains_key(k)))
            && !self.drop.iter().any(|k| cur.contains_key(k))
    }
}

#[derive(Debug, Clone)]
pub(crate) enum JsonItem {
    Handler(HandlerItem),
    Property(PropertyItem),
}

impl JsonItem {
    pub fn label(&self) -> &str {
        match self {
            JsonItem::Handler(h) => &h.label,
            JsonItem::Property(p) => &p.label,
        }
    }

    /// The path of memtrail's entry: the handler array, or the property itself. The key of the
    /// item's record in the install state.
    pub fn entry_path(&self) -> Vec<String> {
        match self {
            JsonItem::Handler(h) => h.array_path.clone(),
            JsonItem::Property(p) => {
                let mut full = p.object_path.clone();
                full.push(p.key.clone());
                full
            }
        }
    }
}

/// The top-level keys under which `items` live: a file is parsed in this scope (see
/// [`crate::jsonedit::JsonDoc::parse_scoped`]), so that nothing else of it is read or checked.
pub(crate) fn json_scope(items: &[JsonItem]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for it in items {
        if let Some(k) = it.entry_path().into_iter().next()
            && !out.contains(&k)
        {
            out.push(k);
        }
    }
    out
}

/// memtrail's handler in an array of entries at `array_path`. With `nested_key` the array holds
/// groups (`{"matcher": …, "<nested_key>": [handlers]}`) and the handler lives in a group; without
/// it, the array holds handlers directly.
#[derive(Debug, Clone)]
pub(crate) struct HandlerItem {
    pub label: String,
    pub array_path: Vec<String>,
    pub nested_key: Option<String>,
    /// What is appended when memtrail has no handler there yet (a group, or the handler).
    pub entry: Value,
    /// memtrail's handler.
    pub handler: Value,
    pub policy: Policy,
    /// Recognises memtrail's handler (whatever binary it points at).
    pub is_ours: fn(&Value) -> bool,
    /// The binary a handler runs.
    pub points_at: fn(&Value) -> Option<String>,
    /// A handler in canonical form (e.g. its command quoted the standard way), so that an
    /// equivalent handler counts as already in place.
    pub canonical: fn(&Value) -> Value,
}

/// memtrail's named property `key` in the object at `object_path`.
#[derive(Debug, Clone)]
pub(crate) struct PropertyItem {
    pub label: String,
    pub object_path: Vec<String>,
    pub key: String,
    pub value: Value,
    pub policy: Policy,
    pub points_at: fn(&Value) -> Option<String>,
}

/// Everything an agent registers.
#[derive(Debug, Clone)]
pub(crate) struct AgentSpec {
    pub files: Vec<FileSpec>,
    /// The agent's config directory (its existence means "installed").
    pub config_dir: PathBuf,
    /// The agent's executable name, looked up on `PATH`.
    pub executable: String,
}
