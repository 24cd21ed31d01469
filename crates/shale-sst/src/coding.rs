//! Varint (LEB128) and fixed-width little-endian encodings used by every block format.
//!
//! Decoders take untrusted bytes: they never index past the end and reject over-long or
//! overflowing varints (docs/format/sst.md, "varint32/varint64").

use crate::error::DecodeError;

pub(crate) fn put_varint32(out: &mut Vec<u8>, v: u32) {
    put_varint64(out, u64::from(v));
}

pub(crate) fn put_varint64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Zigzag-encodes a signed value so that small magnitudes stay short.
pub(crate) fn put_varint64_signed(out: &mut Vec<u8>, v: i64) {
    put_varint64(out, ((v << 1) ^ (v >> 63)).cast_unsigned());
}

#[cfg(test)]
pub(crate) fn varint64_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Decodes a varint64 at the start of `input`; returns the value and the bytes consumed.
pub(crate) fn get_varint64(input: &[u8]) -> Result<(u64, usize), DecodeError> {
    let mut result: u64 = 0;
    for (i, &byte) in input.iter().enumerate().take(10) {
        let low = u64::from(byte & 0x7f);
        if i == 9 && low > 1 {
            return Err(DecodeError::new("varint64 overflows 64 bits"));
        }
        result |= low << (7 * i);
        if byte & 0x80 == 0 {
            return Ok((result, i + 1));
        }
    }
    if input.len() < 10 {
        Err(DecodeError::new("truncated varint"))
    } else {
        Err(DecodeError::new("varint64 longer than 10 bytes"))
    }
}

/// Decodes a varint32 at the start of `input`; returns the value and the bytes consumed.
pub(crate) fn get_varint32(input: &[u8]) -> Result<(u32, usize), DecodeError> {
    let (v, n) = get_varint64(input)?;
    if n > 5 {
        return Err(DecodeError::new("varint32 longer than 5 bytes"));
    }
    u32::try_from(v)
        .map(|v| (v, n))
        .map_err(|_| DecodeError::new("varint32 overflows 32 bits"))
}

pub(crate) fn get_varint64_signed(input: &[u8]) -> Result<(i64, usize), DecodeError> {
    let (v, n) = get_varint64(input)?;
    Ok(((v >> 1).cast_signed() ^ -(v & 1).cast_signed(), n))
}

pub(crate) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Reads a little-endian u32 at `at`, or fails if the bytes are not there.
pub(crate) fn get_u32(input: &[u8], at: usize) -> Result<u32, DecodeError> {
    input
        .get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| DecodeError::new(format!("u32 at {at} runs past {} bytes", input.len())))
}

/// Reads a little-endian u64 at `at`, or fails if the bytes are not there.
pub(crate) fn get_u64(input: &[u8], at: usize) -> Result<u64, DecodeError> {
    input
        .get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| DecodeError::new(format!("u64 at {at} runs past {} bytes", input.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip_and_lengths() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            assert_eq!(buf.len(), varint64_len(v));
            assert_eq!(get_varint64(&buf).unwrap(), (v, buf.len()));
        }
        for v in [i64::MIN, -1, 0, 1, i64::MAX] {
            let mut buf = Vec::new();
            put_varint64_signed(&mut buf, v);
            assert_eq!(get_varint64_signed(&buf).unwrap().0, v);
        }
    }

    #[test]
    fn varint_rejects_bad_input() {
        assert!(get_varint64(&[]).is_err());
        assert!(get_varint64(&[0x80, 0x80]).is_err());
        assert!(get_varint64(&[0xff; 10]).is_err());
        assert!(
            get_varint64(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]).is_err()
        );
        let mut big = Vec::new();
        put_varint64(&mut big, u64::from(u32::MAX) + 1);
        assert!(get_varint32(&big).is_err());
        assert!(get_u32(&[1, 2, 3], 0).is_err());
        assert!(get_u64(&[0; 8], 1).is_err());
    }
}
