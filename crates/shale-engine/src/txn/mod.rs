//! Transactions over the engine (docs/transactions.md): pessimistic transactions with row
//! locks, deadlock detection and READ COMMITTED or REPEATABLE READ, and optimistic ones that
//! validate at commit.
//!
//! | file | concept |
//! |---|---|
//! | `lock_table` | striped shared/exclusive row locks with wait timeouts |
//! | `deadlock` | the wait-for graph and victim choice |
//! | `indexed_batch` | uncommitted changes, searchable, with a log for savepoints |
//! | `iterator` | the database merged with the transaction's changes |
//! | `transaction` | the transaction: reads, locks, writes, savepoints, commit |
//! | `optimistic` | commit-time validation of optimistic transactions |
//! | `registry` | the open transactions, for people to list |
//! | `stats`, `error` | statistics and errors |
//!
//! Invariant: a pessimistic transaction writes a key only while holding its exclusive lock,
//! checks for conflicts under that lock, and releases its locks only after its commit's
//! group-commit write returned; so no other transaction's write to that key can come between
//! the check and the commit.

mod deadlock;
mod error;
mod indexed_batch;
mod iterator;
mod lock_table;
mod optimistic;
mod registry;
mod stats;
mod transaction;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use deadlock::{DeadlockInfo, DeadlockWait, RECENT_DEADLOCKS};
pub use error::TransactionError;
pub use iterator::TransactionIterator;
pub use lock_table::{LockInfo, LockMode};
pub use registry::{LockWaitInfo, TransactionInfo, TransactionState};
pub use stats::TransactionStats;
use transaction::TdbRef;
pub use transaction::Transaction;

use crate::db::Db;
use crate::error::{Error, Result};
use crate::options::{Options, WriteOptions};
use lock_table::LockTable;
use stats::Stats;

/// What reads inside a transaction see (docs/transactions.md, "Isolation").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IsolationLevel {
    /// Every read sees the newest committed data as of that read.
    ReadCommitted,
    /// Every read sees the snapshot taken when the transaction began; writing or locking a
    /// key changed after it fails with [`TransactionError::SnapshotConflict`].
    #[default]
    RepeatableRead,
}

/// Options of a [`TransactionDb`].
#[derive(Debug, Clone)]
pub struct TransactionDbOptions {
    /// How long a lock request waits before [`TransactionError::LockTimeout`] (default 50 s,
    /// like `innodb_lock_wait_timeout`).
    pub lock_wait_timeout: Duration,
    /// Stripes of the lock table (each a mutex over a hash map of locked keys).
    pub lock_stripes: usize,
    /// Look for deadlocks when a lock request waits. Without it, deadlocks end by timeout.
    pub deadlock_detect: bool,
    /// Default cap on the memory a transaction's changes may use.
    pub max_transaction_bytes: usize,
}

impl Default for TransactionDbOptions {
    fn default() -> Self {
        TransactionDbOptions {
            lock_wait_timeout: Duration::from_secs(50),
            lock_stripes: 64,
            deadlock_detect: true,
            max_transaction_bytes: 256 << 20,
        }
    }
}

impl TransactionDbOptions {
    /// Checks every value, naming the option that is wrong.
    pub fn validate(&self) -> Result<()> {
        if self.lock_stripes == 0 || self.lock_stripes > 1 << 16 {
            return Err(Error::InvalidArgument(format!(
                "lock_stripes {} must be between 1 and 65536",
                self.lock_stripes
            )));
        }
        if self.max_transaction_bytes == 0 {
            return Err(Error::InvalidArgument(
                "max_transaction_bytes must be above 0".into(),
            ));
        }
        Ok(())
    }
}

/// Bulk mode: commit in the middle every so many rows or bytes (`MyRocks`'
/// `commit_in_the_middle`), for loads too large for one transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkCommit {
    /// Commit once the pending changes touch this many distinct keys.
    pub rows: usize,
    /// Commit once the pending changes use this many bytes.
    pub bytes: usize,
}

/// Options of one transaction.
#[derive(Debug, Clone, Default)]
pub struct TransactionOptions {
    /// What reads see.
    pub isolation: IsolationLevel,
    /// Overrides [`TransactionDbOptions::lock_wait_timeout`].
    pub lock_wait_timeout: Option<Duration>,
    /// Durability of the commit (and of bulk mode's intermediate commits).
    pub write_options: WriteOptions,
    /// Overrides [`TransactionDbOptions::max_transaction_bytes`].
    pub max_bytes: Option<usize>,
    /// Commit in the middle (atomicity is then per chunk, not per transaction).
    pub bulk: Option<BulkCommit>,
}

impl TransactionOptions {
    fn validate(&self) -> Result<()> {
        if let Some(bulk) = self.bulk {
            if bulk.rows == 0 || bulk.bytes == 0 {
                return Err(Error::InvalidArgument(format!(
                    "bulk commit every {} rows or {} bytes: both must be above 0",
                    bulk.rows, bulk.bytes
                )));
            }
        }
        if self.max_bytes == Some(0) {
            return Err(Error::InvalidArgument("max_bytes must be above 0".into()));
        }
        Ok(())
    }
}

/// The parts of a [`TransactionDb`] its transactions share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) locks: LockTable,
    pub(crate) registry: registry::Registry,
    pub(crate) stats: Stats,
    next_id: AtomicU64,
    pub(crate) options: TransactionDbOptions,
}

/// A database whose writes go through transactions (`RocksDB`'s `TransactionDB`).
///
/// Row locks only order transactions: a write made directly through [`TransactionDb::db`]
/// takes no lock, so it can slip between a transaction's conflict check and its commit.
#[derive(Debug)]
pub struct TransactionDb {
    db: Db,
    shared: Shared,
}

impl TransactionDb {
    /// Opens (or creates) the database at `path` for transactions.
    pub fn open(
        path: impl AsRef<Path>,
        options: Options,
        txn_options: TransactionDbOptions,
    ) -> Result<TransactionDb> {
        txn_options.validate()?;
        Self::new(Db::open(path, options)?, txn_options)
    }

    /// Wraps an open database.
    pub fn new(db: Db, options: TransactionDbOptions) -> Result<TransactionDb> {
        options.validate()?;
        Ok(TransactionDb {
            db,
            shared: Shared {
                locks: LockTable::new(options.lock_stripes, options.deadlock_detect),
                registry: registry::Registry::default(),
                stats: Stats::default(),
                next_id: AtomicU64::new(1),
                options,
            },
        })
    }

    /// The database, for reads outside transactions, keyspaces, flushes.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Begins a pessimistic transaction.
    pub fn begin(&self, options: TransactionOptions) -> Result<Transaction<'_>> {
        options.validate()?;
        Ok(Transaction::new(
            TdbRef::Borrowed(self),
            self.next_id(),
            options,
            false,
        ))
    }

    /// Begins a pessimistic transaction that holds its own reference to the database, so it
    /// is not tied to a borrow (a server session keeps one open between commands).
    pub fn begin_shared(
        self: &Arc<Self>,
        options: TransactionOptions,
    ) -> Result<Transaction<'static>> {
        options.validate()?;
        Ok(Transaction::new(
            TdbRef::Shared(Arc::clone(self)),
            self.next_id(),
            options,
            false,
        ))
    }

    /// Begins an optimistic transaction: no locks until commit, which fails with
    /// [`TransactionError::OptimisticConflict`] if a key it read or wrote changed after it
    /// began. Its reads see the snapshot taken at begin whatever `options.isolation` says.
    pub fn begin_optimistic(&self, options: TransactionOptions) -> Result<Transaction<'_>> {
        options.validate()?;
        Ok(Transaction::new(
            TdbRef::Borrowed(self),
            self.next_id(),
            options,
            true,
        ))
    }

    /// Transaction statistics since open.
    pub fn stats(&self) -> TransactionStats {
        self.shared.stats.snapshot()
    }

    /// Every open transaction now, oldest first (`information_schema.SHALE_TRX`). Each
    /// entry is read as of some moment while the transactions run on; the listing takes
    /// each registry shard's mutex in turn, which only begin and end also take.
    pub fn transactions(&self) -> Vec<TransactionInfo> {
        self.shared.registry.list()
    }

    /// Every locked row now, by (keyspace, key), with its holders and the transactions
    /// waiting for it (`information_schema.SHALE_LOCKS`). Stripes are read one after
    /// another, so this is a view for people, not a consistent cut.
    pub fn lock_snapshot(&self) -> Vec<LockInfo> {
        let mut locks = self.shared.locks.snapshot();
        for txn in self.shared.registry.list() {
            let Some(wait) = txn.waiting_for else {
                continue;
            };
            let found = locks.binary_search_by(|l| {
                (l.keyspace, &l.key[..]).cmp(&(wait.keyspace, &wait.key[..]))
            });
            if let Ok(at) = found {
                locks[at].waiters.push(txn.id);
            }
        }
        locks
    }

    /// The last [`RECENT_DEADLOCKS`] deadlocks the detector found, oldest first
    /// (`information_schema.SHALE_DEADLOCKS`). Empty when `deadlock_detect` is off.
    pub fn recent_deadlocks(&self) -> Vec<DeadlockInfo> {
        self.shared.locks.recent_deadlocks()
    }

    /// Closes the database (see [`Db::close`]).
    pub fn close(self) -> Result<()> {
        self.db.close()
    }

    fn next_id(&self) -> u64 {
        self.shared.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }
}
