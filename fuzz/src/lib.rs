//! What each fuzz target runs (one function per kind of input), shared so that a found crash can
//! be replayed outside libFuzzer.
//!
//! Properties checked, beyond "does not panic, does not hang, does not run out of memory":
//! - transcript readers: reading may stop at any line boundary and resume from the saved reader
//!   state (as the runtime does across ingests); every record then goes through redaction and
//!   the search-index rendering the store applies.
//! - hook payload parsers: an error or a `HookEvent`, never a panic.
//! - config editors (install/uninstall on arbitrary JSON, JSONC, TOML): either the plan is
//!   refused with an error and the file is untouched, or the installed file still parses and an
//!   uninstall gives back the original bytes exactly.

pub use memtrail_adapters::Agent;
use memtrail_adapters::{Batch, Record, Source};
use memtrail_installer::{Action, Env, apply, plan_in};
use std::path::Path;

fn check_records(batch: &mut Batch) {
    for r in batch.records.iter_mut() {
        memtrail_runtime::redact::redact_record(r);
        if let Record::Message(m) | Record::Replace(m) = r {
            let _ = memtrail_runtime::store::render_index_text(m);
        }
    }
    if let Some(t) = batch.meta.title.as_deref() {
        let _ = memtrail_runtime::redact::redact_title(t);
    }
}

/// A line reader of `agent` for a transcript at `path`, fed `data` line by line. The first byte
/// picks a line after which the reader's state is saved and a fresh reader resumes from it.
pub fn lines(agent: Agent, path: &str, data: &[u8]) {
    let path = Path::new(path);
    let Some(Source::Lines(mut reader)) = memtrail_adapters::source_for(agent, path) else {
        panic!("{path:?} is not a line source of {agent:?}");
    };
    let split_at = data.first().copied().unwrap_or(0) as usize;
    let mut batch = Batch::default();
    for (i, line) in data.split(|&b| b == b'\n').enumerate() {
        if i == split_at {
            reader.finish(&mut batch);
            let state = reader.save_state();
            let Some(Source::Lines(fresh)) = memtrail_adapters::source_for(agent, path) else {
                unreachable!()
            };
            reader = fresh;
            if let Some(s) = state {
                reader.restore_state(&s);
            }
        }
        if !line.iter().all(u8::is_ascii_whitespace) {
            reader.line(line, &mut batch);
        }
    }
    reader.finish(&mut batch);
    check_records(&mut batch);
}

/// A whole-document reader of `agent` for a file at `path`, given `data` as the file.
pub fn doc(agent: Agent, path: &str, data: &[u8]) {
    let path = Path::new(path);
    let Some(Source::Doc(mut reader)) = memtrail_adapters::source_for(agent, path) else {
        panic!("{path:?} is not a document source of {agent:?}");
    };
    let mut batch = Batch::default();
    reader.read(data, &mut batch);
    check_records(&mut batch);
}

/// A hook payload of `agent` on stdin.
pub fn hook(agent: Agent, data: &[u8]) {
    let _ = memtrail_adapters::parse_hook(agent, data, &[], &Env::sandbox("/nonexistent"));
}

/// Codex `notify`: the payload as the last command-line argument.
pub fn notify(data: &[u8]) {
    let arg = String::from_utf8_lossy(data).into_owned();
    let args = vec![arg];
    let _ = memtrail_adapters::parse_hook(Agent::Codex, b"", &args, &Env::sandbox("/nonexistent"));
}

/// A config file that memtrail edits.
#[derive(Clone, Copy, Debug)]
pub enum Config {
    /// `~/.claude/settings.json` (JSON, hooks).
    ClaudeSettings,
    /// `~/.claude.json` (JSON, `mcpServers`).
    ClaudeGlobal,
    /// VS Code's user `settings.json` (JSONC, `chat.hookFilesLocations`).
    VscodeSettings,
    /// `~/.codex/config.toml` (TOML, `notify` and `[mcp_servers.memtrail]`).
    CodexToml,
}

impl Config {
    fn agent(self) -> Agent {
        match self {
            Config::ClaudeSettings | Config::ClaudeGlobal => Agent::Claude,
            Config::VscodeSettings => Agent::Vscode,
            Config::CodexToml => Agent::Codex,
        }
    }

    fn path(self, home: &Path) -> std::path::PathBuf {
        match self {
            Config::ClaudeSettings => home.join(".claude/settings.json"),
            Config::ClaudeGlobal => home.join(".claude.json"),
            Config::VscodeSettings => home.join(".config/Code/User/settings.json"),
            Config::CodexToml => home.join(".codex/config.toml"),
        }
    }

    /// Whether `text` parses, as the agent reads it. A leading byte order mark is the user's
    /// (the editors keep it, as they found it) and is not part of the check.
    fn parses(self, text: &str) -> Result<(), String> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        match self {
            Config::CodexToml => text
                .parse::<toml_edit::DocumentMut>()
                .map(|_| ())
                .map_err(|e| e.to_string()),
            _ => jsonc_parser::parse_to_value(text, &Default::default())
                .map(|_| ())
                .map_err(|e| e.to_string()),
        }
    }
}

/// Install then uninstall memtrail with `data` as the file `config`, in a throwaway home.
pub fn edit(config: Config, data: &[u8]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let file = config.path(&home);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, data).unwrap();
    let env = Env::sandbox(&home).with_var("XDG_STATE_HOME", dir.path().join("state"));
    let bin = dir.path().join("bin").join("memtrail");
    let agent = config.agent();
    let plan = match plan_in(&env, agent, Action::Install, &bin) {
        Ok(p) => p,
        Err(_) => {
            assert_eq!(std::fs::read(&file).unwrap(), data, "a refused plan wrote");
            return;
        }
    };
    if let Err(e) = apply(&plan) {
        assert_eq!(
            std::fs::read(&file).unwrap(),
            data,
            "a failed install changed the file: {e}"
        );
        return;
    }
    let installed = std::fs::read(&file).unwrap();
    let text = String::from_utf8(installed).expect("installed file is UTF-8");
    if let Err(e) = config.parses(&text) {
        panic!("the installed file does not parse: {e}\n---\n{text}");
    }
    let un = plan_in(&env, agent, Action::Uninstall, &bin).expect("uninstall plan");
    apply(&un).expect("uninstall");
    let after = std::fs::read(&file).unwrap_or_default();
    assert!(
        after == data,
        "uninstall did not give back the original bytes\n--- original\n{}\n--- after\n{}",
        String::from_utf8_lossy(data),
        String::from_utf8_lossy(&after)
    );
}
