//! Automatic sync after a hook (docs/sync.md, "Automatic sync").
//!
//! When sync is configured (`[sync] url` in memtrail's config, [`Privacy::sync_configured`]),
//! a hook, after its own work, has a detached `memtrail sync --background` started:
//!
//! - at every session end (canonical event `SessionEnd`: Claude Code's `SessionEnd`, Gemini's,
//!   OpenCode's `session.deleted`, …);
//! - at a turn's end (canonical `Stop`: Claude Code's `Stop`, Codex's `agent-turn-complete`,
//!   Gemini's `AfterAgent`, OpenCode's `session.idle`, …) at most once per
//!   [`STOP_INTERVAL_SECS`] (60 s, `MEMTRAIL_SYNC_INTERVAL_SECS` to change it), so that other
//!   machines see the work before the session closes without a sync at every turn. A turn that
//!   ends within the interval is pushed by the next sync (the next turn after it, the session's
//!   end, or `memtrail sync --watch`).
//!
//! The time of the last start is the modification time of [`stamp_path`] (mode 0600). The hook
//! itself never connects anywhere: the background process does, and it takes the same lock as
//! `memtrail sync` (one sync at a time; one that finds the lock taken asks the running one to
//! go once more, and exits). Nothing here runs, and no file is written, when sync is not
//! configured.

use crate::privacy::Privacy;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Least seconds between two background syncs started at turn ends (`Stop`); a session's end
/// always starts one.
pub const STOP_INTERVAL_SECS: u64 = 60;

/// The variable that overrides [`STOP_INTERVAL_SECS`] (whole seconds; `0`: at every turn).
pub const INTERVAL_VAR: &str = "MEMTRAIL_SYNC_INTERVAL_SECS";

/// The file whose modification time is when a hook last started a background sync:
/// `$XDG_STATE_HOME/memtrail/sync-started` (mode 0600).
pub fn stamp_path() -> PathBuf {
    crate::state_dir().join("sync-started")
}

/// Whether a hook of canonical event `canonical` may start a background sync at all.
pub fn triggered_by(canonical: &str) -> bool {
    matches!(canonical, "SessionEnd" | "Stop")
}

fn interval() -> Duration {
    Duration::from_secs(
        std::env::var(INTERVAL_VAR)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(STOP_INTERVAL_SECS),
    )
}

/// Decide, for a hook of canonical event `canonical` that ran with the config `config` (the
/// settings its ingest read, or `None` to read them now), whether to start a background sync,
/// and if so note the start in `stamp` (created 0600 with its folder 0700; its modification
/// time is the start). `SessionEnd` always starts one; `Stop` when the stamp is missing or at
/// least the interval old (or dated in the future: a clock set back). Any other event, or sync
/// not configured (or the config unreadable), never does, and touches nothing.
///
/// Never fails: a stamp that cannot be written still lets the sync start (the lock keeps
/// syncs one at a time).
pub fn claim(canonical: &str, config: Option<&Privacy>, stamp: &Path, now: SystemTime) -> bool {
    if !triggered_by(canonical) {
        return false;
    }
    let configured = match config {
        Some(p) => p.sync_configured,
        None => Privacy::load().is_ok_and(|p| p.sync_configured),
    };
    if !configured {
        return false;
    }
    if canonical == "Stop"
        && let Ok(last) = std::fs::symlink_metadata(stamp).and_then(|m| m.modified())
        && let Ok(age) = now.duration_since(last)
        && age < interval()
    {
        return false;
    }
    let _ = write_stamp(stamp, now);
    true
}

/// Write `stamp` (the start time in Unix milliseconds, for people; its modification time is
/// what counts), mode 0600, never following a symlink.
fn write_stamp(stamp: &Path, now: SystemTime) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = stamp.parent()
        && !dir.is_dir()
    {
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(dir)?;
    }
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let mut f = o.open(stamp)?;
    let ms = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    writeln!(f, "{ms}")?;
    // The modification time is `now` (the write set it to the clock, which may differ).
    f.set_modified(now)
}

/// Start `exe --db DB sync --background` detached ([`spawn_detached`]).
///
/// Errors: the process could not be started.
pub fn spawn(exe: &Path, db: &Path) -> std::io::Result<()> {
    let db = std::path::absolute(db)?;
    let args: [&std::ffi::OsStr; 4] = [
        "--db".as_ref(),
        db.as_os_str(),
        "sync".as_ref(),
        "--background".as_ref(),
    ];
    spawn_detached(exe, &args)
}

/// Start `exe ARGS…` detached: in a session of its own (`setsid`: the agent ending the hook's
/// process group does not end it), in the folder `/`, stdin, stdout and stderr on
/// `/dev/null`, not waited for. A path among `args` must be absolute.
///
/// Errors: the process could not be started.
pub fn spawn_detached(exe: &Path, args: &[impl AsRef<std::ffi::OsStr>]) -> std::io::Result<()> {
    use std::process::{Command, Stdio};
    let mut c = Command::new(exe);
    // In `/`, not the hook's folder (the agent's project): a process that outlives the hook
    // does not hold that folder (a mount stays unmountable while a process works in it).
    // Paths in `args` are absolute ([`spawn`], [`crate::settle::spawn`]).
    c.args(args)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
        unsafe {
            c.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
    }
    c.spawn().map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(sync: bool) -> Privacy {
        Privacy {
            exclude: Vec::new(),
            home: "/nonexistent".into(),
            sync_configured: sync,
            redact: Default::default(),
        }
    }

    #[test]
    fn stop_is_debounced_session_end_is_not_and_nothing_without_sync() {
        let d = tempfile::tempdir().unwrap();
        let stamp = d.path().join("state/memtrail/sync-started");
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let on = config(true);
        // Not configured: no start, no file.
        assert!(!claim("Stop", Some(&config(false)), &stamp, t0));
        assert!(!claim("SessionEnd", Some(&config(false)), &stamp, t0));
        assert!(!stamp.exists());
        // Other events never start one.
        assert!(!claim("UserPromptSubmit", Some(&on), &stamp, t0));
        assert!(!claim("PreCompact", Some(&on), &stamp, t0));
        assert!(!stamp.exists());
        // The first Stop starts one and dates the stamp.
        assert!(claim("Stop", Some(&on), &stamp, t0));
        let m = std::fs::metadata(&stamp).unwrap();
        assert_eq!(m.modified().unwrap(), t0);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(m.permissions().mode() & 0o777, 0o600);
            let dir = std::fs::metadata(stamp.parent().unwrap()).unwrap();
            assert_eq!(dir.permissions().mode() & 0o777, 0o700);
        }
        assert_eq!(std::fs::read_to_string(&stamp).unwrap(), "1800000000000\n");
        // 59 s later: too soon; 60 s later: again.
        let s = Duration::from_secs(1);
        assert!(!claim("Stop", Some(&on), &stamp, t0 + 59 * s));
        assert_eq!(std::fs::metadata(&stamp).unwrap().modified().unwrap(), t0);
        assert!(claim("Stop", Some(&on), &stamp, t0 + 60 * s));
        // A session's end always starts one, and dates the stamp.
        assert!(claim("SessionEnd", Some(&on), &stamp, t0 + 61 * s));
        assert_eq!(
            std::fs::metadata(&stamp).unwrap().modified().unwrap(),
            t0 + 61 * s
        );
        assert!(!claim("Stop", Some(&on), &stamp, t0 + 62 * s));
        // A stamp dated in the future (the clock was set back) does not block.
        assert!(claim("Stop", Some(&on), &stamp, t0));
    }
}
