//! [`TableFileWriter`]: builds a table file outside any database from sorted input, ready for
//! [`crate::Db::ingest`] (like `RocksDB`'s `SstFileWriter`).
//!
//! The file is an ordinary table (docs/format/sst.md) marked `shale.external = 1`; every entry
//! has seqno 0 and the database that ingests it reads them all at one global seqno
//! (docs/format/sst.md, "External files and the global seqno").
//!
//! Invariants:
//! 1. Point entries (puts and deletes) come in strictly increasing user-key order, so each user
//!    key has exactly one entry; a key out of order or repeated is refused, naming both keys,
//!    before anything of it is written.
//! 2. Range deletions may come in any order (they are kept in their own block), each with
//!    `start < end`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_sst::{
    printable, BytewiseComparator, Comparator, Compression, TableWriter, ValueKind, WriterOptions,
};

use crate::error::{Error, Result};
use crate::options::{KeyspaceOptions, Options};

/// What a finished external table holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalFileInfo {
    /// Where the file was written.
    pub path: PathBuf,
    /// The smallest user key of a point entry or range-deletion start (empty if neither).
    pub smallest_key: Vec<u8>,
    /// The largest user key of a point entry (empty if none); range deletions end below
    /// [`Self::largest_range_deletion_end`].
    pub largest_key: Vec<u8>,
    /// The largest exclusive end of a range deletion, if the file has one.
    pub largest_range_deletion_end: Option<Vec<u8>>,
    /// Point entries (puts and deletes).
    pub num_entries: u64,
    /// Range deletions.
    pub num_range_deletions: u64,
    /// The file size in bytes.
    pub file_size: u64,
}

/// Choices of a [`TableFileWriter`] beyond the database's and keyspace's options.
#[derive(Debug, Clone)]
pub struct TableFileWriterOptions {
    /// The codec of the file's data blocks. `None` (the default) uses the codec of the
    /// keyspace's bottommost level, where an ingested file lands unless it overlaps data
    /// already in the tree: the file then holds what compaction would have left there. Set
    /// it to write a file as an upper level would hold it (say lz4, cheaper to write than
    /// zstd), or to compare ingestion with puts on equal terms: the same codec for both.
    /// With zstd the file trains its own dictionary as a bottommost compaction does
    /// (`KeyspaceOptions::zstd_max_dict_bytes`); `zstd-dict` itself is refused.
    pub compression: Option<Compression>,
    /// Every this many bytes written, the OS is asked to start writing them to the device, so
    /// that the sync at [`TableFileWriter::finish`] waits for the last stretch only, not the
    /// whole file (`RocksDB`'s `bytes_per_sync`). 0 never asks. Default 1 MiB.
    pub bytes_per_sync: u64,
}

impl Default for TableFileWriterOptions {
    fn default() -> Self {
        TableFileWriterOptions {
            compression: None,
            bytes_per_sync: 1 << 20,
        }
    }
}

/// Writes one external table file from sorted input; see the module docs.
#[derive(Debug)]
pub struct TableFileWriter {
    writer: TableWriter,
    path: PathBuf,
    comparator: Arc<dyn Comparator>,
    /// The comparator is the bytewise one: keys are compared inline (a comparator's name is
    /// its order).
    bytewise: bool,
    largest_range_deletion_end: Option<Vec<u8>>,
    num_range_deletions: u64,
    /// The internal key being added, reused to save an allocation per entry.
    internal_key: Vec<u8>,
}

impl TableFileWriter {
    /// Creates `path` on `options.file_system` for a keyspace with `keyspace_options` in a
    /// database opened with `options` (its comparator, block size, checksum, bloom filter and
    /// prefix extractor). Data blocks use the codec of the bottommost level, where ingested
    /// files usually land.
    pub fn create(
        path: impl AsRef<Path>,
        options: &Options,
        keyspace_options: &KeyspaceOptions,
    ) -> Result<Self> {
        Self::create_with(
            path,
            options,
            keyspace_options,
            &TableFileWriterOptions::default(),
        )
    }

    /// [`Self::create`] with the choices of `writer_options` (the codec).
    pub fn create_with(
        path: impl AsRef<Path>,
        options: &Options,
        keyspace_options: &KeyspaceOptions,
        writer_options: &TableFileWriterOptions,
    ) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        if writer_options.compression == Some(Compression::ZstdDict) {
            return Err(Error::InvalidArgument(format!(
                "{}: TableFileWriterOptions::compression cannot be zstd-dict (it needs a \
                 dictionary); use zstd with KeyspaceOptions::zstd_max_dict_bytes",
                path.display()
            )));
        }
        let chosen_compression = writer_options.compression;
        let bytes_per_sync = writer_options.bytes_per_sync;
        let mut writer_options =
            crate::flush::writer_options(&options.comparator, keyspace_options, (0, ""));
        // Which keyspace the file goes to is known only when it is ingested: the file names
        // none (no `user.keyspace_id`).
        writer_options.user_properties.clear();
        writer_options.compression = chosen_compression.unwrap_or_else(|| {
            keyspace_options.compression_for_level(crate::version::DEFAULT_NUM_LEVELS - 1, true)
        });
        // As a bottommost compaction writes zstd: with a dictionary trained from the file.
        writer_options.zstd_max_dict_bytes = keyspace_options.zstd_max_dict_bytes;
        writer_options.zstd_max_train_bytes = keyspace_options.zstd_max_train_bytes;
        let writer_options = WriterOptions {
            external_file: true,
            bytes_per_sync,
            ..writer_options
        };
        let writer = TableWriter::create(&*options.file_system, &path, writer_options)?;
        Ok(TableFileWriter {
            writer,
            path,
            comparator: options.comparator.clone(),
            bytewise: options.comparator.name() == BytewiseComparator::NAME,
            largest_range_deletion_end: None,
            num_range_deletions: 0,
            internal_key: Vec::new(),
        })
    }

    /// Adds `key = value`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.add_point(key, ValueKind::Value, value)
    }

    /// Adds a deletion of `key` (it hides older values of `key` in the database).
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.add_point(key, ValueKind::Deletion, b"")
    }

    /// Adds a deletion of every key in `[start, end)` (older data in the database).
    pub fn delete_range(&mut self, start: &[u8], end: &[u8]) -> Result<()> {
        if !self.comparator.compare(start, end).is_lt() {
            return Err(Error::InvalidArgument(format!(
                "range deletion [{} .. {}) for {} is empty or reversed: start must be below end",
                printable(start),
                printable(end),
                self.path.display()
            )));
        }
        self.writer.add_range_deletion(start, end, 0)?;
        let cmp = &self.comparator;
        if self
            .largest_range_deletion_end
            .as_deref()
            .is_none_or(|e| cmp.compare(end, e).is_gt())
        {
            self.largest_range_deletion_end = Some(end.to_vec());
        }
        self.num_range_deletions += 1;
        Ok(())
    }

    fn add_point(&mut self, key: &[u8], kind: ValueKind, value: &[u8]) -> Result<()> {
        // The table writer holds the previous entry's internal key: no copy of it here.
        if let Some(last) = self.writer.last_key().map(user_key_of) {
            let order = if self.bytewise {
                last.cmp(key)
            } else {
                self.comparator.compare(last, key)
            };
            if !order.is_lt() {
                let what = if order.is_eq() { "repeats" } else { "is below" };
                return Err(Error::InvalidArgument(format!(
                    "key {} {what} the previous key {} in {}: an external table needs strictly \
                     increasing keys",
                    printable(key),
                    printable(last),
                    self.path.display()
                )));
            }
        }
        self.internal_key.clear();
        self.internal_key.extend_from_slice(key);
        self.internal_key
            .extend_from_slice(&u64::from(kind.tag()).to_le_bytes());
        Ok(self.writer.add(&self.internal_key, value)?)
    }

    /// Point entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.writer.num_entries()
    }

    /// Roughly the bytes the file would have if finished now (for cutting files by size).
    pub fn estimated_file_size(&self) -> u64 {
        self.writer.estimated_file_size()
    }

    /// Writes the rest of the table and syncs it. A file with no entry and no range deletion
    /// is refused (there is nothing to ingest).
    pub fn finish(self) -> Result<ExternalFileInfo> {
        let largest_key = self
            .writer
            .last_key()
            .map(|k| user_key_of(k).to_vec())
            .unwrap_or_default();
        if self.writer.num_entries() == 0 && self.num_range_deletions == 0 {
            return Err(Error::InvalidArgument(format!(
                "external table {} is empty: add at least one entry before finish",
                self.path.display()
            )));
        }
        let (file_size, props) = self.writer.finish()?;
        // The smallest key property already covers the range deletions' starts.
        let smallest_key = user_key_of(&props.smallest_key).to_vec();
        Ok(ExternalFileInfo {
            path: self.path,
            smallest_key,
            largest_key,
            largest_range_deletion_end: self.largest_range_deletion_end,
            num_entries: props.num_entries,
            num_range_deletions: props.num_range_deletions,
            file_size,
        })
    }
}

/// The user key of an encoded internal key (the writer only holds well-formed ones).
fn user_key_of(internal_key: &[u8]) -> &[u8] {
    &internal_key[..internal_key.len().saturating_sub(8)]
}
