//! Static-model variants for the search eval (issue 14, `docs/embeddings.md`): built in memory
//! from the cached raw per-token matrix, so that each can be measured without a new install.
//!
//! - weighting of the token rows: `zipf` (`ln(1 + id)`, model v1), `none`, `rank:K`
//!   (`id / (id + K)`, SIF's `a / (a + p)` with `p ∝ 1/id`), `sif:A` (`A / (A + p(token))`,
//!   `p` counted on a sample of texts), `zipfsif:A` (the product of the two);
//! - removal of the common components (`pcr`: the first principal axes of the sample's text
//!   vectors, taken out of every row: Arora, Liang and Ma, ICLR 2017);
//! - the query through the transformer (`query_mix < 1`): its mean-pooled raw vector centred
//!   and projected like the token rows, mixed with the static query vector.

use memtrail_embed::bert::Bert;
use memtrail_embed::model::{Encoder, Pca, jacobi_eigen, normalize};
use memtrail_embed::tokenizer::WordPiece;
use memtrail_embed::{StaticModel, model};
use std::sync::Mutex;

/// What to build.
#[derive(Debug, Clone)]
pub struct Options {
    pub dim: usize,
    pub weight: String,
    /// Common components removed.
    pub pcr: usize,
    /// Weight of the static query vector against the transformer's (1: static only).
    pub query_mix: f32,
    /// Weighting of the query's tokens when it differs from the texts' (`weight`).
    pub query_weight: Option<String>,
}

/// Token counts and a sample of texts (for SIF's `p(w)` and the common components).
#[derive(Default)]
pub struct Sample {
    pub counts: Vec<u64>,
    pub total: u64,
    pub texts: Vec<String>,
    /// Texts counted.
    pub seen: u64,
}

impl Sample {
    /// Counts the tokens of `texts` (every one) and keeps every `keep_every`-th text, at most
    /// `max_texts`.
    pub fn add(&mut self, vocab: &WordPiece, texts: &[&str], keep_every: usize, max_texts: usize) {
        if self.counts.is_empty() {
            self.counts = vec![0; vocab.len()];
        }
        for t in texts {
            let ids = vocab.encode(t, model::CHUNK_TOKENS * model::MAX_CHUNKS);
            for id in &ids {
                self.counts[*id as usize] += 1;
            }
            self.total += ids.len() as u64;
            self.seen += 1;
            if self.seen.is_multiple_of(keep_every.max(1) as u64) && self.texts.len() < max_texts {
                self.texts.push(t.to_string());
            }
        }
    }
}

/// Collects a store's texts through `embed_backlog` (it gives no vector, so that the store
/// records nothing but its progress, which the next model's id resets).
pub struct Collector<'a> {
    pub vocab: &'a WordPiece,
    pub sample: Mutex<Sample>,
    pub keep_every: usize,
    pub max_texts: usize,
}

impl Encoder for Collector<'_> {
    fn id(&self) -> &str {
        "collect@0/1"
    }
    fn dim(&self) -> usize {
        1
    }
    fn encode_query(&self, _: &str) -> Result<Vec<f32>, String> {
        Ok(vec![0.0])
    }
    fn encode_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>, String> {
        self.sample
            .lock()
            .unwrap()
            .add(self.vocab, texts, self.keep_every, self.max_texts);
        Ok(texts.iter().map(|_| Vec::new()).collect())
    }
}

/// Texts from the JSON files under `dir` (every string under a `text`, `content`, `message`,
/// `prompt` or `output` key, 20 characters or more with a space), deduplicated.
pub fn texts_from_json_dir(dir: &std::path::Path) -> Vec<String> {
    fn walk(v: &serde_json::Value, key: &str, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => m.iter().for_each(|(k, x)| walk(x, k, out)),
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, key, out)),
            serde_json::Value::String(s)
                if ["text", "content", "message", "prompt", "output"].contains(&key)
                    && s.chars().count() >= 20
                    && s.contains(' ') =>
            {
                out.push(s.clone())
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(v) => walk(&v, "", &mut out),
                Err(_) => text
                    .lines()
                    .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                    .for_each(|v| walk(&v, "", &mut out)),
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A built variant.
pub struct Variant {
    pub model: StaticModel,
    pub pca: Pca,
    /// Removed unit directions (in the static space).
    pub removed: Vec<Vec<f32>>,
    pub query: Option<(Bert, f32)>,
    /// The rows queries are pooled with, when weighted otherwise than the texts'.
    pub query_model: Option<StaticModel>,
    pub id: String,
}

/// The row weights of `opt.weight`.
pub fn weights(spec: &str, n: usize, sample: &Sample) -> Result<Vec<f32>, String> {
    let (kind, arg) = spec.split_once(':').unwrap_or((spec, ""));
    let num = |d: f64| -> Result<f64, String> {
        if arg.is_empty() {
            Ok(d)
        } else {
            arg.parse()
                .map_err(|_| format!("--weight {spec}: not a number"))
        }
    };
    let p = |i: usize| {
        if sample.total == 0 {
            0.0
        } else {
            sample.counts[i] as f64 / sample.total as f64
        }
    };
    Ok(match kind {
        "zipf" => (0..n).map(|i| (1.0 + i as f64).ln() as f32).collect(),
        "none" => vec![1.0; n],
        "rank" => {
            let k = num(1000.0)?;
            (0..n).map(|i| (i as f64 / (i as f64 + k)) as f32).collect()
        }
        "sif" => {
            let a = num(1e-3)?;
            (0..n).map(|i| (a / (a + p(i))) as f32).collect()
        }
        "zipfsif" => {
            let a = num(1e-3)?;
            (0..n)
                .map(|i| ((1.0 + i as f64).ln() * a / (a + p(i))) as f32)
                .collect()
        }
        other => return Err(format!("unknown weighting {other}")),
    })
}

/// Builds the variant from the raw matrix (`vocab.len() × 384`).
pub fn build(
    raw: &[f32],
    vocab: WordPiece,
    opt: &Options,
    sample: &Sample,
    bert: Option<Bert>,
) -> Result<Variant, String> {
    let h = 384;
    let n = vocab.len();
    let pca = Pca::fit(raw, h, opt.dim);
    let w = weights(&opt.weight, n, sample)?;
    let mut rows = pca.rows(raw, &w);
    let mut qrows = match &opt.query_weight {
        Some(q) => Some(pca.rows(raw, &weights(q, n, sample)?)),
        None => None,
    };
    let dim = pca.dim;
    let mut removed = Vec::new();
    if opt.pcr > 0 {
        // The sample's text vectors (unit, as stored), their uncentred second moment's top axes.
        let m = StaticModel::new(vocab.clone(), dim, rows.clone());
        let mut cov = vec![0f64; dim * dim];
        for t in &sample.texts {
            for v in m.encode_chunks(t) {
                for a in 0..dim {
                    let va = v[a] as f64;
                    for b in a..dim {
                        cov[a * dim + b] += va * v[b] as f64;
                    }
                }
            }
        }
        for a in 0..dim {
            for b in 0..a {
                cov[a * dim + b] = cov[b * dim + a];
            }
        }
        let (vals, vecs) = jacobi_eigen(cov, dim);
        let mut order: Vec<usize> = (0..dim).collect();
        order.sort_by(|&a, &b| vals[b].total_cmp(&vals[a]));
        for &k in order.iter().take(opt.pcr) {
            let u: Vec<f32> = (0..dim).map(|j| vecs[j * dim + k] as f32).collect();
            for r in rows
                .chunks_exact_mut(dim)
                .chain(qrows.iter_mut().flat_map(|q| q.chunks_exact_mut(dim)))
            {
                let d: f32 = r.iter().zip(&u).map(|(a, b)| a * b).sum();
                r.iter_mut().zip(&u).for_each(|(a, b)| *a -= d * b);
            }
            removed.push(u);
        }
    }
    let id = format!(
        "minilm-l6-static@1/{dim}+w={},pcr={},q={},qw={}",
        opt.weight,
        opt.pcr,
        opt.query_mix,
        opt.query_weight.as_deref().unwrap_or("same")
    );
    let query_model = qrows.map(|q| StaticModel::new(vocab.clone(), dim, q));
    let mut model = StaticModel::new(vocab, dim, rows);
    model.id = id.clone();
    let query = if opt.query_mix < 1.0 {
        Some((
            bert.ok_or("a transformer query needs the model's wheel (--from)")?,
            opt.query_mix,
        ))
    } else {
        None
    };
    Ok(Variant {
        model,
        pca,
        removed,
        query,
        query_model,
        id,
    })
}

impl Encoder for Variant {
    fn id(&self) -> &str {
        &self.id
    }
    fn dim(&self) -> usize {
        self.model.dim
    }
    fn encode_query(&self, text: &str) -> Result<Vec<f32>, String> {
        let s = self
            .query_model
            .as_ref()
            .unwrap_or(&self.model)
            .encode_query(text);
        let Some((bert, mix)) = &self.query else {
            return Ok(s);
        };
        let v = &self.model.vocab;
        let mut ids = vec![v.cls];
        ids.extend(v.encode(text, 254));
        ids.push(v.sep);
        let mut t = self.pca.project(&bert.pooled(&ids));
        for u in &self.removed {
            let d: f32 = t.iter().zip(u).map(|(a, b)| a * b).sum();
            t.iter_mut().zip(u).for_each(|(a, b)| *a -= d * b);
        }
        normalize(&mut t);
        let mut q: Vec<f32> = s
            .iter()
            .zip(&t)
            .map(|(a, b)| mix * a + (1.0 - mix) * b)
            .collect();
        normalize(&mut q);
        Ok(q)
    }
    fn encode_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>, String> {
        self.model.encode_batch(texts)
    }
}
