//! Compaction: leveled, with dynamic level bytes (docs/compaction.md). The pure picker
//! (`picker`) chooses the work from a Version and the keyspace's options; this module runs it:
//! a trivial move is one MANIFEST edit, anything else merges the inputs into new tables of the
//! output level, cut at `target_file_size` and before an output would overlap more than
//! `GRANDPARENT_OVERLAP_FACTOR` target sizes of the level below it. One compaction runs per
//! keyspace at a time (`DbState::compacting`), background or manual (`Db::compact_range`).
//!
//! What is dropped (ARCHITECTURE.md invariant 3: nothing a live snapshot can see):
//! - snapshot stripes: with live snapshots S, entry seqno `s` is in stripe `count(S < s)`;
//!   an entry is dropped when a newer entry of the same user key is in the same stripe (no
//!   snapshot can see the older one without also seeing the newer);
//! - when no file below the output level overlaps the inputs (the picker's `drop_tombstones`),
//!   a point deletion in stripe 0 (every snapshot sees it) together with everything it
//!   shadows, and a range tombstone in stripe 0 together with the entries it covers;
//! - every other range tombstone is carried into the outputs, clipped to each output's
//!   user-key range `[first key, next output's first key)`, so levels stay non-overlapping.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use shale_sst::{
    Comparator, ParsedInternalKey, RangeTombstone, ReadOptions as TableReadOptions, SeqNo,
    TableWriter, ValueKind,
};

use crate::db::{DbInner, DbState};
use crate::error::{Error, Result};
use crate::flush::{file_meta, writer_options};
use crate::iterator::InternalIterator;
use crate::merging_iter::MergingIter;
use crate::options::KeyspaceOptions;
use crate::stats::StatCounters;
use crate::table_cache::table_file_name;
use crate::version::{FileMetaData, Version, VersionEdit};

mod picker;
#[cfg(test)]
mod picker_tests;

pub(crate) use picker::{estimated_pending_bytes, level_targets, Compaction};

/// An output is cut before it would overlap more than this many target file sizes of the
/// level below its own (so compacting it later stays bounded), as `LevelDB` does.
const GRANDPARENT_OVERLAP_FACTOR: u64 = 10;

/// A compaction about to run, with what it needs.
#[derive(Debug)]
struct Job {
    compaction: Compaction,
    options: KeyspaceOptions,
    /// The Version the inputs were picked from: while it is held its tables are live, so
    /// dropping the keyspace meanwhile cannot delete them under the compaction.
    _version: Arc<Version>,
}

/// Whether some keyspace not already compacting needs a compaction.
pub(crate) fn needs_compaction(state: &DbState) -> bool {
    pick(state).is_some()
}

fn pick(state: &DbState) -> Option<Job> {
    let version = state.versions.current();
    state
        .keyspaces
        .values()
        .filter(|k| !state.compacting.contains(&k.id))
        .find_map(|keyspace| {
            picker::pick(&version, keyspace.id, &keyspace.options).map(|compaction| Job {
                compaction,
                options: keyspace.options.clone(),
                _version: version.clone(),
            })
        })
}

/// Runs one compaction if one is needed.
pub(crate) fn compact_once(inner: &Arc<DbInner>) -> Result<()> {
    let (job, snapshots) = {
        let mut state = inner.lock_state();
        let Some(job) = pick(&state) else {
            return Ok(());
        };
        state.compacting.insert(job.compaction.keyspace);
        (job, live_snapshots(inner))
    };
    execute(inner, job, &snapshots, false)
}

fn live_snapshots(inner: &DbInner) -> Vec<SeqNo> {
    let mut snapshots = inner.snapshots.all();
    snapshots.sort_unstable();
    snapshots
}

/// Manual compaction of `keyspace` over `[start, end]` (`None`: unbounded): flushes, then
/// compacts every level from L0 down into the next, so the range's data ends in the last
/// non-empty level with shadowed versions and bottommost tombstones gone. Waits.
pub(crate) fn compact_range(
    inner: &Arc<DbInner>,
    keyspace: u32,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Result<()> {
    crate::flush::flush_and_wait(inner)?;
    let num_levels = inner.lock_state().versions.num_levels();
    for level in 0..num_levels - 1 {
        let (job, snapshots) = {
            let mut state = inner.lock_state();
            loop {
                inner.check_background_error()?;
                inner.check_open()?;
                if !state.keyspaces.contains_key(&keyspace) {
                    return Err(Error::InvalidArgument(format!(
                        "keyspace id {keyspace} does not exist (dropped?)"
                    )));
                }
                if !state.compacting.contains(&keyspace) {
                    break;
                }
                state = inner.wait_state(state);
            }
            let version = state.versions.current();
            let Some(options) = state.keyspaces.get(&keyspace).map(|k| k.options.clone()) else {
                continue;
            };
            let Some(compaction) =
                picker::pick_manual(&version, keyspace, &options, level, start, end)
            else {
                continue;
            };
            state.compacting.insert(keyspace);
            let job = Job {
                compaction,
                options,
                _version: version,
            };
            (job, live_snapshots(inner))
        };
        StatCounters::add(&inner.stats.manual_compactions, 1);
        execute(inner, job, &snapshots, true)?;
    }
    inner.check_open()
}

/// Runs `job` (its keyspace is marked compacting) and installs the result. A `manual` job's
/// failure to write its tables is only returned to its caller; a background job's pauses
/// writes until a retry succeeds (db.rs invariant 4).
fn execute(inner: &Arc<DbInner>, job: Job, snapshots: &[SeqNo], manual: bool) -> Result<()> {
    let compaction = &job.compaction;
    let result = if compaction.trivial_move {
        Ok(Vec::new())
    } else {
        run(inner, &job, snapshots)
    };
    let mut state = inner.lock_state();
    state.compacting.remove(&compaction.keyspace);
    inner.state_changed.notify_all();
    let outputs = match result {
        Ok(outputs) => outputs,
        Err(_) if inner.shutting_down.load(Ordering::Acquire) => {
            // Stopped by close: nothing was recorded, the inputs stay, the partial outputs are
            // deleted as unreferenced at the next open.
            return Ok(());
        }
        Err(error) => {
            // `run` deleted the partial outputs; the inputs stay where they were.
            let reason = format!(
                "compaction of keyspace {} failed ({compaction}): {error}",
                compaction.keyspace
            );
            if !error.is_retryable_write() {
                inner.set_background_error_locked(&state, reason);
            } else if !manual {
                inner.set_recoverable_error_locked(&state, reason);
            }
            return Err(error);
        }
    };
    let keyspace = compaction.keyspace;
    let output_level = level_number(compaction.output_level);
    let mut edit = VersionEdit::default();
    for (level, file) in compaction.all_inputs() {
        edit.delete_file(keyspace, level_number(level), file.number);
    }
    if compaction.trivial_move {
        for file in &compaction.inputs {
            edit.add_file(keyspace, output_level, FileMetaData::clone(file));
        }
    }
    for output in &outputs {
        edit.add_file(keyspace, output_level, output.clone());
    }
    let applied = if state.keyspaces.contains_key(&keyspace) {
        let allocated = inner.last_allocated_seqno.load(Ordering::Acquire);
        let last = allocated.max(state.versions.last_sequence());
        state.versions.set_last_sequence(last);
        state.versions.log_and_apply(edit)
    } else {
        Ok(()) // dropped meanwhile: the outputs are simply obsolete
    };
    for output in &outputs {
        state.pending_outputs.remove(&output.number);
    }
    if let Err(error) = applied {
        drop(state);
        inner.set_background_error(format!(
            "recording a compaction in the MANIFEST failed: {error}"
        ));
        return Err(error);
    }
    let counters = &inner.stats;
    if compaction.trivial_move {
        StatCounters::add(&counters.trivial_moves, 1);
    } else {
        StatCounters::add(&counters.compactions, 1);
        StatCounters::add(&counters.compaction_bytes_read, compaction.input_bytes());
        StatCounters::add(
            &counters.compaction_bytes_written,
            outputs.iter().map(|f| f.size).sum(),
        );
    }
    let version = state.versions.current();
    if let Some(keyspace) = state.keyspaces.get_mut(&keyspace) {
        keyspace.install_super_version(version);
    }
    state.compactions_done += 1;
    inner.clear_recoverable_error_locked(&state);
    // Its Version no longer keeps the inputs: delete them now.
    drop(job);
    crate::flush::delete_obsolete_files(inner, &mut state);
    inner.state_changed.notify_all();
    Ok(())
}

/// A level as the MANIFEST numbers it (levels are below `MAX_NUM_LEVELS`, far below u32).
fn level_number(level: usize) -> u32 {
    u32::try_from(level).unwrap_or(u32::MAX)
}

/// The stripe of `seqno`: how many live snapshots are older than it.
fn stripe(snapshots: &[SeqNo], seqno: SeqNo) -> usize {
    snapshots.partition_point(|&s| s < seqno)
}

/// Where outputs are cut because of the grandparents (the tables of the level below the output
/// level): an output ends before a user key once the keys it holds have passed more than
/// `limit` bytes of them, so compacting it into that level later stays bounded.
struct GrandparentCut<'a> {
    grandparents: &'a [Arc<FileMetaData>],
    /// The first grandparent not yet passed.
    next: usize,
    /// Bytes of grandparents passed since the current output started.
    overlap: u64,
    limit: u64,
}

impl<'a> GrandparentCut<'a> {
    fn new(grandparents: &'a [Arc<FileMetaData>], limit: u64) -> Self {
        GrandparentCut {
            grandparents,
            next: 0,
            overlap: 0,
            limit,
        }
    }

    /// At each new user key, in order: whether the current output (`open`) should end before
    /// `user_key`.
    fn cut_before(&mut self, cmp: &dyn Comparator, user_key: &[u8], open: bool) -> bool {
        while let Some(file) = self.grandparents.get(self.next) {
            if cmp.compare(file.largest.user_key(), user_key).is_ge() {
                break;
            }
            if open {
                self.overlap += file.size;
            }
            self.next += 1;
        }
        open && self.overlap > self.limit
    }

    /// A new output starts.
    fn started(&mut self) {
        self.overlap = 0;
    }
}

/// Output tables being written.
struct Outputs<'a> {
    inner: &'a DbInner,
    job: &'a Job,
    /// Tombstones to carry, sorted by start.
    tombstones: Vec<RangeTombstone>,
    current: Option<(TableWriter, u64, Vec<u8>)>,
    finished: Vec<FileMetaData>,
    /// Every table number this compaction allocated (in `pending_outputs`).
    numbers: Vec<u64>,
    grandparents: GrandparentCut<'a>,
}

impl Outputs<'_> {
    fn add(&mut self, key: &[u8], value: &[u8], user_key: &[u8], new_user_key: bool) -> Result<()> {
        if new_user_key {
            let open = self.current.is_some();
            let cmp = self.inner.user_comparator();
            let overlaps_too_much = self.grandparents.cut_before(&**cmp, user_key, open);
            let full = self.current.as_ref().is_some_and(|(writer, _, _)| {
                writer.estimated_file_size() >= self.job.options.target_file_size
            });
            if open && (full || overlaps_too_much) {
                self.finish_current(Some(user_key))?;
            }
        }
        if self.current.is_none() {
            self.grandparents.started();
            self.open(user_key)?;
        }
        if let Some((writer, _, _)) = &mut self.current {
            writer.add(key, value)?;
        }
        Ok(())
    }

    fn open(&mut self, first_user_key: &[u8]) -> Result<()> {
        let number = {
            let mut state = self.inner.lock_state();
            let number = state.versions.new_file_number();
            state.pending_outputs.insert(number);
            number
        };
        self.numbers.push(number);
        let path = table_file_name(&self.inner.dir, number);
        let compaction = &self.job.compaction;
        let mut options = writer_options(&self.inner.options.comparator, &self.job.options);
        options.compression = self
            .job
            .options
            .compression_for_level(compaction.output_level, compaction.bottommost_level);
        let writer = TableWriter::create(&*self.inner.fs, &path, options)?;
        // The first output also takes tombstones that start before its first key.
        let lower = if self.finished.is_empty() {
            Vec::new()
        } else {
            first_user_key.to_vec()
        };
        self.current = Some((writer, number, lower));
        Ok(())
    }

    /// After a failure: deletes every output written so far (best effort: a leftover is
    /// unreferenced, and deleted as obsolete later) and releases their numbers.
    fn discard(mut self) {
        self.current = None;
        for &number in &self.numbers {
            let _ = self
                .inner
                .fs
                .remove(&table_file_name(&self.inner.dir, number));
        }
        let mut state = self.inner.lock_state();
        for number in &self.numbers {
            state.pending_outputs.remove(number);
        }
    }

    /// Finishes the current output; `next_first` is the first user key of the next one.
    fn finish_current(&mut self, next_first: Option<&[u8]>) -> Result<()> {
        let Some((mut writer, number, lower)) = self.current.take() else {
            return Ok(());
        };
        let cmp = self.inner.user_comparator().clone();
        let is_first = self.finished.is_empty();
        for t in &self.tombstones {
            let start = if is_first || cmp.compare(&t.start, &lower).is_ge() {
                t.start.as_slice()
            } else {
                lower.as_slice()
            };
            let end = match next_first {
                Some(next) if cmp.compare(&t.end, next).is_gt() => next,
                _ => t.end.as_slice(),
            };
            if cmp.compare(start, end).is_lt() {
                writer.add_range_deletion(start, end, t.seqno)?;
            }
        }
        let (size, props) = writer.finish()?;
        self.finished.push(file_meta(number, size, &props)?);
        Ok(())
    }
}

/// Merges the inputs into new tables of the output level (written and synced, not yet
/// recorded).
fn run(inner: &DbInner, job: &Job, snapshots: &[SeqNo]) -> Result<Vec<FileMetaData>> {
    let compaction = &job.compaction;
    let cmp = inner.user_comparator().clone();
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    let mut tombstones = Vec::new();
    for (_, file) in compaction.all_inputs() {
        let table = inner
            .table_cache
            .get(file.number, job.options.prefix_extractor.as_ref())?;
        tombstones.extend_from_slice(table.range_tombstones());
        children.push(Box::new(table.iter(TableReadOptions {
            skip_cache_fill: true,
            ..TableReadOptions::default()
        })));
    }
    // Tombstones every snapshot sees are applied at the bottom and not carried.
    let (applied, carried): (Vec<RangeTombstone>, Vec<RangeTombstone>) = tombstones
        .into_iter()
        .partition(|t| compaction.drop_tombstones && stripe(snapshots, t.seqno) == 0);
    let mut carried = carried;
    carried.sort_by(|a, b| cmp.compare(&a.start, &b.start));
    let covered_by_applied = |user_key: &[u8], seqno: SeqNo| {
        applied.iter().any(|t| {
            t.seqno > seqno
                && cmp.compare(&t.start, user_key).is_le()
                && cmp.compare(user_key, &t.end).is_lt()
        })
    };
    let mut merged = MergingIter::new(inner.comparator.clone(), children);
    let mut outputs = Outputs {
        inner,
        job,
        tombstones: carried,
        current: None,
        finished: Vec::new(),
        numbers: Vec::new(),
        grandparents: GrandparentCut::new(
            &compaction.grandparents,
            job.options
                .target_file_size
                .saturating_mul(GRANDPARENT_OVERLAP_FACTOR),
        ),
    };
    let mut merge = || -> Result<()> {
        let mut current_user_key: Option<Vec<u8>> = None;
        let mut last_stripe = usize::MAX;
        merged.seek_to_first();
        while merged.valid() {
            if inner.shutting_down.load(Ordering::Acquire) {
                return Err(Error::Background {
                    reason: "compaction stopped by shutdown".into(),
                });
            }
            let key = ParsedInternalKey::parse(merged.key()).map_err(|e| Error::Corruption {
                file: inner.dir.clone(),
                offset: 0,
                detail: format!("compaction input holds a bad internal key: {e}"),
            })?;
            let new_user_key = current_user_key
                .as_deref()
                .is_none_or(|k| cmp.compare(k, key.user_key).is_ne());
            if new_user_key {
                current_user_key = Some(key.user_key.to_vec());
                last_stripe = usize::MAX;
            }
            let entry_stripe = stripe(snapshots, key.seqno);
            let shadowed = entry_stripe == last_stripe;
            last_stripe = entry_stripe;
            let dropped_deletion =
                key.kind == ValueKind::Deletion && compaction.drop_tombstones && entry_stripe == 0;
            let drop = shadowed || dropped_deletion || covered_by_applied(key.user_key, key.seqno);
            if !drop {
                outputs.add(merged.key(), merged.value(), key.user_key, new_user_key)?;
            }
            merged.next();
        }
        merged.status()?;
        if outputs.current.is_none() && !outputs.tombstones.is_empty() {
            let first = outputs.tombstones[0].start.clone();
            outputs.open(&first)?;
        }
        outputs.finish_current(None)?;
        Ok(inner.fs.sync_dir(&inner.dir)?)
    };
    match merge() {
        Ok(()) => Ok(outputs.finished),
        Err(error) => {
            outputs.discard();
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale_sst::{BytewiseComparator, InternalKey};

    fn table(number: u64, smallest: &str, largest: &str, size: u64) -> Arc<FileMetaData> {
        Arc::new(FileMetaData {
            number,
            size,
            smallest: InternalKey::new(smallest.as_bytes(), 1, ValueKind::Value),
            largest: InternalKey::new(largest.as_bytes(), 1, ValueKind::Value),
            smallest_seqno: 1,
            largest_seqno: 1,
            num_entries: 1,
            num_deletions: 0,
            creation_time: None,
        })
    }

    /// Feeds `keys` as an output writer would and returns the keys each output starts with.
    fn outputs(grandparents: &[Arc<FileMetaData>], limit: u64, keys: &[&str]) -> Vec<String> {
        let cmp = BytewiseComparator;
        let mut cut = GrandparentCut::new(grandparents, limit);
        let mut starts = Vec::new();
        let mut open = false;
        for key in keys {
            if cut.cut_before(&cmp, key.as_bytes(), open) {
                open = false;
            }
            if !open {
                cut.started();
                starts.push((*key).to_owned());
                open = true;
            }
        }
        starts
    }

    #[test]
    fn outputs_are_cut_once_they_pass_too_many_grandparent_bytes() {
        let grandparents = [
            table(1, "a", "b", 100),
            table(2, "c", "d", 100),
            table(3, "e", "f", 100),
            table(4, "g", "h", 100),
            table(5, "i", "j", 100),
        ];
        // Passing one grandparent (100) is within the limit; the second (200) is not.
        assert_eq!(
            outputs(&grandparents, 150, &["a", "c", "e", "g", "i", "k"]),
            ["a", "e", "i"]
        );
        // Keys inside one grandparent pass nothing: one output.
        assert_eq!(outputs(&grandparents, 150, &["c", "c1", "c2", "d"]), ["c"]);
        // Grandparents passed before the first output opens do not count against it.
        assert_eq!(outputs(&grandparents, 150, &["z"]), ["z"]);
        // A generous limit never cuts.
        assert_eq!(
            outputs(&grandparents, 10_000, &["a", "c", "e", "g", "i", "k"]),
            ["a"]
        );
        // No grandparents (the output level is the last): never cut.
        assert_eq!(outputs(&[], 0, &["a", "b", "c"]), ["a"]);
    }
}
