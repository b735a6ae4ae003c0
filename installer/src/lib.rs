//! memtrail-installer: registers memtrail in coding agents' config files, and takes it out again.
//!
//! - [`plan`] computes what an install or uninstall would change (nothing is written), with a
//!   unified [`Plan::diff`] and one [`Plan::describe`] line per entry. A read-only file is in
//!   the plan like any other, with a note ([`Plan::notes`]): a dry run shows what would change.
//! - [`apply`] writes a plan: each file is backed up first (into
//!   `$XDG_STATE_HOME/memtrail/backups/<YYYYMMDDTHHMMSSZ>-<pid>/`, with an `index.json`; old
//!   backups are pruned to each file's first-ever copy plus the last five of under 30 days, see
//!   the `backup` module), then replaced atomically (temp file in the same folder, fsync, rename), owner-only
//!   whatever the umask: a file memtrail creates is 0600 (its new folders 0700), a file it edits
//!   keeps its owner's bits and loses its group and other bits (what memtrail writes holds hooks,
//!   MCP servers, skills or keys); a symlinked config is edited at its target, and a config with
//!   more than one hard link is rewritten in place (truncate, write, fsync, after its backup and
//!   with the same check that nobody wrote it meanwhile) so that its links stay one file. If the file changed since the plan
//!   (Claude Code rewrites `~/.claude.json` often), the edit is recomputed on the new bytes.
//! - [`status`] tells, per registration item, whether it is present, stale, duplicated, missing
//!   or in a file that cannot be used.
//! - [`doctor`] runs each installed hook command the way its agent runs it and reports what is
//!   wrong with a fix ([`DoctorReport`], the shape of `memtrail doctor --json`).
//!
//! Modules, each depending only on those listed before it (test: `module_graph`): `env`,
//! `error`, `action`, `spec`, `jsonedit` (the JSON and JSONC editor, standalone); `fsutil`;
//! `state` (the install state) and `backup` (the backups); `lock` (one install or uninstall at a
//! time); `origin` (what the oldest backup
//! says a file was); `edit` (what the JSON and TOML backends share: a file's history, a
//! computed change); `tomledit` (the TOML backend) and `engine` (the JSON backend, and the
//! dispatch to the other two); `agents`, `plan`, `apply`, `status`, `doctor`, `report`.
//!
//! Edits follow DESIGN.md principle 4 (never clobber a user's config): they are format-preserving
//! (comments, key order, indentation, CRLF and trailing commas survive; see [`jsonedit`]), touch
//! only memtrail's entries, are idempotent (a second install's plan is empty) and exactly
//! reversible (install then uninstall gives back the original bytes). What an install created or
//! replaced (an older memtrail entry it updated, say) is remembered in
//! `$XDG_STATE_HOME/memtrail/install-state.json`; without it, uninstall removes memtrail's
//! entries plus the containers that became empty and are absent from the oldest backup. With
//! neither (the user deleted memtrail's state folder), it removes memtrail's entries (told by
//! memtrail's command) and the containers that held nothing else: the ones this uninstall
//! emptied (an event array, the `hooks` object, a file, the `skills/` folder above memtrail's
//! skill), never one that was empty already; a container of the user's that was empty before
//! install and then held only memtrail's entry cannot be told apart and goes too. A file
//! that does not parse is never touched: the error gives its path, line and column. Neither is a
//! file where an object memtrail reads (the top level, and everything under the keys memtrail
//! edits) holds a key twice: JSON.parse keeps the last one, so an edit of the first would go
//! where the agent never looks.
//!
//! Agent dialects live in the adapters (`memtrail_adapters::<agent>::registration`); this
//! crate's engine is generic. What each agent gets:
//!
//! | agent | files |
//! |---|---|
//! | Claude Code | `settings.json` hooks, `.claude.json` `mcpServers`, skill |
//! | Codex CLI | `config.toml` (`notify`, chained with a user's own; `[mcp_servers.memtrail]`), `hooks.json` (SessionStart, PreCompact, Stop; status reports Codex's trust), `$CODEX_HOME/skills` skill (not `~/.agents/skills`, where Gemini CLI would take it over its own) |
//! | Gemini CLI | `settings.json` (`hooks` with ms timeouts, `mcpServers`), skill |
//! | Cursor | `hooks.json` (`version: 1`, flat entries), `mcp.json`, skill |
//! | VS Code | memtrail's hook file `~/.config/memtrail/vscode-hooks.json`, its entry in `chat.hookFilesLocations` and `servers.memtrail` in each user folder (stable, Insiders) |
//! | OpenCode | the plugin `plugins/memtrail.ts` (shape per the installed version, read from its npm `package.json`), `mcp.memtrail` in `opencode.jsonc` / `opencode.json` |
//!
//! JSON and JSONC files are edited by [`jsonedit`], TOML files by toml_edit plus byte splices
//! (the `tomledit` module: CRLF, comments and a user's exact `notify` line survive). Files
//! memtrail owns whole (skills, the OpenCode plugin) are recognised by their content: a file of
//! the same name that is not memtrail's is never overwritten nor removed
//! ([`InstallError::Foreign`]); so is an MCP server entry named `memtrail` that runs another
//! program ([`InstallError::ForeignEntry`]: install refuses, uninstall keeps it). Uninstall
//! also keeps memtrail's MCP entry when it holds a key memtrail did not write (`keep …`), and
//! restores an entry install replaced when the entry's value is as install left it, whatever
//! its formatting.
//!
//! Every entry point has an `_in` variant taking an explicit [`Env`] (home directory and
//! environment variables), so that nothing depends on the process environment in tests.

#![warn(missing_docs)]

mod action;
mod agents;
mod apply;
mod backup;
mod doctor;
mod edit;
mod engine;
mod error;
mod fsutil;
pub mod jsonedit;
mod lock;
mod origin;
mod plan;
mod report;
mod spec;
mod state;
mod status;
mod tomledit;
mod yamledit;

pub use action::Action;
pub use apply::{Applied, AppliedFile, MAX_BACKOFF, Outcome, RETRY_BUDGET};
pub use backup::BackupSummary;
pub use doctor::{DoctorNotice, DoctorProblem, DoctorReport, doctor_in};
pub use error::InstallError;
pub use lock::{InstallLock, LOCK_NOTICE_AFTER, LOCK_TIMEOUT, lock_in, lock_path};
pub use memtrail_adapters::Agent;
pub use memtrail_adapters::Env;
pub use plan::{FileChange, Plan};
pub use report::{AgentResult, TrustNotice};
pub use status::{AgentStatus, ItemState, ItemStatus, UnreadableKind};

use std::path::Path;

/// Compute what `action` would change for `agent`, registering the memtrail binary at `binary`
/// (absolute, UTF-8), in the process environment. Writes nothing.
///
/// For Claude Code the plan covers `<config>/settings.json` (`hooks`,
/// `docs/agents/claude.md#what-memtrail-registers`), the global state `~/.claude.json` or
/// `$CLAUDE_CONFIG_DIR/.claude.json` (`mcpServers`,
/// `docs/agents/claude.md#what-memtrail-registers`) and `<config>/skills/memtrail/SKILL.md`
/// (`docs/agents/claude.md#what-memtrail-registers`); for the other agents see the table above.
///
/// A file that needs a change but has no write permission is in the plan with
/// [`FileChange::read_only`] set (and a note in [`Plan::diff`], [`Plan::describe`] and
/// [`Plan::notes`]); [`apply`] refuses it.
///
/// Errors: [`InstallError::BadBinary`], [`InstallError::Parse`] (path, line, column; also for a
/// duplicate key where memtrail reads), [`InstallError::NotAnObject`],
/// [`InstallError::Conflict`] (e.g. `"hooks": 3`, `notify = "x"`), [`InstallError::Foreign`],
/// [`InstallError::NotStrictJson`] (install into a file its agent reads as strict JSON, holding
/// a comment or a trailing comma) and [`InstallError::Io`].
pub fn plan(agent: Agent, action: Action, binary: &Path) -> Result<Plan, InstallError> {
    plan_in(&Env::from_process(), agent, action, binary)
}

/// [`plan`] in an explicit environment.
pub fn plan_in(
    env: &Env,
    agent: Agent,
    action: Action,
    binary: &Path,
) -> Result<Plan, InstallError> {
    plan::plan_in(env, agent, action, binary)
}

/// Write a plan (in the environment it was computed in). Files are handled one after the other;
/// each is backed up before its first change, written atomically and owner-only, re-read
/// just before the rename and recomputed (for up to [`RETRY_BUDGET`]) if another program
/// changed it. The install state is updated after each file.
///
/// Errors: as [`plan`] (a file that changed into something unparsable is left untouched), plus
/// [`InstallError::ReadOnly`] when a file to change is read-only (checked for every file before
/// anything is written, and again just before each write) and [`InstallError::Contended`] when
/// a file kept changing, [`InstallError::Locked`] when another install or uninstall held the
/// install lock ([`lock_in`], taken here unless this thread holds it already) for
/// [`LOCK_TIMEOUT`]. All or nothing: after an error, the files already changed are put
/// back to their exact bytes and mode and the install state as it was (a file another program
/// rewrote meanwhile stays, and the error is [`InstallError::Incomplete`]).
pub fn apply(plan: &Plan) -> Result<Applied, InstallError> {
    apply::apply(plan)
}

/// The registration status of `agent` for the binary at `binary`, in the process environment.
/// A file that cannot be read or parsed, or that its agent would ignore (a Claude Code
/// `settings.json` with a comment: [`InstallError::NotStrictJson`]), marks its items
/// [`ItemState::Unreadable`] rather than failing; the only error is [`InstallError::BadBinary`].
pub fn status(agent: Agent, binary: &Path) -> Result<AgentStatus, InstallError> {
    status_in(&Env::from_process(), agent, binary)
}

/// [`status`] in an explicit environment.
pub fn status_in(env: &Env, agent: Agent, binary: &Path) -> Result<AgentStatus, InstallError> {
    status::status_in(env, agent, binary)
}

/// Every supported agent whose registration status can be read (see [`status`]), in the
/// registry's order, with whether it was detected on this machine: the agents `install` offers,
/// and (those detected) the ones it installs into by default. In the process environment.
pub fn found_agents(binary: &Path) -> Vec<(Agent, bool)> {
    memtrail_adapters::supported_agents()
        .iter()
        .filter_map(|&ag| match status(ag, binary) {
            Ok(st) => Some((ag, st.detected)),
            Err(_) => None,
        })
        .collect()
}

/// The supported agents memtrail is registered with (at least one item of theirs is not
/// [`ItemState::Missing`], as [`status`] reports it), in the registry's order: the ones
/// `uninstall` removes memtrail from by default. In the process environment.
pub fn registered_agents(binary: &Path) -> Vec<Agent> {
    memtrail_adapters::supported_agents()
        .iter()
        .copied()
        .filter(|&ag| {
            status(ag, binary).is_ok_and(|st| {
                st.items
                    .iter()
                    .any(|i| !matches!(i.state, ItemState::Missing))
            })
        })
        .collect()
}

/// The config backups' count, size and age, in the process environment (see [`backups_in`]).
pub fn backups() -> BackupSummary {
    backups_in(&Env::from_process())
}

/// The config backups under `env`'s state folder: how many folders and copies, their size,
/// and when the oldest and newest were made. Reads only each folder's `index.json` and the
/// copies' sizes. Never fails: an unreadable folder counts as no backups.
pub fn backups_in(env: &Env) -> BackupSummary {
    backup::summary(env)
}

/// `memtrail doctor`'s checks in the process environment (see [`doctor_in`]).
pub fn doctor(
    binary: &Path,
    scratch: &Path,
    recorded: &dyn Fn(Agent, &Path) -> bool,
) -> DoctorReport {
    doctor_in(&Env::from_process(), binary, scratch, recorded)
}

/// memtrail's state folder (`$XDG_STATE_HOME/memtrail`, default `~/.local/state/memtrail`):
/// config backups, the install state, the hook log.
pub fn state_dir_in(env: &Env) -> std::path::PathBuf {
    env.state_dir()
}

/// Whether memtrail's state folder ([`state_dir_in`]) holds anything but the install lock
/// (which a running install or uninstall holds, and deletes when done): what
/// [`purge_state_in`] would delete. Anything other than a folder there counts.
pub fn has_state_in(env: &Env) -> bool {
    let dir = env.state_dir();
    match std::fs::symlink_metadata(&dir) {
        Err(_) => false,
        Ok(m) if !m.is_dir() => true,
        Ok(_) => std::fs::read_dir(&dir).is_ok_and(|mut rd| {
            rd.any(|e| e.is_ok_and(|e| Some(e.path()) != Some(lock::lock_path(env))))
        }),
    }
}

/// Delete memtrail's state folder ([`state_dir_in`]) and everything in it: the config backups
/// (copies of the agents' configs, API keys and MCP tokens included), the install state and the
/// logs. For `memtrail uninstall --purge`, after the uninstall put the original bytes back:
/// once it is gone, an uninstall can no longer restore an entry memtrail replaced. A symlink
/// in the folder is removed, never followed. Returns whether there was anything to delete.
///
/// Errors: [`InstallError::Io`] naming what could not be deleted.
pub fn purge_state_in(env: &Env) -> Result<bool, InstallError> {
    let dir = env.state_dir();
    match std::fs::symlink_metadata(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(InstallError::io(&dir, e)),
        Ok(m) if !m.is_dir() => {
            std::fs::remove_file(&dir).map_err(|e| InstallError::io(&dir, e))?;
            return Ok(true);
        }
        Ok(_) => {}
    }
    std::fs::remove_dir_all(&dir).map_err(|e| InstallError::io(&dir, e))?;
    Ok(true)
}

#[cfg(test)]
mod module_graph {
    //! The modules' dependencies (their `crate::…` paths, tests and comments left out) form no
    //! cycle: the install state does not read backups, the backends share `edit`, not each other.
    use std::collections::{BTreeMap, BTreeSet};

    /// Module → the modules its code names through `crate::`.
    fn edges() -> BTreeMap<String, BTreeSet<String>> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut names = BTreeSet::new();
        let mut texts = Vec::new();
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            if p.extension().is_some_and(|x| x == "rs") && name != "lib" {
                let text = std::fs::read_to_string(&p).unwrap();
                let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
                let code: String = code
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("//"))
                    .collect::<Vec<_>>()
                    .join("\n");
                names.insert(name.clone());
                texts.push((name, code));
            }
        }
        let mut graph = BTreeMap::new();
        for (name, code) in texts {
            let mut deps = BTreeSet::new();
            for part in code.split("crate::").skip(1) {
                let heads: Vec<&str> = match part.strip_prefix('{') {
                    Some(group) => group.split('}').next().unwrap_or("").split(',').collect(),
                    None => vec![part],
                };
                for h in heads {
                    let m: String = h
                        .trim()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if names.contains(&m) && m != name {
                        deps.insert(m);
                    }
                }
            }
            graph.insert(name, deps);
        }
        graph
    }

    fn reach(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(m) = todo.pop() {
            for d in graph.get(&m).into_iter().flatten() {
                if seen.insert(d.clone()) {
                    todo.push(d.clone());
                }
            }
        }
        seen
    }

    #[test]
    fn no_module_is_on_a_cycle() {
        let graph = edges();
        assert!(graph.len() >= 15, "{graph:?}");
        let on_cycle: Vec<&String> = graph
            .keys()
            .filter(|m| reach(&graph, m).contains(*m))
            .collect();
        assert_eq!(on_cycle, Vec::<&String>::new(), "{graph:#?}");
        let state: Vec<String> = reach(&graph, "state").into_iter().collect();
        assert_eq!(
            state,
            ["error", "fsutil"],
            "the install state reads no backup"
        );
        assert_eq!(
            reach(&graph, "jsonedit"),
            BTreeSet::new(),
            "the JSON backend stands alone"
        );
        assert!(!reach(&graph, "tomledit").contains("engine"), "{graph:#?}");
    }
}
