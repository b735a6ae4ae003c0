//! `memtrail config` end to end in a sandboxed HOME: show (values and sources), get, set
//! (comments kept, mode 0600, validated), unset, edit (through a scripted `$EDITOR`), a
//! malformed file left untouched, and `config --default`.

use crate::support::Sandbox;
use std::path::PathBuf;

fn cfg(sb: &Sandbox) -> PathBuf {
    sb.home.join(".config/memtrail/config.toml")
}

fn run(sb: &Sandbox, args: &[&str]) -> (bool, String, String) {
    let out = sb.cmd().args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[cfg(unix)]
fn mode(p: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn set_keeps_the_users_comments_and_the_file_owner_only() {
    let sb = Sandbox::new();
    let path = cfg(&sb);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let before = "# my settings\nexclude = [\"/work/x\"]  # client X\n\n[sync]\n# the laptop\nlabel = \"old\"   # was renamed\n";
    std::fs::write(&path, before).unwrap();
    let (ok, out, err) = run(&sb, &["config", "set", "sync.label", "laptop"]);
    assert!(ok, "{err}");
    assert_eq!(out, "");
    assert_eq!(
        err,
        format!("sync.label = \"laptop\" in {}\n", path.display())
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "# my settings\nexclude = [\"/work/x\"]  # client X\n\n[sync]\n# the laptop\nlabel = \"laptop\"   # was renamed\n"
    );
    #[cfg(unix)]
    assert_eq!(mode(&path), 0o600);
    // A new table goes at the end; get reads it back.
    assert!(run(&sb, &["config", "set", "web.port", "8080"]).0);
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .ends_with("\n[web]\nport = 8080\n")
    );
    assert_eq!(run(&sb, &["config", "get", "web.port"]).1, "8080\n");
    assert_eq!(run(&sb, &["config", "get", "sync.label"]).1, "laptop\n");
    // One path becomes a one-path array.
    assert!(run(&sb, &["config", "set", "exclude", "~/secret"]).0);
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("exclude = [\"~/secret\"]  # client X\n")
    );
    // unset: back to the default.
    assert!(run(&sb, &["config", "unset", "web.port"]).0);
    assert_eq!(run(&sb, &["config", "get", "web.port"]).1, "7373\n");
}

#[test]
fn a_wrong_value_or_a_malformed_file_changes_nothing() {
    let sb = Sandbox::new();
    let path = cfg(&sb);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "[sync]\nlabel = \"a\"\n").unwrap();
    let (ok, _, err) = run(&sb, &["config", "set", "web.port", "http"]);
    assert!(!ok);
    assert_eq!(
        err,
        "memtrail: web.port must be a whole number from 0 to 65535\n"
    );
    // Valid TOML, but wrong as memtrail reads it: refused, the file as it was.
    let (ok, _, err) = run(&sb, &["config", "set", "exclude", "relative/dir"]);
    assert!(!ok);
    assert!(
        err.contains("would be wrong: `exclude` entry \"relative/dir\" is not an absolute path nor starts with ~/; nothing changed"),
        "{err}"
    );
    let (ok, _, err) = run(
        &sb,
        &["config", "set", "embed.url", "http://example.com/v1"],
    );
    assert!(!ok);
    assert!(
        err.contains("plain http is allowed only to this machine"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "[sync]\nlabel = \"a\"\n"
    );
    // A file that is not TOML: left byte for byte, the error names it.
    let broken = "exclude = [\n# half written\n";
    std::fs::write(&path, broken).unwrap();
    let (ok, _, err) = run(&sb, &["config", "set", "sync.label", "b"]);
    assert!(!ok);
    assert!(
        err.starts_with(&format!("memtrail: memtrail's config {}: ", path.display())),
        "{err}"
    );
    assert!(err.trim_end().ends_with("nothing changed"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), broken);
    // show still lists everything and says what is wrong.
    let (ok, out, _) = run(&sb, &["config", "show"]);
    assert!(ok);
    assert!(
        out.lines().nth(1).unwrap().starts_with("# problem: "),
        "{out}"
    );
    // An unknown key and an environment-only one.
    let (ok, _, err) = run(&sb, &["config", "set", "sync.nope", "x"]);
    assert!(
        !ok && err.starts_with(
            "memtrail: no setting `sync.nope`; the settings are: exclude, aider.roots, sync.url,"
        ),
        "{err}"
    );
    let (ok, _, err) = run(&sb, &["config", "set", "store.path", "/x"]);
    assert!(!ok);
    assert_eq!(
        err,
        "memtrail: store.path comes from the environment: set MEMTRAIL_STORE or MEMTRAIL_DB (or pass --store)\n"
    );
}

#[test]
fn show_says_where_each_value_comes_from() {
    let sb = Sandbox::new();
    let path = cfg(&sb);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        "[sync]\nurl = \"postgres://me:hunter2secret@db.example/m\"\nlabel = \"box\"\n",
    )
    .unwrap();
    let out = sb
        .cmd()
        .args(["config", "show", "--json"])
        .env("MEMTRAIL_SYNC_BATCH", "50")
        .env("MEMTRAIL_WEB_TOKEN", "0123456789abcdef0123")
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let get = |k: &str| {
        v["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"] == k)
            .unwrap_or_else(|| panic!("no {k}"))
            .clone()
    };
    assert_eq!(v["file"], path.display().to_string());
    assert_eq!(v["exists"], true);
    assert_eq!(v["problem"], serde_json::Value::Null);
    assert_eq!(get("sync.label")["value"], "box");
    assert_eq!(get("sync.label")["source"], "file");
    // The password never shows.
    assert_eq!(get("sync.url")["value"], "postgres://me:****@db.example/m");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("hunter2"));
    assert_eq!(get("web.port")["value"], 7373);
    assert_eq!(get("web.port")["source"], "default");
    assert_eq!(get("sync.batch")["value"], "50");
    assert_eq!(get("sync.batch")["source"], "environment");
    assert_eq!(get("sync.batch")["variable"], "MEMTRAIL_SYNC_BATCH");
    assert_eq!(get("web.token")["value"], "(set)");
    assert_eq!(get("exclude")["value"], serde_json::json!([]));
    assert_eq!(get("store.path")["value"], sb.db().display().to_string());
    // A typo is named (memtrail ignores it).
    std::fs::write(
        &path,
        "[sync]\nurl = \"postgres://me:hunter2secret@db.example/m\"\nlabel = \"box\"\nlable = \"typo\"\n",
    )
    .unwrap();
    let v = sb.json(&["config", "show", "--json"]);
    assert_eq!(v["unknown"], serde_json::json!(["sync.lable"]));
    let (_, text, _) = run(&sb, &["config"]);
    assert_eq!(
        text.lines().nth(1),
        Some("# not settings, ignored: sync.lable")
    );
    // The text form: one line per setting, `key = value  # source`.
    let (_, text, _) = run(&sb, &["config"]);
    assert_eq!(
        text.lines().next().unwrap(),
        format!("# {}", path.display())
    );
    let line = text.lines().find(|l| l.starts_with("sync.label ")).unwrap();
    assert!(
        line.ends_with("= \"box\"") || line.contains("= \"box\" "),
        "{line}"
    );
    assert!(line.ends_with("# file"), "{line}");
    assert_eq!(
        run(&sb, &["config", "path"]).1,
        format!("{}\n", path.display())
    );
}

#[test]
fn edit_saves_a_valid_file_and_keeps_a_wrong_one_out() {
    let sb = Sandbox::new();
    let path = cfg(&sb);
    let scripts = sb.home.join("bin");
    std::fs::create_dir_all(&scripts).unwrap();
    // An "editor" that appends a line to the file it is given.
    let editor = |name: &str, line: &str| {
        let p = scripts.join(name);
        std::fs::write(
            &p,
            format!("#!/bin/sh\nprintf '%s\\n' '{line}' >> \"$1\"\n"),
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        p.display().to_string()
    };
    let good = editor("good", "label = \"edited\"");
    // No file yet: the editor starts from the commented default, which ends in [web].
    let out = sb
        .cmd()
        .args(["config", "edit"])
        .env("EDITOR", &good)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("saved {}\n", path.display())
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("# memtrail's config file"), "{text}");
    assert!(
        text.ends_with("# port = 7373\nlabel = \"edited\"\n"),
        "{text}"
    );
    #[cfg(unix)]
    assert_eq!(mode(&path), 0o600);
    // A wrong edit: the file stays, the problem is said, the edit kept aside. VISUAL wins.
    let bad = editor("bad", "port = \"eighty\"");
    let out = sb
        .cmd()
        .args(["config", "edit"])
        .env("EDITOR", &good)
        .env("VISUAL", &bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("memtrail: the edited config is wrong: "),
        "{err}"
    );
    assert!(err.contains("port"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    let kept = sb.home.join(".config/memtrail/config.toml.rejected");
    assert!(
        std::fs::read_to_string(&kept)
            .unwrap()
            .ends_with("port = \"eighty\"\n")
    );
    #[cfg(unix)]
    assert_eq!(mode(&kept), 0o600);
    // An editor that fails: nothing changes.
    let out = sb
        .cmd()
        .args(["config", "edit"])
        .env("EDITOR", "false")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn default_prints_the_commented_file() {
    let sb = Sandbox::new();
    let (ok, a, _) = run(&sb, &["config", "--default"]);
    let (_, b, _) = run(&sb, &["config", "default"]);
    assert!(ok);
    assert_eq!(a, b);
    assert!(
        a.contains("\n[sync]\n") && a.contains("\n# port = 7373\n"),
        "{a}"
    );
    // Every line is a comment, a table header or blank: it sets nothing.
    for l in a.lines() {
        assert!(
            l.is_empty() || l.starts_with('#') || l.starts_with('['),
            "{l}"
        );
    }
}

#[test]
fn web_reads_its_port_from_the_config() {
    // `memtrail web` with web.port set and a port taken: the error names the configured port.
    let sb = Sandbox::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    assert!(run(&sb, &["config", "set", "web.port", &port]).0);
    let (ok, _, err) = run(&sb, &["web"]);
    assert!(!ok);
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
}
