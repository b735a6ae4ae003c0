//! `memtrail browse` (and `memtrail sessions` on a terminal): the terminal sessions browser.
//!
//! Three panes (results, detail, with the search line and the filters above them), drawn by
//! ratatui on crossterm's alternate screen. The UI thread only draws and reads keys: every
//! store read runs on the worker thread ([`worker`]), bounded (a page of sessions, at most
//! page of [`worker::HITS_PAGE`] hits, a page of messages) and superseded by the next keystroke's. The
//! terminal is given back as it was on every way out: `q`, Ctrl-C, SIGTERM / SIGHUP / SIGINT,
//! an error, and a panic (the panic hook restores it before the message is printed). Design
//! and keys: docs/browse.md.

pub mod app;
pub mod sanitize;
pub mod trace;
pub mod ui;
pub mod worker;

use anyhow::{Context, Result};
use app::{App, Effect};
use memtrail_adapters::base64;
use memtrail_runtime::StoreLocation;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyEventKind};
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::crossterm::{cursor, execute};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// The `?` screen.
pub const HELP: &str = "\
Search   type: search as you type (\"a phrase\", word*, OR, -word)
         ↓ Enter Esc: to the results   Ctrl-U: clear the line
Results  ↑↓ j k PgUp PgDn g G: move   Enter: open   s: the search line
Detail   ↑↓ j k PgUp PgDn Space g G: scroll   t: unfold tool calls
         /: find in session   n N: next, previous match   Esc b: back
Filters  a: agent   d: date   p: this project   m: this machine
Actions  o: open in $PAGER   y: copy the id   r: resume snapshot
         h: handoff for another agent   D: delete (asks first)
         P: parent session   S: next sub-agent session
Quit     q, Ctrl-C

Escape sequences and control characters in transcripts show as �.
Any key closes this.";

/// The signal that asked to stop (SIGTERM, SIGHUP, SIGINT), 0 while none.
static SIGNALLED: AtomicI32 = AtomicI32::new(0);

/// How long the loop waits for a key before it looks for answers and signals again, while a
/// query runs (an answer is drawn at most this late) and while none does.
const TICK: Duration = Duration::from_millis(2);
const IDLE_TICK: Duration = Duration::from_millis(50);

/// `memtrail browse`: runs the browser on this terminal until `q`; an error when stdin or
/// stdout is not a terminal.
pub fn browse(db: &StoreLocation) -> Result<ExitCode> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "memtrail browse needs a terminal (stdin and stdout); `memtrail sessions list` and `memtrail search` print to a pipe"
        );
    }
    let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var_os("TERM").is_none_or(|t| t != "dumb");
    let (req_tx, req_rx) = mpsc::channel();
    let (ans_tx, ans_rx) = mpsc::channel();
    let worker_db = db.clone();
    let cancel = worker::Cancel::default();
    let worker_cancel = cancel.clone();
    std::thread::Builder::new()
        .name("browse-queries".into())
        .spawn(move || worker::run(worker_db, req_rx, ans_tx, worker_cancel))
        .context("cannot start the query thread")?;
    let mut app = App::new(color, now_ms(), db.postgres_url().is_none());
    install_signals();
    let _guard = TerminalGuard::enter()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))
        .context("cannot draw on this terminal")?;
    terminal.clear()?;
    let mut trace = trace::Trace::from_env();
    let code = run(
        &mut terminal,
        &mut app,
        &req_tx,
        &ans_rx,
        &cancel,
        &mut trace,
    );
    drop(req_tx);
    if let Some(t) = trace {
        t.write().context("cannot write MEMTRAIL_BROWSE_TRACE")?;
    }
    code
}

/// The event loop: send the app's requests, apply the worker's answers, draw when something
/// changed, read keys for at most one tick.
fn run(
    terminal: &mut Terminal<CrosstermBackend<std::io::Stdout>>,
    app: &mut App,
    requests: &mpsc::Sender<worker::Request>,
    answers: &mpsc::Receiver<worker::Response>,
    cancel: &worker::Cancel,
    trace: &mut Option<trace::Trace>,
) -> Result<ExitCode> {
    let mut dirty = true;
    let mut size = terminal.size()?;
    loop {
        let signal = SIGNALLED.load(Ordering::Relaxed);
        if signal != 0 {
            return Ok(ExitCode::from(128 + signal as u8));
        }
        for r in app.outbox.drain(..) {
            requests.send(r).context("the query thread stopped")?;
        }
        // A search older than the newest one sent stops now (its answer would be dropped).
        cancel.supersede(app.generation);
        let mut effects = Vec::new();
        while let Ok(a) = answers.try_recv() {
            effects.extend(app.apply(a));
            dirty = true;
        }
        if dirty {
            let (w, h) = ui::detail_inner(terminal.size()?.into());
            let started = std::time::Instant::now();
            app.layout(w, h);
            terminal.draw(|f| ui::draw(f, app))?;
            if let Some(t) = trace.as_mut() {
                t.frame(started.elapsed(), app.shown);
            }
            dirty = false;
        }
        // While a query runs, look for its answer often; else wait longer for a key. Our own
        // wait on stdin, not crossterm's: crossterm's spins when the terminal is gone.
        let tick = if app.waiting() { TICK } else { IDLE_TICK };
        match wait_input(tick) {
            Input::HungUp => return Ok(ExitCode::from(128 + 1)),
            Input::Ready => {
                // Every event read (one read may bring several: a paste, fast typing).
                while event::poll(Duration::ZERO)? {
                    match event::read()? {
                        Event::Key(k) if k.kind != KeyEventKind::Release => {
                            let before = app.generation;
                            effects.extend(app.key(k));
                            if let Some(t) = trace.as_mut() {
                                t.key(before, app.generation);
                            }
                            dirty = true;
                        }
                        _ => {}
                    }
                }
            }
            Input::None => {}
        }
        // A resize (crossterm's SIGWINCH events are not read here): the size, checked.
        let now = terminal.size()?;
        if now != size {
            size = now;
            terminal.autoresize()?;
            dirty = true;
        }
        for e in effects {
            match e {
                Effect::Quit => return Ok(ExitCode::SUCCESS),
                Effect::Copy(id) => {
                    let mut out = std::io::stdout();
                    write!(out, "\x1b]52;c;{}\x07", base64(id.as_bytes()))?;
                    out.flush()?;
                }
                Effect::Page { title, text } => {
                    app.status = match page(&sanitize::clean(&text)) {
                        Ok(()) => format!("{} closed", sanitize::clean_line(&title)),
                        Err(e) => format!(
                            "the pager failed: {}",
                            sanitize::clean_line(&format!("{e:#}"))
                        ),
                    };
                    terminal.clear()?;
                    dirty = true;
                }
            }
        }
    }
}

/// What [`wait_input`] saw.
enum Input {
    Ready,
    None,
    /// The terminal is gone (its window closed, the SSH connection dropped).
    HungUp,
}

/// Waits at most `timeout` for input on stdin (a signal ends the wait early).
fn wait_input(timeout: Duration) -> Input {
    #[cfg(unix)]
    {
        let mut fd = libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd, its count 1.
        let n = unsafe { libc::poll(&mut fd, 1, ms) };
        if n <= 0 {
            return Input::None;
        }
        if fd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
            return Input::HungUp;
        }
        Input::Ready
    }
    #[cfg(not(unix))]
    match event::poll(timeout) {
        Ok(true) => Input::Ready,
        Ok(false) => Input::None,
        Err(_) => Input::HungUp,
    }
}

/// Raw mode and the alternate screen while it lives; the terminal as it was after (also on
/// a panic: the hook restores it before the panic's message).
struct TerminalGuard;

impl TerminalGuard {
    fn enter() -> Result<TerminalGuard> {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        enable_raw_mode().context("cannot put the terminal in raw mode")?;
        let guard = TerminalGuard;
        execute!(std::io::stdout(), EnterAlternateScreen, cursor::Hide)?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Leaves the alternate screen, shows the cursor, ends raw mode (each step even if one fails).
fn restore() {
    let _ = execute!(std::io::stdout(), LeaveAlternateScreen, cursor::Show);
    let _ = disable_raw_mode();
}

/// SIGTERM, SIGHUP and SIGINT set [`SIGNALLED`]; the loop sees it within a tick and returns,
/// restoring the terminal. (In raw mode Ctrl-C is a key, not SIGINT.)
fn install_signals() {
    #[cfg(unix)]
    {
        extern "C" fn on_signal(sig: libc::c_int) {
            // SIGINT never hides a SIGTERM or SIGHUP before it (a Ctrl-C in the pager is
            // cleared afterwards, see `page`).
            if sig == libc::SIGINT {
                let _ = SIGNALLED.compare_exchange(0, sig, Ordering::Relaxed, Ordering::Relaxed);
            } else {
                SIGNALLED.store(sig, Ordering::Relaxed);
            }
        }
        let handler: extern "C" fn(libc::c_int) = on_signal;
        for sig in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT] {
            // Only an atomic store in the handler: async-signal-safe.
            unsafe {
                libc::signal(sig, handler as libc::sighandler_t);
            }
        }
    }
}

/// Shows `text` in `$PAGER` (default `less -R`) with the terminal out of raw mode and off
/// the alternate screen, then takes it back.
fn page(text: &str) -> Result<()> {
    restore();
    let result = crate::output::run_pager(text, false);
    // Ctrl-C in the pager (out of raw mode, it is SIGINT to the whole foreground group) was
    // for the pager, as with git's: browse goes on. SIGTERM and SIGHUP still end it.
    #[cfg(unix)]
    let _ = SIGNALLED.compare_exchange(libc::SIGINT, 0, Ordering::Relaxed, Ordering::Relaxed);
    enable_raw_mode()?;
    execute!(std::io::stdout(), EnterAlternateScreen, cursor::Hide)?;
    result
}

/// Now, ms since the Unix epoch.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
