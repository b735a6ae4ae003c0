//! The analytics page: charts drawn on the server as SVG (no script), from
//! [`ReadStore::analytics`](memtrail_runtime::read::ReadStore::analytics). Every label (agent,
//! model, project, tool, path) is store text, spliced by maud, escaped like the rest of the
//! page; no label becomes a link or an attribute other than a `<title>` text.

use crate::AnalyticsParams;
use maud::{Markup, html};
use memtrail_adapters::format_rfc3339_ms;
use memtrail_runtime::analytics::{Analytics, DAY_MS, DayRange};
use std::collections::BTreeMap;

/// Days of the per-day charts when the page does not say.
pub(crate) const DEFAULT_DAYS: i64 = 90;
/// Most days of the per-day charts.
pub(crate) const MAX_DAYS: i64 = 366;
/// Weeks of the calendar heatmap (a year, ending with the range's last day).
const HEATMAP_WEEKS: i64 = 53;
/// Series of a stacked chart drawn in their own colour; the rest are summed as "other".
const MAX_SERIES: usize = 8;
/// Width of the per-day charts (SVG user units; the page scales them to its width).
const CHART_W: f64 = 960.0;
/// Height of the bars' area of a per-day chart.
const CHART_H: f64 = 140.0;
/// Left margin of a per-day chart (the scale's labels).
const CHART_LEFT: f64 = 44.0;

/// `YYYY-MM-DD` of day `d` (days since 1970-01-01 UTC).
pub(crate) fn day_str(d: i64) -> String {
    format_rfc3339_ms(d * DAY_MS)[..10].to_string()
}

/// The days the page asks the store for: the per-day charts' `days` and the heatmap's 53
/// weeks, both ending on `last`.
pub(crate) fn store_range(last: i64, days: i64) -> DayRange {
    let heat_first = heatmap_first(last);
    DayRange {
        first_day: heat_first.min(last - days + 1),
        last_day: last,
    }
}

/// First day (a Sunday) of the heatmap ending on `last`.
fn heatmap_first(last: i64) -> i64 {
    // Day 0 (1970-01-01) was a Thursday: (d + 4) % 7 is 0 on Sundays.
    let sunday = last - (last + 4).rem_euclid(7);
    sunday - (HEATMAP_WEEKS - 1) * 7
}

/// One stacked series: its name and its value per day.
struct Series {
    name: String,
    per_day: BTreeMap<i64, i64>,
}

/// `rows` as series (name, day, value), the [`MAX_SERIES`] largest in the range first, the
/// others summed as `other` (last); empty names shown as `empty`.
fn series(rows: impl Iterator<Item = (String, i64, i64)>, first: i64, empty: &str) -> Vec<Series> {
    let mut by: BTreeMap<String, BTreeMap<i64, i64>> = BTreeMap::new();
    for (name, day, v) in rows.filter(|r| r.1 >= first && r.2 > 0) {
        let name = if name.is_empty() {
            empty.to_string()
        } else {
            name
        };
        *by.entry(name).or_default().entry(day).or_default() += v;
    }
    let mut all: Vec<Series> = by
        .into_iter()
        .map(|(name, per_day)| Series { name, per_day })
        .collect();
    all.sort_by_key(|s| std::cmp::Reverse(s.per_day.values().sum::<i64>()));
    if all.len() > MAX_SERIES {
        let rest = all.split_off(MAX_SERIES - 1);
        let mut other = Series {
            name: format!("{} others", rest.len()),
            per_day: BTreeMap::new(),
        };
        for s in rest {
            for (d, v) in s.per_day {
                *other.per_day.entry(d).or_default() += v;
            }
        }
        all.push(other);
    }
    all
}

/// A round scale top at or above `max` (1, 2 or 5 times a power of ten).
fn nice(max: i64) -> i64 {
    let mut p = 1i64;
    loop {
        for m in [1, 2, 5] {
            if m * p >= max {
                return m * p;
            }
        }
        p = p.saturating_mul(10);
    }
}

/// Stacked bars per day from `first` to `last`, one colour per series, a `<title>` per piece
/// (`2026-03-04 · claude: 12 messages`); `unit` names what is counted. With its legend.
fn stacked(id: &str, label: &str, s: &[Series], first: i64, last: i64, unit: &str) -> Markup {
    let n = (last - first + 1).max(1);
    let bw = (CHART_W - CHART_LEFT) / n as f64;
    let totals: Vec<i64> = (first..=last)
        .map(|d| {
            s.iter()
                .map(|x| x.per_day.get(&d).copied().unwrap_or(0))
                .sum()
        })
        .collect();
    let top = nice(totals.iter().copied().max().unwrap_or(0).max(1));
    let y = |v: i64| CHART_H * v as f64 / top as f64;
    let h = CHART_H + 24.0;
    let mid = first + (n - 1) / 2;
    // Each day's pieces, stacked: (series, day, what is below, value).
    let mut pieces: Vec<(usize, i64, i64, i64)> = Vec::new();
    for d in first..=last {
        let mut base = 0;
        for (k, ser) in s.iter().enumerate() {
            if let Some(v) = ser.per_day.get(&d).filter(|v| **v > 0) {
                pieces.push((k, d, base, *v));
                base += v;
            }
        }
    }
    html! {
        figure.chart id=(id) {
            svg.chart viewBox=(format!("0 0 {CHART_W} {h}")) role="img" aria-label=(label) {
                line.axis x1=(CHART_LEFT) y1=(CHART_H) x2=(CHART_W) y2=(CHART_H) {}
                line.grid x1=(CHART_LEFT) y1="0.5" x2=(CHART_W) y2="0.5" {}
                text.scale x=(CHART_LEFT - 4.0) y="10" { (top) }
                text.scale x=(CHART_LEFT - 4.0) y=(CHART_H) { "0" }
                @for (k, d, base, v) in &pieces {
                    @let x = CHART_LEFT + (d - first) as f64 * bw;
                    rect class=(format!("s{k}")) x=(fmt(x + 0.5)) y=(fmt(CHART_H - y(base + v)))
                        width=(fmt((bw - 1.0).max(0.6))) height=(fmt(y(*v))) {
                        title { (day_str(*d)) " · " (s[*k].name) ": " (count(*v, unit)) }
                    }
                }
                // The first label starts at its bar, the last ends at its bar (inside the chart).
                text.day.start x=(fmt(CHART_LEFT)) y=(CHART_H + 16.0) { (day_str(first)) }
                @if n > 2 {
                    text.day x=(fmt(CHART_LEFT + (mid - first) as f64 * bw + bw / 2.0)) y=(CHART_H + 16.0) { (day_str(mid)) }
                }
                @if n > 1 {
                    text.day.end x=(fmt(CHART_W)) y=(CHART_H + 16.0) { (day_str(last)) }
                }
            }
            figcaption {
                ul.legend {
                    @for (k, ser) in s.iter().enumerate() {
                        li { span class=(format!("sw s{k}")) {} (ser.name) " " span.num { (ser.per_day.values().sum::<i64>()) } }
                    }
                }
            }
        }
    }
}

/// `n` and what it counts (`unit`, plural: `messages`), singular for one (`1 message`).
fn count(n: i64, unit: &str) -> String {
    match n {
        1 => format!("1 {}", unit.strip_suffix('s').unwrap_or(unit)),
        _ => format!("{n} {unit}"),
    }
}

/// The heatmap's month labels, `(week, name)`: at the first week whose last day is in a new
/// month. The first week's month is named only when the next label is 3 weeks or more away (a
/// label is about two weeks wide: closer, the two would print over each other).
fn month_labels(first: i64) -> Vec<(i64, &'static str)> {
    let month = |wk: i64| month_name(&day_str(first + wk * 7 + 6));
    let mut labels: Vec<(i64, &'static str)> = vec![(0, month(0))];
    for wk in 1..HEATMAP_WEEKS {
        if month(wk) != month(wk - 1) {
            labels.push((wk, month(wk)));
        }
    }
    if labels.get(1).is_some_and(|(wk, _)| *wk < 3) {
        labels.remove(0);
    }
    labels
}

/// A number as SVG writes it: at most two decimals.
fn fmt(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The calendar heatmap: a column per week (Sunday on top), a cell per day, its shade by the
/// day's messages (5 levels: none, then quarters of the busiest day), a `<title>` per day.
fn heatmap(per_day: &BTreeMap<i64, i64>, last: i64) -> Markup {
    let first = heatmap_first(last);
    let max = per_day
        .range(first..=last)
        .map(|(_, v)| *v)
        .max()
        .unwrap_or(0);
    let (cell, gap, left, topm) = (12.0, 3.0, 30.0, 16.0);
    let w = left + HEATMAP_WEEKS as f64 * (cell + gap);
    let h = topm + 7.0 * (cell + gap);
    let level = |v: i64| {
        if v <= 0 || max == 0 {
            0
        } else {
            ((4 * v + max - 1) / max).clamp(1, 4)
        }
    };
    html! {
        figure.chart id="heatmap" {
            svg.chart.heat viewBox=(format!("0 0 {w} {h}")) role="img" aria-label="messages per day, a year" {
                @for (r, name) in [(1, "Mon"), (3, "Wed"), (5, "Fri")] {
                    text.scale x=(left - 4.0) y=(fmt(topm + r as f64 * (cell + gap) + cell - 2.0)) { (name) }
                }
                @for (wk, name) in month_labels(first) {
                    text.month x=(fmt(left + wk as f64 * (cell + gap))) y="11" { (name) }
                }
                @for wk in 0..HEATMAP_WEEKS {
                    @let d0 = first + wk * 7;
                    @for r in 0..7 {
                        @let d = d0 + r;
                        @if d <= last {
                            @let v = per_day.get(&d).copied().unwrap_or(0);
                            rect class=(format!("h{}", level(v))) data-day=(day_str(d)) data-n=(v)
                                x=(fmt(left + wk as f64 * (cell + gap))) y=(fmt(topm + r as f64 * (cell + gap)))
                                width=(cell) height=(cell) rx="2" {
                                title { (day_str(d)) ": " (count(v, "messages")) }
                            }
                        }
                    }
                }
            }
            figcaption.scale-note { "Less " @for l in 0..5 { span class=(format!("sw h{l}")) {} } " more · busiest day " (count(max, "messages")) }
        }
    }
}

fn month_name(day: &str) -> &'static str {
    const M: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    day.get(5..7)
        .and_then(|m| m.parse::<usize>().ok())
        .and_then(|m| M.get(m.wrapping_sub(1)).copied())
        .unwrap_or("")
}

/// A bar of `v` out of `max` (and a failed part `bad`), for a table row.
fn bar(v: i64, bad: i64, max: i64) -> Markup {
    let w = |x: i64| fmt(200.0 * x as f64 / max.max(1) as f64);
    html! {
        svg.chart.bar viewBox="0 0 200 10" aria-hidden="true" {
            rect.s0 x="0" y="0" width=(w(v)) height="10" {}
            @if bad > 0 { rect.bad x="0" y="0" width=(w(bad)) height="10" {} }
        }
    }
}

/// `ms` as hours and minutes (`3 h 05 min`, `25 min`).
fn duration(ms: i64) -> String {
    let min = ms / 60_000;
    if min >= 60 {
        format!("{} h {:02} min", min / 60, min % 60)
    } else {
        format!("{min} min")
    }
}

/// The page's body: the range form, the totals, the charts and the ranked tables.
pub(crate) fn body(p: &AnalyticsParams, a: &Analytics, last: i64, days: i64) -> Markup {
    let first = last - days + 1;
    let in_range = |d: i64| d >= first && d <= last;
    let agents = series(
        a.agent_days
            .iter()
            .map(|r| (r.agent.clone(), r.day, r.messages)),
        first,
        "?",
    );
    let sessions = series(
        a.agent_days
            .iter()
            .map(|r| (r.agent.clone(), r.day, r.sessions)),
        first,
        "?",
    );
    let models = series(
        a.model_days
            .iter()
            .map(|r| (r.model.clone(), r.day, r.messages)),
        first,
        "(no model: user messages, tool results)",
    );
    let mut per_day: BTreeMap<i64, i64> = BTreeMap::new();
    for r in &a.agent_days {
        *per_day.entry(r.day).or_default() += r.messages;
    }
    // Totals per agent in the range.
    let mut totals: BTreeMap<&str, (i64, i64, i64)> = BTreeMap::new();
    for r in a.agent_days.iter().filter(|r| in_range(r.day)) {
        let t = totals.entry(r.agent.as_str()).or_default();
        t.0 += r.sessions;
        t.1 += r.messages;
        t.2 += i64::from(r.messages > 0);
    }
    let sum = totals
        .values()
        .fold((0, 0), |acc, t| (acc.0 + t.0, acc.1 + t.1));
    let active_days = per_day
        .iter()
        .filter(|(d, v)| in_range(**d) && **v > 0)
        .count();
    let max_project = a.projects.first().map_or(1, |p| p.active_ms);
    let max_tool = a.tools.first().map_or(1, |t| t.calls);
    let max_file = a.files.first().map_or(1, |f| f.edits);
    html! {
        h1 { "Analytics" }
        form.filters action="/analytics" method="get" {
            label { "Days " input type="number" name="days" min="1" max=(MAX_DAYS) value=(days) size="4"; }
            label { "ending " input type="date" name="until" value=(day_str(last)); }
            button type="submit" { "Show" }
            span.hint { "Days are UTC; " (day_str(first)) " to " (day_str(last)) "." }
            @if !p.until.is_empty() || p.days.is_some() { a href="/analytics" { "last " (DEFAULT_DAYS) " days" } }
        }
        table.sessions.totals id="totals" {
            thead { tr { th { "Agent" } th.num { "Sessions" } th.num { "Messages" } th.num { "Active days" } } }
            tbody {
                @for (agent, t) in &totals {
                    tr { td { span.badge.agent { (agent) } } td.num { (t.0) } td.num { (t.1) } td.num { (t.2) } }
                }
            }
            tfoot { tr { th { "All" } td.num { (sum.0) } td.num { (sum.1) } td.num { (active_days) } } }
        }
        section.analytics {
            h2 { "Messages per day, by agent" }
            (stacked("messages-per-day", "messages per day by agent", &agents, first, last, "messages"))
            h2 { "Sessions started per day, by agent" }
            p.hint { "Main sessions, by the day they started; sub-agent sessions are part of their parent's." }
            (stacked("sessions-per-day", "sessions started per day by agent", &sessions, first, last, "sessions"))
            h2 { "Activity, a year" }
            (heatmap(&per_day, last))
            h2 { "Messages per day, by model" }
            p.note id="no-tokens" {
                "Tokens per model are not shown: memtrail does not store the token usage the transcripts record "
                "(Claude Code's " code { "message.usage" } ", Codex's " code { "token_count" } ", Copilot CLI's "
                code { "assistant.usage" } "); no adapter keeps it yet. Messages per model instead:"
            }
            (stacked("models-per-day", "messages per day by model", &models, first, last, "messages"))
            h2 { "Active time per project" }
            p.hint { "5-minute slots in which a session of the project wrote a message, in the range (parallel sessions counted once)." }
            @if a.projects.is_empty() { p.empty { "No messages in the range." } }
            @else {
                table.sessions.ranked id="projects" {
                    thead { tr { th { "Project" } th {} th.num { "Active time" } } }
                    tbody {
                        @for pr in &a.projects {
                            tr {
                                td.path { @if pr.project.is_empty() { span.empty { "(unknown folder)" } } @else { (pr.project) } }
                                td { (bar(pr.active_ms, 0, max_project)) }
                                td.num data-ms=(pr.active_ms) { (duration(pr.active_ms)) }
                            }
                        }
                    }
                }
            }
            h2 { "Top tools" }
            p.hint { "All calls stored; failed: an error result or a non-zero exit (red)." }
            @if a.tools.is_empty() { p.empty { "No tool calls." } }
            @else {
                table.sessions.ranked id="tools" {
                    thead { tr { th { "Tool" } th {} th.num { "Calls" } th.num { "Failed" } th.num { "Error rate" } } }
                    tbody {
                        @for t in &a.tools {
                            tr {
                                td { code { (t.name) } }
                                td { (bar(t.calls, t.errors, max_tool)) }
                                td.num { (t.calls) }
                                td.num { (t.errors) }
                                td.num { (format!("{:.1} %", 100.0 * t.errors as f64 / t.calls.max(1) as f64)) }
                            }
                        }
                    }
                }
            }
            h2 { "Files most edited" }
            p.hint { "Edits and writes of a file by any session, by the path the agent gave." }
            @if a.files.is_empty() { p.empty { "No file edited." } }
            @else {
                table.sessions.ranked id="files" {
                    thead { tr { th { "File" } th {} th.num { "Edits" } } }
                    tbody {
                        @for f in &a.files {
                            tr { td.path { (f.path) } td { (bar(f.edits, 0, max_file)) } td.num { (f.edits) } }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_weeks_and_scales() {
        assert_eq!(day_str(0), "1970-01-01");
        assert_eq!(day_str(20515), "2026-03-03");
        // 2026-03-07 was a Saturday: its heatmap's last column starts on Sunday 2026-03-01.
        let first = heatmap_first(20519);
        assert_eq!(day_str(first + 52 * 7), "2026-03-01");
        assert_eq!(day_str(first), "2025-03-02");
        assert_eq!(
            [nice(1), nice(3), nice(7), nice(10), nice(11), nice(250)],
            [1, 5, 10, 10, 20, 500]
        );
        assert_eq!(fmt(12.0), "12");
        assert_eq!(fmt(0.126), "0.13");
        assert_eq!(duration(3 * 300_000), "15 min");
        assert_eq!(duration(37 * 300_000), "3 h 05 min");
        assert_eq!(month_name("2026-03-01"), "Mar");
        assert_eq!(
            (count(1, "sessions"), count(2, "sessions")),
            ("1 session".to_string(), "2 sessions".to_string())
        );
    }

    /// A month is named at the first week whose last day is in it, and the first week's month
    /// only when the next label is far enough not to print over it.
    #[test]
    fn month_labels_never_overlap() {
        // Up to Saturday 2026-12-05: the first week is 2025-11-30 to 12-06 ("Dec"), January
        // starts in the week of 2025-12-28 (its last day 2026-01-03), week 4; the last week
        // (2026-11-29 to 12-05) is December again.
        let first = heatmap_first(20792);
        assert_eq!(day_str(first), "2025-11-30");
        let labels = month_labels(first);
        assert_eq!(labels[..3], [(0, "Dec"), (4, "Jan"), (9, "Feb")]);
        assert_eq!(labels.len(), 13);
        assert_eq!(labels[12], (52, "Dec"));
        // Up to 2026-01-24: the first week (2025-01-19 to 01-25) is January, February starts
        // a week later: only February is named there.
        let first = heatmap_first(20477);
        assert_eq!(day_str(first), "2025-01-19");
        assert_eq!(month_labels(first)[0], (1, "Feb"));
        for l in [month_labels(heatmap_first(20792)), month_labels(first)] {
            assert!(l.windows(2).all(|w| w[1].0 - w[0].0 >= 3), "{l:?}");
        }
    }
}
