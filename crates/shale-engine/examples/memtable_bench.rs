//! Memtable throughput: concurrent inserts, point gets, iterator seeks and a full scan of our
//! skiplist memtable, beside `crossbeam-skiplist`'s `SkipMap` doing the same inserts, gets and
//! scan as a reference.
//!
//! `cargo run --release -p shale-engine --example memtable_bench [-- ENTRIES]`
//!
//! Keys are 16 bytes, values 100 bytes, in random order. `SkipMap` gets each internal key
//! encoded so that plain byte order is internal-key order (`user_key ++ !trailer` big endian),
//! which is what it would need to stand in for ours. "opaque" is bytewise order under another
//! name, so our memtable takes its general comparator path (a virtual call per comparison)
//! instead of the bytewise fast path.
//!
//! Every measurement runs in a fresh child process (this program, with `--child`): freeing a
//! million small `SkipMap` allocations leaves glibc consolidation work that would otherwise be
//! charged to whatever allocates next. Runs take turns so background load falls on all alike;
//! the best of `ROUNDS` is shown.

use std::cmp::Ordering;
use std::ops::Bound;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_skiplist::SkipMap;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use shale_engine::testing::{InternalIterator, MemTable};
use shale_sst::{append_internal_key, BytewiseComparator, Comparator, ValueKind, MAX_SEQNO};

const VALUE_SIZE: usize = 100;
const ROUNDS: usize = 3;

#[derive(Debug)]
struct OpaqueBytewise;

impl Comparator for OpaqueBytewise {
    fn name(&self) -> &'static str {
        "bench.OpaqueBytewise"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }
    fn find_shortest_separator(&self, _start: &mut Vec<u8>, _limit: &[u8]) {}
    fn find_short_successor(&self, _key: &mut Vec<u8>) {}
}

/// The 16-byte key of entry `i`: distinct for distinct `i`, in random order (the splitmix64
/// finalizer, a bijection; a plain multiplicative hash would make neighbouring keys arrive
/// close in time and flatter every skiplist with cache hits).
fn key(i: u64) -> [u8; 16] {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let mut out = [0; 16];
    out[..8].copy_from_slice(&z.to_be_bytes());
    out[8..].copy_from_slice(&i.to_le_bytes());
    out
}

fn crossbeam_key(user_key: &[u8], seqno: u64) -> Vec<u8> {
    let trailer = (seqno << 8) | u64::from(ValueKind::Value.tag());
    let mut k = Vec::with_capacity(user_key.len() + 8);
    k.extend_from_slice(user_key);
    k.extend_from_slice(&(!trailer).to_be_bytes());
    k
}

/// Runs `work(thread)` on `threads` threads at once; the wall time of the slowest.
fn timed_threads(threads: usize, work: impl Fn(usize) + Sync) -> Duration {
    let start = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..threads {
            let work = &work;
            scope.spawn(move || work(t));
        }
    });
    start.elapsed()
}

/// Entries to look up: every one once, in random order.
fn lookup_order(entries: usize) -> Vec<u64> {
    let mut order: Vec<u64> = (0..entries as u64).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(42));
    order
}

fn fill_ours(
    comparator: &Arc<dyn Comparator>,
    entries: usize,
    threads: usize,
) -> (Arc<MemTable>, Duration) {
    let memtable = Arc::new(MemTable::new(comparator.clone(), 1));
    let value = [b'v'; VALUE_SIZE];
    let time = timed_threads(threads, |t| {
        for i in (t..entries).step_by(threads) {
            memtable.add(i as u64 + 1, ValueKind::Value, &key(i as u64), &value);
        }
    });
    (memtable, time)
}

fn fill_crossbeam(entries: usize, threads: usize) -> (SkipMap<Vec<u8>, Vec<u8>>, Duration) {
    let map = SkipMap::new();
    let value = [b'v'; VALUE_SIZE];
    let time = timed_threads(threads, |t| {
        for i in (t..entries).step_by(threads) {
            map.insert(crossbeam_key(&key(i as u64), i as u64 + 1), value.to_vec());
        }
    });
    (map, time)
}

fn gets_ours(memtable: &MemTable, order: &[u64], threads: usize) -> Duration {
    timed_threads(threads, |t| {
        let (mut looked_up, mut found) = (0, 0);
        for &i in order.iter().skip(t).step_by(threads) {
            let hit = memtable.get(&key(i), MAX_SEQNO);
            looked_up += 1;
            found += usize::from(hit.is_some_and(|(_, _, v)| v.len() == VALUE_SIZE));
        }
        assert_eq!(found, looked_up);
    })
}

fn gets_crossbeam(map: &SkipMap<Vec<u8>, Vec<u8>>, order: &[u64], threads: usize) -> Duration {
    timed_threads(threads, |t| {
        let (mut looked_up, mut found) = (0, 0);
        for &i in order.iter().skip(t).step_by(threads) {
            looked_up += 1;
            let user_key = key(i);
            let seek = crossbeam_key(&user_key, MAX_SEQNO);
            if let Some(entry) = map.lower_bound(Bound::Included(&seek)) {
                if entry.key().starts_with(&user_key) && entry.key().len() == user_key.len() + 8 {
                    found += usize::from(entry.value().clone().len() == VALUE_SIZE);
                }
            }
        }
        assert_eq!(found, looked_up);
    })
}

/// Iterator seeks to every entry in `order` (the memtable's share of a `seekrandom`), each
/// followed by `nexts` steps forward, or by one step back instead when `nexts` is 0 (a
/// `seek_for_prev` search, then `prev`'s search).
fn seeks_ours(memtable: &Arc<MemTable>, order: &[u64], nexts: usize) -> Duration {
    let mut it = memtable.iter();
    let mut target = Vec::new();
    let start = Instant::now();
    let mut bytes = 0;
    for &i in order {
        target.clear();
        append_internal_key(&mut target, &key(i), MAX_SEQNO, ValueKind::MAX);
        if nexts == 0 {
            it.seek_for_prev(&target);
            it.prev();
        } else {
            it.seek(&target);
            for _ in 0..nexts {
                bytes += it.value().len();
                it.next();
            }
        }
        bytes += it.key().len();
    }
    let time = start.elapsed();
    assert!(bytes > 0);
    time
}

fn scan_ours(memtable: &Arc<MemTable>) -> Duration {
    let start = Instant::now();
    let mut it = memtable.iter();
    it.seek_to_first();
    let mut bytes = 0;
    while it.valid() {
        bytes += it.key().len() + it.value().len();
        it.next();
    }
    let time = start.elapsed();
    assert!(bytes > 0);
    time
}

fn scan_crossbeam(map: &SkipMap<Vec<u8>, Vec<u8>>) -> Duration {
    let start = Instant::now();
    let bytes: usize = map.iter().map(|e| e.key().len() + e.value().len()).sum();
    let time = start.elapsed();
    assert!(bytes > 0);
    time
}

/// One child run: fills a structure with `threads` writers and, with one writer, also measures
/// gets and a scan. Prints `name=seconds` pairs (and `memory=bytes`) on one line.
fn child(implementation: &str, threads: usize, entries: usize) {
    let mut results: Vec<(&str, f64)> = Vec::new();
    let order = lookup_order(entries);
    if implementation == "crossbeam" {
        let (map, insert) = fill_crossbeam(entries, threads);
        results.push(("insert", insert.as_secs_f64()));
        if threads == 1 {
            for (name, get_threads) in [("get1", 1), ("get2", 2)] {
                results.push((
                    name,
                    gets_crossbeam(&map, &order, get_threads).as_secs_f64(),
                ));
            }
            results.push(("scan", scan_crossbeam(&map).as_secs_f64()));
        }
        std::mem::forget(map); // the process exits next; freeing is not part of any figure
    } else {
        let comparator: Arc<dyn Comparator> = match implementation {
            "ours" => Arc::new(BytewiseComparator),
            _ => Arc::new(OpaqueBytewise),
        };
        let (memtable, insert) = fill_ours(&comparator, entries, threads);
        results.push(("insert", insert.as_secs_f64()));
        if threads == 1 {
            for (name, get_threads) in [("get1", 1), ("get2", 2)] {
                results.push((
                    name,
                    gets_ours(&memtable, &order, get_threads).as_secs_f64(),
                ));
            }
            results.push(("scan", scan_ours(&memtable).as_secs_f64()));
            results.push(("seek10", seeks_ours(&memtable, &order, 10).as_secs_f64()));
            results.push(("prev", seeks_ours(&memtable, &order, 0).as_secs_f64()));
            results.push(("memory", memtable.approximate_memory_usage() as f64));
            // A memtable that fits in the CPU caches: comparisons rather than misses dominate.
            let small = (entries / 50).max(1);
            let small_order: Vec<u64> = (0..50).flat_map(|_| lookup_order(small)).collect();
            let (small_table, _) = fill_ours(&comparator, small, 1);
            results.push((
                "small_get1",
                gets_ours(&small_table, &small_order, 1).as_secs_f64(),
            ));
        }
    }
    let line: Vec<String> = results.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("{}", line.join(" "));
}

/// Runs a child and parses its `name=value` line.
fn run_child(implementation: &str, threads: usize, entries: usize) -> Vec<(String, f64)> {
    let exe = std::env::current_exe().expect("path of this program");
    let output = Command::new(exe)
        .args([
            "--child",
            implementation,
            &threads.to_string(),
            &entries.to_string(),
        ])
        .output()
        .expect("run a child measurement");
    assert!(
        output.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_string(), v.parse().expect("a number")))
        .collect()
}

/// The best (smallest) value of each metric over `ROUNDS` runs per implementation, taking turns.
fn measure(implementations: &[&str], threads: usize, entries: usize) -> Vec<Vec<(String, f64)>> {
    let mut best: Vec<Vec<(String, f64)>> = vec![Vec::new(); implementations.len()];
    for _ in 0..ROUNDS {
        for (slot, implementation) in best.iter_mut().zip(implementations) {
            for (name, value) in run_child(implementation, threads, entries) {
                match slot.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, v)) => *v = v.min(value),
                    None => slot.push((name, value)),
                }
            }
        }
    }
    best
}

fn metric(results: &[(String, f64)], name: &str) -> f64 {
    results
        .iter()
        .find(|(n, _)| n == name)
        .map_or(f64::NAN, |(_, v)| *v)
}

fn rate(ops: usize, seconds: f64) -> String {
    format!("{:>7.2} M ops/s", ops as f64 / seconds / 1e6)
}

fn row(label: &str, ops: usize, a: f64, b: f64) {
    println!("{label:<38} {:>16} {:>16}", rate(ops, a), rate(ops, b));
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        let threads = args[3].parse().expect("THREADS");
        let entries = args[4].parse().expect("ENTRIES");
        child(&args[2], threads, entries);
        return;
    }
    let entries: usize = args
        .get(1)
        .map_or(1_000_000, |s| s.parse().expect("ENTRIES must be a number"));
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    println!(
        "memtable_bench: {entries} entries, 16-byte keys, {VALUE_SIZE}-byte values, \
         {cpus} CPUs, best of {ROUNDS} (each run a fresh process)"
    );

    let single = measure(&["ours", "crossbeam", "opaque"], 1, entries);
    let (ours, crossbeam, opaque) = (&single[0], &single[1], &single[2]);
    println!(
        "\n{:<38} {:>16} {:>16}",
        "", "shale MemTable", "crossbeam SkipMap"
    );
    row(
        "insert, 1 thread",
        entries,
        metric(ours, "insert"),
        metric(crossbeam, "insert"),
    );
    for threads in [2, 4] {
        let multi = measure(&["ours", "crossbeam"], threads, entries);
        row(
            &format!("insert, {threads} threads"),
            entries,
            metric(&multi[0], "insert"),
            metric(&multi[1], "insert"),
        );
    }
    row(
        "random get, 1 thread",
        entries,
        metric(ours, "get1"),
        metric(crossbeam, "get1"),
    );
    row(
        "random get, 2 threads",
        entries,
        metric(ours, "get2"),
        metric(crossbeam, "get2"),
    );
    row(
        "full scan",
        entries,
        metric(ours, "scan"),
        metric(crossbeam, "scan"),
    );
    println!(
        "{:<38} {:>16}",
        "seek + 10 nexts, 1 thread",
        rate(entries, metric(ours, "seek10"))
    );
    println!(
        "{:<38} {:>16}",
        "seek_for_prev + prev, 1 thread",
        rate(entries, metric(ours, "prev"))
    );
    println!(
        "memtable memory: {:.1} MiB for {:.1} MiB of keys and values",
        metric(ours, "memory") / f64::from(1 << 20),
        (entries * (16 + 8 + VALUE_SIZE)) as f64 / f64::from(1 << 20)
    );

    println!(
        "\n{:<38} {:>16} {:>16}",
        "our comparator path", "bytewise (fast)", "opaque (general)"
    );
    row(
        "insert, 1 thread",
        entries,
        metric(ours, "insert"),
        metric(opaque, "insert"),
    );
    row(
        "random get, 1 thread",
        entries,
        metric(ours, "get1"),
        metric(opaque, "get1"),
    );
    let small = (entries / 50).max(1);
    row(
        &format!("random get, {small} entries, 1 thread"),
        small * 50,
        metric(ours, "small_get1"),
        metric(opaque, "small_get1"),
    );
}
