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
//! LOCK TABLES ([`Store::lock_tables_for_session`](crate::Store::lock_tables_for_session))
//! takes table locks a session holds across statements until UNLOCK TABLES, as `MySQL`'s
//! LOCK TABLES does: WRITE lets no other session use the table (it waits for every
//! transaction that used it, like a DDL), READ lets no other session write it (it waits for
//! every transaction that wrote it). The holder's own statements (the thread's
//! [`MetadataWait::owner`]) pass its locks, DDL included; a transaction that holds a table
//! shared records whether it wrote it, which a READ lock waits for. While a session holds
//! table locks, its transactions may use only those tables: any other fails with
//! [`Error::TableNotLocked`] (`MySQL`'s 1100), a write to one it holds READ with
//! [`Error::TableLockedForRead`] (1099).
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
//!    Locks on names (views, names being created: `name_lock.rs`) are taken before that
//!    mutex, in sorted order; a transaction's held names count for invariant 3 too.
//! 5. A table lock of LOCK TABLES is taken under the store's DDL mutex too, one table after
//!    another as a DDL takes them, so it never deadlocks with a DDL or another LOCK TABLES;
//!    once held, its owner waits for no metadata lock of the tables it holds.
//! 6. The lock table is sharded by table id: the hot path (an uncontended shared lock and its
//!    release) locks one shard's mutex, never a store-wide one.
//! 7. A session's table locks are listed once, in `MetadataLocks::sessions`, and follow its
//!    tables: a rewriting ALTER TABLE under the session's own WRITE lock gives the table new
//!    ids, and [`MetadataLocks::move_session_locks`] moves the lock to them, so other
//!    sessions stay out of the rewritten table and UNLOCK TABLES releases the new ids.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::name_lock::{NameKey, NameLocks};

/// Shards of the lock table (a power of two).
const SHARDS: usize = 64;

/// How long one sleep of a waiter lasts at most, so KILL and a deadlock formed after the
/// wait began are noticed.
pub(crate) const POLL: Duration = Duration::from_millis(20);

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
    /// The session the statement runs for (the SQL layer's connection id): its own LOCK
    /// TABLES locks do not hold it up.
    pub owner: Option<u64>,
}

impl std::fmt::Debug for MetadataWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataWait")
            .field("timeout", &self.timeout)
            .field("owner", &self.owner)
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
pub(crate) fn current_wait(store_timeout: Duration) -> (Duration, Option<Arc<dyn LockWaiter>>) {
    CURRENT.with(|c| match c.borrow().as_ref() {
        Some(wait) => (wait.timeout.min(store_timeout), wait.waiter.clone()),
        None => (store_timeout, None),
    })
}

/// The session this thread's statement runs for, if the caller said.
fn current_owner() -> Option<u64> {
    CURRENT.with(|c| c.borrow().as_ref().and_then(|w| w.owner))
}

/// Who holds a name lock (`name_lock.rs`): the session the statement runs for, or its thread
/// when the caller named no session, so a holder recognises its own locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holder {
    Session(u64),
    Thread(std::thread::ThreadId),
}

pub(crate) fn current_holder() -> Holder {
    current_owner().map_or_else(
        || Holder::Thread(std::thread::current().id()),
        Holder::Session,
    )
}

/// The store's timeout for DDL waits, shortened by the thread's [`MetadataWait`].
pub(crate) fn wait_timeout(store_timeout: Duration) -> Duration {
    current_wait(store_timeout).0
}

/// How LOCK TABLES locks a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableLockMode {
    /// Other sessions may read the table, not write it.
    Read,
    /// Other sessions may neither read nor write the table.
    Write,
}

/// One table's lock.
#[derive(Debug, Default)]
struct TableLock {
    /// Transactions holding it shared.
    shared: u32,
    /// Those of `shared` that wrote the table.
    writers: u32,
    /// A DDL holds it exclusive.
    exclusive: bool,
    /// A DDL (or LOCK TABLES ... WRITE) waits for it exclusive.
    requested: bool,
    /// Sessions holding it with LOCK TABLES ... READ.
    read_owners: Vec<u64>,
    /// The session holding it with LOCK TABLES ... WRITE.
    write_owner: Option<u64>,
}

impl TableLock {
    fn idle(&self) -> bool {
        self.shared == 0
            && !self.exclusive
            && !self.requested
            && self.read_owners.is_empty()
            && self.write_owner.is_none()
    }

    /// Whether a transaction of `owner` may take it shared (to write it: `write`).
    fn shared_grantable(&self, owner: Option<u64>, write: bool) -> bool {
        if owner.is_some() && self.write_owner == owner {
            return true;
        }
        let read_locked = write && self.read_locked_by_other(owner);
        self.write_owner.is_none() && !self.exclusive && !self.requested && !read_locked
    }

    fn read_locked_by_other(&self, owner: Option<u64>) -> bool {
        self.read_owners.iter().any(|&o| Some(o) != owner)
    }

    /// Whether a DDL of `owner` may take it exclusive.
    fn exclusive_grantable(&self, owner: Option<u64>) -> bool {
        self.shared == 0
            && !self.exclusive
            && (self.write_owner.is_none() || self.write_owner == owner)
            && !self.read_locked_by_other(owner)
    }

    /// Whether `owner` may take it with LOCK TABLES in `mode`.
    fn table_lock_grantable(&self, owner: u64, mode: TableLockMode) -> bool {
        let others_lock = self.write_owner.is_some_and(|o| o != owner);
        match mode {
            TableLockMode::Read => !self.exclusive && !others_lock && self.writers == 0,
            TableLockMode::Write => {
                self.shared == 0
                    && !self.exclusive
                    && !others_lock
                    && !self.read_locked_by_other(Some(owner))
            }
        }
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
    /// The tables each session holds with LOCK TABLES, by owner: the only tables its
    /// transactions may use, and what its [`SessionLocks`] releases (invariant 7).
    /// `any_session` is whether the map has an entry, so the hot path of sessions without
    /// table locks reads one atomic.
    sessions: Mutex<HashMap<u64, Vec<(u32, TableLockMode)>>>,
    any_session: AtomicBool,
    /// Locks on names: tables being created, views (`name_lock.rs`).
    pub(crate) names: Arc<NameLocks>,
}

impl Default for MetadataLocks {
    fn default() -> Self {
        MetadataLocks {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            sessions: Mutex::default(),
            any_session: AtomicBool::new(false),
            names: Arc::default(),
        }
    }
}

/// Tells the waiter when a wait begins and ends.
pub(crate) struct Showing<'w>(Option<&'w Arc<dyn LockWaiter>>);

impl<'w> Showing<'w> {
    pub(crate) fn new(waiter: Option<&'w Arc<dyn LockWaiter>>) -> Self {
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

    fn sessions(&self) -> MutexGuard<'_, HashMap<u64, Vec<(u32, TableLockMode)>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Fails with [`Error::TableNotLocked`] when `owner` holds table locks and `table_id`
    /// (named `table`) is not one of them.
    fn check_locked_by_session(
        &self,
        owner: Option<u64>,
        table_id: u32,
        table: &str,
    ) -> Result<()> {
        let Some(owner) = owner else {
            return Ok(());
        };
        if !self.any_session.load(Ordering::Acquire) {
            return Ok(());
        }
        match self.sessions().get(&owner) {
            Some(held) if !held.iter().any(|(id, _)| *id == table_id) => {
                Err(Error::TableNotLocked {
                    table: table.to_owned(),
                })
            }
            _ => Ok(()),
        }
    }

    /// Records that `owner` holds `id` in `mode` with LOCK TABLES.
    fn add_session_lock(&self, owner: u64, id: u32, mode: TableLockMode) {
        let mut sessions = self.sessions();
        sessions.entry(owner).or_default().push((id, mode));
        self.any_session.store(true, Ordering::Release);
    }

    /// Releases every table lock `owner` holds with LOCK TABLES.
    fn release_session_locks(&self, owner: u64) {
        let held = {
            let mut sessions = self.sessions();
            let held = sessions.remove(&owner).unwrap_or_default();
            self.any_session
                .store(!sessions.is_empty(), Ordering::Release);
            held
        };
        for (id, mode) in held {
            let shard = self.shard(id);
            let mut tables = Self::tables(shard);
            if let Some(lock) = tables.get_mut(&id) {
                match mode {
                    TableLockMode::Read => {
                        if let Some(at) = lock.read_owners.iter().position(|&o| o == owner) {
                            lock.read_owners.swap_remove(at);
                        }
                    }
                    TableLockMode::Write => lock.write_owner = None,
                }
                if lock.idle() {
                    tables.remove(&id);
                }
            }
            shard.changed.notify_all();
        }
    }

    /// A rewrite gave table `old` the new table id `new` (invariant 7): the LOCK TABLES
    /// locks on `old` now hold `new`. Called under the DDL mutex with `old` held exclusive,
    /// so no session takes or releases a table lock on either meanwhile.
    pub(crate) fn move_session_locks(&self, old: u32, new: u32) {
        if !self.any_session.load(Ordering::Acquire) {
            return;
        }
        let (read_owners, write_owner) = {
            let mut tables = Self::tables(self.shard(old));
            let Some(lock) = tables.get_mut(&old) else {
                return;
            };
            (
                std::mem::take(&mut lock.read_owners),
                lock.write_owner.take(),
            )
        };
        if read_owners.is_empty() && write_owner.is_none() {
            return;
        }
        for held in self.sessions().values_mut() {
            for (id, _) in held.iter_mut().filter(|(id, _)| *id == old) {
                *id = new;
            }
        }
        let shard = self.shard(new);
        let mut tables = Self::tables(shard);
        let lock = tables.entry(new).or_default();
        lock.read_owners.extend(read_owners);
        lock.write_owner = lock.write_owner.or(write_owner);
        shard.changed.notify_all();
    }

    /// Takes `table_id` shared for a transaction that holds `held` already (which must not
    /// list `table_id`, invariant 2), to write it if `write` (`table` names it in the error
    /// when the session's own LOCK TABLES ... READ forbids that). Returns whether it had to
    /// wait: a DDL may have changed the table meanwhile.
    pub(crate) fn lock_shared(
        &self,
        table_id: u32,
        table: &str,
        write: bool,
        held: &[u32],
        held_names: &[(NameKey, Holder)],
        store_timeout: Duration,
    ) -> Result<bool> {
        self.wait_shared(
            table_id,
            table,
            write,
            false,
            (held, held_names),
            store_timeout,
        )
    }

    /// Marks `table_id`, which the transaction holds shared (listed in `held`), written:
    /// waits while another session holds it with LOCK TABLES ... READ.
    pub(crate) fn upgrade_shared(
        &self,
        table_id: u32,
        table: &str,
        held: &[u32],
        held_names: &[(NameKey, Holder)],
        store_timeout: Duration,
    ) -> Result<()> {
        self.wait_shared(
            table_id,
            table,
            true,
            true,
            (held, held_names),
            store_timeout,
        )
        .map(drop)
    }

    /// [`lock_shared`](Self::lock_shared), or with `held_already` the upgrade of a held
    /// lock to a writer's (which waits for LOCK TABLES ... READ of other sessions only).
    fn wait_shared(
        &self,
        table_id: u32,
        table: &str,
        write: bool,
        held_already: bool,
        (held, held_names): (&[u32], &[(NameKey, Holder)]),
        store_timeout: Duration,
    ) -> Result<bool> {
        let owner = current_owner();
        self.check_locked_by_session(owner, table_id, table)?;
        let grant = |lock: &mut TableLock| -> Result<bool> {
            if write && owner.is_some_and(|o| lock.read_owners.contains(&o)) {
                return Err(Error::TableLockedForRead {
                    table: table.to_owned(),
                });
            }
            let grantable = if held_already {
                !lock.read_locked_by_other(owner)
            } else {
                lock.shared_grantable(owner, write)
            };
            if grantable {
                if !held_already {
                    lock.shared += 1;
                }
                if write {
                    lock.writers += 1;
                }
            }
            Ok(grantable)
        };
        let shard = self.shard(table_id);
        let mut tables = Self::tables(shard);
        let lock = tables.entry(table_id).or_default();
        match grant(lock) {
            Ok(true) => return Ok(false),
            Ok(false) => {}
            Err(error) => {
                if lock.idle() {
                    tables.remove(&table_id);
                }
                return Err(error);
            }
        }
        drop(tables);
        let (timeout, waiter) = current_wait(store_timeout);
        let deadline = Instant::now() + timeout;
        let _showing = Showing::new(waiter.as_ref());
        loop {
            // Invariant 3: checked without this shard's mutex (another shard's is taken).
            if self.any_requested(held, held_names, Some(table_id)) {
                self.forget_if_idle(table_id);
                return Err(Error::Deadlock);
            }
            let mut tables = Self::tables(shard);
            let lock = tables.entry(table_id).or_default();
            match grant(lock) {
                Ok(true) => return Ok(true),
                Ok(false) => {}
                Err(error) => {
                    if lock.idle() {
                        tables.remove(&table_id);
                    }
                    return Err(error);
                }
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

    /// Releases one shared hold of each of `ids` (with whether the holder wrote the table).
    pub(crate) fn unlock_shared(&self, ids: &[(u32, bool)]) {
        for &(id, wrote) in ids {
            let shard = self.shard(id);
            let mut tables = Self::tables(shard);
            let Some(lock) = tables.get_mut(&id) else {
                debug_assert!(false, "shared lock of {id} not held");
                continue;
            };
            lock.shared = lock.shared.saturating_sub(1);
            if wrote {
                lock.writers = lock.writers.saturating_sub(1);
                if lock.writers == 0 {
                    // A LOCK TABLES ... READ may wait for the last writer.
                    shard.changed.notify_all();
                }
            }
            if lock.shared == 0 {
                if lock.requested {
                    shard.changed.notify_all();
                } else if lock.idle() {
                    tables.remove(&id);
                }
            }
        }
    }

    /// Whether a DDL waits for one of the tables `held` (but `waiting_for`) or names
    /// `held_names` a transaction holds: it must not wait then (invariant 3).
    pub(crate) fn any_requested(
        &self,
        held: &[u32],
        held_names: &[(NameKey, Holder)],
        waiting_for: Option<u32>,
    ) -> bool {
        held.iter()
            .any(|&id| Some(id) != waiting_for && self.is_requested(id))
            || held_names
                .iter()
                .any(|(key, _)| self.names.is_requested(key))
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
        let owner = current_owner();
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
                if lock.exclusive_grantable(owner) {
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

impl MetadataLocks {
    /// Takes `tables` (id and mode) for LOCK TABLES of session `owner`, one after another,
    /// waiting for the transactions that use them as [`lock_exclusive`](Self::lock_exclusive)
    /// does (a WRITE lock queues new statements behind it meanwhile). Called under the
    /// store's DDL mutex (invariant 5). On failure none is kept.
    pub(crate) fn lock_for_session(
        self: &Arc<Self>,
        owner: u64,
        tables: &[(u32, TableLockMode)],
        store_timeout: Duration,
    ) -> Result<SessionLocks> {
        let (timeout, waiter) = current_wait(store_timeout);
        let deadline = Instant::now() + timeout;
        // Dropped on failure: releases what was granted.
        let granted = SessionLocks {
            locks: Arc::clone(self),
            owner,
        };
        let mut showing = None;
        for &(id, mode) in tables {
            let shard = self.shard(id);
            let mut tables = Self::tables(shard);
            // Our own request (a repeated name); a DDL's is never pending here (invariant 5).
            let queue = mode == TableLockMode::Write;
            loop {
                let lock = tables.entry(id).or_default();
                if lock.table_lock_grantable(owner, mode) {
                    if queue {
                        lock.requested = false;
                    }
                    match mode {
                        TableLockMode::Read => lock.read_owners.push(owner),
                        TableLockMode::Write => lock.write_owner = Some(owner),
                    }
                    self.add_session_lock(owner, id, mode);
                    break;
                }
                if let Err(error) = give_up(deadline, waiter.as_ref()) {
                    if queue {
                        lock.requested = false;
                    }
                    if lock.idle() {
                        tables.remove(&id);
                    }
                    shard.changed.notify_all();
                    return Err(error);
                }
                if queue {
                    lock.requested = true;
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

/// The table locks a session took with LOCK TABLES; dropping it (UNLOCK TABLES, a new LOCK
/// TABLES, the session's end) releases them. A session holds one at a time (invariant 7).
#[derive(Debug)]
pub struct SessionLocks {
    locks: Arc<MetadataLocks>,
    owner: u64,
}

impl SessionLocks {
    /// How the session holds `table` (whose definition is current), if it does: a DDL
    /// statement of the holder may change only a table it holds WRITE.
    #[must_use]
    pub fn mode_of(&self, table: &crate::TableDef) -> Option<TableLockMode> {
        let id = crate::index::table_id(table);
        self.locks
            .sessions()
            .get(&self.owner)?
            .iter()
            .find(|(held, _)| *held == id)
            .map(|&(_, mode)| mode)
    }
}

impl Drop for SessionLocks {
    fn drop(&mut self) {
        self.locks.release_session_locks(self.owner);
    }
}

impl crate::Store {
    /// LOCK TABLES for session `owner` (module doc): takes each of `tables` (database, table,
    /// mode; views already replaced by their base tables) until the returned locks are
    /// dropped. Fails with [`Error::NoSuchTable`] for a missing table, and like a DDL's wait
    /// ([`Error::LockWaitTimeout`], [`Error::Interrupted`]); then none is kept.
    pub fn lock_tables_for_session(
        &self,
        owner: u64,
        tables: &[(String, String, TableLockMode)],
    ) -> Result<SessionLocks> {
        let inner = self.inner();
        let _ddl = inner.lock_ddl();
        let catalog = inner.catalog();
        let ids = tables
            .iter()
            .map(|(database, name, mode)| {
                crate::store::table_of(&catalog, database, name)
                    .map(|def| (crate::index::table_id(&def), *mode))
            })
            .collect::<Result<Vec<_>>>()?;
        inner
            .metadata
            .lock_for_session(owner, &ids, inner.ddl_wait_timeout)
    }
}

/// Fails a wait past its deadline or of a killed statement.
pub(crate) fn give_up(deadline: Instant, waiter: Option<&Arc<dyn LockWaiter>>) -> Result<()> {
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

/// The shared locks one transaction holds, each with whether the transaction wrote the
/// table; released when it is dropped (after the transaction's commit or rollback: it is the
/// transaction's last field).
#[derive(Debug)]
pub(crate) struct SharedLocks {
    locks: Arc<MetadataLocks>,
    ids: Vec<u32>,
    written: Vec<bool>,
    /// The views' names it holds (`name_lock.rs`), each with its holder.
    names: Vec<(NameKey, Holder)>,
}

impl SharedLocks {
    pub(crate) fn new(locks: Arc<MetadataLocks>) -> SharedLocks {
        SharedLocks {
            locks,
            ids: Vec::new(),
            written: Vec::new(),
            names: Vec::new(),
        }
    }

    /// Whether no table is held (the transaction has read and written no table yet).
    pub(crate) fn is_empty(&self) -> bool {
        self.ids.is_empty() && self.names.is_empty()
    }

    /// Whether `table_id` is held, to write it if `write` (the hot path of every statement
    /// after the first).
    pub(crate) fn holds(&self, table_id: u32, write: bool) -> bool {
        self.ids
            .iter()
            .position(|&id| id == table_id)
            .is_some_and(|at| !write || self.written[at])
    }

    /// Takes `table_id` (named `table`) shared, to write it if `write` (see
    /// [`MetadataLocks::lock_shared`]), or marks a held one written; returns whether it
    /// waited for a DDL.
    pub(crate) fn lock(
        &mut self,
        table_id: u32,
        table: &str,
        write: bool,
        store_timeout: Duration,
    ) -> Result<bool> {
        if let Some(at) = self.ids.iter().position(|&id| id == table_id) {
            if write && !self.written[at] {
                self.locks.upgrade_shared(
                    table_id,
                    table,
                    &self.ids,
                    &self.names,
                    store_timeout,
                )?;
                self.written[at] = true;
            }
            return Ok(false);
        }
        let waited = self.locks.lock_shared(
            table_id,
            table,
            write,
            &self.ids,
            &self.names,
            store_timeout,
        )?;
        self.ids.push(table_id);
        self.written.push(write);
        Ok(waited)
    }

    /// Takes the name `key` shared (a view the transaction reads), unless held already
    /// (`name_lock.rs`); returns whether it waited for a DDL.
    pub(crate) fn lock_name(&mut self, key: NameKey, store_timeout: Duration) -> Result<bool> {
        if self.names.iter().any(|(k, _)| *k == key) {
            return Ok(false);
        }
        let (ids, names) = (&self.ids, &self.names);
        let (holder, waited) = self.locks.names.lock_shared(&key, store_timeout, || {
            self.locks.any_requested(ids, names, None)
        })?;
        self.names.push((key, holder));
        Ok(waited)
    }

    /// Releases every lock held (a deadlock's rollback, invariant 3).
    pub(crate) fn release_all(&mut self) {
        let held: Vec<(u32, bool)> = self.ids.drain(..).zip(self.written.drain(..)).collect();
        self.locks.unlock_shared(&held);
        for (key, holder) in self.names.drain(..) {
            self.locks.names.unlock_shared(&key, holder);
        }
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
        assert!(
            !reader.lock(7, "t", false, LONG).unwrap(),
            "no wait without DDL"
        );
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
                    owner: None,
                }
                .install();
                SharedLocks::new(locks).lock(7, "t", false, LONG)
            })
        };
        while flag.waits.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        assert!(reader.holds(7, false));
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
        holder.lock(7, "t", false, LONG).unwrap();
        assert!(!SharedLocks::new(locks.clone())
            .lock(8, "u", false, LONG)
            .unwrap());
        assert!(matches!(
            locks.lock_exclusive(&[8, 7], Duration::from_millis(30)),
            Err(Error::LockWaitTimeout)
        ));
        let mut other = SharedLocks::new(locks.clone());
        assert!(
            !other.lock(7, "t", false, LONG).unwrap(),
            "the request was withdrawn"
        );
        assert!(!other.lock(8, "u", false, LONG).unwrap(), "and 8 released");
    }

    #[test]
    fn a_killed_wait_ends_and_a_holder_waiting_behind_its_own_table_is_a_deadlock() {
        let locks = Arc::new(MetadataLocks::default());
        let mut holder = SharedLocks::new(locks.clone());
        holder.lock(1, "t", false, LONG).unwrap();
        let flag = Arc::new(Flag::default());
        flag.killed.store(true, Ordering::SeqCst);
        let _wait = MetadataWait {
            timeout: LONG,
            waiter: Some(flag.clone()),
            owner: None,
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
        assert!(matches!(
            holder.lock(2, "u", false, LONG),
            Err(Error::Deadlock)
        ));
        holder.release_all();
        ddl.join().unwrap().unwrap();
    }

    fn as_owner(owner: u64) -> MetadataWaitGuard {
        MetadataWait {
            timeout: Duration::from_millis(30),
            waiter: None,
            owner: Some(owner),
        }
        .install()
    }

    #[test]
    fn table_locks_keep_other_sessions_out_and_let_their_owner_in() {
        let locks = Arc::new(MetadataLocks::default());
        let read = locks
            .lock_for_session(1, &[(7, TableLockMode::Read)], LONG)
            .unwrap();
        {
            let _other = as_owner(2);
            let mut txn = SharedLocks::new(locks.clone());
            assert!(!txn.lock(7, "t", false, LONG).unwrap(), "readers go on");
            assert!(matches!(
                txn.lock(7, "t", true, LONG),
                Err(Error::LockWaitTimeout)
            ));
            assert!(matches!(
                locks.lock_exclusive(&[7], LONG),
                Err(Error::LockWaitTimeout)
            ));
        }
        {
            let _owner = as_owner(1);
            assert!(matches!(
                SharedLocks::new(locks.clone()).lock(7, "t", true, LONG),
                Err(Error::TableLockedForRead { table }) if table == "t"
            ));
        }
        drop(read);
        let write = locks
            .lock_for_session(1, &[(7, TableLockMode::Write)], LONG)
            .unwrap();
        {
            let _owner = as_owner(1);
            let mut txn = SharedLocks::new(locks.clone());
            assert!(!txn.lock(7, "t", true, LONG).unwrap());
            drop(txn);
            drop(locks.lock_exclusive(&[7], LONG).unwrap());
        }
        {
            let _other = as_owner(2);
            assert!(matches!(
                SharedLocks::new(locks.clone()).lock(7, "t", false, LONG),
                Err(Error::LockWaitTimeout)
            ));
            assert!(matches!(
                locks.lock_for_session(2, &[(7, TableLockMode::Read)], LONG),
                Err(Error::LockWaitTimeout)
            ));
        }
        drop(write);
        assert!(locks
            .shards
            .iter()
            .all(|s| MetadataLocks::tables(s).is_empty()));
    }

    #[test]
    fn a_read_table_lock_waits_for_writers_only() {
        let locks = Arc::new(MetadataLocks::default());
        let _wait = as_owner(3);
        let mut reader = SharedLocks::new(locks.clone());
        reader.lock(7, "t", false, LONG).unwrap();
        drop(
            locks
                .lock_for_session(1, &[(7, TableLockMode::Read)], LONG)
                .unwrap(),
        );
        assert!(matches!(
            locks.lock_for_session(1, &[(7, TableLockMode::Write)], LONG),
            Err(Error::LockWaitTimeout)
        ));
        reader.lock(7, "t", true, LONG).unwrap();
        assert!(reader.holds(7, true));
        assert!(matches!(
            locks.lock_for_session(1, &[(7, TableLockMode::Read)], LONG),
            Err(Error::LockWaitTimeout)
        ));
        reader.release_all();
        drop(
            locks
                .lock_for_session(1, &[(7, TableLockMode::Read)], LONG)
                .unwrap(),
        );
    }
}
