//! Where and how to connect: a `postgres://` URL parsed into a [`PgConfig`], and the password
//! looked up the way libpq does (the URL, else `PGPASSWORD`, else the password file).
//!
//! The URL format is libpq's connection URI
//! (<https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-CONNSTRING>):
//! `postgres[ql]://[user[:password]@][host][:port][/dbname][?param=value&…]`, percent-encoded,
//! with the parameters `sslmode`, `sslrootcert`, `connect_timeout` (seconds),
//! `application_name`, `passfile`, and `host`, `port`, `user`, `password`, `dbname` (which
//! override the parts before `?`). A host starting with `/` is a unix socket folder. One host
//! only. Missing parts default as libpq's do: `PGHOST`/`PGPORT`/`PGUSER`/`PGDATABASE`, else
//! `localhost`, 5432, the login name (`USER`), the user name.
//!
//! Nothing here ever prints a password: [`PgConfig`]'s `Display` and `Debug` show `****` in its
//! place, and parse errors name the part that is wrong, never the URL.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{Error, Result};

/// How a connection uses TLS (libpq's `sslmode`; the default is `prefer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Plain TCP.
    Disable,
    /// TLS when the server offers it, else plain TCP; the certificate is not verified (unless
    /// `sslrootcert` is given: then it must chain to it).
    Prefer,
    /// TLS or no connection; the certificate is not verified (unless `sslrootcert` is given:
    /// then it must chain to it, as libpq does with a root certificate file).
    Require,
    /// TLS, and the server's certificate must chain to a trusted root (`sslrootcert`, else
    /// `~/.postgresql/root.crt` when it exists, else the system's roots); any host name.
    VerifyCa,
    /// As `VerifyCa`, and the certificate must name the host connected to.
    VerifyFull,
}

impl SslMode {
    /// The mode's name in a URL (`disable`, `prefer`, `require`, `verify-ca`, `verify-full`).
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    fn parse(s: &str) -> Result<SslMode> {
        Ok(match s {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            // libpq's `allow` tries plain TCP first; nothing here needs it.
            other => {
                return Err(Error::Url(format!(
                    "sslmode={other} is not one of disable, prefer, require, verify-ca, verify-full"
                )));
            }
        })
    }
}

/// Where the server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// A host name or an IP address (IPv6 without brackets).
    Tcp(String),
    /// The folder holding the server's unix socket (`.s.PGSQL.<port>`).
    Socket(PathBuf),
}

/// A parsed connection URL. `Display` gives it back as a URL with the password masked
/// (`postgres://me:****@db.example:5432/memtrail?sslmode=verify-full`).
#[derive(Clone, PartialEq, Eq)]
pub struct PgConfig {
    pub host: Host,
    pub port: u16,
    pub user: String,
    pub dbname: String,
    /// The password given in the URL (`user:password@` or `?password=`); see
    /// [`PgConfig::resolve_password`] for the other sources.
    pub password: Option<String>,
    pub sslmode: SslMode,
    /// `sslrootcert`: a PEM file of trusted root certificates, or `system` for the system's.
    pub sslrootcert: Option<String>,
    /// `connect_timeout`; `None`: 10 s.
    pub connect_timeout: Option<Duration>,
    pub application_name: Option<String>,
    /// `passfile`: the password file to read instead of `PGPASSFILE` / `~/.pgpass`.
    pub passfile: Option<PathBuf>,
}

impl fmt::Debug for PgConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PgConfig({self})")
    }
}

impl fmt::Display for PgConfig {
    /// The URL with the password replaced by `****` (and only the parameters that are set).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "postgres://{}", encode(&self.user))?;
        if self.password.is_some() {
            f.write_str(":****")?;
        }
        f.write_str("@")?;
        if let Host::Tcp(h) = &self.host {
            if h.contains(':') {
                write!(f, "[{h}]")?;
            } else {
                f.write_str(&encode(h))?;
            }
        }
        write!(f, ":{}/{}", self.port, encode(&self.dbname))?;
        let mut params = Vec::new();
        if let Host::Socket(dir) = &self.host {
            params.push(format!("host={}", encode(&dir.to_string_lossy())));
        }
        if self.sslmode != SslMode::Prefer {
            params.push(format!("sslmode={}", self.sslmode.as_str()));
        }
        if let Some(c) = &self.sslrootcert {
            params.push(format!("sslrootcert={}", encode(c)));
        }
        if let Some(t) = self.connect_timeout {
            params.push(format!("connect_timeout={}", t.as_secs()));
        }
        if let Some(a) = &self.application_name {
            params.push(format!("application_name={}", encode(a)));
        }
        if let Some(p) = &self.passfile {
            params.push(format!("passfile={}", encode(&p.to_string_lossy())));
        }
        if !params.is_empty() {
            write!(f, "?{}", params.join("&"))?;
        }
        Ok(())
    }
}

/// What [`PgConfig::parse`] reads from the environment for the parts a URL leaves out.
#[derive(Debug, Clone, Default)]
pub struct EnvDefaults {
    pub host: Option<String>,
    pub port: Option<String>,
    pub user: Option<String>,
    pub dbname: Option<String>,
}

impl EnvDefaults {
    /// `PGHOST`, `PGPORT`, `PGUSER` (else `USER`), `PGDATABASE` of this process.
    pub fn from_env() -> EnvDefaults {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        EnvDefaults {
            host: var("PGHOST"),
            port: var("PGPORT"),
            user: var("PGUSER").or_else(|| var("USER")),
            dbname: var("PGDATABASE"),
        }
    }
}

impl PgConfig {
    /// Parses a `postgres://` or `postgresql://` URL (see the module doc), taking defaults from
    /// this process's environment ([`EnvDefaults::from_env`]).
    ///
    /// Errors: [`Error::Url`] saying which part is wrong (never quoting the URL, which may hold
    /// a password).
    pub fn parse(url: &str) -> Result<PgConfig> {
        Self::parse_with(url, &EnvDefaults::from_env())
    }

    /// [`PgConfig::parse`] with the given defaults instead of the environment's.
    pub fn parse_with(url: &str, defaults: &EnvDefaults) -> Result<PgConfig> {
        let rest = url
            .strip_prefix("postgres://")
            .or_else(|| url.strip_prefix("postgresql://"))
            .ok_or_else(|| {
                Error::Url("a PostgreSQL URL starts with postgres:// or postgresql://".into())
            })?;
        let (before_query, query) = match rest.split_once('?') {
            Some((b, q)) => (b, Some(q)),
            None => (rest, None),
        };
        let (authority, path) = match before_query.find('/') {
            Some(i) => (&before_query[..i], Some(&before_query[i + 1..])),
            None => (before_query, None),
        };
        // The user info ends at the last '@' (a password may hold '@' unencoded).
        let (userinfo, hostport) = match authority.rfind('@') {
            Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
            None => (None, authority),
        };
        let (mut user, mut password) = (None, None);
        if let Some(ui) = userinfo {
            let (u, p) = match ui.split_once(':') {
                Some((u, p)) => (u, Some(p)),
                None => (ui, None),
            };
            if !u.is_empty() {
                user = Some(decode(u, "the user name")?);
            }
            if let Some(p) = p {
                password = Some(decode(p, "the password")?);
            }
        }
        let (mut host, mut port) = (None, None);
        if hostport.contains(',') {
            return Err(Error::Url("more than one host is not supported".into()));
        }
        if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or_else(|| Error::Url("an IPv6 host lacks its closing ]".into()))?;
            host = Some(h.to_string());
            if let Some(p) = after.strip_prefix(':') {
                port = Some(p.to_string());
            } else if !after.is_empty() {
                return Err(Error::Url("unexpected text after the IPv6 host".into()));
            }
        } else {
            let (h, p) = match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            };
            if !h.is_empty() {
                host = Some(decode(h, "the host")?);
            }
            port = p.map(str::to_string);
        }
        let mut dbname = match path {
            Some(p) if !p.is_empty() => Some(decode(p, "the database name")?),
            _ => None,
        };
        let mut config = PgConfig {
            host: Host::Tcp(String::new()),
            port: 5432,
            user: String::new(),
            dbname: String::new(),
            password: None,
            sslmode: SslMode::Prefer,
            sslrootcert: None,
            connect_timeout: None,
            application_name: None,
            passfile: None,
        };
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').ok_or_else(|| {
                Error::Url(format!(
                    "the parameter {} has no value",
                    pair.chars().take(40).collect::<String>()
                ))
            })?;
            let key = decode(k, "a parameter name")?;
            let value = decode(v, &format!("the value of {key}"))?;
            match key.as_str() {
                "sslmode" => config.sslmode = SslMode::parse(&value)?,
                "sslrootcert" => config.sslrootcert = Some(value),
                "connect_timeout" => {
                    let secs: u64 = value.parse().map_err(|_| {
                        Error::Url("connect_timeout is not a whole number of seconds".into())
                    })?;
                    config.connect_timeout = (secs > 0).then(|| Duration::from_secs(secs));
                }
                "application_name" => config.application_name = Some(value),
                "passfile" => config.passfile = Some(PathBuf::from(value)),
                "host" => host = Some(value),
                "port" => port = Some(value),
                "user" => user = Some(value),
                "password" => password = Some(value),
                "dbname" => dbname = Some(value),
                other => {
                    return Err(Error::Url(format!(
                        "unknown parameter {other} (known: sslmode, sslrootcert, \
                         connect_timeout, application_name, passfile, host, port, user, \
                         password, dbname)"
                    )));
                }
            }
        }
        let host = host
            .filter(|h| !h.is_empty())
            .or_else(|| defaults.host.clone())
            .unwrap_or_else(|| "localhost".into());
        config.host = if host.starts_with('/') {
            Host::Socket(PathBuf::from(host))
        } else {
            Host::Tcp(host)
        };
        if let Some(p) = port
            .filter(|p| !p.is_empty())
            .or_else(|| defaults.port.clone())
        {
            config.port = p
                .parse()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| Error::Url("the port is not a number from 1 to 65535".into()))?;
        }
        config.user = user
            .filter(|u| !u.is_empty())
            .or_else(|| defaults.user.clone())
            .ok_or_else(|| Error::Url("no user name (in the URL, PGUSER or USER)".into()))?;
        config.dbname = dbname
            .filter(|d| !d.is_empty())
            .or_else(|| defaults.dbname.clone())
            .unwrap_or_else(|| config.user.clone());
        config.password = password;
        Ok(config)
    }

    /// The password to log in with: the URL's, else `sources.pgpassword` (`PGPASSWORD`), else
    /// the first matching line of the password file (`passfile`, else `sources.passfile`:
    /// `PGPASSFILE` or `~/.pgpass`), else `None`. The password file is read as libpq reads it
    /// (<https://www.postgresql.org/docs/15/libpq-pgpass.html>): `host:port:db:user:password`
    /// lines, `*` matching anything in the first four fields, `\:` and `\\` escapes, `#`
    /// comments; a unix socket host matches `localhost`; a file readable or writable by group
    /// or others (mode above 0600) is ignored, with the warning libpq gives returned in
    /// `warnings`.
    pub fn resolve_password(
        &self,
        sources: &PasswordSources,
        warnings: &mut Vec<String>,
    ) -> Option<String> {
        if let Some(p) = &self.password {
            return Some(p.clone());
        }
        if let Some(p) = sources.pgpassword.as_ref().filter(|p| !p.is_empty()) {
            return Some(p.clone());
        }
        let file = self.passfile.as_ref().or(sources.passfile.as_ref())?;
        let host = match &self.host {
            Host::Tcp(h) => h.clone(),
            Host::Socket(_) => "localhost".to_string(),
        };
        pgpass_lookup(
            file,
            &host,
            &self.port.to_string(),
            &self.dbname,
            &self.user,
            warnings,
        )
    }
}

/// Where a password may come from besides the URL.
#[derive(Debug, Clone, Default)]
pub struct PasswordSources {
    /// `PGPASSWORD`.
    pub pgpassword: Option<String>,
    /// `PGPASSFILE`, else `~/.pgpass` (`HOME`).
    pub passfile: Option<PathBuf>,
}

impl PasswordSources {
    /// This process's `PGPASSWORD` and `PGPASSFILE` / `$HOME/.pgpass`.
    pub fn from_env() -> PasswordSources {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        PasswordSources {
            pgpassword: var("PGPASSWORD").and_then(|v| v.into_string().ok()),
            passfile: var("PGPASSFILE")
                .map(PathBuf::from)
                .or_else(|| var("HOME").map(|h| Path::new(&h).join(".pgpass"))),
        }
    }
}

/// The password of the first line of the password file `file` matching (host, port, db,
/// user); see [`PgConfig::resolve_password`].
fn pgpass_lookup(
    file: &Path,
    host: &str,
    port: &str,
    db: &str,
    user: &str,
    warnings: &mut Vec<String>,
) -> Option<String> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            warnings.push(format!(
                "password file {} has group or world access; permissions should be u=rw (0600) \
                 or less: ignored",
                file.display()
            ));
            return None;
        }
    }
    let text = std::fs::read_to_string(file).ok()?;
    let wanted = [host, port, db, user];
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields = pgpass_fields(line);
        if fields.len() < 5 {
            continue;
        }
        let matches = fields[..4]
            .iter()
            .zip(wanted)
            .all(|(f, w)| f.0 == "*" && !f.1 || f.0 == w);
        if matches {
            return Some(fields[4].0.clone());
        }
    }
    None
}

/// A password-file line split on unescaped `:` into (unescaped field, whether the field was
/// written `\*`, a literal star rather than the wildcard). As in libpq, the password (the fifth
/// field) also ends at an unescaped `:`.
fn pgpass_fields(line: &str) -> Vec<(String, bool)> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut escaped_star = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(n) => {
                    if n == '*' && cur.is_empty() {
                        escaped_star = true;
                    }
                    cur.push(n);
                }
                None => cur.push('\\'),
            },
            ':' => {
                fields.push((std::mem::take(&mut cur), escaped_star));
                escaped_star = false;
            }
            c => cur.push(c),
        }
    }
    fields.push((cur, escaped_star));
    fields
}

/// Percent-decodes `s`; `what` names the part for the error.
fn decode(s: &str, what: &str) -> Result<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| {
                    Error::Url(if what == "the password" {
                        format!(
                            "{what} has a bad %-escape: percent-encode special characters in \
                             the password (@ → %40, : → %3A, / → %2F, % → %25)"
                        )
                    } else {
                        format!("{what} has a bad %-escape")
                    })
                })?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| Error::Url(format!("{what} is not UTF-8 once decoded")))
}

/// Percent-encodes what a URL part cannot hold as is.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `url` with any password in it replaced by `****` (the `user:password@` part and a
/// `password=` parameter), for showing a URL that may not even parse. Text that is not a
/// `postgres://` URL is returned as `****` whole when it contains `@` (it might hold a
/// password), else unchanged.
pub fn mask_url(url: &str) -> String {
    memtrail_runtime::store::masked_url(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> EnvDefaults {
        EnvDefaults::default()
    }

    #[test]
    fn full_url_parses_and_displays_masked() {
        let c = PgConfig::parse_with(
            "postgres://me:s%40cr%3At@db.example:6543/mem%20trail?sslmode=verify-full&sslrootcert=/etc/ca.pem&connect_timeout=3&application_name=memtrail",
            &none(),
        )
        .unwrap();
        assert_eq!(c.host, Host::Tcp("db.example".into()));
        assert_eq!(c.port, 6543);
        assert_eq!(c.user, "me");
        assert_eq!(c.password.as_deref(), Some("s@cr:t"));
        assert_eq!(c.dbname, "mem trail");
        assert_eq!(c.sslmode, SslMode::VerifyFull);
        assert_eq!(c.sslrootcert.as_deref(), Some("/etc/ca.pem"));
        assert_eq!(c.connect_timeout, Some(Duration::from_secs(3)));
        assert_eq!(
            c.to_string(),
            "postgres://me:****@db.example:6543/mem%20trail?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&connect_timeout=3&application_name=memtrail"
        );
        assert_eq!(format!("{c:?}"), format!("PgConfig({c})"));
        assert!(!format!("{c:?}").contains("s@cr"));
    }

    #[test]
    fn defaults_fill_what_the_url_leaves_out() {
        let d = EnvDefaults {
            host: Some("/run/pg".into()),
            port: Some("5433".into()),
            user: Some("alice".into()),
            dbname: None,
        };
        let c = PgConfig::parse_with("postgresql://", &d).unwrap();
        assert_eq!(c.host, Host::Socket("/run/pg".into()));
        assert_eq!(
            (c.port, c.user.as_str(), c.dbname.as_str()),
            (5433, "alice", "alice")
        );
        assert_eq!(c.sslmode, SslMode::Prefer);
        assert_eq!(c.password, None);
        assert_eq!(
            c.to_string(),
            "postgres://alice@:5433/alice?host=%2Frun%2Fpg"
        );
        let c = PgConfig::parse_with("postgres://bob@[::1]:7/x?password=pw&port=8", &d).unwrap();
        assert_eq!(c.host, Host::Tcp("::1".into()));
        assert_eq!((c.port, c.password.as_deref()), (8, Some("pw")));
        assert_eq!(c.to_string(), "postgres://bob:****@[::1]:8/x");
        let c = PgConfig::parse_with("postgres://h", &none());
        assert_eq!(
            c.unwrap_err().to_string(),
            "bad PostgreSQL URL: no user name (in the URL, PGUSER or USER)"
        );
    }

    #[test]
    fn bad_urls_are_refused_without_quoting_them() {
        let cases = [
            (
                "mysql://u:hunter2@h/db",
                "a PostgreSQL URL starts with postgres:// or postgresql://",
            ),
            (
                "postgres://u:hunter2@h:99999/db",
                "the port is not a number from 1 to 65535",
            ),
            (
                "postgres://u:hunter2@h/db?sslmode=allow",
                "sslmode=allow is not one of disable, prefer, require, verify-ca, verify-full",
            ),
            (
                "postgres://u:hunt%zzer2@h/db",
                "the password has a bad %-escape: percent-encode special characters in the password (@ → %40, : → %3A, / → %2F, % → %25)",
            ),
            (
                "postgres://u:hunter2@h1,h2/db",
                "more than one host is not supported",
            ),
            (
                "postgres://u:hunter2@h/db?connect_timeout=x",
                "connect_timeout is not a whole number of seconds",
            ),
            (
                "postgres://u:hunter2@h/db?foo=1",
                "unknown parameter foo (known: sslmode, sslrootcert, connect_timeout, application_name, passfile, host, port, user, password, dbname)",
            ),
        ];
        for (url, msg) in cases {
            let e = PgConfig::parse_with(url, &none()).unwrap_err().to_string();
            assert_eq!(e, format!("bad PostgreSQL URL: {msg}"), "{url}");
            assert!(!e.contains("hunter2"));
        }
    }

    #[test]
    fn mask_url_hides_passwords_even_in_bad_urls() {
        assert_eq!(
            mask_url("postgres://u:pw@h:1/d?sslmode=require"),
            "postgres://u:****@h:1/d?sslmode=require"
        );
        assert_eq!(
            mask_url("postgres://u@h/d?password=pw&x=1"),
            "postgres://u@h/d?password=****&x=1"
        );
        assert_eq!(mask_url("postgres://u:p@w@h/d"), "postgres://u:****@h/d");
        assert_eq!(mask_url("postgres://h/d"), "postgres://h/d");
        assert_eq!(mask_url("u:pw@h"), "****");
        assert_eq!(mask_url("nonsense"), "nonsense");
    }

    fn pgpass(text: &str, mode: u32) -> (tempfile::TempDir, PathBuf) {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgpass");
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        (dir, path)
    }

    #[test]
    fn password_comes_from_url_then_pgpassword_then_pgpass() {
        let (_d, file) = pgpass(
            "# comment\nother:*:*:*:nope\ndb.example:5432:memtrail:me:from\\:pass\\\\file\n*:*:*:me:star\\:with\\:colons:ignored\n",
            0o600,
        );
        let sources = |pw: Option<&str>| PasswordSources {
            pgpassword: pw.map(str::to_string),
            passfile: Some(file.clone()),
        };
        let mut w = Vec::new();
        let c = PgConfig::parse_with("postgres://me:url@db.example/memtrail", &none()).unwrap();
        assert_eq!(
            c.resolve_password(&sources(Some("env")), &mut w).as_deref(),
            Some("url")
        );
        let c = PgConfig::parse_with("postgres://me@db.example/memtrail", &none()).unwrap();
        assert_eq!(
            c.resolve_password(&sources(Some("env")), &mut w).as_deref(),
            Some("env")
        );
        assert_eq!(
            c.resolve_password(&sources(None), &mut w).as_deref(),
            Some("from:pass\\file")
        );
        let c = PgConfig::parse_with("postgres://me@db.example:5433/memtrail", &none()).unwrap();
        assert_eq!(
            c.resolve_password(&sources(None), &mut w).as_deref(),
            Some("star:with:colons")
        );
        let c = PgConfig::parse_with("postgres://you@db.example/memtrail", &none()).unwrap();
        assert_eq!(c.resolve_password(&sources(None), &mut w), None);
        // A unix socket matches `localhost`.
        let (_d2, f2) = pgpass("localhost:5432:d:u:sock\n", 0o600);
        let c = PgConfig::parse_with("postgres://u@/d?host=/run/pg", &none()).unwrap();
        let s = PasswordSources {
            pgpassword: None,
            passfile: Some(f2),
        };
        assert_eq!(c.resolve_password(&s, &mut w).as_deref(), Some("sock"));
        assert!(w.is_empty());
    }

    #[test]
    fn pgpass_with_group_access_is_ignored_with_a_warning() {
        let (_d, file) = pgpass("*:*:*:*:secret\n", 0o640);
        let c = PgConfig::parse_with("postgres://me@h/d", &none()).unwrap();
        let s = PasswordSources {
            pgpassword: None,
            passfile: Some(file.clone()),
        };
        let mut w = Vec::new();
        assert_eq!(c.resolve_password(&s, &mut w), None);
        assert_eq!(
            w,
            [format!(
                "password file {} has group or world access; permissions should be u=rw (0600) or less: ignored",
                file.display()
            )]
        );
        // `passfile=` in the URL wins over the sources' file.
        let (_d2, f2) = pgpass("h:*:d:me:mine\n", 0o600);
        let c = PgConfig::parse_with(
            &format!("postgres://me@h/d?passfile={}", f2.display()),
            &none(),
        )
        .unwrap();
        assert_eq!(c.resolve_password(&s, &mut w).as_deref(), Some("mine"));
    }

    #[test]
    fn pgpass_escaped_star_is_a_literal_star() {
        let (_d, file) = pgpass("\\*:*:*:*:literal\n*:*:*:*:wild\n", 0o600);
        let s = PasswordSources {
            pgpassword: None,
            passfile: Some(file),
        };
        let mut w = Vec::new();
        let c = PgConfig::parse_with("postgres://me@h/d", &none()).unwrap();
        assert_eq!(c.resolve_password(&s, &mut w).as_deref(), Some("wild"));
        let c = PgConfig::parse_with("postgres://me@*/d", &none()).unwrap();
        assert_eq!(c.resolve_password(&s, &mut w).as_deref(), Some("literal"));
    }
}
