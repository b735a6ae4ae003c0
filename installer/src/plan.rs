//! Plans: what an install or uninstall would change, computed without writing anything.

use crate::action::Action;
use crate::edit::History;
use crate::engine::compute;
use crate::error::InstallError;
use crate::spec::FileSpec;
use crate::state::{FileState, InstallState};
use crate::{agents, fsutil};
use memtrail_adapters::Agent;
use memtrail_adapters::Env;
use similar::TextDiff;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The change to one file.
#[derive(Clone)]
pub struct FileChange {
    /// The configured path (when it is a symlink, its target is what gets edited).
    pub path: PathBuf,
    /// The bytes the change was computed from; `None`: the file does not exist.
    pub before: Option<Vec<u8>>,
    /// The bytes it gets; `None`: the file is deleted.
    pub after: Option<Vec<u8>>,
    /// One line per entry added, updated, restored or removed (`add hook Stop`, `update MCP
    /// server memtrail: /old/memtrail → /new/memtrail`, `remove skill memtrail`, …).
    pub lines: Vec<String>,
    /// The file exists and is read-only: the plan shows the change, but [`crate::apply`]
    /// refuses it ([`InstallError::ReadOnly`]) until the file is made writable.
    pub read_only: bool,
    /// Something the user should know about this change (Codex: new hooks run only once
    /// trusted in `/hooks`). Shown by [`Plan::describe`] as a `note:` line.
    pub advice: Option<String>,
    pub(crate) spec: FileSpec,
    /// Install: what to record in the install state for this file.
    pub(crate) record: Option<FileState>,
    /// Directories to remove (when empty) after the file is deleted.
    pub(crate) remove_dirs: Vec<PathBuf>,
    pub(crate) history: Option<FileState>,
}

impl std::fmt::Debug for FileChange {
    /// Sizes rather than bytes: a `.claude.json` can be megabytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileChange")
            .field("path", &self.path)
            .field("before_len", &self.before.as_ref().map(Vec::len))
            .field("after_len", &self.after.as_ref().map(Vec::len))
            .field("lines", &self.lines)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

/// Everything an install or uninstall of one agent would change. Nothing is written until
/// [`crate::apply`]. Files that would not change are not in the plan.
#[derive(Debug, Clone)]
pub struct Plan {
    pub(crate) agent: Agent,
    pub(crate) action: Action,
    pub(crate) binary: PathBuf,
    pub(crate) env: Env,
    pub(crate) files: Vec<FileChange>,
    /// memtrail registers nothing in this agent (an import-only one, like Aider).
    pub(crate) registers_nothing: bool,
}

impl Plan {
    /// The agent the plan is for.
    pub fn agent(&self) -> Agent {
        self.agent
    }

    /// Install or uninstall.
    pub fn action(&self) -> Action {
        self.action
    }

    /// The memtrail binary the entries point at.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// The files that change, in a stable order (settings, MCP file, skill for Claude Code).
    pub fn files(&self) -> &[FileChange] {
        &self.files
    }

    /// True when nothing would change (e.g. a second install).
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// True when memtrail registers nothing in this agent at all (Aider: no hooks, no MCP
    /// client, no skills; `memtrail import` reads its sessions), so the plan is always empty:
    /// "already installed" would not be true of it.
    pub fn registers_nothing(&self) -> bool {
        self.registers_nothing
    }

    /// A unified diff (`---`/`+++` headers, 3 lines of context) per changed file. The headers
    /// name the file by its absolute path, the way git writes one (`--- a/home/u/.claude.json`,
    /// i.e. `a` + the path; apply with `patch -p1 -d /`). A created file is diffed against
    /// `/dev/null`, and so is a deleted one. A file that [`crate::apply`] would refuse has a
    /// `note:` line before its headers (text before `---` is not part of a diff).
    pub fn diff(&self) -> String {
        let mut out = String::new();
        for f in &self.files {
            if let Some(note) = note(&f.path.display().to_string(), f) {
                out.push_str(&format!("note: {note}\n"));
            }
            let a = f
                .before
                .as_deref()
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            let b = f
                .after
                .as_deref()
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            let ha = if f.before.is_some() {
                diff_name("a", &f.path)
            } else {
                "/dev/null".into()
            };
            let hb = if f.after.is_some() {
                diff_name("b", &f.path)
            } else {
                "/dev/null".into()
            };
            let diff = TextDiff::configure()
                .timeout(Duration::from_secs(2))
                .diff_lines(a.as_ref(), b.as_ref());
            out.push_str(
                &diff
                    .unified_diff()
                    .context_radius(3)
                    .header(&ha, &hb)
                    .to_string(),
            );
        }
        out
    }

    /// One line per change, prefixed with the file (`~/.claude/settings.json: add hook Stop`),
    /// and a `note:` line for a file that [`crate::apply`] would refuse (a read-only one) or
    /// that comes with advice ([`FileChange::advice`]).
    pub fn describe(&self) -> Vec<String> {
        self.files
            .iter()
            .flat_map(|f| {
                let shown = show(&self.env, &f.path);
                let note = note(&shown, f).map(|n| format!("{shown}: note: {n}"));
                let advice = f.advice.as_ref().map(|a| format!("{shown}: note: {a}"));
                f.lines
                    .iter()
                    .map(move |l| format!("{shown}: {l}"))
                    .chain(note)
                    .chain(advice)
            })
            .collect()
    }

    /// How many of [`Plan::describe`]'s lines change something: not its notes, nor the lines
    /// that say what stays (`keep …`: an entry that loads a file holding the user's hooks too,
    /// a table holding the user's keys).
    pub fn change_count(&self) -> usize {
        self.files
            .iter()
            .flat_map(|f| &f.lines)
            .filter(|l| !l.starts_with("keep "))
            .count()
    }

    /// What stands in the way of applying the plan, one line per file (`~/.claude/settings.json
    /// is read-only: …`); empty when nothing does.
    pub fn notes(&self) -> Vec<String> {
        self.files
            .iter()
            .filter_map(|f| note(&show(&self.env, &f.path), f))
            .collect()
    }
}

/// The note for a file that apply would refuse.
fn note(shown: &str, f: &FileChange) -> Option<String> {
    f.read_only.then(|| {
        format!("{shown} is read-only: this change cannot be applied until it is made writable")
    })
}

/// A diff header name: `a` + an absolute path (`a/home/u/x`), as git writes one; `a/` + a
/// relative one.
fn diff_name(side: &str, p: &Path) -> String {
    let shown = p.display().to_string();
    if shown.starts_with('/') {
        format!("{side}{shown}")
    } else {
        format!("{side}/{shown}")
    }
}

/// A path with the home directory written as `~`.
pub(crate) fn show(env: &Env, p: &Path) -> String {
    match p.strip_prefix(env.home()) {
        Ok(rest) if !env.home().as_os_str().is_empty() => format!("~/{}", rest.display()),
        _ => p.display().to_string(),
    }
}

pub(crate) fn plan_in(
    env: &Env,
    agent: Agent,
    action: Action,
    binary: &Path,
) -> Result<Plan, InstallError> {
    let spec = agents::spec(agent, env, binary)?;
    let advice = spec.advice.clone();
    let registers_nothing = spec.files.is_empty();
    let state = InstallState::load(env);
    let mut files = Vec::new();
    for f in spec.files {
        let target = fsutil::resolve_target(&f.path)?;
        let before = fsutil::read_opt(&target)?;
        let history = state.as_ref().and_then(|s| s.get(&f.path)).cloned();
        let computed = {
            let h = History::new(env, &f, &target, history.as_ref());
            compute(&f, action, before.as_deref(), &h)?
        };
        // Unchanged, and nothing to say (an uninstall may keep an entry, and say why).
        if computed.after == before && computed.lines.is_empty() {
            continue;
        }
        // Shown, but refused by apply: a dry run still tells what would change.
        let read_only = before.is_some() && fsutil::is_read_only(&target);
        let advice = match action {
            Action::Install => advice
                .iter()
                .find(|(p, _)| *p == f.path)
                .map(|(_, a)| a.clone()),
            Action::Uninstall => None,
        };
        files.push(FileChange {
            advice,
            path: f.path.clone(),
            before,
            after: computed.after,
            lines: computed.lines,
            read_only,
            spec: f,
            record: computed.record,
            remove_dirs: computed.remove_dirs,
            history,
        });
    }
    Ok(Plan {
        agent,
        action,
        binary: binary.to_path_buf(),
        env: env.clone(),
        files,
        registers_nothing,
    })
}
