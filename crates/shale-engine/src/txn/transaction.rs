//! A transaction: reads that see its own writes, row locks, conflict checks, savepoints, and
//! a commit through the engine's group commit (docs/transactions.md).
//!
//! Invariants:
//! 1. Every key in `locks` is locked in the lock table by this transaction in at least that
//!    mode; all are released together, after the commit's write returned or on rollback.
//! 2. Under REPEATABLE READ, a key enters `validated` only after its newest seqno was found
//!    not newer than the snapshot while this transaction held the key's lock.
//! 3. Once `finished`, the transaction holds no lock and its batch is empty.
//! 4. `entry` is in the database's registry until the transaction is dropped or rolled back
//!    as a deadlock victim; its counts are refreshed after every change to `locks` and
//!    `batch` (registry.rs invariant 3).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::Duration;

use shale_sst::SeqNo;

use super::error::{show_key, TransactionError};
use super::indexed_batch::IndexedBatch;
use super::iterator::TransactionIterator;
use super::lock_table::{LockKey, LockMode, TxnId};
use super::registry::Entry;
use super::{IsolationLevel, TransactionDb, TransactionOptions};
use crate::db::DEFAULT_KEYSPACE_ID;
use crate::error::{Error, Result};
use crate::keyspace::Keyspace;
use crate::read::ReadOptions;
use crate::read_latest::newest_seqno;
use crate::snapshot::Snapshot;

/// How a transaction reaches its database: borrowed for the common scoped use, or shared
/// through an `Arc` so a transaction can outlive any one borrow (a server session keeps its
/// open transaction between client commands).
#[derive(Debug)]
pub(super) enum TdbRef<'db> {
    Borrowed(&'db TransactionDb),
    Shared(std::sync::Arc<TransactionDb>),
}

impl std::ops::Deref for TdbRef<'_> {
    type Target = TransactionDb;

    fn deref(&self) -> &TransactionDb {
        match self {
            TdbRef::Borrowed(tdb) => tdb,
            TdbRef::Shared(tdb) => tdb,
        }
    }
}

/// A transaction on a [`TransactionDb`]. Dropping it without [`commit`](Self::commit) rolls
/// it back.
#[derive(Debug)]
pub struct Transaction<'db> {
    pub(super) tdb: TdbRef<'db>,
    pub(super) id: TxnId,
    pub(super) options: TransactionOptions,
    pub(super) optimistic: bool,
    pub(super) snapshot: Option<Snapshot>,
    pub(super) batch: IndexedBatch,
    pub(super) locks: HashMap<LockKey, LockMode>,
    validated: HashSet<LockKey>,
    /// Keys read by an optimistic transaction, validated at commit.
    pub(super) read_set: HashSet<LockKey>,
    savepoints: Vec<usize>,
    /// Why the transaction can no longer be used (it was rolled back after a deadlock).
    aborted: Option<String>,
    finished: bool,
    /// What [`TransactionDb::transactions`](super::TransactionDb::transactions) shows of it
    /// (invariant 4).
    entry: std::sync::Arc<Entry>,
}

impl<'db> Transaction<'db> {
    pub(super) fn new(
        tdb: TdbRef<'db>,
        id: TxnId,
        options: TransactionOptions,
        optimistic: bool,
    ) -> Self {
        let entry = std::sync::Arc::new(Entry::new(id, options.isolation, optimistic));
        tdb.shared()
            .registry
            .register(std::sync::Arc::clone(&entry));
        let mut txn = Transaction {
            entry,
            tdb,
            id,
            options,
            optimistic,
            snapshot: None,
            batch: IndexedBatch::default(),
            locks: HashMap::new(),
            validated: HashSet::new(),
            read_set: HashSet::new(),
            savepoints: Vec::new(),
            aborted: None,
            finished: false,
        };
        txn.refresh_snapshot();
        txn
    }

    /// The transaction's id (larger ids are younger; deadlock errors name these).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The sequence number reads see, for REPEATABLE READ and optimistic transactions.
    pub fn snapshot_seqno(&self) -> Option<SeqNo> {
        self.snapshot.as_ref().map(Snapshot::seqno)
    }

    /// Takes the snapshot again, now, if the transaction holds no lock and wrote nothing;
    /// returns whether it did. For a caller that knows it has not read through the old
    /// snapshot yet (shale-table, after waiting for a DDL statement, so its first read sees
    /// what the DDL did). Savepoints stay.
    pub fn refresh_unused_snapshot(&mut self) -> bool {
        if !self.uses_snapshot()
            || !self.locks.is_empty()
            || !self.read_set.is_empty()
            || self.batch.rows() > 0
        {
            return false;
        }
        self.refresh_snapshot();
        true
    }

    fn uses_snapshot(&self) -> bool {
        self.optimistic || self.options.isolation == IsolationLevel::RepeatableRead
    }

    fn refresh_snapshot(&mut self) {
        self.snapshot = self.uses_snapshot().then(|| self.tdb.db().snapshot());
        self.entry.set_snapshot(self.snapshot_seqno());
    }

    /// Refreshes the registry's counts (invariant 4).
    fn show_counts(&self) {
        self.entry.set_counts(self.locks.len(), self.batch.rows());
    }

    /// Gives the transaction a number its owner knows it by (the SQL layer's connection id),
    /// shown by [`TransactionDb::transactions`](super::TransactionDb::transactions). 0 means
    /// none.
    pub fn set_owner(&self, owner: u64) {
        self.entry.set_owner(owner);
    }

    /// The number [`set_owner`](Self::set_owner) gave (0 when none).
    pub fn owner(&self) -> u64 {
        self.entry.owner()
    }

    /// Gives the transaction a text shown by
    /// [`TransactionDb::transactions`](super::TransactionDb::transactions) (what it is for).
    pub fn set_label(&self, label: Option<String>) {
        self.entry.set_label(label);
    }

    fn check_active(&self) -> Result<()> {
        match &self.aborted {
            Some(reason) => Err(TransactionError::InvalidState {
                txn: self.id,
                detail: reason.clone(),
            }
            .into()),
            None => Ok(()),
        }
    }

    fn read_options(&self) -> ReadOptions {
        ReadOptions {
            snapshot: self.snapshot.clone(),
            ..ReadOptions::default()
        }
    }

    // ---- reads ----

    /// The value of `key` in the default keyspace, as this transaction sees it.
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_at(DEFAULT_KEYSPACE_ID, key)
    }

    /// The value of `key` in `keyspace`, as this transaction sees it.
    pub fn get_in(&mut self, keyspace: &Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_at(keyspace.id(), key)
    }

    fn get_at(&mut self, keyspace: u32, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_active()?;
        if let Some(pending) = self.batch.get(keyspace, key) {
            return Ok(pending.map(<[u8]>::to_vec));
        }
        if self.optimistic {
            self.read_set.insert((keyspace, key.to_vec()));
        }
        crate::read::get(&self.tdb.db().inner, keyspace, key, &self.read_options())
    }

    /// Locks `key` (default keyspace) exclusively and reads it: a locking read
    /// (`SELECT ... FOR UPDATE`). Under REPEATABLE READ it fails with a snapshot conflict if
    /// the key changed after the snapshot.
    pub fn get_for_update(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.locking_get(DEFAULT_KEYSPACE_ID, key, LockMode::Exclusive)
    }

    /// [`get_for_update`](Self::get_for_update) in `keyspace`.
    pub fn get_for_update_in(
        &mut self,
        keyspace: &Keyspace,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        self.locking_get(keyspace.id(), key, LockMode::Exclusive)
    }

    /// Locks `key` (default keyspace) exclusively and reads its newest committed value (or
    /// this transaction's own write), whatever the isolation level: a *current read* of a key
    /// the transaction's snapshot does not govern, such as an entry of an index that an
    /// online DDL fills beside it. No snapshot conflict is checked, now or when the key is
    /// written later.
    pub fn get_for_update_latest(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_active()?;
        if !self.optimistic {
            let lock_key: LockKey = (DEFAULT_KEYSPACE_ID, key.to_vec());
            if self.locks.get(&lock_key) != Some(&LockMode::Exclusive) {
                self.acquire(&lock_key, LockMode::Exclusive)?;
            }
            self.validated.insert(lock_key);
        }
        if let Some(pending) = self.batch.get(DEFAULT_KEYSPACE_ID, key) {
            return Ok(pending.map(<[u8]>::to_vec));
        }
        crate::read::get(
            &self.tdb.db().inner,
            DEFAULT_KEYSPACE_ID,
            key,
            &ReadOptions::default(),
        )
    }

    /// Locks `key` (default keyspace) in shared mode and reads it
    /// (`SELECT ... FOR SHARE`): other transactions may read-lock it too, none may write it.
    pub fn get_for_share(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.locking_get(DEFAULT_KEYSPACE_ID, key, LockMode::Shared)
    }

    /// [`get_for_share`](Self::get_for_share) in `keyspace`.
    pub fn get_for_share_in(&mut self, keyspace: &Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.locking_get(keyspace.id(), key, LockMode::Shared)
    }

    fn locking_get(
        &mut self,
        keyspace: u32,
        key: &[u8],
        mode: LockMode,
    ) -> Result<Option<Vec<u8>>> {
        self.check_active()?;
        self.lock(keyspace, key, mode)?;
        self.get_at(keyspace, key)
    }

    /// An iterator over the default keyspace that sees this transaction's writes (as of the
    /// iterator's creation). Bounds come from `options`; its snapshot is replaced by the
    /// transaction's under REPEATABLE READ.
    pub fn iterator(&mut self, options: ReadOptions) -> Result<TransactionIterator> {
        self.iterator_at(DEFAULT_KEYSPACE_ID, options)
    }

    /// [`iterator`](Self::iterator) over `keyspace`.
    pub fn iterator_in(
        &mut self,
        keyspace: &Keyspace,
        options: ReadOptions,
    ) -> Result<TransactionIterator> {
        self.iterator_at(keyspace.id(), options)
    }

    fn iterator_at(
        &mut self,
        keyspace: u32,
        mut options: ReadOptions,
    ) -> Result<TransactionIterator> {
        self.check_active()?;
        if options.prefix_same_as_start {
            return Err(Error::InvalidArgument(
                "transaction iterators do not support prefix_same_as_start; use bounds".into(),
            ));
        }
        if self.snapshot.is_some() {
            options.snapshot.clone_from(&self.snapshot);
        }
        let inner = &self.tdb.db().inner;
        let cmp = inner.user_comparator().clone();
        let pending = self.batch.range(
            keyspace,
            options.lower_bound.as_deref(),
            options.upper_bound.as_deref(),
            cmp.as_ref(),
        );
        let db = crate::read::iter(inner, keyspace, options)?;
        Ok(TransactionIterator::new(db, pending, cmp))
    }

    // ---- writes ----

    /// Writes `key = value` in the default keyspace (locks the key exclusively).
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.write_at(DEFAULT_KEYSPACE_ID, key, Some(value))
    }

    /// Writes `key = value` in `keyspace`.
    pub fn put_in(&mut self, keyspace: &Keyspace, key: &[u8], value: &[u8]) -> Result<()> {
        self.write_at(keyspace.id(), key, Some(value))
    }

    /// Deletes `key` from the default keyspace (locks the key exclusively).
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.write_at(DEFAULT_KEYSPACE_ID, key, None)
    }

    /// Deletes `key` from `keyspace`.
    pub fn delete_in(&mut self, keyspace: &Keyspace, key: &[u8]) -> Result<()> {
        self.write_at(keyspace.id(), key, None)
    }

    /// Writes `key = value` in the default keyspace without locking it or checking it for
    /// conflicts (`RocksDB`'s `PutUntracked`). Only for a key no other transaction can write
    /// unless it holds a lock this transaction already holds: the table layer's non-unique
    /// index entries, which end in the primary key of a row whose key it has locked and
    /// validated. An optimistic transaction still validates the key at commit.
    pub fn put_untracked(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.write_untracked(DEFAULT_KEYSPACE_ID, key, Some(value))
    }

    /// Deletes `key` from the default keyspace without locking it; the same contract as
    /// [`put_untracked`](Self::put_untracked).
    pub fn delete_untracked(&mut self, key: &[u8]) -> Result<()> {
        self.write_untracked(DEFAULT_KEYSPACE_ID, key, None)
    }

    fn write_at(&mut self, keyspace: u32, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        self.check_active()?;
        self.check_size(key, value)?;
        self.lock(keyspace, key, LockMode::Exclusive)?;
        self.buffer(keyspace, key, value)
    }

    fn write_untracked(&mut self, keyspace: u32, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        if self.options.bulk.is_some() {
            // A bulk chunk commit releases every lock, so the lock that protects this key
            // may be gone by now: take the key's own.
            return self.write_at(keyspace, key, value);
        }
        self.check_active()?;
        self.check_size(key, value)?;
        self.buffer(keyspace, key, value)
    }

    fn check_size(&self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let limit = self
            .options
            .max_bytes
            .unwrap_or(self.tdb.shared().options.max_transaction_bytes);
        let would_use = self.batch.bytes() + IndexedBatch::charge(key, value);
        if would_use > limit {
            return Err(TransactionError::TooLarge { would_use, limit }.into());
        }
        Ok(())
    }

    /// Adds the write to the batch (and commits a chunk in bulk mode).
    fn buffer(&mut self, keyspace: u32, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        match value {
            Some(value) => self.batch.put(keyspace, key, value),
            None => self.batch.delete(keyspace, key),
        }
        self.show_counts();
        if let Some(bulk) = self.options.bulk {
            if self.batch.rows() >= bulk.rows || self.batch.bytes() >= bulk.bytes {
                self.commit_chunk()?;
                self.tdb
                    .shared()
                    .stats
                    .bulk_commits
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    // ---- locks ----

    fn lock_timeout(&self) -> Duration {
        self.options
            .lock_wait_timeout
            .unwrap_or(self.tdb.shared().options.lock_wait_timeout)
    }

    /// Locks `key` for this transaction (pessimistic only) and, under REPEATABLE READ, checks
    /// that nobody committed a change to it after the snapshot (invariant 2).
    fn lock(&mut self, keyspace: u32, key: &[u8], mode: LockMode) -> Result<()> {
        if self.optimistic {
            return Ok(());
        }
        let lock_key: LockKey = (keyspace, key.to_vec());
        let held = self.locks.get(&lock_key).copied();
        if held != Some(LockMode::Exclusive) && held != Some(mode) {
            self.acquire(&lock_key, mode)?;
        }
        if let Some(snapshot) = self.snapshot_seqno() {
            if !self.validated.contains(&lock_key) {
                let changed_at = newest_seqno(&self.tdb.db().inner, keyspace, key)?;
                if changed_at > snapshot {
                    self.tdb
                        .shared()
                        .stats
                        .snapshot_conflicts
                        .fetch_add(1, Ordering::Relaxed);
                    return Err(TransactionError::SnapshotConflict {
                        key: show_key(key),
                        changed_at,
                        snapshot,
                    }
                    .into());
                }
                self.validated.insert(lock_key);
            }
        }
        Ok(())
    }

    /// Takes `lock_key` in `mode` in the lock table and records it (invariant 1). A deadlock
    /// rolls the whole transaction back, as `InnoDB` does.
    pub(super) fn acquire(&mut self, lock_key: &LockKey, mode: LockMode) -> Result<()> {
        let shared = self.tdb.shared();
        match shared.locks.lock_as(
            self.id,
            lock_key,
            mode,
            self.lock_timeout(),
            &shared.stats,
            Some(&self.entry),
        ) {
            Ok(()) => {
                let held = self.locks.entry(lock_key.clone()).or_insert(mode);
                if mode == LockMode::Exclusive {
                    *held = LockMode::Exclusive;
                }
                self.show_counts();
                Ok(())
            }
            Err(error @ TransactionError::Deadlock { .. }) => {
                self.release();
                self.aborted = Some(format!("rolled back after a deadlock ({error})"));
                self.finished = true;
                self.tdb.shared().registry.remove(self.id);
                self.tdb
                    .shared()
                    .stats
                    .rollbacks
                    .fetch_add(1, Ordering::Relaxed);
                Err(error.into())
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Drops every change and lock (invariant 3).
    pub(super) fn release(&mut self) {
        self.batch.clear();
        self.savepoints.clear();
        self.validated.clear();
        self.read_set.clear();
        // Also forgets wait edges pointing at this transaction when it holds no lock.
        self.tdb
            .shared()
            .locks
            .unlock_all(self.id, self.locks.keys());
        self.locks.clear();
        self.show_counts();
    }

    // ---- savepoints ----

    /// Marks the current state; [`rollback_to_savepoint`](Self::rollback_to_savepoint) returns
    /// to it. Savepoints nest.
    pub fn set_savepoint(&mut self) {
        self.savepoints.push(self.batch.len());
    }

    /// Undoes the changes made since the newest savepoint and removes it. Locks taken since
    /// stay held until the transaction ends (as in `InnoDB`).
    pub fn rollback_to_savepoint(&mut self) -> Result<()> {
        self.check_active()?;
        let Some(len) = self.savepoints.pop() else {
            return Err(TransactionError::InvalidState {
                txn: self.id,
                detail: "rollback_to_savepoint with no savepoint set".into(),
            }
            .into());
        };
        self.batch.truncate(len);
        self.show_counts();
        Ok(())
    }

    /// Removes the newest savepoint, keeping the changes made since.
    pub fn pop_savepoint(&mut self) -> Result<()> {
        self.check_active()?;
        if self.savepoints.pop().is_none() {
            return Err(TransactionError::InvalidState {
                txn: self.id,
                detail: "pop_savepoint with no savepoint set".into(),
            }
            .into());
        }
        Ok(())
    }

    /// Distinct keys changed and not yet committed.
    pub fn pending_rows(&self) -> usize {
        self.batch.rows()
    }

    /// Memory charged for the uncommitted changes.
    pub fn pending_bytes(&self) -> usize {
        self.batch.bytes()
    }

    // ---- commit ----

    /// Writes the changes with the transaction's durability, holding its locks until the
    /// write returned. Nothing is written if it fails.
    pub fn commit(mut self) -> Result<()> {
        self.check_active()?;
        self.commit_chunk()?;
        self.finished = true;
        self.tdb
            .shared()
            .stats
            .commits
            .fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Commits what is pending and releases the locks; the transaction goes on with a fresh
    /// snapshot (bulk mode's intermediate commit, and the last step of `commit`).
    fn commit_chunk(&mut self) -> Result<()> {
        if self.optimistic {
            self.validate_optimistic()?;
        }
        if !self.batch.is_empty() {
            let batch = self.batch.to_write_batch()?;
            self.entry.set_committing(true);
            let written = self.tdb.db().write(batch, &self.options.write_options);
            self.entry.set_committing(false);
            written?;
        }
        self.release();
        self.refresh_snapshot();
        Ok(())
    }

    /// Drops the changes and releases the locks.
    pub fn rollback(mut self) {
        self.finish_rollback();
    }

    fn finish_rollback(&mut self) {
        if !self.finished {
            self.release();
            self.finished = true;
            self.tdb
                .shared()
                .stats
                .rollbacks
                .fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        self.finish_rollback();
        self.tdb.shared().registry.remove(self.id);
    }
}
