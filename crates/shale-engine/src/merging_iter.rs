//! [`MergingIter`]: merges any number of child iterators (memtable, immutable memtables, L0
//! tables newest first, then one iterator per level) into one internal-key-ordered stream that
//! can be walked in both directions. `LevelDB`'s `MergingIterator` is the reference behaviour.
//!
//! Invariants:
//! 1. `heap` holds exactly the valid children, ordered as a binary heap whose top is the child
//!    that comes first in the current `direction`: the smallest key going forward, the largest
//!    going backward. The merge is on `children[heap[0]]`.
//! 2. Going forward every child is positioned at its first entry after the merge's current
//!    position; going backward, at its last entry before it. A direction switch re-establishes
//!    this for every child but the current one before the heap is rebuilt.
//! 3. Ties: children never hold equal internal keys (sequence numbers are unique), but if they
//!    do, the order is stable: going forward the lower child index comes first, going backward
//!    the higher one (exactly the reverse of the forward order), and direction switches honour
//!    the same order, so no entry is skipped or repeated.
//! 4. Errors are sticky: the first error any child reports (a child reports one by becoming
//!    invalid with a failing `status`) makes the merge invalid for good and is what `status`
//!    returns. A failing source is never skipped, because skipping it could expose a version
//!    that one of its entries shadows.
//! 5. `runner_up`, when set, is the heap position (1 or 2) of whichever of the top's two
//!    children comes first (1 when there is only one). It is cleared whenever positions 1 or
//!    2 may change: a rebuild, a failure, or the top leaving position 0. While the top child
//!    keeps coming first after stepping, nothing below it moves, so it stays true.
//! 6. Every heap entry's `key` is its child's current `key()`, taken right after the child was
//!    last positioned: a positioning call on a child is followed by refreshing its entry (or
//!    taking it off the heap) before the next comparison. So heap comparisons and `key` read
//!    the bytes directly instead of going down the child's layers (level, table, block) each
//!    time. The bytes stay valid because a child is neither moved (`children` is a boxed
//!    slice, never resized) nor mutated nor dropped while its entry is on the heap, and no
//!    child keeps its key inside its own inline bytes (a table iterator's key is in a heap
//!    buffer, a memtable's in its arena, the other sources are boxed), so mutating one child
//!    never touches the memory another child's entry points at. A level is held in place,
//!    but its open table's key is in that table iterator's heap buffer all the same.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use shale_sst::{Comparator as _, InternalKeyComparator};

use crate::error::{Error, Result};
use crate::iterator::{InternalIterator, SourceIter};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// A child's current key as a pointer and length (invariant 6).
#[derive(Clone, Copy)]
struct CachedKey {
    ptr: *const u8,
    len: usize,
}

// SAFETY: a `CachedKey` only points into memory owned by a child of the same `MergingIter`
// (invariant 6), and the children are `Send`; it is read only through that merge.
unsafe impl Send for CachedKey {}

impl CachedKey {
    #[inline]
    fn of(child: &SourceIter) -> Self {
        Self::new(child.key())
    }

    #[inline]
    fn new(key: &[u8]) -> Self {
        CachedKey {
            ptr: key.as_ptr(),
            len: key.len(),
        }
    }
}

/// One valid child on the heap, with its current key.
#[derive(Clone, Copy)]
struct HeapEntry {
    child: usize,
    key: CachedKey,
}

/// Merges child iterators into one ordered stream; see the module docs.
pub struct MergingIter {
    comparator: Arc<InternalKeyComparator>,
    children: Box<[SourceIter]>,
    /// The valid children, as a binary heap ordered by [`Self::comes_first`].
    heap: Vec<HeapEntry>,
    /// The heap position (1 or 2) of the top's first child, when known (invariant 5).
    runner_up: Option<usize>,
    direction: Direction,
    /// Boxed, being rare: a merge is built (and moved) for every iterator.
    error: Option<Box<Error>>,
    /// The current key, copied while the other children are repositioned on a direction switch.
    switch_key: Vec<u8>,
}

impl MergingIter {
    /// Merges `children`, newest source first (child 0 is the memtable). The children must all
    /// be ordered by `comparator`.
    pub fn new(
        comparator: Arc<InternalKeyComparator>,
        children: impl IntoIterator<Item = impl Into<SourceIter>>,
    ) -> Self {
        Self::from_sources(comparator, children.into_iter().map(Into::into).collect())
    }

    /// [`Self::new`] for sources already collected: they are not moved again (a table
    /// iterator is several hundred bytes, and reads build a merge for every iterator).
    pub fn from_sources(comparator: Arc<InternalKeyComparator>, children: Vec<SourceIter>) -> Self {
        let heap = Vec::with_capacity(children.len());
        MergingIter {
            comparator,
            children: children.into_boxed_slice(),
            heap,
            runner_up: None,
            direction: Direction::Forward,
            error: None,
            switch_key: Vec::new(),
        }
    }

    /// The key of the child at heap position `at`.
    #[inline]
    fn heap_key(&self, at: usize) -> &[u8] {
        let key = self.heap[at].key;
        // SAFETY: invariant 6: the entry's child has not moved, changed or been dropped since
        // its key was taken, and the borrow of `self` keeps it so while the slice lives.
        unsafe { std::slice::from_raw_parts(key.ptr, key.len) }
    }

    /// Positions every child with `position`, then rebuilds the heap for `direction`.
    fn reposition_all(&mut self, direction: Direction, position: impl Fn(&mut SourceIter)) {
        if self.error.is_some() {
            return;
        }
        self.heap.clear();
        for child in &mut self.children {
            position(child);
        }
        self.direction = direction;
        self.rebuild_heap();
    }

    /// Puts every valid child on the heap; takes the first error of an invalid one.
    fn rebuild_heap(&mut self) {
        self.heap.clear();
        self.runner_up = None;
        for (index, child) in self.children.iter().enumerate() {
            if child.valid() {
                self.heap.push(HeapEntry {
                    child: index,
                    key: CachedKey::of(child),
                });
            } else if let Err(e) = child.status() {
                self.fail(e);
                return;
            }
        }
        for at in (0..self.heap.len() / 2).rev() {
            self.sift_down(at);
        }
    }

    fn fail(&mut self, error: Error) {
        if self.error.is_none() {
            self.error = Some(Box::new(error));
        }
        self.heap.clear();
        self.runner_up = None;
    }

    /// Restores the heap after the top child moved onto `key` (its new current key), or ran
    /// off its end (or failed, which fails the merge) when `key` is `None`: it stays on top,
    /// sinks to its place, or leaves the heap.
    #[inline]
    fn fix_top(&mut self, key: Option<CachedKey>) {
        let Some(key) = key else {
            self.remove_top();
            return;
        };
        self.heap[0].key = key;
        if self.heap.len() == 1 {
            return;
        }
        // One comparison while the same child stays first (invariant 5): the runner-up's
        // position in the heap did not change.
        let runner_up = if let Some(position) = self.runner_up {
            position
        } else {
            let position = if self.heap.len() > 2 && self.comes_first(2, 1) {
                2
            } else {
                1
            };
            self.runner_up = Some(position);
            position
        };
        if self.comes_first(0, runner_up) {
            return;
        }
        self.runner_up = None;
        self.heap.swap(0, runner_up);
        self.sift_down(runner_up);
    }

    /// Takes the exhausted (or failed) top child off the heap.
    fn remove_top(&mut self) {
        let top = self.heap[0].child;
        self.runner_up = None;
        if let Err(e) = self.children[top].status() {
            self.fail(e);
            return;
        }
        let last = self.heap.pop().expect("the heap held the top");
        if !self.heap.is_empty() {
            self.heap[0] = last;
            self.sift_down(0);
        }
    }

    fn sift_down(&mut self, mut at: usize) {
        let len = self.heap.len();
        loop {
            let left = 2 * at + 1;
            if left >= len {
                return;
            }
            let right = left + 1;
            let mut first = left;
            if right < len && self.comes_first(right, left) {
                first = right;
            }
            if !self.comes_first(first, at) {
                return;
            }
            self.heap.swap(at, first);
            at = first;
        }
    }

    /// Whether the entry at heap position `a` comes before the one at `b` in the current
    /// direction.
    // Forced: called once per step from `fix_top`; as a call it cost a third of the compare
    // in saved registers (measured at 1M keys, docs/benchmarks.md "Seeks, second pass").
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn comes_first(&self, a: usize, b: usize) -> bool {
        let order = self
            .comparator
            .compare(self.heap_key(a), self.heap_key(b))
            .then(self.heap[a].child.cmp(&self.heap[b].child));
        match self.direction {
            Direction::Forward => order == Ordering::Less,
            Direction::Reverse => order == Ordering::Greater,
        }
    }

    /// Moves every child but the current one to its first entry after the current position
    /// (invariants 2 and 3), then rebuilds the heap going forward.
    fn switch_to_forward(&mut self) {
        let current = self.heap[0].child;
        self.switch_key.clear();
        self.switch_key
            .extend_from_slice(self.children[current].key());
        self.heap.clear();
        for (index, child) in self.children.iter_mut().enumerate() {
            if index == current {
                continue;
            }
            child.seek(&self.switch_key);
            // An equal key in a lower child came before the current entry.
            if index < current
                && child.valid()
                && self.comparator.compare(child.key(), &self.switch_key) == Ordering::Equal
            {
                child.next();
            }
        }
        self.direction = Direction::Forward;
        self.rebuild_heap();
        debug_assert!(self.error.is_some() || self.heap.first().map(|e| e.child) == Some(current));
    }

    /// Moves every child but the current one to its last entry before the current position,
    /// then rebuilds the heap going backward.
    fn switch_to_reverse(&mut self) {
        let current = self.heap[0].child;
        self.switch_key.clear();
        self.switch_key
            .extend_from_slice(self.children[current].key());
        self.heap.clear();
        for (index, child) in self.children.iter_mut().enumerate() {
            if index == current {
                continue;
            }
            child.seek_for_prev(&self.switch_key);
            // An equal key in a higher child comes after the current entry going forward.
            if index > current
                && child.valid()
                && self.comparator.compare(child.key(), &self.switch_key) == Ordering::Equal
            {
                child.prev();
            }
        }
        self.direction = Direction::Reverse;
        self.rebuild_heap();
        debug_assert!(self.error.is_some() || self.heap.first().map(|e| e.child) == Some(current));
    }
}

impl InternalIterator for MergingIter {
    fn valid(&self) -> bool {
        !self.heap.is_empty()
    }

    fn seek_to_first(&mut self) {
        self.reposition_all(Direction::Forward, InternalIterator::seek_to_first);
    }

    fn seek_to_last(&mut self) {
        self.reposition_all(Direction::Reverse, InternalIterator::seek_to_last);
    }

    fn seek(&mut self, target: &[u8]) {
        self.reposition_all(Direction::Forward, |c| c.seek(target));
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.reposition_all(Direction::Reverse, |c| c.seek_for_prev(target));
    }

    fn next(&mut self) {
        if self.heap.is_empty() {
            return;
        }
        if self.direction == Direction::Reverse {
            self.switch_to_forward();
            if self.heap.is_empty() {
                return;
            }
        }
        let top = self.heap[0].child;
        let key = self.children[top].next_key().map(CachedKey::new);
        self.fix_top(key);
    }

    fn prev(&mut self) {
        if self.heap.is_empty() {
            return;
        }
        if self.direction == Direction::Forward {
            self.switch_to_reverse();
            if self.heap.is_empty() {
                return;
            }
        }
        let top = self.heap[0].child;
        let key = self.children[top].prev_key().map(CachedKey::new);
        self.fix_top(key);
    }

    #[inline]
    fn key(&self) -> &[u8] {
        if self.heap.is_empty() {
            &[]
        } else {
            self.heap_key(0)
        }
    }

    fn value(&self) -> &[u8] {
        self.heap
            .first()
            .map_or(&[], |e| self.children[e.child].value())
    }

    fn status(&self) -> Result<()> {
        self.error.as_ref().map_or(Ok(()), |e| Err(e.duplicate()))
    }
}

impl fmt::Debug for MergingIter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MergingIter")
            .field("children", &self.children.len())
            .field("current", &self.heap.first().map(|e| e.child))
            .field("direction", &self.direction)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iterator::VecIterator;
    use shale_sst::{BytewiseComparator, InternalKey, ValueKind};

    fn comparator() -> Arc<InternalKeyComparator> {
        Arc::new(InternalKeyComparator::new(Arc::new(BytewiseComparator)))
    }

    /// A child whose values are `<key><seqno>/<child>`.
    fn source(child: usize, entries: &[(&str, u64)]) -> Box<dyn InternalIterator> {
        let entries = entries
            .iter()
            .map(|&(k, s)| {
                let key = InternalKey::new(k.as_bytes(), s, ValueKind::Value).into_encoded();
                (key, format!("{k}{s}/{child}").into_bytes())
            })
            .collect();
        Box::new(VecIterator::new(entries, comparator()))
    }

    fn values(merge: &MergingIter) -> String {
        String::from_utf8(merge.value().to_vec()).unwrap()
    }

    #[test]
    fn equal_keys_are_stable_in_both_directions_and_across_switches() {
        // Child 0 and child 2 both hold b@5 (which unique seqnos rule out, but must not break).
        let mut merge = MergingIter::new(
            comparator(),
            vec![
                source(0, &[("a", 1), ("b", 5)]),
                source(1, &[("b", 6), ("c", 1)]),
                source(2, &[("b", 5), ("d", 1)]),
            ],
        );
        let mut forward = Vec::new();
        merge.seek_to_first();
        while merge.valid() {
            forward.push(values(&merge));
            merge.next();
        }
        assert_eq!(forward, ["a1/0", "b6/1", "b5/0", "b5/2", "c1/1", "d1/2"]);
        // The two b@5 entries: child 0's first going forward.
        merge.seek(InternalKey::new(b"b", 5, ValueKind::Value).encoded());
        assert_eq!(values(&merge), "b5/0");
        merge.next();
        assert_eq!(values(&merge), "b5/2");
        merge.prev();
        assert_eq!(values(&merge), "b5/0");
        merge.prev();
        assert_eq!(values(&merge), "b6/1");
        merge.next();
        assert_eq!(values(&merge), "b5/0");
        merge.next();
        merge.next();
        assert_eq!(values(&merge), "c1/1");
        merge.prev();
        assert_eq!(values(&merge), "b5/2");
        merge.prev();
        merge.prev();
        assert_eq!(values(&merge), "b6/1");
        let mut backward = Vec::new();
        merge.seek_to_last();
        while merge.valid() {
            backward.push(values(&merge));
            merge.prev();
        }
        forward.reverse();
        assert_eq!(backward, forward);
    }

    /// A source that rebuilds its current key in one reused buffer, as a block iterator does:
    /// the bytes a merge's cached key points at change under it when the source moves.
    struct RebuiltKeyIter {
        inner: VecIterator,
        key: Vec<u8>,
    }

    impl RebuiltKeyIter {
        fn rebuild(&mut self) {
            self.key.clear();
            if self.inner.valid() {
                self.key.extend_from_slice(self.inner.key());
            }
        }
    }

    impl InternalIterator for RebuiltKeyIter {
        fn valid(&self) -> bool {
            self.inner.valid()
        }
        fn seek_to_first(&mut self) {
            self.inner.seek_to_first();
            self.rebuild();
        }
        fn seek_to_last(&mut self) {
            self.inner.seek_to_last();
            self.rebuild();
        }
        fn seek(&mut self, target: &[u8]) {
            self.inner.seek(target);
            self.rebuild();
        }
        fn seek_for_prev(&mut self, target: &[u8]) {
            self.inner.seek_for_prev(target);
            self.rebuild();
        }
        fn next(&mut self) {
            self.inner.next();
            self.rebuild();
        }
        fn prev(&mut self) {
            self.inner.prev();
            self.rebuild();
        }
        fn key(&self) -> &[u8] {
            &self.key
        }
        fn value(&self) -> &[u8] {
            self.inner.value()
        }
        fn status(&self) -> Result<()> {
            Ok(())
        }
    }

    /// Children with long runs from one child and frequent hand-overs, up to 40 of them (a
    /// deep heap), some rebuilding their key in place and some pointing into stable entries,
    /// walked with random steps, seeks and direction switches against the sorted union: the
    /// runner-up shortcut (invariant 5) and the cached keys (invariant 6) must give the
    /// heap's order exactly. A key cached before its child moved would be stale: the old
    /// entry for a stable child, a changed length for a rebuilt one.
    #[test]
    fn random_walks_match_the_sorted_union() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for round in 0..300 {
            let children = if round % 3 == 0 {
                rng.gen_range(8..40)
            } else {
                rng.gen_range(1..7)
            };
            let mut all: Vec<(Vec<u8>, String)> = Vec::new();
            let mut sources = Vec::new();
            let mut seqno = 1;
            for child in 0..children {
                let mut entries = Vec::new();
                let mut key = rng.gen_range(0..50u32);
                for _ in 0..rng.gen_range(0..40) {
                    // Runs of neighbouring keys in one child, then a jump.
                    key += if rng.gen_bool(0.8) {
                        1
                    } else {
                        rng.gen_range(2..30)
                    };
                    // Lengths vary with the key, so a stale cached length shows too.
                    let user = format!("k{key:04}{}", "x".repeat(key as usize % 3));
                    seqno += 1;
                    let internal =
                        InternalKey::new(user.as_bytes(), seqno, ValueKind::Value).into_encoded();
                    let value = format!("{user}@{seqno}/{child}");
                    entries.push((internal.clone(), value.clone().into_bytes()));
                    all.push((internal, value));
                }
                entries.sort_by(|a, b| comparator().compare(&a.0, &b.0));
                let inner = VecIterator::new(entries, comparator());
                sources.push(if rng.gen_bool(0.5) {
                    Box::new(RebuiltKeyIter {
                        inner,
                        key: Vec::new(),
                    }) as Box<dyn InternalIterator>
                } else {
                    Box::new(inner)
                });
            }
            all.sort_by(|a, b| comparator().compare(&a.0, &b.0));
            let mut merge = MergingIter::new(comparator(), sources);
            let mut position: Option<usize> = None;
            for _ in 0..300 {
                match rng.gen_range(0..10) {
                    0 => {
                        merge.seek_to_first();
                        position = (!all.is_empty()).then_some(0);
                    }
                    1 => {
                        merge.seek_to_last();
                        position = all.len().checked_sub(1);
                    }
                    2 if !all.is_empty() => {
                        let target = &all[rng.gen_range(0..all.len())].0;
                        merge.seek(target);
                        position = all.iter().position(|(k, _)| k == target);
                    }
                    3 | 4 if position.is_some() => {
                        merge.prev();
                        position = position.and_then(|p| p.checked_sub(1));
                    }
                    _ if position.is_some() => {
                        merge.next();
                        position = position.map(|p| p + 1).filter(|&p| p < all.len());
                    }
                    _ => {}
                }
                assert_eq!(merge.valid(), position.is_some(), "round {round}");
                if let Some(p) = position {
                    assert_eq!(values(&merge), all[p].1, "round {round}");
                }
            }
        }
    }

    #[test]
    fn empty_merge_is_invalid_and_ok() {
        let mut merge = MergingIter::new(comparator(), Vec::<SourceIter>::new());
        merge.seek_to_first();
        assert!(!merge.valid());
        merge.next();
        merge.prev();
        assert!(!merge.valid());
        assert!(merge.status().is_ok());
    }
}
