//! [`CompactionStats`]: `RocksDB`'s `** Compaction Stats **` table as a struct and as text
//! ([`crate::Db::compaction_stats`]): per level the files and bytes it holds now and its
//! compaction score, and since open the bytes flushes and compactions read into it and wrote
//! to it, their write amplification, seconds and job count; a Sum row; the stall counters.
//!
//! Files, sizes and scores come from the current Version, summed (scores: the highest) over
//! every keyspace; the work comes from the background jobs' counters ([`crate::stats`]), which
//! are kept for the whole database.

use std::fmt;

use crate::compaction::{level_targets, scores};
use crate::options::KeyspaceOptions;
use crate::stats::{ratio, DbStats, LevelIoStats};
use crate::version::Version;

/// One row of [`CompactionStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LevelCompactionStats {
    /// The level (0 for L0).
    pub level: usize,
    /// Table files in the level now.
    pub files: usize,
    /// Bytes of those files.
    pub size_bytes: u64,
    /// The picker's score now (L0: files over the trigger; from the base level to the second
    /// last: size over target; 1 or more means compaction is due); 0 where a level has none.
    pub score: f64,
    /// Flush and compaction work into this level since open.
    pub io: LevelIoStats,
}

/// Compaction statistics by level since open ([`crate::Db::compaction_stats`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompactionStats {
    /// Every level that holds files or received work, L0 first.
    pub levels: Vec<LevelCompactionStats>,
    /// The counters behind the Sum and stall lines (stalls, flushes, compactions by reason).
    pub totals: DbStats,
}

impl CompactionStats {
    /// The rows added up (score: 0; `level`: the number of levels shown).
    pub fn sum(&self) -> LevelCompactionStats {
        self.levels.iter().fold(
            LevelCompactionStats {
                level: self.levels.len(),
                ..LevelCompactionStats::default()
            },
            |sum, row| LevelCompactionStats {
                files: sum.files + row.files,
                size_bytes: sum.size_bytes + row.size_bytes,
                io: sum.io.plus(&row.io),
                ..sum
            },
        )
    }

    /// Bytes flushes and compactions wrote per byte flushed from memtables (`RocksDB`'s Sum
    /// W-Amp; the WAL is not counted); 0 before the first flush.
    pub fn write_amp(&self) -> f64 {
        let flushed = self
            .levels
            .iter()
            .find(|row| row.level == 0)
            .map_or(0, |row| row.io.written_bytes);
        ratio(self.sum().io.written_bytes, flushed)
    }

    /// The table for `num_levels` levels of `version`, the keyspaces' options as (id,
    /// options), and the counters.
    pub(crate) fn build(
        version: &Version,
        keyspaces: &[(u32, KeyspaceOptions)],
        io: &[LevelIoStats],
        totals: &DbStats,
    ) -> CompactionStats {
        let num_levels = version.num_levels();
        let mut levels: Vec<LevelCompactionStats> = (0..num_levels)
            .map(|level| LevelCompactionStats {
                level,
                io: io.get(level).copied().unwrap_or_default(),
                ..LevelCompactionStats::default()
            })
            .collect();
        for (keyspace, options) in keyspaces {
            for row in &mut levels {
                row.files += version.num_files(*keyspace, row.level);
                row.size_bytes += version.level_size(*keyspace, row.level);
            }
            let targets = level_targets(version, *keyspace, options);
            for (level, score) in scores(version, *keyspace, options, &targets) {
                if let Some(row) = levels.get_mut(level) {
                    row.score = row.score.max(score);
                }
            }
        }
        levels.retain(|row| row.files > 0 || row.io != LevelIoStats::default());
        CompactionStats {
            levels,
            totals: *totals,
        }
    }
}

/// Bytes in the MB of the table (as `RocksDB`'s).
const MB: f64 = 1_048_576.0;

#[allow(clippy::cast_precision_loss)] // sizes for people
fn mb(bytes: u64) -> f64 {
    bytes as f64 / MB
}

#[allow(clippy::cast_precision_loss)]
fn seconds(micros: u64) -> f64 {
    micros as f64 / 1e6
}

/// `** Compaction Stats **`, then one line per level, the Sum line and the stall line, with
/// `RocksDB`'s column names (sizes in MB where `RocksDB` prints GB: the tables here are small).
impl fmt::Display for CompactionStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "** Compaction Stats **")?;
        writeln!(
            f,
            "Level Files  Size(MB) Score  Read(MB)    Rn(MB)  Rnp1(MB) Write(MB) Moved(MB) \
             W-Amp Comp(sec) Comp(cnt)"
        )?;
        writeln!(f, "{}", "-".repeat(112))?;
        let row = |f: &mut fmt::Formatter<'_>, name: &str, row: &LevelCompactionStats, w: f64| {
            writeln!(
                f,
                "{name:>5} {:5} {:9.1} {:5.2} {:9.1} {:9.1} {:9.1} {:9.1} {:9.1} {:5.2} {:9.1} {:9}",
                row.files,
                mb(row.size_bytes),
                row.score,
                mb(row.io.read_bytes()),
                mb(row.io.read_upper_bytes),
                mb(row.io.read_output_bytes),
                mb(row.io.written_bytes),
                mb(row.io.moved_bytes),
                w,
                seconds(row.io.micros),
                row.io.jobs,
            )
        };
        for level in &self.levels {
            row(f, &format!("L{}", level.level), level, level.io.write_amp())?;
        }
        row(f, "Sum", &self.sum(), self.write_amp())?;
        let t = &self.totals;
        write!(
            f,
            "Stalls(count): {} level0_slowdown, {} level0_numfiles, {} slowdown for \
             pending_compaction_bytes, {} stop for pending_compaction_bytes, {} memtable_compaction; \
             stalled {:.3} s, longest stop {:.3} s",
            t.stall_level0_slowdowns,
            t.stall_level0_stops,
            t.stall_pending_bytes_slowdowns,
            t.stall_pending_bytes_stops,
            t.stall_memtable_stops,
            seconds(t.stall_micros),
            seconds(t.longest_stop_micros),
        )
    }
}
