//! `cargo binstall memtrail`, for real: `scripts/package` builds the release archive of the
//! binary under test in the layout of Cargo.toml's `[package.metadata.binstall]`, a loopback
//! HTTP server serves it at the URL that metadata names (under `{ repo }`), and the real
//! `cargo-binstall` (from crates.io, installed by `scripts/e2e-deps`) installs it, told by its
//! manifest override (`--manifest-path`) that the repository is that server; the installed
//! binary then answers `--version` and `install --dry-run` in a sandboxed HOME.
//!
//! Nothing leaves the machine: binstall gets no other strategy (`--strategies crate-meta-data`:
//! no quick-install, no compile), no telemetry, no GitHub token, and a repository on 127.0.0.1.
//! Without cargo-binstall the test skips itself, saying why; with `MEMTRAIL_REQUIRE_E2E=1`
//! (scripts/test, CI) that is a failure.

use crate::common::{e2e_tools_dir, tools_or_skip};
use crate::support::{self, Sandbox};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The cargo-binstall release that scripts/e2e-deps installs (the newest whose locked
/// dependencies build with this toolchain, Rust 1.95: docs/install.md).
const BINSTALL_VERSION: &str = "1.21.1";

/// `$MEMTRAIL_CARGO_BINSTALL`, else scripts/e2e-deps' copy in the e2e tools folder; it must
/// say its version.
fn cargo_binstall() -> Result<PathBuf, String> {
    let bin = std::env::var_os("MEMTRAIL_CARGO_BINSTALL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            e2e_tools_dir().join(format!(
                "cargo-binstall-{BINSTALL_VERSION}/bin/cargo-binstall"
            ))
        });
    let out = Command::new(&bin).arg("-V").output().map_err(|e| {
        format!(
            "no cargo-binstall at {} ({e}): scripts/e2e-deps installs it",
            bin.display()
        )
    })?;
    let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if said != BINSTALL_VERSION {
        return Err(format!(
            "{} -V says {said:?}, not {BINSTALL_VERSION}",
            bin.display()
        ));
    }
    Ok(bin)
}

/// An HTTP/1.1 server on 127.0.0.1 serving files of one folder (GET and HEAD, 404 otherwise,
/// one request per connection); it logs "METHOD PATH STATUS" per request.
struct FileServer {
    port: u16,
    log: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl FileServer {
    fn start(root: PathBuf) -> FileServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (log2, stop2) = (log.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (root, log) = (root.clone(), log2.clone());
                std::thread::spawn(move || serve(conn, &root, &log));
            }
        });
        FileServer { port, log, stop }
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(conn: TcpStream, root: &Path, log: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => {}
        }
    }
    let mut parts = first.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let file = root.join(path.trim_start_matches('/'));
    let body = if (method == "GET" || method == "HEAD") && !path.contains("..") && file.is_file() {
        std::fs::read(&file).ok()
    } else {
        None
    };
    let status = if body.is_some() { 200 } else { 404 };
    log.lock()
        .unwrap()
        .push(format!("{method} {path} {status}"));
    let body = body.unwrap_or_default();
    let mut conn = conn;
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
        if status == 200 { "OK" } else { "Not Found" },
        body.len()
    );
    let _ = conn.write_all(head.as_bytes());
    if method != "HEAD" {
        let _ = conn.write_all(&body);
    }
    let _ = conn.flush();
    // Read what the client may still send, until it closes.
    let _ = conn.shutdown(std::net::Shutdown::Write);
    let _ = reader.read_to_end(&mut Vec::new());
}

/// The crate's manifest as binstall reads it, with `repository` the loopback server: the
/// name, version and the `[package.metadata.binstall]` table copied from Cargo.toml.
fn manifest_with_repository(dir: &Path, repository: &str) -> (String, toml_edit::Table) {
    let root = crate::common::repo_root();
    let text = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let doc: toml_edit::DocumentMut = text.parse().unwrap();
    let version = doc["workspace"]["package"]["version"]
        .as_str()
        .unwrap()
        .to_string();
    let binstall = doc["package"]["metadata"]["binstall"]
        .as_table()
        .expect("Cargo.toml has [package.metadata.binstall]")
        .clone();
    let mut m = toml_edit::DocumentMut::new();
    m["package"] = toml_edit::table();
    m["package"]["name"] = toml_edit::value("memtrail");
    m["package"]["version"] = toml_edit::value(version.as_str());
    m["package"]["edition"] = toml_edit::value("2024");
    m["package"]["repository"] = toml_edit::value(repository);
    let mut meta = toml_edit::Table::new();
    meta.set_implicit(true);
    meta.insert("binstall", toml_edit::Item::Table(binstall.clone()));
    m["package"]["metadata"] = toml_edit::Item::Table(meta);
    let mut bin = toml_edit::ArrayOfTables::new();
    let mut b = toml_edit::Table::new();
    b["name"] = toml_edit::value("memtrail");
    b["path"] = toml_edit::value("src/main.rs");
    bin.push(b);
    m["bin"] = toml_edit::Item::ArrayOfTables(bin);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(dir.join("Cargo.toml"), m.to_string()).unwrap();
    (version, binstall)
}

fn host_triple() -> String {
    let out = Command::new("rustc").arg("-vV").output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .unwrap()
}

#[test]
fn cargo_binstall_installs_the_release_archive_from_a_loopback_server() {
    let Some(binstall) = tools_or_skip(cargo_binstall) else {
        return;
    };
    let sb = Sandbox::new();
    let target = host_triple();
    let root = crate::common::repo_root();

    // The archive of the binary under test, as the release workflow makes it.
    let dist = sb.home.join("dist");
    let out = Command::new(root.join("scripts/package"))
        .arg("--binary")
        .arg(support::memtrail_bin())
        .arg("--target")
        .arg(&target)
        .arg("--out")
        .arg(&dist)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scripts/package: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let name = format!("memtrail-{target}");
    let archive = dist.join(format!("{name}.tgz"));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{}\n", archive.display())
    );
    let listing = Command::new("tar")
        .arg("-tzf")
        .arg(&archive)
        .output()
        .unwrap();
    let listing = String::from_utf8(listing.stdout).unwrap();
    let entries: Vec<&str> = listing.lines().collect();
    assert!(
        entries.iter().all(|e| e.starts_with(&format!("{name}/"))),
        "{listing}"
    );
    for f in [
        "memtrail",
        "README.md",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "man/memtrail.1",
        "man/memtrail-search.1",
        "man/memtrail-sessions-list.1",
        "completions/memtrail.bash",
        "completions/_memtrail",
        "completions/memtrail.fish",
        "completions/_memtrail.ps1",
        "completions/memtrail.elv",
    ] {
        assert!(
            entries.contains(&format!("{name}/{f}").as_str()),
            "{f} in {listing}"
        );
    }
    let sums = std::fs::read_to_string(dist.join(format!("{name}.tgz.sha256"))).unwrap();
    assert!(sums.ends_with(&format!("  {name}.tgz\n")) && sums.len() == 64 + 2 + name.len() + 5);

    // Served where the metadata says, under the repository /memtrail/memtrail.
    let www = sb.home.join("www");
    let server = FileServer::start(www.clone());
    let repository = format!("{}/memtrail/memtrail", server.base());
    let crate_dir = sb.home.join("crate");
    let (version, meta) = manifest_with_repository(&crate_dir, &repository);
    assert_eq!(
        meta["pkg-url"].as_str(),
        Some("{ repo }/releases/download/v{ version }/{ name }-{ target }{ archive-suffix }")
    );
    let release = www.join(format!("memtrail/memtrail/releases/download/v{version}"));
    std::fs::create_dir_all(&release).unwrap();
    std::fs::copy(&archive, release.join(format!("{name}.tgz"))).unwrap();

    let cargo_home = sb.home.join(".cargo");
    let install_root = sb.home.join("installed");
    let out = Command::new(&binstall)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &sb.home)
        .env("CARGO_HOME", &cargo_home)
        .args(["binstall", "memtrail", "--manifest-path"])
        .arg(&crate_dir)
        .args(["--targets", &target, "--strategies", "crate-meta-data"])
        .args([
            "--disable-telemetry",
            "--no-discover-github-token",
            "--no-confirm",
        ])
        .arg("--root")
        .arg(&install_root)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "cargo binstall failed:\n{said}\nrequests: {:?}",
        server.requests()
    );
    let archive_path = format!("/memtrail/memtrail/releases/download/v{version}/{name}.tgz");
    let requests = server.requests();
    assert!(
        requests.contains(&format!("GET {archive_path} 200")),
        "{requests:?}\n{said}"
    );
    // Every request went to the loopback repository (none anywhere else: binstall had no
    // other place to ask).
    assert!(
        requests.iter().all(|r| r.contains(" /memtrail/memtrail")),
        "{requests:?}"
    );

    // The installed binary is the one under test, byte for byte, and runs.
    let installed = install_root.join("bin/memtrail");
    assert_eq!(
        std::fs::read(&installed).unwrap(),
        std::fs::read(support::memtrail_bin()).unwrap()
    );
    // The sandbox's environment (HOME, XDG_*, the agents' folders), as `Sandbox::cmd`.
    let envs: Vec<(std::ffi::OsString, std::ffi::OsString)> = sb
        .cmd()
        .get_envs()
        .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned())))
        .collect();
    let run = |args: &[&str]| {
        Command::new(&installed)
            .env_clear()
            .envs(envs.iter().cloned())
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let out = run(&["--version"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("memtrail {version}\n")
    );

    // `install --dry-run`: the plan names the installed binary in Claude Code's hooks and
    // writes nothing.
    std::fs::create_dir_all(sb.claude_dir()).unwrap();
    let out = run(&["install", "--agent", "claude", "--dry-run"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan = String::from_utf8(out.stdout).unwrap();
    let settings = sb.claude_dir().join("settings.json");
    assert!(
        plan.starts_with(&format!("--- /dev/null\n+++ b{}\n", settings.display())),
        "{plan}"
    );
    assert!(
        plan.contains(&format!(
            "+            \"command\": \"{} hook claude\",\n",
            installed.display()
        )),
        "{plan}"
    );
    assert!(!settings.exists());
    assert!(!sb.home.join(".claude.json").exists());
}
