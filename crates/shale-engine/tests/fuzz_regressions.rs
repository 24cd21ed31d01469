//! Inputs that crashed an engine decoder, each a named test that runs it through the same
//! `shale_engine::testing` entry point as the cargo-fuzz target (fuzz/README.md) and checks
//! the error the input now gets.
//!
//! The file-number cases panicked with an add overflow in `VersionSet::recover` (a file
//! number of `u64::MAX` in CURRENT or a MANIFEST record, to which recovery adds 1). Random
//! mutation rarely builds them behind valid record checksums, so they were written by hand
//! while writing the `manifest` target; the `manifest_records` target now mutates edits behind
//! valid checksums.

use std::path::Path;
use std::sync::Arc;

use shale_engine::inspect::wal::{LogReader, LogWriter, RecoveryMode};
use shale_engine::inspect::{manifest_file_name, FileMetaData, PinnedTable, VersionEdit};
use shale_engine::testing::VersionSet;
use shale_engine::testing::{fuzz_manifest, fuzz_manifest_records, manifest_records_input};
use shale_engine::{Error, DEFAULT_NUM_LEVELS};
use shale_fs::{FileSystem, MemFs};
use shale_sst::{BytewiseComparator, InternalKey, ValueKind};

/// The records of the MANIFEST a new database starts with, decoded.
fn initial_manifest_edits() -> Vec<VersionEdit> {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    drop(
        VersionSet::create(
            Arc::new(fs.clone()),
            dir,
            Arc::new(BytewiseComparator),
            DEFAULT_NUM_LEVELS,
        )
        .unwrap(),
    );
    let path = dir.join(manifest_file_name(1));
    let file = fs.open_read(&path).unwrap();
    let mut reader = LogReader::new(file, 1, RecoveryMode::AbsoluteConsistency).unwrap();
    let mut edits = Vec::new();
    while let Some((record, _)) = reader.read_record().unwrap() {
        edits.push(VersionEdit::decode(&record).unwrap());
    }
    edits
}

/// The bytes of MANIFEST `number` holding `edits`, as the version set writes them.
fn manifest_bytes(number: u64, edits: &[VersionEdit]) -> Vec<u8> {
    let fs = MemFs::new();
    let path = Path::new("/m");
    let mut writer = LogWriter::new(fs.create(path).unwrap(), number).unwrap();
    for edit in edits {
        writer.add_record(&edit.encode()).unwrap();
    }
    writer.sync().unwrap();
    fs.file_contents(path).unwrap()
}

/// Recovers the database in `/db` holding `manifest` as MANIFEST `number` and `CURRENT`.
fn recover(number: u64, manifest: &[u8]) -> shale_engine::Result<VersionSet> {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    fs.create_dir_all(dir).unwrap();
    fs.write_file_for_test(dir.join(manifest_file_name(number)), manifest)
        .unwrap();
    let name = manifest_file_name(number);
    let current = format!("{name} crc32c={:08x}\n", crc32c::crc32c(name.as_bytes()));
    fs.write_file_for_test(dir.join("CURRENT"), current.as_bytes())
        .unwrap();
    VersionSet::recover(
        Arc::new(fs),
        dir,
        Arc::new(BytewiseComparator),
        DEFAULT_NUM_LEVELS,
    )
}

fn assert_corruption_naming(result: shale_engine::Result<VersionSet>, words: &str) {
    match result {
        Err(e @ Error::Corruption { .. }) => {
            let message = e.to_string();
            assert!(message.contains(words), "{message}");
            assert!(message.contains("MANIFEST-"), "{message}");
        }
        Err(e) => panic!("expected a corruption naming {words:?}, got {e}"),
        Ok(_) => panic!("expected a corruption naming {words:?}, recovery succeeded"),
    }
}

#[test]
fn manifest_numbered_u64_max() {
    let manifest = manifest_bytes(u64::MAX, &initial_manifest_edits());
    fuzz_manifest(&manifest);
    assert_corruption_naming(recover(u64::MAX, &manifest), "file number");
    let message = recover(u64::MAX, &manifest).err().unwrap().to_string();
    assert!(message.contains("CURRENT"), "{message}");
}

#[test]
fn manifest_with_keyspace_log_number_u64_max() {
    let mut edits = initial_manifest_edits();
    let mut edit = VersionEdit::new();
    edit.set_log_number(0, u64::MAX);
    edits.push(edit);
    let manifest = manifest_bytes(1, &edits);
    fuzz_manifest(&manifest);
    assert_corruption_naming(recover(1, &manifest), "file number");
}

#[test]
fn manifest_with_next_file_number_u64_max() {
    let mut edits = initial_manifest_edits();
    let edit = VersionEdit {
        next_file_number: Some(u64::MAX),
        ..VersionEdit::new()
    };
    edits.push(edit);
    let manifest = manifest_bytes(1, &edits);
    fuzz_manifest(&manifest);
    assert_corruption_naming(recover(1, &manifest), "file number");
}

#[test]
fn manifest_with_table_file_number_u64_max() {
    let mut edits = initial_manifest_edits();
    let mut edit = VersionEdit::new();
    edit.add_file(
        0,
        1,
        FileMetaData {
            number: u64::MAX,
            size: 1000,
            smallest: InternalKey::new(b"a", 1, ValueKind::Value),
            largest: InternalKey::new(b"b", 1, ValueKind::Value),
            smallest_seqno: 1,
            largest_seqno: 1,
            num_entries: 2,
            num_deletions: 0,
            creation_time: None,
            oldest_entry_time: None,
            global_seqno: None,
            oldest_blob_file: None,
            pinned_table: PinnedTable::default(),
        },
    );
    edit.last_sequence = Some(1);
    edits.push(edit);
    let manifest = manifest_bytes(1, &edits);
    fuzz_manifest(&manifest);
    assert_corruption_naming(recover(1, &manifest), "file number");
}

/// Found by the `fuzz_manifest_records` smoke test: a later edit lowered `LAST_SEQUENCE` below
/// the seqnos of a file an earlier edit added. Recovery accepted it and wrote a snapshot that
/// the next recovery refused ("holds seqno 27 beyond the last sequence 0"), so the database
/// would open once and then never again.
#[test]
fn manifest_lowering_last_sequence_below_a_file() {
    let mut edits = initial_manifest_edits();
    let mut add = VersionEdit::new();
    add.add_file(
        0,
        0,
        FileMetaData {
            number: 28,
            size: 1000,
            smallest: InternalKey::new(b"a", 27, ValueKind::Value),
            largest: InternalKey::new(b"b", 1, ValueKind::Value),
            smallest_seqno: 1,
            largest_seqno: 27,
            num_entries: 27,
            num_deletions: 0,
            creation_time: None,
            oldest_entry_time: None,
            global_seqno: None,
            oldest_blob_file: None,
            pinned_table: PinnedTable::default(),
        },
    );
    add.last_sequence = Some(27);
    add.next_file_number = Some(29);
    edits.push(add);
    edits.push(VersionEdit {
        last_sequence: Some(0),
        ..VersionEdit::new()
    });
    let records: Vec<Vec<u8>> = edits.iter().map(VersionEdit::encode).collect();
    fuzz_manifest_records(&manifest_records_input(&records));
    let manifest = manifest_bytes(1, &edits);
    fuzz_manifest(&manifest);
    assert_corruption_naming(recover(1, &manifest), "LAST_SEQUENCE 0 is below 27");
}
