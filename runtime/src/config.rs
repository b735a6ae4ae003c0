//! memtrail's config file, typed: `$XDG_CONFIG_HOME/memtrail/config.toml`
//! (`~/.config/memtrail/config.toml`, [`crate::privacy::config_path`]), TOML (<https://toml.io>
//! 1.0). Every key is optional; unknown keys are ignored (room for later settings).
//!
//! ```toml
//! exclude = ["~/secret-project"]     # privacy: projects never captured (crate::privacy)
//!
//! [privacy]                          # the user's redaction rules (crate::redact::user)
//! redact = [{ name = "acme-ticket", pattern = "ACME-[0-9]{6}" }]
//!
//! [aider]                            # where `memtrail import` finds Aider's chat logs
//! roots = ["~/src"]
//!
//! [sync]                             # memtrail sync (written by `memtrail sync --init`)
//! url = "postgres://me@db.example/memtrail?sslmode=verify-full"
//! machine = "5f0c3e2a9b1d4c7e8a6f2b3c4d5e6f70"
//! label = "laptop"
//!
//! [embed]                            # an OpenAI-compatible embeddings endpoint
//! url = "http://127.0.0.1:11434/v1"
//! model = "nomic-embed-text"
//! api_key_env = "OPENAI_API_KEY"
//! dim = 768
//!
//! [web]                              # memtrail web's defaults (its flags win)
//! bind = "127.0.0.1"
//! port = 7373
//! ```
//!
//! [`Config::parse`] checks the types only; each table's own rules (an absolute `exclude`
//! path, a redaction rule that compiles, a 32-hex-digit machine id, an `https://` endpoint)
//! are its reader's
//! ([`crate::privacy::Privacy::parse`], `memtrail_pg::settings`, `memtrail_embed::remote`).
//! [`set`] and [`unset`] edit the file's text in place with `toml_edit`: comments, key order
//! and layout stay; [`write_atomic`] replaces the file (mode 0600, folder 0700).

use serde::{Deserialize, Serialize};
use std::path::Path;

/// The whole config file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Project folders never captured: absolute paths or `~/…` (see [`crate::privacy`]).
    pub exclude: Vec<String>,
    /// `[privacy]`: the user's redaction rules.
    pub privacy: PrivacyConfig,
    /// `[aider]`: where `memtrail import` looks for Aider's chat logs.
    pub aider: AiderConfig,
    /// `[sync]`: the PostgreSQL database `memtrail sync` pushes to and pulls from.
    pub sync: SyncConfig,
    /// `[embed]`: an embeddings endpoint instead of the local model.
    pub embed: EmbedConfig,
    /// `[web]`: `memtrail web`'s defaults.
    pub web: WebConfig,
}

/// `[privacy]` (the excluded projects stay the top-level `exclude`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PrivacyConfig {
    /// Redaction rules applied after the built-in ones (see [`crate::redact::user`]).
    pub redact: Vec<RedactRule>,
}

/// One rule of `[privacy] redact`: every match of `pattern` (the `regex` crate's syntax) is
/// stored as `[redacted:<name>]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedactRule {
    /// The marker's name: lowercase letters, digits, `-`, `_`.
    pub name: String,
    /// The regular expression.
    pub pattern: String,
}

/// `[aider]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AiderConfig {
    /// Folders searched for `.aider.chat.history.md` (absolute or `~/…`; see
    /// `memtrail_adapters::aider`).
    pub roots: Vec<String>,
}

/// `[sync]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SyncConfig {
    /// The PostgreSQL URL (libpq's form; may hold a password: never print it unmasked).
    pub url: Option<String>,
    /// This machine's id: 32 lowercase hex digits.
    pub machine: Option<String>,
    /// This machine's label as the others show it (default: the hostname).
    pub label: Option<String>,
}

/// `[embed]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EmbedConfig {
    /// The API's base URL: memtrail POSTs to `{url}/embeddings`.
    pub url: Option<String>,
    /// The endpoint's model name.
    pub model: Option<String>,
    /// The name of the environment variable holding the API key (not the key).
    pub api_key_env: Option<String>,
    /// Values per vector (1 to 16,384); learned from one request when absent.
    pub dim: Option<u32>,
}

/// `[web]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WebConfig {
    /// The address `memtrail web` listens on when `--bind` is not given.
    pub bind: Option<std::net::IpAddr>,
    /// The port `memtrail web` listens on when `--port` is not given (0: the system picks).
    pub port: Option<u16>,
}

impl Config {
    /// The typed settings of a config file's text.
    ///
    /// Errors: the text is not TOML, or a key holds a value of the wrong type (the message,
    /// on one line, names the key).
    pub fn parse(text: &str) -> Result<Config, String> {
        toml_edit::de::from_str(text).map_err(|e| one_line(&e.to_string()))
    }

    /// [`Config::parse`] of the file at `path`; the default config when the file does not
    /// exist.
    ///
    /// Errors: a message naming the file.
    pub fn load_from(path: &Path) -> Result<Config, String> {
        match read(path)? {
            None => Ok(Config::default()),
            Some(t) => {
                Config::parse(&t).map_err(|e| format!("memtrail's config {}: {e}", path.display()))
            }
        }
    }
}

/// Largest config file read (bytes): far more than any list of settings and rules needs.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// The text of the file at `path`, `None` when it does not exist. Only a regular file of at
/// most [`MAX_CONFIG_BYTES`] is read: every hook reads this file, and one that is a FIFO (an
/// open that never returns) or a link to `/dev/zero` (a read that never ends) must fail it at
/// once, not hang it or fill the memory.
///
/// Errors: it cannot be read, is not a regular file or is too large (a message naming the file).
pub fn read(path: &Path) -> Result<Option<String>, String> {
    use std::io::ErrorKind;
    let shown = path.display();
    match memtrail_adapters::paths::read_small_text(path, MAX_CONFIG_BYTES) {
        Ok(t) => Ok(Some(t)),
        Err(e) => match e.kind() {
            ErrorKind::NotFound => Ok(None),
            ErrorKind::InvalidInput => Err(format!(
                "memtrail's config {shown} is not a regular file; not read"
            )),
            ErrorKind::FileTooLarge => Err(format!(
                "memtrail's config {shown} is larger than {MAX_CONFIG_BYTES} bytes; not read"
            )),
            _ => Err(format!("cannot read memtrail's config {shown}: {e}")),
        },
    }
}

/// A TOML error message on one line.
fn one_line(s: &str) -> String {
    s.trim_end()
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The TOML document of `text`.
fn document(text: &str) -> Result<toml_edit::DocumentMut, String> {
    text.parse::<toml_edit::DocumentMut>()
        .map_err(|e| one_line(&e.to_string()))
}

/// `text` with the dotted `key` (`exclude`, `sync.url`: a top-level key or one level of table)
/// set to `value`. Everything else keeps its bytes: comments, order, layout; a key already
/// there keeps its place and the comment after its value; a new table `[t]` is added at the
/// end. The result is not validated (see [`Config::parse`]).
///
/// Errors: `text` is not TOML; `key` has more than two parts; the table part names something
/// that is not a table.
pub fn set(text: &str, key: &str, value: toml_edit::Value) -> Result<String, String> {
    let mut doc = document(text)?;
    let (table, name) = split_key(key)?;
    let slot = match table {
        None => doc.as_table_mut() as &mut dyn toml_edit::TableLike,
        Some(t) => {
            if !doc.contains_key(t) {
                doc[t] = toml_edit::table();
            }
            doc[t]
                .as_table_like_mut()
                .ok_or_else(|| format!("`{t}` is not a table (write it as [{t}])"))?
        }
    };
    let mut value = value;
    match slot.get_mut(name) {
        Some(old) => {
            if let Some(v) = old.as_value() {
                let d = v.decor();
                value
                    .decor_mut()
                    .set_prefix(d.prefix().cloned().unwrap_or_else(|| " ".into()));
                value
                    .decor_mut()
                    .set_suffix(d.suffix().cloned().unwrap_or_else(|| "".into()));
            }
            *old = toml_edit::Item::Value(value);
        }
        None => {
            slot.insert(name, toml_edit::Item::Value(value));
        }
    }
    Ok(doc.to_string())
}

/// `text` without the dotted `key` (see [`set`]); the same text when it is not there.
///
/// Errors: `text` is not TOML; `key` has more than two parts.
pub fn unset(text: &str, key: &str) -> Result<String, String> {
    let mut doc = document(text)?;
    let (table, name) = split_key(key)?;
    let slot = match table {
        None => Some(doc.as_table_mut() as &mut dyn toml_edit::TableLike),
        Some(t) => doc.get_mut(t).and_then(|i| i.as_table_like_mut()),
    };
    match slot {
        Some(s) if s.contains_key(name) => {
            s.remove(name);
            // A `[table]` left with nothing in it, and no comment of the user's, goes too.
            if let Some(t) = table
                && doc.get(t).and_then(|i| i.as_table()).is_some_and(|tb| {
                    tb.is_empty()
                        && !tb
                            .decor()
                            .prefix()
                            .and_then(|p| p.as_str())
                            .unwrap_or("")
                            .contains('#')
                        && !tb
                            .decor()
                            .suffix()
                            .and_then(|p| p.as_str())
                            .unwrap_or("")
                            .contains('#')
                })
            {
                doc.remove(t);
            }
            Ok(doc.to_string())
        }
        _ => Ok(text.to_string()),
    }
}

/// The value of the dotted `key` in the TOML `text` as written (TOML syntax, without its
/// comment), `None` when absent.
///
/// Errors: `text` is not TOML.
pub fn raw(text: &str, key: &str) -> Result<Option<String>, String> {
    let doc = document(text)?;
    let (table, name) = split_key(key)?;
    let item = match table {
        None => doc.get(name),
        Some(t) => doc
            .get(t)
            .and_then(|i| i.as_table_like())
            .and_then(|t| t.get(name)),
    };
    // `[[t.k]]` tables are shown as the array of inline tables they mean.
    let value = item.and_then(|i| {
        i.as_value().cloned().or_else(|| {
            i.as_array_of_tables().map(|a| {
                let mut arr = a.clone().into_array();
                arr.fmt();
                toml_edit::Value::Array(arr)
            })
        })
    });
    Ok(value.map(|mut v| {
        v.decor_mut().clear();
        v.to_string()
    }))
}

fn split_key(key: &str) -> Result<(Option<&str>, &str), String> {
    let parts: Vec<&str> = key.split('.').collect();
    match parts[..] {
        [k] if !k.is_empty() => Ok((None, k)),
        [t, k] if !t.is_empty() && !k.is_empty() => Ok((Some(t), k)),
        _ => Err(format!("`{key}` is not a setting's name (like sync.url)")),
    }
}

/// Replace the file at `path` with `text`: a temporary file in the same folder (mode 0600),
/// synced, then renamed over it, so the file is whole before or after, never half-written. A
/// folder this creates has mode 0700.
///
/// Errors: a message naming the file.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    let io = |e: std::io::Error| format!("cannot write memtrail's config {}: {e}", path.display());
    let dir = path.parent().unwrap_or(Path::new("."));
    if !dir.as_os_str().is_empty() && !dir.exists() {
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(dir).map_err(io)?;
    }
    // NamedTempFile is created with mode 0600.
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    tmp.write_all(text.as_bytes()).map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_table_and_ignores_unknown_keys() {
        let c = Config::parse(
            "exclude = [\"~/x\"]\nfuture = 1\n[sync]\nurl = \"postgres://db/m\"\n[embed]\ndim = 768\n[web]\nbind = \"::1\"\nport = 8080\n",
        )
        .unwrap();
        assert_eq!(c.exclude, vec!["~/x".to_string()]);
        assert_eq!(c.sync.url.as_deref(), Some("postgres://db/m"));
        assert_eq!(c.sync.machine, None);
        assert_eq!(c.embed.dim, Some(768));
        assert_eq!(c.web.bind, Some("::1".parse().unwrap()));
        assert_eq!(c.web.port, Some(8080));
        assert_eq!(Config::parse("").unwrap(), Config::default());
        let rule = RedactRule {
            name: "acme-ticket".into(),
            pattern: "ACME-[0-9]{6}".into(),
        };
        let c = Config::parse(
            "[privacy]\nredact = [{ name = \"acme-ticket\", pattern = \"ACME-[0-9]{6}\" }]\n",
        )
        .unwrap();
        assert_eq!(c.privacy.redact, vec![rule.clone()]);
        let c = Config::parse(
            "[[privacy.redact]]\nname = \"acme-ticket\"\npattern = \"ACME-[0-9]{6}\"\n",
        )
        .unwrap();
        assert_eq!(c.privacy.redact, vec![rule]);
    }

    #[test]
    fn a_wrong_type_names_the_key() {
        let e = Config::parse("[web]\nport = \"x\"\n").unwrap_err();
        assert!(e.contains("port"), "{e}");
        assert!(!e.contains('\n'));
        let e = Config::parse("[web]\nport = 70000\n").unwrap_err();
        assert!(e.contains("port"), "{e}");
        let e = Config::parse("exclude = \"/x\"\n").unwrap_err();
        assert!(e.contains("exclude"), "{e}");
    }

    #[test]
    fn set_keeps_comments_and_layout() {
        let text = "# mine\nexclude = [\"/a\"]   # keep me\n\n[sync]  # sync here\nlabel = \"old\" # the label\n";
        let out = set(text, "sync.label", toml_edit::Value::from("new")).unwrap();
        assert_eq!(
            out,
            "# mine\nexclude = [\"/a\"]   # keep me\n\n[sync]  # sync here\nlabel = \"new\" # the label\n"
        );
        let out = set(&out, "web.port", toml_edit::Value::from(8080i64)).unwrap();
        assert_eq!(
            out,
            "# mine\nexclude = [\"/a\"]   # keep me\n\n[sync]  # sync here\nlabel = \"new\" # the label\n\n[web]\nport = 8080\n"
        );
        let out = unset(&out, "sync.label").unwrap();
        assert_eq!(
            out,
            "# mine\nexclude = [\"/a\"]   # keep me\n\n[sync]  # sync here\n\n[web]\nport = 8080\n"
        );
        assert_eq!(unset(&out, "embed.url").unwrap(), out);
        assert_eq!(raw(&out, "web.port").unwrap().as_deref(), Some("8080"));
        // `[web]` left empty goes; `[sync]`, empty but commented, stays.
        assert_eq!(
            unset(&out, "web.port").unwrap(),
            "# mine\nexclude = [\"/a\"]   # keep me\n\n[sync]  # sync here\n"
        );
        assert_eq!(raw(text, "exclude").unwrap().as_deref(), Some("[\"/a\"]"));
        assert_eq!(raw(text, "embed.url").unwrap(), None);
        assert_eq!(
            raw(
                "[[privacy.redact]]\nname = \"a\"\npattern = \"x\"\n",
                "privacy.redact"
            )
            .unwrap()
            .as_deref(),
            Some("[{ name = \"a\", pattern = \"x\" }]")
        );
        assert!(set("x = [\n", "x", toml_edit::Value::from(1i64)).is_err());
        assert!(set("sync = 1\n", "sync.url", toml_edit::Value::from("u")).is_err());
        assert!(set("", "a.b.c", toml_edit::Value::from("u")).is_err());
    }

    /// Every hook reads the config: a FIFO, a link to /dev/zero or a huge file where it
    /// should be fails the read at once (attack review: the FIFO hung every hook until its
    /// agent killed it, /dev/zero grew a hook past 12 GB of memory).
    #[cfg(unix)]
    #[test]
    fn only_a_regular_file_of_bounded_size_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let within = |path: std::path::PathBuf| {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ = tx.send(read(&path));
            });
            rx.recv_timeout(std::time::Duration::from_secs(5))
                .expect("the read must return at once")
        };
        let fifo = dir.path().join("fifo.toml");
        memtrail_testkit::mkfifo(&fifo);
        let e = within(fifo).unwrap_err();
        assert!(e.contains("is not a regular file"), "{e}");
        let zero = dir.path().join("zero.toml");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = within(zero).unwrap_err();
        assert!(e.contains("is not a regular file"), "{e}");
        let big = dir.path().join("big.toml");
        std::fs::write(&big, "# x\n".repeat(300_000)).unwrap();
        let e = within(big).unwrap_err();
        assert!(e.contains("is larger than 1048576 bytes"), "{e}");
        assert_eq!(within(dir.path().join("none.toml")), Ok(None));
        let ok = dir.path().join("ok.toml");
        std::fs::write(&ok, "exclude = []\n").unwrap();
        assert_eq!(within(ok), Ok(Some("exclude = []\n".to_string())));
    }

    #[test]
    fn set_works_in_an_inline_table() {
        let out = set("sync = { url = \"u\" }\n", "sync.label", "l".into()).unwrap();
        // toml_edit keeps the space that was before `}` after `url`'s value.
        assert_eq!(out, "sync = { url = \"u\" , label = \"l\" }\n");
        assert_eq!(
            Config::parse(&out).unwrap().sync.label.as_deref(),
            Some("l")
        );
    }

    #[cfg(unix)]
    #[test]
    fn write_atomic_is_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new/config.toml");
        write_atomic(&path, "a = 1\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a = 1\n");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
    }
}
