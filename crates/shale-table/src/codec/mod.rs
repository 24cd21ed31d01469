//! Byte encodings of the table layer: memcomparable keys ([`key`], docs/format/table-keys.md),
//! row values ([`row`], docs/format/rows.md), collation weights ([`collation`]) and the small
//! helpers they share (LEB128 varints, a bounds-checked reader of untrusted bytes).
//!
//! Invariants:
//! 1. Every decoder returns [`Error::Corruption`] naming what it was reading on bad bytes; none
//!    panics, indexes unchecked or allocates more than the input's length.

pub(crate) mod collation;
pub(crate) mod decimal;
pub(crate) mod key;
pub(crate) mod key_decode;
pub(crate) mod row;

use crate::error::{Error, Result};

/// Appends `value` as an unsigned LEB128 varint (7 bits a byte, low group first).
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Zigzag: 0, -1, 1, -2, ... -> 0, 1, 2, 3, ... so small negatives stay short.
pub(crate) fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)).cast_unsigned()
}

pub(crate) fn unzigzag(value: u64) -> i64 {
    (value >> 1).cast_signed() ^ -((value & 1).cast_signed())
}

/// Appends `bytes` with a varint length.
pub(crate) fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A cursor over untrusted bytes; every read is bounds-checked and names `what` on failure.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    what: &'a str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], what: &'a str) -> Self {
        Reader {
            bytes,
            pos: 0,
            what,
        }
    }

    pub(crate) fn corruption(&self, detail: &str) -> Error {
        Error::Corruption(format!("{}: {detail} at byte {}", self.what, self.pos))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    pub(crate) fn rest(&self) -> &'a [u8] {
        self.bytes.get(self.pos..).unwrap_or_default()
    }

    pub(crate) fn take(&mut self, len: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(len)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| self.corruption(&format!("{len} bytes past the end")))?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let bytes = self.take(N)?;
        let mut out = [0; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    pub(crate) fn varint(&mut self) -> Result<u64> {
        let mut value: u64 = 0;
        for shift in (0..64).step_by(7) {
            let byte = self.u8()?;
            let bits = u64::from(byte & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(self.corruption("varint overflows 64 bits"));
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.corruption("varint longer than 10 bytes"))
    }

    pub(crate) fn varint_u32(&mut self) -> Result<u32> {
        let value = self.varint()?;
        u32::try_from(value).map_err(|_| self.corruption("varint above u32"))
    }

    pub(crate) fn len_prefixed(&mut self) -> Result<&'a [u8]> {
        let len = self.varint()?;
        let len = usize::try_from(len).map_err(|_| self.corruption("length above usize"))?;
        self.take(len)
    }

    pub(crate) fn string(&mut self) -> Result<String> {
        let bytes = self.len_prefixed()?;
        String::from_utf8(bytes.to_vec()).map_err(|_| self.corruption("name is not UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_overflow() {
        for value in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(Reader::new(&out, "t").varint().unwrap(), value);
        }
        for value in [0, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(value)), value);
        }
        assert!(Reader::new(&[0xff; 11], "t").varint().is_err());
        assert!(Reader::new(&[0x80], "t").varint().is_err());
        assert!(Reader::new(
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
            "t"
        )
        .varint()
        .is_err());
    }
}
