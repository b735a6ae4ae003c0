//! Shell words, shared by every agent whose hooks are shell commands: quoting memtrail's binary
//! for a POSIX shell ([`shell_quote`]), splitting a configured command into words as `sh` would
//! ([`shell_split`]), seeing through a wrapper a user put around memtrail's hook
//! ([`unwrap_command`]), and recognising memtrail's program by its file name
//! ([`is_memtrail_program`]).

/// The name memtrail's binary has (without any directory). A hook handler or MCP entry whose
/// program is a file of this name is memtrail's.
pub const PROGRAM_NAME: &str = "memtrail";

/// True when `program` names a file called `memtrail` (or `memtrail.exe`), in any directory.
pub fn is_memtrail_program(program: &str) -> bool {
    let name = program.rsplit(['/', '\\']).next().unwrap_or(program);
    name == PROGRAM_NAME || name.eq_ignore_ascii_case("memtrail.exe")
}

/// Programs that run the command that follows them (with options of their own), which a user
/// may put around memtrail's hook: `nice -n 5 /usr/bin/memtrail hook claude`.
pub const WRAPPERS: &[&str] = &[
    "caffeinate",
    "chrt",
    "command",
    "env",
    "exec",
    "ionice",
    "nice",
    "nohup",
    "setsid",
    "stdbuf",
    "taskset",
    "time",
    "timeout",
];

/// The words of a command from memtrail's program on, when the user wrapped memtrail's hook
/// in a program that runs it: the command starts with one of [`WRAPPERS`] (by file name, in any
/// folder) or a shell assignment `NAME=value`, and no word before memtrail's holds a shell
/// operator character (`;&|<>()$`, a backquote, or the line break [`shell_split`] gives as a
/// word). `nice -n 5 /a/memtrail hook claude` gives `["/a/memtrail", "hook", "claude"]`. Any
/// other command (`echo memtrail hook claude`) is returned as it is.
pub fn unwrap_command(words: Vec<String>) -> Vec<String> {
    let Some(k) = words.iter().position(|w| is_memtrail_program(w)) else {
        return words;
    };
    let Some(first) = words.first().filter(|_| k > 0) else {
        return words;
    };
    let name = first.rsplit('/').next().unwrap_or(first);
    let assignment = first.split_once('=').is_some_and(|(n, _)| {
        !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    });
    let plain = words[..k]
        .iter()
        .all(|w| !w.chars().any(|c| ";&|<>()$`\n".contains(c)));
    if (WRAPPERS.contains(&name) || assignment) && plain {
        words[k..].to_vec()
    } else {
        words
    }
}

/// Quote `s` for a POSIX shell when it holds anything but `[A-Za-z0-9_./+:@%,=-]`: wrapped in
/// single quotes, each `'` written as `'\''`. Claude Code runs a shell-form command with `sh -c`
/// (Git Bash on Windows), `docs/agents/claude.md#what-memtrail-registers`.
pub fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./+:@%,=-".contains(c));
    if safe {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// Split a shell command line into words the way `sh` would for a simple command: whitespace
/// separates words, `'…'` is literal, `"…"` allows `\"`, `\\`, `\$` and `` \` `` escapes, and a
/// backslash outside quotes escapes the next character. `None` for an unterminated quote. Shell
/// operators are not interpreted (`a; b` gives the words `a;` and `b`), which is what memtrail's
/// marker check needs: a command with anything more than `memtrail hook claude` is not memtrail's.
/// A line break outside quotes between two words ends a command as `;` does: it is given as a
/// word of its own, `"\n"` (`nice curl x` then `memtrail hook claude` on the next line is two
/// commands, not memtrail's wrapped, see [`unwrap_command`]).
pub fn shell_split(s: &str) -> Option<Vec<String>> {
    let words = shell_words(s)?;
    let mut out = Vec::with_capacity(words.len());
    let mut end = None;
    for (w, span) in words {
        if end.is_some_and(|e| s[e..span.start].contains('\n')) {
            out.push("\n".to_string());
        }
        end = Some(span.end);
        out.push(w);
    }
    Some(out)
}

/// [`shell_split`], with each word's byte range in `s` (its quotes included).
pub fn shell_words(s: &str) -> Option<Vec<(String, std::ops::Range<usize>)>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut start: Option<usize> = None;
    let mut chars = s.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if !matches!(c, ' ' | '\t' | '\n' | '\r') && start.is_none() {
            start = Some(at);
        }
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if let Some(from) = start.take() {
                    words.push((std::mem::take(&mut cur), from..at));
                }
            }
            '\'' => loop {
                match chars.next()?.1 {
                    '\'' => break,
                    ch => cur.push(ch),
                }
            },
            '"' => loop {
                match chars.next()?.1 {
                    '"' => break,
                    '\\' => match chars.next()?.1 {
                        e @ ('"' | '\\' | '$' | '`') => cur.push(e),
                        '\n' => {}
                        e => {
                            cur.push('\\');
                            cur.push(e);
                        }
                    },
                    ch => cur.push(ch),
                }
            },
            '\\' => match chars.next() {
                Some((_, '\n')) => {}
                Some((_, e)) => cur.push(e),
                None => cur.push('\\'),
            },
            ch => cur.push(ch),
        }
    }
    if let Some(from) = start {
        words.push((cur, from..s.len()));
    }
    Some(words)
}

/// `current`, a command the user wrapped around memtrail's hook (`env FOO=1 nice -n 5
/// /old/memtrail hook claude`, see [`unwrap_command`]), with memtrail's program replaced by
/// the one of `wanted` (memtrail's plain command, `'/new dir/memtrail' hook claude`, as it is
/// written there) and every other byte kept. `None` when `current` is not wrapped, or runs
/// other arguments than `wanted`, or when a line break or a `#` comes before memtrail's program
/// (`sh` would run the words before it as a command of their own, or not run memtrail).
pub fn rewrap_command(current: &str, wanted: &str) -> Option<String> {
    let cur = shell_words(current)?;
    let want = shell_words(wanted)?;
    let words: Vec<String> = cur.iter().map(|(w, _)| w.clone()).collect();
    let inner = unwrap_command(words.clone());
    let k = words.len() - inner.len();
    let (program, args) = want.split_first()?;
    if k == 0 || !inner.iter().skip(1).eq(args.iter().map(|(w, _)| w)) {
        return None;
    }
    let span = &cur[k].1;
    // Words of a command of their own (after a line break) or a comment are no wrapper.
    let before = &current[..span.start];
    if before.contains(['\n', '\r', '#']) {
        return None;
    }
    Some(format!(
        "{}{}{}",
        &current[..span.start],
        &wanted[program.1.clone()],
        &current[span.end..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_and_split_round_trip() {
        for p in [
            "/usr/local/bin/memtrail",
            "/home/a b/memtrail",
            "/tmp/it's/memtrail",
            "/x/$HOME/\"q\"/memtrail",
            "C:\\Users\\me\\memtrail.exe",
        ] {
            let cmd = format!("{} hook claude", shell_quote(p));
            assert_eq!(
                shell_split(&cmd).unwrap(),
                vec![p.to_string(), "hook".into(), "claude".into()],
                "{cmd}"
            );
        }
        assert_eq!(shell_quote("/usr/bin/memtrail"), "/usr/bin/memtrail");
        assert_eq!(shell_split("'unterminated"), None);
        assert_eq!(
            shell_split("  a\\ b  \"c d\"e 'f'\\\n"),
            Some(vec!["a b".to_string(), "c de".into(), "f".into()])
        );
    }

    /// An unquoted line break between two words ends a command, as `sh` reads it.
    #[test]
    fn a_line_break_ends_a_command() {
        let split = |s: &str| shell_split(s).unwrap();
        assert_eq!(
            split("nice -n 5 curl x\n/a/memtrail hook claude"),
            [
                "nice",
                "-n",
                "5",
                "curl",
                "x",
                "\n",
                "/a/memtrail",
                "hook",
                "claude"
            ]
        );
        // Not memtrail's wrapped: `sh` runs `nice -n 5 curl x` as a command of its own (status
        // and uninstall took the whole command for memtrail's).
        let words = split("nice -n 5 curl x\n/a/memtrail hook claude");
        assert_eq!(unwrap_command(words.clone()), words);
        let words = split("FOO=1 curl x\n  /a/memtrail hook claude");
        assert_eq!(unwrap_command(words.clone()), words);
        // A line continuation, a break inside quotes, and one at the end are no command's end.
        assert_eq!(
            unwrap_command(split("nice -n 5 \\\n/a/memtrail hook claude\n")),
            ["/a/memtrail", "hook", "claude"]
        );
        assert_eq!(split("echo 'a\nb' c"), ["echo", "a\nb", "c"]);
    }

    /// The word spans cover each word's quotes; a wrapper around memtrail's hook keeps every
    /// byte but memtrail's program when the program changes.
    #[test]
    fn words_have_spans_and_a_wrapper_is_kept() {
        let cmd = "env FOO=1  nice -n 5 '/old dir/memtrail' hook claude";
        let words = shell_words(cmd).unwrap();
        assert_eq!(&cmd[words[5].1.clone()], "'/old dir/memtrail'");
        assert_eq!(words[5].0, "/old dir/memtrail");
        assert_eq!(
            rewrap_command(cmd, "/new/memtrail hook claude").as_deref(),
            Some("env FOO=1  nice -n 5 /new/memtrail hook claude")
        );
        assert_eq!(
            rewrap_command(
                "nice -n 5 /old/memtrail hook claude",
                "'/a b/memtrail' hook claude"
            )
            .as_deref(),
            Some("nice -n 5 '/a b/memtrail' hook claude")
        );
        // Not wrapped, other arguments, or not memtrail's: nothing to keep.
        assert_eq!(
            rewrap_command("/old/memtrail hook claude", "/n/memtrail hook claude"),
            None
        );
        assert_eq!(
            rewrap_command("nice /old/memtrail hook codex", "/n/memtrail hook claude"),
            None
        );
        assert_eq!(
            rewrap_command("nice /old/other hook claude", "/n/memtrail hook claude"),
            None
        );
        // A line break or a comment before memtrail's program: `sh` runs the words before it
        // as a command of their own (or never runs memtrail); the command is written plain.
        for cmd in [
            "FOO=1\ncurl -s http://x.example/a -o /tmp/a\n/old/memtrail hook claude",
            "nice\r\n/old/memtrail hook claude",
            "nice # /old/memtrail hook claude",
        ] {
            assert_eq!(
                rewrap_command(cmd, "/n/memtrail hook claude"),
                None,
                "{cmd:?}"
            );
        }
        assert_eq!(rewrap_command("", "/n/memtrail hook claude"), None);
        assert_eq!(rewrap_command("/old/memtrail hook claude", ""), None);
    }
}
