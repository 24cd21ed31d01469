//! A small per-thread pool of block buffers, so that a block-cache miss can decompress into
//! the buffer of a block the cache just evicted instead of allocating and zero-filling a new
//! one (docs/benchmarks.md, "Block buffer reuse").
//!
//! A [`crate::block::Block`] gives its contents back with [`recycle`] when it is dropped (its
//! last `Arc` goes away, usually on eviction, in the thread that inserts the next block); the
//! LZ4 decoder takes one with [`take`]. The pool is thread-local: no lock, and the thread that
//! evicts is the one about to decompress.
//!
//! Invariants:
//! 1. A pooled buffer holds no data anyone can read: [`take`] hands it out with the requested
//!    length, and its user overwrites all of those bytes (or reports an error) before any of
//!    them is read. Bytes it keeps from an earlier block are initialised, never exposed.
//! 2. The pool holds at most [`MAX_POOLED`] buffers, each with a capacity of at most
//!    [`MAX_POOLED_CAPACITY`], so it never pins more than 1 MiB per thread, and a large block
//!    is never kept alive by it.
//! 3. Fresh buffers are allocated with their capacity rounded up to [`CAPACITY_GRANULE`], so
//!    blocks of nearly equal size (a table's data blocks) can use each other's buffers.

use std::cell::RefCell;

/// Most buffers one thread keeps.
const MAX_POOLED: usize = 16;
/// Largest capacity kept: blocks are usually 4-16 KiB.
const MAX_POOLED_CAPACITY: usize = 64 << 10;
/// Fresh capacities are a multiple of this; the slack (under 256 bytes) is not charged to the
/// block cache, as the allocator's own rounding is not.
const CAPACITY_GRANULE: usize = 256;

thread_local! {
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// A buffer of exactly `len` bytes whose contents are unspecified (zeros or an earlier
/// block's bytes): the caller must overwrite all of them before reading any (invariant 1).
pub(crate) fn take(len: usize) -> Vec<u8> {
    let reused = POOL
        .try_with(|pool| {
            let mut pool = pool.try_borrow_mut().ok()?;
            let fits = pool.iter().rposition(|buffer| buffer.capacity() >= len);
            if fits.is_none() {
                // Nothing fits: free one, so buffers too small for this thread's blocks do not
                // occupy the pool for good.
                pool.pop();
            }
            fits.map(|at| pool.swap_remove(at))
        })
        .ok()
        .flatten();
    if let Some(mut buffer) = reused {
        // Truncates or zero-fills only the growth; the capacity suffices, so no reallocation.
        buffer.resize(len, 0);
        return buffer;
    }
    // The capacity is rounded up (invariant 3). A zeroed allocation, not `with_capacity` and
    // `resize`: `calloc` skips the fill for memory fresh from the system, which is what a cache
    // still warming up (nothing evicted, so nothing pooled) gets.
    let mut buffer = vec![0; len.next_multiple_of(CAPACITY_GRANULE)];
    buffer.truncate(len);
    buffer
}

/// Offers a buffer whose contents are no longer needed to this thread's pool; it is freed
/// instead when the pool is full or the buffer is empty or too large (invariant 2).
pub(crate) fn recycle(buffer: Vec<u8>) {
    if buffer.capacity() == 0 || buffer.capacity() > MAX_POOLED_CAPACITY {
        return;
    }
    // During thread exit the pool may be gone; the buffer is then simply freed.
    let _ = POOL.try_with(|pool| {
        if let Ok(mut pool) = pool.try_borrow_mut() {
            if pool.len() < MAX_POOLED {
                pool.push(buffer);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pooled() -> usize {
        POOL.with(|pool| pool.borrow().len())
    }

    #[test]
    fn a_recycled_buffer_is_reused_with_the_requested_length() {
        let first = take(4100);
        assert_eq!(first.len(), 4100);
        assert!(first.iter().all(|&b| b == 0));
        let address = first.as_ptr();
        let mut written = first;
        written.fill(0xab);
        recycle(written);
        assert_eq!(pooled(), 1);
        // A slightly larger block fits the rounded-up capacity: same allocation, new length.
        let second = take(4200);
        assert_eq!(second.as_ptr(), address);
        assert_eq!(second.len(), 4200);
        assert_eq!(pooled(), 0);
        recycle(second);
        let shorter = take(100);
        assert_eq!(shorter.as_ptr(), address);
        assert_eq!(shorter.len(), 100);
    }

    #[test]
    fn the_pool_is_bounded_and_keeps_no_large_buffers() {
        recycle(Vec::with_capacity(MAX_POOLED_CAPACITY + 1));
        recycle(Vec::new());
        assert_eq!(pooled(), 0);
        for _ in 0..MAX_POOLED + 5 {
            recycle(vec![0; 4096]);
        }
        assert_eq!(pooled(), MAX_POOLED);
        // A block larger than every pooled buffer gets a fresh one and frees one pooled buffer.
        let big = take(8192);
        assert_eq!(big.len(), 8192);
        assert_eq!(pooled(), MAX_POOLED - 1);
    }
}
