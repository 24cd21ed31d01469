//! Digests, checksums, ids and encodings: MD5, SHA1/SHA, SHA2, CRC32, UUID, UUID_SHORT,
//! UUID_TO_BIN, BIN_TO_UUID, IS_UUID, RANDOM_BYTES, TO_BASE64 and FROM_BASE64.
//!
//! Rules (MySQL 8's):
//! 1. A NULL argument gives NULL. Digests are lowercase hex text of the argument's bytes
//!    (numbers as MySQL prints them); SHA2 with a length other than 0, 224, 256, 384 or 512
//!    is NULL.
//! 2. UUID() is an RFC 4122 version 1 UUID: a 60-bit count of 100 ns since 1582-10-15, a
//!    clock sequence and a node, both random per process (MySQL uses the MAC address when
//!    it finds one; a random node has the multicast bit set, as RFC 4122 asks). Two calls
//!    never return the same value: the timestamp is bumped past the last one handed out.
//! 3. UUID_SHORT() is `(server_id & 255) << 56 | startup seconds << 24 | counter`, the
//!    counter starting at 0 and incremented per call, for the whole process.
//! 4. UUID_TO_BIN takes 32 hex digits, with the 4 dashes at their places or without, and
//!    optionally in braces; anything else is 1411. The swap flag moves time-high first
//!    (`hi, mid, low`), so version 1 UUIDs sort by time. BIN_TO_UUID takes exactly 16 bytes
//!    (else 1411) and undoes the swap.
//! 5. RANDOM_BYTES(n) needs 1 <= n <= 1024 (else 1690).
//! 6. TO_BASE64 breaks lines after every 76 characters of output, as MySQL; FROM_BASE64
//!    skips whitespace, and is NULL for any other character outside the alphabet or a
//!    wrong length or padding.

// Every narrowing cast here follows a range check or clamp on the line before it.
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use base64::Engine as _;
use rand::RngCore as _;
use sha1::Digest as _;
use shale_table::{Collation, Value};
use sqlparser::ast;

use crate::bind::Binder;
use crate::builtin::Builtin;
use crate::error::SqlError;
use crate::expr::{Expr, Func};
use crate::string_funcs::as_bytes;
use crate::types::SqlType;

/// One function of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HashFunc {
    Md5,
    Sha1,
    Sha2,
    Crc32,
    Uuid,
    UuidShort,
    UuidToBin,
    BinToUuid,
    IsUuid,
    RandomBytes,
    ToBase64,
    FromBase64,
}

impl HashFunc {
    /// A value that changes per call: never folded to a constant while binding.
    pub(crate) fn is_volatile(self) -> bool {
        matches!(
            self,
            HashFunc::Uuid | HashFunc::UuidShort | HashFunc::RandomBytes
        )
    }
}

fn text_type(len: u32) -> SqlType {
    SqlType::Str {
        collation: Collation::Utf8mb4GeneralCi,
        len,
    }
}

fn binary_type(len: u32) -> SqlType {
    SqlType::Str {
        collation: Collation::Binary,
        len,
    }
}

/// Names, argument counts and result types; None for a name not of this module.
pub(crate) fn bind(
    binder: &mut Binder<'_>,
    name: &str,
    args: &[&ast::Expr],
) -> Option<Result<(Expr, SqlType), SqlError>> {
    let (f, min, max, t) = match name {
        "MD5" => (HashFunc::Md5, 1, 1, text_type(32)),
        "SHA1" | "SHA" => (HashFunc::Sha1, 1, 1, text_type(40)),
        "SHA2" => (HashFunc::Sha2, 2, 2, text_type(128)),
        "CRC32" => (
            HashFunc::Crc32,
            1,
            1,
            SqlType::Int {
                unsigned: true,
                len: 10,
            },
        ),
        "UUID" => (HashFunc::Uuid, 0, 0, text_type(36)),
        "UUID_SHORT" => (
            HashFunc::UuidShort,
            0,
            0,
            SqlType::Int {
                unsigned: true,
                len: 21,
            },
        ),
        "UUID_TO_BIN" => (HashFunc::UuidToBin, 1, 2, binary_type(16)),
        "BIN_TO_UUID" => (HashFunc::BinToUuid, 1, 2, text_type(36)),
        "IS_UUID" => (
            HashFunc::IsUuid,
            1,
            1,
            SqlType::Int {
                unsigned: false,
                len: 1,
            },
        ),
        "RANDOM_BYTES" => (HashFunc::RandomBytes, 1, 1, binary_type(1024)),
        "TO_BASE64" => (HashFunc::ToBase64, 1, 1, text_type(65_535)),
        "FROM_BASE64" => (HashFunc::FromBase64, 1, 1, binary_type(65_535)),
        _ => return None,
    };
    if args.len() < min || args.len() > max {
        return Some(Err(crate::builtin::wrong_count(name)));
    }
    let bound: Result<Vec<Expr>, SqlError> =
        args.iter().map(|a| binder.expr(a).map(|b| b.0)).collect();
    Some(bound.map(|b| (Expr::Func(Func::Builtin(Builtin::Hash(f)), b), t)))
}

fn text(s: String) -> Value {
    Value::Bytes(s.into_bytes())
}

fn hex_lower(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

fn incorrect(value: &[u8], func: &str) -> SqlError {
    SqlError::new(
        1411,
        "HY000",
        format!(
            "Incorrect string value: '{}' for function {func}",
            String::from_utf8_lossy(value)
        ),
    )
}

/// Evaluates `f` over its argument values.
pub(crate) fn eval(f: HashFunc, args: &[Value]) -> Result<Value, SqlError> {
    let arg = |i: usize| args.get(i).unwrap_or(&Value::Null);
    let bytes = || as_bytes(arg(0));
    Ok(match f {
        HashFunc::Md5 => bytes().map_or(Value::Null, |b| text(hex_lower(&md5::Md5::digest(b)))),
        HashFunc::Sha1 => bytes().map_or(Value::Null, |b| text(hex_lower(&sha1::Sha1::digest(b)))),
        HashFunc::Sha2 => match (bytes(), crate::value::to_i128(arg(1))) {
            (Some(b), Some(bits)) => sha2(&b, bits).map_or(Value::Null, text),
            _ => Value::Null,
        },
        HashFunc::Crc32 => {
            bytes().map_or(Value::Null, |b| Value::UInt(u64::from(crc32fast::hash(&b))))
        }
        HashFunc::Uuid => text(uuid_v1()),
        HashFunc::UuidShort => Value::UInt(uuid_short()),
        HashFunc::UuidToBin => match bytes() {
            None => Value::Null,
            Some(b) => {
                let raw = parse_uuid(&b).ok_or_else(|| incorrect(&b, "uuid_to_bin"))?;
                Value::Bytes(if swap_flag(args) { swap(raw) } else { raw }.to_vec())
            }
        },
        HashFunc::BinToUuid => match bytes() {
            None => Value::Null,
            Some(b) => {
                let raw: [u8; 16] = b
                    .as_slice()
                    .try_into()
                    .map_err(|_| incorrect(&b, "bin_to_uuid"))?;
                text(format_uuid(if swap_flag(args) { unswap(raw) } else { raw }))
            }
        },
        HashFunc::IsUuid => bytes().map_or(Value::Null, |b| {
            Value::Int(i64::from(parse_uuid(&b).is_some()))
        }),
        HashFunc::RandomBytes => random_bytes(arg(0))?,
        HashFunc::ToBase64 => bytes().map_or(Value::Null, |b| text(to_base64(&b))),
        HashFunc::FromBase64 => bytes()
            .and_then(|b| from_base64(&b))
            .map_or(Value::Null, Value::Bytes),
    })
}

/// Rule 1: SHA2's digest lengths.
fn sha2(b: &[u8], bits: i128) -> Option<String> {
    Some(match bits {
        0 | 256 => hex_lower(&sha2::Sha256::digest(b)),
        224 => hex_lower(&sha2::Sha224::digest(b)),
        384 => hex_lower(&sha2::Sha384::digest(b)),
        512 => hex_lower(&sha2::Sha512::digest(b)),
        _ => return None,
    })
}

/// The swap flag of UUID_TO_BIN and BIN_TO_UUID: true when given and non-zero.
fn swap_flag(args: &[Value]) -> bool {
    args.get(1).and_then(crate::value::truth).unwrap_or(false)
}

/// Rule 2.
fn uuid_v1() -> String {
    // Seconds from 1582-10-15 to 1970-01-01, in 100 ns units.
    const GREGORIAN_OFFSET: u64 = 0x01B2_1DD2_1381_4000;
    struct State {
        last: u64,
        clock_seq: u16,
        node: [u8; 6],
    }
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    let state = STATE.get_or_init(|| {
        let mut rng = rand::thread_rng();
        let mut node = [0u8; 6];
        rng.fill_bytes(&mut node);
        node[0] |= 0x01;
        Mutex::new(State {
            last: 0,
            clock_seq: (rng.next_u32() & 0x3FFF) as u16,
            node,
        })
    });
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| {
            u64::try_from(d.as_nanos() / 100).unwrap_or(u64::MAX >> 4)
        })
        + GREGORIAN_OFFSET;
    let mut s = state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let ts = now.max(s.last + 1);
    s.last = ts;
    let mut raw = [0u8; 16];
    raw[0..4].copy_from_slice(&((ts & 0xFFFF_FFFF) as u32).to_be_bytes());
    raw[4..6].copy_from_slice(&(((ts >> 32) & 0xFFFF) as u16).to_be_bytes());
    raw[6..8].copy_from_slice(&((((ts >> 48) & 0x0FFF) as u16) | 0x1000).to_be_bytes());
    raw[8..10].copy_from_slice(&(s.clock_seq | 0x8000).to_be_bytes());
    raw[10..16].copy_from_slice(&s.node);
    format_uuid(raw)
}

/// Rule 3 (`server_id` is 1 here, as the `server_id` variable says).
fn uuid_short() -> u64 {
    static COUNTER: OnceLock<AtomicU64> = OnceLock::new();
    let counter = COUNTER.get_or_init(|| {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        AtomicU64::new((1u64 << 56) | ((started & 0xFFFF_FFFF) << 24))
    });
    counter.fetch_add(1, Ordering::Relaxed)
}

fn format_uuid(raw: [u8; 16]) -> String {
    let h = hex_lower(&raw);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Rule 4: the accepted text forms.
fn parse_uuid(s: &[u8]) -> Option<[u8; 16]> {
    let inner = match s {
        [b'{', inner @ .., b'}'] => inner,
        other => other,
    };
    let digits: Vec<u8> = match inner.len() {
        32 => inner.to_vec(),
        36 => {
            if [8, 13, 18, 23].iter().any(|&i| inner[i] != b'-') {
                return None;
            }
            inner.iter().copied().filter(|&c| c != b'-').collect()
        }
        _ => return None,
    };
    if digits.len() != 32 || s.len() == 34 && inner.len() == 32 {
        // Braces go with the dashed form only.
        return None;
    }
    let mut raw = [0u8; 16];
    for (i, pair) in digits.chunks(2).enumerate() {
        let hi = (pair[0] as char).to_digit(16)?;
        let lo = (pair[1] as char).to_digit(16)?;
        raw[i] = (hi << 4 | lo) as u8;
    }
    Some(raw)
}

/// time-low (0..4), time-mid (4..6), time-high (6..8) become time-high, time-mid, time-low.
fn swap(raw: [u8; 16]) -> [u8; 16] {
    let mut out = raw;
    out[0..2].copy_from_slice(&raw[6..8]);
    out[2..4].copy_from_slice(&raw[4..6]);
    out[4..8].copy_from_slice(&raw[0..4]);
    out
}

fn unswap(raw: [u8; 16]) -> [u8; 16] {
    let mut out = raw;
    out[6..8].copy_from_slice(&raw[0..2]);
    out[4..6].copy_from_slice(&raw[2..4]);
    out[0..4].copy_from_slice(&raw[4..8]);
    out
}

/// Rule 5.
fn random_bytes(n: &Value) -> Result<Value, SqlError> {
    let Some(n) = crate::value::to_i128(n) else {
        return Ok(Value::Null);
    };
    if !(1..=1024).contains(&n) {
        return Err(SqlError::new(
            1690,
            "22003",
            "length value is out of range in 'random_bytes'",
        ));
    }
    let mut out = vec![0u8; n as usize];
    rand::thread_rng().fill_bytes(&mut out);
    Ok(Value::Bytes(out))
}

/// Rule 6.
fn to_base64(b: &[u8]) -> String {
    let flat = base64::engine::general_purpose::STANDARD.encode(b);
    let mut out = String::with_capacity(flat.len() + flat.len() / 76);
    for (i, line) in flat.as_bytes().chunks(76).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
    }
    out
}

/// Rule 6.
fn from_base64(b: &[u8]) -> Option<Vec<u8>> {
    let packed: Vec<u8> = b
        .iter()
        .copied()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(packed)
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_text_forms() {
        let raw = parse_uuid(b"6ccd780c-baba-1026-9564-5b8c656024db").unwrap();
        assert_eq!(format_uuid(raw), "6ccd780c-baba-1026-9564-5b8c656024db");
        assert_eq!(parse_uuid(b"6ccd780cbaba102695645b8c656024db"), Some(raw));
        assert_eq!(
            parse_uuid(b"{6ccd780c-baba-1026-9564-5b8c656024db}"),
            Some(raw)
        );
        assert_eq!(parse_uuid(b"6ccd780c-baba-1026-9564-5b8c656024d"), None);
        assert_eq!(parse_uuid(b"6ccd780c-baba-1026-9564x5b8c656024db"), None);
        assert_eq!(unswap(swap(raw)), raw);
    }

    #[test]
    fn uuid_v1_is_version_1_and_increasing() {
        let a = uuid_v1();
        let b = uuid_v1();
        assert_ne!(a, b);
        assert_eq!(&a[14..15], "1");
        let (ra, rb) = (
            parse_uuid(a.as_bytes()).unwrap(),
            parse_uuid(b.as_bytes()).unwrap(),
        );
        assert!(swap(ra) < swap(rb), "{a} then {b}");
        assert!(matches!(ra[8] >> 6, 0b10));
    }
}
