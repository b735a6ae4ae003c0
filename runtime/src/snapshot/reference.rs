//! The snapshot's sections as first written (a scan of every event per section, quadratic
//! de-duplication): the reference the optimized [`super::build`] must match byte for byte.

use super::{Section, Snapshot, SnapshotInput, fill, one_line, parse_counts, top_line};
use crate::events::{Category, StoredEvent, correlate, error_target};

/// `path` relative to the project directory when it is inside it.
fn rel(path: &str, project: Option<&str>) -> String {
    super::rel(path, project).to_string()
}

/// Build the snapshot of `input` within `budget` bytes (UTF-8 bytes of `text`).
pub(super) fn build(input: &SnapshotInput, budget: usize) -> Snapshot {
    let mut events = input.events.clone();
    let has_derived = events
        .iter()
        .any(|e| matches!(e.event.category, Category::ErrorResolved | Category::Retry));
    if !has_derived {
        let derived = correlate(&events);
        events.extend(derived);
        // Stable: a derived event goes after the events of its place.
        events.sort_by_key(|e| (e.seq, e.id));
    }
    let mut sections = sections(input, &events);
    let top = top_line(input, events.len());
    let text = if events.is_empty() {
        String::new()
    } else {
        fill(&mut sections, top, budget)
    };
    Snapshot {
        text,
        budget,
        events: input.events.len(),
    }
}

fn sections(input: &SnapshotInput, events: &[StoredEvent]) -> Vec<Section> {
    let project = input.project_dir.as_deref();
    let sec = |title, category, quota, item_cap, items| Section {
        title,
        category,
        quota,
        item_cap,
        items,
        chosen: Vec::new(),
        used: 0,
    };
    let of = |c: Category| events.iter().filter(move |e| e.event.category == c);

    // Prompts, newest first.
    let prompts: Vec<String> = of(Category::Prompt)
        .map(|e| one_line(&e.event.subject))
        .collect();
    // The last request; up to two before it (not the first: that is the goal).
    let last_request: Vec<String> = prompts.last().cloned().into_iter().collect();
    let earlier: Vec<String> = prompts
        .iter()
        .enumerate()
        .rev()
        .skip(1)
        .take(2)
        .filter(|(k, _)| *k > 0)
        .map(|(_, p)| p.clone())
        .collect();
    let mut goal = Vec::new();
    if prompts.len() > 1 {
        goal.push(prompts[0].clone());
    } else if prompts.is_empty()
        && let Some(t) = input.title.as_deref().filter(|t| !t.trim().is_empty())
    {
        goal.push(format!("session title: {}", one_line(t)));
    }
    for e in of(Category::Plan).collect::<Vec<_>>().into_iter().rev() {
        if e.event.action == "approved" {
            goal.push(format!("plan approved: {}", one_line(&e.event.subject)));
            break;
        }
    }

    // Open tasks: the latest todo list (the task events of the last call that wrote tasks).
    let mut tasks = Vec::new();
    if let Some(last) = of(Category::Task).next_back() {
        let call = last.event.call_id.clone();
        let list: Vec<&StoredEvent> = if call.is_some() {
            of(Category::Task)
                .filter(|e| e.event.call_id == call)
                .collect()
        } else {
            vec![last]
        };
        let status = |e: &StoredEvent| e.event.detail.clone().unwrap_or_default();
        let done = list.iter().filter(|e| e.event.action == "done").count();
        for e in list.iter().filter(|e| status(e) == "in_progress") {
            tasks.push(format!("{} (in progress)", one_line(&e.event.subject)));
        }
        for e in list
            .iter()
            .filter(|e| e.event.action != "done" && status(e) != "in_progress")
        {
            tasks.push(format!("{} (pending)", one_line(&e.event.subject)));
        }
        if done > 0 {
            let names: Vec<String> = list
                .iter()
                .filter(|e| e.event.action == "done")
                .map(|e| one_line(&e.event.subject))
                .collect();
            tasks.push(format!(
                "done ({done} of {}): {}",
                list.len(),
                names.join("; ")
            ));
        }
    }

    // Files changed, newest first, one line per path.
    struct F {
        path: String,
        last: String,
        n: usize,
        plus: usize,
        minus: usize,
        counted: bool,
    }
    let mut files: Vec<F> = Vec::new();
    for e in of(Category::File).filter(|e| e.event.action != "read") {
        let path = rel(&e.event.subject, project);
        let (p, m, c) = match e.event.detail.as_deref().and_then(parse_counts) {
            Some((p, m)) => (p, m, true),
            None => (0, 0, false),
        };
        if let Some(i) = files
            .iter()
            .position(|f| crate::events::same_path(&f.path, &path))
        {
            let mut f = files.remove(i);
            if path.len() < f.path.len() {
                f.path = path;
            }
            f.n += 1;
            f.plus += p;
            f.minus += m;
            f.counted |= c;
            f.last = e.event.action.clone();
            files.push(f);
        } else {
            files.push(F {
                path,
                last: e.event.action.clone(),
                n: 1,
                plus: p,
                minus: m,
                counted: c,
            });
        }
    }
    let files: Vec<String> = files
        .iter()
        .rev()
        .map(|f| {
            // "edited" goes without saying in "Files changed".
            let verb = if f.last == "edited" {
                ""
            } else {
                f.last.as_str()
            };
            let mut facts: Vec<String> = match (verb, f.n) {
                ("", 1) => vec![],
                ("", n) => vec![format!("{n} changes")],
                (v, 1) => vec![v.to_string()],
                (v, n) => vec![format!("{n} changes, last {v}")],
            };
            if f.counted && f.last != "deleted" {
                facts.push(format!("+{} -{}", f.plus, f.minus));
            }
            if facts.is_empty() {
                f.path.clone()
            } else {
                format!("{} ({})", f.path, facts.join(", "))
            }
        })
        .collect();

    // Unresolved errors, newest first, one per target.
    let mut errors: Vec<String> = Vec::new();
    let mut seen: Vec<(Option<String>, String)> = Vec::new();
    let mut fixed: Vec<String> = Vec::new();
    for (i, e) in events.iter().enumerate().rev() {
        let ev = &e.event;
        if ev.category == Category::ErrorResolved {
            let t = format!("fixed: {}", rel(error_target(ev), project));
            if !fixed.contains(&t) {
                fixed.push(t);
            }
        }
        if ev.category != Category::Error {
            continue;
        }
        let key = (ev.tool.clone(), ev.subject.clone());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let resolved = events[i + 1..].iter().any(|r| {
            r.event.category == Category::ErrorResolved
                && r.event.subject == ev.subject
                && r.event.tool == ev.tool
        });
        if resolved {
            continue;
        }
        let target = rel(error_target(ev), project);
        let tool = ev.tool.as_deref().unwrap_or("tool");
        let how = if ev.action == "exit" {
            let code = ev
                .detail
                .as_deref()
                .and_then(crate::events::extract_exit_code)
                .map(|c| format!(", exit {c}"))
                .unwrap_or_default();
            format!("{tool}{code}")
        } else {
            tool.to_string()
        };
        let line = ev
            .detail
            .as_deref()
            .map(crate::events::error_line)
            .unwrap_or_default();
        errors.push(if line.is_empty() {
            format!("`{target}` failed ({how})")
        } else {
            format!("`{target}` failed ({how}): {line}")
        });
    }

    let newest = |c: Category, f: &dyn Fn(&StoredEvent) -> String| -> Vec<String> {
        // Order from the events; the set only answers "seen already?".
        let mut out: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for e in of(c).collect::<Vec<_>>().into_iter().rev() {
            let s = f(e);
            if seen.insert(s.clone()) {
                out.push(s);
            }
        }
        out
    };
    let decisions = newest(Category::Decision, &|e| one_line(&e.event.subject));
    let notes = newest(Category::Note, &|e| one_line(&e.event.subject));
    let git = newest(Category::Git, &|e| {
        format!("{}: {}", e.event.action, one_line(&e.event.subject))
    });

    // Also: retry loops, fixed errors, sub-agents, rules, skills, MCP, references.
    let mut also: Vec<String> = newest(Category::Retry, &|e| {
        format!(
            "retry loop: `{}` {}",
            error_target(&e.event),
            e.event.detail.clone().unwrap_or_default()
        )
    });
    also.extend(fixed);
    let running: Vec<String> = {
        let launched = newest(Category::Subagent, &|e| one_line(&e.event.subject));
        launched
            .into_iter()
            .map(|s| {
                let finished = of(Category::Subagent)
                    .any(|e| e.event.action == "finished" && one_line(&e.event.subject) == s);
                if finished {
                    format!("sub-agent finished: {s}")
                } else {
                    format!("sub-agent launched: {s}")
                }
            })
            .collect()
    };
    also.extend(running);
    let joined = |c: Category, label: &str| -> Option<String> {
        let v = newest(c, &|e| rel(&e.event.subject, project));
        (!v.is_empty()).then(|| format!("{label}: {}", v.join(", ")))
    };
    also.extend(joined(Category::Rule, "rules read"));
    also.extend(joined(Category::Skill, "skills used"));
    also.extend(joined(Category::Mcp, "MCP tools used"));
    also.extend(newest(Category::Reference, &|e| {
        format!("{}: {}", e.event.action, e.event.subject)
    }));

    vec![
        sec("Last request", "prompt", 18, 600, last_request),
        sec("Open tasks", "task", 18, 200, tasks),
        sec("Files changed", "file", 18, 200, files),
        sec("Unresolved errors", "error", 14, 260, errors),
        sec("Decisions", "decision", 12, 260, decisions),
        sec("Goal", "prompt", 8, 300, goal),
        sec("Earlier requests", "prompt", 3, 300, earlier),
        sec("Notes", "note", 6, 260, notes),
        sec("Recent git", "git", 4, 160, git),
        sec("Also", "timeline", 2, 200, also),
    ]
}
