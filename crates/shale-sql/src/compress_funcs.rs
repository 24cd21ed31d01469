//! COMPRESS, UNCOMPRESS and UNCOMPRESSED_LENGTH, in MySQL's format.
//!
//! Rules (MySQL 8's, checked against MariaDB 10.11):
//! 1. COMPRESS('') is ''. Otherwise the result is the text's length as 4 bytes little-endian,
//!    then its zlib stream (RFC 1950, default level); a result ending in a space gets a `.`
//!    appended, as MySQL does so that trailing-space trimming cannot damage it.
//! 2. UNCOMPRESS('') is ''. A value shorter than 5 bytes, a stream that does not inflate, or
//!    one that inflates to another length than its header says gives NULL with warning 1259
//!    `ZLIB: Input data corrupted`; a header past `max_allowed_packet` (64 MiB here) gives
//!    NULL too, before anything is inflated.
//! 3. UNCOMPRESSED_LENGTH('') is 0; otherwise the header's length (its top two bits
//!    cleared, as MySQL), or NULL for a value shorter than 4 bytes.

use std::io::{Read as _, Write as _};

use shale_table::{Collation, Value};
use sqlparser::ast;

use crate::bind::Binder;
use crate::builtin::Builtin;
use crate::error::SqlError;
use crate::expr::{Env, Expr, Func};
use crate::string_funcs::as_bytes;
use crate::types::SqlType;

/// The largest text UNCOMPRESS rebuilds: `max_allowed_packet`'s default.
const MAX_UNCOMPRESSED: usize = 64 << 20;

/// One function of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompressFunc {
    Compress,
    Uncompress,
    UncompressedLength,
}

/// Names, argument counts and result types; None for a name not of this module.
pub(crate) fn bind(
    binder: &mut Binder<'_>,
    name: &str,
    args: &[&ast::Expr],
) -> Option<Result<(Expr, SqlType), SqlError>> {
    let blob = SqlType::Str {
        collation: Collation::Binary,
        len: 65_535,
    };
    let (f, t) = match name {
        "COMPRESS" => (CompressFunc::Compress, blob),
        "UNCOMPRESS" => (CompressFunc::Uncompress, blob),
        "UNCOMPRESSED_LENGTH" => (
            CompressFunc::UncompressedLength,
            SqlType::Int {
                unsigned: false,
                len: 10,
            },
        ),
        _ => return None,
    };
    let [arg] = args else {
        return Some(Err(crate::builtin::wrong_count(name)));
    };
    Some(
        binder
            .expr(arg)
            .map(|(e, _)| (Expr::Func(Func::Builtin(Builtin::Compress(f)), vec![e]), t)),
    )
}

/// Evaluates `f` over its argument; UNCOMPRESS warns through `env` (rule 2).
pub(crate) fn eval(f: CompressFunc, arg: &Value, env: &dyn Env) -> Value {
    let Some(data) = as_bytes(arg) else {
        return Value::Null;
    };
    match f {
        CompressFunc::Compress => Value::Bytes(compress(&data)),
        CompressFunc::Uncompress => match uncompress(&data) {
            Some(text) => Value::Bytes(text),
            None => {
                env.warn(1259, "ZLIB: Input data corrupted".into());
                Value::Null
            }
        },
        CompressFunc::UncompressedLength => match header(&data) {
            _ if data.is_empty() => Value::Int(0),
            Some(len) => Value::Int(i64::from(len)),
            None => Value::Null,
        },
    }
}

/// Rule 3: the length a compressed value's header gives.
fn header(data: &[u8]) -> Option<u32> {
    let head: [u8; 4] = data.get(..4)?.try_into().ok()?;
    Some(u32::from_le_bytes(head) & 0x3FFF_FFFF)
}

/// Rule 1.
fn compress(data: &[u8]) -> Vec<u8> {
    if data.is_empty() {
        return Vec::new();
    }
    let length = u32::try_from(data.len()).unwrap_or(u32::MAX);
    let mut out = length.to_le_bytes().to_vec();
    let mut encoder = flate2::write::ZlibEncoder::new(&mut out, flate2::Compression::default());
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(data);
    let _ = encoder.finish();
    if out.last() == Some(&b' ') {
        out.push(b'.');
    }
    out
}

/// Rule 2: None for corrupted data.
fn uncompress(data: &[u8]) -> Option<Vec<u8>> {
    if data.is_empty() {
        return Some(Vec::new());
    }
    let expected = usize::try_from(header(data)?).ok()?;
    if expected > MAX_UNCOMPRESSED || data.len() < 5 {
        return None;
    }
    let mut out = Vec::with_capacity(expected.min(1 << 20));
    let decoder = flate2::read::ZlibDecoder::new(&data[4..]);
    // One byte past the expected length shows a stream that is longer than it claims.
    decoder
        .take(
            u64::try_from(expected)
                .unwrap_or(u64::MAX)
                .saturating_add(1),
        )
        .read_to_end(&mut out)
        .ok()?;
    (out.len() == expected).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compress_matches_mysql_and_round_trips() {
        assert_eq!(
            compress(b"a"),
            [1, 0, 0, 0, 0x78, 0x9C, 0x4B, 0x04, 0x00, 0x00, 0x62, 0x00, 0x62]
        );
        assert!(compress(b"").is_empty());
        for text in [&b"hello"[..], &[b'x'; 5000][..], b"ends in a space "] {
            assert_eq!(uncompress(&compress(text)).as_deref(), Some(text));
        }
    }

    #[test]
    fn corrupted_or_lying_input_gives_none() {
        assert_eq!(uncompress(b"abc"), None);
        let mut lying = compress(b"hello");
        lying[0] = 9;
        assert_eq!(uncompress(&lying), None);
        let mut huge = compress(b"hello");
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(uncompress(&huge), None);
        assert_eq!(header(b"ab"), None);
    }
}
