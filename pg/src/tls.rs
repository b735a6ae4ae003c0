//! TLS for the connection (rustls with the `ring` provider), per `sslmode` (see [`SslMode`]).
//!
//! Trusted roots for `verify-ca` / `verify-full`: `sslrootcert` (a PEM file; `system` for the
//! system's store), else `~/.postgresql/root.crt` when it exists (libpq's default file), else the
//! system's store through `rustls-native-certs` (the roots the OS and its administrator trust,
//! a corporate CA included, updated with the OS; `webpki-roots` would pin Mozilla's list into
//! the binary and miss such CAs). `require` and `prefer` encrypt without checking the
//! certificate, as libpq does, unless `sslrootcert` is given (then the chain is checked, not
//! the name).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::config::{PgConfig, SslMode};
use crate::{Error, Result};

/// The rustls client configuration for `config`'s `sslmode` (`None` for `disable`).
///
/// Errors: [`Error::Tls`] when the root certificate file cannot be read or holds no
/// certificate, or the system's store has none.
pub fn client_config(config: &PgConfig, home: Option<&Path>) -> Result<Option<ClientConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?;
    let verify = |roots: RootCertStore, check_name: bool| -> Result<Arc<dyn ServerCertVerifier>> {
        let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| Error::Tls(e.to_string()))?;
        Ok(if check_name {
            inner
        } else {
            Arc::new(AnyName(inner))
        })
    };
    let verifier: Arc<dyn ServerCertVerifier> = match config.sslmode {
        SslMode::Disable => return Ok(None),
        SslMode::Prefer | SslMode::Require => match &config.sslrootcert {
            Some(_) => verify(roots(config, home)?, false)?,
            None => Arc::new(NoCheck(provider.clone())),
        },
        SslMode::VerifyCa => verify(roots(config, home)?, false)?,
        SslMode::VerifyFull => verify(roots(config, home)?, true)?,
    };
    Ok(Some(
        builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth(),
    ))
}

/// The trusted roots (see the module doc).
fn roots(config: &PgConfig, home: Option<&Path>) -> Result<RootCertStore> {
    let default_file = home.map(|h| h.join(".postgresql/root.crt"));
    let file: Option<PathBuf> = match config.sslrootcert.as_deref() {
        Some("system") => None,
        Some(f) => Some(PathBuf::from(f)),
        None => default_file.filter(|f| f.is_file()),
    };
    let mut store = RootCertStore::empty();
    match file {
        Some(f) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&f)
                .and_then(|it| it.collect::<std::result::Result<_, _>>())
                .map_err(|e| {
                    Error::Tls(format!(
                        "cannot read the root certificate file {}: {e}",
                        f.display()
                    ))
                })?;
            let (added, _) = store.add_parsable_certificates(certs);
            if added == 0 {
                return Err(Error::Tls(format!(
                    "the root certificate file {} holds no usable certificate",
                    f.display()
                )));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                return Err(Error::Tls(
                    "no trusted root certificate in the system's store (give sslrootcert=FILE)"
                        .into(),
                ));
            }
        }
    }
    Ok(store)
}

/// `verify-ca`: the chain must be valid, the name may be any.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName))
            | Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `require` / `prefer` without a root file: encrypted, the certificate not checked (the
/// handshake's signatures still are).
#[derive(Debug)]
struct NoCheck(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoCheck {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
