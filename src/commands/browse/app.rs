//! The browser's state and what each key does to it: no terminal and no store here (the
//! worker answers queries, the loop in `mod.rs` carries out [`Effect`]s), so that every screen
//! can be built and drawn in a test.

use super::sanitize::{clean, clean_line};
use super::worker::{HITS_PAGE, MOST_HITS, PAGE, Query, Request, Response, TextKind};
use memtrail_adapters::Agent;
use memtrail_runtime::query::{HL_END, HL_START, Hit, QueryItem, SessionSummary, SessionView};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// The date filter's choices: a label and a number of days back (`None`: any time).
pub const DATES: [(&str, Option<i64>); 5] = [
    ("any time", None),
    ("last 24 h", Some(1)),
    ("last 7 days", Some(7)),
    ("last 30 days", Some(30)),
    ("last 90 days", Some(90)),
];

/// Where keys go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    /// The search line: printable keys edit the query.
    Search,
    Results,
    Detail,
}

/// A dialog over the panes, which takes the keys while it is open.
#[derive(Debug, Clone, PartialEq)]
pub enum Modal {
    None,
    Help,
    /// Typing the find-in-session text (`/`).
    Find,
    /// Waiting for the deletion's details, then asking.
    ConfirmDelete {
        id: String,
        what: Option<String>,
    },
    /// Choosing the agent a handoff is for.
    PickAgent,
}

/// What the loop does for a key, beyond changing the state.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Quit,
    /// Put this id on the clipboard (OSC 52).
    Copy(String),
    /// Show this text in the pager; `title` names it in the status line.
    Page {
        title: String,
        text: String,
    },
}

/// One row of the results pane.
#[derive(Debug, Clone, PartialEq)]
pub enum Row {
    Session(SessionSummary),
    Hit(Hit),
}

impl Row {
    /// The session id and agent of the row.
    pub fn key(&self) -> (&str, &str) {
        match self {
            Row::Session(s) => (&s.session_id, &s.agent),
            Row::Hit(h) => (&h.session_id, &h.agent),
        }
    }
}

/// How a detail line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Title,
    Meta,
    /// A message's heading (role, index, time).
    Heading,
    Body,
    /// A tool call (folded: its name and a summary; unfolded: input and output).
    Tool,
    Note,
}

/// One line of the detail pane before wrapping.
#[derive(Debug, Clone, PartialEq)]
pub struct DocLine {
    pub kind: LineKind,
    pub text: String,
    /// The message it belongs to (0-based index), `None` for the session's header.
    pub message: Option<i64>,
}

/// The session open in the detail pane.
#[derive(Debug, Clone, PartialEq)]
pub struct Detail {
    pub session_id: String,
    pub agent: String,
    /// The message a search hit pointed at: the pane starts there.
    pub target: Option<i64>,
    /// The session and the messages loaded so far (from `view.offset`).
    pub view: Option<SessionView>,
    pub loading: bool,
    pub error: Option<String>,
    /// Lines after wrapping at `width` columns.
    pub lines: Vec<DocLine>,
    pub width: u16,
    pub scroll: usize,
    /// Tool calls shown whole instead of one line each.
    pub unfolded: bool,
    /// Child sessions: which one the next `S` opens.
    pub next_child: usize,
    /// The first page arrived and the pane was scrolled to the target.
    pub positioned: bool,
}

/// The whole state of the browser.
#[derive(Debug)]
pub struct App {
    pub focus: Focus,
    pub modal: Modal,
    pub query: Query,
    /// The agents the `a` key cycles through: those with stored sessions once the worker has
    /// said which ([`Response::Agents`]), every agent until then.
    pub agents: Vec<Agent>,
    /// The agent filter's position in `agents` plus one (0: all agents).
    pub agent_choice: usize,
    /// The date filter's position in [`DATES`].
    pub date_choice: usize,
    pub rows: Vec<Row>,
    pub selected: usize,
    /// Whether the results came from a search (else: the session list).
    pub searching: bool,
    /// More sessions may follow the page(s) shown.
    pub more: bool,
    pub loading: bool,
    pub results_error: Option<String>,
    pub unindexed: i64,
    /// The hits shown were ranked by hybrid search.
    pub hybrid: bool,
    /// Only the newest matches of the hits shown were ranked (a keyword search's bound).
    pub newest_only: bool,
    pub detail: Option<Detail>,
    pub find: String,
    /// Detail lines (wrapped) that hold the find text, in order; the current one.
    pub matches: Vec<usize>,
    pub current_match: Option<usize>,
    pub status: String,
    /// Colours on (NO_COLOR unset and TERM not dumb).
    pub color: bool,
    /// Requests for the worker, taken by the loop.
    pub outbox: Vec<Request>,
    pub generation: u64,
    /// The generation of the results shown (0: none yet).
    pub shown: u64,
    pub detail_generation: u64,
    /// The time "now" for the date filter (ms since the Unix epoch).
    pub now_ms: i64,
    /// The detail pane's height in rows, as last laid out.
    pub detail_height: u16,
    /// A deletion may be asked for (a local store).
    pub can_delete: bool,
}

impl App {
    /// A browser with nothing loaded yet; the first request (the latest sessions) is queued.
    pub fn new(color: bool, now_ms: i64, can_delete: bool) -> App {
        let mut app = App {
            focus: Focus::Search,
            modal: Modal::None,
            query: Query::default(),
            agents: Agent::ALL.to_vec(),
            agent_choice: 0,
            date_choice: 0,
            rows: Vec::new(),
            selected: 0,
            searching: false,
            more: false,
            loading: false,
            results_error: None,
            unindexed: 0,
            newest_only: false,
            hybrid: false,
            detail: None,
            find: String::new(),
            matches: Vec::new(),
            current_match: None,
            status: String::new(),
            color,
            outbox: Vec::new(),
            generation: 0,
            shown: 0,
            detail_generation: 0,
            now_ms,
            detail_height: 20,
            can_delete,
        };
        app.refresh();
        app
    }

    /// Asks for the results of the current query and filters (a new generation: answers to
    /// older ones are dropped).
    pub fn refresh(&mut self) {
        self.generation += 1;
        self.loading = true;
        self.outbox.push(Request::Results {
            generation: self.generation,
            query: self.query.clone(),
            offset: 0,
        });
    }

    /// Whether an answer is awaited (results, a page of messages, a text, a deletion).
    pub fn waiting(&self) -> bool {
        self.loading
            || self.detail.as_ref().is_some_and(|d| d.loading)
            || !self.status.is_empty() && self.status.ends_with('…')
            || matches!(self.modal, Modal::ConfirmDelete { what: None, .. })
    }

    /// The row under the cursor.
    pub fn current(&self) -> Option<&Row> {
        self.rows.get(self.selected)
    }

    /// Applies one answer of the worker; may return an effect (a text for the pager).
    pub fn apply(&mut self, r: Response) -> Option<Effect> {
        match r {
            Response::Sessions {
                generation,
                offset,
                sessions,
            } => {
                if generation != self.generation && generation != 0 {
                    return None;
                }
                self.loading = false;
                self.searching = false;
                self.shown = generation;
                match sessions {
                    Ok(list) => {
                        self.results_error = None;
                        self.more = list.len() == PAGE;
                        if offset == 0 {
                            self.rows.clear();
                            self.selected = 0;
                        }
                        self.rows.extend(list.into_iter().map(Row::Session));
                    }
                    Err(e) => {
                        self.rows.clear();
                        self.results_error = Some(clean_line(&e));
                    }
                }
                self.selected = self.selected.min(self.rows.len().saturating_sub(1));
            }
            Response::Hits {
                generation,
                offset,
                hits,
                unindexed,
                hybrid,
                newest_only,
            } => {
                if generation != self.generation {
                    return None;
                }
                self.loading = false;
                self.searching = true;
                self.shown = generation;
                self.unindexed = unindexed;
                self.hybrid = hybrid;
                self.newest_only = newest_only;
                if offset == 0 {
                    self.selected = 0;
                }
                match hits {
                    Ok(h) => {
                        self.results_error = None;
                        self.more = h.len() >= offset + HITS_PAGE && h.len() < MOST_HITS;
                        self.rows = h.into_iter().map(Row::Hit).collect();
                    }
                    Err(e) => {
                        self.more = false;
                        self.rows.clear();
                        self.results_error = Some(clean_line(&e));
                    }
                }
                self.selected = self.selected.min(self.rows.len().saturating_sub(1));
            }
            Response::Session {
                generation,
                offset,
                view,
            } => {
                if generation != self.detail_generation {
                    return None;
                }
                let width = self.detail.as_ref().map(|d| d.width).unwrap_or(0);
                let d = self.detail.as_mut()?;
                d.loading = false;
                match view {
                    Ok(v) => {
                        d.error = None;
                        match &mut d.view {
                            Some(old) if offset > old.offset => old.messages.extend(v.messages),
                            _ => d.view = Some(v),
                        }
                    }
                    Err(e) => d.error = Some(clean_line(&e)),
                }
                let first_load = !d.positioned;
                d.positioned = true;
                d.lines.clear();
                self.layout(width, self.detail_height);
                let height = self.detail_height as usize;
                if first_load && let Some(d) = self.detail.as_mut() {
                    // The hit at the top of the pane, unless the lines after it do not fill
                    // the pane: then the pane ends with the last line (a short session shows
                    // whole, from its header).
                    d.scroll = d
                        .target
                        .and_then(|t| d.lines.iter().position(|l| l.message == Some(t)))
                        .unwrap_or(0)
                        .min(d.lines.len().saturating_sub(height));
                }
            }
            Response::Text { title, text } => match text {
                Ok(text) => return Some(Effect::Page { title, text }),
                Err(e) => self.status = clean_line(&format!("{title}: {e}")),
            },
            Response::DeleteInfo { id, info } => {
                if let Modal::ConfirmDelete { id: asked, what } = &mut self.modal
                    && *asked == id
                {
                    match info {
                        Ok(i) => *what = Some(delete_question(&i)),
                        Err(e) => {
                            self.modal = Modal::None;
                            self.status = clean_line(&format!("cannot delete {id}: {e}"));
                        }
                    }
                }
            }
            Response::Agents(agents) => {
                // The filter keeps its agent, at its place in the new list (or the list
                // gains it: it may have sessions the list was made before).
                self.agents = agents;
                if let Some(a) = self
                    .query
                    .agent
                    .as_deref()
                    .and_then(|a| a.parse::<Agent>().ok())
                {
                    if !self.agents.contains(&a) {
                        self.agents.push(a);
                    }
                    self.agent_choice = 1 + self.agents.iter().position(|x| *x == a).unwrap_or(0);
                }
            }
            Response::HybridReady => {
                // The search shown was lexical: run it again, hybrid.
                if !self.query.text.trim().is_empty() {
                    self.refresh();
                }
            }
            Response::Deleted { id, result } => {
                match result {
                    Ok(i) => {
                        self.status = clean_line(&format!(
                            "deleted {} session {} ({} messages){}",
                            i.agent,
                            i.session_id,
                            i.messages,
                            if i.wal_kept {
                                "; a reader kept the store's write-ahead log: the text stays \
                                 in its files until the next hook or import folds it back"
                            } else {
                                ""
                            }
                        ));
                        if self
                            .detail
                            .as_ref()
                            .is_some_and(|d| d.session_id == i.session_id)
                        {
                            self.detail = None;
                            self.focus = Focus::Results;
                        }
                    }
                    Err(e) => self.status = clean_line(&format!("cannot delete {id}: {e}")),
                }
                self.refresh();
            }
        }
        None
    }

    /// Handles one key; returns what the loop must do beyond redrawing.
    pub fn key(&mut self, k: KeyEvent) -> Option<Effect> {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && matches!(k.code, KeyCode::Char('c') | KeyCode::Char('q')) {
            return Some(Effect::Quit);
        }
        match self.modal.clone() {
            Modal::Help => {
                self.modal = Modal::None;
                return None;
            }
            Modal::Find => {
                match k.code {
                    KeyCode::Esc => {
                        self.find.clear();
                        self.modal = Modal::None;
                        self.find_matches();
                    }
                    KeyCode::Enter => {
                        self.modal = Modal::None;
                        self.jump_match(true, true);
                    }
                    KeyCode::Backspace => {
                        self.find.pop();
                        self.find_matches();
                        self.jump_match(true, true);
                    }
                    KeyCode::Char(c) if !ctrl => {
                        self.find.push(c);
                        self.find_matches();
                        self.jump_match(true, true);
                    }
                    _ => {}
                }
                return None;
            }
            Modal::ConfirmDelete { id, what } => {
                self.modal = Modal::None;
                if what.is_some() && matches!(k.code, KeyCode::Char('y') | KeyCode::Char('Y')) {
                    self.status = format!("deleting {id}…");
                    self.outbox.push(Request::Delete { id });
                } else {
                    self.status = "nothing deleted".into();
                }
                return None;
            }
            Modal::PickAgent => {
                self.modal = Modal::None;
                if let KeyCode::Char(c) = k.code
                    && let Some(agent) = picked_agent(c)
                    && let Some(row) = self.current_key()
                {
                    self.outbox.push(Request::Text {
                        id: row.0,
                        agent: row.1,
                        kind: TextKind::Handoff(agent),
                    });
                    self.status = "writing the handoff…".into();
                }
                return None;
            }
            Modal::None => {}
        }
        if self.focus == Focus::Search {
            match k.code {
                KeyCode::Char(c) if !ctrl => {
                    self.query.text.push(c);
                    self.refresh();
                }
                KeyCode::Backspace if self.query.text.pop().is_some() => self.refresh(),
                KeyCode::Char('u') if ctrl => {
                    self.query.text.clear();
                    self.refresh();
                }
                KeyCode::Esc | KeyCode::Down | KeyCode::Enter | KeyCode::Tab => {
                    self.focus = Focus::Results;
                }
                _ => {}
            }
            return None;
        }
        // Results and detail share the action keys.
        match k.code {
            KeyCode::Char('q') => return Some(Effect::Quit),
            KeyCode::Char('?') => self.modal = Modal::Help,
            KeyCode::Char('s') => self.focus = Focus::Search,
            KeyCode::Char('a') => {
                self.agent_choice = (self.agent_choice + 1) % (self.agents.len() + 1);
                self.query.agent = self
                    .agent_choice
                    .checked_sub(1)
                    .map(|i| self.agents[i].as_str().to_string());
                self.refresh();
            }
            KeyCode::Char('d') => {
                self.date_choice = (self.date_choice + 1) % DATES.len();
                self.query.since = DATES[self.date_choice]
                    .1
                    .map(|days| self.now_ms - days * 86_400_000);
                self.refresh();
            }
            KeyCode::Char('p') => {
                self.query.project = match (&self.query.project, self.current_project()) {
                    (None, Some(p)) => Some(p),
                    _ => None,
                };
                self.refresh();
            }
            KeyCode::Char('m') => {
                self.query.machine = match (&self.query.machine, self.current_machine()) {
                    (None, Some(m)) => Some(m),
                    _ => None,
                };
                self.refresh();
            }
            KeyCode::Char('o') => self.ask_text(TextKind::Markdown, "opening the session…"),
            KeyCode::Char('r') => self.ask_text(TextKind::Snapshot, "building the snapshot…"),
            KeyCode::Char('h') => {
                if self.current_key().is_some() {
                    self.modal = Modal::PickAgent;
                }
            }
            KeyCode::Char('y') => {
                if let Some((id, _)) = self.current_key() {
                    self.status = format!("copied {}", clean_line(&id));
                    return Some(Effect::Copy(id));
                }
            }
            KeyCode::Char('D') | KeyCode::Delete => {
                if !self.can_delete {
                    self.status = "deleting works on the local store only".into();
                } else if let Some((id, _)) = self.current_key() {
                    self.modal = Modal::ConfirmDelete {
                        id: id.clone(),
                        what: None,
                    };
                    self.outbox.push(Request::DeleteInfo { id });
                }
            }
            KeyCode::Char('P') => self.jump_parent(),
            KeyCode::Char('S') => self.jump_child(),
            _ if self.focus == Focus::Results => self.results_key(k),
            _ => self.detail_key(k),
        }
        None
    }

    fn results_key(&mut self, k: KeyEvent) {
        let last = self.rows.len().saturating_sub(1);
        match k.code {
            KeyCode::Down | KeyCode::Char('j') => self.select(self.selected + 1),
            KeyCode::Up | KeyCode::Char('k') => {
                if self.selected == 0 {
                    self.focus = Focus::Search;
                } else {
                    self.select(self.selected - 1);
                }
            }
            KeyCode::PageDown => self.select(self.selected + 10),
            KeyCode::PageUp => self.select(self.selected.saturating_sub(10)),
            KeyCode::Home | KeyCode::Char('g') => self.select(0),
            KeyCode::End | KeyCode::Char('G') => self.select(last),
            KeyCode::Enter | KeyCode::Right | KeyCode::Char('l') | KeyCode::Tab => {
                if let Some(row) = self.current().cloned() {
                    let (id, agent) = row.key();
                    let target = match &row {
                        Row::Hit(h) => Some(h.message_index),
                        Row::Session(_) => None,
                    };
                    self.open(id.to_string(), agent.to_string(), target);
                    self.focus = Focus::Detail;
                }
            }
            KeyCode::Esc => self.focus = Focus::Search,
            _ => {}
        }
    }

    fn detail_key(&mut self, k: KeyEvent) {
        let Some(d) = self.detail.as_mut() else {
            self.focus = Focus::Results;
            return;
        };
        let page = self.detail_height.max(2) as usize - 1;
        let max = d.lines.len().saturating_sub(1);
        match k.code {
            KeyCode::Down | KeyCode::Char('j') => d.scroll = (d.scroll + 1).min(max),
            KeyCode::Up | KeyCode::Char('k') => d.scroll = d.scroll.saturating_sub(1),
            KeyCode::PageDown | KeyCode::Char(' ') => d.scroll = (d.scroll + page).min(max),
            KeyCode::PageUp => d.scroll = d.scroll.saturating_sub(page),
            KeyCode::Home | KeyCode::Char('g') => {
                d.scroll = 0;
                if d.view.as_ref().is_some_and(|v| v.offset > 0) {
                    // The pane started at a hit: load the session from its start.
                    let (id, agent) = (d.session_id.clone(), d.agent.clone());
                    self.open(id, agent, None);
                    return;
                }
            }
            KeyCode::End | KeyCode::Char('G') => d.scroll = max,
            KeyCode::Char('t') => {
                // Rewrapped at the next layout (the find's matches are counted again there:
                // the pane's title shows them).
                d.unfolded = !d.unfolded;
                d.lines.clear();
                self.status.clear();
            }
            KeyCode::Char('/') => {
                self.find.clear();
                self.modal = Modal::Find;
            }
            KeyCode::Char('n') => self.jump_match(true, false),
            KeyCode::Char('N') => self.jump_match(false, false),
            KeyCode::Esc | KeyCode::Left | KeyCode::Tab | KeyCode::Char('b') => {
                // What was said of the session (a match, a sub-agent) is not of the results.
                self.focus = Focus::Results;
                self.status.clear();
            }
            _ => {}
        }
        self.more_messages();
    }

    /// Moves the cursor to row `i` (kept in range); near the end of the rows, asks for the
    /// next page of sessions or hits.
    fn select(&mut self, i: usize) {
        self.selected = i.min(self.rows.len().saturating_sub(1));
        if self.more && !self.loading && self.selected + 20 >= self.rows.len() {
            self.loading = true;
            self.outbox.push(Request::Results {
                generation: self.generation,
                query: self.query.clone(),
                offset: self.rows.len(),
            });
        }
    }

    /// Opens session `id` of `agent` in the detail pane, at message `target`.
    pub fn open(&mut self, id: String, agent: String, target: Option<i64>) {
        self.detail_generation += 1;
        // What was said of the session open before is not of this one.
        self.status.clear();
        let offset = target.map(|t| (t - 20).max(0)).unwrap_or(0);
        self.outbox.push(Request::Session {
            generation: self.detail_generation,
            id: id.clone(),
            agent: agent.clone(),
            offset,
        });
        self.detail = Some(Detail {
            session_id: id,
            agent,
            target,
            view: None,
            loading: true,
            error: None,
            lines: Vec::new(),
            width: 0,
            scroll: 0,
            unfolded: false,
            next_child: 0,
            positioned: false,
        });
        self.matches.clear();
        self.current_match = None;
    }

    /// Near the end of the loaded messages, asks for the next page.
    fn more_messages(&mut self) {
        let height = self.detail_height as usize;
        let Some(d) = self.detail.as_mut() else {
            return;
        };
        let Some(v) = &d.view else { return };
        let loaded_end = v.offset + v.messages.len() as i64;
        if !d.loading && loaded_end < v.total && d.scroll + 2 * height >= d.lines.len() {
            d.loading = true;
            self.outbox.push(Request::Session {
                generation: self.detail_generation,
                id: d.session_id.clone(),
                agent: d.agent.clone(),
                offset: loaded_end,
            });
        }
    }

    /// The session under the cursor: the open one in the detail pane, else the selected row.
    fn current_key(&self) -> Option<(String, String)> {
        if self.focus == Focus::Detail
            && let Some(d) = &self.detail
        {
            return Some((d.session_id.clone(), d.agent.clone()));
        }
        self.current()
            .map(|r| (r.key().0.to_string(), r.key().1.to_string()))
    }

    fn current_project(&self) -> Option<String> {
        match self.current()? {
            Row::Session(s) => s.project.clone(),
            Row::Hit(h) => h.project.clone(),
        }
    }

    fn current_machine(&self) -> Option<String> {
        match self.current()? {
            Row::Session(s) => Some(s.machine.clone()),
            Row::Hit(h) => Some(h.machine.clone()),
        }
    }

    fn ask_text(&mut self, kind: TextKind, status: &str) {
        if let Some((id, agent)) = self.current_key() {
            self.outbox.push(Request::Text { id, agent, kind });
            self.status = status.into();
        }
    }

    fn jump_parent(&mut self) {
        let parent = self
            .detail
            .as_ref()
            .and_then(|d| d.view.as_ref())
            .and_then(|v| v.session.parent_session_id.clone())
            .or_else(|| match self.current()? {
                Row::Session(s) => s.parent_session_id.clone(),
                Row::Hit(_) => None,
            });
        match (parent, self.current_key()) {
            (Some(p), Some((_, agent))) => {
                self.open(p, agent, None);
                self.focus = Focus::Detail;
            }
            _ => self.status = "this session has no parent session".into(),
        }
    }

    fn jump_child(&mut self) {
        let Some(d) = self.detail.as_mut() else {
            self.status = "open a session first (Enter) to see its sub-agents".into();
            return;
        };
        let Some(children) = d.view.as_ref().map(|v| v.children.clone()) else {
            return;
        };
        if children.is_empty() {
            self.status = "this session has no sub-agent sessions".into();
            return;
        }
        let child = children[d.next_child % children.len()].clone();
        let agent = d.agent.clone();
        let next = d.next_child + 1;
        self.open(child, agent, None);
        self.focus = Focus::Detail;
        self.status = format!(
            "sub-agent session {} of {} (P: back to the parent)",
            (next - 1) % children.len() + 1,
            children.len()
        );
    }

    /// Rebuilds the detail lines for a pane `width` columns wide and `height` rows high when
    /// the width or the content changed; the find matches with them.
    pub fn layout(&mut self, width: u16, height: u16) {
        self.detail_height = height;
        let Some(d) = self.detail.as_mut() else {
            return;
        };
        if d.width == width && !d.lines.is_empty() {
            return;
        }
        // Keep the message at the top of the pane in view across a rewrap.
        let top = d.lines.get(d.scroll).and_then(|l| l.message);
        d.width = width;
        d.lines = wrap(&document(d), width.max(10) as usize);
        if let Some(t) = top {
            d.scroll = d
                .lines
                .iter()
                .position(|l| l.message == Some(t))
                .unwrap_or(0);
        }
        d.scroll = d.scroll.min(d.lines.len().saturating_sub(1));
        let had_match = self.current_match.is_some();
        self.find_matches();
        // The current match stays the one at the top of the pane (its lines moved).
        if had_match && let Some(d) = &self.detail {
            let at = d.scroll;
            self.current_match = self.matches.iter().position(|&m| m >= at);
        }
    }

    /// Recomputes the detail lines holding the find text.
    fn find_matches(&mut self) {
        self.matches.clear();
        self.current_match = None;
        let Some(d) = &self.detail else { return };
        if self.find.is_empty() {
            return;
        }
        let needle: Vec<char> = self.find.chars().collect();
        for (i, l) in d.lines.iter().enumerate() {
            if !find_all(&l.text, &needle).is_empty() {
                self.matches.push(i);
            }
        }
    }

    /// Scrolls to the next (or previous) line holding the find text, two lines of context
    /// above it; `restart` looks from the top of the pane (a new find text).
    fn jump_match(&mut self, forward: bool, restart: bool) {
        let Some(d) = self.detail.as_mut() else {
            return;
        };
        if self.matches.is_empty() {
            if !self.find.is_empty() {
                self.status = format!("not found: {}", clean_line(&self.find));
            }
            return;
        }
        let n = self.matches.len();
        let pick = match (self.current_match, restart) {
            (Some(c), false) if forward => (c + 1) % n,
            (Some(c), false) => (c + n - 1) % n,
            _ => self
                .matches
                .iter()
                .position(|&m| m >= d.scroll)
                .unwrap_or(0),
        };
        self.current_match = Some(pick);
        d.scroll = self.matches[pick].saturating_sub(CONTEXT);
        self.status = format!("match {} of {n}", pick + 1);
    }
}

/// Lines shown above a find match.
const CONTEXT: usize = 2;

/// The confirmation question for deleting `i` (as `memtrail sessions delete` asks it).
fn delete_question(i: &memtrail_runtime::maintenance::SessionInfo) -> String {
    let subs = if i.subagents > 0 {
        format!(
            " and {}",
            crate::output::plural(i.subagents, "sub-agent session", "sub-agent sessions")
        )
    } else {
        String::new()
    };
    let after = match &i.machine {
        Some(label) => format!(
            "It belongs to machine {label}: it will be deleted there and from PostgreSQL at the next sync. This cannot be undone."
        ),
        None => format!(
            "`memtrail sessions capture {}` brings it back while its transcript is still on disk.",
            i.session_id
        ),
    };
    clean_line(&format!(
        "Delete {} session {} ({}; {} messages{subs})? {after}",
        i.agent,
        i.session_id,
        i.title.as_deref().unwrap_or("untitled"),
        i.messages
    ))
}

/// The words a search's hits are highlighted by in the detail pane: its positive terms.
pub fn hit_terms(query: &str) -> Vec<Vec<char>> {
    memtrail_runtime::query::parse_query(query)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|i| match i {
            QueryItem::Term {
                text,
                negated: false,
                ..
            } => Some(text.chars().collect()),
            _ => None,
        })
        .collect()
}

/// The (start, end) character ranges of `needle` in `hay`, compared without case.
pub fn find_all(hay: &str, needle: &[char]) -> Vec<(usize, usize)> {
    let h: Vec<char> = hay.chars().collect();
    let eq = |a: char, b: char| a == b || a.to_lowercase().eq(b.to_lowercase());
    let mut out = Vec::new();
    if needle.is_empty() || needle.len() > h.len() {
        return out;
    }
    let mut i = 0;
    while i + needle.len() <= h.len() {
        if needle.iter().zip(&h[i..]).all(|(&n, &c)| eq(n, c)) {
            out.push((i, i + needle.len()));
            i += needle.len();
        } else {
            i += 1;
        }
    }
    out
}

/// A snippet's parts: (text, highlighted), made safe to draw.
pub fn snippet_parts(snippet: &str) -> Vec<(String, bool)> {
    let mut parts = Vec::new();
    let mut on = false;
    let mut cur = String::new();
    for c in snippet.chars() {
        if c == HL_START || c == HL_END {
            if !cur.is_empty() {
                parts.push((clean_line(&cur), on));
                cur.clear();
            }
            on = c == HL_START;
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        parts.push((clean_line(&cur), on));
    }
    parts
}

/// The detail pane's lines before wrapping: the session's header, then each message loaded
/// (heading, prose, tool calls folded to one line unless `d.unfolded`); all text cleaned.
pub fn document(d: &Detail) -> Vec<DocLine> {
    let mut out = Vec::new();
    let mut push = |kind, text: String, message| {
        out.push(DocLine {
            kind,
            text,
            message,
        })
    };
    if let Some(e) = &d.error {
        push(LineKind::Note, format!("error: {e}"), None);
    }
    let Some(v) = &d.view else {
        if d.loading {
            push(LineKind::Note, "loading…".into(), None);
        }
        return out;
    };
    let s = &v.session;
    push(
        LineKind::Title,
        clean_line(s.title.as_deref().unwrap_or("(untitled session)")),
        None,
    );
    push(
        LineKind::Meta,
        clean_line(&format!("{} · {} · {}", s.session_id, s.agent, s.machine)),
        None,
    );
    if let Some(p) = &s.project {
        push(LineKind::Meta, clean_line(&format!("project {p}")), None);
    }
    push(
        LineKind::Meta,
        format!(
            "{} → {} · {} messages",
            s.started_at
                .as_deref()
                .map(crate::output::short_time)
                .unwrap_or("?".into()),
            s.updated_at
                .as_deref()
                .map(crate::output::short_time)
                .unwrap_or("?".into()),
            s.messages
        ),
        None,
    );
    if let Some(p) = &s.parent_session_id {
        push(LineKind::Meta, clean_line(&format!("parent {p} (P)")), None);
    }
    if !v.children.is_empty() {
        push(
            LineKind::Meta,
            format!(
                "{} (S)",
                crate::output::plural(
                    v.children.len() as u64,
                    "sub-agent session",
                    "sub-agent sessions"
                )
            ),
            None,
        );
    }
    if v.offset > 0 {
        push(
            LineKind::Note,
            format!("… {} earlier messages (g: from the start)", v.offset),
            None,
        );
    }
    for m in &v.messages {
        let who = match (m.role.as_str(), m.kind.as_str()) {
            (_, "summary") => "Compaction summary",
            // Kept by the agent with the MCP tool `remember`: not something it said.
            (_, "note") => "Note",
            ("user", _) => "User",
            ("assistant", _) => "Assistant",
            ("tool", _) => "Tool result",
            ("system", _) => "System",
            _ => "Message",
        };
        let time = m
            .timestamp
            .as_deref()
            .map(|t| format!(" · {}", crate::output::short_time(t)))
            .unwrap_or_default();
        push(
            LineKind::Heading,
            format!("── {who} #{}{time}", m.index),
            Some(m.index),
        );
        if !m.text.is_empty() {
            for l in clean(m.text.trim_end()).split('\n') {
                push(LineKind::Body, l.to_string(), Some(m.index));
            }
        }
        for c in &m.tool_calls {
            let input = clean_line(&c.input.to_string());
            let out_lines = c.output.as_deref().map(|o| o.lines().count()).unwrap_or(0);
            push(
                LineKind::Tool,
                format!(
                    "▸ {} {} [{} of output]",
                    clean_line(&c.name),
                    memtrail_adapters::one_line(&input, 80),
                    crate::output::plural(out_lines as u64, "line", "lines")
                ),
                Some(m.index),
            );
            if d.unfolded
                && let Some(o) = &c.output
            {
                for l in clean(o.trim_end()).split('\n') {
                    push(LineKind::Tool, format!("  │ {l}"), Some(m.index));
                }
            }
        }
    }
    let loaded = v.offset + v.messages.len() as i64;
    if loaded < v.total {
        push(
            LineKind::Note,
            format!(
                "… {} more messages (loading as you scroll)",
                v.total - loaded
            ),
            None,
        );
    }
    out
}

/// `lines` wrapped at `width` columns (display width): a line breaks after its last space, so
/// a word moves to the next line whole; a word longer than the line (a path, a hash) breaks
/// where the line ends, and a character wider than the rest of a line goes to the next. The
/// space a line breaks at is dropped. Grapheme clusters are never split.
pub fn wrap(lines: &[DocLine], width: usize) -> Vec<DocLine> {
    use unicode_segmentation::UnicodeSegmentation;
    use unicode_width::UnicodeWidthStr;
    let mut out = Vec::with_capacity(lines.len());
    for l in lines {
        let line = |text: String| DocLine {
            kind: l.kind,
            text,
            message: l.message,
        };
        let mut cur = String::new();
        let mut w = 0;
        // A grapheme cluster at a time (an emoji ZWJ sequence, a letter and its accents stay
        // together: split, the terminal would draw the parts apart and leave stale cells).
        for g in l.text.graphemes(true) {
            let gw = g.width();
            if w + gw > width && !cur.is_empty() {
                if g == " " {
                    // The break falls on a space: it ends this line.
                    out.push(line(std::mem::take(&mut cur)));
                    w = 0;
                    continue;
                }
                match cur.rfind(' ').filter(|&i| i > 0) {
                    Some(sp) => {
                        let rest = cur.split_off(sp + 1);
                        cur.pop();
                        out.push(line(std::mem::replace(&mut cur, rest)));
                        w = cur.width();
                    }
                    None => {
                        out.push(line(std::mem::take(&mut cur)));
                        w = 0;
                    }
                }
            }
            cur.push_str(g);
            w += gw;
        }
        out.push(line(cur));
    }
    out
}

/// The key that picks the `i`-th agent of [`Agent::ALL`] (0-based) in the handoff picker: `1`
/// to `9`, then `a` to `z` (35 agents; there are 16).
pub fn pick_key(i: usize) -> Option<char> {
    const KEYS: &[u8] = b"123456789abcdefghijklmnopqrstuvwxyz";
    KEYS.get(i).map(|&b| b as char)
}

/// The agent the key `c` picks in the handoff picker (see [`pick_key`]).
fn picked_agent(c: char) -> Option<Agent> {
    (0..Agent::ALL.len())
        .find(|&i| pick_key(i) == Some(c))
        .map(|i| Agent::ALL[i])
}
