//! Reading the store: BM25 search with snippets, session lists, whole sessions.

use memtrail_adapters::ToolCall;
use serde::{Deserialize, Serialize};

pub use crate::store::queries::{
    SEMANTIC_SNIPPET_CHARS, get_session, list_sessions, resolve_session, search, search_ranking,
    session_summary,
};

/// Snippet highlight delimiters as returned by [`search`]: the matched terms are wrapped in
/// `HL_START` … `HL_END` (U+0001 / U+0002); callers map them to `**` or terminal bold.
pub const HL_START: char = '\u{1}';
pub const HL_END: char = '\u{2}';

/// `text` with its own [`HL_START`] and [`HL_END`] shown as U+FFFD: text of a transcript made
/// into a snippet, so that it cannot pass for the search's marks (a faked highlight, or on a
/// terminal a colour left on).
pub fn unmarked(text: &str) -> String {
    text.replace([HL_START, HL_END], "\u{FFFD}")
}

/// How a search ranks: by the full text (BM25), by meaning (an embedding model's vectors), or
/// both fused by reciprocal rank (the default where the store holds vectors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchMode {
    Lexical,
    Semantic,
    Hybrid,
}

impl SearchMode {
    /// `lexical` (or `keyword`, the web page's word), `semantic` or `hybrid` (any case).
    ///
    /// Errors: a message naming the three.
    pub fn parse(s: &str) -> Result<SearchMode, String> {
        match s.to_ascii_lowercase().as_str() {
            "lexical" | "keyword" => Ok(SearchMode::Lexical),
            "semantic" => Ok(SearchMode::Semantic),
            "hybrid" => Ok(SearchMode::Hybrid),
            _ => Err(format!(
                "unknown search mode `{s}`: use lexical, semantic or hybrid"
            )),
        }
    }

    /// The mode's name, as [`SearchMode::parse`] reads it.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Lexical => "lexical",
            SearchMode::Semantic => "semantic",
            SearchMode::Hybrid => "hybrid",
        }
    }
}

/// Search filters. Times are ms since the Unix epoch.
#[derive(Debug, Clone, Default)]
pub struct SearchFilter {
    pub agent: Option<String>,
    /// A project directory: matches sessions in it or below it.
    pub project: Option<String>,
    /// A session id (the agent's id) or a unique prefix of one.
    pub session: Option<String>,
    pub since: Option<i64>,
    pub until: Option<i64>,
    pub role: Option<String>,
    /// Only sessions of this machine: its label or its id ([`crate::machine`]).
    pub machine: Option<String>,
    pub limit: usize,
}

impl SearchFilter {
    /// Whether it filters at all: an agent, project, session, machine, date or role is set.
    pub fn filters(&self) -> bool {
        self.agent.is_some()
            || self.project.is_some()
            || self.session.is_some()
            || self.since.is_some()
            || self.until.is_some()
            || self.role.is_some()
            || self.machine.is_some()
    }
}

/// How a hit of a search by meaning or a hybrid search was found ([`Hit::matched`]).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Matched {
    /// In the full-text (BM25) ranking: the query's words match.
    Words,
    /// By meaning alone.
    Meaning,
    /// Both.
    Both,
}

/// Whether `query` asks for exact words with the search syntax (a `"phrase"`, `-word` or
/// `NOT word`, `prefix*`): the default search then ranks it by its words alone (`--mode`
/// hybrid or semantic still may). `OR` only widens a query: it stays hybrid.
pub fn has_operators(query: &str) -> bool {
    query.contains('"')
        || query.split_whitespace().any(|w| {
            (w.len() > 1 && w.starts_with('-')) || w == "NOT" || (w.len() > 1 && w.ends_with('*'))
        })
}

/// One search hit.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Hit {
    /// The session's id (the agent's own).
    pub session_id: String,
    /// The agent (`claude`, `codex`, …).
    pub agent: String,
    /// The machine the session was captured on: its label ([`crate::machine`]).
    pub machine: String,
    /// The session's title; `None` when untitled.
    pub title: Option<String>,
    /// The session's project folder (a path); `None` when unknown.
    pub project: Option<String>,
    /// The message's id.
    pub message_id: String,
    /// 0-based position of the message in its session (use with `get_session` offset).
    pub message_index: i64,
    /// `user`, `assistant`, `tool` or `system`.
    pub role: String,
    /// `text`, `tool_call`, … (what the message holds).
    pub kind: String,
    /// When the message was written: RFC 3339 UTC with milliseconds; `None` when unknown.
    pub timestamp: Option<String>,
    /// A short excerpt with the matched terms between [`HL_START`] and [`HL_END`].
    pub snippet: String,
    /// Relevance (higher is better): BM25 with a small recency prior.
    pub score: f64,
    /// In a search by meaning or a hybrid search, how the hit was found: `words` (the
    /// full-text ranking holds it: its words match the query's), `meaning` (by meaning alone:
    /// not among the best full-text matches; it may hold none of the words), `both`. `None`, not written, in a keyword search.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched: Option<Matched>,
    /// The message this hit is a copy of, whichever session holds it: [`copy_id`] of its
    /// [`CopyKey`] (`None` for a message without a time). A forked or resumed session's
    /// copies share it, so a fusion of two lists (the hybrid search) counts
    /// them as one message even when each list kept another copy. Not shown.
    #[serde(skip)]
    pub copy: Option<u64>,
}

/// Most distinct terms a query may hold (a 10 000-word query would otherwise take seconds):
/// [`parse_query`] reads no further, and the stores' searches refuse a longer query
/// ([`refuse_over_term_cap`]) rather than search a part of it.
pub const MAX_QUERY_TERMS: usize = 32;

/// The error of a search whose query holds a word past the first [`MAX_QUERY_TERMS`] terms
/// [`parse_query`] reads: searching without it would drop a word or an exclusion (`-word`)
/// silently, and give matches the query excludes. `Ok` for any other query.
///
/// Errors: [`crate::Error::Invalid`], naming the cap.
pub fn refuse_over_term_cap(input: &str) -> crate::Result<()> {
    if parse(input).1 {
        return Err(crate::Error::Invalid(format!(
            "the query holds more than {MAX_QUERY_TERMS} words: memtrail searches at most \
             {MAX_QUERY_TERMS}; shorten it"
        )));
    }
    Ok(())
}

/// One item of a search query as memtrail reads it ([`parse_query`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryItem {
    /// A term: a word or a `"quoted phrase"` (`phrase`), its text as typed (without quotes or
    /// a trailing `*`); `prefix` for a trailing `*`; `negated` for `NOT term` or `-term`.
    Term {
        text: String,
        phrase: bool,
        prefix: bool,
        negated: bool,
    },
    /// A bare `OR` between two positive terms.
    Or,
}

/// Read any user text as a search query: words are terms (all must match), `"…"` is a phrase,
/// a trailing `*` makes a prefix, a bare `OR` (or `||`) between terms is kept, a bare `AND`
/// (`&&`) is dropped (it is implicit), `NOT word` and `-word` exclude a word wherever they
/// stand (`-1` stays a number), terms without a letter or digit are dropped and
/// a term repeated within one alternative (the terms between two `OR`s) counts once, at most
/// [`MAX_QUERY_TERMS`] terms in all. `None` when the text
/// holds no positive term. What [`fts_query`] (SQLite) and the PostgreSQL store's query both
/// render.
pub fn parse_query(input: &str) -> Option<Vec<QueryItem>> {
    parse(input).0
}

/// [`parse_query`], and whether the text holds a letter or digit past the last term it read
/// (the cap was reached with words left).
/// The third value: the text held words, every one excluded (`-draft`, `NOT draft`).
fn parse(input: &str) -> (Option<Vec<QueryItem>>, bool, bool) {
    let mut truncated = false;
    let mut items: Vec<QueryItem> = Vec::new();
    // The terms of the alternative being read, and of all of them.
    let mut seen: Vec<String> = Vec::new();
    let mut terms = 0usize;
    // Set by an `OR` until the next positive term, which begins the next alternative; the
    // exclusions read meanwhile go after that term; the last alternative's terms.
    let mut next_alternative = false;
    let mut deferred: Vec<QueryItem> = Vec::new();
    let mut seen_before_or: Vec<String> = Vec::new();
    // A control character (a NUL, which would end FTS5's query text, an escape) separates
    // words as a space does.
    let input: String = input
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut chars = input.chars().peekable();
    let mut pending_or = false;
    let mut pending_not = false;
    let mut positives = 0usize;
    while let Some(&c) = chars.peek() {
        if terms >= MAX_QUERY_TERMS {
            truncated = chars.any(char::is_alphanumeric);
            break;
        }
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let (text, prefix, phrase) = if c == '"' {
            chars.next();
            let mut phrase = String::new();
            for ch in chars.by_ref() {
                if ch == '"' {
                    break;
                }
                phrase.push(ch);
            }
            let prefix = chars.peek() == Some(&'*');
            if prefix {
                chars.next();
            }
            (phrase, prefix, true)
        } else {
            let mut word = String::new();
            while let Some(&ch) = chars.peek() {
                if ch.is_whitespace() || ch == '"' {
                    break;
                }
                word.push(ch);
                chars.next();
            }
            // `-"a phrase"` excludes the phrase: the word read stops at its quote.
            if word == "-" && chars.peek() == Some(&'"') {
                pending_not = true;
                continue;
            }
            match word.as_str() {
                "OR" | "||" => {
                    pending_or = true;
                    continue;
                }
                "AND" | "&&" => continue,
                "NOT" => {
                    pending_not = true;
                    continue;
                }
                _ => {}
            }
            // `-draft` excludes a word; `-1`, `-9.5` stay numbers (`ls -1`, `nice -5`).
            if let Some(rest) = word.strip_prefix('-')
                && rest.chars().next().is_some_and(char::is_alphabetic)
            {
                pending_not = true;
                word = rest.to_string();
            }
            let prefix = word.ends_with('*');
            (word.trim_end_matches('*').to_string(), prefix, false)
        };
        if !text.chars().any(char::is_alphanumeric) {
            // Dropped; an `OR` before it still joins the next term.
            pending_not = false;
            continue;
        }
        let key = format!(
            "{}{}{}",
            if pending_not { "-" } else { "" },
            text,
            if prefix { "*" } else { "" }
        );
        let negated = pending_not;
        pending_not = false;
        // After `OR`, the terms up to the next positive one belong to the next alternative:
        // `a b OR a c` keeps its second `a` (it is `(a b) OR (a c)`), and `a OR -b c` is
        // `a OR (c NOT b)`.
        if pending_or && positives > 0 && !next_alternative {
            next_alternative = true;
            seen_before_or = std::mem::take(&mut seen);
        }
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        terms += 1;
        let term = QueryItem::Term {
            text,
            phrase,
            prefix,
            negated,
        };
        if negated {
            // Before the first positive term (`-draft notes`), or after an `OR`: it goes
            // after the next positive term (FTS5 takes no query that begins with `NOT`).
            if next_alternative || positives == 0 {
                deferred.push(term);
            } else {
                items.push(term);
            }
            continue;
        }
        if next_alternative {
            items.push(QueryItem::Or);
        }
        positives += 1;
        items.push(term);
        items.append(&mut deferred);
        pending_or = false;
        next_alternative = false;
    }
    // An `OR` with no positive term after it: its exclusions apply to the last alternative.
    for term in deferred {
        let QueryItem::Term { text, prefix, .. } = &term else {
            continue;
        };
        let key = format!("-{text}{}", if *prefix { "*" } else { "" });
        if !seen_before_or.contains(&key) {
            items.push(term);
        }
    }
    (
        (positives > 0).then_some(items),
        truncated,
        positives == 0 && terms > 0,
    )
}

/// The error text for a query [`parse_query`] finds nothing to search for in: one that only
/// excludes words says so, and what to add; any other holds no word (`???`, `()`).
pub fn nothing_to_search(query: &str) -> String {
    if parse(query).2 {
        format!(
            "the query `{query}` only excludes words (`-word`, `NOT word`): add a word to search for"
        )
    } else {
        format!("the query `{query}` holds no searchable word")
    }
}

/// Turn any user text into a safe FTS5 query ([`parse_query`]): terms become quoted strings
/// (implicitly ANDed), a phrase stays a phrase, a prefix gets `*`, `OR` is kept, an excluded
/// term gets `NOT`, every other FTS5 operator character is neutralised by quoting. A term with
/// CJK characters also matches as a substring, through the `cjk` column (one token per
/// character). Returns `None` when the text holds no searchable word.
pub fn fts_query(input: &str) -> Option<String> {
    Some(fts_render(parse_query(input)?))
}

/// The FTS5 query text of items as [`parse_query`] gives them ([`fts_query`]); an empty
/// string for no item.
pub fn fts_render(parsed: Vec<QueryItem>) -> String {
    let mut items: Vec<String> = Vec::with_capacity(parsed.len());
    for item in parsed {
        let QueryItem::Term {
            text,
            phrase,
            prefix,
            negated,
        } = item
        else {
            items.push("OR".to_string());
            continue;
        };
        let mut term = format!(
            "\"{}\"{}",
            text.replace('"', "\"\""),
            if prefix { "*" } else { "" }
        );
        if !phrase && text.chars().any(crate::store::is_cjk) {
            // Every CJK run of the term, as a phrase of single characters in the cjk column.
            let runs: Vec<String> = cjk_runs(&text)
                .map(|r| {
                    let spaced: Vec<String> = r.chars().map(String::from).collect();
                    format!("cjk : \"{}\"", spaced.join(" "))
                })
                .collect();
            term = format!("({term} OR ({}))", runs.join(" AND "));
        }
        items.push(if negated { format!("NOT {term}") } else { term });
    }
    // FTS5 takes implicit AND between phrases but not next to a parenthesized group (a CJK
    // term): `"a" ("b" OR …)` is a syntax error, so those get an explicit AND.
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            let prev = &items[i - 1];
            let grouped = |t: &str| t.starts_with('(') || t.starts_with("NOT (");
            // A positive term after an exclusion gets an explicit AND too: FTS5 binds an
            // implicit AND tighter than NOT (`"a" NOT "b" "c"` is `a NOT (b c)`), and `a -b c`
            // means `(a NOT b) AND c`.
            if prev != "OR"
                && item != "OR"
                && !item.starts_with("NOT ")
                && (grouped(prev) || grouped(item) || prev.starts_with("NOT "))
            {
                out.push_str(" AND ");
            } else {
                out.push(' ');
            }
        }
        out.push_str(item);
    }
    out
}

/// A query as a search by meaning reads it: the text to encode, and the terms whose matches
/// are left out, as items of [`parse_query`]'s shape (the terms positive, joined by
/// [`QueryItem::Or`]; empty when the query excludes nothing).
///
/// An exclusion is `-word`, `-"a phrase"`, `NOT word` or `NOT "a phrase"` (a trailing `*`
/// makes a prefix), wherever it stands: a search by meaning has no alternatives, and reads no
/// word cap (a long question is encoded whole; `-1` stays a number). The text is `input`
/// itself when it excludes nothing; else `input` without its exclusions (they would pull the
/// query's vector towards what it excludes). A repeated exclusion counts once.
///
/// Errors: [`crate::Error::Invalid`] for more than [`MAX_QUERY_TERMS`] distinct exclusions
/// (each is checked against every hit).
pub fn meaning_query(input: &str) -> crate::Result<(String, Vec<QueryItem>)> {
    let clean: String = input
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut kept: Vec<&str> = Vec::new();
    let mut excluded: Vec<QueryItem> = Vec::new();
    let mut seen: Vec<(String, bool, bool)> = Vec::new();
    let mut not = false;
    let mut rest = clean.as_str();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        // One token: a `"quoted phrase"` (to its closing quote, or the end) with a `-` before
        // it or not, or a run of other characters up to a space or a quote.
        let dash = rest.starts_with("-\"");
        let body = if dash { &rest[1..] } else { rest };
        let (token, phrase, len) = if let Some(q) = body.strip_prefix('"') {
            let end = q.find('"').unwrap_or(q.len());
            let mut n = 1 + end + usize::from(end < q.len());
            if body[n..].starts_with('*') {
                n += 1;
            }
            (&body[..n], true, n + usize::from(dash))
        } else {
            let end = rest
                .find(|c: char| c.is_whitespace() || c == '"')
                .unwrap_or(rest.len());
            (&rest[..end], false, end)
        };
        let whole = &rest[..len];
        rest = &rest[len..];
        if !phrase && token == "NOT" {
            not = true;
            continue;
        }
        let negated = not
            || dash
            || (!phrase
                && token
                    .strip_prefix('-')
                    .and_then(|r| r.chars().next())
                    .is_some_and(char::is_alphabetic));
        not = false;
        if !negated {
            kept.push(whole);
            continue;
        }
        let t = token.strip_prefix('-').unwrap_or(token);
        let prefix = t.ends_with('*');
        let t = t.trim_end_matches('*');
        let text = if phrase {
            t.strip_prefix('"').unwrap_or(t).trim_end_matches('"')
        } else {
            t
        };
        if !text.chars().any(char::is_alphanumeric) {
            continue;
        }
        let key = (text.to_string(), phrase, prefix);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        if !excluded.is_empty() {
            excluded.push(QueryItem::Or);
        }
        excluded.push(QueryItem::Term {
            text: text.to_string(),
            phrase,
            prefix,
            negated: false,
        });
    }
    if seen.len() > MAX_QUERY_TERMS {
        return Err(crate::Error::Invalid(format!(
            "the query excludes more than {MAX_QUERY_TERMS} words: memtrail checks at most \
             {MAX_QUERY_TERMS}; shorten it"
        )));
    }
    if excluded.is_empty() {
        return Ok((input.to_string(), excluded));
    }
    Ok((kept.join(" "), excluded))
}

/// The runs of CJK characters ([`crate::store::is_cjk`]) in `text`, in order.
pub fn cjk_runs(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !crate::store::is_cjk(c))
        .filter(|r| !r.is_empty())
}

/// The most sessions a store reads for a prefix of an id ([`pick_prefix_match`]'s `rows`).
pub const PREFIX_CANDIDATES: usize = 6;

/// Session `id` among `rows` (row id, agent id; the one meant first: this machine's, then the
/// latest updated), the sessions whose agent id starts with `id`: the only one, or the only
/// main session when the others are its sub-agents (`<id>/agent-…`: a prefix of a session id
/// also prefixes theirs). One agent id stored from several machines is one match (the first).
///
/// Errors: [`crate::Error::NotFound`] when `rows` is empty, [`crate::Error::Invalid`] when
/// the prefix is ambiguous (the message lists the candidates, "among them" when there were
/// [`PREFIX_CANDIDATES`]) or empty.
pub fn pick_prefix_match(id: &str, mut rows: Vec<(i64, String)>) -> crate::Result<i64> {
    if id.trim().is_empty() {
        // The start of every id: not a choice of one.
        return Err(crate::Error::Invalid(
            "an empty session id: give a session's id or the start of it (`memtrail sessions \
             list` shows them)"
                .into(),
        ));
    }
    // The stores read at most this many candidates: as many means there may be more.
    let capped = rows.len() >= PREFIX_CANDIDATES;
    let mut seen = std::collections::HashSet::new();
    rows.retain(|r| seen.insert(r.1.clone()));
    let mains: Vec<&(i64, String)> = rows.iter().filter(|r| !r.1.contains('/')).collect();
    if rows.len() > 1
        && mains.len() == 1
        && rows
            .iter()
            .all(|r| r.1 == mains[0].1 || r.1.starts_with(&format!("{}/", mains[0].1)))
    {
        return Ok(mains[0].0);
    }
    match rows.len() {
        0 => Err(crate::Error::NotFound(format!(
            "no session `{id}` in the store"
        ))),
        1 => Ok(rows[0].0),
        _ => Err(crate::Error::Invalid(format!(
            "`{id}` matches several sessions{}: {}",
            if capped { ", among them" } else { "" },
            rows.iter()
                .map(|r| r.1.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// What tells a copy of a message from another message ([`best_distinct`]): its session's
/// agent, its id, its time (ms), the length of its text and the text's first 256 characters.
pub type CopyKey = (String, String, i64, Option<i64>, Option<String>);

/// A [`CopyKey`]'s identity within this process (a 64-bit hash): what [`Hit::copy`] holds.
pub fn copy_id(k: &CopyKey) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    k.hash(&mut h);
    h.finish()
}

/// The [`copy_id`] of each row of `keyed` (as given to [`best_distinct`]) that has a copy key.
pub fn copy_ids(keyed: &[(i64, f64, Option<CopyKey>)]) -> std::collections::HashMap<i64, u64> {
    keyed
        .iter()
        .filter_map(|(id, _, k)| Some((*id, copy_id(k.as_ref()?))))
        .collect()
}

/// The best `limit` of `keyed` (row id, score: higher is better, and the copy key of a message
/// with a time), each copied message once. A session forked or resumed into a new transcript
/// (`claude --fork-session`) holds copies of the earlier messages: same agent, message id,
/// time and text; only the best ranked copy (at equal scores the first given) is kept. Equal
/// scores keep the order given.
pub fn best_distinct(mut keyed: Vec<(i64, f64, Option<CopyKey>)>, limit: usize) -> Vec<(i64, f64)> {
    keyed.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut ranked = Vec::with_capacity(keyed.len().min(limit));
    let mut seen = std::collections::HashSet::new();
    for (rowid, score, copy_key) in keyed {
        // Without a time (Cursor), ids such as `line-3` are not unique across sessions.
        if copy_key.is_some_and(|k| !seen.insert(k)) {
            continue;
        }
        ranked.push((rowid, score));
        if ranked.len() == limit {
            break;
        }
    }
    ranked
}

/// A message's prose, thinking and tool calls from its stored parts (`parts_json`, the JSON
/// array of [`memtrail_adapters::Part`]; unreadable JSON gives nothing): text blocks joined by
/// blank lines (else a stray tool result's output), thinking blocks likewise (`None` when
/// none), tool calls in order. Tool outputs (and a stray result) longer than `max_output`
/// bytes are cut with a note of the bytes left out.
pub fn view_parts(
    parts_json: &str,
    max_output: Option<usize>,
) -> (String, Option<String>, Vec<ToolCall>) {
    use memtrail_adapters::Part;
    let parts: Vec<Part> = serde_json::from_str(parts_json).unwrap_or_default();
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut text = String::new();
    let mut thinking = String::new();
    let join = |acc: &mut String, t: String| {
        if acc.is_empty() {
            *acc = t;
        } else {
            acc.push_str("\n\n");
            acc.push_str(&t);
        }
    };
    for p in parts {
        match p {
            Part::Text { text: t } => join(&mut text, t),
            Part::Thinking { text: t } => join(&mut thinking, t),
            Part::ToolCall(mut c) => {
                if let (Some(max), Some(o)) = (max_output, c.output.as_mut()) {
                    truncate_note(o, max);
                }
                calls.push(c);
            }
            Part::ToolResult { output, .. } if text.is_empty() => {
                text = output;
                if let Some(max) = max_output {
                    truncate_note(&mut text, max);
                }
            }
            _ => {}
        }
    }
    (text, (!thinking.is_empty()).then_some(thinking), calls)
}

/// A directory path with `.` and `..` resolved lexically (symbolic links are not followed, as
/// agents record the folder as the user typed it) and no trailing `/`: `/a/b/../c/` → `/a/c`.
/// A relative path stays relative; the root is the empty string (so `{dir}/` is its prefix).
pub fn normalize_dir(p: &str) -> String {
    let absolute = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            c => parts.push(c),
        }
    }
    let joined = parts.join("/");
    if absolute {
        if joined.is_empty() {
            String::new()
        } else {
            format!("/{joined}")
        }
    } else if joined.is_empty() {
        ".".to_string()
    } else {
        joined
    }
}

/// `s` for a `LIKE … ESCAPE '\'` pattern: `\`, `%` and `_` escaped with `\`.
pub fn like_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

/// The alternatives of the FTS5 query `q` (from [`fts_query`]): its parts between the `OR`s
/// outside quotes and parentheses, each a query of its own, in order; `[q]` when it has none.
/// FTS5 binds an implicit `AND` and a `NOT` tighter than `OR` (`a b OR c NOT d` is `(a b) OR
/// (c NOT d)`), so `q` matches a message exactly when one of them does.
pub(crate) fn top_level_alternatives(q: &str) -> Vec<&str> {
    let (mut depth, mut quoted) = (0i32, false);
    let b = q.as_bytes();
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'"' => quoted = !quoted,
            b'(' if !quoted => depth += 1,
            b')' if !quoted => depth -= 1,
            b'O' if !quoted
                && depth == 0
                && b[i..].starts_with(b"OR ")
                && (i == 0 || b[i - 1] == b' ') =>
            {
                parts.push(q[start..i].trim());
                start = i + 3;
            }
            _ => {}
        }
    }
    parts.push(q[start..].trim());
    parts.retain(|p| !p.is_empty());
    if parts.is_empty() {
        parts.push(q);
    }
    parts
}

/// How many of the newest matches an unfiltered search ranks by BM25 (see [`search`]).
pub const SEARCH_CANDIDATES: usize = 1024;

/// A full-text search's hits, and whether its ranking reached every match
/// ([`search_ranking`], [`crate::read::ReadStore::search_ranking`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ranking {
    /// The best hits, best first (at most the filter's limit).
    pub hits: Vec<Hit>,
    /// True when a walk reached its bound: it ranked the newest [`SEARCH_CANDIDATES`] matches
    /// that pass the filter (of each alternative of an `OR`) and looked no further, so older
    /// messages may hold the words too (more words, or the filters [`narrowing_filters`] names,
    /// reach them); a query with exactly that many matches gives true as well
    /// (telling it from one with more would take a walk past the bound). False when every
    /// match was ranked.
    pub newest_only: bool,
}

/// A filter that can narrow a search whose ranking stopped at its bound
/// ([`Ranking::newest_only`]) to older matches ([`narrowing_filters`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Narrowing {
    /// An end date (or an earlier one).
    Until,
    Agent,
    Project,
}

/// The filters worth suggesting to reach the older matches of a search run with `f` whose
/// ranking stopped at its bound, in this order: an end date always (an earlier one when `f`
/// has one), an agent unless `f` names one or a session, a project unless `f` names one or a
/// session (a session has one agent and one project).
pub fn narrowing_filters(f: &SearchFilter) -> Vec<Narrowing> {
    let mut out = vec![Narrowing::Until];
    if f.agent.is_none() && f.session.is_none() {
        out.push(Narrowing::Agent);
    }
    if f.project.is_none() && f.session.is_none() {
        out.push(Narrowing::Project);
    }
    out
}

/// [`narrowing_filters`] of `f` in one interface's words: `until[0]` for an end date (`until[1]`
/// when `f` has one: an earlier one), `agent`, `project`.
pub fn narrowing_names(
    f: &SearchFilter,
    until: [&str; 2],
    agent: &str,
    project: &str,
) -> Vec<String> {
    narrowing_filters(f)
        .into_iter()
        .map(|n| match n {
            Narrowing::Until => until[usize::from(f.until.is_some())].to_string(),
            Narrowing::Agent => agent.to_string(),
            Narrowing::Project => project.to_string(),
        })
        .collect()
}

/// `items` as an English list joined by "or": `a`, `a or b`, `a, b or c`.
pub fn or_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// A snippet taken from the `cjk` column has a space between characters: drop the spaces
/// between two CJK characters (highlight markers in between are kept).
pub fn compact_cjk(snippet: &str) -> String {
    let chars: Vec<char> = snippet.chars().collect();
    let is_mark = |c: char| c == HL_START || c == HL_END;
    let mut out = String::with_capacity(snippet.len());
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let before = chars[..i].iter().rev().find(|&&x| !is_mark(x));
            let after = chars[i + 1..].iter().find(|&&x| !is_mark(x));
            if before.is_some_and(|&b| crate::store::is_cjk(b))
                && after.is_some_and(|&a| crate::store::is_cjk(a))
            {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// Whether `snippet` (FTS5's, hits between [`HL_START`] and [`HL_END`]) came from the index's
/// `cjk` column: it holds a hit and nothing but CJK characters, spaces, line breaks and `…`.
/// Such a snippet has lost the message's other words (`src/parse.rs の parse_temp に…`
/// shown as `の\nに負の値…`): [`cjk_snippet_in`] makes it again from the message's text.
pub fn is_cjk_column_snippet(snippet: &str) -> bool {
    snippet.contains(HL_START)
        && snippet
            .chars()
            .all(|c| crate::store::is_cjk(c) || matches!(c, ' ' | '\n' | '…' | HL_START | HL_END))
}

/// A snippet of `text` around the first place it holds the CJK words marked in `marked` (a
/// snippet of the `cjk` column, [`is_cjk_column_snippet`]): 96 characters from 32 before it,
/// every marked word's occurrences in it between [`HL_START`] and [`HL_END`], `…` where it is
/// cut, line breaks as spaces. `None` when `text` holds none of them.
pub fn cjk_snippet_in(text: &str, marked: &str) -> Option<String> {
    const BEFORE: usize = 32;
    const SNIPPET_CHARS: usize = 96;
    // The marked words, their characters joined again (the column spaces them out).
    let mut words: Vec<String> = Vec::new();
    let mut rest = marked;
    while let Some(a) = rest.find(HL_START) {
        let after = &rest[a + HL_START.len_utf8()..];
        let Some(b) = after.find(HL_END) else { break };
        let w: String = after[..b].chars().filter(|c| !c.is_whitespace()).collect();
        if !w.is_empty() && !words.contains(&w) {
            words.push(w);
        }
        rest = &after[b + HL_END.len_utf8()..];
    }
    // Longest first, so that a word inside another is marked as part of it.
    words.sort_by_key(|w| std::cmp::Reverse(w.len()));
    let first = words.iter().filter_map(|w| text.find(w.as_str())).min()?;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let at = chars.iter().position(|&(i, _)| i == first)?;
    let start = at.saturating_sub(BEFORE);
    let end = (start + SNIPPET_CHARS).min(chars.len());
    let byte = |k: usize| chars.get(k).map_or(text.len(), |&(i, _)| i);
    let window = &text[byte(start)..byte(end)];
    let mut out = String::with_capacity(window.len() + 16);
    if start > 0 {
        out.push('…');
    }
    let mut i = 0;
    'scan: while i < window.len() {
        for w in &words {
            if window[i..].starts_with(w.as_str()) {
                out.push(HL_START);
                out.push_str(w);
                out.push(HL_END);
                i += w.len();
                continue 'scan;
            }
        }
        let c = window[i..].chars().next().expect("a char");
        out.push(if c == '\n' || c == '\r' || c == '\t' {
            ' '
        } else {
            c
        });
        i += c.len_utf8();
    }
    if end < chars.len() {
        out.push('…');
    }
    Some(out)
}

/// BM25 relevance (positive, higher is better) lifted by up to 25% for recent messages, halving
/// every 30 days.
pub fn with_recency(relevance: f64, ts: Option<i64>, now: i64) -> f64 {
    let boost = match ts {
        Some(t) => {
            let age_days = ((now - t).max(0) as f64) / 86_400_000.0;
            0.25 * 0.5f64.powf(age_days / 30.0)
        }
        None => 0.0,
    };
    relevance * (1.0 + boost)
}

/// One session in a list.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SessionSummary {
    /// The session's id (the agent's own).
    pub session_id: String,
    /// The agent (`claude`, `codex`, …).
    pub agent: String,
    /// The machine it was captured on: its label ([`crate::machine`]).
    pub machine: String,
    /// The session's title; `None` when untitled.
    pub title: Option<String>,
    /// Its project folder (a path); `None` when unknown.
    pub project: Option<String>,
    /// Its model; `None` when unknown.
    pub model: Option<String>,
    /// The git branch it ran on; `None` when unknown.
    pub git_branch: Option<String>,
    /// Its first message: RFC 3339 UTC with milliseconds; `None` when unknown.
    pub started_at: Option<String>,
    /// Its last message: RFC 3339 UTC with milliseconds; `None` when unknown.
    pub updated_at: Option<String>,
    /// Messages stored for it (count).
    pub messages: i64,
    /// The parent session of a sub-agent session; `None` for a top-level session.
    pub parent_session_id: Option<String>,
}

/// Filters for [`list_sessions`].
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub agent: Option<String>,
    pub project: Option<String>,
    /// Only sessions of this machine: its label or its id ([`crate::machine`]).
    pub machine: Option<String>,
    /// Only sessions last active at or after this time (ms since the Unix epoch).
    pub since: Option<i64>,
    /// Only sessions last active at or before this time (ms since the Unix epoch).
    pub until: Option<i64>,
    /// Sessions to skip before the first one returned (a page's start; 0 for the first page).
    pub offset: usize,
    pub limit: usize,
}

/// One message of a session, as shown by `sessions show` and `get_session`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MessageView {
    /// The message's id.
    pub id: String,
    /// 0-based position in the session.
    pub index: i64,
    /// `user`, `assistant`, `tool` or `system`.
    pub role: String,
    /// `text`, `tool_call`, … (what the message holds).
    pub kind: String,
    /// The message's prose (text blocks joined by blank lines; a stray tool result's output).
    pub text: String,
    /// The model's thinking blocks, when it recorded any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// When it was written: RFC 3339 UTC with milliseconds; `None` when unknown.
    pub timestamp: Option<String>,
    /// The model that wrote it; `None` for user messages and when unknown.
    pub model: Option<String>,
    /// Its tool calls, in order (empty when none).
    pub tool_calls: Vec<ToolCall>,
}

/// A session with a page of its messages.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SessionView {
    /// The session.
    pub session: SessionSummary,
    /// Index (0-based) of the first message returned.
    pub offset: i64,
    /// How many messages the session has in all (count; `messages` may be a page of them).
    pub total: i64,
    /// The page of messages, in session order.
    pub messages: Vec<MessageView>,
    /// Child (sub-agent) sessions.
    pub children: Vec<String>,
}

/// Cut `s` to at most `max` bytes (on a character boundary) and note the bytes left out
/// (`\n… [N more bytes]`); unchanged when it is no longer.
pub fn truncate_note(s: &mut String, max: usize) {
    if s.len() > max {
        let keep = crate::store::cap(s, max).len();
        let left = s.len() - keep;
        s.truncate(keep);
        s.push_str(&format!("\n… [{left} more bytes]"));
    }
}

/// Render a session as Markdown: a title, a line of facts, then each message with its tool calls
/// (input as JSON, output in a fence). The facts are one line each: a line break in a project
/// folder or a session id is shown as a blank, so that it cannot forge a fact.
pub fn session_markdown(v: &SessionView) -> String {
    use crate::safe_text::one_line_field;
    use std::fmt::Write;
    let s = &v.session;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# {}\n",
        s.title.as_deref().unwrap_or("(untitled session)")
    );
    let _ = writeln!(
        out,
        "- session: `{}` ({})\n- project: {}\n- time: {} → {}\n- messages: {}{}",
        one_line_field(&s.session_id),
        s.agent,
        one_line_field(s.project.as_deref().unwrap_or("?")),
        s.started_at.as_deref().unwrap_or("?"),
        s.updated_at.as_deref().unwrap_or("?"),
        s.messages,
        s.parent_session_id
            .as_deref()
            .map(|p| format!("\n- parent session: `{}`", one_line_field(p)))
            .unwrap_or_default()
    );
    for c in &v.children {
        let _ = writeln!(out, "- sub-agent session: `{}`", one_line_field(c));
    }
    out.push_str(&messages_markdown(&v.messages));
    out
}

/// The messages part of [`session_markdown`]: each message with its tool calls, as it renders
/// them (a page at a time, for a long session's export).
pub fn messages_markdown(messages: &[MessageView]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for m in messages {
        let who = match (m.role.as_str(), m.kind.as_str()) {
            (_, "summary") => "Compaction summary".to_string(),
            // Kept by the agent with the MCP tool `remember`: not something it said.
            (_, "note") => "Note".to_string(),
            ("user", _) => "User".to_string(),
            ("assistant", _) => "Assistant".to_string(),
            ("tool", _) => "Tool result".to_string(),
            // A message the agent wrote itself (a Claude Code task notification, a Codex
            // sub-agent's message), named as `memtrail browse` names it.
            ("system", _) => "System".to_string(),
            (r, _) => r.to_string(),
        };
        let _ = writeln!(
            out,
            "\n## {} · #{}{}\n",
            who,
            m.index,
            m.timestamp
                .as_deref()
                .map(|t| format!(" · {t}"))
                .unwrap_or_default()
        );
        if let Some(t) = &m.thinking {
            let quoted: Vec<String> = t.lines().map(|l| format!("> {l}")).collect();
            let _ = writeln!(out, "> *thinking*\n>\n{}\n", quoted.join("\n"));
        }
        if !m.text.is_empty() {
            let _ = writeln!(out, "{}\n", m.text.trim_end());
        }
        for c in &m.tool_calls {
            let input = serde_json::to_string_pretty(&c.input).unwrap_or_default();
            let _ = writeln!(out, "### Tool: {}\n\n```json\n{}\n```\n", c.name, input);
            match &c.output {
                Some(o) => {
                    let fence = fence_for(o);
                    let _ = writeln!(
                        out,
                        "{}\n\n{fence}\n{}\n{fence}\n",
                        if c.is_error {
                            "**Error:**"
                        } else {
                            "**Output:**"
                        },
                        o.trim_end()
                    );
                }
                None => {
                    let _ = writeln!(out, "*(no result recorded)*\n");
                }
            }
        }
    }
    out
}

/// A code fence longer than any run of backticks inside `s`.
fn fence_for(s: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

#[cfg(test)]
mod tests {
    /// The filters suggested to reach older matches: none already set, none a session fixes.
    #[test]
    fn narrowing_filters_leave_out_what_the_search_already_fixes() {
        use Narrowing::*;
        let f = |agent: bool, project: bool, session: bool, until: bool| SearchFilter {
            agent: agent.then(|| "claude".to_string()),
            project: project.then(|| "/p".to_string()),
            session: session.then(|| "abc".to_string()),
            until: until.then_some(1),
            ..Default::default()
        };
        assert_eq!(
            narrowing_filters(&f(false, false, false, false)),
            [Until, Agent, Project]
        );
        assert_eq!(
            narrowing_filters(&f(false, false, false, true)),
            [Until, Agent, Project]
        );
        assert_eq!(
            narrowing_filters(&f(true, false, false, false)),
            [Until, Project]
        );
        assert_eq!(
            narrowing_filters(&f(false, true, false, false)),
            [Until, Agent]
        );
        assert_eq!(narrowing_filters(&f(true, true, false, false)), [Until]);
        assert_eq!(narrowing_filters(&f(false, false, true, false)), [Until]);
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(or_list(&s(&[])), "");
        assert_eq!(or_list(&s(&["a"])), "a");
        assert_eq!(or_list(&s(&["a", "b"])), "a or b");
        assert_eq!(or_list(&s(&["a", "b", "c"])), "a, b or c");
    }

    /// A query of exclusions alone says what to add; one with no word at all says it holds
    /// none (a new user's walkthrough: `NOT test` was said to hold no searchable word).
    #[test]
    fn a_query_of_exclusions_alone_says_so() {
        for q in ["NOT test", "-test", "-\"a phrase\" -b*", "x OR -y"] {
            assert!(super::parse_query(q).is_none() || q == "x OR -y", "{q}");
        }
        for q in ["NOT test", "-test", "-\"a phrase\" -b*"] {
            assert_eq!(
                super::nothing_to_search(q),
                format!(
                    "the query `{q}` only excludes words (`-word`, `NOT word`): add a word to search for"
                )
            );
        }
        for q in ["???", "()", "", "NOT", "-"] {
            assert_eq!(
                super::nothing_to_search(q),
                format!("the query `{q}` holds no searchable word")
            );
        }
    }

    /// An empty id is refused rather than taken as the start of every id, and a list of
    /// candidates cut at what the stores read says so (found by a new user's walkthrough:
    /// `sessions show ''` listed 6 sessions of 16 as "several").
    #[test]
    fn a_prefix_is_refused_when_empty_and_its_candidates_say_when_cut() {
        let rows = |n: usize| -> Vec<(i64, String)> {
            (0..n).map(|i| (i as i64, format!("ab{i}"))).collect()
        };
        let err = |id: &str, r| super::pick_prefix_match(id, r).unwrap_err().to_string();
        for id in ["", "  "] {
            assert!(err(id, rows(3)).contains("an empty session id"), "{id:?}");
        }
        assert!(err("ab", rows(2)).ends_with("`ab` matches several sessions: ab0, ab1"));
        assert!(
            err("ab", rows(super::PREFIX_CANDIDATES)).ends_with(
                "`ab` matches several sessions, among them: ab0, ab1, ab2, ab3, ab4, ab5"
            )
        );
        assert_eq!(super::pick_prefix_match("ab", rows(1)).unwrap(), 0);
    }

    /// Headings of `sessions show` / `export`: a system message was headed `## system`
    /// among `## User` and `## Assistant` (`memtrail browse` already said `System`).
    #[test]
    fn message_headings_are_capitalized_for_every_role() {
        let m = |role: &str, kind: &str| super::MessageView {
            id: "m".into(),
            index: 3,
            role: role.into(),
            kind: kind.into(),
            text: "x".into(),
            thinking: None,
            timestamp: None,
            model: None,
            tool_calls: Vec::new(),
        };
        let heads: Vec<String> = super::messages_markdown(&[
            m("user", "text"),
            m("system", "text"),
            m("system", "summary"),
        ])
        .lines()
        .filter(|l| l.starts_with("## "))
        .map(str::to_string)
        .collect();
        assert_eq!(
            heads,
            [
                "## User · #3",
                "## System · #3",
                "## Compaction summary · #3"
            ]
        );
    }

    #[test]
    fn a_cjk_column_snippet_is_made_again_from_the_message() {
        use super::{HL_END as E, HL_START as S};
        let marked = format!("の\nに {S}負 の 値{E} の テ ス ト を 追 加 し て");
        assert!(super::is_cjk_column_snippet(&marked));
        assert!(!super::is_cjk_column_snippet(&format!(
            "src/parse.rs の {S}負の値{E}"
        )));
        assert!(!super::is_cjk_column_snippet("の に"));
        let body = "src/parse.rs の parse_temp に負の値のテストを追加して 🌡️";
        assert_eq!(
            super::cjk_snippet_in(body, &marked).unwrap(),
            format!("src/parse.rs の parse_temp に{S}負の値{E}のテストを追加して 🌡️")
        );
        // Cut around the first hit, every occurrence marked, line breaks as spaces.
        let long = format!("{}\n負の値と負の値\tend{}", "x".repeat(40), "y".repeat(100));
        let got = super::cjk_snippet_in(&long, &marked).unwrap();
        assert_eq!(
            got,
            // 40 x and a line break before the hit: 31 x, a space, then 7 + 4 characters.
            format!(
                "…{} {S}負の値{E}と{S}負の値{E} end{}…",
                "x".repeat(31),
                "y".repeat(96 - 32 - 7 - 4)
            )
        );
        assert_eq!(super::cjk_snippet_in("nothing here", &marked), None);
    }

    #[test]
    fn a_query_with_the_search_syntax_asks_for_exact_words() {
        for q in [
            "\"hidden files\"",
            "db -mysql",
            "db NOT mysql",
            "datab*",
            "a -\"b c\"",
        ] {
            assert!(super::has_operators(q), "{q}");
        }
        // `OR` widens; a lone dash, a dash inside a word, `*` alone and `not` in prose do not.
        for q in [
            "a OR b",
            "ls - la",
            "x-ray vision",
            "*",
            "do not panic",
            "ls -",
        ] {
            assert!(!super::has_operators(q), "{q}");
        }
    }

    use super::*;

    #[test]
    fn a_query_past_the_term_cap_is_refused_not_cut() {
        let words = |n: usize| {
            (0..n)
                .map(|i| format!("w{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert!(refuse_over_term_cap(&words(MAX_QUERY_TERMS)).is_ok());
        // Punctuation or a repeated `AND` after the last term is no word.
        assert!(refuse_over_term_cap(&format!("{} ?! --", words(MAX_QUERY_TERMS))).is_ok());
        let e = refuse_over_term_cap(&words(MAX_QUERY_TERMS + 1)).unwrap_err();
        assert!(e.to_string().contains("more than 32 words"), "{e}");
        // An exclusion past the cap would be dropped, and its matches come back: refused.
        let e = refuse_over_term_cap(&format!("{} -beta", words(MAX_QUERY_TERMS)));
        assert!(e.is_err());
        assert_eq!(parse_query(&words(40)).unwrap().len(), MAX_QUERY_TERMS);
    }

    #[test]
    fn fts_query_neutralises_syntax() {
        // A NUL (which ends FTS5's query text) or another control character separates words.
        assert_eq!(fts_query("keep\u{0}word").unwrap(), r#""keep" "word""#);
        assert_eq!(fts_query("a\u{1b}[31mb").unwrap(), r#""a" "[31mb""#);
        assert_eq!(fts_query("hello world").unwrap(), r#""hello" "world""#);
        assert_eq!(fts_query("\"exact phrase\"").unwrap(), r#""exact phrase""#);
        assert_eq!(fts_query("pars*").unwrap(), r#""pars"*"#);
        assert_eq!(fts_query("a OR b").unwrap(), r#""a" OR "b""#);
        // A term repeated in another alternative is kept; within one, it counts once.
        assert_eq!(fts_query("a b OR a c").unwrap(), r#""a" "b" OR "a" "c""#);
        assert_eq!(fts_query("a b a OR c c").unwrap(), r#""a" "b" OR "c""#);
        assert_eq!(
            fts_query("gamma delta OR delta zeta").unwrap(),
            r#""gamma" "delta" OR "delta" "zeta""#
        );
        // A dropped term or an exclusion between `OR` and the next word keeps the `OR`; the
        // exclusion belongs to the next alternative.
        assert_eq!(fts_query("a OR - b").unwrap(), r#""a" OR "b""#);
        assert_eq!(fts_query("a OR ... b").unwrap(), r#""a" OR "b""#);
        assert_eq!(fts_query("a OR -b c").unwrap(), r#""a" OR "c" NOT "b""#);
        assert_eq!(fts_query("a OR NOT b c").unwrap(), r#""a" OR "c" NOT "b""#);
        // An `OR` with no word after it: its exclusions go to the last alternative.
        assert_eq!(fts_query("a OR -b").unwrap(), r#""a" NOT "b""#);
        // A word after an exclusion is ANDed explicitly: FTS5 reads `"a" NOT "b" "c"` as
        // `a NOT (b c)`.
        assert_eq!(fts_query("a -b c").unwrap(), r#""a" NOT "b" AND "c""#);
        assert_eq!(
            fts_query("a -b c OR d").unwrap(),
            r#""a" NOT "b" AND "c" OR "d""#
        );
        assert_eq!(fts_query("a AND b").unwrap(), r#""a" "b""#);
        // `-"a phrase"` excludes the phrase (it was searched as a required one), before or
        // after the positive words; a lone `-` before a word is no exclusion.
        assert_eq!(
            fts_query("test -\"cargo test\"").unwrap(),
            r#""test" NOT "cargo test""#
        );
        assert_eq!(
            fts_query("-\"cargo test\" test").unwrap(),
            r#""test" NOT "cargo test""#
        );
        assert_eq!(
            fts_query("test -\"cargo\"*").unwrap(),
            r#""test" NOT "cargo"*"#
        );
        assert_eq!(fts_query("foo-bar (baz").unwrap(), r#""foo-bar" "(baz""#);
        assert_eq!(
            fts_query("unbalanced \"quote").unwrap(),
            r#""unbalanced" "quote""#
        );
        assert_eq!(fts_query("say \"hi\"\"").unwrap(), r#""say" "hi""#);
        assert_eq!(fts_query("OR"), None);
        // A CJK term is a group: next to another term it needs an explicit AND.
        assert_eq!(
            fts_query("fix 日本").unwrap(),
            r#""fix" AND ("日本" OR (cjk : "日 本"))"#
        );
        assert_eq!(
            fts_query("日本 fix").unwrap(),
            r#"("日本" OR (cjk : "日 本")) AND "fix""#
        );
        assert_eq!(fts_query("( ) * - \"\""), None);
        assert_eq!(
            fts_query("東京 тест").unwrap(),
            "(\"東京\" OR (cjk : \"東 京\")) AND \"тест\""
        );
        // Repeated terms count once; NOT and -word exclude.
        assert_eq!(fts_query("the the the").unwrap(), r#""the""#);
        assert_eq!(fts_query("hello NOT py").unwrap(), r#""hello" NOT "py""#);
        assert_eq!(fts_query("hello -py").unwrap(), r#""hello" NOT "py""#);
        assert_eq!(fts_query("-py"), None, "only a negative term");
        // By meaning: the exclusions wherever they stand, as alternatives, and the positive
        // words alone encoded; a query excluding nothing is encoded as typed.
        let t = |text: &str, prefix: bool| QueryItem::Term {
            text: text.into(),
            phrase: false,
            prefix,
            negated: false,
        };
        assert_eq!(
            meaning_query("login break? OR auth -draft NOT old*").unwrap(),
            (
                "login break? OR auth".to_string(),
                vec![t("draft", false), QueryItem::Or, t("old", true)]
            )
        );
        assert_eq!(
            meaning_query("why did  the login break?").unwrap(),
            ("why did  the login break?".to_string(), vec![])
        );
        // Wherever an exclusion stands, a phrase too; `-1` stays a number; repeats count once.
        let phrase = QueryItem::Term {
            text: "old plan".into(),
            phrase: true,
            prefix: false,
            negated: false,
        };
        assert_eq!(
            meaning_query("-draft login -\"old plan\" ls -1 NOT draft").unwrap(),
            (
                "login ls -1".to_string(),
                vec![t("draft", false), QueryItem::Or, phrase]
            )
        );
        assert_eq!(
            meaning_query("-draft").unwrap(),
            (String::new(), vec![t("draft", false)])
        );
        // No word cap on what is encoded; a cap on exclusions.
        let long: String = (0..40).map(|i| format!("w{i} ")).collect();
        assert_eq!(meaning_query(&long).unwrap().0, long);
        let many: String = (0..33).map(|i| format!("-x{i} ")).collect();
        assert!(meaning_query(&format!("a {many}")).is_err());
        assert_eq!(
            fts_render(vec![t("draft", false), QueryItem::Or, t("old", true)]),
            r#""draft" OR "old"*"#
        );
        // An exclusion before the first positive term applies (after it: FTS5 takes no query
        // that begins with NOT).
        assert_eq!(
            fts_query("NOT hello world").unwrap(),
            r#""world" NOT "hello""#
        );
        assert_eq!(
            fts_query("-cargo -draft test notes").unwrap(),
            r#""test" NOT "cargo" NOT "draft" AND "notes""#
        );
        assert_eq!(
            fts_query("-cargo test OR build").unwrap(),
            r#""test" NOT "cargo" OR "build""#
        );
        assert_eq!(fts_query("-cargo -test"), None);
        // A dash before a number is part of it (`ls -1`), not an exclusion.
        assert_eq!(fts_query("ls -1").unwrap(), r#""ls" "-1""#);
        // At most MAX_QUERY_TERMS distinct terms.
        let long: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        assert_eq!(
            fts_query(&long.join(" ")).unwrap().matches('"').count(),
            2 * MAX_QUERY_TERMS
        );
    }

    #[test]
    fn only_a_users_or_is_a_top_level_or() {
        let or = |q: &str| top_level_alternatives(&fts_query(q).unwrap()).len() > 1;
        assert!(or("word5 OR refactor"));
        assert!(or("a b OR c"));
        assert!(!or("a b c"));
        assert!(!or("\"this OR that\""), "inside a phrase");
        assert!(!or("fix 日本"), "a CJK term's two forms");
        assert!(or("日本 OR fix"));
    }

    #[test]
    fn alternatives_are_the_parts_between_top_level_ors() {
        let alts = |q: &str| -> Vec<String> {
            top_level_alternatives(&fts_query(q).unwrap())
                .into_iter()
                .map(str::to_string)
                .collect()
        };
        assert_eq!(alts("a b OR c -d"), ["\"a\" \"b\"", "\"c\" NOT \"d\""]);
        assert_eq!(alts("a OR b OR c*"), ["\"a\"", "\"b\"", "\"c\"*"]);
        assert_eq!(alts("\"this OR that\""), ["\"this OR that\""]);
        assert_eq!(alts("x"), ["\"x\""]);
        // A CJK term's two forms stay one alternative.
        assert_eq!(alts("日本 OR fix").len(), 2);
        assert_eq!(alts("fix 日本").len(), 1);
    }

    #[test]
    fn directories_are_normalized_lexically() {
        assert_eq!(normalize_dir("/a/b/../c/"), "/a/c");
        assert_eq!(normalize_dir("/a/./b//c"), "/a/b/c");
        assert_eq!(normalize_dir("/a/x/../../b"), "/b");
        assert_eq!(normalize_dir("/.."), "");
        assert_eq!(normalize_dir("/"), "");
        assert_eq!(normalize_dir("a/../../b"), "../b");
        assert_eq!(normalize_dir("./"), ".");
    }

    #[test]
    fn fence_is_longer_than_content_backticks() {
        assert_eq!(fence_for("no ticks"), "```");
        assert_eq!(fence_for("has ```` four"), "`````");
    }
}

#[cfg(test)]
#[path = "scope_oracle.rs"]
mod scope_oracle;

#[cfg(test)]
#[path = "prefix_oracle.rs"]
pub(crate) mod prefix_oracle;
