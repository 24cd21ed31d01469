//! Online recovery from a failed WAL append, flush or sync (`RocksDB`'s auto-resume for WAL
//! errors): writes pause ([`crate::Error::Paused`]) instead of stopping until a reopen, and go
//! on once every acknowledged write is safe in a table file (docs/reliability.md, "A failed
//! log write or fsync").
//!
//! The steps, each retried with the backoff of db.rs invariant 4 when it fails:
//! 1. [`wal_failed`]: the failing write and its group get the error (`write_queue` invariant 3:
//!    nothing of the group reached a memtable), the writer of the failed log is poisoned (it
//!    never appends or syncs again: after a failed fdatasync the kernel may have dropped the
//!    pages it could not write, so the file's state past its last good sync is unknown), and
//!    a recoverable error pauses every later write. The first retry is due at once. A failed
//!    directory sync making the log's name durable is reported here too, by whoever needed
//!    it (a `Sync` write, the WAL syncer, a memtable switch, a flush or keyspace change about
//!    to write an edit naming the log): step 2 syncs the directory again before any edit
//!    names the log, and a new log replaces it.
//! 2. [`switch`], run as the write leader (no insert in flight, db.rs invariant 2). First a
//!    MANIFEST edit records the failed log's end (`WAL_END`, see [`recorded_end`]): a later
//!    open reads the log only that far, so a refused write whose record reached the file (its
//!    fsync failed) never comes back, and a torn tail left by a failed append is not damage
//!    in a log that is no longer the newest. Then a new log is created and becomes the WAL,
//!    and every non-empty memtable is frozen.
//! 3. The flush thread flushes the frozen memtables as usual; when none needing a log up to
//!    the failed one is left, the error clears ([`blocks_clear`]) and writes go on. The flush
//!    edits move every log number past the failed log, which is then deleted as obsolete.
//!
//! Invariants:
//! 1. The memtables hold exactly the acknowledged writes: a group whose WAL step failed
//!    inserts nothing, and no group passes its WAL step while the error is set.
//! 2. Writes resume only once the memtables that were active at the failure are in table
//!    files named by the MANIFEST: before that, a crash would replay the failed log up to its
//!    recorded end only, and a write accepted into the new log could then outlive an older
//!    acknowledged one (a `Flush`/`Buffered` write past the last sync), which is not a prefix.
//! 3. `WAL_END` is written before the new log exists: while the failed log is still the
//!    newest, a torn tail in it is an ordinary torn tail to an open.
//!
//! A failed MANIFEST write of step 2 pauses as any failed MANIFEST write does
//! (`crate::manifest_recovery`): the MANIFEST is rolled first, then the switch is retried. A
//! failure outside the WAL and the MANIFEST (reads, a panic) is sticky.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::db::{DbInner, DbState, WalState};
use crate::error::{Error, Result};
use crate::version::VersionEdit;
use crate::wal::format::log_file_name;
use crate::wal::{GroupRecord, LogReader, RecoveryMode};

/// A failed log whose recovery has not finished (`DbState::wal_recovery`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct WalRecovery {
    /// The newest log that failed (or that was current when a switch away from it failed).
    failed_log: u64,
    /// Step 2 is done: the failed log is no longer the WAL.
    switched: bool,
}

/// Step 1: a WAL append, flush or sync failed (or creating the next log did). Pauses writes
/// with `reason` and asks for the recovery at once. Called with the state lock held and
/// without the WAL lock. A sticky error already set stays.
pub(crate) fn wal_failed(inner: &DbInner, state: &mut DbState, reason: String) -> Error {
    let failed_log = inner.lock_wal().map_or(0, |wal| wal.number);
    match &mut state.wal_recovery {
        Some(recovery) if recovery.switched && recovery.failed_log >= failed_log => {
            // A late report about a log already switched away from (a background sync that
            // ran beside the switch): its recovery is under way.
        }
        Some(recovery) => {
            recovery.failed_log = recovery.failed_log.max(failed_log);
            recovery.switched = false;
        }
        None => {
            state.wal_recovery = Some(WalRecovery {
                failed_log,
                switched: false,
            });
        }
    }
    inner.info_log.log(format_args!(
        "WAL {failed_log} failed, writes paused until it is replaced and the memtables \
         flushed: {reason}"
    ));
    inner.set_recoverable_error_locked(state, reason.clone());
    inner.request_retry_locked(state);
    // A sticky error set before stays, and is what the caller then gets.
    inner.background_error().unwrap_or(Error::Paused { reason })
}

/// Whether step 2 is due: a failed log is still the WAL.
pub(crate) fn needs_switch(state: &DbState) -> bool {
    state.wal_recovery.is_some_and(|r| !r.switched)
}

/// Whether a WAL recovery keeps writes paused: its switch is not done, or a memtable that
/// needs the failed log (or an older one) is not flushed yet.
pub(crate) fn blocks_clear(state: &DbState) -> bool {
    let Some(recovery) = state.wal_recovery else {
        return false;
    };
    !recovery.switched
        || state
            .keyspaces
            .values()
            .any(|k| k.imm.iter().any(|f| f.log_number <= recovery.failed_log))
}

/// Step 2, as the write leader. Returns `Ok` when there was nothing to do; a failure is
/// already the (recoverable or, for the MANIFEST, sticky) background error.
pub(crate) fn switch(inner: &Arc<DbInner>) -> Result<()> {
    crate::write::lead_while_paused(inner, || switch_as_leader(inner))
}

fn switch_as_leader(inner: &DbInner) -> Result<()> {
    let state = inner.lock_state();
    if !needs_switch(&state) || inner.has_sticky_error() {
        return Ok(());
    }
    let failed = {
        let wal = inner.lock_wal()?;
        FailedLog {
            number: wal.number,
            synced: wal.synced_bytes,
            acknowledged: wal.written_end,
            sync_failed: wal.writer.sync_failed(),
        }
    };
    // Reading the log back takes a while: not under the state lock (readers take it). As the
    // leader, nothing appends to the WAL meanwhile.
    drop(state);
    let end = recorded_end(inner, &failed);
    let old = failed.number;
    // The edit names the failed log: its directory entry must be durable first, as for any
    // edit naming a log (a power cut would otherwise leave a MANIFEST naming a missing file).
    if let Err(error) = crate::write::make_wal_name_durable(inner) {
        let state = inner.lock_state();
        inner.set_recoverable_error_locked(
            &state,
            format!("syncing the directory entry of failed WAL {old} failed: {error}"),
        );
        return Err(error);
    }
    let mut state = inner.lock_state();
    if !needs_switch(&state) || inner.has_sticky_error() {
        return Ok(());
    }
    // Step 2, the end first (invariant 3).
    if state.versions.current().wal_end(old) != Some(end) {
        let mut edit = VersionEdit::new();
        crate::write::live_wal_synced_locked(inner, &mut state, &mut edit);
        edit.wal_synced.retain(|(number, _)| *number != old);
        edit.set_wal_end(old, end);
        let allocated = inner.last_allocated_seqno.load(Ordering::Acquire);
        let last = allocated.max(state.versions.last_sequence());
        state.versions.set_last_sequence(last);
        if let Err(error) = state.versions.log_and_apply(edit) {
            let error = crate::manifest_recovery::edit_failed(
                inner,
                &state,
                format!(
                    "recording the end ({end}) of failed WAL {old} in the MANIFEST failed: {error}"
                ),
                error,
            );
            return Err(error);
        }
    }
    // Step 2, the new log.
    let number = state.versions.new_file_number();
    let writer = match crate::write::create_wal(inner, number) {
        Ok(writer) => writer,
        Err(error) => {
            // Best effort: a leftover is below the next log number and deleted as obsolete.
            let _ = inner.fs.remove(&inner.dir.join(log_file_name(number)));
            let reason =
                format!("creating WAL {number} to replace failed WAL {old} failed: {error}");
            inner.set_recoverable_error_locked(&state, reason);
            return Err(error);
        }
    };
    {
        let mut wal = inner.lock_wal()?;
        // The failed log's writer is dropped here, never synced again.
        *wal = WalState {
            written_end: writer.file_size(),
            writer,
            number,
            written_groups: 0,
            synced_groups: 0,
            synced_bytes: 0,
            name_durable: false,
            record: GroupRecord::new(),
        };
    }
    let frozen: Vec<u32> = state
        .keyspaces
        .values()
        .filter(|k| !k.mem.is_empty())
        .map(|k| k.id)
        .collect();
    crate::write::freeze_memtables_locked(inner, &mut state, &frozen, number);
    if let Some(recovery) = &mut state.wal_recovery {
        recovery.failed_log = old;
        recovery.switched = true;
    }
    inner.info_log.log(format_args!(
        "WAL recovery: WAL {old} (recorded end {end}) replaced by WAL {number}; flushing \
         {} memtables before writes resume",
        frozen.len()
    ));
    // Nothing to flush: writes go on now.
    inner.clear_recoverable_error_locked(&mut state);
    inner.state_changed.notify_all();
    Ok(())
}

/// What step 2 needs to know of the failed log.
struct FailedLog {
    number: u64,
    /// Bytes a completed sync made durable.
    synced: u64,
    /// The end of the last record whose group's WAL step succeeded (`WalState::written_end`):
    /// a group whose append worked but whose sync or flush failed is refused, and its record
    /// lies after this.
    acknowledged: u64,
    sync_failed: bool,
}

/// Where a later open must stop reading the failed log: past every acknowledged record that
/// is durable, before any refused one.
///
/// After a failed sync that is the last synced size: the bytes after it are unknown (never
/// read back, never synced again), so acknowledged `Flush`/`Buffered` writes after it live
/// only in the memtables until the recovery's flush. After a failed append (no failed sync)
/// the log is read back up to the acknowledged end, through the OS: a failed append may have
/// cut off records that sat in the writer's buffer. What it holds is synced (through a new
/// handle: no sync of this file has failed) and recorded. If reading or syncing fails, the
/// last synced size it is.
fn recorded_end(inner: &DbInner, failed: &FailedLog) -> u64 {
    if failed.sync_failed || failed.acknowledged <= failed.synced {
        return failed.synced;
    }
    let path = inner.dir.join(log_file_name(failed.number));
    let read_back = || -> Result<u64> {
        let file = inner.fs.open_read(&path)?;
        let mut reader = LogReader::with_end(
            file,
            failed.number,
            RecoveryMode::PointInTime,
            Some(failed.acknowledged),
        )?;
        while reader.read_record()?.is_some() {}
        let end = reader.last_record_end();
        if end > failed.synced {
            inner.fs.open_append(&path)?.sync_data()?;
        }
        Ok(end)
    };
    match read_back() {
        Ok(end) => end.max(failed.synced),
        Err(error) => {
            inner.info_log.log(format_args!(
                "WAL recovery: reading back WAL {} failed, its end is its synced size {}: \
                 {error}",
                failed.number, failed.synced
            ));
            failed.synced
        }
    }
}
