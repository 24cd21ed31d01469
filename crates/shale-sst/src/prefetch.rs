//! A hint to the processor to start loading a cache line that a search will read soon.
//!
//! Large-structure searches (the memtable's skiplist, a cold block, the block cache's index)
//! are chains of dependent cache misses; where a search knows the next address it may read
//! before the current miss resolves, asking for it early overlaps the two waits. A prefetch
//! changes no result and never faults, even for an address that is not mapped, so a wrong
//! guess costs only memory bandwidth.

/// Starts loading the cache line holding `address` into every cache level. A no-op on
/// targets without a stable prefetch instruction.
#[inline(always)]
pub fn prefetch_read<T>(address: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is a hint: it reads nothing the program can observe and cannot
    // fault on any address (Intel SDM, "PREFETCHh"), so any pointer value is fine.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(address.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

/// The bytes of a cache line, the unit a prefetch loads.
pub(crate) const CACHE_LINE: usize = 64;

/// Starts loading every cache line that holds a byte of `items`. A hint only.
#[inline]
pub(crate) fn prefetch_lines<T>(items: &[T]) {
    let start = items.as_ptr().cast::<u8>();
    let misalignment = start.addr() % CACHE_LINE;
    // `wrapping_*`: the addresses are only hints, never dereferenced, so computing one
    // just outside the slice (its line's start) needs no `unsafe` claim.
    let first_line = start.wrapping_sub(misalignment);
    let span = misalignment + size_of_val(items);
    let mut offset = 0;
    while offset < span {
        prefetch_read(first_line.wrapping_add(offset));
        offset += CACHE_LINE;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetching_any_range_changes_nothing() {
        let bytes: Vec<u8> = (0..=255).collect();
        for start in [0, 1, 63, 64, 200] {
            for len in [0, 1, 64, 65] {
                let end = (start + len).min(bytes.len());
                prefetch_lines(&bytes[start..end]);
            }
        }
        prefetch_lines::<u64>(&[]);
        assert_eq!(bytes, (0..=255).collect::<Vec<u8>>());
    }
}
