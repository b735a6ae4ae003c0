//! The install state (`$XDG_STATE_HOME/memtrail/install-state.json`): per file, what an install
//! created, so that an uninstall can put back exactly what was there.
//!
//! Shape:
//!
//! ```json
//! { "version": 1,
//!   "files": {
//!     "/home/u/.claude/settings.json": {
//!       "created_file": false,
//!       "created_dirs": [],
//!       "created": [["hooks"], ["hooks", "Stop"]],
//!       "empty_inner": [{"path": [], "inner": "\n"}],
//!       "blank_text": null } } }
//! ```
//!
//! - `created`: JSON paths of the containers (objects, arrays) that install created. Uninstall
//!   removes them again once memtrail's entries are gone and they are empty.
//! - `empty_inner`: containers that existed but were empty when install added to them, with the
//!   exact text they had between their braces (`{ }`, `{\n}`), put back when they empty again.
//! - `blank_text`: the whole text of a file that held no JSON value (blank or only comments).
//! - `created_file` / `created_dirs`: the file, and the directories above it, that install
//!   created; uninstall deletes them again when nothing else is in them.

use crate::env::Env;
use crate::error::InstallError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The text a container had inside its braces before install added to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct InnerRecord {
    pub path: Vec<String>,
    pub inner: String,
}

/// What install created in one file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileState {
    #[serde(default)]
    pub created_file: bool,
    #[serde(default)]
    pub created_dirs: Vec<PathBuf>,
    #[serde(default)]
    pub created: Vec<Vec<String>>,
    #[serde(default)]
    pub empty_inner: Vec<InnerRecord>,
    #[serde(default)]
    pub blank_text: Option<String>,
}

impl FileState {
    /// The recorded inside of the container at `path`.
    pub fn inner_for(&self, path: &[String]) -> Option<&str> {
        self.empty_inner
            .iter()
            .find(|r| r.path == path)
            .map(|r| r.inner.as_str())
    }

    pub fn add_created(&mut self, path: Vec<String>) {
        if !self.created.contains(&path) {
            self.created.push(path);
        }
    }

    pub fn add_inner(&mut self, path: Vec<String>, inner: String) {
        if self.inner_for(&path).is_none() {
            self.empty_inner.push(InnerRecord { path, inner });
        }
    }

    /// Fold a later install's record into this one (the earliest record of a thing wins).
    pub fn merge(&mut self, later: FileState) {
        self.created_file |= later.created_file;
        for d in later.created_dirs {
            if !self.created_dirs.contains(&d) {
                self.created_dirs.push(d);
            }
        }
        for p in later.created {
            self.add_created(p);
        }
        for r in later.empty_inner {
            self.add_inner(r.path, r.inner);
        }
        if self.blank_text.is_none() {
            self.blank_text = later.blank_text;
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct InstallState {
    pub version: u32,
    #[serde(default)]
    pub files: BTreeMap<String, FileState>,
}

impl Default for InstallState {
    fn default() -> Self {
        InstallState {
            version: 1,
            files: BTreeMap::new(),
        }
    }
}

pub(crate) fn key(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

impl InstallState {
    /// Load the state. A missing file is an empty state; an unreadable or corrupt one is
    /// reported as `None` (uninstall then falls back to the backups).
    pub fn load(env: &Env) -> Option<InstallState> {
        match std::fs::read(env.install_state_path()) {
            Ok(bytes) => serde_json::from_slice(&bytes).ok(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(InstallState::default()),
            Err(_) => None,
        }
    }

    pub fn get(&self, path: &Path) -> Option<&FileState> {
        self.files.get(&key(path))
    }

    /// Write the state (atomically, owner-only), or delete it when it is empty.
    pub fn save(&self, env: &Env) -> Result<(), InstallError> {
        let path = env.install_state_path();
        if self.files.is_empty() {
            return match std::fs::remove_file(&path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(InstallError::io(path, e)),
            };
        }
        let dir = env.state_dir();
        crate::fsutil::create_private_dir_all(&dir)?;
        let mut bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| InstallError::io(&path, std::io::Error::other(e)))?;
        bytes.push(b'\n');
        crate::fsutil::write_atomic(&path, &bytes, None, Some(0o600))
    }
}

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

/// Look `original` up in the backups, oldest first.
pub(crate) fn origin_of(env: &Env, original: &Path) -> Origin {
    let want = key(original);
    let Ok(rd) = std::fs::read_dir(env.backups_dir()) else {
        return Origin::Unknown;
    };
    let mut dirs: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let Ok(bytes) = std::fs::read(dir.join("index.json")) else {
            continue;
        };
        let Ok(index) = serde_json::from_slice::<crate::backup::BackupIndex>(&bytes) else {
            continue;
        };
        if index.absent.contains(&want) {
            return Origin::Absent;
        }
        if let Some((name, _)) = index.files.iter().find(|(_, orig)| **orig == want) {
            let text = std::fs::read(dir.join(name))
                .ok()
                .and_then(|b| String::from_utf8(b).ok());
            let value = text
                .and_then(|t| crate::jsonedit::JsonDoc::parse(&t).ok())
                .and_then(|d| d.value());
            return Origin::Doc(value);
        }
    }
    Origin::Unknown
}
