//! WAL damage an open tolerates is reported (docs/format/wal.md, "Recovery modes": "dropped
//! (and reported)"): through `Db::recovery_report`, the statistics, and a read-only open's
//! report alike.

use std::path::Path;
use std::sync::Arc;

use shale_engine::inspect::wal::format::{log_file_name, parse_log_file_name};
use shale_engine::{Db, DropReason, Durability, Options, RecoveryMode};
use shale_fs::{CrashMode, FileSystem, MemFs};

const DIR: &str = "/db";

fn options(fs: &MemFs) -> Options {
    Options {
        durability: Durability::Sync,
        file_system: Arc::new(fs.clone()),
        ..Options::default()
    }
}

/// Writes `count` keys with Sync durability and returns the crash image (the database never
/// closed), with the newest WAL's number and size.
fn crashed_with_writes(count: usize) -> (MemFs, u64, u64) {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(&fs)).unwrap();
    for i in 0..count {
        db.put(format!("key{i:03}").as_bytes(), &[b'v'; 100])
            .unwrap();
    }
    let image = fs.crash_image(CrashMode::DropUnsynced);
    drop(db);
    let newest = image
        .list(Path::new(DIR))
        .unwrap()
        .iter()
        .filter_map(|n| parse_log_file_name(n))
        .max()
        .unwrap();
    let size = image
        .size(&Path::new(DIR).join(log_file_name(newest)))
        .unwrap();
    (image, newest, size)
}

#[test]
fn a_clean_open_reports_the_wals_it_replayed_and_nothing_dropped() {
    let (fs, newest, size) = crashed_with_writes(10);
    let db = Db::open(DIR, options(&fs)).unwrap();
    let report = db.recovery_report();
    assert_eq!(report.mode, RecoveryMode::TolerateCorruptedTailRecords);
    assert!(report.dropped.is_empty(), "{report}");
    let wal = report.wals.iter().find(|w| w.number == newest).unwrap();
    assert_eq!((wal.records, wal.end), (10, size));
    assert_eq!(report.replayed_records(), 10);
    let stats = db.stats();
    assert_eq!(
        (stats.recovery_wal_drops, stats.recovery_wal_dropped_bytes),
        (0, 0)
    );
    assert!(report.to_string().contains("nothing dropped"), "{report}");
}

#[test]
fn a_torn_tail_dropped_at_open_is_reported_with_wal_offset_bytes_and_seqno() {
    let (fs, newest, size) = crashed_with_writes(10);
    // Cut the last record short: a write the crash interrupted.
    let path = Path::new(DIR).join(log_file_name(newest));
    fs.truncate_for_test(&path, size - 30).unwrap();
    let db = Db::open(DIR, options(&fs)).unwrap();
    let report = db.recovery_report().clone();
    assert_eq!(report.dropped.len(), 1, "{report}");
    let dropped = report.dropped[0];
    assert_eq!(dropped.wal_number, newest);
    assert_eq!(dropped.reason, DropReason::TornTail);
    let wal = report.wals.iter().find(|w| w.number == newest).unwrap();
    assert_eq!(wal.records, 9);
    assert_eq!(dropped.offset, Some(wal.end));
    assert_eq!(dropped.bytes, size - 30 - wal.end);
    assert_eq!(dropped.first_seqno, Some(10), "the tenth write was lost");
    assert_eq!(db.get(b"key009").unwrap(), None);
    assert!(db.get(b"key008").unwrap().is_some());
    let stats = db.stats();
    assert_eq!(stats.recovery_wal_drops, 1);
    assert_eq!(stats.recovery_wal_dropped_bytes, dropped.bytes);
    let text = report.to_string();
    assert!(
        text.contains(&format!("WAL {newest}")) && text.contains("torn tail at offset"),
        "{text}"
    );
    assert!(stats.to_string().contains("recovery dropped"), "{stats}");
}

#[test]
fn a_read_only_open_reports_the_same_drop() {
    let (fs, newest, size) = crashed_with_writes(5);
    let path = Path::new(DIR).join(log_file_name(newest));
    fs.truncate_for_test(&path, size - 1).unwrap();
    let db = Db::open_read_only(DIR, options(&fs)).unwrap();
    let report = db.recovery_report();
    assert_eq!(report.dropped.len(), 1, "{report}");
    assert_eq!(report.dropped[0].wal_number, newest);
    assert_eq!(report.dropped[0].bytes, size - 1 - report.wals[0].end);
}

#[test]
fn skipped_and_point_in_time_drops_are_reported() {
    let (fs, newest, size) = crashed_with_writes(20);
    let path = Path::new(DIR).join(log_file_name(newest));
    // A flipped byte in the middle: valid records follow it.
    fs.corrupt_for_test(&path, size / 2, 0x40).unwrap();
    let mut tolerate = options(&fs);
    tolerate.wal_recovery_mode = RecoveryMode::TolerateCorruptedTailRecords;
    assert!(Db::open(DIR, tolerate).is_err());

    let skip_fs = fs.crash_image(CrashMode::DropUnsynced);
    let mut skip = options(&skip_fs);
    skip.wal_recovery_mode = RecoveryMode::SkipAnyCorruptedRecords;
    let db = Db::open(DIR, skip).unwrap();
    let report = db.recovery_report();
    assert_eq!(report.dropped.len(), 1, "{report}");
    assert_eq!(report.dropped[0].reason, DropReason::Skipped);
    assert!(report.dropped[0].bytes > 0);
    assert_eq!(report.replayed_records(), 19);
    drop(db);

    let mut point = options(&fs);
    point.wal_recovery_mode = RecoveryMode::PointInTime;
    let db = Db::open(DIR, point).unwrap();
    let report = db.recovery_report();
    assert_eq!(report.dropped.len(), 1, "{report}");
    let dropped = report.dropped[0];
    assert_eq!(dropped.reason, DropReason::Corruption);
    let end = report.wals.iter().find(|w| w.number == newest).unwrap().end;
    assert_eq!(dropped.offset, Some(end));
    assert_eq!(dropped.bytes, size - end);
    assert_eq!(db.stats().recovery_wal_dropped_bytes, size - end);
}
