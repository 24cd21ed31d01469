//! The block cache: a sharded LRU of uncompressed blocks, shared by every open table.
//!
//! Keys are `(file_id, offset)`: each open table takes a fresh id from
//! [`ShardedLru::new_file_id`], so the blocks of a deleted and recreated file never alias. Values
//! are `Arc`s, so a reader keeps using a block after it is evicted. Nothing here is on disk; the
//! cached blocks are the decompressed contents described in docs/format/sst.md.
//!
//! Each shard is a mutex around a slab of entries, found through a [`SlotIndex`] (an
//! open-addressing table of hash tags and slots) and threaded on two intrusive doubly linked
//! lists (most recently used at the head): the low-priority list (data blocks) and the
//! high-priority list (index and filter blocks). Get, insert, erase and evict are O(1).
//!
//! With more blocks than fit in the processor's caches, a lookup's cost is its cache misses,
//! so an entry keeps all a hit reads and writes (key, value, recency, links) in one 64-byte
//! line: a hit reads the index bucket's line, the entry's, and the value's reference count.
//!
//! Invariants, per shard (checked by `check_locked` in tests):
//! 1. Every live slot is in the index (under its key's tag) and in exactly one list; every free
//!    slot is on the free chain (from `free_head` through `next`), in no list and not in the
//!    index, and holds no value.
//! 2. `usage` is the sum of live charges, `reserved` the sum of outstanding reservations, and
//!    `usage + reserved <= capacity` after every operation (the strict budget: a block's charge
//!    is reserved before it is read, see [`ShardedLru::reserve`]); `pinned <= reserved` is the
//!    part held by [`PinnedCharge`]s (memory kept outside the cache but counted in its budget,
//!    each charge spread evenly over all shards) and `pinned <= high_capacity`;
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
//!
//! [`ShardedLru::set_capacity`] changes the budget while the cache is in use: each shard evicts
//! down to its new share at once. Reservations and pinned charges taken before a shrink are
//! not revoked, so until they are released `usage + reserved` may exceed a shard's capacity
//! (invariant 2 then holds again); no new reservation succeeds in that shard meanwhile.

mod slot_index;

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use slot_index::SlotIndex;

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
    /// The sum of the shard capacities; changed only by [`ShardedLru::set_capacity`].
    capacity: AtomicUsize,
    /// The high-priority share each shard's capacity is split by (kept for `set_capacity`).
    high_priority_ratio: f64,
    next_file_id: AtomicU64,
}

/// A shard on its own cache lines, so locking one does not slow its neighbours.
#[repr(align(64))]
struct PaddedShard<V: ?Sized>(Mutex<Shard<V>>);

impl<V: ?Sized> fmt::Debug for ShardedLru<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedLru")
            .field("capacity", &self.capacity())
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
            capacity: AtomicUsize::new(capacity_bytes),
            high_priority_ratio: DEFAULT_HIGH_PRIORITY_RATIO,
            next_file_id: AtomicU64::new(1),
        }
    }

    /// Sets the share of each shard's capacity high-priority entries may hold (clamped to
    /// `0.0..=1.0`; default 0.5). Beyond it, the oldest high entries become low ones.
    #[must_use]
    pub fn with_high_priority_ratio(mut self, ratio: f64) -> Self {
        self.high_priority_ratio = ratio;
        for shard in &self.shards {
            let mut shard = lock(shard);
            shard.high_capacity = high_capacity(shard.capacity, ratio);
            shard.balance_high();
        }
        self
    }

    /// The entry for `key`, which becomes the most recently used of its shard.
    pub fn get(&self, key: &CacheKey) -> Option<Arc<V>> {
        let hash = key_hash(key);
        lock(self.shard_of(hash)).get(key, hash)
    }

    /// Caches `value` under `key`, replacing any existing entry, and evicts least recently used
    /// entries until it fits. A value whose charge exceeds its shard's capacity is not cached
    /// (and any existing entry for `key` is removed).
    pub fn insert(&self, key: CacheKey, value: Arc<V>, charge: usize, priority: Priority) {
        // Values displaced here are dropped after the lock is released.
        let hash = key_hash(&key);
        let displaced = lock(self.shard_of(hash)).insert(key, hash, value, charge.max(1), priority);
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

    /// Charges `charge` bytes for as long as the returned guard lives: memory kept outside the
    /// cache (an open table's pinned index or filter) that the budget must still count. The
    /// charge is spread evenly over all shards ([`pinned_part`]), so whether it fits depends on
    /// the pins in total (at most each shard's high-priority share, half the cache by default)
    /// and never on where `key` hashes: a table's filter of a few MiB is larger than one shard's
    /// share, and a few of them in one shard would be refused there and fall back to the cache,
    /// reloaded and decoded again whenever they collide. Evicts to make room; `None` when some
    /// shard cannot find its part or its pinned charges would pass its high-priority share (so
    /// pins never crowd out the data blocks).
    pub fn charge_pinned(
        self: &Arc<Self>,
        key: CacheKey,
        charge: usize,
    ) -> Option<PinnedCharge<V>> {
        let charge = charge.max(1);
        let shards = self.shards.len();
        let first = self.shard_index(&key);
        for (index, shard) in self.shards.iter().enumerate() {
            let part = pinned_part(charge, shards, first, index);
            if part == 0 {
                continue;
            }
            let mut displaced = Displaced::default();
            let mut locked = lock(shard);
            let charged = locked.pinned + part <= locked.high_capacity
                && locked.reserve(part, &mut displaced);
            if charged {
                locked.pinned += part;
            }
            drop(locked);
            drop(displaced);
            if !charged {
                // Give back the parts already taken, one shard lock at a time.
                for (taken, shard) in self.shards.iter().enumerate().take(index) {
                    lock(shard).release_pinned(pinned_part(charge, shards, first, taken));
                }
                return None;
            }
        }
        Some(PinnedCharge {
            cache: Arc::clone(self),
            key,
            charge,
            first,
        })
    }

    /// Removes the entry for `key`, if any.
    pub fn erase(&self, key: &CacheKey) {
        let hash = key_hash(key);
        let mut shard = lock(self.shard_of(hash));
        let removed = shard.find(key, hash).map(|slot| shard.remove(slot));
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
        self.capacity.load(Ordering::Relaxed)
    }

    /// Changes the capacity to `capacity_bytes` (spread over the same shards as at creation):
    /// a shrink evicts least recently used entries at once until each shard is within its new
    /// share, or holds nothing but what readers reserved or pinned (see the module doc). Safe
    /// while other threads use the cache; each shard is locked in turn.
    pub fn set_capacity(&self, capacity_bytes: usize) {
        let num_shards = self.shards.len();
        for (i, shard) in self.shards.iter().enumerate() {
            let capacity =
                capacity_bytes / num_shards + usize::from(i < capacity_bytes % num_shards);
            let mut displaced = Displaced::default();
            let mut locked = lock(shard);
            locked.capacity = capacity;
            locked.high_capacity = high_capacity(capacity, self.high_priority_ratio);
            locked.balance_high();
            locked.evict_for(0, &mut displaced);
            drop(locked);
            drop(displaced);
        }
        self.capacity.store(capacity_bytes, Ordering::Relaxed);
    }

    /// The sum of the charges of the cached entries.
    pub fn usage(&self) -> usize {
        self.shards.iter().map(|shard| lock(shard).usage).sum()
    }

    /// Counters and sizes summed over the shards (each shard read at a slightly different
    /// moment).
    pub fn stats(&self) -> CacheStats {
        let mut stats = CacheStats {
            capacity: self.capacity() as u64,
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
            stats.entries += shard.index.len() as u64;
        }
        stats
    }

    fn shard(&self, key: &CacheKey) -> &PaddedShard<V> {
        self.shard_of(key_hash(key))
    }

    fn shard_of(&self, hash: u64) -> &PaddedShard<V> {
        &self.shards[self.shard_index_of(hash)]
    }

    fn shard_index(&self, key: &CacheKey) -> usize {
        self.shard_index_of(key_hash(key))
    }

    /// Bits 40 and up pick the shard; the index's tag is bits 0-31 (see [`tag_of`]).
    fn shard_index_of(&self, hash: u64) -> usize {
        (hash >> 40) as usize & self.shard_mask
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
        let displaced = shard.insert(
            self.key,
            key_hash(&self.key),
            value,
            charge.max(1),
            priority,
        );
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
    /// The key's shard: the first to carry a byte of the remainder.
    first: usize,
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
        let shards = self.cache.shards.len();
        for (index, shard) in self.cache.shards.iter().enumerate() {
            lock(shard).release_pinned(pinned_part(self.charge, shards, self.first, index));
        }
    }
}

/// The part of a pinned `charge` that shard `index` of `shards` carries: an even split, the
/// remainder one byte each to the shards from `first` on (wrapping), so the parts add up to
/// `charge` and the remainders of different keys land on different shards.
fn pinned_part(charge: usize, shards: usize, first: usize, index: usize) -> usize {
    let distance = (index + shards - first) % shards;
    charge / shards + usize::from(distance < charge % shards)
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

/// The hash of a [`CacheKey`], computed once per operation: its high bits pick the shard and
/// its low 32 are the key's tag in the shard's index. Cheap on purpose: keys are not
/// attacker-chosen (ids come from a counter, offsets from files).
#[inline]
fn key_hash(key: &CacheKey) -> u64 {
    fmix64(key.file_id.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ key.offset)
}

/// The key's tag in its shard's [`SlotIndex`]: bits apart from the shard's.
#[inline]
fn tag_of(hash: u64) -> u32 {
    hash as u32
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
const LOW: u8 = 0;
const HIGH: u8 = 1;
/// Most slots a shard's slab has: every slot but [`NIL`] names one.
const MAX_SLOTS: usize = NIL as usize;
/// Slots of a shard's first slab.
const INITIAL_SLOTS: usize = 16;

/// A slab slot. Aligned to a cache line and no larger (a test checks), so that a hit reads
/// the key, the value and the recency from one line and a relink writes one line per entry.
#[repr(align(64))]
struct Entry<V: ?Sized> {
    key: CacheKey,
    /// `None` exactly when the slot is free.
    value: Option<Arc<V>>,
    charge: usize,
    /// The shard's `tick` when the entry was last put at the head of its list.
    moved_at: u64,
    /// Towards the head (more recently used).
    prev: u32,
    /// Towards the tail (less recently used); in a free slot, the next free slot.
    next: u32,
    /// Which list the entry is in: [`LOW`] or [`HIGH`].
    list: u8,
    /// Whether it was inserted with [`Priority::High`].
    high_priority: bool,
}

impl<V: ?Sized> Entry<V> {
    /// A free slot, chained to `next`.
    fn free(next: u32) -> Self {
        Entry {
            key: CacheKey {
                file_id: 0,
                offset: 0,
            },
            value: None,
            charge: 0,
            moved_at: 0,
            prev: NIL,
            next,
            list: LOW,
            high_priority: false,
        }
    }
}

#[derive(Clone, Copy)]
struct List {
    /// Most recently used.
    head: u32,
    /// Least recently used: the next to go.
    tail: u32,
}

/// One shard's state. With many shards, a shard is rarely still in the processor's cache
/// when it is next used, so its fields are laid out in order (`repr(C)`) by when they are
/// needed: the mutex word (first in `Mutex`) and every field a hit reads or writes fill the
/// first cache line of its [`PaddedShard`] (a test checks), the list ends (a hit that moves
/// its entry) and the budget (a miss, which goes on to reserve) start the second.
#[repr(C)]
struct Shard<V: ?Sized> {
    index: SlotIndex,
    /// The slab: live slots and free ones (no value, chained from `free_head` through `next`,
    /// so taking or giving back a slot touches only that slot's line). Grown by doubling (a
    /// boxed slice is two words where a `Vec` is three, which keeps the first line).
    entries: Box<[Entry<V>]>,
    /// Counts moves to a list head; an entry moved at most `len / 4` moves ago has at most
    /// that many entries ahead of it, so a hit leaves it in place (invariant 6).
    tick: u64,
    hits: u64,
    lists: [List; 2],
    misses: u64,
    capacity: usize,
    usage: usize,
    reserved: usize,
    inserts: u64,
    evictions: u64,
    /// The first free slot, or [`NIL`].
    free_head: u32,
    high_usage: usize,
    high_capacity: usize,
    /// The part of `reserved` held by [`PinnedCharge`]s.
    pinned: usize,
}

impl<V: ?Sized> Shard<V> {
    fn new(capacity: usize, high_priority_ratio: f64) -> Self {
        Shard {
            index: SlotIndex::new(),
            entries: Box::default(),
            tick: 0,
            hits: 0,
            lists: [List {
                head: NIL,
                tail: NIL,
            }; 2],
            misses: 0,
            capacity,
            usage: 0,
            reserved: 0,
            inserts: 0,
            evictions: 0,
            free_head: NIL,
            high_usage: 0,
            high_capacity: high_capacity(capacity, high_priority_ratio),
            pinned: 0,
        }
    }

    /// The live slot holding `key` (`hash` is [`key_hash`] of it).
    #[inline]
    fn find(&self, key: &CacheKey, hash: u64) -> Option<u32> {
        let entries = &self.entries;
        self.index
            .find(tag_of(hash), |slot| {
                entries.get(slot as usize).is_some_and(|e| e.key == *key)
            })
            .map(|(_, slot)| slot)
    }

    fn get(&mut self, key: &CacheKey, hash: u64) -> Option<Arc<V>> {
        let Some(slot) = self.find(key, hash) else {
            self.misses += 1;
            return None;
        };
        self.hits += 1;
        let entry = &self.entries[slot as usize];
        let value = entry.value.clone();
        let list = if entry.high_priority { HIGH } else { LOW };
        let recent = self.tick - entry.moved_at <= self.index.len() as u64 / 4;
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
            let victim = match self.lists[usize::from(LOW)].tail {
                NIL => self.lists[usize::from(HIGH)].tail,
                tail => tail,
            };
            if victim == NIL {
                break;
            }
            displaced.push(self.remove(victim));
            self.evictions += 1;
        }
    }

    /// Gives back a pinned charge's part (`reserve`d and counted in `pinned`).
    fn release_pinned(&mut self, part: usize) {
        self.reserved -= part;
        self.pinned -= part;
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

    /// Inserts an entry (`charge >= 1`, `hash` is [`key_hash`] of `key`); returns the values
    /// it displaced so the caller can drop them outside the lock.
    fn insert(
        &mut self,
        key: CacheKey,
        hash: u64,
        value: Arc<V>,
        charge: usize,
        priority: Priority,
    ) -> Displaced<V> {
        let mut displaced = Displaced::default();
        if let Some(slot) = self.find(&key, hash) {
            displaced.push(self.remove(slot));
        }
        if charge > self.capacity || (self.free_head == NIL && self.entries.len() >= MAX_SLOTS) {
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
            moved_at: 0,
            prev: NIL,
            next: NIL,
            list: LOW,
            high_priority,
        };
        if self.free_head == NIL {
            self.grow_entries();
        }
        let slot = self.free_head;
        let Some(free) = self.entries.get_mut(slot as usize) else {
            return displaced; // MAX_SLOTS entries (unreachable: checked above)
        };
        self.free_head = free.next;
        *free = entry;
        self.index.insert(tag_of(hash), slot);
        self.usage += charge;
        self.inserts += 1;
        self.push_front(slot, if high_priority { HIGH } else { LOW });
        if high_priority {
            self.balance_high();
        }
        displaced
    }

    /// Doubles the slab (at most [`MAX_SLOTS`]), the new slots free (chained in order, ahead
    /// of any free slots already chained).
    fn grow_entries(&mut self) {
        let old = self.entries.len();
        let new = (old * 2).clamp(INITIAL_SLOTS, MAX_SLOTS);
        if new <= old {
            return;
        }
        let mut entries = std::mem::take(&mut self.entries).into_vec();
        entries.reserve_exact(new - old);
        let free_head = self.free_head;
        entries.extend((old..new).map(|slot| {
            let next = if slot + 1 < new {
                slot as u32 + 1
            } else {
                free_head
            };
            Entry::free(next)
        }));
        self.entries = entries.into_boxed_slice();
        self.free_head = old as u32;
    }

    /// Removes a live entry and returns its value.
    fn remove(&mut self, slot: u32) -> Arc<V> {
        self.unlink(slot);
        let entry = &mut self.entries[slot as usize];
        let value = entry.value.take();
        let (tag, charge) = (tag_of(key_hash(&entry.key)), entry.charge);
        // By slot, not key: the entry's line is already read, and one bucket names it.
        if let Some((position, _)) = self.index.find(tag, |candidate| candidate == slot) {
            self.index.remove_at(position);
        }
        self.usage -= charge;
        entry.next = self.free_head;
        self.free_head = slot;
        // Every live slot holds a value and is in the index (invariant 1).
        value.unwrap_or_else(|| unreachable!("cache slot {slot} in a list without a value"))
    }

    /// Demotes the oldest high entries to the head of the low list until the high list is
    /// within its share.
    fn balance_high(&mut self) {
        while self.high_usage > self.high_capacity {
            let slot = self.lists[usize::from(HIGH)].tail;
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
        let ends = &mut self.lists[usize::from(list)];
        if prev == NIL {
            ends.head = next;
        } else {
            self.entries[prev as usize].next = next;
        }
        if next == NIL {
            ends.tail = prev;
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

    fn push_front(&mut self, slot: u32, list: u8) {
        self.tick += 1;
        let head = self.lists[usize::from(list)].head;
        let entry = &mut self.entries[slot as usize];
        entry.moved_at = self.tick;
        entry.prev = NIL;
        entry.next = head;
        entry.list = list;
        if list == HIGH {
            self.high_usage += entry.charge;
        }
        if head == NIL {
            self.lists[usize::from(list)].tail = slot;
        } else {
            self.entries[head as usize].prev = slot;
        }
        self.lists[usize::from(list)].head = slot;
    }

    /// Checks invariants 1 and 2 (tests only: it walks the whole shard).
    #[cfg(test)]
    fn check_locked(&self) {
        let mut seen = 0;
        let mut usage = 0;
        for list in [LOW, HIGH] {
            let mut list_usage = 0;
            let mut prev = NIL;
            let mut slot = self.lists[usize::from(list)].head;
            while slot != NIL {
                let entry = &self.entries[slot as usize];
                assert_eq!(entry.prev, prev);
                assert_eq!(entry.list, list);
                assert!(entry.value.is_some());
                assert_eq!(self.find(&entry.key, key_hash(&entry.key)), Some(slot));
                list_usage += entry.charge;
                seen += 1;
                prev = slot;
                slot = entry.next;
            }
            assert_eq!(self.lists[usize::from(list)].tail, prev);
            if list == HIGH {
                assert_eq!(list_usage, self.high_usage);
                assert!(self.high_usage <= self.high_capacity);
            }
            usage += list_usage;
        }
        assert_eq!(seen, self.index.len());
        let mut free = 0;
        let mut slot = self.free_head;
        while slot != NIL {
            let entry = &self.entries[slot as usize];
            assert!(entry.value.is_none(), "free slot {slot} holds a value");
            free += 1;
            assert!(free <= self.entries.len(), "the free chain loops");
            slot = entry.next;
        }
        assert_eq!(seen + free, self.entries.len());
        for (tag, slot) in self.index.check() {
            let entry = &self.entries[slot as usize];
            assert!(entry.value.is_some(), "index names free slot {slot}");
            assert_eq!(tag, tag_of(key_hash(&entry.key)));
        }
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
    fn an_entry_is_one_cache_line() {
        assert_eq!(
            std::mem::size_of::<Entry<dyn std::any::Any + Send + Sync>>(),
            64
        );
        assert_eq!(
            std::mem::align_of::<Entry<dyn std::any::Any + Send + Sync>>(),
            64
        );
        assert_eq!(std::mem::size_of::<Entry<Vec<u8>>>(), 64);
    }

    #[test]
    fn a_hit_reads_one_line_of_its_shard() {
        type Block = dyn std::any::Any + Send + Sync;
        let cache = ShardedLru::<Block>::with_shards(1 << 20, 0);
        let padded = &cache.shards[0];
        let line = std::ptr::from_ref(padded).addr();
        assert_eq!(line % 64, 0);
        let shard = lock(padded);
        let data = std::ptr::from_ref::<Shard<Block>>(&shard).addr();
        // The mutex word precedes the shard: `Mutex`'s data is its last field.
        assert!(data > line && data - line <= 8, "shard at {}", data - line);
        let hot_end = data - line + std::mem::offset_of!(Shard<Block>, hits) + 8;
        assert!(hot_end <= 64, "a hit's fields end at byte {hot_end}");
        for offset in [
            std::mem::offset_of!(Shard<Block>, index),
            std::mem::offset_of!(Shard<Block>, entries),
            std::mem::offset_of!(Shard<Block>, tick),
        ] {
            assert!(offset < std::mem::offset_of!(Shard<Block>, hits));
        }
    }

    #[test]
    fn lookups_match_a_map_through_inserts_replacements_and_erases() {
        // Large enough that nothing is evicted: every difference from the map is a lost or
        // stale index entry.
        let cache = ShardedLru::with_shards(1 << 30, 2);
        let mut model = std::collections::HashMap::new();
        let mut rng = StdRng::seed_from_u64(11);
        for step in 0..30_000u64 {
            let k = CacheKey {
                file_id: rng.gen_range(1..5),
                offset: rng.gen_range(0..600) * 4096,
            };
            match rng.gen_range(0..4) {
                0 | 1 => {
                    cache.insert(k, value(step), 100, Priority::Low);
                    model.insert(k, step);
                }
                2 => {
                    cache.erase(&k);
                    model.remove(&k);
                }
                _ => assert_eq!(
                    cache.get(&k).as_deref(),
                    model.get(&k).map(|&v| value(v)).as_deref(),
                    "step {step}"
                ),
            }
            if step % 3_000 == 0 {
                check(&cache);
            }
        }
        check(&cache);
        assert_eq!(cache.stats().entries, model.len() as u64);
        for (k, &v) in &model {
            assert_eq!(cache.get(k).as_deref(), Some(&*value(v)));
        }
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
    fn pinned_charges_are_spread_over_the_shards() {
        // 8 shards of 1,000 bytes, each with a 500-byte high-priority share.
        let cache = Arc::new(ShardedLru::with_shards(8_000, 3));
        for i in 0..8 {
            cache.insert(key(i), value(i), 1_000, Priority::Low);
        }
        // Larger than one shard's share: charged to one shard it could never fit, and pins
        // landing in the same shard would be refused while the cache had room for them
        // (an index or filter then thrashes in the cache instead, docs/benchmarks.md).
        let first = cache
            .charge_pinned(key(100), 1_500)
            .expect("a pin fits half of the whole cache, wherever its key hashes");
        let second = cache
            .charge_pinned(key(100), 2_492)
            .expect("the same key's shard again");
        assert_eq!(cache.stats().pinned, 3_992);
        for shard in &cache.shards {
            let pinned = lock(shard).pinned;
            assert!((498..=500).contains(&pinned), "an even split: {pinned}");
        }
        check(&cache);
        // The total still stops at the shares: parts of 2 bytes do not fit the full shards.
        assert!(cache.charge_pinned(key(101), 16).is_none());
        assert_eq!(
            cache.stats().pinned,
            3_992,
            "a refused pin gives its parts back"
        );
        check(&cache);
        drop((first, second));
        assert_eq!(cache.stats().pinned, 0);
        check(&cache);
        let whole = cache
            .charge_pinned(key(102), 4_000)
            .expect("every share is free again");
        check(&cache);
        drop(whole);
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
    fn a_smaller_capacity_evicts_down_to_it_and_a_larger_one_fills_again() {
        let cache = ShardedLru::with_shards(1 << 20, 2);
        for i in 0..1000 {
            cache.insert(key(i), value(i), 4096, Priority::Low);
        }
        let full = cache.usage();
        assert!(full > (1 << 20) - 4 * 4096, "{full}");
        cache.set_capacity(256 << 10);
        assert_eq!(cache.capacity(), 256 << 10);
        assert!(cache.usage() <= 256 << 10, "{}", cache.usage());
        assert!(cache.usage() > (256 << 10) - 4 * 4096, "{}", cache.usage());
        check(&cache);
        // The most recently used entries are the ones kept.
        assert!(cache.get(&key(999)).is_some());
        assert!(cache.get(&key(0)).is_none());
        assert_eq!(cache.stats().capacity, 256 << 10);
        cache.set_capacity(2 << 20);
        for i in 1000..2000 {
            cache.insert(key(i), value(i), 4096, Priority::Low);
        }
        assert!(cache.usage() > (1 << 20), "{}", cache.usage());
        assert!(cache.usage() <= 2 << 20);
        check(&cache);
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
