//! `memtrail hook AGENT`: an agent's hook, with its payload on stdin or in the arguments.

use memtrail_adapters::Agent;
use memtrail_runtime::StoreLocation;
use std::io::Write;
use std::process::ExitCode;

/// Run the hook; always exits 0 (a hook never fails its agent).
pub fn hook(agent: Agent, args: &[String], db: &StoreLocation) -> ExitCode {
    // A panic is caught by the hook and logged; its default report on stderr would reach
    // the agent, so it goes to the hook log instead.
    std::panic::set_hook(Box::new(|info| {
        memtrail_runtime::hook::log_raw("-", None, None, &format!("panic: {info}"));
    }));
    // Fail open: always exit 0; print only what the agent's protocol allows.
    // A payload in the arguments (Codex `notify`) means stdin is not the payload.
    let payload = if args.is_empty() {
        match memtrail_runtime::hook::read_stdin_within(memtrail_runtime::hook::stdin_wait()) {
            Some(p) => p,
            None => {
                memtrail_runtime::hook::log_raw(
                    agent.as_str(),
                    None,
                    None,
                    "error: stdin was not closed within the hook's budget; nothing done",
                );
                return ExitCode::SUCCESS;
            }
        }
    } else {
        Vec::new()
    };
    let outcome = memtrail_runtime::hook::run(agent, &mut payload.as_slice(), args, db);
    if let Some(reply) = outcome.stdout {
        let mut o = std::io::stdout().lock();
        let _ = writeln!(o, "{reply}");
        let _ = o.flush();
    }
    // After the reply: `memtrail sync --background`, detached (the hook does not wait for it
    // and never connects anywhere itself).
    if outcome.background_sync
        && let Some(path) = db.sqlite_path()
        && let Err(e) =
            std::env::current_exe().and_then(|exe| memtrail_runtime::autosync::spawn(&exe, path))
    {
        memtrail_runtime::hook::log_raw(
            agent.as_str(),
            outcome.event.as_ref().map(|e| e.event.as_str()),
            None,
            &format!("error: could not start the background sync: {e}"),
        );
    }
    // The agent writes the rest of the session after this hook (Copilot CLI): a detached
    // `memtrail hook-settle` ingests it once it has settled.
    if let Some(path) = db.sqlite_path()
        && !outcome.settle.is_empty()
    {
        let session = outcome.event.as_ref().and_then(|e| e.session_id.as_deref());
        for t in &outcome.settle {
            if let Err(e) = std::env::current_exe()
                .and_then(|exe| memtrail_runtime::settle::spawn(&exe, path, agent, t, session))
            {
                memtrail_runtime::hook::log_raw(
                    agent.as_str(),
                    outcome.event.as_ref().map(|e| e.event.as_str()),
                    session,
                    &format!("error: could not start the wait for the end of the transcript: {e}"),
                );
            }
        }
    }
    // Whole-file sources too large for this hook's time left: a detached `memtrail hook-settle`
    // reads each without a deadline (one at a time per file: a second one waits, a third
    // exits at once).
    if let Some(path) = db.sqlite_path() {
        for (a, t, session) in &outcome.background {
            if let Err(e) = std::env::current_exe().and_then(|exe| {
                memtrail_runtime::settle::spawn(&exe, path, *a, t, session.as_deref())
            }) {
                memtrail_runtime::hook::log_raw(
                    agent.as_str(),
                    outcome.event.as_ref().map(|e| e.event.as_str()),
                    session.as_deref(),
                    &format!(
                        "error: could not start the background read of {}: {e}",
                        t.display()
                    ),
                );
            }
        }
    }
    ExitCode::SUCCESS
}

/// `memtrail hook-settle AGENT TRANSCRIPT [--session S]`: wait for the transcript to settle and
/// ingest it ([`memtrail_runtime::settle::run`]); always exits 0, errors go to the hook log.
pub fn settle(
    agent: Agent,
    transcript: &std::path::Path,
    session: Option<&str>,
    db: &StoreLocation,
) -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        memtrail_runtime::hook::log_raw("-", None, None, &format!("panic: {info}"));
    }));
    if let Err(e) = memtrail_runtime::settle::run(agent, transcript, session, db) {
        memtrail_runtime::hook::log_raw(
            agent.as_str(),
            Some("hook-settle"),
            session,
            &format!("error: {}: {e}", transcript.display()),
        );
    }
    ExitCode::SUCCESS
}
