//! Reading the store: BM25 search with snippets, session lists, whole sessions.

use crate::store::Store;
use crate::{Error, Result, now_ms};
use memtrail_adapters::{Part, ToolCall, format_rfc3339_ms};
use rusqlite::{OptionalExtension, params, params_from_iter, types::Value as Sql};
use serde::Serialize;
use std::collections::HashMap;

/// Snippet highlight delimiters as returned by [`search`]: the matched terms are wrapped in
/// `HL_START` … `HL_END` (U+0001 / U+0002); callers map them to `**` or terminal bold.
pub const HL_START: char = '\u{1}';
pub const HL_END: char = '\u{2}';

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
    pub limit: usize,
}

/// One search hit.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Hit {
    pub session_id: String,
    pub agent: String,
    pub title: Option<String>,
    pub project: Option<String>,
    pub message_id: String,
    /// 0-based position of the message in its session (use with `get_session` offset).
    pub message_index: i64,
    pub role: String,
    pub kind: String,
    /// RFC 3339 UTC.
    pub timestamp: Option<String>,
    /// A short excerpt with the matched terms between [`HL_START`] and [`HL_END`].
    pub snippet: String,
    /// Relevance (higher is better): BM25 with a small recency prior.
    pub score: f64,
}

/// Most distinct terms a query may hold; the rest are ignored (a 10 000-word query would
/// otherwise take seconds).
pub const MAX_QUERY_TERMS: usize = 32;

/// Turn any user text into a safe FTS5 query: words become quoted terms (implicitly ANDed),
/// `"…"` stays a phrase, a trailing `*` makes a prefix query, a bare `OR` between terms is kept,
/// a bare `AND` is dropped (it is implicit), `NOT word` and `-word` exclude a word (after at
/// least one positive term), every other FTS5 operator character is neutralised by quoting, and
/// repeated terms count once. A term with CJK characters also matches as a substring, through
/// the `cjk` column (one token per character). Returns `None` when the text holds no searchable
/// word.
pub fn fts_query(input: &str) -> Option<String> {
    let mut items: Vec<String> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut chars = input.chars().peekable();
    let mut pending_or = false;
    let mut pending_not = false;
    let mut positives = 0usize;
    while let Some(&c) = chars.peek() {
        if seen.len() >= MAX_QUERY_TERMS {
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
            pending_or = false;
            pending_not = false;
            continue;
        }
        let key = format!(
            "{}{}{}",
            if pending_not { "-" } else { "" },
            text,
            if prefix { "*" } else { "" }
        );
        if seen.contains(&key) {
            pending_or = false;
            pending_not = false;
            continue;
        }
        seen.push(key);
        let mut term = format!(
            "\"{}\"{}",
            text.replace('"', "\"\""),
            if prefix { "*" } else { "" }
        );
        if !phrase && text.chars().any(crate::store::is_cjk) {
            // Every CJK run of the term, as a phrase of single characters in the cjk column.
            let runs: Vec<String> = text
                .split(|c: char| !crate::store::is_cjk(c))
                .filter(|r| !r.is_empty())
                .map(|r| {
                    let spaced: Vec<String> = r.chars().map(String::from).collect();
                    format!("cjk : \"{}\"", spaced.join(" "))
                })
                .collect();
            term = format!("({term} OR ({}))", runs.join(" AND "));
        }
        if pending_not {
            pending_not = false;
            pending_or = false;
            if positives > 0 {
                items.push(format!("NOT {term}"));
            }
            continue;
        }
        if pending_or && positives > 0 {
            items.push("OR".to_string());
        }
        pending_or = false;
        positives += 1;
        items.push(term);
    }
    if positives == 0 {
        return None;
    }
    // FTS5 takes implicit AND between phrases but not next to a parenthesized group (a CJK
    // term): `"a" ("b" OR …)` is a syntax error, so those get an explicit AND.
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            let prev = &items[i - 1];
            let grouped = |t: &str| t.starts_with('(') || t.starts_with("NOT (");
            if prev != "OR"
                && item != "OR"
                && !item.starts_with("NOT ")
                && (grouped(prev) || grouped(item))
            {
                out.push_str(" AND ");
            } else {
                out.push(' ');
            }
        }
        out.push_str(item);
    }
    Some(out)
}

/// Resolve a session given by its agent id (or a unique prefix of it) to its row id.
///
/// Errors: [`Error::NotFound`] when nothing matches, [`Error::Invalid`] when a prefix is
/// ambiguous (the message lists the candidates).
pub fn resolve_session(store: &Store, id: &str, agent: Option<&str>) -> Result<i64> {
    let conn = &store.conn;
    let exact: Option<i64> = conn
        .query_row(
            "SELECT id FROM sessions WHERE external_id = ?1 AND (?2 IS NULL OR agent = ?2)
             ORDER BY updated_at DESC LIMIT 1",
            rusqlite::params![id, agent],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(x) = exact {
        return Ok(x);
    }
    let pattern = format!("{}%", like_escape(id));
    let mut stmt = conn.prepare(
        "SELECT id, external_id FROM sessions WHERE external_id LIKE ?1 ESCAPE '\\'
         AND (?2 IS NULL OR agent = ?2) ORDER BY updated_at DESC LIMIT 6",
    )?;
    let rows: Vec<(i64, String)> = stmt
        .query_map(rusqlite::params![pattern, agent], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    // A prefix of a session id also prefixes its sub-agents' ids (`<id>/agent-…`): when exactly
    // one match is a main session and the others are its sub-agents, it is the one meant.
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
        0 => Err(Error::NotFound(format!("no session `{id}` in the store"))),
        1 => Ok(rows[0].0),
        _ => Err(Error::Invalid(format!(
            "`{id}` matches several sessions: {}",
            rows.iter()
                .map(|r| r.1.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
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

fn like_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

/// True when the FTS5 query `q` (from [`fts_query`]) has an `OR` outside quotes and
/// parentheses (a user's `OR`, not the one that joins a CJK term's two forms).
fn has_top_level_or(q: &str) -> bool {
    let (mut depth, mut quoted) = (0i32, false);
    let b = q.as_bytes();
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
                return true;
            }
            _ => {}
        }
    }
    false
}

/// How many of the newest matches an unfiltered search ranks by BM25 (see [`search`]).
pub const SEARCH_CANDIDATES: usize = 1024;

/// Full-text search, ranked by BM25 (prose weighted above tool text) with a mild recency prior.
///
/// Errors: [`Error::Invalid`] when the query holds no searchable word; store errors.
pub fn search(store: &Store, query: &str, f: &SearchFilter) -> Result<Vec<Hit>> {
    let Some(q) = fts_query(query) else {
        return Err(Error::Invalid(format!(
            "the query `{query}` holds no searchable word"
        )));
    };
    let limit = f.limit.clamp(1, 500);
    // Messages written since the last catch-up are queued, not yet indexed (see `store`); a
    // store that cannot be written now (locked, read-only) is searched as it is.
    let _ = store.catch_up_for_search();
    store.ensure_rank_function()?;
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
    // An `OR` query is ranked over all its matches: the newest matches of `rare OR common`
    // would all be `common` ones, and the rare term's hits would never be ranked.
    let bounded = f.agent.is_none()
        && f.project.is_none()
        && f.session.is_none()
        && f.since.is_none()
        && f.until.is_none()
        && f.role.is_none()
        && !has_top_level_or(&q);
    let mut sql = if bounded {
        format!(
            "SELECT c.id, c.score FROM (
                SELECT rowid AS id, memtrail_bm25(messages_fts, 1.0, 0.4, 0.8) AS score FROM messages_fts
                WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT {SEARCH_CANDIDATES}
             ) c WHERE 1 = 1"
        )
    } else {
        String::from(
            "SELECT messages_fts.rowid, memtrail_bm25(messages_fts, 1.0, 0.4, 0.8) AS score
             FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
             JOIN sessions s ON s.id = m.session_id
             WHERE messages_fts MATCH ?",
        )
    };
    let mut args: Vec<Sql> = vec![Sql::Text(q.clone())];
    if let Some(a) = &f.agent {
        sql.push_str(" AND s.agent = ?");
        args.push(Sql::Text(a.clone()));
    }
    if let Some(p) = &f.project {
        let p = normalize_dir(p);
        let p = p.as_str();
        sql.push_str(" AND (s.project_dir = ? OR s.project_dir LIKE ? ESCAPE '\\')");
        args.push(Sql::Text(p.to_string()));
        args.push(Sql::Text(format!("{}/%", like_escape(p))));
    }
    if let Some(sid) = &f.session {
        let id = resolve_session(store, sid, f.agent.as_deref())?;
        sql.push_str(" AND m.session_id = ?");
        args.push(Sql::Integer(id));
    }
    if let Some(t) = f.since {
        sql.push_str(" AND m.ts >= ?");
        args.push(Sql::Integer(t));
    }
    if let Some(t) = f.until {
        sql.push_str(" AND m.ts <= ?");
        args.push(Sql::Integer(t));
    }
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
    // Rank a few more than asked by BM25, then apply the recency prior; equal scores go to
    // the newest message.
    let fetch = (limit * 3).min(1500);
    sql.push_str(if bounded {
        " ORDER BY c.score, c.id DESC LIMIT ?"
    } else {
        " ORDER BY score, messages_fts.rowid DESC LIMIT ?"
    });
    args.push(Sql::Integer(fetch as i64));

    let now = now_ms();
    let mut stmt = store.conn.prepare_cached(&sql)?;
    let best: Vec<(i64, f64)> = stmt
        .query_map(params_from_iter(args), |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    // The text's length and first 256 characters tell a copy from a different message that
    // happens to share its id and time (ids given by position, transcripts written by a script)
    // without reading a long body whole.
    let mut ts_of = store.conn.prepare_cached(
        "SELECT m.ts, m.ext_id, s.agent, length(m.body), substr(m.body, 1, 256)
         FROM messages m JOIN sessions s ON s.id = m.session_id
         WHERE m.id = ?1",
    )?;
    let mut ranked = Vec::with_capacity(best.len());
    // A session forked or resumed into a new transcript (`claude --fork-session`) holds copies
    // of the earlier messages: same agent, message id, time and text. Each copied hit is shown
    // once (the best ranked, else the newest copy).
    let mut seen = std::collections::HashSet::new();
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
            .optional()?
        else {
            continue;
        };
        keyed.push((
            rowid,
            with_recency(-bm25, ts, now),
            ts.map(|t| (agent, ext, t, len, head)),
        ));
    }
    keyed.sort_by(|a, b| b.1.total_cmp(&a.1));
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
    let mut snippets = snippets(store, &q, &ranked)?;
    let mut row = store.conn.prepare_cached(
        "SELECT s.external_id, s.agent, s.title, s.project_dir, m.ext_id, m.seq, m.role, m.kind, m.ts
         FROM messages m JOIN sessions s ON s.id = m.session_id
         WHERE m.id = ?1",
    )?;
    let mut hits = Vec::with_capacity(ranked.len());
    for (rowid, score) in ranked {
        // A row deleted since the rank step is simply left out.
        let Some(snippet) = snippets.remove(&rowid) else {
            continue;
        };
        let hit = row
            .query_row(params![rowid], |r| {
                let ts: Option<i64> = r.get(8)?;
                Ok(Hit {
                    session_id: r.get(0)?,
                    agent: r.get(1)?,
                    title: r.get(2)?,
                    project: r.get(3)?,
                    message_id: r.get(4)?,
                    message_index: r.get(5)?,
                    role: r.get(6)?,
                    kind: r.get(7)?,
                    timestamp: ts.map(format_rfc3339_ms),
                    snippet: compact_cjk(&snippet),
                    score,
                })
            })
            .optional()?;
        hits.extend(hit);
    }
    Ok(hits)
}

/// The snippet (FTS5 `snippet()`, 16 tokens, hits between `\x01` and `\x02`) of each ranked
/// row still in the index, by rowid.
///
/// FTS5 finds a rowid in a term's doclist by walking the doclist's index page by page from its
/// start, so a query positioned on one row (`rowid = ?`) costs in proportion to the term's
/// whole doclist: for a frequent term, thousands of pages per hit, more than the rest of the
/// search. When the hits sit close together (within 1/16 of the store's rowids, as the newest
/// matches of frequent terms do), one pass over the matches from the newest hit down to the
/// oldest replaces the 20 lookups (`+rowid IN …` filters the rows without being a constraint
/// FTS5 seeks by). Hits spread over the store are looked up one by one: the pass would read
/// every match in between.
fn snippets(store: &Store, q: &str, ranked: &[(i64, f64)]) -> Result<HashMap<i64, String>> {
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
        )?
        .query_row([], |r| r.get(0))?;
    if (hi - lo) <= span / 16 {
        let ids = format!(
            "[{}]",
            ranked
                .iter()
                .map(|r| r.0.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        let sql = format!(
            "SELECT rowid, {SNIPPET} FROM messages_fts
             WHERE messages_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3
               AND +rowid IN (SELECT value FROM json_each(?4))
             ORDER BY rowid DESC"
        );
        let mut stmt = store.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(params![q, lo, hi, ids], |r| Ok((r.get(0)?, r.get(1)?)))?;
        return Ok(rows.collect::<rusqlite::Result<_>>()?);
    }
    let sql =
        format!("SELECT {SNIPPET} FROM messages_fts WHERE messages_fts MATCH ?1 AND rowid = ?2");
    let mut stmt = store.conn.prepare_cached(&sql)?;
    let mut out = HashMap::with_capacity(ranked.len());
    for &(rowid, _) in ranked {
        if let Some(s) = stmt
            .query_row(params![q, rowid], |r| r.get::<_, String>(0))
            .optional()?
        {
            out.insert(rowid, s);
        }
    }
    Ok(out)
}

/// A snippet taken from the `cjk` column has a space between characters: drop the spaces
/// between two CJK characters (highlight markers in between are kept).
fn compact_cjk(snippet: &str) -> String {
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

/// BM25 relevance (positive, higher is better) lifted by up to 25% for recent messages, halving
/// every 30 days.
fn with_recency(relevance: f64, ts: Option<i64>, now: i64) -> f64 {
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
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SessionSummary {
    pub session_id: String,
    pub agent: String,
    pub title: Option<String>,
    pub project: Option<String>,
    pub model: Option<String>,
    pub git_branch: Option<String>,
    /// RFC 3339 UTC.
    pub started_at: Option<String>,
    pub updated_at: Option<String>,
    pub messages: i64,
    pub parent_session_id: Option<String>,
}

/// Filters for [`list_sessions`].
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub agent: Option<String>,
    pub project: Option<String>,
    pub limit: usize,
}

const SESSION_COLS: &str = "s.external_id, s.agent, s.title, s.project_dir, s.model, s.git_branch,
    s.started_at, s.updated_at, s.message_count, s.parent_external_id";

fn session_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionSummary> {
    Ok(SessionSummary {
        session_id: r.get(0)?,
        agent: r.get(1)?,
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

/// The session with row id `rowid`.
///
/// Errors: [`Error::NotFound`] when there is none.
pub fn session_summary(store: &Store, rowid: i64) -> Result<SessionSummary> {
    store
        .conn
        .query_row(
            &format!("SELECT {SESSION_COLS} FROM sessions s WHERE s.id = ?1"),
            [rowid],
            session_row,
        )
        .optional()?
        .ok_or_else(|| Error::NotFound(format!("no session with row id {rowid}")))
}

/// Sessions, most recently updated first (served by the `updated_at` indexes).
pub fn list_sessions(store: &Store, f: &ListFilter) -> Result<Vec<SessionSummary>> {
    let mut sql = format!("SELECT {SESSION_COLS} FROM sessions s WHERE 1 = 1");
    let mut args: Vec<Sql> = Vec::new();
    if let Some(a) = &f.agent {
        sql.push_str(" AND s.agent = ?");
        args.push(Sql::Text(a.clone()));
    }
    if let Some(p) = &f.project {
        let p = normalize_dir(p);
        let p = p.as_str();
        sql.push_str(" AND (s.project_dir = ? OR s.project_dir LIKE ? ESCAPE '\\')");
        args.push(Sql::Text(p.to_string()));
        args.push(Sql::Text(format!("{}/%", like_escape(p))));
    }
    sql.push_str(" ORDER BY s.updated_at DESC LIMIT ?");
    args.push(Sql::Integer(f.limit.clamp(1, 100_000) as i64));
    let mut stmt = store.conn.prepare(&sql)?;
    let rows = stmt
        .query_map(params_from_iter(args), session_row)?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// One message of a session, as shown by `sessions show` and `get_session`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MessageView {
    pub id: String,
    /// 0-based position in the session.
    pub index: i64,
    pub role: String,
    pub kind: String,
    /// The message's prose (text blocks joined by blank lines; a stray tool result's output).
    pub text: String,
    /// The model's thinking blocks, when it recorded any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// RFC 3339 UTC.
    pub timestamp: Option<String>,
    pub model: Option<String>,
    pub tool_calls: Vec<ToolCall>,
}

/// A session with a page of its messages.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SessionView {
    pub session: SessionSummary,
    /// Index of the first message returned, and how many the session has in all.
    pub offset: i64,
    pub total: i64,
    pub messages: Vec<MessageView>,
    /// Child (sub-agent) sessions.
    pub children: Vec<String>,
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
    let session = conn.query_row(
        &format!("SELECT {SESSION_COLS} FROM sessions s WHERE s.id = ?1"),
        [sid],
        session_row,
    )?;
    let mut stmt = conn.prepare(
        "SELECT ext_id, seq, role, kind, ts, model, NULL, parts FROM messages
         WHERE session_id = ?1 AND seq >= ?2 ORDER BY seq LIMIT ?3",
    )?;
    let messages = stmt
        .query_map(rusqlite::params![sid, offset.max(0), limit.max(0)], |r| {
            // Parsed from SQLite's own buffer, and a lone text moved, not copied: a message of
            // 50 MB costs about twice that at its peak, not four times.
            let parts: Vec<Part> =
                serde_json::from_str(r.get_ref(7)?.as_str()?).unwrap_or_default();
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
            Ok(MessageView {
                id: r.get(0)?,
                index: r.get(1)?,
                role: r.get(2)?,
                kind: r.get(3)?,
                text,
                thinking: (!thinking.is_empty()).then_some(thinking),
                timestamp: r.get::<_, Option<i64>>(4)?.map(format_rfc3339_ms),
                model: r.get(5)?,
                tool_calls: calls,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut stmt = conn.prepare(
        "SELECT external_id FROM sessions WHERE agent = ?1 AND parent_external_id = ?2
         ORDER BY started_at",
    )?;
    let children = stmt
        .query_map(rusqlite::params![session.agent, session.session_id], |r| {
            r.get(0)
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(SessionView {
        total: session.messages,
        session,
        offset: offset.max(0),
        messages,
        children,
    })
}

/// Cut `s` to at most `max` bytes (on a character boundary) and note the bytes left out.
pub(crate) fn truncate_note(s: &mut String, max: usize) {
    if s.len() > max {
        let keep = crate::store::cap(s, max).len();
        let left = s.len() - keep;
        s.truncate(keep);
        s.push_str(&format!("\n… [{left} more bytes]"));
    }
}

/// Render a session as Markdown: a title, a line of facts, then each message with its tool calls
/// (input as JSON, output in a fence).
pub fn session_markdown(v: &SessionView) -> String {
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
        s.session_id,
        s.agent,
        s.project.as_deref().unwrap_or("?"),
        s.started_at.as_deref().unwrap_or("?"),
        s.updated_at.as_deref().unwrap_or("?"),
        s.messages,
        s.parent_session_id
            .as_deref()
            .map(|p| format!("\n- parent session: `{p}`"))
            .unwrap_or_default()
    );
    for c in &v.children {
        let _ = writeln!(out, "- sub-agent session: `{c}`");
    }
    for m in &v.messages {
        let who = match (m.role.as_str(), m.kind.as_str()) {
            (_, "summary") => "Compaction summary".to_string(),
            ("user", _) => "User".to_string(),
            ("assistant", _) => "Assistant".to_string(),
            ("tool", _) => "Tool result".to_string(),
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
    use super::*;

    #[test]
    fn fts_query_neutralises_syntax() {
        assert_eq!(fts_query("hello world").unwrap(), r#""hello" "world""#);
        assert_eq!(fts_query("\"exact phrase\"").unwrap(), r#""exact phrase""#);
        assert_eq!(fts_query("pars*").unwrap(), r#""pars"*"#);
        assert_eq!(fts_query("a OR b").unwrap(), r#""a" OR "b""#);
        assert_eq!(fts_query("a AND b").unwrap(), r#""a" "b""#);
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
        assert_eq!(fts_query("NOT hello world").unwrap(), r#""world""#);
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
        let or = |q: &str| has_top_level_or(&fts_query(q).unwrap());
        assert!(or("word5 OR refactor"));
        assert!(or("a b OR c"));
        assert!(!or("a b c"));
        assert!(!or("\"this OR that\""), "inside a phrase");
        assert!(!or("fix 日本"), "a CJK term's two forms");
        assert!(or("日本 OR fix"));
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
