//! The `memtrail` command line. All work is done by the library crates; this file only parses
//! arguments, calls them and prints.

#[macro_use]
mod output;
mod cli;
mod commands;
mod common;
mod environment;
mod prompt;

use anyhow::Result;
use cli::{
    Cli, Command, ConfigArgs, ConfigCommand, ModelsArgs, ModelsCommand, SessionsArgs,
    SessionsCommand,
};
use memtrail_runtime::StoreLocation;
use output::{error_chain, terminal_safe};
use std::process::ExitCode;

fn main() -> ExitCode {
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if is_hook_invocation(&raw) {
        return hook_main(&raw);
    }
    let cli = match cli::command()
        .try_get_matches_from(&raw)
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    // `is_hook_invocation` sends a hook's command line to `hook_main`; one it did not
    // recognise is still run as a hook.
    let command = match cli.command {
        Command::Hook(a) => return run_hook(&cli.globals, cli::HookCommand::Hook(a)),
        Command::HookSettle(a) => return run_hook(&cli.globals, cli::HookCommand::HookSettle(a)),
        command => command,
    };
    let db = store_location(&cli.globals);
    let cli::Globals { store, color, .. } = cli.globals;
    output::set_color(color);
    // `memtrail sync` carries the local store to PostgreSQL: like the hook, it keeps to the
    // local store when only `MEMTRAIL_STORE` names a PostgreSQL database. `memtrail status`
    // reports on this machine: it keeps to the local store whichever way PostgreSQL is named.
    let db = match (&command, db) {
        (Command::Sync { .. }, StoreLocation::Postgres(_)) if store.is_none() => {
            StoreLocation::local_from_env()
        }
        (Command::Status { .. }, StoreLocation::Postgres(_)) => {
            // Said only when asked for on the command line: a shell's MEMTRAIL_STORE (set to
            // query a team's database) is left aside quietly, as `sync` and hooks do.
            if store.is_some() {
                eprintln!(
                    "memtrail: note: `status` reports on this machine (its hooks and its local \
                 store); the PostgreSQL store is not read (`memtrail sync` shows its state)"
                );
            }
            StoreLocation::local_from_env()
        }
        (_, db) => db,
    };
    match run(command, db) {
        Ok(code) => code,
        Err(e) => {
            // Redacted (an error may quote a path or a value with a secret in it) and shown
            // with control characters as `�`.
            eprintln!(
                "memtrail: {}",
                terminal_safe(&memtrail_runtime::redact::redact(&error_chain(&e)))
            );
            ExitCode::FAILURE
        }
    }
}

/// The store named by `--store`, else `--db`, else the environment.
fn store_location(g: &cli::Globals) -> StoreLocation {
    match (&g.store, &g.db) {
        (Some(s), _) => StoreLocation::parse(s),
        (None, db) => StoreLocation::from_flag_or_env(db.clone()),
    }
}

/// `memtrail hook` and `memtrail hook-settle`: parsed with [`cli::HookCli`] (the two commands
/// only, without the agent lists of the help texts: a hook builds nothing it does not use),
/// run, and exit 0 whatever happens.
fn hook_main(raw: &[std::ffi::OsString]) -> ExitCode {
    cli::agent_lists_in_help(false);
    let hook = match <cli::HookCli as clap::Parser>::try_parse_from(raw) {
        Ok(hook) => hook,
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => {
            // `memtrail hook --help` (never an agent's call): the whole command line's help,
            // with its agent list.
            cli::agent_lists_in_help(true);
            match <Cli as clap::Parser>::try_parse_from(raw) {
                Ok(_) => return ExitCode::SUCCESS,
                Err(e) => e.exit(),
            }
        }
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayVersion => e.exit(),
        Err(e) => {
            // A hook never fails its agent: Claude Code treats exit code 2 as "block". A bad
            // hook command line is logged and the hook exits 0 with nothing on stdout.
            memtrail_runtime::hook::log_raw(
                "-",
                None,
                None,
                &format!("error: bad hook command line: {}", e.render()),
            );
            return ExitCode::SUCCESS;
        }
    };
    run_hook(&hook.globals, hook.command)
}

/// Run a hook's command; always exits 0.
fn run_hook(globals: &cli::Globals, command: cli::HookCommand) -> ExitCode {
    // A hook writes the local store. `MEMTRAIL_STORE` naming a PostgreSQL database (a shell set
    // up to query a team server, whose agents inherit it) does not stop the capture: the hook
    // writes the local store, which `memtrail sync` pushes. A PostgreSQL store given on the
    // hook's command line is refused (logged) by the hook.
    let db = match store_location(globals) {
        StoreLocation::Postgres(_) if globals.store.is_none() => StoreLocation::local_from_env(),
        db => db,
    };
    match command {
        cli::HookCommand::Hook(cli::HookArgs { agent, args }) => {
            commands::hook::hook(agent, &args, &db)
        }
        // Like the hook it comes from: the local store, never a failure shown to anyone.
        cli::HookCommand::HookSettle(cli::HookSettleArgs {
            agent,
            transcript,
            session,
        }) => commands::hook::settle(agent, &transcript, session.as_deref(), &db),
    }
}

/// True when the command line's subcommand is `hook` or `hook-settle` (global `--db PATH`,
/// `--store PATH` or `--color WHEN` may come first).
fn is_hook_invocation(raw: &[std::ffi::OsString]) -> bool {
    let mut it = raw.iter().skip(1);
    while let Some(a) = it.next() {
        let a = a.to_string_lossy();
        if a == "--db" || a == "--store" || a == "--color" {
            it.next();
        } else if !a.starts_with('-') {
            return a == "hook" || a == "hook-settle";
        }
    }
    false
}

fn run(cmd: Command, db: StoreLocation) -> Result<ExitCode> {
    use commands::*;
    // The commands that write the store write the local SQLite store only.
    let writes = match &cmd {
        Command::Import { .. } => Some("memtrail import"),
        Command::Embed { .. } => Some("memtrail embed"),
        Command::Repair { .. } => Some("memtrail repair"),
        Command::Purge { .. } => Some("memtrail purge"),
        Command::Redact { .. } => Some("memtrail redact"),
        Command::Sessions(SessionsArgs {
            command: Some(SessionsCommand::Delete { .. }),
        }) => Some("memtrail sessions delete"),
        Command::Sessions(SessionsArgs {
            command: Some(SessionsCommand::Capture { .. }),
        }) => Some("memtrail sessions capture"),
        Command::Uninstall(a) if a.purge => Some("memtrail uninstall --purge"),
        // `memtrail sync` says it itself, naming what to do (`sync_auto::local_path`).
        _ => None,
    };
    if let Some(what) = writes {
        db.require_local(what)?;
    }
    match cmd {
        Command::Install(a) => install::install(a, false, memtrail_installer::Action::Install, &db),
        Command::Uninstall(a) => install::install(
            a.common,
            a.purge,
            memtrail_installer::Action::Uninstall,
            &db,
        ),
        Command::Status { check, json } => status::status(&db, check, json),
        Command::Hook(_) | Command::HookSettle(_) => unreachable!("run by run_hook in main"),
        Command::Import {
            agents,
            since,
            json,
            no_embed,
        } => import::import(&db, agents, since, json, !no_embed),
        Command::Search(a) => search::search(&db, a),
        Command::Sessions(SessionsArgs {
            command:
                Some(SessionsCommand::List {
                    agent,
                    project,
                    machine,
                    limit,
                    json,
                }),
        }) => sessions::list(&db, agent, project, machine, limit, json),
        Command::Sessions(SessionsArgs {
            command:
                Some(SessionsCommand::Show {
                    id,
                    offset,
                    limit,
                    json,
                }),
        }) => sessions::show(&db, &id, offset, limit, json),
        Command::Browse => browse::browse(&db),
        // On a terminal the browser; piped, what `sessions list` prints.
        Command::Sessions(SessionsArgs { command: None }) => {
            use std::io::IsTerminal;
            if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
                browse::browse(&db)
            } else {
                sessions::list(&db, None, None, None, 20, false)
            }
        }
        Command::Resume {
            session,
            budget,
            json,
        } => resume::resume(&db, session, budget as usize, json),
        Command::Handoff { session, to } => handoff::handoff(&db, session.as_deref(), to),
        Command::Doctor { json } => doctor::doctor(json),
        Command::Completions { shell } => completions::completions(shell),
        Command::Man { command } => completions::man(&command),
        Command::Repair { json } => repair::repair(&db, json),
        Command::Sessions(SessionsArgs {
            command: Some(SessionsCommand::Delete { id, yes, json }),
        }) => sessions::delete_session(&db, &id, yes, json),
        Command::Sessions(SessionsArgs {
            command: Some(SessionsCommand::Capture { id, json }),
        }) => sessions::capture(&db, &id, json),
        Command::Purge {
            older_than,
            vacuum,
            dry_run,
            yes,
            force,
            json,
        } => purge::purge_older(&db, &older_than, vacuum, dry_run, yes, force, json),
        Command::Redact { rescan: _, json } => redact::redact_rescan(&db, json),
        Command::Mcp => mcp::mcp(db),
        Command::Web(a) => web::web(db, a),
        Command::Export(a) => export::export(&db, a),
        Command::Config(ConfigArgs { default: true, .. })
        | Command::Config(ConfigArgs {
            command: Some(ConfigCommand::Default),
            ..
        }) => config::default(),
        Command::Config(ConfigArgs { command: None, .. }) => config::show(&db, false),
        Command::Config(ConfigArgs {
            command: Some(c), ..
        }) => match c {
            ConfigCommand::Show { json } => config::show(&db, json),
            ConfigCommand::Get { key } => config::get(&db, &key),
            ConfigCommand::Set { key, value } => config::set(&key, &value),
            ConfigCommand::Unset { key } => config::unset(&key),
            ConfigCommand::Path => config::path(),
            ConfigCommand::Edit => config::edit(),
            ConfigCommand::Env { markdown } => config::env(markdown),
            ConfigCommand::Default => config::default(),
        },
        Command::Models(ModelsArgs { command }) => match command {
            Some(ModelsCommand::Install { from, json }) => models::install(from, json),
            Some(ModelsCommand::List { json }) => models::list(&db, json),
            None => models::list(&db, false),
            Some(ModelsCommand::Remove { vectors, json }) => models::remove(&db, vectors, json),
        },
        Command::Embed { max_seconds, json } => models::embed(&db, max_seconds, json),
        Command::Sync {
            background: true, ..
        } => Ok(sync_auto::background(&db)),
        Command::Sync {
            watch: true,
            push_every,
            pull_every,
            ..
        } => sync_auto::watch(
            &db,
            sync_auto::WatchOptions {
                push_every: std::time::Duration::from_secs_f64(push_every),
                pull_every: std::time::Duration::from_secs_f64(pull_every),
            },
        ),
        Command::Sync {
            init, label, json, ..
        } => sync::sync(&db, init, label, json),
    }
}
