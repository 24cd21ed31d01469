//! [`RangeDelSet`]: the range tombstones a reader must honour, fragmented for lookup.
//!
//! Range tombstones (docs/format/sst.md, "Range deletions") may overlap arbitrarily. The set
//! keeps those visible at one snapshot and cuts them into fragments: `[start, end)` user-key
//! intervals that do not overlap, each carrying the largest sequence number of the tombstones
//! covering it. An entry `(user_key, seqno)` is deleted when the fragment holding `user_key`
//! has a larger sequence number than the entry.
//!
//! Invariants:
//! 1. Fragments are sorted, non-empty (`start < end`) and disjoint: `end[i] <= start[i + 1]`.
//!    Two touching fragments (`end[i] == start[i + 1]`) carry different sequence numbers.
//! 2. Every fragment's sequence number is `<= snapshot`; tombstones above the snapshot, and
//!    empty ones (`start >= end`), are dropped when the set is built.
//! 3. A [`RangeDelCursor`] is only a hint: any cursor gives the same answers as a binary
//!    search, it is just faster when successive keys are close (as they are when iterating).

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fmt;
use std::sync::Arc;

use shale_sst::{Comparator, RangeTombstone, SeqNo};

/// One fragment: user keys in `[start, end)` are covered at `seqno`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fragment {
    start: Vec<u8>,
    end: Vec<u8>,
    seqno: SeqNo,
}

/// The range tombstones visible at a snapshot, fragmented; see the module docs.
#[derive(Clone)]
pub struct RangeDelSet {
    comparator: Arc<dyn Comparator>,
    fragments: Vec<Fragment>,
}

/// A remembered position in a [`RangeDelSet`] for lookups of nearby keys (crate-internal).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RangeDelCursor {
    /// A guess at the first fragment whose end is above the key.
    index: usize,
}

/// How many fragments a cursor walks before it falls back to a binary search.
const CURSOR_STEPS: usize = 4;

impl RangeDelSet {
    /// Builds the set from `tombstones` (from any mix of memtables and tables, in any order),
    /// keeping those with `seqno <= snapshot`. `O(n log n)` in the number of tombstones.
    pub fn new<'a>(
        comparator: Arc<dyn Comparator>,
        snapshot: SeqNo,
        tombstones: impl IntoIterator<Item = &'a RangeTombstone>,
    ) -> Self {
        let cmp = comparator.as_ref();
        let live: Vec<&RangeTombstone> = tombstones
            .into_iter()
            .filter(|t| t.seqno <= snapshot && cmp.compare(&t.start, &t.end) == Ordering::Less)
            .collect();
        // Every start and end, sorted; equal keys become one boundary point. Each tombstone
        // learns the indexes of its start and end points as the points are numbered.
        let mut events: Vec<(&[u8], usize, bool)> = Vec::with_capacity(live.len() * 2);
        for (i, t) in live.iter().enumerate() {
            events.push((&t.start, i, true));
            events.push((&t.end, i, false));
        }
        events.sort_unstable_by(|a, b| cmp.compare(a.0, b.0));
        let mut points: Vec<&[u8]> = Vec::new();
        // (start point, end point, seqno) per tombstone.
        let mut spans: Vec<(usize, usize, SeqNo)> = live.iter().map(|t| (0, 0, t.seqno)).collect();
        for &(key, tombstone, is_start) in &events {
            if points
                .last()
                .is_none_or(|&last| cmp.compare(last, key) != Ordering::Equal)
            {
                points.push(key);
            }
            let point = points.len() - 1;
            if is_start {
                spans[tombstone].0 = point;
            } else {
                spans[tombstone].1 = point;
            }
        }
        spans.sort_unstable_by_key(|&(start, _, _)| start);

        // Sweep the elementary intervals [points[i], points[i + 1]) keeping the covering
        // tombstones in a max-heap by seqno; ended ones are dropped lazily from the top.
        let mut fragments: Vec<Fragment> = Vec::new();
        let mut active: BinaryHeap<(SeqNo, usize)> = BinaryHeap::new();
        let mut next_span = 0;
        let mut last_end_point = None;
        for i in 0..points.len().saturating_sub(1) {
            while let Some(&(start, end, seqno)) = spans.get(next_span) {
                if start != i {
                    break;
                }
                active.push((seqno, end));
                next_span += 1;
            }
            while active.peek().is_some_and(|&(_, end)| end <= i) {
                active.pop();
            }
            let Some(&(seqno, _)) = active.peek() else {
                continue;
            };
            match fragments.last_mut() {
                Some(last) if last_end_point == Some(i) && last.seqno == seqno => {
                    last.end.clear();
                    last.end.extend_from_slice(points[i + 1]);
                }
                _ => fragments.push(Fragment {
                    start: points[i].to_vec(),
                    end: points[i + 1].to_vec(),
                    seqno,
                }),
            }
            last_end_point = Some(i + 1);
        }
        RangeDelSet {
            comparator,
            fragments,
        }
    }

    /// A set with no tombstones.
    pub fn empty(comparator: Arc<dyn Comparator>) -> Self {
        RangeDelSet {
            comparator,
            fragments: Vec::new(),
        }
    }

    /// Whether no tombstone is visible (readers then skip every check).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.fragments.is_empty()
    }

    /// The fragments, in order, as `(start, end, seqno)`.
    #[cfg(any(test, feature = "testing"))]
    pub fn fragments(&self) -> impl Iterator<Item = (&[u8], &[u8], SeqNo)> + '_ {
        self.fragments
            .iter()
            .map(|f| (f.start.as_slice(), f.end.as_slice(), f.seqno))
    }

    /// The largest sequence number of a visible tombstone covering `user_key`, if any.
    #[cfg(any(test, feature = "testing"))]
    pub fn max_covering_seqno(&self, user_key: &[u8]) -> Option<SeqNo> {
        let index = self.first_ending_after(user_key);
        self.seqno_at(index, user_key)
    }

    /// Whether a visible tombstone newer than `seqno` covers `user_key`, i.e. whether the
    /// entry `(user_key, seqno)` is deleted.
    #[cfg(any(test, feature = "testing"))]
    pub fn covers(&self, user_key: &[u8], seqno: SeqNo) -> bool {
        self.max_covering_seqno(user_key).is_some_and(|s| s > seqno)
    }

    /// [`Self::max_covering_seqno`], starting from (and updating) `cursor`.
    pub(crate) fn max_covering_seqno_near(
        &self,
        cursor: &mut RangeDelCursor,
        user_key: &[u8],
    ) -> Option<SeqNo> {
        let len = self.fragments.len();
        let mut index = cursor.index.min(len);
        let mut steps = 0;
        // Forward: past fragments that end at or before the key.
        while index < len && self.less_or_equal(&self.fragments[index].end, user_key) {
            index += 1;
            steps += 1;
            if steps > CURSOR_STEPS {
                index = self.first_ending_after(user_key);
                break;
            }
        }
        // Backward: back over fragments that still end after the key.
        while index > 0 && !self.less_or_equal(&self.fragments[index - 1].end, user_key) {
            index -= 1;
            steps += 1;
            if steps > CURSOR_STEPS {
                index = self.first_ending_after(user_key);
                break;
            }
        }
        cursor.index = index;
        self.seqno_at(index, user_key)
    }

    /// [`Self::covers`], starting from (and updating) `cursor`.
    pub(crate) fn covers_near(
        &self,
        cursor: &mut RangeDelCursor,
        user_key: &[u8],
        seqno: SeqNo,
    ) -> bool {
        self.max_covering_seqno_near(cursor, user_key)
            .is_some_and(|s| s > seqno)
    }

    /// The index of the first fragment whose end is above `user_key` (fragment ends ascend).
    fn first_ending_after(&self, user_key: &[u8]) -> usize {
        self.fragments
            .partition_point(|f| self.less_or_equal(&f.end, user_key))
    }

    /// The seqno of fragment `index` if it covers `user_key`, given that `index` is the first
    /// fragment ending after the key.
    fn seqno_at(&self, index: usize, user_key: &[u8]) -> Option<SeqNo> {
        let fragment = self.fragments.get(index)?;
        self.less_or_equal(&fragment.start, user_key)
            .then_some(fragment.seqno)
    }

    fn less_or_equal(&self, a: &[u8], b: &[u8]) -> bool {
        self.comparator.compare(a, b) != Ordering::Greater
    }
}

impl fmt::Debug for RangeDelSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_list();
        for fragment in &self.fragments {
            list.entry(&format_args!(
                "[{}, {})@{}",
                shale_sst::printable(&fragment.start),
                shale_sst::printable(&fragment.end),
                fragment.seqno
            ));
        }
        list.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use shale_sst::BytewiseComparator;

    fn tombstone(start: &str, end: &str, seqno: SeqNo) -> RangeTombstone {
        RangeTombstone {
            start: start.as_bytes().to_vec(),
            end: end.as_bytes().to_vec(),
            seqno,
        }
    }

    fn set(snapshot: SeqNo, tombstones: &[RangeTombstone]) -> RangeDelSet {
        RangeDelSet::new(Arc::new(BytewiseComparator), snapshot, tombstones)
    }

    #[test]
    fn overlapping_tombstones_fragment_by_max_seqno() {
        let s = set(
            100,
            &[
                tombstone("a", "e", 5),
                tombstone("c", "g", 9),
                tombstone("d", "f", 7),
                tombstone("x", "z", 200), // above the snapshot
                tombstone("m", "m", 50),  // empty
                tombstone("g", "h", 9),   // touches [c, g) with the same seqno: merged
            ],
        );
        assert_eq!(format!("{s:?}"), r#"[["a", "c")@5, ["c", "h")@9]"#);
        assert_eq!(s.max_covering_seqno(b"a"), Some(5));
        assert_eq!(s.max_covering_seqno(b"c"), Some(9));
        assert_eq!(s.max_covering_seqno(b"gz"), Some(9));
        assert_eq!(s.max_covering_seqno(b"h"), None);
        assert_eq!(s.max_covering_seqno(b"y"), None);
        assert!(s.covers(b"b", 4));
        assert!(!s.covers(b"b", 5));
        assert!(!set(4, &[tombstone("a", "b", 5)]).covers(b"a", 0));
        assert!(set(4, &[]).is_empty());
    }

    /// The cursor gives the same answers as a binary search, whatever order keys come in.
    #[test]
    fn cursor_matches_binary_search() {
        let mut rng = SmallRng::seed_from_u64(7);
        let key = |rng: &mut SmallRng| vec![b'a' + rng.gen_range(0..20u8)];
        for _ in 0..200 {
            let tombstones: Vec<RangeTombstone> = (0..rng.gen_range(0..12))
                .map(|_| RangeTombstone {
                    start: key(&mut rng),
                    end: key(&mut rng),
                    seqno: rng.gen_range(1..20),
                })
                .collect();
            let s = set(rng.gen_range(0..25), &tombstones);
            let mut cursor = RangeDelCursor::default();
            for step in 0..100 {
                let probe = if step % 3 == 0 {
                    key(&mut rng)
                } else {
                    // Mostly small moves, as when iterating.
                    let delta = rng.gen_range(0..3u8);
                    let base = key(&mut rng)[0];
                    vec![base.saturating_add(delta)]
                };
                assert_eq!(
                    s.max_covering_seqno_near(&mut cursor, &probe),
                    s.max_covering_seqno(&probe),
                    "{s:?} {probe:?}"
                );
            }
        }
    }
}
