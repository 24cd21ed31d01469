//! Behaviour tests of the read-side iterators: `MergingIter`, `LevelIter`, `RangeDelSet` and
//! `DbIter`.
//!
//! - Model tests run thousands of seeded random cases against straightforward oracles (a sorted
//!   vector for the merge and the level, brute force for tombstones, a visible-key map for
//!   `DbIter`). Set `SHALE_ITER_SEED` to vary the seed; a failure prints the case's seed.
//! - Data-driven tests replay `tests/testdata/iterators/*.txt`: each case describes sources,
//!   tombstones, snapshot, bounds and prefix, then a script of operations with the expected
//!   output after `----`. Regenerate the expected output with `SHALE_REGENERATE=1`.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use shale_engine::inspect::PinnedTable;
use shale_engine::testing::{
    DbIter, DbIterOptions, InternalIterator, LevelFile, LevelIter, LevelTable, MergingIter,
    RangeDelSet, SourceIter, TableOpener, VecIterator,
};
use shale_engine::{Error, Result};
use shale_sst::{
    BytewiseComparator, Comparator, FixedPrefix, InternalKey, InternalKeyComparator,
    ParsedInternalKey, PrefixExtractor, RangeTombstone, SeqNo, ValueKind, MAX_SEQNO,
};

// ---------------------------------------------------------------------------------------------
// Shared helpers

fn user_comparator() -> Arc<dyn Comparator> {
    Arc::new(BytewiseComparator)
}

fn internal_comparator() -> Arc<InternalKeyComparator> {
    Arc::new(InternalKeyComparator::new(user_comparator()))
}

fn base_seed() -> u64 {
    std::env::var("SHALE_ITER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5a1e_2024_u64)
}

/// One point entry of a source.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    user_key: Vec<u8>,
    seqno: SeqNo,
    kind: ValueKind,
    value: Vec<u8>,
}

impl Entry {
    fn encoded(&self) -> (Vec<u8>, Vec<u8>) {
        (
            InternalKey::new(&self.user_key, self.seqno, self.kind).into_encoded(),
            self.value.clone(),
        )
    }
}

fn sort_internal(entries: &mut [(Vec<u8>, Vec<u8>)]) {
    let cmp = internal_comparator();
    entries.sort_by(|a, b| cmp.compare(&a.0, &b.0));
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A sorted in-memory source that fails (sticky, like a table hitting a bad block) when it
/// is moved onto entry `fail_at`.
struct FailingIter {
    name: String,
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    fail_at: Option<usize>,
    position: Option<usize>,
    failed: bool,
    comparator: Arc<InternalKeyComparator>,
}

impl FailingIter {
    fn new(name: &str, entries: Vec<(Vec<u8>, Vec<u8>)>, fail_at: Option<usize>) -> Self {
        FailingIter {
            name: name.to_string(),
            entries,
            fail_at,
            position: None,
            failed: false,
            comparator: internal_comparator(),
        }
    }

    fn land(&mut self, position: Option<usize>) {
        if self.failed {
            return;
        }
        if position.is_some() && position == self.fail_at {
            self.failed = true;
            self.position = None;
        } else {
            self.position = position;
        }
    }

    fn less(&self, a: &[u8], b: &[u8]) -> bool {
        self.comparator.compare(a, b) == Ordering::Less
    }
}

impl InternalIterator for FailingIter {
    fn valid(&self) -> bool {
        self.position.is_some()
    }
    fn seek_to_first(&mut self) {
        self.land((!self.entries.is_empty()).then_some(0));
    }
    fn seek_to_last(&mut self) {
        self.land(self.entries.len().checked_sub(1));
    }
    fn seek(&mut self, target: &[u8]) {
        let p = self.entries.partition_point(|(k, _)| self.less(k, target));
        self.land((p < self.entries.len()).then_some(p));
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let p = self.entries.partition_point(|(k, _)| !self.less(target, k));
        self.land(p.checked_sub(1));
    }
    fn next(&mut self) {
        if let Some(p) = self.position {
            self.land(Some(p + 1).filter(|&p| p < self.entries.len()));
        }
    }
    fn prev(&mut self) {
        if let Some(p) = self.position {
            self.land(p.checked_sub(1));
        }
    }
    fn key(&self) -> &[u8] {
        self.position.map_or(&[], |p| &self.entries[p].0)
    }
    fn value(&self) -> &[u8] {
        self.position.map_or(&[], |p| &self.entries[p].1)
    }
    fn status(&self) -> Result<()> {
        if self.failed {
            Err(Error::Corruption {
                file: format!("source {}", self.name).into(),
                offset: self.fail_at.unwrap_or(0) as u64,
                detail: "injected failure".into(),
            })
        } else {
            Ok(())
        }
    }
}

/// A `TableOpener` over in-memory files, counting opens; file `fail_open` cannot be opened.
fn memory_opener(
    files: Vec<Vec<(Vec<u8>, Vec<u8>)>>,
    fail_at: Vec<Option<usize>>,
    fail_open: Option<u64>,
    opens: Arc<AtomicUsize>,
) -> TableOpener {
    Arc::new(move |file: &LevelFile| {
        let number = file.file_number;
        opens.fetch_add(1, AtomicOrdering::Relaxed);
        if Some(number) == fail_open {
            return Err(Error::Corruption {
                file: format!("{number:06}.sst").into(),
                offset: 0,
                detail: "injected open failure".into(),
            });
        }
        let index = number as usize;
        Ok(LevelTable::Other(Box::new(FailingIter::new(
            &format!("file {number}"),
            files[index].clone(),
            fail_at.get(index).copied().flatten(),
        ))))
    })
}

/// `LevelFile`s for sorted, non-empty, non-overlapping `files`, numbered by position.
fn level_files(files: &[Vec<(Vec<u8>, Vec<u8>)>]) -> Arc<[LevelFile]> {
    files
        .iter()
        .enumerate()
        .map(|(number, f)| LevelFile {
            smallest: InternalKey::from_encoded(f[0].0.clone()).unwrap(),
            largest: InternalKey::from_encoded(f[f.len() - 1].0.clone()).unwrap(),
            file_number: number as u64,
            global_seqno: None,
            pinned_table: PinnedTable::default(),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// A generic "sorted vector" model of an internal iterator, with random walks.

/// Walks `iter` with random operations and checks each step against `expected` (the sorted
/// stream) through `seek_model`/`seek_for_prev_model` positions.
fn random_walk_internal(
    rng: &mut SmallRng,
    iter: &mut dyn InternalIterator,
    expected: &[(Vec<u8>, Vec<u8>)],
    targets: &[Vec<u8>],
    steps: usize,
    context: &str,
) {
    let cmp = internal_comparator();
    // Full scans first.
    iter.seek_to_first();
    for (i, (k, v)) in expected.iter().enumerate() {
        assert!(iter.valid(), "{context}: forward scan ended at {i}");
        assert_eq!(
            (iter.key(), iter.value()),
            (&k[..], &v[..]),
            "{context}: forward {i}"
        );
        iter.next();
    }
    assert!(!iter.valid(), "{context}: forward scan too long");
    iter.seek_to_last();
    for (i, (k, v)) in expected.iter().enumerate().rev() {
        assert!(iter.valid(), "{context}: backward scan ended at {i}");
        assert_eq!(
            (iter.key(), iter.value()),
            (&k[..], &v[..]),
            "{context}: backward {i}"
        );
        iter.prev();
    }
    assert!(!iter.valid(), "{context}: backward scan too long");

    let mut position: Option<usize> = None;
    let mut log = String::new();
    for step in 0..steps {
        let op = rng.gen_range(0..10);
        match op {
            0 => {
                iter.seek_to_first();
                position = (!expected.is_empty()).then_some(0);
                log.push_str("first ");
            }
            1 => {
                iter.seek_to_last();
                position = expected.len().checked_sub(1);
                log.push_str("last ");
            }
            2 | 3 => {
                let Some(t) = targets.choose(rng) else {
                    continue;
                };
                iter.seek(t);
                let p = expected.partition_point(|(k, _)| cmp.compare(k, t) == Ordering::Less);
                position = (p < expected.len()).then_some(p);
                let _ = write!(log, "seek({:?}) ", ParsedInternalKey::parse(t).ok());
            }
            4 | 5 => {
                let Some(t) = targets.choose(rng) else {
                    continue;
                };
                iter.seek_for_prev(t);
                let p = expected.partition_point(|(k, _)| cmp.compare(k, t) != Ordering::Greater);
                position = p.checked_sub(1);
                let _ = write!(
                    log,
                    "seek_for_prev({:?}) ",
                    ParsedInternalKey::parse(t).ok()
                );
            }
            6 | 7 => {
                if position.is_none() {
                    continue;
                }
                iter.next();
                position = position.map(|p| p + 1).filter(|&p| p < expected.len());
                log.push_str("next ");
            }
            _ => {
                if position.is_none() {
                    continue;
                }
                iter.prev();
                position = position.and_then(|p| p.checked_sub(1));
                log.push_str("prev ");
            }
        }
        match position {
            Some(p) => {
                assert!(
                    iter.valid(),
                    "{context}: step {step} should be valid; {log}"
                );
                assert_eq!(
                    (iter.key(), iter.value()),
                    (&expected[p].0[..], &expected[p].1[..]),
                    "{context}: step {step}; {log}"
                );
            }
            None => assert!(
                !iter.valid(),
                "{context}: step {step} should be invalid; {log}"
            ),
        }
        assert!(iter.status().is_ok(), "{context}: step {step}");
    }
}

fn random_user_key(rng: &mut SmallRng, alphabet: usize, max_len: usize) -> Vec<u8> {
    let len = rng.gen_range(1..=max_len);
    (0..len)
        .map(|_| b'a' + rng.gen_range(0..alphabet) as u8)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// MergingIter

#[test]
fn merging_iter_matches_sorted_concatenation() {
    let started = Instant::now();
    let mut cases = 0;
    for case in 0..1500u64 {
        let seed = base_seed() ^ (case << 8) ^ 1;
        let mut rng = SmallRng::seed_from_u64(seed);
        let children = rng.gen_range(0..=9);
        // Some cases let children hold equal internal keys (unique seqnos rule them out, but
        // the merge must still be stable: lower child first going forward).
        let duplicates = rng.gen_bool(0.2);
        let mut seqnos: Vec<SeqNo> = (1..=400).collect();
        seqnos.shuffle(&mut rng);
        let mut tagged: Vec<(Vec<u8>, usize, Vec<u8>)> = Vec::new();
        let mut sources: Vec<Box<dyn InternalIterator>> = Vec::new();
        for child in 0..children {
            let mut entries = Vec::new();
            for _ in 0..rng.gen_range(0..25) {
                let user_key = random_user_key(&mut rng, 4, 2);
                let seqno = if duplicates {
                    rng.gen_range(1..4)
                } else {
                    seqnos.pop().unwrap()
                };
                let key = InternalKey::new(&user_key, seqno, ValueKind::Value).into_encoded();
                entries.push((key, format!("{}/{child}", show(&user_key)).into_bytes()));
            }
            sort_internal(&mut entries);
            let cmp = internal_comparator();
            entries.dedup_by(|a, b| cmp.compare(&a.0, &b.0) == Ordering::Equal);
            for (k, v) in &entries {
                tagged.push((k.clone(), child, v.clone()));
            }
            sources.push(Box::new(VecIterator::new(entries, internal_comparator())));
        }
        let cmp = internal_comparator();
        tagged.sort_by(|a, b| cmp.compare(&a.0, &b.0).then(a.1.cmp(&b.1)));
        let expected: Vec<(Vec<u8>, Vec<u8>)> =
            tagged.into_iter().map(|(k, _, v)| (k, v)).collect();
        let targets = random_targets(&mut rng, &expected);
        let mut merge = MergingIter::new(internal_comparator(), sources);
        random_walk_internal(
            &mut rng,
            &mut merge,
            &expected,
            &targets,
            200,
            &format!("merge case {case} seed {seed:#x}"),
        );
        cases += 1;
    }
    eprintln!("merging_iter: {cases} cases in {:?}", started.elapsed());
}

/// Seek targets: every key present, plus keys between and around them.
fn random_targets(rng: &mut SmallRng, expected: &[(Vec<u8>, Vec<u8>)]) -> Vec<Vec<u8>> {
    let mut targets: Vec<Vec<u8>> = expected.iter().map(|(k, _)| k.clone()).collect();
    for _ in 0..10 {
        let user_key = random_user_key(rng, 5, 2);
        let seqno = rng.gen_range(0..500);
        targets.push(InternalKey::new(&user_key, seqno, ValueKind::Value).into_encoded());
        targets.push(InternalKey::for_seek(&user_key, MAX_SEQNO).into_encoded());
    }
    targets
}

#[test]
fn merging_iter_failing_child_fails_the_merge() {
    let cmp = internal_comparator();
    let entry = |k: &str, s: SeqNo| {
        (
            InternalKey::new(k.as_bytes(), s, ValueKind::Value).into_encoded(),
            k.as_bytes().to_vec(),
        )
    };
    // Child 1 fails when moved onto "c": the merge must stop there, not continue with "d".
    let children: Vec<Box<dyn InternalIterator>> = vec![
        Box::new(VecIterator::new(
            vec![entry("a", 1), entry("d", 1)],
            cmp.clone(),
        )),
        Box::new(FailingIter::new(
            "one",
            vec![entry("b", 2), entry("c", 2)],
            Some(1),
        )),
    ];
    let mut merge = MergingIter::new(cmp, children);
    merge.seek_to_first();
    assert_eq!(merge.value(), b"a");
    merge.next();
    assert_eq!(merge.value(), b"b");
    assert!(merge.status().is_ok());
    merge.next();
    assert!(!merge.valid());
    let err = merge.status().unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains("source one"), "{err}");
    // Sticky: repositioning does not resurrect it.
    merge.seek_to_first();
    assert!(!merge.valid());
    assert!(merge.status().is_err());
}

// ---------------------------------------------------------------------------------------------
// LevelIter

/// Sorted unique entries cut into `1..=max_files` non-empty files.
fn random_level(rng: &mut SmallRng, max_files: usize) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut seqnos: Vec<SeqNo> = (1..=300).collect();
    seqnos.shuffle(rng);
    let count = rng.gen_range(1..60);
    let mut entries: Vec<(Vec<u8>, Vec<u8>)> = (0..count)
        .map(|_| {
            let user_key = random_user_key(rng, 4, 2);
            let seqno = seqnos.pop().unwrap();
            let value = format!("{}@{seqno}", show(&user_key)).into_bytes();
            (
                InternalKey::new(&user_key, seqno, ValueKind::Value).into_encoded(),
                value,
            )
        })
        .collect();
    sort_internal(&mut entries);
    split_into_files(rng, entries, max_files)
}

fn split_into_files(
    rng: &mut SmallRng,
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    max_files: usize,
) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    if entries.is_empty() {
        return Vec::new();
    }
    let files = rng.gen_range(1..=max_files.min(entries.len()));
    let mut cuts: Vec<usize> = (1..entries.len()).collect();
    cuts.shuffle(rng);
    let mut cuts: Vec<usize> = cuts.into_iter().take(files - 1).collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut rest = entries;
    for &cut in cuts.iter().rev() {
        out.push(rest.split_off(cut));
    }
    out.push(rest);
    out.reverse();
    out
}

#[test]
fn level_iter_matches_concatenation() {
    let started = Instant::now();
    let mut cases = 0;
    for case in 0..1500u64 {
        let seed = base_seed() ^ (case << 8) ^ 2;
        let mut rng = SmallRng::seed_from_u64(seed);
        let files = if rng.gen_bool(0.05) {
            Vec::new()
        } else {
            random_level(&mut rng, 6)
        };
        let expected: Vec<(Vec<u8>, Vec<u8>)> = files.iter().flatten().cloned().collect();
        let targets = random_targets(&mut rng, &expected);
        let opens = Arc::new(AtomicUsize::new(0));
        let opener = memory_opener(files.clone(), Vec::new(), None, opens.clone());
        let mut level = LevelIter::new(internal_comparator(), level_files(&files), opener);
        let context = format!("level case {case} seed {seed:#x}");
        random_walk_internal(&mut rng, &mut level, &expected, &targets, 200, &context);

        // With bounds: every entry inside them is returned (others may be).
        let lower = rng.gen_bool(0.5).then(|| random_user_key(&mut rng, 4, 2));
        let upper = rng.gen_bool(0.5).then(|| random_user_key(&mut rng, 4, 2));
        let in_bounds = |k: &[u8]| {
            let user_key = &k[..k.len() - 8];
            lower.as_deref().is_none_or(|l| user_key >= l)
                && upper.as_deref().is_none_or(|u| user_key < u)
        };
        let inside: Vec<&(Vec<u8>, Vec<u8>)> =
            expected.iter().filter(|(k, _)| in_bounds(k)).collect();
        let opener = memory_opener(files.clone(), Vec::new(), None, opens.clone());
        let mut level = LevelIter::new(internal_comparator(), level_files(&files), opener)
            .with_bounds(lower.clone(), upper.clone());
        for backward in [false, true] {
            let mut observed = Vec::new();
            let start = if backward { &upper } else { &lower };
            match (start, backward) {
                (Some(u), true) => {
                    level.seek_for_prev(InternalKey::for_seek(u, MAX_SEQNO).encoded());
                }
                (Some(l), false) => level.seek(InternalKey::for_seek(l, MAX_SEQNO).encoded()),
                (None, true) => level.seek_to_last(),
                (None, false) => level.seek_to_first(),
            }
            while level.valid() {
                if in_bounds(level.key()) {
                    observed.push((level.key().to_vec(), level.value().to_vec()));
                }
                if backward {
                    level.prev();
                } else {
                    level.next();
                }
            }
            if backward {
                observed.reverse();
            }
            let inside: Vec<(Vec<u8>, Vec<u8>)> = inside.iter().map(|&e| e.clone()).collect();
            assert_eq!(observed, inside, "{context}: bounds {lower:?}..{upper:?}");
        }
        cases += 1;
    }
    eprintln!("level_iter: {cases} cases in {:?}", started.elapsed());
}

#[test]
fn level_iter_opens_tables_lazily() {
    let mut rng = SmallRng::seed_from_u64(3);
    let files: Vec<Vec<(Vec<u8>, Vec<u8>)>> = (0..5)
        .map(|f| {
            (0..3)
                .map(|i| {
                    let key = format!("k{f}{i}");
                    (
                        InternalKey::new(key.as_bytes(), 1, ValueKind::Value).into_encoded(),
                        key.into_bytes(),
                    )
                })
                .collect()
        })
        .collect();
    let _ = &mut rng;
    let opens = Arc::new(AtomicUsize::new(0));
    let opener = memory_opener(files.clone(), Vec::new(), None, opens.clone());
    let mut level = LevelIter::new(internal_comparator(), level_files(&files), opener)
        .with_bounds(None, Some(b"k3".to_vec()));
    assert_eq!(
        opens.load(AtomicOrdering::Relaxed),
        0,
        "nothing opened up front"
    );
    level.seek(InternalKey::for_seek(b"k21", MAX_SEQNO).encoded());
    assert_eq!(level.value(), b"k21");
    assert_eq!(
        opens.load(AtomicOrdering::Relaxed),
        1,
        "a seek opens one table"
    );
    level.next();
    level.next();
    assert!(
        !level.valid(),
        "file 3 starts at the upper bound and is not opened"
    );
    assert_eq!(opens.load(AtomicOrdering::Relaxed), 1);
    // Between tables: seek_for_prev to a key before file 2's smallest goes to file 1 directly.
    level.seek_for_prev(InternalKey::new(b"k1z", 0, ValueKind::Deletion).encoded());
    assert_eq!(level.value(), b"k12");
    assert_eq!(opens.load(AtomicOrdering::Relaxed), 2);
    level.seek(InternalKey::for_seek(b"z", MAX_SEQNO).encoded());
    assert!(!level.valid());
    assert!(level.status().is_ok());
}

#[test]
fn level_iter_open_and_read_failures_are_sticky() {
    let files: Vec<Vec<(Vec<u8>, Vec<u8>)>> = ["a", "b", "c"]
        .iter()
        .map(|k| {
            vec![(
                InternalKey::new(k.as_bytes(), 1, ValueKind::Value).into_encoded(),
                k.as_bytes().to_vec(),
            )]
        })
        .collect();
    let opens = Arc::new(AtomicUsize::new(0));
    let opener = memory_opener(files.clone(), Vec::new(), Some(1), opens.clone());
    let mut level = LevelIter::new(internal_comparator(), level_files(&files), opener);
    level.seek_to_first();
    assert_eq!(level.value(), b"a");
    level.next();
    assert!(
        !level.valid(),
        "file 1 cannot be opened: never skipped to file 2"
    );
    assert!(level
        .status()
        .unwrap_err()
        .to_string()
        .contains("000001.sst"));
    level.seek_to_last();
    assert!(!level.valid());

    let opener = memory_opener(files.clone(), vec![None, None, Some(0)], None, opens);
    let mut level = LevelIter::new(internal_comparator(), level_files(&files), opener);
    level.seek_to_last();
    assert!(!level.valid());
    assert!(level.status().unwrap_err().to_string().contains("file 2"));
}

// ---------------------------------------------------------------------------------------------
// RangeDelSet

#[test]
fn range_del_set_matches_brute_force() {
    let started = Instant::now();
    let universe: Vec<Vec<u8>> = std::iter::once(Vec::new())
        .chain((0..6u8).map(|a| vec![b'a' + a]))
        .chain((0..6u8).flat_map(|a| (0..6u8).map(move |b| vec![b'a' + a, b'a' + b])))
        .collect();
    for case in 0..2000u64 {
        let seed = base_seed() ^ (case << 8) ^ 3;
        let mut rng = SmallRng::seed_from_u64(seed);
        let tombstones: Vec<RangeTombstone> = (0..rng.gen_range(0..10))
            .map(|_| RangeTombstone {
                start: random_user_key(&mut rng, 6, 2),
                end: random_user_key(&mut rng, 6, 2),
                seqno: rng.gen_range(1..30),
            })
            .collect();
        let snapshot = rng.gen_range(0..35);
        let set = RangeDelSet::new(user_comparator(), snapshot, &tombstones);
        let context = format!("case {case} seed {seed:#x}: {tombstones:?} @{snapshot} -> {set:?}");
        for key in &universe {
            let brute = tombstones
                .iter()
                .filter(|t| t.seqno <= snapshot && &t.start <= key && key < &t.end)
                .map(|t| t.seqno)
                .max();
            assert_eq!(set.max_covering_seqno(key), brute, "{context} key {key:?}");
            for seqno in 0..32 {
                assert_eq!(
                    set.covers(key, seqno),
                    brute.is_some_and(|b| b > seqno),
                    "{context} key {key:?}@{seqno}"
                );
            }
        }
        assert_eq!(set.is_empty(), set.fragments().next().is_none());
        let fragments: Vec<_> = set.fragments().collect();
        for f in &fragments {
            assert!(f.0 < f.1, "{context}: empty fragment");
            assert!(f.2 <= snapshot, "{context}: fragment above the snapshot");
        }
        for pair in fragments.windows(2) {
            assert!(pair[0].1 <= pair[1].0, "{context}: fragments overlap");
            assert!(
                pair[0].1 != pair[1].0 || pair[0].2 != pair[1].2,
                "{context}: touching fragments with one seqno are not merged"
            );
        }
    }
    eprintln!("range_del: 2000 cases in {:?}", started.elapsed());
}

// ---------------------------------------------------------------------------------------------
// DbIter: oracle and model test

/// A database image: point entries (already split across sources) and tombstones.
#[derive(Debug, Clone)]
struct Image {
    /// Sources newest first: each a list of files; one file unless it is a level.
    sources: Vec<Source>,
    tombstones: Vec<RangeTombstone>,
}

#[derive(Debug, Clone)]
struct Source {
    name: String,
    /// One file for a memtable or L0 table; several for a level.
    files: Vec<Vec<Entry>>,
    is_level: bool,
    /// (file index, entry index) at which reading fails.
    fail_at: Option<(usize, usize)>,
}

impl Image {
    fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.sources.iter().flat_map(|s| s.files.iter().flatten())
    }

    /// The merged internal iterator over every source, as the Db builds it.
    fn merged(&self) -> MergingIter {
        let children: Vec<SourceIter> = self
            .sources
            .iter()
            .map(|source| -> SourceIter {
                let files: Vec<Vec<(Vec<u8>, Vec<u8>)>> = source
                    .files
                    .iter()
                    .map(|f| f.iter().map(Entry::encoded).collect())
                    .collect();
                let fail_at: Vec<Option<usize>> = (0..files.len())
                    .map(|i| source.fail_at.filter(|&(f, _)| f == i).map(|(_, e)| e))
                    .collect();
                if source.is_level {
                    let opener =
                        memory_opener(files.clone(), fail_at, None, Arc::new(AtomicUsize::new(0)));
                    SourceIter::Level(LevelIter::new(
                        internal_comparator(),
                        level_files(&files),
                        opener,
                    ))
                } else {
                    let file = files.into_iter().next().unwrap_or_default();
                    SourceIter::Other(Box::new(FailingIter::new(&source.name, file, fail_at[0])))
                }
            })
            .collect();
        MergingIter::new(internal_comparator(), children)
    }

    fn db_iter(&self, snapshot: SeqNo, options: DbIterOptions) -> DbIter {
        let range_dels = RangeDelSet::new(user_comparator(), snapshot, &self.tombstones);
        DbIter::new(
            Box::new(self.merged()),
            user_comparator(),
            snapshot,
            range_dels,
            options,
        )
    }

    /// The oracle: user key -> value visible at `snapshot`.
    fn visible(&self, snapshot: SeqNo) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let mut newest: BTreeMap<&[u8], &Entry> = BTreeMap::new();
        for e in self.entries() {
            if e.seqno > snapshot || e.kind == ValueKind::RangeDeletion {
                continue;
            }
            let slot = newest.entry(&e.user_key).or_insert(e);
            if e.seqno > slot.seqno {
                *slot = e;
            }
        }
        newest
            .into_iter()
            .filter(|(k, e)| {
                e.kind == ValueKind::Value
                    && !self.tombstones.iter().any(|t| {
                        t.seqno <= snapshot
                            && t.seqno > e.seqno
                            && t.start.as_slice() <= *k
                            && *k < t.end.as_slice()
                    })
            })
            .map(|(k, e)| (k.to_vec(), e.value.clone()))
            .collect()
    }
}

/// What `DbIter` should do, computed from the visible map.
struct Model {
    keys: Vec<(Vec<u8>, Vec<u8>)>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    prefix_len: Option<usize>,
    prefix: Option<Vec<u8>>,
    position: Option<usize>,
}

impl Model {
    fn prefix_of(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.prefix_len
            .and_then(|n| key.get(..n))
            .map(<[u8]>::to_vec)
    }

    fn admits(&self, index: usize) -> bool {
        let Some((key, _)) = self.keys.get(index) else {
            return false;
        };
        self.lower.as_ref().is_none_or(|l| key >= l)
            && self.upper.as_ref().is_none_or(|u| key < u)
            && self
                .prefix
                .as_ref()
                .is_none_or(|p| self.prefix_of(key).as_ref() == Some(p))
    }

    fn settle(&mut self, index: Option<usize>) {
        self.position = index.filter(|&i| self.admits(i));
    }

    fn seek_to_first(&mut self) {
        self.prefix = None;
        let start = self
            .lower
            .as_ref()
            .map_or(0, |l| self.keys.partition_point(|(k, _)| k < l));
        self.settle(Some(start));
        self.prefix = self.position.and_then(|p| self.prefix_of(&self.keys[p].0));
    }

    fn seek_to_last(&mut self) {
        self.prefix = None;
        let end = self.upper.as_ref().map_or(self.keys.len(), |u| {
            self.keys.partition_point(|(k, _)| k < u)
        });
        self.settle(end.checked_sub(1));
        self.prefix = self.position.and_then(|p| self.prefix_of(&self.keys[p].0));
    }

    fn seek(&mut self, target: &[u8]) {
        self.prefix = self.prefix_of(target);
        let target = match &self.lower {
            Some(l) if target < l.as_slice() => l.clone(),
            _ => target.to_vec(),
        };
        self.settle(Some(self.keys.partition_point(|(k, _)| *k < target)));
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.prefix = self.prefix_of(target);
        let count = self.keys.partition_point(|(k, _)| {
            k.as_slice() <= target && self.upper.as_ref().is_none_or(|u| k < u)
        });
        self.settle(count.checked_sub(1));
    }

    fn next(&mut self) {
        self.settle(self.position.map(|p| p + 1));
    }

    fn prev(&mut self) {
        self.settle(self.position.and_then(|p| p.checked_sub(1)));
    }

    fn current(&self) -> Option<(&[u8], &[u8])> {
        self.position
            .map(|p| (self.keys[p].0.as_slice(), self.keys[p].1.as_slice()))
    }
}

fn iter_current(iter: &DbIter) -> Option<(&[u8], &[u8])> {
    iter.valid().then(|| (iter.key(), iter.value()))
}

fn random_image(rng: &mut SmallRng) -> Image {
    let alphabet = rng.gen_range(2..=4);
    let max_len = rng.gen_range(1..=3);
    let count: usize = rng.gen_range(0..70);
    let tombstone_count: usize = if rng.gen_bool(0.6) {
        rng.gen_range(0..6)
    } else {
        0
    };
    let mut seqnos: Vec<SeqNo> = (1..=(count + tombstone_count + 5) as SeqNo).collect();
    seqnos.shuffle(rng);
    let mut entries: Vec<Entry> = (0..count)
        .map(|_| {
            let user_key = random_user_key(rng, alphabet, max_len);
            let seqno = seqnos.pop().unwrap();
            let roll = rng.gen_range(0..100);
            let kind = match roll {
                0..=69 => ValueKind::Value,
                70..=96 => ValueKind::Deletion,
                _ => ValueKind::RangeDeletion,
            };
            let value = match kind {
                ValueKind::Value => format!("{}@{seqno}", show(&user_key)).into_bytes(),
                ValueKind::RangeDeletion => random_user_key(rng, alphabet, max_len),
                ValueKind::Deletion => Vec::new(),
                ValueKind::BlobIndex => unreachable!("not generated"),
            };
            Entry {
                user_key,
                seqno,
                kind,
                value,
            }
        })
        .collect();
    let tombstones = (0..tombstone_count)
        .map(|_| RangeTombstone {
            start: random_user_key(rng, alphabet, max_len),
            end: random_user_key(rng, alphabet, max_len),
            seqno: seqnos.pop().unwrap(),
        })
        .collect();

    // Sources: memtable, immutable memtables, L0 tables, levels.
    let mut sources: Vec<Source> = Vec::new();
    let plain = rng.gen_range(1..=5);
    let levels = rng.gen_range(0..=2);
    for i in 0..plain + levels {
        sources.push(Source {
            name: if i < plain {
                format!("s{i}")
            } else {
                format!("L{}", i - plain + 1)
            },
            files: Vec::new(),
            is_level: i >= plain,
            fail_at: None,
        });
    }
    let mut buckets: Vec<Vec<Entry>> = vec![Vec::new(); sources.len()];
    for e in entries.drain(..) {
        let i = rng.gen_range(0..buckets.len());
        buckets[i].push(e);
    }
    let cmp = internal_comparator();
    for (source, mut bucket) in sources.iter_mut().zip(buckets) {
        bucket.sort_by(|a, b| cmp.compare(&a.encoded().0, &b.encoded().0));
        if source.is_level {
            let max_files = rng.gen_range(1..=4);
            source.files = split_entries(rng, bucket, max_files);
        } else {
            source.files = vec![bucket];
        }
    }
    Image {
        sources,
        tombstones,
    }
}

fn split_entries(rng: &mut SmallRng, entries: Vec<Entry>, max_files: usize) -> Vec<Vec<Entry>> {
    if entries.is_empty() {
        return Vec::new();
    }
    let files = rng.gen_range(1..=max_files.min(entries.len()));
    let mut cuts: Vec<usize> = (1..entries.len()).collect();
    cuts.shuffle(rng);
    let mut cuts: Vec<usize> = cuts.into_iter().take(files - 1).collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut rest = entries;
    for &cut in cuts.iter().rev() {
        out.push(rest.split_off(cut));
    }
    out.push(rest);
    out.reverse();
    out
}

/// Makes one random source fail at a random entry.
fn inject_failure(rng: &mut SmallRng, image: &mut Image) -> bool {
    let candidates: Vec<usize> = (0..image.sources.len())
        .filter(|&i| image.sources[i].files.iter().any(|f| !f.is_empty()))
        .collect();
    let Some(&source) = candidates.choose(rng) else {
        return false;
    };
    let files = &image.sources[source].files;
    let non_empty: Vec<usize> = (0..files.len()).filter(|&f| !files[f].is_empty()).collect();
    let file = *non_empty.choose(rng).unwrap();
    let entry = rng.gen_range(0..files[file].len());
    image.sources[source].fail_at = Some((file, entry));
    true
}

#[test]
fn db_iter_matches_oracle() {
    let started = Instant::now();
    let (mut cases, mut steps, mut failure_cases) = (0, 0, 0);
    for case in 0..4000u64 {
        let seed = base_seed() ^ (case << 8) ^ 4;
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut image = random_image(&mut rng);
        let failing = rng.gen_bool(0.1) && inject_failure(&mut rng, &mut image);
        failure_cases += usize::from(failing);
        let max_seqno = image
            .entries()
            .map(|e| e.seqno)
            .chain(image.tombstones.iter().map(|t| t.seqno))
            .max()
            .unwrap_or(0);
        let snapshot = if rng.gen_bool(0.3) {
            MAX_SEQNO
        } else {
            rng.gen_range(0..=max_seqno + 1)
        };
        let key = |rng: &mut SmallRng| random_user_key(rng, 5, 3);
        let lower = rng.gen_bool(0.25).then(|| key(&mut rng));
        let upper = rng.gen_bool(0.25).then(|| key(&mut rng));
        let prefix_len = rng.gen_bool(0.25).then(|| rng.gen_range(1..=2));
        let options = DbIterOptions {
            lower_bound: lower.clone(),
            upper_bound: upper.clone(),
            prefix_extractor: prefix_len
                .map(|n| Arc::new(FixedPrefix::new(n)) as Arc<dyn PrefixExtractor>),
            ..DbIterOptions::default()
        };
        let visible = image.visible(snapshot);
        let mut model = Model {
            keys: visible.into_iter().collect(),
            lower,
            upper,
            prefix_len,
            prefix: None,
            position: None,
        };
        let context = format!(
            "case {case} seed {seed:#x} snapshot {snapshot} options {options:?}\nimage {image:#?}"
        );
        let mut iter = image.db_iter(snapshot, options.clone());
        let unrestricted = model.lower.is_none() && model.upper.is_none() && prefix_len.is_none();
        if check_full_scans(&mut iter, &mut model, failing, unrestricted, &context) {
            steps += random_walk_db(&mut rng, &mut iter, &mut model, failing, &context);
        }
        cases += 1;
    }
    eprintln!(
        "db_iter: {cases} cases ({failure_cases} with a failing source), {steps} random steps \
         in {:?}",
        started.elapsed()
    );
}

/// Scans forward and backward, comparing with the model. With a failing source the scan may
/// stop early, but only with an error, and a scan over everything must meet the failure.
/// Returns whether the iterator is still healthy.
fn check_full_scans(
    iter: &mut DbIter,
    model: &mut Model,
    failing: bool,
    unrestricted: bool,
    context: &str,
) -> bool {
    for backward in [false, true] {
        let mut observed = Vec::new();
        if backward {
            iter.seek_to_last();
        } else {
            iter.seek_to_first();
        }
        while let Some((k, v)) = iter_current(iter) {
            observed.push((k.to_vec(), v.to_vec()));
            if backward {
                iter.prev();
            } else {
                iter.next();
            }
        }
        let mut expected: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        if backward {
            model.seek_to_last();
        } else {
            model.seek_to_first();
        }
        while let Some((k, v)) = model.current() {
            expected.push((k.to_vec(), v.to_vec()));
            if backward {
                model.prev();
            } else {
                model.next();
            }
        }
        if failing {
            // A prefix of the right answer, then an error; never a silent end.
            assert!(
                expected.starts_with(&observed),
                "{context}\nbackward {backward}: {observed:?} is not a prefix of {expected:?}"
            );
            if unrestricted {
                assert!(
                    iter.status().is_err(),
                    "{context}\nbackward {backward}: a full scan must meet the failure"
                );
            }
            if iter.status().is_err() {
                return false;
            }
        }
        assert_eq!(observed, expected, "{context}\nbackward {backward}");
        assert!(iter.status().is_ok(), "{context}");
    }
    true
}

/// Random seeks, and next/prev with direction switches, against the model. Returns the
/// number of steps taken.
fn random_walk_db(
    rng: &mut SmallRng,
    iter: &mut DbIter,
    model: &mut Model,
    failing: bool,
    context: &str,
) -> usize {
    let mut log = String::new();
    for step in 0..60 {
        let target = random_user_key(rng, 5, 3);
        match rng.gen_range(0..12) {
            0 => {
                iter.seek_to_first();
                model.seek_to_first();
                log.push_str("first ");
            }
            1 => {
                iter.seek_to_last();
                model.seek_to_last();
                log.push_str("last ");
            }
            2 | 3 => {
                iter.seek(&target);
                model.seek(&target);
                let _ = write!(log, "seek({}) ", show(&target));
            }
            4 | 5 => {
                iter.seek_for_prev(&target);
                model.seek_for_prev(&target);
                let _ = write!(log, "seek_for_prev({}) ", show(&target));
            }
            6..=8 => {
                iter.next();
                model.next();
                log.push_str("next ");
            }
            _ => {
                iter.prev();
                model.prev();
                log.push_str("prev ");
            }
        }
        if failing && iter.status().is_err() {
            assert!(!iter.valid(), "{context}\nvalid after an error");
            return step + 1;
        }
        assert_eq!(
            iter_current(iter),
            model.current(),
            "{context}\nstep {step}: {log}"
        );
        assert!(iter.status().is_ok(), "{context}\nstep {step}: {log}");
    }
    60
}

// ---------------------------------------------------------------------------------------------
// Named regressions

fn put(user_key: &str, seqno: SeqNo, value: &str) -> Entry {
    Entry {
        user_key: user_key.as_bytes().to_vec(),
        seqno,
        kind: ValueKind::Value,
        value: value.as_bytes().to_vec(),
    }
}

fn source(name: &str, entries: Vec<Entry>, fail_at: Option<usize>) -> Source {
    let cmp = internal_comparator();
    let mut entries = entries;
    entries.sort_by(|a, b| cmp.compare(&a.encoded().0, &b.encoded().0));
    Source {
        name: name.to_string(),
        files: vec![entries],
        is_level: false,
        fail_at: fail_at.map(|e| (0, e)),
    }
}

/// Going backward the versions of a key come oldest first; a source failing before the
/// newest version is read must not let the older one through (`LevelDB`'s `DBIter` would show
/// it, as it does not check the status when the inner iterator runs out).
#[test]
fn reverse_scan_never_shows_an_older_version_when_a_source_fails() {
    let image = Image {
        sources: vec![
            source("mem", vec![put("k", 5, "new")], None),
            // Fails when stepping back from k@3 onto a@1.
            source("L0", vec![put("a", 1, "a"), put("k", 3, "old")], Some(0)),
        ],
        tombstones: Vec::new(),
    };
    let mut iter = image.db_iter(MAX_SEQNO, DbIterOptions::default());
    iter.seek_to_last();
    assert!(!iter.valid(), "k=old must not be shown");
    assert!(iter.status().unwrap_err().to_string().contains("source L0"));
    iter.seek_to_first();
    assert!(!iter.valid(), "errors are sticky");
    assert!(iter.status().is_err());
}

#[test]
fn db_iter_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<DbIter>();
    assert_send::<MergingIter>();
    assert_send::<LevelIter>();
    assert_send::<RangeDelSet>();
}

#[test]
fn corrupt_internal_key_fails_db_iter() {
    let comparator = internal_comparator();
    // Kind 9 is reserved: the key does not parse.
    let mut bad = InternalKey::new(b"b", 2, ValueKind::Value).into_encoded();
    let at = bad.len() - 8;
    bad[at] = 9;
    let entries = vec![
        (
            InternalKey::new(b"a", 1, ValueKind::Value).into_encoded(),
            b"a".to_vec(),
        ),
        (bad, b"b".to_vec()),
    ];
    let mut iter = DbIter::new(
        Box::new(VecIterator::new(entries, comparator)),
        user_comparator(),
        MAX_SEQNO,
        RangeDelSet::empty(user_comparator()),
        DbIterOptions::default(),
    );
    iter.seek_to_first();
    assert_eq!(iter.key(), b"a");
    iter.next();
    assert!(!iter.valid());
    assert!(iter.status().unwrap_err().is_corruption());
    iter.seek_to_first();
    assert!(!iter.valid(), "errors are sticky");
    iter.seek_for_prev(b"a");
    assert!(!iter.valid(), "errors are sticky");
    assert!(iter.status().unwrap_err().is_corruption());
}

// ---------------------------------------------------------------------------------------------
// Data-driven tests

#[test]
fn data_driven() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testdata/iterators");
    let regenerate = std::env::var_os("SHALE_REGENERATE").is_some();
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no data files in {}", dir.display());
    let mut failures = Vec::new();
    let mut cases = 0;
    for path in &paths {
        let text = std::fs::read_to_string(path).unwrap();
        let (rewritten, count) = run_data_file(&text);
        cases += count;
        if rewritten != text {
            if regenerate {
                std::fs::write(path, &rewritten).unwrap();
            } else {
                failures.push(format!(
                    "{}:\n{}",
                    path.display(),
                    first_difference(&text, &rewritten)
                ));
            }
        }
    }
    eprintln!("data_driven: {cases} cases in {} files", paths.len());
    assert!(
        failures.is_empty(),
        "data-driven output differs (rerun with SHALE_REGENERATE=1 if the change is \
         intended):\n{}",
        failures.join("\n")
    );
}

fn first_difference(expected: &str, actual: &str) -> String {
    for (i, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
        if e != a {
            return format!("line {}:\n  expected: {e}\n  actual:   {a}", i + 1);
        }
    }
    format!(
        "lengths differ: {} vs {} lines",
        expected.lines().count(),
        actual.lines().count()
    )
}

/// Runs every case of a data file; returns the file with freshly computed outputs.
fn run_data_file(text: &str) -> (String, usize) {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    let mut cases = 0;
    while let Some(line) = lines.next() {
        out.push_str(line);
        out.push('\n');
        if !line.starts_with("case ") {
            continue;
        }
        let mut input = Vec::new();
        for line in lines.by_ref() {
            out.push_str(line);
            out.push('\n');
            if line == "----" {
                break;
            }
            input.push(line);
        }
        // Skip the old output: up to a blank line.
        while lines.peek().is_some_and(|l| !l.trim().is_empty()) {
            lines.next();
        }
        out.push_str(&run_case(line, &input));
        cases += 1;
    }
    (out, cases)
}

fn parse_entry(token: &str) -> Entry {
    // key@seqno=value | key@seqno:del
    let (user_key, rest) = token
        .split_once('@')
        .unwrap_or_else(|| panic!("entry {token}"));
    let (seqno, kind, value) = if let Some((seqno, value)) = rest.split_once('=') {
        (seqno, ValueKind::Value, value)
    } else if let Some(seqno) = rest.strip_suffix(":del") {
        (seqno, ValueKind::Deletion, "")
    } else {
        panic!("entry {token}: expected key@seqno=value or key@seqno:del")
    };
    Entry {
        user_key: user_key.as_bytes().to_vec(),
        seqno: seqno.parse().unwrap_or_else(|_| panic!("seqno in {token}")),
        kind,
        value: value.as_bytes().to_vec(),
    }
}

fn run_case(header: &str, input: &[&str]) -> String {
    let mut image = Image {
        sources: Vec::new(),
        tombstones: Vec::new(),
    };
    let mut snapshot = MAX_SEQNO;
    let mut options = DbIterOptions::default();
    let mut ops: Vec<&str> = Vec::new();
    for line in input {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        match word {
            // source NAME [fail=N]: entries
            // level NAME [fail=F.N]: file entries | file entries ...
            "source" | "level" => {
                let (head, body) = rest.split_once(':').unwrap_or((rest, ""));
                let mut head = head.split_whitespace();
                let name = head
                    .next()
                    .unwrap_or_else(|| panic!("{header}: source name"));
                let fail = head.next().and_then(|f| f.strip_prefix("fail="));
                let cmp = internal_comparator();
                let files: Vec<Vec<Entry>> = body
                    .split('|')
                    .map(|file| {
                        let mut entries: Vec<Entry> =
                            file.split_whitespace().map(parse_entry).collect();
                        entries.sort_by(|a, b| cmp.compare(&a.encoded().0, &b.encoded().0));
                        entries
                    })
                    .filter(|f| word == "source" || !f.is_empty())
                    .collect();
                let fail_at = fail.map(|f| match f.split_once('.') {
                    Some((file, entry)) => (file.parse().unwrap(), entry.parse().unwrap()),
                    None => (0, f.parse().unwrap()),
                });
                image.sources.push(Source {
                    name: name.to_string(),
                    files,
                    is_level: word == "level",
                    fail_at,
                });
            }
            "rangedel" => {
                let parts: Vec<&str> = rest.split_whitespace().collect();
                image.tombstones.push(RangeTombstone {
                    start: parts[0].as_bytes().to_vec(),
                    end: parts[1].as_bytes().to_vec(),
                    seqno: parts[2].parse().unwrap(),
                });
            }
            "snapshot" => snapshot = rest.parse().unwrap(),
            "lower" => options.lower_bound = Some(rest.as_bytes().to_vec()),
            "upper" => options.upper_bound = Some(rest.as_bytes().to_vec()),
            "prefix" => {
                options.prefix_extractor = Some(Arc::new(FixedPrefix::new(rest.parse().unwrap())));
            }
            "seek_to_first" | "seek_to_last" | "seek" | "seek_for_prev" | "next" | "prev"
            | "scan" | "rscan" => ops.push(line),
            _ => panic!("{header}: unknown directive {line:?}"),
        }
    }
    let mut iter = image.db_iter(snapshot, options);
    let mut out = String::new();
    for op in ops {
        let _ = writeln!(out, "{op} => {}", run_op(&mut iter, op));
    }
    out
}

/// Runs one scripted operation; returns what it printed.
fn run_op(iter: &mut DbIter, op: &str) -> String {
    let (word, arg) = op.split_once(' ').unwrap_or((op, ""));
    match word {
        "seek_to_first" => {
            iter.seek_to_first();
            describe(iter)
        }
        "seek_to_last" => {
            iter.seek_to_last();
            describe(iter)
        }
        "seek" => {
            iter.seek(arg.as_bytes());
            describe(iter)
        }
        "seek_for_prev" => {
            iter.seek_for_prev(arg.as_bytes());
            describe(iter)
        }
        "next" => {
            iter.next();
            describe(iter)
        }
        "prev" => {
            iter.prev();
            describe(iter)
        }
        // Whole scans, one line: "scan" forward from seek_to_first, "rscan" backward.
        _ => {
            let mut parts = Vec::new();
            if word == "scan" {
                iter.seek_to_first();
            } else {
                iter.seek_to_last();
            }
            while iter.valid() {
                parts.push(describe(iter));
                if word == "scan" {
                    iter.next();
                } else {
                    iter.prev();
                }
            }
            parts.push(describe(iter));
            parts.join(" ")
        }
    }
}

fn describe(iter: &DbIter) -> String {
    if iter.valid() {
        format!("{}={}", show(iter.key()), show(iter.value()))
    } else {
        match iter.status() {
            Ok(()) => ".".to_string(),
            Err(e) => format!("error({e})"),
        }
    }
}
