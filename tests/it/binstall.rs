//! `cargo binstall memtrail`, for real: `scripts/package` builds the release archive of the
//! binary under test in the layout of Cargo.toml's `[package.metadata.binstall]`, a loopback
//! HTTP server serves it at the URL that metadata names (under `{ repo }`), and the real
//! `cargo-binstall` (from crates.io, installed by `scripts/e2e-deps`) installs it, told by its
//! manifest override (`--manifest-path`) that the repository is that server; the installed
//! binary then answers `--version` and `install --dry-run` in a sandboxed HOME.
//!
//! binstall fetches over HTTPS only: the server (Python's http.server) has a certificate for
//! 127.0.0.1 from a CA made for the test (openssl), which binstall is given with
//! `--root-certificates`. Nothing leaves the machine: binstall gets no other strategy (`--strategies crate-meta-data`:
//! no quick-install, no compile), no telemetry, no GitHub token, and a repository on 127.0.0.1.
//! Without cargo-binstall the test skips itself, saying why; with `MEMTRAIL_REQUIRE_E2E=1`
//! (scripts/test, CI) that is a failure.

use crate::common::{e2e_tools_dir, tools_or_skip};
use crate::support::{self, Sandbox};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;

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

/// An HTTPS server on 127.0.0.1 (Python's http.server, TLS from a test CA: cargo-binstall
/// fetches over HTTPS only and takes extra roots with `--root-certificates`) serving the files
/// of one folder (GET and HEAD; 404 otherwise); it logs "METHOD PATH STATUS" per request.
struct FileServer {
    child: std::process::Child,
    port: u16,
    log: PathBuf,
    /// The CA that signed the server's certificate (PEM), for `--root-certificates`.
    ca: PathBuf,
}

const SERVER_PY: &str = r#"
import http.server, ssl, sys
root, cert, key, log = sys.argv[1:5]
class H(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=root, **k)
    def log_request(self, code="-", size="-"):
        with open(log, "a") as f:
            f.write("%s %s %s\n" % (self.command, self.path, int(code)))
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

impl FileServer {
    fn start(root: &Path, dir: &Path) -> FileServer {
        std::fs::create_dir_all(dir).unwrap();
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .current_dir(dir)
                .args(args)
                .output()
                .expect("openssl runs");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        // A CA, and a certificate for IP 127.0.0.1 that it signs.
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=memtrail test CA",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ]);
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ]);
        std::fs::write(
            dir.join("ext.cnf"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
            "-out",
            "server.pem",
        ]);
        let log = dir.join("requests.log");
        let mut child = Command::new("python3")
            .args(["-c", SERVER_PY])
            .arg(root)
            .arg(dir.join("server.pem"))
            .arg(dir.join("server.key"))
            .arg(&log)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the server says its port");
        FileServer {
            child,
            port,
            log,
            ca: dir.join("ca.pem"),
        }
    }

    fn base(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
    let server = FileServer::start(&www, &sb.home.join("tls"));
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
        .arg("--root-certificates")
        .arg(&server.ca)
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
