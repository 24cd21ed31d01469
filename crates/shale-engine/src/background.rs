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

use crate::db::DbInner;
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

fn run_flushes(inner: &Arc<DbInner>) {
    loop {
        {
            let mut state = inner.lock_state();
            loop {
                let stop = inner.shutting_down.load(Ordering::Acquire)
                    || inner.background_error().is_some();
                if stop {
                    return;
                }
                if state.keyspaces.values().any(|k| !k.imm.is_empty()) {
                    break;
                }
                state = inner.wait_state(state);
            }
        }
        // Errors are sticky inside flush_one; the loop then stops at the check above.
        let _ = crate::flush::flush_one(inner);
    }
}

fn run_compactions(inner: &Arc<DbInner>) {
    loop {
        {
            let mut state = inner.lock_state();
            loop {
                let stop = inner.shutting_down.load(Ordering::Acquire)
                    || inner.background_error().is_some();
                if stop {
                    return;
                }
                if crate::compaction::needs_compaction(&state) {
                    break;
                }
                state = inner.wait_state(state);
            }
        }
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
