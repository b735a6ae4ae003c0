//! `memtrail search`: full-text search over the captured messages.

use crate::cli::SearchArgs;
use crate::common::{absolute, open_reader};
use crate::output::{printable, short_time};
use anyhow::Result;
use memtrail_runtime::StoreLocation;
use memtrail_runtime::query::Hit;
use memtrail_runtime::query::{HL_END, HL_START, SearchFilter};
use memtrail_runtime::time::{Bound, parse_date};
use serde::Serialize;
use std::process::ExitCode;

/// `search --json` (schema: docs/json.md): the query as searched (its words joined by spaces)
/// and the hits, their snippets marked `**word**`.
#[derive(Serialize)]
struct Found<'a> {
    query: &'a str,
    hits: &'a [Hit],
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
        limit: a.limit as usize,
    };
    let (mut hits, unindexed) = match open_reader(db)? {
        Some(store) => {
            let hits = store.search(&q, &filter)?;
            // The search indexes the queue first; when it could not (another process holds
            // the write lock), the newest messages are not searched: say so.
            (hits, store.unindexed())
        }
        None => (Vec::new(), 0),
    };
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
            serde_json::to_string_pretty(&Found {
                query: &q,
                hits: &hits
            })?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if hits.is_empty() {
        out!("No matches for {:?}.", memtrail_adapters::one_line(&q, 80));
        return Ok(ExitCode::SUCCESS);
    }
    // Colour: the title bold, the matched words bold red (as grep). Without colour, plain
    // text: no Markdown markers, so that the output greps as the message reads.
    let color = a.color.enabled();
    let (bold, hit, reset) = if color {
        ("\x1b[1m", "\x1b[1;31m", "\x1b[0m")
    } else {
        ("", "", "")
    };
    for (i, h) in hits.iter().enumerate() {
        out_styled!(
            "{}. {bold}{}{reset}  ({} · {} · {})",
            i + 1,
            printable(h.title.as_deref().unwrap_or("(untitled)"), &[]),
            h.agent,
            printable(h.project.as_deref().unwrap_or("?"), &[]),
            h.timestamp.as_deref().map(short_time).unwrap_or("?".into())
        );
        out!(
            "   session {} · message #{} · {}",
            h.session_id,
            h.message_index,
            h.role
        );
        let snip = printable(&h.snippet.replace('\n', " "), &[HL_START, HL_END])
            .replace(HL_START, hit)
            .replace(HL_END, reset);
        out_styled!("   {}\n", snip.trim());
    }
    Ok(ExitCode::SUCCESS)
}
