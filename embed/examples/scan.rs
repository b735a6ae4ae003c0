//! Development probe: time `VectorIndex::nearest` over N random 256-d int8 vectors:
//! `cargo run --release -p memtrail-embed --example scan -- 723152`.
fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(723_152, |s| s.parse().unwrap());
    let dim = 256;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let set = memtrail_runtime::store::VectorSet {
        dim,
        ids: (0..n as i64).collect(),
        scales: vec![1.0 / 127.0; n],
        data: (0..n * dim).map(|_| (next() % 255) as i64 as i8).collect(),
    };
    let idx = memtrail_embed::search::VectorIndex::from_set(set);
    let q: Vec<f32> = (0..dim)
        .map(|i| ((i * 7919) % 13) as f32 / 13.0 - 0.5)
        .collect();
    let mut t = Vec::new();
    for _ in 0..20 {
        let s = std::time::Instant::now();
        std::hint::black_box(idx.nearest(&q, 200));
        t.push(s.elapsed().as_secs_f64() * 1e3);
    }
    t.sort_by(f64::total_cmp);
    println!(
        "nearest over {n} x {dim}: median {:.1} ms, min {:.1} ms",
        t[10], t[0]
    );
}
