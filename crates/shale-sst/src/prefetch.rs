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
