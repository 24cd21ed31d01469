//! Password authentication: `mysql_native_password` and the fast path of
//! `caching_sha2_password` (MySQL "Authentication Methods").
//!
//! Stored hashes (the `authentication_string` of a [`shale_sql::UserRecord`]) are made by
//! `shale_sql::hash_password` (docs/format/privileges.md): `mysql_native_password` keeps
//! `*` and the hex of SHA1(SHA1(password)), which the scramble is checked against;
//! `caching_sha2_password` keeps MySQL's salted SHA-256 crypt, which only a clear password
//! (full authentication, `sha2_full`) can be checked against, and the fast path checks the
//! scramble against SHA256(SHA256(password)) that an earlier full authentication put in the
//! server's memory (`Sha2Cache`). Empty means no password.
//!
//! Invariants:
//! 1. The server never keeps a password; it keeps the stored hash, and in memory the
//!    fast path's double hash of accounts that proved their password since it started.
//! 2. Comparisons of secrets run in constant time for equal lengths.

use rand::Rng as _;
use sha1::{Digest as _, Sha1};
use sha2::Sha256;

pub use shale_sql::{hash_password, sha2_password_matches, CACHING_SHA2, NATIVE_PASSWORD};

/// The 20 random bytes both plugins scramble with. Printable ASCII without NUL or `$`, since
/// some clients treat the nonce as a C string.
pub fn new_scramble() -> [u8; 20] {
    let mut rng = rand::thread_rng();
    let mut out = [0u8; 20];
    for b in &mut out {
        *b = rng.gen_range(0x21..0x7F);
    }
    out
}

/// Whether the client's `response` to `scramble` proves it knows the password whose stored
/// hash is `stored`, for `plugin`. Unknown plugins and malformed hashes never match.
pub fn verify(plugin: &str, stored: &[u8], scramble: &[u8], response: &[u8]) -> bool {
    if stored.is_empty() {
        // No password: the client must not send one either.
        return response.is_empty();
    }
    match plugin {
        NATIVE_PASSWORD => {
            let Some(stage2) = decode_stored(stored, b"*", 20) else {
                return false;
            };
            // response = SHA1(pw) XOR SHA1(scramble ++ stage2); SHA1(SHA1(pw)) must be stage2.
            if response.len() != 20 {
                return false;
            }
            let mask = Sha1::new()
                .chain_update(scramble)
                .chain_update(&stage2)
                .finalize();
            let stage1: Vec<u8> = response.iter().zip(mask).map(|(a, b)| a ^ b).collect();
            constant_time_eq(&Sha1::digest(&stage1), &stage2)
        }
        // The stored crypt cannot check a scramble: see `verify_sha2_scramble`.
        _ => false,
    }
}

/// Whether `response` is the `caching_sha2_password` fast path's answer to `scramble` for
/// the account whose SHA256(SHA256(password)) is `secret`:
/// response = SHA256(pw) XOR SHA256(secret ++ scramble).
pub fn verify_sha2_scramble(secret: &[u8; 32], scramble: &[u8], response: &[u8]) -> bool {
    if response.len() != 32 {
        return false;
    }
    let mask = Sha256::new()
        .chain_update(secret)
        .chain_update(scramble)
        .finalize();
    let stage1: Vec<u8> = response.iter().zip(mask).map(|(a, b)| a ^ b).collect();
    constant_time_eq(&Sha256::digest(&stage1), secret)
}

/// The client side of `mysql_native_password` (tests, and a reference for the formula).
pub fn native_scramble_response(password: &str, scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = Sha1::digest(password.as_bytes());
    let stage2 = Sha1::digest(stage1);
    let mask = Sha1::new()
        .chain_update(scramble)
        .chain_update(stage2)
        .finalize();
    stage1.iter().zip(mask).map(|(a, b)| a ^ b).collect()
}

/// The client side of the `caching_sha2_password` fast path.
pub fn sha2_scramble_response(password: &str, scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = Sha256::digest(password.as_bytes());
    let stage2 = Sha256::digest(stage1);
    let mask = Sha256::new()
        .chain_update(stage2)
        .chain_update(scramble)
        .finalize();
    stage1.iter().zip(mask).map(|(a, b)| a ^ b).collect()
}

/// The raw hash from `prefix ++ hex`, or the raw bytes themselves.
fn decode_stored(stored: &[u8], prefix: &[u8], len: usize) -> Option<Vec<u8>> {
    if stored.len() == len {
        return Some(stored.to_vec());
    }
    let digits = stored.strip_prefix(prefix)?;
    if digits.len() != 2 * len {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| {
            let s = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(s, 16).ok()
        })
        .collect()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrambles_verify_only_with_the_right_password() {
        let scramble = new_scramble();
        let stored = hash_password(NATIVE_PASSWORD, "s3cret");
        let response = |pw: &str| native_scramble_response(pw, &scramble);
        assert!(verify(
            NATIVE_PASSWORD,
            &stored,
            &scramble,
            &response("s3cret")
        ));
        assert!(!verify(
            NATIVE_PASSWORD,
            &stored,
            &scramble,
            &response("wrong")
        ));
        assert!(!verify(NATIVE_PASSWORD, &stored, &scramble, b""));
        assert!(!verify(
            NATIVE_PASSWORD,
            &stored,
            &new_scramble(),
            &response("s3cret")
        ));
        // caching_sha2_password: the stored crypt never checks a scramble; the double hash
        // from a full authentication does.
        let stored = hash_password(CACHING_SHA2, "s3cret");
        let answer = sha2_scramble_response("s3cret", &scramble);
        assert!(!verify(CACHING_SHA2, &stored, &scramble, &answer));
        assert!(sha2_password_matches(&stored, b"s3cret"));
        let secret = shale_sql::sha2_double_hash(b"s3cret");
        assert!(verify_sha2_scramble(&secret, &scramble, &answer));
        assert!(!verify_sha2_scramble(
            &secret,
            &scramble,
            &sha2_scramble_response("wrong", &scramble)
        ));
        assert!(!verify_sha2_scramble(&secret, &new_scramble(), &answer));
        assert!(verify(NATIVE_PASSWORD, b"", &scramble, b""));
        assert!(!verify(NATIVE_PASSWORD, b"", &scramble, b"x"));
        assert!(!verify("unknown", b"*00", &scramble, b"x"));
    }
}
