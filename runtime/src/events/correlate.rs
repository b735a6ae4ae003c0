//! Correlations across messages, computed from stored events only (see [`super::correlate`]).

use super::{Category, Event, StoredEvent, error_target};
use std::collections::{HashMap, HashSet};

/// Does a path written one way name the same file as one written another way (relative vs
/// absolute)?
pub(crate) fn same_path(a: &str, b: &str) -> bool {
    // `strip_prefix` in a loop is `trim_start_matches("./")` without building a substring
    // searcher per call (this runs for every pair of candidate paths in a snapshot).
    fn trim_dot_slash(mut s: &str) -> &str {
        while let Some(rest) = s.strip_prefix("./") {
            s = rest;
        }
        s
    }
    let a = trim_dot_slash(a);
    let b = trim_dot_slash(b);
    if a == b {
        return true;
    }
    let (long, short) = if a.len() > b.len() { (a, b) } else { (b, a) };
    !short.is_empty() && long.ends_with(short) && long[..long.len() - short.len()].ends_with('/')
}

/// Does `e` (an event of a call without error) show that the call of an error of tool
/// `err_tool`, on `target` ([`error_target`]), now succeeds?
pub(crate) fn resolves(err_tool: Option<&str>, target: &str, e: &Event) -> bool {
    let err_tool = err_tool.unwrap_or("");
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
pub(crate) fn retry_key(e: &Event) -> Option<(&str, &str)> {
    match e.category {
        Category::Command => Some(("shell", &e.subject)),
        Category::File | Category::Rule if e.action == "read" => Some(("read", &e.subject)),
        Category::Error if e.tool.as_deref() != Some("shell") => {
            Some((e.tool.as_deref().unwrap_or_default(), error_target(e)))
        }
        _ => None,
    }
}

/// Which pending errors an event may resolve (a superset, checked with [`resolves`]): a shell
/// error by its command line, a read, edit or write error by its file name (the last path
/// component: [`same_path`] only matches paths that end alike), any other tool's error by tool
/// and target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ErrKey<'a> {
    Shell(&'a str),
    Path(&'a str),
    Tool(&'a str, &'a str),
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

pub(crate) fn err_key(err: &Event) -> ErrKey<'_> {
    err_key_of(err.tool.as_deref(), &err.subject)
}

/// [`err_key`] of an error of tool `tool` with subject `subject`.
pub(crate) fn err_key_of<'a>(tool: Option<&'a str>, subject: &'a str) -> ErrKey<'a> {
    let target = crate::events::target_of(tool, subject);
    match tool.unwrap_or("") {
        "shell" => ErrKey::Shell(target),
        "read" | "edit" | "write" => ErrKey::Path(file_name(target)),
        tool => ErrKey::Tool(tool, target),
    }
}

/// The keys of the errors `e` may resolve.
pub(crate) fn event_keys(e: &Event) -> [Option<ErrKey<'_>>; 3] {
    [
        (e.category == Category::Command && e.action == "ok").then_some(ErrKey::Shell(&e.subject)),
        (e.category == Category::File).then(|| ErrKey::Path(file_name(&e.subject))),
        e.tool.as_deref().map(|t| ErrKey::Tool(t, &e.subject)),
    ]
}

/// The `error_resolved` event that `se` (a call that succeeds) derives for `err`.
fn resolved_event(se: &StoredEvent, err: &Event) -> StoredEvent {
    let e = &se.event;
    StoredEvent {
        id: se.id,
        seq: se.seq,
        message_id: se.message_id.clone(),
        event: Event {
            category: Category::ErrorResolved,
            action: "resolved".into(),
            priority: 3,
            subject: err.subject.clone(),
            detail: err
                .detail
                .as_deref()
                .map(super::error_line)
                .filter(|l| !l.is_empty()),
            call_id: e.call_id.clone(),
            tool: err.tool.clone(),
            ts: e.ts,
        },
    }
}

pub(super) fn correlate(events: &[StoredEvent]) -> Vec<StoredEvent> {
    let mut out = Vec::new();
    let failed_calls: HashSet<&str> = events
        .iter()
        .filter(|e| e.event.category == Category::Error)
        .filter_map(|e| e.event.call_id.as_deref())
        .collect();

    // Errors → resolved. Each event is checked only against the pending errors it could
    // resolve (same command, same file name, or same tool and target: see `ErrKey`), so a long
    // session with many open errors costs O(events), not O(events × errors).
    let mut pending: Vec<&StoredEvent> = Vec::new();
    let mut alive: Vec<bool> = Vec::new();
    let mut open = 0usize;
    let mut buckets: HashMap<ErrKey<'_>, Vec<usize>> = HashMap::new();
    for se in events {
        let e = &se.event;
        match e.category {
            Category::Error => {
                buckets.entry(err_key(e)).or_default().push(pending.len());
                pending.push(se);
                alive.push(true);
                open += 1;
            }
            Category::ErrorResolved | Category::Retry => {}
            _ => {
                let Some(call) = e.call_id.as_deref() else {
                    continue;
                };
                if open == 0 || failed_calls.contains(call) {
                    continue;
                }
                let mut matched: Vec<usize> = Vec::new();
                for key in event_keys(e).into_iter().flatten() {
                    if let Some(bucket) = buckets.get_mut(&key) {
                        bucket.retain(|&i| alive[i]);
                        matched.extend(bucket.iter().copied().filter(|&i| {
                            let err = &pending[i].event;
                            resolves(err.tool.as_deref(), error_target(err), e)
                        }));
                    }
                }
                // In the order the errors were raised, as they are reported.
                matched.sort_unstable();
                matched.dedup();
                let mut seen: HashSet<&str> = HashSet::new();
                for i in matched {
                    alive[i] = false;
                    open -= 1;
                    let err = &pending[i].event;
                    if seen.insert(err.subject.as_str()) {
                        out.push(resolved_event(se, err));
                    }
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The error-resolution pass as first written (each event against every pending error):
    /// the oracle for the bucketed one.
    fn resolved_reference(events: &[StoredEvent]) -> Vec<StoredEvent> {
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
                        if !resolves(err.event.tool.as_deref(), error_target(&err.event), e) {
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
                                        .map(crate::events::error_line)
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
        out.sort_by_key(|e| (e.seq, e.id));
        out
    }

    fn random_events(seed: u64, n: usize) -> Vec<StoredEvent> {
        // Deterministic, so a failure can be replayed.
        let mut rng = crate::test_rng::Xorshift(seed);
        let files = [
            "src/a.rs",
            "/w/app/src/a.rs",
            "./src/a.rs",
            "src/b.rs",
            "lib/b.rs",
            "a.rs",
        ];
        let cmds = ["cargo test", "cargo build", "npm test"];
        let tools = ["shell", "read", "edit", "write", "grep", "Edit"];
        (0..n)
            .map(|i| {
                let r = rng.next_u64();
                let tool = tools[(r % tools.len() as u64) as usize];
                let (category, action, subject) = match (r >> 8) % 5 {
                    0 => (
                        Category::Error,
                        "tool",
                        if tool == "shell" {
                            cmds[((r >> 16) % 3) as usize].to_string()
                        } else {
                            let f = files[((r >> 16) % files.len() as u64) as usize];
                            if (r >> 24).is_multiple_of(2) {
                                format!("{tool}: {f}")
                            } else {
                                f.to_string()
                            }
                        },
                    ),
                    1 => (
                        Category::Command,
                        if (r >> 16).is_multiple_of(2) {
                            "ok"
                        } else {
                            "ran"
                        },
                        cmds[((r >> 20) % 3) as usize].to_string(),
                    ),
                    2 | 3 => (
                        Category::File,
                        ["read", "edited", "written"][((r >> 16) % 3) as usize],
                        files[((r >> 20) % files.len() as u64) as usize].to_string(),
                    ),
                    _ => (Category::Task, "created", format!("task {}", r % 7)),
                };
                StoredEvent {
                    id: i as i64 + 1,
                    seq: i as i64 / 2,
                    message_id: format!("m{}", i / 2),
                    event: Event {
                        category,
                        action: action.to_string(),
                        priority: 2,
                        subject,
                        detail: Some(format!("error: failure {}", r % 11)),
                        call_id: (!(r >> 32).is_multiple_of(9))
                            .then(|| format!("call{}", i / 2 + (r >> 40) as usize % 2)),
                        tool: (!(r >> 44).is_multiple_of(7)).then(|| tool.to_string()),
                        ts: Some(i as i64),
                    },
                }
            })
            .collect()
    }

    #[test]
    fn bucketed_resolution_equals_the_quadratic_reference() {
        let mut resolved_total = 0;
        for seed in 1..=300u64 {
            let events = random_events(seed * 7919, 40 + (seed as usize % 5) * 40);
            let all = correlate(&events);
            let ours: Vec<StoredEvent> = all
                .into_iter()
                .filter(|e| e.event.category == Category::ErrorResolved)
                .collect();
            let theirs = resolved_reference(&events);
            assert_eq!(ours, theirs, "seed {seed}");
            resolved_total += ours.len();
        }
        // The random sessions do resolve errors (the comparison is not between two empty lists).
        assert!(resolved_total > 1000, "{resolved_total}");
    }
}
