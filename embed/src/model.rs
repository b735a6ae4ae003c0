//! The static model: one vector per vocabulary token, distilled from all-MiniLM-L6-v2 (each
//! token run alone through the encoder, `[CLS] token [SEP]`, mean-pooled), centred and reduced
//! by PCA, and weighted by the token's rank (model2vec's Zipf weighting: `ln(1 + rank)`, since
//! BERT's vocabulary lists frequent pieces first). A text's vector is the mean of its tokens'
//! vectors, L2-normalized.
//!
//! On disk (a directory under `~/.local/share/memtrail/models/`): `vocab.txt` (BERT's, one token
//! a line), `vectors.f32` (`tokens × dim` little-endian f32, row-major) and `model.json`
//! (`{"name", "version", "dim", "tokens", "source_sha256"}`, and `"variant"` for a build other than
//! the default, which then ends the model's id: `name@version/dim+variant`).

use crate::bert::{Bert, dot};
use crate::tokenizer::WordPiece;
use std::path::Path;

/// The model's name, recorded with every vector.
pub const MODEL_NAME: &str = "minilm-l6-static";
/// Bumped whenever distillation changes what a vector means (a store re-embeds on change).
pub const MODEL_VERSION: u32 = 1;
/// Dimension after PCA.
pub const DEFAULT_DIM: usize = 256;
/// Tokens per chunk: a text is split into windows of this many tokens, one vector each.
pub const CHUNK_TOKENS: usize = 256;
/// At most this many chunks (vectors) per text; the rest of a long text is not embedded.
pub const MAX_CHUNKS: usize = 4;

/// A loaded static model.
pub struct StaticModel {
    pub vocab: WordPiece,
    pub dim: usize,
    /// `vocab.len() × dim`, row-major.
    rows: Rows,
    /// `name@version/dim`, as recorded in the store.
    pub id: String,
}

/// A model's rows: in memory, or `vectors.f32` mapped read-only (a process that encodes one
/// query reads a few rows of its 31 MB instead of copying them all: most of a CLI search by
/// meaning's time was those pages, docs/embeddings.md "Loading").
enum Rows {
    Owned(Vec<f32>),
    Mapped(memmap2::Mmap),
}

impl Rows {
    fn as_slice(&self) -> &[f32] {
        match self {
            Rows::Owned(v) => v,
            Rows::Mapped(m) => {
                // SAFETY: `map_rows` checked that the mapping is 4-byte aligned and a whole
                // number of f32, and that this is a little-endian machine (the file's order);
                // f32 accepts any bit pattern. The file is replaced only by renaming its folder
                // (`models install`): a mapping keeps the old inode.
                unsafe { std::slice::from_raw_parts(m.as_ptr().cast::<f32>(), m.len() / 4) }
            }
        }
    }
}

/// `file` mapped as f32 rows, when this machine reads the file's little-endian f32 as they
/// are and the mapping is aligned for them; `None` otherwise (the caller reads and converts).
fn map_rows(file: &std::fs::File) -> Option<memmap2::Mmap> {
    if cfg!(target_endian = "big") {
        return None;
    }
    // SAFETY: see `Rows::as_slice`.
    let m = unsafe { memmap2::Mmap::map(file) }.ok()?;
    (m.len().is_multiple_of(4) && (m.as_ptr() as usize).is_multiple_of(std::mem::align_of::<f32>()))
        .then_some(m)
}

impl StaticModel {
    /// A model from its parts (`rows.len() == vocab.len() * dim`).
    pub fn new(vocab: WordPiece, dim: usize, rows: Vec<f32>) -> StaticModel {
        assert_eq!(
            rows.len(),
            vocab.len() * dim,
            "rows do not match vocab × dim"
        );
        StaticModel {
            vocab,
            dim,
            rows: Rows::Owned(rows),
            id: format!("{MODEL_NAME}@{MODEL_VERSION}/{dim}"),
        }
    }

    /// Loads the model from its directory.
    ///
    /// Errors: a message naming the file that is missing, unreadable or of the wrong size.
    pub fn load(dir: &Path) -> Result<StaticModel, String> {
        // Regular files only (a FIFO would block a search for good), of a sane size: a model's
        // vectors are 31 MB, its vocabulary 0.2 MB.
        let read = |f: &str| crate::files::read_regular(&dir.join(f), 1 << 30);
        let meta: serde_json::Value = serde_json::from_slice(&read("model.json")?)
            .map_err(|e| format!("{}: {e}", dir.join("model.json").display()))?;
        let dim = meta["dim"].as_u64().unwrap_or(0) as usize;
        let vocab_txt = String::from_utf8(read("vocab.txt")?)
            .map_err(|_| format!("{}: not UTF-8", dir.join("vocab.txt").display()))?;
        let vocab = WordPiece::from_vocab_txt(&vocab_txt)?;
        let path = dir.join("vectors.f32");
        if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            return Err(format!("{}: not a regular file", path.display()));
        }
        let file = std::fs::File::open(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let len = file
            .metadata()
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?
            .len();
        // Checked: a `dim` written to overflow the product would pass a wrapped comparison.
        let expected = vocab.len().checked_mul(dim).and_then(|n| n.checked_mul(4));
        if dim == 0 || expected.map(|n| n as u64) != Some(len) {
            return Err(format!(
                "{}: {len} bytes, expected {} tokens × {dim} dims × 4",
                path.display(),
                vocab.len()
            ));
        }
        let rows = match map_rows(&file) {
            Some(m) if m.len() as u64 == len => Rows::Mapped(m),
            _ => {
                let raw = read("vectors.f32")?;
                if raw.len() as u64 != len {
                    return Err(format!("{}: changed while read", path.display()));
                }
                Rows::Owned(
                    raw.chunks_exact(4)
                        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                        .collect(),
                )
            }
        };
        let mut m = StaticModel {
            vocab,
            dim,
            rows,
            id: String::new(),
        };
        if meta["name"].as_str() != Some(MODEL_NAME)
            || meta["version"].as_u64() != Some(MODEL_VERSION as u64)
        {
            return Err(format!(
                "{}: model {} version {} is not {MODEL_NAME} version {MODEL_VERSION}; run `memtrail models install`",
                dir.display(),
                meta["name"],
                meta["version"]
            ));
        }
        m.id = format!("{MODEL_NAME}@{MODEL_VERSION}/{dim}");
        // A build other than the default (an experiment of `memtrail-corpus distill`) names
        // itself, so that a store does not mix its vectors with the default's.
        if let Some(v) = meta["variant"].as_str().filter(|v| !v.is_empty()) {
            m.id = format!("{}+{v}", m.id);
        }
        Ok(m)
    }

    /// The id (`name@version/dim[+variant]`) of the model installed in `dir`, from its
    /// `model.json` alone (the vectors are not read); `None` when there is none or it is not
    /// this build's model.
    pub fn installed_id(dir: &Path) -> Option<String> {
        let meta: serde_json::Value = serde_json::from_slice(
            &crate::files::read_regular(&dir.join("model.json"), 1 << 16).ok()?,
        )
        .ok()?;
        let dim = meta["dim"].as_u64().filter(|d| *d > 0)?;
        if meta["name"].as_str() != Some(MODEL_NAME)
            || meta["version"].as_u64() != Some(MODEL_VERSION as u64)
        {
            return None;
        }
        Some(match meta["variant"].as_str().filter(|v| !v.is_empty()) {
            Some(v) => format!("{MODEL_NAME}@{MODEL_VERSION}/{dim}+{v}"),
            None => format!("{MODEL_NAME}@{MODEL_VERSION}/{dim}"),
        })
    }

    /// Writes the model's three files into `dir` (which must exist), owner-only.
    ///
    /// Errors: the I/O error, with the file's path.
    pub fn save(&self, dir: &Path, source_sha256: &str) -> Result<(), String> {
        let mut vocab = self.vocab.tokens().join("\n");
        vocab.push('\n');
        let mut bytes = Vec::with_capacity(self.rows().len() * 4);
        for v in self.rows() {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        let mut meta = serde_json::json!({
            "name": MODEL_NAME, "version": MODEL_VERSION, "dim": self.dim,
            "tokens": self.vocab.len(), "source_sha256": source_sha256,
        });
        if let Some(v) = self.id.split_once('+').map(|x| x.1) {
            meta["variant"] = serde_json::json!(v);
        }
        for (f, data) in [
            ("vocab.txt", vocab.into_bytes()),
            ("vectors.f32", bytes),
            ("model.json", meta.to_string().into_bytes()),
        ] {
            crate::files::write_private(&dir.join(f), &data)?;
        }
        Ok(())
    }

    /// All rows (`tokens × dim`, row-major).
    pub fn rows(&self) -> &[f32] {
        self.rows.as_slice()
    }

    /// The vector of one token id.
    pub fn row(&self, id: u32) -> &[f32] {
        &self.rows.as_slice()[id as usize * self.dim..][..self.dim]
    }

    /// The unit vector of the mean of `ids`' rows; all zeros when `ids` is empty.
    pub fn pool(&self, ids: &[u32]) -> Vec<f32> {
        let mut v = vec![0f32; self.dim];
        for &id in ids {
            for (a, b) in v.iter_mut().zip(self.row(id)) {
                *a += b;
            }
        }
        normalize(&mut v);
        v
    }

    /// One unit vector per chunk of [`CHUNK_TOKENS`] tokens of `text` (at most [`MAX_CHUNKS`]);
    /// empty when the text has no token.
    pub fn encode_chunks(&self, text: &str) -> Vec<Vec<f32>> {
        let ids = self.vocab.encode(text, CHUNK_TOKENS * MAX_CHUNKS);
        ids.chunks(CHUNK_TOKENS).map(|c| self.pool(c)).collect()
    }

    /// The unit vector of a query (its first [`CHUNK_TOKENS`] × [`MAX_CHUNKS`] tokens pooled).
    pub fn encode_query(&self, text: &str) -> Vec<f32> {
        let ids = self.vocab.encode(text, CHUNK_TOKENS * MAX_CHUNKS);
        self.pool(&ids)
    }
}

/// Text → unit vectors, for the store and the searches: the static model, an
/// OpenAI-compatible endpoint ([`crate::remote::Remote`]), or the transformer itself
/// ([`Transformer`], used to measure the static model against it).
pub trait Encoder: Sync {
    /// `name@version/dim` (`model@endpoint/dim` for an endpoint), recorded with the vectors.
    fn id(&self) -> &str;
    /// Values per vector.
    fn dim(&self) -> usize;
    /// The query's unit vector.
    ///
    /// Errors: why the endpoint gave none (a local model never fails).
    fn encode_query(&self, text: &str) -> Result<Vec<f32>, String>;
    /// For each text, one unit vector per chunk (none when it has no token).
    ///
    /// Errors: as [`Encoder::encode_query`].
    fn encode_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>, String>;
}

impl Encoder for StaticModel {
    fn id(&self) -> &str {
        &self.id
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn encode_query(&self, text: &str) -> Result<Vec<f32>, String> {
        Ok(StaticModel::encode_query(self, text))
    }
    fn encode_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>, String> {
        Ok(texts.iter().map(|t| self.encode_chunks(t)).collect())
    }
}

/// all-MiniLM-L6-v2 run on every text (mean-pooled, normalized), its first 254 tokens only:
/// the reference the static model is measured against (60–90 texts/s on 2 cores here).
pub struct Transformer {
    pub bert: Bert,
    pub vocab: WordPiece,
}

impl Transformer {
    /// The encoder from a folder holding the wheel, or `model.safetensors` and `vocab.txt`
    /// ([`crate::install::sources_from_dir`]; SHA-256 checked).
    ///
    /// Errors: nothing usable in the folder, a wrong sum, a tensor missing or misshapen.
    pub fn load(dir: &Path) -> Result<Transformer, String> {
        let src = crate::install::sources_from_dir(dir)?;
        Ok(Transformer {
            bert: Bert::from_tensors(
                crate::bert::read_safetensors(&src.safetensors)?,
                Default::default(),
            )?,
            vocab: WordPiece::from_vocab_txt(&src.vocab_txt)?,
        })
    }

    fn ids(&self, text: &str) -> Vec<u32> {
        let mut ids = vec![self.vocab.cls];
        ids.extend(self.vocab.encode(text, 254));
        ids.push(self.vocab.sep);
        ids
    }

    fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = self.bert.pooled(&self.ids(text));
        normalize(&mut v);
        v
    }
}

/// Texts per forward pass when the transformer embeds a batch (sorted by length, so little is
/// padding).
const TRANSFORMER_BATCH: usize = 16;

impl Encoder for Transformer {
    fn id(&self) -> &str {
        "minilm-l6-transformer@1/384"
    }
    fn dim(&self) -> usize {
        self.bert.dim()
    }
    fn encode_query(&self, text: &str) -> Result<Vec<f32>, String> {
        Ok(self.vector(text))
    }
    /// The texts sorted by token count and run [`TRANSFORMER_BATCH`] at a time, on as many
    /// threads as the machine has cores (at most 4).
    fn encode_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>, String> {
        let ids: Vec<Vec<u32>> = texts.iter().map(|t| self.ids(t)).collect();
        // A text with no token is `[CLS] [SEP]`: it gets no vector.
        let mut order: Vec<usize> = (0..texts.len()).filter(|&i| ids[i].len() > 2).collect();
        order.sort_by_key(|&i| ids[i].len());
        let groups: Vec<&[usize]> = order.chunks(TRANSFORMER_BATCH).collect();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        let h = self.bert.dim();
        let mut out: Vec<Vec<Vec<f32>>> = vec![Vec::new(); texts.len()];
        // Each thread takes the next group from a shared counter: long groups cost far more
        // than short ones, so a fixed split would leave one thread idle.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut done: Vec<(usize, Vec<f32>)> = Vec::with_capacity(order.len());
        std::thread::scope(|s| -> Result<(), String> {
            let workers: Vec<_> = (0..threads.min(groups.len()))
                .map(|_| {
                    let (ids, groups, next) = (&ids, &groups, &next);
                    s.spawn(move || {
                        let mut got = Vec::new();
                        loop {
                            let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(g) = groups.get(n) else { break };
                            let seqs: Vec<&[u32]> = g.iter().map(|&i| ids[i].as_slice()).collect();
                            let pooled = self.bert.pooled_batch(&seqs);
                            for (k, &i) in g.iter().enumerate() {
                                let mut v = pooled[k * h..][..h].to_vec();
                                normalize(&mut v);
                                got.push((i, v));
                            }
                        }
                        got
                    })
                })
                .collect();
            // Every thread joined before any error is returned.
            let joined: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
            for j in joined {
                done.extend(j.map_err(|_| "the encoder's thread panicked")?);
            }
            Ok(())
        })?;
        for (i, v) in done {
            out[i] = vec![v];
        }
        Ok(out)
    }
}

/// Scales `v` to unit length (leaves a zero vector as it is).
pub fn normalize(v: &mut [f32]) {
    let n = dot(v, v).sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// Runs every vocabulary token through the encoder (`[CLS] token [SEP]`, mean-pooled), on
/// `threads` threads, calling `progress(done, total)` now and then. Special and `[unused…]`
/// tokens get zero rows. Returns `vocab.len() × bert.dim()` values.
pub fn distill_raw(
    bert: &Bert,
    vocab: &WordPiece,
    threads: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Vec<f32> {
    let h = bert.dim();
    let n = vocab.len().min(bert.vocab_size);
    let mut out = vec![0f32; vocab.len() * h];
    let threads = threads.max(1);
    let per = n.div_ceil(threads);
    let done = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for (t, part) in out[..n * h].chunks_mut(per * h).enumerate() {
            let done = &done;
            s.spawn(move || {
                let first = t * per;
                let count = part.len() / h;
                const BATCH: usize = 64;
                let mut i = 0;
                while i < count {
                    let end = (i + BATCH).min(count);
                    let ids: Vec<u32> = (first + i..first + end).map(|x| x as u32).collect();
                    let seqs: Vec<Vec<u32>> = ids
                        .iter()
                        .map(|&id| vec![vocab.cls, id, vocab.sep])
                        .collect();
                    let pooled = bert.pooled_same_len(&seqs);
                    for (k, &id) in ids.iter().enumerate() {
                        if !is_special(&vocab.tokens()[id as usize]) {
                            part[(i + k) * h..][..h].copy_from_slice(&pooled[k * h..][..h]);
                        }
                    }
                    let d = done.fetch_add(end - i, std::sync::atomic::Ordering::Relaxed);
                    progress(d + end - i, n);
                    i = end;
                }
            });
        }
    });
    out
}

fn is_special(tok: &str) -> bool {
    tok.starts_with('[') && tok.ends_with(']')
}

/// From the raw distilled rows (`tokens × h`): centre them (mean of the non-zero rows), project
/// onto the first `dim` principal components, and weight row `i` by `ln(1 + i)`. Zero rows stay
/// zero.
pub fn postprocess(raw: &[f32], h: usize, dim: usize) -> Vec<f32> {
    postprocess_with(raw, h, dim, true)
}

/// [`postprocess`], the rank weighting optional (`zipf`), and `dim ≥ h` meaning no reduction
/// (the centred rows as they are): the variants `docs/embeddings.md` compares.
pub fn postprocess_with(raw: &[f32], h: usize, dim: usize, zipf: bool) -> Vec<f32> {
    let n = raw.len() / h;
    let weights: Vec<f32> = (0..n)
        .map(|i| {
            if zipf {
                (1.0 + i as f64).ln() as f32
            } else {
                1.0
            }
        })
        .collect();
    Pca::fit(raw, h, dim).rows(raw, &weights)
}

/// The centring and principal axes of the raw distilled rows (`tokens × h`, zero rows left
/// out): what maps a raw `h`-dimensional vector (a token's, or a whole text's from the
/// transformer) into the static model's space.
#[derive(Debug, Clone)]
pub struct Pca {
    pub h: usize,
    pub dim: usize,
    /// Mean of the non-zero rows (`h` values).
    pub mean: Vec<f64>,
    /// The first `dim` principal axes, largest variance first: `dim × h`, row-major (the
    /// identity's first `dim` rows when `dim ≥ h`: no reduction).
    pub axes: Vec<f64>,
}

impl Pca {
    /// Fits the mean and, unless `dim ≥ h`, the `dim` principal axes of `raw`'s non-zero rows.
    pub fn fit(raw: &[f32], h: usize, dim: usize) -> Pca {
        let n = raw.len() / h;
        let live: Vec<usize> = (0..n)
            .filter(|&i| raw[i * h..][..h].iter().any(|&x| x != 0.0))
            .collect();
        let mut mean = vec![0f64; h];
        for &i in &live {
            for (m, &x) in mean.iter_mut().zip(&raw[i * h..][..h]) {
                *m += x as f64;
            }
        }
        mean.iter_mut().for_each(|m| *m /= live.len().max(1) as f64);
        let dim = dim.min(h);
        if dim == h {
            let mut axes = vec![0f64; h * h];
            (0..h).for_each(|i| axes[i * h + i] = 1.0);
            return Pca { h, dim, mean, axes };
        }
        let mut cov = vec![0f64; h * h];
        let mut c = vec![0f64; h];
        for &i in &live {
            for (j, cj) in c.iter_mut().enumerate() {
                *cj = raw[i * h + j] as f64 - mean[j];
            }
            for a in 0..h {
                let ca = c[a];
                let row = &mut cov[a * h..][..h];
                for b in a..h {
                    row[b] += ca * c[b];
                }
            }
        }
        for a in 0..h {
            for b in 0..a {
                cov[a * h + b] = cov[b * h + a];
            }
        }
        let (vals, vecs) = jacobi_eigen(cov, h);
        let mut order: Vec<usize> = (0..h).collect();
        order.sort_by(|&a, &b| vals[b].total_cmp(&vals[a]));
        let mut axes = vec![0f64; dim * h];
        for (d, &k) in order.iter().take(dim).enumerate() {
            for j in 0..h {
                axes[d * h + j] = vecs[j * h + k];
            }
        }
        Pca { h, dim, mean, axes }
    }

    /// `(v − mean)` on the axes: `dim` values.
    pub fn project(&self, v: &[f32]) -> Vec<f32> {
        let c: Vec<f64> = v
            .iter()
            .zip(&self.mean)
            .map(|(&x, m)| x as f64 - m)
            .collect();
        (0..self.dim)
            .map(|d| {
                let a = &self.axes[d * self.h..][..self.h];
                a.iter().zip(&c).map(|(x, y)| x * y).sum::<f64>() as f32
            })
            .collect()
    }

    /// Every non-zero raw row projected and multiplied by its weight (`weights[i]` for row
    /// `i`); zero rows stay zero. `tokens × dim` values.
    pub fn rows(&self, raw: &[f32], weights: &[f32]) -> Vec<f32> {
        let n = raw.len() / self.h;
        let mut out = vec![0f32; n * self.dim];
        for i in 0..n {
            let r = &raw[i * self.h..][..self.h];
            if r.iter().all(|&x| x == 0.0) {
                continue;
            }
            let p = self.project(r);
            for (o, x) in out[i * self.dim..][..self.dim].iter_mut().zip(p) {
                *o = x * weights[i];
            }
        }
        out
    }
}

/// Eigenvalues and eigenvectors (columns of the returned `n × n` matrix) of a symmetric matrix,
/// by cyclic Jacobi rotations.
pub fn jacobi_eigen(mut a: Vec<f64>, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut v = vec![0f64; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    for _sweep in 0..50 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i * n + j] * a[i * n + j])
            .sum();
        let total: f64 = a.iter().map(|x| x * x).sum();
        if off <= 1e-22 * total.max(1e-300) {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq.abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let cs = 1.0 / (t * t + 1.0).sqrt();
                let sn = t * cs;
                for k in 0..n {
                    let akp = a[k * n + p];
                    let akq = a[k * n + q];
                    a[k * n + p] = cs * akp - sn * akq;
                    a[k * n + q] = sn * akp + cs * akq;
                }
                for k in 0..n {
                    let apk = a[p * n + k];
                    let aqk = a[q * n + k];
                    a[p * n + k] = cs * apk - sn * aqk;
                    a[q * n + k] = sn * apk + cs * aqk;
                }
                for k in 0..n {
                    let vkp = v[k * n + p];
                    let vkq = v[k * n + q];
                    v[k * n + p] = cs * vkp - sn * vkq;
                    v[k * n + q] = sn * vkp + cs * vkq;
                }
            }
        }
    }
    ((0..n).map(|i| a[i * n + i]).collect(), v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jacobi_finds_the_eigenpairs_of_a_2x2() {
        // [[2,1],[1,2]] has eigenvalues 3 (vector (1,1)/√2) and 1 (vector (1,-1)/√2).
        let (vals, vecs) = jacobi_eigen(vec![2.0, 1.0, 1.0, 2.0], 2);
        let mut sorted = vals.clone();
        sorted.sort_by(f64::total_cmp);
        assert!((sorted[0] - 1.0).abs() < 1e-12 && (sorted[1] - 3.0).abs() < 1e-12);
        let k = if vals[0] > vals[1] { 0 } else { 1 };
        let r = std::f64::consts::FRAC_1_SQRT_2;
        assert!((vecs[k].abs() - r).abs() < 1e-12 && (vecs[2 + k] - vecs[k]).abs() < 1e-12);
    }

    #[test]
    fn save_then_load_keeps_rows_and_variant_and_files_are_owner_only() {
        let toks = ["[UNK]", "[CLS]", "[SEP]", "a"];
        let vocab = WordPiece::from_tokens(toks.iter().map(|s| s.to_string()).collect()).unwrap();
        let mut m = StaticModel::new(vocab, 2, vec![0., 0., 0., 0., 0., 0., 0.5, -1.25]);
        m.id.push_str("+nozipf");
        let d = tempfile::tempdir().unwrap();
        m.save(d.path(), "abc").unwrap();
        let back = StaticModel::load(d.path()).unwrap();
        assert_eq!(back.id, "minilm-l6-static@1/2+nozipf");
        assert_eq!(back.row(3), &[0.5, -1.25]);
        // Read through the mapping, not a copy (on the machines that can map it).
        #[cfg(target_endian = "little")]
        assert!(matches!(back.rows, Rows::Mapped(_)));
        drop(back);
        #[cfg(unix)]
        for f in ["vocab.txt", "vectors.f32", "model.json"] {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(d.path().join(f))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{f}");
        }
        // A vectors file of the wrong size is refused, naming it.
        std::fs::write(d.path().join("vectors.f32"), [0u8; 12]).unwrap();
        let e = StaticModel::load(d.path()).err().unwrap();
        assert!(
            e.ends_with("12 bytes, expected 4 tokens × 2 dims × 4"),
            "{e}"
        );
        // A `dim` whose product with the vocabulary wraps to the file's size (4 × (2⁶² + 4)
        // × 4 = 64 modulo 2⁶⁴) is refused too, not allocated.
        std::fs::write(d.path().join("vectors.f32"), [0u8; 64]).unwrap();
        let json = std::fs::read_to_string(d.path().join("model.json")).unwrap();
        let mut meta: serde_json::Value = serde_json::from_str(&json).unwrap();
        meta["dim"] = serde_json::json!(4_611_686_018_427_387_908u64);
        std::fs::write(d.path().join("model.json"), meta.to_string()).unwrap();
        let e = StaticModel::load(d.path()).err().unwrap();
        assert!(e.contains("64 bytes, expected 4 tokens"), "{e}");
    }

    #[test]
    fn pool_is_the_unit_mean_of_rows() {
        let toks = ["[UNK]", "[CLS]", "[SEP]", "a", "b"];
        let vocab = WordPiece::from_tokens(toks.iter().map(|s| s.to_string()).collect()).unwrap();
        let rows = vec![0., 0., 0., 0., 0., 0., 3., 0., 1., 4.];
        let m = StaticModel::new(vocab, 2, rows);
        // mean of (3,0) and (1,4) = (2,2) → (1/√2, 1/√2).
        let v = m.encode_query("a b");
        let r = std::f32::consts::FRAC_1_SQRT_2;
        assert!((v[0] - r).abs() < 1e-6 && (v[1] - r).abs() < 1e-6);
        assert_eq!(m.encode_chunks(""), Vec::<Vec<f32>>::new());
        assert_eq!(m.id, "minilm-l6-static@1/2");
    }
}
