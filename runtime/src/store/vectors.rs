//! Vectors for search by meaning (schema 7, issue 14): what of a message is embedded, the
//! backlog of messages to embed, and the stored vectors (int8 with a per-vector scale).
//!
//! The model itself is not here (see the `memtrail-embed` crate): the store takes an `encode`
//! function and the model's identity (`name@version/dim`); a store whose vectors were made by
//! another model starts over.

use super::{Db, Store, classify, db_err};
use crate::Result;
use rusqlite::{OptionalExtension, params};

/// Characters of a message's prose read for embedding (the model reads at most about 1,000
/// tokens of it anyway).
pub const EMBED_BODY_CHARS: i64 = 8000;
/// Characters of a message's tool text read for embedding (only its first lines are used).
pub const EMBED_TOOLS_CHARS: i64 = 2000;
/// Characters kept of one line of a tool call's rendering.
const TOOL_LINE_CHARS: usize = 200;

/// What is embedded of a message of kind `kind` (`text`, `tool_call`, …) with prose `body` and
/// flattened tool text `tools` (`name input-values` then the output, see
/// [`crate::store::render_index_text`]): the prose of prompts, answers, notes and summaries;
/// for a tool call, a short rendering (the call's line — name and target — and the first line
/// of its output, each at most 200 characters) after any prose; for a tool result, its first
/// line. `None` for thinking and for messages with nothing to embed.
pub fn embed_text(kind: &str, body: &str, tools: &str) -> Option<String> {
    let short = |s: &str| -> String { s.trim().chars().take(TOOL_LINE_CHARS).collect() };
    let body = body.trim();
    let mut lines = tools.lines().filter(|l| !l.trim().is_empty());
    let text = match kind {
        "thinking" => return None,
        "tool_call" => {
            let mut t = body.to_string();
            for l in lines.by_ref().take(2) {
                if !t.is_empty() {
                    t.push('\n');
                }
                t.push_str(&short(l));
            }
            t
        }
        "tool_result" if body.is_empty() => lines.next().map(short).unwrap_or_default(),
        _ => body.to_string(),
    };
    (!text.trim().is_empty()).then_some(text)
}

/// Every stored vector of one model, in memory for a brute-force scan: vector `i` is
/// `data[i * dim .. (i + 1) * dim]` × `scales[i]`, of message row id `ids[i]`.
#[derive(Debug, Clone, Default)]
pub struct VectorSet {
    pub dim: usize,
    pub ids: Vec<i64>,
    pub scales: Vec<f32>,
    pub data: Vec<i8>,
}

impl VectorSet {
    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.ids.len()
    }
    /// True when there is no vector.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
    /// Appends `more`'s vectors (of the same dimension).
    pub fn extend(&mut self, more: VectorSet) {
        debug_assert_eq!(self.dim, more.dim);
        self.ids.extend(more.ids);
        self.scales.extend(more.scales);
        self.data.extend(more.data);
    }
}

/// Messages read for embedding by [`Store::embed_take`], written back by
/// [`Store::embed_write`].
#[derive(Debug, Clone)]
pub struct EmbedWork {
    model: String,
    /// `embed_state` when read (`model`, `done_through`): the write checks it is unchanged.
    state: Option<(String, i64)>,
    /// (message row id, its [`embed_text`]) in backlog order.
    items: Vec<(i64, Option<String>)>,
    /// Ids taken from `embed_pending`.
    pending: Vec<i64>,
    /// `done_through` after this work.
    new_through: i64,
    /// Messages this work takes off the backlog (pending ids, gone or not, and new ones).
    taken: usize,
}

impl EmbedWork {
    /// The texts to encode, in order (messages with nothing to embed are left out).
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.items.iter().filter_map(|(_, t)| t.as_deref())
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.taken == 0
    }
}

/// `v` as int8 with a scale: `(scale, bytes)` where `v[i] ≈ scale × bytes[i]` and the largest
/// magnitude maps to ±127. A zero vector gives scale 0.
pub fn quantize(v: &[f32]) -> (f32, Vec<i8>) {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        return (0.0, vec![0; v.len()]);
    }
    let scale = max / 127.0;
    (
        scale,
        v.iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
            .collect(),
    )
}

impl Store {
    /// The model whose vectors the store holds (`name@version/dim`); `None` before any.
    pub fn embed_model(&self) -> Result<Option<String>> {
        self.conn
            .prepare_cached("SELECT model FROM embed_state WHERE id = 1")
            .db()?
            .query_row([], |r| r.get(0))
            .optional()
            .db()
    }

    /// How many messages wait to be embedded by `model` (every message when the store's
    /// vectors are another model's). Messages with nothing to embed are counted until the
    /// backlog passes them.
    pub fn embed_backlog(&self, model: &str) -> Result<i64> {
        let state: Option<(String, i64)> = self
            .conn
            .prepare_cached("SELECT model, done_through FROM embed_state WHERE id = 1")
            .db()?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .db()?;
        let done = match state {
            Some((m, d)) if m == model => d,
            _ => 0,
        };
        self.conn
            .prepare_cached(
                "SELECT (SELECT count(*) FROM messages WHERE id > ?1)
                      + (SELECT count(*) FROM embed_pending WHERE ?1 > 0)",
            )
            .db()?
            .query_row([done], |r| r.get(0))
            .db()
    }

    /// Embeds up to `limit` waiting messages: [`Store::embed_take`], `encode` on each text
    /// ([`embed_text`]: one unit vector of `dim` values per chunk; none for a text with no
    /// token), then [`Store::embed_write`]. Returns how many messages were taken off the
    /// backlog (0: none waits).
    ///
    /// Errors: as [`Store::embed_write`].
    pub fn embed_batch(
        &self,
        model: &str,
        dim: usize,
        limit: usize,
        encode: &mut dyn FnMut(&str) -> Vec<Vec<f32>>,
    ) -> Result<usize> {
        let work = self.embed_take(model, limit)?;
        let vectors: Vec<Vec<Vec<f32>>> = work.texts().map(encode).collect();
        self.embed_write(work, dim, &vectors)
    }

    /// Reads up to `limit` waiting messages for `model` (no lock is held: the text is encoded
    /// outside any transaction, which matters for a model behind a network endpoint): the
    /// messages rewritten since they were embedded first, then the next new ones by id. When
    /// the store's vectors are another model's, every message waits.
    ///
    /// Errors: store errors.
    pub fn embed_take(&self, model: &str, limit: usize) -> Result<EmbedWork> {
        let state: Option<(String, i64)> = self.embed_progress()?;
        let (done, reset) = match &state {
            Some((m, d)) if m == model => (*d, false),
            _ => (0, true),
        };
        let read = |r: &rusqlite::Row<'_>| -> rusqlite::Result<(i64, Option<String>)> {
            let kind: String = r.get(1)?;
            let body: String = r.get(2)?;
            let tools: String = r.get(3)?;
            Ok((r.get(0)?, embed_text(&kind, &body, &tools)))
        };
        let mut items: Vec<(i64, Option<String>)> = Vec::new();
        let mut pending: Vec<i64> = Vec::new();
        if !reset {
            pending = self
                .conn
                .prepare_cached("SELECT id FROM embed_pending ORDER BY id LIMIT ?1")
                .db()?
                .query_map([limit as i64], |r| r.get(0))
                .db()?
                .collect::<rusqlite::Result<_>>()
                .db()?;
            let mut one = self
                .conn
                .prepare_cached(
                    "SELECT id, kind, substr(body, 1, ?2), substr(memtrail_tools(tools_text, parts_zdict), 1, ?3) FROM messages WHERE id = ?1",
                )
                .db()?;
            for id in &pending {
                // A pending id whose message is gone is dropped with the rest.
                if let Some(item) = one
                    .query_row(params![id, EMBED_BODY_CHARS, EMBED_TOOLS_CHARS], read)
                    .optional()
                    .db()?
                {
                    items.push(item);
                }
            }
        }
        let mut new_through = done;
        let mut fresh_count = 0;
        if pending.len() < limit {
            let fresh: Vec<(i64, Option<String>)> = self
                .conn
                .prepare_cached(
                    "SELECT id, kind, substr(body, 1, ?3), substr(memtrail_tools(tools_text, parts_zdict), 1, ?4)
                     FROM messages WHERE id > ?1 ORDER BY id LIMIT ?2",
                )
                .db()?
                .query_map(
                    params![
                        done,
                        (limit - pending.len()) as i64,
                        EMBED_BODY_CHARS,
                        EMBED_TOOLS_CHARS
                    ],
                    read,
                )
                .db()?
                .collect::<rusqlite::Result<_>>()
                .db()?;
            if let Some(last) = fresh.last() {
                new_through = last.0;
            }
            fresh_count = fresh.len();
            items.extend(fresh);
        }
        Ok(EmbedWork {
            model: model.to_string(),
            state,
            taken: pending.len() + fresh_count,
            items,
            pending,
            new_through,
        })
    }

    /// Writes `vectors` (one list of unit vectors per text of `work`, in order) in one short
    /// write transaction and moves the backlog past `work`. A message rewritten since it was
    /// read keeps waiting (its vectors are not written); a deleted one is skipped. When
    /// another process moved the backlog meanwhile (or changed the model), nothing is written
    /// and 0 is returned: take again. When the store's vectors were another model's, they are
    /// all deleted first, in the same transaction. Returns how many messages were taken off
    /// the backlog.
    ///
    /// Errors: [`crate::Error::Busy`] when the write lock cannot be had; a vector of another
    /// length than `dim`, or fewer lists than texts ([`crate::Error::Invalid`]); store errors.
    /// Nothing is written then.
    pub fn embed_write(
        &self,
        work: EmbedWork,
        dim: usize,
        vectors: &[Vec<Vec<f32>>],
    ) -> Result<usize> {
        if vectors.len() != work.texts().count() {
            return Err(crate::Error::Invalid(format!(
                "{} texts to embed but {} results",
                work.texts().count(),
                vectors.len()
            )));
        }
        if let Some(v) = vectors.iter().flatten().find(|v| v.len() != dim) {
            return Err(crate::Error::Invalid(format!(
                "the model gave a vector of {} values, not {dim}",
                v.len()
            )));
        }
        let _gate = self.pass_gate();
        let tx = super::begin_immediate(&self.conn).map_err(|e| classify(db_err(e)))?;
        let state: Option<(String, i64)> = tx
            .query_row(
                "SELECT model, done_through FROM embed_state WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .db()?;
        if state != work.state {
            return Ok(0);
        }
        if !matches!(&state, Some((m, _)) if *m == work.model) {
            tx.execute_batch("DELETE FROM message_vectors; DELETE FROM embed_pending;")
                .db()?;
            tx.execute(
                "INSERT OR REPLACE INTO embed_state (id, model, done_through) VALUES (1, ?1, 0)",
                [&work.model],
            )
            .db()?;
        }
        {
            let mut unpend = tx
                .prepare_cached("DELETE FROM embed_pending WHERE id = ?1")
                .db()?;
            for id in &work.pending {
                unpend.execute([id]).db()?;
            }
            let mut now = tx
                .prepare_cached(
                    "SELECT kind, substr(body, 1, ?2), substr(memtrail_tools(tools_text, parts_zdict), 1, ?3) FROM messages WHERE id = ?1",
                )
                .db()?;
            let mut del = tx
                .prepare_cached("DELETE FROM message_vectors WHERE message_id = ?1")
                .db()?;
            let mut ins = tx
                .prepare_cached(
                    "INSERT INTO message_vectors (message_id, chunk, scale, vec) VALUES (?1, ?2, ?3, ?4)",
                )
                .db()?;
            let mut repend = tx
                .prepare_cached("INSERT OR IGNORE INTO embed_pending (id) VALUES (?1)")
                .db()?;
            let mut vecs = vectors.iter();
            for (id, text) in &work.items {
                let current: Option<Option<String>> = now
                    .query_row(params![id, EMBED_BODY_CHARS, EMBED_TOOLS_CHARS], |r| {
                        let (k, b, t): (String, String, String) = (r.get(0)?, r.get(1)?, r.get(2)?);
                        Ok(embed_text(&k, &b, &t))
                    })
                    .optional()
                    .db()?;
                let encoded = if text.is_some() { vecs.next() } else { None };
                let Some(current) = current else {
                    continue; // deleted meanwhile
                };
                del.execute([id]).db()?;
                if current != *text {
                    // Rewritten since it was read: embedded again at a later batch.
                    repend.execute([id]).db()?;
                    continue;
                }
                for (i, v) in encoded.into_iter().flatten().enumerate() {
                    let (scale, q) = quantize(v);
                    let bytes: Vec<u8> = q.iter().map(|&b| b as u8).collect();
                    ins.execute(params![id, i as i64, scale as f64, bytes])
                        .db()?;
                }
            }
        }
        tx.execute(
            "UPDATE embed_state SET done_through = ?1 WHERE id = 1",
            [work.new_through],
        )
        .db()?;
        tx.commit().map_err(|e| classify(db_err(e)))?;
        Ok(work.taken)
    }

    /// Every vector of `model` (none when the store's vectors are another model's), for a
    /// brute-force scan; vectors of another length than `dim` are skipped.
    ///
    /// Errors: store errors.
    pub fn load_vectors(&self, model: &str, dim: usize) -> Result<VectorSet> {
        self.load_vectors_after(model, dim, 0)
    }

    /// The vectors of `model` for messages with an id above `after` (a server's index catching
    /// up with the backlog, see [`Store::embed_progress`]), as [`Store::load_vectors`].
    ///
    /// Errors: store errors.
    pub fn load_vectors_after(&self, model: &str, dim: usize, after: i64) -> Result<VectorSet> {
        let mut set = VectorSet {
            dim,
            ..VectorSet::default()
        };
        if self.embed_model()?.as_deref() != Some(model) {
            return Ok(set);
        }
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT message_id, scale, vec FROM message_vectors WHERE message_id > ?1",
            )
            .db()?;
        let mut rows = stmt.query([after]).db()?;
        while let Some(r) = rows.next().db()? {
            let blob = r.get_ref(2).db()?.as_blob().unwrap_or(&[]);
            if blob.len() != dim {
                continue;
            }
            set.ids.push(r.get(0).db()?);
            set.scales.push(r.get::<_, f64>(1).db()? as f32);
            set.data.extend(blob.iter().map(|&b| b as i8));
        }
        Ok(set)
    }

    /// How many vectors of messages with an id above `after` the store holds.
    ///
    /// Errors: store errors.
    pub fn count_vectors_after(&self, after: i64) -> Result<i64> {
        self.conn
            .prepare_cached("SELECT count(*) FROM message_vectors WHERE message_id > ?1")
            .db()?
            .query_row([after], |r| r.get(0))
            .db()
    }

    /// The model whose vectors the store holds and the id through which every message was
    /// taken off the backlog (`embed_state`); `None` before any vector.
    ///
    /// Errors: store errors.
    pub fn embed_progress(&self) -> Result<Option<(String, i64)>> {
        self.conn
            .prepare_cached("SELECT model, done_through FROM embed_state WHERE id = 1")
            .db()?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .db()
    }
}

impl super::Writer<'_> {
    /// Delete every vector of the store and its embedding state (`memtrail models remove
    /// --vectors`): the next `memtrail embed` starts the backlog from the first message.
    /// Returns how many messages had vectors.
    ///
    /// Errors: store errors (nothing is deleted then).
    pub fn drop_vectors(&self) -> Result<i64> {
        let messages: i64 = self
            .tx
            .query_row(
                "SELECT count(*) FROM (SELECT DISTINCT message_id FROM message_vectors)",
                [],
                |r| r.get(0),
            )
            .db()?;
        self.tx
            .execute_batch(
                "DELETE FROM message_vectors; DELETE FROM embed_pending; DELETE FROM embed_state;",
            )
            .db()?;
        Ok(messages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantize_maps_the_largest_to_127() {
        let (s, q) = quantize(&[0.5, -0.25, 0.0, 0.1]);
        assert_eq!(s, 0.5 / 127.0);
        // -0.25 / (0.5/127) = -63.5 → -64 (round half away from zero); 0.1 → 25.4 → 25.
        assert_eq!(q, vec![127, -64, 0, 25]);
        assert_eq!(quantize(&[0.0, 0.0]), (0.0, vec![0, 0]));
    }

    #[test]
    fn what_is_embedded() {
        assert_eq!(
            embed_text("text", "  fix the bug ", ""),
            Some("fix the bug".into())
        );
        assert_eq!(embed_text("thinking", "hmm", ""), None);
        assert_eq!(embed_text("text", " ", ""), None);
        assert_eq!(
            embed_text("tool_call", "", "Bash ls -la \n\ntotal 8\ndrwx a\n"),
            Some("Bash ls -la\ntotal 8".into())
        );
        assert_eq!(
            embed_text("tool_result", "", "error[E0382]: moved\nmore"),
            Some("error[E0382]: moved".into())
        );
        let long = "x".repeat(500);
        assert_eq!(
            embed_text("tool_call", "Let me look.", &long),
            Some(format!("Let me look.\n{}", "x".repeat(200)))
        );
    }
}
