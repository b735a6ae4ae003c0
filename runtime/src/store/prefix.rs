//! Prefix terms (`err*`) searched as the terms they stand for, when FTS5's own way costs too
//! much.
//!
//! FTS5 answers a prefix term by merging, before the first row, the doclists of every term of
//! the index that begins with it, positions included (`fts5SetupPrefixIter` in SQLite's
//! `fts5_index.c`): for `err*` on the 1 GB bench store (271 terms, "error" among them) that
//! merge is ~150 ms, and a search pays it three times (the walk, the document frequency, the
//! snippets): 509 ms. Searched as `("error" OR "errno" OR …)`, FTS5 walks each term's doclist
//! newest first and stops at the candidates' bound, as for any word.
//!
//! [`expand`] rewrites the prefix terms of an FTS5 query ([`crate::query::fts_query`]'s form)
//! that span many index pages into an `OR` of the index terms that begin with them, and names
//! each group to `memtrail_bm25` ([`super::rank`]), which counts a group as the one phrase it
//! replaces: its frequency in a row is the sum of its terms', its document frequency the rows
//! holding any of them. The scores, and so the hits, are those of the prefix term (checked by
//! the tests against FTS5's own prefix query).
//!
//! The terms are read from FTS5's index itself, whose format is documented in
//! `fts5_index.c` ("Segment leaves", "PAGE FORMAT"): each segment's leaf pages are rows of
//! `messages_fts_data` (id `segid << 37 | pgno`), and `messages_fts_idx` holds, per segment,
//! a key at most the first term of each leaf page that holds a term (its `pgno` column is the
//! page number shifted left by one, the low bit a flag: `fts5WriteFlushBtree`). A leaf page begins with
//! two big-endian 16-bit fields (the first rowid's offset, the footer's offset); the footer is
//! a varint per term on the page, its offset (delta-encoded); the first term of a page is
//! `varint size, bytes`, each next one `varint shared, varint new, bytes` (shared with the term
//! before). Terms of the main index begin with the byte `0`. Anything that does not read as
//! that format (an offset out of bounds, a page that does not parse) leaves the query as it
//! was: FTS5's own prefix query is always right, only slower. A page the index names but the
//! data table lacks is skipped: an incremental merge trims the pages it has taken from its
//! input segments, whose terms then live on in its output.
//!
//! FTS5 tokenizes a query's words (the store's tokenizer is `porter unicode61`), and the
//! Porter stemmer does not give back every stem it makes (`errorcas`, the stem of
//! `errorcase`, is stemmed again to `errorca`): each term is written as a word that the
//! tokenizer turns into exactly that term: the term itself, or the term with one of a few
//! suffixes the stemmer strips (`errorcas` + `e`). A term without one leaves the query as it was.
//!
//! A one-word prefix that the stemmer changes (`pars` → `par`, `query` → `queri`) is always
//! searched as its terms, whatever pages they span: the index terms that begin with the prefix
//! as typed, the typed word's own stem and the terms between the two ([`literal_expansion`],
//! [`exact_terms`]); when they are too many for a walk, as FTS5's prefix of a word the tokenizer
//! stems to the typed letters (`"parse"*` for `pars`) and those exact terms. FTS5 stems a
//! prefix query's word too and would look for every term that begins with the stem (`pars*`
//! finding `partners`, `key*` missing `keyboard`); the PostgreSQL store searches such a prefix
//! the same way (`pg/src/read.rs`).
//!
//! A walk searches at most [`EXPAND_MAX_TERMS`] terms of a prefix, or as many as the leaf pages
//! it spans when more (FTS5's merge costs ~0.1–0.17 ms a page, a term searched ~0.08 ms). A
//! prefix of one letter has tens of thousands of terms (`e*`: 40,639), nearly all rare (hex
//! digits, identifiers): such a wide group is searched as its frequent terms and the rare ones
//! with a row at or after the bound the frequent ones give, when those are few enough (`e*`:
//! 1,214), and as FTS5's own prefix otherwise. The snippets are asked for with the terms that
//! can be in the hits only: the frequent ones and the rare ones with a row among them.
//!
//! An excluded prefix (`-t*`) is written for the walks as a chain of exclusions, its most
//! frequent terms first ([`chained`]): FTS5 moves every term of an `OR` to each row it checks,
//! and in the chain a row meets the next terms only when the first (`the`) did not exclude it.

use super::rank::DF_SAMPLE;
use super::rank::fts5_api;
use crate::Result;
use crate::store::Db;
use rusqlite::{Connection, OptionalExtension, ffi, params};
use std::collections::BTreeSet;
use std::ffi::{c_char, c_int, c_void};

/// A prefix term is expanded when its terms' leaf pages, over all segments, are at least
/// this many (FTS5's merge costs ~0.1–0.17 ms a page on the 1 GB bench store; below this a
/// prefix is cheap enough as it is: `overfl*`, 195 pages, 4 ms).
pub const EXPAND_MIN_PAGES: i64 = 400;

/// An excluded prefix term is expanded when its terms' leaf pages are at least this many: its
/// rare terms leave the walk ([`Prefixed::exclude_rare_terms_by_rows`]), so it costs the walk
/// its frequent terms only.
pub const EXCLUDED_MIN_PAGES: i64 = 0;

/// The most terms of one prefix a walk searches: past that, the `OR` costs as much as the merge
/// (each term is a doclist FTS5 seeks in every segment, for every row walked).
pub const EXPAND_MAX_TERMS: usize = 2048;

/// The most terms of one prefix read from the index pages. A prefix with more terms than a
/// walk searches ([`EXPAND_MAX_TERMS`], or the pages it spans when more: `e*` on the 1 GB bench
/// store has 40,639 terms, 257 of them frequent) is a wide group: searched as its terms only
/// when the walk leaves its rare terms out ([`Keep::Since`]) and few enough are left; else as
/// FTS5's own prefix.
pub const EXPAND_MAX_READ_TERMS: usize = 131_072;

/// The most `NOT`s the chains of one query's walk add ([`chained`]): FTS5 refuses an expression
/// deeper than 256 (`SQLITE_FTS5_MAX_EXPR_DEPTH`), each chunk past a chain's first is one level
/// more, and a query holds at most 32 terms. A chain that would pass it ends with one chunk of
/// all its other terms; past it, an excluded group is one `OR`.
pub const CHAIN_MAX_NOTS: usize = 128;

/// Suffixes tried, in order, to make a word that the tokenizer stems to a given term.
const SUFFIXES: &[&str] = &[
    "", "e", "s", "ed", "es", "ing", "al", "er", "ate", "ness", "ation", "ity", "ive", "ize",
    "ence", "ance", "ment", "ful", "ous", "li", "y",
];

/// An FTS5 query with its expanded prefix terms, as one search statement takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expanded {
    /// The query text for `MATCH`.
    pub query: String,
    /// The groups for `memtrail_bm25`: `first:len:counted` per group, `,`-separated (empty for
    /// none): phrases `first .. first + len` are one group, whose first `counted` phrases'
    /// rows FTS5 counts; the others' are in [`Expanded::samples`].
    pub groups: String,
    /// Per group, in order: the number of rows (`u32`, little-endian), then the rows (`i64`
    /// each, little-endian, ascending): the smallest [`super::rank::DF_SAMPLE`] rows holding
    /// a term of the group whose rows were all read from the index pages (a term whose
    /// doclist lies within one page), every such term of the group, searched or not.
    pub samples: Vec<u8>,
    /// The rows of each rare term written (one whose every row the index pages gave), for
    /// `memtrail_bm25` to look for a phrase's positions only in the rows that hold it: an
    /// `i64` floor, then per such phrase its number (`u32`), its count of rows (`u32`) and
    /// those rows (`i64` each, ascending), the ones at or after the floor (all
    /// little-endian). A row below the floor is looked for in every phrase. `e*` on the 1 GB
    /// bench store writes 1,241 phrases, 984 of them rare, and a row holds a few of them.
    pub rare_rows: Vec<u8>,
    /// Rows no match of the query may be, as a bitmap over their span: `(lo, bits)`, bit `i`
    /// (bit `i % 8` of byte `i / 8`) row `lo + i` ([`super::rank::SCOPE_FUNCTION`]'s form).
    /// The rows of the rare terms taken out of excluded groups
    /// ([`Prefixed::exclude_rare_terms_by_rows`]); `None` when none were.
    pub excluded_rows: Option<(i64, Vec<u8>)>,
}

/// One index term of an expanded prefix.
#[derive(Debug, Clone)]
struct Term {
    /// The index term.
    term: String,
    /// A word the tokenizer stems to exactly the term; `None` until looked for (a rare term of
    /// a wide group: [`Prefixed::find_words`]), or when there is none.
    word: Option<String>,
    /// Every row of the term, ascending, when they were read from the index pages (a rare
    /// term); empty for a term with a doclist over several pages or a deletion mark in it (a
    /// frequent term: FTS5 counts its rows).
    rows: Vec<i64>,
    /// The leaf pages a frequent term's doclist spans, over every segment (0 for a term whose
    /// rows were read, and for one not read from the pages): how frequent it is, roughly.
    pages: u32,
}

impl Term {
    /// Whether its rows were not read from the pages (a doclist holds at least one row).
    fn frequent(&self) -> bool {
        self.rows.is_empty()
    }
}

/// A word as an FTS5 phrase: in double quotes, a quote inside doubled.
fn quoted(word: &str) -> String {
    format!("\"{}\"", word.replace('"', "\"\""))
}

/// The terms of one expanded prefix.
#[derive(Debug, Clone)]
struct Group {
    /// The prefix term as the query wrote it (`"err"*`), searched so when the group is wide
    /// and its rare terms are not left out.
    raw: String,
    /// How many phrases `raw` holds (1 but for [`literal_expansion`]'s).
    raw_phrases: usize,
    /// The letters every index term of the group begins with (the prefix's token, or for
    /// [`literal_expansion`] the letters as typed).
    begins: String,
    /// More terms than `limit`: searched as its terms only by a walk that leaves the rare ones
    /// out ([`Keep::Since`]), and only when at most `limit` are left, each with its word.
    wide: bool,
    /// After a `NOT`: a walk without some of its terms matches more rows, not fewer, so its
    /// rare terms are never left out ([`Prefixed::can_prune`]) unless their rows are
    /// (`rows_out`).
    excluded: bool,
    /// An excluded group whose rare terms the walks leave out, their rows left out instead
    /// ([`Prefixed::exclude_rare_terms_by_rows`]): only the snippets' query
    /// ([`Keep::Holding`]) writes them, those in a hit's row (a hit of another alternative).
    rows_out: bool,
    /// Excluded by a `NOT` right before it (not `NOT (`, where it is one operand of an `OR`):
    /// written as a chain of exclusions, most frequent terms first ([`chained`]).
    chained: bool,
    /// The most terms searched: [`EXPAND_MAX_TERMS`], or the leaf pages the prefix spans when
    /// more (FTS5's merge costs ~0.1–0.17 ms a page; each term searched, ~0.08 ms).
    limit: usize,
    terms: Vec<Term>,
    /// The smallest [`super::rank::DF_SAMPLE`] rows of the terms whose rows were read, ascending.
    sample: Vec<i64>,
}

#[derive(Debug, Clone)]
enum Seg {
    /// Query text and how many phrases it holds.
    Text(String, usize),
    Group(Group),
}

/// Which terms of each group a rendering searches ([`Prefixed::render`]).
#[derive(Clone, Copy)]
pub enum Keep<'a> {
    /// Every term.
    All,
    /// Only the terms whose rows were not all read (the frequent ones).
    Frequent,
    /// The frequent terms and every term with a row at or after `from` that `admits` (when
    /// given) lets through: a row the search's filter admits (its candidates are such rows).
    Since {
        from: i64,
        admits: Option<&'a dyn Fn(i64) -> bool>,
    },
    /// The frequent terms and every term in one of these rows (ascending): the terms that can
    /// be in these rows, for their snippets.
    Holding(&'a [i64]),
}

/// An FTS5 query whose prefix terms may be expanded ([`expand`]): rendered as a whole
/// ([`Keep::All`]), or without the terms that cannot be among a walk's candidates.
#[derive(Debug, Clone)]
pub struct Prefixed {
    segs: Vec<Seg>,
    /// The rows of the rare terms taken out of excluded groups, ascending, each once
    /// ([`Prefixed::exclude_rare_terms_by_rows`]).
    excluded_rows: Vec<i64>,
    /// The tokens of the phrases every match must hold: those outside parentheses, not
    /// excluded and not under a column filter ([`Prefixed::matches_nothing`]).
    required: Vec<String>,
}

impl Prefixed {
    /// Whether a prefix term was expanded.
    pub fn is_expanded(&self) -> bool {
        self.segs.iter().any(|s| matches!(s, Seg::Group(_)))
    }

    /// Whether a prefix term outside a `NOT` was expanded.
    pub fn has_positive_group(&self) -> bool {
        self.segs
            .iter()
            .any(|s| matches!(s, Seg::Group(g) if !g.excluded))
    }

    /// Whether [`Keep::Frequent`] and [`Keep::Since`] apply: there is a group that is not
    /// excluded, each such group has a frequent term (to walk with alone) and a term whose
    /// rows were read (to leave out), and every excluded group is written the same in every
    /// walk: its rare terms' rows left out instead ([`Prefixed::exclude_rare_terms_by_rows`]),
    /// or no rare term. (The walk with an excluded group's frequent terms alone, and nothing
    /// else, would match more rows than the query: its bound would be no bound.) Beside an
    /// excluded group, only when a group that is not is wide: the walk for the bound pays for
    /// the exclusion's `NOT` a second time, more than it saves unless the walk without it
    /// would be FTS5's own prefix (`err* -co*` 49.9 → 66.8 ms, `co* -test*` 446.7 → 75.0 ms on
    /// the 1 GB bench store, docs/benchmarks.md).
    pub fn can_prune(&self) -> bool {
        let groups = || {
            self.segs.iter().filter_map(|s| match s {
                Seg::Group(g) => Some(g),
                Seg::Text(..) => None,
            })
        };
        let excludes = groups().any(|g| g.excluded);
        groups().any(|g| !g.excluded && (g.wide || !excludes))
            && groups().all(|g| {
                if g.excluded {
                    g.rows_out || g.terms.iter().all(Term::frequent)
                } else {
                    g.terms.iter().any(Term::frequent) && !g.terms.iter().all(Term::frequent)
                }
            })
    }

    /// Look for the words of the terms of wide groups that `keep` keeps (a wide group's rare
    /// terms have none until then: tens of thousands of tokenizer calls for terms a walk
    /// mostly leaves out), when they are at most the group's limit.
    ///
    /// Errors: SQLite's, obtaining the tokenizer.
    pub fn find_words(&mut self, conn: &Connection, keep: Keep<'_>) -> Result<()> {
        let mut stemmer = None;
        for seg in &mut self.segs {
            let Seg::Group(g) = seg else { continue };
            // For the snippets ([`Keep::Holding`]), only an excluded group whose rare terms the
            // walks left out: a wide group's rare terms in the hits were found for its walk.
            let eligible = match keep {
                Keep::Holding(_) => g.rows_out,
                _ => g.wide && !g.rows_out,
            };
            if !eligible || kept(g, keep).count() > g.limit {
                continue;
            }
            let wanted: Vec<usize> = g
                .terms
                .iter()
                .enumerate()
                .filter(|(_, t)| t.word.is_none() && !t.frequent() && keeps(keep, t))
                .map(|(i, _)| i)
                .collect();
            for i in wanted {
                if stemmer.is_none() {
                    stemmer = Stemmer::new(conn)?;
                }
                let Some(st) = &stemmer else { return Ok(()) };
                let t = &mut g.terms[i];
                t.word = word_for(st, &t.term);
            }
        }
        Ok(())
    }

    /// The query with its groups' terms as `keep` says (frequent terms first in each group). A
    /// wide group is written as the prefix term it stands for unless `keep` is not
    /// [`Keep::All`] and leaves at most its limit of terms, each with its word
    /// ([`Prefixed::find_words`]).
    pub fn render(&self, keep: Keep<'_>) -> Expanded {
        let mut query = String::new();
        let mut groups: Vec<String> = Vec::new();
        let mut samples: Vec<u8> = Vec::new();
        // The rows at or after the walk's bound, or every row (see [`Expanded::rare_rows`]).
        let floor = match keep {
            Keep::Since { from, .. } => from,
            _ => i64::MIN,
        };
        let mut rare_rows: Vec<u8> = floor.to_le_bytes().to_vec();
        let mut phrase = 0usize;
        let mut nots_left = CHAIN_MAX_NOTS;
        for seg in &self.segs {
            match seg {
                Seg::Text(text, n) => {
                    query.push_str(text);
                    phrase += n;
                }
                Seg::Group(g) => {
                    // A walk's exclusion as a chain; the snippets' query as it was (FTS5
                    // marks a phrase whose iterator stands on the row, and in a chain an
                    // excluded term's may stand on a hit of another alternative).
                    let chain = g.chained && !matches!(keep, Keep::Holding(_));
                    let terms: Option<Vec<&Term>> = (!g.wide
                        || g.rows_out
                        || (!matches!(keep, Keep::All) && kept(g, keep).count() <= g.limit))
                        .then(|| {
                            let mut terms: Vec<&Term> = kept(g, keep).collect();
                            if chain {
                                // Frequent terms first still (`memtrail_bm25`'s groups count
                                // them), each kind the most frequent first.
                                terms.sort_by_key(|t| {
                                    (!t.frequent(), std::cmp::Reverse((t.pages, t.rows.len())))
                                });
                            }
                            terms
                        })
                        .filter(|terms| terms.iter().all(|t| t.word.is_some()));
                    let words: Option<Vec<String>> = terms.as_ref().map(|terms| {
                        terms
                            .iter()
                            .filter_map(|t| t.word.as_deref().map(quoted))
                            .collect()
                    });
                    // No term kept ([`Keep::Holding`]: none of the group's terms is in the
                    // hits, as in an exclusion): one term with no instance in them stands for
                    // the group (`()` is no FTS5 syntax), else FTS5's own prefix.
                    let words = match words {
                        Some(w) if w.is_empty() => g
                            .terms
                            .iter()
                            .find_map(|t| t.word.as_deref())
                            .map(|w| vec![quoted(w)]),
                        w => w,
                    };
                    let Some(words) = words else {
                        // FTS5's own prefix (one phrase, or a literal prefix's few).
                        query.push_str(&g.raw);
                        phrase += g.raw_phrases;
                        continue;
                    };
                    #[cfg(test)]
                    if g.wide && matches!(keep, Keep::Since { .. }) {
                        WIDE_SEARCHED.set(WIDE_SEARCHED.get() + 1);
                    }
                    let frequent = g.terms.iter().filter(|t| t.frequent()).count();
                    groups.push(format!("{phrase}:{}:{frequent}", words.len()));
                    // The rows of each rare term written (a term for the whole group, when
                    // none is, has none listed: it is looked for in every row).
                    for (i, t) in terms.iter().flatten().enumerate() {
                        if t.frequent() {
                            continue;
                        }
                        let newer = &t.rows[t.rows.partition_point(|&r| r < floor)..];
                        rare_rows.extend_from_slice(&((phrase + i) as u32).to_le_bytes());
                        rare_rows.extend_from_slice(&(newer.len() as u32).to_le_bytes());
                        for r in newer {
                            rare_rows.extend_from_slice(&r.to_le_bytes());
                        }
                    }
                    phrase += words.len();
                    if chain {
                        let (text, chunks) = chained(&words, nots_left + 1);
                        nots_left -= chunks - 1;
                        query.push_str(&text);
                    } else {
                        query.push('(');
                        query.push_str(&words.join(" OR "));
                        query.push(')');
                    }
                    samples.extend_from_slice(&(g.sample.len() as u32).to_le_bytes());
                    for r in &g.sample {
                        samples.extend_from_slice(&r.to_le_bytes());
                    }
                }
            }
        }
        let excluded_rows = match (self.excluded_rows.first(), self.excluded_rows.last()) {
            (Some(&lo), Some(&hi)) => {
                let mut bits = vec![0u8; usize::try_from((hi - lo) / 8 + 1).unwrap_or(0)];
                for &r in &self.excluded_rows {
                    let i = (r - lo) as usize;
                    bits[i / 8] |= 1 << (i % 8);
                }
                Some((lo, bits))
            }
            _ => None,
        };
        Expanded {
            query,
            groups: groups.join(","),
            samples,
            rare_rows,
            excluded_rows,
        }
    }

    /// Take the rare terms (those whose every row the index pages gave) out of the walks of
    /// each excluded group, and keep their rows instead: the rendered queries then exclude
    /// the frequent terms ([`Prefixed::render`]; a group without any, one of its terms that
    /// stands for it) and carry the rare terms' rows in
    /// [`Expanded::excluded_rows`], which the walk leaves out row by row. The same rows match:
    /// an alternative ([`super::queries`]'s, no top-level `OR`) is a conjunction, and an
    /// excluded group stands after a `NOT` alone or in a `NOT (… OR …)`, so a row matches it
    /// exactly when it matches the query with the group's frequent terms alone and holds no
    /// rare term of the group. An excluded prefix of many terms cost a search one doclist per
    /// term in each segment, for every row walked (`error -co*`: ~2,000 terms; `error -t*`,
    /// a wide group, FTS5's own prefix: its merge of 6,211 terms' doclists).
    ///
    /// A group with no rare term is left as it is, and so is one with no frequent term and no
    /// word looked for yet (a wide group's rare terms have none). A wide group so
    /// changed is written as its frequent terms (at most its limit, else it would be no group:
    /// [`group_of`]), its rare terms' words looked for only if a hit's row holds them
    /// ([`Prefixed::find_words`] with [`Keep::Holding`]).
    pub fn exclude_rare_terms_by_rows(&mut self) {
        let mut rows = std::mem::take(&mut self.excluded_rows);
        for seg in &mut self.segs {
            let Seg::Group(g) = seg else { continue };
            // Written in the walks as its frequent terms, or with none as one term that stands
            // for it (its rows are left out anyway: [`Prefixed::render`]).
            let written = g.terms.iter().any(|t| t.frequent() || t.word.is_some());
            if !g.excluded || !written || g.terms.iter().all(Term::frequent) {
                continue;
            }
            for t in g.terms.iter().filter(|t| !t.frequent()) {
                rows.extend_from_slice(&t.rows);
            }
            g.rows_out = true;
        }
        rows.sort_unstable();
        rows.dedup();
        self.excluded_rows = rows;
    }

    /// Whether no row can match: a phrase every match holds has a token that begins with the
    /// letters of an excluded group (`error -e*`, `test -tes*`: a row holding `error` holds an
    /// index term beginning with `e`). Such a query's walk would look at every row of its
    /// words, each against every term of the exclusion, to find none.
    pub fn matches_nothing(&self) -> bool {
        self.segs.iter().any(|s| {
            matches!(s, Seg::Group(g) if g.excluded
                && !g.begins.is_empty()
                && self.required.iter().any(|t| t.starts_with(&g.begins)))
        })
    }
}

/// The words of an excluded group (after a `NOT`), most frequent first, as a chain of
/// exclusions in growing chunks: `(a) NOT (b OR c) NOT (d OR e OR f OR g) …`, which after the
/// `NOT` before it excludes the rows that hold any of them, as `(a OR b OR …)` does (FTS5 binds
/// `NOT` tighter than `AND` and `OR`, and the queries write an explicit `AND` after a group).
///
/// FTS5 answers `x NOT (a OR b OR …)` by moving every term of the `OR` to each row of `x` it
/// checks: ~300 frequent terms for `error -t*` on the 1 GB bench store, for every row of
/// `error`. In the chain a row is checked against the next chunk only when no earlier one
/// holds it, and the first chunks are the terms most rows hold (`the`, in 78% of that store's
/// messages): docs/benchmarks.md, "Exclusions as a chain".
///
/// At most `max_chunks` chunks (at least one; the last holds every word left:
/// [`CHAIN_MAX_NOTS`]); returns the text and its number of chunks.
fn chained(words: &[String], max_chunks: usize) -> (String, usize) {
    let mut chunks: Vec<String> = Vec::new();
    let (mut at, mut size) = (0usize, 1usize);
    while at < words.len() {
        let end = if chunks.len() + 1 >= max_chunks {
            words.len()
        } else {
            (at + size).min(words.len())
        };
        chunks.push(format!("({})", words[at..end].join(" OR ")));
        at = end;
        size *= 2;
    }
    let n = chunks.len().max(1);
    (chunks.join(" NOT "), n)
}

/// The terms of `g` that `keep` keeps: the frequent ones first, then the read ones kept.
fn kept<'g>(g: &'g Group, keep: Keep<'g>) -> impl Iterator<Item = &'g Term> + Clone {
    let frequent = g.terms.iter().filter(|t| t.frequent());
    let rows_out = g.rows_out && !matches!(keep, Keep::Holding(_));
    let read = g
        .terms
        .iter()
        .filter(move |t| !rows_out && !t.frequent() && keeps(keep, t));
    frequent.chain(read)
}

/// Whether `keep` keeps `t`, a term whose rows were read.
fn keeps(keep: Keep<'_>, t: &Term) -> bool {
    match keep {
        Keep::Frequent => false,
        Keep::All => true,
        Keep::Since { from, admits } => t
            .rows
            .iter()
            .rev()
            .take_while(|&&r| r >= from)
            .any(|&r| admits.is_none_or(|a| a(r))),
        Keep::Holding(rows) => shares_a_row(&t.rows, rows),
    }
}

/// Whether two ascending lists of rows have one in common.
fn shares_a_row(a: &[i64], b: &[i64]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

/// A word the tokenizer turns into exactly `term`: the term itself or the term and one of
/// [`SUFFIXES`]; `None` when none does.
fn word_for(stemmer: &Stemmer, term: &str) -> Option<String> {
    SUFFIXES.iter().find_map(|s| {
        let w = format!("{term}{s}");
        (stemmer.tokens(&w).as_slice() == [term]).then_some(w)
    })
}

/// `q` (an FTS5 query in [`crate::query::fts_query`]'s form: terms in double quotes, `""` for
/// a quote inside, a prefix term's closing quote followed by `*`) with each prefix term that
/// spans at least [`EXPAND_MIN_PAGES`] leaf pages and has at most [`EXPAND_MAX_READ_TERMS`]
/// terms expanded into its terms ([`Prefixed::render`] writes them as an `OR`, and the groups that
/// say so to `memtrail_bm25`). Nothing expanded when no prefix term qualifies.
///
/// Errors: SQLite's, reading the index.
pub fn expand(conn: &Connection, q: &str) -> Result<Prefixed> {
    #[cfg(test)]
    if let Some(min_pages) = FORCED_MIN_PAGES.get() {
        return expand_with(conn, q, min_pages, min_pages);
    }
    expand_with(conn, q, EXPAND_MIN_PAGES, EXCLUDED_MIN_PAGES)
}

#[cfg(test)]
thread_local! {
    /// The threshold of pages every search on this thread takes (`0`: every prefix term is
    /// expanded; `i64::MAX`: none is), to compare their answers.
    pub(crate) static FORCED_MIN_PAGES: std::cell::Cell<Option<i64>> =
        const { std::cell::Cell::new(None) };
    /// How many walks on this thread left rare terms out ([`Keep::Since`]).
    pub(crate) static PRUNED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// How many walks on this thread searched a wide group as its terms, its rare ones left
    /// out ([`Keep::Since`]).
    pub(crate) static WIDE_SEARCHED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The most terms a walk searches (whatever the pages) and [`EXPAND_MAX_READ_TERMS`] for
    /// every search on this thread (to make wide groups of a small store's prefixes).
    pub(crate) static FORCED_MAX_TERMS: std::cell::Cell<Option<(usize, usize)>> =
        const { std::cell::Cell::new(None) };
}

/// The most terms of a prefix spanning `pages` leaf pages searched in one walk:
/// [`EXPAND_MAX_TERMS`] or `pages`, the larger (or what a test set).
fn max_terms(pages: i64) -> usize {
    #[cfg(test)]
    if let Some((m, _)) = FORCED_MAX_TERMS.get() {
        return m;
    }
    EXPAND_MAX_TERMS.max(usize::try_from(pages).unwrap_or(0))
}

/// [`EXPAND_MAX_READ_TERMS`] (or what a test set).
fn max_read_terms() -> usize {
    #[cfg(test)]
    if let Some((_, m)) = FORCED_MAX_TERMS.get() {
        return m;
    }
    EXPAND_MAX_READ_TERMS
}

/// [`expand`] with the thresholds of pages given, for a prefix term and for an excluded one (a
/// test expands every prefix with `0`, none with `i64::MAX`).
pub(crate) fn expand_with(
    conn: &Connection,
    q: &str,
    min_pages: i64,
    excluded_min_pages: i64,
) -> Result<Prefixed> {
    let unchanged = || Prefixed {
        segs: vec![Seg::Text(q.to_string(), 0)],
        excluded_rows: Vec::new(),
        required: Vec::new(),
    };
    let pieces = scan(q);
    if !pieces
        .iter()
        .any(|p| matches!(p, Piece::Phrase { prefix: true, .. }))
    {
        return Ok(unchanged());
    }
    let Some(stemmer) = Stemmer::new(conn)? else {
        return Ok(unchanged());
    };
    // A phrase the tokenizer finds no token in (`"ि"`: a letter to Rust's `is_alphanumeric`,
    // which the query's parser keeps, but not to `unicode61`) is dropped by FTS5 beside an
    // implicit `AND` and matches nothing beside an explicit one: the explicit `AND`s an
    // expansion writes would change the rows matched, and FTS5's numbering of the phrases
    // (then `memtrail_bm25`'s groups would not fit: an error).
    if pieces
        .iter()
        .any(|p| matches!(p, Piece::Phrase { text, .. } if stemmer.tokens(text).is_empty()))
    {
        return Ok(unchanged());
    }
    let mut segs: Vec<Seg> = Vec::new();
    let mut out = String::with_capacity(q.len());
    let mut phrases = 0usize;
    // How deep in parentheses the piece at hand is (a query's `(` and `)` are outside its
    // phrases), and the tokens of the phrases every match holds.
    let mut depth = 0i64;
    let mut required: Vec<String> = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        match piece {
            Piece::Other(text) => {
                out.push_str(text);
                depth += text.matches('(').count() as i64 - text.matches(')').count() as i64;
            }
            Piece::Phrase {
                raw,
                text,
                prefix: false,
            } => {
                if depth == 0 && !excludes(out.trim_end()) && !in_column_filter(&pieces, i) {
                    required.extend(stemmer.tokens(text));
                }
                out.push_str(raw);
                phrases += 1;
            }
            Piece::Phrase { raw, text, .. } => {
                let group = match stemmer.tokens(text).as_slice() {
                    // One token and no CJK column around it: a term of the index's own.
                    [stem] if !in_column_filter(&pieces, i) => match stemmed_prefix(text, stem) {
                        Some(typed) => literal_expansion(conn, &stemmer, &typed, stem)?,
                        None => expansion(
                            conn,
                            &stemmer,
                            stem,
                            if excludes(out.trim_end()) {
                                excluded_min_pages
                            } else {
                                min_pages
                            },
                        )?,
                    }
                    .map(|mut g| {
                        if g.raw.is_empty() {
                            g.raw = format!("{raw}*");
                        }
                        g.begins = stemmed_prefix(text, stem).unwrap_or_else(|| stem.clone());
                        g
                    }),
                    _ => None,
                };
                let Some(mut group) = group else {
                    out.push_str(raw);
                    out.push('*');
                    phrases += 1;
                    continue;
                };
                // A group next to a phrase or another group needs an explicit `AND`: FTS5
                // takes an implicit one only between phrases. Explicit `AND` binds looser
                // than `NOT`, which the rendered queries never let matter (an exclusion is
                // followed by an explicit `AND` already).
                let before = out.trim_end();
                group.excluded = excludes(before);
                group.chained = group.excluded && before.ends_with("NOT");
                if ends_operand(before) {
                    out.truncate(before.len());
                    out.push_str(" AND ");
                }
                segs.push(Seg::Text(std::mem::take(&mut out), phrases));
                phrases = 0;
                segs.push(Seg::Group(group));
                if starts_operand(&pieces[i + 1..]) {
                    out.push_str(" AND");
                }
            }
        }
    }
    segs.push(Seg::Text(out, phrases));
    if !segs.iter().any(|s| matches!(s, Seg::Group(_))) {
        return Ok(unchanged());
    }
    Ok(Prefixed {
        segs,
        excluded_rows: Vec::new(),
        required,
    })
}

/// A piece of an FTS5 query: a double-quoted phrase (its raw text with quotes, its text, and
/// whether a `*` follows: the `*` is not in `raw`, and is consumed), or anything else.
#[derive(Debug)]
enum Piece<'a> {
    Phrase {
        raw: &'a str,
        text: String,
        prefix: bool,
    },
    Other(&'a str),
}

fn scan(q: &str) -> Vec<Piece<'_>> {
    let b = q.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut other = 0;
    while i < b.len() {
        if b[i] != b'"' {
            i += 1;
            continue;
        }
        if other < i {
            out.push(Piece::Other(&q[other..i]));
        }
        let start = i;
        let mut text = String::new();
        i += 1;
        let mut seg = i;
        loop {
            if i >= b.len() {
                break;
            }
            if b[i] == b'"' {
                if b.get(i + 1) == Some(&b'"') {
                    text.push_str(&q[seg..=i]);
                    i += 2;
                    seg = i;
                    continue;
                }
                break;
            }
            i += 1;
        }
        text.push_str(&q[seg..i.min(b.len())]);
        i = (i + 1).min(b.len());
        let raw = &q[start..i];
        let prefix = b.get(i) == Some(&b'*');
        if prefix {
            i += 1;
        }
        out.push(Piece::Phrase { raw, text, prefix });
        other = i;
    }
    if other < b.len() {
        out.push(Piece::Other(&q[other..]));
    }
    out
}

/// Whether the phrase at `i` is under a column filter (`cjk : "…"`): the text before it, back
/// to the previous phrase, ends with `:`.
fn in_column_filter(pieces: &[Piece<'_>], i: usize) -> bool {
    i > 0 && matches!(&pieces[i - 1], Piece::Other(t) if t.trim_end().ends_with(':'))
}

/// Whether query text ends with `NOT` (then a `(` or not): the phrase or group after it is
/// excluded (the queries' `NOT` takes one term: [`crate::query::fts_render`]).
fn excludes(text: &str) -> bool {
    let t = text.trim_end_matches(|c: char| c.is_whitespace() || c == '(');
    t.strip_suffix("NOT")
        .is_some_and(|r| r.is_empty() || r.ends_with(char::is_whitespace))
}

/// Whether query text ends with an operand (a phrase, a prefix's `*`, a group's `)`).
fn ends_operand(text: &str) -> bool {
    text.ends_with('"') || text.ends_with('*') || text.ends_with(')')
}

/// Whether the pieces after a group begin with an operand (a phrase or a `(`), with nothing
/// but spaces between.
fn starts_operand(rest: &[Piece<'_>]) -> bool {
    match rest.first() {
        Some(Piece::Phrase { .. }) => true,
        Some(Piece::Other(t)) => {
            let t = t.trim_start();
            t.starts_with('(') || (t.is_empty() && rest.len() > 1)
        }
        None => false,
    }
}

/// The terms of the prefix `stem` (a token of the index's tokenizer): one per index term that
/// begins with it, each as a word the tokenizer turns into exactly that term (for a wide group,
/// only the frequent terms' words are looked for here: [`Prefixed::find_words`]). `None` when
/// the prefix is cheap as it is (fewer than `min_pages` leaf pages), has more than
/// [`EXPAND_MAX_READ_TERMS`] terms or none, or more frequent ones than a walk searches, or
/// a term looked for has no such word, or the index does not read as expected. The group's
/// `raw` is left empty for the caller.
fn expansion(
    conn: &Connection,
    stemmer: &Stemmer,
    stem: &str,
    min_pages: i64,
) -> Result<Option<Group>> {
    let Some((pages, terms)) = index_terms(conn, stem.as_bytes(), min_pages)? else {
        return Ok(None);
    };
    Ok(group_of(stemmer, pages, terms))
}

/// [`expansion`]'s group of the index terms read (`terms`, over `pages` leaf pages).
fn group_of(stemmer: &Stemmer, pages: i64, terms: IndexTerms) -> Option<Group> {
    let limit = max_terms(pages);
    let wide = terms.len() > limit;
    if wide && terms.iter().filter(|(_, r, _)| r.is_none()).count() > limit {
        return None;
    }
    let mut group = Group {
        raw: String::new(),
        raw_phrases: 1,
        begins: String::new(),
        wide,
        excluded: false,
        rows_out: false,
        chained: false,
        limit,
        terms: Vec::with_capacity(terms.len()),
        sample: Vec::new(),
    };
    let mut sample: BTreeSet<i64> = BTreeSet::new();
    for (term, rows, pages) in terms {
        let Ok(term) = std::str::from_utf8(&term) else {
            return None;
        };
        let word = if wide && rows.is_some() {
            None
        } else {
            let word = word_for(stemmer, term)?;
            Some(word)
        };
        if let Some(rows) = &rows {
            for &r in rows {
                // The smallest DF_SAMPLE rows (of every read term) are the sample.
                if sample.len() < DF_SAMPLE as usize || sample.last().is_some_and(|&l| r < l) {
                    sample.insert(r);
                    if sample.len() > DF_SAMPLE as usize {
                        sample.pop_last();
                    }
                }
            }
        }
        group.terms.push(Term {
            term: term.to_string(),
            word,
            rows: rows.unwrap_or_default(),
            pages,
        });
    }
    group.sample = sample.into_iter().collect();
    (!group.terms.is_empty()).then_some(group)
}

/// The prefix as typed, lower-cased, when the tokenizer's stem of it is not that
/// (`pars` → `par`, `query` → `queri`, `errors` → `error`, `utf8s` → `utf8`): FTS5 would look
/// for every term that begins with the stem (`pars*` finding `partner`). `None` for a prefix
/// the stemmer leaves as it is (every word under three letters), and for one that is not
/// ASCII letters and digits alone.
fn stemmed_prefix(text: &str, stem: &str) -> Option<String> {
    // The one word of the text (`pars.` is `pars`), split as the PostgreSQL store splits it.
    let mut words = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty());
    let (Some(word), None) = (words.next(), words.next()) else {
        return None;
    };
    if !word.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    let typed = word.to_ascii_lowercase();
    (typed != stem).then_some(typed)
}

/// The terms a word that begins with `typed` can be indexed as besides those that begin with
/// `typed`: the typed word's own stem `stem` (`par` for `pars`, `queri` for `query`, which
/// `querying` and `queries` are indexed as), and, when the stem cut into the typed letters,
/// each term between the two (`errorlat` for `errorlate`, the stem `errorl`: `errorlatency`
/// is indexed as `errorlat`). Shortest first.
pub fn exact_terms(typed: &str, stem: &str) -> Vec<String> {
    let mut out = vec![stem.to_string()];
    if typed.starts_with(stem) {
        out.extend((stem.len() + 1..typed.len()).map(|n| typed[..n].to_string()));
    }
    out
}

/// A prefix whose stem is not the prefix as typed ([`stemmed_prefix`]), searched as what the
/// words that begin with it are indexed as: every index term that begins with `typed` (the
/// words whose stem keeps the typed letters: `parser`, `parsimoni`, and `pars`, the stem of
/// `parse` and `parsing`) and [`exact_terms`] (`par`). Not the other terms that begin with
/// the stem (`partner`, `part`). Built whatever the pages the terms span, so the rows matched
/// do not depend on the store's size. Its `raw`, searched when the group is wide (or its
/// terms could not be read or have no word), is FTS5's own prefix of the typed letters (a word
/// the tokenizer stems to exactly them: `"parse"*` for `pars`) and the exact terms, the same
/// rows. `None` (FTS5's own prefix of the stem, as a prefix the stemmer leaves alone) only when
/// the stem has no word the tokenizer turns into it, or such a `raw` is needed and the typed
/// letters have none.
fn literal_expansion(
    conn: &Connection,
    stemmer: &Stemmer,
    typed: &str,
    stem: &str,
) -> Result<Option<Group>> {
    let Some(stem_word) = word_for(stemmer, stem) else {
        return Ok(None);
    };
    let mut exact = vec![Term {
        term: stem.to_string(),
        word: Some(stem_word),
        rows: Vec::new(),
        pages: 0,
    }];
    // The terms between the stem and the typed letters, those with a word (a term with none
    // is no term FTS5 makes of a query's word, nor, so far as the tokenizer says, of a text's).
    for term in exact_terms(typed, stem).into_iter().skip(1) {
        if let Some(word) = word_for(stemmer, &term) {
            exact.push(Term {
                term,
                word: Some(word),
                rows: Vec::new(),
                pages: 0,
            });
        }
    }
    let raw = word_for(stemmer, typed).map(|w| {
        let words: Vec<String> = exact
            .iter()
            .filter_map(|t| t.word.as_deref())
            .map(quoted)
            .collect();
        format!("({}* OR {})", quoted(&w), words.join(" OR "))
    });
    let group = match index_terms(conn, typed.as_bytes(), 0)? {
        // No index term begins with the typed letters: the exact terms alone.
        Some((_, terms)) if terms.is_empty() => Some(Group {
            raw: String::new(),
            raw_phrases: 1,
            begins: String::new(),
            wide: false,
            excluded: false,
            rows_out: false,
            chained: false,
            limit: EXPAND_MAX_TERMS,
            terms: Vec::new(),
            sample: Vec::new(),
        }),
        Some((pages, terms)) => group_of(stemmer, pages, terms),
        None => None,
    };
    let mut group = match (group, &raw) {
        (Some(g), _) if !g.wide => g,
        (Some(g), Some(_)) => g,
        // No group to search as terms: searched as `raw` (a wide group without terms).
        (None, Some(_)) => Group {
            raw: String::new(),
            raw_phrases: 1,
            begins: String::new(),
            wide: true,
            excluded: false,
            rows_out: false,
            chained: false,
            limit: EXPAND_MAX_TERMS,
            terms: Vec::new(),
            sample: Vec::new(),
        },
        _ => return Ok(None),
    };
    if let Some(raw) = raw {
        group.raw_phrases = 1 + exact.len();
        group.raw = raw;
    }
    // Counted by FTS5 (as a frequent term is): their rows were not read. A wide group without
    // terms keeps none, so that every rendering of it is `raw`.
    if !(group.wide && group.terms.is_empty()) {
        group.terms.extend(exact);
    }
    Ok(Some(group))
}

/// FTS5's key of a term of its main index: the byte `0`, then the term.
fn key(term: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(term.len() + 1);
    k.push(b'0');
    k.extend_from_slice(term);
    k
}

/// The smallest key after every key that begins with `k` (`None`: no such key).
fn successor(k: &[u8]) -> Option<Vec<u8>> {
    let mut s = k.to_vec();
    while let Some(last) = s.pop() {
        if last < 0xff {
            s.push(last + 1);
            return Some(s);
        }
    }
    None
}

/// The rows of an index term read from its leaf pages: ascending, or `None` when some are
/// not (a doclist that goes on to the next page, a deletion mark).
type Rows = Option<Vec<i64>>;

/// Index terms (without the key's `0`), their [`Rows`] and the leaf pages a doclist whose rows
/// were not all read spans ([`Term::pages`]), in the index's order (bytewise), each once.
type IndexTerms = Vec<(Vec<u8>, Rows, u32)>;

/// Two [`IndexTerms`] as one: a term in both keeps the rows of each, merged (`None` when
/// either is).
fn merge_terms(a: IndexTerms, b: IndexTerms) -> IndexTerms {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => match x.0.cmp(&y.0) {
                std::cmp::Ordering::Less => a.next(),
                std::cmp::Ordering::Greater => b.next(),
                std::cmp::Ordering::Equal => {
                    let (term, ra, pa) = a.next().expect("peeked");
                    let (_, rb, pb) = b.next().expect("peeked");
                    let rows = match (ra, rb) {
                        (Some(mut ra), Some(rb)) => {
                            ra.extend(rb);
                            ra.sort_unstable();
                            ra.dedup();
                            Some(ra)
                        }
                        _ => None,
                    };
                    Some((term, rows, pa.saturating_add(pb)))
                }
            },
            (Some(_), None) => a.next(),
            (None, _) => b.next(),
        };
        match next {
            Some(t) => out.push(t),
            None => return out,
        }
    }
}

/// The leaf pages spanned and the index terms (without the key's `0`) that begin with
/// `prefix`, from every segment's leaf pages, each with its rows when they lie within the pages read ([`Rows`]); `None` when they
/// span fewer than `min_pages` pages, are more than [`EXPAND_MAX_READ_TERMS`], or a page does
/// not read as FTS5's format.
pub(crate) fn index_terms(
    conn: &Connection,
    prefix: &[u8],
    min_pages: i64,
) -> Result<Option<(i64, IndexTerms)>> {
    // One read transaction for every statement below: without it each sees the index as
    // last committed, and a merge committed by another process (a hook's automatic merge)
    // between the listing of the segments and the reading of their pages moves terms into a
    // segment not listed, from pages then gone.
    let _snapshot = super::ReadSnapshot::begin(conn, "memtrail_prefix_terms")?;
    let lo = key(prefix);
    let hi = successor(&lo);
    let segments: Vec<i64> = conn
        .prepare_cached("SELECT DISTINCT segid FROM messages_fts_idx")
        .db()?
        .query_map([], |r| r.get(0))
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    // Per segment: the page that may hold the first term (the last key at or before `lo`),
    // then every page whose key lies in the range; the first page past it bounds the span.
    // Per segment: its id, the pages to read, the first page past the prefix's terms.
    let mut reads: Vec<(i64, Vec<i64>, Option<i64>)> = Vec::new();
    let mut pages_spanned = 0i64;
    for &seg in &segments {
        let first: Option<i64> = conn
            .prepare_cached(
                "SELECT pgno >> 1 FROM messages_fts_idx WHERE segid = ?1 AND term <= ?2
                 ORDER BY term DESC LIMIT 1",
            )
            .db()?
            .query_row(params![seg, lo], |r| r.get(0))
            .optional()
            .db()?;
        let mut pages: Vec<i64> = first.into_iter().collect();
        let mut inside = conn
            .prepare_cached(
                "SELECT pgno >> 1 FROM messages_fts_idx WHERE segid = ?1 AND term > ?2
                   AND (?3 IS NULL OR term < ?3) ORDER BY term",
            )
            .db()?;
        for p in inside
            .query_map(params![seg, lo, hi], |r| r.get::<_, i64>(0))
            .db()?
        {
            pages.push(p.db()?);
        }
        let end: Option<i64> = match &hi {
            Some(hi) => conn
                .prepare_cached(
                    "SELECT pgno >> 1 FROM messages_fts_idx WHERE segid = ?1 AND term >= ?2
                     ORDER BY term LIMIT 1",
                )
                .db()?
                .query_row(params![seg, hi], |r| r.get(0))
                .optional()
                .db()?,
            None => None,
        };
        if let (Some(&a), Some(&b)) = (pages.first(), pages.last()) {
            pages_spanned += end.unwrap_or(b + 1) - a;
        }
        reads.push((seg, pages, end));
    }
    if pages_spanned < min_pages {
        return Ok(None);
    }
    let mut terms: IndexTerms = Vec::new();
    let mut block = conn
        .prepare_cached("SELECT block FROM messages_fts_data WHERE id = ?1")
        .db()?;
    let mut read = |seg: i64, pgno: i64| -> Result<Option<Vec<u8>>> {
        block
            .query_row([(seg << 37) + pgno], |r| r.get(0))
            .optional()
            .db()
    };
    for (seg, pages, end) in reads {
        // This segment's terms, in order: its pages are read in the order of their first terms.
        let mut in_segment: IndexTerms = Vec::new();
        // The page after the last one read, when it was read to see whether a doclist goes on:
        // the next to read, most often.
        let mut ahead: Option<(i64, Option<Vec<u8>>)> = None;
        for (k, &pgno) in pages.iter().enumerate() {
            // The next page that begins a term (of this prefix, or the first past it).
            let next_listed = pages.get(k + 1).copied().or(end);
            let page = match ahead.take() {
                Some((p, page)) if p == pgno => page,
                _ => read(seg, pgno)?,
            };
            let Some(page) = page else {
                // A page an incremental merge trimmed away: its terms live on elsewhere.
                continue;
            };
            let Some(on_page) = page_terms(&page) else {
                return Ok(None);
            };
            let last = on_page.len().saturating_sub(1);
            for (i, (t, doclist)) in on_page.into_iter().enumerate() {
                if !t.starts_with(&lo) {
                    continue;
                }
                // The page's last doclist may go on to the next page: it does unless the next
                // page begins with a term of its own (or there is none).
                let mut rows = doclist_rows(&page[doclist.clone()]);
                if i == last && rows.is_some() {
                    let next = read(seg, pgno + 1)?;
                    if next.as_deref().is_some_and(|n| !begins_with_term(n)) {
                        rows = None;
                    }
                    ahead = Some((pgno + 1, next));
                }
                // A doclist not read whole: the pages up to the next that begins a term.
                let spans = match (&rows, next_listed) {
                    (Some(_), _) => 0,
                    (None, Some(n)) if i == last && n > pgno => {
                        u32::try_from(n - pgno).unwrap_or(u32::MAX)
                    }
                    (None, _) => 1,
                };
                in_segment.push((t[1..].to_vec(), rows, spans));
                if in_segment.len() > max_read_terms() {
                    return Ok(None);
                }
            }
        }
        if !in_segment.is_sorted_by(|x, y| x.0 < y.0) {
            // Not FTS5's order (a page out of place): read as no expansion.
            return Ok(None);
        }
        // In several segments: the rows of each, merged.
        terms = merge_terms(std::mem::take(&mut terms), in_segment);
        if terms.len() > max_read_terms() {
            return Ok(None);
        }
    }
    Ok(Some((pages_spanned, terms)))
}

/// Whether a leaf page begins with a term (not with the rest of the previous page's doclist):
/// no rowid before its first term, and its first term at offset 4.
fn begins_with_term(page: &[u8]) -> bool {
    if page.len() < 4 || page[0] != 0 || page[1] != 0 {
        return false;
    }
    let footer = u16::from_be_bytes([page[2], page[3]]) as usize;
    footer < page.len() && varint(page, footer).is_some_and(|(off, _)| off == 4)
}

/// The rows of a doclist held whole in `d` (`varint rowid, poslist`, then `varint delta,
/// poslist`…; a poslist's header is `varint size × 2 + deleted`): `None` when it does not
/// end exactly at `d`'s end or holds a deletion mark.
fn doclist_rows(d: &[u8]) -> Rows {
    let mut rows = Vec::new();
    let (mut rowid, n) = varint(d, 0)?;
    let mut i = n;
    loop {
        rows.push(i64::try_from(rowid).ok()?);
        let (header, n) = varint(d, i)?;
        if header & 1 == 1 {
            return None;
        }
        i = i
            .checked_add(n)?
            .checked_add(usize::try_from(header >> 1).ok()?)?;
        if i == d.len() {
            return Some(rows);
        }
        if i > d.len() {
            return None;
        }
        let (delta, n) = varint(d, i)?;
        if delta == 0 {
            return None;
        }
        rowid = rowid.checked_add(delta)?;
        i += n;
    }
}

/// SQLite's varint (1–9 bytes, big-endian 7-bit groups, the ninth byte whole) at `b[i..]`:
/// the value and the bytes read.
fn varint(b: &[u8], i: usize) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    for n in 0..9 {
        let c = *b.get(i + n)?;
        if n == 8 {
            return Some(((v << 8) | c as u64, 9));
        }
        v = (v << 7) | (c & 0x7f) as u64;
        if c & 0x80 == 0 {
            return Some((v, n + 1));
        }
    }
    None
}

/// Every term key on one leaf page with the byte range of its doclist on the page (see the
/// module documentation); `None` when the page does not read as a leaf.
#[allow(clippy::type_complexity)]
fn page_terms(page: &[u8]) -> Option<Vec<(Vec<u8>, std::ops::Range<usize>)>> {
    if page.len() < 4 {
        return None;
    }
    let footer = u16::from_be_bytes([page[2], page[3]]) as usize;
    if footer > page.len() || footer < 4 {
        return None;
    }
    let mut out: Vec<(Vec<u8>, std::ops::Range<usize>)> = Vec::new();
    let mut i = footer;
    let mut off = 0usize;
    while i < page.len() {
        let (delta, n) = varint(page, i)?;
        i += n;
        off = off.checked_add(usize::try_from(delta).ok()?)?;
        if off < 4 || off >= footer {
            return None;
        }
        let (term, end) = match out.last() {
            None => {
                let (len, n) = varint(page, off)?;
                let start = off + n;
                let end = start.checked_add(len as usize)?;
                (page.get(start..end)?.to_vec(), end)
            }
            Some((prev, _)) => {
                let (shared, n1) = varint(page, off)?;
                let (len, n2) = varint(page, off + n1)?;
                let start = off + n1 + n2;
                let end = start.checked_add(len as usize)?;
                let mut t = prev.get(..shared as usize)?.to_vec();
                t.extend_from_slice(page.get(start..end)?);
                (t, end)
            }
        };
        // The previous term's doclist ends where this term begins.
        if let Some((_, range)) = out.last_mut() {
            if off < range.start {
                return None;
            }
            range.end = off;
        }
        out.push((term, end..footer));
    }
    Some(out)
}

/// The store's tokenizer (`porter unicode61`), obtained from FTS5 to see what a query word
/// becomes.
struct Stemmer {
    api: ffi::fts5_tokenizer,
    tok: *mut ffi::Fts5Tokenizer,
}

impl Stemmer {
    /// `None` when FTS5 has no `porter` tokenizer (then nothing is expanded).
    fn new(conn: &Connection) -> Result<Option<Stemmer>> {
        let api = fts5_api(conn)?;
        // SAFETY: `api` is the connection's live `fts5_api`; `xFindTokenizer` fills `user` and
        // `t` for a tokenizer FTS5 keeps while the connection is open; `xCreate` gets one
        // argument (the parent tokenizer's name, as the table's `tokenize` option gives it),
        // and the instance it makes is deleted in `drop`.
        unsafe {
            let Some(find) = (*api).xFindTokenizer else {
                return Ok(None);
            };
            let mut user: *mut c_void = std::ptr::null_mut();
            let mut t: ffi::fts5_tokenizer = std::mem::zeroed();
            if find(api, c"porter".as_ptr(), &mut user, &mut t) != ffi::SQLITE_OK {
                return Ok(None);
            }
            let Some(create) = t.xCreate else {
                return Ok(None);
            };
            let mut args: [*const c_char; 1] = [c"unicode61".as_ptr()];
            let mut tok: *mut ffi::Fts5Tokenizer = std::ptr::null_mut();
            if create(user, args.as_mut_ptr(), 1, &mut tok) != ffi::SQLITE_OK || tok.is_null() {
                return Ok(None);
            }
            Ok(Some(Stemmer { api: t, tok }))
        }
    }

    /// The tokens of `text` as FTS5 makes them of a query's words.
    fn tokens(&self, text: &str) -> Vec<String> {
        unsafe extern "C" fn push(
            ctx: *mut c_void,
            flags: c_int,
            token: *const c_char,
            n: c_int,
            _start: c_int,
            _end: c_int,
        ) -> c_int {
            // SAFETY: `ctx` is the `Vec` passed by `tokens`, alive for the call; `token` holds
            // `n` bytes.
            unsafe {
                if flags & ffi::FTS5_TOKEN_COLOCATED == 0 && n >= 0 {
                    let bytes = std::slice::from_raw_parts(token.cast::<u8>(), n as usize);
                    (*ctx.cast::<Vec<String>>()).push(String::from_utf8_lossy(bytes).into_owned());
                }
            }
            ffi::SQLITE_OK
        }
        let mut out: Vec<String> = Vec::new();
        let Ok(len) = c_int::try_from(text.len()) else {
            return out;
        };
        // SAFETY: `self.tok` is live until `drop`; `text` holds `len` bytes; the callback gets
        // `out` as its context.
        unsafe {
            if let Some(tokenize) = self.api.xTokenize {
                tokenize(
                    self.tok,
                    (&mut out as *mut Vec<String>).cast::<c_void>(),
                    ffi::FTS5_TOKENIZE_QUERY,
                    text.as_ptr().cast::<c_char>(),
                    len,
                    Some(push),
                );
            }
        }
        out
    }
}

impl Drop for Stemmer {
    fn drop(&mut self) {
        // SAFETY: `tok` was made by this tokenizer's `xCreate` and is deleted once.
        unsafe {
            if let Some(delete) = self.api.xDelete {
                delete(self.tok);
            }
        }
    }
}

/// [`expand_with`] on a store's connection.
#[cfg(test)]
pub(crate) fn expand_in(store: &super::Store, q: &str, min_pages: i64) -> Expanded {
    expand_with(&store.conn, q, min_pages, min_pages)
        .unwrap()
        .render(Keep::All)
}

/// [`expand_with`] on a store's connection, rendered whole before and after
/// [`Prefixed::exclude_rare_terms_by_rows`].
#[cfg(test)]
pub(crate) fn excluded_split_in(
    store: &super::Store,
    q: &str,
    min_pages: i64,
) -> (Expanded, Expanded) {
    let mut p = expand_with(&store.conn, q, min_pages, min_pages).unwrap();
    let before = p.render(Keep::All);
    p.exclude_rare_terms_by_rows();
    (before, p.render(Keep::All))
}

/// The rows FTS5 matches for the query `q` as written, newest first, at most `n`.
#[cfg(test)]
pub(crate) fn rows_matching(store: &super::Store, q: &str, n: i64) -> Vec<i64> {
    let mut stmt = store
        .conn
        .prepare("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?2")
        .unwrap();
    stmt.query_map(rusqlite::params![q, n], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<Vec<i64>>>()
        .unwrap()
}

/// [`Prefixed::matches_nothing`] of a query expanded on a store's connection.
#[cfg(test)]
pub(crate) fn matches_nothing_in(store: &super::Store, q: &str) -> bool {
    expand_with(&store.conn, q, 0, 0).unwrap().matches_nothing()
}

/// [`index_terms`] on a store's connection: each term (as text) with its rows when they were
/// read from the pages.
#[cfg(test)]
pub(crate) fn term_rows_in(store: &super::Store, prefix: &str) -> Vec<(String, Option<Vec<i64>>)> {
    index_terms(&store.conn, prefix.as_bytes(), 0)
        .unwrap()
        .unwrap()
        .1
        .into_iter()
        .map(|(t, r, _)| (String::from_utf8(t).unwrap(), r))
        .collect()
}

/// The rows holding `term` (an index term), from FTS5's `fts5vocab` instance table.
#[cfg(test)]
pub(crate) fn vocabulary_rows(store: &super::Store, term: &str) -> Vec<i64> {
    from_vocabulary(
        store,
        "instance",
        "SELECT DISTINCT doc FROM temp.vocab_instance WHERE term = ?1 AND ?2 ORDER BY doc",
        [term, "1"],
    )
}

/// The row id of the message whose id (the agent's) is `ext_id`.
#[cfg(test)]
pub(crate) fn message_row(store: &super::Store, ext_id: &str) -> i64 {
    store
        .conn
        .query_row("SELECT id FROM messages WHERE ext_id = ?1", [ext_id], |r| {
            r.get(0)
        })
        .unwrap()
}

/// The rows of `sql` (two parameters) over FTS5's `fts5vocab` table of type `kind`, made
/// first as `temp.vocab_<kind>`.
#[cfg(test)]
fn from_vocabulary<T: rusqlite::types::FromSql>(
    store: &super::Store,
    kind: &str,
    sql: &str,
    args: [&str; 2],
) -> Vec<T> {
    store
        .conn
        .execute_batch(&format!(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab_{kind}
             USING fts5vocab(main, messages_fts, '{kind}')"
        ))
        .unwrap();
    store
        .conn
        .prepare(sql)
        .unwrap()
        .query_map(args, |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// [`index_terms`] on a store's connection, as text.
#[cfg(test)]
pub(crate) fn terms_in(store: &super::Store, prefix: &str) -> Option<Vec<String>> {
    index_terms(&store.conn, prefix.as_bytes(), 0)
        .unwrap()
        .map(|(_, t)| {
            t.into_iter()
                .map(|(t, _, _)| String::from_utf8(t).unwrap())
                .collect()
        })
}

/// The index terms beginning with `prefix` as FTS5's `fts5vocab` table lists them, in order.
#[cfg(test)]
pub(crate) fn vocabulary(store: &super::Store, prefix: &str) -> Vec<String> {
    let hi = format!("{prefix}\u{10ffff}");
    from_vocabulary(
        store,
        "row",
        "SELECT term FROM temp.vocab_row WHERE term >= ?1 AND term < ?2 ORDER BY term",
        [prefix, hi.as_str()],
    )
}

/// How many segments the full-text index has.
#[cfg(test)]
pub(crate) fn segments(store: &super::Store) -> i64 {
    store
        .conn
        .query_row(
            "SELECT count(DISTINCT segid) FROM messages_fts_idx",
            [],
            |r| r.get(0),
        )
        .unwrap()
}

/// FTS5's `automerge` setting (`0`: every flush of the index stays a segment of its own).
#[cfg(test)]
pub(crate) fn set_automerge(store: &super::Store, n: i64) {
    store
        .conn
        .execute(
            "INSERT INTO messages_fts(messages_fts, rank) VALUES ('automerge', ?1)",
            [n],
        )
        .unwrap();
}

/// FTS5's `pgsz` setting: the size of the index's leaf pages in bytes (its smallest, 32, gives
/// a small store as many doclists over several pages as a large one).
#[cfg(test)]
pub(crate) fn set_page_size(store: &super::Store, bytes: i64) {
    store
        .conn
        .execute(
            "INSERT INTO messages_fts(messages_fts, rank) VALUES ('pgsz', ?1)",
            [bytes],
        )
        .unwrap();
}

/// Some of FTS5's incremental merge work (`pages` leaves' worth): an unfinished merge leaves
/// its input segments trimmed.
#[cfg(test)]
pub(crate) fn merge_some(store: &super::Store, pages: i64) {
    store
        .conn
        .execute(
            "INSERT INTO messages_fts(messages_fts, rank) VALUES ('merge', ?1)",
            [pages],
        )
        .unwrap();
}

/// Arm `store` so that, the first time one of its statements that reads `messages_fts_data`
/// is prepared (the page reads of [`index_terms`], after it listed the segments and their
/// pages), another connection first runs FTS5's incremental `merge` of `pages` pages, as a
/// hook's automatic merge may between two statements of a search.
#[cfg(test)]
pub(crate) fn merge_before_page_reads(store: &mut super::Store, pages: i64) {
    before_first_read(store, "messages_fts_data", move |path| {
        let other = Connection::open(path).unwrap();
        other
            .execute(
                "INSERT INTO messages_fts(messages_fts, rank) VALUES ('merge', ?1)",
                [pages],
            )
            .unwrap();
    });
}

/// Arm `store` so that, the first time a statement reading the `messages_fts` table is
/// prepared (a search's first walk, after its prefixes were expanded), another connection
/// first stores `text` as a new message of session `session` (a row id) and indexes it, as a
/// hook may in the middle of a search.
#[cfg(test)]
pub(crate) fn write_before_walk(store: &mut super::Store, session: i64, text: &str) {
    let text = text.to_string();
    before_first_read(store, "messages_fts", move |path| {
        let mut other = super::Store::open(path).unwrap();
        let message = memtrail_adapters::Message {
            id: "written-mid-search".into(),
            role: memtrail_adapters::Role::User,
            kind: memtrail_adapters::Kind::Text,
            parts: vec![memtrail_adapters::Part::Text { text: text.clone() }],
            timestamp: Some(i64::MAX / 4),
            model: None,
        };
        other
            .write(|w| w.apply(session, vec![memtrail_adapters::Record::Message(message)]))
            .unwrap();
        other.catch_up_index(None).unwrap();
    });
}

/// Run `action` (given the store's path) the first time a statement of `store` reading
/// `table` is prepared (its cached statements are dropped first).
#[cfg(test)]
fn before_first_read(
    store: &mut super::Store,
    table: &'static str,
    mut action: impl FnMut(&std::path::Path) + Send + 'static,
) {
    use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
    let path = store.path().to_path_buf();
    store.conn.flush_prepared_statement_cache();
    let mut armed = true;
    store
        .conn
        .authorizer(Some(move |ctx: AuthContext<'_>| {
            if armed
                && matches!(ctx.action, AuthAction::Read { table_name, .. } if table_name == table)
            {
                armed = false;
                action(&path);
            }
            Authorization::Allow
        }))
        .unwrap();
}

/// Take the authorizer [`write_before_walk`] or [`merge_before_page_reads`] set off `store`.
#[cfg(test)]
pub(crate) fn disarm(store: &mut super::Store) {
    store
        .conn
        .authorizer(None::<fn(rusqlite::hooks::AuthContext<'_>) -> rusqlite::hooks::Authorization>)
        .unwrap();
}

#[cfg(test)]
mod chain_tests {
    use super::{Group, Keep, Prefixed, Seg, Term};

    fn term(name: &str, rows: Vec<i64>, pages: u32) -> Term {
        Term {
            term: name.to_string(),
            word: Some(name.to_string()),
            rows,
            pages,
        }
    }

    /// A chained exclusion's frequent terms come first, the most pages first, then its read
    /// terms, the most rows first, in chunks of 1, 2, 4; the group's phrases keep their numbers
    /// and its frequent count; the snippets' query keeps the `OR`.
    #[test]
    fn a_chained_exclusion_is_written_most_frequent_first_in_growing_chunks() {
        let terms = vec![
            term("a", Vec::new(), 2),
            term("b", Vec::new(), 9),
            term("c", vec![1, 2, 3], 0),
            term("d", vec![4], 0),
            term("e", Vec::new(), 5),
            term("f", vec![5, 6], 0),
        ];
        let group = Group {
            raw: "\"a\"*".into(),
            raw_phrases: 1,
            begins: String::new(),
            wide: false,
            excluded: true,
            rows_out: false,
            chained: true,
            limit: 2048,
            terms,
            sample: Vec::new(),
        };
        let p = Prefixed {
            segs: vec![
                Seg::Text("\"x\" NOT ".into(), 1),
                Seg::Group(group.clone()),
                Seg::Text(" AND \"y\"".into(), 1),
            ],
            excluded_rows: Vec::new(),
            required: Vec::new(),
        };
        let walk = p.render(Keep::All);
        assert_eq!(
            walk.query,
            r#""x" NOT ("b") NOT ("e" OR "a") NOT ("c" OR "f" OR "d") AND "y""#
        );
        assert_eq!(walk.groups, "1:6:3");
        let snippets = p.render(Keep::Holding(&[1, 4, 5]));
        assert_eq!(
            snippets.query,
            r#""x" NOT ("a" OR "b" OR "e" OR "c" OR "d" OR "f") AND "y""#
        );
        // A chain cut at its budget of `NOT`s: the last chunk holds the rest; none left, an
        // `OR`.
        let words: Vec<String> = ["b", "e", "a", "c", "f", "d"]
            .iter()
            .map(|w| format!("\"{w}\""))
            .collect();
        assert_eq!(
            super::chained(&words, 3),
            (
                r#"("b") NOT ("e" OR "a") NOT ("c" OR "f" OR "d")"#.to_string(),
                3
            )
        );
        assert_eq!(
            super::chained(&words, 2),
            (
                r#"("b") NOT ("e" OR "a" OR "c" OR "f" OR "d")"#.to_string(),
                2
            )
        );
        assert_eq!(
            super::chained(&words, 1),
            (r#"("b" OR "e" OR "a" OR "c" OR "f" OR "d")"#.to_string(), 1)
        );
        // Not right after its `NOT`: an `OR` as before.
        let mut inside = p.clone();
        if let Seg::Group(g) = &mut inside.segs[1] {
            g.chained = false;
        }
        assert_eq!(
            inside.render(Keep::All).query,
            r#""x" NOT ("a" OR "b" OR "e" OR "c" OR "d" OR "f") AND "y""#
        );
    }
}
