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
//!       "blank_text": null,
//!       "entries": [
//!         {"path": ["hooks", "Stop"], "original": null,
//!          "installed": "{\"type\": \"command\", …}"},
//!         {"path": ["mcpServers", "memtrail"],
//!          "original": "{\"command\": \"/opt/old/memtrail\", …}",
//!          "installed": "{\"command\": \"/usr/bin/memtrail\", …}"} ] } } }
//! ```
//!
//! - `created`: JSON paths of the containers (objects, arrays) that install created. Uninstall
//!   removes them again once memtrail's entries are gone and they are empty.
//! - `empty_inner`: containers that existed but were empty when install added to them, with the
//!   exact text they had between their braces (`{ }`, `{\n}`), put back when they empty again.
//! - `blank_text`: the whole text of a file that held no JSON value (blank or only comments).
//! - `created_file` / `created_dirs`: the file, and the directories above it, that install
//!   created; uninstall deletes them again when nothing else is in them.
//! - `final_newline_added` (TOML): the file lacked a final newline that install added.
//! - `mode_before`: the file's permission bits before install made it owner-only (`0o644`),
//!   given back by uninstall when the file still has the mode install left.
//! - `entries`: per memtrail entry install wrote (keyed by the handler array's path, or the
//!   property's), the exact text install left (`installed`) and, when install updated an entry
//!   that was there before memtrail's first install (an older install at another path, say),
//!   that entry's exact original text (`original`; `null` when install added the entry).
//!   Uninstall puts `original` back, byte for byte, when the entry's text is still `installed`;
//!   otherwise (added by install, or changed since) it removes memtrail's entry. A later install
//!   that updates the entry again keeps the first `original`. Duplicates of memtrail's entry
//!   that install collapsed into one are not put back.

use crate::error::InstallError;
use crate::fsutil::path_key;
use memtrail_adapters::Env;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The text a container had inside its braces before install added to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct InnerRecord {
    pub path: Vec<String>,
    pub inner: String,
}

/// One memtrail entry install wrote: what it left, and what it replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EntryRecord {
    pub path: Vec<String>,
    /// The exact text of the entry install updated, when it predates memtrail's install.
    pub original: Option<String>,
    /// The exact text of the entry as install left it.
    pub installed: String,
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
    #[serde(default)]
    pub entries: Vec<EntryRecord>,
    /// TOML: the file had no final newline and install had to add one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub final_newline_added: bool,
    /// The file's permission bits before install took its group's and others' away (a 0644
    /// `settings.json` made 0600): uninstall gives them back when the file still has the mode
    /// install left. `None` when install changed no bit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode_before: Option<u32>,
}

impl FileState {
    /// The recorded inside of the container at `path`.
    pub fn inner_for(&self, path: &[String]) -> Option<&str> {
        self.empty_inner
            .iter()
            .find(|r| r.path == path)
            .map(|r| r.inner.as_str())
    }

    /// The record of memtrail's entry at `path`.
    pub fn entry_for(&self, path: &[String]) -> Option<&EntryRecord> {
        self.entries.iter().find(|e| e.path == path)
    }

    /// Record an entry (replacing an earlier record of the same entry).
    pub fn set_entry(&mut self, rec: EntryRecord) {
        match self.entries.iter_mut().find(|e| e.path == rec.path) {
            Some(e) => *e = rec,
            None => self.entries.push(rec),
        }
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

    /// Fold a later install's record into this one (the earliest record of a thing wins, except
    /// for entries: a later entry record already carries the earlier `original` forward).
    pub fn merge(&mut self, later: FileState) {
        self.created_file |= later.created_file;
        self.final_newline_added |= later.final_newline_added;
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
        if self.mode_before.is_none() {
            self.mode_before = later.mode_before;
        }
        for e in later.entries {
            self.set_entry(e);
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
        self.files.get(&path_key(path))
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
        // With the owner of the folder above (see `Backup::create`).
        crate::fsutil::create_dirs_like_parent(&dir)?;
        let mut bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| InstallError::io(&path, std::io::Error::other(e)))?;
        bytes.push(b'\n');
        crate::fsutil::write_atomic(&path, &bytes, None, Some(0o600))?;
        crate::fsutil::match_owner(&path, &dir);
        Ok(())
    }
}
