//! Secret redaction (DESIGN principle 5): unit cases per kind, positive and negative, with exact
//! outputs; and an end-to-end ingest of a Claude Code transcript full of secrets, after which no
//! secret is anywhere in the database or WAL files, nor findable through the full-text index.

use memtrail_adapters::Agent;
use memtrail_runtime::Store;
use memtrail_runtime::ingest::ingest_file;
use memtrail_runtime::query::{self, SearchFilter};
use memtrail_runtime::redact::{redact, redact_json, redact_title};
use serde_json::json;
use std::borrow::Cow;
use std::io::Write;

// Fake secrets of realistic shape.
const AWS_ID: &str = "AKIAIOSFODNN7EXAMPLE";
const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const OPENAI: &str = "sk-Zq3xT9vLm2Np8Rw4Ks6Hy1Jd5Fg7Cb0VaE3uQo9WiXt2Ly";
const OPENAI_PROJ: &str = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_Q7rT0uV-3wX6yZ9";
const ANTHROPIC: &str = "sk-ant-api03-Qm8vX2nL7pR4tW9yB3cF6hJ1kD5gS0aZ-eU8iO2uYqT7rW4";
const GITHUB: &str = "ghp_R7mQ2xK9vL4nB8wT3yH6jD1fG5sA0cZ2pE9u";
const GITHUB_PAT: &str = "github_pat_11ABCDEFG0xQ7mR2vK9nL4_wT3yH6jD1fG5sA0cZ2pE9uXb8Nq";
const GITLAB: &str = "glpat-Xq7mR2vK9nL4wT3yH6jD";
const SLACK: &str = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx";
const STRIPE: &str = "sk_live_51HqW8eK2vL9nT4yB7mX3cR6p";
const STRIPE_RK: &str = "rk_live_51HqW8eK2vL9nT4yB7mX3cR6p";
const NPM: &str = "npm_Zq3xT9vLm2Np8Rw4Ks6Hy1Jd5Fg7Cb0VaE3u";
const PYPI: &str = "pypi-AgEIcHlwaS5vcmcCJGQ3ZjM4YWI2LTk5ZDAtNDBkZS1hMzE3LTJlODk3YjQwNzM5MQ";
const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
const PEM: &str = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAzQ7mR2vK9nL4wT3yH6jD1fG5sA0cZ2pE9u\nXb8NqRt4Lw==\n-----END RSA PRIVATE KEY-----";

fn r(s: &str) -> String {
    redact(s).into_owned()
}

fn assert_kept(s: &str) {
    assert!(
        matches!(redact(s), Cow::Borrowed(_)),
        "false positive: {s:?} -> {:?}",
        redact(s)
    );
}

#[test]
fn aws() {
    assert_eq!(
        r(&format!("key id {AWS_ID} here")),
        "key id [redacted:aws_access_key] here"
    );
    assert_eq!(r("ASIAZ7QK2MNB4XYT9WQL,"), "[redacted:aws_access_key],");
    assert_eq!(
        r(&format!("aws_secret_access_key = {AWS_SECRET}")),
        "aws_secret_access_key = [redacted:aws_secret_key]"
    );
    assert_eq!(
        r(&format!("AWS_SECRET_ACCESS_KEY=\"{AWS_SECRET}\"")),
        "AWS_SECRET_ACCESS_KEY=\"[redacted:aws_secret_key]\""
    );
    assert_kept("AKIAbc is not a key, nor is AKIA1234 or XAKIAIOSFODNN7EXAMPLEX");
    assert_kept("Travel to ASIA next year");
}

#[test]
fn private_keys() {
    assert_eq!(
        r(&format!("key:\n{PEM}\nend")),
        "key:\n[redacted:private_key]\nend"
    );
    // A GCP service-account file, as raw JSON text (escaped newlines).
    let gcp = r#"{"type": "service_account", "private_key_id": "3f9a2c1b7e6d5a4f", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n", "client_email": "x@p.iam.gserviceaccount.com"}"#;
    assert_eq!(
        r(gcp),
        // The key's id names the key (as `client_email` names the account); the key goes.
        r#"{"type": "service_account", "private_key_id": "3f9a2c1b7e6d5a4f", "private_key": "[redacted:private_key]\n", "client_email": "x@p.iam.gserviceaccount.com"}"#
    );
    // Cut output: everything after BEGIN goes.
    assert_eq!(
        r("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA"),
        "[redacted:private_key]"
    );
    assert_kept("-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----");
}

#[test]
fn provider_tokens() {
    let cases = [
        (OPENAI, "openai_key"),
        (OPENAI_PROJ, "openai_key"),
        (ANTHROPIC, "anthropic_key"),
        (GITHUB, "github_token"),
        (GITHUB_PAT, "github_token"),
        ("gho_R7mQ2xK9vL4nB8wT3yH6jD1fG5sA0cZ2pE9u", "github_token"),
        (GITLAB, "gitlab_token"),
        (SLACK, "slack_token"),
        (STRIPE, "stripe_key"),
        (STRIPE_RK, "stripe_key"),
        (NPM, "npm_token"),
        (PYPI, "pypi_token"),
        (JWT, "jwt"),
    ];
    for (secret, kind) in cases {
        assert_eq!(
            r(&format!("use `{secret}` now")),
            format!("use `[redacted:{kind}]` now"),
            "{kind}"
        );
    }
    for prose in [
        "open the task-list and the disk-usage view; sk-learn is a library",
        "ask-anything-you-want-about-this-long-hyphenated-identifier",
        "sk-short and sk_test_51HqW8eK2vL9nT4yB7mX3cR6p",
        "ghp_short gho_ is a prefix; github_pat_ too",
        "glpat- prefix and xoxo hugs, xoxb-abc",
        "npm_config_cache=/tmp/npm and npm_lifecycle_event",
        "pip install pypi-simple-client",
        "eyJhbGciOiJIUzI1NiJ9 alone is only a header",
    ] {
        assert_kept(prose);
    }
}

#[test]
fn bearer_and_urls() {
    assert_eq!(
        r("curl -H 'Authorization: Bearer abc123.def-456_ghi~jkl'"),
        "curl -H 'Authorization: Bearer [redacted:bearer_token]'"
    );
    assert_eq!(
        r(r#"{"Authorization": "Bearer Zq3xT9vLm2Np8Rw4Ks6H=="}"#),
        r#"{"Authorization": "Bearer [redacted:bearer_token]"}"#
    );
    assert_eq!(
        r(&format!("Authorization: Bearer {JWT}")),
        "Authorization: Bearer [redacted:jwt]"
    );
    assert_kept("curl -H \"Authorization: Bearer $TOKEN\" and the bearer of the message");
    assert_eq!(
        r("DATABASE_URL=postgres://admin:S3cr3tPass@db.example.com:5432/app"),
        "DATABASE_URL=postgres://admin:[redacted:url_password]@db.example.com:5432/app"
    );
    assert_eq!(
        r("git clone https://oauth2:Xq7mR2vK@gitlab.example.com/g/p.git"),
        "git clone https://oauth2:[redacted:url_password]@gitlab.example.com/g/p.git"
    );
    assert_kept("see http://localhost:8080/path?a=b and git@github.com:owner/repo.git");
    assert_kept("https://user@example.com/x and mailto:someone@example.com");
    // A token as the URL's user, with no password (git sends it; attack review: kept).
    assert_eq!(
        r("git clone https://Zq3xT9vLm2Np8Rw4Ks6H7y@github.com/o/r.git"),
        "git clone https://[redacted:url_token]@github.com/o/r.git"
    );
    assert_eq!(
        r("remote: https://a1b2c3d4e5f6a7b8c9d0e1f2@git.example.org/x"),
        "remote: https://[redacted:url_token]@git.example.org/x"
    );
    assert_eq!(
        r("https://AbCdEfGhIjKlMnOpQr12@git.example.org/x"),
        "https://[redacted:url_token]@git.example.org/x"
    );
    assert_eq!(
        r("https://Zq3xT9vLm2Np8Rw4Ks6H7y.abc@git.example.org/x"),
        "https://[redacted:url_token]@git.example.org/x"
    );
    assert_eq!(
        r("https://0123456789abcdef0123456789abcdef01234567@github.com/o/r"),
        "https://[redacted:url_token]@github.com/o/r"
    );
    // Lower case and digits at random (a review: the character-mix test let it through).
    assert_eq!(
        r("git clone https://k3j4h5g6f7d8s9a0q1w2e3r4@github.com/o/r"),
        "git clone https://[redacted:url_token]@github.com/o/r"
    );
    // Names: short, one case with a few digits, the organisation Azure DevOps repeats in the
    // path, or a placeholder (a review: these were redacted).
    assert_kept("ssh://git@github.com/o/r and https://deploy-bot-for-the-team@host.example/x");
    assert_kept("https://build-agent-2024-west@ci.example.com/job");
    assert_kept("https://x@y https://ab12cd34@host.example/");
    assert_kept("https://johnsmithdeveloper1990@bitbucket.org/team/repo.git");
    assert_kept("ftp://anonymoususerfromthe1990s@ftp.example.org/pub");
    assert_kept(
        "https://ContosoEngineering2024@dev.azure.com/ContosoEngineering2024/Proj/_git/repo",
    );
    // A known token as the URL's user keeps one marker (a review: `url_password` took the
    // marker for a user and a password: `[redacted:[redacted:url_password]@`).
    assert_eq!(
        r("git clone https://ghp_0123456789abcdefABCDEF0123456789abcd@github.com/o/r"),
        "git clone https://[redacted:github_token]@github.com/o/r"
    );
}

#[test]
fn cli_flags() {
    assert_eq!(
        r("mysql --password=hunter22 -u root"),
        "mysql --password=[redacted:cli_secret] -u root"
    );
    assert_eq!(
        r("tool login --token Zq3xT9vLm2 --api-key 'a b c' --passphrase \"x y\""),
        "tool login --token [redacted:cli_secret] --api-key [redacted:cli_secret] --passphrase [redacted:cli_secret]"
    );
    assert_eq!(r("x --secret=S3cr3t!"), "x --secret=[redacted:cli_secret]");
    assert_kept("pass --password followed by the value; --token-file path; --token $GITHUB_TOKEN");
    assert_kept("usage: login --password <PASSWORD> --secret-name db");
}

#[test]
fn assignments() {
    let cases = [
        (
            "API_KEY=abc123def456",
            "API_KEY=[redacted:secret_assignment]",
        ),
        (
            "export DB_PASSWORD='p4ss-w0rd-long'",
            "export DB_PASSWORD='[redacted:secret_assignment]'",
        ),
        (
            r#"{"client_secret": "changeme-now", "user": "bob"}"#,
            r#"{"client_secret": "[redacted:secret_assignment]", "user": "bob"}"#,
        ),
        (
            "password: Tr0ub4dor&3",
            "password: [redacted:secret_assignment]",
        ),
        (
            "  authToken := \"q8Zr2xK9vLm\"",
            "  authToken := \"[redacted:secret_assignment]\"",
        ),
        ("apikey=9f8e7d6c5b4a", "apikey=[redacted:secret_assignment]"),
        (
            "Private_Key = my-secret-pass",
            "Private_Key = [redacted:secret_assignment]",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(r(input), want, "{input}");
    }
    // A value that starts with `:` is a secret unless the `:` is the second colon of `::`.
    for input in [
        "TOKEN=:Xk9mP2vLqR7t",
        "password: :hunter2hunter2",
        "password: \":Xk9#mP2vLq\"",
        "DB_PASSWORD=':r4nd0mS3cret!'",
        "api_key := :s3cr3tValue42",
    ] {
        assert!(
            r(input).contains("[redacted:secret_assignment]"),
            "{input}: {}",
            r(input)
        );
    }
    for code in [
        "token_count = 5",
        "password: string",
        "max_tokens: 100000000",
        "api_key = os.environ[\"OPENAI_API_KEY\"]",
        "const token = await getToken(user);",
        "token = crypto.randomBytes(32)",
        "self.token = self.tokenizer.encode(text)",
        "secret_key: Optional[str] = None",
        "password: ${DB_PASSWORD}",
        "token: ${{ secrets.GITHUB_TOKEN }}",
        r#"{"token_type": "access_token", "tokenizer": "wordpiece"}"#,
        "if token == other_token { return; }",
        "the password is required; tokens are counted",
        "**Token**: Generates a new session",
        // A Rust path, not an assignment (`token` + `::`).
        "test token::tests::parses_value ... ok",
        "use crate::token::TokenStream;",
    ] {
        assert_kept(code);
    }
}

#[test]
fn json_values_and_titles() {
    let mut v = json!({
        "command": format!("curl -u admin:x https://api.example.com -H 'X: {GITHUB}'"),
        "env": {"GITHUB_TOKEN": "plainvalue99", "MAX_TOKENS": 4096, "token_kind": "bearer_only"},
        "list": [OPENAI, "fine", {"nested": format!("key {AWS_ID}")}]
    });
    redact_json(&mut v);
    assert_eq!(
        v,
        json!({
            "command": "curl -u admin:[redacted:cli_secret] https://api.example.com -H 'X: [redacted:github_token]'",
            "env": {"GITHUB_TOKEN": "[redacted:secret_assignment]", "MAX_TOKENS": 4096, "token_kind": "bearer_only"},
            "list": ["[redacted:openai_key]", "fine", {"nested": "key [redacted:aws_access_key]"}]
        })
    );
    // A title cut inside a secret: the cut word still goes.
    assert_eq!(
        redact_title("Deploy with ghp_R7mQ2xK9vL4nB8…"),
        "Deploy with [redacted:truncated]…"
    );
    assert_eq!(
        redact_title("Refactor the whole implementation…"),
        "Refactor the whole implementation…"
    );
    assert_eq!(
        redact_title(&format!("use {NPM}")),
        "use [redacted:npm_token]"
    );
}

#[test]
fn borrowed_when_clean_and_timing() {
    let para = "The quick brown fox jumps over the lazy dog. Refactor the parser, then run the \
                test suite and check the output of cargo build for warnings in src/main.rs.\n";
    let text = para.repeat((1 << 20) / para.len() + 1);
    assert!(matches!(redact(&text), Cow::Borrowed(_)));
    // A text that triggers the full scan (words like `token`, `://`) but holds no secret.
    let para2 = "Count each token in https://example.com/docs and keep the password field; \
                 token_count = 5 and the task-list view.\n";
    let text2 = para2.repeat((1 << 20) / para2.len() + 1);
    assert!(matches!(redact(&text2), Cow::Borrowed(_)));
    let _ = redact("warm up");
    for (name, t) in [("no trigger", &text), ("triggers, no secret", &text2)] {
        let runs = 10;
        let start = std::time::Instant::now();
        for _ in 0..runs {
            std::hint::black_box(redact(std::hint::black_box(t)));
        }
        let per_mb =
            start.elapsed().as_secs_f64() * 1000.0 / runs as f64 / (t.len() as f64 / 1048576.0);
        println!("redact, {name}: {per_mb:.3} ms per MB");
    }
}

// ---- end to end ----

const SID: &str = "7a1c0e52-3c1e-4d7e-9a51-0a1b2c3d4e5f";

fn envelope(uuid: &str, ts: &str) -> serde_json::Value {
    json!({
        "parentUuid": null, "isSidechain": false, "userType": "external",
        "cwd": "/home/user/demo", "sessionId": SID, "version": "2.1.49",
        // A branch named after a token: the branch is redacted too.
        "gitBranch": format!("deploy/{GITHUB}"), "uuid": uuid, "timestamp": ts
    })
}

fn user(uuid: &str, content: serde_json::Value, ts: &str) -> String {
    let mut v = envelope(uuid, ts);
    v["type"] = json!("user");
    v["message"] = json!({"role": "user", "content": content});
    v.to_string()
}

fn assistant(uuid: &str, msg_id: &str, block: serde_json::Value, ts: &str) -> String {
    let mut v = envelope(uuid, ts);
    v["type"] = json!("assistant");
    v["requestId"] = json!(format!("req_{msg_id}"));
    v["message"] = json!({
        "model": "claude-sonnet-4-5", "id": msg_id, "type": "message", "role": "assistant",
        "content": [block], "stop_reason": null, "usage": {"input_tokens": 3, "output_tokens": 5}
    });
    v.to_string()
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn end_to_end_nothing_secret_reaches_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memtrail.db");
    let transcript = dir.path().join(format!("{SID}.jsonl"));
    let prompt = format!(
        "Deploy {AWS_ID} {GITHUB} zebracorn with OPENAI_API_KEY={OPENAI} and {ANTHROPIC}, \
         db postgres://admin:S3cr3tPass@db.example.com/app, slack {SLACK}"
    );
    let cmd = format!(
        "curl -H 'Authorization: Bearer {JWT}' --token Zq3xT9vLm2Qq && npm publish --otp 1 # {NPM} {GITLAB} zebracorn"
    );
    let output = format!(
        "zebracorn config:\naws_secret_access_key = {AWS_SECRET}\n{PEM}\nstripe {STRIPE} pypi {PYPI} pat {GITHUB_PAT} proj {OPENAI_PROJ}"
    );
    let orphan = format!("zebracorn orphan {STRIPE_RK}");
    let lines = [
        user("u1", json!(prompt), "2026-11-20T10:00:00.000Z"),
        assistant(
            "a1",
            "msg_01",
            json!({"type": "text", "text": "zebracorn: running it."}),
            "2026-11-20T10:00:01.000Z",
        ),
        assistant(
            "a2",
            "msg_01",
            json!({"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": cmd, "env": {"API_TOKEN": "plainvalue99"}}}),
            "2026-11-20T10:00:02.000Z",
        ),
        user(
            "u2",
            json!([{"type": "tool_result", "tool_use_id": "toolu_01", "content": output, "is_error": false}]),
            "2026-11-20T10:00:03.000Z",
        ),
        user(
            "u3",
            json!([{"type": "tool_result", "tool_use_id": "toolu_unknown", "content": orphan, "is_error": false}]),
            "2026-11-20T10:00:04.000Z",
        ),
    ];
    let mut f = std::fs::File::create(&transcript).unwrap();
    for l in &lines {
        writeln!(f, "{l}").unwrap();
    }
    drop(f);

    let mut store = Store::open(&db).unwrap();
    let rep = ingest_file(&mut store, Agent::Claude, &transcript, None).unwrap();
    let _ = rep;

    let secrets = [
        AWS_ID,
        AWS_SECRET,
        OPENAI,
        OPENAI_PROJ,
        ANTHROPIC,
        GITHUB,
        GITHUB_PAT,
        GITLAB,
        SLACK,
        STRIPE,
        STRIPE_RK,
        NPM,
        PYPI,
        JWT,
        "MIIEpAIBAAKCAQEAzQ7mR2vK9nL4wT3yH6jD1fG5sA0cZ2pE9u",
        "S3cr3tPass",
        "Zq3xT9vLm2Qq",
        "plainvalue99",
    ];
    let check_files = |when: &str| {
        let mut seen = 0;
        // The file and its WAL, compressed rows decoded.
        for (name, bytes) in
            ["memtrail.db", "memtrail.db-wal"]
                .iter()
                .zip(memtrail_testkit::store_file_bytes(
                    &dir.path().join("memtrail.db"),
                ))
        {
            seen += bytes.len();
            for s in secrets {
                assert!(!contains(&bytes, s), "{when}: {s} found in {name}");
                // The distinctive tail alone (what an FTS token would hold).
                let tail = &s[s.len().saturating_sub(16)..];
                assert!(!contains(&bytes, tail), "{when}: {tail} found in {name}");
            }
        }
        assert!(seen > 0);
    };
    check_files("before checkpoint");
    {
        let c = crate::support::open_raw(&db).unwrap();
        c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
    }
    check_files("after checkpoint");

    // The markers are visible through search and get_session.
    let f = SearchFilter {
        limit: 20,
        ..Default::default()
    };
    let hits = query::search(&store, "zebracorn", &f).unwrap();
    assert!(hits.len() >= 3, "{hits:?}");
    assert!(
        hits.iter().any(|h| h.snippet.contains("[redacted:")),
        "{hits:?}"
    );
    let hits = query::search(&store, "redacted", &f).unwrap();
    assert!(hits.len() >= 3, "{hits:?}");
    for h in &hits {
        assert!(
            h.title
                .as_deref()
                .unwrap_or("")
                .contains("[redacted:aws_access_key]")
        );
    }
    // The secrets' distinctive parts are not in the index.
    for term in [
        "R7mQ2xK9vL4nB8wT3yH6jD1fG5sA0cZ2pE9u",
        "IOSFODNN7EXAMPLE",
        "S3cr3tPass",
        "Zq3xT9vLm2Qq",
        "plainvalue99",
        "dozjgNryP4J3jVmNHl0w5N",
        "MIIEpAIBAAKCAQEAzQ7mR2vK9nL4wT3yH6jD1fG5sA0cZ2pE9u",
    ] {
        let hits = query::search(&store, term, &f).unwrap();
        assert!(hits.is_empty(), "{term}: {hits:?}");
    }

    let v = query::get_session(&store, SID, None, 0, 100, None).unwrap();
    let all = serde_json::to_string(&v).unwrap();
    for s in secrets {
        assert!(!all.contains(s), "{s} in get_session");
    }
    let title = v.session.title.clone().unwrap();
    assert!(
        title.starts_with("Deploy [redacted:aws_access_key] [redacted:github_token] zebracorn"),
        "{title}"
    );
    for kind in [
        "aws_access_key",
        "aws_secret_key",
        "openai_key",
        "anthropic_key",
        "github_token",
        "gitlab_token",
        "slack_token",
        "stripe_key",
        "npm_token",
        "pypi_token",
        "jwt",
        "private_key",
        "url_password",
        "cli_secret",
        "secret_assignment",
    ] {
        assert!(
            all.contains(&format!("[redacted:{kind}]")),
            "{kind} marker missing: {all}"
        );
    }
    assert!(all.contains("postgres://admin:[redacted:url_password]@db.example.com/app"));

    // Events, the snapshot (built and saved, as at compaction) and the MCP resume context are
    // made from the redacted messages: only markers there too, and nothing in the files.
    let rowid = query::resolve_session(&store, SID, None).unwrap();
    let timeline = memtrail_runtime::resume::timeline(&store, SID, &[], 0, 1000).unwrap();
    assert!(!timeline.events.is_empty());
    let snap = memtrail_runtime::resume::build_snapshot(&store, rowid, 4096).unwrap();
    assert!(snap.text.contains("[redacted:"), "{}", snap.text);
    store
        .write(|w| {
            w.save_snapshot(
                &memtrail_runtime::records::Standard,
                rowid,
                "precompact",
                &snap,
                0,
                None,
            )
        })
        .unwrap();
    let ctx =
        memtrail_runtime::resume::resume_context(&store, rowid, None, Some("zebracorn"), 4000)
            .unwrap();
    for (what, text) in [
        ("timeline", serde_json::to_string(&timeline).unwrap()),
        ("snapshot", snap.text.clone()),
        ("resume_context", serde_json::to_string(&ctx).unwrap()),
    ] {
        for s in secrets {
            assert!(!text.contains(s), "{s} in {what}");
        }
    }
    check_files("after the snapshot was saved");
}

/// A URL whose password is already masked with asterisks (memtrail's own `postgres://me:****@…`,
/// in `sync --init`'s and `status`'s errors and in output an agent read back) is left as it is:
/// there is nothing left to hide, and README promises the `****` form. Before, the mask was
/// taken for the password (`postgres://me:[redacted:url_password]@…`).
#[test]
fn a_url_password_masked_with_asterisks_is_kept() {
    assert_kept("memtrail: cannot connect to postgres://me:****@127.0.0.1:1/memtrail: refused");
    assert_kept("https://user:********@example.com/x");
    assert_eq!(
        r("postgres://me:**pw**@db.local/x"),
        "postgres://me:[redacted:url_password]@db.local/x"
    );
}

/// The length bounds that the patterns no longer spell as counted repetitions (`{1,100}`,
/// `{1,200}`, `{8,}`): checked after the match, with the same outcome.
#[test]
fn length_bounds_of_url_passwords_and_assigned_values() {
    let user100 = "u".repeat(100);
    let user101 = "u".repeat(101);
    assert_eq!(
        r(&format!("postgres://{user100}:hunter2pass@db.local/x")),
        format!("postgres://{user100}:[redacted:url_password]@db.local/x")
    );
    assert_kept(&format!("postgres://{user101}:hunter2pass@db.local/x"));
    let pw200 = "p".repeat(200);
    let pw201 = "p".repeat(201);
    assert_eq!(
        r(&format!("https://me:{pw200}@example.com")),
        "https://me:[redacted:url_password]@example.com"
    );
    assert_kept(&format!("https://me:{pw201}@example.com"));
    // Values assigned inline to a token-like name: 8 characters or more (characters, not
    // bytes: 7 'é' are 14 bytes). After a password word, or in an environment or configuration
    // line, any length (see `short_values_after_an_unmistakable_key`).
    assert_eq!(
        r("run with api_key=Xk9#mQ2v now"),
        "run with api_key=[redacted:secret_assignment] now"
    );
    assert_kept("run with api_key=Xk9#mQ2 now");
    assert_kept("run with api_key=ééééééé now");
    assert_eq!(
        r("run with api_key=éééééééé now"),
        "run with api_key=[redacted:secret_assignment] now"
    );
    // A short value does not hide a later one on the same line.
    assert_eq!(
        r("token=Xk9#m; password=Zq8#nW3v"),
        "token=Xk9#m; password=[redacted:secret_assignment]"
    );
}

// ---- false positives: real source code ----

/// The `.rs` files of the crates that `Cargo.lock` pins, as Cargo unpacked them under
/// `$CARGO_HOME/registry/src/*/<name>-<version>/` (real code, present wherever the workspace
/// builds): every file, in the order of a hash of its path inside its crate (a spread over all
/// crates rather than the first crates by name). Deterministic for a given `Cargo.lock`.
fn registry_sources() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).expect("Cargo.lock");
    let mut crates = std::collections::BTreeSet::new();
    let mut name = None;
    for line in lock.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_string());
        } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take()) {
            crates.insert(format!("{n}-{}", v.trim_matches('"')));
        }
    }
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let mut files = Vec::new();
    let Ok(indexes) = std::fs::read_dir(home.join("registry/src")) else {
        return files;
    };
    for index in indexes.flatten() {
        for krate in &crates {
            let mut stack = vec![index.path().join(krate)];
            while let Some(dir) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for e in entries.flatten() {
                    let p = e.path();
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        stack.push(p);
                    } else if p.extension().is_some_and(|x| x == "rs") {
                        files.push(p);
                    }
                }
            }
        }
    }
    // FNV-1a of the path below the index folder.
    let key = |p: &std::path::PathBuf| {
        let rel: Vec<_> = p
            .components()
            .rev()
            .take_while(|c| !c.as_os_str().to_string_lossy().starts_with("index."))
            .collect();
        rel.iter().rev().fold(0xcbf2_9ce4_8422_2325u64, |h, c| {
            c.as_os_str()
                .as_encoded_bytes()
                .iter()
                .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
        })
    };
    files.sort_by_cached_key(|p| (key(p), p.clone()));
    files.dedup();
    files
}

/// The spans of `original` that `redacted` replaced by a `[redacted:<kind>]` marker, as
/// `(kind, text)`. The text between markers is copied unchanged, so each marker's span ends
/// where the next copied piece starts.
fn replaced_spans<'a>(original: &'a str, redacted: &str) -> Vec<(String, &'a str)> {
    let mut spans = Vec::new();
    let Some(first) = redacted.find("[redacted:") else {
        return spans;
    };
    let mut pos = first;
    let mut rest = &redacted[first..];
    while let Some(body) = rest.strip_prefix("[redacted:") {
        let close = body.find(']').expect("marker closes");
        let kind = body[..close].to_string();
        let after = &body[close + 1..];
        let next = after.find("[redacted:").unwrap_or(after.len());
        let piece = &after[..next];
        let end = if next == after.len() {
            original.len() - piece.len()
        } else if piece.is_empty() {
            pos
        } else {
            pos + original[pos..].find(piece).expect("copied piece")
        };
        spans.push((kind, &original[pos..end]));
        pos = end + piece.len();
        rest = &after[next..];
    }
    spans
}

/// A replaced span that is code, not a value: a path (`Token::new`), a call, an index, a field
/// access (`self.token`), a reference, a macro, a concatenation, or a snake_case or camelCase
/// identifier.
fn is_expression(span: &str) -> bool {
    static CODE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(concat!(
            r"::|->|\(|\)|\[|^&|\s\+\s|^\*|!$|",
            r"^[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+$|",
            r"^_*[a-z]+(?:_+[a-z0-9]+)+$|^[a-z]+(?:[A-Z][a-z]+)+$"
        ))
        .unwrap()
    });
    CODE.is_match(span.trim_matches(['"', '\'']))
}

/// Redaction must keep stored tool output faithful to the file: of real source files (a
/// bounded, deterministic sample of the dependencies' Rust sources; `MEMTRAIL_FP_MB` sets its
/// size, 16 MB by default, a few seconds in a debug build; the full figure is in README), fewer than 1
/// in 200 may change at all, and no replaced span may be an expression.
#[test]
fn real_source_code_is_kept() {
    let budget: usize = std::env::var("MEMTRAIL_FP_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16)
        << 20;
    // `MEMTRAIL_FP_DIR` and `MEMTRAIL_FP_EXT` (`py`, `js`, …) measure another tree instead.
    let files = match std::env::var_os("MEMTRAIL_FP_DIR") {
        Some(dir) => {
            let ext = std::env::var("MEMTRAIL_FP_EXT").unwrap_or_else(|_| "rs".into());
            let mut files = Vec::new();
            let mut stack = vec![std::path::PathBuf::from(dir)];
            while let Some(d) = stack.pop() {
                for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                    let p = e.path();
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        stack.push(p);
                    } else if p.extension().is_some_and(|x| x == ext.as_str()) {
                        files.push(p);
                    }
                }
            }
            files.sort();
            files
        }
        None => registry_sources(),
    };
    let (mut bytes, mut read, mut changed, mut spans, mut exprs) =
        (0usize, 0usize, 0usize, 0usize, Vec::new());
    let start = std::time::Instant::now();
    for p in &files {
        if bytes >= budget {
            break;
        }
        let Ok(text) = std::fs::read_to_string(p) else {
            continue;
        };
        bytes += text.len();
        read += 1;
        let out = redact(&text);
        if matches!(out, Cow::Borrowed(_)) {
            continue;
        }
        changed += 1;
        for (kind, span) in replaced_spans(&text, &out) {
            spans += 1;
            if std::env::var_os("MEMTRAIL_FP_SHOW").is_some() {
                println!("{kind}\t{span:?}\t{}", p.display());
            }
            if is_expression(span) {
                exprs.push(format!("{kind} {span:?} in {}", p.display()));
            }
        }
    }
    let mb = bytes as f64 / 1e6;
    println!(
        "{read} files, {mb:.1} MB in {:.1} s: {changed} files changed, {spans} spans ({:.2} per MB), {} expressions",
        start.elapsed().as_secs_f64(),
        spans as f64 / mb,
        exprs.len()
    );
    assert!(
        bytes >= budget.min(4 << 20),
        "only {bytes} bytes of registry sources found"
    );
    assert!(exprs.is_empty(), "expressions replaced: {exprs:#?}");
    assert!(changed * 200 < read, "{changed} of {read} files changed");
}

#[test]
fn replaced_spans_and_expressions() {
    let original = "a token=abc123def456; b ghp_R7mQ2xK9vL4nB8wT3yH6jD1fG5sA0cZ2pE9u";
    let spans = replaced_spans(original, &r(original));
    assert_eq!(
        spans,
        [
            ("secret_assignment".to_string(), "abc123def456"),
            (
                "github_token".to_string(),
                "ghp_R7mQ2xK9vL4nB8wT3yH6jD1fG5sA0cZ2pE9u"
            )
        ]
    );
    for e in [
        "Token::new(1)",
        "self.token",
        "&token",
        "get_token()",
        "api_key_value",
        "authToken",
        "\"a\" + b",
    ] {
        assert!(is_expression(e), "{e}");
    }
    for s in [
        "abc123def456",
        "ghp_R7mQ2xK9vL4nB8wT3yH6jD1fG5sA0cZ2pE9u",
        "Tr0ub4dor&3x",
        "eyJhbGc.eyJzdWIi.dozjgN",
    ] {
        assert!(!is_expression(s), "{s}");
    }
}

// ---- the secret corpus ----

/// `tests/data/secrets.json`: fake secrets shaped as each provider documents them, each in a
/// natural place. Each entry: `class` (what kind of secret), `context` (`prompt`,
/// `tool_output`, `bash_input`, `write_input`, `mcp_input`), `text` (for `mcp_input`, the
/// tool input as JSON) and `secret` (the span that must not be stored).
#[derive(serde::Deserialize)]
pub struct CorpusEntry {
    pub class: String,
    pub context: String,
    pub text: String,
    pub secret: String,
}

fn corpus() -> Vec<CorpusEntry> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/secrets.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// What the store would hold of an entry: a prompt or a tool output as text, a Bash, Write or
/// MCP tool input as the JSON input the agent sent, each through the redaction the store
/// applies.
fn stored(e: &CorpusEntry) -> String {
    let mut input = match e.context.as_str() {
        "prompt" | "tool_output" => return redact(&e.text).into_owned(),
        "bash_input" => json!({"command": e.text, "description": "Run it"}),
        "write_input" => json!({"file_path": "/home/me/app/settings", "content": e.text}),
        "mcp_input" => serde_json::from_str(&e.text).unwrap(),
        other => panic!("unknown context {other}"),
    };
    redact_json(&mut input);
    input.to_string()
}

#[test]
fn secret_corpus_is_never_stored() {
    let entries = corpus();
    let mut per_class: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    let mut leaks = Vec::new();
    for e in &entries {
        assert!(
            e.text.contains(&e.secret),
            "{}: the secret is in its text",
            e.class
        );
        let out = stored(e);
        let escaped = serde_json::to_string(&e.secret).unwrap();
        let leaked = out.contains(&e.secret) || out.contains(escaped.trim_matches('"'));
        let c = per_class.entry(&e.class).or_default();
        c.0 += 1;
        if leaked {
            c.1 += 1;
            leaks.push(format!("{} ({}): {out}", e.class, e.context));
        }
    }
    for (class, (tried, kept)) in &per_class {
        println!("{class:22} {tried:3} tried {kept:3} stored");
    }
    println!("{} secrets tried, {} stored", entries.len(), leaks.len());
    assert!(entries.len() >= 150);
    assert!(
        leaks.is_empty(),
        "{} stored:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
}

/// Issue 11: exact outputs of the context rules (names without `token`/`secret`/`password`,
/// short values after an unmistakable key, headers, command lines, credential files, URLs).
#[test]
fn context_rules_exact() {
    let cases = [
        (
            "$ cat .env\nDB_PASS=letmein\nADMIN_PW=abc12\nPORT=3000\n",
            "$ cat .env\nDB_PASS=[redacted:secret_assignment]\nADMIN_PW=[redacted:secret_assignment]\nPORT=3000\n",
        ),
        (
            "docker run -e JWT_SIGNING_KEY=Zq3xT9 -e GOOGLE_APPLICATION_CREDENTIALS=/run/sa.json app",
            "docker run -e JWT_SIGNING_KEY=[redacted:secret_assignment] -e GOOGLE_APPLICATION_CREDENTIALS=/run/sa.json app",
        ),
        (
            "production:\n  username: app\n  password: hunter\n  pool: 5\n",
            "production:\n  username: app\n  password: [redacted:secret_assignment]\n  pool: 5\n",
        ),
        (
            "log in with password: hunter2 now",
            "log in with password: [redacted:secret_assignment] now",
        ),
        (
            "curl -H 'Authorization: Basic YWRtaW46czNjcjN0' -H 'X-API-Key: 9f8e7d6c5b4a' -b 'sid=Q2x3' x",
            "curl -H 'Authorization: Basic [redacted:auth_header]' -H 'X-API-Key: [redacted:http_header]' -b '[redacted:cookie]' x",
        ),
        (
            "< set-cookie: session=Xk9mP2vLq; Path=/; HttpOnly\n",
            "< set-cookie: [redacted:cookie]\n",
        ),
        (
            "mysql -h db-prod -u root -pS3cret app && sshpass -p letmein ssh h",
            "mysql -h db-prod -u root -p[redacted:cli_secret] app && sshpass -p [redacted:cli_secret] ssh h",
        ),
        (
            "curl -s -u admin:Zq9PwX1c https://h/api && curl --user 'ci:t0k3n!' -X POST u && curl -uadmin:pw2 u",
            "curl -s -u admin:[redacted:cli_secret] https://h/api && curl --user 'ci:[redacted:cli_secret]' -X POST u && curl -uadmin:[redacted:cli_secret] u",
        ),
        (
            "docker login -u me -p Hx7pass registry.io; redis-cli -h r -a s3cretpw ping",
            "docker login -u me -p [redacted:cli_secret] registry.io; redis-cli -h r -a [redacted:cli_secret] ping",
        ),
        (
            "ldapsearch -x -D cn=admin -w LdapPw9; smbclient //h/s -U bob%SmbPw1",
            "ldapsearch -x -D cn=admin -w [redacted:cli_secret]; smbclient //h/s -U bob%[redacted:cli_secret]",
        ),
        (
            // A token as curl's user, with no password; a user name that prompts for one stays.
            "curl -u sk_test_4eC39HqLyjWDarjtT1zdp7dc: https://api.stripe.com/v1/charges && curl --user 'a1b2c3d4e5f6a7b8c9d0:' u && curl -u admin: u",
            "curl -u [redacted:cli_secret]: https://api.stripe.com/v1/charges && curl --user '[redacted:cli_secret]:' u && curl -u admin: u",
        ),
        (
            "htpasswd -cb /etc/nginx/.htpasswd alice Wonder1and && htpasswd -nbB bob 'Pa ss2'\nhtpasswd -B -C 12 -b f carol Carol3pw",
            "htpasswd -cb /etc/nginx/.htpasswd alice [redacted:cli_secret] && htpasswd -nbB bob [redacted:cli_secret]\nhtpasswd -B -C 12 -b f carol [redacted:cli_secret]",
        ),
        (
            "htpasswd -nb alice S3cretPw > /etc/nginx/.htpasswd; htpasswd -nbB al S3cret2>>f; htpasswd -b -c f al S3cret3 2>&1",
            "htpasswd -nb alice [redacted:cli_secret] > /etc/nginx/.htpasswd; htpasswd -nbB al [redacted:cli_secret]>>f; htpasswd -b -c f al [redacted:cli_secret] 2>&1",
        ),
        (
            // A key another rule redacted, as curl's user: redacted once, not again inside.
            "curl -u sk_live_4eC39HqLyjWDarjtT1zdp7dc: https://api.stripe.com/v1/charges",
            "curl -u [redacted:stripe_key]: https://api.stripe.com/v1/charges",
        ),
        (
            // Without -b, htpasswd prompts: nothing on the line is a password.
            "htpasswd -c /etc/nginx/.htpasswd alice && htpasswd is installed, run it -b later",
            "htpasswd -c /etc/nginx/.htpasswd alice && htpasswd is installed, run it -b later",
        ),
        (
            // No password, or a variable: nothing to redact.
            "curl -u admin https://h && curl -u \"$USER:$TOKEN\" u && curl --user-agent 'a:b' u && docker login --password-stdin",
            "curl -u admin https://h && curl -u \"$USER:$TOKEN\" u && curl --user-agent 'a:b' u && docker login --password-stdin",
        ),
        (
            "redis-cli is installed, and ls -a shows it; docker login then docker run -p 8080:80 app",
            "redis-cli is installed, and ls -a shows it; docker login then docker run -p 8080:80 app",
        ),
        (
            "machine api.example.com login me password s3cr3t\n",
            "machine api.example.com login me password [redacted:netrc_password]\n",
        ),
        (
            "{\"auths\": {\"ghcr.io\": {\"auth\": \"bWU6cGFzcw==\"}}}",
            "{\"auths\": {\"ghcr.io\": {\"auth\": \"[redacted:docker_auth]\"}}}",
        ),
        (
            "    client-key-data: LS0tLS1CRUdJTg==\n",
            "    client-key-data: [redacted:kubeconfig_key]\n",
        ),
        (
            "localhost:5432:app:app:pgS3cret\n",
            "localhost:5432:app:app:[redacted:pgpass]\n",
        ),
        ("_auth=bWU6cGFzcw==\n", "_auth=[redacted:npmrc_auth]\n"),
        (
            "redis://:Zq3xT9vL@cache:6379 amqp://guest:pa/ss@word@mq.local/ postgres://u:p@ss@db.local",
            "redis://:[redacted:url_password]@cache:6379 amqp://guest:[redacted:url_password]@mq.local/ postgres://u:[redacted:url_password]@db.local",
        ),
        (
            "https://0123456789abcdef0123456789abcdef@o1.ingest.sentry.io/2",
            "https://[redacted:sentry_dsn]@o1.ingest.sentry.io/2",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(r(input), want, "{input}");
    }
    // Code, not configuration: the value is an expression, a type or a variable.
    for code in [
        "let token = Token::new(1);",
        "    token: Token,\n    password: &str,\n",
        "let secret_key = self.config.secret_key.clone();",
        "key: ${{ runner.os }}-cargo\nsort_key: name\nprimary_key: id\n",
        "PWD=/home/me\nOLDPWD=/tmp\nSSH_KEY=~/.ssh/id_ed25519\n",
        "if self.lt_token == other.lt_token && self.params == other.params {",
        "http://localhost:8080/@scope/pkg and https://registry.npmjs.org:443/@types/node",
        "git checkout -b feature/login",
        "token: |tokens: &[Token]| tokens.len()",
        "let mut tokens = \"tuple.0.0\".parse::<TokenStream>().unwrap();",
    ] {
        assert_kept(code);
    }
}

/// Redaction speed (a figure, not a target): ms per MB over the dependencies' Rust sources
/// and over the shared transcript fixtures, cut in 20 KB texts as a hook sees them. Run in
/// release: `cargo test --release -p memtrail-runtime --test it -- --ignored redact::redact_speed
/// --nocapture`.
#[test]
#[ignore]
fn redact_speed() {
    let mut code = String::new();
    for p in registry_sources() {
        if code.len() >= 8 << 20 {
            break;
        }
        code.push_str(&std::fs::read_to_string(p).unwrap_or_default());
    }
    let mut transcripts = String::new();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures");
    let mut stack = vec![fixtures];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else if let Ok(t) = std::fs::read_to_string(e.path()) {
                transcripts.push_str(&t);
            }
        }
    }
    let transcripts = transcripts.repeat((8 << 20) / transcripts.len().max(1) + 1);
    for (name, text) in [("Rust sources", &code), ("transcripts", &transcripts)] {
        let mut chunks = Vec::new();
        let mut rest = text.as_str();
        while !rest.is_empty() {
            let mut cut = rest.len().min(20 << 10);
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            chunks.push(&rest[..cut]);
            rest = &rest[cut..];
        }
        let start = std::time::Instant::now();
        for _ in 0..3 {
            for c in &chunks {
                std::hint::black_box(redact(std::hint::black_box(c)));
            }
        }
        let ms_per_mb = start.elapsed().as_secs_f64() * 1000.0 / 3.0 / (text.len() as f64 / 1e6);
        println!(
            "{name}: {:.1} MB in 20 KB texts, {ms_per_mb:.2} ms per MB",
            text.len() as f64 / 1e6
        );
    }
}

/// Found by a review: a secret inside a value a rule turned down (a URL after a secret's
/// name), a token as a JSON key, and passwords of common command lines, connection strings,
/// XML configuration and Google refresh tokens.
#[test]
fn secrets_inside_turned_down_values_keys_and_more_command_lines() {
    let cases = [
        (
            "Here is the token: https://app.example.com/invite?token=Zq8Wm3Lp0Xr7Ty2Vb5Nf",
            "Here is the token: https://app.example.com/invite?token=[redacted:secret_assignment]",
        ),
        (
            "  webhook_secret_url: https://hooks.example.com/in?secret=Zq8Wm3Lp0Xr7Ty2Vb5Nd",
            "  webhook_secret_url: https://hooks.example.com/in?secret=[redacted:secret_assignment]",
        ),
        (
            "Driver={ODBC Driver 18};Server=db;UID=sa;PWD=Kx7#mQ2vLp9w;Encrypt=yes",
            "Driver={ODBC Driver 18};Server=db;UID=sa;PWD=[redacted:connection_string_password];Encrypt=yes",
        ),
        (
            "Server=db;Database=app;User Id=sa;Password={Kx7;mQ2}",
            "Server=db;Database=app;User Id=sa;Password={[redacted:connection_string_password]}",
        ),
        (
            "PWD=Kx7mQ2vLp9w;UID=sa",
            "PWD=[redacted:connection_string_password];UID=sa",
        ),
        (
            "aws configure set aws_secret_access_key Kq8Wm3Lp0Xr7Ty2Vb5NfQ1",
            "aws configure set aws_secret_access_key [redacted:cli_secret]",
        ),
        (
            "<server><id>repo</id><password>Jk9lZx2cVb5</password></server>",
            "<server><id>repo</id><password>[redacted:secret_assignment]</password></server>",
        ),
        (
            r#"<add key="ApiSecret" value="Kl0zXc3vBn6Mq"/>"#,
            r#"<add key="ApiSecret" value="[redacted:secret_assignment]"/>"#,
        ),
        (
            "openssl pkcs12 -export -in c.pem -passout pass:Hx8mQ2vL -out c.p12",
            "openssl pkcs12 -export -in c.pem -passout pass:[redacted:cli_secret] -out c.p12",
        ),
        (
            "openssl enc -aes-256-cbc -k Hx8mQ2vL -in a -out b",
            "openssl enc -aes-256-cbc -k [redacted:cli_secret] -in a -out b",
        ),
        (
            "zip -r -P Hx8mQ2vL out.zip dir && 7z a -pQw3rTy9 out.7z dir",
            "zip -r -P [redacted:cli_secret] out.zip dir && 7z a -p[redacted:cli_secret] out.7z dir",
        ),
        (
            "keytool -genkey -keystore k.jks -storepass Hx8mQ2vL -keypass Qw3rTy9",
            "keytool -genkey -keystore k.jks -storepass [redacted:cli_secret] -keypass [redacted:cli_secret]",
        ),
        (
            "sqlcmd -S db -U sa -P Hx8mQ2vL -Q 'select 1'",
            "sqlcmd -S db -U sa -P [redacted:cli_secret] -Q 'select 1'",
        ),
        (
            r"net use \\srv\share /user:admin Hx8mQ2vL",
            r"net use \\srv\share /user:admin [redacted:cli_secret]",
        ),
        (
            "refresh_token is 1//0gLq8Wm3Lp0Xr7Ty2Vb5NfQ1Zq8Wm3Lp0Xr7Ty2Vb5Nf",
            "refresh_token is [redacted:google_refresh_token]",
        ),
        (
            "数据库的 password：Kx7mQ2vLp9 です",
            "数据库的 password：[redacted:secret_assignment] です",
        ),
        (
            "token：Kx7mQ2vLp9Zr，每个请求都要带上。",
            "token：[redacted:secret_assignment]，每个请求都要带上。",
        ),
        (
            "<server><passphrase>Jk9lZx2cVb5</passphrase><password><![CDATA[Hx8mQ2vLw]]></password></server>",
            "<server><passphrase>[redacted:secret_assignment]</passphrase><password><![CDATA[[redacted:secret_assignment]]]></password></server>",
        ),
        (
            r#"<property name="password" value="Kl0zXc3vBn6Mq"/>"#,
            r#"<property name="password" value="[redacted:secret_assignment]"/>"#,
        ),
        (
            "7zr a -pQw3rTy9 out.7z dir",
            "7zr a -p[redacted:cli_secret] out.7z dir",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(r(input), want, "{input}");
    }
    for kept in [
        "PWD=/home/user/app",
        "echo $PWD; cd ~",
        "net use \\\\srv\\share /user:admin *",
        "keytool -list -storepass:env STOREPASS",
        "mysql -P 3306 -h db",
        "unzip -l archive.zip",
        "<password>${env.DB_PASSWORD}</password>",
        "see https://example.com/docs?page=2 for the token: format",
        // Found by the review: configuration and code that only names a secret.
        "<UserSecretsId>79a3edd0-2092-40a2-a04d-dcb46d5ca9ed</UserSecretsId>",
        "<maxTokens>4096</maxTokens><tokenizer>bert</tokenizer>",
        r#"<add key="PasswordMinLength" value="8"/><add key="TokenExpiryMinutes" value="60"/>"#,
        "python -c 'import getpass; password = getpass.getpass()'",
        "wget https://x.example/a.zip -P downloads",
        "scp backup.zip -P 2222 host:",
        "find . -name *.7z -print",
    ] {
        assert_kept(kept);
    }
    // Code that a rule turns down spends nothing of the search inside turned-down values: a
    // URL's secret after 40 such lines is still found.
    let code = "api_key = os.environ[\"API_KEY\"]\n".repeat(40);
    let text = format!("{code}token: https://x.example/cb?token=Zq8Wm3Lp0Xr7Ty2Vb5Nf");
    assert!(
        r(&text).ends_with("?token=[redacted:secret_assignment]"),
        "{}",
        r(&text)
    );
    // Tokens as JSON keys; two keys redacted alike keep both values.
    let mut v = json!({"headers": {GITHUB: "v"}, "ghp_ZZb2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7rZ": true, "plain": 1});
    redact_json(&mut v);
    assert_eq!(
        v,
        json!({"headers": {"[redacted:github_token]": "v"}, "[redacted:github_token]": true, "plain": 1})
    );
    let mut v = json!({GITHUB: 1, "ghp_ZZb2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7rZ": 2});
    redact_json(&mut v);
    assert_eq!(
        v,
        json!({"[redacted:github_token]": 1, "[redacted:github_token] (2)": 2})
    );
}

/// A key or token said in a sentence under the name of what it is (listed as left alone by the
/// 2026-12-07 walkthrough: `the API key is X`): redacted as a password in a sentence is; prose
/// about keys and tokens stays.
#[test]
fn keys_and_tokens_in_sentences() {
    for (input, want) in [
        (
            "the API key is 7f3a9c2b1e4d5a6b, keep it safe",
            "the API key is [redacted:secret_assignment], keep it safe",
        ),
        (
            "My access token was: Xq7mR2vK9pL3w.",
            "My access token was: [redacted:secret_assignment].",
        ),
        (
            "the client secret is `S3cr3t~abc` (prod)",
            "the client secret is `[redacted:secret_assignment]` (prod)",
        ),
        (
            "Your bot token is now Zx81mQ2vLp7K",
            "Your bot token is now [redacted:secret_assignment]",
        ),
    ] {
        assert_eq!(r(input), want, "{input}");
    }
    for kept in [
        "the API key is required",
        "the access token is valid for 3600 seconds",
        "the key is to cache it",
        "the secret key is stored in the vault",
        "the API key is 32 characters long",
        "the token is expired",
        "the deploy key is read-only",
        "the API key is None",
    ] {
        assert_kept(kept);
    }
}

/// Passwords the rules missed (listed as left alone after the 2026-12-05 attack review): a
/// password said in a sentence, a prompt that names a host with its port, a quoted value
/// holding an escaped quote, and the command lines of Azure CLI, Podman, PowerShell and a
/// client reading its password from a pipe. Prose about passwords, placeholders and a test
/// harness's result line stay.
#[test]
fn passwords_in_sentences_prompts_escaped_quotes_and_piped_logins() {
    let cases = [
        (
            "Password for postgres on localhost:5432: pgpw99",
            "Password for postgres on localhost:5432: [redacted:secret_assignment]",
        ),
        (
            "The password is: Tr0ub4dor&3",
            "The password is: [redacted:secret_assignment]",
        ),
        (
            "my password is hunter2xyz, ok?",
            "my password is [redacted:secret_assignment], ok?",
        ),
        (
            "The password is `Summer2024!` for now.",
            "The password is `[redacted:secret_assignment]` for now.",
        ),
        (
            "the password for the staging db is Xk9#mQ2vLp, thanks",
            "the password for the staging db is [redacted:secret_assignment], thanks",
        ),
        (
            "the passphrase was now 123456.",
            "the passphrase was now [redacted:secret_assignment].",
        ),
        (
            r#"{"password": "pa\"ss123"}"#,
            r#"{"password": "[redacted:secret_assignment]"}"#,
        ),
        (
            r#"password: "p@ss\"word""#,
            r#"password: "[redacted:secret_assignment]""#,
        ),
        (
            "az login --service-principal -u 1234-abcd -p 'S3cr3t~Pw0rd' --tenant t1",
            "az login --service-principal -u 1234-abcd -p [redacted:cli_secret] --tenant t1",
        ),
        (
            "podman login -u me -p S3cr3tPassw0rd quay.io",
            "podman login -u me -p [redacted:cli_secret] quay.io",
        ),
        (
            r#"$c = ConvertTo-SecureString "S3cr3tPassw0rd!" -AsPlainText -Force"#,
            "$c = ConvertTo-SecureString [redacted:cli_secret] -AsPlainText -Force",
        ),
        (
            "$c = ConvertTo-SecureString -String 'S3cr3tPassw0rd!' -AsPlainText",
            "$c = ConvertTo-SecureString -String [redacted:cli_secret] -AsPlainText",
        ),
        (
            r#"echo "S3cr3tPassw0rd" | docker login -u me --password-stdin"#,
            "echo [redacted:cli_secret] | docker login -u me --password-stdin",
        ),
        (
            "printf '%s' S3cr3tPassw0rd | helm registry login r.io --password-stdin",
            "printf '%s' [redacted:cli_secret] | helm registry login r.io --password-stdin",
        ),
        ("PASS: hunter2", "PASS: [redacted:secret_assignment]"),
    ];
    for (input, want) in cases {
        assert_eq!(r(input), want, "{input}");
    }
    for kept in [
        "the password is required",
        "the password for the admin account is required",
        "Your password is incorrect.",
        "the password is 8 characters long",
        "the password is 10-20 characters",
        "the password is well-known, e.g. in the docs",
        "password is None",
        "password is SHA256 hashed",
        "password is stored in 1Password",
        "az login -u me@x.com -p $AZ_PASS",
        r#"echo -n "$PW" | docker login -u me --password-stdin"#,
        "$c = ConvertTo-SecureString $plain -AsPlainText -Force",
        r#"{\"password\": \"\"}"#,
        "PASS: t/basic.sh",
        "PASS: run.test",
        "echo hello | grep h",
    ] {
        assert_kept(kept);
    }
}
