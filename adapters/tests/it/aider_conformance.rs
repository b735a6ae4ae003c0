//! Aider: the chat log reader (runs, blocks, a log that grows), identity and discovery, on the
//! project's own fixtures (`fixtures/aider/`, described in its README and in
//! `docs/agents/aider.md`): `real/` was written by Aider 0.86.2 itself (against a loopback stub
//! model), `repo/` by hand in the same shape with two runs. Expected values are read off the
//! fixtures by hand.

use crate::common;

use common::Store;
use memtrail_adapters::aider::{self, AiderReader};
use memtrail_adapters::{Agent, Batch, DocReader, Kind, ParseStats, Role};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/aider")
}

fn read_bytes(path: &Path, bytes: &[u8]) -> Store {
    let mut batch = Batch::default();
    AiderReader::for_path(path).read(bytes, &mut batch);
    let mut s = Store::default();
    s.apply(batch);
    s
}

fn read(path: &Path) -> Store {
    read_bytes(path, &std::fs::read(path).unwrap())
}

fn shape(s: &Store) -> Vec<(String, Role, Kind)> {
    s.messages
        .iter()
        .map(|m| (m.id.clone(), m.role, m.kind))
        .collect()
}

/// 2026-03-01 10:15:00 (the first run's header, read as UTC) in ms.
const RUN1: i64 = 1_772_360_100_000;
/// 2026-03-02 09:00:05 in ms.
const RUN2: i64 = 1_772_442_005_000;

#[test]
fn two_runs_in_one_log() {
    let path = fixtures().join("repo/.aider.chat.history.md");
    let s = read(&path);
    assert_eq!(
        s.stats,
        ParseStats {
            lines: 42,
            skipped_known: 2,
            skipped_unknown: 0,
            malformed: 0
        }
    );
    use Role::*;
    let want: Vec<(String, Role, Kind)> = [
        ("r1-0", System),
        ("r1-1", User),
        ("r1-2", Assistant),
        ("r1-3", System),
        ("r1-4", User),
        ("r1-5", System),
        ("r2-0", System),
        ("r2-1", User),
        ("r2-2", Assistant),
    ]
    .into_iter()
    .map(|(id, r)| (id.to_string(), r, Kind::Text))
    .collect();
    assert_eq!(shape(&s), want);
    let text = |i: usize| s.messages[i].text();
    assert_eq!(
        text(0),
        "/home/user/.local/bin/aider --model openai/gpt-4o src/date.rs\nAider v0.86.2\n\
         Main model: openai/gpt-4o with diff edit format\nGit repo: .git with 12 files\n\
         Added src/date.rs to the chat."
    );
    assert_eq!(
        text(1),
        "Ajoute un test pour parse_date.\nLe test doit couvrir le 29 février — 閏年."
    );
    assert_eq!(
        text(2),
        "Je vais ajouter un test dans `src/date.rs`.\n\nsrc/date.rs\n```rust\n<<<<<<< SEARCH\n\
         #[cfg(test)]\nmod tests {\n=======\n#[cfg(test)]\nmod tests {\n    #[test]\n    \
         fn leap_day() { assert!(parse_date(\"2024-02-29\").is_some()); }\n>>>>>>> REPLACE\n```"
    );
    assert_eq!(
        text(3),
        "Tokens: 2.1k sent, 120 received. Cost: $0.0065 message, $0.0065 session.\n\
         Applied edit to src/date.rs"
    );
    assert_eq!(text(4), "/run cargo test leap_day");
    assert_eq!(
        text(8),
        "La fonction `parse_date` rejette le 29 février : elle ne connaît pas les années \
         bissextiles."
    );
    assert!(s.messages[..6].iter().all(|m| m.timestamp == Some(RUN1)));
    assert!(s.messages[6..].iter().all(|m| m.timestamp == Some(RUN2)));
    // The prompt's lines stay apart in the adapter's title (the store joins them after
    // redacting: memtrail_adapters::title_text).
    assert_eq!(
        s.meta.title.as_deref(),
        Some("Ajoute un test pour parse_date.\nLe test doit couvrir le 29 février — 閏年.")
    );
    assert_eq!(s.meta.model.as_deref(), Some("openai/gpt-4o"));
    assert_eq!(s.meta.agent_version.as_deref(), Some("0.86.2"));
    assert_eq!(
        (s.meta.started_at, s.meta.updated_at),
        (Some(RUN1), Some(RUN2))
    );
    assert_eq!(
        s.meta.project_dir.as_deref(),
        path.parent().unwrap().to_str()
    );
}

/// The log grows (Aider appends a run): read again whole, the messages read before keep their
/// ids and texts but the last, which was still being written (the model's answer ends the
/// first 30 lines: its block ends at line 27; Aider's report follows).
#[test]
fn a_growing_log_keeps_its_ids() {
    let path = fixtures().join("repo/.aider.chat.history.md");
    let bytes = std::fs::read(&path).unwrap();
    let cut: usize = bytes
        .split_inclusive(|b| *b == b'\n')
        .take(30)
        .map(<[u8]>::len)
        .sum();
    let before = read_bytes(&path, &bytes[..cut]);
    let after = read(&path);
    let ids: Vec<&str> = before.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["r1-0", "r1-1", "r1-2", "r1-3"]);
    assert_eq!(before.messages[..], after.messages[..4]);
    assert_eq!(before.stats.lines, 30);
    // The same bytes with CRLF line ends read the same.
    let crlf = String::from_utf8(bytes.clone())
        .unwrap()
        .replace('\n', "\r\n");
    assert_eq!(read_bytes(&path, crlf.as_bytes()).messages, after.messages);
    // An empty log: nothing.
    assert!(read_bytes(&path, b"").messages.is_empty());
}

/// The log Aider 0.86.2 wrote itself (`aider --model openai/gpt-4o --edit-format whole
/// --message "…" hello.py` against a loopback stub answering with a whole `hello.py`).
#[test]
fn the_log_aider_wrote() {
    let s = read(&fixtures().join("real/.aider.chat.history.md"));
    let ids: Vec<(&str, Role)> = s.messages.iter().map(|m| (m.id.as_str(), m.role)).collect();
    assert_eq!(
        ids,
        [
            ("r1-0", Role::System),
            ("r1-1", Role::User),
            ("r1-2", Role::Assistant),
            ("r1-3", Role::System)
        ]
    );
    assert_eq!(
        s.messages[1].text(),
        "Crée hello.py qui affiche bonjour — 日本語"
    );
    assert_eq!(
        s.messages[2].text(),
        "hello.py\n```\nprint(\"bonjour\")\n```"
    );
    assert_eq!(
        s.messages[3].text(),
        "Tokens: 786 sent, 11 received. Cost: $0.0021 message, $0.0021 session.\n\
         Applied edit to hello.py"
    );
    assert_eq!(s.messages[0].text().lines().count(), 13);
    // 2026-12-02 06:16:15.
    assert_eq!(s.messages[0].timestamp, Some(1_796_192_175_000));
    assert_eq!(s.meta.model.as_deref(), Some("openai/gpt-4o"));
}

#[test]
fn identity_and_discovery() {
    let path = fixtures().join("repo/.aider.chat.history.md");
    let a = aider::identify(&path).unwrap();
    assert_eq!(a.agent, Agent::Aider);
    assert!(a.external_id.starts_with("aider-") && a.external_id.len() == 22);
    assert_eq!(a, aider::identify(&path).unwrap(), "stable");
    assert_ne!(
        a.external_id,
        aider::identify(&fixtures().join("real/.aider.chat.history.md"))
            .unwrap()
            .external_id
    );
    assert!(aider::identify(&fixtures().join("repo/README.md")).is_err());

    // A root: the logs below it, not in hidden folders nor deeper than asked.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mk = |rel: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "# aider chat started at 2026-03-01 10:15:00\n").unwrap();
        p
    };
    let a1 = mk("code/app/.aider.chat.history.md");
    let a2 = mk("code/group/lib/.aider.chat.history.md");
    mk("code/.hidden/x/.aider.chat.history.md");
    mk("code/node_modules/x/.aider.chat.history.md");
    mk("code/a/b/c/d/e/.aider.chat.history.md");
    let found = aider::discover_in(&[root.join("code")], aider::ROOT_DEPTH);
    assert_eq!(found.files, [a1.clone(), a2]);

    // A known project: its own log, or its repository's (Aider writes at the git root).
    std::fs::create_dir_all(root.join("code/app/.git")).unwrap();
    std::fs::create_dir_all(root.join("code/app/src/deep")).unwrap();
    let known = [root
        .join("code/app/src/deep")
        .to_string_lossy()
        .into_owned()];
    assert_eq!(
        aider::discover_in_projects(&known).files,
        std::slice::from_ref(&a1)
    );
    assert!(
        aider::discover_in_projects(&["relative/dir".to_string()])
            .files
            .is_empty()
    );

    // memtrail's config names the roots.
    let config = root.join("config.toml");
    std::fs::write(
        &config,
        "exclude = []\n[aider]\nroots = [\"~/code\", \"/abs/root\", \"relative\"]\n",
    )
    .unwrap();
    let (roots, bad) = aider::paths::config_roots(&config, root);
    assert_eq!(roots, [root.join("code"), PathBuf::from("/abs/root")]);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert_eq!(
        aider::paths::config_roots(&root.join("none.toml"), root),
        (Vec::new(), Vec::new())
    );
}
