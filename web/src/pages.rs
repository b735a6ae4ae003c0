//! The pages, as maud templates. maud escapes every value spliced into the HTML (`&`, `<`,
//! `>`, `"`); nothing here uses `PreEscaped` on store text. Transcript text is shown as text
//! (`white-space: pre-wrap`), never as HTML or Markdown, and no `href` is built from it: links
//! are this server's own paths with percent-encoded query values.

use crate::security::encode;
use crate::{App, Found, MESSAGES_PER_PAGE, ModeState, SearchParams, SessionsParams};
use axum::http::StatusCode;
use maud::{DOCTYPE, Markup, html};
use memtrail_adapters::{Agent, ToolCall};
use memtrail_runtime::query::{HL_END, HL_START, MessageView, SessionSummary, SessionView};
use memtrail_runtime::resume::Timeline;
use memtrail_runtime::snapshot::Snapshot;

/// Most events listed on a session's page.
pub(crate) const MAX_EVENTS: usize = 500;
/// Tool outputs and texts longer than this (characters) are folded, the start shown.
const FOLD_CHARS: usize = 1500;
/// Roles the filters offer.
const ROLES: [&str; 4] = ["user", "assistant", "tool", "system"];

/// The page around `body`: the header with the navigation, the scripts (files of this server
/// only), the title `title`; `nav` is the current section.
pub(crate) fn layout(title: &str, nav: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                // htmx 4's own indicator style sheet is not needed (style.css has it); going back
                // to an earlier search reloads that page from the server (a whole page).
                meta name="htmx-config" content=r#"{"includeIndicatorCSS":false,"history":"reload"}"#;
                title { (title) " · memtrail" }
                link rel="stylesheet" href="/assets/style.css";
                script src="/assets/htmx.min.js" defer {}
                script src="/assets/app.js" defer {}
            }
            body {
                header.top {
                    a.brand href="/" { "memtrail" }
                    nav aria-label="main" {
                        @for (href, name) in [("/", "Search"), ("/sessions", "Sessions"), ("/analytics", "Analytics"), ("/status", "Status")] {
                            @if name == nav {
                                a href=(href) aria-current="page" { (name) }
                            } @else {
                                a href=(href) { (name) }
                            }
                        }
                    }
                }
                main id="main" { (body) }
            }
        }
    }
}

/// An error page.
pub(crate) fn error_page(status: StatusCode, message: &str) -> Markup {
    layout(
        status.canonical_reason().unwrap_or("Error"),
        "",
        html! {
            h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or("")) }
            p.error { (message) }
        },
    )
}

/// `2026-03-02T09:00:00.120Z` as `2026-03-02 09:00`; other text as it is.
fn short_time(ts: Option<&str>) -> String {
    match ts {
        Some(t) if t.len() >= 16 && t.is_char_boundary(16) => t[..16].replace('T', " "),
        Some(t) => t.to_string(),
        None => "?".into(),
    }
}

fn session_href(id: &str, agent: &str) -> String {
    format!("/session?id={}&agent={}", encode(id), encode(agent))
}

fn select(name: &str, label: &str, current: &str, options: &[&str]) -> Markup {
    html! {
        label {
            (label) " "
            select name=(name) {
                option value="" { "any" }
                @for o in options {
                    option value=(o) selected[*o == current] { (o) }
                }
            }
        }
    }
}

fn agent_names() -> Vec<&'static str> {
    Agent::ALL.iter().map(|a| a.as_str()).collect()
}

/// The agent filter's choices: the agents with stored sessions (`with_sessions`, in the
/// registry's order) and the one filtered on now; every agent when the store has no session
/// (or none could be read).
pub(crate) fn agent_choices(with_sessions: &[Agent], current: &str) -> Vec<&'static str> {
    if with_sessions.is_empty() {
        return agent_names();
    }
    Agent::ALL
        .iter()
        .filter(|a| with_sessions.contains(a) || a.as_str() == current)
        .map(|a| a.as_str())
        .collect()
}

/// The search page: the form (search as you type through htmx; a plain GET form without
/// script) and the results.
pub(crate) fn search_page(
    _app: &App,
    p: &SearchParams,
    modes: &ModeState,
    results: Option<&Found>,
    agents: &[&str],
) -> Markup {
    layout(
        if p.q.is_empty() { "Search" } else { &p.q },
        "Search",
        html! {
            h1.visually-hidden { "Search" }
            form id="search" role="search" action="/search" method="get"
                hx-get="/search" hx-trigger="input changed delay:250ms, change, submit"
                hx-sync="this:replace" hx-target="#results" hx-push-url="true" {
                div.query {
                    input id="q" type="search" name="q" value=(p.q) autofocus
                        placeholder="Search every session (words, \"a phrase\", prefix*, -exclude)"
                        aria-label="Search" autocomplete="off";
                    button type="submit" { "Search" }
                }
                div.filters {
                    (select("agent", "Agent", &p.agent, agents))
                    label { "Project " input type="text" name="project" value=(p.project) placeholder="/path/to/project"; }
                    label { "Machine " input type="text" name="machine" value=(p.machine) size="10"; }
                    (select("role", "Role", &p.role, &ROLES))
                    label { "Since " input type="text" name="since" value=(p.since) placeholder="7d, 2026-01-31" size="10"; }
                    label { "Until " input type="text" name="until" value=(p.until) size="10"; }
                    (mode_select(p, modes))
                    label {
                        "Sort "
                        select name="sort" {
                            option value="" selected[p.sort != "newest"] { "most relevant" }
                            option value="newest" selected[p.sort == "newest"] { "newest" }
                        }
                    }
                }
            }
            div id="results" aria-live="polite" { (search_results(p, results)) }
        },
    )
}

/// The mode selector: keyword, semantic, hybrid when search by meaning can run (the model
/// named); else disabled, keyword only, with why and what to run.
fn mode_select(p: &SearchParams, modes: &ModeState) -> Markup {
    const MODES: [(&str, &str); 3] = [
        ("keyword", "keyword"),
        ("semantic", "by meaning"),
        ("hybrid", "hybrid (both)"),
    ];
    html! {
        @match modes {
            Ok(model) => label title=(format!("search by meaning with {model}")) {
                "Mode "
                select name="mode" id="mode" {
                    @for (v, name) in MODES {
                        option value=(v) selected[p.mode == v || ((p.mode.is_empty() || p.mode == "lexical") && v == "keyword")] { (name) }
                    }
                }
            },
            Err(why) => span.mode-off {
                label { "Mode " select name="mode" id="mode" disabled aria-describedby="mode-why" { option value="keyword" selected { "keyword" } } }
                " " span.hint id="mode-why" { (with_code(why)) }
            },
        }
    }
}

/// The results part of the search page (what htmx swaps in).
pub(crate) fn search_results(p: &SearchParams, results: Option<&Found>) -> Markup {
    html! {
        @match results {
            None => p.hint { "Type to search. Every word must match; "
                code { "\"quoted phrase\"" } ", " code { "prefix*" } ", " code { "-word" } " and " code { "OR" } " work." }
            Some(Found { hits, unindexed, newest_only, mode, refused }) => {
                @if *unindexed > 0 {
                    p.note { (unindexed) " new messages are not searched yet (the store is busy); search again in a moment." }
                }
                @if let Some(why) = refused {
                    p.empty.refused { "Nothing searched: " (why) "." }
                } @else if hits.is_empty() {
                    p.empty { "No matches for " q { (p.q) } "." }
                } @else {
                    @if *mode != crate::Mode::Keyword {
                        p.ranked id="ranked" { "Ranked " (if *mode == crate::Mode::Semantic { "by meaning" } else { "by words and meaning (hybrid)" }) "." }
                    }
                    p.count { (hits.len()) @if hits.len() == crate::SEARCH_LIMIT { "+" } @if hits.len() == 1 { " hit" } @else { " hits" } }
                    @if *newest_only {
                        p.hint #newest-only { "Only the newest " (memtrail_runtime::query::SEARCH_CANDIDATES) " matches" @if crate::filtered(p) { " that pass the filters" } " were ranked; older messages may hold these words too: add words, or narrow by " (crate::narrowing_hint(p)) ", to reach them." }
                    }
                    ol.hits {
                        @for h in hits {
                            li.hit {
                                a.hit-link href=(format!("{}&at={}#m{}", session_href(&h.session_id, &h.agent), h.message_index, h.message_index)) {
                                    span.title { (h.title.as_deref().unwrap_or("(untitled)")) }
                                }
                                div.meta {
                                    span.badge.agent { (h.agent) } " "
                                    span class=(format!("badge role-{}", css_word(&h.role))) { (h.role) } " "
                                    @if *mode == crate::Mode::Hybrid && h.matched == Some(memtrail_runtime::query::Matched::Meaning) {
                                        span.badge.by-meaning title="Found by meaning alone: not among the best keyword matches" { "by meaning" } " "
                                    }
                                    span { (h.project.as_deref().unwrap_or("?")) } " · "
                                    span { (h.machine) } " · "
                                    time { (short_time(h.timestamp.as_deref())) } " · "
                                    span { "message #" (h.message_index) }
                                }
                                p.snippet { (snippet(&h.snippet)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A snippet with its matched terms in `<mark>`: the text between the store's markers,
/// each piece escaped.
pub(crate) fn snippet(s: &str) -> Markup {
    let mut pieces: Vec<(bool, &str)> = Vec::new();
    let mut marked = false;
    let mut rest = s;
    while let Some(i) = rest.find([HL_START, HL_END]) {
        if i > 0 {
            pieces.push((marked, &rest[..i]));
        }
        marked = rest[i..].starts_with(HL_START);
        rest = &rest[i + 1..];
    }
    if !rest.is_empty() {
        pieces.push((marked, rest));
    }
    html! {
        @for (m, t) in pieces {
            @if m { mark { (t) } } @else { (t) }
        }
    }
}

/// A value as a CSS class word: letters, digits, `-` and `_` kept, the rest dropped.
fn css_word(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect()
}

/// The sessions list: `rows` (one page, most recently updated first), sub-agent sessions
/// listed under their parent when it is on the page.
pub(crate) fn sessions_page(
    _app: &App,
    p: &SessionsParams,
    page: usize,
    rows: &[SessionSummary],
    more: bool,
    agents: &[&str],
) -> Markup {
    let is_child_here = |s: &SessionSummary| {
        s.parent_session_id.as_ref().is_some_and(|pid| {
            rows.iter()
                .any(|r| &r.session_id == pid && r.agent == s.agent)
        })
    };
    let query = |page: usize| {
        format!(
            "/sessions?agent={}&project={}&machine={}&page={page}",
            encode(&p.agent),
            encode(&p.project),
            encode(&p.machine)
        )
    };
    layout(
        "Sessions",
        "Sessions",
        html! {
            h1 { "Sessions" }
            // What a link says was deleted is shown only when it has a session id's shape: a
            // crafted link (`?deleted=Your+data+was+sent+to…`) puts no sentence on the page.
            @if id_shaped(&p.deleted) {
                p.note role="status" { "Deleted session " code { (p.deleted) } "." }
            } @else if !p.deleted.is_empty() {
                p.note role="status" { "Deleted the session." }
            }
            @if p.kept == "true" && !p.deleted.is_empty() {
                p.note role="status" {
                    "A reader of the store (this page's other requests, an MCP server, a search) \
                     kept an older snapshot open, so the deleted text is still in the store's \
                     files (its write-ahead log and old pages) until a later checkpoint: the next \
                     hook or "
                    code { "memtrail import" }
                    " makes it once the readers let go."
                }
            }
            form.filters action="/sessions" method="get" {
                (select("agent", "Agent", &p.agent, agents))
                label { "Project " input type="text" name="project" value=(p.project); }
                label { "Machine " input type="text" name="machine" value=(p.machine) size="10"; }
                button type="submit" { "Filter" }
            }
            @if rows.is_empty() {
                p.empty { "No sessions" @if page > 0 { " on this page" } "." }
            } @else {
                table.sessions {
                    thead { tr { th { "Updated" } th { "Agent" } th { "Title" } th { "Project" } th { "Machine" } th.num { "Messages" } } }
                    tbody {
                        @for s in rows.iter().filter(|s| !is_child_here(s)) {
                            (session_row(s, false))
                            @for c in rows.iter().filter(|c| c.agent == s.agent && c.parent_session_id.as_deref() == Some(s.session_id.as_str())) {
                                (session_row(c, true))
                            }
                        }
                    }
                }
            }
            nav.pager aria-label="pages" {
                @if page > 0 { a rel="prev" href=(query(page - 1)) { "← Newer" } }
                span { "page " (page + 1) }
                @if more { a rel="next" href=(query(page + 1)) { "Older →" } }
            }
        },
    )
}

fn session_row(s: &SessionSummary, child: bool) -> Markup {
    html! {
        tr class=(if child { "child" } else { "" }) {
            td { time { (short_time(s.updated_at.as_deref())) } }
            td { span.badge.agent { (s.agent) } }
            td {
                @if child { span.sub aria-label="sub-agent" { "↳ " } }
                a href=(session_href(&s.session_id, &s.agent)) { (s.title.as_deref().unwrap_or("(untitled)")) }
                @if let Some(pid) = &s.parent_session_id {
                    @if !child { " " span.sub { "(sub-agent of " a href=(session_href(pid, &s.agent)) { (pid) } ")" } }
                }
            }
            td.path { (s.project.as_deref().unwrap_or("")) }
            td { (s.machine) }
            td.num { (s.messages) }
        }
    }
}

/// Text folded past [`FOLD_CHARS`]: the start shown, the whole in a `<details>`.
fn folded(text: &str, class: &str) -> Markup {
    let n = text.chars().count();
    if n <= FOLD_CHARS {
        return html! { pre class=(class) { (text) } };
    }
    let cut: String = text.chars().take(FOLD_CHARS).collect();
    html! {
        details.fold {
            summary { pre class=(class) { (cut) "…" } span.more { "show all " (n) " characters" } }
            pre class=(class) { (text) }
        }
    }
}

/// Lines of an edit as a diff: `-` for `old`, `+` for `new`.
fn diff(old: &str, new: &str) -> Markup {
    html! {
        pre.diff {
            @for l in old.lines() { span.del { "-" (l) "\n" } }
            @for l in new.lines() { span.add { "+" (l) "\n" } }
        }
    }
}

/// A patch (`apply_patch`'s `*** Begin Patch` or a unified diff) with its lines coloured.
fn patch(text: &str) -> Markup {
    html! {
        pre.diff {
            @for l in text.lines() {
                @if l.starts_with('+') && !l.starts_with("+++") { span.add { (l) "\n" } }
                @else if l.starts_with('-') && !l.starts_with("---") { span.del { (l) "\n" } }
                @else { (l) "\n" }
            }
        }
    }
}

fn tool_input(c: &ToolCall) -> Markup {
    let s = |k: &str| c.input.get(k).and_then(|v| v.as_str());
    if let (Some(old), Some(new)) = (s("old_string"), s("new_string")) {
        return html! { @if let Some(p) = s("file_path") { div.path { (p) } } (diff(old, new)) };
    }
    if let Some(p) = s("patch").or(s("input")).filter(|p| {
        p.starts_with("*** Begin Patch") || p.starts_with("--- ") || p.starts_with("diff --git")
    }) {
        return patch(p);
    }
    if let Some(cmd) = s("command") {
        return html! { pre.cmd { "$ " (cmd) } };
    }
    let json = serde_json::to_string_pretty(&c.input).unwrap_or_default();
    folded(&json, "json")
}

/// One line that says what a call did: its name and its main argument.
fn tool_summary(c: &ToolCall) -> String {
    let arg = [
        "command",
        "file_path",
        "path",
        "pattern",
        "query",
        "url",
        "description",
    ]
    .iter()
    .find_map(|k| c.input.get(*k).and_then(|v| v.as_str()))
    .unwrap_or("");
    let arg: String = memtrail_adapters::one_line(arg, 120);
    if arg.is_empty() {
        c.name.clone()
    } else {
        format!("{} {arg}", c.name)
    }
}

/// Messages as the session page shows them (`at`: the one to mark).
pub(crate) fn messages(ms: &[MessageView], at: Option<i64>) -> Markup {
    html! { @for m in ms { (message(m, at)) } }
}

fn message(m: &MessageView, at: Option<i64>) -> Markup {
    let target = at == Some(m.index);
    html! {
        article class=(format!("msg role-{}", css_word(&m.role))) id=(format!("m{}", m.index))
            tabindex="-1" data-at[target] {
            header {
                span class=(format!("badge role-{}", css_word(&m.role))) { (m.role) }
                @if m.kind != "text" { " " span.badge.kind { (m.kind) } }
                " " a.anchor href=(format!("#m{}", m.index)) { "#" (m.index) }
                " " time { (short_time(m.timestamp.as_deref())) }
                @if let Some(model) = &m.model { " " span.model { (model) } }
            }
            @if let Some(t) = &m.thinking {
                details.thinking { summary { "thinking (" (t.chars().count()) " characters)" } pre { (t) } }
            }
            @if !m.text.is_empty() { (folded(&m.text, "text")) }
            @for c in &m.tool_calls {
                details class=(if c.is_error { "tool error" } else { "tool" }) {
                    summary {
                        span.badge.tool { (c.tool) }
                        " " code { (tool_summary(c)) }
                        @if c.is_error { " " span.badge.err { "error" @if let Some(x) = c.exit_code { " " (x) } } }
                    }
                    div.io {
                        h4 { "input" }
                        (tool_input(c))
                        @if let Some(o) = &c.output {
                            h4 { "output" }
                            (folded(o, "output"))
                        }
                    }
                }
            }
        }
    }
}

/// A session's page: its summary, actions, the events and snapshot (loaded when opened), and
/// one page of its messages.
pub(crate) fn session_page(app: &App, v: &SessionView, at: Option<i64>) -> Markup {
    let s = &v.session;
    let base = session_href(&s.session_id, &s.agent);
    let last = v.offset + v.messages.len() as i64;
    let ids = format!("id={}&agent={}", encode(&s.session_id), encode(&s.agent));
    layout(
        s.title.as_deref().unwrap_or("Session"),
        "Sessions",
        html! {
            h1 { (s.title.as_deref().unwrap_or("(untitled)")) }
            dl.summary { (facts(v, true)) }
            div.actions {
                form action="/session/handoff" method="get" {
                    input type="hidden" name="id" value=(s.session_id);
                    input type="hidden" name="agent" value=(s.agent);
                    label { "Hand off to " select name="to" { @for a in agent_names() { option value=(a) selected[a == s.agent] { (a) } } } }
                    button type="submit" { "Handoff" }
                }
                @if app.backend.delete.is_some() {
                    a.button.danger href=(format!("/session/delete?id={}&agent={}", encode(&s.session_id), encode(&s.agent))) { "Delete…" }
                }
            }
            (lazy("events", "Events timeline", &format!("/session/events?{ids}")))
            (lazy("snapshot", "Snapshot (what memtrail resume gives the agent)", &format!("/session/snapshot?{ids}")))
            (pager(&base, v.offset, last, v.total))
            @if last >= v.total {
                // The last page follows the session: new messages arrive over server-sent events.
                section.messages aria-label="messages"
                    data-live=(format!("/session/live?{ids}&offset={last}")) {
                    @if v.messages.is_empty() { p.empty { "No messages on this page." } }
                    (messages(&v.messages, at))
                }
                p.live role="status" { "Following this session: new messages appear here." }
            } @else {
                section.messages aria-label="messages" {
                    @if v.messages.is_empty() { p.empty { "No messages on this page." } }
                    (messages(&v.messages, at))
                }
            }
            (pager(&base, v.offset, last, v.total))
        },
    )
}

/// A session's facts, the `<dt>`/`<dd>` pairs of its summary: the parent and sub-agent
/// sessions as links to their pages with `links`, else as plain ids (an exported page).
pub(crate) fn facts(v: &SessionView, links: bool) -> Markup {
    let s = &v.session;
    let id = |id: &str| {
        html! { @if links { a href=(session_href(id, &s.agent)) { (id) } } @else { code { (id) } } }
    };
    html! {
        dt { "Session" } dd { code { (s.session_id) } }
        dt { "Agent" } dd { span.badge.agent { (s.agent) } }
        @if let Some(p) = &s.project { dt { "Project" } dd.path { (p) } }
        dt { "Machine" } dd { (s.machine) }
        @if let Some(m) = &s.model { dt { "Model" } dd { (m) } }
        @if let Some(b) = &s.git_branch { dt { "Branch" } dd { (b) } }
        dt { "Time" } dd { (short_time(s.started_at.as_deref())) " → " (short_time(s.updated_at.as_deref())) }
        dt { "Messages" } dd { (v.total) }
        @if let Some(pid) = &s.parent_session_id {
            dt { "Parent" } dd { (id(pid)) }
        }
        @if !v.children.is_empty() {
            dt { "Sub-agents" } dd { ul.children { @for c in &v.children { li { (id(c)) } } } }
        }
    }
}

/// A `<details>` whose body `href` loads when it is first opened (htmx); without script, a
/// link to the same part as a page.
fn lazy(id: &str, title: &str, href: &str) -> Markup {
    html! {
        details.lazy id=(id) hx-get=(href) hx-trigger="toggle once" hx-target=(format!("#{id}-body")) hx-swap="innerHTML" {
            summary { (title) }
            div id=(format!("{id}-body")) { a href=(href) { "Open" } }
        }
    }
}

fn pager(base: &str, offset: i64, last: i64, total: i64) -> Markup {
    html! {
        nav.pager aria-label="message pages" {
            @if offset > 0 {
                a href=(format!("{base}&offset=0")) { "⇤ First" }
                a rel="prev" href=(format!("{base}&offset={}", (offset - MESSAGES_PER_PAGE).max(0))) { "← Earlier" }
            }
            // Numbered as the messages are (`#0` is the first).
            span {
                @if total == 0 || last <= offset { "no messages here" }
                @else { "messages #" (offset) "–#" (last - 1) " of " (total) }
            }
            @if last < total {
                a rel="next" href=(format!("{base}&offset={last}")) { "Later →" }
                a href=(format!("{base}&offset={}", (total - 1).max(0) / MESSAGES_PER_PAGE * MESSAGES_PER_PAGE)) { "Last ⇥" }
            }
        }
    }
}

/// A session's events (what the page loads into its "Events timeline").
pub(crate) fn events(t: &Timeline) -> Markup {
    let base = session_href(&t.session.session_id, &t.session.agent);
    html! {
        @if t.events.is_empty() { p.empty { "No events." } }
        @else {
            @if t.total > t.events.len() { p.note { "The first " (t.events.len()) " of " (t.total) " events." } }
            ol.events {
                @for e in &t.events {
                    li class=(format!("ev ev-{}", e.event.category.as_str())) {
                        a href=(format!("{base}&at={}#m{}", e.seq, e.seq)) { "#" (e.seq) }
                        " " span.badge { (e.event.category.as_str()) " " (e.event.action) }
                        " " span.subject { (e.event.subject) }
                        @if let Some(d) = &e.event.detail { " " span.detail { (memtrail_adapters::one_line(d, 200)) } }
                    }
                }
            }
        }
    }
}

/// A session's snapshot (what the page loads into its "Snapshot").
pub(crate) fn snapshot(s: &Snapshot) -> Markup {
    html! {
        @if s.text.trim().is_empty() { p.empty { "No events to build a snapshot from." } }
        @else { pre.snapshot { (s.text) } }
    }
}

/// The handoff document, with a button that copies it.
pub(crate) fn handoff_page(_app: &App, s: &SessionSummary, to: Agent, text: &str) -> Markup {
    layout(
        "Handoff",
        "Sessions",
        html! {
            h1 { "Handoff to " (to.as_str()) }
            p { "From " a href=(session_href(&s.session_id, &s.agent)) { (s.title.as_deref().unwrap_or("(untitled)")) } ". Paste it into the other agent." }
            p { button id="copy" type="button" data-copy="handoff" { "Copy" } " " span id="copied" role="status" {} }
            textarea id="handoff" readonly rows="30" { (text) }
        },
    )
}

/// The confirmation before a delete: what goes, and the POST form with the CSRF token.
pub(crate) fn delete_page(app: &App, s: &SessionSummary, can: bool) -> Markup {
    layout(
        "Delete session",
        "Sessions",
        html! {
            h1 { "Delete this session?" }
            dl.summary {
                dt { "Session" } dd { code { (s.session_id) } }
                dt { "Agent" } dd { (s.agent) }
                dt { "Title" } dd { (s.title.as_deref().unwrap_or("(untitled)")) }
                @if let Some(p) = &s.project { dt { "Project" } dd.path { (p) } }
                dt { "Messages" } dd { (s.messages) }
            }
            @if can {
                p { "Its messages, their search entries and its sub-agent sessions are deleted from the store. "
                    "memtrail does not read its transcript again; " code { "memtrail sessions capture " (s.session_id) } " brings it back while the transcript is still on disk." }
                form id="delete" action="/session/delete" method="post" {
                    input type="hidden" name="id" value=(s.session_id);
                    input type="hidden" name="csrf" value=(app.access.csrf);
                    button.danger type="submit" { "Delete permanently" }
                    " "
                    a href=(session_href(&s.session_id, &s.agent)) { "Cancel" }
                }
            } @else {
                p.note { "This store is read-only here: delete a session on the machine that captured it (" code { "memtrail sessions delete" } "); " code { "memtrail sync" } " carries the deletion." }
            }
        },
    )
}

fn json_value(v: &serde_json::Value) -> Markup {
    use serde_json::Value;
    html! {
        @match v {
            Value::Object(m) => {
                dl.json { @for (k, x) in m { dt { (k) } dd { (json_value(x)) } } }
            }
            Value::Array(a) => {
                @if a.is_empty() { span.empty { "none" } }
                @else { ol.json { @for x in a { li { (json_value(x)) } } } }
            }
            Value::String(s) => { (s) }
            Value::Null => { span.empty { "—" } }
            x => { (x.to_string()) }
        }
    }
}

/// `text` with its `` `backquoted` `` parts (commands, in memtrail's messages) as `<code>`,
/// the rest as text; every part escaped.
fn with_code(text: &str) -> Markup {
    html! {
        @for (i, part) in text.split('`').enumerate() {
            @if i % 2 == 1 { code { (part) } } @else { (part) }
        }
    }
}

/// A JSON value as short text: a string as it is, `null` as `—`, a boolean as `yes` / `no`,
/// others as JSON.
fn short(v: Option<&serde_json::Value>) -> String {
    match v {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Bool(b)) => if *b { "yes" } else { "no" }.into(),
        None | Some(serde_json::Value::Null) => "—".into(),
        Some(x) => x.to_string(),
    }
}

/// The parts of `memtrail status --json` (schema: docs/json.md) people look at: per agent what
/// is wired and when its hook last ran, the store's figures, the sync state, recent errors.
fn status_summary(v: &serde_json::Value) -> Markup {
    let empty = Vec::new();
    let agents = v["agents"].as_array().unwrap_or(&empty);
    let states = |a: &serde_json::Value| {
        let mut counts: Vec<(String, usize)> = Vec::new();
        for it in a["registration"]["items"].as_array().unwrap_or(&empty) {
            let st = short(it.get("state"));
            match counts.iter_mut().find(|c| c.0 == st) {
                Some(c) => c.1 += 1,
                None => counts.push((st, 1)),
            }
        }
        counts
            .iter()
            .map(|(s, n)| format!("{n} {s}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let store = &v["store"];
    let sync = &v["sync"];
    // An agent not found, with nothing of memtrail's wired and no transcript, is named once
    // below the table (as `memtrail status` does), not given a row of "missing".
    let here = |a: &&serde_json::Value| {
        a["registration"]["detected"].as_bool() == Some(true)
            || a["transcripts"]["found"].as_u64().is_some_and(|n| n > 0)
            || a["registration"]["items"]
                .as_array()
                .unwrap_or(&empty)
                .iter()
                .any(|it| it["state"].as_str() != Some("missing"))
    };
    let elsewhere: Vec<String> = agents
        .iter()
        .filter(|a| !here(a))
        .map(|a| short(a.get("agent")))
        .collect();
    html! {
        p { "Healthy: " strong { (short(v.get("healthy"))) } }
        h2 { "Agents" }
        table.sessions {
            thead { tr { th { "Agent" } th { "Detected" } th { "Wired (hooks, MCP, skill)" } th.num { "Transcripts" } th { "Last hook run" } } }
            tbody {
                @for a in agents.iter().filter(here) {
                    tr {
                        td { span.badge.agent { (short(a.get("agent"))) } }
                        td { (short(a["registration"].get("detected"))) }
                        td { (states(a)) }
                        td.num { (short(a["transcripts"].get("found")))
                            @if a["transcripts"]["unreadable"].as_array().is_some_and(|u| !u.is_empty()) {
                                " " span.badge.err { (a["transcripts"]["unreadable"].as_array().map_or(0, Vec::len)) " unreadable" }
                            }
                        }
                        td {
                            @match a["hook_runs"].as_array().and_then(|r| r.first()) {
                                Some(r) => {
                                    (short(r.get("event"))) " at " (short_time(r["at"].as_str())) ", "
                                    (short(r.get("duration_ms"))) " ms"
                                    @if !r["error"].is_null() { " " span.badge.err { "error" } " " (short(r.get("error"))) }
                                }
                                None => { span.empty { "never" } }
                            }
                        }
                    }
                }
            }
        }
        @if !elsewhere.is_empty() {
            p.note #elsewhere { "Not on this machine: " (elsewhere.join(", ")) "." }
        }
        h2 { "Store" }
        dl.summary {
            dt { "File" } dd.path { (short(store.get("path"))) }
            dt { "Size" } dd { (store["size_bytes"].as_f64().map_or("—".into(), |b| format!("{:.1} MB", b / 1e6))) }
            dt { "Sessions" } dd { (short(store.get("sessions"))) }
            dt { "Messages" } dd { (short(store.get("messages"))) }
            dt { "Schema" } dd { (short(store.get("schema_version"))) }
            dt { "Integrity" } dd { (short(store.get("integrity"))) }
        }
        h2 { "Sync" }
        dl.summary {
            dt { "Configured" } dd { (short(sync.get("configured"))) }
            @if !sync["url"].is_null() { dt { "PostgreSQL" } dd { (short(sync.get("url"))) } }
            dt { "Last sync" } dd { (short(sync.get("last_sync_at"))) }
            dt { "Waiting" } dd {
                (short(sync["pending"].get("sessions"))) " sessions, "
                (short(sync["pending"].get("messages"))) " messages, "
                (short(sync["pending"].get("deletions"))) " deletions"
            }
            @if sync["failing"].as_bool() == Some(true) { dt { "Failing" } dd.error { (short(sync.get("last_error"))) } }
        }
        @if let Some(errs) = v["recent_hook_errors"].as_array().filter(|e| !e.is_empty()) {
            h2 { "Recent hook errors" }
            ol { @for e in errs { li { code { (short(Some(e))) } } } }
        }
    }
}

/// The status page: the store, and `memtrail status --json` laid out.
pub(crate) fn status_page(app: &App, status: Option<&serde_json::Value>, unindexed: i64) -> Markup {
    layout(
        "Status",
        "Status",
        html! {
            h1 { "Status" }
            dl.summary {
                dt { "Store" } dd.path { (app.backend.label) }
                dt { "Not yet searchable" } dd { (unindexed) @if unindexed == 1 { " message" } @else { " messages" } }
                dt { "Deletes" } dd { @if app.backend.delete.is_some() { "allowed (POST with CSRF token)" } @else { "read-only store" } }
            }
            @match status {
                Some(v) => {
                    (status_summary(v))
                    details.lazy {
                        summary { "The whole report (memtrail status --json)" }
                        (json_value(v))
                    }
                }
                None => { p.note { "No status report for this store (it is this machine's report; run the page on the machine itself)." } }
            }
        },
    )
}

/// Whether `s` looks like a session id as agents write them (UUIDs, `rollout-…`, hashes,
/// `ses_…`): 1 to 128 ASCII letters, digits, `-`, `_`, `.` and `:`.
fn id_shaped(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}
