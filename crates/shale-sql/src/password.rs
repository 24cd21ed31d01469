//! The stored forms of passwords (`mysql.user.authentication_string`), as MySQL 8 stores them
//! (docs/format/privileges.md):
//! - `mysql_native_password`: `*` and 40 upper-case hex digits of SHA1(SHA1(password)).
//! - `caching_sha2_password`: `$A$005$`, a 20-byte salt and 43 characters of SHA-256 crypt
//!   (Drepper's "Unix crypt using SHA-256", 5,000 rounds, the whole 20-byte salt used),
//!   MySQL's format. The fast path's SHA256(SHA256(password)) is never stored: the server
//!   learns it from a full authentication and keeps it in memory only, as MySQL does.
//!
//! An empty password is stored as an empty string under either plugin (an account without a
//! password, which logs in with an empty one).

use rand::Rng as _;
use sha1::{Digest as _, Sha1};
use sha2::Sha256;

/// The plugin names as MySQL spells them.
pub const NATIVE_PASSWORD: &str = "mysql_native_password";
pub const CACHING_SHA2: &str = "caching_sha2_password";

/// MySQL 8's `default_authentication_plugin`: what CREATE USER uses without `WITH`.
pub const DEFAULT_PLUGIN: &str = CACHING_SHA2;

/// Rounds of SHA-256 crypt, in thousands, as the stored string's `005` says.
const SHA2_ROUNDS_THOUSANDS: u32 = 5;
const SHA2_SALT: usize = 20;
const SHA2_DIGEST: usize = 43;
const SHA2_PREFIX: &[u8] = b"$A$";

/// The `authentication_string` to store for `password` under `plugin` (a fresh salt for
/// `caching_sha2_password`).
pub fn hash_password(plugin: &str, password: &str) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    if plugin == CACHING_SHA2 {
        let mut rng = rand::thread_rng();
        // Printable, and never `$` (the field separator) or NUL.
        let salt: Vec<u8> = (0..SHA2_SALT)
            .map(|_| loop {
                let b = rng.gen_range(0x21u8..0x7F);
                if b != b'$' {
                    break b;
                }
            })
            .collect();
        sha2_stored(password.as_bytes(), &salt, SHA2_ROUNDS_THOUSANDS)
    } else {
        let stage2 = Sha1::digest(Sha1::digest(password.as_bytes()));
        let mut out = b"*".to_vec();
        out.extend_from_slice(hex_upper(&stage2).as_bytes());
        out
    }
}

fn sha2_stored(password: &[u8], salt: &[u8], thousands: u32) -> Vec<u8> {
    let mut out = SHA2_PREFIX.to_vec();
    out.extend_from_slice(format!("{thousands:03X}$").as_bytes());
    out.extend_from_slice(salt);
    out.extend_from_slice(sha256_crypt(password, salt, thousands * 1000).as_bytes());
    out
}

/// Whether `password` (in the clear, from a full authentication) is the one a
/// `caching_sha2_password` `stored` string was made from.
pub fn sha2_password_matches(stored: &[u8], password: &[u8]) -> bool {
    if stored.is_empty() {
        return password.is_empty();
    }
    let Some(rest) = stored.strip_prefix(SHA2_PREFIX) else {
        return false;
    };
    // `XXX$` rounds in thousands (hex), then the salt and the digest.
    let (Some(rounds), Some(b'$')) = (rest.get(..3), rest.get(3)) else {
        return false;
    };
    let Some(thousands) = std::str::from_utf8(rounds)
        .ok()
        .and_then(|r| u32::from_str_radix(r, 16).ok())
        .filter(|t| (1..=0xFFF).contains(t))
    else {
        return false;
    };
    let body = &rest[4..];
    if body.len() != SHA2_SALT + SHA2_DIGEST {
        return false;
    }
    let computed = sha2_stored(password, &body[..SHA2_SALT], thousands);
    constant_time_eq(&computed, stored)
}

/// The fast path's secret: SHA256(SHA256(password)), kept in memory after a full
/// authentication proved `password`.
pub fn sha2_double_hash(password: &[u8]) -> [u8; 32] {
    Sha256::digest(Sha256::digest(password)).into()
}

/// Whether `stored` is a well-formed `authentication_string` for `plugin` (CREATE USER ...
/// IDENTIFIED WITH plugin AS 'hash').
pub fn is_valid_stored(plugin: &str, stored: &[u8]) -> bool {
    if stored.is_empty() {
        return true;
    }
    match plugin {
        NATIVE_PASSWORD => {
            stored.len() == 41 && stored[0] == b'*' && stored[1..].iter().all(u8::is_ascii_hexdigit)
        }
        CACHING_SHA2 => {
            stored.starts_with(SHA2_PREFIX) && stored.len() == 7 + SHA2_SALT + SHA2_DIGEST
        }
        _ => false,
    }
}

fn hex_upper(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02X}");
    }
    s
}

pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// SHA-crypt's base-64 alphabet (not RFC 4648's).
const ALPHABET: &[u8] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `bytes` repeated to `len` bytes.
fn repeat_to(bytes: &[u8], len: usize) -> Vec<u8> {
    bytes.iter().copied().cycle().take(len).collect()
}

/// SHA-256 crypt's digest (the 43 characters after the salt) of `password` with `salt`.
fn sha256_crypt(password: &[u8], salt: &[u8], rounds: u32) -> String {
    let alternate = Sha256::new()
        .chain_update(password)
        .chain_update(salt)
        .chain_update(password)
        .finalize();
    let mut a = Sha256::new().chain_update(password).chain_update(salt);
    a.update(repeat_to(&alternate, password.len()));
    let mut n = password.len();
    while n > 0 {
        if n & 1 == 1 {
            a.update(alternate);
        } else {
            a.update(password);
        }
        n >>= 1;
    }
    let mut digest = a.finalize();
    let mut dp = Sha256::new();
    for _ in 0..password.len() {
        dp.update(password);
    }
    let p = repeat_to(&dp.finalize(), password.len());
    let mut ds = Sha256::new();
    for _ in 0..16 + usize::from(digest[0]) {
        ds.update(salt);
    }
    let s = repeat_to(&ds.finalize(), salt.len());
    for i in 0..rounds {
        let mut c = Sha256::new();
        if i % 2 == 1 {
            c.update(&p);
        } else {
            c.update(digest);
        }
        if i % 3 != 0 {
            c.update(&s);
        }
        if i % 7 != 0 {
            c.update(&p);
        }
        if i % 2 == 1 {
            c.update(digest);
        } else {
            c.update(&p);
        }
        digest = c.finalize();
    }
    let d = digest;
    let mut out = String::with_capacity(SHA2_DIGEST);
    let mut put = |b2: u8, b1: u8, b0: u8, chars: usize| {
        let mut w = (u32::from(b2) << 16) | (u32::from(b1) << 8) | u32::from(b0);
        for _ in 0..chars {
            out.push(char::from(ALPHABET[(w & 0x3F) as usize]));
            w >>= 6;
        }
    };
    for [x, y, z] in [
        [0, 10, 20],
        [21, 1, 11],
        [12, 22, 2],
        [3, 13, 23],
        [24, 4, 14],
        [15, 25, 5],
        [6, 16, 26],
        [27, 7, 17],
        [18, 28, 8],
        [9, 19, 29],
    ] {
        put(d[x], d[y], d[z], 4);
    }
    put(0, d[31], d[30], 3);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_crypt_matches_the_published_vector() {
        // Drepper's specification: "$5$saltstring" with "Hello world!" (5,000 rounds).
        assert_eq!(
            sha256_crypt(b"Hello world!", b"saltstring", 5000),
            "5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5"
        );
    }

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
    fn sha2_stored_form_is_salted_and_checks_the_password() {
        let a = hash_password(CACHING_SHA2, "s3cret");
        let b = hash_password(CACHING_SHA2, "s3cret");
        assert_ne!(a, b, "a fresh salt each time");
        assert_eq!(a.len(), 70);
        assert!(a.starts_with(b"$A$005$"));
        assert!(is_valid_stored(CACHING_SHA2, &a));
        assert!(sha2_password_matches(&a, b"s3cret"));
        assert!(sha2_password_matches(&b, b"s3cret"));
        assert!(!sha2_password_matches(&a, b"s3cre"));
        assert!(!sha2_password_matches(&a, b""));
        assert!(sha2_password_matches(b"", b""));
        for n in 0..a.len() {
            assert!(!sha2_password_matches(&a[..n], b"s3cret"));
        }
        let mut damaged = a.clone();
        damaged[3] = b'G';
        assert!(!sha2_password_matches(&damaged, b"s3cret"));
        assert!(is_valid_stored(
            NATIVE_PASSWORD,
            &hash_password(NATIVE_PASSWORD, "x")
        ));
        assert!(!is_valid_stored(NATIVE_PASSWORD, b"*12"));
    }
}
