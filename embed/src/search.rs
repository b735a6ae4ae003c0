//! Search by meaning and hybrid search over a store's vectors: a brute-force scan of the int8
//! vectors ([`VectorIndex`]), and reciprocal rank fusion with the full-text (BM25) ranking.

use crate::model::Encoder;
use crate::sidefile::Cols;
use memtrail_runtime::query::{Hit, Matched, QueryItem, SearchFilter};
use memtrail_runtime::read::ReadStore;
use memtrail_runtime::store::{Store, VectorSet};
use std::collections::HashMap;

/// Reciprocal rank fusion's constant: a hit at 1-based rank `r` in a list scores `1 / (K + r)`
/// (Cormack, Clarke and Büttcher, SIGIR 2009, who found 60 a good default).
pub const RRF_K: f64 = 60.0;

/// How many candidates each list contributes to the fusion (the rest score too little to
/// matter: 1/(60+100) against 1/61 for a first rank).
pub const FUSION_CANDIDATES: usize = 100;

/// The store's vectors, held in memory for brute-force scans (the MCP and web servers keep it;
/// the CLI loads it once per process).
///
/// Large sets are searched in two steps: a Hamming pre-filter over the vectors' sign bits
/// (`dim / 8` bytes a vector: 32 at 256 dimensions, an eighth of the int8 bytes), then the
/// int8 dot product over the [`PREFILTER_DEPTH`]-or-so best of it. Sets under
/// [`EXACT_BELOW`] vectors are scanned exactly.
#[derive(Clone)]
pub struct VectorIndex {
    /// The side file's vectors, when it was usable ([`crate::sidefile`]).
    mapped: Option<std::sync::Arc<crate::sidefile::Mapped>>,
    /// The vectors in memory: all of them, or those newer than the side file.
    set: VectorSet,
    /// Bit `j` of vector `i` of `set` (word `i * words + j / 64`) is set when component `j` is
    /// > 0.
    bits: Vec<u64>,
    words: usize,
}

/// Below this many vectors the int8 scan is exact (no pre-filter).
pub const EXACT_BELOW: usize = 32_768;

/// At least this many pre-filter candidates are scored in int8 (more when more hits are asked:
/// 4 per chunk wanted).
pub const PREFILTER_DEPTH: usize = 16_384;

impl VectorIndex {
    /// Loads the vectors `model` made (empty when the store has another model's or none), all
    /// from SQLite.
    ///
    /// Errors: store errors.
    pub fn load(store: &Store, model: &dyn Encoder) -> memtrail_runtime::Result<VectorIndex> {
        Ok(Self::from_set(store.load_vectors(model.id(), model.dim())?))
    }

    /// The vectors `model` made: the side file mapped when it is usable, and the vectors newer
    /// than it read from SQLite; else all of them from SQLite. Also returns how many vectors
    /// are newer than the side file (`None` when it was not usable), for
    /// [`crate::sidefile::maintain`].
    ///
    /// Errors: store errors.
    pub fn open(
        store: &Store,
        model: &dyn Encoder,
    ) -> memtrail_runtime::Result<(VectorIndex, Option<usize>)> {
        let done = store
            .embed_progress()?
            .filter(|(m, _)| m == model.id())
            .map(|(_, d)| d);
        let mapped = match (store.location().sqlite_path(), done) {
            (Some(db), Some(done)) => {
                crate::sidefile::Mapped::open(db, model.id(), model.dim(), done)
            }
            _ => None,
        };
        let Some(mapped) = mapped else {
            return Ok((Self::load(store, model)?, None));
        };
        let tail = store.load_vectors_after(model.id(), model.dim(), mapped.through)?;
        let newer = tail.len();
        let mut idx = Self::from_set(tail);
        idx.mapped = Some(std::sync::Arc::new(mapped));
        Ok((idx, Some(newer)))
    }

    /// An index over vectors already in memory.
    pub fn from_set(set: VectorSet) -> VectorIndex {
        let words = set.dim.div_ceil(64);
        let mut idx = VectorIndex {
            mapped: None,
            bits: Vec::new(),
            words,
            set: VectorSet {
                dim: set.dim,
                ..VectorSet::default()
            },
        };
        idx.extend(set);
        idx
    }

    /// Appends vectors (of messages newer than those held: see [`crate::service::Meaning`]).
    pub fn extend(&mut self, more: VectorSet) {
        if self.set.dim > 0 {
            for row in more.data.chunks_exact(self.set.dim) {
                self.bits.extend(sign_bits(row, self.words));
            }
        }
        self.set.extend(more);
    }

    /// Number of vectors (chunks).
    pub fn len(&self) -> usize {
        self.mapped.as_ref().map_or(0, |m| m.n) + self.set.len()
    }

    /// True when there is no vector.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the side file is in use.
    pub fn is_mapped(&self) -> bool {
        self.mapped.is_some()
    }

    /// The columns: the side file's, then those in memory.
    fn parts(&self) -> Vec<Cols<'_>> {
        let mut parts = Vec::with_capacity(2);
        if let Some(m) = &self.mapped {
            parts.push(m.cols());
        }
        parts.push(Cols {
            ids: &self.set.ids,
            scales: &self.set.scales,
            bits: &self.bits,
            data: &self.set.data,
        });
        parts
    }

    /// The `k` messages most similar to the unit vector `q` (cosine; a message's score is its
    /// best chunk's), best first: (message row id, similarity in [-1, 1]). The query is
    /// quantized to int8 like the stored vectors and the dot products summed in integers; a
    /// set of [`EXACT_BELOW`] vectors or more is pre-filtered by Hamming distance of the sign
    /// bits first (see the type's doc).
    pub fn nearest(&self, q: &[f32], k: usize) -> Vec<(i64, f64)> {
        let dim = self.set.dim;
        let n = self.len();
        if dim == 0 || q.len() != dim || k == 0 || n == 0 {
            return Vec::new();
        }
        let parts = self.parts();
        let (qs, qi) = memtrail_runtime::store::quantize(q);
        // Up to 4 chunks per message: the best 4·k chunks hold the best k messages.
        let m = (k * 4).min(n);
        let candidates: Vec<u32> = if n < EXACT_BELOW {
            (0..n as u32).collect()
        } else {
            let qbits = sign_bits(&qi, self.words);
            let mut ham = vec![0u16; n];
            let mut at = 0;
            for p in &parts {
                hamming(&qbits, p.bits, &mut ham[at..at + p.ids.len()]);
                at += p.ids.len();
            }
            closest(&ham, (m * 4).max(PREFILTER_DEPTH).min(n), dim)
        };
        // Candidates are in index order: each part's are a run, scored with its columns.
        let mut scores = vec![0f32; candidates.len()];
        let (mut from, mut base) = (0usize, 0u32);
        for p in &parts {
            let end = base + p.ids.len() as u32;
            let upto = from + candidates[from..].partition_point(|&c| c < end);
            let local: Vec<u32> = candidates[from..upto].iter().map(|c| c - base).collect();
            score_rows(&qi, qs, &local, p.data, p.scales, &mut scores[from..upto]);
            (from, base) = (upto, end);
        }
        let id_of = |g: u32| {
            let mut g = g as usize;
            for p in &parts {
                if g < p.ids.len() {
                    return p.ids[g];
                }
                g -= p.ids.len();
            }
            unreachable!("a candidate past the vectors")
        };
        let mut order: Vec<u32> = (0..candidates.len() as u32).collect();
        let by_score = |a: &u32, b: &u32| scores[*b as usize].total_cmp(&scores[*a as usize]);
        if m < order.len() {
            order.select_nth_unstable_by(m, by_score);
            order.truncate(m);
        }
        order.sort_by(by_score);
        let mut out: Vec<(i64, f64)> = Vec::with_capacity(k);
        for o in order {
            let id = id_of(candidates[o as usize]);
            if out.iter().any(|(x, _)| *x == id) {
                continue;
            }
            out.push((id, scores[o as usize] as f64));
            if out.len() == k {
                break;
            }
        }
        out
    }
}

/// The sign bits of an int8 vector: bit `j` set when `row[j] > 0`, in `words` u64.
pub(crate) fn sign_bits(row: &[i8], words: usize) -> Vec<u64> {
    let mut w = vec![0u64; words];
    for (j, &v) in row.iter().enumerate() {
        if v > 0 {
            w[j / 64] |= 1 << (j % 64);
        }
    }
    w
}

/// `out[i]` = the Hamming distance between `q` and vector `i` of `bits` (`q.len()` words each).
/// Compiled twice: with the POPCNT instruction when the processor has it, else as is.
fn hamming(q: &[u64], bits: &[u64], out: &mut [u16]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("popcnt") {
        // SAFETY: the processor has POPCNT (checked just above).
        return unsafe { hamming_popcnt(q, bits, out) };
    }
    hamming_plain(q, bits, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn hamming_popcnt(q: &[u64], bits: &[u64], out: &mut [u16]) {
    hamming_plain(q, bits, out)
}

#[inline(always)]
fn hamming_plain(q: &[u64], bits: &[u64], out: &mut [u16]) {
    for (o, row) in out.iter_mut().zip(bits.chunks_exact(q.len())) {
        *o = q
            .iter()
            .zip(row)
            .map(|(a, b)| (a ^ b).count_ones() as u16)
            .sum();
    }
}

/// The indices of the `c` smallest distances in `ham` (values 0..=`dim`), in index order;
/// ties at the cut are taken in index order. Linear: a histogram finds the cut.
fn closest(ham: &[u16], c: usize, dim: usize) -> Vec<u32> {
    let mut hist = vec![0usize; dim + 2];
    for &h in ham {
        hist[(h as usize).min(dim + 1)] += 1;
    }
    let (mut cut, mut below) = (0usize, 0usize);
    while cut < hist.len() && below + hist[cut] < c {
        below += hist[cut];
        cut += 1;
    }
    // Everything under `cut`, and `c - below` of those at `cut`.
    let mut at_cut = c - below;
    let mut out = Vec::with_capacity(c);
    for (i, &h) in ham.iter().enumerate() {
        let h = (h as usize).min(dim + 1);
        if h < cut {
            out.push(i as u32);
        } else if h == cut && at_cut > 0 {
            at_cut -= 1;
            out.push(i as u32);
        }
    }
    out
}

/// `out[i]` = the dot product of the int8 query `q` (scale `qs`) with vector `rows[i]` of
/// `data` (scale `scales[rows[i]]`). Compiled twice: with AVX2 when the processor has it (the
/// default target has only SSE2: docs/embeddings.md has both figures), else as is.
fn score_rows(q: &[i8], qs: f32, rows: &[u32], data: &[i8], scales: &[f32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2 (checked just above).
        return unsafe { score_rows_avx2(q, qs, rows, data, scales, out) };
    }
    score_rows_plain(q, qs, rows, data, scales, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn score_rows_avx2(q: &[i8], qs: f32, rows: &[u32], data: &[i8], scales: &[f32], out: &mut [f32]) {
    score_rows_plain(q, qs, rows, data, scales, out)
}

#[inline(always)]
fn score_rows_plain(q: &[i8], qs: f32, rows: &[u32], data: &[i8], scales: &[f32], out: &mut [f32]) {
    let dim = q.len();
    for (o, &r) in out.iter_mut().zip(rows) {
        let r = r as usize;
        *o = dot_i8(q, &data[r * dim..][..dim]) as f32 * scales[r] * qs;
    }
}

/// Σ a[i]·b[i] in integers (|sum| ≤ 127² × len: no overflow below 133,000 dimensions); the
/// products widened to i16 first, which the compiler turns into multiply-add instructions.
#[inline(always)]
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (*x as i16 * *y as i16) as i32)
        .sum()
}

/// The query's vector (of its text redacted, [`memtrail_runtime::redact::redact`]) and the
/// terms whose matches are left out ([`memtrail_runtime::query::meaning_query`]).
///
/// Errors: [`memtrail_runtime::Error::Invalid`] when the query holds no word with a letter or
/// digit but its exclusions (`???`, `-draft`: every message would be "nearest", as the
/// full-text search refuses it too), or too many exclusions
/// ([`memtrail_runtime::query::meaning_query`]); the model's.
fn query_vector(
    model: &dyn Encoder,
    query: &str,
) -> memtrail_runtime::Result<(Vec<f32>, Vec<QueryItem>)> {
    let (text, excluded) = memtrail_runtime::query::meaning_query(query)?;
    if !text.chars().any(char::is_alphanumeric) {
        return Err(memtrail_runtime::Error::Invalid(
            memtrail_runtime::query::nothing_to_search(query),
        ));
    }
    // Redacted as the stored texts were: a secret typed into a query is not sent to an
    // `[embed]` endpoint, and the vector is of the text the store would hold.
    let v = model
        .encode_query(&memtrail_runtime::redact::redact(&text))
        .map_err(memtrail_runtime::Error::Invalid)?;
    Ok((v, excluded))
}

/// Search by meaning: the messages whose vectors are nearest the query's, filtered by `f`
/// and without those matching a word the query excludes (`-word`, `NOT word`), best first
/// (candidates are taken 20 × `f.limit` deep before filtering, at least 200).
///
/// Errors: as [`query_vector`]; an unknown session or machine in `f`; store errors.
pub fn semantic(
    store: &Store,
    model: &dyn Encoder,
    index: &VectorIndex,
    query: &str,
    f: &SearchFilter,
) -> memtrail_runtime::Result<Vec<Hit>> {
    let (q, excluded) = query_vector(model, query)?;
    if !excluded.is_empty() {
        // The exclusions are checked in the full-text index: the messages the hooks queued
        // go in first (as the full-text search does; a queued one left by a busy store is
        // left out of the hits, hits_for_messages).
        let _ = store.catch_up_for_search();
    }
    let depth = (f.limit.max(1) * 20).max(200);
    let ranked = index.nearest(&q, depth);
    memtrail_runtime::store::hits_for_messages(store, &ranked, &excluded, f).map(by_meaning)
}

/// `hits` marked as found by meaning ([`Matched::Meaning`]).
fn by_meaning(mut hits: Vec<Hit>) -> Vec<Hit> {
    for h in &mut hits {
        h.matched = Some(Matched::Meaning);
    }
    hits
}

/// A hit's identity across the two lists: the message it is a copy of ([`Hit::copy`]: the
/// copies of a forked or resumed session are one message, whichever copy each list kept),
/// else its session and position.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Copy(u64),
    At(String, String, i64),
}

fn key(h: &Hit) -> Key {
    match h.copy {
        Some(c) => Key::Copy(c),
        None => Key::At(h.agent.clone(), h.session_id.clone(), h.message_index),
    }
}

/// Reciprocal rank fusion of the full-text ranking (`lexical`) and the ranking by meaning
/// (`semantic`): each hit scores the sum over the lists of `1 / (RRF_K + rank)` (1-based); ties
/// keep the order of first appearance. The hit kept is the full-text list's copy (its snippet
/// has the matched words marked), with [`Hit::matched`] telling which lists held it. At most
/// `limit` hits.
pub fn fuse(lexical: &[Hit], semantic: &[Hit], limit: usize) -> Vec<Hit> {
    let mut score: HashMap<Key, (f64, u8)> = HashMap::new();
    let mut order: Vec<Hit> = Vec::new();
    for (list, bit) in [(lexical, 1u8), (semantic, 2u8)] {
        for (r, h) in list.iter().enumerate() {
            let k = key(h);
            let e = score.entry(k).or_insert_with(|| {
                order.push(h.clone());
                (0.0, 0)
            });
            e.0 += 1.0 / (RRF_K + (r + 1) as f64);
            e.1 |= bit;
        }
    }
    for h in &mut order {
        let (s, lists) = score[&key(h)];
        h.score = s;
        h.matched = Some(match lists {
            1 => Matched::Words,
            2 => Matched::Meaning,
            _ => Matched::Both,
        });
    }
    // A stable sort keeps first appearance among equal scores.
    order.sort_by(|a, b| b.score.total_cmp(&a.score));
    order.truncate(limit);
    order
}

/// Hybrid search: the full-text (BM25) ranking and the search by meaning, each
/// [`FUSION_CANDIDATES`] deep, fused by [`fuse`]. A query with no searchable word for the
/// full-text search is searched by meaning alone.
///
/// Errors: as [`semantic`] and the full-text search.
pub fn hybrid(
    store: &Store,
    model: &dyn Encoder,
    index: &VectorIndex,
    query: &str,
    f: &SearchFilter,
) -> memtrail_runtime::Result<Vec<Hit>> {
    fused(
        f,
        |deep| store.search(query, deep),
        |deep| semantic(store, model, index, query, deep),
    )
}

/// The hybrid rule both stores share: `lexical` and `semantic` each asked for
/// [`FUSION_CANDIDATES`] hits (or `f.limit`, if more) under `f`, fused by [`fuse`] to
/// `f.limit`; a query with no searchable word for the full-text search (its
/// [`memtrail_runtime::Error::Invalid`]) is ranked by meaning alone.
fn fused(
    f: &SearchFilter,
    lexical: impl FnOnce(&SearchFilter) -> memtrail_runtime::Result<Vec<Hit>>,
    semantic: impl FnOnce(&SearchFilter) -> memtrail_runtime::Result<Vec<Hit>>,
) -> memtrail_runtime::Result<Vec<Hit>> {
    let deep = SearchFilter {
        limit: FUSION_CANDIDATES.max(f.limit),
        ..f.clone()
    };
    let lexical = match lexical(&deep) {
        Ok(h) => h,
        Err(memtrail_runtime::Error::Invalid(_)) => Vec::new(),
        Err(e) => return Err(e),
    };
    let sem = semantic(&deep)?;
    Ok(fuse(&lexical, &sem, f.limit))
}

/// Search by meaning on a store that ranks its vectors itself (a PostgreSQL store with
/// pgvector, [`ReadStore::nearest`]): the query encoded by `model`, the store's vectors of
/// `model` (its id, `name@version/dim`) ranked by inner product, filtered by `f`, without
/// the messages matching a word the query excludes.
///
/// Errors: as [`query_vector`]; [`memtrail_runtime::Error::Invalid`] when the store holds no
/// vectors table; the store's.
pub fn semantic_in(
    store: &dyn ReadStore,
    model: &dyn Encoder,
    query: &str,
    f: &SearchFilter,
) -> memtrail_runtime::Result<Vec<Hit>> {
    let (q, excluded) = query_vector(model, query)?;
    store.nearest(model.id(), &q, &excluded, f).map(by_meaning)
}

/// [`hybrid`] on a store that ranks its vectors itself: its full-text search and
/// [`semantic_in`], each [`FUSION_CANDIDATES`] deep, fused by [`fuse`] (the same rule as the
/// SQLite store's hybrid search).
///
/// Errors: as [`semantic_in`] and the full-text search.
pub fn hybrid_in(
    store: &dyn ReadStore,
    model: &dyn Encoder,
    query: &str,
    f: &SearchFilter,
) -> memtrail_runtime::Result<Vec<Hit>> {
    fused(
        f,
        |deep| store.search(query, deep),
        |deep| semantic_in(store, model, query, deep),
    )
}

/// Embeds the store's backlog with `model`, `batch` messages at a time (read without a lock,
/// encoded, then written in one short write transaction: see [`Store::embed_take`]), until
/// none waits or `deadline` passes; `progress(done)` after each batch. Returns how many
/// messages were taken off the backlog.
///
/// Errors: the model's (an endpoint that failed: what was written before stays); store errors
/// ([`memtrail_runtime::Error::Busy`] when the write lock cannot be had).
pub fn embed_backlog(
    store: &Store,
    model: &dyn Encoder,
    batch: usize,
    deadline: Option<std::time::Instant>,
    progress: &mut dyn FnMut(usize),
) -> memtrail_runtime::Result<usize> {
    let mut done = 0;
    // Another process moving the backlog at the same time makes a write give 0: take again,
    // a few times.
    let mut raced = 0;
    loop {
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Ok(done);
        }
        let work = store.embed_take(model.id(), batch)?;
        if work.is_empty() {
            return Ok(done);
        }
        let texts: Vec<&str> = work.texts().collect();
        let vectors = model
            .encode_batch(&texts)
            .map_err(memtrail_runtime::Error::Invalid)?;
        let n = store.embed_write(work, model.dim(), &vectors)?;
        if n == 0 {
            raced += 1;
            if raced > 3 {
                return Ok(done);
            }
            continue;
        }
        done += n;
        progress(done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(session: &str, i: i64) -> Hit {
        Hit {
            session_id: session.into(),
            agent: "claude".into(),
            machine: "m".into(),
            title: None,
            project: None,
            message_id: format!("{session}-{i}"),
            message_index: i,
            role: "user".into(),
            kind: "text".into(),
            timestamp: None,
            snippet: String::new(),
            score: 0.0,
            matched: None,
            copy: None,
        }
    }

    /// Two lists that kept different copies of one message (a forked session's): one hit,
    /// scored by both lists; a hit without a copy identity stays apart.
    #[test]
    fn copies_kept_by_different_lists_fuse_as_one_message() {
        let copy = |session: &str, i: i64, c: u64| Hit {
            matched: None,
            copy: Some(c),
            ..hit(session, i)
        };
        let lexical = vec![copy("fork", 2, 7), hit("s3", 0)];
        let semantic = vec![copy("orig", 2, 7), copy("orig", 0, 8)];
        let fused = fuse(&lexical, &semantic, 10);
        let got: Vec<(&str, i64)> = fused
            .iter()
            .map(|h| (h.session_id.as_str(), h.message_index))
            .collect();
        // The first list's copy is the one shown.
        assert_eq!(got, [("fork", 2), ("s3", 0), ("orig", 0)]);
        assert!((fused[0].score - 2.0 / 61.0).abs() < 1e-12);
        let how: Vec<_> = fused.iter().map(|h| h.matched).collect();
        assert_eq!(
            how,
            [
                Some(Matched::Both),
                Some(Matched::Words),
                Some(Matched::Meaning)
            ]
        );
    }

    /// An encoder that keeps the texts it is given.
    struct Recorder(std::sync::Mutex<Vec<String>>);

    impl Encoder for Recorder {
        fn id(&self) -> &str {
            "recorder@1/2"
        }
        fn dim(&self) -> usize {
            2
        }
        fn encode_query(&self, text: &str) -> Result<Vec<f32>, String> {
            self.0.lock().unwrap().push(text.to_string());
            Ok(vec![1.0, 0.0])
        }
        fn encode_batch(&self, _: &[&str]) -> Result<Vec<Vec<Vec<f32>>>, String> {
            Ok(Vec::new())
        }
    }

    /// Any model (local or an endpoint) is given the query redacted, as the stored texts were;
    /// its exclusions are kept apart.
    #[test]
    fn the_query_is_redacted_before_it_is_encoded() {
        let model = Recorder(Default::default());
        let token = format!("ghp_{}", "Zq7Xk2Lm9Pw4Rt6Yv8Bn3Cd5Fg1Hj0Ks2QaW");
        let (v, excluded) = query_vector(&model, &format!("why did {token} fail -draft")).unwrap();
        assert_eq!(v, [1.0, 0.0]);
        assert_eq!(excluded.len(), 1);
        assert_eq!(
            *model.0.lock().unwrap(),
            ["why did [redacted:github_token] fail"]
        );
    }

    #[test]
    fn rrf_sums_reciprocal_ranks() {
        // a: rank 1 in list 1 → 1/61; b: rank 2 in list 1 and rank 1 in list 2 → 1/62 + 1/61;
        // c: rank 2 in list 2 → 1/62.
        let fused = fuse(&[hit("a", 0), hit("b", 0)], &[hit("b", 0), hit("c", 0)], 10);
        let got: Vec<(&str, f64)> = fused
            .iter()
            .map(|h| (h.session_id.as_str(), h.score))
            .collect();
        assert_eq!(
            got,
            vec![
                ("b", 1.0 / 62.0 + 1.0 / 61.0),
                ("a", 1.0 / 61.0),
                ("c", 1.0 / 62.0)
            ]
        );
        assert_eq!(fuse(&[hit("a", 0), hit("a", 1)], &[], 1).len(), 1);
    }

    #[test]
    fn closest_takes_the_smallest_distances_in_index_order() {
        // Distances 3,1,2,1,0: the 3 closest are 4 (0) and both 1s (indices 1 and 3).
        assert_eq!(closest(&[3, 1, 2, 1, 0], 3, 3), vec![1, 3, 4]);
        // A tie at the cut is taken in index order: only the first 1.
        assert_eq!(closest(&[3, 1, 2, 1, 0], 2, 3), vec![1, 4]);
        assert_eq!(closest(&[2, 2], 5, 3), vec![0, 1]);
    }

    #[test]
    fn sign_bits_and_hamming() {
        let row: Vec<i8> = (0..70).map(|j| if j % 3 == 0 { 5 } else { -1 }).collect();
        let b = sign_bits(&row, 2);
        // Components 0, 3, …, 69 are positive: 24 of them, 22 in the first word.
        assert_eq!(b[0].count_ones() + b[1].count_ones(), 24);
        assert_eq!(b[0] & 0b1001, 0b1001);
        let mut out = [0u16; 2];
        hamming(&b, &[b.clone(), vec![0, 0]].concat(), &mut out);
        assert_eq!(out, [0, 24]);
    }

    #[test]
    fn the_prefilter_finds_a_planted_vector_among_many() {
        // 40,000 pseudo-random 16-d vectors (over EXACT_BELOW, so the pre-filter runs); the
        // query is vector 31,337 itself: it must come first, with similarity ≈ 1.
        let (n, dim) = (40_000usize, 16usize);
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut data = Vec::with_capacity(n * dim);
        for _ in 0..n * dim {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            data.push((((x >> 33) % 255) as i16 - 127) as i8);
        }
        // Each row a unit vector (scale × bytes), as the store keeps them.
        let scales = data
            .chunks_exact(dim)
            .map(|r| 1.0 / r.iter().map(|&v| (v as f32).powi(2)).sum::<f32>().sqrt())
            .collect();
        let set = VectorSet {
            dim,
            ids: (0..n as i64).map(|i| i + 1).collect(),
            scales,
            data,
        };
        let target = 31_337usize;
        let row: Vec<f32> = set.data[target * dim..][..dim]
            .iter()
            .map(|&v| v as f32)
            .collect();
        let norm = row.iter().map(|v| v * v).sum::<f32>().sqrt();
        let q: Vec<f32> = row.iter().map(|v| v / norm).collect();
        let idx = VectorIndex::from_set(set);
        assert!(idx.len() >= EXACT_BELOW);
        let got = idx.nearest(&q, 3);
        assert_eq!(got[0].0, target as i64 + 1);
        assert!((got[0].1 - 1.0).abs() < 0.02, "{got:?}");
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn nearest_ranks_by_scaled_dot_product() {
        let set = VectorSet {
            dim: 2,
            ids: vec![10, 11, 12, 10],
            scales: vec![1.0 / 127.0; 4],
            // (1,0), (0,1), (0.7,0.7), and a second chunk of 10: (-1, 0).
            data: vec![127, 0, 0, 127, 89, 89, -127, 0],
        };
        let idx = VectorIndex::from_set(set);
        let got = idx.nearest(&[1.0, 0.0], 3);
        let ids: Vec<i64> = got.iter().map(|x| x.0).collect();
        // 10 scores 1.0 (its best chunk), 12 scores 89/127, 11 scores 0.
        assert_eq!(ids, vec![10, 12, 11]);
        assert!((got[1].1 - 89.0 / 127.0).abs() < 1e-6);
    }
}
