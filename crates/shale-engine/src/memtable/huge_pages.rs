//! Memory for large memtable chunks in transparent huge pages (Linux).
//!
//! Seeks and inserts walk a memtable's skiplist from node to node in key order, and nodes lie
//! in the arena in arrival order: with random keys every step is a cache miss, and with 4 KiB
//! pages nearly every step in a memtable of tens of MiB is also a TLB miss, whose page walk
//! costs more misses (more still in a virtual machine, where the walk is two-dimensional). A
//! 2 MiB-aligned anonymous mapping advised `MADV_HUGEPAGE` is backed by 2 MiB pages when the
//! kernel's transparent huge pages are "always" or "madvise"
//! (`/sys/kernel/mm/transparent_hugepage/enabled`), so a 64 MiB memtable needs 32 TLB entries
//! instead of 16,384. With "never", or on other systems, the mapping is ordinary memory, and
//! where a mapping cannot be made the arena falls back to the heap.
//!
//! A new mapping's pages are faulted in, and zeroed by the kernel, on first touch: 64 MiB per
//! memtable, a few percent of a sequential fill's time. So pages of a dropped memtable go to
//! a process-wide [`PagePool`] and the next memtable takes them from there, as glibc's heap
//! reuses the small chunks freed memtables leave. The pool keeps at most [`POOL_LIMIT`]
//! bytes; beyond it, pages are unmapped.
//!
//! Invariants:
//! 1. A [`HugePageRegion`] owns `len` bytes at `start`, `HUGE_PAGE_SIZE`-aligned, mapped
//!    read-write until it drops, and nothing else unmaps them.
//! 2. A region in the pool belongs to no arena: an arena gives a region back only when it
//!    drops, when no allocation from it is in use.

use std::ptr::NonNull;
use std::sync::{Mutex, PoisonError};

/// The size and alignment of a transparent huge page on x86-64 (and on 64-bit ARM with 4 KiB
/// pages).
pub(super) const HUGE_PAGE_SIZE: usize = 2 << 20;

/// An anonymous mapping of whole huge pages, unmapped on drop.
pub(super) struct HugePageRegion {
    start: NonNull<u8>,
    len: usize,
}

// SAFETY: the region is plain memory owned by this value alone (like a `Box<[u8]>`).
unsafe impl Send for HugePageRegion {}

impl HugePageRegion {
    /// Maps `len` zeroed bytes (`len` a positive multiple of [`HUGE_PAGE_SIZE`]), aligned to
    /// [`HUGE_PAGE_SIZE`] and advised for huge pages; `None` where no mapping can be made.
    #[cfg(target_os = "linux")]
    pub(super) fn map(len: usize) -> Option<Self> {
        if len == 0 || !len.is_multiple_of(HUGE_PAGE_SIZE) {
            return None;
        }
        // Over-map by one huge page, then unmap the unaligned head and the tail beyond `len`:
        // mmap only promises page alignment.
        let padded = len.checked_add(HUGE_PAGE_SIZE)?;
        // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                padded,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return None;
        }
        let raw_addr = raw as usize;
        let start = raw_addr.next_multiple_of(HUGE_PAGE_SIZE);
        let head = start - raw_addr;
        let tail = padded - head - len;
        // SAFETY: both ranges lie inside the mapping just made and outside the kept part.
        unsafe {
            if head > 0 {
                libc::munmap(raw, head);
            }
            if tail > 0 {
                libc::munmap((start + len) as *mut libc::c_void, tail);
            }
            // Advice only: without THP support it fails and the memory is still good.
            libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
        Some(HugePageRegion {
            start: NonNull::new(start as *mut u8)?,
            len,
        })
    }

    /// No huge pages to ask for here: the arena uses the heap.
    #[cfg(not(target_os = "linux"))]
    pub(super) fn map(_len: usize) -> Option<Self> {
        None
    }

    /// The first byte of the region.
    pub(super) fn start(&self) -> NonNull<u8> {
        self.start
    }
}

/// Bytes of huge pages the process keeps for reuse: two default (64 MiB) write buffers, what
/// a keyspace that switches memtables while the last one flushes cycles through.
pub(super) const POOL_LIMIT: usize = 128 << 20;

/// One-page regions given back by dropped arenas, for the next arena to take.
pub(super) struct PagePool {
    pages: Mutex<Vec<HugePageRegion>>,
    limit: usize,
}

/// The process's pool (see the module docs).
pub(super) static POOL: PagePool = PagePool::new(POOL_LIMIT);

impl PagePool {
    /// An empty pool keeping at most `limit` bytes.
    pub(super) const fn new(limit: usize) -> Self {
        PagePool {
            pages: Mutex::new(Vec::new()),
            limit,
        }
    }

    /// A region of one huge page: a pooled one (holding whatever its last arena wrote; arenas
    /// hand out uninitialized memory) or, with none pooled, a fresh mapping; `None` when no
    /// mapping can be made.
    pub(super) fn take(&self) -> Option<HugePageRegion> {
        let pooled = self
            .pages
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        pooled.or_else(|| HugePageRegion::map(HUGE_PAGE_SIZE))
    }

    /// Keeps `region` for the next [`Self::take`] while the pool is under its limit, else
    /// unmaps it (invariant 2: the caller no longer uses it).
    pub(super) fn give_back(&self, region: HugePageRegion) {
        let mut pages = self.pages.lock().unwrap_or_else(PoisonError::into_inner);
        if region.len == HUGE_PAGE_SIZE && (pages.len() + 1) * HUGE_PAGE_SIZE <= self.limit {
            pages.push(region);
        }
        // Otherwise `region` drops here, unmapped, after the lock is released.
    }

    /// Pages in the pool now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.pages
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl Drop for HugePageRegion {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        // SAFETY: the region was mapped by `map` with this length and is unmapped once here;
        // its owner (the arena) hands out no pointer into it that outlives it.
        unsafe {
            libc::munmap(self.start.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn regions_are_aligned_zeroed_and_writable() {
        let region = HugePageRegion::map(2 * HUGE_PAGE_SIZE).expect("mapping 4 MiB");
        let start = region.start().as_ptr();
        assert_eq!(start as usize % HUGE_PAGE_SIZE, 0);
        // SAFETY: the region owns 2 * HUGE_PAGE_SIZE bytes at `start`.
        let bytes = unsafe { std::slice::from_raw_parts_mut(start, 2 * HUGE_PAGE_SIZE) };
        assert!(bytes.iter().step_by(4096).all(|&b| b == 0));
        bytes[0] = 1;
        bytes[2 * HUGE_PAGE_SIZE - 1] = 2;
        assert_eq!((bytes[0], bytes[2 * HUGE_PAGE_SIZE - 1]), (1, 2));
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn the_pool_reuses_given_back_pages_up_to_its_limit() {
        let pool = PagePool::new(2 * HUGE_PAGE_SIZE);
        let pages: Vec<_> = (0..3)
            .map(|_| pool.take().expect("mapping 2 MiB"))
            .collect();
        let addresses: Vec<_> = pages.iter().map(|p| p.start().as_ptr() as usize).collect();
        assert_eq!(pool.len(), 0);
        for page in pages {
            pool.give_back(page);
        }
        // The third page is past the limit: unmapped, not kept.
        assert_eq!(pool.len(), 2);
        let again = pool.take().expect("a pooled page");
        assert_eq!(again.start().as_ptr() as usize, addresses[1]);
        assert_eq!(pool.len(), 1);
        // A region of another length is never pooled.
        pool.give_back(HugePageRegion::map(2 * HUGE_PAGE_SIZE).expect("mapping 4 MiB"));
        assert_eq!(pool.len(), 1);
    }

    #[test]
    fn lengths_that_are_not_whole_huge_pages_are_refused() {
        assert!(HugePageRegion::map(0).is_none());
        assert!(HugePageRegion::map(HUGE_PAGE_SIZE + 4096).is_none());
    }
}
