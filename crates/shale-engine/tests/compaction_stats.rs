//! `Db::compaction_stats`: the per-level table (files, size, score, bytes read and written,
//! write-amp, seconds, jobs) adds up to the database's own counters and files after flushes
//! and compactions that fill several levels, and prints as `RocksDB`'s text.

use std::sync::Arc;

use shale_engine::{Db, KeyspaceOptions, LevelIoStats, Options};
use shale_fs::MemFs;
use shale_sst::Compression;

const DIR: &str = "/db";

/// Tiny files and levels (multiplier 2) so a few hundred KiB fill L2 and deeper.
fn tiny_leveled() -> KeyspaceOptions {
    KeyspaceOptions {
        write_buffer_size: 8 << 10,
        compression: Compression::None,
        compression_per_level: Vec::new(),
        bottommost_compression: None,
        block_size: 1024,
        level0_compaction_trigger: 2,
        target_file_size: 8 << 10,
        max_bytes_for_level_base: 16 << 10,
        max_bytes_for_level_multiplier: 2,
        ..KeyspaceOptions::default()
    }
}

fn open(fs: &Arc<MemFs>) -> Db {
    let options = Options {
        file_system: fs.clone(),
        default_keyspace: tiny_leveled(),
        ..Options::default()
    };
    Db::open(DIR, options).unwrap()
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

#[test]
fn one_flush_is_one_l0_job_that_wrote_the_l0_file() {
    let fs = Arc::new(MemFs::new());
    let db = open(&fs);
    let ks = db.default_keyspace();
    for i in 0..100 {
        db.put(&key(i), b"value").unwrap();
    }
    db.flush().unwrap();
    let stats = db.compaction_stats();
    let l0 = db.level_bytes(&ks).unwrap()[0];
    assert!(l0 > 0);
    assert_eq!(stats.levels.len(), 1, "{stats}");
    let row = &stats.levels[0];
    assert_eq!((row.level, row.files, row.size_bytes), (0, 1, l0));
    assert_eq!(row.io.jobs, 1);
    assert_eq!(row.io.written_bytes, l0);
    assert_eq!(row.io.read_bytes(), 0, "a flush reads memory, not tables");
    // L0 score: files over level0_compaction_trigger (2).
    assert!((row.score - 0.5).abs() < 1e-9, "{stats}");
    assert!((stats.write_amp() - 1.0).abs() < 1e-9, "{stats}");
    assert_eq!(stats.totals.flushes, 1);
    assert_eq!(stats.totals.flush_bytes_written, l0);
}

#[test]
fn levels_add_up_to_the_counters_and_files_after_compactions() {
    let fs = Arc::new(MemFs::new());
    let db = open(&fs);
    let ks = db.default_keyspace();
    // Overwrites of 3000 keys: several flushes, compactions into three or more levels.
    let mut x = 0x5eed_u64;
    for step in 0..8000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut value = format!("{step}-").into_bytes();
        value.resize(40, b'v');
        db.put(&key(x % 3000), &value).unwrap();
    }
    db.wait_for_background_work().unwrap();
    let stats = db.compaction_stats();
    let totals = db.stats();
    let counts = db.level_file_counts(&ks).unwrap();
    let bytes = db.level_bytes(&ks).unwrap();
    assert!(
        counts[1..].iter().filter(|c| **c > 0).count() >= 2,
        "the workload should fill two levels below L0: {counts:?}"
    );
    assert!(totals.compactions >= 3, "{totals:?}");

    // Files and sizes are the Version's; every non-empty level has a row.
    for row in &stats.levels {
        assert_eq!(row.files, counts[row.level], "L{}", row.level);
        assert_eq!(row.size_bytes, bytes[row.level], "L{}", row.level);
    }
    let shown: usize = stats.levels.iter().map(|row| row.files).sum();
    assert_eq!(shown, counts.iter().sum::<usize>());

    // L0's work is the flushes; the deeper levels' is the compactions.
    let l0 = stats.levels.iter().find(|row| row.level == 0).unwrap();
    assert_eq!(l0.io.jobs, totals.flushes);
    assert_eq!(l0.io.written_bytes, totals.flush_bytes_written);
    let deeper = stats
        .levels
        .iter()
        .filter(|row| row.level > 0)
        .fold(LevelIoStats::default(), |sum, row| sum.plus(&row.io));
    assert_eq!(deeper.jobs, totals.compactions);
    assert_eq!(deeper.read_bytes(), totals.compaction_bytes_read);
    assert_eq!(deeper.written_bytes, totals.compaction_bytes_written);
    assert!(deeper.read_upper_bytes > 0 && deeper.read_output_bytes > 0);
    assert_eq!(deeper.moved_bytes > 0, totals.trivial_moves > 0, "{stats}");

    // The Sum row and the write-amp are the rows added up.
    let sum = stats.sum();
    assert_eq!(sum.io, l0.io.plus(&deeper));
    assert_eq!(sum.size_bytes, bytes.iter().sum::<u64>());
    let expected = sum.io.written_bytes as f64 / totals.flush_bytes_written as f64;
    assert!((stats.write_amp() - expected).abs() < 1e-9);
    assert!(
        stats.write_amp() > 1.0,
        "compaction rewrote flushed bytes: {stats}"
    );
    for row in stats
        .levels
        .iter()
        .filter(|row| row.io.read_upper_bytes > 0)
    {
        let per_level = row.io.written_bytes as f64 / row.io.read_upper_bytes as f64;
        assert!((row.io.write_amp() - per_level).abs() < 1e-9);
    }
    assert!(sum.io.micros > 0, "jobs take time: {stats}");

    let text = stats.to_string();
    assert!(text.starts_with("** Compaction Stats **\n"), "{text}");
    let line = |prefix: &str| {
        text.lines()
            .find(|line| line.trim_start().starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} line in\n{text}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let sum_line = line("Sum ");
    assert_eq!(sum_line[1], sum.files.to_string(), "{text}");
    assert_eq!(sum_line[11], sum.io.jobs.to_string(), "{text}");
    assert_eq!(line("L0 ")[1], counts[0].to_string(), "{text}");
    assert!(line("Stalls(count):").len() > 5, "{text}");
}
