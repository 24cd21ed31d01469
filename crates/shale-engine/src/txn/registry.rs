//! The registry of open transactions: what [`TransactionDb::transactions`] lists
//! (docs/transactions.md, "Seeing transactions, locks and deadlocks").
//!
//! Each transaction owns an [`Entry`] that it updates as it runs; the registry holds a
//! reference to every live entry so that another thread can list them.
//!
//! Invariants:
//! 1. A transaction is registered from its creation until it ends (commit, rollback, drop,
//!    or its rollback as a deadlock victim), in shard `id % SHARDS`.
//! 2. A shard's mutex is taken only when a transaction begins or ends, and by a reader
//!    listing the shard: never on a read, a write, a lock request or a commit's write. Ids are
//!    consecutive, so transactions begun one after another use different shards.
//! 3. The running transaction alone writes its entry's counters and state, with relaxed
//!    atomics; the entry's own mutex is taken only while the transaction waits for a lock
//!    (the waited-for key, refreshed at each wakeup) and when its owner sets a label. A
//!    reader sees each field as of some moment; two fields of one entry may come from
//!    slightly different moments (a view for people, not a consistent cut).
//!
//! [`TransactionDb::transactions`]: super::TransactionDb::transactions

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use super::lock_table::{LockKey, LockMode, TxnId};
use super::IsolationLevel;

/// Shards of the registry (invariant 2).
const SHARDS: usize = 16;

const RUNNING: u8 = 0;
const LOCK_WAIT: u8 = 1;
const COMMITTING: u8 = 2;

/// `Entry::snapshot` when the transaction reads without a snapshot (READ COMMITTED).
const NO_SNAPSHOT: u64 = u64::MAX;

/// What a transaction is doing now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionState {
    /// Running between calls, reading or buffering writes.
    Running,
    /// Waiting for a row lock another transaction holds.
    LockWait,
    /// Writing its commit through the group commit.
    Committing,
}

impl TransactionState {
    /// The state as `SHALE_TRX` shows it (`RUNNING`, `LOCK WAIT`, `COMMITTING`).
    pub fn as_str(self) -> &'static str {
        match self {
            TransactionState::Running => "RUNNING",
            TransactionState::LockWait => "LOCK WAIT",
            TransactionState::Committing => "COMMITTING",
        }
    }
}

/// The lock a transaction waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockWaitInfo {
    /// Keyspace id of the key.
    pub keyspace: u32,
    /// The key (user key bytes).
    pub key: Vec<u8>,
    /// The mode requested.
    pub mode: LockMode,
    /// Transactions holding the key in a conflicting mode, at the last check.
    pub holders: Vec<u64>,
    /// When the wait began.
    pub since: SystemTime,
}

/// One open transaction as [`TransactionDb::transactions`](super::TransactionDb::transactions)
/// lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionInfo {
    /// The transaction's id (larger is younger; errors and deadlock records name these).
    pub id: u64,
    /// When it began.
    pub started: SystemTime,
    /// What it is doing.
    pub state: TransactionState,
    /// Its isolation level.
    pub isolation: IsolationLevel,
    /// Whether it is optimistic (it locks nothing until commit).
    pub optimistic: bool,
    /// The sequence number its reads see, when it reads at a snapshot.
    pub snapshot_seqno: Option<u64>,
    /// Distinct keys it holds a lock on.
    pub keys_locked: u64,
    /// Distinct keys it changed and has not committed.
    pub keys_written: u64,
    /// The lock it waits for, in state [`TransactionState::LockWait`].
    pub waiting_for: Option<LockWaitInfo>,
    /// The number its owner gave it ([`Transaction::set_owner`](super::Transaction::set_owner);
    /// the SQL layer's connection id).
    pub owner: Option<u64>,
    /// The text its owner gave it ([`Transaction::set_label`](super::Transaction::set_label)).
    pub label: Option<String>,
}

#[derive(Debug, Default)]
struct Detail {
    waiting: Option<LockWaitInfo>,
    label: Option<String>,
}

/// A transaction's own entry (invariant 3).
#[derive(Debug)]
pub(crate) struct Entry {
    id: TxnId,
    started: SystemTime,
    isolation: IsolationLevel,
    optimistic: bool,
    state: AtomicU8,
    snapshot: AtomicU64,
    keys_locked: AtomicU64,
    keys_written: AtomicU64,
    /// 0: none given.
    owner: AtomicU64,
    detail: Mutex<Detail>,
}

impl Entry {
    pub(crate) fn new(id: TxnId, isolation: IsolationLevel, optimistic: bool) -> Entry {
        Entry {
            id,
            started: SystemTime::now(),
            isolation,
            optimistic,
            state: AtomicU8::new(RUNNING),
            snapshot: AtomicU64::new(NO_SNAPSHOT),
            keys_locked: AtomicU64::new(0),
            keys_written: AtomicU64::new(0),
            owner: AtomicU64::new(0),
            detail: Mutex::new(Detail::default()),
        }
    }

    fn detail(&self) -> MutexGuard<'_, Detail> {
        self.detail.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set_snapshot(&self, seqno: Option<u64>) {
        self.snapshot
            .store(seqno.unwrap_or(NO_SNAPSHOT), Ordering::Relaxed);
    }

    pub(crate) fn set_counts(&self, locked: usize, written: usize) {
        self.keys_locked.store(locked as u64, Ordering::Relaxed);
        self.keys_written.store(written as u64, Ordering::Relaxed);
    }

    pub(crate) fn set_committing(&self, committing: bool) {
        let state = if committing { COMMITTING } else { RUNNING };
        self.state.store(state, Ordering::Relaxed);
    }

    pub(crate) fn set_owner(&self, owner: u64) {
        self.owner.store(owner, Ordering::Relaxed);
    }

    pub(crate) fn owner(&self) -> u64 {
        self.owner.load(Ordering::Relaxed)
    }

    pub(crate) fn set_label(&self, label: Option<String>) {
        self.detail().label = label;
    }

    /// The transaction waits for `key` held by `holders` (called at each check of a wait).
    pub(crate) fn set_waiting(&self, key: &LockKey, mode: LockMode, holders: &[TxnId]) {
        let mut detail = self.detail();
        match &mut detail.waiting {
            Some(w) if w.keyspace == key.0 && w.key == key.1 && w.mode == mode => {
                holders.clone_into(&mut w.holders);
            }
            waiting => {
                *waiting = Some(LockWaitInfo {
                    keyspace: key.0,
                    key: key.1.clone(),
                    mode,
                    holders: holders.to_vec(),
                    since: SystemTime::now(),
                });
            }
        }
        self.state.store(LOCK_WAIT, Ordering::Relaxed);
    }

    /// The wait ended (granted, timed out, or a deadlock). Skips the mutex unless waiting.
    pub(crate) fn clear_waiting(&self) {
        if self.state.load(Ordering::Relaxed) == LOCK_WAIT {
            self.detail().waiting = None;
            self.state.store(RUNNING, Ordering::Relaxed);
        }
    }

    fn info(&self) -> TransactionInfo {
        let state = match self.state.load(Ordering::Relaxed) {
            LOCK_WAIT => TransactionState::LockWait,
            COMMITTING => TransactionState::Committing,
            _ => TransactionState::Running,
        };
        let (waiting_for, label) = {
            let detail = self.detail();
            (detail.waiting.clone(), detail.label.clone())
        };
        let snapshot = self.snapshot.load(Ordering::Relaxed);
        let owner = self.owner.load(Ordering::Relaxed);
        TransactionInfo {
            id: self.id,
            started: self.started,
            state,
            isolation: self.isolation,
            optimistic: self.optimistic,
            snapshot_seqno: (snapshot != NO_SNAPSHOT).then_some(snapshot),
            keys_locked: self.keys_locked.load(Ordering::Relaxed),
            keys_written: self.keys_written.load(Ordering::Relaxed),
            waiting_for,
            owner: (owner != 0).then_some(owner),
            label,
        }
    }
}

/// One shard: the entries of the transactions whose id falls in it.
type Shard = Mutex<HashMap<TxnId, Arc<Entry>>>;

/// Every open transaction of one database, sharded by id (invariant 2).
#[derive(Debug)]
pub(crate) struct Registry {
    shards: Box<[Shard]>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }
}

impl Registry {
    fn shard(&self, id: TxnId) -> MutexGuard<'_, HashMap<TxnId, Arc<Entry>>> {
        // The remainder is below SHARDS.
        #[allow(clippy::cast_possible_truncation)]
        let index = (id % SHARDS as u64) as usize;
        self.shards[index]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn register(&self, entry: Arc<Entry>) {
        self.shard(entry.id).insert(entry.id, entry);
    }

    /// Forgets `id` (a no-op when it is already gone).
    pub(crate) fn remove(&self, id: TxnId) {
        self.shard(id).remove(&id);
    }

    /// Every registered transaction, oldest first.
    pub(crate) fn list(&self) -> Vec<TransactionInfo> {
        let mut out: Vec<TransactionInfo> = Vec::new();
        for index in 0..SHARDS {
            let entries: Vec<Arc<Entry>> = self.shard(index as u64).values().cloned().collect();
            out.extend(entries.iter().map(|e| e.info()));
        }
        out.sort_unstable_by_key(|t| t.id);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_listed_until_removed_and_show_their_updates() {
        let registry = Registry::default();
        let a = Arc::new(Entry::new(3, IsolationLevel::RepeatableRead, false));
        let b = Arc::new(Entry::new(20, IsolationLevel::ReadCommitted, true));
        registry.register(Arc::clone(&b));
        registry.register(Arc::clone(&a));
        a.set_snapshot(Some(41));
        a.set_counts(2, 1);
        a.set_owner(7);
        a.set_label(Some("UPDATE t".into()));
        a.set_waiting(&(1, b"k".to_vec()), LockMode::Exclusive, &[20]);
        let listed = registry.list();
        assert_eq!(listed.iter().map(|t| t.id).collect::<Vec<_>>(), [3, 20]);
        let first = &listed[0];
        assert_eq!(first.state, TransactionState::LockWait);
        assert_eq!(first.snapshot_seqno, Some(41));
        assert_eq!((first.keys_locked, first.keys_written), (2, 1));
        assert_eq!(first.owner, Some(7));
        assert_eq!(first.label.as_deref(), Some("UPDATE t"));
        let waiting = first.waiting_for.as_ref().unwrap();
        assert_eq!(
            (waiting.keyspace, &waiting.key[..], &waiting.holders[..]),
            (1, &b"k"[..], &[20][..])
        );
        assert_eq!(listed[1].snapshot_seqno, None);
        assert_eq!(listed[1].owner, None);
        assert!(listed[1].optimistic);

        a.clear_waiting();
        a.set_committing(true);
        let first = registry.list().remove(0);
        assert_eq!(first.state, TransactionState::Committing);
        assert_eq!(first.waiting_for, None);

        registry.remove(3);
        registry.remove(3);
        assert_eq!(
            registry.list().iter().map(|t| t.id).collect::<Vec<_>>(),
            [20]
        );
    }
}
