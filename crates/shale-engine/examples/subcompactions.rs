//! How long one large compaction takes split into `max_subcompactions` key ranges
//! (docs/compaction.md, "Subcompactions").
//!
//! ```text
//! cargo run --release -p shale-engine --example subcompactions -- [--mb 100] [--subcompactions 1,2] [--repeat 3]
//! ```
//!
//! A database on `MemFs` is filled with about `--mb` MB of 100-byte values (compressible,
//! lz4 at the bottom) under scattered 16-byte keys, in 4 MiB memtables with automatic
//! compaction held back (L0 trigger 1000), so the data sits in overlapping L0 tables. For each
//! setting (persisted with the keyspace, so each fills its own database the same way) a copy of
//! that state is reopened and `compact_range` merges all of it into
//! the bottommost level (one compaction of every L0 table). Printed: the median seconds of
//! `compact_range` over the repetitions, the ranges run (`Db::stats().subcompactions`), the
//! bytes written and the sizes of the output tables (one per range here: the balance).

use std::sync::Arc;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{Db, Durability, KeyspaceOptions, Options};
use shale_fs::{FileSystem, MemFs};
use shale_sst::Compression;

const DIR: &str = "/db";

fn options(fs: Arc<dyn FileSystem>, max_subcompactions: usize) -> Options {
    Options {
        file_system: fs,
        durability: Durability::Buffered,
        default_keyspace: KeyspaceOptions {
            write_buffer_size: 4 << 20,
            max_write_buffer_number: 4,
            level0_compaction_trigger: 1000,
            level0_slowdown_writes_trigger: 1000,
            level0_stop_writes_trigger: 1000,
            compression_per_level: vec![Compression::None],
            bottommost_compression: Some(Compression::Lz4),
            max_subcompactions,
            ..KeyspaceOptions::default()
        },
        ..Options::default()
    }
}

/// A copy of every file of `from` in a new `MemFs`.
fn copy(from: &MemFs) -> Arc<MemFs> {
    let to = Arc::new(MemFs::new());
    let dir = std::path::Path::new(DIR);
    to.create_dir_all(dir).expect("mkdir");
    for name in from.list(dir).expect("list") {
        let path = dir.join(&name);
        let bytes = from.file_contents(&path).expect("read");
        let mut file = to.create(&path).expect("create");
        file.append(&bytes).expect("write");
        file.sync_data().expect("sync");
    }
    to
}

/// A database holding about `megabytes` MB in overlapping L0 tables.
fn fill(megabytes: u64, max_subcompactions: usize) -> MemFs {
    let filled = MemFs::new();
    let fs: Arc<dyn FileSystem> = Arc::new(filled.clone());
    let db = Db::open(DIR, options(fs, max_subcompactions)).expect("open");
    let mut rng = SmallRng::seed_from_u64(1);
    let rows = megabytes * 1_000_000 / 116;
    let mut value = vec![0u8; 100];
    for _ in 0..rows {
        let key = format!("{:016}", rng.gen_range(0..rows * 4));
        // Half random, half repeated: compresses to about half.
        rng.fill(&mut value[..50]);
        value.copy_within(..50, 50);
        db.put(key.as_bytes(), &value).expect("put");
    }
    db.flush().expect("flush");
    db.close().expect("close");
    filled
}

fn main() {
    let mut megabytes: u64 = 100;
    let mut settings: Vec<usize> = vec![1, 2];
    let mut repeat = 3;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_default();
        match arg.as_str() {
            "--mb" => megabytes = value.parse().expect("--mb takes a number"),
            "--repeat" => repeat = value.parse().expect("--repeat takes a number"),
            "--subcompactions" => {
                settings = value
                    .split(',')
                    .map(|l| l.parse().expect("--subcompactions takes numbers"))
                    .collect();
            }
            _ => panic!("unknown argument {arg}; see the module doc"),
        }
    }
    println!(
        "{:>15} {:>9} {:>7} {:>14}  output tables (MB)",
        "subcompactions", "seconds", "ranges", "written B"
    );
    for setting in settings {
        // Keyspace options are persisted and win at reopen: fill with the setting itself
        // (the fill compacts nothing, so every setting starts from the same tables).
        let filled = fill(megabytes, setting);
        let mut times = Vec::new();
        let mut last = (0, 0, String::new());
        for _ in 0..repeat {
            let fs = copy(&filled);
            let db = Db::open(DIR, options(fs, setting)).expect("reopen");
            let start = Instant::now();
            db.compact_range(&db.default_keyspace(), None, None)
                .expect("compact");
            times.push(start.elapsed().as_secs_f64());
            let stats = db.stats();
            let version = db.current_version();
            let sizes: Vec<String> = version
                .files(0, version.num_levels() - 1)
                .iter()
                .map(|f| format!("{:.1}", f.size as f64 / 1e6))
                .collect();
            last = (
                stats.subcompactions,
                stats.compaction_bytes_written,
                sizes.join(" "),
            );
            db.close().expect("close");
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{setting:>15} {:>9.2} {:>7} {:>14}  {}",
            times[times.len() / 2],
            last.0,
            last.1,
            last.2
        );
    }
}
