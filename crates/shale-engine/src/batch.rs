//! [`WriteBatch`]: writes to any keyspaces that commit atomically, in the encoding of
//! `docs/format/write_batch.md`. WAL records carry its entries as they are, after a header in
//! the form of the log's format version (`crate::wal::batch_record`).
//!
//! Invariants:
//! 1. `rep` always holds a complete, valid encoding: a 12-byte header whose count equals the
//!    number of entries that follow, and nothing after the last entry. Every constructor and
//!    mutator keeps it (a rejected `put` leaves the batch unchanged), and [`WriteBatch::from_data`]
//!    checks it for untrusted bytes, so [`WriteBatch::iter`] decodes without failing.
//! 2. Entry tags never change meaning: the low 7 bits are the entry kind (0, 1, 2; 3..=127 are
//!    reserved for future kinds) and bit 7 says the keyspace field is omitted because the entry
//!    writes the default keyspace (the spec lists every range).
//! 3. Decoding never allocates: `from_data` validates the caller's buffer in place.

use std::path::Path;

use shale_sst::{SeqNo, ValueKind, MAX_SEQNO};

use crate::error::{Error, Result};

/// Bytes of the header: first seqno (u64) and entry count (u32).
pub(crate) const HEADER_SIZE: usize = 12;

/// Most bytes an entry takes besides its key and value: the tag and three varint32s.
const ENTRY_OVERHEAD: usize = 1 + 3 * 5;

/// Entry tags (`docs/format/write_batch.md`, "Entry tags"). Never change.
const TAG_DELETION: u8 = 0;
const TAG_VALUE: u8 = 1;
const TAG_RANGE_DELETION: u8 = 2;

/// Tag bit 7: the entry writes the default keyspace and has no keyspace field (WAL format
/// version 3), which saves the byte every entry of a default-keyspace workload would spend.
const TAG_DEFAULT_KEYSPACE: u8 = 0x80;

/// The id of the default keyspace.
const DEFAULT_KEYSPACE: u32 = 0;

/// The name a corruption error gives a batch decoded outside a file.
const BATCH_PSEUDO_FILE: &str = "(write batch)";

/// One write of a batch, as [`WriteBatch::iter`] yields it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchEntry<'a> {
    /// What the write is.
    pub kind: ValueKind,
    /// The keyspace written (0 is the default keyspace).
    pub keyspace: u32,
    /// The key (for a range deletion, the inclusive start key).
    pub key: &'a [u8],
    /// The value (empty for a deletion; for a range deletion, the exclusive end key).
    pub value: &'a [u8],
    /// The entry's sequence number: the batch's first seqno plus the entry's index.
    pub seqno: SeqNo,
}

/// An ordered set of writes that commit together: after a crash either all of them are
/// recovered or none is.
///
/// The batch is kept encoded ([`Self::data`]); a commit group is formed by [`Self::append`]ing
/// batches and written to the WAL as one record.
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch")
            .field("first_seqno", &self.first_seqno())
            .field("count", &self.count)
            .field("bytes", &self.rep.len())
            .finish()
    }
}

impl WriteBatch {
    /// An empty batch with first seqno 0 (the engine assigns the real one at commit).
    pub fn new() -> Self {
        WriteBatch {
            rep: vec![0; HEADER_SIZE],
            count: 0,
        }
    }

    /// An empty batch with room for `bytes` of entries, so that filling it does not
    /// reallocate (`put` needs key + value + about 16 bytes per entry).
    pub fn with_capacity(bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(HEADER_SIZE + bytes);
        rep.resize(HEADER_SIZE, 0);
        WriteBatch { rep, count: 0 }
    }

    /// The room [`Self::with_capacity`] needs for one put of `key` and `value`.
    pub fn put_size(key: &[u8], value: &[u8]) -> usize {
        ENTRY_OVERHEAD + key.len() + value.len()
    }

    /// Adds `key = value` in `keyspace`.
    pub fn put(&mut self, keyspace: u32, key: &[u8], value: &[u8]) -> Result<()> {
        self.add(TAG_VALUE, keyspace, key, Some(value))
    }

    /// Adds a deletion of `key` in `keyspace`.
    pub fn delete(&mut self, keyspace: u32, key: &[u8]) -> Result<()> {
        self.add(TAG_DELETION, keyspace, key, None)
    }

    /// Adds a deletion of every key `k` with `start <= k < end` in `keyspace`. The order of
    /// `start` and `end` is the keyspace comparator's business and is checked by the engine.
    pub fn delete_range(&mut self, keyspace: u32, start: &[u8], end: &[u8]) -> Result<()> {
        self.add(TAG_RANGE_DELETION, keyspace, start, Some(end))
    }

    fn add(&mut self, tag: u8, keyspace: u32, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let count = self.count.checked_add(1).ok_or_else(|| {
            Error::InvalidArgument(format!("a write batch holds at most {} entries", u32::MAX))
        })?;
        let key_len = checked_len(key, "key")?;
        let value_len = value.map(|v| checked_len(v, "value")).transpose()?;
        // One reservation for the whole entry instead of growing at each push.
        self.rep
            .reserve(ENTRY_OVERHEAD + key.len() + value.map_or(0, <[u8]>::len));
        if keyspace == DEFAULT_KEYSPACE {
            self.rep.push(tag | TAG_DEFAULT_KEYSPACE);
        } else {
            self.rep.push(tag);
            put_varint32(&mut self.rep, keyspace);
        }
        put_varint32(&mut self.rep, key_len);
        self.rep.extend_from_slice(key);
        if let (Some(value), Some(value_len)) = (value, value_len) {
            put_varint32(&mut self.rep, value_len);
            self.rep.extend_from_slice(value);
        }
        self.set_count(count);
        Ok(())
    }

    /// Appends every entry of `other` after this batch's entries (forming a commit group).
    /// This batch keeps its first seqno; `other`'s is ignored.
    pub fn append(&mut self, other: &WriteBatch) -> Result<()> {
        let count = self.count.checked_add(other.count).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "appending {} entries to a batch of {} exceeds the {} entries a batch can hold",
                other.count,
                self.count,
                u32::MAX
            ))
        })?;
        self.rep.extend_from_slice(&other.rep[HEADER_SIZE..]);
        self.set_count(count);
        Ok(())
    }

    /// The number of entries (and of sequence numbers the batch consumes).
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Whether the batch has no entries.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The encoded size in bytes (about what its WAL record payload will be: a version 4
    /// record's header takes 2 to 13 bytes instead of 12).
    pub fn approximate_size(&self) -> usize {
        self.rep.len()
    }

    /// Removes every entry and resets the first seqno to 0.
    pub fn clear(&mut self) {
        self.rep.clear();
        self.rep.resize(HEADER_SIZE, 0);
        self.count = 0;
    }

    /// Sets the sequence number of the first entry; entry `i` gets `seqno + i`. The engine
    /// calls this at commit with `seqno + count - 1 <= MAX_SEQNO`.
    pub fn set_first_seqno(&mut self, seqno: SeqNo) {
        debug_assert!(
            seqno.saturating_add(u64::from(self.count)) <= MAX_SEQNO + 1,
            "seqno {seqno} + {} entries exceeds 56 bits",
            self.count
        );
        self.rep[..8].copy_from_slice(&seqno.to_le_bytes());
    }

    /// The sequence number of the first entry.
    pub fn first_seqno(&self) -> SeqNo {
        read_u64(&self.rep, 0).unwrap_or(0)
    }

    /// The encoded batch (`docs/format/write_batch.md`).
    pub fn data(&self) -> &[u8] {
        &self.rep
    }

    /// The encoded entries, without the header: what a commit group's WAL record holds of
    /// this batch.
    pub(crate) fn entries(&self) -> &[u8] {
        &self.rep[HEADER_SIZE..]
    }

    /// Consumes the batch, returning its encoding.
    pub fn into_data(self) -> Vec<u8> {
        self.rep
    }

    /// Takes an encoded batch from untrusted bytes, checking the header, every entry, that
    /// the count matches and that nothing follows the last entry. A corruption error names
    /// the byte offset inside the encoding.
    pub fn from_data(data: Vec<u8>) -> Result<WriteBatch> {
        Self::validated(data).map_err(|e| Error::Corruption {
            file: BATCH_PSEUDO_FILE.into(),
            offset: e.offset as u64,
            detail: e.detail,
        })
    }

    /// Decodes the payload of the WAL record at `record_offset` of `file`, a log of WAL format
    /// `format_version` ([`crate::wal::LogReader::format_version`]): versions 1 to 3 carry the
    /// encoding [`Self::from_data`] takes, version 4 the compact header
    /// (docs/format/wal.md, "Logical records"). `None` (a log whose file header was damaged)
    /// accepts whichever of the two decodes, and neither when both do. A corruption error names
    /// the WAL file and record, and the byte inside the payload.
    pub fn from_wal_record(
        data: Vec<u8>,
        format_version: Option<u32>,
        file: &Path,
        record_offset: u64,
    ) -> Result<WriteBatch> {
        crate::wal::batch_record::decode(data, format_version).map_err(|e| Error::Corruption {
            file: file.to_path_buf(),
            offset: record_offset,
            detail: format!(
                "write batch in the record at this offset, at payload byte {}: {}",
                e.offset, e.detail
            ),
        })
    }

    /// The batch as the payload of a WAL record in format `format_version` (what
    /// [`Self::from_wal_record`] decodes), for tools and tests that write logs. The engine
    /// builds its commit groups' records without this copy.
    pub fn to_wal_record(&self, format_version: u32) -> Result<Vec<u8>> {
        crate::wal::batch_record::encode(self, format_version)
    }

    /// [`Self::from_data`] with the failure as the offset inside the encoding and a detail.
    pub(crate) fn validated(data: Vec<u8>) -> std::result::Result<WriteBatch, BatchError> {
        let count = validate(&data)?;
        Ok(WriteBatch { rep: data, count })
    }

    /// The entries in order, each with its sequence number.
    pub fn iter(&self) -> impl Iterator<Item = BatchEntry<'_>> + '_ {
        let first_seqno = self.first_seqno();
        let mut pos = HEADER_SIZE;
        let mut index = 0u64;
        std::iter::from_fn(move || {
            if pos >= self.rep.len() {
                return None;
            }
            // Invariant 1: `rep` was validated, so decoding cannot fail; stop rather than
            // panic in release builds if it ever did.
            let decoded = decode_entry(&self.rep, pos);
            debug_assert!(
                decoded.is_ok(),
                "validated batch failed to decode: {decoded:?}"
            );
            let (entry, next) = decoded.ok()?;
            pos = next;
            let seqno = first_seqno.wrapping_add(index);
            index += 1;
            Some(BatchEntry { seqno, ..entry })
        })
    }

    fn set_count(&mut self, count: u32) {
        self.count = count;
        self.rep[8..HEADER_SIZE].copy_from_slice(&count.to_le_bytes());
    }
}

/// `bytes.len()` as the on-disk u32, or `InvalidArgument` naming `what`.
fn checked_len(bytes: &[u8], what: &str) -> Result<u32> {
    encodable_len(bytes.len()).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "a {what} of {} bytes is longer than the {} bytes a write batch can hold",
            bytes.len(),
            u32::MAX
        ))
    })
}

fn encodable_len(len: usize) -> Option<u32> {
    u32::try_from(len).ok()
}

/// A decoding failure at a byte offset of the encoding.
#[derive(Debug)]
pub(crate) struct BatchError {
    pub(crate) offset: usize,
    pub(crate) detail: String,
}

impl BatchError {
    pub(crate) fn new(offset: usize, detail: impl Into<String>) -> Self {
        BatchError {
            offset,
            detail: detail.into(),
        }
    }
}

/// Checks a whole encoding and returns its entry count (invariant 1).
fn validate(data: &[u8]) -> std::result::Result<u32, BatchError> {
    let (Some(first_seqno), Some(count)) = (read_u64(data, 0), read_u32(data, 8)) else {
        return Err(BatchError::new(
            0,
            format!(
                "a write batch of {} bytes is shorter than its {HEADER_SIZE}-byte header",
                data.len()
            ),
        ));
    };
    if first_seqno.saturating_add(u64::from(count)) > MAX_SEQNO + 1 {
        return Err(BatchError::new(
            0,
            format!("first seqno {first_seqno} + {count} entries exceeds the 56-bit seqno range"),
        ));
    }
    let mut pos = HEADER_SIZE;
    let mut found = 0u32;
    while pos < data.len() {
        if found == count {
            return Err(BatchError::new(
                pos,
                format!(
                    "{} bytes follow the last of the {count} entries the header counts",
                    data.len() - pos
                ),
            ));
        }
        let (_, next) = decode_entry(data, pos)?;
        pos = next;
        found += 1;
    }
    if found != count {
        return Err(BatchError::new(
            8,
            format!("the header counts {count} entries but the batch holds {found}"),
        ));
    }
    Ok(count)
}

/// Decodes the entry at `pos`; returns it (with seqno 0) and the offset after it.
fn decode_entry(
    data: &[u8],
    pos: usize,
) -> std::result::Result<(BatchEntry<'_>, usize), BatchError> {
    let tag = *data
        .get(pos)
        .ok_or_else(|| BatchError::new(pos, "entry tag past the end"))?;
    let (kind, has_value) = match tag & !TAG_DEFAULT_KEYSPACE {
        TAG_DELETION => (ValueKind::Deletion, false),
        TAG_VALUE => (ValueKind::Value, true),
        TAG_RANGE_DELETION => (ValueKind::RangeDeletion, true),
        _ => {
            return Err(BatchError::new(
                pos,
                format!("entry tag {tag} is reserved: written by a newer Shale?"),
            ))
        }
    };
    let mut at = pos + 1;
    let keyspace = if tag & TAG_DEFAULT_KEYSPACE != 0 {
        DEFAULT_KEYSPACE
    } else {
        get_varint32(data, &mut at, "keyspace id")?
    };
    let key = get_bytes(data, &mut at, "key")?;
    let value = if has_value {
        get_bytes(data, &mut at, "value")?
    } else {
        &[]
    };
    let entry = BatchEntry {
        kind,
        keyspace,
        key,
        value,
        seqno: 0,
    };
    Ok((entry, at))
}

fn read_u64(data: &[u8], at: usize) -> Option<u64> {
    data.get(at..at + 8)?
        .try_into()
        .ok()
        .map(u64::from_le_bytes)
}

fn read_u32(data: &[u8], at: usize) -> Option<u32> {
    data.get(at..at + 4)?
        .try_into()
        .ok()
        .map(u32::from_le_bytes)
}

fn put_varint32(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Decodes a LEB128 varint32 at `*at`, advancing it; rejects encodings longer than 5 bytes,
/// over-long (non-minimal) encodings and values above `u32::MAX`.
pub(crate) fn get_varint32(
    data: &[u8],
    at: &mut usize,
    what: &str,
) -> std::result::Result<u32, BatchError> {
    let start = *at;
    let mut value: u64 = 0;
    for i in 0..5 {
        let byte = *data
            .get(start + i)
            .ok_or_else(|| BatchError::new(start, format!("{what}: truncated varint")))?;
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte == 0 && i > 0 {
            // One encoding per batch: a trailing zero group is an over-long varint.
            return Err(BatchError::new(
                start,
                format!("{what}: over-long varint32 encoding"),
            ));
        }
        if byte & 0x80 == 0 {
            let value = u32::try_from(value)
                .map_err(|_| BatchError::new(start, format!("{what}: varint32 overflows")))?;
            *at = start + i + 1;
            return Ok(value);
        }
    }
    Err(BatchError::new(
        start,
        format!("{what}: varint32 longer than 5 bytes"),
    ))
}

/// Decodes a length-prefixed byte string at `*at`, advancing it.
fn get_bytes<'a>(
    data: &'a [u8],
    at: &mut usize,
    what: &str,
) -> std::result::Result<&'a [u8], BatchError> {
    let start = *at;
    let len = get_varint32(data, at, what)? as usize;
    let bytes = at
        .checked_add(len)
        .and_then(|end| data.get(*at..end))
        .ok_or_else(|| {
            BatchError::new(
                start,
                format!(
                    "{what} of {len} bytes runs past the end of the batch ({} bytes)",
                    data.len()
                ),
            )
        })?;
    *at += len;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_above_u32_are_rejected() {
        assert_eq!(encodable_len(u32::MAX as usize), Some(u32::MAX));
        #[cfg(target_pointer_width = "64")]
        assert_eq!(encodable_len(u32::MAX as usize + 1), None);
    }

    #[test]
    fn full_batch_rejects_one_more_entry_and_stays_unchanged() {
        let mut batch = WriteBatch::new();
        batch.put(0, b"k", b"v").unwrap();
        batch.set_count(u32::MAX);
        let before = batch.rep.clone();
        let err = batch.put(0, b"k", b"v").unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert_eq!(batch.rep, before);
        let mut other = WriteBatch::new();
        other.delete(1, b"x").unwrap();
        assert!(matches!(
            batch.append(&other),
            Err(Error::InvalidArgument(_))
        ));
        assert_eq!(batch.rep, before);
    }

    #[test]
    fn varint32_edges() {
        for v in [0u32, 1, 127, 128, 16_383, 16_384, u32::MAX] {
            let mut buf = Vec::new();
            put_varint32(&mut buf, v);
            let mut at = 0;
            assert_eq!(get_varint32(&buf, &mut at, "v").unwrap(), v);
            assert_eq!(at, buf.len());
        }
        for bad in [
            &[0x80u8][..],
            &[0xff, 0xff, 0xff, 0xff, 0x10],
            &[0x80; 6],
            &[0x81, 0x00],
            &[0x80, 0x80, 0x00],
        ] {
            assert!(get_varint32(bad, &mut 0, "v").is_err(), "{bad:02x?}");
        }
    }
}
