//! TLS for client connections (rustls, ring provider): the server configuration built from PEM
//! files, and how a negotiated session is named to clients (`Ssl_version`, `Ssl_cipher`, with
//! OpenSSL's spellings, which is what MySQL reports and clients print).
//!
//! A connection switches to TLS when its first packet is an SSLRequest (the 32-byte prefix of
//! a HandshakeResponse41 with CLIENT_SSL set); see `conn`.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{ProtocolVersion, RootCertStore, ServerConfig, ServerConnection};

/// Why a TLS configuration could not be built; the text names the file's role.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("no certificate found in the {0} PEM")]
    NoCertificate(&'static str),
    #[error("cannot read the {what} PEM: {detail}")]
    Pem { what: &'static str, detail: String },
    #[error("invalid TLS setup: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("invalid CA for client certificates: {0}")]
    ClientVerifier(String),
}

/// A server TLS configuration from the PEM text of the certificate chain (the server's
/// certificate first), its private key, and optionally a CA: a client that presents a
/// certificate must then chain to it (clients without one are still accepted, as MySQL does
/// unless an account requires X509).
pub fn server_config(
    cert_chain_pem: &[u8],
    key_pem: &[u8],
    client_ca_pem: Option<&[u8]>,
) -> Result<Arc<ServerConfig>, TlsError> {
    let certs = read_certs(cert_chain_pem, "server certificate")?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsError::Pem {
        what: "server key",
        detail: e.to_string(),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let config = if let Some(ca) = client_ca_pem {
        let mut roots = RootCertStore::empty();
        for cert in read_certs(ca, "CA")? {
            roots.add(cert)?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .allow_unauthenticated()
            .build()
            .map_err(|e| TlsError::ClientVerifier(e.to_string()))?;
        builder
            .with_client_cert_verifier(verifier)
            .with_single_cert(certs, key)?
    } else {
        builder.with_no_client_auth().with_single_cert(certs, key)?
    };
    Ok(Arc::new(config))
}

fn read_certs(pem: &[u8], what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            what,
            detail: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate(what));
    }
    Ok(certs)
}

/// What a connection's TLS session is, as `SHOW STATUS` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSession {
    /// `TLSv1.2` or `TLSv1.3`.
    pub version: String,
    /// OpenSSL's name of the cipher suite, e.g. `TLS_AES_256_GCM_SHA384`.
    pub cipher: String,
}

impl TlsSession {
    pub fn of(conn: &ServerConnection) -> TlsSession {
        let version = match conn.protocol_version() {
            Some(ProtocolVersion::TLSv1_3) => "TLSv1.3".to_owned(),
            Some(ProtocolVersion::TLSv1_2) => "TLSv1.2".to_owned(),
            other => format!("{other:?}"),
        };
        let suite = conn
            .negotiated_cipher_suite()
            .and_then(|s| s.suite().as_str())
            .unwrap_or("unknown");
        TlsSession {
            version,
            cipher: openssl_cipher_name(suite),
        }
    }
}

/// rustls's (IANA-style) suite name in OpenSSL's spelling: TLS 1.3 suites keep their IANA
/// names; TLS 1.2 ones become `ECDHE-RSA-AES256-GCM-SHA384` and the like.
fn openssl_cipher_name(rustls_name: &str) -> String {
    if let Some(rest) = rustls_name.strip_prefix("TLS13_") {
        return format!("TLS_{rest}");
    }
    let Some(rest) = rustls_name.strip_prefix("TLS_") else {
        return rustls_name.to_owned();
    };
    let Some((kx, cipher)) = rest.split_once("_WITH_") else {
        return rustls_name.to_owned();
    };
    let cipher = cipher
        .replace("AES_128_GCM", "AES128-GCM")
        .replace("AES_256_GCM", "AES256-GCM")
        .replace("CHACHA20_POLY1305_SHA256", "CHACHA20-POLY1305");
    format!("{}-{}", kx.replace('_', "-"), cipher.replace('_', "-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cipher_names_follow_openssl() {
        assert_eq!(
            openssl_cipher_name("TLS13_AES_256_GCM_SHA384"),
            "TLS_AES_256_GCM_SHA384"
        );
        assert_eq!(
            openssl_cipher_name("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
            "ECDHE-RSA-AES256-GCM-SHA384"
        );
        assert_eq!(
            openssl_cipher_name("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
            "ECDHE-ECDSA-CHACHA20-POLY1305"
        );
    }

    #[test]
    fn bad_pem_is_a_named_error() {
        let err = server_config(b"not a pem", b"", None).unwrap_err();
        assert!(err.to_string().contains("server certificate"), "{err}");
    }
}
