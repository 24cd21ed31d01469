//! Shale's LSM-tree key-value engine.
//!
//! Being built in increments (see docs/architecture.md). Landed so far: the write-ahead log
//! format ([`wal`], docs/format/wal.md) and the write batch encoding ([`WriteBatch`],
//! `docs/format/write_batch.md`) that WAL records carry.

mod batch;
mod db_iter;
mod error;
pub mod inspect;
mod iterator;
mod level_iter;
mod memtable;
mod merging_iter;
mod options_file;
mod range_del;
mod rate_limiter;
mod version;
pub mod wal;

pub use batch::{BatchEntry, WriteBatch};
pub use db_iter::{BlobResolver, DbIter, DbIterOptions};
pub use error::{Error, Result};
pub use iterator::{InternalIterator, SourceIter, VecIterator};
pub use level_iter::{LevelFile, LevelIter, LevelTable, TableOpener};
pub use memtable::{MemTable, MemTableEntry, MemTableIter};
pub use merging_iter::MergingIter;
pub use options_file::{
    options_file_name, parse_options_file_name, OptionsFile, OPTIONS_FORMAT_VERSION,
};
pub use range_del::RangeDelSet;
pub use version::{
    manifest_file_name, parse_manifest_file_name, DeletedFile, FileMetaData, NewFile, Version,
    VersionEdit, VersionSet, CURRENT_FILE_NAME, DEFAULT_KEYSPACE_ID, DEFAULT_KEYSPACE_NAME,
    DEFAULT_MAX_MANIFEST_SIZE, DEFAULT_NUM_LEVELS, MANIFEST_FORMAT_VERSION, MANIFEST_MAGIC,
    MAX_KEYSPACE_NAME_LEN, MAX_NUM_LEVELS, SAFE_TO_IGNORE,
};

mod background;
mod backup;
pub mod blob;
mod checkpoint;
mod clock;
mod compaction;
mod compaction_stats;
mod db;
mod flush;
mod idle;
mod ingest;
mod keyspace;
mod options;
mod read;
mod read_latest;
mod read_only;
mod recovery;
mod repair;
mod snapshot;
mod stats;
mod table_cache;
mod table_file_writer;
mod test_hooks;
#[cfg(feature = "testing")]
pub mod testing;
mod ttl;
mod txn;
mod write;
mod write_queue;
pub use backup::{
    BackupCodec, BackupEngine, BackupFile, BackupInfo, BackupOptions, CreatedBackup, Purged,
    DEFAULT_ZSTD_LEVEL,
};
pub use checkpoint::CheckpointInfo;
pub use clock::{Clock, SystemClock};
pub use compaction::BackgroundCompaction;
pub use compaction_stats::{CompactionStats, LevelCompactionStats};
pub use db::{Db, DEFAULT_KEYSPACE};
pub use ingest::{IngestArg, IngestOptions, IngestedFile};
pub use keyspace::Keyspace;
pub use options::{Durability, KeyspaceOptions, Options, WriteOptions};
pub use read::{DbIterator, ReadOptions};
pub use repair::{
    repair_db, repair_db_with_progress, LostFile, RepairOptions, RepairReport, SalvagedTable,
    SalvagedWal, LOST_DIR_NAME,
};
pub use snapshot::Snapshot;
pub use stats::{DbStats, LevelIoStats};
pub use table_file_writer::{ExternalFileInfo, TableFileWriter, TableFileWriterOptions};
pub use txn::{
    BulkCommit, IsolationLevel, Transaction, TransactionDb, TransactionDbOptions, TransactionError,
    TransactionIterator, TransactionOptions, TransactionStats,
};
