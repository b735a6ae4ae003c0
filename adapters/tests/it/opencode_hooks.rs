//! OpenCode hooks: the plugin's payload, which sources a hook ingests, the reply that injects
//! context, the plugin file (filled template, both module shapes, and — when `node` is on
//! `PATH` — the plugin itself run against a fake `memtrail`), and the paths.

use memtrail_adapters::opencode::{self, PluginApi, events};
use memtrail_adapters::{Agent, HookEvent};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A hook process's environment with no variable set.
fn no_env() -> memtrail_adapters::Env {
    memtrail_adapters::Env::sandbox("/")
}

fn payload(v: Value) -> Vec<u8> {
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn payloads_for_each_plugin_event() {
    for (event, source) in [
        (events::IDLE, None),
        (events::COMPACTING, Some("compact")),
        (events::COMPACTED, Some("compact")),
        (events::START, Some("startup")),
    ] {
        let p = json!({"hook_event_name": event, "session_id": "ses_abc", "cwd": "/w/p", "plugin_api": "v1"});
        let ev = opencode::parse_hook_payload(&payload(p.clone()), &no_env()).unwrap();
        assert_eq!(
            ev,
            HookEvent {
                agent: Agent::Opencode,
                event: event.to_string(),
                session_id: Some("ses_abc".into()),
                transcript_path: None,
                cwd: Some("/w/p".into()),
                source: source.map(str::to_string),
                agent_transcript_path: None,
                extra: p,
            }
        );
    }
    // db_path is the transcript; alternative spellings; $PWD when there is no cwd; a BOM.
    let env = memtrail_adapters::Env::sandbox("/").with_var("PWD", "/from/env");
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(payload(
        json!({"event": "session.idle", "sessionID": "ses_x", "db_path": "/d/opencode.db"}),
    ));
    let ev = opencode::parse_hook_payload(&bytes, &env).unwrap();
    assert_eq!(ev.event, "session.idle");
    assert_eq!(ev.session_id.as_deref(), Some("ses_x"));
    assert_eq!(ev.transcript_path.as_deref(), Some("/d/opencode.db"));
    assert_eq!(ev.cwd.as_deref(), Some("/from/env"));
    // Unknown events are passed through; no event name is an empty event.
    let ev =
        opencode::parse_hook_payload(br#"{"session_id":"s","source":"x"}"#, &no_env()).unwrap();
    assert_eq!((ev.event.as_str(), ev.source.as_deref()), ("", Some("x")));
}

#[test]
fn payload_errors() {
    for (bytes, needle) in [
        (&b""[..], "empty"),
        (b"  \n", "empty"),
        (b"{", "not JSON"),
        (b"[1]", "not a JSON object"),
        (b"\"session.idle\"", "not a JSON object"),
    ] {
        let e = opencode::parse_hook_payload(bytes, &no_env()).unwrap_err();
        assert!(e.to_string().contains(needle), "{e}");
    }
}

#[test]
fn session_start_reply_is_additional_context_json() {
    let r = opencode::session_start_reply("Goal: fix \"the\" test\nFiles: a.rs").unwrap();
    assert_eq!(
        r,
        r#"{"additionalContext":"Goal: fix \"the\" test\nFiles: a.rs"}"#
    );
    assert!(!r.contains('\n'));
    assert_eq!(opencode::session_start_reply(" \n "), None);
}

fn event(sid: Option<&str>, db: Option<&Path>) -> HookEvent {
    HookEvent {
        agent: Agent::Opencode,
        event: events::IDLE.into(),
        session_id: sid.map(str::to_string),
        transcript_path: db.map(|p| p.to_string_lossy().into_owned()),
        cwd: None,
        source: None,
        agent_transcript_path: None,
        extra: Value::Null,
    }
}

#[test]
fn transcripts_for_an_event() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("opencode");
    // Nothing there: nothing to ingest.
    assert!(opencode::transcripts_for_event_in(&event(Some("ses_a"), None), &data).is_empty());
    // Legacy storage only: the session's file, found under any project.
    let legacy = data.join("storage/session/proj1/ses_a.json");
    std::fs::create_dir_all(legacy.parent().unwrap()).unwrap();
    std::fs::write(&legacy, b"{}").unwrap();
    assert_eq!(
        opencode::transcripts_for_event_in(&event(Some("ses_a"), None), &data),
        [legacy]
    );
    // An id that is a path is not looked up.
    std::fs::write(data.join("storage/session/proj1/x.json"), b"{}").unwrap();
    assert!(opencode::transcripts_for_event_in(&event(Some("../proj1/x"), None), &data).is_empty());
    assert!(opencode::transcripts_for_event_in(&event(None, None), &data).is_empty());
    // Databases win over the legacy tree: every channel's, stable first.
    for f in [
        "opencode.db",
        "opencode-beta.db",
        "opencode.db-wal",
        "opencode.db-shm",
    ] {
        std::fs::write(data.join(f), b"").unwrap();
    }
    assert_eq!(
        opencode::transcripts_for_event_in(&event(Some("ses_a"), None), &data),
        [data.join("opencode.db"), data.join("opencode-beta.db")]
    );
    // The payload's db_path, when it exists.
    let own = tmp.path().join("custom.db");
    std::fs::write(&own, b"").unwrap();
    assert_eq!(
        opencode::transcripts_for_event_in(&event(Some("ses_a"), Some(&own)), &data),
        [own]
    );
    let gone = tmp.path().join("gone.db");
    assert_eq!(
        opencode::transcripts_for_event_in(&event(Some("ses_a"), Some(&gone)), &data).len(),
        2
    );
}

#[test]
fn plugin_template_and_both_module_shapes() {
    let t = opencode::PLUGIN_TEMPLATE;
    assert_eq!(t.matches(opencode::BIN_PLACEHOLDER).count(), 1);
    assert!(opencode::is_memtrail_plugin(t));
    for e in [
        events::IDLE,
        events::COMPACTING,
        events::COMPACTED,
        events::START,
    ] {
        assert!(t.contains(&format!("\"{e}\"")), "{e}");
    }
    assert!(t.contains(r#"spawn(MEMTRAIL_BIN, ["hook", "opencode"]"#));
    assert_eq!(t.matches("\nexport ").count(), 1, "exactly one export");

    let bin = Path::new(r#"/opt/my "tools"\bin/memtrail"#);
    let current = opencode::plugin_source(bin, PluginApi::Current);
    assert!(current.contains(r#"const MEMTRAIL_BIN = "/opt/my \"tools\"\\bin/memtrail""#));
    assert!(!current.contains("__MEMTRAIL_BIN__"));
    assert!(current.ends_with("export default { id: \"memtrail\", setup, server }\n"));
    let legacy = opencode::plugin_source(bin, PluginApi::Legacy);
    assert!(legacy.ends_with("export const MemtrailPlugin = server\n"));
    assert!(!legacy.contains("\nexport default"));
    assert_eq!(legacy.matches("\nexport ").count(), 1);
    assert!(opencode::is_memtrail_plugin(&legacy));
    assert!(!opencode::is_memtrail_plugin("export default {}"));
    assert_eq!(
        PluginApi::for_version(Some("opencode 1.2.10")),
        PluginApi::Legacy
    );
    assert_eq!(PluginApi::for_version(Some("2.0.25")), PluginApi::Current);
}

/// `node` on PATH, or `None` with a note.
fn node() -> Option<PathBuf> {
    let ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("note: node not found; the plugin execution test is skipped");
        return None;
    }
    Some(PathBuf::from("node"))
}

/// A fake `memtrail` that logs its argv and stdin, and answers the context-asking events.
/// `SLOW=1` makes the compacting hook take 4 s; it logs `done` when its work is over (before
/// its reply, which may find the plugin gone).
const FAKE_MEMTRAIL: &str = r#"#!/bin/sh
payload=$(cat)
printf '%s|%s\n' "$*" "$payload" >> "$LOG"
case "$payload" in
  *'"session.start"'*) printf '{"additionalContext":"CTX-START"}' ;;
  *'"session.compacting"'*)
    if [ "$SLOW" = 1 ]; then sleep 4; echo "done compacting" >> "$LOG"; fi
    printf '{"additionalContext":"CTX-COMPACTING"}' ;;
  *'"session.compacted"'*) printf '{"additionalContext":"CTX-AFTER"}' ;;
esac
"#;

/// Drives the plugin through both host APIs and prints what the hooks produced.
const DRIVER: &str = r#"
import plugin from "./memtrail.mjs"
const wait = (ms) => new Promise((r) => setTimeout(r, ms))
const out = { id: plugin.id }

// OpenCode 1.x
const h = await plugin.server({ directory: process.env.WORK })
await h.event({ event: { type: "session.created", properties: { info: { id: "ses_A", directory: process.env.WORK } } } })
await h.event({ event: { type: "session.created", properties: { info: { id: "ses_child", parentID: "ses_A" } } } })
await h.event({ event: { type: "session.idle", properties: { sessionID: "ses_A" } } })
await h.event({ event: { type: "session.idle", properties: { sessionID: "ses_A" } } })
await h.event({ event: { type: "message.updated", properties: { info: { id: "msg_1" } } } })
await h.event({})
await h.event(null)
const sys1 = { system: ["base"] }
await h["experimental.chat.system.transform"]({ sessionID: "ses_A", model: {} }, sys1)
const sysOther = { system: ["base"] }
await h["experimental.chat.system.transform"]({ sessionID: "ses_B", model: {} }, sysOther)
const comp = { context: [] }
let t0 = Date.now()
await h["experimental.session.compacting"]({ sessionID: "ses_A" }, comp)
out.compactingMs = Date.now() - t0
await h.event({ event: { type: "session.compacted", properties: { sessionID: "ses_A" } } })
const sys2 = { system: ["base"] }
await h["experimental.chat.system.transform"]({ sessionID: "ses_A", model: {} }, sys2)
Object.assign(out, { sys1: sys1.system, sysOther: sysOther.system, comp: comp.context, sys2: sys2.system })

// OpenCode 2.x
const hooks = {}
let release
const gate = new Promise((r) => (release = r))
const ctx = {
  location: { directory: process.env.WORK },
  event: {
    subscribe: async function* () {
      yield { type: "session.created", data: { sessionID: "ses_V2", projectID: "p" } }
      yield { type: "session.idle", data: { sessionID: "ses_V2" } }
      await gate
    },
  },
  session: { hook: async (name, fn) => { hooks[name] = fn } },
}
const cleanup = await plugin.setup(ctx)
out.v2hooks = Object.keys(hooks).sort()
await wait(50)
const ctxEvent = { sessionID: "ses_V2", system: [{ type: "text", text: "base" }] }
await hooks.context(ctxEvent)
const compEvent = { sessionID: "ses_V2", system: [] }
await hooks.compaction(compEvent)
Object.assign(out, { v2context: ctxEvent.system, v2compaction: compEvent.system })
release()
if (typeof cleanup === "function") cleanup()
// A 1.x host calling setup without an event stream: nothing happens.
out.setupWithoutEvents = (await plugin.setup({})) === undefined
await wait(1500)
console.log(JSON.stringify(out))
"#;

fn run_plugin(node: &Path, slow: bool) -> (Value, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("memtrail");
    std::fs::write(&bin, FAKE_MEMTRAIL).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(
        tmp.path().join("memtrail.mjs"),
        opencode::plugin_source(&bin, PluginApi::Current),
    )
    .unwrap();
    std::fs::write(tmp.path().join("driver.mjs"), DRIVER).unwrap();
    let log = tmp.path().join("log.txt");
    let out = Command::new(node)
        .arg("driver.mjs")
        .current_dir(tmp.path())
        .env("LOG", &log)
        .env("WORK", tmp.path())
        .env("SLOW", if slow { "1" } else { "0" })
        .env_remove("MEMTRAIL_DISABLE")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "driver failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    });
    // A slow hook finishes on its own after the plugin gave up on it (and node exited).
    if slow {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("done compacting")
            .count()
            < 2
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    let mut lines: Vec<String> = log
        .lines()
        .map(|l| l.replace(&tmp.path().to_string_lossy().to_string(), "$WORK"))
        .collect();
    lines.sort();
    (v, lines)
}

#[test]
fn the_plugin_runs_the_hook_and_injects_its_replies() {
    let Some(node) = node() else { return };
    let (v, log) = run_plugin(&node, false);
    assert_eq!(v["id"], "memtrail");
    // session.start's reply is awaited by the first system prompt of that session only.
    assert_eq!(v["sys1"], json!(["base", "CTX-START"]));
    assert_eq!(v["sysOther"], json!(["base"]));
    assert_eq!(v["comp"], json!(["CTX-COMPACTING"]));
    assert!(v["compactingMs"].as_u64().unwrap() < 2000);
    assert_eq!(v["sys2"], json!(["base", "CTX-AFTER"]));
    assert_eq!(v["v2hooks"], json!(["compaction", "context"]));
    assert_eq!(
        v["v2context"],
        json!([{"type": "text", "text": "base"}, {"type": "text", "text": "CTX-START"}])
    );
    assert_eq!(
        v["v2compaction"],
        json!([{"type": "text", "text": "CTX-COMPACTING"}])
    );
    assert_eq!(v["setupWithoutEvents"], true);
    // Every call is `memtrail hook opencode` with one JSON line; the child session got no
    // session.start; two idles of one session ran twice (one after the other), others none.
    let p = |e: &str, s: &str, api: &str| {
        format!(
            r#"hook opencode|{{"hook_event_name":"{e}","session_id":"{s}","cwd":"$WORK","plugin_api":"{api}"}}"#
        )
    };
    let mut expected = vec![
        p("session.start", "ses_A", "v1"),
        p("session.idle", "ses_A", "v1"),
        p("session.idle", "ses_A", "v1"),
        p("session.compacting", "ses_A", "v1"),
        p("session.compacted", "ses_A", "v1"),
        p("session.start", "ses_V2", "v2"),
        p("session.idle", "ses_V2", "v2"),
        p("session.compacting", "ses_V2", "v2"),
    ];
    expected.sort();
    assert_eq!(log, expected);
}

#[test]
fn a_slow_hook_never_holds_compaction_longer_than_two_seconds() {
    let Some(node) = node() else { return };
    let (v, log) = run_plugin(&node, true);
    let ms = v["compactingMs"].as_u64().unwrap();
    assert!((1900..3000).contains(&ms), "{ms} ms");
    assert_eq!(v["comp"], json!([]), "no reply in time, no context");
    // Both compacting hooks (1.x and 2.x) still ran to the end, detached.
    assert_eq!(
        log.iter()
            .filter(|l| l.contains("session.compacting"))
            .count(),
        2
    );
    assert_eq!(log.iter().filter(|l| *l == "done compacting").count(), 2);
}

/// The only test of this module that touches the process environment: it runs alone in a
/// process of its own (`memtrail_testkit::alone`).
#[test]
fn paths_follow_xdg_variables() {
    memtrail_testkit::alone!(paths_follow_xdg_variables);
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config");
    let data = tmp.path().join("data");
    // SAFETY: alone in its process; no other thread reads or writes the environment.
    unsafe {
        std::env::set_var("XDG_CONFIG_HOME", &config);
        std::env::set_var("XDG_DATA_HOME", &data);
    }
    assert_eq!(opencode::config_dir(), config.join("opencode"));
    assert_eq!(opencode::data_dir(), data.join("opencode"));
    assert_eq!(opencode::db_path(), data.join("opencode/opencode.db"));
    assert_eq!(opencode::storage_dir(), data.join("opencode/storage"));
    assert_eq!(opencode::plugins_dir(), config.join("opencode/plugins"));
    assert_eq!(
        opencode::plugin_path(),
        config.join("opencode/plugins/memtrail.ts")
    );
    assert!(!opencode::detect());
    assert!(opencode::discover().unwrap().is_empty());
    assert!(opencode::transcripts_for_event(&event(Some("ses_a"), None)).is_empty());
    std::fs::create_dir_all(config.join("opencode")).unwrap();
    assert!(opencode::detect());
    assert_eq!(
        opencode::config_file(),
        config.join("opencode/opencode.json")
    );
    std::fs::write(config.join("opencode/opencode.jsonc"), b"{}").unwrap();
    assert_eq!(
        opencode::config_file(),
        config.join("opencode/opencode.jsonc")
    );
    std::fs::create_dir_all(data.join("opencode")).unwrap();
    std::fs::write(data.join("opencode/opencode.db"), b"").unwrap();
    assert_eq!(
        opencode::transcripts_for_event(&event(Some("ses_a"), None)),
        [data.join("opencode/opencode.db")]
    );
    // A relative XDG value is ignored (XDG spec): back to $HOME/.config.
    unsafe {
        std::env::set_var("XDG_CONFIG_HOME", "relative/dir");
        std::env::set_var("HOME", tmp.path());
    }
    assert_eq!(opencode::config_dir(), tmp.path().join(".config/opencode"));
}
