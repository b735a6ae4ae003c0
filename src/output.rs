//! Printing on the terminal: transcript text made safe, `out!`, plurals and short times.

use crate::cli::ColorChoice;
use std::io::Write;
use std::sync::OnceLock;

/// The global `--color` of this run (set once by `main`, before any command prints).
static COLOR: OnceLock<ColorChoice> = OnceLock::new();

/// Keeps the global `--color` for [`color`]; a second call is ignored.
pub fn set_color(choice: ColorChoice) {
    let _ = COLOR.set(choice);
}

/// Whether stdout gets colours: the global `--color` (`auto` when unset) resolved by
/// [`ColorChoice::enabled`] (a terminal, `NO_COLOR` unset or empty, `TERM` not `dumb`).
pub fn color() -> bool {
    COLOR.get().copied().unwrap_or(ColorChoice::Auto).enabled()
}

/// `s` with every control character (C0, DEL, C1: escape sequences, carriage returns,
/// backspaces) except newline and tab replaced by `�`; borrowed when there is none.
pub fn terminal_safe(s: &str) -> std::borrow::Cow<'_, str> {
    if s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        std::borrow::Cow::Owned(printable(s, &['\n', '\t']))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// Transcript text made safe to print on a terminal: control characters (escape sequences a
/// transcript may hold, carriage returns, …) become `�`; `keep` (highlight markers) stays.
pub fn printable(s: &str, keep: &[char]) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() && !keep.contains(&c) {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect()
}

/// An error and its causes on one line, without repeating a cause that the message before it
/// already contains.
pub fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// Print a line on stdout; a closed pipe (`| head`) ends the program quietly.
macro_rules! out {
    ($($t:tt)*) => { $crate::output::emit(format_args!($($t)*), true, false) };
}

/// [`out!`] for a line that holds memtrail's own escape sequences (search's colours): its
/// transcript text must already have gone through [`printable`].
macro_rules! out_styled {
    ($($t:tt)*) => { $crate::output::emit(format_args!($($t)*), true, true) };
}

/// Print on stdout without a newline (see [`out!`]).
macro_rules! outn {
    ($($t:tt)*) => { $crate::output::emit(format_args!($($t)*), false, false) };
}

/// Write `args` on stdout. Transcript text is hostile: unless `styled` (the caller escaped it
/// and adds its own colours), every control character but newline and tab becomes `�`, so no
/// output of memtrail (a title, a message, a snapshot, a handoff) can drive the terminal.
/// JSON output is unchanged by this (JSON escapes control characters).
pub fn emit(args: std::fmt::Arguments<'_>, newline: bool, styled: bool) {
    let text = args.to_string();
    let text = if styled {
        std::borrow::Cow::Borrowed(text.as_str())
    } else {
        terminal_safe(&text)
    };
    let mut o = std::io::stdout().lock();
    let r = o
        .write_all(text.as_bytes())
        .and_then(|_| if newline { o.write_all(b"\n") } else { Ok(()) });
    if let Err(e) = r {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("memtrail: cannot write the output: {e}");
        std::process::exit(1);
    }
}

/// `1 transcript file`, `2 transcript files`.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `2026-11-29T10:11:12.000Z` → `2026-11-29 10:11`.
pub fn short_time(t: &str) -> String {
    t.get(..16)
        .map(|s| s.replace('T', " "))
        .unwrap_or_else(|| t.to_string())
}
