//! The write-ahead log, specified in docs/format/wal.md.
//!
//! A log file (`NNNNNN.wal`) is a file header record followed by logical records, each one
//! commit group's [`crate::WriteBatch`] (`batch_record`: its header in the form of the log's
//! format version). Records are laid out in 32 KiB blocks, fragmented where they do not fit,
//! and checksummed. [`LogWriter`] appends records; [`LogReader`] reads them back and judges
//! damage by a [`RecoveryMode`].

pub(crate) mod batch_record;
pub mod format;
mod reader;
mod writer;

pub use reader::{LogEnd, LogReader, RecoveryMode};
pub use writer::LogWriter;

pub(crate) use batch_record::GroupRecord;
