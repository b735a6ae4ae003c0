//! What memtrail registers in Codex CLI's config, in Codex's own dialect.
//!
//! Sources: `docs/agents/codex.md#paths` (`CODEX_HOME`),
//! `docs/agents/codex.md#what-memtrail-registers` (MCP), `docs/agents/codex.md#notify` (`notify`),
//! `docs/agents/codex.md#hook-trust` (hooks and their trust),
//! `docs/agents/codex.md#what-memtrail-registers` (skills), checked against upstream
//! `openai/codex`: `codex-rs/config/src/hook_config.rs` (`hooks.json` is
//! `{"hooks":{"<Event>":[{"matcher"?,"hooks":[{"type":"command","command",…}]}]}}`, parsed as
//! strict JSON; a handler needs `"type"`), `codex-rs/hooks/src/engine/discovery.rs` (trust is per
//! handler, keyed `<hooks.json path>:<event label>:<group>:<handler>` in `[hooks.state."<key>"]` of
//! the user `config.toml`, and holds a hash of the handler: a changed command is untrusted again)
//! and `codex-rs/hooks/src/legacy_notify.rs` (`notify` runs its argv plus one JSON argument,
//! whatever the trust).
//!
//! Four things:
//!
//! - **`notify`** in `$CODEX_HOME/config.toml`: `["<binary>", "hook", "codex"]`. A user's own
//!   `notify` is kept working: it becomes `["<binary>", "hook", "codex", "--then", <theirs>…]`
//!   (the runtime runs it, see [`super::split_notify_args`]), and uninstall puts their line
//!   back byte for byte.
//! - **An MCP server** `[mcp_servers.memtrail]` with `command = "<binary>"`, `args = ["mcp"]`.
//! - **Hooks** in `$CODEX_HOME/hooks.json` (Claude Code's shape): SessionStart (context after
//!   compaction), PreCompact (snapshot), Stop (capture). Codex runs them only once the user
//!   trusts them in `/hooks`; until then `notify` captures.
//! - **A skill** at `$CODEX_HOME/skills/memtrail/SKILL.md` (Codex reads it there as well as in
//!   `~/.agents/skills`; checked with codex 0.171.0 `debug prompt-input`). Not in
//!   `~/.agents/skills`: Gemini CLI reads that folder too, after its own, and a skill of the
//!   same name there overrides Gemini's own skill (gemini 0.61.0 `skills list`). An older
//!   install's skill in `~/.agents/skills` ([`Locations::legacy_skill`]) is removed.

pub use super::paths::Locations;
use crate::shell::{is_memtrail_program, shell_quote};
use crate::spec::*;
use serde_json::{Value, json};
use std::path::Path;

/// Codex's executable, looked up on `PATH` (detection, `codex --version`).
pub const EXECUTABLE: &str = "codex";

/// The `<agent>` argument of `memtrail hook <agent>`: the agent's short name.
pub const HOOK_AGENT_ARG: &str = super::adapter::NAMES.name;

/// The `config.toml` key of the turn-complete program.
pub const NOTIFY_KEY: &str = "notify";

/// The `config.toml` table holding MCP servers, and memtrail's server name.
pub const MCP_SERVERS_KEY: &str = "mcp_servers";
/// memtrail's MCP server name.
pub const MCP_SERVER_NAME: &str = "memtrail";

/// One hook event, with its timeout in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookSpec {
    /// The event name as `hooks.json` spells it.
    pub event: &'static str,
    /// The label Codex uses for it in trust keys.
    pub label: &'static str,
    /// Timeout in seconds.
    pub timeout_secs: u64,
}

/// SessionStart (context, after compaction), PreCompact (snapshot), Stop (capture).
pub const HOOKS: [HookSpec; 3] = [
    HookSpec {
        event: "SessionStart",
        label: "session_start",
        timeout_secs: 30,
    },
    HookSpec {
        event: "PreCompact",
        label: "pre_compact",
        timeout_secs: 30,
    },
    HookSpec {
        event: "Stop",
        label: "stop",
        timeout_secs: 30,
    },
];

/// The key of `hooks.json` holding events, and of a group holding its handlers.
pub const HOOKS_KEY: &str = "hooks";

/// Handler keys written only when missing.
pub const HANDLER_SOFT_KEYS: [&str; 1] = ["timeout"];

/// What to tell the user about hook trust.
pub const HOW_TO_TRUST: &str = "open /hooks in Codex and trust memtrail's hooks";

/// Added to [`HOW_TO_TRUST`] while memtrail's `notify` is in place (and only then: it is what
/// captures until the hooks are trusted).
pub const MEANWHILE: &str = " (until then memtrail captures through `notify` only)";

/// The skill (from `skills/agents/memtrail/SKILL.md`).
pub const SKILL_MD: &str = include_str!("../../../../skills/agents/memtrail/SKILL.md");

/// memtrail's `notify` argv: `["<binary>", "hook", "codex"]` (no shell: the path as is).
pub fn notify_argv(binary: &Path) -> Option<Vec<String>> {
    Some(vec![
        binary.to_str()?.to_string(),
        "hook".into(),
        HOOK_AGENT_ARG.into(),
    ])
}

/// True when a `notify` argv is memtrail's (any binary named `memtrail`), chained or not.
pub fn is_memtrail_notify(argv: &[String]) -> bool {
    argv.len() >= 3
        && is_memtrail_program(&argv[0])
        && argv[1] == "hook"
        && argv[2] == HOOK_AGENT_ARG
        && (argv.len() == 3 || argv[3] == super::NOTIFY_CHAIN_FLAG)
}

/// `<binary, shell-quoted if needed> hook codex`; `None` when the path is not UTF-8.
pub fn hook_command(binary: &Path) -> Option<String> {
    Some(format!(
        "{} hook {HOOK_AGENT_ARG}",
        shell_quote(binary.to_str()?)
    ))
}

/// One handler: `{"type":"command","command":"<binary> hook codex","timeout":N}`.
pub fn hook_handler(binary: &Path, timeout_secs: u64) -> Option<Value> {
    Some(json!({ "type": "command", "command": hook_command(binary)?, "timeout": timeout_secs }))
}

/// One group without a `matcher` holding memtrail's handler.
pub fn hook_group(binary: &Path, timeout_secs: u64) -> Option<Value> {
    Some(json!({ HOOKS_KEY: [hook_handler(binary, timeout_secs)?] }))
}

fn program_and_args(handler: &Value) -> Option<(String, Vec<String>)> {
    crate::registration::command_program_and_args(handler, false)
}

/// True when `handler` is memtrail's Codex hook handler.
pub fn is_memtrail_hook_handler(handler: &Value) -> bool {
    program_and_args(handler)
        .is_some_and(|(p, a)| is_memtrail_program(&p) && a == ["hook", HOOK_AGENT_ARG])
}

/// The binary a handler runs.
pub fn hook_handler_program(handler: &Value) -> Option<String> {
    program_and_args(handler).map(|(p, _)| p)
}

/// `handler` with its command written the way [`hook_command`] writes it.
pub fn canonical_hook_handler(handler: &Value) -> Value {
    crate::registration::canonical_command_handler(handler)
}

/// The label Codex uses in trust keys for an event memtrail registers.
pub fn event_label(event: &str) -> Option<&'static str> {
    HOOKS.iter().find(|h| h.event == event).map(|h| h.label)
}

/// The table of the user `config.toml` holding Codex's trust records, one per hook handler:
/// `[hooks.state."<key>"]` with `enabled` and `trusted_hash` (`docs/agents/codex.md#hook-trust`).
pub const TRUST_TABLE: [&str; 2] = ["hooks", "state"];

/// The key of Codex's trust record for a handler: `<hooks.json path>:<event label>:<group
/// index>:<handler index>`, indices from 0 (`docs/agents/codex.md#hook-trust`; no `file:` prefix
/// on codex 0.171).
pub fn trust_key(hooks_json: &str, label: &str, group: usize, handler: usize) -> String {
    format!("{hooks_json}:{label}:{group}:{handler}")
}

/// The `trusted_hash` Codex records for a command handler of `event` (`docs/agents/codex.md#hook-trust`;
/// upstream `codex-rs/hooks/src/engine/discovery.rs` `command_hook_hash` and
/// `codex-rs/config/src/fingerprint.rs` `version_for_toml`): `sha256:` + the hex SHA-256 of the
/// compact, key-sorted JSON of `{event_name, matcher?, hooks: [{type: "command", command,
/// timeout (seconds, default 600, at least 1), async, statusMessage?}]}`, `event_name` being the
/// event's label. `matcher` is dropped for `UserPromptSubmit` and `Stop`, whose matchers Codex
/// ignores. `None` for an event memtrail does not register or a handler without `command`.
pub fn trusted_hash(event: &str, matcher: Option<&Value>, handler: &Value) -> Option<String> {
    use sha2::Digest;
    let label = event_label(event)?;
    let h = handler.as_object()?;
    let mut norm = std::collections::BTreeMap::new();
    norm.insert("type", Value::from("command"));
    norm.insert("command", h.get("command")?.clone());
    let timeout = h
        .get("timeout")
        .and_then(Value::as_u64)
        .unwrap_or(600)
        .max(1);
    norm.insert("timeout", Value::from(timeout));
    norm.insert(
        "async",
        Value::from(h.get("async").and_then(Value::as_bool).unwrap_or(false)),
    );
    if let Some(m) = h.get("statusMessage").filter(|m| m.is_string()) {
        norm.insert("statusMessage", m.clone());
    }
    let mut identity = std::collections::BTreeMap::new();
    identity.insert("event_name", Value::from(label));
    identity.insert(
        "hooks",
        Value::Array(vec![serde_json::to_value(norm).ok()?]),
    );
    if let Some(m) = matcher.filter(|m| m.is_string())
        && !matches!(event, "UserPromptSubmit" | "Stop")
    {
        identity.insert("matcher", m.clone());
    }
    let json = serde_json::to_string(&identity).ok()?;
    let digest = sha2::Sha256::digest(json.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Some(format!("sha256:{hex}"))
}

/// True when `text` is memtrail's skill (any version).
pub fn is_memtrail_skill(text: &str) -> bool {
    crate::registration::is_memtrail_skill(text)
}

/// Codex CLI: `docs/agents/codex.md#what-memtrail-registers` (`[mcp_servers.memtrail]`),
/// `docs/agents/codex.md#notify` (`notify`, chained with a user's own),
/// `docs/agents/codex.md#hook-trust` (`hooks.json`, and the trust Codex needs before it runs them),
/// `docs/agents/codex.md#what-memtrail-registers` (skill in `$CODEX_HOME/skills`; memtrail's former
/// skill in `~/.agents/skills` is removed).
pub(crate) fn spec(ctx: &SpecContext<'_>) -> Result<AgentSpec, SpecError> {
    let (env, binary) = (ctx.env, ctx.binary);
    let loc = Locations::resolve(env);
    let bad = || SpecError::BadBinary(binary.to_path_buf());
    let bin = binary.to_str().ok_or_else(bad)?.to_string();
    let toml = vec![
        TomlItem::ChainedArgv {
            label: "notify".to_string(),
            key: NOTIFY_KEY.to_string(),
            ours: notify_argv(binary).ok_or_else(bad)?,
            chain_flag: super::NOTIFY_CHAIN_FLAG.to_string(),
            is_ours: is_memtrail_notify,
        },
        TomlItem::Table {
            label: format!("MCP server {}", MCP_SERVER_NAME),
            table_path: strings(&[MCP_SERVERS_KEY]),
            key: MCP_SERVER_NAME.to_string(),
            keys: vec![
                ("command".to_string(), TomlValue::Str(bin)),
                (
                    "args".to_string(),
                    TomlValue::Strings(vec!["mcp".to_string()]),
                ),
            ],
        },
    ];
    let fns = HandlerFns {
        is_ours: is_memtrail_hook_handler,
        points_at: hook_handler_program,
        canonical: canonical_hook_handler,
    };
    let mut hooks = Vec::new();
    for h in HOOKS {
        hooks.push(handler_item(
            h.event,
            strings(&[HOOKS_KEY, h.event]),
            Some(HOOKS_KEY),
            hook_group(binary, h.timeout_secs).ok_or_else(bad)?,
            hook_handler(binary, h.timeout_secs).ok_or_else(bad)?,
            &HANDLER_SOFT_KEYS,
            &fns,
        ));
    }
    // Codex keys trust by the hooks.json path it sees: as configured, or resolved.
    let mut key_sources = vec![loc.hooks_json.display().to_string()];
    if let Ok(real) = std::fs::canonicalize(&loc.config_dir) {
        let k = real.join("hooks.json").display().to_string();
        if !key_sources.contains(&k) {
            key_sources.push(k);
        }
    }
    Ok(AgentSpec {
        // `enabled = false` in `[mcp_servers.memtrail]`: Codex does not start the server.
        off_switches: vec![OffSwitch {
            file: loc.config_toml.clone(),
            path: strings(&["mcp_servers", "memtrail", "enabled"]),
            when: OffWhen::Is(false),
            covers: OffCovers::Mcp,
            reason: "switched off: config.toml has enabled = false in [mcp_servers.memtrail]"
                .to_string(),
        }],
        files: vec![
            FileSpec {
                path: loc.config_toml.clone(),
                body: Body::Toml(toml),
                // It may hold tokens (MCP env, providers): owner only when memtrail creates it.
                new_file_mode: Some(0o600),
                strict_json: None,
            },
            json_file(&loc.hooks_json, hooks),
            skill_file(&loc.skill, SKILL_MD, is_memtrail_skill),
            retired_skill_file(&loc.legacy_skill, is_memtrail_skill),
        ],
        trust: Some(TrustSpec {
            config_toml: loc.config_toml.clone(),
            hooks_json: loc.hooks_json.clone(),
            key_sources,
            event_label,
            records_table: strings(&TRUST_TABLE),
            record_key: trust_key,
            enabled_key: "enabled".to_string(),
            hash_key: "trusted_hash".to_string(),
            trusted_hash,
            not_trusted: format!("not trusted yet; {HOW_TO_TRUST}"),
            disabled: format!("disabled in Codex; {HOW_TO_TRUST}"),
            outdated: format!(
                "Codex has a trust record for an earlier version of this hook (it changed since \
                 it was trusted); {HOW_TO_TRUST}"
            ),
            meanwhile: Some(("notify".to_string(), MEANWHILE.to_string())),
        }),
        advice: vec![(
            loc.hooks_json.clone(),
            "Codex runs new or changed hooks only once you trust them: open /hooks in Codex \
             (until then memtrail captures through `notify`)"
                .to_string(),
        )],
        config_dirs: vec![loc.config_dir],
        executables: vec![EXECUTABLE.to_string()],
        version: env.version_of(EXECUTABLE, &["@openai/codex"]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Env;

    #[test]
    fn notify_and_handlers() {
        let argv = notify_argv(Path::new("/opt/m t/memtrail")).unwrap();
        assert!(is_memtrail_notify(&argv));
        let mut chained = argv.clone();
        chained.extend(["--then".into(), "notify-send".into()]);
        assert!(is_memtrail_notify(&chained));
        let s = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(!is_memtrail_notify(&s(&["notify-send", "hook", "codex"])));
        assert!(!is_memtrail_notify(&s(&["/x/memtrail", "hook", "claude"])));
        assert!(!is_memtrail_notify(&s(&[
            "/x/memtrail",
            "hook",
            "codex",
            "x"
        ])));
        let h = hook_handler(Path::new("/usr/bin/memtrail"), 30).unwrap();
        assert!(is_memtrail_hook_handler(&h));
        assert_eq!(event_label("PreCompact"), Some("pre_compact"));
        let l = Locations::resolve(&Env::sandbox(Path::new("/h")).with_var("CODEX_HOME", "/c"));
        assert_eq!(l.config_toml, Path::new("/c/config.toml"));
        assert_eq!(l.skill, Path::new("/c/skills/memtrail/SKILL.md"));
        assert_eq!(
            l.legacy_skill,
            Path::new("/h/.agents/skills/memtrail/SKILL.md")
        );
    }

    /// Codex's `trusted_hash` is the SHA-256 of exactly these JSON texts: the first hashes
    /// `{"event_name":"stop","hooks":[{"async":false,"command":"/usr/bin/memtrail hook codex","timeout":30,"type":"command"}]}`
    /// (Stop's matcher dropped), the second
    /// `{"event_name":"session_start","hooks":[{"async":true,"command":"m","statusMessage":"s","timeout":1,"type":"command"}],"matcher":"startup"}`
    /// (timeout at least 1, other keys ignored).
    #[test]
    fn trust_records() {
        let stop = hook_handler(Path::new("/usr/bin/memtrail"), 30).unwrap();
        let stop_hash = "sha256:f12019730d916c38dc17baf8bae9c70160ff8c045094582cf23d196cd8cdc1c0";
        assert_eq!(
            trusted_hash("Stop", None, &stop).as_deref(),
            Some(stop_hash)
        );
        assert_eq!(
            trusted_hash("Stop", Some(&json!("x")), &stop).as_deref(),
            Some(stop_hash)
        );
        let other = json!({"type": "command", "command": "m", "timeout": 0, "async": true,
                           "statusMessage": "s", "extra": 1});
        assert_eq!(
            trusted_hash("SessionStart", Some(&json!("startup")), &other).as_deref(),
            Some("sha256:a56c0a66ddaa02e68a643c8f86ae67d0cafbf327acfebe2fad10f94b16a36435")
        );
        assert_eq!(trusted_hash("Notification", None, &stop), None);
        assert_eq!(
            trusted_hash("Stop", None, &json!({"type": "command"})),
            None
        );
        assert_eq!(
            trust_key("/c/hooks.json", "pre_compact", 1, 0),
            "/c/hooks.json:pre_compact:1:0"
        );
        let env = Env::sandbox(Path::new("/h")).with_var("CODEX_HOME", "/c");
        let t = spec(&SpecContext {
            env: &env,
            binary: Path::new("/usr/bin/memtrail"),
            read_jsonc: |_| None,
        })
        .unwrap()
        .trust
        .unwrap();
        assert_eq!(
            (t.config_toml.as_path(), t.hooks_json.as_path()),
            (Path::new("/c/config.toml"), Path::new("/c/hooks.json"))
        );
        assert_eq!(t.key_sources, ["/c/hooks.json"]);
        assert_eq!(t.records_table, ["hooks", "state"]);
        assert_eq!(
            (t.enabled_key.as_str(), t.hash_key.as_str()),
            ("enabled", "trusted_hash")
        );
        let how = "open /hooks in Codex and trust memtrail's hooks";
        assert_eq!(t.not_trusted, format!("not trusted yet; {how}"));
        assert_eq!(t.disabled, format!("disabled in Codex; {how}"));
        assert_eq!(
            t.outdated,
            format!(
                "Codex has a trust record for an earlier version of this hook (it changed since it \
                 was trusted); {how}"
            )
        );
    }
}
