//! Background threads: one flushes frozen memtables, `max_background_jobs - 1` compact,
//! one syncs the WAL about every `sync_interval` for `Flush` and `Buffered` writes.
//!
//! Invariants:
//! 1. Compaction thread `n` runs while `n < max_background_jobs - 1`; the numbers of those
//!    running are kept in `DbState::compaction_threads`, changed under the state lock only:
//!    a thread adds its number before it is spawned and removes it as it ends. A raised limit
//!    starts the missing numbers at once (`Db::set_options`); a lowered one is seen by a
//!    thread the next time it looks for work, after the compaction it runs, if any.
//! 2. Compaction threads take concurrent work in one keyspace only as far as the claims of the
//!    running compactions allow (compaction/claims.rs: disjoint files and output ranges, one
//!    from L0 at a time). Only thread 0 runs idle compactions.
//!
//! A panic in the unlocked part of a flush or compaction (writing its tables, in a
//! subcompaction too) is caught there and retried a few times (`crate::job_panic`, which says
//! why nothing else is). A panic anywhere else ends the thread and
//! becomes the sticky background error (db.rs invariant 4), so a bug in a background job
//! stops writes with a clear message instead of leaving a database that silently stopped
//! flushing.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::thread::{Builder, JoinHandle};
use std::time::{Duration, Instant};

use crate::db::{DbInner, DbState};
use crate::error::{Error, Result};
use crate::idle::IdleCheck;

/// Starts the background threads.
pub(crate) fn start(inner: &Arc<DbInner>) -> Result<Vec<JoinHandle<()>>> {
    let mut threads = Vec::new();
    for (name, job) in [
        ("shale-flush", run_flushes as fn(&Arc<DbInner>)),
        ("shale-wal-sync", run_wal_syncs),
    ] {
        threads.push(spawn(inner, name, job)?);
    }
    start_compaction_threads(inner, &mut threads)?;
    Ok(threads)
}

/// Starts `job` on a thread called `name`; a panic becomes the background error.
fn spawn(
    inner: &Arc<DbInner>,
    name: &str,
    job: impl FnOnce(&Arc<DbInner>) + Send + 'static,
) -> Result<JoinHandle<()>> {
    let inner = inner.clone();
    let thread_name = name.to_owned();
    Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            let name = thread_name;
            if catch_unwind(AssertUnwindSafe(|| job(&inner))).is_err() {
                inner.set_background_error(format!("the {name} background thread panicked"));
            }
        })
        .map_err(|e| Error::Background {
            reason: format!("cannot start the {name} thread: {e}"),
        })
}

/// Compaction threads the current `max_background_jobs` allows (invariant 1).
fn compaction_thread_limit(inner: &DbInner) -> usize {
    inner
        .max_background_jobs
        .load(Ordering::Acquire)
        .saturating_sub(1)
        .max(1)
}

/// Starts the compaction threads the limit allows and that do not run (invariant 1),
/// adding them to `threads`; wakes the others, so any above a lowered limit ends.
pub(crate) fn start_compaction_threads(
    inner: &Arc<DbInner>,
    threads: &mut Vec<JoinHandle<()>>,
) -> Result<()> {
    let mut state = inner.lock_state();
    for number in 0..compaction_thread_limit(inner) {
        if state.compaction_threads.insert(number) {
            // The first keeps the name of the single compaction thread there used to be.
            let name = if number == 0 {
                "shale-compact".to_owned()
            } else {
                format!("shale-compact-{number}")
            };
            match spawn(inner, &name, move |inner| run_compactions(inner, number)) {
                Ok(thread) => threads.push(thread),
                Err(error) => {
                    state.compaction_threads.remove(&number);
                    return Err(error);
                }
            }
        }
    }
    inner.state_changed.notify_all();
    Ok(())
}

/// While a recoverable error pauses writes and its retry time (or `Db::resume`) has not come,
/// waits for it and returns `true` with the guard: the caller then checks everything again.
/// Otherwise returns `false` at once, and the job that failed is tried again as usual; its
/// success clears the error (db.rs invariant 4).
fn wait_for_retry<'a>(
    inner: &DbInner,
    state: MutexGuard<'a, DbState>,
) -> (MutexGuard<'a, DbState>, bool) {
    let Some(retry) = inner.retry_locked(&state) else {
        return (state, false);
    };
    let now = Instant::now();
    if retry.now || now >= retry.next_attempt {
        return (state, false);
    }
    (wait_timeout(inner, state, retry.next_attempt - now), true)
}

/// Waits on the state condition variable for at most `timeout`.
fn wait_timeout<'a>(
    inner: &DbInner,
    state: MutexGuard<'a, DbState>,
    timeout: Duration,
) -> MutexGuard<'a, DbState> {
    inner
        .state_changed
        .wait_timeout(state, timeout)
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .0
}

/// Whether the thread should stop: shutdown, or a sticky error (only a reopen clears it).
fn should_stop(inner: &DbInner) -> bool {
    inner.shutting_down.load(Ordering::Acquire) || inner.has_sticky_error()
}

/// What the flush thread does next.
enum Job {
    RollManifest,
    ReplaceWal,
    Flush,
}

/// Flushes frozen memtables, rolls the MANIFEST after a failed write
/// (`crate::manifest_recovery`) and replaces a failed WAL (`crate::wal_recovery`).
fn run_flushes(inner: &Arc<DbInner>) {
    loop {
        let job = {
            let mut state = inner.lock_state();
            loop {
                if should_stop(inner) {
                    return;
                }
                let waited;
                (state, waited) = wait_for_retry(inner, state);
                if waited {
                    continue;
                }
                // The MANIFEST first: the switch and the flush both write an edit.
                if crate::manifest_recovery::needs_roll(&state) {
                    break Job::RollManifest;
                }
                if crate::wal_recovery::needs_switch(&state) {
                    break Job::ReplaceWal;
                }
                if state.keyspaces.values().any(|k| !k.imm.is_empty()) {
                    break Job::Flush;
                }
                state = inner.wait_state(state);
            }
        };
        // Errors become the background error inside roll, switch and flush_one.
        match job {
            Job::RollManifest => crate::manifest_recovery::roll(inner),
            Job::ReplaceWal => {
                let _ = crate::wal_recovery::switch(inner);
            }
            Job::Flush => {
                let _ = crate::flush::flush_one(inner);
            }
        }
    }
}

/// Compaction thread `number` (invariants 1 and 2).
fn run_compactions(inner: &Arc<DbInner>, number: usize) {
    loop {
        let idle_due = {
            let mut state = inner.lock_state();
            loop {
                if should_stop(inner) || number >= compaction_thread_limit(inner) {
                    state.compaction_threads.remove(&number);
                    inner.state_changed.notify_all();
                    return;
                }
                // The flush thread rolls the MANIFEST; a compaction could only be refused.
                if crate::manifest_recovery::needs_roll(&state) {
                    state = inner.wait_state(state);
                    continue;
                }
                let waited;
                (state, waited) = wait_for_retry(inner, state);
                if waited {
                    continue;
                }
                // After a failed read of an input (compaction/read_failure.rs).
                if let Some(wait) = state.compaction_reads.backoff_remaining() {
                    state = wait_timeout(inner, state, wait);
                    continue;
                }
                let now = inner.options.clock.now_seconds();
                if crate::compaction::needs_compaction(&state, now) {
                    break false;
                }
                let Some(after) = inner.options.idle_compaction_after.filter(|_| number == 0)
                else {
                    state = inner.wait_state(state);
                    continue;
                };
                match inner.idle.check(after) {
                    IdleCheck::Due => break true,
                    IdleCheck::WaitFor(wait) => state = wait_timeout(inner, state, wait),
                }
            }
        };
        // Errors become the background error (sticky or paused) where they happen.
        let _ = if idle_due {
            crate::compaction::compact_idle(inner)
        } else {
            crate::compaction::compact_once(inner)
        };
    }
}

fn run_wal_syncs(inner: &Arc<DbInner>) {
    let interval = inner.options.sync_interval;
    let mut next = Instant::now() + interval;
    let record_interval = inner.options.wal_synced_record_interval;
    let mut next_record = Instant::now() + record_interval;
    let dump_period = inner.options.stats_dump_period;
    let mut next_dump = Instant::now() + dump_period;
    loop {
        {
            let mut state = inner.lock_state();
            while Instant::now() < next
                && !inner.shutting_down.load(Ordering::Acquire)
                && !inner.wal_sync_requested.swap(false, Ordering::AcqRel)
            {
                let wait = next.saturating_duration_since(Instant::now());
                state = inner
                    .state_changed
                    .wait_timeout(state, wait)
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .0;
            }
        }
        if inner.shutting_down.load(Ordering::Acquire) {
            return;
        }
        // Even after a background error: see `sync_wal`.
        let _ = sync_wal(inner);
        next = Instant::now() + interval;
        if !record_interval.is_zero() && Instant::now() >= next_record {
            // Errors become the sticky background error where they happen.
            let _ = crate::write::record_live_wal_synced(inner);
            next_record = Instant::now() + record_interval;
        }
        if !dump_period.is_zero() && Instant::now() >= next_dump {
            inner.info_log.log(format_args!(
                "compaction stats:\n{}",
                inner.compaction_stats()
            ));
            next_dump = Instant::now() + dump_period;
        }
    }
}

/// Writes and syncs WAL records acknowledged under `Flush` or `Buffered`.
///
/// The fdatasync runs without the WAL lock (through the log's concurrent syncer, where the
/// file system has one), so writers go on adding records meanwhile instead of waiting tens of
/// milliseconds for the device. What it makes durable is every group written before it
/// started, which is what `synced_groups` then counts.
///
/// Also after a background error: a failed flush or compaction must not leave acknowledged
/// writes unsynced for good (invariant 5 of docs/architecture.md bounds their loss by time).
/// A WAL that failed itself is poisoned, so this never retries its failed sync; it fails
/// without reporting again (its failure already paused writes, `crate::wal_recovery`).
pub(crate) fn sync_wal(inner: &DbInner) -> Result<()> {
    let mut wal = loop {
        let Ok(wal) = inner.lock_wal() else {
            return Ok(()); // Read-only: there is no WAL.
        };
        if let Some(reason) = wal.writer.poisoned_reason() {
            return Err(Error::Background {
                reason: format!("WAL {} failed earlier: {reason}", wal.number),
            });
        }
        if wal.synced_groups == wal.written_groups {
            return Ok(());
        }
        if wal.name_durable {
            break wal;
        }
        // The records survive a power cut only if the log's name does. Checked again under
        // the lock the sync is taken under: a switch may start another log meanwhile.
        drop(wal);
        if let Err(error) = crate::write::make_wal_name_durable(inner) {
            return report_wal_sync(inner, Err(error));
        }
    };
    let target = wal.written_groups;
    let target_bytes = wal.writer.file_size();
    let number = wal.number;
    let syncer = match wal.writer.concurrent_syncer() {
        Ok(Some(syncer)) => syncer,
        Ok(None) => {
            let result = wal.writer.sync();
            if result.is_ok() {
                wal.synced_groups = target;
                wal.synced_bytes = wal.synced_bytes.max(target_bytes);
            }
            drop(wal);
            return report_wal_sync(inner, result);
        }
        Err(error) => {
            drop(wal);
            return report_wal_sync(inner, Err(error));
        }
    };
    drop(wal);
    let result = syncer.sync_data().map_err(Error::Io);
    if let Ok(mut wal) = inner.lock_wal() {
        // A switch since may have started another log (after syncing this one itself).
        if wal.number == number {
            match &result {
                Ok(()) => {
                    wal.synced_groups = wal.synced_groups.max(target);
                    wal.synced_bytes = wal.synced_bytes.max(target_bytes);
                }
                Err(error) => wal.writer.poison(error.to_string()),
            }
        }
    }
    // Even when a newer log has taken over: the two descriptors share one open file, so this
    // failure may be the one the switch's sync no longer saw.
    report_wal_sync(inner, result)
}

/// Makes a failed WAL sync pause writes until the WAL is replaced (`crate::wal_recovery`).
/// Called without the WAL lock: the state lock comes first.
fn report_wal_sync(inner: &DbInner, result: Result<()>) -> Result<()> {
    if let Err(error) = &result {
        let mut state = inner.lock_state();
        crate::wal_recovery::wal_failed(
            inner,
            &mut state,
            format!("syncing the WAL failed: {error}"),
        );
    }
    result
}

/// Waits until no memtable is frozen and no compaction is needed or running. Fails with a
/// background error, or with the read error of a compaction that waits to be retried
/// (`compaction::read_failure`: it may never succeed, and waiting must not hang).
pub(crate) fn wait_idle(inner: &Arc<DbInner>) -> Result<()> {
    let mut state = inner.lock_state();
    loop {
        inner.check_background_error()?;
        let idle = state.keyspaces.values().all(|k| k.imm.is_empty())
            && state.compaction_claims.is_empty()
            && !crate::compaction::needs_compaction(&state, inner.options.clock.now_seconds());
        if idle {
            return Ok(());
        }
        if let Some(error) = state.compaction_reads.failing() {
            return Err(error);
        }
        inner.check_open()?;
        state = inner.wait_state(state);
    }
}
