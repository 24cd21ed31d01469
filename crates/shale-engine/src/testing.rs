//! The engine's internals for tests, benchmarks and fuzz targets (feature `testing`): the
//! memtable, the iterators, the version set, and entry points for fuzz targets.
//!
//! Nothing here is a stable API; embedders use the crate root.
//!
//! Each fuzz entry point feeds untrusted bytes to one decoder of the engine and exercises everything
//! that decoder feeds, returning normally whatever the input. A panic here is a bug: either in
//! the decoder (it must return an error naming the file and offset) or in a round-trip
//! property the function asserts (what decodes must re-encode to something that decodes to
//! the same value).

pub use crate::db_iter::{BlobResolver, DbIter, DbIterOptions};
pub use crate::iterator::{InternalIterator, SourceIter, VecIterator};
pub use crate::level_iter::{LevelFile, LevelIter, LevelTable, TableOpener};
pub use crate::memtable::{MemTable, MemTableEntry, MemTableIter};
pub use crate::merging_iter::MergingIter;
pub use crate::range_del::RangeDelSet;
pub use crate::version::{
    VersionSet, DEFAULT_KEYSPACE_NAME, DEFAULT_MAX_MANIFEST_SIZE, MANIFEST_MAGIC,
    MAX_KEYSPACE_NAME_LEN, MAX_NUM_LEVELS, SAFE_TO_IGNORE,
};

use std::path::Path;
use std::sync::Arc;

use shale_fs::{FileSystem, MemFs};
use shale_sst::BytewiseComparator;

use crate::batch::WriteBatch;
use crate::options::{KeyspaceOptions, Options};
use crate::options_file::{options_file_name, OptionsFile};
use crate::version::{current_contents, parse_current};
use crate::version::{
    manifest_file_name, FileMetaData, VersionEdit, CURRENT_FILE_NAME, DEFAULT_NUM_LEVELS,
};
use crate::wal::format::{log_file_name, FORMAT_VERSION, HEADER_SIZE, V1_HEADER_SIZE};
use crate::wal::{LogReader, LogWriter, RecoveryMode};

/// Every recovery mode, in the order `fuzz_wal` reads a log with them.
const RECOVERY_MODES: [RecoveryMode; 4] = [
    RecoveryMode::TolerateCorruptedTailRecords,
    RecoveryMode::AbsoluteConsistency,
    RecoveryMode::PointInTime,
    RecoveryMode::SkipAnyCorruptedRecords,
];

/// The file a WAL record decoded by `fuzz_write_batch` is said to come from.
const FUZZ_WAL_PATH: &str = "/db/000007.wal";

/// The log number `fuzz_wal` expects when the input has no file header to take it from.
const FALLBACK_LOG_NUMBER: u64 = 7;

/// The log number stored in the file header of a WAL image (docs/format/wal.md, "File
/// header"): the version 1 record header (every version's file header has it), then magic (8)
/// and version (4). Reading the log under this
/// number lets mutants of real logs get past the header check.
fn stated_log_number(data: &[u8]) -> Option<u64> {
    let at = V1_HEADER_SIZE + 12;
    let bytes = data.get(at..at + 8)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// Writes `data` as the whole WAL file of log `log_number` on a fresh `MemFs` and reads it in
/// every recovery mode, decoding each record as a [`WriteBatch`] and walking its entries.
/// Also reads it as another log (the file number mismatch case), which must never yield
/// data unless the file header is missing and the mode skips damage.
pub fn fuzz_wal(data: &[u8]) {
    let log_number = stated_log_number(data).unwrap_or(FALLBACK_LOG_NUMBER);
    let fs = MemFs::new();
    let path = Path::new("/db").join(log_file_name(log_number));
    if fs.create_dir_all(Path::new("/db")).is_err() || fs.write_file_for_test(&path, data).is_err()
    {
        return;
    }
    for mode in RECOVERY_MODES {
        read_wal(&fs, &path, log_number, mode);
        read_wal(&fs, &path, log_number.wrapping_add(1), mode);
    }
}

fn read_wal(fs: &MemFs, path: &Path, log_number: u64, mode: RecoveryMode) {
    let Ok(file) = fs.open_read(path) else {
        return;
    };
    let file_size = data_size(fs, path);
    let Ok(mut reader) = LogReader::new(file, log_number, mode) else {
        return;
    };
    let mut previous_offset = None;
    // Every logical record holds at least one physical record header (`HEADER_SIZE`, the
    // smallest of any version), so a log cannot hold more records than this; more means the
    // reader loops.
    let max_records = file_size / HEADER_SIZE as u64 + 1;
    let mut records = 0u64;
    loop {
        match reader.read_record() {
            Ok(Some((payload, offset))) => {
                records += 1;
                assert!(
                    records <= max_records,
                    "more records than the file can hold"
                );
                assert!(
                    previous_offset.is_none_or(|p| offset > p),
                    "record offsets must increase ({previous_offset:?}, then {offset})"
                );
                assert!(
                    offset < file_size,
                    "a record starts past the end of the file"
                );
                previous_offset = Some(offset);
                let version = reader.format_version();
                if let Ok(batch) = WriteBatch::from_wal_record(payload, version, path, offset) {
                    walk_batch(&batch);
                }
            }
            Ok(None) => {
                assert!(reader.end().is_some(), "ended without a reason");
                assert!(
                    reader.read_record().is_ok_and(|r| r.is_none()),
                    "a log that ended must stay ended"
                );
                assert!(reader.last_record_end() <= file_size);
                return;
            }
            Err(_) => {
                assert!(
                    reader.read_record().is_err(),
                    "a reader that failed must keep failing"
                );
                return;
            }
        }
    }
}

fn data_size(fs: &MemFs, path: &Path) -> u64 {
    fs.file_contents(path).map_or(0, |bytes| bytes.len() as u64)
}

/// Walks every entry of a decoded batch; the count must match what was walked.
fn walk_batch(batch: &WriteBatch) {
    let mut walked = 0u64;
    let mut bytes = 0usize;
    for entry in batch.iter() {
        walked += 1;
        bytes += entry.key.len() + entry.value.len();
    }
    assert_eq!(walked, u64::from(batch.count()), "entries walked != count");
    assert!(bytes <= batch.data().len());
}

/// Decodes `data` as a write batch, and as the payload of a WAL record of the newest format
/// version (docs/format/wal.md, "Logical records"). When the payload decodes, encoding the
/// batch again must give exactly `data` (the header has one encoding and the entries are
/// kept as they are). When the batch decodes, walks its entries and rebuilds the batch entry
/// by entry: the rebuilt encoding must equal the input, except that each default-keyspace
/// entry in the WAL version 2 form (an explicit keyspace 0) re-encodes a byte shorter (the
/// encoding has no other second form), and it must decode to the same entries.
pub fn fuzz_write_batch(data: &[u8]) {
    let path = Path::new(FUZZ_WAL_PATH);
    if let Ok(batch) = WriteBatch::from_wal_record(data.to_vec(), Some(FORMAT_VERSION), path, 0) {
        walk_batch(&batch);
        let again = batch.to_wal_record(FORMAT_VERSION);
        assert!(
            again.is_ok_and(|again| again == data),
            "a decoded WAL record re-encodes to other bytes"
        );
    }
    let Ok(batch) = WriteBatch::from_data(data.to_vec()) else {
        return;
    };
    walk_batch(&batch);
    let mut rebuilt = WriteBatch::new();
    for entry in batch.iter() {
        let added = match entry.kind {
            shale_sst::ValueKind::Value => rebuilt.put(entry.keyspace, entry.key, entry.value),
            shale_sst::ValueKind::Deletion => rebuilt.delete(entry.keyspace, entry.key),
            shale_sst::ValueKind::RangeDeletion => {
                rebuilt.delete_range(entry.keyspace, entry.key, entry.value)
            }
            shale_sst::ValueKind::BlobIndex => panic!("a decoded batch holds a blob reference"),
        };
        assert!(added.is_ok(), "a decoded entry could not be re-added");
    }
    rebuilt.set_first_seqno(batch.first_seqno());
    assert!(
        rebuilt.iter().eq(batch.iter()),
        "re-encoding a decoded batch changed its entries"
    );
    if rebuilt.data() != data {
        let default_keyspace = batch.iter().filter(|e| e.keyspace == 0).count();
        let shorter = data.len().saturating_sub(rebuilt.data().len());
        assert!(
            shorter > 0 && shorter <= default_keyspace,
            "re-encoding a decoded batch changed it beyond the version 2 keyspace bytes"
        );
    }
}

/// Decodes `data` as one MANIFEST record (a [`VersionEdit`]). When it decodes, encodes it
/// and decodes again: the second decoding must equal the first (fields marked safe to
/// ignore are dropped, so the bytes themselves may differ).
pub fn fuzz_manifest_edit(data: &[u8]) {
    let Ok(edit) = VersionEdit::decode(data) else {
        return;
    };
    let encoded = edit.encode();
    match VersionEdit::decode(&encoded) {
        Ok(again) => assert_eq!(again, edit, "decode(encode(edit)) != edit"),
        Err(e) => panic!("a decoded edit re-encodes to bytes that do not decode: {e}"),
    }
    let _ = edit.to_string();
}

/// What recovery made of a MANIFEST, for comparing two recoveries.
#[derive(Debug, PartialEq)]
struct Recovered {
    keyspaces: Vec<(u32, String, Option<u64>)>,
    files: Vec<(u32, usize, FileMetaData)>,
    last_sequence: u64,
    max_keyspace_id: u32,
}

fn recovered(versions: &VersionSet) -> Recovered {
    let version = versions.current();
    Recovered {
        keyspaces: version
            .keyspaces()
            .into_iter()
            .map(|(id, name)| (id, name, version.log_number(id)))
            .collect(),
        files: version
            .all_files()
            .map(|(keyspace, level, meta)| (keyspace, level, (**meta).clone()))
            .collect(),
        last_sequence: versions.last_sequence(),
        max_keyspace_id: versions.max_keyspace_id(),
    }
}

/// Writes `data` as a MANIFEST beside a `CURRENT` naming it on a fresh `MemFs` and recovers
/// the version set from it, as opening a database does. Damage must be an error. When
/// recovery succeeds it has written a new MANIFEST holding a snapshot of the state;
/// recovering from that one must give the same state.
///
/// A MANIFEST is a log whose records carry its file number, so the file is named by the
/// number its file header states (1 without one), letting mutants of real MANIFESTs get past
/// the header.
pub fn fuzz_manifest(data: &[u8]) {
    let number = stated_log_number(data).unwrap_or(1);
    recover_manifest(number, data);
}

/// Splits `data` into MANIFEST records, each a u16 little-endian length and that many bytes
/// (a short last record takes what is left), writes them as MANIFEST-000001 the way the
/// version set does (so every record's checksum is valid), and recovers from it as
/// [`fuzz_manifest`] does. Mutations then change the edits themselves rather than breaking
/// checksums. [`manifest_records_input`] builds inputs from edits.
pub fn fuzz_manifest_records(data: &[u8]) {
    let fs = MemFs::new();
    let path = Path::new("/m");
    let Ok(file) = fs.create(path) else {
        return;
    };
    let Ok(mut writer) = LogWriter::new(file, 1) else {
        return;
    };
    let mut rest = data;
    while let [a, b, tail @ ..] = rest {
        let len = usize::from(u16::from_le_bytes([*a, *b])).min(tail.len());
        let (record, next) = tail.split_at(len);
        if writer.add_record(record).is_err() {
            return;
        }
        rest = next;
    }
    if writer.sync().is_err() {
        return;
    }
    let Ok(bytes) = fs.file_contents(path) else {
        return;
    };
    recover_manifest(1, &bytes);
}

/// The input of [`fuzz_manifest_records`] for a MANIFEST holding `records` (each at most
/// `u16::MAX` bytes; longer ones are cut).
pub fn manifest_records_input(records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for record in records {
        let len = u16::try_from(record.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&record[..usize::from(len)]);
    }
    out
}

/// Writes `manifest` as MANIFEST `number` beside a `CURRENT` naming it, recovers, and when
/// that succeeds recovers again from the MANIFEST the first recovery wrote.
fn recover_manifest(number: u64, manifest: &[u8]) {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let written = fs.create_dir_all(dir).is_ok()
        && fs
            .write_file_for_test(dir.join(manifest_file_name(number)), manifest)
            .is_ok()
        && fs
            .write_file_for_test(
                dir.join(CURRENT_FILE_NAME),
                current_contents(number).as_bytes(),
            )
            .is_ok();
    if !written {
        return;
    }
    let fs: Arc<dyn FileSystem> = Arc::new(fs);
    let comparator = Arc::new(BytewiseComparator);
    let Ok(first) = VersionSet::recover(fs.clone(), dir, comparator.clone(), DEFAULT_NUM_LEVELS)
    else {
        return;
    };
    let state = recovered(&first);
    let _ = first.live_files();
    let _ = first.min_log_number_to_keep();
    drop(first);
    match VersionSet::recover(fs, dir, comparator, DEFAULT_NUM_LEVELS) {
        Ok(second) => assert_eq!(recovered(&second), state, "recovery is not idempotent"),
        Err(e) => panic!("the MANIFEST written by recovery does not recover: {e}"),
    }
}

/// Parses `data` as the contents of `CURRENT`. When it parses, the canonical contents naming
/// the same MANIFEST must parse to the same number.
pub fn fuzz_current(data: &[u8]) {
    let path = Path::new("/db").join(CURRENT_FILE_NAME);
    let Ok(number) = parse_current(data, &path) else {
        return;
    };
    let canonical = current_contents(number);
    match parse_current(canonical.as_bytes(), &path) {
        Ok(again) => assert_eq!(again, number, "CURRENT does not round-trip"),
        Err(e) => panic!("canonical CURRENT for {number} does not parse: {e}"),
    }
}

/// Decodes `data` as an OPTIONS file. When it decodes: re-encoding must decode to the same
/// file, and the file is turned into options the way opening a database does (the
/// comparator check and every keyspace section read over the defaults), which must give
/// valid options.
pub fn fuzz_options(data: &[u8]) {
    let path = Path::new("/db").join(options_file_name(1));
    let Ok(file) = OptionsFile::decode(data, &path) else {
        return;
    };
    match OptionsFile::decode(&file.encode(), &path) {
        Ok(again) => assert_eq!(again, file, "decode(encode(file)) != file"),
        Err(e) => panic!("a decoded OPTIONS file re-encodes to bytes that do not decode: {e}"),
    }
    let options = Options::default();
    let _ = options.check_compatible(&file);
    let fallback = KeyspaceOptions::default();
    for (section, entries) in &file.sections {
        let _ = OptionsFile::keyspace_of_section(section);
        let keyspace = KeyspaceOptions::from_pairs(entries, &fallback);
        assert!(
            keyspace.validate().is_ok(),
            "options read from a file are invalid"
        );
    }
}

/// Reads `data` as a blob file (docs/format/blob.md): the whole-file scan, and every
/// reference a record at each offset the scan reports would have, resolved through the cache
/// (checksums, key match, decompression). When the scan succeeds, each record's reference must
/// resolve to its decompressed value; nothing may panic either way. The same bytes are also
/// decoded as a blob reference.
pub fn fuzz_blob_file(data: &[u8]) {
    use crate::blob::{BlobFileCache, BlobReference};
    let _ = BlobReference::decode(data);
    let fs = shale_fs::MemFs::new();
    let dir = Path::new("/db");
    if fs.create_dir_all(dir).is_err() {
        return;
    }
    let path = crate::blob::blob_file_name(dir, 1);
    let Ok(mut file) = fs.create(&path) else {
        return;
    };
    if file.append(data).is_err() || file.sync_data().is_err() {
        return;
    }
    drop(file);
    let mut records: Vec<(Vec<u8>, BlobReference, Vec<u8>)> = Vec::new();
    let scanned = crate::blob::scan_blob_file(&fs, &path, &mut |offset, record| {
        let value = shale_sst::decompress_value(record.compression, record.value)
            .expect("the scan checked that the value decompresses");
        records.push((
            record.key.to_vec(),
            BlobReference {
                file_number: 1,
                offset,
                value_len: u32::try_from(record.value.len()).expect("a u32 length"),
                compression: record.compression,
            },
            value,
        ));
        Ok(())
    });
    let cache = BlobFileCache::new(Arc::new(fs), dir, 4);
    for (key, reference, value) in &records {
        let resolved = cache.resolve(key, &reference.encode_for(b"", false));
        if scanned.is_ok() {
            assert_eq!(
                resolved.as_ref().ok(),
                Some(value),
                "a record of a sound file does not resolve"
            );
        }
    }
}
