//! Search by meaning for long-running servers (the MCP server; later the web page): the model
//! and the store's vectors stay loaded between calls, the vectors of newly embedded messages
//! are appended as the backlog advances, and the backlog is embedded while the server is idle
//! (`memtrail_runtime::mcp::MeaningSearch`).
//!
//! Memory: the vectors are opened at the first search by meaning (not at start: an agent's
//! server that never searches by meaning holds none): the side file mapped
//! ([`crate::sidefile`], pages shared with every other process), and only the vectors newer
//! than it in memory, `dim + 12` bytes each (all of them, 194 MB at 1 GB, when there is no
//! usable side file yet; the embedder thread then writes one).
//!
//! Freshness: a message embedded after the load is appended at the next call. A message
//! rewritten after it was embedded (a late tool result) keeps its earlier vector in memory
//! until the model changes or the server restarts; a deleted message is dropped from the hits
//! (its row is gone).

use crate::model::Encoder;
use crate::search::{VectorIndex, embed_backlog, hybrid, semantic};
use memtrail_runtime::query::{Hit, SearchFilter, SearchMode};
use memtrail_runtime::store::Store;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Messages per write transaction when embedding in the background: a few milliseconds of the
/// write lock, so that a hook never waits long.
pub const BACKGROUND_BATCH: usize = 64;

/// How long a missing model is remembered before the folder is looked at again.
const RECHECK_MISSING: Duration = Duration::from_secs(60);

/// A model as the server holds it.
pub type SharedEncoder = Arc<dyn Encoder + Send + Sync>;

/// Loads the configured model: `Ok(None)` when none is installed or configured.
pub type Loader = dyn Fn() -> Result<Option<SharedEncoder>, String> + Send + Sync;

/// The model and the vectors of a server (see the module doc).
pub struct Meaning {
    load: Box<Loader>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The model, once loaded; `Err` (with when it was tried) when there is none or it failed.
    model: Option<Result<SharedEncoder, (String, Instant)>>,
    /// The vectors in memory, their model's id, and the `done_through` they cover.
    index: Option<(Arc<VectorIndex>, String, i64)>,
}

impl Meaning {
    /// A searcher whose model `load` gives (the binary's choice: an endpoint configured in
    /// `[embed]`, else the installed static model), loaded at first use.
    pub fn new(load: Box<Loader>) -> Meaning {
        Meaning {
            load,
            state: Mutex::new(State::default()),
        }
    }

    /// The model, loaded at the first call (a missing model is looked for again after
    /// [`RECHECK_MISSING`]).
    ///
    /// Errors: the model is not installed or cannot be read (the message says how to install).
    fn model(&self) -> Result<SharedEncoder, String> {
        self.model_within(RECHECK_MISSING)
    }

    /// [`Meaning::model`], a missing model looked for again once `recheck` has passed since
    /// the last try: a search (asked by someone) looks at once, so that a model installed
    /// while the server runs is used by the next search; the background embedder, which asks
    /// every 2 s, after [`RECHECK_MISSING`].
    fn model_within(&self, recheck: Duration) -> Result<SharedEncoder, String> {
        let mut st = self
            .state
            .lock()
            .map_err(|_| "internal error: lock poisoned")?;
        if let Some(Err((_, when))) = &st.model
            && when.elapsed() >= recheck
        {
            st.model = None;
        }
        let m = st.model.get_or_insert_with(|| match (self.load)() {
            Ok(Some(m)) => Ok(m),
            Ok(None) => Err((
                "search by meaning needs a model: install the local one with `memtrail models install` (or configure an endpoint in [embed])".to_string(),
                Instant::now(),
            )),
            Err(e) => Err((format!("search by meaning: {e}"), Instant::now())),
        });
        m.clone().map_err(|(e, _)| e)
    }

    /// The index for `store`, loaded or caught up with the store's backlog first.
    fn index(
        &self,
        store: &Store,
        model: &dyn Encoder,
    ) -> memtrail_runtime::Result<Arc<VectorIndex>> {
        let progress = store.embed_progress()?;
        let mut st = self.state.lock().map_err(|_| {
            memtrail_runtime::Error::Invalid("internal error: lock poisoned".into())
        })?;
        let (through, same_model) = match (&progress, &st.index) {
            (Some((m, d)), Some((_, im, _))) => (*d, m == im && m == model.id()),
            (Some((_, d)), None) => (*d, false),
            (None, _) => (0, false),
        };
        match st.index.take() {
            Some((idx, id, held)) if same_model => {
                let idx = if through > held {
                    // Other holders (a search in progress) keep the old one.
                    let mut grown = Arc::try_unwrap(idx).unwrap_or_else(|a| (*a).clone());
                    grown.extend(store.load_vectors_after(model.id(), model.dim(), held)?);
                    Arc::new(grown)
                } else {
                    idx
                };
                st.index = Some((idx.clone(), id, through.max(held)));
                Ok(idx)
            }
            _ => {
                let idx = Arc::new(VectorIndex::open(store, model)?.0);
                st.index = Some((idx.clone(), model.id().to_string(), through));
                Ok(idx)
            }
        }
    }
}

impl memtrail_runtime::mcp::MeaningSearch for Meaning {
    fn ready(&self, store: &Store) -> bool {
        // A store without vectors searches as before: no model is loaded (or endpoint asked).
        if store.embed_model().ok().flatten().is_none() {
            return false;
        }
        let Ok(model) = self.model() else {
            return false;
        };
        store.embed_model().ok().flatten().as_deref() == Some(model.id())
    }

    fn search(
        &self,
        store: &Store,
        query: &str,
        f: &SearchFilter,
        mode: SearchMode,
    ) -> Result<Vec<Hit>, String> {
        let model = self.model_within(Duration::ZERO)?;
        if store.embed_model().map_err(|e| e.to_string())?.as_deref() != Some(model.id()) {
            let waiting = store.embed_backlog(model.id()).unwrap_or(0);
            return Err(format!(
                "no message is embedded with {} yet ({waiting} waiting; this server embeds them while idle, or run `memtrail embed`); use mode lexical meanwhile",
                model.id()
            ));
        }
        let index = self
            .index(store, model.as_ref())
            .map_err(|e| e.to_string())?;
        let hits = match mode {
            SearchMode::Semantic => semantic(store, model.as_ref(), &index, query, f),
            _ => hybrid(store, model.as_ref(), &index, query, f),
        };
        hits.map_err(|e| e.to_string())
    }

    fn search_in(
        &self,
        store: &dyn memtrail_runtime::read::ReadStore,
        query: &str,
        f: &SearchFilter,
        mode: Option<SearchMode>,
    ) -> Result<Option<(Vec<Hit>, SearchMode)>, String> {
        let model = match (self.model(), mode) {
            (Ok(m), _) => m,
            (Err(_), None) => return Ok(None),
            (Err(e), Some(_)) => return Err(e),
        };
        match (store.has_vectors_of(model.id()), mode) {
            (Ok(true), _) => {}
            (Ok(false) | Err(memtrail_runtime::Error::Invalid(_)), None) => return Ok(None),
            (Ok(false), Some(_)) => {
                return Err(format!(
                    "the database holds no vectors of {}: the machines that push to it embed with that model (`memtrail embed`, then `memtrail sync`); use mode lexical meanwhile",
                    model.id()
                ));
            }
            (Err(e), _) => return Err(e.to_string()),
        }
        let mode = mode.unwrap_or(SearchMode::Hybrid);
        let hits = match mode {
            SearchMode::Semantic => crate::search::semantic_in(store, model.as_ref(), query, f),
            _ => crate::search::hybrid_in(store, model.as_ref(), query, f),
        };
        hits.map(|h| Some((h, mode))).map_err(|e| e.to_string())
    }

    fn embed_some(&self, store: &Store, deadline: Instant) -> usize {
        let Ok(model) = self.model() else {
            return 0;
        };
        if store.embed_backlog(model.id()).unwrap_or(0) == 0 {
            return 0;
        }
        let done = embed_backlog(
            store,
            model.as_ref(),
            BACKGROUND_BATCH,
            Some(deadline),
            &mut |_| {},
        )
        .unwrap_or(0);
        // The side file other searches map, when far behind (off the agent's calls).
        let _ = crate::sidefile::maintain(store, model.id(), model.dim());
        // Keep a loaded index up to date here, off the agent's calls.
        let loaded = self
            .state
            .lock()
            .map(|s| s.index.is_some())
            .unwrap_or(false);
        if done > 0 && loaded {
            let _ = self.index(store, model.as_ref());
        }
        done
    }
}

/// The model memtrail is set up with: the endpoint of the config's `[embed]` table
/// ([`crate::remote`]) when there is one, else the static model installed in `model_dir`;
/// `Ok(None)` when neither. `stored` is the id of the store's vectors, if known: an endpoint
/// without `dim` whose model made them takes the dimension from it instead of asking.
///
/// Errors: the config file cannot be read or its `[embed]` table is wrong; the endpoint
/// cannot give its dimension; the installed model cannot be read.
pub fn load_configured(
    model_dir: &std::path::Path,
    config: &std::path::Path,
    stored: Option<&str>,
) -> Result<Option<SharedEncoder>, String> {
    if let Some(mut cfg) = endpoint_config(config)? {
        if cfg.dim.is_none() {
            cfg.dim = stored
                .and_then(|s| s.strip_prefix(&format!("{}@endpoint/", cfg.model)))
                .and_then(|d| d.parse().ok());
        }
        return Ok(Some(Arc::new(crate::remote::Remote::new(cfg)?)));
    }
    if !model_dir.join("model.json").is_file() {
        return Ok(None);
    }
    Ok(Some(Arc::new(crate::model::StaticModel::load(model_dir)?)))
}

/// The id the configured model records with its vectors, without loading it or asking the
/// endpoint (`None` when neither is set up, or for an endpoint without `dim`).
pub fn configured_id(model_dir: &std::path::Path, config: &std::path::Path) -> Option<String> {
    match endpoint_config(config) {
        Ok(Some(cfg)) => cfg.dim.map(|d| format!("{}@endpoint/{d}", cfg.model)),
        Ok(None) => crate::model::StaticModel::installed_id(model_dir),
        Err(_) => None,
    }
}

/// The `[embed]` table of the config file at `path` (none when the file does not exist).
///
/// Errors: a message naming the file.
pub fn endpoint_config(
    path: &std::path::Path,
) -> Result<Option<crate::remote::EndpointConfig>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    crate::remote::EndpointConfig::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}
