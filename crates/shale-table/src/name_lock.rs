//! Metadata locks on names: what a table id cannot key. CREATE TABLE locks a name no table
//! has yet, and a view has no table id; `MySQL` locks both by name. CREATE TABLE (plain,
//! ... LIKE, ... AS SELECT), CREATE [OR REPLACE] / ALTER / DROP VIEW and RENAME of a view
//! take their names *exclusive* for the statement ([`Store::lock_names`](crate::Store::lock_names));
//! a transaction that reads a view takes its name *shared* until it ends
//! ([`TableTxn::lock_view_names`](crate::TableTxn::lock_view_names)), so DROP / ALTER VIEW
//! waits for the transactions that used the view, and a statement that uses the view while
//! one waits queues behind it. Waits end as the table-id locks' do (`metadata_lock.rs`): at
//! `lock_wait_timeout` ([`Error::LockWaitTimeout`]) or KILL ([`Error::Interrupted`]).
//!
//! Lock order (why this cannot hang):
//! 1. A DDL statement takes its exclusive names *before* the store's DDL mutex and before
//!    any table-id lock, all at once in one sorted order ([`Store::lock_names`] sorts them),
//!    so two DDL statements never wait for each other's names in a cycle, and a session
//!    that holds a name shared and then needs the DDL mutex (CREATE TEMPORARY TABLE inside
//!    its transaction) is never behind a DDL that holds the mutex while waiting for it.
//! 2. A holder is never held up by itself: its session (or, without one, its thread) passes
//!    its own exclusive lock (CREATE TABLE v2 AS SELECT ... FROM v2's name, CREATE OR REPLACE
//!    VIEW v AS SELECT ... FROM v), and an exclusive request passes its own session's shared
//!    holds. A DDL statement commits its session's transaction before it locks (`MySQL`'s
//!    implicit commit), so it holds no shared lock of its own then anyway.
//! 3. A transaction waiting for a name while it holds a table or name some DDL waits for is
//!    the deadlock victim at once ([`Error::Deadlock`]), as for table ids (`metadata_lock.rs`
//!    invariant 3).
//! 4. New shared holders queue behind a waiting exclusive request (a stream of readers of a
//!    view cannot starve DROP VIEW); a transaction that holds the name already goes on.
//!
//! Names compare without case (a view and a table may not share a name in any case), so the
//! key is the database and the lower-cased name; locking too much is safe, too little not.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::metadata_lock::{current_holder, current_wait, give_up, Holder, Showing, POLL};

/// A locked name: its database and the name in lower case.
pub(crate) type NameKey = (String, String);

pub(crate) fn name_key(database: &str, name: &str) -> NameKey {
    (database.to_owned(), name.to_lowercase())
}

/// One name's lock.
#[derive(Debug, Default)]
struct NameLock {
    /// The holder of each shared hold (one entry per transaction holding it).
    shared: Vec<Holder>,
    exclusive: Option<Holder>,
    /// Exclusive requests waiting for it.
    requested: u32,
}

impl NameLock {
    fn idle(&self) -> bool {
        self.shared.is_empty() && self.exclusive.is_none() && self.requested == 0
    }

    /// Rules 2 and 4: others' exclusive locks and requests hold a shared request up.
    fn shared_grantable(&self, holder: Holder) -> bool {
        match self.exclusive {
            Some(owner) => owner == holder,
            None => self.requested == 0,
        }
    }

    fn exclusive_grantable(&self, holder: Holder) -> bool {
        self.exclusive.is_none_or(|owner| owner == holder)
            && self.shared.iter().all(|&h| h == holder)
    }
}

/// A store's name locks: one map (names are locked by DDL and by statements that use views,
/// neither the hot path of table reads and writes).
#[derive(Debug, Default)]
pub(crate) struct NameLocks {
    names: Mutex<HashMap<NameKey, NameLock>>,
    /// Signalled when a lock is released or a request withdrawn.
    changed: Condvar,
}

impl NameLocks {
    fn names(&self) -> MutexGuard<'_, HashMap<NameKey, NameLock>> {
        self.names.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn is_requested(&self, key: &NameKey) -> bool {
        self.names().get(key).is_some_and(|l| l.requested > 0)
    }

    /// Takes `key` shared for a transaction; `deadlocked` says whether the transaction holds
    /// something a waiting DDL needs (rule 3), checked while it waits. Returns the holder
    /// to release it with, and whether it waited.
    pub(crate) fn lock_shared(
        &self,
        key: &NameKey,
        store_timeout: std::time::Duration,
        deadlocked: impl Fn() -> bool,
    ) -> Result<(Holder, bool)> {
        let holder = current_holder();
        let mut names = self.names();
        let lock = names.entry(key.clone()).or_default();
        if lock.shared_grantable(holder) {
            lock.shared.push(holder);
            return Ok((holder, false));
        }
        drop(names);
        let (timeout, waiter) = current_wait(store_timeout);
        let deadline = Instant::now() + timeout;
        let _showing = Showing::new(waiter.as_ref());
        loop {
            if deadlocked() {
                self.forget_if_idle(key);
                return Err(Error::Deadlock);
            }
            let mut names = self.names();
            let lock = names.entry(key.clone()).or_default();
            if lock.shared_grantable(holder) {
                lock.shared.push(holder);
                return Ok((holder, true));
            }
            if let Err(error) = give_up(deadline, waiter.as_ref()) {
                if lock.idle() {
                    names.remove(key);
                }
                return Err(error);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            drop(
                self.changed
                    .wait_timeout(names, left.min(POLL))
                    .unwrap_or_else(PoisonError::into_inner),
            );
        }
    }

    /// Releases one shared hold of `key` by `holder`.
    pub(crate) fn unlock_shared(&self, key: &NameKey, holder: Holder) {
        let mut names = self.names();
        let Some(lock) = names.get_mut(key) else {
            debug_assert!(false, "shared name lock {key:?} not held");
            return;
        };
        if let Some(at) = lock.shared.iter().position(|&h| h == holder) {
            lock.shared.swap_remove(at);
        }
        if lock.idle() {
            names.remove(key);
        } else if lock.requested > 0 {
            self.changed.notify_all();
        }
    }

    fn forget_if_idle(&self, key: &NameKey) {
        let mut names = self.names();
        if names.get(key).is_some_and(NameLock::idle) {
            names.remove(key);
        }
    }

    /// Takes each of `keys` (sorted, without repeats: rule 1) exclusive, waiting for their
    /// shared holders; on failure none is kept.
    pub(crate) fn lock_exclusive(
        self: &Arc<Self>,
        keys: Vec<NameKey>,
        store_timeout: std::time::Duration,
    ) -> Result<ExclusiveNames> {
        debug_assert!(keys.windows(2).all(|w| w[0] < w[1]), "rule 1: sorted names");
        let holder = current_holder();
        let (timeout, waiter) = current_wait(store_timeout);
        let deadline = Instant::now() + timeout;
        // Dropped on failure: releases what was granted.
        let mut granted = ExclusiveNames {
            locks: Arc::clone(self),
            keys: Vec::with_capacity(keys.len()),
        };
        let mut showing = None;
        for key in keys {
            let mut names = self.names();
            let mut requested = false;
            loop {
                let lock = names.entry(key.clone()).or_default();
                if lock.exclusive_grantable(holder) {
                    if requested {
                        lock.requested -= 1;
                    }
                    // Rule 2: a name its own holder locked already stays that lock's.
                    if lock.exclusive.is_none() {
                        lock.exclusive = Some(holder);
                        granted.keys.push(key);
                    }
                    break;
                }
                if let Err(error) = give_up(deadline, waiter.as_ref()) {
                    if requested {
                        lock.requested -= 1;
                    }
                    if lock.idle() {
                        names.remove(&key);
                    }
                    // Statements queued behind this request go on.
                    self.changed.notify_all();
                    return Err(error);
                }
                if !requested {
                    lock.requested += 1;
                    requested = true;
                }
                if showing.is_none() {
                    showing = Some(Showing::new(waiter.as_ref()));
                }
                let left = deadline.saturating_duration_since(Instant::now());
                names = self
                    .changed
                    .wait_timeout(names, left.min(POLL))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
        Ok(granted)
    }
}

/// Names a DDL statement holds exclusive ([`Store::lock_names`](crate::Store::lock_names));
/// dropping it releases them and lets the statements queued behind them go on.
#[derive(Debug)]
pub struct ExclusiveNames {
    locks: Arc<NameLocks>,
    keys: Vec<NameKey>,
}

impl Drop for ExclusiveNames {
    fn drop(&mut self) {
        if self.keys.is_empty() {
            return;
        }
        let mut names = self.locks.names();
        for key in &self.keys {
            if let Some(lock) = names.get_mut(key) {
                lock.exclusive = None;
                if lock.idle() {
                    names.remove(key);
                }
            }
        }
        self.locks.changed.notify_all();
    }
}

impl crate::Store {
    /// Takes the names `names` (database, name) exclusive for a DDL statement that creates,
    /// changes or drops them (module doc), until the returned guard is dropped: waits for the
    /// transactions that hold them shared (views they read), up to the store's
    /// `ddl_wait_timeout` or the thread's shorter [`MetadataWait`](crate::MetadataWait)
    /// ([`Error::LockWaitTimeout`], [`Error::Interrupted`]). Call it before any other DDL
    /// call of the statement (rule 1): the DDL mutex is taken after.
    pub fn lock_names(&self, names: &[(String, String)]) -> Result<ExclusiveNames> {
        let mut keys: Vec<NameKey> = names.iter().map(|(d, n)| name_key(d, n)).collect();
        keys.sort();
        keys.dedup();
        let inner = self.inner();
        inner
            .metadata
            .names
            .lock_exclusive(keys, inner.ddl_wait_timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata_lock::MetadataWait;
    use std::time::Duration;

    const LONG: Duration = Duration::from_secs(30);

    fn key(n: &str) -> NameKey {
        name_key("db", n)
    }

    fn as_owner(owner: u64) -> crate::MetadataWaitGuard {
        MetadataWait {
            timeout: Duration::from_millis(30),
            waiter: None,
            owner: Some(owner),
        }
        .install()
    }

    #[test]
    fn exclusive_waits_for_shared_holders_and_new_readers_queue_behind_it() {
        let locks = Arc::new(NameLocks::default());
        let (reader, waited) = {
            let _s = as_owner(1);
            locks.lock_shared(&key("V"), LONG, || false).unwrap()
        };
        assert!(!waited);
        {
            let _s = as_owner(2);
            assert!(matches!(
                locks.lock_exclusive(vec![key("v")], LONG),
                Err(Error::LockWaitTimeout)
            ));
        }
        let ddl = {
            let locks = locks.clone();
            std::thread::spawn(move || {
                let _s = MetadataWait {
                    timeout: LONG,
                    waiter: None,
                    owner: Some(2),
                }
                .install();
                locks.lock_exclusive(vec![key("v")], LONG).map(drop)
            })
        };
        while !locks.is_requested(&key("v")) {
            std::thread::yield_now();
        }
        {
            // A newcomer queues behind the request, and one holding a wanted table is the
            // victim at once (rule 3).
            let _s = as_owner(3);
            assert!(matches!(
                locks.lock_shared(&key("v"), LONG, || false),
                Err(Error::LockWaitTimeout)
            ));
            assert!(matches!(
                locks.lock_shared(&key("v"), LONG, || true),
                Err(Error::Deadlock)
            ));
        }
        locks.unlock_shared(&key("v"), reader);
        ddl.join().unwrap().unwrap();
        assert!(locks.names().is_empty(), "every lock released");
    }

    #[test]
    fn a_holder_passes_its_own_locks() {
        let locks = Arc::new(NameLocks::default());
        let _s = as_owner(1);
        let exclusive = locks
            .lock_exclusive(vec![key("t"), key("v")], LONG)
            .unwrap();
        let (holder, waited) = locks.lock_shared(&key("v"), LONG, || false).unwrap();
        assert!(!waited, "its own exclusive lock");
        let again = locks.lock_exclusive(vec![key("v")], LONG).unwrap();
        drop(again);
        assert!(locks.names()[&key("v")].exclusive.is_some(), "still held");
        drop(exclusive);
        locks.unlock_shared(&key("v"), holder);
        assert!(locks.names().is_empty());
    }
}
