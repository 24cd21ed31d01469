//! Helpers shared by the WAL tests: writing logs on a `MemFs` and reading them back; and
//! (`gate`) gates a `FaultFs` hook holds background jobs at.

#![allow(dead_code)] // Each test binary uses a different subset.

pub mod gate;

use std::path::{Path, PathBuf};

use shale_engine::inspect::wal::format::{
    log_file_name, BLOCK_SIZE, FILE_HEADER_RECORD_SIZE, FORMAT_VERSION, HEADER_SIZE, V1_HEADER_SIZE,
};
use shale_engine::inspect::wal::{LogReader, LogWriter, RecoveryMode};
use shale_engine::{Error, Result};
use shale_fs::{FileSystem, MemFs};

pub const ALL_MODES: [RecoveryMode; 4] = [
    RecoveryMode::TolerateCorruptedTailRecords,
    RecoveryMode::AbsoluteConsistency,
    RecoveryMode::PointInTime,
    RecoveryMode::SkipAnyCorruptedRecords,
];

/// The size of the file header record (the version 1 record header and 20 bytes, in every
/// version).
pub const FILE_HEADER_RECORD: u64 = FILE_HEADER_RECORD_SIZE as u64;

/// The record header size of WAL format `version` (after the file header).
pub fn header_size(version: u32) -> usize {
    match version {
        1 => V1_HEADER_SIZE,
        _ => HEADER_SIZE,
    }
}

/// A distinct payload for record `index` of `len` bytes.
pub fn payload(index: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ index.wrapping_mul(131) ^ (i >> 8)) as u8)
        .collect()
}

pub fn log_path(dir: &str, log_number: u64) -> PathBuf {
    Path::new(dir).join(log_file_name(log_number))
}

/// A log that was written, with where each record starts and ends.
#[derive(Debug, Clone)]
pub struct Written {
    pub path: PathBuf,
    pub log_number: u64,
    pub records: Vec<Vec<u8>>,
    pub starts: Vec<u64>,
    pub ends: Vec<u64>,
}

impl Written {
    /// The records (with starts) whose last byte is below `len`.
    pub fn complete_within(&self, len: u64) -> Records {
        self.records
            .iter()
            .zip(&self.starts)
            .zip(&self.ends)
            .filter(|(_, &end)| end <= len)
            .map(|((r, &s), _)| (r.clone(), s))
            .collect()
    }

    /// Where the first record that is not complete within `len` starts (`None`: all are).
    pub fn first_incomplete_start(&self, len: u64) -> Option<u64> {
        self.starts
            .iter()
            .zip(&self.ends)
            .find(|(_, &end)| end > len)
            .map(|(&s, _)| s)
    }

    pub fn all(&self) -> Records {
        self.complete_within(u64::MAX)
    }
}

/// Where the writer starts a record after one ending at `end`: the next block when fewer
/// than a header's bytes are left in this one.
pub fn next_start(end: u64) -> u64 {
    next_start_in(end, HEADER_SIZE)
}

/// [`next_start`] for records with `header_size`-byte headers.
pub fn next_start_in(end: u64, header_size: usize) -> u64 {
    let block = BLOCK_SIZE as u64;
    if block - end % block < header_size as u64 {
        (end / block + 1) * block
    } else {
        end
    }
}

/// Writes `records` as log `log_number` at `path`, syncing after the first `synced` records
/// (all of them when `synced >= records.len()`).
pub fn write_log_synced(
    fs: &MemFs,
    path: &Path,
    log_number: u64,
    records: &[Vec<u8>],
    synced: usize,
) -> Written {
    write_log_version(fs, path, log_number, records, synced, FORMAT_VERSION)
}

/// [`write_log_synced`] in WAL format `version` (1 stands for a log written before the
/// upgrade to version 2).
pub fn write_log_version(
    fs: &MemFs,
    path: &Path,
    log_number: u64,
    records: &[Vec<u8>],
    synced: usize,
    version: u32,
) -> Written {
    if let Some(dir) = path.parent() {
        fs.create_dir_all(dir).unwrap();
    }
    let file = fs.create(path).unwrap();
    let mut writer = LogWriter::with_format_version(file, log_number, version).unwrap();
    assert_eq!(writer.file_size(), FILE_HEADER_RECORD);
    let mut starts = Vec::new();
    let mut ends = Vec::new();
    for (i, record) in records.iter().enumerate() {
        starts.push(next_start_in(writer.file_size(), header_size(version)));
        let end = writer.add_record(record).unwrap();
        assert_eq!(end, writer.file_size());
        ends.push(end);
        if i + 1 == synced {
            writer.sync().unwrap();
        }
    }
    if synced >= records.len() {
        writer.sync().unwrap();
    }
    if let Some(dir) = path.parent() {
        fs.sync_dir(dir).unwrap();
    }
    Written {
        path: path.to_path_buf(),
        log_number,
        records: records.to_vec(),
        starts,
        ends,
    }
}

pub fn write_log(fs: &MemFs, path: &Path, log_number: u64, records: &[Vec<u8>]) -> Written {
    write_log_synced(fs, path, log_number, records, usize::MAX)
}

/// [`write_log`] in format version 1, as Shale wrote logs before version 2.
pub fn write_log_v1(fs: &MemFs, path: &Path, log_number: u64, records: &[Vec<u8>]) -> Written {
    write_log_version(fs, path, log_number, records, usize::MAX, 1)
}

/// Records as the reader returns them: payload and start offset.
pub type Records = Vec<(Vec<u8>, u64)>;

/// Reads every record of a log; the reader is returned for its report.
pub fn read_log(
    fs: &MemFs,
    path: &Path,
    log_number: u64,
    mode: RecoveryMode,
) -> Result<(Records, LogReader)> {
    let mut reader = LogReader::new(fs.open_read(path).unwrap(), log_number, mode)?;
    let mut records = Vec::new();
    while let Some(record) = reader.read_record()? {
        records.push(record);
    }
    // Ended readers stay ended.
    assert!(reader.read_record()?.is_none());
    assert!(reader.end().is_some());
    Ok((records, reader))
}

/// A file holding exactly `bytes` at `path` (durable), replacing any earlier one.
pub fn plant(fs: &MemFs, path: &Path, bytes: &[u8]) {
    fs.write_file_for_test(path, bytes).unwrap();
}

/// The offset and detail of a corruption error; panics on anything else.
pub fn corruption_at(result: Result<impl std::fmt::Debug>) -> (PathBuf, u64, String) {
    match result {
        Err(Error::Corruption {
            file,
            offset,
            detail,
        }) => (file, offset, detail),
        other => panic!("expected a corruption error, got {other:?}"),
    }
}

/// `batch` in the write batch encoding of WAL format versions 1 and 2, which every entry
/// spends a keyspace field on, the default keyspace's 0 included (`docs/format/write_batch.md`):
/// the bytes a log written before version 3 holds.
pub fn batch_in_version_2_encoding(batch: &shale_engine::WriteBatch) -> Vec<u8> {
    fn varint(out: &mut Vec<u8>, mut v: u32) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    let mut out = batch.data()[..12].to_vec();
    for entry in batch.iter() {
        let (tag, has_value) = match entry.kind {
            shale_sst::ValueKind::Deletion => (0u8, false),
            shale_sst::ValueKind::Value => (1, true),
            shale_sst::ValueKind::RangeDeletion => (2, true),
            shale_sst::ValueKind::BlobIndex => panic!("a write batch never holds a blob reference"),
        };
        out.push(tag);
        varint(&mut out, entry.keyspace);
        varint(&mut out, entry.key.len() as u32);
        out.extend_from_slice(entry.key);
        if has_value {
            varint(&mut out, entry.value.len() as u32);
            out.extend_from_slice(entry.value);
        }
    }
    out
}
