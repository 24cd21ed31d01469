//! A panic inside a flush or compaction job (a bug, or an allocation failure): retried a few
//! times before it becomes the sticky background error (docs/reliability.md, "A panic in a
//! background job").
//!
//! What makes a retry safe: a job does its long work (merging, writing and syncing its
//! tables) without the state lock, and changes shared state only under that lock: it installs
//! its edit (`VersionSet::log_and_apply`, then the new Version), pops the flushed memtable, and
//! releases its file numbers there. A panic caught around the unlocked part ([`catch`]) has
//! therefore changed nothing a reader or the MANIFEST sees: the Version, the frozen memtable
//! and the compaction's inputs are as before the job, exactly as after a failed table write
//! (db.rs invariant 4), and the job can run again as a new job with new file numbers.
//!
//! Invariants:
//! 1. A panic is retried only if no lock is poisoned ([`crate::db::DbInner::locks_poisoned`]):
//!    a thread that panicked holding the state or WAL lock may have left what it guards
//!    half-changed (an edit in the MANIFEST but not in memory, say), and that is sticky.
//! 2. At most [`MAX_PANICS_IN_A_ROW`] panics of one kind of job in a row are retried; the next
//!    one is sticky. A success of that kind starts the count again.
//! 3. While a retry is due, writes are paused ([`crate::Error::Paused`], the backoff of db.rs
//!    invariant 4): the same bug could be hit by the next job, and a pause is what the user
//!    sees either way.
//!
//! The unlocked part of a compaction includes its subcompactions: a range thread's panic is
//! raised again on the compaction's thread once every range has ended and every output is
//! discarded (`compaction::run`), so it is caught and retried as the compaction's own panic;
//! the Version is untouched there as well.
//!
//! A panic anywhere else on a background thread ends the thread and is sticky at once
//! (`crate::background`), because there the retry's premise does not hold:
//! - picking a job, installing its edit and Version, and deleting obsolete files run under
//!   the state lock, so a panic there poisons it: the edit may be in the MANIFEST and not in
//!   memory, a compaction's files left claimed, a file deleted that the Version still names;
//! - a MANIFEST roll holds the state lock throughout, and a WAL switch reads the failed log
//!   back as the write group's leader: a panic leaves the leadership (and every queued
//!   writer) unreleased, which only the switch's own end gives back;
//! - the WAL sync thread's `fdatasync` runs without a lock, but after a panic inside it no
//!   one knows whether the sync happened, and a sync of unknown outcome is never retried
//!   (the shale-fs durability contract).

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::db::{DbInner, DbState};
use crate::error::Error;
use crate::stats::StatCounters;

/// Panics of one kind of job in a row that are retried; the next one is sticky.
pub(crate) const MAX_PANICS_IN_A_ROW: u32 = 3;

/// The kinds of jobs counted apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobKind {
    Flush,
    Compaction,
}

/// Panics in a row by kind of job (`DbState::job_panics`).
#[derive(Debug, Default)]
pub(crate) struct JobPanics {
    flush: u32,
    compaction: u32,
}

impl JobPanics {
    fn count_mut(&mut self, kind: JobKind) -> &mut u32 {
        match kind {
            JobKind::Flush => &mut self.flush,
            JobKind::Compaction => &mut self.compaction,
        }
    }

    /// A job of `kind` succeeded (invariant 2).
    pub(crate) fn succeeded(&mut self, kind: JobKind) {
        *self.count_mut(kind) = 0;
    }
}

/// Runs `work`, the part of a job that holds no lock; `Err` with the panic's message if it
/// panicked.
pub(crate) fn catch<T>(work: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(work)).map_err(|payload| message(payload.as_ref()))
}

/// The text a panic was raised with.
pub(crate) fn message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// Reports that the unlocked part of a job of `kind`, described by `what`, panicked with
/// `panic`. The caller undid the job's own changes (partial tables, file numbers) first.
/// Returns the error to hand to the job's caller: the pause while a retry is due, else the
/// sticky error.
pub(crate) fn panicked_locked(
    inner: &DbInner,
    state: &mut DbState,
    kind: JobKind,
    what: &str,
    panic: &str,
) -> Error {
    StatCounters::add(&inner.stats.background_job_panics, 1);
    let count = state.job_panics.count_mut(kind);
    *count = count.saturating_add(1);
    let count = *count;
    let reason = format!("{what} panicked ({count} in a row): {panic}");
    if inner.locks_poisoned() {
        inner.set_background_error_locked(
            state,
            format!("{reason}; a lock it held was poisoned, so the state may be half-changed"),
        );
    } else if count >= MAX_PANICS_IN_A_ROW {
        inner.set_background_error_locked(
            state,
            format!("{reason}; not retried after {MAX_PANICS_IN_A_ROW} panics in a row"),
        );
    } else {
        inner.info_log.log(format_args!(
            "{reason}; nothing was installed, retried after a pause"
        ));
        inner.set_recoverable_error_locked(state, reason.clone());
    }
    inner
        .background_error()
        .unwrap_or(Error::Background { reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_of_a_panic_is_kept() {
        assert_eq!(
            catch(|| panic!("boom {}", 7)),
            Err::<(), _>("boom 7".to_owned())
        );
        assert_eq!(
            catch(|| panic!("static")),
            Err::<(), _>("static".to_owned())
        );
        assert_eq!(catch(|| 5), Ok(5));
    }
}
