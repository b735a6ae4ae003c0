//! What the integration tests of every crate share (a dev-dependency, never shipped).
//!
//! Each crate has one integration-test binary (`tests/it/main.rs`, one module per area), so its
//! tests run as threads of one process. The few tests that need the process to themselves (they
//! change the process environment, count the heap with a global allocator, or read the process's
//! peak memory) run through [`alone!`] in a child process of their own.
//!
//! The sandboxed home: [`TempHome`] (a temp folder with `home/` in it), [`home_vars`] and
//! [`agent_vars`] (the variables that point a process at it, so nothing reads or writes the real
//! home); [`copy_tree`] copies a fixture tree into it.
//!
//! PostgreSQL: [`pg::test_database`] makes a database of the test's own in the test cluster
//! (`MEMTRAIL_TEST_PG_URL`, from `scripts/pg-test-server`).

pub mod pg;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The variable that tells a child test process which test it runs alone.
const ALONE_VAR: &str = "MEMTRAIL_TEST_ALONE";

/// Runs the test `name` of the module `module` (pass `module_path!()`) alone in a child process.
///
/// Returns `true` in that child: the caller then runs its body, the only test of the process
/// (no other thread reads the environment or allocates). Returns `false` in the parent, after the
/// child (this test binary, `<module>::<name> --exact --test-threads=1`) ran exactly that one test
/// and it passed; the child's output is printed (captured by the harness as the test's). Panics
/// when the child fails, cannot start, or did not run exactly one test.
///
/// [`alone!`] is the usual way to call it, as the first line of the test.
pub fn alone(module: &str, name: &str) -> bool {
    // The harness names a test by its path inside the test crate: drop the crate's own name.
    let test = match module.split_once("::") {
        Some((_, path)) => format!("{path}::{name}"),
        None => name.to_string(),
    };
    if std::env::var_os(ALONE_VAR).is_some_and(|v| v == test.as_str()) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new(&exe)
        .args([test.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(ALONE_VAR, &test)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} {test}: {e}", exe.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{test} (alone): {}", out.status);
    assert!(
        stdout.contains("test result: ok. 1 passed;"),
        "{test} (alone): the child did not run exactly this one test"
    );
    false
}

/// Runs the enclosing test alone in a process of its own (see [`alone()`]): in the parent process
/// the test returns once that child passed; in the child the rest of the test runs.
///
/// ```ignore
/// #[test]
/// fn paths_follow_home() {
///     memtrail_testkit::alone!(paths_follow_home);
///     // ... std::env::set_var, as the only test thread of the process ...
/// }
/// ```
#[macro_export]
macro_rules! alone {
    ($test:ident) => {
        if !$crate::alone(module_path!(), stringify!($test)) {
            return;
        }
    };
}

/// A temp folder with a sandboxed home inside it (`<tmp>/home`, created); the folder and all
/// in it are removed on drop.
pub struct TempHome {
    /// The temp folder (the home's parent, a place for state, binaries, …).
    pub dir: tempfile::TempDir,
    /// `<tmp>/home`.
    pub home: PathBuf,
}

impl TempHome {
    pub fn new() -> TempHome {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).expect("mkdir home");
        TempHome { dir, home }
    }
}

impl Default for TempHome {
    fn default() -> Self {
        Self::new()
    }
}

/// The variables that put a process's home and XDG folders in the sandbox: `HOME` = `home`,
/// `XDG_CONFIG_HOME` = `home/.config`, `XDG_DATA_HOME` = `home/.local/share`,
/// `XDG_STATE_HOME` = `state`, `XDG_CACHE_HOME` = `home/.cache`.
pub fn home_vars(home: &Path, state: &Path) -> [(&'static str, PathBuf); 5] {
    [
        ("HOME", home.to_path_buf()),
        ("XDG_CONFIG_HOME", home.join(".config")),
        ("XDG_DATA_HOME", home.join(".local/share")),
        ("XDG_STATE_HOME", state.to_path_buf()),
        ("XDG_CACHE_HOME", home.join(".cache")),
    ]
}

/// The agents' own folder variables, pointed at their defaults inside `home` (so a value in the
/// caller's environment cannot leak in): `CLAUDE_CONFIG_DIR` = `home/.claude`, `CODEX_HOME` =
/// `home/.codex`, `GEMINI_CLI_HOME` = `home`.
pub fn agent_vars(home: &Path) -> [(&'static str, PathBuf); 3] {
    [
        ("CLAUDE_CONFIG_DIR", home.join(".claude")),
        ("CODEX_HOME", home.join(".codex")),
        ("GEMINI_CLI_HOME", home.to_path_buf()),
    ]
}

/// Copies the folder `src` into `dst` (created), recursively, folders included.
pub fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap_or_else(|e| panic!("mkdir {}: {e}", dst.display()));
    for e in std::fs::read_dir(src).unwrap_or_else(|e| panic!("read {}: {e}", src.display())) {
        let e = e.expect("read_dir entry");
        let to = dst.join(e.file_name());
        if e.file_type().expect("file type").is_dir() {
            copy_tree(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to)
                .unwrap_or_else(|err| panic!("copy {}: {err}", e.path().display()));
        }
    }
}

/// The rows of `sql` on `conn`, each as its columns' values (`{:?}` of
/// [`rusqlite::types::Value`]) joined by ` | `, after a `## <sql>` header line: a text form of
/// a store's content that two stores can be compared by. Panics on an SQL error.
pub fn rows_as_text(conn: &rusqlite::Connection, sql: &str) -> Vec<String> {
    let mut st = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let n = st.column_count();
    let rows = st
        .query_map([], |r| {
            let mut cols = Vec::with_capacity(n);
            for i in 0..n {
                let v: rusqlite::types::Value = r.get(i)?;
                cols.push(format!("{v:?}"));
            }
            Ok(cols.join(" | "))
        })
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out = vec![format!("## {sql}")];
    out.extend(rows.map(|r| r.unwrap_or_else(|e| panic!("{sql}: {e}"))));
    out
}

/// Appends `bytes` to the file at `path` (created when missing), as an agent writes its transcript.
pub fn append(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(bytes).unwrap();
}

/// The shared fixture folder `dir` (third-party transcripts beside the repository, in
/// `../shared/fixtures`), or `None` with the note `note: <dir> not found; <what> skipped` when it
/// is absent; with `MEMTRAIL_REQUIRE_SHARED_FIXTURES=1` an absent folder is a failure.
pub fn shared_fixtures(dir: &str, what: &str) -> Option<PathBuf> {
    let path = PathBuf::from(dir);
    if path.is_dir() {
        return Some(path);
    }
    let required = std::env::var("MEMTRAIL_REQUIRE_SHARED_FIXTURES").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "MEMTRAIL_REQUIRE_SHARED_FIXTURES=1 but {dir} does not exist"
    );
    eprintln!("note: {dir} not found; {what} skipped");
    None
}

/// The bytes of the store's file and its WAL (those that exist), each followed by what every
/// zstd frame found in it decodes to (`messages.parts` is compressed): a search of these bytes
/// for a secret or a deleted word also sees inside the compressed rows, live or in freed space.
/// A frame split across pages (a row longer than a page, whose rest is on overflow pages) is
/// not decoded: zstd gives nothing of a block it has not read whole. The tests that rely on
/// this scan write rows shorter than a page; the deletion test also looks for fragments of the
/// frames themselves.
pub fn store_file_bytes(db: &std::path::Path) -> Vec<Vec<u8>> {
    use std::io::Read;
    const MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
    const DICTIONARY: &[u8] = include_bytes!("../../runtime/src/store/parts_dictionary.txt");
    let mut out = Vec::new();
    for suffix in ["", "-wal"] {
        let mut p = db.to_path_buf().into_os_string();
        p.push(suffix);
        let Ok(bytes) = std::fs::read(p) else {
            continue;
        };
        let mut all = bytes.clone();
        for (pos, _) in bytes.windows(4).enumerate().filter(|(_, w)| *w == MAGIC) {
            // Through the parts dictionary (schema 21), as the store reads them; frames written
            // without it read the same through it.
            let Ok(d) = zstd::stream::read::Decoder::with_dictionary(&bytes[pos..], DICTIONARY)
            else {
                continue;
            };
            let mut d = d.single_frame();
            let mut buf = [0u8; 4096];
            all.push(0);
            while let Ok(n) = d.read(&mut buf) {
                if n == 0 {
                    break;
                }
                all.extend_from_slice(&buf[..n]);
            }
        }
        out.push(all);
    }
    out
}

/// Make a FIFO (named pipe, mode 0600) at `path` with the system's `mkfifo`: a file that blocks
/// whoever opens it for reading until a writer comes, for the tests of readers that must not
/// hang on one. Panics when it cannot be made.
pub fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .args(["-m", "600"])
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[cfg(test)]
mod tests {
    /// In the child, the body runs with the marker variable naming this very test; the parent
    /// returns early (so the assertion below runs only in the child).
    #[test]
    fn alone_runs_the_body_in_a_child_of_its_own() {
        crate::alone!(alone_runs_the_body_in_a_child_of_its_own);
        assert_eq!(
            std::env::var(super::ALONE_VAR).unwrap(),
            "tests::alone_runs_the_body_in_a_child_of_its_own"
        );
    }

    /// One integration-test binary per crate: no crate of the workspace has a test target other
    /// than `tests/it/main.rs` (a `tests/*.rs` file or a `tests/<dir>/main.rs` is a binary of its
    /// own, linked again after every change; add a module to `tests/it/` instead).
    #[test]
    fn every_crate_has_one_integration_test_binary() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        // The root package and every workspace member (`members = ["adapters", ...]`).
        let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
        let members = workspace
            .lines()
            .find_map(|l| l.strip_prefix("members = ["))
            .expect("members = [...] in Cargo.toml");
        let mut crates = vec![""];
        crates.extend(
            members
                .split(['"', ',', ']', ' '])
                .filter(|m| !m.is_empty()),
        );
        assert!(crates.contains(&"testkit"), "{crates:?}");
        let mut targets = Vec::new();
        for krate in crates {
            let manifest = std::fs::read_to_string(root.join(krate).join("Cargo.toml")).unwrap();
            assert!(
                !manifest.contains("[[test]]"),
                "{krate}/Cargo.toml: [[test]]"
            );
            let Ok(dir) = std::fs::read_dir(root.join(krate).join("tests")) else {
                continue;
            };
            for e in dir.map(Result::unwrap) {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "rs") || p.join("main.rs").exists() {
                    targets.push(p.strip_prefix(&root).unwrap().display().to_string());
                }
            }
        }
        targets.sort();
        assert_eq!(
            targets,
            [
                "adapters/tests/it",
                "bench/tests/it",
                "installer/tests/it",
                "pg/tests/it",
                "runtime/tests/it",
                "tests/it",
                "web/tests/it"
            ]
        );
    }

    /// A name that matches no test fails instead of passing with nothing run.
    #[test]
    #[should_panic(expected = "the child did not run exactly this one test")]
    fn alone_fails_when_the_child_runs_no_test() {
        crate::alone(module_path!(), "no_such_test");
    }
}
