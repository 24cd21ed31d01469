//! Building a memtable in one pass from writes known up front (WAL replay at open): sort them
//! once, then append to the skiplist's tails (`SkipList::append_sorted`) instead of one
//! random insert each. Inserting a few million random keys one by one costs a cache miss per
//! skiplist level; a sort and an append are sequential. [`MemTable::from_unsorted`] splits the
//! writes into key ranges, sorts and builds each on its own thread
//! (`SkipList::build_segment`) and attaches the parts in order
//! (`SkipList::attach_segments`).
//!
//! Invariants (besides the memtable's and the skiplist's, which a bulk-built memtable keeps):
//! 1. The result equals, entry for entry, a memtable that got the same writes through
//!    [`MemTable::add`] in any order: the same point entries in internal-key order (user key
//!    ascending by the comparator, then seqno descending), the same range tombstones and the
//!    same counters.
//! 2. Point entries reach the skiplist in strictly ascending internal-key order (within each
//!    key range, and across the ranges when they are attached), or the build fails with an
//!    error naming the entry; nothing half-built is returned.
//! 3. Every key range holds only keys at or below every key of the next range (order
//!    statistics), so ranges sorted on their own and attached in order are sorted as a whole.

use std::sync::atomic::Ordering as MemoryOrder;
use std::sync::Arc;

use shale_sst::{Comparator, SeqNo, ValueKind, MAX_SEQNO};

use super::bloom::key_hash;
use super::skiplist::KeyComparator;
use super::MemTable;
use crate::error::{Error, Result};

/// Entries below which another sorting thread costs more than it saves.
const MIN_PER_THREAD: usize = 1 << 14;

/// One write for a bulk-built memtable: what [`MemTable::add`] takes, borrowed from where it
/// was decoded (a WAL record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemTableEntry<'a> {
    /// The write's sequence number (unique within a memtable, at most `MAX_SEQNO`).
    pub seqno: SeqNo,
    /// Value, deletion or range deletion.
    pub kind: ValueKind,
    /// The user key (for a range deletion, the inclusive start).
    pub user_key: &'a [u8],
    /// The value (for a range deletion, the exclusive end).
    pub value: &'a [u8],
}

impl MemTableEntry<'_> {
    fn trailer(&self) -> u64 {
        (self.seqno << 8) | u64::from(self.kind.tag())
    }
}

impl MemTable {
    /// A memtable holding `entries`, whose point entries (values and deletions) come in
    /// internal-key order: user key ascending by `comparator`, then seqno descending. Range
    /// deletions may come anywhere. Sequence numbers must be unique and at most `MAX_SEQNO`.
    /// Sized like [`MemTable::for_write_buffer`] for a keyspace with `write_buffer_size`, with
    /// a bloom filter of `bloom_bytes` (0: none) holding every point entry's key.
    ///
    /// Out-of-order or duplicate point entries, or a seqno above `MAX_SEQNO`, are
    /// `InvalidArgument` naming the entry's position.
    #[cfg(any(test, feature = "testing"))]
    pub fn from_sorted<'a>(
        comparator: Arc<dyn Comparator>,
        id: u64,
        write_buffer_size: usize,
        bloom_bytes: usize,
        entries: impl IntoIterator<Item = MemTableEntry<'a>>,
    ) -> Result<MemTable> {
        let mut table = Self::for_write_buffer(comparator, id, write_buffer_size, bloom_bytes);
        let bloom = table.bloom.take();
        let mut counts = Counts::default();
        let mut bad_seqno = None;
        let mut tombstones = Vec::new();
        let points = entries.into_iter().enumerate().filter_map(|(index, e)| {
            if e.seqno > MAX_SEQNO {
                bad_seqno.get_or_insert((index, e.seqno));
            }
            counts.note(&e);
            if e.kind == ValueKind::RangeDeletion {
                tombstones.push((e.seqno, e.user_key, e.value));
                return None;
            }
            if let Some(bloom) = &bloom {
                bloom.add_hash(key_hash(e.user_key));
            }
            Some((e.user_key, e.trailer(), e.value))
        });
        let sorted = table.list.append_sorted(points);
        table.bloom = bloom;
        if let Some((index, seqno)) = bad_seqno {
            return Err(Error::InvalidArgument(format!(
                "bulk memtable entry {index} has seqno {seqno}, above the largest {MAX_SEQNO}"
            )));
        }
        if let Err(point) = sorted {
            return Err(Error::InvalidArgument(format!(
                "bulk memtable point entry {point} is not above the one before it in \
                 internal-key order (unsorted input, or a duplicate seqno)"
            )));
        }
        for (seqno, start, end) in tombstones {
            table.add_range_tombstone(seqno, start, end);
        }
        table.set_counts(&counts);
        Ok(table)
    }

    /// Stores counters gathered by a bulk build (shard 0 holds them all).
    fn set_counts(&self, counts: &Counts) {
        let shard = &self.stats[0];
        shard.entries.store(counts.entries, MemoryOrder::Relaxed);
        shard
            .deletions
            .store(counts.deletions, MemoryOrder::Relaxed);
        shard
            .min_seqno
            .store(counts.min_seqno, MemoryOrder::Relaxed);
        shard
            .max_seqno
            .store(counts.max_seqno, MemoryOrder::Relaxed);
    }

    /// A memtable holding `entries` in any order (the same rules as
    /// [`MemTable::from_sorted`] otherwise). With `threads > 1` (and enough entries) the
    /// point entries are split into that many key ranges (by order statistics, in linear
    /// time), and one thread per range sorts it and builds its part of the skiplist
    /// (`SkipList::build_segment`); the parts are
    /// then attached in key order.
    ///
    /// The sort moves each entry with, for the bytewise comparator, the first 8 bytes of its
    /// user key as an integer, which decides most comparisons without reading the key (it
    /// lies somewhere in the decoded WAL records: a cache miss per look); other comparators
    /// compare the keys. The build reads the sorted entries in order and fetches each key and
    /// value ahead of need ([`prefetch`]).
    pub fn from_unsorted(
        comparator: Arc<dyn Comparator>,
        id: u64,
        write_buffer_size: usize,
        bloom_bytes: usize,
        entries: &[MemTableEntry<'_>],
        threads: usize,
    ) -> Result<MemTable> {
        let mut table =
            Self::for_write_buffer(comparator.clone(), id, write_buffer_size, bloom_bytes);
        let order = KeyComparator::new(comparator);
        let bytewise = order.is_bytewise();
        let mut counts = Counts::default();
        let mut keys: Vec<SortKey<'_>> = Vec::with_capacity(entries.len());
        for (index, e) in entries.iter().enumerate() {
            if e.seqno > MAX_SEQNO {
                return Err(Error::InvalidArgument(format!(
                    "bulk memtable entry {index} has seqno {}, above the largest {MAX_SEQNO}",
                    e.seqno
                )));
            }
            counts.note(e);
            if e.kind == ValueKind::RangeDeletion {
                table.add_range_tombstone(e.seqno, e.user_key, e.value);
                continue;
            }
            if let Some(bloom) = &table.bloom {
                bloom.add_hash(key_hash(e.user_key));
            }
            keys.push(SortKey {
                prefix: if bytewise { key_prefix(e.user_key) } else { 0 },
                entry: *e,
            });
        }
        // Ties of the prefix fall back to the full internal-key order, and a smaller prefix
        // means a smaller key (zero padding sorts a short key before any longer key it
        // prefixes, as bytewise order does), so this is the internal-key order.
        let compare = |a: &SortKey<'_>, b: &SortKey<'_>| {
            a.prefix.cmp(&b.prefix).then_with(|| {
                let (x, y) = (&a.entry, &b.entry);
                order.compare(x.user_key, x.trailer(), y.user_key, y.trailer())
            })
        };
        let threads = threads.clamp(1, (keys.len() / MIN_PER_THREAD).max(1));
        // Key ranges: everything in a range sorts at or below everything in the next.
        let mut ranges: Vec<(usize, &mut [SortKey<'_>])> = Vec::with_capacity(threads);
        let mut rest: &mut [SortKey<'_>] = &mut keys;
        let mut offset = 0;
        for left in (2..=threads).rev() {
            let at = rest.len() / left;
            rest.select_nth_unstable_by(at, compare);
            let (range, tail) = rest.split_at_mut(at);
            ranges.push((offset, range));
            offset += at;
            rest = tail;
        }
        ranges.push((offset, rest));
        let list = &table.list;
        let build = |(offset, range): (usize, &mut [SortKey<'_>])| {
            range.sort_unstable_by(compare);
            list.build_segment(Prefetching {
                keys: range,
                next: 0,
            })
            .map_err(|index| offset + index)
        };
        let segments: Vec<_> = if ranges.len() == 1 {
            ranges.into_iter().map(build).collect()
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = ranges
                    .into_iter()
                    .map(|range| scope.spawn(|| build(range)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                    .collect()
            })
        };
        let attached = segments
            .into_iter()
            .collect::<std::result::Result<Vec<_>, usize>>()
            .and_then(|segments| table.list.attach_segments(segments));
        if let Err(point) = attached {
            return Err(Error::InvalidArgument(format!(
                "bulk memtable point entry {point} (in sorted order) is not above the one \
                 before it in internal-key order (a duplicate seqno)"
            )));
        }
        table.set_counts(&counts);
        Ok(table)
    }
}

/// What [`MemTable::from_unsorted`] sorts.
#[derive(Debug, Clone, Copy)]
struct SortKey<'a> {
    /// The user key's first 8 bytes, big-endian, zero-padded (bytewise comparator), or 0.
    prefix: u64,
    entry: MemTableEntry<'a>,
}

fn key_prefix(key: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    let n = key.len().min(8);
    bytes[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(bytes)
}

/// How many entries ahead of the build [`Prefetching`] fetches keys and values.
const PREFETCH_DISTANCE: usize = 8;

/// Asks the CPU to start loading the cache line at `bytes` (a hint: no effect on results).
#[inline]
fn prefetch(bytes: &[u8]) {
    shale_sst::prefetch_read(bytes.as_ptr());
}

/// The counters `add` keeps, gathered in one pass.
struct Counts {
    entries: u64,
    deletions: u64,
    min_seqno: SeqNo,
    max_seqno: SeqNo,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            entries: 0,
            deletions: 0,
            min_seqno: u64::MAX,
            max_seqno: 0,
        }
    }
}

impl Counts {
    fn note(&mut self, e: &MemTableEntry<'_>) {
        self.entries += 1;
        self.deletions += u64::from(e.kind == ValueKind::Deletion);
        self.min_seqno = self.min_seqno.min(e.seqno);
        self.max_seqno = self.max_seqno.max(e.seqno);
    }
}

/// Sorted entries as `build_segment` takes them, fetching the key and value of the entry
/// [`PREFETCH_DISTANCE`] places ahead of each one handed out.
struct Prefetching<'r, 'a> {
    keys: &'r [SortKey<'a>],
    next: usize,
}

impl<'a> Iterator for Prefetching<'_, 'a> {
    type Item = (&'a [u8], u64, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let entry = self.keys.get(self.next)?.entry;
        if let Some(ahead) = self.keys.get(self.next + PREFETCH_DISTANCE) {
            prefetch(ahead.entry.user_key);
            prefetch(ahead.entry.value);
        }
        self.next += 1;
        Some((entry.user_key, entry.trailer(), entry.value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iterator::InternalIterator;
    use crate::memtable::skiplist::split_internal_key;
    use shale_sst::{BytewiseComparator, InternalKey};
    use std::cmp::Ordering;

    /// Writes with many versions per user key (seqnos shuffled), some deletions and range
    /// deletions, as a WAL replay sees them.
    fn writes(n: u64) -> Vec<(SeqNo, ValueKind, Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        for seqno in 1..=n {
            let mixed = seqno.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let key = format!("key{:05}", mixed % (n / 3 + 1)).into_bytes();
            let (kind, value) = match mixed % 17 {
                0 => (ValueKind::Deletion, Vec::new()),
                1 => (
                    ValueKind::RangeDeletion,
                    format!("key{:05}", mixed % (n / 3 + 1) + 3).into_bytes(),
                ),
                _ => (ValueKind::Value, format!("value{seqno}").into_bytes()),
            };
            out.push((seqno, kind, key, value));
        }
        out
    }

    fn entries(writes: &[(SeqNo, ValueKind, Vec<u8>, Vec<u8>)]) -> Vec<MemTableEntry<'_>> {
        writes
            .iter()
            .map(|(seqno, kind, key, value)| MemTableEntry {
                seqno: *seqno,
                kind: *kind,
                user_key: key,
                value,
            })
            .collect()
    }

    fn by_add(writes: &[(SeqNo, ValueKind, Vec<u8>, Vec<u8>)]) -> Arc<MemTable> {
        by_add_with(Arc::new(BytewiseComparator), writes)
    }

    fn by_add_with(
        comparator: Arc<dyn Comparator>,
        writes: &[(SeqNo, ValueKind, Vec<u8>, Vec<u8>)],
    ) -> Arc<MemTable> {
        let table = MemTable::new(comparator, 1);
        for (seqno, kind, key, value) in writes.iter().rev() {
            table.add(*seqno, *kind, key, value);
        }
        Arc::new(table)
    }

    fn contents(table: &Arc<MemTable>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut it = table.iter();
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        out
    }

    fn assert_same(bulk: &Arc<MemTable>, added: &Arc<MemTable>) {
        let forward = contents(bulk);
        assert_eq!(forward, contents(added));
        assert!(!forward.is_empty());
        // Backwards, through `prev`, which searches the upper levels.
        let mut it = bulk.iter();
        it.seek_to_last();
        let mut backward = Vec::new();
        while it.valid() {
            backward.push((it.key().to_vec(), it.value().to_vec()));
            it.prev();
        }
        backward.reverse();
        assert_eq!(backward, forward);
        assert_eq!(bulk.range_tombstones(), added.range_tombstones());
        assert_eq!(bulk.num_entries(), added.num_entries());
        assert_eq!(bulk.num_deletions(), added.num_deletions());
        assert_eq!(bulk.first_seqno(), added.first_seqno());
        assert_eq!(bulk.largest_seqno(), added.largest_seqno());
    }

    #[test]
    fn bulk_built_equals_inserted_and_answers_seeks_and_gets() {
        let writes = writes(3000);
        let unsorted = entries(&writes);
        // With a filter small enough to answer "maybe" and "no" both often.
        let bulk = Arc::new(
            MemTable::from_unsorted(Arc::new(BytewiseComparator), 2, 64 << 20, 512, &unsorted, 1)
                .unwrap(),
        );
        let sorted_entries = contents(&bulk);
        let sorted = MemTable::from_sorted(
            Arc::new(BytewiseComparator),
            2,
            64 << 20,
            512,
            entries(&writes)
                .into_iter()
                .filter(|e| e.kind == ValueKind::RangeDeletion)
                .chain(sorted_entries.iter().map(|(key, value)| {
                    let (user_key, trailer) = split_internal_key(key);
                    MemTableEntry {
                        seqno: trailer >> 8,
                        kind: ValueKind::from_tag(trailer as u8).unwrap(),
                        user_key,
                        value,
                    }
                })),
        )
        .unwrap();
        let added = by_add(&writes);
        assert_same(&bulk, &added);
        // Every user key at several snapshots: the newest visible version, as `add` gives.
        for probe in 0..1100u64 {
            let key = format!("key{probe:05}").into_bytes();
            for snapshot in [0, 1, 500, 1499, 1500, 2999, MAX_SEQNO] {
                assert_eq!(bulk.get(&key, snapshot), added.get(&key, snapshot));
                assert_eq!(sorted.get(&key, snapshot), added.get(&key, snapshot));
            }
            // Seek and seek_for_prev land on the same entries.
            let target = InternalKey::new(&key, 1700, ValueKind::Value);
            let (mut a, mut b) = (bulk.iter(), added.iter());
            a.seek(target.encoded());
            b.seek(target.encoded());
            assert_eq!((a.valid(), a.key()), (b.valid(), b.key()));
            a.seek_for_prev(target.encoded());
            b.seek_for_prev(target.encoded());
            assert_eq!((a.valid(), a.key()), (b.valid(), b.key()));
        }
    }

    #[test]
    fn duplicates_of_a_user_key_come_newest_first() {
        let writes = vec![
            (5, ValueKind::Value, b"k".to_vec(), b"five".to_vec()),
            (9, ValueKind::Deletion, b"k".to_vec(), Vec::new()),
            (2, ValueKind::Value, b"k".to_vec(), b"two".to_vec()),
            (7, ValueKind::Value, b"j".to_vec(), b"seven".to_vec()),
            (8, ValueKind::RangeDeletion, b"a".to_vec(), b"z".to_vec()),
        ];
        let unsorted = entries(&writes);
        let bulk = Arc::new(
            MemTable::from_unsorted(Arc::new(BytewiseComparator), 3, 1 << 20, 0, &unsorted, 2)
                .unwrap(),
        );
        let keys: Vec<Vec<u8>> = contents(&bulk).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            keys,
            [
                InternalKey::new(b"j", 7, ValueKind::Value),
                InternalKey::new(b"k", 9, ValueKind::Deletion),
                InternalKey::new(b"k", 5, ValueKind::Value),
                InternalKey::new(b"k", 2, ValueKind::Value),
            ]
            .map(|k| k.encoded().to_vec())
        );
        assert_eq!(
            bulk.get(b"k", 8),
            Some((ValueKind::Value, 5, b"five".to_vec()))
        );
        assert_eq!(
            bulk.get(b"k", 4),
            Some((ValueKind::Value, 2, b"two".to_vec()))
        );
        assert_eq!(
            bulk.get(b"k", 9),
            Some((ValueKind::Deletion, 9, Vec::new()))
        );
        let tombstones = bulk.range_tombstones();
        assert_eq!(tombstones.len(), 1);
        assert_eq!(
            (&tombstones[0].start[..], tombstones[0].seqno),
            (&b"a"[..], 8)
        );
        assert_eq!((bulk.num_entries(), bulk.num_deletions()), (5, 1));
        assert_eq!(
            (bulk.first_seqno(), bulk.largest_seqno()),
            (Some(2), Some(9))
        );
    }

    #[test]
    fn parallel_sort_merges_its_runs() {
        // Enough entries that two threads each sort a run.
        let writes = writes(40_000);
        let unsorted = entries(&writes);
        let bulk = Arc::new(
            MemTable::from_unsorted(Arc::new(BytewiseComparator), 4, 64 << 20, 0, &unsorted, 2)
                .unwrap(),
        );
        assert_same(&bulk, &by_add(&writes));
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
    fn other_comparators_sort_by_their_own_order() {
        let writes = writes(40_000);
        let comparator: Arc<dyn Comparator> = Arc::new(ReverseComparator);
        let unsorted = entries(&writes);
        let bulk = Arc::new(
            MemTable::from_unsorted(comparator.clone(), 4, 64 << 20, 0, &unsorted, 2).unwrap(),
        );
        let added = by_add_with(comparator, &writes);
        assert_same(&bulk, &added);
        let first = contents(&bulk)[0].0.clone();
        assert!(first.starts_with(b"key13333"), "{first:?}");
    }

    #[test]
    fn short_keys_and_shared_prefixes_sort_bytewise() {
        // Keys the 8-byte prefix cannot tell apart, or orders only through its zero padding.
        let keys: [&[u8]; 10] = [
            b"",
            b"\0",
            b"a",
            b"a\0",
            b"a\0\0\0\0\0\0\0\x01",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefghij",
            b"abcdefgi",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        ];
        let mut writes = Vec::new();
        for (round, seqno_base) in [(0u64, 100u64), (1, 0)] {
            for (i, key) in keys.iter().enumerate().rev() {
                let seqno = seqno_base + i as u64 * 2 + round;
                writes.push((seqno + 1, ValueKind::Value, key.to_vec(), vec![b'v'; i]));
            }
        }
        let unsorted = entries(&writes);
        let bulk = Arc::new(
            MemTable::from_unsorted(Arc::new(BytewiseComparator), 5, 1 << 20, 0, &unsorted, 1)
                .unwrap(),
        );
        assert_same(&bulk, &by_add(&writes));
    }

    #[test]
    fn unsorted_or_duplicate_input_is_refused() {
        let entry = |seqno, key: &'static [u8]| MemTableEntry {
            seqno,
            kind: ValueKind::Value,
            user_key: key,
            value: b"",
        };
        let comparator: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
        let out_of_order = [entry(1, b"b"), entry(2, b"a")];
        let err =
            MemTable::from_sorted(comparator.clone(), 5, 1 << 20, 0, out_of_order).unwrap_err();
        assert!(err.to_string().contains("point entry 1"), "{err}");
        // Same user key, seqno ascending: the older one must come second.
        let seqno_ascending = [entry(1, b"a"), entry(2, b"a")];
        assert!(MemTable::from_sorted(comparator.clone(), 5, 1 << 20, 0, seqno_ascending).is_err());
        let duplicate = [entry(3, b"a"), entry(3, b"a")];
        assert!(MemTable::from_sorted(comparator.clone(), 5, 1 << 20, 0, duplicate).is_err());
        // The parallel build checks the same across its key ranges.
        let many: Vec<_> = (0..40_000u64)
            .map(|i| entry(1 + (i % 20_000), if i % 2 == 0 { b"x" } else { b"y" }))
            .collect();
        let err =
            MemTable::from_unsorted(comparator.clone(), 5, 64 << 20, 0, &many, 2).unwrap_err();
        assert!(err.to_string().contains("duplicate"), "{err}");
        let too_big = [entry(MAX_SEQNO + 1, b"a")];
        assert!(MemTable::from_sorted(comparator.clone(), 5, 1 << 20, 0, too_big).is_err());
        let sorted = [entry(3, b"a"), entry(1, b"a"), entry(2, b"b")];
        let table = MemTable::from_sorted(comparator, 5, 1 << 20, 0, sorted).unwrap();
        assert_eq!(table.num_entries(), 3);
    }

    #[test]
    fn empty_input_is_an_empty_memtable() {
        let table = Arc::new(
            MemTable::from_sorted(Arc::new(BytewiseComparator), 6, 1 << 20, 0, []).unwrap(),
        );
        assert!(table.is_empty());
        assert!(contents(&table).is_empty());
        assert_eq!(table.first_seqno(), None);
    }
}
