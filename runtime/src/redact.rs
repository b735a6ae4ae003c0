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

pub mod user;

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
    /// values shorter than 8 characters (1 after a password word: `password: hunter2`).
    Assignment,
    /// A password in a URL: the user part (group `u`) at most 100 characters, the password at
    /// most 200 (bounds checked here rather than as `{1,100}` in the pattern: a counted
    /// repetition of a negated Unicode class compiles to a 5 ms automaton, paid by every hook),
    /// and not a port followed by a path (`http://host:8080/a@b`).
    UrlPassword,
    /// A value under a key name (group `n`, see [`secret_name`]) in an environment or
    /// configuration line: skip placeholders, paths, URLs, code and type words (see
    /// [`config_value_is_secret`]).
    Named,
    /// A short password word's value right after its separator (`pass:X`, `pw=X`): as
    /// [`Check::Named`], but a test runner's count (`pass:41/41`, `{pass:12,fail:0}`, digits
    /// with `/`, `.` or `%`) and Go's `:=` (`pw:=getpw()`) are not values.
    ShortPassWord,
    /// A password in a sentence (`the password is X`): at least 4 characters; digits alone
    /// at least 6 (`is 2048` is a size); otherwise a letter with a digit or a symbol other
    /// than `.`, `-`, `_`, `/` and `'` (a word, `well-known`, `e.g` are prose), and not code
    /// nor a placeholder, path or URL (as [`Check::PasswordValue`]; under the name in group
    /// `n` when there is one, a Markdown table's first cell, else `password`).
    Prose,
    /// A password's value where the name is known to be one (a connection string's `PWD=`,
    /// which a shell's `PWD` keeps out of [`secret_name`]): as [`Check::Named`] after
    /// `password`.
    PasswordValue,
    /// A header or scheme value: skip placeholders and code (`X-API-Key: apiKey`). Without a
    /// scheme (group `sch`), an `Authorization` value needs 16 characters.
    Header,
    /// A private key block: its body holds 16 base64 characters in a row (not code that
    /// names the markers: `START = b"-----BEGIN … PRIVATE KEY-----"`).
    KeyBody,
    /// Skip only a placeholder (`$PASS`, `<password>`, `{pw}`).
    Placeholder,
    /// A URL's user alone taken for a token: at most 200 characters with 20 letters and digits
    /// in a row, two of upper case, lower case and digits among them, and not a name (lower-case
    /// words with digits under a quarter of them: `johnsmithdeveloper1990`); or lower-case hex
    /// with three digits and three letters. Not a placeholder, nor the URL path's first segment
    /// (Azure DevOps' `https://org@…/org/`). A CamelCase name with digits is taken for a token:
    /// a token kept is worse than a name hidden.
    UrlToken,
    /// An SQL password (`PASSWORD 'X'`, `IDENTIFIED BY 'X'`): as [`Check::Placeholder`], and
    /// not code that builds the statement (`"… PASSWORD '" + pw + "'"`: a value that starts
    /// with a quote or a blank, or ends with a blank); a value not quoted (group `s3`) only
    /// right after the statement's user (group `ctx`), and not a bind or substitution
    /// variable (`:pw`, `?`, `&pw`).
    SqlPassword,
    /// The rule's keyword must occur in the text (a Discord bot token has no fixed prefix).
    Keyword(&'static str),
}

/// A redaction rule: the kind written in the marker, the pattern, the check of each match,
/// the literal needles of which every match holds at least one (compared without regard to
/// ASCII case: a superset; a hit only means "look closer"), and what must follow a needle
/// for the rule to match there ([`Shape`]). A rule is compiled and run only on text that
/// holds one of its needles followed by its shape.
struct RuleDef {
    kind: &'static str,
    pattern: &'static str,
    check: Check,
    needles: &'static [&'static str],
    shape: Shape,
}

/// A rule as applied: its kind, its compiled regex and its check.
struct Rule<'a> {
    kind: &'static str,
    re: &'a Regex,
    check: Check,
}

const fn def(
    kind: &'static str,
    pattern: &'static str,
    check: Check,
    needles: &'static [&'static str],
    shape: Shape,
) -> RuleDef {
    RuleDef {
        kind,
        pattern,
        check,
        needles,
        shape,
    }
}

/// A fixed-format token: `prefix…` then at least `n` bytes of `class` after each needle.
const fn token(
    kind: &'static str,
    pattern: &'static str,
    needles: &'static [&'static str],
    class: fn(&u8) -> bool,
    n: usize,
) -> RuleDef {
    def(kind, pattern, Check::None, needles, Shape::Run(class, n))
}

/// Patterns are kept cheap to compile (a hook compiles the ones its text needs): ASCII case
/// folding, no counted repetition of a negated class, no leading name class where only a
/// later group is replaced. Order matters: specific token formats first, so that the generic
/// rules (headers, URL password, flags, assignments) see `[redacted:…]` and leave it alone. A
/// pattern with a group named `s` has only that group replaced; otherwise the whole match is.
/// The provider formats follow the providers' documented token shapes, checked against the
/// rule lists of gitleaks and trufflehog (written here, not copied).
const RULES: &[RuleDef] = &[
    def(
        "private_key",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\z)",
        Check::KeyBody,
        &["PRIVATE KEY"],
        Shape::Any,
    ),
    // PuTTY's .ppk: the private lines and their MAC (the header and public lines stay).
    def(
        "putty_key",
        r"Private-Lines: *[0-9]+(?s:.*?)(?:Private-MAC: *[0-9a-fA-F]+|\z)",
        Check::None,
        &["Private-Lines:"],
        Shape::Any,
    ),
    token(
        "age_key",
        r"AGE-SECRET-KEY-1[0-9A-Z]{58}",
        &["AGE-SECRET-KEY-1"],
        alnum,
        58,
    ),
    token(
        "aws_access_key",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?-u:\b))",
        &["AKIA", "ASIA", "ABIA", "ACCA"],
        alnum,
        16,
    ),
    def(
        "aws_secret_key",
        r#"(?i-u)aws_secret_access_key\\?["']?\s*[:=]\s*\\?["']?(?P<s>[A-Za-z0-9/+]{40})"#,
        Check::None,
        &["aws_secret_access_key"],
        Shape::Any,
    ),
    token(
        "anthropic_key",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>sk-ant-[A-Za-z0-9_-]{20,})",
        &["sk-ant-"],
        token_byte,
        20,
    ),
    token(
        "openrouter_key",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>sk-or-v1-[0-9a-f]{64})",
        &["sk-or-v1-"],
        hex,
        64,
    ),
    token(
        "openai_key",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{32,}))",
        &["sk-"],
        token_byte,
        20,
    ),
    token(
        "github_token",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}))",
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        token_byte,
        22,
    ),
    // Personal, project, group, deploy, runner, trigger, CI job, feed, incoming mail, agent,
    // OAuth, service account tokens, and runner registration tokens.
    token(
        "gitlab_token",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>(?:gl(?:pat|ptt|rt|dt|ft|cbt|imt|agent|oas|soat|ffct)-|GR1348941)[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]+)*)",
        &[
            "glpat-",
            "glptt-",
            "glrt-",
            "gldt-",
            "glft-",
            "glcbt-",
            "glimt-",
            "glagent-",
            "gloas-",
            "glsoat-",
            "glffct-",
            "GR1348941",
        ],
        token_byte,
        20,
    ),
    token(
        "slack_token",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>(?:xox[abeoprs]-[0-9]+-[A-Za-z0-9-]{8,}|xoxe\.xox[bp]-[0-9]-[A-Za-z0-9]{20,}|xapp-[0-9]-[A-Za-z0-9-]{20,}))",
        &[
            "xoxa-", "xoxb-", "xoxe-", "xoxo-", "xoxp-", "xoxr-", "xoxs-", "xoxe.", "xapp-",
        ],
        token_byte,
        1,
    ),
    def(
        "webhook_url",
        r"(?:hooks\.slack\.com/(?:services|workflows|triggers)/|discord(?:app)?\.com/api/webhooks/[0-9]+/)(?P<s>[A-Za-z0-9+/_-]{20,})",
        Check::None,
        &["hooks.slack.com/", "/api/webhooks/"],
        Shape::Any,
    ),
    token(
        "stripe_key",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>(?:[sr]k_live_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{32,}))",
        &["sk_live_", "rk_live_", "whsec_"],
        alnum,
        16,
    ),
    token(
        "npm_token",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>npm_[A-Za-z0-9]{36,})",
        &["npm_"],
        alnum,
        36,
    ),
    token(
        "pypi_token",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>pypi-[A-Za-z0-9_-]{50,})",
        &["pypi-"],
        token_byte,
        50,
    ),
    token(
        "google_api_key",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>AIza[0-9A-Za-z_-]{35})",
        &["AIza"],
        token_byte,
        35,
    ),
    token(
        "google_oauth",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>(?:ya29\.[0-9A-Za-z_-]{20,}|GOCSPX-[0-9A-Za-z_-]{28}))",
        &["ya29.", "GOCSPX-"],
        token_byte,
        20,
    ),
    def(
        "azure_storage_key",
        r"(?:AccountKey|SharedAccessKey)=(?P<s>[A-Za-z0-9+/]{20,}={0,2})",
        Check::None,
        &["AccountKey=", "SharedAccessKey="],
        Shape::Run(b64_byte, 20),
    ),
    def(
        "azure_sas",
        r"[?&;]sig=(?P<s>[A-Za-z0-9%+/=_-]{16,})",
        Check::None,
        &["sig="],
        Shape::Run(sas_byte, 16),
    ),
    token(
        "azure_client_secret",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})",
        &["Q~"],
        azure_byte,
        31,
    ),
    token(
        "groq_key",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>gsk_[A-Za-z0-9]{52})",
        &["gsk_"],
        alnum,
        52,
    ),
    token(
        "huggingface_token",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>(?:hf_|api_org_)[A-Za-z]{34}(?-u:\b))",
        &["hf_", "api_org_"],
        u8::is_ascii_alphabetic,
        34,
    ),
    token(
        "xai_key",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>xai-[A-Za-z0-9]{80})",
        &["xai-"],
        alnum,
        80,
    ),
    token(
        "sendgrid_key",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})",
        &["SG."],
        token_byte,
        22,
    ),
    token(
        "twilio_key",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>SK[0-9a-fA-F]{32}(?-u:\b))",
        &["SK"],
        hex,
        32,
    ),
    token(
        "digitalocean_token",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>do[opr]_v1_[a-f0-9]{64})",
        &["dop_v1_", "doo_v1_", "dor_v1_"],
        hex,
        64,
    ),
    token(
        "shopify_token",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})",
        &["shpat_", "shpca_", "shppa_", "shpss_"],
        hex,
        32,
    ),
    token(
        "vault_token",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>hv[sbr]\.[A-Za-z0-9_-]{24,})",
        &["hvs.", "hvb.", "hvr."],
        token_byte,
        24,
    ),
    // The bot's id, `:`, then 35 characters (the ones issued start with `AA`).
    token(
        "telegram_token",
        r"(?:(?-u:\b)|bot)(?P<s>[0-9]{5,16}:AA[A-Za-z0-9_-]{33})",
        &[":AA"],
        token_byte,
        33,
    ),
    // base64 of the bot's id, a timestamp and an HMAC: no fixed prefix, so only in a text that
    // says `discord` (as gitleaks does).
    def(
        "discord_token",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40})",
        Check::Keyword("discord"),
        &["discord"],
        Shape::Any,
    ),
    token(
        "databricks_token",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>dapi[a-f0-9]{32}(?:-[0-9]+)?)",
        &["dapi"],
        hex,
        32,
    ),
    token(
        "grafana_token",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2}|eyJrIjoi[A-Za-z0-9+/]{32,}={0,2}))",
        &["glsa_", "glc_", "eyJrIjoi"],
        b64_byte,
        32,
    ),
    token(
        "linear_key",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>lin_(?:api|oauth)_[A-Za-z0-9]{40})",
        &["lin_api_", "lin_oauth_"],
        alnum,
        40,
    ),
    token(
        "atlassian_token",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>AT[AC]TT3[A-Za-z0-9_=-]{50,})",
        &["ATATT3", "ATCTT3"],
        token_byte,
        50,
    ),
    token(
        "notion_token",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>(?:secret_[A-Za-z0-9]{43}|ntn_[0-9]{11}[A-Za-z0-9]{35})(?-u:\b))",
        &["secret_", "ntn_"],
        alnum,
        43,
    ),
    token(
        "docker_token",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,})",
        &["dckr_pat_", "dckr_oat_"],
        token_byte,
        27,
    ),
    token(
        "sentry_token",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>sntry[su]_[A-Za-z0-9+/=_-]{40,})",
        &["sntrys_", "sntryu_"],
        b64url_byte,
        40,
    ),
    // Heroku, Postman, Pulumi, Terraform Cloud, Doppler, New Relic, Supabase, Replicate,
    // Perplexity, 1Password service accounts, Tailscale, PlanetScale, Mapbox, LangSmith,
    // Square, Firebase Cloud Messaging, Buildkite, CircleCI, Render, Netlify, Sourcegraph,
    // Prefect, Fly.io, Mailgun.
    token(
        "api_token",
        concat!(
            r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>(?:HRKU-[A-Za-z0-9_-]{40,}|PMAK-[a-f0-9]{24}-[a-f0-9]{34}|pul-[a-f0-9]{40})",
            r"|[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}|dp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{40,}",
            r"|NRAK-[A-Z0-9]{27}|sbp_[a-f0-9]{40}|r8_[A-Za-z0-9]{37}|pplx-[A-Za-z0-9]{48}",
            r"|ops_eyJ[A-Za-z0-9+/=]{100,}|tskey-[a-z]+-[A-Za-z0-9]+-[A-Za-z0-9]{16,}",
            r"|pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,}|sk\.eyJ[A-Za-z0-9_-]{50,}\.[A-Za-z0-9_-]{20,}",
            r"|lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}|sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}",
            r"|[A-Za-z0-9_-]{11}:APA91b[A-Za-z0-9_-]{100,}|bkua_[a-f0-9]{40}|CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}",
            r"|rnd_[A-Za-z0-9]{32}|nfp_[A-Za-z0-9]{36}|sgp_(?:[a-f0-9]{16}_)?[a-f0-9]{40}",
            r"|pnu_[A-Za-z0-9]{36}|fo1_[A-Za-z0-9_-]{43}|key-[0-9a-f]{32})"
        ),
        &[
            "HRKU-",
            "PMAK-",
            "pul-",
            ".atlasv1.",
            "dp.pt.",
            "dp.st.",
            "dp.sa.",
            "dp.ct.",
            "NRAK-",
            "sbp_",
            "r8_",
            "pplx-",
            "ops_eyJ",
            "tskey-",
            "pscale_",
            "sk.eyJ",
            "lsv2_",
            "sq0atp-",
            "sq0csp-",
            ":APA91b",
            "bkua_",
            "CCIPAT_",
            "rnd_",
            "nfp_",
            "sgp_",
            "pnu_",
            "fo1_",
            "key-",
        ],
        not_space,
        16,
    ),
    token(
        "jwt",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
        &["eyJ"],
        token_byte,
        8,
    ),
    def(
        "bearer_token",
        r#"(?i-u)authorization\\?["']?\s*[:=]\s*\\?["']?bearer\s+(?P<s>[A-Za-z0-9._~+/-]{8,}=*)"#,
        Check::None,
        &["authorization"],
        Shape::Any,
    ),
    // `Authorization: Basic …`, `Token …`, `Bot …`, … or a bare value.
    def(
        "auth_header",
        r#"(?i-u)authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?(?P<sch>(?:basic|token|bot|apikey|api-key|key|sso-key|otp|pat|splunk|dpop|negotiate|ntlm)[ \t]+)?(?P<s>[A-Za-z0-9._~+/:=-]{4,})"#,
        Check::Header,
        &["authorization"],
        Shape::Any,
    ),
    // `X-API-Key:`, `X-Auth-Token:`, `Private-Token:`, `Ocp-Apim-Subscription-Key:`, …
    def(
        "http_header",
        r#"(?i-u)(?:x-[a-z0-9-]*(?:api-?key|key|token|secret|auth|signature|password)|private-token|api-key|apikey|subscription-key)\\?["']?[ \t]*:[ \t]*\\?["']?(?P<s>(?u:[^\s"'\\,;]+))"#,
        Check::Header,
        &[
            "-key",
            "-token",
            "-secret",
            "-auth",
            "-signature",
            "-password",
            "apikey",
        ],
        Shape::Header,
    ),
    // `Cookie:` and `Set-Cookie:`: the whole value (`name=value; …`).
    def(
        "cookie",
        r#"(?i-u)cookie\\?["']?[ \t]*:[ \t]*(?P<s>(?u:[^\s=;"'\\]+=[^\r\n"'\\]*))"#,
        Check::None,
        &["cookie"],
        Shape::Header,
    ),
    // curl's `-b name=value` / `--cookie name=value`.
    def(
        "cookie",
        r#"(?:--cookie|(?-u:\s)-b)[ \t=]+["']?(?P<s>[^\s"'=;]+=[^\s"']+)"#,
        Check::Placeholder,
        &["--cookie", " -b", "\t-b"],
        Shape::Any,
    ),
    def(
        "url_password",
        r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]{0,20}://(?P<u>[^\s:/@]*):(?P<s>[^\s]+?)@[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*(?:[:/?#\s"'<>)\]]|$)"#,
        Check::UrlPassword,
        &["://"],
        Shape::UrlPassword,
    ),
    // A Go MySQL driver DSN's password (`user:password@tcp(host:3306)/db`, the format of
    // github.com/go-sql-driver/mysql): no `://`, so not a URL to the rule above.
    def(
        "url_password",
        r#"(?:^|[^A-Za-z0-9_.:/@-])[A-Za-z0-9_.-]+:(?P<s>[^\s:@/"'`]+)@(?:tcp|unix|udp)\("#,
        Check::Placeholder,
        &["@tcp(", "@unix(", "@udp("],
        Shape::Any,
    ),
    // A Sentry DSN's key (and an old DSN's secret) as the URL's user.
    def(
        "sentry_dsn",
        r"[A-Za-z][A-Za-z0-9+.-]{0,20}://(?P<s>[0-9a-f]{32}(?::[0-9a-f]{32})?)@",
        Check::None,
        &["://"],
        Shape::Run(hex, 32),
    ),
    // A token given as a URL's user, with no password (`git clone https://TOKEN@github.com/o/r`:
    // git sends it, GitHub and others take it): see [`Check::UrlToken`].
    def(
        "url_token",
        r"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]{0,20}://(?P<s>[A-Za-z0-9_.%-]+)@[A-Za-z0-9_-][A-Za-z0-9_.-]*(?:/(?P<p>[A-Za-z0-9_.%-]+))?",
        Check::UrlToken,
        &["://"],
        Shape::UrlToken,
    ),
    // `mysql -pSECRET` (the password glued to `-p`), `sshpass -p SECRET`.
    def(
        "cli_secret",
        r#"(?-u:\b)(?:(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlsh|mariadb|mariadb-dump|mariadb-admin)(?:[ \t]+[^\s|;&]+)*?[ \t]+-p|sshpass(?:[ \t]+-[a-oq-zA-Z]\S*)*[ \t]+-p[ \t]*)(?P<s>"[^"\r\n]+"|'[^'\r\n]+'|[^\s"'|;&]+)"#,
        Check::Placeholder,
        &["mysql", "mariadb", "sshpass"],
        Shape::Flag(&[b"-p"]),
    ),
    // A password given to a client on its command line: `curl -u user:SECRET` (`--user`),
    // `docker login -p SECRET` (Podman's, Azure CLI's `az login -u APP -p SECRET`),
    // `redis-cli -a SECRET`, `ldapsearch -w SECRET` (and the other OpenLDAP tools), `smbclient
    // -U user%SECRET`. Only the password is replaced. Between the command and its password
    // flag, `docker login`, `redis-cli` and the LDAP tools skip only flags and their values
    // (not prose: "redis-cli is installed, and ls -a shows").
    def(
        "cli_secret",
        r#"(?-u:\b)(?:curl(?:[ \t]+[^\s|;&]+)*?[ \t]+(?:-u[ \t]*|--user(?:=|[ \t]+))["']?[^\s:"'|;&\[]*:|(?:docker|podman|az)[ \t]+login(?:[ \t]+-[^\s|;&]+(?:[ \t]+[^-\s|;&][^\s|;&]*)?)*?[ \t]+-p[ \t]*|redis-cli(?:[ \t]+-[^\s|;&]+(?:[ \t]+[^-\s|;&][^\s|;&]*)?)*?[ \t]+-a[ \t]*|ldap(?:search|add|modify|delete|whoami|passwd|compare|modrdn|exop)(?:[ \t]+-[^\s|;&]+(?:[ \t]+[^-\s|;&][^\s|;&]*)?)*?[ \t]+-w[ \t]*|smbclient(?:[ \t]+[^\s|;&]+)*?[ \t]+-U[ \t]*[^\s%|;&]+%)(?P<s>"[^"\r\n]+"|'[^'\r\n]+'|[^\s"'|;&]+)"#,
        Check::Placeholder,
        &[
            "curl",
            "docker",
            "podman",
            // `az login` with any blanks between (`az\tlogin`), and the others' `login`.
            "login",
            "redis-cli",
            "ldap",
            "smbclient",
        ],
        Shape::Flag(&[b"-u", b"-p", b"-a", b"-w", b"-U"]),
    ),
    // An API token given to curl as the user, with an empty password (`curl -u TOKEN:`, as
    // Stripe's, Mailchimp's and other APIs document): 16 characters or more, so that a user
    // name that prompts for its password (`curl -u admin:`) stays.
    def(
        "cli_secret",
        r#"(?-u:\b)curl(?:[ \t]+[^\s|;&]+)*?[ \t]+(?:-u[ \t]*|--user(?:=|[ \t]+))["']?(?P<s>[A-Za-z0-9_.+/=-]{16,}):(?:["'\s]|$)"#,
        Check::Placeholder,
        &["curl"],
        Shape::Flag(&[b"-u"]),
    ),
    // PowerShell's `ConvertTo-SecureString "X" -AsPlainText` (`-String 'X'`): the quoted
    // string given to it (a variable, `$pw`, is a placeholder).
    def(
        "cli_secret",
        r#"(?i-u:ConvertTo-SecureString(?:[ \t]+-String)?)[ \t]+(?P<s>"[^"\r\n]+"|'[^'\r\n]+')"#,
        Check::Placeholder,
        &["ConvertTo-SecureString"],
        Shape::Any,
    ),
    // A password piped into a command's standard input by `echo X` or `printf '%s' X`
    // (`'%s\n'`): into a client's `--password-stdin` (`docker login`, `helm registry login`,
    // `oras login` and others of that flag); into `sudo -S` (`-Sk`, `--stdin`), after sudo's
    // own flags only (`sudo -u root -S`; not a command's: `echo y | sudo pacman -S vim` pipes
    // an answer); into `passwd` (`passwd --stdin bob`, `echo -e "X\nX" | passwd`, also after
    // `sudo`); and the password of `echo 'user:X' | chpasswd` (the user stays). A variable
    // (`echo "$PW" | sudo -S`, `root:$PW`) is a placeholder.
    def(
        "cli_secret",
        concat!(
            r#"(?-u:\b)(?:echo(?:[ \t]+-[neE]+)?|printf[ \t]+(?:'%s(?:\\n)?'|"%s(?:\\n)?"|%s(?:\\n)?))[ \t]+"#,
            r#"(?:(?P<s>"[^"\r\n]+"|'[^'\r\n]+'|[^\s"'|;&<>]+)[ \t]*\|(?:[^\r\n|;&]*--password-stdin"#,
            r#"|[ \t]*sudo(?:[ \t]+-[A-Za-z]*[ugCprtUDRT][ \t]+[^-\s|;&][^\s|;&]*|[ \t]+-[A-Za-z]+|[ \t]+--[A-Za-z-]+(?:=[^\s|;&]*)?)*?[ \t]+(?:-[A-Za-z]*S[A-Za-z]*|--stdin)(?:\s|$)"#,
            r#"|[ \t]*(?:sudo(?:[ \t]+-[^\s|;&]+)*[ \t]+)?passwd(?:\s|$))"#,
            r#"|["']?[^\s"'|;&<>:]+:(?P<s2>[^\s"'|;&<>]+)["']?[ \t]*\|[ \t]*(?:sudo(?:[ \t]+-[^\s|;&]+)*[ \t]+)?chpasswd(?:\s|$))"#
        ),
        Check::Placeholder,
        &["--password-stdin", "sudo", "passwd"],
        // `-S` alone or at the end of a bundle of sudo's flags (`-kS`, `-nS`: reviews).
        Shape::FlagAfter(&[b"sudo"], &[b"-S", b"S ", b"S\t", b"--stdin", b"passwd"]),
    ),
    // `htpasswd -b [-c] FILE USER PASSWORD` and `htpasswd -nb USER PASSWORD` (the password
    // on the command line, `-b`): the command's last word, before a redirection or the end
    // of the command (`htpasswd -nb u PASS > .htpasswd`).
    def(
        "cli_secret",
        r#"(?m-u:\b)htpasswd(?:[ \t]+-[A-Za-z0-9]+(?:[ \t]+[0-9]+)?)*?[ \t]+-[A-Za-z0-9]*b[A-Za-z0-9]*(?:[ \t]+-[A-Za-z0-9]+(?:[ \t]+[0-9]+)?)*(?:[ \t]+[^-\s|;&][^\s|;&]*){1,2}[ \t]+(?P<s>"[^"\r\n]+"|'[^'\r\n]+'|[^\s"'|;&<>]+)[ \t]*(?:[0-9]*>|<|[|;&\r\n]|$)"#,
        Check::Placeholder,
        &["htpasswd"],
        Shape::Any,
    ),
    // Passwords of other command lines: Java's `keytool`/`jarsigner` (`-storepass X`,
    // `-keypass X`, their `src`/`dest`/`new` forms), OpenSSL's `-pass pass:X` (`-passin`,
    // `-passout`) and `openssl enc -k X`, `zip -P X` (and `unzip`), 7-Zip's `-pX`, SQL
    // Server's `sqlcmd -P X` and `bcp -P X`, Windows' `net use … /user:NAME X`, and
    // `aws configure set aws_secret_access_key X` (or `aws_session_token`). A command's name
    // starts the text or follows a blank, `;`, `&`, `|` or `(`: not a file's extension
    // (`wget a.zip -P downloads`). One rule, matched leftmost first: a password quoted after
    // `zip -P` that holds `-storepass x` is replaced whole (two rules would each see the
    // other's marker and leave the rest). `zip`, `7z` and `bcp` are common inside words and
    // encoded data: after them, the rule needs its flag on the line.
    def(
        "cli_secret",
        r#"(?:[ \t]-(?:src|dest|new)?(?:store|key)pass[ \t]+|[ \t]-pass(?:in|out)?[ \t]+pass:|(?:^|[\s;&|(])(?:openssl[ \t]+enc(?:[ \t]+[^\s|;&]+)*?[ \t]+-k[ \t]+|(?:un)?zip(?:[ \t]+[^\s|;&]+)*?[ \t]+-P[ \t]+|7z[arz]?(?:[ \t]+[^\s|;&]+)*?[ \t]+-p|(?:sqlcmd|bcp)(?:[ \t]+[^\s|;&]+)*?[ \t]+-P[ \t]*|net[ \t]+use(?:[ \t]+[^\s|;&]+)*?[ \t]+/user:[^\s|;&]+[ \t]+)|(?-u:\b)configure[ \t]+set[ \t]+(?:[A-Za-z0-9_-]+\.)?aws_(?:secret_access_key|session_token)[ \t]+)(?P<s>"[^"\r\n]+"|'[^'\r\n]+'|[^\s"'|;&*/-][^\s"'|;&]*)"#,
        Check::Placeholder,
        &[
            "storepass",
            "keypass",
            "pass:",
            "openssl",
            "zip",
            "7z",
            "sqlcmd",
            "bcp",
            "/user:",
            "aws_s",
        ],
        Shape::FlagAfter(
            &[b"openssl", b"zip", b"7z", b"sqlcmd", b"bcp"],
            &[b"-k", b"-P", b"-p"],
        ),
    ),
    // A role's password in PostgreSQL's (and Redshift's, CockroachDB's) `CREATE USER`/`ALTER
    // ROLE`: `… WITH PASSWORD 'X'`, `ENCRYPTED PASSWORD 'X'`, `PASSWORD 'X' VALID UNTIL …`,
    // in any case, on the statement's later lines too (up to its `;`). Only a quoted literal
    // (`''` in it is a quote), the quotes kept: `PASSWORD NULL`, `PASSWORD ''`, a parameter
    // (`PASSWORD $1`, `:pw`, `psql`'s `:'pw'`, `%s`, `?`) and a placeholder in quotes
    // (`'${PW}'`, `'<password>'`) and code that builds the statement (`"… PASSWORD '" + pw +
    // "'"`) stay; so does prose (`set the password`), which has no statement before it.
    // `PASSWORD = 'X'` (SQL Server, Snowflake) is an assignment below.
    def(
        "sql_password",
        concat!(
            r#"(?i-u)(?-u:\b)(?:create|alter) (?:user|role)(?-u:\b)"#,
            // Within the statement: no `;`, no blank line (blanks alone on a line included),
            // no sentence's end (`. `, `? `, `! `, or one at a line's end); the clause may start
            // a line of its own.
            r#"(?u:[^;.?!\r\n]|[.?!][^\s;]|\r?\n[ \t]*[^;\s])*?(?:\r?\n[ \t]*)?"#,
            r#"(?-u:\b)password[ \t\r\n]+e?'(?P<s>(?u:(?:\\\\|\\'|''|[^'\r\n])+))'"#
        ),
        Check::SqlPassword,
        &["create user", "create role", "alter user", "alter role"],
        Shape::Any,
    ),
    // MySQL's and MariaDB's `IDENTIFIED BY 'X'` (`CREATE USER`, `ALTER USER`, `GRANT … TO …`),
    // `IDENTIFIED WITH mysql_native_password BY 'X'`, and Oracle's `CREATE USER scott
    // IDENTIFIED BY X` (unquoted: only right after `CREATE USER NAME` or `ALTER USER NAME`,
    // since `identified by their email` is prose). The value of `IDENTIFIED BY PASSWORD
    // '*6BB4…'` (MySQL 5's hash) and Oracle's `IDENTIFIED BY VALUES '…'` is a hash, redacted
    // too: an unsalted double SHA-1 that a dictionary cracks, and with which a sniffed
    // handshake logs in. `IDENTIFIED WITH auth_socket` has no value; a placeholder (`'%s'`,
    // `$1`, `:pw`, `&pw`, `?`) stays.
    def(
        "sql_password",
        concat!(
            r#"(?i-u)(?:(?P<ctx>(?-u:\b)(?:create|alter)[ \t]+user[ \t]+(?u:[^\s;])+[ \t\r\n]+)"#,
            // Or further on in `CREATE USER`/`ALTER USER` (`IF NOT EXISTS 'app'@'%'`): no `;`,
            // no blank line, no sentence's end; the clause may start a line of its own.
            r#"|(?-u:\b)(?:create|alter)[ \t]+user(?-u:\b)(?u:[^;.?!\r\n]|[.?!][^\s;]|\r?\n[ \t]*[^;\s])*?(?:\r?\n[ \t]*)?(?-u:\b)"#,
            // Or in `GRANT <privilege> … TO 'app'@'%'` on its line (`grant` alone is an English
            // word), the clause there or at the next line's start.
            r#"|(?-u:\b)grant[ \t]+(?:all|select|insert|update|delete|usage|create|alter|execute|connect|references|index|drop|reload|process|super|replication|proxy|file|trigger|event|lock|show)(?-u:\b)(?u:[^;.?!\r\n]|[.?!][^\s;])*?(?:\r?\n[ \t]*)?(?-u:\b)"#,
            // Or the next user of a list (`…, 'b'@'%' IDENTIFIED BY`), a MySQL account (`@`).
            r#"|,[ \t\r\n]*(?u:'[^'\r\n]*'|"[^"\r\n]*"|`[^`\r\n]*`|[A-Za-z0-9_.-]+)@(?u:[^\s;,])*[ \t\r\n]+)"#,
            r#"identified(?: with[ \t]+["'`]?[A-Za-z0-9_]+["'`]?[ \t]+by| by)[ \t]+(?:(?:password|values)[ \t]+)?"#,
            // 'X' (`''` and MySQL's `\'` inside), "X" (also as `\"X\"` inside a shell's or
            // JSON's double quotes), or X bare.
            r#"(?:'(?P<s>(?u:(?:\\\\|\\'|''|[^'\r\n])+))'|\\?"(?P<s2>(?u:(?:[^"\\\r\n]|\\[^"\r\n])+))\\?"|(?P<s3>(?u:[^\s'"\\;,)][^\s'";,)]*)))"#
        ),
        Check::SqlPassword,
        &["identified by", "identified with"],
        Shape::Any,
    ),
    // A password or token in an XML element (`<password>X</password>`, Maven's settings and
    // its `<passphrase>`, `<db:apiKey>X</db:apiKey>`, a CDATA value), or a `value` under a
    // `key` or `name` (.NET's `<add key="ApiSecret" value="X"/>`, Spring's `<property
    // name="password" value="X"/>`). The element's or key's name must name a secret and the
    // value look like one, as on a configuration line (`<maxTokens>4096</maxTokens>`,
    // `<UserSecretsId>…</UserSecretsId>` and `<add key="PasswordMinLength" value="8"/>`
    // stay).
    def(
        "secret_assignment",
        r#"<(?:[A-Za-z0-9_.-]+:)?(?P<n>[A-Za-z0-9_.-]*(?i-u:passw(?:or)?d|passphrase|secret|token|api_?key)[A-Za-z0-9_.-]*)>[ \t]*(?:<!\[CDATA\[(?P<s2>[^\]\r\n]+)\]\]>|(?P<s>[^<\s][^<\r\n]*?))[ \t]*</"#,
        Check::Named,
        &[
            "passw",
            "passphrase",
            "secret",
            "token",
            "apikey",
            "api_key",
        ],
        Shape::Tag,
    ),
    def(
        "secret_assignment",
        r#"<(?i-u:add|property|entry|setting)[ \t]+(?i-u:key|name)[ \t]*=[ \t]*["'](?P<n>[^"'\r\n]*(?i-u:passw(?:or)?d|passphrase|secret|token|api_?key)[^"'\r\n]*)["'][ \t]+(?i-u:value)[ \t]*=[ \t]*["'](?P<s>[^"'\r\n]+)["']"#,
        Check::Named,
        &["<add", "<property", "<entry", "<setting"],
        Shape::Any,
    ),
    // Google OAuth refresh tokens: `1//0` and a base64url body.
    def(
        "google_refresh_token",
        r"(?:^|[^A-Za-z0-9_]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<s>1//0[0-9A-Za-z_-]{30,})",
        Check::None,
        &["1//0"],
        Shape::Any,
    ),
    def(
        "netrc_password",
        r"machine[ \t]+\S+(?:\s+(?:login|account|port)\s+\S+)*\s+password\s+(?P<s>\S+)",
        Check::Placeholder,
        &["machine"],
        Shape::Any,
    ),
    // Docker's `config.json`: `"auth": "<base64 of user:password>"`.
    def(
        "docker_auth",
        r#""auth"\s*:\s*"(?P<s>[A-Za-z0-9+/=]{4,})""#,
        Check::None,
        &["\"auth\""],
        Shape::Any,
    ),
    def(
        "kubeconfig_key",
        r#"client-key-data["']?\s*:\s*["']?(?P<s>[A-Za-z0-9+/=]{8,})"#,
        Check::None,
        &["client-key-data"],
        Shape::Any,
    ),
    // `.pgpass`: `host:port:database:user:password` (the usual ports or `*`).
    def(
        "pgpass",
        r"(?m)^[^\s:#]+:(?:5432|5433|6432|\*):[^\s:]+:[^\s:]+:(?P<s>\S+)[ \t\r]*$",
        Check::None,
        &[":5432:", ":5433:", ":6432:", ":*:"],
        Shape::Any,
    ),
    // `.npmrc`: `_auth=<base64 of user:password>` (`_authToken=` and `_password=` are
    // assignments below).
    def(
        "npmrc_auth",
        r"(?m)(?:^|:)_auth[ \t]*=[ \t]*(?P<s>\S+)",
        Check::None,
        &["_auth"],
        Shape::Any,
    ),
    def(
        "cli_secret",
        r#"--(?:password|passphrase|token|secret|api-key)(?:=|[ \t]+)(?P<s>"[^"\r\n]+"|'[^'\r\n]+'|[^\s"'-][^\s"']*)"#,
        Check::Flag,
        &["--pass", "--token", "--secret", "--api-key"],
        Shape::Any,
    ),
    // A double-quoted value holding an escaped quote (`"password": "pa\"ss123"`, `password:
    // "p@ss\"word"`), read to its closing quote; the rule below stops at the backslash. Only
    // where the value's opening quote is bare: in JSON text inside JSON (`\"password\":
    // \"x\"`) the same `\"` closes the value.
    def(
        "secret_assignment",
        r#"(?i-u:secret|token|passw(?:or)?d|passphrase|api_?key|private_key)[A-Za-z0-9_.-]*"?[ \t]*(?::=|=|:)[ \t]*"(?P<s>(?:[^"\\\r\n]|\\[^\r\n])*\\"(?:[^"\\\r\n]|\\[^\r\n])*)""#,
        Check::Assignment,
        &["\\\""],
        Shape::Any,
    ),
    def(
        "secret_assignment",
        r#"(?i-u:secret|token|passw(?:or)?d|passphrase|api_?key|private_key)[A-Za-z0-9_.-]*\\?["']?[ \t]*(?::=|=|:|：)[ \t]*\\?["']?(?P<s>[^\s"'\\,;)}\]&\x{3000}-\x{30FF}\x{4E00}-\x{9FFF}\x{AC00}-\x{D7AF}\x{FF00}-\x{FFEF}][^\s"'\\,;)}\]\x{3000}-\x{30FF}\x{4E00}-\x{9FFF}\x{AC00}-\x{D7AF}\x{FF00}-\x{FFEF}]*)"#,
        Check::Assignment,
        &[
            "secret",
            "token",
            "passw",
            "passphrase",
            "api_key",
            "apikey",
            "private_key",
        ],
        Shape::Assignment,
    ),
    // A password named for whom or what it is (`Password for bob: X`, `the password for the
    // admin user = X`): up to four words between `for` and the separator, a host's word with
    // its port (`Password for postgres on localhost:5432: X`).
    def(
        "secret_assignment",
        r#"(?i-u)(?:passw(?:or)?d|passphrase)[ \t]+for(?:[ \t]+[A-Za-z0-9_.@'-]+(?::[0-9]{1,5})?){1,4}[ \t]*[:=][ \t]*\\?["']?(?P<s>(?u:[^\s"'\\,;)}\]&]+))"#,
        Check::Assignment,
        &["password for", "passwd for", "passphrase for"],
        Shape::Any,
    ),
    // A password said in a sentence (`the password is hunter2x`, `My password was: Tr0ub4dor&3`,
    // `the password for the staging db is X`): the word after `is` or `was`, when it looks like
    // a password rather than prose (see [`Check::Prose`]: `the password is required`, `is 8
    // characters` stay).
    def(
        "secret_assignment",
        r#"(?i-u)(?:passw(?:or)?d|passphrase)(?:[ \t]+for(?:[ \t]+[A-Za-z0-9_.@'-]+){1,4})?[ \t]+(?:is|was)(?:[ \t]+(?:now|still))?[ \t]*:?[ \t]+[`"']?(?P<s>(?u:[^\s"'`\\,;)}\]]*[^\s"'`\\,;)}\].?:]))"#,
        Check::Prose,
        &[
            "password is",
            "password was",
            "passwd is",
            "passwd was",
            "passphrase is",
            "passphrase was",
            "password for",
            "passwd for",
            "passphrase for",
        ],
        Shape::Any,
    ),
    // A key or token said in a sentence under the name of what it is (`the API key is X`, `my
    // access token was X`; `the client secret for prod is X` when the text also says `secret
    // is` somewhere: the needles are the common `… is`/`… was` only): judged as a password in
    // a sentence (`the API key is required`, `the access token is valid` stay).
    def(
        "secret_assignment",
        r#"(?i-u)\b(?P<n>(?:api|access|secret|auth|bot|client|signing|private|deploy|service)[ \t_-]+(?:key|token|secret))(?:[ \t]+for(?:[ \t]+[A-Za-z0-9_.@'-]+){1,4})?[ \t]+(?:is|was)(?:[ \t]+(?:now|still))?[ \t]*:?[ \t]+[`"']?(?P<s>(?u:[^\s"'`\\,;)}\]]*[^\s"'`\\,;)}\].?:]))"#,
        Check::Prose,
        &[
            "key is",
            "key was",
            "token is",
            "token was",
            "secret is",
            "secret was",
        ],
        Shape::Any,
    ),
    // A Markdown table row that gives a secret's value: a secret's name (see [`secret_name`])
    // in the first cell, its value in the second (`| password | X |`, `| `DB_PASSWORD` |
    // `X` |`, `| **API key** | X |`), judged as a password in a sentence (see
    // [`Check::Prose`]) under that name: a header, a separator, a type or a description
    // (`| password | string | The user's password |`, `| password | required |`, `| token |
    // JWT |`) stays.
    def(
        "secret_assignment",
        r#"(?m)^[ \t]*\|[ \t]*(?:\*\*)?`?(?P<n>[A-Za-z][A-Za-z0-9_. -]*?)`?(?:\*\*)?[ \t]*\|[ \t]*`?(?P<s>[^\s|`][^|`\r\n]*?)`?[ \t]*(?:\||\r?$)"#,
        Check::Prose,
        KEY_WORDS,
        Shape::Cell,
    ),
    // A password alone on the line after its name (`Password:` then `  X`): the value is the
    // next line's only word.
    def(
        "secret_assignment",
        r#"(?im-u)(?:passw(?:or)?d|passphrase)[A-Za-z0-9_.-]*[ \t]*:[ \t]*\r?\n[ \t]*(?P<s>(?u:[^\s"'`]+))[ \t]*\r?$"#,
        Check::Assignment,
        &["passw", "passphrase"],
        Shape::NextLine,
    ),
    // A short password word with its value right after the separator (`pass:X`, `pw=X`, as on
    // a command line or in a chat message: `user:bob pass:hunter2`); with a blank after the
    // `:` it is a test runner's line (`PASS: t/basic.sh`).
    def(
        "secret_assignment",
        r#"(?:^|[^A-Za-z0-9_.-])(?P<n>(?i-u:pass|pw))[:=](?P<s>[^\s"'\\,;)}\]&]+)"#,
        Check::ShortPassWord,
        &["pass:", "pass=", "pw:", "pw="],
        Shape::Run(not_space, 1),
    ),
    // `.env`, shell and compose: `DB_PASS=…`, `export APP_KEY=…`, `-e ADMIN_PW=…` (an upper-case
    // name, `=` with no space around it). The value may be quoted with escaped quotes (JSON
    // text: `DB_PASS=\"x\"`).
    def(
        "secret_assignment",
        r#"(?-u:\b)(?P<n>[A-Z][A-Z0-9_]*)=(?P<s>"(?:[^"\\\r\n]|\\[^\r\n])*"|'[^'\r\n]*'|\\"[^"\\\r\n]*\\"|\\'[^'\\\r\n]*\\'|[^\s"'`;&|)]+)"#,
        Check::Named,
        KEY_WORDS,
        Shape::Keyed,
    ),
    // A configuration line (`.env`, YAML, INI, properties): `name: value` or `name=value` that
    // ends the line, whatever the value's length (`password: hunter2`, `db_pass: letmein`).
    def(
        "secret_assignment",
        r#"(?m)^[ \t]*(?:- )?(?:export[ \t]+)?["']?(?P<n>[A-Za-z_][A-Za-z0-9_.-]*)["']?(?P<sep>[ \t]*=[ \t]*|:[ \t]+)(?P<s>"(?:[^"\\\r\n]|\\[^\r\n])*"|'[^'\r\n]*'|[^\s"'#;,=|](?:[^\r\n;]*[^\s,;:{}(\[\\)])?)[ \t]*\r?$"#,
        Check::Named,
        KEY_WORDS,
        Shape::Keyed,
    ),
    // An ODBC or ADO.NET connection string's password: `…;PWD=X;` (`Pwd`, `Password`) after a
    // `;`, its value in braces the part inside them; or `PWD=X;` before one (`PWD=X;UID=sa`).
    // The value must look like one, as on a configuration line (`; password =
    // getpass.getpass()` stays); a shell's `PWD=/home/…` has neither shape. After the
    // assignments, which take `; password=X` first.
    def(
        "connection_string_password",
        r#";[ \t]*(?i-u:pwd|password)[ \t]*=[ \t]*(?:\{(?P<s2>[^}\r\n]+)\}|(?P<s>[^;"'\r\n{][^;"'\r\n]*))"#,
        Check::PasswordValue,
        &["pwd", "password"],
        Shape::Equals,
    ),
    def(
        "connection_string_password",
        r#"(?-u:\b)(?:PWD|Pwd)=(?P<s>[^;"'\s/~{][^;"'\s]*);"#,
        Check::PasswordValue,
        &["pwd"],
        Shape::Equals,
    ),
];

/// What a name holds, one of which every secret name of [`secret_name`] contains.
const KEY_WORDS: &[&str] = &[
    "pass", "pw", "key", "secret", "token", "cred", "auth", "salt", "dsn",
];

const _: () = assert!(RULES.len() <= 128);
// Needle tables index rules and needles with a byte, and needles are at most 255 bytes long.

/// Bytes from the most to the least frequent in code and transcripts (measured over the
/// dependencies' Rust sources and the shared transcript fixtures, ASCII case folded); a byte
/// not listed is rarer than all of them. Only the speed of [`for_each_needle`] depends on it.
const BY_FREQUENCY: &[u8] =
    b" e\"tsraniocl:d,u\npm/f_#h-0g)(.2by1k4w35{}v697x8`=;\\[]>z*q|!&j+<'?$@%^~";

/// Every needle once (compared without regard to ASCII case), with the rules it belongs to.
static NEEDLE_LIST: LazyLock<Vec<(&'static [u8], u128)>> = LazyLock::new(|| {
    let mut list: Vec<(&'static [u8], u128)> = Vec::new();
    for (rule, def) in RULES.iter().enumerate() {
        for n in def.needles {
            let n = n.as_bytes();
            match list.iter_mut().find(|(m, _)| m.eq_ignore_ascii_case(n)) {
                Some((_, rules)) => *rules |= 1 << rule,
                None => list.push((n, 1 << rule)),
            }
        }
    }
    list
});

/// The needle table: for each byte, the needles it anchors, as `(needle in [`NEEDLE_LIST`],
/// offset of the byte in the needle)`, and the bytes that can stand next to it (a 256-bit
/// set, both ASCII cases): the byte after it in the needle, or the byte before it when it ends
/// the needle. Each needle is anchored by its rarest byte (by [`BY_FREQUENCY`]), in both ASCII
/// cases; the neighbour set lets the scan skip an anchor byte (`g` of `ing `) without looking
/// at its needles.
struct Anchors {
    /// Needles whose anchor byte is followed by another byte of the needle.
    next: [Vec<(u16, u8)>; 256],
    next_set: [[u64; 4]; 256],
    /// Needles whose anchor byte ends the needle.
    prev: [Vec<(u16, u8)>; 256],
    prev_set: [[u64; 4]; 256],
}

fn set_has(set: &[u64; 4], b: u8) -> bool {
    set[usize::from(b >> 6)] & (1 << (b & 63)) != 0
}

static NEEDLE_ANCHORS: LazyLock<Box<Anchors>> = LazyLock::new(|| {
    let rank = |b: u8| {
        BY_FREQUENCY
            .iter()
            .position(|&c| c == b.to_ascii_lowercase())
            .map_or(usize::MAX, |p| p)
    };
    let mut at = Box::new(Anchors {
        next: std::array::from_fn(|_| Vec::new()),
        next_set: [[0; 4]; 256],
        prev: std::array::from_fn(|_| Vec::new()),
        prev_set: [[0; 4]; 256],
    });
    let add = |set: &mut [u64; 4], b: u8| {
        for c in [b.to_ascii_lowercase(), b.to_ascii_uppercase()] {
            set[usize::from(c >> 6)] |= 1 << (c & 63);
        }
    };
    for (k, (n, _)) in NEEDLE_LIST.iter().enumerate() {
        let (off, b) = n
            .iter()
            .copied()
            .enumerate()
            .max_by_key(|&(_, b)| rank(b))
            .expect("needles are not empty");
        let entry = (k as u16, off as u8);
        let mut cases = vec![b.to_ascii_lowercase()];
        if b.is_ascii_alphabetic() {
            cases.push(b.to_ascii_uppercase());
        }
        for c in cases {
            let c = usize::from(c);
            if off + 1 < n.len() {
                at.next[c].push(entry);
                add(&mut at.next_set[c], n[off + 1]);
            } else if off > 0 {
                at.prev[c].push(entry);
                add(&mut at.prev_set[c], n[off - 1]);
            } else {
                // A one-byte needle: any neighbour.
                at.next[c].push(entry);
                at.next_set[c] = [u64::MAX; 4];
            }
        }
    }
    at
});

/// Calls `f(rule, start, end)` for every occurrence of every rule's needle in `text`
/// (compared without regard to ASCII case, overlapping occurrences included), `start..end`
/// being its bytes. One pass over the text and no automaton to build: a hook pays about a
/// microsecond to set up where an Aho-Corasick DFA of the same needles took 0.13 ms to
/// build (its scan is 1.4 times faster, which a hook's 20 KB does not make up for).
fn for_each_needle(text: &[u8], mut f: impl FnMut(usize, usize, usize)) {
    let at = &**NEEDLE_ANCHORS;
    let list = &*NEEDLE_LIST;
    let mut check = |p: usize, entries: &[(u16, u8)]| {
        for &(k, off) in entries {
            let (needle, mut rules) = list[k as usize];
            let Some(start) = p.checked_sub(off as usize) else {
                continue;
            };
            let end = start + needle.len();
            if end <= text.len() && text[start..end].eq_ignore_ascii_case(needle) {
                while rules != 0 {
                    f(rules.trailing_zeros() as usize, start, end);
                    rules &= rules - 1;
                }
            }
        }
    };
    for (p, &b) in text.iter().enumerate() {
        let b = usize::from(b);
        if !at.next[b].is_empty()
            && text
                .get(p + 1)
                .is_some_and(|&c| set_has(&at.next_set[b], c))
        {
            check(p, &at.next[b]);
        }
        if !at.prev[b].is_empty() && p > 0 && set_has(&at.prev_set[b], text[p - 1]) {
            check(p, &at.prev[b]);
        }
    }
}

/// The rules (as a bit set over [`RULES`]) whose needles occur in `text`.
fn rules_hit(text: &str) -> u128 {
    let mut set = 0u128;
    for_each_needle(text.as_bytes(), |rule, _, _| set |= 1 << rule);
    set
}

/// The rules (as a bit set over [`RULES`]) that could match `text`: one of its needles occurs,
/// followed by what the rule needs after it (see [`Shape`]). A rule outside the set cannot
/// match, so it is neither compiled nor run.
fn rules_plausible(text: &str) -> u128 {
    rules_plausible_seeing(text, |_, _, _| {})
}

/// [`rules_plausible`], each needle found also given to `seen` (rule, start, end), so that a
/// caller needing the needles too scans the text once ([`redact_secrets`]).
fn rules_plausible_seeing(text: &str, mut seen: impl FnMut(usize, usize, usize)) -> u128 {
    let b = text.as_bytes();
    let mut set = 0u128;
    for_each_needle(b, |rule, start, end| {
        seen(rule, start, end);
        if set & (1 << rule) == 0 && RULES[rule].shape.follows(b, start, end) {
            set |= 1 << rule;
        }
    });
    set
}

/// What must follow a rule's needle for the rule to match there: read exactly as far as it
/// reads, and looser than the rule beyond (any byte that is not ASCII whitespace stands for a
/// `[^\s…]` class), so a rule turned down could not have replaced anything from that needle.
/// Needles are common words of code and prose (`token`, `://`, `key`), and the regexes cost
/// a hook 0.1–0.5 ms each to compile.
enum Shape {
    /// Nothing checked.
    Any,
    /// At least `n` bytes of the class right after the needle (`npm_` + 36 alphanumerics).
    Run(fn(&u8) -> bool, usize),
    /// `secret_assignment`: the needle (`token`, `secret`, `passw`, `api_key`, …) starts the
    /// rule's keyword, then `[A-Za-z0-9_.-]*`, an optional `\`, an optional quote, `[ \t]*`,
    /// `:=`, `=`, `:` (not `::`, a path) or `：`, `[ \t]*`, an optional `\` and quote, and a value
    /// of at least 8 bytes (the rule keeps values of 8 characters or more, see [`keep_match`]),
    /// or 1 after `passw…` and `passphrase`.
    Assignment,
    /// `url_password`: after `://`, a user part (maybe empty) up to a `:`, then a password
    /// part up to an `@`, without whitespace.
    UrlPassword,
    /// `url_token`: after `://`, at least 20 bytes of `[A-Za-z0-9_.%-]`, then `@`.
    UrlToken,
    /// A header: `[A-Za-z0-9-]*`, an optional `\` and quote, `[ \t]*`, then `:`.
    Header,
    /// A key name: `[A-Za-z0-9_.-]*`, an optional quote, `[ \t]*`, then `=`, or `:` and a space or tab.
    Keyed,
    /// An XML element's name: `[A-Za-z0-9_.-]*`, then `>`.
    Tag,
    /// A Markdown table cell's name: `[A-Za-z0-9_. -]*`, an optional `` ` `` and `**`,
    /// blanks, then `|`.
    Cell,
    /// `[ \t]*` then `=` (a connection string's `PWD=`).
    Equals,
    /// A name ending its line with `:`: `[A-Za-z0-9_.-]*`, `[ \t]*`, `:`, blanks, then the
    /// line break (`Password:` with its value on the next line).
    NextLine,
    /// A command's password flag: one of these byte strings (`-u`, `-p`) later on the needle's
    /// line. The command-line rules join a command and its flag with blanks and words, none of
    /// which holds a line break (`[ \t]`, `[^\s…]`, `\S`), so a line without the flag cannot
    /// match: `docker::tests::volume ... ok` compiles no rule, `docker login -p …` does.
    Flag(&'static [&'static [u8]]),
    /// [`Shape::Flag`] after these needles (compared without regard to ASCII case); after the
    /// rule's other needles nothing is checked.
    FlagAfter(&'static [&'static [u8]], &'static [&'static [u8]]),
}

/// [`Check::Prose`]'s judgement of `secret` as the value of `name` (`password` in a
/// sentence): at least 4 characters; digits alone at least 6; otherwise a letter with a digit
/// or a symbol other than `.`, `-`, `_`, `/` and `'`; not code, and a secret value as a config
/// line's would be ([`config_value_is_secret`]).
fn prose_value_is_secret(name: &str, secret: &str) -> bool {
    let n = secret.chars().count();
    let digits = secret.bytes().all(|b| b.is_ascii_digit());
    let letter = secret.chars().any(char::is_alphabetic);
    let mark = secret.chars().any(|c| {
        c.is_ascii_digit() || !(c.is_alphanumeric() || matches!(c, '.' | '-' | '_' | '/' | '\''))
    });
    n >= 4
        && (if digits {
            n >= 6
        } else {
            letter && (mark || random_letters(secret))
        })
        && !(letter && looks_like_code(secret, false))
        && config_value_is_secret(name, "=", secret, false)
}

/// The cells of a Markdown table's line (`| a | b |`): each cell's byte range in `line`, its
/// blanks, backticks and `**` around it left out; `None` when the line is not a table row.
fn table_cells(line: &str) -> Option<Vec<(usize, usize)>> {
    let body = line.trim_end_matches(['\r', ' ', '\t']);
    let lead = line.len() - line.trim_start_matches([' ', '\t']).len();
    if !line[lead..].starts_with('|') {
        return None;
    }
    let mut cells = Vec::new();
    let mut start = lead + 1;
    let b = body.as_bytes();
    let mut i = start;
    while i < b.len() {
        // `\|` is a pipe inside a cell.
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == b'|' {
            let mut s = start;
            let mut e = i;
            while s < e && matches!(b[s], b' ' | b'\t') {
                s += 1;
            }
            while e > s && matches!(b[e - 1], b' ' | b'\t') {
                e -= 1;
            }
            for wrap in ["**", "`"] {
                if e - s >= 2 * wrap.len()
                    && body[s..e].starts_with(wrap)
                    && body[s..e].ends_with(wrap)
                {
                    s += wrap.len();
                    e -= wrap.len();
                }
            }
            cells.push((s, e));
            start = i + 1;
        }
        i += 1;
    }
    (!cells.is_empty()).then_some(cells)
}

/// The values under a Markdown table's column whose header names a password or credential
/// (`| User | Password |`, `|---|---|`, `| admin | X |`): each row's cell in that column, when
/// it passes as that name's value in a sentence ([`prose_value_is_secret`]). The byte ranges
/// in `text` to replace.
fn table_column_secrets(text: &str, spans: &mut Vec<(usize, usize)>) {
    let mut lines = Vec::new();
    let mut at = 0;
    for l in text.split_inclusive('\n') {
        lines.push((at, l.trim_end_matches('\n')));
        at += l.len();
    }
    let mut i = 0;
    while i + 1 < lines.len() {
        let (_, header) = lines[i];
        let (_, sep) = lines[i + 1];
        let (Some(head), Some(rule)) = (table_cells(header), table_cells(sep)) else {
            i += 1;
            continue;
        };
        let is_rule = rule.len() == head.len()
            && rule.iter().all(|&(s, e)| {
                e > s
                    && sep[s..e].bytes().all(|c| matches!(c, b'-' | b':'))
                    && sep[s..e].contains('-')
            });
        if !is_rule {
            i += 1;
            continue;
        }
        let columns: Vec<(usize, &str)> = head
            .iter()
            .enumerate()
            .map(|(k, &(s, e))| (k, &header[s..e]))
            .filter(|(_, name)| cell_names_a_password(name))
            .collect();
        let mut r = i + 2;
        while r < lines.len() {
            let (row_at, row) = lines[r];
            let Some(cells) = table_cells(row) else {
                break;
            };
            for &(k, name) in &columns {
                if let Some(&(s, e)) = cells.get(k) {
                    let v = &row[s..e];
                    if !v.contains(MARKER_PREFIX) && prose_value_is_secret(name, v) {
                        spans.push((row_at + s, row_at + e));
                    }
                }
            }
            r += 1;
        }
        i = r.max(i + 1);
    }
}

/// Whether a Markdown table's first cell names a password or a credential outright
/// (`password`, `API key`, `DB_PASSWORD`): the table rule's names. A word such as `Token`,
/// `Secret` or `Secrets` alone names a column of rates, types or paths as often as a value
/// (`| Token | 50/min |`, `| Secrets | k8s/secrets.yaml |`: second review).
fn cell_names_a_password(name: &str) -> bool {
    let n = name.trim();
    let lower = n.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    // An identifier (`DB_PASSWORD`, `jwt_secret`): as a config line's name is judged.
    let identifier = n.contains('_') && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    match words.as_slice() {
        [] => false,
        _ if identifier => secret_name(n).is_some(),
        // `PGPASSWORD`, `Root password`, `DB passwd`.
        [.., last] if last.contains("password") || last.contains("passwd") => true,
        [.., "passphrase" | "pwd" | "pass" | "pw"] => true,
        // A key, secret or token named for what it is (`API key`, `Bot token`, `Signing key`,
        // `Webhook secret`); the word alone names a column of rates or types as often.
        [_, .., "key" | "secret" | "token"] => true,
        _ => false,
    }
}

/// `[A-Za-z0-9_-]`: the body of most token formats.
fn token_byte(b: &u8) -> bool {
    b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-'
}

fn alnum(b: &u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn hex(b: &u8) -> bool {
    b.is_ascii_hexdigit()
}

/// `[A-Za-z0-9+/]`: base64.
fn b64_byte(b: &u8) -> bool {
    b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/'
}

/// `[A-Za-z0-9+/=_-]`: base64 of either alphabet, with padding.
fn b64url_byte(b: &u8) -> bool {
    b64_byte(b) || matches!(b, b'=' | b'_' | b'-')
}

/// `[A-Za-z0-9%+/=_-]`: a URL-encoded SAS signature.
fn sas_byte(b: &u8) -> bool {
    b64url_byte(b) || *b == b'%'
}

/// `[A-Za-z0-9_~.-]`: an Azure AD client secret.
fn azure_byte(b: &u8) -> bool {
    token_byte(b) || *b == b'~' || *b == b'.'
}

fn not_space(b: &u8) -> bool {
    !b.is_ascii_whitespace()
}

/// Bytes a [`Shape`] check reads at most in one run from a needle (a name, a value, a line):
/// a check that reaches this many says "plausible" and leaves the rest to the rule's regex
/// (linear in the text). Without the bound, a text of the same needle over and over
/// (`tokentoken…`, `://a:://a:…` on one line) made each needle read to the end of the run:
/// quadratic, minutes for a 1 MB line.
const SHAPE_SCAN: usize = 512;

impl Shape {
    /// Whether the bytes around a needle of the rule (`start..end`) can be part of a match;
    /// `true` as well when a run around it is longer than [`SHAPE_SCAN`] (not read to its end).
    fn follows(&self, b: &[u8], start: usize, end: usize) -> bool {
        let capped = std::cell::Cell::new(false);
        self.follows_within(b, start, end, &capped) || capped.get()
    }

    /// [`Shape::follows`] reading at most [`SHAPE_SCAN`] bytes per run; sets `capped` when a
    /// run was cut there.
    fn follows_within(
        &self,
        b: &[u8],
        start: usize,
        end: usize,
        capped: &std::cell::Cell<bool>,
    ) -> bool {
        let run = |from: usize, class: &dyn Fn(&u8) -> bool| {
            let from = from.min(b.len());
            let n = b[from..]
                .iter()
                .take(SHAPE_SCAN)
                .take_while(|c| class(c))
                .count();
            if n == SHAPE_SCAN {
                capped.set(true);
            }
            from + n
        };
        let name_then = |j: usize, class: &dyn Fn(&u8) -> bool| {
            let mut j = run(j, class);
            j += usize::from(b.get(j) == Some(&b'\\'));
            j += usize::from(matches!(b.get(j), Some(b'"' | b'\'')));
            run(j, &|c| matches!(c, b' ' | b'\t'))
        };
        match self {
            Shape::Any => true,
            Shape::Run(class, n) => run(end, class) - end >= *n,
            Shape::Assignment => {
                let mut j = name_then(end, &|c| {
                    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')
                });
                let value = |c: &u8| !c.is_ascii_whitespace() && !b"\"'\\,;)}]".contains(c);
                let short =
                    |w: &[u8]| end >= w.len() && b[end - w.len()..end].eq_ignore_ascii_case(w);
                let min = if short(b"passw") || short(b"passphrase") {
                    1
                } else {
                    8
                };
                match (b.get(j), b.get(j + 1)) {
                    // `:` then a value that starts with `=` is also read.
                    (Some(b':'), Some(b'=')) if run(j + 1, &value) - (j + 1) >= min => return true,
                    (Some(b':'), Some(b'=')) => j += 2,
                    (Some(b':'), Some(b':')) => return false,
                    (Some(b':' | b'='), _) => j += 1,
                    // A full-width colon (U+FF1A, `password：…` in CJK text).
                    (Some(0xEF), Some(0xBC)) if b.get(j + 2) == Some(&0x9A) => j += 3,
                    _ => return false,
                }
                j = run(j, &|c| matches!(c, b' ' | b'\t'));
                j += usize::from(b.get(j) == Some(&b'\\'));
                j += usize::from(matches!(b.get(j), Some(b'"' | b'\'')));
                b.get(j) != Some(&b'&') && run(j, &value) - j >= min
            }
            Shape::UrlPassword => {
                let user_end = run(end, &|c| !c.is_ascii_whitespace() && !b":/@".contains(c));
                if b.get(user_end) != Some(&b':') {
                    return false;
                }
                let word = run(user_end + 1, &not_space) - (user_end + 1);
                b[user_end + 1..user_end + 1 + word]
                    .iter()
                    .skip(1)
                    .any(|&c| c == b'@')
            }
            Shape::UrlToken => {
                let j = run(end, &|c| {
                    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'%')
                });
                j - end >= 20 && b.get(j) == Some(&b'@')
            }
            Shape::Header => {
                let j = name_then(end, &|c| c.is_ascii_alphanumeric() || *c == b'-');
                b.get(j) == Some(&b':')
            }
            Shape::Tag => {
                let j = run(end, &|c| {
                    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')
                });
                b.get(j) == Some(&b'>')
            }
            Shape::Cell => {
                let mut j = run(end, &|c| {
                    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-' | b' ')
                });
                j += usize::from(b.get(j) == Some(&b'`'));
                if b.get(j..j + 2) == Some(&b"**"[..]) {
                    j += 2;
                }
                let j = run(j, &|c| matches!(c, b' ' | b'\t'));
                b.get(j) == Some(&b'|')
            }
            Shape::Equals => {
                let j = run(end, &|c| matches!(c, b' ' | b'\t'));
                b.get(j) == Some(&b'=')
            }
            Shape::Flag(flags) => {
                let line_end = run(end, &|c| !matches!(c, b'\n' | b'\r'));
                let line = &b[end.min(b.len())..line_end];
                flags.iter().any(|f| line.windows(f.len()).any(|w| w == *f))
            }
            Shape::FlagAfter(commands, flags) => {
                let needle = &b[start.min(b.len())..end.min(b.len())];
                !commands.iter().any(|c| c.eq_ignore_ascii_case(needle))
                    || Shape::Flag(flags).follows_within(b, start, end, capped)
            }
            Shape::NextLine => {
                let j = run(end, &|c| {
                    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')
                });
                let j = run(j, &|c| matches!(c, b' ' | b'\t'));
                if b.get(j) != Some(&b':') {
                    return false;
                }
                let j = run(j + 1, &|c| matches!(c, b' ' | b'\t' | b'\r'));
                b.get(j) == Some(&b'\n')
            }
            Shape::Keyed => {
                let name = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-');
                let j = run(end, &name);
                // An environment name: `=` right after it.
                if b.get(j) == Some(&b'=') {
                    return true;
                }
                // A configuration line: the name starts the line (after blanks, `- `,
                // `export `, a quote).
                let back = b[..start]
                    .iter()
                    .rev()
                    .take(SHAPE_SCAN)
                    .take_while(|c| name(c))
                    .count();
                if back == SHAPE_SCAN {
                    capped.set(true);
                    return true;
                }
                let mut i = start - back;
                i -= usize::from(i > 0 && matches!(b[i - 1], b'"' | b'\''));
                let trim = |s: &'_ [u8]| -> usize {
                    s.len()
                        - s.iter()
                            .rev()
                            .take_while(|c| matches!(c, b' ' | b'\t'))
                            .count()
                };
                let mut before = &b[..i];
                let t = trim(before);
                if t < before.len() && before[..t].ends_with(b"export") {
                    before = &before[..t - 6];
                }
                let before = before.strip_suffix(b"- ").unwrap_or(before);
                if !matches!(before[..trim(before)].last(), None | Some(b'\n')) {
                    return false;
                }
                // The value ends the line, and not with `,`, `;`, `:`, `{`, `(`, `[`, `)` or `\`
                // (code).
                let eol = match b[j..].iter().take(SHAPE_SCAN).position(|&c| c == b'\n') {
                    Some(n) => j + n,
                    None if b.len() - j > SHAPE_SCAN => {
                        capped.set(true);
                        return true;
                    }
                    None => b.len(),
                };
                let line = b[..eol].trim_ascii_end();
                if matches!(
                    line.last(),
                    Some(b',' | b';' | b':' | b'{' | b'}' | b'(' | b'[' | b'\\' | b')')
                ) {
                    return false;
                }
                let j = j + usize::from(matches!(b.get(j), Some(b'"' | b'\'')));
                let j = run(j, &|c| matches!(c, b' ' | b'\t'));
                match b.get(j) {
                    Some(b'=') => true,
                    Some(b':') => matches!(b.get(j + 1), Some(b' ' | b'\t')),
                    _ => false,
                }
            }
        }
    }
}

/// Each rule's regex, compiled on first use (compiling all of them costs ~10 ms, which a hook
/// whose text needs one or two rules should not pay).
static COMPILED: [OnceLock<Regex>; RULES.len()] = [const { OnceLock::new() }; RULES.len()];

fn rule(i: usize) -> Rule<'static> {
    let d = &RULES[i];
    Rule {
        kind: d.kind,
        re: COMPILED[i].get_or_init(|| Regex::new(d.pattern).expect("redaction rule compiles")),
        check: d.check,
    }
}

/// The names of every kind of secret recognised, in rule order, each once.
pub fn kinds() -> impl Iterator<Item = &'static str> {
    RULES
        .iter()
        .enumerate()
        .filter(|(i, d)| !RULES[..*i].iter().any(|e| e.kind == d.kind))
        .map(|(_, d)| d.kind)
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

/// `text` with every `<private>…</private>` span replaced by `[private]` (see [`strip_private`]),
/// every recognised secret replaced by `[redacted:<kind>]`, then every match of the user's
/// rules in force ([`user::installed`], `[privacy] redact` in the config) by
/// `[redacted:<name>]`. Borrowed (no allocation) when nothing was replaced.
pub fn redact(text: &str) -> Cow<'_, str> {
    let out = match strip_private(text) {
        Cow::Borrowed(t) => redact_secrets(t),
        Cow::Owned(t) => Cow::Owned(redact_secrets(&t).into_owned()),
    };
    let out = match out {
        Cow::Borrowed(t) => redact_structured(t),
        Cow::Owned(t) => Cow::Owned(redact_structured(&t).into_owned()),
    };
    let Some(rules) = user::installed() else {
        return out;
    };
    match out {
        Cow::Borrowed(t) => rules.apply(t),
        Cow::Owned(t) => Cow::Owned(rules.apply(&t).into_owned()),
    }
}

/// [`redact`] without the `<private>` spans: only the secret rules, on the text, then, with the
/// rules anchored at a line's start or end ([`LINE_RULES`]), on the pieces of it between two
/// written-out line breaks or tabs that may hold such a line (`\n`, `\r\n`, `\r`, `\t` as two
/// characters: a shell script inside JSON text in a tool output, `printf 'ok\nDB_PASS=x'`, a
/// line indented by a tab `\n\tpass: x`), so that those lines are lines too. A piece
/// is redacted as a text of its own; what the whole text's pass redacted (a private key across
/// such lines) stays redacted.
fn redact_secrets(text: &str) -> Cow<'_, str> {
    if !text.contains("\\n") && !text.contains("\\r") && !text.contains("\\t") {
        return redact_text(text, u128::MAX);
    }
    // One scan of the needles for both passes when the first changes nothing (most texts).
    let mut needles: Vec<(usize, usize, usize)> = Vec::new();
    let hit = rules_plausible_seeing(text, |rule, start, end| {
        if *LINE_RULES & (1 << rule) != 0 {
            needles.push((rule, start, end));
        }
    });
    let out = redact_plausible(text, u128::MAX, hit);
    if needles.is_empty() {
        return out;
    }
    if let Cow::Owned(o) = &out {
        needles.clear();
        for_each_needle(o.as_bytes(), |rule, start, end| {
            if *LINE_RULES & (1 << rule) != 0 {
                needles.push((rule, start, end));
            }
        });
    }
    let b = out.as_bytes();
    // Where the written-out breaks and tabs are (each two bytes).
    let mut breaks: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] != b'\\' {
            i += 1;
        } else if matches!(b[i + 1], b'n' | b'r' | b't') {
            breaks.push((i, i + 2));
            i += 2;
        } else if b[i + 1] == b'\\' && matches!(b.get(i + 2), Some(b'n' | b'r' | b't')) {
            // Written out twice (JSON text inside a JSON string): `\\n`.
            breaks.push((i, i + 3));
            i += 3;
        } else {
            // An escaped character (`\\`, `\"`): the byte after it starts nothing.
            i += 2;
        }
    }
    // The pieces that hold a needle of a line rule that may match in the piece (read as a text
    // of its own), each once, in order: most texts with written-out breaks (code, JSON) have
    // none, and the others few.
    let mut pieces: Vec<(usize, usize)> = Vec::new();
    for (rule, start, end) in needles {
        if pieces.last().is_some_and(|&(_, e)| start < e) {
            continue;
        }
        let k = breaks.partition_point(|&(_, e)| e <= start);
        let from = if k == 0 { 0 } else { breaks[k - 1].1 };
        let to = breaks[breaks.partition_point(|&(s, _)| s < end)..]
            .first()
            .map_or(b.len(), |&(s, _)| s);
        // Whether the rule may match in the piece as a text of its own.
        if RULES[rule]
            .shape
            .follows(&b[from..to], start - from, end - from)
        {
            pieces.push((from, to));
        }
    }
    let mut rebuilt: Option<String> = None;
    let mut copied = 0;
    for (from, to) in pieces {
        if let Cow::Owned(r) = redact_text(&out[from..to], *LINE_RULES) {
            let into = rebuilt.get_or_insert_with(String::new);
            into.push_str(&out[copied..from]);
            into.push_str(&r);
            copied = to;
        }
    }
    match rebuilt {
        Some(mut into) => {
            into.push_str(&out[copied..]);
            Cow::Owned(into)
        }
        None => out,
    }
}

/// Secrets whose name and value the line rules see apart ([`redact`]'s last pass), each value
/// kept or redacted by the test of a configuration line's ([`config_value_is_secret`]):
///
/// - a YAML block scalar under a secret's name (`password: |`, `key: >-`): its indented lines;
/// - a name and its value given as two fields (Kubernetes' `- name: DB_PASSWORD` then `value:
///   …`, in YAML or JSON; `aws ssm get-parameter`'s `"Name": "/prod/db/password", …, "Value":
///   …`, the name's last `/` part read);
/// - JSON values under a secret's name that are not a string: a number (`"password":
///   12345678`), the strings of an array (`"api_key": ["…"]`) or of an object one level deep
///   (`"secret": {"value": "…"}`).
fn redact_structured(text: &str) -> Cow<'_, str> {
    let blocks = text.contains(": |") || text.contains(": >");
    let named = |a: &str, b: &str| text.contains(a) || text.contains(b);
    let yaml_pairs =
        named("value:", "Value:") && (named("name:", "Name:") || named("key:", "Key:"));
    let json_pairs = named("\"value\"", "\"Value\"")
        && (named("\"name\"", "\"Name\"") || named("\"key\"", "\"Key\""));
    let json_keys = text.contains("\":");
    // A Markdown table's header row and its rule (`|---|`).
    let table = text.contains("|-") || text.contains("|:-") || text.contains("| -");
    if !blocks && !yaml_pairs && !json_pairs && !json_keys && !table {
        return Cow::Borrowed(text);
    }
    static BLOCK: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"(?m)^(?P<ind>[ \t]*)(?:- )?["']?(?P<n>[A-Za-z_][A-Za-z0-9_.-]*)["']?:[ \t]*[|>][-+0-9]*[ \t]*\r?$"#)
            .expect("a valid regex")
    });
    static PAIR_YAML: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"(?m)^[ \t]*(?:- )?["']?(?:name|Name|key|Key)["']?:[ \t]*["']?(?P<n>[^"'\s]+)["']?[ \t]*\r?\n[ \t]*["']?(?:value|Value)["']?:[ \t]*(?P<s>"[^"\r\n]*"|'[^'\r\n]*'|[^\s"'#][^\r\n]*?)[ \t]*\r?$"#)
            .expect("a valid regex")
    });
    static PAIR_JSON: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#""(?:name|Name|key|Key)"[ \t]*:[ \t]*"(?P<n>[^"\\]*)"[ \t]*,[ \t\r\n]*(?:"[A-Za-z]+"[ \t]*:[ \t]*(?:"[^"\\]*"|[0-9]+|true|false|null)[ \t]*,[ \t\r\n]*){0,3}"(?:value|Value)"[ \t]*:[ \t]*"(?P<s>[^"\\]*)""#)
            .expect("a valid regex")
    });
    static JSON_STRING: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#""(?P<s>[^"\\]*)""#).expect("a valid regex"));
    let marker = format!("{MARKER_PREFIX}secret_assignment]");
    // Byte ranges to replace by the marker, found on `text` as it is.
    let mut spans: Vec<(usize, usize)> = Vec::new();
    if table {
        table_column_secrets(text, &mut spans);
    }
    // Each regex is compiled only when its text can hold a match (the `LazyLock` is not
    // touched otherwise): most texts have JSON keys and nothing else here.
    for c in blocks
        .then(|| BLOCK.captures_iter(text))
        .into_iter()
        .flatten()
    {
        if secret_name(&c["n"]).is_none() {
            continue;
        }
        let indent = c["ind"].len();
        let mut at = c.get(0).map_or(0, |m| m.end());
        // The lines after it indented deeper than its own (blank ones go on the block).
        while at < text.len() {
            let line_start = at + usize::from(text.as_bytes()[at] == b'\n');
            let line_end = text[line_start..]
                .find('\n')
                .map_or(text.len(), |i| line_start + i);
            let line = &text[line_start..line_end];
            let body = line.trim_start_matches([' ', '\t']);
            if !body.trim_end().is_empty() {
                if line.len() - body.len() <= indent {
                    break;
                }
                let end = line_start + (line.len() - body.len()) + body.trim_end().len();
                spans.push((line_start + (line.len() - body.len()), end));
            }
            at = line_end;
        }
    }
    let keyed = |name: &str, value: &str, quoted: bool| {
        let last = name.rsplit('/').find(|p| !p.is_empty()).unwrap_or(name);
        !value.contains(MARKER_PREFIX) && config_value_is_secret(last, "=", value, quoted)
    };
    for c in yaml_pairs
        .then(|| PAIR_YAML.captures_iter(text))
        .into_iter()
        .flatten()
    {
        let v = c.name("s").expect("the rule's value");
        let (inner, quoted) = unquote(v.as_str());
        if keyed(&c["n"], inner, quoted) {
            spans.push((v.start(), v.end()));
        }
    }
    for c in json_pairs
        .then(|| PAIR_JSON.captures_iter(text))
        .into_iter()
        .flatten()
    {
        let v = c.name("s").expect("the rule's value");
        if keyed(&c["n"], v.as_str(), true) {
            spans.push((v.start(), v.end()));
        }
    }
    // A JSON key (`"name":`) whose value is a number, an array or an object: read by hand, the
    // key's name tested only when the value is one of those (most keys hold a string).
    let b = text.as_bytes();
    for (colon, _) in text.match_indices("\":").filter(|_| json_keys) {
        let mut v = colon + 2;
        while v < b.len() && matches!(b[v], b' ' | b'\t') {
            v += 1;
        }
        let Some(&first) = b.get(v) else {
            continue;
        };
        if !(first.is_ascii_digit() || matches!(first, b'-' | b'[' | b'{')) {
            continue;
        }
        // A number: at least 4 digits (`"password": 1234`), else no secret to find.
        let sign = usize::from(first == b'-');
        let number_end = v
            + sign
            + b[v + sign..]
                .iter()
                .take_while(|c| c.is_ascii_digit() || **c == b'.')
                .count();
        let digits = b[v + sign..number_end]
            .iter()
            .filter(|c| c.is_ascii_digit())
            .count();
        if first != b'[' && first != b'{' && digits < 4 {
            continue;
        }
        let Some(open) = text[..colon].rfind('"') else {
            continue;
        };
        let name = &text[open + 1..colon];
        if name.is_empty()
            || !name
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
        {
            continue;
        }
        if secret_name(name).is_none() {
            continue;
        }
        if first == b'[' || first == b'{' {
            // One level: up to the first bracket, which must close it.
            let close = if first == b'[' { b']' } else { b'}' };
            let Some(end) = b[v + 1..]
                .iter()
                .position(|c| matches!(c, b'[' | b']' | b'{' | b'}'))
                .map(|i| v + 1 + i)
                .filter(|&e| b[e] == close)
            else {
                continue;
            };
            let inner = &text[v + 1..end];
            // An object's values are judged under their key joined to the name.
            let mut key = None;
            for st in JSON_STRING.captures_iter(inner) {
                let m = st.name("s").expect("the string");
                // An object's key: a string followed by `:`.
                let after = inner[st.get(0).map_or(0, |g| g.end())..].trim_start();
                if after.starts_with(':') {
                    key = Some(inner_name(name, m.as_str()));
                    continue;
                }
                let under = if first == b'{' {
                    match key.take() {
                        Some(k) => k,
                        None => continue,
                    }
                } else {
                    name.to_string()
                };
                if keyed(&under, m.as_str(), true) {
                    spans.push((v + 1 + m.start(), v + 1 + m.end()));
                }
            }
        } else if number_is_secret(name, &text[v..number_end]) {
            spans.push((v, number_end));
        }
    }
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (start, end) in spans {
        if start < copied || start == end {
            continue;
        }
        out.push_str(&text[copied..start]);
        out.push_str(&marker);
        copied = end;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// The rules that read a line's start or end (`(?m)`: configuration lines, `.pgpass`,
/// `.npmrc`), and the `.env` assignment, whose name must start a word: the ones a written-out
/// line break hides a line from ([`redact_secrets`]). A bit per rule, as [`rules_plausible`].
static LINE_RULES: LazyLock<u128> = LazyLock::new(|| {
    RULES
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            r.pattern.contains("(?m)") || r.pattern.starts_with(r"(?-u:\b)(?P<n>[A-Z]")
        })
        .fold(0, |set, (i, _)| set | 1 << i)
});

/// The secret rules of `rules` (a bit per rule, as [`rules_plausible`]) on `text` as one text
/// ([`redact_secrets`]).
fn redact_text(text: &str, rules: u128) -> Cow<'_, str> {
    redact_plausible(text, rules, rules_plausible(text) & rules)
}

/// [`redact_text`] with the rules found plausible in `text` already (`hit`).
fn redact_plausible(text: &str, rules: u128, mut hit: u128) -> Cow<'_, str> {
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
            hit = rules_plausible(&out) & rules;
        }
    }
    out
}

/// [`redact`] for a session title, then its lines joined into one by spaces: adapters keep a
/// prompt's lines apart in the title (`memtrail_adapters::title_text`) so that the rules for a
/// line of its own (`password: …`) still apply, as they do to the message. Adapters also cut
/// titles to a length (ending them with `…`), which may cut a secret so that no rule matches it
/// any more: a cut last word that still holds a trigger substring, or is long and mixes letters
/// and digits, is redacted as `truncated`.
pub fn redact_title(title: &str) -> Cow<'_, str> {
    let out = redact(title);
    let out = if out.contains('\n') {
        Cow::Owned(out.replace('\n', " "))
    } else {
        out
    };
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

/// The first marker in `text` (`[redacted:<kind>]`, `[private]`, `[private…]`): its byte
/// offset and length. `None` when there is none (or a `[redacted:` without its `]`).
fn next_marker(text: &str) -> Option<(usize, usize)> {
    let (i, m) = [MARKER_PREFIX, PRIVATE_OPEN_MARKER, PRIVATE_MARKER]
        .iter()
        .filter_map(|m| text.find(m).map(|i| (i, *m)))
        .min_by_key(|&(i, _)| i)?;
    let len = if m == MARKER_PREFIX {
        text[i..].find(']')? + 1
    } else {
        m.len()
    };
    Some((i, len))
}

/// A session title an older memtrail cut from a user prompt, redacted as the prompt now is.
/// Older adapters squashed the first prompt's whitespace before the title was redacted
/// (`memtrail_adapters::one_line`: one line, cut to a length, ending in `…`), so the rules
/// for a line of its own (`pass: hunter2` on its own line, YAML and `.env` lines) found no
/// line there and the title kept what the prompt's redaction replaced. `redact --rescan`
/// repairs such titles with this.
///
/// `prompt` is the prompt as stored (redacted, its lines kept). Each marker in it
/// (`[redacted:<kind>]`, `[private]`, `[private…]`) stands for any text: when `title` (its
/// whitespace squashed) is the squashed `prompt` with some text in place of each marker (a
/// title ending in `…`: a start of it), returns the title with the prompt's markers in place
/// of that text (cut inside a marker: the marker, then `…`). `None` when the title is not the
/// prompt's (an agent's own title), when no marker of the prompt covers title text, or when
/// no character of the prompt's own text is in the title.
pub fn title_from_prompt(title: &str, prompt: &str) -> Option<String> {
    if !prompt.contains(MARKER_PREFIX) && !prompt.contains("[private") {
        return None;
    }
    let squash = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let stored = prompt;
    let title = squash(title);
    let (title, cut) = match title.strip_suffix('…') {
        Some(b) => (b.trim_end(), true),
        None => (title.as_str(), false),
    };
    // The prompt as literal pieces and the markers between them.
    let prompt = squash(prompt);
    let mut pieces: Vec<&str> = Vec::new();
    let mut markers: Vec<&str> = Vec::new();
    let mut rest = prompt.as_str();
    while let Some((i, len)) = next_marker(rest) {
        pieces.push(&rest[..i]);
        markers.push(&rest[i..i + len]);
        rest = &rest[i + len..];
    }
    pieces.push(rest);
    // A glob match, each marker a `*`: the first piece starts the title, the last ends it (a
    // cut title: a `*` after the last piece found), the others at the earliest place they fit.
    let last = pieces.len() - 1;
    // The title's text each marker stands for, in order (not the one a cut title ends in).
    let mut covered: Vec<&str> = Vec::new();
    let mut out = String::with_capacity(title.len());
    let mut at = 0;
    for (k, piece) in pieces.iter().enumerate() {
        let rest = &title[at..];
        let found = match k {
            0 => rest.starts_with(piece).then_some(0),
            _ if k == last && !cut => rest.ends_with(piece).then(|| rest.len() - piece.len()),
            _ => rest.find(piece),
        };
        match found {
            Some(i) => {
                if k > 0 {
                    covered.push(&rest[..i]);
                    out.push_str(markers[k - 1]);
                }
                out.push_str(piece);
                at += i + piece.len();
            }
            // Cut inside the marker before this piece (or inside the piece: the marker
            // covers what the title shows of it).
            None if cut && k > 0 => {
                out.push_str(markers[k - 1]);
                at = title.len();
                break;
            }
            None => return None,
        }
    }
    let shown = pieces.iter().map(|p| p.len()).sum::<usize>();
    if at < title.len() || shown == 0 || out == title {
        return None;
    }
    // Each `[redacted:…]` covers what the prompt's redaction replaced only if the prompt, that
    // text in place of its markers (its lines as stored), is redacted back to the stored prompt: an
    // agent's or a user's title that merely ends like the prompt (`Deploy and fix the build`
    // against `[redacted:…] fix the build`) keeps its words (found by the attack review).
    let mut candidate = String::with_capacity(stored.len());
    let mut rest = stored;
    for text in &covered {
        let (i, len) = next_marker(rest)?;
        candidate.push_str(&rest[..i]);
        // A `<private>` span stands for any text (the title shows it with its tags or
        // without): not checked.
        match &rest[i..i + len] {
            m @ (PRIVATE_MARKER | PRIVATE_OPEN_MARKER) => candidate.push_str(m),
            _ => candidate.push_str(text.trim()),
        }
        rest = &rest[i + len..];
    }
    candidate.push_str(rest);
    if redact(&candidate) != stored {
        return None;
    }
    if cut {
        out.push('…');
    }
    Some(out)
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

/// The marker of a value under a secret's name.
const NAMED_SECRET: &str = "[redacted:secret_assignment]";

/// Whether the string `s`, a JSON value under the object key `k` (or a name and value pair's
/// name), is a secret: after a password name any value but a placeholder, a path, a URL or
/// code; after other secret names (see [`secret_name`]) a value of 8 characters or more
/// without whitespace that is not a lowercase word (an upper-case environment name: as on a
/// configuration line, [`config_value_is_secret`]).
fn json_value_is_secret(k: &str, s: &str) -> bool {
    if s.starts_with(MARKER_PREFIX) {
        return false;
    }
    let env_name =
        k.bytes().any(|b| b.is_ascii_uppercase()) && !k.bytes().any(|b| b.is_ascii_lowercase());
    match secret_name(k) {
        Some(Name::Password) => config_value_is_secret(k, "=", s, true),
        Some(Name::Other) if env_name => config_value_is_secret(k, "=", s, true),
        Some(Name::Other) => {
            s.len() >= 8
                && !s.chars().any(char::is_whitespace)
                && !looks_like_code(s, true)
                && !s.contains("://")
        }
        None => false,
    }
}

/// Whether a number (`12345678`, `-1.5`) under the key `name` is a secret: at least 4 digits
/// under a password's name (`"password": 1234`), 16 under another secret's name.
fn number_is_secret(name: &str, number: &str) -> bool {
    let digits = number.bytes().filter(u8::is_ascii_digit).count();
    match secret_name(name) {
        Some(Name::Password) => digits >= 4,
        Some(Name::Other) => digits >= 16,
        None => false,
    }
}

/// The name an object's key `inner` is judged by under a secret's name `parent`: the two joined
/// by `_` (`"secret": {"value": …}` is `secret_value`, a secret's; `"credentials": {"username":
/// …}` is `credentials_username`, not one).
fn inner_name(parent: &str, inner: &str) -> String {
    format!("{parent}_{inner}")
}

/// Redact every string inside a JSON value, recursively, object keys included. A string under
/// an object key that names a secret (`"password": "…"`, `"DB_PASS": "…"`, see
/// [`secret_name`]) is replaced whole when it looks like one ([`json_value_is_secret`]); so is
/// a number ([`number_is_secret`]), and each string and number of an array under such a key
/// (`"api_key": ["…"]`). An object's keys under such a key are judged joined to it
/// ([`inner_name`]). The `value` of a name and value pair (`{"name": "DB_PASSWORD", "value":
/// "…"}`: Kubernetes' `env`; `aws ssm get-parameter`'s `{"Name": "/prod/db/password", "Value":
/// "…"}`) is judged under the pair's name.
pub fn redact_json(v: &mut Value) {
    redact_json_under(None, v);
}

/// [`redact_json`] of `v`, the value of a key named `name` (`None`: no key, or one that names
/// no secret).
fn redact_json_under(name: Option<&str>, v: &mut Value) {
    match v {
        Value::String(s) => match name {
            Some(n) if json_value_is_secret(n, s) => *s = NAMED_SECRET.to_string(),
            _ => redact_string(s),
        },
        Value::Number(n) if name.is_some_and(|k| number_is_secret(k, &n.to_string())) => {
            *v = Value::String(NAMED_SECRET.to_string());
        }
        Value::Array(a) => a.iter_mut().for_each(|x| redact_json_under(name, x)),
        Value::Object(o) => {
            // A name and value pair: the value is judged under the name.
            let pair = ["name", "Name", "key", "Key"]
                .iter()
                .find_map(|n| match o.get(*n) {
                    Some(Value::String(n)) if secret_name(n).is_some() => Some(n.clone()),
                    _ => None,
                });
            for (k, v) in o.iter_mut() {
                let joined;
                let key = match (&pair, k.as_str(), name) {
                    (Some(p), "value" | "Value", _) => p.as_str(),
                    (_, _, Some(parent)) => {
                        joined = inner_name(parent, k);
                        joined.as_str()
                    }
                    _ => k.as_str(),
                };
                let key = secret_name(key).map(|_| key);
                let Value::String(s) = v else {
                    redact_json_under(key, v);
                    continue;
                };
                if key.is_some_and(|n| json_value_is_secret(n, s)) {
                    *s = NAMED_SECRET.to_string();
                } else if rules_hit(k) != 0 && !k.contains(['\n', ':']) {
                    // A header map (`"Authorization": "Basic …"`, `"X-API-Key": "…"`): the
                    // key and value as a header line.
                    let line = format!("{k}: {s}");
                    if let Cow::Owned(red) = redact(&line)
                        && let Some(value) = red.strip_prefix(&format!("{k}: "))
                    {
                        *s = value.to_string();
                    } else {
                        redact_string(s);
                    }
                } else {
                    redact_string(s);
                }
            }
            // A key can be a secret too (a token as a header name, a map keyed by tokens).
            // Rebuilt only when one is: two keys redacted alike keep both values, the second
            // as `"[redacted:…] (2)"`.
            if o.keys().any(|k| matches!(redact(k), Cow::Owned(_))) {
                for (k, v) in std::mem::take(o) {
                    let mut key = redact(&k).into_owned();
                    if o.contains_key(&key) {
                        let mut n = 2;
                        while o.contains_key(&format!("{key} ({n})")) {
                            n += 1;
                        }
                        key = format!("{key} ({n})");
                    }
                    o.insert(key, v);
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

/// What a key name says of its value (see [`secret_name`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Name {
    /// A password: any value but a placeholder is one, however short.
    Password,
    /// A token, a secret, a key, credentials.
    Other,
}

/// Whether a key name (`DB_PASS`, `ADMIN_PW`, `JWT_SIGNING_KEY`, `spring.datasource.password`,
/// `clientSecret`) names a secret. The name is cut into words at `_`, `.`, `-` and
/// lower-to-upper case changes; one word must be a password word (`password`, `passwd`,
/// `pass`, `pw`, `pwd`, `passphrase`, or ending in `password`), a secret word (`secret`,
/// `token`, `apikey`, `credentials`, `creds`, `salt`, `dsn`, or ending in `secret`/`token`),
/// `key` after another word that is not a non-secret kind of key (`primary`, `sort`, `public`,
/// `cache`, …), or `auth` in an upper-case name (`NPM_AUTH`) or alone. A name whose last word
/// says the value is about the secret rather than the secret (`TOKEN_URL`, `PASSWORD_FILE`,
/// `secretName`, `max_tokens`) is not one, nor `PWD`/`OLDPWD` (the shell's folders).
fn secret_name(name: &str) -> Option<Name> {
    // A dotted name names its last part (`spring.datasource.password`, `_curses.KEY_UP`).
    let name = name.rsplit('.').find(|p| !p.is_empty()).unwrap_or(name);
    const NOT_SECRET_LAST: &[&str] = &[
        "id",
        "ids",
        "file",
        "files",
        "path",
        "paths",
        "dir",
        "name",
        "names",
        "url",
        "uri",
        "type",
        "types",
        "kind",
        "length",
        "len",
        "size",
        "count",
        "ttl",
        "age",
        "days",
        "hours",
        "minutes",
        "seconds",
        "interval",
        "duration",
        "attempts",
        "retries",
        "rounds",
        "expiry",
        "expires",
        "expiration",
        "timeout",
        "header",
        "field",
        "env",
        "var",
        "policy",
        "mode",
        "enabled",
        "required",
        "format",
        "prefix",
        "suffix",
        "hint",
        "label",
        "endpoint",
        "host",
        "port",
        "user",
        "username",
        "email",
        "provider",
        "version",
        "lifetime",
        "algorithm",
        "alg",
        "method",
        "scope",
        "scopes",
        "ref",
        "min",
        "max",
        "limit",
        "index",
        "column",
        "param",
        "arg",
        "flag",
        "option",
        "help",
        "prompt",
        "input",
        "store",
        "source",
        "regex",
        "pattern",
        "hash",
        "hashed",
        "hashing",
        "digest",
        "fingerprint",
        "bits",
        "location",
        "reset",
        "kid",
        "text",
        "message",
        "error",
        "span",
        "range",
        "class",
        "handler",
        "state",
        "status",
        "stream",
        "list",
        "map",
        "set",
        "buffer",
        "offset",
        "start",
        "end",
        "tree",
        "filter",
        "manager",
        "service",
        "validator",
        "strategy",
        "rotation",
        "usage",
    ];
    const NOT_SECRET_KEY: &[&str] = &[
        "primary",
        "foreign",
        "sort",
        "partition",
        "cache",
        "public",
        "publishable",
        "map",
        "lookup",
        "idempotency",
        "group",
        "index",
        "row",
        "hash",
        "unique",
        "composite",
        "natural",
        "dedup",
        "shard",
        "routing",
        "range",
        "hot",
        "object",
        "dict",
        "next",
        "prev",
        "first",
        "last",
        "this",
        "my",
        "the",
        "a",
        "any",
        "some",
        "foreign",
        "join",
        "order",
        "entry",
        "item",
        "node",
        "ssh",
        "gpg",
        "pgp",
        "host",
        "known",
    ];
    let upper = name.bytes().any(|b| b.is_ascii_uppercase())
        && !name.bytes().any(|b| b.is_ascii_lowercase());
    let mut words: Vec<String> = Vec::new();
    for part in name.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut w = String::new();
        let mut prev_lower = false;
        for c in part.chars() {
            if c.is_ascii_uppercase() && prev_lower && !w.is_empty() {
                words.push(std::mem::take(&mut w));
            }
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            w.push(c.to_ascii_lowercase());
        }
        if !w.is_empty() {
            words.push(w);
        }
    }
    let last = words.last()?;
    if NOT_SECRET_LAST.contains(&last.as_str())
        || matches!(words.as_slice(), [w] if w == "pwd" || w == "oldpwd")
    {
        return None;
    }
    let mut found = None;
    for (i, w) in words.iter().enumerate() {
        let w = w.as_str();
        if matches!(
            w,
            "password" | "passwd" | "passphrase" | "pass" | "pw" | "pwd" | "sshpass" | "pgpass"
        ) || w.ends_with("password")
            || w.ends_with("passwd")
        {
            return Some(Name::Password);
        }
        let other = matches!(
            w,
            "secret"
                | "secrets"
                | "token"
                | "apikey"
                | "credentials"
                | "credential"
                | "creds"
                | "salt"
                | "dsn"
                | "secretkey"
                | "privatekey"
                | "accesskey"
                | "signingkey"
                | "masterkey"
                | "encryptionkey"
                | "authkey"
        ) || w.ends_with("secret")
            || w.ends_with("token")
            || (w == "key" && i > 0 && !NOT_SECRET_KEY.contains(&words[i - 1].as_str()))
            || (w == "auth" && (upper || words.len() == 1));
        if other {
            found = Some(Name::Other);
        }
    }
    found
}

/// Whether `value`, under the key `name` (a [`secret_name`]) after the separator `sep`, is a
/// secret: not empty, a placeholder (`$VAR`, `${…}`, `<password>`, `****`, `%s`), a type or
/// keyword (`string`, `null`, `true`, `required`), a path (`/`, `./`, `~/`), a URL, code (a
/// member chain or a call: `os.environ["X"]`, `getpass()`, `self.password`), the key's own
/// word (`token: token`) or a type name (`SecretStr`). A bare identifier after ` = ` (code
/// style) is code; after `:`, or `=` with no space, a word of letters is a value
/// (`password: letmein`). Digits only are a secret under a password name or from 16 digits.
fn config_value_is_secret(name: &str, sep: &str, value: &str, quoted: bool) -> bool {
    const WORDS: &[&str] = &[
        "true",
        "false",
        "yes",
        "no",
        "on",
        "off",
        "null",
        "nil",
        "none",
        "undefined",
        "required",
        "optional",
        "string",
        "str",
        "bytes",
        "int",
        "integer",
        "number",
        "bool",
        "boolean",
        "any",
        "unknown",
        "object",
        "char",
        "text",
        "secret",
        "secrets",
        "password",
        "token",
        "redacted",
        "empty",
        "default",
        "env",
        "hidden",
        "masked",
        "omitted",
        "unset",
        "sensitive",
    ];
    let Some(kind) = secret_name(name) else {
        return false;
    };
    let v = value.trim();
    if !v.chars().any(char::is_alphanumeric)
        || v.starts_with(['$', '<', '{', '%', '[', '!', '&', '*', '`', '('])
        || v.chars()
            .all(|c| matches!(c, '*' | '.' | 'x' | 'X' | '…' | '-' | '_'))
        || WORDS.iter().any(|w| w.eq_ignore_ascii_case(v))
        || v.contains("://")
        || v.starts_with('/')
        || v.starts_with("./")
        || v.starts_with("../")
        || v.starts_with("~/")
        || v.contains("::")
        || v.contains("${")
    {
        return false;
    }
    if v.bytes().all(|b| b.is_ascii_digit()) {
        return kind == Name::Password || v.len() >= 16;
    }
    // A data source name is a secret only with credentials in it (`user:pw@host`, `PWD=…`):
    // an ODBC name (`DSN=mydsn`) is not (found by the attack review).
    let lower = name.to_ascii_lowercase();
    if lower.contains("dsn") && secret_name(&lower.replace("dsn", "")).is_none() {
        let lv = v.to_ascii_lowercase();
        if !(v.contains('@') || lv.contains("pwd=") || lv.contains("password=")) {
            return false;
        }
    }
    // Numbers joined by dots (an OID, a version, an address), or a quoted word under a name
    // that is not a password's (`'include'`).
    if v.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        || (quoted && kind == Name::Other && v.bytes().all(|b| b.is_ascii_lowercase()))
    {
        return false;
    }
    // A Python string prefix (`r"…"`, `b'…'`): code.
    if v.len() > 1
        && matches!(v.as_bytes()[0], b'r' | b'b' | b'f' | b'u')
        && matches!(v.as_bytes()[1], b'"' | b'\'')
    {
        return false;
    }
    // Words, unquoted, are code or prose (`key is not None`, `a + b`, `password: the
    // password to use`), not a secret.
    if !quoted && v.contains(char::is_whitespace) {
        return false;
    }
    let letters = v.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_');
    // A snake_case name (`refresh_token_key = 'refresh_token'`).
    if letters && v.contains('_') && !v.bytes().any(|b| b.is_ascii_uppercase()) {
        return false;
    }
    if !quoted {
        // A call, an index or a member chain (`os.environ["X"]`, `getpass()`, `self.pw`).
        if (v.contains(['(', '[', '.']) || sep.starts_with([' ', '\t']))
            && looks_like_code(v, false)
        {
            return false;
        }
        if letters && sep.trim() == "=" && sep.len() > 1 {
            return false;
        }
    }
    if quoted && kind == Name::Other && v.contains(char::is_whitespace) {
        return false;
    }
    if letters {
        let v = v.trim_start_matches('_');
        let camel_type = v.starts_with(|c: char| c.is_ascii_uppercase())
            && v.bytes().skip(1).any(|b| b.is_ascii_uppercase())
            && v.bytes().any(|b| b.is_ascii_lowercase());
        let own_word = name
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w.eq_ignore_ascii_case(v))
            || name.to_ascii_lowercase().ends_with(&v.to_ascii_lowercase());
        if (camel_type && !random_letters(v)) || own_word {
            return false;
        }
    }
    true
}

/// True for a value of ASCII letters alone that reads as random rather than as a name: at
/// least 16 letters of both cases, split into camelCase words (a run of capitals not followed
/// by a small letter, or an optional capital and small letters) of which there are 4 or more
/// and at least 4 in 7 are short or cannot be said: two letters or fewer, or no vowel (`y`
/// counted as one). A name is mostly words (`getPasswordFromKeychain`: 4 words, none short;
/// `HTTPServerURLBuilder`: 4, one short); a random mixed-case token splits into many short
/// ones (`QwErTyUiOp…`: every word of two letters). Measured on 19,951 mixed-case names of 16
/// letters or more from the Rust crates, npm and Python packages on the build machine: 99
/// match, a dozen of them names (`AsyncIoStdAsTokio`), the rest base64 in certificates and
/// test data (a review's wider scan: 213 of 27,300, about 60 of them names); of random
/// mixed-case strings of 16–40 letters, 87–93% match (a long run of capitals counts as one
/// word, so some random strings read as names). Such a value in a secret's place
/// (`password=`, `"api_key": "…"`, `the API key is …`, `Authorization: …`) is not taken for
/// code, except as a bare name in code (`let token = NoKxGroupsInCommon;`).
fn random_letters(v: &str) -> bool {
    let b = v.as_bytes();
    if b.len() < 16
        || !b.iter().all(u8::is_ascii_alphabetic)
        || !b.iter().any(u8::is_ascii_uppercase)
        || !b.iter().any(u8::is_ascii_lowercase)
    {
        return false;
    }
    let (mut words, mut short) = (0usize, 0usize);
    let mut word = |w: &[u8]| {
        words += 1;
        let vowel = w.iter().any(|c| {
            matches!(
                c.to_ascii_lowercase(),
                b'a' | b'e' | b'i' | b'o' | b'u' | b'y'
            )
        });
        if w.len() <= 2 || !vowel {
            short += 1;
        }
    };
    let run =
        |from: usize, f: fn(&u8) -> bool| from + b[from..].iter().take_while(|c| f(c)).count();
    let mut i = 0;
    while i < b.len() {
        let capitals = run(i, u8::is_ascii_uppercase);
        if capitals == b.len() {
            word(&b[i..]);
            break;
        }
        if capitals == i {
            // Small letters.
            let end = run(i, u8::is_ascii_lowercase);
            word(&b[i..end]);
            i = end;
            continue;
        }
        // Capitals, then a small letter: all but the last capital are a word of their own
        // (`HTTPServer`: `HTTP`, `Server`).
        if capitals - i >= 2 {
            word(&b[i..capitals - 1]);
        }
        let start = capitals - 1;
        let end = run(capitals, u8::is_ascii_lowercase);
        word(&b[start..end]);
        i = end;
    }
    words >= 4 && short * 7 >= words * 4
}

/// True for values that are code or ordinary words rather than secrets: numbers (`max_tokens =
/// 100000000`), identifiers, paths and member chains, optionally referenced, called, indexed or
/// generic (`self.token`, `Token::new(1)`, `&TokenStream`, `Token![=]`, `os.environ["API_KEY"]`,
/// `crypto.randomBytes(32)`, `Optional[str]`, `_bindgen_ty_3`, `AtomicU32Provider`), and
/// placeholders (`$VAR`, `${{ secrets.X }}`, `<password>`, `****`). An identifier word with a
/// digit after a lowercase letter (`hunter2`, `abc123def456`) is not code. When `quoted`, only a
/// lowercase word or snake_case name (`"access_token"`) and numbers count as non-secrets.
fn looks_like_code(v: &str, quoted: bool) -> bool {
    if random_letters(v) {
        return false;
    }
    if v.starts_with(['$', '<', '{', '%']) || v.chars().all(|c| c == '*' || c == '.') {
        return true;
    }
    if v.trim_start_matches('-')
        .chars()
        .all(|c| c.is_ascii_digit() || c == '_' || c == '.' || c == ',')
    {
        return true;
    }
    if quoted {
        // A camelCase or PascalCase name (`"challengePassword"`, `"IdTokenNoResponse"`).
        if v.bytes().all(|c| c.is_ascii_alphabetic())
            && v.bytes().any(|c| c.is_ascii_lowercase())
            && v.bytes().skip(1).any(|c| c.is_ascii_uppercase())
        {
            return true;
        }
        // Lowercase words, or words and numbers joined by `.` or `_` (`"tuple.0.0"`).
        return v.split(['.', '_']).all(|w| {
            w.bytes().all(|c| c.is_ascii_lowercase()) || w.bytes().all(|c| c.is_ascii_digit())
        });
    }
    if v.starts_with('|') {
        // A closure (`|tokens: …|`).
        return true;
    }
    let bare = v.trim_start_matches(['&', '*', '!', '(', '[']);
    let bare = bare.strip_prefix("::").unwrap_or(bare);
    // A `!` is a macro call only before its arguments (`format!(…)`, `vec![…]`): a word that
    // ends in `!` (`Summer2024!`) or goes on after it is a password.
    if let Some(i) = bare.find(['(', '[', '<', '!', '?', '{', '|', ')'])
        && bare[i..].starts_with('!')
        && !bare[i + 1..].starts_with(['(', '[', '{'])
    {
        return false;
    }
    let head = bare
        .split(['(', '[', '<', '!', '?', '{', '|', ')'])
        .next()
        .unwrap_or("");
    let head = head.strip_suffix("::").unwrap_or(head);
    // A member chain in an arithmetic expression (`self.taken+len(…)`).
    let head = match head.split_once(['+', '-', '/', '%']) {
        Some((first, _)) if first.contains('.') => first,
        _ => head,
    };
    if !head.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return false;
    }
    // Code structure: a reference, a path, a member chain, a call, an index, generics.
    let structured = bare.len() < v.len() || head.len() < bare.len() || head.contains(['.', ':']);
    let mut words = head.split("::").flat_map(|p| p.split('.'));
    if structured {
        // Identifiers (`proc_macro2`, `dot2_token`) and tuple indexes (`tuple.0.0`).
        return words.enumerate().all(|(i, w)| {
            !w.is_empty()
                && w.trim_start_matches('#')
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_')
                && (i > 0 || !w.starts_with(|c: char| c.is_ascii_digit()))
        });
    }
    // A bare identifier: words of letters, digits alone, digits after a capital (`U32`) or a
    // primitive type (`u32`, `__u64`); not digits after a lowercase letter (`hunter2`).
    words.all(|w| {
        !w.is_empty()
            && w.split('_').all(|part| {
                let b = part.as_bytes();
                b.iter().all(u8::is_ascii_digit)
                    || matches!(
                        part,
                        "u8" | "u16"
                            | "u32"
                            | "u64"
                            | "u128"
                            | "usize"
                            | "i8"
                            | "i16"
                            | "i32"
                            | "i64"
                            | "i128"
                            | "isize"
                            | "f32"
                            | "f64"
                    )
                    || b.iter().enumerate().all(|(i, c)| {
                        c.is_ascii_alphabetic()
                            || (c.is_ascii_digit()
                                && b[..i]
                                    .iter()
                                    .rev()
                                    .find(|c| !c.is_ascii_digit())
                                    .is_some_and(u8::is_ascii_uppercase))
                    })
            })
    })
}

/// The replacement of one rule over `text`, or `None` when it changes nothing.
fn apply_rule(rule: &Rule, text: &str) -> Option<String> {
    // The keyword is a property of the whole text: read once, not once per match (a text of
    // many token-shaped words with the keyword at its end was quadratic).
    if let Check::Keyword(word) = rule.check
        && !text
            .as_bytes()
            .windows(word.len())
            .any(|w| w.eq_ignore_ascii_case(word.as_bytes()))
    {
        return None;
    }
    let mut out: Option<String> = None;
    let mut last = 0;
    let mut at = 0;
    // An assignment turned down because its value is a URL (`token: https://x/?token=…`) is
    // searched again from the URL's query (`?`): it may hold a secret of its own. Other
    // matches turned down are passed over whole, as before (a search inside them found
    // spans in code: `AUTHORITY: ::windows_sys::core::HRESULT`). At most this many times a
    // text, so that a long run of such URLs stays linear.
    let mut retries = 256u32;
    while at <= text.len() {
        let Some(caps) = rule.re.captures_at(text, at) else {
            break;
        };
        let whole = caps.get(0).expect("group 0");
        // The secret: group `s`, else `s2` or `s3` (a rule with several shapes).
        let span = caps
            .name("s")
            .or_else(|| caps.name("s2"))
            .or_else(|| caps.name("s3"))
            .unwrap_or(whole);
        if !keep_match(rule.check, &caps, span.as_str(), text, span.start()) {
            let query = match rule.check {
                Check::Assignment if span.as_str().contains("://") => span.as_str().find('?'),
                _ => None,
            };
            at = if let (Some(i), true) = (query, retries > 0) {
                retries -= 1;
                span.start() + i
            } else if whole.end() > whole.start() {
                whole.end()
            } else {
                // An empty match: the next character.
                match text[whole.end()..].chars().next() {
                    Some(c) => whole.end() + c.len_utf8(),
                    None => break,
                }
            };
            continue;
        }
        let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
        o.push_str(&text[last..span.start()]);
        o.push_str(MARKER_PREFIX);
        o.push_str(rule.kind);
        o.push(']');
        last = span.end();
        at = if whole.end() > whole.start() {
            whole.end()
        } else {
            match text[whole.end()..].chars().next() {
                Some(c) => whole.end() + c.len_utf8(),
                None => break,
            }
        };
    }
    let mut o = out?;
    o.push_str(&text[last..]);
    Some(o)
}

/// A value as written, without its quotes: `"x"`, `'x'`, or with the quotes escaped (`\"x\"`,
/// `\'x\'`: JSON text); `true` with it when it was quoted.
fn unquote(raw: &str) -> (&str, bool) {
    for q in ["\"", "'", "\\\"", "\\'"] {
        if raw.len() >= 2 * q.len() && raw.starts_with(q) && raw.ends_with(q) {
            return (&raw[q.len()..raw.len() - q.len()], true);
        }
    }
    (raw, false)
}

/// Whether a placeholder stands where the secret would (`$TOKEN`, `<password>`, `{key}`).
fn placeholder(v: &str) -> bool {
    v.trim_start_matches(['"', '\''])
        .starts_with(['$', '<', '{', '%'])
}

fn keep_match(check: Check, caps: &regex::Captures, secret: &str, text: &str, at: usize) -> bool {
    if secret.contains(MARKER_PREFIX) {
        return false;
    }
    match check {
        Check::None => true,
        Check::Placeholder => !placeholder(secret),
        Check::UrlToken => {
            let longest_run = secret
                .split(|c: char| !c.is_ascii_alphanumeric())
                .map(str::len)
                .max()
                .unwrap_or(0);
            let count = |f: fn(&u8) -> bool| secret.bytes().filter(&f).count();
            let (upper, lower, digits) = (
                count(u8::is_ascii_uppercase),
                count(u8::is_ascii_lowercase),
                count(u8::is_ascii_digit),
            );
            let classes = [upper, lower, digits].iter().filter(|&&n| n > 0).count();
            let lower_hex = secret
                .bytes()
                .filter(u8::is_ascii_alphanumeric)
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            // A name: lower-case words and a few digits (`johnsmithdeveloper1990`).
            let name_like = upper == 0 && digits * 4 < upper + lower + digits;
            let token_like = longest_run >= 20
                && ((classes >= 2 && !name_like) || (lower_hex && digits >= 3 && lower >= 3));
            secret.len() <= 200
                && token_like
                && !placeholder(secret)
                // Azure DevOps' clone URLs name the organisation as the user and the path's
                // first segment (`https://org@dev.azure.com/org/…`).
                && caps.name("p").is_none_or(|p| p.as_str() != secret)
        }
        Check::SqlPassword => {
            !placeholder(secret)
                && !secret.starts_with(['"', '\'', ' ', '\t'])
                && !secret.ends_with([' ', '\t'])
                && (caps.name("s3").is_none()
                    || (caps.name("ctx").is_some() && !secret.starts_with([':', '?', '&'])))
        }
        Check::KeyBody => {
            let body = secret.split_once("-----\n").map_or(secret, |(_, b)| b);
            let mut run = 0;
            body.bytes().any(|c| {
                run = if c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=') {
                    run + 1
                } else {
                    0
                };
                run >= 16
            })
        }
        Check::Flag => {
            let quoted = secret.starts_with(['"', '\'']);
            quoted || !(placeholder(secret) || secret.chars().all(|c| c.is_ascii_lowercase()))
        }
        Check::UrlPassword => {
            let user = caps.name("u").map_or("", |u| u.as_str());
            // A marker an earlier rule wrote as the user (`https://[redacted:github_token]@`)
            // is not a user and a password.
            if user.ends_with(&MARKER_PREFIX[..MARKER_PREFIX.len() - 1]) {
                return false;
            }
            let user_chars = user.chars().count();
            // A port then a path (`http://host:8080/@scope/pkg`) is not a password.
            let digits = secret.bytes().take_while(u8::is_ascii_digit).count();
            user_chars <= 100
                && secret.chars().count() <= 200
                && !placeholder(secret)
                // Already masked (`postgres://me:****@…`, as memtrail shows a URL).
                && !secret.bytes().all(|b| b == b'*')
                && !(digits > 0 && secret.as_bytes().get(digits) == Some(&b'/'))
        }
        Check::Named => {
            let name = caps.name("n").map_or("", |n| n.as_str());
            let sep = caps.name("sep").map_or("=", |s| s.as_str());
            // A test harness's result line (Automake's `PASS: t/basic.sh`, `PASS: run.test 3 -
            // parses`): a path, a script's name or words after it. `PASS: hunter2` stays a
            // password.
            if name == "PASS" && sep.starts_with(':') {
                let v = secret.trim();
                let script = v.rsplit_once('.').is_some_and(|(stem, ext)| {
                    !stem.is_empty()
                        && (1..=4).contains(&ext.len())
                        && ext.bytes().all(|b| b.is_ascii_lowercase())
                });
                if v.contains(['/', ' ', '\t']) || script {
                    return false;
                }
            }
            let (value, quoted) = unquote(secret);
            config_value_is_secret(name, sep, value, quoted)
        }
        Check::ShortPassWord => {
            let name = caps.name("n").map_or("", |n| n.as_str());
            let count = secret
                .bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b'/' | b'.' | b'%'));
            !count && !secret.starts_with('=') && config_value_is_secret(name, "=", secret, false)
        }
        Check::Prose => {
            caps.name("n")
                .is_none_or(|n| cell_names_a_password(n.as_str()))
                && prose_value_is_secret(caps.name("n").map_or("password", |n| n.as_str()), secret)
        }
        Check::PasswordValue => config_value_is_secret("password", "=", secret, false),
        Check::Header => {
            if placeholder(secret) {
                return false;
            }
            if caps.name("sch").is_some() {
                return true;
            }
            if secret.chars().nth(3).is_none() {
                return false;
            }
            let bare_auth = caps.get(0).is_some_and(|w| {
                w.as_str()
                    .as_bytes()
                    .get(..13)
                    .is_some_and(|k| k.eq_ignore_ascii_case(b"authorization"))
            });
            let short_bare = bare_auth && secret.chars().count() < 16;
            // `X-API-Key: apiKey`, `config.key`: code; a word of letters: not a key, unless it
            // reads as random ([`random_letters`]).
            let code = secret.starts_with(|c: char| c.is_ascii_lowercase())
                && looks_like_code(secret, false);
            let word = secret.chars().all(|c| c.is_ascii_alphabetic()) && !random_letters(secret);
            !(short_bare || code || word)
        }
        // Checked once for the whole text by `apply_rule`.
        Check::Keyword(_) => true,
        Check::Assignment => {
            // Shorter than 8 characters (1 after a password word), or the second colon of a
            // `token::tests` path (the operator `:` right before a value that starts with `:`;
            // `TOKEN=:x…` and `password: :x…` are secrets). The assignment shape in
            // `Shape::follows` turns down `::` on the same grounds: keep the two in step.
            let keyword = caps.get(0).map_or(&b""[..], |w| w.as_str().as_bytes());
            let starts = |w: &[u8]| {
                keyword
                    .get(..w.len())
                    .is_some_and(|k| k.eq_ignore_ascii_case(w))
            };
            let short = starts(b"passw") || starts(b"passphrase");
            let min = if short { 1 } else { 8 };
            if secret.chars().nth(min - 1).is_none()
                || (secret.starts_with(':') && text[..at].ends_with(':'))
                // The scheme's `:` of a URL (git's `Password for 'https://bob@host':`).
                || (secret.starts_with("//") && text[..at].ends_with(':'))
                || secret.contains("://")
                || !secret.chars().any(char::is_alphanumeric)
            {
                return false;
            }
            // The whole name (`token_type`, `secret_name`, `tokenizer`) must name a secret.
            let whole = caps.get(0).expect("group 0");
            let name_byte = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-');
            let name_start = whole.start()
                - text[..whole.start()]
                    .bytes()
                    .rev()
                    .take_while(name_byte)
                    .count();
            let name_len = whole.as_str().bytes().take_while(name_byte).count();
            let name = &text[name_start..whole.start() + name_len];
            if secret_name(name.rsplit('.').next().unwrap_or(name)).is_none() {
                return false;
            }
            let quoted = text[..at].ends_with(['"', '\'']);
            // In code, a bare name ends at a `,`, `;`, `)` or `{` (`let token =
            // NoKxGroupsInCommon;`, `fn f(token: AsyncIoStdAsTokio) {}`): letters alone there are
            // a name, however they read ([`random_letters`]).
            let bare_name = !quoted
                && secret.bytes().all(|b| b.is_ascii_alphabetic())
                && text[at + secret.len()..].starts_with([',', ';', ')', '{']);
            !bare_name && !looks_like_code(secret.trim_end_matches('.'), quoted)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A title keeps the prompt's lines apart until it is redacted: a secret on a line of its
    /// own is redacted there as in the message, and the title comes out as one line.
    #[test]
    fn a_title_is_redacted_line_by_line_then_joined() {
        let prompt = "deploy it\n  pass: hunter2xyz\n\nthanks";
        let title = memtrail_adapters::title_text(prompt, 80);
        assert_eq!(title, "deploy it\npass: hunter2xyz\nthanks");
        let shown = redact_title(&title);
        assert_eq!(shown, "deploy it pass: [redacted:secret_assignment] thanks");
        // Squashed before it was redacted, the line's rule found nothing.
        let squashed = memtrail_adapters::one_line(prompt, 80);
        assert_eq!(redact_title(&squashed), "deploy it pass: hunter2xyz thanks");
    }

    /// A token right after a `\n`, `\t` or `\r` escape written out in the text (a shell
    /// command, JSON text inside a tool output) or after a percent-encoded byte is redacted;
    /// one inside a word is not (`task-…` is not an OpenAI key).
    /// A value ending in `!` is a password, not a macro call; a macro call (`format!(…)`,
    /// `vec![…]`, `env!{…}`) after a secret's name stays code.
    #[test]
    fn a_word_ending_in_a_bang_is_not_a_macro_call() {
        assert_eq!(
            redact("Password: Summer2024!"),
            "Password: [redacted:secret_assignment]"
        );
        assert_eq!(
            redact("db_password = Winter!2025x"),
            "db_password = [redacted:secret_assignment]"
        );
        for code in [
            "password: format!(\"{}\", p)",
            "let password = env!(\"PASS\");",
            "password: vec![0u8; 32],",
        ] {
            assert_eq!(redact(code), code);
        }
    }

    /// A line written out as an escape (`\n` as two characters: JSON text in a tool output, a
    /// `printf` argument) is a line for the rules anchored at a line's start or end.
    #[test]
    fn lines_after_a_written_out_line_break() {
        assert_eq!(
            redact(r"printf 'ok\nDB_PASS=hunter2xyz\n'"),
            r"printf 'ok\nDB_PASS=[redacted:secret_assignment]\n'"
        );
        // Written out twice (JSON text in a JSON string).
        assert_eq!(
            redact(r#"echo "{\"a\":\"x\\nDB_PASS=Yq9secretval88\\n\"}""#),
            r#"echo "{\"a\":\"x\\nDB_PASS=[redacted:secret_assignment]\\n\"}""#
        );
        assert_eq!(
            redact(r#"{"output":"deploy\r\n  pass: Summer2024xyz\r\ndone"}"#),
            r#"{"output":"deploy\r\n  pass: [redacted:secret_assignment]\r\ndone"}"#
        );
        // Nothing secret: the text comes back as it was (borrowed).
        for text in [r"usage:\n  name: value\n", r"C:\\new\tdir", r"a\nb"] {
            assert!(matches!(redact(text), Cow::Borrowed(_)), "{text}");
        }
    }

    /// A secret's name and its value apart: a YAML block scalar, a name and value given as two
    /// fields (Kubernetes, `aws ssm`), JSON values that are not a string.
    #[test]
    fn names_and_values_given_apart() {
        let m = "[redacted:secret_assignment]";
        for (text, want) in [
            (
                "db:\n  password: |\n    Summer2024xyzq\n    second line\n\n  user: app\n",
                format!("db:\n  password: |\n    {m}\n    {m}\n\n  user: app\n"),
            ),
            (
                "env:\n  - name: DB_PASSWORD\n    value: s3cr3tvalue99\n  - name: LOG_LEVEL\n    value: debug\n",
                format!(
                    "env:\n  - name: DB_PASSWORD\n    value: {m}\n  - name: LOG_LEVEL\n    value: debug\n"
                ),
            ),
            (
                r#"[{"name":"DB_PASSWORD","value":"s3cr3tvalue99"},{"name":"PORT","value":"8080"}]"#,
                format!(
                    r#"[{{"name":"DB_PASSWORD","value":"{m}"}},{{"name":"PORT","value":"8080"}}]"#
                ),
            ),
            (
                r#"{"Parameter": {"Name": "/prod/db/password", "Type": "SecureString", "Value": "xyzSecret123"}}"#,
                format!(
                    r#"{{"Parameter": {{"Name": "/prod/db/password", "Type": "SecureString", "Value": "{m}"}}}}"#
                ),
            ),
            (
                r#"{"password": 12345678}"#,
                format!(r#"{{"password": {m}}}"#),
            ),
            (
                r#"{"api_key": ["abc123def456ghi"]}"#,
                format!(r#"{{"api_key": ["{m}"]}}"#),
            ),
            (
                r#"{"secret": {"value": "abc123def456ghi"}}"#,
                format!(r#"{{"secret": {{"value": "{m}"}}}}"#),
            ),
        ] {
            assert_eq!(redact(text), want, "{text}");
        }
        // Settings named like secrets, values that are not secrets.
        for text in [
            r#"{"password_min_length": 8, "max_tokens": 4096, "token_count": 12345}"#,
            "description: |\n  The password is required.\n",
            "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef: {name: db}\n",
            r#"{"name": "api_key", "value": "${API_KEY}"}"#,
            r#"{"secrets": ["db", "cache"]}"#,
        ] {
            assert_eq!(redact(text), text);
        }
    }

    #[test]
    fn tokens_after_an_escape_or_a_percent_encoded_byte() {
        let ghp = format!("ghp_{}", "a1B2".repeat(9));
        let sk = format!("sk-proj-{}", "Xy9_".repeat(6));
        let aws = "AKIAABCDEFGHIJKLMNOP";
        for (text, secret) in [
            (format!("printf 'first\\n{ghp}'"), ghp.as_str()),
            (format!(r#"{{"log":"boot\n{sk}"}}"#), sk.as_str()),
            (format!("a\\t{aws}"), aws),
            (format!("https://x/?token%3D{ghp}%26"), ghp.as_str()),
            (format!("Bearer%20{sk}"), sk.as_str()),
            (format!("{ghp} then {ghp}"), ghp.as_str()),
        ] {
            let out = redact(&text);
            assert!(!out.contains(secret), "{text} -> {out}");
            assert!(out.contains("[redacted:"), "{out}");
        }
        // Inside a word: not a token.
        let word = format!("task-{}", "a".repeat(40));
        assert_eq!(redact(&word), word.as_str());
        // What comes before the token stays.
        assert_eq!(
            redact(&format!("x\\n{ghp} y")),
            "x\\n[redacted:github_token] y"
        );
    }

    /// Each of `cases` redacted to what it pairs with, and each of `kept` left as it is.
    fn assert_redaction<T: AsRef<str>, U: AsRef<str>>(cases: &[(T, U)], kept: &[&str]) {
        for (text, want) in cases {
            let text = text.as_ref();
            assert_eq!(redact(text), want.as_ref(), "{text:?}");
        }
        for text in kept {
            assert_eq!(redact(text), *text, "{text:?}");
        }
    }

    /// A title an older memtrail squashed from a prompt before redacting it keeps what only the
    /// prompt's lines showed as secrets (`pass: …` on a line of its own): repaired against the
    /// prompt as stored, whose markers stand for the title's text.
    #[test]
    fn titles_are_redacted_as_their_prompt() {
        let one_line = memtrail_adapters::one_line;
        let m = "[redacted:secret_assignment]";
        for (prompt, title) in [
            (
                "deploy it\npass: hunter2xyz\nthanks",
                format!("deploy it pass: {m} thanks"),
            ),
            (
                "Use these:\n  db_pass: letmein\n  host: db\n",
                format!("Use these: db_pass: {m} host: db"),
            ),
            (
                "see <private>a b c</private> here\npass: zz",
                format!("see [private] here pass: {m}"),
            ),
        ] {
            let stored = redact(prompt);
            let squashed = one_line(prompt, 80);
            let got = title_from_prompt(&squashed, &stored);
            assert_eq!(got.as_deref(), Some(title.as_str()), "{prompt:?}");
            // Repaired, it stays.
            assert_eq!(title_from_prompt(&title, &stored), None);
        }
        // Cut inside the secret, or inside the text after it: the marker, then the cut.
        let prompt = "deploy it\npass: hunter2xyzhunter2xyz\nthanks";
        let stored = redact(prompt);
        for len in [22, 40] {
            let cut = one_line(prompt, len);
            assert_eq!(
                title_from_prompt(&cut, &stored),
                Some(format!("deploy it pass: {m}…")),
                "{cut}"
            );
        }
        // Cut before it: nothing to replace.
        assert_eq!(title_from_prompt(&one_line(prompt, 10), &stored), None);
        // A title that is not the prompt's (an agent's own), or a prompt without a marker.
        assert_eq!(title_from_prompt("Deploy the app", &stored), None);
        // One that only ends like it: the words the marker would stand for are no secret
        // there (found by the attack review).
        let token = redact("ghp_R7mQ2xK9vL4nB8wT3yH6jD1fG5sA0cZ2pE9u fix the build");
        assert!(token.starts_with("[redacted:github_token]"), "{token}");
        assert_eq!(title_from_prompt("Deploy and fix the build", &token), None);
        assert_eq!(
            title_from_prompt(
                "ghp_R7mQ2xK9vL4nB8wT3yH6jD1fG5sA0cZ2pE9u fix the build",
                &token
            ),
            Some(token.clone().into_owned())
        );
        assert_eq!(title_from_prompt("deploy it pass:", &stored), None);
        assert_eq!(title_from_prompt("deploy it", "deploy it"), None);
        // A prompt that is all private: no text of its own to tell it is the title's.
        assert_eq!(
            title_from_prompt("Fix the login bug", &redact("<private>fix it</private>")),
            None
        );
    }

    /// Ways of writing a password that the assignment rules did not read: named for someone
    /// (`Password for bob: X`), alone on the next line, right after a short password word
    /// (`pass:X`); with the phrasings they already read, and what must stay (prose, code,
    /// placeholders).
    #[test]
    fn password_phrasings() {
        let m = "[redacted:secret_assignment]";
        assert_redaction(
            &[
                ("my password: Xq7hunter", format!("my password: {m}")),
                ("the db password: hunter2", format!("the db password: {m}")),
                (
                    "password: hunter2 and more words after",
                    format!("password: {m} and more words after"),
                ),
                ("Password:\n  hunter2", format!("Password:\n  {m}")),
                (
                    "DB_PASSWORD:\r\n    Xq7hunterzz\r\nnext",
                    format!("DB_PASSWORD:\r\n    {m}\r\nnext"),
                ),
                ("pass:hunter2", format!("pass:{m}")),
                (
                    "login with user:bob pass:Xq7hunter",
                    format!("login with user:bob pass:{m}"),
                ),
                ("ssh in, pw=hunter2 then", format!("ssh in, pw={m} then")),
                (
                    "Password for bob: hunter2",
                    format!("Password for bob: {m}"),
                ),
                (
                    "the password for the admin user = Xq7hunter!",
                    format!("the password for the admin user = {m}"),
                ),
            ],
            &[
                "the password field must be at least 8 characters",
                "password: (see vault)",
                "Password: ********",
                "password: ${DB_PASSWORD}",
                "password = os.environ[\"X\"]",
                "let password: String = read()",
                "Password:\n  ********",
                "Password:\n  ${DB_PASSWORD}",
                "Password:\nThe one you chose at signup.",
                "password_hint:\n  blue2",
                "if ok: pass",
                "login(user=user, pw=pw)",
                "pass:true and pass:$PASS",
                "bypass:hunter2",
                "Password for bob: see the wiki",
                // git's prompt, quoted in its errors: the `:` of the URL's scheme.
                "fatal: could not read Password for 'https://bob@github.com': terminal prompts disabled",
                "Password for 'https://alice@dev.azure.com':",
                "the password for this account must be 8 characters",
                // Test runners' counts, and Go's `:=` (found by the attack review).
                "summary pass:120 fail:3",
                "Test results -> pass:41/41",
                "const r={pass:12,fail:0};",
                "status=pass:3/3 coverage pass:87.5%",
                "pw:=getpw()",
            ],
        );
    }

    /// Quotes written out as escapes (`DB_PASS=\"x\"`: JSON text), a written-out tab before a
    /// line or a name (`\n\tpass: x`, `a\tDB_PASS=x`), and `salt` and `dsn` names on `.env`
    /// and configuration lines (they name secrets, see [`secret_name`]).
    #[test]
    fn escaped_quotes_tabs_salts_and_dsns() {
        let m = "[redacted:secret_assignment]";
        assert_redaction(
            &[
                (
                    r#"echo "DB_PASS=\"hunter2xyz\"""#.to_string(),
                    format!(r#"echo "DB_PASS={m}""#),
                ),
                (
                    r#"{"out":"DB_PASS=\"hunter2xyz\""}"#.to_string(),
                    format!(r#"{{"out":"DB_PASS={m}"}}"#),
                ),
                (
                    r"printf 'a\tDB_PASS=hunter2xyz'".to_string(),
                    format!(r"printf 'a\tDB_PASS={m}'"),
                ),
                (
                    r#"{"out":"[db]\n\tpass: hunter2\n"}"#.to_string(),
                    format!(r#"{{"out":"[db]\n\tpass: {m}\n"}}"#),
                ),
                // A quote escaped inside the value (found by the attack review: `cd"` was left;
                // the value read to its closing quote, which stays).
                (
                    r#"DB_PASSWORD="ab\"cd9x""#.to_string(),
                    format!(r#"DB_PASSWORD="{m}""#),
                ),
                (
                    "SENTRY_DSN_X=Server=db;Uid=sa;Pwd=Hunter2xyz;".to_string(),
                    "SENTRY_DSN_X=Server=db;Uid=sa;Pwd=[redacted:connection_string_password];"
                        .to_string(),
                ),
                ("APP_SALT=Zx9abcdefgh".to_string(), format!("APP_SALT={m}")),
                (
                    "app_salt: Zx9abcdefgh".to_string(),
                    format!("app_salt: {m}"),
                ),
                (
                    "DATABASE_DSN=app:hunter2@tcp(db:3306)/app".to_string(),
                    "DATABASE_DSN=app:[redacted:url_password]@tcp(db:3306)/app".to_string(),
                ),
                // A URL's password is the URL rule's: the user and host stay.
                (
                    "DATABASE_DSN=postgres://u:hunter2@h/db".to_string(),
                    "DATABASE_DSN=postgres://u:[redacted:url_password]@h/db".to_string(),
                ),
            ],
            &[
                r#"{"out":"DB_PASS=\"${DB_PASS}\""}"#,
                r#"DB_PASS=\"\""#,
                r#"{"code":"func f() {\n\tpassword := os.Getenv(\"DB_PASSWORD\")\n}"}"#,
                r"a\tb\tkey: value",
                "SALT_ROUNDS=10",
                "salt_length: 16",
                "DSN=MyDataSource",
                "DSN=mydsn",
                "odbc_dsn: warehouse_prod",
                "SENTRY_DSN=https://abc@o1.ingest.sentry.io/1",
            ],
        );
    }

    /// A JSON value (a tool's input) under a secret's name that is not a string, a name and
    /// value pair, and an object's keys under a secret's name, judged joined to it.
    #[test]
    fn json_values_under_a_secrets_name() {
        let m = "[redacted:secret_assignment]";
        let mut v = serde_json::json!({
            "password": 12345678,
            "pin_password": 12,
            "api_key": ["abc123def456", "x"],
            "secret": {"value": "Zx9abcdefgh", "name": "db"},
            "credentials": {"username": "alice.smith", "password": "hunter2"},
            "token": {"access": "Zx9abcdefgh12", "type": "bearer"},
            "password_min_length": 8,
            "MAX_TOKENS": 4096,
            "env": [{"name": "DB_PASSWORD", "value": "s3cr3t"}, {"name": "PORT", "value": 8080}],
            "Parameter": {"Name": "/prod/db/password", "Type": "SecureString", "Value": "xyz12"},
            "setting": {"name": "api_key", "value": "required"}
        });
        redact_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({
                "password": m,
                "pin_password": 12,
                "api_key": [m, "x"],
                "secret": {"value": m, "name": "db"},
                "credentials": {"username": "alice.smith", "password": m},
                "token": {"access": m, "type": "bearer"},
                "password_min_length": 8,
                "MAX_TOKENS": 4096,
                "env": [{"name": "DB_PASSWORD", "value": m}, {"name": "PORT", "value": 8080}],
                "Parameter": {"Name": "/prod/db/password", "Type": "SecureString", "Value": m},
                "setting": {"name": "api_key", "value": "required"}
            })
        );
        // The same in JSON text: an object's keys joined to the secret's name.
        assert_redaction(
            &[
                (
                    r#"{"credentials": {"username": "alice.smith", "password": "hunter2xyz"}}"#,
                    format!(
                        r#"{{"credentials": {{"username": "alice.smith", "password": "{m}"}}}}"#
                    ),
                ),
                (
                    r#"{"token": {"access": "Zx9abcdefgh12", "type": "Bearer"}}"#,
                    format!(r#"{{"token": {{"access": "{m}", "type": "Bearer"}}}}"#),
                ),
            ],
            // A password policy's settings (found by the attack review).
            &[
                r#"{"password":{"maxAgeDays":9000}}"#,
                "PASSWORD_EXPIRY_DAYS=9000",
                "password_max_attempts: 12345",
            ],
        );
    }

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
            // Key names, config lines and headers.
            "DB_PASS",
            "ADMIN_PW",
            "APP_KEY",
            "sort_key",
            "auth",
            "CREDENTIALS",
            "export ",
            "- ",
            "letmein",
            "hunter2",
            "Token",
            "&pw",
            "X-API-Key",
            "Set-Cookie",
            "a=b",
            "authorization",
            "Basic ",
            "mysql -p",
            "sshpass -p",
            "curl -u ",
            "curl --user ",
            "docker login -p ",
            "redis-cli -a ",
            "ldapsearch -w ",
            "smbclient -U me%",
            "htpasswd -nb ",
            "a1b2c3d4e5f6a7b8c9d0:",
            " -b ",
            "machine",
            "\"auth\"",
            "client-key-data",
            ":5432:",
            "_auth",
            "?sig=",
            "discord",
            "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
            ":AAxD6zRvpksfZ3zWLOTmxvwfqmufUUzLlt",
            "0123456789abcdef0123456789abcdef",
            "pass:",
            "pw=",
            "password for bob",
            "Password:\n",
            "\\\"",
            "APP_SALT",
            "DSN",
            // SQL statements, pipes into sudo and passwd, Markdown table rows.
            "CREATE USER a ",
            "alter role",
            " PASSWORD ",
            "identified by ",
            "IDENTIFIED WITH p BY ",
            "echo x ",
            "| sudo -S",
            "sudo -u r ",
            "| passwd",
            "| chpasswd",
            "|",
            "| pw |",
            "| **Password** | ",
            " |\n",
            "`",
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
        for (i, def) in RULES.iter().enumerate() {
            for n in def.needles {
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
            for_each_needle(t.as_bytes(), |rule, _, end| got.push((rule, end)));
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, want, "text {t:?}");
            found += want.len();
        }
        assert!(found > 20_000, "{found} needles found");
    }

    /// A needle with a run longer than [`SHAPE_SCAN`] after it (or, for a key name, before it,
    /// or a line longer than that) is plausible: the check stops reading there and the rule's
    /// regex decides. Before, each needle read to the end of its run, so a 1 MB line of
    /// `tokentoken…` or `://a:://a:…` took minutes (quadratic). What the rules then make of
    /// such text is unchanged: nothing in it is a secret.
    #[test]
    fn shape_checks_read_a_bounded_run() {
        let long = "a".repeat(SHAPE_SCAN);
        let t = format!("token{long}");
        assert!(Shape::Assignment.follows(t.as_bytes(), 0, 5));
        let t = format!("://a:{long}");
        assert!(Shape::UrlPassword.follows(t.as_bytes(), 0, 3));
        let t = format!("{long}DB_PASS x");
        let at = long.len();
        assert!(Shape::Keyed.follows(t.as_bytes(), at, at + 4));
        let t = format!("DB_PASS: {long},");
        assert!(Shape::Keyed.follows(t.as_bytes(), 3, 7));
        // Within the bound the checks read as before.
        assert!(!Shape::Assignment.follows(b"tokenizer", 0, 5));
        assert!(!Shape::UrlPassword.follows(b"://a:b", 0, 3));
        for unit in ["token", "://a:", "DB_PASS", "api_key", "pw", "x-api-key"] {
            let text = unit.repeat(4096 / unit.len());
            assert_eq!(redact(&text), text, "{unit}");
        }
    }

    /// A rule that needs a keyword somewhere in the text (`discord`) redacts every match when
    /// the keyword is there, wherever it is, and none when it is not; the keyword is looked for
    /// once per text, not once per match (before: 3,000 token-shaped words then `discord`,
    /// 189 KB, took 25.6 s in a debug build; now milliseconds).
    #[test]
    fn keyword_rules_read_the_text_once() {
        let tok = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GaBcDe.abcdefghijklmnopqrstuvwxyz0123";
        let text = format!("{}discord", format!("{tok} ").repeat(3_000));
        let want = format!("{}discord", "[redacted:discord_token] ".repeat(3_000));
        assert_eq!(redact(&text), want);
        let without = format!("{tok} ").repeat(3_000);
        assert_eq!(redact(&without), without);
    }

    #[test]
    fn shape_checks_turn_down_what_cannot_match() {
        // Common words of code and prose: no rule compiled or run.
        for text in [
            "the token expired; refresh the tokens",
            "see https://github.com/org/repo/pull/12 and http://localhost:8080/x",
            "a secret of the trade",
            "test token::tests::parses_value ... ok",
            "let token = short;",
            "    token: Token,\n    let key = map.key(); fn f(password: &str)",
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
            "https://Zq3xT9vLm2Np8Rw4Ks6H7y@github.com/o/r",
            "npm_0123456789abcdefghij0123456789abcdef",
        ] {
            assert_ne!(rules_plausible(text), 0, "{text}");
        }
    }

    /// The rules of command-line passwords are compiled only for a line that holds one of their
    /// flags after the command: the words alone, common in test output and prose, compile none.
    #[test]
    fn command_rules_need_their_flag_on_the_line() {
        for text in [
            "test docker::tests::now_volume ... ok",
            "curl -sS https://example.com/api -o out.json",
            "redis-cli ping\n-a is a flag of ls",
            "docker compose up -d\nthen -p 8080",
            "mysql --version; ldapsearch --help",
        ] {
            assert_eq!(rules_plausible(text), 0, "{text}");
        }
        for (text, kind) in [
            ("docker login -u me -p x", "cli_secret"),
            ("curl -s -X POST --user=a:b u", "cli_secret"),
            ("mysql -u root -pX", "cli_secret"),
            ("redis-cli -h r -a pw", "cli_secret"),
        ] {
            let set = rules_plausible(text);
            assert!(
                (0..RULES.len()).any(|i| set & (1 << i) != 0 && RULES[i].kind == kind),
                "{text}"
            );
        }
    }

    /// A PostgreSQL role's password (`CREATE USER … PASSWORD 'X'`, `ALTER ROLE`, `ENCRYPTED`,
    /// lower case, `VALID UNTIL` after it, the statement over lines): the literal's inside,
    /// the quotes kept. Found by a security review; what stays has no literal or no statement.
    #[test]
    fn sql_role_passwords() {
        let m = "[redacted:sql_password]";
        assert_redaction(
            &[
                // The clause at a line's start (a migration's shape; third review).
                (
                    "CREATE USER app WITH\nPASSWORD 'Vq08Zk7Lm9';",
                    format!("CREATE USER app WITH\nPASSWORD '{m}';"),
                ),
                (
                    r#"psql -c "CREATE USER app WITH PASSWORD 'Vq08Zk7Lm9Pw4Rt';""#,
                    format!(r#"psql -c "CREATE USER app WITH PASSWORD '{m}';""#),
                ),
                (
                    "ALTER ROLE x PASSWORD 'Vq08Zk7Lm9Pw4Ru'",
                    format!("ALTER ROLE x PASSWORD '{m}'"),
                ),
                (
                    "ALTER ROLE app WITH LOGIN ENCRYPTED PASSWORD 'md5a1b2c3';",
                    format!("ALTER ROLE app WITH LOGIN ENCRYPTED PASSWORD '{m}';"),
                ),
                (
                    "alter user app with password 'it''s Vq8 secret';",
                    format!("alter user app with password '{m}';"),
                ),
                (
                    "CREATE USER app PASSWORD 'Vq08Zk7' VALID UNTIL '2026-01-01';",
                    format!("CREATE USER app PASSWORD '{m}' VALID UNTIL '2026-01-01';"),
                ),
                (
                    "CREATE ROLE app WITH\n  LOGIN\n  PASSWORD 'Vq08Zk7Lm';\nGRANT x TO app;",
                    format!("CREATE ROLE app WITH\n  LOGIN\n  PASSWORD '{m}';\nGRANT x TO app;"),
                ),
                (
                    r#"{"command":"psql -c \"CREATE ROLE r LOGIN PASSWORD 'hunter2'\""}"#,
                    format!(r#"{{"command":"psql -c \"CREATE ROLE r LOGIN PASSWORD '{m}'\""}}"#),
                ),
            ],
            &[
                // A line of blanks between, a question's end (third review).
                "## Create user\n \nPick a password 'str0ng!x' here.",
                "Need to create user accounts? Use a strong password 'abc12345!' or similar.",
                // A heading, a paragraph, a sentence's end between the words (second review).
                "## Create user\n\nOpen the admin page and pick a password 'strong' enough.",
                "You can create user accounts from the console. Remember: the password 'must' be rotated.",
                "ALTER ROLE app PASSWORD NULL;",
                "CREATE USER app WITH PASSWORD '';",
                "ALTER USER app WITH PASSWORD $1",
                "ALTER USER app PASSWORD :'pw';",
                "run_sql(\"ALTER USER app WITH PASSWORD %s\", (pw,))",
                "ALTER ROLE app PASSWORD ?",
                "ALTER ROLE app PASSWORD '${DB_PASSWORD}'",
                "CREATE USER app WITH PASSWORD '<password>';",
                "Create user accounts, then set the password in the UI.",
                "ALTER USER app SET search_path = x; -- the password 'stays' here",
                r#"sql = "CREATE USER " + u + " WITH PASSWORD '" + pw + "'";"#,
                "q = 'ALTER ROLE app PASSWORD ' + quote(pw)",
            ],
        );
    }

    /// MySQL's and MariaDB's `IDENTIFIED BY 'X'` (`CREATE USER`, `ALTER USER`, `GRANT`, a
    /// plugin named with `WITH`), MySQL 5's `IDENTIFIED BY PASSWORD '*hash'` (a hash that
    /// cracks: redacted too), Oracle's unquoted `IDENTIFIED BY X` after `CREATE USER NAME`.
    #[test]
    fn sql_identified_by() {
        let m = "[redacted:sql_password]";
        assert_redaction(
            &[
                // The clause at a line's start, a list of users, a backslash in the value
                // (third review).
                (
                    "GRANT ALL PRIVILEGES ON app.* TO 'app'@'%'\nIDENTIFIED BY 'Vq08Zk7Lm9';",
                    format!("GRANT ALL PRIVILEGES ON app.* TO 'app'@'%'\nIDENTIFIED BY '{m}';"),
                ),
                (
                    "CREATE USER IF NOT EXISTS 'app'@'%'\nIDENTIFIED BY 'Vq08Zk7Lm9';",
                    format!("CREATE USER IF NOT EXISTS 'app'@'%'\nIDENTIFIED BY '{m}';"),
                ),
                (
                    "CREATE USER 'a'@'%' IDENTIFIED BY 'Vq08Zk7Lm9a', 'b'@'%' IDENTIFIED BY 'Vq08Zk7Lm9b';",
                    format!(
                        "CREATE USER 'a'@'%' IDENTIFIED BY '{m}', 'b'@'%' IDENTIFIED BY '{m}';"
                    ),
                ),
                (
                    r#"ALTER USER 'a'@'%' IDENTIFIED BY "Vq08\Zk7Lm9";"#,
                    format!(r#"ALTER USER 'a'@'%' IDENTIFIED BY "{m}";"#),
                ),
                (
                    r"ALTER USER 'a'@'%' IDENTIFIED BY 'pass\\';",
                    format!("ALTER USER 'a'@'%' IDENTIFIED BY '{m}';"),
                ),
                (
                    r#"mysql -e "ALTER USER 'app'@'%' IDENTIFIED BY 'Vq09Zk7Lm9Pw4Rt'""#,
                    format!(r#"mysql -e "ALTER USER 'app'@'%' IDENTIFIED BY '{m}'""#),
                ),
                (
                    r#"CREATE USER IF NOT EXISTS 'u'@'localhost' IDENTIFIED BY "Vq09Zk7";"#,
                    format!(r#"CREATE USER IF NOT EXISTS 'u'@'localhost' IDENTIFIED BY "{m}";"#),
                ),
                (
                    "ALTER USER 'root'@'localhost' IDENTIFIED WITH mysql_native_password BY 'Vq09Zk'",
                    format!(
                        "ALTER USER 'root'@'localhost' IDENTIFIED WITH mysql_native_password BY '{m}'"
                    ),
                ),
                (
                    "GRANT ALL ON app.* TO 'app'@'%' identified by 'hunter2';",
                    format!("GRANT ALL ON app.* TO 'app'@'%' identified by '{m}';"),
                ),
                (
                    "CREATE USER scott IDENTIFIED BY tiger;",
                    format!("CREATE USER scott IDENTIFIED BY {m};"),
                ),
                (
                    "ALTER USER scott IDENTIFIED BY Vq09Zk7 REPLACE old;",
                    format!("ALTER USER scott IDENTIFIED BY {m} REPLACE old;"),
                ),
                (
                    "GRANT USAGE ON *.* TO 'a'@'%' IDENTIFIED BY PASSWORD '*6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9'",
                    format!("GRANT USAGE ON *.* TO 'a'@'%' IDENTIFIED BY PASSWORD '{m}'"),
                ),
                (
                    "CREATE USER 'a'@'%' IDENTIFIED BY PASSWORD '*6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9';",
                    format!("CREATE USER 'a'@'%' IDENTIFIED BY PASSWORD '{m}';"),
                ),
                // Found by the second review: the double quotes escaped for the shell (only a
                // `\` was redacted) and MySQL's `\'` inside the literal (its tail was kept).
                (
                    r#"mysql -e "CREATE USER 'app'@'%' IDENTIFIED BY \"Vq08Zk7Lm9\"""#,
                    format!(r#"mysql -e "CREATE USER 'app'@'%' IDENTIFIED BY \"{m}\"""#),
                ),
                (
                    r"ALTER USER 'a'@'%' IDENTIFIED BY 'Vq08\'Zk7Lm9Pw4Rt';",
                    format!("ALTER USER 'a'@'%' IDENTIFIED BY '{m}';"),
                ),
            ],
            &[
                // `grant` as an English word (third review).
                r#"Admins grant access to users identified by "email_addr" and "tenant"."#,
                "We grant each role to accounts identified by 'uid:42'.",
                r#"The grant is identified by "GR-2024-17" in the ledger."#,
                r#"Grant was identified by "Dr. Smith" as a candidate."#,
                "GRANT USAGE ON db.* TO 'app'@'%'\nThen rows are identified by \"row_id2\".",
                // Prose: no `CREATE USER`, `ALTER USER` or `GRANT` before it (second review).
                r#"Rows are identified by "id" and "tenant"."#,
                r#"the bug identified by "E0425" in rustc"#,
                "Each package is identified by 'name@version'.",
                r#"The session is identified by "session_id": 42"#,
                "CREATE USER 'app'@'localhost' IDENTIFIED WITH auth_socket;",
                "ALTER USER 'app'@'%' IDENTIFIED BY '%s'",
                "CREATE USER scott IDENTIFIED BY :pw;",
                "CREATE USER scott IDENTIFIED BY &pw;",
                "ALTER USER scott IDENTIFIED BY ?",
                "CREATE USER scott IDENTIFIED BY $1",
                "CREATE USER scott IDENTIFIED EXTERNALLY;",
                r#"stmt = "ALTER USER 'app'@'%' IDENTIFIED BY '" + pw + "'""#,
                "Each package is identified by its name and version.",
                "users are identified by their email, and create user rows",
            ],
        );
    }

    /// A password piped to `sudo -S` (`--stdin`, after sudo's own flags), to `passwd`
    /// (`--stdin`), and `user:X` piped to `chpasswd` (the user stays), by `echo` or `printf
    /// '%s\n'`; the `--password-stdin` form of the same rule still works.
    #[test]
    fn passwords_piped_to_sudo_passwd_and_chpasswd() {
        let m = "[redacted:cli_secret]";
        assert_redaction(
            &[
                (
                    "echo 'Vq10Zk7Lm9' | sudo -nS apt-get update",
                    format!("echo {m} | sudo -nS apt-get update"),
                ),
                // `-S` in a bundle of sudo's flags (second review).
                (
                    "echo 'Vq10Zk7Lm9' | sudo -kS apt-get update",
                    format!("echo {m} | sudo -kS apt-get update"),
                ),
                (
                    "echo Vq10Zk7Lm9 | sudo -HS -u app true",
                    format!("echo {m} | sudo -HS -u app true"),
                ),
                (
                    "echo 'Vq10Zk7Lm9Pw4Rt' | sudo -S apt-get update",
                    format!("echo {m} | sudo -S apt-get update"),
                ),
                (
                    r"printf '%s\n' Vq10Zk7 | sudo -S -k systemctl restart x",
                    format!(r"printf '%s\n' {m} | sudo -S -k systemctl restart x"),
                ),
                (
                    "echo Vq10Zk7 | sudo --stdin ls /root",
                    format!("echo {m} | sudo --stdin ls /root"),
                ),
                (
                    "echo \"hunter2\" | sudo -u postgres -S psql",
                    format!("echo {m} | sudo -u postgres -S psql"),
                ),
                (
                    "echo -n Vq10 | sudo -Sk true\nls",
                    format!("echo -n {m} | sudo -Sk true\nls"),
                ),
                (
                    "echo 'deploy:Vq10Zk7' | chpasswd",
                    format!("echo 'deploy:{m}' | chpasswd"),
                ),
                (
                    "echo root:Vq10Zk7 | sudo chpasswd && id",
                    format!("echo root:{m} | sudo chpasswd && id"),
                ),
                (
                    "echo Vq10Zk7 | passwd --stdin bob",
                    format!("echo {m} | passwd --stdin bob"),
                ),
                (
                    r#"echo -e "Vq10Zk7\nVq10Zk7" | sudo passwd app"#,
                    format!("echo -e {m} | sudo passwd app"),
                ),
                (
                    "echo 'S3cr3tPassw0rd' | docker login -u me --password-stdin",
                    format!("echo {m} | docker login -u me --password-stdin"),
                ),
            ],
            &[
                "echo \"$SUDO_PASSWORD\" | sudo -S apt-get update",
                "echo y | sudo pacman -S vim",
                "echo y | sudo -E pacman -S vim",
                "echo hello | sudo tee /etc/motd",
                "echo \"root:$ROOT_PW\" | chpasswd",
                "echo 'x' | git hash-object --stdin",
                "grep app /etc/passwd | cut -d: -f1",
                "echo done | passwd_check",
            ],
        );
    }

    /// A Markdown table row with a secret's name in its first cell and a value in its
    /// second, the value judged as a password in a sentence (see [`Check::Prose`]).
    #[test]
    fn markdown_table_rows_naming_a_secret() {
        let m = "[redacted:secret_assignment]";
        assert_redaction(
            &[
                // A column whose header names the password (`| User | Password |`): each row's
                // cell under it (third review: the most common credentials table).
                (
                    "| User | Password | Role |\n|---|:---:|---|\n| admin | Vq07Zk7Lm9Pw4Rt | owner |\n| bob | `hunter2!` | viewer |\n\nDone."
                        .to_string(),
                    format!(
                        "| User | Password | Role |\n|---|:---:|---|\n| admin | {m} | owner |\n| bob | `{m}` | viewer |\n\nDone."
                    ),
                ),
                // Names of credentials the first version passed over (third review).
                (
                    "| PGPASSWORD | Vq08Zk7Lm9 |".to_string(),
                    format!("| PGPASSWORD | {m} |"),
                ),
                (
                    "| jwt_secret | Vq08Zk7Lm9Pw4Rt |".to_string(),
                    format!("| jwt_secret | {m} |"),
                ),
                (
                    "| Bot token | Vq08Zk7Lm9Pw4Rt |".to_string(),
                    format!("| Bot token | {m} |"),
                ),
                (
                    "| Signing key | Vq08Zk7Lm9Pw4Rt |".to_string(),
                    format!("| Signing key | {m} |"),
                ),
                (
                    "| password | Vq07Zk7Lm9Pw4Rt |".to_string(),
                    format!("| password | {m} |"),
                ),
                (
                    "| Field | Value |\n|---|---|\n| User | admin |\n| Password | `Vq07Zk7` |\n"
                        .to_string(),
                    format!(
                        "| Field | Value |\n|---|---|\n| User | admin |\n| Password | `{m}` |\n"
                    ),
                ),
                (
                    "  | DB_PASSWORD | hunter2 | set in CI |".to_string(),
                    format!("  | DB_PASSWORD | {m} | set in CI |"),
                ),
                (
                    "| `DB_PASSWORD` | `hunter2x` | required |".to_string(),
                    format!("| `DB_PASSWORD` | `{m}` | required |"),
                ),
                (
                    "| **API key** | abcd1234efgh5678 |".to_string(),
                    format!("| **API key** | {m} |"),
                ),
                (
                    r#"{"text":"| user | bob |\n| pass | Vq07!x |\n"}"#.to_string(),
                    format!(r#"{{"text":"| user | bob |\n| pass | {m} |\n"}}"#),
                ),
            ],
            &[
                "| Username | Password |\n|---|---|\n| admin | required |\n| bob | none |",
                "| Setting | Password policy |\n|---|---|\n| length | Vq07Zk7!x |",
                // A name that is a column of rates, types or paths as often as of values
                // (second review).
                "| Token | 50/min |",
                "| Token budget | 8k/16k |",
                "| Token | UUIDv4 |",
                "| Secret | secret-name-123 |",
                "| Secrets | k8s/secrets.yaml |",
                "| Password | Description |\n|----------|-------------|",
                "| password | required |",
                "| password | string | The user's password |",
                "| `DB_PASSWORD` | Database password | none |",
                "| token | JWT |",
                "| password_hash | bcrypt |",
                "| Password hashing | Argon2id |",
                "| PASS | 120/120 |",
                "| api_key | `${API_KEY}` |",
                "| secret_key | auto-generated |",
                "| password | v1.2.3 |",
                "| name | Vq07Zk7Lm9Pw4Rt |",
            ],
        );
    }

    /// Found by a review of the `Flag` shapes: `az login` with other blanks than one space
    /// between (the needle was `az login`), and a password quoted after `zip -P` (`7z -p`,
    /// `openssl enc -k`) that holds another of its rule's commands: replaced whole, as one
    /// leftmost match (when the rule was split in two, each half saw the other's marker and
    /// left the rest of the password).
    #[test]
    fn command_rules_found_by_review() {
        for (text, want) in [
            (
                "docker ps\naz\tlogin -u app -p S3cretPw",
                "docker ps\naz\tlogin -u app -p [redacted:cli_secret]",
            ),
            (
                "az  login -u app -p S3cretPw2\ncurl https://example.com",
                "az  login -u app -p [redacted:cli_secret]\ncurl https://example.com",
            ),
            ("az\tlogin -p S3cr3t", "az\tlogin -p [redacted:cli_secret]"),
            (
                "7z a -p\"abc -keypass def\" o.7z",
                "7z a -p[redacted:cli_secret] o.7z",
            ),
            (
                "zip -P 'horse -storepass battery' a.zip",
                "zip -P [redacted:cli_secret] a.zip",
            ),
            (
                "openssl enc -k \"a -pass pass:b\"",
                "openssl enc -k [redacted:cli_secret]",
            ),
            (
                "keytool -genkey -storepass Kp4ssw0rd -alias a",
                "keytool -genkey -storepass [redacted:cli_secret] -alias a",
            ),
        ] {
            assert_eq!(redact(text), want, "{text:?}");
        }
    }

    /// A `Flag` shape turns down no text its rule would redact: random command lines (the
    /// rules' commands and flags, other words and flags, quotes, blanks, `|`, `;`, `&&`, line
    /// breaks), and for every rule with that shape, a match that changes the text implies the
    /// rule was found plausible.
    #[test]
    fn flag_shapes_turn_down_nothing_their_rule_redacts() {
        let mut rng = crate::test_rng::Xorshift(0x9E37_79B9_7F4A_7C15);
        // The high bits: xorshift64's low bits, taken modulo small counts in a row, left
        // combinations out (no `openssl enc … -k` among 40,000 texts).
        let pick =
            |rng: &mut crate::test_rng::Xorshift, n: usize| (rng.next_u64() >> 32) as usize % n;
        let pieces = [
            "curl",
            "docker",
            "podman",
            "az",
            "login",
            "redis-cli",
            "ldapsearch",
            "ldapwhoami",
            "smbclient",
            "mysql",
            "mariadb-dump",
            "sshpass",
            "CURL",
            "echo",
            "sudo",
            "| sudo",
            "-S",
            "--stdin",
            "-u",
            "-p",
            "-a",
            "-w",
            "-U",
            "--user",
            "--user=",
            "-x",
            "-h",
            "-s",
            "-X",
            "POST",
            "-e",
            "-P",
            "admin:",
            "ci:s3cr3tpw",
            "bob%SmbPw1",
            "Hx7pass",
            "'a b'",
            "\"q:w\"",
            "sk_test_4eC39HqLyjWDarjtT1zdp7dc:",
            "//h/s",
            "https://h/x",
            "$PW",
            "ok",
        ];
        let flags = [
            "-u",
            "-p",
            "-a",
            "-w",
            "-U",
            "--user",
            "--user=",
            "-x",
            "-P",
            "-k",
            "-K",
            "-storepass",
            "-keypass",
            "-passin pass:",
            "/user:b",
            "aws_secret_access_key",
            "-S",
            "-Sk",
            "--stdin",
        ];
        let values = [
            "admin:x",
            "ci:s3cr3tpw",
            "bob%SmbPw1",
            "Hx7pass",
            "'a b'",
            "sk_test_4eC39HqLyjWDarjtT1zdp7dc:",
            "a1b2c3d4e5f6a7b8c9d0: u",
            "$PW",
            "\"abc -keypass def\"",
            "'horse -storepass battery'",
            "\"a -pass pass:b\"",
        ];
        let commands = [
            "curl",
            "docker login",
            "podman login",
            "az login",
            "redis-cli",
            "ldapsearch",
            "ldapwhoami",
            "smbclient //h/s",
            "mysql",
            "mariadb-dump",
            "sshpass",
            "openssl enc",
            "zip",
            "unzip",
            "7z",
            "7za",
            "(sqlcmd",
            "bcp",
            "a.zip",
            "gzip",
            "az\tlogin",
            "az  login",
            "keytool -genkey",
            "net use x: //h/s",
            "aws configure set",
            "echo Hx7pass | sudo",
            "printf '%s\\n' 'a b' |\tsudo",
            "echo -n \"$PW\" | sudo",
        ];
        let seps = [
            " ", " ", " ", "\t", "  ", "\n", "\r\n", " | ", "; ", " && ", "",
        ];
        let flagged: Vec<usize> = (0..RULES.len())
            .filter(|&i| matches!(RULES[i].shape, Shape::Flag(_) | Shape::FlagAfter(..)))
            .collect();
        assert_eq!(flagged.len(), 5);
        let mut redacted = vec![0usize; RULES.len()];
        for _ in 0..40_000 {
            let mut text = String::new();
            for _ in 0..(2 + pick(&mut rng, 9)) {
                text.push_str(pieces[pick(&mut rng, pieces.len())]);
                text.push_str(seps[pick(&mut rng, seps.len())]);
            }
            // Half the texts end with a command, a few words, a flag and a value.
            if pick(&mut rng, 2) == 0 {
                text.push_str(commands[pick(&mut rng, commands.len())]);
                for _ in 0..pick(&mut rng, 3) {
                    text.push(' ');
                    text.push_str(pieces[pick(&mut rng, pieces.len())]);
                }
                text.push(' ');
                text.push_str(flags[pick(&mut rng, flags.len())]);
                text.push_str(["", " ", "\t"][pick(&mut rng, 3)]);
                text.push_str(values[pick(&mut rng, values.len())]);
            }
            let plausible = rules_plausible(&text);
            for &i in &flagged {
                if apply_rule(&rule(i), &text).is_some() {
                    redacted[i] += 1;
                    assert!(plausible & (1 << i) != 0, "rule {i} turned down {text:?}");
                }
            }
        }
        // The generator reaches every such rule's matches.
        for &i in &flagged {
            assert!(
                redacted[i] >= 10,
                "rule {i}: {} texts redacted",
                redacted[i]
            );
        }
    }
}

#[cfg(test)]
mod random_letters {
    use super::*;

    /// Names of 16 letters or more from real code (Rust crates, npm and Python packages, Apple
    /// SDKs as the crates bind them), some with acronyms and two-letter words.
    const NAMES: &[&str] = &[
        "getPasswordFromKeychain",
        "AsyncSecretManagerClient",
        "ApiKeyCredentialProvider",
        "HTTPServerURLBuilder",
        "accessTokenProvider",
        "EgyptianHieroglyphsExtendedA",
        "TraversableResourcesLoader",
        "fetchRecurseSubmodules",
        "ASAuthorizationAppleIDCredential",
        "AVPictureInPictureController",
        "CreateOrUpdateRefLog",
        "sceHttpDeleteConnection",
        "BoxCloneServiceLayer",
        "AuthenticationSASLFinal",
        "beginDoctypePublicId",
        "tmXMinorGridThicknessF",
        "refreshTokenExpiresInSeconds",
        "PinnedFieldsOfHelperStruct",
    ];

    /// Mixed-case letters drawn uniformly (xorshift64, fixed seed: the same strings every run).
    fn random_strings(n: usize) -> Vec<String> {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let letters = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        (0..n)
            .map(|_| {
                let len = 16 + (next() % 25) as usize;
                (0..len)
                    .map(|_| letters[(next() % 52) as usize] as char)
                    .collect()
            })
            .collect()
    }

    /// Names read as names, and nine in ten random mixed-case strings of 16–40 letters as random
    /// (the rule's rate, measured on 5,000 per length: 87–93%); shorter values, values with
    /// other characters and one-case values are never judged here.
    #[test]
    fn random_mixed_case_letters_are_told_from_names() {
        for name in NAMES {
            assert!(!random_letters(name), "{name}");
        }
        for token in ["QwErTyUiOpAsDfGhJkLzXcVb", "kDjfhGTsbxnQpLmRtzWvYcNa"] {
            assert!(random_letters(token), "{token}");
        }
        for other in [
            "QwErTyUiOpAsDfG",
            "QwErTyUiOp1sDfGhJkLz",
            "qwertyuiopasdfghjklz",
        ] {
            assert!(!random_letters(other), "{other}");
        }
        let strings = random_strings(1000);
        let mixed: Vec<&String> = strings
            .iter()
            .filter(|s| {
                s.bytes().any(|b| b.is_ascii_uppercase())
                    && s.bytes().any(|b| b.is_ascii_lowercase())
            })
            .collect();
        let found = mixed.iter().filter(|s| random_letters(s)).count();
        assert!(
            found * 100 >= mixed.len() * 85,
            "{found} of {}",
            mixed.len()
        );
    }

    /// A random mixed-case value in a secret's place is redacted whether it starts with a capital
    /// or not (a capital made it a PascalCase name before); names there stay.
    #[test]
    fn a_random_mixed_case_secret_is_redacted_and_names_stay() {
        let token = "QwErTyUiOpAsDfGhJkLzXcVb";
        for (text, want) in [
            (
                format!("token={token}"),
                "token=[redacted:secret_assignment]",
            ),
            (
                format!("password={token}"),
                "password=[redacted:secret_assignment]",
            ),
            (
                format!("API_KEY=\"{token}\""),
                "API_KEY=\"[redacted:secret_assignment]\"",
            ),
            (
                format!("my api key is {token}"),
                "my api key is [redacted:secret_assignment]",
            ),
            (
                "the API key is QwErTyUiOpAsDfGhJk".to_string(),
                "the API key is [redacted:secret_assignment]",
            ),
        ] {
            assert_eq!(redact(&text), want, "{text}");
        }
        // Tokens drawn at random that the rule takes for random, in the places a secret goes.
        let drawn: Vec<String> = random_strings(200)
            .into_iter()
            .filter(|s| random_letters(s))
            .take(20)
            .collect();
        assert_eq!(drawn.len(), 20);
        for t in &drawn {
            for text in [
                format!("DB_PASSWORD={t}"),
                format!("{{\"api_key\": \"{t}\"}}"),
                format!("password: {t}"),
                format!("Authorization: {t}"),
                format!("Server=db;Password={t};"),
                format!("| password | {t} |"),
            ] {
                let shown = redact(&text);
                assert!(!shown.contains(t.as_str()), "{text} -> {shown}");
            }
        }
        for text in [
            "token = accessTokenProvider",
            "secret=AsyncSecretManagerClient",
            "api_key = \"ApiKeyCredentialProvider\"",
            "token = HTTPServerURLBuilder",
            "token=RefreshTokenExpiresInSeconds",
            // Names in code that the rule reads as random: a bare name before `;`, `,`, `)`.
            "let token = NoKxGroupsInCommon;",
            "fn f(token: AsyncIoStdAsTokio) {}",
            "    pub token: KbkdfCtrHmacAlgorithmId,",
        ] {
            assert_eq!(redact(text), text);
        }
    }
}

#[cfg(test)]
mod cost {
    use super::*;

    /// Per rule: on how many texts of `MEMTRAIL_COST_DIR` it is plausible (a `.rs` file is one
    /// text, a transcript's `.jsonl` file one text a line), and the time spent running it
    /// there. `cargo test -p memtrail-runtime --lib rule_costs -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn rule_costs() {
        let dir = std::env::var("MEMTRAIL_COST_DIR").expect("MEMTRAIL_COST_DIR");
        let mut stack = vec![std::path::PathBuf::from(dir)];
        let mut texts = Vec::new();
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs")
                    && let Ok(t) = std::fs::read_to_string(&p)
                {
                    texts.push(t);
                } else if p.extension().is_some_and(|x| x == "jsonl")
                    && let Ok(t) = std::fs::read_to_string(&p)
                {
                    texts.extend(t.lines().map(str::to_string));
                }
            }
        }
        let mut n = vec![0usize; RULES.len()];
        let mut t = vec![0f64; RULES.len()];
        let start = std::time::Instant::now();
        for text in &texts {
            let set = rules_plausible(text);
            for i in 0..RULES.len() {
                if set & (1 << i) != 0 {
                    n[i] += 1;
                    let s = std::time::Instant::now();
                    std::hint::black_box(apply_rule(&rule(i), text));
                    t[i] += s.elapsed().as_secs_f64();
                }
            }
        }
        let scan = start.elapsed().as_secs_f64() - t.iter().sum::<f64>();
        println!("{} texts, scan {scan:.2} s", texts.len());
        for i in 0..RULES.len() {
            if n[i] > 0 {
                println!("{i:3} {:22} {:6} texts {:8.3} s", RULES[i].kind, n[i], t[i]);
            }
        }
    }
}
