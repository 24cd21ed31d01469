//! How fast a compaction writes under `rate_limit_bytes_per_sec` (docs/compaction.md, "Rate
//! limiter").
//!
//! ```text
//! cargo run --release -p shale-engine --example rate_limit -- [--mb 60] [--limits 0,10000000,20000000]
//! ```
//!
//! A database on `MemFs` is filled with about `--mb` MB of 100-byte random values under
//! scattered 16-byte keys, in 4 MiB memtables with automatic compaction held back (L0 trigger
//! 1000), so the data sits in overlapping L0 tables. For each limit (bytes per second, 0 = no
//! limit) a copy of that state is reopened with the limit and `compact_range` merges all of it
//! into the bottommost level (no compression, so bytes written are about bytes filled).
//! Printed: the bytes the compaction wrote (`Db::stats().compaction_bytes_written`), the
//! seconds `compact_range` took and their ratio in MB/s (10^6 bytes).

use std::sync::Arc;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{Db, Durability, KeyspaceOptions, Options};
use shale_fs::{FileSystem, MemFs};
use shale_sst::Compression;

const DIR: &str = "/db";

fn options(fs: Arc<dyn FileSystem>, rate_limit_bytes_per_sec: u64) -> Options {
    Options {
        file_system: fs,
        durability: Durability::Buffered,
        rate_limit_bytes_per_sec,
        default_keyspace: KeyspaceOptions {
            write_buffer_size: 4 << 20,
            max_write_buffer_number: 4,
            level0_compaction_trigger: 1000,
            level0_slowdown_writes_trigger: 1000,
            level0_stop_writes_trigger: 1000,
            compression_per_level: vec![Compression::None],
            bottommost_compression: None,
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

fn main() {
    let mut megabytes: u64 = 60;
    let mut limits: Vec<u64> = vec![0, 10_000_000, 20_000_000];
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_default();
        match arg.as_str() {
            "--mb" => megabytes = value.parse().expect("--mb takes a number"),
            "--limits" => {
                limits = value
                    .split(',')
                    .map(|l| l.parse().expect("--limits takes bytes per second"))
                    .collect();
            }
            _ => panic!("unknown argument {arg}; see the module doc"),
        }
    }
    let filled = MemFs::new();
    {
        let fs: Arc<dyn FileSystem> = Arc::new(filled.clone());
        let db = Db::open(DIR, options(fs, 0)).expect("open");
        let mut rng = SmallRng::seed_from_u64(1);
        let rows = megabytes * 1_000_000 / 116;
        let mut value = vec![0u8; 100];
        for _ in 0..rows {
            let key = format!("{:016}", rng.gen_range(0..rows * 4));
            rng.fill(value.as_mut_slice());
            db.put(key.as_bytes(), &value).expect("put");
        }
        db.flush().expect("flush");
        db.close().expect("close");
    }
    println!(
        "{:>14} {:>14} {:>9} {:>9}",
        "limit B/s", "written B", "seconds", "MB/s"
    );
    for limit in limits {
        let fs = copy(&filled);
        let db = Db::open(DIR, options(fs, limit)).expect("reopen");
        let start = Instant::now();
        db.compact_range(&db.default_keyspace(), None, None)
            .expect("compact");
        let seconds = start.elapsed().as_secs_f64();
        let written = db.stats().compaction_bytes_written;
        println!(
            "{limit:>14} {written:>14} {seconds:>9.2} {:>9.2}",
            written as f64 / seconds / 1e6
        );
        db.close().expect("close");
    }
}
