//! Who may talk to the page, and what every answer carries (docs/web.md, "Security model").
//!
//! Every request: the `Host` header must name this server (loopback names, the bound address,
//! `--allow-host` names; with the port), else 421: a page on another site that rebinds its DNS
//! name to 127.0.0.1 reaches the port but not the pages. With an access token: the token in the
//! `memtrail_web` cookie (set by visiting `/?token=…`, which then redirects to drop it from the
//! address bar) or an `Authorization: Bearer` header, else 401. Every POST: the form's `csrf`
//! field must equal this process's random token, and an `Origin` (or `Sec-Fetch-Site`) header,
//! when the browser sends one, must be this server's, else 403. Every answer: a strict
//! Content-Security-Policy, `nosniff`, no framing, a referrer for this server only (`same-origin`: with `no-referrer` a browser sends `Origin: null` on a form POST), no caching of pages, and a
//! `Server-Timing` header with the server's time for the request.

use crate::{App, Listen};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

/// Shortest access token accepted (characters).
pub const TOKEN_MIN_LEN: usize = 16;

/// The cookie that carries the access token.
const COOKIE: &str = "memtrail_web";

/// Largest form body read (bytes): a delete form is an id and a token.
const MAX_FORM: usize = 16 * 1024;

/// The Content-Security-Policy of every answer: scripts, styles, fetches and forms to this
/// server only; no inline script or style, no eval, no plugins, no framing, no `<base>`.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Who is let in: the host names answered to, the access token, the CSRF token.
#[derive(Debug, Clone)]
pub struct Access {
    /// `Host` header values accepted (lower case, with the port).
    hosts: Vec<String>,
    /// The origins a POST may come from (`http://` + a host).
    origins: Vec<String>,
    token: Option<String>,
    /// This process's CSRF token: 32 random bytes, hex.
    pub(crate) csrf: String,
}

impl Access {
    /// The access rules for a server bound per `listen` on `port` (the port actually bound).
    ///
    /// Errors: the system's random source fails.
    pub fn new(listen: &Listen, port: u16) -> anyhow::Result<Access> {
        let mut names: Vec<String> = vec!["127.0.0.1".into(), "localhost".into(), "[::1]".into()];
        if !listen.bind.is_unspecified() && !listen.bind.is_loopback() {
            names.push(match listen.bind {
                IpAddr::V6(ip) => format!("[{ip}]"),
                IpAddr::V4(ip) => ip.to_string(),
            });
        }
        for h in &listen.allow_hosts {
            let h = h.trim().to_ascii_lowercase();
            if !h.is_empty() {
                names.push(h);
            }
        }
        let mut hosts = Vec::new();
        for n in &names {
            if has_port(n) {
                hosts.push(n.clone());
            } else {
                hosts.push(format!("{n}:{port}"));
                if port == 80 {
                    hosts.push(n.clone());
                }
            }
        }
        let origins = hosts.iter().map(|h| format!("http://{h}")).collect();
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|e| anyhow::anyhow!("no random source for the CSRF token: {e}"))?;
        let csrf = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(Access {
            hosts,
            origins,
            token: listen.token.clone(),
            csrf,
        })
    }

    fn host_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .is_some_and(|h| self.hosts.iter().any(|a| a.eq_ignore_ascii_case(h)))
    }

    /// Whether the request carries the access token (always true without one).
    fn token_ok(&self, headers: &HeaderMap) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let cookie = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|c| {
                c.trim()
                    .strip_prefix(&format!("{COOKIE}="))
                    .map(str::to_string)
            })
            .any(|c| same(&c, token));
        cookie || bearer.is_some_and(|b| same(b, token))
    }

    /// Whether a POST comes from this server's own pages (the browser's `Origin` or
    /// `Sec-Fetch-Site`, when it sends them; a client that sends neither is not a browser
    /// driven by another site).
    fn same_origin(&self, headers: &HeaderMap) -> bool {
        if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
            && !matches!(site, "same-origin" | "none")
        {
            return false;
        }
        match headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
            Some(o) => self.origins.iter().any(|a| a.eq_ignore_ascii_case(o)),
            None => true,
        }
    }
}

fn has_port(host: &str) -> bool {
    match host.rsplit_once(':') {
        Some((h, p)) => !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && !h.ends_with(':'),
        None => false,
    }
}

/// Equality of two secrets in time independent of where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// `s` percent-encoded for a URL's query (everything but unreserved characters).
pub(crate) fn encode(s: &str) -> String {
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
    const QUERY: &percent_encoding::AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    utf8_percent_encode(s, QUERY).to_string()
}

fn refuse(status: StatusCode, why: &str) -> Response {
    (status, crate::pages::error_page(status, why)).into_response()
}

/// The security layer around every route (see the module's documentation).
pub(crate) async fn guard(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    app.mark_activity();
    let access = &app.access;
    // Without a token, a loopback page is its user's: another local account connecting to the
    // port (any user can reach 127.0.0.1) is refused. The peer's uid is the owner of its socket,
    // told once when the connection was accepted (crate::peer); where it cannot be known, the
    // connection is let through.
    let foreign = access.token.is_none()
        && req
            .extensions()
            .get::<axum::extract::ConnectInfo<crate::peer::Peer>>()
            .is_some_and(|c| c.0.foreign.is_some());
    let mut resp = if foreign {
        refuse(
            StatusCode::FORBIDDEN,
            "this page is for the user who started `memtrail web`; another account on this machine is not let in (to share it, start it with an access token: --token or MEMTRAIL_WEB_TOKEN)",
        )
    } else if !access.host_ok(req.headers()) {
        refuse(
            StatusCode::MISDIRECTED_REQUEST,
            "this server does not answer to that host name (add it with --allow-host if it is really this machine)",
        )
    } else if let Some(token) = token_in_query(&req)
        && access.token.as_deref().is_some_and(|t| same(&token, t))
    {
        // Visiting the printed URL: keep the token in a cookie, drop it from the address.
        let mut r = Redirect::to(&path_without_token(&req)).into_response();
        if let Ok(v) = HeaderValue::from_str(&format!(
            "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
        )) {
            r.headers_mut().insert(header::SET_COOKIE, v);
        }
        r
    } else if !access.token_ok(req.headers()) {
        refuse(
            StatusCode::UNAUTHORIZED,
            "this server needs its access token: open the URL `memtrail web` printed",
        )
    } else if req.method() == Method::POST {
        check_post(access, req, next).await
    } else if req.method() == Method::GET || req.method() == Method::HEAD {
        bidi_shown(next.run(req).await).await
    } else {
        refuse(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
    };
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if let Ok(v) = HeaderValue::from_str(&format!(
        "app;dur={:.2}",
        started.elapsed().as_secs_f64() * 1000.0
    )) {
        h.insert("server-timing", v);
    }
    app.mark_activity();
    resp
}

pub use memtrail_runtime::safe_text::is_bidi_override;

/// `html` with every [`is_bidi_override`] character shown as U+FFFD (memtrail's own templates
/// hold none: each one comes from transcript text); borrowed when there is none. Each is 3
/// bytes in UTF-8, as U+FFFD is: the length does not change.
pub fn bidi_visible(html: &str) -> std::borrow::Cow<'_, str> {
    if html.chars().any(is_bidi_override) {
        html.chars()
            .map(|c| if is_bidi_override(c) { '\u{fffd}' } else { c })
            .collect::<String>()
            .into()
    } else {
        html.into()
    }
}

/// An HTML page ([`header::CONTENT_TYPE`] `text/html`) through [`bidi_visible`]; any other
/// answer (assets, the live stream, which does it itself) as it is.
async fn bidi_shown(resp: Response) -> Response {
    let html = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/html"));
    if !html {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the page could not be read",
        );
    };
    let body = match std::str::from_utf8(&bytes).map(bidi_visible) {
        Ok(std::borrow::Cow::Owned(s)) => Body::from(s),
        _ => Body::from(bytes),
    };
    Response::from_parts(parts, body)
}

/// A POST: same origin, then the form's `csrf` field checked before the handler reads it.
async fn check_post(access: &Access, req: Request, next: Next) -> Response {
    if !access.same_origin(req.headers()) {
        return refuse(
            StatusCode::FORBIDDEN,
            "refused: this change was not sent from memtrail's own page",
        );
    }
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_FORM).await {
        Ok(b) => b,
        Err(_) => return refuse(StatusCode::PAYLOAD_TOO_LARGE, "form too large"),
    };
    let token = form_field(&bytes, "csrf");
    if !token.is_some_and(|t| same(&t, &access.csrf)) {
        return refuse(
            StatusCode::FORBIDDEN,
            "refused: the form's CSRF token is missing or wrong (reload the page and try again)",
        );
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The value of field `name` in an `application/x-www-form-urlencoded` body.
fn form_field(body: &[u8], name: &str) -> Option<String> {
    body.split(|b| *b == b'&').find_map(|pair| {
        let (k, v) = match pair.iter().position(|b| *b == b'=') {
            Some(i) => (&pair[..i], &pair[i + 1..]),
            None => (pair, &[][..]),
        };
        (k == name.as_bytes()).then(|| decode(v))
    })
}

fn decode(v: &[u8]) -> String {
    let plus: Vec<u8> = v
        .iter()
        .map(|b| if *b == b'+' { b' ' } else { *b })
        .collect();
    percent_encoding::percent_decode(&plus)
        .decode_utf8_lossy()
        .into_owned()
}

/// The request's query string (after `?`; empty without one).
fn query_string(req: &Request) -> &str {
    req.uri()
        .path_and_query()
        .and_then(|pq| pq.as_str().split_once('?'))
        .map_or("", |(_, q)| q)
}

fn token_in_query(req: &Request) -> Option<String> {
    form_field(query_string(req).as_bytes(), "token").filter(|t| !t.is_empty())
}

/// The request's path and query without its `token` parameter.
fn path_without_token(req: &Request) -> String {
    let rest: Vec<&str> = query_string(req)
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("token="))
        .collect();
    let path = req.uri().path();
    if rest.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", rest.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_fields_are_decoded() {
        assert_eq!(
            form_field(b"id=a%2Fb+c&csrf=xyz", "id").as_deref(),
            Some("a/b c")
        );
        assert_eq!(form_field(b"id=a&csrf=xyz", "csrf").as_deref(), Some("xyz"));
        assert_eq!(form_field(b"id=a&csrfx=xyz", "csrf"), None);
        assert_eq!(form_field(b"csrf", "csrf").as_deref(), Some(""));
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "ab"));
    }

    #[test]
    fn hosts_get_the_port() {
        let l = Listen {
            bind: "127.0.0.1".parse().unwrap(),
            port: 0,
            token: None,
            allow_hosts: vec!["Box.local".into(), "proxy:8443".into()],
        };
        let a = Access::new(&l, 7373).unwrap();
        assert_eq!(
            a.hosts,
            [
                "127.0.0.1:7373",
                "localhost:7373",
                "[::1]:7373",
                "box.local:7373",
                "proxy:8443"
            ]
        );
        assert_eq!(a.csrf.len(), 64);
    }
}
