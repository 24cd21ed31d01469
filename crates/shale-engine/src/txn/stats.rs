//! Transaction statistics of one database (docs/transactions.md, "Statistics").
//!
//! The counters move on lock waits, conflicts and transaction ends, never on a plain read or
//! an uncontended lock, so shared atomics are cheap enough here.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) lock_waits: AtomicU64,
    pub(crate) lock_timeouts: AtomicU64,
    pub(crate) deadlocks: AtomicU64,
    pub(crate) snapshot_conflicts: AtomicU64,
    pub(crate) optimistic_conflicts: AtomicU64,
    pub(crate) commits: AtomicU64,
    pub(crate) rollbacks: AtomicU64,
    pub(crate) bulk_commits: AtomicU64,
}

/// Counts since the [`super::TransactionDb`] was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransactionStats {
    /// Lock requests that had to wait for another transaction.
    pub lock_waits: u64,
    /// Lock requests that gave up after the lock wait timeout.
    pub lock_timeouts: u64,
    /// Deadlocks found (each rolled back one transaction).
    pub deadlocks: u64,
    /// REPEATABLE READ writes or locking reads refused because the key changed after the
    /// snapshot.
    pub snapshot_conflicts: u64,
    /// Optimistic commits refused because a key read or written changed.
    pub optimistic_conflicts: u64,
    /// Transactions committed.
    pub commits: u64,
    /// Transactions rolled back (explicitly, by drop, or after a deadlock).
    pub rollbacks: u64,
    /// Intermediate commits of bulk mode.
    pub bulk_commits: u64,
}

impl Stats {
    pub(crate) fn snapshot(&self) -> TransactionStats {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        TransactionStats {
            lock_waits: read(&self.lock_waits),
            lock_timeouts: read(&self.lock_timeouts),
            deadlocks: read(&self.deadlocks),
            snapshot_conflicts: read(&self.snapshot_conflicts),
            optimistic_conflicts: read(&self.optimistic_conflicts),
            commits: read(&self.commits),
            rollbacks: read(&self.rollbacks),
            bulk_commits: read(&self.bulk_commits),
        }
    }
}
