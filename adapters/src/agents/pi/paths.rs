//! Where pi keeps its config and sessions: one resolver ([`Locations::resolve`]) from an explicit
//! environment ([`Env`]), for ingest, the hook and the installer alike.

use crate::env::Env;
use std::path::PathBuf;

/// Where pi keeps the files memtrail reads and writes (`docs/agents/pi.md#paths`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// The agent folder: `$PI_CODING_AGENT_DIR` when set and not empty (`~` and `~/…` expanded
    /// against the home), else `~/.pi/agent` (`config.js` `getAgentDir`).
    pub agent_dir: PathBuf,
    /// `<agent>/extensions/memtrail.ts`: memtrail's extension (pi loads every
    /// `<agent>/extensions/*.ts` at startup).
    pub extension: PathBuf,
    /// The sessions' root: `$PI_CODING_AGENT_SESSION_DIR` when set and not empty (`~`
    /// expanded), else `<agent>/sessions` (one folder per working directory below it).
    pub sessions: PathBuf,
}

/// A folder variable as pi reads it (`expandTildePath`): `~` and `~/…` against `home`; unset or
/// empty: `None`.
fn dir_var(env: &Env, key: &str) -> Option<PathBuf> {
    let v = env.var_utf8(key).filter(|v| !v.is_empty())?;
    Some(if v == "~" {
        env.home().to_path_buf()
    } else if let Some(rest) = v.strip_prefix("~/") {
        env.home().join(rest)
    } else {
        PathBuf::from(v)
    })
}

impl Locations {
    /// The locations in `env` (its home, `PI_CODING_AGENT_DIR`, `PI_CODING_AGENT_SESSION_DIR`):
    /// the one resolver of pi's paths, used by the reader and the hook (with
    /// `Env::from_process()`) as by the installer. The settings' `sessionDir` and the `--session-dir`
    /// flag, which also move the sessions, are not read (the hook's payload names the file).
    pub fn resolve(env: &Env) -> Locations {
        let agent_dir =
            dir_var(env, "PI_CODING_AGENT_DIR").unwrap_or_else(|| env.home().join(".pi/agent"));
        Locations {
            extension: agent_dir.join("extensions").join("memtrail.ts"),
            sessions: dir_var(env, "PI_CODING_AGENT_SESSION_DIR")
                .unwrap_or_else(|| agent_dir.join("sessions")),
            agent_dir,
        }
    }
}
