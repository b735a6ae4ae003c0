//! A sandbox for installer tests: a temp dir holding a fake home, XDG state dir and (optionally)
//! a `CLAUDE_CONFIG_DIR`, passed to the installer as an explicit `Env`. Nothing here reads or
//! changes the process environment or the real home.
#![allow(dead_code)]

use memtrail_installer::{Action, Agent, Applied, Env, Plan, apply, plan_in};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub env: Env,
    pub bin: PathBuf,
    pub config: PathBuf,
    pub settings: PathBuf,
    pub global: PathBuf,
    pub skill: PathBuf,
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
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let mut env = Env::sandbox(&home).with_var("XDG_STATE_HOME", dir.path().join("state"));
        let (config, global) = if config_dir {
            let c = dir.path().join("claude-config");
            env = env.with_var("CLAUDE_CONFIG_DIR", &c);
            (c.clone(), c.join(".claude.json"))
        } else {
            (home.join(".claude"), home.join(".claude.json"))
        };
        // A directory with a space, so the hook command needs quoting.
        let bin = dir.path().join("opt dir").join("memtrail");
        Sandbox {
            settings: config.join("settings.json"),
            skill: config.join("skills/memtrail/SKILL.md"),
            env,
            bin,
            config,
            global,
            dir,
        }
    }

    pub fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state/memtrail")
    }

    pub fn plan(&self, action: Action) -> Plan {
        self.plan_with(action, &self.bin)
    }

    pub fn plan_with(&self, action: Action, bin: &Path) -> Plan {
        plan_in(&self.env, Agent::Claude, action, bin).expect("plan")
    }

    pub fn install(&self) -> Applied {
        apply(&self.plan(Action::Install)).expect("apply install")
    }

    pub fn uninstall(&self) -> Applied {
        apply(&self.plan(Action::Uninstall)).expect("apply uninstall")
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

    /// Every file under the home and config dirs (not the state dir), with its bytes, plus
    /// every directory: what "the user's files" look like.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
        let mut out = BTreeMap::new();
        for root in [self.dir.path().join("home"), self.config.clone()] {
            walk(&root, &mut out);
        }
        out
    }

    pub fn json(&self, path: &Path) -> Value {
        let text = std::fs::read_to_string(path).unwrap();
        jsonc(&text)
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
