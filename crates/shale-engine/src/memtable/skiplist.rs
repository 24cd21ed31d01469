//! A concurrent skiplist of encoded internal keys and values, with nodes in an [`Arena`]:
//! inserts from many threads at once, without locks (CAS on each level's link, as `RocksDB`'s
//! `InlineSkipList::InsertConcurrently`); reads without locks, concurrently with inserts.
//! Nothing is ever removed. Recovery builds a list in one pass instead, from entries it has
//! sorted, appending at the tail of each level ([`SkipList::append_sorted`]); the invariants
//! below hold for both ways of building.
//!
//! A node, at an 8-byte aligned address inside the arena:
//!
//! ```text
//!   link[height-1] .. link[1] | link[0] | key_len varint | internal key | value_len varint | value
//!                               ^ node pointer
//! ```
//!
//! Links are `AtomicPtr`s at descending addresses before the node pointer, so a node spends
//! exactly `8 * height` bytes on links and the entry starts at a fixed offset after it. The
//! lengths are LEB128 varints (one byte each below 128, as for the 16-byte keys and 100-byte
//! values of the benchmarks), so a node costs its entry plus 8 bytes a link and 2 bytes of
//! lengths, rounded up to 8: 144 bytes on average for a 16-byte key and a 100-byte value,
//! 8 fewer than with two `u32` lengths. The internal key is the user key followed by the
//! 8-byte trailer `(seqno << 8) | kind`, little endian (docs/format/sst.md, "Internal key"), so
//! iterators hand it out as one slice.
//!
//! A thread that inserts at the end of the list keeps the splice of that insert (an
//! [`InsertHint`], thread-local); its next insert, if it goes right after, starts each level's
//! walk there instead of at the head: sequential keys (`fillseq`, auto-increment ids, time
//! series) skip the descent, as `RocksDB`'s `InlineSkipList` does with its cached splice.
//!
//! A search (`seek`, `seek_for_prev` and `prev`, the insert's splice) compares a chain of
//! nodes, each one's address read from the node before, so in a memtable larger than the CPU
//! caches each comparison waits for a cache miss. While it waits for one node, the search
//! prefetches both nodes it may compare next: that node's successor at the same level (taken
//! if the node sorts before the target; `RocksDB`'s `InlineSkipList` prefetches this one too)
//! and the current node's successor one level down (taken if not), so misses overlap instead
//! of queueing ([`SkipList::prefetch_candidates`]; gets and inserts about 20-25% faster on a
//! memtable of 450K-1M entries, docs/benchmarks.md "Skiplist prefetch").
//!
//! Invariants:
//! 1. Nodes never move and are never freed before the skiplist drops (they live in its arena).
//! 2. A node's key, value and lengths are written before the node is linked at any level, and
//!    never change afterwards; each link is published with a Release CAS and read with Acquire
//!    loads, so a reader that reaches a node sees it fully written.
//! 3. Node `n` is linked at level `i` only after it is linked at every level below `i`, and
//!    `n.link[i]` is set before `n` is linked at level `i`; afterwards only other inserters'
//!    CASes change it. Every level is a sorted list and level `i + 1` is a sublist of level
//!    `i` (for nodes fully inserted).
//! 4. No two nodes hold equal internal keys (the caller's precondition: sequence numbers are
//!    unique; checked with `debug_assert!`).
//! 5. A [`Position`] is used only with the skiplist that made it (checked by id on every use),
//!    so the node it names is alive for as long as that skiplist is borrowed.

use std::cell::UnsafeCell;
use std::cmp::Ordering;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering as MemoryOrder};
use std::sync::Arc;

use shale_sst::{prefetch_read, BytewiseComparator, Comparator};

use super::arena::{thread_index, Arena, ALIGN};

/// The tallest tower: with branching factor 2, enough for tens of millions of entries.
pub(super) const MAX_HEIGHT: usize = 24;

/// Bytes of the internal key's trailer.
const TRAILER_SIZE: usize = 8;

/// The fixed part of a node from its pointer on: link 0 (the varint lengths and the entry
/// follow it).
#[repr(C)]
struct Node {
    link0: AtomicPtr<Node>,
}

const NODE_SIZE: usize = std::mem::size_of::<Node>();
const LINK_SIZE: usize = std::mem::size_of::<AtomicPtr<Node>>();
const _: () = assert!(NODE_SIZE == 8 && LINK_SIZE == 8 && std::mem::align_of::<Node>() <= ALIGN);

/// The most bytes a `u32` takes as a varint.
const MAX_VARINT32_LEN: usize = 5;

/// Orders internal keys given as (user key, trailer); checks once whether the user comparator
/// is the bytewise one so the hot path compares slices without a virtual call.
#[derive(Debug)]
pub(super) struct KeyComparator {
    user: Arc<dyn Comparator>,
    bytewise: bool,
}

impl KeyComparator {
    pub(super) fn new(user: Arc<dyn Comparator>) -> Self {
        // A comparator's name identifies its order (it is stored in every table for that
        // reason), so a comparator calling itself bytewise sorts bytewise.
        let bytewise = user.name() == BytewiseComparator::NAME;
        KeyComparator { user, bytewise }
    }

    /// Whether user keys are compared bytewise (the comparator calls itself bytewise).
    pub(super) fn is_bytewise(&self) -> bool {
        self.bytewise
    }

    /// Compares user keys.
    #[inline]
    pub(super) fn compare_user(&self, a: &[u8], b: &[u8]) -> Ordering {
        if self.bytewise {
            bytewise_compare(a, b)
        } else {
            self.user.compare(a, b)
        }
    }

    /// Internal-key order: user key ascending, then trailer (seqno, kind) descending.
    #[inline]
    pub(super) fn compare(
        &self,
        a_user: &[u8],
        a_trailer: u64,
        b_user: &[u8],
        b_trailer: u64,
    ) -> Ordering {
        self.compare_user(a_user, b_user)
            .then_with(|| b_trailer.cmp(&a_trailer))
    }
}

/// Byte order; decides most comparisons on the first 8 bytes as one integer compare instead of
/// a call to `memcmp` (`examples/memtable_bench.rs`: about 15% faster gets on a memtable that
/// fits in cache; misses dominate on large ones).
#[inline]
fn bytewise_compare(a: &[u8], b: &[u8]) -> Ordering {
    if let (Some(a8), Some(b8)) = (a.first_chunk::<8>(), b.first_chunk::<8>()) {
        let order = u64::from_be_bytes(*a8).cmp(&u64::from_be_bytes(*b8));
        if order != Ordering::Equal {
            return order;
        }
        return a[8..].cmp(&b[8..]);
    }
    a.cmp(b)
}

/// Splits an encoded internal key into user key and trailer. A key too short to carry a
/// trailer is all user key with trailer 0, as `shale_sst::InternalKeyComparator` treats it.
#[inline]
pub(super) fn split_internal_key(key: &[u8]) -> (&[u8], u64) {
    match key.len().checked_sub(TRAILER_SIZE) {
        Some(at) => {
            let (user, trailer) = key.split_at(at);
            let trailer = trailer.try_into().map_or(0, u64::from_le_bytes);
            (user, trailer)
        }
        None => (key, 0),
    }
}

/// Where an iterator stands: a node of one skiplist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Position {
    node: NonNull<Node>,
    list_id: u64,
}

// SAFETY: a `Position` is an address plus the id of the skiplist it belongs to; it is only
// dereferenced through that skiplist (invariant 5), whose nodes are immutable once reachable.
unsafe impl Send for Position {}

/// Nodes of one [`SkipList`] linked among themselves at every level, not yet reachable from
/// its head ([`SkipList::build_segment`]): the first and last node at each level (null above
/// the tallest tower).
#[derive(Debug)]
pub(super) struct Segment {
    first: [*mut Node; MAX_HEIGHT],
    last: [*mut Node; MAX_HEIGHT],
    len: usize,
}

// SAFETY: a segment is addresses of nodes in its skiplist's arena, which nobody else can reach
// or write until `attach_segments` (on the same list) links them; handing the addresses to
// another thread (the one attaching, after joining the builder) moves no access.
unsafe impl Send for Segment {}

/// The skiplist. See the module docs.
pub(super) struct SkipList {
    arena: Arena,
    head: NonNull<Node>,
    /// Height of the tallest tower so far (levels above it are all empty).
    max_height: AtomicUsize,
    comparator: KeyComparator,
    id: u64,
}

// SAFETY: all shared state is in atomics, in the arena (itself Send + Sync), or immutable after
// publication (invariant 2); `head` is a node of the arena.
unsafe impl Send for SkipList {}
// SAFETY: as above: inserts coordinate only through atomic links, reads only load them.
unsafe impl Sync for SkipList {}

impl SkipList {
    /// An empty list whose nodes live in `arena`.
    pub(super) fn new(user: Arc<dyn Comparator>, arena: Arena) -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        // In a chunk of its own: the thread making the list may never insert into it, and its
        // shard's chunk would be held for the head alone.
        let head_size = node_size(MAX_HEIGHT, &[], &[]);
        // SAFETY: the allocation has `node_size` bytes for this node.
        let head =
            unsafe { write_node(arena.allocate_dedicated(head_size), MAX_HEIGHT, &[], 0, &[]) };
        SkipList {
            arena,
            head,
            max_height: AtomicUsize::new(1),
            comparator: KeyComparator::new(user),
            id: NEXT_ID.fetch_add(1, MemoryOrder::Relaxed),
        }
    }

    pub(super) fn comparator(&self) -> &KeyComparator {
        &self.comparator
    }

    /// Bytes used in the arena (see [`Arena::memory_usage`]).
    pub(super) fn memory_usage(&self) -> usize {
        self.arena.memory_usage()
    }

    /// Whether the arena's usage plus `extra` is at least `limit`.
    pub(super) fn memory_usage_reaches(&self, limit: usize, extra: usize) -> bool {
        self.arena.memory_usage_reaches(limit, extra)
    }

    /// Bytes the arena holds from the allocator, free room included.
    #[cfg(test)]
    pub(super) fn arena_reserved_bytes(&self) -> usize {
        self.arena.reserved_bytes()
    }

    /// Whether the arena's chunks are huge-page mappings.
    #[cfg(test)]
    pub(super) fn arena_uses_huge_pages(&self) -> bool {
        self.arena.uses_huge_pages()
    }

    /// The arena's chunk size.
    #[cfg(test)]
    pub(super) fn arena_chunk_size(&self) -> usize {
        self.arena.chunk_size()
    }

    /// The internal keys linked at `level`, in link order.
    #[cfg(test)]
    fn level_keys(&self, level: usize) -> Vec<Vec<u8>> {
        let mut keys = Vec::new();
        // SAFETY: the head has MAX_HEIGHT links; a node reached at `level` has a link there.
        let mut node = unsafe { link(self.head, level).load(MemoryOrder::Acquire) };
        while let Some(n) = NonNull::new(node) {
            // SAFETY: a node reached through the links (invariants 1, 2).
            keys.push(unsafe { node_key(n) }.to_vec());
            // SAFETY: as above.
            node = unsafe { link(n, level).load(MemoryOrder::Acquire) };
        }
        keys
    }

    /// Nodes linked at `level`.
    #[cfg(test)]
    pub(super) fn level_len(&self, level: usize) -> usize {
        let mut count = 0;
        // SAFETY: the head has MAX_HEIGHT links; a node reached at `level` has a link there.
        let mut node = unsafe { link(self.head, level).load(MemoryOrder::Acquire) };
        while let Some(n) = NonNull::new(node) {
            count += 1;
            // SAFETY: as above.
            node = unsafe { link(n, level).load(MemoryOrder::Acquire) };
        }
        count
    }

    /// Inserts `user_key ++ trailer` with `value`; safe to call from many threads at once.
    ///
    /// Precondition: no entry with the same internal key exists or is being inserted
    /// (invariant 4).
    pub(super) fn insert(&self, user_key: &[u8], trailer: u64, value: &[u8]) {
        // One thread-local access for the hint's read and update.
        INSERT_HINT.with(|hint| {
            // SAFETY: the only access to this thread's hint, and not re-entered: nothing
            // below calls `insert` (the cell is neither Sync nor handed out).
            let hint = unsafe { &mut *hint.get() };
            self.insert_with_hint(hint, user_key, trailer, value);
        });
    }

    // Forced: the body is `insert`'s, only moved into the thread-local closure.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn insert_with_hint(&self, hint: &mut InsertHint, user_key: &[u8], trailer: u64, value: &[u8]) {
        let height = random_height();
        let node = allocate_node(&self.arena, height, user_key, trailer, value);
        // Read before writing: the shared line is written only when the list grows taller.
        let mut list_height = self.max_height.load(MemoryOrder::Relaxed);
        if height > list_height {
            list_height = self
                .max_height
                .fetch_max(height, MemoryOrder::Relaxed)
                .max(height);
        }

        // The splice: at each level, the nodes the new one goes between.
        let mut prev = [self.head; MAX_HEIGHT];
        let mut next: [Option<NonNull<Node>>; MAX_HEIGHT] = [None; MAX_HEIGHT];
        // Random inserts find no hint and pay one branch; the search beside it stays inline.
        let hinted = !hint.node.is_null()
            && self.find_splice_from_hint(
                hint,
                user_key,
                trailer,
                list_height,
                &mut prev,
                &mut next,
            );
        if !hinted {
            let mut before = self.head;
            // The successor found one level up sorts after the key; meeting it again one
            // level down ends that level's walk without a comparison (as RocksDB's
            // InlineSkipList).
            let mut known_after = None;
            for level in (0..list_height).rev() {
                (prev[level], next[level]) =
                    self.find_splice_for_level(user_key, trailer, before, level, known_after);
                before = prev[level];
                known_after = next[level];
            }
        }

        for level in 0..height {
            loop {
                let expected = next[level].map_or(std::ptr::null_mut(), NonNull::as_ptr);
                // SAFETY: `node` and `prev[level]` are live nodes of this arena (invariant 1)
                // with towers of at least `level + 1` links (`prev` is the head or was reached
                // at `level`). `node` is not yet reachable at `level`, so the Relaxed store is
                // published by the Release CAS below (invariants 2, 3).
                let linked = unsafe {
                    link(node, level).store(expected, MemoryOrder::Relaxed);
                    link(prev[level], level)
                        .compare_exchange(
                            expected,
                            node.as_ptr(),
                            MemoryOrder::Release,
                            MemoryOrder::Relaxed,
                        )
                        .is_ok()
                };
                if linked {
                    break;
                }
                // Someone linked a node after prev[level]: search again from there, which is
                // still before our key since nodes are never removed.
                (prev[level], next[level]) =
                    self.find_splice_for_level(user_key, trailer, prev[level], level, None);
            }
        }
        // An insert that followed the hint continues its run. Up to HINT_MAX_MISSES others
        // in a row keep the hint: a table's rows arriving in primary-key order each bring
        // entries for random places in its secondary indexes, in the same batch. The next
        // one becomes the hint, a candidate for a new run (so a run can start anywhere in
        // the list, not only at its end); in a random stream that costs one failed check
        // per insert and one `remember` in HINT_MAX_MISSES + 1.
        if hinted || hint.node.is_null() || hint.misses >= HINT_MAX_MISSES {
            hint.remember(self.id, node, height, &prev[..list_height]);
        } else {
            hint.misses += 1;
        }
    }

    /// Builds the list from entries in strictly ascending internal-key order, appending each
    /// node at the tail of every level its tower reaches: O(height) per entry, no search, no
    /// CAS. One [`Self::build_segment`] then [`Self::attach_segments`]; see there.
    ///
    /// Precondition: the list is empty.
    #[cfg(any(test, feature = "testing"))]
    pub(super) fn append_sorted<'a>(
        &mut self,
        entries: impl IntoIterator<Item = (&'a [u8], u64, &'a [u8])>,
    ) -> Result<(), usize> {
        let segment = self.build_segment(entries)?;
        self.attach_segments(vec![segment])
    }

    /// Allocates nodes for entries in strictly ascending internal-key order and links them to
    /// each other at every level, each node at the tail of every level its tower reaches; no
    /// node is reachable from the head yet. Safe to call from several threads at once (the
    /// arena is shared; each call links only its own new nodes), so key ranges can be built
    /// in parallel and then attached in order. Each entry is compared with the one before
    /// it; the first that is not above it stops the build with its index as the error (the
    /// caller discards the list: invariant 4 needs a strict order).
    pub(super) fn build_segment<'a>(
        &self,
        entries: impl IntoIterator<Item = (&'a [u8], u64, &'a [u8])>,
    ) -> Result<Segment, usize> {
        let mut segment = Segment {
            first: [std::ptr::null_mut(); MAX_HEIGHT],
            last: [std::ptr::null_mut(); MAX_HEIGHT],
            len: 0,
        };
        let mut previous: Option<NonNull<Node>> = None;
        for (index, (user_key, trailer, value)) in entries.into_iter().enumerate() {
            if let Some(previous) = previous {
                if self.compare_node(previous, user_key, trailer) != Ordering::Less {
                    return Err(index);
                }
            }
            let height = random_height();
            let node = allocate_node(&self.arena, height, user_key, trailer, value);
            for level in 0..height {
                match NonNull::new(segment.last[level]) {
                    // SAFETY: `tail` is a node of this segment linked at `level` (its tower
                    // has that link), alive in this arena (invariant 1) and reachable by no
                    // one else: only this call writes its links. `node` is fully written
                    // (invariant 2).
                    Some(tail) => unsafe {
                        link(tail, level).store(node.as_ptr(), MemoryOrder::Relaxed);
                    },
                    None => segment.first[level] = node.as_ptr(),
                }
                segment.last[level] = node.as_ptr();
            }
            segment.len += 1;
            previous = Some(node);
        }
        Ok(segment)
    }

    /// Makes `segments` (from [`Self::build_segment`] on this list, in ascending key order)
    /// the list's contents: at each level, the head links to the first segment's first node
    /// there and each segment's last node to the next segment's first. Checks that each
    /// segment's first entry is above the previous one's last; a failure returns the index of
    /// that entry counted over all segments.
    ///
    /// `&mut self` proves no reader or inserter can see the list meanwhile, so plain (Relaxed)
    /// stores suffice; whoever shares the list afterwards (an `Arc` sent to another thread, a
    /// mutex) publishes them, as joining the threads that built the segments published theirs
    /// to this one. Invariant 3 holds because every level of every segment is in key order,
    /// segments are joined in key order, and a node joins levels `0..height` together.
    ///
    /// Precondition: the list is empty.
    pub(super) fn attach_segments(&mut self, segments: Vec<Segment>) -> Result<(), usize> {
        assert!(
            self.first().is_none(),
            "attach_segments needs an empty skiplist"
        );
        let mut tails = [self.head.as_ptr(); MAX_HEIGHT];
        let mut list_height = self.max_height.load(MemoryOrder::Relaxed);
        let mut entries_before = 0;
        for segment in segments {
            let Some(first) = NonNull::new(segment.first[0]) else {
                continue;
            };
            if let Some(tail) = NonNull::new(tails[0]).filter(|t| *t != self.head) {
                // SAFETY: `first` is a live, fully written node of this arena (invariant 1).
                let (user_key, trailer) = unsafe { node_user_key_and_trailer(first) };
                if self.compare_node(tail, user_key, trailer) != Ordering::Less {
                    return Err(entries_before);
                }
            }
            for (level, tail) in tails.iter_mut().enumerate() {
                let (Some(first), Some(previous)) =
                    (NonNull::new(segment.first[level]), NonNull::new(*tail))
                else {
                    break;
                };
                // SAFETY: `previous` is the head or a node linked at `level` by its segment
                // (so its tower has that link), alive in this arena; `&mut self` excludes
                // every other access.
                unsafe { link(previous, level).store(first.as_ptr(), MemoryOrder::Relaxed) };
                *tail = segment.last[level];
                list_height = list_height.max(level + 1);
            }
            entries_before += segment.len;
        }
        self.max_height.store(list_height, MemoryOrder::Relaxed);
        Ok(())
    }

    /// The first entry, if any.
    pub(super) fn first(&self) -> Option<Position> {
        // SAFETY: the head has MAX_HEIGHT links (invariant 1 keeps it alive).
        let node = unsafe { link(self.head, 0).load(MemoryOrder::Acquire) };
        self.position(NonNull::new(node))
    }

    /// The last entry, if any.
    pub(super) fn last(&self) -> Option<Position> {
        let mut x = self.head;
        let mut level = self.max_height.load(MemoryOrder::Relaxed) - 1;
        loop {
            // SAFETY: `x` is the head or was reached at `level`, so its tower is tall enough.
            let next = unsafe { link(x, level).load(MemoryOrder::Acquire) };
            if let Some(next) = NonNull::new(next) {
                x = next;
            } else if level == 0 {
                return self.position((x != self.head).then_some(x));
            } else {
                level -= 1;
            }
        }
    }

    /// The first entry `>= (user_key, trailer)`.
    pub(super) fn seek(&self, user_key: &[u8], trailer: u64) -> Option<Position> {
        let mut x = self.head;
        let mut level = self.max_height.load(MemoryOrder::Relaxed) - 1;
        // The node known to be >= the target at the level above: no need to compare it again.
        let mut last_bigger = None;
        loop {
            // SAFETY: as in `last`.
            let next = NonNull::new(unsafe { link(x, level).load(MemoryOrder::Acquire) });
            // SAFETY: as in `last`.
            unsafe { Self::prefetch_candidates(x, level, next, last_bigger) };
            match next {
                Some(n)
                    if next != last_bigger
                        && self.compare_node(n, user_key, trailer) == Ordering::Less =>
                {
                    x = n;
                }
                _ if level == 0 => return self.position(next),
                _ => {
                    last_bigger = next;
                    level -= 1;
                }
            }
        }
    }

    /// The last entry `<= (user_key, trailer)`.
    pub(super) fn seek_for_prev(&self, user_key: &[u8], trailer: u64) -> Option<Position> {
        self.find_last_before(user_key, trailer, true)
    }

    /// The entry after `p`.
    pub(super) fn next(&self, p: Position) -> Option<Position> {
        let node = self.check(p);
        // SAFETY: `node` is a live node of this list (invariant 5); every node has link 0.
        let next = unsafe { link(node, 0).load(MemoryOrder::Acquire) };
        self.position(NonNull::new(next))
    }

    /// The entry before `p`: a search for the last entry smaller than `p`'s key.
    pub(super) fn prev(&self, p: Position) -> Option<Position> {
        // SAFETY: `check` ensures the node belongs to this list and so is alive (invariant 5).
        let (user_key, trailer) = unsafe { node_user_key_and_trailer(self.check(p)) };
        self.find_last_before(user_key, trailer, false)
    }

    /// The internal key at `p`.
    pub(super) fn key(&self, p: Position) -> &[u8] {
        // SAFETY: the node belongs to this list (checked), so it lives as long as `&self`
        // (invariant 1) and its entry never changes (invariant 2).
        unsafe { node_key(self.check(p)) }
    }

    /// The value at `p`.
    pub(super) fn value(&self, p: Position) -> &[u8] {
        // SAFETY: as in `key`.
        unsafe { node_value(self.check(p)) }
    }

    /// The node at `p`, after checking `p` belongs to this list (invariant 5).
    #[inline]
    fn check(&self, p: Position) -> NonNull<Node> {
        assert_eq!(p.list_id, self.id, "a Position used with another skiplist");
        p.node
    }

    fn position(&self, node: Option<NonNull<Node>>) -> Option<Position> {
        node.map(|node| Position {
            node,
            list_id: self.id,
        })
    }

    /// Compares `node`'s key with the target.
    #[inline]
    fn compare_node(&self, node: NonNull<Node>, user_key: &[u8], trailer: u64) -> Ordering {
        // SAFETY: only called on nodes reached through links of this list (invariants 1, 2).
        let (node_user, node_trailer) = unsafe { node_user_key_and_trailer(node) };
        self.comparator
            .compare(node_user, node_trailer, user_key, trailer)
    }

    /// Starts fetching both nodes a search may compare after `next`, `x`'s successor at
    /// `level`, while `next`'s own miss resolves: each node's address is read from the node
    /// before, so without this every comparison waits for one miss (~20-35 per search in a
    /// memtable larger than the caches). `known_after` is the node the caller knows to sort
    /// after the target without comparing it (`last_bigger`), or None.
    ///
    /// - If `next` sorts before the target, the search moves to it and compares its successor
    ///   at `level`: its address arrives with `next`'s cache line (the links sit just before
    ///   the key), so its fetch starts before the comparison and its branch resolve. Skipped
    ///   when `next` is `known_after` (never compared, never moved to).
    /// - Otherwise the search drops a level at `x` and compares `x`'s successor one level
    ///   down, whose address `x` (in cache) already holds: its fetch overlaps `next`'s miss.
    ///   Skipped when that is `next` itself (it then sorts after the target and is not
    ///   compared again) or null.
    ///
    /// Fetching further down `x`'s tower as well (two levels) measured no better
    /// (docs/benchmarks.md, "Skiplist prefetch").
    ///
    /// # Safety
    /// `x` is the head or a node reached through this list's links, with a link at `level`.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    unsafe fn prefetch_candidates(
        x: NonNull<Node>,
        level: usize,
        next: Option<NonNull<Node>>,
        known_after: Option<NonNull<Node>>,
    ) {
        // Relaxed loads: the addresses are only prefetched; the search loads each link again
        // with Acquire before it follows it.
        if let Some(n) = next.filter(|_| next != known_after) {
            // SAFETY: `n` was reached at `level` (invariant 3), so its tower has that link;
            // it lives as long as the list (invariant 1).
            let successor = unsafe { link(n, level).load(MemoryOrder::Relaxed) };
            if let Some(successor) = NonNull::new(successor) {
                prefetch_read(successor.as_ptr());
            }
        }
        if level > 0 {
            // SAFETY: the caller's guarantee; a tower with a link at `level` has all below.
            let below = NonNull::new(unsafe { link(x, level - 1).load(MemoryOrder::Relaxed) });
            if let Some(below) = below.filter(|&b| Some(b) != next) {
                prefetch_read(below.as_ptr());
            }
        }
    }

    /// The last node before the target (`< target`, or `<= target` when `or_equal`).
    fn find_last_before(&self, user_key: &[u8], trailer: u64, or_equal: bool) -> Option<Position> {
        let mut x = self.head;
        let mut level = self.max_height.load(MemoryOrder::Relaxed) - 1;
        let mut last_bigger = None;
        loop {
            // SAFETY: as in `last`.
            let next = NonNull::new(unsafe { link(x, level).load(MemoryOrder::Acquire) });
            // SAFETY: as in `last`.
            unsafe { Self::prefetch_candidates(x, level, next, last_bigger) };
            let advance = next.is_some_and(|n| {
                next != last_bigger
                    && match self.compare_node(n, user_key, trailer) {
                        Ordering::Less => true,
                        Ordering::Equal => or_equal,
                        Ordering::Greater => false,
                    }
            });
            if let (true, Some(n)) = (advance, next) {
                x = n;
            } else if level == 0 {
                return self.position((x != self.head).then_some(x));
            } else {
                last_bigger = next;
                level -= 1;
            }
        }
    }

    /// Fills `prev`/`next` below `list_height` from this thread's last insert into this list,
    /// when the new key goes right after the node that insert added (a sequential load:
    /// `fillseq`, an auto-increment key): then each level's walk starts at the hint's node for
    /// that level and ends after about one step, instead of descending from the head with
    /// some 2 log2(n) comparisons. Returns false, touching nothing, when there is no hint or
    /// the key is elsewhere; the caller then searches from the head.
    ///
    /// Why starting at the hint is right: every hinted node is linked at its level (links are
    /// never removed) and sorts at or before the last inserted node, which sorts before the
    /// key (checked here), so [`Self::find_splice_for_level`]'s precondition holds at each
    /// level; nodes other threads linked since are walked over like any others.
    #[inline(never)]
    fn find_splice_from_hint(
        &self,
        hint: &InsertHint,
        user_key: &[u8],
        trailer: u64,
        list_height: usize,
        prev: &mut [NonNull<Node>; MAX_HEIGHT],
        next: &mut [Option<NonNull<Node>>; MAX_HEIGHT],
    ) -> bool {
        let Some(last) = NonNull::new(hint.node) else {
            return false;
        };
        if hint.list_id != self.id || self.compare_node(last, user_key, trailer).is_ge() {
            return false;
        }
        // The key must also sort before the last node's current successor: otherwise the
        // walks could be long (a random key after the hint).
        // SAFETY: `last` is a node of this list (the id matched) linked at level 0.
        let after_last = NonNull::new(unsafe { link(last, 0).load(MemoryOrder::Acquire) });
        if after_last.is_some_and(|n| self.compare_node(n, user_key, trailer).is_le()) {
            return false;
        }
        for level in (0..list_height).rev() {
            // Where the last node's tower reaches, start at it; above, at the node it
            // followed; levels the list grew since, at the head, as a full search does.
            let before = if level < hint.node_height {
                last
            } else if level < hint.list_height {
                NonNull::new(hint.prev[level]).unwrap_or(self.head)
            } else {
                self.head
            };
            (prev[level], next[level]) =
                self.find_splice_for_level(user_key, trailer, before, level, None);
        }
        #[cfg(test)]
        HINT_HITS.with(|hits| hits.set(hits.get() + 1));
        true
    }

    /// Walks `level` from `before` (which sorts before the target) to the first node `>=` the
    /// target; returns it with its predecessor. `known_after`, when given, is a node known to
    /// sort after the target: reaching it ends the walk without comparing.
    // Forced: with the hint path as a third caller the compiler stopped inlining it into the
    // insert's search, which cost random inserts about 5% of their instructions (callgrind).
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn find_splice_for_level(
        &self,
        user_key: &[u8],
        trailer: u64,
        before: NonNull<Node>,
        level: usize,
        known_after: Option<NonNull<Node>>,
    ) -> (NonNull<Node>, Option<NonNull<Node>>) {
        let mut x = before;
        loop {
            // SAFETY: `x` is `before` (the head or a node reached at `level`) or was reached
            // at `level`, so it has a link at `level`.
            let next = NonNull::new(unsafe { link(x, level).load(MemoryOrder::Acquire) });
            // SAFETY: as above.
            unsafe { Self::prefetch_candidates(x, level, next, known_after) };
            if next.is_some() && next == known_after {
                return (x, next);
            }
            match next {
                Some(n) => match self.compare_node(n, user_key, trailer) {
                    Ordering::Less => x = n,
                    order => {
                        debug_assert!(
                            order == Ordering::Greater,
                            "duplicate internal key inserted into a memtable"
                        );
                        return (x, next);
                    }
                },
                None => return (x, None),
            }
        }
    }
}

impl std::fmt::Debug for SkipList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkipList")
            .field("max_height", &self.max_height.load(MemoryOrder::Relaxed))
            .field("arena", &self.arena)
            .finish_non_exhaustive()
    }
}

/// Allocates a node of `height` links (all null) holding `user_key ++ trailer` and `value`.
#[inline]
fn allocate_node(
    arena: &Arena,
    height: usize,
    user_key: &[u8],
    trailer: u64,
    value: &[u8],
) -> NonNull<Node> {
    let start = arena.allocate(node_size(height, user_key, value));
    // SAFETY: the allocation has `node_size` bytes, 8-byte aligned, ours alone.
    unsafe { write_node(start, height, user_key, trailer, value) }
}

/// Bytes of a node of `height` links holding `user_key ++ trailer` and `value` (before the
/// arena rounds it up to 8). Panics if the key or value exceeds 4 GiB.
#[inline]
fn node_size(height: usize, user_key: &[u8], value: &[u8]) -> usize {
    debug_assert!((1..=MAX_HEIGHT).contains(&height));
    let key_len = user_key.len() + TRAILER_SIZE;
    let key_len_u32 = u32::try_from(key_len).expect("memtable key longer than 4 GiB");
    let value_len_u32 = u32::try_from(value.len()).expect("memtable value longer than 4 GiB");
    (height - 1) * LINK_SIZE
        + NODE_SIZE
        + varint32_len(key_len_u32)
        + key_len
        + varint32_len(value_len_u32)
        + value.len()
}

/// Writes a node of `height` null links holding `user_key ++ trailer` and `value` at `start`.
///
/// # Safety
/// `start` is 8-byte aligned with [`node_size`] writable bytes for these arguments, nobody
/// else's.
#[inline]
unsafe fn write_node(
    start: NonNull<u8>,
    height: usize,
    user_key: &[u8],
    trailer: u64,
    value: &[u8],
) -> NonNull<Node> {
    // `node_size` checked both lengths fit in a u32.
    let key_len = (user_key.len() + TRAILER_SIZE) as u32;
    let value_len = value.len() as u32;
    // SAFETY: every write below stays inside the node's bytes (the caller's guarantee) and
    // fully initializes the node before anyone else can see it (invariant 2).
    unsafe {
        let node = start.add((height - 1) * LINK_SIZE).cast::<Node>();
        for level in 0..height {
            node.cast::<AtomicPtr<Node>>()
                .sub(level)
                .write(AtomicPtr::new(std::ptr::null_mut()));
        }
        let mut at = node.cast::<u8>().add(NODE_SIZE).as_ptr();
        at = write_varint32(at, key_len);
        std::ptr::copy_nonoverlapping(user_key.as_ptr(), at, user_key.len());
        at = at.add(user_key.len());
        std::ptr::copy_nonoverlapping(trailer.to_le_bytes().as_ptr(), at, TRAILER_SIZE);
        at = write_varint32(at.add(TRAILER_SIZE), value_len);
        std::ptr::copy_nonoverlapping(value.as_ptr(), at, value.len());
        node
    }
}

/// Bytes of `value` as a LEB128 varint.
#[inline]
fn varint32_len(value: u32) -> usize {
    // 7 bits a byte; `| 1` gives 0 one byte.
    (38 - (value | 1).leading_zeros() as usize) / 7
}

/// Writes `value` as a LEB128 varint at `at`; returns the address after it.
///
/// # Safety
/// `at` has [`varint32_len`]`(value)` writable bytes.
#[inline]
unsafe fn write_varint32(mut at: *mut u8, mut value: u32) -> *mut u8 {
    // SAFETY: one write per byte of the varint, which the caller provides.
    unsafe {
        while value >= 0x80 {
            at.write((value as u8) | 0x80);
            at = at.add(1);
            value >>= 7;
        }
        at.write(value as u8);
        at.add(1)
    }
}

/// Reads a LEB128 varint written by [`write_varint32`] at `at`: (value, address after it).
///
/// # Safety
/// `at` holds a complete varint written by [`write_varint32`].
#[inline]
unsafe fn read_varint32(at: *const u8) -> (usize, *const u8) {
    // SAFETY: the caller guarantees a complete varint, so every byte read belongs to it.
    unsafe {
        let first = at.read();
        if first < 0x80 {
            return (usize::from(first), at.add(1));
        }
        read_varint32_long(at)
    }
}

/// The multi-byte case of [`read_varint32`], out of the hot path.
///
/// # Safety
/// As for [`read_varint32`].
#[cold]
unsafe fn read_varint32_long(at: *const u8) -> (usize, *const u8) {
    let mut value = 0usize;
    for i in 0..MAX_VARINT32_LEN {
        // SAFETY: the varint is complete, so byte `i` is read only if byte `i - 1` said
        // another follows (at most `MAX_VARINT32_LEN` bytes).
        let byte = unsafe { at.add(i).read() };
        value |= usize::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            // SAFETY: as above; the address after the last byte is in or one past the node.
            return (value, unsafe { at.add(i + 1) });
        }
    }
    unreachable!("a memtable length varint runs past {MAX_VARINT32_LEN} bytes")
}

/// Link `level` of `node`.
///
/// # Safety
/// `node` is a live, initialized node whose tower has more than `level` links.
#[inline]
unsafe fn link<'a>(node: NonNull<Node>, level: usize) -> &'a AtomicPtr<Node> {
    // SAFETY: the caller guarantees link `level` exists; it was initialized in `allocate_node`.
    unsafe { node.cast::<AtomicPtr<Node>>().sub(level).as_ref() }
}

/// The internal key of `node`.
///
/// # Safety
/// `node` is a live, initialized node, and stays alive for `'a`.
#[inline]
unsafe fn node_key<'a>(node: NonNull<Node>) -> &'a [u8] {
    // SAFETY: the lengths and the entry were written before the node was published and never
    // change (invariant 2); the key follows its length, after the fixed part.
    unsafe {
        let (key_len, key) = read_varint32(node.cast::<u8>().add(NODE_SIZE).as_ptr());
        std::slice::from_raw_parts(key, key_len)
    }
}

/// The user key and trailer of `node`: [`node_key`] split, without the checks
/// [`split_internal_key`] needs for keys from outside (every node's key ends in a trailer).
///
/// # Safety
/// As for [`node_key`].
#[inline]
unsafe fn node_user_key_and_trailer<'a>(node: NonNull<Node>) -> (&'a [u8], u64) {
    // SAFETY: as in `node_key`; `write_node` wrote `user_key ++ trailer`, so the key is at
    // least `TRAILER_SIZE` bytes and its last 8 are the trailer, little endian.
    unsafe {
        let (key_len, key) = read_varint32(node.cast::<u8>().add(NODE_SIZE).as_ptr());
        let user_len = key_len - TRAILER_SIZE;
        let trailer = u64::from_le(key.add(user_len).cast::<u64>().read_unaligned());
        (std::slice::from_raw_parts(key, user_len), trailer)
    }
}

/// The value of `node`.
///
/// # Safety
/// As for [`node_key`].
#[inline]
unsafe fn node_value<'a>(node: NonNull<Node>) -> &'a [u8] {
    // SAFETY: as in `node_key`; the value's length follows the key, the value its length.
    unsafe {
        let (key_len, key) = read_varint32(node.cast::<u8>().add(NODE_SIZE).as_ptr());
        let (value_len, value) = read_varint32(key.add(key_len));
        std::slice::from_raw_parts(value, value_len)
    }
}

/// The splice of this thread's last insert into a skiplist (see
/// [`SkipList::find_splice_from_hint`]): the inserted node and its tower height, and at each
/// level of the list then, the node it was linked after. Pointers are only followed while
/// `list_id` names the list being inserted into, whose nodes live as long as it (invariant 1);
/// ids are never reused.
struct InsertHint {
    list_id: u64,
    node: *mut Node,
    node_height: usize,
    list_height: usize,
    prev: [*mut Node; MAX_HEIGHT],
    /// Inserts since `node` that did not follow it. The hint stays valid however many there
    /// were (nodes never move or go; a start that sorts before the key only makes the walk
    /// longer), but past [`HINT_MAX_MISSES`] it is replaced as unlikely to be followed.
    misses: u8,
}

/// Inserts in a row that do not follow the hint and keep it: one per secondary index of a
/// table whose rows arrive in primary-key order, for up to four such indexes.
const HINT_MAX_MISSES: u8 = 4;

thread_local! {
    static INSERT_HINT: UnsafeCell<InsertHint> = const {
        UnsafeCell::new(InsertHint {
            list_id: u64::MAX,
            node: std::ptr::null_mut(),
            node_height: 0,
            list_height: 0,
            prev: [std::ptr::null_mut(); MAX_HEIGHT],
            misses: 0,
        })
    };
}

#[cfg(test)]
thread_local! {
    /// Inserts on this thread that started from the hint (tests check the fast path is taken).
    static HINT_HITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

impl InsertHint {
    /// Records `node`, just linked with tower `height` after `prev` (one entry per level of
    /// the list), as the hint for list `list_id`.
    #[inline]
    fn remember(
        &mut self,
        list_id: u64,
        node: NonNull<Node>,
        height: usize,
        prev: &[NonNull<Node>],
    ) {
        self.list_id = list_id;
        self.node = node.as_ptr();
        self.misses = 0;
        self.node_height = height;
        self.list_height = prev.len();
        for (to, from) in self.prev.iter_mut().zip(prev) {
            *to = from.as_ptr();
        }
    }
}

/// A height with `P(height > k) = 2^-k`, capped at [`MAX_HEIGHT`].
///
/// Branching factor 2, not the 4 of `LevelDB` and `RocksDB`: `examples/memtable_bench.rs` on a
/// memtable of 1M entries (140 MiB, 2-CPU VM) measured inserts about 20% and random gets about
/// 15% faster, for about 5 more bytes of links per entry (16 instead of 10.7 on average).
fn random_height() -> usize {
    // Each trailing zero bit is one more level.
    let zeros = next_random().trailing_zeros() as usize;
    (1 + zeros).min(MAX_HEIGHT)
}

/// A per-thread xorshift64* generator: tower heights need speed, not cryptographic quality.
fn next_random() -> u32 {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = const { Cell::new(0) };
    }
    STATE.with(|state| {
        let mut x = state.get();
        if x == 0 {
            x = (thread_index() as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        // The high half: xorshift64*'s best bits.
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale_sst::BytewiseComparator;

    fn list() -> SkipList {
        SkipList::new(Arc::new(BytewiseComparator), Arena::new(1 << 12))
    }

    fn collect(list: &SkipList) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        let mut p = list.first();
        while let Some(pos) = p {
            out.push((list.key(pos).to_vec(), list.value(pos).to_vec()));
            p = list.next(pos);
        }
        out
    }

    fn ikey(user: &[u8], trailer: u64) -> Vec<u8> {
        let mut k = user.to_vec();
        k.extend_from_slice(&trailer.to_le_bytes());
        k
    }

    /// Checks invariant 3 on every level: strictly sorted in internal-key order, and each level
    /// a sublist of the one below; returns level 0's keys.
    fn check_levels(list: &SkipList) -> Vec<Vec<u8>> {
        let order = |a: &Vec<u8>, b: &Vec<u8>| {
            let (au, at) = split_internal_key(a);
            let (bu, bt) = split_internal_key(b);
            list.comparator().compare(au, at, bu, bt)
        };
        let base = list.level_keys(0);
        let mut below = base.clone();
        for level in 0..MAX_HEIGHT {
            let keys = list.level_keys(level);
            assert!(
                keys.windows(2).all(|w| order(&w[0], &w[1]).is_lt()),
                "level {level} is not sorted"
            );
            let mut rest = below.iter();
            for key in &keys {
                assert!(
                    rest.any(|k| k == key),
                    "level {level} is not a sublist of the one below"
                );
            }
            below = keys;
        }
        base
    }

    fn hint_hits() -> u64 {
        HINT_HITS.with(std::cell::Cell::get)
    }

    #[test]
    fn sequential_inserts_start_from_the_hint_and_others_search() {
        let a = list();
        let b = list();
        let mut expected_a = Vec::new();
        let put = |list: &SkipList, expected: Option<&mut Vec<Vec<u8>>>, i: u32| {
            let user = format!("k{i:06}");
            list.insert(user.as_bytes(), u64::from(i) << 8 | 1, b"v");
            if let Some(expected) = expected {
                expected.push(ikey(user.as_bytes(), u64::from(i) << 8 | 1));
            }
        };
        // Ascending: every insert after the first follows the previous one.
        let before = hint_hits();
        for i in 1000..3000 {
            put(&a, Some(&mut expected_a), i);
        }
        assert_eq!(hint_hits() - before, 1999);
        // Random keys below the ascending run: the hint does not hold, so a full search.
        let before = hint_hits();
        for i in (0..500u32).map(|i| i.wrapping_mul(2_654_435_761) % 1000) {
            put(&a, Some(&mut expected_a), i);
        }
        assert!(hint_hits() - before < 10, "random keys took the hint path");
        // Another list in between invalidates the hint (a different list id) ...
        put(&b, None, 5000);
        let before = hint_hits();
        put(&a, Some(&mut expected_a), 3000);
        assert_eq!(hint_hits(), before);
        // ... and appending again starts a new run once the old hint is given up.
        let before = hint_hits();
        for i in 3001..4000 {
            put(&a, Some(&mut expected_a), i);
        }
        let hits = hint_hits() - before;
        assert!((990..=999).contains(&hits), "{hits} hits");
        // Alternating with another list: an insert into `b` does not follow the hint, but
        // one miss keeps it, so the run in `a` goes on from it.
        let before = hint_hits();
        for i in 4000..4500 {
            put(&a, Some(&mut expected_a), i);
            put(&b, None, i + 5000);
        }
        assert_eq!(hint_hits() - before, 500);
        expected_a.sort_by(|x, y| {
            let (xu, xt) = split_internal_key(x);
            let (yu, yt) = split_internal_key(y);
            a.comparator().compare(xu, xt, yu, yt)
        });
        assert_eq!(check_levels(&a), expected_a);
        assert_eq!(check_levels(&b).len(), 501);
    }

    #[test]
    fn a_sequential_run_keeps_its_hint_across_a_few_random_inserts() {
        // A table's rows in primary-key order ("a" keys), each with entries in two random
        // secondary indexes ("b" and "c" keys) in the same batch.
        let list = list();
        let mut expected = Vec::new();
        let mut seqno = 0u64;
        let mut put = |user: String| {
            seqno += 1;
            list.insert(user.as_bytes(), seqno << 8 | 1, b"v");
            expected.push(ikey(user.as_bytes(), seqno << 8 | 1));
        };
        let before = hint_hits();
        for i in 0..2000u32 {
            put(format!("a{i:06}"));
            put(format!("b{:06}", i.wrapping_mul(2_654_435_761) % 100_000));
            put(format!("c{:06}", i.wrapping_mul(40_503) % 100_000));
        }
        let hits = hint_hits() - before;
        assert!(
            hits >= 1990,
            "primary keys searched from the head: {hits} hits"
        );
        // A long random run replaces the hint with one of its own inserts.
        for i in 0..100u32 {
            put(format!("b{:06}", i.wrapping_mul(7_919) % 100_000 + 1));
        }
        let before = hint_hits();
        put("a999999".to_string());
        assert_eq!(hint_hits(), before, "the hint outlived a long random run");
        expected.sort_by(|x, y| {
            let (xu, xt) = split_internal_key(x);
            let (yu, yt) = split_internal_key(y);
            list.comparator().compare(xu, xt, yu, yt)
        });
        assert_eq!(check_levels(&list), expected);
    }

    #[test]
    fn interleaved_sequential_writers_keep_every_level_sorted() {
        // Each thread appends its own ascending keys, interleaved with the others' by key, so
        // every hint is constantly overtaken by other threads' nodes.
        const THREADS: u32 = 4;
        const EACH: u32 = 5000;
        let list = list();
        std::thread::scope(|scope| {
            for t in 0..THREADS {
                let list = &list;
                scope.spawn(move || {
                    for i in 0..EACH {
                        let n = i * THREADS + t;
                        let user = format!("k{n:08}");
                        list.insert(user.as_bytes(), u64::from(n) << 8 | 1, b"v");
                    }
                });
            }
        });
        let keys = check_levels(&list);
        let expected: Vec<Vec<u8>> = (0..THREADS * EACH)
            .map(|n| ikey(format!("k{n:08}").as_bytes(), u64::from(n) << 8 | 1))
            .collect();
        assert_eq!(keys, expected);
    }

    #[test]
    fn empty_list_has_no_positions() {
        let list = list();
        assert_eq!(list.first(), None);
        assert_eq!(list.last(), None);
        assert_eq!(list.seek(b"", 0), None);
        assert_eq!(list.seek_for_prev(b"zzz", u64::MAX), None);
    }

    #[test]
    fn inserts_in_any_order_come_out_sorted() {
        let list = list();
        let mut expected = Vec::new();
        for i in (0..500u32).map(|i| i.wrapping_mul(2_654_435_761) % 1000) {
            let user = format!("k{i:04}");
            list.insert(user.as_bytes(), u64::from(i) << 8 | 1, &i.to_le_bytes());
            expected.push((
                ikey(user.as_bytes(), u64::from(i) << 8 | 1),
                i.to_le_bytes().to_vec(),
            ));
        }
        expected.sort();
        assert_eq!(collect(&list), expected);

        // Backwards through prev.
        let mut back = Vec::new();
        let mut p = list.last();
        while let Some(pos) = p {
            back.push(list.key(pos).to_vec());
            p = list.prev(pos);
        }
        back.reverse();
        assert_eq!(
            back,
            expected.iter().map(|e| e.0.clone()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn newer_versions_sort_first_and_seek_respects_trailers() {
        let list = list();
        for seqno in [3u64, 9, 5] {
            list.insert(b"a", seqno << 8 | 1, b"v");
        }
        list.insert(b"b", 1 << 8 | 1, b"v");
        let trailers: Vec<u64> = collect(&list)
            .iter()
            .map(|(k, _)| split_internal_key(k).1 >> 8)
            .collect();
        assert_eq!(trailers, [9, 5, 3, 1]);
        // Seek to a@6 (every kind): first entry <= seqno 6 is a@5.
        let p = list.seek(b"a", 6 << 8 | 0xff).unwrap();
        assert_eq!(list.key(p), ikey(b"a", 5 << 8 | 1));
        // Exact match for both directions.
        let exact = (5 << 8) | 1;
        assert_eq!(list.key(list.seek(b"a", exact).unwrap()), ikey(b"a", exact));
        assert_eq!(
            list.key(list.seek_for_prev(b"a", exact).unwrap()),
            ikey(b"a", exact)
        );
        // Last entry <= a@4 is a@5 (a@5 sorts before a@4).
        assert_eq!(
            list.key(list.seek_for_prev(b"a", 4 << 8).unwrap()),
            ikey(b"a", exact)
        );
        assert_eq!(list.seek_for_prev(b"a", u64::MAX), None);
        assert_eq!(list.seek(b"c", 0), None);
    }

    #[test]
    fn heights_follow_branching_two() {
        let mut counts = [0usize; MAX_HEIGHT + 1];
        for _ in 0..100_000 {
            counts[random_height()] += 1;
        }
        assert_eq!(counts[0], 0);
        // About 1/2 of towers are height 1, 1/4 height 2, 1/8 height 3.
        assert!((48_500..51_500).contains(&counts[1]), "{counts:?}");
        assert!((23_500..26_500).contains(&counts[2]), "{counts:?}");
        assert!((11_500..13_500).contains(&counts[3]), "{counts:?}");
    }

    #[test]
    fn positions_of_another_list_are_rejected() {
        let a = list();
        let b = list();
        a.insert(b"x", 1 << 8 | 1, b"");
        let p = a.first().unwrap();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b.key(p).len()));
        assert!(result.is_err());
    }

    #[test]
    fn bytewise_fast_path_is_byte_order() {
        let keys: [&[u8]; 9] = [
            b"",
            b"a",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefgi",
            b"abcdefg",
            b"\xff\xff\xff\xff\xff\xff\xff\xff",
            b"abcdefghij",
            b"abcdefghik",
        ];
        for a in keys {
            for b in keys {
                assert_eq!(bytewise_compare(a, b), a.cmp(b), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn lengths_round_trip_across_varint_sizes() {
        let list = list();
        let sizes = [0usize, 1, 127, 128, 16_383, 16_384, 70_000];
        for (i, &key_size) in sizes.iter().enumerate() {
            for (j, &value_size) in sizes.iter().enumerate() {
                let mut user = vec![b'k'; key_size];
                user.extend_from_slice(&[i as u8, j as u8]);
                list.insert(&user, 1 << 8 | 1, &vec![j as u8; value_size]);
            }
        }
        let mut found = 0;
        let mut p = list.first();
        while let Some(pos) = p {
            let (user, trailer) = split_internal_key(list.key(pos));
            assert_eq!(trailer, 1 << 8 | 1);
            let (i, j) = (user[user.len() - 2], user[user.len() - 1]);
            assert_eq!(user.len(), sizes[usize::from(i)] + 2);
            assert_eq!(list.value(pos), vec![j; sizes[usize::from(j)]]);
            found += 1;
            p = list.next(pos);
        }
        assert_eq!(found, sizes.len() * sizes.len());
        for (value, len) in [
            (0, 1),
            (127, 1),
            (128, 2),
            (16_383, 2),
            (16_384, 3),
            (u32::MAX, 5),
        ] {
            assert_eq!(varint32_len(value), len, "{value}");
            let mut buf = [0u8; MAX_VARINT32_LEN];
            // SAFETY: `buf` has room for any varint32.
            let (end, (read, after)) = unsafe {
                let end = write_varint32(buf.as_mut_ptr(), value);
                (end, read_varint32(buf.as_ptr()))
            };
            assert_eq!(read, value as usize);
            assert_eq!(end as usize - buf.as_ptr() as usize, len);
            assert_eq!(after as usize, end as usize);
        }
    }

    #[test]
    fn split_handles_short_keys() {
        assert_eq!(split_internal_key(b"abc"), (&b"abc"[..], 0));
        assert_eq!(split_internal_key(&ikey(b"u", 77)), (&b"u"[..], 77));
    }
}
