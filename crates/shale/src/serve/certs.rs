//! The TLS certificates and the RSA key pair that `shale serve` keeps in the data directory.
//! Generated on first start when missing, as MySQL 8 does (`auto_generate_certs`,
//! `sha256_password_auto_generate_rsa_keys`), with MySQL's file names:
//!
//! | file | what |
//! | --- | --- |
//! | `ca.pem`, `ca-key.pem` | a self-signed CA (ECDSA P-256) |
//! | `server-cert.pem`, `server-key.pem` | the server's certificate, signed by the CA, for `localhost`, `127.0.0.1` and `::1` |
//! | `private_key.pem`, `public_key.pem` | the RSA key pair (2048 bits) for `caching_sha2_password` on plain connections |
//!
//! Key files are mode 0600. Invariant: existing files are never replaced; a partial set of
//! the TLS files is an error rather than a silent regeneration (a client may pin the CA).

use std::fs::OpenOptions;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use shale_server::RsaKeyPair;

use crate::output::Failure;

pub const CA_CERT: &str = "ca.pem";
const CA_KEY: &str = "ca-key.pem";
pub const SERVER_CERT: &str = "server-cert.pem";
pub const SERVER_KEY: &str = "server-key.pem";
const RSA_PRIVATE: &str = "private_key.pem";
const RSA_PUBLIC: &str = "public_key.pem";

/// Where the server's TLS files are.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// A CA that client certificates must chain to, if any.
    pub client_ca: Option<PathBuf>,
}

/// Creates the CA and server certificate in `datadir` unless they exist; true if it did.
pub fn ensure_certificates(datadir: &Path) -> Result<bool, Failure> {
    let names = [CA_CERT, CA_KEY, SERVER_CERT, SERVER_KEY];
    let present: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| datadir.join(n).exists())
        .collect();
    if present.len() == names.len() {
        return Ok(false);
    }
    if !present.is_empty() {
        return Err(Failure::error(format!(
            "{} has only some of the TLS files ({}); remove them to generate a new set, or \
             name yours with --ssl-cert and --ssl-key",
            datadir.display(),
            present.join(", ")
        )));
    }
    let failed = |e: rcgen::Error| Failure::error(format!("generating certificates: {e}"));
    let year_now = current_year();
    let ca_key = KeyPair::generate().map_err(failed)?;
    let mut ca = CertificateParams::default();
    ca.distinguished_name.push(
        DnType::CommonName,
        "Shale_Server_Auto_Generated_CA_Certificate",
    );
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    ca.not_before = rcgen::date_time_ymd(year_now - 1, 1, 1);
    ca.not_after = rcgen::date_time_ymd(year_now + 10, 1, 1);
    let ca_cert = ca.self_signed(&ca_key).map_err(failed)?;

    let server_key = KeyPair::generate().map_err(failed)?;
    let mut server = CertificateParams::new(vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ])
    .map_err(failed)?;
    server.distinguished_name.push(
        DnType::CommonName,
        "Shale_Server_Auto_Generated_Server_Certificate",
    );
    server.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    server.not_before = ca_cert.params().not_before;
    server.not_after = ca_cert.params().not_after;
    let server_cert = server
        .signed_by(&server_key, &ca_cert, &ca_key)
        .map_err(failed)?;

    // Keys first: a crash in between leaves a partial set, which the next start reports.
    write_file(
        &datadir.join(CA_KEY),
        ca_key.serialize_pem().as_bytes(),
        0o600,
    )?;
    write_file(
        &datadir.join(SERVER_KEY),
        server_key.serialize_pem().as_bytes(),
        0o600,
    )?;
    write_file(&datadir.join(CA_CERT), ca_cert.pem().as_bytes(), 0o644)?;
    write_file(
        &datadir.join(SERVER_CERT),
        server_cert.pem().as_bytes(),
        0o644,
    )?;
    Ok(true)
}

/// The TLS configuration from `files`.
pub fn tls_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, Failure> {
    let read = |path: &Path| {
        std::fs::read(path)
            .map_err(|e| Failure::error(format!("cannot read {}: {e}", path.display())))
    };
    let ca = files.client_ca.as_deref().map(read).transpose()?;
    shale_server::tls_server_config(&read(&files.cert)?, &read(&files.key)?, ca.as_deref()).map_err(
        |e| {
            Failure::error(format!(
                "TLS with {} and {}: {e}",
                files.cert.display(),
                files.key.display()
            ))
        },
    )
}

/// The RSA key pair in `datadir`, generated (and stored) if missing.
pub fn ensure_rsa_keys(datadir: &Path) -> Result<RsaKeyPair, Failure> {
    let private = datadir.join(RSA_PRIVATE);
    if private.exists() {
        let pem = std::fs::read_to_string(&private)
            .map_err(|e| Failure::error(format!("cannot read {}: {e}", private.display())))?;
        return RsaKeyPair::from_private_pem(&pem)
            .map_err(|e| Failure::error(format!("{}: {e}", private.display())));
    }
    let keys = RsaKeyPair::generate().map_err(Failure::error)?;
    let pem = keys.private_pem().map_err(Failure::error)?;
    write_file(&private, pem.as_bytes(), 0o600)?;
    write_file(
        &datadir.join(RSA_PUBLIC),
        keys.public_pem().as_bytes(),
        0o644,
    )?;
    Ok(keys)
}

fn write_file(path: &Path, contents: &[u8], mode: u32) -> Result<(), Failure> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| Failure::error(format!("cannot create {}: {e}", path.display())))?;
    file.write_all(contents)
        .and_then(|()| file.sync_all())
        .map_err(|e| Failure::error(format!("cannot write {}: {e}", path.display())))
}

/// This year, near enough for certificate validity.
fn current_year() -> i32 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Mean Gregorian year: off by at most a day around New Year, which not_before's
    // one-year margin absorbs.
    1970 + (secs / 31_556_952) as i32
}
