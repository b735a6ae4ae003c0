//! The agents' spellings that event extraction needs beyond [`normalize_tool_name`]: tool
//! names the readers leave as they are (VS Code's `copilot_*` and camelCase ids, Gemini CLI's
//! `read_many_files`, Cursor's `Delete`), the tools that ask the user a question, the rule and
//! instruction files agents read, MCP tool names, and where a web fetch keeps its URLs.
//!
//! Each agent states its own in a [`Vocabulary`] (`agents/<agent>/adapter.rs`, reached through
//! [`AgentAdapter::vocabulary`](crate::AgentAdapter::vocabulary)); [`SHARED`] holds spellings of
//! agents memtrail does not read (Cline, Windsurf, …) that show up all the same. The functions
//! below answer for the union of them all, whatever agent wrote the transcript: a name of any
//! agent maps the same way (a Claude Code session that calls an MCP server's `read_file`, and
//! the tests, rely on it).
//!
//! Cost: no allocation except [`is_rule_file`]'s one (the path with `/` separators); a lookup
//! scans a few dozen static strings.
//!
//! [`normalize_tool_name`]: crate::normalize_tool_name

use crate::model::Agent;
use serde_json::Value;

/// The common tool names: what [`normalize_tool_name`](crate::normalize_tool_name) returns for
/// the names it knows, plus `delete` (a file deleted by a tool of its own, Cursor's `Delete`),
/// which only [`effective_tool`] returns.
pub const COMMON_TOOLS: &[&str] = &[
    "shell",
    "read",
    "write",
    "edit",
    "list",
    "search",
    "web_fetch",
    "web_search",
    "subagent",
    "todo",
    "mcp",
    "delete",
];

/// One agent's spellings (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vocabulary {
    /// Prefixes of tool names that are not part of the name, lower case (`copilot_`), removed
    /// (repeatedly, ignoring ASCII case) before `tools` are compared.
    pub tool_prefixes: &'static [&'static str],
    /// Tool name → common tool name ([`COMMON_TOOLS`]). The key is the name lower-cased (ASCII),
    /// without the `tool_prefixes` and without `_` and `-` (`read_many_files` → `readmanyfiles`).
    pub tools: &'static [(&'static str, &'static str)],
    /// Tool name → what the tool does, for tools event extraction knows by name (a question to
    /// the user, a skill, plan mode, a task); the name lower case, compared ignoring ASCII case
    /// (`askuserquestion`).
    pub actions: &'static [(&'static str, ToolAction)],
    /// Rule / instruction file names (a path's last segment, exact case): `CLAUDE.md`.
    pub rule_files: &'static [&'static str],
    /// A path holding one of these (with `/` separators) is a rule file: `.cursor/rules/`.
    pub rule_folders: &'static [&'static str],
    /// `(suffix, within)`: a file name ending with `suffix` in a path holding `within` (`""`:
    /// any path) is a rule file: `(".mdc", "/rules/")`.
    pub rule_suffixes: &'static [(&'static str, &'static str)],
    /// Input fields of a web fetch whose text holds the URLs in prose (Gemini CLI's `prompt`),
    /// looked at when the input has no `url` / `urls`.
    pub url_prompt_fields: &'static [&'static str],
    /// How a tool result the agent writes for a call the user declined at its permission
    /// prompt begins (the tool never ran): Claude Code's "The user doesn't want to proceed…".
    pub declined_results: &'static [&'static str],
}

impl Vocabulary {
    /// No spelling at all.
    pub const NONE: Vocabulary = Vocabulary {
        tool_prefixes: &[],
        tools: &[],
        actions: &[],
        rule_files: &[],
        rule_folders: &[],
        rule_suffixes: &[],
        url_prompt_fields: &[],
        declined_results: &[],
    };
}

/// What a tool known by its name ([`Vocabulary::actions`]) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolAction {
    /// Asks the user a question and returns the answers.
    AskUser,
    /// Runs a skill.
    Skill,
    /// Enters plan mode.
    EnterPlan,
    /// Leaves plan mode with a plan for the user to approve.
    ExitPlan,
    /// Creates a task of the agent's task list.
    CreateTask,
}

/// Spellings of agents memtrail does not read, or seen without a known agent: `run_command`,
/// `execute_command`, `ask_user_question`, `use_skill`, Cline's `ask_followup_question` and `.clinerules`,
/// Windsurf's `.windsurfrules`.
pub const SHARED: Vocabulary = Vocabulary {
    tools: &[("runcommand", "shell"), ("executecommand", "shell")],
    actions: &[
        ("ask_user_question", ToolAction::AskUser),
        ("ask_followup_question", ToolAction::AskUser),
        ("use_skill", ToolAction::Skill),
    ],
    rule_files: &[".windsurfrules", ".clinerules"],
    ..Vocabulary::NONE
};

/// Every agent's vocabulary, in [`Agent::ALL`]'s order, then [`SHARED`].
pub fn vocabularies() -> impl Iterator<Item = &'static Vocabulary> {
    Agent::ALL
        .into_iter()
        .map(|a| a.adapter().vocabulary())
        .chain(std::iter::once(&SHARED))
}

/// Whether a tool's result `output` says the user declined the call (any agent's
/// [`Vocabulary::declined_results`]): a decision, not an error of the tool.
pub fn is_declined(output: &str) -> bool {
    let o = output.trim_start();
    vocabularies().any(|v| v.declined_results.iter().any(|d| o.starts_with(d)))
}

/// The common tool name of a tool that an agent's reader left as the agent spelled it
/// (`copilot_readFile` → `read`, `read_many_files` → `read`, `Delete` → `delete`), or `None`
/// when no agent's vocabulary knows `name`.
pub fn effective_tool(name: &str) -> Option<&'static str> {
    let mut bare = name;
    'strip: loop {
        for v in vocabularies() {
            for p in v.tool_prefixes {
                if bare.len() >= p.len()
                    && bare.as_bytes()[..p.len()].eq_ignore_ascii_case(p.as_bytes())
                {
                    bare = &bare[p.len()..];
                    continue 'strip;
                }
            }
        }
        break;
    }
    let key = || {
        bare.bytes()
            .filter(|b| *b != b'_' && *b != b'-')
            .map(|b| b.to_ascii_lowercase())
    };
    vocabularies()
        .flat_map(|v| v.tools)
        .find(|(k, _)| key().eq(k.bytes()))
        .map(|(_, tool)| *tool)
}

/// What the tool `name` does when an agent's vocabulary knows it by name (`AskUserQuestion`,
/// Codex's `request_user_input` → [`ToolAction::AskUser`], Gemini CLI's `activate_skill` →
/// [`ToolAction::Skill`], `EnterPlanMode`, …); ASCII case is ignored.
pub fn tool_action(name: &str) -> Option<ToolAction> {
    vocabularies()
        .flat_map(|v| v.actions)
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, action)| *action)
}

/// True when the tool `name` asks the user a question ([`tool_action`]).
pub fn is_ask_user(name: &str) -> bool {
    tool_action(name) == Some(ToolAction::AskUser)
}

/// True for a rule / instruction file an agent reads (`CLAUDE.md`, `AGENTS.md`, `GEMINI.md`,
/// `.cursor/rules/x.mdc`, `.github/copilot-instructions.md`, …); `\` counts as `/`.
pub fn is_rule_file(path: &str) -> bool {
    let p = path.replace('\\', "/");
    let base = p.rsplit('/').next().unwrap_or(&p);
    vocabularies().any(|v| {
        v.rule_files.contains(&base)
            || v.rule_folders.iter().any(|f| p.contains(f))
            || v.rule_suffixes
                .iter()
                .any(|(suffix, within)| base.ends_with(suffix) && p.contains(within))
    })
}

/// An MCP tool's name split into `(server, tool)`: `mcp__github__get_issue` →
/// `(Some("github"), "get_issue")`; without a `__` after the `mcp__` / `mcp_` prefix, `(None,
/// rest)`.
pub fn mcp_server_tool(name: &str) -> (Option<&str>, &str) {
    let rest = name
        .strip_prefix("mcp__")
        .or_else(|| name.strip_prefix("mcp_"))
        .unwrap_or(name);
    match rest.split_once("__") {
        Some((server, tool)) => (Some(server), tool),
        None => (None, rest),
    }
}

/// The prose holding a web fetch's URLs (Gemini CLI's `prompt`), when its input has such a
/// field: the first of the vocabularies' `url_prompt_fields` that is a string, if not blank.
pub fn web_fetch_prompt(input: &Value) -> Option<&str> {
    vocabularies()
        .flat_map(|v| v.url_prompt_fields)
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .filter(|s| !s.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize_tool_name;

    #[test]
    fn every_agents_tools_map_to_a_common_tool_and_agree() {
        for v in vocabularies() {
            for (key, tool) in v.tools {
                assert!(COMMON_TOOLS.contains(tool), "{key} → {tool}");
                assert_eq!(effective_tool(key), Some(*tool), "{key}: agents disagree");
                assert!(
                    !key.contains(['_', '-']) && *key == key.to_ascii_lowercase(),
                    "{key} is not a key"
                );
            }
            for p in v
                .tool_prefixes
                .iter()
                .chain(v.actions.iter().map(|(n, _)| n))
            {
                assert_eq!(*p, p.to_ascii_lowercase());
            }
            for (name, action) in v.actions {
                assert_eq!(tool_action(name), Some(*action), "{name}: agents disagree");
            }
        }
        for name in [
            "Bash",
            "read_file",
            "apply_patch",
            "mcp__a__b",
            "web_search",
            "Task",
        ] {
            assert!(COMMON_TOOLS.contains(&normalize_tool_name(name).as_str()));
        }
    }

    #[test]
    fn every_agent_has_a_vocabulary() {
        for a in Agent::ALL {
            assert_ne!(*a.adapter().vocabulary(), Vocabulary::NONE, "{a:?}");
        }
    }

    /// The table the runtime held before the vocabulary moved here, key by key.
    #[test]
    fn the_union_is_the_former_table() {
        let mut got: Vec<(&str, &str)> = vocabularies().flat_map(|v| v.tools).copied().collect();
        got.sort();
        got.dedup();
        let want = [
            ("applypatch", "edit"),
            ("createfile", "write"),
            ("delete", "delete"),
            ("deletefile", "delete"),
            ("editfile", "edit"),
            ("editnotebook", "edit"),
            ("executecommand", "shell"),
            ("fetchwebpage", "web_fetch"),
            ("insertedit", "edit"),
            ("inserteditintofile", "edit"),
            ("managetodolist", "todo"),
            ("multireplacestringinfile", "edit"),
            ("patch", "edit"),
            ("readfile", "read"),
            ("readmanyfiles", "read"),
            ("readnotebookcellsoutput", "read"),
            ("replacestring", "edit"),
            ("replacestringinfile", "edit"),
            ("runcommand", "shell"),
            ("runinterminal", "shell"),
            ("runsubagent", "subagent"),
            ("runterminalcommand", "shell"),
            ("todowrite", "todo"),
            ("webfetch", "web_fetch"),
            ("writefile", "write"),
            ("writetodos", "todo"),
        ];
        assert_eq!(got, want);
        let mut names: Vec<(&str, ToolAction)> =
            vocabularies().flat_map(|v| v.actions).copied().collect();
        names.sort_by_key(|(n, _)| *n);
        names.dedup();
        use ToolAction::*;
        assert_eq!(
            names,
            [
                ("activate_skill", Skill),
                ("ask_followup_question", AskUser),
                ("ask_user", AskUser),
                ("ask_user_question", AskUser),
                ("askquestions", AskUser),
                ("askuserquestion", AskUser),
                ("enter_plan_mode", EnterPlan),
                ("enterplanmode", EnterPlan),
                ("exit_plan_mode", ExitPlan),
                ("exitplanmode", ExitPlan),
                ("request_user_input", AskUser),
                ("skill", Skill),
                ("taskcreate", CreateTask),
                ("use_skill", Skill),
                ("vscode_askquestions", AskUser),
            ]
        );
    }

    #[test]
    fn effective_tool_spellings() {
        assert_eq!(effective_tool("copilot_readFile"), Some("read"));
        assert_eq!(
            effective_tool("COPILOT_copilot_replaceString"),
            Some("edit")
        );
        assert_eq!(effective_tool("read_many_files"), Some("read"));
        assert_eq!(effective_tool("Delete"), Some("delete"));
        assert_eq!(effective_tool("run-in-terminal"), Some("shell"));
        assert_eq!(effective_tool("vscode_readFile"), None);
        assert_eq!(effective_tool("grep"), None);
        assert_eq!(effective_tool(""), None);
    }

    #[test]
    fn ask_user_and_rule_files() {
        assert!(is_ask_user("AskUserQuestion"));
        assert!(is_ask_user("vscode_askQuestions"));
        assert!(is_ask_user("request_user_input"));
        assert!(!is_ask_user("askuser"));
        assert!(!is_ask_user("Skill"));
        assert_eq!(tool_action("Skill"), Some(ToolAction::Skill));
        assert_eq!(tool_action("EnterPlanMode"), Some(ToolAction::EnterPlan));
        assert_eq!(tool_action("TaskCreate"), Some(ToolAction::CreateTask));
        assert_eq!(tool_action("Task"), None);
        for p in [
            "/r/CLAUDE.md",
            "C:\\r\\CLAUDE.local.md",
            "AGENTS.md",
            "/r/AGENTS.override.md",
            "/r/GEMINI.md",
            "/r/.cursorrules",
            "/r/.cursor/rules/style.md",
            "/r/x/rules/a.mdc",
            "/r/.github/copilot-instructions.md",
            "/r/.github/instructions/go.instructions.md",
            "/r/.windsurfrules",
            "/r/.clinerules",
        ] {
            assert!(is_rule_file(p), "{p}");
        }
        for p in ["/r/README.md", "/r/claude.md", "/r/a.mdc", "/r/CLAUDE.md/x"] {
            assert!(!is_rule_file(p), "{p}");
        }
    }

    #[test]
    fn mcp_names_and_web_fetch_prompts() {
        assert_eq!(
            mcp_server_tool("mcp__github__get_issue"),
            (Some("github"), "get_issue")
        );
        assert_eq!(mcp_server_tool("mcp_srv__t"), (Some("srv"), "t"));
        assert_eq!(mcp_server_tool("mcp__solo"), (None, "solo"));
        assert_eq!(mcp_server_tool("plain"), (None, "plain"));
        let input = serde_json::json!({"prompt": "see https://a.b"});
        assert_eq!(web_fetch_prompt(&input), Some("see https://a.b"));
        assert_eq!(web_fetch_prompt(&serde_json::json!({"prompt": " "})), None);
        assert_eq!(web_fetch_prompt(&serde_json::json!({"url": "x"})), None);
    }
}
