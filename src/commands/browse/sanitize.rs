//! Transcript text made safe to draw: everything a transcript holds is hostile input, and a
//! terminal cell's text is written to the terminal as it is.

/// What replaces an escape sequence, a control character or a direction override.
pub const REPLACEMENT: char = '\u{fffd}';

/// Most characters of one escape sequence that are skipped; an unterminated one (an OSC
/// without its BEL) ends there and the text after it is shown again.
const MAX_SEQUENCE: usize = 512;

/// Spaces a tab becomes.
const TAB: &str = "    ";

pub use crate::output::is_bidi_control;

/// `s` safe to draw, newlines kept: each escape sequence (ESC or C1 CSI/OSC/DCS/APC/PM/SOS
/// with its parameters, up to its final byte or terminator) becomes one `�`, every other
/// control character (C0 but newline, DEL, C1) and every bidirectional control becomes `�`,
/// a tab becomes four spaces, and a carriage return before a newline is dropped.
pub fn clean(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str(TAB),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\u{1b}' => {
                // ESC [ … final (CSI), ESC ] … BEL|ST (OSC), ESC P/X/^/_ … ST (strings),
                // else ESC and one character.
                match chars.peek().copied() {
                    Some('[') => {
                        chars.next();
                        skip_csi(&mut chars);
                    }
                    Some(']' | 'P' | 'X' | '^' | '_') => {
                        chars.next();
                        skip_string(&mut chars);
                    }
                    Some(_) => {
                        chars.next();
                    }
                    None => {}
                }
                out.push(REPLACEMENT);
            }
            '\u{9b}' => {
                skip_csi(&mut chars);
                out.push(REPLACEMENT);
            }
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => {
                skip_string(&mut chars);
                out.push(REPLACEMENT);
            }
            c if c.is_control() || is_bidi_control(c) => out.push(REPLACEMENT),
            c => out.push(c),
        }
    }
    out
}

/// [`clean`] on one line: newlines become spaces too.
pub fn clean_line(s: &str) -> String {
    clean(s).replace('\n', " ")
}

/// Skips a CSI's parameter and intermediate bytes and its final byte (`@` to `~`).
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for _ in 0..MAX_SEQUENCE {
        match chars.next() {
            Some('\u{40}'..='\u{7e}') | None => return,
            Some(_) => {}
        }
    }
}

/// Skips a control string (OSC, DCS, …) up to BEL, ST (`ESC \` or U+009C) or its end.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for _ in 0..MAX_SEQUENCE {
        match chars.next() {
            Some('\u{7}' | '\u{9c}') | None => return,
            Some('\u{1b}') => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_become_one_replacement_each() {
        // OSC 52 (clipboard write) ended by BEL, then ED (clear screen), then SGR.
        assert_eq!(
            clean("a\u{1b}]52;c;aGk=\u{7}b\u{1b}[2Jc\u{1b}[1;31md"),
            "a\u{fffd}b\u{fffd}c\u{fffd}d"
        );
        // OSC ended by ST, a DCS, C1 CSI, a lone ESC at the end.
        assert_eq!(
            clean("x\u{1b}]0;title\u{1b}\\y\u{1b}Pq#0\u{1b}\\z\u{9b}2Jw\u{1b}"),
            "x\u{fffd}y\u{fffd}z\u{fffd}w\u{fffd}"
        );
    }

    #[test]
    fn controls_and_bidi_overrides_are_replaced_newlines_and_tabs_kept() {
        assert_eq!(
            clean("a\u{202e}cba\u{202c}\u{2066}x\u{2069}\r\n\tb\u{8}\u{7f}\u{85}\rc"),
            "a\u{fffd}cba\u{fffd}\u{fffd}x\u{fffd}\n    b\u{fffd}\u{fffd}\u{fffd}\u{fffd}c"
        );
        assert_eq!(clean_line("one\ntwo"), "one two");
        assert_eq!(clean("plain — ünïcode 中文"), "plain — ünïcode 中文");
    }

    #[test]
    fn an_unterminated_sequence_stops_at_the_cap() {
        let s = format!("\u{1b}]52;c;{}TAIL", "A".repeat(MAX_SEQUENCE - 1));
        // ']' is taken, then MAX_SEQUENCE characters: "52;c;" and 507 of the As... the
        // rest of the As and the tail show.
        let cleaned = clean(&s);
        let shown = 5 + (MAX_SEQUENCE - 1) + 4 - MAX_SEQUENCE;
        assert_eq!(cleaned.chars().count(), 1 + shown);
        assert!(cleaned.ends_with("AAAATAIL"));
        assert!(!cleaned.contains('\u{1b}'));
    }
}
