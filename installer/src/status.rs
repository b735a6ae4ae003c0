//! `status`: is each of memtrail's entries in place, and where does it point?

use crate::agents;
use crate::engine::{Found, inspect, parse_doc};
use crate::env::Env;
use crate::error::InstallError;
use crate::fsutil;
use crate::spec::{Body, json_scope};
use memtrail_adapters::Agent;
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
    /// Not registered.
    Missing,
    /// The item's file could not be read, or cannot be used (it does not parse, its top level
    /// is not an object, an object memtrail reads holds a key twice, …).
    Unreadable {
        /// Why, without the path (that is the item's `file`): `line 3, column 5: Expected
        /// comma`, `Is a directory (os error 21)`; see [`InstallError::reason`].
        error: String,
    },
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
    /// One per registration item (for Claude Code: six hooks, the MCP server, the skill).
    pub items: Vec<ItemStatus>,
}

impl AgentStatus {
    /// True when every item is present, or when the agent is not detected and nothing of
    /// memtrail's is registered in it.
    pub fn healthy(&self) -> bool {
        self.items.iter().all(|i| i.state == ItemState::Present)
            || (!self.detected && self.items.iter().all(|i| i.state == ItemState::Missing))
    }
}

impl fmt::Display for AgentStatus {
    /// One line per item, indented by two spaces: `  hook Stop: present (~/.claude/settings.json)`.
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
        let mut reported: Vec<&Path> = Vec::new();
        for i in &self.items {
            if let ItemState::Unreadable { error } = &i.state
                && !reported.contains(&i.file.as_path())
            {
                writeln!(f, "  {}: unreadable: {error}", i.file.display())?;
                reported.push(&i.file);
            }
            let state = match &i.state {
                ItemState::Present => "present".to_string(),
                ItemState::Stale { points_at: Some(p) } => format!("stale (points at {p})"),
                ItemState::Stale { points_at: None } => "stale (differs from this version)".into(),
                ItemState::Duplicate { count } => format!("registered {count} times"),
                ItemState::Missing => "missing".into(),
                ItemState::Unreadable { .. } => "unreadable".into(),
            };
            writeln!(f, "  {}: {state} ({})", i.item, i.file.display())?;
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
    let detected = spec.config_dir.is_dir() || env.on_path(&spec.executable);
    let mut items = Vec::new();
    for f in &spec.files {
        let bytes = fsutil::resolve_target(&f.path).and_then(|t| fsutil::read_opt(&t));
        match &f.body {
            Body::Whole(w) => {
                let (state, bin) = match bytes {
                    Err(e) => (ItemState::Unreadable { error: e.reason() }, None),
                    Ok(None) => (ItemState::Missing, None),
                    Ok(Some(b)) if b == w.content.as_bytes() => (ItemState::Present, None),
                    Ok(Some(_)) => (ItemState::Stale { points_at: None }, None),
                };
                items.push(ItemStatus {
                    item: w.label.clone(),
                    file: f.path.clone(),
                    state,
                    binary: bin,
                });
            }
            Body::Json(json_items) => {
                let scope = json_scope(json_items);
                let doc = bytes.and_then(|b| match b {
                    None => Ok(None),
                    Some(b) => parse_doc(&f.path, Some(&b), &scope).map(Some),
                });
                for it in json_items {
                    let (state, bin) = match &doc {
                        Err(e) => (ItemState::Unreadable { error: e.reason() }, None),
                        Ok(None) => (ItemState::Missing, None),
                        Ok(Some(d)) => match inspect(d, it) {
                            Found::Missing => (ItemState::Missing, None),
                            Found::Present(b) => (ItemState::Present, b),
                            Found::Stale(b) => (
                                ItemState::Stale {
                                    points_at: b.clone(),
                                },
                                b,
                            ),
                            Found::Duplicate(n, b) => (ItemState::Duplicate { count: n }, b),
                        },
                    };
                    items.push(ItemStatus {
                        item: it.label().to_string(),
                        file: f.path.clone(),
                        state,
                        binary: bin,
                    });
                }
            }
        }
    }
    Ok(AgentStatus {
        agent,
        detected,
        binary: binary.to_path_buf(),
        items,
    })
}
