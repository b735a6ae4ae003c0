//! `status`: is each of memtrail's entries in place, and where does it point?

use crate::agents;
use crate::edit::Found;
use crate::engine::{handler_positions, inspect, parse_doc, whole_is_ours};
use crate::error::InstallError;
use crate::fsutil;
use crate::jsonedit::JsonDoc;
use crate::spec::{Body, JsonItem, OffCovers, OffSwitch, OffWhen, TrustSpec, json_scope};
use memtrail_adapters::Agent;
use memtrail_adapters::Env;
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// The state of one registration item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ItemState {
    /// In place and pointing at this binary.
    Present,
    /// In place but pointing at another binary (`points_at`), or otherwise not as memtrail
    /// writes it (e.g. the skill's content differs: `points_at` is `None`).
    Stale {
        /// The binary the entry runs, when it runs one.
        points_at: Option<String>,
    },
    /// memtrail's entry is there `count` times (an install collapses them to one).
    Duplicate {
        /// How many of memtrail's entries there are.
        count: usize,
    },
    /// In place, but the agent will not run it until the user trusts it (Codex: `/hooks`), or
    /// the user disabled it there.
    Untrusted {
        /// What is the matter, and what to do (`not trusted yet: open /hooks in Codex …`).
        reason: String,
    },
    /// Not registered.
    Missing,
    /// The item's file could not be read, or cannot be used (it does not parse, its top level
    /// is not an object, an object memtrail reads holds a key twice, …).
    Unreadable {
        /// Why, without the path (that is the item's `file`): `line 3, column 5: Expected
        /// comma`, `Is a directory (os error 21)`; see [`InstallError::reason`].
        error: String,
        /// What kind of problem `error` describes (not serialized: `status --json` gives
        /// `error` only).
        #[serde(skip)]
        kind: UnreadableKind,
    },
}

/// Why an item's file cannot be used ([`ItemState::Unreadable`]), from the [`InstallError`]
/// reading it gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnreadableKind {
    /// It cannot be read ([`InstallError::Io`]: a directory, no permission, …).
    Io,
    /// It does not parse as JSON, JSONC or TOML, is not UTF-8, or an object memtrail reads
    /// holds a key twice ([`InstallError::Parse`]).
    Parse,
    /// Valid JSONC that its agent reads as strict JSON, so ignores whole: a comment or a
    /// trailing comma ([`InstallError::NotStrictJson`]).
    NotStrictJson,
    /// Its top-level value is not an object ([`InstallError::NotAnObject`]).
    NotAnObject,
    /// A file memtrail would own exists and is not memtrail's ([`InstallError::Foreign`]), or
    /// its entry's name holds another tool's ([`InstallError::ForeignEntry`]).
    Foreign,
    /// Any other error.
    Other,
}

impl ItemState {
    /// The state of an item whose file gave `e`: [`ItemState::Unreadable`] with `e`'s
    /// [`InstallError::reason`] and kind.
    fn unreadable(e: &InstallError) -> ItemState {
        let kind = match e {
            InstallError::Io { .. } => UnreadableKind::Io,
            InstallError::Parse { .. } => UnreadableKind::Parse,
            InstallError::NotStrictJson { .. } => UnreadableKind::NotStrictJson,
            InstallError::NotAnObject { .. } => UnreadableKind::NotAnObject,
            InstallError::Foreign { .. } | InstallError::ForeignEntry { .. } => {
                UnreadableKind::Foreign
            }
            InstallError::BadBinary(_)
            | InstallError::Conflict { .. }
            | InstallError::ReadOnly { .. }
            | InstallError::Contended { .. }
            | InstallError::Incomplete { .. }
            | InstallError::Locked { .. }
            | InstallError::Internal { .. } => UnreadableKind::Other,
        };
        ItemState::Unreadable {
            error: e.reason(),
            kind,
        }
    }
}

/// One registration item: a hook event, the MCP entry, the skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemStatus {
    /// `hook SessionStart`, `MCP server memtrail`, `skill memtrail`.
    pub item: String,
    /// The file it lives in.
    pub file: PathBuf,
    /// Present, stale, duplicated, missing or unreadable (flattened into the item when
    /// serialized: `"state": "stale", "points_at": "/old/memtrail"`).
    #[serde(flatten)]
    pub state: ItemState,
    /// The binary the (first) entry points at, when there is one.
    pub binary: Option<String>,
    /// For a hook handler: its `command` string exactly as the config file holds it (what the
    /// agent runs; `memtrail doctor` runs the same).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// Registration status of one agent. Serializes as
/// `{"agent":"claude","detected":true,"binary":"/…/memtrail","items":[{"item":"hook Stop",
/// "file":"…","state":"present","binary":"/…/memtrail"}, …]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentStatus {
    /// The agent.
    pub agent: Agent,
    /// The agent looks installed: its config directory exists, or its executable is on `PATH`.
    pub detected: bool,
    /// The memtrail binary the status was checked against.
    pub binary: PathBuf,
    /// The agent's version, read from the npm package it was installed with (its
    /// `package.json`; the agent is never run), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// One per registration item (for Claude Code: six hooks, the MCP server, the skill).
    pub items: Vec<ItemStatus>,
}

impl AgentStatus {
    /// True when every item is present (or awaits the agent's trust: a notice, see
    /// [`AgentStatus::notices`]), or when nothing of memtrail's is registered in the agent (not
    /// installed there: a user may install for some agents only; see
    /// [`AgentStatus::not_installed`]). Anything in between (some items missing, stale,
    /// duplicated or unreadable) is not healthy.
    pub fn healthy(&self) -> bool {
        self.items
            .iter()
            .all(|i| matches!(i.state, ItemState::Present | ItemState::Untrusted { .. }))
            || self.not_installed()
    }

    /// The items in place that the agent will not run until the user trusts them (Codex hooks
    /// before `/hooks`): not a failure, as memtrail captures meanwhile (Codex: through
    /// `notify`), but something for the user to do.
    pub fn notices(&self) -> impl Iterator<Item = &ItemStatus> {
        self.items
            .iter()
            .filter(|i| matches!(i.state, ItemState::Untrusted { .. }))
    }

    /// True when no item of memtrail's is registered in this agent (another tool's file or
    /// entry under memtrail's name is none of memtrail's).
    pub fn not_installed(&self) -> bool {
        self.items.iter().all(|i| {
            matches!(
                i.state,
                ItemState::Missing
                    | ItemState::Unreadable {
                        kind: UnreadableKind::Foreign,
                        ..
                    }
            )
        })
    }
}

impl fmt::Display for AgentStatus {
    /// One line per item, indented by two spaces: `  hook Stop: present (~/.claude/settings.json)`;
    /// items the agent will not run until trusted say what is the matter on their line and
    /// what to do once after them (`  what to do: open /hooks in Codex …`).
    /// A file that cannot be used gets one line saying why (`  /h/.claude/settings.json:
    /// unreadable: line 3, column 5: Expected comma`), before its items, which say `unreadable`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.detected {
            writeln!(
                f,
                "  not detected ({} not found)",
                self.agent.display_name()
            )?;
        }
        if let Some(v) = &self.version {
            writeln!(f, "  version {v}")?;
        }
        if self.detected && self.not_installed() && !self.items.is_empty() {
            writeln!(
                f,
                "  not wired: its sessions are not captured as they happen (`memtrail install --agent {}` wires it; `memtrail import` reads what it has)",
                self.agent.as_str()
            )?;
        }
        let mut reported: Vec<&Path> = Vec::new();
        // What to do about untrusted items, said once after them (their line keeps what is
        // the matter): `not trusted yet; open /hooks in Codex …` splits at its first `; `.
        let mut to_do: Vec<&str> = Vec::new();
        for i in &self.items {
            if let ItemState::Unreadable { error, kind } = &i.state
                && !reported.contains(&i.file.as_path())
            {
                // Another tool's file or entry is readable: it is just not memtrail's.
                let what = match kind {
                    UnreadableKind::Foreign => "not memtrail's",
                    _ => "unreadable",
                };
                writeln!(f, "  {}: {what}: {error}", i.file.display())?;
                reported.push(&i.file);
            }
            let state = match &i.state {
                ItemState::Present => "present".to_string(),
                ItemState::Stale { points_at: Some(p) } => format!("stale (points at {p})"),
                ItemState::Stale { points_at: None } => "stale (differs from this version)".into(),
                ItemState::Duplicate { count } => format!("registered {count} times"),
                ItemState::Untrusted { reason } => match reason.split_once("; ") {
                    Some((what, todo)) => {
                        if !to_do.contains(&todo) {
                            to_do.push(todo);
                        }
                        what.to_string()
                    }
                    // The reason says what is the matter (`switched off: …`).
                    None => reason.clone(),
                },
                ItemState::Missing => "missing".into(),
                ItemState::Unreadable {
                    kind: UnreadableKind::Foreign,
                    ..
                } => "another tool's (not memtrail's)".into(),
                ItemState::Unreadable { .. } => "unreadable".into(),
            };
            writeln!(f, "  {}: {state} ({})", i.item, i.file.display())?;
        }
        for todo in to_do {
            writeln!(f, "  what to do: {todo}")?;
        }
        Ok(())
    }
}

pub(crate) fn status_in(
    env: &Env,
    agent: Agent,
    binary: &Path,
) -> Result<AgentStatus, InstallError> {
    let spec = agents::spec(agent, env, binary)?;
    let detected = spec.config_dirs.iter().any(|d| d.is_dir())
        || spec.executables.iter().any(|e| env.on_path(e));
    let mut items = Vec::new();
    for f in &spec.files {
        let bytes = fsutil::resolve_target(&f.path).and_then(|t| fsutil::read_opt(&t));
        match &f.body {
            Body::Whole(w) if w.retired => {}
            Body::Whole(w) => {
                let (state, bin) = match bytes {
                    Err(e) => (ItemState::unreadable(&e), None),
                    Ok(None) => (ItemState::Missing, None),
                    Ok(Some(b)) if b == w.content.as_bytes() => (ItemState::Present, None),
                    Ok(Some(b)) if !whole_is_ours(w, &b) => (
                        ItemState::unreadable(&InstallError::Foreign {
                            path: f.path.clone(),
                        }),
                        None,
                    ),
                    Ok(Some(b)) => {
                        let at = w
                            .points_at
                            .and_then(|p| std::str::from_utf8(&b).ok().and_then(p));
                        (
                            ItemState::Stale {
                                points_at: at.clone(),
                            },
                            at,
                        )
                    }
                };
                items.push(ItemStatus {
                    item: w.label.clone(),
                    file: f.path.clone(),
                    state,
                    binary: bin,
                    command: None,
                });
            }
            Body::Toml(toml_items) => {
                let doc = bytes.and_then(|b| crate::tomledit::parse(&f.path, b.as_deref()));
                for it in toml_items {
                    let (state, bin) = match &doc {
                        Err(e) => (ItemState::unreadable(e), None),
                        Ok(p) => match crate::tomledit::foreign_entry(&f.path, &p.doc, it) {
                            Some(e) => (ItemState::unreadable(&e), None),
                            None => found_state(crate::tomledit::inspect(&p.doc, it)),
                        },
                    };
                    items.push(ItemStatus {
                        item: it.label().to_string(),
                        file: f.path.clone(),
                        state,
                        binary: bin,
                        command: None,
                    });
                }
            }
            Body::Yaml(yaml_items) => {
                let doc = bytes.and_then(|b| crate::yamledit::parse(&f.path, b.as_deref()));
                for it in yaml_items {
                    let (state, bin) = match &doc {
                        Err(e) => (ItemState::unreadable(e), None),
                        Ok(p) => match crate::yamledit::inspect(p, &f.path, it) {
                            Err(e) => (ItemState::unreadable(&e), None),
                            Ok(found) => found_state(found),
                        },
                    };
                    items.push(ItemStatus {
                        item: it.label.clone(),
                        file: f.path.clone(),
                        state,
                        binary: bin,
                        command: None,
                    });
                }
            }
            Body::Json(json_items) => {
                let scope = json_scope(json_items);
                let doc = bytes.and_then(|b| match b {
                    None => Ok(None),
                    Some(b) => {
                        // Valid JSONC that its agent ignores whole: nothing in it runs.
                        let strict = crate::engine::strict_json_error(f, &b);
                        parse_doc(&f.path, Some(&b), &scope).and_then(|d| match strict {
                            Some(e) => Err(e),
                            None => Ok(Some(d)),
                        })
                    }
                });
                let trust = spec.trust.as_ref().filter(|t| t.hooks_json == f.path);
                for it in json_items {
                    let (mut state, bin) = match &doc {
                        Err(e) => (ItemState::unreadable(e), None),
                        Ok(None) => (ItemState::Missing, None),
                        Ok(Some(d)) => match crate::engine::foreign_entry(&f.path, d, it) {
                            Some(e) => (ItemState::unreadable(&e), None),
                            None => found_state(inspect(d, it)),
                        },
                    };
                    if let (Some(t), Ok(Some(d)), JsonItem::Handler(h)) = (trust, &doc, it)
                        && state == ItemState::Present
                        && let Some(untrusted) = trust_problem(t, d, h)
                    {
                        state = ItemState::Untrusted { reason: untrusted };
                    }
                    let command = match (&doc, it) {
                        (Ok(Some(d)), JsonItem::Handler(h)) => handler_positions(d, h)
                            .into_iter()
                            .next()
                            .and_then(|(_, _, v, _)| {
                                v.get("command")
                                    .and_then(|c| c.as_str())
                                    .map(str::to_string)
                            }),
                        _ => None,
                    };
                    items.push(ItemStatus {
                        item: it.label().to_string(),
                        file: f.path.clone(),
                        state,
                        binary: bin,
                        command,
                    });
                }
            }
        }
    }
    // What captures until the user trusts the hooks (Codex: `notify`) is promised only while
    // it is in place.
    if let Some((label, note)) = spec.trust.as_ref().and_then(|t| t.meanwhile.as_ref())
        && items
            .iter()
            .any(|i| &i.item == label && i.state == ItemState::Present)
    {
        for item in &mut items {
            if let ItemState::Untrusted { reason } = &mut item.state {
                reason.push_str(note);
            }
        }
    }
    // The agent's own switches: an entry in place that the agent will not run says so.
    for switch in &spec.off_switches {
        if !switched_off(switch) {
            continue;
        }
        for item in items.iter_mut().filter(|i| i.state == ItemState::Present) {
            let covered = match switch.covers {
                OffCovers::Hooks => item.item.starts_with("hook"),
                OffCovers::Mcp => item.item.starts_with("MCP server"),
            };
            if covered {
                item.state = ItemState::Untrusted {
                    reason: switch.reason.clone(),
                };
            }
        }
    }
    Ok(AgentStatus {
        agent,
        detected,
        binary: binary.to_path_buf(),
        version: spec.version.clone(),
        items,
    })
}

/// Whether `switch`'s setting is at its "off" value now (a file that cannot be read or parsed
/// is not: its own item says so).
fn switched_off(switch: &OffSwitch) -> bool {
    let Ok(Some(bytes)) = fsutil::read_opt(&switch.file) else {
        return false;
    };
    let is_toml = switch.file.extension().is_some_and(|e| e == "toml");
    if is_toml {
        let Ok(parsed) = crate::tomledit::parse(&switch.file, Some(&bytes)) else {
            return false;
        };
        let Some(v) = crate::tomledit::lookup(parsed.doc.as_table(), &switch.path)
            .and_then(toml_edit::Item::as_value)
        else {
            return false;
        };
        return match &switch.when {
            OffWhen::Is(b) => v.as_bool() == Some(*b),
            OffWhen::Lists(name) => v
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(name))),
        };
    }
    let scope: Vec<String> = switch.path.iter().take(1).cloned().collect();
    let Ok(doc) = parse_doc(&switch.file, Some(&bytes), &scope) else {
        return false;
    };
    let Some(v) = doc.get(&crate::jsonedit::keys(&switch.path)) else {
        return false;
    };
    match &switch.when {
        OffWhen::Is(b) => v.as_bool() == Some(*b),
        OffWhen::Lists(name) => v
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(name))),
    }
}

fn found_state(found: Found) -> (ItemState, Option<String>) {
    match found {
        Found::Missing => (ItemState::Missing, None),
        Found::Present(b) => (ItemState::Present, b),
        Found::Stale(b) => (
            ItemState::Stale {
                points_at: b.clone(),
            },
            b,
        ),
        Found::Duplicate(n, b) => (ItemState::Duplicate { count: n }, b),
    }
}

/// Why the agent would not run memtrail's handler of `item` (Codex:
/// `docs/agents/codex.md#hook-trust`): no trust record for it under any of the spec's key sources,
/// a record for another version of the hook (its hash is not the handler's current one), or a
/// record that switches it off. `None` when the agent trusts it.
fn trust_problem(t: &TrustSpec, doc: &JsonDoc, item: &crate::spec::HandlerItem) -> Option<String> {
    let event = item.array_path.last()?;
    let label = (t.event_label)(event)?;
    let config = fsutil::read_opt(&t.config_toml)
        .ok()
        .flatten()
        .and_then(|b| crate::tomledit::parse(&t.config_toml, Some(&b)).ok());
    let (gi, hi, handler, matcher) = handler_positions(doc, item).into_iter().next()?;
    let mut state = None;
    for source in &t.key_sources {
        let key = (t.record_key)(source, label, gi, hi);
        if let Some(st) = config.as_ref().and_then(|c| {
            crate::tomledit::record(&c.doc, &t.records_table, &key, &t.enabled_key, &t.hash_key)
        }) {
            state = Some(st);
            break;
        }
    }
    match state {
        Some((Some(false), _)) => Some(t.disabled.clone()),
        Some((_, Some(hash))) => {
            if (t.trusted_hash)(event, matcher.as_ref(), &handler).as_deref() == Some(&hash) {
                None
            } else {
                Some(t.outdated.clone())
            }
        }
        _ => Some(t.not_trusted.clone()),
    }
}
