//! A bloom filter over the user keys of one memtable, so a point lookup of a key the memtable
//! does not hold skips the skiplist search (`RocksDB`'s memtable whole-key filtering). The
//! search it saves is a chain of dependent cache misses through a large skiplist; a probe is
//! one hash and one cache line.
//!
//! Cache-line blocked: a key's hash picks one 64-byte line and sets [`PROBES`] bits in it, so
//! adding and probing touch one line. Writers add while readers probe: bits are set with an
//! atomic OR on 64-bit words and read with plain atomic loads; no lock.
//!
//! Invariants:
//! 1. Bits are only ever set, never cleared: a key once added answers "may contain" for the
//!    filter's life.
//! 2. `MemTable::add` adds a key before it links the key's entry into the skiplist (bulk builds
//!    add every key before the memtable is shared). The skiplist publishes the entry with a
//!    Release CAS and readers reach it through Acquire loads, and the Db publishes the
//!    entry's sequence number with a Release store after the insert; so a reader that can see
//!    the entry, through the list or through its sequence number, also sees the key's bits.
//!    The filter therefore never hides a visible entry (no false negatives).
//! 3. Equal user keys are equal bytes (the hash is over bytes, as for table filters).

use std::sync::atomic::{AtomicU64, Ordering};

/// Bits set (and checked) per key, all within one cache line. Six suits about 8 to 16 bits a
/// key: at the default ratio and 144-byte entries, 11.5 bits a key, about 1% false positives.
const PROBES: u32 = 6;

/// Words per 64-byte line.
const LINE_WORDS: usize = 8;

/// One cache line of filter bits.
#[repr(align(64))]
struct Line([AtomicU64; LINE_WORDS]);

/// A concurrent, add-only bloom filter over byte strings. See the module docs.
pub(super) struct MemTableBloom {
    lines: Box<[Line]>,
}

/// The 64-bit hash the filter uses: the table filters' (xxh3), so a lookup could share it.
#[inline]
pub(super) fn key_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

impl MemTableBloom {
    /// A filter of about `bytes` bytes (whole lines, at least one).
    pub(super) fn with_bytes(bytes: usize) -> Self {
        let count = bytes.div_ceil(std::mem::size_of::<Line>()).max(1);
        MemTableBloom {
            lines: (0..count)
                .map(|_| Line(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
        }
    }

    /// Bytes the filter holds.
    pub(super) fn size_bytes(&self) -> usize {
        self.lines.len() * std::mem::size_of::<Line>()
    }

    /// Adds the key whose [`key_hash`] is `hash`; safe to call from many threads at once.
    #[inline]
    pub(super) fn add_hash(&self, hash: u64) {
        let (line, masks) = self.locate(hash);
        for (word, mask) in line.0.iter().zip(masks) {
            // Skipping words already holding the bits keeps repeated keys from writing the
            // line (and taking it from other cores' caches).
            if mask != 0 && word.load(Ordering::Relaxed) & mask != mask {
                word.fetch_or(mask, Ordering::Relaxed);
            }
        }
    }

    /// False only if the key whose [`key_hash`] is `hash` was never added (invariant 2 says
    /// when an add is seen).
    #[inline]
    pub(super) fn may_contain_hash(&self, hash: u64) -> bool {
        let (line, masks) = self.locate(hash);
        line.0
            .iter()
            .zip(masks)
            .all(|(word, mask)| word.load(Ordering::Relaxed) & mask == mask)
    }

    /// The line `hash` picks and the bits it needs in each of the line's words.
    #[inline]
    fn locate(&self, hash: u64) -> (&Line, [u64; LINE_WORDS]) {
        // The high half picks the line (multiply-shift instead of a modulo); the low half,
        // remixed per probe, picks bits within it: 9 bits address 512.
        let index = ((hash >> 32) * self.lines.len() as u64) >> 32;
        let mut masks = [0u64; LINE_WORDS];
        let mut bits = hash.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        for _ in 0..PROBES {
            let bit = (bits >> 55) as usize;
            if let Some(mask) = masks.get_mut(bit / 64) {
                *mask |= 1 << (bit % 64);
            }
            bits = bits.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
        // In bounds: `(hash >> 32) < 2^32`, so `index < len`.
        (&self.lines[index as usize], masks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u64) -> Vec<u8> {
        format!("key{i:013}").into_bytes()
    }

    #[test]
    fn added_keys_are_always_found_and_others_mostly_not() {
        let n = 10_000u64;
        // 11.5 bits a key, as the default ratio gives for 144-byte memtable entries.
        let bloom = MemTableBloom::with_bytes((n as usize * 23).div_ceil(16));
        for i in 0..n {
            bloom.add_hash(key_hash(&key(i)));
        }
        for i in 0..n {
            assert!(bloom.may_contain_hash(key_hash(&key(i))), "key {i} lost");
        }
        let false_positives = (n..11 * n)
            .filter(|&i| bloom.may_contain_hash(key_hash(&key(i))))
            .count();
        let rate = false_positives as f64 / (10 * n) as f64;
        assert!(rate < 0.03, "false positive rate {rate}");
    }

    #[test]
    fn an_empty_filter_contains_nothing_and_a_tiny_one_still_works() {
        let bloom = MemTableBloom::with_bytes(0);
        assert_eq!(bloom.size_bytes(), 64);
        assert!(!bloom.may_contain_hash(key_hash(b"a")));
        bloom.add_hash(key_hash(b"a"));
        assert!(bloom.may_contain_hash(key_hash(b"a")));
        assert_eq!(MemTableBloom::with_bytes(65).size_bytes(), 128);
    }

    #[test]
    fn concurrent_adds_lose_no_bits() {
        let bloom = MemTableBloom::with_bytes(4096);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let bloom = &bloom;
                s.spawn(move || {
                    for i in 0..5_000 {
                        bloom.add_hash(key_hash(&key(t * 1_000_000 + i)));
                    }
                });
            }
        });
        for t in 0..4u64 {
            for i in 0..5_000 {
                assert!(bloom.may_contain_hash(key_hash(&key(t * 1_000_000 + i))));
            }
        }
    }
}
