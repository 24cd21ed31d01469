//! Compaction: leveled, with dynamic level bytes (docs/compaction.md). The pure picker
//! (`picker`) chooses the work from a Version and the keyspace's options; this module runs it:
//! a trivial move is one MANIFEST edit, anything else merges the inputs into new tables of the
//! output level, cut at `target_file_size` and before an output would overlap more than
//! `GRANDPARENT_OVERLAP_FACTOR` target sizes of the level below it. Several compactions of one
//! keyspace run at once when their files and output ranges are apart (`claims`, which states
//! the rules): each claims what it reads and writes when picked, under the state lock, and
//! releases it when it installs or fails; a manual step (`Db::compact_range`) runs alone in
//! its keyspace.
//!
//! What is dropped (ARCHITECTURE.md invariant 3: nothing a live snapshot can see):
//! - snapshot stripes: with live snapshots S, entry seqno `s` is in stripe `count(S < s)`;
//!   an entry is dropped when a newer entry of the same user key is in the same stripe (no
//!   snapshot can see the older one without also seeing the newer);
//! - when no file below the output level overlaps the inputs (the picker's `drop_tombstones`),
//!   a point deletion in stripe 0 (every snapshot sees it) together with everything it
//!   shadows, and a range tombstone in stripe 0 together with the entries it covers;
//! - every other range tombstone is carried into the outputs, clipped to each output's
//!   user-key range `[first key, next output's first key)`, so levels stay non-overlapping;
//! - in a keyspace with a TTL, a value whose write time has passed the TTL becomes a point
//!   deletion with its seqno (so no older version of its key shows again), dropped as above
//!   when tombstones can go. Outputs record the write time of their oldest value.
//!
//! Where tombstones can go, a value in stripe 0 is written with seqno 0, as `RocksDB` does at
//! the bottommost level: every snapshot sees it, no older version of its key is left below,
//! and any newer one has a larger seqno, so its seqno orders it against nothing (a
//! transaction's conflict check compares with a live snapshot, which it is not newer than);
//! the repeated zero trailer then costs a data block almost nothing after compression.

use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::time::Instant;

use shale_sst::{
    Comparator, InternalKey, ParsedInternalKey, RangeTombstone, ReadOptions as TableReadOptions,
    SeqNo, TableWriter, ValueKind, MAX_SEQNO,
};

use crate::blob::{
    decode_reference, discard_blob_files, BlobFileMeta, BlobGarbage, BlobOutputs, BlobSettings,
};
use crate::db::{DbInner, DbState};
use crate::error::{Error, Result};
use crate::flush::{file_meta, writer_options};
use crate::iterator::InternalIterator;
use crate::merging_iter::MergingIter;
use crate::options::KeyspaceOptions;
use crate::rate_limiter::{IoPriority, RateLimitedFile};
use crate::snapshot::stripe;
use crate::stats::StatCounters;
use crate::table_cache::table_file_name;
use crate::version::{FileMetaData, Version, VersionEdit};

mod background_manual;
mod claims;
mod picker;
#[cfg(test)]
mod picker_tests;
mod read_failure;
mod subcompaction;

pub(crate) use background_manual::start as start_background_compact_range;
pub use background_manual::BackgroundCompaction;
use claims::ClaimId;
pub(crate) use claims::CompactionClaims;
use picker::CompactionReason;
pub(crate) use picker::{estimated_pending_bytes, level_targets, scores, Compaction};
pub(crate) use read_failure::{blocked_write_error, CompactionReadFailures};

/// An output is cut before it would overlap more than this many target file sizes of the
/// level below its own (so compacting it later stays bounded), as `LevelDB` does.
const GRANDPARENT_OVERLAP_FACTOR: u64 = 10;

/// A compaction about to run, with what it needs.
#[derive(Debug)]
struct Job {
    compaction: Compaction,
    options: KeyspaceOptions,
    /// The keyspace's name, recorded in every output table (flush.rs, `KEYSPACE_NAME_PROPERTY`).
    keyspace_name: String,
    /// The Version the inputs were picked from: while it is held its tables and blob files
    /// are live, so dropping the keyspace meanwhile cannot delete them under the compaction.
    version: Arc<Version>,
}

/// Whether some keyspace needs a compaction that may start beside the running ones.
pub(crate) fn needs_compaction(state: &DbState, now: u64) -> bool {
    pick(state, now).is_some()
}

/// The compaction to start next: the first keyspace's (by id) that needs one the running
/// compactions allow (`claims`), skipping keyspaces a manual compaction holds.
fn pick(state: &DbState, now: u64) -> Option<Job> {
    let version = state.versions.current();
    state
        .keyspaces
        .values()
        .filter(|k| !state.compaction_claims.held_for_manual(k.id))
        .find_map(|keyspace| {
            let busy = state.compaction_claims.busy(keyspace.id);
            picker::pick(&version, keyspace.id, &keyspace.options, now, &busy)
                .filter(|c| !state.compaction_reads.reads_damaged(c))
                .map(|compaction| Job {
                    compaction,
                    options: keyspace.options.clone(),
                    keyspace_name: keyspace.name.clone(),
                    version: version.clone(),
                })
        })
}

/// Starts one compaction if one is needed and may run beside the running ones, and runs it.
pub(crate) fn compact_once(inner: &Arc<DbInner>) -> Result<()> {
    let (job, claim, snapshots) = {
        let mut state = inner.lock_state();
        let Some(job) = pick(&state, inner.options.clock.now_seconds()) else {
            return Ok(());
        };
        let claim = claim(inner, &mut state, &job.compaction);
        (job, claim, live_snapshots(inner))
    };
    execute(inner, job, claim, &snapshots, false)
}

fn live_snapshots(inner: &DbInner) -> Vec<SeqNo> {
    let mut snapshots = inner.snapshots.all();
    snapshots.sort_unstable();
    snapshots
}

/// Manual compaction of `keyspace` over `[start, end]` (`None`: unbounded): flushes, then
/// compacts every level from L0 down into the next, so the range's data ends in the last
/// non-empty level with shadowed versions and bottommost tombstones gone. Waits. Each step
/// runs alone in the keyspace (`claims` invariant 6): it waits for the keyspace's running
/// compactions to end, and none starts meanwhile.
pub(crate) fn compact_range(
    inner: &Arc<DbInner>,
    keyspace: u32,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Result<()> {
    crate::flush::flush_and_wait(inner)?;
    let num_levels = inner.lock_state().versions.num_levels();
    for level in 0..num_levels - 1 {
        // Declared before the state guard, so dropped after it on every return.
        let _hold = ManualHold::take(inner, keyspace);
        let state = inner.lock_state();
        let (state, step) = start_manual_step(inner, state, keyspace, level, (start, end));
        drop(state);
        let Some((job, claim, snapshots)) = step? else {
            continue;
        };
        execute(inner, job, claim, &snapshots, true)?;
    }
    inner.check_open()
}

/// A keyspace held for one manual step (`claims` invariant 6), released when dropped: also
/// on an early return or a panic, so the keyspace's background compactions always resume.
/// Takes the state lock in both `take` and `drop`, so it is never created or dropped while
/// the caller holds it.
struct ManualHold<'a> {
    inner: &'a DbInner,
    keyspace: u32,
}

impl<'a> ManualHold<'a> {
    fn take(inner: &'a DbInner, keyspace: u32) -> Self {
        inner
            .lock_state()
            .compaction_claims
            .hold_for_manual(keyspace);
        ManualHold { inner, keyspace }
    }
}

impl Drop for ManualHold<'_> {
    fn drop(&mut self) {
        let mut state = self.inner.lock_state();
        state.compaction_claims.release_manual(self.keyspace);
        self.inner.state_changed.notify_all();
    }
}

/// What a started manual step runs: its job, its claims and the live snapshots.
type ManualStep = (Job, ClaimId, Vec<SeqNo>);

/// A manual step of `compact_range` (its keyspace held): waits until no compaction of the
/// keyspace runs, then picks and claims the compaction of `level` over `range`, if any.
fn start_manual_step<'a>(
    inner: &Arc<DbInner>,
    mut state: MutexGuard<'a, DbState>,
    keyspace: u32,
    level: usize,
    (start, end): (Option<&[u8]>, Option<&[u8]>),
) -> (MutexGuard<'a, DbState>, Result<Option<ManualStep>>) {
    loop {
        if let Err(error) = inner.check_background_error().and(inner.check_open()) {
            return (state, Err(error));
        }
        if !state.keyspaces.contains_key(&keyspace) {
            let error =
                Error::InvalidArgument(format!("keyspace id {keyspace} does not exist (dropped?)"));
            return (state, Err(error));
        }
        if !state.compaction_claims.runs_in(keyspace) {
            break;
        }
        state = inner.wait_state(state);
    }
    let version = state.versions.current();
    let Some((options, keyspace_name)) = state
        .keyspaces
        .get(&keyspace)
        .map(|k| (k.options.clone(), k.name.clone()))
    else {
        return (state, Ok(None));
    };
    let Some(compaction) = picker::pick_manual(&version, keyspace, &options, level, start, end)
    else {
        return (state, Ok(None));
    };
    let claim = claim(inner, &mut state, &compaction);
    let job = Job {
        compaction,
        options,
        keyspace_name,
        version,
    };
    (state, Ok(Some((job, claim, live_snapshots(inner)))))
}

/// Idle compaction (writes stopped, reads go on): flushes the memtables, then compacts every
/// keyspace's L0 into its base level, once until the next write. Runs on the compaction
/// thread when nothing else needs compacting, so the flush's write cannot stall on L0.
pub(crate) fn compact_idle(inner: &Arc<DbInner>) -> Result<()> {
    inner.idle.compacted();
    crate::flush::flush_and_wait(inner)?;
    let keyspaces: Vec<u32> = inner.lock_state().keyspaces.keys().copied().collect();
    for keyspace in keyspaces {
        let (job, claim, snapshots) = {
            let mut state = inner.lock_state();
            inner.check_open()?;
            if state.compaction_claims.held_for_manual(keyspace) {
                continue;
            }
            let version = state.versions.current();
            let Some((options, keyspace_name)) = state
                .keyspaces
                .get(&keyspace)
                .map(|k| (k.options.clone(), k.name.clone()))
            else {
                continue;
            };
            let busy = state.compaction_claims.busy(keyspace);
            let Some(compaction) = picker::pick_idle(&version, keyspace, &options).filter(|c| {
                busy.allows(&**inner.user_comparator(), c)
                    && !state.compaction_reads.reads_damaged(c)
            }) else {
                continue;
            };
            let claim = claim(inner, &mut state, &compaction);
            let job = Job {
                compaction,
                options,
                keyspace_name,
                version,
            };
            (job, claim, live_snapshots(inner))
        };
        execute(inner, job, claim, &snapshots, false)?;
    }
    Ok(())
}

/// Records what `compaction` reads and writes (`claims`); the caller checked that the running
/// compactions allow it.
fn claim(inner: &DbInner, state: &mut DbState, compaction: &Compaction) -> ClaimId {
    state
        .compaction_claims
        .claim(&**inner.user_comparator(), compaction)
}

/// Runs `job` (claimed as `claim`) and installs the result, releasing the claims under the
/// same lock as the install, so no compaction picked after sees its inputs free but still in
/// the Version. A `manual` job's failure to write its tables is only returned to its caller;
/// a background job's pauses writes until a retry succeeds (db.rs invariant 4).
fn execute(
    inner: &Arc<DbInner>,
    job: Job,
    claim: ClaimId,
    snapshots: &[SeqNo],
    manual: bool,
) -> Result<()> {
    let compaction = &job.compaction;
    let started = Instant::now();
    let outcome = merge(inner, &job, snapshots);
    let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    let mut state = inner.lock_state();
    state.compaction_claims.release(claim);
    inner.state_changed.notify_all();
    let result = match outcome {
        Ok(result) => result,
        Err(panic) => return Err(report_panic_locked(inner, &mut state, compaction, &panic)),
    };
    let RunOutput {
        tables: outputs,
        blob_files,
        garbage,
        relocated_bytes,
    } = match result {
        Ok(output) => output,
        Err(_) if inner.shutting_down.load(Ordering::Acquire) => {
            // Stopped by close: nothing was recorded, the inputs stay, the partial outputs are
            // deleted as unreferenced at the next open.
            return Ok(());
        }
        Err(error) => {
            report_failure_locked(inner, &mut state, compaction, &error, manual);
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
    record_blob_changes(&state, &mut edit, &blob_files, &garbage);
    let applied = if state.keyspaces.contains_key(&keyspace) {
        let allocated = inner.last_allocated_seqno.load(Ordering::Acquire);
        let last = allocated.max(state.versions.last_sequence());
        state.versions.set_last_sequence(last);
        crate::write::live_wal_synced_locked(inner, &mut state, &mut edit);
        state.versions.log_and_apply(edit)
    } else {
        Ok(()) // dropped meanwhile: the outputs are simply obsolete
    };
    for output in &outputs {
        state.pending_outputs.remove(&output.number);
    }
    for blob in &blob_files {
        state.pending_outputs.remove(&blob.number);
    }
    if let Err(error) = applied {
        // The inputs stay; the outputs stay while a MANIFEST a reopen may read can name
        // them (manifest_recovery).
        let error = crate::manifest_recovery::edit_failed(
            inner,
            &state,
            format!("recording a compaction in the MANIFEST failed: {error}"),
            error,
        );
        return Err(error);
    }
    record_stats(
        inner,
        compaction,
        &outputs,
        &blob_files,
        relocated_bytes,
        micros,
    );
    let version = state.versions.current();
    if let Some(keyspace) = state.keyspaces.get_mut(&keyspace) {
        keyspace.install_super_version(version);
    }
    inner.note_pending_compaction_bytes_locked(&state);
    state.compactions_done += 1;
    state.compaction_reads.succeeded();
    state
        .job_panics
        .succeeded(crate::job_panic::JobKind::Compaction);
    inner.clear_recoverable_error_locked(&mut state);
    // Its Version no longer keeps the inputs: delete them now.
    drop(job);
    crate::flush::delete_obsolete_files(inner, &mut state);
    inner.state_changed.notify_all();
    Ok(())
}

/// Runs the merge of `job` (nothing for a trivial move); `Err` with its message if it
/// panicked. Only the merge runs without the state lock: a panic there changed nothing shared
/// (`crate::job_panic`).
fn merge(
    inner: &DbInner,
    job: &Job,
    snapshots: &[SeqNo],
) -> std::result::Result<Result<RunOutput>, String> {
    if job.compaction.trivial_move {
        return Ok(Ok(RunOutput::default()));
    }
    crate::job_panic::catch(|| {
        inner.test_hooks.in_compaction();
        run(inner, job, snapshots)
    })
}

/// Reports that the merge of `compaction` panicked with `panic`. Its outputs stay pending
/// (their numbers died with the merge), so on disk until the next open deletes them as
/// unreferenced; the inputs stay.
fn report_panic_locked(
    inner: &DbInner,
    state: &mut DbState,
    compaction: &Compaction,
    panic: &str,
) -> Error {
    let what = format!(
        "compaction of keyspace {} ({compaction})",
        compaction.keyspace
    );
    let kind = crate::job_panic::JobKind::Compaction;
    crate::job_panic::panicked_locked(inner, state, kind, &what, panic)
}

/// Reports the failure `error` of `compaction`, whose partial outputs `run` deleted (the
/// inputs stay where they were): a failed table write pauses writes (only a `manual` job's
/// caller sees it), a failed read is handled by `read_failure`, anything else is sticky.
fn report_failure_locked(
    inner: &DbInner,
    state: &mut DbState,
    compaction: &Compaction,
    error: &Error,
    manual: bool,
) {
    let reason = format!(
        "compaction of keyspace {} failed ({compaction}): {error}",
        compaction.keyspace
    );
    if error.is_retryable_write() {
        if !manual {
            inner.set_recoverable_error_locked(state, reason);
        }
    } else if read_failure::is_read_failure(error) {
        read_failure::failed_locked(inner, state, compaction, error, &reason, manual);
    } else {
        inner.set_background_error_locked(state, reason);
    }
}

/// Counts a finished compaction in `DbStats` and the per-level stats.
fn record_stats(
    inner: &DbInner,
    compaction: &Compaction,
    outputs: &[FileMetaData],
    blob_files: &[BlobFileMeta],
    relocated_bytes: u64,
    micros: u64,
) {
    let counters = &inner.stats;
    let by_reason = match compaction.reason {
        CompactionReason::Level0FileCount => &counters.level0_compactions,
        CompactionReason::LevelScore => &counters.level_score_compactions,
        CompactionReason::Ttl => &counters.ttl_compactions,
        CompactionReason::TombstoneDensity => &counters.tombstone_compactions,
        CompactionReason::Idle => &counters.idle_compactions,
        CompactionReason::BlobGarbage => &counters.blob_gc_compactions,
        CompactionReason::Manual => &counters.manual_compactions,
    };
    StatCounters::add(by_reason, 1);
    log_compaction(inner, compaction, outputs, micros);
    let level = &counters.levels[compaction.output_level];
    let upper_bytes: u64 = compaction.inputs.iter().map(|f| f.size).sum();
    if compaction.trivial_move {
        StatCounters::add(&counters.trivial_moves, 1);
        StatCounters::add(&level.moved_bytes, upper_bytes);
    } else {
        let blob_bytes: u64 = blob_files.iter().map(BlobFileMeta::file_size).sum();
        StatCounters::add(&counters.blob_files_written, blob_files.len() as u64);
        StatCounters::add(&counters.blob_bytes_written, blob_bytes);
        StatCounters::add(&counters.blob_bytes_relocated, relocated_bytes);
        let written: u64 = outputs.iter().map(|f| f.size).sum::<u64>() + blob_bytes;
        StatCounters::add(&counters.compactions, 1);
        StatCounters::add(&counters.compaction_bytes_read, compaction.input_bytes());
        StatCounters::add(&counters.compaction_bytes_written, written);
        level.record_job(
            upper_bytes,
            compaction.output_inputs.iter().map(|f| f.size).sum(),
            written,
            micros,
        );
    }
}

/// Writes a finished compaction to the info LOG: reason, inputs by level, outputs, bytes, time.
fn log_compaction(inner: &DbInner, compaction: &Compaction, outputs: &[FileMetaData], micros: u64) {
    let numbers = |files: &mut dyn Iterator<Item = u64>| {
        files.map(|n| n.to_string()).collect::<Vec<_>>().join(",")
    };
    let read: u64 = compaction.all_inputs().map(|(_, f)| f.size).sum();
    let written: u64 = outputs.iter().map(|f| f.size).sum();
    inner.info_log.log(format_args!(
        "compaction keyspace {} ({}{}): L{} [{}] + L{} [{}] -> [{}], read {read} bytes, wrote \
         {written} bytes, {} ms",
        compaction.keyspace,
        compaction.reason.name(),
        if compaction.trivial_move {
            ", trivial move"
        } else {
            ""
        },
        compaction.start_level,
        numbers(&mut compaction.inputs.iter().map(|f| f.number)),
        compaction.output_level,
        numbers(&mut compaction.output_inputs.iter().map(|f| f.number)),
        numbers(&mut outputs.iter().map(|f| f.number)),
        micros / 1000
    ));
}

/// Adds a compaction's blob files and garbage to `edit`, deleting every blob file whose
/// garbage reaches its total (blob/mod.rs invariant 2: no table references it any more).
fn record_blob_changes(
    state: &DbState,
    edit: &mut VersionEdit,
    blob_files: &[BlobFileMeta],
    garbage: &BlobGarbage,
) {
    for blob in blob_files {
        edit.add_blob_file(blob);
    }
    let version = state.versions.current();
    for (&number, &(count, bytes)) in &garbage.files {
        edit.add_blob_garbage(number, count, bytes);
        if let Some(meta) = version.blob_files().get(&number) {
            if meta.garbage_count + count >= meta.total_count
                && meta.garbage_bytes + bytes >= meta.total_bytes
            {
                edit.delete_blob_file(number);
            }
        }
    }
}

/// A level as the MANIFEST numbers it (levels are below `MAX_NUM_LEVELS`, far below u32).
fn level_number(level: usize) -> u32 {
    u32::try_from(level).unwrap_or(u32::MAX)
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
    /// The oldest write time of a value in the current output (TTL keyspaces).
    oldest_write_time: Option<u64>,
    /// The smallest blob file number the current output references.
    oldest_blob_file: Option<u64>,
    finished: Vec<FileMetaData>,
    /// Every table number this output writer allocated (in `pending_outputs`).
    numbers: Vec<u64>,
    grandparents: GrandparentCut<'a>,
}

impl Outputs<'_> {
    /// The value just added carries write time `time`.
    fn saw_write_time(&mut self, time: u64) {
        self.oldest_write_time = Some(self.oldest_write_time.map_or(time, |t| t.min(time)));
    }

    /// The entry just added references blob file `number`.
    fn saw_blob_file(&mut self, number: u64) {
        self.oldest_blob_file = Some(self.oldest_blob_file.map_or(number, |n| n.min(number)));
    }

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
        let mut options = writer_options(
            &self.inner.options.comparator,
            &self.job.options,
            (compaction.keyspace, &self.job.keyspace_name),
        );
        options.compression = self
            .job
            .options
            .compression_for_level(compaction.output_level, compaction.bottommost_level);
        if compaction.bottommost_level {
            // Only the bottom trains dictionaries: it holds most of the data, rewritten least.
            options.zstd_max_dict_bytes = self.job.options.zstd_max_dict_bytes;
            options.zstd_max_train_bytes = self.job.options.zstd_max_train_bytes;
        }
        let file = RateLimitedFile::wrap(
            self.inner.fs.create_with(
                &path,
                crate::direct_io::table_write_mode(&self.inner.options),
            )?,
            self.inner.rate_limiter.as_ref(),
            IoPriority::Compaction,
        );
        let writer = TableWriter::new(file, path, options)?;
        // The first output also takes tombstones that start before its first key.
        let lower = if self.finished.is_empty() {
            Vec::new()
        } else {
            first_user_key.to_vec()
        };
        self.current = Some((writer, number, lower));
        Ok(())
    }

    /// After a failure: deletes every output written so far and releases their numbers.
    fn discard(mut self) {
        self.current = None;
        discard_tables(self.inner, &self.numbers);
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
        let mut meta = file_meta(number, size, &props)?;
        meta.oldest_entry_time = self.oldest_write_time.take();
        meta.oldest_blob_file = self.oldest_blob_file.take();
        self.finished.push(meta);
        Ok(())
    }
}

/// What a compaction wrote and dropped, not yet recorded.
#[derive(Debug, Default)]
struct RunOutput {
    /// The output tables, in key order.
    tables: Vec<FileMetaData>,
    /// The blob files the outputs reference values in (new or relocated ones).
    blob_files: Vec<BlobFileMeta>,
    /// References the compaction dropped or relocated, by the blob file they pointed into.
    garbage: BlobGarbage,
    /// Bytes of values moved out of old blob files.
    relocated_bytes: u64,
}

impl RunOutput {
    fn merge(&mut self, other: RunOutput) {
        self.tables.extend(other.tables);
        self.blob_files.extend(other.blob_files);
        self.garbage.merge(other.garbage);
        self.relocated_bytes += other.relocated_bytes;
    }

    /// After a failure: deletes every file written and releases their numbers.
    fn discard(&self, inner: &DbInner) {
        let numbers: Vec<u64> = self.tables.iter().map(|f| f.number).collect();
        discard_tables(inner, &numbers);
        let blobs: Vec<u64> = self.blob_files.iter().map(|b| b.number).collect();
        discard_blobs(inner, &blobs);
    }
}

/// Merges the inputs into new tables of the output level (written and synced, not yet
/// recorded). With `max_subcompactions > 1` a large compaction is split by user key into
/// ranges merged on their own threads (`subcompaction`); their outputs, in range order, are
/// the outputs of one compaction.
fn run(inner: &DbInner, job: &Job, snapshots: &[SeqNo]) -> Result<RunOutput> {
    let boundaries = subcompaction::boundaries(inner, job)?;
    let gc_cutoff = picker::blob_gc_cutoff(&job.version, job.compaction.keyspace, &job.options);
    let output = if boundaries.is_empty() {
        run_range(inner, job, snapshots, (None, None), gc_cutoff)?
    } else {
        StatCounters::add(&inner.stats.subcompactions, boundaries.len() as u64 + 1);
        let mut ranges = Vec::with_capacity(boundaries.len() + 1);
        let mut lower: Option<&[u8]> = None;
        for boundary in &boundaries {
            ranges.push((lower, Some(boundary.as_slice())));
            lower = Some(boundary.as_slice());
        }
        ranges.push((lower, None));
        // A range thread's panic is kept, and raised again here once every range is done
        // and every output discarded: the compaction's own catch (`merge`) then reports it as
        // a panic of the job, retried like one (`crate::job_panic`).
        let (results, panic) = std::thread::scope(|scope| {
            let handles: Vec<_> = ranges[1..]
                .iter()
                .map(|&range| {
                    std::thread::Builder::new()
                        .name("shale-subcompact".into())
                        .spawn_scoped(scope, move || {
                            inner.test_hooks.in_subcompaction();
                            run_range(inner, job, snapshots, range, gc_cutoff)
                        })
                })
                .collect();
            let mut results = vec![run_range(inner, job, snapshots, ranges[0], gc_cutoff)];
            let mut panic = None;
            for handle in handles {
                results.push(match handle {
                    Ok(handle) => handle.join().unwrap_or_else(|payload| {
                        panic.get_or_insert(payload);
                        Err(Error::Background {
                            reason: "a subcompaction thread panicked".into(),
                        })
                    }),
                    Err(e) => Err(Error::Background {
                        reason: format!("cannot start a subcompaction thread: {e}"),
                    }),
                });
            }
            (results, panic)
        });
        // A failed range discarded its own outputs; the others' go too, as nothing of the
        // compaction is installed.
        let mut output = RunOutput::default();
        let mut error = None;
        for result in results {
            match result {
                Ok(range_output) => output.merge(range_output),
                Err(e) => {
                    error.get_or_insert(e);
                }
            }
        }
        if let Some(error) = error {
            output.discard(inner);
            if let Some(payload) = panic {
                std::panic::resume_unwind(payload);
            }
            return Err(error);
        }
        output
    };
    if let Err(error) = inner.fs.sync_dir(&inner.dir) {
        output.discard(inner);
        return Err(error.into());
    }
    Ok(output)
}

/// Deletes the output tables `numbers` of a failed compaction (best effort: a leftover is
/// unreferenced, and deleted as obsolete later) and releases their numbers.
fn discard_tables(inner: &DbInner, numbers: &[u64]) {
    for &number in numbers {
        let _ = inner.fs.remove(&table_file_name(&inner.dir, number));
    }
    let mut state = inner.lock_state();
    for number in numbers {
        state.pending_outputs.remove(number);
    }
}

/// [`discard_tables`] for blob files.
fn discard_blobs(inner: &DbInner, numbers: &[u64]) {
    discard_blob_files(&*inner.fs, &inner.dir, numbers);
    let mut state = inner.lock_state();
    for number in numbers {
        state.pending_outputs.remove(number);
    }
}

/// The blob side of one range's merge: the blob files it writes, the garbage it finds, and
/// which references it relocates (those into blob files numbered below `gc_cutoff`).
struct BlobWork<'a> {
    outputs: Option<BlobOutputs<'a>>,
    gc_cutoff: Option<u64>,
    garbage: BlobGarbage,
    relocated_bytes: u64,
}

/// Merges the inputs' entries with user keys in `[lower, upper)` (`None`: unbounded) into
/// new tables. Range tombstones are clipped to the range, so the outputs of adjacent ranges
/// never overlap.
fn run_range(
    inner: &DbInner,
    job: &Job,
    snapshots: &[SeqNo],
    (lower, upper): (Option<&[u8]>, Option<&[u8]>),
    gc_cutoff: Option<u64>,
) -> Result<RunOutput> {
    let compaction = &job.compaction;
    let cmp = inner.user_comparator().clone();
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    let mut tombstones = Vec::new();
    for (_, file) in compaction.all_inputs() {
        let table = inner.table_cache.get(
            file.number,
            file.global_seqno,
            job.options.prefix_extractor.as_ref(),
        )?;
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
    let mut carried: Vec<RangeTombstone> = carried
        .into_iter()
        .filter_map(|t| subcompaction::clip(&*cmp, t, lower, upper))
        .collect();
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
        oldest_write_time: None,
        oldest_blob_file: None,
        finished: Vec::new(),
        numbers: Vec::new(),
        grandparents: GrandparentCut::new(
            &compaction.grandparents,
            job.options
                .target_file_size
                .saturating_mul(GRANDPARENT_OVERLAP_FACTOR),
        ),
    };
    let new_number = || inner.new_pending_output();
    let mut blobs = BlobWork {
        outputs: BlobSettings::of(compaction.keyspace, &job.options).map(|settings| {
            BlobOutputs::new(
                &*inner.fs,
                &inner.dir,
                settings,
                inner.rate_limiter.as_ref(),
                IoPriority::Compaction,
                &new_number,
            )
        }),
        gc_cutoff,
        garbage: BlobGarbage::default(),
        relocated_bytes: 0,
    };
    let merge = merge_range(
        inner,
        job,
        snapshots,
        (lower, upper),
        &mut merged,
        &mut outputs,
        &mut blobs,
        &covered_by_applied,
    );
    let blob_numbers: Vec<u64> = blobs
        .outputs
        .as_ref()
        .map_or_else(Vec::new, |b| b.numbers().to_vec());
    let blob_files = merge.and_then(|()| match blobs.outputs {
        Some(outputs) => outputs.finish(),
        None => Ok(Vec::new()),
    });
    match blob_files {
        Ok(blob_files) => Ok(RunOutput {
            tables: outputs.finished,
            blob_files,
            garbage: blobs.garbage,
            relocated_bytes: blobs.relocated_bytes,
        }),
        Err(error) => {
            outputs.discard();
            discard_blobs(inner, &blob_numbers);
            Err(error)
        }
    }
}

/// Writes the entry `(user_key, seqno)` with `value` (as stored): to a blob file with a
/// reference in the table when blob files are on and the value is large enough, else inline.
fn write_value(
    outputs: &mut Outputs<'_>,
    blobs: &mut BlobWork<'_>,
    (user_key, seqno): (&[u8], SeqNo),
    value: &[u8],
    new_user_key: bool,
) -> Result<()> {
    if let Some(blob_outputs) = blobs.outputs.as_mut().filter(|b| b.separates(value.len())) {
        let (reference, number) = blob_outputs.add(user_key, value)?;
        let key = InternalKey::new(user_key, seqno, ValueKind::BlobIndex);
        outputs.add(key.encoded(), &reference, user_key, new_user_key)?;
        outputs.saw_blob_file(number);
    } else {
        let key = InternalKey::new(user_key, seqno, ValueKind::Value);
        outputs.add(key.encoded(), value, user_key, new_user_key)?;
    }
    Ok(())
}

/// The merge loop of [`run_range`]: every entry of `merged` with a user key in `range`,
/// minus what no snapshot can see, into `outputs`. A dropped blob reference becomes garbage
/// of its blob file; a kept one into a blob file below the GC cutoff has its value relocated.
#[allow(clippy::too_many_arguments, clippy::too_many_lines)] // the loop's state, named
fn merge_range(
    inner: &DbInner,
    job: &Job,
    snapshots: &[SeqNo],
    (lower, upper): (Option<&[u8]>, Option<&[u8]>),
    merged: &mut MergingIter,
    outputs: &mut Outputs<'_>,
    blobs: &mut BlobWork<'_>,
    covered_by_applied: &dyn Fn(&[u8], SeqNo) -> bool,
) -> Result<()> {
    let compaction = &job.compaction;
    let cmp = inner.user_comparator().clone();
    let ttl_cutoff = job
        .options
        .ttl
        .map(|ttl| crate::ttl::cutoff(ttl.as_secs(), inner.options.clock.now_seconds()));
    let mut current_user_key: Option<Vec<u8>> = None;
    let mut last_stripe = usize::MAX;
    match lower {
        // The first entry of `lower`: the largest trailer sorts first.
        Some(lower) => {
            merged.seek(InternalKey::new(lower, MAX_SEQNO, ValueKind::MAX).encoded());
        }
        None => merged.seek_to_first(),
    }
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
        if upper.is_some_and(|upper| cmp.compare(key.user_key, upper).is_ge()) {
            break;
        }
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
        let write_time = ttl_cutoff
            .filter(|_| key.kind.is_value())
            .and_then(|_| crate::ttl::split(merged.value()).map(|(_, time)| time));
        let expired = matches!((write_time, ttl_cutoff), (Some(t), Some(c)) if t < c);
        let deletion = key.kind == ValueKind::Deletion || expired;
        let dropped_deletion = deletion && compaction.drop_tombstones && entry_stripe == 0;
        let drop = shadowed || dropped_deletion || covered_by_applied(key.user_key, key.seqno);
        let reference = if key.kind == ValueKind::BlobIndex {
            Some(decode_reference(merged.value(), key.user_key)?)
        } else {
            None
        };
        if let Some(reference) = reference.filter(|_| drop || expired) {
            blobs.garbage.add(&reference, key.user_key.len());
        }
        if !drop && expired {
            let tombstone = InternalKey::new(key.user_key, key.seqno, ValueKind::Deletion);
            outputs.add(tombstone.encoded(), &[], key.user_key, new_user_key)?;
        } else if !drop {
            // Nothing below holds the key and every snapshot sees this value: its seqno no
            // longer orders it against anything, and 0 compresses (what RocksDB does).
            let zero_seqno = compaction.drop_tombstones
                && entry_stripe == 0
                && key.kind.is_value()
                && key.seqno != 0;
            let seqno = if zero_seqno { 0 } else { key.seqno };
            let relocated =
                reference.filter(|r| blobs.gc_cutoff.is_some_and(|cutoff| r.file_number < cutoff));
            let separate = key.kind == ValueKind::Value
                && blobs
                    .outputs
                    .as_ref()
                    .is_some_and(|b| b.separates(merged.value().len()));
            if let Some(reference) = relocated {
                let value = inner.blob_cache.resolve(key.user_key, merged.value())?;
                blobs.garbage.add(&reference, key.user_key.len());
                blobs.relocated_bytes += value.len() as u64;
                write_value(outputs, blobs, (key.user_key, seqno), &value, new_user_key)?;
            } else if separate {
                write_value(
                    outputs,
                    blobs,
                    (key.user_key, seqno),
                    merged.value(),
                    new_user_key,
                )?;
            } else if zero_seqno {
                let zeroed = InternalKey::new(key.user_key, 0, key.kind);
                outputs.add(zeroed.encoded(), merged.value(), key.user_key, new_user_key)?;
            } else {
                outputs.add(merged.key(), merged.value(), key.user_key, new_user_key)?;
            }
            if let Some(reference) = reference.filter(|_| relocated.is_none()) {
                outputs.saw_blob_file(reference.file_number);
            }
            if let Some(time) = write_time {
                outputs.saw_write_time(time);
            }
        }
        merged.next();
    }
    merged.status()?;
    if outputs.current.is_none() && !outputs.tombstones.is_empty() {
        let first = outputs.tombstones[0].start.clone();
        outputs.open(&first)?;
    }
    outputs.finish_current(None)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table_cache::PinnedTable;
    use shale_sst::BytewiseComparator;

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
            oldest_entry_time: None,
            global_seqno: None,
            oldest_blob_file: None,
            pinned_table: PinnedTable::default(),
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
