//! Terminal prompts (confirmations, pickers).

use crate::output::printable;
use anyhow::{Result, bail};
use std::io::IsTerminal;

/// Run a terminal prompt. The prompt hides the cursor while it runs; when it ends in an error,
/// Ctrl-C included (a prompt reads keys raw, so Ctrl-C reaches it as a key, not a signal), the
/// cursor is shown again. Ctrl-C exits with status 130 (as a shell reports SIGINT), and what
/// the prompt asked about is not done.
pub fn ask<T>(prompt: impl FnOnce() -> dialoguer::Result<T>) -> Result<T> {
    // The prompt library raises SIGINT on Ctrl-C, whose default action ends the process with
    // the cursor hidden: while the prompt runs, SIGINT shows the cursor and exits 130.
    #[cfg(unix)]
    let previous = {
        extern "C" fn on_sigint(_: libc::c_int) {
            const MSG: &[u8] =
                b"\x1b[?25h\nmemtrail: interrupted at the prompt: what it asked about was not done\n";
            // Only async-signal-safe calls here: write(2) and _exit(2).
            unsafe {
                libc::write(2, MSG.as_ptr().cast(), MSG.len());
                libc::_exit(130);
            }
        }
        let handler: extern "C" fn(libc::c_int) = on_sigint;
        unsafe { libc::signal(libc::SIGINT, handler as libc::sighandler_t) }
    };
    let answer = prompt();
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGINT, previous);
    }
    answer.map_err(|e| {
        let _ = dialoguer::console::Term::stderr().show_cursor();
        let dialoguer::Error::IO(io) = &e;
        if io.kind() == std::io::ErrorKind::Interrupted {
            eprintln!("\nmemtrail: interrupted at the prompt: what it asked about was not done");
            std::process::exit(130);
        }
        anyhow::Error::new(e).context("cannot ask on this terminal")
    })
}

/// Ask on a terminal; without one, refuse unless `--yes` was given.
pub fn confirm_destructive(prompt: &str, yes: bool) -> Result<bool> {
    if yes {
        return Ok(true);
    }
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        bail!("refusing to delete without confirmation: add --yes");
    }
    ask(|| {
        dialoguer::Confirm::new()
            .with_prompt(printable(prompt, &[]))
            .default(false)
            .interact()
    })
}
