//! The in-memory form of a table's index block, decoded once at open.
//!
//! The index block (docs/format/sst.md, "Index block") is a prefix-compressed block; searching
//! it directly costs a varint decode and a cache miss per binary-search step, which dominated
//! point lookups on large tables. Decoded, the separators sit in one contiguous buffer, the
//! handles in a dense array, and, for the bytewise comparator, the first 8 bytes of each
//! separator's user key in a `u64` array that the binary search compares first, touching the
//! full key only on a tie.
//!
//! A version-2 index may store its separators as user keys (docs/format/sst.md, "Index block,
//! version 2"); in memory each gets the trailer `0` (seqno 0, kind 0): the largest internal
//! key of that user key. No user key of such a table spans two data blocks, so that internal
//! key is `>=` every key of its block and `<` every key of the next, the same contract as a
//! stored internal separator, and every search below needs no other case.
//!
//! Invariants:
//! 1. `key_offsets.len() == handles.len() + 1`, offsets non-decreasing, last = `keys.len()`.
//! 2. Separators are strictly increasing in internal-key order (checked by [`Index::push`]).
//! 3. `prefixes` is empty unless the user comparator is bytewise; then `prefixes[i]` is the
//!    big-endian value of the first 8 bytes of separator `i`'s user key, zero-padded. For
//!    bytewise keys `a <= b` implies `prefix(a) <= prefix(b)`, so differing prefixes decide
//!    the order and equal prefixes fall back to the full comparison.
//! 4. `samples[k]` holds `prefixes[j * 8^(k+1)]` for every such index `j`, and level `k`
//!    exists once the index has more than `8^(k+1)` blocks (so the last level has at most 8
//!    entries). Entry `j` of level `k + 1` is entry `8 * j` of level `k`, so a search finds
//!    its place in the small top level, then in a window of at most 7 entries of each level
//!    below, ending in one window of `prefixes`: a few cache lines per table at any size,
//!    where a binary search over `prefixes` touches one line per step once past the lines
//!    shared by every search. Empty unless `prefixes` is kept.
//!
//! `handles` stays a separate array: interleaved with `prefixes` as {prefix, offset, size},
//! the final window's 8 entries would span 3 cache lines instead of 1 line of prefixes plus
//! 1 of handles. Instead, once that window is known, its handles' lines are prefetched, so
//! the handle the seek reads next is loading while the window's prefixes are compared.

use std::cmp::Ordering;
use std::ops::Range;
use std::sync::Arc;

use crate::block::Block;
use crate::comparator::{BytewiseComparator, Comparator};
use crate::error::DecodeError;
use crate::format::BlockHandle;
use crate::key::{user_key_of, InternalKeyComparator, TRAILER_SIZE};
use crate::prefetch::prefetch_lines;

/// The decoded index: separator `i` bounds data block `i` from above.
#[derive(Debug)]
pub(crate) struct Index {
    keys: Vec<u8>,
    key_offsets: Vec<u32>,
    handles: Vec<BlockHandle>,
    prefixes: Vec<u64>,
    /// Every 8th prefix, every 64th, ... (invariant 4).
    samples: Vec<Vec<u64>>,
    comparator: Arc<InternalKeyComparator>,
    /// The user comparator is bytewise, so `prefixes` is kept (invariant 3).
    bytewise: bool,
    /// The file stores the separators as user keys (the in-memory trailer is then 0).
    user_key_separators: bool,
}

/// How many entries of one level of `samples` (or of `prefixes`) an entry of the level above
/// stands for: 8 prefixes are 64 bytes, one cache line (two when unaligned).
const SAMPLE_FANOUT: usize = 8;

/// The in-memory trailer of a separator stored as a user key: seqno 0, kind 0, the largest
/// internal key of its user key.
const USER_KEY_SEPARATOR_TRAILER: [u8; TRAILER_SIZE] = [0; TRAILER_SIZE];

impl Index {
    /// An index to be filled with [`Index::push`]; `capacity` entries are reserved (the
    /// caller bounds it by the bytes it decodes from).
    pub(crate) fn with_capacity(
        comparator: Arc<InternalKeyComparator>,
        user_key_separators: bool,
        capacity: usize,
        key_bytes: usize,
    ) -> Self {
        let bytewise = comparator.user_comparator().name() == BytewiseComparator::NAME;
        let mut key_offsets = Vec::with_capacity(capacity + 1);
        key_offsets.push(0);
        Index {
            keys: Vec::with_capacity(key_bytes),
            key_offsets,
            handles: Vec::with_capacity(capacity),
            prefixes: Vec::with_capacity(if bytewise { capacity } else { 0 }),
            samples: Vec::new(),
            comparator,
            bytewise,
            user_key_separators,
        }
    }

    /// Decodes a version-1 index block (data-block format, internal-key separators, full
    /// handles), checking handles and key order.
    pub(crate) fn decode_v1(
        block: Block,
        comparator: Arc<InternalKeyComparator>,
    ) -> Result<Self, DecodeError> {
        let block = Arc::new(block);
        let mut iter = block.iter(comparator.clone());
        let mut index = Index::with_capacity(comparator, false, 0, block.contents().len());
        iter.seek_to_first();
        while iter.valid() {
            let handle = BlockHandle::decode_exact(iter.value())
                .map_err(|e| DecodeError::new(format!("index entry {}: {e}", index.len())))?;
            index.push(iter.key(), handle)?;
            iter.next();
        }
        iter.status()?;
        index.keys.shrink_to_fit();
        Ok(index)
    }

    /// Appends the separator of the next data block, as stored (a user key when the index
    /// has user-key separators), refusing one that is not above the previous separator.
    pub(crate) fn push(&mut self, stored: &[u8], handle: BlockHandle) -> Result<(), DecodeError> {
        let start = self.keys.len();
        self.keys.extend_from_slice(stored);
        if self.user_key_separators {
            self.keys.extend_from_slice(&USER_KEY_SEPARATOR_TRAILER);
        } else if stored.len() < TRAILER_SIZE {
            self.keys.truncate(start);
            return Err(DecodeError::new(format!(
                "index entry {}: separator of {} bytes is shorter than an internal key's trailer",
                self.len(),
                stored.len()
            )));
        }
        if let Some(previous) = self.len().checked_sub(1) {
            let previous = &self.keys[self.key_offsets[previous] as usize..start];
            if self.comparator.compare(previous, &self.keys[start..]) != Ordering::Less {
                self.keys.truncate(start);
                return Err(DecodeError::new(format!(
                    "index keys out of order at entry {}",
                    self.len()
                )));
            }
        }
        let end = u32::try_from(self.keys.len())
            .map_err(|_| DecodeError::new("index block keys exceed 4 GiB"))?;
        self.key_offsets.push(end);
        self.handles.push(handle);
        if self.bytewise {
            self.push_prefix(key_prefix(user_key_of(&self.keys[start..])));
        }
        Ok(())
    }

    /// Appends the next block's prefix, and to every level of `samples` that samples its
    /// position, starting a level when the index outgrows the one above (invariant 4).
    fn push_prefix(&mut self, prefix: u64) {
        let position = self.prefixes.len();
        self.prefixes.push(prefix);
        let (mut level, mut stride) = (0, SAMPLE_FANOUT);
        while position > 0 && position.is_multiple_of(stride) {
            if level == self.samples.len() {
                // A new level starts with the sample of position 0.
                self.samples.push(vec![self.prefixes[0]]);
            }
            self.samples[level].push(prefix);
            level += 1;
            stride = stride.saturating_mul(SAMPLE_FANOUT);
        }
    }

    /// An index of no blocks (a placeholder while a table is being opened).
    pub(crate) fn empty() -> Self {
        Index {
            keys: Vec::new(),
            key_offsets: vec![0],
            handles: Vec::new(),
            prefixes: Vec::new(),
            samples: Vec::new(),
            comparator: Arc::new(InternalKeyComparator::new(Arc::new(BytewiseComparator))),
            bytewise: false,
            user_key_separators: false,
        }
    }

    /// Number of data blocks.
    pub(crate) fn len(&self) -> usize {
        self.handles.len()
    }

    /// Separator `i` (an internal key).
    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let (start, end) = (
            self.key_offsets[i] as usize,
            self.key_offsets[i + 1] as usize,
        );
        &self.keys[start..end]
    }

    /// Separator `i` as the file stores it: a user key when
    /// [`Self::user_key_separators`], else the internal key.
    pub(crate) fn stored_separator(&self, i: usize) -> &[u8] {
        let key = self.key(i);
        if self.user_key_separators {
            user_key_of(key)
        } else {
            key
        }
    }

    /// Whether the file stores the separators as user keys (format version 2).
    pub(crate) fn user_key_separators(&self) -> bool {
        self.user_key_separators
    }

    /// Handle of data block `i`.
    pub(crate) fn handle(&self, i: usize) -> BlockHandle {
        self.handles[i]
    }

    /// The first block whose separator is `>= target` (an internal key): the only block that
    /// can hold the first entry `>= target`. `len()` when every separator is below it.
    pub(crate) fn seek(&self, target: &[u8]) -> usize {
        if self.prefixes.is_empty() {
            return self.partition_point_full(0, self.len(), target);
        }
        let prefix = key_prefix(user_key_of(target));
        // Blocks whose prefix is below the target's are all before it; those above, after.
        let low = self.prefixes_below(prefix);
        let high = self.equal_prefixes_end(low, prefix);
        self.partition_point_full(low, high, target)
    }

    /// How many prefixes are below `prefix`: searched level by level through `samples`, a
    /// window of at most `SAMPLE_FANOUT - 1` entries in each level below the top (invariant
    /// 4). Once the window of `prefixes` is known, the handles it covers are prefetched: the
    /// search ends in that window and the seek reads its handle next, so the handle's line
    /// loads while the window's prefixes are compared, not after.
    fn prefixes_below(&self, prefix: u64) -> usize {
        let mut below: Option<usize> = None;
        for level in self.samples.iter().rev() {
            let Some(window) = Self::sample_window(below, level.len()) else {
                return 0;
            };
            let start = window.start;
            let entries = level.get(window).unwrap_or_default();
            below = Some(start + entries.partition_point(|&p| p < prefix));
        }
        let Some(window) = Self::sample_window(below, self.prefixes.len()) else {
            return 0;
        };
        // The answer is in `window.start..=window.end`; their handles span at most 3 lines.
        let last = window.end.min(self.handles.len().saturating_sub(1));
        prefetch_lines(self.handles.get(window.start..=last).unwrap_or_default());
        let start = window.start;
        let entries = self.prefixes.get(window).unwrap_or_default();
        start + entries.partition_point(|&p| p < prefix)
    }

    /// The entries of a level of `len` entries (a level of `samples`, or `prefixes`) that a
    /// search must still compare, given how many entries of the level above are below the
    /// target (`None` at the top level, searched whole); `None` when the answer is 0.
    fn sample_window(below_above: Option<usize>, len: usize) -> Option<Range<usize>> {
        match below_above {
            None => Some(0..len),
            // Even the first entry (every level's first is prefix 0) is not below.
            Some(0) => None,
            // Sample `count - 1` of the level above (entry `(count - 1) * 8` here) is below
            // `prefix`, and its sample `count` (entry `count * 8`), if any, is not.
            Some(count) => Some((count - 1) * SAMPLE_FANOUT + 1..(count * SAMPLE_FANOUT).min(len)),
        }
    }

    /// The end of the run of `prefix`es starting at `start` (where the prefixes reach
    /// `prefix`). The run is usually empty or one block long, so it is found by galloping
    /// forward from `start`: a binary search over the rest of the index would touch a cache
    /// line per step, far from the one already read.
    fn equal_prefixes_end(&self, start: usize, prefix: u64) -> usize {
        let len = self.prefixes.len();
        // prefixes[start..equal] are all `prefix`; the run ends before `probe_end`, or the
        // probe at `probe_end - 1` shows it goes on.
        let mut equal = start;
        let mut step = 1;
        loop {
            let probe_end = equal.saturating_add(step).min(len);
            if probe_end == equal || self.prefixes[probe_end - 1] != prefix {
                return equal + self.prefixes[equal..probe_end].partition_point(|&p| p == prefix);
            }
            equal = probe_end;
            step *= 2;
        }
    }

    fn partition_point_full(&self, low: usize, high: usize, target: &[u8]) -> usize {
        let (mut low, mut high) = (low, high);
        while low < high {
            let mid = low + (high - low) / 2;
            if self.comparator.compare(self.key(mid), target) == Ordering::Less {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        low
    }

    /// Bytes of memory the decoded index holds.
    pub(crate) fn memory_usage(&self) -> usize {
        self.keys.capacity()
            + self.key_offsets.capacity() * 4
            + self.handles.capacity() * std::mem::size_of::<BlockHandle>()
            + self.prefixes.capacity() * 8
            + self.samples.iter().map(|s| s.capacity() * 8).sum::<usize>()
    }
}

/// The first 8 bytes of `key`, big-endian, zero-padded.
fn key_prefix(key: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    let n = key.len().min(8);
    bytes[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block_builder::BlockBuilder;
    use crate::key::{InternalKey, ValueKind};

    fn build(keys: &[InternalKey], comparator: Arc<dyn Comparator>) -> Index {
        let mut builder = BlockBuilder::new(1);
        for (i, key) in keys.iter().enumerate() {
            let mut value = Vec::new();
            BlockHandle {
                offset: i as u64 * 100,
                size: 90,
            }
            .encode_to(&mut value);
            builder.add(key.encoded(), &value);
        }
        let block = Block::decode(builder.finish().to_vec()).unwrap();
        Index::decode_v1(block, Arc::new(InternalKeyComparator::new(comparator))).unwrap()
    }

    #[derive(Debug)]
    struct ReverseComparator;
    #[allow(clippy::unnecessary_literal_bound)] // the trait ties the name to &self
    impl Comparator for ReverseComparator {
        fn name(&self) -> &str {
            "test.Reverse"
        }
        fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
            b.cmp(a)
        }
        fn find_shortest_separator(&self, _: &mut Vec<u8>, _: &[u8]) {}
        fn find_short_successor(&self, _: &mut Vec<u8>) {}
    }

    #[test]
    fn seek_matches_linear_search_with_and_without_prefixes() {
        // Keys sharing long prefixes, short keys, and keys that are prefixes of others.
        let user_keys: Vec<Vec<u8>> = vec![
            b"a".to_vec(),
            b"abcdefgh".to_vec(),
            b"abcdefgh\x00".to_vec(),
            b"abcdefghij".to_vec(),
            b"abcdefghik".to_vec(),
            b"abcdefgi".to_vec(),
            b"b".to_vec(),
            b"b\x00\x00\x00\x00\x00\x00\x00\x01".to_vec(),
            b"zz".to_vec(),
        ];
        for (comparator, keys) in [
            (
                Arc::new(BytewiseComparator) as Arc<dyn Comparator>,
                user_keys.clone(),
            ),
            (
                Arc::new(ReverseComparator),
                user_keys.iter().rev().cloned().collect(),
            ),
        ] {
            let separators: Vec<InternalKey> = keys
                .iter()
                .map(|k| InternalKey::new(k, 5, ValueKind::Value))
                .collect();
            let index = build(&separators, comparator.clone());
            let icmp = InternalKeyComparator::new(comparator);
            let mut targets: Vec<InternalKey> = Vec::new();
            for k in &keys {
                for seqno in [0, 4, 5, 6, 100] {
                    targets.push(InternalKey::new(k, seqno, ValueKind::Value));
                }
                let mut shorter = k.clone();
                shorter.pop();
                targets.push(InternalKey::new(&shorter, 1, ValueKind::Value));
                let mut longer = k.clone();
                longer.push(0);
                targets.push(InternalKey::new(&longer, 1, ValueKind::Value));
            }
            targets.push(InternalKey::new(b"", 1, ValueKind::Value));
            targets.push(InternalKey::new(
                b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",
                1,
                ValueKind::Value,
            ));
            assert_seeks_like_a_scan(&index, &icmp, &separators, &targets);
        }
    }

    /// Each target's seek lands on the first separator `>=` it, as a linear scan finds.
    fn assert_seeks_like_a_scan(
        index: &Index,
        icmp: &InternalKeyComparator,
        separators: &[InternalKey],
        targets: &[InternalKey],
    ) {
        for target in targets {
            let expected = separators
                .iter()
                .position(|s| icmp.compare(s.encoded(), target.encoded()) != Ordering::Less)
                .unwrap_or(separators.len());
            assert_eq!(index.seek(target.encoded()), expected, "target {target:?}");
        }
    }

    #[test]
    fn seek_finds_blocks_in_long_runs_of_equal_prefixes() {
        // Runs of 1 to 70 separators sharing their first 8 bytes, between single ones: the
        // run's end is found by galloping, then the full keys decide.
        let mut user_keys: Vec<Vec<u8>> = Vec::new();
        for (run, length) in [1usize, 2, 3, 7, 8, 9, 70].into_iter().enumerate() {
            user_keys.push(format!("{run}-single").into_bytes());
            for i in 0..length {
                user_keys.push(format!("{run}-shared-{i:03}").into_bytes());
            }
        }
        user_keys.sort();
        let separators: Vec<InternalKey> = user_keys
            .iter()
            .map(|k| InternalKey::new(k, 5, ValueKind::Value))
            .collect();
        let comparator: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
        let index = build(&separators, comparator.clone());
        let icmp = InternalKeyComparator::new(comparator);
        let mut targets: Vec<InternalKey> = Vec::new();
        for k in &user_keys {
            for seqno in [4, 5, 6] {
                targets.push(InternalKey::new(k, seqno, ValueKind::Value));
            }
            let mut after = k.clone();
            after.push(b'~');
            targets.push(InternalKey::new(&after, 1, ValueKind::Value));
        }
        targets.push(InternalKey::new(b"~", 1, ValueKind::Value));
        assert_seeks_like_a_scan(&index, &icmp, &separators, &targets);
    }

    /// Indexes of sizes around each level boundary of `samples` (8, 64, 512, 4096 blocks),
    /// with runs of equal prefixes: the levels hold what invariant 4 says, and the search
    /// through them counts the prefixes below every probe as a scan does.
    #[test]
    fn sampled_prefix_search_matches_a_scan() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let comparator = Arc::new(InternalKeyComparator::new(Arc::new(BytewiseComparator)));
        for len in [
            0usize, 1, 2, 7, 8, 9, 10, 63, 64, 65, 66, 511, 512, 513, 4095, 4096, 4097, 5000,
        ] {
            let mut index = Index::with_capacity(comparator.clone(), true, len, len * 12);
            let mut prefix = 0u64;
            for i in 0..len {
                // Mostly new prefixes, sometimes a run of equal ones.
                if i == 0 || rng.gen_bool(0.7) {
                    prefix += rng.gen_range(1..1000);
                }
                let mut user_key = prefix.to_be_bytes().to_vec();
                user_key.extend_from_slice(&(i as u32).to_be_bytes());
                index
                    .push(
                        &user_key,
                        BlockHandle {
                            offset: i as u64,
                            size: 1,
                        },
                    )
                    .unwrap();
            }
            assert_eq!(index.prefixes.len(), len);
            let mut stride = SAMPLE_FANOUT;
            for level in &index.samples {
                let expected: Vec<u64> = index.prefixes.iter().step_by(stride).copied().collect();
                assert_eq!(level, &expected, "len {len} stride {stride}");
                stride *= SAMPLE_FANOUT;
            }
            // A level for each power of 8 the index outgrew, so the top one is small.
            let mut levels = 0;
            while len > SAMPLE_FANOUT.pow(levels + 1) {
                levels += 1;
            }
            assert_eq!(index.samples.len(), levels as usize, "len {len}");
            assert!(index
                .samples
                .last()
                .is_none_or(|top| top.len() <= SAMPLE_FANOUT));
            let mut probes: Vec<u64> = vec![0, u64::MAX, prefix + 1];
            for &p in &index.prefixes {
                probes.extend([p - 1, p, p + 1]);
            }
            for probe in probes {
                let expected = index.prefixes.iter().filter(|&&p| p < probe).count();
                assert_eq!(
                    index.prefixes_below(probe),
                    expected,
                    "len {len} probe {probe}"
                );
            }
        }
    }

    #[test]
    fn decode_rejects_out_of_order_and_bad_handles() {
        let mut builder = BlockBuilder::new(1);
        let mut value = Vec::new();
        BlockHandle { offset: 0, size: 1 }.encode_to(&mut value);
        builder.add(
            InternalKey::new(b"b", 1, ValueKind::Value).encoded(),
            &value,
        );
        builder.add(
            InternalKey::new(b"a", 1, ValueKind::Value).encoded(),
            &value,
        );
        let icmp = Arc::new(InternalKeyComparator::new(Arc::new(BytewiseComparator)));
        let block = Block::decode(builder.finish().to_vec()).unwrap();
        assert!(Index::decode_v1(block, icmp.clone()).is_err());
        let mut builder = BlockBuilder::new(1);
        builder.add(
            InternalKey::new(b"a", 1, ValueKind::Value).encoded(),
            b"\x80",
        );
        let block = Block::decode(builder.finish().to_vec()).unwrap();
        assert!(Index::decode_v1(block, icmp).is_err());
    }
}
