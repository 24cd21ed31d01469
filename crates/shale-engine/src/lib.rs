//! Shale's LSM-tree key-value engine, embeddable like `RocksDB`.
//!
//! A [`Db`] is one database directory: sorted, immutable table files (shale-sst) organised in
//! levels, a write-ahead log, a MANIFEST of the table set, and in-memory memtables in front.
//! Writes are atomic [`WriteBatch`]es acknowledged after group commit as their
//! [`Durability`] says (fsync, write, or buffer, like `MySQL`'s
//! `innodb_flush_log_at_trx_commit`=1/2/0); reads are point gets, multi-gets and bounded
//! bidirectional iterators over a consistent [`Snapshot`]. Data is split into [`Keyspace`]s
//! (column families) with their own options. On top: pessimistic and optimistic
//! transactions ([`TransactionDb`]), bulk ingestion of externally built table files
//! ([`TableFileWriter`], [`Db::ingest`]), large values in blob files, checkpoints, incremental
//! backups ([`BackupEngine`]) and repair ([`repair_db`]).
//!
//! ```
//! use std::sync::Arc;
//! use shale_engine::{Db, Options, ReadOptions, TransactionDb, TransactionOptions, WriteBatch, WriteOptions};
//!
//! # fn main() -> shale_engine::Result<()> {
//! // An in-memory file system keeps the example self-contained; leave `file_system` at its
//! // default for a real directory.
//! let options = Options { file_system: Arc::new(shale_fs::MemFs::new()), ..Options::default() };
//! let db = Db::open("/example", options)?;
//! let users = db.create_keyspace("users", Default::default())?;
//! let mut batch = WriteBatch::new();
//! batch.put(users.id(), b"u1", b"alice")?;
//! batch.put(db.default_keyspace().id(), b"count", b"1")?;
//! db.write(batch, &WriteOptions::sync())?; // both or neither, durable when it returns
//! assert_eq!(users.get(b"u1")?, Some(b"alice".to_vec()));
//!
//! let mut iter = users.iterator(ReadOptions::default())?;
//! iter.seek_to_first();
//! assert_eq!((iter.key(), iter.value()), (&b"u1"[..], &b"alice"[..]));
//! drop(iter);
//!
//! // Transactions: row locks, REPEATABLE READ snapshots, read-your-own-writes.
//! let tdb = TransactionDb::new(db, Default::default())?;
//! let mut txn = tdb.begin(TransactionOptions::default())?;
//! let count = txn.get_for_update(b"count")?.unwrap_or_default();
//! txn.put(b"count", &[count, b"+1".to_vec()].concat())?;
//! txn.commit()?;
//! assert_eq!(tdb.db().get(b"count")?, Some(b"1+1".to_vec()));
//! tdb.close()
//! # }
//! ```
//!
//! A keyspace may carry a [`TablePropertiesCollectorFactory`]
//! ([`KeyspaceOptions::table_properties_collector`]): every table file written for it (flush,
//! compaction, repair, [`TableFileWriter`]) runs a collector over its entries and stores what
//! it returns as properties, which [`inspect::read_table_properties`] reads back (the table
//! layer records its table definitions this way).
//!
//! The public surface is the list re-exported below. [`inspect`] reads a database's files
//! without opening it (the DBA tools' view: MANIFEST, WAL, blob files, options); the
//! `testing` feature exposes internals (memtable, iterators, version set) to tests and fuzz
//! targets. Formats: docs/format/ in the repository.

mod approximate;
mod batch;
mod db_iter;
mod direct_io;
mod error;
pub mod inspect;
// The WAL and blob-file readers are declared inside `inspect` (their public face); the
// engine reaches them by their old paths.
use inspect::{blob, wal};
mod iterator;
mod level_iter;
mod live_options;
mod memtable;
mod merging_iter;
mod options_file;
mod range_del;
mod rate_limiter;
mod version;

pub use batch::{BatchEntry, WriteBatch};
pub use error::{Error, Result};
pub use version::{DEFAULT_KEYSPACE_ID, DEFAULT_NUM_LEVELS};
pub use wal::RecoveryMode;

mod background;
mod backup;
mod checkpoint;
mod clock;
mod compaction;
mod compaction_stats;
mod db;
mod flush;
mod idle;
mod info_log;
mod ingest;
mod job_panic;
mod keyspace;
mod live_status;
mod manifest_recovery;
mod options;
mod read;
mod read_latest;
mod read_only;
mod read_views;
mod recovery;
mod recovery_report;
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
mod wal_recovery;
mod write;
mod write_queue;
pub use backup::{
    BackupCodec, BackupEngine, BackupFile, BackupInfo, BackupOptions, CreatedBackup, Purged,
    Verified, DEFAULT_ZSTD_LEVEL,
};
pub use checkpoint::CheckpointInfo;
pub use clock::{Clock, SystemClock};
pub use compaction::BackgroundCompaction;
pub use compaction_stats::{CompactionStats, LevelCompactionStats};
pub use db::{Db, DEFAULT_KEYSPACE};
pub use ingest::{IngestArg, IngestOptions, IngestedFile};
pub use keyspace::Keyspace;
pub use live_options::LIVE_OPTIONS;
pub use live_status::{KeyspaceLiveStatus, LiveStatus};
pub use options::{
    Durability, KeyspaceOptions, Options, WriteOptions, MAX_BACKGROUND_JOBS, UNLIMITED_OPEN_FILES,
};
pub use read::{DbIterator, ReadOptions};
pub use recovery_report::{DropReason, DroppedWalData, RecoveryReport, ReplayedWal};
pub use repair::{
    repair_db, repair_db_with_progress, LostFile, RepairOptions, RepairReport, SalvagedTable,
    SalvagedWal, LOST_DIR_NAME,
};
pub use shale_sst::{
    TableFileContext, TablePropertiesCollector, TablePropertiesCollectorFactory, ValueKind,
};
pub use snapshot::Snapshot;
pub use stats::{DbStats, LevelIoStats};
pub use table_file_writer::{ExternalFileInfo, TableFileWriter, TableFileWriterOptions};
pub use txn::{
    BulkCommit, DeadlockInfo, DeadlockWait, IsolationLevel, LockInfo, LockMode, LockWaitInfo,
    Transaction, TransactionDb, TransactionDbOptions, TransactionError, TransactionInfo,
    TransactionIterator, TransactionOptions, TransactionState, TransactionStats, RECENT_DEADLOCKS,
};
