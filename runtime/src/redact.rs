//! Secret redaction (DESIGN principle 5: secrets are redacted before anything is written to the
//! store or an index).
//!
//! [`redact`] replaces every secret it recognises with `[redacted:<kind>]`. The store calls
//! [`redact_record`] on every record and [`redact`] on the session title before writing, so every
//! agent's messages, tool inputs and outputs pass through here.
//!
//! Before the secret rules, `<private>…</private>` spans are removed whole and replaced by
//! [`PRIVATE_MARKER`] (`[private]`): a user marks what memtrail must never store. The tags are
//! matched without regard to case; an unclosed `<private>` hides the rest of the text (a title
//! cut short, a paste that lost its end). See [`strip_private`].
//!
//! The rules are a table of regexes, each compiled on first use. One Aho-Corasick scan for the
//! rules' literal needles (`AKIA`, `sk-`, `://`, `token`, …) runs first: text without any is
//! returned borrowed, with no allocation and no further scanning, and only the rules whose
//! needles occur are compiled and run.

use aho_corasick::AhoCorasick;
use memtrail_adapters::{Message, Part, Record};
use regex::Regex;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::{LazyLock, OnceLock};

/// The marker written in place of a secret: `[redacted:<kind>]`.
pub const MARKER_PREFIX: &str = "[redacted:";

/// How a rule's match is checked before it is replaced.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Always replace.
    None,
    /// A `--flag value`: skip a bare lowercase word (prose such as `--password followed by`).
    Flag,
    /// A `name = value` assignment: skip code and ordinary words (see [`looks_like_code`]) and
    /// values shorter than 8 characters.
    Assignment,
    /// A password in a URL: the user part (group `u`) at most 100 characters, the password at
    /// most 200 (bounds checked here rather than as `{1,100}` in the pattern: a counted
    /// repetition of a negated Unicode class compiles to a 5 ms automaton, paid by every hook).
    UrlPassword,
}

/// A rule as applied: its kind, its compiled regex and its check.
struct Rule<'a> {
    kind: &'static str,
    re: &'a Regex,
    check: Check,
}

/// `(kind, pattern, check)`. Patterns are kept cheap to compile (a hook compiles the ones its
/// text needs): ASCII case folding, no counted repetition of a negated class, no leading
/// name class where only a later group is replaced. Order matters: specific token formats first, so that the generic
/// rules (bearer, URL password, flags, assignments) see `[redacted:…]` and leave it alone. A
/// pattern with a group named `s` has only that group replaced; otherwise the whole match is.
const RULES: &[(&str, &str, Check)] = &[
    (
        "private_key",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY-----(?s:.*?)(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY-----|\z)",
        Check::None,
    ),
    (
        "aws_access_key",
        r"(?-u:\b)(?:AKIA|ASIA)[A-Z0-9]{16}(?-u:\b)",
        Check::None,
    ),
    (
        "aws_secret_key",
        r#"(?i-u)aws_secret_access_key\\?["']?\s*[:=]\s*\\?["']?(?P<s>[A-Za-z0-9/+]{40})"#,
        Check::None,
    ),
    (
        "anthropic_key",
        r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20,}",
        Check::None,
    ),
    (
        "openai_key",
        r"(?-u:\b)sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{32,})",
        Check::None,
    ),
    (
        "github_token",
        r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
        Check::None,
    ),
    (
        "gitlab_token",
        r"(?-u:\b)glpat-[A-Za-z0-9_-]{20,}",
        Check::None,
    ),
    (
        "slack_token",
        r"(?-u:\b)xox[baprs]-[0-9]{6,}-[A-Za-z0-9-]{8,}",
        Check::None,
    ),
    (
        "stripe_key",
        r"(?-u:\b)[sr]k_live_[A-Za-z0-9]{16,}",
        Check::None,
    ),
    ("npm_token", r"(?-u:\b)npm_[A-Za-z0-9]{36,}", Check::None),
    (
        "pypi_token",
        r"(?-u:\b)pypi-[A-Za-z0-9_-]{50,}",
        Check::None,
    ),
    (
        "jwt",
        r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        Check::None,
    ),
    (
        "bearer_token",
        r#"(?i-u)authorization\\?["']?\s*[:=]\s*\\?["']?bearer\s+(?P<s>[A-Za-z0-9._~+/-]{8,}=*)"#,
        Check::None,
    ),
    (
        "url_password",
        r"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]{0,20}://(?P<u>[^\s:/@]+):(?P<s>[^\s@/]+)@",
        Check::UrlPassword,
    ),
    (
        "cli_secret",
        r#"--(?:password|passphrase|token|secret|api-key)(?:=|[ \t]+)(?P<s>"[^"\r\n]+"|'[^'\r\n]+'|[^\s"'-][^\s"']*)"#,
        Check::Flag,
    ),
    (
        "secret_assignment",
        r#"(?i-u:secret|token|passw(?:or)?d|api_?key|private_key)[A-Za-z0-9_.-]*\\?["']?[ \t]*(?::=|=|:)[ \t]*\\?["']?(?P<s>[^\s"'\\,;)}\]]+)"#,
        Check::Assignment,
    ),
];

/// Per rule (same order as [`RULES`]), substrings of which every match of the rule holds at
/// least one (compared without regard to ASCII case: a superset; a hit only means "look
/// closer"). A rule is compiled and run only on text that holds one of its needles.
const NEEDLES: &[&[&str]] = &[
    &["PRIVATE KEY"],
    &["AKIA", "ASIA"],
    &["aws_secret_access_key"],
    &["sk-ant-"],
    &["sk-"],
    &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
    &["glpat-"],
    &["xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-"],
    &["sk_live_", "rk_live_"],
    &["npm_"],
    &["pypi-"],
    &["eyJ"],
    &["authorization"],
    &["://"],
    &["--pass", "--token", "--secret", "--api-key"],
    &[
        "secret",
        "token",
        "passw",
        "api_key",
        "apikey",
        "private_key",
    ],
];

const _: () = assert!(NEEDLES.len() == RULES.len() && RULES.len() <= 64);

/// Every needle of every rule, and the rule each belongs to.
static NEEDLE_AC: LazyLock<(AhoCorasick, Vec<usize>)> = LazyLock::new(|| {
    let mut pats = Vec::new();
    let mut rule_of = Vec::new();
    for (i, needles) in NEEDLES.iter().enumerate() {
        for n in *needles {
            pats.push(*n);
            rule_of.push(i);
        }
    }
    let ac = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .kind(Some(aho_corasick::AhoCorasickKind::DFA))
        .build(pats)
        .expect("redaction needles build");
    (ac, rule_of)
});

/// The rules (as a bit set over [`RULES`]) whose needles occur in `text`.
fn rules_hit(text: &str) -> u64 {
    let (ac, rule_of) = &*NEEDLE_AC;
    let mut set = 0u64;
    for m in ac.find_overlapping_iter(text) {
        set |= 1 << rule_of[m.pattern().as_usize()];
    }
    set
}

/// Each rule's regex, compiled on first use (compiling all of them costs ~10 ms, which a hook
/// whose text needs one or two rules should not pay).
static COMPILED: [OnceLock<Regex>; RULES.len()] = [const { OnceLock::new() }; RULES.len()];

fn rule(i: usize) -> Rule<'static> {
    let (kind, pat, check) = RULES[i];
    Rule {
        kind,
        re: COMPILED[i].get_or_init(|| Regex::new(pat).expect("redaction rule compiles")),
        check,
    }
}

/// The names of every kind of secret recognised, in rule order.
pub fn kinds() -> impl Iterator<Item = &'static str> {
    RULES.iter().map(|r| r.0)
}

/// What a `<private>…</private>` span is replaced with.
pub const PRIVATE_MARKER: &str = "[private]";

static PRIVATE_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?is)<private>.*?(?:</private>|\z)").expect("private span rule compiles")
});

/// `text` with every `<private>…</private>` span (tags included, case-insensitive) replaced by
/// [`PRIVATE_MARKER`]; an opening tag without a closing one hides everything after it. A stray
/// `</private>` is left as it is. Borrowed (no allocation) when there is no `<private>` tag.
pub fn strip_private(text: &str) -> Cow<'_, str> {
    // Cheap pre-check: no '<' followed by "private" means nothing to do.
    let has_tag = text
        .as_bytes()
        .windows(9)
        .any(|w| w[0] == b'<' && w[1..8].eq_ignore_ascii_case(b"private") && w[8] == b'>');
    if !has_tag {
        return Cow::Borrowed(text);
    }
    PRIVATE_RE.replace_all(text, PRIVATE_MARKER)
}

/// `text` with every `<private>…</private>` span replaced by `[private]` (see [`strip_private`])
/// and every recognised secret replaced by `[redacted:<kind>]`. Borrowed (no allocation) when
/// nothing was replaced.
pub fn redact(text: &str) -> Cow<'_, str> {
    match strip_private(text) {
        Cow::Borrowed(t) => redact_secrets(t),
        Cow::Owned(t) => Cow::Owned(redact_secrets(&t).into_owned()),
    }
}

/// [`redact`] without the `<private>` spans: only the secret rules.
fn redact_secrets(text: &str) -> Cow<'_, str> {
    let mut hit = rules_hit(text);
    if hit == 0 {
        return Cow::Borrowed(text);
    }
    let mut out = Cow::Borrowed(text);
    for i in 0..RULES.len() {
        if hit & (1 << i) == 0 {
            continue;
        }
        if let Some(new) = apply_rule(&rule(i), &out) {
            out = Cow::Owned(new);
            // The later rules run on the new text (a rule cannot match without its needles).
            hit = rules_hit(&out);
        }
    }
    out
}

/// [`redact`] for a session title. Adapters cut titles to a length (ending them with `…`), which
/// may cut a secret so that no rule matches it any more: a cut last word that still holds a
/// trigger substring, or is long and mixes letters and digits, is redacted as `truncated`.
pub fn redact_title(title: &str) -> Cow<'_, str> {
    let out = redact(title);
    let Some(body) = out.strip_suffix('…') else {
        return out;
    };
    let start = body.rfind(char::is_whitespace).map_or(0, |i| {
        i + body[i..].chars().next().map_or(1, char::len_utf8)
    });
    let last = &body[start..];
    let suspicious = !last.contains(MARKER_PREFIX)
        && (rules_hit(last) != 0
            || (last.len() >= 16
                && last.chars().any(|c| c.is_ascii_digit())
                && last.chars().any(|c| c.is_ascii_alphabetic())));
    if !suspicious {
        return out;
    }
    Cow::Owned(format!("{}{MARKER_PREFIX}truncated]…", &body[..start]))
}

/// [`redact`] in place: `s` is only rewritten when something was redacted.
pub fn redact_string(s: &mut String) {
    let new = match redact(s) {
        Cow::Owned(o) => Some(o),
        Cow::Borrowed(_) => None,
    };
    if let Some(n) = new {
        *s = n;
    }
}

/// Redact every string inside a JSON value, recursively. A string value under an object key that
/// names a secret (`"password": "…"`) is redacted whole when it looks like one.
pub fn redact_json(v: &mut Value) {
    match v {
        Value::String(s) => redact_string(s),
        Value::Array(a) => a.iter_mut().for_each(redact_json),
        Value::Object(o) => {
            for (k, v) in o.iter_mut() {
                if let Value::String(s) = v
                    && is_secret_name(k)
                    && s.len() >= 8
                    && !s.chars().any(char::is_whitespace)
                    && !s.starts_with(MARKER_PREFIX)
                    && !looks_like_code(s, true)
                {
                    *s = "[redacted:secret_assignment]".to_string();
                } else {
                    redact_json(v);
                }
            }
        }
        _ => {}
    }
}

/// Redact every text, thinking, tool input and tool output of a message.
pub fn redact_message(m: &mut Message) {
    for p in m.parts.iter_mut() {
        match p {
            Part::Text { text } | Part::Thinking { text } => redact_string(text),
            Part::ToolCall(c) => {
                redact_json(&mut c.input);
                if let Some(o) = c.output.as_mut() {
                    redact_string(o);
                }
            }
            Part::ToolResult { output, .. } => redact_string(output),
        }
    }
}

/// Redact everything a record would write.
pub fn redact_record(r: &mut Record) {
    match r {
        Record::Message(m) | Record::Replace(m) => redact_message(m),
        Record::ToolResult { output, .. } => redact_string(output),
        Record::Rewind { .. } => {}
    }
}

fn is_secret_name(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    [
        "secret",
        "token",
        "password",
        "passwd",
        "api_key",
        "apikey",
        "private_key",
    ]
    .iter()
    .any(|w| l.contains(w))
}

/// True for values that are code or ordinary words rather than secrets: numbers (`max_tokens =
/// 100000000`), identifiers and member chains, optionally called or indexed (`self.token`,
/// `os.environ["API_KEY"]`, `crypto.randomBytes(32)`, `Optional[str]`), and placeholders (`$VAR`,
/// `${{ secrets.X }}`, `<password>`, `****`). When `quoted`, only a lowercase word or
/// snake_case name (`"access_token"`) and numbers count as non-secrets.
fn looks_like_code(v: &str, quoted: bool) -> bool {
    if v.starts_with(['$', '<', '{', '%']) || v.chars().all(|c| c == '*' || c == '.') {
        return true;
    }
    if v.chars()
        .all(|c| c.is_ascii_digit() || c == '_' || c == '.' || c == ',')
    {
        return true;
    }
    if quoted {
        return v
            .chars()
            .all(|c| c.is_ascii_lowercase() || c == '_' || c == '.');
    }
    let head = v.split(['(', '[', '<']).next().unwrap_or("");
    // An identifier or member chain (`self.token`, `os.environ`), possibly called or indexed.
    head.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && head
            .chars()
            .all(|c| c.is_ascii_alphabetic() || c == '_' || c == '.')
}

/// The replacement of one rule over `text`, or `None` when it changes nothing.
fn apply_rule(rule: &Rule, text: &str) -> Option<String> {
    let mut out: Option<String> = None;
    let mut last = 0;
    for caps in rule.re.captures_iter(text) {
        let whole = caps.get(0).expect("group 0");
        let span = caps.name("s").unwrap_or(whole);
        if rule.check == Check::UrlPassword {
            let user_chars = caps.name("u").map_or(0, |u| u.as_str().chars().count());
            if user_chars > 100 || span.as_str().chars().count() > 200 {
                continue;
            }
        }
        if !keep_match(rule.check, span.as_str(), text, span.start()) {
            continue;
        }
        let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
        o.push_str(&text[last..span.start()]);
        o.push_str(MARKER_PREFIX);
        o.push_str(rule.kind);
        o.push(']');
        last = span.end();
    }
    let mut o = out?;
    o.push_str(&text[last..]);
    Some(o)
}

fn keep_match(check: Check, secret: &str, text: &str, at: usize) -> bool {
    if secret.contains(MARKER_PREFIX) {
        return false;
    }
    match check {
        Check::None => true,
        Check::Flag => {
            let quoted = secret.starts_with(['"', '\'']);
            quoted
                || !(secret.starts_with(['$', '<', '{'])
                    || secret.chars().all(|c| c.is_ascii_lowercase()))
        }
        Check::UrlPassword => true,
        Check::Assignment => {
            if secret.chars().nth(7).is_none() {
                return false;
            }
            let quoted = text[..at].ends_with(['"', '\'']);
            !looks_like_code(secret, quoted)
        }
    }
}
