//! The engine's error type.
//!
//! Every corruption names the file and the offset where the damage was found; a failed write
//! or sync of the WAL poisons its writer for good (docs/format/wal.md, "Writer") and pauses
//! writes with [`Error::Paused`] until the log is replaced (`crate::wal_recovery`).

use std::path::PathBuf;

/// What can go wrong in the key-value engine.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bytes on disk do not match their format page in docs/format/.
    #[error("corruption in {} at offset {offset}: {detail}", file.display())]
    Corruption {
        /// The damaged file (for a write batch decoded outside a file, a description of it).
        file: PathBuf,
        /// Offset of the damaged record (or byte) in that file.
        offset: u64,
        /// What check failed, and what to do about it where there is a choice.
        detail: String,
    },
    /// The file system failed.
    #[error(transparent)]
    Io(#[from] shale_fs::Error),
    /// A sorted table failed.
    #[error(transparent)]
    Sst(#[from] shale_sst::Error),
    /// A caller passed something that cannot work (an oversized key, a full batch, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The input is valid but needs a feature this build does not have (e.g. a newer format).
    #[error("not supported: {0}")]
    NotSupported(String),
    /// An earlier write or sync failed, so nothing more may be written until the database is
    /// reopened (recovery then decides from the log what survived).
    #[error("the database refuses writes after an earlier failure: {reason}; reopen it")]
    Background {
        /// The earlier failure, as it was reported.
        reason: String,
    },
    /// A flush or compaction failed writing its tables, or a WAL or MANIFEST append or sync
    /// failed (most often: the disk is full), so writes are paused; the job (for the WAL:
    /// replacing the log and flushing the memtables; for the MANIFEST: writing a new one) is
    /// retried in the background with backoff, or at once
    /// by [`crate::Db::resume`], and writes go on once it succeeds. Nothing acknowledged is
    /// lost, and a write refused with it is not applied.
    #[error(
        "writes are paused: {reason}; the failed flush, compaction, WAL recovery or MANIFEST \
         roll is retried in the background (Db::resume retries now) and writes resume once it \
         succeeds: free disk space if it is full"
    )]
    Paused {
        /// The failure, as it was reported.
        reason: String,
    },
    /// The database was opened read-only ([`crate::Db::open_read_only`]): it never writes,
    /// so it refuses the named operation.
    #[error("read-only: the database was opened read-only, so {0} is refused; open it with Db::open to write")]
    ReadOnly(String),
    /// A transaction could not go on: lock wait timeout, deadlock, conflict, size limit
    /// (docs/transactions.md, "Errors").
    #[error(transparent)]
    Transaction(#[from] crate::txn::TransactionError),
}

impl Error {
    /// Whether this failure of a flush's or compaction's file system call may go away on
    /// retry (db.rs invariant 4): an I/O error of a call that writes a table (create, append,
    /// flush, sync, directory sync, remove, rename), such as ENOSPC. Reads and corruption
    /// are not retried.
    pub(crate) fn is_retryable_write(&self) -> bool {
        use shale_fs::Op;
        let (Error::Io(e) | Error::Sst(shale_sst::Error::Io(e))) = self else {
            return false;
        };
        if e.is_direct_io_unsupported() {
            return false;
        }
        matches!(
            e.op(),
            Op::Create
                | Op::OpenAppend
                | Op::Append
                | Op::Flush
                | Op::SyncData
                | Op::SyncDir
                | Op::Rename
                | Op::Remove
                | Op::HardLink
                | Op::CreateDir
        )
    }

    /// Whether this is a [`Error::Corruption`] (of the engine's own files or of a table).
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            Error::Corruption { .. } | Error::Sst(shale_sst::Error::Corruption { .. })
        )
    }

    /// A copy of this error for handing out again (a reader that failed repeats its error on
    /// every later call). I/O errors keep their operation, path, kind and message.
    #[must_use]
    pub fn duplicate(&self) -> Error {
        match self {
            Error::Corruption {
                file,
                offset,
                detail,
            } => Error::Corruption {
                file: file.clone(),
                offset: *offset,
                detail: detail.clone(),
            },
            Error::Io(e) => Error::Io(e.duplicate()),
            Error::Sst(e) => Error::Sst(e.duplicate()),
            Error::InvalidArgument(s) => Error::InvalidArgument(s.clone()),
            Error::NotSupported(s) => Error::NotSupported(s.clone()),
            Error::Background { reason } => Error::Background {
                reason: reason.clone(),
            },
            Error::ReadOnly(s) => Error::ReadOnly(s.clone()),
            Error::Paused { reason } => Error::Paused {
                reason: reason.clone(),
            },
            Error::Transaction(e) => Error::Transaction(e.clone()),
        }
    }
}

/// Shorthand used throughout the crate.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;
    use shale_fs::{FaultError, Op};

    #[test]
    fn corruption_names_file_and_offset() {
        let e = Error::Corruption {
            file: "/db/000007.wal".into(),
            offset: 4096,
            detail: "checksum mismatch".into(),
        };
        assert_eq!(
            e.to_string(),
            "corruption in /db/000007.wal at offset 4096: checksum mismatch"
        );
        assert!(e.is_corruption());
        assert_eq!(e.duplicate().to_string(), e.to_string());
    }

    #[test]
    fn duplicate_keeps_io_kind_and_injected_fault() {
        let no_space = Error::Io(shale_fs::Error::io(
            Op::Append,
            "/db/000001.wal",
            std::io::Error::from(std::io::ErrorKind::StorageFull),
        ));
        match no_space.duplicate() {
            Error::Io(e) => {
                assert!(e.is_no_space());
                assert_eq!(e.op(), Op::Append);
            }
            other => panic!("{other:?}"),
        }
        let injected = Error::Io(shale_fs::Error::Injected {
            op: Op::SyncData,
            path: "/db/000001.wal".into(),
            fault: FaultError::FailedSync,
        });
        let copy = injected.duplicate();
        assert_eq!(copy.to_string(), injected.to_string());
        assert!(matches!(copy, Error::Io(e) if e.is_injected()));
    }

    #[test]
    fn background_says_what_to_do() {
        let e = Error::Background {
            reason: "fdatasync of /db/000003.wal failed: EIO".into(),
        };
        let text = e.to_string();
        assert!(text.contains("refuses writes"), "{text}");
        assert!(text.ends_with("reopen it"), "{text}");
        assert!(!e.is_corruption());
    }
}
