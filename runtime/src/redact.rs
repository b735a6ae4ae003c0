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
//! The rules are a table of regexes, each compiled on first use. One scan for the rules'
//! literal needles (`AKIA`, `sk-`, `://`, `token`, …) runs first: text without any is returned
//! borrowed, with no allocation and no further scanning, and only the rules whose needles occur
//! (followed, for `token`-like and `://` needles, by the shape of an assignment or of a URL
//! password) are compiled and run.

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
// Needle tables index rules and needles with a byte, and needles are at most 255 bytes long.

/// Bytes from the most to the least frequent in code and prose (roughly); a byte not listed
/// is rarer than all of them. Only the speed of [`for_each_needle`] depends on it.
const BY_FREQUENCY: &[u8] =
    b" etaoinsrlcdhu\npm.gfy_b,w=v\"-()k/:x'0123456789j;zq{}[]<>|@#$%&*+?!\\^`~";

/// The needle table: for each byte, the needles it anchors, as `(rule, needle, offset of the
/// byte in the needle)`. Each needle is anchored by its rarest byte (by [`BY_FREQUENCY`]), in
/// both ASCII cases.
static NEEDLE_ANCHORS: LazyLock<[Vec<(u8, u8, u8)>; 256]> = LazyLock::new(|| {
    let rank = |b: u8| {
        BY_FREQUENCY
            .iter()
            .position(|&c| c == b.to_ascii_lowercase())
            .map_or(usize::MAX, |p| p)
    };
    let mut at: [Vec<(u8, u8, u8)>; 256] = std::array::from_fn(|_| Vec::new());
    for (rule, needles) in NEEDLES.iter().enumerate() {
        for (k, n) in needles.iter().enumerate() {
            let (off, b) = n
                .bytes()
                .enumerate()
                .max_by_key(|&(_, b)| rank(b))
                .expect("needles are not empty");
            let entry = (rule as u8, k as u8, off as u8);
            at[b.to_ascii_lowercase() as usize].push(entry);
            if b.is_ascii_alphabetic() {
                at[b.to_ascii_uppercase() as usize].push(entry);
            }
        }
    }
    at
});

/// Calls `f(rule, end)` for every occurrence of every rule's needle in `text` (compared
/// without regard to ASCII case, overlapping occurrences included), `end` being the byte just
/// past it. One pass over the text and no automaton to build: a hook pays about a
/// microsecond to set up where an Aho-Corasick DFA of the same needles took 0.13 ms to
/// build (its scan is 1.4 times faster, which a hook's 20 KB does not make up for).
fn for_each_needle(text: &[u8], mut f: impl FnMut(usize, usize)) {
    let at = &*NEEDLE_ANCHORS;
    for (p, &b) in text.iter().enumerate() {
        for &(rule, k, off) in &at[b as usize] {
            let needle = NEEDLES[rule as usize][k as usize].as_bytes();
            let Some(start) = p.checked_sub(off as usize) else {
                continue;
            };
            let end = start + needle.len();
            if end <= text.len() && text[start..end].eq_ignore_ascii_case(needle) {
                f(rule as usize, end);
            }
        }
    }
}

/// The rules (as a bit set over [`RULES`]) whose needles occur in `text`.
fn rules_hit(text: &str) -> u64 {
    let mut set = 0u64;
    for_each_needle(text.as_bytes(), |rule, _| set |= 1 << rule);
    set
}

/// The rules (as a bit set over [`RULES`]) that could match `text`: one of its needles occurs,
/// followed by what the rule needs after it (see [`Shape`]). A rule outside the set cannot
/// match, so it is neither compiled nor run.
fn rules_plausible(text: &str) -> u64 {
    let b = text.as_bytes();
    let mut set = 0u64;
    for_each_needle(b, |rule, end| {
        if set & (1 << rule) == 0 && SHAPES[rule].follows(b, end) {
            set |= 1 << rule;
        }
    });
    set
}

/// What must follow a rule's needle for the rule to match there: read exactly as far as it
/// reads, and looser than the rule beyond (any byte that is not ASCII whitespace stands for a
/// `[^\s…]` class), so a rule turned down could not have replaced anything from that needle.
/// Needles are common words of code and prose (`token`, `://`, `npm_`), and the regexes cost
/// a hook 0.1–0.5 ms each to compile.
enum Shape {
    /// Nothing checked.
    Any,
    /// At least `n` bytes of the class right after the needle (`npm_` + 36 alphanumerics).
    Run(fn(&u8) -> bool, usize),
    /// `secret_assignment`: the needle (`token`, `secret`, `passw`, `api_key`, …) starts the
    /// rule's keyword, then `[A-Za-z0-9_.-]*`, an optional `\`, an optional quote, `[ \t]*`,
    /// `:=`, `=` or `:` (not `::`, a path), `[ \t]*`, an optional `\` and quote, and a value
    /// of at least 8 bytes (the rule keeps values of 8 characters or more, see [`keep_match`]).
    Assignment,
    /// `url_password`: after `://`, a user part up to a `:`, then a password part up to an
    /// `@`, neither empty and neither crossing whitespace or `/`.
    UrlPassword,
}

/// `[A-Za-z0-9_-]`: the body of most token formats.
fn token_byte(b: &u8) -> bool {
    b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-'
}

/// Per rule, in [`RULES`] order (the comments give the part of the pattern each stands for).
const SHAPES: &[Shape] = &[
    Shape::Any,                                // private_key
    Shape::Run(u8::is_ascii_alphanumeric, 16), // (?:AKIA|ASIA)[A-Z0-9]{16}
    Shape::Any,                                // aws_secret_key
    Shape::Run(token_byte, 20),                // sk-ant-[A-Za-z0-9_-]{20,}
    Shape::Run(token_byte, 20),                // sk-(?:proj-…{20,}|[A-Za-z0-9]{32,})
    Shape::Run(token_byte, 22),                // gh?_[A-Za-z0-9]{36,}, github_pat_…{22,}
    Shape::Run(token_byte, 20),                // glpat-[A-Za-z0-9_-]{20,}
    Shape::Run(u8::is_ascii_digit, 6),         // xox?-[0-9]{6,}-
    Shape::Run(u8::is_ascii_alphanumeric, 16), // [sr]k_live_[A-Za-z0-9]{16,}
    Shape::Run(u8::is_ascii_alphanumeric, 36), // npm_[A-Za-z0-9]{36,}
    Shape::Run(token_byte, 50),                // pypi-[A-Za-z0-9_-]{50,}
    Shape::Run(token_byte, 8),                 // eyJ[A-Za-z0-9_-]{8,}\.
    Shape::Any,                                // bearer_token
    Shape::UrlPassword,                        // url_password
    Shape::Any,                                // cli_secret
    Shape::Assignment,                         // secret_assignment
];

const _: () = assert!(SHAPES.len() == RULES.len());

impl Shape {
    /// Whether the bytes from `end` (just past a needle of the rule) can continue a match.
    fn follows(&self, b: &[u8], end: usize) -> bool {
        let run = |from: usize, class: &dyn Fn(&u8) -> bool| {
            from + b[from.min(b.len())..]
                .iter()
                .take_while(|c| class(c))
                .count()
        };
        match self {
            Shape::Any => true,
            Shape::Run(class, n) => run(end, class) - end >= *n,
            Shape::Assignment => {
                let mut j = run(end, &|c| {
                    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')
                });
                j += usize::from(b.get(j) == Some(&b'\\'));
                j += usize::from(matches!(b.get(j), Some(b'"' | b'\'')));
                j = run(j, &|c| matches!(c, b' ' | b'\t'));
                match (b.get(j), b.get(j + 1)) {
                    (Some(b':'), Some(b'=')) => j += 2,
                    (Some(b':'), Some(b':')) => return false,
                    (Some(b':' | b'='), _) => j += 1,
                    _ => return false,
                }
                j = run(j, &|c| matches!(c, b' ' | b'\t'));
                j += usize::from(b.get(j) == Some(&b'\\'));
                j += usize::from(matches!(b.get(j), Some(b'"' | b'\'')));
                let value = |c: &u8| !c.is_ascii_whitespace() && !b"\"'\\,;)}]".contains(c);
                run(j, &value) - j >= 8
            }
            Shape::UrlPassword => {
                let user_end = run(end, &|c| !c.is_ascii_whitespace() && !b":/@".contains(c));
                if user_end == end || b.get(user_end) != Some(&b':') {
                    return false;
                }
                let pass_end = run(user_end + 1, &|c| {
                    !c.is_ascii_whitespace() && !b"@/".contains(c)
                });
                pass_end > user_end + 1 && b.get(pass_end) == Some(&b'@')
            }
        }
    }
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

/// What a `<private>` span that is not closed is replaced with: it hides everything after it
/// (and, in a message, its later parts: see [`crate::seams`]).
pub const PRIVATE_OPEN_MARKER: &str = "[private…]";

/// A span: the opening tag (case-insensitive, blanks allowed inside the brackets, attributes
/// after a blank: `<private>`, `< PRIVATE >`, `<private reason="x">`), then the shortest text up
/// to a closing tag (`</private>`, `</ private >`) or the end (group `c` then empty).
static PRIVATE_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?is)<[ \t\r\n]*private(?:[ \t\r\n][^<>]*)?>.*?(?P<c><[ \t\r\n]*/[ \t\r\n]*private[ \t\r\n]*>|\z)",
    )
    .expect("private span rule compiles")
});

/// `text` with every `<private>…</private>` span (tags included; spelled as [`PRIVATE_RE`]
/// accepts) replaced by [`PRIVATE_MARKER`]; an opening tag without a closing one hides
/// everything after it, replaced by [`PRIVATE_OPEN_MARKER`]. A stray closing tag is left as it
/// is here (see [`crate::seams`] for spans across the parts of a message). Borrowed (no
/// allocation) when there is no opening tag.
pub fn strip_private(text: &str) -> Cow<'_, str> {
    // Cheap pre-check: a '<', optional blanks, then "private".
    let b = text.as_bytes();
    let has_tag = memchr::memchr_iter(b'<', b).any(|i| {
        let rest = &b[i + 1..];
        let blanks = rest
            .iter()
            .take_while(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
            .count();
        rest.len() >= blanks + 7 && rest[blanks..blanks + 7].eq_ignore_ascii_case(b"private")
    });
    if !has_tag {
        return Cow::Borrowed(text);
    }
    PRIVATE_RE.replace_all(text, |c: &regex::Captures| {
        if c.name("c").is_some_and(|m| !m.is_empty()) {
            PRIVATE_MARKER
        } else {
            PRIVATE_OPEN_MARKER
        }
    })
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
    let mut hit = rules_plausible(text);
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
            hit = rules_plausible(&out);
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
            // Shorter than 8 characters, or the second colon of a `token::tests` path (the
            // operator `:` right before a value that starts with `:`; `TOKEN=:x…` and
            // `password: :x…` are secrets). The assignment shape in `Shape::follows` turns
            // down `::` on the same grounds: keep the two in step.
            if secret.chars().nth(7).is_none()
                || (secret.starts_with(':') && text[..at].ends_with(':'))
            {
                return false;
            }
            let quoted = text[..at].ends_with(['"', '\'']);
            !looks_like_code(secret, quoted)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rule in order on the text, with no needle scan and no shape check: the oracle
    /// the gated [`redact_secrets`] must equal.
    fn every_rule(text: &str) -> String {
        let mut out = text.to_string();
        for i in 0..RULES.len() {
            if let Some(new) = apply_rule(&rule(i), &out) {
                out = new;
            }
        }
        out
    }

    #[test]
    fn gated_rules_equal_every_rule() {
        // Needles with and without the shape after them, assignment and URL pieces, and
        // ordinary words: the gate may skip a rule only where the rule would not match.
        const BITS: &[&str] = &[
            "token",
            "TOKEN",
            "tokens",
            "max_tokens",
            "secret",
            "Secret_Key",
            "passwd",
            "password",
            "PASSW",
            "api_key",
            "apikey",
            "apiKey",
            "private_key",
            "://",
            "https://",
            "postgres://",
            "user",
            "admin",
            ":",
            "=",
            ":=",
            "@",
            "/",
            "\\",
            "\"",
            "'",
            " ",
            "\t",
            "  ",
            "\n",
            "-",
            ".",
            "_",
            "hunter2hunter2",
            "s3cr3tValue42",
            "abc",
            "x",
            "host",
            "example.com",
            "é",
            "ü@",
            "--password",
            "--token",
            "sk-",
            "AKIA",
            "eyJ",
            "ghp_",
            ",",
            ";",
            ")",
            "}",
            "]",
            "the",
            "value",
            "12345678",
        ];
        let mut rng = crate::test_rng::Xorshift(0xD1B5_4A32_D192_ED03);
        let mut next = |n: usize| rng.below(n);
        let mut redacted = 0;
        for _ in 0..40_000 {
            let mut s = String::new();
            for _ in 0..1 + next(12) {
                s.push_str(BITS[next(BITS.len())]);
            }
            let want = every_rule(&s);
            assert_eq!(redact_secrets(&s), want, "text {s:?}");
            redacted += usize::from(want != s);
        }
        // Both outcomes are well represented.
        assert!(
            redacted > 2_000 && redacted < 38_000,
            "{redacted} of 40000 redacted"
        );
    }

    #[test]
    fn needle_scan_equals_aho_corasick() {
        let mut pats = Vec::new();
        let mut rule_of = Vec::new();
        for (i, needles) in NEEDLES.iter().enumerate() {
            for n in *needles {
                pats.push(*n);
                rule_of.push(i);
            }
        }
        let ac = aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(&pats)
            .unwrap();
        let mut rng = crate::test_rng::Xorshift(0x2545_F491_4F6C_DD1D);
        let mut next = |n: usize| rng.below(n);
        // Needles, their pieces and case variants, glued with bytes of every kind.
        let mut bits: Vec<String> = pats.iter().map(|p| p.to_string()).collect();
        bits.extend(pats.iter().map(|p| p.to_ascii_uppercase()));
        bits.extend(pats.iter().map(|p| p[..p.len() / 2].to_string()));
        bits.extend(pats.iter().map(|p| p[p.len() / 2..].to_string()));
        bits.extend(["a", " ", "é", "-", "_", ":", "/", "k", "\n"].map(String::from));
        let mut found = 0;
        for _ in 0..20_000 {
            let mut t = String::new();
            for _ in 0..next(10) {
                t.push_str(&bits[next(bits.len())]);
            }
            let mut want: Vec<(usize, usize)> = ac
                .find_overlapping_iter(&t)
                .map(|m| (rule_of[m.pattern().as_usize()], m.end()))
                .collect();
            let mut got = Vec::new();
            for_each_needle(t.as_bytes(), |rule, end| got.push((rule, end)));
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, want, "text {t:?}");
            found += want.len();
        }
        assert!(found > 20_000, "{found} needles found");
    }

    #[test]
    fn shape_checks_turn_down_what_cannot_match() {
        // Common words of code and prose: no rule compiled or run.
        for text in [
            "the token expired; refresh the tokens",
            "see https://github.com/org/repo/pull/12 and http://localhost:8080/x",
            "a secret of the trade",
            "test token::tests::parses_value ... ok",
            "token = short",
            "cd crates/npm_fix && ls",
        ] {
            assert_eq!(rules_plausible(text), 0, "{text}");
        }
        // The shapes themselves pass.
        for text in [
            "token = abcdefgh",
            "\"apiKey\": \"s3cr3tValue\"",
            "password:=hunter2hunter2",
            "postgres://user:pw@host/db",
            "npm_0123456789abcdefghij0123456789abcdef",
        ] {
            assert_ne!(rules_plausible(text), 0, "{text}");
        }
    }
}
