//! `memtrail completions SHELL` and `memtrail man`: generated from the clap definitions. The
//! bash script is sourced by a real bash, interactive (`bash -i`), and completes a command,
//! driven as readline drives it (COMP_WORDS/COMP_CWORD, then the function `complete -p`
//! names), and under tmux with a real TAB.

use crate::support::{self, Sandbox};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

/// What the bash completion of memtrail offers for the words of `line` (its last word being
/// completed), from an interactive bash that sourced `memtrail completions bash`: the
/// COMPREPLY words, one a line.
fn bash_completes(sb: &Sandbox, line: &str) -> String {
    let script = sb.home.join("memtrail.bash");
    let out = sb.cmd().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success());
    std::fs::write(&script, &out.stdout).unwrap();
    let words: Vec<&str> = line.split(' ').collect();
    let program = format!(
        "source {script}\n\
         spec=$(complete -p memtrail) || exit 3\n\
         fn=${{spec##* -F }}; fn=${{fn%% *}}\n\
         COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}\n\
         COMP_WORDS=({words}); COMP_CWORD={cword}\n\
         \"$fn\" memtrail \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script = quote(&script),
        words = words
            .iter()
            .map(|w| format!("'{w}'"))
            .collect::<Vec<_>>()
            .join(" "),
        cword = words.len() - 1,
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-i", "-c", &program])
        .env("HOME", &sb.home)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn bash_completion_completes_commands_and_options() {
    let sb = Sandbox::new();
    assert_eq!(bash_completes(&sb, "memtrail sea"), "search\n");
    assert_eq!(bash_completes(&sb, "memtrail sessions sh"), "show\n");
    assert_eq!(
        bash_completes(&sb, "memtrail completions p"),
        "powershell\n"
    );
    assert_eq!(bash_completes(&sb, "memtrail search --mo"), "--mode\n");
    assert_eq!(
        // In the order of the definition (the script says `-o nosort`).
        bash_completes(&sb, "memtrail search --color a"),
        "auto\nalways\n"
    );
    assert_eq!(bash_completes(&sb, "memtrail comp"), "completions\n");
    // Nothing matches: nothing offered.
    assert_eq!(bash_completes(&sb, "memtrail zz"), "\n");
}

/// Under tmux (a real terminal and readline): `memtrail sea<TAB>` becomes `memtrail search `.
#[test]
fn bash_completion_completes_a_command_on_tab_in_an_interactive_bash() {
    if crate::common::which("tmux").is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is missing (CI installs it in .ci/run)"
        );
        eprintln!("tmux is not installed: the TAB completion test is skipped");
        return;
    }
    let sb = Sandbox::new();
    let out = sb.cmd().args(["completions", "bash"]).output().unwrap();
    let script = sb.home.join("memtrail.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let rc = sb.home.join("bashrc");
    let bin_dir = support::memtrail_bin().parent().unwrap().to_path_buf();
    std::fs::write(
        &rc,
        format!(
            "PS1='$ '\nPATH={}:\"$PATH\"\nsource {}\necho ready\n",
            quote(&bin_dir),
            quote(&script)
        ),
    )
    .unwrap();
    let socket = sb.home.join("tmux.sock");
    let tmux = |args: &[&str]| {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .arg("-f")
            .arg("/dev/null")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "tmux {args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let shell = format!(
        "env -i HOME={} TERM=xterm PATH=/usr/bin:/bin bash --noprofile --rcfile {} -i",
        quote(&sb.home),
        quote(&rc)
    );
    tmux(&[
        "new-session",
        "-d",
        "-s",
        "t",
        "-x",
        "100",
        "-y",
        "20",
        &shell,
    ]);
    let wait_for = |what: &str| {
        let start = Instant::now();
        loop {
            let s = tmux(&["capture-pane", "-p", "-t", "t"]);
            if s.contains(what) {
                return s;
            }
            if start.elapsed() > Duration::from_secs(15) {
                let _ = tmux(&["kill-server"]);
                panic!("the screen never showed {what:?}; it shows:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_for("ready");
    tmux(&["send-keys", "-t", "t", "-l", "memtrail sea"]);
    tmux(&["send-keys", "-t", "t", "Tab"]);
    // (capture-pane drops trailing blanks: the space after `search` shows in the next step.)
    wait_for("$ memtrail search");
    tmux(&["send-keys", "-t", "t", "-l", "--", "--li"]);
    tmux(&["send-keys", "-t", "t", "Tab"]);
    wait_for("$ memtrail search --limit");
    let _ = tmux(&["kill-server"]);
}

/// zsh, fish, PowerShell and elvish get their own dialect, from the same definitions.
#[test]
fn completions_for_each_shell_and_a_bad_shell() {
    let sb = Sandbox::new();
    let script = |shell: &str| {
        let out = sb.cmd().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(script("zsh").starts_with("#compdef memtrail\n"));
    assert!(script("zsh").contains("'search:Search every captured message"));
    assert!(
        script("fish")
            .contains("complete -c memtrail -n \"__fish_memtrail_needs_command\" -f -a \"search\"")
    );
    assert!(
        script("powershell").contains("Register-ArgumentCompleter -Native -CommandName 'memtrail'")
    );
    assert!(script("elvish").contains("set edit:completion:arg-completer[memtrail]"));
    let bad = sb.cmd().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("invalid value 'tcsh'")
            && err.contains("[possible values: bash, elvish, fish, powershell, zsh]"),
        "{err}"
    );
}

/// `memtrail man`: memtrail(1) with every visible command in SUBCOMMANDS; `man sessions list`
/// is memtrail-sessions-list(1); an unknown or hidden command is an error.
#[test]
fn man_pages_from_the_clap_definitions() {
    let sb = Sandbox::new();
    let page = |words: &[&str]| {
        let out = sb.cmd().arg("man").args(words).output().unwrap();
        (
            out.status.code(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (code, top, _) = page(&[]);
    assert_eq!(code, Some(0));
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        top.contains(&format!(".TH memtrail 1  \"memtrail {version}\"")),
        "{top}"
    );
    for sub in ["install", "search", "sessions", "completions", "sync"] {
        assert!(top.contains(&format!("memtrail\\-{sub}(1)")), "{sub}");
    }
    assert!(!top.contains("memtrail\\-man(1)") && !top.contains("memtrail\\-help(1)"));
    let (code, list, _) = page(&["sessions", "list"]);
    assert_eq!(code, Some(0));
    assert!(list.contains(&format!(
        ".TH memtrail-sessions-list 1  \"memtrail {version}\""
    )));
    assert!(list.contains("memtrail\\-sessions\\-list \\- Sessions, most recently active first"));
    let (code, _, err) = page(&["nope"]);
    assert_eq!(code, Some(1));
    assert_eq!(err, "memtrail: no command `nope` has a manual page\n");
}
