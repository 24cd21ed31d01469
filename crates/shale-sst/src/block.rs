//! A decoded block in data-block format and its iterator (docs/format/sst.md, "Data block
//! contents"). Data, index, metaindex, properties and range-deletion blocks all use it.
//!
//! [`Block::decode`] checks only the restart array; entries are checked lazily, as the
//! [`BlockIter`] reaches them, so opening a block costs O(restart points), not O(entries).
//!
//! A seek in a block the processor has not cached is a chain of dependent misses: the
//! restart array, each restart key the binary search probes, then each entry of the scan,
//! whose header says where the next one starts. The seek therefore prefetches every restart
//! key's line before the binary search (blocks with few restart points) and the first lines
//! of the chosen interval before the scan, so those misses overlap; prefetches are hints and
//! change no result.
//!
//! Invariants of a decoded [`Block`]:
//! 1. `contents.len() >= 4` and `1 <= num_restarts <= (contents.len() - 4) / 4`.
//! 2. `restarts_offset = contents.len() - 4 - 4 * num_restarts` is the end of the entry area.
//! 3. `restart[0] == 0`; every later restart is strictly greater than the one before it and
//!    `< restarts_offset`. (An empty entry area therefore has exactly one restart, at 0.)
//!
//! Invariants of a [`BlockIter`]:
//! 1. It is valid iff `current < restarts_offset`; when invalid, `current == restarts_offset`
//!    and `restart_index == num_restarts`.
//! 2. When valid, `key` is the full key of the entry at `current`, `value` its value's byte
//!    range in the contents, `next_offset` the offset just past it, and `restart_index` the
//!    last restart point `<= current`; `restart_start` and `next_restart` are the offsets of
//!    restart points `restart_index` and `restart_index + 1` (`usize::MAX` past the last).
//! 3. Bytes are untrusted: a malformed entry never panics and never yields a key; the iterator
//!    becomes invalid and `status()` names the offset. The error is sticky: later seeks leave
//!    the iterator invalid, so a caller that misses one check cannot read past the damage.

use std::cmp::Ordering;
use std::ops::Range;
use std::sync::Arc;

use crate::coding::{get_u32, get_varint32};
use crate::comparator::Comparator;
use crate::error::DecodeError;
use crate::prefetch::{prefetch_lines, CACHE_LINE};

/// A block with at most this many restart points has all their keys' lines prefetched
/// before its restart search (more would be more lines than the search reads).
const PREFETCHED_RESTARTS: usize = 4;

/// How much of a restart interval a seek prefetches before scanning it: about half an
/// interval of 16 ~120-byte entries, what a seek scans on average.
const SCAN_PREFETCH_BYTES: usize = 1024;

/// An owned, uncompressed block whose restart array has been validated.
pub struct Block {
    contents: Vec<u8>,
    /// Offset of the restart array, i.e. the end of the entry area.
    restarts_offset: usize,
    num_restarts: usize,
}

impl Block {
    /// Validates the restart array of `contents` (the whole block after decompression).
    pub fn decode(contents: Vec<u8>) -> Result<Block, DecodeError> {
        let len = contents.len();
        if len < 4 {
            return Err(DecodeError::new(format!(
                "block is {len} bytes, too short for its restart count"
            )));
        }
        let num_restarts = get_u32(&contents, len - 4)? as usize;
        if num_restarts == 0 {
            return Err(DecodeError::new("block has no restart points"));
        }
        if num_restarts > (len - 4) / 4 {
            return Err(DecodeError::new(format!(
                "block of {len} bytes cannot hold {num_restarts} restart points"
            )));
        }
        let restarts_offset = len - 4 - 4 * num_restarts;
        let array = contents.get(restarts_offset..len - 4).unwrap_or_default();
        let mut previous = 0usize;
        for (i, bytes) in array.chunks_exact(4).enumerate() {
            let restart = u32::from_le_bytes(bytes.try_into().unwrap_or_default()) as usize;
            if i == 0 {
                if restart != 0 {
                    return Err(DecodeError::new(format!(
                        "block's first restart point is {restart}, expected 0"
                    )));
                }
            } else if restart <= previous || restart >= restarts_offset {
                return Err(DecodeError::new(format!(
                    "block restart point {i} is {restart}: not between the previous one \
                     ({previous}) and the restart array at {restarts_offset}"
                )));
            }
            previous = restart;
        }
        Ok(Block {
            contents,
            restarts_offset,
            num_restarts,
        })
    }

    /// The block's bytes, entries and restart array.
    pub fn contents(&self) -> &[u8] {
        &self.contents
    }

    /// What the block costs in the block cache: its contents plus a fixed overhead.
    pub fn size(&self) -> usize {
        self.contents.len() + std::mem::size_of::<Self>()
    }

    /// Number of restart points (at least 1).
    #[cfg(test)]
    pub fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    /// An iterator over the block's entries in `cmp` order. It starts invalid; position it
    /// with a seek.
    pub fn iter(self: &Arc<Block>, cmp: Arc<dyn Comparator>) -> BlockIter {
        BlockIter {
            block: Arc::clone(self),
            cmp,
            current: self.restarts_offset,
            next_offset: self.restarts_offset,
            restart_index: self.num_restarts,
            restart_start: self.restarts_offset,
            next_restart: usize::MAX,
            key: Vec::new(),
            value: 0..0,
            status: Ok(()),
        }
    }

    /// The offset restart point `index` names. Always in the block after `decode`; the
    /// fallback (end of the entry area) only makes an impossible miss end the iteration.
    fn restart_point(&self, index: usize) -> usize {
        get_u32(&self.contents, self.restarts_offset + 4 * index)
            .map_or(self.restarts_offset, |r| r as usize)
    }

    /// Decodes the header of the entry at `offset` and checks that it fits the entry area.
    #[inline]
    fn decode_entry(&self, offset: usize) -> Result<Entry, DecodeError> {
        let area = self
            .contents
            .get(..self.restarts_offset)
            .unwrap_or_default();
        let input = area.get(offset..).unwrap_or_default();
        let (shared, unshared, value_len, header) = match *input {
            // Fast path: all three lengths below 128, one byte each.
            [a, b, c, ..] if (a | b | c) < 0x80 => (a as u32, b as u32, c as u32, 3),
            _ => Self::decode_long_header(input, offset)?,
        };
        let key_start = offset + header;
        let value_start = key_start.checked_add(unshared as usize);
        let end = value_start.and_then(|v| v.checked_add(value_len as usize));
        match (value_start, end) {
            (Some(value_start), Some(end)) if end <= self.restarts_offset => Ok(Entry {
                shared: shared as usize,
                key_start,
                value_start,
                end,
            }),
            _ => Err(self.entry_overrun(offset, unshared, value_len)),
        }
    }

    /// The entry header when some length takes more than one byte (or the input is short).
    #[cold]
    fn decode_long_header(
        input: &[u8],
        offset: usize,
    ) -> Result<(u32, u32, u32, usize), DecodeError> {
        let corrupt = |detail: &dyn std::fmt::Display| {
            DecodeError::new(format!("bad block entry at offset {offset}: {detail}"))
        };
        let (shared, n1) = get_varint32(input).map_err(|e| corrupt(&e))?;
        let rest = input.get(n1..).unwrap_or_default();
        let (unshared, n2) = get_varint32(rest).map_err(|e| corrupt(&e))?;
        let rest = rest.get(n2..).unwrap_or_default();
        let (value_len, n3) = get_varint32(rest).map_err(|e| corrupt(&e))?;
        Ok((shared, unshared, value_len, n1 + n2 + n3))
    }

    #[cold]
    fn entry_overrun(&self, offset: usize, unshared: u32, value_len: u32) -> DecodeError {
        DecodeError::new(format!(
            "bad block entry at offset {offset}: key delta of {unshared} and value of \
             {value_len} bytes run past the entry area at {}",
            self.restarts_offset
        ))
    }

    /// The key of the entry at restart point `index`, which is stored whole.
    fn restart_key(&self, index: usize) -> Result<&[u8], DecodeError> {
        let offset = self.restart_point(index);
        let entry = self.decode_entry(offset)?;
        if entry.shared != 0 {
            return Err(DecodeError::new(format!(
                "bad block entry at offset {offset}: restart entry shares {} bytes",
                entry.shared
            )));
        }
        Ok(self
            .contents
            .get(entry.key_start..entry.value_start)
            .unwrap_or_default())
    }

    /// Starts loading up to `lines` cache lines of the entry area from `offset` on (fewer
    /// where the entry area ends). A hint only: no result depends on it.
    #[inline]
    fn prefetch_from(&self, offset: usize, lines: usize) {
        let end = self
            .restarts_offset
            .min(offset.saturating_add(lines * CACHE_LINE));
        prefetch_lines(self.contents.get(offset..end).unwrap_or_default());
    }

    /// Starts loading the first lines of the restart interval a seek scans from
    /// `restart_start` (up to `next_restart`, the next restart point): the scan reads its
    /// entries one after another, each entry's header naming where the next begins, so
    /// without this every line would be a miss waiting for the one before it.
    #[inline]
    fn prefetch_interval(&self, restart_start: usize, next_restart: usize) {
        let interval = next_restart
            .min(self.restarts_offset)
            .saturating_sub(restart_start);
        self.prefetch_from(
            restart_start,
            interval.min(SCAN_PREFETCH_BYTES).div_ceil(CACHE_LINE),
        );
    }

    /// The last restart point whose key is `< target`, or 0. With few restart points (a 4
    /// KiB block of ~120-byte entries at interval 16 has about 3), the lines of all their
    /// keys are requested before the binary search reads any: in a block not in the
    /// processor's caches its probes would otherwise be misses served one after another.
    fn find_restart<C: Comparator + ?Sized>(
        &self,
        cmp: &C,
        target: &[u8],
    ) -> Result<usize, DecodeError> {
        if self.num_restarts <= PREFETCHED_RESTARTS {
            for index in 0..self.num_restarts {
                self.prefetch_from(self.restart_point(index), 1);
            }
        }
        let (mut left, mut right) = (0, self.num_restarts - 1);
        while left < right {
            let mid = left + (right - left).div_ceil(2);
            if cmp.compare(self.restart_key(mid)?, target) == Ordering::Less {
                left = mid;
            } else {
                right = mid - 1;
            }
        }
        Ok(left)
    }

    /// A point lookup's seek: the first entry whose key is `>= target`, its key rebuilt into
    /// `key` and its value's byte range returned; `None` when every key is below `target`.
    /// The same walk and the same checks as [`BlockIter::seek`] (a malformed entry is an
    /// error, never a key), without an iterator: no reference counts, no restart bookkeeping
    /// beyond the next restart point, and `cmp` called directly when its type is known.
    pub(crate) fn seek_entry<C: Comparator + ?Sized>(
        &self,
        cmp: &C,
        target: &[u8],
        key: &mut Vec<u8>,
    ) -> Result<Option<Range<usize>>, DecodeError> {
        let mut restart_index = self.find_restart(cmp, target)?;
        let mut restart_start = self.restart_point(restart_index);
        let mut next_restart = self.restart_after(restart_index);
        self.prefetch_interval(restart_start, next_restart);
        let mut offset = restart_start;
        key.clear();
        while offset < self.restarts_offset {
            while next_restart <= offset {
                if next_restart < offset {
                    return Err(DecodeError::new(format!(
                        "bad block entry at offset {offset}: restart point {next_restart} falls \
                         inside the previous entry"
                    )));
                }
                restart_index += 1;
                restart_start = next_restart;
                next_restart = self.restart_after(restart_index);
            }
            let entry = self.decode_entry(offset)?;
            if entry.shared != 0 && offset == restart_start {
                return Err(DecodeError::new(format!(
                    "bad block entry at offset {offset}: restart entry shares {} bytes",
                    entry.shared
                )));
            }
            if entry.shared > key.len() {
                return Err(DecodeError::new(format!(
                    "bad block entry at offset {offset}: shares {} bytes of a {}-byte previous \
                     key",
                    entry.shared,
                    key.len()
                )));
            }
            key.truncate(entry.shared);
            key.extend_from_slice(
                self.contents
                    .get(entry.key_start..entry.value_start)
                    .unwrap_or_default(),
            );
            if cmp.compare(key, target) != Ordering::Less {
                return Ok(Some(entry.value_start..entry.end));
            }
            offset = entry.end;
        }
        Ok(None)
    }

    /// The offset of restart point `index + 1`, `usize::MAX` past the last.
    fn restart_after(&self, index: usize) -> usize {
        if index + 1 < self.num_restarts {
            self.restart_point(index + 1)
        } else {
            usize::MAX
        }
    }
}

impl Drop for Block {
    /// The contents go back to this thread's buffer pool, for the next block-cache miss to
    /// decompress into (`crate::buffer_pool`).
    fn drop(&mut self) {
        crate::buffer_pool::recycle(std::mem::take(&mut self.contents));
    }
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block")
            .field("size", &self.contents.len())
            .finish_non_exhaustive()
    }
}

/// The header of one entry: where its key delta, value and the entry itself end.
struct Entry {
    shared: usize,
    key_start: usize,
    value_start: usize,
    end: usize,
}

/// A cursor over the entries of a [`Block`]. Holds the block, so it may outlive the borrow it
/// was created from.
pub struct BlockIter {
    block: Arc<Block>,
    cmp: Arc<dyn Comparator>,
    /// Offset of the current entry; `restarts_offset` when invalid.
    current: usize,
    /// Offset just past the current entry, where `next` parses.
    next_offset: usize,
    /// The restart region holding `current`; `num_restarts` when invalid.
    restart_index: usize,
    /// Offsets of restart points `restart_index` and `restart_index + 1` (`usize::MAX` past
    /// the last), kept so stepping an entry reads no restart array.
    restart_start: usize,
    next_restart: usize,
    /// The current key, rebuilt in place from the shared prefix and the delta.
    key: Vec<u8>,
    value: Range<usize>,
    status: Result<(), DecodeError>,
}

impl BlockIter {
    /// Makes this cursor iterate `block` instead, unpositioned as [`Block::iter`] leaves a new
    /// one, but keeping its key buffer: stepping from block to block allocates nothing.
    pub fn reset_to(&mut self, block: &Arc<Block>) {
        self.block = Arc::clone(block);
        self.status = Ok(());
        self.key.clear();
        self.value = 0..0;
        self.invalidate();
    }

    /// True when positioned at an entry.
    #[inline]
    pub fn valid(&self) -> bool {
        self.current < self.block.restarts_offset
    }

    /// `Ok` unless a malformed entry was found; then the iterator stays invalid.
    pub fn status(&self) -> Result<(), DecodeError> {
        self.status.clone()
    }

    /// The current key. Only meaningful when [`BlockIter::valid`].
    #[inline]
    pub fn key(&self) -> &[u8] {
        debug_assert!(self.valid(), "BlockIter::key on an invalid iterator");
        &self.key
    }

    /// The current value. Only meaningful when [`BlockIter::valid`].
    #[inline]
    pub fn value(&self) -> &[u8] {
        debug_assert!(self.valid(), "BlockIter::value on an invalid iterator");
        self.block
            .contents
            .get(self.value.clone())
            .unwrap_or_default()
    }

    /// Where the current value lies in [`Block::contents`], so callers can avoid a copy.
    #[cfg(test)]
    pub fn value_range(&self) -> Range<usize> {
        debug_assert!(
            self.valid(),
            "BlockIter::value_range on an invalid iterator"
        );
        self.value.clone()
    }

    /// Offset of the current entry in the block (the end of the entry area when invalid).
    #[cfg(test)]
    pub fn entry_offset(&self) -> usize {
        self.current
    }

    /// Positions at the first entry.
    pub fn seek_to_first(&mut self) {
        if self.status.is_err() {
            return;
        }
        self.seek_to_restart_point(0);
        self.parse_next_entry();
    }

    /// Positions at the last entry.
    pub fn seek_to_last(&mut self) {
        if self.status.is_err() {
            return;
        }
        self.seek_to_restart_point(self.block.num_restarts - 1);
        while self.parse_next_entry() && self.next_offset < self.block.restarts_offset {}
    }

    /// Positions at the first entry whose key is `>= target`, or invalid if there is none.
    pub fn seek(&mut self, target: &[u8]) {
        let cmp = Arc::clone(&self.cmp);
        self.seek_by(&*cmp, target);
    }

    /// [`Self::seek`] with `cmp`, which must be the order the iterator was created with. With
    /// its type known, the walk's comparisons are inlined rather than virtual calls (a table's
    /// data-block seek passes its internal-key comparator).
    #[inline]
    pub fn seek_by<C: Comparator + ?Sized>(&mut self, cmp: &C, target: &[u8]) {
        if self.status.is_err() {
            return;
        }
        let restart = match self.block.find_restart(cmp, target) {
            Ok(restart) => restart,
            Err(e) => return self.fail(e),
        };
        self.seek_to_restart_point(restart);
        self.block
            .prefetch_interval(self.restart_start, self.next_restart);
        while self.parse_next_entry() {
            if cmp.compare(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }

    /// Positions at the last entry whose key is `<= target`, or invalid if there is none.
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if !self.valid() {
            if self.status.is_ok() {
                self.seek_to_last();
            }
        } else if self.cmp.compare(&self.key, target) == Ordering::Greater {
            self.prev();
        }
    }

    /// Moves to the next entry; becomes invalid after the last one.
    #[inline]
    pub fn next(&mut self) {
        debug_assert!(self.valid(), "BlockIter::next on an invalid iterator");
        if self.valid() {
            self.parse_next_entry();
        }
    }

    /// Moves to the previous entry; becomes invalid before the first one. Entries are only
    /// linked forwards, so this rescans from the restart point before the current entry.
    pub fn prev(&mut self) {
        debug_assert!(self.valid(), "BlockIter::prev on an invalid iterator");
        if !self.valid() {
            return;
        }
        let original = self.current;
        while self.block.restart_point(self.restart_index) >= original {
            if self.restart_index == 0 {
                self.invalidate();
                return;
            }
            self.restart_index -= 1;
        }
        self.seek_to_restart_point(self.restart_index);
        while self.parse_next_entry() {
            match self.next_offset.cmp(&original) {
                Ordering::Less => {}
                Ordering::Equal => return,
                Ordering::Greater => {
                    let e = DecodeError::new(format!(
                        "bad block entry at offset {}: runs over the entry at {original}",
                        self.current
                    ));
                    return self.fail(e);
                }
            }
        }
    }

    fn seek_to_restart_point(&mut self, index: usize) {
        self.key.clear();
        self.set_restart_index(index);
        self.next_offset = self.restart_start;
    }

    fn set_restart_index(&mut self, index: usize) {
        self.restart_index = index;
        self.restart_start = self.block.restart_point(index);
        self.next_restart = if index + 1 < self.block.num_restarts {
            self.block.restart_point(index + 1)
        } else {
            usize::MAX
        };
    }

    /// Steps onto the entry at `next_offset`; false when that leaves the iterator invalid.
    #[inline]
    fn parse_next_entry(&mut self) -> bool {
        match self.try_parse_next_entry() {
            Ok(valid) => valid,
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    #[inline]
    fn try_parse_next_entry(&mut self) -> Result<bool, DecodeError> {
        self.current = self.next_offset;
        if self.current >= self.block.restarts_offset {
            let next_offset = self.next_offset;
            self.invalidate();
            self.next_offset = next_offset;
            return Ok(false);
        }
        while self.next_restart <= self.current {
            if self.next_restart < self.current {
                return Err(self.restart_inside_entry());
            }
            self.set_restart_index(self.restart_index + 1);
        }
        let block = &*self.block;
        let entry = block.decode_entry(self.current)?;
        if (entry.shared != 0 && self.restart_start == self.current)
            || entry.shared > self.key.len()
        {
            return Err(self.bad_shared_prefix(entry.shared));
        }
        let delta = block
            .contents
            .get(entry.key_start..entry.value_start)
            .unwrap_or_default();
        self.key.truncate(entry.shared);
        self.key.extend_from_slice(delta);
        self.value = entry.value_start..entry.end;
        self.next_offset = entry.end;
        Ok(true)
    }

    #[cold]
    fn restart_inside_entry(&self) -> DecodeError {
        DecodeError::new(format!(
            "bad block entry at offset {}: restart point {} falls inside the previous entry",
            self.current, self.next_restart
        ))
    }

    /// The current entry shares a prefix it may not: any at a restart point, or more than the
    /// previous key's length.
    #[cold]
    fn bad_shared_prefix(&self, shared: usize) -> DecodeError {
        if self.restart_start == self.current {
            DecodeError::new(format!(
                "bad block entry at offset {}: restart entry shares {shared} bytes",
                self.current
            ))
        } else {
            DecodeError::new(format!(
                "bad block entry at offset {}: shares {shared} bytes of a {}-byte previous key",
                self.current,
                self.key.len()
            ))
        }
    }

    fn invalidate(&mut self) {
        self.current = self.block.restarts_offset;
        self.next_offset = self.block.restarts_offset;
        self.restart_index = self.block.num_restarts;
        self.restart_start = self.block.restarts_offset;
        self.next_restart = usize::MAX;
    }

    fn fail(&mut self, e: DecodeError) {
        self.status = Err(e);
        self.invalidate();
        self.key.clear();
        self.value = 0..0;
    }
}

impl std::fmt::Debug for BlockIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockIter")
            .field("block", &self.block)
            .field("valid", &self.valid())
            .field("entry_offset", &self.current)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block_builder::BlockBuilder;
    use crate::coding::{put_u32, put_varint32};
    use crate::comparator::BytewiseComparator;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;

    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    fn cmp() -> Arc<dyn Comparator> {
        Arc::new(BytewiseComparator)
    }

    fn build(entries: &[(Vec<u8>, Vec<u8>)], restart_interval: usize) -> Arc<Block> {
        let mut builder = BlockBuilder::new(restart_interval);
        for (k, v) in entries {
            builder.add(k, v);
        }
        let size = builder.estimated_size();
        let bytes = builder.finish().to_vec();
        assert_eq!(bytes.len(), size);
        Arc::new(Block::decode(bytes).unwrap())
    }

    /// Sorted distinct keys with shared prefixes, varying lengths, empty and large values.
    fn random_entries(rng: &mut StdRng, n: usize) -> Entries {
        let prefixes: Vec<Vec<u8>> = (0..8)
            .map(|_| {
                (0..rng.gen_range(0..12))
                    .map(|_| rng.gen_range(b'a'..=b'd'))
                    .collect()
            })
            .collect();
        let mut map = BTreeMap::new();
        while map.len() < n {
            let mut key = prefixes[rng.gen_range(0..prefixes.len())].clone();
            let suffix_len = rng.gen_range(0..10);
            key.extend((0..suffix_len).map(|_| rng.gen_range(b'a'..=b'f')));
            let value_len = match rng.gen_range(0..20) {
                0..=4 => 0,
                5 => rng.gen_range(200..3000),
                _ => rng.gen_range(1..20),
            };
            let value = (0..value_len).map(|_| rng.gen::<u8>()).collect();
            map.insert(key, value);
        }
        map.into_iter().collect()
    }

    fn collect_forward(it: &mut BlockIter) -> Entries {
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        out
    }

    fn collect_backward(it: &mut BlockIter) -> Entries {
        let mut out = Vec::new();
        it.seek_to_last();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.prev();
        }
        out.reverse();
        out
    }

    fn random_target(rng: &mut StdRng, entries: &Entries) -> Vec<u8> {
        if entries.is_empty() || rng.gen_bool(0.3) {
            return (0..rng.gen_range(0..14))
                .map(|_| rng.gen_range(b'`'..=b'g'))
                .collect();
        }
        let mut t = entries[rng.gen_range(0..entries.len())].0.clone();
        match rng.gen_range(0..4) {
            0 => {}
            1 => t.push(rng.gen_range(0..=255)),
            2 => {
                t.pop();
            }
            _ => {
                if let Some(last) = t.last_mut() {
                    *last = last.wrapping_add(1);
                }
            }
        }
        t
    }

    fn check_seeks(block: &Arc<Block>, entries: &Entries, rng: &mut StdRng, rounds: usize) {
        let oracle: BTreeMap<&[u8], &[u8]> = entries
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_slice()))
            .collect();
        let mut it = block.iter(cmp());
        let mut targets: Vec<Vec<u8>> = entries.iter().map(|(k, _)| k.clone()).collect();
        targets.push(Vec::new());
        targets.push(vec![0xff; 20]);
        targets.extend((0..rounds).map(|_| random_target(rng, entries)));
        for target in &targets {
            let t = target.as_slice();
            it.seek(t);
            match oracle.range(t..).next() {
                Some((k, v)) => {
                    assert!(it.valid(), "seek {t:?}");
                    assert_eq!((it.key(), it.value()), (*k, *v), "seek {t:?}");
                    assert_eq!(&block.contents()[it.value_range()], *v);
                }
                None => assert!(!it.valid(), "seek {t:?} past the end"),
            }
            it.seek_for_prev(t);
            match oracle.range(..=t).next_back() {
                Some((k, v)) => {
                    assert!(it.valid(), "seek_for_prev {t:?}");
                    assert_eq!((it.key(), it.value()), (*k, *v), "seek_for_prev {t:?}");
                }
                None => assert!(!it.valid(), "seek_for_prev {t:?} before the start"),
            }
            assert!(it.status().is_ok());
        }
    }

    #[test]
    fn random_blocks_iterate_and_seek_like_a_btreemap() {
        let mut rng = StdRng::seed_from_u64(0x5ba1e);
        for restart_interval in [1, 2, 16] {
            for n in [1, 2, 3, 15, 16, 17, 100, 600] {
                let entries = random_entries(&mut rng, n);
                let block = build(&entries, restart_interval);
                let expected_restarts = n.div_ceil(restart_interval);
                assert_eq!(block.num_restarts(), expected_restarts);
                let mut it = block.iter(cmp());
                assert!(!it.valid());
                assert_eq!(collect_forward(&mut it), entries);
                assert_eq!(collect_backward(&mut it), entries);
                it.seek_to_first();
                assert_eq!(it.entry_offset(), 0);
                // Mixed stepping: next then prev returns to the same entry.
                for _ in 0..200 {
                    let i = rng.gen_range(0..n);
                    it.seek(&entries[i].0);
                    if i + 1 < n {
                        it.next();
                        assert_eq!(it.key(), entries[i + 1].0);
                        it.prev();
                    }
                    assert_eq!(it.key(), entries[i].0);
                    it.prev();
                    if i == 0 {
                        assert!(!it.valid());
                    } else {
                        assert_eq!(it.key(), entries[i - 1].0);
                    }
                }
                check_seeks(&block, &entries, &mut rng, 3000);
            }
        }
    }

    /// A cursor moved to another block (even one left mid-way, or failed) iterates it as a
    /// new cursor would.
    #[test]
    fn reset_cursor_iterates_the_new_block_like_a_new_one() {
        let mut rng = StdRng::seed_from_u64(11);
        let first_entries = random_entries(&mut rng, 40);
        let second_entries = random_entries(&mut rng, 25);
        let (first, second) = (build(&first_entries, 4), build(&second_entries, 3));
        let mut it = first.iter(cmp());
        it.seek(&random_target(&mut rng, &first_entries));
        it.reset_to(&second);
        assert!(!it.valid());
        assert!(it.status().is_ok());
        assert_eq!(collect_forward(&mut it), second_entries);
        assert_eq!(collect_backward(&mut it), second_entries);
        // A failed cursor recovers on a sound block.
        let area = [entry(0, b"ab", b"v"), entry(1, b"c", b"w")].concat();
        let broken = Arc::new(Block::decode(block_with_restarts(&area, &[0, 3], 2)).unwrap());
        it.reset_to(&broken);
        it.seek_to_first();
        it.next();
        assert!(it.status().is_err());
        it.reset_to(&first);
        assert!(it.status().is_ok());
        assert_eq!(collect_forward(&mut it), first_entries);
    }

    #[test]
    fn single_entry_block() {
        let entries = vec![(b"only".to_vec(), b"v".to_vec())];
        let block = build(&entries, 16);
        let mut it = block.iter(cmp());
        it.seek(b"a");
        assert_eq!(it.key(), b"only");
        it.seek(b"p");
        assert!(!it.valid());
        it.seek_for_prev(b"a");
        assert!(!it.valid());
        it.seek_for_prev(b"z");
        assert_eq!(it.value(), b"v");
        it.next();
        assert!(!it.valid());
        it.seek_to_last();
        it.prev();
        assert!(!it.valid());
        assert!(it.status().is_ok());
    }

    #[test]
    fn empty_keys_and_values() {
        let entries = vec![
            (Vec::new(), Vec::new()),
            (b"a".to_vec(), Vec::new()),
            (b"ab".to_vec(), vec![1; 100_000]),
        ];
        for interval in [1, 2, 16] {
            let block = build(&entries, interval);
            let mut it = block.iter(cmp());
            assert_eq!(collect_forward(&mut it), entries);
            assert_eq!(collect_backward(&mut it), entries);
            it.seek(b"");
            assert_eq!(it.key(), b"");
            it.seek_for_prev(b"");
            assert_eq!(it.key(), b"");
        }
    }

    #[test]
    fn empty_block_is_valid_and_yields_nothing() {
        let mut builder = BlockBuilder::new(16);
        let block = Arc::new(Block::decode(builder.finish().to_vec()).unwrap());
        assert_eq!(block.num_restarts(), 1);
        let mut it = block.iter(cmp());
        it.seek_to_first();
        assert!(!it.valid());
        it.seek_to_last();
        assert!(!it.valid());
        it.seek(b"x");
        assert!(!it.valid());
        it.seek_for_prev(b"x");
        assert!(!it.valid());
        assert!(it.status().is_ok());
        assert!(format!("{block:?}").contains("size: 8"));
    }

    fn block_with_restarts(entry_area: &[u8], restarts: &[u32], count: u32) -> Vec<u8> {
        let mut out = entry_area.to_vec();
        for &r in restarts {
            put_u32(&mut out, r);
        }
        put_u32(&mut out, count);
        out
    }

    #[test]
    fn decode_rejects_malformed_trailers() {
        let area = [0u8, 1, 0, b'a', 0, 1, 0, b'b'];
        assert!(Block::decode(block_with_restarts(&area, &[0, 4], 2)).is_ok());
        let bad: Vec<(&str, Vec<u8>)> = vec![
            ("empty", Vec::new()),
            ("3 bytes", vec![1, 0, 0]),
            ("zero restarts", block_with_restarts(&area, &[], 0)),
            ("count too large", block_with_restarts(&area, &[0], 4)),
            ("count huge", block_with_restarts(&[], &[], u32::MAX)),
            ("array past start", block_with_restarts(&[], &[0], 2)),
            ("first not zero", block_with_restarts(&area, &[4], 1)),
            ("not increasing", block_with_restarts(&area, &[0, 0], 2)),
            ("decreasing", block_with_restarts(&area, &[0, 4, 2], 3)),
            ("at array start", block_with_restarts(&area, &[0, 8], 2)),
            ("past array", block_with_restarts(&area, &[0, 100], 2)),
            (
                "two restarts, empty area",
                block_with_restarts(&[], &[0, 1], 2),
            ),
        ];
        for (what, bytes) in bad {
            assert!(Block::decode(bytes).is_err(), "{what} accepted");
        }
    }

    fn entry(shared: u32, key_delta: &[u8], value: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint32(&mut out, shared);
        put_varint32(&mut out, key_delta.len() as u32);
        put_varint32(&mut out, value.len() as u32);
        out.extend_from_slice(key_delta);
        out.extend_from_slice(value);
        out
    }

    /// Iterates every way and returns the first status error seen.
    fn first_error(block: &Arc<Block>) -> Option<String> {
        let mut it = block.iter(cmp());
        collect_forward(&mut it);
        if let Err(e) = it.status() {
            return Some(e.0);
        }
        let mut it = block.iter(cmp());
        collect_backward(&mut it);
        if let Err(e) = it.status() {
            return Some(e.0);
        }
        let mut it = block.iter(cmp());
        it.seek(b"zzz");
        it.status().err().map(|e| e.0)
    }

    #[test]
    fn malformed_entries_set_status_naming_the_offset() {
        let first = entry(0, b"abc", b"1");
        let at = first.len();
        let cases: Vec<(&str, Vec<u8>, Vec<u32>, &str)> = vec![
            (
                "truncated varint",
                [first.clone(), vec![0x80]].concat(),
                vec![0],
                "truncated",
            ),
            (
                "shared too long",
                [first.clone(), entry(4, b"d", b"")].concat(),
                vec![0],
                "shares 4",
            ),
            (
                "lengths past the area",
                [first.clone(), vec![0, 5, 0, b'x']].concat(),
                vec![0],
                "run past",
            ),
            (
                "restart entry shares",
                [first.clone(), entry(1, b"b", b"")].concat(),
                vec![0, at as u32],
                "restart entry shares",
            ),
            (
                "restart inside an entry",
                [first.clone(), entry(1, b"bcd", b"")].concat(),
                vec![0, at as u32 + 1],
                "",
            ),
        ];
        for (what, area, restarts, needle) in cases {
            let bytes = block_with_restarts(&area, &restarts, restarts.len() as u32);
            let block = Arc::new(Block::decode(bytes).unwrap());
            let err = first_error(&block).unwrap_or_else(|| panic!("{what}: not detected"));
            assert!(err.contains("offset"), "{what}: {err}");
            assert!(err.contains(needle), "{what}: {err}");
            // Sticky: once the error is seen, no seek yields an entry again.
            let mut it = block.iter(cmp());
            collect_forward(&mut it);
            collect_backward(&mut it);
            it.seek(b"zzz");
            assert!(it.status().is_err(), "{what}");
            it.seek_to_first();
            assert!(!it.valid(), "{what}");
            it.seek_for_prev(b"zzz");
            assert!(!it.valid(), "{what}");
        }
        // The first entry itself decodes fine and is returned before the damage is reached.
        let bytes = block_with_restarts(&[first, vec![0x80]].concat(), &[0], 1);
        let block = Arc::new(Block::decode(bytes).unwrap());
        let mut it = block.iter(cmp());
        it.seek_to_first();
        assert_eq!((it.key(), it.value()), (&b"abc"[..], &b"1"[..]));
        it.next();
        assert!(!it.valid());
        let err = it.status().unwrap_err().0;
        assert!(err.contains(&format!("offset {at}")), "{err}");
    }

    /// Exercises every operation on a possibly corrupt block; returns normally or not at all.
    fn exercise(bytes: Vec<u8>, targets: &[Vec<u8>]) {
        let Ok(block) = Block::decode(bytes) else {
            return;
        };
        let block = Arc::new(block);
        let len = block.contents().len();
        let limit = len + 1; // each step consumes at least one byte
        let mut it = block.iter(cmp());
        it.seek_to_first();
        let mut steps = 0;
        while it.valid() {
            assert!(it.value_range().end <= len);
            let _ = (it.key(), it.value(), it.entry_offset());
            it.next();
            steps += 1;
            assert!(steps <= limit, "forward iteration does not end");
        }
        let mut it = block.iter(cmp());
        it.seek_to_last();
        steps = 0;
        while it.valid() {
            let _ = (it.key(), it.value());
            it.prev();
            steps += 1;
            assert!(steps <= limit, "backward iteration does not end");
        }
        for t in targets {
            let mut it = block.iter(cmp());
            it.seek(t);
            if it.valid() {
                it.next();
            }
            it.seek_for_prev(t);
            if it.valid() {
                it.prev();
            }
            if it.valid() {
                it.next();
            }
            let _ = it.status();
        }
    }

    #[test]
    fn byte_flips_never_panic() {
        let mut rng = StdRng::seed_from_u64(7);
        for interval in [1, 2, 3] {
            let mut entries = random_entries(&mut rng, 12);
            for (_, v) in &mut entries {
                v.truncate(6);
            }
            let mut builder = BlockBuilder::new(interval);
            for (k, v) in &entries {
                builder.add(k, v);
            }
            let good = builder.finish().to_vec();
            let mut targets: Vec<Vec<u8>> = entries.iter().map(|(k, _)| k.clone()).collect();
            targets.extend((0..8).map(|_| random_target(&mut rng, &entries)));
            for i in 0..good.len() {
                for mask in [0x01u8, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff] {
                    let mut bad = good.clone();
                    bad[i] ^= mask;
                    exercise(bad, &targets);
                }
            }
            for cut in 0..good.len() {
                exercise(good[..cut].to_vec(), &targets);
            }
        }
    }

    /// `Block::seek_entry` against `BlockIter::seek` on one block and target: the same entry,
    /// or both failing (the point lookup's walk checks what the iterator checks).
    fn check_seek_entry_agrees(block: &Arc<Block>, target: &[u8]) {
        let mut key = Vec::new();
        let found = block.seek_entry(&BytewiseComparator, target, &mut key);
        let mut it = block.iter(cmp());
        it.seek(target);
        match found {
            Ok(Some(value)) => {
                assert!(
                    it.valid(),
                    "seek_entry found {key:?} for {target:?}, the iterator none"
                );
                assert_eq!(key, it.key(), "target {target:?}");
                assert_eq!(value, it.value_range(), "target {target:?}");
            }
            Ok(None) => {
                assert!(!it.valid(), "target {target:?}");
                assert!(it.status().is_ok(), "target {target:?}");
            }
            Err(e) => {
                assert!(
                    !it.valid(),
                    "seek_entry failed ({e}), the iterator found an entry"
                );
                assert_eq!(it.status().unwrap_err().0, e.0, "target {target:?}");
            }
        }
    }

    #[test]
    fn seek_entry_agrees_with_the_iterator_on_good_and_damaged_blocks() {
        let mut rng = StdRng::seed_from_u64(0x9e7);
        for restart_interval in [1, 2, 16] {
            for n in [1, 2, 15, 16, 17, 100, 600] {
                let entries = random_entries(&mut rng, n);
                let block = build(&entries, restart_interval);
                let mut targets: Vec<Vec<u8>> = entries.iter().map(|(k, _)| k.clone()).collect();
                targets.push(Vec::new());
                targets.push(vec![0xff; 20]);
                targets.extend((0..500).map(|_| random_target(&mut rng, &entries)));
                for target in &targets {
                    check_seek_entry_agrees(&block, target);
                }
            }
        }
        let mut entries = random_entries(&mut rng, 12);
        for (_, v) in &mut entries {
            v.truncate(6);
        }
        let mut builder = BlockBuilder::new(3);
        for (k, v) in &entries {
            builder.add(k, v);
        }
        let good = builder.finish().to_vec();
        let mut targets: Vec<Vec<u8>> = entries.iter().map(|(k, _)| k.clone()).collect();
        targets.extend((0..8).map(|_| random_target(&mut rng, &entries)));
        targets.push(b"zzz".to_vec());
        let mut damaged = 0;
        for i in 0..good.len() {
            for mask in [0x01u8, 0x10, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[i] ^= mask;
                let Ok(block) = Block::decode(bad) else {
                    continue;
                };
                let block = Arc::new(block);
                for target in &targets {
                    damaged += usize::from(
                        block
                            .seek_entry(&BytewiseComparator, target, &mut Vec::new())
                            .is_err(),
                    );
                    check_seek_entry_agrees(&block, target);
                }
            }
        }
        assert!(damaged > 0, "no flip produced a malformed entry");
    }
}
