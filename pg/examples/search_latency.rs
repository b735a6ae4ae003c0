//! Search latency of a PostgreSQL store: `cargo run --release -p memtrail-pg --example
//! search_latency -- URL [RUNS] QUERY...` prints, for each query, the hits found and the
//! median and worst wall time (ms) of `PgReader::search` (limit 20, no filter) over RUNS runs
//! (default 20) after one warm-up run. Figures only, no assertions (docs/postgres.md).

use memtrail_pg::PgReader;
use memtrail_runtime::query::SearchFilter;
use memtrail_runtime::read::ReadStore;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or("usage: search_latency URL [RUNS] QUERY...")?;
    let mut rest: Vec<String> = args.collect();
    let runs = match rest.first().and_then(|r| r.parse::<usize>().ok()) {
        Some(n) => {
            rest.remove(0);
            n.max(1)
        }
        None => 20,
    };
    let reader = PgReader::connect(&url)?;
    let filter = SearchFilter {
        limit: 20,
        ..SearchFilter::default()
    };
    for q in &rest {
        let hits = reader.search(q, &filter)?.len();
        let mut ms: Vec<f64> = (0..runs)
            .map(|_| {
                let t = Instant::now();
                let _ = reader.search(q, &filter);
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        ms.sort_by(f64::total_cmp);
        println!(
            "{q:?}: {hits} hits, median {:.1} ms, worst {:.1} ms ({runs} runs)",
            ms[ms.len() / 2],
            ms[ms.len() - 1]
        );
    }
    Ok(())
}
