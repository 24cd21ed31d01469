//! Subcompactions: where a large compaction is split by user key so that ranges are merged on
//! their own threads (docs/compaction.md, "Subcompactions").
//!
//! Invariants:
//! 1. Boundaries are strictly increasing user keys, each above the smallest input key, so no
//!    range is empty of inputs at its start and ranges `[None, b1), [b1, b2), .., [bn, None)`
//!    cover every key exactly once.
//! 2. One user key falls in exactly one range, so all its versions are merged together and the
//!    snapshot and tombstone rules see them as a single-threaded run would.
//! 3. Each range gets about an equal share of the input bytes, and no range is planned below
//!    `MIN_RANGE_FRACTION` of a target file size (a thread is not worth less).

use shale_sst::{Comparator, RangeTombstone};

use super::Compaction;
use crate::options::KeyspaceOptions;

/// A range is not planned below `target_file_size / MIN_RANGE_FRACTION` input bytes.
const MIN_RANGE_FRACTION: u64 = 4;

/// The user keys at which `compaction` is split: empty when it runs as one range.
pub(super) fn boundaries(
    cmp: &dyn Comparator,
    compaction: &Compaction,
    options: &KeyspaceOptions,
) -> Vec<Vec<u8>> {
    let files: Vec<(&[u8], &[u8], u64)> = compaction
        .all_inputs()
        .map(|(_, f)| (f.smallest.user_key(), f.largest.user_key(), f.size))
        .collect();
    let min_range = (options.target_file_size / MIN_RANGE_FRACTION).max(1);
    split_points(cmp, &files, options.max_subcompactions, min_range)
}

/// Up to `max_ranges - 1` split keys for input files `(smallest, largest, bytes)`, chosen
/// among the files' smallest keys so that the estimated input bytes below each split are
/// closest to an equal share (a file straddling a split counts half on each side).
pub(super) fn split_points(
    cmp: &dyn Comparator,
    files: &[(&[u8], &[u8], u64)],
    max_ranges: usize,
    min_range_bytes: u64,
) -> Vec<Vec<u8>> {
    let total: u64 = files.iter().map(|f| f.2).sum();
    let ranges = (max_ranges as u64).min(total / min_range_bytes.max(1));
    if ranges < 2 {
        return Vec::new();
    }
    let mut candidates: Vec<&[u8]> = files.iter().map(|f| f.0).collect();
    candidates.sort_by(|a, b| cmp.compare(a, b));
    candidates.dedup_by(|a, b| cmp.compare(a, b).is_eq());
    // Invariant 1: never the smallest key.
    candidates.remove(0);
    let below = |key: &[u8]| -> u64 {
        files
            .iter()
            .map(|&(smallest, largest, bytes)| {
                if cmp.compare(largest, key).is_lt() {
                    bytes
                } else if cmp.compare(smallest, key).is_lt() {
                    bytes / 2
                } else {
                    0
                }
            })
            .sum()
    };
    let estimates: Vec<u64> = candidates.iter().map(|c| below(c)).collect();
    let mut chosen: Vec<Vec<u8>> = Vec::new();
    let mut next = 0; // candidates before this index are used up (strictly increasing)
    for k in 1..ranges {
        let target = total / ranges * k;
        let best = (next..candidates.len()).min_by_key(|&i| estimates[i].abs_diff(target));
        let Some(best) = best else { break };
        chosen.push(candidates[best].to_vec());
        next = best + 1;
    }
    chosen
}

/// `tombstone` clipped to `[lower, upper)`; `None` when nothing of it is left.
pub(super) fn clip(
    cmp: &dyn Comparator,
    mut tombstone: RangeTombstone,
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
) -> Option<RangeTombstone> {
    if let Some(lower) = lower {
        if cmp.compare(&tombstone.start, lower).is_lt() {
            tombstone.start = lower.to_vec();
        }
    }
    if let Some(upper) = upper {
        if cmp.compare(&tombstone.end, upper).is_gt() {
            tombstone.end = upper.to_vec();
        }
    }
    cmp.compare(&tombstone.start, &tombstone.end)
        .is_lt()
        .then_some(tombstone)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale_sst::BytewiseComparator;

    fn split(files: &[(&str, &str, u64)], max_ranges: usize, min_range: u64) -> Vec<String> {
        let files: Vec<(&[u8], &[u8], u64)> = files
            .iter()
            .map(|&(a, b, n)| (a.as_bytes(), b.as_bytes(), n))
            .collect();
        split_points(&BytewiseComparator, &files, max_ranges, min_range)
            .into_iter()
            .map(|k| String::from_utf8(k).unwrap())
            .collect()
    }

    #[test]
    fn splits_balance_input_bytes_at_file_starts() {
        // Four equal L1 files under two overlapping L0 files.
        let files = [
            ("a", "c", 100),
            ("d", "f", 100),
            ("g", "i", 100),
            ("j", "l", 100),
            ("b", "k", 40),
            ("e", "h", 40),
        ];
        assert_eq!(split(&files, 2, 1), ["g"]);
        assert_eq!(split(&files, 4, 1), ["d", "g", "j"]);
        // One range asked for, or too few bytes for more: no split.
        assert!(split(&files, 1, 1).is_empty());
        assert!(split(&files, 4, 1000).is_empty());
        // The byte floor limits the number of ranges: 480 bytes / 200 = 2 ranges.
        assert_eq!(split(&files, 4, 200), ["g"]);
    }

    #[test]
    fn splits_are_increasing_and_never_the_smallest_key() {
        // All files start at the same key: nothing to split at.
        assert!(split(&[("a", "z", 100), ("a", "m", 100)], 4, 1).is_empty());
        // Few candidates, many ranges asked: each candidate at most once, in order.
        let points = split(&[("a", "b", 10), ("c", "d", 10), ("e", "f", 1000)], 8, 1);
        assert!(points.windows(2).all(|w| w[0] < w[1]), "{points:?}");
        assert!(points.iter().all(|p| p.as_str() > "a"));
        assert!(points.len() <= 2);
    }

    #[test]
    fn tombstones_are_clipped_to_the_range() {
        let t = |s: &str, e: &str| RangeTombstone {
            start: s.into(),
            end: e.into(),
            seqno: 7,
        };
        let cmp = BytewiseComparator;
        let clipped = clip(&cmp, t("b", "m"), Some(b"d"), Some(b"g")).unwrap();
        assert_eq!((clipped.start, clipped.end), (b"d".to_vec(), b"g".to_vec()));
        let open = clip(&cmp, t("b", "m"), None, None).unwrap();
        assert_eq!((open.start, open.end), (b"b".to_vec(), b"m".to_vec()));
        assert!(clip(&cmp, t("b", "d"), Some(b"d"), None).is_none());
        assert!(clip(&cmp, t("h", "m"), None, Some(b"h")).is_none());
    }
}
