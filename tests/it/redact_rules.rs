//! The user's redaction rules (`[privacy] redact` in memtrail's config) end to end, in a
//! sandboxed HOME: applied by the hook, `import`, MCP `remember` and `redact --rescan`; a rule
//! that does not compile stores nothing (fail closed) until it is fixed; `config set` refuses
//! it and `config show` lists the rules.

use crate::support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::Sandbox;

const SID: &str = "3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1eaa";
const CWD: &str = "/home/user/acme";
const RULE: &str =
    "[privacy]\nredact = [{ name = \"acme-ticket\", pattern = \"ACME-[0-9]{6}\" }]\n";

fn config(sb: &Sandbox) -> PathBuf {
    let p = sb.home.join(".config/memtrail/config.toml");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    p
}

/// A Claude Code transcript of session `sid` (project [`CWD`]): a prompt and an answer, both
/// naming the ticket `ACME-123456`.
fn transcript(sb: &Sandbox, sid: &str) -> PathBuf {
    let t = sb.transcript("acme", sid);
    let line = |i: u32, kind: &str, message: Value| {
        json!({"parentUuid": null, "isSidechain": false, "userType": "external", "cwd": CWD,
            "sessionId": sid, "version": "2.1.49", "gitBranch": "main", "uuid": format!("u{i}"),
            "timestamp": format!("2026-11-20T10:00:0{i}.000Z"), "type": kind,
            "requestId": format!("req_{i}"), "message": message})
        .to_string()
    };
    let text = [
        line(
            0,
            "user",
            json!({"role": "user", "content": "please close ACME-123456 today"}),
        ),
        line(
            1,
            "assistant",
            json!({"model": "claude-sonnet-4-5", "id": "msg_1", "type": "message",
                "role": "assistant", "content": [{"type": "text", "text": "Closed ticket ACME-123456."}],
                "stop_reason": null, "usage": {"input_tokens": 3, "output_tokens": 5}}),
        ),
    ];
    std::fs::write(&t, format!("{}\n{}\n", text[0], text[1])).unwrap();
    t
}

/// The stored texts of session `sid`, in order, and its title.
fn stored(sb: &Sandbox, sid: &str) -> (Vec<String>, String) {
    let v = sb.json(&["sessions", "show", sid, "--json"]);
    let texts = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect();
    (texts, v["session"]["title"].as_str().unwrap().to_string())
}

fn redacted() -> (Vec<String>, String) {
    (
        vec![
            "please close [redacted:acme-ticket] today".to_string(),
            "Closed ticket [redacted:acme-ticket].".to_string(),
        ],
        "please close [redacted:acme-ticket] today".to_string(),
    )
}

/// How many search hits `query` has.
fn hits(sb: &Sandbox, query: &str) -> usize {
    sb.json(&["search", query, "--json"])["hits"]
        .as_array()
        .unwrap()
        .len()
}

fn hook(sb: &Sandbox, t: &Path, sid: &str) {
    sb.hook("claude", support::stop_payload(t, sid, CWD));
}

#[test]
fn the_hook_and_import_store_a_rules_match_as_its_marker() {
    let sb = Sandbox::new();
    std::fs::write(config(&sb), RULE).unwrap();
    let t = transcript(&sb, SID);
    hook(&sb, &t, SID);
    assert_eq!(stored(&sb, SID), redacted());
    // The ticket's number is nowhere in the index (the marker's name is: `acme`).
    assert_eq!(hits(&sb, "123456"), 0);
    assert_eq!(hits(&sb, "\"ACME-123456\""), 0);
    assert_eq!(hits(&sb, "ticket"), 2);
    // import, of another session with the same text.
    let other = "3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1eab";
    transcript(&sb, other);
    let imp = sb.json(&["import", "--json"]);
    assert_eq!(imp["agents"][0]["messages"], 2, "{imp}");
    assert_eq!(stored(&sb, other), redacted());
    assert_eq!(hits(&sb, "123456"), 0);
}

#[test]
fn a_rule_that_does_not_compile_stores_nothing_until_it_is_fixed() {
    let sb = Sandbox::new();
    let cfg = config(&sb);
    std::fs::write(
        &cfg,
        "[privacy]\nredact = [{ name = \"acme-ticket\", pattern = \"ACME-[0-9\" }]\n",
    )
    .unwrap();
    let t = transcript(&sb, SID);
    // The hook exits 0 (it never fails the agent), stores nothing and logs why.
    hook(&sb, &t, SID);
    assert_eq!(sb.sessions(), 0);
    let why = format!(
        "memtrail's config {}: `privacy.redact` rule 1 (\"acme-ticket\"): the pattern does not compile: regex parse error: ACME-[0-9 ^ error: unclosed character class",
        cfg.display()
    );
    let log = std::fs::read_to_string(sb.hook_log()).unwrap();
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(
        log.lines().next().unwrap().ends_with(&format!(
            "claude Stop session={SID} error: {}: {why}",
            t.display()
        )),
        "{log}"
    );
    // import says so and stores nothing either.
    let out = sb.cmd().args(["import", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("memtrail: {why}\n")
    );
    assert_eq!(sb.sessions(), 0);
    // Fixed: the next hook catches the transcript up from its start, redacted.
    std::fs::write(&cfg, RULE).unwrap();
    hook(&sb, &t, SID);
    assert_eq!(stored(&sb, SID), redacted());
    assert_eq!(hits(&sb, "123456"), 0);
}

#[test]
fn rescan_applies_a_new_rule_to_what_is_stored() {
    let sb = Sandbox::new();
    let t = transcript(&sb, SID);
    hook(&sb, &t, SID);
    assert_eq!(
        stored(&sb, SID).0,
        [
            "please close ACME-123456 today",
            "Closed ticket ACME-123456."
        ]
    );
    assert_eq!(hits(&sb, "123456"), 2);
    // A rule that does not compile: the rescan stops before rewriting anything.
    let cfg = config(&sb);
    std::fs::write(
        &cfg,
        "[privacy]\nredact = [{ name = \"acme-ticket\", pattern = \"(\" }]\n",
    )
    .unwrap();
    let out = sb.cmd().args(["redact", "--rescan"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(hits(&sb, "123456"), 2);
    std::fs::write(&cfg, RULE).unwrap();
    let r = sb.json(&["redact", "--rescan", "--json"]);
    assert_eq!(
        (
            r["messages"].as_u64(),
            r["messages_changed"].as_u64(),
            r["titles_changed"].as_u64()
        ),
        (Some(2), Some(2), Some(1)),
        "{r}"
    );
    assert_eq!(stored(&sb, SID), redacted());
    assert_eq!(hits(&sb, "123456"), 0);
    // Idempotent.
    let r = sb.json(&["redact", "--rescan", "--json"]);
    assert_eq!(r["messages_changed"], 0, "{r}");
}

/// The hook log (and its rotated copy) written before a rule existed is rescanned with the
/// rest: only the lines that change, the file staying the user's alone.
#[test]
fn rescan_applies_a_new_rule_to_the_hook_log() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let t = transcript(&sb, SID);
    hook(&sb, &t, SID);
    let log = sb.hook_log();
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let line = |s: &str| format!("2026-11-20T10:00:00.000Z claude Stop session=s1 {s}\n");
    std::fs::write(
        &log,
        format!("{}{}", line("error: bad line ACME-123456"), line("ok")),
    )
    .unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o600)).unwrap();
    let rotated = log.with_extension("log.1");
    std::fs::write(&rotated, line("error: ACME-654321 and ACME-111111")).unwrap();
    std::fs::write(config(&sb), RULE).unwrap();
    let r = sb.json(&["redact", "--rescan", "--json"]);
    assert_eq!(r["log_lines_changed"], 2, "{r}");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        format!(
            "{}{}",
            line("error: bad line [redacted:acme-ticket]"),
            line("ok")
        )
    );
    assert_eq!(
        std::fs::read_to_string(&rotated).unwrap(),
        line("error: [redacted:acme-ticket] and [redacted:acme-ticket]")
    );
    for f in [&log, &rotated] {
        assert_eq!(
            std::fs::metadata(f).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let r = sb.json(&["redact", "--rescan", "--json"]);
    assert_eq!(r["log_lines_changed"], 0, "{r}");
}

#[test]
fn an_mcp_note_is_redacted_by_the_rules() {
    let sb = Sandbox::new();
    std::fs::write(config(&sb), RULE).unwrap();
    let dir = sb.home.join("work/acme");
    std::fs::create_dir_all(&dir).unwrap();
    let t = sb.transcript("acme", SID);
    let cwd = dir.to_str().unwrap();
    std::fs::write(&t, format!("{}\n", support::claude_line(SID, cwd, 0))).unwrap();
    sb.hook("claude", support::stop_payload(&t, SID, cwd));
    let mut m = support::Mcp::start_in(&sb, Some(&dir), &[]);
    let r = m.call(
        "remember",
        json!({"text": "ACME-654321 is the release ticket"}),
    );
    assert_eq!(r["result"]["structuredContent"]["kept"], true, "{r}");
    assert!(m.stop().success());
    let (texts, _) = stored(&sb, SID);
    assert_eq!(
        texts.last().map(String::as_str),
        Some("[redacted:acme-ticket] is the release ticket")
    );
    assert_eq!(hits(&sb, "654321"), 0);
}

#[test]
fn config_set_refuses_a_bad_rule_and_show_lists_the_rules() {
    let sb = Sandbox::new();
    let cfg = config(&sb);
    std::fs::write(&cfg, "# mine\nexclude = [\"~/secret\"]\n").unwrap();
    let refused = |value: &str, why: &str| {
        let out = sb
            .cmd()
            .args(["config", "set", "privacy.redact", value])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{value}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("memtrail: {why}\n")
        );
        assert_eq!(
            std::fs::read_to_string(&cfg).unwrap(),
            "# mine\nexclude = [\"~/secret\"]\n"
        );
    };
    refused(
        "[{ name = \"acme\", pattern = \"ACME-[0-9\" }]",
        "`privacy.redact` rule 1 (\"acme\"): the pattern does not compile: regex parse error: ACME-[0-9 ^ error: unclosed character class",
    );
    refused(
        "{ name = \"acme\", pattern = \"a*\" }",
        "`privacy.redact` rule 1 (\"acme\"): the pattern matches the empty text; it must match at least one character",
    );
    refused(
        "\"ACME\"",
        "privacy.redact must be an array of rules like [{ name = \"acme-ticket\", pattern = \"ACME-[0-9]{6}\" }]",
    );
    // One rule given as a table: written as an array of one.
    sb.cmd()
        .args([
            "config",
            "set",
            "privacy.redact",
            "{ name = \"acme-ticket\", pattern = \"ACME-[0-9]{6}\" }",
        ])
        .output()
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(&cfg).unwrap(),
        format!("# mine\nexclude = [\"~/secret\"]\n\n{RULE}")
    );
    let show = sb.json(&["config", "show", "--json"]);
    let row = show["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == "privacy.redact")
        .unwrap();
    assert_eq!(
        row,
        &json!({"key": "privacy.redact", "source": "file", "variable": null,
            "value": [{"name": "acme-ticket", "pattern": "ACME-[0-9]{6}"}]})
    );
    let out = sb.cmd().args(["config", "show"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l.starts_with(
            "privacy.redact     = [{ name = \"acme-ticket\", pattern = \"ACME-[0-9]{6}\" }] "
        ) && l.ends_with("  # file")),
        "{text}"
    );
    // `[[privacy.redact]]` tables are read and shown the same way.
    std::fs::write(
        &cfg,
        "[[privacy.redact]]\nname = \"acme-ticket\"\npattern = \"ACME-[0-9]{6}\"\n",
    )
    .unwrap();
    let out = sb
        .cmd()
        .args(["config", "get", "privacy.redact"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "[{ name = \"acme-ticket\", pattern = \"ACME-[0-9]{6}\" }]\n"
    );
    // The default file documents the setting.
    let out = sb.cmd().args(["config", "--default"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "\n[privacy]\n# Your own redaction rules, applied after the built-in ones wherever text is stored (hooks,\n"
        ) && text.contains("\n# redact = [{ name = \"acme-ticket\", pattern = \"ACME-[0-9]{6}\" }]\n"),
        "{text}"
    );
}

/// Against a real PostgreSQL (`MEMTRAIL_TEST_PG_URL`, skipped without it): a session pushed
/// before the rule existed is shown redacted by `--store URL` once the rule is in the config,
/// and another machine with the rule pulls it redacted (its own index never holds the match).
#[test]
fn postgresql_reads_and_pulls_apply_the_rules() {
    let Some(url) = memtrail_testkit::pg::test_database("redact_rules") else {
        return;
    };
    let set_rule = |sb: &Sandbox| {
        let out = sb
            .cmd()
            .args([
                "config",
                "set",
                "privacy.redact",
                "[{ name = \"acme-ticket\", pattern = \"ACME-[0-9]{6}\" }]",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", crate::common::show(&out));
    };
    let init = |sb: &Sandbox, label: &str| {
        let out = sb
            .cmd()
            .args(["sync", "--init", &url, "--label", label])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", crate::common::show(&out));
    };
    let a = Sandbox::new();
    let t = transcript(&a, SID);
    hook(&a, &t, SID);
    init(&a, "a");
    assert_eq!(
        stored(&a, SID).0,
        [
            "please close ACME-123456 today",
            "Closed ticket ACME-123456."
        ]
    );
    set_rule(&a);
    let remote = a.json(&["--store", &url, "sessions", "show", SID, "--json"]);
    let texts: Vec<&str> = remote["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, redacted().0);
    assert_eq!(remote["session"]["title"], json!(redacted().1));
    let b = Sandbox::new();
    set_rule(&b);
    init(&b, "b");
    assert_eq!(stored(&b, SID), redacted());
    assert_eq!(hits(&b, "123456"), 0);
}
