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

/// At most this many entries of a folder are looked at by [`newest_in`] (one `stat` each).
pub const NEWEST_SCAN_CAP: usize = 4096;

/// The file written last (modification time) among those `pick` names for the first
/// [`NEWEST_SCAN_CAP`] entries `dir` lists (`pick` gives an entry's candidate file, or `None`
/// to pass over it); `None` when there is none or `dir` cannot be listed. Used by agents that
/// write a turn's end after their hooks ran: a session's start also reads the session before.
pub fn newest_in(
    dir: &std::path::Path,
    pick: impl Fn(&std::fs::DirEntry) -> Option<PathBuf>,
) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .take(NEWEST_SCAN_CAP)
        .filter_map(|e| {
            let f = pick(&e)?;
            let modified = std::fs::metadata(&f).ok()?.modified().ok()?;
            Some((modified, f))
        })
        .max()
        .map(|(_, f)| f)
}

/// What a directory entry is, symbolic links followed, from the type `readdir` returned
/// (`d_type`: no `stat`) when the file system gives one; a link or an unknown type costs one
/// `stat`. `None` when that `stat` fails (a dangling link). Discovery lists thousands of
/// transcripts: one `stat` each was a third of `memtrail status`'s system calls.
pub fn entry_type(entry: &std::fs::DirEntry) -> Option<std::fs::FileType> {
    match entry.file_type() {
        Ok(t) if !t.is_symlink() => Some(t),
        _ => std::fs::metadata(entry.path()).ok().map(|m| m.file_type()),
    }
}

/// [`entry_type`] is a directory.
pub fn entry_is_dir(entry: &std::fs::DirEntry) -> bool {
    entry_type(entry).is_some_and(|t| t.is_dir())
}

/// [`entry_type`] is a regular file.
pub fn entry_is_file(entry: &std::fs::DirEntry) -> bool {
    entry_type(entry).is_some_and(|t| t.is_file())
}
