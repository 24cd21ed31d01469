//! Damaged logs (docs/format/wal.md, "Recovery modes"): torn tails from crashes and cuts,
//! corruption in the middle of a log, and bytes flipped anywhere. Every case checks what each
//! recovery mode must return, not just that nothing panics.

mod common;

use common::{
    corruption_at, log_path, payload, plant, read_log, write_log, write_log_synced, Written,
    ALL_MODES,
};
use shale_engine::inspect::wal::format::{BLOCK_SIZE, HEADER_SIZE};
use shale_engine::inspect::wal::{LogEnd, RecoveryMode};
use shale_fs::{CrashMode, FileSystem, MemFs};

const TOLERATE: RecoveryMode = RecoveryMode::TolerateCorruptedTailRecords;
const ABSOLUTE: RecoveryMode = RecoveryMode::AbsoluteConsistency;
const POINT_IN_TIME: RecoveryMode = RecoveryMode::PointInTime;
const SKIP: RecoveryMode = RecoveryMode::SkipAnyCorruptedRecords;
const SECTOR: usize = 512;

/// Small records, one spanning two blocks, more small ones, then a last record spanning
/// three blocks (FIRST, MIDDLE, LAST).
fn mixed_records() -> Vec<Vec<u8>> {
    let mut sizes = vec![10, 300, 0, 40_000, 7, 1000, 1000];
    sizes.extend([70_000]);
    sizes
        .into_iter()
        .enumerate()
        .map(|(i, n)| payload(i, n))
        .collect()
}

/// Checks what every mode returns for a log whose bytes are `bytes`: the original `written`
/// log with its tail cut or torn, and otherwise intact. `intact` is how many leading bytes
/// equal the original's.
fn check_torn(fs: &MemFs, written: &Written, bytes: &[u8], intact: u64, what: &str) {
    let len = bytes.len() as u64;
    let expected = written.complete_within(intact);
    // Where the recovered data ends, and where the first record not recovered starts (the
    // file header counts as a record: when it is damaged, nothing is recovered from 0).
    let header_intact = intact >= common::FILE_HEADER_RECORD;
    let (data_end, torn_start) = match expected.len() {
        _ if !header_intact => (0, 0),
        0 => (common::FILE_HEADER_RECORD, written.starts[0]),
        k => (
            written.ends[k - 1],
            written.first_incomplete_start(intact).unwrap_or(len),
        ),
    };
    // What follows the recovered data: nothing or zeros is clean, anything else torn.
    let tail_clean = bytes
        .get(data_end as usize..)
        .unwrap_or(&[])
        .iter()
        .all(|&b| b == 0);
    for mode in ALL_MODES {
        let result = read_log(fs, &written.path, written.log_number, mode);
        if mode == ABSOLUTE && !tail_clean {
            let (file, offset, detail) = corruption_at(result);
            assert_eq!(file, written.path);
            assert_eq!(offset, torn_start, "{what}: {detail}");
            assert!(detail.contains("AbsoluteConsistency"), "{what}: {detail}");
            continue;
        }
        let (got, reader) = result.unwrap_or_else(|e| panic!("{what} {mode:?}: {e}"));
        assert!(
            got == expected,
            "{what} {mode:?}: {} records, expected {}",
            got.len(),
            expected.len()
        );
        let end = reader.end().unwrap();
        if tail_clean {
            assert!(!end.is_damage(), "{what} {mode:?}: {end:?}");
            assert_eq!(reader.dropped_tail_bytes(), 0);
        } else {
            assert_eq!(
                end,
                &LogEnd::TornTail {
                    offset: torn_start,
                    bytes: len - torn_start
                },
                "{what} {mode:?}"
            );
            assert_eq!(reader.dropped_tail_bytes(), len - torn_start);
        }
    }
}

#[test]
fn a_cut_at_every_length_over_the_last_blocks_keeps_exactly_the_complete_records() {
    let fs = MemFs::new();
    let path = log_path("/db", 21);
    let written = write_log(&fs, &path, 21, &mixed_records());
    let full = fs.file_contents(&path).unwrap();
    // Every length from inside the two-block record to the end (the last three blocks and
    // the ends of the small records before them), then a coarser sweep over the start of the
    // file, the file header included. Lengths only shrink, so each cut is a truncation.
    let from = written.starts[3] as usize + 1000;
    let lengths = (from..full.len()).rev().chain((0..from).step_by(37).rev());
    for len in lengths {
        fs.truncate_for_test(&path, len as u64).unwrap();
        check_torn(
            &fs,
            &written,
            &full[..len],
            len as u64,
            &format!("cut at {len}"),
        );
    }
}

#[test]
fn torn_sectors_of_the_last_record_keep_exactly_the_complete_records() {
    let fs = MemFs::new();
    let path = log_path("/db", 22);
    let written = write_log(&fs, &path, 22, &mixed_records());
    let full = fs.file_contents(&path).unwrap();
    let last_start = *written.starts.last().unwrap() as usize;
    // Every sector boundary inside the last record (counted from the file's start, as a disk
    // writes them), and the three ways the last kept sector can tear.
    let first_cut = (last_start / SECTOR + 1) * SECTOR;
    for cut in (first_cut..full.len()).step_by(SECTOR) {
        let sector = cut - SECTOR;
        let mut zeroed = full[..cut].to_vec();
        zeroed[sector.max(last_start)..].fill(0);
        let mut garbage = full[..cut].to_vec();
        for (i, b) in garbage[sector.max(last_start)..].iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(151).wrapping_add(7);
        }
        let half = full[..sector.max(last_start) + 100].to_vec();
        for (name, bytes) in [
            ("cut", full[..cut].to_vec()),
            ("zeroed", zeroed),
            ("garbage", garbage),
            ("half sector", half),
        ] {
            let intact = bytes
                .iter()
                .zip(&full)
                .position(|(a, b)| a != b)
                .unwrap_or(bytes.len()) as u64;
            plant(&fs, &path, &bytes);
            check_torn(
                &fs,
                &written,
                &bytes,
                intact,
                &format!("{name} at sector {cut}"),
            );
        }
    }
}

#[test]
fn crash_images_with_torn_writes_keep_every_synced_record() {
    let fs = MemFs::new();
    let path = log_path("/db", 23);
    let records = mixed_records();
    let synced = 5;
    let written = write_log_synced(&fs, &path, 23, &records, synced);
    let full = fs.file_contents(&path).unwrap();
    let mut torn_seen = 0;
    for seed in 0..400 {
        let image = fs.crash_image(CrashMode::Torn { seed });
        let bytes = image.file_contents(&path).unwrap();
        let intact = bytes
            .iter()
            .zip(&full)
            .position(|(a, b)| a != b)
            .unwrap_or(bytes.len()) as u64;
        assert!(
            intact >= written.ends[synced - 1],
            "seed {seed}: synced bytes lost"
        );
        let (got, _) = read_log(&image, &path, 23, TOLERATE).unwrap();
        assert!(got.len() >= synced, "seed {seed}");
        if got.len() < records.len() {
            torn_seen += 1;
        }
        check_torn(&image, &written, &bytes, intact, &format!("seed {seed}"));
    }
    assert!(torn_seen > 100, "only {torn_seen} images lost records");
}

/// A log of 40 small records, a three-block record, and 40 more small ones.
fn long_log(fs: &MemFs, log_number: u64) -> Written {
    let mut records: Vec<Vec<u8>> = (0..40).map(|i| payload(i, 200 + i)).collect();
    records.push(payload(40, 80_000));
    records.extend((41..81).map(|i| payload(i, 300)));
    write_log(fs, &log_path("/db", log_number), log_number, &records)
}

fn without(written: &Written, skip: &[usize]) -> Vec<(Vec<u8>, u64)> {
    written
        .all()
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !skip.contains(i))
        .map(|(_, r)| r)
        .collect()
}

#[test]
fn a_flipped_byte_in_an_early_record_is_corruption_not_a_torn_tail() {
    let fs = MemFs::new();
    let written = long_log(&fs, 31);
    let path = &written.path;
    let victim = 3;
    let at = written.starts[victim] + HEADER_SIZE as u64 + 100;
    fs.corrupt_for_test(path, at, 0x20).unwrap();

    for mode in [TOLERATE, ABSOLUTE] {
        let (file, offset, detail) = corruption_at(read_log(&fs, path, 31, mode));
        assert_eq!((&file, offset), (path, written.starts[victim]), "{mode:?}");
        assert!(detail.contains("checksum mismatch"), "{detail}");
        assert!(detail.contains("not a torn tail"), "{detail}");
        let text = shale_engine::Error::Corruption {
            file,
            offset,
            detail,
        }
        .to_string();
        assert!(text.contains("000031.wal at offset"), "{text}");
    }

    let (got, reader) = read_log(&fs, path, 31, POINT_IN_TIME).unwrap();
    assert!(got == written.all()[..victim]);
    match reader.end() {
        Some(LogEnd::Corruption { offset, detail }) => {
            assert_eq!(*offset, written.starts[victim]);
            assert!(detail.contains("checksum mismatch"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    assert!(reader.end().unwrap().is_damage());
    assert_eq!(reader.last_record_end(), written.ends[victim - 1]);

    let (got, reader) = read_log(&fs, path, 31, SKIP).unwrap();
    assert!(got == without(&written, &[victim]));
    assert_eq!(reader.skipped_corruptions(), 1);
    assert_eq!(
        reader.skipped_bytes(),
        written.ends[victim] - written.starts[victim]
    );
    assert_eq!(
        reader.end(),
        Some(&LogEnd::EndOfFile {
            offset: fs.size(path).unwrap()
        })
    );
}

#[test]
fn a_damaged_length_field_is_caught_by_the_byte_scan() {
    let fs = MemFs::new();
    let written = long_log(&fs, 32);
    let path = &written.path;
    // The length of record 2 now claims to run past its block: its true end is unknown.
    let victim = 2;
    fs.corrupt_for_test(path, written.starts[victim] + 5, 0xff)
        .unwrap();
    let (_, offset, detail) = corruption_at(read_log(&fs, path, 32, TOLERATE));
    assert_eq!(offset, written.starts[victim]);
    assert!(detail.contains("not a torn tail"), "{detail}");
    // Skip resumes at the next block boundary, never inside the damaged record: the records
    // between are lost; the MIDDLE and LAST fragments of the big record are orphans there.
    let (got, reader) = read_log(&fs, path, 32, SKIP).unwrap();
    let big = 40;
    assert!(written.starts[big] < BLOCK_SIZE as u64);
    assert!(got == without(&written, &(victim..=big).collect::<Vec<_>>()));
    assert_eq!(reader.skipped_corruptions(), 3);
}

#[test]
fn a_damaged_middle_fragment_loses_only_its_record_when_skipping() {
    let fs = MemFs::new();
    let written = long_log(&fs, 33);
    let path = &written.path;
    let big = 40;
    let middle = (written.starts[big] / BLOCK_SIZE as u64 + 1) * BLOCK_SIZE as u64;
    fs.corrupt_for_test(path, middle + 5000, 0x01).unwrap();
    let (_, offset, detail) = corruption_at(read_log(&fs, path, 33, TOLERATE));
    assert_eq!(offset, middle);
    assert!(
        detail.contains(&format!(
            "fragmented record starting at offset {}",
            written.starts[big]
        )),
        "{detail}"
    );
    let (got, reader) = read_log(&fs, path, 33, POINT_IN_TIME).unwrap();
    assert!(got == written.all()[..big]);
    assert!(matches!(reader.end(), Some(LogEnd::Corruption { offset, .. }) if *offset == middle));
    let (got, reader) = read_log(&fs, path, 33, SKIP).unwrap();
    assert!(got == without(&written, &[big]));
    // The damaged MIDDLE (with its FIRST), then the orphan LAST.
    assert_eq!(reader.skipped_corruptions(), 2);
    assert_eq!(
        reader.skipped_bytes(),
        written.ends[big] - written.starts[big]
    );
}

#[test]
fn a_zeroed_hole_before_valid_records_is_corruption() {
    let fs = MemFs::new();
    let written = long_log(&fs, 34);
    let path = &written.path;
    let mut bytes = fs.file_contents(path).unwrap();
    let hole = written.starts[10] as usize;
    bytes[hole..hole + 4096].fill(0);
    plant(&fs, path, &bytes);
    let (_, offset, _) = corruption_at(read_log(&fs, path, 34, TOLERATE));
    assert_eq!(offset, written.starts[10]);
    let (got, reader) = read_log(&fs, path, 34, POINT_IN_TIME).unwrap();
    assert!(got == written.all()[..10]);
    assert!(reader.end().unwrap().is_damage());
}

/// What every mode may return for a log with one byte changed: never a panic, never a record
/// that was not written, and each mode's rule.
fn check_flipped(fs: &MemFs, written: &Written, what: &str) {
    let all = written.all();
    for mode in ALL_MODES {
        match read_log(fs, &written.path, written.log_number, mode) {
            Err(e) => {
                assert!(
                    mode == TOLERATE || mode == ABSOLUTE,
                    "{what} {mode:?} failed: {e}"
                );
                assert!(e.is_corruption(), "{what} {mode:?}: {e}");
            }
            Ok((got, _)) => match mode {
                ABSOLUTE => assert!(got == all, "{what}: absolute returned a partial log"),
                TOLERATE | POINT_IN_TIME => {
                    assert!(got == all[..got.len()], "{what} {mode:?}: not a prefix");
                }
                _ => {
                    let mut rest = all.iter();
                    for record in &got {
                        assert!(rest.any(|r| r == record), "{what}: not a subsequence");
                    }
                }
            },
        }
    }
}

#[test]
fn a_flip_at_every_byte_of_a_small_log_is_judged_by_mode() {
    let fs = MemFs::new();
    let path = log_path("/db", 35);
    let records: Vec<Vec<u8>> = [0, 1, 50, 200, 13]
        .iter()
        .enumerate()
        .map(|(i, &n)| payload(i, n))
        .collect();
    let written = write_log(&fs, &path, 35, &records);
    let good = fs.file_contents(&path).unwrap();
    for at in 0..good.len() {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[at] ^= mask;
            plant(&fs, &path, &bad);
            check_flipped(&fs, &written, &format!("byte {at} ^ {mask:#x}"));
        }
    }
}

#[test]
fn flips_across_a_multi_block_log_are_judged_by_mode() {
    let fs = MemFs::new();
    let written = long_log(&fs, 36);
    let good = fs.file_contents(&written.path).unwrap();
    for at in (0..good.len()).step_by(211) {
        let mut bad = good.clone();
        bad[at] ^= 0x08;
        plant(&fs, &written.path, &bad);
        check_flipped(&fs, &written, &format!("byte {at}"));
    }
}
