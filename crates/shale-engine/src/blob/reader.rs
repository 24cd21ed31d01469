//! Reading blob files: [`BlobFileReader`] resolves references (docs/format/blob.md, "Blob
//! reference"), [`scan_blob_file`] checks a whole file, and [`BlobFileCache`] keeps open
//! readers by file number, as the table cache keeps tables.
//!
//! Invariant: an evicted or erased reader stays usable by whoever holds its `Arc`; the file is
//! deleted only when no Version references it (`VersionSet::live_files`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use shale_fs::{FileSystem, RandomAccessFile};

use super::format::{
    blob_file_name, mask, record_size, BlobFooter, BlobHeader, BlobRecord, BlobReference,
    FOOTER_SIZE, HEADER_SIZE, RECORD_HEADER_SIZE,
};
use crate::error::{Error, Result};

/// Reads of one blob file above this size are refused as corrupt (no record is larger).
const MAX_RECORD_READ: u64 = 1 << 33;

fn corruption(path: &Path, offset: u64, detail: impl Into<String>) -> Error {
    Error::Corruption {
        file: path.to_path_buf(),
        offset,
        detail: detail.into(),
    }
}

/// An open blob file.
#[derive(Debug)]
pub(crate) struct BlobFileReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    size: u64,
    header: BlobHeader,
}

impl BlobFileReader {
    /// The open file (see [`shale_sst::Table::file`]).
    pub(crate) fn file(&self) -> &Arc<dyn RandomAccessFile> {
        &self.file
    }

    /// Opens blob file `path`, checking its header.
    pub(crate) fn open(fs: &dyn FileSystem, path: &Path) -> Result<BlobFileReader> {
        BlobFileReader::from_file(fs.open_read(path)?, path)
    }

    /// Reads the blob file already open as `file` (found at `path`), checking its header.
    pub(crate) fn from_file(
        file: Arc<dyn RandomAccessFile>,
        path: &Path,
    ) -> Result<BlobFileReader> {
        let size = file.size()?;
        if size < HEADER_SIZE + FOOTER_SIZE {
            return Err(corruption(
                path,
                0,
                format!(
                    "a {size}-byte file cannot be a blob file (header and footer are 64 bytes)"
                ),
            ));
        }
        let mut bytes = [0u8; HEADER_SIZE as usize];
        file.read_exact_at(0, &mut bytes)?;
        let header = BlobHeader::decode(&bytes).map_err(|(detail, unsupported)| {
            if unsupported {
                Error::NotSupported(format!("{}: {detail}", path.display()))
            } else {
                corruption(path, 0, detail)
            }
        })?;
        Ok(BlobFileReader {
            file,
            path: path.to_path_buf(),
            size,
            header,
        })
    }

    /// The value `reference` points at, for `user_key`: every check of the format page,
    /// then decompression. Failures are `Corruption` naming this file and the record offset.
    pub(crate) fn read(&self, reference: &BlobReference, user_key: &[u8]) -> Result<Vec<u8>> {
        let offset = reference.offset;
        let len = record_size(user_key.len(), u64::from(reference.value_len));
        let records_end = self.size - FOOTER_SIZE;
        if offset < HEADER_SIZE
            || len > MAX_RECORD_READ
            || offset.checked_add(len).is_none_or(|end| end > records_end)
        {
            return Err(corruption(
                &self.path,
                offset,
                format!(
                    "a reference to a {len}-byte record at offset {offset} lies outside the \
                     records (bytes {HEADER_SIZE}..{records_end})"
                ),
            ));
        }
        let mut bytes = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
        self.file.read_exact_at(offset, &mut bytes)?;
        let (record, _) =
            BlobRecord::decode(&bytes).map_err(|detail| corruption(&self.path, offset, detail))?;
        if record.key != user_key {
            return Err(corruption(
                &self.path,
                offset,
                format!(
                    "the record holds key {}, but the reference is of key {}",
                    shale_sst::printable(record.key),
                    shale_sst::printable(user_key)
                ),
            ));
        }
        if record.compression != reference.compression
            || record.value.len() != reference.value_len as usize
        {
            return Err(corruption(
                &self.path,
                offset,
                format!(
                    "the record's value is {} bytes with codec {}, the reference says {} bytes \
                     with codec {}",
                    record.value.len(),
                    record.compression,
                    reference.value_len,
                    reference.compression
                ),
            ));
        }
        shale_sst::decompress_value(record.compression, record.value).map_err(|e| {
            corruption(
                &self.path,
                offset,
                format!("the record's value does not decompress: {e}"),
            )
        })
    }
}

/// What a full check of a blob file found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobFileSummary {
    /// The header.
    pub header: BlobHeader,
    /// The footer (its counts match the records).
    pub footer: BlobFooter,
    /// The file size.
    pub size: u64,
}

/// Reads blob file `path` front to back: header, every record's checksum, the footer, and
/// that the footer's counts and records checksum match the records. `each` sees every record
/// with its offset (and may stop the scan with an error).
pub fn scan_blob_file(
    fs: &dyn FileSystem,
    path: &Path,
    each: &mut dyn FnMut(u64, &BlobRecord<'_>) -> Result<()>,
) -> Result<BlobFileSummary> {
    let reader = BlobFileReader::open(fs, path)?;
    let records_end = reader.size - FOOTER_SIZE;
    let mut footer_bytes = [0u8; FOOTER_SIZE as usize];
    reader.file.read_exact_at(records_end, &mut footer_bytes)?;
    let footer = BlobFooter::decode(&footer_bytes).map_err(|d| corruption(path, records_end, d))?;
    let mut offset = HEADER_SIZE;
    let mut count = 0u64;
    let mut crc = 0u32;
    let mut bytes = Vec::new();
    while offset < records_end {
        let mut header = [0u8; RECORD_HEADER_SIZE];
        if records_end - offset < RECORD_HEADER_SIZE as u64 {
            return Err(corruption(
                path,
                offset,
                "a partial record header before the footer",
            ));
        }
        reader.file.read_exact_at(offset, &mut header)?;
        let key_len = u64::from(u32::from_le_bytes([
            header[0], header[1], header[2], header[3],
        ]));
        let value_len = u64::from(u32::from_le_bytes([
            header[4], header[5], header[6], header[7],
        ]));
        let len = record_size(0, key_len + value_len);
        if len > records_end - offset {
            return Err(corruption(
                path,
                offset,
                format!("a {len}-byte record runs into the footer at {records_end}"),
            ));
        }
        bytes.resize(usize::try_from(len).unwrap_or(usize::MAX), 0);
        reader.file.read_exact_at(offset, &mut bytes)?;
        let (record, _) = BlobRecord::decode(&bytes).map_err(|d| corruption(path, offset, d))?;
        shale_sst::decompress_value(record.compression, record.value).map_err(|e| {
            corruption(
                path,
                offset,
                format!("the record's value does not decompress: {e}"),
            )
        })?;
        each(offset, &record)?;
        crc = crc32c::crc32c_append(crc, &bytes);
        count += 1;
        offset += len;
    }
    let record_bytes = records_end - HEADER_SIZE;
    if footer.record_count != count
        || footer.record_bytes != record_bytes
        || footer.records_checksum != mask(crc)
    {
        return Err(corruption(
            path,
            records_end,
            format!(
                "the footer says {} records in {} bytes (checksum {:#010x}); the file holds {count} \
                 in {record_bytes} (checksum {:#010x})",
                footer.record_count,
                footer.record_bytes,
                footer.records_checksum,
                mask(crc)
            ),
        ));
    }
    Ok(BlobFileSummary {
        header: reader.header,
        footer,
        size: reader.size,
    })
}

/// Open blob files by number, evicting the least recently used.
#[derive(Debug)]
pub(crate) struct BlobFileCache {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    capacity: usize,
    state: Mutex<CacheState>,
}

#[derive(Debug, Default)]
struct CacheState {
    files: HashMap<u64, (Arc<BlobFileReader>, u64)>,
    clock: u64,
}

impl BlobFileCache {
    pub(crate) fn new(fs: Arc<dyn FileSystem>, dir: &Path, capacity: usize) -> Self {
        BlobFileCache {
            fs,
            dir: dir.to_path_buf(),
            capacity: capacity.max(1),
            state: Mutex::new(CacheState::default()),
        }
    }

    /// The open reader of blob file `number`, opening it if needed.
    pub(crate) fn get(&self, number: u64) -> Result<Arc<BlobFileReader>> {
        if let Some(reader) = self.touch(number) {
            return Ok(reader);
        }
        let reader = BlobFileReader::open(&*self.fs, &blob_file_name(&self.dir, number))?;
        Ok(self.insert(number, reader))
    }

    /// The reader of blob file `number`, read from `file` (already open) if it is not cached:
    /// a read-only open pins its Version's files before a writer can delete them.
    pub(crate) fn get_from(
        &self,
        number: u64,
        file: Arc<dyn RandomAccessFile>,
    ) -> Result<Arc<BlobFileReader>> {
        if let Some(reader) = self.touch(number) {
            return Ok(reader);
        }
        let reader = BlobFileReader::from_file(file, &blob_file_name(&self.dir, number))?;
        Ok(self.insert(number, reader))
    }

    /// The cached reader for `number`, marked as just used.
    fn touch(&self, number: u64) -> Option<Arc<BlobFileReader>> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.clock += 1;
        let now = state.clock;
        state.files.get_mut(&number).map(|(reader, used)| {
            *used = now;
            reader.clone()
        })
    }

    /// Caches `reader` as `number` (or takes the one another thread cached meanwhile),
    /// evicting the least recently used reader past the capacity.
    fn insert(&self, number: u64, reader: BlobFileReader) -> Arc<BlobFileReader> {
        let reader = Arc::new(reader);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.clock += 1;
        let now = state.clock;
        let entry = state
            .files
            .entry(number)
            .or_insert_with(|| (reader, now))
            .0
            .clone();
        if state.files.len() > self.capacity {
            let oldest = state
                .files
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(n, _)| *n);
            if let Some(oldest) = oldest.filter(|&n| n != number) {
                state.files.remove(&oldest);
            }
        }
        entry
    }

    /// The value a `BlobIndex` entry of `user_key` refers to. `stored` is the entry's value
    /// (the reference, plus the write time under a TTL).
    pub(crate) fn resolve(&self, user_key: &[u8], stored: &[u8]) -> Result<Vec<u8>> {
        let reference = decode_reference(stored, user_key)?;
        self.get(reference.file_number)?.read(&reference, user_key)
    }

    /// Forgets blob file `number` (before its file is deleted).
    pub(crate) fn erase(&self, number: u64) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.files.remove(&number);
    }
}

impl crate::db_iter::BlobResolver for BlobFileCache {
    fn resolve(&self, user_key: &[u8], reference: &[u8]) -> Result<Vec<u8>> {
        BlobFileCache::resolve(self, user_key, reference)
    }
}

/// Decodes the reference of a `BlobIndex` entry of `user_key`.
pub(crate) fn decode_reference(stored: &[u8], user_key: &[u8]) -> Result<BlobReference> {
    BlobReference::decode(stored).map_err(|(detail, unsupported)| {
        let detail = format!(
            "the blob reference of key {}: {detail}",
            shale_sst::printable(user_key)
        );
        if unsupported {
            Error::NotSupported(detail)
        } else {
            Error::Corruption {
                file: PathBuf::from("<table entry>"),
                offset: 0,
                detail,
            }
        }
    })
}
