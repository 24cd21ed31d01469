//! [`DbStats`]: counters of flush and compaction work and write stalls since open, and
//! [`LevelIoStats`]: the same work by output level (the counters of `RocksDB`'s compaction stats
//! table, [`crate::CompactionStats`]). All are atomics that only background jobs (once per
//! job) and stalled write leaders touch; the read and write paths never do.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::version::MAX_NUM_LEVELS;

/// What the database did since it was opened ([`crate::Db::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DbStats {
    /// Compactions that merged and rewrote their inputs.
    pub compactions: u64,
    /// Compactions that moved their inputs a level down without rewriting them.
    pub trivial_moves: u64,
    /// Compactions and moves by reason (docs/compaction.md), among both: L0 at its trigger,
    pub level0_compactions: u64,
    /// a level over its target,
    pub level_score_compactions: u64,
    /// a file past the keyspace's TTL,
    pub ttl_compactions: u64,
    /// a file dense in deletions,
    pub tombstone_compactions: u64,
    /// writes stopped while reads went on,
    pub idle_compactions: u64,
    /// the oldest blob files past `blob_garbage_collection_force_threshold` garbage,
    pub blob_gc_compactions: u64,
    /// and `Db::compact_range` (waiting or in the background).
    pub manual_compactions: u64,
    /// Memtables frozen for flushing because an iterator step skipped
    /// `tombstone_scan_flush_trigger` entries.
    pub tombstone_scan_flushes: u64,
    /// Key ranges run by compactions split into subcompactions (`max_subcompactions`).
    pub subcompactions: u64,
    /// Bytes of table files compactions read (trivial moves read nothing).
    pub compaction_bytes_read: u64,
    /// Bytes of table files compactions wrote (trivial moves write nothing).
    pub compaction_bytes_written: u64,
    /// Blob files flushes and compactions wrote (docs/format/blob.md).
    pub blob_files_written: u64,
    /// Bytes of those blob files.
    pub blob_bytes_written: u64,
    /// Bytes of values compactions moved out of old blob files (garbage collection).
    pub blob_bytes_relocated: u64,
    /// Memtables flushed to L0 tables.
    pub flushes: u64,
    /// Bytes of the L0 tables flushes wrote.
    pub flush_bytes_written: u64,
    /// Bytes written to WAL files since open (closed WALs plus the current one's length,
    /// so counted per WAL switch, never per write).
    pub wal_bytes_written: u64,
    /// Write groups delayed because L0 reached `level0_slowdown_writes_trigger`.
    pub stall_level0_slowdowns: u64,
    /// Times writes stopped because L0 reached `level0_stop_writes_trigger`.
    pub stall_level0_stops: u64,
    /// Write groups delayed because the estimated compaction backlog reached
    /// `soft_pending_compaction_bytes_limit`.
    pub stall_pending_bytes_slowdowns: u64,
    /// Times writes stopped because it reached `hard_pending_compaction_bytes_limit`.
    pub stall_pending_bytes_stops: u64,
    /// Times writes stopped because `max_write_buffer_number` memtables were full.
    pub stall_memtable_stops: u64,
    /// Microseconds writes spent stalled, for every reason.
    pub stall_micros: u64,
    /// The longest single stop, in microseconds.
    pub longest_stop_micros: u64,
    /// The rate limiter's current bytes per second (it moves with auto-tuning); 0 without
    /// a limiter.
    pub rate_limit_bytes_per_sec: u64,
    /// Table bytes flushes wrote through the rate limiter.
    pub rate_limited_flush_bytes: u64,
    /// Table bytes compactions wrote through the rate limiter.
    pub rate_limited_compaction_bytes: u64,
    /// Stretches of WAL data the open dropped (a torn tail, or what the recovery mode
    /// skipped; [`crate::Db::recovery_report`] says which).
    pub recovery_wal_drops: u64,
    /// Bytes of WAL data the open dropped.
    pub recovery_wal_dropped_bytes: u64,
    /// Compactions that failed reading an input with an I/O error (retried after a backoff;
    /// docs/reliability.md, "A failed read of a compaction input").
    pub compaction_read_errors: u64,
    /// Tables marked damaged since open (checksum mismatch, bad block), counting the marks
    /// the MANIFEST remembered at open: never picked for a background compaction while live
    /// ([`crate::Db::damaged_tables`] lists those still live).
    pub damaged_tables: u64,
    /// Flush and compaction jobs that panicked (retried a few times, then sticky).
    pub background_job_panics: u64,
}

/// `flushes 4, written .. B; compactions 3 (trivial moves 1) ...`, then the compactions by
/// reason and the stalls, one line each.
impl fmt::Display for DbStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "WAL written {} B; flushes {}, written {} B; compactions {} (trivial moves {}), \
             read {} B, written {} B",
            self.wal_bytes_written,
            self.flushes,
            self.flush_bytes_written,
            self.compactions,
            self.trivial_moves,
            self.compaction_bytes_read,
            self.compaction_bytes_written
        )?;
        writeln!(
            f,
            "by reason: level0-file-count {} level-score {} ttl {} tombstone-density {} \
             idle {} blob-gc {} manual {}; tombstone-scan flushes {}",
            self.level0_compactions,
            self.level_score_compactions,
            self.ttl_compactions,
            self.tombstone_compactions,
            self.idle_compactions,
            self.blob_gc_compactions,
            self.manual_compactions,
            self.tombstone_scan_flushes
        )?;
        writeln!(
            f,
            "blob files written {}, {} B; relocated by garbage collection {} B",
            self.blob_files_written, self.blob_bytes_written, self.blob_bytes_relocated
        )?;
        write!(
            f,
            "stalls: level0 slowdowns {} stops {}, pending-bytes slowdowns {} stops {}, \
             memtable stops {}; {} us stalled, longest stop {} us",
            self.stall_level0_slowdowns,
            self.stall_level0_stops,
            self.stall_pending_bytes_slowdowns,
            self.stall_pending_bytes_stops,
            self.stall_memtable_stops,
            self.stall_micros,
            self.longest_stop_micros
        )?;
        if self.compaction_read_errors + self.damaged_tables + self.background_job_panics > 0 {
            write!(
                f,
                "\nbackground failures: compaction read errors {}, damaged tables {}, job \
                 panics {}",
                self.compaction_read_errors, self.damaged_tables, self.background_job_panics
            )?;
        }
        if self.recovery_wal_drops > 0 {
            write!(
                f,
                "\nrecovery dropped {} B of WAL data in {} places (Db::recovery_report)",
                self.recovery_wal_dropped_bytes, self.recovery_wal_drops
            )?;
        }
        Ok(())
    }
}

/// The counters behind [`DbStats`] and the per-level part of [`crate::CompactionStats`].
#[derive(Debug, Default)]
pub(crate) struct StatCounters {
    pub compactions: AtomicU64,
    pub trivial_moves: AtomicU64,
    pub level0_compactions: AtomicU64,
    pub level_score_compactions: AtomicU64,
    pub ttl_compactions: AtomicU64,
    pub tombstone_compactions: AtomicU64,
    pub idle_compactions: AtomicU64,
    pub blob_gc_compactions: AtomicU64,
    pub blob_files_written: AtomicU64,
    pub blob_bytes_written: AtomicU64,
    pub blob_bytes_relocated: AtomicU64,
    pub manual_compactions: AtomicU64,
    pub tombstone_scan_flushes: AtomicU64,
    pub subcompactions: AtomicU64,
    pub compaction_bytes_read: AtomicU64,
    pub compaction_bytes_written: AtomicU64,
    pub flushes: AtomicU64,
    pub flush_bytes_written: AtomicU64,
    /// Lengths of the WALs this process wrote and switched away from.
    pub closed_wal_bytes: AtomicU64,
    pub stall_level0_slowdowns: AtomicU64,
    pub stall_level0_stops: AtomicU64,
    pub stall_pending_bytes_slowdowns: AtomicU64,
    pub stall_pending_bytes_stops: AtomicU64,
    pub stall_memtable_stops: AtomicU64,
    pub stall_micros: AtomicU64,
    pub longest_stop_micros: AtomicU64,
    pub compaction_read_errors: AtomicU64,
    pub damaged_tables: AtomicU64,
    pub background_job_panics: AtomicU64,
    pub levels: LevelCounterTable,
}

/// One [`LevelCounters`] per possible level, indexed by level number.
#[derive(Debug)]
pub(crate) struct LevelCounterTable(Box<[LevelCounters]>);

impl Default for LevelCounterTable {
    fn default() -> Self {
        LevelCounterTable(
            (0..MAX_NUM_LEVELS)
                .map(|_| LevelCounters::default())
                .collect(),
        )
    }
}

impl std::ops::Index<usize> for LevelCounterTable {
    type Output = LevelCounters;

    /// Levels are below `MAX_NUM_LEVELS` (the MANIFEST refuses deeper ones).
    fn index(&self, level: usize) -> &LevelCounters {
        &self.0[level]
    }
}

/// Flush and compaction work into one level since open, every keyspace together. Reads are
/// counted at the output level, as `RocksDB` does: a compaction from L2 into L3 reads
/// `read_upper_bytes` from L2 and `read_output_bytes` from L3, and both are L3's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LevelIoStats {
    /// Flushes (L0) or rewriting compactions whose output is this level.
    pub jobs: u64,
    /// Bytes read from the level above (L0: 0, flushes read memory).
    pub read_upper_bytes: u64,
    /// Bytes read from this level itself.
    pub read_output_bytes: u64,
    /// Bytes of tables written into this level.
    pub written_bytes: u64,
    /// Bytes of tables trivially moved into this level (not rewritten).
    pub moved_bytes: u64,
    /// Wall-clock microseconds the jobs ran (reading, merging and writing).
    pub micros: u64,
}

impl LevelIoStats {
    /// Bytes written per byte that came from the level above (`RocksDB`'s per-level W-Amp);
    /// 0 when nothing came from above (L0, whose input is memory).
    pub fn write_amp(&self) -> f64 {
        ratio(self.written_bytes, self.read_upper_bytes)
    }

    /// Bytes read from either level.
    pub fn read_bytes(&self) -> u64 {
        self.read_upper_bytes + self.read_output_bytes
    }

    /// `self` and `other` added field by field.
    #[must_use]
    pub fn plus(&self, other: &LevelIoStats) -> LevelIoStats {
        LevelIoStats {
            jobs: self.jobs + other.jobs,
            read_upper_bytes: self.read_upper_bytes + other.read_upper_bytes,
            read_output_bytes: self.read_output_bytes + other.read_output_bytes,
            written_bytes: self.written_bytes + other.written_bytes,
            moved_bytes: self.moved_bytes + other.moved_bytes,
            micros: self.micros + other.micros,
        }
    }
}

/// `numerator / denominator`, 0 when the denominator is.
#[allow(clippy::cast_precision_loss)] // a ratio for people; f64 is exact far past any size
pub(crate) fn ratio(numerator: u64, denominator: u64) -> f64 {
    if denominator == 0 {
        return 0.0;
    }
    numerator as f64 / denominator as f64
}

/// The counters behind one [`LevelIoStats`]. Only flush and compaction jobs add to them, once
/// per job, so one atomic each is no contention.
#[derive(Debug, Default)]
pub(crate) struct LevelCounters {
    pub jobs: AtomicU64,
    pub read_upper_bytes: AtomicU64,
    pub read_output_bytes: AtomicU64,
    pub written_bytes: AtomicU64,
    pub moved_bytes: AtomicU64,
    pub micros: AtomicU64,
}

impl LevelCounters {
    /// Records a job that read `read_upper_bytes` + `read_output_bytes` and wrote
    /// `written_bytes` into this level in `micros`.
    pub(crate) fn record_job(
        &self,
        read_upper_bytes: u64,
        read_output_bytes: u64,
        written_bytes: u64,
        micros: u64,
    ) {
        StatCounters::add(&self.jobs, 1);
        StatCounters::add(&self.read_upper_bytes, read_upper_bytes);
        StatCounters::add(&self.read_output_bytes, read_output_bytes);
        StatCounters::add(&self.written_bytes, written_bytes);
        StatCounters::add(&self.micros, micros);
    }
}

impl StatCounters {
    pub(crate) fn add(counter: &AtomicU64, value: u64) {
        counter.fetch_add(value, Ordering::Relaxed);
    }

    /// Records a stop of `micros` microseconds (already counted by reason).
    pub(crate) fn record_stop(&self, micros: u64) {
        Self::add(&self.stall_micros, micros);
        self.longest_stop_micros
            .fetch_max(micros, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> DbStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        DbStats {
            compactions: get(&self.compactions),
            trivial_moves: get(&self.trivial_moves),
            level0_compactions: get(&self.level0_compactions),
            level_score_compactions: get(&self.level_score_compactions),
            ttl_compactions: get(&self.ttl_compactions),
            tombstone_compactions: get(&self.tombstone_compactions),
            idle_compactions: get(&self.idle_compactions),
            blob_gc_compactions: get(&self.blob_gc_compactions),
            blob_files_written: get(&self.blob_files_written),
            blob_bytes_written: get(&self.blob_bytes_written),
            blob_bytes_relocated: get(&self.blob_bytes_relocated),
            manual_compactions: get(&self.manual_compactions),
            tombstone_scan_flushes: get(&self.tombstone_scan_flushes),
            subcompactions: get(&self.subcompactions),
            compaction_bytes_read: get(&self.compaction_bytes_read),
            compaction_bytes_written: get(&self.compaction_bytes_written),
            flushes: get(&self.flushes),
            flush_bytes_written: get(&self.flush_bytes_written),
            wal_bytes_written: get(&self.closed_wal_bytes),
            stall_level0_slowdowns: get(&self.stall_level0_slowdowns),
            stall_level0_stops: get(&self.stall_level0_stops),
            stall_pending_bytes_slowdowns: get(&self.stall_pending_bytes_slowdowns),
            stall_pending_bytes_stops: get(&self.stall_pending_bytes_stops),
            stall_memtable_stops: get(&self.stall_memtable_stops),
            stall_micros: get(&self.stall_micros),
            longest_stop_micros: get(&self.longest_stop_micros),
            rate_limit_bytes_per_sec: 0,
            rate_limited_flush_bytes: 0,
            rate_limited_compaction_bytes: 0,
            recovery_wal_drops: 0,
            recovery_wal_dropped_bytes: 0,
            compaction_read_errors: get(&self.compaction_read_errors),
            damaged_tables: get(&self.damaged_tables),
            background_job_panics: get(&self.background_job_panics),
        }
    }

    /// The levels `0..num_levels`.
    pub(crate) fn level_snapshot(&self, num_levels: usize) -> Vec<LevelIoStats> {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        self.levels
            .0
            .iter()
            .take(num_levels)
            .map(|level| LevelIoStats {
                jobs: get(&level.jobs),
                read_upper_bytes: get(&level.read_upper_bytes),
                read_output_bytes: get(&level.read_output_bytes),
                written_bytes: get(&level.written_bytes),
                moved_bytes: get(&level.moved_bytes),
                micros: get(&level.micros),
            })
            .collect()
    }
}
