//! `memtrail web` in a real browser: Debian's Chromium and chromedriver, driven by Python
//! selenium (tests/browser/web_test.py), against `memtrail web` serving a store seeded by
//! `memtrail import` from the fixtures (the Claude demo session and its sub-agent,
//! fixtures/web/hostile.jsonl, and a generated session of 250 messages, to which the test adds
//! a turn through the Stop hook while the page shows it).
//!
//! Skipped (with the reason) when Chromium, chromedriver or selenium is missing; with
//! `MEMTRAIL_REQUIRE_BROWSER=1` (scripts/test sets it under CI) a missing tool is a failure.

use crate::common::{self, env_flag, repo_root, sandbox_cmd, sandbox_env};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

const HOSTILE: &str = "9d0c7e21-hostile-4b6a-9f11-5c3e2d1a0b99";
const BIG: &str = "5e1d2c3b-big0-4a5b-8c7d-0e1f2a3b4c5d";
/// Messages of the generated session.
const BIG_MESSAGES: usize = 250;

/// The browser test's tools (also `export_cli`'s).
pub(crate) struct Tools {
    pub python: PathBuf,
    pub chromium: PathBuf,
    pub chromedriver: PathBuf,
}

pub(crate) fn find_tools() -> Result<Tools, String> {
    let chromium = std::env::var_os("MEMTRAIL_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| common::which("chromium"))
        .ok_or("no chromium on PATH (apt-get install chromium)")?;
    let chromedriver = std::env::var_os("MEMTRAIL_CHROMEDRIVER")
        .map(PathBuf::from)
        .or_else(|| common::which("chromedriver"))
        .ok_or("no chromedriver on PATH (apt-get install chromium-driver)")?;
    let python = common::resolve_python(
        "import selenium, sys; print(sys.executable)",
        "cannot import selenium (scripts/e2e-deps installs it into its venv)",
    )?;
    Ok(Tools {
        python,
        chromium,
        chromedriver,
    })
}

/// A Claude Code transcript of `n` messages, user and assistant in turn, message `i` holding
/// the word `pagemarker{i}`.
fn big_transcript(n: usize) -> String {
    let mut out = String::new();
    let mut parent = serde_json::Value::Null;
    for i in 0..n {
        let uuid = format!("22222222-0000-4000-8000-{i:012}");
        let ts = format!("2026-03-04T10:{:02}:{:02}.000Z", i / 60, i % 60);
        let message = if i % 2 == 0 {
            serde_json::json!({"role": "user", "content": format!("question pagemarker{i}")})
        } else {
            serde_json::json!({"model": "claude-opus-4-6", "id": format!("msg_big_{i}"), "type": "message",
                "role": "assistant", "content": [{"type": "text", "text": format!("answer pagemarker{i}")}],
                "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 3, "output_tokens": 1}})
        };
        let line = serde_json::json!({"parentUuid": parent, "isSidechain": false, "userType": "external",
            "cwd": "/home/user/big", "sessionId": BIG, "version": "2.1.49", "gitBranch": "main",
            "type": if i % 2 == 0 { "user" } else { "assistant" }, "message": message,
            "uuid": uuid, "timestamp": ts});
        out.push_str(&line.to_string());
        out.push('\n');
        parent = serde_json::Value::String(uuid);
    }
    out
}

fn seed(home: &Path) {
    let projects = home.join(".claude/projects");
    memtrail_testkit::copy_tree(&repo_root().join("fixtures/claude/projects"), &projects);
    std::fs::create_dir_all(projects.join("-hostile")).unwrap();
    std::fs::copy(
        repo_root().join("fixtures/web/hostile.jsonl"),
        projects.join(format!("-hostile/{HOSTILE}.jsonl")),
    )
    .unwrap();
    std::fs::create_dir_all(projects.join("-home-user-big")).unwrap();
    std::fs::write(
        projects.join(format!("-home-user-big/{BIG}.jsonl")),
        big_transcript(BIG_MESSAGES),
    )
    .unwrap();
}

#[test]
fn web_pages_in_a_real_browser() {
    let tools = match find_tools() {
        Ok(t) => t,
        Err(why) if env_flag("MEMTRAIL_REQUIRE_BROWSER") => {
            panic!("MEMTRAIL_REQUIRE_BROWSER=1 but the browser test cannot run: {why}")
        }
        Err(why) => {
            eprintln!(
                "skipped: the browser test of `memtrail web` needs Chromium, chromedriver and selenium: {why} (MEMTRAIL_REQUIRE_BROWSER=1 makes this a failure)"
            );
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let (home, state, tmp) = (
        dir.path().join("home"),
        dir.path().join("state"),
        dir.path().join("tmp"),
    );
    for d in [&home, &state, &tmp] {
        std::fs::create_dir_all(d).unwrap();
    }
    seed(&home);
    let env = sandbox_env(
        std::env::var_os("PATH").unwrap_or_default(),
        &home,
        &state,
        &tmp,
        memtrail_testkit::agent_vars(&home)
            .map(|(k, v)| (k.to_string(), v.into_os_string()))
            .to_vec(),
    );
    let db = dir.path().join("store.db");
    let bin = common::memtrail_bin();
    let mut import = sandbox_cmd(&env, dir.path(), &bin);
    import
        .arg("--db")
        .arg(&db)
        .args(["import", "--agent", "claude"]);
    let out = common::run_ok(import, "memtrail import");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("claude: 4 files (4 with new content), 4 sessions"),
        "{said}"
    );

    let mut web = sandbox_cmd(&env, dir.path(), &bin);
    web.arg("--db")
        .arg(&db)
        .args(["web", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0);
    let mut server = web.spawn().expect("memtrail web starts");
    let mut first = String::new();
    let mut stdout = BufReader::new(server.stdout.take().unwrap());
    stdout.read_line(&mut first).unwrap();
    // The server's output read to its end (a closed pipe would end the server at its next line).
    let _rest = common::drain(stdout);
    let url = first
        .trim()
        .strip_prefix("memtrail web: ")
        .unwrap_or_else(|| panic!("memtrail web printed {first:?}"))
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let model = dir.path().join("tiny-model");
    crate::support::write_tiny_model(&model);
    let started = Instant::now();
    let mut py = sandbox_cmd(&env, dir.path(), &tools.python);
    py.arg(repo_root().join("tests/browser/web_test.py"))
        .arg(&url)
        .env("MEMTRAIL_CHROMIUM", &tools.chromium)
        .env("MEMTRAIL_CHROMEDRIVER", &tools.chromedriver)
        // selenium never looks for (or downloads) a driver of its own.
        .env("SE_OFFLINE", "true")
        // The live check appends a turn to the generated session and runs the Stop hook.
        .env("MEMTRAIL_WEB_TEST_BIN", &bin)
        .env("MEMTRAIL_WEB_TEST_DB", &db)
        .env(
            "MEMTRAIL_WEB_TEST_BIG",
            home.join(format!(".claude/projects/-home-user-big/{BIG}.jsonl")),
        )
        // The analytics check imports fixtures/web/hostile-edit.jsonl; the mode check installs
        // the tiny test model from here, then runs `memtrail embed`.
        .env(
            "MEMTRAIL_WEB_TEST_FIXTURES",
            repo_root().join("fixtures/web"),
        )
        .env("MEMTRAIL_WEB_TEST_MODEL", &model)
        .env("SE_AVOID_STATS", "true");
    let out = common::run(py, "selenium web_test.py");
    common::kill_group(&mut server);
    let said = String::from_utf8_lossy(&out.stdout);
    eprintln!("{said}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the browser test failed: {said}");
    let last = said.lines().last().unwrap_or("");
    assert!(
        last.ends_with(" passed, 0 failed") && !last.starts_with("0 "),
        "{last}"
    );
    assert!(started.elapsed() < Duration::from_secs(170));
}
