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
