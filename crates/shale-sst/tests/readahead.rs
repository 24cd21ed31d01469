//! Automatic readahead of table iterators (src/readahead.rs): an iterator reading ahead
//! returns exactly what one reading block by block returns, over several tables, block sizes,
//! codecs and window sizes, with forward scans, seeks and direction changes; it makes far
//! fewer reads (counted through `FaultFs`); corruption inside a readahead window is still
//! reported at its block; a failed window read is an error, not a short or stale answer.

use std::path::Path;
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_fs::{FaultError, FaultFs, FaultRule, FaultTrigger, FileSystem, MemFs, OpKind};
use shale_sst::{
    BlockCache, ChecksumType, Compression, Error, InternalKey, ReadOptions, Table, TableIter,
    TableOpenOptions, TableWriter, ValueKind, WriterOptions, MAX_SEQNO,
};

type Entry = (Vec<u8>, Vec<u8>);

/// Writes `n` entries with values of varied length (some compress, some do not, a few are
/// larger than small blocks) and returns them in order.
fn write_table(
    fs: &dyn FileSystem,
    path: &Path,
    n: usize,
    block_size: usize,
    compression: Compression,
    seed: u64,
) -> Vec<Entry> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let options = WriterOptions {
        block_size,
        compression,
        checksum: if seed.is_multiple_of(2) {
            ChecksumType::Xxh3
        } else {
            ChecksumType::Crc32c
        },
        ..WriterOptions::default()
    };
    let mut writer = TableWriter::create(fs, path, options).unwrap();
    let mut entries = Vec::new();
    for i in 0..n {
        let key = format!("key{i:07}").into_bytes();
        let len = match rng.gen_range(0..100) {
            0 => rng.gen_range(3000..9000),
            1..=9 => 0,
            _ => rng.gen_range(10..200),
        };
        let value: Vec<u8> = if rng.gen_bool(0.5) {
            (0..len).map(|j| b"readahead "[j % 10]).collect()
        } else {
            (0..len).map(|_| rng.gen()).collect()
        };
        writer.add_entry(&key, 1, ValueKind::Value, &value).unwrap();
        let mut internal = key;
        internal
            .extend_from_slice(&((1u64 << 8) | u64::from(ValueKind::Value.tag())).to_le_bytes());
        entries.push((internal, value));
    }
    writer.finish().unwrap();
    entries
}

fn with_readahead(max_readahead_size: usize) -> ReadOptions {
    ReadOptions {
        max_readahead_size,
        ..ReadOptions::default()
    }
}

fn scan(iter: &mut TableIter) -> Vec<Entry> {
    let mut out = Vec::new();
    iter.seek_to_first();
    while iter.valid() {
        out.push((iter.key().to_vec(), iter.value().to_vec()));
        iter.next();
    }
    out
}

/// A random walk of seeks, nexts, prevs and scans, recording everything seen.
fn walk(iter: &mut TableIter, walk_seed: u64, n: usize) -> Vec<Option<Entry>> {
    let mut rng = SmallRng::seed_from_u64(walk_seed);
    let mut seen = Vec::new();
    let mut record = |iter: &TableIter| {
        seen.push(
            iter.valid()
                .then(|| (iter.key().to_vec(), iter.value().to_vec())),
        );
    };
    for _ in 0..60 {
        match rng.gen_range(0..5) {
            0 => {
                let key = format!("key{:07}", rng.gen_range(0..n + 5));
                iter.seek(InternalKey::for_seek(key.as_bytes(), MAX_SEQNO).encoded());
            }
            1 => iter.seek_to_first(),
            2 => iter.seek_to_last(),
            _ => {}
        }
        record(iter);
        let steps = rng.gen_range(0..200);
        let back = rng.gen_bool(0.2);
        for _ in 0..steps {
            if !iter.valid() {
                break;
            }
            if back {
                iter.prev();
            } else {
                iter.next();
            }
            record(iter);
        }
    }
    seen
}

#[test]
fn readahead_returns_exactly_what_block_reads_return() {
    let fs = MemFs::new();
    let cases = [
        (Compression::None, 256, 900),
        (Compression::Lz4, 1024, 3000),
        (Compression::Zstd, 4096, 5000),
        (Compression::Snappy, 16 << 10, 4000),
        (Compression::Lz4, 4096, 1),
        (Compression::None, 64 << 10, 2500),
    ];
    for (t, &(compression, block_size, n)) in cases.iter().enumerate() {
        let path = format!("/t{t}.sst");
        let path = Path::new(&path);
        let entries = write_table(&fs, path, n, block_size, compression, t as u64);
        // With and without a block cache: a cache hit between misses breaks no window.
        for cached in [false, true] {
            let open = TableOpenOptions {
                block_cache: cached.then(|| Arc::new(BlockCache::new(256 << 10))),
                ..TableOpenOptions::default()
            };
            let table = Table::open(&fs, path, &open).unwrap();
            let what =
                format!("table {t} ({compression}, {block_size}-byte blocks, cache {cached})");
            let mut plain = table.iter(with_readahead(0));
            assert!(
                scan(&mut plain) == entries,
                "{what}: scan without readahead"
            );
            let expected_walk = walk(&mut plain, t as u64, n);
            plain.status().unwrap();
            // Windows smaller than a block, of one block, and the usual sizes.
            for max in [1000, 4096, 8 << 10, 64 << 10, 256 << 10, 4 << 20] {
                let mut iter = table.iter(with_readahead(max));
                assert!(scan(&mut iter) == entries, "{what}: scan, window {max}");
                assert!(
                    walk(&mut iter, t as u64, n) == expected_walk,
                    "{what}: walk, window {max}"
                );
                iter.status().unwrap();
            }
        }
    }
}

#[test]
fn readahead_reduces_reads_and_point_reads_pay_nothing() {
    let mem = MemFs::new();
    let path = Path::new("/r.sst");
    let entries = write_table(&mem, path, 20_000, 4096, Compression::Lz4, 7);
    let fs = FaultFs::new(Arc::new(mem));
    let table = Table::open(&fs, path, &TableOpenOptions::default()).unwrap();
    let blocks = table.properties().num_data_blocks;
    assert!(blocks > 200, "{blocks} blocks");

    let reads = || fs.op_count(OpKind::Read);
    let before = reads();
    assert!(scan(&mut table.iter(with_readahead(0))) == entries);
    assert_eq!(
        reads() - before,
        blocks,
        "one read per block without readahead"
    );

    let before = reads();
    assert!(scan(&mut table.iter(ReadOptions::default())) == entries);
    let with = reads() - before;
    // Two reads before the trigger, then windows of 8, 16, .. 256 KiB over about 1.5 MiB.
    let data = table.properties().data_size;
    assert!(
        with <= 2 + 6 + data / (256 << 10) + 1,
        "{with} reads for {blocks} blocks of {data} bytes"
    );

    // Point lookups and a short seek read only their blocks.
    let before = reads();
    for i in (0..20_000).step_by(997) {
        let key = format!("key{i:07}");
        assert!(table.get(key.as_bytes(), MAX_SEQNO).unwrap().is_some());
    }
    assert_eq!(reads() - before, 21, "one read per lookup");
    let before = reads();
    let mut iter = table.iter(ReadOptions::default());
    iter.seek(InternalKey::for_seek(b"key0010000", MAX_SEQNO).encoded());
    for _ in 0..10 {
        iter.next();
    }
    assert!(iter.valid());
    assert!(
        reads() - before <= 2,
        "a short seek reads at most two blocks"
    );
}

#[test]
fn corruption_inside_a_window_is_reported_at_its_block() {
    for compression in [Compression::None, Compression::Lz4] {
        let fs = MemFs::new();
        let path = Path::new("/c.sst");
        let entries = write_table(&fs, path, 5000, 1024, compression, 3);
        let table = Table::open(&fs, path, &TableOpenOptions::default()).unwrap();
        let handles: Vec<_> = table
            .index_entries()
            .unwrap()
            .iter()
            .map(|e| e.handle)
            .collect();
        // Well inside the first windows: blocks 2.. are read ahead.
        let bad = handles[9];
        fs.corrupt_for_test(path, bad.offset + bad.size / 2, 0x10)
            .unwrap();
        let fresh = Table::open(&fs, path, &TableOpenOptions::default()).unwrap();
        let mut iter = fresh.iter(ReadOptions::default());
        let got = scan(&mut iter);
        assert!(got.len() < entries.len(), "{compression}: scan stops");
        assert!(
            got == entries[..got.len()],
            "{compression}: entries before it are exact"
        );
        match iter.status() {
            Err(Error::Corruption { offset, detail, .. }) => {
                assert_eq!(offset, bad.offset, "{compression}: {detail}");
                assert!(detail.contains("checksum"), "{detail}");
            }
            other => panic!("{compression}: expected corruption, got {other:?}"),
        }
    }
}

#[test]
fn a_failed_window_read_is_an_error_and_the_next_iterator_reads_again() {
    let mem = MemFs::new();
    let path = Path::new("/e.sst");
    let entries = write_table(&mem, path, 5000, 1024, Compression::Lz4, 5);
    let fs = FaultFs::new(Arc::new(mem));
    let table = Table::open(&fs, path, &TableOpenOptions::default()).unwrap();
    // The third data block read of the scan is the first window.
    let rule = fs.add_rule(FaultRule::new(
        OpKind::Read,
        FaultTrigger::Nth(3),
        FaultError::Eio,
    ));
    let mut iter = table.iter(ReadOptions::default());
    let got = scan(&mut iter);
    assert!(got == entries[..got.len()]);
    assert!(got.len() < entries.len());
    assert!(iter.status().is_err());
    fs.remove_rule(rule);
    assert!(scan(&mut table.iter(ReadOptions::default())) == entries);
}
