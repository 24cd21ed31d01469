//! Constants and encodings of the write-ahead log (docs/format/wal.md).
//!
//! Invariants:
//! 1. A physical record never straddles a `BLOCK_SIZE` boundary; when fewer bytes than the
//!    version's record header remain in a block they are zero-filled padding and the next
//!    record starts at the next block. So every block boundary inside the written data starts
//!    a record header.
//! 2. The checksum covers every header byte after itself (length, type, and in version 1 the
//!    log number) and the payload, and is stored masked.
//! 3. The file header record at offset 0 has the version 1 header in every version, so a
//!    reader learns the version (and the log number) before it needs the record layout.
//! 4. A version 2, 3 or 4 file is never recycled (its records carry no log number to tell stale
//!    records from this log's): a recycler must write version 1 records.
//! 5. Record type values never change; 0 is never a valid record, so zero bytes never decode
//!    as data.

/// Size of a block: records are laid out so that none straddles a multiple of this offset.
pub const BLOCK_SIZE: usize = 32 * 1024;

/// Bytes of a version 1 record header: checksum u32, length u16, type u8, log number u32. The
/// file header record at offset 0 has this header in every version, so any reader can parse it.
pub const V1_HEADER_SIZE: usize = 11;

/// Bytes of a record header in the version this build writes (4, as in 2 and 3): checksum u32,
/// length u16, type u8. Every record after the file header has it.
pub const HEADER_SIZE: usize = 7;

/// The largest payload one physical record can carry in the version this build writes (a
/// whole block minus its header).
pub const MAX_FRAGMENT_SIZE: usize = BLOCK_SIZE - HEADER_SIZE;

/// The magic at the start of the file header record's payload.
pub const MAGIC: &[u8; 8] = b"SHALEWAL";

/// The format version this build writes, and the newest it reads. Versions 3 and 4 have
/// version 2's records. Version 3 write batches may hold the default-keyspace entry tags
/// (`docs/format/write_batch.md`), which a version 2 reader would reject as corrupt; version 4
/// records start with the compact batch header ([`COMPACT_BATCH_HEADER_VERSION`]).
pub const FORMAT_VERSION: u32 = 4;

/// The first format version whose records carry a commit group's first seqno and count as
/// varints instead of the write batch's fixed 12-byte header (docs/format/wal.md, "Logical
/// records").
pub const COMPACT_BATCH_HEADER_VERSION: u32 = 4;

/// The oldest format version this build reads (and can still write, for tests).
pub const OLDEST_FORMAT_VERSION: u32 = 1;

/// Bytes of the file header record's payload (every version): magic, version, log number.
pub const FILE_HEADER_PAYLOAD_SIZE: usize = 20;

/// Bytes of the file header record at offset 0: its version 1 header and its payload.
pub const FILE_HEADER_RECORD_SIZE: usize = V1_HEADER_SIZE + FILE_HEADER_PAYLOAD_SIZE;

/// The record header layout of a format version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Layout {
    /// Version 1: the header carries the low 32 bits of the log number, so the stale records of
    /// a recycled file are recognised. Also the layout of every file header record.
    WithLogNumber,
    /// Versions 2, 3 and 4: no log number. Sound only because such a file is never recycled: it is
    /// always created empty, so every checksum-valid record in it was written for this log.
    Compact,
}

impl Layout {
    /// The layout of the records after the file header in format `version`.
    pub(crate) fn of_version(version: u32) -> Option<Layout> {
        match version {
            1 => Some(Layout::WithLogNumber),
            2..=4 => Some(Layout::Compact),
            _ => None,
        }
    }

    /// Bytes of a record header in this layout.
    pub(crate) fn header_size(self) -> usize {
        match self {
            Layout::WithLogNumber => V1_HEADER_SIZE,
            Layout::Compact => HEADER_SIZE,
        }
    }
}

/// The type byte of a physical record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RecordType {
    /// A whole logical record.
    Full = 1,
    /// The first fragment of a logical record.
    First = 2,
    /// A fragment that is neither first nor last.
    Middle = 3,
    /// The last fragment of a logical record.
    Last = 4,
    /// The file header; only ever the first record of a file.
    FileHeader = 5,
}

impl RecordType {
    /// Decodes a type byte; `None` for 0 (padding, never a record) and unknown values.
    pub fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            1 => Some(Self::Full),
            2 => Some(Self::First),
            3 => Some(Self::Middle),
            4 => Some(Self::Last),
            5 => Some(Self::FileHeader),
            _ => None,
        }
    }

    /// The name used in error messages, tools and the golden test.
    pub fn name(self) -> &'static str {
        match self {
            Self::Full => "FULL",
            Self::First => "FIRST",
            Self::Middle => "MIDDLE",
            Self::Last => "LAST",
            Self::FileHeader => "FILE_HEADER",
        }
    }
}

/// The name of the log file with `log_number`: at least six digits, then `.wal`.
pub fn log_file_name(log_number: u64) -> String {
    format!("{log_number:06}.wal")
}

/// The log number of a file named by [`log_file_name`], or `None` for any other name.
pub fn parse_log_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".wal")?;
    if digits.len() < 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The low 32 bits of a log number, as every record header stores them.
pub(crate) fn log_number_low(log_number: u64) -> u32 {
    log_number as u32
}

/// Added after rotating, as `LevelDB` masks stored CRCs (the same mask as docs/format/sst.md).
const CRC_MASK_DELTA: u32 = 0xa282_ead8;

/// The stored checksum of a record whose header bytes after the checksum are `header_rest`
/// (length, type, log number) and whose payload is `payload`.
pub(crate) fn record_checksum(header_rest: &[u8], payload: &[u8]) -> u32 {
    masked(crc32c::crc32c_append(crc32c::crc32c(header_rest), payload))
}

fn masked(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(CRC_MASK_DELTA)
}

/// Appends a physical record (header in `layout` and payload) to `out`. `payload` must fit
/// one block; `log_low` is stored only in the `WithLogNumber` layout.
pub(crate) fn put_record(
    out: &mut Vec<u8>,
    layout: Layout,
    kind: RecordType,
    log_low: u32,
    payload: &[u8],
) {
    debug_assert!(payload.len() <= BLOCK_SIZE - layout.header_size());
    let mut rest = [0u8; V1_HEADER_SIZE - 4];
    rest[0..2].copy_from_slice(&(payload.len() as u16).to_le_bytes());
    rest[2] = kind as u8;
    rest[3..7].copy_from_slice(&log_low.to_le_bytes());
    let rest = &rest[..layout.header_size() - 4];
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(rest);
    out.extend_from_slice(payload);
    // The header rest and the payload lie together in `out`: one checksum pass over both
    // (the value of `record_checksum(rest, payload)`) instead of two calls.
    let checksum = masked(crc32c::crc32c(out.get(start + 4..).unwrap_or_default()));
    if let Some(slot) = out.get_mut(start..start + 4) {
        slot.copy_from_slice(&checksum.to_le_bytes());
    }
}

/// The decoded fields of a record header (not yet checked against anything).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub checksum: u32,
    pub length: usize,
    pub type_byte: u8,
    /// The low 32 bits of the log number (`WithLogNumber` layout only).
    pub log_low: Option<u32>,
}

impl Header {
    /// Decodes the header in `layout` at the start of `bytes`; `None` when `bytes` is shorter
    /// than the header.
    pub(crate) fn decode(bytes: &[u8], layout: Layout) -> Option<Header> {
        let h = bytes.get(..layout.header_size())?;
        Some(Header {
            checksum: u32::from_le_bytes([h[0], h[1], h[2], h[3]]),
            length: u16::from_le_bytes([h[4], h[5]]) as usize,
            type_byte: h[6],
            log_low: match layout {
                Layout::WithLogNumber => Some(u32::from_le_bytes([h[7], h[8], h[9], h[10]])),
                Layout::Compact => None,
            },
        })
    }
}

/// The payload of the file header record of a log in format `version`.
pub(crate) fn file_header_payload(version: u32, log_number: u64) -> [u8; FILE_HEADER_PAYLOAD_SIZE] {
    let mut out = [0u8; FILE_HEADER_PAYLOAD_SIZE];
    out[0..8].copy_from_slice(MAGIC);
    out[8..12].copy_from_slice(&version.to_le_bytes());
    out[12..20].copy_from_slice(&log_number.to_le_bytes());
    out
}

/// A file header payload, decoded far enough to judge it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileHeaderPayload {
    /// Not a Shale WAL (wrong magic, or too short to hold magic and version).
    NotAWal,
    /// A WAL of some format version; `log_number` when the payload has one where versions 1
    /// and 2 put it.
    Version {
        version: u32,
        log_number: Option<u64>,
        len: usize,
    },
}

pub(crate) fn decode_file_header(payload: &[u8]) -> FileHeaderPayload {
    let (Some(magic), Some(version)) = (payload.get(0..8), payload.get(8..12)) else {
        return FileHeaderPayload::NotAWal;
    };
    if magic != MAGIC {
        return FileHeaderPayload::NotAWal;
    }
    let version = u32::from_le_bytes([version[0], version[1], version[2], version[3]]);
    let log_number = payload
        .get(12..20)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes);
    FileHeaderPayload::Version {
        version,
        log_number,
        len: payload.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_round_trip() {
        assert_eq!(log_file_name(7), "000007.wal");
        assert_eq!(log_file_name(12_345_678), "12345678.wal");
        assert_eq!(parse_log_file_name("000007.wal"), Some(7));
        assert_eq!(parse_log_file_name("12345678.wal"), Some(12_345_678));
        for bad in [
            "7.wal",
            "000007.sst",
            "00000x.wal",
            "000007.wal.tmp",
            "+00007.wal",
        ] {
            assert_eq!(parse_log_file_name(bad), None, "{bad}");
        }
    }

    #[test]
    #[allow(clippy::manual_rotate)] // Spelled exactly as the spec writes it.
    fn checksum_is_masked_crc32c_of_header_rest_and_payload() {
        let rest = [3u8, 0, 1, 7, 0, 0, 0];
        let crc = crc32c::crc32c(&[3, 0, 1, 7, 0, 0, 0, b'a', b'b', b'c']);
        assert_eq!(
            record_checksum(&rest, b"abc"),
            ((crc >> 15) | (crc << 17)).wrapping_add(0xa282_ead8)
        );
    }

    /// `put_record` checksums the bytes it appended, not the buffer before them.
    #[test]
    fn a_record_appended_after_others_checksums_only_itself() {
        let mut out = Vec::new();
        put_record(&mut out, Layout::Compact, RecordType::Full, 0, b"first");
        let start = out.len();
        put_record(&mut out, Layout::Compact, RecordType::Full, 0, b"second");
        let second = &out[start..];
        let h = Header::decode(second, Layout::Compact).unwrap();
        assert_eq!(h.checksum, record_checksum(&second[4..7], b"second"));
        assert_eq!(&second[7..], b"second");
    }

    #[test]
    fn record_encoding_matches_header_decoding() {
        let mut out = Vec::new();
        put_record(
            &mut out,
            Layout::WithLogNumber,
            RecordType::Middle,
            0xdead_beef,
            b"payload",
        );
        assert_eq!(out.len(), V1_HEADER_SIZE + 7);
        let h = Header::decode(&out, Layout::WithLogNumber).unwrap();
        assert_eq!(h.length, 7);
        assert_eq!(RecordType::from_byte(h.type_byte), Some(RecordType::Middle));
        assert_eq!(h.log_low, Some(0xdead_beef));
        assert_eq!(
            h.checksum,
            record_checksum(&out[4..V1_HEADER_SIZE], b"payload")
        );

        let mut out = Vec::new();
        put_record(
            &mut out,
            Layout::Compact,
            RecordType::Last,
            0xdead_beef,
            b"abc",
        );
        assert_eq!(out, {
            let mut expected = record_checksum(&[3, 0, 4], b"abc").to_le_bytes().to_vec();
            expected.extend_from_slice(&[3, 0, 4, b'a', b'b', b'c']);
            expected
        });
        let h = Header::decode(&out, Layout::Compact).unwrap();
        assert_eq!((h.length, h.type_byte, h.log_low), (3, 4, None));
        assert_eq!(
            Header::decode(&out[..HEADER_SIZE - 1], Layout::Compact),
            None
        );
        assert_eq!(RecordType::from_byte(0), None);
        assert_eq!(RecordType::from_byte(6), None);
    }

    #[test]
    fn file_header_decoding() {
        let payload = file_header_payload(FORMAT_VERSION, 0x0102_0304_0506_0708);
        assert_eq!(
            decode_file_header(&payload),
            FileHeaderPayload::Version {
                version: FORMAT_VERSION,
                log_number: Some(0x0102_0304_0506_0708),
                len: FILE_HEADER_PAYLOAD_SIZE,
            }
        );
        assert_eq!(decode_file_header(b"SHALEWA"), FileHeaderPayload::NotAWal);
        assert_eq!(
            decode_file_header(b"SHALESST\x01\0\0\0"),
            FileHeaderPayload::NotAWal
        );
    }
}
