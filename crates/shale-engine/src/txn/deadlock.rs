//! The wait-for graph: which transaction waits for which, to find deadlocks.
//!
//! Invariants:
//! 1. A transaction has outgoing edges only while it waits for a lock; its edges are replaced
//!    every time it re-checks the lock and removed when it gets the lock, gives up, or ends.
//! 2. A transaction that holds no lock can end a cycle only through a stale edge; ending
//!    transactions are removed from every edge list ([`WaitForGraph::remove`]) so that stale
//!    edges to them cannot produce a false deadlock.
//! 3. The victim of a cycle is its youngest transaction (largest id). A victim other than the
//!    detecting transaction is marked here, its edges removed, and woken by the detector; it
//!    sees the mark under its stripe's mutex, so the wakeup cannot be lost.
//!
//! 4. Every cycle found is recorded, under this graph's mutex, in a ring of the last
//!    [`RECENT_DEADLOCKS`] (oldest dropped first), with each member's waited-for key as it
//!    was when the cycle was found.
//!
//! Lock order: a lock-table stripe mutex, then this graph's mutex; never the reverse.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use super::lock_table::{LockKey, LockMode, TxnId};

/// How many deadlocks [`TransactionDb::recent_deadlocks`](super::TransactionDb::recent_deadlocks)
/// keeps (invariant 4).
pub const RECENT_DEADLOCKS: usize = 20;

/// One member of a deadlock cycle: who waited for which key, held by whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadlockWait {
    /// The waiting transaction.
    pub txn: u64,
    /// Keyspace id of the key it waited for.
    pub keyspace: u32,
    /// The key it waited for.
    pub key: Vec<u8>,
    /// The mode it asked for.
    pub mode: LockMode,
    /// The transactions it waited for.
    pub holders: Vec<u64>,
}

/// A deadlock found by the detector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadlockInfo {
    /// Numbers deadlocks since the database opened, from 1.
    pub id: u64,
    /// When it was found.
    pub time: SystemTime,
    /// The transaction rolled back (the youngest of the cycle).
    pub victim: u64,
    /// The cycle, each member waiting for the next (the last for the first).
    pub waits: Vec<DeadlockWait>,
}

#[derive(Debug)]
struct Waiting {
    on: Vec<TxnId>,
    stripe: usize,
    key: LockKey,
    mode: LockMode,
}

#[derive(Debug, Default)]
struct GraphState {
    waits: HashMap<TxnId, Waiting>,
    /// Marked victims, with the cycle that condemned them.
    victims: HashMap<TxnId, Vec<TxnId>>,
    /// The last deadlocks, oldest first (invariant 4).
    recent: VecDeque<DeadlockInfo>,
    deadlocks: u64,
}

impl GraphState {
    /// Records `cycle` (invariant 4); every member still has its edges.
    fn record(&mut self, cycle: &[TxnId], victim: TxnId) {
        self.deadlocks += 1;
        let waits = cycle
            .iter()
            .filter_map(|txn| {
                self.waits.get(txn).map(|w| DeadlockWait {
                    txn: *txn,
                    keyspace: w.key.0,
                    key: w.key.1.clone(),
                    mode: w.mode,
                    holders: w.on.clone(),
                })
            })
            .collect();
        if self.recent.len() == RECENT_DEADLOCKS {
            self.recent.pop_front();
        }
        self.recent.push_back(DeadlockInfo {
            id: self.deadlocks,
            time: SystemTime::now(),
            victim,
            waits,
        });
    }
}

/// What adding a wait found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Detection {
    /// No cycle: wait.
    None,
    /// A cycle whose youngest member is the waiter itself: it must give up.
    SelfVictim(Vec<TxnId>),
    /// A cycle whose youngest member is another waiter, now marked; wake its stripe.
    OtherVictim { victim: TxnId, stripe: usize },
}

/// The wait-for graph shared by all transactions of a database.
#[derive(Debug, Default)]
pub(crate) struct WaitForGraph {
    state: Mutex<GraphState>,
    /// `state.waits.len()`, written under the mutex: a transaction that ends while nobody
    /// waits skips the mutex (invariant 2 holds trivially then).
    waiting: AtomicUsize,
}

impl WaitForGraph {
    fn lock(&self) -> MutexGuard<'_, GraphState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records that `txn` waits (on lock-table stripe `stripe`, for `key` in `mode`) for
    /// every transaction in `on`, and looks for a cycle through `txn`.
    pub(crate) fn wait(
        &self,
        txn: TxnId,
        on: Vec<TxnId>,
        stripe: usize,
        key: &LockKey,
        mode: LockMode,
    ) -> Detection {
        let mut state = self.lock();
        let waiting = Waiting {
            on,
            stripe,
            key: key.clone(),
            mode,
        };
        state.waits.insert(txn, waiting);
        self.waiting.store(state.waits.len(), Ordering::Release);
        let Some(cycle) = find_cycle(&state.waits, txn) else {
            return Detection::None;
        };
        let victim = cycle.iter().copied().max().unwrap_or(txn);
        state.record(&cycle, victim);
        if victim == txn {
            state.waits.remove(&txn);
            self.waiting.store(state.waits.len(), Ordering::Release);
            return Detection::SelfVictim(cycle);
        }
        let stripe = state.waits.remove(&victim).map_or(0, |w| w.stripe);
        self.waiting.store(state.waits.len(), Ordering::Release);
        state.victims.insert(victim, cycle);
        Detection::OtherVictim { victim, stripe }
    }

    /// The cycle, if `txn` was chosen as a victim by another transaction (clears the mark).
    pub(crate) fn take_victim(&self, txn: TxnId) -> Option<Vec<TxnId>> {
        self.lock().victims.remove(&txn)
    }

    /// The last deadlocks found, oldest first (invariant 4).
    pub(crate) fn recent(&self) -> Vec<DeadlockInfo> {
        self.lock().recent.iter().cloned().collect()
    }

    /// `txn` stopped waiting (invariant 1). A mark set on it meanwhile is stale: it got the
    /// lock, so the cycle was not real.
    pub(crate) fn stop_waiting(&self, txn: TxnId) {
        let mut state = self.lock();
        state.waits.remove(&txn);
        state.victims.remove(&txn);
        self.waiting.store(state.waits.len(), Ordering::Release);
    }

    /// `txn` ended and holds no lock (invariant 2). Called after its locks were released
    /// under their stripes' mutexes, which every edge to `txn` was added under: so an edge to
    /// `txn` shows in `waiting` here.
    pub(crate) fn remove(&self, txn: TxnId) {
        if self.waiting.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut state = self.lock();
        state.waits.remove(&txn);
        self.waiting.store(state.waits.len(), Ordering::Release);
        state.victims.remove(&txn);
        for waiting in state.waits.values_mut() {
            waiting.on.retain(|&t| t != txn);
        }
    }
}

/// A path `start -> ... -> start` along wait edges, as the list of its transactions.
fn find_cycle(waits: &HashMap<TxnId, Waiting>, start: TxnId) -> Option<Vec<TxnId>> {
    // Depth-first search; `stack` holds (transaction, index of the next edge to follow).
    let mut stack: Vec<(TxnId, usize)> = vec![(start, 0)];
    let mut seen: HashSet<TxnId> = HashSet::from([start]);
    while let Some(top) = stack.last_mut() {
        let (txn, next) = *top;
        top.1 += 1;
        let edges = waits.get(&txn).map_or(&[][..], |w| &w.on[..]);
        let Some(&to) = edges.get(next) else {
            stack.pop();
            continue;
        };
        if to == start {
            return Some(stack.iter().map(|&(t, _)| t).collect());
        }
        if seen.insert(to) {
            stack.push((to, 0));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key transaction `txn` waits for in these tests.
    fn key(txn: u64) -> LockKey {
        (0, format!("k{txn}").into_bytes())
    }

    #[test]
    fn two_party_cycle_picks_the_youngest() {
        let graph = WaitForGraph::default();
        assert_eq!(
            graph.wait(1, vec![2], 0, &key(1), LockMode::Exclusive),
            Detection::None
        );
        // 2 closing the cycle is the youngest: it gives up itself.
        assert_eq!(
            graph.wait(2, vec![1], 1, &key(2), LockMode::Exclusive),
            Detection::SelfVictim(vec![2, 1])
        );
        assert_eq!(graph.take_victim(2), None);
    }

    #[test]
    fn older_detector_marks_the_younger_waiter() {
        let graph = WaitForGraph::default();
        assert_eq!(
            graph.wait(5, vec![3], 7, &key(5), LockMode::Exclusive),
            Detection::None
        );
        assert_eq!(
            graph.wait(3, vec![5], 2, &key(3), LockMode::Exclusive),
            Detection::OtherVictim {
                victim: 5,
                stripe: 7
            }
        );
        assert_eq!(graph.take_victim(5), Some(vec![3, 5]));
        assert_eq!(graph.take_victim(5), None, "the mark is taken once");
        let recent = graph.recent();
        assert_eq!(recent.len(), 1);
        assert_eq!((recent[0].id, recent[0].victim), (1, 5));
        let members: Vec<(u64, Vec<u8>, Vec<u64>)> = recent[0]
            .waits
            .iter()
            .map(|w| (w.txn, w.key.clone(), w.holders.clone()))
            .collect();
        assert_eq!(
            members,
            [(3, b"k3".to_vec(), vec![5]), (5, b"k5".to_vec(), vec![3])]
        );
    }

    #[test]
    fn the_ring_keeps_the_last_deadlocks() {
        let graph = WaitForGraph::default();
        for round in 0..RECENT_DEADLOCKS as u64 + 3 {
            let (old, young) = (2 * round + 1, 2 * round + 2);
            assert_eq!(
                graph.wait(old, vec![young], 0, &key(old), LockMode::Shared),
                Detection::None
            );
            assert!(matches!(
                graph.wait(young, vec![old], 0, &key(young), LockMode::Exclusive),
                Detection::SelfVictim(_)
            ));
            graph.stop_waiting(old);
        }
        let recent = graph.recent();
        assert_eq!(recent.len(), RECENT_DEADLOCKS);
        assert_eq!(recent[0].id, 4, "the three oldest were dropped");
        let last = recent.last().unwrap();
        assert_eq!(last.id, RECENT_DEADLOCKS as u64 + 3);
        assert_eq!(last.victim, 2 * (RECENT_DEADLOCKS as u64 + 2) + 2);
        assert_eq!(last.waits[0].mode, LockMode::Exclusive);
        assert_eq!(last.waits[1].mode, LockMode::Shared);
    }

    #[test]
    fn long_cycle_and_no_false_cycle() {
        let graph = WaitForGraph::default();
        assert_eq!(
            graph.wait(1, vec![2], 0, &key(1), LockMode::Exclusive),
            Detection::None
        );
        assert_eq!(
            graph.wait(2, vec![3, 4], 0, &key(2), LockMode::Exclusive),
            Detection::None
        );
        assert_eq!(
            graph.wait(4, vec![9], 0, &key(4), LockMode::Exclusive),
            Detection::None
        );
        // 3 waits for 4 -> 9 (not waiting): no cycle.
        assert_eq!(
            graph.wait(3, vec![4], 0, &key(3), LockMode::Exclusive),
            Detection::None
        );
        // 9 waits for 1: 9 -> 1 -> 2 -> 3 -> 4 -> 9 (first path found); 9 is the youngest.
        match graph.wait(9, vec![1], 0, &key(9), LockMode::Exclusive) {
            Detection::SelfVictim(cycle) => assert_eq!(cycle, vec![9, 1, 2, 3, 4]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ended_transactions_leave_no_stale_edges() {
        let graph = WaitForGraph::default();
        assert_eq!(
            graph.wait(1, vec![2], 0, &key(1), LockMode::Exclusive),
            Detection::None
        );
        graph.remove(2);
        assert_eq!(
            graph.wait(2, vec![1], 0, &key(2), LockMode::Exclusive),
            Detection::None
        );
        graph.stop_waiting(2);
        graph.stop_waiting(1);
        assert_eq!(
            graph.wait(2, vec![1], 0, &key(2), LockMode::Exclusive),
            Detection::None
        );
    }
}
