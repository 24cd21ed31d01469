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
//! Lock order: a lock-table stripe mutex, then this graph's mutex; never the reverse.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::lock_table::TxnId;

#[derive(Debug)]
struct Waiting {
    on: Vec<TxnId>,
    stripe: usize,
}

#[derive(Debug, Default)]
struct GraphState {
    waits: HashMap<TxnId, Waiting>,
    /// Marked victims, with the cycle that condemned them.
    victims: HashMap<TxnId, Vec<TxnId>>,
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

    /// Records that `txn` waits (on lock-table stripe `stripe`) for every transaction in
    /// `on`, and looks for a cycle through `txn`.
    pub(crate) fn wait(&self, txn: TxnId, on: Vec<TxnId>, stripe: usize) -> Detection {
        let mut state = self.lock();
        state.waits.insert(txn, Waiting { on, stripe });
        self.waiting.store(state.waits.len(), Ordering::Release);
        let Some(cycle) = find_cycle(&state.waits, txn) else {
            return Detection::None;
        };
        let victim = cycle.iter().copied().max().unwrap_or(txn);
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

    #[test]
    fn two_party_cycle_picks_the_youngest() {
        let graph = WaitForGraph::default();
        assert_eq!(graph.wait(1, vec![2], 0), Detection::None);
        // 2 closing the cycle is the youngest: it gives up itself.
        assert_eq!(graph.wait(2, vec![1], 1), Detection::SelfVictim(vec![2, 1]));
        assert_eq!(graph.take_victim(2), None);
    }

    #[test]
    fn older_detector_marks_the_younger_waiter() {
        let graph = WaitForGraph::default();
        assert_eq!(graph.wait(5, vec![3], 7), Detection::None);
        assert_eq!(
            graph.wait(3, vec![5], 2),
            Detection::OtherVictim {
                victim: 5,
                stripe: 7
            }
        );
        assert_eq!(graph.take_victim(5), Some(vec![3, 5]));
        assert_eq!(graph.take_victim(5), None, "the mark is taken once");
    }

    #[test]
    fn long_cycle_and_no_false_cycle() {
        let graph = WaitForGraph::default();
        assert_eq!(graph.wait(1, vec![2], 0), Detection::None);
        assert_eq!(graph.wait(2, vec![3, 4], 0), Detection::None);
        assert_eq!(graph.wait(4, vec![9], 0), Detection::None);
        // 3 waits for 4 -> 9 (not waiting): no cycle.
        assert_eq!(graph.wait(3, vec![4], 0), Detection::None);
        // 9 waits for 1: 9 -> 1 -> 2 -> 3 -> 4 -> 9 (first path found); 9 is the youngest.
        match graph.wait(9, vec![1], 0) {
            Detection::SelfVictim(cycle) => assert_eq!(cycle, vec![9, 1, 2, 3, 4]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ended_transactions_leave_no_stale_edges() {
        let graph = WaitForGraph::default();
        assert_eq!(graph.wait(1, vec![2], 0), Detection::None);
        graph.remove(2);
        assert_eq!(graph.wait(2, vec![1], 0), Detection::None);
        graph.stop_waiting(2);
        graph.stop_waiting(1);
        assert_eq!(graph.wait(2, vec![1], 0), Detection::None);
    }
}
