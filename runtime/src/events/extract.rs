//! Per-message extraction of events (see [`super::extract`]). Tool names and input shapes are
//! those of the six agents' transcripts (reference: `docs/agents/README.md`,
//! and the fixtures in `fixtures/<agent>/`).

use super::{Category, Event, MAX_DETAIL, MAX_SUBJECT, truncate_str};
use memtrail_adapters::vocabulary::{self, ToolAction, is_rule_file};
use memtrail_adapters::{Agent, Kind, Message, Part, Role, ToolCall};
use regex::Regex;
use serde_json::Value;
use std::sync::OnceLock;

// The regexes are ASCII-only where they can be (`(?-u:\b)`, explicit space classes): Unicode
// classes cost milliseconds to compile, paid once per hook process.

/// At most this many references (URLs, issue refs) per message.
const MAX_REFS: usize = 8;
/// At most this many decisions per prompt.
const MAX_DECISIONS: usize = 5;
/// Decisions and references are looked for in the first this many bytes of a text (a pasted log
/// of megabytes costs no more than this).
const MAX_SCAN: usize = 64 * 1024;

pub(super) fn extract(_agent: Agent, msg: &Message) -> Vec<Event> {
    let mut out = Vec::new();
    let ts = msg.timestamp;
    if msg.kind == Kind::Summary {
        return out;
    }
    match msg.role {
        Role::User => {
            let text = user_text(msg);
            let t = text.trim();
            if !t.is_empty() && !t.starts_with("[Request interrupted") {
                let collapsed = collapse(t);
                let detail = (collapsed.len() > MAX_SUBJECT).then(|| truncate_str(t, MAX_DETAIL));
                out.push(ev(
                    Category::Prompt,
                    "submitted",
                    2,
                    &collapsed,
                    detail,
                    None,
                    ts,
                ));
                let scan = &t[..floor_boundary(t, MAX_SCAN)];
                for d in decisions(scan).into_iter().take(MAX_DECISIONS) {
                    out.push(ev(Category::Decision, "stated", 1, &d, None, None, ts));
                }
                references(scan, ts, &mut out);
            }
        }
        Role::Assistant => {
            let text: String = msg
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            references(&text[..floor_boundary(&text, MAX_SCAN)], ts, &mut out);
        }
        _ => {}
    }
    for call in msg.tool_calls() {
        tool_events(call, ts, &mut out);
    }
    out
}

fn user_text(msg: &Message) -> String {
    msg.parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn ev(
    category: Category,
    action: &str,
    priority: u8,
    subject: &str,
    detail: Option<String>,
    call: Option<&ToolCall>,
    ts: Option<i64>,
) -> Event {
    Event {
        category,
        action: action.to_string(),
        priority,
        subject: truncate_str(subject.trim(), MAX_SUBJECT),
        detail: detail
            .filter(|d| !d.trim().is_empty())
            .map(|d| truncate_str(d.trim(), MAX_DETAIL)),
        call_id: call.map(|c| c.id.clone()),
        tool: call.map(|c| c.tool.clone()),
        ts,
    }
}

// ---------------------------------------------------------------------------------------------
// Prompts: decisions and references

/// A sentence that states a decision: it starts (after `please`, `and`, `but`, `no,`, …) with
/// an instruction of the kind (`don't`, `do not`, `never`, `always`, `avoid`, `stop`, `prefer`,
/// `keep`, `stick to`, `switch to`, `let's go with`, `from now on`, `make sure`, `use … instead /
/// only / everywhere`), or holds a contrast or rule anywhere (`instead of`, `rather than`,
/// `from now on`, `let's go with`, `must not`, `should not`, `we'll use`). Questions are not
/// decisions.
///
/// Matched by hand on the lowercased sentence, words bounded as ASCII `\b` bounds them: the
/// two regexes this replaces (kept in the tests as the oracle) cost a hook 0.3 ms to compile
/// for every prompt it saw.
fn is_decision(lower: &str) -> bool {
    decision_start(lower.as_bytes()) || decision_any(lower.as_bytes())
}

/// Words a decision may start with before its instruction (`please`, `and`, `no,`, …).
const DECISION_LEADS: &[&str] = &[
    "please", "and", "but", "also", "ok", "okay", "so", "then", "no", "yes", "actually",
];

/// Instructions a decision starts with (`use … instead` is checked apart).
const DECISION_STARTS: &[&str] = &[
    "don't",
    "dont",
    "do not",
    "never",
    "always",
    "avoid",
    "stop",
    "prefer",
    "keep",
    "stick to",
    "stick with",
    "switch to",
    "let's go with",
    "lets go with",
    "let's use",
    "lets use",
    "let's keep",
    "lets keep",
    "let's stick",
    "lets stick",
    "go with",
    "from now on",
    "make sure",
    "remember to",
    "no need to",
    "we'll use",
    "we will use",
    "we should use",
];

/// Phrases that make a sentence a decision wherever they stand.
const DECISION_ANYWHERE: &[&str] = &[
    "instead of",
    "rather than",
    "from now on",
    "let's go with",
    "lets go with",
    "must not",
    "mustn't",
    "mustnt",
    "should not",
    "shouldn't",
    "shouldnt",
    "we'll use",
    "we will use",
    "i don't want",
    "i dont want",
    "we don't want",
    "we dont want",
    "decided to",
];

/// A word byte as ASCII `\b` sees it: `[0-9A-Za-z_]` (any other byte, UTF-8 included, is not).
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether `s[..i]` and `s[i..]` meet at an ASCII word boundary.
fn word_boundary(s: &[u8], i: usize) -> bool {
    let before = i > 0 && is_word_byte(s[i - 1]);
    let after = i < s.len() && is_word_byte(s[i]);
    before != after
}

/// `word` at `s[i..]`, bounded at both ends.
fn word_at(s: &[u8], i: usize, word: &str) -> bool {
    let w = word.as_bytes();
    s[i..].starts_with(w) && word_boundary(s, i) && word_boundary(s, i + w.len())
}

/// The start of the sentence, after any number of lead words (each followed by an optional
/// `,` or `!` and at least one space or tab), is an instruction of [`DECISION_STARTS`] or
/// `use … instead|only|everywhere|rather`.
fn decision_start(s: &[u8]) -> bool {
    let mut i = 0;
    loop {
        if DECISION_STARTS.iter().any(|w| word_at(s, i, w)) || use_instead(s, i) {
            return true;
        }
        // Past one lead word, if there is one: every way of reading the leads is tried, as
        // the regex's backtracking would (`no need to` is an instruction, not `no` + `need`).
        let Some(lead) = DECISION_LEADS.iter().find(|w| {
            let end = i + w.len();
            s[i..].starts_with(w.as_bytes()) && (end == s.len() || !is_word_byte(s[end]))
        }) else {
            return false;
        };
        let mut j = i + lead.len();
        if j < s.len() && matches!(s[j], b',' | b'!') {
            j += 1;
        }
        let spaces = s[j..]
            .iter()
            .take_while(|&&b| b == b' ' || b == b'\t')
            .count();
        if spaces == 0 {
            return false;
        }
        i = j + spaces;
    }
}

/// `use` at `s[i..]`, then anywhere later on the line `instead`, `only`, `everywhere` or
/// `rather` as a word.
fn use_instead(s: &[u8], i: usize) -> bool {
    if !(s[i..].starts_with(b"use") && word_boundary(s, i + 3)) {
        return false;
    }
    let rest_end = memchr::memchr(b'\n', &s[i..]).map_or(s.len(), |n| i + n);
    (i + 3..rest_end).any(|q| {
        ["instead", "only", "everywhere", "rather"].iter().any(|w| {
            let end = q + w.len();
            end <= rest_end && word_at(&s[..rest_end], q, w)
        })
    })
}

/// A phrase of [`DECISION_ANYWHERE`] somewhere in the sentence, as words.
fn decision_any(s: &[u8]) -> bool {
    DECISION_ANYWHERE
        .iter()
        .any(|p| memchr::memmem::find_iter(s, p.as_bytes()).any(|i| word_at(s, i, p)))
}

/// The sentences of a prompt that state a decision (see [`is_decision`]).
fn decisions(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        for sentence in split_sentences(line) {
            let s = sentence.trim().trim_start_matches(['-', '*', '>', ' ']);
            if s.len() < 6 || s.starts_with("```") || s.ends_with('?') {
                continue;
            }
            let lower = s.to_lowercase().replace('’', "'");
            if is_decision(&lower) {
                let d = collapse(s.trim_end_matches([';', ',']));
                if !out.contains(&d) {
                    out.push(d);
                }
            }
        }
    }
    out
}

/// Split a line into sentences at `. `, `! `, `? ` (not inside paths like `src/lib.rs`).
fn split_sentences(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let b = line.as_bytes();
    let mut start = 0;
    for i in 0..b.len() {
        if matches!(b[i], b'.' | b'!' | b'?' | b';')
            && (i + 1 == b.len() || b[i + 1] == b' ')
            && i + 1 > start
        {
            out.push(&line[start..=i]);
            start = i + 1;
        }
    }
    if start < line.len() {
        out.push(&line[start..]);
    }
    out
}

fn url_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r#"https?://[^ \t\r\n<>"'`\])}]+"#).expect("url regex"))
}

fn issue_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?:^|[ \t\r\n(\[,])((?:[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+)?#[0-9]{1,7})(?-u:\b)")
            .expect("issue regex")
    })
}

fn references(text: &str, ts: Option<i64>, out: &mut Vec<Event>) {
    let mut seen: Vec<String> = Vec::new();
    // Each regex only on text that can hold a match (compiling them costs a hook ~0.2 ms).
    let has_url = memchr::memmem::find(text.as_bytes(), b"http").is_some();
    if !has_url && !text.contains('#') {
        return;
    }
    for m in url_re().find_iter(text).take_while(|_| has_url) {
        let u = m
            .as_str()
            .trim_end_matches(['.', ',', ';', ':', '!', '?', '*']);
        if !seen.iter().any(|s| s == u) && seen.len() < MAX_REFS {
            seen.push(u.to_string());
            out.push(ev(Category::Reference, "url", 4, u, None, None, ts));
        }
    }
    if !text.contains('#') {
        return;
    }
    let without_urls = if has_url {
        url_re().replace_all(text, " ")
    } else {
        std::borrow::Cow::Borrowed(text)
    };
    for c in issue_re().captures_iter(&without_urls) {
        let r = &c[1];
        if !seen.iter().any(|s| s == r) && seen.len() < MAX_REFS {
            seen.push(r.to_string());
            out.push(ev(Category::Reference, "issue", 4, r, None, None, ts));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tool calls

fn s<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .filter(|s| !s.trim().is_empty())
}

const PATH_KEYS: &[&str] = &[
    "file_path",
    "filePath",
    "path",
    "absolute_path",
    "target_file",
    "notebook_path",
    "file",
    "filename",
    "uri",
];

fn path_of(input: &Value) -> Option<String> {
    s(input, PATH_KEYS).map(|p| p.strip_prefix("file://").unwrap_or(p).to_string())
}

fn line_count(s: &str) -> usize {
    if s.is_empty() {
        0
    } else {
        s.lines().count().max(1)
    }
}

fn counts(plus: usize, minus: usize) -> String {
    format!("+{plus} -{minus}")
}

/// The error text of a call: its output, or a default.
/// The detail of an error event: the call's output, headed by `Exit code N` when the agent gave
/// a non-zero exit code in its own field that the text does not repeat (so the snapshot's
/// `exit N` holds).
fn error_detail(call: &ToolCall) -> Option<String> {
    if let Some(c) = call.exit_code.filter(|&c| c != 0)
        && call.output.as_deref().and_then(exit_code) != Some(c)
    {
        return Some(format!(
            "Exit code {c}\n{}",
            call.output.as_deref().unwrap_or("")
        ));
    }
    call.output.clone().or_else(|| Some("failed".to_string()))
}

fn push_error(call: &ToolCall, action: &str, target: &str, ts: Option<i64>, out: &mut Vec<Event>) {
    let subject = format!("{}: {}", call.tool, collapse(target));
    out.push(ev(
        Category::Error,
        action,
        1,
        &subject,
        error_detail(call),
        Some(call),
        ts,
    ));
}

/// The common tool name of a call: the adapter's, or for names it leaves as they are, the
/// agents' own spellings of the same tools ([`vocabulary::effective_tool`], whatever agent
/// wrote the transcript).
fn effective_tool(call: &ToolCall) -> Option<&'static str> {
    const KNOWN: &[&str] = &[
        "read",
        "edit",
        "write",
        "shell",
        "todo",
        "subagent",
        "mcp",
        "web_fetch",
    ];
    if KNOWN.contains(&call.tool.as_str()) {
        return None;
    }
    vocabulary::effective_tool(&call.name)
}

/// Whether the user declined `call` at the agent's permission prompt (it never ran): not an
/// error of the tool, a decision ([`vocabulary::is_declined`]).
fn declined(call: &ToolCall) -> bool {
    call.output.as_deref().is_some_and(vocabulary::is_declined)
}

fn tool_events(call: &ToolCall, ts: Option<i64>, out: &mut Vec<Event>) {
    if declined(call) {
        // What was asked for: the command, the file, else the tool's name.
        let target = s(&call.input, &["command", "cmd"])
            .map(first_line)
            .or_else(|| path_of(&call.input))
            .unwrap_or_else(|| call.name.clone());
        out.push(ev(
            Category::Decision,
            "declined",
            1,
            &format!("declined {}: {}", call.name, collapse(&target)),
            None,
            Some(call),
            ts,
        ));
        return;
    }
    if let Some(tool) = effective_tool(call) {
        if tool == "delete" {
            if call.is_error {
                let target = path_of(&call.input).unwrap_or_else(|| call.name.clone());
                push_error(call, "tool", &target, ts, out);
            } else if let Some(p) = path_of(&call.input) {
                out.push(ev(Category::File, "deleted", 2, &p, None, Some(call), ts));
            }
            return;
        }
        let c = ToolCall {
            tool: tool.to_string(),
            ..call.clone()
        };
        return tool_events(&c, ts, out);
    }
    let input = &call.input;
    match call.tool.as_str() {
        "read" => read_events(call, ts, out),
        "edit" | "write" => edit_events(call, ts, out),
        "shell" => shell_events(call, ts, out),
        "todo" => todo_events(call, ts, out),
        "subagent" => {
            let what = s(
                input,
                &["description", "prompt", "subagent_type", "agentName"],
            )
            .unwrap_or(&call.name);
            let what = first_line(what);
            let kind = s(input, &["subagent_type", "agentName"]).map(str::to_string);
            out.push(ev(
                Category::Subagent,
                "launched",
                3,
                &what,
                kind,
                Some(call),
                ts,
            ));
            if call.is_error {
                push_error(call, "tool", &what, ts, out);
            } else if let Some(o) = &call.output {
                out.push(ev(
                    Category::Subagent,
                    "finished",
                    3,
                    &what,
                    Some(o.clone()),
                    Some(call),
                    ts,
                ));
            }
        }
        "mcp" => {
            let subject = match vocabulary::mcp_server_tool(&call.name) {
                (Some(server), tool) => format!("{server}/{tool}"),
                (None, rest) => rest.to_string(),
            };
            out.push(ev(Category::Mcp, "used", 4, &subject, None, Some(call), ts));
            if call.is_error {
                push_error(call, "tool", &subject, ts, out);
            }
        }
        "web_fetch" => {
            if let Some(u) = s(input, &["url", "urls"]) {
                out.push(ev(Category::Reference, "url", 4, u, None, Some(call), ts));
            } else if let Some(arr) = input.get("urls").and_then(Value::as_array) {
                for u in arr.iter().filter_map(Value::as_str).take(MAX_REFS) {
                    out.push(ev(Category::Reference, "url", 4, u, None, Some(call), ts));
                }
            } else if let Some(prompt) = vocabulary::web_fetch_prompt(input) {
                let mut refs = Vec::new();
                references(prompt, ts, &mut refs);
                for mut e in refs.into_iter().filter(|e| e.action == "url") {
                    e.call_id = Some(call.id.clone());
                    e.tool = Some(call.tool.clone());
                    out.push(e);
                }
            }
            if call.is_error {
                push_error(
                    call,
                    "tool",
                    s(input, &["url"]).unwrap_or(&call.name),
                    ts,
                    out,
                );
            }
        }
        _ => match vocabulary::tool_action(&call.name) {
            Some(ToolAction::Skill) => {
                let name = s(input, &["skill", "name", "command"]).unwrap_or(&call.name);
                out.push(ev(Category::Skill, "used", 4, name, None, Some(call), ts));
                if call.is_error {
                    push_error(call, "tool", name, ts, out);
                }
            }
            Some(ToolAction::EnterPlan) => {
                out.push(ev(
                    Category::Plan,
                    "entered",
                    2,
                    "plan mode entered",
                    None,
                    Some(call),
                    ts,
                ));
            }
            Some(ToolAction::ExitPlan) => {
                let plan = s(input, &["plan"]).unwrap_or("");
                let title = first_line(plan.trim_start_matches(['#', ' ']));
                let title = if title.is_empty() {
                    "plan".to_string()
                } else {
                    title
                };
                let action = if !call.is_error && call.output.is_some() {
                    "approved"
                } else {
                    "entered"
                };
                let detail = (!plan.is_empty()).then(|| plan.to_string());
                out.push(ev(
                    Category::Plan,
                    action,
                    2,
                    &title,
                    detail,
                    Some(call),
                    ts,
                ));
            }
            Some(ToolAction::CreateTask) => {
                if let Some(t) = s(input, &["subject", "content", "description", "title"]) {
                    out.push(ev(
                        Category::Task,
                        "created",
                        1,
                        t,
                        Some("pending".into()),
                        Some(call),
                        ts,
                    ));
                }
            }
            Some(ToolAction::AskUser) => answer_events(call, ts, out),
            None => {
                if call.is_error {
                    let target = path_of(input).unwrap_or_else(|| call.name.clone());
                    push_error(call, "tool", &target, ts, out);
                }
            }
        },
    }
}

fn first_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

fn read_events(call: &ToolCall, ts: Option<i64>, out: &mut Vec<Event>) {
    let input = &call.input;
    let mut paths: Vec<String> = path_of(input).into_iter().collect();
    if paths.is_empty()
        && let Some(arr) = input.get("paths").and_then(Value::as_array)
    {
        paths = arr
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
    }
    for p in &paths {
        if call.is_error {
            push_error(call, "tool", p, ts, out);
        } else if is_rule_file(p) {
            out.push(ev(Category::Rule, "read", 3, p, None, Some(call), ts));
        } else if p.ends_with("/SKILL.md") || p == "SKILL.md" {
            let name = p
                .trim_end_matches("/SKILL.md")
                .rsplit('/')
                .next()
                .unwrap_or(p);
            out.push(ev(
                Category::Skill,
                "used",
                4,
                name,
                Some(p.clone()),
                Some(call),
                ts,
            ));
        } else {
            out.push(ev(Category::File, "read", 4, p, None, Some(call), ts));
        }
    }
}

/// One file touched by an edit call: path, action, line counts.
struct Touch {
    path: String,
    action: &'static str,
    counts: Option<(usize, usize)>,
}

fn edit_touches(call: &ToolCall) -> Vec<Touch> {
    let input = &call.input;
    // Codex apply_patch: the input is the patch text (custom tool call), or an object holding it.
    let patch = input
        .as_str()
        .or_else(|| s(input, &["input", "patch", "patchText"]))
        .filter(|p| p.contains("*** "));
    if let Some(p) = patch {
        return patch_touches(p);
    }
    let mut out = Vec::new();
    if let Some(files) = input.get("files").and_then(Value::as_array) {
        for f in files {
            let p = f.as_str().map(str::to_string).or_else(|| path_of(f));
            if let Some(p) = p {
                out.push(Touch {
                    path: p,
                    action: "edited",
                    counts: None,
                });
            }
        }
        return out;
    }
    if let Some(reps) = input.get("replacements").and_then(Value::as_array) {
        for r in reps {
            if let Some(p) = path_of(r) {
                let c = replace_counts(r);
                match out.iter_mut().find(|t: &&mut Touch| t.path == p) {
                    Some(t) => t.counts = add_counts(t.counts, c),
                    None => out.push(Touch {
                        path: p,
                        action: "edited",
                        counts: c,
                    }),
                }
            }
        }
        return out;
    }
    let Some(path) = path_of(input) else {
        return out;
    };
    if call.tool == "write" {
        let content = s(input, &["content", "contents", "file_text", "text"]).unwrap_or("");
        out.push(Touch {
            path,
            action: "written",
            counts: Some((line_count(content), 0)),
        });
        return out;
    }
    let counts = if let Some(edits) = input.get("edits").and_then(Value::as_array) {
        let mut acc = Some((0, 0));
        for e in edits {
            acc = add_counts(acc, replace_counts(e));
        }
        acc
    } else if let Some(code) = s(input, &["code", "new_source"]) {
        Some((line_count(code), 0))
    } else {
        replace_counts(input)
    };
    out.push(Touch {
        path,
        action: "edited",
        counts,
    });
    out
}

fn add_counts(a: Option<(usize, usize)>, b: Option<(usize, usize)>) -> Option<(usize, usize)> {
    match (a, b) {
        (Some(a), Some(b)) => Some((a.0 + b.0, a.1 + b.1)),
        (a, b) => a.or(b),
    }
}

fn replace_counts(v: &Value) -> Option<(usize, usize)> {
    let old = s(v, &["old_string", "oldString", "old_str"]).or_else(|| {
        v.get("old_string")
            .or(v.get("oldString"))
            .and_then(Value::as_str)
    });
    let new = v
        .get("new_string")
        .or(v.get("newString"))
        .or(v.get("new_str"))
        .and_then(Value::as_str);
    match (old, new) {
        (Some(o), Some(n)) => Some((line_count(n), line_count(o))),
        (None, Some(n)) => Some((line_count(n), 0)),
        _ => None,
    }
}

/// The files of a Codex patch (`*** Update File:` / `*** Add File:` / `*** Delete File:`, with
/// `*** Move to:`), with their added and removed lines.
fn patch_touches(patch: &str) -> Vec<Touch> {
    let mut out: Vec<Touch> = Vec::new();
    for line in patch.lines() {
        if let Some(p) = line.strip_prefix("*** Update File: ") {
            out.push(Touch {
                path: p.trim().into(),
                action: "edited",
                counts: Some((0, 0)),
            });
        } else if let Some(p) = line.strip_prefix("*** Add File: ") {
            out.push(Touch {
                path: p.trim().into(),
                action: "written",
                counts: Some((0, 0)),
            });
        } else if let Some(p) = line.strip_prefix("*** Delete File: ") {
            out.push(Touch {
                path: p.trim().into(),
                action: "deleted",
                counts: None,
            });
        } else if let Some(p) = line.strip_prefix("*** Move to: ") {
            if let Some(t) = out.last_mut() {
                t.path = p.trim().into();
            }
        } else if line.starts_with("***") {
            continue;
        } else if let Some(t) = out.last_mut()
            && let Some((plus, minus)) = t.counts.as_mut()
        {
            if line.starts_with('+') {
                *plus += 1;
            } else if line.starts_with('-') {
                *minus += 1;
            }
        }
    }
    out
}

fn edit_events(call: &ToolCall, ts: Option<i64>, out: &mut Vec<Event>) {
    let touches = edit_touches(call);
    if call.is_error {
        let target = touches
            .first()
            .map(|t| t.path.clone())
            .unwrap_or_else(|| call.name.clone());
        push_error(call, "tool", &target, ts, out);
        return;
    }
    for t in touches {
        let prio = 2;
        let detail = t.counts.map(|(p, m)| counts(p, m));
        out.push(ev(
            Category::File,
            t.action,
            prio,
            &t.path,
            detail,
            Some(call),
            ts,
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// Shell

const SHELLS: &[&str] = &[
    "bash",
    "sh",
    "zsh",
    "/bin/bash",
    "/bin/sh",
    "/bin/zsh",
    "/usr/bin/bash",
    "pwsh",
    "powershell",
];

/// The command line of a shell call: `command` or `cmd`, a string or an argv array (`bash -lc X`
/// gives X, other arrays are joined with spaces).
fn shell_command(input: &Value) -> Option<String> {
    let v = input
        .get("command")
        .or_else(|| input.get("cmd"))
        .or_else(|| input.get("commandLine"))
        .unwrap_or(input);
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Array(a) => {
            let argv: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
            if argv.len() >= 3
                && SHELLS.contains(&argv[0])
                && argv[1].starts_with('-')
                && argv[1].contains('c')
            {
                Some(argv[2..].join(" ").trim().to_string())
            } else if argv.is_empty() {
                None
            } else {
                Some(argv.join(" "))
            }
        }
        _ => None,
    }
}

fn exit_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i-u)(?:process exited with code|exited with code|exit code:?|exit status:?)[ \t]*(-?[0-9]+)")
            .expect("exit regex")
    })
}

/// The exit code a shell call's output reports (Codex `Process exited with code N`, Claude
/// `Exit code N`, Gemini `Exit Code: N`, OpenCode `exit code N`, Codex JSON `metadata.exit_code`).
pub(crate) fn exit_code(output: &str) -> Option<i64> {
    let t = output.trim_start();
    if t.starts_with('{')
        && let Ok(v) = serde_json::from_str::<Value>(t)
        && let Some(c) = v
            .pointer("/metadata/exit_code")
            .or_else(|| v.get("exit_code"))
            .or_else(|| v.get("exitCode"))
            .and_then(Value::as_i64)
    {
        return Some(c);
    }
    let head = &output[..floor_boundary(output, 4096)];
    if !head
        .as_bytes()
        .windows(4)
        .any(|w| w.eq_ignore_ascii_case(b"exit"))
    {
        return None;
    }
    exit_re().captures(head).and_then(|c| c[1].parse().ok())
}

fn floor_boundary(s: &str, max: usize) -> usize {
    let mut i = max.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Output that reports a failed build or test run although no exit code is given (VS Code's
/// terminal tool, Cursor): cargo's `error: could not compile` / `test result: FAILED`, npm's
/// `npm ERR!`, a test summary counting failures (pytest `1 failed, 11 passed`, vitest
/// `Tests  1 failed | 7 passed`, jest `Tests: 1 failed`), `BUILD FAILED`.
fn reports_failure(output: &str) -> bool {
    const MARKS: &[&str] = &[
        "error: could not compile",
        "test result: FAILED",
        "npm ERR!",
        "error: test failed",
        "BUILD FAILED",
    ];
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = || {
        RE.get_or_init(|| {
            Regex::new(r"(?m)(^|[ \t|,:])[1-9][0-9]* failed(?-u:\b)").expect("failed-count regex")
        })
    };
    MARKS.iter().any(|m| output.contains(m))
        || (memchr::memmem::find(output.as_bytes(), b" failed").is_some() && re().is_match(output))
}

fn shell_events(call: &ToolCall, ts: Option<i64>, out: &mut Vec<Event>) {
    let Some(cmd) = shell_command(&call.input) else {
        if call.is_error {
            push_error(call, "tool", &call.name, ts, out);
        }
        return;
    };
    // Codex's legacy `shell` runs `apply_patch` as argv.
    if cmd.starts_with("apply_patch") && cmd.contains("*** Begin Patch") {
        let patch_call = ToolCall {
            input: Value::String(cmd.clone()),
            tool: "edit".into(),
            ..call.clone()
        };
        return edit_events(&patch_call, ts, out);
    }
    // The agent's own exit-code field first, then what the output text reports.
    let code = call
        .exit_code
        .or_else(|| call.output.as_deref().and_then(exit_code));
    let failed = call.is_error
        || code.is_some_and(|c| c != 0)
        || (code.is_none() && call.output.as_deref().is_some_and(reports_failure));
    let action = if failed {
        "failed"
    } else if call.output.is_some() {
        "ok"
    } else {
        "ran"
    };
    let one = collapse(&cmd);
    out.push(ev(
        Category::Command,
        action,
        if failed { 3 } else { 4 },
        &one,
        code.map(|c| format!("exit {c}")),
        Some(call),
        ts,
    ));
    if failed {
        let kind = if code.is_some_and(|c| c != 0) {
            "exit"
        } else {
            "tool"
        };
        push_error(call, kind, &one, ts, out);
    } else {
        if call.output.is_some() {
            for path in removed_paths(&cmd) {
                out.push(ev(
                    Category::File,
                    "deleted",
                    2,
                    &path,
                    None,
                    Some(call),
                    ts,
                ));
            }
        }
        for g in git_actions(&cmd) {
            out.push(ev(Category::Git, g.0, 3, &g.1, Some(g.2), Some(call), ts));
        }
    }
}

/// The paths a command line removes with `rm` or `git rm` (at most 10; flags skipped).
fn removed_paths(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    for seg in split_chain(cmd) {
        let words = shell_words(seg);
        let args = match words.first().map(String::as_str) {
            Some("rm") => &words[1..],
            Some("git") if words.get(1).map(String::as_str) == Some("rm") => &words[2..],
            _ => continue,
        };
        for a in args.iter().filter(|a| !a.starts_with('-') && !a.is_empty()) {
            if out.len() < 10 && !out.contains(a) {
                out.push(a.clone());
            }
        }
    }
    out
}

/// The git actions of a command line: (action, subject, the git command).
fn git_actions(cmd: &str) -> Vec<(&'static str, String, String)> {
    let mut out = Vec::new();
    for seg in split_chain(cmd) {
        let words = shell_words(seg);
        let mut i = 0;
        while i < words.len() && words[i].contains('=') && !words[i].starts_with('-') {
            i += 1; // VAR=value prefixes
        }
        if words.get(i).map(String::as_str) != Some("git") {
            continue;
        }
        i += 1;
        while i < words.len() && words[i].starts_with('-') {
            // git -C dir, -c k=v
            if matches!(words[i].as_str(), "-C" | "-c") {
                i += 1;
            }
            i += 1;
        }
        let Some(sub) = words.get(i) else { continue };
        let args: Vec<&String> = words[i + 1..].iter().collect();
        let positional = || {
            args.iter()
                .filter(|a| !a.starts_with('-'))
                .map(|a| a.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let full = collapse(seg);
        let (action, subject) = match sub.as_str() {
            "commit" => (
                "commit",
                commit_message(&args).unwrap_or_else(|| "commit".into()),
            ),
            "push" => ("push", positional()),
            "checkout" | "switch" => ("checkout", positional()),
            "merge" => ("merge", positional()),
            "rebase" => ("rebase", positional()),
            "reset" => (
                "reset",
                args.iter()
                    .map(|a| a.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            "pull" | "stash" | "tag" | "cherry-pick" | "revert" | "clone" | "init" | "am" => {
                ("other", full.clone())
            }
            "branch" if !args.is_empty() => ("other", full.clone()),
            _ => continue,
        };
        let subject = if subject.trim().is_empty() {
            full.clone()
        } else {
            subject
        };
        out.push((action, subject, full));
    }
    out
}

fn commit_message(args: &[&String]) -> Option<String> {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let msg = if a == "-m" || a == "--message" {
            i += 1;
            args.get(i).map(|s| s.as_str())
        } else if let Some(m) = a.strip_prefix("--message=") {
            Some(m)
        } else if a.starts_with('-') && !a.starts_with("--") && a.ends_with('m') && a.len() > 2 {
            // -am "msg"
            i += 1;
            args.get(i).map(|s| s.as_str())
        } else {
            None
        };
        if let Some(m) = msg {
            let m = heredoc_body(m).unwrap_or_else(|| m.to_string());
            return Some(first_line(&m));
        }
        i += 1;
    }
    None
}

/// The body of `$(cat <<'EOF' … EOF)` (how Claude Code writes commit messages).
fn heredoc_body(m: &str) -> Option<String> {
    let start = m.find("<<")?;
    let rest = &m[start + 2..];
    let first_nl = rest.find('\n')?;
    let marker = rest[..first_nl]
        .trim()
        .trim_matches(['\'', '"', '-', ' '])
        .to_string();
    let body = &rest[first_nl + 1..];
    let lines: Vec<&str> = body.lines().take_while(|l| l.trim() != marker).collect();
    Some(lines.join("\n"))
}

/// Split a command line at `&&`, `||`, `;`, `|` and newlines outside quotes and `$(…)`.
fn split_chain(cmd: &str) -> Vec<&str> {
    let b = cmd.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut i, mut q, mut depth) = (0, 0, 0u8, 0i32);
    while i < b.len() {
        let c = b[i];
        if q != 0 {
            if c == b'\\' && q == b'"' {
                i += 2;
                continue;
            }
            if c == b'$' && b.get(i + 1) == Some(&b'(') {
                depth += 1;
            } else if c == b')' && depth > 0 {
                depth -= 1;
            } else if c == q && depth == 0 {
                q = 0;
            }
        } else if c == b'\'' || c == b'"' {
            q = c;
        } else if depth == 0
            && (c == b';' || c == b'\n' || c == b'|' || (c == b'&' && b.get(i + 1) == Some(&b'&')))
        {
            out.push(&cmd[start..i]);
            if (c == b'&' || c == b'|') && b.get(i + 1) == Some(&c) {
                i += 1;
            }
            start = i + 1;
        }
        i += 1;
    }
    out.push(&cmd[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Words of a command with quotes removed (single quotes literal, double quotes with `\`
/// escapes; `$(…)` inside double quotes kept as written).
fn shell_words(seg: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut has = false;
    let mut chars = seg.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                has = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    cur.push(d);
                }
            }
            '"' => {
                has = true;
                let mut depth = 0;
                while let Some(d) = chars.next() {
                    if d == '\\' {
                        if let Some(e) = chars.next() {
                            if !matches!(e, '"' | '\\' | '$' | '`') {
                                cur.push('\\');
                            }
                            cur.push(e);
                        }
                        continue;
                    }
                    if d == '$' && chars.peek() == Some(&'(') {
                        depth += 1;
                    } else if d == ')' && depth > 0 {
                        depth -= 1;
                    } else if d == '"' && depth == 0 {
                        break;
                    }
                    cur.push(d);
                }
            }
            c if c.is_whitespace() => {
                if has || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    has = false;
                }
            }
            c => cur.push(c),
        }
    }
    if has || !cur.is_empty() {
        out.push(cur);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Tasks and answers

/// A todo status in one vocabulary: `pending`, `in_progress`, `completed`, `cancelled`.
fn norm_status(s: &str) -> &'static str {
    match s.to_ascii_lowercase().replace(['-', ' '], "_").as_str() {
        "in_progress" | "active" | "doing" | "started" => "in_progress",
        "completed" | "complete" | "done" | "finished" => "completed",
        "cancelled" | "canceled" | "skipped" => "cancelled",
        _ => "pending",
    }
}

fn todo_events(call: &ToolCall, ts: Option<i64>, out: &mut Vec<Event>) {
    let input = &call.input;
    if call.is_error {
        push_error(call, "tool", &call.name, ts, out);
        return;
    }
    if s(input, &["operation"]) == Some("read") {
        return;
    }
    let items = ["todos", "plan", "todoList", "items"]
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_array));
    let Some(items) = items else { return };
    for it in items {
        let text = match it {
            Value::String(s) => Some(s.as_str()),
            _ => s(
                it,
                &["content", "step", "title", "description", "text", "task"],
            ),
        };
        let Some(text) = text else { continue };
        let status = norm_status(s(it, &["status", "state"]).unwrap_or("pending"));
        let (action, prio) = match status {
            "completed" | "cancelled" => ("done", 3),
            "in_progress" => ("updated", 1),
            _ => ("created", 1),
        };
        out.push(ev(
            Category::Task,
            action,
            prio,
            &collapse(text),
            Some(status.into()),
            Some(call),
            ts,
        ));
    }
}

fn answer_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r#""([^"]+)"[ \t]*=[ \t]*"([^"]*)""#).expect("answer regex"))
}

fn answer_events(call: &ToolCall, ts: Option<i64>, out: &mut Vec<Event>) {
    if call.is_error {
        return;
    }
    let Some(output) = call.output.as_deref() else {
        return;
    };
    let mut n = 0;
    for c in answer_re().captures_iter(output).take(MAX_DECISIONS) {
        out.push(ev(
            Category::Decision,
            "answered",
            1,
            &format!("{} → {}", &c[1], &c[2]),
            None,
            Some(call),
            ts,
        ));
        n += 1;
    }
    if n > 0 {
        return;
    }
    // Codex request_user_input: {"answers": {"<id>": {"answers": ["…"]}}}.
    let questions: Vec<(String, String)> = call
        .input
        .get("questions")
        .and_then(Value::as_array)
        .map(|qs| {
            qs.iter()
                .map(|q| {
                    (
                        s(q, &["id"]).unwrap_or("").to_string(),
                        s(q, &["question", "header", "text"])
                            .unwrap_or("")
                            .to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    if let Ok(v) = serde_json::from_str::<Value>(output)
        && let Some(ans) = v.get("answers").and_then(Value::as_object)
    {
        for (id, a) in ans.iter().take(MAX_DECISIONS) {
            let text = a
                .get("answers")
                .and_then(Value::as_array)
                .map(|x| {
                    x.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .or_else(|| a.as_str().map(str::to_string))
                .unwrap_or_default();
            let q = questions
                .iter()
                .find(|(qid, _)| qid == id)
                .map(|(_, q)| q.as_str())
                .unwrap_or(id);
            out.push(ev(
                Category::Decision,
                "answered",
                1,
                &format!("{q} → {text}"),
                None,
                Some(call),
                ts,
            ));
        }
        return;
    }
    let q = questions
        .first()
        .map(|(_, q)| q.as_str())
        .unwrap_or(call.name.as_str());
    out.push(ev(
        Category::Decision,
        "answered",
        1,
        &format!("{q} → {}", collapse(output)),
        None,
        Some(call),
        ts,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call the user declined at Claude Code's permission prompt is a decision, not an error,
    /// and a declined edit edited nothing.
    #[test]
    fn a_declined_call_is_a_decision_not_an_error() {
        let call = |name: &str, tool: &str, input: Value, output: &str| ToolCall {
            id: "toolu_1".into(),
            name: name.into(),
            tool: tool.into(),
            input,
            output: Some(output.into()),
            is_error: true,
            exit_code: None,
        };
        let mut out = Vec::new();
        tool_events(
            &call(
                "Bash",
                "shell",
                serde_json::json!({"command": "rm -rf target\necho done"}),
                "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.",
            ),
            Some(7),
            &mut out,
        );
        tool_events(
            &call(
                "Edit",
                "edit",
                serde_json::json!({"file_path": "/w/src/lib.rs", "old_string": "a", "new_string": "b"}),
                "The user doesn't want to take this action right now. STOP what you are doing and wait for the user to tell you how to proceed.",
            ),
            Some(8),
            &mut out,
        );
        let got: Vec<(Category, &str, &str)> = out
            .iter()
            .map(|e| (e.category, e.action.as_str(), e.subject.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    Category::Decision,
                    "declined",
                    "declined Bash: rm -rf target"
                ),
                (
                    Category::Decision,
                    "declined",
                    "declined Edit: /w/src/lib.rs"
                ),
            ]
        );
        // Codex CLI's denial, whatever its error flag.
        let mut out = Vec::new();
        let mut c = call(
            "exec_command",
            "shell",
            serde_json::json!({"cmd": "git push --force"}),
            "exec command rejected by user",
        );
        c.is_error = false;
        tool_events(&c, None, &mut out);
        let got: Vec<(Category, &str)> = out
            .iter()
            .map(|e| (e.category, e.subject.as_str()))
            .collect();
        assert_eq!(
            got,
            [(
                Category::Decision,
                "declined exec_command: git push --force"
            )]
        );
        // Any other error stays one.
        let mut out = Vec::new();
        tool_events(
            &call(
                "Bash",
                "shell",
                serde_json::json!({"command": "false"}),
                "Exit code 1",
            ),
            None,
            &mut out,
        );
        assert!(out.iter().any(|e| e.category == Category::Error), "{out:?}");
    }

    /// The two regexes [`is_decision`] replaced: the oracle it is compared against.
    fn oracle(lower: &str) -> bool {
        static START: OnceLock<Regex> = OnceLock::new();
        static ANY: OnceLock<Regex> = OnceLock::new();
        let start = START.get_or_init(|| {
            Regex::new(
                r"^(?:(?:please|and|but|also|ok|okay|so|then|no|yes|actually)(?-u:\b)[,!]?[ \t]+)*(?:don'?t|do not|never|always|avoid|stop|prefer|keep|stick (?:to|with)|switch to|let'?s (?:go with|use|keep|stick)|go with|from now on|make sure|remember to|no need to|we(?:'ll| will| should) use|use(?-u:\b).*(?-u:\b)(?:instead|only|everywhere|rather))(?-u:\b)",
            )
            .unwrap()
        });
        let any = ANY.get_or_init(|| {
            Regex::new(
                r"(?-u:\b)(?:instead of|rather than|from now on|let'?s go with|must not|mustn'?t|should not|shouldn'?t|we(?:'ll| will) use|i don'?t want|we don'?t want|decided to)(?-u:\b)",
            )
            .unwrap()
        });
        start.is_match(lower) || any.is_match(lower)
    }

    #[test]
    fn decisions_by_hand_equal_the_regexes() {
        // Fragments that make up, break or almost make up a decision, glued with or without
        // separators: the hand matcher and the regexes must agree on every sentence.
        const BITS: &[&str] = &[
            "please",
            "and",
            "but",
            "also",
            "ok",
            "okay",
            "so",
            "then",
            "no",
            "yes",
            "actually",
            "don't",
            "dont",
            "don",
            "do not",
            "do",
            "never",
            "always",
            "avoid",
            "stop",
            "stopped",
            "prefer",
            "keep",
            "keeps",
            "stick to",
            "stick with",
            "stick",
            "switch to",
            "let's",
            "lets",
            "let",
            "go with",
            "go",
            "with",
            "from now on",
            "from",
            "make sure",
            "remember to",
            "no need to",
            "need",
            "we'll use",
            "we will use",
            "we should use",
            "we",
            "use",
            "used",
            "reuse",
            "instead",
            "instead of",
            "only",
            "everywhere",
            "rather",
            "rather than",
            "than",
            "must not",
            "mustn't",
            "mustnt",
            "must",
            "should not",
            "shouldn't",
            "shouldnt",
            "i don't want",
            "we don't want",
            "want",
            "the",
            "parser",
            "x_only",
            "only_",
            "é",
            "ünd",
            "1",
            "_",
            ",",
            "!",
            "?",
            "'",
            "decided to",
            "decided",
            "undecided to",
        ];
        const GLUE: &[&str] = &[
            " ", " ", " ", "", "", ",", "!", ", ", "! ", "\t", "  ", "-", ".", "é",
        ];
        let mut rng = crate::test_rng::Xorshift(0x9E37_79B9_7F4A_7C15);
        let mut next = |n: usize| rng.below(n);
        let (mut yes, mut total) = (0, 0);
        for _ in 0..60_000 {
            let mut s = String::new();
            for _ in 0..1 + next(6) {
                s.push_str(BITS[next(BITS.len())]);
                s.push_str(GLUE[next(GLUE.len())]);
            }
            if next(2) == 0 {
                s = s.trim_end().to_string();
            }
            let want = oracle(&s);
            assert_eq!(is_decision(&s), want, "sentence {s:?}");
            yes += usize::from(want);
            total += 1;
        }
        // Both answers are well represented (a generator that never made a decision would
        // test nothing).
        assert!(yes > total / 10 && yes < total * 9 / 10, "{yes} of {total}");
    }

    #[test]
    fn decisions_by_hand_known_sentences() {
        for (s, want) in [
            ("no need to add a test", true),
            ("no, don't touch the parser", true),
            ("please, use tabs instead", true),
            ("use tabs", false),
            ("we should use sqlite", true),
            ("let's go with plan b", true),
            ("keeps failing", false),
            ("it must not panic", true),
            ("mustn't", true),
            ("the parser stopped", false),
            ("ok okay so then never again", true),
        ] {
            assert_eq!(is_decision(s), want, "{s}");
            assert_eq!(oracle(s), want, "oracle: {s}");
        }
    }
}
