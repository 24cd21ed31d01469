//! [`BlobFileWriter`]: writes one blob file front to back (docs/format/blob.md): header,
//! records, footer, sync. The caller syncs the directory and records the file in the MANIFEST.

use std::path::{Path, PathBuf};

use shale_fs::WritableFile;
use shale_sst::{Compression, ValueCompressor};

use super::format::{
    blob_file_name, mask, record_header, BlobFooter, BlobHeader, BlobReference, HEADER_SIZE,
};
use super::BlobFileMeta;
use crate::error::{Error, Result};

/// Writes one blob file.
pub(crate) struct BlobFileWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    number: u64,
    keyspace: u32,
    compressor: ValueCompressor,
    compressed: Vec<u8>,
    record_count: u64,
    record_bytes: u64,
    /// CRC-32C (unmasked) of every record byte so far.
    records_crc: u32,
}

impl std::fmt::Debug for BlobFileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobFileWriter")
            .field("path", &self.path)
            .field("record_count", &self.record_count)
            .finish_non_exhaustive()
    }
}

impl BlobFileWriter {
    /// Creates blob file `number` of `keyspace` in `dir`, writing through `file` (a file the
    /// caller created at [`blob_file_name`], perhaps rate-limited).
    pub(crate) fn new(
        file: Box<dyn WritableFile>,
        dir: &Path,
        number: u64,
        keyspace: u32,
        compression: Compression,
    ) -> Result<BlobFileWriter> {
        let compressor = ValueCompressor::new(compression)?;
        let mut writer = BlobFileWriter {
            file,
            path: blob_file_name(dir, number),
            number,
            keyspace,
            compressor,
            compressed: Vec::new(),
            record_count: 0,
            record_bytes: 0,
            records_crc: 0,
        };
        let header = BlobHeader {
            keyspace,
            compression: compression.tag(),
        };
        writer.file.append(&header.encode())?;
        Ok(writer)
    }

    /// Creates the file itself (tests and tools).
    #[cfg(test)]
    pub(crate) fn create(
        fs: &dyn shale_fs::FileSystem,
        dir: &Path,
        number: u64,
        keyspace: u32,
        compression: Compression,
    ) -> Result<BlobFileWriter> {
        let file = fs.create(&blob_file_name(dir, number))?;
        Self::new(file, dir, number, keyspace, compression)
    }

    /// The file number.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// Bytes written so far (header and records).
    pub(crate) fn file_size(&self) -> u64 {
        HEADER_SIZE + self.record_bytes
    }

    /// Appends the record of `user_key` and its stored value (compressed when that saves an
    /// eighth) and returns the reference to it.
    pub(crate) fn add(&mut self, user_key: &[u8], value: &[u8]) -> Result<BlobReference> {
        let codec = self.compressor.compress(value, &mut self.compressed);
        let (Ok(key_len), Ok(value_len)) = (
            u32::try_from(user_key.len()),
            u32::try_from(self.compressed.len()),
        ) else {
            return Err(Error::InvalidArgument(format!(
                "a {}-byte value does not fit a blob record (at most 4 GiB)",
                value.len()
            )));
        };
        let offset = HEADER_SIZE + self.record_bytes;
        let header = record_header(key_len, value_len, codec);
        let crc = crc32c::crc32c_append(
            crc32c::crc32c_append(crc32c::crc32c(&header), user_key),
            &self.compressed,
        );
        let checksum = mask(crc).to_le_bytes();
        for part in [&header[..], user_key, &self.compressed, &checksum] {
            self.file.append(part)?;
            self.records_crc = crc32c::crc32c_append(self.records_crc, part);
        }
        self.record_count += 1;
        self.record_bytes += super::format::record_size(user_key.len(), u64::from(value_len));
        Ok(BlobReference {
            file_number: self.number,
            offset,
            value_len,
            compression: codec,
        })
    }

    /// Writes the footer and syncs the file. Returns what the MANIFEST records of it.
    pub(crate) fn finish(mut self) -> Result<BlobFileMeta> {
        let footer = BlobFooter {
            record_count: self.record_count,
            record_bytes: self.record_bytes,
            records_checksum: mask(self.records_crc),
        };
        self.file.append(&footer.encode())?;
        self.file.flush()?;
        self.file.sync_data()?;
        Ok(BlobFileMeta {
            number: self.number,
            keyspace: self.keyspace,
            total_count: self.record_count,
            total_bytes: self.record_bytes,
            garbage_count: 0,
            garbage_bytes: 0,
        })
    }
}
