//! Key-value separation: blob files hold large values, tables hold references to them
//! (docs/format/blob.md; garbage collection in docs/compaction.md, "Blob files").
//!
//! - `format`: header, footer, records, [`BlobReference`];
//! - `writer`: `BlobFileWriter`, one file front to back; `output`: `BlobOutputs`, the files
//!   one flush or compaction writes;
//! - `reader`: `BlobFileReader` (resolve a reference), [`scan_blob_file`] (check a whole
//!   file) and `BlobFileCache` (open files by number);
//! - [`BlobFileMeta`] (what a Version knows of a blob file) and `BlobGarbage` (what one
//!   compaction adds to the garbage of each file it drops or relocates references of).
//!
//! Invariants:
//! 1. A blob file is written and synced, and its directory entry synced, before the MANIFEST
//!    edit that adds it, in the same edit as the first table that references it.
//! 2. Every record has exactly one reference when written; a reference is counted as garbage
//!    exactly once, when a compaction drops it or relocates its value. So `garbage <= total`
//!    always, and a blob file whose garbage reaches its total is referenced by no table: the
//!    edit that gets it there deletes it from the Version.
//! 3. A blob file is deleted from disk only when no live Version lists it (the same rule as
//!    tables, ARCHITECTURE.md invariant 4).

mod format;
mod output;
mod reader;
mod writer;

use std::collections::BTreeMap;

pub use format::{
    blob_file_name, parse_blob_file_name, record_size, BlobFooter, BlobHeader, BlobRecord,
    BlobReference, BLOB_FORMAT_VERSION, BLOB_MAGIC, FOOTER_SIZE, HEADER_SIZE,
};
pub(crate) use output::{discard_blob_files, BlobOutputs, BlobSettings};
pub(crate) use reader::{decode_reference, BlobFileCache};
pub use reader::{scan_blob_file, BlobFileSummary};
#[cfg(test)]
use writer::BlobFileWriter;

/// What the MANIFEST records of one blob file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobFileMeta {
    /// The file number (`NNNNNN.blob`).
    pub number: u64,
    /// The keyspace whose tables reference it.
    pub keyspace: u32,
    /// Records written.
    pub total_count: u64,
    /// Bytes of those records.
    pub total_bytes: u64,
    /// Records no table references any more.
    pub garbage_count: u64,
    /// Bytes of those records.
    pub garbage_bytes: u64,
}

impl BlobFileMeta {
    /// The size of the file on disk.
    pub fn file_size(&self) -> u64 {
        HEADER_SIZE + self.total_bytes + FOOTER_SIZE
    }

    /// Bytes of records still referenced.
    pub fn live_bytes(&self) -> u64 {
        self.total_bytes.saturating_sub(self.garbage_bytes)
    }

    /// The share of the record bytes still referenced (1.0 for an empty file).
    pub fn live_ratio(&self) -> f64 {
        if self.total_bytes == 0 {
            return 1.0;
        }
        #[allow(clippy::cast_precision_loss)] // a ratio for display and thresholds
        let ratio = self.live_bytes() as f64 / self.total_bytes as f64;
        ratio
    }

    /// Whether no table references any of its records (invariant 2).
    pub fn is_all_garbage(&self) -> bool {
        self.garbage_count >= self.total_count && self.garbage_bytes >= self.total_bytes
    }
}

impl std::fmt::Display for BlobFileMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "blob {:06} keyspace {} records {} bytes {} garbage {} records {} bytes live {:.1}%",
            self.number,
            self.keyspace,
            self.total_count,
            self.total_bytes,
            self.garbage_count,
            self.garbage_bytes,
            self.live_ratio() * 100.0
        )
    }
}

/// Garbage one compaction adds, by blob file number: (records, bytes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BlobGarbage {
    pub files: BTreeMap<u64, (u64, u64)>,
}

impl BlobGarbage {
    /// The record of `reference` (of a `key_len`-byte key) is no longer referenced.
    pub(crate) fn add(&mut self, reference: &BlobReference, key_len: usize) {
        let entry = self.files.entry(reference.file_number).or_default();
        entry.0 += 1;
        entry.1 += record_size(key_len, u64::from(reference.value_len));
    }

    /// Adds `other`'s garbage to this.
    pub(crate) fn merge(&mut self, other: BlobGarbage) {
        for (number, (count, bytes)) in other.files {
            let entry = self.files.entry(number).or_default();
            entry.0 += count;
            entry.1 += bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use shale_fs::{FileSystem, MemFs};
    use shale_sst::Compression;

    use super::*;
    use crate::error::Error;

    /// Records written: key, value, reference.
    type Written = Vec<(Vec<u8>, Vec<u8>, BlobReference)>;

    fn write_file(fs: &MemFs, codec: Compression) -> (Written, BlobFileMeta) {
        let mut writer = BlobFileWriter::create(fs, Path::new("/db"), 7, 3, codec).unwrap();
        let mut written = Vec::new();
        for i in 0..20u32 {
            let key = format!("key{i:03}").into_bytes();
            // Half compressible, half not.
            let value: Vec<u8> = if i % 2 == 0 {
                vec![b'a' + (i % 26) as u8; 5000 + i as usize]
            } else {
                (0..3000u32)
                    .map(|j| (j.wrapping_mul(2_654_435_761) >> 13) as u8 ^ i as u8)
                    .collect()
            };
            let reference = writer.add(&key, &value).unwrap();
            written.push((key, value, reference));
        }
        (written, writer.finish().unwrap())
    }

    #[test]
    fn round_trip_every_codec() {
        for codec in [
            Compression::None,
            Compression::Snappy,
            Compression::Zlib,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let fs = MemFs::new();
            fs.create_dir_all(Path::new("/db")).unwrap();
            let (written, meta) = write_file(&fs, codec);
            assert_eq!(meta.total_count, 20);
            let path = blob_file_name(Path::new("/db"), 7);
            assert_eq!(fs.size(&path).unwrap(), meta.file_size());
            let cache = BlobFileCache::new(std::sync::Arc::new(fs.clone()), Path::new("/db"), 2);
            for (key, value, reference) in &written {
                let stored = reference.encode_for(value, false);
                assert_eq!(&cache.resolve(key, &stored).unwrap(), value, "{codec}");
                if codec != Compression::None && value[0] == value[1] {
                    assert_ne!(reference.compression, 0, "{codec} compresses a run");
                }
            }
            let mut seen = 0;
            let summary = scan_blob_file(&fs, &path, &mut |_, _| {
                seen += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!(seen, 20);
            assert_eq!(summary.header.keyspace, 3);
            assert_eq!(summary.footer.record_bytes, meta.total_bytes);
        }
    }

    /// Flips each byte of a small file in turn: the scan and, for a byte inside a record, the
    /// read of that record fail with Corruption naming the file and the record's offset.
    #[test]
    fn every_corruption_is_detected_with_file_and_offset() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let mut writer =
            BlobFileWriter::create(&fs, Path::new("/db"), 9, 0, Compression::Lz4).unwrap();
        let a = writer.add(b"a", &[b'x'; 100]).unwrap();
        let b = writer.add(b"bb", b"not compressible?").unwrap();
        writer.finish().unwrap();
        let path = blob_file_name(Path::new("/db"), 9);
        let mut good = vec![0u8; usize::try_from(fs.size(&path).unwrap()).unwrap()];
        fs.open_read(&path)
            .unwrap()
            .read_exact_at(0, &mut good)
            .unwrap();
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x10;
            let damaged = MemFs::new();
            damaged.create_dir_all(Path::new("/db")).unwrap();
            let mut f = damaged.create(&path).unwrap();
            f.append(&bad).unwrap();
            f.sync_data().unwrap();
            drop(f);
            let scanned = scan_blob_file(&damaged, &path, &mut |_, _| Ok(()));
            assert!(
                scanned.is_err(),
                "flipping byte {i} went unnoticed by the scan"
            );
            let cache = BlobFileCache::new(std::sync::Arc::new(damaged), Path::new("/db"), 4);
            for (key, reference) in [(&b"a"[..], a), (&b"bb"[..], b)] {
                let start = usize::try_from(reference.offset).unwrap();
                let end = start
                    + usize::try_from(record_size(key.len(), u64::from(reference.value_len)))
                        .unwrap();
                if (start..end).contains(&i) {
                    match cache.resolve(key, &reference.encode_for(b"", false)) {
                        Err(Error::Corruption { file, offset, .. }) => {
                            assert_eq!(file, path, "byte {i}");
                            assert_eq!(offset, reference.offset, "byte {i}");
                        }
                        other => panic!("byte {i}: {other:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn a_reference_to_the_wrong_key_or_outside_the_file_is_corruption() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let (written, meta) = write_file(&fs, Compression::None);
        let cache = BlobFileCache::new(std::sync::Arc::new(fs), Path::new("/db"), 2);
        let (_, _, reference) = &written[3];
        let err = cache
            .resolve(b"key004", &reference.encode_for(b"", false))
            .unwrap_err();
        assert!(err.to_string().contains("holds key"), "{err}");
        let beyond = BlobReference {
            offset: meta.file_size() - 10,
            ..*reference
        };
        let err = cache
            .resolve(b"key003", &beyond.encode_for(b"", false))
            .unwrap_err();
        assert!(err.to_string().contains("outside the records"), "{err}");
        let missing = BlobReference {
            file_number: 8,
            ..*reference
        };
        assert!(cache
            .resolve(b"key003", &missing.encode_for(b"", false))
            .is_err());
    }

    /// The byte layout of a one-record file, as docs/format/blob.md draws it.
    #[test]
    fn golden_layout() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let mut writer =
            BlobFileWriter::create(&fs, Path::new("/db"), 1, 2, Compression::None).unwrap();
        let reference = writer.add(b"k", b"vv").unwrap();
        let meta = writer.finish().unwrap();
        let path = blob_file_name(Path::new("/db"), 1);
        let mut bytes = vec![0u8; usize::try_from(meta.file_size()).unwrap()];
        fs.open_read(&path)
            .unwrap()
            .read_exact_at(0, &mut bytes)
            .unwrap();
        assert_eq!(bytes.len(), 32 + 16 + 32);
        assert_eq!(&bytes[0..8], b"SHALEBLB");
        assert_eq!(&bytes[8..12], &1u32.to_le_bytes(), "format version");
        assert_eq!(&bytes[12..16], &2u32.to_le_bytes(), "keyspace");
        assert_eq!(bytes[16], 0, "codec");
        assert_eq!(&bytes[17..28], &[0u8; 11], "reserved");
        // Record at 32: key length 1, value length 2, codec 0, "k", "vv", checksum.
        assert_eq!(&bytes[32..41], &[1, 0, 0, 0, 2, 0, 0, 0, 0]);
        assert_eq!(&bytes[41..44], b"kvv");
        let crc = format::mask(crc32c::crc32c(&bytes[32..44]));
        assert_eq!(&bytes[44..48], &crc.to_le_bytes());
        // Footer: count 1, bytes 16, records checksum, footer checksum, magic.
        assert_eq!(&bytes[48..56], &1u64.to_le_bytes());
        assert_eq!(&bytes[56..64], &16u64.to_le_bytes());
        assert_eq!(
            &bytes[64..68],
            &format::mask(crc32c::crc32c(&bytes[32..48])).to_le_bytes()
        );
        assert_eq!(
            &bytes[68..72],
            &format::mask(crc32c::crc32c(&bytes[48..68])).to_le_bytes()
        );
        assert_eq!(&bytes[72..80], b"SHALEBLB");
        // The reference: version 1, file 1, offset 32, length 2, codec 0.
        assert_eq!(reference.encode_for(b"vv", false), [1, 1, 32, 2, 0]);
        assert_eq!(meta.total_bytes, 16);
    }
}
