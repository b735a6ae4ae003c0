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
        let h = self.cfg.hidden;
        let len = seqs.first().map_or(0, |s| s.len());
        let rows = seqs.len() * len;
        let mut x = vec![0f32; rows * h];
        for (si, s) in seqs.iter().enumerate() {
            assert_eq!(
                s.len(),
                len,
                "pooled_same_len needs sequences of one length"
            );
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
            self.layer(l, &mut x, seqs.len(), len);
        }
        let mut out = vec![0f32; seqs.len() * h];
        for si in 0..seqs.len() {
            let o = &mut out[si * h..][..h];
            for p in 0..len {
                let r = &x[(si * len + p) * h..][..h];
                for j in 0..h {
                    o[j] += r[j];
                }
            }
            o.iter_mut().for_each(|v| *v /= len as f32);
        }
        out
    }

    /// Mean-pooled last hidden state of one text's ids (with `[CLS]`/`[SEP]` already added).
    pub fn pooled(&self, ids: &[u32]) -> Vec<f32> {
        self.pooled_same_len(&[ids.to_vec()])
    }

    fn layer(&self, l: &Layer, x: &mut [f32], batch: usize, len: usize) {
        let h = self.cfg.hidden;
        let heads = self.cfg.heads;
        let hd = h / heads;
        let rows = batch * len;
        let q = linear(&l.q, x, rows);
        let k = linear(&l.k, x, rows);
        let v = linear(&l.v, x, rows);
        let mut ctx = vec![0f32; rows * h];
        let scale = 1.0 / (hd as f32).sqrt();
        let mut scores = vec![0f32; len];
        for b in 0..batch {
            for hh in 0..heads {
                for i in 0..len {
                    let qi = &q[(b * len + i) * h + hh * hd..][..hd];
                    let mut max = f32::NEG_INFINITY;
                    for (j, s) in scores.iter_mut().enumerate() {
                        let kj = &k[(b * len + j) * h + hh * hd..][..hd];
                        *s = dot(qi, kj) * scale;
                        max = max.max(*s);
                    }
                    let mut sum = 0.0;
                    for s in scores.iter_mut() {
                        *s = (*s - max).exp();
                        sum += *s;
                    }
                    let c = &mut ctx[(b * len + i) * h + hh * hd..][..hd];
                    for (j, s) in scores.iter().enumerate() {
                        let vj = &v[(b * len + j) * h + hh * hd..][..hd];
                        let w = s / sum;
                        for d in 0..hd {
                            c[d] += w * vj[d];
                        }
                    }
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

fn linear(l: &Linear, x: &[f32], rows: usize) -> Vec<f32> {
    let mut out = vec![0f32; rows * l.out];
    for r in 0..rows {
        let xr = &x[r * l.inp..][..l.inp];
        let o = &mut out[r * l.out..][..l.out];
        for (j, oj) in o.iter_mut().enumerate() {
            *oj = dot(xr, &l.w[j * l.inp..][..l.inp]) + l.b[j];
        }
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

fn erf(x: f32) -> f32 {
    let s = x.signum();
    let x = x.abs() as f64;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-x * x).exp();
    s * y as f32
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
}
