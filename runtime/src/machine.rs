//! Which machine a session was captured on, as shown to users: the machine's label
//! (docs/sync.md, "Machines"). Sessions of this machine (`origin` `''` in the SQLite store) show
//! this machine's label: `[sync] label` of memtrail's config, else the hostname; pulled
//! sessions show the label their machine pushed (the `machines` table), else its id.

use std::sync::OnceLock;

/// This machine's label: `label` of the `[sync]` table of memtrail's config
/// ([`crate::privacy::config_path`]) when set and not empty, else [`hostname`]. Read once per
/// process; a config that cannot be read or parsed counts as none.
pub fn local_label() -> &'static str {
    static LABEL: OnceLock<String> = OnceLock::new();
    LABEL.get_or_init(|| {
        let text = crate::config::read(&crate::privacy::config_path())
            .ok()
            .flatten();
        label_from(text.as_deref(), hostname)
    })
}

/// The label a config file's text (`None`: no file) gives, else `hostname()`.
pub fn label_from(config: Option<&str>, hostname: impl FnOnce() -> String) -> String {
    config
        .and_then(|t| t.parse::<toml_edit::DocumentMut>().ok())
        .and_then(|doc| {
            doc.get("sync")
                .and_then(|s| s.get("label"))
                .and_then(|l| l.as_str())
                .map(|l| l.trim().to_string())
        })
        .filter(|l| !l.is_empty())
        .unwrap_or_else(hostname)
}

/// This machine's host name (`/proc/sys/kernel/hostname`, else `/etc/hostname`, else
/// `HOSTNAME`), or `unknown`.
pub fn hostname() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .chain(std::env::var("HOSTNAME").ok())
        .map(|s| s.trim().to_string())
        .find(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// The label shown for a session of `origin` (`''`: this machine) whose machine's pushed label
/// is `label`: [`local_label`] for this machine, else `label`, else the machine id.
pub fn label_of(origin: &str, label: Option<String>) -> String {
    if origin.is_empty() {
        local_label().to_string()
    } else {
        label.unwrap_or_else(|| origin.to_string())
    }
}

/// Longest machine label, in characters (`sync --init --label`; a pulled label is cut to it).
pub const MAX_LABEL_CHARS: usize = 64;

/// Checks a machine label given by the user (`memtrail sync --init --label NAME`): not empty
/// (nor only spaces), no control character (newline, ESC, …: it is printed in `sessions list`
/// and `status`), at most [`MAX_LABEL_CHARS`] characters, nothing the redaction rules would
/// replace (a token pasted as a label is pushed to every machine).
///
/// Errors: [`crate::Error::Invalid`] saying which rule the label breaks.
pub fn check_label(label: &str) -> crate::Result<()> {
    let why = if label.trim().is_empty() {
        "it is empty".to_string()
    } else if label.chars().any(char::is_control) {
        "it holds a control character (a newline, a tab, ESC, …)".to_string()
    } else if label.chars().count() > MAX_LABEL_CHARS {
        format!(
            "it is {} characters long, more than {MAX_LABEL_CHARS}",
            label.chars().count()
        )
    } else if crate::redact::redact(label) != label {
        // Not echoed: the label is what would leak.
        return Err(crate::Error::Invalid(
            "--label is not a usable machine label: it holds what looks like a secret (a \
             token, a password); give a short name such as `laptop` (every machine syncing \
             with the database shows it)"
                .into(),
        ));
    } else {
        return Ok(());
    };
    Err(crate::Error::Invalid(format!(
        "--label {label:?} is not a usable machine label: {why}; give a short name such as \
         `laptop` (it is shown in `sessions list` and `status`)"
    )))
}

/// A label pulled from PostgreSQL (another machine's, written there by any client) made safe
/// to store and show: control characters replaced by `\u{FFFD}`, secrets redacted (the
/// built-in rules, [`crate::redact::redact`]; a label is text like any other), cut to
/// [`MAX_LABEL_CHARS`] characters; `None` when nothing but spaces is left.
pub fn sanitize_label(label: &str) -> Option<String> {
    let s: String = label
        .chars()
        .map(|c| if c.is_control() { '\u{FFFD}' } else { c })
        .collect();
    let s: String = crate::redact::redact(&s)
        .chars()
        .take(MAX_LABEL_CHARS)
        .collect();
    Some(s).filter(|s| !s.trim().is_empty())
}

/// The error of a `--machine NAME` that names no known machine: `no machine \`NAME\`; the
/// machines known: A, B (a machine's label or its id)`, `known` being the labels in the
/// order given (none: `none yet`).
pub fn unknown_machine(name: &str, known: &[String]) -> crate::Error {
    let list = if known.is_empty() {
        "none yet".to_string()
    } else {
        known.join(", ")
    };
    crate::Error::Invalid(format!(
        "no machine `{name}`; the machines known: {list} (give a machine's label or its id)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_checked_and_pulled_ones_made_safe() {
        assert!(check_label("laptop").is_ok());
        assert!(check_label(&"é".repeat(64)).is_ok());
        let why = |l: &str| check_label(l).unwrap_err().to_string();
        assert_eq!(
            why(""),
            "--label \"\" is not a usable machine label: it is empty; give a short name such as `laptop` (it is shown in `sessions list` and `status`)"
        );
        assert!(why("  ").contains(": it is empty;"));
        assert!(why("a\nb").contains(": it holds a control character (a newline, a tab, ESC, …);"));
        assert!(why("a\u{1b}[31mb").contains(": it holds a control character"));
        assert!(why(&"x".repeat(65)).contains(": it is 65 characters long, more than 64;"));
        assert_eq!(
            sanitize_label("evil\u{1b}[2J\nbox").as_deref(),
            Some("evil\u{FFFD}[2J\u{FFFD}box")
        );
        assert_eq!(sanitize_label(&"y".repeat(100)), Some("y".repeat(64)));
        assert_eq!(sanitize_label("   "), None);
        let err = check_label("ghp_R7mQ2xK9vL4nB8wT3yH6jD1fG5sA0cZ2pE9u")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("looks like a secret") && !err.contains("ghp_"),
            "{err}"
        );
        assert!(check_label("laptop-2").is_ok());
        assert_eq!(sanitize_label(" \t").as_deref(), Some(" \u{FFFD}"));
        // Redacted before the cut (a token cut short would no longer be recognised).
        let token = "ghp_R7mQ2xK9vL4nB8wT3yH6jD1fG5sA0cZ2pE9u";
        assert_eq!(
            sanitize_label(&format!("{}{token}", "x ".repeat(20))).as_deref(),
            Some(format!("{}[redacted:github_token]", "x ".repeat(20)).as_str())
        );
    }

    #[test]
    fn the_label_is_the_configs_else_the_hostname() {
        let host = || "box".to_string();
        assert_eq!(label_from(None, host), "box");
        assert_eq!(label_from(Some("exclude = []\n"), host), "box");
        assert_eq!(
            label_from(Some("[sync]\nmachine = \"ab\"\nlabel = \"laptop\"\n"), host),
            "laptop"
        );
        assert_eq!(label_from(Some("[sync]\nlabel = \"  \"\n"), host), "box");
        assert_eq!(label_from(Some("not toml ["), host), "box");
        assert_eq!(label_of("5f0c", Some("desk".into())), "desk");
        assert_eq!(label_of("5f0c", None), "5f0c");
        assert_eq!(label_of("", Some("ignored".into())), local_label());
    }
}
