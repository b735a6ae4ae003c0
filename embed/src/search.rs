//! Search by meaning and hybrid search over a store's vectors: a brute-force scan of the int8
//! vectors ([`VectorIndex`]), and reciprocal rank fusion with the full-text (BM25) ranking.

use crate::model::Encoder;
use memtrail_runtime::query::{Hit, SearchFilter};
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
pub struct VectorIndex {
    set: VectorSet,
}

impl VectorIndex {
    /// Loads the vectors `model` made (empty when the store has another model's or none).
    ///
    /// Errors: store errors.
    pub fn load(store: &Store, model: &dyn Encoder) -> memtrail_runtime::Result<VectorIndex> {
        Ok(VectorIndex {
            set: store.load_vectors(model.id(), model.dim())?,
        })
    }

    /// An index over vectors already in memory.
    pub fn from_set(set: VectorSet) -> VectorIndex {
        VectorIndex { set }
    }

    /// Number of vectors (chunks).
    pub fn len(&self) -> usize {
        self.set.len()
    }

    /// True when there is no vector.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// The `k` messages most similar to the unit vector `q` (cosine; a message's score is its
    /// best chunk's), best first: (message row id, similarity in [-1, 1]). The query is
    /// quantized to int8 like the stored vectors and the dot products summed in integers, on
    /// up to 4 threads for large sets.
    pub fn nearest(&self, q: &[f32], k: usize) -> Vec<(i64, f64)> {
        let dim = self.set.dim;
        let n = self.set.len();
        if dim == 0 || q.len() != dim || k == 0 || n == 0 {
            return Vec::new();
        }
        let (qs, qi) = memtrail_runtime::store::quantize(q);
        let mut scores = vec![0f32; n];
        let threads = if n >= 65_536 {
            std::thread::available_parallelism().map_or(1, |t| t.get().min(4))
        } else {
            1
        };
        let per = n.div_ceil(threads);
        let (data, scales) = (&self.set.data, &self.set.scales);
        let qi = &qi;
        std::thread::scope(|s| {
            for (t, out) in scores.chunks_mut(per).enumerate() {
                let rows = &data[t * per * dim..][..out.len() * dim];
                let scales = &scales[t * per..][..out.len()];
                s.spawn(move || scan(qi, qs, rows, scales, out));
            }
        });
        // Up to 4 chunks per message: the best 4·k chunks hold the best k messages.
        let m = (k * 4).min(n);
        let mut idx: Vec<u32> = (0..n as u32).collect();
        let by_score = |a: &u32, b: &u32| scores[*b as usize].total_cmp(&scores[*a as usize]);
        if m < n {
            idx.select_nth_unstable_by(m, by_score);
            idx.truncate(m);
        }
        idx.sort_by(by_score);
        let mut out: Vec<(i64, f64)> = Vec::with_capacity(k);
        for i in idx {
            let id = self.set.ids[i as usize];
            if out.iter().any(|(x, _)| *x == id) {
                continue;
            }
            out.push((id, scores[i as usize] as f64));
            if out.len() == k {
                break;
            }
        }
        out
    }
}

/// `out[i]` = the dot product of the int8 query `q` (scale `qs`) with row `i` of `rows`
/// (scale `scales[i]`). Compiled twice: with AVX2 when the processor has it (the default target
/// has only SSE2: docs/embeddings.md has both figures), else as is.
fn scan(q: &[i8], qs: f32, rows: &[i8], scales: &[f32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2 (checked just above).
        return unsafe { scan_avx2(q, qs, rows, scales, out) };
    }
    scan_plain(q, qs, rows, scales, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn scan_avx2(q: &[i8], qs: f32, rows: &[i8], scales: &[f32], out: &mut [f32]) {
    scan_plain(q, qs, rows, scales, out)
}

#[inline(always)]
fn scan_plain(q: &[i8], qs: f32, rows: &[i8], scales: &[f32], out: &mut [f32]) {
    for ((o, row), s) in out.iter_mut().zip(rows.chunks_exact(q.len())).zip(scales) {
        *o = dot_i8(q, row) as f32 * s * qs;
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

/// Search by meaning: the messages whose vectors are nearest the query's, filtered by `f`
/// (candidates are taken 20 × `f.limit` deep before filtering, at least 200), best first.
///
/// Errors: an unknown session or machine in `f`; store errors.
pub fn semantic(
    store: &Store,
    model: &dyn Encoder,
    index: &VectorIndex,
    query: &str,
    f: &SearchFilter,
) -> memtrail_runtime::Result<Vec<Hit>> {
    let q = model.encode_query(query);
    let depth = (f.limit.max(1) * 20).max(200);
    let ranked = index.nearest(&q, depth);
    memtrail_runtime::store::hits_for_messages(store, &ranked, f)
}

/// A hit's identity across the two lists (agent, session, position).
fn key(h: &Hit) -> (String, String, i64) {
    (h.agent.clone(), h.session_id.clone(), h.message_index)
}

/// Reciprocal rank fusion of ranked lists: each hit scores the sum over the lists of
/// `1 / (RRF_K + rank)` (1-based); ties keep the order of first appearance. The hit kept is the
/// first list's copy (its snippet has the matched words marked). At most `limit` hits.
pub fn fuse(lists: &[Vec<Hit>], limit: usize) -> Vec<Hit> {
    let mut score: HashMap<(String, String, i64), f64> = HashMap::new();
    let mut order: Vec<Hit> = Vec::new();
    for list in lists {
        for (r, h) in list.iter().enumerate() {
            let k = key(h);
            let e = score.entry(k).or_insert_with(|| {
                order.push(h.clone());
                0.0
            });
            *e += 1.0 / (RRF_K + (r + 1) as f64);
        }
    }
    for h in &mut order {
        h.score = score[&key(h)];
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
    let deep = SearchFilter {
        limit: FUSION_CANDIDATES.max(f.limit),
        ..f.clone()
    };
    let lexical = match store.search(query, &deep) {
        Ok(h) => h,
        Err(memtrail_runtime::Error::Invalid(_)) => Vec::new(),
        Err(e) => return Err(e),
    };
    let sem = semantic(store, model, index, query, &deep)?;
    Ok(fuse(&[lexical, sem], f.limit))
}

/// Embeds the store's backlog with `model`, `batch` messages per write transaction, until none
/// waits or `deadline` passes; `progress(done)` after each batch. Returns how many messages
/// were taken off the backlog.
///
/// Errors: store errors ([`memtrail_runtime::Error::Busy`] when the write lock cannot be had).
pub fn embed_backlog(
    store: &Store,
    model: &dyn Encoder,
    batch: usize,
    deadline: Option<std::time::Instant>,
    progress: &mut dyn FnMut(usize),
) -> memtrail_runtime::Result<usize> {
    let mut done = 0;
    loop {
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Ok(done);
        }
        let n = store.embed_batch(model.id(), model.dim(), batch, &mut |t| {
            model.encode_chunks(t)
        })?;
        if n == 0 {
            return Ok(done);
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
        }
    }

    #[test]
    fn rrf_sums_reciprocal_ranks() {
        // a: rank 1 in list 1 → 1/61; b: rank 2 in list 1 and rank 1 in list 2 → 1/62 + 1/61;
        // c: rank 2 in list 2 → 1/62.
        let fused = fuse(
            &[
                vec![hit("a", 0), hit("b", 0)],
                vec![hit("b", 0), hit("c", 0)],
            ],
            10,
        );
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
        assert_eq!(fuse(&[vec![hit("a", 0), hit("a", 1)]], 1).len(), 1);
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
        let idx = VectorIndex { set };
        let got = idx.nearest(&[1.0, 0.0], 3);
        let ids: Vec<i64> = got.iter().map(|x| x.0).collect();
        // 10 scores 1.0 (its best chunk), 12 scores 89/127, 11 scores 0.
        assert_eq!(ids, vec![10, 12, 11]);
        assert!((got[1].1 - 89.0 / 127.0).abs() < 1e-6);
    }
}
