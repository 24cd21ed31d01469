//! The memtable: the newest writes, in memory, sorted by internal key, until a flush turns them
//! into an L0 table.
//!
//! Writers of a commit group call [`MemTable::add`] from many threads at once; readers call
//! [`MemTable::get`] and iterate concurrently, without locks (the lock-free [`skiplist`] over
//! an [`arena`]). The memtable does not decide what is visible: the Db publishes a last visible
//! sequence number after a group's inserts finish, and readers pass it (or an older snapshot)
//! as `snapshot`; entries with larger sequence numbers may already be in the skiplist.
//!
//! At open, WAL replay builds memtables in one pass from sorted writes instead
//! ([`MemTable::from_sorted`], [`MemTable::from_unsorted`], in [`bulk`]); such a memtable is
//! then frozen and never added to.
//!
//! A memtable may carry a bloom filter over its user keys ([`bloom`], sized by the keyspace's
//! `memtable_bloom_size_ratio`): [`MemTable::get`] of a key it never held then skips the
//! skiplist search. Its bytes count in the memtable's memory usage.
//!
//! Range deletions are kept apart, in a list read with [`MemTable::range_tombstones`], and not
//! in the skiplist: iterators yield point entries only, as table iterators do, and the Db
//! applies tombstones from every source the same way.
//!
//! Invariants:
//! 1. Sequence numbers given to `add` are unique within a memtable (so internal keys are unique,
//!    skiplist invariant 4) and at most [`MAX_SEQNO`].
//! 2. Entries are never removed or changed: a reader that saw an entry sees it for as long as
//!    it holds the memtable.
//! 3. Counters are sharded by thread and read by summing; while writers run they are
//!    approximate, once writers are done (and their completion is synchronized with the reader,
//!    e.g. by the Db's Release store of the visible sequence) they are exact.

mod arena;
mod bloom;
mod bulk;
mod huge_pages;
mod skiplist;

pub use self::bulk::MemTableEntry;

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as MemoryOrder};
use std::sync::{Arc, Mutex};

use shale_sst::{Comparator, RangeTombstone, SeqNo, ValueKind, MAX_SEQNO};

use crate::error::Result;
use crate::iterator::InternalIterator;

use self::arena::{shard_count, thread_index, Arena, DEFAULT_CHUNK_SIZE};
use self::bloom::{key_hash, MemTableBloom};
use self::huge_pages::HUGE_PAGE_SIZE;
use self::skiplist::{split_internal_key, Position, SkipList};

/// An in-memory sorted buffer of writes. See the module docs.
pub struct MemTable {
    id: u64,
    list: SkipList,
    /// Over the user keys of point entries; `None` when the keyspace asks for none.
    bloom: Option<MemTableBloom>,
    range_tombstones: Mutex<Vec<RangeTombstone>>,
    /// Heap bytes held by `range_tombstones`, for the memory estimate.
    range_tombstone_bytes: AtomicUsize,
    stats: Box<[StatsShard]>,
    /// Point lookups that reached the list (the filter's tests count them). Only under
    /// `cfg(test)` or feature `testing`: no counter on the read path of a normal build.
    #[cfg(any(test, feature = "testing"))]
    list_lookups: AtomicUsize,
}

/// Per-thread-shard counters (invariant 3), each on its own cache lines.
#[repr(align(128))]
struct StatsShard {
    entries: AtomicU64,
    deletions: AtomicU64,
    min_seqno: AtomicU64,
    max_seqno: AtomicU64,
}

impl MemTable {
    /// An empty memtable ordering user keys by `comparator`; `id` is the Db's name for it.
    #[cfg(any(test, feature = "testing"))]
    pub fn new(comparator: Arc<dyn Comparator>, id: u64) -> Self {
        Self::with_arena(comparator, id, Arena::new(DEFAULT_CHUNK_SIZE), 0)
    }

    /// An empty memtable for a keyspace that freezes memtables at `write_buffer_size` bytes.
    /// [`Self::approximate_memory_usage`] does not count the free room of the chunks writer
    /// threads are filling, so a memtable may hold up to one chunk per arena shard beyond it;
    /// chunks are sized to keep that a small part of the buffer (at most 1/8 with every shard
    /// writing, 256 KiB a shard for small buffers). A buffer that allows a chunk of a whole
    /// huge page per shard (2 MiB, so 32 MiB and up with two shards, 64 MiB with four) gets
    /// huge-page chunks instead (`huge_pages.rs`: fewer TLB misses per node visited).
    /// With `bloom_bytes > 0` it carries a bloom filter of about that size over its user keys.
    pub(crate) fn for_write_buffer(
        comparator: Arc<dyn Comparator>,
        id: u64,
        write_buffer_size: usize,
        bloom_bytes: usize,
    ) -> Self {
        let per_shard = write_buffer_size / (8 * shard_count());
        let arena = if per_shard >= HUGE_PAGE_SIZE {
            Arena::with_huge_pages()
        } else {
            Arena::new(per_shard.min(DEFAULT_CHUNK_SIZE))
        };
        Self::with_arena(comparator, id, arena, bloom_bytes)
    }

    fn with_arena(
        comparator: Arc<dyn Comparator>,
        id: u64,
        arena: Arena,
        bloom_bytes: usize,
    ) -> Self {
        MemTable {
            id,
            list: SkipList::new(comparator, arena),
            bloom: (bloom_bytes > 0).then(|| MemTableBloom::with_bytes(bloom_bytes)),
            range_tombstones: Mutex::new(Vec::new()),
            range_tombstone_bytes: AtomicUsize::new(0),
            #[cfg(any(test, feature = "testing"))]
            list_lookups: AtomicUsize::new(0),
            stats: (0..shard_count())
                .map(|_| StatsShard {
                    entries: AtomicU64::new(0),
                    deletions: AtomicU64::new(0),
                    min_seqno: AtomicU64::new(u64::MAX),
                    max_seqno: AtomicU64::new(0),
                })
                .collect(),
        }
    }

    /// The Db's identifier for this memtable.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Adds one write; safe to call from many threads at once.
    ///
    /// For [`ValueKind::RangeDeletion`], `user_key` is the inclusive start and `value` the
    /// exclusive end of the deleted range.
    ///
    /// Precondition: `seqno <= MAX_SEQNO` and no other `add` to this memtable used `seqno`
    /// (invariant 1; checked only in debug builds). Panics if the key or value exceeds 4 GiB.
    pub fn add(&self, seqno: SeqNo, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        debug_assert!(seqno <= MAX_SEQNO, "seqno {seqno} exceeds 56 bits");
        match kind {
            ValueKind::RangeDeletion => self.add_range_tombstone(seqno, user_key, value),
            // Blob references are written by flushes into tables, never into memtables; one
            // would be stored like any point entry.
            ValueKind::Value | ValueKind::Deletion | ValueKind::BlobIndex => {
                // Before the insert publishes the entry (bloom invariant 2).
                if let Some(bloom) = &self.bloom {
                    bloom.add_hash(key_hash(user_key));
                }
                self.list
                    .insert(user_key, (seqno << 8) | u64::from(kind.tag()), value);
            }
        }
        let shard = &self.stats[thread_index() & (self.stats.len() - 1)];
        shard.min_seqno.fetch_min(seqno, MemoryOrder::Relaxed);
        shard.max_seqno.fetch_max(seqno, MemoryOrder::Relaxed);
        shard.entries.fetch_add(1, MemoryOrder::Relaxed);
        if kind == ValueKind::Deletion {
            shard.deletions.fetch_add(1, MemoryOrder::Relaxed);
        }
    }

    fn add_range_tombstone(&self, seqno: SeqNo, start: &[u8], end: &[u8]) {
        self.range_tombstone_bytes.fetch_add(
            std::mem::size_of::<RangeTombstone>() + start.len() + end.len(),
            MemoryOrder::Relaxed,
        );
        self.range_tombstones
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(RangeTombstone {
                start: start.to_vec(),
                end: end.to_vec(),
                seqno,
            });
    }

    /// The newest point entry (a value or a deletion) of `user_key` with a sequence number
    /// `<= snapshot`, as (kind, seqno, value). Range tombstones are not applied here: the Db
    /// combines them with [`MemTable::range_tombstones`].
    pub fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<(ValueKind, SeqNo, Vec<u8>)> {
        // An empty list (one load) needs no hash; an entry a reader may see is linked
        // (skiplist invariant 2), so a null first link means there is none.
        self.list.first()?;
        if let Some(bloom) = &self.bloom {
            if !bloom.may_contain_hash(key_hash(user_key)) {
                return None;
            }
        }
        #[cfg(any(test, feature = "testing"))]
        self.list_lookups.fetch_add(1, MemoryOrder::Relaxed);
        // The largest trailer of `snapshot`: every kind at that seqno is included.
        let target = (snapshot.min(MAX_SEQNO) << 8) | u64::from(ValueKind::MAX.tag());
        let position = self.list.seek(user_key, target)?;
        let (found_user_key, trailer) = split_internal_key(self.list.key(position));
        if self
            .list
            .comparator()
            .compare_user(found_user_key, user_key)
            != Ordering::Equal
        {
            return None;
        }
        let kind = ValueKind::from_tag(trailer as u8).ok()?;
        Some((kind, trailer >> 8, self.list.value(position).to_vec()))
    }

    /// Point lookups ([`Self::get`]) that searched the list: the ones the bloom filter did not
    /// rule out (feature `testing`).
    #[cfg(any(test, feature = "testing"))]
    pub fn list_lookups(&self) -> usize {
        self.list_lookups.load(MemoryOrder::Relaxed)
    }

    /// The largest sequence number `<= snapshot` of a range deletion covering `user_key`, or 0;
    /// what a point lookup needs, without copying the list.
    pub fn covering_tombstone_seqno(&self, user_key: &[u8], snapshot: SeqNo) -> SeqNo {
        // Nothing to lock for the common memtable without range deletions. A deletion visible
        // at `snapshot` was counted before its seqno was published (Release/Acquire on the
        // Db's visible sequence), so this load sees it.
        if self.range_tombstone_bytes.load(MemoryOrder::Relaxed) == 0 {
            return 0;
        }
        let comparator = self.list.comparator();
        self.range_tombstones
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|t| {
                t.seqno <= snapshot
                    && comparator.compare_user(&t.start, user_key).is_le()
                    && comparator.compare_user(user_key, &t.end).is_lt()
            })
            .map(|t| t.seqno)
            .max()
            .unwrap_or(0)
    }

    /// The range deletions added so far, sorted by start key (user comparator), newest first
    /// for equal starts.
    pub fn range_tombstones(&self) -> Vec<RangeTombstone> {
        // Every iterator asks: no lock for the common memtable without range deletions (the
        // ordering argument is `covering_tombstone_seqno`'s).
        if self.range_tombstone_bytes.load(MemoryOrder::Relaxed) == 0 {
            return Vec::new();
        }
        let mut tombstones = self
            .range_tombstones
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let comparator = self.list.comparator();
        tombstones.sort_by(|a, b| {
            comparator
                .compare_user(&a.start, &b.start)
                .then_with(|| b.seqno.cmp(&a.seqno))
        });
        tombstones
    }

    /// An iterator over the point entries (not range deletions), keeping the memtable alive.
    pub fn iter(self: &Arc<Self>) -> MemTableIter {
        MemTableIter {
            table: Arc::clone(self),
            position: None,
        }
    }

    /// Bytes of memory used: the skiplist's nodes with their alignment padding, chunk headers
    /// and chunk tails lost when a chunk filled up, plus the range tombstones and the bloom
    /// filter; not the free room of chunks still being filled (at most one chunk per arena
    /// shard, see [`Self::for_write_buffer`]). Cheap: a load per shard and two more.
    pub fn approximate_memory_usage(&self) -> usize {
        self.list.memory_usage() + self.bloom_and_tombstone_bytes()
    }

    /// Bytes of the bloom filter and the range tombstones.
    fn bloom_and_tombstone_bytes(&self) -> usize {
        self.bloom_filter_bytes() + self.range_tombstone_bytes.load(MemoryOrder::Relaxed)
    }

    /// Bytes of the bloom filter over user keys (0 without one).
    pub fn bloom_filter_bytes(&self) -> usize {
        self.bloom.as_ref().map_or(0, MemTableBloom::size_bytes)
    }

    /// Whether [`Self::approximate_memory_usage`] is at least `limit`: the flush trigger's
    /// question, answered with two loads while the arena's chunks are below `limit`.
    pub fn memory_usage_reaches(&self, limit: usize) -> bool {
        self.list
            .memory_usage_reaches(limit, self.bloom_and_tombstone_bytes())
    }

    /// Entries added, range deletions included.
    pub fn num_entries(&self) -> u64 {
        self.stats
            .iter()
            .map(|s| s.entries.load(MemoryOrder::Relaxed))
            .sum()
    }

    /// Point deletions added.
    pub fn num_deletions(&self) -> u64 {
        self.stats
            .iter()
            .map(|s| s.deletions.load(MemoryOrder::Relaxed))
            .sum()
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.num_entries() == 0
    }

    /// The smallest sequence number added, `None` when empty.
    #[cfg(any(test, feature = "testing"))]
    pub fn first_seqno(&self) -> Option<SeqNo> {
        self.stats
            .iter()
            .map(|s| s.min_seqno.load(MemoryOrder::Relaxed))
            .min()
            .filter(|&s| s != u64::MAX)
    }

    /// The largest sequence number added, `None` when empty.
    #[cfg(any(test, feature = "testing"))]
    pub fn largest_seqno(&self) -> Option<SeqNo> {
        self.stats
            .iter()
            .filter(|s| s.min_seqno.load(MemoryOrder::Relaxed) != u64::MAX)
            .map(|s| s.max_seqno.load(MemoryOrder::Relaxed))
            .max()
    }
}

impl std::fmt::Debug for MemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTable")
            .field("id", &self.id)
            .field("entries", &self.num_entries())
            .field("memory", &self.approximate_memory_usage())
            .finish_non_exhaustive()
    }
}

/// A cursor over a memtable's point entries in internal-key order (see
/// [`InternalIterator`]). It holds the memtable, so it may outlive the caller's handle; it
/// sees entries added after it was made, so readers filter by their snapshot.
pub struct MemTableIter {
    table: Arc<MemTable>,
    position: Option<Position>,
}

impl std::fmt::Debug for MemTableIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTableIter")
            .field("table", &self.table.id)
            .field("valid", &self.position.is_some())
            .finish_non_exhaustive()
    }
}

impl InternalIterator for MemTableIter {
    fn valid(&self) -> bool {
        self.position.is_some()
    }

    fn seek_to_first(&mut self) {
        self.position = self.table.list.first();
    }

    fn seek_to_last(&mut self) {
        self.position = self.table.list.last();
    }

    fn seek(&mut self, target: &[u8]) {
        let (user_key, trailer) = split_internal_key(target);
        self.position = self.table.list.seek(user_key, trailer);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        let (user_key, trailer) = split_internal_key(target);
        self.position = self.table.list.seek_for_prev(user_key, trailer);
    }

    fn next(&mut self) {
        self.position = self.position.and_then(|p| self.table.list.next(p));
    }

    fn prev(&mut self) {
        self.position = self.position.and_then(|p| self.table.list.prev(p));
    }

    fn key(&self) -> &[u8] {
        self.position.map_or(&[], |p| self.table.list.key(p))
    }

    fn value(&self) -> &[u8] {
        self.position.map_or(&[], |p| self.table.list.value(p))
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale_sst::{BytewiseComparator, InternalKey};

    fn table() -> Arc<MemTable> {
        Arc::new(MemTable::with_arena(
            Arc::new(BytewiseComparator),
            7,
            Arena::new(4096),
            0,
        ))
    }

    fn filtered(bloom_bytes: usize) -> Arc<MemTable> {
        Arc::new(MemTable::for_write_buffer(
            Arc::new(BytewiseComparator),
            8,
            1 << 20,
            bloom_bytes,
        ))
    }

    fn numbered(i: u64) -> Vec<u8> {
        format!("user{i:012}").into_bytes()
    }

    /// The filter's claim: a lookup of a key the filter rules out never searches the list.
    #[test]
    fn a_key_the_filter_rules_out_never_searches_the_list() {
        let (with, without) = (filtered(4096), filtered(0));
        for i in 0..200u64 {
            for m in [&with, &without] {
                m.add(i + 1, ValueKind::Value, &numbered(i * 2), b"v");
            }
        }
        let bloom = with.bloom.as_ref().expect("a filter");
        let mut ruled_out = 0;
        for i in 0..2000u64 {
            let key = numbered(i * 2 + 1); // never added
            let before = with.list_lookups.load(MemoryOrder::Relaxed);
            assert_eq!(with.get(&key, MAX_SEQNO), None);
            let searched = with.list_lookups.load(MemoryOrder::Relaxed) - before;
            if bloom.may_contain_hash(key_hash(&key)) {
                assert_eq!(searched, 1, "key {i}: the filter let it through");
            } else {
                assert_eq!(searched, 0, "key {i}: ruled out, yet the list was searched");
                ruled_out += 1;
            }
        }
        // A 4 KiB filter over 200 keys rules out nearly every absent key; without a filter,
        // every lookup searches.
        assert!(
            ruled_out > 1900,
            "only {ruled_out} of 2000 absent keys ruled out"
        );
        for i in 0..100u64 {
            assert_eq!(without.get(&numbered(i * 2 + 1), MAX_SEQNO), None);
        }
        assert_eq!(without.list_lookups.load(MemoryOrder::Relaxed), 100);
        // Present keys always reach the list.
        let before = with.list_lookups.load(MemoryOrder::Relaxed);
        for i in 0..200u64 {
            assert!(with.get(&numbered(i * 2), MAX_SEQNO).is_some());
        }
        assert_eq!(with.list_lookups.load(MemoryOrder::Relaxed) - before, 200);
    }

    #[test]
    fn the_filter_answers_like_the_list_and_counts_in_memory() {
        let (with, without) = (filtered(2048), filtered(0));
        assert_eq!(with.bloom_filter_bytes(), 2048);
        assert_eq!(without.bloom_filter_bytes(), 0);
        assert_eq!(
            with.approximate_memory_usage(),
            without.approximate_memory_usage() + 2048
        );
        for i in 0..1000u64 {
            let kind = if i % 7 == 0 {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            for m in [&with, &without] {
                m.add(i + 1, kind, &numbered(i * 2), &i.to_le_bytes());
            }
        }
        for i in 0..2000u64 {
            let key = numbered(i);
            assert_eq!(
                with.get(&key, MAX_SEQNO),
                without.get(&key, MAX_SEQNO),
                "key {i}"
            );
            assert_eq!(
                with.get(&key, 500),
                without.get(&key, 500),
                "key {i} at 500"
            );
        }
        // Iterators and range deletions do not go through the filter; a range deletion
        // counts in the memory used. (Not compared with `without`: the two lists' towers
        // differ, being drawn alternately from one per-thread generator.)
        let before = with.approximate_memory_usage();
        with.add(5000, ValueKind::RangeDeletion, b"user", b"user~");
        assert_eq!(with.covering_tombstone_seqno(&numbered(1), MAX_SEQNO), 5000);
        assert!(with.approximate_memory_usage() > before);
        assert!(with.memory_usage_reaches(before + 1));
    }

    /// Bloom invariant 2: a reader that sees an entry's sequence number published finds the
    /// entry, however the writer's filter adds and list inserts interleave with its probes.
    #[test]
    fn a_concurrent_writer_never_hides_a_published_key() {
        use std::sync::atomic::AtomicU64;
        // Small enough that most lines fill up and probes race with adds to the same words.
        let m = filtered(256);
        let published = AtomicU64::new(0);
        let total = 20_000u64;
        std::thread::scope(|s| {
            s.spawn(|| {
                for seqno in 1..=total {
                    m.add(seqno, ValueKind::Value, &numbered(seqno), b"v");
                    published.store(seqno, MemoryOrder::Release);
                }
            });
            for reader in 0..2u64 {
                let (m, published) = (&m, &published);
                s.spawn(move || {
                    let mut checked = 0u64;
                    let mut probe = reader;
                    loop {
                        let seen = published.load(MemoryOrder::Acquire);
                        if seen > 0 {
                            // The newest key and an older one, each just published or long ago.
                            probe = probe
                                .wrapping_mul(6_364_136_223_846_793_005)
                                .wrapping_add(1);
                            for seqno in [seen, 1 + (probe >> 33) % seen] {
                                let found = m.get(&numbered(seqno), seen);
                                assert_eq!(found.map(|(_, s, _)| s), Some(seqno));
                                checked += 1;
                            }
                        }
                        if seen == total {
                            break;
                        }
                    }
                    assert!(checked > 0);
                });
            }
        });
    }

    #[test]
    fn shared_across_threads() {
        fn shared<T: Send + Sync>() {}
        fn sent<T: Send>() {}
        shared::<MemTable>();
        sent::<MemTableIter>();
    }

    #[test]
    fn get_returns_newest_visible_point_entry() {
        let m = table();
        m.add(1, ValueKind::Value, b"k", b"one");
        m.add(4, ValueKind::Deletion, b"k", b"");
        m.add(6, ValueKind::Value, b"k", b"six");
        m.add(7, ValueKind::RangeDeletion, b"a", b"z");
        m.add(2, ValueKind::Value, b"kk", b"other");
        assert_eq!(m.get(b"k", 0), None);
        assert_eq!(m.get(b"k", 1), Some((ValueKind::Value, 1, b"one".to_vec())));
        assert_eq!(m.get(b"k", 3), Some((ValueKind::Value, 1, b"one".to_vec())));
        assert_eq!(m.get(b"k", 4), Some((ValueKind::Deletion, 4, Vec::new())));
        assert_eq!(m.get(b"k", 5), Some((ValueKind::Deletion, 4, Vec::new())));
        // The range deletion at 7 is not applied by `get`.
        assert_eq!(
            m.get(b"k", MAX_SEQNO),
            Some((ValueKind::Value, 6, b"six".to_vec()))
        );
        assert_eq!(
            m.get(b"k", u64::MAX),
            Some((ValueKind::Value, 6, b"six".to_vec()))
        );
        assert_eq!(m.get(b"j", MAX_SEQNO), None);
        assert_eq!(m.get(b"kkk", MAX_SEQNO), None);
        assert_eq!(m.get(b"kk", 1), None);
    }

    #[test]
    fn range_deletions_are_listed_not_iterated() {
        let m = table();
        m.add(5, ValueKind::RangeDeletion, b"m", b"p");
        m.add(3, ValueKind::Value, b"n", b"v");
        m.add(9, ValueKind::RangeDeletion, b"b", b"c");
        m.add(8, ValueKind::RangeDeletion, b"m", b"q");
        let tombstones = m.range_tombstones();
        let summary: Vec<_> = tombstones
            .iter()
            .map(|t| (t.start.as_slice(), t.end.as_slice(), t.seqno))
            .collect();
        assert_eq!(
            summary,
            [(&b"b"[..], &b"c"[..], 9), (b"m", b"q", 8), (b"m", b"p", 5)]
        );
        let mut it = m.iter();
        it.seek_to_first();
        assert_eq!(
            it.key(),
            InternalKey::new(b"n", 3, ValueKind::Value).encoded()
        );
        it.next();
        assert!(!it.valid());
        assert!(it.status().is_ok());
        assert_eq!(m.num_entries(), 4);
        assert_eq!(m.num_deletions(), 0);
        assert_eq!((m.first_seqno(), m.largest_seqno()), (Some(3), Some(9)));
    }

    #[test]
    fn counters_and_memory() {
        let m = table();
        assert!(m.is_empty());
        assert_eq!((m.first_seqno(), m.largest_seqno()), (None, None));
        // The head node: 24 links, two one-byte lengths, an 8-byte trailer; its own chunk
        // (16-byte header), no shard chunk opened.
        let head = 16 + (24 * 8 + 2 + 8usize).next_multiple_of(8);
        assert_eq!(m.approximate_memory_usage(), head);
        assert_eq!(m.list.arena_reserved_bytes(), head);
        m.add(10, ValueKind::Deletion, b"a", b"");
        m.add(11, ValueKind::Value, b"b", &[7; 3000]);
        assert!(!m.is_empty());
        assert_eq!((m.num_entries(), m.num_deletions()), (2, 1));
        assert_eq!((m.first_seqno(), m.largest_seqno()), (Some(10), Some(11)));
        assert!(m.approximate_memory_usage() >= head + 3000);
        assert_eq!(m.id(), 7);
    }

    /// Fills a memtable for a 4 MiB write buffer with 16-byte keys and 100-byte values until
    /// the flush trigger's comparison says full, as `write::make_room` does.
    fn fill_to_budget(write_buffer_size: usize) -> MemTable {
        let m = MemTable::for_write_buffer(Arc::new(BytewiseComparator), 1, write_buffer_size, 0);
        let mut seqno = 0u64;
        while !m.memory_usage_reaches(write_buffer_size) {
            assert!(m.approximate_memory_usage() < write_buffer_size);
            seqno += 1;
            // Random-looking keys, so towers and splices are those of a random workload.
            let key = (seqno.wrapping_mul(0x9E37_79B9_7F4A_7C15) as u128).to_be_bytes();
            m.add(seqno, ValueKind::Value, &key, &[b'v'; 100]);
        }
        m
    }

    #[test]
    fn accounting_never_under_counts_what_the_nodes_use() {
        let memtable = fill_to_budget(4 << 20);
        // Every node: 8 bytes of link 0, 2 length bytes, 24 of internal key, 100 of value,
        // rounded up to 8 (136), plus 8 bytes a link above the first.
        let links: usize = (1..skiplist::MAX_HEIGHT)
            .map(|level| memtable.list.level_len(level))
            .sum();
        let entries = memtable.num_entries() as usize;
        assert_eq!(memtable.list.level_len(0), entries);
        let nodes = entries * 136 + links * 8;
        let usage = memtable.approximate_memory_usage();
        assert!(usage >= nodes, "{usage} < {nodes} bytes of nodes");
        // And no more than the nodes plus the head and a header and a lost tail (under one
        // node) per chunk.
        let chunks = memtable.list.arena_reserved_bytes() / memtable.list.arena_chunk_size() + 1;
        assert!(
            usage <= nodes + 16 + 8 * 24 + 16 + chunks * (16 + 400),
            "{usage} for {nodes}"
        );
    }

    #[test]
    fn freezes_near_the_budget_and_holds_little_beyond_it() {
        let budget = 4 << 20;
        let m = fill_to_budget(budget);
        let reserved = m.list.arena_reserved_bytes();
        let chunk = m.list.arena_chunk_size();
        // The trigger fired within one entry of the budget...
        assert!(m.approximate_memory_usage() >= budget);
        assert!(m.approximate_memory_usage() < budget + 400);
        // ...the arena holds at most a chunk per shard more than that...
        assert!(
            reserved <= budget + 400 + shard_count() * chunk,
            "{reserved}"
        );
        assert!(chunk <= budget / 8, "{chunk}");
        // ...and the entries fill it: 144 bytes a node on average (a 16-byte key, 100-byte
        // value, two links; 1% for tower-height luck and chunk tails).
        let entries = m.num_entries() as f64;
        let expected = budget as f64 / 144.0;
        assert!(
            entries > expected * 0.99,
            "{entries} entries, expected {expected}"
        );
    }

    #[test]
    fn large_buffers_get_huge_page_chunks_and_still_freeze_near_the_budget() {
        let smallest = 8 * shard_count() * HUGE_PAGE_SIZE;
        let below = MemTable::for_write_buffer(Arc::new(BytewiseComparator), 1, smallest - 1, 0);
        assert!(!below.list.arena_uses_huge_pages());
        if shard_count() > 4 {
            // Filling a buffer of 128 MiB and more is too slow for a unit test; the choice is
            // checked above and the chunks themselves in arena.rs.
            return;
        }
        let m = Arc::new(fill_to_budget(smallest));
        assert!(m.list.arena_uses_huge_pages());
        assert_eq!(m.list.arena_chunk_size(), HUGE_PAGE_SIZE);
        assert!(m.approximate_memory_usage() < smallest + 400);
        assert!(
            m.list.arena_reserved_bytes() <= smallest + 400 + shard_count() * HUGE_PAGE_SIZE,
            "{}",
            m.list.arena_reserved_bytes()
        );
        // Every entry is there, in order.
        let mut it = m.iter();
        it.seek_to_first();
        let mut count = 0u64;
        let mut last: Option<Vec<u8>> = None;
        while it.valid() {
            if let Some(last) = &last {
                assert!(last.as_slice() < it.key(), "out of order");
            }
            last = Some(it.key().to_vec());
            count += 1;
            it.next();
        }
        assert_eq!(count, m.num_entries());
    }

    #[test]
    fn iterator_outlives_the_callers_handle() {
        let m = table();
        m.add(1, ValueKind::Value, b"a", b"x");
        let mut it = m.iter();
        drop(m);
        it.seek_to_last();
        assert_eq!(it.value(), b"x");
        it.prev();
        assert!(!it.valid());
        assert_eq!(it.key(), b"");
    }
}
