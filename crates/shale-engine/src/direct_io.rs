//! Direct I/O of table files: which [`IoMode`] the options ask for, and the check at open
//! that the file system takes it (docs/operations.md, "Direct I/O").
//!
//! `Options::use_direct_reads` opens every table the table cache reads (user reads,
//! iterators, compaction inputs) with `O_DIRECT`; `use_direct_io_for_flush_and_compaction`
//! creates the tables of flushes and compactions with it. Everything else (WAL, MANIFEST,
//! OPTIONS, LOG, blob files, ingestion, backups, checkpoints, repair) stays buffered, as in
//! `RocksDB`: small appends that are synced often gain nothing from bypassing the page cache.
//!
//! Invariants:
//! 1. A writable open checks, before recovery writes anything, that the directory's file
//!    system accepts `O_DIRECT` when either option is on; a refusal fails the open with
//!    [`Error::InvalidArgument`] naming the option and the path, instead of pausing the first
//!    flush (a refusal would otherwise look like a retryable write failure).
//! 2. The probe opens an existing file (`LOCK` for a writable open, `CURRENT` for a read-only
//!    one) and writes nothing: `O_DIRECT` support is a property of the file system, checked by
//!    the kernel at open whatever the access mode.

use std::path::Path;

use shale_fs::{FileSystem, IoMode};

use crate::error::{Error, Result};
use crate::inspect::LOCK_FILE_NAME;
use crate::options::Options;
use crate::version::CURRENT_FILE_NAME;

/// How the table cache opens table files.
pub(crate) fn table_read_mode(options: &Options) -> IoMode {
    if options.use_direct_reads {
        IoMode::Direct
    } else {
        IoMode::Buffered
    }
}

/// How flushes and compactions create table files.
pub(crate) fn table_write_mode(options: &Options) -> IoMode {
    if options.use_direct_io_for_flush_and_compaction {
        IoMode::Direct
    } else {
        IoMode::Buffered
    }
}

/// The direct I/O options that are on, by name (for messages).
fn options_on(options: &Options, writable: bool) -> Vec<&'static str> {
    let mut names = Vec::new();
    if options.use_direct_reads {
        names.push("use_direct_reads");
    }
    if writable && options.use_direct_io_for_flush_and_compaction {
        names.push("use_direct_io_for_flush_and_compaction");
    }
    names
}

/// At a writable open, with `LOCK` taken: checks that the database's file system takes
/// `O_DIRECT` if either option asks for it (invariants 1 and 2).
pub(crate) fn check_writable_open(
    fs: &dyn FileSystem,
    dir: &Path,
    options: &Options,
) -> Result<()> {
    check_supported(fs, &dir.join(LOCK_FILE_NAME), options, true)
}

/// At a read-only open, once `CURRENT` is known to exist: the same for `use_direct_reads`
/// (a read-only open writes no table).
pub(crate) fn check_read_only_open(
    fs: &dyn FileSystem,
    dir: &Path,
    options: &Options,
) -> Result<()> {
    check_supported(fs, &dir.join(CURRENT_FILE_NAME), options, false)
}

/// Checks that `probe`, an existing file of the database, opens with `O_DIRECT` when the
/// options ask for direct I/O. `writable`: whether flushes and compactions can run.
fn check_supported(
    fs: &dyn FileSystem,
    probe: &Path,
    options: &Options,
    writable: bool,
) -> Result<()> {
    let names = options_on(options, writable);
    if names.is_empty() {
        return Ok(());
    }
    match fs.open_read_with(probe, IoMode::Direct) {
        Ok(_) => Ok(()),
        // The file system's message names the file and says what to do.
        Err(e) if e.is_direct_io_unsupported() => Err(Error::InvalidArgument(format!(
            "{} is on, but {e}",
            names.join(" and "),
        ))),
        Err(e) => Err(e.into()),
    }
}
