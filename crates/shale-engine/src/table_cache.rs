//! The table cache: open [`Table`]s by file number, at most `capacity` at a time.
//!
//! Opening a table reads its footer, index and filters, so readers share open tables here.
//! Invariant: an evicted or erased table stays usable by whoever still holds its `Arc`; the
//! file is deleted only when no Version references it (the Db checks `live_files`), and an
//! open handle keeps the bytes readable until dropped on POSIX file systems.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use shale_fs::FileSystem;
use shale_sst::{BlockCache, Comparator, PrefixExtractor, SeqNo, Table, TableOpenOptions};

use crate::error::Result;

/// Name of table file `number` in the database directory.
pub fn table_file_name(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.sst"))
}

/// Open tables keyed by file number, evicting the least recently used.
#[derive(Debug)]
pub(crate) struct TableCache {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    open_options: TableOpenOptions,
    capacity: usize,
    state: Mutex<CacheState>,
}

#[derive(Debug, Default)]
struct CacheState {
    tables: HashMap<u64, (Arc<Table>, u64)>,
    clock: u64,
}

impl TableCache {
    pub(crate) fn new(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        comparator: Arc<dyn Comparator>,
        block_cache: Arc<BlockCache>,
        verify_checksums: bool,
        capacity: usize,
    ) -> Self {
        TableCache {
            fs,
            dir: dir.to_path_buf(),
            open_options: TableOpenOptions {
                comparator,
                prefix_extractor: None,
                block_cache: Some(block_cache),
                verify_checksums,
                // One strict memory budget: index and filter blocks are charged to the
                // block cache at high priority rather than pinned per open table.
                cache_index_and_filter_blocks: true,
                global_seqno: None,
            },
            capacity: capacity.max(1),
            state: Mutex::new(CacheState::default()),
        }
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
        {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.clock += 1;
            let now = state.clock;
            if let Some((table, used)) = state.tables.get_mut(&number) {
                *used = now;
                return Ok(table.clone());
            }
        }
        // Open outside the lock: it reads several blocks.
        let options = TableOpenOptions {
            prefix_extractor: prefix_extractor.cloned(),
            global_seqno,
            ..self.open_options.clone()
        };
        let table = Table::open(&*self.fs, &table_file_name(&self.dir, number), &options)?;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.clock += 1;
        let now = state.clock;
        let entry = state
            .tables
            .entry(number)
            .or_insert_with(|| (table, now))
            .0
            .clone();
        if state.tables.len() > self.capacity {
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

    /// Forgets file `number` (before its file is deleted).
    pub(crate) fn erase(&self, number: u64) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.tables.remove(&number);
    }
}
