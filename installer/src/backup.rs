//! Backups: before its first change in an apply, each file is copied into
//! `$XDG_STATE_HOME/memtrail/backups/<YYYYMMDDTHHMMSSZ>-<pid>[-<n>]/`, with an `index.json`:
//!
//! ```json
//! { "created_at": "20261129T101500Z", "created_ns": 1795947300123456789, "action": "install",
//!   "files": { "1-settings.json": "/home/u/.claude/settings.json" },
//!   "absent": [ "/home/u/.claude/skills/memtrail/SKILL.md" ] }
//! ```
//!
//! `files` maps each backup file to the original path; `absent` lists files that did not exist
//! before the change. The directories (`backups/` and each backup) are 0700 and the copies and
//! indexes 0600, whatever the umask and the original's mode: `.claude.json` holds OAuth data.
//!
//! **Pruning.** Every apply that changes a file makes a backup folder, and `.claude.json` can be
//! megabytes, so after each apply the folders are pruned. They are ordered by `created_at`, then
//! `created_ns`, then the `-<n>` of their names. What stays:
//!
//! - the [`KEEP_RECENT`] most recent folders, whole, unless older than [`MAX_AGE`] (30 days):
//!   a copy of a config holds its API keys and tokens as they were, so copies are not kept
//!   for long after the run that needed them;
//! - for each file, its first-ever backup (the pristine original, or the record that it was
//!   absent), which uninstall falls back on when the install state is lost. An older folder
//!   kept for that keeps only those first-ever entries: its other copies are deleted and its
//!   index rewritten.
//!
//! Everything else is deleted. A folder without a readable index (another apply may be creating
//! it) is never touched. Pruning is best effort: failing to delete never fails an apply. The
//! first-ever copies stay as long as memtrail's state does: `memtrail uninstall --purge` deletes
//! them all once every agent is uninstalled (see [`crate::purge_state_in`]).

use crate::error::InstallError;
use crate::fsutil;
use memtrail_adapters::Env;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// How many of the most recent backup folders pruning keeps whole.
pub(crate) const KEEP_RECENT: usize = 5;

/// How old a recent backup folder may get before pruning deletes it (but for first-ever
/// copies): 30 days.
pub(crate) const MAX_AGE: std::time::Duration = std::time::Duration::from_secs(30 * 86_400);

/// What the config backups amount to, for `memtrail status`. Serializes as `status --json`'s
/// `backups` (docs/json.md): the times as RFC 3339 strings named `oldest` and `newest`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackupSummary {
    /// The backups folder (`$XDG_STATE_HOME/memtrail/backups`).
    pub dir: PathBuf,
    /// How many backup folders (one per install or uninstall run that changed a file).
    pub folders: usize,
    /// How many file copies they hold (each a config as it was, secrets included).
    pub copies: usize,
    /// Their total size in bytes.
    pub bytes: u64,
    /// When the oldest and the newest were made, in milliseconds since the Unix epoch.
    #[serde(rename = "oldest", serialize_with = "rfc3339_ms")]
    pub oldest_ms: Option<i64>,
    /// See `oldest_ms`.
    #[serde(rename = "newest", serialize_with = "rfc3339_ms")]
    pub newest_ms: Option<i64>,
}

/// A time in ms since the Unix epoch as RFC 3339 (UTC, milliseconds), or `null`.
fn rfc3339_ms<S: serde::Serializer>(ms: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
    match ms {
        Some(ms) => s.serialize_str(&memtrail_adapters::format_rfc3339_ms(*ms)),
        None => s.serialize_none(),
    }
}

/// When a backup folder was made: its `created_ns`, else (older versions) its mtime.
fn made_at(dir: &Path, index: &BackupIndex) -> SystemTime {
    if index.created_ns > 0 {
        return UNIX_EPOCH + std::time::Duration::from_nanos(index.created_ns);
    }
    std::fs::metadata(dir)
        .and_then(|m| m.modified())
        .unwrap_or(UNIX_EPOCH)
}

/// The backups' count, size and age (folders with a readable index).
pub(crate) fn summary(env: &Env) -> BackupSummary {
    let all = list(env);
    let ms = |t: SystemTime| {
        t.duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    };
    let times: Vec<i64> = all.iter().map(|(d, i)| ms(made_at(d, i))).collect();
    let mut bytes = 0;
    let mut copies = 0;
    for (dir, index) in &all {
        for name in index.files.keys() {
            if let Ok(m) = std::fs::symlink_metadata(dir.join(name)) {
                bytes += m.len();
                copies += 1;
            }
        }
    }
    BackupSummary {
        dir: env.backups_dir(),
        folders: all.len(),
        copies,
        bytes,
        oldest_ms: times.iter().min().copied(),
        newest_ms: times.iter().max().copied(),
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct BackupIndex {
    #[serde(default)]
    pub created_at: String,
    /// Nanoseconds since the epoch, to order folders made within the same second.
    #[serde(default)]
    pub created_ns: u64,
    #[serde(default)]
    pub action: String,
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    #[serde(default)]
    pub absent: Vec<String>,
}

impl BackupIndex {
    /// The original paths this backup holds something for (a copy, or "absent").
    fn originals(&self) -> impl Iterator<Item = &String> {
        self.files.values().chain(self.absent.iter())
    }
}

pub(crate) struct Backup {
    pub dir: PathBuf,
    index: BackupIndex,
}

#[cfg(unix)]
fn set_mode(p: &Path, mode: u32) -> Result<(), InstallError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
        .map_err(|e| InstallError::io(p, e))
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) -> Result<(), InstallError> {
    Ok(())
}

impl Backup {
    /// Make a new, unique backup directory.
    pub fn create(env: &Env, action: &str) -> Result<Backup, InstallError> {
        let root = env.backups_dir();
        refuse_links(env)?;
        // Created with the owner of the folder above: `sudo -E memtrail install` (HOME still the
        // user's) must not leave root's folders in the user's home.
        fsutil::create_dirs_like_parent(&root)?;
        // memtrail's own directory: owner only, even if an older version or a umask left it
        // open.
        set_mode(&root, 0o700)?;
        let now = SystemTime::now();
        let stamp = fsutil::utc_stamp(now);
        let ns = now
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
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
                    // The umask may have taken bits away (even the owner's).
                    set_mode(&dir, 0o700)?;
                    fsutil::match_owner(&dir, &root);
                    return Ok(Backup {
                        dir,
                        index: BackupIndex {
                            created_at: stamp,
                            created_ns: ns,
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
        let orig = fsutil::path_key(original);
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
                fsutil::match_owner(&path, &self.dir);
                self.index.files.insert(name, orig);
                Some(path)
            }
        };
        write_index(&self.dir, &self.index)?;
        Ok(saved)
    }
}

fn write_index(dir: &Path, index: &BackupIndex) -> Result<(), InstallError> {
    let mut idx = serde_json::to_vec_pretty(index)
        .map_err(|e| InstallError::io(dir, std::io::Error::other(e)))?;
    idx.push(b'\n');
    let path = dir.join("index.json");
    fsutil::write_atomic(&path, &idx, Some(0o600), Some(0o600))?;
    fsutil::match_owner(&path, dir);
    Ok(())
}

/// An error naming memtrail's state folder or its `backups` folder when either is a symlink
/// (or another non-folder): backups hold the agents' configs with their API keys, so they are
/// written, chmod-ed, read back and purged only in a folder of memtrail's own, never in the
/// folder a planted link points to. `Ok` when they are real folders or do not exist yet.
pub(crate) fn refuse_links(env: &Env) -> Result<(), InstallError> {
    for dir in [env.state_dir(), env.backups_dir()] {
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if !m.is_dir() => {
                let what = if m.file_type().is_symlink() {
                    "is a symlink"
                } else {
                    "is not a folder"
                };
                return Err(InstallError::io(
                    &dir,
                    std::io::Error::other(format!(
                        "{what}: memtrail keeps its config backups (which hold API keys) only in a folder of its own; remove it and run memtrail again"
                    )),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The backup folders with a readable index, oldest first; none when the backups folder or
/// the state folder is a symlink (see [`refuse_links`]).
pub(crate) fn list(env: &Env) -> Vec<(PathBuf, BackupIndex)> {
    if refuse_links(env).is_err() {
        return Vec::new();
    }
    let Ok(rd) = std::fs::read_dir(env.backups_dir()) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, BackupIndex)> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .filter_map(|dir| {
            let bytes = std::fs::read(dir.join("index.json")).ok()?;
            let index = serde_json::from_slice::<BackupIndex>(&bytes).ok()?;
            Some((dir, index))
        })
        .collect();
    // By time; then, for folders of the same second without `created_ns` (older versions),
    // by the `-<n>` that made their names unique (`-10` after `-9`).
    out.sort_by_cached_key(|(dir, index)| {
        (
            index.created_at.clone(),
            index.created_ns,
            uniquifier(dir),
            dir.clone(),
        )
    });
    out
}

/// The `<n>` of a folder named `<stamp>-<pid>-<n>` (0 for `<stamp>-<pid>`).
fn uniquifier(dir: &Path) -> u32 {
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let mut parts = name.split('-');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(_), Some(_), Some(n)) => n.parse().unwrap_or(0),
        _ => 0,
    }
}

/// Prune the backups (see the module docs), never touching `current`.
pub(crate) fn prune(env: &Env, current: &Path) {
    let all = list(env);
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (i, (_, index)) in all.iter().enumerate() {
        for orig in index.originals() {
            first.entry(orig.as_str()).or_insert(i);
        }
    }
    let recent_from = all.len().saturating_sub(KEEP_RECENT);
    let now = SystemTime::now();
    for (i, (dir, index)) in all.iter().enumerate() {
        let too_old = now
            .duration_since(made_at(dir, index))
            .is_ok_and(|age| age > MAX_AGE);
        if (i >= recent_from && !too_old) || dir == current {
            continue;
        }
        let is_first = |orig: &String| first.get(orig.as_str()) == Some(&i);
        if !index.originals().any(is_first) {
            let _ = std::fs::remove_dir_all(dir);
            continue;
        }
        if index.originals().all(is_first) {
            continue;
        }
        // Keep only the first-ever entries: index first, so that it never names a deleted copy.
        let mut kept = index.clone();
        kept.files.retain(|_, orig| is_first(orig));
        kept.absent.retain(is_first);
        if write_index(dir, &kept).is_ok() {
            for (name, orig) in &index.files {
                // Only a file of this folder: an index naming `../x` or `/x` (not one memtrail
                // wrote) never makes a prune delete a file elsewhere.
                let mut parts = Path::new(name).components();
                let own = matches!(
                    (parts.next(), parts.next()),
                    (Some(std::path::Component::Normal(_)), None)
                );
                if own && !is_first(orig) {
                    let _ = std::fs::remove_file(dir.join(name));
                }
            }
        }
    }
}
