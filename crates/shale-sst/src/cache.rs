//! The block cache: a sharded LRU of uncompressed blocks, shared by every open table.
//!
//! Keys are `(file_id, offset)`: each open table takes a fresh id from
//! [`ShardedLru::new_file_id`], so the blocks of a deleted and recreated file never alias. Values
//! are `Arc`s, so a reader keeps using a block after it is evicted. Nothing here is on disk; the
//! cached blocks are the decompressed contents described in docs/format/sst.md.
//!
//! Each shard is a mutex around a hash map from key to a slot in a slab of entries, threaded on
//! two intrusive doubly linked lists (most recently used at the head): the low-priority list
//! (data blocks) and the high-priority list (index and filter blocks). Get, insert, erase and
//! evict are O(1).
//!
//! Invariants, per shard (checked by `check_locked` in tests):
//! 1. Every live slot is in the map and in exactly one list; every free slot is in `free`, in no
//!    list, and holds no value.
//! 2. `usage` is the sum of live charges, `reserved` the sum of outstanding reservations, and
//!    `usage + reserved <= capacity` after every operation (the strict budget: a block's charge
//!    is reserved before it is read, see [`ShardedLru::reserve`]); `pinned <= reserved` is the
//!    part held by [`PinnedCharge`]s (memory kept outside the cache but counted in its budget)
//!    and `pinned <= high_capacity`;
//!    `high_usage` is the sum of the charges in the high list and `<= high_capacity`.
//! 3. Eviction takes the least recently used low entry; high entries are evicted only when the
//!    low list is empty. When high entries exceed `high_capacity`, the oldest ones are demoted
//!    to the head of the low list; a demoted entry returns to the high list when it is next hit.
//! 4. An entry whose charge exceeds the shard capacity is never cached. A charge of 0 counts as
//!    1, so the number of entries is bounded by the capacity.
//! 5. Hit, miss, insert and eviction counters live inside the shard, so readers of different
//!    shards never touch a shared cache line.
//! 6. A hit moves its entry to the head of its list unless the entry got there within the
//!    last `len / 4` moves (and is in the list its priority names): such an entry has at most
//!    that many entries ahead of it, so the order is LRU up to the newest quarter, and the hot
//!    entries (index and filter blocks, hit on every lookup) cost no list writes.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The cache of uncompressed blocks shared by tables.
pub type BlockCache = ShardedLru<dyn std::any::Any + Send + Sync>;

/// Identifies a cached block: the opening table's id and the block's file offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheKey {
    /// From [`ShardedLru::new_file_id`], unique per opened table.
    pub file_id: u64,
    /// File offset of the block.
    pub offset: u64,
}

/// How long an entry should stay: high entries (index and filter blocks) outlive low ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// Data blocks.
    Low,
    /// Index and filter blocks, evicted only after every low entry of their shard.
    High,
}

/// Counters and sizes summed over all shards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups that found their entry.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Entries cached (replacements included; oversized entries not cached are not counted).
    pub inserts: u64,
    /// Bytes charged by [`PinnedCharge`]s: kept outside the cache (index and filter blocks
    /// pinned by open tables) but counted in its budget, beside `usage`.
    pub pinned: u64,
    /// Entries evicted to make room.
    pub evictions: u64,
    /// Sum of the charges of cached entries.
    pub usage: u64,
    /// The configured capacity.
    pub capacity: u64,
    /// Cached entries.
    pub entries: u64,
}

/// Smallest shard [`ShardedLru::new`] creates, so one large block cannot flush a shard.
const MIN_SHARD_CAPACITY: usize = 512 << 10;
/// Most shard bits [`ShardedLru::new`] picks (64 shards).
const MAX_AUTO_SHARD_BITS: u32 = 6;
/// Most shard bits [`ShardedLru::with_shards`] accepts.
const MAX_SHARD_BITS: u32 = 16;
const DEFAULT_HIGH_PRIORITY_RATIO: f64 = 0.5;

/// A sharded, size-bounded LRU cache from [`CacheKey`] to `Arc<V>`.
pub struct ShardedLru<V: ?Sized> {
    shards: Box<[PaddedShard<V>]>,
    shard_mask: usize,
    capacity: usize,
    next_file_id: AtomicU64,
}

/// A shard on its own cache lines, so locking one does not slow its neighbours.
#[repr(align(64))]
struct PaddedShard<V: ?Sized>(Mutex<Shard<V>>);

impl<V: ?Sized> fmt::Debug for ShardedLru<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedLru")
            .field("capacity", &self.capacity)
            .field("usage", &self.usage())
            .finish_non_exhaustive()
    }
}

impl<V: ?Sized> ShardedLru<V> {
    /// A cache of `capacity_bytes` with as many shards (a power of two, at most 64) as keep
    /// each shard at 512 KiB or more.
    pub fn new(capacity_bytes: usize) -> Self {
        let mut bits = 0;
        while bits < MAX_AUTO_SHARD_BITS && capacity_bytes >> (bits + 1) >= MIN_SHARD_CAPACITY {
            bits += 1;
        }
        Self::with_shards(capacity_bytes, bits)
    }

    /// A cache of `capacity_bytes` split over `2^num_shard_bits` shards (at most `2^16`).
    pub fn with_shards(capacity_bytes: usize, num_shard_bits: u32) -> Self {
        let num_shards = 1usize << num_shard_bits.min(MAX_SHARD_BITS);
        let shards = (0..num_shards)
            .map(|i| {
                // Spread the remainder so the shard capacities add up to the total.
                let capacity =
                    capacity_bytes / num_shards + usize::from(i < capacity_bytes % num_shards);
                PaddedShard(Mutex::new(Shard::new(
                    capacity,
                    DEFAULT_HIGH_PRIORITY_RATIO,
                )))
            })
            .collect();
        ShardedLru {
            shards,
            shard_mask: num_shards - 1,
            capacity: capacity_bytes,
            next_file_id: AtomicU64::new(1),
        }
    }

    /// Sets the share of each shard's capacity high-priority entries may hold (clamped to
    /// `0.0..=1.0`; default 0.5). Beyond it, the oldest high entries become low ones.
    #[must_use]
    pub fn with_high_priority_ratio(self, ratio: f64) -> Self {
        for shard in &self.shards {
            let mut shard = lock(shard);
            shard.high_capacity = high_capacity(shard.capacity, ratio);
            shard.balance_high();
        }
        self
    }

    /// The entry for `key`, which becomes the most recently used of its shard.
    pub fn get(&self, key: &CacheKey) -> Option<Arc<V>> {
        lock(self.shard(key)).get(key)
    }

    /// Caches `value` under `key`, replacing any existing entry, and evicts least recently used
    /// entries until it fits. A value whose charge exceeds its shard's capacity is not cached
    /// (and any existing entry for `key` is removed).
    pub fn insert(&self, key: CacheKey, value: Arc<V>, charge: usize, priority: Priority) {
        // Values displaced here are dropped after the lock is released.
        let displaced = lock(self.shard(&key)).insert(key, value, charge.max(1), priority);
        drop(displaced);
    }

    /// Charges `charge` bytes for `key` before the value exists (before a block is read), so
    /// that concurrent reads cannot overshoot the budget: evicts to make room, and returns
    /// `None` when the space cannot be found (the caller then reads without caching). The
    /// reservation is released when filled or dropped.
    pub fn reserve(&self, key: CacheKey, charge: usize) -> Option<CacheReservation<'_, V>> {
        let charge = charge.max(1);
        let mut displaced = Displaced::default();
        let reserved = lock(self.shard(&key)).reserve(charge, &mut displaced);
        drop(displaced);
        // Lazily: a reservation built and dropped would release a charge never taken.
        reserved.then(|| CacheReservation {
            cache: self,
            key,
            charge,
            filled: false,
        })
    }

    /// Charges `charge` bytes to `key`'s shard for as long as the returned guard lives: memory
    /// kept outside the cache (an open table's pinned index or filter) that the budget must
    /// still count. Evicts to make room; `None` when the shard cannot find it or its pinned
    /// charges would pass its high-priority share (so pins never crowd out the data blocks).
    pub fn charge_pinned(
        self: &Arc<Self>,
        key: CacheKey,
        charge: usize,
    ) -> Option<PinnedCharge<V>> {
        let charge = charge.max(1);
        let mut displaced = Displaced::default();
        let mut shard = lock(self.shard(&key));
        let charged =
            shard.pinned + charge <= shard.high_capacity && shard.reserve(charge, &mut displaced);
        if charged {
            shard.pinned += charge;
        }
        drop(shard);
        drop(displaced);
        charged.then(|| PinnedCharge {
            cache: Arc::clone(self),
            key,
            charge,
        })
    }

    /// Removes the entry for `key`, if any.
    pub fn erase(&self, key: &CacheKey) {
        let mut shard = lock(self.shard(key));
        let removed = shard.map.get(key).copied().map(|slot| shard.remove(slot));
        drop(shard);
        drop(removed);
    }

    /// A file id never returned before by this cache (the first is 1).
    pub fn new_file_id(&self) -> u64 {
        self.next_file_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The largest charge every shard keeps at high priority without demoting it: the
    /// smallest shard's high-priority share. A high-priority value above it would be demoted
    /// to the low list at once (or not cached at all above the shard capacity), so callers
    /// that cannot afford to reload it keep it themselves instead.
    pub fn high_priority_room(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| lock(shard).high_capacity)
            .min()
            .unwrap_or(0)
    }

    /// The configured capacity in bytes (sum of the shard capacities).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The sum of the charges of the cached entries.
    pub fn usage(&self) -> usize {
        self.shards.iter().map(|shard| lock(shard).usage).sum()
    }

    /// Counters and sizes summed over the shards (each shard read at a slightly different
    /// moment).
    pub fn stats(&self) -> CacheStats {
        let mut stats = CacheStats {
            capacity: self.capacity as u64,
            ..CacheStats::default()
        };
        for shard in &self.shards {
            let shard = lock(shard);
            stats.hits += shard.hits;
            stats.misses += shard.misses;
            stats.inserts += shard.inserts;
            stats.pinned += shard.pinned as u64;
            stats.evictions += shard.evictions;
            stats.usage += shard.usage as u64;
            stats.entries += shard.map.len() as u64;
        }
        stats
    }

    fn shard(&self, key: &CacheKey) -> &PaddedShard<V> {
        let h = fmix64(key.file_id.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ key.offset);
        // High bits: the shard map's own hasher mixes differently, but keep them apart anyway.
        &self.shards[(h >> 40) as usize & self.shard_mask]
    }
}

/// Locks a shard. A panic while holding the lock cannot leave a shard half-updated (the
/// operations do not panic between their steps), so a poisoned lock is simply taken over.
/// Space charged in the cache before its value exists; see [`ShardedLru::reserve`].
pub struct CacheReservation<'a, V: ?Sized> {
    cache: &'a ShardedLru<V>,
    key: CacheKey,
    charge: usize,
    filled: bool,
}

impl<V: ?Sized> fmt::Debug for CacheReservation<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheReservation")
            .field("key", &self.key)
            .field("charge", &self.charge)
            .finish()
    }
}

impl<V: ?Sized> CacheReservation<'_, V> {
    /// Caches `value` in the reserved space; `charge` is its real size, which may differ from
    /// the reserved estimate (more is evicted if it is larger).
    pub fn fill(mut self, value: Arc<V>, charge: usize, priority: Priority) {
        let mut shard = lock(self.cache.shard(&self.key));
        shard.reserved -= self.charge;
        self.filled = true;
        let displaced = shard.insert(self.key, value, charge.max(1), priority);
        drop(shard);
        drop(displaced);
    }
}

impl<V: ?Sized> Drop for CacheReservation<'_, V> {
    fn drop(&mut self) {
        if !self.filled {
            lock(self.cache.shard(&self.key)).reserved -= self.charge;
        }
    }
}

/// Bytes charged to the cache for memory held outside it; see [`ShardedLru::charge_pinned`].
/// Released when dropped.
pub struct PinnedCharge<V: ?Sized> {
    cache: Arc<ShardedLru<V>>,
    key: CacheKey,
    charge: usize,
}

impl<V: ?Sized> fmt::Debug for PinnedCharge<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedCharge")
            .field("key", &self.key)
            .field("charge", &self.charge)
            .finish_non_exhaustive()
    }
}

impl<V: ?Sized> PinnedCharge<V> {
    /// The bytes charged.
    pub fn charge(&self) -> usize {
        self.charge
    }
}

impl<V: ?Sized> Drop for PinnedCharge<V> {
    fn drop(&mut self) {
        let mut shard = lock(self.cache.shard(&self.key));
        shard.reserved -= self.charge;
        shard.pinned -= self.charge;
    }
}

fn lock<V: ?Sized>(shard: &PaddedShard<V>) -> MutexGuard<'_, Shard<V>> {
    shard.0.lock().unwrap_or_else(PoisonError::into_inner)
}

fn high_capacity(capacity: usize, ratio: f64) -> usize {
    let ratio = if ratio.is_nan() {
        0.0
    } else {
        ratio.clamp(0.0, 1.0)
    };
    // Exact for the capacities a cache can have (well below 2^53); never negative.
    #[allow(clippy::cast_sign_loss)]
    let high = ((capacity as f64) * ratio) as usize;
    high
}

/// `MurmurHash3`'s 64-bit finaliser: every input bit affects every output bit.
#[inline]
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// A cheap hasher for [`CacheKey`] (two `write_u64` calls); `SipHash` would cost more than the
/// rest of a lookup. Keys are not attacker-chosen: ids come from a counter, offsets from files.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(23) ^ v).wrapping_mul(0x2545_f491_4f6c_dd1d);
    }

    #[inline]
    fn finish(&self) -> u64 {
        fmix64(self.0)
    }
}

/// Values removed under the lock, to be dropped after it is released (a block's memory is
/// freed when its last `Arc` goes). Inline up to four so that the usual insert, which evicts
/// one or two entries, does not allocate.
struct Displaced<V: ?Sized> {
    inline: [Option<Arc<V>>; 4],
    len: usize,
    spill: Vec<Arc<V>>,
}

impl<V: ?Sized> Default for Displaced<V> {
    fn default() -> Self {
        Displaced {
            inline: [None, None, None, None],
            len: 0,
            spill: Vec::new(),
        }
    }
}

impl<V: ?Sized> Displaced<V> {
    fn push(&mut self, value: Arc<V>) {
        if let Some(slot) = self.inline.get_mut(self.len) {
            *slot = Some(value);
            self.len += 1;
        } else {
            self.spill.push(value);
        }
    }
}

const NIL: u32 = u32::MAX;
const LOW: usize = 0;
const HIGH: usize = 1;

struct Entry<V: ?Sized> {
    key: CacheKey,
    /// `None` exactly when the slot is free.
    value: Option<Arc<V>>,
    charge: usize,
    /// Towards the head (more recently used).
    prev: u32,
    /// Towards the tail (less recently used).
    next: u32,
    /// Which list the entry is in: [`LOW`] or [`HIGH`].
    list: usize,
    /// Whether it was inserted with [`Priority::High`].
    high_priority: bool,
    /// The shard's `tick` when the entry was last put at the head of its list.
    moved_at: u64,
}

#[derive(Clone, Copy)]
struct List {
    /// Most recently used.
    head: u32,
    /// Least recently used: the next to go.
    tail: u32,
}

struct Shard<V: ?Sized> {
    map: HashMap<CacheKey, u32, BuildHasherDefault<KeyHasher>>,
    entries: Vec<Entry<V>>,
    free: Vec<u32>,
    lists: [List; 2],
    capacity: usize,
    high_capacity: usize,
    usage: usize,
    reserved: usize,
    /// The part of `reserved` held by [`PinnedCharge`]s.
    pinned: usize,
    high_usage: usize,
    hits: u64,
    misses: u64,
    inserts: u64,
    evictions: u64,
    /// Counts moves to a list head; an entry moved at most `len / 4` moves ago has at most
    /// that many entries ahead of it, so a hit leaves it in place (invariant 6).
    tick: u64,
}

impl<V: ?Sized> Shard<V> {
    fn new(capacity: usize, high_priority_ratio: f64) -> Self {
        Shard {
            map: HashMap::default(),
            entries: Vec::new(),
            free: Vec::new(),
            lists: [List {
                head: NIL,
                tail: NIL,
            }; 2],
            capacity,
            high_capacity: high_capacity(capacity, high_priority_ratio),
            usage: 0,
            reserved: 0,
            pinned: 0,
            high_usage: 0,
            hits: 0,
            misses: 0,
            inserts: 0,
            evictions: 0,
            tick: 0,
        }
    }

    fn get(&mut self, key: &CacheKey) -> Option<Arc<V>> {
        let Some(&slot) = self.map.get(key) else {
            self.misses += 1;
            return None;
        };
        self.hits += 1;
        let entry = &self.entries[slot as usize];
        let value = entry.value.clone();
        let list = if entry.high_priority { HIGH } else { LOW };
        let recent = self.tick - entry.moved_at <= self.map.len() as u64 / 4;
        if recent && entry.list == list {
            return value;
        }
        self.unlink(slot);
        self.push_front(slot, list);
        if list == HIGH {
            self.balance_high();
        }
        value
    }

    /// Evicts least recently used entries (low list first) until `charge` more bytes fit
    /// beside the cached entries and the reservations, or nothing is left to evict.
    fn evict_for(&mut self, charge: usize, displaced: &mut Displaced<V>) {
        while self.usage + self.reserved + charge > self.capacity {
            let victim = match self.lists[LOW].tail {
                NIL => self.lists[HIGH].tail,
                tail => tail,
            };
            if victim == NIL {
                break;
            }
            displaced.push(self.remove(victim));
            self.evictions += 1;
        }
    }

    /// Reserves `charge` bytes (evicting to make room); false if they cannot fit.
    fn reserve(&mut self, charge: usize, displaced: &mut Displaced<V>) -> bool {
        if charge > self.capacity {
            return false;
        }
        self.evict_for(charge, displaced);
        if self.usage + self.reserved + charge > self.capacity {
            return false;
        }
        self.reserved += charge;
        true
    }

    /// Inserts an entry (`charge >= 1`); returns the values it displaced so the caller can drop
    /// them outside the lock.
    fn insert(
        &mut self,
        key: CacheKey,
        value: Arc<V>,
        charge: usize,
        priority: Priority,
    ) -> Displaced<V> {
        let mut displaced = Displaced::default();
        if let Some(&slot) = self.map.get(&key) {
            displaced.push(self.remove(slot));
        }
        if charge > self.capacity || (self.free.is_empty() && self.entries.len() >= NIL as usize) {
            return displaced;
        }
        self.evict_for(charge, &mut displaced);
        if self.usage + self.reserved + charge > self.capacity {
            return displaced; // outstanding reservations hold the space
        }
        let high_priority = priority == Priority::High;
        let entry = Entry {
            key,
            value: Some(value),
            charge,
            prev: NIL,
            next: NIL,
            list: LOW,
            high_priority,
            moved_at: 0,
        };
        let slot = if let Some(slot) = self.free.pop() {
            self.entries[slot as usize] = entry;
            slot
        } else {
            self.entries.push(entry);
            (self.entries.len() - 1) as u32
        };
        self.map.insert(key, slot);
        self.usage += charge;
        self.inserts += 1;
        self.push_front(slot, if high_priority { HIGH } else { LOW });
        if high_priority {
            self.balance_high();
        }
        displaced
    }

    /// Removes a live entry and returns its value.
    fn remove(&mut self, slot: u32) -> Arc<V> {
        self.unlink(slot);
        let entry = &mut self.entries[slot as usize];
        let value = entry.value.take();
        let (key, charge) = (entry.key, entry.charge);
        self.map.remove(&key);
        self.usage -= charge;
        self.free.push(slot);
        // Every live slot holds a value (invariant 1).
        value.unwrap_or_else(|| unreachable!("cache slot {slot} in a list without a value"))
    }

    /// Demotes the oldest high entries to the head of the low list until the high list is
    /// within its share.
    fn balance_high(&mut self) {
        while self.high_usage > self.high_capacity {
            let slot = self.lists[HIGH].tail;
            if slot == NIL {
                break;
            }
            self.unlink(slot);
            self.push_front(slot, LOW);
        }
    }

    fn unlink(&mut self, slot: u32) {
        let Entry {
            prev,
            next,
            list,
            charge,
            ..
        } = self.entries[slot as usize];
        if prev == NIL {
            self.lists[list].head = next;
        } else {
            self.entries[prev as usize].next = next;
        }
        if next == NIL {
            self.lists[list].tail = prev;
        } else {
            self.entries[next as usize].prev = prev;
        }
        if list == HIGH {
            self.high_usage -= charge;
        }
        let entry = &mut self.entries[slot as usize];
        entry.prev = NIL;
        entry.next = NIL;
    }

    fn push_front(&mut self, slot: u32, list: usize) {
        self.tick += 1;
        let head = self.lists[list].head;
        let entry = &mut self.entries[slot as usize];
        entry.moved_at = self.tick;
        entry.prev = NIL;
        entry.next = head;
        entry.list = list;
        if list == HIGH {
            self.high_usage += entry.charge;
        }
        if head == NIL {
            self.lists[list].tail = slot;
        } else {
            self.entries[head as usize].prev = slot;
        }
        self.lists[list].head = slot;
    }

    /// Checks invariants 1 and 2 (tests only: it walks the whole shard).
    #[cfg(test)]
    fn check_locked(&self) {
        let mut seen = 0;
        let mut usage = 0;
        for list in [LOW, HIGH] {
            let mut list_usage = 0;
            let mut prev = NIL;
            let mut slot = self.lists[list].head;
            while slot != NIL {
                let entry = &self.entries[slot as usize];
                assert_eq!(entry.prev, prev);
                assert_eq!(entry.list, list);
                assert!(entry.value.is_some());
                assert_eq!(self.map.get(&entry.key), Some(&slot));
                list_usage += entry.charge;
                seen += 1;
                prev = slot;
                slot = entry.next;
            }
            assert_eq!(self.lists[list].tail, prev);
            if list == HIGH {
                assert_eq!(list_usage, self.high_usage);
                assert!(self.high_usage <= self.high_capacity);
            }
            usage += list_usage;
        }
        assert_eq!(seen, self.map.len());
        assert_eq!(seen + self.free.len(), self.entries.len());
        assert!(self
            .free
            .iter()
            .all(|&slot| self.entries[slot as usize].value.is_none()));
        assert_eq!(usage, self.usage);
        assert!(self.usage + self.reserved <= self.capacity);
        assert!(self.pinned <= self.reserved && self.pinned <= self.high_capacity);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn key(offset: u64) -> CacheKey {
        CacheKey { file_id: 1, offset }
    }

    fn value(n: u64) -> Arc<Vec<u8>> {
        Arc::new(n.to_le_bytes().to_vec())
    }

    fn check(cache: &ShardedLru<Vec<u8>>) {
        for shard in &cache.shards {
            lock(shard).check_locked();
        }
    }

    #[test]
    fn is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<ShardedLru<Vec<u8>>>();
    }

    #[test]
    fn shard_count_follows_capacity() {
        let shards = |capacity| ShardedLru::<Vec<u8>>::new(capacity).shards.len();
        assert_eq!(shards(0), 1);
        assert_eq!(shards(600 << 10), 1);
        assert_eq!(shards(1 << 20), 2);
        assert_eq!(shards(8 << 20), 16);
        assert_eq!(shards(1 << 30), 64);
        let cache = ShardedLru::<Vec<u8>>::with_shards(1001, 2);
        assert_eq!(cache.shards.len(), 4);
        let total: usize = cache.shards.iter().map(|s| lock(s).capacity).sum();
        assert_eq!(total, 1001);
        assert_eq!(cache.capacity(), 1001);
        assert!(format!("{cache:?}").contains("capacity: 1001"));
    }

    #[test]
    fn pinned_charges_count_in_the_budget_until_dropped() {
        let cache = Arc::new(ShardedLru::with_shards(10_000, 0));
        for i in 0..10 {
            cache.insert(key(i), value(i), 1_000, Priority::Low);
        }
        assert_eq!(cache.usage(), 10_000);
        // Room is made by evicting data blocks; the charge is held outside the entries.
        let pin = cache
            .charge_pinned(key(100), 3_000)
            .expect("half the shard is the room");
        assert_eq!(cache.usage(), 7_000);
        assert_eq!(cache.stats().pinned, 3_000);
        check(&cache);
        // Inserts now fit in what the pin leaves.
        for i in 10..30 {
            cache.insert(key(i), value(i), 1_000, Priority::Low);
            assert!(cache.usage() <= 7_000);
        }
        check(&cache);
        // Pins stop at the high-priority share (half of the shard), whatever is evictable.
        assert!(cache.charge_pinned(key(101), 2_001).is_none());
        let second = cache
            .charge_pinned(key(101), 2_000)
            .expect("fits the share");
        assert_eq!(cache.stats().pinned, 5_000);
        drop((pin, second));
        assert_eq!(cache.stats().pinned, 0);
        check(&cache);
        for i in 30..40 {
            cache.insert(key(i), value(i), 1_000, Priority::Low);
        }
        assert_eq!(
            cache.usage(),
            10_000,
            "the whole budget is back for entries"
        );
    }

    #[test]
    fn capacity_is_respected_after_many_inserts() {
        let cache = ShardedLru::with_shards(1 << 20, 3);
        let mut rng = StdRng::seed_from_u64(5);
        for i in 0..20_000 {
            let priority = if i % 10 == 0 {
                Priority::High
            } else {
                Priority::Low
            };
            cache.insert(key(i), value(i), rng.gen_range(1..8192), priority);
            assert!(cache.usage() <= cache.capacity());
        }
        check(&cache);
        let stats = cache.stats();
        assert!(stats.evictions > 10_000, "{stats:?}");
        assert_eq!(stats.inserts, 20_000);
        assert_eq!(stats.entries + stats.evictions, 20_000);
        assert!(stats.usage as usize > cache.capacity() / 2, "{stats:?}");
    }

    #[test]
    fn least_recently_used_goes_first() {
        let cache = ShardedLru::with_shards(1000, 0);
        for i in 0..10 {
            cache.insert(key(i), value(i), 100, Priority::Low);
        }
        assert!(cache.get(&key(0)).is_some());
        cache.insert(key(10), value(10), 100, Priority::Low);
        assert!(
            cache.get(&key(0)).is_some(),
            "recently used entry was evicted"
        );
        assert!(
            cache.get(&key(1)).is_none(),
            "least recently used entry survived"
        );
        cache.insert(key(11), value(11), 250, Priority::Low);
        for gone in 2..=4 {
            assert!(cache.get(&key(gone)).is_none(), "{gone}");
        }
        for kept in [0, 5, 9, 10, 11] {
            assert_eq!(
                cache.get(&key(kept)).as_deref(),
                Some(&*value(kept)),
                "{kept}"
            );
        }
        assert_eq!(cache.usage(), 950);
        check(&cache);
    }

    #[test]
    fn high_priority_survives_a_flood_of_low_entries() {
        let cache = ShardedLru::with_shards(100_000, 0);
        for i in 0..40 {
            cache.insert(key(1_000_000 + i), value(i), 1000, Priority::High);
        }
        for i in 0..10_000 {
            cache.insert(key(i), value(i), 1000, Priority::Low);
        }
        for i in 0..40 {
            assert!(
                cache.get(&key(1_000_000 + i)).is_some(),
                "high entry {i} evicted"
            );
        }
        check(&cache);
    }

    #[test]
    fn high_priority_share_is_capped() {
        let cache = ShardedLru::with_shards(100_000, 0);
        // 80 KB of high entries but only half the capacity may stay high: the 30 oldest are
        // demoted and then flushed by low entries.
        for i in 0..80 {
            cache.insert(key(1_000_000 + i), value(i), 1000, Priority::High);
        }
        check(&cache);
        for i in 0..1000 {
            cache.insert(key(i), value(i), 1000, Priority::Low);
        }
        let survivors = (0..80)
            .filter(|&i| cache.get(&key(1_000_000 + i)).is_some())
            .count();
        assert_eq!(survivors, 50);
        assert!(cache.get(&key(1_000_000 + 79)).is_some());
        assert!(cache.get(&key(1_000_000)).is_none());
        check(&cache);

        // A ratio of 0 makes high entries ordinary ones.
        let cache = ShardedLru::with_shards(10_000, 0).with_high_priority_ratio(0.0);
        cache.insert(key(1), value(1), 1000, Priority::High);
        for i in 10..20 {
            cache.insert(key(i), value(i), 1000, Priority::Low);
        }
        assert!(cache.get(&key(1)).is_none());
        check(&cache);
    }

    #[test]
    fn oversize_entry_is_not_cached() {
        let cache = ShardedLru::with_shards(4000, 2);
        cache.insert(key(1), value(1), 1000, Priority::Low);
        assert!(cache.get(&key(1)).is_some());
        cache.insert(key(1), value(2), 1001, Priority::Low);
        assert!(cache.get(&key(1)).is_none(), "stale value left behind");
        assert_eq!(cache.usage(), 0);
        assert_eq!(cache.stats().inserts, 1);
        check(&cache);
    }

    #[test]
    fn replace_updates_value_and_charge() {
        let cache = ShardedLru::with_shards(10_000, 0);
        cache.insert(key(1), value(1), 100, Priority::Low);
        cache.insert(key(2), value(2), 100, Priority::Low);
        cache.insert(key(1), value(3), 300, Priority::High);
        assert_eq!(cache.usage(), 400);
        assert_eq!(cache.stats().entries, 2);
        assert_eq!(cache.get(&key(1)).as_deref(), Some(&*value(3)));
        cache.insert(key(1), value(4), 0, Priority::Low);
        assert_eq!(cache.usage(), 101, "a zero charge counts as one");
        cache.erase(&key(1));
        cache.erase(&key(99));
        assert!(cache.get(&key(1)).is_none());
        assert_eq!(cache.usage(), 100);
        check(&cache);
    }

    #[test]
    fn stats_count_hits_misses_and_evictions() {
        let cache = ShardedLru::with_shards(300, 0);
        assert!(cache.get(&key(1)).is_none());
        for i in 0..5 {
            cache.insert(key(i), value(i), 100, Priority::Low);
        }
        assert!(cache.get(&key(4)).is_some());
        assert!(cache.get(&key(3)).is_some());
        assert!(cache.get(&key(0)).is_none());
        let stats = cache.stats();
        assert_eq!(
            stats,
            CacheStats {
                hits: 2,
                misses: 2,
                inserts: 5,
                pinned: 0,
                evictions: 2,
                usage: 300,
                capacity: 300,
                entries: 3
            }
        );
    }

    #[test]
    fn file_ids_are_unique_and_start_at_one() {
        let cache = ShardedLru::<Vec<u8>>::new(1 << 20);
        assert_eq!(cache.new_file_id(), 1);
        assert_eq!(cache.new_file_id(), 2);
        // Same offset, different files: different entries.
        let a = CacheKey {
            file_id: 1,
            offset: 0,
        };
        let b = CacheKey {
            file_id: 2,
            offset: 0,
        };
        cache.insert(a, value(1), 10, Priority::Low);
        cache.insert(b, value(2), 10, Priority::Low);
        assert_eq!(cache.get(&a).as_deref(), Some(&*value(1)));
        assert_eq!(cache.get(&b).as_deref(), Some(&*value(2)));
    }

    #[test]
    fn values_outlive_eviction() {
        let cache = ShardedLru::with_shards(100, 0);
        cache.insert(key(1), value(1), 100, Priority::Low);
        let held = cache.get(&key(1)).unwrap();
        cache.insert(key(2), value(2), 100, Priority::Low);
        assert!(cache.get(&key(1)).is_none());
        assert_eq!(*held, *value(1));
    }

    #[test]
    fn concurrent_use_keeps_capacity() {
        let cache = ShardedLru::<Vec<u8>>::with_shards(64 << 10, 2);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let cache = &cache;
                s.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(t);
                    for _ in 0..50_000 {
                        let k = CacheKey {
                            file_id: rng.gen_range(1..4),
                            offset: rng.gen_range(0..500) * 4096,
                        };
                        if rng.gen_bool(0.6) {
                            if let Some(v) = cache.get(&k) {
                                assert_eq!(v.len(), 8);
                            }
                        } else {
                            let priority = if rng.gen_bool(0.1) {
                                Priority::High
                            } else {
                                Priority::Low
                            };
                            cache.insert(k, value(k.offset), rng.gen_range(1..4096), priority);
                        }
                        if rng.gen_ratio(1, 100) {
                            assert!(cache.usage() <= cache.capacity());
                        }
                    }
                });
            }
        });
        check(&cache);
        let stats = cache.stats();
        assert!(stats.usage <= stats.capacity);
        assert!(
            stats.hits > 0 && stats.misses > 0 && stats.evictions > 0,
            "{stats:?}"
        );
    }
}
