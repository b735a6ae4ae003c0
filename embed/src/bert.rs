//! A BERT encoder forward pass in plain Rust (f32), enough to run all-MiniLM-L6-v2 from its
//! `model.safetensors` (layout of Hugging Face's `BertModel`: `embeddings.*`,
//! `encoder.layer.N.{attention.self.{query,key,value},attention.output.dense,
//! attention.output.LayerNorm,intermediate.dense,output.dense,output.LayerNorm}`; linear weights
//! are `[out, in]` row-major) and mean-pool its last hidden state (sentence-transformers'
//! pooling for this model).
//!
//! It is used once per model install, to distill the static model (every vocabulary token
//! through the encoder), and by the evaluation to compare with the static model. It is not on
//! the search path.
//!
//! The matrix products go through `matrixmultiply`'s f32 GEMM (AVX2/FMA when the CPU has it):
//! about 85 GFLOP/s on one core here, 2,700–4,000 tokens/s a core for sentences of ~80 tokens.

use std::collections::HashMap;

/// The encoder's shape (from `config.json`; all-MiniLM-L6-v2's values are the default).
#[derive(Debug, Clone, Copy)]
pub struct BertConfig {
    pub hidden: usize,
    pub heads: usize,
    pub layers: usize,
    pub intermediate: usize,
    pub max_positions: usize,
    pub eps: f32,
}

impl Default for BertConfig {
    fn default() -> Self {
        BertConfig {
            hidden: 384,
            heads: 12,
            layers: 6,
            intermediate: 1536,
            max_positions: 512,
            eps: 1e-12,
        }
    }
}

struct Linear {
    w: Vec<f32>,
    b: Vec<f32>,
    out: usize,
    inp: usize,
}

struct Norm {
    g: Vec<f32>,
    b: Vec<f32>,
}

struct Layer {
    q: Linear,
    k: Linear,
    v: Linear,
    o: Linear,
    ln1: Norm,
    up: Linear,
    down: Linear,
    ln2: Norm,
}

/// The loaded encoder.
pub struct Bert {
    cfg: BertConfig,
    word: Vec<f32>,
    pos: Vec<f32>,
    typ: Vec<f32>,
    ln: Norm,
    layers: Vec<Layer>,
    pub vocab_size: usize,
}

/// Named f32 tensors: name → (shape, values row-major).
pub type Tensors = HashMap<String, (Vec<usize>, Vec<f32>)>;

/// The f32 tensors of a safetensors file (format: an 8-byte little-endian header length, a JSON
/// header `name → {dtype, shape, data_offsets}`, then the data). Other dtypes are skipped.
///
/// Errors: a message when the file is shorter than its header says or the header is not JSON.
pub fn read_safetensors(bytes: &[u8]) -> Result<Tensors, String> {
    let bad = |why: &str| format!("not a safetensors file: {why}");
    if bytes.len() < 8 {
        return Err(bad("shorter than 8 bytes"));
    }
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = bytes
        .get(8..8usize.saturating_add(n))
        .ok_or_else(|| bad("header past the end"))?;
    let header: serde_json::Value =
        serde_json::from_slice(header).map_err(|e| bad(&e.to_string()))?;
    let data = &bytes[8 + n..];
    let mut out = HashMap::new();
    for (name, t) in header
        .as_object()
        .ok_or_else(|| bad("header not an object"))?
    {
        if t.get("dtype").and_then(|d| d.as_str()) != Some("F32") {
            continue;
        }
        let shape: Vec<usize> = t["shape"]
            .as_array()
            .ok_or_else(|| bad("shape"))?
            .iter()
            .map(|x| x.as_u64().unwrap_or(0) as usize)
            .collect();
        let off = t["data_offsets"].as_array().ok_or_else(|| bad("offsets"))?;
        let (a, b) = (
            off[0].as_u64().unwrap_or(0) as usize,
            off[1].as_u64().unwrap_or(0) as usize,
        );
        let raw = data.get(a..b).ok_or_else(|| bad("tensor past the end"))?;
        let v: Vec<f32> = raw
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        if v.len() != shape.iter().product::<usize>() {
            return Err(bad(&format!("{name}: data does not match its shape")));
        }
        out.insert(name.clone(), (shape, v));
    }
    Ok(out)
}

impl Bert {
    /// Builds the encoder from the tensors of `model.safetensors`.
    ///
    /// Errors: a message naming the first missing or misshapen tensor.
    pub fn from_tensors(mut t: Tensors, cfg: BertConfig) -> Result<Bert, String> {
        let h = cfg.hidden;
        let word_shape = {
            // The vocabulary size is read from the tensor itself.
            let n = t
                .get("embeddings.word_embeddings.weight")
                .map(|(s, _)| s[0])
                .ok_or("the model has no tensor embeddings.word_embeddings.weight")?;
            [n, h]
        };
        let mut take = |name: &str, shape: &[usize]| -> Result<Vec<f32>, String> {
            let (s, v) = t
                .remove(name)
                .ok_or_else(|| format!("the model has no tensor {name}"))?;
            if s != shape {
                return Err(format!("{name} has shape {s:?}, expected {shape:?}"));
            }
            Ok(v)
        };
        let word = take("embeddings.word_embeddings.weight", &word_shape)?;
        let pos = take(
            "embeddings.position_embeddings.weight",
            &[cfg.max_positions, h],
        )?;
        let typ = take("embeddings.token_type_embeddings.weight", &[2, h])?;
        let ln = Norm {
            g: take("embeddings.LayerNorm.weight", &[h])?,
            b: take("embeddings.LayerNorm.bias", &[h])?,
        };
        let mut layers = Vec::new();
        for i in 0..cfg.layers {
            let p = format!("encoder.layer.{i}.");
            let mut lin = |name: &str, out: usize, inp: usize| -> Result<Linear, String> {
                Ok(Linear {
                    w: take(&format!("{p}{name}.weight"), &[out, inp])?,
                    b: take(&format!("{p}{name}.bias"), &[out])?,
                    out,
                    inp,
                })
            };
            let q = lin("attention.self.query", h, h)?;
            let k = lin("attention.self.key", h, h)?;
            let v = lin("attention.self.value", h, h)?;
            let o = lin("attention.output.dense", h, h)?;
            let up = lin("intermediate.dense", cfg.intermediate, h)?;
            let down = lin("output.dense", h, cfg.intermediate)?;
            let ln1 = Norm {
                g: take(&format!("{p}attention.output.LayerNorm.weight"), &[h])?,
                b: take(&format!("{p}attention.output.LayerNorm.bias"), &[h])?,
            };
            let ln2 = Norm {
                g: take(&format!("{p}output.LayerNorm.weight"), &[h])?,
                b: take(&format!("{p}output.LayerNorm.bias"), &[h])?,
            };
            layers.push(Layer {
                q,
                k,
                v,
                o,
                ln1,
                up,
                down,
                ln2,
            });
        }
        Ok(Bert {
            cfg,
            word,
            pos,
            typ,
            ln,
            layers,
            vocab_size: word_shape[0],
        })
    }

    /// Hidden size (the embedding dimension).
    pub fn dim(&self) -> usize {
        self.cfg.hidden
    }

    /// Mean-pooled, unnormalized last hidden states of a batch of sequences of the SAME length
    /// (token ids including `[CLS]`/`[SEP]`, all < vocab size, length ≤ 512): `seqs.len() × dim`
    /// values, row-major.
    pub fn pooled_same_len(&self, seqs: &[Vec<u32>]) -> Vec<f32> {
        let len = seqs.first().map_or(0, |s| s.len());
        for s in seqs {
            assert_eq!(
                s.len(),
                len,
                "pooled_same_len needs sequences of one length"
            );
        }
        let refs: Vec<&[u32]> = seqs.iter().map(|s| s.as_slice()).collect();
        self.pooled_batch(&refs)
    }

    /// Mean-pooled, unnormalized last hidden states of a batch of sequences of any lengths
    /// (token ids including `[CLS]`/`[SEP]`, all < vocab size, each 1–512 long): `seqs.len() ×
    /// dim` values, row-major. Shorter sequences are padded to the longest and the padding is
    /// masked out of attention and pooling (sentence-transformers' `attention_mask`), so each
    /// row equals that sequence run alone. Batch texts of similar length: the padding costs
    /// as much as real tokens.
    pub fn pooled_batch(&self, seqs: &[&[u32]]) -> Vec<f32> {
        let h = self.cfg.hidden;
        let len = seqs.iter().map(|s| s.len()).max().unwrap_or(0);
        let lens: Vec<usize> = seqs.iter().map(|s| s.len()).collect();
        let rows = seqs.len() * len;
        let mut x = vec![0f32; rows * h];
        for (si, s) in seqs.iter().enumerate() {
            for (p, &id) in s.iter().enumerate() {
                let r = &mut x[(si * len + p) * h..][..h];
                let w = &self.word[id as usize * h..][..h];
                let pe = &self.pos[p * h..][..h];
                for j in 0..h {
                    r[j] = w[j] + pe[j] + self.typ[j];
                }
                layer_norm(r, &self.ln, self.cfg.eps);
            }
        }
        for l in &self.layers {
            self.layer(l, &mut x, &lens, len);
        }
        let mut out = vec![0f32; seqs.len() * h];
        for (si, &n) in lens.iter().enumerate() {
            let o = &mut out[si * h..][..h];
            for p in 0..n {
                let r = &x[(si * len + p) * h..][..h];
                for j in 0..h {
                    o[j] += r[j];
                }
            }
            o.iter_mut().for_each(|v| *v /= n.max(1) as f32);
        }
        out
    }

    /// Mean-pooled last hidden state of one text's ids (with `[CLS]`/`[SEP]` already added).
    pub fn pooled(&self, ids: &[u32]) -> Vec<f32> {
        self.pooled_batch(&[ids])
    }

    /// One encoder layer over `x` (`lens.len() × len` rows of `hidden` values; sequence `b`'s
    /// real tokens are its first `lens[b]` rows, the rest padding).
    fn layer(&self, l: &Layer, x: &mut [f32], lens: &[usize], len: usize) {
        let h = self.cfg.hidden;
        let heads = self.cfg.heads;
        let hd = h / heads;
        let rows = lens.len() * len;
        // The bounds the products below rely on.
        assert!(lens.iter().all(|&n| n <= len) && x.len() == rows * h && h.is_multiple_of(heads));
        let q = linear(&l.q, x, rows);
        let k = linear(&l.k, x, rows);
        let v = linear(&l.v, x, rows);
        let mut ctx = vec![0f32; rows * h];
        let scale = 1.0 / (hd as f32).sqrt();
        let mut scores = vec![0f32; len * len];
        for (b, &n) in lens.iter().enumerate() {
            let base = b * len * h;
            for hh in 0..heads {
                let off = base + hh * hd;
                // scores = scale · Q_h K_hᵀ over the sequence's real tokens (n × n).
                // SAFETY: q, k, v and ctx hold rows × h values (linear's output, asserted x
                // size) and n ≤ len (asserted above), so every index the products read or write
                // lies inside them (rows b·len … b·len + n − 1, columns hh·hd … hh·hd + hd − 1,
                // row stride h) and inside scores (n × n, row stride len, len × len long).
                unsafe {
                    matrixmultiply::sgemm(
                        n,
                        hd,
                        n,
                        scale,
                        q.as_ptr().add(off),
                        h as isize,
                        1,
                        k.as_ptr().add(off),
                        1,
                        h as isize,
                        0.0,
                        scores.as_mut_ptr(),
                        len as isize,
                        1,
                    );
                }
                for i in 0..n {
                    let row = &mut scores[i * len..][..n];
                    let max = row.iter().fold(f32::NEG_INFINITY, |m, &s| m.max(s));
                    let mut sum = 0.0;
                    for s in row.iter_mut() {
                        *s = (*s - max).exp();
                        sum += *s;
                    }
                    let inv = 1.0 / sum;
                    row.iter_mut().for_each(|s| *s *= inv);
                }
                // ctx_h = P V_h (n × hd).
                // SAFETY: as above.
                unsafe {
                    matrixmultiply::sgemm(
                        n,
                        n,
                        hd,
                        1.0,
                        scores.as_ptr(),
                        len as isize,
                        1,
                        v.as_ptr().add(off),
                        h as isize,
                        1,
                        0.0,
                        ctx.as_mut_ptr().add(off),
                        h as isize,
                        1,
                    );
                }
            }
        }
        let attn = linear(&l.o, &ctx, rows);
        for r in 0..rows {
            let xr = &mut x[r * h..][..h];
            let ar = &attn[r * h..][..h];
            for j in 0..h {
                xr[j] += ar[j];
            }
            layer_norm(xr, &l.ln1, self.cfg.eps);
        }
        let mut up = linear(&l.up, x, rows);
        up.iter_mut().for_each(|v| *v = gelu(*v));
        let down = linear(&l.down, &up, rows);
        for r in 0..rows {
            let xr = &mut x[r * h..][..h];
            let dr = &down[r * h..][..h];
            for j in 0..h {
                xr[j] += dr[j];
            }
            layer_norm(xr, &l.ln2, self.cfg.eps);
        }
    }
}

/// `x · wᵀ + b` for `rows` rows of `x` (`rows × inp`), `w` being `[out, inp]` row-major.
fn linear(l: &Linear, x: &[f32], rows: usize) -> Vec<f32> {
    // The bounds the GEMM below relies on (`from_tensors` checked the shapes).
    assert!(x.len() >= rows * l.inp);
    assert_eq!(l.b.len(), l.out);
    assert_eq!(l.w.len(), l.out * l.inp);
    let mut out = Vec::with_capacity(rows * l.out);
    for _ in 0..rows {
        out.extend_from_slice(&l.b);
    }
    // SAFETY: x holds at least rows × inp values, w out × inp, out rows × out (asserted
    // above); the strides below read
    // x row-major, w transposed (element (k, j) of wᵀ is w[j·inp + k]) and write out row-major.
    unsafe {
        matrixmultiply::sgemm(
            rows,
            l.inp,
            l.out,
            1.0,
            x.as_ptr(),
            l.inp as isize,
            1,
            l.w.as_ptr(),
            1,
            l.inp as isize,
            1.0,
            out.as_mut_ptr(),
            l.out as isize,
            1,
        );
    }
    out
}

/// Dot product with 8 independent accumulators (so the compiler vectorizes it).
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

fn layer_norm(x: &mut [f32], n: &Norm, eps: f32) {
    let len = x.len() as f32;
    let mean = x.iter().sum::<f32>() / len;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / len;
    let inv = 1.0 / (var + eps).sqrt();
    for (i, v) in x.iter_mut().enumerate() {
        *v = (*v - mean) * inv * n.g[i] + n.b[i];
    }
}

/// GELU with erf (BERT's `gelu`), erf from Abramowitz–Stegun 7.1.26 (|error| < 1.5e-7).
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x / std::f32::consts::SQRT_2))
}

// The coefficients as Abramowitz and Stegun print them (f32 rounds them; the error bound holds).
#[allow(clippy::excessive_precision)]
fn erf(x: f32) -> f32 {
    let s = x.signum();
    let x = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-x * x).exp();
    s * y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_and_gelu_match_their_definitions() {
        // erf(0.5) = 0.5204998778, erf(-1) = -0.8427007929 (tables); gelu(1) = 0.8413447461.
        assert!((erf(0.5) - 0.520_499_9).abs() < 1e-6);
        assert!((erf(-1.0) + 0.842_700_8).abs() < 1e-6);
        assert!((gelu(1.0) - 0.841_344_7).abs() < 1e-6);
        assert_eq!(gelu(0.0), 0.0);
    }

    #[test]
    fn dot_covers_the_remainder() {
        let a: Vec<f32> = (1..=10).map(|v| v as f32).collect();
        // 1² + … + 10² = 385.
        assert_eq!(dot(&a, &a), 385.0);
    }

    #[test]
    fn safetensors_header_is_checked() {
        let mut f = Vec::new();
        let header = br#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
        f.extend_from_slice(&(header.len() as u64).to_le_bytes());
        f.extend_from_slice(header);
        f.extend_from_slice(&1.5f32.to_le_bytes());
        f.extend_from_slice(&(-2.0f32).to_le_bytes());
        let t = read_safetensors(&f).unwrap();
        assert_eq!(t["a"], (vec![2], vec![1.5, -2.0]));
        assert_eq!(
            read_safetensors(&f[..f.len() - 1]).unwrap_err(),
            "not a safetensors file: tensor past the end"
        );
    }

    /// A random encoder of hidden size 8 (2 heads of 4), 2 layers, FFN 16, 20 tokens.
    fn tiny() -> (Bert, BertConfig) {
        let cfg = BertConfig {
            hidden: 8,
            heads: 2,
            layers: 2,
            intermediate: 16,
            max_positions: 16,
            eps: 1e-12,
        };
        let mut seed = 0x2545_f491_u64;
        let mut rnd = |n: usize| -> Vec<f32> {
            (0..n)
                .map(|_| {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.8
                })
                .collect()
        };
        let (h, f) = (cfg.hidden, cfg.intermediate);
        let mut t = Tensors::new();
        let mut put = |name: String, shape: Vec<usize>| {
            let n = shape.iter().product();
            t.insert(name, (shape, rnd(n)));
        };
        put("embeddings.word_embeddings.weight".into(), vec![20, h]);
        put("embeddings.position_embeddings.weight".into(), vec![16, h]);
        put("embeddings.token_type_embeddings.weight".into(), vec![2, h]);
        put("embeddings.LayerNorm.weight".into(), vec![h]);
        put("embeddings.LayerNorm.bias".into(), vec![h]);
        for l in 0..cfg.layers {
            let p = format!("encoder.layer.{l}.");
            for (name, out, inp) in [
                ("attention.self.query", h, h),
                ("attention.self.key", h, h),
                ("attention.self.value", h, h),
                ("attention.output.dense", h, h),
                ("intermediate.dense", f, h),
                ("output.dense", h, f),
            ] {
                put(format!("{p}{name}.weight"), vec![out, inp]);
                put(format!("{p}{name}.bias"), vec![out]);
            }
            for n in ["attention.output.LayerNorm", "output.LayerNorm"] {
                put(format!("{p}{n}.weight"), vec![h]);
                put(format!("{p}{n}.bias"), vec![h]);
            }
        }
        (Bert::from_tensors(t, cfg).unwrap(), cfg)
    }

    /// The forward pass written out from BERT's definition, one token at a time, with no
    /// matrix library: what `pooled_batch` must agree with.
    fn reference(b: &Bert, cfg: &BertConfig, ids: &[u32]) -> Vec<f32> {
        let (h, n) = (cfg.hidden, ids.len());
        let hd = h / cfg.heads;
        let lin = |l: &Linear, x: &[f32]| -> Vec<f32> {
            (0..l.out)
                .map(|j| (0..l.inp).map(|k| x[k] * l.w[j * l.inp + k]).sum::<f32>() + l.b[j])
                .collect()
        };
        let mut x: Vec<Vec<f32>> = ids
            .iter()
            .enumerate()
            .map(|(p, &id)| {
                let mut r: Vec<f32> = (0..h)
                    .map(|j| b.word[id as usize * h + j] + b.pos[p * h + j] + b.typ[j])
                    .collect();
                layer_norm(&mut r, &b.ln, cfg.eps);
                r
            })
            .collect();
        for l in &b.layers {
            let q: Vec<Vec<f32>> = x.iter().map(|r| lin(&l.q, r)).collect();
            let k: Vec<Vec<f32>> = x.iter().map(|r| lin(&l.k, r)).collect();
            let v: Vec<Vec<f32>> = x.iter().map(|r| lin(&l.v, r)).collect();
            for i in 0..n {
                let mut ctx = vec![0f32; h];
                for hh in 0..cfg.heads {
                    let r = hh * hd..(hh + 1) * hd;
                    let s: Vec<f32> = (0..n)
                        .map(|j| {
                            r.clone().map(|d| q[i][d] * k[j][d]).sum::<f32>() / (hd as f32).sqrt()
                        })
                        .collect();
                    let max = s.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
                    let e: Vec<f32> = s.iter().map(|v| (v - max).exp()).collect();
                    let sum: f32 = e.iter().sum();
                    for j in 0..n {
                        for d in r.clone() {
                            ctx[d] += e[j] / sum * v[j][d];
                        }
                    }
                }
                let a = lin(&l.o, &ctx);
                let mut y: Vec<f32> = (0..h).map(|j| x[i][j] + a[j]).collect();
                layer_norm(&mut y, &l.ln1, cfg.eps);
                x[i] = y;
            }
            for r in x.iter_mut() {
                let up: Vec<f32> = lin(&l.up, r).into_iter().map(gelu).collect();
                let down = lin(&l.down, &up);
                let mut y: Vec<f32> = (0..h).map(|j| r[j] + down[j]).collect();
                layer_norm(&mut y, &l.ln2, cfg.eps);
                *r = y;
            }
        }
        (0..h)
            .map(|j| x.iter().map(|r| r[j]).sum::<f32>() / n as f32)
            .collect()
    }

    #[test]
    fn a_padded_batch_equals_the_definition_run_on_each_sequence() {
        let (bert, cfg) = tiny();
        let seqs: [&[u32]; 4] = [&[1, 5, 9, 2], &[1, 2], &[1, 7, 7, 3, 11, 19, 4, 2], &[3]];
        let batch = bert.pooled_batch(&seqs);
        for (i, s) in seqs.iter().enumerate() {
            let want = reference(&bert, &cfg, s);
            let got = &batch[i * 8..][..8];
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (g - w).abs() < 1e-4,
                    "sequence {i}: {got:?} against {want:?}"
                );
            }
            let alone = bert.pooled(s);
            assert!(close(&alone, got), "sequence {i} alone and in the batch");
        }
        // Padding must not leak: a short sequence's vector is the same whatever it is batched
        // with (the longest decides the padded length).
        assert!(close(&bert.pooled_batch(&seqs[1..2]), &batch[8..16]));
    }

    fn close(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5)
    }
}
