//! Characters of transcript text that must not reach a reader as they are: terminal controls
//! and the characters that reorder text on screen. One definition for every surface (the
//! command line's output, the web page, the hook log, the text injected into an agent).

use std::borrow::Cow;

/// Whether `c` may not reach a terminal as it is: a control character (C0, DEL, C1: escape
/// sequences, carriage returns, backspaces), or one that reorders text ([`is_bidi_control`]).
pub fn unsafe_on_terminal(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// True for the Unicode characters that reorder text on screen (bidirectional embeddings,
/// overrides and isolates, and the implicit marks U+061C, U+200E, U+200F): text could otherwise
/// be shown in an order other than the one it is stored in, a command reading as another
/// ("Trojan Source").
pub fn is_bidi_control(c: char) -> bool {
    is_bidi_override(c) || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}')
}

/// The bidirectional embeddings, overrides and isolates alone (U+202A–U+202E, U+2066–U+2069),
/// without the implicit marks, which right-to-left text uses and a browser shows harmlessly.
pub fn is_bidi_override(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every character [`unsafe_on_terminal`] but newlines and tabs shown as U+FFFD:
/// for text that keeps its lines (a snapshot injected into an agent's context). Borrowed when
/// there is none.
pub fn shown_keeping_lines(s: &str) -> Cow<'_, str> {
    let bad = |c: char| unsafe_on_terminal(c) && c != '\n' && c != '\t';
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .map(|c| if bad(c) { '\u{fffd}' } else { c })
            .collect(),
    )
}

/// `s` as one field of a log line: line breaks and tabs as spaces, every other character
/// [`unsafe_on_terminal`] as U+FFFD, so that a field can neither start a forged line nor drive
/// the terminal of whoever reads the log. Borrowed when there is nothing to change.
pub fn one_line_field(s: &str) -> Cow<'_, str> {
    if !s.chars().any(unsafe_on_terminal) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .map(|c| match c {
                '\n' | '\r' | '\t' => ' ',
                c if unsafe_on_terminal(c) => '\u{fffd}',
                c => c,
            })
            .collect(),
    )
}

/// Serialized JSON `text` with every character [`unsafe_on_terminal`] but a newline written as
/// a `\uXXXX` escape: the same values for a program that parses it, nothing raw for a
/// terminal or a log that shows it (serde_json escapes C0 itself, not DEL, C1 or the
/// bidirectional ones; such characters stand only inside strings, where the escape is valid).
/// Returned as it is when it holds none.
pub fn json_escaped(text: String) -> String {
    if !text.chars().any(|c| unsafe_on_terminal(c) && c != '\n') {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_on_terminal(c) && c != '\n' {
            use std::fmt::Write as _;
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_texts_show_what_would_act() {
        assert_eq!(
            one_line_field("abc\n2026 forged line\u{1b}]52;c;aGk=\u{7}\u{202e}x\ty"),
            "abc 2026 forged line\u{fffd}]52;c;aGk=\u{fffd}\u{fffd}x y"
        );
        assert!(matches!(
            one_line_field("plain ünïcode 日本"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            shown_keeping_lines("a\n\tb\u{1b}[2J\u{200f}\u{9b}c"),
            "a\n\tb\u{fffd}[2J\u{fffd}\u{fffd}c"
        );
        assert!(is_bidi_control('\u{200e}') && !is_bidi_override('\u{200e}'));
        assert!(is_bidi_override('\u{2066}') && is_bidi_control('\u{2066}'));
        let v = serde_json::json!({"t": "a\u{7f}b\u{9b}c\u{202e}d\ne"});
        let text = json_escaped(serde_json::to_string(&v).unwrap());
        assert_eq!(text, r#"{"t":"a\u007fb\u009bc\u202ed\ne"}"#);
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), v);
    }
}
