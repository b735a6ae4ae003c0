//! Every environment variable memtrail reads, in one table ([`variables`]): `memtrail --help`
//! (its "Environment" section), `memtrail config env` and README's "Environment variables"
//! section are made from it, and the tests below fail when a variable the code reads is
//! missing. The variables one agent's adapter reads are its own (`Quirks::environment`, in
//! `adapters/src/agents/<agent>/adapter.rs`), so a new agent adds no line here.
//!
//! Rule for tests-only knobs: variables named `MEMTRAIL_TEST_*` or `MEMTRAIL_E2E_*`, and those
//! read only by test code (`tests/`, `testkit/`, `#[cfg(test)]` modules), are not listed; a
//! knob that a non-test build reads (`MEMTRAIL_FAULT_PANIC_PATH`, debug builds only) is
//! listed under [`Group::Testing`].

/// What a variable is for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Group {
    /// memtrail's own settings.
    Memtrail,
    /// Variables of the system or of other tools that memtrail honours.
    Standard,
    /// Where an agent keeps its files (see docs/agents/).
    Agent,
    /// Measurements and fault injection.
    Testing,
}

impl Group {
    fn title(self) -> &'static str {
        match self {
            Group::Memtrail => "memtrail",
            Group::Standard => "System and tools",
            Group::Agent => "Agents' folders",
            Group::Testing => "Measuring and testing",
        }
    }
}

/// One environment variable.
#[derive(Clone, Copy)]
pub struct Variable {
    /// Its name.
    pub name: &'static str,
    /// Its group.
    pub group: Group,
    /// What it does (one sentence; the default in brackets).
    pub what: &'static str,
}

const fn v(name: &'static str, group: Group, what: &'static str) -> Variable {
    Variable { name, group, what }
}

/// Every variable memtrail reads, by group, except those one agent's adapter reads (its
/// [`Quirks::environment`](memtrail_adapters::Quirks::environment)): see [`variables`].
const VARIABLES: &[Variable] = &[
    v(
        "MEMTRAIL_STORE",
        Group::Memtrail,
        "The store: an SQLite file or a postgres:// URL (read commands query PostgreSQL directly; hooks and sync keep to the local file) [default: MEMTRAIL_DB].",
    ),
    v(
        "MEMTRAIL_DB",
        Group::Memtrail,
        "The local SQLite store [default: $XDG_DATA_HOME/memtrail/memtrail.db].",
    ),
    v(
        "MEMTRAIL_MODELS_DIR",
        Group::Memtrail,
        "Where `memtrail models install` puts the embedding model [default: $XDG_DATA_HOME/memtrail/models].",
    ),
    v(
        "MEMTRAIL_WEB_TOKEN",
        Group::Memtrail,
        "`memtrail web --token`: the access token every visitor presents.",
    ),
    v(
        "MEMTRAIL_MCP_NOTES",
        Group::Memtrail,
        "`any`: the MCP tool `remember` may attach notes to sessions of any project [default: this project's only].",
    ),
    v(
        "MEMTRAIL_SYNC_INTERVAL_SECS",
        Group::Memtrail,
        "Least seconds between two background syncs started at turn ends; 0: at every turn [default: 60].",
    ),
    v(
        "MEMTRAIL_SYNC_BATCH",
        Group::Memtrail,
        "Messages per sync batch, a whole number ≥ 1 [default: 1000].",
    ),
    v(
        "MEMTRAIL_HOOK_BUDGET_MS",
        Group::Memtrail,
        "A hook's time budget in milliseconds (it waits at least 2000 ms for its payload) [default: 3000].",
    ),
    v(
        "MEMTRAIL_DISABLE",
        Group::Memtrail,
        "`1` in OpenCode's environment turns memtrail's OpenCode plugin off.",
    ),
    v(
        "HOME",
        Group::Standard,
        "Your home folder: `~` in paths, and where the agents' folders are.",
    ),
    v(
        "XDG_CONFIG_HOME",
        Group::Standard,
        "memtrail's config is $XDG_CONFIG_HOME/memtrail/config.toml [default: ~/.config].",
    ),
    v(
        "XDG_DATA_HOME",
        Group::Standard,
        "The store and the models live under $XDG_DATA_HOME/memtrail [default: ~/.local/share].",
    ),
    v(
        "XDG_STATE_HOME",
        Group::Standard,
        "Backups, install state and logs live under $XDG_STATE_HOME/memtrail [default: ~/.local/state].",
    ),
    v(
        "PATH",
        Group::Standard,
        "Where the agents' programs and memtrail itself are found.",
    ),
    v(
        "HOSTNAME",
        Group::Standard,
        "This machine's name when /proc/sys/kernel/hostname and /etc/hostname are missing.",
    ),
    v(
        "USER",
        Group::Standard,
        "The PostgreSQL user when neither the URL nor PGUSER gives one.",
    ),
    v(
        "NO_COLOR",
        Group::Standard,
        "Set and not empty: no colour (https://no-color.org).",
    ),
    v("TERM", Group::Standard, "`dumb`: no colour."),
    v(
        "PAGER",
        Group::Standard,
        "The pager `sessions show` (on a terminal) and `memtrail browse` open a session in [default: less -R].",
    ),
    v(
        "LESS",
        Group::Standard,
        "less's options; unset, memtrail gives the pager FRX (quit when it fits, colours, keep the screen).",
    ),
    v(
        "VISUAL",
        Group::Standard,
        "The editor `memtrail config edit` opens, before EDITOR.",
    ),
    v(
        "EDITOR",
        Group::Standard,
        "The editor `memtrail config edit` opens when VISUAL is unset [default: vi].",
    ),
    v(
        "OPENAI_API_KEY",
        Group::Standard,
        "The key sent to an [embed] endpoint at api.openai.com when `api_key_env` is not set (`api_key_env` names another variable to read).",
    ),
    v(
        "PGHOST",
        Group::Standard,
        "PostgreSQL: the host when the URL has none (libpq's variables).",
    ),
    v(
        "PGPORT",
        Group::Standard,
        "PostgreSQL: the port when the URL has none.",
    ),
    v(
        "PGUSER",
        Group::Standard,
        "PostgreSQL: the user when the URL has none.",
    ),
    v(
        "PGDATABASE",
        Group::Standard,
        "PostgreSQL: the database when the URL has none.",
    ),
    v(
        "PGPASSWORD",
        Group::Standard,
        "PostgreSQL: the password when the URL has none (keep it out of the URL).",
    ),
    v(
        "PGPASSFILE",
        Group::Standard,
        "PostgreSQL: the password file [default: ~/.pgpass].",
    ),
    v(
        "VSCODE_PORTABLE",
        Group::Agent,
        "A portable VS Code's data folder.",
    ),
    v("APPDATA", Group::Agent, "VS Code's user folder on Windows."),
    v(
        "PWD",
        Group::Agent,
        "The session's folder when a Codex CLI or OpenCode payload lacks `cwd`.",
    ),
    v(
        "MEMTRAIL_HOOK_TIMING",
        Group::Testing,
        "A file each hook appends `<agent> <event> <ok|busy|error> <µs>` to (scripts/bench).",
    ),
    v(
        "MEMTRAIL_BROWSE_TRACE",
        Group::Testing,
        "A file `memtrail browse` writes its frame and keystroke timings to.",
    ),
    v(
        "MEMTRAIL_FAULT_PANIC_PATH",
        Group::Testing,
        "Debug builds only: `import` panics on each file whose path holds this text.",
    ),
];

/// The groups in the order they are shown.
const GROUPS: [Group; 4] = [
    Group::Memtrail,
    Group::Standard,
    Group::Agent,
    Group::Testing,
];

/// Every variable memtrail reads, in the order shown: group by group ([`GROUPS`]); in
/// [`Group::Agent`], first each agent's own ([`Quirks::environment`](memtrail_adapters::Quirks::environment),
/// in [`Agent::ALL`](memtrail_adapters::Agent::ALL)'s order), then those several agents read.
pub fn variables() -> Vec<Variable> {
    let mut out = Vec::new();
    for g in GROUPS {
        if g == Group::Agent {
            for a in memtrail_adapters::Agent::ALL {
                for &(name, what) in a.adapter().quirks().environment {
                    out.push(v(name, g, what));
                }
            }
        }
        out.extend(VARIABLES.iter().filter(|v| v.group == g).copied());
    }
    out
}

/// The table as plain text for `--help` and `memtrail config env`: a heading per group, then
/// `  NAME  what` lines, the names padded to one width.
pub fn help_text() -> String {
    let variables = variables();
    let width = variables.iter().map(|v| v.name.len()).max().unwrap_or(0);
    let mut out = String::from("Environment variables:");
    for g in GROUPS {
        out.push_str(&format!("\n\n {}:", g.title()));
        for v in variables.iter().filter(|v| v.group == g) {
            out.push_str(&format!("\n  {:<width$}  {}", v.name, v.what));
        }
    }
    out
}

/// The table as Markdown (README's "Environment variables" section, between its markers).
pub fn markdown() -> String {
    let variables = variables();
    let mut out = String::new();
    for g in GROUPS {
        out.push_str(&format!(
            "\n**{}**\n\n| Variable | What it does |\n|---|---|\n",
            g.title()
        ));
        for v in variables.iter().filter(|v| v.group == g) {
            out.push_str(&format!(
                "| `{}` | {} |\n",
                v.name,
                v.what.replace('|', "\\|")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    /// The non-test source files of the workspace: every crate's `src/` (test modules, from
    /// the first `#[cfg(test)]` line on, left out) and the agents' plugin templates.
    fn sources() -> Vec<(PathBuf, String)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut out = Vec::new();
        let mut stack: Vec<PathBuf> = [
            "src",
            "adapters/src",
            "runtime/src",
            "pg/src",
            "embed/src",
            "web/src",
            "installer/src",
            "templates",
        ]
        .iter()
        .map(|d| root.join(d))
        .collect();
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    if p.file_name().is_some_and(|n| n != "tests") {
                        stack.push(p);
                    }
                    continue;
                }
                // This file names every variable (and the tests-only prefixes).
                if p.ends_with("src/environment.rs") && p.starts_with(root.join("src")) {
                    continue;
                }
                let Ok(text) = std::fs::read_to_string(&p) else {
                    continue;
                };
                let code = match text.find("#[cfg(test)]") {
                    Some(i) => text[..i].to_string(),
                    None => text,
                };
                out.push((p, code));
            }
        }
        assert!(out.len() > 100, "the workspace's sources were not found");
        out
    }

    fn is_name_char(c: char) -> bool {
        c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'
    }

    /// Every `MEMTRAIL_…` name in `code`.
    fn memtrail_names(code: &str) -> Vec<String> {
        let mut out = Vec::new();
        for (i, _) in code.match_indices("MEMTRAIL_") {
            if code[..i].chars().next_back().is_some_and(is_name_char) {
                continue;
            }
            let name: String = code[i..].chars().take_while(|&c| is_name_char(c)).collect();
            out.push(name.trim_end_matches('_').to_string());
        }
        out
    }

    /// Every literal name passed alone to a reader of the environment in `code`:
    /// `var("X")`, `var_os("X")`, `abs_var("X")`, `var_utf8("X")`, `env("X")`, `from_env("X")`.
    fn read_names(code: &str) -> Vec<String> {
        let mut out = Vec::new();
        for f in [
            "var(\"",
            "var_os(\"",
            "abs_var(\"",
            "var_utf8(\"",
            "env(\"",
            "from_env(\"",
        ] {
            for (i, _) in code.match_indices(f) {
                let rest = &code[i + f.len()..];
                let name: String = rest.chars().take_while(|&c| is_name_char(c)).collect();
                if !name.is_empty() && rest[name.len()..].starts_with("\")") {
                    out.push(name);
                }
            }
        }
        out
    }

    /// `MEMTRAIL_…` names that are not environment variables: the OpenCode plugin's constant
    /// holding memtrail's path (`const MEMTRAIL_BIN = "…"`, filled in at install).
    const NOT_VARIABLES: &[&str] = &["MEMTRAIL_BIN"];

    #[test]
    fn every_memtrail_variable_read_is_listed() {
        let listed: BTreeSet<&str> = variables().iter().map(|v| v.name).collect();
        let mut missing = BTreeSet::new();
        for (path, code) in sources() {
            for n in memtrail_names(&code) {
                if n.starts_with("MEMTRAIL_TEST_")
                    || n.starts_with("MEMTRAIL_E2E_")
                    || NOT_VARIABLES.contains(&n.as_str())
                {
                    continue;
                }
                if !listed.contains(n.as_str()) {
                    missing.insert(format!("{n} ({})", path.display()));
                }
            }
        }
        assert!(missing.is_empty(), "not in src/environment.rs: {missing:?}");
    }

    #[test]
    fn every_variable_read_by_name_is_listed() {
        let listed: BTreeSet<&str> = variables().iter().map(|v| v.name).collect();
        let mut missing = BTreeSet::new();
        for (path, code) in sources() {
            for n in read_names(&code) {
                if !listed.contains(n.as_str()) {
                    missing.insert(format!("{n} ({})", path.display()));
                }
            }
        }
        assert!(missing.is_empty(), "not in src/environment.rs: {missing:?}");
    }

    #[test]
    fn the_scanners_find_what_they_should() {
        assert_eq!(
            memtrail_names("a(\"MEMTRAIL_DB\") XMEMTRAIL_NO MEMTRAIL_BIN__"),
            ["MEMTRAIL_DB", "MEMTRAIL_BIN"]
        );
        assert_eq!(
            read_names("std::env::var(\"A_1\") var_os(\"B\") .env(\"C\", x) var(\"lower\")"),
            ["A_1", "B"]
        );
    }

    #[test]
    fn each_name_is_listed_once() {
        let mut seen = BTreeSet::new();
        for v in variables() {
            assert!(seen.insert(v.name), "{} twice", v.name);
        }
    }

    #[test]
    fn readme_holds_the_table() {
        let readme =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
                .unwrap();
        let start = "<!-- environment: made from src/environment.rs -->\n";
        let end = "<!-- end of environment -->";
        let a = readme.find(start).expect("README has no environment table") + start.len();
        let b = a + readme[a..].find(end).unwrap();
        assert_eq!(
            &readme[a..b],
            markdown(),
            "README's table differs from the code's"
        );
    }
}
