//! The compaction picker: a pure function from a [`Version`] and a keyspace's options to the
//! compaction to run next and why (docs/compaction.md). It does no I/O and holds no lock, so
//! it is tested with LSM shapes written as text (`testdata/compaction/`, see `picker_tests`).
//!
//! Leveled compaction with dynamic level bytes:
//! - the base level (where L0 goes) and every level's target size are derived from the size of
//!   the largest level, from the bottom up ([`level_targets`]), so the levels above the last
//!   hold about 1/multiplier of it and space amplification stays near 1.11;
//! - each level has a score ([`scores`]): L0 by file count over `level0_compaction_trigger`,
//!   the levels from the base down to the second last by size over target; the last level has
//!   no score (nothing is below it);
//! - the highest score of at least 1 wins (ties: the upper level); from L0 every file is taken
//!   (L0 files overlap, and taking all keeps the newest-first order trivially right); from a
//!   deeper level the file whose overlap with the next level is least relative to its own size;
//! - when no level scores 1, a file whose oldest entry is older than the keyspace's `ttl` is
//!   compacted (reason `ttl`, so expired entries are dropped without waiting for size
//!   triggers), else the file densest in deletions at or above `tombstone_density_percent`
//!   (reason `tombstone-density`, so seeks stop skipping tombstones); from L0 every file is
//!   taken as above, from a deeper level that one file; a last-level file past the TTL is
//!   rewritten in place (nothing lies below it), and none is chosen for density (its
//!   tombstones are already dropped unless a snapshot needs them);
//! - then, with blob garbage collection on, when the blob files within the age cutoff (the
//!   oldest `blob_garbage_collection_age_cutoff` of the keyspace's blob files) hold at least
//!   `blob_garbage_collection_force_threshold` garbage by bytes, a file whose oldest blob
//!   reference is into the oldest blob file (reason `blob-gc`: compacting it relocates those
//!   values, so the old blob files become all garbage and are deleted); L0 as above, a
//!   last-level file in place;
//! - inputs that overlap nothing in the output level move there without being rewritten (a
//!   trivial move): one file from L1 or deeper, or L0 files that overlap neither each other nor
//!   the output level; unless an input holds deletions and nothing lies below the output level
//!   (invariant 4).
//!
//! Running compactions (`claims`): [`pick`] is given what the keyspace's running compactions
//! claim ([`Busy`]) and returns only a compaction that [`Busy::allows`]; the level scores
//! then count only the bytes (L0: the files) no running compaction takes, as `RocksDB`'s
//! `being_compacted` does, and when the best level's compaction is not allowed the next
//! file of that level by overlap, then the next level by score, is tried (`RocksDB`'s
//! `LevelCompactionPicker`). The TTL, tombstone and blob reasons choose among free files.
//!
//! Invariants of a [`Compaction`] it returns:
//! 1. `output_level > start_level`, and `output_level` is `start_level + 1` or, from L0, the
//!    base level (every level in between is empty).
//! 2. The outputs' key range, the union of every input's, overlaps no file of `output_level`
//!    that is not among `output_inputs` (levels stay non-overlapping after the merge).
//! 3. `drop_tombstones` only when no file below `output_level` overlaps that range.
//! 4. No `trivial_move` of an input holding deletions when `drop_tombstones`: it is rewritten,
//!    so deletions reach a level with nothing below them only through a merge that drops all
//!    no snapshot needs.
//! 5. From [`pick`]: [`Busy::allows`] it (no input claimed, no overlap with an output range
//!    being written into its output level, not from L0 while an L0 compaction runs).

use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use shale_sst::Comparator;

use crate::options::KeyspaceOptions;
use crate::version::{FileMetaData, Version};

/// Why a compaction was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompactionReason {
    /// L0 has reached `level0_compaction_trigger` files.
    Level0FileCount,
    /// A level is larger than its target.
    LevelScore,
    /// A file's oldest entry is older than the keyspace's `ttl`.
    Ttl,
    /// A file holds at least `tombstone_density_percent` deletions.
    TombstoneDensity,
    /// Writes stopped while reads continued for `idle_compaction_after`: L0 goes down.
    Idle,
    /// The oldest blob files hold `blob_garbage_collection_force_threshold` garbage.
    BlobGarbage,
    /// `Db::compact_range` asked for it.
    Manual,
}

impl CompactionReason {
    pub(crate) fn name(self) -> &'static str {
        match self {
            CompactionReason::Level0FileCount => "level0-file-count",
            CompactionReason::LevelScore => "level-score",
            CompactionReason::Ttl => "ttl",
            CompactionReason::TombstoneDensity => "tombstone-density",
            CompactionReason::Idle => "idle",
            CompactionReason::BlobGarbage => "blob-gc",
            CompactionReason::Manual => "manual",
        }
    }
}

/// One compaction the picker chose.
#[derive(Debug, Clone)]
pub(crate) struct Compaction {
    pub keyspace: u32,
    pub reason: CompactionReason,
    /// The score that chose it: 1.0 and above for the size reasons, the deletion ratio for
    /// `tombstone-density`, the age over the TTL for `ttl`, 0 for manual and idle ones.
    pub score: f64,
    pub start_level: usize,
    pub output_level: usize,
    /// Files of `start_level` (L0: newest first; deeper: by key).
    pub inputs: Vec<Arc<FileMetaData>>,
    /// Files of `output_level` overlapping the inputs, by key.
    pub output_inputs: Vec<Arc<FileMetaData>>,
    /// Files of `output_level + 1` overlapping the inputs: outputs are cut before they would
    /// overlap too much of them, so a later compaction of one output stays small.
    pub grandparents: Vec<Arc<FileMetaData>>,
    /// No file below `output_level` overlaps the inputs: deletions every snapshot sees can go.
    pub drop_tombstones: bool,
    /// `output_level` is the last level or every deeper level is empty (bottommost codec).
    pub bottommost_level: bool,
    /// Move the inputs to `output_level` without rewriting them.
    pub trivial_move: bool,
}

impl Compaction {
    /// Every input file with its level.
    pub(crate) fn all_inputs(&self) -> impl Iterator<Item = (usize, &Arc<FileMetaData>)> {
        self.inputs
            .iter()
            .map(|f| (self.start_level, f))
            .chain(self.output_inputs.iter().map(|f| (self.output_level, f)))
    }

    pub(crate) fn input_bytes(&self) -> u64 {
        self.all_inputs().map(|(_, f)| f.size).sum()
    }

    /// The level and user-key range its outputs are written to: every output key comes from
    /// an input, so the union of the inputs' ranges bounds them (`None`: no inputs).
    pub(crate) fn output_range(&self, cmp: &dyn Comparator) -> Option<OutputRange> {
        let (smallest, largest) = key_range(cmp, self.all_inputs().map(|(_, f)| f))?;
        Some(OutputRange {
            level: self.output_level,
            smallest,
            largest,
        })
    }
}

/// The level and inclusive user-key range a running compaction writes its outputs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OutputRange {
    pub level: usize,
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
}

impl OutputRange {
    /// Whether `[smallest, largest]` (inclusive user keys) shares a key with this range.
    pub(crate) fn overlaps(&self, cmp: &dyn Comparator, smallest: &[u8], largest: &[u8]) -> bool {
        cmp.compare(&self.smallest, largest).is_le() && cmp.compare(smallest, &self.largest).is_le()
    }
}

/// What the running compactions of one keyspace claim (`claims`), for [`pick`].
#[derive(Debug, Default)]
pub(crate) struct Busy {
    /// The numbers of every file a running compaction reads (`RocksDB`'s `being_compacted`).
    pub files: HashSet<u64>,
    /// The ranges running compactions write to.
    pub outputs: Vec<OutputRange>,
    /// A compaction from L0 runs.
    pub level0: bool,
}

impl Busy {
    /// Whether `compaction` may run beside the running ones: it is not from L0 while one from
    /// L0 runs (L0 files overlap each other), none of its inputs (the output level's included)
    /// is claimed, and its output range overlaps no range being written into its output
    /// level. So no file is read by two compactions, two never write overlapping ranges into
    /// one level, and none writes where another's inputs are.
    pub(crate) fn allows(&self, cmp: &dyn Comparator, compaction: &Compaction) -> bool {
        if compaction.start_level == 0 && self.level0 {
            return false;
        }
        if compaction
            .all_inputs()
            .any(|(_, f)| self.files.contains(&f.number))
        {
            return false;
        }
        compaction.output_range(cmp).is_none_or(|range| {
            !self.outputs.iter().any(|running| {
                running.level == range.level
                    && running.overlaps(cmp, &range.smallest, &range.largest)
            })
        })
    }

    fn is_free(&self, file: &FileMetaData) -> bool {
        !self.files.contains(&file.number)
    }
}

/// `L0 #1,#2 + L6 #5 -> L6 (level0-file-count, score 1.00) trivial-move drop-tombstones`.
impl fmt::Display for Compaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let numbers = |files: &[Arc<FileMetaData>]| {
            files
                .iter()
                .map(|f| format!("#{}", f.number))
                .collect::<Vec<_>>()
                .join(",")
        };
        write!(f, "L{} {}", self.start_level, numbers(&self.inputs))?;
        if !self.output_inputs.is_empty() {
            write!(
                f,
                " + L{} {}",
                self.output_level,
                numbers(&self.output_inputs)
            )?;
        }
        write!(
            f,
            " -> L{} ({}, score {:.2})",
            self.output_level,
            self.reason.name(),
            self.score
        )?;
        if !self.grandparents.is_empty() {
            write!(f, " grandparents {}", numbers(&self.grandparents))?;
        }
        if self.trivial_move {
            write!(f, " trivial-move")?;
        }
        if self.drop_tombstones {
            write!(f, " drop-tombstones")?;
        }
        if self.bottommost_level {
            write!(f, " bottommost")?;
        }
        Ok(())
    }
}

/// The base level and the target size of every level of a keyspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LevelTargets {
    /// Where L0 is compacted to; the levels between L0 and it are empty.
    pub base_level: usize,
    /// Target bytes per level; `u64::MAX` for L0 and the levels above the base.
    pub max_bytes: Vec<u64>,
}

/// Dynamic level bytes: the last level's target is the size of the largest level; each level
/// above is `multiplier` times smaller, up to the first level whose target would fall to
/// `max_bytes_for_level_base` or below, which becomes the base level. No target is set below
/// `max_bytes_for_level_base` (an hourglass with levels smaller than L0 would only add
/// rewrites). An empty keyspace has the last level as its base, so L0 first goes straight
/// to the bottom.
pub(crate) fn level_targets(
    version: &Version,
    keyspace: u32,
    options: &KeyspaceOptions,
) -> LevelTargets {
    let num_levels = version.num_levels();
    let last = num_levels - 1;
    let base_bytes = options.max_bytes_for_level_base;
    let multiplier = u64::from(options.max_bytes_for_level_multiplier);
    let mut max_bytes = vec![u64::MAX; num_levels];
    let first_non_empty = (1..num_levels).find(|&level| version.num_files(keyspace, level) > 0);
    let Some(first_non_empty) = first_non_empty else {
        max_bytes[last] = base_bytes;
        return LevelTargets {
            base_level: last,
            max_bytes,
        };
    };
    let largest = (1..num_levels)
        .map(|level| version.level_size(keyspace, level))
        .max()
        .unwrap_or(0);
    // The size the first non-empty level would get with the largest level at the bottom.
    let mut size = largest;
    for _ in first_non_empty..last {
        size /= multiplier;
    }
    let mut base_level = first_non_empty;
    let base_size = if size <= base_bytes / multiplier {
        base_bytes
    } else {
        while base_level > 1 && size > base_bytes {
            base_level -= 1;
            size /= multiplier;
        }
        size.min(base_bytes)
    };
    let mut target = base_size;
    for (level, slot) in max_bytes.iter_mut().enumerate().skip(base_level) {
        if level > base_level {
            target = target.saturating_mul(multiplier);
        }
        *slot = target.max(base_bytes);
    }
    LevelTargets {
        base_level,
        max_bytes,
    }
}

/// The score of every level that has one, as (level, score), L0 first.
pub(crate) fn scores(
    version: &Version,
    keyspace: u32,
    options: &KeyspaceOptions,
    targets: &LevelTargets,
) -> Vec<(usize, f64)> {
    free_scores(version, keyspace, options, targets, &Busy::default())
}

/// [`scores`] counting only the files no running compaction claims (`RocksDB` scores by the
/// bytes not being compacted): a level whose excess is already being compacted away does not
/// start more compactions of it.
fn free_scores(
    version: &Version,
    keyspace: u32,
    options: &KeyspaceOptions,
    targets: &LevelTargets,
    busy: &Busy,
) -> Vec<(usize, f64)> {
    let last = version.num_levels() - 1;
    let free = |level: usize| {
        version
            .files(keyspace, level)
            .iter()
            .filter(|f| busy.is_free(f))
    };
    #[allow(clippy::cast_precision_loss)] // scores are ratios; f64 is exact far past any count
    let mut scores = vec![(
        0,
        free(0).count() as f64 / options.level0_compaction_trigger as f64,
    )];
    for level in targets.base_level..last {
        let bytes: u64 = free(level).map(|f| f.size).sum();
        #[allow(clippy::cast_precision_loss)]
        let score = bytes as f64 / targets.max_bytes[level] as f64;
        scores.push((level, score));
    }
    scores
}

/// An estimate of the bytes compaction must still rewrite to bring every level within its
/// target: L0 (when at its trigger) flows into the base level; from there down, each level's
/// excess over its target flows into the next level, and moving `x` bytes down one level
/// rewrites them together with about `x * next / this` bytes of the next level. Drives the
/// pending-compaction-bytes write stalls.
pub(crate) fn estimated_pending_bytes(
    version: &Version,
    keyspace: u32,
    options: &KeyspaceOptions,
) -> u64 {
    let targets = level_targets(version, keyspace, options);
    let last = version.num_levels() - 1;
    let mut inflow = if version.num_files(keyspace, 0) >= options.level0_compaction_trigger {
        version.level_size(keyspace, 0)
    } else {
        0
    };
    let mut pending = u128::from(inflow);
    for level in targets.base_level..last {
        let size = version.level_size(keyspace, level).saturating_add(inflow);
        let target = targets.max_bytes[level];
        if size <= target {
            inflow = 0;
            continue;
        }
        let excess = size - target;
        let next = version.level_size(keyspace, level + 1);
        // excess * (1 + next / size), in integers.
        pending += u128::from(excess) + u128::from(excess) * u128::from(next) / u128::from(size);
        inflow = excess;
    }
    u64::try_from(pending).unwrap_or(u64::MAX)
}

/// The compaction keyspace `keyspace` needs most that `busy` allows (invariant 5): a level
/// scoring 1 or more (the highest first), else a file past the TTL, else a file dense in
/// deletions, else one holding the oldest blob references. `now` is the clock in seconds
/// since the epoch.
pub(crate) fn pick(
    version: &Version,
    keyspace: u32,
    options: &KeyspaceOptions,
    now: u64,
    busy: &Busy,
) -> Option<Compaction> {
    let targets = level_targets(version, keyspace, options);
    let mut scores = free_scores(version, keyspace, options, &targets, busy);
    // Highest first; the sort is stable, so ties keep the upper level first.
    scores.sort_by(|a, b| b.1.total_cmp(&a.1));
    let cmp = version.comparator();
    let by_score = scores
        .iter()
        .take_while(|(_, score)| *score >= 1.0)
        .find_map(|&(level, score)| {
            pick_level(version, keyspace, &**cmp, &targets, (level, score), busy)
        });
    if by_score.is_some() {
        return by_score;
    }
    let by_file = [
        (
            CompactionReason::Ttl,
            expired_file(version, keyspace, options, now, busy),
        ),
        (
            CompactionReason::TombstoneDensity,
            densest_tombstone_file(version, keyspace, options, busy),
        ),
        (
            CompactionReason::BlobGarbage,
            blob_garbage_file(version, keyspace, options, busy),
        ),
    ];
    by_file.into_iter().find_map(|(reason, chosen)| {
        let (level, file, score) = chosen?;
        let compaction = of_file(
            version,
            keyspace,
            &**cmp,
            &targets,
            reason,
            (level, file, score),
        );
        Some(compaction).filter(|c| busy.allows(&**cmp, c))
    })
}

/// The compaction of `level` (scoring `score`, 1 or more) that `busy` allows: from L0 every
/// file into the base level; deeper, the free file whose overlap with the next level is least
/// relative to its own size, else the next such file (ties: the first by key).
fn pick_level(
    version: &Version,
    keyspace: u32,
    cmp: &dyn Comparator,
    targets: &LevelTargets,
    (level, score): (usize, f64),
    busy: &Busy,
) -> Option<Compaction> {
    if level == 0 {
        let inputs = version.files(keyspace, 0).to_vec();
        let reason = CompactionReason::Level0FileCount;
        let compaction = complete(
            version,
            keyspace,
            cmp,
            reason,
            score,
            0,
            targets.base_level,
            inputs,
        );
        return Some(compaction).filter(|c| busy.allows(cmp, c));
    }
    files_by_overlap(version, keyspace, level, busy)
        .into_iter()
        .map(|file| {
            let reason = CompactionReason::LevelScore;
            complete(
                version,
                keyspace,
                cmp,
                reason,
                score,
                level,
                level + 1,
                vec![file],
            )
        })
        .find(|c| busy.allows(cmp, c))
}

/// The compaction for `file` of `level`, chosen for `reason`: from L0 every file goes to the
/// base level (L0 files overlap, and taking all keeps the newest-first order trivially
/// right); a last-level file is rewritten in place (nothing lies below it); any other goes
/// to the next level.
fn of_file(
    version: &Version,
    keyspace: u32,
    cmp: &dyn Comparator,
    targets: &LevelTargets,
    reason: CompactionReason,
    (level, file, score): (usize, Arc<FileMetaData>, f64),
) -> Compaction {
    if level == version.num_levels() - 1 {
        return Compaction {
            keyspace,
            reason,
            score,
            start_level: level,
            output_level: level,
            inputs: vec![file],
            output_inputs: Vec::new(),
            grandparents: Vec::new(),
            drop_tombstones: true,
            bottommost_level: true,
            trivial_move: false,
        };
    }
    let (inputs, output_level) = if level == 0 {
        (version.files(keyspace, 0).to_vec(), targets.base_level)
    } else {
        (vec![file], level + 1)
    };
    complete(
        version,
        keyspace,
        cmp,
        reason,
        score,
        level,
        output_level,
        inputs,
    )
}

/// The files the tombstone reason may choose, with their levels: every level but the last
/// (nothing lies below it to compact into).
fn files_above_last_level(
    version: &Version,
    keyspace: u32,
) -> impl Iterator<Item = (usize, &Arc<FileMetaData>)> {
    (0..version.num_levels() - 1).flat_map(move |level| {
        version
            .files(keyspace, level)
            .iter()
            .map(move |f| (level, f))
    })
}

/// The file of any level whose oldest entry is oldest, if that is older than the keyspace's
/// `ttl` (ties: the upper level, then the first by key), with its age over the TTL. A file
/// without a recorded time is never chosen.
fn expired_file(
    version: &Version,
    keyspace: u32,
    options: &KeyspaceOptions,
    now: u64,
    busy: &Busy,
) -> Option<(usize, Arc<FileMetaData>, f64)> {
    let ttl = options.ttl?.as_secs().max(1);
    let mut best: Option<(usize, &Arc<FileMetaData>, u64)> = None;
    let all_levels = (0..version.num_levels()).flat_map(|level| {
        version
            .files(keyspace, level)
            .iter()
            .map(move |f| (level, f))
    });
    for (level, file) in all_levels.filter(|(_, f)| busy.is_free(f)) {
        let Some(time) = file.oldest_entry_time() else {
            continue;
        };
        let age = now.saturating_sub(time);
        if age > ttl && best.is_none_or(|(_, _, best_age)| age > best_age) {
            best = Some((level, file, age));
        }
    }
    #[allow(clippy::cast_precision_loss)] // a ratio for display
    best.map(|(level, file, age)| (level, file.clone(), age as f64 / ttl as f64))
}

/// The file with the highest share of deletions, if it holds at least
/// `tombstone_density_percent` of them and `tombstone_min_count` in all (ties: the upper
/// level, then the first by key), with that share.
fn densest_tombstone_file(
    version: &Version,
    keyspace: u32,
    options: &KeyspaceOptions,
    busy: &Busy,
) -> Option<(usize, Arc<FileMetaData>, f64)> {
    let percent = u128::from(options.tombstone_density_percent);
    if percent == 0 {
        return None;
    }
    let mut best: Option<(usize, &Arc<FileMetaData>)> = None;
    let free = files_above_last_level(version, keyspace).filter(|(_, f)| busy.is_free(f));
    for (level, file) in free {
        let (deletions, entries) = (
            u128::from(file.num_deletions),
            u128::from(file.num_entries.max(1)),
        );
        if file.num_deletions < options.tombstone_min_count || deletions * 100 < percent * entries {
            continue;
        }
        // deletions / entries > best's, without division.
        let better = best.is_none_or(|(_, b)| {
            deletions * u128::from(b.num_entries.max(1)) > u128::from(b.num_deletions) * entries
        });
        if better {
            best = Some((level, file));
        }
    }
    #[allow(clippy::cast_precision_loss)] // a ratio for display
    best.map(|(level, file)| {
        let ratio = file.num_deletions as f64 / file.num_entries.max(1) as f64;
        (level, file.clone(), ratio)
    })
}

/// The blob file number below which compactions relocate the values references point at
/// (`None`: relocate nothing): the number of the first blob file past the oldest
/// `blob_garbage_collection_age_cutoff` of the keyspace's blob files, by number.
pub(crate) fn blob_gc_cutoff(
    version: &Version,
    keyspace: u32,
    options: &KeyspaceOptions,
) -> Option<u64> {
    if !options.enable_blob_garbage_collection {
        return None;
    }
    let numbers: Vec<u64> = version
        .keyspace_blob_files(keyspace)
        .map(|b| b.number)
        .collect();
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )] // a fraction (0..=1) of a file count
    let within = (numbers.len() as f64 * options.blob_garbage_collection_age_cutoff) as usize;
    if within == 0 {
        return None;
    }
    Some(numbers.get(within).copied().unwrap_or(u64::MAX))
}

/// When the blob files within the age cutoff hold at least the force threshold of garbage
/// (by bytes), a file referencing the oldest blob file (the upper level first, then the
/// first by key), with that garbage ratio. A threshold of 1 never fires: a blob file all
/// garbage is deleted at once.
fn blob_garbage_file(
    version: &Version,
    keyspace: u32,
    options: &KeyspaceOptions,
    busy: &Busy,
) -> Option<(usize, Arc<FileMetaData>, f64)> {
    let cutoff = blob_gc_cutoff(version, keyspace, options)?;
    let threshold = options.blob_garbage_collection_force_threshold;
    if threshold >= 1.0 {
        return None;
    }
    let batch: Vec<_> = version
        .keyspace_blob_files(keyspace)
        .take_while(|b| b.number < cutoff)
        .collect();
    let oldest = batch.first()?.number;
    let total: u64 = batch.iter().map(|b| b.total_bytes).sum();
    let garbage: u64 = batch.iter().map(|b| b.garbage_bytes).sum();
    #[allow(clippy::cast_precision_loss)] // a ratio
    let ratio = garbage as f64 / total.max(1) as f64;
    // Without garbage a rewrite only moves values to a newer file, which would be picked
    // again in its turn (a threshold of 0 would loop).
    if garbage == 0 || ratio < threshold {
        return None;
    }
    (0..version.num_levels()).find_map(|level| {
        version
            .files(keyspace, level)
            .iter()
            .find(|f| f.oldest_blob_file == Some(oldest) && busy.is_free(f))
            .map(|f| (level, f.clone(), ratio))
    })
}

/// The compaction of every L0 file into the base level, when L0 holds any, for a database whose
/// writes stopped while reads go on (reason `idle`): reads then stop merging L0 files.
pub(crate) fn pick_idle(
    version: &Version,
    keyspace: u32,
    options: &KeyspaceOptions,
) -> Option<Compaction> {
    let mut compaction = pick_manual(version, keyspace, options, 0, None, None)?;
    compaction.reason = CompactionReason::Idle;
    Some(compaction)
}

/// The manual compaction of `level` of `keyspace` over `[start, end]` (`None`: unbounded), or
/// `None` when the level holds nothing there or is the last level. From L0 every file is
/// taken; deeper, every file of the level overlapping the range. The output level is the base
/// level from L0, else the next level.
pub(crate) fn pick_manual(
    version: &Version,
    keyspace: u32,
    options: &KeyspaceOptions,
    level: usize,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Option<Compaction> {
    let last = version.num_levels() - 1;
    if level >= last {
        return None;
    }
    let cmp = version.comparator();
    let files = version.files(keyspace, level);
    let inputs: Vec<Arc<FileMetaData>> = if level == 0 {
        files.to_vec()
    } else {
        files
            .iter()
            .filter(|f| {
                start.is_none_or(|s| cmp.compare(f.largest.user_key(), s) != Ordering::Less)
                    && end
                        .is_none_or(|e| cmp.compare(f.smallest.user_key(), e) != Ordering::Greater)
            })
            .cloned()
            .collect()
    };
    if inputs.is_empty() {
        return None;
    }
    let output_level = if level == 0 {
        level_targets(version, keyspace, options).base_level
    } else {
        level + 1
    };
    Some(complete(
        version,
        keyspace,
        &**cmp,
        CompactionReason::Manual,
        0.0,
        level,
        output_level,
        inputs,
    ))
}

/// The files of `level` no running compaction claims, the least overlap with the next level
/// relative to its own size first (ties: by key). Rewriting the first moves the most bytes
/// down per byte rewritten.
fn files_by_overlap(
    version: &Version,
    keyspace: u32,
    level: usize,
    busy: &Busy,
) -> Vec<Arc<FileMetaData>> {
    let mut ranked: Vec<(u128, u128, &Arc<FileMetaData>)> = version
        .files(keyspace, level)
        .iter()
        .filter(|f| busy.is_free(f))
        .map(|file| {
            let overlap: u64 = version
                .overlapping_files(
                    keyspace,
                    level + 1,
                    file.smallest.user_key(),
                    file.largest.user_key(),
                )
                .iter()
                .map(|f| f.size)
                .sum();
            (u128::from(overlap), u128::from(file.size.max(1)), file)
        })
        .collect();
    // overlap_a / size_a against overlap_b / size_b, without division; the sort is stable.
    ranked.sort_by(|(overlap_a, size_a, _), (overlap_b, size_b, _)| {
        (overlap_a * size_b).cmp(&(overlap_b * size_a))
    });
    ranked
        .into_iter()
        .map(|(_, _, file)| file.clone())
        .collect()
}

/// The user-key range `[smallest, largest]` of `files` (not empty).
fn key_range<'a>(
    cmp: &dyn Comparator,
    files: impl Iterator<Item = &'a Arc<FileMetaData>>,
) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut range: Option<(&[u8], &[u8])> = None;
    for file in files {
        let (smallest, largest) = (file.smallest.user_key(), file.largest.user_key());
        range = Some(match range {
            None => (smallest, largest),
            Some((lo, hi)) => (
                if cmp.compare(smallest, lo).is_lt() {
                    smallest
                } else {
                    lo
                },
                if cmp.compare(largest, hi).is_gt() {
                    largest
                } else {
                    hi
                },
            ),
        });
    }
    range.map(|(lo, hi)| (lo.to_vec(), hi.to_vec()))
}

/// Fills in the output-level inputs, grandparents, bottommost flags and the trivial-move
/// decision for `inputs` of `start_level`.
#[allow(clippy::too_many_arguments)]
fn complete(
    version: &Version,
    keyspace: u32,
    cmp: &dyn Comparator,
    reason: CompactionReason,
    score: f64,
    start_level: usize,
    output_level: usize,
    inputs: Vec<Arc<FileMetaData>>,
) -> Compaction {
    let num_levels = version.num_levels();
    let (smallest, largest) = key_range(cmp, inputs.iter()).unwrap_or_default();
    let output_inputs = version.overlapping_files(keyspace, output_level, &smallest, &largest);
    // The range of everything merged (invariant 2: the output-level inputs are contiguous, so
    // their union with the inputs' range overlaps no other file of the output level).
    let (smallest, largest) =
        key_range(cmp, inputs.iter().chain(&output_inputs)).unwrap_or_default();
    let grandparents = if output_level + 1 < num_levels {
        version.overlapping_files(keyspace, output_level + 1, &smallest, &largest)
    } else {
        Vec::new()
    };
    let drop_tombstones = (output_level + 1..num_levels).all(|level| {
        version
            .overlapping_files(keyspace, level, &smallest, &largest)
            .is_empty()
    });
    let bottommost_level =
        (output_level + 1..num_levels).all(|level| version.num_files(keyspace, level) == 0);
    // Invariant 4: a move keeps every entry, and where nothing lies below, no later
    // compaction would drop the deletions it carried (last-level tables are never picked for
    // them, and `compact_range` merges only what lies above): rewrite such inputs instead.
    let carries_deletions = drop_tombstones && inputs.iter().any(|f| f.num_deletions > 0);
    let trivial_move = output_inputs.is_empty()
        && !carries_deletions
        && (start_level > 0 && inputs.len() == 1 || start_level == 0 && disjoint(cmp, &inputs));
    Compaction {
        keyspace,
        reason,
        score,
        start_level,
        output_level,
        inputs,
        output_inputs,
        grandparents,
        drop_tombstones,
        bottommost_level,
        trivial_move,
    }
}

/// Whether no two of `files` overlap by user key (so they can sit side by side in one level).
fn disjoint(cmp: &dyn Comparator, files: &[Arc<FileMetaData>]) -> bool {
    let mut sorted: Vec<&Arc<FileMetaData>> = files.iter().collect();
    sorted.sort_by(|a, b| cmp.compare(a.smallest.user_key(), b.smallest.user_key()));
    sorted.windows(2).all(|pair| {
        let order = cmp.compare(pair[0].largest.user_key(), pair[1].smallest.user_key());
        order.is_lt() || (order.is_eq() && pair[0].largest_is_exclusive())
    })
}
