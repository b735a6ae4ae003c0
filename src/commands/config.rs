//! `memtrail config show|get|set|unset|path|edit|default|env`: memtrail's settings, from its
//! config file (`memtrail_runtime::config`), the environment, or their defaults.

use anyhow::{Result, anyhow, bail};
use memtrail_runtime::StoreLocation;
use memtrail_runtime::config::{self, Config};
use memtrail_runtime::privacy::{Privacy, config_path};
use serde_json::{Value, json};
use std::path::Path;
use std::process::ExitCode;

/// How a setting's value is written by `config set`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An array of paths: `["~/a", "/b"]`, or one path.
    Paths,
    /// A string.
    Text,
    /// A whole number from `min` to `max`.
    Number(i64, i64),
    /// An IP address, kept as a string.
    Ip,
    /// Comes from the environment only (`config set` names the variable).
    Env,
    /// Redaction rules: `[{ name = "…", pattern = "…" }, …]`, or one `{ … }`.
    Rules,
}

/// One setting.
struct Setting {
    /// Its dotted name (`sync.url`).
    key: &'static str,
    kind: Kind,
    /// The variables it comes from, first wins (for [`Kind::Env`]).
    env: &'static [&'static str],
    /// Never printed: shown masked.
    secret: bool,
    /// What it does, for `config default`.
    help: &'static str,
}

const fn s(
    key: &'static str,
    kind: Kind,
    env: &'static [&'static str],
    secret: bool,
    help: &'static str,
) -> Setting {
    Setting {
        key,
        kind,
        env,
        secret,
        help,
    }
}

/// Every setting, in the file's order.
const SETTINGS: &[Setting] = &[
    s(
        "exclude",
        Kind::Paths,
        &[],
        false,
        "Projects never captured (absolute paths or ~/…, and every folder below them); a .memtrailignore file in a folder does the same.",
    ),
    s(
        "aider.roots",
        Kind::Paths,
        &[],
        false,
        "Folders where `memtrail import` looks for Aider's chat logs (.aider.chat.history.md, up to 4 levels down), besides the projects memtrail already knows.",
    ),
    s(
        "sync.url",
        Kind::Text,
        &[],
        true,
        "The PostgreSQL database `memtrail sync` pushes to and pulls from (`memtrail sync --init URL` sets it). Leave the password out: PGPASSWORD or ~/.pgpass gives it.",
    ),
    s(
        "sync.machine",
        Kind::Text,
        &[],
        false,
        "This machine's id, 32 lowercase hex digits (`memtrail sync --init` makes it).",
    ),
    s(
        "sync.label",
        Kind::Text,
        &[],
        false,
        "This machine's name as the other machines show it [default: the hostname].",
    ),
    s(
        "privacy.redact",
        Kind::Rules,
        &[],
        false,
        "Your own redaction rules, applied after the built-in ones wherever text is stored (hooks, import, MCP notes, sync, `memtrail redact --rescan` for what is stored): every match of a pattern (Rust regex syntax; only the group named s when there is one) is stored as [redacted:NAME]. A rule that does not compile stops capture until it is fixed: nothing is stored unredacted.",
    ),
    s(
        "embed.url",
        Kind::Text,
        &[],
        true,
        "An OpenAI-compatible embeddings endpoint instead of the local model (https://, or http:// to this machine only); memtrail POSTs to {url}/embeddings.",
    ),
    s(
        "embed.model",
        Kind::Text,
        &[],
        false,
        "The endpoint's model name (required with embed.url).",
    ),
    s(
        "embed.api_key_env",
        Kind::Text,
        &[],
        false,
        "The environment variable holding the endpoint's key [default: OPENAI_API_KEY for api.openai.com, else none].",
    ),
    s(
        "embed.dim",
        Kind::Number(1, 16_384),
        &[],
        false,
        "Values per vector [default: asked from the endpoint].",
    ),
    s(
        "web.bind",
        Kind::Ip,
        &[],
        false,
        "The address `memtrail web` listens on without --bind (anything but loopback needs a token).",
    ),
    s(
        "web.port",
        Kind::Number(0, 65_535),
        &[],
        false,
        "The port `memtrail web` listens on without --port (0: one the system picks).",
    ),
    s("web.token", Kind::Env, &["MEMTRAIL_WEB_TOKEN"], true, ""),
    s(
        "store.path",
        Kind::Env,
        &["MEMTRAIL_STORE", "MEMTRAIL_DB"],
        false,
        "",
    ),
    s("models.dir", Kind::Env, &["MEMTRAIL_MODELS_DIR"], false, ""),
    s(
        "sync.interval_secs",
        Kind::Env,
        &[memtrail_runtime::autosync::INTERVAL_VAR],
        false,
        "",
    ),
    s(
        "sync.batch",
        Kind::Env,
        &[memtrail_pg::engine::BATCH_VAR],
        false,
        "",
    ),
    s(
        "hook.budget_ms",
        Kind::Env,
        &["MEMTRAIL_HOOK_BUDGET_MS"],
        false,
        "",
    ),
    s(
        "mcp.notes",
        Kind::Env,
        &[memtrail_runtime::mcp::NOTES_ANYWHERE_ENV],
        false,
        "",
    ),
];

fn setting(key: &str) -> Result<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == key).ok_or_else(|| {
        // A typo (`web.prot`) is answered with the setting it meant.
        let near = SETTINGS
            .iter()
            .map(|s| (edit_distance(key, s.key), s.key))
            .min()
            .filter(|(d, _)| *d <= 2);
        match near {
            Some((_, k)) => anyhow!("no setting `{key}`: did you mean `{k}`?"),
            None => anyhow!(
                "no setting `{key}`; the settings are: {}",
                SETTINGS
                    .iter()
                    .map(|s| s.key)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    })
}

/// Levenshtein distance between `a` and `b`, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// A setting's default, as TOML (`None`: not set by default).
fn default_of(key: &str, db: &StoreLocation) -> Option<String> {
    let q = |s: &str| Some(toml_edit::Value::from(s).to_string());
    match key {
        "exclude" | "aider.roots" | "privacy.redact" => Some("[]".into()),
        "sync.label" => q(&memtrail_runtime::machine::hostname()),
        "web.bind" => q("127.0.0.1"),
        "web.port" => Some(memtrail_web::DEFAULT_PORT.to_string()),
        "store.path" => q(&local_default(db)),
        "models.dir" => q(&memtrail_adapters::paths::xdg_data_home()
            .join("memtrail/models")
            .display()
            .to_string()),
        "sync.interval_secs" => Some(memtrail_runtime::autosync::STOP_INTERVAL_SECS.to_string()),
        "sync.batch" => Some(
            memtrail_pg::engine::SyncOptions::default()
                .batch_messages
                .to_string(),
        ),
        "hook.budget_ms" => Some(memtrail_runtime::hook::DEFAULT_BUDGET_MS.to_string()),
        _ => None,
    }
}

fn local_default(_db: &StoreLocation) -> String {
    memtrail_adapters::paths::xdg_data_home()
        .join("memtrail/memtrail.db")
        .display()
        .to_string()
}

/// Where a value came from.
#[derive(Clone, PartialEq, Eq)]
enum Source {
    Default,
    File,
    Environment(&'static str),
    CommandLine,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File => f.write_str("file"),
            Source::Environment(v) => write!(f, "environment ({v})"),
            Source::CommandLine => f.write_str("command line"),
        }
    }
}

/// A setting's value in force (TOML, `None`: not set), masked when secret, and its source.
fn value_of(
    s: &Setting,
    text: Option<&str>,
    db: &StoreLocation,
) -> Result<(Option<String>, Source)> {
    if s.kind == Kind::Env {
        if s.key == "store.path" && *db != StoreLocation::from_env() {
            return Ok((Some(quote(&db.to_string())), Source::CommandLine));
        }
        for v in s.env {
            if let Some(x) = std::env::var_os(v).filter(|x| !x.is_empty()) {
                let x = x.to_string_lossy();
                let shown = if s.secret {
                    "(set)".to_string()
                } else if s.key == "store.path" {
                    StoreLocation::parse(&x).to_string()
                } else {
                    x.to_string()
                };
                return Ok((Some(quote(&shown)), Source::Environment(v)));
            }
        }
        return Ok((default_of(s.key, db), Source::Default));
    }
    let raw = match text {
        Some(t) => config::raw(t, s.key).map_err(|e| anyhow!("{e}"))?,
        None => None,
    };
    match raw {
        Some(r) if s.secret => {
            let url = r
                .parse::<toml_edit::Value>()
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            Ok((Some(quote(&memtrail_pg::mask_url(&url))), Source::File))
        }
        Some(r) => Ok((Some(r), Source::File)),
        None => Ok((default_of(s.key, db), Source::Default)),
    }
}

fn quote(s: &str) -> String {
    toml_edit::Value::from(s).to_string()
}

/// A TOML value's text as JSON (strings, numbers, booleans, arrays; anything else as its text).
fn toml_to_json(t: &str) -> Value {
    fn conv(v: &toml_edit::Value) -> Value {
        match v {
            toml_edit::Value::String(s) => json!(s.value()),
            toml_edit::Value::Integer(i) => json!(i.value()),
            toml_edit::Value::Float(f) => json!(f.value()),
            toml_edit::Value::Boolean(b) => json!(b.value()),
            toml_edit::Value::Array(a) => Value::Array(a.iter().map(conv).collect()),
            toml_edit::Value::InlineTable(t) => {
                Value::Object(t.iter().map(|(k, v)| (k.to_string(), conv(v))).collect())
            }
            other => json!(other.to_string().trim()),
        }
    }
    t.parse::<toml_edit::Value>()
        .map(|v| conv(&v))
        .unwrap_or_else(|_| json!(t))
}

/// Checks a config file's text as every reader of it will: the types ([`Config::parse`]),
/// `exclude`'s paths ([`Privacy::parse`]), `[sync]` ([`memtrail_pg::settings::SyncSettings`])
/// and `[embed]` ([`memtrail_embed::remote::EndpointConfig`]).
///
/// Errors: the first problem found, on one line.
pub fn validate(text: &str) -> std::result::Result<Config, String> {
    let cfg = Config::parse(text)?;
    Privacy::parse(text, &memtrail_adapters::paths::home_dir())?;
    memtrail_pg::settings::SyncSettings::parse(text)?;
    memtrail_embed::remote::EndpointConfig::parse(text)?;
    Ok(cfg)
}

/// The keys of the TOML `text` that are no setting (a typo such as `sync.lable`): memtrail
/// ignores them. Dotted, in the file's order; empty when `text` is not TOML.
fn unknown_keys(text: &str) -> Vec<String> {
    let Ok(doc) = text.parse::<toml_edit::DocumentMut>() else {
        return Vec::new();
    };
    let known = |k: &str| SETTINGS.iter().any(|s| s.key == k && s.kind != Kind::Env);
    let mut out = Vec::new();
    for (k, item) in doc.iter() {
        match item.as_table_like() {
            Some(t) if !known(k) => {
                for (sub, _) in t.iter() {
                    let key = format!("{k}.{sub}");
                    if !known(&key) {
                        out.push(key);
                    }
                }
                if t.is_empty() && !SETTINGS.iter().any(|s| s.key.starts_with(&format!("{k}."))) {
                    out.push(k.to_string());
                }
            }
            _ if !known(k) => out.push(k.to_string()),
            _ => {}
        }
    }
    out
}

/// The file's text, `None` when it does not exist.
fn read_file(path: &Path) -> Result<Option<String>> {
    config::read(path).map_err(|e| anyhow!("{e}"))
}

/// `memtrail config show`: every setting, its value and where it came from.
pub fn show(db: &StoreLocation, json: bool) -> Result<ExitCode> {
    let path = config_path();
    let text = read_file(&path)?;
    let problem = text.as_deref().and_then(|t| validate(t).err());
    let unknown = text.as_deref().map(unknown_keys).unwrap_or_default();
    let mut rows = Vec::new();
    for s in SETTINGS {
        let (value, source) = match value_of(s, text.as_deref(), db) {
            Ok(v) => v,
            // A file that is not TOML: the file's settings are unknown.
            Err(_) => (None, Source::File),
        };
        rows.push((s, value, source));
    }
    if json {
        let settings: Vec<Value> = rows
            .iter()
            .map(|(s, v, src)| {
                json!({
                    "key": s.key,
                    "value": v.as_deref().map(toml_to_json),
                    "source": match src {
                        Source::Default => "default",
                        Source::File => "file",
                        Source::Environment(_) => "environment",
                        Source::CommandLine => "command line",
                    },
                    "variable": match src { Source::Environment(v) => Some(*v), _ => None },
                })
            })
            .collect();
        out!(
            "{}",
            crate::output::json(&json!({
                "file": path,
                "exists": text.is_some(),
                // The parser's message quotes the line it stopped at: a URL with its
                // password, say.
                "problem": problem.as_deref().map(memtrail_runtime::redact::redact),
                "unknown": unknown,
                "settings": settings,
            }))?
        );
    } else {
        out!(
            "# {}{}",
            path.display(),
            if text.is_some() { "" } else { " (no file yet)" }
        );
        if let Some(p) = &problem {
            out!(
                "# problem: {}",
                crate::output::terminal_safe(&memtrail_runtime::redact::redact(p))
            );
        }
        if !unknown.is_empty() {
            out!(
                "# not settings, ignored: {}",
                crate::output::terminal_safe(&unknown.join(", "))
            );
        }
        let kw = rows.iter().map(|(s, ..)| s.key.len()).max().unwrap_or(0);
        let cells: Vec<String> = rows
            .iter()
            .map(|(_, v, _)| v.clone().unwrap_or_else(|| "(not set)".into()))
            .collect();
        let vw = cells.iter().map(|c| c.chars().count()).max().unwrap_or(0);
        for ((s, _, src), cell) in rows.iter().zip(&cells) {
            out!(
                "{:<kw$} = {:<vw$}  # {src}",
                s.key,
                crate::output::terminal_safe(cell)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `memtrail config get KEY`: the value in force (a string without its quotes).
pub fn get(db: &StoreLocation, key: &str) -> Result<ExitCode> {
    let s = setting(key)?;
    let path = config_path();
    let text = read_file(&path)?;
    if let Some(t) = &text {
        validate(t).map_err(|e| anyhow!("memtrail's config {}: {e}", path.display()))?;
    }
    let (value, _) = value_of(s, text.as_deref(), db)?;
    match value {
        Some(v) => {
            let shown = match v.parse::<toml_edit::Value>() {
                Ok(toml_edit::Value::String(x)) => x.value().clone(),
                _ => v,
            };
            out!("{}", crate::output::terminal_safe(&shown));
            Ok(ExitCode::SUCCESS)
        }
        None => {
            eprintln!("{key} is not set");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The TOML value `config set KEY VALUE` writes.
fn parse_value(s: &Setting, value: &str) -> Result<toml_edit::Value> {
    match s.kind {
        Kind::Env => bail!(
            "{} comes from the environment: set {}{}",
            s.key,
            s.env.join(" or "),
            if s.key == "store.path" {
                " (or pass --store)"
            } else {
                ""
            }
        ),
        Kind::Text if s.key == "sync.label" => {
            // As `memtrail sync --init --label` checks it.
            memtrail_runtime::machine::check_label(value)
                .map_err(|e| anyhow!("{}", e.to_string().replacen("--label", "sync.label", 1)))?;
            Ok(value.into())
        }
        Kind::Text => Ok(value.into()),
        Kind::Paths => {
            if value.trim_start().starts_with('[') {
                let v: toml_edit::Value = value
                    .parse()
                    .map_err(|e| anyhow!("{} must be an array of paths: {e}", s.key))?;
                if !v.is_array() {
                    bail!(
                        "{} must be an array of paths, like [\"~/a\", \"/b\"]",
                        s.key
                    );
                }
                Ok(v)
            } else {
                let mut a = toml_edit::Array::new();
                a.push(value);
                Ok(a.into())
            }
        }
        Kind::Rules => {
            const EXAMPLE: &str = "[{ name = \"acme-ticket\", pattern = \"ACME-[0-9]{6}\" }]";
            let v: toml_edit::Value = value.trim().parse().map_err(|e: toml_edit::TomlError| {
                anyhow!(
                    "{} must be an array of rules like {EXAMPLE}: {}",
                    s.key,
                    e.to_string()
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            })?;
            let v = match v {
                toml_edit::Value::InlineTable(t) => {
                    let mut a = toml_edit::Array::new();
                    a.push(t);
                    toml_edit::Value::Array(a)
                }
                v @ toml_edit::Value::Array(_) => v,
                _ => bail!("{} must be an array of rules like {EXAMPLE}", s.key),
            };
            // The rules as the readers check them (names, patterns that compile).
            let doc: toml_edit::DocumentMut = format!("[privacy]\nredact = {v}\n")
                .parse()
                .map_err(|e| anyhow!("{e}"))?;
            let rules =
                memtrail_runtime::privacy::redact_rules(&doc).map_err(|e| anyhow!("{e}"))?;
            memtrail_runtime::redact::user::UserRules::compile(&rules)
                .map_err(|e| anyhow!("{e}"))?;
            Ok(v)
        }
        Kind::Number(min, max) => match value.trim().parse::<i64>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n.into()),
            _ => bail!("{} must be a whole number from {min} to {max}", s.key),
        },
        Kind::Ip => value
            .trim()
            .parse::<std::net::IpAddr>()
            .map(|ip| ip.to_string().into())
            .map_err(|_| anyhow!("{} must be an IP address, like 127.0.0.1 or ::1", s.key)),
    }
}

/// Writes `new` (the whole file's text) after [`validate`]; the file is left as it was when
/// it does not pass.
fn write_checked(path: &Path, new: &str) -> Result<()> {
    validate(new).map_err(|e| {
        anyhow!(
            "memtrail's config {} would be wrong: {e}; nothing changed",
            path.display()
        )
    })?;
    config::write_atomic(path, new).map_err(|e| anyhow!("{e}"))
}

/// `memtrail config set KEY VALUE`.
pub fn set(key: &str, value: &str) -> Result<ExitCode> {
    let s = setting(key)?;
    let v = parse_value(s, value)?;
    let path = config_path();
    let text = read_file(&path)?.unwrap_or_default();
    let new = config::set(&text, key, v)
        .map_err(|e| anyhow!("memtrail's config {}: {e}; nothing changed", path.display()))?;
    write_checked(&path, &new)?;
    let (shown, _) = value_of(s, Some(&new), &StoreLocation::from_env())?;
    eprintln!(
        "{key} = {} in {}",
        crate::output::terminal_safe(&shown.unwrap_or_default()),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `memtrail config unset KEY`: back to its default.
pub fn unset(key: &str) -> Result<ExitCode> {
    let s = setting(key)?;
    if s.kind == Kind::Env {
        parse_value(s, "")?;
    }
    let path = config_path();
    let Some(text) = read_file(&path)? else {
        eprintln!("{key} is not set (there is no {})", path.display());
        return Ok(ExitCode::SUCCESS);
    };
    let new = config::unset(&text, key)
        .map_err(|e| anyhow!("memtrail's config {}: {e}; nothing changed", path.display()))?;
    if new == text {
        eprintln!("{key} is not set in {}", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    write_checked(&path, &new)?;
    eprintln!("{key} removed from {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// `memtrail config path`.
pub fn path() -> Result<ExitCode> {
    out!("{}", config_path().display());
    Ok(ExitCode::SUCCESS)
}

/// `memtrail config env`: every environment variable memtrail reads (as Markdown tables with
/// `markdown`).
pub fn env(markdown: bool) -> Result<ExitCode> {
    if markdown {
        outn!("{}", crate::environment::markdown());
    } else {
        out!("{}", crate::environment::help_text());
    }
    Ok(ExitCode::SUCCESS)
}

/// The commented default file (`memtrail config default`): every file setting with its help,
/// commented out, under its table.
pub fn default_file() -> String {
    let mut out = String::from(
        "# memtrail's config file: ~/.config/memtrail/config.toml (mode 0600; `memtrail config path`\n\
         # says where it is here). Every setting is optional and shown with its default, commented\n\
         # out; `memtrail config show` lists what is in force and where it comes from.\n",
    );
    let db = StoreLocation::Sqlite("".into());
    let mut table = "";
    for s in SETTINGS.iter().filter(|s| s.kind != Kind::Env) {
        let (t, name) = s.key.split_once('.').unwrap_or(("", s.key));
        if t != table {
            out.push_str(&format!("\n[{t}]\n"));
            table = t;
        } else {
            out.push('\n');
        }
        for line in wrap(s.help, 96) {
            out.push_str(&format!("# {line}\n"));
        }
        let example = match s.key {
            "aider.roots" => Some("[\"~/src\"]".to_string()),
            "sync.label" => Some("\"laptop\"".to_string()),
            "sync.url" => Some("\"postgres://me@db.example/memtrail?sslmode=verify-full\"".into()),
            "sync.machine" => Some("\"5f0c3e2a9b1d4c7e8a6f2b3c4d5e6f70\"".into()),
            "embed.url" => Some("\"http://127.0.0.1:11434/v1\"".into()),
            "embed.model" => Some("\"nomic-embed-text\"".into()),
            "embed.api_key_env" => Some("\"OPENAI_API_KEY\"".into()),
            "embed.dim" => Some("768".into()),
            "privacy.redact" => {
                Some("[{ name = \"acme-ticket\", pattern = \"ACME-[0-9]{6}\" }]".into())
            }
            k => default_of(k, &db),
        };
        out.push_str(&format!(
            "# {name} = {}\n",
            example.unwrap_or_else(|| "\"\"".into())
        ));
    }
    out
}

/// `text` cut into lines of at most `width` characters at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for w in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + w.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(w);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// `memtrail config default`.
pub fn default() -> Result<ExitCode> {
    outn!("{}", default_file());
    Ok(ExitCode::SUCCESS)
}

/// `memtrail config edit`: the file (or, when there is none, the commented default) in
/// `$VISUAL`, else `$EDITOR`, else `vi`, in a copy next to it; the copy replaces the file only
/// when it passes [`validate`]. Otherwise the file stays as it was, the problem is said, and
/// the edited copy is kept as `config.toml.rejected` (mode 0600).
pub fn edit() -> Result<ExitCode> {
    let path = config_path();
    let text = read_file(&path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    if !dir.exists() {
        // Made with mode 0700, as write_atomic makes it.
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(dir)?;
    }
    let start = text.clone().unwrap_or_else(default_file);
    let mut tmp = tempfile::Builder::new()
        .prefix("config.")
        .suffix(".toml")
        .tempfile_in(dir)?;
    std::io::Write::write_all(&mut tmp, start.as_bytes())?;
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()))
        .unwrap_or_else(|| "vi".into());
    // As git runs it: through the shell, so `code --wait` or `emacs -nw` work.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(tmp.path())
        .status()
        .map_err(|e| anyhow!("cannot run the editor `{editor}`: {e}"))?;
    if !status.success() {
        bail!(
            "the editor `{editor}` failed ({status}); {} was left as it was",
            path.display()
        );
    }
    let edited = std::fs::read_to_string(tmp.path())?;
    if text.as_deref() == Some(edited.as_str()) || (text.is_none() && edited == start) {
        eprintln!("no change to {}", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    // Owner-only whatever the editor did to the file (one that saves by writing a new file
    // leaves it with the umask's mode).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o600))?;
    }
    if let Err(e) = validate(&edited) {
        let kept = path.with_extension("toml.rejected");
        tmp.persist(&kept).map_err(|e| anyhow!("{}", e.error))?;
        bail!(
            "the edited config is wrong: {e}; {} was left as it was (your edit is in {}: fix it there and copy it over, or run `memtrail config edit` again)",
            path.display(),
            kept.display()
        );
    }
    tmp.as_file().sync_all()?;
    tmp.persist(&path).map_err(|e| anyhow!("{}", e.error))?;
    eprintln!("saved {}", path.display());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_file_is_valid_and_means_the_defaults() {
        let text = default_file();
        assert_eq!(validate(&text).unwrap(), Config::default());
        // Every file setting is in it, under its table.
        for s in SETTINGS.iter().filter(|s| s.kind != Kind::Env) {
            let name = s.key.rsplit('.').next().unwrap();
            assert!(text.contains(&format!("\n# {name} = ")), "{}", s.key);
        }
        assert!(
            text.contains("\n[sync]\n")
                && text.contains("\n[embed]\n")
                && text.contains("\n[web]\n")
        );
        // Uncommenting every setting gives a valid file with those values.
        let on: String = text
            .lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(kv) if kv.contains(" = ") && !kv.contains("  ") => format!("{kv}\n"),
                _ => format!("{l}\n"),
            })
            .collect();
        let c = validate(&on).unwrap();
        assert_eq!(c.web.port, Some(memtrail_web::DEFAULT_PORT));
        assert_eq!(c.embed.dim, Some(768));
        assert_eq!(c.sync.label.as_deref(), Some("laptop"));
    }

    #[test]
    fn values_are_parsed_by_kind() {
        let v = |k: &str, x: &str| parse_value(setting(k).unwrap(), x).map(|v| v.to_string());
        assert_eq!(v("exclude", "~/a").unwrap(), "[\"~/a\"]");
        assert_eq!(
            v("exclude", "[\"/a\", \"/b\"]").unwrap(),
            "[\"/a\", \"/b\"]"
        );
        assert!(v("exclude", "[1").is_err());
        assert_eq!(v("web.port", "8080").unwrap(), "8080");
        assert_eq!(
            v("web.port", "70000").unwrap_err().to_string(),
            "web.port must be a whole number from 0 to 65535"
        );
        assert_eq!(v("web.bind", "::1").unwrap(), "\"::1\"");
        assert!(v("web.bind", "localhost").is_err());
        assert_eq!(v("sync.label", "a \"b\"").unwrap(), "'a \"b\"'");
        assert_eq!(
            v("store.path", "/x").unwrap_err().to_string(),
            "store.path comes from the environment: set MEMTRAIL_STORE or MEMTRAIL_DB (or pass --store)"
        );
        assert!(setting("nope").is_err());
        assert_eq!(
            v("sync.label", "a\nb").unwrap_err().to_string(),
            "sync.label \"a\\nb\" is not a usable machine label: it holds a control character (a newline, a tab, ESC, …); give a short name such as `laptop` (it is shown in `sessions list` and `status`)"
        );
    }

    #[test]
    fn validate_applies_every_readers_rules() {
        assert!(validate("").is_ok());
        let e = |t: &str| validate(t).unwrap_err();
        assert!(e("exclude = [\"rel\"]\n").contains("not an absolute path"));
        assert!(e("[sync]\nmachine = \"xyz\"\n").contains("32 lowercase hex digits"));
        assert!(
            e("[embed]\nurl = \"http://example.com/v1\"\nmodel = \"m\"\n").contains("plain http")
        );
        assert!(e("[embed]\nurl = \"https://x/v1\"\n").contains("model is missing"));
        assert!(e("[web]\nport = -1\n").contains("port"));
    }

    #[test]
    fn unknown_keys_are_found() {
        assert_eq!(
            unknown_keys(
                "exclude = []\nexclud = 1\n[sync]\nurl = \"u\"\nlable = \"x\"\n[web]\n[webb]\nport = 1\n[other]\n"
            ),
            ["exclud", "sync.lable", "webb.port", "other"]
        );
        assert!(unknown_keys("sync = { label = \"a\" }\n").is_empty());
        assert!(unknown_keys("x = [\n").is_empty());
    }

    #[test]
    fn toml_values_become_json() {
        assert_eq!(toml_to_json("[\"/a\"]"), json!(["/a"]));
        assert_eq!(toml_to_json("8080"), json!(8080));
        assert_eq!(toml_to_json("\"x\""), json!("x"));
    }
}
