//! [`LogWriter`]: appends logical records to one WAL file (docs/format/wal.md, "Writer").
//!
//! Invariants:
//! 1. `block_offset == file_size % BLOCK_SIZE` while the writer is healthy.
//! 2. One `add_record` is one `append` call on the file: the fragments (and any block padding
//!    before them) are assembled in `buf` first, so a commit group reaches the file whole or,
//!    after a failure, as a torn tail the reader drops.
//! 3. After the first failed append, flush or sync the writer is poisoned: it never touches the
//!    file again, and every later call fails with [`Error::Background`] naming the first
//!    failure. A failed sync is never retried (shale-fs durability contract, rule 3).
//! 4. A log is only ever written into an empty file (never a recycled one), which is what makes
//!    records of versions 2 to 4, without a log number, sound (docs/format/wal.md, "Recycling").

use shale_fs::{DataSyncer, WritableFile};

use super::format::{
    file_header_payload, log_number_low, put_record, Layout, RecordType, BLOCK_SIZE,
    FORMAT_VERSION, OLDEST_FORMAT_VERSION,
};
use crate::error::{Error, Result};

/// A scratch buffer larger than this is released after the record that needed it.
const KEEP_BUFFER_BYTES: usize = 1 << 20;

/// Writes one WAL file front to back.
#[derive(Debug)]
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    log_number: u64,
    log_low: u32,
    /// The format version the file header names; the caller's payloads must be in its
    /// encoding (a commit group's: [`crate::wal::GroupRecord`]).
    format_version: u32,
    /// The layout of the records after the file header.
    layout: Layout,
    /// Offset inside the current block where the next record starts.
    block_offset: usize,
    file_size: u64,
    buf: Vec<u8>,
    /// The first failure, as text (invariant 3).
    poisoned: Option<String>,
    /// Whether a sync of this file failed: past its last good sync the file's contents are
    /// then unknown (the kernel may have dropped pages it could not write), so nobody may
    /// sync it or trust those bytes again (`crate::wal_recovery`).
    sync_failed: bool,
}

impl LogWriter {
    /// Starts log `log_number` in `file`, which must be empty (invariant 4), by appending the
    /// file header record. Writes format version [`FORMAT_VERSION`]. Nothing is synced yet.
    pub fn new(file: Box<dyn WritableFile>, log_number: u64) -> Result<LogWriter> {
        Self::with_format_version(file, log_number, FORMAT_VERSION)
    }

    /// [`Self::new`] writing format `version`, which must be one this build reads. Only tests
    /// need an older version (to check that logs written before an upgrade still replay); the
    /// payloads they add must be in that version's encoding
    /// ([`crate::WriteBatch::to_wal_record`]).
    pub fn with_format_version(
        file: Box<dyn WritableFile>,
        log_number: u64,
        version: u32,
    ) -> Result<LogWriter> {
        let layout = Layout::of_version(version).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "WAL format version {version} cannot be written: this build writes versions \
                 {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION}"
            ))
        })?;
        if !file.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "log {log_number} must be written into an empty file, not one of {} bytes",
                file.len()
            )));
        }
        let mut writer = LogWriter {
            file,
            log_number,
            log_low: log_number_low(log_number),
            format_version: version,
            layout,
            block_offset: 0,
            file_size: 0,
            buf: Vec::new(),
            poisoned: None,
            sync_failed: false,
        };
        // Invariant 3 of the format: the file header has the version 1 layout in every version.
        let header = file_header_payload(version, log_number);
        writer.write_fragments(Layout::WithLogNumber, RecordType::FileHeader, &header)?;
        Ok(writer)
    }

    /// Appends `payload` as one logical record (one `append` call on the file) and returns
    /// the file offset just past it. Durable only after [`Self::sync`].
    pub fn add_record(&mut self, payload: &[u8]) -> Result<u64> {
        self.check_healthy()?;
        self.write_fragments(self.layout, RecordType::Full, payload)?;
        Ok(self.file_size)
    }

    /// Hands appended bytes to the OS (they survive a process crash, not a power cut).
    pub fn flush(&mut self) -> Result<()> {
        self.check_healthy()?;
        let result = self.file.flush();
        self.poison_on_error(result)
    }

    /// Makes every record added so far durable (fdatasync). After a failure the writer is
    /// poisoned and never syncs again.
    pub fn sync(&mut self) -> Result<()> {
        self.check_healthy()?;
        let result = self.file.sync_data();
        self.sync_failed |= result.is_err();
        self.poison_on_error(result)
    }

    /// Flushes and returns a handle that syncs this log from another thread while records
    /// go on being added (shale-fs contract 4), or `None` if the file cannot be synced that
    /// way. A failed sync through the handle must be reported back with [`Self::poison`].
    pub fn concurrent_syncer(&mut self) -> Result<Option<Box<dyn DataSyncer>>> {
        self.check_healthy()?;
        let result = self.file.concurrent_syncer();
        match result {
            Ok(syncer) => Ok(syncer),
            Err(error) => {
                self.poisoned = Some(error.to_string());
                Err(Error::Io(error))
            }
        }
    }

    /// Marks the writer failed by a sync made through [`Self::concurrent_syncer`]'s handle
    /// (invariant 3), unless it has failed already.
    pub fn poison(&mut self, reason: String) {
        self.sync_failed = true;
        self.poisoned.get_or_insert(reason);
    }

    /// Whether a sync of this log failed (through [`Self::sync`] or reported with
    /// [`Self::poison`]): its bytes past the last good sync are not to be trusted.
    pub fn sync_failed(&self) -> bool {
        self.sync_failed
    }

    /// Bytes written to the file so far (header, padding and records).
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The log number this file was started with.
    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    /// The format version this log is written in (its file header names it).
    pub fn format_version(&self) -> u32 {
        self.format_version
    }

    /// The first failure, if the writer is poisoned.
    pub fn poisoned_reason(&self) -> Option<&str> {
        self.poisoned.as_deref()
    }

    fn check_healthy(&self) -> Result<()> {
        match &self.poisoned {
            None => Ok(()),
            Some(reason) => Err(Error::Background {
                reason: format!("log {} failed earlier: {reason}", self.log_number),
            }),
        }
    }

    fn poison_on_error(&mut self, result: shale_fs::Result<()>) -> Result<()> {
        result.map_err(|e| {
            self.poisoned = Some(e.to_string());
            Error::Io(e)
        })
    }

    /// Fragments `payload` (as `whole`, or FIRST/MIDDLE/LAST when it does not fit the rest
    /// of the block) into `buf` as records in `layout` and appends it in one call.
    fn write_fragments(&mut self, layout: Layout, whole: RecordType, payload: &[u8]) -> Result<()> {
        let header_size = layout.header_size();
        debug_assert_eq!(self.block_offset as u64, self.file_size % BLOCK_SIZE as u64);
        self.buf.clear();
        let mut block_offset = self.block_offset;
        let mut rest = payload;
        let mut first = true;
        loop {
            let leftover = BLOCK_SIZE - block_offset;
            if leftover < header_size {
                self.buf.resize(self.buf.len() + leftover, 0);
                block_offset = 0;
            }
            let room = BLOCK_SIZE - block_offset - header_size;
            let (fragment, after) = rest.split_at(rest.len().min(room));
            let last = after.is_empty();
            let kind = match (first, last) {
                (true, true) => whole,
                (true, false) => RecordType::First,
                (false, false) => RecordType::Middle,
                (false, true) => RecordType::Last,
            };
            put_record(&mut self.buf, layout, kind, self.log_low, fragment);
            block_offset += header_size + fragment.len();
            rest = after;
            first = false;
            if last {
                break;
            }
        }
        let result = self.file.append(&self.buf);
        if result.is_ok() {
            self.file_size += self.buf.len() as u64;
            self.block_offset = block_offset % BLOCK_SIZE;
        }
        if self.buf.capacity() > KEEP_BUFFER_BYTES {
            self.buf = Vec::new();
        }
        self.poison_on_error(result)
    }
}
