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
//! Invariant: a [`HugePageRegion`] owns `len` bytes at `start`, `HUGE_PAGE_SIZE`-aligned,
//! mapped read-write until it drops, and nothing else unmaps them.

use std::ptr::NonNull;

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
    fn lengths_that_are_not_whole_huge_pages_are_refused() {
        assert!(HugePageRegion::map(0).is_none());
        assert!(HugePageRegion::map(HUGE_PAGE_SIZE + 4096).is_none());
    }
}
