//! Password authentication: `mysql_native_password` and the fast path of
//! `caching_sha2_password` (MySQL "Authentication Methods").
//!
//! Stored hashes (the `authentication_string` of a [`shale_sql::UserRecord`]):
//! - `mysql_native_password`: `*` and 40 upper-case hex digits of SHA1(SHA1(password)), as
//!   MySQL stores it; the raw 20 bytes are accepted too. Empty means no password.
//! - `caching_sha2_password`: `$shale-sha2$` and 64 hex digits of SHA256(SHA256(password)),
//!   Shale's own format: the double hash is what both the fast path and full authentication
//!   (the clear password, `sha2_full`) check, so no salted crypt is needed. Empty means no
//!   password.
//!
//! Invariants:
//! 1. The server never sees or keeps a password; it keeps the double hash, and checks the
//!    client's scramble response against it.
//! 2. Comparisons of secrets run in constant time for equal lengths.

use rand::Rng as _;
use sha1::{Digest as _, Sha1};
use sha2::Sha256;

/// The plugin names as the protocol spells them.
pub const NATIVE_PASSWORD: &str = "mysql_native_password";
pub const CACHING_SHA2: &str = "caching_sha2_password";

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

/// The `authentication_string` to store for `password` under `plugin`.
pub fn hash_password(plugin: &str, password: &str) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    if plugin == CACHING_SHA2 {
        let stage2 = Sha256::digest(Sha256::digest(password.as_bytes()));
        let mut out = b"$shale-sha2$".to_vec();
        out.extend_from_slice(hex(&stage2).as_bytes());
        out
    } else {
        let stage2 = Sha1::digest(Sha1::digest(password.as_bytes()));
        let mut out = b"*".to_vec();
        out.extend_from_slice(hex(&stage2).as_bytes());
        out
    }
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
        CACHING_SHA2 => {
            let Some(stage2) = decode_stored(stored, b"$shale-sha2$", 32) else {
                return false;
            };
            // response = SHA256(pw) XOR SHA256(stage2 ++ scramble).
            if response.len() != 32 {
                return false;
            }
            let mask = Sha256::new()
                .chain_update(&stage2)
                .chain_update(scramble)
                .finalize();
            let stage1: Vec<u8> = response.iter().zip(mask).map(|(a, b)| a ^ b).collect();
            constant_time_eq(&Sha256::digest(&stage1), &stage2)
        }
        _ => false,
    }
}

/// Whether the clear `password` (sent in `caching_sha2_password` full authentication) is the
/// one whose stored hash is `stored`.
pub fn sha2_password_matches(stored: &[u8], password: &[u8]) -> bool {
    if stored.is_empty() {
        return password.is_empty();
    }
    let Some(stage2) = decode_stored(stored, b"$shale-sha2$", 32) else {
        return false;
    };
    constant_time_eq(&Sha256::digest(Sha256::digest(password)), &stage2)
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

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02X}");
    }
    s
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_hash_matches_mysql_password_function() {
        // MySQL: SELECT PASSWORD('password') = '*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19'.
        assert_eq!(
            hash_password(NATIVE_PASSWORD, "password"),
            b"*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19".to_vec()
        );
        assert!(hash_password(NATIVE_PASSWORD, "").is_empty());
    }

    #[test]
    fn scrambles_verify_only_with_the_right_password() {
        let scramble = new_scramble();
        for plugin in [NATIVE_PASSWORD, CACHING_SHA2] {
            let stored = hash_password(plugin, "s3cret");
            let response = |pw: &str| {
                if plugin == NATIVE_PASSWORD {
                    native_scramble_response(pw, &scramble)
                } else {
                    sha2_scramble_response(pw, &scramble)
                }
            };
            assert!(verify(plugin, &stored, &scramble, &response("s3cret")));
            assert!(!verify(plugin, &stored, &scramble, &response("wrong")));
            assert!(!verify(plugin, &stored, &scramble, b""));
            if plugin == CACHING_SHA2 {
                assert!(sha2_password_matches(&stored, b"s3cret"));
                assert!(!sha2_password_matches(&stored, b"s3cre"));
            }
            assert!(!verify(
                plugin,
                &stored,
                &new_scramble(),
                &response("s3cret")
            ));
        }
        assert!(verify(NATIVE_PASSWORD, b"", &scramble, b""));
        assert!(!verify(NATIVE_PASSWORD, b"", &scramble, b"x"));
        assert!(!verify("unknown", b"*00", &scramble, b"x"));
    }
}
