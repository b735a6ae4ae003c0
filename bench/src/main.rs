//! `memtrail-corpus`: writes a deterministic synthetic corpus of agent transcripts (see the
//! library docs), or appends one Claude Code turn to a transcript (for the hook benchmark).
//!
//! ```text
//! memtrail-corpus generate --out DIR [--bytes 100M] [--seed 1] [--session-bytes 96K]
//! memtrail-corpus turn --transcript FILE --session ID [--bytes 20K] [--seed 1]
//! memtrail-corpus pick --out DIR      # prints the largest main Claude transcript and its session id
//! ```
//!
//! Sizes take a `K`, `M` or `G` suffix (powers of 1024).

use anyhow::{Context, Result, bail};
use memtrail_bench::{Options, append_claude_turn, claude_main_transcripts, generate};
use std::path::PathBuf;

fn parse_size(s: &str) -> Result<u64> {
    let t = s.trim().trim_end_matches(['B', 'b']);
    let (num, mul) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: f64 = num.parse().with_context(|| format!("not a size: {s:?}"))?;
    Ok((n * mul as f64) as u64)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        bail!("usage: memtrail-corpus generate|turn|pick [options] (see the source's docs)");
    };
    let mut flags = std::collections::HashMap::new();
    let mut it = args[1..].iter();
    while let Some(k) = it.next() {
        let Some(name) = k.strip_prefix("--") else {
            bail!("unexpected argument {k:?}");
        };
        let v = it.next().with_context(|| format!("{k} needs a value"))?;
        flags.insert(name.to_string(), v.clone());
    }
    let get = |k: &str| flags.get(k).cloned();
    let seed: u64 = get("seed").map(|s| s.parse()).transpose()?.unwrap_or(1);
    match cmd.as_str() {
        "generate" => {
            let out = PathBuf::from(get("out").context("--out DIR is required")?);
            let mut opts = Options {
                seed,
                ..Options::default()
            };
            if let Some(b) = get("bytes") {
                opts.bytes = parse_size(&b)?;
            }
            if let Some(b) = get("session-bytes") {
                opts.session_bytes = parse_size(&b)?;
            }
            let t = std::time::Instant::now();
            let s = generate(&out, &opts)?;
            println!(
                "{} files, {} bytes, {} lines, {} sessions + {} sub-agents in {:.1} s",
                s.files,
                s.bytes,
                s.lines,
                s.sessions,
                s.subagents,
                t.elapsed().as_secs_f64()
            );
            for (a, f, b) in s.per_agent {
                println!("  {a}: {f} files, {b} bytes");
            }
        }
        "turn" => {
            let path = PathBuf::from(get("transcript").context("--transcript FILE is required")?);
            let session = get("session").context("--session ID is required")?;
            let bytes = get("bytes")
                .map(|b| parse_size(&b))
                .transpose()?
                .unwrap_or(20 << 10);
            append_claude_turn(&path, &session, bytes, seed)?;
        }
        "pick" => {
            let out = PathBuf::from(get("out").context("--out DIR is required")?);
            let best = claude_main_transcripts(&out)
                .into_iter()
                .max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
                .context("no Claude transcript in the corpus")?;
            let sid = best
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            println!("{}\t{sid}", best.display());
        }
        other => bail!("unknown command {other:?}"),
    }
    Ok(())
}
