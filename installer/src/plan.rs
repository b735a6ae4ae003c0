//! Plans: what an install or uninstall would change, computed without writing anything.

use crate::engine::{Computed, History, compute};
use crate::env::Env;
use crate::error::InstallError;
use crate::spec::FileSpec;
use crate::state::{FileState, InstallState};
use crate::{Action, agents, fsutil};
use memtrail_adapters::Agent;
use similar::TextDiff;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The change to one file.
#[derive(Debug, Clone)]
pub struct FileChange {
    /// The configured path (when it is a symlink, its target is what gets edited).
    pub path: PathBuf,
    /// The bytes the change was computed from; `None`: the file does not exist.
    pub before: Option<Vec<u8>>,
    /// The bytes it gets; `None`: the file is deleted.
    pub after: Option<Vec<u8>>,
    /// One line per entry added, updated or removed (`add hook Stop`, `update MCP server
    /// memtrail: /old/memtrail → /new/memtrail`, `remove skill memtrail`, …).
    pub lines: Vec<String>,
    pub(crate) spec: FileSpec,
    pub(crate) computed: Computed,
    pub(crate) history: Option<FileState>,
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

    /// A unified diff (`---`/`+++` headers, 3 lines of context) per changed file. A created file
    /// is diffed against `/dev/null`, and so is a deleted one.
    pub fn diff(&self) -> String {
        let mut out = String::new();
        for f in &self.files {
            let shown = show(&self.env, &f.path);
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
                format!("a/{shown}")
            } else {
                "/dev/null".into()
            };
            let hb = if f.after.is_some() {
                format!("b/{shown}")
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

    /// One line per change, prefixed with the file (`~/.claude/settings.json: add hook Stop`).
    pub fn describe(&self) -> Vec<String> {
        self.files
            .iter()
            .flat_map(|f| {
                let shown = show(&self.env, &f.path);
                f.lines.iter().map(move |l| format!("{shown}: {l}"))
            })
            .collect()
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
    let state = InstallState::load(env);
    let mut files = Vec::new();
    for f in spec.files {
        let target = fsutil::resolve_target(&f.path)?;
        let before = fsutil::read_opt(&target)?;
        let history = state.as_ref().and_then(|s| s.get(&f.path)).cloned();
        let computed = {
            let h = History::new(env, &f.path, &target, history.as_ref());
            compute(&f, action, before.as_deref(), &h)?
        };
        if computed.after == before {
            continue;
        }
        if before.is_some() && fsutil::is_read_only(&target) {
            return Err(InstallError::ReadOnly { path: f.path });
        }
        files.push(FileChange {
            path: f.path.clone(),
            before,
            after: computed.after.clone(),
            lines: computed.lines.clone(),
            spec: f,
            computed,
            history,
        });
    }
    Ok(Plan {
        agent,
        action,
        binary: binary.to_path_buf(),
        env: env.clone(),
        files,
    })
}
