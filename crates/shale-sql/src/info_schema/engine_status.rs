//! `SHOW ENGINE SHALE STATUS`: MyRocks' `SHOW ENGINE ROCKSDB STATUS` shape, rows of
//! (Type, Name, Status text), from the same figures `shale tool property` and `shale bench`
//! print: the compaction stats table with the stall counters, the work counters since open
//! (flushes, compactions by reason, WAL bytes), each keyspace's memtables, compaction
//! backlog and files per level, a row for each table marked damaged, the block cache, and
//! the transaction counters.

use std::fmt::Write as _;

use shale_table::{Store, Value};

use super::text;

#[allow(clippy::cast_precision_loss)] // a percentage for people
fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

pub(super) fn rows(store: &Store) -> Vec<Vec<Value>> {
    let tdb = store.engine();
    let db = tdb.db();
    let row = |kind: &str, name: &str, status: &str| vec![text(kind), text(name), text(status)];
    let mut out = vec![
        row(
            "COMPACTION_STATS",
            "all keyspaces",
            &db.compaction_stats().to_string(),
        ),
        row("DBSTATS", "shale", &db.stats().to_string()),
    ];
    let live = db.live_status();
    for ks in &live.keyspaces {
        let mut status = format!(
            "memtable {} B; immutable memtables {} ({} B); pending compaction {} B",
            ks.memtable_bytes,
            ks.immutable_memtables,
            ks.immutable_bytes,
            ks.pending_compaction_bytes
        );
        if let Some(handle) = db.keyspace(&ks.name) {
            if let (Ok(files), Ok(bytes)) = (db.level_file_counts(&handle), db.level_bytes(&handle))
            {
                status.push_str("\nlevel files bytes");
                for (level, (f, b)) in files.iter().zip(&bytes).enumerate() {
                    if *f > 0 {
                        let _ = write!(status, "\nL{level} {f} {b}");
                    }
                }
            }
        }
        out.push(row("KEYSPACE", &ks.name, &status));
    }
    // Only when there are any, so a healthy database's status keeps its shape.
    for (number, damage) in db.damaged_tables() {
        out.push(row("DAMAGED_TABLE", &format!("{number:06}.sst"), &damage));
    }
    let cache = live.block_cache;
    out.push(row(
        "BLOCK_CACHE",
        "shale",
        &format!(
            "capacity {} B; usage {} B; pinned {} B; hits {}; misses {}; hit rate {:.1}%; \
             inserts {}; evictions {}",
            cache.capacity,
            cache.usage,
            cache.pinned,
            cache.hits,
            cache.misses,
            percent(cache.hits, cache.hits + cache.misses),
            cache.inserts,
            cache.evictions
        ),
    ));
    let t = tdb.stats();
    out.push(row(
        "TRANSACTIONS",
        "shale",
        &format!(
            "commits {}; rollbacks {}; lock waits {}; lock wait timeouts {}; deadlocks {}; \
             snapshot conflicts {}; latest sequence number {}",
            t.commits,
            t.rollbacks,
            t.lock_waits,
            t.lock_timeouts,
            t.deadlocks,
            t.snapshot_conflicts,
            db.latest_seqno()
        ),
    ));
    out
}
