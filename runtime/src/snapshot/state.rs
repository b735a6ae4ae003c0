//! A running state of a session's snapshot: what [`super::build`] needs of the session's events,
//! kept so that events appended later are applied to it one by one (O(new events)) instead of
//! reading and correlating every event of the session again. Rendered, it gives the same text,
//! byte for byte, for every budget, as [`super::build`] over the stored events with their
//! correlations ([`crate::events::correlate`]) — the oracle tests (`state_oracle`) check that.
//!
//! Only appending is supported: the caller feeds the stored events in session order
//! (`seq`, `id`), each after every event already applied, and drops the state when anything else
//! happened to the session's events (a delete, an update, an insert before its end). A session
//! whose events cannot be followed exactly this way (a stored derived event, a task call whose
//! events are not contiguous among the task events, an error of a call that already resolved
//! another error) makes [`State::apply`] return `false`: the caller builds from all the events.
//!
//! The state holds only fields of stored events (redacted as stored) and counters.

use super::{
    ALSO_JOINED, Room, Section, SectionItems, distinct_within, file_name, fill, one_line,
    parse_counts, rel, top_line,
};
use crate::events::{
    Category, Event, StoredEvent, correlate_keys::*, error_line, error_target, extract_exit_code,
};
use crate::snapshot::{Snapshot, SnapshotInput};
use std::collections::{HashMap, HashSet};

/// Bumped whenever what the state holds or how it renders changes: a state of another format is
/// built again.
pub(crate) const FORMAT: u64 = 1;

/// The fields of an event that a section's item or a correlation reads.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct Raw {
    pub action: String,
    pub subject: String,
    pub detail: Option<String>,
    pub tool: Option<String>,
}

impl Raw {
    fn of(e: &Event) -> Raw {
        Raw {
            action: e.action.clone(),
            subject: e.subject.clone(),
            detail: e.detail.clone(),
            tool: e.tool.clone(),
        }
    }
    /// As an [`Event`] of category `c` (for the helpers that take one).
    fn event(&self, c: Category) -> Event {
        Event {
            category: c,
            action: self.action.clone(),
            priority: 1,
            subject: self.subject.clone(),
            detail: self.detail.clone(),
            call_id: None,
            tool: self.tool.clone(),
            ts: None,
        }
    }
}

/// A file group of "Files changed" (see `super::sections`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileGroup {
    /// The shortest of its paths: [`State::path`] reads it from [`State::paths`] (`at`, `len`
    /// bytes: one string for every path, not an allocation each: a 10,000-file state is read
    /// and dropped at every snapshot). Its last component ([`file_name`]) is that of the
    /// group's first path, which it was looked up by: paths that are the same ([`same_path`])
    /// end alike.
    pub at: u32,
    pub len: u32,
    /// The action of its newest event (`edit`, `write`, …).
    pub last: Action,
    pub n: u64,
    pub plus: u64,
    pub minus: u64,
    pub counted: bool,
    pub tick: u64,
}

/// A file event's action: one of the usual ones without an allocation, else its own text.
pub(crate) type Action = std::borrow::Cow<'static, str>;

/// `a` as an [`Action`]: borrowed when it is one of the actions file events usually have.
fn action(a: &str) -> Action {
    const USUAL: [&str; 8] = [
        "edit", "write", "create", "delete", "rename", "move", "patch", "modify",
    ];
    match USUAL.iter().find(|&&u| u == a) {
        Some(u) => Action::Borrowed(u),
        None => Action::Owned(a.to_string()),
    }
}

/// The newest error of one (tool, subject), and the position of the last `error_resolved` of
/// that (tool, subject).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ErrorKey {
    pub ord: u64,
    pub raw: Raw,
    pub resolved: Option<u64>,
}

/// An error not resolved yet (correlation), in the order raised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pending {
    pub raw: Raw,
}

/// The open run of calls with one retry key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    pub tool: String,
    pub target: String,
    pub n: u64,
    /// The position of the run's last call's first event.
    pub ord: u64,
}

/// The categories whose sections list their newest distinct events (by action, subject,
/// detail, tool), and `error_resolved` (by subject and tool).
pub(crate) const LISTED: [Category; 10] = [
    Category::Decision,
    Category::Note,
    Category::Git,
    Category::Retry,
    Category::Subagent,
    Category::Rule,
    Category::Skill,
    Category::Mcp,
    Category::Reference,
    Category::ErrorResolved,
];

fn listed(c: Category) -> Option<usize> {
    LISTED.iter().position(|&l| l == c)
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct State {
    /// The project directory the paths were made relative to.
    pub project: Option<String>,
    /// Stored events applied, and derived ones made (closed retry loops, errors resolved).
    pub stored: u64,
    pub derived: u64,
    /// Position counter over stored events and `error_resolved` events (session order).
    pub ord: u64,
    /// Prompts: count, the first, the last three (oldest first).
    pub prompts: u64,
    pub first_prompt: Option<String>,
    pub last_prompts: Vec<String>,
    /// The subject of the last approved plan.
    pub plan: Option<String>,
    /// The task events of the last task call (`None`: no task event yet; `Some(None)`: the last
    /// task event had no call), and every call id that wrote tasks.
    pub task_call: Option<Option<String>>,
    pub tasks: Vec<Raw>,
    pub task_calls: Vec<String>,
    /// File groups, and the count of file events that are not reads.
    pub files: Vec<FileGroup>,
    /// The groups' paths, one after the other ([`FileGroup::at`]); a path replaced by a shorter
    /// one stays until the state is encoded (the encoding holds the groups' paths only).
    pub paths: String,
    pub file_ticks: u64,
    /// Per (tool, subject) of an error.
    pub errors: Vec<ErrorKey>,
    /// Per listed category ([`LISTED`]): its distinct events with the position of the newest.
    pub lists: Vec<Vec<(u64, Raw)>>,
    /// Correlation: calls with an error, calls whose events resolved an error, errors pending.
    pub failed: Vec<String>,
    pub resolvers: Vec<String>,
    pub pending: Vec<Pending>,
    pub run: Option<Run>,
    pub last_call: Option<String>,
    /// The last event applied: (seq, id).
    pub last: Option<(i64, i64)>,
}

/// The state being applied to: the lookup tables, made once per batch of new events.
struct Working<'s> {
    s: &'s mut State,
    /// The file groups by a hash of their last path component.
    /// The file groups by a hash of their last path component: only the groups whose name
    /// hash is one of `file_names` (a batch of 100 events on a 10,000-file state hashes every
    /// group once, but keeps a few).
    file_index: Option<Chains>,
    /// The name hashes of the batch's file events ([`Category::File`], not reads).
    file_names: HashSet<u64, foldhash::fast::FixedState>,
    /// The errors by a hash of (tool, subject).
    error_index: Chains,
    list_index: Vec<Option<HashMap<Raw, usize>>>,
    /// Added to the state's sorted `failed`, `resolvers`, `task_calls` by this batch (merged
    /// into them at its end: the state's lists are not copied into sets for each batch).
    failed: HashSet<String>,
    resolvers: HashSet<String>,
    task_calls: HashSet<String>,
    /// The pending errors by key, alive or not.
    buckets: Option<Chains>,
    alive: Vec<bool>,
    /// How many of `alive` are true.
    open: usize,
}

impl State {
    /// File group `f`'s path.
    pub(crate) fn path(&self, f: &FileGroup) -> &str {
        path_in(&self.paths, f)
    }

    pub(crate) fn new(project: Option<&str>) -> State {
        State {
            project: project.map(str::to_string),
            lists: vec![Vec::new(); LISTED.len()],
            ..State::default()
        }
    }

    /// Apply `events` (stored events of the session, in session order, all after the last one
    /// applied). `false` when the state cannot follow them exactly (it is then left in an
    /// unspecified state and must not be used).
    pub(crate) fn apply(&mut self, events: &[StoredEvent]) -> bool {
        if events.is_empty() {
            return true;
        }
        let mut w = Working {
            file_index: None,
            file_names: HashSet::with_hasher(foldhash::fast::FixedState::with_seed(0)),
            error_index: {
                let mut c = Chains::with_capacity(self.errors.len());
                for (i, e) in self.errors.iter().enumerate() {
                    c.push(error_hash(e.raw.tool.as_deref(), &e.raw.subject), i);
                }
                c
            },
            list_index: vec![None; LISTED.len()],
            failed: HashSet::new(),
            resolvers: HashSet::new(),
            task_calls: HashSet::new(),
            buckets: None,
            alive: vec![true; self.pending.len()],
            open: self.pending.len(),
            s: self,
        };
        let ok = w.apply(events);
        if ok {
            w.finish();
        }
        ok
    }

    /// The snapshot within `budget` bytes; `meta` gives the session's fields (its `events` are
    /// not read).
    pub(crate) fn render(&self, meta: &SnapshotInput, budget: usize) -> Snapshot {
        let open_loop = self.run.as_ref().filter(|r| r.n >= 3);
        let n = (self.stored + self.derived + open_loop.is_some() as u64) as usize;
        let top = top_line(meta, n);
        let text = if n == 0 {
            String::new()
        } else {
            let mut sections = self.sections(meta, Room::new(budget));
            fill(&mut sections, top, budget)
        };
        Snapshot {
            text,
            budget,
            events: n,
        }
    }

    fn sections(&self, meta: &SnapshotInput, room: Room) -> Vec<Section> {
        let project = meta.project_dir.as_deref();
        // Prompts.
        let last_request: Vec<String> = self
            .last_prompts
            .last()
            .map(|s| one_line(s))
            .into_iter()
            .collect();
        let p = self.prompts as usize;
        let earlier: Vec<String> = (1..p.saturating_sub(1))
            .rev()
            .take(2)
            .map(|k| one_line(&self.last_prompts[self.last_prompts.len() - (p - k)]))
            .collect();
        let mut goal = Vec::new();
        if p > 1 {
            goal.push(one_line(self.first_prompt.as_deref().unwrap_or_default()));
        } else if p == 0
            && let Some(t) = meta.title.as_deref().filter(|t| !t.trim().is_empty())
        {
            goal.push(format!("session title: {}", one_line(t)));
        }
        if let Some(plan) = &self.plan {
            goal.push(format!("plan approved: {}", one_line(plan)));
        }

        // Open tasks.
        let mut tasks = Vec::new();
        if !self.tasks.is_empty() {
            let list = &self.tasks;
            let status = |e: &Raw| e.detail.clone().unwrap_or_default();
            let done = list.iter().filter(|e| e.action == "done").count();
            for e in list.iter().filter(|e| status(e) == "in_progress") {
                tasks.push(format!("{} (in progress)", one_line(&e.subject)));
            }
            for e in list
                .iter()
                .filter(|e| e.action != "done" && status(e) != "in_progress")
            {
                tasks.push(format!("{} (pending)", one_line(&e.subject)));
            }
            if done > 0 {
                let names: Vec<String> = list
                    .iter()
                    .filter(|e| e.action == "done")
                    .map(|e| one_line(&e.subject))
                    .collect();
                tasks.push(format!(
                    "done ({done} of {}): {}",
                    list.len(),
                    names.join("; ")
                ));
            }
        }

        // Files changed, newest first.
        let mut order: Vec<&FileGroup> = self.files.iter().collect();
        order.sort_unstable_by_key(|f| std::cmp::Reverse(f.tick));
        let mut files_room = room;
        let files: Vec<String> = order
            .iter()
            .map_while(|f| {
                if files_room.full() {
                    return None;
                }
                let item = super::file_item(
                    self.path(f),
                    &f.last,
                    f.n,
                    f.counted.then_some((f.plus, f.minus)),
                );
                files_room.take(&item);
                Some(item)
            })
            .collect();

        // Unresolved errors, newest first.
        let mut errs: Vec<&ErrorKey> = self.errors.iter().collect();
        errs.sort_unstable_by_key(|e| std::cmp::Reverse(e.ord));
        let mut errors: Vec<String> = Vec::new();
        let mut errors_room = room;
        for k in errs {
            if errors_room.full() {
                break;
            }
            if k.resolved.is_some_and(|r| r > k.ord) {
                continue;
            }
            let ev = k.raw.event(Category::Error);
            let target = rel(error_target(&ev), project);
            let tool = ev.tool.as_deref().unwrap_or("tool");
            let how = if ev.action == "exit" {
                let code = ev
                    .detail
                    .as_deref()
                    .and_then(extract_exit_code)
                    .map(|c| format!(", exit {c}"))
                    .unwrap_or_default();
                format!("{tool}{code}")
            } else {
                tool.to_string()
            };
            let line = ev.detail.as_deref().map(error_line).unwrap_or_default();
            let item = if line.is_empty() {
                format!("`{target}` failed ({how})")
            } else {
                format!("`{target}` failed ({how}): {line}")
            };
            errors_room.take(&item);
            errors.push(item);
        }

        // The newest distinct events of each listed category (the open retry loop included).
        let mut lists: Vec<Vec<(u64, Raw)>> = self.lists.clone();
        if let Some(r) = self.run.as_ref().filter(|r| r.n >= 3) {
            let raw = loop_raw(r);
            let l = &mut lists[listed(Category::Retry).unwrap()];
            l.retain(|(_, x)| *x != raw);
            l.push((r.ord, raw));
        }
        for l in lists.iter_mut() {
            l.sort_by_key(|(o, _)| std::cmp::Reverse(*o));
        }
        let of = |c: Category| -> &[(u64, Raw)] { &lists[listed(c).unwrap()] };
        let newest = |c: Category, room: Option<&mut Room>, f: &dyn Fn(&Raw) -> String| {
            distinct_within(of(c).iter().map(|(_, raw)| f(raw)), room)
        };
        let decisions = newest(Category::Decision, Some(&mut room.clone()), &|e| {
            one_line(&e.subject)
        });
        let notes = newest(Category::Note, Some(&mut room.clone()), &|e| {
            one_line(&e.subject)
        });
        let git = newest(Category::Git, Some(&mut room.clone()), &|e| {
            format!("{}: {}", e.action, one_line(&e.subject))
        });
        let mut also_room = room;
        let mut also: Vec<String> = newest(Category::Retry, Some(&mut also_room), &|e| {
            format!(
                "retry loop: `{}` {}",
                error_target(&e.event(Category::Retry)),
                e.detail.as_deref().unwrap_or_default()
            )
        });
        let mut fixed_seen: HashSet<String> = HashSet::new();
        for (_, r) in of(Category::ErrorResolved) {
            if also_room.full() {
                break;
            }
            let ev = r.event(Category::ErrorResolved);
            let t = rel(error_target(&ev), project).to_string();
            if fixed_seen.insert(t.clone()) {
                let item = format!("fixed: {t}");
                also_room.take(&item);
                also.push(item);
            }
        }
        if !also_room.full() {
            let finished: HashSet<String> = of(Category::Subagent)
                .iter()
                .filter(|(_, e)| e.action == "finished")
                .map(|(_, e)| one_line(&e.subject))
                .collect();
            let launched = newest(Category::Subagent, Some(&mut also_room), &|e| {
                one_line(&e.subject)
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
            let v = newest(c, None, &|e| rel(&e.subject, project).to_string());
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
                format!("{}: {}", e.action, e.subject)
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
}

/// The `retry` event a run of calls makes (its fields that sections read).
fn loop_raw(r: &Run) -> Raw {
    Raw {
        action: "loop".into(),
        subject: format!("{}: {}", r.tool, r.target),
        detail: Some(format!("{} times in a row", r.n)),
        tool: Some(r.tool.clone()),
    }
}

impl Working<'_> {
    fn apply(&mut self, events: &[StoredEvent]) -> bool {
        // Every event after the last one applied, in session order, and in a message after the
        // last one's: a call's events are all in one message (the retry key's scan stops at the
        // message's end).
        let mut prev = self.s.last;
        for (k, e) in events.iter().enumerate() {
            if let Some((seq, id)) = prev {
                let after = if k == 0 {
                    e.seq > seq
                } else {
                    (e.seq, e.id) > (seq, id)
                };
                if !after {
                    return false;
                }
            }
            prev = Some((e.seq, e.id));
        }
        if events
            .iter()
            .any(|e| matches!(e.event.category, Category::ErrorResolved | Category::Retry))
        {
            return false;
        }
        // The calls of errors among the new events: their earlier events must not have resolved
        // anything (an error of a call undoes what its other events resolved).
        for e in events {
            if e.event.category == Category::Error
                && let Some(c) = e.event.call_id.as_deref()
            {
                if in_sorted(&self.s.resolvers, c) || self.resolvers.contains(c) {
                    return false;
                }
                if !in_sorted(&self.s.failed, c) {
                    self.failed.insert(c.to_string());
                }
            }
        }
        let project = self.s.project.clone();
        self.file_names.extend(
            events
                .iter()
                .filter(|e| e.event.category == Category::File && e.event.action != "read")
                .map(|e| name_hash(file_name(rel(&e.event.subject, project.as_deref())))),
        );
        for (i, se) in events.iter().enumerate() {
            if !self.one(events, i, se) {
                return false;
            }
        }
        self.s.last = prev;
        true
    }

    /// Apply stored event `se` (= `events[i]`).
    fn one(&mut self, events: &[StoredEvent], i: usize, se: &StoredEvent) -> bool {
        let e = &se.event;
        let s = &mut *self.s;
        s.stored += 1;
        s.ord += 1;
        let ord = s.ord;
        match e.category {
            Category::Prompt => {
                s.prompts += 1;
                if s.first_prompt.is_none() {
                    s.first_prompt = Some(e.subject.clone());
                }
                s.last_prompts.push(e.subject.clone());
                if s.last_prompts.len() > 3 {
                    s.last_prompts.remove(0);
                }
            }
            Category::Plan if e.action == "approved" => s.plan = Some(e.subject.clone()),
            Category::Task => match e.call_id.as_deref() {
                None => {
                    s.task_call = Some(None);
                    s.tasks = vec![Raw::of(e)];
                }
                Some(c) => {
                    if s.task_call
                        .as_ref()
                        .is_some_and(|t| t.as_deref() == Some(c))
                    {
                        s.tasks.push(Raw::of(e));
                    } else if in_sorted(&s.task_calls, c) || self.task_calls.contains(c) {
                        return false;
                    } else {
                        s.task_call = Some(Some(c.to_string()));
                        s.tasks = vec![Raw::of(e)];
                        self.task_calls.insert(c.to_string());
                    }
                }
            },
            Category::File if e.action != "read" => {
                let project = s.project.as_deref();
                let path = rel(&e.subject, project);
                let (p, m, c) = match e.detail.as_deref().and_then(parse_counts) {
                    Some((p, m)) => (p as u64, m as u64, true),
                    None => (0, 0, false),
                };
                let tick = s.file_ticks;
                s.file_ticks += 1;
                let files = &mut s.files;
                let paths = &mut s.paths;
                let wanted = &self.file_names;
                let index = self.file_index.get_or_insert_with(|| {
                    let mut c = Chains::with_capacity(wanted.len());
                    for (i, f) in files.iter().enumerate() {
                        let h = name_hash(file_name(path_in(paths, f)));
                        if wanted.contains(&h) {
                            c.push(h, i);
                        }
                    }
                    c
                });
                let name = file_name(path);
                let found = index
                    .get(name_hash(name))
                    .filter(|&i| {
                        let p = path_in(paths, &files[i]);
                        file_name(p) == name && crate::events::same_path(p, path)
                    })
                    .min_by_key(|&i| files[i].tick);
                if let Some(i) = found {
                    let f = &mut files[i];
                    if path.len() < f.len as usize {
                        (f.at, f.len) = push_path(paths, path);
                    }
                    f.n += 1;
                    f.plus += p;
                    f.minus += m;
                    f.counted |= c;
                    if f.last != e.action.as_str() {
                        f.last = action(&e.action);
                    }
                    f.tick = tick;
                } else {
                    index.push(name_hash(name), files.len());
                    let (at, len) = push_path(paths, path);
                    files.push(FileGroup {
                        at,
                        len,
                        last: action(&e.action),
                        n: 1,
                        plus: p,
                        minus: m,
                        counted: c,
                        tick,
                    });
                }
            }
            Category::Error => {
                let k = ErrorKey {
                    ord,
                    raw: Raw::of(e),
                    resolved: None,
                };
                let hash = error_hash(e.tool.as_deref(), &e.subject);
                let found = self.error_index.get(hash).find(|&i| {
                    s.errors[i].raw.tool == e.tool && s.errors[i].raw.subject == e.subject
                });
                match found {
                    Some(i) => {
                        let old = s.errors[i].resolved;
                        s.errors[i] = ErrorKey { resolved: old, ..k };
                    }
                    None => {
                        self.error_index.push(hash, s.errors.len());
                        s.errors.push(k);
                    }
                }
            }
            c => {
                if let Some(l) = listed(c) {
                    self.list_put(l, ord, Raw::of(e));
                }
            }
        }
        self.correlate(events, i, se);
        true
    }

    /// Put `raw` in list `l` at position `ord` (moved there when it is in it).
    fn list_put(&mut self, l: usize, ord: u64, raw: Raw) {
        let list = &mut self.s.lists[l];
        let index = self.list_index[l].get_or_insert_with(|| {
            list.iter()
                .enumerate()
                .map(|(i, (_, r))| (r.clone(), i))
                .collect()
        });
        match index.get(&raw) {
            Some(&i) => list[i].0 = ord,
            None => {
                index.insert(raw.clone(), list.len());
                list.push((ord, raw));
            }
        }
    }

    /// The correlations of `se` (= `events[i]`): errors it resolves, the retry run.
    fn correlate(&mut self, events: &[StoredEvent], i: usize, se: &StoredEvent) {
        let e = &se.event;
        // Errors → resolved.
        if e.category == Category::Error {
            if self.buckets.is_none() {
                self.make_buckets();
            }
            let at = self.s.pending.len();
            self.buckets
                .as_mut()
                .unwrap()
                .push(key_hash(&err_key(e)), at);
            self.s.pending.push(Pending { raw: Raw::of(e) });
            self.alive.push(true);
            self.open += 1;
        } else if let Some(call) = e.call_id.as_deref()
            && self.open > 0
            && !in_sorted(&self.s.failed, call)
            && !self.failed.contains(call)
        {
            if self.buckets.is_none() {
                self.make_buckets();
            }
            let buckets = self.buckets.as_ref().unwrap();
            let mut matched: Vec<usize> = Vec::new();
            // A bucket may hold another key's errors (a hash collision): `resolves` holds only
            // for an error of the event's key.
            for key in event_keys(e).into_iter().flatten() {
                matched.extend(buckets.get(key_hash(&key)).filter(|&i| {
                    self.alive[i] && {
                        let err = &self.s.pending[i].raw;
                        let tool = err.tool.as_deref();
                        resolves(tool, crate::events::target_of(tool, &err.subject), e)
                    }
                }));
            }
            matched.sort_unstable();
            matched.dedup();
            if !matched.is_empty() && !in_sorted(&self.s.resolvers, call) {
                self.resolvers.insert(call.to_string());
            }
            let mut seen: HashSet<String> = HashSet::new();
            for i in matched {
                self.alive[i] = false;
                self.open -= 1;
                let err = self.s.pending[i].raw.clone();
                if seen.insert(err.subject.clone()) {
                    let s = &mut *self.s;
                    s.derived += 1;
                    s.ord += 1;
                    let ord = s.ord;
                    if let Some(k) = self
                        .error_index
                        .get(error_hash(err.tool.as_deref(), &err.subject))
                        .find(|&k| {
                            s.errors[k].raw.tool == err.tool
                                && s.errors[k].raw.subject == err.subject
                        })
                    {
                        s.errors[k].resolved = Some(ord);
                    }
                    let raw = Raw {
                        action: "resolved".into(),
                        subject: err.subject.clone(),
                        detail: None,
                        tool: err.tool.clone(),
                    };
                    self.list_put(listed(Category::ErrorResolved).unwrap(), ord, raw);
                }
            }
        }
        // Retry loops: runs of calls with the same key.
        let Some(call) = e.call_id.as_deref() else {
            return;
        };
        if self.s.last_call.as_deref() == Some(call) {
            return;
        }
        let key = events[i..]
            .iter()
            .take_while(|x| x.seq == se.seq)
            .filter(|x| x.event.call_id.as_deref() == Some(call))
            .find_map(|x| retry_key(&x.event));
        self.s.last_call = Some(call.to_string());
        let ord = self.s.ord;
        match (&mut self.s.run, key) {
            (Some(r), Some((tool, target))) if r.tool == tool && r.target == target => {
                r.n += 1;
                r.ord = ord;
            }
            (_, key) => {
                if let Some(r) = self.s.run.take().filter(|r| r.n >= 3) {
                    self.s.derived += 1;
                    self.list_put(listed(Category::Retry).unwrap(), r.ord, loop_raw(&r));
                }
                self.s.run = key.map(|(tool, target)| Run {
                    tool: tool.to_string(),
                    target: target.to_string(),
                    n: 1,
                    ord,
                });
            }
        }
    }

    fn make_buckets(&mut self) {
        let mut b = Chains::with_capacity(self.s.pending.len());
        for (i, p) in self.s.pending.iter().enumerate() {
            if self.alive[i] {
                b.push(
                    key_hash(&err_key_of(p.raw.tool.as_deref(), &p.raw.subject)),
                    i,
                );
            }
        }
        self.buckets = Some(b);
    }

    /// Write the lookup sets back; drop the errors no longer pending.
    fn finish(self) {
        let Working {
            s,
            failed,
            resolvers,
            task_calls,
            alive,
            ..
        } = self;
        let mut keep = alive.iter();
        s.pending.retain(|_| *keep.next().unwrap());
        merge_sorted(&mut s.failed, failed);
        merge_sorted(&mut s.resolvers, resolvers);
        merge_sorted(&mut s.task_calls, task_calls);
    }
}

/// File group `f`'s path in `paths` ([`State::paths`]).
fn path_in<'p>(paths: &'p str, f: &FileGroup) -> &'p str {
    &paths[f.at as usize..f.at as usize + f.len as usize]
}

/// `path` appended to `paths`: its (`at`, `len`).
fn push_path(paths: &mut String, path: &str) -> (u32, u32) {
    let at = paths.len() as u32;
    paths.push_str(path);
    (at, path.len() as u32)
}

/// The hash the lookup tables key by (foldhash, fixed seed: fast on short strings).
fn hash_of<T: std::hash::Hash + ?Sized>(x: &T) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0).hash_one(x)
}

fn name_hash(name: &str) -> u64 {
    hash_of(name)
}

fn error_hash(tool: Option<&str>, subject: &str) -> u64 {
    hash_of(&(tool, subject))
}

fn key_hash(key: &ErrKey<'_>) -> u64 {
    hash_of(key)
}

/// Item indices by a hash of their key, with no allocation per key: each hash's newest entry,
/// and each entry's item and the entry before it of the same hash. A lookup gives the items of
/// the hash, newest first: a superset of the key's (hash collisions), which the caller checks.
struct Chains {
    head: HashMap<u64, u32, foldhash::fast::FixedState>,
    /// (item, the entry before of the same hash or [`Chains::END`]).
    entries: Vec<(u32, u32)>,
}

impl Chains {
    const END: u32 = u32::MAX;

    fn with_capacity(n: usize) -> Chains {
        Chains {
            head: HashMap::with_capacity_and_hasher(n, foldhash::fast::FixedState::with_seed(0)),
            entries: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, hash: u64, item: usize) {
        let entry = self.entries.len() as u32;
        let before = self.head.insert(hash, entry).unwrap_or(Chains::END);
        self.entries.push((item as u32, before));
    }

    fn get(&self, hash: u64) -> impl Iterator<Item = usize> + '_ {
        let mut at = self.head.get(&hash).copied().unwrap_or(Chains::END);
        std::iter::from_fn(move || {
            let (item, before) = *self.entries.get(at as usize)?;
            at = before;
            Some(item as usize)
        })
    }
}

/// Whether `v` (sorted) holds `x`.
fn in_sorted(v: &[String], x: &str) -> bool {
    v.binary_search_by(|s| s.as_str().cmp(x)).is_ok()
}

/// `added` (none of them in `v`) merged into `v`, kept sorted.
fn merge_sorted(v: &mut Vec<String>, added: HashSet<String>) {
    if !added.is_empty() {
        v.extend(added);
        v.sort_unstable();
    }
}

/// The state as bytes ([`State::decode`] reads them back): a format number, then each field;
/// integers as LEB128, strings by length then bytes, options by a tag byte.
impl State {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = Enc(Vec::with_capacity(64 + self.files.len() * 48));
        b.u(FORMAT);
        b.os(self.project.as_deref());
        for v in [self.stored, self.derived, self.ord, self.prompts] {
            b.u(v);
        }
        b.os(self.first_prompt.as_deref());
        b.strs(&self.last_prompts);
        b.os(self.plan.as_deref());
        match &self.task_call {
            None => b.u(0),
            Some(None) => b.u(1),
            Some(Some(c)) => {
                b.u(2);
                b.s(c);
            }
        }
        b.u(self.tasks.len() as u64);
        for t in &self.tasks {
            b.raw(t);
        }
        b.strs(&self.task_calls);
        b.u(self.files.len() as u64);
        for f in &self.files {
            b.s(self.path(f));
            b.s(&f.last);
            for v in [f.n, f.plus, f.minus, f.counted as u64, f.tick] {
                b.u(v);
            }
        }
        b.u(self.file_ticks);
        b.u(self.errors.len() as u64);
        for e in &self.errors {
            b.u(e.ord);
            b.raw(&e.raw);
            b.ou(e.resolved);
        }
        b.u(self.lists.len() as u64);
        for l in &self.lists {
            b.u(l.len() as u64);
            for (o, r) in l {
                b.u(*o);
                b.raw(r);
            }
        }
        b.strs(&self.failed);
        b.strs(&self.resolvers);
        b.u(self.pending.len() as u64);
        for p in &self.pending {
            b.raw(&p.raw);
        }
        match &self.run {
            None => b.u(0),
            Some(r) => {
                b.u(1);
                b.s(&r.tool);
                b.s(&r.target);
                b.u(r.n);
                b.u(r.ord);
            }
        }
        b.os(self.last_call.as_deref());
        match self.last {
            None => b.u(0),
            Some((seq, id)) => {
                b.u(1);
                b.i(seq);
                b.i(id);
            }
        }
        b.0
    }

    /// The state `bytes` hold; `None` when they are not a state of this [`FORMAT`].
    pub(crate) fn decode(bytes: &[u8]) -> Option<State> {
        let mut d = Dec(bytes);
        if d.u()? != FORMAT {
            return None;
        }
        let project = d.os()?;
        let (stored, derived, ord, prompts) = (d.u()?, d.u()?, d.u()?, d.u()?);
        let first_prompt = d.os()?;
        let last_prompts = d.strs()?;
        let plan = d.os()?;
        let task_call = match d.u()? {
            0 => None,
            1 => Some(None),
            2 => Some(Some(d.s()?)),
            _ => return None,
        };
        let tasks = (0..d.len()?).map(|_| d.raw()).collect::<Option<_>>()?;
        let task_calls = d.strs()?;
        // The paths into one string, checked as UTF-8 once: each path's ends must then be
        // character boundaries (a path cut inside a character is not a state of this format).
        let mut arena: Vec<u8> = Vec::new();
        let files: Vec<FileGroup> = (0..d.len()?)
            .map(|_| {
                let path = d.bytes()?;
                let at = u32::try_from(arena.len()).ok()?;
                arena.extend_from_slice(path);
                Some(FileGroup {
                    at,
                    len: u32::try_from(path.len()).ok()?,
                    last: action(d.str()?),
                    n: d.u()?,
                    plus: d.u()?,
                    minus: d.u()?,
                    counted: d.u()? != 0,
                    tick: d.u()?,
                })
            })
            .collect::<Option<_>>()?;
        let paths = String::from_utf8(arena).ok()?;
        if !files.iter().all(|f| {
            paths.is_char_boundary(f.at as usize)
                && paths.is_char_boundary(f.at as usize + f.len as usize)
        }) {
            return None;
        }
        let file_ticks = d.u()?;
        let errors = (0..d.len()?)
            .map(|_| {
                Some(ErrorKey {
                    ord: d.u()?,
                    raw: d.raw()?,
                    resolved: d.ou()?,
                })
            })
            .collect::<Option<_>>()?;
        let lists: Vec<Vec<(u64, Raw)>> = (0..d.len()?)
            .map(|_| {
                (0..d.len()?)
                    .map(|_| Some((d.u()?, d.raw()?)))
                    .collect::<Option<_>>()
            })
            .collect::<Option<_>>()?;
        if lists.len() != LISTED.len() {
            return None;
        }
        let failed = d.strs()?;
        let resolvers = d.strs()?;
        // Searched by bisection: sorted, as they are encoded.
        if ![&task_calls, &failed, &resolvers]
            .iter()
            .all(|v| v.windows(2).all(|w| w[0] < w[1]))
        {
            return None;
        }
        let pending = (0..d.len()?)
            .map(|_| Some(Pending { raw: d.raw()? }))
            .collect::<Option<_>>()?;
        let run = match d.u()? {
            0 => None,
            1 => Some(Run {
                tool: d.s()?,
                target: d.s()?,
                n: d.u()?,
                ord: d.u()?,
            }),
            _ => return None,
        };
        let last_call = d.os()?;
        let last = match d.u()? {
            0 => None,
            1 => Some((d.i()?, d.i()?)),
            _ => return None,
        };
        d.0.is_empty().then_some(State {
            project,
            stored,
            derived,
            ord,
            prompts,
            first_prompt,
            last_prompts,
            plan,
            task_call,
            tasks,
            task_calls,
            files,
            paths,
            file_ticks,
            errors,
            lists,
            failed,
            resolvers,
            pending,
            run,
            last_call,
            last,
        })
    }
}

struct Enc(Vec<u8>);

impl Enc {
    fn u(&mut self, mut v: u64) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.0.push(byte);
                return;
            }
            self.0.push(byte | 0x80);
        }
    }
    fn i(&mut self, v: i64) {
        self.u(((v << 1) ^ (v >> 63)) as u64);
    }
    fn s(&mut self, s: &str) {
        self.u(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn os(&mut self, s: Option<&str>) {
        match s {
            None => self.u(0),
            Some(s) => {
                self.u(1);
                self.s(s);
            }
        }
    }
    fn ou(&mut self, v: Option<u64>) {
        match v {
            None => self.u(0),
            Some(v) => {
                self.u(1);
                self.u(v);
            }
        }
    }
    fn strs(&mut self, v: &[String]) {
        self.u(v.len() as u64);
        for s in v {
            self.s(s);
        }
    }
    fn raw(&mut self, r: &Raw) {
        self.s(&r.action);
        self.s(&r.subject);
        self.os(r.detail.as_deref());
        self.os(r.tool.as_deref());
    }
}

struct Dec<'a>(&'a [u8]);

impl<'a> Dec<'a> {
    fn u(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.0.split_first()?;
            self.0 = rest;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    fn i(&mut self) -> Option<i64> {
        let v = self.u()?;
        Some(((v >> 1) as i64) ^ -((v & 1) as i64))
    }
    /// A count of items that follow, each at least one byte.
    fn len(&mut self) -> Option<usize> {
        let n = usize::try_from(self.u()?).ok()?;
        (n <= self.0.len()).then_some(n)
    }
    /// A string's bytes, not checked.
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u()?).ok()?;
        if n > self.0.len() {
            return None;
        }
        let (s, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(s)
    }
    fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }
    fn s(&mut self) -> Option<String> {
        self.str().map(str::to_string)
    }
    fn os(&mut self) -> Option<Option<String>> {
        match self.u()? {
            0 => Some(None),
            1 => Some(Some(self.s()?)),
            _ => None,
        }
    }
    fn ou(&mut self) -> Option<Option<u64>> {
        match self.u()? {
            0 => Some(None),
            1 => Some(Some(self.u()?)),
            _ => None,
        }
    }
    fn strs(&mut self) -> Option<Vec<String>> {
        (0..self.len()?).map(|_| self.s()).collect()
    }
    fn raw(&mut self) -> Option<Raw> {
        Some(Raw {
            action: self.s()?,
            subject: self.s()?,
            detail: self.os()?,
            tool: self.os()?,
        })
    }
}

#[cfg(test)]
mod state_oracle {
    use super::*;
    use crate::snapshot::build;
    use crate::snapshot::tests::{Lcg, random_input};

    /// `input`'s stored events (its derived ones dropped), in session order.
    fn stored(input: &SnapshotInput) -> Vec<StoredEvent> {
        let mut v: Vec<StoredEvent> = input
            .events
            .iter()
            .filter(|e| !matches!(e.event.category, Category::ErrorResolved | Category::Retry))
            .cloned()
            .collect();
        v.sort_by_key(|e| (e.seq, e.id));
        v
    }

    /// The events with call ids made unique per message (as agents write them), half the time.
    fn realistic(g: &mut Lcg, mut v: Vec<StoredEvent>) -> Vec<StoredEvent> {
        if g.below(2) == 0 {
            for e in &mut v {
                if let Some(c) = &e.event.call_id {
                    e.event.call_id = Some(format!("{}-{c}", e.seq));
                }
            }
        }
        v
    }

    /// As `resume::snapshot_input` gives them: the stored events with their correlations.
    fn with_correlations(stored: &[StoredEvent]) -> Vec<StoredEvent> {
        let mut all = stored.to_vec();
        all.extend(crate::events::correlate(stored));
        all.sort_by_key(|e| (e.seq, e.id));
        all
    }

    fn budget(g: &mut Lcg) -> usize {
        match g.below(4) {
            0 => g.below(64),
            1 => g.below(600),
            2 => 16 * 1024,
            _ => g.below(8193),
        }
    }

    /// The state applied in random batches (each cut at a message's end), encoded and decoded
    /// between batches, renders what `build` gives over the events applied so far, for random
    /// budgets; or says it cannot follow them.
    #[test]
    fn a_state_applied_in_batches_renders_what_build_gives() {
        let mut g = Lcg(0x7374_6174);
        let (mut followed, mut refused, mut compared) = (0, 0, 0);
        for round in 0..600 {
            let input = random_input(&mut g);
            let events = realistic(&mut g, stored(&input));
            let meta = SnapshotInput {
                events: Vec::new(),
                ..input.clone()
            };
            let mut state = State::new(input.project_dir.as_deref());
            let mut at = 0;
            let mut ok = true;
            while at < events.len() && ok {
                // The next batch: up to a message's end.
                let mut end = (at + 1 + g.below(40)).min(events.len());
                while end < events.len() && events[end].seq == events[end - 1].seq {
                    end += 1;
                }
                ok = state.apply(&events[at..end]);
                if !ok {
                    break;
                }
                at = end;
                let bytes = state.encode();
                let back = State::decode(&bytes).expect("decodes");
                // The same state (its paths kept compact: replaced ones are left out).
                assert_eq!(back.encode(), bytes, "round {round}");
                assert_eq!(
                    back.files.iter().map(|f| back.path(f)).collect::<Vec<_>>(),
                    state
                        .files
                        .iter()
                        .map(|f| state.path(f))
                        .collect::<Vec<_>>(),
                    "round {round}"
                );
                state = back;
                let full = SnapshotInput {
                    events: with_correlations(&events[..at]),
                    ..meta.clone()
                };
                for _ in 0..3 {
                    let b = budget(&mut g);
                    assert_eq!(
                        state.render(&meta, b),
                        build(&full, b),
                        "round {round}, {at} events, budget {b}"
                    );
                    compared += 1;
                }
            }
            if ok {
                followed += 1;
            } else {
                refused += 1;
            }
        }
        // Most sessions are followed to their end (the comparisons are not vacuous).
        assert!(
            followed > 400 && compared > 3000,
            "{followed} {refused} {compared}"
        );
    }

    /// Events applied out of order, or to a message already applied, are refused.
    #[test]
    fn a_state_refuses_what_is_not_an_append() {
        let mut g = Lcg(42);
        let input = random_input(&mut g);
        let events = stored(&input);
        let mut s = State::new(None);
        assert!(s.apply(&events[..1]));
        assert!(!s.clone().apply(&events[..1]));
        let mut same_message = events[0].clone();
        same_message.id += 1000;
        assert!(!s.clone().apply(&[same_message]));
    }
}
