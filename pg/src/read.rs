//! Reading a PostgreSQL store directly (`--store postgres://…`): [`PgReader`], memtrail's
//! [`ReadStore`] over the database `memtrail sync` fills (its migrations), so that
//! `search`, `sessions list/show`, `resume`, `handoff` and the MCP server's read tools answer
//! from a team server as they answer from the local SQLite store.
//!
//! Full text (migrations 2 and 3, docs/postgres.md): the `tsv` column of `messages` (prose
//! weight A, tool calls B, CJK characters C; lexemes computed by [`crate::tsv`]), a GIN index,
//! queries in memtrail's own grammar ([`memtrail_runtime::query::parse_query`], the SQLite
//! store's) compiled to a `tsquery` literal of the same lexemes ([`tsquery`]), snippets made
//! here from the redacted text ([`crate::tsv::snippet`]), and the SQLite store's bounded
//! ranking: without a
//! filter (and without `OR`) only the newest [`SEARCH_CANDIDATES`] matches are ranked
//! (`ts_rank`, then the recency prior of [`with_recency`]).

use crate::Pg;
use crate::tsv::{
    INDEXED_CHARS, INDEXED_CJK_CHARS, MAX_LEXEME_BYTES, QueryLexeme, leading_snippet, lexeme,
    snippet, tokens,
};
use memtrail_runtime::analytics::{
    Analytics, DayRange, FileEdits, ProjectTime, SLOT_MS, TOP, ToolUse,
};
use memtrail_runtime::events::{Category, Event, StoredEvent};
use memtrail_runtime::query::{
    CopyKey, HL_END, HL_START, Hit, ListFilter, MessageView, QueryItem, Ranking, SEARCH_CANDIDATES,
    SEMANTIC_SNIPPET_CHARS, SearchFilter, SessionSummary, SessionView, best_distinct, cjk_runs,
    compact_cjk, copy_ids, like_escape, normalize_dir, parse_query, pick_prefix_match, unmarked,
    view_parts, with_recency,
};
use memtrail_runtime::read::{CandidateMessage, ReadStore};
use memtrail_runtime::redact::{redact, redact_json, redact_string, redact_title};
use memtrail_runtime::resume::dir_within;
use memtrail_runtime::{Error, Result, now_ms};
use tokio_postgres::Row;
use tokio_postgres::types::{ToSql, Type};

/// A query parameter with its PostgreSQL type: statements with parameters are sent with their
/// types (`Client::query_typed`: parse, bind and execute in one round trip, where `query`
/// first prepares the statement and waits for its description).
struct Param(Box<dyn ToSql + Sync + Send>, Type);

/// A `text` parameter.
fn text(s: impl Into<String>) -> Param {
    Param(Box::new(s.into()), Type::TEXT)
}

/// A `bigint` parameter.
fn int8(i: i64) -> Param {
    Param(Box::new(i), Type::INT8)
}

/// Weights of `ts_rank` for the `tsv` weights {D, C, B, A}: no D; CJK characters 0.8, tool
/// calls 0.4, prose 1.0 (the SQLite store's column weights).
const RANK_WEIGHTS: &str = "'{0, 0.8, 0.4, 1.0}'::float4[]";

/// `w.k`: the first column of a message `m` whose lexemes match the whole query `q` (1 prose,
/// 2 tool calls, 3 CJK characters; else 1), whose text the snippet is made from.
const MATCHED_COLUMN: &str = "LATERAL (SELECT CASE WHEN ts_filter(m.tsv, '{a}') @@ q THEN 1
    WHEN ts_filter(m.tsv, '{b}') @@ q THEN 2 WHEN ts_filter(m.tsv, '{c}') @@ q THEN 3
    ELSE 1 END AS k) w";

/// A search by meaning reads one list in this many of the model's IVFFlat index
/// (`ivfflat.probes`, at least 10): 43 of 850 on the 1 GB eval, 0.195–0.224 of the paraphrases
/// found (two builds) against 0.241 by a scan of every vector, in 8.7–11 ms instead of
/// 160–180 ms (docs/postgres.md).
const PROBE_ONE_LIST_IN: i64 = 20;

/// Whether pgvector `version` (`extversion`, e.g. `0.8.6`) has iterative index scans (0.8.0).
fn pgvector_has_iterative_scan(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (0, 8)
}

/// Nearest chunks read per hit asked by [`ReadStore::nearest`] (a message has at most 4).
const NEAREST_CHUNKS_PER_HIT: usize = 4;

/// Why a PostgreSQL store cannot search by meaning: no vectors' table (no pgvector).
pub const NO_PGVECTOR: &str = "this PostgreSQL database has no pgvector, so it holds no \
    vectors: search by meaning is not available there (use mode lexical); an administrator \
    runs CREATE EXTENSION vector, then `memtrail sync` pushes the vectors";

/// The tokens of a snippet (the SQLite store's `snippet()` takes 16).
const SNIPPET_TOKENS: usize = 16;

/// The characters of a hit's text read first for its snippet; a hit whose match lies further
/// in is read again up to the indexed characters ([`INDEXED_CHARS`]). Bounds a search's
/// transfer to about 8 KiB per hit in the usual case.
const SNIPPET_FIRST_CHARS: usize = 8192;

/// The most characters the second read brings for one search (the best hits first; a hit past
/// it shows the start of its text): a search of 500 hits whose matches all lie deep in long
/// texts reads at most this, not 500 × 100,000 characters.
const SNIPPET_READ_BUDGET: usize = 4 << 20;

/// The reading session's `work_mem`. A search sorts the matches it found through the full-text
/// index by `id` to keep the newest [`SEARCH_CANDIDATES`], with their vectors (kept in the row
/// since migration 5, compressed, ~1–3 KB for a message that matches two words): PostgreSQL's
/// default 4 MB did not hold the 2 × 1,024 rows of its top-N sort and it sorted the whole set
/// on disk (`overflow invoice` on the 1 GB bench store: 12.6 MB written). 16 MB holds them
/// whatever the number of matches.
const SEARCH_WORK_MEM: &str = "16MB";

/// A PostgreSQL store, read only. Blocking: each call runs its queries to the end on the
/// connection's own single-threaded runtime ([`Pg`]; do not call it from inside another Tokio
/// runtime: the MCP server runs its calls on a thread of their own).
pub struct PgReader {
    pg: Pg,
    /// Whether the database has migration 6's activity summaries (`project_days`, …): found
    /// once, looked for again at each analytics call until then (a sync with a newer memtrail
    /// may migrate the database while this reader is open).
    summaries: std::cell::Cell<bool>,
    /// The database has the vectors' table (migration 7 with pgvector).
    vectors: bool,
    /// Its pgvector has iterative index scans (0.8 and later): a filtered search by meaning
    /// may read the model's index.
    iterative: bool,
    /// The database has the sessions' message-id bounds (`session_bounds`, migration 8) that
    /// a search filtered by sessions starts its walk from; an older one is walked from its
    /// newest match.
    bounds: bool,
    /// Set by [`PgReader::make_stoppable`].
    stop: Option<memtrail_runtime::store::Stop>,
}

/// What tells a copy of a message ([`best_distinct`]) from columns 2–6 of a ranked row: `m.ts`,
/// `m.ext_id`, `s.agent`, `length(m.body)::int8`, `left(m.body, 256)`; `None` without a time.
fn copy_key_of(r: &Row) -> Option<CopyKey> {
    let ts: Option<i64> = r.get(2);
    ts.map(|t| (r.get(4), r.get(3), t, r.get(5), r.get(6)))
}

/// A hit from a row of the search queries' shared columns (the message's id, then the
/// session's external id, agent, title and folder, the message's ext id, seq, role, kind, ts
/// (ms) and the machine's label, columns 0–10), with its (already redacted) `snippet`.
fn hit_of(r: &Row, snippet: String, score: f64) -> Hit {
    Hit {
        session_id: r.get(1),
        agent: r.get(2),
        machine: shown_label(r.get(10)),
        title: r.get(3),
        project: r.get(4),
        message_id: r.get(5),
        message_index: r.get(6),
        role: r.get(7),
        kind: r.get(8),
        timestamp: r
            .get::<_, Option<i64>>(9)
            .map(memtrail_adapters::format_rfc3339_ms),
        snippet,
        score,
        matched: None,
        copy: None,
    }
}

/// A PostgreSQL error as memtrail's ([`Error::Remote`]): its message (never a password).
fn remote(e: impl Into<crate::Error>) -> Error {
    Error::Remote(e.into().to_string())
}

impl PgReader {
    /// Connect to the store at `url` (a `postgres://` URL as libpq reads it: TLS by
    /// `sslmode`, the password from the URL, `PGPASSWORD` or `~/.pgpass`; see [`Pg::connect`])
    /// and check that it holds memtrail's schema with full-text search (migration 2).
    ///
    /// Errors: [`Error::Remote`] when the URL is bad, the connection fails (the message names
    /// the URL, password masked), the database has no memtrail tables (the message says to run
    /// `memtrail sync --init URL` on a machine first), its schema is newer than this build knows
    /// (`memtrail_meta.schema_version` above the last of [`crate::migrate::MIGRATIONS`]: the message of
    /// [`crate::Error::NewerSchema`], as `memtrail sync` gives it) or has no full-text search.
    pub fn connect(url: &str) -> Result<PgReader> {
        let pg = Pg::connect_url(url).map_err(remote)?;
        let mut r = PgReader {
            pg,
            summaries: std::cell::Cell::new(false),
            vectors: false,
            iterative: false,
            bounds: false,
            stop: None,
        };
        // With the check, this session's `work_mem` (SEARCH_WORK_MEM).
        let rows = r.rows_typed(
            &format!(
                "SELECT to_regclass('memtrail_meta') IS NOT NULL, to_regclass('messages') IS NOT NULL,
                    EXISTS (SELECT 1 FROM pg_attribute
                            WHERE attrelid = to_regclass('messages') AND attname = 'tsv'),
                    set_config('work_mem', '{SEARCH_WORK_MEM}', false),
                    to_regclass('message_vectors') IS NOT NULL,
                    to_regclass('session_bounds') IS NOT NULL"
            ),
            &[],
        )?;
        let t = rows
            .first()
            .ok_or_else(|| Error::Remote("the schema check returned no row".into()))?;
        let (meta, messages, tsv): (bool, bool, bool) = (t.get(0), t.get(1), t.get(2));
        r.vectors = t.get(4);
        r.bounds = t.get(5);
        if r.vectors {
            // For a model's IVFFlat index (built by `sync` once the model has enough vectors):
            // read more lists until the statement has its rows, however many a filter drops.
            // Best effort: a pgvector older than 0.8 has no iterative scan (it warns when it
            // loads and drops the setting), and its filtered searches then score every vector
            // (see `nearest`).
            let _ =
                r.pg.batch_execute("SET ivfflat.iterative_scan = relaxed_order");
            r.iterative = r
                .rows_typed(
                    "SELECT extversion FROM pg_extension WHERE extname = 'vector'",
                    &[],
                )?
                .first()
                .map(|row| pgvector_has_iterative_scan(row.get(0)))
                .unwrap_or(false);
        }
        if !meta && !messages {
            return Err(Error::Remote(format!(
                "no memtrail tables in {}: run `memtrail sync --init` with this URL on a \
                 machine first",
                r.pg.target()
            )));
        }
        if meta
            && let Some(v) = r
                .rows_typed(
                    "SELECT value FROM memtrail_meta WHERE key = 'schema_version'",
                    &[],
                )?
                .first()
        {
            let found: i64 = v.get::<_, String>(0).parse().map_err(|_| {
                Error::Remote("memtrail_meta.schema_version is not a number".into())
            })?;
            let supported = crate::migrate::MIGRATIONS.len() as i64;
            if found > supported {
                return Err(remote(crate::Error::NewerSchema { found, supported }));
            }
        }
        if !tsv {
            return Err(Error::Remote(
                "this database holds no memtrail store (or one without full-text search): run `memtrail sync --init URL` to create it, then `memtrail sync`".into(),
            ));
        }
        Ok(r)
    }

    /// Makes this reader stoppable for good from another thread, as
    /// [`memtrail_runtime::store::Store::make_stoppable`] makes a SQLite store: the first
    /// [`memtrail_runtime::store::Stop::stop`] cancels the statement running on the server
    /// ([`crate::Cancel`]: a connection of its own, on a thread of its own), and every later
    /// statement of this reader fails before it is sent. For the web page's readers, whose
    /// request may be abandoned mid-call; a stopped reader is dropped. Calling it again
    /// changes nothing.
    pub fn make_stoppable(&mut self) -> memtrail_runtime::store::Stop {
        if let Some(s) = &self.stop {
            return s.clone();
        }
        let cancel = self.pg.cancel_handle();
        let stop = memtrail_runtime::store::Stop::with_action(move || cancel.cancel());
        self.stop = Some(stop.clone());
        stop
    }

    /// Errors once the reader was stopped ([`PgReader::make_stoppable`]).
    fn not_stopped(&self) -> Result<()> {
        match &self.stop {
            Some(s) if s.is_stopped() => Err(Error::Remote(
                "this reader was stopped (its request was abandoned)".into(),
            )),
            _ => Ok(()),
        }
    }

    fn rows(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        self.not_stopped()?;
        self.pg
            .block_on(self.pg.client().query(sql, params))
            .map_err(remote)
    }

    fn opt(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>> {
        self.not_stopped()?;
        self.pg
            .block_on(self.pg.client().query_opt(sql, params))
            .map_err(remote)
    }

    fn one(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row> {
        self.not_stopped()?;
        self.pg
            .block_on(self.pg.client().query_one(sql, params))
            .map_err(remote)
    }

    fn rows_boxed(&self, sql: &str, params: &[Param]) -> Result<Vec<Row>> {
        let typed: Vec<(&(dyn ToSql + Sync), Type)> = params
            .iter()
            .map(|p| (p.0.as_ref() as &(dyn ToSql + Sync), p.1.clone()))
            .collect();
        self.rows_typed(sql, &typed)
    }

    /// The rows of `sql` with parameters of the given types, in one round trip.
    fn rows_typed(&self, sql: &str, params: &[(&(dyn ToSql + Sync), Type)]) -> Result<Vec<Row>> {
        self.not_stopped()?;
        self.pg
            .block_on(self.pg.client().query_typed(sql, params))
            .map_err(remote)
    }
}

/// The session columns of [`session_row`] (`s` is `sessions`).
const SESSION_COLS: &str = "s.external_id, s.agent, s.title, s.project_dir, s.model, s.git_branch,
    s.started_at, s.updated_at, s.message_count, s.parent_external_id,
    coalesce((SELECT label FROM machines WHERE id = s.machine_id), s.machine_id)";

impl PgReader {
    /// Errors unless machine `name` (a label or an id) pushed to the database:
    /// [`memtrail_runtime::machine::unknown_machine`], listing the labels.
    fn known_machine(&self, name: &str) -> Result<()> {
        let rows = self.rows("SELECT id, label FROM machines ORDER BY label, id", &[])?;
        let machines: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        if machines
            .iter()
            .any(|(id, label)| id == name || label == name)
        {
            return Ok(());
        }
        let known: Vec<String> = machines.into_iter().map(|(_, label)| label).collect();
        Err(memtrail_runtime::machine::unknown_machine(name, &known))
    }
}

/// ` AND` the session `s` is of machine `name` (its label or its id), its parameter appended.
fn machine_clause(name: &str, args: &mut Vec<Param>) -> String {
    args.push(text(name));
    let n = args.len();
    format!(" AND s.machine_id IN (SELECT id FROM machines WHERE label = ${n} OR id = ${n})")
}

/// A machine label as read from PostgreSQL (any client may have written it), made safe to
/// show ([`memtrail_runtime::machine::sanitize_label`]).
fn shown_label(label: String) -> String {
    memtrail_runtime::machine::sanitize_label(&label).unwrap_or(label)
}

fn session_row(r: &Row) -> SessionSummary {
    SessionSummary {
        session_id: r.get(0),
        agent: r.get(1),
        machine: shown_label(r.get(10)),
        title: r.get(2),
        project: r.get(3),
        model: r.get(4),
        git_branch: r.get(5),
        started_at: r
            .get::<_, Option<i64>>(6)
            .map(memtrail_adapters::format_rfc3339_ms),
        updated_at: r
            .get::<_, Option<i64>>(7)
            .map(memtrail_adapters::format_rfc3339_ms),
        messages: r.get(8),
        parent_session_id: r.get(9),
    }
}

/// `( s.project_dir = $n OR s.project_dir LIKE $n+1 )` for project `p` (it or below it),
/// its parameters appended to `args`.
fn project_clause(p: &str, args: &mut Vec<Param>) -> String {
    let p = normalize_dir(p);
    let n = args.len();
    args.push(text(p.clone()));
    args.push(text(format!("{}/%", like_escape(&p))));
    format!(
        " AND (s.project_dir = ${} OR s.project_dir LIKE ${} ESCAPE '\\')",
        n + 1,
        n + 2
    )
}

/// A term's text as a `tsquery` phrase: the lexemes of its tokens (split and stemmed as the
/// indexed text is, [`crate::tsv`]), each quoted, joined by `<->`; the last with `:*` for a
/// prefix. `None` when the text has no token.
fn phrase(text: &str, prefix: bool) -> Option<String> {
    // A token over PostgreSQL's lexeme limit is not indexed (crate::tsv), nor looked for.
    let lexemes: Vec<String> = tokens(text)
        .map(|(_, t)| lexeme(t))
        .filter(|l| l.len() <= MAX_LEXEME_BYTES)
        .collect();
    if lexemes.is_empty() {
        return None;
    }
    // A prefix of one word the stemmer changes (`pars` → `par`): the lexemes that begin with
    // it as typed, its own stem and the lexemes between the two, as the SQLite store searches
    // it (`memtrail_runtime::store::prefix`), not every lexeme that begins with the stem
    // (`partner` for `pars*`).
    if prefix
        && let [stem] = lexemes.as_slice()
        && let Some(typed) = stemmed_prefix(text, stem)
    {
        let mut alternatives = vec![format!("'{typed}':*")];
        // A word under three letters is stemmed in this store's index (`as` → `a`), not in
        // the SQLite store's (FTS5's Porter leaves it): its stem would be every `a`.
        if typed.len() >= 3 {
            alternatives.extend(
                memtrail_runtime::store::prefix_exact_terms(&typed, stem)
                    .iter()
                    .map(|l| format!("'{l}'")),
            );
        }
        return Some(format!("({})", alternatives.join(" | ")));
    }
    // A lexeme is letters and digits only: no quote or backslash to escape.
    let last = lexemes.len() - 1;
    Some(
        lexemes
            .iter()
            .enumerate()
            .map(|(i, p)| format!("'{p}'{}", if prefix && i == last { ":*" } else { "" }))
            .collect::<Vec<_>>()
            .join(" <-> "),
    )
}

/// A one-word prefix as typed, lower-cased, when the Porter stemmer changes it (`pars` →
/// `par`, `query` → `queri`): `None` when it is not ASCII letters alone (only those are
/// stemmed, [`lexeme`]) or its stem is itself.
fn stemmed_prefix(text: &str, stem: &str) -> Option<String> {
    let mut toks = tokens(text);
    let (Some((_, word)), None) = (toks.next(), toks.next()) else {
        return None;
    };
    if !word.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let typed = word.to_ascii_lowercase();
    (typed != stem).then_some(typed)
}

/// The `tsquery` literal (for `$1::text::tsquery`: lexemes compared as given) of a parsed
/// query: each term a [`phrase`] of its parts, terms joined by `&`, `OR` as `|`, an excluded term as `& !(…)`. A
/// word with CJK characters also matches its CJK runs as phrases of single characters of
/// weight C (the `cjk` column), as the SQLite store's query does. `None` when no term is left.
pub fn tsquery(items: &[QueryItem]) -> Option<String> {
    let alternatives = tsquery_alternatives(items);
    (!alternatives.is_empty()).then(|| alternatives.join(" | "))
}

/// The `tsquery` literal of each alternative of a parsed query (its terms between two `OR`s),
/// in order, those with no lexeme left out: [`tsquery`] joins them with `|` (`&` binds
/// tighter).
pub fn tsquery_alternatives(items: &[QueryItem]) -> Vec<String> {
    items
        .split(|i| *i == QueryItem::Or)
        .filter_map(conjunction)
        .collect()
}

/// The `tsquery` literal that ranks the matches of a parsed query ([`tsquery`]): its positive
/// terms, of every alternative, joined by `|`. `ts_rank` of a query joined by `&` weighs every
/// pair of positions of every two terms (PostgreSQL's `calc_rank_and`), 3.8 ms for the 1,024
/// candidates of `error test` on the 1 GB bench database against 0.8 ms joined by `|`, which
/// adds up each term's occurrences: a sum over the terms, as BM25 is on the SQLite store. The
/// candidates already match the whole query. `None` when no term is left.
pub fn rank_tsquery(items: &[QueryItem]) -> Option<String> {
    let terms: Vec<String> = items
        .iter()
        .filter(|i| matches!(i, QueryItem::Term { negated: false, .. }))
        .filter_map(|i| conjunction(std::slice::from_ref(i)))
        .collect();
    (!terms.is_empty()).then(|| terms.join(" | "))
}

/// The `tsquery` literal of terms joined by `&` (no `OR` among them); `None` when no positive
/// term has a lexeme.
fn conjunction(items: &[QueryItem]) -> Option<String> {
    let mut out = String::new();
    let mut after_term = false;
    let mut positives = 0;
    for item in items {
        let QueryItem::Term {
            text,
            phrase: quoted,
            prefix,
            negated,
        } = item
        else {
            continue;
        };
        let Some(mut t) = phrase(text, *prefix) else {
            continue;
        };
        if !quoted && text.chars().any(memtrail_runtime::store::is_cjk) {
            let runs: Vec<String> = cjk_runs(text)
                .map(|r| {
                    let chars: Vec<String> = r.chars().map(|c| format!("'{c}':C")).collect();
                    format!("({})", chars.join(" <-> "))
                })
                .collect();
            t = format!("{t} | ({})", runs.join(" & "));
        }
        if after_term {
            out.push_str(" & ");
        }
        if *negated {
            out.push_str(&format!("!({t})"));
        } else {
            positives += 1;
            out.push_str(&format!("({t})"));
        }
        after_term = true;
    }
    (positives > 0).then_some(out)
}

/// The lexemes a snippet highlights: those of every positive term of the query (the last of
/// a prefix term as a prefix), and each CJK character of a term (the `cjk` column's tokens).
fn query_lexemes(items: &[QueryItem]) -> Vec<QueryLexeme> {
    let mut out: Vec<QueryLexeme> = Vec::new();
    for (term, item) in items.iter().enumerate() {
        let QueryItem::Term {
            text,
            prefix,
            negated: false,
            ..
        } = item
        else {
            continue;
        };
        let toks: Vec<&str> = tokens(text).map(|(_, t)| t).collect();
        for (i, t) in toks.iter().enumerate() {
            let stem = lexeme(t);
            // A one-word prefix the stemmer changes: the words that begin with it as typed,
            // and those of its exact lexemes ([`phrase`]).
            let typed = (*prefix && toks.len() == 1)
                .then(|| stemmed_prefix(text, &stem))
                .flatten();
            let mut wanted: Vec<QueryLexeme> = Vec::new();
            match typed {
                Some(typed) => {
                    if typed.len() >= 3 {
                        for l in memtrail_runtime::store::prefix_exact_terms(&typed, &stem) {
                            wanted.push(QueryLexeme {
                                lexeme: l,
                                prefix: false,
                                term,
                                part: i,
                            });
                        }
                    }
                    wanted.push(QueryLexeme {
                        lexeme: typed,
                        prefix: true,
                        term,
                        part: i,
                    });
                }
                None => wanted.push(QueryLexeme {
                    lexeme: stem,
                    prefix: *prefix && i + 1 == toks.len(),
                    term,
                    part: i,
                }),
            }
            for q in wanted {
                if !out.contains(&q) {
                    out.push(q);
                }
            }
        }
        for c in text.chars().filter(|c| memtrail_runtime::store::is_cjk(*c)) {
            let q = QueryLexeme {
                lexeme: c.to_lowercase().collect(),
                prefix: false,
                term: usize::MAX,
                part: 0,
            };
            if !out.contains(&q) {
                out.push(q);
            }
        }
    }
    out
}

impl PgReader {
    /// The SQL (` AND …` on messages `m` and sessions `s`) of `f`'s filters (agent, project,
    /// machine, session, dates, role), their parameters appended to `args`.
    ///
    /// Errors: an unknown machine or session.
    fn filter_clause(&self, f: &SearchFilter, args: &mut Vec<Param>) -> Result<String> {
        let sessions = self.session_filter_clause(f, args)?;
        Ok(sessions + &message_filter_clause(f, args))
    }

    /// The part of [`Self::filter_clause`] on sessions `s` only (agent, project, machine,
    /// session), its parameters appended to `args`.
    ///
    /// Errors: an unknown machine or session.
    fn session_filter_clause(&self, f: &SearchFilter, args: &mut Vec<Param>) -> Result<String> {
        let mut filters = String::new();
        if let Some(a) = &f.agent {
            args.push(text(a.clone()));
            filters.push_str(&format!(" AND s.agent = ${}", args.len()));
        }
        if let Some(p) = &f.project {
            filters.push_str(&project_clause(p, args));
        }
        if let Some(m) = &f.machine {
            self.known_machine(m)?;
            filters.push_str(&machine_clause(m, args));
        }
        if let Some(sid) = &f.session {
            let id = self.resolve_session(sid, f.agent.as_deref())?;
            args.push(int8(id));
            filters.push_str(&format!(" AND s.id = ${}", args.len()));
        }
        Ok(filters)
    }
}

/// The part of `PgReader::filter_clause` on messages `m` only (dates, role), its parameters
/// appended to `args`.
fn message_filter_clause(f: &SearchFilter, args: &mut Vec<Param>) -> String {
    let mut filters = String::new();
    if let Some(t) = f.since {
        args.push(int8(t));
        filters.push_str(&format!(" AND m.ts >= ${}", args.len()));
    }
    if let Some(t) = f.until {
        args.push(int8(t));
        filters.push_str(&format!(" AND m.ts <= ${}", args.len()));
    }
    if let Some(r) = &f.role {
        // Tool calls live on assistant messages: `tool` means messages with tool calls or
        // results, whoever wrote them.
        if r == "tool" {
            filters.push_str(" AND (m.role = 'tool' OR m.kind IN ('tool_call', 'tool_result'))");
        } else {
            args.push(text(r.clone()));
            filters.push_str(&format!(" AND m.role = ${}", args.len()));
        }
    }
    filters
}

impl ReadStore for PgReader {
    fn stopper(&self) -> Option<memtrail_runtime::store::Stop> {
        self.stop.clone()
    }

    fn resolve_session(&self, id: &str, agent: Option<&str>) -> Result<i64> {
        if let Some(r) = self.opt(
            "SELECT id FROM sessions WHERE external_id = $1 AND ($2::text IS NULL OR agent = $2)
             ORDER BY updated_at DESC NULLS LAST LIMIT 1",
            &[&id, &agent],
        )? {
            return Ok(r.get(0));
        }
        let rows: Vec<(i64, String)> = self
            .rows(
                &format!(
                    "SELECT id, external_id FROM sessions WHERE external_id LIKE $1 ESCAPE '\\'
                 AND ($2::text IS NULL OR agent = $2) ORDER BY updated_at DESC NULLS LAST LIMIT {}",
                    memtrail_runtime::query::PREFIX_CANDIDATES
                ),
                &[&format!("{}%", like_escape(id)), &agent],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        // The message of an ambiguous prefix lists the sessions' ids: redacted too.
        pick_prefix_match(id, rows).map_err(|e| match e {
            Error::Invalid(m) => Error::Invalid(clean(m)),
            e => e,
        })
    }

    fn session_summary(&self, rowid: i64) -> Result<SessionSummary> {
        self.opt(
            &format!("SELECT {SESSION_COLS} FROM sessions s WHERE s.id = $1"),
            &[&rowid],
        )?
        .map(|r| clean(session_row(&r)))
        .ok_or_else(|| Error::NotFound(format!("no session with row id {rowid}")))
    }

    fn list_sessions(&self, f: &ListFilter) -> Result<Vec<SessionSummary>> {
        let mut sql = format!("SELECT {SESSION_COLS} FROM sessions s WHERE true");
        let mut args: Vec<Param> = Vec::new();
        if let Some(a) = &f.agent {
            args.push(text(a.clone()));
            sql.push_str(&format!(" AND s.agent = ${}", args.len()));
        }
        if let Some(p) = &f.project {
            sql.push_str(&project_clause(p, &mut args));
        }
        if let Some(m) = &f.machine {
            self.known_machine(m)?;
            sql.push_str(&machine_clause(m, &mut args));
        }
        if let Some(t) = f.since {
            args.push(int8(t));
            sql.push_str(&format!(" AND s.updated_at >= ${}", args.len()));
        }
        if let Some(t) = f.until {
            args.push(int8(t));
            sql.push_str(&format!(" AND s.updated_at <= ${}", args.len()));
        }
        args.push(int8(f.limit.clamp(1, 100_000) as i64));
        args.push(int8(f.offset.min(i64::MAX as usize) as i64));
        sql.push_str(&format!(
            " ORDER BY s.updated_at DESC NULLS LAST, s.id DESC LIMIT ${} OFFSET ${}",
            args.len() - 1,
            args.len()
        ));
        Ok(self
            .rows_boxed(&sql, &args)?
            .iter()
            .map(|r| clean(session_row(r)))
            .collect())
    }

    fn get_session(
        &self,
        id: &str,
        agent: Option<&str>,
        offset: i64,
        limit: i64,
        max_output: Option<usize>,
    ) -> Result<SessionView> {
        let rowid = self.resolve_session(id, agent)?;
        let session = self.session_summary(rowid)?;
        let messages = self
            .rows(
                "SELECT m.ext_id, m.seq, m.role, m.kind, m.ts, m.model, m.parts
                 FROM messages m JOIN sessions s ON s.uid = m.session_uid
                 WHERE s.id = $1 AND m.seq >= $2 ORDER BY m.seq LIMIT $3",
                &[&rowid, &offset.max(0), &limit.max(0)],
            )?
            .iter()
            .map(|r| {
                let (text, thinking, tool_calls) = view_parts(r.get(6), max_output);
                MessageView {
                    id: r.get(0),
                    index: r.get(1),
                    role: r.get(2),
                    kind: r.get(3),
                    text,
                    thinking,
                    timestamp: r
                        .get::<_, Option<i64>>(4)
                        .map(memtrail_adapters::format_rfc3339_ms),
                    model: r.get(5),
                    tool_calls,
                }
            })
            .collect();
        let children = self
            .rows(
                "SELECT external_id FROM sessions WHERE agent = $1 AND parent_external_id = $2
                 ORDER BY started_at NULLS FIRST, id",
                &[&session.agent, &session.session_id],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        Ok(clean(SessionView {
            total: session.messages,
            session,
            offset: offset.max(0),
            messages,
            children,
        }))
    }

    fn has_messages_from(&self, agent: &str, external_id: &str, seq: i64) -> Result<bool> {
        Ok(self
            .one(
                "SELECT EXISTS (SELECT 1 FROM messages m JOIN sessions s ON s.uid = m.session_uid
                 WHERE s.agent = $1 AND s.external_id = $2 AND m.seq >= $3)",
                &[&agent, &external_id, &seq],
            )?
            .get(0))
    }

    fn search_ranking(&self, query: &str, f: &SearchFilter) -> Result<Ranking> {
        memtrail_runtime::query::refuse_over_term_cap(query)?;
        let items = parse_query(query);
        let Some(q) = items.as_deref().and_then(tsquery) else {
            return Err(Error::Invalid(memtrail_runtime::query::nothing_to_search(
                query,
            )));
        };
        let limit = f.limit.clamp(1, 500);
        // The SQLite store's bounded rule (see `memtrail_runtime::query::search`): without
        // `OR`, only the newest SEARCH_CANDIDATES matches (that pass the filter, if any) are
        // ranked, read newest first by the `id` index and stopping there, so that a frequent
        // term costs no more than a rare one.
        //
        // The newest candidates are chosen by id and row address only, and their `tsv` read
        // again by those addresses (one TID scan, whatever the table's size) for `ts_rank`: when PostgreSQL finds the matches through the GIN index it sorts them
        // all by id, and a sort that carried each match's `tsv` (4.7 KB on average for
        // `overflow invoice`'s 5,401 matches) spilled to disk (12 MB): 24–30 ms against 17–20
        // ms (docs/benchmarks.md, "PostgreSQL search: candidates without their vectors,
        // filtered walks bounded"). A row's address is stable within the statement's snapshot.
        //
        // An `OR` query takes the newest SEARCH_CANDIDATES matches of each of its alternatives
        // (the SQLite store's rule: `rare OR common` still ranks the rare term's matches), each
        // candidate ranked by `ts_rank` for the whole query.
        let alternatives = tsquery_alternatives(items.as_deref().unwrap_or_default());
        let mut args: Vec<Param> = vec![text(q.clone())];
        let on_sessions = self.session_filter_clause(f, &mut args)?;
        let mut filters = on_sessions.clone() + &message_filter_clause(f, &mut args);
        // A filter on sessions bounds the walk by the largest message id of the sessions it
        // admits (`session_bounds`, migration 8): the newest matches of a scope whose messages
        // are all old are found without walking every newer match first. The subquery's `s`
        // is its own; its parameters are the filter's, already bound. A database of an older
        // schema is searched without the bound (the same hits, found later).
        if self.bounds && !on_sessions.is_empty() {
            // Written as the first bound newest first (migration 9's index) rather than a
            // `max()`, so that the planner can stop at the first session of the scope.
            filters.push_str(&format!(
                " AND m.id <= coalesce((SELECT b.last_message_id FROM session_bounds b \
                 JOIN sessions s ON s.uid = b.session_uid WHERE true{on_sessions} \
                 ORDER BY b.last_message_id DESC LIMIT 1), 0)"
            ));
        }
        // Sessions are joined only when a filter reads them.
        let join = if filters.contains("s.") {
            " JOIN sessions s ON s.uid = m.session_uid"
        } else {
            ""
        };
        // Each alternative's candidates as an array of row addresses (`t0`, `t1`, …), kept
        // in one row: its length tells whether the walk stopped at the bound (`newest_only`).
        // (A `count(*) OVER ()` beside the ranking, or the candidates as rows of a CTE, cost
        // 0.4–0.7 ms more: docs/benchmarks.md, "A search says when it ranked only the newest".)
        let newest = |param: usize, alternative: usize| {
            format!(
                "ARRAY(SELECT m.ctid FROM messages m{join}
                  WHERE m.tsv @@ ${param}::text::tsquery{filters}
                  ORDER BY m.id DESC LIMIT {SEARCH_CANDIDATES}) AS t{alternative}"
            )
        };
        let arrays = if alternatives.len() > 1 {
            let mut parts = Vec::with_capacity(alternatives.len());
            for (k, alternative) in alternatives.iter().enumerate() {
                args.push(text(alternative.clone()));
                parts.push(newest(args.len(), k));
            }
            parts
        } else {
            vec![newest(1, 0)]
        };
        // A row address in two alternatives' arrays is read once (a TID scan drops repeats).
        let names: Vec<String> = (0..arrays.len()).map(|k| format!("t{k}")).collect();
        let candidates = names.join(" || ");
        let most = names
            .iter()
            .map(|t| format!("cardinality({t})"))
            .collect::<Vec<_>>()
            .join(", ");
        let rank = rank_tsquery(items.as_deref().unwrap_or_default()).unwrap_or_else(|| q.clone());
        args.push(text(rank));
        // The candidates' rows are read again in one TID scan of their addresses (`ctid =
        // ANY(…)`) rather than a subquery per candidate: ~2 ms less for 1,024 candidates on the
        // 1 GB bench database (docs/benchmarks.md, "PostgreSQL search: the candidates read in
        // one scan").
        // With each row, the most candidates an alternative's walk found.
        let mut sql = format!(
            "WITH c AS MATERIALIZED (SELECT {arrays})
             SELECT v.id, ts_rank({RANK_WEIGHTS}, v.tsv, ${}::text::tsquery, 1)::float8 AS score,
                    (SELECT greatest({most}) FROM c)::int8 AS most
             FROM messages v WHERE v.ctid = ANY((SELECT {candidates} FROM c)::tid[])",
            args.len(),
            arrays = arrays.join(", ")
        );
        // Rank a few more than asked, then apply the recency prior; equal scores go to the
        // newest message.
        args.push(int8((limit * 3).min(1500) as i64));
        sql.push_str(&format!(
            " ORDER BY score DESC, v.id DESC LIMIT ${}",
            args.len()
        ));
        // With each ranked row, what tells a copy of a message (best_distinct).
        let sql = format!(
            "SELECT r.id, r.score, m.ts, m.ext_id, s.agent, length(m.body)::int8, left(m.body, 256),
                    r.most
             FROM ({sql}) r JOIN messages m ON m.id = r.id JOIN sessions s ON s.uid = m.session_uid
             ORDER BY r.score DESC, r.id DESC"
        );
        let now = now_ms();
        let rows = self.rows_boxed(&sql, &args)?;
        let newest_only = rows
            .first()
            .is_some_and(|r| r.get::<_, i64>(7) as usize >= SEARCH_CANDIDATES);
        let keyed: Vec<(i64, f64, Option<CopyKey>)> = rows
            .iter()
            .map(|r| {
                (
                    r.get(0),
                    with_recency(r.get(1), r.get(2), now),
                    copy_key_of(r),
                )
            })
            .collect();
        let copies = copy_ids(&keyed);
        let ranked = best_distinct(keyed, limit);
        if ranked.is_empty() {
            // No hit: no rows to read (a statement planned for nothing cost a new connection
            // ~3 ms).
            return Ok(Ranking::default());
        }
        let ids: Vec<i64> = ranked.iter().map(|r| r.0).collect();
        // The snippet of the first column that matches the whole query (prose, tool calls,
        // CJK characters), else of the prose: made here from the column's text (redacted), its
        // first SNIPPET_FIRST_CHARS characters, or up to the indexed INDEXED_CHARS for the few
        // hits whose match lies further in.
        let rows = self.rows_typed(
            &format!(
                "SELECT m.id, s.external_id, s.agent, s.title, s.project_dir, m.ext_id, m.seq,
                    m.role, m.kind, m.ts,
                    coalesce((SELECT label FROM machines WHERE id = s.machine_id), s.machine_id),
                    CASE w.k WHEN 2 THEN left(m.tools, $3) WHEN 3 THEN left(m.cjk, $3)
                             ELSE left(m.body, $3) END,
                    w.k,
                    CASE w.k WHEN 2 THEN length(m.tools) WHEN 3 THEN length(m.cjk)
                             ELSE length(m.body) END
             FROM messages m JOIN sessions s ON s.uid = m.session_uid,
                  (SELECT $1::text::tsquery) AS qv(q), {MATCHED_COLUMN}
             WHERE m.id = ANY($2)"
            ),
            &[
                (&q, Type::TEXT),
                (&ids, Type::INT8_ARRAY),
                (&(SNIPPET_FIRST_CHARS as i32), Type::INT4),
            ],
        )?;
        let terms = query_lexemes(items.as_deref().unwrap_or_default());
        let mut by_id: std::collections::HashMap<i64, Row> =
            rows.into_iter().map(|r| (r.get(0), r)).collect();
        let mut snippets: std::collections::HashMap<i64, String> = std::collections::HashMap::new();
        let mut further: Vec<i64> = Vec::new();
        // Characters the second read may bring, best hits first, within SNIPPET_READ_BUDGET.
        let mut budget = SNIPPET_READ_BUDGET;
        for (id, _) in &ranked {
            let Some(r) = by_id.get(id) else { continue };
            let text: Option<String> = r.get(11);
            let whole = r.get::<_, Option<i32>>(13).unwrap_or(0) as usize;
            // The text's own U+0001/U+0002 would pass for the snippet's marks.
            let red = unmarked(&redact(text.as_deref().unwrap_or_default()));
            let more = whole.min(INDEXED_CHARS);
            match snippet(&red, &terms, SNIPPET_TOKENS, HL_START, HL_END) {
                Some(s) => {
                    snippets.insert(*id, s);
                }
                None if whole > SNIPPET_FIRST_CHARS && more <= budget => {
                    budget -= more;
                    further.push(*id);
                }
                None => {
                    snippets.insert(*id, leading_snippet(&red, SNIPPET_TOKENS));
                }
            }
        }
        if !further.is_empty() {
            for r in self.rows_typed(
                &format!("SELECT m.id, CASE w.k WHEN 2 THEN left(m.tools, $3) WHEN 3 THEN left(m.cjk, $4)
                                       ELSE left(m.body, $3) END
                 FROM messages m, (SELECT $1::text::tsquery) AS qv(q), {MATCHED_COLUMN}
                 WHERE m.id = ANY($2)"),
                &[
                    (&q, Type::TEXT),
                    (&further, Type::INT8_ARRAY),
                    (&(INDEXED_CHARS as i32), Type::INT4),
                    (&(INDEXED_CJK_CHARS as i32), Type::INT4),
                ],
            )? {
                let red = unmarked(&redact(r.get::<_, Option<&str>>(1).unwrap_or_default()));
                let s = snippet(&red, &terms, SNIPPET_TOKENS, HL_START, HL_END)
                    .unwrap_or_else(|| leading_snippet(&red, SNIPPET_TOKENS));
                snippets.insert(r.get(0), s);
            }
        }
        // A hit in the `cjk` column: its snippet has only the CJK characters; made again from
        // the message's text (its prose, else its tool text), as the SQLite store does.
        let cjk_only: Vec<i64> = snippets
            .iter()
            .filter(|(_, s)| memtrail_runtime::query::is_cjk_column_snippet(s))
            .map(|(id, _)| *id)
            .collect();
        let mut rebuilt = std::collections::HashSet::new();
        if !cjk_only.is_empty() {
            for r in self.rows_typed(
                "SELECT id, left(body, $2), left(tools, $2) FROM messages WHERE id = ANY($1)",
                &[
                    (&cjk_only, Type::INT8_ARRAY),
                    (&(INDEXED_CHARS as i32), Type::INT4),
                ],
            )? {
                let id: i64 = r.get(0);
                let Some(marked) = snippets.get(&id) else {
                    continue;
                };
                let again = [r.get::<_, Option<&str>>(1), r.get::<_, Option<&str>>(2)]
                    .into_iter()
                    .flatten()
                    .find_map(|t| {
                        memtrail_runtime::query::cjk_snippet_in(&unmarked(&redact(t)), marked)
                    });
                if let Some(s) = again {
                    snippets.insert(id, s);
                    rebuilt.insert(id);
                }
            }
        }
        let mut hits = Vec::with_capacity(ranked.len());
        for (rowid, score) in ranked {
            // A row deleted since the rank step is simply left out.
            let Some(r) = by_id.remove(&rowid) else {
                continue;
            };
            let snippet = snippets.remove(&rowid).unwrap_or_default();
            debug_assert!(!snippet.contains([HL_START, HL_END]) || snippet.contains(HL_START));
            // A snippet of the `cjk` column not made again: its characters, their spacing
            // taken out; any other keeps the text's own (Korean words, spaced Japanese).
            let snippet = if !rebuilt.contains(&rowid)
                && memtrail_runtime::query::is_cjk_column_snippet(&snippet)
            {
                compact_cjk(&snippet)
            } else {
                snippet
            };
            hits.push(Hit {
                copy: copies.get(&rowid).copied(),
                ..hit_of(&r, snippet, score)
            });
        }
        Ok(Ranking {
            hits: clean(hits),
            newest_only,
        })
    }

    fn has_vectors_of(&self, model: &str) -> Result<bool> {
        if !self.vectors {
            return Err(Error::Invalid(NO_PGVECTOR.into()));
        }
        Ok(self
            .one(
                "SELECT EXISTS (SELECT 1 FROM message_vectors WHERE model = $1)",
                &[&model],
            )?
            .get(0))
    }

    fn nearest(
        &self,
        model: &str,
        query: &[f32],
        excluded: &[QueryItem],
        f: &SearchFilter,
    ) -> Result<Vec<Hit>> {
        if !self.vectors {
            return Err(Error::Invalid(NO_PGVECTOR.into()));
        }
        let limit = f.limit.clamp(1, 500);
        let literal = format!(
            "[{}]",
            query
                .iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        let dim = query.len();
        if dim == 0 {
            return Ok(Vec::new());
        }
        let mut args: Vec<Param> = vec![text(literal)];
        let mut filters = self.filter_clause(f, &mut args)?;
        // An excluded word: the messages the full-text search would match with it are left
        // out (the same tsquery, on the same column).
        if let Some(q) = tsquery(excluded) {
            args.push(text(q));
            filters.push_str(&format!(
                " AND NOT (m.tsv @@ ${}::text::tsquery)",
                args.len()
            ));
        }
        // A message has up to 4 chunks: read enough of the nearest chunks for `limit`
        // messages, best chunk first (the first row of a message is its best).
        args.push(int8((limit * NEAREST_CHUNKS_PER_HIT) as i64));
        let depth = args.len();
        let join = if filters.is_empty() {
            String::new()
        } else if filters.contains("s.") {
            " JOIN messages m ON m.session_uid = v.session_uid AND m.ext_id = v.ext_id \
              JOIN sessions s ON s.uid = m.session_uid"
                .to_string()
        } else {
            " JOIN messages m ON m.session_uid = v.session_uid AND m.ext_id = v.ext_id".to_string()
        };
        // The model and the dimension are written into the statement (the model quoted as a
        // literal) so that it matches the predicate of the model's IVFFlat index when `sync`
        // built one ([`crate::Pg::ensure_vector_index`]): PostgreSQL then scores the vectors of
        // the probed lists only (one in PROBE_ONE_LIST_IN, set here from the index's `lists`)
        // instead of every vector. The filters apply before the limit either way: a filtered
        // search still finds its nearest matching messages (the iterative scan, set at
        // connect, reads more lists until it has `depth` rows). A pgvector without iterative
        // scans would return only what the probed lists hold of a filtered search: there the
        // distance is written so that no index matches it (`+ 0`), and every vector is scored.
        let order = if filters.is_empty() || self.iterative {
            format!("v.embedding::halfvec({dim}) <#> q.v")
        } else {
            format!("(v.embedding::halfvec({dim}) <#> q.v) + 0")
        };
        self.one(
            &format!(
                "SELECT set_config('ivfflat.probes', greatest(10, (substring(
                     array_to_string(reloptions, ',') FROM 'lists=([0-9]+)')::int8
                     + {PROBE_ONE_LIST_IN} - 1) / {PROBE_ONE_LIST_IN})::text, false)
                 FROM pg_class WHERE oid = to_regclass($1)
                 UNION ALL SELECT '' LIMIT 1"
            ),
            &[&crate::sync::vector_index_name(model)],
        )?;
        // With each row, what tells a copy of a message (a forked session's: the same vector),
        // so that each is shown once, the newest copy, as the full-text search shows it
        // (`best_distinct`).
        let sql = format!(
            "SELECT m.id, r.score, m.ts, m.ext_id, s.agent, length(m.body)::int8, left(m.body, 256)
             FROM (
                 SELECT v.session_uid, v.ext_id, (-(v.embedding::halfvec({dim}) <#> q.v))::float8 AS score
                 FROM (SELECT $1::text::halfvec({dim}) AS v) q, message_vectors v{join}
                 WHERE v.model = {model} AND vector_dims(v.embedding) = {dim}{filters}
                 ORDER BY {order} LIMIT ${depth}) r
             JOIN messages m ON m.session_uid = r.session_uid AND m.ext_id = r.ext_id
             JOIN sessions s ON s.uid = m.session_uid
             ORDER BY r.score DESC, m.id DESC",
            model = crate::sync::sql_literal(model),
        );
        // A forked session's copies of a message take rows of the depth too: when they leave
        // fewer than `limit` messages and every row asked for came, read deeper (up to 8×).
        let mut rows_asked = limit * NEAREST_CHUNKS_PER_HIT;
        let (copies, ranked) = loop {
            args[depth - 1] = int8(rows_asked as i64);
            let rows = self.rows_boxed(&sql, &args)?;
            let mut seen = std::collections::HashSet::new();
            let keyed: Vec<(i64, f64, Option<CopyKey>)> = rows
                .iter()
                .filter(|r| seen.insert(r.get::<_, i64>(0)))
                .map(|r| (r.get(0), r.get(1), copy_key_of(r)))
                .collect();
            let copies = copy_ids(&keyed);
            let ranked = best_distinct(keyed, limit);
            if ranked.len() >= limit
                || rows.len() < rows_asked
                || rows_asked >= limit * NEAREST_CHUNKS_PER_HIT * 8
            {
                break (copies, ranked);
            }
            rows_asked *= 2;
        };
        let ids: Vec<i64> = ranked.iter().map(|r| r.0).collect();
        // The snippet: the message's first SEMANTIC_SNIPPET_CHARS characters (its tool text
        // when it has no prose), as the SQLite store shows a hit by meaning; redacted before it
        // is cut, so a secret is never shown in part.
        let rows = self.rows_typed(
            "SELECT m.id, s.external_id, s.agent, s.title, s.project_dir, m.ext_id, m.seq,
                    m.role, m.kind, m.ts,
                    coalesce((SELECT label FROM machines WHERE id = s.machine_id), s.machine_id),
                    CASE WHEN length(m.body) > 0 THEN left(m.body, $2) ELSE left(m.tools, $2) END
             FROM messages m JOIN sessions s ON s.uid = m.session_uid WHERE m.id = ANY($1)",
            &[
                (&ids, Type::INT8_ARRAY),
                (
                    &((SEMANTIC_SNIPPET_CHARS + SNIPPET_FIRST_CHARS) as i32),
                    Type::INT4,
                ),
            ],
        )?;
        let mut by_id: std::collections::HashMap<i64, Row> =
            rows.into_iter().map(|r| (r.get(0), r)).collect();
        let mut hits = Vec::with_capacity(ranked.len());
        for (rowid, score) in ranked {
            let Some(r) = by_id.remove(&rowid) else {
                continue;
            };
            let whole = unmarked(&redact(r.get::<_, Option<&str>>(11).unwrap_or_default()));
            let flat = whole.split_whitespace().collect::<Vec<_>>().join(" ");
            hits.push(Hit {
                copy: copies.get(&rowid).copied(),
                ..hit_of(
                    &r,
                    flat.chars().take(SEMANTIC_SNIPPET_CHARS).collect(),
                    score,
                )
            });
        }
        Ok(clean(hits))
    }

    fn session_events(&self, rowid: i64) -> Result<Vec<StoredEvent>> {
        let rows = self.rows(
            "SELECT e.seq, e.message_ext_id, e.category, e.action, e.priority, e.subject,
                    e.detail, e.call_id, e.tool, e.ts
             FROM events e JOIN sessions s ON s.uid = e.session_uid
             WHERE s.id = $1 ORDER BY e.seq, e.message_ext_id, e.ordinal",
            &[&rowid],
        )?;
        let mut out = Vec::with_capacity(rows.len());
        for (i, r) in rows.iter().enumerate() {
            // A category this binary does not know (written by a newer one) is skipped.
            let Some(category) = Category::parse(r.get(2)) else {
                continue;
            };
            out.push(StoredEvent {
                // The order of the events in the session (PostgreSQL keeps no event row id).
                id: i as i64 + 1,
                seq: r.get(0),
                message_id: r.get(1),
                event: Event {
                    category,
                    action: r.get(3),
                    priority: r.get::<_, i64>(4).clamp(1, 4) as u8,
                    subject: r.get(5),
                    detail: r.get(6),
                    call_id: r.get(7),
                    tool: r.get(8),
                    ts: r.get(9),
                },
            });
        }
        Ok(clean(out))
    }

    fn latest_session_for_dir(
        &self,
        dir: &str,
        agent: Option<&str>,
        exclude: Option<i64>,
    ) -> Result<Option<i64>> {
        let rows = self.rows(
            "SELECT id, project_dir FROM sessions
             WHERE parent_external_id IS NULL AND project_dir IS NOT NULL
               AND ($1::text IS NULL OR agent = $1) AND ($2::int8 IS NULL OR id <> $2)
               AND (project_dir = $3 OR substr($3, 1, length(project_dir)) = project_dir)
             ORDER BY updated_at DESC NULLS LAST, id DESC",
            &[&agent, &exclude, &dir],
        )?;
        Ok(rows
            .iter()
            .find(|r| dir_within(dir, r.get(1)))
            .map(|r| r.get(0)))
    }

    fn earlier_sessions_of_dir(
        &self,
        dir: &str,
        exclude: Option<i64>,
    ) -> Result<(usize, Option<i64>)> {
        let rows = self.rows(
            "SELECT project_dir, updated_at FROM sessions
             WHERE parent_external_id IS NULL AND project_dir IS NOT NULL
               AND ($1::int8 IS NULL OR id <> $1)
               AND (project_dir = $2 OR substr($2, 1, length(project_dir)) = project_dir)",
            &[&exclude, &dir],
        )?;
        let (mut n, mut latest) = (0, None::<i64>);
        for r in rows.iter().filter(|r| dir_within(dir, r.get(0))) {
            n += 1;
            latest = latest.max(r.get(1));
        }
        Ok((n, latest))
    }

    fn message_text(
        &self,
        agent: &str,
        session_id: &str,
        index: i64,
    ) -> Result<Option<CandidateMessage>> {
        Ok(self
            .opt(
                "SELECT m.role, m.ts, m.body, m.tools
                 FROM messages m JOIN sessions s ON s.uid = m.session_uid
                 WHERE s.agent = $1 AND s.external_id = $2 AND m.seq = $3
                 ORDER BY s.updated_at DESC NULLS LAST LIMIT 1",
                &[&agent, &session_id, &index],
            )?
            .map(|r| {
                let body: String = r.get(2);
                CandidateMessage {
                    session_id: session_id.to_string(),
                    index,
                    role: r.get(0),
                    timestamp: r
                        .get::<_, Option<i64>>(1)
                        .map(memtrail_adapters::format_rfc3339_ms),
                    text: if body.trim().is_empty() {
                        r.get(3)
                    } else {
                        body
                    },
                }
            })
            .map(clean))
    }

    fn recent_messages(
        &self,
        rowid: i64,
        session_id: &str,
        n: usize,
    ) -> Result<Vec<CandidateMessage>> {
        Ok(self
            .rows(
                "SELECT m.seq, m.role, m.ts, m.body
                 FROM messages m JOIN sessions s ON s.uid = m.session_uid
                 WHERE s.id = $1 AND m.role IN ('user', 'assistant')
                   AND m.kind IN ('text', 'note', 'summary') AND length(trim(m.body)) > 0
                 ORDER BY m.seq DESC LIMIT $2",
                &[&rowid, &(n as i64)],
            )?
            .iter()
            .map(|r| CandidateMessage {
                session_id: session_id.to_string(),
                index: r.get(0),
                role: r.get(1),
                timestamp: r
                    .get::<_, Option<i64>>(2)
                    .map(memtrail_adapters::format_rfc3339_ms),
                text: r.get(3),
            })
            .map(clean)
            .collect())
    }

    fn first_and_last_prompt(&self, rowid: i64) -> Result<(Option<String>, Option<String>)> {
        let q = |order: &str| -> Result<Option<String>> {
            Ok(self
                .opt(
                    &format!(
                        "SELECT m.body FROM messages m JOIN sessions s ON s.uid = m.session_uid
                         WHERE s.id = $1 AND m.role = 'user' AND m.kind = 'text'
                           AND length(trim(m.body)) > 0 ORDER BY m.seq {order} LIMIT 1"
                    ),
                    &[&rowid],
                )?
                .map(|r| r.get(0)))
        };
        Ok(clean((q("ASC")?, q("DESC")?)))
    }

    fn last_answer(&self, rowid: i64) -> Result<Option<String>> {
        Ok(self
            .opt(
                "SELECT m.body FROM messages m JOIN sessions s ON s.uid = m.session_uid
                 WHERE s.id = $1 AND m.role = 'assistant' AND m.kind IN ('text', 'tool_call')
                   AND length(trim(m.body)) > 0 ORDER BY m.seq DESC LIMIT 1",
                &[&rowid],
            )?
            .map(|r| clean(r.get(0))))
    }

    /// One statement: an index lookup per agent name.
    fn agents_with_sessions(&self) -> Result<Vec<memtrail_adapters::Agent>> {
        let names: Vec<&str> = memtrail_adapters::Agent::ALL
            .iter()
            .map(|a| a.as_str())
            .collect();
        let found: Vec<String> = self
            .rows(
                "SELECT a FROM unnest($1::text[]) AS a
                 WHERE EXISTS (SELECT 1 FROM sessions WHERE agent = a)",
                &[&names],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        Ok(memtrail_adapters::Agent::ALL
            .into_iter()
            .filter(|a| found.iter().any(|f| f == a.as_str()))
            .collect())
    }

    /// From the activity summaries the push keeps (migration 6, `pg/src/migrations/
    /// 0006_activity.sql`): messages per (day, agent, model), active slots per (project, day),
    /// tools, files, and the sessions started in the range; five statements pipelined on the
    /// connection (one round trip's wait). A database not yet migrated to 6 (no sync with this memtrail yet) is aggregated
    /// from its messages ([`PgReader::analytics_by_messages`]), as before.
    fn analytics(&self, range: DayRange) -> Result<Analytics> {
        if !self.summaries.get() {
            let found: bool = self
                .rows_typed("SELECT to_regclass('project_days') IS NOT NULL", &[])?
                .first()
                .is_some_and(|r| r.get(0));
            if !found {
                return self.analytics_by_messages(range);
            }
            self.summaries.set(true);
        }
        let (start, end) = (range.start_ms(), range.end_ms());
        let (first, last) = (range.first_day, range.last_day);
        let top = TOP as i64;
        self.not_stopped()?;
        let c = self.pg.client();
        let i8 = Type::INT8;
        let times: [(&(dyn ToSql + Sync), Type); 2] = [(&start, i8.clone()), (&end, i8.clone())];
        let days: [(&(dyn ToSql + Sync), Type); 2] = [(&first, i8.clone()), (&last, i8.clone())];
        let slots: [(&(dyn ToSql + Sync), Type); 3] = [
            (&first, i8.clone()),
            (&last, i8.clone()),
            (&top, i8.clone()),
        ];
        let limit: [(&(dyn ToSql + Sync), Type); 1] = [(&top, i8)];
        let (sessions, agents, projects, tools, files) = self
            .pg
            .block_on(async {
                tokio::try_join!(
                    c.query_typed(
                        "SELECT started_at / 86400000, agent, count(*) FROM sessions
                         WHERE started_at >= $1 AND started_at < $2
                           AND parent_external_id IS NULL
                         GROUP BY 1, 2",
                        &times,
                    ),
                    c.query_typed(
                        "SELECT day, agent, model, messages FROM activity_agents
                         WHERE day BETWEEN $1 AND $2",
                        &days,
                    ),
                    c.query_typed(
                        "SELECT project, sum(slots)::int8 FROM project_days
                         WHERE day BETWEEN $1 AND $2
                         GROUP BY 1 ORDER BY 2 DESC, project COLLATE \"C\" LIMIT $3",
                        &slots,
                    ),
                    c.query_typed(
                        "SELECT name, calls, errors FROM tool_use
                         ORDER BY calls DESC, name COLLATE \"C\" LIMIT $1",
                        &limit,
                    ),
                    c.query_typed(
                        "SELECT path, edits FROM file_edits
                         ORDER BY edits DESC, path COLLATE \"C\" LIMIT $1",
                        &limit,
                    ),
                )
            })
            .map_err(remote)?;
        let triples = |rows: Vec<Row>| -> Vec<(i64, String, i64)> {
            rows.iter()
                .map(|r| (r.get(0), clean(r.get::<_, String>(1)), r.get(2)))
                .collect()
        };
        // Messages per (day, agent) and per (day, model), from the (day, agent, model) rows.
        let mut messages: std::collections::BTreeMap<(i64, String), i64> = Default::default();
        let mut models: std::collections::BTreeMap<(i64, String), i64> = Default::default();
        for r in &agents {
            let (day, n): (i64, i64) = (r.get(0), r.get(3));
            *messages
                .entry((day, clean(r.get::<_, String>(1))))
                .or_default() += n;
            *models
                .entry((day, clean(r.get::<_, String>(2))))
                .or_default() += n;
        }
        let flat = |m: std::collections::BTreeMap<(i64, String), i64>| -> Vec<(i64, String, i64)> {
            m.into_iter().map(|((d, s), n)| (d, s, n)).collect()
        };
        let projects = projects
            .iter()
            .map(|r| ProjectTime {
                project: clean(r.get(0)),
                active_ms: r.get::<_, i64>(1) * SLOT_MS,
            })
            .collect();
        let tools = tools
            .iter()
            .map(|r| ToolUse {
                name: clean(r.get(0)),
                calls: r.get(1),
                errors: r.get(2),
            })
            .collect();
        let files = files
            .iter()
            .map(|r| FileEdits {
                path: clean(r.get(0)),
                edits: r.get(1),
            })
            .collect();
        Ok(Analytics::from_rows(
            triples(sessions),
            flat(messages),
            flat(models),
            projects,
            tools,
            files,
        ))
    }
}

impl PgReader {
    /// [`ReadStore::analytics`] of a database without migration 6's summaries, aggregated from
    /// its tables: the messages of the range through `messages_by_ts` (the 1 GB bench store's
    /// busiest 79 days: 3.9 s), tools and files over all rows.
    fn analytics_by_messages(&self, range: DayRange) -> Result<Analytics> {
        let (start, end) = (range.start_ms(), range.end_ms());
        let triples = |rows: Vec<Row>| -> Vec<(i64, String, i64)> {
            rows.iter()
                .map(|r| (r.get(0), clean(r.get::<_, String>(1)), r.get(2)))
                .collect()
        };
        let sessions = triples(self.rows(
            "SELECT started_at / 86400000, agent, COUNT(*) FROM sessions
             WHERE started_at >= $1 AND started_at < $2 AND parent_external_id IS NULL
             GROUP BY 1, 2",
            &[&start, &end],
        )?);
        let messages = triples(self.rows(
            "SELECT m.ts / 86400000, s.agent, COUNT(*) FROM messages m
             JOIN sessions s ON s.uid = m.session_uid
             WHERE m.ts >= $1 AND m.ts < $2 GROUP BY 1, 2",
            &[&start, &end],
        )?);
        let models = triples(self.rows(
            "SELECT ts / 86400000, coalesce(model, ''), COUNT(*) FROM messages
             WHERE ts >= $1 AND ts < $2 GROUP BY 1, 2 ORDER BY 1, 2",
            &[&start, &end],
        )?);
        let top = TOP as i64;
        let projects = self
            .rows(
                "SELECT project, COUNT(*) FROM (
                     SELECT DISTINCT coalesce(s.project_dir, '') AS project, m.ts / $3 AS slot
                     FROM messages m JOIN sessions s ON s.uid = m.session_uid
                     WHERE m.ts >= $1 AND m.ts < $2) x
                 GROUP BY project ORDER BY 2 DESC, project COLLATE \"C\" LIMIT $4",
                &[&start, &end, &SLOT_MS, &top],
            )?
            .iter()
            .map(|r| ProjectTime {
                project: clean(r.get(0)),
                active_ms: r.get::<_, i64>(1) * SLOT_MS,
            })
            .collect();
        let tools = self
            .rows(
                "SELECT name, COUNT(*), COUNT(*) FILTER (WHERE is_error) FROM tool_calls
                 GROUP BY name ORDER BY 2 DESC, name COLLATE \"C\" LIMIT $1",
                &[&top],
            )?
            .iter()
            .map(|r| ToolUse {
                name: clean(r.get(0)),
                calls: r.get(1),
                errors: r.get(2),
            })
            .collect();
        let files = self
            .rows(
                "SELECT subject, COUNT(*) FROM events
                 WHERE category = 'file' AND action IN ('edited', 'written')
                 GROUP BY subject ORDER BY 2 DESC, subject COLLATE \"C\" LIMIT $1",
                &[&top],
            )?
            .iter()
            .map(|r| FileEdits {
                path: clean(r.get(0)),
                edits: r.get(1),
            })
            .collect();
        Ok(Analytics::from_rows(
            sessions, messages, models, projects, tools, files,
        ))
    }
}

/// What a [`PgReader`] returns, redacted (memtrail's rules, [`memtrail_runtime::redact`], the
/// ones capture applies) before it leaves the reader: rows in PostgreSQL are written by every
/// teammate's memtrail, redacted by it, but anyone who can write to the database can also write
/// rows directly, so nothing read from it is shown, printed or given to an agent unredacted.
trait Redacted {
    /// Redact every text of `self` in place.
    fn redact(&mut self);
}

/// `x` redacted ([`Redacted`]).
fn clean<T: Redacted>(mut x: T) -> T {
    x.redact();
    x
}

impl Redacted for String {
    fn redact(&mut self) {
        redact_string(self);
    }
}

impl<T: Redacted> Redacted for Option<T> {
    fn redact(&mut self) {
        if let Some(x) = self {
            x.redact();
        }
    }
}

impl<T: Redacted> Redacted for Vec<T> {
    fn redact(&mut self) {
        self.iter_mut().for_each(Redacted::redact);
    }
}

impl<A: Redacted, B: Redacted> Redacted for (A, B) {
    fn redact(&mut self) {
        self.0.redact();
        self.1.redact();
    }
}

impl Redacted for SessionSummary {
    fn redact(&mut self) {
        let SessionSummary {
            session_id,
            agent,
            machine,
            title,
            project,
            model,
            git_branch,
            started_at: _,
            updated_at: _,
            messages: _,
            parent_session_id,
        } = self;
        if let Some(t) = title
            && let std::borrow::Cow::Owned(r) = redact_title(t)
        {
            *t = r;
        }
        for s in [session_id, agent, machine] {
            s.redact();
        }
        for s in [project, model, git_branch, parent_session_id] {
            s.redact();
        }
    }
}

impl Redacted for memtrail_adapters::ToolCall {
    fn redact(&mut self) {
        self.id.redact();
        self.name.redact();
        self.tool.redact();
        redact_json(&mut self.input);
        self.output.redact();
    }
}

impl Redacted for MessageView {
    fn redact(&mut self) {
        for s in [&mut self.id, &mut self.role, &mut self.kind, &mut self.text] {
            s.redact();
        }
        self.thinking.redact();
        self.model.redact();
        self.tool_calls.redact();
    }
}

impl Redacted for SessionView {
    fn redact(&mut self) {
        self.session.redact();
        self.messages.redact();
        self.children.redact();
    }
}

impl Redacted for StoredEvent {
    fn redact(&mut self) {
        self.message_id.redact();
        let e = &mut self.event;
        e.action.redact();
        e.subject.redact();
        e.detail.redact();
        e.call_id.redact();
        e.tool.redact();
    }
}

impl Redacted for CandidateMessage {
    fn redact(&mut self) {
        self.session_id.redact();
        self.role.redact();
        self.text.redact();
    }
}

impl Redacted for Hit {
    /// The snippet is redacted by [`PgReader::search`] (its highlight markers kept); a snippet
    /// that still changes when redacted without them loses its highlights here.
    fn redact(&mut self) {
        if let Some(t) = &mut self.title
            && let std::borrow::Cow::Owned(r) = redact_title(t)
        {
            *t = r;
        }
        for s in [
            &mut self.session_id,
            &mut self.agent,
            &mut self.machine,
            &mut self.message_id,
            &mut self.role,
            &mut self.kind,
        ] {
            s.redact();
        }
        self.project.redact();
        let plain: String = self
            .snippet
            .chars()
            .filter(|c| *c != HL_START && *c != HL_END)
            .collect();
        if let std::borrow::Cow::Owned(r) = redact(&plain) {
            self.snippet = r;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tsq(s: &str) -> Option<String> {
        parse_query(s).as_deref().and_then(tsquery)
    }

    /// The ranking query: every positive term of every alternative, joined by `|`; excluded
    /// terms left out; phrases and prefixes as in the match query.
    #[test]
    fn the_rank_query_joins_the_positive_terms_by_or() {
        let rank = |s: &str| parse_query(s).as_deref().and_then(rank_tsquery);
        assert_eq!(rank("error test").unwrap(), "('error') | ('test')");
        assert_eq!(
            rank("\"database is locked\" -sqlite overfl*").unwrap(),
            "('databas' <-> 'i' <-> 'lock') | ('overfl':*)"
        );
        assert_eq!(
            rank("error OR panic test").unwrap(),
            "('error') | ('panic') | ('test')"
        );
        assert_eq!(rank("-sqlite"), None);
        assert_eq!(tsq("error test").unwrap(), "('error') & ('test')");
    }

    /// A snippet of a one-word prefix the stemmer changes marks the words that begin with it
    /// as typed and those of its stem, not the others that begin with its stem.
    #[test]
    fn a_stemmed_prefix_marks_the_words_it_finds() {
        let items = parse_query("pars*").unwrap();
        let terms = query_lexemes(&items);
        assert_eq!(
            snippet("pars parse parser partners", &terms, 16, '[', ']').unwrap(),
            "[pars] [parse] [parser] partners"
        );
        let items = parse_query("as*").unwrap();
        assert_eq!(
            snippet("a plan as async", &query_lexemes(&items), 16, '[', ']').unwrap(),
            "a plan as [async]"
        );
        let items = parse_query("par*").unwrap();
        assert_eq!(
            snippet("pars partners", &query_lexemes(&items), 16, '[', ']').unwrap(),
            "[pars] [partners]"
        );
    }

    #[test]
    fn iterative_scans_came_with_pgvector_0_8() {
        assert!(pgvector_has_iterative_scan("0.8.0"));
        assert!(pgvector_has_iterative_scan("0.8.6"));
        assert!(pgvector_has_iterative_scan("1.0"));
        assert!(!pgvector_has_iterative_scan("0.7.4"));
        assert!(!pgvector_has_iterative_scan("garbage"));
    }

    // The lexemes are PostgreSQL's own for these words: ts_lexize('memtrail_stem', w) gives
    // parse → pars, rs → r, database → databas, is → i, locked → lock, pars → par, ls → l.
    #[test]
    fn identifiers_become_phrases_of_their_parts() {
        assert_eq!(tsq("parse_config").unwrap(), "('pars' <-> 'config')");
        assert_eq!(tsq("config.rs").unwrap(), "('config' <-> 'r')");
        assert_eq!(tsq("HashMap::new").unwrap(), "('hashmap' <-> 'new')");
        assert_eq!(tsq("src/main.rs").unwrap(), "('src' <-> 'main' <-> 'r')");
        assert_eq!(tsq("--dry-run").unwrap(), "('dry' <-> 'run')");
        assert_eq!(
            tsq("\"database is locked\"").unwrap(),
            "('databas' <-> 'i' <-> 'lock')"
        );
    }

    #[test]
    fn operators_follow_the_sqlite_grammar() {
        assert_eq!(tsq("a b").unwrap(), "('a') & ('b')");
        assert_eq!(tsq("a OR b c").unwrap(), "('a') | ('b') & ('c')");
        // An alternative with no lexeme is left out, with its `OR`.
        assert_eq!(tsq(&format!("a OR {}", "b".repeat(3000))).unwrap(), "('a')");
        // An exclusion after `OR` belongs to the next alternative.
        assert_eq!(tsq("a OR -b c").unwrap(), "('a') | ('c') & !('b')");
        assert_eq!(tsq("a -b c").unwrap(), "('a') & !('b') & ('c')");
        assert_eq!(tsq("a -b").unwrap(), "('a') & !('b')");
        assert_eq!(tsq("a NOT it's").unwrap(), "('a') & !('it' <-> 's')");
        // A one-word prefix the stemmer changes: the lexemes that begin with it as typed,
        // and its stem (not `partner` for `pars*`); one it leaves alone as before.
        assert_eq!(tsq("pars*").unwrap(), "(('pars':* | 'par'))");
        assert_eq!(tsq("Query*").unwrap(), "(('query':* | 'queri'))");
        assert_eq!(tsq("overfl*").unwrap(), "('overfl':*)");
        // The lexemes between the stem and the typed letters (`errorlatency` is `errorlat`).
        assert_eq!(
            tsq("errorlate*").unwrap(),
            "(('errorlate':* | 'errorl' | 'errorla' | 'errorlat'))"
        );
        assert_eq!(tsq("key*").unwrap(), "(('key':* | 'kei'))");
        // Under three letters: no stem (this store's index stems `as` to `a`, every `a`).
        assert_eq!(tsq("as*").unwrap(), "(('as':*))");
        assert_eq!(tsq("err2s*").unwrap(), "('err2s':*)");
        assert_eq!(tsq("\"parse conf\"*").unwrap(), "('pars' <-> 'conf':*)");
        assert_eq!(tsq("ls -1").unwrap(), "('l') & ('1')");
        assert_eq!(
            tsq("fix 日本").unwrap(),
            "('fix') & ('日本' | (('日':C <-> '本':C)))"
        );
        assert_eq!(tsq("-x"), None);
        // A word over PostgreSQL's lexeme limit (2,047 bytes) is not looked for.
        assert_eq!(tsq(&format!("a{}", "b".repeat(2047))), None);
        assert_eq!(
            tsq(&format!("fix {}", "b".repeat(3000))).unwrap(),
            "('fix')"
        );
        assert_eq!(tsq("'"), None);
        // A quote or backslash never reaches the tsquery text (they split parts).
        assert_eq!(tsq(r"a'b\c").unwrap(), "('a' <-> 'b' <-> 'c')");
    }
}
