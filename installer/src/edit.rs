//! What the engine's backends (JSON in the `engine` module, TOML in `tomledit`, YAML in `yamledit`) share: a file's
//! past ([`History`]: the install state's record, else the oldest backup), the result of
//! computing its change ([`Computed`]), an item's state for `status` ([`Found`]), decoding.

use crate::error::InstallError;
use crate::origin::{Origin, origin_of};
use crate::spec::{Body, FileSpec, json_scope};
use crate::state::{EntryRecord, FileState};
use memtrail_adapters::Env;
use std::cell::OnceCell;
use std::path::{Path, PathBuf};

/// The result of computing one file's change.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Computed {
    /// The new bytes; `None` deletes the file.
    pub after: Option<Vec<u8>>,
    /// One line per entry added, updated or removed.
    pub lines: Vec<String>,
    /// Install: what to record in the install state for this file.
    pub record: Option<FileState>,
    /// Directories to remove (when empty) after the file is deleted.
    pub remove_dirs: Vec<PathBuf>,
}

/// What the engine knows about a file's past: the install state's record (authoritative when
/// present) and, lazily, the oldest backup.
pub(crate) struct History<'a> {
    pub env: &'a Env,
    /// The configured path (the key of the state and the backups).
    pub path: &'a Path,
    /// The top-level keys the file is read in (see [`json_scope`]).
    scope: Vec<String>,
    /// The file really edited (the symlink target, if the path is a link).
    pub target: &'a Path,
    pub state: Option<&'a FileState>,
    origin: OnceCell<Origin>,
}

impl<'a> History<'a> {
    pub fn new(
        env: &'a Env,
        spec: &'a FileSpec,
        target: &'a Path,
        state: Option<&'a FileState>,
    ) -> Self {
        History {
            env,
            path: &spec.path,
            scope: match &spec.body {
                Body::Json(items) => json_scope(items),
                Body::Whole(_) | Body::Toml(_) | Body::Yaml(_) => Vec::new(),
            },
            target,
            state,
            origin: OnceCell::new(),
        }
    }

    fn origin(&self) -> &Origin {
        self.origin
            .get_or_init(|| origin_of(self.env, self.path, &self.scope))
    }

    /// May uninstall remove the container at `path` once it is empty?
    pub(crate) fn created(&self, path: &[String]) -> bool {
        match self.state {
            Some(st) => st.created.iter().any(|p| p == path),
            None => self.origin().lacks(path),
        }
    }

    /// Nothing tells this file's past: no install state records it and no backup holds it (the
    /// user deleted memtrail's state folder). Uninstall then judges by what it removes.
    pub(crate) fn unknown(&self) -> bool {
        self.state.is_none() && *self.origin() == Origin::Unknown
    }

    /// May uninstall remove the container at `path`, now empty? When install created it, or,
    /// with nothing to tell ([`History::unknown`]), when it held something before this uninstall
    /// (`held`): it held memtrail's entries and nothing else, since those are all uninstall
    /// takes out. A container of the user's that was empty already stays.
    pub(crate) fn emptied(&self, path: &[String], held: bool) -> bool {
        self.created(path) || (held && self.unknown())
    }

    pub(crate) fn inner_for(&self, path: &[String]) -> Option<&str> {
        self.state.and_then(|s| s.inner_for(path))
    }

    /// The install state's record of memtrail's entry at `path`.
    pub(crate) fn entry(&self, path: &[String]) -> Option<&EntryRecord> {
        self.state.and_then(|s| s.entry_for(path))
    }

    pub(crate) fn created_file(&self) -> bool {
        match self.state {
            Some(st) => st.created_file,
            None => *self.origin() == Origin::Absent,
        }
    }
}

/// The directories that creating `file` creates.
pub(crate) fn new_dirs(file: &Path) -> Vec<PathBuf> {
    file.parent()
        .map(crate::fsutil::missing_dirs)
        .unwrap_or_default()
}

/// Decode a config file as UTF-8, or a parse error at the first bad byte.
pub(crate) fn decode<'b>(path: &Path, bytes: &'b [u8]) -> Result<&'b str, InstallError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let ok = String::from_utf8_lossy(&bytes[..e.valid_up_to()]);
        let line = ok.matches('\n').count() + 1;
        let col = ok
            .rsplit('\n')
            .next()
            .map(|l| l.chars().count())
            .unwrap_or(0)
            + 1;
        InstallError::Parse {
            path: path.to_path_buf(),
            line,
            col,
            msg: "the file is not valid UTF-8".into(),
        }
    })
}

/// The state of one item, for `status`.
pub(crate) enum Found {
    Missing,
    Present(Option<String>),
    Stale(Option<String>),
    Duplicate(usize, Option<String>),
}

/// Whether two program paths name the same program: the same file name (`memtrail`, with or
/// without `.exe` in any case: `C:\\…\\memtrail.EXE`), wherever it is. Tells memtrail's entry (any version, any install place)
/// from another tool's under memtrail's name.
pub(crate) fn same_program(a: &str, b: &str) -> bool {
    let name = |s: &str| {
        let n = s.rsplit(['/', '\\']).next().unwrap_or(s);
        let exe = n.len() > 4
            && n.is_char_boundary(n.len() - 4)
            && n[n.len() - 4..].eq_ignore_ascii_case(".exe");
        (if exe { &n[..n.len() - 4] } else { n }).to_string()
    };
    name(a) == name(b)
}

/// What an entry under memtrail's name runs when that is not memtrail: `None` when `found`
/// (the program the entry names) is memtrail's `ours` ([`same_program`]), else the program, or
/// `no program` when the entry names none (a URL). Shared by the JSON, TOML and YAML editors.
pub(crate) fn foreign_program(found: Option<String>, ours: &str) -> Option<String> {
    match found {
        Some(p) if same_program(&p, ours) => None,
        Some(p) => Some(p),
        None => Some("no program".to_string()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_same_program_is_told_by_its_file_name() {
        use super::same_program;
        assert!(same_program("/old/bin/memtrail", "/opt dir/memtrail"));
        assert!(same_program("C:\\Tools\\memtrail.EXE", "/usr/bin/memtrail"));
        assert!(same_program("memtrail.exe", "memtrail"));
        assert!(!same_program("npx", "/usr/bin/memtrail"));
        assert!(!same_program(
            "/usr/bin/memtrail-cloud",
            "/usr/bin/memtrail"
        ));
        assert!(!same_program(".exe", "/usr/bin/memtrail"));
        assert!(!same_program("mémtrail.exe", "/usr/bin/memtrail"));
    }
}
