//! memtrail-pg: the PostgreSQL side of memtrail (docs/sync.md): `memtrail sync` (push and pull)
//! and direct queries of a team server (`--store postgres://…`).
//!
//! [`Pg`] is a blocking facade: it owns a current-thread tokio runtime and one
//! `tokio-postgres` connection, so callers stay synchronous. [`PgConfig`] parses the URL and
//! finds the password (URL, `PGPASSWORD`, `~/.pgpass`); nothing here prints a password.

pub mod config;
pub mod engine;
pub mod migrate;
pub mod read;
pub mod settings;
pub mod sync;
mod tls;
pub mod tsv;

use std::future::Future;
use std::time::Duration;

pub use config::{EnvDefaults, Host, PasswordSources, PgConfig, SslMode, mask_url};
pub use read::PgReader;
pub use sync::{DatabaseMarks, MachineInfo, Pushed, session_uid};
pub use tokio_postgres;

/// What can go wrong talking to PostgreSQL. No variant's text holds a password.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The URL does not parse; the text says which part (it never quotes the URL).
    #[error("bad PostgreSQL URL: {0}")]
    Url(String),
    /// The connection failed: `target` is the URL with the password masked, `message` the
    /// cause (refused, timed out, authentication failed, TLS refused, …).
    #[error("cannot connect to {target}: {message}")]
    Connect { target: String, message: String },
    /// TLS could not be set up (a root certificate file unreadable or empty).
    #[error("TLS: {0}")]
    Tls(String),
    /// A statement failed, or the connection broke: the server's message and SQLSTATE, or the
    /// client's error.
    #[error("PostgreSQL: {0}")]
    Db(String),
    /// The database's memtrail schema (`memtrail_meta.schema_version`) is newer than this
    /// build knows (`supported`, the highest migration it has).
    #[error(
        "the database's memtrail schema is version {found}, newer than this memtrail's \
         {supported}: upgrade memtrail on this machine"
    )]
    NewerSchema { found: i64, supported: i64 },
    /// The local store failed (sync's local side).
    #[error("{0}")]
    Store(#[from] memtrail_runtime::Error),
    /// Data this side cannot accept (a message naming it).
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    /// The SQLSTATE of a server error (`42501` insufficient privilege, …), when there is one.
    pub fn sqlstate(&self) -> Option<&str> {
        match self {
            Error::Db(m) => m.rsplit_once("(SQLSTATE ").and_then(|(_, c)| c.get(..5)),
            _ => None,
        }
    }
}

impl From<tokio_postgres::Error> for Error {
    fn from(e: tokio_postgres::Error) -> Self {
        Error::Db(describe(&e))
    }
}

/// A `tokio-postgres` error as one line: a server error as `message (SQLSTATE code)` with its
/// detail and hint, any other as its text and causes.
pub fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut s = format!("{} (SQLSTATE {})", db.message(), db.code().code());
        if let Some(d) = db.detail() {
            s.push_str(&format!("; {d}"));
        }
        if let Some(h) = db.hint() {
            s.push_str(&format!("; hint: {h}"));
        }
        return s;
    }
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let c = cause.to_string();
        if !s.contains(&c) {
            s.push_str(&format!(": {c}"));
        }
        source = cause.source();
    }
    s
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Drop for Pg {
    /// Stops the connection's runtime without waiting for its tasks: a `Pg` may be dropped
    /// inside another runtime's task (the last reader of `memtrail web --store postgres://…`
    /// when the server stops), where dropping a runtime would panic.
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Cancels the statement a [`Pg`] runs on the server ([`Pg::cancel_handle`]).
#[derive(Clone)]
pub struct Cancel {
    token: tokio_postgres::CancelToken,
    config: PgConfig,
}

/// Most cancel requests on their way at once, all connections together: past it, a stop sends
/// none (the stopped reader is dropped all the same; its statement runs to its end), so that a
/// flood of abandoned requests to a server that does not answer leaves a bounded number of
/// threads waiting.
pub const MAX_CANCELS_IN_FLIGHT: usize = 4;

static CANCELS_IN_FLIGHT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Cancel {
    /// Asks the server to cancel the statement the connection runs now, if any, on a thread
    /// of its own (it opens a connection of its own, with the connection's TLS settings, to
    /// send PostgreSQL's cancel request), so it returns at once and never blocks the caller.
    /// The statement then fails with SQLSTATE 57014 (`query_canceled`). Best effort: the
    /// server does not say whether it cancelled anything (a request that reaches it before
    /// the statement it was meant for starts cancels nothing), a failure to reach it is ignored, the whole request
    /// is given up after the connection's `connect_timeout` (else 10 s), and none is sent
    /// while [`MAX_CANCELS_IN_FLIGHT`] are on their way.
    pub fn cancel(&self) {
        use std::sync::atomic::Ordering;
        if CANCELS_IN_FLIGHT.fetch_add(1, Ordering::SeqCst) >= MAX_CANCELS_IN_FLIGHT {
            CANCELS_IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        let me = self.clone();
        let sent = std::thread::Builder::new()
            .name("memtrail-pg-cancel".into())
            .spawn(move || {
                me.cancel_now();
                CANCELS_IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
            });
        if sent.is_err() {
            CANCELS_IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// [`Cancel::cancel`] on this thread, waiting for the request to be sent (at most the
    /// connect timeout).
    fn cancel_now(&self) {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let Ok(tls) = tls::client_config(&self.config, home.as_deref()) else {
            return;
        };
        let limit = self
            .config
            .connect_timeout
            .unwrap_or(Duration::from_secs(10));
        rt.block_on(async {
            let _ = tokio::time::timeout(limit, async {
                match tls {
                    Some(tls) => {
                        self.token
                            .cancel_query(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
                            .await
                    }
                    None => self.token.cancel_query(tokio_postgres::NoTls).await,
                }
            })
            .await;
        });
    }
}

/// One connection to PostgreSQL, used synchronously: every call blocks on the connection's own
/// current-thread runtime.
pub struct Pg {
    /// Always `Some` until [`Drop`] takes it.
    rt: Option<tokio::runtime::Runtime>,
    client: tokio_postgres::Client,
    target: String,
    warnings: Vec<String>,
    /// What it connected with, for [`Pg::connect_again`].
    config: PgConfig,
    password: Option<String>,
}

impl Pg {
    /// Connects as `config` says, the password resolved from this process's environment when
    /// the URL has none ([`PgConfig::resolve_password`] with [`PasswordSources::from_env`]).
    /// The connection's `application_name` is `memtrail` unless the URL sets one; the connect
    /// timeout is the URL's `connect_timeout`, else 10 s.
    ///
    /// Errors: [`Error::Connect`] (with the masked URL), [`Error::Tls`].
    pub fn connect(config: &PgConfig) -> Result<Pg> {
        Self::connect_with(config, &PasswordSources::from_env())
    }

    /// [`Pg::connect`] with the password looked up in `sources` instead of the environment.
    pub fn connect_with(config: &PgConfig, sources: &PasswordSources) -> Result<Pg> {
        let mut warnings = Vec::new();
        let password = config.resolve_password(sources, &mut warnings);
        Self::connect_resolved(config, password, warnings)
    }

    /// A second connection to the same database, as the same role with the same password.
    ///
    /// Errors: as [`Pg::connect`].
    pub fn connect_again(&self) -> Result<Pg> {
        Self::connect_resolved(&self.config, self.password.clone(), Vec::new())
    }

    fn connect_resolved(
        config: &PgConfig,
        password: Option<String>,
        warnings: Vec<String>,
    ) -> Result<Pg> {
        let target = config.to_string();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Connect {
                target: target.clone(),
                message: format!("cannot start the runtime: {e}"),
            })?;
        let mut pg = tokio_postgres::Config::new();
        match &config.host {
            Host::Tcp(h) => pg.host(h),
            Host::Socket(dir) => pg.host_path(dir),
        };
        pg.port(config.port)
            .user(&config.user)
            .dbname(&config.dbname)
            .application_name(config.application_name.as_deref().unwrap_or("memtrail"))
            .connect_timeout(config.connect_timeout.unwrap_or(Duration::from_secs(10)))
            .ssl_mode(match config.sslmode {
                SslMode::Disable => tokio_postgres::config::SslMode::Disable,
                SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
                _ => tokio_postgres::config::SslMode::Require,
            });
        if let Some(p) = &password {
            pg.password(p);
        }
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let tls = tls::client_config(config, home.as_deref())?;
        let connect_err = |e: tokio_postgres::Error| {
            let mut message = describe(&e);
            if password.is_none() && message.contains("password missing") {
                message.push_str(
                    "; the server asks for a password and none was found: set PGPASSWORD, \
                     add a line to ~/.pgpass (mode 0600), or put it in the URL",
                );
            }
            // Why a password source was passed over (a ~/.pgpass readable by others, …).
            for w in &warnings {
                message.push_str("; ");
                message.push_str(w);
            }
            Error::Connect {
                target: target.clone(),
                message,
            }
        };
        let client = rt.block_on(async {
            match tls {
                Some(tls) => {
                    let make = tokio_postgres_rustls::MakeRustlsConnect::new(tls);
                    let (client, conn) = pg.connect(make).await.map_err(connect_err)?;
                    tokio::spawn(async move {
                        let _ = conn.await;
                    });
                    Ok::<_, Error>(client)
                }
                None => {
                    let (client, conn) = pg
                        .connect(tokio_postgres::NoTls)
                        .await
                        .map_err(connect_err)?;
                    tokio::spawn(async move {
                        let _ = conn.await;
                    });
                    Ok(client)
                }
            }
        })?;
        Ok(Pg {
            rt: Some(rt),
            client,
            target,
            warnings,
            config: config.clone(),
            password,
        })
    }

    /// Parses `url` ([`PgConfig::parse`]) and connects ([`Pg::connect`]).
    pub fn connect_url(url: &str) -> Result<Pg> {
        Self::connect(&PgConfig::parse(url)?)
    }

    /// The URL connected to, password masked.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Warnings met while connecting (a password file ignored for its permissions), for the
    /// caller to show.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The connection's runtime (there until the drop).
    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.rt.as_ref().expect("the runtime lives until the drop")
    }

    /// Runs `f` to completion on the connection's runtime.
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.runtime().block_on(f)
    }

    /// The client, for [`Pg::block_on`]: `pg.block_on(pg.client().query(…))`.
    pub fn client(&self) -> &tokio_postgres::Client {
        &self.client
    }

    /// The runtime and the client (mutable: transactions need it), for
    /// `let (rt, c) = pg.parts_mut(); rt.block_on(async { let tx = c.transaction().await?; … })`.
    pub fn parts_mut(&mut self) -> (&tokio::runtime::Runtime, &mut tokio_postgres::Client) {
        let rt = self.rt.as_ref().expect("the runtime lives until the drop");
        (rt, &mut self.client)
    }

    /// What cancels, from any thread, the statement this connection runs on the server
    /// ([`Cancel::cancel`]).
    pub fn cancel_handle(&self) -> Cancel {
        Cancel {
            token: self.client.cancel_token(),
            config: self.config.clone(),
        }
    }

    /// Runs `sql` (one or more statements, no parameters, no rows back).
    pub fn batch_execute(&self, sql: &str) -> Result<()> {
        Ok(self.runtime().block_on(self.client.batch_execute(sql))?)
    }
}
