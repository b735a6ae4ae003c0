//! Benchmark harness for the encoder: `cargo run --release -p memtrail-embed --example speed --
//! MODEL_DIR TEXTS_FILE [BATCH] [THREADS] [MAX_TOKENS]` runs all-MiniLM-L6-v2 over the texts of
//! TEXTS_FILE (one a line), sorted by token count and batched, and prints texts/s, tokens/s and
//! the encoder's GFLOP/s (the linear layers' 2·params FLOPs per token; attention not counted).
use std::time::Instant;

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let dir = std::path::Path::new(&a[0]);
    let batch: usize = a.get(2).map_or(16, |s| s.parse().unwrap());
    let threads: usize = a.get(3).map_or(1, |s| s.parse().unwrap());
    let max_tokens: usize = a.get(4).map_or(254, |s| s.parse().unwrap());
    let memtrail_embed::Transformer { bert, vocab } =
        memtrail_embed::Transformer::load(dir).unwrap();
    let text = std::fs::read_to_string(&a[1]).unwrap();
    let mut seqs: Vec<Vec<u32>> = text
        .lines()
        .map(|t| {
            let mut ids = vec![vocab.cls];
            ids.extend(vocab.encode(t, max_tokens));
            ids.push(vocab.sep);
            ids
        })
        .collect();
    seqs.sort_by_key(|s| s.len());
    let tokens: usize = seqs.iter().map(|s| s.len()).sum();
    let t = Instant::now();
    let groups: Vec<&[Vec<u32>]> = seqs.chunks(batch).collect();
    std::thread::scope(|s| {
        for part in groups.chunks(groups.len().div_ceil(threads).max(1)) {
            let bert = &bert;
            s.spawn(move || {
                for g in part {
                    let refs: Vec<&[u32]> = g.iter().map(|s| s.as_slice()).collect();
                    std::hint::black_box(bert.pooled_batch(&refs));
                }
            });
        }
    });
    let secs = t.elapsed().as_secs_f64();
    let per_token = 2.0 * 6.0 * (4.0 * 384.0 * 384.0 + 2.0 * 384.0 * 1536.0);
    println!(
        "{} texts, {} tokens (mean {:.1}) in {:.2} s: {:.1} texts/s, {:.0} tokens/s, {:.1} GFLOP/s",
        seqs.len(),
        tokens,
        tokens as f64 / seqs.len() as f64,
        secs,
        seqs.len() as f64 / secs,
        tokens as f64 / secs,
        tokens as f64 * per_token / secs / 1e9
    );
}
