//! `memtrail export` end to end in a sandboxed HOME: a small fixture session
//! (fixtures/export) in every format, compared byte for byte with the output written out
//! here; the JSON read back into memtrail's own types; the hostile-text session of
//! fixtures/web as HTML (everything inert, escaped exactly); `--all` into a folder (modes,
//! names, filters) and as a JSON Lines stream.

use crate::support::Sandbox;
use memtrail_runtime::events::StoredEvent;
use memtrail_runtime::query::{MessageView, SessionSummary, SessionView};
use serde::Deserialize;
use std::path::Path;

const SID: &str = "5e551011-aaaa-4bbb-8ccc-000000000001";
const HOSTILE: &str = "9d0c7e21-hostile-4b6a-9f11-5c3e2d1a0b99";

/// A sandbox holding the export fixture (and, with `hostile`, fixtures/web's session), imported,
/// its machine labelled `testbox`.
fn sandbox(hostile: bool) -> Sandbox {
    let sb = Sandbox::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let dir = sb.claude_dir().join("projects/-home-user-shop");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        root.join(format!("export/{SID}.jsonl")),
        dir.join(format!("{SID}.jsonl")),
    )
    .unwrap();
    if hostile {
        std::fs::copy(
            root.join("web/hostile.jsonl"),
            dir.join(format!("{HOSTILE}.jsonl")),
        )
        .unwrap();
    }
    let cfg = sb.home.join(".config/memtrail/config.toml");
    std::fs::create_dir_all(cfg.parent().unwrap()).unwrap();
    std::fs::write(&cfg, "[sync]\nlabel = \"testbox\"\n").unwrap();
    sb.json(&["import", "--agent", "claude", "--json"]);
    sb
}

fn export(sb: &Sandbox, args: &[&str]) -> String {
    let out = sb.cmd().arg("export").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "export {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

const MARKDOWN: &str = "# List the files & tell me <which> is biggest

- session: `5e551011-aaaa-4bbb-8ccc-000000000001` (claude)
- project: /home/user/shop
- time: 2026-03-04T09:00:00.000Z → 2026-03-04T09:00:03.000Z
- messages: 3

## User · #0 · 2026-03-04T09:00:00.000Z

List the files & tell me <which> is biggest


## Assistant · #1 · 2026-03-04T09:00:01.000Z

I will look.

### Tool: Bash

```json
{
  \"command\": \"ls -S | head -1\",
  \"description\": \"Biggest file\"
}
```

**Output:**

```
big.tar
```


## Assistant · #2 · 2026-03-04T09:00:03.000Z

The biggest is `big.tar`.

";

const M0: &str = r#""id":"a0000000-0000-4000-8000-000000000001","index":0,"role":"user","kind":"text","text":"List the files & tell me <which> is biggest","timestamp":"2026-03-04T09:00:00.000Z","model":null,"tool_calls":[]"#;
const M1: &str = r#""id":"msg_ex_1","index":1,"role":"assistant","kind":"tool_call","text":"I will look.","timestamp":"2026-03-04T09:00:01.000Z","model":"claude-sonnet-4-5","tool_calls":[{"id":"toolu_ex_1","name":"Bash","tool":"shell","input":{"command":"ls -S | head -1","description":"Biggest file"},"output":"big.tar","is_error":false}]"#;
const M2: &str = r#""id":"msg_ex_2","index":2,"role":"assistant","kind":"text","text":"The biggest is `big.tar`.","timestamp":"2026-03-04T09:00:03.000Z","model":"claude-sonnet-4-5","tool_calls":[]"#;

#[test]
fn markdown_is_what_sessions_show_prints() {
    let sb = sandbox(false);
    let md = export(&sb, &[&SID[..8]]);
    assert_eq!(md, MARKDOWN);
    assert_eq!(export(&sb, &[SID, "--format", "md"]), MARKDOWN);
    let show = sb.cmd().args(["sessions", "show", SID]).output().unwrap();
    assert_eq!(String::from_utf8(show.stdout).unwrap(), MARKDOWN);
}

#[test]
fn jsonl_is_one_message_per_line() {
    let sb = sandbox(false);
    let head = format!(r#"{{"session_id":"{SID}","agent":"claude","#);
    assert_eq!(
        export(&sb, &[SID, "--format", "jsonl"]),
        format!("{head}{M0}}}\n{head}{M1}}}\n{head}{M2}}}\n")
    );
}

/// JSON Lines escape what a terminal would obey (DEL, C1, the reordering characters) as
/// `\u` escapes, as `json` and every `--json` do: `export --format jsonl | head` must not
/// let a transcript's U+009B (CSI) or U+009D (OSC) drive the terminal, and the values read
/// back are the stored ones (attack review: jsonl wrote them raw).
#[test]
fn jsonl_escapes_what_a_terminal_would_obey() {
    let sb = Sandbox::new();
    let sid = "c1c1c1c1-0000-4000-8000-000000000001";
    let text = "csi \u{9b}2J osc \u{9d}0;title\u{9c} del \u{7f} rlo \u{202e}dcba esc \u{1b}[31m";
    let line = serde_json::json!({
        "parentUuid": null, "isSidechain": false, "userType": "external",
        "cwd": "/home/user/c1", "sessionId": sid, "version": "2.1.49", "type": "user",
        "message": {"role": "user", "content": text},
        "uuid": "c1000000-0000-4000-8000-000000000001", "timestamp": "2026-03-05T10:00:00.000Z"
    });
    let dir = sb.claude_dir().join("projects/-home-user-c1");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{sid}.jsonl")), format!("{line}\n")).unwrap();
    sb.json(&["import", "--agent", "claude", "--json"]);
    // What a terminal would obey, besides line breaks.
    let raw = |out: &str| -> Vec<char> {
        out.chars()
            .filter(|&c| c != '\n' && memtrail_runtime::safe_text::unsafe_on_terminal(c))
            .collect()
    };
    let out = export(&sb, &[sid, "--format", "jsonl"]);
    assert_eq!(raw(&out), [], "{out}");
    let v: serde_json::Value = serde_json::from_str(out.trim_end()).unwrap();
    assert_eq!(v["text"], text, "{v}");
    // The HTML page through a pipe (`export --format html | less`): each one shown as U+FFFD
    // (they went out raw).
    let html = export(&sb, &[sid, "--format", "html"]);
    assert_eq!(raw(&html), [], "the HTML page");
    assert!(
        html.contains("csi \u{fffd}2J osc \u{fffd}0;title\u{fffd} del \u{fffd} rlo \u{fffd}dcba esc \u{fffd}[31m"),
        "{html}"
    );
}

/// A session id and a project folder that carry an OSC 52 sequence (set the clipboard) reach
/// the terminal only as U+FFFD: in `import`'s progress lines (stderr not a terminal: one line
/// per file, with its path) and in `export -o DIR`'s confirmation (attack review: both raw).
#[test]
fn ids_and_paths_in_progress_and_confirmations_are_inert() {
    let sb = Sandbox::new();
    let sid = "evil\u{1b}]52;c;aGk=\u{7}id";
    let line = serde_json::json!({
        "parentUuid": null, "isSidechain": false, "userType": "external",
        "cwd": "/home/user/e", "sessionId": sid, "version": "2.1.49", "type": "user",
        "message": {"role": "user", "content": "clipboard attempt"},
        "uuid": "e5000000-0000-4000-8000-000000000001", "timestamp": "2026-03-05T10:00:00.000Z"
    });
    let dir = sb
        .claude_dir()
        .join("projects/-home-user-e\u{1b}]52;c;aGk=\u{7}x");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{sid}.jsonl")), format!("{line}\n")).unwrap();
    let raw = |out: &str| -> Vec<char> {
        out.chars()
            .filter(|&c| c != '\n' && memtrail_runtime::safe_text::unsafe_on_terminal(c))
            .collect()
    };
    let out = sb
        .cmd()
        .args(["import", "--agent", "claude"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("+1 messages"), "{err}");
    assert_eq!(raw(&err), [], "{err:?}");
    let to = sb.home.join("exported");
    std::fs::create_dir_all(&to).unwrap();
    let out = sb
        .cmd()
        .args(["export", "evil", "-o", to.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("exported session evil\u{fffd}]52;c;aGk=\u{fffd}id to "),
        "{err:?}"
    );
    assert_eq!(raw(&err), [], "{err:?}");
}

#[test]
fn json_is_one_document_with_messages_and_events() {
    let sb = sandbox(false);
    let json = export(&sb, &[SID, "--format", "json"]);
    let session = format!(
        r#"{{"session_id":"{SID}","agent":"claude","machine":"testbox","title":"List the files & tell me <which> is biggest","project":"/home/user/shop","model":"claude-sonnet-4-5","git_branch":"main","started_at":"2026-03-04T09:00:00.000Z","updated_at":"2026-03-04T09:00:03.000Z","messages":3,"parent_session_id":null}}"#
    );
    // 2026-03-04T09:00:00Z is 1772614800 s after the epoch (20516 days × 86400 + 9 h).
    let events = concat!(
        r#"{"id":1,"seq":0,"message_id":"a0000000-0000-4000-8000-000000000001","category":"prompt","action":"submitted","priority":2,"subject":"List the files & tell me <which> is biggest","detail":null,"call_id":null,"tool":null,"ts":1772614800000},"#,
        "\n",
        r#"{"id":2,"seq":1,"message_id":"msg_ex_1","category":"command","action":"ok","priority":4,"subject":"ls -S | head -1","detail":null,"call_id":"toolu_ex_1","tool":"shell","ts":1772614801000}"#
    );
    assert_eq!(
        json,
        format!(
            "{{\"memtrail_export\":1,\"session\":{session},\"total\":3,\"children\":[],\"messages\":[\n{{{M0}}},\n{{{M1}}},\n{{{M2}}}\n],\"events\":[\n{events}\n]}}\n"
        )
    );
}

/// The export document in memtrail's own types: every field known (`deny_unknown_fields`).
#[derive(Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct Document {
    memtrail_export: u32,
    session: SessionSummary,
    total: i64,
    children: Vec<String>,
    messages: Vec<MessageView>,
    events: Vec<StoredEvent>,
}

#[test]
fn json_round_trips_through_memtrails_types() {
    let sb = sandbox(true);
    for id in [SID, HOSTILE] {
        let text = export(&sb, &[id, "--format", "json"]);
        let doc: Document = serde_json::from_str(&text).unwrap();
        assert_eq!(doc.memtrail_export, 1);
        // The same data `sessions show --json` gives, and the same text written back.
        let show: SessionView =
            serde_json::from_value(sb.json(&["sessions", "show", id, "--json"])).unwrap();
        assert_eq!(doc.session, show.session);
        assert_eq!(doc.messages, show.messages);
        assert_eq!(doc.total, show.total);
        assert_eq!(doc.children, show.children);
        assert_eq!(doc.messages.len() as i64, doc.total);
        let back: serde_json::Value = serde_json::to_value(&doc).unwrap();
        let orig: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, orig);
        // Each jsonl line is the same message with its session's id and agent.
        for (line, m) in export(&sb, &[id, "--format", "jsonl"])
            .lines()
            .zip(&doc.messages)
        {
            let mut v: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(line).unwrap();
            assert_eq!(v.remove("session_id").unwrap(), id);
            assert_eq!(v.remove("agent").unwrap(), "claude");
            let back: MessageView = serde_json::from_value(serde_json::Value::Object(v)).unwrap();
            assert_eq!(&back, m);
        }
    }
}

#[test]
fn html_is_one_self_contained_page() {
    let sb = sandbox(false);
    let html = export(&sb, &[SID, "--format", "html"]);
    let style = include_str!("../../web/assets/style.css");
    let (head, body) = html.split_once("</head>").unwrap();
    assert!(head.starts_with(r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'sha256-"#), "{head}");
    assert!(head.ends_with(&format!(
        "'; base-uri 'none'; form-action 'none'\"><meta name=\"referrer\" content=\"no-referrer\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>List the files &amp; tell me &lt;which&gt; is biggest · memtrail</title><style>{style}</style>"
    )));
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        body,
        format!(
            concat!(
                r##"<body><main><h1>List the files &amp; tell me &lt;which&gt; is biggest</h1><dl class="summary">"##,
                r##"<dt>Session</dt><dd><code>5e551011-aaaa-4bbb-8ccc-000000000001</code></dd><dt>Agent</dt><dd><span class="badge agent">claude</span></dd>"##,
                r##"<dt>Project</dt><dd class="path">/home/user/shop</dd><dt>Machine</dt><dd>testbox</dd><dt>Model</dt><dd>claude-sonnet-4-5</dd><dt>Branch</dt><dd>main</dd>"##,
                r##"<dt>Time</dt><dd>2026-03-04 09:00 → 2026-03-04 09:00</dd><dt>Messages</dt><dd>3</dd><dt>Exported</dt><dd>by memtrail {v} (as stored: redacted)</dd></dl>"##,
                r##"<section class="messages" aria-label="messages">"##,
                r##"<article class="msg role-user" id="m0" tabindex="-1"><header><span class="badge role-user">user</span> <a class="anchor" href="#m0">#0</a> <time>2026-03-04 09:00</time></header><pre class="text">List the files &amp; tell me &lt;which&gt; is biggest</pre></article>"##,
                r##"<article class="msg role-assistant" id="m1" tabindex="-1"><header><span class="badge role-assistant">assistant</span> <span class="badge kind">tool_call</span> <a class="anchor" href="#m1">#1</a> <time>2026-03-04 09:00</time> <span class="model">claude-sonnet-4-5</span></header><pre class="text">I will look.</pre>"##,
                r##"<details class="tool"><summary><span class="badge tool">shell</span> <code>Bash ls -S | head -1</code></summary><div class="io"><h4>input</h4><pre class="cmd">$ ls -S | head -1</pre><h4>output</h4><pre class="output">big.tar</pre></div></details></article>"##,
                r##"<article class="msg role-assistant" id="m2" tabindex="-1"><header><span class="badge role-assistant">assistant</span> <a class="anchor" href="#m2">#2</a> <time>2026-03-04 09:00</time> <span class="model">claude-sonnet-4-5</span></header><pre class="text">The biggest is `big.tar`.</pre></article>"##,
                "</section></main></body></html>\n"
            ),
            v = version
        )
    );
}

/// Checks that the body of an exported page (after `</head>`) holds only the markup memtrail
/// writes: every `<` opens one of the elements of the session page with one of its
/// attributes, and every link is an anchor of the page itself (`#m<index>`). maud escapes `<`,
/// `>`, `&` and `"` of any text, so a tag or an attribute that transcript text spells out can
/// only show up here as a failure.
fn assert_inert(page: &str) {
    const TAGS: &[&str] = &[
        "body", "main", "h1", "dl", "dt", "dd", "code", "span", "section", "article", "header",
        "a", "time", "pre", "details", "summary", "div", "h4", "ul", "li", "html",
    ];
    const ATTRS: &[&str] = &["class", "id", "tabindex", "href", "aria-label"];
    let body = page.split_once("</head>").unwrap().1;
    let mut rest = body;
    while let Some(i) = rest.find('<') {
        let end = rest[i..].find('>').expect("a tag without its end") + i;
        let tag = &rest[i + 1..end];
        rest = &rest[end + 1..];
        let tag = tag.strip_prefix('/').unwrap_or(tag);
        let mut parts = tag.splitn(2, ' ');
        let name = parts.next().unwrap();
        assert!(TAGS.contains(&name), "element <{tag}> in {body}");
        let mut attrs = parts.next().unwrap_or("");
        while !attrs.is_empty() {
            let (k, after) = attrs.split_once("=\"").unwrap_or((attrs, ""));
            assert!(ATTRS.contains(&k.trim()), "attribute {k} in <{tag}>");
            let (v, after) = after.split_once('"').unwrap_or(("", ""));
            if k.trim() == "href" {
                assert!(
                    v.starts_with("#m") && v[2..].bytes().all(|b| b.is_ascii_digit()),
                    "link {v}"
                );
            }
            attrs = after.trim_start();
        }
    }
    assert!(!body.contains('>') || body.matches('<').count() == body.matches('>').count());
}

#[test]
fn hostile_text_stays_inert_in_html() {
    let sb = sandbox(true);
    // A second hostile session written here: it closes the title, the style sheet, a
    // textarea and the page's own marker comment.
    let sid = "7b7b7b7b-hostile-4c4c-8d8d-0e0e0e0e0e0e";
    let nasty = "</title></style></textarea><script>window.__pwned=10</script><!--memtrail:messages--><style>*{display:none}</style>]]>";
    let line = serde_json::json!({
        "parentUuid": null, "isSidechain": false, "userType": "external",
        "cwd": "/home/user/\"><script>x</script>", "sessionId": sid, "version": "2.1.49",
        "gitBranch": "<b>main</b>", "type": "user",
        "message": {"role": "user", "content": format!("{nasty} hostilemarker")},
        "uuid": "b0000000-0000-4000-8000-000000000001", "timestamp": "2026-03-05T10:00:00.000Z"
    });
    let dir = sb.claude_dir().join("projects/-home-user-x");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{sid}.jsonl")), format!("{line}\n")).unwrap();
    sb.json(&["import", "--agent", "claude", "--json"]);

    let page = export(&sb, &[HOSTILE, "--format", "html"]);
    assert_inert(&page);
    // The payloads, escaped exactly as the web page escapes them (maud: & < > ").
    for escaped in [
        "<title>Render this: &lt;script&gt;window.__pwned=1;alert('pwned')&lt;/script&gt; hostilemarker · memtrail</title>",
        "<dd class=\"path\">/home/user/&lt;img src=x onerror=alert(1)&gt;</dd>",
        "<pre class=\"text\">Render this: &lt;script&gt;window.__pwned=1;alert('pwned')&lt;/script&gt; hostilemarker</pre>",
        "<pre class=\"text\">Links: [click me](javascript:window.__pwned=2) and &lt;a href=&quot;javascript:window.__pwned=3&quot;&gt;here&lt;/a&gt; and &lt;svg onload=&quot;window.__pwned=4&quot;&gt;&lt;circle r=9 /&gt;&lt;/svg&gt; &lt;img src=x onerror=&quot;window.__pwned=5&quot;&gt; hostilemarker</pre>",
        "<pre class=\"cmd\">$ echo '&lt;script&gt;window.__pwned=6&lt;/script&gt;'</pre>",
        "<pre class=\"output\">&lt;script&gt;window.__pwned=8&lt;/script&gt;&lt;/pre&gt;&lt;/details&gt;&lt;iframe src=&quot;javascript:window.top.__pwned=9&quot;&gt;&lt;/iframe&gt;</pre>",
    ] {
        assert!(page.contains(escaped), "{escaped} not in {page}");
    }

    let page = export(&sb, &[sid, "--format", "html"]);
    let esc = "&lt;/title&gt;&lt;/style&gt;&lt;/textarea&gt;&lt;script&gt;window.__pwned=10&lt;/script&gt;&lt;!--memtrail:messages--&gt;&lt;style&gt;*{display:none}&lt;/style&gt;]]&gt;";
    // The title as stored (the store's title rules cut this one): shown as it is.
    let title = sb.json(&["sessions", "show", sid, "--json"])["session"]["title"].clone();
    assert_eq!(title, "[redacted:truncated]…");
    assert!(page.contains("<title>[redacted:truncated]… · memtrail</title>"));
    assert!(page.contains("<h1>[redacted:truncated]…</h1>"));
    assert!(page.contains(&format!("<pre class=\"text\">{esc} hostilemarker</pre>")));
    assert!(
        page.contains(
            "<dd class=\"path\">/home/user/&quot;&gt;&lt;script&gt;x&lt;/script&gt;</dd>"
        )
    );
    assert!(page.contains("<dd>&lt;b&gt;main&lt;/b&gt;</dd>"));
    // One style element (the page's own), one page end.
    assert_inert(&page);
    assert_eq!(page.matches("<style>").count(), 1);
    assert_eq!(page.matches("</html>").count(), 1);
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn all_writes_one_owner_only_file_per_session() {
    let sb = sandbox(true);
    let out = sb.home.join("archive/2026");
    let o = out.display().to_string();
    let r = sb
        .cmd()
        .args(["export", "--all", "--format", "html", "-o", &o])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(
        String::from_utf8_lossy(&r.stderr),
        format!("exported 2 sessions to {o}\n")
    );
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            format!("claude-{SID}.html"),
            format!("claude-{HOSTILE}.html")
        ]
    );
    #[cfg(unix)]
    {
        assert_eq!(mode(&out), 0o700);
        for n in &names {
            assert_eq!(mode(&out.join(n)), 0o600);
        }
    }
    assert_eq!(
        std::fs::read_to_string(out.join(&names[0])).unwrap(),
        export(&sb, &[SID, "--format", "html"])
    );
    // --since: the hostile session (2026-03-03) is left out, the shop one (2026-03-04) kept.
    let since = sb.home.join("since");
    let r = sb
        .cmd()
        .args([
            "export",
            "--all",
            "--since",
            "2026-03-04",
            "-o",
            &since.display().to_string(),
        ])
        .output()
        .unwrap();
    assert!(r.status.success());
    let names: Vec<String> = std::fs::read_dir(&since)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [format!("claude-{SID}.md")]);
    assert_eq!(
        std::fs::read_to_string(since.join(&names[0])).unwrap(),
        MARKDOWN
    );
    // --project: only the sessions below it.
    let r = sb
        .cmd()
        .args([
            "export",
            "--all",
            "--project",
            "/home/user/shop",
            "--format",
            "jsonl",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&r.stdout).lines().count(), 3);
}

#[test]
fn all_streams_jsonl_and_refuses_other_formats_without_a_folder() {
    let sb = sandbox(true);
    let text = export(&sb, &["--all", "--format", "jsonl"]);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The shop session (3 messages, most recent first), then the hostile one.
    let hostile = sb.json(&["sessions", "show", HOSTILE, "--json"])["total"]
        .as_u64()
        .unwrap();
    assert_eq!(lines.len() as u64, 3 + hostile);
    assert_eq!(lines[0]["session_id"], SID);
    assert_eq!(lines[3]["session_id"], HOSTILE);
    let r = sb
        .cmd()
        .args(["export", "--all", "--format", "html"])
        .output()
        .unwrap();
    assert!(!r.status.success());
    assert_eq!(
        String::from_utf8_lossy(&r.stderr),
        "memtrail: --all writes one file per session: give a folder with -o DIR (or stream every message with --format jsonl)\n"
    );
    // Bad input: no session, both, an unknown session.
    assert!(!sb.cmd().args(["export"]).output().unwrap().status.success());
    assert!(
        !sb.cmd()
            .args(["export", SID, "--all"])
            .output()
            .unwrap()
            .status
            .success()
    );
    let r = sb.cmd().args(["export", "nosuchsession"]).output().unwrap();
    assert!(!r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("nosuchsession"));
}

#[test]
fn one_session_into_a_file_or_a_folder() {
    let sb = sandbox(false);
    let f = sb.home.join("out.json");
    let r = sb
        .cmd()
        .args([
            "export",
            SID,
            "--format",
            "json",
            "-o",
            &f.display().to_string(),
        ])
        .output()
        .unwrap();
    assert!(r.status.success());
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        export(&sb, &[SID, "--format", "json"])
    );
    #[cfg(unix)]
    assert_eq!(mode(&f), 0o600);
    let d = sb.home.join("dir");
    std::fs::create_dir(&d).unwrap();
    let r = sb
        .cmd()
        .args(["export", SID, "-o", &d.display().to_string()])
        .output()
        .unwrap();
    assert!(r.status.success());
    assert_eq!(
        std::fs::read_to_string(d.join(format!("claude-{SID}.md"))).unwrap(),
        MARKDOWN
    );
    // A file in a folder that does not exist: a clear error, nothing written.
    let missing = sb.home.join("nofolder/out.md");
    let r = sb
        .cmd()
        .args(["export", SID, "-o", &missing.display().to_string()])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(1));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains(&format!(
            "cannot write {}: there is no folder {}",
            missing.display(),
            sb.home.join("nofolder").display()
        )) && !err.contains("nofolder/.tmp"),
        "{err}"
    );
    assert!(!sb.home.join("nofolder").exists());
}

/// The exported pages of the fixture and of fixtures/web's hostile session, opened from disk in
/// a real Chromium (tests/browser/export_test.py): nothing runs. Skipped (with the reason)
/// without Chromium, chromedriver or selenium, unless `MEMTRAIL_REQUIRE_BROWSER=1`.
#[test]
fn exported_html_in_a_real_browser() {
    use crate::common::{self, env_flag};
    let tools = match crate::web_browser::find_tools() {
        Ok(t) => t,
        Err(why) if env_flag("MEMTRAIL_REQUIRE_BROWSER") => {
            panic!("MEMTRAIL_REQUIRE_BROWSER=1 but the browser test cannot run: {why}")
        }
        Err(why) => {
            eprintln!(
                "skipped: the browser test of `memtrail export` needs Chromium, chromedriver and selenium: {why}"
            );
            return;
        }
    };
    let sb = sandbox(true);
    let dir = sb.home.join("pages");
    let r = sb
        .cmd()
        .args([
            "export",
            "--all",
            "--format",
            "html",
            "-o",
            &dir.display().to_string(),
        ])
        .output()
        .unwrap();
    assert!(r.status.success());
    let mut pages: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    pages.sort();
    assert_eq!(pages.len(), 2);
    let mut py = std::process::Command::new(&tools.python);
    py.arg(common::repo_root().join("tests/browser/export_test.py"))
        .args(&pages)
        .env("MEMTRAIL_CHROMIUM", &tools.chromium)
        .env("MEMTRAIL_CHROMEDRIVER", &tools.chromedriver)
        .env("HOME", &sb.home)
        // selenium never looks for (or downloads) a driver of its own.
        .env("SE_OFFLINE", "true")
        .env("SE_AVOID_STATS", "true");
    let out = common::run(py, "selenium export_test.py");
    let said = String::from_utf8_lossy(&out.stdout);
    eprintln!("{said}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the browser test failed: {said}");
    // 2 pages × 10 checks (each page has a tool call).
    assert_eq!(said.lines().last(), Some("20 passed, 0 failed"));
}

/// More sessions than one list page (100) and a session longer than one read (200 messages):
/// every session once, every message once and in order.
#[test]
fn pages_of_sessions_and_of_messages() {
    use crate::support::{claude_line, session_id};
    let sb = Sandbox::new();
    let dir = sb.claude_dir().join("projects/-home-user-many");
    std::fs::create_dir_all(&dir).unwrap();
    for n in 0..230u32 {
        let sid = session_id(n);
        let lines = if n == 0 { 450 } else { 1 };
        let text: String = (0..lines)
            .map(|i| claude_line(&sid, "/home/user/many", i) + "\n")
            .collect();
        std::fs::write(dir.join(format!("{sid}.jsonl")), text).unwrap();
    }
    sb.json(&["import", "--agent", "claude", "--json"]);
    let text = export(&sb, &["--all", "--format", "jsonl"]);
    let mut per_session: std::collections::BTreeMap<String, Vec<i64>> = Default::default();
    for l in text.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        per_session
            .entry(v["session_id"].as_str().unwrap().to_string())
            .or_default()
            .push(v["index"].as_i64().unwrap());
    }
    assert_eq!(per_session.len(), 230);
    for (sid, idx) in &per_session {
        let want = if *sid == session_id(0) { 450 } else { 1 };
        assert_eq!(*idx, (0..want).collect::<Vec<i64>>(), "{sid}");
    }
    // The long session: Markdown as `sessions show`, JSON with every message in order.
    let sid = session_id(0);
    let show = sb.cmd().args(["sessions", "show", &sid]).output().unwrap();
    assert_eq!(
        export(&sb, &[&sid]),
        String::from_utf8(show.stdout).unwrap()
    );
    let doc: Document = serde_json::from_str(&export(&sb, &[&sid, "--format", "json"])).unwrap();
    assert_eq!(doc.total, 450);
    assert_eq!(
        doc.messages.iter().map(|m| m.index).collect::<Vec<_>>(),
        (0..450).collect::<Vec<i64>>()
    );
    // HTML: 450 articles, one page.
    let html = export(&sb, &[&sid, "--format", "html"]);
    assert_eq!(html.matches("<article ").count(), 450);
    assert_eq!(html.matches("</html>").count(), 1);
}
