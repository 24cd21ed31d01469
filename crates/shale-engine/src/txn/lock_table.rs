//! The lock table: shared and exclusive row locks per (keyspace, key), striped so that
//! transactions locking different keys rarely meet on one mutex.
//!
//! Invariants:
//! 1. An entry's holders are either any number of shared holders or one exclusive holder
//!    (a holder may hold shared and be upgraded to exclusive only when it is the only holder).
//! 2. An entry exists only while it has holders or waiters; it is removed when both end.
//! 3. Every release of an entry with waiters notifies its stripe's condition variable; a
//!    waiter re-checks its entry, its deadlock mark and its deadline each time it wakes.
//! 4. A waiter's edges in the wait-for graph are refreshed on each check (deadlock.rs
//!    invariant 1); the stripe mutex is taken before the graph's.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::deadlock::{DeadlockInfo, Detection, WaitForGraph};
use super::error::{show_key, TransactionError};
use super::registry::Entry;
use super::stats::Stats;

/// A transaction's id: ids grow, so a larger id is a younger transaction.
pub(crate) type TxnId = u64;

/// A locked row: keyspace id and user key.
pub(crate) type LockKey = (u32, Vec<u8>);

/// How a row is locked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// Many transactions may hold it; blocks exclusive requests.
    Shared,
    /// One transaction holds it; blocks every other request.
    Exclusive,
}

impl LockMode {
    /// `S` or `X`, as `SHALE_LOCKS` (and `MyRocks`' `ROCKSDB_LOCKS`) shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            LockMode::Shared => "S",
            LockMode::Exclusive => "X",
        }
    }
}

/// One locked row as [`TransactionDb::lock_snapshot`](super::TransactionDb::lock_snapshot)
/// shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockInfo {
    /// Keyspace id of the key.
    pub keyspace: u32,
    /// The key (user key bytes).
    pub key: Vec<u8>,
    /// The transactions holding it and their modes (many shared, or one exclusive).
    pub holders: Vec<(u64, LockMode)>,
    /// The transactions waiting for it, by id.
    pub waiters: Vec<u64>,
}

#[derive(Debug, Default)]
struct LockEntry {
    holders: Vec<(TxnId, LockMode)>,
    waiters: usize,
}

impl LockEntry {
    /// Transactions that keep `txn` from holding the entry in `mode`.
    fn blockers(&self, txn: TxnId, mode: LockMode) -> Vec<TxnId> {
        self.holders
            .iter()
            .filter(|&&(holder, held)| {
                holder != txn && (mode == LockMode::Exclusive || held == LockMode::Exclusive)
            })
            .map(|&(holder, _)| holder)
            .collect()
    }

    fn grant(&mut self, txn: TxnId, mode: LockMode) {
        if let Some(held) = self.holders.iter_mut().find(|(holder, _)| *holder == txn) {
            if mode == LockMode::Exclusive {
                held.1 = LockMode::Exclusive;
            }
        } else {
            self.holders.push((txn, mode));
        }
        debug_assert!(
            self.holders.len() == 1 || self.holders.iter().all(|h| h.1 == LockMode::Shared),
            "invariant 1"
        );
    }
}

#[derive(Debug, Default)]
struct Stripe {
    entries: Mutex<HashMap<LockKey, LockEntry>>,
    released: Condvar,
}

impl Stripe {
    fn lock(&self) -> MutexGuard<'_, HashMap<LockKey, LockEntry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The row locks of one database.
#[derive(Debug)]
pub(crate) struct LockTable {
    stripes: Box<[Stripe]>,
    graph: WaitForGraph,
    deadlock_detect: bool,
}

impl LockTable {
    pub(crate) fn new(stripes: usize, deadlock_detect: bool) -> Self {
        LockTable {
            stripes: (0..stripes.max(1)).map(|_| Stripe::default()).collect(),
            graph: WaitForGraph::default(),
            deadlock_detect,
        }
    }

    fn stripe_of(&self, key: &LockKey) -> usize {
        let mut hasher = DefaultHasher::new();
        key.hash(&mut hasher);
        // The remainder is below the stripe count, which is a usize.
        #[allow(clippy::cast_possible_truncation)]
        let index = (hasher.finish() % self.stripes.len() as u64) as usize;
        index
    }

    /// [`lock_as`](Self::lock_as) without a registry entry (tests).
    #[cfg(test)]
    pub(crate) fn lock(
        &self,
        txn: TxnId,
        key: &LockKey,
        mode: LockMode,
        timeout: Duration,
        stats: &Stats,
    ) -> Result<(), TransactionError> {
        self.lock_as(txn, key, mode, timeout, stats, None)
    }

    /// Locks `key` for `txn` in `mode`, waiting up to `timeout` for conflicting holders.
    /// On a deadlock where `txn` is the victim, returns [`TransactionError::Deadlock`]; the
    /// caller must then release every lock of `txn`. While it waits, `entry` (the
    /// transaction's registry entry) shows the key and its holders.
    pub(crate) fn lock_as(
        &self,
        txn: TxnId,
        key: &LockKey,
        mode: LockMode,
        timeout: Duration,
        stats: &Stats,
        entry: Option<&Entry>,
    ) -> Result<(), TransactionError> {
        let result = self.lock_waiting(txn, key, mode, timeout, stats, entry);
        if let Some(entry) = entry {
            entry.clear_waiting();
        }
        result
    }

    fn lock_waiting(
        &self,
        txn: TxnId,
        key: &LockKey,
        mode: LockMode,
        timeout: Duration,
        stats: &Stats,
        registered: Option<&Entry>,
    ) -> Result<(), TransactionError> {
        let index = self.stripe_of(key);
        let stripe = &self.stripes[index];
        let mut entries = stripe.lock();
        let mut started: Option<Instant> = None;
        loop {
            if let Some(cycle) = started.and_then(|_| self.graph.take_victim(txn)) {
                self.graph.stop_waiting(txn);
                return Err(Self::leave(
                    &mut entries,
                    key,
                    TransactionError::Deadlock {
                        victim: txn,
                        cycle,
                        key: show_key(&key.1),
                    },
                ));
            }
            let entry = entries.entry(key.clone()).or_default();
            let blockers = entry.blockers(txn, mode);
            if blockers.is_empty() {
                entry.grant(txn, mode);
                if started.is_some() {
                    entry.waiters -= 1;
                    self.graph.stop_waiting(txn);
                }
                return Ok(());
            }
            let now = Instant::now();
            let since = *started.get_or_insert_with(|| {
                entry.waiters += 1;
                stats.lock_waits.fetch_add(1, Ordering::Relaxed);
                now
            });
            let waited = now - since;
            if waited >= timeout {
                self.graph.stop_waiting(txn);
                stats.lock_timeouts.fetch_add(1, Ordering::Relaxed);
                return Err(Self::leave(
                    &mut entries,
                    key,
                    TransactionError::LockTimeout {
                        key: show_key(&key.1),
                        waited,
                        holders: blockers,
                    },
                ));
            }
            if let Some(registered) = registered {
                registered.set_waiting(key, mode, &blockers);
            }
            if self.deadlock_detect {
                match self.graph.wait(txn, blockers, index, key, mode) {
                    Detection::None => {}
                    Detection::SelfVictim(cycle) => {
                        stats.deadlocks.fetch_add(1, Ordering::Relaxed);
                        return Err(Self::leave(
                            &mut entries,
                            key,
                            TransactionError::Deadlock {
                                victim: txn,
                                cycle,
                                key: show_key(&key.1),
                            },
                        ));
                    }
                    Detection::OtherVictim { stripe: other, .. } => {
                        stats.deadlocks.fetch_add(1, Ordering::Relaxed);
                        // Wake the victim under its stripe's mutex (deadlock.rs invariant 3),
                        // never holding two stripe mutexes at once.
                        drop(entries);
                        {
                            let _victim_entries = self.stripes[other].lock();
                            self.stripes[other].released.notify_all();
                        }
                        entries = stripe.lock();
                        continue;
                    }
                }
            }
            entries = stripe
                .released
                .wait_timeout(entries, timeout.saturating_sub(waited))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// A waiter gives up on `key`: drops its wait and the entry if nothing else uses it
    /// (invariant 2).
    fn leave(
        entries: &mut HashMap<LockKey, LockEntry>,
        key: &LockKey,
        error: TransactionError,
    ) -> TransactionError {
        if let Some(entry) = entries.get_mut(key) {
            entry.waiters = entry.waiters.saturating_sub(1);
            if entry.holders.is_empty() && entry.waiters == 0 {
                entries.remove(key);
            }
        }
        error
    }

    /// Releases every lock `txn` holds on `keys`, and forgets `txn` in the wait-for graph.
    pub(crate) fn unlock_all<'a>(&self, txn: TxnId, keys: impl Iterator<Item = &'a LockKey>) {
        let mut by_stripe: Vec<(usize, &LockKey)> =
            keys.map(|key| (self.stripe_of(key), key)).collect();
        by_stripe.sort_unstable_by_key(|&(index, _)| index);
        for group in by_stripe.chunk_by(|a, b| a.0 == b.0) {
            let stripe = &self.stripes[group[0].0];
            let mut entries = stripe.lock();
            let mut anyone_waits = false;
            for &(_, key) in group {
                if let Some(entry) = entries.get_mut(key) {
                    entry.holders.retain(|&(holder, _)| holder != txn);
                    anyone_waits |= entry.waiters > 0;
                    if entry.holders.is_empty() && entry.waiters == 0 {
                        entries.remove(key);
                    }
                }
            }
            // Invariant 3 needs the wakeup only where a waiter waits for a released entry
            // (deadlock victims are woken by their detector): skipping it spares the common
            // uncontended commit a futex system call per stripe.
            if anyone_waits {
                stripe.released.notify_all();
            }
        }
        self.graph.remove(txn);
    }

    /// Every locked key with its holders, by (keyspace, key); `waiters` is left empty (the
    /// registry knows who waits for what). Takes each stripe's mutex in turn, so keys of
    /// different stripes are seen at slightly different moments.
    pub(crate) fn snapshot(&self) -> Vec<LockInfo> {
        let mut out = Vec::new();
        for stripe in &self.stripes {
            for (key, entry) in stripe.lock().iter() {
                if entry.holders.is_empty() {
                    continue;
                }
                out.push(LockInfo {
                    keyspace: key.0,
                    key: key.1.clone(),
                    holders: entry.holders.clone(),
                    waiters: Vec::new(),
                });
            }
        }
        out.sort_unstable_by(|a, b| (a.keyspace, &a.key).cmp(&(b.keyspace, &b.key)));
        out
    }

    /// The last deadlocks found, oldest first.
    pub(crate) fn recent_deadlocks(&self) -> Vec<DeadlockInfo> {
        self.graph.recent()
    }

    /// Number of keys with holders or waiters (tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.stripes.iter().map(|s| s.lock().len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{mpsc, Arc};
    use std::thread;

    fn key(k: &str) -> LockKey {
        (0, k.as_bytes().to_vec())
    }

    const LONG: Duration = Duration::from_secs(20);

    #[test]
    fn shared_locks_coexist_and_block_exclusive() {
        let table = LockTable::new(4, true);
        let stats = Stats::default();
        table
            .lock(1, &key("a"), LockMode::Shared, LONG, &stats)
            .unwrap();
        table
            .lock(2, &key("a"), LockMode::Shared, LONG, &stats)
            .unwrap();
        let err = table
            .lock(
                3,
                &key("a"),
                LockMode::Exclusive,
                Duration::from_millis(20),
                &stats,
            )
            .unwrap_err();
        match err {
            TransactionError::LockTimeout { holders, .. } => assert_eq!(holders, vec![1, 2]),
            other => panic!("{other:?}"),
        }
        // Upgrade is refused while another shared holder remains, allowed once alone.
        assert!(table
            .lock(1, &key("a"), LockMode::Exclusive, Duration::ZERO, &stats)
            .is_err());
        table.unlock_all(2, [key("a")].iter());
        table
            .lock(1, &key("a"), LockMode::Exclusive, LONG, &stats)
            .unwrap();
        assert!(table
            .lock(2, &key("a"), LockMode::Shared, Duration::ZERO, &stats)
            .is_err());
        table.unlock_all(1, [key("a")].iter());
        assert_eq!(table.len(), 0, "entries are removed when unused");
        assert_eq!(stats.lock_timeouts.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn snapshot_lists_holders_and_a_registered_waiter_shows_its_key() {
        let table = Arc::new(LockTable::new(4, true));
        let stats = Arc::new(Stats::default());
        table
            .lock(1, &key("a"), LockMode::Shared, LONG, &stats)
            .unwrap();
        table
            .lock(2, &key("a"), LockMode::Shared, LONG, &stats)
            .unwrap();
        table
            .lock(2, &key("b"), LockMode::Exclusive, LONG, &stats)
            .unwrap();
        let locks = table.snapshot();
        let shown: Vec<_> = locks.iter().map(|l| (&l.key[..], &l.holders[..])).collect();
        assert_eq!(
            shown,
            [
                (
                    &b"a"[..],
                    &[(1, LockMode::Shared), (2, LockMode::Shared)][..]
                ),
                (&b"b"[..], &[(2, LockMode::Exclusive)][..]),
            ]
        );
        let entry = Arc::new(Entry::new(
            3,
            super::super::IsolationLevel::default(),
            false,
        ));
        let waiter = {
            let (table, stats, entry) = (table.clone(), stats.clone(), entry.clone());
            thread::spawn(move || {
                table.lock_as(
                    3,
                    &key("a"),
                    LockMode::Exclusive,
                    LONG,
                    &stats,
                    Some(&entry),
                )
            })
        };
        while stats.lock_waits.load(Ordering::Relaxed) == 0 {
            thread::yield_now();
        }
        let registry = super::super::registry::Registry::default();
        registry.register(entry.clone());
        // The waiter sets its key under the stripe mutex before it sleeps.
        let _ = table.snapshot();
        let info = registry.list().remove(0);
        let waiting = info.waiting_for.expect("waiting");
        assert_eq!(
            (&waiting.key[..], waiting.mode),
            (&b"a"[..], LockMode::Exclusive)
        );
        assert_eq!(waiting.holders, [1, 2]);
        table.unlock_all(1, [key("a")].iter());
        table.unlock_all(2, [key("a"), key("b")].iter());
        waiter.join().unwrap().unwrap();
        assert_eq!(
            registry.list()[0].state,
            super::super::registry::TransactionState::Running
        );
        table.unlock_all(3, [key("a")].iter());
        assert!(table.snapshot().is_empty());
    }

    #[test]
    fn waiter_gets_the_lock_when_released() {
        let table = Arc::new(LockTable::new(1, true));
        let stats = Arc::new(Stats::default());
        table
            .lock(1, &key("a"), LockMode::Exclusive, LONG, &stats)
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let waiter = {
            let (table, stats) = (table.clone(), stats.clone());
            thread::spawn(move || {
                tx.send(()).unwrap();
                table.lock(2, &key("a"), LockMode::Exclusive, LONG, &stats)
            })
        };
        rx.recv().unwrap();
        while stats.lock_waits.load(Ordering::Relaxed) == 0 {
            thread::yield_now();
        }
        table.unlock_all(1, [key("a")].iter());
        waiter.join().unwrap().unwrap();
    }

    #[test]
    fn deadlock_aborts_the_youngest_even_when_the_older_detects_it() {
        let table = Arc::new(LockTable::new(8, true));
        let stats = Arc::new(Stats::default());
        table
            .lock(1, &key("a"), LockMode::Exclusive, LONG, &stats)
            .unwrap();
        table
            .lock(2, &key("b"), LockMode::Exclusive, LONG, &stats)
            .unwrap();
        // The younger (2) waits first; the older (1) closes the cycle and detects it.
        let young = {
            let (table, stats) = (table.clone(), stats.clone());
            thread::spawn(move || table.lock(2, &key("a"), LockMode::Exclusive, LONG, &stats))
        };
        while stats.lock_waits.load(Ordering::Relaxed) == 0 {
            thread::yield_now();
        }
        let old = {
            let (table, stats) = (table.clone(), stats.clone());
            thread::spawn(move || table.lock(1, &key("b"), LockMode::Exclusive, LONG, &stats))
        };
        let err = young.join().unwrap().unwrap_err();
        match err {
            TransactionError::Deadlock { victim, cycle, .. } => {
                assert_eq!((victim, cycle), (2, vec![1, 2]));
            }
            other => panic!("{other:?}"),
        }
        table.unlock_all(2, [key("b")].iter());
        old.join().unwrap().unwrap();
        assert_eq!(stats.deadlocks.load(Ordering::Relaxed), 1);
        let recent = table.recent_deadlocks();
        assert_eq!(recent.len(), 1);
        assert_eq!(recent[0].victim, 2);
        let mut waited: Vec<(u64, Vec<u8>)> = recent[0]
            .waits
            .iter()
            .map(|w| (w.txn, w.key.clone()))
            .collect();
        waited.sort();
        assert_eq!(waited, [(1, b"b".to_vec()), (2, b"a".to_vec())]);
    }
}
