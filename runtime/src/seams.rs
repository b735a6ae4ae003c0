//! Redaction across the parts of a message: what [`crate::redact`], which reads one string at a
//! time, cannot see.
//!
//! A message is several strings: its content blocks (text, thinking), tool inputs and outputs.
//! Claude Code writes one transcript line per content block and the store merges the lines of a
//! message, so two halves of a secret, or the two tags of a `<private>` span, often arrive in
//! different records, even in different ingests. [`redact_message`] runs on the whole message
//! (the stored parts and the new ones, each already redacted on its own) each time it is
//! written, and only changes the places below; it is idempotent.
//!
//! - **`<private>` spans across parts.** A span opened in one part and closed in a later part
//!   of the same message hides everything between (the parts in between become `[private]`,
//!   the closing part keeps what follows the tag). A span left open hides the rest of the
//!   message: the opening part ends with [`PRIVATE_OPEN_MARKER`], every later part is
//!   `[private]`. A span never reaches into a later message. A closing tag in a user prompt
//!   with no opening tag before it in the message closes a span the user opened in an earlier
//!   prompt: the prompt is hidden from its start up to the tag (in other parts, such as tool
//!   output quoting a file, a stray closing tag is left as it is).
//! - **A secret split across two adjacent text parts** (or two thinking parts): the last line
//!   of the first and the first line of the second are read joined (at most [`SEAM_BYTES`] on
//!   each side), and what redaction finds across the seam is replaced in both parts. When the
//!   first part already ends with a `[redacted:…]` marker, the run of token characters that
//!   starts the second part is the rest of that secret and is removed.
//! - **A PEM private key split across two tool outputs** (or any two parts): the first ends
//!   inside the key and the `private_key` rule redacts it to its end; in the second, the body
//!   lines (base64, optionally numbered as by a file-reading tool) before an `-----END … PRIVATE
//!   KEY-----` line with no BEGIN before it are replaced, with the END line, by
//!   `[redacted:private_key]`.
//!
//! Known limits: a key split over three or more outputs leaves the middle ones (base64 lines
//! only) as they are; a secret split across two messages (other than a PEM key's end) is not
//! joined.

use crate::redact::{MARKER_PREFIX, PRIVATE_MARKER, PRIVATE_OPEN_MARKER, redact};
use memtrail_adapters::{Message, Part, Role};
use regex::Regex;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::LazyLock;

/// Most bytes read on each side of a seam between two text parts.
pub const SEAM_BYTES: usize = 1024;

/// What a string of a message is, for the rules above.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Text,
    Thinking,
    Other,
}

/// A closing `</private>` tag, spelled as [`crate::redact::strip_private`] accepts it.
static CLOSE_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)<[ \t\r\n]*/[ \t\r\n]*private[ \t\r\n]*>").expect("closing tag rule compiles")
});

/// Apply the rules of the [module](self) to `m` (parts already redacted one by one).
pub fn redact_message(m: &mut Message) {
    let user = m.role == Role::User;
    let mut pieces: Vec<(Kind, &mut String)> = Vec::new();
    for p in m.parts.iter_mut() {
        match p {
            Part::Text { text } => pieces.push((Kind::Text, text)),
            Part::Thinking { text } => pieces.push((Kind::Thinking, text)),
            Part::ToolCall(c) => {
                strings_mut(&mut c.input, &mut pieces);
                if let Some(o) = c.output.as_mut() {
                    pieces.push((Kind::Other, o));
                }
            }
            Part::ToolResult { output, .. } => pieces.push((Kind::Other, output)),
        }
    }
    private_spans(&mut pieces, user);
    for (_, p) in pieces.iter_mut() {
        key_end(p);
    }
    for i in 1..pieces.len() {
        let (a, b) = pieces.split_at_mut(i);
        let (ka, a) = (a[i - 1].0, &mut *a[i - 1].1);
        let (kb, b) = (b[0].0, &mut *b[0].1);
        if ka == kb && ka != Kind::Other {
            seam(a, b);
        }
    }
}

/// Every string inside a JSON value, depth first, as [`Kind::Other`].
fn strings_mut<'a>(v: &'a mut Value, out: &mut Vec<(Kind, &'a mut String)>) {
    match v {
        Value::String(s) => out.push((Kind::Other, s)),
        Value::Array(a) => a.iter_mut().for_each(|x| strings_mut(x, out)),
        Value::Object(o) => o.values_mut().for_each(|x| strings_mut(x, out)),
        _ => {}
    }
}

/// `<private>` spans that cross parts (see the [module](self) docs).
fn private_spans(pieces: &mut [(Kind, &mut String)], user: bool) {
    // The part whose end holds the marker of the span still open.
    let mut open: Option<usize> = None;
    for i in 0..pieces.len() {
        if let Some(j) = open {
            let p = &mut *pieces[i].1;
            match CLOSE_RE.find(p) {
                Some(tag) => {
                    *p = format!("{PRIVATE_MARKER}{}", &p[tag.end()..]);
                    close_marker(&mut *pieces[j].1);
                    open = None;
                }
                None => {
                    if p.as_str() != PRIVATE_MARKER {
                        *p = PRIVATE_MARKER.to_string();
                    }
                    continue;
                }
            }
        } else if user
            && pieces[i].0 == Kind::Text
            && may_close(pieces[i].1)
            && let Some(tag) = CLOSE_RE.find(pieces[i].1)
        {
            // A span opened in an earlier prompt ends here.
            let end = tag.end();
            for (_, p) in pieces[..i].iter_mut() {
                if p.as_str() != PRIVATE_MARKER {
                    **p = PRIVATE_MARKER.to_string();
                }
            }
            let p = &mut *pieces[i].1;
            *p = format!("{PRIVATE_MARKER}{}", &p[end..]);
        }
        if pieces[i].1.ends_with(PRIVATE_OPEN_MARKER) {
            open = Some(i);
        }
    }
}

/// Whether `s` may hold a closing tag: a `<`, blanks, `/`, blanks, `private` (a prompt without
/// one, nearly all, is passed over without the regex, whose compilation a hook would pay).
fn may_close(s: &str) -> bool {
    let b = s.as_bytes();
    let blanks = |r: &[u8]| {
        r.iter()
            .take_while(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
            .count()
    };
    memchr::memchr_iter(b'<', b).any(|i| {
        let mut r = &b[i + 1..];
        r = &r[blanks(r)..];
        let Some(r) = r.strip_prefix(b"/") else {
            return false;
        };
        let r = &r[blanks(r)..];
        r.len() >= 7 && r[..7].eq_ignore_ascii_case(b"private")
    })
}

/// The open-span marker at the end of `p` becomes the closed one.
fn close_marker(p: &mut String) {
    if p.ends_with(PRIVATE_OPEN_MARKER) {
        p.truncate(p.len() - PRIVATE_OPEN_MARKER.len());
        p.push_str(PRIVATE_MARKER);
    }
}

/// The body lines and `-----END … PRIVATE KEY-----` line of a key whose BEGIN line is not in
/// `p` (it was in an earlier output), replaced by `[redacted:private_key]`.
fn key_end(p: &mut String) {
    const TAIL: &[u8] = b"PRIVATE KEY-----";
    const REDACTED: &str = "[redacted:private_key]";
    // The `private_key` rule already replaced every BEGIN … END (or BEGIN … end of text): a
    // tail left is an END line whose BEGIN is elsewhere.
    let mut from = 0;
    while let Some(rel) = memchr::memmem::find(&p.as_bytes()[from..], TAIL) {
        let at = from + rel;
        // Back from the tail over what may stand between `-----END` and it (blanks, capitals,
        // digits): that run ends right after the `-----` of the END line, if there is one.
        // Read only that far (reading back to the line's start for every tail was quadratic
        // on a long line of tails).
        let allowed = |b: &u8| *b == b' ' || b.is_ascii_uppercase() || b.is_ascii_digit();
        let k = at
            - p.as_bytes()[..at]
                .iter()
                .rev()
                .take_while(|b| allowed(b))
                .count();
        if !(k >= 5 && p.as_bytes()[k - 5..].starts_with(b"-----END")) {
            from = at + TAIL.len();
            continue;
        }
        let end_tag = k - 5;
        let line_start = p[..end_tag].rfind('\n').map_or(0, |i| i + 1);
        // From the start of the END line when only a line number or blanks come before the
        // tag, then back over the body lines.
        let mut start = if is_body_line(&p[line_start..end_tag]) {
            line_start
        } else {
            end_tag
        };
        while start > 0 && p.as_bytes()[start - 1] == b'\n' {
            let prev = p[..start - 1].rfind('\n').map_or(0, |i| i + 1);
            if !is_body_line(&p[prev..start]) {
                break;
            }
            start = prev;
        }
        p.replace_range(start..at + TAIL.len(), REDACTED);
        from = start + REDACTED.len();
    }
}

/// A line of a PEM body as printed: base64 (at most 76 characters), possibly after a line
/// number (`  12→`, `12\t`, `12:`), or a blank line; with its `\n`.
fn is_body_line(line: &str) -> bool {
    let l = line.trim_end_matches(['\n', '\r']).trim_start();
    let digits = l.bytes().take_while(u8::is_ascii_digit).count();
    let l = if digits > 0 {
        let rest = &l[digits..];
        rest.strip_prefix('→')
            .or_else(|| rest.strip_prefix('\t'))
            .or_else(|| rest.strip_prefix(':'))
            .unwrap_or(l)
    } else {
        l
    };
    let l = l.trim();
    l.len() <= 76
        && l.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=')
}

/// Redact a secret split between the end of `a` and the start of `b` (adjacent parts).
fn seam(a: &mut String, b: &mut String) {
    if a.is_empty() || b.is_empty() {
        return;
    }
    // The first part ends with a marker: a token that goes on in the second is the rest of it.
    if a.ends_with(']')
        && let Some(m) = a.rfind(MARKER_PREFIX)
        && a[m + MARKER_PREFIX.len()..a.len() - 1]
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_')
    {
        let run = b
            .bytes()
            .take_while(|c| c.is_ascii_alphanumeric() || b"_-+/=.~".contains(c))
            .count();
        if run > 0 {
            b.replace_range(..run, "");
        }
        return;
    }
    // The last line of `a` and the first line of `b`, at most SEAM_BYTES each.
    let mut ws = a.len().saturating_sub(SEAM_BYTES);
    while !a.is_char_boundary(ws) {
        ws += 1;
    }
    if let Some(nl) = a[ws..].rfind('\n') {
        ws += nl + 1;
    }
    let mut we = b.len().min(SEAM_BYTES);
    while !b.is_char_boundary(we) {
        we -= 1;
    }
    if let Some(nl) = b[..we].find('\n') {
        we = nl;
    }
    let left = &a[ws..];
    let right = &b[..we];
    if left.is_empty() || right.is_empty() {
        return;
    }
    let joined = format!("{left}{right}");
    let r = match redact(&joined) {
        Cow::Borrowed(_) => return,
        Cow::Owned(r) => r,
    };
    let cut = left.len();
    // The changed region: joined[p..joined.len() - s] became r[p..r.len() - s].
    let jb = joined.as_bytes();
    let rb = r.as_bytes();
    let mut p = jb.iter().zip(rb).take_while(|(x, y)| x == y).count();
    while !joined.is_char_boundary(p) || !r.is_char_boundary(p) {
        p -= 1;
    }
    let max_s = jb.len().min(rb.len()) - p;
    let mut s = jb
        .iter()
        .rev()
        .zip(rb.iter().rev())
        .take(max_s)
        .take_while(|(x, y)| x == y)
        .count();
    while !joined.is_char_boundary(jb.len() - s) || !r.is_char_boundary(rb.len() - s) {
        s -= 1;
    }
    let (j_end, r_end) = (jb.len() - s, rb.len() - s);
    let new = &r[p..r_end];
    if j_end <= cut {
        // Only the first part changed (a match that needed the second to end).
        a.replace_range(ws + p..ws + j_end, new);
    } else if p >= cut {
        // Only the second part changed (a match that needed the context of the first).
        b.replace_range(p - cut..j_end - cut, new);
    } else {
        // Across the seam: the replacement ends the first part, the second loses its head.
        a.replace_range(ws + p.., new);
        b.replace_range(..j_end - cut, "");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> Part {
        Part::Text { text: t.into() }
    }

    fn msg(role: Role, parts: Vec<Part>) -> Message {
        let mut m = Message {
            id: "m".into(),
            role,
            kind: memtrail_adapters::Kind::Text,
            parts,
            timestamp: None,
            model: None,
        };
        for p in m.parts.iter_mut() {
            if let Part::Text { text } = p {
                crate::redact::redact_string(text);
            }
        }
        m
    }

    fn texts(m: &Message) -> Vec<String> {
        m.parts
            .iter()
            .map(|p| match p {
                Part::Text { text } => text.clone(),
                _ => String::new(),
            })
            .collect()
    }

    #[test]
    fn split_token_and_private_spans() {
        let mut m = msg(
            Role::Assistant,
            vec![
                text("the key is ghp_R7mQ2xK9vL4nB8w"),
                text("T3yH6jD1fG5sA0cZ2pE9u ok"),
            ],
        );
        redact_message(&mut m);
        assert_eq!(texts(&m), ["the key is [redacted:github_token]", " ok"]);
        let again = m.clone();
        redact_message(&mut m);
        assert_eq!(m, again);
        // The context of an assignment in the first part, its value in the second.
        let mut m = msg(
            Role::User,
            vec![text("DB_PASSWORD="), text("Pangolin4Harbor8Quiz")],
        );
        redact_message(&mut m);
        assert_eq!(texts(&m), ["DB_PASSWORD=", "[redacted:secret_assignment]"]);
        // A first part ending in a marker: the token goes on in the second.
        let mut m = msg(
            Role::Assistant,
            vec![
                text("ghp_R7mQ2xK9vL4nB8wT3yH6jD1fG5sA0cZ2pE9u"),
                text("Zz9/+x= tail"),
            ],
        );
        redact_message(&mut m);
        assert_eq!(texts(&m), ["[redacted:github_token]", " tail"]);
        // Nothing across the seam: nothing changes.
        let parts = vec![text("token"), text("s are counted"), text("ok")];
        let mut m = msg(Role::Assistant, parts.clone());
        redact_message(&mut m);
        assert_eq!(m.parts, parts);
    }

    #[test]
    fn private_spans_across_parts() {
        let call = |input: Value, output: &str| {
            Part::ToolCall(memtrail_adapters::ToolCall {
                id: "t".into(),
                name: "Bash".into(),
                tool: "shell".into(),
                input,
                output: Some(output.into()),
                is_error: false,
                exit_code: None,
            })
        };
        // Opened in a text part: the call after it is hidden, input and output.
        let mut m = msg(
            Role::Assistant,
            vec![
                text("a <private>b"),
                call(serde_json::json!({"command": "echo c"}), "c"),
                text("d </private> e <private>f"),
                text("g"),
            ],
        );
        redact_message(&mut m);
        let want = msg(
            Role::Assistant,
            vec![
                text("a [private]"),
                call(serde_json::json!({"command": "[private]"}), "[private]"),
                text("[private] e [private…]"),
                text("[private]"),
            ],
        );
        assert_eq!(m.parts, want.parts);
        let again = m.clone();
        redact_message(&mut m);
        assert_eq!(m, again);
        // A prompt closing a span opened in an earlier prompt; in tool output, a stray
        // closing tag is text.
        let mut m = msg(Role::User, vec![text("x y</private> z")]);
        redact_message(&mut m);
        assert_eq!(texts(&m), ["[private] z"]);
        let mut m = msg(
            Role::Assistant,
            vec![
                call(Value::Null, "docs: close with </private>"),
                text("w</private>"),
            ],
        );
        redact_message(&mut m);
        assert_eq!(
            m.parts,
            vec![
                call(Value::Null, "docs: close with </private>"),
                text("w</private>")
            ]
        );
        assert!(!may_close("a <b>private</b> <privat> </ privat"));
        assert!(may_close("x < / PRIVATE >"));
    }

    #[test]
    fn key_ends() {
        let out = |t: &str| {
            let mut s = t.to_string();
            key_end(&mut s);
            s
        };
        assert_eq!(
            out(
                "$ tail -n +4 key.pem\nAAAB3Nza+/=\n\nQyNTUx\n-----END OPENSSH PRIVATE KEY-----\nok"
            ),
            "$ tail -n +4 key.pem\n[redacted:private_key]\nok"
        );
        // Numbered as by a file-reading tool.
        assert_eq!(
            out("    27→AAAB3Nza\n    28→-----END RSA PRIVATE KEY-----"),
            "[redacted:private_key]"
        );
        // Two ends; a public key's end is left alone.
        assert_eq!(
            out("a b\nX1\n-----END PRIVATE KEY-----\nb c\nY2\n-----END EC PRIVATE KEY-----"),
            "a b\n[redacted:private_key]\nb c\n[redacted:private_key]"
        );
        let public = "QyNTUx\n-----END PUBLIC KEY-----";
        assert_eq!(out(public), public);
        assert_eq!(out("the PRIVATE KEY----- x"), "the PRIVATE KEY----- x");
        // `-----END` must come right before the tail, after blanks, capitals and digits only.
        let odd = "-----END x PRIVATE KEY----- -----ENDPRIVATE KEY-----";
        assert_eq!(
            out(odd),
            "-----END x PRIVATE KEY----- [redacted:private_key]"
        );
        // A long line of tails is read once (before: back to the line's start for each tail,
        // 170 KB took 2.6 s in a debug build), and an END at its end still found.
        let tails = "xPRIVATE KEY-----".repeat(10_000);
        assert_eq!(
            out(&format!("{tails}\nQyNTUx\n-----END PRIVATE KEY-----")),
            format!("{tails}\n[redacted:private_key]")
        );
    }
}
