//! Manual compaction in the background: `Db::compact_range_in_background` runs
//! `compact_range` on its own thread and returns a [`BackgroundCompaction`] to wait on. The
//! thread is joined by `Db::close`, so no compaction outlives the database.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::{Builder, JoinHandle};

use crate::db::DbInner;
use crate::error::{Error, Result};

/// The outcome slot shared by the thread and the handle.
#[derive(Debug, Default)]
struct Outcome {
    result: Mutex<Option<Result<()>>>,
    done: Condvar,
}

/// A manual compaction running in the background (`Db::compact_range_in_background`).
/// Dropping the handle lets it run on; `Db::close` stops it between steps.
#[derive(Debug)]
pub struct BackgroundCompaction {
    outcome: Arc<Outcome>,
}

impl BackgroundCompaction {
    /// Whether it has finished (successfully or not).
    pub fn is_finished(&self) -> bool {
        self.lock().is_some()
    }

    /// Waits until it has finished and returns its result (an error if the database closed
    /// before it was done).
    pub fn wait(self) -> Result<()> {
        let mut result = self.lock();
        loop {
            if let Some(result) = result.take() {
                return result;
            }
            result = self
                .outcome
                .done
                .wait(result)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Result<()>>> {
        self.outcome
            .result
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Starts `compact_range(keyspace, start, end)` on a new thread; returns the handle to wait on
/// and the thread for `Db::close` to join.
pub(crate) fn start(
    inner: &Arc<DbInner>,
    keyspace: u32,
    start: Option<Vec<u8>>,
    end: Option<Vec<u8>>,
) -> Result<(BackgroundCompaction, JoinHandle<()>)> {
    let outcome = Arc::new(Outcome::default());
    let (thread_inner, thread_outcome) = (inner.clone(), outcome.clone());
    let thread = Builder::new()
        .name("shale-manual-compact".to_owned())
        .spawn(move || {
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                super::compact_range(&thread_inner, keyspace, start.as_deref(), end.as_deref())
            }));
            let result = run.unwrap_or_else(|_| {
                let reason = "the background manual compaction panicked".to_owned();
                thread_inner.set_background_error(reason.clone());
                Err(Error::Background { reason })
            });
            *thread_outcome
                .result
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(result);
            thread_outcome.done.notify_all();
        })
        .map_err(|e| Error::Background {
            reason: format!("cannot start a background manual compaction thread: {e}"),
        })?;
    Ok((BackgroundCompaction { outcome }, thread))
}
