//! Metadata locks: DDL waits for the transactions that use a table, and statements that
//! come after a waiting DDL queue behind it, as `MySQL`'s metadata locking does.
//!
//! A [`TableTxn`](crate::TableTxn) takes a *shared* lock on a table (by table id) before its
//! first read or write of it and holds it until it commits or rolls back (a `SELECT` in
//! autocommit mode is a transaction of one statement, so it holds the lock for the statement).
//! DROP TABLE, DROP DATABASE, TRUNCATE, RENAME, DROP INDEX and an ALTER TABLE that changes
//! the definition in place or rewrites the table take an *exclusive* lock for the whole
//! statement; CREATE INDEX and the online rewrites take it only for their switch, after the
//! copy, so writers go on while rows are copied (as `InnoDB`'s online DDL does). The fence (fence.rs) stays for the table layer's own
//! background writers, which take no metadata lock.
//!
//! A wait ends at the deadline ([`Error::LockWaitTimeout`], `MySQL`'s 1205) or when the
//! [`LockWaiter`] installed on the calling thread says the statement was killed
//! ([`Error::Interrupted`]). The deadline is the shorter of the store's `ddl_wait_timeout`
//! and the [`MetadataWait`] installed on the thread (the SQL layer's `lock_wait_timeout`).
//!
//! Invariants:
//! 1. An exclusive lock is granted only when no shared lock on the table is held, and while
//!    one is requested or held no new shared lock is granted: new statements queue behind
//!    the waiting DDL, so a stream of readers cannot starve it.
//! 2. A transaction never waits for a table it holds already (its held list is checked
//!    first), so a reader inside a transaction is not queued behind a DDL that waits for it.
//! 3. A transaction that must wait while it holds a shared lock that an exclusive request
//!    waits for is in a deadlock with that DDL: it fails at once with [`Error::Deadlock`]
//!    (the DML is the victim, as in `MySQL`), and its locks go with its rollback.
//! 4. Exclusive requests come one at a time (the store's DDL mutex is held around them), so
//!    two DDL statements never deadlock on metadata locks.
//! 5. The lock table is sharded by table id: the hot path (an uncontended shared lock and its
//!    release) locks one shard's mutex, never a store-wide one.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Shards of the lock table (a power of two).
const SHARDS: usize = 64;

/// How long one sleep of a waiter lasts at most, so KILL and a deadlock formed after the
/// wait began are noticed.
const POLL: Duration = Duration::from_millis(20);

/// What `SHOW PROCESSLIST` shows as the State of a statement waiting here.
pub const WAITING_STATE: &str = "Waiting for table metadata lock";

/// The caller's side of a wait: whether its statement was killed, and where to show that it
/// waits (the SQL layer's process list).
pub trait LockWaiter: Send + Sync {
    /// The statement was killed: the wait ends with [`Error::Interrupted`].
    fn interrupted(&self) -> bool;
    /// The statement starts (`true`) or stops (`false`) waiting for a metadata lock.
    fn waiting(&self, waiting: bool);
}

/// How metadata lock waits on this thread behave, installed for a statement with
/// [`MetadataWait::install`].
#[derive(Clone)]
pub struct MetadataWait {
    /// At most this long (the store's `ddl_wait_timeout` is the limit when shorter).
    pub timeout: Duration,
    pub waiter: Option<Arc<dyn LockWaiter>>,
}

impl std::fmt::Debug for MetadataWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataWait")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

thread_local! {
    static CURRENT: RefCell<Option<MetadataWait>> = const { RefCell::new(None) };
}

/// Restores the wait installed before it when dropped.
#[derive(Debug)]
pub struct MetadataWaitGuard {
    previous: Option<MetadataWait>,
}

impl Drop for MetadataWaitGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

impl MetadataWait {
    /// Makes the metadata lock waits of this thread use `self` until the guard is dropped.
    #[must_use]
    pub fn install(self) -> MetadataWaitGuard {
        let previous = CURRENT.with(|c| c.borrow_mut().replace(self));
        MetadataWaitGuard { previous }
    }
}

/// The deadline of a wait starting now and the waiter, given the store's timeout.
fn current_wait(store_timeout: Duration) -> (Duration, Option<Arc<dyn LockWaiter>>) {
    CURRENT.with(|c| match c.borrow().as_ref() {
        Some(wait) => (wait.timeout.min(store_timeout), wait.waiter.clone()),
        None => (store_timeout, None),
    })
}

/// The store's timeout for DDL waits, shortened by the thread's [`MetadataWait`].
pub(crate) fn wait_timeout(store_timeout: Duration) -> Duration {
    current_wait(store_timeout).0
}

/// One table's lock.
#[derive(Debug, Default)]
struct TableLock {
    /// Transactions holding it shared.
    shared: u32,
    /// A DDL holds it exclusive.
    exclusive: bool,
    /// A DDL waits for it exclusive.
    requested: bool,
}

impl TableLock {
    fn idle(&self) -> bool {
        self.shared == 0 && !self.exclusive && !self.requested
    }
}

/// Hashes a table id as itself: ids are small distinct integers, and the lock table is on
/// every statement's path (`SipHash` would cost more than the rest of the lock).
#[derive(Debug, Default, Clone, Copy)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    fn write_u32(&mut self, id: u32) {
        self.0 = u64::from(id);
    }
}

type TableMap = HashMap<u32, TableLock, std::hash::BuildHasherDefault<IdHasher>>;

#[derive(Debug, Default)]
struct Shard {
    tables: Mutex<TableMap>,
    /// Signalled when a lock is released or a request withdrawn.
    changed: Condvar,
}

/// A store's metadata locks, by table id.
#[derive(Debug)]
pub(crate) struct MetadataLocks {
    shards: Vec<Shard>,
}

impl Default for MetadataLocks {
    fn default() -> Self {
        MetadataLocks {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
        }
    }
}

/// Tells the waiter when a wait begins and ends.
struct Showing<'w>(Option<&'w Arc<dyn LockWaiter>>);

impl<'w> Showing<'w> {
    fn new(waiter: Option<&'w Arc<dyn LockWaiter>>) -> Self {
        if let Some(w) = waiter {
            w.waiting(true);
        }
        Showing(waiter)
    }
}

impl Drop for Showing<'_> {
    fn drop(&mut self) {
        if let Some(w) = self.0 {
            w.waiting(false);
        }
    }
}

impl MetadataLocks {
    fn shard(&self, table_id: u32) -> &Shard {
        &self.shards[table_id as usize % SHARDS]
    }

    fn tables(shard: &Shard) -> MutexGuard<'_, TableMap> {
        shard.tables.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes `table_id` shared for a transaction that holds `held` already (which must not
    /// list `table_id`, invariant 2). Returns whether it had to wait: a DDL may have changed
    /// the table meanwhile.
    pub(crate) fn lock_shared(
        &self,
        table_id: u32,
        held: &[u32],
        store_timeout: Duration,
    ) -> Result<bool> {
        let shard = self.shard(table_id);
        let mut tables = Self::tables(shard);
        let lock = tables.entry(table_id).or_default();
        if !lock.exclusive && !lock.requested {
            lock.shared += 1;
            return Ok(false);
        }
        drop(tables);
        let (timeout, waiter) = current_wait(store_timeout);
        let deadline = Instant::now() + timeout;
        let _showing = Showing::new(waiter.as_ref());
        loop {
            // Invariant 3: checked without this shard's mutex (another shard's is taken).
            if held.iter().any(|&id| self.is_requested(id)) {
                self.forget_if_idle(table_id);
                return Err(Error::Deadlock);
            }
            let mut tables = Self::tables(shard);
            let lock = tables.entry(table_id).or_default();
            if !lock.exclusive && !lock.requested {
                lock.shared += 1;
                return Ok(true);
            }
            if let Err(error) = give_up(deadline, waiter.as_ref()) {
                if lock.idle() {
                    tables.remove(&table_id);
                }
                return Err(error);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            drop(
                shard
                    .changed
                    .wait_timeout(tables, left.min(POLL))
                    .unwrap_or_else(PoisonError::into_inner),
            );
        }
    }

    /// Releases one shared hold of each of `ids`.
    pub(crate) fn unlock_shared(&self, ids: &[u32]) {
        for &id in ids {
            let shard = self.shard(id);
            let mut tables = Self::tables(shard);
            let Some(lock) = tables.get_mut(&id) else {
                debug_assert!(false, "shared lock of {id} not held");
                continue;
            };
            lock.shared = lock.shared.saturating_sub(1);
            if lock.shared == 0 {
                if lock.requested {
                    shard.changed.notify_all();
                } else if lock.idle() {
                    tables.remove(&id);
                }
            }
        }
    }

    fn is_requested(&self, table_id: u32) -> bool {
        Self::tables(self.shard(table_id))
            .get(&table_id)
            .is_some_and(|l| l.requested)
    }

    fn forget_if_idle(&self, table_id: u32) {
        let mut tables = Self::tables(self.shard(table_id));
        if tables.get(&table_id).is_some_and(TableLock::idle) {
            tables.remove(&table_id);
        }
    }

    /// Takes every one of `ids` exclusive, waiting for their shared holders to end
    /// (invariant 1). Called under the store's DDL mutex (invariant 4).
    pub(crate) fn lock_exclusive(
        &self,
        ids: &[u32],
        store_timeout: Duration,
    ) -> Result<ExclusiveLock<'_>> {
        let (timeout, waiter) = current_wait(store_timeout);
        let deadline = Instant::now() + timeout;
        let mut granted = ExclusiveLock {
            locks: self,
            ids: Vec::with_capacity(ids.len()),
        };
        let mut showing = None;
        for &id in ids {
            if granted.ids.contains(&id) {
                continue;
            }
            let shard = self.shard(id);
            let mut tables = Self::tables(shard);
            tables.entry(id).or_default().requested = true;
            loop {
                let lock = tables.entry(id).or_default();
                if lock.shared == 0 && !lock.exclusive {
                    lock.requested = false;
                    lock.exclusive = true;
                    granted.ids.push(id);
                    break;
                }
                if let Err(error) = give_up(deadline, waiter.as_ref()) {
                    lock.requested = false;
                    if lock.idle() {
                        tables.remove(&id);
                    }
                    // Statements queued behind this request go on.
                    shard.changed.notify_all();
                    return Err(error);
                }
                if showing.is_none() {
                    showing = Some(Showing::new(waiter.as_ref()));
                }
                let left = deadline.saturating_duration_since(Instant::now());
                tables = shard
                    .changed
                    .wait_timeout(tables, left.min(POLL))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
        Ok(granted)
    }
}

/// Fails a wait past its deadline or of a killed statement.
fn give_up(deadline: Instant, waiter: Option<&Arc<dyn LockWaiter>>) -> Result<()> {
    if waiter.is_some_and(|w| w.interrupted()) {
        return Err(Error::Interrupted);
    }
    if Instant::now() >= deadline {
        return Err(Error::LockWaitTimeout);
    }
    Ok(())
}

/// Exclusive metadata locks held by a DDL statement; dropping it releases them and lets the
/// statements queued behind them go on.
#[derive(Debug)]
pub(crate) struct ExclusiveLock<'l> {
    locks: &'l MetadataLocks,
    ids: Vec<u32>,
}

impl Drop for ExclusiveLock<'_> {
    fn drop(&mut self) {
        for &id in &self.ids {
            let shard = self.locks.shard(id);
            let mut tables = MetadataLocks::tables(shard);
            if let Some(lock) = tables.get_mut(&id) {
                lock.exclusive = false;
                if lock.idle() {
                    tables.remove(&id);
                }
            }
            shard.changed.notify_all();
        }
    }
}

/// The shared locks one transaction holds; released when it is dropped (after the
/// transaction's commit or rollback: it is the transaction's last field).
#[derive(Debug)]
pub(crate) struct SharedLocks {
    locks: Arc<MetadataLocks>,
    ids: Vec<u32>,
}

impl SharedLocks {
    pub(crate) fn new(locks: Arc<MetadataLocks>) -> SharedLocks {
        SharedLocks {
            locks,
            ids: Vec::new(),
        }
    }

    /// Whether no table is held (the transaction has read and written no table yet).
    pub(crate) fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Whether `table_id` is held (the hot path of every statement after the first).
    pub(crate) fn holds(&self, table_id: u32) -> bool {
        self.ids.contains(&table_id)
    }

    /// Takes `table_id` shared (see [`MetadataLocks::lock_shared`]); returns whether it
    /// waited.
    pub(crate) fn lock(&mut self, table_id: u32, store_timeout: Duration) -> Result<bool> {
        let waited = self.locks.lock_shared(table_id, &self.ids, store_timeout)?;
        self.ids.push(table_id);
        Ok(waited)
    }

    /// Releases every lock held (a deadlock's rollback, invariant 3).
    pub(crate) fn release_all(&mut self) {
        self.locks.unlock_shared(&self.ids);
        self.ids.clear();
    }
}

impl Drop for SharedLocks {
    fn drop(&mut self) {
        self.release_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    const LONG: Duration = Duration::from_secs(30);

    /// Counts the waits it is told of.
    #[derive(Default)]
    struct Flag {
        killed: AtomicBool,
        waits: std::sync::atomic::AtomicU32,
    }

    impl LockWaiter for Flag {
        fn interrupted(&self) -> bool {
            self.killed.load(Ordering::SeqCst)
        }
        fn waiting(&self, waiting: bool) {
            if waiting {
                self.waits.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    #[test]
    fn exclusive_waits_for_shared_holders_and_new_readers_queue_behind_it() {
        let locks = Arc::new(MetadataLocks::default());
        let mut reader = SharedLocks::new(locks.clone());
        assert!(!reader.lock(7, LONG).unwrap(), "no wait without DDL");
        let granted = Arc::new(AtomicBool::new(false));
        let ddl = {
            let (locks, granted) = (locks.clone(), granted.clone());
            std::thread::spawn(move || {
                let lock = locks.lock_exclusive(&[7], LONG).unwrap();
                granted.store(true, Ordering::SeqCst);
                drop(lock);
            })
        };
        while !locks.is_requested(7) {
            std::thread::yield_now();
        }
        // A newcomer queues behind the request; the holder reads on (invariant 2).
        let flag = Arc::new(Flag::default());
        let newcomer = {
            let (locks, flag) = (locks.clone(), flag.clone());
            std::thread::spawn(move || {
                let _wait = MetadataWait {
                    timeout: LONG,
                    waiter: Some(flag),
                }
                .install();
                SharedLocks::new(locks).lock(7, LONG)
            })
        };
        while flag.waits.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        assert!(reader.holds(7));
        assert!(
            !granted.load(Ordering::SeqCst),
            "DDL granted beside a reader"
        );
        drop(reader);
        ddl.join().unwrap();
        assert!(granted.load(Ordering::SeqCst));
        assert!(newcomer.join().unwrap().unwrap(), "the newcomer waited");
        assert!(locks
            .shards
            .iter()
            .all(|s| MetadataLocks::tables(s).is_empty()));
    }

    #[test]
    fn an_exclusive_wait_ends_at_its_deadline_and_lets_queued_readers_go() {
        let locks = Arc::new(MetadataLocks::default());
        let mut holder = SharedLocks::new(locks.clone());
        holder.lock(7, LONG).unwrap();
        assert!(!SharedLocks::new(locks.clone()).lock(8, LONG).unwrap());
        assert!(matches!(
            locks.lock_exclusive(&[8, 7], Duration::from_millis(30)),
            Err(Error::LockWaitTimeout)
        ));
        let mut other = SharedLocks::new(locks.clone());
        assert!(!other.lock(7, LONG).unwrap(), "the request was withdrawn");
        assert!(!other.lock(8, LONG).unwrap(), "and 8 released");
    }

    #[test]
    fn a_killed_wait_ends_and_a_holder_waiting_behind_its_own_table_is_a_deadlock() {
        let locks = Arc::new(MetadataLocks::default());
        let mut holder = SharedLocks::new(locks.clone());
        holder.lock(1, LONG).unwrap();
        let flag = Arc::new(Flag::default());
        flag.killed.store(true, Ordering::SeqCst);
        let _wait = MetadataWait {
            timeout: LONG,
            waiter: Some(flag.clone()),
        }
        .install();
        assert!(matches!(
            locks.lock_exclusive(&[1], LONG),
            Err(Error::Interrupted)
        ));
        flag.killed.store(false, Ordering::SeqCst);
        // A DDL holds 2 and waits for 1, which `holder` holds: `holder` must not wait for 2.
        let ddl = {
            let locks = locks.clone();
            std::thread::spawn(move || locks.lock_exclusive(&[2, 1], LONG).map(|_| ()))
        };
        while !locks.is_requested(1) {
            std::thread::yield_now();
        }
        assert!(matches!(holder.lock(2, LONG), Err(Error::Deadlock)));
        holder.release_all();
        ddl.join().unwrap().unwrap();
    }
}
