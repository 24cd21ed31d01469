//! Shale's LSM-tree key-value engine.
//!
//! Being built in increments (see docs/architecture.md). Landed so far: the write-ahead log
//! format ([`wal`], docs/format/wal.md) and the write batch encoding ([`WriteBatch`],
//! `docs/format/write_batch.md`) that WAL records carry.

mod batch;
mod error;
mod iterator;
pub mod wal;

pub use batch::{BatchEntry, WriteBatch};
pub use error::{Error, Result};
pub use iterator::{InternalIterator, VecIterator};
