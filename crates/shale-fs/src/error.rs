//! The error type of the file-system seam.
//!
//! Every variant names the operation ([`Op`]) and the path, so a message read in a log says
//! which file failed and how without a backtrace.
//!
//! Invariants:
//! 1. An `std::io::Error` of kind `NotFound` is always reported as [`Error::NotFound`], never as
//!    [`Error::Io`], so callers can match "missing file" without inspecting io kinds.
//! 2. [`Error::is_no_space`] is true for a real `ENOSPC` and for an injected
//!    [`FaultError::NoSpace`] alike, so out-of-space handling is testable with `FaultFs`.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::fault::FaultError;

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// A file-system operation, named in errors and used by `FaultFs` to count and match calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// [`crate::FileSystem::create`].
    Create,
    /// [`crate::FileSystem::open_append`].
    OpenAppend,
    /// [`crate::FileSystem::open_read`].
    OpenRead,
    /// [`crate::RandomAccessFile::read_exact_at`].
    Read,
    /// [`crate::WritableFile::append`].
    Append,
    /// [`crate::WritableFile::flush`].
    Flush,
    /// [`crate::WritableFile::sync_data`].
    SyncData,
    /// [`crate::FileSystem::rename`].
    Rename,
    /// [`crate::FileSystem::remove`].
    Remove,
    /// [`crate::FileSystem::hard_link`].
    HardLink,
    /// [`crate::FileSystem::list`].
    List,
    /// [`crate::FileSystem::create_dir_all`].
    CreateDir,
    /// [`crate::FileSystem::sync_dir`].
    SyncDir,
    /// [`crate::FileSystem::lock`].
    Lock,
    /// [`crate::FileSystem::size`] and [`crate::RandomAccessFile::size`].
    Size,
    /// [`crate::FileSystem::exists`].
    Exists,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Create => "create",
            Op::OpenAppend => "open for append",
            Op::OpenRead => "open for read",
            Op::Read => "read",
            Op::Append => "append",
            Op::Flush => "flush",
            Op::SyncData => "fdatasync",
            Op::Rename => "rename",
            Op::Remove => "remove",
            Op::HardLink => "hard link",
            Op::List => "listing",
            Op::CreateDir => "creating directory",
            Op::SyncDir => "directory fsync",
            Op::Lock => "locking",
            Op::Size => "size query",
            Op::Exists => "existence check",
        })
    }
}

/// A failed file-system operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The OS reported an error. For [`Op::Rename`] and [`Op::HardLink`] `path` is the source
    /// and the target is named in `source`'s message.
    #[error("{op} of {} failed: {source}", path.display())]
    Io {
        /// What was being done.
        op: Op,
        /// The file or directory it was done to.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The lock file is held by another process or by another handle in this process.
    #[error(
        "{} is locked by another process or handle; is another Shale running on this directory?",
        path.display()
    )]
    Locked {
        /// The lock file.
        path: PathBuf,
    },
    /// A positional read ran past the end of the file.
    #[error(
        "read of {len} bytes at offset {offset} of {} runs past its end ({file_size} bytes); \
         the file is truncated or the offset that led here is corrupt",
        path.display()
    )]
    UnexpectedEof {
        /// The file read.
        path: PathBuf,
        /// Where the read started.
        offset: u64,
        /// How many bytes were asked for.
        len: usize,
        /// The file's size when the read failed.
        file_size: u64,
    },
    /// The file or directory does not exist.
    #[error("{op} of {} failed: no such file or directory", path.display())]
    NotFound {
        /// What was being done.
        op: Op,
        /// The missing path.
        path: PathBuf,
    },
    /// The file system refused to open a file with `O_DIRECT` (`EINVAL`: tmpfs before Linux
    /// 6.6, some FUSE and network file systems). Retrying cannot help.
    #[error(
        "{op} of {} with O_DIRECT failed: the file system refuses direct I/O ({source}); \
         turn the direct I/O option off or put the database on a file system that supports \
         it (ext4, xfs)",
        path.display()
    )]
    DirectIoUnsupported {
        /// What was being done.
        op: Op,
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// `FaultFs` injected this failure on purpose (tests only).
    #[error("{op} of {} failed: injected {fault} (FaultFs)", path.display())]
    Injected {
        /// The operation that was failed.
        op: Op,
        /// Its path.
        path: PathBuf,
        /// The failure injected.
        fault: FaultError,
    },
}

impl Error {
    /// Wraps an OS error for `op` on `path`, turning `NotFound` into [`Error::NotFound`].
    pub fn io(op: Op, path: impl Into<PathBuf>, source: io::Error) -> Self {
        let path = path.into();
        if source.kind() == io::ErrorKind::NotFound {
            Error::NotFound { op, path }
        } else {
            Error::Io { op, path, source }
        }
    }

    /// Wraps an OS error of a two-path operation (rename, hard link); the target is kept in the
    /// message while the error kind (and so [`Self::is_no_space`]) is preserved.
    pub(crate) fn io2(op: Op, from: &Path, to: &Path, source: &io::Error) -> Self {
        if source.kind() == io::ErrorKind::NotFound {
            return Error::NotFound {
                op,
                path: from.to_path_buf(),
            };
        }
        let kind = source.kind();
        let no_space = is_enospc(source);
        let message = format!("{source} (target {})", to.display());
        let source = if no_space {
            io::Error::new(io::ErrorKind::StorageFull, message)
        } else {
            io::Error::new(kind, message)
        };
        Error::Io {
            op,
            path: from.to_path_buf(),
            source,
        }
    }

    /// Whether the file or directory did not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound { .. })
    }

    /// Whether the device is full: a real `ENOSPC` or an injected [`FaultError::NoSpace`].
    pub fn is_no_space(&self) -> bool {
        match self {
            Error::Io { source, .. } => is_enospc(source),
            Error::Injected { fault, .. } => *fault == FaultError::NoSpace,
            _ => false,
        }
    }

    /// Whether the file system refused `O_DIRECT` ([`Error::DirectIoUnsupported`]).
    pub fn is_direct_io_unsupported(&self) -> bool {
        matches!(self, Error::DirectIoUnsupported { .. })
    }

    /// Whether `FaultFs` injected this error.
    pub fn is_injected(&self) -> bool {
        matches!(self, Error::Injected { .. })
    }

    /// The operation that failed.
    pub fn op(&self) -> Op {
        match self {
            Error::Io { op, .. }
            | Error::NotFound { op, .. }
            | Error::Injected { op, .. }
            | Error::DirectIoUnsupported { op, .. } => *op,
            Error::Locked { .. } => Op::Lock,
            Error::UnexpectedEof { .. } => Op::Read,
        }
    }

    /// The path the failed operation was applied to.
    pub fn path(&self) -> &Path {
        match self {
            Error::Io { path, .. }
            | Error::Locked { path }
            | Error::UnexpectedEof { path, .. }
            | Error::NotFound { path, .. }
            | Error::Injected { path, .. }
            | Error::DirectIoUnsupported { path, .. } => path,
        }
    }

    /// A copy of this error (`io::Error` cannot be cloned), for a reader or a sticky error that
    /// hands the same failure out again: the same variant, so that [`Self::is_no_space`] and
    /// friends still answer, with the same operation, path and message.
    #[must_use]
    pub fn duplicate(&self) -> Error {
        match self {
            Error::Io { op, path, source } => Error::Io {
                op: *op,
                path: path.clone(),
                source: io::Error::new(source.kind(), source.to_string()),
            },
            Error::Locked { path } => Error::Locked { path: path.clone() },
            Error::UnexpectedEof {
                path,
                offset,
                len,
                file_size,
            } => Error::UnexpectedEof {
                path: path.clone(),
                offset: *offset,
                len: *len,
                file_size: *file_size,
            },
            Error::NotFound { op, path } => Error::NotFound {
                op: *op,
                path: path.clone(),
            },
            Error::Injected { op, path, fault } => Error::Injected {
                op: *op,
                path: path.clone(),
                fault: *fault,
            },
            Error::DirectIoUnsupported { op, path, source } => Error::DirectIoUnsupported {
                op: *op,
                path: path.clone(),
                source: io::Error::new(source.kind(), source.to_string()),
            },
        }
    }
}

fn is_enospc(source: &io::Error) -> bool {
    source.kind() == io::ErrorKind::StorageFull || source.raw_os_error() == Some(libc::ENOSPC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_display_names_operation_path_and_cause() {
        let err = Error::io(
            Op::SyncData,
            "/x/000012.wal",
            io::Error::from_raw_os_error(libc::EIO),
        );
        let text = err.to_string();
        assert!(
            text.starts_with("fdatasync of /x/000012.wal failed: "),
            "{text}"
        );
        assert!(!err.is_not_found());
        assert!(!err.is_no_space());
    }

    #[test]
    fn not_found_io_error_becomes_not_found_variant() {
        let err = Error::io(
            Op::OpenRead,
            "/x/1.sst",
            io::Error::from(io::ErrorKind::NotFound),
        );
        assert!(err.is_not_found());
        assert!(matches!(
            err,
            Error::NotFound {
                op: Op::OpenRead,
                ..
            }
        ));
    }

    #[test]
    fn duplicate_keeps_variant_kind_and_message() {
        let enospc = Error::io(
            Op::Append,
            "/x/7.sst",
            io::Error::from_raw_os_error(libc::ENOSPC),
        );
        let copy = enospc.duplicate();
        assert!(copy.is_no_space(), "{copy}");
        assert_eq!(copy.to_string(), enospc.to_string());
        let missing = Error::io(
            Op::OpenRead,
            "/x/1.sst",
            io::Error::from(io::ErrorKind::NotFound),
        );
        assert!(missing.duplicate().is_not_found());
        let eof = Error::UnexpectedEof {
            path: "/x/2.sst".into(),
            offset: 10,
            len: 4,
            file_size: 12,
        };
        assert_eq!(eof.duplicate().to_string(), eof.to_string());
    }

    #[test]
    fn enospc_is_no_space_even_through_two_path_wrapping() {
        let direct = Error::io(Op::Append, "/x", io::Error::from_raw_os_error(libc::ENOSPC));
        assert!(direct.is_no_space());
        let wrapped = Error::io2(
            Op::Rename,
            Path::new("/a"),
            Path::new("/b"),
            &io::Error::from_raw_os_error(libc::ENOSPC),
        );
        assert!(wrapped.is_no_space());
        assert!(wrapped.to_string().contains("target /b"), "{wrapped}");
        let injected = Error::Injected {
            op: Op::Append,
            path: "/x".into(),
            fault: FaultError::NoSpace,
        };
        assert!(injected.is_no_space());
        assert!(injected.is_injected());
    }

    #[test]
    fn locked_message_suggests_cause() {
        let err = Error::Locked {
            path: "/db/LOCK".into(),
        };
        assert!(err.to_string().contains("is another Shale running"));
        assert_eq!(err.op(), Op::Lock);
        assert_eq!(err.path(), Path::new("/db/LOCK"));
    }
}
