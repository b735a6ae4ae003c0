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
    format!(
        "sha256-{}",
        memtrail_adapters::base64(&sha2::Sha256::digest(STYLE.as_bytes()))
    )
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
                    (pages::facts(v, false))
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
    (shown(start), format!("{end}\n"))
}

/// A page of messages as the web page's session page shows them, every control and
/// reordering character of the transcripts' text but line breaks and tabs as U+FFFD: the
/// server shows bidirectional overrides so ([`crate::security::bidi_visible`]), and an
/// exported file is also read through pipes and pagers (`export --format html | less`), where
/// an escape sequence would drive the terminal (attack review).
pub fn messages(ms: &[MessageView]) -> String {
    shown(&pages::messages(ms, None).into_string())
}

/// `html` (memtrail's own markup holds no control character) as [`messages`] shows it.
fn shown(html: &str) -> String {
    memtrail_runtime::safe_text::shown_keeping_lines(html).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

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
