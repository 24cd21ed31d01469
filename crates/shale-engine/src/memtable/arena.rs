//! A concurrent bump allocator for memtable nodes: memory is handed out from chunks and freed
//! only when the whole arena drops.
//!
//! Each thread allocates from the current chunk of its own shard (threads are spread over
//! shards round-robin), so concurrent writers do not fight over one cache line; a shard takes a
//! new chunk under the arena's mutex when its chunk is full. A chunk starts with a header
//! holding its own atomic bump offset, so a thread still holding a replaced chunk either gets
//! space in that old chunk or sees it full: there is no window where an offset applies to the
//! wrong chunk.
//!
//! Memory usage ([`Arena::memory_usage`]), what a memtable's flush trigger compares with its
//! write buffer size, is every chunk's bytes minus the room still free at the end of the
//! chunks shards are filling: so it counts every allocation, its alignment padding, chunk
//! headers and the tails lost when full chunks were retired, and not room a later allocation
//! may still use. The memory held beyond it is at most one chunk per shard, which is why
//! chunks are small against the write buffer ([`super::MemTable::for_write_buffer`]).
//!
//! An arena made with [`Arena::with_huge_pages`] takes its chunks of [`HUGE_PAGE_SIZE`] from
//! huge-page mappings ([`super::huge_pages`]), so walking a large memtable costs fewer TLB
//! misses; large requests and failed mappings use the heap as usual.
//!
//! Invariants:
//! 1. Every chunk, and so every allocation, stays at the same address until the arena drops.
//! 2. A chunk's header is written before the chunk is published to a shard (Release store,
//!    Acquire load), and only its `offset` changes afterwards.
//! 3. Allocations are 8-byte aligned and never overlap: each is a distinct range reserved by a
//!    `fetch_add` on its chunk's offset (or a chunk of its own, for large ones).
//! 4. A chunk's bytes are in `reserved` before the chunk is published to a shard (Release
//!    add, then Release store), so [`Arena::memory_usage`], which reads the shards before
//!    `reserved` (Acquire), never subtracts a chunk's free room from a total without it.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use super::huge_pages::{HugePageRegion, HUGE_PAGE_SIZE, POOL};

/// Alignment of every allocation (and of chunks).
pub(super) const ALIGN: usize = 8;

/// The largest chunk size: small enough that the room held and not yet used (at most a chunk
/// per shard) is a small part of a usual write buffer, large enough that taking a new chunk
/// under the mutex is rare (once per about 1,800 entries of 144 bytes).
pub(super) const DEFAULT_CHUNK_SIZE: usize = 256 << 10;

/// The head of every chunk; the chunk's usable bytes follow it.
#[repr(C)]
struct ChunkHeader {
    /// Bytes reserved so far; may run past `capacity` once the chunk is full.
    offset: AtomicUsize,
    capacity: usize,
}

impl ChunkHeader {
    /// Bytes not yet handed out.
    fn free(&self) -> usize {
        self.capacity
            .saturating_sub(self.offset.load(Ordering::Relaxed))
    }
}

const HEADER_SIZE: usize = std::mem::size_of::<ChunkHeader>();
const _: () = assert!(HEADER_SIZE.is_multiple_of(ALIGN));

/// A shard: the chunk its threads currently bump-allocate from. Padded to its own cache lines.
#[repr(align(128))]
struct Shard {
    current: AtomicPtr<ChunkHeader>,
}

/// A chunk owned by the arena, freed when the arena drops.
enum OwnedChunk {
    /// From the global allocator, freed with this layout.
    Heap {
        start: NonNull<ChunkHeader>,
        layout: Layout,
    },
    /// A huge-page mapping, given back to the page pool when the arena drops.
    HugePages { region: HugePageRegion },
}

/// The bump allocator. See the module docs.
pub(super) struct Arena {
    shards: Box<[Shard]>,
    chunk_size: usize,
    /// Whether chunks of `chunk_size` come from huge-page mappings (`chunk_size` is then
    /// [`HUGE_PAGE_SIZE`]).
    huge_pages: bool,
    /// Every chunk ever allocated; also serializes refills.
    chunks: Mutex<Vec<OwnedChunk>>,
    /// Bytes of all chunks (headers included); invariant 4.
    reserved: AtomicUsize,
}

// SAFETY: an `OwnedChunk` is the sole owner of its allocation or mapping (like a `Box<[u8]>`),
// which any thread may free; the arena keeps it behind its mutex.
unsafe impl Send for OwnedChunk {}

impl Arena {
    /// An empty arena allocating chunks of `chunk_size` bytes (large requests get their own).
    pub(super) fn new(chunk_size: usize) -> Self {
        let chunk_size = chunk_size.max(4 * ALIGN + HEADER_SIZE);
        Arena {
            shards: (0..shard_count())
                .map(|_| Shard {
                    current: AtomicPtr::new(std::ptr::null_mut()),
                })
                .collect(),
            chunk_size,
            huge_pages: false,
            chunks: Mutex::new(Vec::new()),
            reserved: AtomicUsize::new(0),
        }
    }

    /// An empty arena allocating chunks of one huge page each (see the module docs).
    pub(super) fn with_huge_pages() -> Self {
        let mut arena = Arena::new(HUGE_PAGE_SIZE);
        arena.huge_pages = true;
        arena
    }

    /// Bytes of memory used: all chunks minus the free room of the shards' current chunks
    /// (see the module docs). Never less than the bytes handed out by allocations that
    /// happen-before the call; while other threads allocate it may count a chunk published
    /// meanwhile as fully used (an over-count, never an under-count).
    pub(super) fn memory_usage(&self) -> usize {
        // Shards first, then the total (invariant 4).
        let free: usize = self
            .shards
            .iter()
            .map(|shard| {
                let chunk = shard.current.load(Ordering::Acquire);
                // SAFETY: a published chunk is initialized (invariant 2) and lives until the
                // arena drops (invariant 1).
                NonNull::new(chunk).map_or(0, |chunk| unsafe { chunk.as_ref() }.free())
            })
            .sum();
        self.reserved.load(Ordering::Acquire).saturating_sub(free)
    }

    /// Whether [`Self::memory_usage`] plus `extra` is at least `limit`; while the chunks alone
    /// stay under it (most of a memtable's life) this is one load, not a look at every shard.
    pub(super) fn memory_usage_reaches(&self, limit: usize, extra: usize) -> bool {
        // The usage never exceeds the chunks' bytes.
        self.reserved.load(Ordering::Relaxed) + extra >= limit
            && self.memory_usage() + extra >= limit
    }

    /// Bytes of all chunks, free room included: what the arena holds from the allocator.
    pub(super) fn reserved_bytes(&self) -> usize {
        self.reserved.load(Ordering::Acquire)
    }

    /// The chunk size: at most this much room per shard is held and not counted as used.
    #[cfg(test)]
    pub(super) fn chunk_size(&self) -> usize {
        self.chunk_size
    }

    /// Whether chunks come from huge-page mappings.
    #[cfg(test)]
    pub(super) fn uses_huge_pages(&self) -> bool {
        self.huge_pages
    }

    /// Returns `size` bytes of uninitialized memory, 8-byte aligned, for the caller alone and
    /// valid until the arena drops.
    pub(super) fn allocate(&self, size: usize) -> NonNull<u8> {
        let size = size.max(1).next_multiple_of(ALIGN);
        if size > (self.chunk_size - HEADER_SIZE) / 4 {
            return self.allocate_dedicated(size);
        }
        let shard = &self.shards[thread_index() & (self.shards.len() - 1)];
        loop {
            let chunk = shard.current.load(Ordering::Acquire);
            if let Some(chunk) = NonNull::new(chunk) {
                // SAFETY: a published chunk is initialized (invariant 2) and lives until the
                // arena drops (invariant 1).
                let header = unsafe { chunk.as_ref() };
                let offset = header.offset.fetch_add(size, Ordering::Relaxed);
                if offset + size <= header.capacity {
                    // SAFETY: `HEADER_SIZE + offset + size` lies within the chunk, so the
                    // pointer stays in bounds of its allocation.
                    return unsafe { chunk.cast::<u8>().add(HEADER_SIZE + offset) };
                }
            }
            self.refill(shard, chunk);
        }
    }

    /// Gives `shard` a fresh chunk unless another thread already replaced `stale`.
    fn refill(&self, shard: &Shard, stale: *mut ChunkHeader) {
        let mut chunks = self
            .chunks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if shard.current.load(Ordering::Acquire) == stale {
            let fresh = if self.huge_pages {
                self.new_huge_chunk_locked(&mut chunks)
            } else {
                None
            };
            let fresh =
                fresh.unwrap_or_else(|| self.new_chunk_locked(&mut chunks, self.chunk_size, 0));
            shard.current.store(fresh.as_ptr(), Ordering::Release);
        }
    }

    /// An allocation in a chunk of its own, exactly sized and born full so nothing else lands
    /// in it: what large requests get, and what a long-lived allocation made by a thread that
    /// may never allocate again takes instead of opening a chunk in that thread's shard.
    pub(super) fn allocate_dedicated(&self, size: usize) -> NonNull<u8> {
        let size = size.max(1).next_multiple_of(ALIGN);
        let mut chunks = self
            .chunks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let chunk = self.new_chunk_locked(&mut chunks, HEADER_SIZE + size, size);
        // SAFETY: the chunk has `size` usable bytes after its header.
        unsafe { chunk.cast::<u8>().add(HEADER_SIZE) }
    }

    fn new_chunk_locked(
        &self,
        chunks: &mut Vec<OwnedChunk>,
        bytes: usize,
        used: usize,
    ) -> NonNull<ChunkHeader> {
        let layout = Layout::from_size_align(bytes, ALIGN.max(std::mem::align_of::<ChunkHeader>()))
            .expect("memtable chunk size overflows");
        // SAFETY: the layout has a non-zero size (at least the header).
        #[allow(clippy::cast_ptr_alignment)] // the layout asks for the header's alignment
        let start = unsafe { alloc(layout) }.cast::<ChunkHeader>();
        let Some(start) = NonNull::new(start) else {
            handle_alloc_error(layout)
        };
        // SAFETY: `start` is a fresh allocation of `bytes`, aligned for the header.
        unsafe {
            self.publish_locked(
                chunks,
                start,
                bytes,
                used,
                OwnedChunk::Heap { start, layout },
            )
        }
    }

    /// A chunk of one huge page (from the pool or freshly mapped), or `None` when no mapping
    /// can be made.
    fn new_huge_chunk_locked(&self, chunks: &mut Vec<OwnedChunk>) -> Option<NonNull<ChunkHeader>> {
        let region = POOL.take()?;
        #[allow(clippy::cast_ptr_alignment)] // the region is huge-page aligned
        let start = region.start().cast::<ChunkHeader>();
        // SAFETY: the region is ours alone (a fresh mapping, or a pooled page no arena uses:
        // the pool's invariant 2), huge-page aligned and HUGE_PAGE_SIZE bytes long.
        let owned = OwnedChunk::HugePages { region };
        Some(unsafe { self.publish_locked(chunks, start, HUGE_PAGE_SIZE, 0, owned) })
    }

    /// Writes the header of the chunk of `bytes` at `start` (with `used` bytes already taken),
    /// records its owner and counts its bytes in `reserved` (invariant 4: before a shard can
    /// see it).
    ///
    /// # Safety
    /// `start` is the beginning of `bytes >= HEADER_SIZE` bytes that `owned` owns, aligned
    /// for the header, which nothing else reads or writes.
    unsafe fn publish_locked(
        &self,
        chunks: &mut Vec<OwnedChunk>,
        start: NonNull<ChunkHeader>,
        bytes: usize,
        used: usize,
        owned: OwnedChunk,
    ) -> NonNull<ChunkHeader> {
        // SAFETY: the caller's contract.
        unsafe {
            start.as_ptr().write(ChunkHeader {
                offset: AtomicUsize::new(used),
                capacity: bytes - HEADER_SIZE,
            });
        }
        chunks.push(owned);
        self.reserved.fetch_add(bytes, Ordering::Release);
        start
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        let chunks = self
            .chunks
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for chunk in chunks.drain(..) {
            match chunk {
                // SAFETY: allocated in `new_chunk_locked` with this layout, freed once; `&mut
                // self` means no allocation from it is still in use (invariant 1 ends here).
                OwnedChunk::Heap { start, layout } => unsafe {
                    dealloc(start.as_ptr().cast(), layout);
                },
                // Kept for the next memtable or unmapped, under the same argument.
                OwnedChunk::HugePages { region } => POOL.give_back(region),
            }
        }
    }
}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena")
            .field("shards", &self.shards.len())
            .field("chunk_size", &self.chunk_size)
            .field("used", &self.memory_usage())
            .field("reserved", &self.reserved_bytes())
            .finish_non_exhaustive()
    }
}

/// How many shards per-thread structures use: the CPU count rounded up to a power of two,
/// at most 16 (more threads than that share shards, which is correct, only slower).
pub(super) fn shard_count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(4, std::num::NonZeroUsize::get)
            .next_power_of_two()
            .min(16)
    })
}

/// A small number fixed for the life of the calling thread, handed out round-robin; used to
/// pick a shard (`thread_index() & (shard_count() - 1)`).
pub(super) fn thread_index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    INDEX.with(|index| {
        if index.get() == usize::MAX {
            index.set(NEXT.fetch_add(1, Ordering::Relaxed) % (1 << 20));
        }
        index.get()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn allocations_are_aligned_disjoint_and_counted() {
        let arena = Arena::new(4096);
        assert_eq!(arena.memory_usage(), 0);
        let mut ranges = Vec::new();
        for size in (1..200).chain([1000, 5000, 3]) {
            let p = arena.allocate(size);
            assert_eq!(p.as_ptr() as usize % ALIGN, 0);
            // SAFETY: `p` has `size` writable bytes.
            unsafe { p.as_ptr().write_bytes(size as u8, size) };
            ranges.push((p.as_ptr() as usize, size));
        }
        ranges.sort_unstable();
        for pair in ranges.windows(2) {
            assert!(pair[0].0 + pair[0].1 <= pair[1].0, "{pair:?} overlap");
        }
        let total: usize = ranges.iter().map(|r| r.1).sum();
        assert!(arena.memory_usage() >= total);
        // 5000 > chunk/4: its own chunk, exactly sized.
        assert!(arena.memory_usage() < total + 4 * 4096 + 5000);
    }

    #[test]
    fn usage_counts_allocations_and_lost_tails_not_free_room() {
        let arena = Arena::new(4096);
        let capacity = 4096 - HEADER_SIZE;
        arena.allocate(100); // 104 after alignment
        assert_eq!(arena.memory_usage(), HEADER_SIZE + 104);
        assert_eq!(arena.reserved_bytes(), 4096);
        // Fill the chunk to 8 bytes short of full, then ask for 16: the 8 are lost with the
        // chunk, and counted, as is the header of the next chunk.
        for _ in 0..3 {
            arena.allocate(1000); // each under a quarter chunk: bump-allocated
        }
        arena.allocate(capacity - 104 - 3000 - 8);
        assert_eq!(arena.memory_usage(), 4096 - 8);
        assert_eq!(arena.reserved_bytes(), 4096);
        arena.allocate(16);
        assert_eq!(arena.memory_usage(), 4096 + HEADER_SIZE + 16);
        assert_eq!(arena.reserved_bytes(), 2 * 4096);
        // Dedicated chunks are exactly their size and all used.
        arena.allocate_dedicated(3000);
        assert_eq!(
            arena.memory_usage(),
            4096 + HEADER_SIZE + 16 + HEADER_SIZE + 3000
        );
    }

    #[test]
    fn huge_page_chunks_are_aligned_disjoint_and_counted() {
        let arena = Arena::with_huge_pages();
        assert!(arena.uses_huge_pages());
        let first = arena.allocate(100);
        if cfg!(target_os = "linux") {
            // The first allocation follows the header of a chunk that is one mapped huge page.
            assert_eq!((first.as_ptr() as usize - HEADER_SIZE) % HUGE_PAGE_SIZE, 0);
        }
        let mut ranges = vec![(first.as_ptr() as usize, 100)];
        // 3 chunks' worth of nodes, so refills happen and each new chunk is a fresh mapping.
        for i in 0..(3 * HUGE_PAGE_SIZE / 144) {
            let size = 120 + i % 40;
            let p = arena.allocate(size);
            // SAFETY: `p` has `size` writable bytes.
            unsafe { p.as_ptr().write_bytes(i as u8, size) };
            ranges.push((p.as_ptr() as usize, size));
        }
        ranges.sort_unstable();
        for pair in ranges.windows(2) {
            assert!(pair[0].0 + pair[0].1 <= pair[1].0, "{pair:?} overlap");
        }
        assert_eq!(arena.reserved_bytes() % HUGE_PAGE_SIZE, 0);
        assert!(arena.reserved_bytes() >= 3 * HUGE_PAGE_SIZE);
        let handed_out: usize = ranges.iter().map(|r| r.1.next_multiple_of(ALIGN)).sum();
        let usage = arena.memory_usage();
        assert!(usage >= handed_out, "{usage} < {handed_out}");
        assert!(usage <= arena.reserved_bytes());
        // A large request still gets a heap chunk of its own, exactly sized.
        let before = arena.reserved_bytes();
        arena.allocate(HUGE_PAGE_SIZE);
        assert_eq!(
            arena.reserved_bytes(),
            before + HEADER_SIZE + HUGE_PAGE_SIZE
        );
    }

    #[test]
    fn concurrent_allocations_do_not_overlap() {
        let arena = Arc::new(Arena::new(1 << 14));
        let threads: Vec<_> = (0..4u8)
            .map(|t| {
                let arena = arena.clone();
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for i in 0..20_000usize {
                        let size = 8 + (i * 7 + t as usize) % 120;
                        let p = arena.allocate(size);
                        // SAFETY: `p` has `size` writable bytes, ours alone.
                        unsafe { p.as_ptr().write_bytes(t, size) };
                        mine.push((p.as_ptr() as usize, size));
                    }
                    // Nobody else wrote into our ranges.
                    for &(p, size) in &mine {
                        // SAFETY: reading back our own initialized allocation.
                        let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, size) };
                        assert!(bytes.iter().all(|&b| b == t));
                    }
                    mine
                })
            })
            .collect();
        let mut all: Vec<_> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        all.sort_unstable();
        for pair in all.windows(2) {
            assert!(pair[0].0 + pair[0].1 <= pair[1].0);
        }
        // Once the writers are joined the usage is exact: every allocation (aligned), every
        // header, and at most one lost tail (under 128 bytes here) per chunk.
        let handed_out: usize = all
            .iter()
            .map(|&(_, size)| size.next_multiple_of(ALIGN))
            .sum();
        let chunks = arena.reserved_bytes() / (1 << 14);
        let usage = arena.memory_usage();
        assert!(
            usage >= handed_out + chunks * HEADER_SIZE,
            "{usage} < {handed_out}"
        );
        assert!(
            usage <= handed_out + chunks * (HEADER_SIZE + 128),
            "{usage}"
        );
        // What is held and not counted is the free room of at most one chunk per shard.
        assert!(arena.reserved_bytes() - usage <= shard_count() * (1 << 14));
    }
}
