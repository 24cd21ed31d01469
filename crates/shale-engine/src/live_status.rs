//! [`Db::live_status`]: what the engine holds in memory right now, per keyspace (active
//! and frozen memtables, the compaction backlog the write stalls watch) and the block
//! cache's usage and hit counters: the figures `SHOW ENGINE SHALE STATUS` adds to
//! [`crate::CompactionStats`]. Reads the state under its mutex once; no I/O.

use shale_sst::CacheStats;

use crate::db::Db;

/// One keyspace's in-memory state ([`LiveStatus::keyspaces`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyspaceLiveStatus {
    pub name: String,
    /// Bytes of the active memtable (its arena's usage).
    pub memtable_bytes: u64,
    /// Frozen memtables waiting to be flushed, and their bytes.
    pub immutable_memtables: usize,
    pub immutable_bytes: u64,
    /// The compaction backlog estimate that drives pending-bytes stalls.
    pub pending_compaction_bytes: u64,
}

/// [`Db::live_status`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveStatus {
    /// Keyspaces by name.
    pub keyspaces: Vec<KeyspaceLiveStatus>,
    /// The shared block cache (uncompressed blocks; pinned index and filter charges).
    pub block_cache: CacheStats,
}

impl Db {
    /// The in-memory state now (module doc).
    pub fn live_status(&self) -> LiveStatus {
        let mut keyspaces: Vec<KeyspaceLiveStatus> = {
            let state = self.inner.lock_state();
            state
                .keyspaces
                .values()
                .map(|k| KeyspaceLiveStatus {
                    name: k.name.clone(),
                    memtable_bytes: k.mem.approximate_memory_usage() as u64,
                    immutable_memtables: k.imm.len(),
                    immutable_bytes: k
                        .imm
                        .iter()
                        .map(|f| f.mem.approximate_memory_usage() as u64)
                        .sum(),
                    pending_compaction_bytes: k.pending_compaction_bytes,
                })
                .collect()
        };
        keyspaces.sort_by(|a, b| a.name.cmp(&b.name));
        LiveStatus {
            keyspaces,
            block_cache: self.inner.table_cache.block_cache_stats(),
        }
    }
}
