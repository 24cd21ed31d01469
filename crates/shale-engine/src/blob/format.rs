//! The blob file format and the blob reference (docs/format/blob.md): constants, header,
//! footer, record framing and [`BlobReference`].
//!
//! Invariants:
//! 1. The constants and tags below never change meaning; a newer header version or reference
//!    version is refused as `NotSupported`.
//! 2. Decoders treat bytes as untrusted: every length is checked before it is used, nothing
//!    panics, and a reference's value length fits in a u32 before anything is allocated.

use std::path::{Path, PathBuf};

/// `SHALEBLB`: the first and last eight bytes of every blob file.
pub const BLOB_MAGIC: &[u8; 8] = b"SHALEBLB";

/// The blob file format version this build writes and the newest it reads.
pub const BLOB_FORMAT_VERSION: u32 = 1;

/// The blob reference version this build writes and reads.
pub const BLOB_REFERENCE_VERSION: u8 = 1;

/// Bytes of the header.
pub const HEADER_SIZE: u64 = 32;

/// Bytes of the footer.
pub const FOOTER_SIZE: u64 = 32;

/// Bytes of a record besides its key and value: key length, value length, codec, checksum.
pub const RECORD_OVERHEAD: u64 = 13;

/// Bytes of a record's fixed header (before the key).
pub(crate) const RECORD_HEADER_SIZE: usize = 9;

/// The TTL write time a reference may carry after its fields (docs/format/ttl.md).
const WRITE_TIME_LEN: usize = 8;

/// Added after rotating, as `LevelDB` masks stored CRCs (the same mask as docs/format/sst.md).
const CRC_MASK_DELTA: u32 = 0xa282_ead8;

/// Masks a CRC-32C for storage.
pub(crate) fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(CRC_MASK_DELTA)
}

/// Name of blob file `number` in the database directory.
pub fn blob_file_name(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.blob"))
}

/// The number of a blob file name (`NNNNNN.blob`), if it is one.
pub fn parse_blob_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".blob")?;
    if digits.len() < 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The size of a record holding a `key_len`-byte key and a `value_len`-byte stored value.
pub fn record_size(key_len: usize, value_len: u64) -> u64 {
    RECORD_OVERHEAD + key_len as u64 + value_len
}

/// The header of a blob file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobHeader {
    /// The keyspace the file belongs to.
    pub keyspace: u32,
    /// The keyspace's blob codec when the file was written.
    pub compression: u8,
}

impl BlobHeader {
    /// The 32 header bytes.
    pub fn encode(&self) -> [u8; HEADER_SIZE as usize] {
        let mut out = [0u8; HEADER_SIZE as usize];
        out[0..8].copy_from_slice(BLOB_MAGIC);
        out[8..12].copy_from_slice(&BLOB_FORMAT_VERSION.to_le_bytes());
        out[12..16].copy_from_slice(&self.keyspace.to_le_bytes());
        out[16] = self.compression;
        let crc = mask(crc32c::crc32c(&out[..28]));
        out[28..32].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes the header; `Err((detail, unsupported))`.
    pub fn decode(bytes: &[u8]) -> Result<BlobHeader, (String, bool)> {
        let Some(bytes) = bytes.get(..HEADER_SIZE as usize) else {
            return Err((
                format!("{} bytes cannot hold the 32-byte blob header", bytes.len()),
                false,
            ));
        };
        if &bytes[0..8] != BLOB_MAGIC {
            return Err((
                format!(
                    "blob magic is {}, not SHALEBLB: not a blob file",
                    shale_sst::printable(&bytes[0..8])
                ),
                false,
            ));
        }
        let stored = u32_at(bytes, 28);
        let computed = mask(crc32c::crc32c(&bytes[..28]));
        if stored != computed {
            return Err((
                format!(
                    "header checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
                ),
                false,
            ));
        }
        let version = u32_at(bytes, 8);
        if version != BLOB_FORMAT_VERSION {
            return Err((
                format!(
                    "blob format version {version} is not {BLOB_FORMAT_VERSION}: written by a \
                     newer Shale?"
                ),
                true,
            ));
        }
        if bytes[17..28].iter().any(|&b| b != 0) {
            return Err(("reserved header bytes are not zero".to_owned(), false));
        }
        Ok(BlobHeader {
            keyspace: u32_at(bytes, 12),
            compression: bytes[16],
        })
    }
}

/// The footer of a finished blob file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobFooter {
    /// Records in the file.
    pub record_count: u64,
    /// Bytes of all records (the file size less header and footer).
    pub record_bytes: u64,
    /// Masked CRC-32C of every record byte.
    pub records_checksum: u32,
}

impl BlobFooter {
    /// The 32 footer bytes.
    pub fn encode(&self) -> [u8; FOOTER_SIZE as usize] {
        let mut out = [0u8; FOOTER_SIZE as usize];
        out[0..8].copy_from_slice(&self.record_count.to_le_bytes());
        out[8..16].copy_from_slice(&self.record_bytes.to_le_bytes());
        out[16..20].copy_from_slice(&self.records_checksum.to_le_bytes());
        let crc = mask(crc32c::crc32c(&out[..20]));
        out[20..24].copy_from_slice(&crc.to_le_bytes());
        out[24..32].copy_from_slice(BLOB_MAGIC);
        out
    }

    /// Decodes the footer.
    pub fn decode(bytes: &[u8]) -> Result<BlobFooter, String> {
        let Some(bytes) = bytes.get(..FOOTER_SIZE as usize) else {
            return Err("the file is too short to hold a blob footer".to_owned());
        };
        if &bytes[24..32] != BLOB_MAGIC {
            return Err("no footer magic: the blob file was never finished".to_owned());
        }
        let stored = u32_at(bytes, 20);
        let computed = mask(crc32c::crc32c(&bytes[..20]));
        if stored != computed {
            return Err(format!(
                "footer checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
            ));
        }
        Ok(BlobFooter {
            record_count: u64_at(bytes, 0),
            record_bytes: u64_at(bytes, 8),
            records_checksum: u32_at(bytes, 16),
        })
    }
}

/// The fixed header of a record.
pub(crate) fn record_header(key_len: u32, value_len: u32, codec: u8) -> [u8; RECORD_HEADER_SIZE] {
    let mut out = [0u8; RECORD_HEADER_SIZE];
    out[0..4].copy_from_slice(&key_len.to_le_bytes());
    out[4..8].copy_from_slice(&value_len.to_le_bytes());
    out[8] = codec;
    out
}

/// A decoded record (borrowing the bytes it was read from).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobRecord<'a> {
    /// The user key.
    pub key: &'a [u8],
    /// The stored (possibly compressed) value.
    pub value: &'a [u8],
    /// The value's compression tag.
    pub compression: u8,
}

impl<'a> BlobRecord<'a> {
    /// Decodes the record at the start of `bytes` and checks its checksum. Returns the record
    /// and its size.
    pub fn decode(bytes: &'a [u8]) -> Result<(BlobRecord<'a>, usize), String> {
        let Some(header) = bytes.get(..RECORD_HEADER_SIZE) else {
            return Err("too few bytes for a record header".to_owned());
        };
        let key_len = u32_at(header, 0) as usize;
        let value_len = u32_at(header, 4) as usize;
        let body_end = RECORD_HEADER_SIZE
            .checked_add(key_len)
            .and_then(|n| n.checked_add(value_len))
            .filter(|&end| end.checked_add(4).is_some_and(|size| size <= bytes.len()))
            .ok_or_else(|| {
                format!(
                    "a record of a {key_len}-byte key and a {value_len}-byte value runs past \
                     the {} bytes available",
                    bytes.len()
                )
            })?;
        let stored = u32_at(bytes, body_end);
        let computed = mask(crc32c::crc32c(&bytes[..body_end]));
        if stored != computed {
            return Err(format!(
                "record checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
            ));
        }
        let key_end = RECORD_HEADER_SIZE + key_len;
        Ok((
            BlobRecord {
                key: &bytes[RECORD_HEADER_SIZE..key_end],
                value: &bytes[key_end..body_end],
                compression: header[8],
            },
            body_end + 4,
        ))
    }
}

/// Where a value lives in a blob file: the value of a `BlobIndex` table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlobReference {
    /// The blob file's number.
    pub file_number: u64,
    /// Where the record starts.
    pub offset: u64,
    /// The stored value's length.
    pub value_len: u32,
    /// The stored value's compression tag.
    pub compression: u8,
}

impl BlobReference {
    /// Appends the encoding (without any TTL write time) to `out`.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        out.push(BLOB_REFERENCE_VERSION);
        put_varint64(out, self.file_number);
        put_varint64(out, self.offset);
        put_varint64(out, u64::from(self.value_len));
        out.push(self.compression);
    }

    /// The encoding of the reference to a record of `stored_value` (whose TTL write time,
    /// under a TTL, is copied after the fields).
    pub fn encode_for(&self, stored_value: &[u8], ttl: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(24);
        self.encode_to(&mut out);
        if ttl {
            if let Some(time) = stored_value
                .len()
                .checked_sub(WRITE_TIME_LEN)
                .and_then(|at| stored_value.get(at..))
            {
                out.extend_from_slice(time);
            }
        }
        out
    }

    /// Decodes a reference; `Err((detail, unsupported))`.
    pub fn decode(bytes: &[u8]) -> Result<BlobReference, (String, bool)> {
        let (&version, mut rest) = bytes
            .split_first()
            .ok_or_else(|| ("an empty blob reference".to_owned(), false))?;
        if version != BLOB_REFERENCE_VERSION {
            return Err((
                format!(
                    "blob reference version {version} is not {BLOB_REFERENCE_VERSION}: written by \
                     a newer Shale?"
                ),
                true,
            ));
        }
        let file_number = get_varint64(&mut rest, "blob file number")?;
        let offset = get_varint64(&mut rest, "record offset")?;
        let value_len = get_varint64(&mut rest, "value length")?;
        let value_len = u32::try_from(value_len)
            .map_err(|_| (format!("value length {value_len} exceeds 2^32 - 1"), false))?;
        let (&compression, rest) = rest
            .split_first()
            .ok_or_else(|| ("the blob reference ends before its codec".to_owned(), false))?;
        if !rest.is_empty() && rest.len() != WRITE_TIME_LEN {
            return Err((
                format!("{} stray bytes after the blob reference", rest.len()),
                false,
            ));
        }
        Ok(BlobReference {
            file_number,
            offset,
            value_len,
            compression,
        })
    }
}

impl std::fmt::Display for BlobReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "blob {:06} offset {} size {} codec {}",
            self.file_number, self.offset, self.value_len, self.compression
        )
    }
}

fn put_varint64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A minimal LEB128 varint64 (docs/format/manifest.md), advancing `input`.
fn get_varint64(input: &mut &[u8], what: &str) -> Result<u64, (String, bool)> {
    let mut value: u64 = 0;
    for (i, &byte) in input.iter().enumerate().take(10) {
        let bits = u64::from(byte & 0x7f);
        if i == 9 && byte > 1 {
            break;
        }
        value |= bits << (7 * i);
        if byte & 0x80 == 0 {
            if i > 0 && byte == 0 {
                return Err((format!("{what} is not minimally encoded"), false));
            }
            *input = &input[i + 1..];
            return Ok(value);
        }
    }
    Err((format!("{what} is a truncated or overlong varint"), false))
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(b)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_round_trips_with_and_without_write_time() {
        let r = BlobReference {
            file_number: 123_456,
            offset: 1 << 40,
            value_len: u32::MAX,
            compression: 4,
        };
        let plain = r.encode_for(b"value", false);
        assert_eq!(BlobReference::decode(&plain), Ok(r));
        let with_time = r.encode_for(b"value+12345678", true);
        assert_eq!(with_time.len(), plain.len() + 8);
        assert_eq!(&with_time[plain.len()..], b"12345678");
        assert_eq!(BlobReference::decode(&with_time), Ok(r));
    }

    #[test]
    fn reference_damage_is_refused() {
        let r = BlobReference {
            file_number: 7,
            offset: 32,
            value_len: 5000,
            compression: 0,
        };
        let good = r.encode_for(b"", false);
        for cut in 0..good.len() {
            assert!(BlobReference::decode(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut newer = good.clone();
        newer[0] = 2;
        assert!(matches!(BlobReference::decode(&newer), Err((_, true))));
        let mut stray = good.clone();
        stray.push(1);
        assert!(BlobReference::decode(&stray).is_err());
        // 0x80 0x00 is a non-minimal zero.
        assert!(BlobReference::decode(&[1, 0x80, 0x00, 32, 1, 0]).is_err());
    }

    #[test]
    fn header_and_footer_round_trip_and_detect_every_flipped_byte() {
        let header = BlobHeader {
            keyspace: 9,
            compression: 3,
        };
        let bytes = header.encode();
        assert_eq!(BlobHeader::decode(&bytes), Ok(header));
        for i in 0..bytes.len() {
            let mut bad = bytes;
            bad[i] ^= 0x40;
            assert!(BlobHeader::decode(&bad).is_err(), "header byte {i}");
        }
        let footer = BlobFooter {
            record_count: 3,
            record_bytes: 999,
            records_checksum: 0xdead_beef,
        };
        let bytes = footer.encode();
        assert_eq!(BlobFooter::decode(&bytes), Ok(footer));
        for i in 0..bytes.len() {
            let mut bad = bytes;
            bad[i] ^= 0x40;
            assert!(BlobFooter::decode(&bad).is_err(), "footer byte {i}");
        }
    }

    #[test]
    fn file_names() {
        assert_eq!(
            blob_file_name(Path::new("/db"), 42),
            PathBuf::from("/db/000042.blob")
        );
        assert_eq!(parse_blob_file_name("000042.blob"), Some(42));
        assert_eq!(parse_blob_file_name("1234567.blob"), Some(1_234_567));
        assert_eq!(parse_blob_file_name("42.blob"), None);
        assert_eq!(parse_blob_file_name("000042.sst"), None);
    }
}
