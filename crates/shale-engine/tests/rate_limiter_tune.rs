//! The auto-tuned rate limiter is wired to the Db (issue claim): with
//! `rate_limiter_auto_tune`, the rate flushes and compactions are held to rises while the
//! pending compaction bytes grow, and falls once compaction has paid the debt.

use std::sync::Arc;
use std::time::{Duration, Instant};

use shale_engine::{Db, KeyspaceOptions, Options, WriteBatch, WriteOptions, DEFAULT_KEYSPACE_ID};
use shale_fs::MemFs;
use shale_sst::Compression;

/// The configured ceiling; auto-tuning starts at half of it.
const CEILING: u64 = 256 << 10;

fn rate(db: &Db) -> u64 {
    db.stats().rate_limit_bytes_per_sec
}

#[test]
fn the_rate_follows_the_pending_compaction_bytes() {
    let db = Db::open(
        "/db",
        Options {
            file_system: Arc::new(MemFs::new()),
            rate_limit_bytes_per_sec: CEILING,
            rate_limiter_auto_tune: true,
            default_keyspace: KeyspaceOptions {
                write_buffer_size: 32 << 10,
                compression: Compression::None,
                compression_per_level: Vec::new(),
                bottommost_compression: None,
                level0_compaction_trigger: 2,
                level0_slowdown_writes_trigger: 10_000,
                level0_stop_writes_trigger: 20_000,
                soft_pending_compaction_bytes_limit: 0,
                hard_pending_compaction_bytes_limit: 0,
                target_file_size: 32 << 10,
                max_bytes_for_level_base: 64 << 10,
                max_bytes_for_level_multiplier: 2,
                ..KeyspaceOptions::default()
            },
            ..Options::default()
        },
    )
    .unwrap();
    let start = rate(&db);
    assert_eq!(start, CEILING / 2, "auto-tuning starts at half the ceiling");

    // Writes far faster than compaction at ~128 KiB/s can merge them: the debt grows.
    let value = vec![7u8; 1000];
    let mut peak = start;
    let writing = Instant::now();
    let mut i = 0u64;
    while writing.elapsed() < Duration::from_secs(4) {
        let mut batch = WriteBatch::new();
        for _ in 0..64 {
            i += 1;
            let key = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes();
            batch.put(DEFAULT_KEYSPACE_ID, &key, &value).unwrap();
        }
        db.write(batch, &WriteOptions::default()).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        peak = peak.max(rate(&db));
    }
    assert!(
        peak > start,
        "the rate stayed at {start} B/s while the debt grew ({i} keys written)"
    );
    assert!(peak <= CEILING, "the rate {peak} B/s passed its ceiling");

    // Heavy writes stop; compaction pays the debt down, and the rate gives bandwidth back.
    // The limiter retunes when it is asked for bytes, so a small flush each second asks.
    let paying = Instant::now();
    let mut low = rate(&db);
    while low >= peak && paying.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(1100));
        i += 1;
        db.put(&i.to_be_bytes(), b"small").unwrap();
        db.flush().unwrap();
        low = low.min(rate(&db));
    }
    assert!(
        low < peak,
        "the rate stayed at {peak} B/s for 120 s after the heavy writes stopped"
    );
}
