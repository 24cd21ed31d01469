//! A shard's hash index: an open-addressing table from a key's hash tag to the slab slot of its
//! entry.
//!
//! A bucket is one `u64`: the key's 32-bit tag (bits of its hash) in the high half, its slot
//! plus one in the low half, and 0 for an empty bucket. A lookup scans the buckets from the
//! tag's home (`tag & mask`) to the first empty one, eight to a cache line, and asks the caller
//! to compare keys only where the tag matches. So a hit reads the bucket's line and then the
//! entry's, and a miss usually the bucket's line alone. (A `HashMap<CacheKey, u32>` read a
//! control-byte line, then the bucket's line, and then the slab entry's.)
//!
//! Invariants:
//! 1. At most half the buckets are full, so every scan ends at an empty bucket, after about
//!    1.5 buckets for a hit and 2.5 for a miss on average.
//! 2. Linear probing without tombstones: between a full bucket's home and its position there
//!    is no empty bucket. `remove_at` shifts the later buckets of the run back to keep it.
//! 3. A slot is in at most one bucket (the shard puts exactly its live slots in).

/// Buckets of a new index: 128 bytes, so that a cache of many tiny shards stays small.
const INITIAL_BUCKETS: usize = 16;

pub(super) struct SlotIndex {
    /// A power of two long.
    buckets: Box<[u64]>,
    /// Full buckets.
    len: usize,
}

impl SlotIndex {
    pub(super) fn new() -> Self {
        SlotIndex {
            buckets: vec![0; INITIAL_BUCKETS].into_boxed_slice(),
            len: 0,
        }
    }

    /// Number of slots in the index.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The position and slot of the first bucket with `tag` whose slot `is_wanted` accepts.
    #[inline]
    pub(super) fn find(
        &self,
        tag: u32,
        mut is_wanted: impl FnMut(u32) -> bool,
    ) -> Option<(usize, u32)> {
        let mask = self.buckets.len() - 1;
        let mut position = tag as usize & mask;
        loop {
            let bucket = self.buckets[position];
            if bucket == 0 {
                return None;
            }
            if bucket_tag(bucket) == tag {
                let slot = bucket_slot(bucket);
                if is_wanted(slot) {
                    return Some((position, slot));
                }
            }
            position = (position + 1) & mask;
        }
    }

    /// Adds `slot` under `tag` (`slot < u32::MAX`, and not in the index), doubling the buckets
    /// first if that would fill more than half of them (invariant 1).
    pub(super) fn insert(&mut self, tag: u32, slot: u32) {
        debug_assert!(slot < u32::MAX, "slot {slot} has no bucket encoding");
        if (self.len + 1) * 2 > self.buckets.len() {
            self.grow();
        }
        place(
            &mut self.buckets,
            u64::from(tag) << 32 | u64::from(slot + 1),
        );
        self.len += 1;
    }

    /// Empties the bucket at `position` (from [`Self::find`]), then moves back each later
    /// bucket of its run whose home is not after the hole, so no scan stops short (invariant 2).
    pub(super) fn remove_at(&mut self, position: usize) {
        let mask = self.buckets.len() - 1;
        let mut hole = position;
        self.buckets[hole] = 0;
        self.len -= 1;
        let mut next = hole;
        loop {
            next = (next + 1) & mask;
            let bucket = self.buckets[next];
            if bucket == 0 {
                return;
            }
            let wanted = bucket_tag(bucket) as usize & mask;
            // Movable when the hole lies cyclically in `wanted..next` (its home up to it).
            if next.wrapping_sub(wanted) & mask >= next.wrapping_sub(hole) & mask {
                self.buckets[hole] = bucket;
                self.buckets[next] = 0;
                hole = next;
            }
        }
    }

    fn grow(&mut self) {
        let mut buckets = vec![0; self.buckets.len() * 2].into_boxed_slice();
        for &bucket in self.buckets.iter().filter(|&&bucket| bucket != 0) {
            place(&mut buckets, bucket);
        }
        self.buckets = buckets;
    }

    /// Checks invariants 1-3 and returns every `(tag, slot)` (tests only: it walks the table).
    #[cfg(test)]
    pub(super) fn check(&self) -> Vec<(u32, u32)> {
        let mask = self.buckets.len() - 1;
        assert!(self.buckets.len().is_power_of_two());
        assert!(self.len * 2 <= self.buckets.len(), "more than half full");
        let mut full = Vec::new();
        for (position, &bucket) in self.buckets.iter().enumerate() {
            if bucket == 0 {
                continue;
            }
            let home = bucket_tag(bucket) as usize & mask;
            let mut scan = home;
            while scan != position {
                assert_ne!(
                    self.buckets[scan], 0,
                    "empty bucket in the run before {position}"
                );
                scan = (scan + 1) & mask;
            }
            full.push((bucket_tag(bucket), bucket_slot(bucket)));
        }
        assert_eq!(full.len(), self.len);
        let mut slots: Vec<u32> = full.iter().map(|&(_, slot)| slot).collect();
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), full.len(), "a slot in two buckets");
        full
    }
}

/// Puts `bucket` in the first empty bucket from its home.
fn place(buckets: &mut [u64], bucket: u64) {
    let mask = buckets.len() - 1;
    let mut position = bucket_tag(bucket) as usize & mask;
    while buckets[position] != 0 {
        position = (position + 1) & mask;
    }
    buckets[position] = bucket;
}

fn bucket_tag(bucket: u64) -> u32 {
    (bucket >> 32) as u32
}

fn bucket_slot(bucket: u64) -> u32 {
    (bucket as u32).wrapping_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;

    #[test]
    fn matches_a_map_through_collisions_growth_and_removals() {
        let mut rng = StdRng::seed_from_u64(7);
        for tag_bits in [3u32, 8, 32] {
            let mut index = SlotIndex::new();
            // slot -> tag: few distinct tags make long runs of equal and neighbouring homes.
            let mut model: HashMap<u32, u32> = HashMap::new();
            let mut next_slot = 0u32;
            for step in 0..20_000 {
                if rng.gen_bool(0.55) || model.is_empty() {
                    let tag = rng.gen::<u32>() >> (32 - tag_bits);
                    index.insert(tag, next_slot);
                    model.insert(next_slot, tag);
                    next_slot += 1;
                } else {
                    let slots: Vec<u32> = model.keys().copied().collect();
                    let slot = slots[rng.gen_range(0..slots.len())];
                    let tag = model[&slot];
                    let (position, found) = index
                        .find(tag, |candidate| candidate == slot)
                        .expect("a slot in the index is found");
                    assert_eq!(found, slot);
                    index.remove_at(position);
                    model.remove(&slot);
                    assert!(index.find(tag, |candidate| candidate == slot).is_none());
                }
                if step % 500 == 0 {
                    let mut listed = index.check();
                    listed.sort_unstable_by_key(|&(_, slot)| slot);
                    let mut expected: Vec<(u32, u32)> =
                        model.iter().map(|(&slot, &tag)| (tag, slot)).collect();
                    expected.sort_unstable_by_key(|&(_, slot)| slot);
                    assert_eq!(listed, expected, "tag bits {tag_bits}, step {step}");
                }
                for (&slot, &tag) in model.iter().take(3) {
                    assert_eq!(
                        index
                            .find(tag, |candidate| candidate == slot)
                            .map(|(_, s)| s),
                        Some(slot)
                    );
                }
            }
            assert_eq!(index.len(), model.len());
        }
    }

    #[test]
    fn a_miss_stops_at_the_first_empty_bucket() {
        let mut index = SlotIndex::new();
        index.insert(5, 0);
        index.insert(5, 1);
        let mut asked = Vec::new();
        assert!(index
            .find(5, |slot| {
                asked.push(slot);
                false
            })
            .is_none());
        assert_eq!(
            asked,
            [0, 1],
            "only the two buckets with the tag are offered"
        );
        // Tag 6's home holds a tag-5 bucket: skipped without asking.
        assert!(index
            .find(6, |_| unreachable!("no bucket has tag 6"))
            .is_none());
        assert_eq!(index.find(5, |slot| slot == 1), Some((6, 1)));
    }
}
