//! `memtrail web`: the local web page (memtrail-web) over the store this command names.

use crate::cli::WebArgs;
use crate::common::binary_path;
use anyhow::{Context, Result};
use memtrail_runtime::StoreLocation;
use memtrail_web::{Backend, Listen};
use std::process::ExitCode;
use std::sync::Arc;

/// `memtrail web`: binds (refusing a non-loopback address without a token), prints the URL,
/// opens it with `--open`, serves until Ctrl-C.
pub fn web(db: StoreLocation, a: WebArgs) -> Result<ExitCode> {
    let open_db = db.clone();
    let open: Arc<memtrail_web::OpenFn> = Arc::new(move || reopen_send(&open_db));
    let delete: Option<Arc<memtrail_web::DeleteFn>> = db.sqlite_path().map(|_| {
        let db = db.clone();
        Arc::new(move |id: &str| {
            let mut store = crate::common::open_store(&db)?;
            Ok(memtrail_runtime::maintenance::delete_session(
                &mut store, id,
            )?)
        }) as Arc<memtrail_web::DeleteFn>
    });
    let status_db = db.clone();
    let status: Arc<memtrail_web::StatusFn> = Arc::new(move || status_json(&status_db));
    let backend = Backend {
        open,
        delete,
        status: Some(status),
        label: db.to_string(),
    };
    // The flags, else `[web]` of memtrail's config, else the defaults.
    let cfg = if a.bind.is_some() && a.port.is_some() {
        memtrail_runtime::config::WebConfig::default()
    } else {
        memtrail_runtime::config::Config::load_from(&memtrail_runtime::privacy::config_path())
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .web
    };
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

/// A reader of `db` that can move between threads.
fn reopen_send(
    db: &StoreLocation,
) -> Result<Option<Box<dyn memtrail_runtime::read::ReadStore + Send>>> {
    match db.postgres_url() {
        Some(_) => Ok(Some(
            crate::common::open_remote_reader(db)
                .with_context(|| format!("cannot read the store at {db}"))?,
        )),
        None => Ok(crate::common::open_store_read(db)?
            .map(|s| Box::new(s) as Box<dyn memtrail_runtime::read::ReadStore + Send>)),
    }
}

/// What `memtrail status --json` prints for this machine (the same binary, run as a child:
/// the report is the command's own, not a copy of it).
fn status_json(db: &StoreLocation) -> Result<serde_json::Value> {
    let mut cmd = std::process::Command::new(binary_path()?);
    if let Some(p) = db.sqlite_path() {
        cmd.arg("--db").arg(p);
    }
    let out = cmd
        .args(["status", "--json"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .context("cannot run `memtrail status --json`")?;
    serde_json::from_slice(&out.stdout).context("`memtrail status --json` printed no JSON")
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
