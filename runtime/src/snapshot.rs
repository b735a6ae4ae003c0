//! The snapshot: a session's working state in a few kilobytes, built from its events, for an
//! agent that has just lost its context to compaction (and for `memtrail resume`).
//!
//! Bounded: the rendered text never exceeds the byte budget. Deterministic: the same input
//! gives the same bytes.
//!
//! Shape (Markdown, factual statements; sections without content are left out):
//!
//! ```text
//! Working state of claude session <id> (branch main, 42 events). More: MCP timeline(session_id="<id>", category="<a section's [category]>") or `memtrail search "<words>" --session <id>`.
//! ## Last request [prompt]
//! - <the last user prompt>
//! ## Open tasks [task]
//! - <task> (in progress)
//! ## Files changed [file]
//! - src/lib.rs (×2, +3 -1)          (edited twice; `written`/`deleted` said)
//! ## Unresolved errors [error]
//! - `cargo test` failed (shell, exit 101): error[E0425]: cannot find value `x`
//! ## Decisions [decision]
//! ## Goal [prompt]          (the first request, when it differs from the last)
//! ## Earlier requests [prompt]  (up to two before the last, not the first)
//! ## Notes [note]
//! ## Recent git [git]
//! ## Also [timeline]        (plans, retry loops, fixed errors, sub-agents, rules, skills, references)
//! ```
//!
//! The `[category]` after a section title is the `category` argument of the MCP tool `timeline`
//! that lists everything of that section.
//!
//! Budget: sections get quotas (a share of the budget) and are filled in three rounds, in order of
//! importance (last request, open tasks, files changed, unresolved errors, decisions, goal, notes,
//! git, earlier requests, the rest): first one item of each section, then more items up to each quota, then more
//! items while the budget lasts. An item that does not fit whole is cut (with `…`) rather than the
//! section dropped. The first line (the session and where to get more) is kept only when it costs
//! at most a sixth of the budget. With a budget too small for any section title, the text is the
//! most critical item alone, cut to the budget. Newest first within each section.

use crate::events::{Category, StoredEvent, correlate, error_target, truncate_str};
use serde::{Deserialize, Serialize};

/// Default byte budget of a snapshot.
pub const DEFAULT_BUDGET: usize = 2048;

/// The smallest budget for which a snapshot of a session with events is never empty (one byte:
/// the first line, which starts with ASCII, cut to the budget).
pub const MIN_NONEMPTY_BUDGET: usize = 1;

/// What a snapshot is built from.
#[derive(Debug, Clone, Default)]
pub struct SnapshotInput {
    /// The agent (`claude`, `codex`, …).
    pub agent: String,
    /// The session's external id.
    pub session_id: String,
    pub project_dir: Option<String>,
    pub title: Option<String>,
    pub git_branch: Option<String>,
    /// The session's stored events in session order, including derived ones from
    /// [`crate::events::correlate`]. When it holds no derived event at all, [`build`] computes
    /// them itself.
    pub events: Vec<StoredEvent>,
}

/// A built snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The text to inject (Markdown, factual statements), at most `budget` bytes.
    pub text: String,
    /// The budget it was built for, in bytes.
    pub budget: usize,
    /// Number of events it was built from.
    pub events: usize,
}

/// An estimate of the tokens of `text` for an LLM tokenizer, without a tokenizer: ASCII at four
/// bytes a token, rounded up, plus one token per non-ASCII character (CJK is about one token a
/// character; for Cyrillic or accented Latin this over-estimates, which is the safe side for a
/// budget). Empty text is 0 tokens.
pub fn estimate_tokens(text: &str) -> usize {
    let ascii = text.bytes().filter(u8::is_ascii).count();
    let other = text.chars().filter(|c| !c.is_ascii()).count();
    ascii.div_ceil(4) + other
}

/// One section of the snapshot.
struct Section {
    title: &'static str,
    /// The `timeline` category with everything of this section.
    category: &'static str,
    /// Share of the budget for rounds 1 and 2, in percent.
    quota: usize,
    /// Largest item, in bytes.
    item_cap: usize,
    items: Vec<String>,
    /// The items shown: (the item within `item_cap`, the text shown, maybe cut).
    chosen: Vec<(String, String)>,
    used: usize,
}

impl Section {
    fn header(&self) -> String {
        format!("## {} [{}]", self.title, self.category)
    }
}

/// Smallest useful cut of an item, in bytes.
const MIN_ITEM: usize = 24;

/// Build the snapshot of `input` within `budget` bytes (UTF-8 bytes of `text`).
pub fn build(input: &SnapshotInput, budget: usize) -> Snapshot {
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

fn fill(sections: &mut [Section], top: String, budget: usize) -> String {
    let line_cost = |s: &str| s.len() + 1;
    // One more byte than the budget: the last line has no newline.
    let limit = budget + 1;
    let mut used = 0usize;
    let keep_top = line_cost(&top) * 6 <= limit;
    if keep_top {
        used += line_cost(&top);
    }
    // Try to add the next item of section `i` within `room` bytes of the budget; returns
    // whether it was added.
    fn add(sec: &mut Section, room: usize, used: &mut usize) -> bool {
        let k = sec.chosen.len();
        let Some(item) = sec.items.get(k) else {
            return false;
        };
        let head = if k == 0 { sec.header().len() + 1 } else { 0 };
        let prefix = 2; // "- "
        let want = truncate_str(item, sec.item_cap);
        let want_full = want.clone();
        let full = head + prefix + want.len() + 1;
        let text = if full <= room {
            want
        } else if room > head + prefix + MIN_ITEM {
            truncate_str(&want, room - head - prefix - 1)
        } else {
            return false;
        };
        let cost = head + prefix + text.len() + 1;
        *used += cost;
        sec.used += cost;
        sec.chosen.push((want_full, text));
        true
    }
    let mut order: Vec<usize> = (0..sections.len()).collect();
    order.sort_by_key(|&i| importance(sections[i].title));
    // Round 1: one item of each section; the most important section with content may use all
    // the room left. If even that does not fit, the text is that item alone (below).
    let mut first = true;
    let mut core_fits = true;
    for &i in &order {
        if sections[i].items.is_empty() {
            continue;
        }
        let quota = sections[i].quota * budget / 100;
        let room = if first {
            limit - used
        } else {
            quota.min(limit - used)
        };
        let added = add(&mut sections[i], room, &mut used);
        if first && !added {
            core_fits = false;
            break;
        }
        first = false;
    }
    // Round 2: up to each quota.
    for &i in order.iter().filter(|_| core_fits) {
        let quota = sections[i].quota * budget / 100;
        while sections[i].used < quota {
            let room = (quota - sections[i].used).min(limit - used);
            if !add(&mut sections[i], room, &mut used) {
                break;
            }
        }
    }
    // Round 3: give cut items back what they lost, then add items while the budget lasts, in
    // order of importance.
    for &i in order.iter().filter(|_| core_fits) {
        for (full, shown) in sections[i].chosen.iter_mut() {
            if shown.len() < full.len() && limit > used {
                let grown = truncate_str(full, shown.len() + (limit - used));
                used = used + grown.len() - shown.len();
                *shown = grown;
            }
        }
    }
    for &i in order.iter().filter(|_| core_fits) {
        while add(&mut sections[i], limit - used, &mut used) {}
    }
    let mut lines: Vec<String> = Vec::new();
    if keep_top {
        lines.push(top.clone());
    }
    for s in sections.iter() {
        if s.chosen.is_empty() {
            continue;
        }
        lines.push(s.header());
        for (_, c) in &s.chosen {
            lines.push(format!("- {c}"));
        }
    }
    let mut text = if core_fits {
        lines.join("\n")
    } else {
        String::new()
    };
    if text.is_empty() && budget > 0 {
        // Too small for any title: the most critical item alone, else the first line, cut.
        text = order
            .iter()
            .find_map(|&i| sections[i].items.first())
            .map(|item| truncate_str(item, budget))
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| truncate_str(&top, budget));
    }
    if text.len() > budget {
        // Never reached by construction; the budget is a hard limit all the same.
        text = truncate_str(&text, budget);
    }
    text
}

fn importance(title: &str) -> usize {
    [
        "Last request",
        "Open tasks",
        "Files changed",
        "Unresolved errors",
        "Decisions",
        "Goal",
        "Notes",
        "Recent git",
        "Earlier requests",
        "Also",
    ]
    .iter()
    .position(|t| *t == title)
    .unwrap_or(99)
}

fn top_line(input: &SnapshotInput, n: usize) -> String {
    let agent = if input.agent.is_empty() {
        "agent"
    } else {
        input.agent.as_str()
    };
    let id = &input.session_id;
    let mut facts = Vec::new();
    // Claude Code records `HEAD` as the branch outside a git repository (and on a detached head):
    // not a branch worth naming.
    if let Some(b) = input
        .git_branch
        .as_deref()
        .filter(|b| !b.is_empty() && *b != "HEAD")
    {
        facts.push(format!("branch {b}"));
    }
    facts.push(format!("{n} events"));
    format!(
        "Working state of {agent} session {id} ({}). More: MCP timeline(session_id=\"{id}\", category=\"<a section's [category]>\") or `memtrail search \"<words>\" --session {id}`.",
        facts.join(", ")
    )
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `path` relative to the project directory when it is inside it.
fn rel(path: &str, project: Option<&str>) -> String {
    if let Some(p) = project
        .map(|p| p.trim_end_matches('/'))
        .filter(|p| !p.is_empty())
        && let Some(r) = path.strip_prefix(p).and_then(|r| r.strip_prefix('/'))
        && !r.is_empty()
    {
        return r.to_string();
    }
    path.to_string()
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
                ("", n) => vec![format!("×{n}")],
                (v, 1) => vec![v.to_string()],
                (v, n) => vec![format!("{v} ×{n}")],
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

/// `+3 -1` → (3, 1).
fn parse_counts(d: &str) -> Option<(usize, usize)> {
    let mut it = d.split_whitespace();
    let p = it.next()?.strip_prefix('+')?.parse().ok()?;
    let m = it.next()?.strip_prefix('-')?.parse().ok()?;
    Some((p, m))
}
