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
/// operator character (`;&|<>()$` or a backquote). `nice -n 5 /a/memtrail hook claude` gives
/// `["/a/memtrail", "hook", "claude"]`. Any other command (`echo memtrail hook claude`) is
/// returned as it is.
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
        .all(|w| !w.chars().any(|c| ";&|<>()$`".contains(c)));
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
pub fn shell_split(s: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        ch => cur.push(ch),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            e @ ('"' | '\\' | '$' | '`') => cur.push(e),
                            '\n' => {}
                            e => {
                                cur.push('\\');
                                cur.push(e);
                            }
                        },
                        ch => cur.push(ch),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') => {}
                    Some(e) => cur.push(e),
                    None => cur.push('\\'),
                }
            }
            ch => {
                in_word = true;
                cur.push(ch);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Some(words)
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
    }
}
