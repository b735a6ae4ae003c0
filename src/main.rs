//! The `memtrail` command line. All work is done by the library crates; this file only parses
//! arguments, calls them and prints.

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use memtrail_adapters::Agent;
use memtrail_runtime::query::{self, HL_END, HL_START, ListFilter, SearchFilter};
use memtrail_runtime::time::{Bound, parse_date};
use memtrail_runtime::{Store, default_db_path, resume};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "memtrail",
    version,
    about = "A memory for AI coding agents: every session of every agent on this machine, in one local searchable store.",
    long_about = "memtrail captures the sessions of your coding agents (Claude Code, Codex CLI, Gemini CLI, Cursor, VS Code Copilot, OpenCode) into one local SQLite store, \
makes them searchable from the command line and by the agents themselves (an MCP server and a skill), \
and gives an agent its working state back after compaction (files changed, open tasks, errors, decisions). \
Secrets are redacted before anything is stored; nothing leaves this machine.\n\n\
Start with `memtrail install` (wires the hooks, MCP server and skill into each agent found), then \
`memtrail import` (brings in the sessions you already have). From then on every session is captured as it happens.",
    after_help = "Examples:\n  memtrail install --agent claude --yes\n  memtrail import\n  memtrail search \"database is locked\" --since 7d\n  memtrail sessions list --limit 5\n  memtrail sessions show 4c2ddfdc\n  memtrail resume                  # the working state of this folder's latest session"
)]
struct Cli {
    /// The store to use [default: $MEMTRAIL_DB, else $XDG_DATA_HOME/memtrail/memtrail.db, i.e. ~/.local/share/memtrail/memtrail.db].
    #[arg(long, global = true, value_name = "PATH")]
    db: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Register memtrail's hooks, MCP server and skill with your agents.
    Install(InstallArgs),
    /// Remove exactly what `install` added.
    Uninstall(UninstallArgs),
    /// Show what is wired, where it points, when each hook last ran, and the store's figures.
    Status {
        /// Run the quick integrity check on a store of any size (by default only on stores up
        /// to 8 MB: it reads the whole file, about 5 ms per MB).
        #[arg(long)]
        check: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Called by an agent's hook with its payload on stdin (not meant to be run by hand).
    Hook {
        /// The agent whose hook this is: claude, codex, gemini, cursor, vscode, opencode.
        agent: Agent,
        /// A payload passed as arguments (Codex `notify` passes its JSON as the last one).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        args: Vec<String>,
    },
    /// Import the sessions already on this machine (safe to re-run: only new content is added).
    Import {
        /// Only this agent (repeatable). Default: every supported agent.
        #[arg(long = "agent", value_name = "AGENT")]
        agents: Vec<Agent>,
        /// Only transcripts modified since DATE (YYYY-MM-DD in UTC, RFC 3339, today, yesterday, or an age like 30d).
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Full-text search (BM25) over every captured message and tool call.
    Search(SearchArgs),
    /// List and read sessions.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Print a session's snapshot: its working state (goal, last request, open tasks, files
    /// touched, unresolved errors, decisions) rebuilt from its events, within a byte budget.
    #[command(
        after_help = "Examples:\n  memtrail resume                 # the latest session of this project\n  memtrail resume 4c2ddfdc --budget 4096\n  memtrail resume --json"
    )]
    Resume {
        /// Session id (or a unique prefix) [default: the latest session whose project is the
        /// current directory or contains it].
        session: Option<String>,
        /// Most bytes of snapshot text (256-65536).
        #[arg(long, value_name = "BYTES", default_value_t = memtrail_runtime::snapshot::DEFAULT_BUDGET as u32,
              value_parser = clap::value_parser!(u32).range(256..=65_536))]
        budget: u32,
        /// Print JSON: {session, snapshot: {text, budget, events}}.
        #[arg(long)]
        json: bool,
    },
    /// Print a Markdown restart document for continuing a session in another agent: context,
    /// decisions, current state, open problems, files changed, and how to search for more with
    /// that agent's own tool names. No model is involved.
    #[command(after_help = "Example:\n  memtrail handoff 4c2ddfdc --to codex > HANDOFF.md")]
    Handoff {
        /// Session id (or a unique prefix).
        session: String,
        /// The agent that takes over: claude, codex, gemini, cursor, vscode, opencode.
        #[arg(long, value_name = "AGENT")]
        to: Agent,
    },
    /// Rebuild the full-text index and the other derived data from the stored messages, then
    /// run SQLite's full integrity check (safe while agents and hooks are running).
    Repair {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run the MCP server on stdin/stdout (agents start this; see `install`).
    Mcp,
    /// Delete every message older than an age or date (with its search entries and events), and
    /// the sessions left empty. Nothing is ever deleted unless you run this.
    Purge {
        /// The age or date (messages before it go): an age like 90d, 12h, 30m, 2w; today,
        /// yesterday; YYYY-MM-DD (in UTC) or RFC 3339.
        #[arg(long, value_name = "AGE")]
        older_than: String,
        /// Also VACUUM the store afterwards (gives the freed space back to the disk).
        #[arg(long)]
        vacuum: bool,
        /// Show what would be deleted; delete nothing.
        #[arg(long)]
        dry_run: bool,
        /// Do not ask (required when stdin is not a terminal).
        #[arg(long, short = 'y')]
        yes: bool,
        /// Allow an age under one hour (`0d`, `30m`, a time less than an hour ago), which deletes
        /// (nearly) everything, the sessions running now included.
        #[arg(long)]
        force: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Re-apply the current redaction rules (secrets, `<private>` spans) to data stored earlier:
    /// messages (text, tool inputs and outputs), session titles, snapshots and reader states.
    Redact {
        /// Rewrite every stored message, session title, snapshot and reader state that the
        /// current rules change.
        #[arg(long, required = true)]
        rescan: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run each installed hook command the way its agent would (the command from its config, a
    /// synthetic payload, a throwaway store) and print one line per problem with the fix.
    Doctor {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
struct InstallArgs {
    /// Only this agent (repeatable): claude, codex, gemini, cursor, vscode, opencode [default: every agent found; uninstall: every agent memtrail is registered with].
    #[arg(long = "agent", value_name = "AGENT")]
    agents: Vec<Agent>,
    /// Do not ask; apply the plan (also the default when stdin is not a terminal).
    #[arg(long, short = 'y')]
    yes: bool,
    /// Print the changes as a unified diff per file and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print the plan or the result as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct UninstallArgs {
    #[command(flatten)]
    common: InstallArgs,
    /// Also delete the store and everything memtrail captured, and memtrail's state: the config
    /// backups (they hold copies of the agents' configs, API keys included), the install state
    /// and the logs; after a confirmation (`--yes` confirms).
    #[arg(long)]
    purge: bool,
}

#[derive(Args)]
struct SearchArgs {
    /// Words to find (stemmed; all must match), "a phrase", prefix*, or words joined by OR.
    #[arg(required = true, num_args = 1..)]
    query: Vec<String>,
    /// Only this agent.
    #[arg(long)]
    agent: Option<Agent>,
    /// Only sessions in this project directory (or below it).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Only this session (id or unique prefix).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Only messages since DATE (YYYY-MM-DD in UTC, RFC 3339, today, yesterday, or an age like 7d).
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// Only messages until DATE (same forms as --since).
    #[arg(long, value_name = "DATE")]
    until: Option<String>,
    /// Only messages of this role: user, assistant, tool, system.
    #[arg(long)]
    role: Option<memtrail_adapters::Role>,
    /// Most hits to show (1-500).
    #[arg(long, short = 'n', default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=500))]
    limit: u32,
    /// Highlight the matched words in colour: auto (on a terminal, unless NO_COLOR is set or
    /// TERM is dumb), always, never. Without colour the text is printed plain.
    #[arg(long, value_name = "WHEN", default_value = "auto")]
    color: ColorChoice,
    /// Print JSON (hits marked `**word**`).
    #[arg(long)]
    json: bool,
}

/// `--color`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ColorChoice {
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to colour stdout: `always`; `auto` when stdout is a terminal, `NO_COLOR` is
    /// unset or empty (<https://no-color.org>) and `TERM` is not `dumb`.
    fn enabled(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::io::stdout().is_terminal()
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
            }
        }
    }
}

/// `s` with every control character (C0, DEL, C1: escape sequences, carriage returns,
/// backspaces) except newline and tab replaced by `�`; borrowed when there is none.
fn terminal_safe(s: &str) -> std::borrow::Cow<'_, str> {
    if s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        std::borrow::Cow::Owned(printable(s, &['\n', '\t']))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// Transcript text made safe to print on a terminal: control characters (escape sequences a
/// transcript may hold, carriage returns, …) become `�`; `keep` (highlight markers) stays.
fn printable(s: &str, keep: &[char]) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() && !keep.contains(&c) {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect()
}

#[derive(Subcommand)]
enum SessionsCommand {
    /// Sessions, most recently active first.
    List {
        /// Only this agent.
        #[arg(long)]
        agent: Option<Agent>,
        /// Only sessions in this project directory (or below it).
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        /// Most sessions to show (1-100000).
        #[arg(long, short = 'n', default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        limit: u32,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// A whole session in order, with tool calls (Markdown, or JSON with --json).
    Show {
        /// Session id (or a unique prefix).
        id: String,
        /// First message to show (0-based index, e.g. a search hit's message index).
        #[arg(long, default_value_t = 0)]
        offset: u32,
        /// Most messages to show [default: all].
        #[arg(long)]
        limit: Option<u32>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete a session (and its sub-agent sessions) from the store: messages, search entries,
    /// tool calls, events. Its transcript is not read again (nor what you add to the session
    /// later), so it does not come back; `sessions capture ID` undoes that.
    Delete {
        /// Session id (or a unique prefix).
        id: String,
        /// Do not ask (required when stdin is not a terminal).
        #[arg(long, short = 'y')]
        yes: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Capture a deleted session again: read its transcripts (and its sub-agents') from the
    /// start, now and at every later hook, if the agent still keeps them.
    Capture {
        /// The deleted session's id (or a unique prefix).
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&raw) {
        Ok(cli) => cli,
        Err(e) => {
            // A hook never fails its agent: Claude Code treats exit code 2 as "block". A bad
            // hook command line is logged and the hook exits 0 with nothing on stdout.
            let asked_for_help = matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            );
            if is_hook_invocation(&raw) && !asked_for_help {
                memtrail_runtime::hook::log_raw(
                    "-",
                    None,
                    None,
                    &format!("error: bad hook command line: {}", e.render()),
                );
                return ExitCode::SUCCESS;
            }
            e.exit();
        }
    };
    let db = cli.db.clone().unwrap_or_else(default_db_path);
    if let Command::Hook { agent, args } = cli.command {
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
        let db = memtrail_runtime::StoreLocation::Sqlite(db);
        let outcome = memtrail_runtime::hook::run(agent, &mut payload.as_slice(), &args, &db);
        if let Some(reply) = outcome.stdout {
            let mut o = std::io::stdout().lock();
            let _ = writeln!(o, "{reply}");
        }
        return ExitCode::SUCCESS;
    }
    match run(cli.command, db) {
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

/// True when the command line's subcommand is `hook` (global `--db PATH` may come first).
fn is_hook_invocation(raw: &[std::ffi::OsString]) -> bool {
    let mut it = raw.iter().skip(1);
    while let Some(a) = it.next() {
        let a = a.to_string_lossy();
        if a == "--db" {
            it.next();
        } else if !a.starts_with('-') {
            return a == "hook";
        }
    }
    false
}

/// An error and its causes on one line, without repeating a cause that the message before it
/// already contains.
fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// Print a line on stdout; a closed pipe (`| head`) ends the program quietly.
macro_rules! out {
    ($($t:tt)*) => { emit(format_args!($($t)*), true, false) };
}

/// [`out!`] for a line that holds memtrail's own escape sequences (search's colours): its
/// transcript text must already have gone through [`printable`].
macro_rules! out_styled {
    ($($t:tt)*) => { emit(format_args!($($t)*), true, true) };
}

/// Print on stdout without a newline (see [`out!`]).
macro_rules! outn {
    ($($t:tt)*) => { emit(format_args!($($t)*), false, false) };
}

/// Write `args` on stdout. Transcript text is hostile: unless `styled` (the caller escaped it
/// and adds its own colours), every control character but newline and tab becomes `�`, so no
/// output of memtrail (a title, a message, a snapshot, a handoff) can drive the terminal.
/// JSON output is unchanged by this (JSON escapes control characters).
fn emit(args: std::fmt::Arguments<'_>, newline: bool, styled: bool) {
    let text = args.to_string();
    let text = if styled {
        std::borrow::Cow::Borrowed(text.as_str())
    } else {
        terminal_safe(&text)
    };
    let mut o = std::io::stdout().lock();
    let r = o
        .write_all(text.as_bytes())
        .and_then(|_| if newline { o.write_all(b"\n") } else { Ok(()) });
    if let Err(e) = r {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("memtrail: cannot write the output: {e}");
        std::process::exit(1);
    }
}

/// The store for a read-only command: `None` when it does not exist yet (reading never creates it).
fn open_store_read(db: &std::path::Path) -> Result<Option<Store>> {
    if !db.exists() {
        return Ok(None);
    }
    open_store(db).map(Some)
}

fn open_store(db: &std::path::Path) -> Result<Store> {
    Store::open(db).with_context(|| format!("cannot open the store at {}", db.display()))
}

fn run(cmd: Command, db: PathBuf) -> Result<ExitCode> {
    match cmd {
        Command::Install(a) => install(a, false, memtrail_installer::Action::Install, &db),
        Command::Uninstall(a) => install(
            a.common,
            a.purge,
            memtrail_installer::Action::Uninstall,
            &db,
        ),
        Command::Status { check, json } => status(&db, check, json),
        Command::Hook { .. } => unreachable!("handled in main"),
        Command::Import {
            agents,
            since,
            json,
        } => import(&db, agents, since, json),
        Command::Search(a) => search(&db, a),
        Command::Sessions(SessionsCommand::List {
            agent,
            project,
            limit,
            json,
        }) => {
            let filtered = agent.is_some() || project.is_some();
            let list = match open_store_read(&db)? {
                Some(store) => query::list_sessions(
                    &store,
                    &ListFilter {
                        agent: agent.map(|a| a.as_str().to_string()),
                        project: project.map(|p| absolute(&p)),
                        limit: limit as usize,
                    },
                )?,
                None => Vec::new(),
            };
            if json {
                out!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({ "sessions": list }))?
                );
            } else if list.is_empty() && filtered {
                out!("No sessions match these filters.");
            } else if list.is_empty() {
                out!("No sessions yet. Run `memtrail import` to bring in existing ones.");
            } else {
                for s in &list {
                    out!(
                        "{}  {:<7} {:>5} msgs  {}  {}",
                        s.updated_at
                            .as_deref()
                            .map(short_time)
                            .unwrap_or("?".into()),
                        s.agent,
                        s.messages,
                        s.session_id,
                        s.title.as_deref().unwrap_or("(untitled)")
                    );
                    if let Some(p) = &s.project {
                        out!("{:>37}{}", "", p);
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Sessions(SessionsCommand::Show {
            id,
            offset,
            limit,
            json,
        }) => {
            let Some(store) = open_store_read(&db)? else {
                bail!(
                    "no session `{id}`: the store at {} is empty (run `memtrail import`)",
                    db.display()
                );
            };
            let view = match query::get_session(
                &store,
                &id,
                None,
                offset as i64,
                limit.map(i64::from).unwrap_or(i64::MAX),
                None,
            ) {
                Err(memtrail_runtime::Error::NotFound(_))
                    if memtrail_runtime::maintenance::is_deleted(&store, &id)? =>
                {
                    bail!(
                        "session `{id}` was deleted; `memtrail sessions capture {id}` brings it back (its transcript is still on disk)"
                    );
                }
                r => r?,
            };
            if json {
                out!("{}", serde_json::to_string_pretty(&view)?);
            } else {
                outn!("{}", query::session_markdown(&view));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Resume {
            session,
            budget,
            json,
        } => resume(&db, session, budget as usize, json),
        Command::Handoff { session, to } => {
            let Some(store) = open_store_read(&db)? else {
                bail!(
                    "no session `{session}`: the store at {} is empty (run `memtrail import`)",
                    db.display()
                );
            };
            let rowid = query::resolve_session(&store, &session, None)?;
            outn!("{}", resume::handoff(&store, rowid, to)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Doctor { json } => doctor(json),
        Command::Repair { json } => repair(&db, json),
        Command::Sessions(SessionsCommand::Delete { id, yes, json }) => {
            delete_session(&db, &id, yes, json)
        }
        Command::Sessions(SessionsCommand::Capture { id, json }) => {
            let mut store = open_store(&db)?;
            let r = memtrail_runtime::maintenance::capture_again(&mut store, &id)?;
            if json {
                out!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({ "captured": r }))?
                );
            } else {
                out!(
                    "captured {} session {} again: {} from {}",
                    r.agent,
                    r.session_id,
                    plural(r.messages, "message", "messages"),
                    plural(r.transcripts, "transcript", "transcripts")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Purge {
            older_than,
            vacuum,
            dry_run,
            yes,
            force,
            json,
        } => purge_older(&db, &older_than, vacuum, dry_run, yes, force, json),
        Command::Redact { rescan: _, json } => redact_rescan(&db, json),
        Command::Mcp => {
            memtrail_runtime::mcp::serve_stdio(memtrail_runtime::StoreLocation::Sqlite(db))
                .map_err(|e| anyhow::anyhow!(e))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn resume(
    db: &std::path::Path,
    session: Option<String>,
    budget: usize,
    json: bool,
) -> Result<ExitCode> {
    let cwd = absolute(&std::env::current_dir().context("cannot read the current directory")?);
    let Some(store) = open_store_read(db)? else {
        bail!(
            "nothing to resume: the store at {} is empty (run `memtrail import`)",
            db.display()
        );
    };
    let rowid = resume::resolve_or_latest(&store, session.as_deref(), &cwd)?;
    let summary = query::session_summary(&store, rowid)?;
    let snap = resume::build_snapshot(&store, rowid, budget)?;
    if json {
        out!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({ "session": summary, "snapshot": snap })
            )?
        );
    } else if snap.text.trim().is_empty() {
        out!(
            "Session {} ({}) has no events to build a snapshot from.",
            summary.session_id,
            summary.agent
        );
    } else {
        outn!("{}", snap.text);
        if !snap.text.ends_with('\n') {
            out!("");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn absolute(p: &std::path::Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

/// `1 transcript file`, `2 transcript files`.
fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `2026-11-29T10:11:12.000Z` → `2026-11-29 10:11`.
fn short_time(t: &str) -> String {
    t.get(..16)
        .map(|s| s.replace('T', " "))
        .unwrap_or_else(|| t.to_string())
}

fn search(db: &std::path::Path, a: SearchArgs) -> Result<ExitCode> {
    let q = a.query.join(" ");
    let filter = SearchFilter {
        agent: a.agent.map(|x| x.as_str().to_string()),
        project: a.project.map(|p| absolute(&p)),
        session: a.session,
        since: a
            .since
            .as_deref()
            .map(|s| parse_date(s, Bound::Start))
            .transpose()?,
        until: a
            .until
            .as_deref()
            .map(|s| parse_date(s, Bound::End))
            .transpose()?,
        role: a.role.map(|r| r.as_str().to_string()),
        limit: a.limit as usize,
    };
    let (mut hits, unindexed) = match open_store_read(db)? {
        Some(store) => {
            let hits = query::search(&store, &q, &filter)?;
            // The search indexes the queue first; when it could not (another process holds
            // the write lock), the newest messages are not searched: say so.
            (hits, store.pending_index().unwrap_or(0))
        }
        None => (Vec::new(), 0),
    };
    if unindexed > 0 {
        eprintln!(
            "note: {unindexed} new message{} not searched: not yet in the search index (the store is busy); search again in a moment",
            if unindexed == 1 { " was" } else { "s were" }
        );
    }
    if a.json {
        for h in &mut hits {
            h.snippet = h.snippet.replace([HL_START, HL_END], "**");
        }
        out!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "query": q, "hits": hits }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if hits.is_empty() {
        out!("No matches for {:?}.", memtrail_adapters::one_line(&q, 80));
        return Ok(ExitCode::SUCCESS);
    }
    // Colour: the title bold, the matched words bold red (as grep). Without colour, plain
    // text: no Markdown markers, so that the output greps as the message reads.
    let color = a.color.enabled();
    let (bold, hit, reset) = if color {
        ("\x1b[1m", "\x1b[1;31m", "\x1b[0m")
    } else {
        ("", "", "")
    };
    for (i, h) in hits.iter().enumerate() {
        out_styled!(
            "{}. {bold}{}{reset}  ({} · {} · {})",
            i + 1,
            printable(h.title.as_deref().unwrap_or("(untitled)"), &[]),
            h.agent,
            printable(h.project.as_deref().unwrap_or("?"), &[]),
            h.timestamp.as_deref().map(short_time).unwrap_or("?".into())
        );
        out!(
            "   session {} · message #{} · {}",
            h.session_id,
            h.message_index,
            h.role
        );
        let snip = printable(&h.snippet.replace('\n', " "), &[HL_START, HL_END])
            .replace(HL_START, hit)
            .replace(HL_END, reset);
        out_styled!("   {}\n", snip.trim());
    }
    Ok(ExitCode::SUCCESS)
}

fn import(
    db: &std::path::Path,
    agents: Vec<Agent>,
    since: Option<String>,
    json: bool,
) -> Result<ExitCode> {
    let agents = if agents.is_empty() {
        memtrail_adapters::supported_agents().to_vec()
    } else {
        for a in &agents {
            if !memtrail_adapters::supported_agents().contains(a) {
                bail!(
                    "importing {} sessions is not supported yet",
                    a.display_name()
                );
            }
        }
        agents
    };
    let since = since
        .as_deref()
        .map(|s| parse_date(s, Bound::Start))
        .transpose()?;
    let mut store = open_store(db)?;
    let tty = std::io::stderr().is_terminal();
    let bar = indicatif::ProgressBar::hidden();
    let mut plain_done = 0u64;
    let mut plain_total = 0u64;
    let summary = memtrail_runtime::import::import(&mut store, &agents, since, &mut |p| match p {
        memtrail_runtime::import::Progress::Found { files, bytes } => {
            plain_total = files;
            if tty && !json {
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                bar.set_length(bytes);
                bar.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{spinner} importing [{bar:30}] {binary_bytes}/{binary_total_bytes} {msg}",
                    )
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                    .progress_chars("=> "),
                );
            } else if !json {
                eprintln!(
                    "found {} ({bytes} bytes)",
                    plural(files, "transcript file", "transcript files")
                );
            }
        }
        memtrail_runtime::import::Progress::File {
            agent,
            path,
            bytes,
            new_messages,
        } => {
            plain_done += 1;
            if tty && !json {
                bar.inc(bytes);
                bar.set_message(format!("{plain_done}/{plain_total} files"));
            } else if !json && new_messages > 0 {
                eprintln!(
                    "[{plain_done}/{plain_total}] {agent} {} +{new_messages} messages",
                    path.display()
                );
            }
        }
    })?;
    bar.finish_and_clear();
    if json {
        out!("{}", serde_json::to_string_pretty(&summary)?);
        return Ok(ExitCode::SUCCESS);
    }
    for a in &summary.agents {
        out!(
            "{}: {} ({} with new content), {}, {}, {} updated, {} skipped ({} unknown, {} malformed)",
            a.agent,
            plural(a.files, "file", "files"),
            a.changed_files,
            plural(a.sessions, "session", "sessions"),
            plural(a.messages, "new message", "new messages"),
            a.updated,
            plural(a.skipped_lines, "line", "lines"),
            a.unknown_lines,
            a.malformed_lines
        );
        for (p, why) in &a.unreadable {
            out!("  could not read {p}: {why}");
        }
    }
    out!("done in {:.2} s", summary.seconds);
    Ok(ExitCode::SUCCESS)
}

/// The memtrail binary that hooks and MCP entries run: the path the user invoked, absolute but
/// with its symlinks kept (Homebrew's `bin/memtrail` → `Cellar/memtrail/0.1.0/bin/memtrail`:
/// the versioned target is gone at the next upgrade, the link stays), when it is this very
/// binary; otherwise (an `argv[0]` that names another file) the binary's real path.
fn binary_path() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find memtrail's own path")?;
    let real = std::fs::canonicalize(&exe).unwrap_or(exe);
    Ok(invoked_path()
        .filter(|p| std::fs::canonicalize(p).is_ok_and(|c| c == real))
        .unwrap_or(real))
}

/// `argv[0]` made absolute without following symlinks: a path with a `/` against the current
/// folder, a bare name looked up on `PATH` as the shell did. `.` components are dropped.
fn invoked_path() -> Option<PathBuf> {
    let arg0 = PathBuf::from(std::env::args_os().next()?);
    let cwd = || std::env::current_dir().ok();
    let found = if arg0.components().count() > 1 || arg0.is_absolute() {
        if arg0.is_absolute() {
            arg0
        } else {
            cwd()?.join(arg0)
        }
    } else {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .filter(|d| !d.as_os_str().is_empty())
            .map(|d| d.join(&arg0))
            .find(|c| c.is_file())
            .and_then(|c| {
                if c.is_absolute() {
                    Some(c)
                } else {
                    cwd().map(|w| w.join(c))
                }
            })?
    };
    Some(
        found
            .components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .collect(),
    )
}

fn install(
    a: InstallArgs,
    purge_too: bool,
    action: memtrail_installer::Action,
    db: &std::path::Path,
) -> Result<ExitCode> {
    // Refuse before anything changes, not after the registrations are gone.
    if purge_too
        && !a.dry_run
        && !a.yes
        && (db.exists()
            || memtrail_installer::state_dir_in(&memtrail_installer::Env::from_process()).exists())
        && !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal())
    {
        bail!(
            "--purge deletes the store {} and memtrail's state (config backups, install state, logs) too; add --yes to confirm (nothing was changed)",
            db.display()
        );
    }
    let binary = binary_path()?;
    let mut agents: Vec<Agent> = Vec::new();
    for ag in &a.agents {
        if !agents.contains(ag) {
            agents.push(*ag);
        }
    }
    if agents.is_empty() {
        for &ag in memtrail_adapters::supported_agents() {
            // Install where the agent is found; uninstall wherever memtrail may be registered.
            let wanted = match action {
                memtrail_installer::Action::Install => {
                    memtrail_installer::status(ag, &binary).is_ok_and(|st| st.detected)
                }
                memtrail_installer::Action::Uninstall => memtrail_installer::status(ag, &binary)
                    .is_ok_and(|st| {
                        st.items
                            .iter()
                            .any(|i| !matches!(i.state, memtrail_installer::ItemState::Missing))
                    }),
            };
            if wanted {
                agents.push(ag);
            }
        }
        // On a terminal, without --yes: let the user pick, detected agents preselected.
        let interactive_pick = matches!(action, memtrail_installer::Action::Install)
            && !a.yes
            && !a.dry_run
            && !a.json
            && std::io::stdin().is_terminal()
            && std::io::stderr().is_terminal();
        if interactive_pick {
            let candidates: Vec<(Agent, bool)> = memtrail_adapters::supported_agents()
                .iter()
                .filter_map(|&ag| match memtrail_installer::status(ag, &binary) {
                    Ok(st) => Some((ag, st.detected)),
                    Err(_) => None,
                })
                .collect();
            let labels: Vec<String> = candidates
                .iter()
                .map(|(ag, found)| {
                    format!(
                        "{}{}",
                        ag.display_name(),
                        if *found { "  (found)" } else { "  (not found)" }
                    )
                })
                .collect();
            let defaults: Vec<bool> = candidates.iter().map(|(_, d)| *d).collect();
            let picked = ask(|| {
                dialoguer::MultiSelect::new()
                    .with_prompt("Install memtrail into (space to toggle, enter to confirm)")
                    .items(&labels)
                    .defaults(&defaults)
                    .interact()
            })?;
            agents = picked.into_iter().map(|i| candidates[i].0).collect();
            if agents.is_empty() {
                eprintln!("nothing selected; nothing changed");
                return Ok(ExitCode::SUCCESS);
            }
        }
        if agents.is_empty() && matches!(action, memtrail_installer::Action::Uninstall) {
            out!("memtrail is not registered with any agent: nothing to uninstall");
            // --purge still deletes the store (hooks removed earlier, the store left behind).
            if purge_too && !a.dry_run {
                return purge(db, a.yes);
            }
            return Ok(ExitCode::SUCCESS);
        }
        if agents.is_empty() {
            bail!(
                "no supported agent found on this machine (looked for: {}); name one with --agent to install anyway",
                memtrail_adapters::supported_agents()
                    .iter()
                    .map(|a| a.display_name())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let verb = match action {
        memtrail_installer::Action::Install => "install",
        memtrail_installer::Action::Uninstall => "uninstall",
    };
    // With agents named on the command line, one that cannot be planned stops everything. Found
    // by detection, it is left out (its files untouched) and the others go ahead; the exit code
    // is then 1.
    let auto = a.agents.is_empty();
    let mut plans = Vec::new();
    let mut left_out: Vec<(Agent, String)> = Vec::new();
    for agent in &agents {
        match memtrail_installer::plan(*agent, action, &binary) {
            // A file the apply would refuse (read-only) is treated like one that does not
            // parse: that agent is left out (or, named, stops everything) before any change.
            Ok(p) if !a.dry_run && !p.notes().is_empty() => {
                let why = p.notes().join("; ");
                if !auto {
                    bail!("{}: {why} (nothing was changed)", agent.display_name());
                }
                eprintln!(
                    "memtrail: {}: {why}; this agent was left out, the others go ahead (run `memtrail {verb}` again once it is fixed)",
                    agent.display_name()
                );
                left_out.push((*agent, why));
            }
            // A dry run shows the change, and says (exit code 1) that the agent would be left out.
            Ok(p) if !p.notes().is_empty() => {
                left_out.push((*agent, p.notes().join("; ")));
                plans.push((*agent, p));
            }
            Ok(p) => plans.push((*agent, p)),
            Err(e) if auto => {
                eprintln!(
                    "memtrail: {}: {e}; this agent was left out, the others go ahead (run `memtrail {verb}` again once it is fixed)",
                    agent.display_name()
                );
                left_out.push((*agent, e.to_string()));
            }
            Err(e) => return Err(e.into()),
        }
    }
    if a.dry_run {
        if a.json {
            // Every agent, with `error` for one that would be left out (and why).
            let why = |ag: &Agent| left_out.iter().find(|(a, _)| a == ag).map(|(_, e)| e);
            let mut v: Vec<_> = left_out
                .iter()
                .filter(|(ag, _)| !plans.iter().any(|(a, _)| a == ag))
                .map(|(ag, e)| serde_json::json!({"agent": ag, "error": e, "changes": []}))
                .collect();
            v.extend(plans.iter().map(|(ag, p)| {
                let mut j =
                    serde_json::json!({"agent": ag, "changes": p.describe(), "diff": p.diff()});
                if let Some(e) = why(ag) {
                    j["error"] = serde_json::json!(e);
                }
                j
            }));
            out!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            for (ag, p) in &plans {
                if p.is_empty() {
                    out!("{}: nothing to {verb}", ag.display_name());
                } else {
                    outn!("{}", p.diff());
                }
            }
        }
        return Ok(if left_out.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    let interactive = !a.yes && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if interactive && plans.iter().any(|(_, p)| !p.is_empty()) {
        for (ag, p) in &plans {
            eprintln!("{}:", ag.display_name());
            for line in p.describe() {
                eprintln!("  {line}");
            }
        }
        let ok = ask(|| {
            dialoguer::Confirm::new()
                .with_prompt(format!("{verb} these changes?"))
                .default(true)
                .interact()
        })?;
        if !ok {
            eprintln!("nothing changed");
            return Ok(ExitCode::FAILURE);
        }
    }
    let mut results: Vec<serde_json::Value> = left_out
        .iter()
        .map(|(ag, e)| serde_json::json!({"agent": ag, "error": e, "changes": []}))
        .collect();
    for (ag, p) in &plans {
        if p.is_empty() {
            if !a.json {
                out!("{}: already {}ed, nothing to do", ag.display_name(), verb);
            }
            results.push(serde_json::json!({"agent": ag, "changes": []}));
            continue;
        }
        // Each agent all or nothing (the installer undoes a failed apply); the others go ahead.
        if let Err(e) = memtrail_installer::apply(p) {
            eprintln!(
                "memtrail: {}: {e}; the other agents go ahead",
                ag.display_name()
            );
            left_out.push((*ag, e.to_string()));
            results.push(serde_json::json!({"agent": ag, "error": e.to_string(), "changes": []}));
            continue;
        }
        if !a.json && interactive {
            // The changes were listed before the confirmation.
            out!(
                "{}: done ({} changes)",
                ag.display_name(),
                p.describe().len()
            );
        } else if !a.json {
            out!("{}:", ag.display_name());
            for line in p.describe() {
                out!("  {line}");
            }
        }
        results.push(serde_json::json!({"agent": ag, "changes": p.describe()}));
    }
    if a.json {
        out!("{}", serde_json::to_string_pretty(&results)?);
    } else if matches!(action, memtrail_installer::Action::Install)
        && plans.iter().any(|(_, p)| !p.is_empty())
    {
        out!("\nNext: `memtrail import` brings in the sessions you already have.");
    }
    if matches!(action, memtrail_installer::Action::Uninstall) && purge_too && !a.dry_run {
        return purge(db, a.yes);
    }
    if !left_out.is_empty() {
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// `uninstall --purge`, after the uninstall gave the configs their original bytes back: delete
/// the store (and its WAL files), then memtrail's state folder (config backups, which hold
/// copies of the agents' configs with their API keys and tokens; the install state; the logs),
/// after one confirmation. The state goes only once memtrail is registered with no agent: one
/// left out (its config did not parse, say) still needs its backups and install state to be
/// uninstalled; the exit code is then 1.
fn purge(db: &std::path::Path, yes: bool) -> Result<ExitCode> {
    let env = memtrail_installer::Env::from_process();
    let state = memtrail_installer::state_dir_in(&env);
    let binary = binary_path()?;
    let still: Vec<Agent> = memtrail_adapters::supported_agents()
        .iter()
        .copied()
        .filter(|&ag| {
            memtrail_installer::status(ag, &binary).is_ok_and(|st| {
                st.items
                    .iter()
                    .any(|i| !matches!(i.state, memtrail_installer::ItemState::Missing))
            })
        })
        .collect();
    let purge_state = still.is_empty() && std::fs::symlink_metadata(&state).is_ok();
    let backups = memtrail_installer::backups_in(&env);
    let store_what = db
        .exists()
        .then(|| match Store::open(db).and_then(|s| s.stats()) {
            Ok(st) => format!(
                "{}, {}",
                plural(st.sessions as u64, "session", "sessions"),
                plural(st.messages as u64, "message", "messages")
            ),
            Err(_) => "its content".to_string(),
        });
    let state_what = format!(
        "memtrail's state {} ({}, the install state, the logs)",
        state.display(),
        plural(backups.folders as u64, "config backup", "config backups")
    );
    let mut parts = Vec::new();
    if let Some(w) = &store_what {
        parts.push(format!("the store {} ({w})", db.display()));
    }
    if purge_state {
        parts.push(state_what.clone());
    }
    if !parts.is_empty() {
        let what = parts.join(" and ");
        if !yes {
            let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
            if !interactive {
                bail!("--purge deletes {what}; add --yes to confirm");
            }
            let ok = ask(|| {
                dialoguer::Confirm::new()
                    .with_prompt(format!("Delete {what}?"))
                    .default(false)
                    .interact()
            })?;
            if !ok {
                eprintln!("nothing was deleted");
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    match &store_what {
        Some(w) => {
            for suffix in ["", "-wal", "-shm"] {
                let mut p = db.as_os_str().to_owned();
                p.push(suffix);
                match std::fs::remove_file(&p) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => {
                        return Err(e).with_context(|| format!("cannot delete {}", db.display()));
                    }
                }
            }
            out!("deleted the store {} ({w})", db.display());
            // memtrail's own data folder goes too once it is empty (a folder of the user's,
            // given with --db or MEMTRAIL_DB, stays; remove_dir fails on a non-empty one).
            let own = memtrail_adapters::paths::xdg_data_home().join("memtrail");
            if db.parent() == Some(own.as_path()) {
                let _ = std::fs::remove_dir(&own);
            }
        }
        None => out!("no store at {}: nothing to delete there", db.display()),
    }
    if purge_state {
        memtrail_installer::purge_state_in(&env)?;
        out!("deleted {state_what}");
    } else if !still.is_empty() {
        out!(
            "kept memtrail's state {}: memtrail is still registered with {} (uninstalling it there needs its backups and install state); once that is fixed, run `memtrail uninstall --purge` again",
            state.display(),
            still
                .iter()
                .map(|a| a.display_name())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// `memtrail doctor`: registration problems from `status`, then each hook command (as its config
/// file holds it) run the way its agent runs it (`sh -c`, a SessionStart payload on stdin, a
/// throwaway store and state folder), with its exit code, stdout protocol and time checked.
fn doctor(json: bool) -> Result<ExitCode> {
    let binary = binary_path()?;
    // A private scratch folder: a random name made with mkdir (which fails on anything already
    // there, a planted symlink included), mode 0700, removed on return.
    let mut builder = tempfile::Builder::new();
    builder.prefix("memtrail-doctor-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o700));
    }
    let scratch_dir = builder
        .tempdir()
        .context("cannot make doctor's scratch folder")?;
    let scratch = scratch_dir.path().to_path_buf();
    let mut problems: Vec<serde_json::Value> = Vec::new();
    // Pending trust (Codex skips hooks it does not trust yet) is a notice, as in `status`:
    // notify captures meanwhile, so it does not fail doctor.
    let mut notices: Vec<serde_json::Value> = Vec::new();
    let mut checked = 0usize;
    let mut problem = |agent: Agent, what: String, fix: String| {
        problems.push(serde_json::json!({"agent": agent, "problem": what, "fix": fix}));
    };
    for &agent in memtrail_adapters::supported_agents() {
        let st = match memtrail_installer::status(agent, &binary) {
            Ok(st) => st,
            Err(memtrail_installer::InstallError::Unsupported(_)) => continue,
            Err(e) => {
                problem(agent, e.to_string(), "fix the file named above".into());
                continue;
            }
        };
        let registered: Vec<_> = st
            .items
            .iter()
            .filter(|i| !matches!(i.state, memtrail_installer::ItemState::Missing))
            .collect();
        if registered.is_empty() {
            continue;
        }
        let mut unreadable: Vec<&std::path::Path> = Vec::new();
        for item in &st.items {
            use memtrail_installer::ItemState as S;
            let fix = format!("memtrail install --agent {agent}");
            if matches!(item.state, S::Unreadable { .. }) {
                // One line per file, not one per item it holds.
                if unreadable.contains(&item.file.as_path()) {
                    continue;
                }
                unreadable.push(&item.file);
            }
            match &item.state {
                S::Present => {}
                S::Missing => problem(
                    agent,
                    format!("{} is missing from {}", item.item, item.file.display()),
                    fix,
                ),
                S::Stale { points_at } => problem(
                    agent,
                    format!(
                        "{} points at {} instead of {}",
                        item.item,
                        points_at.as_deref().unwrap_or("another program"),
                        binary.display()
                    ),
                    fix,
                ),
                S::Duplicate { count } => problem(
                    agent,
                    format!("{} is registered {count} times", item.item),
                    fix,
                ),
                S::Untrusted { reason } => notices.push(serde_json::json!({
                    "agent": agent,
                    "notice": format!("{} will not run: {reason}", item.item),
                })),
                // Valid JSONC that the agent ignores whole (Claude Code's settings.json).
                S::Unreadable { error } if error.starts_with("not strict JSON") => problem(
                    agent,
                    format!("{}: {error}", item.file.display()),
                    format!(
                        "rewrite {} as strict JSON (no comments, no trailing commas), then `memtrail install --agent {agent}`",
                        item.file.display()
                    ),
                ),
                S::Unreadable { error } => problem(
                    agent,
                    format!(
                        "{} cannot be read ({error}); memtrail's entries in it cannot be checked",
                        item.file.display()
                    ),
                    format!(
                        "repair {} by hand (memtrail never edits a file it cannot read or parse)",
                        item.file.display()
                    ),
                ),
            }
        }
        // Run each distinct hook command once, exactly as the config file holds it and as the
        // agent runs it (`sh -c <command>`, the payload on stdin).
        let mut commands: Vec<(String, Option<String>)> = st
            .items
            .iter()
            .filter(|i| i.item.starts_with("hook"))
            .filter_map(|i| {
                i.command
                    .clone()
                    .or_else(|| i.binary.as_ref().map(|b| format!("{b} hook {agent}")))
                    .map(|c| (c, i.binary.clone()))
            })
            .collect();
        commands.sort();
        commands.dedup();
        for (command, prog) in commands {
            checked += 1;
            if let Some(prog) = &prog
                && !std::path::Path::new(prog).is_file()
            {
                problem(
                    agent,
                    format!("the hook program {prog} does not exist: every {agent} hook fails"),
                    format!(
                        "memtrail install --agent {agent} (points the hooks at {})",
                        binary.display()
                    ),
                );
                continue;
            }
            let store = scratch.join(format!("{agent}.db"));
            let t0 = std::time::Instant::now();
            let out = std::process::Command::new("sh")
                .args(["-c", &command])
                .env("MEMTRAIL_DB", &store)
                .env("XDG_STATE_HOME", scratch.join("state"))
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .and_then(|mut child| {
                    if let Some(mut stdin) = child.stdin.take() {
                        let _ = stdin.write_all(
                            memtrail_adapters::synthetic_session_start(agent, &scratch).as_bytes(),
                        );
                    }
                    child.wait_with_output()
                });
            let ms = t0.elapsed().as_secs_f64() * 1000.0;
            match out {
                Err(e) => problem(
                    agent,
                    format!("the hook `{command}` cannot run: {e}"),
                    format!("memtrail install --agent {agent}"),
                ),
                Ok(o) => {
                    if !o.status.success() {
                        problem(
                            agent,
                            format!(
                                "the hook exited with {} (agents may treat this as a failure or a block)",
                                o.status
                            ),
                            "reinstall memtrail; see the hook log".into(),
                        );
                    }
                    let stdout = String::from_utf8_lossy(&o.stdout);
                    if !stdout.trim().is_empty()
                        && serde_json::from_str::<serde_json::Value>(stdout.trim()).is_err()
                    {
                        problem(
                            agent,
                            format!(
                                "the hook printed non-JSON on stdout: {}",
                                memtrail_adapters::one_line(&stdout, 80)
                            ),
                            "reinstall memtrail".into(),
                        );
                    }
                    if ms > 1000.0 {
                        problem(
                            agent,
                            format!("the hook took {ms:.0} ms"),
                            "check the store's disk and the hook log".into(),
                        );
                    }
                    let ran = Store::open(&store)
                        .and_then(|s| s.hook_runs(agent))
                        .map(|r| !r.is_empty())
                        .unwrap_or(false);
                    if !ran {
                        let log = std::fs::read_to_string(scratch.join("state/memtrail/hook.log"))
                            .unwrap_or_default();
                        problem(
                            agent,
                            format!(
                                "the hook ran but recorded nothing: {}",
                                memtrail_adapters::one_line(
                                    log.lines().last().unwrap_or("no log line"),
                                    160
                                )
                            ),
                            "see the hook log".into(),
                        );
                    }
                }
            }
        }
    }
    drop(scratch_dir);
    if json {
        out!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"hook_programs_checked": checked, "problems": problems, "notices": notices})
            )?
        );
    } else {
        for n in &notices {
            out!(
                "{}: notice (not a failure): {}",
                n["agent"].as_str().unwrap_or("?"),
                n["notice"].as_str().unwrap_or("")
            );
        }
        if problems.is_empty() {
            out!("no problems found ({checked} hook program(s) run)");
        }
        for p in &problems {
            out!(
                "{}: {} — fix: {}",
                p["agent"].as_str().unwrap_or("?"),
                p["problem"].as_str().unwrap_or(""),
                p["fix"].as_str().unwrap_or("")
            );
        }
    }
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `memtrail repair`: rebuild the derived data ([`Store::repair`]). When the file itself is
/// damaged (the repair meets a corrupt page, or the integrity check still fails after it), what
/// can be read is salvaged into a new store, the damaged file is kept aside (its path printed),
/// the transcripts still on disk are imported again, and the repair runs on the new store:
/// never a store with nothing in it while something could be read.
fn repair(db: &std::path::Path, json: bool) -> Result<ExitCode> {
    use memtrail_runtime::store::is_corrupt;
    if !db.exists() {
        bail!("there is no store at {} (nothing to repair)", db.display());
    }
    let first = Store::open(db).and_then(|mut s| s.repair());
    let damage = match &first {
        Ok(report) if report.ok() => None,
        Ok(report) => Some(report.integrity.join("; ")),
        Err(e) if is_corrupt(e) => Some(e.to_string()),
        Err(_) => None,
    };
    let Some(damage) = damage else {
        let report = first.context("repair stopped")?;
        print_repair(&report, json)?;
        return Ok(if report.ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    };
    if !json {
        out!(
            "the store's file is damaged ({}): salvaging what can be read into a new store",
            memtrail_adapters::one_line(&damage, 160)
        );
    }
    let salvaged = memtrail_runtime::salvage::salvage(db).context("salvage stopped")?;
    if !json {
        for t in &salvaged.tables {
            out!(
                "  {}: {} rows kept{}{}",
                t.table,
                t.rows,
                if t.dropped > 0 {
                    format!(", {} dropped (they referred to lost rows)", t.dropped)
                } else {
                    String::new()
                },
                if t.damaged { ", some unreadable" } else { "" }
            );
        }
        out!(
            "the damaged file is kept at {} (delete it once you are content)",
            salvaged.kept_aside.display()
        );
    }
    let mut store = open_store(db)?;
    // The cursors' skip markers (sessions the user deleted) all copied, or some lost.
    let markers_whole = salvaged
        .tables
        .iter()
        .any(|t| t.table == "sources" && !t.damaged);
    let reimport = memtrail_runtime::salvage::reimport(&mut store, markers_whole)
        .context("importing the transcripts again")?;
    let added = reimport.messages;
    if !json {
        out!("transcripts still on disk imported again: {added} messages restored");
        if !reimport.left_out.is_empty() {
            out!(
                "{} not imported again: their sessions are not in the salvaged store, and the list of sessions you deleted was damaged, so they may be among them; `memtrail import` reads them:",
                match reimport.left_out.len() {
                    1 => "1 transcript".to_string(),
                    n => format!("{n} transcripts"),
                }
            );
            for p in &reimport.left_out {
                out!("  {}", printable(p, &[]));
            }
        }
    }
    let report = store.repair().context("repair stopped")?;
    if json {
        out!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "damage": damage,
                "salvaged": salvaged,
                "reimported_messages": added,
                "left_out": reimport.left_out,
                "steps": report.steps,
                "integrity": report.integrity,
            }))?
        );
    } else {
        print_repair(&report, false)?;
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn print_repair(report: &memtrail_runtime::store::RepairReport, json: bool) -> Result<()> {
    if json {
        out!("{}", serde_json::to_string_pretty(report)?);
        return Ok(());
    }
    for s in &report.steps {
        out!(
            "{}: {}; {} ({} ms)",
            s.name,
            s.what,
            if s.fixed == 0 {
                "nothing was wrong".to_string()
            } else {
                format!("{} wrong, fixed", s.fixed)
            },
            s.millis
        );
    }
    if report.ok() {
        out!("integrity check: ok");
    } else {
        out!("integrity check FAILED:");
        for line in &report.integrity {
            out!("  {line}");
        }
    }
    Ok(())
}

/// The largest store `status` runs the quick integrity check on by default: 8 MB (the check
/// reads the whole file, about 5 ms per MB; `status` stays within 50 ms).
const STATUS_CHECK_MAX_BYTES: u64 = 8 << 20;

fn status(db: &std::path::Path, force_check: bool, json: bool) -> Result<ExitCode> {
    let binary = binary_path()?;
    let mut healthy = true;
    let mut agents = Vec::new();
    for &agent in memtrail_adapters::supported_agents() {
        let st = match memtrail_installer::status(agent, &binary) {
            Ok(st) => st,
            // Captured (import) but not installable yet.
            Err(memtrail_installer::InstallError::Unsupported(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        healthy &= st.healthy();
        agents.push((agent, st));
    }
    // The store: figures, a quick integrity check, and the last run of each hook. A store that
    // cannot be read is reported, not fatal: the registration is still shown.
    type StoreInfo = (
        memtrail_runtime::store::StoreStats,
        Option<std::result::Result<(), String>>,
        Vec<Vec<memtrail_runtime::store::HookRun>>,
    );
    let store_info: Option<std::result::Result<StoreInfo, String>> = if db.exists() {
        Some(
            (|| -> Result<StoreInfo> {
                let store = open_store(db)?;
                let stats = store.stats()?;
                let check = if force_check || stats.size_bytes <= STATUS_CHECK_MAX_BYTES {
                    Some(store.quick_check()?)
                } else {
                    None
                };
                let runs = agents
                    .iter()
                    .map(|(a, _)| store.hook_runs(*a))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok((stats, check, runs))
            })()
            .map_err(|e| error_chain(&e)),
        )
    } else {
        None
    };
    match &store_info {
        Some(Ok((_, check, runs))) => {
            healthy &= check.as_ref().is_none_or(|c| c.is_ok());
            // The last run of every hook event succeeded, or a later hook caught up after it.
            healthy &= runs
                .iter()
                .all(|agent_runs| agent_runs.iter().all(|r| !hook_failed(r, agent_runs)));
        }
        Some(Err(_)) => healthy = false,
        None => {}
    }
    // Which transcripts each agent has, and which cannot be read (never "no sessions" when the
    // truth is "could not read").
    let transcripts: Vec<(usize, Vec<(String, String)>)> = agents
        .iter()
        .map(|(a, _)| match memtrail_adapters::discover(*a) {
            Ok(found) => {
                let mut bad: Vec<(String, String)> = found
                    .unreadable
                    .iter()
                    .map(|(p, e)| (p.display().to_string(), e.clone()))
                    .collect();
                for f in &found.files {
                    if let Err(e) = std::fs::File::open(f) {
                        bad.push((f.display().to_string(), e.to_string()));
                    }
                }
                (found.files.len(), bad)
            }
            Err(e) => (
                0,
                vec![(format!("({} transcripts)", a.display_name()), e.to_string())],
            ),
        })
        .collect();
    let errors = memtrail_runtime::hook::last_log_errors(3);
    let retention = claude_retention(db);
    // Transcripts whose last line has no '\n' yet (read by `import` once whole).
    let tails = match open_store_read(db) {
        Ok(Some(s)) => memtrail_runtime::ingest::pending_tails(&s).unwrap_or_default(),
        _ => Vec::new(),
    };
    let backups = memtrail_installer::backups();
    let when = |ms: Option<i64>| ms.map(memtrail_adapters::format_rfc3339_ms);
    if json {
        let run_json = |r: &memtrail_runtime::store::HookRun,
                        all: &[memtrail_runtime::store::HookRun]| {
            let mut v = serde_json::json!({
                "event": r.event,
                "at": memtrail_adapters::format_rfc3339_ms(r.at),
                "duration_ms": r.duration_us as f64 / 1000.0,
                "session": r.session,
                "messages": r.messages,
                "error": r.error,
            });
            if r.error.is_some() {
                v["caught_up"] = (!hook_failed(r, all)).into();
            }
            v
        };
        let v = serde_json::json!({
            "healthy": healthy,
            "binary": binary,
            "agents": agents.iter().enumerate().map(|(i, (a, st))| serde_json::json!({
                "agent": a,
                "registration": st,
                "transcripts": {
                    "found": transcripts[i].0,
                    "unreadable": transcripts[i].1.iter().map(|(p, e)| serde_json::json!({"path": p, "error": e})).collect::<Vec<_>>(),
                },
                "hook_runs": match &store_info {
                    Some(Ok((_, _, runs))) => runs[i].iter().map(|r| run_json(r, &runs[i])).collect::<Vec<_>>(),
                    _ => Vec::new(),
                },
            })).collect::<Vec<_>>(),
            "store": match &store_info {
                Some(Ok((s, c, _))) => serde_json::json!({
                    "path": s.path,
                    "size_bytes": s.size_bytes,
                    "schema_version": s.schema_version,
                    "sessions": s.sessions,
                    "messages": s.messages,
                    "per_agent": s.per_agent.iter().map(|(a, n, m)| serde_json::json!({
                        "agent": a, "sessions": n, "messages": m
                    })).collect::<Vec<_>>(),
                    "unindexed_messages": s.unindexed,
                    "integrity": match c {
                        Some(Ok(())) => "ok".to_string(),
                        Some(Err(e)) => e.clone(),
                        None => "not checked".to_string(),
                    },
                    "integrity_check": if c.is_some() { "quick_check" } else { "skipped" },
                }),
                Some(Err(e)) => serde_json::json!({ "path": db, "error": e }),
                None => serde_json::json!({ "path": db, "exists": false }),
            },
            "recent_hook_errors": errors,
            "notices": agents.iter().flat_map(|(a, st)| st.notices().map(move |n| serde_json::json!({
                "agent": a,
                "item": n.item,
                "file": n.file,
                "notice": match &n.state {
                    memtrail_installer::ItemState::Untrusted { reason } => reason.clone(),
                    _ => String::new(),
                },
            }))).collect::<Vec<_>>(),
            "claude_retention": retention_json(&retention),
            "pending_tails": tails,
            "backups": {
                "dir": backups.dir,
                "folders": backups.folders,
                "copies": backups.copies,
                "bytes": backups.bytes,
                "oldest": when(backups.oldest_ms),
                "newest": when(backups.newest_ms),
            },
        });
        out!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        out!(
            "memtrail {} at {}",
            env!("CARGO_PKG_VERSION"),
            binary.display()
        );
        for (i, (a, st)) in agents.iter().enumerate() {
            out!("\n{}:", a.display_name());
            let nothing = st
                .items
                .iter()
                .all(|it| matches!(it.state, memtrail_installer::ItemState::Missing));
            if !st.detected && nothing {
                out!("  not found on this machine; nothing registered");
            } else {
                outn!("{st}");
            }
            let (found, bad) = &transcripts[i];
            out!(
                "  transcripts on disk: {found}{}",
                if bad.is_empty() {
                    String::new()
                } else {
                    format!(", {} unreadable", bad.len())
                }
            );
            for (p, e) in bad.iter().take(5) {
                out!("    cannot read {p}: {e}");
            }
            if let Some(Ok((_, _, runs))) = &store_info {
                if runs[i].is_empty() {
                    out!("  hooks have not run yet");
                }
                for r in &runs[i] {
                    out!(
                        "  last {} hook: {} ({:.1} ms, +{}){}",
                        r.event,
                        short_time(&memtrail_adapters::format_rfc3339_ms(r.at)),
                        r.duration_us as f64 / 1000.0,
                        plural(r.messages as u64, "message", "messages"),
                        match r.error.as_deref() {
                            None => String::new(),
                            Some(e) if !hook_failed(r, &runs[i]) =>
                                format!(", error: {e} (a later hook caught up)"),
                            Some(e) => format!(", error: {e}"),
                        }
                    );
                }
            }
        }
        match &store_info {
            Some(Ok((s, check, _))) => {
                out!(
                    "\nstore: {} ({:.1} MB, schema v{}, {})",
                    s.path,
                    s.size_bytes as f64 / 1e6,
                    s.schema_version,
                    match check {
                        Some(Ok(())) => "quick integrity check ok".to_string(),
                        Some(Err(e)) => format!(
                            "quick integrity check FAILED: {}; run `memtrail repair`",
                            memtrail_adapters::one_line(e, 200)
                        ),
                        None =>
                            "integrity not checked: over 8 MB, `memtrail status --check` checks it"
                                .to_string(),
                    }
                );
                for (agent, sessions, messages) in &s.per_agent {
                    out!(
                        "  {agent}: {}, {}",
                        plural(*sessions as u64, "session", "sessions"),
                        plural(*messages as u64, "message", "messages")
                    );
                }
                if s.unindexed > 0 {
                    out!(
                        "  {} new message{} not yet in the search index (the next search, import or MCP server indexes them)",
                        s.unindexed,
                        if s.unindexed == 1 { "" } else { "s" }
                    );
                }
            }
            Some(Err(e)) => out!("\nstore: {} cannot be read: {e}", db.display()),
            None => out!("\nstore: {} (not created yet)", db.display()),
        }
        print_retention(&retention);
        if let Some(first) = tails.first() {
            out!(
                "\n{} transcript{} end{} in a line without a newline, not captured yet (e.g. {}, {} bytes): `memtrail import` reads such a line once it is whole JSON",
                tails.len(),
                if tails.len() == 1 { "" } else { "s" },
                if tails.len() == 1 { "s" } else { "" },
                first.path,
                first.bytes
            );
        }
        if backups.folders == 0 {
            out!("\nconfig backups: none");
        } else {
            let day = |ms: Option<i64>| when(ms).map(|t| short_time(&t)).unwrap_or_default();
            out!(
                "\nconfig backups: {} in {} ({}, {:.1} MB; oldest {}, newest {})",
                backups.folders,
                backups.dir.display(),
                plural(backups.copies as u64, "copy", "copies"),
                backups.bytes as f64 / 1e6,
                day(backups.oldest_ms),
                day(backups.newest_ms)
            );
            out!(
                "  copies of your agents' configs as they were, API keys and MCP tokens included (owner-only); kept: each file's first copy and the last five runs of under 30 days; `memtrail uninstall --purge` deletes them"
            );
        }
        if !errors.is_empty() {
            out!(
                "\nrecent hook errors ({}):",
                memtrail_runtime::hook::log_path().display()
            );
            for e in &errors {
                out!("  {e}");
            }
        }
        let notices: Vec<(Agent, usize, String)> = agents
            .iter()
            .filter_map(|(a, st)| {
                let n: Vec<_> = st.notices().collect();
                let reason = match &n.first()?.state {
                    memtrail_installer::ItemState::Untrusted { reason } => reason.clone(),
                    _ => String::new(),
                };
                Some((*a, n.len(), reason))
            })
            .collect();
        if !notices.is_empty() {
            out!("\nnotices (not failures):");
            for (a, n, reason) in &notices {
                out!(
                    "  {}: {} the agent's trust: {reason}",
                    a.display_name(),
                    plural(*n as u64, "item awaits", "items await")
                );
            }
        }
        out!(
            "\n{}",
            match (healthy, notices.is_empty()) {
                (true, true) => "healthy",
                (true, false) => "healthy (see the notices above)",
                (false, _) => "NOT healthy: see above",
            }
        );
    }
    Ok(if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Run a terminal prompt. The prompt hides the cursor while it runs; when it ends in an error,
/// Ctrl-C included (a prompt reads keys raw, so Ctrl-C reaches it as a key, not a signal), the
/// cursor is shown again. Ctrl-C exits with status 130 (as a shell reports SIGINT), and what
/// the prompt asked about is not done.
fn ask<T>(prompt: impl FnOnce() -> dialoguer::Result<T>) -> Result<T> {
    // The prompt library raises SIGINT on Ctrl-C, whose default action ends the process with
    // the cursor hidden: while the prompt runs, SIGINT shows the cursor and exits 130.
    #[cfg(unix)]
    let previous = {
        extern "C" fn on_sigint(_: libc::c_int) {
            const MSG: &[u8] =
                b"\x1b[?25h\nmemtrail: interrupted at the prompt: what it asked about was not done\n";
            // Only async-signal-safe calls here: write(2) and _exit(2).
            unsafe {
                libc::write(2, MSG.as_ptr().cast(), MSG.len());
                libc::_exit(130);
            }
        }
        let handler: extern "C" fn(libc::c_int) = on_sigint;
        unsafe { libc::signal(libc::SIGINT, handler as libc::sighandler_t) }
    };
    let answer = prompt();
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGINT, previous);
    }
    answer.map_err(|e| {
        let _ = dialoguer::console::Term::stderr().show_cursor();
        let dialoguer::Error::IO(io) = &e;
        if io.kind() == std::io::ErrorKind::Interrupted {
            eprintln!("\nmemtrail: interrupted at the prompt: what it asked about was not done");
            std::process::exit(130);
        }
        anyhow::Error::new(e).context("cannot ask on this terminal")
    })
}

/// Whether a hook run's error still matters: it failed, and no later run of the same agent for
/// the same session (any session, for a run without one) succeeded. A later run reads the
/// transcript from the cursor the failed run left, so it caught up what that run missed (a
/// race for the store's lock, say).
fn hook_failed(
    r: &memtrail_runtime::store::HookRun,
    all: &[memtrail_runtime::store::HookRun],
) -> bool {
    r.error.is_some()
        && !all.iter().any(|o| {
            o.error.is_none() && o.at > r.at && (r.session.is_none() || o.session == r.session)
        })
}

/// Ask on a terminal; without one, refuse unless `--yes` was given.
fn confirm_destructive(prompt: &str, yes: bool) -> Result<bool> {
    if yes {
        return Ok(true);
    }
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        bail!("refusing to delete without confirmation: add --yes");
    }
    ask(|| {
        dialoguer::Confirm::new()
            .with_prompt(printable(prompt, &[]))
            .default(false)
            .interact()
    })
}

fn delete_session(db: &std::path::Path, id: &str, yes: bool, json: bool) -> Result<ExitCode> {
    let Some(mut store) = open_store_read(db)? else {
        bail!("no session `{id}`: the store at {} is empty", db.display());
    };
    let info = memtrail_runtime::maintenance::session_info(&store, id)?;
    let what = format!(
        "{} session {} ({}; {}{}{})",
        info.agent,
        info.session_id,
        info.title.as_deref().unwrap_or("untitled"),
        plural(info.messages, "message", "messages"),
        if info.subagents > 0 {
            format!(
                ", {}",
                plural(info.subagents, "sub-agent session", "sub-agent sessions")
            )
        } else {
            String::new()
        },
        info.project
            .as_deref()
            .map(|p| format!(", in {p}"))
            .unwrap_or_default()
    );
    if !confirm_destructive(
        &format!(
            "Delete {what}? `memtrail sessions capture {}` brings it back while its transcript is still on disk",
            info.session_id
        ),
        yes,
    )? {
        eprintln!("nothing deleted");
        return Ok(ExitCode::FAILURE);
    }
    let info = memtrail_runtime::maintenance::delete_session(&mut store, &info.session_id)?;
    if json {
        out!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "deleted": info }))?
        );
    } else {
        out!("deleted {what}");
        out!(
            "its transcript stays where the agent keeps it; memtrail will not read it again, nor what is added to the session later (`memtrail sessions capture {}` captures it again)",
            info.session_id
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The youngest cutoff `purge --older-than` accepts without `--force`: one hour ago.
const MIN_PURGE_AGE_MS: i64 = 3_600_000;

fn purge_older(
    db: &std::path::Path,
    older_than: &str,
    vacuum: bool,
    dry_run: bool,
    yes: bool,
    force: bool,
    json: bool,
) -> Result<ExitCode> {
    let cutoff = parse_date(older_than, Bound::Start)
        .with_context(|| format!("--older-than {older_than:?}"))?;
    // An age under an hour (`0d`, `1m`) deletes (nearly) everything, the sessions running now
    // included: a typo more often than a wish. A dry run deletes nothing.
    if !dry_run && !force && memtrail_runtime::now_ms() - cutoff < MIN_PURGE_AGE_MS {
        bail!(
            "--older-than {older_than:?} is less than one hour ago: it would delete (nearly) every message, the sessions running now included; nothing was deleted (add --force if you mean it, or --dry-run to see what it would delete)"
        );
    }
    let when = memtrail_adapters::format_rfc3339_ms(cutoff);
    let Some(mut store) = open_store_read(db)? else {
        if json {
            out!(
                "{}",
                serde_json::to_string_pretty(&memtrail_runtime::maintenance::Purged {
                    dry_run,
                    ..Default::default()
                })?
            );
        } else {
            out!(
                "nothing to purge: the store at {} does not exist",
                db.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    };
    let preview = memtrail_runtime::maintenance::purge(&mut store, cutoff, false, true)?;
    if !dry_run && preview.messages + preview.sessions > 0 {
        let prompt = format!(
            "Delete {} from before {} ({} entirely)? This cannot be undone",
            plural(preview.messages, "message", "messages"),
            short_time(&when),
            plural(preview.sessions, "session", "sessions")
        );
        if !confirm_destructive(&prompt, yes)? {
            eprintln!("nothing deleted");
            return Ok(ExitCode::FAILURE);
        }
    }
    let r = if dry_run || preview.messages + preview.sessions == 0 && !vacuum {
        preview
    } else {
        memtrail_runtime::maintenance::purge(&mut store, cutoff, vacuum, false)?
    };
    if json {
        out!("{}", serde_json::to_string_pretty(&r)?);
    } else if r.dry_run {
        out!(
            "would delete {} from before {} and {} left empty (nothing deleted: dry run)",
            plural(r.messages, "message", "messages"),
            short_time(&when),
            plural(r.sessions, "session", "sessions")
        );
    } else {
        out!(
            "deleted {} from before {} and {} left empty; store {:.1} MB -> {:.1} MB{}",
            plural(r.messages, "message", "messages"),
            short_time(&when),
            plural(r.sessions, "session", "sessions"),
            r.bytes_before as f64 / 1e6,
            r.bytes_after as f64 / 1e6,
            if r.vacuumed { " (vacuumed)" } else { "" }
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn redact_rescan(db: &std::path::Path, json: bool) -> Result<ExitCode> {
    let Some(mut store) = open_store_read(db)? else {
        bail!("no store at {}: nothing to rescan", db.display());
    };
    let tty = std::io::stderr().is_terminal() && !json;
    let r = memtrail_runtime::maintenance::rescan(&mut store, &mut |n| {
        if tty {
            eprint!("\rrescanned {n} messages");
        }
    })?;
    if tty {
        eprintln!();
    }
    if json {
        out!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        out!(
            "rescanned {}: {} changed, {} session titles changed, {} snapshots changed, {} reader states changed",
            plural(r.messages, "message", "messages"),
            r.messages_changed,
            r.titles_changed,
            r.snapshots_changed,
            r.reader_states_changed
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Claude Code's transcript retention against what memtrail has captured (`None` when Claude
/// Code keeps no transcripts here). Errors are reported as text.
fn claude_retention(
    db: &std::path::Path,
) -> Option<std::result::Result<memtrail_runtime::maintenance::Retention, String>> {
    use memtrail_adapters::claude;
    let files = memtrail_adapters::discover(Agent::Claude).ok()?.files;
    if files.is_empty() && !claude::settings_path().exists() {
        return None;
    }
    let store = match open_store_read(db) {
        Ok(s) => s,
        Err(e) => return Some(Err(error_chain(&e))),
    };
    Some(
        memtrail_runtime::maintenance::retention(
            store.as_ref(),
            &claude::settings_path(),
            &files,
            memtrail_runtime::now_ms(),
        )
        .map_err(|e| e.to_string()),
    )
}

fn retention_json(
    r: &Option<std::result::Result<memtrail_runtime::maintenance::Retention, String>>,
) -> serde_json::Value {
    match r {
        None => serde_json::Value::Null,
        Some(Err(e)) => serde_json::json!({ "error": e }),
        Some(Ok(r)) => serde_json::json!({
            "settings": r.settings,
            "cleanup_period_days": r.cleanup_period_days,
            "from_settings": r.from_settings,
            "at_risk": r.at_risk.len(),
            "first_deletion": r.first_deletion_ms.map(memtrail_adapters::format_rfc3339_ms),
            "transcripts": r.at_risk.iter().map(|a| serde_json::json!({
                "path": a.path,
                "size": a.size,
                "captured": a.captured,
                "deletes_at": memtrail_adapters::format_rfc3339_ms(a.deletes_at_ms),
            })).collect::<Vec<_>>(),
            "memtrail_keeps_captured": true,
        }),
    }
}

fn print_retention(
    r: &Option<std::result::Result<memtrail_runtime::maintenance::Retention, String>>,
) {
    match r {
        None => {}
        Some(Err(e)) => out!("\nClaude Code retention: cannot check: {e}"),
        Some(Ok(r)) if r.at_risk.is_empty() => out!(
            "\nClaude Code deletes transcripts after {} days{}; every transcript due within {} days is captured (memtrail keeps what it captured)",
            r.cleanup_period_days,
            if r.from_settings { "" } else { " (default)" },
            memtrail_runtime::maintenance::RETENTION_WARNING_DAYS
        ),
        Some(Ok(r)) => {
            out!(
                "\nWARNING: Claude Code deletes transcripts after {} days (cleanupPeriodDays{} in {}).",
                r.cleanup_period_days,
                if r.from_settings { "" } else { ", default" },
                r.settings
            );
            out!(
                "  {} transcripts not fully captured by memtrail will be deleted, the first on {}: run `memtrail import --agent claude` now.",
                r.at_risk.len(),
                r.first_deletion_ms
                    .map(|t| short_time(&memtrail_adapters::format_rfc3339_ms(t)))
                    .unwrap_or_default()
            );
            out!(
                "  memtrail keeps what it has captured after Claude Code deletes a transcript; raise cleanupPeriodDays to keep the files longer."
            );
        }
    }
}
