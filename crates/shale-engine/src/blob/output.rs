//! [`BlobOutputs`]: the blob files one flush or compaction writes. Values at or above the
//! keyspace's `min_blob_size` go to the current file; a file is finished once it reaches
//! `blob_file_size`. The caller allocates numbers (marking them pending outputs, so no
//! obsolete-file sweep deletes them), syncs the directory, and records the finished files in
//! the same MANIFEST edit as the tables that reference them (blob/mod.rs invariant 1).

use std::path::Path;
use std::sync::Arc;

use shale_fs::FileSystem;
use shale_sst::Compression;

use super::format::blob_file_name;
use super::writer::BlobFileWriter;
use super::BlobFileMeta;
use crate::error::Result;
use crate::options::KeyspaceOptions;
use crate::rate_limiter::{IoPriority, RateLimitedFile, RateLimiter};

/// What a keyspace's options say about writing blob files.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlobSettings {
    pub keyspace: u32,
    pub min_blob_size: u64,
    pub file_size: u64,
    pub compression: Compression,
    /// Values carry a TTL write time, which references copy (docs/format/blob.md).
    pub ttl: bool,
}

impl BlobSettings {
    /// The settings of keyspace `id`, or `None` when it does not write blob files.
    pub(crate) fn of(id: u32, options: &KeyspaceOptions) -> Option<BlobSettings> {
        options.enable_blob_files.then_some(BlobSettings {
            keyspace: id,
            min_blob_size: options.min_blob_size,
            file_size: options.blob_file_size,
            compression: options.blob_compression,
            ttl: options.ttl.is_some(),
        })
    }
}

/// The blob files being written by one job.
pub(crate) struct BlobOutputs<'a> {
    fs: &'a dyn FileSystem,
    dir: &'a Path,
    settings: BlobSettings,
    rate_limiter: Option<&'a Arc<RateLimiter>>,
    priority: IoPriority,
    new_number: &'a (dyn Fn() -> u64 + Sync),
    current: Option<BlobFileWriter>,
    finished: Vec<BlobFileMeta>,
    /// Every number allocated, finished or not (for [`Self::discard`]).
    numbers: Vec<u64>,
}

impl<'a> BlobOutputs<'a> {
    pub(crate) fn new(
        fs: &'a dyn FileSystem,
        dir: &'a Path,
        settings: BlobSettings,
        rate_limiter: Option<&'a Arc<RateLimiter>>,
        priority: IoPriority,
        new_number: &'a (dyn Fn() -> u64 + Sync),
    ) -> Self {
        BlobOutputs {
            fs,
            dir,
            settings,
            rate_limiter,
            priority,
            new_number,
            current: None,
            finished: Vec::new(),
            numbers: Vec::new(),
        }
    }

    /// Whether a stored value of `len` bytes goes to a blob file.
    pub(crate) fn separates(&self, len: usize) -> bool {
        len as u64 >= self.settings.min_blob_size
    }

    /// Writes `stored_value` of `user_key` to the current blob file (opening one if needed)
    /// and returns the encoded reference for the table, and the blob file's number.
    pub(crate) fn add(&mut self, user_key: &[u8], stored_value: &[u8]) -> Result<(Vec<u8>, u64)> {
        if self.current.is_none() {
            let number = (self.new_number)();
            self.numbers.push(number);
            let file = RateLimitedFile::wrap(
                self.fs.create(&blob_file_name(self.dir, number))?,
                self.rate_limiter,
                self.priority,
            );
            self.current = Some(BlobFileWriter::new(
                file,
                self.dir,
                number,
                self.settings.keyspace,
                self.settings.compression,
            )?);
        }
        let Some(writer) = self.current.as_mut() else {
            unreachable!("opened above");
        };
        let reference = writer.add(user_key, stored_value)?;
        let number = writer.number();
        if writer.file_size() >= self.settings.file_size {
            self.finish_current()?;
        }
        Ok((
            reference.encode_for(stored_value, self.settings.ttl),
            number,
        ))
    }

    fn finish_current(&mut self) -> Result<()> {
        if let Some(writer) = self.current.take() {
            self.finished.push(writer.finish()?);
        }
        Ok(())
    }

    /// Finishes the current file; returns every finished file (synced; the caller syncs the
    /// directory).
    pub(crate) fn finish(mut self) -> Result<Vec<BlobFileMeta>> {
        self.finish_current()?;
        Ok(self.finished)
    }

    /// Every number allocated so far.
    pub(crate) fn numbers(&self) -> &[u64] {
        &self.numbers
    }
}

/// After a failed job: deletes its blob files `numbers` (best effort: a leftover is
/// unreferenced and deleted as obsolete later).
pub(crate) fn discard_blob_files(fs: &dyn FileSystem, dir: &Path, numbers: &[u64]) {
    for &number in numbers {
        let _ = fs.remove(&blob_file_name(dir, number));
    }
}
