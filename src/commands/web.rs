//! `memtrail web`: the local web page (memtrail-web) over the store this command names.

use crate::cli::WebArgs;
use anyhow::{Context, Result};
use memtrail_embed::service::Meaning as MeaningService;
use memtrail_runtime::StoreLocation;
use memtrail_runtime::mcp::MeaningSearch;
use memtrail_runtime::query::{Hit, SearchFilter, SearchMode};
use memtrail_web::{Backend, Listen, Mode};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

/// The warning `web --token T` gives on stderr.
pub const TOKEN_IN_ARGS: &str = "the access token is visible to other local users in the \
    process list while the page runs, and lets them in; prefer MEMTRAIL_WEB_TOKEN";

/// `memtrail web`: binds (refusing a non-loopback address without a token), prints the URL,
/// opens it with `--open`, serves until Ctrl-C.
pub fn web(db: StoreLocation, a: WebArgs) -> Result<ExitCode> {
    let open_db = db.clone();
    let open: Arc<memtrail_web::OpenFn> = Arc::new(move || reopen_send(&open_db));
    let delete: Option<Arc<memtrail_web::DeleteFn>> = db.sqlite_path().map(|_| {
        let db = db.clone();
        Arc::new(move |id: &str| {
            let mut store = crate::common::open_store(&db)?;
            let info = memtrail_runtime::maintenance::delete_session(&mut store, id)?;
            crate::commands::sync_auto::mark_running_sync(&db);
            Ok(info)
        }) as Arc<memtrail_web::DeleteFn>
    });
    let service = Arc::new(MeaningService::new(Box::new(|| {
        crate::commands::models::encoder().map_err(|e| format!("{e:#}"))
    })));
    let last_request = Arc::new(std::sync::atomic::AtomicI64::new(0));
    let status_db = db.clone();
    // The report `memtrail status --json` prints, made in process (no child process), with the
    // agents' transcripts listed in the background (listing them all takes longer than the
    // rest of the page; made first now, then again when 10 s old).
    let listing = Arc::new(crate::commands::status::ListingCache::default());
    listing.refresh_in_background();
    let status: Arc<memtrail_web::StatusFn> =
        Arc::new(move || crate::commands::status::status_json(&status_db, Some(&listing)));
    let backend = Backend {
        open,
        delete,
        status: Some(status),
        label: db.to_string(),
        meaning: Some(meaning(&db, Arc::clone(&service))),
        last_request: Some(Arc::clone(&last_request)),
    };
    // On an SQLite store, the full-text queue (what hooks wrote) is indexed while the page
    // runs, and the backlog of search by meaning embedded while no request came for 2 s, as
    // the MCP server does.
    if db.sqlite_path().is_some() {
        memtrail_runtime::background::spawn_indexer(db.clone());
        memtrail_runtime::background::spawn_embedder(db.clone(), service, last_request);
    }
    // The flags, else `[web]` of memtrail's config, else the defaults.
    let cfg = if a.bind.is_some() && a.port.is_some() {
        memtrail_runtime::config::WebConfig::default()
    } else {
        memtrail_runtime::config::Config::load_from(&memtrail_runtime::privacy::config_path())
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .web
    };
    // A token lets in whoever presents it, another local account included (the check of the
    // connection's account is for a page without one): on the command line, it is in the
    // process list for everyone to read while the page runs.
    if a.token.as_deref().is_some_and(|t| !t.is_empty())
        && std::env::args_os()
            .any(|x| x == "--token" || x.to_string_lossy().starts_with("--token="))
    {
        eprintln!("memtrail: warning: {TOKEN_IN_ARGS}");
    }
    let listen = Listen {
        bind: a.bind.or(cfg.bind).unwrap_or([127, 0, 0, 1].into()),
        port: a.port.or(cfg.port).unwrap_or(memtrail_web::DEFAULT_PORT),
        token: a.token.filter(|t| !t.is_empty()),
        allow_hosts: a.allow_hosts,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the web server's runtime")?;
    rt.block_on(async move {
        let (listener, app, url) = memtrail_web::bind(&listen, backend).await?;
        out!("memtrail web: {url}");
        out!("serving {db}; Ctrl-C stops it");
        if a.open {
            open_browser(&url);
        }
        memtrail_web::serve(listener, app).await
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Search by meaning over `db`: ready when the configured model's vectors are in the store
/// (what `memtrail search`'s default hybrid mode needs); `service` loads the model and the
/// store's vectors at the first search by meaning and keeps them, adding the vectors embedded
/// since (by the background embedder, `memtrail embed` or `import`) at the next search. On a
/// PostgreSQL store, [`meaning_in`].
fn meaning(db: &StoreLocation, service: Arc<MeaningService>) -> memtrail_web::Meaning {
    if db.postgres_url().is_some() {
        return meaning_in(db);
    }
    let ready_db = db.clone();
    let ready = move || -> std::result::Result<String, String> {
        let Some(configured) = crate::commands::models::configured_id() else {
            return Err(format!(
                "Search by meaning needs a model: `memtrail models install` (or an [embed] endpoint with its dim in {}), then `memtrail embed`.",
                memtrail_runtime::privacy::config_path().display()
            ));
        };
        let stored = crate::common::open_store_read(&ready_db)
            .map_err(|e| format!("{e:#}"))?
            .map(|s| s.embed_model())
            .transpose()
            .map_err(|e| e.to_string())?
            .flatten();
        match stored {
            Some(m) if m == configured => Ok(m),
            _ => Err(format!(
                "The store holds no vectors of {configured} yet: run `memtrail embed`."
            )),
        }
    };
    let search_db = db.clone();
    let search = move |q: &str, filter: &SearchFilter, mode: Mode| -> Result<(Vec<Hit>, i64)> {
        let store = crate::common::open_store_read(&search_db)?.ok_or_else(|| {
            anyhow::anyhow!("the store does not exist yet: run `memtrail import`")
        })?;
        let mode = match mode {
            Mode::Semantic => SearchMode::Semantic,
            _ => SearchMode::Hybrid,
        };
        let hits = service
            .search(&store, q, filter, mode)
            .map_err(|e| anyhow::anyhow!(e))?;
        Ok((hits, memtrail_runtime::read::ReadStore::unindexed(&store)))
    };
    memtrail_web::Meaning {
        ready: Arc::new(ready),
        search: Arc::new(search),
    }
}

/// [`meaning`] on a PostgreSQL store: the database ranks its vectors (pgvector), the query is
/// encoded here by the configured model (loaded at the first search, then kept); ready when
/// the database holds vectors of that model. One connection is kept for it.
fn meaning_in(db: &StoreLocation) -> memtrail_web::Meaning {
    type Reader = Box<dyn memtrail_runtime::read::ReadStore + Send>;
    let reader: Arc<Mutex<Option<Reader>>> = Arc::new(Mutex::new(None));
    let model: Arc<Mutex<Option<memtrail_embed::service::SharedEncoder>>> =
        Arc::new(Mutex::new(None));
    // `f` over the kept connection (opened, or opened again after an error).
    let with_reader = {
        let (db, reader) = (db.clone(), reader.clone());
        move |f: &mut dyn FnMut(&dyn memtrail_runtime::read::ReadStore) -> Result<()>| -> Result<()> {
            let mut guard = reader
                .lock()
                .map_err(|_| anyhow::anyhow!("the connection's lock is poisoned"))?;
            if guard.is_none() {
                *guard = reopen_send(&db)?;
            }
            let Some(r) = guard.as_ref() else {
                anyhow::bail!("the store does not exist");
            };
            let out = f(r.as_ref());
            if out.is_err() {
                *guard = None;
            }
            out
        }
    };
    let with_reader = Arc::new(with_reader);
    let ready_reader = with_reader.clone();
    let ready = move || -> std::result::Result<String, String> {
        let Some(configured) = crate::commands::models::configured_id() else {
            return Err(format!(
                "Search by meaning needs a model: `memtrail models install` (or an [embed] endpoint with its dim in {}).",
                memtrail_runtime::privacy::config_path().display()
            ));
        };
        let mut has = Ok(false);
        ready_reader(&mut |r| {
            has = r.has_vectors_of(&configured);
            Ok(())
        })
        .map_err(|e| format!("{e:#}"))?;
        match has {
            Ok(true) => Ok(configured),
            Ok(false) => Err(format!(
                "The database holds no vectors of {configured} yet: the machines that push to it run `memtrail embed`, then `memtrail sync`."
            )),
            Err(e) => Err(e.to_string()),
        }
    };
    let search = move |q: &str, filter: &SearchFilter, mode: Mode| -> Result<(Vec<Hit>, i64)> {
        let encoder = {
            let mut m = model
                .lock()
                .map_err(|_| anyhow::anyhow!("the model's lock is poisoned"))?;
            if m.is_none() {
                *m = crate::commands::models::encoder()?;
            }
            m.clone().ok_or_else(|| {
                anyhow::anyhow!("search by meaning needs a model: `memtrail models install`")
            })?
        };
        let mut hits = Vec::new();
        with_reader(&mut |r| {
            hits = match mode {
                Mode::Semantic => {
                    memtrail_embed::search::semantic_in(r, encoder.as_ref(), q, filter)?
                }
                _ => memtrail_embed::search::hybrid_in(r, encoder.as_ref(), q, filter)?,
            };
            Ok(())
        })?;
        Ok((hits, 0))
    };
    memtrail_web::Meaning {
        ready: Arc::new(ready),
        search: Arc::new(search),
    }
}

/// A reader of `db` that can move between threads.
fn reopen_send(
    db: &StoreLocation,
) -> Result<Option<Box<dyn memtrail_runtime::read::ReadStore + Send>>> {
    // Each reader of the pool answers many requests; one whose request is abandoned (the
    // browser aborted it) is stopped and dropped (`memtrail_web`).
    match db.postgres_url() {
        Some(_) => {
            let mut r = crate::common::connect_pg_reader(db)
                .with_context(|| format!("cannot read the store at {db}"))?;
            r.make_stoppable();
            Ok(Some(Box::new(r)))
        }
        None => Ok(crate::common::open_store_read(db)?.map(|mut s| {
            let _ = s.make_stoppable();
            s.tune_for_serving();
            Box::new(s) as Box<dyn memtrail_runtime::read::ReadStore + Send>
        })),
    }
}

/// Opens `url` in the default browser (`xdg-open`, `open`, `start`); says so when it cannot.
fn open_browser(url: &str) {
    let (prog, args): (&str, Vec<&str>) = if cfg!(target_os = "macos") {
        ("open", vec![url])
    } else if cfg!(windows) {
        ("cmd", vec!["/C", "start", "", url])
    } else {
        ("xdg-open", vec![url])
    };
    let spawned = std::process::Command::new(prog)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = spawned {
        eprintln!("memtrail web: cannot open a browser ({prog}: {e}); open the URL above");
    }
}
