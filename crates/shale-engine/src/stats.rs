//! [`DbStats`]: counters of compaction work and write stalls since open, kept as atomics that
//! only background jobs and stalled write leaders touch (never the read path).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

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
}

/// `compactions 3 (trivial moves 1) by reason: level0-file-count 2 ...` then stalls, one
/// line each.
impl fmt::Display for DbStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "compactions {} (trivial moves {}), read {} B, written {} B",
            self.compactions,
            self.trivial_moves,
            self.compaction_bytes_read,
            self.compaction_bytes_written
        )?;
        writeln!(
            f,
            "by reason: level0-file-count {} level-score {} ttl {} tombstone-density {} \
             idle {} manual {}; tombstone-scan flushes {}",
            self.level0_compactions,
            self.level_score_compactions,
            self.ttl_compactions,
            self.tombstone_compactions,
            self.idle_compactions,
            self.manual_compactions,
            self.tombstone_scan_flushes
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
        )
    }
}

/// The counters behind [`DbStats`].
#[derive(Debug, Default)]
pub(crate) struct StatCounters {
    pub compactions: AtomicU64,
    pub trivial_moves: AtomicU64,
    pub level0_compactions: AtomicU64,
    pub level_score_compactions: AtomicU64,
    pub ttl_compactions: AtomicU64,
    pub tombstone_compactions: AtomicU64,
    pub idle_compactions: AtomicU64,
    pub manual_compactions: AtomicU64,
    pub tombstone_scan_flushes: AtomicU64,
    pub subcompactions: AtomicU64,
    pub compaction_bytes_read: AtomicU64,
    pub compaction_bytes_written: AtomicU64,
    pub stall_level0_slowdowns: AtomicU64,
    pub stall_level0_stops: AtomicU64,
    pub stall_pending_bytes_slowdowns: AtomicU64,
    pub stall_pending_bytes_stops: AtomicU64,
    pub stall_memtable_stops: AtomicU64,
    pub stall_micros: AtomicU64,
    pub longest_stop_micros: AtomicU64,
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
            manual_compactions: get(&self.manual_compactions),
            tombstone_scan_flushes: get(&self.tombstone_scan_flushes),
            subcompactions: get(&self.subcompactions),
            compaction_bytes_read: get(&self.compaction_bytes_read),
            compaction_bytes_written: get(&self.compaction_bytes_written),
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
        }
    }
}
