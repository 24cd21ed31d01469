//! Behaviour of `MemTable`: a model test against oracles (a `BTreeMap` per user key for `get`,
//! and a sorted vector behind `VecIterator` for stepping), under the bytewise comparator and a
//! reverse one; concurrent writers with concurrent readers; group-commit style publication of
//! sequence numbers; memory accounting.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as MemoryOrder};
use std::sync::{Arc, Barrier};

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use shale_engine::testing::{InternalIterator, MemTable, VecIterator};
use shale_sst::{
    BytewiseComparator, Comparator, InternalKey, InternalKeyComparator, ParsedInternalKey,
    RangeTombstone, SeqNo, ValueKind, MAX_SEQNO,
};

/// Descending byte order: exercises the memtable's general (non-bytewise) comparison path.
#[derive(Debug)]
struct ReverseComparator;

impl Comparator for ReverseComparator {
    fn name(&self) -> &'static str {
        "test.ReverseBytewise"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        b.cmp(a)
    }
    fn find_shortest_separator(&self, _start: &mut Vec<u8>, _limit: &[u8]) {}
    fn find_short_successor(&self, _key: &mut Vec<u8>) {}
}

fn comparators() -> [Arc<dyn Comparator>; 2] {
    [Arc::new(BytewiseComparator), Arc::new(ReverseComparator)]
}

/// The versions of one user key: seqno -> (kind, value).
type Versions = BTreeMap<SeqNo, (ValueKind, Vec<u8>)>;

/// What the memtable should hold.
struct Model {
    internal: Arc<InternalKeyComparator>,
    /// user key -> seqno -> (kind, value), point entries only.
    versions: BTreeMap<Vec<u8>, Versions>,
    tombstones: Vec<RangeTombstone>,
}

impl Model {
    fn new(user: Arc<dyn Comparator>) -> Self {
        Model {
            internal: Arc::new(InternalKeyComparator::new(user)),
            versions: BTreeMap::new(),
            tombstones: Vec::new(),
        }
    }

    fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<(ValueKind, SeqNo, Vec<u8>)> {
        let (&seqno, (kind, value)) = self
            .versions
            .get(user_key)?
            .range(..=snapshot)
            .next_back()?;
        Some((*kind, seqno, value.clone()))
    }

    /// Point entries in internal-key order, as a reference iterator.
    fn reference_iter(&self) -> VecIterator {
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = self
            .versions
            .iter()
            .flat_map(|(user_key, versions)| {
                versions.iter().map(move |(&seqno, (kind, value))| {
                    (
                        InternalKey::new(user_key, seqno, *kind).into_encoded(),
                        value.clone(),
                    )
                })
            })
            .collect();
        entries.sort_by(|a, b| self.internal.compare(&a.0, &b.0));
        VecIterator::new(entries, self.internal.clone())
    }
}

fn random_key(rng: &mut SmallRng, distinct: u32) -> Vec<u8> {
    let n = rng.gen_range(0..distinct);
    // Varying lengths, shared prefixes, and the empty key.
    match n % 4 {
        0 => format!("k{n}").into_bytes(),
        1 => format!("key/{n:05}/x").into_bytes(),
        2 => vec![(n % 256) as u8; (n % 7) as usize],
        _ => format!("{n:03}").into_bytes(),
    }
}

/// Fills a memtable and a model with random writes in random seqno order.
fn fill(seed: u64, user: &Arc<dyn Comparator>, writes: usize) -> (Arc<MemTable>, Model) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let memtable = Arc::new(MemTable::new(user.clone(), seed));
    let mut model = Model::new(user.clone());
    let mut seqnos: Vec<SeqNo> = (1..=writes as SeqNo).map(|s| s * 3).collect();
    seqnos.shuffle(&mut rng);
    for seqno in seqnos {
        let key = random_key(&mut rng, 300);
        match rng.gen_range(0..10) {
            0..=6 => {
                let value: Vec<u8> = (0..rng.gen_range(0..40)).map(|_| rng.gen()).collect();
                memtable.add(seqno, ValueKind::Value, &key, &value);
                model
                    .versions
                    .entry(key)
                    .or_default()
                    .insert(seqno, (ValueKind::Value, value));
            }
            7 | 8 => {
                memtable.add(seqno, ValueKind::Deletion, &key, b"");
                model
                    .versions
                    .entry(key)
                    .or_default()
                    .insert(seqno, (ValueKind::Deletion, Vec::new()));
            }
            _ => {
                let mut end = random_key(&mut rng, 300);
                if user.compare(&key, &end) != Ordering::Less {
                    end.clone_from(&key);
                    end.push(0);
                    if user.compare(&key, &end) != Ordering::Less {
                        // Under the reverse order a longer key sorts first: use a smaller one.
                        end = key[..key.len().saturating_sub(1)].to_vec();
                    }
                }
                memtable.add(seqno, ValueKind::RangeDeletion, &key, &end);
                model.tombstones.push(RangeTombstone {
                    start: key,
                    end,
                    seqno,
                });
            }
        }
    }
    (memtable, model)
}

fn assert_same_position(it: &dyn InternalIterator, oracle: &VecIterator, what: &str) {
    assert_eq!(it.valid(), oracle.valid(), "{what}: validity");
    if oracle.valid() {
        assert_eq!(
            ParsedInternalKey::parse(it.key()).unwrap(),
            ParsedInternalKey::parse(oracle.key()).unwrap(),
            "{what}: key"
        );
        assert_eq!(it.value(), oracle.value(), "{what}: value");
    }
}

fn random_target(rng: &mut SmallRng, model: &Model) -> Vec<u8> {
    let seqno = match rng.gen_range(0..4) {
        0 => MAX_SEQNO,
        1 => 0,
        _ => rng.gen_range(0..3000),
    };
    let kind = [
        ValueKind::Deletion,
        ValueKind::Value,
        ValueKind::RangeDeletion,
    ][rng.gen_range(0..3)];
    let user_key = if rng.gen_bool(0.5) {
        model
            .versions
            .keys()
            .nth(rng.gen_range(0..model.versions.len()))
            .unwrap()
            .clone()
    } else {
        random_key(rng, 400)
    };
    InternalKey::new(&user_key, seqno, kind).into_encoded()
}

#[test]
fn matches_the_model_under_both_comparators() {
    for user in comparators() {
        for seed in 0..6 {
            let (memtable, model) = fill(seed, &user, 3000);
            let what = format!("{} seed {seed}", user.name());
            let mut rng = SmallRng::seed_from_u64(seed + 1000);

            // Point lookups at many snapshots, present and absent keys.
            for _ in 0..3000 {
                let key = random_key(&mut rng, 400);
                let snapshot = match rng.gen_range(0..5) {
                    0 => MAX_SEQNO,
                    1 => 0,
                    _ => rng.gen_range(0..9100),
                };
                assert_eq!(
                    memtable.get(&key, snapshot),
                    model.get(&key, snapshot),
                    "{what}: get {key:?} at {snapshot}"
                );
            }
            // Around every version: at it, just before, just after.
            for (key, versions) in &model.versions {
                for &seqno in versions.keys() {
                    for snapshot in [seqno - 1, seqno, seqno + 1] {
                        assert_eq!(memtable.get(key, snapshot), model.get(key, snapshot));
                    }
                }
            }

            // Full scans, both ways.
            let mut it = memtable.iter();
            let mut oracle = model.reference_iter();
            it.seek_to_first();
            oracle.seek_to_first();
            let mut count = 0;
            while oracle.valid() {
                assert_same_position(&it, &oracle, &what);
                it.next();
                oracle.next();
                count += 1;
            }
            assert!(!it.valid());
            it.seek_to_last();
            oracle.seek_to_last();
            while oracle.valid() {
                assert_same_position(&it, &oracle, &what);
                it.prev();
                oracle.prev();
            }
            assert!(!it.valid());
            assert!(it.status().is_ok());

            // Seeks to random targets, then a random walk in both directions.
            for _ in 0..1500 {
                let target = random_target(&mut rng, &model);
                if rng.gen_bool(0.5) {
                    it.seek(&target);
                    oracle.seek(&target);
                } else {
                    it.seek_for_prev(&target);
                    oracle.seek_for_prev(&target);
                }
                assert_same_position(&it, &oracle, &what);
                for _ in 0..rng.gen_range(0..6) {
                    if !oracle.valid() {
                        break;
                    }
                    if rng.gen_bool(0.5) {
                        it.next();
                        oracle.next();
                    } else {
                        it.prev();
                        oracle.prev();
                    }
                    assert_same_position(&it, &oracle, &what);
                }
            }

            // Range deletions: listed, sorted by start then newest first; never iterated.
            let mut expected = model.tombstones.clone();
            expected.sort_by(|a, b| user.compare(&a.start, &b.start).then(b.seqno.cmp(&a.seqno)));
            assert_eq!(memtable.range_tombstones(), expected, "{what}");

            let deletions = model
                .versions
                .values()
                .flat_map(BTreeMap::values)
                .filter(|(kind, _)| *kind == ValueKind::Deletion)
                .count();
            assert_eq!(memtable.num_entries(), 3000);
            assert_eq!(count + model.tombstones.len(), 3000);
            assert_eq!(memtable.num_deletions(), deletions as u64);
            assert_eq!(memtable.first_seqno(), Some(3));
            assert_eq!(memtable.largest_seqno(), Some(9000));
        }
    }
}

/// Entry `i` of the concurrent tests: a distinct key and a value derived from it.
fn entry(i: u64) -> (Vec<u8>, Vec<u8>) {
    // Scatter the order so writers insert all over the list, not only at its end.
    let scattered = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
    let key = format!("user{scattered:016x}").into_bytes();
    let value = format!("value-of-{i:08}-{}", "x".repeat((i % 23) as usize)).into_bytes();
    (key, value)
}

/// The entry index a key of [`entry`] encodes, from its value.
fn index_of(value: &[u8]) -> u64 {
    std::str::from_utf8(&value[9..17]).unwrap().parse().unwrap()
}

/// Writer threads of `concurrent_writers_and_readers`, the entries each adds, and all entries.
const WRITERS: u64 = 4;
const PER_WRITER: u64 = 50_000;
const TOTAL: u64 = WRITERS * PER_WRITER;

/// A reader of `concurrent_writers_and_readers`: full scans, alternating directions, until
/// `done`; checks order, contents, and that nothing seen before disappears. Returns the
/// number of passes that saw a partly written memtable, and the entries seen by the last pass.
fn read_until_done(
    memtable: &Arc<MemTable>,
    internal: &InternalKeyComparator,
    done: &AtomicBool,
    reader: usize,
) -> (usize, usize) {
    // Indexes seen in the previous pass, sorted by key order.
    let mut previous: Vec<u64> = Vec::new();
    let mut passes = 0;
    let mut partial_passes = 0;
    loop {
        let last_pass = done.load(MemoryOrder::Acquire);
        let mut it = memtable.iter();
        let mut seen = Vec::with_capacity(previous.len() + 1000);
        let mut last_key: Vec<u8> = Vec::new();
        // Alternate directions between passes.
        let forward = (passes + reader).is_multiple_of(2);
        if forward {
            it.seek_to_first();
        } else {
            it.seek_to_last();
        }
        while it.valid() {
            let expected = if forward {
                Ordering::Less
            } else {
                Ordering::Greater
            };
            if !last_key.is_empty() {
                assert_eq!(internal.compare(&last_key, it.key()), expected);
            }
            let index = index_of(it.value());
            let (key, value) = entry(index);
            let parsed = ParsedInternalKey::parse(it.key()).unwrap();
            assert_eq!((parsed.user_key, parsed.seqno), (&key[..], index + 1));
            assert_eq!(it.value(), value);
            last_key.clear();
            last_key.extend_from_slice(it.key());
            seen.push(index);
            if forward {
                it.next();
            } else {
                it.prev();
            }
        }
        if !forward {
            seen.reverse();
        }
        // Everything seen before is still there (both lists are in key order).
        let mut rest = seen.iter();
        for old in &previous {
            assert!(rest.any(|new| new == old), "entry {old} disappeared");
        }
        // And reachable by point lookups.
        for &index in previous.iter().step_by(97) {
            let (key, value) = entry(index);
            assert_eq!(
                memtable.get(&key, MAX_SEQNO),
                Some((ValueKind::Value, index + 1, value))
            );
        }
        previous = seen;
        passes += 1;
        partial_passes += usize::from(!previous.is_empty() && previous.len() < TOTAL as usize);
        if last_pass {
            return (partial_passes, previous.len());
        }
    }
}

#[test]
fn concurrent_writers_and_readers() {
    for user in comparators() {
        let memtable = Arc::new(MemTable::new(user.clone(), 1));
        let internal = Arc::new(InternalKeyComparator::new(user.clone()));
        let done = Arc::new(AtomicBool::new(false));

        let readers: Vec<_> = (0..2)
            .map(|r| {
                let memtable = memtable.clone();
                let internal = internal.clone();
                let done = done.clone();
                std::thread::spawn(move || read_until_done(&memtable, &internal, &done, r))
            })
            .collect();

        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let memtable = memtable.clone();
                std::thread::spawn(move || {
                    for i in (w * PER_WRITER)..((w + 1) * PER_WRITER) {
                        let (key, value) = entry(i);
                        memtable.add(i + 1, ValueKind::Value, &key, &value);
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        done.store(true, MemoryOrder::Release);
        let mut concurrent_passes = 0;
        for reader in readers {
            let (partial_passes, last_seen) = reader.join().unwrap();
            concurrent_passes += partial_passes;
            assert_eq!(last_seen as u64, TOTAL);
        }
        assert!(concurrent_passes > 0, "no reader overlapped the writers");

        // Every entry exactly once, in order.
        let mut expected: Vec<Vec<u8>> = (0..TOTAL)
            .map(|i| InternalKey::new(&entry(i).0, i + 1, ValueKind::Value).into_encoded())
            .collect();
        expected.sort_by(|a, b| internal.compare(a, b));
        let mut it = memtable.iter();
        it.seek_to_first();
        for key in &expected {
            assert!(it.valid());
            assert_eq!(it.key(), &key[..]);
            it.next();
        }
        assert!(!it.valid());
        assert_eq!(memtable.num_entries(), TOTAL);
        assert_eq!(
            (memtable.first_seqno(), memtable.largest_seqno()),
            (Some(1), Some(TOTAL))
        );

        // Memory: at least the entries' bytes, and not much more than entries plus node
        // overhead (links, lengths, padding: under 48 bytes an entry on average), plus the
        // unused tails of the writers' current chunks (at most one MiB each).
        let payload: usize = (0..TOTAL)
            .map(|i| {
                let (key, value) = entry(i);
                key.len() + 8 + value.len()
            })
            .sum();
        let usage = memtable.approximate_memory_usage();
        assert!(usage >= payload, "{usage} < {payload}");
        let bound = payload + 48 * TOTAL as usize + 16 * (1 << 20);
        assert!(
            usage <= bound,
            "{usage} > {bound} for {payload} payload bytes"
        );
    }
}

/// The Db's pattern: a commit group's entries are inserted by several threads, then the group's
/// last sequence number is published; a reader at the published sequence sees every entry of
/// every published group.
#[test]
fn published_sequence_numbers_are_fully_visible() {
    const THREADS: usize = 4;
    const GROUP: u64 = 64;
    const GROUPS: u64 = 300;
    let memtable = Arc::new(MemTable::new(Arc::new(BytewiseComparator), 2));
    let visible = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(THREADS));

    let reader = {
        let memtable = memtable.clone();
        let visible = visible.clone();
        std::thread::spawn(move || {
            let mut rng = SmallRng::seed_from_u64(7);
            let mut checks = 0u64;
            loop {
                let snapshot = visible.load(MemoryOrder::Acquire);
                if snapshot > 0 {
                    let seqno = rng.gen_range(1..=snapshot);
                    let (key, value) = entry(seqno - 1);
                    assert_eq!(
                        memtable.get(&key, snapshot),
                        Some((ValueKind::Value, seqno, value)),
                        "seqno {seqno} published at {snapshot}"
                    );
                    // Not visible to an older snapshot.
                    assert_eq!(memtable.get(&key, seqno - 1), None);
                    checks += 1;
                }
                if checks.is_multiple_of(256) {
                    // Every published entry is in an iteration too.
                    let mut it = memtable.iter();
                    it.seek_to_first();
                    let mut count = 0;
                    while it.valid() {
                        count += u64::from(
                            ParsedInternalKey::parse(it.key()).unwrap().seqno <= snapshot,
                        );
                        it.next();
                    }
                    assert_eq!(count, snapshot);
                }
                if snapshot == GROUP * GROUPS {
                    return checks;
                }
            }
        })
    };

    let writers: Vec<_> = (0..THREADS)
        .map(|t| {
            let memtable = memtable.clone();
            let visible = visible.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                for group in 0..GROUPS {
                    let base = group * GROUP;
                    for seqno in (base + 1..=base + GROUP).skip(t).step_by(THREADS) {
                        let (key, value) = entry(seqno - 1);
                        memtable.add(seqno, ValueKind::Value, &key, &value);
                    }
                    if barrier.wait().is_leader() {
                        visible.store(base + GROUP, MemoryOrder::Release);
                    }
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    assert!(reader.join().unwrap() > 0);
}

#[test]
fn memory_usage_grows_with_the_data() {
    let memtable = MemTable::new(Arc::new(BytewiseComparator), 3);
    let start = memtable.approximate_memory_usage();
    let mut payload = 0;
    let mut last = start;
    for i in 0..100_000u64 {
        let key = format!("{i:016}");
        let value = [b'v'; 100];
        memtable.add(i + 1, ValueKind::Value, key.as_bytes(), &value);
        payload += key.len() + 8 + value.len();
        if i % 10_000 == 9_999 {
            let usage = memtable.approximate_memory_usage();
            assert!(usage >= last);
            assert!(usage >= payload, "{usage} < {payload}");
            // Node overhead is about 30 bytes on 124 of payload; plus one partly used chunk.
            assert!(
                (usage as f64) < payload as f64 * 1.35 + f64::from(1 << 20),
                "{usage} for {payload}"
            );
            last = usage;
        }
    }
    assert!(last > start + 12_000_000);
}
