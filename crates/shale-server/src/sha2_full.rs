//! `caching_sha2_password` beyond the fast path (MySQL "Caching_sha2_password information").
//!
//! The fast path proves knowledge of the password with a scramble, but only for an account in
//! the server's cache: one that logged in with its clear password since the server started.
//! Any other login (the cache is empty after a restart, or the scramble did not match) is
//! asked for full authentication (AuthMoreData `0x04`): the client then sends its password
//! in the clear over TLS, or, on a plain connection, asks for the server's RSA public key
//! (`0x02`) and sends the password XOR the scramble encrypted with RSA-OAEP (SHA-1, as
//! MySQL's clients use). A plain connection never carries a clear password.
//!
//! Invariants:
//! 1. An account enters the cache only after its clear password matched the stored hash;
//!    the cache holds the stored hash it was proven against, so a changed account misses,
//!    and the SHA256(SHA256(password)) the fast path checks (memory only, never stored).
//! 2. The RSA private key never leaves this module except as PEM for the data directory.

use std::collections::HashMap;
use std::sync::Mutex;

use rsa::pkcs1::DecodeRsaPrivateKey as _;
use rsa::pkcs8::{DecodePrivateKey as _, EncodePrivateKey as _, EncodePublicKey as _, LineEnding};
use rsa::{Oaep, RsaPrivateKey};

/// Bits of a generated key; MySQL's auto-generated key pair has 2048 too.
pub const RSA_BITS: usize = 2048;

/// The server's RSA key pair for password exchange on plain connections.
pub struct RsaKeyPair {
    private: RsaPrivateKey,
    public_pem: String,
}

impl std::fmt::Debug for RsaKeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RsaKeyPair")
            .field("public_pem", &self.public_pem)
            .finish_non_exhaustive()
    }
}

impl RsaKeyPair {
    /// A new random key pair.
    pub fn generate() -> Result<RsaKeyPair, String> {
        let private = RsaPrivateKey::new(&mut rand::thread_rng(), RSA_BITS)
            .map_err(|e| format!("generating an RSA key: {e}"))?;
        Self::from_private(private)
    }

    /// The key pair from a private key in PEM (PKCS#8 `PRIVATE KEY` or PKCS#1 `RSA PRIVATE
    /// KEY`, as MySQL's `private_key.pem`).
    pub fn from_private_pem(pem: &str) -> Result<RsaKeyPair, String> {
        let private = RsaPrivateKey::from_pkcs8_pem(pem)
            .or_else(|_| RsaPrivateKey::from_pkcs1_pem(pem))
            .map_err(|e| format!("not an RSA private key in PEM: {e}"))?;
        Self::from_private(private)
    }

    fn from_private(private: RsaPrivateKey) -> Result<RsaKeyPair, String> {
        let public_pem = private
            .to_public_key()
            .to_public_key_pem(LineEnding::LF)
            .map_err(|e| format!("encoding the RSA public key: {e}"))?;
        Ok(RsaKeyPair {
            private,
            public_pem,
        })
    }

    /// The private key as PKCS#8 PEM, to store (owner-only) in the data directory.
    pub fn private_pem(&self) -> Result<String, String> {
        self.private
            .to_pkcs8_pem(LineEnding::LF)
            .map(|pem| pem.to_string())
            .map_err(|e| format!("encoding the RSA private key: {e}"))
    }

    /// The public key as PEM (`BEGIN PUBLIC KEY`), what a client's request gets.
    pub fn public_pem(&self) -> &str {
        &self.public_pem
    }

    /// The password a client encrypted: RSA-OAEP, then XOR with the scramble repeated, with
    /// a terminating NUL. `None` when it does not decrypt or has no terminator.
    pub(crate) fn decrypt_password(&self, ciphertext: &[u8], scramble: &[u8]) -> Option<Vec<u8>> {
        let mut plain = self
            .private
            .decrypt(Oaep::new::<sha1::Sha1>(), ciphertext)
            .ok()?;
        for (i, b) in plain.iter_mut().enumerate() {
            *b ^= scramble[i % scramble.len()];
        }
        (plain.pop() == Some(0)).then_some(plain)
    }
}

/// An account that proved its password: the stored hash it proved, and its
/// SHA256(SHA256(password)).
type Proven = (Vec<u8>, [u8; 32]);

/// The accounts that may take the fast path, by (user, host).
#[derive(Debug, Default)]
pub(crate) struct Sha2Cache {
    proven: Mutex<HashMap<(String, String), Proven>>,
}

impl Sha2Cache {
    /// The fast path's secret for the account, if it proved `stored`'s password.
    pub fn secret(&self, user: &str, host: &str, stored: &[u8]) -> Option<[u8; 32]> {
        let proven = self
            .proven
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        proven
            .get(&(user.to_owned(), host.to_owned()))
            .filter(|(s, _)| s == stored)
            .map(|(_, secret)| *secret)
    }

    pub fn insert(&self, user: &str, host: &str, stored: &[u8], secret: [u8; 32]) {
        let mut proven = self
            .proven
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        proven.insert(
            (user.to_owned(), host.to_owned()),
            (stored.to_vec(), secret),
        );
    }
}

/// The client side of the RSA exchange (tests, and a reference for the format).
pub fn rsa_encrypt_password(
    public_pem: &str,
    password: &str,
    scramble: &[u8],
) -> Result<Vec<u8>, String> {
    use rsa::pkcs8::DecodePublicKey as _;
    let public = rsa::RsaPublicKey::from_public_key_pem(public_pem).map_err(|e| e.to_string())?;
    let mut message = password.as_bytes().to_vec();
    message.push(0);
    for (i, b) in message.iter_mut().enumerate() {
        *b ^= scramble[i % scramble.len()];
    }
    public
        .encrypt(&mut rand::thread_rng(), Oaep::new::<sha1::Sha1>(), &message)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsa_password_round_trips_and_rejects_damage() {
        let keys = RsaKeyPair::generate().unwrap();
        let again = RsaKeyPair::from_private_pem(&keys.private_pem().unwrap()).unwrap();
        assert_eq!(again.public_pem(), keys.public_pem());
        assert!(keys.public_pem().starts_with("-----BEGIN PUBLIC KEY-----"));
        let scramble = crate::auth::new_scramble();
        let mut sealed = rsa_encrypt_password(keys.public_pem(), "s3cret", &scramble).unwrap();
        assert_eq!(
            again.decrypt_password(&sealed, &scramble).as_deref(),
            Some(&b"s3cret"[..])
        );
        sealed[10] ^= 1;
        assert_eq!(keys.decrypt_password(&sealed, &scramble), None);
        assert_eq!(keys.decrypt_password(b"short", &scramble), None);
        assert!(RsaKeyPair::from_private_pem("garbage").is_err());
    }

    #[test]
    fn cache_holds_only_the_proven_hash() {
        let cache = Sha2Cache::default();
        assert_eq!(cache.secret("u", "localhost", b"h1"), None);
        cache.insert("u", "localhost", b"h1", [7; 32]);
        assert_eq!(cache.secret("u", "localhost", b"h1"), Some([7; 32]));
        assert_eq!(cache.secret("u", "localhost", b"h2"), None);
        assert_eq!(cache.secret("u", "%", b"h1"), None);
    }
}
