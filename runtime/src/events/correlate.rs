//! Correlations across messages, computed from stored events only (see [`super::correlate`]).

use super::{Category, Event, StoredEvent, error_target};
use std::collections::HashSet;

/// Does a path written one way name the same file as one written another way (relative vs
/// absolute)?
pub(crate) fn same_path(a: &str, b: &str) -> bool {
    let a = a.trim_start_matches("./");
    let b = b.trim_start_matches("./");
    if a == b {
        return true;
    }
    let (long, short) = if a.len() > b.len() { (a, b) } else { (b, a) };
    !short.is_empty() && long.ends_with(short) && long[..long.len() - short.len()].ends_with('/')
}

/// Does `e` (an event of a call without error) show that `err`'s call now succeeds?
fn resolves(err: &Event, target: &str, e: &Event) -> bool {
    let err_tool = err.tool.as_deref().unwrap_or("");
    match err_tool {
        "shell" => e.category == Category::Command && e.action == "ok" && e.subject == target,
        "read" => e.category == Category::File && same_path(&e.subject, target),
        "edit" | "write" => {
            e.category == Category::File && e.action != "read" && same_path(&e.subject, target)
        }
        _ => e.tool.as_deref() == Some(err_tool) && e.subject == target,
    }
}

/// The retry key of a call's event: shell commands by their command line, reads by their path,
/// failed calls by tool and target. Other calls (edits, whose inputs differ) have none.
fn retry_key(e: &Event) -> Option<(&str, &str)> {
    match e.category {
        Category::Command => Some(("shell", &e.subject)),
        Category::File | Category::Rule if e.action == "read" => Some(("read", &e.subject)),
        Category::Error if e.tool.as_deref() != Some("shell") => {
            Some((e.tool.as_deref().unwrap_or_default(), error_target(e)))
        }
        _ => None,
    }
}

pub(super) fn correlate(events: &[StoredEvent]) -> Vec<StoredEvent> {
    let mut out = Vec::new();
    let failed_calls: HashSet<&str> = events
        .iter()
        .filter(|e| e.event.category == Category::Error)
        .filter_map(|e| e.event.call_id.as_deref())
        .collect();

    // Errors → resolved.
    let mut pending: Vec<&StoredEvent> = Vec::new();
    for se in events {
        let e = &se.event;
        match e.category {
            Category::Error => pending.push(se),
            Category::ErrorResolved | Category::Retry => {}
            _ => {
                let Some(call) = e.call_id.as_deref() else {
                    continue;
                };
                if pending.is_empty() || failed_calls.contains(call) {
                    continue;
                }
                let mut seen: HashSet<&str> = HashSet::new();
                pending.retain(|err| {
                    if !resolves(&err.event, error_target(&err.event), e) {
                        return true;
                    }
                    if seen.insert(err.event.subject.as_str()) {
                        out.push(StoredEvent {
                            id: se.id,
                            seq: se.seq,
                            message_id: se.message_id.clone(),
                            event: Event {
                                category: Category::ErrorResolved,
                                action: "resolved".into(),
                                priority: 3,
                                subject: err.event.subject.clone(),
                                detail: err
                                    .event
                                    .detail
                                    .as_deref()
                                    .map(super::error_line)
                                    .filter(|l| !l.is_empty()),
                                call_id: e.call_id.clone(),
                                tool: err.event.tool.clone(),
                                ts: e.ts,
                            },
                        });
                    }
                    false
                });
            }
        }
    }

    // Retry loops: runs of calls with the same key.
    type Run<'a> = Option<((&'a str, &'a str), usize, &'a StoredEvent)>;
    let mut run: Run = None;
    let mut last_call: Option<&str> = None;
    let mut loops = Vec::new();
    let close = |run: &Run, loops: &mut Vec<StoredEvent>| {
        if let Some(((tool, target), n, last)) = run
            && *n >= 3
        {
            loops.push(StoredEvent {
                id: last.id,
                seq: last.seq,
                message_id: last.message_id.clone(),
                event: Event {
                    category: Category::Retry,
                    action: "loop".into(),
                    priority: 2,
                    subject: format!("{tool}: {target}"),
                    detail: Some(format!("{n} times in a row")),
                    call_id: last.event.call_id.clone(),
                    tool: Some(tool.to_string()),
                    ts: last.event.ts,
                },
            });
        }
    };
    for (i, se) in events.iter().enumerate() {
        let Some(call) = se.event.call_id.as_deref() else {
            continue;
        };
        if matches!(se.event.category, Category::ErrorResolved | Category::Retry) {
            continue;
        }
        if last_call == Some(call) {
            continue; // further events of the same call
        }
        // A call's key: its first keyed event (a failed shell call has Command then Error); a
        // call's events are in its message, so the scan stops at the next message.
        let key = events[i..]
            .iter()
            .take_while(|x| x.seq == se.seq)
            .filter(|x| x.event.call_id.as_deref() == Some(call))
            .find_map(|x| retry_key(&x.event));
        last_call = Some(call);
        match (&mut run, key) {
            (Some((k, n, last)), Some(key)) if *k == key => {
                *n += 1;
                *last = se;
            }
            (_, key) => {
                close(&run, &mut loops);
                run = key.map(|k| (k, 1, se));
            }
        }
    }
    close(&run, &mut loops);
    out.extend(loops);
    out.sort_by_key(|e| (e.seq, e.id));
    out
}
