//! A session as one self-contained HTML page, for `memtrail export --format html`: the
//! session's facts and its messages with their tool calls, rendered by the same templates as
//! the web page's session page ([`crate::pages`]), so every piece of transcript text is escaped
//! exactly as there (maud: `&`, `<`, `>`, `"`; no `PreEscaped` on store text, no `href` built
//! from it).
//!
//! No script, no external asset: the style sheet (the web page's `assets/style.css`) is inline
//! in a `<style>` element that the page's Content-Security-Policy (a `<meta http-equiv>`,
//! [`csp`]) allows by its SHA-256 hash; `default-src 'none'` forbids every script, frame,
//! image, font, fetch and form target. Tool calls fold in `<details>`, which needs no script.
//!
//! Written in parts so that a long session is never held whole: the start of [`page`], then
//! [`messages`] once per page of messages, then the end of [`page`].

use crate::pages;
use maud::{DOCTYPE, PreEscaped, html};
use memtrail_runtime::query::{MessageView, SessionView};
use sha2::Digest;

/// The web page's style sheet.
const STYLE: &str = include_str!("../assets/style.css");

/// Where the messages go in the rendered page: a comment, which no escaped text can forge
/// (maud writes a `<` of store text as `&lt;`).
const MESSAGES_HERE: &str = "<!--memtrail:messages-->";

/// The page's Content-Security-Policy: nothing may load or run but the inline style sheet,
/// allowed by its hash (`'sha256-<base64>'`, CSP Level 2 "hash-source").
pub fn csp() -> String {
    format!(
        "default-src 'none'; style-src '{}'; base-uri 'none'; form-action 'none'",
        style_hash()
    )
}

/// `sha256-<base64 of the SHA-256 of STYLE>`.
fn style_hash() -> String {
    format!("sha256-{}", base64(&sha2::Sha256::digest(STYLE.as_bytes())))
}

/// Standard base64 (RFC 4648 section 4) with padding.
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The page around its messages, as (start, end): `<head>` (charset, the CSP, the title, the
/// style sheet) and the session's facts (`v.session`, `v.total`, `v.children`; `v.messages` is
/// not used), then what closes the page. The same session gives the same bytes.
pub fn page(v: &SessionView) -> (String, String) {
    let s = &v.session;
    let title = s.title.as_deref().unwrap_or("(untitled)");
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(csp());
                meta name="referrer" content="no-referrer";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · memtrail" }
                // The web page's own style sheet: a constant of this crate, not store text.
                style { (PreEscaped(STYLE)) }
            }
            body {
                main {
                h1 { (title) }
                dl.summary {
                    dt { "Session" } dd { code { (s.session_id) } }
                    dt { "Agent" } dd { span.badge.agent { (s.agent) } }
                    @if let Some(p) = &s.project { dt { "Project" } dd.path { (p) } }
                    dt { "Machine" } dd { (s.machine) }
                    @if let Some(m) = &s.model { dt { "Model" } dd { (m) } }
                    @if let Some(b) = &s.git_branch { dt { "Branch" } dd { (b) } }
                    dt { "Time" } dd { (s.started_at.as_deref().unwrap_or("?")) " → " (s.updated_at.as_deref().unwrap_or("?")) }
                    dt { "Messages" } dd { (v.total) }
                    @if let Some(pid) = &s.parent_session_id { dt { "Parent" } dd { code { (pid) } } }
                    @if !v.children.is_empty() {
                        dt { "Sub-agents" } dd { ul.children { @for c in &v.children { li { code { (c) } } } } }
                    }
                    dt { "Exported" } dd { "by memtrail " (env!("CARGO_PKG_VERSION")) " (as stored: redacted)" }
                }
                section.messages aria-label="messages" { (PreEscaped(MESSAGES_HERE)) }
                }
            }
        }
    }
    .into_string();
    let (start, end) = page
        .split_once(MESSAGES_HERE)
        .expect("the page holds its marker");
    (start.to_string(), format!("{end}\n"))
}

/// A page of messages as the web page's session page shows them.
pub fn messages(ms: &[MessageView]) -> String {
    pages::messages(ms, None).into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        // RFC 4648 section 10.
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }

    #[test]
    fn the_csp_allows_only_the_inline_style() {
        let c = csp();
        assert!(
            c.starts_with("default-src 'none'; style-src 'sha256-"),
            "{c}"
        );
        assert_eq!(style_hash().len(), "sha256-".len() + 44);
    }
}
