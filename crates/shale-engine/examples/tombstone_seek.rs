//! Seeks around a run of deleted keys (the pattern of `RocksDB` issue 10300): how much slower
//! seek+next gets right after deleting many consecutive keys, and after the tombstones are
//! flushed and compacted away (docs/compaction.md, "Tombstone density"; docs/benchmarks.md).
//!
//! ```text
//! cargo run --release -p shale-engine --example tombstone_seek -- [--dir PATH]
//!     [--keys 1000000] [--deletes 100000] [--seeks 2000] [--tombstone-density-percent 50]
//!     [--tombstone-scan-flush-trigger 10000]
//! ```
//!
//! Loads `keys` keys (16-byte keys, 100-byte values) and compacts them to the bottom, then
//! times `seeks` random seeks, each followed by one `next`, with targets *into* the range
//! about to be deleted (the middle `deletes` keys) and *around* it (live keys within
//! `deletes` on either side). Deletes the range (point deletions in batches of 1000) and times
//! the same seeks: right after the deletes (the tombstones are in the memtable; a seek that
//! skips `tombstone_scan_flush_trigger` entries freezes it for flushing, and the flushed file
//! is compacted for its tombstone density while the pass goes on), again once background work
//! is done, and after an explicit `Db::flush` and background work. Prints each phase's mean
//! microseconds and its ratio to the time before the deletes. `--tombstone-density-percent 0`
//! and `--tombstone-scan-flush-trigger 0` turn those off, to see what they buy. Files go
//! through `shale_fs::OsFs`.

use std::path::PathBuf;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{
    Db, Durability, KeyspaceOptions, Options, ReadOptions, WriteBatch, WriteOptions,
};
use shale_fs::{FileSystem, OsFs};

const VALUE_SIZE: usize = 100;

struct Config {
    dir: PathBuf,
    keys: u64,
    deletes: u64,
    seeks: usize,
    density_percent: u32,
    scan_flush_trigger: u64,
}

fn usage(problem: &str) -> ! {
    eprintln!("tombstone_seek: {problem}");
    eprintln!(
        "usage: tombstone_seek [--dir PATH] [--keys 1000000] [--deletes 100000] [--seeks 2000] \
         [--tombstone-density-percent 50] [--tombstone-scan-flush-trigger 10000]"
    );
    std::process::exit(2)
}

fn parse_args() -> Config {
    let mut config = Config {
        dir: PathBuf::from("shale-data/tombstone-seek"),
        keys: 1_000_000,
        deletes: 100_000,
        seeks: 2000,
        density_percent: KeyspaceOptions::default().tombstone_density_percent,
        scan_flush_trigger: KeyspaceOptions::default().tombstone_scan_flush_trigger,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).unwrap_or_else(|| usage("missing value"));
        let number = || -> u64 { value.parse().unwrap_or_else(|_| usage("bad number")) };
        match args[i].as_str() {
            "--dir" => config.dir = PathBuf::from(value),
            "--keys" => config.keys = number(),
            "--deletes" => config.deletes = number(),
            "--seeks" => config.seeks = usize::try_from(number()).unwrap_or(usize::MAX),
            "--tombstone-density-percent" => {
                config.density_percent = u32::try_from(number()).unwrap_or(u32::MAX);
            }
            "--tombstone-scan-flush-trigger" => config.scan_flush_trigger = number(),
            other => usage(&format!("unknown flag {other}")),
        }
        i += 2;
    }
    if config.deletes * 3 > config.keys {
        usage("--keys must be at least 3 times --deletes");
    }
    config
}

fn key(i: u64) -> [u8; 16] {
    let mut key = [0u8; 16];
    key[..3].copy_from_slice(b"key");
    key[3..].copy_from_slice(format!("{i:013}").as_bytes());
    key
}

/// Mean microseconds of a seek to each target followed by one `next`.
fn time_seeks(db: &Db, targets: &[u64]) -> f64 {
    let ks = db.default_keyspace();
    let started = Instant::now();
    let mut found = 0usize;
    for &target in targets {
        let mut iter = ks.iterator(ReadOptions::default()).expect("an iterator");
        iter.seek(&key(target));
        if iter.valid() {
            iter.next();
            found += usize::from(iter.valid());
        }
        iter.status().expect("a clean scan");
    }
    assert!(found > 0, "every seek ran off the end");
    #[allow(clippy::cast_precision_loss)]
    let mean = started.elapsed().as_secs_f64() * 1e6 / targets.len() as f64;
    mean
}

/// Puts keys `0..keys` with random values, 1000 to a batch.
fn load(db: &Db, keys: u64, rng: &mut SmallRng) {
    let mut value = vec![0u8; VALUE_SIZE];
    for chunk in (0..keys).collect::<Vec<_>>().chunks(1000) {
        let mut batch = WriteBatch::new();
        for &i in chunk {
            rng.fill(&mut value[..]);
            batch.put(0, &key(i), &value).expect("a put");
        }
        db.write(batch, &WriteOptions::default()).expect("a write");
    }
}

fn main() {
    let config = parse_args();
    let fs = OsFs::new();
    if fs.exists(&config.dir).unwrap_or(false) {
        for name in fs.list(&config.dir).expect("list the benchmark directory") {
            fs.remove(&config.dir.join(&name))
                .expect("remove an old benchmark file");
        }
    }
    let options = Options {
        durability: Durability::Buffered,
        idle_compaction_after: None,
        default_keyspace: KeyspaceOptions {
            tombstone_density_percent: config.density_percent,
            tombstone_scan_flush_trigger: config.scan_flush_trigger,
            ..KeyspaceOptions::default()
        },
        ..Options::default()
    };
    let db = Db::open(&config.dir, options).expect("open");
    let mut rng = SmallRng::seed_from_u64(10300);
    let write = WriteOptions::default();
    let started = Instant::now();
    load(&db, config.keys, &mut rng);
    let ks = db.default_keyspace();
    db.compact_range(&ks, None, None).expect("compact");
    println!(
        "loaded {} keys in {:.1} s; levels {:?}",
        config.keys,
        started.elapsed().as_secs_f64(),
        db.level_file_counts(&ks).expect("levels")
    );

    let first = config.keys / 2 - config.deletes / 2;
    let end = first + config.deletes;
    let into: Vec<u64> = (0..config.seeks)
        .map(|_| rng.gen_range(first..end))
        .collect();
    let around: Vec<u64> = (0..config.seeks)
        .map(|_| {
            if rng.gen_bool(0.5) {
                rng.gen_range(first - config.deletes..first)
            } else {
                rng.gen_range(end..end + config.deletes)
            }
        })
        .collect();
    let measure = |db: &Db| (time_seeks(db, &into), time_seeks(db, &around));
    // A warm-up pass first: the block cache and page cache start as after the load.
    measure(&db);
    let (base_into, base_around) = measure(&db);
    for chunk in (first..end).collect::<Vec<_>>().chunks(1000) {
        let mut batch = WriteBatch::new();
        for &i in chunk {
            batch.delete(0, &key(i)).expect("a delete");
        }
        db.write(batch, &write).expect("a write");
    }
    let (mem_into, mem_around) = measure(&db);
    db.wait_for_background_work().expect("compactions");
    let (waited_into, waited_around) = measure(&db);
    db.flush().expect("flush");
    db.wait_for_background_work().expect("compactions");
    let (compacted_into, compacted_around) = measure(&db);
    let stats = db.stats();
    println!(
        "deleted keys {first}..{end}; tombstone_density_percent {}; \
         tombstone_scan_flush_trigger {}; seeks {} per phase",
        config.density_percent, config.scan_flush_trigger, config.seeks
    );
    println!(
        "{:<34} {:>10} {:>8} {:>10} {:>8}",
        "phase", "into us", "ratio", "around us", "ratio"
    );
    for (phase, into_us, around_us) in [
        ("before the deletes", base_into, base_around),
        ("right after the deletes", mem_into, mem_around),
        ("after background work", waited_into, waited_around),
        (
            "after flush + background work",
            compacted_into,
            compacted_around,
        ),
    ] {
        println!(
            "{phase:<34} {into_us:>10.2} {:>8.2} {around_us:>10.2} {:>8.2}",
            into_us / base_into,
            around_us / base_around
        );
    }
    println!(
        "levels {:?}; {}",
        db.level_file_counts(&ks).expect("levels"),
        stats.to_string().lines().nth(1).unwrap_or_default()
    );
    db.close().expect("close");
}
