//! The user's own redaction rules: `[privacy] redact` in memtrail's config file
//! ([`crate::privacy`]), applied by [`super::redact`] after the built-in rules.
//!
//! ```toml
//! [privacy]
//! redact = [
//!   { name = "acme-ticket", pattern = "ACME-[0-9]{6}" },
//!   { name = "customer", pattern = "customer id: (?P<s>[0-9]+)" },
//! ]
//! ```
//!
//! Each match is replaced by `[redacted:<name>]`, as a built-in rule's by `[redacted:<kind>]`;
//! a pattern with a group named `s` has only that group replaced. Patterns are the `regex`
//! crate's syntax (<https://docs.rs/regex/1/regex/#syntax>): matching takes time linear in the
//! text whatever the pattern, and [`UserRules::compile`] bounds a pattern's length
//! ([`MAX_PATTERN_BYTES`]) and its compiled size ([`MAX_COMPILED_BYTES`]). A rule that does not
//! compile is an error, never a rule skipped: the caller stores nothing (fail closed).
//!
//! A match that overlaps a marker already written (`[redacted:…]`, `[private]`) is left alone,
//! so redacting twice gives what redacting once gave (`redact --rescan`, a message merged with
//! its stored copy) even for a pattern that matches a marker's text.
//!
//! The rules in force are the process's ([`install`]): [`crate::privacy::Privacy::load`]
//! installs the ones of the config file each time it reads it, before anything is written.

use regex::Regex;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// The longest pattern accepted, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1_000;

/// The most compiled memory one pattern may take, in bytes (the `regex` crate's `size_limit`,
/// also applied to its lazy DFA's cache).
pub const MAX_COMPILED_BYTES: usize = 1 << 20;

/// The most rules accepted.
pub const MAX_RULES: usize = 64;

/// The longest rule name accepted, in characters.
pub const MAX_NAME_CHARS: usize = 40;

/// One user rule as written in the config: its name (in the marker) and its pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleText {
    /// Lowercase ASCII letters, digits, `-` and `_`, starting with a letter or digit, at most
    /// [`MAX_NAME_CHARS`].
    pub name: String,
    /// A regular expression in the `regex` crate's syntax.
    pub pattern: String,
}

/// A user rule, compiled.
#[derive(Clone)]
struct Compiled {
    text: RuleText,
    re: Regex,
}

/// The user's rules, compiled ([`UserRules::compile`]); empty by default.
#[derive(Clone, Default)]
pub struct UserRules {
    rules: Vec<Compiled>,
}

impl std::fmt::Debug for UserRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.texts()).finish()
    }
}

impl PartialEq for UserRules {
    fn eq(&self, other: &Self) -> bool {
        self.texts().eq(other.texts())
    }
}

impl UserRules {
    /// Compile `rules`, in order.
    ///
    /// Errors (one line naming the rule by its position, from 1, and its name): more than
    /// [`MAX_RULES`] rules; a name that is empty, too long, not lowercase letters, digits, `-`
    /// and `_`, or used twice, or the name of a built-in kind ([`super::kinds`]); a pattern
    /// longer than [`MAX_PATTERN_BYTES`], that does not compile (the `regex` crate's message,
    /// or its compiled form over [`MAX_COMPILED_BYTES`]), or that matches the empty text (it
    /// would put a marker between every two characters).
    pub fn compile(rules: &[RuleText]) -> Result<UserRules, String> {
        if rules.len() > MAX_RULES {
            return Err(format!(
                "`privacy.redact` holds {} rules; at most {MAX_RULES} are allowed",
                rules.len()
            ));
        }
        let mut out = Vec::with_capacity(rules.len());
        for (i, r) in rules.iter().enumerate() {
            let which = format!("`privacy.redact` rule {} ({:?})", i + 1, r.name);
            check_name(&r.name).map_err(|e| format!("{which}: {e}"))?;
            if out.iter().any(|c: &Compiled| c.text.name == r.name) {
                return Err(format!("{which}: the name is used by an earlier rule"));
            }
            let re = compile_pattern(&r.pattern).map_err(|e| format!("{which}: {e}"))?;
            out.push(Compiled {
                text: r.clone(),
                re,
            });
        }
        Ok(UserRules { rules: out })
    }

    /// [`UserRules::compile`], reusing the rules in force ([`installed`]) when `rules` are
    /// the same (an import reads the config once per transcript: the patterns are compiled
    /// once).
    ///
    /// Errors: as [`UserRules::compile`].
    pub fn compile_cached(rules: &[RuleText]) -> Result<Arc<UserRules>, String> {
        if rules.is_empty() {
            return Ok(Arc::default());
        }
        if let Some(r) = installed().filter(|r| r.texts().eq(rules.iter())) {
            return Ok(r);
        }
        UserRules::compile(rules).map(Arc::new)
    }

    /// The rules as written, in order.
    pub fn texts(&self) -> impl Iterator<Item = &RuleText> {
        self.rules.iter().map(|c| &c.text)
    }

    /// Whether there is no rule.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// `text` with every match of every rule, in order, replaced by `[redacted:<name>]` (only
    /// group `s` when the pattern has one), except a match overlapping a marker; borrowed when
    /// nothing was replaced.
    pub fn apply<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for rule in &self.rules {
            if let Some(new) = apply_one(rule, &out) {
                out = Cow::Owned(new);
            }
        }
        out
    }
}

/// Whether `name` can name a rule (see [`RuleText::name`]), or why not.
fn check_name(name: &str) -> Result<(), String> {
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_';
    if name.is_empty() {
        return Err("the name is empty".into());
    }
    if name.chars().count() > MAX_NAME_CHARS
        || !name.chars().all(ok_char)
        || name.starts_with(['-', '_'])
    {
        return Err(format!(
            "the name must be at most {MAX_NAME_CHARS} lowercase letters, digits, `-` and `_` (like acme-ticket)"
        ));
    }
    if super::kinds().any(|k| k == name) || name == "truncated" || name == "secret_assignment" {
        return Err("the name is a built-in rule's; choose another".into());
    }
    Ok(())
}

/// `pattern` compiled with memtrail's bounds, or the reason it is refused.
fn compile_pattern(pattern: &str) -> Result<Regex, String> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(format!(
            "the pattern is {} bytes long; at most {MAX_PATTERN_BYTES} are allowed",
            pattern.len()
        ));
    }
    let re = regex::RegexBuilder::new(pattern)
        .size_limit(MAX_COMPILED_BYTES)
        .dfa_size_limit(MAX_COMPILED_BYTES)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(n) => format!(
                "the pattern compiles to more than {n} bytes; make it simpler (fewer or smaller counted repetitions)"
            ),
            other => format!(
                "the pattern does not compile: {}",
                other.to_string().split_whitespace().collect::<Vec<_>>().join(" ")
            ),
        })?;
    if re.is_match("") {
        return Err(
            "the pattern matches the empty text; it must match at least one character".into(),
        );
    }
    Ok(re)
}

/// The byte spans of the markers in `text`: `[redacted:…]` (up to the next `]`) and the
/// `<private>` markers.
fn marker_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    for prefix in [
        super::MARKER_PREFIX,
        super::PRIVATE_OPEN_MARKER,
        super::PRIVATE_MARKER,
    ] {
        for at in memchr::memmem::find_iter(text.as_bytes(), prefix.as_bytes()) {
            let end = if prefix == super::MARKER_PREFIX {
                text[at..].find(']').map_or(text.len(), |j| at + j + 1)
            } else {
                at + prefix.len()
            };
            spans.push((at, end));
        }
    }
    spans
}

/// The replacement of one rule over `text`, or `None` when it changes nothing.
fn apply_one(rule: &Compiled, text: &str) -> Option<String> {
    let mut spans: Option<Vec<(usize, usize)>> = None;
    let mut out: Option<String> = None;
    let mut last = 0;
    for caps in rule.re.captures_iter(text) {
        let whole = caps.get(0).expect("group 0");
        let span = caps.name("s").unwrap_or(whole);
        if span.is_empty() {
            continue;
        }
        let markers = spans.get_or_insert_with(|| marker_spans(text));
        if markers
            .iter()
            .any(|&(a, b)| whole.start() < b && a < whole.end())
        {
            continue;
        }
        let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
        o.push_str(&text[last..span.start()]);
        o.push_str(super::MARKER_PREFIX);
        o.push_str(&rule.text.name);
        o.push(']');
        last = span.end();
    }
    let mut o = out?;
    o.push_str(&text[last..]);
    Some(o)
}

/// Whether any rule is installed (read without a lock by every [`super::redact`]).
static ANY: AtomicBool = AtomicBool::new(false);

/// The rules in force in this process.
static INSTALLED: RwLock<Option<Arc<UserRules>>> = RwLock::new(None);

/// Make `rules` the ones [`super::redact`] applies in this process, from now on (every thread).
pub fn install(rules: Arc<UserRules>) {
    let any = !rules.is_empty();
    let mut slot = INSTALLED.write().unwrap_or_else(|p| p.into_inner());
    *slot = Some(rules);
    ANY.store(any, Ordering::Release);
}

/// The rules in force (`None`: none).
pub fn installed() -> Option<Arc<UserRules>> {
    if !ANY.load(Ordering::Acquire) {
        return None;
    }
    INSTALLED
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .filter(|r| !r.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(r: &[(&str, &str)]) -> Result<UserRules, String> {
        UserRules::compile(
            &r.iter()
                .map(|(n, p)| RuleText {
                    name: n.to_string(),
                    pattern: p.to_string(),
                })
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn matches_become_the_rules_marker() {
        let r = rules(&[
            ("acme-ticket", "ACME-[0-9]{6}"),
            ("customer", "customer id: (?P<s>[0-9]+)"),
        ])
        .unwrap();
        assert_eq!(
            r.apply("see ACME-123456 and ACME-12345, customer id: 42."),
            "see [redacted:acme-ticket] and ACME-12345, customer id: [redacted:customer]."
        );
        assert!(matches!(
            r.apply("nothing here"),
            Cow::Borrowed("nothing here")
        ));
    }

    #[test]
    fn a_marker_is_never_rewritten() {
        // `redacted` and `acme` match the markers' own text: left alone, so applying twice
        // is applying once.
        let r = rules(&[("acme", "(?i)acme"), ("word", "redacted|private")]).unwrap();
        let once = r.apply("ACME rocks [private] redacted").into_owned();
        assert_eq!(once, "[redacted:acme] rocks [private] [redacted:word]");
        assert_eq!(r.apply(&once), once);
    }

    #[test]
    fn bad_rules_are_clear_errors() {
        let e = |r: &[(&str, &str)]| rules(r).unwrap_err();
        assert_eq!(
            e(&[("acme", "ACME-[0-9")]),
            "`privacy.redact` rule 1 (\"acme\"): the pattern does not compile: regex parse error: ACME-[0-9 ^ error: unclosed character class"
        );
        assert_eq!(
            e(&[("a", "x"), ("empty", "x*")]),
            "`privacy.redact` rule 2 (\"empty\"): the pattern matches the empty text; it must match at least one character"
        );
        assert_eq!(
            e(&[("a", "x"), ("a", "y")]),
            "`privacy.redact` rule 2 (\"a\"): the name is used by an earlier rule"
        );
        assert_eq!(
            e(&[("Acme", "x")]),
            "`privacy.redact` rule 1 (\"Acme\"): the name must be at most 40 lowercase letters, digits, `-` and `_` (like acme-ticket)"
        );
        assert_eq!(
            e(&[("github_token", "x")]),
            "`privacy.redact` rule 1 (\"github_token\"): the name is a built-in rule's; choose another"
        );
        assert_eq!(
            e(&[("", "x")]),
            "`privacy.redact` rule 1 (\"\"): the name is empty"
        );
        let long = "a".repeat(MAX_PATTERN_BYTES + 1);
        assert_eq!(
            e(&[("long", &long)]),
            "`privacy.redact` rule 1 (\"long\"): the pattern is 1001 bytes long; at most 1000 are allowed"
        );
        // A short pattern whose automaton is huge: refused by the size limit, not compiled.
        assert_eq!(
            e(&[("huge", r"\w{1000}\w{1000}")]),
            "`privacy.redact` rule 1 (\"huge\"): the pattern compiles to more than 1048576 bytes; make it simpler (fewer or smaller counted repetitions)"
        );
        let many: Vec<(String, &str)> = (0..=MAX_RULES).map(|i| (format!("r{i}"), "x")).collect();
        let many: Vec<(&str, &str)> = many.iter().map(|(n, p)| (n.as_str(), *p)).collect();
        assert_eq!(
            e(&many),
            "`privacy.redact` holds 65 rules; at most 64 are allowed"
        );
    }
}
