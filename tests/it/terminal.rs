//! Terminal output on a real pty (util-linux `script`): `sessions show` through `$PAGER` on a
//! terminal and printed when piped; `sessions list` cut to the terminal's width.

use crate::support::{self, Sandbox};
use std::path::Path;

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// A sandbox holding one imported Claude Code session of 2 messages, in /home/user/demo; its id.
fn one_session() -> (Sandbox, String) {
    let sb = Sandbox::new();
    let sid = support::session_id(1);
    let t = sb.transcript("demo", &sid);
    let mut text = String::new();
    for i in 0..2 {
        text.push_str(&support::claude_line(&sid, "/home/user/demo", i));
        text.push('\n');
    }
    support::append(&t, text.as_bytes());
    let out = sb.cmd().arg("import").output().unwrap();
    assert!(out.status.success());
    (sb, sid)
}

/// Runs `memtrail ARGS` on a pty of `cols` columns (`stty cols`), with the sandbox's
/// environment and `extra`; what the terminal showed (`\r\n` made `\n`).
pub(crate) fn on_a_pty(sb: &Sandbox, cols: u16, args: &[&str], extra: &[(&str, &str)]) -> String {
    let line = sb.shell_line(&format!("stty cols {cols} rows 40; exec "), args);
    let out = sb
        .script(&line, extra)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("util-linux `script` runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout).unwrap().replace("\r\n", "\n")
}

/// A `$PAGER` that copies what it is given into `file` and says so on the terminal, with the
/// `LESS` it was started with.
fn recording_pager(file: &Path) -> String {
    format!(
        "cat > {}; echo \"paged by the test, LESS=$LESS\"",
        quote(&file.display().to_string())
    )
}

#[test]
fn sessions_show_goes_through_the_pager_on_a_terminal_only() {
    let (sb, sid) = one_session();
    let piped = sb.cmd().args(["sessions", "show", &sid]).output().unwrap();
    assert!(piped.status.success());
    let piped = String::from_utf8(piped.stdout).unwrap();
    assert!(piped.contains("please refactor the module"), "{piped}");

    // On a terminal: the pager gets exactly what a pipe gets, and LESS=FRX (quit when it fits).
    let paged = sb.home.join("paged.txt");
    let pager = recording_pager(&paged);
    let tty = on_a_pty(&sb, 100, &["sessions", "show", &sid], &[("PAGER", &pager)]);
    assert_eq!(tty, "paged by the test, LESS=FRX\n");
    assert_eq!(std::fs::read_to_string(&paged).unwrap(), piped);

    // A LESS of the user's is left as it is.
    std::fs::remove_file(&paged).unwrap();
    let tty = on_a_pty(
        &sb,
        100,
        &["sessions", "show", &sid],
        &[("PAGER", &pager), ("LESS", "-S")],
    );
    assert_eq!(tty, "paged by the test, LESS=-S\n");

    // --json on a terminal is printed, not paged.
    std::fs::remove_file(&paged).unwrap();
    let tty = on_a_pty(
        &sb,
        100,
        &["sessions", "show", &sid, "--json"],
        &[("PAGER", &pager)],
    );
    assert!(tty.starts_with("{\n"), "{tty}");
    assert!(!paged.exists());

    // Piped: printed, the pager never started.
    let out = sb
        .cmd()
        .args(["sessions", "show", &sid])
        .env("PAGER", &pager)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), piped);
    assert!(!paged.exists());
}

#[test]
fn sessions_list_fits_the_terminal_width() {
    let (sb, sid) = one_session();
    let piped = sb.cmd().args(["sessions", "list"]).output().unwrap();
    let piped = String::from_utf8(piped.stdout).unwrap();
    let lines: Vec<&str> = piped.lines().collect();
    assert_eq!(lines.len(), 2, "{piped}");
    // The title is the first prompt (as stored), longer than 70 columns with what is before it.
    assert!(
        lines[0].contains(&format!("{sid}  prompt 0 of session {sid}: please")),
        "{piped}"
    );
    assert!(lines[0].chars().count() > 70);

    // 100 columns: the first 99 characters of each line (all ASCII here), then `…`.
    let tty = on_a_pty(&sb, 100, &["sessions", "list"], &[]);
    let cut = |l: &str| {
        if l.chars().count() > 100 {
            format!("{}…", l.chars().take(99).collect::<String>())
        } else {
            l.to_string()
        }
    };
    let expected: String = lines.iter().map(|l| cut(l) + "\n").collect();
    assert_eq!(tty, expected);
    // 70 columns: too little room after the id; the session id stays whole, the title goes
    // on a line of its own (cut to the width), above the project.
    let tty = on_a_pty(&sb, 70, &["sessions", "list"], &[]);
    assert_eq!(
        tty,
        format!(
            "2026-11-20 10:00  claude      2 msgs  {sid}\n{:37}{}…\n{}\n",
            "",
            &format!("prompt 0 of session {sid}")[..32],
            lines[1]
        )
    );
    // Wide enough: the lines as piped.
    let tty = on_a_pty(&sb, 250, &["sessions", "list"], &[]);
    assert_eq!(tty, piped);
}

/// `--color` is global (before or after the command): `always` colours a pipe with exactly
/// bold titles (`ESC[1m … ESC[0m`) and bold red hits (`ESC[1;31m … ESC[0m`), and the text
/// is otherwise what `never` prints.
#[test]
fn color_always_colours_exactly_the_titles_and_the_hits() {
    let (sb, _sid) = one_session();
    let run = |args: &[&str]| {
        let out = sb.cmd().args(args).output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let plain = run(&["search", "module", "--color", "never"]);
    assert_eq!(plain, run(&["search", "module"]));
    let first = plain.lines().next().unwrap();
    let title = &first["1. ".len()..first.find("  (").unwrap()];
    let expected: String = plain
        .lines()
        .map(|l| {
            let l = if l == first {
                l.replacen(title, &format!("\x1b[1m{title}\x1b[0m"), 1)
            } else if l.starts_with("   ") && !l.starts_with("   session ") {
                l.replace("module", "\x1b[1;31mmodule\x1b[0m")
            } else {
                l.to_string()
            };
            l + "\n"
        })
        .collect();
    assert!(expected.contains("\x1b[1;31mmodule\x1b[0m"), "{plain}");
    assert_eq!(run(&["--color", "always", "search", "module"]), expected);
    assert_eq!(run(&["search", "--color", "always", "module"]), expected);
    assert_eq!(run(&["--color", "never", "search", "module"]), plain);
}

/// A bad hook command line after the global `--color` still fails open (exit 0, nothing on
/// stdout) as a hook must: `--color WHEN` is skipped when looking for the `hook` command.
#[test]
fn a_bad_hook_command_line_after_color_fails_open() {
    let sb = Sandbox::new();
    let out = sb
        .cmd()
        .args(["--color", "always", "hook", "no-such-agent"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    let log = std::fs::read_to_string(sb.hook_log()).unwrap();
    assert!(log.contains("error: bad hook command line: "), "{log}");
    // Not a hook: the same mistake elsewhere is clap's usage error.
    let out = sb
        .cmd()
        .args(["--color", "always", "search"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// On a terminal, a search hit's first line fits the width: the title is cut with `…` and the
/// agent, project and time stay whole; the other lines are as piped.
#[test]
fn a_search_hit_fits_the_terminal_width() {
    let (sb, _sid) = one_session();
    let out = sb.cmd().args(["search", "refactor"]).output().unwrap();
    let piped = String::from_utf8(out.stdout).unwrap();
    let first = piped.lines().next().unwrap();
    let at = first.find("  (").unwrap();
    let (title, about) = (&first["1. ".len()..at], &first[at..]);
    assert!(first.chars().count() > 100, "{first}");
    let room = 100 - "1. ".len() - about.chars().count();
    let expected = format!(
        "1. {}…{about}",
        title.chars().take(room - 1).collect::<String>()
    );
    let tty = on_a_pty(&sb, 100, &["search", "refactor", "--color", "never"], &[]);
    let mut lines = tty.lines();
    assert_eq!(lines.next(), Some(expected.as_str()));
    assert_eq!(
        lines.collect::<Vec<_>>(),
        piped.lines().skip(1).collect::<Vec<_>>()
    );
}
