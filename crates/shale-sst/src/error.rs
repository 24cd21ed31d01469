//! The error type of the sorted-table layer.

use std::path::PathBuf;

/// What can go wrong reading or writing a table file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file's bytes do not match docs/format/sst.md.
    #[error("corruption in {file} at offset {offset}: {detail}")]
    Corruption {
        /// The table file.
        file: PathBuf,
        /// File offset of the block or footer where the damage was found.
        offset: u64,
        /// What check failed.
        detail: String,
    },
    /// The file system failed.
    #[error(transparent)]
    Io(#[from] shale_fs::Error),
    /// A caller passed something that cannot work (bad option, keys out of order, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The file is valid but needs a feature this build does not have (e.g. a newer format).
    #[error("not supported: {0}")]
    NotSupported(String),
}

impl Error {
    /// A copy of this error for handing out again (iterators keep their first error and
    /// report it on every later `status` call). File-system errors keep their variant,
    /// operation, path and fields; an OS error's `source` becomes a plain message of the same
    /// kind.
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
            Error::InvalidArgument(s) => Error::InvalidArgument(s.clone()),
            Error::NotSupported(s) => Error::NotSupported(s.clone()),
        }
    }
}

/// Shorthand used throughout the crate.
pub type Result<T> = std::result::Result<T, Error>;

/// A corruption found while decoding bytes whose file and offset the decoder does not know.
/// Callers attach the location with [`DecodeError::at`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl DecodeError {
    /// Builds a decode error from anything printable.
    pub fn new(detail: impl Into<String>) -> Self {
        DecodeError(detail.into())
    }

    /// Turns the decode error into a [`Error::Corruption`] at `file` and `offset`.
    pub fn at(self, file: impl Into<PathBuf>, offset: u64) -> Error {
        Error::Corruption {
            file: file.into(),
            offset,
            detail: self.0,
        }
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
