//! The index block's two encodings (docs/format/sst.md, "Index block"): building either one
//! from the writer's separators, and decoding version 2 into the in-memory [`Index`]
//! (version 1 is a block in data-block format, decoded by [`Index::decode_v1`]).
//!
//! Version 2 stores only what cannot be derived: the separators prefix-compressed against
//! the previous one, as user keys when that is exact, and each data block's size. Data blocks
//! tile the file from offset 0, so block `i` starts where block `i - 1` and its trailer end.
//!
//! Invariants:
//! 1. The builder writes user-key separators only when, at every block boundary, the user
//!    key of the separator is below the user key of the next block's first entry. With a
//!    separator `>=` its block's last key, no user key then spans two blocks, and the
//!    separator's user key alone bounds its block (see [`crate::index`]).
//! 2. A decoded version-2 index has exactly `num_data_blocks` handles, contiguous from offset
//!    0, and the last ends at `data_size` (both from the properties), so every handle lies in
//!    the data region; anything else is corruption.

use std::sync::Arc;

use crate::block_builder::BlockBuilder;
use crate::coding::{get_varint32, get_varint64, put_varint32, put_varint64};
use crate::comparator::Comparator;
use crate::error::DecodeError;
use crate::format::{BlockHandle, MAX_BLOCK_SIZE};
use crate::index::Index;
use crate::key::{user_key_of, InternalKeyComparator};

/// Flag bit of a version-2 index block: the separators are user keys.
pub const INDEX_FLAG_USER_KEYS: u8 = 1;

/// Collects a table's separators and data block handles, then encodes the index block for
/// the table's format version.
#[derive(Debug)]
pub(crate) struct IndexBuilder {
    format_version: u32,
    /// Separators (internal keys), concatenated; `separator_ends[i]` ends separator `i`.
    separators: Vec<u8>,
    separator_ends: Vec<usize>,
    handles: Vec<BlockHandle>,
    /// Every boundary so far allows user-key separators (invariant 1).
    user_keys_exact: bool,
}

impl IndexBuilder {
    pub(crate) fn new(format_version: u32) -> Self {
        IndexBuilder {
            format_version,
            separators: Vec::new(),
            separator_ends: Vec::new(),
            handles: Vec::new(),
            user_keys_exact: true,
        }
    }

    /// Adds the entry of a data block followed by another whose first key is `next_key`.
    pub(crate) fn add(
        &mut self,
        separator: &[u8],
        handle: BlockHandle,
        next_key: &[u8],
        user_comparator: &dyn Comparator,
    ) {
        if user_comparator.compare(user_key_of(separator), user_key_of(next_key))
            != std::cmp::Ordering::Less
        {
            self.user_keys_exact = false;
        }
        self.push(separator, handle);
    }

    /// Adds the entry of the last data block.
    pub(crate) fn add_last(&mut self, separator: &[u8], handle: BlockHandle) {
        self.push(separator, handle);
    }

    fn push(&mut self, separator: &[u8], handle: BlockHandle) {
        self.separators.extend_from_slice(separator);
        self.separator_ends.push(self.separators.len());
        self.handles.push(handle);
    }

    fn separator(&self, i: usize) -> &[u8] {
        let start = i.checked_sub(1).map_or(0, |p| self.separator_ends[p]);
        &self.separators[start..self.separator_ends[i]]
    }

    /// The encoded index block.
    pub(crate) fn finish(&self) -> Vec<u8> {
        if self.format_version < 2 {
            let mut block = BlockBuilder::new(1);
            let mut encoded = Vec::with_capacity(20);
            for (i, handle) in self.handles.iter().enumerate() {
                encoded.clear();
                handle.encode_to(&mut encoded);
                block.add(self.separator(i), &encoded);
            }
            return block.finish().to_vec();
        }
        let user_keys = self.user_keys_exact;
        let mut out = Vec::with_capacity(16 + self.separators.len() / 2 + self.handles.len() * 3);
        out.push(if user_keys { INDEX_FLAG_USER_KEYS } else { 0 });
        put_varint32(&mut out, self.handles.len() as u32);
        let mut previous: &[u8] = &[];
        let mut expected_offset = 0;
        for (i, handle) in self.handles.iter().enumerate() {
            debug_assert_eq!(handle.offset, expected_offset, "data blocks are contiguous");
            expected_offset = handle.end_with_trailer();
            let separator = if user_keys {
                user_key_of(self.separator(i))
            } else {
                self.separator(i)
            };
            let shared = previous
                .iter()
                .zip(separator)
                .take_while(|(a, b)| a == b)
                .count();
            put_varint32(&mut out, shared as u32);
            put_varint32(&mut out, (separator.len() - shared) as u32);
            out.extend_from_slice(&separator[shared..]);
            put_varint64(&mut out, handle.size);
            previous = separator;
        }
        out
    }
}

/// What the properties say a version-2 index must describe (invariant 2).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DataRegion {
    pub(crate) num_data_blocks: u64,
    pub(crate) data_size: u64,
}

/// Decodes a version-2 index block. Errors name the entry; the caller adds file and offset.
pub(crate) fn decode_v2(
    contents: &[u8],
    comparator: Arc<InternalKeyComparator>,
    region: DataRegion,
) -> Result<Index, DecodeError> {
    let (&flags, mut rest) = contents
        .split_first()
        .ok_or_else(|| DecodeError::new("index block is empty (no flags byte)"))?;
    if flags & !INDEX_FLAG_USER_KEYS != 0 {
        return Err(DecodeError::new(format!(
            "index block has unknown flags {flags:#04x}"
        )));
    }
    let (count, used) =
        get_varint32(rest).map_err(|e| DecodeError::new(format!("index count: {e}")))?;
    rest = &rest[used..];
    if u64::from(count) != region.num_data_blocks {
        return Err(DecodeError::new(format!(
            "index has {count} entries but the properties count {} data blocks",
            region.num_data_blocks
        )));
    }
    // Every entry takes at least 3 bytes (shared, unshared, size), which bounds the allocation.
    let count = count as usize;
    if count > rest.len() / 3 {
        return Err(DecodeError::new(format!(
            "index claims {count} entries in {} bytes",
            rest.len()
        )));
    }
    let mut index = Index::with_capacity(
        comparator,
        flags & INDEX_FLAG_USER_KEYS != 0,
        count,
        rest.len() + count * crate::key::TRAILER_SIZE,
    );
    let mut key = Vec::new();
    let mut offset = 0u64;
    for entry in 0..count {
        let bad = |what: &str| DecodeError::new(format!("index entry {entry}: {what}"));
        let field = |input: &[u8]| get_varint32(input).map_err(|e| bad(&e.to_string()));
        let (shared, a) = field(rest)?;
        let (unshared, b) = field(&rest[a..])?;
        rest = &rest[a + b..];
        let (shared, unshared) = (shared as usize, unshared as usize);
        if shared > key.len() {
            return Err(bad(&format!(
                "shares {shared} bytes with a {}-byte previous separator",
                key.len()
            )));
        }
        let delta = rest
            .get(..unshared)
            .ok_or_else(|| bad(&format!("separator runs {unshared} bytes past the block")))?;
        key.truncate(shared);
        key.extend_from_slice(delta);
        rest = &rest[unshared..];
        let (size, c) = get_varint64(rest).map_err(|e| bad(&format!("block size: {e}")))?;
        rest = &rest[c..];
        if size > MAX_BLOCK_SIZE as u64 {
            return Err(bad(&format!("block size {size} is above the maximum")));
        }
        let handle = BlockHandle { offset, size };
        offset = handle.end_with_trailer();
        if offset > region.data_size {
            return Err(bad(&format!(
                "block (offset {}, size {size}) ends past the data region ({} bytes)",
                handle.offset, region.data_size
            )));
        }
        index.push(&key, handle)?;
    }
    if !rest.is_empty() {
        return Err(DecodeError::new(format!(
            "index block has {} bytes after its {count} entries",
            rest.len()
        )));
    }
    if offset != region.data_size {
        return Err(DecodeError::new(format!(
            "index blocks end at {offset} but the data region is {} bytes",
            region.data_size
        )));
    }
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparator::BytewiseComparator;
    use crate::key::{InternalKey, ValueKind};

    fn icmp() -> Arc<InternalKeyComparator> {
        Arc::new(InternalKeyComparator::new(Arc::new(BytewiseComparator)))
    }

    fn key(user: &[u8], seqno: u64) -> Vec<u8> {
        InternalKey::new(user, seqno, ValueKind::Value)
            .encoded()
            .to_vec()
    }

    /// Three contiguous blocks whose separators are `separators`, each followed by the
    /// matching `next_keys` entry (the last block by none).
    fn build(separators: &[Vec<u8>], next_keys: &[Vec<u8>], sizes: &[u64]) -> Vec<u8> {
        let mut builder = IndexBuilder::new(2);
        let mut offset = 0;
        for (i, (separator, &size)) in separators.iter().zip(sizes).enumerate() {
            let handle = BlockHandle { offset, size };
            offset = handle.end_with_trailer();
            match next_keys.get(i) {
                Some(next) => builder.add(separator, handle, next, &BytewiseComparator),
                None => builder.add_last(separator, handle),
            }
        }
        builder.finish()
    }

    fn region(blocks: u64, sizes: &[u64]) -> DataRegion {
        DataRegion {
            num_data_blocks: blocks,
            data_size: sizes.iter().map(|s| s + 5).sum(),
        }
    }

    #[test]
    fn user_key_separators_when_no_user_key_spans_blocks() {
        let separators = [key(b"apple", 9), key(b"apricot", 3), key(b"b", 1)];
        let next = [key(b"apq", 8), key(b"azz", 2)];
        let sizes = [100, 4000, 70];
        let contents = build(&separators, &next, &sizes);
        assert_eq!(contents[0], INDEX_FLAG_USER_KEYS);
        let index = decode_v2(&contents, icmp(), region(3, &sizes)).unwrap();
        assert!(index.user_key_separators());
        let mut offset = 0;
        for (i, separator) in separators.iter().enumerate() {
            assert_eq!(index.stored_separator(i), user_key_of(separator));
            // In memory: the user key with the largest internal key's trailer.
            assert_eq!(user_key_of(index.key(i)), user_key_of(separator));
            assert_eq!(index.key(i)[index.key(i).len() - 8..], [0; 8]);
            assert_eq!(
                index.handle(i),
                BlockHandle {
                    offset,
                    size: sizes[i]
                }
            );
            offset += sizes[i] + 5;
        }
        // Every version of "apple" is in block 0, of "apq" in block 1.
        assert_eq!(index.seek(&key(b"apple", 0)), 0);
        assert_eq!(index.seek(&key(b"apple", 100)), 0);
        assert_eq!(index.seek(&key(b"apq", 100)), 1);
        assert_eq!(index.seek(&key(b"b", 0)), 2);
        assert_eq!(index.seek(&key(b"c", 0)), 3);
    }

    #[test]
    fn internal_key_separators_when_a_user_key_spans_blocks() {
        // "apple" has versions in blocks 0 and 1: the separator must keep its seqno.
        let separators = [key(b"apple", 9), key(b"b", 1)];
        let next = [key(b"apple", 5)];
        let sizes = [10, 20];
        let contents = build(&separators, &next, &sizes);
        assert_eq!(contents[0], 0);
        let index = decode_v2(&contents, icmp(), region(2, &sizes)).unwrap();
        assert!(!index.user_key_separators());
        assert_eq!(index.key(0), separators[0].as_slice());
        assert_eq!(index.seek(&key(b"apple", 9)), 0);
        assert_eq!(index.seek(&key(b"apple", 8)), 1);
    }

    #[test]
    fn version_1_is_a_block_of_full_handles() {
        let mut builder = IndexBuilder::new(1);
        let separators = [key(b"a", 1), key(b"b", 1)];
        builder.add(
            &separators[0],
            BlockHandle {
                offset: 0,
                size: 10,
            },
            &key(b"b", 1),
            &BytewiseComparator,
        );
        builder.add_last(
            &separators[1],
            BlockHandle {
                offset: 15,
                size: 20,
            },
        );
        let block = crate::block::Block::decode(builder.finish()).unwrap();
        let index = Index::decode_v1(block, icmp()).unwrap();
        assert!(!index.user_key_separators());
        assert_eq!(index.key(1), separators[1].as_slice());
        assert_eq!(
            index.handle(1),
            BlockHandle {
                offset: 15,
                size: 20
            }
        );
    }

    #[test]
    fn corrupt_version_2_blocks_are_refused() {
        let separators = [key(b"apple", 9), key(b"apricot", 3), key(b"b", 1)];
        let next = [key(b"apq", 8), key(b"azz", 2)];
        let sizes = [100, 300, 70];
        let good = build(&separators, &next, &sizes);
        let region = region(3, &sizes);
        assert!(decode_v2(&good, icmp(), region).is_ok());
        let refused = |bytes: &[u8], region: DataRegion, what: &str| {
            let error = decode_v2(bytes, icmp(), region)
                .err()
                .unwrap_or_else(|| panic!("{what} accepted"));
            error.to_string()
        };
        // Every truncation, and trailing bytes.
        for len in 0..good.len() {
            refused(&good[..len], region, &format!("truncation to {len}"));
        }
        let mut longer = good.clone();
        longer.push(0);
        refused(&longer, region, "a trailing byte");
        // Unknown flags; a count that disagrees with the properties.
        let mut flags = good.clone();
        flags[0] |= 0x80;
        assert!(refused(&flags, region, "flags").contains("flags"));
        let fewer = DataRegion {
            num_data_blocks: 2,
            ..region
        };
        assert!(refused(&good, fewer, "count").contains("3 entries"));
        // Sizes that do not end at the data region's end (a changed size, a shorter region).
        let shorter = DataRegion {
            data_size: region.data_size - 1,
            ..region
        };
        assert!(refused(&good, shorter, "past the region").contains("past the data region"));
        let longer_region = DataRegion {
            data_size: region.data_size + 1,
            ..region
        };
        assert!(refused(&good, longer_region, "short of the region").contains("end at"));
        // A block size above the maximum.
        let huge = build(&separators, &next, &[100, 1 << 27, 70]);
        let region_huge = DataRegion {
            num_data_blocks: 3,
            data_size: u64::MAX,
        };
        assert!(refused(&huge, region_huge, "huge block").contains("above the maximum"));
        // Out-of-order separators, a shared prefix longer than the previous separator.
        let backwards = build(
            &[key(b"b", 1), key(b"a", 1), key(b"c", 1)],
            &[key(b"bb", 1), key(b"bc", 1)],
            &sizes,
        );
        assert!(refused(&backwards, region, "order").contains("out of order"));
        let mut shared = good.clone();
        let second_entry = 2 + 2 + user_key_of(&separators[0]).len() + 1;
        shared[second_entry] = 50;
        assert!(refused(&shared, region, "shared").contains("shares 50 bytes"));
        // A count too large for the bytes that follow it.
        let mut count = vec![0u8];
        put_varint32(&mut count, 1_000_000);
        let region_many = DataRegion {
            num_data_blocks: 1_000_000,
            data_size: 0,
        };
        assert!(refused(&count, region_many, "count").contains("claims"));
    }
}
