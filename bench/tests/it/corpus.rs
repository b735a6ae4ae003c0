//! The synthetic corpus is read by memtrail's own readers with no malformed and no unknown line,
//! lands in the real layouts each agent's discovery walks, and is deterministic from its seed.

use memtrail_adapters::Agent;
use memtrail_bench::{Options, append_claude_turn, generate};
use memtrail_runtime::ingest::ingest_file;
use memtrail_runtime::store::Store;
use std::path::{Path, PathBuf};

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn small() -> Options {
    Options {
        seed: 42,
        bytes: 2 << 20,
        session_bytes: 64 << 10,
    }
}

#[test]
fn every_generated_line_is_read_by_memtrail() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let s = generate(&home, &small()).unwrap();
    assert!(s.bytes >= 2 << 20, "{s:?}");
    assert!(s.subagents > 0, "sub-agents are generated: {s:?}");

    // Discovery, as `memtrail import` runs it, finds every file in its real layout.
    let claude = memtrail_adapters::claude::discover(&home.join(".claude/projects")).unwrap();
    let codex = memtrail_adapters::codex::discover_in(&home.join(".codex")).unwrap();
    let gemini = memtrail_adapters::gemini::discover_in(&home.join(".gemini/tmp")).unwrap();
    let mut all = Vec::new();
    files_under(&home, &mut all);
    let cursor: Vec<PathBuf> = all
        .iter()
        .filter(|p| p.starts_with(home.join(".cursor")))
        .cloned()
        .collect();
    assert_eq!(
        claude.len() + codex.len() + gemini.len() + cursor.len(),
        all.len(),
        "every file is in a discovered layout"
    );
    assert_eq!(all.len() as u64, s.files);
    for (agent, files, _) in &s.per_agent {
        let found = match agent.as_str() {
            "claude" => claude.len(),
            "codex" => codex.len(),
            "gemini" => gemini.len(),
            _ => cursor.len(),
        };
        assert_eq!(found as u64, *files, "{agent}");
    }

    let mut store = Store::open(&dir.path().join("m.db")).unwrap();
    let mut lines = 0;
    for (agent, files) in [
        (Agent::Claude, &claude),
        (Agent::Codex, &codex),
        (Agent::Gemini, &gemini),
        (Agent::Cursor, &cursor),
    ] {
        let mut inserted = 0;
        for p in files {
            let r = ingest_file(&mut store, agent, p, None).unwrap();
            assert_eq!(r.stats.malformed, 0, "{agent:?} {}", p.display());
            assert_eq!(r.stats.skipped_unknown, 0, "{agent:?} {}", p.display());
            assert_eq!(
                r.bytes,
                std::fs::metadata(p).unwrap().len(),
                "read to the end"
            );
            inserted += r.inserted;
            lines += r.stats.lines;
        }
        assert!(inserted > 0, "{agent:?} gave messages");
    }
    assert_eq!(lines, s.lines, "every written line was read");
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let digest = |seed: u64| {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            seed,
            bytes: 256 << 10,
            session_bytes: 32 << 10,
        };
        generate(dir.path(), &opts).unwrap();
        let mut files = Vec::new();
        files_under(dir.path(), &mut files);
        files.sort();
        files
            .iter()
            .map(|p| {
                (
                    p.strip_prefix(dir.path()).unwrap().to_path_buf(),
                    std::fs::read(p).unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    let a = digest(3);
    assert_eq!(a, digest(3));
    assert_ne!(a, digest(4));
}

#[test]
fn an_appended_turn_is_new_messages_each_time() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let n1 = append_claude_turn(&p, "sid-1", 20 << 10, 1).unwrap();
    assert!(
        ((20 << 10) - 1200..=(20 << 10) + 6000).contains(&n1),
        "{n1}"
    );
    let mut store = Store::open(&dir.path().join("m.db")).unwrap();
    let a = ingest_file(&mut store, Agent::Claude, &p, None).unwrap();
    let n2 = append_claude_turn(&p, "sid-1", 20 << 10, 1).unwrap();
    let b = ingest_file(&mut store, Agent::Claude, &p, None).unwrap();
    assert_eq!((a.stats.malformed, b.stats.malformed), (0, 0));
    assert_eq!(b.bytes, n2);
    assert!(a.inserted >= 3 && b.inserted == a.inserted, "{a:?} {b:?}");
}

/// Each transcript is dated like the agent's own last write: its modification time is the time
/// of its last record (up to the generator's next tick, never in the future), not the time the
/// corpus was generated.
#[test]
fn transcripts_are_dated_at_their_last_record() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    generate(&home, &small()).unwrap();
    let claude = memtrail_adapters::claude::discover(&home.join(".claude/projects")).unwrap();
    assert!(claude.len() > 5, "{}", claude.len());
    let now = std::time::SystemTime::now();
    for p in &claude {
        let text = std::fs::read_to_string(p).unwrap();
        let last: serde_json::Value =
            serde_json::from_str(text.lines().next_back().unwrap()).unwrap();
        let ts = memtrail_adapters::parse_rfc3339_ms(last["timestamp"].as_str().unwrap()).unwrap();
        let modified = std::fs::metadata(p).unwrap().modified().unwrap();
        assert!(modified <= now, "{}", p.display());
        let ms = modified
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        assert!(
            (ts..ts + 3_600_000).contains(&ms),
            "{}: modified {ms}, last record {ts}",
            p.display()
        );
    }
}
