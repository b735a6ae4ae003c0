//! Full-text lexemes computed by memtrail (migration 3; docs/postgres.md, "Full text"): the
//! `tsv` column of `messages` is written by the pushing machine, and queries are compiled to
//! `tsquery` literals of the same lexemes, so that PostgreSQL never parses or stems text.
//!
//! Why on the client: computing `to_tsvector` (with the punctuation split) cost PostgreSQL
//! ~4 MB/s of text on one core, most of a first sync's time (docs/benchmarks.md); the same
//! work here runs beside PostgreSQL's and goes over the wire in `tsvector`'s binary form,
//! which PostgreSQL reads ~3× faster than the text form.
//!
//! The rule (the one migration 2's `memtrail` text search configuration applied, so rows
//! written by either agree):
//! - a **token** is a maximal run of letters and digits (Unicode `Alphabetic` or `Numeric`):
//!   every other character, ASCII punctuation included, separates tokens, so `parse_config`,
//!   `config.rs` and `src/main.rs` are found by each of their parts and, as a phrase of its
//!   parts, by the whole;
//! - its **lexeme** is the token lower-cased; a token of ASCII letters only is then stemmed by
//!   the original Porter algorithm (Snowball's `porter`, the stemmer of PostgreSQL's
//!   `snowball` template and of SQLite FTS5's `porter` tokenizer): `news` → `new`;
//! - positions count tokens from 1 (capped at 16,383, PostgreSQL's largest); a message's
//!   vector is its prose (weight A, the first 100,000 characters), then its tool calls
//!   (weight B, the first 100,000 characters, positions after the prose's), then its CJK
//!   characters (weight C, the first 50,000 characters of the `cjk` column, not stemmed), as
//!   `setweight(…, 'A') || setweight(…, 'B') || setweight(…, 'C')` concatenates them.
//!
//! Binary form (PostgreSQL's `tsvectorsend`/`tsvectorrecv`, src/backend/utils/adt/tsvector.c):
//! an `int32` count of lexemes, then per lexeme, in byte order: its UTF-8 bytes and a NUL, a
//! `uint16` count of positions, and each position as a `uint16` (weight in the top two bits:
//! A = 3, B = 2, C = 1, D = 0; the position in the low 14), strictly increasing.

use std::borrow::Cow;
use std::collections::HashMap;
use std::error::Error as StdError;

use bytes::{BufMut, BytesMut};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

/// The characters of a message's prose (and, separately, of its tool calls) that are indexed.
pub const INDEXED_CHARS: usize = 100_000;
/// The characters of a message's `cjk` column that are indexed.
pub const INDEXED_CJK_CHARS: usize = 50_000;
/// PostgreSQL's largest position (`MAXENTRYPOS - 1`): later tokens share it.
const MAX_POSITION: u32 = 16_383;
/// PostgreSQL's most positions of one lexeme (`MAXNUMPOS`): later ones are dropped.
const MAX_POSITIONS: usize = 256;
/// PostgreSQL's longest lexeme in bytes (`MAXSTRLEN`, 2 KiB - 1): a longer token is not indexed.
pub const MAX_LEXEME_BYTES: usize = 2047;

/// A weight of a `tsvector` position (`setweight`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weight {
    /// Prose (rank weight 1.0).
    A = 3,
    /// Tool calls (rank weight 0.4).
    B = 2,
    /// CJK characters (rank weight 0.8).
    C = 1,
}

/// Whether `c` is part of a token (a letter or a digit, as Unicode defines them).
pub fn is_token_char(c: char) -> bool {
    c.is_alphanumeric()
}

/// The tokens of `text` with their byte offsets, in order (see the module's rule).
pub fn tokens(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let bytes = text.as_bytes();
    let mut i = 0;
    // Whether the character at `i` is part of a token, and its length in bytes.
    let at = move |i: usize| -> (bool, usize) {
        let b = bytes[i];
        if b < 0x80 {
            (b.is_ascii_alphanumeric(), 1)
        } else {
            let c = text[i..].chars().next().unwrap_or(' ');
            (is_token_char(c), c.len_utf8())
        }
    };
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let (tok, n) = at(i);
            if tok {
                break;
            }
            i += n;
        }
        if i >= bytes.len() {
            return None;
        }
        let start = i;
        while i < bytes.len() {
            let (tok, n) = at(i);
            if !tok {
                break;
            }
            i += n;
        }
        Some((start, &text[start..i]))
    })
}

/// The lexeme of one token: lower-cased, and Porter-stemmed when it is ASCII letters only (a
/// stem that would be empty keeps the word: `s` stays `s`, as PostgreSQL's dictionary keeps it).
pub fn lexeme(token: &str) -> String {
    if token.bytes().all(|b| b.is_ascii_alphabetic()) {
        let lower = token.to_ascii_lowercase();
        match stemmer().stem(&lower) {
            Cow::Owned(s) if !s.is_empty() => s,
            Cow::Borrowed(s) if !s.is_empty() && s.len() < lower.len() => s.to_string(),
            _ => lower,
        }
    } else {
        token.to_lowercase()
    }
}

fn stemmer() -> &'static waken_snowball::Stemmer {
    static STEMMER: std::sync::OnceLock<waken_snowball::Stemmer> = std::sync::OnceLock::new();
    STEMMER.get_or_init(|| waken_snowball::Algorithm::Porter.stemmer())
}

/// The first `n` characters of `s`.
fn first_chars(s: &str, n: usize) -> &str {
    if s.len() <= n {
        return s;
    }
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// A `tsvector`, built here and sent to PostgreSQL in its binary form ([`ToSql`] for the
/// `tsvector` type; kept encoded, see the module's "Binary form"). Lexemes in byte order, each
/// with its weighted positions increasing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TsVector {
    lexemes: usize,
    /// The binary form after the count: per lexeme its bytes, a NUL, the count of positions,
    /// the positions (big-endian).
    encoded: Vec<u8>,
}

/// Most lexemes of the per-thread lexicon before it is emptied (between two vectors).
const LEXICON_MAX: usize = 1 << 17;

type Fast = foldhash::fast::RandomState;

/// Token (as written) → lexeme number, and the lexemes, each once (`Parse` and `parsing`
/// share `pars`): most tokens of a corpus repeat, and stemming was most of the cost of a
/// vector.
#[derive(Default)]
struct Lexicon {
    by_token: HashMap<Box<str>, u32, Fast>,
    by_lexeme: HashMap<Box<str>, u32, Fast>,
    lexemes: Vec<Box<str>>,
    /// Per lexeme number: its group in the vector being built (from 1; 0 when none), reset to
    /// 0 after each vector.
    slot: Vec<u32>,
    /// Bytes of the tokens and lexemes held (bounded by [`LEXICON_BYTES`]).
    bytes: usize,
}

/// Most bytes of tokens and lexemes the per-thread lexicon holds before it is emptied (between
/// two vectors): text of many long distinct tokens cannot grow it without bound.
const LEXICON_BYTES: usize = 32 << 20;

impl Lexicon {
    fn id(&mut self, token: &str) -> u32 {
        if let Some(&id) = self.by_token.get(token) {
            return id;
        }
        let lex = lexeme(token).into_boxed_str();
        self.bytes += token.len() + lex.len();
        let id = match self.by_lexeme.get(&lex) {
            Some(&id) => id,
            None => {
                let id = self.lexemes.len() as u32;
                self.lexemes.push(lex.clone());
                self.slot.push(0);
                self.by_lexeme.insert(lex, id);
                id
            }
        };
        self.by_token.insert(token.into(), id);
        id
    }
}

thread_local! {
    static LEXICON: std::cell::RefCell<Lexicon> = std::cell::RefCell::new(Lexicon::default());
}

impl TsVector {
    /// The vector of a message (see the module's rule): `body` weight A, `tools` weight B,
    /// `cjk` (one CJK character per token, as the `cjk` column holds them) weight C.
    pub fn message(body: &str, tools: &str, cjk: Option<&str>) -> TsVector {
        LEXICON.with(|l| {
            let mut lexicon = l.borrow_mut();
            if lexicon.by_token.len() >= LEXICON_MAX || lexicon.bytes >= LEXICON_BYTES {
                *lexicon = Lexicon::default();
            }
            // (lexeme number, weighted position), in token order.
            let mut pairs: Vec<(u32, u16)> = Vec::new();
            let mut last = push_text(
                &mut lexicon,
                &mut pairs,
                first_chars(body, INDEXED_CHARS),
                Weight::A,
                0,
            );
            last = push_text(
                &mut lexicon,
                &mut pairs,
                first_chars(tools, INDEXED_CHARS),
                Weight::B,
                last,
            );
            if let Some(c) = cjk {
                push_text(
                    &mut lexicon,
                    &mut pairs,
                    first_chars(c, INDEXED_CJK_CHARS),
                    Weight::C,
                    last,
                );
            }
            // Group by lexeme in one pass (each one's positions stay in token order): `slot`
            // numbers the groups of this message from 1, by lexeme number; then order the
            // groups by the lexemes' bytes.
            let Lexicon { lexemes, slot, .. } = &mut *lexicon;
            let mut group_of: Vec<u32> = Vec::with_capacity(pairs.len());
            let mut groups: Vec<(u32, usize)> = Vec::new();
            for &(id, _) in &pairs {
                let g = &mut slot[id as usize];
                if *g == 0 {
                    groups.push((id, 0));
                    *g = groups.len() as u32;
                }
                let g = *g as usize - 1;
                groups[g].1 += 1;
                group_of.push(g as u32);
            }
            // Each group's positions, in token order, at `start[g]..start[g + 1]`.
            let mut start: Vec<usize> = Vec::with_capacity(groups.len() + 1);
            let mut at = 0;
            for &(id, n) in &groups {
                slot[id as usize] = 0;
                start.push(at);
                at += n;
            }
            start.push(at);
            let mut fill = start.clone();
            let mut positions: Vec<u16> = vec![0; pairs.len()];
            for (&(_, wp), &g) in pairs.iter().zip(&group_of) {
                positions[fill[g as usize]] = wp;
                fill[g as usize] += 1;
            }
            let mut order: Vec<u32> = (0..groups.len() as u32).collect();
            order.sort_unstable_by(|&a, &b| {
                lexemes[groups[a as usize].0 as usize]
                    .as_bytes()
                    .cmp(lexemes[groups[b as usize].0 as usize].as_bytes())
            });
            let mut encoded = Vec::with_capacity(pairs.len() * 2 + groups.len() * 12);
            let mut ps: Vec<u16> = Vec::new();
            for &g in &order {
                ps.clear();
                let g = g as usize;
                for &wp in &positions[start[g]..start[g + 1]] {
                    // A position already taken (at the cap) is not repeated.
                    if ps.len() < MAX_POSITIONS
                        && ps.last().is_none_or(|p| p & 0x3fff != wp & 0x3fff)
                    {
                        ps.push(wp);
                    }
                }
                encoded.extend_from_slice(lexemes[groups[g].0 as usize].as_bytes());
                encoded.push(0);
                encoded.extend_from_slice(&(ps.len() as u16).to_be_bytes());
                for p in &ps {
                    encoded.extend_from_slice(&p.to_be_bytes());
                }
            }
            TsVector {
                lexemes: groups.len(),
                encoded,
            }
        })
    }

    /// The lexemes and their weighted positions, decoded.
    fn entries(&self) -> Vec<(&str, Vec<u16>)> {
        let mut out = Vec::with_capacity(self.lexemes);
        let mut b = &self.encoded[..];
        while let Some(nul) = b.iter().position(|&x| x == 0) {
            let lex = std::str::from_utf8(&b[..nul]).unwrap_or_default();
            let n = u16::from_be_bytes([b[nul + 1], b[nul + 2]]) as usize;
            let ps = (0..n)
                .map(|i| u16::from_be_bytes([b[nul + 3 + 2 * i], b[nul + 4 + 2 * i]]))
                .collect();
            out.push((lex, ps));
            b = &b[nul + 3 + 2 * n..];
        }
        out
    }

    /// The number of lexemes.
    pub fn len(&self) -> usize {
        self.lexemes
    }

    /// The size of the binary form in bytes (what is sent to PostgreSQL, about what the
    /// vector adds to the full-text index's pending list).
    pub fn encoded_len(&self) -> usize {
        4 + self.encoded.len()
    }

    /// Whether the vector has no lexeme.
    pub fn is_empty(&self) -> bool {
        self.lexemes == 0
    }

    /// PostgreSQL's text form of the vector (`'lexeme':1A,5B …`), as `tsv::text` prints it.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (i, (lex, ps)) in self.entries().iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            out.push('\'');
            for c in lex.chars() {
                if c == '\'' || c == '\\' {
                    out.push(c);
                }
                out.push(c);
            }
            out.push('\'');
            for (j, p) in ps.iter().enumerate() {
                out.push(if j == 0 { ':' } else { ',' });
                out.push_str(&(p & 0x3fff).to_string());
                match p >> 14 {
                    3 => out.push('A'),
                    2 => out.push('B'),
                    1 => out.push('C'),
                    _ => {}
                }
            }
        }
        out
    }
}

/// Appends (lexeme number, weighted position) for each token of `text` with weight `w`, at
/// positions after `offset`; returns the last position used (`offset` when `text` has no
/// token). A token whose lexeme is over [`MAX_LEXEME_BYTES`] is left out.
fn push_text(
    lexicon: &mut Lexicon,
    pairs: &mut Vec<(u32, u16)>,
    text: &str,
    w: Weight,
    offset: u32,
) -> u32 {
    let mut pos = offset;
    for (_, tok) in tokens(text) {
        // A token this long has a lexeme over the limit (lower-casing never halves a length):
        // left out before the lexicon sees it.
        if tok.len() > 2 * MAX_LEXEME_BYTES {
            continue;
        }
        let id = lexicon.id(tok);
        if lexicon.lexemes[id as usize].len() > MAX_LEXEME_BYTES {
            continue;
        }
        pos = (pos + 1).min(MAX_POSITION);
        pairs.push((id, ((w as u16) << 14) | pos as u16));
    }
    pos
}

impl ToSql for TsVector {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        out.put_i32(i32::try_from(self.lexemes)?);
        out.put_slice(&self.encoded);
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::TS_VECTOR
    }

    to_sql_checked!();
}

/// A lexeme a query looks for: matched by a token with that lexeme, or, for a `prefix`, by a
/// token whose lexeme starts with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryLexeme {
    pub lexeme: String,
    pub prefix: bool,
    /// The query term it belongs to and its place in the term's phrase (`HashMap::new` is
    /// term t, parts 0 and 1): the matches of a phrase's consecutive parts are marked as one
    /// run, as SQLite's snippet marks a phrase.
    pub term: usize,
    pub part: usize,
}

impl QueryLexeme {
    fn matches(&self, lexeme: &str) -> bool {
        if self.prefix {
            lexeme.starts_with(&self.lexeme)
        } else {
            lexeme == self.lexeme
        }
    }
}

/// A snippet of `text` for a query: a window of at most `window` tokens holding the most
/// distinct query lexemes (then the most matches; the earliest on a tie), its matches centred
/// as far as the text allows, each matching token between `start` and `end` (the text between
/// tokens as written), with `…` where text was cut before or after. `None` when no token of
/// `text` matches (the caller shows the start of the text, or reads more of it).
pub fn snippet(
    text: &str,
    terms: &[QueryLexeme],
    window: usize,
    start: char,
    end: char,
) -> Option<String> {
    let window = window.max(1);
    let toks: Vec<(usize, &str)> = tokens(text).collect();
    // For each token, which of `terms` (its index) it matches, if any.
    let hit: Vec<Option<usize>> = toks
        .iter()
        .map(|(_, t)| {
            let l = lexeme(t);
            terms.iter().position(|q| q.matches(&l))
        })
        .collect();
    // Whether token i and token i + 1 are consecutive parts of one phrase (one marked run).
    let joined = |i: usize| match (hit[i], hit.get(i + 1).copied().flatten()) {
        (Some(a), Some(b)) => terms[a].term == terms[b].term && terms[b].part == terms[a].part + 1,
        _ => false,
    };
    let first = hit.iter().position(Option::is_some)?;
    // The best window starting at a match.
    let mut best = (first, 0usize, 0usize);
    for s in first..toks.len() {
        if hit[s].is_none() {
            continue;
        }
        let span = &hit[s..(s + window).min(toks.len())];
        let mut seen = vec![false; terms.len()];
        let mut total = 0;
        for t in span.iter().flatten() {
            seen[*t] = true;
            total += 1;
        }
        let distinct = seen.iter().filter(|&&x| x).count();
        if (distinct, total) > (best.1, best.2) {
            best = (s, distinct, total);
        }
    }
    // Centre the window's matches: move its start back by half the room after them.
    let s = best.0;
    let last_hit = (s..(s + window).min(toks.len()))
        .rev()
        .find(|&i| hit[i].is_some())
        .unwrap_or(s);
    let room = window.saturating_sub(last_hit - s + 1);
    let mut from = s.saturating_sub(room / 2);
    let to = (from + window).min(toks.len());
    from = to.saturating_sub(window).min(from);
    // The text before the first token and after the last is kept when the window reaches
    // the text's start or end, as SQLite's snippet keeps it.
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    } else {
        out.push_str(&text[..toks[0].0]);
    }
    for i in from..to {
        let (at, tok) = toks[i];
        if i > from {
            let prev_end = toks[i - 1].0 + toks[i - 1].1.len();
            out.push_str(&text[prev_end..at]);
        }
        let run_starts = hit[i].is_some() && !(i > from && joined(i - 1));
        let run_ends = hit[i].is_some() && !(i + 1 < to && joined(i));
        if run_starts {
            out.push(start);
        }
        out.push_str(tok);
        if run_ends {
            out.push(end);
        }
    }
    if to < toks.len() {
        out.push('…');
    } else {
        let (at, tok) = toks[toks.len() - 1];
        out.push_str(&text[at + tok.len()..]);
    }
    Some(out)
}

/// The first `window` tokens of `text` (the text between them as written), with `…` when
/// more follows: the snippet of a text no query token was found in.
pub fn leading_snippet(text: &str, window: usize) -> String {
    let toks: Vec<(usize, &str)> = tokens(text).take(window.max(1) + 1).collect();
    let Some(&(first, _)) = toks.first() else {
        return String::new();
    };
    let shown = &toks[..toks.len().min(window.max(1))];
    let (at, tok) = shown[shown.len() - 1];
    let mut out = text[first..at + tok.len()].to_string();
    if toks.len() > shown.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_split_at_every_non_alphanumeric() {
        let t: Vec<(usize, &str)> = tokens("parse_config(src/main.rs) — café x").collect();
        assert_eq!(
            t,
            vec![
                (0, "parse"),
                (6, "config"),
                (13, "src"),
                (17, "main"),
                (22, "rs"),
                (30, "café"),
                (36, "x")
            ]
        );
        assert_eq!(tokens("  ,.; ").count(), 0);
    }

    #[test]
    fn lexemes_stem_ascii_words_only() {
        assert_eq!(lexeme("Configuring"), "configur");
        assert_eq!(lexeme("news"), "new");
        assert_eq!(lexeme("generously"), "gener");
        assert_eq!(lexeme("s"), "s");
        assert_eq!(lexeme("abc123"), "abc123");
        assert_eq!(lexeme("ÉCOLE"), "école");
        assert_eq!(lexeme("Straße"), "straße");
    }

    #[test]
    fn text_form_matches_postgresql() {
        // setweight(to_tsvector('memtrail', memtrail_split('Parse the config')), 'A')
        //   || setweight(to_tsvector('memtrail', memtrail_split('config.rs')), 'B')
        //   || setweight(to_tsvector('simple', '日 本'), 'C')
        // in PostgreSQL 15 prints this.
        let v = TsVector::message("Parse the config", "config.rs", Some("日 本"));
        assert_eq!(
            v.to_text(),
            "'config':3A,4B 'pars':1A 'r':5B 'the':2A '日':6C '本':7C"
        );
    }

    #[test]
    fn positions_cap_at_16383_and_256_per_lexeme() {
        let body = "a ".repeat(20_000);
        let v = TsVector::message(&body, "", None);
        assert_eq!(v.len(), 1);
        let entries = v.entries();
        let ps = &entries[0].1;
        assert_eq!(ps.len(), 256);
        assert_eq!(ps[255] & 0x3fff, 256);
        let body = format!("{}b c", "a ".repeat(20_000));
        let v = TsVector::message(&body, "", None);
        // `b` and `c` both sit at the last position.
        assert_eq!(v.to_text().split(' ').nth(1), Some("'b':16383A"));
        assert_eq!(v.to_text().split(' ').nth(2), Some("'c':16383A"));
    }

    #[test]
    fn tokens_of_one_lexeme_share_its_entry() {
        let v = TsVector::message("Parse parsing PARSE", "parse", None);
        assert_eq!(v.to_text(), "'pars':1A,2A,3A,4B");
    }

    fn q(l: &str, prefix: bool, term: usize, part: usize) -> QueryLexeme {
        QueryLexeme {
            lexeme: l.into(),
            prefix,
            term,
            part,
        }
    }

    #[test]
    fn snippets_centre_the_best_window() {
        let text =
            "one two three. Parsing the config failed: config.rs line 4, then four five six seven";
        // `pars` and `config` both inside 6 tokens: the window starting at `Parsing`, its
        // matches centred.
        let terms = [q("pars", false, 0, 0), q("config", false, 1, 0)];
        let s = snippet(text, &terms, 6, '[', ']').unwrap();
        assert_eq!(s, "…[Parsing] the [config] failed: [config].rs…");
        // A prefix; the text's start needs no ellipsis.
        let s = snippet(text, &[q("tw", true, 0, 0)], 3, '[', ']').unwrap();
        assert_eq!(s, "one [two] three…");
        assert_eq!(
            snippet(text, &[q("absent", false, 0, 0)], 6, '[', ']'),
            None
        );
        // A phrase's parts in a row are one run; the text's end is kept whole.
        let terms = [q("config", false, 0, 0), q("r", false, 0, 1)];
        let s = snippet("(see config.rs!)", &terms, 16, '[', ']').unwrap();
        assert_eq!(s, "(see [config.rs]!)");
        // Not in a row (`rs config`): two runs.
        let s = snippet("rs config", &terms, 16, '[', ']').unwrap();
        assert_eq!(s, "[rs] [config]");
        assert_eq!(leading_snippet(text, 3), "one two three…");
        assert_eq!(leading_snippet("  ab, cd ", 5), "ab, cd");
        assert_eq!(leading_snippet(" ,; ", 5), "");
    }

    #[test]
    fn tokens_over_postgresqls_limit_are_left_out_without_a_position() {
        let long = "x".repeat(2048);
        let over = "y".repeat(5000);
        let v = TsVector::message(&format!("a {long} {over} b"), "", None);
        assert_eq!(v.to_text(), "'a':1A 'b':2A");
        let ok = "z".repeat(2047);
        let v = TsVector::message(&ok, "", None);
        assert_eq!(v.len(), 1);
    }

    #[test]
    fn binary_form() {
        let v = TsVector::message("b a", "", None);
        let mut out = BytesMut::new();
        v.to_sql(&Type::TS_VECTOR, &mut out).unwrap();
        assert_eq!(
            &out[..],
            &[0, 0, 0, 2, b'a', 0, 0, 1, 0xc0, 2, b'b', 0, 0, 1, 0xc0, 1]
        );
    }
}
