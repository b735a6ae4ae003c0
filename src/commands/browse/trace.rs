//! `MEMTRAIL_BROWSE_TRACE=FILE`: the browser's own timings, for `scripts/bench-browse` (a
//! benchmark, never a test): when the first screen of results was drawn, each search
//! keystroke's time to the frame that shows its results (or a later keystroke's), each
//! frame's draw time, and the peak resident memory. Written as one JSON object when the
//! browser ends; nothing is written without the variable.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The timings gathered while the browser runs.
pub struct Trace {
    path: std::path::PathBuf,
    /// Wall-clock time (ms since the Unix epoch) the first results were drawn.
    first_screen_unix_ms: Option<u128>,
    /// Keystrokes that asked for new results: (generation, when) until shown.
    pending: Vec<(u64, Instant)>,
    /// Keystroke to results shown (ms).
    keys: Vec<f64>,
    /// Frame draw times (ms).
    frames: Vec<f64>,
}

impl Trace {
    /// The trace asked for by `MEMTRAIL_BROWSE_TRACE`, else `None`.
    pub fn from_env() -> Option<Trace> {
        let path = std::env::var_os("MEMTRAIL_BROWSE_TRACE")?;
        Some(Trace {
            path: path.into(),
            first_screen_unix_ms: None,
            pending: Vec::new(),
            keys: Vec::new(),
            frames: Vec::new(),
        })
    }

    /// A key was handled; `generation` is the results' generation after it.
    pub fn key(&mut self, before: u64, generation: u64) {
        if generation != before {
            self.pending.push((generation, Instant::now()));
        }
    }

    /// A frame was drawn in `took`, showing the results of `shown` (0: none yet).
    pub fn frame(&mut self, took: Duration, shown: u64) {
        self.frames.push(took.as_secs_f64() * 1e3);
        if shown > 0 && self.first_screen_unix_ms.is_none() {
            self.first_screen_unix_ms = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .ok()
                .map(|d| d.as_millis());
        }
        let now = Instant::now();
        let keys = &mut self.keys;
        self.pending.retain(|(g, at)| {
            if *g <= shown {
                keys.push(now.duration_since(*at).as_secs_f64() * 1e3);
                false
            } else {
                true
            }
        });
    }

    /// Writes the JSON object (a new file is created 0600): `first_screen_unix_ms`, `keys_ms`
    /// and `frames_ms` (arrays), `rss_peak_kb` and `rss_kb` (from /proc/self/status; null
    /// elsewhere).
    pub fn write(&self) -> std::io::Result<()> {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let kb = |field: &str| -> Option<u64> {
            status
                .lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        };
        let v = serde_json::json!({
            "first_screen_unix_ms": self.first_screen_unix_ms.map(|t| t as u64),
            "keys_ms": self.keys,
            "frames_ms": self.frames,
            "rss_peak_kb": kb("VmHWM:"),
            "rss_kb": kb("VmRSS:"),
        });
        // Owner-only, as every file memtrail creates.
        let mut open = std::fs::OpenOptions::new();
        open.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
        std::io::Write::write_all(&mut open.open(&self.path)?, v.to_string().as_bytes())
    }
}
