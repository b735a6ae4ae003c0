//! Home and XDG base directories, resolved from the environment on every call so that tests can
//! point `HOME` and `XDG_*` at a sandbox.

use std::path::PathBuf;

/// The user's home directory: `$HOME` when set and non-empty, else the platform's answer.
pub fn home_dir() -> PathBuf {
    match std::env::var_os("HOME") {
        Some(h) if !h.is_empty() => PathBuf::from(h),
        _ => dirs::home_dir().unwrap_or_else(|| PathBuf::from(".")),
    }
}

/// An absolute path from an environment variable, or `None` when unset, empty or relative
/// (the XDG Base Directory spec says relative values are invalid and must be ignored).
pub fn env_abs(var: &str) -> Option<PathBuf> {
    let v = std::env::var_os(var)?;
    let p = PathBuf::from(v);
    if p.is_absolute() { Some(p) } else { None }
}

/// `$XDG_DATA_HOME`, default `~/.local/share`.
pub fn xdg_data_home() -> PathBuf {
    env_abs("XDG_DATA_HOME").unwrap_or_else(|| home_dir().join(".local/share"))
}

/// `$XDG_STATE_HOME`, default `~/.local/state`.
pub fn xdg_state_home() -> PathBuf {
    env_abs("XDG_STATE_HOME").unwrap_or_else(|| home_dir().join(".local/state"))
}

/// `$XDG_CONFIG_HOME`, default `~/.config`.
pub fn xdg_config_home() -> PathBuf {
    env_abs("XDG_CONFIG_HOME").unwrap_or_else(|| home_dir().join(".config"))
}

/// Decode `%XX` escapes of a `file://` URI path (as VS Code and Cursor write workspace folders);
/// invalid escapes are kept as they are, invalid UTF-8 becomes U+FFFD.
pub fn percent_decode(s: &str) -> String {
    let hex = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
