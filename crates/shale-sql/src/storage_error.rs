//! The engine's write failures as MySQL errors (docs/reliability.md, "Disk full and failed
//! writes under the server").
//!
//! - Writes paused because the disk is full (`shale_engine::Error::Paused` with ENOSPC): a
//!   flush or compaction could not write its table, or a WAL or MANIFEST append failed. 1021
//!   `Disk full
//!   (...); waiting for someone to free some space... (errno: 28 - No space left on device)`.
//!   True to the text: the engine retries in the background (for the WAL: replaces the log and
//!   flushes the memtables; for the MANIFEST: writes a new one) and writes go on by themselves
//!   once there is room.
//! - Writes paused for another failure of a table write, of the WAL or of the MANIFEST (a
//!   failed fsync, say): 1030 `Got error 5 - '...' from storage engine`, with the engine's
//!   reason (it says writes resume once the retry succeeds). The failed file is never synced
//!   again; the engine replaces it.
//! - A sticky error (`Background`: a panic outside a job's table writing, three in a row, an
//!   invalid edit) and a write failure that reaches the statement as a bare `Io` of
//!   a write operation: 1030, with the OS errno (28 for a full disk, else 5) and a text that
//!   says the server must be restarted before it takes writes again, and that nothing
//!   acknowledged is lost.
//! - A failed read: 1030 with the engine's text (no restart advice: the next read may work).
//!
//! Everything else from the engine stays the caller's to map.

use crate::error::SqlError;

/// `errno` of ENOSPC and EIO, the numbers MySQL prints in these messages.
const ENOSPC: i32 = 28;
const EIO: i32 = 5;

/// What a client is told to do after the MANIFEST failed.
const RESTART: &str = "the server refuses writes until it is restarted (reads still work; \
                       nothing acknowledged is lost)";

/// The MySQL error for an engine failure of storage, or `None` when `error` is not one.
pub(crate) fn storage_error(error: &shale_engine::Error) -> Option<SqlError> {
    use shale_engine::Error as E;
    match error {
        E::Paused { reason } if says_no_space(reason) => Some(disk_full(reason)),
        E::Paused { .. } => Some(engine_error(EIO, &error.to_string())),
        E::Background { reason } => {
            let errno = if says_no_space(reason) { ENOSPC } else { EIO };
            Some(engine_error(
                errno,
                &format!("an earlier write failed ({reason}); {RESTART}"),
            ))
        }
        E::Io(io) => {
            let errno = if io.is_no_space() { ENOSPC } else { EIO };
            if is_write(io.op()) {
                Some(engine_error(errno, &format!("{io}; {RESTART}")))
            } else {
                Some(engine_error(errno, &io.to_string()))
            }
        }
        _ => None,
    }
}

/// Both the OS's text ("No space left on device (os error 28)") and an injected fault's.
fn says_no_space(reason: &str) -> bool {
    reason
        .to_ascii_lowercase()
        .contains("no space left on device")
}

fn is_write(op: shale_fs::Op) -> bool {
    use shale_fs::Op;
    !matches!(
        op,
        Op::OpenRead | Op::Read | Op::List | Op::Lock | Op::Size | Op::Exists
    )
}

/// MySQL's ER_DISK_FULL.
fn disk_full(reason: &str) -> SqlError {
    SqlError::new(
        1021,
        "HY000",
        format!(
            "Disk full ({reason}); waiting for someone to free some space... \
             (errno: {ENOSPC} - No space left on device)"
        ),
    )
}

/// MySQL's ER_GET_ERRNO.
fn engine_error(errno: i32, text: &str) -> SqlError {
    SqlError::new(
        1030,
        "HY000",
        format!("Got error {errno} - '{text}' from storage engine"),
    )
}

#[cfg(test)]
mod tests {
    use super::storage_error;
    use shale_engine::Error as E;
    use shale_fs::{FaultError, Op};

    fn injected(op: Op, path: &str, fault: FaultError) -> E {
        E::Io(shale_fs::Error::Injected {
            op,
            path: path.into(),
            fault,
        })
    }

    #[test]
    fn a_pause_for_a_full_disk_is_1021_and_other_pauses_1030() {
        let full = E::Paused {
            reason: "flush failed: create /d/000012.sst: no space left on device (ENOSPC)".into(),
        };
        let e = storage_error(&full).unwrap();
        assert_eq!((e.code, e.sqlstate), (1021, "HY000"));
        assert!(e.message.starts_with("Disk full (flush failed"), "{e}");
        assert!(
            e.message.ends_with("(errno: 28 - No space left on device)"),
            "{e}"
        );
        let eio = E::Paused {
            reason: "flush failed: sync /d/000012.sst: I/O error (EIO)".into(),
        };
        let e = storage_error(&eio).unwrap();
        assert_eq!(e.code, 1030);
        assert!(
            e.message.starts_with("Got error 5 - 'writes are paused"),
            "{e}"
        );
    }

    /// A pause whose `reason` ends in a failed append of `path` is 1021 naming the file, and
    /// one ending in a failed fsync is 1030; neither advises a restart.
    fn assert_paused_codes(path: &str, reason: &str) {
        let append = injected(Op::Append, path, FaultError::NoSpace);
        let full = E::Paused {
            reason: format!("{reason}: {append}"),
        };
        let e = storage_error(&full).unwrap();
        assert_eq!((e.code, e.sqlstate), (1021, "HY000"));
        let name = path.rsplit('/').next().unwrap_or(path);
        assert!(e.message.contains(name), "{e}");
        assert!(!e.message.contains("restart"), "{e}");
        let sync = injected(Op::SyncData, path, FaultError::FailedSync);
        let failed_sync = E::Paused {
            reason: format!("{reason}: {sync}"),
        };
        let e = storage_error(&failed_sync).unwrap();
        assert_eq!(e.code, 1030);
        assert!(
            e.message.starts_with("Got error 5 - 'writes are paused"),
            "{e}"
        );
        assert!(!e.message.contains("restart"), "{e}");
    }

    #[test]
    fn a_paused_log_is_1021_for_a_full_disk_and_1030_for_a_failed_fsync() {
        assert_paused_codes("/d/000007.wal", "writing the WAL failed (WAL 000007.wal)");
        let append = injected(Op::Append, "/d/000007.wal", FaultError::NoSpace);
        let full = E::Paused {
            reason: format!("writing the WAL failed (WAL 000007.wal): {append}"),
        };
        let e = storage_error(&full).unwrap();
        assert!(e.message.starts_with("Disk full (writing the WAL"), "{e}");
    }

    #[test]
    fn a_paused_manifest_is_1021_for_a_full_disk_and_1030_for_a_failed_fsync_without_restart() {
        assert_paused_codes(
            "/d/MANIFEST-000005",
            "recording flushed table 12 in the MANIFEST failed",
        );
    }

    #[test]
    fn a_bare_write_failure_and_a_sticky_error_say_restart() {
        let first = injected(Op::Append, "/d/MANIFEST-000005", FaultError::NoSpace);
        let e = storage_error(&first).unwrap();
        assert_eq!(e.code, 1030);
        assert!(e.message.starts_with("Got error 28 - '"), "{e}");
        assert!(
            e.message.contains("refuses writes until it is restarted"),
            "{e}"
        );
        let later = E::Background {
            reason: "recording flushed table 12 in the MANIFEST failed: sync failed".into(),
        };
        let e = storage_error(&later).unwrap();
        assert!(
            e.message
                .starts_with("Got error 5 - 'an earlier write failed"),
            "{e}"
        );
        assert!(e.message.ends_with("' from storage engine"), "{e}");
        assert!(e.message.contains("restarted"), "{e}");
    }

    #[test]
    fn a_failed_read_is_1030_without_restart_advice_and_other_errors_are_left() {
        let read = injected(Op::Read, "/d/000012.sst", FaultError::Eio);
        let e = storage_error(&read).unwrap();
        assert_eq!(e.code, 1030);
        assert!(!e.message.contains("restart"), "{e}");
        assert!(storage_error(&E::InvalidArgument("key too large".into())).is_none());
    }
}
