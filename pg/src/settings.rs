//! The `[sync]` table of memtrail's config file (`~/.config/memtrail/config.toml`, see
//! `memtrail_runtime::privacy::config_path`), written by `memtrail sync --init`:
//!
//! ```toml
//! [sync]
//! url = "postgres://me@db.example/memtrail?sslmode=verify-full"
//! machine = "5f0c3e2a9b1d4c7e8a6f2b3c4d5e6f70"
//! label = "laptop"
//! ```
//!
//! The file may hold a password (in `url`): it is written with mode 0600 (its folder 0700),
//! and everything else in it (`exclude = […]`, comments, layout) is kept as it was.

use std::io::Read;
use std::path::Path;

use crate::{Error, Result};

/// The `[sync]` settings. Every field is optional in the file; [`SyncSettings::url`] is what
/// makes sync configured.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SyncSettings {
    /// The PostgreSQL URL (may hold a password: never print it, use [`crate::mask_url`]).
    pub url: Option<String>,
    /// This machine's id: 32 lowercase hex digits ([`new_machine_id`]).
    pub machine: Option<String>,
    /// This machine's label (the hostname unless `--label` said otherwise).
    pub label: Option<String>,
}

impl std::fmt::Debug for SyncSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncSettings")
            .field("url", &self.url.as_deref().map(crate::mask_url))
            .field("machine", &self.machine)
            .field("label", &self.label)
            .finish()
    }
}

impl SyncSettings {
    /// The `[sync]` table of the config file at `path`; all `None` when the file or the table
    /// does not exist.
    ///
    /// Errors: [`Error::Invalid`] naming the file when it cannot be read, is not TOML, or
    /// `[sync]` holds a non-string `url`/`machine`/`label` or a `machine` that is not 32
    /// lowercase hex digits.
    pub fn load(path: &Path) -> Result<SyncSettings> {
        let Some(text) = memtrail_runtime::config::read(path).map_err(Error::Invalid)? else {
            return Ok(SyncSettings::default());
        };
        Self::parse(&text)
            .map_err(|m| Error::Invalid(format!("memtrail's config {}: {m}", path.display())))
    }

    /// The `[sync]` table of a config file's text (see [`SyncSettings::load`]); all `None`
    /// when there is none.
    ///
    /// Errors: a message (without the file's name): not TOML, `sync` not a table, a
    /// non-string field, a `machine` that is not 32 lowercase hex digits.
    pub fn parse(text: &str) -> std::result::Result<SyncSettings, String> {
        let doc: toml_edit::DocumentMut = text
            .parse()
            .map_err(|e: toml_edit::TomlError| e.to_string().trim_end().replace('\n', " "))?;
        let Some(table) = doc.get("sync") else {
            return Ok(SyncSettings::default());
        };
        let table = table
            .as_table_like()
            .ok_or_else(|| "`sync` must be a table ([sync])".to_string())?;
        let field = |k: &str| -> std::result::Result<Option<String>, String> {
            match table.get(k) {
                None => Ok(None),
                Some(v) => v
                    .as_str()
                    .map(|s| Some(s.to_string()))
                    .ok_or_else(|| format!("`sync.{k}` must be a string")),
            }
        };
        let settings = SyncSettings {
            url: field("url")?,
            machine: field("machine")?,
            label: field("label")?,
        };
        if let Some(m) = &settings.machine
            && !is_machine_id(m)
        {
            return Err(format!(
                "`sync.machine` is {m:?}, not 32 lowercase hex digits (delete it and run \
                 `memtrail sync --init` again to make a new one)"
            ));
        }
        Ok(settings)
    }

    /// Writes `url`, `machine` and `label` into the `[sync]` table of the config file at
    /// `path` (created with its folders when missing), keeping everything else in the file as
    /// it was. The file is replaced atomically (a temp file in the same folder, renamed) and
    /// has mode 0600; a folder this creates has mode 0700.
    ///
    /// Errors: [`Error::Invalid`] when the existing file is not TOML or cannot be read or
    /// written.
    pub fn save(&self, path: &Path) -> Result<()> {
        let io = |e: std::io::Error| {
            Error::Invalid(format!(
                "cannot write memtrail's config {}: {e}",
                path.display()
            ))
        };
        let text = match std::fs::File::open(path) {
            Ok(mut f) => {
                let mut s = String::new();
                f.read_to_string(&mut s).map_err(io)?;
                s
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(io(e)),
        };
        let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
            Error::Invalid(format!(
                "memtrail's config {}: {}",
                path.display(),
                e.to_string().trim_end().replace('\n', " ")
            ))
        })?;
        if !doc.contains_key("sync") || !doc["sync"].is_table() {
            doc["sync"] = toml_edit::table();
        }
        for (k, v) in [
            ("url", &self.url),
            ("machine", &self.machine),
            ("label", &self.label),
        ] {
            match v {
                Some(v) => doc["sync"][k] = toml_edit::value(v.as_str()),
                None => {
                    if let Some(t) = doc["sync"].as_table_mut() {
                        t.remove(k);
                    }
                }
            }
        }
        memtrail_runtime::config::write_atomic(path, &doc.to_string()).map_err(Error::Invalid)
    }
}

/// Whether `s` is a machine id: 32 lowercase hex digits.
pub fn is_machine_id(s: &str) -> bool {
    s.len() == 32
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A new machine id: 16 bytes of `/dev/urandom` as 32 lowercase hex digits.
///
/// Errors: [`Error::Invalid`] when `/dev/urandom` cannot be read.
pub fn new_machine_id() -> Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| Error::Invalid(format!("cannot read /dev/urandom for a machine id: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// This machine's host name (`/proc/sys/kernel/hostname`, else `/etc/hostname`, else
/// `HOSTNAME`), or `unknown`: [`memtrail_runtime::machine::hostname`].
pub fn hostname() -> String {
    memtrail_runtime::machine::hostname()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn save_keeps_the_rest_of_the_file_and_makes_it_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memtrail/config.toml");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let before = "# my settings\nexclude = [\"~/secret\"]  # keep\n\n[other]\nx = 1\n";
        std::fs::write(&path, before).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let s = SyncSettings {
            url: Some("postgres://me:pw@db/memtrail".into()),
            machine: Some("0123456789abcdef0123456789abcdef".into()),
            label: Some("laptop".into()),
        };
        s.save(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!(
                "{before}\n[sync]\nurl = \"postgres://me:pw@db/memtrail\"\n\
                 machine = \"0123456789abcdef0123456789abcdef\"\nlabel = \"laptop\"\n"
            )
        );
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(SyncSettings::load(&path).unwrap(), s);
        assert!(!format!("{s:?}").contains("pw@"));
        // A new folder is 0700.
        let fresh = dir.path().join("new/memtrail/config.toml");
        s.save(&fresh).unwrap();
        let mode = std::fs::metadata(fresh.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(SyncSettings::load(&fresh).unwrap(), s);
    }

    #[test]
    fn load_reads_nothing_from_a_missing_file_and_refuses_bad_values() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        assert_eq!(SyncSettings::load(&path).unwrap(), SyncSettings::default());
        std::fs::write(&path, "exclude = []\n").unwrap();
        assert_eq!(SyncSettings::load(&path).unwrap(), SyncSettings::default());
        std::fs::write(&path, "[sync]\nmachine = \"XYZ\"\n").unwrap();
        assert_eq!(
            SyncSettings::load(&path).unwrap_err().to_string(),
            format!(
                "memtrail's config {}: `sync.machine` is \"XYZ\", not 32 lowercase hex digits \
                 (delete it and run `memtrail sync --init` again to make a new one)",
                path.display()
            )
        );
        std::fs::write(&path, "[sync]\nurl = 3\n").unwrap();
        assert_eq!(
            SyncSettings::load(&path).unwrap_err().to_string(),
            format!(
                "memtrail's config {}: `sync.url` must be a string",
                path.display()
            )
        );
    }

    #[test]
    fn machine_ids_are_32_hex_digits_and_differ() {
        let a = new_machine_id().unwrap();
        let b = new_machine_id().unwrap();
        assert!(is_machine_id(&a) && is_machine_id(&b), "{a} {b}");
        assert_ne!(a, b);
        assert!(!is_machine_id("0123456789ABCDEF0123456789abcdef"));
        assert!(!hostname().is_empty());
    }
}
