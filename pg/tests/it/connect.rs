//! Connecting: TLS modes against the test cluster's certificate, passwords from the URL,
//! `PGPASSWORD` and a password file, and errors that never show the password.

use memtrail_pg::{PasswordSources, Pg, PgConfig};

/// Whether the connection is encrypted, as the server sees it.
fn ssl_in_use(pg: &Pg) -> bool {
    pg.block_on(pg.client().query_one(
        "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
        &[],
    ))
    .unwrap()
    .get(0)
}

fn no_password() -> PasswordSources {
    PasswordSources::default()
}

#[test]
fn tls_modes_encrypt_and_verify_as_asked() {
    let Some((url, _)) = crate::fresh("tls_modes") else {
        return;
    };
    let Ok(ca) = std::env::var("MEMTRAIL_TEST_PG_CA") else {
        eprintln!(
            "note: MEMTRAIL_TEST_PG_CA is not set (pg-test-server without --tls); TLS checks skipped"
        );
        return;
    };
    let connect = |params: &str| {
        Pg::connect_with(
            &PgConfig::parse(&format!("{url}?{params}")).unwrap(),
            &no_password(),
        )
    };
    assert!(!ssl_in_use(&connect("sslmode=disable").unwrap()));
    assert!(ssl_in_use(&connect("sslmode=prefer").unwrap()));
    assert!(ssl_in_use(&connect("sslmode=require").unwrap()));
    assert!(ssl_in_use(
        &connect(&format!("sslmode=verify-ca&sslrootcert={ca}")).unwrap()
    ));
    assert!(ssl_in_use(
        &connect(&format!("sslmode=verify-full&sslrootcert={ca}")).unwrap()
    ));
    // The certificate names localhost too.
    let localhost = url.replace("127.0.0.1", "localhost");
    let pg = Pg::connect_with(
        &PgConfig::parse(&format!("{localhost}?sslmode=verify-full&sslrootcert={ca}")).unwrap(),
        &no_password(),
    )
    .unwrap();
    assert!(ssl_in_use(&pg));
    // The system's roots do not know the test CA: verification fails, and says why.
    let err = connect("sslmode=verify-full&sslrootcert=system")
        .err()
        .unwrap();
    let text = err.to_string();
    assert!(
        matches!(err, memtrail_pg::Error::Connect { .. }) && text.contains("UnknownIssuer"),
        "{text}"
    );
    // A root file that is not a certificate is refused before connecting.
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("bogus.pem");
    std::fs::write(&bogus, "not a certificate\n").unwrap();
    let err = connect(&format!(
        "sslmode=verify-full&sslrootcert={}",
        bogus.display()
    ))
    .err()
    .unwrap();
    assert_eq!(
        err.to_string(),
        format!(
            "TLS: the root certificate file {} holds no usable certificate",
            bogus.display()
        )
    );
}

/// A login role that must give its password (a member of the cluster's `memtrail_password`
/// group, see scripts/pg-test-server), made with the superuser connection `admin`.
fn password_role(admin: &Pg, name: &str, password: &str) {
    admin
        .batch_execute(&format!(
            "CREATE ROLE {name} LOGIN PASSWORD '{password}' IN ROLE memtrail_password"
        ))
        .unwrap();
}

#[test]
fn password_comes_from_url_pgpassword_or_pgpass_and_is_never_shown() {
    let Some((url, admin)) = crate::fresh("passwords") else {
        return;
    };
    let db = url.rsplit('/').next().unwrap().to_string();
    let role = format!("r_{db}");
    let secret = "Hunter2-s3cret";
    password_role(&admin, &role, secret);
    let port = url.rsplit(':').next().unwrap().split('/').next().unwrap();
    let base = format!("postgres://{role}@127.0.0.1:{port}/{db}?sslmode=disable");
    let with_pw = format!("postgres://{role}:{secret}@127.0.0.1:{port}/{db}?sslmode=disable");
    let user_of = |pg: &Pg| -> String {
        pg.block_on(pg.client().query_one("SELECT current_user::text", &[]))
            .unwrap()
            .get(0)
    };
    // From the URL.
    let pg = Pg::connect_with(&PgConfig::parse(&with_pw).unwrap(), &no_password()).unwrap();
    assert_eq!(user_of(&pg), role);
    assert_eq!(
        pg.target(),
        format!(
            "postgres://{}:****@127.0.0.1:{port}/{db}?sslmode=disable",
            role
        )
    );
    // From PGPASSWORD.
    let env = PasswordSources {
        pgpassword: Some(secret.into()),
        passfile: None,
    };
    assert_eq!(
        user_of(&Pg::connect_with(&PgConfig::parse(&base).unwrap(), &env).unwrap()),
        role
    );
    // From a password file (0600), a wildcard line.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pgpass");
    std::fs::write(&file, format!("127.0.0.1:{port}:*:{role}:{secret}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let env = PasswordSources {
        pgpassword: None,
        passfile: Some(file.clone()),
    };
    let pg = Pg::connect_with(&PgConfig::parse(&base).unwrap(), &env).unwrap();
    assert_eq!(user_of(&pg), role);
    assert!(pg.warnings().is_empty());
    // The same file readable by others is ignored: no password, authentication fails.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = Pg::connect_with(&PgConfig::parse(&base).unwrap(), &env)
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot connect to postgres://{role}@127.0.0.1:{port}/{db}?sslmode=disable: invalid \
             configuration: password missing; the server asks for a password and none was \
             found: set PGPASSWORD, add a line to ~/.pgpass (mode 0600), or put it in the URL; \
             password file {} has group or world access; permissions should be u=rw (0600) or \
             less: ignored",
            file.display()
        )
    );
    // A wrong password: the error names the masked URL and never the password.
    let wrong = with_pw.replace(secret, "Wrong-Secret-9");
    let err = Pg::connect_with(&PgConfig::parse(&wrong).unwrap(), &no_password())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "cannot connect to postgres://{role}:****@127.0.0.1:{port}/{db}?sslmode=disable: "
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "password authentication failed for user \"{role}\""
        )),
        "{err}"
    );
    assert!(
        !err.contains("Wrong-Secret-9") && !err.contains(secret),
        "{err}"
    );
}

#[test]
fn a_closed_port_is_a_connect_error_with_the_masked_url() {
    let config = PgConfig::parse("postgres://u:pw@127.0.0.1:1/d?sslmode=disable").unwrap();
    let err = Pg::connect_with(&config, &no_password())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.starts_with("cannot connect to postgres://u:****@127.0.0.1:1/d?sslmode=disable: "),
        "{err}"
    );
    assert!(err.contains("Connection refused"), "{err}");
}
