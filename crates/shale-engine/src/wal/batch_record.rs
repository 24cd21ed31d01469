//! The payload of a WAL record: one commit group's write batch, with the batch header in the
//! form of the log's format version (docs/format/wal.md, "Logical records";
//! `docs/format/write_batch.md`, "The header in a WAL record").
//!
//! Invariants:
//! 1. The entries are the same bytes in every version and in memory; only the header before
//!    them differs. Versions 1 to 3 carry the in-memory 12-byte header (first seqno u64, count
//!    u32). Version 4 carries `first seqno: varint64 | count: varint32`, both minimal LEB128, so
//!    a record has exactly one encoding.
//! 2. [`GroupRecord`] copies each member batch's entries once: it keeps [`MAX_HEADER_SIZE`]
//!    bytes free in front of them and writes the header right-aligned there, so the payload is
//!    a suffix of its buffer.
//! 3. Decoding treats the payload as untrusted: a truncated header, an over-long varint or one
//!    that does not fit its width, and everything [`WriteBatch::from_data`] rejects are
//!    corruption naming the byte inside the payload.

use shale_sst::SeqNo;

use super::format::{COMPACT_BATCH_HEADER_VERSION, FORMAT_VERSION, OLDEST_FORMAT_VERSION};
use crate::batch::{get_varint32, BatchError, WriteBatch, HEADER_SIZE};
use crate::error::{Error, Result};
use crate::version::coding::Reader;

/// Most bytes of a varint64.
const MAX_VARINT64_SIZE: usize = 10;

/// Most bytes of a varint32.
const MAX_VARINT32_SIZE: usize = 5;

/// Room a record's header can take in any version: version 4's largest (a 10-byte seqno, which
/// a valid seqno never needs, and a 5-byte count) is above the fixed header's 12 bytes.
pub(crate) const MAX_HEADER_SIZE: usize = MAX_VARINT64_SIZE + MAX_VARINT32_SIZE;

const _: () = assert!(MAX_HEADER_SIZE >= HEADER_SIZE);

/// The WAL record of a commit group, assembled in a buffer reused from group to group.
#[derive(Debug, Clone)]
pub(crate) struct GroupRecord {
    /// `MAX_HEADER_SIZE` bytes of room for the header, then every member's entries
    /// (invariant 2).
    buf: Vec<u8>,
    count: u32,
}

impl Default for GroupRecord {
    fn default() -> Self {
        Self::new()
    }
}

impl GroupRecord {
    /// An empty record.
    pub(crate) fn new() -> GroupRecord {
        GroupRecord {
            buf: vec![0; MAX_HEADER_SIZE],
            count: 0,
        }
    }

    /// Removes every entry, keeping the buffer.
    pub(crate) fn clear(&mut self) {
        self.buf.truncate(MAX_HEADER_SIZE);
        self.count = 0;
    }

    /// Appends `batch`'s entries after those already in the record. Refuses a group of more
    /// entries than a batch can count, leaving the record unchanged.
    pub(crate) fn append(&mut self, batch: &WriteBatch) -> Result<()> {
        self.count = self.count.checked_add(batch.count()).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "a commit group of {} + {} entries exceeds the {} a write batch can hold",
                self.count,
                batch.count(),
                u32::MAX
            ))
        })?;
        self.buf.extend_from_slice(batch.entries());
        Ok(())
    }

    /// Bytes the buffer holds: the reserved header room and the entries.
    pub(crate) fn buffered_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Writes the header of a record in format `format_version` whose first entry has
    /// `first_seqno`, and returns the payload: the header and the entries.
    pub(crate) fn encode(&mut self, first_seqno: SeqNo, format_version: u32) -> &[u8] {
        // On every commit's path: the header goes straight into its room before the entries
        // (invariant 2), its length known first. `buf` always starts with that room (`new`,
        // `clear`), so the slices exist.
        let start = if format_version < COMPACT_BATCH_HEADER_VERSION {
            let start = MAX_HEADER_SIZE - HEADER_SIZE;
            if let Some(header) = self.buf.get_mut(start..MAX_HEADER_SIZE) {
                let (seqno, count) = header.split_at_mut(8);
                seqno.copy_from_slice(&first_seqno.to_le_bytes());
                count.copy_from_slice(&self.count.to_le_bytes());
            }
            start
        } else {
            let seqno_size = varint_size(first_seqno);
            let start = MAX_HEADER_SIZE - seqno_size - varint_size(u64::from(self.count));
            if let Some(header) = self.buf.get_mut(start..MAX_HEADER_SIZE) {
                let (seqno, count) = header.split_at_mut(seqno_size);
                put_varint(seqno, first_seqno);
                put_varint(count, u64::from(self.count));
            }
            start
        };
        self.buf.get(start..).unwrap_or_default()
    }
}

/// Bytes of the minimal LEB128 varint of `value` (1 to 10): its significant bits divided by 7,
/// rounded up. `(9 * bits + 64) / 64` is that quotient for every `bits` from 1 to 64 (the test
/// checks each), without a division on every commit's path.
fn varint_size(value: u64) -> usize {
    let bits = 64 - (value | 1).leading_zeros() as usize;
    (9 * bits + 64) / 64
}

/// Writes `value` as a minimal LEB128 varint filling `out`, which is `varint_size(value)`
/// bytes long.
fn put_varint(out: &mut [u8], mut value: u64) {
    debug_assert_eq!(out.len(), varint_size(value));
    for byte in out.iter_mut() {
        *byte = (value as u8) | 0x80;
        value >>= 7;
    }
    // The last group is below 0x80 (`out` is exactly long enough): clear its "more" bit.
    if let Some(last) = out.last_mut() {
        *last &= 0x7f;
    }
}

/// `batch` as the payload of a record in format `format_version`.
pub(crate) fn encode(batch: &WriteBatch, format_version: u32) -> Result<Vec<u8>> {
    if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&format_version) {
        return Err(Error::InvalidArgument(format!(
            "WAL format version {format_version} cannot be written: this build writes versions \
             {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION}"
        )));
    }
    let mut record = GroupRecord::new();
    record.append(batch)?;
    Ok(record.encode(batch.first_seqno(), format_version).to_vec())
}

/// Decodes the payload of a record of a log in format `format_version` (`None`: unknown, the
/// file header was damaged) into a batch. A failure names the byte inside the payload.
pub(crate) fn decode(
    data: Vec<u8>,
    format_version: Option<u32>,
) -> std::result::Result<WriteBatch, BatchError> {
    match format_version {
        Some(version) if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) => {
            Err(BatchError::new(
                0,
                format!(
                    "WAL format version {version} is not one this build reads \
                     ({OLDEST_FORMAT_VERSION} to {FORMAT_VERSION})"
                ),
            ))
        }
        Some(version) if version < COMPACT_BATCH_HEADER_VERSION => WriteBatch::validated(data),
        Some(_) => decode_compact(&data),
        None => {
            // Versions 2 to 4 share the record layout, so the payload alone must say which
            // header it has; a payload both read as valid batches is refused rather than
            // guessed at.
            let compact = decode_compact(&data);
            let fixed = WriteBatch::validated(data);
            match (compact, fixed) {
                (Ok(batch), Err(_)) | (Err(_), Ok(batch)) => Ok(batch),
                (Ok(_), Ok(_)) => Err(BatchError::new(
                    0,
                    "the log's format version is unknown (its file header is damaged) and the \
                     payload is a valid batch under both the version 1-3 and the version 4 \
                     header, so it cannot be told which it is",
                )),
                (Err(compact), Err(fixed)) => Err(BatchError::new(
                    compact.offset,
                    format!(
                        "the log's format version is unknown (its file header is damaged) and \
                         the payload decodes under neither header: as version 4, {}; as \
                         versions 1-3, at byte {}: {}",
                        compact.detail, fixed.offset, fixed.detail
                    ),
                )),
            }
        }
    }
}

/// Decodes a version 4 payload: the varint header, then the entries, rebuilt into the
/// in-memory encoding (the recovery path; one copy of the entries).
fn decode_compact(data: &[u8]) -> std::result::Result<WriteBatch, BatchError> {
    // The MANIFEST's minimal-varint reader (docs/format/manifest.md): one encoding per value.
    let mut reader = Reader::new(data, 0);
    let first_seqno = reader
        .varint64("first seqno")
        .map_err(|e| BatchError::new(e.offset, e.detail))?;
    let seqno_size = reader.at();
    let mut at = seqno_size;
    let count = get_varint32(data, &mut at, "entry count")?;
    let header_size = at;
    let entries = data.get(header_size..).unwrap_or_default();
    let mut rep = Vec::with_capacity(HEADER_SIZE + entries.len());
    rep.extend_from_slice(&first_seqno.to_le_bytes());
    rep.extend_from_slice(&count.to_le_bytes());
    rep.extend_from_slice(entries);
    WriteBatch::validated(rep).map_err(|e| BatchError {
        // Offsets of the in-memory encoding, as offsets of the payload.
        offset: match e.offset {
            o if o >= HEADER_SIZE => o - HEADER_SIZE + header_size,
            o if o >= 8 => seqno_size,
            _ => 0,
        },
        detail: e.detail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint64(value: u64) -> Vec<u8> {
        let mut out = vec![0u8; varint_size(value)];
        put_varint(&mut out, value);
        out
    }

    #[test]
    fn varint64_edges() {
        for (value, len) in [
            (0u64, 1),
            (127, 1),
            (128, 2),
            ((1 << 28) - 1, 4),
            (1 << 28, 5),
            ((1 << 56) - 1, 8),
            (1 << 56, 9),
            (u64::MAX, 10),
        ] {
            let bytes = varint64(value);
            assert_eq!(bytes.len(), len, "{value}");
            let mut reader = Reader::new(&bytes, 0);
            assert_eq!(reader.varint64("v").unwrap(), value);
            assert_eq!(reader.at(), len);
        }
        for bad in [
            &[][..],
            &[0x80],
            &[0x81, 0x00],
            &[0xff, 0x80, 0x00],
            &[0xff; 10],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
            &[0x80; 11],
        ] {
            assert!(Reader::new(bad, 0).varint64("v").is_err(), "{bad:02x?}");
        }
    }

    #[test]
    fn varint_size_is_the_bits_divided_by_7_rounded_up() {
        for bits in 1..=64u32 {
            let expected = bits.div_ceil(7) as usize;
            let lowest = 1u64 << (bits - 1);
            let highest = u64::MAX >> (64 - bits);
            assert_eq!(varint_size(lowest), expected, "{bits} bits");
            assert_eq!(varint_size(highest), expected, "{bits} bits");
        }
        assert_eq!(varint_size(0), 1);
    }

    #[test]
    fn group_record_writes_the_header_right_before_the_entries() {
        let mut one = WriteBatch::new();
        one.put(0, b"k", b"v").unwrap();
        let mut two = WriteBatch::new();
        two.delete(5, b"gone").unwrap();
        two.put(0, b"x", b"").unwrap();
        let mut record = GroupRecord::new();
        record.append(&one).unwrap();
        record.append(&two).unwrap();
        let entries = [one.entries(), two.entries()].concat();

        let payload = record.encode(300, 4).to_vec();
        assert_eq!(payload[..3], [0xac, 0x02, 3]);
        assert_eq!(payload[3..], entries[..]);
        let payload = record.encode(7, 3).to_vec();
        assert_eq!(payload[..12], [7, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0]);
        assert_eq!(payload[12..], entries[..]);

        // Reused: a cleared record holds the next group's entries only.
        record.clear();
        record.append(&one).unwrap();
        assert_eq!(record.encode(1, 4), [&[1u8, 1][..], one.entries()].concat());
        assert_eq!(
            record.buffered_bytes(),
            MAX_HEADER_SIZE + one.entries().len()
        );
    }

    #[test]
    fn a_group_that_overflows_the_count_is_refused_unchanged() {
        let mut one = WriteBatch::new();
        one.put(0, b"k", b"v").unwrap();
        let mut record = GroupRecord::new();
        record.append(&one).unwrap();
        record.count = u32::MAX;
        assert!(matches!(
            record.append(&one),
            Err(Error::InvalidArgument(_))
        ));
        assert_eq!(record.count, u32::MAX);
        assert_eq!(
            record.buffered_bytes(),
            MAX_HEADER_SIZE + one.entries().len()
        );
    }

    #[test]
    fn decode_maps_entry_errors_to_payload_offsets() {
        let mut batch = WriteBatch::new();
        batch.put(0, b"key", b"value").unwrap();
        batch.set_first_seqno(200);
        let mut payload = encode(&batch, 4).unwrap();
        // seqno 200 is two bytes, the count one: the entry's tag is payload byte 3.
        assert_eq!(payload[..3], [0xc8, 0x01, 1]);
        payload[3] = 3;
        let err = decode(payload, Some(4)).unwrap_err();
        assert_eq!(err.offset, 3, "{}", err.detail);
        assert!(err.detail.contains("reserved"), "{}", err.detail);
    }
}
