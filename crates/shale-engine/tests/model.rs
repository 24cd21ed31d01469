//! The model test: random sequences of puts, deletes, range deletes, multi-keyspace batches,
//! gets, multi-gets, snapshots, bounded and prefix iterators moved both ways (with writes and
//! flushes while they are open), flushes, waits for compaction, manual range compactions,
//! reopens (some with another prefix extractor), power cuts (clean and torn), keyspace
//! create/drop, bulk ingestion of external tables and bursts of concurrent writers and a reader, checked against a `BTreeMap`
//! (with values in blob files in `blob_values`),
//! oracle on `MemFs`, under several option sets (one test each). The machinery and exactly
//! what is checked are in `model_harness`; every failure found so far is a named test in
//! `tests/model_regressions.rs`.
//!
//! Environment:
//! - `SHALE_MODEL_CASES` (default 16): seeds per option set; `SHALE_MODEL_STEPS` (default 800):
//!   ops per seed. A long run: `SHALE_MODEL_CASES=500 SHALE_MODEL_STEPS=2000 cargo test
//!   --release -p shale-engine --test model`.
//! - `SHALE_MODEL_SEED_BASE` (default 0): first seed, so parallel soak runs differ.
//! - `SHALE_MODEL_SEED`: replay one seed (a failure prints the exact command).
//! - `SHALE_MODEL_SHRINK_SECS` (default 120): time spent shrinking a failure to the short op
//!   list it prints as Rust code for a regression test.

mod model_harness;

use std::time::Duration;

use model_harness::{run_config, Config, Leveling};
use shale_engine::{Durability, UNLIMITED_OPEN_FILES};
use shale_sst::{ChecksumType, Compression};

const CASES: usize = 16;
const STEPS: usize = 800;

/// Flushes and L0 -> L1 compactions all the time; no compression, no filter, `Sync`.
#[test]
fn tiny_plain_sync() {
    run_config(
        &Config {
            name: "tiny_plain_sync",
            write_buffer_size: 4 << 10,
            max_write_buffer_number: 2,
            block_size: 256,
            compression: Compression::None,
            bloom_bits_per_key: 0,
            level0_compaction_trigger: 2,
            prefix_len: None,
            durability: Durability::Sync,
            sync_interval: Duration::from_millis(50),
            checksum: ChecksumType::Xxh3,
            block_cache_capacity: 0,
            max_open_files: 16,
            max_value_len: 600,
            keys_per_group: 24,
            blob_values: None,
            leveling: Leveling::default(),
        },
        CASES,
        STEPS,
    );
}

/// LZ4 and bloom filters, CRC32C block checksums, `Flush` durability with a fast syncer.
#[test]
fn small_lz4_bloom_flush() {
    run_config(
        &Config {
            name: "small_lz4_bloom_flush",
            write_buffer_size: 8 << 10,
            max_write_buffer_number: 3,
            block_size: 1024,
            compression: Compression::Lz4,
            bloom_bits_per_key: 10,
            level0_compaction_trigger: 3,
            prefix_len: None,
            durability: Durability::Flush,
            sync_interval: Duration::from_millis(5),
            checksum: ChecksumType::Crc32c,
            block_cache_capacity: 64 << 10,
            max_open_files: 100,
            max_value_len: 200,
            keys_per_group: 24,
            blob_values: None,
            leveling: Leveling::default(),
        },
        CASES,
        STEPS,
    );
}

/// Two-byte prefixes (prefix iteration and prefix filters), zstd, `Buffered` durability, every
/// table kept open and pinned in its file's metadata.
#[test]
fn prefix2_zstd_buffered() {
    run_config(
        &Config {
            name: "prefix2_zstd_buffered",
            write_buffer_size: 16 << 10,
            max_write_buffer_number: 2,
            block_size: 512,
            compression: Compression::Zstd,
            bloom_bits_per_key: 10,
            level0_compaction_trigger: 2,
            prefix_len: Some(2),
            durability: Durability::Buffered,
            sync_interval: Duration::from_millis(20),
            checksum: ChecksumType::Xxh3,
            block_cache_capacity: 1 << 20,
            max_open_files: UNLIMITED_OPEN_FILES,
            max_value_len: 300,
            keys_per_group: 24,
            blob_values: None,
            leveling: Leveling::default(),
        },
        CASES,
        STEPS,
    );
}

/// Three-byte prefixes without a bloom filter, Snappy, large blocks, `Sync`.
#[test]
fn prefix3_snappy_sync() {
    run_config(
        &Config {
            name: "prefix3_snappy_sync",
            write_buffer_size: 32 << 10,
            max_write_buffer_number: 2,
            block_size: 4096,
            compression: Compression::Snappy,
            bloom_bits_per_key: 0,
            level0_compaction_trigger: 4,
            prefix_len: Some(3),
            durability: Durability::Sync,
            sync_interval: Duration::from_millis(50),
            checksum: ChecksumType::Xxh3,
            block_cache_capacity: 8 << 10,
            max_open_files: 16,
            max_value_len: 150,
            keys_per_group: 24,
            blob_values: None,
            leveling: Leveling::default(),
        },
        CASES,
        STEPS,
    );
}

/// Values up to 4 KiB (above the block size), so compactions write several L1 tables; one-byte prefixes, zlib,
/// `Flush` with the default one-second syncer.
#[test]
fn big_values_zlib_flush() {
    run_config(
        &Config {
            name: "big_values_zlib_flush",
            write_buffer_size: 32 << 10,
            max_write_buffer_number: 2,
            block_size: 1024,
            compression: Compression::Zlib,
            bloom_bits_per_key: 10,
            level0_compaction_trigger: 2,
            prefix_len: Some(1),
            durability: Durability::Flush,
            sync_interval: Duration::from_secs(1),
            checksum: ChecksumType::Crc32c,
            block_cache_capacity: 1 << 20,
            max_open_files: 1000,
            max_value_len: 4000,
            keys_per_group: 100,
            blob_values: None,
            leveling: Leveling::default(),
        },
        CASES,
        STEPS,
    );
}

/// A memtable that rarely fills: reads come mostly from the memtable and from the tables that
/// explicit flushes and reopens write; `Buffered`.
#[test]
fn large_memtable_buffered() {
    run_config(
        &Config {
            name: "large_memtable_buffered",
            write_buffer_size: 1 << 20,
            max_write_buffer_number: 2,
            block_size: 4096,
            compression: Compression::Lz4,
            bloom_bits_per_key: 10,
            level0_compaction_trigger: 4,
            prefix_len: None,
            durability: Durability::Buffered,
            sync_interval: Duration::from_millis(100),
            checksum: ChecksumType::Xxh3,
            block_cache_capacity: 64 << 20,
            max_open_files: 1000,
            max_value_len: 100,
            keys_per_group: 24,
            blob_values: None,
            leveling: Leveling::default(),
        },
        CASES,
        STEPS,
    );
}

/// Tiny output files and level sizes with a multiplier of 2, so compactions fill L2 and deeper
/// (L0 -> base, level-score moves down, trivial moves, grandparent cuts) under the default
/// codecs by level (none, lz4 in the middle, zstd at the bottom, with trained dictionaries),
/// compactions split into 2 subcompactions; `Sync`.
#[test]
fn tiny_levels_leveled() {
    run_config(
        &Config {
            name: "tiny_levels_leveled",
            write_buffer_size: 4 << 10,
            max_write_buffer_number: 2,
            block_size: 256,
            compression: Compression::Lz4,
            bloom_bits_per_key: 10,
            level0_compaction_trigger: 2,
            prefix_len: None,
            durability: Durability::Sync,
            sync_interval: Duration::from_millis(50),
            checksum: ChecksumType::Xxh3,
            block_cache_capacity: 64 << 10,
            max_open_files: 100,
            max_value_len: 300,
            keys_per_group: 60,
            blob_values: None,
            leveling: Leveling {
                target_file_size: 4 << 10,
                max_bytes_for_level_base: 8 << 10,
                max_bytes_for_level_multiplier: 2,
                per_level_compression: true,
                min_deeper_levels: 3,
                // Split compactions, and bottommost tables that train (tiny) dictionaries.
                max_subcompactions: 2,
                zstd_max_dict_bytes: 512,
            },
        },
        CASES,
        STEPS,
    );
}

/// Key-value separation: values of 64 bytes and more go to (small) blob files, through
/// flushes, compactions with garbage collection of the oldest half of the blob files (forced
/// at 30% garbage), reopens and crash images; tiny levels so compactions run all the time.
#[test]
fn blob_values() {
    run_config(
        &Config {
            name: "blob_values",
            write_buffer_size: 4 << 10,
            max_write_buffer_number: 2,
            block_size: 256,
            compression: Compression::Lz4,
            bloom_bits_per_key: 10,
            level0_compaction_trigger: 2,
            prefix_len: None,
            durability: Durability::Sync,
            sync_interval: Duration::from_millis(50),
            checksum: ChecksumType::Xxh3,
            block_cache_capacity: 64 << 10,
            max_open_files: 100,
            max_value_len: 400,
            keys_per_group: 40,
            blob_values: Some(64),
            leveling: Leveling {
                target_file_size: 4 << 10,
                max_bytes_for_level_base: 8 << 10,
                max_bytes_for_level_multiplier: 2,
                per_level_compression: false,
                min_deeper_levels: 2,
                max_subcompactions: 2,
                zstd_max_dict_bytes: 0,
            },
        },
        CASES,
        STEPS,
    );
}
