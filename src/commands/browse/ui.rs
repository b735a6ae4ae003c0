//! Drawing the browser: the search line, the filters, the results, the detail pane, the
//! status line and the keys, and the dialogs over them. Every text drawn went through
//! [`super::sanitize`] first.

use super::app::{App, DATES, Focus, LineKind, Modal, Row, find_all, hit_terms, snippet_parts};
use super::sanitize::clean_line;
use memtrail_adapters::Agent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph, Wrap};

/// The areas of one frame.
pub struct Areas {
    pub search: Rect,
    pub filters: Rect,
    pub results: Rect,
    pub detail: Rect,
    pub status: Rect,
    pub keys: Rect,
}

/// Splits the screen: search (3 rows), filters (1), results | detail (the rest: 40 % | 60 %),
/// status (1), keys (1).
pub fn areas(area: Rect) -> Areas {
    let [search, filters, body, status, keys] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let [results, detail] =
        Layout::horizontal([Constraint::Percentage(40), Constraint::Percentage(60)]).areas(body);
    Areas {
        search,
        filters,
        results,
        detail,
        status,
        keys,
    }
}

/// The inner size (columns, rows) of the detail pane in `area`: where its lines wrap.
pub fn detail_inner(area: Rect) -> (u16, u16) {
    let d = areas(area).detail;
    (d.width.saturating_sub(2), d.height.saturating_sub(2))
}

/// The styles of one frame: colours unless NO_COLOR, else bold, reverse and underline only.
struct Styles {
    color: bool,
}

impl Styles {
    fn focus(&self, on: bool) -> Style {
        match (on, self.color) {
            (true, true) => Style::new().fg(Color::Cyan),
            (true, false) => Style::new().add_modifier(Modifier::BOLD),
            _ => Style::new(),
        }
    }
    fn hit(&self) -> Style {
        if self.color {
            Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
        }
    }
    fn found(&self) -> Style {
        if self.color {
            Style::new().bg(Color::Yellow).fg(Color::Black)
        } else {
            Style::new().add_modifier(Modifier::REVERSED)
        }
    }
    fn dim(&self) -> Style {
        if self.color {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new()
        }
    }
    fn key(&self) -> Style {
        if self.color {
            Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::BOLD)
        }
    }
    fn line(&self, kind: LineKind) -> Style {
        match kind {
            LineKind::Title => Style::new().add_modifier(Modifier::BOLD),
            LineKind::Heading if self.color => {
                Style::new().fg(Color::Green).add_modifier(Modifier::BOLD)
            }
            LineKind::Heading => Style::new().add_modifier(Modifier::BOLD),
            LineKind::Tool if self.color => Style::new().fg(Color::Magenta),
            LineKind::Meta | LineKind::Note => self.dim(),
            _ => Style::new(),
        }
    }
}

/// Draws the whole screen for `app`.
pub fn draw(f: &mut Frame, app: &App) {
    let st = Styles { color: app.color };
    let a = areas(f.area());
    // Search line.
    let title = match (app.loading, app.searching && app.hybrid) {
        (true, _) => " Search (searching…) ",
        (false, true) => " Search (hybrid: ≈ found by meaning alone) ",
        (false, false) => " Search ",
    };
    let search = Paragraph::new(Line::from(vec![
        Span::raw(clean_line(&app.query.text)),
        Span::styled(
            if app.focus == Focus::Search {
                "▏"
            } else {
                ""
            },
            st.focus(true),
        ),
    ]))
    .block(
        Block::new()
            .borders(Borders::ALL)
            .title(title)
            .border_style(st.focus(app.focus == Focus::Search)),
    );
    f.render_widget(search, a.search);
    // Filters.
    let agent = app.query.agent.as_deref().unwrap_or("all");
    let filters = Line::from(vec![
        Span::styled(" a", st.key()),
        Span::raw(format!(" agent: {agent}  ")),
        Span::styled("p", st.key()),
        Span::raw(format!(
            " project: {}  ",
            clean_line(app.query.project.as_deref().unwrap_or("all"))
        )),
        Span::styled("m", st.key()),
        Span::raw(format!(
            " machine: {}  ",
            clean_line(app.query.machine.as_deref().unwrap_or("all"))
        )),
        Span::styled("d", st.key()),
        Span::raw(format!(" date: {}", DATES[app.date_choice].0)),
    ]);
    f.render_widget(Paragraph::new(filters), a.filters);
    draw_results(f, app, &st, a.results);
    draw_detail(f, app, &st, a.detail);
    // Status and keys.
    let status = if let Some(e) = &app.results_error {
        format!("error: {e}")
    } else if app.unindexed > 0 && app.searching {
        format!(
            "{} new messages are not searchable yet (the store is busy)",
            app.unindexed
        )
    } else if app.newest_only && app.searching && app.status.is_empty() {
        format!(
            "ranked the newest {} matches only: more words or a filter reach older ones",
            memtrail_runtime::query::SEARCH_CANDIDATES
        )
    } else {
        app.status.clone()
    };
    // Statuses quote session ids and titles: cleaned like all transcript text.
    f.render_widget(
        Paragraph::new(format!(" {}", clean_line(&status))),
        a.status,
    );
    let keys: &[(&str, &str)] = match (&app.modal, app.focus) {
        (Modal::Find, _) => &[("Enter", "find"), ("Esc", "cancel")],
        (_, Focus::Search) => &[
            ("type", "search"),
            ("↓/Enter", "results"),
            ("^U", "clear"),
            ("^C", "quit"),
        ],
        (_, Focus::Results) => &[
            ("↑↓", "move"),
            ("Enter", "open"),
            ("s", "search"),
            ("o", "pager"),
            ("y", "copy id"),
            ("r", "resume"),
            ("h", "handoff"),
            ("D", "delete"),
            ("?", "help"),
            ("q", "quit"),
        ],
        (_, Focus::Detail) => &[
            ("↑↓", "scroll"),
            ("/", "find"),
            ("n/N", "next/prev"),
            ("t", "tools"),
            ("P/S", "parent/sub"),
            ("o", "pager"),
            ("Esc", "back"),
            ("?", "help"),
            ("q", "quit"),
        ],
    };
    let mut spans = Vec::new();
    for (k, what) in keys {
        spans.push(Span::styled(format!(" {k}"), st.key()));
        spans.push(Span::raw(format!(" {what} ")));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), a.keys);
    match &app.modal {
        Modal::Help => draw_help(f, &st),
        Modal::ConfirmDelete { what, .. } => {
            let text = match what {
                Some(q) => format!("{q}\n\ny: delete   any other key: keep it"),
                None => "Reading what would be deleted…".into(),
            };
            popup(f, " Delete ", &text, 64, fit_height(&text, 62) + 2);
        }
        Modal::PickAgent => {
            let mut text = String::from("Write a handoff for:\n\n");
            for (i, a) in Agent::ALL.iter().enumerate() {
                if let Some(k) = super::app::pick_key(i) {
                    text.push_str(&format!("{k}  {}\n", a.as_str()));
                }
            }
            popup(f, " Handoff --to ", &text, 34, Agent::ALL.len() as u16 + 5);
        }
        Modal::Find | Modal::None => {}
    }
}

/// An RFC 3339 time as a hit shows it: `MM-DD HH:MM` in `this_year` (`YYYY`), else
/// `YYYY-MM-DD`; `t` itself when it is not that shape.
fn compact_time(t: &str, this_year: &str) -> String {
    match (t.get(..4), t.get(5..16), t.get(..10)) {
        (Some(y), Some(md_hm), _) if y == this_year => md_hm.replace('T', " "),
        (_, _, Some(day)) => day.to_string(),
        _ => t.to_string(),
    }
}

fn draw_results(f: &mut Frame, app: &App, st: &Styles, area: Rect) {
    let title = if app.searching {
        format!(" Hits ({}) ", app.rows.len())
    } else {
        format!(
            " Sessions ({}{}) ",
            app.rows.len(),
            if app.more { "+" } else { "" }
        )
    };
    let block = Block::new()
        .borders(Borders::ALL)
        .title(title)
        .border_style(st.focus(app.focus == Focus::Results));
    if app.rows.is_empty() {
        let text = if app.loading {
            "loading…"
        } else if app.searching {
            "No matches."
        } else {
            "No sessions."
        };
        f.render_widget(Paragraph::new(text).block(block), area);
        return;
    }
    let width = area.width.saturating_sub(2) as usize;
    let this_year = memtrail_adapters::format_rfc3339_ms(app.now_ms)
        .get(..4)
        .unwrap_or_default()
        .to_string();
    let items: Vec<ListItem> = app
        .rows
        .iter()
        .map(|r| match r {
            Row::Session(s) => {
                let head = format!(
                    "  {} {} {} msgs  ",
                    s.updated_at
                        .as_deref()
                        .map(crate::output::short_time)
                        .unwrap_or("?".into()),
                    clean_line(&s.agent),
                    s.messages,
                );
                // A project folder cut keeps its end (`…/service-a`): what tells projects apart.
                let room =
                    width.saturating_sub(unicode_width::UnicodeWidthStr::width(head.as_str()));
                let place = clean_line(s.project.as_deref().unwrap_or(&s.session_id));
                ListItem::new(vec![
                    Line::raw(clean_line(s.title.as_deref().unwrap_or("(untitled)"))),
                    Line::styled(format!("{head}{}", keep_end(&place, room)), st.dim()),
                ])
            }
            Row::Hit(h) => {
                let mut snippet = vec![Span::raw("  ")];
                let mut used = 2;
                for (i, (text, on)) in snippet_parts(h.snippet.trim_start())
                    .into_iter()
                    .enumerate()
                {
                    if used >= width {
                        break;
                    }
                    let text = if i == 0 {
                        text.trim_start().to_string()
                    } else {
                        text
                    };
                    used += text.chars().count();
                    snippet.push(if on {
                        Span::styled(text, st.hit())
                    } else {
                        Span::raw(text)
                    });
                }
                // What tells hits apart first (a narrow pane cuts the title, not these): when,
                // which agent, which message, and a hit found by meaning alone.
                ListItem::new(vec![
                    Line::from(vec![
                        Span::styled(
                            format!(
                                "{} {} #{}{} ",
                                h.timestamp
                                    .as_deref()
                                    .map(|t| compact_time(t, &this_year))
                                    .unwrap_or("?".into()),
                                clean_line(&h.agent),
                                h.message_index,
                                if h.matched == Some(memtrail_runtime::query::Matched::Meaning) {
                                    " ≈"
                                } else {
                                    ""
                                }
                            ),
                            st.dim(),
                        ),
                        Span::raw(clean_line(h.title.as_deref().unwrap_or("(untitled)"))),
                    ]),
                    Line::from(snippet),
                ])
            }
        })
        .collect();
    let list = List::new(items)
        .block(block)
        .highlight_style(Style::new().add_modifier(if app.focus == Focus::Results {
            Modifier::REVERSED
        } else {
            Modifier::BOLD
        }));
    let mut state = ListState::default().with_selected(Some(app.selected));
    f.render_stateful_widget(list, area, &mut state);
}

fn draw_detail(f: &mut Frame, app: &App, st: &Styles, area: Rect) {
    let mut block = Block::new()
        .borders(Borders::ALL)
        .border_style(st.focus(app.focus == Focus::Detail));
    let Some(d) = &app.detail else {
        let block = block.title(" Session ");
        f.render_widget(
            Paragraph::new("Enter on a session or a hit opens it here.").block(block),
            area,
        );
        return;
    };
    let find: Vec<char> = app.find.chars().collect();
    let title = if matches!(app.modal, Modal::Find) || !app.find.is_empty() {
        format!(
            " Session · find: {}{} ",
            clean_line(&app.find),
            match app.current_match {
                Some(i) => format!(" ({}/{})", i + 1, app.matches.len()),
                None if !app.find.is_empty() => " (0)".to_string(),
                None => String::new(),
            }
        )
    } else {
        " Session ".to_string()
    };
    block = block.title(title);
    let terms = hit_terms(&app.query.text);
    let height = area.height.saturating_sub(2) as usize;
    let lines: Vec<Line> = d
        .lines
        .iter()
        .skip(d.scroll)
        .take(height)
        .map(|l| styled_line(&l.text, st.line(l.kind), &terms, &find, st))
        .collect();
    f.render_widget(Paragraph::new(lines).block(block), area);
}

/// A detail line with the search's terms and the find text highlighted.
fn styled_line<'a>(
    text: &'a str,
    base: Style,
    terms: &[Vec<char>],
    find: &[char],
    st: &Styles,
) -> Line<'a> {
    let n = text.chars().count();
    // Per character: 0 plain, 1 a search term, 2 the find text.
    let mut mark = vec![0u8; n];
    for t in terms {
        for (s, e) in find_all(text, t) {
            mark[s..e].iter_mut().for_each(|m| *m = 1);
        }
    }
    for (s, e) in find_all(text, find) {
        mark[s..e].iter_mut().for_each(|m| *m = 2);
    }
    if mark.iter().all(|&m| m == 0) {
        return Line::styled(text, base);
    }
    let chars: Vec<char> = text.chars().collect();
    let mut spans = Vec::new();
    let mut start = 0;
    for i in 1..=n {
        if i == n || mark[i] != mark[start] {
            let s: String = chars[start..i].iter().collect();
            spans.push(Span::styled(
                s,
                match mark[start] {
                    1 => base.patch(st.hit()),
                    2 => base.patch(st.found()),
                    _ => base,
                },
            ));
            start = i;
        }
    }
    Line::from(spans)
}

fn draw_help(f: &mut Frame, _st: &Styles) {
    popup(
        f,
        " Keys ",
        super::HELP,
        72,
        super::HELP.lines().count() as u16 + 2,
    );
}

/// Rows `text` takes wrapped at `width` columns (at word boundaries, as the popup wraps it:
/// one row more per paragraph than a plain division, for the words pushed down).
fn fit_height(text: &str, width: usize) -> u16 {
    text.split('\n')
        .map(|l| {
            let n = l.chars().count();
            if n <= width { 1 } else { n / width + 2 }
        })
        .sum::<usize>()
        .min(u16::MAX as usize) as u16
}

/// A centred box `w`×`h` (at most the screen) with `text`.
fn popup(f: &mut Frame, title: &str, text: &str, w: u16, h: u16) {
    let area = f.area();
    let w = w.min(area.width);
    let h = h.min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(text.to_string())
            .wrap(Wrap { trim: false })
            .block(Block::new().borders(Borders::ALL).title(title.to_string())),
        r,
    );
}

/// `text` cut to at most `width` columns from its start, its end kept (`…/service-a`); unchanged
/// when it fits.
pub fn keep_end(text: &str, width: usize) -> String {
    use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};
    if text.width() <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut kept: Vec<char> = Vec::new();
    let mut used = 1; // the `…`
    for c in text.chars().rev() {
        let w = c.width().unwrap_or(0);
        if used + w > width {
            break;
        }
        used += w;
        kept.push(c);
    }
    std::iter::once('…').chain(kept.into_iter().rev()).collect()
}
