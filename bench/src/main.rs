//! `memtrail-corpus`: writes a deterministic synthetic corpus of agent transcripts (see the
//! library docs), or appends one Claude Code turn to a transcript (for the hook benchmark).
//!
//! ```text
//! memtrail-corpus generate --out DIR [--bytes 100M] [--seed 1] [--session-bytes 96K]
//! memtrail-corpus turn --transcript FILE --session ID [--bytes 20K] [--seed 1]
//! memtrail-corpus pick --out DIR      # prints the largest main Claude transcript and its session id
//! memtrail-corpus search --db DB --query "two words" [--runs 50] [--limit 20]   # in-process search, ms
//!     [--agent A] [--project DIR] [--role R] [--since-ms T] [--until-ms T]  # its filters
//! memtrail-corpus needles --out HOME [--eval bench/eval/needles.jsonl]  # the eval's sessions
//! memtrail-corpus eval --db DB --model DIR [--eval FILE] [--encoder static|transformer|variant] [--embed 1]
//!     [--from WHEELDIR --raw RAW.f32 --weight W --pcr N --query-mix X --query-weight W --sample store|DIR]
//!     # recall@10 lexical/semantic/hybrid (--embed: embed the backlog with the encoder first)
//! memtrail-corpus eval --store postgres://… --model DIR [--eval FILE]
//!     # the same against a PostgreSQL store the eval's store was synced to (pgvector)
//! memtrail-corpus distill --from WHEELDIR --out DIR [--dim 256] [--zipf 1|0] [--raw CACHE]
//! memtrail-corpus mcp --bin MEMTRAIL --db DB --query Q [--runs 50] # MCP search round trip, ms
//! memtrail-corpus mcp-flood --bin MEMTRAIL --db DB --session ID [--requests 2000]
//!     # N get_session requests written at once: first reply, all replies, server peak RSS
//! memtrail-corpus snapshot [--events 10000] [--runs 50]            # snapshot::build, ms
//! memtrail-corpus snapshot-store --db DB [--events 10000] [--runs 50] [--tail K] [--full 1] [--advance 1] # the same, loaded from a store
//! ```
//!
//! The timing commands print one line: `<name> median_ms=<m> p99_ms=<p> runs=<n>`.
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

/// `eval`: recall@10 of lexical, semantic and hybrid search over the needles (see
/// `memtrail_bench::eval`), by query kind and language, and the query times.
///
/// With `pg` (a `postgres://` URL), the same queries run against that PostgreSQL store (what
/// `memtrail sync` pushed from the eval's SQLite store): full text in PostgreSQL, the vectors
/// ranked by pgvector (`memtrail_embed::search::semantic_in` / `hybrid_in`), as
/// `memtrail --store URL search` does.
fn eval_cmd(
    db: &std::path::Path,
    pg: Option<&str>,
    file: &str,
    model: &dyn memtrail_embed::Encoder,
    embed: bool,
) -> Result<()> {
    use memtrail_bench::eval::read_needles;
    use memtrail_runtime::read::ReadStore;
    let needles = read_needles(&std::fs::read_to_string(file)?)?;
    if let Some(url) = pg {
        let reader = memtrail_pg::PgReader::connect(url)?;
        println!(
            "PostgreSQL store {}: vectors of {} {}",
            memtrail_pg::mask_url(url),
            model.id(),
            if reader.has_vectors_of(model.id())? {
                "present"
            } else {
                "absent"
            }
        );
        let f = memtrail_runtime::query::SearchFilter {
            limit: 10,
            ..Default::default()
        };
        return eval_queries(&needles, &mut |m, q| {
            Ok(match m {
                0 => match reader.search(q, &f) {
                    Ok(h) => h,
                    Err(memtrail_runtime::Error::Invalid(_)) => Vec::new(),
                    Err(e) => return Err(e.into()),
                },
                1 => memtrail_embed::search::semantic_in(&reader, model, q, &f)?,
                _ => memtrail_embed::search::hybrid_in(&reader, model, q, &f)?,
            })
        });
    }
    use memtrail_embed::search::{VectorIndex, hybrid, semantic};
    let store = memtrail_runtime::Store::open(db)?;
    if embed {
        let t = std::time::Instant::now();
        let n = memtrail_embed::search::embed_backlog(&store, model, 64, None, &mut |_| {})?;
        let s = t.elapsed().as_secs_f64();
        println!(
            "embedded {n} messages in {s:.1} s ({:.0} messages/s)",
            n as f64 / s
        );
    }
    let t = std::time::Instant::now();
    let index = VectorIndex::load(&store, model)?;
    let load_index = t.elapsed();
    println!(
        "model {}: {} vectors loaded in {:.0} ms; backlog {}",
        model.id(),
        index.len(),
        load_index.as_secs_f64() * 1e3,
        store.embed_backlog(model.id())?
    );
    let f = memtrail_runtime::query::SearchFilter {
        limit: 10,
        ..Default::default()
    };
    eval_queries(&needles, &mut |m, q| {
        Ok(match m {
            0 => match store.search(q, &f) {
                Ok(h) => h,
                Err(memtrail_runtime::Error::Invalid(_)) => Vec::new(),
                Err(e) => return Err(e.into()),
            },
            1 => semantic(&store, model, &index, q, &f)?,
            _ => hybrid(&store, model, &index, q, &f)?,
        })
    })
}

/// Runs every needle's queries by each mode (`search(mode, query)`: 0 lexical, 1 semantic, 2
/// hybrid; 10 hits) and prints recall@10 by query kind and language, then the query times.
fn eval_queries(
    needles: &[memtrail_bench::eval::Needle],
    search: &mut dyn FnMut(usize, &str) -> Result<Vec<memtrail_runtime::query::Hit>>,
) -> Result<()> {
    use memtrail_bench::eval::needle_session;
    // (kind, lang) -> [found by lexical, semantic, hybrid], queries
    let mut tally: std::collections::BTreeMap<(String, String), ([usize; 3], usize)> =
        Default::default();
    let mut times: [Vec<f64>; 3] = Default::default();
    for (i, n) in needles.iter().enumerate() {
        let sid = needle_session(i);
        // The first paraphrase of each needle is the dev half (parameters are chosen on it),
        // the second the test half.
        let queries = n
            .paraphrase
            .iter()
            .enumerate()
            .map(|(k, q)| {
                (
                    if k == 0 {
                        "paraphrase-dev"
                    } else {
                        "paraphrase-test"
                    },
                    q,
                )
            })
            .chain(std::iter::once(("exact", &n.exact)));
        for (kind, q) in queries {
            let mut found = [0usize; 3];
            for (m, slot) in found.iter_mut().enumerate() {
                let t = std::time::Instant::now();
                let hits = search(m, q)?;
                times[m].push(t.elapsed().as_secs_f64() * 1e3);
                *slot = hits
                    .iter()
                    .take(10)
                    .any(|h| h.session_id == sid && h.role == n.role)
                    as usize;
            }
            let mut keys = vec![
                (kind.to_string(), "all".to_string()),
                (kind.to_string(), n.lang.clone()),
            ];
            if kind.starts_with("paraphrase") {
                keys.push(("paraphrase".to_string(), "all".to_string()));
                keys.push(("paraphrase".to_string(), n.lang.clone()));
            }
            for key in keys {
                let e = tally.entry(key).or_default();
                for (sum, x) in e.0.iter_mut().zip(found) {
                    *sum += x;
                }
                e.1 += 1;
            }
        }
    }
    for ((kind, lang), (found, n)) in &tally {
        println!(
            "recall@10 kind={kind} lang={lang} queries={n} lexical={:.3} semantic={:.3} hybrid={:.3}",
            found[0] as f64 / *n as f64,
            found[1] as f64 / *n as f64,
            found[2] as f64 / *n as f64
        );
    }
    for (name, t) in ["lexical", "semantic", "hybrid"]
        .iter()
        .zip(times.iter_mut())
    {
        t.sort_by(f64::total_cmp);
        let p = |q: f64| t[((t.len() - 1) as f64 * q).round() as usize];
        println!(
            "query_ms mode={name} median={:.2} p99={:.2} runs={}",
            p(0.5),
            p(0.99),
            t.len()
        );
    }
    Ok(())
}

/// `eval --encoder variant`: a static-model variant built in memory (see
/// `memtrail_bench::variant`) from `--raw CACHE` (the raw per-token matrix `distill --raw`
/// writes) and `--from WHEELDIR`; `--weight zipf|none|rank:K|sif:A|zipfsif:A`, `--pcr N`,
/// `--query-mix X` (1: static query), `--sample store|DIR` (the texts SIF counts and the
/// common components come from: the store's own, or the JSON files under DIR).
fn variant_encoder(
    get: &dyn Fn(&str) -> Option<String>,
    db: &std::path::Path,
) -> Result<memtrail_bench::variant::Variant> {
    use memtrail_bench::variant::{Collector, Options, Sample, build, texts_from_json_dir};
    let m = anyhow::Error::msg;
    let from = PathBuf::from(get("from").context("--from WHEELDIR is required")?);
    let raw_path = PathBuf::from(get("raw").context("--raw CACHE is required")?);
    let src = memtrail_embed::install::sources_from_dir(&from).map_err(m)?;
    let vocab = memtrail_embed::tokenizer::WordPiece::from_vocab_txt(&src.vocab_txt).map_err(m)?;
    let raw: Vec<f32> = std::fs::read(&raw_path)?
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let opt = Options {
        dim: get("dim").map(|s| s.parse()).transpose()?.unwrap_or(256),
        weight: get("weight").unwrap_or_else(|| "zipf".into()),
        pcr: get("pcr").map(|s| s.parse()).transpose()?.unwrap_or(0),
        query_mix: get("query-mix")
            .map(|s| s.parse())
            .transpose()?
            .unwrap_or(1.0),
        query_weight: get("query-weight"),
    };
    let t = std::time::Instant::now();
    let sample = match get("sample").as_deref().unwrap_or("store") {
        "store" => {
            let store = memtrail_runtime::Store::open(db)?;
            let c = Collector {
                vocab: &vocab,
                sample: Default::default(),
                keep_every: get("keep-every")
                    .map(|s| s.parse())
                    .transpose()?
                    .unwrap_or(1),
                max_texts: 20_000,
            };
            memtrail_embed::search::embed_backlog(&store, &c, 256, None, &mut |_| {})?;
            c.sample.into_inner().unwrap()
        }
        dir => {
            let mut s = Sample::default();
            let texts = texts_from_json_dir(std::path::Path::new(dir));
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            s.add(&vocab, &refs, 1, usize::MAX);
            s
        }
    };
    println!(
        "sample: {} texts, {} tokens counted, {} kept, {:.1} s",
        sample.seen,
        sample.total,
        sample.texts.len(),
        t.elapsed().as_secs_f64()
    );
    let bert = if opt.query_mix < 1.0 {
        Some(
            memtrail_embed::bert::Bert::from_tensors(
                memtrail_embed::bert::read_safetensors(&src.safetensors).map_err(m)?,
                Default::default(),
            )
            .map_err(m)?,
        )
    } else {
        None
    };
    let t = std::time::Instant::now();
    let v = build(&raw, vocab, &opt, &sample, bert).map_err(m)?;
    println!(
        "variant {} built in {:.1} s",
        v.id,
        t.elapsed().as_secs_f64()
    );
    Ok(v)
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
        "needles" => {
            let out = PathBuf::from(get("out").context("--out HOME is required")?);
            let file = get("eval").unwrap_or_else(|| "bench/eval/needles.jsonl".into());
            let needles = memtrail_bench::eval::read_needles(&std::fs::read_to_string(&file)?)?;
            memtrail_bench::eval::write_needles(&out, &needles)?;
            println!("{} needle sessions written", needles.len());
        }
        "eval" => {
            let db = PathBuf::from(
                get("db")
                    .or(get("store").map(|_| String::new()))
                    .context("--db DB (or --store URL) is required")?,
            );
            let file = get("eval").unwrap_or_else(|| "bench/eval/needles.jsonl".into());
            let models = PathBuf::from(get("model").context("--model DIR is required")?);
            let t = std::time::Instant::now();
            let enc: Box<dyn memtrail_embed::Encoder> =
                match get("encoder").as_deref().unwrap_or("static") {
                    "static" => Box::new(
                        memtrail_embed::StaticModel::load(&models).map_err(anyhow::Error::msg)?,
                    ),
                    "transformer" => Box::new(
                        memtrail_embed::Transformer::load(&models).map_err(anyhow::Error::msg)?,
                    ),
                    "variant" => Box::new(variant_encoder(&get, &db)?),
                    other => bail!("--encoder static|transformer|variant, not {other}"),
                };
            println!(
                "encoder {} loaded in {:.0} ms",
                enc.id(),
                t.elapsed().as_secs_f64() * 1e3
            );
            let embed = get("embed").is_some() || get("encoder").as_deref() == Some("variant");
            eval_cmd(&db, get("store").as_deref(), &file, enc.as_ref(), embed)?;
        }
        "distill" => {
            // memtrail-corpus distill --from WHEELDIR --out DIR [--dim 256] [--zipf 1|0]
            //   [--raw CACHE.f32]: a static model variant (the raw per-token vectors cached).
            let from = PathBuf::from(get("from").context("--from DIR is required")?);
            let out = PathBuf::from(get("out").context("--out DIR is required")?);
            let dim: usize = get("dim").map(|s| s.parse()).transpose()?.unwrap_or(256);
            let zipf = get("zipf").as_deref() != Some("0");
            let src =
                memtrail_embed::install::sources_from_dir(&from).map_err(anyhow::Error::msg)?;
            let vocab = memtrail_embed::tokenizer::WordPiece::from_vocab_txt(&src.vocab_txt)
                .map_err(anyhow::Error::msg)?;
            let h = 384;
            let raw_path = get("raw").map(PathBuf::from);
            let raw: Vec<f32> = match raw_path.as_ref().filter(|p| p.is_file()) {
                Some(p) => std::fs::read(p)?
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
                None => {
                    let bert = memtrail_embed::bert::Bert::from_tensors(
                        memtrail_embed::bert::read_safetensors(&src.safetensors)
                            .map_err(anyhow::Error::msg)?,
                        Default::default(),
                    )
                    .map_err(anyhow::Error::msg)?;
                    let t = std::time::Instant::now();
                    let raw = memtrail_embed::model::distill_raw(&bert, &vocab, 2, &|_, _| {});
                    println!(
                        "distilled {} tokens in {:.1} s",
                        vocab.len(),
                        t.elapsed().as_secs_f64()
                    );
                    if let Some(p) = &raw_path {
                        let bytes: Vec<u8> = raw.iter().flat_map(|v| v.to_le_bytes()).collect();
                        std::fs::write(p, bytes)?;
                    }
                    raw
                }
            };
            let t = std::time::Instant::now();
            let rows = memtrail_embed::model::postprocess_with(&raw, h, dim, zipf);
            let dim = dim.min(h);
            println!(
                "postprocessed to {dim} dims (zipf {zipf}) in {:.1} s",
                t.elapsed().as_secs_f64()
            );
            std::fs::create_dir_all(&out)?;
            let mut m = memtrail_embed::StaticModel::new(vocab, dim, rows);
            if !zipf {
                m.id.push_str("+nozipf");
            }
            m.save(&out, memtrail_embed::install::WHEEL_SHA256)
                .map_err(anyhow::Error::msg)?;
        }
        "search" => {
            let db = PathBuf::from(get("db").context("--db DB is required")?);
            let q = get("query").context("--query is required")?;
            let runs = get("runs").map(|s| s.parse()).transpose()?.unwrap_or(50);
            let store = memtrail_runtime::Store::open(&db)?;
            // Searched as the processes that search many times (the MCP server, the web page)
            // keep their stores.
            store.tune_for_serving();
            // Optional filters, as `memtrail search` takes them (dates in ms since the epoch).
            let ms = |k: &str| get(k).map(|s| s.parse::<i64>()).transpose();
            let f = memtrail_runtime::query::SearchFilter {
                limit: get("limit").map(|s| s.parse()).transpose()?.unwrap_or(20),
                agent: get("agent"),
                project: get("project"),
                role: get("role"),
                since: ms("since-ms")?,
                until: ms("until-ms")?,
                ..Default::default()
            };
            let hits = memtrail_runtime::query::search(&store, &q, &f)?.len();
            let times = timed(runs, || {
                memtrail_runtime::query::search(&store, &q, &f).map(|h| h.len())
            })?;
            report(&format!("search[{q}] hits={hits}"), &times);
        }
        "mcp" => {
            let bin = get("bin").context("--bin MEMTRAIL is required")?;
            let db = get("db").context("--db DB is required")?;
            let q = get("query").context("--query is required")?;
            let runs = get("runs").map(|s| s.parse()).transpose()?.unwrap_or(50);
            let times = mcp_round_trips(&bin, &db, &q, runs)?;
            report(&format!("mcp_search[{q}]"), &times);
        }
        "mcp-flood" => {
            let bin = get("bin").context("--bin MEMTRAIL is required")?;
            let db = get("db").context("--db DB is required")?;
            let session = get("session").context("--session ID is required")?;
            let n = get("requests")
                .map(|s| s.parse())
                .transpose()?
                .unwrap_or(2000);
            mcp_flood(&bin, &db, &session, n)?;
        }
        "snapshot" => {
            let n = get("events")
                .map(|s| s.parse())
                .transpose()?
                .unwrap_or(10_000);
            let runs = get("runs").map(|s| s.parse()).transpose()?.unwrap_or(50);
            let input = memtrail_bench::snapshot_input(n);
            let times = timed(runs, || {
                Ok::<_, anyhow::Error>(
                    memtrail_runtime::snapshot::build(
                        &input,
                        memtrail_runtime::snapshot::DEFAULT_BUDGET,
                    )
                    .text
                    .len(),
                )
            })?;
            report(&format!("snapshot[{n} events]"), &times);
        }
        "snapshot-store" => {
            // The whole path a hook takes at compaction: the session's events read from SQLite,
            // correlated, and the snapshot built (`resume::build_snapshot`).
            let db = PathBuf::from(get("db").context("--db DB is required")?);
            let n = get("events")
                .map(|s| s.parse())
                .transpose()?
                .unwrap_or(10_000);
            let runs = get("runs").map(|s| s.parse()).transpose()?.unwrap_or(50);
            // `--tail K`: the session's running state saved (as a hook at compaction saves it)
            // when it had `n - K` events, then K more appended (0: saved with all `n`).
            // `--full 1`: without the running state (`resume::build_snapshot_full`).
            let tail: usize = get("tail").map(|s| s.parse()).transpose()?.unwrap_or(0);
            let full = get("full").is_some();
            // `--advance 1`: time instead a hook's update of the state over those K events
            // (`Writer::advance_snapshot_state`), in a write rolled back after each run.
            let advance = get("advance").is_some();
            let budget = memtrail_runtime::snapshot::DEFAULT_BUDGET;
            let mut store = memtrail_runtime::Store::open(&db)?;
            let rowid = memtrail_bench::store_snapshot_session(&mut store, n - tail.min(n))?;
            store.write(|w| w.snapshot(rowid, budget))?;
            let rowid = memtrail_bench::store_snapshot_session(&mut store, n)?;
            let events = memtrail_runtime::resume::session_events(&store, rowid)?.len();
            if advance {
                let mut times = Vec::with_capacity(runs);
                for _ in 0..runs.max(1) {
                    let mut took = None;
                    let r = store.write(|w| {
                        let t = std::time::Instant::now();
                        let saved = w.advance_snapshot_state(rowid, 1)?;
                        took = Some((t.elapsed().as_secs_f64() * 1e3, saved));
                        Err::<(), _>(memtrail_runtime::Error::Invalid("rolled back".into()))
                    });
                    anyhow::ensure!(r.is_err(), "the write was not rolled back");
                    let (ms, saved) = took.context("the advance did not run")?;
                    anyhow::ensure!(saved || tail < 2, "nothing was saved");
                    times.push(ms);
                }
                times.sort_by(|a, b| a.total_cmp(b));
                report(
                    &format!("advance_state[{events} events, tail {tail}]"),
                    &times,
                );
                return Ok(());
            }
            let times = timed(runs, || {
                if full {
                    memtrail_runtime::resume::build_snapshot_full(&store, rowid, budget)
                } else {
                    memtrail_runtime::resume::build_snapshot(&store, rowid, budget)
                }
                .map(|s| s.text.len())
            })?;
            let what = if full { ", full" } else { "" };
            report(
                &format!("snapshot_store[{events} events, tail {tail}{what}]"),
                &times,
            );
        }
        other => bail!("unknown command {other:?}"),
    }
    Ok(())
}

/// Run `f` `runs` times; the durations in ms, sorted.
fn timed<T, E: Into<anyhow::Error>>(
    runs: usize,
    mut f: impl FnMut() -> std::result::Result<T, E>,
) -> Result<Vec<f64>> {
    let mut v = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let t = std::time::Instant::now();
        std::hint::black_box(f().map_err(Into::into)?);
        v.push(t.elapsed().as_secs_f64() * 1e3);
    }
    v.sort_by(|a, b| a.total_cmp(b));
    Ok(v)
}

/// `name median_ms=… p99_ms=… runs=…` for sorted durations (p99: nearest rank).
fn report(name: &str, sorted: &[f64]) {
    let median = sorted[sorted.len() / 2];
    let p99 = sorted[((sorted.len() as f64 * 0.99).ceil() as usize).clamp(1, sorted.len()) - 1];
    println!(
        "{name} median_ms={median:.3} p99_ms={p99:.3} runs={}",
        sorted.len()
    );
}

/// Start `memtrail mcp` on `db`, initialize, then time `runs` `tools/call search` requests, each
/// from writing the request to reading its whole response line (MCP stdio: one JSON-RPC
/// message per line).
fn mcp_round_trips(bin: &str, db: &str, q: &str, runs: usize) -> Result<Vec<f64>> {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let mut child = Command::new(bin)
        .args(["--db", db, "mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {bin} mcp"))?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().context("stdout")?);
    let mut line = String::new();
    let mut call = |req: &serde_json::Value, want_reply: bool| -> Result<String> {
        writeln!(stdin, "{req}")?;
        stdin.flush()?;
        line.clear();
        if want_reply {
            loop {
                line.clear();
                if stdout.read_line(&mut line)? == 0 {
                    bail!("memtrail mcp closed its output");
                }
                // Skip server-initiated notifications; the reply carries our id.
                if line.contains("\"id\"") {
                    break;
                }
            }
        }
        Ok(line.clone())
    };
    call(
        &serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "memtrail-bench", "version": "0"}}}),
        true,
    )?;
    call(
        &serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        false,
    )?;
    let mut id = 1;
    // The first call warms the server (opens the store); it is checked, not timed.
    let first = call(
        &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": q, "limit": 20}}}),
        true,
    )?;
    let times = timed(runs, || {
        id += 1;
        call(
            &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": q, "limit": 20}}}),
            true,
        )
    })?;
    let _ = child.kill();
    let _ = child.wait();
    if first.contains("\"isError\":true") || first.contains("\"error\"") {
        bail!("the MCP search failed: {first}");
    }
    Ok(times)
}

/// Start `memtrail mcp` on `db`, initialize, then write `n` `tools/call get_session` requests
/// for `session` at once (a thread of its own writes them; the replies are read as they come)
/// and print one line: `mcp_flood requests=<n> first_reply_ms=<from the start of writing to the
/// first reply> all_replies_ms=<to the last> peak_rss_kb=<the server's VmHWM> reply_bytes_max=<>`.
fn mcp_flood(bin: &str, db: &str, session: &str, n: u64) -> Result<()> {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    use std::time::Instant;
    let mut child = Command::new(bin)
        .args(["--db", db, "mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {bin} mcp"))?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().context("stdout")?);
    writeln!(
        stdin,
        "{}",
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "memtrail-bench", "version": "0"}}})
    )?;
    let mut line = String::new();
    stdout.read_line(&mut line)?;
    writeln!(
        stdin,
        "{}",
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )?;
    let mut all = Vec::new();
    for id in 1..=n {
        let req = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "get_session", "arguments": {"session_id": session}}});
        writeln!(all, "{req}")?;
    }
    let start = Instant::now();
    let writer = std::thread::spawn(move || {
        let r = stdin.write_all(&all).and_then(|()| stdin.flush());
        (stdin, r)
    });
    let (mut first, mut max_len) = (None, 0);
    for _ in 0..n {
        line.clear();
        if stdout.read_line(&mut line)? == 0 {
            bail!("memtrail mcp closed its output");
        }
        first.get_or_insert_with(|| start.elapsed());
        max_len = max_len.max(line.trim_end().len());
    }
    let all_time = start.elapsed();
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id()))?;
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .map(|v| v.trim().to_string())
        .unwrap_or_default();
    let (stdin, r) = writer
        .join()
        .map_err(|_| anyhow::anyhow!("writer panicked"))?;
    r?;
    drop(stdin);
    child.wait()?;
    println!(
        "mcp_flood requests={n} first_reply_ms={:.1} all_replies_ms={:.1} peak_rss={hwm} reply_bytes_max={max_len}",
        first.unwrap_or_default().as_secs_f64() * 1e3,
        all_time.as_secs_f64() * 1e3,
    );
    Ok(())
}
