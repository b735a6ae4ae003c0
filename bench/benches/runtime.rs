//! In-process benchmarks (divan): parse, ingest, search, snapshot, on a synthetic corpus from
//! `memtrail_bench::generate` (seed 7). Run: `cargo bench -p memtrail-bench`.
//!
//! - `parse`: the Claude Code line reader over one ~1 MB transcript (no store);
//! - `ingest`: `ingest_file` of that transcript into a fresh store (open, parse, redact, insert,
//!   FTS5 index, cursor, commit);
//! - `search`: `query::search` (limit 20) over a store built from a 20 MB corpus, for a rare,
//!   a mid-frequency and a two-frequent-terms query;
//! - `snapshot`: `snapshot::build` over 10 000 events.

use memtrail_adapters::{Agent, Batch, Source};
use memtrail_runtime::query::{SearchFilter, search};
use memtrail_runtime::store::Store;
use std::path::PathBuf;
use std::sync::OnceLock;

fn main() {
    divan::main();
}

struct Fixture {
    _dir: tempfile::TempDir,
    /// One ~1 MB main Claude transcript.
    transcript: PathBuf,
    /// A store with the whole 20 MB corpus imported.
    db: PathBuf,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let opts = memtrail_bench::Options {
            seed: 7,
            bytes: 20 << 20,
            session_bytes: 1 << 20,
        };
        memtrail_bench::generate(&home, &opts).expect("corpus");
        let transcript = memtrail_bench::claude_main_transcripts(&home)
            .into_iter()
            .max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
            .expect("a Claude transcript");
        let db = dir.path().join("corpus.db");
        let mut store = Store::open(&db).expect("store");
        for p in memtrail_bench::claude_main_transcripts(&home) {
            memtrail_runtime::ingest::ingest_file(&mut store, Agent::Claude, &p, None)
                .expect("ingest");
        }
        Fixture {
            _dir: dir,
            transcript,
            db,
        }
    })
}

#[divan::bench(sample_count = 10)]
fn parse_claude_1mb(b: divan::Bencher) {
    let bytes = std::fs::read(&fixture().transcript).expect("read");
    b.counter(divan::counter::BytesCount::new(bytes.len()))
        .bench(|| {
            let Some(Source::Lines(mut r)) =
                memtrail_adapters::source_for(Agent::Claude, &fixture().transcript)
            else {
                unreachable!("Claude transcripts are line sources")
            };
            let mut out = Batch::default();
            for line in bytes.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
                r.line(line, &mut out);
            }
            r.finish(&mut out);
            divan::black_box(out.records.len())
        });
}

#[divan::bench(sample_count = 5)]
fn ingest_claude_1mb(b: divan::Bencher) {
    let f = fixture();
    let len = std::fs::metadata(&f.transcript).expect("stat").len();
    b.counter(divan::counter::BytesCount::new(len as usize))
        .with_inputs(|| tempfile::tempdir().expect("tempdir"))
        .bench_values(|d| {
            let mut store = Store::open(&d.path().join("m.db")).expect("store");
            let r = memtrail_runtime::ingest::ingest_file(
                &mut store,
                Agent::Claude,
                &f.transcript,
                None,
            )
            .expect("ingest");
            divan::black_box(r.inserted);
            d
        });
}

#[divan::bench(args = ["overflow invoice", "schema migration", "error test", "the file"])]
fn search_20mb(b: divan::Bencher, q: &str) {
    let store = Store::open(&fixture().db).expect("store");
    let filter = SearchFilter {
        limit: 20,
        ..Default::default()
    };
    b.bench_local(|| divan::black_box(search(&store, q, &filter).expect("search").len()));
}

#[divan::bench(sample_count = 20)]
fn snapshot_10k_events(b: divan::Bencher) {
    let input = memtrail_bench::snapshot_input(10_000);
    b.bench(|| {
        divan::black_box(memtrail_runtime::snapshot::build(
            &input,
            memtrail_runtime::snapshot::DEFAULT_BUDGET,
        ))
    });
}
