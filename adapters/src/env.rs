//! The environment every agent's paths are resolved from (by ingest and import as by the
//! installer), as a value, so that tests (and callers with a sandbox) never depend on or change
//! the process environment.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// A home directory and a set of environment variables (`XDG_STATE_HOME`, `CLAUDE_CONFIG_DIR`,
/// `PATH`, …). [`Env::from_process`] snapshots the real ones; [`Env::sandbox`] starts empty.
#[derive(Clone, PartialEq, Eq)]
pub struct Env {
    home: PathBuf,
    vars: BTreeMap<OsString, OsString>,
}

impl std::fmt::Debug for Env {
    /// Variable names only: the environment may hold secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("home", &self.home)
            .field("vars", &self.vars.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Env {
    /// The process's home (`$HOME`, else the platform's answer) and environment variables.
    pub fn from_process() -> Env {
        Env {
            home: crate::paths::home_dir(),
            vars: std::env::vars_os().collect(),
        }
    }

    /// A home directory and no variables at all (so `PATH` is empty and nothing is found on it).
    pub fn sandbox(home: impl Into<PathBuf>) -> Env {
        Env {
            home: home.into(),
            vars: BTreeMap::new(),
        }
    }

    /// The same environment with `key` set to `value`.
    pub fn with_var(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Env {
        self.vars.insert(key.into(), value.into());
        self
    }

    /// The home directory.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// A variable's value, if set.
    pub fn var(&self, key: &str) -> Option<&OsStr> {
        self.vars.get(OsStr::new(key)).map(OsString::as_os_str)
    }

    /// A variable's value as UTF-8, as `std::env::var(key).ok()` gives it: `None` when unset or
    /// not valid UTF-8.
    pub fn var_utf8(&self, key: &str) -> Option<String> {
        self.var(key)?.to_str().map(str::to_string)
    }

    /// An absolute path from a variable (unset, empty or relative values are ignored, as the
    /// XDG spec asks).
    pub fn abs_var(&self, key: &str) -> Option<PathBuf> {
        let p = PathBuf::from(self.var(key)?);
        p.is_absolute().then_some(p)
    }

    /// memtrail's state directory: `$XDG_STATE_HOME/memtrail`, default `~/.local/state/memtrail`.
    /// Backups and the install state live here.
    pub fn state_dir(&self) -> PathBuf {
        self.abs_var("XDG_STATE_HOME")
            .unwrap_or_else(|| self.home.join(".local/state"))
            .join("memtrail")
    }

    /// Where backups go: `<state dir>/backups`.
    pub fn backups_dir(&self) -> PathBuf {
        self.state_dir().join("backups")
    }

    /// The install state: `<state dir>/install-state.json`.
    pub fn install_state_path(&self) -> PathBuf {
        self.state_dir().join("install-state.json")
    }

    /// True when an executable file named `name` is in one of `$PATH`'s directories.
    pub fn on_path(&self, name: &str) -> bool {
        self.which(name).is_some()
    }

    /// The first executable file named `name` (or `name.exe`) in `$PATH`'s (absolute)
    /// directories.
    pub fn which(&self, name: &str) -> Option<PathBuf> {
        let path = self.var("PATH")?;
        std::env::split_paths(path)
            .filter(|dir| dir.is_absolute())
            .flat_map(|dir| [dir.join(name), dir.join(format!("{name}.exe"))])
            .find(|c| is_executable(c))
    }

    /// The version of the program `name` found on `$PATH`, read from the npm `package.json`
    /// it was installed with: from the program's real path (symlinks resolved), the nearest of
    /// up to six folders above it holding a `package.json` whose `name` is one of `packages`
    /// or one of them plus `-<platform>` (`@openai/codex-linux-x64`). Its `version` field,
    /// as written (`0.171.0`, `1.2.10-beta`), without a platform package's own `-<platform>`
    /// (`0.171.0-linux-x64` is `0.171.0`). The program itself is never run (running an
    /// agent costs seconds and may create folders in the home directory). `None` when the
    /// program is not on `$PATH` or was not installed by npm (a standalone binary).
    pub fn version_of(&self, name: &str, packages: &[&str]) -> Option<String> {
        use std::io::Read;
        let exe = std::fs::canonicalize(self.which(name)?).ok()?;
        for dir in exe.ancestors().skip(1).take(6) {
            let Ok(f) = std::fs::File::open(dir.join("package.json")) else {
                continue;
            };
            // A package.json that cannot be read or parsed (a bundle's own, say) is passed by.
            let mut text = Vec::new();
            if f.take(1 << 20).read_to_end(&mut text).is_err() {
                continue;
            }
            let Ok(v) = serde_json::from_slice::<serde_json::Value>(&text) else {
                continue;
            };
            let pkg = v.get("name").and_then(|n| n.as_str()).unwrap_or("");
            // `""` for the package itself, `-linux-x64` for its platform package.
            let Some(platform) = packages.iter().find_map(|p| {
                pkg.strip_prefix(p)
                    .filter(|r| r.is_empty() || r.starts_with('-'))
            }) else {
                continue;
            };
            // A platform package is an alias of the package at `<version>-<platform>`
            // (`@openai/codex-linux-x64` at `0.171.0-linux-x64`): the version is the part before.
            return v.get("version").and_then(|v| v.as_str()).map(|v| {
                let v = v
                    .strip_suffix(platform)
                    .filter(|_| !platform.is_empty())
                    .unwrap_or(v);
                v.chars().take(64).collect()
            });
        }
        None
    }
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file())
}

#[cfg(all(test, unix))]
mod tests {
    use super::Env;
    use std::os::unix::fs::PermissionsExt;

    /// The native binary of a platform package on `PATH` (what `scripts/e2e-deps` prints for
    /// Codex): the package's version without the platform (a new user saw `0.171.0-linux-x64`);
    /// the package's own `package.json` as written.
    #[test]
    fn a_platform_packages_version_is_the_packages() {
        let dir = tempfile::tempdir().unwrap();
        let write = |pkg: &str, name: &str, version: &str, bin: &str| {
            let root = dir.path().join(pkg);
            std::fs::create_dir_all(root.join("bin")).unwrap();
            std::fs::write(
                root.join("package.json"),
                format!(r#"{{"name": "{name}", "version": "{version}"}}"#),
            )
            .unwrap();
            let exe = root.join("bin").join(bin);
            std::fs::write(&exe, "").unwrap();
            std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
            root.join("bin")
        };
        let native = write(
            "codex-linux-x64",
            "@openai/codex-linux-x64",
            "0.171.0-linux-x64",
            "codex",
        );
        let own = write("gemini", "@google/gemini-cli", "0.61.0-beta", "gemini");
        let env = Env::sandbox(dir.path())
            .with_var("PATH", std::env::join_paths([&native, &own]).unwrap());
        assert_eq!(
            env.version_of("codex", &["@openai/codex"]).as_deref(),
            Some("0.171.0")
        );
        assert_eq!(
            env.version_of("gemini", &["@google/gemini-cli"]).as_deref(),
            Some("0.61.0-beta")
        );
        assert_eq!(env.version_of("codex", &["@google/gemini-cli"]), None);
    }
}
