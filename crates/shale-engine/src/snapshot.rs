//! Snapshots: read views pinned at a sequence number. Flush and compaction keep every version
//! a live snapshot can see (ARCHITECTURE.md invariant 3), so the set of live snapshots is
//! shared with them through [`SnapshotList::all`], and both drop versions by [`stripe`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use shale_sst::SeqNo;

/// The stripe of `seqno` among `snapshots` (ascending): how many are older than it. Of two
/// versions of one user key in the same stripe, no snapshot sees the older without also
/// seeing the newer, so the older can be dropped.
pub(crate) fn stripe(snapshots: &[SeqNo], seqno: SeqNo) -> usize {
    snapshots.partition_point(|&s| s < seqno)
}

/// The live snapshots, as a multiset of sequence numbers.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    live: Arc<Mutex<BTreeMap<SeqNo, usize>>>,
}

impl SnapshotList {
    pub(crate) fn acquire(&self, seqno: SeqNo) -> Snapshot {
        *self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(seqno)
            .or_insert(0) += 1;
        Snapshot {
            inner: Arc::new(SnapshotInner {
                seqno,
                list: self.live.clone(),
            }),
        }
    }

    /// Every live snapshot's sequence number, ascending.
    pub(crate) fn all(&self) -> Vec<SeqNo> {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .copied()
            .collect()
    }
}

/// A consistent read view. Clones share it; it is released when the last clone drops.
#[derive(Debug, Clone)]
pub struct Snapshot {
    inner: Arc<SnapshotInner>,
}

#[derive(Debug)]
struct SnapshotInner {
    seqno: SeqNo,
    list: Arc<Mutex<BTreeMap<SeqNo, usize>>>,
}

impl Snapshot {
    /// Reads through this snapshot see writes with sequence numbers up to this one.
    pub fn seqno(&self) -> SeqNo {
        self.inner.seqno
    }
}

impl Drop for SnapshotInner {
    fn drop(&mut self) {
        let mut live = self.list.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = live.get_mut(&self.seqno) {
            *count -= 1;
            if *count == 0 {
                live.remove(&self.seqno);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oldest_follows_acquire_and_release() {
        let list = SnapshotList::default();
        assert_eq!(list.all().first().copied(), None);
        let a = list.acquire(5);
        let b = list.acquire(3);
        let b2 = b.clone();
        let c = list.acquire(3);
        assert_eq!(list.all().first().copied(), Some(3));
        drop(b);
        assert_eq!(list.all().first().copied(), Some(3));
        drop(b2);
        assert_eq!(list.all().first().copied(), Some(3), "c still holds 3");
        drop(c);
        assert_eq!(list.all().first().copied(), Some(5));
        assert_eq!(a.seqno(), 5);
        drop(a);
        assert_eq!(list.all(), Vec::<SeqNo>::new());
    }
}
