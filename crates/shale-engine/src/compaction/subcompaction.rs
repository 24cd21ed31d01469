//! Subcompactions: where a large compaction is split by user key so that ranges are merged on
//! their own threads (docs/compaction.md, "Subcompactions").
//!
//! Invariants:
//! 1. Boundaries are strictly increasing user keys with strictly increasing input bytes below
//!    them, none with no input below or above it, so ranges `[None, b1), [b1, b2), ..,
//!    [bn, None)` cover every key exactly once and none is planned empty.
//! 2. One user key falls in exactly one range, so all its versions are merged together and the
//!    snapshot and tombstone rules see them as a single-threaded run would.
//! 3. Each range gets about an equal share of the input bytes (as estimated from the tables'
//!    indexes), and no more ranges are planned than give each a quarter of a target file
//!    size (a thread is not worth less).

use shale_sst::{Comparator, RangeTombstone};

use super::Job;
use crate::db::DbInner;
use crate::error::Result;

/// A range is not planned below `target_file_size / MIN_RANGE_FRACTION` input bytes.
const MIN_RANGE_FRACTION: u64 = 4;
/// Index keys sampled from each input table as candidate split keys.
const SAMPLES_PER_TABLE: usize = 64;

/// The user keys at which `job` is split: empty when it runs as one range.
///
/// Candidates are index separators sampled evenly from every input table; the input bytes
/// below a candidate are estimated from each table's index (`Table::approximate_offset_of`,
/// the data offset where the key would be), so tables spanning the whole range, as L0 tables
/// do, are split where their data is, not at their ends.
pub(super) fn boundaries(inner: &DbInner, job: &Job) -> Result<Vec<Vec<u8>>> {
    let options = &job.options;
    if options.max_subcompactions < 2 {
        return Ok(Vec::new());
    }
    let cmp = inner.user_comparator();
    let tables = job
        .compaction
        .all_inputs()
        .map(|(_, file)| {
            inner.table_cache.get(
                file.number,
                file.global_seqno,
                options.prefix_extractor.as_ref(),
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let total: u64 = tables.iter().map(|t| t.properties().data_size).sum();
    let min_range = (options.target_file_size / MIN_RANGE_FRACTION).max(1);
    let ranges = (options.max_subcompactions as u64).min(total / min_range);
    if ranges < 2 {
        return Ok(Vec::new());
    }
    let mut candidates = Vec::new();
    for table in &tables {
        candidates.extend(table.sample_index_keys(SAMPLES_PER_TABLE)?);
    }
    candidates.sort_by(|a, b| cmp.compare(a, b));
    candidates.dedup_by(|a, b| cmp.compare(a, b).is_eq());
    let mut estimates = Vec::with_capacity(candidates.len());
    for candidate in &candidates {
        let mut below = 0u64;
        for table in &tables {
            below += table.approximate_offset_of(candidate)?;
        }
        estimates.push(below);
    }
    Ok(choose(&candidates, &estimates, total, ranges))
}

/// Up to `ranges - 1` of `candidates` (sorted, with `estimates[i]` input bytes below each):
/// for the `k`-th split the one whose estimate is closest to `k / ranges` of `total`. Only
/// candidates with more bytes below them than the previous split and fewer than `total` are
/// taken, so no planned range is empty (invariant 1).
pub(super) fn choose(
    candidates: &[Vec<u8>],
    estimates: &[u64],
    total: u64,
    ranges: u64,
) -> Vec<Vec<u8>> {
    let mut chosen = Vec::new();
    let mut next = 0; // candidates before this index are used up (strictly increasing)
    let mut previous = 0; // bytes below the last split
    for k in 1..ranges {
        let target = total / ranges * k;
        let best = (next..candidates.len())
            .filter(|&i| estimates[i] > previous && estimates[i] < total)
            .min_by_key(|&i| estimates[i].abs_diff(target));
        let Some(best) = best else { break };
        chosen.push(candidates[best].clone());
        previous = estimates[best];
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

    fn pick(candidates: &[(&str, u64)], total: u64, ranges: u64) -> Vec<String> {
        let keys: Vec<Vec<u8>> = candidates.iter().map(|c| c.0.into()).collect();
        let estimates: Vec<u64> = candidates.iter().map(|c| c.1).collect();
        choose(&keys, &estimates, total, ranges)
            .into_iter()
            .map(|k| String::from_utf8(k).unwrap())
            .collect()
    }

    #[test]
    fn splits_balance_the_estimated_bytes() {
        let candidates = [("b", 50), ("d", 120), ("e", 130), ("g", 240), ("j", 360)];
        assert_eq!(pick(&candidates, 480, 2), ["g"]);
        assert_eq!(pick(&candidates, 480, 4), ["d", "g", "j"]);
        assert!(pick(&candidates, 480, 1).is_empty());
    }

    #[test]
    fn splits_increase_and_never_leave_a_range_empty() {
        // Nothing below the first candidates, everything below the last: neither is a split.
        let candidates = [("a", 0), ("b", 0), ("c", 300), ("d", 600), ("e", 600)];
        assert_eq!(pick(&candidates, 600, 2), ["c"]);
        // Few usable candidates, many ranges asked: each at most once, in order.
        assert_eq!(pick(&candidates, 600, 8), ["c"]);
        // Equal estimates: the second would make an empty range.
        let flat = [("b", 100), ("c", 100), ("d", 100)];
        assert_eq!(pick(&flat, 300, 3), ["b"]);
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
