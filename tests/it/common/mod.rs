//! The harness the end-to-end tests share (`e2e_claude`, `e2e_codex`, `e2e_agent_clis`):
//! finding the tools, the sandbox folder and environment, running child processes with a
//! timeout and a cleared environment, the scripted stub model server, and small helpers.
//!
//! Each test module takes it with `use crate::common;` and uses the part it needs.
#![allow(dead_code)]

use serde_json::Value;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Any child process is killed after this long.
pub const CHILD_TIMEOUT: Duration = Duration::from_secs(120);

// ------------------------------------------------------------------------------------ tools

pub fn env_flag(name: &str) -> bool {
    std::env::var(name)
        .map(|v| v == "1" || v.eq_ignore_ascii_case("true"))
        .unwrap_or(false)
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

pub fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The binary named by the environment variable `var` when it is set and not empty (an error
/// when that is not an executable file), else `None`.
pub fn bin_from_env(var: &str) -> Result<Option<PathBuf>, String> {
    match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            if !is_executable(&p) {
                return Err(format!("{var}={} is not an executable file", p.display()));
            }
            Ok(Some(p))
        }
        None => Ok(None),
    }
}

/// The real Python interpreter (`MEMTRAIL_E2E_PYTHON`, else `python3`): runs `probe`, which must
/// print `sys.executable`; when it fails, the error is `<python> <failure>: <its stderr>`.
pub fn resolve_python(probe: &str, failure: &str) -> Result<PathBuf, String> {
    // Resolve the real interpreter once, with the caller's environment: a pyenv shim would not
    // find its root under the sandboxed HOME.
    let py = std::env::var_os("MEMTRAIL_E2E_PYTHON").unwrap_or_else(|| "python3".into());
    let out = Command::new(&py)
        .args(["-c", probe])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", py.to_string_lossy()))?;
    if !out.status.success() {
        return Err(format!(
            "{} {failure}: {}",
            py.to_string_lossy(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// A Python with the `mcp` package (the real MCP client, `tests/e2e/mcp_client.py`), or
/// `None` when the test is to be skipped (it says why); with `MEMTRAIL_REQUIRE_E2E=1` a missing
/// one is a failure.
pub fn mcp_python_or_skip() -> Option<PathBuf> {
    match resolve_python(
        "import mcp, sys; print(sys.executable)",
        "has no `mcp` module (scripts/e2e-deps)",
    ) {
        Ok(p) => Some(p),
        Err(why) if env_flag("MEMTRAIL_REQUIRE_E2E") => {
            panic!("MEMTRAIL_REQUIRE_E2E=1 but {why}")
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            None
        }
    }
}

/// The memtrail binary under test: `MEMTRAIL_E2E_MEMTRAIL_BIN`, else this build's.
/// The e2e tools folder (`scripts/e2e-deps`): `$MEMTRAIL_E2E_TOOLS`, else `target/e2e-tools`.
pub fn e2e_tools_dir() -> PathBuf {
    std::env::var_os("MEMTRAIL_E2E_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/e2e-tools"))
}

pub fn memtrail_bin() -> PathBuf {
    std::env::var_os("MEMTRAIL_E2E_MEMTRAIL_BIN")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_memtrail")))
}

/// The tools of an e2e test, or `None` when it is to be skipped (`MEMTRAIL_SKIP_E2E=1`, or the
/// tools are missing); with `MEMTRAIL_REQUIRE_E2E=1` missing tools are a failure.
pub fn tools_or_skip<T>(find_tools: impl FnOnce() -> Result<T, String>) -> Option<T> {
    if env_flag("MEMTRAIL_SKIP_E2E") {
        eprintln!("skipped: MEMTRAIL_SKIP_E2E=1");
        return None;
    }
    match find_tools() {
        Ok(t) => Some(t),
        Err(why) => {
            if env_flag("MEMTRAIL_REQUIRE_E2E") {
                panic!("MEMTRAIL_REQUIRE_E2E=1 but the e2e cannot run: {why}");
            }
            eprintln!("skipped: {why}");
            None
        }
    }
}

// ------------------------------------------------------------------------------------ sandbox

/// The sandbox's temp folder: removed on drop, unless `MEMTRAIL_E2E_KEEP=1` or the test panics.
pub struct SandboxDir(Option<tempfile::TempDir>);

impl SandboxDir {
    /// A new temp folder and its real path (Claude names the transcript folder after the real
    /// path of the cwd).
    pub fn new(prefix: &str) -> (SandboxDir, PathBuf) {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .expect("tempdir");
        let root = dir.path().canonicalize().expect("canonicalize tempdir");
        (SandboxDir(Some(dir)), root)
    }
}

impl Drop for SandboxDir {
    fn drop(&mut self) {
        if (env_flag("MEMTRAIL_E2E_KEEP") || thread::panicking())
            && let Some(dir) = self.0.take()
        {
            let kept = dir.keep();
            eprintln!("e2e: sandbox kept at {}", kept.display());
        }
    }
}

/// The environment every sandbox has: PATH, HOME and XDG_* (`$HOME/.config`, `.local/share`,
/// `state`, `.cache`), TMPDIR, a plain shell and terminal, and the caller's USER and LOGNAME.
/// `extra` goes after the XDG_* variables.
pub fn sandbox_env(
    path: OsString,
    home: &Path,
    state: &Path,
    tmp: &Path,
    extra: Vec<(String, OsString)>,
) -> Vec<(String, OsString)> {
    let mut env: Vec<(String, OsString)> = vec![("PATH".into(), path)];
    env.extend(
        memtrail_testkit::home_vars(home, state).map(|(k, v)| (k.to_string(), v.into_os_string())),
    );
    env.push(("TMPDIR".into(), tmp.into()));
    env.extend(extra);
    env.extend([
        ("SHELL".into(), "/bin/bash".into()),
        ("TERM".into(), "dumb".into()),
        ("NO_COLOR".into(), "1".into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("RUST_BACKTRACE".into(), "1".into()),
    ]);
    for k in ["USER", "LOGNAME"] {
        if let Some(v) = std::env::var_os(k) {
            env.push((k.into(), v));
        }
    }
    env
}

/// A command with `env` (and nothing else), run in `cwd`, stdin from /dev/null.
pub fn sandbox_cmd(env: &[(String, OsString)], cwd: &Path, program: impl AsRef<OsStr>) -> Command {
    let mut c = Command::new(program);
    c.env_clear();
    for (k, v) in env {
        c.env(k, v);
    }
    c.current_dir(cwd).stdin(Stdio::null());
    c
}

// ------------------------------------------------------------------------------------ processes

/// Runs a command to completion, killing its whole process group after CHILD_TIMEOUT.
pub fn run(mut cmd: Command, what: &str) -> Output {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start {cmd:?}: {e}"));
    let out_rx = drain(child.stdout.take().unwrap());
    let err_rx = drain(child.stderr.take().unwrap());
    let status = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st;
        }
        if started.elapsed() > CHILD_TIMEOUT {
            kill_group(&mut child);
            let stdout = out_rx
                .recv_timeout(Duration::from_secs(5))
                .unwrap_or_default();
            let stderr = err_rx
                .recv_timeout(Duration::from_secs(5))
                .unwrap_or_default();
            panic!(
                "{what}: timed out after {CHILD_TIMEOUT:?}, killed\n--- stdout\n{}\n--- stderr\n{}",
                String::from_utf8_lossy(&stdout),
                String::from_utf8_lossy(&stderr)
            );
        }
        thread::sleep(Duration::from_millis(10));
    };
    // A grandchild that kept a pipe open (an MCP server, a hook) must not hang the test: give
    // it 10 s, then kill what is left of the process group and read what was written.
    let collect = |rx: &mpsc::Receiver<Vec<u8>>| match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(b) => b,
        Err(_) => {
            eprintln!(
                "e2e: {what}: a leftover process holds the output pipe open; killing its group"
            );
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            rx.recv_timeout(Duration::from_secs(5)).unwrap_or_default()
        }
    };
    let stdout = collect(&out_rx);
    let stderr = collect(&err_rx);
    eprintln!("e2e: {what}: {status} in {:.2?}", started.elapsed());
    Output {
        status,
        stdout,
        stderr,
    }
}

/// Reads `r` to the end on a thread; the bytes arrive on the channel.
pub fn drain(mut r: impl Read + Send + 'static) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    rx
}

pub fn kill_group(child: &mut Child) {
    // The child leads its own process group (process_group(0)): kill all of it.
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs and requires exit status 0.
pub fn run_ok(cmd: Command, what: &str) -> Output {
    let out = run(cmd, what);
    if !out.status.success() {
        panic!("{what} failed: {}\n{}", out.status, show(&out));
    }
    out
}

pub fn show(out: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn stdout_json(out: &Output, what: &str) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what}: stdout is not JSON ({e})\n{}", show(out)))
}

// ------------------------------------------------------------------------------------ stub

/// The stub model server (`tests/e2e/<script_name>`), killed on drop.
pub struct Stub {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
    _stdout: BufReader<ChildStdout>,
}

impl Stub {
    /// Starts the stub with `python` (a sandbox command running the interpreter), its script
    /// and request log in the sandbox folder `root`, and reads the port it bound.
    pub fn start(mut python: Command, root: &Path, script_name: &str, script: &Value) -> Stub {
        let script_path = root.join("stub-script.json");
        fs::write(&script_path, serde_json::to_vec_pretty(script).unwrap()).unwrap();
        let log = root.join("stub-requests.jsonl");
        python
            .arg(repo_root().join("tests/e2e").join(script_name))
            .args(["--port", "0", "--script"])
            .arg(&script_path)
            .arg("--log")
            .arg(&log)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0);
        let mut child = python
            .spawn()
            .unwrap_or_else(|e| panic!("start {script_name}: {e:?}"));
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        // The first stdout line is the port; read it on a thread to bound the wait.
        let (tx, rx) = mpsc::channel();
        let reader = thread::spawn(move || {
            let mut line = String::new();
            let _ = stdout.read_line(&mut line);
            let _ = tx.send(line);
            stdout
        });
        let line = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(l) => l,
            Err(_) => {
                kill_group(&mut child);
                panic!("the stub did not print its port within 30 s");
            }
        };
        let port: u16 = line.trim().parse().unwrap_or_else(|_| {
            kill_group(&mut child);
            panic!("the stub printed {line:?} instead of a port")
        });
        let stdout = reader.join().unwrap();
        Stub {
            child,
            port,
            log,
            _stdout: stdout,
        }
    }

    pub fn requests(&self) -> Vec<Value> {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

// ------------------------------------------------------------------------------------ helpers

/// Prints each file under a `--- <name> (<path>):` heading (for the diagnostics of a failure).
pub fn print_files(files: &[(&str, PathBuf)]) {
    for (name, path) in files {
        eprintln!("--- {name} ({}):", path.display());
        eprintln!(
            "{}",
            fs::read_to_string(path).unwrap_or_else(|e| format!("<{e}>"))
        );
    }
}

pub fn read(p: &Path) -> Vec<u8> {
    fs::read(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn find(arr: &Value, pred: impl Fn(&Value) -> bool) -> Option<&Value> {
    arr.as_array().and_then(|a| a.iter().find(|v| pred(v)))
}

/// Every file under `dir` with its bytes, keyed by its path below `dir`; folders named in `skip`
/// are not entered (an agent's own session folder, say).
pub fn files_under(dir: &Path, skip: &[&str]) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name();
            if p.is_dir() {
                if !skip.iter().any(|s| name == *s) {
                    stack.push(p);
                }
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_path_buf();
                out.insert(rel, fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// A real agent CLI's sandbox: a [`SandboxDir`] with `home/`, `tmp/` and a project folder
/// `proj/` holding one file `proj_file` (so a listing shows it), and the [`sandbox_env`] for it
/// (state in `home/.local/state`, the caller's PATH).
pub struct CliSandbox {
    pub keep: SandboxDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub proj: PathBuf,
    pub env: Vec<(String, OsString)>,
}

impl CliSandbox {
    pub fn new(prefix: &str, proj_file: &str) -> CliSandbox {
        let (keep, root) = SandboxDir::new(prefix);
        let (home, tmp, proj) = (root.join("home"), root.join("tmp"), root.join("proj"));
        for d in [&home, &tmp, &proj] {
            fs::create_dir_all(d).unwrap();
        }
        fs::write(proj.join(proj_file), "x").unwrap();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let env = sandbox_env(path, &home, &home.join(".local/state"), &tmp, Vec::new());
        CliSandbox {
            keep,
            root,
            home,
            proj,
            env,
        }
    }
}
