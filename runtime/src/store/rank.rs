//! `memtrail_bm25`: FTS5's BM25 with document frequencies estimated from a bounded sample, so
//! that a query on very frequent terms costs the same at 1 M messages as at 10 k.
//!
//! FTS5 keeps no per-term document count. Its built-in `bm25()` counts, once per query, the rows
//! that hold each phrase by walking the phrase's whole doclist (`fts5Bm25GetData` in SQLite's
//! `fts5_aux.c`): for a term in 60% of 640 k messages that walk is ~20 ms, whatever bounds the
//! candidates (docs/benchmarks.md, "Frequent terms").
//!
//! `memtrail_bm25(messages_fts, w0, w1, …)` is the same formula (the one in the FTS5 documentation,
//! <https://sqlite.org/fts5.html#the_bm25_function>: k1 = 1.2, b = 0.75, per-column weights as
//! trailing arguments, phrase frequency weighted by column, document length over all columns,
//! IDF = ln((N − n + 0.5) / (n + 0.5)) floored at 1e-6, the score negated so that lower is
//! better) with one difference: the number of rows `n` holding a phrase is counted exactly only up
//! to [`DF_SAMPLE`] rows. When a phrase has more, the count stops there and `n` is extrapolated
//! from the share of rows the sample covered: `n ≈ N × DF_SAMPLE / (r_last − r_first + 1)`, with
//! `r_first`, `r_last` the first and last rowids of the sample (ascending) and `N` the row count.
//! Rowids of `messages` are dense (an `INTEGER PRIMARY KEY` that only grows; deletions leave
//! gaps, which make the estimate low, never below [`DF_SAMPLE`]). Such a phrase is in at least
//! [`DF_SAMPLE`] rows, so its IDF is small whatever the estimate; for every phrase with fewer
//! rows the score is exactly `bm25()`'s (checked by the tests).
//!
//! Its arguments after the column weights, all optional: the groups (text, see
//! [`parse_groups`]), their samples (the first blob) and the rows of the phrases whose every
//! row is known (the second blob, [`super::prefix::Expanded::rare_rows`]): such a phrase is
//! looked for only in the rows it is listed in, where it has its only positions; the score is
//! the same, and a prefix of one letter (~1,000 such phrases, a handful in any row) costs
//! less to rank (docs/benchmarks.md, "Rare terms looked for in their rows only").
//!
//! The function is registered per connection with `fts5_api.xCreateFunction`
//! (<https://sqlite.org/fts5.html#custom_auxiliary_functions>), on the first search, so hooks do
//! not pay for it.

use super::db_err;
use crate::Result;
use rusqlite::Connection;
use rusqlite::ffi;
use std::ffi::{c_int, c_void};
use std::ptr;

/// The SQL name of the function (the search SQL writes it out; the tests compare with it).
#[cfg_attr(not(test), allow(dead_code))]
pub const FUNCTION: &str = "memtrail_bm25";

/// How many rows holding a phrase are counted before its document frequency is extrapolated.
pub const DF_SAMPLE: i64 = 2048;

const K1: f64 = 1.2;
const B: f64 = 0.75;

thread_local! {
    /// The rows `memtrail_bm25` scored on this thread since [`take_rows_scored`] last ran.
    static ROWS_SCORED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The rows `memtrail_bm25` scored on this thread since the last call, and the count set to 0
/// again: a search's walk scores each of its candidates once, so this is how many it found.
pub fn take_rows_scored() -> usize {
    ROWS_SCORED.replace(0)
}

/// Register `memtrail_bm25` on `conn`'s FTS5. Call once per connection.
///
/// Errors: SQLite's, when FTS5 is missing or the registration fails.
pub fn register(conn: &Connection) -> Result<()> {
    let api = fts5_api(conn)?;
    // SAFETY: `api` is the connection's live `fts5_api` ([`fts5_api`]). The function pointer
    // registered is a `extern "C"` fn with FTS5's signature, and no user data or destructor.
    unsafe {
        let Some(create) = (*api).xCreateFunction else {
            return Err(sqlite_error(
                ffi::SQLITE_ERROR,
                "fts5_api has no xCreateFunction",
            ));
        };
        let rc = create(
            api,
            c"memtrail_bm25".as_ptr(),
            ptr::null_mut(),
            Some(memtrail_bm25),
            None,
        );
        if rc != ffi::SQLITE_OK {
            return Err(sqlite_error(rc, "register memtrail_bm25"));
        }
    }
    Ok(())
}

/// The connection's `fts5_api`: valid while `conn` is open.
///
/// Errors: SQLite's, when FTS5 is missing.
pub(crate) fn fts5_api(conn: &Connection) -> Result<*mut ffi::fts5_api> {
    // SAFETY: `conn.handle()` is a live connection for the duration of this call. The
    // `fts5(?1)` statement writes the `fts5_api` pointer into `api` (SQLite's documented way to
    // obtain it, with the pointer type "fts5_api_ptr"); the statement is finalized before
    // `api` is returned.
    unsafe {
        let db = conn.handle();
        let mut stmt: *mut ffi::sqlite3_stmt = ptr::null_mut();
        let rc = ffi::sqlite3_prepare_v2(
            db,
            c"SELECT fts5(?1)".as_ptr(),
            -1,
            &mut stmt,
            ptr::null_mut(),
        );
        if rc != ffi::SQLITE_OK {
            return Err(sqlite_error(rc, "prepare SELECT fts5(?1)"));
        }
        let mut api: *mut ffi::fts5_api = ptr::null_mut();
        ffi::sqlite3_bind_pointer(
            stmt,
            1,
            (&mut api as *mut *mut ffi::fts5_api).cast::<c_void>(),
            c"fts5_api_ptr".as_ptr(),
            None,
        );
        let rc = ffi::sqlite3_step(stmt);
        ffi::sqlite3_finalize(stmt);
        if rc != ffi::SQLITE_ROW || api.is_null() {
            return Err(sqlite_error(rc, "FTS5 is not available"));
        }
        Ok(api)
    }
}

/// The name of the scalar function `memtrail_in_scope(bits BLOB, lo INTEGER, rowid INTEGER)`:
/// 1 when bit `rowid - lo` of `bits` is set (bit `i` is bit `i % 8` of byte `i / 8`), else 0
/// (also for a rowid outside the blob). Filtered searches use it to keep the FTS5 walk to the
/// messages of the sessions a filter admits without looking each match up in `messages`.
pub const SCOPE_FUNCTION: &str = "memtrail_in_scope";

/// `memtrail_in_sessions(bits, lo, session_id, budget)`: [`SCOPE_FUNCTION`]'s bit test on a
/// match's session id, which fails with [`WALK_BUDGET_SPENT`] on its call number `budget + 1`
/// within one run of a statement (a filtered search that has walked `budget` matches without
/// finding enough in its scope stops, and lists the scope's messages instead).
pub const SESSIONS_FUNCTION: &str = "memtrail_in_sessions";

/// The error message of [`SESSIONS_FUNCTION`] when its budget is spent.
pub const WALK_BUDGET_SPENT: &str = "memtrail: the walk's budget of matches is spent";

/// Bit `i - lo` of `bits` (bit `i % 8` of byte `i / 8`); false outside the blob.
fn bit_at(bits: &[u8], lo: i64, i: i64) -> bool {
    i.checked_sub(lo)
        .and_then(|i| usize::try_from(i).ok())
        .and_then(|i| bits.get(i / 8).map(|b| b & (1 << (i % 8)) != 0))
        .unwrap_or(false)
}

/// Register [`SCOPE_FUNCTION`] and [`SESSIONS_FUNCTION`] on `conn`. Call once per connection.
///
/// Errors: SQLite's, when the registration fails.
pub fn register_scope(conn: &Connection) -> Result<()> {
    use rusqlite::functions::FunctionFlags;
    use rusqlite::types::ValueRef;
    use std::sync::atomic::{AtomicI64, Ordering};
    conn.create_scalar_function(SESSIONS_FUNCTION, 4, FunctionFlags::SQLITE_UTF8, |ctx| {
        let (ValueRef::Blob(bits), ValueRef::Integer(lo), ValueRef::Integer(id)) =
            (ctx.get_raw(0), ctx.get_raw(1), ctx.get_raw(2))
        else {
            return Ok(false);
        };
        let budget = ctx.get::<i64>(3)?;
        // The calls so far, kept with the (constant) bitmap argument for the statement's
        // run; SQLite may drop it, which only lets the walk go on.
        let calls = match ctx.get_aux::<AtomicI64>(0)? {
            Some(c) => c,
            None => ctx.set_aux(0, AtomicI64::new(0))?,
        };
        if calls.fetch_add(1, Ordering::Relaxed) >= budget {
            return Err(rusqlite::Error::UserFunctionError(WALK_BUDGET_SPENT.into()));
        }
        Ok(bit_at(bits, lo, id))
    })
    .map_err(db_err)?;
    conn.create_scalar_function(
        SCOPE_FUNCTION,
        3,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let (ValueRef::Blob(bits), ValueRef::Integer(lo), ValueRef::Integer(rowid)) =
                (ctx.get_raw(0), ctx.get_raw(1), ctx.get_raw(2))
            else {
                return Ok(false);
            };
            Ok(bit_at(bits, lo, rowid))
        },
    )
    .map_err(db_err)
}

fn sqlite_error(rc: c_int, what: &str) -> crate::Error {
    db_err(rusqlite::Error::SqliteFailure(
        ffi::Error::new(rc),
        Some(what.to_string()),
    ))
}

/// What is computed once per query (kept with `xSetAuxdata`).
struct QueryData {
    /// The unit each phrase counts in: its own, or its group's (see [`parse_groups`]).
    unit: Vec<usize>,
    /// IDF per unit.
    idf: Vec<f64>,
    /// Mean tokens per row, all columns.
    avgdl: f64,
    /// Scratch: weighted frequency per unit of the current row.
    freq: Vec<f64>,
    /// The column weights (the function's numeric arguments), read on the first row: the same
    /// for every row of a statement.
    weights: Vec<f64>,
    /// The phrases whose rows are listed ([`RareRows`]); the others are looked for in every row.
    rare: RareRows,
    /// The phrases not in `rare`, in order.
    always: Vec<usize>,
}

/// The rows of the phrases whose every row is known (an expanded prefix's rare terms:
/// [`super::prefix::Expanded::rare_rows`], the blob's format), and which of them hold the
/// row being scored. FTS5 walks its matches newest first, so each phrase keeps a cursor that
/// only moves down its rows and a heap holds each phrase's next row: a row costs the phrases
/// that hold it and the rows passed since the row before. A row scored out of that order
/// starts the cursors again; a row below `floor` is looked for in every phrase.
#[derive(Default)]
struct RareRows {
    floor: i64,
    /// The phrase of each listed entry.
    phrase: Vec<usize>,
    /// Per phrase of the query: whether it is listed.
    listed: Vec<bool>,
    /// Each entry's rows (ascending) as a range of `rows`.
    span: Vec<std::ops::Range<usize>>,
    rows: Vec<i64>,
    /// Per entry: how many of its rows are below the cursor (not yet passed).
    left: Vec<usize>,
    /// (next row, entry) of each entry with rows left.
    heap: std::collections::BinaryHeap<(i64, usize)>,
    /// The row scored last; `None` before the first.
    last: Option<i64>,
    /// Scratch: the phrases holding the current row.
    holding: Vec<usize>,
}

impl RareRows {
    /// Parse the blob; `None` when malformed. An empty blob lists no phrase.
    fn parse(blob: &[u8], n_phrase: usize) -> Option<RareRows> {
        let mut out = RareRows {
            floor: i64::MIN,
            listed: vec![false; n_phrase],
            ..RareRows::default()
        };
        if blob.is_empty() {
            return Some(out);
        }
        let u32_at = |i: usize| -> Option<usize> {
            Some(u32::from_le_bytes(blob.get(i..i + 4)?.try_into().ok()?) as usize)
        };
        let i64_at = |i: usize| -> Option<i64> {
            Some(i64::from_le_bytes(blob.get(i..i + 8)?.try_into().ok()?))
        };
        out.floor = i64_at(0)?;
        let mut i = 8;
        while i < blob.len() {
            let (phrase, n) = (u32_at(i)?, u32_at(i + 4)?);
            i += 8;
            if out.listed.get(phrase) != Some(&false) {
                return None;
            }
            out.listed[phrase] = true;
            let start = out.rows.len();
            for k in 0..n {
                out.rows.push(i64_at(i + 8 * k)?);
            }
            i += 8 * n;
            if !out.rows[start..].is_sorted() {
                return None;
            }
            out.phrase.push(phrase);
            out.span.push(start..out.rows.len());
        }
        Some(out)
    }

    /// Whether `phrase` is listed.
    fn lists(&self, phrase: usize) -> bool {
        self.listed.get(phrase).copied().unwrap_or(false)
    }

    /// The cursors at the top of every entry's rows.
    fn restart(&mut self) {
        self.left = self.span.iter().map(ExactSizeIterator::len).collect();
        self.heap.clear();
        for (e, span) in self.span.iter().enumerate() {
            if let Some(&r) = self.rows[span.clone()].last() {
                self.heap.push((r, e));
            }
        }
    }

    /// Fill `holding` with the listed phrases that hold `row` (`row` ≥ `floor`), in ascending
    /// order: a unit's frequency is summed phrase after phrase, and floating-point sums
    /// depend on their order (`0.4 + 0.4 + 1.0` is not `1.0 + 0.4 + 0.4` to the bit).
    fn find(&mut self, row: i64) {
        if self.last.is_none_or(|l| row >= l) {
            self.restart();
        }
        self.last = Some(row);
        self.holding.clear();
        while let Some(&(next, e)) = self.heap.peek() {
            if next < row {
                break;
            }
            self.heap.pop();
            let span = self.span[e].clone();
            let rows = &self.rows[span.start..span.start + self.left[e]];
            let mut left = rows.partition_point(|&r| r <= row);
            if left > 0 && rows[left - 1] == row {
                self.holding.push(self.phrase[e]);
                left -= 1;
            }
            self.left[e] = left;
            if left > 0 {
                self.heap.push((rows[left - 1], e));
            }
        }
        self.holding.sort_unstable();
    }
}

unsafe extern "C" fn free_query_data(p: *mut c_void) {
    if !p.is_null() {
        // SAFETY: `p` was made by `Box::into_raw` in `query_data` and is freed once, by FTS5.
        drop(unsafe { Box::from_raw(p.cast::<QueryData>()) });
    }
}

/// The sample of the rows holding any phrase of a unit (one phrase, or a group's): the
/// smallest [`DF_SAMPLE`] distinct rowids seen, filled by [`count_cb`] phrase after phrase.
#[derive(Default)]
struct Sample {
    rows: std::collections::BTreeSet<i64>,
}

unsafe extern "C" fn count_cb(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    user: *mut c_void,
) -> c_int {
    // SAFETY: `user` is the `Sample` passed to `xQueryPhrase` by `query_data`, alive for the
    // call; `api` and `fts` are FTS5's for this callback.
    unsafe {
        let s = &mut *user.cast::<Sample>();
        let rowid = match (*api).xRowid {
            Some(f) => f(fts),
            None => 0,
        };
        // The phrase's rows come in ascending order: past the sample's largest, once full,
        // none of its rows can enter it.
        let full = s.rows.len() as i64 >= DF_SAMPLE;
        if full && s.rows.last().is_some_and(|&l| rowid > l) {
            return ffi::SQLITE_DONE;
        }
        s.rows.insert(rowid);
        if s.rows.len() as i64 > DF_SAMPLE {
            s.rows.pop_last();
        }
        ffi::SQLITE_OK
    }
}

/// IDF of a phrase held by `n` of `rows` rows, as FTS5's `bm25()` computes it.
pub fn idf(rows: i64, n: i64) -> f64 {
    let rows = rows as f64;
    let n = n as f64;
    let idf = ((rows - n + 0.5) / (n + 0.5)).ln();
    if idf <= 0.0 { 1e-6 } else { idf }
}

/// The number of rows estimated to hold a phrase from its sample (exact below [`DF_SAMPLE`]).
pub fn estimate_df(rows: i64, count: i64, first: i64, last: i64) -> i64 {
    if count < DF_SAMPLE {
        return count;
    }
    let span = (last - first + 1).max(count);
    let est = (rows as f64 * count as f64 / span as f64).round() as i64;
    est.clamp(count, rows.max(count))
}

/// How the phrases of a query count ([`parse_groups`]).
struct Units {
    /// The unit of each phrase: its own, or its group's.
    unit: Vec<usize>,
    /// Whether FTS5 counts the phrase's rows (else its group's sample holds them).
    counted: Vec<bool>,
    /// The unit of each group, in the order of the groups' samples.
    group_units: Vec<usize>,
}

/// The units of `n_phrase` phrases given a group list `spec`: `first:len:counted` triples
/// separated by `,` (phrases `first .. first + len` are one group, counted as one phrase: the
/// expansion of a prefix term into the terms it matches, see [`super::prefix`]; the rows of
/// its first `counted` phrases are counted by FTS5, the others' are in the group's sample).
/// Phrases outside every group are units of their own, in order. A malformed or out-of-range
/// triple is an error (the caller writes the list).
fn parse_groups(spec: &str, n_phrase: usize) -> std::result::Result<Units, c_int> {
    let mut group_of: Vec<Option<usize>> = vec![None; n_phrase];
    let mut counted = vec![true; n_phrase];
    let mut n_groups = 0;
    for (g, triple) in spec.split(',').filter(|p| !p.is_empty()).enumerate() {
        let mut it = triple.split(':').map(str::parse::<usize>);
        let (Some(Ok(first)), Some(Ok(len)), Some(Ok(n_counted)), None) =
            (it.next(), it.next(), it.next(), it.next())
        else {
            return Err(ffi::SQLITE_ERROR);
        };
        let end = first.checked_add(len).ok_or(ffi::SQLITE_ERROR)?;
        if len == 0
            || n_counted > len
            || end > n_phrase
            || group_of[first..end].iter().any(Option::is_some)
        {
            return Err(ffi::SQLITE_ERROR);
        }
        group_of[first..end].fill(Some(g));
        counted[first + n_counted..end].fill(false);
        n_groups = g + 1;
    }
    // Units numbered in phrase order: a group takes the number of its first phrase's turn.
    let mut unit = Vec::with_capacity(n_phrase);
    let mut group_units: Vec<Option<usize>> = vec![None; n_groups];
    let mut next = 0;
    for g in group_of {
        match g {
            None => {
                unit.push(next);
                next += 1;
            }
            Some(g) => match group_units[g] {
                Some(u) => unit.push(u),
                None => {
                    group_units[g] = Some(next);
                    unit.push(next);
                    next += 1;
                }
            },
        }
    }
    Ok(Units {
        unit,
        counted,
        group_units: group_units.into_iter().map(|u| u.unwrap_or(0)).collect(),
    })
}

/// The groups' samples as [`super::prefix::Expanded::samples`] holds them: per group a `u32`
/// count, then that many `i64` rows (little-endian). `None` when malformed.
fn parse_samples(blob: &[u8]) -> Option<Vec<Vec<i64>>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < blob.len() {
        let n = u32::from_le_bytes(blob.get(i..i + 4)?.try_into().ok()?) as usize;
        i += 4;
        let rows = (0..n)
            .map(|k| {
                let at = i + 8 * k;
                Some(i64::from_le_bytes(blob.get(at..at + 8)?.try_into().ok()?))
            })
            .collect::<Option<Vec<i64>>>()?;
        i += 8 * n;
        out.push(rows);
    }
    Some(out)
}

/// Compute (or fetch) the per-query data. Returns an SQLite error code on failure.
unsafe fn query_data(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    n_val: c_int,
    ap_val: *mut *mut ffi::sqlite3_value,
) -> std::result::Result<*mut QueryData, c_int> {
    // SAFETY: FTS5's API on its own context; the aux data pointer, when set, is ours;
    // `ap_val` holds `n_val` values.
    unsafe {
        let get = api.xGetAuxdata.ok_or(ffi::SQLITE_ERROR)?;
        let existing = get(fts, 0).cast::<QueryData>();
        if !existing.is_null() {
            return Ok(existing);
        }
        let phrase_count = api.xPhraseCount.ok_or(ffi::SQLITE_ERROR)?;
        let row_count = api.xRowCount.ok_or(ffi::SQLITE_ERROR)?;
        let total_size = api.xColumnTotalSize.ok_or(ffi::SQLITE_ERROR)?;
        let query_phrase = api.xQueryPhrase.ok_or(ffi::SQLITE_ERROR)?;
        let set = api.xSetAuxdata.ok_or(ffi::SQLITE_ERROR)?;

        // The arguments: the column weights, then optionally the groups (text) and their
        // samples (a blob).
        let mut weights = Vec::new();
        let mut spec = String::new();
        let mut group_samples: Vec<Vec<i64>> = Vec::new();
        let mut rare_blob: &[u8] = &[];
        let mut blobs = 0;
        for i in 0..n_val.max(0) as usize {
            let v = *ap_val.add(i);
            match ffi::sqlite3_value_type(v) {
                ffi::SQLITE_TEXT => {
                    let p = ffi::sqlite3_value_text(v);
                    if !p.is_null() {
                        spec = std::ffi::CStr::from_ptr(p.cast())
                            .to_string_lossy()
                            .into_owned();
                    }
                }
                ffi::SQLITE_BLOB => {
                    // The groups' samples, then the rare phrases' rows.
                    let n = ffi::sqlite3_value_bytes(v).max(0) as usize;
                    let p = ffi::sqlite3_value_blob(v).cast::<u8>();
                    let blob: &[u8] = if p.is_null() || n == 0 {
                        &[]
                    } else {
                        std::slice::from_raw_parts(p, n)
                    };
                    match blobs {
                        0 => group_samples = parse_samples(blob).ok_or(ffi::SQLITE_ERROR)?,
                        1 => rare_blob = blob,
                        _ => return Err(ffi::SQLITE_ERROR),
                    }
                    blobs += 1;
                }
                _ => weights.push(ffi::sqlite3_value_double(v)),
            }
        }
        let n_phrase = phrase_count(fts).max(0) as usize;
        let rare = RareRows::parse(rare_blob, n_phrase).ok_or(ffi::SQLITE_ERROR)?;
        let always = (0..n_phrase).filter(|&p| !rare.lists(p)).collect();
        let Units {
            unit,
            counted,
            group_units,
        } = parse_groups(&spec, n_phrase)?;
        let n_unit = unit.iter().max().map_or(0, |u| u + 1);
        let mut rows: i64 = 0;
        let rc = row_count(fts, &mut rows);
        if rc != ffi::SQLITE_OK {
            return Err(rc);
        }
        let mut tokens: i64 = 0;
        let rc = total_size(fts, -1, &mut tokens);
        if rc != ffi::SQLITE_OK {
            return Err(rc);
        }
        let avgdl = if rows > 0 {
            tokens as f64 / rows as f64
        } else {
            1.0
        };
        // Each unit's sample: a group's is the smallest DF_SAMPLE rows holding any of its
        // phrases, what FTS5 counts for the prefix term the group stands for.
        let mut samples: Vec<Sample> = (0..n_unit).map(|_| Sample::default()).collect();
        for (g, rows) in group_samples.into_iter().enumerate() {
            let u = *group_units.get(g).ok_or(ffi::SQLITE_ERROR)?;
            samples[u].rows.extend(rows);
            while samples[u].rows.len() as i64 > DF_SAMPLE {
                samples[u].rows.pop_last();
            }
        }
        for (i, &u) in unit.iter().enumerate() {
            if !counted[i] {
                continue;
            }
            let rc = query_phrase(
                fts,
                i as c_int,
                (&mut samples[u] as *mut Sample).cast::<c_void>(),
                Some(count_cb),
            );
            if rc != ffi::SQLITE_OK {
                return Err(rc);
            }
        }
        let idfs = samples
            .iter()
            .map(|s| {
                let (first, last) = (
                    s.rows.first().copied().unwrap_or(0),
                    s.rows.last().copied().unwrap_or(0),
                );
                idf(rows, estimate_df(rows, s.rows.len() as i64, first, last))
            })
            .collect();
        let data = Box::into_raw(Box::new(QueryData {
            unit,
            idf: idfs,
            avgdl: if avgdl > 0.0 { avgdl } else { 1.0 },
            freq: vec![0.0; n_unit],
            weights,
            rare,
            always,
        }));
        let rc = set(fts, data.cast::<c_void>(), Some(free_query_data));
        if rc != ffi::SQLITE_OK {
            // xSetAuxdata calls the destructor itself when it fails.
            return Err(rc);
        }
        Ok(data)
    }
}

/// The auxiliary function itself (see the module documentation).
unsafe extern "C" fn memtrail_bm25(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    n_val: c_int,
    ap_val: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: FTS5 calls this with its API, its context, SQLite's result context and `n_val`
    // trailing values; the per-query data is ours (see `query_data`).
    unsafe {
        match score(&*api, fts, n_val, ap_val) {
            Ok(s) => ffi::sqlite3_result_double(ctx, -s),
            Err(rc) => ffi::sqlite3_result_error_code(ctx, rc),
        }
    }
}

unsafe fn score(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    n_val: c_int,
    ap_val: *mut *mut ffi::sqlite3_value,
) -> std::result::Result<f64, c_int> {
    // SAFETY: as for `memtrail_bm25`; `ap_val` holds `n_val` values.
    unsafe {
        let data = &mut *query_data(api, fts, n_val, ap_val)?;
        ROWS_SCORED.set(ROWS_SCORED.get() + 1);
        let phrase_first = api.xPhraseFirst.ok_or(ffi::SQLITE_ERROR)?;
        let phrase_next = api.xPhraseNext.ok_or(ffi::SQLITE_ERROR)?;
        let column_size = api.xColumnSize.ok_or(ffi::SQLITE_ERROR)?;
        let row_id = api.xRowid.ok_or(ffi::SQLITE_ERROR)?;
        data.freq.fill(0.0);
        // Each phrase's positions in this row, read from its position list. (`xInst` gives
        // the same instances, but first merges every phrase's list into one array sorted by
        // position: a third of a frequent-term search's instructions.) A group's phrases are
        // distinct terms, so no position counts twice in its unit. A phrase whose rows are
        // listed is looked for only in those rows: elsewhere it has no position. The phrases
        // are taken in the order they were before the list (a group's listed phrases come
        // after its others, and `holding` is in order), so each sum is the same to the bit.
        let add = |data: &mut QueryData, p: usize| -> std::result::Result<(), c_int> {
            let u = data.unit[p];
            let mut it = ffi::Fts5PhraseIter {
                a: std::ptr::null(),
                b: std::ptr::null(),
            };
            let (mut ic, mut io): (c_int, c_int) = (0, 0);
            let rc = phrase_first(fts, p as c_int, &mut it, &mut ic, &mut io);
            if rc != ffi::SQLITE_OK {
                return Err(rc);
            }
            while ic >= 0 {
                data.freq[u] += data.weights.get(ic as usize).copied().unwrap_or(1.0);
                phrase_next(fts, &mut it, &mut ic, &mut io);
            }
            Ok(())
        };
        let row = row_id(fts);
        if data.rare.phrase.is_empty() || row < data.rare.floor {
            for p in 0..data.unit.len() {
                add(data, p)?;
            }
        } else {
            for k in 0..data.always.len() {
                add(data, data.always[k])?;
            }
            data.rare.find(row);
            for k in 0..data.rare.holding.len() {
                add(data, data.rare.holding[k])?;
            }
        }
        let mut n_tok: c_int = 0;
        let rc = column_size(fts, -1, &mut n_tok);
        if rc != ffi::SQLITE_OK {
            return Err(rc);
        }
        let d = n_tok as f64;
        let mut s = 0.0;
        for (f, idf) in data.freq.iter().zip(&data.idf) {
            s += idf * (f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * d / data.avgdl));
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table of `rows` rows over columns (a, b): `common` in every row, `half` in even rows,
    /// `rare` in rows divisible by 50, words repeated by row so that frequencies differ.
    fn table(rows: i64) -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE VIRTUAL TABLE t USING fts5 (a, b);")
            .unwrap();
        register(&conn).unwrap();
        let mut ins = conn
            .prepare("INSERT INTO t (rowid, a, b) VALUES (?1, ?2, ?3)")
            .unwrap();
        for i in 1..=rows {
            let mut a = format!("common word{} ", i % 7);
            if i % 2 == 0 {
                a.push_str(&"half ".repeat((i % 3 + 1) as usize));
            }
            let mut b = "filler ".repeat((i % 5 + 1) as usize);
            if i % 50 == 0 {
                b.push_str("rare common");
            }
            ins.execute(rusqlite::params![i, a, b]).unwrap();
        }
        drop(ins);
        conn
    }

    fn scores(conn: &Connection, f: &str, q: &str) -> Vec<(i64, f64)> {
        let sql = format!("SELECT rowid, {f}(t, 1.0, 0.4) FROM t WHERE t MATCH ?1 ORDER BY rowid");
        let mut st = conn.prepare(&sql).unwrap();
        st.query_map([q], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn equals_fts5_bm25_when_every_phrase_is_under_the_sample() {
        // 1000 rows < DF_SAMPLE: every document frequency is counted exactly, so the scores are
        // FTS5's, row for row.
        let conn = table(1000);
        for q in [
            "rare",
            "half",
            "common",
            "rare half",
            "half OR rare",
            "common NOT half",
            // Phrases, NEAR groups, column filters and prefixes: each phrase's instances are
            // what its position list holds in the row, as `bm25()` counts them.
            "\"half half\"",
            "NEAR(rare common, 2)",
            "NEAR(common half, 1) OR filler",
            "a : half",
            "b : common",
            "comm* half",
        ] {
            let ours = scores(&conn, FUNCTION, q);
            let theirs = scores(&conn, "bm25", q);
            assert!(!ours.is_empty(), "{q}");
            assert_eq!(ours.len(), theirs.len(), "{q}");
            for ((r1, s1), (r2, s2)) in ours.iter().zip(&theirs) {
                assert_eq!(r1, r2);
                assert!(
                    (s1 - s2).abs() <= 1e-9 * s2.abs().max(1.0),
                    "{q} row {r1}: {s1} vs {s2}"
                );
            }
        }
    }

    #[test]
    fn frequent_phrase_gets_an_estimated_df_and_rare_ones_stay_exact() {
        // 10 000 rows: `half` is in 5000 (> DF_SAMPLE, estimated), `rare` in 200 (exact).
        let conn = table(10_000);
        // `rare` alone: exact, so equal to bm25().
        let ours = scores(&conn, FUNCTION, "rare");
        let theirs = scores(&conn, "bm25", "rare");
        assert_eq!(ours.len(), 200);
        for ((_, a), (_, b)) in ours.iter().zip(&theirs) {
            assert!((a - b).abs() < 1e-9);
        }
        // `half`: its sample covers rowids 2..=4096 (2048 even rows out of 4095), so its
        // estimated df is round(10000 * 2048 / 4095) = 5001 against the true 5000: both above
        // N/2, so both IDFs are floored at 1e-6 and the scores agree.
        assert_eq!(estimate_df(10_000, DF_SAMPLE, 2, 4096), 5001);
        let ours = scores(&conn, FUNCTION, "half");
        let theirs = scores(&conn, "bm25", "half");
        assert_eq!(ours.len(), 5000);
        for ((_, a), (_, b)) in ours.iter().zip(&theirs) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
        // The ranking of `rare half` (rare dominates) is the same as bm25()'s.
        let order = |f: &str| -> Vec<i64> {
            let sql = format!(
                "SELECT rowid FROM t WHERE t MATCH 'rare half' ORDER BY {f}(t, 1.0, 0.4), rowid"
            );
            let mut st = conn.prepare(&sql).unwrap();
            st.query_map([], |r| r.get(0))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap()
        };
        assert_eq!(order(FUNCTION), order("bm25"));
    }

    /// The blob [`super::super::prefix::Expanded::rare_rows`] describes: a floor, then per
    /// phrase its number, its count of rows and the rows.
    fn rare_blob(floor: i64, phrases: &[(u32, &[i64])]) -> Vec<u8> {
        let mut b = floor.to_le_bytes().to_vec();
        for (p, rows) in phrases {
            b.extend_from_slice(&p.to_le_bytes());
            b.extend_from_slice(&(rows.len() as u32).to_le_bytes());
            for r in *rows {
                b.extend_from_slice(&r.to_le_bytes());
            }
        }
        b
    }

    #[test]
    fn the_phrases_holding_a_row_are_found_in_any_order_of_rows() {
        let blob = rare_blob(
            5,
            &[(1, &[5, 9, 20]), (3, &[9, 30]), (4, &[]), (6, &[7, 9, 21])],
        );
        let mut r = RareRows::parse(&blob, 8).unwrap();
        assert_eq!(r.floor, 5);
        assert!(r.lists(4) && !r.lists(0) && !r.lists(2));
        // In ascending order, as `find` gives them.
        let mut holding = |row: i64| {
            r.find(row);
            r.holding.clone()
        };
        // Newest first, as FTS5 walks (rows between the listed ones pass them by).
        let walk: Vec<(i64, Vec<usize>)> = [31, 30, 21, 20, 15, 9, 8, 7, 5]
            .into_iter()
            .map(|row| (row, holding(row)))
            .collect();
        let want: Vec<(i64, Vec<usize>)> = vec![
            (31, vec![]),
            (30, vec![3]),
            (21, vec![6]),
            (20, vec![1]),
            (15, vec![]),
            (9, vec![1, 3, 6]),
            (8, vec![]),
            (7, vec![6]),
            (5, vec![1]),
        ];
        assert_eq!(walk, want);
        // The same row twice, then rows out of order: each still finds its phrases.
        assert_eq!(holding(5), vec![1]);
        assert_eq!(holding(9), vec![1, 3, 6]);
        assert_eq!(holding(30), vec![3]);
        assert_eq!(holding(9), vec![1, 3, 6]);
        assert_eq!(holding(21), vec![6]);
    }

    #[test]
    fn a_malformed_list_of_rare_rows_is_refused() {
        let ok = rare_blob(0, &[(2, &[1, 2])]);
        assert!(RareRows::parse(&ok, 3).is_some());
        assert!(RareRows::parse(&[], 3).is_some_and(|r| r.phrase.is_empty()));
        // A phrase past the query's, listed twice, rows not ascending, cut short.
        assert!(RareRows::parse(&ok, 2).is_none());
        assert!(RareRows::parse(&rare_blob(0, &[(1, &[1]), (1, &[2])]), 3).is_none());
        assert!(RareRows::parse(&rare_blob(0, &[(1, &[2, 1])]), 3).is_none());
        assert!(RareRows::parse(&ok[..ok.len() - 1], 3).is_none());
        assert!(RareRows::parse(&ok[..4], 3).is_none());
    }

    #[test]
    fn idf_matches_fts5_formula() {
        // ln((1000 - 10 + 0.5) / (10 + 0.5)) = ln(94.333…) = 4.5468…
        assert!((idf(1000, 10) - (990.5f64 / 10.5).ln()).abs() < 1e-12);
        // A phrase in more than half the rows: floored at 1e-6, as FTS5 does.
        assert_eq!(idf(1000, 600), 1e-6);
    }

    #[test]
    fn df_is_exact_below_the_sample_and_extrapolated_above() {
        assert_eq!(estimate_df(1_000_000, 17, 5, 900), 17);
        // The sample covered rowids 1..=4096 and held 2048 rows: half of them; half of 1 M.
        assert_eq!(estimate_df(1_000_000, DF_SAMPLE, 1, 4096), 500_000);
        // Never below the sample, never above the rows.
        assert_eq!(
            estimate_df(1_000_000, DF_SAMPLE, 1, 1_000_000_000),
            DF_SAMPLE
        );
        assert_eq!(estimate_df(3000, DF_SAMPLE, 10, 10 + DF_SAMPLE - 1), 3000);
    }
}
