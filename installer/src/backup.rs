//! Backups: before its first change in an apply, each file is copied into
//! `$XDG_STATE_HOME/memtrail/backups/<YYYYMMDDTHHMMSSZ>-<pid>[-<n>]/`, with an `index.json`:
//!
//! ```json
//! { "created_at": "20261129T101500Z", "action": "install",
//!   "files": { "1-settings.json": "/home/u/.claude/settings.json" },
//!   "absent": [ "/home/u/.claude/skills/memtrail/SKILL.md" ] }
//! ```
//!
//! `files` maps each backup file to the original path; `absent` lists files that did not exist
//! before the change. The directory is 0700 and the copies 0600 (`.claude.json` holds OAuth data).

use crate::env::Env;
use crate::error::InstallError;
use crate::fsutil;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct BackupIndex {
    #[serde(default)]
    pub created_at: String,
    #[serde(default)]
    pub action: String,
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    #[serde(default)]
    pub absent: Vec<String>,
}

pub(crate) struct Backup {
    pub dir: PathBuf,
    index: BackupIndex,
}

impl Backup {
    /// Make a new, unique backup directory.
    pub fn create(env: &Env, action: &str) -> Result<Backup, InstallError> {
        let root = env.backups_dir();
        fsutil::create_private_dir_all(&root)?;
        let stamp = fsutil::utc_stamp(SystemTime::now());
        let pid = std::process::id();
        for n in 0..1000u32 {
            let name = if n == 0 {
                format!("{stamp}-{pid}")
            } else {
                format!("{stamp}-{pid}-{n}")
            };
            let dir = root.join(name);
            let mut b = std::fs::DirBuilder::new();
            #[cfg(unix)]
            {
                use std::os::unix::fs::DirBuilderExt;
                b.mode(0o700);
            }
            match b.create(&dir) {
                Ok(()) => {
                    return Ok(Backup {
                        dir,
                        index: BackupIndex {
                            created_at: stamp,
                            action: action.to_string(),
                            ..BackupIndex::default()
                        },
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(InstallError::io(dir, e)),
            }
        }
        Err(InstallError::io(
            root,
            std::io::Error::other("could not make a unique backup directory"),
        ))
    }

    /// Record the state of `original` before its change: a copy of `bytes`, or "absent".
    /// Returns the copy's path.
    pub fn save(
        &mut self,
        original: &Path,
        bytes: Option<&[u8]>,
    ) -> Result<Option<PathBuf>, InstallError> {
        let orig = crate::state::key(original);
        let saved = match bytes {
            None => {
                if !self.index.absent.contains(&orig) {
                    self.index.absent.push(orig);
                }
                None
            }
            Some(bytes) => {
                let base = original
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "file".into());
                let name = match self.index.files.iter().find(|(_, o)| **o == orig) {
                    Some((name, _)) => name.clone(),
                    None => format!("{}-{base}", self.index.files.len() + 1),
                };
                let path = self.dir.join(&name);
                fsutil::write_atomic(&path, bytes, Some(0o600), Some(0o600))?;
                self.index.files.insert(name, orig);
                Some(path)
            }
        };
        let mut idx = serde_json::to_vec_pretty(&self.index)
            .map_err(|e| InstallError::io(&self.dir, std::io::Error::other(e)))?;
        idx.push(b'\n');
        fsutil::write_atomic(&self.dir.join("index.json"), &idx, Some(0o600), Some(0o600))?;
        Ok(saved)
    }
}
