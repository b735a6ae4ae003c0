//! Printing on the terminal: transcript text made safe, `out!`, plurals and short times.

use crate::cli::ColorChoice;
use anyhow::Context;
use std::io::{IsTerminal, Write};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

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

use memtrail_runtime::safe_text::json_escaped;
pub use memtrail_runtime::safe_text::{is_bidi_control, unsafe_on_terminal};

/// `v` as pretty-printed JSON whose strings hold no character [`unsafe_on_terminal`] as it is:
/// each is written as a `\uXXXX` escape (serde_json escapes C0 itself, not DEL, C1 or the
/// bidirectional ones), so the same values reach a program and nothing reaches a terminal.
///
/// Errors: serde_json's.
pub fn json<T: serde::Serialize + ?Sized>(v: &T) -> serde_json::Result<String> {
    Ok(json_escaped(serde_json::to_string_pretty(v)?))
}

/// [`json`] on one line (a JSON Lines record).
///
/// Errors: serde_json's.
pub fn json_line<T: serde::Serialize + ?Sized>(v: &T) -> serde_json::Result<String> {
    Ok(json_escaped(serde_json::to_string(v)?))
}

/// The warning of a purge, rescan or delete whose write-ahead log a reader kept from being
/// folded back (`wal_kept`): the old text (`what`: "deleted", "replaced") is still in the
/// store's files until a checkpoint, which the next hook or import makes
/// (`maintenance::scrub_pending`); `again` is the command that makes it at once once the
/// readers are idle.
pub fn wal_kept_warning(what: &str, again: &str) -> String {
    format!(
        "warning: a reader of the store (memtrail web, an MCP server, a search) kept an older \
         snapshot open, so the {what} text is still in the store's files (its write-ahead log \
         and old pages) until they are folded back: the next hook or `memtrail import` does \
         it once no reader holds on (`memtrail status` says when it is done), as does \
         `memtrail {again}` run again"
    )
}

/// `s` with every character [`unsafe_on_terminal`] except newline and tab replaced by `�`;
/// borrowed when there is none.
pub fn terminal_safe(s: &str) -> std::borrow::Cow<'_, str> {
    memtrail_runtime::safe_text::shown_keeping_lines(s)
}

/// A writer that passes what it is given through [`terminal_safe`]: for output bound for a
/// terminal that carries transcript text in a format that does not escape every control
/// character (HTML escapes only `& < > "`; JSON leaves DEL and C1 as they are). Each `write`
/// must hold whole UTF-8 characters, as `write_all` of a `str` does (a split one becomes `�`).
pub struct TerminalSafe<W: std::io::Write>(pub W);

impl<W: std::io::Write> std::io::Write for TerminalSafe<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(terminal_safe(&text).as_bytes())?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Transcript text made safe to print on a terminal: the characters [`unsafe_on_terminal`]
/// (escape sequences a transcript may hold, carriage returns, bidirectional overrides, …)
/// become `�`; `keep` (highlight markers) stays.
pub fn printable(s: &str, keep: &[char]) -> String {
    s.chars()
        .map(|c| {
            if unsafe_on_terminal(c) && !keep.contains(&c) {
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

/// Whether a closed stdout lets the command finish ([`finish_after_stdout_closes`]).
static FINISH_AFTER_CLOSE: AtomicBool = AtomicBool::new(false);
/// Whether stdout was found closed (then nothing more is written to it).
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// From now on a closed stdout (`memtrail install --yes | head -1`) does not end the program:
/// the rest of its output is dropped and it goes on, for a command that must not stop half
/// way (install and uninstall between two agents' edits).
pub fn finish_after_stdout_closes() {
    FINISH_AFTER_CLOSE.store(true, Ordering::Relaxed);
}

/// Print a line on stdout; a closed pipe (`| head`) ends the program quietly (unless
/// [`finish_after_stdout_closes`]).
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
/// and adds its own colours), every character [`unsafe_on_terminal`] but newline and tab becomes `�`, so no
/// output of memtrail (a title, a message, a snapshot, a handoff) can drive the terminal.
/// JSON output is unchanged by this: [`json`] escapes every such character.
pub fn emit(args: std::fmt::Arguments<'_>, newline: bool, styled: bool) {
    let text = args.to_string();
    let text = if styled {
        std::borrow::Cow::Borrowed(text.as_str())
    } else {
        terminal_safe(&text)
    };
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut o = std::io::stdout().lock();
    let r = o
        .write_all(text.as_bytes())
        .and_then(|_| if newline { o.write_all(b"\n") } else { Ok(()) });
    if let Err(e) = r {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            if FINISH_AFTER_CLOSE.load(Ordering::Relaxed) {
                STDOUT_CLOSED.store(true, Ordering::Relaxed);
                return;
            }
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

/// A spinner on stderr saying `what` (`{pos}` in it: a count the caller sets) and the time
/// spent, ticking by itself every 100 ms; hidden when stderr is not a terminal or `json` is set
/// (nothing is drawn then). `finish_and_clear` it when done.
pub fn spinner(what: &str, json: bool) -> indicatif::ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_style(
        indicatif::ProgressStyle::with_template(&format!("{{spinner}} {what} ({{elapsed}})"))
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    pb.enable_steady_tick(std::time::Duration::from_millis(100));
    pb
}

/// The pager to run (through `sh -c`): `$PAGER` (`pager_env`) unless unset or blank, else
/// `less -R`.
pub fn pager_command(pager_env: Option<&str>) -> String {
    pager_env
        .filter(|p| !p.trim().is_empty())
        .unwrap_or("less -R")
        .to_string()
}

/// Whether `memtrail sessions show` pages: its text (not JSON) to a terminal.
pub fn pages(json: bool, stdout_is_terminal: bool) -> bool {
    !json && stdout_is_terminal
}

/// Runs the pager ([`pager_command`] of `$PAGER`) with `text` on its stdin and waits for it.
/// With `quit_if_one_screen` and `LESS` unset, `LESS=FRX` is set for it (as git does: less
/// quits at once when the text fits the screen, keeps it on the screen after, and passes
/// colours). A pager that quits before reading everything is not an error.
///
/// Errors: the pager cannot be started (`sh` missing) or waited for.
pub fn run_pager(text: &str, quit_if_one_screen: bool) -> anyhow::Result<()> {
    let pager = pager_command(std::env::var("PAGER").ok().as_deref());
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", &pager]).stdin(std::process::Stdio::piped());
    if quit_if_one_screen && std::env::var_os("LESS").is_none() {
        cmd.env("LESS", "FRX");
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot run the pager `{pager}`"))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(text.as_bytes());
    }
    child.wait().context("the pager")?;
    Ok(())
}

/// Prints `text` (transcript text: made [`terminal_safe`]) on stdout, through the pager
/// ([`run_pager`]) when stdout is a terminal and `json` is false.
///
/// Errors: the pager cannot be started.
pub fn print_paged(text: &str, json: bool) -> anyhow::Result<()> {
    if pages(json, std::io::stdout().is_terminal()) {
        run_pager(&terminal_safe(text), true)
    } else {
        emit(format_args!("{text}"), false, false);
        Ok(())
    }
}

/// The columns of the terminal on stdout; `None` when stdout is not a terminal or its size is
/// unknown (0 columns, as a pty that was never sized says).
pub fn terminal_columns() -> Option<usize> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    match ratatui::crossterm::terminal::size() {
        Ok((cols, _)) if cols > 0 => Some(cols as usize),
        _ => None,
    }
}

/// `text` cut to at most `width` terminal columns (display width, wide characters count 2),
/// its last column an ellipsis `…` when cut; unchanged when it fits.
pub fn fit(text: &str, width: usize) -> std::borrow::Cow<'_, str> {
    use unicode_width::UnicodeWidthChar;
    let w = |c: char| c.width().unwrap_or(0);
    if text.chars().map(w).sum::<usize>() <= width {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        if used + w(c) + 1 > width {
            break;
        }
        used += w(c);
        out.push(c);
    }
    if width > 0 {
        out.push('…');
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an exported HTML or JSON page would pass on to a terminal: ESC (C0), DEL and CSI
    /// (C1, U+009B) from a transcript become `�`, and so do a right-to-left override (U+202E)
    /// and its isolate's end (U+2069); newlines and tabs stay.
    #[test]
    fn terminal_safe_writer_makes_control_characters_visible() {
        use std::io::Write;
        let mut w = TerminalSafe(Vec::new());
        w.write_all("<p>a\u{1b}[31mred\u{7f}\u{9b}2J \u{202e}mr -rf\u{2069}</p>\n\tb".as_bytes())
            .unwrap();
        assert_eq!(
            String::from_utf8(w.0).unwrap(),
            "<p>a\u{fffd}[31mred\u{fffd}\u{fffd}2J \u{fffd}mr -rf\u{fffd}</p>\n\tb"
        );
        assert_eq!(printable("a\u{200f}b\u{1}", &['\u{1}']), "a\u{fffd}b\u{1}");
    }

    /// JSON keeps every value: DEL, C1 and the bidirectional characters escaped, the same
    /// string once parsed; nothing of them left raw for `emit` to replace.
    #[test]
    fn json_escapes_what_a_terminal_would_obey() {
        let v = serde_json::json!({"t": "a\u{7f}\u{9b}b \u{202e}x\u{200f} \u{1b} é\nz"});
        let s = json(&v).unwrap();
        assert!(
            !s.chars().any(|c| unsafe_on_terminal(c) && c != '\n'),
            "{s}"
        );
        assert!(
            s.contains("a\\u007f\\u009bb \\u202ex\\u200f \\u001b é\\nz"),
            "{s}"
        );
        assert_eq!(serde_json::from_str::<serde_json::Value>(&s).unwrap(), v);
        assert_eq!(json_line(&v).unwrap().lines().count(), 1);
    }

    #[test]
    fn fit_cuts_to_display_columns_with_an_ellipsis() {
        assert_eq!(fit("abcdef", 6), "abcdef");
        assert_eq!(fit("abcdef", 10), "abcdef");
        assert_eq!(fit("abcdefg", 6), "abcde…");
        // Wide characters take two columns: 日本 is 4, and 3 columns hold 日 and the ellipsis.
        assert_eq!(fit("日本語", 6), "日本語");
        assert_eq!(fit("日本語", 5), "日本…");
        assert_eq!(fit("日本語", 4), "日…");
        assert_eq!(fit("abc", 1), "…");
        assert_eq!(fit("abc", 0), "");
    }

    #[test]
    fn the_pager_is_pager_unless_blank_else_less_r() {
        assert_eq!(pager_command(None), "less -R");
        assert_eq!(pager_command(Some("")), "less -R");
        assert_eq!(pager_command(Some("  ")), "less -R");
        assert_eq!(pager_command(Some("most -s")), "most -s");
        assert!(pages(false, true));
        assert!(!pages(true, true));
        assert!(!pages(false, false));
    }
}
