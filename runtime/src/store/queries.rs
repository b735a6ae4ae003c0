//! The SQL of search and of reading sessions ([`crate::query`]): FTS5 ranking and snippets,
//! session lists, a session's messages.

use super::Db;
use crate::query::{
    CopyKey, Hit, ListFilter, MessageView, SEARCH_CANDIDATES, SearchFilter, SessionSummary,
    SessionView, compact_cjk, fts_query, like_escape, normalize_dir, top_level_alternatives,
    view_parts, with_recency,
};
use crate::store::Store;
use crate::{Error, Result, now_ms};
use memtrail_adapters::format_rfc3339_ms;
use rusqlite::{OptionalExtension, params, params_from_iter, types::Value as Sql};
use std::collections::HashMap;

/// Resolve a session given by its agent id (or a unique prefix of it) to its row id. Pulled
/// sessions (other machines', `origin` not `''`) resolve too; when this machine's session and a
/// pulled one have the same id (a transcript copied between machines), this machine's is the
/// one meant, and among pulled ones the latest updated.
///
/// Errors: [`Error::NotFound`] when nothing matches, [`Error::Invalid`] when a prefix is
/// ambiguous (the message lists the candidates).
pub fn resolve_session(store: &Store, id: &str, agent: Option<&str>) -> Result<i64> {
    let conn = &store.conn;
    let exact: Option<i64> = conn
        .query_row(
            "SELECT id FROM sessions WHERE external_id = ?1 AND (?2 IS NULL OR agent = ?2)
             ORDER BY origin != '', updated_at DESC LIMIT 1",
            rusqlite::params![id, agent],
            |r| r.get(0),
        )
        .optional()
        .db()?;
    if let Some(x) = exact {
        return Ok(x);
    }
    let pattern = format!("{}%", like_escape(id));
    let mut stmt = conn
        .prepare(&format!(
            "SELECT id, external_id FROM sessions WHERE external_id LIKE ?1 ESCAPE '\\'
         AND (?2 IS NULL OR agent = ?2) ORDER BY origin != '', updated_at DESC LIMIT {}",
            crate::query::PREFIX_CANDIDATES
        ))
        .db()?;
    let rows: Vec<(i64, String)> = stmt
        .query_map(rusqlite::params![pattern, agent], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    crate::query::pick_prefix_match(id, rows)
}

/// Full-text search, ranked by BM25 (prose weighted above tool text) with a mild recency prior.
///
/// Errors: [`Error::Invalid`] when the query holds no searchable word or more than
/// [`crate::query::MAX_QUERY_TERMS`] terms; store errors.
pub fn search(store: &Store, query: &str, f: &SearchFilter) -> Result<Vec<Hit>> {
    search_ranking(store, query, f).map(|r| r.hits)
}

/// [`search`], and whether its ranking stopped at the bound of [`SEARCH_CANDIDATES`] newest
/// matches ([`crate::query::Ranking`]).
///
/// Errors: as [`search`].
pub fn search_ranking(
    store: &Store,
    query: &str,
    f: &SearchFilter,
) -> Result<crate::query::Ranking> {
    crate::query::refuse_over_term_cap(query)?;
    let Some(q) = fts_query(query) else {
        return Err(Error::Invalid(crate::query::nothing_to_search(query)));
    };
    let limit = f.limit.clamp(1, 500);
    // Messages written since the last catch-up are queued, not yet indexed (see `store`); a
    // store that cannot be written now (locked, read-only) is searched as it is. An interrupt
    // that came during the catch-up or its tidy-up stops the search as it would its walk.
    if let Err(e) = store.catch_up_for_search()
        && super::is_interrupted(&e)
    {
        return Err(e);
    }
    store.ensure_rank_function()?;
    // One read transaction for the whole search: the index terms an expanded prefix stands
    // for, their rows, the walks and the snippets all see the same store (a hook may index a
    // message between two statements: a term it adds would be missed by the walks).
    let _snapshot = super::ReadSnapshot::begin(&store.conn, "memtrail_search")?;
    // Two steps: rank by BM25 selecting only ids and scores (SQLite computes every selected
    // column of every match before `ORDER BY … LIMIT`, and a snippet re-tokenizes its whole
    // document), then build the snippets and the rest of the rows for the top hits only.
    //
    // With no filter, BM25 is computed over the newest [`SEARCH_CANDIDATES`] matches only (FTS5
    // walks its doclists newest rowid first and stops there), so the top hits of a query on very
    // frequent terms are the best among recently stored messages. A query with fewer matches
    // than that is ranked over all of them. The score is [`crate::rank`]'s `memtrail_bm25`:
    // FTS5's `bm25()` counts each term's documents over the whole index once per query, which
    // for a frequent term costs time in proportion to the store; `memtrail_bm25` counts up to
    // [`crate::store::rank::DF_SAMPLE`] and extrapolates (docs/benchmarks.md, "Frequent terms").
    // With a filter (agent, project, machine, session, dates, role) the same bound holds over
    // the matches that pass it: FTS5 still walks the matches newest first, the filter is
    // checked on each, and the walk stops at the SEARCH_CANDIDATES-th that passes (ranking
    // every match of a frequent term in one project took 1.5 s on the 1 GB store).
    // An `OR` query ranks the newest SEARCH_CANDIDATES matches of each of its alternatives
    // ([`top_level_alternatives`]; the newest matches of the whole of `rare OR common` would
    // all be `common` ones, and the rare term's hits would never be ranked). A message's score
    // is the sum of its scores for the alternatives among whose candidates it is: BM25 is a sum
    // over the query's phrases, and FTS5 counts no occurrence of a phrase in an alternative
    // that does not match, so a message that is a candidate of every alternative it matches
    // scores what it would for the whole query (always so when no alternative has more than
    // SEARCH_CANDIDATES matches). One that is not (an old message holding a frequent
    // alternative's words) is scored without that alternative, as an old message is not ranked
    // at all for a frequent word alone. Ranking every match instead took 0.7 s for
    // `error OR test` on the 1 GB bench store (docs/benchmarks.md, "`OR` queries bounded").
    //
    // A prefix term whose terms span many index pages (`err*`) is searched as the `OR` of its
    // terms, ranked as the one phrase it stands for ([`super::prefix`]): FTS5 merges every
    // such term's doclist before the first row, ~150 ms for `err*` on the 1 GB bench store,
    // and a search paid it three times.
    let mut alternatives: Vec<super::prefix::Prefixed> = top_level_alternatives(&q)
        .into_iter()
        .map(|a| {
            let mut p = super::prefix::expand(&store.conn, a)?;
            p.exclude_rare_terms_by_rows();
            Ok(p)
        })
        .collect::<Result<_>>()?;
    let filtered = f.filters();
    // A filter on sessions (agent, project, machine, session) is turned into the set of
    // their messages first (see [`session_scope`]): checking that set costs a bit test per
    // match, where joining each match to its message and session costs a B-tree lookup each
    // (2 µs), and the newest 1,024 matches of one agent or project can lie below hundreds of
    // thousands of other matches (0.3–0.9 s on the 1 GB store). A scope too large to list
    // (one agent: 199 k messages) is checked by each match's session instead: one lookup in
    // `messages` per match walked, and a bit test.
    let mut plan = if filtered {
        session_scope(store, f)?
    } else {
        ScopePlan::Join
    };
    if matches!(plan, ScopePlan::Empty) {
        return Ok(crate::query::Ranking::default());
    }

    // The newest candidates in scope, ranked (see above). A plan that checks each match's
    // session gives up when its walk is over budget; the scope's messages are listed then.
    // `fetch`: how many of the best to return.
    // `bound`: not the best but the walk's bound, as one row (the oldest candidate's id, the
    // number of candidates), its matches not scored.
    // Returns the rows, and the number of candidates ranked (0 for `bound`).
    let rank = |plan: &ScopePlan,
                q: &super::prefix::Expanded,
                fetch: usize,
                bound: bool|
     -> Result<(Vec<(i64, f64)>, usize)> {
        let mut args: Vec<Sql> = if bound {
            vec![Sql::Text(q.query.clone())]
        } else {
            vec![
                Sql::Text(q.groups.clone()),
                Sql::Blob(q.samples.clone()),
                Sql::Blob(rare_rows(q)),
                Sql::Text(q.query.clone()),
            ]
        };
        // The rows of an excluded prefix's rare terms, left out of the walk one by one
        // (`Prefixed::exclude_rare_terms_by_rows`): right after `MATCH ?`, its arguments next.
        let not_rows = match &q.excluded_rows {
            Some((lo, bits)) => {
                args.extend([Sql::Blob(bits.clone()), Sql::Integer(*lo)]);
                " AND NOT memtrail_in_scope(?, ?, messages_fts.rowid)"
            }
            None => "",
        };
        let mut sql = if !filtered {
            format!(
                "SELECT c.id, c.score FROM (
                    SELECT rowid AS id, memtrail_bm25(messages_fts, 1.0, 0.4, 0.8, ?, ?, ?) AS score FROM messages_fts
                    WHERE messages_fts MATCH ?{not_rows} ORDER BY rowid DESC LIMIT {SEARCH_CANDIDATES}
                 ) c WHERE 1 = 1"
            )
        } else if let ScopePlan::Scope(scope) | ScopePlan::Sessions(scope, _) = plan {
            let budget = match plan {
                ScopePlan::Sessions(_, budget) => Some(*budget),
                _ => None,
            };
            let by_session = budget.is_some();
            let messages_level = by_session || walk_reads_message_row(f);
            let mut inner = String::from(
                "SELECT c.id, c.score FROM (
                    SELECT messages_fts.rowid AS id, memtrail_bm25(messages_fts, 1.0, 0.4, 0.8, ?, ?, ?) AS score
                    FROM messages_fts",
            );
            if messages_level {
                inner.push_str(" JOIN messages m ON m.id = messages_fts.rowid");
            }
            inner.push_str(" WHERE messages_fts MATCH ?");
            inner.push_str(not_rows);
            if by_session {
                // Each match's session (one lookup in `messages`) against the admitted sessions.
                inner.push_str(
                    " AND messages_fts.rowid <= ?
                   AND memtrail_in_sessions(?, ?, m.session_id, ?)",
                );
                args.extend([
                    Sql::Integer(scope.newest),
                    Sql::Blob(scope.bits.clone()),
                    Sql::Integer(scope.lo),
                    Sql::Integer(budget.unwrap_or(i64::MAX)),
                ]);
            } else {
                inner.push_str(
                    " AND messages_fts.rowid BETWEEN ? AND ?
                   AND memtrail_in_scope(?, ?, messages_fts.rowid)",
                );
                args.extend([
                    Sql::Integer(scope.lo),
                    Sql::Integer(scope.hi),
                    Sql::Blob(scope.bits.clone()),
                    Sql::Integer(scope.lo),
                ]);
            }
            walk_clause(f, messages_level, &mut inner, &mut args);
            inner.push_str(&format!(
                " ORDER BY messages_fts.rowid DESC LIMIT {SEARCH_CANDIDATES}) c WHERE 1 = 1"
            ));
            inner
        } else {
            // Each match joined to its message and session as far as the filter reads them
            // (a filter by role alone: neither, see `walk_clause`).
            // A test's forced join reads each match's row for every filter, the role too: the
            // plan the others are compared with.
            let whole_rows = forced_join();
            let by_session = f.agent.is_some()
                || f.project.is_some()
                || f.machine.is_some()
                || f.session.is_some();
            let row_joined = by_session || whole_rows || walk_reads_message_row(f);
            let joins = if by_session || whole_rows {
                " JOIN messages m ON m.id = messages_fts.rowid JOIN sessions s ON s.id = m.session_id"
            } else if row_joined {
                " JOIN messages m ON m.id = messages_fts.rowid"
            } else {
                ""
            };
            let mut inner = format!(
                "SELECT c.id, c.score FROM (
                    SELECT messages_fts.rowid AS id, memtrail_bm25(messages_fts, 1.0, 0.4, 0.8, ?, ?, ?) AS score
                    FROM messages_fts{joins}
                    WHERE messages_fts MATCH ?"
            );
            inner.push_str(not_rows);
            session_filters_clause(store, f, &mut inner, &mut args)?;
            walk_clause(f, row_joined, &mut inner, &mut args);
            inner.push_str(&format!(
                " ORDER BY messages_fts.rowid DESC LIMIT {SEARCH_CANDIDATES}) c WHERE 1 = 1"
            ));
            inner
        };
        if bound {
            sql = sql
                .replacen(
                    "SELECT c.id, c.score FROM (",
                    "SELECT coalesce(min(c.id), 0), count(*) FROM (",
                    1,
                )
                .replacen(
                    "memtrail_bm25(messages_fts, 1.0, 0.4, 0.8, ?, ?, ?)",
                    "0",
                    1,
                );
        } else {
            sql.push_str(" ORDER BY c.score, c.id DESC LIMIT ?");
            args.push(Sql::Integer(fetch as i64));
        }

        let mut stmt = store.conn.prepare_cached(&sql).db()?;
        // The candidates: the rows `memtrail_bm25` scored (one call each; a `count(*) OVER ()`
        // column cost ~0.4 ms a search, a fifth of a frequent word's).
        super::rank::take_rows_scored();
        let rows = stmt
            .query_map(params_from_iter(args), |r| Ok((r.get(0)?, r.get(1)?)))
            .db()?
            .collect::<rusqlite::Result<Vec<(i64, f64)>>>()
            .db()?;
        let candidates = if bound {
            0
        } else {
            super::rank::take_rows_scored()
        };
        Ok((rows, candidates))
    };
    // Rank a few more than asked by BM25, then apply the recency prior; equal scores go to the
    // newest message.
    let fetch = (limit * 3).min(1500);
    let mut best: Vec<(i64, f64)> = Vec::new();
    let mut summed: HashMap<i64, f64> = HashMap::new();
    let single = alternatives.len() == 1;
    let mut newest_only = false;
    // The filters on the message itself, as one lookup of a row (see `admits` below).
    let message_filter = (f.since.is_some() || f.until.is_some() || f.role.is_some()).then(|| {
        let mut sql = String::from("SELECT 1 FROM messages m WHERE m.id = ?");
        let mut args = Vec::new();
        message_clause(f, &mut sql, &mut args);
        (sql, args)
    });
    for alternative in &mut alternatives {
        // A phrase every match holds begins with an excluded prefix (`error -e*`): no match,
        // and no walk through every row of the phrase to find none.
        if alternative.matches_nothing() {
            continue;
        }
        // One alternative: its best `fetch`; several: every candidate of each, summed below.
        let n = if single { fetch } else { SEARCH_CANDIDATES };
        // The filter's messages, as listed for this walk (a walk that lists them anew after
        // all lists the same messages), for an alternative whose rare terms may be left out.
        let scope = match &plan {
            ScopePlan::Scope(s) if alternative.can_prune() => Some(s.clone()),
            _ => None,
        };
        let mut attempt =
            |q: &super::prefix::Expanded, n: usize, bound: bool| match rank(&plan, q, n, bound) {
                Err(e) if e.to_string().contains(super::rank::WALK_BUDGET_SPENT) => {
                    plan = build_session_scope_with(store, f, i64::MAX, usize::MAX)?;
                    keep_scope(store, f, &plan)?;
                    rank(&plan, q, n, bound)
                }
                r => r,
            };
        // An expanded prefix's rare terms (those whose every row the index pages gave) are
        // left out of the walk when they cannot be among its candidates: the walk with the
        // frequent terms alone finds SEARCH_CANDIDATES matches at or after some row, so the
        // whole query's newest SEARCH_CANDIDATES are there too, and a term with no row that
        // new holds none of them. Their rows still count in the group's document frequency
        // (the sample). Each term is a doclist FTS5 seeks in every segment: `err*` has 271
        // terms, of which a handful are frequent.
        // Under a filter, a term whose rows at or after the bound all fail it holds no
        // candidate either (`e*` for one agent, whose messages lie far back: most rare terms
        // newer than its bound are in other agents' messages; `e*` by role `user`). Sessions
        // by the listed messages; dates and role by the message's own row, as the walk checks
        // them (one lookup a row, remembered).
        let checked: std::cell::RefCell<HashMap<i64, bool>> = Default::default();
        let admits = |row: i64| {
            scope.as_ref().is_none_or(|s| s.admits(row))
                && message_filter.as_ref().is_none_or(|(sql, args)| {
                    *checked
                        .borrow_mut()
                        .entry(row)
                        .or_insert_with(|| message_passes(store, sql, args, row))
                })
        };
        let admits: &dyn Fn(i64) -> bool = &admits;
        let mut keep = super::prefix::Keep::All;
        if alternative.can_prune() {
            let frequent = alternative.render(super::prefix::Keep::Frequent);
            if let Some(&(oldest, count)) = attempt(&frequent, 1, true)?.0.first()
                && count as usize >= SEARCH_CANDIDATES
            {
                keep = super::prefix::Keep::Since {
                    from: oldest,
                    admits: (scope.is_some() || message_filter.is_some()).then_some(admits),
                };
                alternative.find_words(&store.conn, keep)?;
                #[cfg(test)]
                super::prefix::PRUNED.set(super::prefix::PRUNED.get() + 1);
            }
        }
        let q = alternative.render(keep);
        let (ranked, candidates) = attempt(&q, n, false)?;
        newest_only |= candidates >= SEARCH_CANDIDATES;
        if single {
            best = ranked;
        } else {
            for (id, score) in ranked {
                *summed.entry(id).or_insert(0.0) += score;
            }
        }
    }
    if alternatives.len() > 1 {
        best = summed.into_iter().collect();
        best.sort_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
        best.truncate(fetch);
    }
    #[cfg(test)]
    LAST_RANKED.set(best.clone());
    let now = now_ms();
    // The text's length and first 256 characters tell a copy from a different message that
    // happens to share its id and time (ids given by position, transcripts written by a script)
    // without reading a long body whole.
    let mut ts_of = store
        .conn
        .prepare_cached(
            "SELECT m.ts, m.ext_id, s.agent, length(m.body), substr(m.body, 1, 256)
         FROM messages m JOIN sessions s ON s.id = m.session_id
         WHERE m.id = ?1",
        )
        .db()?;
    let mut keyed = Vec::with_capacity(best.len());
    for (rowid, bm25) in best {
        let Some((ts, ext, agent, len, head)) = ts_of
            .query_row([rowid], |r| {
                Ok((
                    r.get::<_, Option<i64>>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<i64>>(3)?,
                    r.get::<_, Option<String>>(4)?,
                ))
            })
            .optional()
            .db()?
        else {
            continue;
        };
        keyed.push((
            rowid,
            with_recency(-bm25, ts, now),
            ts.map(|t| (agent, ext, t, len, head)),
        ));
    }
    let copies = crate::query::copy_ids(&keyed);
    let ranked = crate::query::best_distinct(keyed, limit);
    // The snippets of the query with its prefixes expanded (their merge is not paid again),
    // each group with the terms that can be in the hits: its frequent terms and the rare ones
    // in a hit's row. A phrase not in a row has no instance there, so a snippet is the same
    // (`t*` on the 1 GB bench store: 2,019 terms searched, ~1,100 written here).
    let mut hit_rows: Vec<i64> = ranked.iter().map(|r| r.0).collect();
    hit_rows.sort_unstable();
    // The words of an excluded group's rare terms in a hit (one of another alternative's), which
    // the walks left out (`Prefixed::exclude_rare_terms_by_rows`).
    for a in &mut alternatives {
        a.find_words(&store.conn, super::prefix::Keep::Holding(&hit_rows))?;
    }
    let snippet_query = alternatives
        .iter()
        .map(|a| a.render(super::prefix::Keep::Holding(&hit_rows)).query)
        .collect::<Vec<_>>()
        .join(" OR ");
    let expanded = alternatives.iter().any(|a| a.is_expanded());
    // One alternative's snippets without its exclusions (see [`without_exclusions`]): the same
    // text, without checking each row walked against every excluded term.
    let positive = (single && !keep_exclusions())
        .then(|| without_exclusions(&snippet_query))
        .flatten();
    #[cfg(test)]
    if positive.is_some() {
        SNIPPETS_WITHOUT_EXCLUSIONS.set(SNIPPETS_WITHOUT_EXCLUSIONS.get() + 1);
    }
    let (snippet_query, expanded) = match positive {
        Some(p) => (p, alternatives.iter().any(|a| a.has_positive_group())),
        None => (snippet_query, expanded),
    };
    let mut snippets = snippets(store, &snippet_query, expanded, &ranked)?;
    let mut row = store.conn.prepare_cached(
        "SELECT s.external_id, s.agent, s.title, s.project_dir, m.ext_id, m.seq, m.role, m.kind, m.ts,
                s.origin, (SELECT label FROM machines WHERE id = s.origin)
         FROM messages m JOIN sessions s ON s.id = m.session_id
         WHERE m.id = ?1",
    ).db()?;
    let mut hits = Vec::with_capacity(ranked.len());
    for (rowid, score) in ranked {
        // A row deleted since the rank step is simply left out.
        let Some(mut snippet) = snippets.remove(&rowid) else {
            continue;
        };
        // A hit in the `cjk` column: its snippet has only the CJK characters; made again from
        // the message's text (its prose, else its tool text), with the other words around and
        // the text's own spacing (not compacted).
        if crate::query::is_cjk_column_snippet(&snippet) {
            snippet = match cjk_snippet_of(store, rowid, &snippet)? {
                Some(s) => s,
                // The column's characters, their spacing taken out.
                None => compact_cjk(&snippet),
            };
        }
        let hit = row
            .query_row(params![rowid], |r| hit_row(r, snippet, score))
            .optional()
            .db()?;
        hits.extend(hit.map(|h| Hit {
            copy: copies.get(&rowid).copied(),
            ..h
        }));
    }
    Ok(crate::query::Ranking { hits, newest_only })
}

/// [`crate::query::cjk_snippet_in`] over message `rowid`'s prose, else its tool text: the first
/// 100,000 characters of each (the index holds the first 32 KiB of a tool output), the text's
/// own U+0001/U+0002 shown as U+FFFD ([`crate::query::unmarked`]: they would pass for marks).
fn cjk_snippet_of(store: &Store, rowid: i64, marked: &str) -> Result<Option<String>> {
    let texts = store
        .conn
        .prepare_cached(
            "SELECT substr(body, 1, 100000),
                    substr(memtrail_tools(tools_text, parts_zdict), 1, 100000)
             FROM messages WHERE id = ?1",
        )
        .db()?
        .query_row([rowid], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?,
                r.get::<_, Option<String>>(1)?,
            ))
        })
        .optional()
        .db()?;
    let Some((body, tools)) = texts else {
        return Ok(None);
    };
    Ok([body, tools]
        .into_iter()
        .flatten()
        .find_map(|t| crate::query::cjk_snippet_in(&crate::query::unmarked(&t), marked)))
}

/// A hit from a row whose first 11 columns are `s.external_id, s.agent, s.title,
/// s.project_dir, m.ext_id, m.seq, m.role, m.kind, m.ts, s.origin` and the origin's label.
fn hit_row(r: &rusqlite::Row<'_>, snippet: String, score: f64) -> rusqlite::Result<Hit> {
    let ts: Option<i64> = r.get(8)?;
    Ok(Hit {
        session_id: r.get(0)?,
        agent: r.get(1)?,
        machine: crate::machine::label_of(r.get_ref(9)?.as_str()?, r.get(10)?),
        title: r.get(2)?,
        project: r.get(3)?,
        message_id: r.get(4)?,
        message_index: r.get(5)?,
        role: r.get(6)?,
        kind: r.get(7)?,
        timestamp: ts.map(format_rfc3339_ms),
        snippet,
        score,
        matched: None,
        copy: None,
    })
}

/// ` AND …` for the session filters (agent, project folder or below it, machine) over `s`
/// (sessions), their arguments appended.
fn session_clause(
    store: &Store,
    (agent, project, machine): (Option<&str>, Option<&str>, Option<&str>),
    sql: &mut String,
    args: &mut Vec<Sql>,
) -> Result<()> {
    if let Some(a) = agent {
        sql.push_str(" AND s.agent = ?");
        args.push(Sql::Text(a.to_string()));
    }
    if let Some(p) = project {
        let p = normalize_dir(p);
        let p = p.as_str();
        // The folder itself, or a path below it: every string from `p/` up to (not including)
        // `p0` (`0` follows `/`), a range the `(project_dir, updated_at)` index answers (a
        // `LIKE 'p/%'` is case-insensitive, so SQLite scans every session for it). Paths
        // compare case-sensitively, as on the file systems that recorded them.
        sql.push_str(" AND (s.project_dir = ? OR (s.project_dir >= ? AND s.project_dir < ?))");
        args.push(Sql::Text(p.to_string()));
        args.push(Sql::Text(format!("{p}/")));
        args.push(Sql::Text(format!("{p}0")));
    }
    if let Some(m) = machine {
        machine_clause(store, m, sql, args)?;
    }
    Ok(())
}

/// ` AND …` for each of `f`'s filters over `m` (messages) and `s` (sessions), their arguments
/// appended.
fn filter_clause(
    store: &Store,
    f: &SearchFilter,
    sql: &mut String,
    args: &mut Vec<Sql>,
) -> Result<()> {
    session_filters_clause(store, f, sql, args)?;
    message_clause(f, sql, args);
    Ok(())
}

/// ` AND …` for `f`'s filters on sessions (agent, project, machine over `s`; the session over
/// `m`), their arguments appended.
///
/// Errors: an unknown machine or session.
fn session_filters_clause(
    store: &Store,
    f: &SearchFilter,
    sql: &mut String,
    args: &mut Vec<Sql>,
) -> Result<()> {
    session_clause(
        store,
        (
            f.agent.as_deref(),
            f.project.as_deref(),
            f.machine.as_deref(),
        ),
        sql,
        args,
    )?;
    if let Some(sid) = &f.session {
        let id = resolve_session(store, sid, f.agent.as_deref())?;
        sql.push_str(" AND m.session_id = ?");
        args.push(Sql::Integer(id));
    }
    Ok(())
}

/// Whether message `row` passes the filters `sql` checks (`SELECT 1 … WHERE m.id = ?` and
/// [`message_clause`]'s, with `args`); true when it cannot be read (a row is never left out
/// for an error).
fn message_passes(store: &Store, sql: &str, args: &[Sql], row: i64) -> bool {
    let all = std::iter::once(Sql::Integer(row)).chain(args.iter().cloned());
    store
        .conn
        .prepare_cached(sql)
        .and_then(|mut st| st.exists(params_from_iter(all)))
        .unwrap_or(true)
}

/// ` AND …` for `f`'s filters on the message itself (dates, role) over `m` (messages), their
/// arguments appended.
fn message_clause(f: &SearchFilter, sql: &mut String, args: &mut Vec<Sql>) {
    dates_clause(f, sql, args);
    if let Some(r) = &f.role {
        // Tool calls live on assistant messages: `tool` means messages with tool calls or
        // results, whoever wrote them.
        if r == "tool" {
            sql.push_str(" AND (m.role = 'tool' OR m.kind IN ('tool_call', 'tool_result'))");
        } else {
            sql.push_str(" AND m.role = ?");
            args.push(Sql::Text(r.clone()));
        }
    }
}

/// ` AND …` for `f`'s dates over `m` (messages), their arguments appended.
fn dates_clause(f: &SearchFilter, sql: &mut String, args: &mut Vec<Sql>) {
    if let Some(t) = f.since {
        sql.push_str(" AND m.ts >= ?");
        args.push(Sql::Integer(t));
    }
    if let Some(t) = f.until {
        sql.push_str(" AND m.ts <= ?");
        args.push(Sql::Integer(t));
    }
}

/// Whether a test forced every filtered search on this thread to join each match to its row
/// ([`ForcedPlan::Join`]).
fn forced_join() -> bool {
    #[cfg(test)]
    if matches!(FORCED_PLAN.get(), Some(ForcedPlan::Join)) {
        return true;
    }
    false
}

/// Whether [`walk_clause`] reads each match's row in `messages` (as `m`): for dates, and for
/// the roles it checks there.
fn walk_reads_message_row(f: &SearchFilter) -> bool {
    f.since.is_some() || f.until.is_some() || f.role.as_deref().is_some_and(role_on_row)
}

/// Whether a walk checks role `r` on each match's row in `messages` rather than in
/// `messages_by_role`: `tool` (a message's kind too) and `assistant` (most of a store's
/// messages: its walk ends soon, over rows whose pages it has just read, where a seek in the
/// index costs more: `error --role assistant` on the 1 GB bench store 2.1 against 2.3 ms).
fn role_on_row(r: &str) -> bool {
    r == "tool" || r == "assistant"
}

/// ` AND …` for `f`'s filters on the message itself in a walk of `messages_fts`'s matches, their
/// arguments appended: as [`message_clause`], except that a role other than those checked on
/// the row ([`role_on_row`]) is checked by a seek in the narrow index `messages_by_role`
/// (schema 18: `role || ''`, then the row id) rather than on the match's row in `messages`, whose
/// pages hold the text: a walk checks every match newer than its candidates, and a role's
/// share of the matches can be small (`webhook --role user` on the 1 GB bench store: 10.9
/// against 4.6 ms; a frequent word, whose walk is short and its rows' pages read already, 3.8
/// against 4.6). When the walk joins each match's row anyway (`row_joined`: dates, a session's
/// filter checked by its row), the role is read there, for nothing more.
fn walk_clause(f: &SearchFilter, row_joined: bool, sql: &mut String, args: &mut Vec<Sql>) {
    if row_joined || f.role.as_deref().is_none_or(role_on_row) {
        message_clause(f, sql, args);
        return;
    }
    dates_clause(f, sql, args);
    // A subquery, evaluated for each match: as a join, SQLite may take the role's index as
    // the outer loop and look each of its rows up in FTS5 (a walk of the query's doclists
    // for every row: a random test's `--role user --since` ran for minutes).
    sql.push_str(
        " AND EXISTS (SELECT 1 FROM messages r INDEXED BY messages_by_role \
           WHERE (r.role || '') = ? AND r.id = messages_fts.rowid)",
    );
    args.extend(f.role.clone().map(Sql::Text));
}

/// How a filtered search keeps to the sessions its filter admits.
#[derive(Clone)]
enum ScopePlan {
    /// No session passes the filter: there is nothing to rank.
    Empty,
    /// Join each match to its message and session (no session-level filter).
    Join,
    /// Check each match against the admitted sessions' messages.
    Scope(Scope),
    /// Check each match's session (one lookup in `messages`) against the admitted sessions: a
    /// bitmap over session ids (bit `i` is session `lo + i`), for a scope too large to list;
    /// at most this many matches walked (then the scope is listed after all).
    Sessions(Scope, i64),
}

/// The rowids of the messages of the admitted sessions, as a bitmap over their span: bit `i`
/// (bit `i % 8` of byte `i / 8`) is message `lo + i`; see [`super::rank::SCOPE_FUNCTION`].
#[derive(Clone)]
struct Scope {
    lo: i64,
    hi: i64,
    bits: Vec<u8>,
    /// No admitted message has a larger id (for [`ScopePlan::Sessions`]: the admitted
    /// sessions' largest `last_message_id`, migration 11), so a walk starts there.
    newest: i64,
}

impl Scope {
    /// Whether message `row` is one of the admitted sessions'.
    fn admits(&self, row: i64) -> bool {
        if row < self.lo || row > self.hi {
            return false;
        }
        let i = (row - self.lo) as usize;
        self.bits.get(i / 8).is_some_and(|b| b >> (i % 8) & 1 == 1)
    }
}

/// Above this share of the store's messages, a session filter is checked on each match's
/// session (most matches pass it, so the walk stops early) rather than by listing its messages.
const SCOPE_MAX_SHARE: f64 = 0.5;

/// Above this many messages in the admitted sessions (the sum of their `message_count`, an
/// estimate read from `sessions`), their messages are not listed: listing costs ~0.3 µs a
/// message (60 ms for the 199 k messages of one agent on the 1 GB store), while checking each
/// match's session costs one lookup in `messages` (~2 µs) for each of the ~1,024 / share
/// matches walked (docs/benchmarks.md, "Filtered search at 1M messages").
const SCOPE_LIST_MAX: i64 = 50_000;

/// The plan for `f`'s session-level filters (agent, project, machine, session): the admitted
/// sessions' messages are listed from the `(session_id, seq)` index (0.1 µs a message) and
/// used while their sessions' message counts add up to at most [`SCOPE_LIST_MAX`] and they
/// are at most [`SCOPE_MAX_SHARE`] of the store's rowid span; otherwise each match's session
/// is checked ([`ScopePlan::Sessions`]). Both plans admit the same matches. A filter with
/// no session-level part is [`ScopePlan::Join`], or for dates the range's messages
/// ([`date_scope`]).
///
/// Errors: an unknown machine or session, as [`filter_clause`]; store errors.
fn session_scope(store: &Store, f: &SearchFilter) -> Result<ScopePlan> {
    if f.agent.is_none() && f.project.is_none() && f.machine.is_none() && f.session.is_none() {
        // A test's forced plan compares with the join, the plan before dates were listed.
        #[cfg(test)]
        if FORCED_PLAN.get().is_some() {
            return Ok(ScopePlan::Join);
        }
        let dates = if f.since.is_some() || f.until.is_some() {
            date_scope(store, f)?
        } else {
            ScopePlan::Join
        };
        if matches!(dates, ScopePlan::Join) {
            return role_scope(store, f);
        }
        return Ok(dates);
    }
    #[cfg(test)]
    if let Some(forced) = FORCED_PLAN.get() {
        return forced_plan(store, f, forced);
    }
    let (filter, version) = scope_key(store, f)?;
    let mut again = false;
    if let Some(c) = store.scope_cache.borrow().as_ref()
        && c.filter == filter
        && c.version == version
    {
        if !matches!(c.plan, ScopePlan::Sessions(..)) {
            return Ok(c.plan.clone());
        }
        again = true;
    }
    // The same large scope searched again with nothing written between (a reader that stays
    // open: the web page, the MCP server, `browse`, search as you type): its messages are
    // listed now and kept, which the next searches use (16 ms against 25 ms a walk, on the
    // 1 GB store's largest agent). A one-shot search walks.
    let plan = if again {
        build_session_scope_with(store, f, i64::MAX, usize::MAX)?
    } else {
        build_session_scope(store, f)?
    };
    keep_scope(store, f, &plan)?;
    Ok(plan)
}

/// The most messages a filter on dates alone lists ([`date_scope`]): a range past it is joined
/// as before, and what listing up to it cost is lost (~1.8 ms; the join finds the newest
/// matches of a range that large soon, unless the query's words are rare in it).
const DATE_LIST_MAX: i64 = 20_000;

/// The scope of a filter on dates and no session-level part (`--since`, `--until`, and a role
/// or not): the messages whose time is in the range, listed through `messages_by_ts` (a
/// covering index: ~0.09 µs a message) when they are at most [`DATE_LIST_MAX`]; else
/// [`ScopePlan::Join`], each match joined to its message. The join walks the matches newest
/// first with no lower bound: a range whose messages hold few matches (the newest 1,404
/// messages of the 1 GB bench store, and `"the error"`) was walked through every older match
/// of the query, one lookup in `messages` each (202 ms), where the listed scope bounds the
/// walk to its rows (`rowid BETWEEN lo AND hi`) and checks each by a bit.
fn date_scope(store: &Store, f: &SearchFilter) -> Result<ScopePlan> {
    let mut stmt = store
        .conn
        .prepare_cached("SELECT id FROM messages WHERE ts >= ?1 AND ts <= ?2 LIMIT ?3")
        .db()?;
    let ids = stmt
        .query_map(
            params![
                f.since.unwrap_or(i64::MIN),
                f.until.unwrap_or(i64::MAX),
                DATE_LIST_MAX + 1
            ],
            |r| r.get::<_, i64>(0),
        )
        .db()?
        .collect::<rusqlite::Result<Vec<i64>>>()
        .db()?;
    let plan = listed_scope(ids, DATE_LIST_MAX);
    #[cfg(test)]
    if matches!(plan, ScopePlan::Scope(_)) {
        DATES_LISTED.set(DATES_LISTED.get() + 1);
    }
    Ok(plan)
}

/// The plan for the messages `ids` (in any order) a filter listed, at most `max` of them kept:
/// [`ScopePlan::Join`] when more, [`ScopePlan::Empty`] when none, else the scope of exactly
/// them.
fn listed_scope(ids: Vec<i64>, max: i64) -> ScopePlan {
    if ids.len() as i64 > max {
        return ScopePlan::Join;
    }
    let (Some(&lo), Some(&hi)) = (ids.iter().min(), ids.iter().max()) else {
        return ScopePlan::Empty;
    };
    ScopePlan::Scope(Scope {
        lo,
        hi,
        bits: bitmap(lo, hi, ids.into_iter()),
        newest: hi,
    })
}

/// The most messages of one role a filter lists ([`role_scope`]), as [`DATE_LIST_MAX`]: past it
/// the list is dropped (~0.1 µs a message read for nothing) and each match is checked in
/// `messages_by_role`.
const ROLE_LIST_MAX: i64 = DATE_LIST_MAX;

/// The scope of a filter on a role other than the conversation's own (`user`, `assistant`: most
/// of a store's messages) and `tool` (a message's kind too), with no session-level part and no
/// dates listed ([`date_scope`]): the role's messages, listed through `messages_by_role`
/// (schema 18) when they are at most [`ROLE_LIST_MAX`] ([`ScopePlan::Empty`] when none); else
/// [`ScopePlan::Join`], each match checked in the index. A role few messages hold (`system`:
/// compaction summaries, an agent's notes) was found by walking every match of the query
/// newest first: `error --role system` on the 1 GB bench store, which holds none, 217 ms. The
/// conversation's roles are not listed: their walk finds its candidates soon, and listing up
/// to the cap to learn that costs more than the walk saves (`error --role user`: 4.6 ms, 5.1
/// with up to 5,000 listed first).
fn role_scope(store: &Store, f: &SearchFilter) -> Result<ScopePlan> {
    let Some(role) = f
        .role
        .as_deref()
        .filter(|r| !["user", "assistant", "tool"].contains(r))
    else {
        return Ok(ScopePlan::Join);
    };
    let mut stmt = store
        .conn
        .prepare_cached(
            "SELECT id FROM messages INDEXED BY messages_by_role WHERE (role || '') = ?1 LIMIT ?2",
        )
        .db()?;
    let ids = stmt
        .query_map(params![role, ROLE_LIST_MAX + 1], |r| r.get::<_, i64>(0))
        .db()?
        .collect::<rusqlite::Result<Vec<i64>>>()
        .db()?;
    let plan = listed_scope(ids, ROLE_LIST_MAX);
    #[cfg(test)]
    if matches!(plan, ScopePlan::Scope(_)) {
        ROLES_LISTED.set(ROLES_LISTED.get() + 1);
    }
    Ok(plan)
}

/// What a kept scope is kept for: `f`'s session filters, and the store's version, which
/// `PRAGMA data_version` moves when another connection commits and `total_changes` when this
/// one writes.
fn scope_key(store: &Store, f: &SearchFilter) -> Result<ScopeKey> {
    let filter = (
        f.agent.clone(),
        f.project.clone(),
        f.machine.clone(),
        f.session.clone(),
    );
    let version = (
        store
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0))
            .db()?,
        store.conn.total_changes(),
    );
    Ok((filter, version))
}

/// Keep `plan` as the scope of `f` while nothing is written (the last search's only).
fn keep_scope(store: &Store, f: &SearchFilter, plan: &ScopePlan) -> Result<()> {
    let (filter, version) = scope_key(store, f)?;
    *store.scope_cache.borrow_mut() = Some(ScopeCache {
        filter,
        version,
        plan: plan.clone(),
    });
    Ok(())
}

/// The filter and store version a [`ScopeCache`] is kept for.
type ScopeKey = (
    (
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    ),
    (i64, u64),
);

/// The scope of the last filtered search of a [`Store`], with what it was made for.
pub(super) struct ScopeCache {
    /// The filter's agent, project, machine and session.
    filter: (
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    ),
    /// `PRAGMA data_version` and the connection's `total_changes()` then.
    version: (i64, u64),
    plan: ScopePlan,
}

/// A plan a test makes every filtered search on this thread take, to compare their answers.
#[cfg(test)]
#[derive(Clone, Copy, Debug)]
pub(crate) enum ForcedPlan {
    /// Each match joined to its message and session (`s.agent = ?`, …).
    Join,
    /// The admitted sessions' messages listed, whatever their number.
    List,
    /// Each match's session checked against the admitted sessions.
    Sessions,
    /// As `Sessions`, giving up after this many matches walked (then listing).
    SessionsWithin(i64),
}

/// The rare phrases' rows `memtrail_bm25` is given ([`super::prefix::Expanded::rare_rows`]);
/// in tests, their floor alone when [`WITHOUT_RARE_ROWS`] is set (every phrase then looked
/// for in every row, as before the list).
fn rare_rows(q: &super::prefix::Expanded) -> Vec<u8> {
    #[cfg(test)]
    if WITHOUT_RARE_ROWS.get() {
        return q.rare_rows[..8].to_vec();
    }
    q.rare_rows.clone()
}

#[cfg(test)]
thread_local! {
    /// Searches on this thread pass no rare phrase's rows to `memtrail_bm25` ([`rare_rows`]).
    pub(crate) static WITHOUT_RARE_ROWS: std::cell::Cell<bool> =
        const { std::cell::Cell::new(false) };
    pub(crate) static FORCED_PLAN: std::cell::Cell<Option<ForcedPlan>> =
        const { std::cell::Cell::new(None) };
    /// The last search's ranked candidates on this thread (row id, `memtrail_bm25`, before
    /// the recency prior and the limit), best first.
    pub(crate) static LAST_RANKED: std::cell::RefCell<Vec<(i64, f64)>> =
        const { std::cell::RefCell::new(Vec::new()) };
    /// How many searches on this thread listed a filter's messages by their time.
    pub(crate) static DATES_LISTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// How many filters on a role were listed by [`role_scope`] on this thread.
    pub(crate) static ROLES_LISTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Searches on this thread keep the exclusions in their snippets' query
    /// ([`keep_exclusions`]).
    pub(crate) static KEEP_EXCLUSIONS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// How many searches on this thread asked for their snippets without their exclusions.
    pub(crate) static SNIPPETS_WITHOUT_EXCLUSIONS: std::cell::Cell<usize> =
        const { std::cell::Cell::new(0) };
}

/// A message's row id, message id, `memtrail_bm25` and time (ms).
#[cfg(test)]
pub(crate) type ScoredMatch = (i64, String, f64, Option<i64>);

/// Every message matching the user query `query` (no filter, nothing bounded): its message
/// id, its `memtrail_bm25` for the whole query (lower is better) and its time, newest first.
/// The oracle of bounded `OR` queries ranks these.
#[cfg(test)]
pub(crate) fn every_match_scored(store: &Store, query: &str) -> Result<Vec<ScoredMatch>> {
    let q = fts_query(query).expect("a searchable query");
    let _ = store.catch_up_for_search();
    store.ensure_rank_function()?;
    let mut stmt = store
        .conn
        .prepare(
            "SELECT m.id, m.ext_id, memtrail_bm25(messages_fts, 1.0, 0.4, 0.8), m.ts
             FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
             WHERE messages_fts MATCH ? ORDER BY messages_fts.rowid DESC",
        )
        .db()?;
    stmt.query_map([q], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()
}

/// [`session_scope`] as `forced` says, the cache left aside.
#[cfg(test)]
fn forced_plan(store: &Store, f: &SearchFilter, forced: ForcedPlan) -> Result<ScopePlan> {
    let plan = build_session_scope_with(store, f, i64::MAX, usize::MAX)?;
    Ok(match (forced, plan) {
        (_, ScopePlan::Empty) => ScopePlan::Empty,
        (ForcedPlan::Join, _) => ScopePlan::Join,
        (ForcedPlan::List, plan) => plan,
        (ForcedPlan::Sessions, _) => build_session_scope_with(store, f, -1, usize::MAX)?,
        (ForcedPlan::SessionsWithin(budget), _) => {
            match build_session_scope_with(store, f, -1, usize::MAX)? {
                ScopePlan::Sessions(scope, _) => ScopePlan::Sessions(scope, budget),
                plan => plan,
            }
        }
    })
}

/// [`session_scope`] made afresh.
fn build_session_scope(store: &Store, f: &SearchFilter) -> Result<ScopePlan> {
    build_session_scope_with(store, f, SCOPE_LIST_MAX, 2 * SCOPE_LIST_MAX as usize)
}

/// [`session_scope`] made afresh, listing the admitted sessions' messages when their counts
/// add up to at most `list_max` and while they are at most `list_most` and at most
/// [`SCOPE_MAX_SHARE`] of the store (`list_max` `i64::MAX`: listing them all whatever their
/// number).
fn build_session_scope_with(
    store: &Store,
    f: &SearchFilter,
    list_max: i64,
    list_most: usize,
) -> Result<ScopePlan> {
    let mut cond = String::new();
    let mut args: Vec<Sql> = Vec::new();
    session_clause(
        store,
        (
            f.agent.as_deref(),
            f.project.as_deref(),
            f.machine.as_deref(),
        ),
        &mut cond,
        &mut args,
    )?;
    if let Some(sid) = &f.session {
        let id = resolve_session(store, sid, f.agent.as_deref())?;
        cond.push_str(" AND s.id = ?");
        args.push(Sql::Integer(id));
    }
    // Session ids and their message counts (an estimate of the scope's size: a count kept by
    // the writer, never relied on for which messages pass).
    // Their largest message ids (an upper bound each; NULL: no message).
    let admitted: Vec<(i64, i64, Option<i64>)> = store
        .conn
        .prepare_cached(&format!(
            "SELECT s.id, s.message_count, s.last_message_id FROM sessions s WHERE 1 = 1{cond}"
        ))
        .db()?
        .query_map(params_from_iter(args.iter()), |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    if admitted.is_empty() {
        return Ok(ScopePlan::Empty);
    }
    let estimate: i64 = admitted.iter().map(|a| a.1.max(0)).sum();
    let by_session = || {
        let lo = admitted.iter().map(|a| a.0).min().unwrap_or(0);
        let hi = admitted.iter().map(|a| a.0).max().unwrap_or(0);
        let scope = Scope {
            lo,
            hi,
            bits: bitmap(lo, hi, admitted.iter().map(|a| a.0)),
            newest: admitted.iter().filter_map(|a| a.2).max().unwrap_or(0),
        };
        ScopePlan::Sessions(scope, walk_budget(estimate, list_max))
    };
    if estimate > list_max {
        return Ok(by_session());
    }
    // The store's rowid span stands for its message count (two lookups at the ends of the
    // b-tree; a count would scan).
    let span: i64 = store
        .conn
        .prepare_cached(
            "SELECT coalesce((SELECT max(id) FROM messages) - (SELECT min(id) FROM messages) + 1, 0)",
        )
        .db()?
        .query_row([], |r| r.get(0))
        .db()?;
    let most = if list_max == i64::MAX {
        usize::MAX
    } else {
        ((span as f64 * SCOPE_MAX_SHARE) as usize).min(list_most)
    };
    // One session at a time: joined in one query, SQLite walks the whole message index and
    // looks each row's session up.
    let mut stmt = store
        .conn
        .prepare_cached("SELECT id FROM messages WHERE session_id = ?1")
        .db()?;
    let mut ids: Vec<i64> = Vec::new();
    for &(session, _, _) in &admitted {
        for id in stmt.query_map([session], |r| r.get(0)).db()? {
            ids.push(id.db()?);
        }
        if ids.len() > most {
            // The counts were off: the scope is too large to list after all.
            return Ok(by_session());
        }
    }
    let (Some(&lo), Some(&hi)) = (ids.iter().min(), ids.iter().max()) else {
        return Ok(ScopePlan::Empty);
    };
    let bits = bitmap(lo, hi, ids.into_iter());
    Ok(ScopePlan::Scope(Scope {
        lo,
        hi,
        bits,
        newest: hi,
    }))
}

/// How many matches a [`ScopePlan::Sessions`] walk may check before it gives up and the scope
/// is listed: about what listing `estimate` messages costs (a lookup in `messages` costs ~2
/// µs, listing ~0.3 µs a message), at least four times the candidates ranked. With the
/// admitted sessions' messages spread over the store, the walk stops after ~1,024 / share
/// matches; with them all among the oldest (one agent imported first), it would walk every
/// newer match. `list_max` `-1` (a test forcing the plan): no limit.
fn walk_budget(estimate: i64, list_max: i64) -> i64 {
    if list_max < 0 {
        return i64::MAX;
    }
    (estimate / 7).max(4 * SEARCH_CANDIDATES as i64)
}

/// The bitmap of `ids` (each within `lo..=hi`) as [`Scope`] holds it: bit `id - lo`.
fn bitmap(lo: i64, hi: i64, ids: impl Iterator<Item = i64>) -> Vec<u8> {
    let mut bits = vec![0u8; ((hi - lo) / 8 + 1) as usize];
    for id in ids {
        let i = (id - lo) as usize;
        bits[i / 8] |= 1 << (i % 8);
    }
    bits
}

/// The snippet (FTS5 `snippet()`, 16 tokens, hits between `\x01` and `\x02`) of each ranked
/// row still in the index, by rowid.
///
/// FTS5 finds a rowid in a term's doclist by walking the doclist's index page by page from its
/// start, so a query positioned on one row (`rowid = ?`) costs in proportion to the term's
/// whole doclist: for a frequent term, thousands of pages per hit, more than the rest of the
/// search. When the hits sit close together (within 1/16 of the store's rowids, as the newest
/// matches of frequent terms do), one pass over the matches between the oldest and the newest
/// hit replaces the 20 lookups (`+rowid IN …` filters the rows without being a constraint
/// FTS5 seeks by). Hits spread over the store are looked up one by one: the pass would read
/// every match in between. A query with a prefix term (`overfl*`) takes the pass, with or
/// without `OR`: FTS5 merges the doclists of every term with that prefix for each query that
/// names it, so each of 20 lookups paid that merge again (`overfl*` on the 1 GB bench store: 55
/// ms for 20 hits, 132 ms for the web page's 50; `err* OR webhook`, whose merge is ~0.2 s, 4.2
/// s), while the pass pays it once and walks the merged list in memory.
///
/// `expanded`: `q` holds a prefix term written as its terms ([`super::prefix`]), which the
/// pass serves too: looked up one by one, each hit would seek every one of its terms' doclists.
fn snippets(
    store: &Store,
    q: &str,
    expanded: bool,
    ranked: &[(i64, f64)],
) -> Result<HashMap<i64, String>> {
    const SNIPPET: &str = "snippet(messages_fts, -1, char(1), char(2), '…', 16)";
    let (Some(lo), Some(hi)) = (
        ranked.iter().map(|r| r.0).min(),
        ranked.iter().map(|r| r.0).max(),
    ) else {
        return Ok(HashMap::new());
    };
    let span: i64 = store
        .conn
        .prepare_cached(
            // Two lookups at the ends of the rowid b-tree (one `max(id) - min(id)` would scan).
            "SELECT coalesce((SELECT max(id) FROM messages) - (SELECT min(id) FROM messages), 0)",
        )
        .db()?
        .query_row([], |r| r.get(0))
        .db()?;
    // An `OR` query's hits may lie far apart (a rare alternative's old matches beside a
    // frequent one's newest): without a prefix term, the lookups cost less than the pass's walk
    // of every match of its other terms in between.
    if (hi - lo) <= span / 16 || has_prefix_term(q) || expanded {
        let ids = format!(
            "[{}]",
            ranked
                .iter()
                .map(|r| r.0.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        // Walked oldest first: FTS5 seeks each term's doclist to `lo` and reads on to `hi`,
        // where walking newest first reads every doclist page past `hi` too, to begin at its
        // end (`error test` on the 1 GB store, in-process: 2.30 → 1.70 ms). A prefix term's
        // doclists are merged in memory first either way, and its walk newest first measured
        // faster (`overfl*`: 6.2 against 6.6 ms), so it keeps that order (docs/benchmarks.md,
        // "Snippets walked oldest first").
        let order = if has_prefix_term(q) { "DESC" } else { "ASC" };
        let sql = format!(
            "SELECT rowid, {SNIPPET} FROM messages_fts
             WHERE messages_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3
               AND +rowid IN (SELECT value FROM json_each(?4))
             ORDER BY rowid {order}"
        );
        let mut stmt = store.conn.prepare_cached(&sql).db()?;
        let rows = stmt
            .query_map(params![q, lo, hi, ids], |r| Ok((r.get(0)?, r.get(1)?)))
            .db()?;
        return rows.collect::<rusqlite::Result<_>>().db();
    }
    let sql =
        format!("SELECT {SNIPPET} FROM messages_fts WHERE messages_fts MATCH ?1 AND rowid = ?2");
    let mut stmt = store.conn.prepare_cached(&sql).db()?;
    let mut out = HashMap::with_capacity(ranked.len());
    for &(rowid, _) in ranked {
        if let Some(s) = stmt
            .query_row(params![q, rowid], |r| r.get::<_, String>(0))
            .optional()
            .db()?
        {
            out.insert(rowid, s);
        }
    }
    Ok(out)
}

/// `q`, one alternative of a search in [`fts_query`]'s form (no `OR` outside parentheses),
/// with each `NOT` outside parentheses and its operand (a phrase, a prefix term, a group in
/// parentheses, a column filter's phrase) taken out; `None` when there is none, when `q` has an
/// `OR` outside parentheses, or when its text is not of that shape.
///
/// For the snippets of `q`'s hits: a hit holds no instance of an excluded operand's phrases
/// (a phrase, a prefix or an `OR` of them matches no row a `NOT` lets through), so FTS5's
/// `snippet()` finds the same instances of the same positive phrases in it, scores the same
/// windows and gives the same text. The pass that builds them then walks the rows of the
/// positive part between the hits without checking each against every excluded term: on
/// the 1 GB bench store `error -t*` checked ~300 frequent `t…` terms for each row of `error`
/// (docs/benchmarks.md, "Exclusions left out of the snippets' query"). With an `OR`, a hit of one
/// alternative may hold another's excluded words, which FTS5 may mark: such queries keep them.
fn without_exclusions(q: &str) -> Option<String> {
    // The end of the phrase opening at `i` (after its closing quote, and a prefix's `*`).
    fn phrase_end(q: &str, i: usize) -> Option<usize> {
        let b = q.as_bytes();
        let mut j = i + 1;
        loop {
            match b.get(j)? {
                b'"' if b.get(j + 1) == Some(&b'"') => j += 2,
                b'"' => break,
                _ => j += 1,
            }
        }
        j += 1;
        Some(if b.get(j) == Some(&b'*') { j + 1 } else { j })
    }
    // The end of the word (letters, digits, `_`) at `i`.
    fn word_end(q: &str, i: usize) -> usize {
        i + q[i..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(q.len() - i)
    }
    // The end of the operand after `i`: a phrase, a group in parentheses, `column : operand`.
    fn operand_end(q: &str, i: usize) -> Option<usize> {
        let b = q.as_bytes();
        let i = i + (q.len() - i - q[i..].trim_start().len());
        match b.get(i)? {
            b'"' => phrase_end(q, i),
            b'(' => {
                let mut depth = 0usize;
                let mut j = i;
                while j < b.len() {
                    match b[j] {
                        b'"' => {
                            j = phrase_end(q, j)?;
                            continue;
                        }
                        b'(' => depth += 1,
                        b')' => {
                            depth -= 1;
                            if depth == 0 {
                                return Some(j + 1);
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                None
            }
            c if c.is_ascii_alphabetic() => {
                let end = word_end(q, i);
                let rest = q[end..].trim_start();
                let colon = rest.strip_prefix(':')?;
                operand_end(q, q.len() - colon.len())
            }
            _ => None,
        }
    }
    let b = q.as_bytes();
    let mut out = String::with_capacity(q.len());
    let (mut i, mut depth, mut excluded) = (0usize, 0usize, false);
    while i < b.len() {
        match b[i] {
            b'"' => {
                let end = phrase_end(q, i)?;
                out.push_str(&q[i..end]);
                i = end;
            }
            b'(' => {
                depth += 1;
                out.push('(');
                i += 1;
            }
            b')' => {
                depth = depth.checked_sub(1)?;
                out.push(')');
                i += 1;
            }
            c if c.is_ascii_alphabetic() => {
                let end = word_end(q, i);
                match (&q[i..end], depth) {
                    ("OR", 0) => return None,
                    ("NOT", 0) => {
                        i = operand_end(q, end)?;
                        excluded = true;
                    }
                    (word, _) => {
                        out.push_str(word);
                        i = end;
                    }
                }
            }
            c if c.is_ascii() => {
                out.push(c as char);
                i += 1;
            }
            // Text outside a phrase is ASCII in this form.
            _ => return None,
        }
    }
    (excluded && depth == 0 && out.contains('"')).then_some(out)
}

/// Whether a test asked this thread's searches to keep the exclusions in their snippets'
/// query ([`without_exclusions`]), to compare the snippets.
fn keep_exclusions() -> bool {
    #[cfg(test)]
    if KEEP_EXCLUSIONS.get() {
        return true;
    }
    false
}

/// Whether the FTS5 query `q` ([`fts_query`]'s form) has a prefix term: a `*` outside double
/// quotes (terms are quoted, so a `*` inside quotes is text).
fn has_prefix_term(q: &str) -> bool {
    let mut quoted = false;
    for c in q.chars() {
        match c {
            '"' => quoted = !quoted,
            '*' if !quoted => return true,
            _ => {}
        }
    }
    false
}

const SESSION_COLS: &str = "s.external_id, s.agent, s.title, s.project_dir, s.model, s.git_branch,
    s.started_at, s.updated_at, s.message_count, s.parent_external_id, s.origin,
    (SELECT label FROM machines WHERE id = s.origin)";

/// ` AND` the session `s` is of machine `name` (its label or id; this machine's sessions,
/// `origin` `''`, when `name` is this machine's label or id), its arguments appended.
fn machine_clause(store: &Store, name: &str, sql: &mut String, args: &mut Vec<Sql>) -> Result<()> {
    let here = name == crate::machine::local_label()
        || store.sync_state("machine")?.as_deref() == Some(name);
    let others = store.machine_labels()?;
    if !here && !others.iter().any(|(id, label)| id == name || label == name) {
        let mut known = vec![format!("{} (this machine)", crate::machine::local_label())];
        known.extend(others.into_iter().map(|(_, label)| label));
        return Err(crate::machine::unknown_machine(name, &known));
    }
    sql.push_str(
        " AND (s.origin IN (SELECT id FROM machines WHERE label = ? OR id = ?)
              OR (s.origin = '' AND ?))",
    );
    args.push(Sql::Text(name.to_string()));
    args.push(Sql::Text(name.to_string()));
    args.push(Sql::Integer(here.into()));
    Ok(())
}

fn session_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionSummary> {
    Ok(SessionSummary {
        session_id: r.get(0)?,
        agent: r.get(1)?,
        machine: crate::machine::label_of(r.get_ref(10)?.as_str()?, r.get(11)?),
        title: r.get(2)?,
        project: r.get(3)?,
        model: r.get(4)?,
        git_branch: r.get(5)?,
        started_at: r.get::<_, Option<i64>>(6)?.map(format_rfc3339_ms),
        updated_at: r.get::<_, Option<i64>>(7)?.map(format_rfc3339_ms),
        messages: r.get(8)?,
        parent_session_id: r.get(9)?,
    })
}

/// The agents with at least one stored session, in [`memtrail_adapters::Agent::ALL`]'s order
/// (one lookup in `sessions_by_agent_updated` per agent).
pub fn agents_with_sessions(store: &Store) -> Result<Vec<memtrail_adapters::Agent>> {
    let mut st = store
        .conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM sessions WHERE agent = ?1)")
        .db()?;
    let mut found = Vec::new();
    for agent in memtrail_adapters::Agent::ALL {
        if st
            .query_row([agent.as_str()], |r| r.get::<_, bool>(0))
            .db()?
        {
            found.push(agent);
        }
    }
    Ok(found)
}

/// The session with row id `rowid`.
///
/// Errors: [`Error::NotFound`] when there is none.
pub fn session_summary(store: &Store, rowid: i64) -> Result<SessionSummary> {
    session_summary_on(&store.conn, rowid)
}

/// [`session_summary`] on a connection (or a transaction).
pub(crate) fn session_summary_on(
    conn: &rusqlite::Connection,
    rowid: i64,
) -> Result<SessionSummary> {
    conn.query_row(
        &format!("SELECT {SESSION_COLS} FROM sessions s WHERE s.id = ?1"),
        [rowid],
        session_row,
    )
    .optional()
    .db()?
    .ok_or_else(|| Error::NotFound(format!("no session with row id {rowid}")))
}

/// Sessions, most recently updated first (served by the `updated_at` indexes).
pub fn list_sessions(store: &Store, f: &ListFilter) -> Result<Vec<SessionSummary>> {
    let mut sql = format!("SELECT {SESSION_COLS} FROM sessions s WHERE 1 = 1");
    let mut args: Vec<Sql> = Vec::new();
    session_clause(
        store,
        (
            f.agent.as_deref(),
            f.project.as_deref(),
            f.machine.as_deref(),
        ),
        &mut sql,
        &mut args,
    )?;
    if let Some(t) = f.since {
        sql.push_str(" AND s.updated_at >= ?");
        args.push(Sql::Integer(t));
    }
    if let Some(t) = f.until {
        sql.push_str(" AND s.updated_at <= ?");
        args.push(Sql::Integer(t));
    }
    sql.push_str(" ORDER BY s.updated_at DESC LIMIT ? OFFSET ?");
    args.push(Sql::Integer(f.limit.clamp(1, 100_000) as i64));
    args.push(Sql::Integer(f.offset.min(i64::MAX as usize) as i64));
    let mut stmt = store.conn.prepare(&sql).db()?;
    let rows = stmt
        .query_map(params_from_iter(args), session_row)
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    Ok(rows)
}

/// A session's messages in order, `offset` (0-based index) and at most `limit` of them.
/// Tool outputs longer than `max_output` bytes are cut, with a note of the bytes left out.
pub fn get_session(
    store: &Store,
    id: &str,
    agent: Option<&str>,
    offset: i64,
    limit: i64,
    max_output: Option<usize>,
) -> Result<SessionView> {
    let sid = resolve_session(store, id, agent)?;
    let conn = &store.conn;
    let session = conn
        .query_row(
            &format!("SELECT {SESSION_COLS} FROM sessions s WHERE s.id = ?1"),
            [sid],
            session_row,
        )
        .db()?;
    let mut stmt = conn
        .prepare(
            "SELECT ext_id, seq, role, kind, ts, model, NULL, memtrail_parts(parts_zdict, body) FROM messages
         WHERE session_id = ?1 AND seq >= ?2 ORDER BY seq LIMIT ?3",
        )
        .db()?;
    let messages = stmt
        .query_map(rusqlite::params![sid, offset.max(0), limit.max(0)], |r| {
            // Parsed from SQLite's own buffer, and a lone text moved, not copied: a message of
            // 50 MB costs about twice that at its peak, not four times.
            let (text, thinking, calls) = view_parts(r.get_ref(7)?.as_str()?, max_output);
            Ok(MessageView {
                id: r.get(0)?,
                index: r.get(1)?,
                role: r.get(2)?,
                kind: r.get(3)?,
                text,
                thinking,
                timestamp: r.get::<_, Option<i64>>(4)?.map(format_rfc3339_ms),
                model: r.get(5)?,
                tool_calls: calls,
            })
        })
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    let mut stmt = conn
        .prepare(
            "SELECT external_id FROM sessions WHERE agent = ?1 AND parent_external_id = ?2
         AND origin = (SELECT origin FROM sessions WHERE id = ?3) ORDER BY started_at",
        )
        .db()?;
    let children = stmt
        .query_map(
            rusqlite::params![session.agent, session.session_id, sid],
            |r| r.get(0),
        )
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    Ok(SessionView {
        total: session.messages,
        session,
        offset: offset.max(0),
        messages,
        children,
    })
}

/// Characters of a message shown as the snippet of a hit found by meaning (no matched words to
/// centre on).
pub const SEMANTIC_SNIPPET_CHARS: usize = 160;

/// The hits of messages ranked elsewhere (by vector similarity): `ranked` is (message row id,
/// score), best first; rows that `f` filters out, that match `excluded` (items of
/// [`crate::query::parse_query`]'s shape, the full-text search's match: an empty list excludes
/// nothing; with exclusions, a message still queued for the index is left out too, as it
/// cannot be checked) or that no longer exist are left out, a copy of a message already given
/// (a forked session's: same agent, id, time and text, as [`crate::query::best_distinct`]
/// tells them) is left out, and at most `f.limit` hits are returned. The snippet is the start of the message's prose (of its
/// tool text when it has none), [`SEMANTIC_SNIPPET_CHARS`] characters, without highlights.
///
/// Errors: an unknown session or machine in `f`; store errors.
pub fn hits_for_messages(
    store: &Store,
    ranked: &[(i64, f64)],
    excluded: &[crate::query::QueryItem],
    f: &SearchFilter,
) -> Result<Vec<Hit>> {
    let mut sql = String::from(
        "SELECT s.external_id, s.agent, s.title, s.project_dir, m.ext_id, m.seq, m.role, m.kind, m.ts,
                s.origin, (SELECT label FROM machines WHERE id = s.origin),
                CASE WHEN length(m.body) > 0 THEN substr(m.body, 1, ?2) ELSE substr(memtrail_tools(m.tools_text, m.parts_zdict), 1, ?2) END,
                length(m.body), substr(m.body, 1, 256)
         FROM messages m JOIN sessions s ON s.id = m.session_id
         WHERE m.id = ?1",
    );
    let mut args: Vec<Sql> = Vec::new();
    filter_clause(store, f, &mut sql, &mut args)?;
    if !excluded.is_empty() {
        // Prefixes as the full-text search takes them ([`super::prefix`]: `pars*` the words
        // that begin with `pars`, not every word that begins with its stem `par`).
        let q = crate::query::fts_render(excluded.to_vec());
        let q = super::prefix::expand(&store.conn, &q)?
            .render(super::prefix::Keep::All)
            .query;
        args.push(Sql::Text(q));
        // A message still queued for the index cannot be checked: it is left out too.
        sql.push_str(
            " AND NOT EXISTS (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? \
               AND messages_fts.rowid = m.id) \
             AND NOT EXISTS (SELECT 1 FROM fts_pending WHERE fts_pending.id = m.id)",
        );
    }
    // The filter's arguments are numbered after the two fixed ones.
    let mut stmt = store.conn.prepare_cached(&sql).db()?;
    let mut hits = Vec::new();
    // Copies of a message (a forked or resumed session's transcript) have the same vector:
    // the first given is shown, as the full-text search keeps one copy (`best_distinct`).
    let mut seen: std::collections::HashSet<CopyKey> = std::collections::HashSet::new();
    for &(rowid, score) in ranked {
        if hits.len() >= f.limit.max(1) {
            break;
        }
        let mut all: Vec<Sql> = vec![
            Sql::Integer(rowid),
            Sql::Integer(SEMANTIC_SNIPPET_CHARS as i64),
        ];
        all.extend(args.iter().cloned());
        let hit = stmt
            .query_row(params_from_iter(all), |r| {
                let text: String = r.get(11)?;
                let ts: Option<i64> = r.get(8)?;
                let copy: Option<CopyKey> = match ts {
                    Some(t) => Some((r.get(1)?, r.get(4)?, t, r.get(12)?, r.get(13)?)),
                    None => None,
                };
                let hit = hit_row(
                    r,
                    crate::query::unmarked(&text.split_whitespace().collect::<Vec<_>>().join(" ")),
                    score,
                )?;
                Ok((hit, copy))
            })
            .optional()
            .db()?;
        if let Some((hit, copy)) = hit {
            // Without a time (Cursor), ids such as `line-3` are not unique across sessions.
            if copy.as_ref().is_some_and(|k| !seen.insert(k.clone())) {
                continue;
            }
            hits.push(Hit {
                copy: copy.as_ref().map(crate::query::copy_id),
                ..hit
            });
        }
    }
    Ok(hits)
}

/// Every message's time moved to `t0` + ((id × 7919) mod 9600) s, or none for every 13th row:
/// times out of the rows' order (history imported out of order), for tests of date filters.
#[cfg(test)]
pub(crate) fn scatter_message_times(store: &Store, t0: i64) {
    store
        .conn
        .execute(
            "UPDATE messages SET ts = CASE WHEN id % 13 = 0 THEN NULL
                ELSE ?1 + ((id * 7919) % 9600) * 1000 END",
            [t0],
        )
        .unwrap();
}

/// Whether `store` keeps a listed scope (of its last filtered search): for tests of the plans.
#[cfg(test)]
pub(crate) fn scope_is_listed(store: &Store) -> bool {
    matches!(
        store.scope_cache.borrow().as_ref().map(|c| &c.plan),
        Some(ScopePlan::Scope(_))
    )
}

/// Test support: delete session `session`'s message of the largest id (as a rewind or a
/// redaction would), leaving the session's `last_message_id` as it was.
#[cfg(test)]
pub(crate) fn delete_newest_message(store: &Store, session: i64) {
    store
        .conn
        .execute(
            "DELETE FROM messages WHERE id = (SELECT max(id) FROM messages WHERE session_id = ?1)",
            [session],
        )
        .unwrap();
}

#[cfg(test)]
mod prefix_tests {
    use super::has_prefix_term;
    use crate::query::fts_query;

    #[test]
    fn a_prefix_term_is_a_star_outside_quotes() {
        let q = |s: &str| fts_query(s).unwrap();
        assert!(has_prefix_term(&q("overfl*")));
        assert!(has_prefix_term(&q("error overfl*")));
        assert!(has_prefix_term(&q("\"exact phrase\"*")));
        assert!(!has_prefix_term(&q("overflow invoice")));
        assert!(!has_prefix_term(&q("\"a*b\"")));
        // A quote inside a term is doubled: the term stays quoted.
        assert!(!has_prefix_term(r#""say ""x*"" now""#));
        assert!(has_prefix_term(r#""say ""x"""*"#));
    }

    /// Each `NOT` outside parentheses leaves with its operand, whatever its shape; anything
    /// else is kept as written, and a query of another shape is not changed.
    #[test]
    fn an_alternatives_exclusions_leave_its_snippets_query() {
        use super::without_exclusions as w;
        let q = |s: &str| fts_query(s).unwrap();
        assert_eq!(w(&q("alpha -beta")).as_deref(), Some(r#""alpha" "#));
        assert_eq!(
            w(&q("alpha -beta gamma")).as_deref(),
            Some(r#""alpha"  AND "gamma""#)
        );
        assert_eq!(
            w(&q("alpha -be* -\"b c\"")).as_deref(),
            Some(r#""alpha"  "#)
        );
        assert_eq!(w(&q("alpha -漢字")).as_deref(), Some(r#""alpha" "#));
        assert_eq!(
            w(&q("漢字 -alpha")).as_deref(),
            Some(r#"("漢字" OR (cjk : "漢 字")) "#)
        );
        // A quote doubled inside an excluded phrase; a column filter; an expanded group; a
        // group before.
        assert_eq!(
            w(r#""a" NOT "say ""x"" now" AND "c""#).as_deref(),
            Some(r#""a"  AND "c""#)
        );
        assert_eq!(w(r#""a" NOT cjk : "x y""#).as_deref(), Some(r#""a" "#));
        assert_eq!(
            w(r#""error" NOT ("co" OR "code" OR "config")"#).as_deref(),
            Some(r#""error" "#)
        );
        assert_eq!(
            w(r#"("err" OR "errno") AND "x" NOT ("t" OR "the") AND "y""#).as_deref(),
            Some(r#"("err" OR "errno") AND "x"  AND "y""#)
        );
        // Nothing excluded; an `OR` outside parentheses (several alternatives); a `NOT`
        // inside parentheses only; text of another shape.
        for other in [
            q("alpha beta"),
            q("alpha OR gamma -beta"),
            q("alpha -beta OR gamma"),
            r#"("a" NOT "b")"#.to_string(),
            r#""a" NOT"#.to_string(),
            r#""a" NOT "b"#.to_string(),
            r#""a" NOT ("b" OR "c""#.to_string(),
            r#""a" NOT é"#.to_string(),
            r#""a") NOT "b""#.to_string(),
        ] {
            assert_eq!(w(&other), None, "{other}");
        }
    }
}
