//! A sandbox for installer tests: a temp dir holding a fake home, XDG state dir and (optionally)
//! a `CLAUDE_CONFIG_DIR`, passed to the installer as an explicit `Env`. Nothing here reads or
//! changes the process environment or the real home.
#![allow(dead_code)]

use memtrail_installer::{Action, Agent, Applied, Env, Plan, apply, plan_in};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A Claude sandbox: an [`AgentBox`] for Claude (its fields and methods through `Deref`) and
/// where Claude's files are in it.
pub struct Sandbox {
    pub b: AgentBox,
    pub config: PathBuf,
    pub settings: PathBuf,
    pub global: PathBuf,
    pub skill: PathBuf,
}

impl std::ops::Deref for Sandbox {
    type Target = AgentBox;

    fn deref(&self) -> &AgentBox {
        &self.b
    }
}

impl Sandbox {
    /// `~/.claude` layout (no `CLAUDE_CONFIG_DIR`).
    pub fn new() -> Sandbox {
        Self::make(false)
    }

    /// With `CLAUDE_CONFIG_DIR` set: `.claude.json` lives inside it.
    pub fn with_config_dir() -> Sandbox {
        Self::make(true)
    }

    fn make(config_dir: bool) -> Sandbox {
        let mut b = AgentBox::new(Agent::Claude);
        let (config, global) = if config_dir {
            let c = b.dir.path().join("claude-config");
            b = b.with_var("CLAUDE_CONFIG_DIR", &c);
            (c.clone(), c.join(".claude.json"))
        } else {
            (b.home.join(".claude"), b.home.join(".claude.json"))
        };
        Sandbox {
            settings: config.join("settings.json"),
            skill: config.join("skills/memtrail/SKILL.md"),
            b,
            config,
            global,
        }
    }

    /// Every file under the home and config dirs (not the state dir), with its bytes, plus
    /// every directory: what "the user's files" look like.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
        let mut out = BTreeMap::new();
        for root in [self.dir.path().join("home"), self.config.clone()] {
            walk(&root, &mut out);
        }
        out
    }
}

pub fn jsonc(text: &str) -> Value {
    memtrail_installer::jsonedit::JsonDoc::parse(text)
        .expect("parses")
        .value()
        .unwrap_or(Value::Null)
}

fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    out.insert(dir.to_path_buf(), None);
    for e in rd.flatten() {
        let p = e.path();
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            walk(&p, out);
        } else if ft.is_symlink() {
            out.insert(
                p.clone(),
                Some(format!("-> {}", std::fs::read_link(&p).unwrap().display()).into_bytes()),
            );
        } else {
            out.insert(p.clone(), Some(std::fs::read(&p).unwrap()));
        }
    }
}

/// The memtrail handlers of one event: (group index, handler).
pub fn memtrail_handlers(settings: &Value, event: &str) -> Vec<(usize, Value)> {
    let mut out = Vec::new();
    if let Some(groups) = settings
        .pointer(&format!("/hooks/{event}"))
        .and_then(Value::as_array)
    {
        for (gi, g) in groups.iter().enumerate() {
            for h in g
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if memtrail_adapters::claude::registration::is_memtrail_hook_handler(h) {
                    out.push((gi, h.clone()));
                }
            }
        }
    }
    out
}

pub const EVENTS: [&str; 6] = [
    "SessionStart",
    "UserPromptSubmit",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
];

/// A `~/.claude.json` like Claude Code writes (JSON.stringify with 2 spaces), about `target`
/// bytes: OAuth account, settings flags, and many projects with their history and MCP servers.
pub fn big_claude_json(target: usize) -> String {
    let mut projects = serde_json::Map::new();
    let mut i = 0;
    let mut doc = serde_json::json!({
        "numStartups": 412,
        "installMethod": "native",
        "autoUpdates": false,
        "theme": "dark",
        "tipsHistory": {"new-user-warmup": 7, "memory-command": 12},
        "userID": "2b7c6f0e3c0a4c59a7e0b6f2d1e8a9c4b3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8",
        "firstStartTime": "2026-01-03T09:12:44.120Z",
        "oauthAccount": {
            "accountUuid": "4d5e6f70-8192-4a3b-bc4d-5e6f708192a3",
            "emailAddress": "dev@example.com",
            "organizationUuid": "0a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d",
            "organizationRole": "admin",
            "displayName": "Dev"
        },
        "hasCompletedOnboarding": true,
        "projects": {},
        "cachedStatsigGates": {"tengu_disable_bypass_permissions_mode": false},
    });
    let mut size = serde_json::to_string_pretty(&doc).unwrap().len();
    while size < target {
        let p = serde_json::json!({
            "allowedTools": [],
            "history": (0..8).map(|h| serde_json::json!({
                "display": format!("fix the flaky test in module {i} step {h} — \"quoted\" and ünïcode"),
                "pastedContents": {}
            })).collect::<Vec<_>>(),
            "mcpContextUris": [],
            "mcpServers": if i % 7 == 0 { serde_json::json!({"local-db": {"type": "stdio", "command": "npx", "args": ["-y", "db-mcp"], "env": {}}}) } else { serde_json::json!({}) },
            "enabledMcpjsonServers": [],
            "disabledMcpjsonServers": [],
            "hasTrustDialogAccepted": i % 3 == 0,
            "projectOnboardingSeenCount": i % 5,
            "lastCost": 0.4213 + i as f64,
            "lastSessionId": format!("{i:08x}-0000-4000-8000-000000000000"),
        });
        let s = serde_json::to_string_pretty(&p).unwrap().len();
        projects.insert(format!("/home/dev/src/project-{i}"), p);
        size += s + 40;
        i += 1;
    }
    doc["projects"] = serde_json::Value::Object(projects);
    let mut text = serde_json::to_string_pretty(&doc).unwrap();
    text.push('\n');
    text
}

/// A sandbox for any agent: a temp dir with a fake home (`<tmp>/home`) and state dir
/// (`<tmp>/state`), an explicit `Env`, and a memtrail binary path with a space in it.
pub struct AgentBox {
    pub dir: tempfile::TempDir,
    pub env: Env,
    pub bin: PathBuf,
    pub home: PathBuf,
    pub agent: Agent,
}

impl AgentBox {
    pub fn new(agent: Agent) -> AgentBox {
        let memtrail_testkit::TempHome { dir, home } = memtrail_testkit::TempHome::new();
        let env = Env::sandbox(&home).with_var("XDG_STATE_HOME", dir.path().join("state"));
        let bin = dir.path().join("opt dir").join("memtrail");
        AgentBox {
            dir,
            env,
            bin,
            home,
            agent,
        }
    }

    /// The same box with one more environment variable.
    pub fn with_var(mut self, k: &str, v: impl Into<std::ffi::OsString>) -> AgentBox {
        self.env = self.env.clone().with_var(k, v);
        self
    }

    pub fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state/memtrail")
    }

    pub fn plan(&self, action: Action) -> Plan {
        plan_in(&self.env, self.agent, action, &self.bin).expect("plan")
    }

    pub fn plan_with(&self, action: Action, bin: &Path) -> Plan {
        plan_in(&self.env, self.agent, action, bin).expect("plan")
    }

    pub fn install(&self) -> Applied {
        apply(&self.plan(Action::Install)).expect("apply install")
    }

    pub fn uninstall(&self) -> Applied {
        apply(&self.plan(Action::Uninstall)).expect("apply uninstall")
    }

    pub fn status(&self) -> memtrail_installer::AgentStatus {
        memtrail_installer::status_in(&self.env, self.agent, &self.bin).expect("status")
    }

    /// Write `content` (creating parent dirs), or make sure the file is absent.
    pub fn put(&self, path: &Path, content: Option<&str>) {
        match content {
            Some(c) => {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, c).unwrap();
            }
            None => {
                let _ = std::fs::remove_file(path);
            }
        }
    }

    /// Every file and directory under the temp dir except the state dir and the binary's.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
        let mut out = BTreeMap::new();
        if let Ok(rd) = std::fs::read_dir(self.dir.path()) {
            for e in rd.flatten() {
                let p = e.path();
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                if name != "state" && name != "opt dir" {
                    walk(&p, &mut out);
                }
            }
        }
        out
    }

    pub fn json(&self, path: &Path) -> Value {
        jsonc(&std::fs::read_to_string(path).unwrap())
    }

    pub fn read(&self, path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }
}

/// Compare two snapshots file by file (readable failures), then whole.
pub fn assert_same(
    name: &str,
    want: &BTreeMap<PathBuf, Option<Vec<u8>>>,
    got: &BTreeMap<PathBuf, Option<Vec<u8>>>,
) {
    for (p, bytes) in want {
        assert_eq!(
            got.get(p)
                .map(|b| b.as_deref().map(String::from_utf8_lossy)),
            Some(bytes.as_deref().map(String::from_utf8_lossy)),
            "{name}: {}",
            p.display()
        );
    }
    let extra: Vec<_> = got.keys().filter(|p| !want.contains_key(*p)).collect();
    assert!(extra.is_empty(), "{name}: left behind: {extra:?}");
}

/// The full round trip every file kind must pass, for one set of starting files: a dry run
/// writes nothing, install works and `check` holds, a second install is empty, uninstall gives
/// back the original bytes (files and folders), a second uninstall is empty.
pub fn round_trip(
    b: &AgentBox,
    name: &str,
    files: &[(PathBuf, Option<String>)],
    check: &dyn Fn(&AgentBox),
) {
    for (p, c) in files {
        b.put(p, c.as_deref());
    }
    let original = b.snapshot();
    let before: Vec<_> = b.status().items.into_iter().map(|i| i.state).collect();
    let plan = b.plan(Action::Install);
    assert!(!plan.is_empty(), "{name}");
    assert!(!plan.diff().is_empty(), "{name}");
    assert_same(&format!("{name} (dry run)"), &original, &b.snapshot());
    assert!(!b.state_dir().exists(), "{name}: dry run made no state");
    apply(&plan).expect("install");
    check(b);
    let st = b.status();
    // In place (a Codex hook waits for the user's trust: in place all the same).
    assert!(
        st.items.iter().all(|i| matches!(
            i.state,
            memtrail_installer::ItemState::Present
                | memtrail_installer::ItemState::Untrusted { .. }
        )),
        "{name}:\n{st}"
    );
    let again = b.plan(Action::Install);
    assert!(
        again.is_empty(),
        "{name}: second install:\n{}",
        again.diff()
    );
    b.uninstall();
    assert_same(
        &format!("{name} (after uninstall)"),
        &original,
        &b.snapshot(),
    );
    let st = b.status();
    let after: Vec<_> = st.items.iter().map(|i| i.state.clone()).collect();
    assert_eq!(after, before, "{name}: status as before install:\n{st}");
    assert!(
        b.plan(Action::Uninstall).is_empty(),
        "{name}: second uninstall"
    );
}
