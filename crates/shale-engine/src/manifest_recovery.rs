//! Online recovery from a failed MANIFEST append, sync or switch (`RocksDB`'s auto-resume
//! for MANIFEST write errors): writes pause ([`crate::Error::Paused`]) instead of stopping
//! until a reopen, and go on once a new MANIFEST is current (docs/reliability.md, "A failed
//! MANIFEST write or fsync"; docs/format/manifest.md, "Rolling after a failed write").
//!
//! The steps:
//! 1. [`edit_failed`]: the caller of a failed `log_and_apply` (flush, compaction, WAL
//!    recovery, ingestion, keyspace change, the periodic `WAL_SYNCED` record) reports it. The
//!    version set did not install the edit and now refuses edits until it rolls
//!    (`version/set.rs` invariant 2); a recoverable error pauses writes with backoff. A flush
//!    or compaction keeps its memtable or inputs, as after a failed table write.
//! 2. [`roll`], on the flush thread when the retry is due (or at once after `Db::resume`):
//!    `VersionSet::roll_manifest` writes the new MANIFEST, syncs it, renames `CURRENT` over to
//!    it and syncs the directory. Only then does the error clear and writes resume; the failed
//!    flush or compaction is then tried again as any other job. A failure leaves the roll due
//!    and backs off further.
//!
//! Invariants:
//! 1. The in-memory version is always one a reopen could recover: before `CURRENT` moves, the
//!    old MANIFEST holds the version with or without the failed edit (a torn tail is dropped
//!    at open), and every file either names stays (the failed edit's outputs are in
//!    `live_files`, its deletions are still in the current version); after, the new MANIFEST
//!    holds exactly the in-memory version.
//! 2. No write is accepted while a roll is due: an acknowledged write is in a memtable whose
//!    WAL the MANIFEST a reopen reads still needs (no log number advanced in memory past
//!    what that MANIFEST may hold).
//!
//! A failed edit that the version set refused for a reason other than a write (an invalid
//! edit: a bug) stays sticky, as does any error when no roll is due.

use crate::db::{DbInner, DbState};
use crate::error::Error;

/// Step 1: reports the failure `error` of a MANIFEST edit, described by `reason`, and returns
/// the error to hand to the caller: the pause ([`Error::Paused`], naming the failure) when the
/// database recovers by itself, else the sticky error.
pub(crate) fn edit_failed(inner: &DbInner, state: &DbState, reason: String, error: Error) -> Error {
    if !state.versions.needs_roll() {
        inner.set_background_error_locked(state, reason);
        return inner.background_error().unwrap_or(error);
    }
    // Refused without writing (a roll was already due): the pause is in place, and its
    // backoff must not grow for a write that was never tried.
    if !(matches!(error, Error::Paused { .. }) && inner.background_error().is_some()) {
        inner.info_log.log(format_args!(
            "MANIFEST write failed, writes paused until a new MANIFEST is written: {reason}"
        ));
        inner.set_recoverable_error_locked(state, reason);
    }
    inner.background_error().unwrap_or(error)
}

/// Whether step 2 is due.
pub(crate) fn needs_roll(state: &DbState) -> bool {
    state.versions.needs_roll()
}

/// Step 2. A failure becomes the (recoverable) background error.
pub(crate) fn roll(inner: &DbInner) {
    let mut state = inner.lock_state();
    if !needs_roll(&state) || inner.has_sticky_error() {
        return;
    }
    match state.versions.roll_manifest() {
        Ok(()) => {
            inner.info_log.log(format_args!(
                "MANIFEST rolled to MANIFEST-{:06} after a failed write; writes resume",
                state.versions.manifest_file_number()
            ));
            inner.clear_recoverable_error_locked(&mut state);
            crate::flush::delete_obsolete_files(inner, &mut state);
            inner.state_changed.notify_all();
        }
        Err(error) => {
            let reason = state
                .versions
                .failed_reason_text()
                .unwrap_or_else(|| error.to_string());
            inner.set_recoverable_error_locked(&state, reason);
        }
    }
}
