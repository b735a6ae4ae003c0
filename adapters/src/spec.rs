//! The declarative registration model: which files of an agent's config memtrail edits, and
//! what memtrail's entries in them are. Each agent builds its [`AgentSpec`] in its folder
//! (`agents/<agent>/registration.rs`, through [`crate::AgentAdapter::registration`]); the
//! installer's engine (crate `memtrail-installer`) interprets it and knows nothing
//! agent-specific beyond this model.

use crate::env::Env;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What an agent's registration is computed from.
#[derive(Clone, Copy)]
pub struct SpecContext<'a> {
    /// The environment the agent's paths are resolved in.
    pub env: &'a Env,
    /// The memtrail binary the entries point at (absolute).
    pub binary: &'a Path,
    /// Reads a JSON-with-comments file the agent already has (the installer's format-preserving
    /// parser): its value, or `None` when missing or unreadable. OpenCode's MCP entry takes the
    /// shape of the config it goes into.
    pub read_jsonc: fn(&Path) -> Option<Value>,
}

/// Why an agent's registration cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// The binary's path cannot be written into the agent's config (not valid UTF-8).
    #[error("the memtrail binary path {0:?} cannot be written into an agent's config")]
    BadBinary(PathBuf),
}

/// One file the installer edits, and memtrail's entries in it.
#[derive(Debug, Clone)]
pub struct FileSpec {
    /// The configured path (may be a symlink; the installer then edits its target).
    pub path: PathBuf,
    pub body: Body,
    /// Permission bits for a file the installer creates (`None`: 0600).
    pub new_file_mode: Option<u32>,
    /// The agent reads the file as strict JSON (no comments, no trailing commas) and ignores it
    /// whole otherwise: what then happens, for the user (`Claude Code skips the whole file: it
    /// will not run these hooks`). Install refuses such a file, and status reports it.
    pub strict_json: Option<&'static str>,
}

#[derive(Debug, Clone)]
pub enum Body {
    /// A JSON / JSONC document holding the entries (created as `{}` when missing).
    Json(Vec<JsonItem>),
    /// A file memtrail owns entirely.
    Whole(WholeItem),
    /// A TOML document holding the entries (Codex's `config.toml`; created empty when
    /// missing). Edited by the installer's TOML editor.
    Toml(Vec<TomlItem>),
    /// A YAML document holding one named item in a top-level list (Continue's `config.yaml`
    /// `mcpServers`). Never created: a missing file is left missing. Edited by the installer's
    /// YAML editor (text spliced by line, the rest of the file byte-identical).
    Yaml(Vec<YamlItem>),
}

/// memtrail's item in a top-level block list of a YAML file: `<list_key>:` holding
/// `- <name_key>: <name>` followed by `keys` (e.g. `mcpServers:` / `- name: memtrail`,
/// `command: <binary>`, `args: [mcp]`, written in block style).
#[derive(Debug, Clone)]
pub struct YamlItem {
    /// What people see: `MCP server memtrail`.
    pub label: String,
    /// The top-level key of the list (`mcpServers`).
    pub list_key: String,
    /// The key naming an item (`name`).
    pub name_key: String,
    /// memtrail's item's name (`memtrail`).
    pub name: String,
    /// The item's other keys, in order: a string or a list of strings each.
    pub keys: Vec<(String, TomlValue)>,
}

/// memtrail's entries in a TOML file.
#[derive(Debug, Clone)]
pub enum TomlItem {
    /// A table `[<table_path>.<key>]` holding `keys` (string or string-array values), e.g.
    /// `[mcp_servers.memtrail]` with `command` and `args`. Other keys of the table (a user's
    /// `env`, say) are kept.
    Table {
        label: String,
        table_path: Vec<String>,
        key: String,
        keys: Vec<(String, TomlValue)>,
    },
    /// A top-level `notify`-like program array: memtrail's argv `ours` (the binary first) is
    /// written there; a user's own program already there is kept running by chaining it after
    /// `chain_flag` (`[<ours>…, "--then", <theirs>…]`), and put back, byte for byte, by
    /// uninstall.
    ChainedArgv {
        label: String,
        key: String,
        ours: Vec<String>,
        chain_flag: String,
        /// Recognises memtrail's argv (whatever binary it points at): the binary is memtrail and
        /// its arguments start with `ours[1..]`.
        is_ours: fn(&[String]) -> bool,
    },
}

impl TomlItem {
    pub fn label(&self) -> &str {
        match self {
            TomlItem::Table { label, .. } | TomlItem::ChainedArgv { label, .. } => label,
        }
    }
}

/// A TOML (or YAML) value memtrail writes: a string or a list of strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TomlValue {
    Str(String),
    Strings(Vec<String>),
}

/// A whole file owned by memtrail (e.g. a skill).
#[derive(Debug, Clone)]
pub struct WholeItem {
    /// What people see: `skill memtrail`.
    pub label: String,
    pub content: String,
    /// Directories that are memtrail's own (removed on uninstall when left empty).
    pub owned_dirs: Vec<PathBuf>,
    /// Recognises memtrail's file (any version of it). With it, a file that is not
    /// memtrail's is never overwritten nor removed; without it, any file at the path is taken
    /// for memtrail's.
    pub is_ours: Option<fn(&str) -> bool>,
    /// The binary a version of the file points at, for status reports.
    pub points_at: Option<fn(&str) -> Option<String>>,
    /// A place memtrail used before and no longer does: install removes memtrail's file there
    /// as uninstall does (a file that is not memtrail's stays); status does not list it.
    pub retired: bool,
}

/// How an install treats the keys of an entry that already exists.
#[derive(Debug, Clone, Default)]
pub struct Policy {
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
pub enum JsonItem {
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
/// the installer's `JsonDoc::parse_scoped`), so that nothing else of it is read or checked.
pub fn json_scope(items: &[JsonItem]) -> Vec<String> {
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
pub struct HandlerItem {
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
pub struct PropertyItem {
    pub label: String,
    pub object_path: Vec<String>,
    pub key: String,
    pub value: Value,
    pub policy: Policy,
    pub points_at: fn(&Value) -> Option<String>,
    /// A key memtrail needs but does not own (Cursor's `"version": 1`): written only when
    /// missing, any value already there is kept, and uninstall removes it only when install
    /// created it and nothing but it is left in its object.
    pub shared: bool,
    /// The file this entry makes the agent load (VS Code: the entry of
    /// `chat.hookFilesLocations` naming memtrail's hook file): uninstall keeps the entry while
    /// that file holds something memtrail did not write, so that it keeps loading.
    pub loads: Option<LoadedFile>,
}

/// A file an entry makes the agent load ([`PropertyItem::loads`]).
#[derive(Debug, Clone)]
pub struct LoadedFile {
    /// The file (the installer reads its target when it is a symlink).
    pub path: PathBuf,
    /// What, in the file's value, memtrail did not write (the events holding a hook of the
    /// user's, a key of theirs): named in uninstall's line; empty when there is nothing.
    pub foreign: fn(&Value) -> Vec<String>,
    /// What they are, in that line (`hooks`).
    pub what: &'static str,
}

/// Everything an agent registers.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    pub files: Vec<FileSpec>,
    /// The agent's config directories (one existing means "installed").
    pub config_dirs: Vec<PathBuf>,
    /// The agent's executable names, looked up on `PATH`.
    pub executables: Vec<String>,
    /// The agent's version, when it was cheap to learn (`<bin> --version`).
    pub version: Option<String>,
    /// How to tell whether the agent trusts memtrail's hooks (Codex), when it runs only trusted
    /// hooks.
    pub trust: Option<TrustSpec>,
    /// Something to tell the user after an install that changes `file` (e.g. that Codex runs
    /// new hooks only once they are trusted).
    pub advice: Vec<(PathBuf, String)>,
    /// The agent's own settings that turn memtrail's entries off while leaving them in place
    /// (Claude Code's `disableAllHooks`): `status` shows the entries they cover as not run.
    pub off_switches: Vec<OffSwitch>,
}

/// One setting of an agent's that stops it running memtrail's entries without removing them.
#[derive(Debug, Clone)]
pub struct OffSwitch {
    /// The settings file (JSON or JSONC; TOML when its name ends in `.toml`).
    pub file: PathBuf,
    /// The setting's key path from the top level (`["hooksConfig", "disabled"]`).
    pub path: Vec<String>,
    /// What turns memtrail off there.
    pub when: OffWhen,
    /// Which of memtrail's entries it stops.
    pub covers: OffCovers,
    /// What `status` says (the setting, and how to turn memtrail back on).
    pub reason: String,
}

/// The value of an [`OffSwitch`]'s setting that turns memtrail off.
#[derive(Debug, Clone)]
pub enum OffWhen {
    /// The setting equals this boolean.
    Is(bool),
    /// The setting is an array holding this string.
    Lists(String),
}

/// The entries an [`OffSwitch`] stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffCovers {
    /// Hook handlers (items labelled `hook …`).
    Hooks,
    /// The MCP server entry (items labelled `MCP server …`).
    Mcp,
}

/// How to tell whether an agent trusts memtrail's hooks, for agents that run a hook only once the
/// user has trusted it (Codex: `docs/agents/codex.md#hook-trust`). The agent keeps one trust record
/// per handler of `hooks_json`, a table `records_table."<key>"` in the TOML file `config_toml`,
/// holding a boolean `enabled_key` (`false`: switched off) and a string `hash_key` (the hash of
/// the handler as it was when trusted).
#[derive(Debug, Clone)]
pub struct TrustSpec {
    /// The TOML file holding the trust records.
    pub config_toml: PathBuf,
    /// The hooks file whose handlers need trust.
    pub hooks_json: PathBuf,
    /// The spellings of `hooks_json` the agent may key its records by (e.g. the path as
    /// configured, and canonicalized), tried in order.
    pub key_sources: Vec<String>,
    /// The agent's label for a hook event (`SessionStart` → `session_start`); `None`: the event
    /// needs no trust.
    pub event_label: fn(&str) -> Option<&'static str>,
    /// The path of the table holding the records, keys from the top level (`["hooks", "state"]`).
    pub records_table: Vec<String>,
    /// The key of a handler's record: (key source, event label, group index, handler index),
    /// indices from 0 in `hooks_json`.
    pub record_key: fn(&str, &str, usize, usize) -> String,
    /// The record's boolean key; `false` means the hook is switched off.
    pub enabled_key: String,
    /// The record's key holding the hash of the handler as trusted.
    pub hash_key: String,
    /// The hash the agent records for a handler: (event as in `hooks_json`, the group's
    /// `matcher`, the handler object). `None` when the handler is not one the agent can hash.
    pub trusted_hash: fn(&str, Option<&Value>, &Value) -> Option<String>,
    /// Why the hook does not run when it has no record (the whole text `status` shows).
    pub not_trusted: String,
    /// … when its record has `enabled_key = false`.
    pub disabled: String,
    /// … when its record's hash is not the handler's current one.
    pub outdated: String,
    /// What captures meanwhile, if anything: the label of another item of the agent's (Codex:
    /// `notify`) and the words `status` adds to each of the reasons above while that item is
    /// present (` (until then memtrail captures through `notify` only)`); without it, they
    /// would promise a capture that does not happen.
    pub meanwhile: Option<(String, String)>,
}

// Builders the agents' registrations share.

pub(crate) fn strings(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

/// The functions that recognise and describe one agent's hook handler.
pub(crate) struct HandlerFns {
    pub is_ours: fn(&Value) -> bool,
    pub points_at: fn(&Value) -> Option<String>,
    pub canonical: fn(&Value) -> Value,
}

/// A hook handler item: memtrail's `handler` in the array at `array_path`, inside a group
/// `entry` (`nested_key`) or directly (`entry` = `handler`).
pub(crate) fn handler_item(
    event: &str,
    array_path: Vec<String>,
    nested_key: Option<&str>,
    entry: Value,
    handler: Value,
    soft: &[&str],
    fns: &HandlerFns,
) -> JsonItem {
    JsonItem::Handler(HandlerItem {
        label: format!("hook {event}"),
        array_path,
        nested_key: nested_key.map(str::to_string),
        entry,
        handler,
        policy: Policy {
            soft: strings(soft),
            drop: Vec::new(),
        },
        is_ours: fns.is_ours,
        points_at: fns.points_at,
        canonical: fns.canonical,
    })
}

/// memtrail's MCP server `name` in the object at `object_path`.
pub(crate) fn mcp_item(
    object_path: &[&str],
    name: &str,
    value: Value,
    soft: &[&str],
    points_at: fn(&Value) -> Option<String>,
) -> JsonItem {
    JsonItem::Property(PropertyItem {
        label: format!("MCP server {name}"),
        object_path: strings(object_path),
        key: name.to_string(),
        value,
        policy: Policy {
            soft: strings(soft),
            drop: Vec::new(),
        },
        points_at,
        shared: false,
        loads: None,
    })
}

/// A skill file memtrail owns: its folder is memtrail's too.
pub(crate) fn skill_file(path: &Path, content: &str, is_ours: fn(&str) -> bool) -> FileSpec {
    FileSpec {
        path: path.to_path_buf(),
        body: Body::Whole(WholeItem {
            label: "skill memtrail".to_string(),
            content: content.to_string(),
            owned_dirs: path.parent().map(Path::to_path_buf).into_iter().collect(),
            is_ours: Some(is_ours),
            points_at: None,
            retired: false,
        }),
        new_file_mode: None,
        strict_json: None,
    }
}

/// memtrail's skill where an older version put it: removed by install and uninstall alike.
pub(crate) fn retired_skill_file(path: &Path, is_ours: fn(&str) -> bool) -> FileSpec {
    let mut f = skill_file(path, "", is_ours);
    if let Body::Whole(w) = &mut f.body {
        w.label = "skill memtrail (former place)".to_string();
        w.retired = true;
    }
    f
}

pub(crate) fn json_file(path: &Path, items: Vec<JsonItem>) -> FileSpec {
    FileSpec {
        path: path.to_path_buf(),
        body: Body::Json(items),
        new_file_mode: None,
        strict_json: None,
    }
}
