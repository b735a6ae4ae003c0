//! An OpenAI-compatible embeddings endpoint as the model: Ollama (`http://127.0.0.1:11434/v1`),
//! llama.cpp's server, vLLM, LM Studio, or OpenAI itself, configured in memtrail's config file
//! (`~/.config/memtrail/config.toml`):
//!
//! ```toml
//! [embed]
//! url = "http://127.0.0.1:11434/v1"   # the API's base: memtrail POSTs to {url}/embeddings
//! model = "nomic-embed-text"
//! # api_key_env = "OPENAI_API_KEY"   # the variable holding the key (sent as a Bearer token)
//! # dim = 768                        # else learned from one request
//! ```
//!
//! The request is `POST {url}/embeddings` with `{"model", "input": [texts], "encoding_format":
//! "float"}`; the answer's `data[i].embedding` (ordered by `data[i].index`) is the vector of
//! `input[i]` (OpenAI's API reference, "Create embeddings"). Vectors are scaled to unit length
//! (Ollama's are not always).
//!
//! Trust: texts sent are the store's, already redacted, and search queries, redacted the same
//! way (every text is redacted again as it is sent). A key is sent only when `api_key_env`
//! names a variable, or to `api.openai.com` (then `OPENAI_API_KEY`); it is never printed. Plain
//! `http://` is refused except to a loopback address: transcripts do not cross a network in
//! clear. Never used by a hook (hooks never open a connection).

use crate::model::{Encoder, normalize};
use serde::Deserialize;
use std::time::Duration;

/// Texts per request.
pub const BATCH: usize = 64;
/// Characters of a text sent (the store reads at most 8,000 of a message anyway).
pub const MAX_TEXT_CHARS: usize = 8000;

/// The `[embed]` table of memtrail's config.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointConfig {
    /// The API's base URL (without `/embeddings`).
    pub url: String,
    pub model: String,
    /// The variable holding the key, if any.
    pub api_key_env: Option<String>,
    /// Values per vector, when given.
    pub dim: Option<usize>,
}

impl EndpointConfig {
    /// The `[embed]` table of the TOML text `config` (`None` when there is none or it has no
    /// `url`).
    ///
    /// Errors: a message naming the field: not TOML, `url` not http(s), `model` missing, `dim`
    /// not a positive integer, plain http to a host that is not loopback.
    pub fn parse(config: &str) -> Result<Option<EndpointConfig>, String> {
        let doc: toml_edit::DocumentMut = config.parse().map_err(|e| format!("not TOML: {e}"))?;
        let Some(t) = doc.get("embed").and_then(|t| t.as_table_like()) else {
            return Ok(None);
        };
        let text = |k: &str| -> Result<Option<String>, String> {
            match t.get(k) {
                None => Ok(None),
                Some(v) => v
                    .as_str()
                    .map(|s| Some(s.trim().to_string()))
                    .ok_or_else(|| format!("[embed] {k} must be a string")),
            }
        };
        let Some(url) = text("url")?.filter(|u| !u.is_empty()) else {
            return Ok(None);
        };
        let url = url.trim_end_matches('/').to_string();
        check_url(&url)?;
        let model = text("model")?
            .filter(|m| !m.is_empty())
            .ok_or("[embed] model is missing (the endpoint's model name, e.g. nomic-embed-text)")?;
        let dim = match t.get("dim") {
            None => None,
            Some(v) => Some(
                v.as_integer()
                    .filter(|d| *d > 0 && *d <= 16_384)
                    .ok_or("[embed] dim must be a whole number from 1 to 16384")?
                    as usize,
            ),
        };
        Ok(Some(EndpointConfig {
            url,
            model,
            api_key_env: text("api_key_env")?.filter(|s| !s.is_empty()),
            dim,
        }))
    }
}

/// `http://` only to loopback; `https://` anywhere.
fn check_url(url: &str) -> Result<(), String> {
    let rest = if let Some(r) = url.strip_prefix("https://") {
        let _ = r;
        return Ok(());
    } else if let Some(r) = url.strip_prefix("http://") {
        r
    } else {
        return Err(format!("[embed] url `{url}` is not http:// or https://"));
    };
    let authority = rest.split('/').next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(h) = host.strip_prefix('[') {
        h.split(']').next().unwrap_or("")
    } else {
        host.split(':').next().unwrap_or("")
    };
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if loopback {
        Ok(())
    } else {
        Err(format!(
            "[embed] url `{url}`: plain http is allowed only to this machine (localhost, 127.0.0.1, ::1); use https:// for {host}"
        ))
    }
}

/// The endpoint as an [`Encoder`].
pub struct Remote {
    cfg: EndpointConfig,
    key: Option<String>,
    dim: usize,
    id: String,
    agent: ureq::Agent,
}

#[derive(Deserialize)]
struct Answer {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl Remote {
    /// The encoder for `cfg`; the dimension is `cfg.dim` or learned from one request.
    ///
    /// Errors: `api_key_env` names a variable that is not set; the endpoint's answer to the
    /// first request (when the dimension is learned).
    pub fn new(cfg: EndpointConfig) -> Result<Remote, String> {
        let key = match &cfg.api_key_env {
            Some(var) => Some(
                std::env::var(var)
                    .ok()
                    .filter(|k| !k.is_empty())
                    .ok_or_else(|| format!("[embed] api_key_env names {var}, which is not set"))?,
            ),
            None if cfg.url.starts_with("https://api.openai.com") => {
                std::env::var("OPENAI_API_KEY")
                    .ok()
                    .filter(|k| !k.is_empty())
            }
            None => None,
        };
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(120)))
            .http_status_as_error(false)
            .build()
            .into();
        let mut r = Remote {
            id: String::new(),
            dim: cfg.dim.unwrap_or(0),
            cfg,
            key,
            agent,
        };
        if r.dim == 0 {
            let v = r.request(&["dimension probe"])?;
            r.dim = v.first().map_or(0, |v| v.len());
            if r.dim == 0 {
                return Err(format!(
                    "{}: the endpoint gave an empty vector",
                    r.endpoint()
                ));
            }
        }
        r.id = format!("{}@endpoint/{}", r.cfg.model, r.dim);
        Ok(r)
    }

    fn endpoint(&self) -> String {
        format!("{}/embeddings", self.cfg.url)
    }

    /// One vector per text (not yet normalized), in the texts' order.
    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        // Every text redacted once more where it leaves the machine: the stored texts already
        // are (then this changes nothing), a query may not be.
        let input: Vec<String> = texts
            .iter()
            .map(|t| {
                memtrail_runtime::redact::redact(t)
                    .chars()
                    .take(MAX_TEXT_CHARS)
                    .collect()
            })
            .collect();
        let body = serde_json::json!({"model": self.cfg.model, "input": input,
            "encoding_format": "float"});
        let mut req = self.agent.post(self.endpoint());
        if let Some(k) = &self.key {
            req = req.header("Authorization", format!("Bearer {k}"));
        }
        let endpoint = self.endpoint();
        let mut resp = req
            .send_json(&body)
            .map_err(|e| format!("{endpoint}: {e}"))?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .with_config()
            .limit(256 * 1024 * 1024)
            .read_to_string()
            .map_err(|e| format!("{endpoint}: cannot read the answer: {e}"))?;
        if !(200..300).contains(&status) {
            let why: String = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
                .unwrap_or(text)
                .chars()
                .filter(|c| !c.is_control())
                .take(300)
                .collect();
            return Err(format!("{endpoint}: HTTP {status}: {why}"));
        }
        let answer: Answer = serde_json::from_str(&text)
            .map_err(|e| format!("{endpoint}: not an embeddings answer: {e}"))?;
        if answer.data.len() != texts.len() {
            return Err(format!(
                "{endpoint}: {} vectors for {} texts",
                answer.data.len(),
                texts.len()
            ));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for (i, item) in answer.data.into_iter().enumerate() {
            let at = item.index.unwrap_or(i);
            match out.get_mut(at) {
                Some(slot @ None) => *slot = Some(item.embedding),
                _ => return Err(format!("{endpoint}: index {at} out of place")),
            }
        }
        Ok(out.into_iter().map(|v| v.unwrap_or_default()).collect())
    }

    /// Unit vectors of `texts`, checked to have [`Encoder::dim`] values.
    fn unit_vectors(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        let mut out = Vec::with_capacity(texts.len());
        for part in texts.chunks(BATCH) {
            for mut v in self.request(part)? {
                if v.len() != self.dim {
                    return Err(format!(
                        "{}: a vector of {} values, not {} (the model changed? set [embed] dim)",
                        self.endpoint(),
                        v.len(),
                        self.dim
                    ));
                }
                normalize(&mut v);
                out.push(v);
            }
        }
        Ok(out)
    }
}

impl Encoder for Remote {
    fn id(&self) -> &str {
        &self.id
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn encode_query(&self, text: &str) -> Result<Vec<f32>, String> {
        Ok(self.unit_vectors(&[text])?.remove(0))
    }
    fn encode_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>, String> {
        Ok(self
            .unit_vectors(texts)?
            .into_iter()
            .map(|v| vec![v])
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_is_read_and_checked() {
        assert_eq!(EndpointConfig::parse("exclude = []\n"), Ok(None));
        assert_eq!(
            EndpointConfig::parse(
                "[embed]\nurl = \"http://127.0.0.1:11434/v1/\"\nmodel = \"nomic-embed-text\"\n"
            ),
            Ok(Some(EndpointConfig {
                url: "http://127.0.0.1:11434/v1".into(),
                model: "nomic-embed-text".into(),
                api_key_env: None,
                dim: None,
            }))
        );
        let e = |t: &str| EndpointConfig::parse(t).unwrap_err();
        assert_eq!(
            e("[embed]\nurl = \"http://10.0.0.5:11434/v1\"\nmodel = \"m\"\n"),
            "[embed] url `http://10.0.0.5:11434/v1`: plain http is allowed only to this machine (localhost, 127.0.0.1, ::1); use https:// for 10.0.0.5"
        );
        assert_eq!(
            e("[embed]\nurl = \"ftp://x\"\nmodel = \"m\"\n"),
            "[embed] url `ftp://x` is not http:// or https://"
        );
        assert!(e("[embed]\nurl = \"https://api.openai.com/v1\"\n").contains("model is missing"));
        assert_eq!(
            e("[embed]\nurl = \"http://[::1]:8080/v1\"\nmodel = \"m\"\ndim = 0\n"),
            "[embed] dim must be a whole number from 1 to 16384"
        );
        assert!(
            EndpointConfig::parse("[embed]\nurl = \"http://localhost:1/v1\"\nmodel = \"m\"\n")
                .unwrap()
                .is_some()
        );
    }
}
