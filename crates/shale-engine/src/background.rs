//! Background threads: one flushes frozen memtables, one compacts, one syncs the WAL about
//! every `sync_interval` for `Flush` and `Buffered` writes.
//!
//! A panic in a job is caught and becomes the sticky background error (db.rs invariant 4), so
//! a bug in a background job stops writes with a clear message instead of leaving a database
//! that silently stopped flushing.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::{Builder, JoinHandle};
use std::time::Instant;

use crate::db::{DbInner, DbState};
use crate::error::{Error, Result};

/// Starts the background threads.
pub(crate) fn start(inner: &Arc<DbInner>) -> Result<Vec<JoinHandle<()>>> {
    let mut threads = Vec::new();
    for (name, job) in [
        ("shale-flush", run_flushes as fn(&Arc<DbInner>)),
        ("shale-compact", run_compactions),
        ("shale-wal-sync", run_wal_syncs),
    ] {
        let inner = inner.clone();
        let thread = Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                if catch_unwind(AssertUnwindSafe(|| job(&inner))).is_err() {
                    inner.set_background_error(format!("the {name} background thread panicked"));
                }
            })
            .map_err(|e| Error::Background {
                reason: format!("cannot start the {name} thread: {e}"),
            })?;
        threads.push(thread);
    }
    Ok(threads)
}

/// Waits until `has_work` holds; returns `false` when the thread should stop (shutdown or a
/// sticky error). While a recoverable error pauses writes, waits for its retry time (or
/// `Db::resume`) first, then works as usual: the job that failed is tried again, and its
/// success clears the error (db.rs invariant 4).
fn wait_for_work(inner: &DbInner, has_work: fn(&DbState) -> bool) -> bool {
    let mut state = inner.lock_state();
    loop {
        if inner.shutting_down.load(Ordering::Acquire) || inner.has_sticky_error() {
            return false;
        }
        if let Some(retry) = inner.retry_locked(&state) {
            let now = Instant::now();
            if !retry.now && now < retry.next_attempt {
                state = inner
                    .state_changed
                    .wait_timeout(state, retry.next_attempt - now)
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .0;
                continue;
            }
        }
        if has_work(&state) {
            return true;
        }
        state = inner.wait_state(state);
    }
}

fn run_flushes(inner: &Arc<DbInner>) {
    while wait_for_work(inner, |state| {
        state.keyspaces.values().any(|k| !k.imm.is_empty())
    }) {
        // Errors become the background error inside flush_one.
        let _ = crate::flush::flush_one(inner);
    }
}

fn run_compactions(inner: &Arc<DbInner>) {
    while wait_for_work(inner, crate::compaction::needs_compaction) {
        let _ = crate::compaction::compact_once(inner);
    }
}

fn run_wal_syncs(inner: &Arc<DbInner>) {
    let interval = inner.options.sync_interval;
    let mut next = Instant::now() + interval;
    loop {
        {
            let mut state = inner.lock_state();
            while Instant::now() < next && !inner.shutting_down.load(Ordering::Acquire) {
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
    }
}

/// Writes and syncs WAL records acknowledged under `Flush` or `Buffered`.
///
/// Also after a background error: a failed flush or compaction must not leave acknowledged
/// writes unsynced for good (invariant 5 of docs/architecture.md bounds their loss by time).
/// A WAL that failed itself is poisoned, so this never retries its failed sync.
pub(crate) fn sync_wal(inner: &DbInner) -> Result<()> {
    let Ok(mut wal) = inner.lock_wal() else {
        return Ok(()); // Read-only: there is no WAL.
    };
    if !wal.unsynced {
        return Ok(());
    }
    if let Err(error) = wal.writer.sync() {
        drop(wal);
        inner.set_background_error(format!("syncing the WAL failed: {error}"));
        return Err(error);
    }
    wal.unsynced = false;
    Ok(())
}

/// Waits until no memtable is frozen and no compaction is needed or running.
pub(crate) fn wait_idle(inner: &Arc<DbInner>) -> Result<()> {
    let mut state = inner.lock_state();
    loop {
        inner.check_background_error()?;
        let idle = state.keyspaces.values().all(|k| k.imm.is_empty())
            && state.compacting.is_empty()
            && !crate::compaction::needs_compaction(&state);
        if idle {
            return Ok(());
        }
        inner.check_open()?;
        state = inner.wait_state(state);
    }
}
