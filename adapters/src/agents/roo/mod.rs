//! Roo Code (VS Code extension `rooveterinaryinc.roo-cline`, a fork of Cline): paths, task
//! identity and discovery. Its tasks have Cline's layout and are read by Cline's reader
//! ([`crate::cline::TaskReader`] with [`Flavor::Roo`]); Roo Code runs no hooks, so memtrail
//! imports its tasks (`memtrail import`) and registers only its MCP server and skill.
//!
//! Sources: `docs/agents/roo.md`, checked against Roo Code 3.52.1 (github.com/RooCodeInc/Roo-Code:
//! `src/core/task-persistence/apiMessages.ts` `ApiMessage`, `taskMessages.ts`,
//! `src/shared/globalFileNames.ts`, `src/utils/storage.ts`, `packages/types/src/history.ts`,
//! `src/core/environment/getEnvironmentDetails.ts`, `src/utils/mcp-name.ts`,
//! `src/services/roo-config/index.ts`).
//!
//! # The task folder
//!
//! `<globalStorage>/rooveterinaryinc.roo-cline/tasks/<task id>/` holds
//! `api_conversation_history.json` (read: Cline's format plus Roo Code's fields `ts`,
//! `isSummary`, `condenseId`/`condenseParent`, `truncationId`/`truncationParent`, reasoning items
//! `{type: "reasoning"}`), `ui_messages.json`, `task_metadata.json` and `history_item.json` (the
//! task's `HistoryItem`: `workspace`, `parentTaskId`, `rootTaskId`, read for the project and the
//! parent task).

use crate::Source;
use crate::cline::{self, Flavor, TaskReader};
use crate::model::{Agent, HookEvent, SessionRef};
use std::path::{Path, PathBuf};

pub mod adapter;
pub mod paths;
pub mod registration;

/// Where Roo Code lives in the process environment ([`paths::Locations::resolve`]).
fn locations() -> paths::Locations {
    paths::Locations::resolve(&crate::Env::from_process())
}

/// The task's `HistoryItem`, beside its transcript (`GlobalFileNames.historyItem`).
pub const HISTORY_ITEM_FILE: &str = "history_item.json";

/// A field of the task's `history_item.json` next to `path`.
fn history_item(path: &Path, key: &str) -> Option<String> {
    cline::json_field(&path.parent()?.join(HISTORY_ITEM_FILE), key)
}

/// [`Source::Doc`] with a Roo Code [`TaskReader`] (project: `history_item.json` `workspace`)
/// for a task's `api_conversation_history.json`.
pub fn source_for(path: &Path) -> Option<Source> {
    cline::task_of(path)?;
    let project = history_item(path, "workspace");
    Some(Source::Doc(Box::new(TaskReader::with_project(
        Flavor::Roo,
        project,
    ))))
}

/// Which task a Roo Code transcript is: the task folder's name; its parent the
/// `parentTaskId` of `history_item.json` (a sub-task started by `new_task`).
///
/// Errors: `InvalidInput` when `path` is not `…/tasks/<id>/api_conversation_history.json`.
pub fn identify(path: &Path) -> std::io::Result<SessionRef> {
    let parent = cline::task_of(path).and_then(|_| history_item(path, "parentTaskId"));
    cline::identify_task(Agent::Roo, path, parent)
}

/// Every Roo Code task of every editor's extension folder, sorted by path in each.
///
/// Errors: none (folders that cannot be listed are in `unreadable`).
pub fn discover() -> std::io::Result<crate::Discovery> {
    Ok(cline::discover_in(&locations().task_roots()))
}

/// Roo Code runs no hooks: this reads a Cline-shaped payload, for `memtrail doctor` and a hook a
/// user wires by hand (see [`cline::parse_payload`]).
///
/// Errors: as [`cline::parse_hook_payload`].
pub fn parse_hook_payload(bytes: &[u8], env: &crate::Env) -> Result<HookEvent, crate::Error> {
    cline::parse_payload(Agent::Roo, bytes, env)
}

/// The task's transcript in the first editor's extension folder that holds it.
pub fn transcripts_for_event(ev: &HookEvent) -> Vec<PathBuf> {
    cline::transcripts_for_event_in(ev, &locations().task_roots())
}

/// Cline's reply shape (`{"cancel": false, "contextModification": …}`); Roo Code runs no hook
/// that would print it.
pub fn session_start_reply(context: &str) -> Option<String> {
    cline::session_start_reply(context)
}
