//! Applying a plan: backups, atomic writes, retries when another program rewrote a file.

use crate::action::Action;
use crate::backup::{self, Backup};
use crate::edit::{Computed, History};
use crate::engine::compute;
use crate::error::InstallError;
use crate::fsutil::{self, TempFile};
use crate::plan::{FileChange, Plan};
use crate::state::{FileState, InstallState};
use serde::Serialize;
use std::path::PathBuf;

/// How long apply keeps re-reading a file and recomputing its edit while another program keeps
/// rewriting it (Claude Code rewrites `.claude.json` often, in bursts). Between attempts it waits
/// a little longer each time (5 ms, 10 ms, … then [`MAX_BACKOFF`]), so that a burst can end; the
/// window it needs (read, edit, backup, temp file with fsync, rename) is tens of milliseconds on
/// a slow disk, longer than the gap between two writes of a busy writer.
pub const RETRY_BUDGET: std::time::Duration = std::time::Duration::from_secs(15);

/// How long apply waits after writing a contended file before it checks that its version is
/// still there (another program's save computed from the older bytes lands within it).
pub const SETTLE: std::time::Duration = std::time::Duration::from_millis(50);

/// The longest wait between two attempts on a contended file.
pub const MAX_BACKOFF: std::time::Duration = std::time::Duration::from_millis(250);

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The file did not exist and was written.
    Created,
    /// The file was replaced with the edited version.
    Updated,
    /// The file was removed (it had been created by install).
    Deleted,
    /// It already was as the plan wanted (someone else made the change meanwhile).
    Unchanged,
}

/// One file's result.
#[derive(Debug, Clone, Serialize)]
pub struct AppliedFile {
    /// The configured path.
    pub path: PathBuf,
    /// What happened.
    pub outcome: Outcome,
    /// The copy of the file taken before the change (`None` when it did not exist).
    pub backup: Option<PathBuf>,
    /// How many times the edit was computed (more than 1: the file changed under us).
    pub attempts: u32,
    /// The change lines of the edit that was written (recomputed if the file had changed).
    pub lines: Vec<String>,
}

/// The result of [`crate::apply`].
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    /// The backup directory of this apply (`None` when nothing needed a backup).
    pub backup_dir: Option<PathBuf>,
    /// One entry per file of the plan, in its order.
    pub files: Vec<AppliedFile>,
}

/// The edit to write: the plan's own (borrowed) or one recomputed on newer bytes.
struct Edit<'a> {
    after: &'a Option<Vec<u8>>,
    lines: &'a [String],
    record: &'a Option<FileState>,
    remove_dirs: &'a [PathBuf],
}

impl<'a> Edit<'a> {
    fn planned(fc: &'a FileChange) -> Self {
        Edit {
            after: &fc.after,
            lines: &fc.lines,
            record: &fc.record,
            remove_dirs: &fc.remove_dirs,
        }
    }

    fn computed(c: &'a Computed) -> Self {
        Edit {
            after: &c.after,
            lines: &c.lines,
            record: &c.record,
            remove_dirs: &c.remove_dirs,
        }
    }
}

/// A file this apply changed, with what it was, to put it back when a later file fails.
struct Done {
    path: PathBuf,
    target: PathBuf,
    before: Option<Vec<u8>>,
    mode: Option<u32>,
    /// The version memtrail wrote (`None`: it deleted the file).
    written: Option<fsutil::FileId>,
    /// The folders created for it.
    new_dirs: Vec<PathBuf>,
}

pub(crate) fn apply(plan: &Plan) -> Result<Applied, InstallError> {
    // One install or uninstall at a time (the CLI holds it already, around its plans too).
    let _lock = crate::lock::lock_in(
        &plan.env,
        crate::lock::LOCK_NOTICE_AFTER,
        crate::lock::LOCK_TIMEOUT,
        &mut |_| {},
    )?;
    // A read-only file is refused before anything is written.
    for fc in &plan.files {
        if fc.before.is_some() && fsutil::is_read_only(&fsutil::resolve_target(&fc.path)?) {
            return Err(InstallError::ReadOnly {
                path: fc.path.clone(),
            });
        }
    }
    let state_before = InstallState::load(&plan.env);
    let mut backup: Option<Backup> = None;
    let mut done: Vec<Done> = Vec::new();
    let result = apply_files(plan, &mut backup, &mut done)
        .map_err(|e| roll_back(plan, e, &done, state_before, &mut backup));
    if let Some(b) = &backup {
        backup::prune(&plan.env, &b.dir);
    }
    result
}

/// All or nothing: after `error`, put every file `done` changed back to its exact bytes and
/// mode (last first), and the install state as it was; the backup of this apply goes too when
/// everything was put back. A file another program changed since memtrail wrote it is left
/// as it is, and named ([`InstallError::Incomplete`]).
fn roll_back(
    plan: &Plan,
    error: InstallError,
    done: &[Done],
    state_before: Option<InstallState>,
    backup: &mut Option<Backup>,
) -> InstallError {
    let mut left = Vec::new();
    for d in done.iter().rev() {
        if !matches!(restore(d), Ok(true)) {
            left.push(d.path.clone());
        }
    }
    if let Some(st) = state_before
        && st.save(&plan.env).is_err()
    {
        left.push(plan.env.install_state_path());
    }
    if !left.is_empty() {
        return InstallError::Incomplete {
            error: Box::new(error),
            changed: left,
        };
    }
    if let Some(b) = backup.take() {
        let _ = std::fs::remove_dir_all(&b.dir);
    }
    error
}

/// Put one file back; `Ok(false)` when it changed since memtrail wrote it.
fn restore(d: &Done) -> Result<bool, InstallError> {
    if !fsutil::still(&d.target, d.written)? {
        return Ok(false);
    }
    match &d.before {
        None => {
            if d.written.is_some() {
                std::fs::remove_file(&d.target).map_err(|e| InstallError::io(&d.target, e))?;
                fsutil::sync_dir(&d.target);
            }
            fsutil::remove_empty_dirs(&d.new_dirs);
            Ok(true)
        }
        Some(bytes) => {
            if let Some(dir) = d.target.parent() {
                fsutil::create_dirs_like_parent(dir)?;
            }
            let tmp = TempFile::write_with_mode(&d.target, bytes, d.mode.unwrap_or(0o600))?;
            tmp.persist_if_still(&d.target, d.written)
        }
    }
}

fn apply_files(
    plan: &Plan,
    backup: &mut Option<Backup>,
    done: &mut Vec<Done>,
) -> Result<Applied, InstallError> {
    let env = &plan.env;
    let action_name = match plan.action {
        Action::Install => "install",
        Action::Uninstall => "uninstall",
    };
    // A corrupt state is replaced: uninstall falls back to the backups for what it lacks.
    let mut st = InstallState::load(env).unwrap_or_default();
    let mut out = Applied {
        backup_dir: None,
        files: Vec::new(),
    };
    // Folders uninstall removes when empty, tried again at the end: one file's folder may hold
    // another's (`~/.config` above two created folders).
    let mut all_removed_dirs: Vec<std::path::PathBuf> = Vec::new();
    for fc in &plan.files {
        let target = fsutil::resolve_target(&fc.path)?;
        let mut attempts: u32 = 0;
        // What this apply wrote to the file before another program's save replaced it.
        let mut written_before: Option<(Outcome, Option<PathBuf>, Vec<String>)> = None;
        let started = std::time::Instant::now();
        loop {
            if attempts > 0 {
                if started.elapsed() >= RETRY_BUDGET {
                    return Err(InstallError::Contended {
                        path: fc.path.clone(),
                        attempts,
                    });
                }
                let wait = std::time::Duration::from_millis(5u64 << (attempts - 1).min(6));
                std::thread::sleep(wait.min(MAX_BACKOFF));
            }
            attempts += 1;
            let (mut current, id) = fsutil::read_with_id(&target)?;
            let recomputed;
            let edit = if current == fc.before {
                Edit::planned(fc)
            } else {
                let h = History::new(env, &fc.spec, &target, fc.history.as_ref());
                recomputed = compute(&fc.spec, plan.action, current.as_deref(), &h)?;
                Edit::computed(&recomputed)
            };
            if *edit.after == current {
                // Already as wanted: by this apply's own earlier write, kept in the other
                // program's save, or by someone else.
                let (outcome, backup, lines) =
                    written_before
                        .take()
                        .unwrap_or((Outcome::Unchanged, None, Vec::new()));
                out.files.push(AppliedFile {
                    path: fc.path.clone(),
                    outcome,
                    backup,
                    attempts,
                    lines,
                });
                break;
            }
            if current.is_some() && fsutil::is_read_only(&target) {
                return Err(InstallError::ReadOnly {
                    path: fc.path.clone(),
                });
            }
            // Back up exactly the bytes about to be replaced (again, if they changed meanwhile).
            let b = match backup {
                Some(b) => b,
                None => backup.insert(Backup::create(env, action_name)?),
            };
            let saved = b.save(&fc.path, current.as_deref())?;
            out.backup_dir = Some(b.dir.clone());
            let mode = if current.is_some() {
                fsutil::mode_of(&target)
            } else {
                None
            };
            let k = fsutil::path_key(&fc.path);
            // Uninstall gives back the group's and others' bits install took, when the file
            // still has the mode install left.
            let mode_back = match plan.action {
                Action::Uninstall => st
                    .files
                    .get(&k)
                    .and_then(|r| r.mode_before)
                    .filter(|&m| mode == Some(fsutil::owner_only_mode(Some(m), None))),
                Action::Install => None,
            };
            let mut new_dirs = Vec::new();
            let existed = current.is_some();
            let outcome = match edit.after {
                Some(bytes) => {
                    if current.is_none()
                        && let Some(dir) = target.parent()
                    {
                        new_dirs = fsutil::missing_dirs(dir);
                        fsutil::create_dirs_like_parent(dir)?;
                    }
                    let tmp = match mode_back {
                        Some(m) => TempFile::write_with_mode(&target, bytes, m)?,
                        None => TempFile::write(&target, bytes, mode, fc.spec.new_file_mode)?,
                    };
                    // Last look before the rename, and the rename itself only if the file is
                    // still the version edited: if another program wrote meanwhile, redo the
                    // edit on its bytes rather than overwrite them.
                    if !fsutil::still(&target, id)? || !tmp.persist_if_still(&target, id)? {
                        fsutil::remove_empty_dirs(&new_dirs);
                        continue;
                    }
                    done.push(Done {
                        path: fc.path.clone(),
                        target: target.clone(),
                        before: current.take(),
                        mode,
                        written: fsutil::file_id(&target),
                        new_dirs: std::mem::take(&mut new_dirs),
                    });
                    // A folder of memtrail's own (a skill's) left open by an older version.
                    if let crate::spec::Body::Whole(w) = &fc.spec.body {
                        w.owned_dirs.iter().for_each(|d| fsutil::tighten_dir(d));
                    }
                    if existed {
                        Outcome::Updated
                    } else {
                        Outcome::Created
                    }
                }
                None => {
                    if !fsutil::still(&target, id)? {
                        continue;
                    }
                    if existed {
                        std::fs::remove_file(&target).map_err(|e| InstallError::io(&target, e))?;
                        fsutil::sync_dir(&target);
                        done.push(Done {
                            path: fc.path.clone(),
                            target: target.clone(),
                            before: current.take(),
                            mode,
                            written: None,
                            new_dirs: Vec::new(),
                        });
                    }
                    fsutil::remove_empty_dirs(edit.remove_dirs);
                    all_removed_dirs.extend(edit.remove_dirs.iter().cloned());
                    Outcome::Deleted
                }
            };
            match plan.action {
                Action::Install => {
                    if let Some(rec) = edit.record.clone() {
                        let file = st.files.entry(k).or_default();
                        file.merge(rec);
                        // The bits this write took away, the first time.
                        if let Some(m) = mode.filter(|m| m & 0o077 != 0)
                            && file.mode_before.is_none()
                        {
                            file.mode_before = Some(m);
                        }
                    }
                }
                Action::Uninstall => {
                    st.files.remove(&k);
                }
            }
            st.save(env)?;
            // A file another program is rewriting right now (this write had to be redone): its
            // next save may have been computed from the bytes before ours, and no rename can
            // tell. Look once more after a moment; when ours were replaced, redo the edit on
            // the bytes there now (within the retry budget). Rolling back goes to those bytes.
            // The earlier write stays in `done`: a rollback finds it replaced and names the
            // file as left as the other program wrote it.
            if attempts > 1 && matches!(outcome, Outcome::Updated | Outcome::Created) {
                std::thread::sleep(SETTLE);
                if fsutil::file_id(&target) != done.last().and_then(|d| d.written) {
                    written_before = Some((outcome, saved, edit.lines.to_vec()));
                    continue;
                }
            }
            out.files.push(AppliedFile {
                path: fc.path.clone(),
                outcome,
                backup: saved,
                attempts,
                lines: edit.lines.to_vec(),
            });
            break;
        }
    }
    fsutil::remove_empty_dirs(&all_removed_dirs);
    Ok(out)
}
