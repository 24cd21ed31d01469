//! The byte-level coding of version edits: minimal LEB128 varints, length-prefixed bytes, and
//! a bounds-checked cursor over untrusted input (docs/format/manifest.md, "Version edit
//! encoding").
//!
//! Invariants:
//! 1. Varints are minimal: a decoder refuses an over-long, longer-than-allowed or overflowing
//!    encoding, so each value has one encoding.
//! 2. [`Reader`] never reads outside its slice and never allocates more than it was given.

use std::path::Path;

use shale_sst::{InternalKey, SeqNo, MAX_SEQNO};

use crate::error::Error;

pub(super) fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    // Keys and names longer than 4 GiB cannot reach an edit: tables and the engine refuse them
    // long before; saturating keeps the encoder total, and the decoder would reject it.
    put_varint32(out, u32::try_from(bytes.len()).unwrap_or(u32::MAX));
    out.extend_from_slice(bytes);
}

pub(super) fn put_varint32(out: &mut Vec<u8>, v: u32) {
    put_varint64(out, u64::from(v));
}

pub(super) fn put_varint64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Why decoding failed, at a byte offset of the encoding.
#[derive(Debug)]
pub(crate) struct DecodeFailure {
    pub offset: usize,
    pub detail: String,
    /// A tag or subtag from a newer Shale, rather than damage.
    pub unsupported: bool,
}

impl DecodeFailure {
    pub fn corrupt(offset: usize, detail: impl Into<String>) -> Self {
        DecodeFailure {
            offset,
            detail: detail.into(),
            unsupported: false,
        }
    }

    pub fn into_error(self, file: &Path, record_offset: Option<u64>) -> Error {
        let (offset, detail) = match record_offset {
            Some(record) => (
                record,
                format!(
                    "version edit in the record at this offset, at edit byte {}: {}",
                    self.offset, self.detail
                ),
            ),
            None => (self.offset as u64, self.detail),
        };
        if self.unsupported {
            Error::NotSupported(format!("{} at offset {offset}: {detail}", file.display()))
        } else {
            Error::Corruption {
                file: file.to_path_buf(),
                offset,
                detail,
            }
        }
    }
}

pub(crate) type Decoded<T> = std::result::Result<T, DecodeFailure>;

/// A cursor over one field body; offsets in errors are offsets of the whole edit.
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    /// Offset of `data[0]` in the edit.
    base: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8], base: usize) -> Self {
        Reader { data, pos: 0, base }
    }

    pub fn at(&self) -> usize {
        self.base + self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    pub fn varint64(&mut self, what: &str) -> Decoded<u64> {
        let start = self.at();
        let mut value: u64 = 0;
        for i in 0..10 {
            let byte = *self.data.get(self.pos + i).ok_or_else(|| {
                DecodeFailure::corrupt(start, format!("{what}: truncated varint"))
            })?;
            if i > 0 && byte == 0 {
                return Err(DecodeFailure::corrupt(
                    start,
                    format!("{what}: over-long varint encoding"),
                ));
            }
            if i == 9 && byte > 1 {
                return Err(DecodeFailure::corrupt(
                    start,
                    format!("{what}: varint64 overflows"),
                ));
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                self.pos += i + 1;
                return Ok(value);
            }
        }
        Err(DecodeFailure::corrupt(
            start,
            format!("{what}: varint longer than 10 bytes"),
        ))
    }

    pub fn varint32(&mut self, what: &str) -> Decoded<u32> {
        let start = self.at();
        let value = self.varint64(what)?;
        if self.at() - start > 5 {
            return Err(DecodeFailure::corrupt(
                start,
                format!("{what}: varint32 longer than 5 bytes"),
            ));
        }
        u32::try_from(value)
            .map_err(|_| DecodeFailure::corrupt(start, format!("{what}: varint32 overflows")))
    }

    /// A length-prefixed byte string.
    pub fn bytes(&mut self, what: &str) -> Decoded<&'a [u8]> {
        let start = self.at();
        let len = self.varint32(what)? as usize;
        let bytes = self
            .pos
            .checked_add(len)
            .and_then(|end| self.data.get(self.pos..end))
            .ok_or_else(|| {
                DecodeFailure::corrupt(
                    start,
                    format!(
                        "{what} of {len} bytes runs past the end of its field ({} bytes left)",
                        self.data.len() - self.pos
                    ),
                )
            })?;
        self.pos += len;
        Ok(bytes)
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        let rest = self.data.get(self.pos..).unwrap_or(&[]);
        self.pos = self.data.len();
        rest
    }

    pub fn seqno(&mut self, what: &str) -> Decoded<SeqNo> {
        let start = self.at();
        let seqno = self.varint64(what)?;
        if seqno > MAX_SEQNO {
            return Err(DecodeFailure::corrupt(
                start,
                format!("{what} {seqno} exceeds the 56-bit seqno range"),
            ));
        }
        Ok(seqno)
    }

    pub fn internal_key(&mut self, what: &str) -> Decoded<InternalKey> {
        let start = self.at();
        let bytes = self.bytes(what)?;
        InternalKey::from_encoded(bytes.to_vec())
            .map_err(|e| DecodeFailure::corrupt(start, format!("{what}: {e}")))
    }

    /// Fails unless the body was consumed exactly; `what` names the field.
    pub fn finish(&self, what: &str) -> Decoded<()> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(DecodeFailure::corrupt(
                self.at(),
                format!(
                    "{} bytes left over at the end of a {what} field",
                    self.data.len() - self.pos
                ),
            ))
        }
    }
}

/// `bytes` as text, or corruption at `at`.
pub(super) fn utf8(bytes: &[u8], at: usize, what: &str) -> Decoded<String> {
    std::str::from_utf8(bytes)
        .map(str::to_owned)
        .map_err(|e| DecodeFailure::corrupt(at, format!("{what} is not UTF-8: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_edges() {
        for v in [
            0u64,
            1,
            127,
            128,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            let mut r = Reader::new(&buf, 0);
            assert_eq!(r.varint64("v").unwrap(), v);
            assert!(r.is_empty());
        }
        for bad in [
            &[0x80u8][..],
            &[0x81, 0x00],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
            &[0x80; 11],
        ] {
            assert!(Reader::new(bad, 0).varint64("v").is_err(), "{bad:02x?}");
        }
        let mut five = Vec::new();
        put_varint64(&mut five, u64::from(u32::MAX) + 1);
        assert!(Reader::new(&five, 0).varint32("v").is_err());
    }
}
