//! The HTTP layer of `memtrail web`, in process: status codes, the Host check, the CSRF
//! check, the access token, the security headers, and the escaping of hostile transcript text
//! (fixtures/web/hostile.jsonl). The browser tests (tests/browser/) check the same pages in
//! Chromium.

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use memtrail_adapters::Agent;
use memtrail_runtime::read::ReadStore;
use memtrail_runtime::{Store, StoreLocation};
use memtrail_web::{Access, Backend, Listen};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tower::ServiceExt;

const HOST: &str = "127.0.0.1:7373";
const HOSTILE: &str = "9d0c7e21-hostile-4b6a-9f11-5c3e2d1a0b99";
const DEMO: &str = "3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1e83";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A store with the Claude fixture session (and its sub-agent) and the hostile session.
fn seeded(dir: &Path) -> PathBuf {
    let db = dir.join("s.db");
    let mut store = Store::open(StoreLocation::Sqlite(db.clone())).unwrap();
    let demo = repo().join("fixtures/claude/projects/-home-user-demo");
    // Claude Code names a session's transcript after its id.
    let hostile = dir.join(format!("{HOSTILE}.jsonl"));
    std::fs::copy(repo().join("fixtures/web/hostile.jsonl"), &hostile).unwrap();
    for p in [
        demo.join(format!("{DEMO}.jsonl")),
        demo.join(format!("{DEMO}/subagents/agent-a7f3c21.jsonl")),
        hostile,
    ] {
        memtrail_runtime::ingest::ingest_file(&mut store, Agent::Claude, &p, None).unwrap();
    }
    db
}

fn backend(db: &Path) -> Backend {
    let open_db = db.to_path_buf();
    let del_db = db.to_path_buf();
    Backend {
        open: Arc::new(move || {
            Ok(Some(
                Box::new(Store::open(StoreLocation::Sqlite(open_db.clone()))?)
                    as Box<dyn ReadStore + Send>,
            ))
        }),
        delete: Some(Arc::new(move |id: &str| {
            let mut s = Store::open(StoreLocation::Sqlite(del_db.clone()))?;
            Ok(memtrail_runtime::maintenance::delete_session(&mut s, id)?)
        })),
        status: None,
        label: db.display().to_string(),
        meaning: None,
        last_request: None,
    }
}

fn listen(token: Option<&str>) -> Listen {
    Listen {
        bind: "127.0.0.1".parse().unwrap(),
        port: 7373,
        token: token.map(str::to_string),
        allow_hosts: Vec::new(),
    }
}

struct Page {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: String,
}

async fn send(app: &Router, req: Request<Body>) -> Page {
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 24)
        .await
        .unwrap();
    Page {
        status,
        headers,
        body: String::from_utf8(bytes.to_vec()).unwrap(),
    }
}

async fn get(app: &Router, path: &str) -> Page {
    send(
        app,
        Request::get(path)
            .header(header::HOST, HOST)
            .body(Body::empty())
            .unwrap(),
    )
    .await
}

fn app(db: &Path, token: Option<&str>) -> (Router, Access) {
    let access = Access::new(&listen(token), 7373).unwrap();
    (memtrail_web::router(backend(db), access.clone()), access)
}

/// The CSRF token as the delete page's form carries it.
fn csrf_of(page: &str) -> String {
    let at = page
        .find("name=\"csrf\" value=\"")
        .unwrap_or_else(|| panic!("no csrf field in {page}"))
        + 19;
    page[at..at + 64].to_string()
}

/// A query the search refuses (no searchable word) is answered with why, as `memtrail search`
/// says it, in place of hits; "No matches" is for a query that was searched. The query in the
/// message is escaped like any text.
#[tokio::test]
async fn a_query_without_a_searchable_word_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = app(&seeded(dir.path()), None);
    let p = get(&app, "/search?q=()").await;
    assert_eq!(p.status, StatusCode::OK);
    assert!(
        p.body
            .contains("<p class=\"empty refused\">Nothing searched: the query `()` holds no searchable word.</p>"),
        "{}",
        p.body
    );
    assert!(!p.body.contains("No matches"), "{}", p.body);
    let p = get(&app, "/search?q=%3C%2F%3E").await;
    assert!(
        p.body
            .contains("Nothing searched: the query `&lt;/&gt;` holds no searchable word."),
        "{}",
        p.body
    );
    let p = get(&app, "/search?q=zzznotaword").await;
    assert!(
        p.body.contains("No matches for <q>zzznotaword</q>.") && !p.body.contains("refused"),
        "{}",
        p.body
    );
}

#[tokio::test]
async fn pages_answer_with_their_status_and_the_security_headers() {
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = app(&seeded(dir.path()), None);
    for (path, status) in [
        ("/", StatusCode::OK),
        ("/search?q=cargo", StatusCode::OK),
        ("/sessions", StatusCode::OK),
        (
            &format!("/session?id={DEMO}&agent=claude") as &str,
            StatusCode::OK,
        ),
        (&format!("/session/events?id={DEMO}"), StatusCode::OK),
        (&format!("/session/snapshot?id={DEMO}"), StatusCode::OK),
        (
            &format!("/session/handoff?id={DEMO}&to=codex"),
            StatusCode::OK,
        ),
        (&format!("/session/delete?id={DEMO}"), StatusCode::OK),
        ("/status", StatusCode::OK),
        ("/assets/htmx.min.js", StatusCode::OK),
        ("/session?id=nosuchsession", StatusCode::NOT_FOUND),
        ("/session", StatusCode::BAD_REQUEST),
        (
            "/session/handoff?id=3f2a&to=nosuchagent",
            StatusCode::BAD_REQUEST,
        ),
        ("/search?q=x&since=notadate", StatusCode::OK),
        ("/nope", StatusCode::NOT_FOUND),
        ("/assets/secret.txt", StatusCode::NOT_FOUND),
    ] {
        let p = get(&app, path).await;
        assert_eq!(p.status, status, "{path}");
        assert_eq!(
            p.headers[header::CONTENT_SECURITY_POLICY],
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            "{path}"
        );
        assert_eq!(p.headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(p.headers[header::X_FRAME_OPTIONS], "DENY");
        assert!(
            p.headers["server-timing"]
                .to_str()
                .unwrap()
                .starts_with("app;dur=")
        );
    }
    let js = get(&app, "/assets/htmx.min.js").await;
    assert_eq!(
        js.headers[header::CONTENT_TYPE],
        "text/javascript; charset=utf-8"
    );
    assert_eq!(js.body.len(), 37448);
    // A method other than GET, HEAD or POST is refused before any handler.
    let put = send(
        &app,
        Request::put("/sessions")
            .header(header::HOST, HOST)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(put.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn a_host_other_than_this_server_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = app(&seeded(dir.path()), None);
    for host in [
        Some("evil.example:7373"),
        Some("127.0.0.1:80"),
        Some("localhost"),
        Some("127.0.0.1.evil.example:7373"),
        None,
    ] {
        let mut req = Request::get("/sessions");
        if let Some(h) = host {
            req = req.header(header::HOST, h);
        }
        let p = send(&app, req.body(Body::empty()).unwrap()).await;
        assert_eq!(p.status, StatusCode::MISDIRECTED_REQUEST, "{host:?}");
        assert!(!p.body.contains(DEMO), "{host:?}");
    }
    for host in ["localhost:7373", "[::1]:7373", "LOCALHOST:7373"] {
        let p = send(
            &app,
            Request::get("/sessions")
                .header(header::HOST, host)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(p.status, StatusCode::OK, "{host}");
    }
}

fn post_delete(id: &str, csrf: Option<&str>, origin: Option<&str>) -> Request<Body> {
    let mut body = format!("id={id}");
    if let Some(c) = csrf {
        body.push_str(&format!("&csrf={c}"));
    }
    let mut req = Request::post("/session/delete")
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some(o) = origin {
        req = req.header(header::ORIGIN, o);
    }
    req.body(Body::from(body)).unwrap()
}

#[tokio::test]
async fn a_delete_needs_the_csrf_token_and_this_origin() {
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = app(&seeded(dir.path()), None);
    let confirm = get(&app, &format!("/session/delete?id={HOSTILE}")).await;
    let token = csrf_of(&confirm.body);
    // The confirmation page itself deletes nothing.
    assert_eq!(
        get(&app, &format!("/session?id={HOSTILE}")).await.status,
        StatusCode::OK
    );
    let wrong = "0".repeat(64);
    for (csrf, origin) in [
        (None, None),
        (Some(""), None),
        (Some(wrong.as_str()), None),
        (Some(&token[..63]), None),
        (Some(token.as_str()), Some("http://evil.example")),
        (Some(token.as_str()), Some("null")),
    ] {
        let p = send(&app, post_delete(HOSTILE, csrf, origin)).await;
        assert_eq!(p.status, StatusCode::FORBIDDEN, "{csrf:?} {origin:?}");
        assert_eq!(
            get(&app, &format!("/session?id={HOSTILE}")).await.status,
            StatusCode::OK,
            "still there after {csrf:?} {origin:?}"
        );
    }
    // A cross-site form post (the browser's Sec-Fetch-Site) with the right token: refused.
    let mut req = post_delete(HOSTILE, Some(&token), None);
    req.headers_mut()
        .insert("sec-fetch-site", "cross-site".parse().unwrap());
    assert_eq!(send(&app, req).await.status, StatusCode::FORBIDDEN);
    // A GET with the token deletes nothing either (changes are POSTs only).
    let g = get(&app, &format!("/session/delete?id={HOSTILE}&csrf={token}")).await;
    assert_eq!(g.status, StatusCode::OK);
    // The right token from this origin: deleted, and sent to the list.
    let p = send(
        &app,
        post_delete(HOSTILE, Some(&token.clone()), Some("http://127.0.0.1:7373")),
    )
    .await;
    assert_eq!(p.status, StatusCode::SEE_OTHER);
    assert_eq!(
        p.headers[header::LOCATION],
        format!("/sessions?deleted={HOSTILE}")
    );
    assert_eq!(
        get(&app, &format!("/session?id={HOSTILE}")).await.status,
        StatusCode::NOT_FOUND
    );
    // The other session is still there.
    assert_eq!(
        get(&app, &format!("/session?id={DEMO}")).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn with_an_access_token_only_its_holder_gets_in() {
    let dir = tempfile::tempdir().unwrap();
    let token = "correct-horse-battery-staple";
    let (app, _) = app(&seeded(dir.path()), Some(token));
    assert_eq!(
        get(&app, "/sessions").await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        get(&app, "/sessions?token=wrong-horse-battery-staple")
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    // The printed URL: the token goes into a cookie and out of the address.
    let p = get(&app, &format!("/sessions?page=0&token={token}")).await;
    assert_eq!(p.status, StatusCode::SEE_OTHER);
    assert_eq!(p.headers[header::LOCATION], "/sessions?page=0");
    assert_eq!(
        p.headers[header::SET_COOKIE],
        format!("memtrail_web={token}; HttpOnly; SameSite=Strict; Path=/")
    );
    let with_cookie = |c: &str| {
        Request::get("/sessions")
            .header(header::HOST, HOST)
            .header(header::COOKIE, c.to_string())
            .body(Body::empty())
            .unwrap()
    };
    assert_eq!(
        send(&app, with_cookie(&format!("a=b; memtrail_web={token}")))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        send(
            &app,
            with_cookie("memtrail_web=correct-horse-battery-stapl")
        )
        .await
        .status,
        StatusCode::UNAUTHORIZED
    );
    let bearer = Request::get("/sessions")
        .header(header::HOST, HOST)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&app, bearer).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_non_loopback_bind_needs_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let db = seeded(dir.path());
    let mut l = listen(None);
    l.bind = "0.0.0.0".parse().unwrap();
    l.port = 0;
    let err = memtrail_web::bind(&l, backend(&db)).await.err().unwrap();
    assert!(
        err.to_string()
            .starts_with("refusing to listen on 0.0.0.0 without an access token"),
        "{err}"
    );
    l.token = Some("short".into());
    let err = memtrail_web::bind(&l, backend(&db)).await.err().unwrap();
    assert_eq!(
        err.to_string(),
        "the access token must be at least 16 characters long"
    );
    let mut ok = listen(None);
    ok.port = 0;
    let (listener, _, url) = memtrail_web::bind(&ok, backend(&db)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    assert_eq!(url, format!("http://127.0.0.1:{port}/"));
}

/// What no page may contain: any of the hostile fixture's markup as markup.
const LIVE: [&str; 8] = [
    "<script>window",
    "<svg",
    "<img",
    "<iframe",
    "href=\"javascript:",
    "onload=\"",
    "</pre></details><iframe",
    "\"><script>",
];

#[tokio::test]
async fn hostile_transcript_text_is_shown_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = app(&seeded(dir.path()), None);
    let pages = [
        "/search?q=hostilemarker".to_string(),
        "/sessions".to_string(),
        format!("/session?id={HOSTILE}&agent=claude"),
        format!("/session/events?id={HOSTILE}"),
        format!("/session/snapshot?id={HOSTILE}"),
        format!("/session/handoff?id={HOSTILE}&to=codex"),
        format!("/session/delete?id={HOSTILE}"),
        "/search?q=%3Cscript%3Ewindow.__pwned%3D1%3C%2Fscript%3E".to_string(),
    ];
    for path in &pages {
        let p = get(&app, path).await;
        assert_eq!(p.status, StatusCode::OK, "{path}");
        for bad in LIVE {
            assert!(!p.body.contains(bad), "{path} holds {bad:?}");
        }
        // Only this server's two scripts.
        assert_eq!(
            p.body.matches("<script").count(),
            if path.contains("events") || path.contains("snapshot") {
                0
            } else {
                2
            },
            "{path}"
        );
    }
    let s = get(&app, &format!("/session?id={HOSTILE}&agent=claude"))
        .await
        .body;
    // Each payload is there, escaped.
    for shown in [
        "Render this: &lt;script&gt;window.__pwned=1;alert('pwned')&lt;/script&gt; hostilemarker",
        "[click me](javascript:window.__pwned=2)",
        "&lt;a href=&quot;javascript:window.__pwned=3&quot;&gt;here&lt;/a&gt;",
        "&lt;svg onload=&quot;window.__pwned=4&quot;&gt;",
        "&lt;img src=x onerror=&quot;window.__pwned=5&quot;&gt;",
        "$ echo '&lt;script&gt;window.__pwned=6&lt;/script&gt;'",
        "&lt;script&gt;window.__pwned=8&lt;/script&gt;&lt;/pre&gt;&lt;/details&gt;&lt;iframe src=&quot;javascript:window.top.__pwned=9&quot;&gt;&lt;/iframe&gt;",
    ] {
        assert!(s.contains(shown), "missing {shown:?}");
    }
    // The title and project are escaped in the list too.
    let list = get(&app, "/sessions").await.body;
    assert!(list.contains("/home/user/&lt;img src=x onerror=alert(1)&gt;"));
    // Every link on the pages is this server's own.
    for path in &pages {
        let body = get(&app, path).await.body;
        for (i, _) in body.match_indices("href=\"") {
            let rest = &body[i + 6..];
            assert!(
                rest.starts_with('/') || rest.starts_with('#'),
                "{path}: a link to {}",
                &rest[..rest.len().min(40)]
            );
        }
    }
}

/// A bidirectional override in transcript text (U+202E: what follows is shown right to left,
/// so `exe.txt` reads `txt.exe`) is shown as U+FFFD on every page, the search's hits and the
/// session's messages alike; the stored text keeps it.
/// A message of 3 MB (a paste) is cut on its session's page at 256 KiB with a note of the
/// bytes left out, as a long tool output is at 64 KiB (a review: a 50 MB message made a 52 MB
/// page).
#[tokio::test]
async fn a_huge_message_is_cut_on_its_page() {
    let dir = tempfile::tempdir().unwrap();
    let db = seeded(dir.path());
    let sid = "5b1e2c3d-huge-4e5f-8a9b-0c1d2e3f4a5b";
    let t = dir.path().join(format!("{sid}.jsonl"));
    let text = format!("hugeword {}", "abcdefgh ".repeat(3 * 1024 * 1024 / 9));
    let line = serde_json::json!({
        "parentUuid": null, "isSidechain": false, "userType": "external",
        "cwd": "/home/user/app", "sessionId": sid, "version": "2.1.49", "type": "user",
        "message": {"role": "user", "content": text},
        "uuid": "21111111-0000-4000-8000-000000000002", "timestamp": "2026-03-04T10:00:00.000Z"
    });
    std::fs::write(&t, format!("{line}\n")).unwrap();
    let mut store = Store::open(StoreLocation::Sqlite(db.clone())).unwrap();
    memtrail_runtime::ingest::ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    let (app, _) = app(&db, None);
    let p = get(&app, &format!("/session?id={sid}&agent=claude")).await;
    assert_eq!(p.status, StatusCode::OK);
    assert!(p.body.len() < 300 * 1024, "{} bytes", p.body.len());
    // The stored text has no trailing blank.
    let left = text.trim_end().len() - 256 * 1024;
    let note = p
        .body
        .find("more bytes]")
        .map(|i| &p.body[i.saturating_sub(40)..i + 11]);
    assert!(
        p.body.contains(&format!("… [{left} more bytes]")),
        "no note of {left} bytes: {note:?}"
    );
    assert!(p.body.contains("hugeword"));
}

#[tokio::test]
async fn a_bidirectional_override_is_shown_not_obeyed() {
    let dir = tempfile::tempdir().unwrap();
    let db = seeded(dir.path());
    let sid = "5b1e2c3d-bidi-4e5f-8a9b-0c1d2e3f4a5b";
    let t = dir.path().join(format!("{sid}.jsonl"));
    let line = serde_json::json!({
        "parentUuid": null, "isSidechain": false, "userType": "external",
        "cwd": "/home/user/app", "sessionId": sid, "version": "2.1.49", "type": "user",
        "message": {"role": "user", "content": "run bidiword attach\u{202e}exe.txt\u{2066}x\u{2069} now"},
        "uuid": "21111111-0000-4000-8000-000000000001", "timestamp": "2026-03-04T10:00:00.000Z"
    });
    std::fs::write(&t, format!("{line}\n")).unwrap();
    let mut store = Store::open(StoreLocation::Sqlite(db.clone())).unwrap();
    memtrail_runtime::ingest::ingest_file(&mut store, Agent::Claude, &t, None).unwrap();
    let (app, _) = app(&db, None);
    for path in [
        "/search?q=bidiword".to_string(),
        format!("/session?id={sid}&agent=claude"),
        "/sessions".to_string(),
    ] {
        let p = get(&app, &path).await;
        assert_eq!(p.status, StatusCode::OK, "{path}");
        assert!(
            !p.body.contains(['\u{202e}', '\u{2066}', '\u{2069}']),
            "{path} holds an override"
        );
        if !path.starts_with("/sessions") {
            assert!(
                p.body
                    .contains("attach\u{fffd}exe.txt\u{fffd}x\u{fffd} now"),
                "{path}: {}",
                p.body
            );
        }
    }
}

#[tokio::test]
async fn a_hit_links_to_its_message_on_its_page() {
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = app(&seeded(dir.path()), None);
    let p = get(&app, "/search?q=hostilemarker&role=assistant").await;
    assert!(
        p.body.contains("<p class=\"count\">1 hit</p>"),
        "{}",
        p.body
    );
    let link = format!("/session?id={HOSTILE}&amp;agent=claude&amp;at=1#m1");
    assert!(p.body.contains(&link), "{}", p.body);
    // The snippet marks the word, escaped around it.
    assert!(p.body.contains(
        "&lt;img src=x onerror=&quot;window.__pwned=5&quot;&gt; <mark>hostilemarker</mark>"
    ));
    let s = get(&app, &format!("/session?id={HOSTILE}&agent=claude&at=1")).await;
    assert!(
        s.body
            .contains("<article class=\"msg role-assistant\" id=\"m1\" tabindex=\"-1\" data-at>")
    );
    assert_eq!(s.body.matches("data-at").count(), 1);
    // htmx asks for the results alone.
    let frag = send(
        &app,
        Request::get("/search?q=hostilemarker")
            .header(header::HOST, HOST)
            .header("hx-request", "true")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert!(
        frag.body.starts_with("<p class=\"count\">2 hits</p>"),
        "{}",
        frag.body
    );
    assert!(!frag.body.contains("<html"));
    // A date half typed (`7` on the way to `7d`), or one it cannot read, is said in place of
    // the hits, in the part htmx swaps in (not a second page inside the results) and in a whole
    // page alike (found by a new user's walkthrough).
    for (fragment, since) in [(true, "7"), (true, "notadate"), (false, "7")] {
        let mut r = Request::get(format!("/search?q=hostilemarker&since={since}"))
            .header(header::HOST, HOST);
        if fragment {
            r = r.header("hx-request", "true");
        }
        let p = send(&app, r.body(Body::empty()).unwrap()).await;
        assert_eq!(p.status, StatusCode::OK, "{since}");
        assert!(
            p.body.contains(&format!(
                "<p class=\"empty refused\">Nothing searched: cannot read the date `{since}`: use YYYY-MM-DD"
            )),
            "{}",
            p.body
        );
        assert_eq!(p.body.contains("<html"), !fragment, "{}", p.body);
        assert_eq!(
            p.body.matches("class=\"top\"").count(),
            usize::from(!fragment)
        );
        assert!(!p.body.contains("hits</p>"), "{}", p.body);
    }
    // The message quotes the form's text without its control characters (the field keeps
    // what was typed).
    let p = get(&app, "/search?q=hostilemarker&since=%1b%5b31mX%07").await;
    let refused = p
        .body
        .split("class=\"empty refused\">")
        .nth(1)
        .unwrap_or_default();
    let refused = &refused[..refused.find("</p>").unwrap_or(0)];
    assert!(
        refused.contains("cannot read the date `\u{FFFD}[31mX\u{FFFD}`")
            && !refused.contains(['\u{1b}', '\u{7}']),
        "{refused}"
    );
    // Back to an earlier search: htmx restores history with a whole page.
    for (k, v) in [
        ("hx-history-restore-request", "true"),
        ("hx-request-type", "full"),
    ] {
        let whole = send(
            &app,
            Request::get("/search?q=hostilemarker")
                .header(header::HOST, HOST)
                .header("hx-request", "true")
                .header(k, v)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert!(whole.body.starts_with("<!DOCTYPE html>"), "{k}");
    }
}

#[tokio::test]
async fn sub_agents_are_listed_under_their_parent() {
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = app(&seeded(dir.path()), None);
    let list = get(&app, "/sessions").await.body;
    let parent = list
        .find(&format!("href=\"/session?id={DEMO}&amp;agent=claude\""))
        .unwrap();
    let child = list
        .find(&format!(
            "href=\"/session?id={DEMO}%2Fagent%2Da7f3c21&amp;agent=claude\""
        ))
        .or_else(|| {
            list.find(&format!(
                "href=\"/session?id={DEMO}%2Fagent-a7f3c21&amp;agent=claude\""
            ))
        })
        .expect("the sub-agent's row");
    assert!(child > parent);
    assert_eq!(list.matches("<tr class=\"child\">").count(), 1);
}

#[tokio::test]
async fn the_live_stream_sends_the_new_messages_once() {
    use futures_util::StreamExt;
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = app(&seeded(dir.path()), None);
    let resp = app
        .clone()
        .oneshot(
            Request::get(format!("/session/live?id={DEMO}&agent=claude&offset=1"))
                .header(header::HOST, HOST)
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "text/event-stream");
    let mut body = resp.into_body().into_data_stream();
    let first = String::from_utf8(body.next().await.unwrap().unwrap().to_vec()).unwrap();
    // Messages 1 and 2 of the 3, as one event whose id is the next index.
    assert!(
        first.starts_with("event: messages\nid: 3\ndata: <article class=\"msg role-"),
        "{first}"
    );
    assert!(
        first.contains("id=\"m1\"") && first.contains("id=\"m2\""),
        "{first}"
    );
    assert!(!first.contains("id=\"m0\""), "{first}");
    // A reconnect with Last-Event-ID 3: nothing new, so no event within two polls.
    let resumed = app
        .clone()
        .oneshot(
            Request::get(format!("/session/live?id={DEMO}&agent=claude&offset=1"))
                .header(header::HOST, HOST)
                .header("last-event-id", "3")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let mut resumed = resumed.into_body().into_data_stream();
    let next = tokio::time::timeout(std::time::Duration::from_millis(2500), resumed.next()).await;
    assert!(next.is_err(), "an event came: {next:?}");
}

#[tokio::test]
async fn live_streams_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = app(&seeded(dir.path()), None);
    let open = || {
        Request::get(format!("/session/live?id={DEMO}&offset=3"))
            .header(header::HOST, HOST)
            .body(Body::empty())
            .unwrap()
    };
    let mut held = Vec::new();
    for _ in 0..memtrail_web::MAX_LIVE {
        let r = app.clone().oneshot(open()).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        held.push(r);
    }
    let over = app.clone().oneshot(open()).await.unwrap();
    assert_eq!(over.status(), StatusCode::SERVICE_UNAVAILABLE);
    // A stream closed gives its place back.
    held.pop();
    let again = app.clone().oneshot(open()).await.unwrap();
    assert_eq!(again.status(), StatusCode::OK);
}

/// The text of the `<tbody>` rows of table `id` on `page`: each row's cells, tags removed.
fn table_rows(page: &str, id: &str) -> Vec<Vec<String>> {
    let start = page
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no table {id}"));
    let body = &page[start..];
    let body = &body[body.find("<tbody>").unwrap()..body.find("</tbody>").unwrap()];
    body.split("<tr>")
        .skip(1)
        .map(|row| {
            row.split("<td")
                .skip(1)
                .map(|cell| {
                    let cell = &cell[cell.find('>').unwrap() + 1..];
                    let mut text = String::new();
                    let mut in_tag = false;
                    for c in cell.chars() {
                        match c {
                            '<' => in_tag = true,
                            '>' => in_tag = false,
                            c if !in_tag => text.push(c),
                            _ => {}
                        }
                    }
                    text.trim().to_string()
                })
                .collect()
        })
        .collect()
}

/// The analytics page of the seeded store, its figures counted by hand from the fixtures: on
/// 2026-03-03 (UTC) the demo session (3 messages: the prompt, a Task call, the answer; the
/// tool result is folded into its call), its sub-agent (3: prompt, a Grep call, the answer)
/// and the hostile session (3: prompt, an answer, a Bash call), all within 10:00:00–10:00:23,
/// one 5-minute slot per project. Main sessions started: 2 (the sub-agent is part of its
/// parent's).
#[tokio::test]
async fn analytics_counts_the_fixtures_and_escapes_their_labels() {
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = app(&seeded(dir.path()), None);
    let p = get(&app, "/analytics?until=2026-03-03&days=7").await;
    assert_eq!(p.status, StatusCode::OK);
    let b = &p.body;
    assert_eq!(table_rows(b, "totals"), [["claude", "2", "9", "1"]]);
    assert_eq!(
        table_rows(b, "projects"),
        [
            // '<' sorts before 'd': on a tie, by name.
            ["/home/user/&lt;img src=x onerror=alert(1)&gt;", "", "5 min"],
            ["/home/user/demo", "", "5 min"],
        ]
    );
    assert_eq!(
        table_rows(b, "tools"),
        [
            ["Bash", "", "1", "0", "0.0 %"],
            ["Grep", "", "1", "0", "0.0 %"],
            ["Task", "", "1", "0", "0.0 %"],
        ]
    );
    assert!(b.contains("No file edited."));
    // Per day: one piece per agent and model on 2026-03-03, nothing on the other six days.
    for t in [
        "<title>2026-03-03 · claude: 9 messages</title>",
        "<title>2026-03-03 · claude: 2 sessions</title>",
        "<title>2026-03-03 · claude-opus-4-6: 4 messages</title>",
        "<title>2026-03-03 · claude-haiku-4-5-20251001: 2 messages</title>",
        "<title>2026-03-03 · (no model: user messages, tool results): 3 messages</title>",
        "<title>2026-03-03: 9 messages</title>",
        "<title>2026-03-02: 0 messages</title>",
    ] {
        assert!(b.contains(t), "missing {t}");
    }
    // The heatmap: 52 weeks and this one's Sunday to Tuesday, a cell each; 4 pieces above.
    assert_eq!(b.matches(" messages</title>").count(), 4 + 52 * 7 + 3);
    assert!(b.contains("id=\"no-tokens\""));
    // The page's own charts are its only SVG.
    assert_eq!(
        b.matches("<svg").count(),
        b.matches("<svg class=\"chart").count()
    );
    for bad in LIVE.iter().filter(|b| **b != "<svg") {
        assert!(!b.contains(bad), "holds {bad:?}");
    }
    assert_eq!(b.matches("<script").count(), 2);
    // A date it cannot read is a 400; a number of days is clamped.
    let bad = get(&app, "/analytics?until=soon").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let bad = get(&app, "/analytics?days=many").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let many = get(&app, "/analytics?until=2026-03-03&days=100000").await;
    assert_eq!(many.status, StatusCode::OK);
    assert!(many.body.contains("2025-03-03 to 2026-03-03"), "366 days");
}

/// Without search by meaning, the mode selector is disabled with the reason, and a search by
/// meaning asked for in the address says why in place of hits.
#[tokio::test]
async fn the_mode_selector_says_why_search_by_meaning_is_off() {
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = app(&seeded(dir.path()), None);
    let p = get(&app, "/search?q=hostilemarker").await;
    assert_eq!(p.status, StatusCode::OK);
    assert!(p.body.contains(
        "<select name=\"mode\" id=\"mode\" disabled aria-describedby=\"mode-why\"><option value=\"keyword\" selected>keyword</option></select>"
    ), "{}", p.body);
    assert!(p.body.contains(
        "<span class=\"hint\" id=\"mode-why\">Search by meaning is not available for this store.</span>"
    ));
    assert!(p.body.contains("<p class=\"count\">2 hits</p>"));
    assert!(!p.body.contains("id=\"ranked\""));
    for mode in ["semantic", "hybrid"] {
        let p = get(&app, &format!("/search?q=hostilemarker&mode={mode}")).await;
        assert_eq!(p.status, StatusCode::OK, "{mode}");
        assert!(p.body.contains(
            "<p class=\"empty refused\">Nothing searched: Search by meaning is not available for this store.</p>"
        ), "{}", p.body);
        assert!(!p.body.contains("hits</p>"), "{}", p.body);
    }
    let p = get(&app, "/search?q=x&mode=fuzzy").await;
    assert_eq!(p.status, StatusCode::OK);
    assert!(
        p.body.contains(
            "Nothing searched: no search mode &quot;fuzzy&quot;: keyword (or lexical), semantic or hybrid.</p>"
        ),
        "{}",
        p.body
    );
}

/// The option values of the `<select name="agent">` of `page`.
fn agent_options(page: &str) -> Vec<String> {
    let start = page
        .find("<select name=\"agent\">")
        .expect("an agent filter");
    let end = start + page[start..].find("</select>").unwrap();
    page[start..end]
        .split("<option value=\"")
        .skip(1)
        .map(|o| o[..o.find('"').unwrap()].to_string())
        .collect()
}

/// The agent filters of the search and sessions pages offer the agents with sessions (the
/// store holds Claude Code's only), and the agent filtered on even when it has none.
#[tokio::test]
async fn the_agent_filters_offer_the_agents_with_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = app(&seeded(dir.path()), None);
    for path in ["/", "/search?q=cargo", "/sessions"] {
        let p = get(&app, path).await;
        assert_eq!(p.status, StatusCode::OK, "{path}");
        assert_eq!(agent_options(&p.body), ["", "claude"], "{path}");
    }
    for path in ["/search?q=cargo&agent=codex", "/sessions?agent=codex"] {
        let p = get(&app, path).await;
        assert_eq!(agent_options(&p.body), ["", "claude", "codex"], "{path}");
        assert!(
            p.body
                .contains("<option value=\"codex\" selected>codex</option>"),
            "{path}"
        );
    }
}

/// The note after a delete names what was deleted only when it has a session id's shape: a
/// crafted link put any sentence on the page, escaped but read as the page's own ("Deleted
/// session Your data was sent to … ."; attack review).
#[tokio::test]
async fn a_crafted_deleted_note_puts_no_sentence_on_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = app(&seeded(dir.path()), None);
    let r = get(
        &app,
        "/sessions?deleted=Your+data+was+sent+to+evil.example%2C+call+555-0100",
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(!r.body.contains("Your data"), "{}", r.body);
    assert!(r.body.contains("Deleted the session."), "{}", r.body);
    let r = get(&app, &format!("/sessions?deleted={HOSTILE}")).await;
    assert!(
        r.body
            .contains(&format!("Deleted session <code>{HOSTILE}</code>.")),
        "{}",
        r.body
    );
    assert!(!r.body.contains("still in the store's files"), "{}", r.body);
    // A delete a reader kept from folding the WAL back (`SessionInfo::wal_kept`): the page's
    // own fixed sentence, and only after a delete.
    let r = get(&app, &format!("/sessions?deleted={HOSTILE}&kept=true")).await;
    assert!(
        r.body.contains(
            "so the deleted text is still in the store's files (its write-ahead log and old pages) until a later checkpoint"
        ),
        "{}",
        r.body
    );
    let r = get(&app, "/sessions?kept=true").await;
    assert!(!r.body.contains("still in the store's files"), "{}", r.body);
    // A stray value is no such delete, and no 400 (second review).
    for v in ["1", ""] {
        let r = get(&app, &format!("/sessions?deleted={HOSTILE}&kept={v}")).await;
        assert_eq!(r.status, StatusCode::OK, "{v:?}");
        assert!(!r.body.contains("still in the store's files"), "{}", r.body);
    }
}
