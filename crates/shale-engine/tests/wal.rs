//! The write-ahead log (docs/format/wal.md): round trips, file headers (version, stale and
//! recycled files), and the writer's sticky failure.

mod common;

use std::sync::Arc;

use common::{
    corruption_at, header_size, log_path, payload, plant, read_log, write_log, write_log_v1,
    write_log_version, ALL_MODES, FILE_HEADER_RECORD,
};
use shale_engine::inspect::wal::format::{
    log_file_name, parse_log_file_name, BLOCK_SIZE, FORMAT_VERSION, MAGIC, OLDEST_FORMAT_VERSION,
};
use shale_engine::inspect::wal::{LogEnd, LogReader, LogWriter, RecoveryMode};
use shale_engine::{Error, WriteBatch};
use shale_fs::{
    CrashMode, FaultError, FaultFs, FaultRule, FaultTrigger, FileSystem, MemFs, OpKind,
};

const TOLERATE: RecoveryMode = RecoveryMode::TolerateCorruptedTailRecords;

/// Where a record of `len` bytes written at `pos` with `header`-byte record headers ends
/// (the writer's layout, simulated).
fn end_of(pos: u64, len: usize, header: usize) -> u64 {
    let block = BLOCK_SIZE as u64;
    let mut pos = pos;
    let mut left = len;
    loop {
        pos = common::next_start_in(pos, header);
        let room = (block - pos % block) as usize - header;
        let fragment = left.min(room);
        pos += (header + fragment) as u64;
        left -= fragment;
        if left == 0 {
            return pos;
        }
    }
}

/// Sizes that land on every interesting spot of the block layout of records with
/// `header`-byte headers.
fn interesting_sizes(header: usize) -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut pos = FILE_HEADER_RECORD;
    let mut add = |sizes: &mut Vec<usize>, len: usize| {
        sizes.push(len);
        pos = end_of(pos, len, header);
        pos
    };
    add(&mut sizes, 0);
    add(&mut sizes, 1);
    let mut at = add(&mut sizes, 0);
    // Records that leave exactly a header and one byte, a header, a byte less, 1 and 0 bytes
    // at the end of a block (a header's bytes hold an empty FIRST fragment; fewer are
    // padding), each followed by one that starts right there.
    for leave in [header + 1, header, header - 1, 1, 0] {
        let room = BLOCK_SIZE - (at % BLOCK_SIZE as u64) as usize;
        let len = room - header - leave;
        let end = add(&mut sizes, len);
        assert_eq!((end + leave as u64) % BLOCK_SIZE as u64, 0);
        at = add(&mut sizes, 5);
    }
    for delta in [-1isize, 0, 1] {
        add(
            &mut sizes,
            (BLOCK_SIZE - header).checked_add_signed(delta).unwrap(),
        );
        add(
            &mut sizes,
            (BLOCK_SIZE - 2 * header).checked_add_signed(delta).unwrap(),
        );
    }
    for len in [100 * 1024, 1 << 20, 3, 2 * BLOCK_SIZE, 0] {
        add(&mut sizes, len);
    }
    sizes
}

/// Version 2 (written now) and version 1 (logs written before the upgrade, which must still
/// replay).
#[test]
fn records_of_every_size_round_trip_in_every_mode_and_version() {
    for version in OLDEST_FORMAT_VERSION..=FORMAT_VERSION {
        let header = header_size(version);
        let fs = MemFs::new();
        let path = log_path("/db", 7);
        let records: Vec<Vec<u8>> = interesting_sizes(header)
            .into_iter()
            .enumerate()
            .map(|(i, len)| payload(i, len))
            .collect();
        let written = write_log_version(&fs, &path, 7, &records, usize::MAX, version);
        let file_size = fs.size(&path).unwrap();
        assert_eq!(*written.ends.last().unwrap(), file_size);
        // Nothing straddles a block: every record start leaves room for a header in its block.
        for &start in &written.starts {
            assert!(BLOCK_SIZE - (start as usize % BLOCK_SIZE) >= header);
        }
        for mode in ALL_MODES {
            let (got, reader) = read_log(&fs, &path, 7, mode).unwrap();
            assert_eq!(got.len(), records.len(), "v{version} {mode:?}");
            assert!(got == written.all(), "v{version} {mode:?}: records differ");
            assert_eq!(reader.end(), Some(&LogEnd::EndOfFile { offset: file_size }));
            assert_eq!(reader.dropped_tail_bytes(), 0);
            assert_eq!(reader.skipped_corruptions(), 0);
            assert_eq!(reader.last_record_end(), file_size);
        }
    }
}

#[test]
fn version_2_saves_four_bytes_a_record() {
    let records: Vec<Vec<u8>> = (0..1000).map(|i| payload(i, 120)).collect();
    let fs = MemFs::new();
    let v1 = write_log_v1(&fs, &log_path("/v1", 7), 7, &records);
    let v2 = write_log(&fs, &log_path("/v2", 7), 7, &records);
    let body = |w: &common::Written| w.ends.last().unwrap() - FILE_HEADER_RECORD;
    // Neither log reaches a block boundary's padding differently enough to matter here:
    // 1000 records of 131 or 127 bytes, a few bytes of padding in each of 4 blocks.
    let saved = body(&v1) - body(&v2);
    assert!((4000..4000 + 4 * 11).contains(&saved), "saved {saved}");
}

#[test]
fn an_unknown_format_version_cannot_be_written() {
    let fs = MemFs::new();
    fs.create_dir_all(std::path::Path::new("/db")).unwrap();
    for version in [0, FORMAT_VERSION + 1] {
        let file = fs.create(&log_path("/db", 3)).unwrap();
        let err = LogWriter::with_format_version(file, 3, version).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument(text) if text.contains(&format!("version {version}"))),
            "{err}"
        );
    }
}

#[test]
fn many_small_records_survive_a_crash_after_sync() {
    let fs = MemFs::new();
    let path = log_path("/db", 3);
    let records: Vec<Vec<u8>> = (0..3000).map(|i| payload(i, i % 97)).collect();
    let written = write_log(&fs, &path, 3, &records);
    let image = fs.crash_image(CrashMode::DropUnsynced);
    let (got, _) = read_log(&image, &path, 3, RecoveryMode::AbsoluteConsistency).unwrap();
    assert!(got == written.all());
}

#[test]
fn a_commit_group_batch_is_one_record() {
    let fs = MemFs::new();
    let path = log_path("/db", 1);
    fs.create_dir_all(path.parent().unwrap()).unwrap();
    let fault = FaultFs::new(Arc::new(fs.clone()));
    let mut writer = LogWriter::new(fault.create(&path).unwrap(), 1).unwrap();
    let mut group = WriteBatch::new();
    for i in 0..50u32 {
        let mut one = WriteBatch::new();
        one.put(
            i % 3,
            format!("key{i}").as_bytes(),
            &payload(i as usize, 2000),
        )
        .unwrap();
        group.append(&one).unwrap();
    }
    group.set_first_seqno(500);
    let appends = fault.op_count(OpKind::Append);
    let record = group.to_wal_record(writer.format_version()).unwrap();
    writer.add_record(&record).unwrap(); // ~100 KiB: four fragments, one append
    assert_eq!(fault.op_count(OpKind::Append), appends + 1);
    writer.sync().unwrap();
    let (got, reader) = read_log(&fs, &path, 1, TOLERATE).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(reader.format_version(), Some(FORMAT_VERSION));
    let (data, offset) = got.into_iter().next().unwrap();
    let batch = WriteBatch::from_wal_record(data, reader.format_version(), &path, offset).unwrap();
    assert_eq!(batch, group);
    assert_eq!(batch.iter().last().unwrap().seqno, 549);
}

#[test]
fn empty_and_zero_filled_files_are_empty_logs() {
    let fs = MemFs::new();
    let path = log_path("/db", 4);
    plant(&fs, &path, b"");
    for mode in ALL_MODES {
        let (got, reader) = read_log(&fs, &path, 4, mode).unwrap();
        assert!(got.is_empty());
        assert_eq!(reader.end(), Some(&LogEnd::EndOfFile { offset: 0 }));
    }
    plant(&fs, &path, &vec![0; 70_000]);
    for mode in ALL_MODES {
        let (got, reader) = read_log(&fs, &path, 4, mode).unwrap();
        assert!(got.is_empty());
        assert_eq!(reader.end(), Some(&LogEnd::ZeroTail { offset: 0 }));
    }
}

#[test]
fn preallocated_zero_tail_is_clean_in_every_mode() {
    let fs = MemFs::new();
    let path = log_path("/db", 8);
    let records: Vec<Vec<u8>> = (0..40).map(|i| payload(i, 900)).collect();
    let written = write_log(&fs, &path, 8, &records);
    let end = *written.ends.last().unwrap();
    fs.truncate_for_test(&path, end + 200_000).unwrap(); // extends with zeros
    for mode in ALL_MODES {
        let (got, reader) = read_log(&fs, &path, 8, mode).unwrap();
        assert!(got == written.all(), "{mode:?}");
        assert_eq!(reader.end(), Some(&LogEnd::ZeroTail { offset: end }));
        assert_eq!(reader.dropped_tail_bytes(), 0);
        assert!(!reader.end().unwrap().is_damage());
    }
}

#[test]
fn writer_refuses_a_non_empty_file() {
    let fs = MemFs::new();
    let path = log_path("/db", 2);
    write_log(&fs, &path, 2, &[b"x".to_vec()]);
    let err = LogWriter::new(fs.open_append(&path).unwrap(), 2).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}

#[test]
fn file_names_carry_the_log_number() {
    assert_eq!(log_file_name(42), "000042.wal");
    assert_eq!(parse_log_file_name("000042.wal"), Some(42));
    assert_eq!(
        parse_log_file_name(&log_file_name(u64::MAX)),
        Some(u64::MAX)
    );
    assert_eq!(parse_log_file_name("MANIFEST-000001"), None);
}

/// Encodes a version 2 physical record as docs/format/wal.md describes, independently of the
/// writer.
fn spec_record_v2(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut rest = Vec::new();
    rest.extend_from_slice(&u16::try_from(payload.len()).unwrap().to_le_bytes());
    rest.push(kind);
    let crc = crc32c::crc32c_append(crc32c::crc32c(&rest), payload);
    let masked = crc.rotate_right(15).wrapping_add(0xa282_ead8);
    let mut out = masked.to_le_bytes().to_vec();
    out.extend_from_slice(&rest);
    out.extend_from_slice(payload);
    out
}

/// Encodes a physical record in the version 1 layout (every file header, and the records of
/// a version 1 log) as docs/format/wal.md describes, independently of the writer.
fn spec_record(kind: u8, log_low: u32, payload: &[u8]) -> Vec<u8> {
    let mut rest = Vec::new();
    rest.extend_from_slice(&u16::try_from(payload.len()).unwrap().to_le_bytes());
    rest.push(kind);
    rest.extend_from_slice(&log_low.to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&rest), payload);
    let masked = crc.rotate_right(15).wrapping_add(0xa282_ead8);
    let mut out = masked.to_le_bytes().to_vec();
    out.extend_from_slice(&rest);
    out.extend_from_slice(payload);
    out
}

fn spec_file_header(version: u32, log_number: u64) -> Vec<u8> {
    let mut payload = MAGIC.to_vec();
    payload.extend_from_slice(&version.to_le_bytes());
    payload.extend_from_slice(&log_number.to_le_bytes());
    spec_record(5, log_number as u32, &payload)
}

#[test]
fn the_writer_matches_an_independent_encoding_of_the_spec() {
    let fs = MemFs::new();
    let path = log_path("/db", 0x1_0000_0009);
    let records = [b"hello".to_vec(), Vec::new()];
    write_log(&fs, &path, 0x1_0000_0009, &records);
    let mut expected = spec_file_header(FORMAT_VERSION, 0x1_0000_0009);
    expected.extend(spec_record_v2(1, b"hello"));
    expected.extend(spec_record_v2(1, b""));
    assert_eq!(fs.file_contents(&path).unwrap(), expected);

    write_log_v1(&fs, &path, 0x1_0000_0009, &records);
    let mut expected = spec_file_header(1, 0x1_0000_0009);
    expected.extend(spec_record(1, 9, b"hello"));
    expected.extend(spec_record(1, 9, b""));
    assert_eq!(fs.file_contents(&path).unwrap(), expected);
}

#[test]
fn a_newer_format_version_is_not_supported() {
    let fs = MemFs::new();
    let path = log_path("/db", 6);
    let mut bytes = spec_file_header(FORMAT_VERSION + 1, 6);
    bytes.extend(spec_record_v2(1, b"from the future"));
    plant(&fs, &path, &bytes);
    for mode in ALL_MODES {
        let err = LogReader::new(fs.open_read(&path).unwrap(), 6, mode).unwrap_err();
        match &err {
            Error::NotSupported(text) => {
                let newer = format!("version {}", FORMAT_VERSION + 1);
                assert!(text.contains(&newer), "{text}");
                let known = format!("versions up to {FORMAT_VERSION}");
                assert!(text.contains(&known), "{text}");
                assert!(text.contains("000006.wal"), "{text}");
            }
            other => panic!("{mode:?}: {other:?}"),
        }
    }
}

#[test]
fn bad_magic_and_version_zero_are_corruption() {
    let fs = MemFs::new();
    let path = log_path("/db", 6);
    plant(&fs, &path, &spec_file_header(0, 6));
    let (_, offset, detail) =
        corruption_at(LogReader::new(fs.open_read(&path).unwrap(), 6, TOLERATE));
    assert_eq!(offset, 0);
    assert!(detail.contains("format version 0"), "{detail}");
    let mut payload = b"SHALESST".to_vec();
    payload.extend_from_slice(&[1, 0, 0, 0]);
    payload.extend_from_slice(&6u64.to_le_bytes());
    plant(&fs, &path, &spec_record(5, 6, &payload));
    let (_, _, detail) = corruption_at(LogReader::new(fs.open_read(&path).unwrap(), 6, TOLERATE));
    assert!(detail.contains("not a Shale write-ahead log"), "{detail}");
}

#[test]
fn a_missing_file_header_is_corruption_except_when_skipping() {
    let fs = MemFs::new();
    let path = log_path("/db", 6);
    let mut bytes = spec_record(1, 6, b"first");
    bytes.extend(spec_record(1, 6, b"second"));
    plant(&fs, &path, &bytes);
    let (_, offset, detail) =
        corruption_at(LogReader::new(fs.open_read(&path).unwrap(), 6, TOLERATE));
    assert_eq!(offset, 0);
    assert!(detail.contains("instead of a file header"), "{detail}");
    let (got, reader) = read_log(&fs, &path, 6, RecoveryMode::PointInTime).unwrap();
    assert!(got.is_empty());
    assert!(matches!(
        reader.end(),
        Some(LogEnd::Corruption { offset: 0, .. })
    ));
    let (got, _) = read_log(&fs, &path, 6, RecoveryMode::SkipAnyCorruptedRecords).unwrap();
    let got: Vec<Vec<u8>> = got.into_iter().map(|(r, _)| r).collect();
    assert_eq!(got, [b"first".to_vec(), b"second".to_vec()]);
}

#[test]
fn a_stale_file_is_refused_in_every_mode() {
    let fs = MemFs::new();
    let path = log_path("/db", 9);
    // Log 7's bytes under log 9's name.
    write_log(&fs, &path, 7, &[b"old data".to_vec()]);
    for mode in ALL_MODES {
        let (file, offset, detail) =
            corruption_at(LogReader::new(fs.open_read(&path).unwrap(), 9, mode));
        assert_eq!((file, offset), (path.clone(), 0));
        assert!(detail.contains("belongs to log 7, not log 9"), "{detail}");
        assert!(detail.contains("stale"), "{detail}");
    }
    // Same low 32 bits, different log: caught by the header's full 64-bit number.
    let high = (1u64 << 32) + 9;
    write_log(&fs, &path, high, &[b"old data".to_vec()]);
    let (_, _, detail) = corruption_at(LogReader::new(fs.open_read(&path).unwrap(), 9, TOLERATE));
    assert!(
        detail.contains(&format!("belongs to log {high}, not log 9")),
        "{detail}"
    );
}

/// A recycled file: log 9 overwrote the start of log 5's file, whose old records follow. Only
/// version 1 records carry the log number that makes recycling safe (a recycler must write
/// them; the engine never recycles version 2 files).
fn recycled(new_sizes: &[usize]) -> (MemFs, common::Written) {
    let fs = MemFs::new();
    let old: Vec<Vec<u8>> = (0..700).map(|i| payload(i, 100)).collect();
    let old_written = write_log_v1(&fs, &log_path("/old", 5), 5, &old);
    let new: Vec<Vec<u8>> = new_sizes
        .iter()
        .enumerate()
        .map(|(i, &len)| payload(i + 1000, len))
        .collect();
    let new_written = write_log_v1(&fs, &log_path("/new", 9), 9, &new);
    let mut bytes = fs.file_contents(&old_written.path).unwrap();
    let fresh = fs.file_contents(&new_written.path).unwrap();
    assert!(fresh.len() < bytes.len());
    bytes[..fresh.len()].copy_from_slice(&fresh);
    let path = log_path("/db", 9);
    plant(&fs, &path, &bytes);
    (
        fs,
        common::Written {
            path,
            ..new_written
        },
    )
}

#[test]
fn a_recycled_file_reads_only_the_new_records() {
    // Same record sizes: the new data ends exactly where an old record starts.
    let (fs, written) = recycled(&[100; 30]);
    let new_end = *written.ends.last().unwrap();
    for mode in ALL_MODES {
        let (got, reader) = read_log(&fs, &written.path, 9, mode).unwrap();
        assert!(got == written.all(), "{mode:?}");
        assert_eq!(
            reader.end(),
            Some(&LogEnd::StaleRecord {
                offset: new_end,
                log_number_low: 5
            })
        );
        assert!(!reader.end().unwrap().is_damage());
    }
    // Other sizes: the new data ends inside an old record, which reads as a torn tail; no old
    // record is ever returned. AbsoluteConsistency cannot tell this from a torn write.
    let (fs, written) = recycled(&[150; 30]);
    let new_end = *written.ends.last().unwrap();
    for mode in ALL_MODES {
        let result = read_log(&fs, &written.path, 9, mode);
        if mode == RecoveryMode::AbsoluteConsistency {
            let (_, offset, _) = corruption_at(result);
            assert_eq!(offset, new_end);
            continue;
        }
        let (got, reader) = result.unwrap();
        assert!(got == written.all(), "{mode:?}");
        assert!(
            matches!(reader.end(), Some(LogEnd::TornTail { offset, .. }) if *offset == new_end),
            "{mode:?}: {:?}",
            reader.end()
        );
    }
}

fn faulty_writer(rule: FaultRule) -> (MemFs, FaultFs, LogWriter) {
    let fs = MemFs::new();
    let path = log_path("/db", 11);
    fs.create_dir_all(path.parent().unwrap()).unwrap();
    let fault = FaultFs::new(Arc::new(fs.clone()));
    fault.add_rule(rule);
    let writer = LogWriter::new(fault.create(&path).unwrap(), 11).unwrap();
    (fs, fault, writer)
}

#[test]
fn a_failed_sync_poisons_the_writer_and_is_never_retried() {
    let (_fs, fault, mut writer) = faulty_writer(FaultRule::new(
        OpKind::SyncData,
        FaultTrigger::Nth(1),
        FaultError::FailedSync,
    ));
    writer.add_record(b"acknowledged?").unwrap();
    let first = writer.sync().unwrap_err();
    assert!(matches!(&first, Error::Io(e) if e.is_injected()), "{first}");
    assert_eq!(fault.op_count(OpKind::SyncData), 1);
    assert!(writer.poisoned_reason().is_some());

    let appends = fault.op_count(OpKind::Append);
    let flushes = fault.op_count(OpKind::Flush);
    let second = writer.sync().unwrap_err();
    let Error::Background { reason } = &second else {
        panic!("expected a background error, got {second:?}");
    };
    assert!(reason.contains(&first.to_string()), "{reason}");
    assert!(second.to_string().contains("reopen"), "{second}");
    assert!(matches!(
        writer.add_record(b"more"),
        Err(Error::Background { .. })
    ));
    assert!(matches!(writer.flush(), Err(Error::Background { .. })));
    assert!(matches!(writer.sync(), Err(Error::Background { .. })));
    // The rule fired once and would let a retry "succeed": the writer never asked.
    assert_eq!(fault.op_count(OpKind::SyncData), 1);
    assert_eq!(fault.op_count(OpKind::Append), appends);
    assert_eq!(fault.op_count(OpKind::Flush), flushes);
}

#[test]
fn a_short_write_poisons_the_writer_and_reads_as_a_torn_tail() {
    let (fs, fault, mut writer) = faulty_writer(FaultRule::new(
        OpKind::Append,
        FaultTrigger::Nth(4), // the header, two records, then this one
        FaultError::ShortWrite,
    ));
    let first = writer.add_record(&payload(0, 5000)).unwrap();
    let second = writer.add_record(&payload(1, 70_000)).unwrap();
    writer.sync().unwrap();
    let err = writer.add_record(&payload(2, 50_000)).unwrap_err();
    assert!(matches!(&err, Error::Io(e) if e.is_injected()), "{err}");
    assert!(matches!(
        writer.add_record(b"x"),
        Err(Error::Background { .. })
    ));
    assert_eq!(fault.op_count(OpKind::Append), 4);
    assert_eq!(writer.file_size(), second);

    let path = log_path("/db", 11);
    let (got, reader) = read_log(&fs, &path, 11, TOLERATE).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].0, payload(1, 70_000));
    assert!(first < second);
    assert!(matches!(reader.end(), Some(LogEnd::TornTail { offset, .. }) if *offset == second));
    assert_eq!(
        reader.dropped_tail_bytes(),
        fs.size(&path).unwrap() - second
    );
    let (_, offset, _) = corruption_at(read_log(&fs, &path, 11, RecoveryMode::AbsoluteConsistency));
    assert_eq!(offset, second);
}

#[test]
fn a_read_error_is_reported_and_repeated() {
    let fs = MemFs::new();
    let path = log_path("/db", 12);
    let records: Vec<Vec<u8>> = (0..3).map(|i| payload(i, 40_000)).collect();
    write_log(&fs, &path, 12, &records);
    let fault = FaultFs::new(Arc::new(fs.clone()));
    fault.add_rule(FaultRule::new(
        OpKind::Read,
        FaultTrigger::Nth(3),
        FaultError::Eio,
    ));
    let mut reader = LogReader::new(fault.open_read(&path).unwrap(), 12, TOLERATE).unwrap();
    assert!(reader.read_record().unwrap().is_some());
    for _ in 0..2 {
        let err = reader.read_record().unwrap_err();
        assert!(matches!(&err, Error::Io(e) if e.is_injected()), "{err}");
    }
    assert_eq!(fault.op_count(OpKind::Read), 3);
}

/// Damage in a version 1 log is judged as before the upgrade: a torn tail is dropped, a
/// flipped byte with valid records after it is corruption.
#[test]
fn damage_in_a_version_1_log_is_judged_by_mode() {
    let fs = MemFs::new();
    let path = log_path("/db", 4);
    let records: Vec<Vec<u8>> = (0..40).map(|i| payload(i, 1500)).collect();
    let written = write_log_v1(&fs, &path, 4, &records);
    let bytes = fs.file_contents(&path).unwrap();

    let torn = *written.ends.last().unwrap() - 700;
    plant(&fs, &path, &bytes[..torn as usize]);
    let (got, reader) = read_log(&fs, &path, 4, TOLERATE).unwrap();
    assert!(got == written.complete_within(torn));
    assert!(
        matches!(reader.end(), Some(LogEnd::TornTail { offset, .. }) if *offset == written.starts[39])
    );

    let mut flipped = bytes.clone();
    let victim = written.starts[5] as usize + 20;
    flipped[victim] ^= 0x40;
    plant(&fs, &path, &flipped);
    let (_, offset, detail) = corruption_at(read_log(&fs, &path, 4, TOLERATE));
    assert_eq!(offset, written.starts[5]);
    assert!(
        detail.contains("valid record of this log follows"),
        "{detail}"
    );
    let (got, reader) = read_log(&fs, &path, 4, RecoveryMode::SkipAnyCorruptedRecords).unwrap();
    assert_eq!(got.len(), 39);
    assert_eq!(reader.skipped_corruptions(), 1);
    let (got, _) = read_log(&fs, &path, 4, RecoveryMode::PointInTime).unwrap();
    assert_eq!(got.len(), 5);
}

/// A damaged file header leaves the version unknown: the scan after it finds records of
/// either layout, so a version 2 log with a damaged header is corruption, never a torn tail
/// that would silently drop the whole log; skip mode reads its records in their layout.
#[test]
fn a_damaged_file_header_of_either_version_is_corruption_not_a_torn_tail() {
    for version in OLDEST_FORMAT_VERSION..=FORMAT_VERSION {
        let fs = MemFs::new();
        let path = log_path("/db", 8);
        let records: Vec<Vec<u8>> = (0..30).map(|i| payload(i, 2000)).collect();
        write_log_version(&fs, &path, 8, &records, usize::MAX, version);
        let mut bytes = fs.file_contents(&path).unwrap();
        bytes[15] ^= 1; // inside the magic: the header's checksum fails
        plant(&fs, &path, &bytes);
        let (_, offset, detail) = corruption_at(read_log(&fs, &path, 8, TOLERATE));
        assert_eq!(offset, 0, "v{version}");
        assert!(
            detail.contains(&format!("follows at offset {FILE_HEADER_RECORD}")),
            "v{version}: {detail}"
        );
        let (got, reader) = read_log(&fs, &path, 8, RecoveryMode::SkipAnyCorruptedRecords).unwrap();
        // Skip mode resumes where the damaged header claims to end, since a valid record of
        // the layout the scan found starts there: every data record is read.
        assert!(
            got.iter().map(|(r, _)| r).eq(records.iter()),
            "v{version}: {} records",
            got.len()
        );
        assert_eq!(reader.skipped_corruptions(), 1);
        // The header that named the version is lost: only version 1's layout tells it.
        let known = if version == 1 { Some(1) } else { None };
        assert_eq!(reader.format_version(), known, "v{version}");
    }
}
