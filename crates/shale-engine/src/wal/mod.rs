//! The write-ahead log, specified in docs/format/wal.md.
//!
//! A log file (`NNNNNN.wal`) is a file header record followed by logical records, each the
//! encoding of one commit group's [`crate::WriteBatch`]. Records are laid out in 32 KiB
//! blocks, fragmented where they do not fit, and checksummed; every record carries the low 32
//! bits of its log number so that the stale contents of a recycled file never read as data.
//! [`LogWriter`] appends records; [`LogReader`] reads them back and judges damage by a
//! [`RecoveryMode`].

pub mod format;
mod reader;
mod writer;

pub use reader::{LogEnd, LogReader, RecoveryMode};
pub use writer::LogWriter;
