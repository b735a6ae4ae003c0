//! The search evaluation (issue 14): needle messages written as Claude Code sessions into a
//! corpus HOME (so that `memtrail import` stores them with the generated corpus), and recall@10
//! of lexical, semantic and hybrid search for queries that seek them.
//!
//! The needles come from `bench/eval/needles.jsonl`, one JSON object a line:
//! `{"id", "lang", "role": "user"|"assistant", "text", "paraphrase": [queries whose words differ
//! from the text], "exact": "a query with the text's own words"}`. Needle `i` (0-based, file
//! order) is session `00000000-0000-4000-a000-<i as 12 digits>` in project `/work/eval-needles`:
//! a prompt, or (for an assistant needle) a fixed short prompt and the answer.
//!
//! The generated corpus cannot serve as targets: its prose is drawn word by word from a Zipf
//! vocabulary (no message has a meaning a paraphrase could seek), and its only real sentences
//! (ten foreign-language prompts) repeat thousands of times, so no single message is "the" one.

use serde_json::{Value, json};
use std::path::Path;

/// One needle of the eval set.
#[derive(Debug, Clone)]
pub struct Needle {
    pub id: String,
    pub lang: String,
    pub role: String,
    pub text: String,
    pub paraphrase: Vec<String>,
    pub exact: String,
}

/// Reads the eval set.
///
/// Errors: a line that is not a needle (its line number in the message).
pub fn read_needles(text: &str) -> anyhow::Result<Vec<Needle>> {
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: Value = serde_json::from_str(line)
            .map_err(|e| anyhow::anyhow!("needles line {}: {e}", i + 1))?;
        let s = |k: &str| -> anyhow::Result<String> {
            v[k].as_str()
                .map(str::to_string)
                .ok_or_else(|| anyhow::anyhow!("needles line {}: no string {k:?}", i + 1))
        };
        let paraphrase = v["paraphrase"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        out.push(Needle {
            id: s("id")?,
            lang: s("lang")?,
            role: s("role")?,
            text: s("text")?,
            paraphrase,
            exact: s("exact")?,
        });
    }
    Ok(out)
}

/// Needle `i`'s session id.
pub fn needle_session(i: usize) -> String {
    format!("00000000-0000-4000-a000-{i:012}")
}

/// The fixed prompt before an assistant needle.
pub const NEEDLE_PROMPT: &str = "Go on.";

/// Writes each needle as a Claude Code session under `home/.claude/projects/-work-eval-needles/`.
///
/// Errors: I/O errors.
pub fn write_needles(home: &Path, needles: &[Needle]) -> std::io::Result<()> {
    let dir = home.join(".claude/projects/-work-eval-needles");
    std::fs::create_dir_all(&dir)?;
    for (i, n) in needles.iter().enumerate() {
        let sid = needle_session(i);
        // One day apart from 2026-01-01, oldest first; each line a second later.
        let t0 = 1_767_225_600_000i64 + i as i64 * 86_400_000;
        let line = |k: usize, kind: &str, message: Value| {
            json!({"parentUuid": if k == 0 { Value::Null } else { json!(format!("{sid}-{}", k - 1)) },
                "isSidechain": false, "userType": "external", "cwd": "/work/eval-needles",
                "sessionId": sid, "version": "2.1.49", "gitBranch": "main", "type": kind,
                "uuid": format!("{sid}-{k}"), "timestamp": crate::rfc3339(t0 + k as i64 * 1000),
                "message": message})
            .to_string()
        };
        let mut lines = Vec::new();
        if n.role == "user" {
            lines.push(line(0, "user", json!({"role": "user", "content": n.text})));
        } else {
            lines.push(line(
                0,
                "user",
                json!({"role": "user", "content": NEEDLE_PROMPT}),
            ));
            lines.push(line(
                1,
                "assistant",
                json!({"model": "claude-opus-4-6", "id": format!("msg_eval{i}"),
                "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": n.text}], "stop_reason": "end_turn"}),
            ));
        }
        std::fs::write(dir.join(format!("{sid}.jsonl")), lines.join("\n") + "\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eval_set_is_complete() {
        let n = read_needles(include_str!("../eval/needles.jsonl")).unwrap();
        let paraphrases: usize = n.iter().map(|x| x.paraphrase.len()).sum();
        assert!(paraphrases >= 150, "{paraphrases} paraphrase queries");
        let mut ids: Vec<&str> = n.iter().map(|x| x.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n.len(), "needle ids are unique");
        for x in &n {
            assert!(x.role == "user" || x.role == "assistant", "{}", x.id);
            assert!(!x.exact.is_empty() && !x.paraphrase.is_empty(), "{}", x.id);
        }
        let mut langs: Vec<&str> = n.iter().map(|x| x.lang.as_str()).collect();
        langs.sort();
        langs.dedup();
        assert_eq!(langs, ["de", "en", "es", "fr", "ja", "ko", "ru", "zh"]);
    }

    #[test]
    fn needle_sessions_are_numbered() {
        assert_eq!(needle_session(7), "00000000-0000-4000-a000-000000000007");
    }
}
