//! Aider end to end (import only: Aider has no hooks).
//!
//! 1. The import path (no Aider needed): the fixture log under a root named in memtrail's
//!    config (`[aider] roots`), another in the folder of a Claude Code session memtrail already
//!    stores; `memtrail import --agent aider` finds both without being told where the second is,
//!    stores each message once, and a run appended later adds only its messages.
//! 2. The real CLI (`aider-chat` from PyPI: `MEMTRAIL_AIDER_BIN`, else
//!    `$MEMTRAIL_E2E_TOOLS/aider/bin/aider` from scripts/e2e-deps; skipped without it unless `MEMTRAIL_REQUIRE_E2E=1`): one
//!    `aider --message` run in a fresh git repository against the loopback stub
//!    `stub_chat_completions.py`; the log it writes is imported: the prompt, the answer and
//!    Aider's report, once.
#![cfg(unix)]

use crate::common::{Stub, bin_from_env, repo_root, tools_or_skip};
use crate::support::{Sandbox, claude_line};

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

fn import(sb: &Sandbox) {
    let out = sb
        .cmd()
        .args(["import", "--agent", "aider"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The stored Aider sessions: (external id, project).
fn aider_sessions(sb: &Sandbox) -> Vec<(String, String)> {
    let v = sb.json(&["sessions", "list", "--agent", "aider", "--json"]);
    let mut out: Vec<(String, String)> = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["session_id"].as_str().unwrap_or_default().to_string(),
                s["project"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out
}

fn write_config(sb: &Sandbox, roots: &str) {
    let dir = sb.home.join(".config/memtrail");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!("[aider]\nroots = {roots}\n"),
    )
    .unwrap();
}

#[test]
fn import_finds_logs_under_roots_and_in_known_projects() {
    let sb = Sandbox::new();
    let fixture = repo_root().join("fixtures/aider/repo/.aider.chat.history.md");
    let app = sb.home.join("code/app");
    std::fs::create_dir_all(&app).unwrap();
    let log = app.join(".aider.chat.history.md");
    std::fs::copy(&fixture, &log).unwrap();
    write_config(&sb, r#"["~/code"]"#);

    // A project outside the roots, known through a Claude Code session stored there.
    let lib = sb.home.join("elsewhere/lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::copy(
        repo_root().join("fixtures/aider/real/.aider.chat.history.md"),
        lib.join(".aider.chat.history.md"),
    )
    .unwrap();
    let sid = "0b6f0c1e-5a1e-4c0d-8b7f-00005eed0001";
    let t = sb.transcript("lib", sid);
    let lines: String = (0..2)
        .map(|i| claude_line(sid, lib.to_str().unwrap(), i) + "\n")
        .collect();
    std::fs::write(&t, lines).unwrap();
    let out = sb
        .cmd()
        .args(["import", "--agent", "claude"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    import(&sb);
    let sessions = aider_sessions(&sb);
    assert_eq!(
        sessions.iter().map(|s| s.1.as_str()).collect::<Vec<_>>(),
        [app.to_str().unwrap(), lib.to_str().unwrap()],
        "{sessions:?}"
    );
    let app_id = &sessions[0].0;
    assert!(app_id.starts_with("aider-"), "{sessions:?}");
    let ids = sb.message_ids(app_id);
    assert_eq!(
        ids,
        [
            "r1-0", "r1-1", "r1-2", "r1-3", "r1-4", "r1-5", "r2-0", "r2-1", "r2-2"
        ]
    );
    assert_eq!(sb.message_ids(&sessions[1].0).len(), 4);
    let hits = sb.json(&["search", "閏年", "--agent", "aider", "--json"]);
    assert!(
        hits["hits"].as_array().is_some_and(|h| !h.is_empty()),
        "{hits}"
    );

    // Again: nothing new. A third run appended: its messages only.
    import(&sb);
    assert_eq!(sb.message_ids(app_id), ids);
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str(
        "\n# aider chat started at 2026-03-03 08:00:00\n\n#### Et maintenant ?  \n\nC'est fini.\n",
    );
    std::fs::write(&log, text).unwrap();
    import(&sb);
    let grown = sb.message_ids(app_id);
    assert_eq!(grown[..9], ids[..]);
    assert_eq!(grown[9..], ["r3-0", "r3-1"]);
}

fn aider_bin() -> Result<PathBuf, String> {
    if let Some(p) = bin_from_env("MEMTRAIL_AIDER_BIN")? {
        return Ok(p);
    }
    let p = crate::common::e2e_tools_dir().join("aider/bin/aider");
    if p.is_file() {
        Ok(p)
    } else {
        Err(format!(
            "no Aider: set MEMTRAIL_AIDER_BIN, or run scripts/e2e-deps (it installs aider-chat \
             into {})",
            p.display()
        ))
    }
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.email=u@example.com", "-c", "user.name=u"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

#[test]
fn real_aider_run_is_imported_once() {
    let Some(aider) = tools_or_skip(aider_bin) else {
        return;
    };
    let sb = Sandbox::new();
    let repo = sb.home.join("code/hello");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("README.md"), "hello\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "init"]);
    write_config(&sb, r#"["~/code"]"#);

    let stub_dir = sb.home.join("stub");
    std::fs::create_dir_all(&stub_dir).unwrap();
    let reply = "hello.py\n```\nprint(\"bonjour\")\n```\n";
    let stub = Stub::start(
        Command::new("python3"),
        &stub_dir,
        "stub_chat_completions.py",
        &json!({ "reply": reply }),
    );
    let prompt = "Crée hello.py qui affiche bonjour — 日本語";
    let out = Command::new(&aider)
        .env_clear()
        .env("HOME", &sb.home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(&repo)
        .args([
            "--model",
            "openai/gpt-4o",
            "--openai-api-base",
            &format!("http://127.0.0.1:{}/v1", stub.port),
            "--openai-api-key",
            "x",
            "--edit-format",
            "whole",
            "--yes-always",
            "--no-check-update",
            "--no-show-release-notes",
            "--no-analytics",
            "--no-auto-commits",
            "--no-pretty",
            "--message",
            prompt,
            "hello.py",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "aider: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("hello.py")).unwrap(),
        "print(\"bonjour\")\n"
    );
    assert!(
        stub.requests().iter().any(|r| r["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("/chat/completions"))),
        "{:?}",
        stub.requests()
    );

    import(&sb);
    import(&sb);
    let sessions = aider_sessions(&sb);
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert!(sessions[0].0.starts_with("aider-"), "{sessions:?}");
    assert_eq!(sessions[0].1, repo.to_str().unwrap());
    let shown = sb.json(&["sessions", "show", &sessions[0].0, "--json"]);
    let msgs = shown["messages"].as_array().unwrap();
    let texts: Vec<(&str, &str)> = msgs
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default(),
                m["text"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let users: Vec<&str> = texts
        .iter()
        .filter(|(r, _)| *r == "user")
        .map(|(_, t)| *t)
        .collect();
    assert_eq!(users, [prompt], "{texts:?}");
    let answers: Vec<&str> = texts
        .iter()
        .filter(|(r, _)| *r == "assistant")
        .map(|(_, t)| *t)
        .collect();
    assert_eq!(answers, [reply.trim_end()], "{texts:?}");
    assert!(
        texts
            .iter()
            .any(|(r, t)| *r == "system" && t.contains("Applied edit to hello.py")),
        "{texts:?}"
    );
    let _: Value = shown;
}
