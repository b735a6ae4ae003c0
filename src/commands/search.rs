//! `memtrail search`: full-text search over the captured messages.

use crate::cli::{SearchArgs, SearchMode};
use crate::common::{absolute, open_reader, open_store_read};
use crate::output::{printable, short_time};
use anyhow::Result;
use memtrail_runtime::StoreLocation;
use memtrail_runtime::query::{self, HL_END, HL_START, Hit, Matched, SearchFilter};
use memtrail_runtime::time::{Bound, parse_date};
use serde::Serialize;
use std::process::ExitCode;

/// `search --json` (schema: docs/json.md): the query as searched (its words joined by spaces)
/// and the hits, their snippets marked `**word**`.
#[derive(Serialize)]
struct Found<'a> {
    query: &'a str,
    /// How the hits were ranked: `lexical`, `semantic` or `hybrid`.
    mode: &'a str,
    hits: &'a [Hit],
    /// A full-text ranking that stopped at its bound: only the newest
    /// `SEARCH_CANDIDATES` matches were ranked (absent in a hybrid or semantic search).
    #[serde(skip_serializing_if = "Option::is_none")]
    newest_only: Option<bool>,
}

/// `memtrail search`: the hits (coloured on a terminal), or JSON; a note on stderr when new
/// messages could not be searched.
pub fn search(db: &StoreLocation, a: SearchArgs) -> Result<ExitCode> {
    let q = a.query.join(" ");
    let filter = SearchFilter {
        agent: a.agent.map(|x| x.as_str().to_string()),
        project: a.project.map(|p| absolute(&p)),
        session: a.session,
        machine: a.machine,
        since: a
            .since
            .as_deref()
            .map(|s| parse_date(s, Bound::Start))
            .transpose()?,
        until: a
            .until
            .as_deref()
            .map(|s| parse_date(s, Bound::End))
            .transpose()?,
        role: a.role.map(|r| r.as_str().to_string()),
        // One more than shown: whether the list is cut is then known, not guessed.
        limit: a.limit as usize + 1,
    };
    // A range that ends before it starts holds nothing: say so rather than "no matches".
    if let (Some(since), Some(until)) = (filter.since, filter.until)
        && since > until
    {
        anyhow::bail!(
            "--since {} is after --until {}: no message can be in that range (swap them?)",
            a.since.as_deref().unwrap_or_default(),
            a.until.as_deref().unwrap_or_default()
        );
    }
    let shown = a.limit as usize;
    let filtered = [
        ("--agent", filter.agent.is_some()),
        ("--project", filter.project.is_some()),
        ("--session", filter.session.is_some()),
        ("--machine", filter.machine.is_some()),
        ("--since", filter.since.is_some()),
        ("--until", filter.until.is_some()),
        ("--role", filter.role.is_some()),
    ]
    .iter()
    .filter(|f| f.1)
    .map(|f| f.0)
    .collect::<Vec<_>>();
    // The default mode (hybrid where the store holds vectors) does not fail for its model: a
    // model that cannot be read, or an endpoint that does not answer, leaves the search to
    // BM25, with a note once it has succeeded (when it fails too, its error is the one told).
    // A query written with the search syntax asks for exact words: by default it is ranked
    // by them alone.
    let mode = a
        .mode
        .or_else(|| memtrail_runtime::query::has_operators(&q).then_some(SearchMode::Lexical));
    let mut meaning_failed = None;
    let mut used = SearchMode::Lexical;
    let searched = match by_meaning(db, &q, &filter, mode) {
        Ok(s) => s,
        Err(e) if mode.is_none() => {
            meaning_failed = Some(e);
            Searched::Lexical(None)
        }
        Err(e) => return Err(e),
    };
    let mut empty_store = false;
    // Whether the full-text ranking stopped at its bound (`None`: not a full-text search).
    let mut newest_only = None;
    let (mut hits, unindexed) = match searched {
        Searched::Found(hits, unindexed) => {
            used = mode.unwrap_or(SearchMode::Hybrid);
            (hits, unindexed)
        }
        Searched::Lexical(opened) => {
            match opened.map_or_else(|| open_for_search(db), |s| Ok(Some(s)))? {
                Some(store) => {
                    let ranking = store.search_ranking(&q, &filter)?;
                    newest_only = Some(ranking.newest_only);
                    // The search indexes the queue first; when it could not (another process holds
                    // the write lock), the newest messages are not searched: say so.
                    (ranking.hits, store.unindexed())
                }
                None => {
                    empty_store = true;
                    newest_only = Some(false);
                    (Vec::new(), 0)
                }
            }
        }
    };
    // The search may hold 500 at most: a list of 500 may be cut, one of fewer is whole.
    let cut = hits.len() > shown || (shown == 500 && hits.len() == shown);
    hits.truncate(shown);
    if let Some(e) = meaning_failed {
        // As `main` shows an error: redacted, control characters as `�`.
        eprintln!(
            "note: searched by keyword only: the search by meaning failed: {}",
            crate::output::terminal_safe(&memtrail_runtime::redact::redact(
                &crate::output::error_chain(&e)
            ))
        );
    }
    if unindexed > 0 {
        eprintln!(
            "note: {unindexed} new message{} not searched: not yet in the search index (the store is busy); search again in a moment",
            if unindexed == 1 { " was" } else { "s were" }
        );
    }
    if a.json {
        for h in &mut hits {
            h.snippet = h.snippet.replace([HL_START, HL_END], "**");
        }
        out!(
            "{}",
            crate::output::json(&Found {
                query: &q,
                mode: used.as_str(),
                hits: &hits,
                newest_only,
            })?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if hits.is_empty() {
        let q = memtrail_adapters::one_line(&q, 80);
        if empty_store {
            out!(
                "No matches for {q:?}: there is no store yet (`memtrail import` reads your agents' transcripts into it)."
            );
        } else if !filtered.is_empty() {
            out!(
                "No matches for {q:?} with {} (without them there may be some).",
                filtered.join(", ")
            );
        } else {
            out!("No matches for {q:?}.");
        }
        return Ok(ExitCode::SUCCESS);
    }
    // A hybrid search always finds neighbours by meaning: say when none holds the words.
    if used == SearchMode::Hybrid && hits.iter().all(|h| h.matched == Some(Matched::Meaning)) {
        out!(
            "No message holds the words of {:?}; the closest by meaning:\n",
            memtrail_adapters::one_line(&q, 80)
        );
    }
    // Colour: the title bold, the matched words bold red (as grep). Without colour, plain
    // text: no Markdown markers, so that the output greps as the message reads.
    let color = crate::output::color();
    let (bold, hit, reset) = if color {
        ("\x1b[1m", "\x1b[1;31m", "\x1b[0m")
    } else {
        ("", "", "")
    };
    // On a terminal, a hit's first line fits its width: the title is cut (`…`) first.
    let columns = crate::output::terminal_columns();
    for (i, h) in hits.iter().enumerate() {
        let title = printable(h.title.as_deref().unwrap_or("(untitled)"), &[]);
        let about = format!(
            "  ({} · {} · {})",
            printable(&h.agent, &[]),
            printable(h.project.as_deref().unwrap_or("?"), &[]),
            printable(
                &h.timestamp.as_deref().map(short_time).unwrap_or("?".into()),
                &[]
            )
        );
        let number = format!("{}. ", i + 1);
        let title = match columns {
            Some(c) => {
                let used = unicode_width::UnicodeWidthStr::width(number.as_str())
                    + unicode_width::UnicodeWidthStr::width(about.as_str());
                crate::output::fit(&title, c.saturating_sub(used).max(8)).into_owned()
            }
            None => title,
        };
        out_styled!("{number}{bold}{title}{reset}{about}");
        let where_ = format!(
            "session {} · message #{} · {}{}",
            h.session_id,
            h.message_index,
            // A note the agent kept (MCP `remember`) is not something it said.
            if h.kind == "note" { "note" } else { &h.role },
            match (used, h.matched) {
                (SearchMode::Hybrid, Some(Matched::Meaning)) => " · by meaning",
                _ => "",
            }
        );
        match columns {
            Some(c) if c > 20 => {
                for line in wrap_marked(&where_, c - 3, &["", ""]) {
                    out!("   {line}");
                }
            }
            _ => out!("   {where_}"),
        }
        // On one line: line breaks and tabs (Go's test output) as spaces, not as `�`.
        let snip = printable(
            &h.snippet.replace(['\n', '\r', '\t'], " "),
            &[HL_START, HL_END],
        )
        .replace(HL_START, hit)
        .replace(HL_END, reset);
        // On a terminal the snippet wraps at its width, each line indented as the first.
        match columns {
            Some(c) if c > 20 => {
                for line in wrap_marked(snip.trim(), c - 3, &[hit, reset]) {
                    out_styled!("   {line}");
                }
                out!("");
            }
            _ => out_styled!("   {}\n", snip.trim()),
        }
    }
    if cut {
        eprintln!(
            "note: the list stops at {}; a larger -n (--limit) shows more",
            crate::output::plural(shown as u64, "hit", "hits")
        );
    }
    if newest_only == Some(true) {
        eprintln!("{}", newest_only_note(&filter, !filtered.is_empty()));
    }
    Ok(ExitCode::SUCCESS)
}

/// The note of a full-text ranking that stopped at its bound
/// ([`memtrail_runtime::query::Ranking::newest_only`]) run with `filter`: the options that can
/// still narrow it ([`query::narrowing_names`]).
fn newest_only_note(filter: &SearchFilter, filtered: bool) -> String {
    let options = query::narrowing_names(
        filter,
        ["--until", "an earlier --until"],
        "--agent",
        "--project",
    );
    format!(
        "note: only the newest {} matches{} were ranked; older messages may hold these words too: more words, or {}, reach them",
        query::SEARCH_CANDIDATES,
        if filtered {
            " that pass the filters"
        } else {
            ""
        },
        query::or_list(&options)
    )
}

/// A model and the store's vectors of it, ready to search by meaning.
pub struct Meaning {
    pub model: memtrail_embed::service::SharedEncoder,
    pub index: memtrail_embed::search::VectorIndex,
    /// Vectors newer than the side file (`None`: it was not usable), for
    /// [`Meaning::maintain`].
    newer: Option<usize>,
}

impl Meaning {
    /// Writes the side file when it was missing, unusable or far behind (a cache: errors are
    /// ignored, the next search only loads slower).
    pub fn maintain(&self, store: &memtrail_runtime::Store) {
        if self
            .newer
            .is_none_or(|n| n >= memtrail_embed::sidefile::REWRITE_AFTER)
        {
            let _ = memtrail_embed::sidefile::maintain(store, self.model.id(), self.model.dim());
        }
    }
}

/// The configured model (an `[embed]` endpoint, else the installed static model) and the
/// store's vectors of it, when the store holds that model's vectors: what the default (hybrid)
/// search uses; `None` for a lexical search (the store has no vectors, another model's, or no
/// model is set up). The cheap tests come first: a store without vectors reads no model and
/// asks no endpoint.
///
/// Errors: a configured model that cannot be read or reached; store errors.
pub fn by_default_meaning(store: &memtrail_runtime::Store) -> Result<Option<Meaning>> {
    let stored = store.embed_model()?;
    let configured = crate::commands::models::configured_id();
    if stored.is_none() || (configured.is_some() && configured != stored) {
        return Ok(None);
    }
    let Some(model) = crate::commands::models::encoder_for(stored.as_deref())? else {
        return Ok(None);
    };
    if stored.as_deref() != Some(model.id()) {
        return Ok(None);
    }
    let (index, newer) = memtrail_embed::search::VectorIndex::open(store, model.as_ref())?;
    Ok(Some(Meaning {
        model,
        index,
        newer,
    }))
}

/// The store for one search: a PostgreSQL store ([`open_reader`]), or the SQLite store read
/// through a memory map ([`memtrail_runtime::Store::map_for_reads`]); `None` when there is no
/// store yet.
fn open_for_search(
    db: &StoreLocation,
) -> Result<Option<Box<dyn memtrail_runtime::read::ReadStore>>> {
    if db.postgres_url().is_some() {
        return open_reader(db);
    }
    Ok(open_store_read(db)?.map(mapped))
}

/// `store` set up for a full-text search ([`memtrail_runtime::Store::map_for_reads`]), boxed.
/// Not for a search by meaning: it may read every vector, which the map would keep resident.
fn mapped(store: memtrail_runtime::Store) -> Box<dyn memtrail_runtime::read::ReadStore> {
    store.map_for_reads();
    Box::new(store)
}

/// Why a search by meaning cannot run: no model is set up, and how to set one up.
fn needs_model() -> anyhow::Error {
    anyhow::anyhow!(
        "search by meaning needs a model: install the local one with `memtrail models install` (or configure an endpoint in [embed] of {})",
        memtrail_runtime::privacy::config_path().display()
    )
}

/// What [`by_meaning`] did: searched by meaning (the hits and the count of unindexed
/// messages), or left a lexical search to the caller, with the store it opened to decide
/// (`None`: none opened), so that the search does not open it a second time (~0.7 ms of a
/// 9 ms CLI search on the 1 GB bench store).
enum Searched {
    Found(Vec<Hit>, i64),
    Lexical(Option<Box<dyn memtrail_runtime::read::ReadStore>>),
}

/// `search --mode semantic|hybrid` (and the default, hybrid, on a store that holds the
/// installed model's vectors): the hits and the count of unindexed messages; else
/// [`Searched::Lexical`] for a lexical search (asked for, or the default without vectors),
/// which the caller runs.
///
/// Errors: semantic or hybrid asked for on a PostgreSQL store, without the model installed, or
/// on a store without vectors; store errors.
fn by_meaning(
    db: &StoreLocation,
    q: &str,
    filter: &SearchFilter,
    mode: Option<SearchMode>,
) -> Result<Searched> {
    if mode == Some(SearchMode::Lexical) {
        return Ok(Searched::Lexical(None));
    }
    let asked = mode.is_some();
    if db.postgres_url().is_some() {
        return by_meaning_in(db, q, filter, mode);
    }
    let Some(store) = open_store_read(db)? else {
        // No store yet: nothing to find, but a search by meaning without a model says so
        // first, as it does once there is a store.
        if asked && !crate::commands::models::set_up() {
            return Err(needs_model());
        }
        return Ok(Searched::Lexical(None));
    };
    let meaning = if asked {
        let model = crate::commands::models::encoder_for(store.embed_model()?.as_deref())?
            .ok_or_else(needs_model)?;
        if store.embed_model()?.as_deref() != Some(model.id()) {
            anyhow::bail!(
                "the store holds no vectors of {}: run `memtrail embed` first",
                model.id()
            );
        }
        // The side file mapped (and the vectors newer than it from SQLite), else every
        // vector from SQLite, once; the side file is written after the search.
        let (index, newer) = memtrail_embed::search::VectorIndex::open(&store, model.as_ref())?;
        Meaning {
            model,
            index,
            newer,
        }
    } else {
        match by_default_meaning(&store)? {
            Some(m) => m,
            None => return Ok(Searched::Lexical(Some(mapped(store)))),
        }
    };
    let (model, index) = (&meaning.model, &meaning.index);
    let hits = match mode.unwrap_or(SearchMode::Hybrid) {
        SearchMode::Semantic => {
            memtrail_embed::search::semantic(&store, model.as_ref(), index, q, filter)?
        }
        _ => memtrail_embed::search::hybrid(&store, model.as_ref(), index, q, filter)?,
    };
    meaning.maintain(&store);
    let unindexed = memtrail_runtime::read::ReadStore::unindexed(&store);
    Ok(Searched::Found(hits, unindexed))
}

/// [`by_meaning`] on a PostgreSQL store: the database ranks the vectors (pgvector), the query
/// is encoded here by the configured model; the default is hybrid when the database holds
/// vectors of that model, else lexical (without loading the model when none is set up).
///
/// Errors: semantic or hybrid asked for without a model, on a database without pgvector, or
/// without vectors of the configured model; the database's errors.
fn by_meaning_in(
    db: &StoreLocation,
    q: &str,
    filter: &SearchFilter,
    mode: Option<SearchMode>,
) -> Result<Searched> {
    let asked = mode.is_some();
    let configured = crate::commands::models::configured_id();
    if !asked && configured.is_none() {
        return Ok(Searched::Lexical(None));
    }
    let Some(store) = open_reader(db)? else {
        return Ok(Searched::Lexical(None));
    };
    let model = match crate::commands::models::encoder()? {
        Some(m) => m,
        None if asked => return Err(needs_model()),
        None => return Ok(Searched::Lexical(Some(store))),
    };
    match store.has_vectors_of(model.id()) {
        Ok(true) => {}
        Ok(false) | Err(memtrail_runtime::Error::Invalid(_)) if !asked => {
            return Ok(Searched::Lexical(Some(store)));
        }
        Ok(false) => anyhow::bail!(
            "{db} holds no vectors of {}: the machines that push to it embed with that model \
             (`memtrail embed`, then `memtrail sync`); use --mode lexical meanwhile",
            model.id()
        ),
        Err(e) => return Err(e.into()),
    }
    let hits = match mode.unwrap_or(SearchMode::Hybrid) {
        SearchMode::Semantic => {
            memtrail_embed::search::semantic_in(store.as_ref(), model.as_ref(), q, filter)?
        }
        _ => memtrail_embed::search::hybrid_in(store.as_ref(), model.as_ref(), q, filter)?,
    };
    Ok(Searched::Found(hits, 0))
}

/// `text` broken between words into lines of at most `width` columns (a word longer than that
/// on a line of its own), the strings of `codes` (terminal escapes: `[start, reset]`) taking no
/// column. A highlight open at a break is closed at the line's end and opened again on the
/// next, so that no indentation is coloured.
fn wrap_marked(text: &str, width: usize, codes: &[&str; 2]) -> Vec<String> {
    let [start, reset] = *codes;
    let visible = |w: &str| {
        let mut plain = w.to_string();
        for code in codes.iter().filter(|c| !c.is_empty()) {
            plain = plain.replace(code, "");
        }
        unicode_width::UnicodeWidthStr::width(plain.as_str())
    };
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    let mut used = 0;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let w = visible(word);
        if used > 0 && used + 1 + w > width {
            lines.push(std::mem::take(&mut line));
            used = 0;
        }
        if used > 0 {
            line.push(' ');
            used += 1;
        }
        line.push_str(word);
        used += w;
    }
    lines.push(line);
    if !start.is_empty() {
        let mut open = false;
        for l in &mut lines {
            if open {
                l.insert_str(0, start);
            }
            let (s, r) = (l.rfind(start), l.rfind(reset));
            open = match (s, r) {
                (Some(s), Some(r)) => s > r,
                (Some(_), None) => true,
                (None, _) => open && r.is_none(),
            };
            if open {
                l.push_str(reset);
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::wrap_marked;

    #[test]
    fn snippets_wrap_between_words_and_highlights_never_colour_the_indent() {
        assert_eq!(
            wrap_marked("the quick brown fox jumps", 10, &["", ""]),
            ["the quick", "brown fox", "jumps"]
        );
        assert_eq!(
            wrap_marked("abcdefghijkl x", 5, &["", ""]),
            ["abcdefghijkl", "x"]
        );
        // `<` starts a highlight, `>` ends it; neither takes a column.
        assert_eq!(
            wrap_marked("a <bb cc> dd", 5, &["<", ">"]),
            ["a <bb>", "<cc> dd"]
        );
        assert_eq!(
            wrap_marked("<aaaa> bbbb", 4, &["<", ">"]),
            ["<aaaa>", "bbbb"]
        );
    }
}
