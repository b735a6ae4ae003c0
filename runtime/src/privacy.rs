//! Excluded projects: sessions whose project directory is excluded are never stored, neither by
//! hooks nor by `memtrail import`.
//!
//! A project is excluded when either
//! - memtrail's config file (`$XDG_CONFIG_HOME/memtrail/config.toml`, i.e.
//!   `~/.config/memtrail/config.toml`, see [`config_path`]) lists it, or a folder above it, in
//!   `exclude`, an array of paths (absolute, or starting with `~/`):
//!   ```toml
//!   exclude = ["/work/client-x", "~/secret-project"]
//!   ```
//! - or a file named `.memtrailignore` exists in the project directory or in any folder above
//!   it, up to and including the home directory (up to `/` for a project outside the home). The
//!   file's presence is what counts: an empty file excludes the folder it is in and everything
//!   below it. Its content is not read (keep notes in it if you like). It counts only when it
//!   belongs to the user memtrail runs as (or to root) and its folder is not world-writable
//!   (see [`ignore_file_trusted`]): a file another local user planted, e.g. in `/tmp`, does not
//!   switch capture off.
//!
//! A session is checked when its project directory is known (the transcript's `cwd`, the
//! database's project). When excluded, nothing of it is written; the transcript's cursor still
//! advances (marked "excluded", see [`SkipReason`]) so the file is not parsed again
//! at every hook. When the exclusion is lifted, the next ingest reads that transcript again from
//! its start. What was stored before a project was excluded stays until it is deleted
//! (`memtrail sessions delete ID`).
//!
//! The same file holds the user's own redaction rules, applied after the built-in ones
//! everywhere text is redacted (see [`crate::redact::user`]):
//! ```toml
//! [privacy]
//! redact = [{ name = "acme-ticket", pattern = "ACME-[0-9]{6}" }]
//! ```
//!
//! A config file that cannot be read or parsed, or a redaction rule that does not compile, is
//! an error: the ingest stores nothing and leaves its cursor where it was (nothing is lost; it
//! catches up once the file is fixed).

use crate::redact::user::{RuleText, UserRules};
use crate::{Error, Result};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The name of the per-project exclusion file.
pub const IGNORE_FILE: &str = ".memtrailignore";

/// `$XDG_CONFIG_HOME/memtrail/config.toml` (`~/.config/memtrail/config.toml`).
pub fn config_path() -> PathBuf {
    memtrail_adapters::paths::xdg_config_home()
        .join("memtrail")
        .join("config.toml")
}

/// memtrail's own settings, from [`config_path`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Privacy {
    /// Excluded folders (absolute, `~` expanded, `.`/`..` resolved lexically).
    pub exclude: Vec<PathBuf>,
    /// The home directory: where the search for `.memtrailignore` stops.
    pub home: PathBuf,
    /// Whether sync is configured: the config's `[sync]` table has a non-empty `url` string
    /// (the URL itself is not kept here; `memtrail sync` reads it). Hooks then start a
    /// background sync at a session's end (see [`crate::autosync`]).
    pub sync_configured: bool,
    /// The user's redaction rules (`[privacy] redact`), compiled; [`Privacy::load`] installs
    /// them for [`crate::redact::redact`] ([`crate::redact::user`]).
    pub redact: Arc<UserRules>,
}

impl Privacy {
    /// The settings from the config file at [`config_path`] (none when it does not exist), with
    /// the process's home directory.
    ///
    /// Errors: [`Error::Invalid`] naming the file, for a file that cannot be read, is not TOML,
    /// whose `exclude` is not an array of strings holding absolute or `~/` paths, or whose
    /// `[privacy] redact` rules are not well formed or do not compile
    /// ([`UserRules::compile`]). A caller that writes text then stores nothing (fail closed).
    ///
    /// Installs the file's redaction rules as the process's ([`crate::redact::user::install`]):
    /// whatever is redacted after this call applies them.
    ///
    /// Inside [`with_config_read_once`] (a hook run) the file is read at most once: later
    /// calls on the same thread return the settings read first.
    pub fn load() -> Result<Privacy> {
        let cached = READ_ONCE.with(|c| c.borrow().as_ref().and_then(|p| p.clone()));
        if let Some(p) = cached {
            return Ok(p);
        }
        let p = Self::load_from(&config_path(), &memtrail_adapters::paths::home_dir())?;
        crate::redact::user::install(p.redact.clone());
        READ_ONCE.with(|c| {
            if let Some(slot) = c.borrow_mut().as_mut() {
                *slot = Some(p.clone());
            }
        });
        Ok(p)
    }

    /// [`Privacy::load`] from an explicit file and home directory.
    pub fn load_from(path: &Path, home: &Path) -> Result<Privacy> {
        let Some(text) = crate::config::read(path).map_err(Error::Invalid)? else {
            return Ok(Privacy {
                home: home.to_path_buf(),
                ..Privacy::default()
            });
        };
        Self::parse(&text, home)
            .map_err(|e| Error::Invalid(format!("memtrail's config {}: {e}", path.display())))
    }

    /// Parse the config file's text. Unknown keys are ignored (room for later settings).
    pub fn parse(text: &str, home: &Path) -> std::result::Result<Privacy, String> {
        let doc: toml_edit::DocumentMut = text
            .parse()
            .map_err(|e: toml_edit::TomlError| e.to_string().trim_end().replace('\n', " "))?;
        let mut exclude = Vec::new();
        if let Some(item) = doc.get("exclude") {
            let arr = item
                .as_array()
                .ok_or("`exclude` must be an array of paths, e.g. exclude = [\"~/secret\"]")?;
            for v in arr.iter() {
                let s = v.as_str().ok_or_else(|| {
                    format!(
                        "`exclude` holds {}, not a path string",
                        v.to_string().trim()
                    )
                })?;
                exclude.push(expand(s, home).ok_or_else(|| {
                    format!("`exclude` entry {s:?} is not an absolute path nor starts with ~/")
                })?);
            }
        }
        // `[sync] url`: only whether it is set; its shape is `memtrail sync`'s to check.
        let sync_configured = doc
            .get("sync")
            .and_then(|t| t.as_table_like())
            .and_then(|t| t.get("url"))
            .and_then(|u| u.as_str())
            .is_some_and(|u| !u.trim().is_empty());
        let redact = UserRules::compile_cached(&redact_rules(&doc)?)?;
        Ok(Privacy {
            exclude,
            home: home.to_path_buf(),
            sync_configured,
            redact,
        })
    }

    /// Why the project at `project_dir` is excluded (the config entry or the `.memtrailignore`
    /// file that excludes it), or `None`. A relative or empty `project_dir` is never excluded
    /// by `.memtrailignore` (there is nowhere to look), only by a config entry it equals.
    pub fn excluded(&self, project_dir: &str) -> Option<String> {
        if project_dir.is_empty() {
            return None;
        }
        let project = normalize(Path::new(project_dir));
        for ex in &self.exclude {
            if project.starts_with(ex) {
                return Some(format!("excluded by {} in the config", ex.display()));
            }
        }
        if !project.is_absolute() {
            return None;
        }
        let stop_at_home = project.starts_with(&self.home);
        for dir in project.ancestors() {
            let f = dir.join(IGNORE_FILE);
            if let Ok(md) = std::fs::symlink_metadata(&f)
                && ignore_file_counts(&md, dir)
            {
                return Some(format!("excluded by {}", f.display()));
            }
            if stop_at_home && dir == self.home {
                break;
            }
        }
        None
    }
}

thread_local! {
    /// Inside [`with_config_read_once`]: `Some(the settings read, once read)`.
    static READ_ONCE: std::cell::RefCell<Option<Option<Privacy>>> =
        const { std::cell::RefCell::new(None) };
}

/// Run `f` with memtrail's config read at most once on this thread: every [`Privacy::load`]
/// inside it after the first successful one returns the same settings (a hook run reads the
/// file once, for its ingest and for [`Privacy::sync_configured`]). Returns what `f` returned
/// and the settings if `f` read them (`None`: it did not, or every read failed). Nested calls
/// share the outer scope.
pub fn with_config_read_once<R>(f: impl FnOnce() -> R) -> (R, Option<Privacy>) {
    let outer = READ_ONCE.with(|c| {
        let mut c = c.borrow_mut();
        let outer = c.is_some();
        if !outer {
            *c = Some(None);
        }
        outer
    });
    let r = f();
    let read = READ_ONCE.with(|c| {
        let mut c = c.borrow_mut();
        if outer {
            c.as_ref().and_then(|p| p.clone())
        } else {
            c.take().flatten()
        }
    });
    (r, read)
}

/// Whether a `.memtrailignore` whose metadata (not followed if a symlink) is `md`, in the
/// folder `dir`, counts: another local user must not be able to switch capture off by
/// planting one (in `/tmp`, a shared checkout). See [`ignore_file_trusted`].
#[cfg(unix)]
fn ignore_file_counts(md: &std::fs::Metadata, dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    std::fs::metadata(dir).is_ok_and(|d| ignore_file_trusted(md.uid(), d.mode(), uid))
}

#[cfg(not(unix))]
fn ignore_file_counts(_md: &std::fs::Metadata, _dir: &Path) -> bool {
    true
}

/// The ownership rule of `.memtrailignore`: the file's owner `file_uid` is the user `uid`
/// memtrail runs as, or root (0); and its folder's mode `dir_mode` (`st_mode`) is not
/// world-writable (no `S_IWOTH`, sticky bit or not: anyone may create files in `/tmp`).
pub fn ignore_file_trusted(file_uid: u32, dir_mode: u32, uid: u32) -> bool {
    (file_uid == uid || file_uid == 0) && dir_mode & 0o002 == 0
}

/// Why a transcript's new content is not stored, kept in its cursor's `reader_state` as
/// `{"memtrail_skip": "excluded", "project": "<dir>"}` or `{"memtrail_skip": "deleted",
/// "session": "<agent's session id>"}` (`session` absent in markers of older versions and of
/// `purge`) (no
/// schema change: a reader's state is only restored when reading resumes mid-file, which a
/// skipped source never does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// The session's project is excluded; `project` is checked again at each ingest, and the
    /// transcript is read again from its start once the project is no longer excluded.
    Excluded { project: String },
    /// The user deleted the session (`memtrail sessions delete`): the transcript is not read
    /// again, so the session does not come back with the next hook or import. `session`: the
    /// agent's id of the deleted session, when known: a sub-agent transcript of it that first
    /// appears after the delete is not stored either.
    Deleted { session: Option<String> },
}

impl SkipReason {
    /// The marker to store as the cursor's reader state.
    pub fn to_state(&self) -> serde_json::Value {
        match self {
            SkipReason::Excluded { project } => {
                serde_json::json!({"memtrail_skip": "excluded", "project": project})
            }
            SkipReason::Deleted { session: None } => {
                serde_json::json!({"memtrail_skip": "deleted"})
            }
            SkipReason::Deleted {
                session: Some(session),
            } => serde_json::json!({"memtrail_skip": "deleted", "session": session}),
        }
    }

    /// The marker in a cursor's reader state, if it holds one.
    pub fn from_state(state: Option<&serde_json::Value>) -> Option<SkipReason> {
        let s = state?;
        match s.get("memtrail_skip")?.as_str()? {
            "excluded" => Some(SkipReason::Excluded {
                project: s.get("project")?.as_str()?.to_string(),
            }),
            "deleted" => Some(SkipReason::Deleted {
                session: s
                    .get("session")
                    .and_then(|v| v.as_str())
                    .map(str::to_string),
            }),
            _ => None,
        }
    }
}

/// The rules of `[privacy] redact` as written: an array of inline tables
/// (`redact = [{ name = "…", pattern = "…" }]`) or of tables (`[[privacy.redact]]`), each with
/// exactly the strings `name` and `pattern`. Empty when absent.
///
/// Errors: one line naming what is wrong.
pub fn redact_rules(doc: &toml_edit::DocumentMut) -> std::result::Result<Vec<RuleText>, String> {
    let Some(privacy) = doc.get("privacy") else {
        return Ok(Vec::new());
    };
    let privacy = privacy
        .as_table_like()
        .ok_or("`privacy` must be a table: [privacy]")?;
    // A misspelt key would silently mean no protection (`exclude` stays top-level).
    if let Some((k, _)) = privacy.iter().find(|(k, _)| *k != "redact") {
        return Err(format!(
            "[privacy] has a key `{k}`: it holds only `redact`{}",
            if k == "exclude" {
                " (`exclude` is a top-level key, above [privacy])"
            } else {
                ""
            }
        ));
    }
    let Some(item) = privacy.get("redact") else {
        return Ok(Vec::new());
    };
    const SHAPE: &str = "`privacy.redact` must be an array of rules, e.g. redact = [{ name = \"acme-ticket\", pattern = \"ACME-[0-9]{6}\" }]";
    let tables: Vec<&dyn toml_edit::TableLike> = if let Some(a) = item.as_array() {
        a.iter()
            .map(|v| {
                v.as_inline_table()
                    .map(|t| t as &dyn toml_edit::TableLike)
                    .ok_or(SHAPE)
            })
            .collect::<std::result::Result<_, _>>()?
    } else if let Some(a) = item.as_array_of_tables() {
        a.iter().map(|t| t as &dyn toml_edit::TableLike).collect()
    } else {
        return Err(SHAPE.into());
    };
    let mut out = Vec::with_capacity(tables.len());
    for (i, t) in tables.into_iter().enumerate() {
        let field = |k: &str| -> std::result::Result<String, String> {
            t.get(k)
                .and_then(|v| v.as_str())
                .map(str::to_string)
                .ok_or_else(|| format!("`privacy.redact` rule {} has no `{k}` string", i + 1))
        };
        if let Some((k, _)) = t.iter().find(|(k, _)| *k != "name" && *k != "pattern") {
            return Err(format!(
                "`privacy.redact` rule {} has a key `{k}`: a rule has only `name` and `pattern`",
                i + 1
            ));
        }
        out.push(RuleText {
            name: field("name")?,
            pattern: field("pattern")?,
        });
    }
    Ok(out)
}

/// `~/x` → `<home>/x`; an absolute path as it is; anything else `None`. `.` and `..` are resolved
/// lexically.
fn expand(s: &str, home: &Path) -> Option<PathBuf> {
    let p = if s == "~" {
        home.to_path_buf()
    } else if let Some(rest) = s.strip_prefix("~/") {
        home.join(rest)
    } else {
        PathBuf::from(s)
    };
    p.is_absolute().then(|| normalize(&p))
}

/// Resolve `.` and `..` without touching the file system; drop a trailing separator.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_is_configured_by_a_non_empty_sync_url() {
        let home = Path::new("/h");
        let configured = |t: &str| Privacy::parse(t, home).unwrap().sync_configured;
        assert!(!configured(""));
        assert!(!configured("exclude = []\n"));
        assert!(!configured(
            "[sync]\nmachine = \"0123456789abcdef0123456789abcdef\"\n"
        ));
        assert!(!configured("[sync]\nurl = \"  \"\n"));
        assert!(!configured("[sync]\nurl = 3\n"));
        assert!(!configured("sync = \"postgres://db/m\"\n"));
        assert!(configured("[sync]\nurl = \"postgres://me@db/memtrail\"\n"));
        assert!(configured("sync = { url = \"postgres://db/m\" }\n"));
    }

    #[test]
    fn the_config_is_read_once_inside_the_scope() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[sync]\nurl = \"postgres://db/m\"\n").unwrap();
        // load_from is not cached; load (the process's config path) is: exercise the scope
        // with a config path of our own through the thread-local directly.
        let first = Privacy::load_from(&path, Path::new("/h")).unwrap();
        let ((), read) = with_config_read_once(|| {
            READ_ONCE.with(|c| *c.borrow_mut() = Some(Some(first.clone())));
            // Changed on disk: the scope still answers what was read first.
            std::fs::write(&path, "").unwrap();
            assert_eq!(Privacy::load().unwrap(), first);
            let ((), inner) = with_config_read_once(|| ());
            assert_eq!(inner.as_ref(), Some(&first));
        });
        assert_eq!(read, Some(first));
        // Outside any scope nothing is kept.
        assert!(READ_ONCE.with(|c| c.borrow().is_none()));
        let ((), none) = with_config_read_once(|| ());
        assert_eq!(none, None);
    }

    #[test]
    fn config_entries_and_ignore_files() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join("work/a/sub")).unwrap();
        std::fs::create_dir_all(home.join("work/b")).unwrap();
        let p = Privacy::parse(
            "# mine\nexclude = [\"~/secret\", \"/srv/client/../client-x/\"]\nother = 1\n",
            &home,
        )
        .unwrap();
        assert_eq!(
            p.exclude,
            vec![home.join("secret"), PathBuf::from("/srv/client-x")]
        );
        let h = home.display().to_string();
        assert_eq!(
            p.excluded(&format!("{h}/secret/app")),
            Some(format!("excluded by {h}/secret in the config"))
        );
        assert_eq!(
            p.excluded("/srv/client-x"),
            Some("excluded by /srv/client-x in the config".into())
        );
        assert_eq!(p.excluded("/srv/client-xy"), None);
        assert_eq!(p.excluded(&format!("{h}/work/a/sub")), None);
        std::fs::write(home.join("work/a/.memtrailignore"), "").unwrap();
        assert_eq!(
            p.excluded(&format!("{h}/work/a/sub")),
            Some(format!("excluded by {h}/work/a/.memtrailignore"))
        );
        assert_eq!(p.excluded(&format!("{h}/work/b")), None);
        // Nothing above the home is looked at for a project inside it.
        std::fs::write(dir.path().join(".memtrailignore"), "").unwrap();
        assert_eq!(p.excluded(&format!("{h}/work/b")), None);
        assert_eq!(
            p.excluded(&dir.path().join("elsewhere").display().to_string()),
            Some(format!(
                "excluded by {}/.memtrailignore",
                dir.path().display()
            ))
        );
        assert_eq!(p.excluded(""), None);
    }

    #[test]
    fn ignore_file_ownership_rule() {
        // Owner: the user or root; folder: not world-writable (0o002), sticky or not.
        assert!(ignore_file_trusted(1000, 0o040755, 1000));
        assert!(ignore_file_trusted(0, 0o040755, 1000));
        assert!(ignore_file_trusted(0, 0o040775, 0));
        assert!(!ignore_file_trusted(1001, 0o040755, 1000));
        assert!(!ignore_file_trusted(1000, 0o041777, 1000));
        assert!(!ignore_file_trusted(1000, 0o040777, 1000));
        assert!(!ignore_file_trusted(0, 0o040757, 1000));
    }

    #[cfg(unix)]
    #[test]
    fn ignore_file_in_a_world_writable_folder_or_of_another_user_does_not_count() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let shared = dir.path().join("shared");
        std::fs::create_dir_all(home.join("proj")).unwrap();
        std::fs::create_dir_all(shared.join("proj")).unwrap();
        let p = Privacy::parse("", &home).unwrap();
        let proj = shared.join("proj").display().to_string();
        let planted = shared.join(".memtrailignore");
        std::fs::write(&planted, "").unwrap();
        // A folder like /tmp (1777), then one without the sticky bit (0777).
        for mode in [0o1777, 0o777] {
            std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(p.excluded(&proj), None, "mode {mode:o}");
        }
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            p.excluded(&proj),
            Some(format!("excluded by {}", planted.display()))
        );
        // Owned by another user (only root can make one here; CI runs as root).
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let f = home.join("proj/.memtrailignore");
            std::fs::write(&f, "").unwrap();
            let c = std::ffi::CString::new(f.display().to_string()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::lchown(c.as_ptr(), 4242, 4242) }, 0);
            assert_eq!(p.excluded(&home.join("proj").display().to_string()), None);
            // SAFETY: as above.
            assert_eq!(unsafe { libc::lchown(c.as_ptr(), 0, 0) }, 0);
            assert_eq!(
                p.excluded(&home.join("proj").display().to_string()),
                Some(format!("excluded by {}", f.display()))
            );
        }
    }

    #[test]
    fn redaction_rules_are_read_and_compiled() {
        let home = Path::new("/h");
        let names = |t: &str| -> Vec<(String, String)> {
            Privacy::parse(t, home)
                .unwrap()
                .redact
                .texts()
                .map(|r| (r.name.clone(), r.pattern.clone()))
                .collect()
        };
        let acme = vec![("acme-ticket".to_string(), "ACME-[0-9]{6}".to_string())];
        assert_eq!(
            names(
                "[privacy]\nredact = [{ name = \"acme-ticket\", pattern = \"ACME-[0-9]{6}\" }]\n"
            ),
            acme
        );
        assert_eq!(
            names("[[privacy.redact]]\nname = \"acme-ticket\"\npattern = \"ACME-[0-9]{6}\"\n"),
            acme
        );
        assert_eq!(names(""), Vec::new());
        assert_eq!(names("[privacy]\n"), Vec::new());
        let p = Privacy::parse(
            "[privacy]\nredact = [{ name = \"acme-ticket\", pattern = \"ACME-[0-9]{6}\" }]\n",
            home,
        )
        .unwrap();
        assert_eq!(
            p.redact.apply("fix ACME-123456 now"),
            "fix [redacted:acme-ticket] now"
        );
        let err = |t: &str| Privacy::parse(t, home).unwrap_err();
        assert_eq!(
            err("[privacy]\nredact = [{ name = \"acme\", pattern = \"ACME-[0-9\" }]\n"),
            "`privacy.redact` rule 1 (\"acme\"): the pattern does not compile: regex parse error: ACME-[0-9 ^ error: unclosed character class"
        );
        assert_eq!(
            err("[privacy]\nredact = \"ACME\"\n"),
            "`privacy.redact` must be an array of rules, e.g. redact = [{ name = \"acme-ticket\", pattern = \"ACME-[0-9]{6}\" }]"
        );
        assert_eq!(
            err("[privacy]\nredact = [{ name = \"a\" }]\n"),
            "`privacy.redact` rule 1 has no `pattern` string"
        );
        assert_eq!(
            err("[privacy]\nredact = [{ name = \"a\", pattern = \"x\", flags = \"i\" }]\n"),
            "`privacy.redact` rule 1 has a key `flags`: a rule has only `name` and `pattern`"
        );
        assert_eq!(err("privacy = 1\n"), "`privacy` must be a table: [privacy]");
    }

    #[test]
    fn bad_configs_are_clear_errors() {
        let home = Path::new("/home/u");
        assert_eq!(
            Privacy::parse("exclude = \"~/x\"", home).unwrap_err(),
            "`exclude` must be an array of paths, e.g. exclude = [\"~/secret\"]"
        );
        assert_eq!(
            Privacy::parse("exclude = [\"rel/dir\"]", home).unwrap_err(),
            "`exclude` entry \"rel/dir\" is not an absolute path nor starts with ~/"
        );
        assert_eq!(
            Privacy::parse("exclude = [3]", home).unwrap_err(),
            "`exclude` holds 3, not a path string"
        );
        assert!(Privacy::parse("exclude = [", home).is_err());
        assert_eq!(
            Privacy::parse("", home).unwrap().exclude,
            Vec::<PathBuf>::new()
        );
        let missing = Privacy::load_from(Path::new("/nonexistent/memtrail/config.toml"), home);
        assert_eq!(missing.unwrap().exclude, Vec::<PathBuf>::new());
        // A misspelt key under [privacy] is an error, not silently no rules.
        let doc = |t: &str| t.parse::<toml_edit::DocumentMut>().unwrap();
        assert_eq!(
            redact_rules(&doc("[privacy]\nredcat = []\n")).unwrap_err(),
            "[privacy] has a key `redcat`: it holds only `redact`"
        );
        assert_eq!(
            redact_rules(&doc("[privacy]\nexclude = [\"~/x\"]\n")).unwrap_err(),
            "[privacy] has a key `exclude`: it holds only `redact` (`exclude` is a top-level key, above [privacy])"
        );
        assert_eq!(redact_rules(&doc("[privacy]\n")).unwrap(), []);
    }
}
