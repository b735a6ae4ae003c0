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
//! - src/lib.rs (2 changes, +3 -1)  (edited twice; `written`/`deleted` said)
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

use crate::events::{ALL_CATEGORIES, Category, StoredEvent, correlate, error_target, truncate_str};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

#[cfg(test)]
mod reference;
pub(crate) mod state;
#[cfg(test)]
mod store_oracle;

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

/// The items of each section, newest or most important first, as a build (the full one over
/// the stored events, or the running state's) found them; [`SectionItems::into_sections`] lays
/// them out in the snapshot's order with each section's share of the budget.
pub(crate) struct SectionItems {
    pub(crate) last_request: Vec<String>,
    pub(crate) tasks: Vec<String>,
    pub(crate) files: Vec<String>,
    pub(crate) errors: Vec<String>,
    pub(crate) decisions: Vec<String>,
    pub(crate) goal: Vec<String>,
    pub(crate) earlier: Vec<String>,
    pub(crate) notes: Vec<String>,
    pub(crate) git: Vec<String>,
    pub(crate) also: Vec<String>,
}

impl SectionItems {
    /// The ten sections: (title, `timeline` category, share of the budget in percent, largest
    /// item in bytes, items).
    fn into_sections(self) -> Vec<Section> {
        let sec = |title, category, quota, item_cap, items: Vec<String>| Section {
            title,
            category,
            quota,
            item_cap,
            items,
            chosen: Vec::new(),
            used: 0,
        };
        vec![
            sec("Last request", "prompt", 18, 600, self.last_request),
            sec("Open tasks", "task", 18, 200, self.tasks),
            sec("Files changed", "file", 18, 200, self.files),
            sec("Unresolved errors", "error", 14, 260, self.errors),
            sec("Decisions", "decision", 12, 260, self.decisions),
            sec("Goal", "prompt", 8, 300, self.goal),
            sec("Earlier requests", "prompt", 3, 300, self.earlier),
            sec("Notes", "note", 6, 260, self.notes),
            sec("Recent git", "git", 4, 160, self.git),
            sec("Also", "timeline", 2, 200, self.also),
        ]
    }
}

/// The distinct strings of `items` (newest first), while `room` lasts when one is given: each
/// one kept is charged to it. `room` is checked before each item is made, so an item past a
/// full room is never computed.
fn distinct_within(
    mut items: impl Iterator<Item = String>,
    mut room: Option<&mut Room>,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    while !room.as_ref().is_some_and(|r| r.full()) {
        let Some(s) = items.next() else { break };
        if seen.insert(s.clone()) {
            if let Some(r) = room.as_mut() {
                r.take(&s);
            }
            out.push(s);
        }
    }
    out
}

/// The categories whose subjects "Also" joins on one line each, with the line's label.
pub(crate) const ALSO_JOINED: [(Category, &str); 3] = [
    (Category::Rule, "rules read"),
    (Category::Skill, "skills used"),
    (Category::Mcp, "MCP tools used"),
];

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
///
/// Cost: one pass over the events plus work proportional to what can be shown (see `Room`),
/// except for the files changed, whose counts need each file event once.
pub fn build(input: &SnapshotInput, budget: usize) -> Snapshot {
    let has_derived = input
        .events
        .iter()
        .any(|e| matches!(e.event.category, Category::ErrorResolved | Category::Retry));
    let merged: Vec<StoredEvent>;
    let events: &[StoredEvent] = if has_derived {
        &input.events
    } else {
        let derived = correlate(&input.events);
        let sorted = input.events.is_sorted_by_key(|e| (e.seq, e.id));
        if derived.is_empty() && sorted {
            &input.events
        } else {
            let mut all = input.events.clone();
            all.extend(derived);
            // Stable: a derived event goes after the events of its place.
            all.sort_by_key(|e| (e.seq, e.id));
            merged = all;
            &merged
        }
    };
    let mut sections = sections(input, events, Room::new(budget));
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
    facts.push(format!("{n} event{}", if n == 1 { "" } else { "s" }));
    format!(
        "Working state of {agent} session {id} ({}). More: MCP timeline(session_id=\"{id}\", category=\"<a section's [category]>\") or `memtrail search \"<words>\" --session {id}`.",
        facts.join(", ")
    )
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `path` relative to the project directory when it is inside it.
fn rel<'a>(path: &'a str, project: Option<&str>) -> &'a str {
    if let Some(p) = project
        .map(|p| p.trim_end_matches('/'))
        .filter(|p| !p.is_empty())
        && let Some(r) = path.strip_prefix(p).and_then(|r| r.strip_prefix('/'))
        && !r.is_empty()
    {
        return r;
    }
    path
}

/// A lower bound of what a section's items cost against the budget, to stop making items that
/// cannot be shown. `fill` shows the first items of a section (newest first), each costing at
/// least `- `, a newline and `min(its length, SHOWN_FLOOR)` bytes (whole, or cut to at least
/// that), all within `budget + 1` bytes. So once the floors of the items made add up to more
/// than `budget + 1`, the items shown are among them, and so is the next one `fill` asks for:
/// the lists cut there give the same text as the whole lists (tested against the reference).
#[derive(Clone, Copy)]
struct Room {
    spent: usize,
    limit: usize,
}

/// The shortest text of an item that `fill` shows cut: cut to at least `MIN_ITEM` bytes, less up
/// to 3 bytes to a char boundary and 3 for `…`, plus the `…`.
const SHOWN_FLOOR: usize = MIN_ITEM - 3;

impl Room {
    fn new(budget: usize) -> Room {
        Room {
            spent: 0,
            limit: budget + 1,
        }
    }
    /// No further item can be shown.
    fn full(&self) -> bool {
        self.spent > self.limit
    }
    fn take(&mut self, item: &str) {
        self.spent += 3 + item.len().min(SHOWN_FLOOR);
    }
}

/// The items of each section, newest first; long lists stop where `room` says no more can be
/// shown.
fn sections(input: &SnapshotInput, events: &[StoredEvent], room: Room) -> Vec<Section> {
    let project = input.project_dir.as_deref();
    // The events of each category, in session order (one pass).
    let mut by: Vec<Vec<&StoredEvent>> = vec![Vec::new(); ALL_CATEGORIES.len()];
    // The errors by index; for each (tool, subject) of an `error_resolved`, its last index.
    let mut error_at: Vec<usize> = Vec::new();
    let mut resolved_until: HashMap<(Option<&str>, &str), usize> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        let ev = &e.event;
        match ev.category {
            Category::Error => error_at.push(i),
            Category::ErrorResolved => {
                resolved_until.insert((ev.tool.as_deref(), ev.subject.as_str()), i);
            }
            _ => {}
        }
        by[ev.category as usize].push(e);
    }
    let of = |c: Category| -> &[&StoredEvent] { &by[c as usize] };

    // Prompts: the last request; up to two before it (not the first: that is the goal).
    let prompts = of(Category::Prompt);
    let last_request: Vec<String> = prompts
        .last()
        .map(|e| one_line(&e.event.subject))
        .into_iter()
        .collect();
    let earlier: Vec<String> = (1..prompts.len().saturating_sub(1))
        .rev()
        .take(2)
        .map(|k| one_line(&prompts[k].event.subject))
        .collect();
    let mut goal = Vec::new();
    if prompts.len() > 1 {
        goal.push(one_line(&prompts[0].event.subject));
    } else if prompts.is_empty()
        && let Some(t) = input.title.as_deref().filter(|t| !t.trim().is_empty())
    {
        goal.push(format!("session title: {}", one_line(t)));
    }
    if let Some(e) = of(Category::Plan)
        .iter()
        .rev()
        .find(|e| e.event.action == "approved")
    {
        goal.push(format!("plan approved: {}", one_line(&e.event.subject)));
    }

    // Open tasks: the latest todo list (the task events of the last call that wrote tasks).
    let mut tasks = Vec::new();
    if let Some(&last) = of(Category::Task).last() {
        let call = last.event.call_id.as_deref();
        let list: Vec<&StoredEvent> = if call.is_some() {
            of(Category::Task)
                .iter()
                .filter(|e| e.event.call_id.as_deref() == call)
                .copied()
                .collect()
        } else {
            vec![last]
        };
        fn status(e: &StoredEvent) -> &str {
            e.event.detail.as_deref().unwrap_or("")
        }
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

    // Files changed, newest first, one line per path. An event counts for the least recently
    // touched file of the same path ([`crate::events::same_path`]); two paths that are the same
    // have the same last component, so candidates are looked up by it.
    struct F<'a> {
        path: &'a str,
        last: &'a str,
        n: usize,
        plus: usize,
        minus: usize,
        counted: bool,
        /// When it was last touched (the list's order).
        tick: usize,
    }
    let mut files: Vec<F> = Vec::new();
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (tick, e) in of(Category::File)
        .iter()
        .filter(|e| e.event.action != "read")
        .enumerate()
    {
        let path = rel(&e.event.subject, project);
        let (p, m, c) = match e.event.detail.as_deref().and_then(parse_counts) {
            Some((p, m)) => (p, m, true),
            None => (0, 0, false),
        };
        let candidates = by_name.entry(file_name(path)).or_default();
        let found = candidates
            .iter()
            .copied()
            .filter(|&i| crate::events::same_path(files[i].path, path))
            .min_by_key(|&i| files[i].tick);
        if let Some(i) = found {
            let f = &mut files[i];
            if path.len() < f.path.len() {
                f.path = path;
            }
            f.n += 1;
            f.plus += p;
            f.minus += m;
            f.counted |= c;
            f.last = &e.event.action;
            f.tick = tick;
        } else {
            candidates.push(files.len());
            files.push(F {
                path,
                last: &e.event.action,
                n: 1,
                plus: p,
                minus: m,
                counted: c,
                tick,
            });
        }
    }
    files.sort_unstable_by_key(|f| std::cmp::Reverse(f.tick));
    let mut files_room = room;
    let files: Vec<String> = files
        .iter()
        .map_while(|f| {
            if files_room.full() {
                return None;
            }
            let item = file_item(
                f.path,
                f.last,
                f.n as u64,
                f.counted.then_some((f.plus as u64, f.minus as u64)),
            );
            files_room.take(&item);
            Some(item)
        })
        .collect();

    // Unresolved errors, newest first, one per target: an error is resolved when a later
    // `error_resolved` has its subject and tool.
    let mut errors: Vec<String> = Vec::new();
    let mut errors_room = room;
    let mut seen: HashSet<(Option<&str>, &str)> = HashSet::new();
    for &i in error_at.iter().rev() {
        if errors_room.full() {
            break;
        }
        let ev = &events[i].event;
        let key = (ev.tool.as_deref(), ev.subject.as_str());
        if !seen.insert(key) || resolved_until.get(&key).is_some_and(|&r| r > i) {
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
        let item = if line.is_empty() {
            format!("`{target}` failed ({how})")
        } else {
            format!("`{target}` failed ({how}): {line}")
        };
        errors_room.take(&item);
        errors.push(item);
    }

    // The distinct items of the events of category `c`, newest first, while `room` lasts (when
    // given). Two events alike in action, subject, detail and tool give the same item.
    let newest =
        |c: Category, room: Option<&mut Room>, f: &dyn Fn(&StoredEvent) -> String| -> Vec<String> {
            let mut raw = HashSet::new();
            let events = of(c).iter().rev().filter(|e| {
                let ev = &e.event;
                raw.insert((
                    ev.action.as_str(),
                    ev.subject.as_str(),
                    ev.detail.as_deref(),
                    ev.tool.as_deref(),
                ))
            });
            distinct_within(events.map(|e| f(e)), room)
        };
    let decisions = newest(Category::Decision, Some(&mut room.clone()), &|e| {
        one_line(&e.event.subject)
    });
    let notes = newest(Category::Note, Some(&mut room.clone()), &|e| {
        one_line(&e.event.subject)
    });
    let git = newest(Category::Git, Some(&mut room.clone()), &|e| {
        format!("{}: {}", e.event.action, one_line(&e.event.subject))
    });

    // Also: retry loops, fixed errors, sub-agents, rules, skills, MCP, references.
    let mut also_room = room;
    let mut also: Vec<String> = newest(Category::Retry, Some(&mut also_room), &|e| {
        format!(
            "retry loop: `{}` {}",
            error_target(&e.event),
            e.event.detail.as_deref().unwrap_or_default()
        )
    });
    let mut fixed_seen: HashSet<&str> = HashSet::new();
    for r in of(Category::ErrorResolved).iter().rev() {
        if also_room.full() {
            break;
        }
        let t = rel(error_target(&r.event), project);
        if fixed_seen.insert(t) {
            let item = format!("fixed: {t}");
            also_room.take(&item);
            also.push(item);
        }
    }
    if !also_room.full() {
        let finished: HashSet<String> = of(Category::Subagent)
            .iter()
            .filter(|e| e.event.action == "finished")
            .map(|e| one_line(&e.event.subject))
            .collect();
        let launched = newest(Category::Subagent, Some(&mut also_room), &|e| {
            one_line(&e.event.subject)
        });
        also.extend(launched.into_iter().map(|s| {
            if finished.contains(&s) {
                format!("sub-agent finished: {s}")
            } else {
                format!("sub-agent launched: {s}")
            }
        }));
    }
    let joined = |c: Category, label: &str| -> Option<String> {
        let v = newest(c, None, &|e| rel(&e.event.subject, project).to_string());
        (!v.is_empty()).then(|| format!("{label}: {}", v.join(", ")))
    };
    for (c, label) in ALSO_JOINED {
        if also_room.full() {
            break;
        }
        if let Some(item) = joined(c, label) {
            also_room.take(&item);
            also.push(item);
        }
    }
    if !also_room.full() {
        also.extend(newest(Category::Reference, Some(&mut also_room), &|e| {
            format!("{}: {}", e.event.action, e.event.subject)
        }));
    }

    SectionItems {
        last_request,
        tasks,
        files,
        errors,
        decisions,
        goal,
        earlier,
        notes,
        git,
        also,
    }
    .into_sections()
}

/// One item of "Files changed": `path (n changes, last verb, +plus -minus)`, where `last` is
/// the file's last action ("edited" goes without saying), `n` how many actions it had (said
/// from 2), and `counts` the lines added and removed when every action's diff was counted (not
/// shown for a deleted file). E.g. `src/lib.rs (2 changes, +3 -1)`, `a.js (2 changes, last
/// deleted)`, `b.md (written, +4 -0)`.
pub(crate) fn file_item(path: &str, last: &str, n: u64, counts: Option<(u64, u64)>) -> String {
    let verb = if last == "edited" { "" } else { last };
    // `deleted ×2` read as "deleted twice" for a file written once, then deleted.
    let mut facts: Vec<String> = match (verb, n) {
        ("", 1) => vec![],
        ("", n) => vec![format!("{n} changes")],
        (v, 1) => vec![v.to_string()],
        (v, n) => vec![format!("{n} changes, last {v}")],
    };
    if let Some((plus, minus)) = counts.filter(|_| last != "deleted") {
        facts.push(format!("+{plus} -{minus}"));
    }
    if facts.is_empty() {
        path.to_string()
    } else {
        format!("{path} ({})", facts.join(", "))
    }
}

/// The last component of a path (after `./` prefixes): what two paths that name the same file
/// ([`crate::events::same_path`]) have in common.
fn file_name(p: &str) -> &str {
    let p = p.trim_start_matches("./");
    p.rsplit('/').next().unwrap_or(p)
}

/// `+3 -1` → (3, 1).
fn parse_counts(d: &str) -> Option<(usize, usize)> {
    let mut it = d.split_whitespace();
    let p = it.next()?.strip_prefix('+')?.parse().ok()?;
    let m = it.next()?.strip_prefix('-')?.parse().ok()?;
    Some((p, m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Event;

    /// A small deterministic generator (LCG, Knuth's MMIX constants).
    pub(super) struct Lcg(pub(super) u64);
    impl Lcg {
        pub(super) fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) as usize % n.max(1)
        }
        pub(super) fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
            v[self.below(v.len())]
        }
    }

    /// Subjects that collide on purpose: the same file written four ways, commands that fail
    /// then pass, prompts and decisions repeated with other spacing, multi-byte text.
    const SUBJECTS: &[&str] = &[
        "src/a.rs",
        "./src/a.rs",
        "/home/user/p/src/a.rs",
        "a.rs",
        "lib/a.rs",
        "/home/user/p/src/b.rs",
        "src/b.rs",
        "/elsewhere/src/b.rs",
        "/home/user/p/",
        "./",
        "",
        "cargo test",
        "shell: cargo test",
        "edit: src/a.rs",
        "read: ./src/a.rs",
        "fix  the\tparser",
        "fix the parser",
        "日本語のテスト ошибка 🧪",
        "don't touch the API",
        "https://example.com/x",
        "owner/repo#12",
    ];
    const DETAILS: &[&str] = &[
        "+3 -1",
        "+10 -0",
        "in_progress",
        "pending",
        "Exit code 101\nerror[E0425]: cannot find value `x`",
        "exit 1",
        "3 times in a row",
        "",
    ];
    const ACTIONS: &[&str] = &[
        "read", "edited", "written", "deleted", "created", "updated", "done", "exit", "tool", "ok",
        "failed", "commit", "approved", "launched", "finished", "url",
    ];

    pub(super) fn random_input(g: &mut Lcg) -> SnapshotInput {
        let n = match g.below(4) {
            0 => g.below(8),
            1 => g.below(60),
            _ => g.below(400),
        };
        // All categories, or a few (so that one section has more items than can be shown).
        let cats: Vec<Category> = match g.below(3) {
            0 => ALL_CATEGORIES.to_vec(),
            _ => (0..1 + g.below(3))
                .map(|_| ALL_CATEGORIES[g.below(ALL_CATEGORIES.len())])
                .collect(),
        };
        let mut events: Vec<StoredEvent> = (0..n)
            .map(|i| {
                let category = cats[g.below(cats.len())];
                let subject = match g.below(8) {
                    0 => format!("{} {}", g.pick(SUBJECTS), g.pick(SUBJECTS)).repeat(g.below(40)),
                    // Many distinct short items: more than a small budget can show.
                    1..=3 => format!(
                        "{}{}",
                        g.pick(&["x", "./x", "/home/user/p/x", "x/"]),
                        g.below(300)
                    ),
                    _ => g.pick(SUBJECTS).to_string(),
                };
                StoredEvent {
                    id: i as i64 + 1,
                    seq: i as i64 / 3,
                    message_id: format!("m{}", i / 3),
                    event: Event {
                        category,
                        action: g.pick(ACTIONS).into(),
                        priority: 1 + g.below(4) as u8,
                        subject,
                        detail: (g.below(3) > 0).then(|| g.pick(DETAILS).into()),
                        call_id: (g.below(5) > 0).then(|| format!("c{}", g.below(12))),
                        tool: (g.below(5) > 0)
                            .then(|| g.pick(&["shell", "edit", "read", "write", "todo"]).into()),
                        ts: Some(i as i64),
                    },
                }
            })
            .collect();
        match g.below(3) {
            // As the store gives them: with their correlations.
            0 => {
                let derived = correlate(&events);
                events.extend(derived);
                events.sort_by_key(|e| (e.seq, e.id));
            }
            // Out of order.
            1 if n > 1 => events.swap(0, n - 1),
            _ => {}
        }
        SnapshotInput {
            agent: g.pick(&["claude", "", "codex"]).into(),
            session_id: "s1".into(),
            project_dir: [None, Some("/home/user/p"), Some("/home/user/p/")][g.below(3)]
                .map(str::to_string),
            title: [None, Some("a  title"), Some(" ")][g.below(3)].map(str::to_string),
            git_branch: [None, Some("main"), Some("HEAD")][g.below(3)].map(str::to_string),
            events,
        }
    }

    #[test]
    fn build_matches_the_reference_byte_for_byte() {
        let mut g = Lcg(0x6d65_6d74);
        for round in 0..400 {
            let input = random_input(&mut g);
            for _ in 0..4 {
                let budget = match g.below(4) {
                    0 => g.below(64),
                    1 => g.below(600),
                    2 => 16 * 1024,
                    _ => g.below(8193),
                };
                assert_eq!(
                    build(&input, budget),
                    reference::build(&input, budget),
                    "round {round}, budget {budget}"
                );
            }
        }
    }

    /// A file written, then deleted: two changes, the last a delete (it read "deleted ×2",
    /// taken for "deleted twice"; found by a new user's walkthrough).
    #[test]
    fn a_file_item_counts_changes_and_names_the_last() {
        assert_eq!(
            file_item("hello.js", "deleted", 2, Some((1, 0))),
            "hello.js (2 changes, last deleted)"
        );
        assert_eq!(
            file_item("src/lib.rs", "edited", 3, Some((5, 2))),
            "src/lib.rs (3 changes, +5 -2)"
        );
        assert_eq!(
            file_item("b.md", "written", 1, Some((4, 0))),
            "b.md (written, +4 -0)"
        );
        assert_eq!(file_item("c.rs", "edited", 1, None), "c.rs");
    }

    #[test]
    fn a_category_parses_back_from_its_name() {
        for c in ALL_CATEGORIES {
            assert_eq!(Category::parse(c.as_str()), Some(c));
        }
        assert_eq!(Category::parse("files"), None);
        assert_eq!(Category::parse(""), None);
    }
}
