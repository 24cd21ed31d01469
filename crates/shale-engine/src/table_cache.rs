//! The table cache: open [`Table`]s by file number, at most `capacity` at a time.
//!
//! Opening a table reads its footer, index and filters, so readers share open tables here.
//! Every point lookup asks it once per table it searches, so it is sharded by file number
//! (readers of different tables take different locks) and hashes the number with one
//! multiplication rather than `SipHash`.
//!
//! Invariants:
//! 1. An evicted or erased table stays usable by whoever still holds its `Arc`; the file is
//!    deleted only when no Version references it (the Db checks `live_files`), and an open
//!    handle keeps the bytes readable until dropped on POSIX file systems.
//! 2. A shard holds at most `shard_capacity` tables and `shards * shard_capacity <=
//!    capacity`, so at most `capacity` tables are open through the cache.
//! 3. Only with no limit ([`UNLIMITED_OPEN_FILES`]) does a table also live in its file's
//!    metadata ([`PinnedTable`]): nothing is ever evicted then, so the pin keeps open no table
//!    the cache would have closed, and a lookup that finds it writes no shared cache line
//!    (no shard lock, no reference count). The pinned table is the one the cache holds for
//!    that number (a number's table never changes), and it closes with the last Version
//!    naming the file, as invariant 1 allows.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use shale_fs::{FileSystem, IoMode};
use shale_sst::{BlockCache, Comparator, PrefixExtractor, SeqNo, Table, TableOpenOptions};

use crate::error::Result;
use crate::options::UNLIMITED_OPEN_FILES;
use crate::version::FileMetaData;

/// Name of table file `number` in the database directory.
pub fn table_file_name(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.sst"))
}

/// A file's open table, held by its [`FileMetaData`] when the database keeps every table open
/// (invariant 3). A cache, not a property of the file: every two compare equal.
#[derive(Clone, Default)]
pub struct PinnedTable(OnceLock<Arc<Table>>);

impl PinnedTable {
    /// Whether a lookup has pinned the file's open table here.
    pub fn is_open(&self) -> bool {
        self.0.get().is_some()
    }

    /// The pinned table, if any.
    pub(crate) fn get(&self) -> Option<&Arc<Table>> {
        self.0.get()
    }

    /// A pin already holding `table`.
    pub(crate) fn holding(table: Arc<Table>) -> Self {
        PinnedTable(OnceLock::from(table))
    }
}

impl PartialEq for PinnedTable {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for PinnedTable {}

impl std::fmt::Debug for PinnedTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_open() {
            "PinnedTable(open)"
        } else {
            "PinnedTable(-)"
        })
    }
}

/// A table found for a lookup: borrowed from its file's metadata when pinned, else shared
/// with the cache.
pub(crate) enum TableRef<'a> {
    Pinned(&'a Arc<Table>),
    Cached(Arc<Table>),
}

impl TableRef<'_> {
    /// The table as an owned `Arc`, for an iterator that outlives the lookup.
    pub(crate) fn into_arc(self) -> Arc<Table> {
        match self {
            TableRef::Pinned(table) => table.clone(),
            TableRef::Cached(table) => table,
        }
    }
}

impl std::ops::Deref for TableRef<'_> {
    type Target = Table;
    fn deref(&self) -> &Table {
        match self {
            TableRef::Pinned(table) => table,
            TableRef::Cached(table) => table,
        }
    }
}

/// Open tables keyed by file number, evicting the least recently used.
#[derive(Debug)]
pub(crate) struct TableCache {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    open_options: TableOpenOptions,
    /// How table files are opened (`Options::use_direct_reads`).
    read_mode: IoMode,
    shard_capacity: usize,
    shards: Box<[Mutex<CacheState>]>,
    /// Whether tables are pinned in their files' metadata too (invariant 3).
    pub(crate) pins_tables: bool,
}

/// At most this many shards; fewer when `capacity` is small, so each keeps several tables.
const MAX_SHARDS: usize = 16;
const MIN_TABLES_PER_SHARD: usize = 4;

#[derive(Debug, Default)]
struct CacheState {
    tables: HashMap<u64, (Arc<Table>, u64), BuildHasherDefault<FileNumberHasher>>,
    clock: u64,
}

/// Hashes a file number (a `u64` key) with one multiplication: numbers are dense and
/// unique, so the spread of a Fibonacci hash is all the map needs.
#[derive(Debug, Default)]
struct FileNumberHasher(u64);

impl Hasher for FileNumberHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(FIBONACCI);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(FIBONACCI);
    }
}

const FIBONACCI: u64 = 0x9E37_79B9_7F4A_7C15;

/// How many shards and tables per shard for at most `capacity` open tables (invariant 2).
fn shard_layout(capacity: usize) -> (usize, usize) {
    let capacity = capacity.max(1);
    let mut shards = 1;
    while shards < MAX_SHARDS && capacity / (shards * 2) >= MIN_TABLES_PER_SHARD {
        shards *= 2;
    }
    (shards, capacity / shards)
}

impl TableCache {
    /// The shared block cache's counters (hits, misses, usage); the default when tables are
    /// opened without one.
    pub(crate) fn block_cache_stats(&self) -> shale_sst::CacheStats {
        self.open_options
            .block_cache
            .as_ref()
            .map(|cache| cache.stats())
            .unwrap_or_default()
    }

    /// The shared block cache's capacity in bytes (0 without one).
    pub(crate) fn block_cache_capacity(&self) -> usize {
        self.open_options
            .block_cache
            .as_ref()
            .map_or(0, |cache| cache.capacity())
    }

    /// Changes the shared block cache's capacity; a smaller one evicts at once.
    pub(crate) fn set_block_cache_capacity(&self, bytes: usize) {
        if let Some(cache) = &self.open_options.block_cache {
            cache.set_capacity(bytes);
        }
    }

    pub(crate) fn new(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        comparator: Arc<dyn Comparator>,
        block_cache: Arc<BlockCache>,
        verify_checksums: bool,
        capacity: usize,
        read_mode: IoMode,
    ) -> Self {
        let (shards, shard_capacity) = shard_layout(capacity);
        TableCache {
            fs,
            dir: dir.to_path_buf(),
            open_options: TableOpenOptions {
                comparator,
                prefix_extractor: None,
                block_cache: Some(block_cache),
                verify_checksums,
                // One strict memory budget: index and filter blocks are pinned by the open
                // table with their memory charged to the block cache (a lookup then asks the
                // cache for its data block only); ones the cache cannot charge live in it at
                // high priority.
                cache_index_and_filter_blocks: true,
                charge_pinned_index_and_filter: true,
                global_seqno: None,
            },
            read_mode,
            shard_capacity,
            pins_tables: capacity == UNLIMITED_OPEN_FILES,
            shards: (0..shards)
                .map(|_| Mutex::new(CacheState::default()))
                .collect(),
        }
    }

    fn shard(&self, number: u64) -> &Mutex<CacheState> {
        // The top bits of the Fibonacci hash: the map inside the shard uses the low ones.
        let mixed = number.wrapping_mul(FIBONACCI) >> 32;
        let index = usize::try_from(mixed).unwrap_or(0) % self.shards.len();
        &self.shards[index]
    }

    /// The open table for file `number`, opening it if needed. `prefix_extractor` is the
    /// keyspace's; tables of different keyspaces never share a number. `global_seqno` is the
    /// file's ([`crate::FileMetaData::global_seqno`]), fixed for the life of the number.
    pub(crate) fn get(
        &self,
        number: u64,
        global_seqno: Option<SeqNo>,
        prefix_extractor: Option<&Arc<dyn PrefixExtractor>>,
    ) -> Result<Arc<Table>> {
        if let Some(table) = self.touch(number) {
            return Ok(table);
        }
        // Open outside the lock: it reads several blocks.
        let file = self
            .fs
            .open_read_with(&table_file_name(&self.dir, number), self.read_mode)?;
        self.open_into(number, file, global_seqno, prefix_extractor)
    }

    /// The open table of `file` for a lookup: its pinned table when it has one, else the
    /// cache's (pinning it when tables are kept open, invariant 3).
    pub(crate) fn table_of<'f>(
        &self,
        file: &'f FileMetaData,
        prefix_extractor: Option<&Arc<dyn PrefixExtractor>>,
    ) -> Result<TableRef<'f>> {
        if let Some(table) = file.pinned_table.0.get() {
            return Ok(TableRef::Pinned(table));
        }
        let table = self.get(file.number, file.global_seqno, prefix_extractor)?;
        if self.pins_tables {
            // Another reader may have pinned it meanwhile: the same table (one per number).
            return Ok(TableRef::Pinned(file.pinned_table.0.get_or_init(|| table)));
        }
        Ok(TableRef::Cached(table))
    }

    /// [`TableCache::get`], reading the table from `file` (already open) when it is not
    /// cached: a read-only open pins its tables' files before its long WAL replay, so a
    /// writer deleting them meanwhile does not fail the open.
    pub(crate) fn get_from(
        &self,
        number: u64,
        file: Arc<dyn shale_fs::RandomAccessFile>,
        global_seqno: Option<SeqNo>,
        prefix_extractor: Option<&Arc<dyn PrefixExtractor>>,
    ) -> Result<Arc<Table>> {
        if let Some(table) = self.touch(number) {
            return Ok(table);
        }
        self.open_into(number, file, global_seqno, prefix_extractor)
    }

    /// The cached table for `number`, marked as just used.
    fn touch(&self, number: u64) -> Option<Arc<Table>> {
        let mut state = self
            .shard(number)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        state.clock += 1;
        let now = state.clock;
        state.tables.get_mut(&number).map(|(table, used)| {
            *used = now;
            table.clone()
        })
    }

    /// Opens the table in `file` and caches it as `number` (or takes the one another thread
    /// cached meanwhile), evicting the shard's least recently used table past its capacity.
    fn open_into(
        &self,
        number: u64,
        file: Arc<dyn shale_fs::RandomAccessFile>,
        global_seqno: Option<SeqNo>,
        prefix_extractor: Option<&Arc<dyn PrefixExtractor>>,
    ) -> Result<Arc<Table>> {
        let options = TableOpenOptions {
            prefix_extractor: prefix_extractor.cloned(),
            global_seqno,
            ..self.open_options.clone()
        };
        let table = Table::open_file(file, &options)?;
        let mut state = self
            .shard(number)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        state.clock += 1;
        let now = state.clock;
        let entry = state
            .tables
            .entry(number)
            .or_insert_with(|| (table, now))
            .0
            .clone();
        if state.tables.len() > self.shard_capacity {
            let oldest = state
                .tables
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(n, _)| *n);
            if let Some(oldest) = oldest.filter(|&n| n != number) {
                state.tables.remove(&oldest);
            }
        }
        Ok(entry)
    }

    /// The open table for file `number` if it is open, without opening it.
    pub(crate) fn cached(&self, number: u64) -> Option<Arc<Table>> {
        let state = self
            .shard(number)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        state.tables.get(&number).map(|(table, _)| table.clone())
    }

    /// Forgets file `number` (before its file is deleted).
    pub(crate) fn erase(&self, number: u64) {
        let mut state = self
            .shard(number)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        state.tables.remove(&number);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_never_hold_more_than_the_capacity() {
        for capacity in 0..3000 {
            let (shards, per_shard) = shard_layout(capacity);
            assert!(per_shard >= 1, "capacity {capacity}");
            assert!(shards * per_shard <= capacity.max(1), "capacity {capacity}");
            assert!(shards == 1 || per_shard >= MIN_TABLES_PER_SHARD);
        }
        assert_eq!(shard_layout(1000), (16, 62));
        assert_eq!(shard_layout(16), (4, 4));
        assert_eq!(shard_layout(5), (1, 5));
    }
}
