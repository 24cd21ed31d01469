//! Synced WAL sizes in the MANIFEST (docs/format/manifest.md, `WAL_SYNCED`): cutting or
//! damaging acknowledged `Sync` writes is refused at open, never dropped as a torn tail.
//!
//! `SHALE_WAL_SYNCED_STRIDE=N` tries every Nth offset (default 1: every offset of every WAL).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use shale_engine::inspect::wal::format::{log_file_name, parse_log_file_name};
use shale_engine::{Db, DropReason, Durability, KeyspaceOptions, Options, RecoveryMode};
use shale_fs::{CrashMode, FileSystem, MemFs};

const DIR: &str = "/db";
const WRITES: usize = 150;

fn options(fs: &MemFs) -> Options {
    let mut options = Options {
        durability: Durability::Sync,
        file_system: Arc::new(fs.clone()),
        idle_compaction_after: None,
        ..Options::default()
    };
    options.default_keyspace.write_buffer_size = 4096;
    options
}

fn value(i: usize) -> Vec<u8> {
    format!("value-{i:03}-{}", "x".repeat(i % 17)).into_bytes()
}

/// A database whose "pinned" keyspace holds one unflushed write from before every other, so
/// every WAL after it stays: several closed WALs and the live one, all with synced sizes in
/// the MANIFEST after the clean close.
fn closed_cleanly() -> (MemFs, Vec<(u64, Vec<u8>)>) {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(&fs)).unwrap();
    let pinned = db
        .create_keyspace("pinned", KeyspaceOptions::default())
        .unwrap();
    pinned.put(b"p", b"pinned value").unwrap();
    for i in 0..WRITES {
        db.put(format!("key{i:03}").as_bytes(), &value(i)).unwrap();
    }
    drop(pinned);
    db.close().unwrap();
    let image = fs.crash_image(CrashMode::DropUnsynced);
    let wals = wal_files(&image);
    assert!(wals.len() >= 3, "closed WALs and the live one: {wals:?}");
    let contents = wals
        .into_iter()
        .map(|n| (n, image.file_contents(wal_path(n)).unwrap()))
        .collect();
    (image, contents)
}

fn wal_files(fs: &MemFs) -> Vec<u64> {
    let mut wals: Vec<u64> = fs
        .list(Path::new(DIR))
        .unwrap()
        .iter()
        .filter_map(|n| parse_log_file_name(n))
        .collect();
    wals.sort_unstable();
    wals
}

fn wal_path(number: u64) -> std::path::PathBuf {
    Path::new(DIR).join(log_file_name(number))
}

/// Every acknowledged write is there.
fn check_all(db: &Db, context: &str) {
    let pinned = db.keyspace("pinned").unwrap();
    assert_eq!(
        pinned.get(b"p").unwrap().as_deref(),
        Some(&b"pinned value"[..]),
        "{context}"
    );
    for i in 0..WRITES {
        let got = db.get(format!("key{i:03}").as_bytes()).unwrap();
        assert_eq!(got, Some(value(i)), "{context}: key{i:03}");
    }
}

/// Opens `fs`: either every acknowledged write is there, or the open fails with corruption
/// naming the damaged WAL. Returns whether it opened.
fn opens_whole_or_refuses(fs: &MemFs, wal: u64, context: &str) -> bool {
    match Db::open(DIR, options(fs)) {
        Ok(db) => {
            check_all(&db, context);
            assert!(db.recovery_report().dropped.is_empty(), "{context}");
            true
        }
        Err(e) => {
            let text = e.to_string();
            assert!(e.is_corruption(), "{context}: {text}");
            assert!(text.contains(&log_file_name(wal)), "{context}: {text}");
            false
        }
    }
}

fn stride() -> usize {
    std::env::var("SHALE_WAL_SYNCED_STRIDE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1)
}

#[test]
fn a_clean_close_leaves_every_wal_verified_and_opens_whole() {
    let (image, _) = closed_cleanly();
    let db = Db::open(DIR, options(&image)).unwrap();
    check_all(&db, "undamaged");
}

#[test]
fn every_truncation_of_every_synced_wal_is_refused() {
    let (image, wals) = closed_cleanly();
    for (number, bytes) in &wals {
        let header_only = bytes.len() <= 31;
        for len in (0..bytes.len()).step_by(stride()) {
            let fs = image.crash_image(CrashMode::DropUnsynced);
            fs.truncate_for_test(wal_path(*number), len as u64).unwrap();
            let context = format!("WAL {number} ({} bytes) cut to {len}", bytes.len());
            let opened = opens_whole_or_refuses(&fs, *number, &context);
            assert!(!opened || header_only, "{context}: opened without its data");
        }
    }
}

#[test]
fn a_flipped_bit_at_every_offset_of_every_wal_is_refused_or_harmless() {
    let (image, wals) = closed_cleanly();
    let mut refused = 0;
    for (number, bytes) in &wals {
        for offset in (0..bytes.len()).step_by(stride()) {
            let fs = image.crash_image(CrashMode::DropUnsynced);
            fs.corrupt_for_test(wal_path(*number), offset as u64, 0x10)
                .unwrap();
            let context = format!("WAL {number} ({} bytes) flipped at {offset}", bytes.len());
            if !opens_whole_or_refuses(&fs, *number, &context) {
                refused += 1;
            }
        }
    }
    assert!(refused > 0);
}

#[test]
fn the_refusal_names_the_wal_offset_and_synced_size_and_point_in_time_opens() {
    let (image, wals) = closed_cleanly();
    let (number, bytes) = wals.last().unwrap();
    let size = bytes.len() as u64;
    // Drop the last record whole: a cut at a record boundary, which reads as a clean end.
    let fs = image.crash_image(CrashMode::DropUnsynced);
    let cut = last_record_start(&fs, *number);
    fs.truncate_for_test(wal_path(*number), cut).unwrap();
    let text = Db::open(DIR, options(&fs)).unwrap_err().to_string();
    for needle in [
        log_file_name(*number),
        format!("offset {cut}"),
        format!("synced to {size} bytes"),
        "shale tool repair".to_owned(),
        "point-in-time".to_owned(),
    ] {
        assert!(text.contains(&needle), "{needle:?} missing: {text}");
    }
    // Refused opens change nothing: the same error again.
    assert_eq!(Db::open(DIR, options(&fs)).unwrap_err().to_string(), text);
    let mut point = options(&fs);
    point.wal_recovery_mode = RecoveryMode::PointInTime;
    let db = Db::open(DIR, point).unwrap();
    let report = db.recovery_report();
    let dropped = report.dropped[0];
    assert_eq!(dropped.reason, DropReason::SyncedDataMissing, "{report}");
    assert_eq!((dropped.wal_number, dropped.offset), (*number, Some(cut)));
    assert_eq!(dropped.bytes, size - cut);
    drop(db);
    // The point-in-time open recorded where the WAL now ends: later opens accept it.
    Db::open(DIR, options(&fs)).unwrap();
}

/// Where WAL `number`'s last record starts.
fn last_record_start(fs: &MemFs, number: u64) -> u64 {
    use shale_engine::inspect::wal::LogReader;
    let file = fs.open_read(&wal_path(number)).unwrap();
    let mut reader = LogReader::new(file, number, RecoveryMode::AbsoluteConsistency).unwrap();
    let mut last = 0;
    while let Some((_, offset)) = reader.read_record().unwrap() {
        last = offset;
    }
    last
}

#[test]
fn the_live_wal_is_verified_up_to_its_periodically_recorded_size_after_a_crash() {
    let fs = MemFs::new();
    let mut opts = options(&fs);
    opts.default_keyspace.write_buffer_size = 64 << 20;
    opts.wal_synced_record_interval = Duration::from_millis(20);
    opts.sync_interval = Duration::from_millis(10);
    let db = Db::open(DIR, opts).unwrap();
    for i in 0..10 {
        db.put(format!("key{i:03}").as_bytes(), &value(i)).unwrap();
    }
    // Long enough for the background to record the size (it records only growth).
    let live = *wal_files(&fs).last().unwrap();
    let mut recorded = false;
    for _ in 0..500 {
        std::thread::sleep(Duration::from_millis(10));
        let image = fs.crash_image(CrashMode::DropUnsynced);
        let manifest = shale_engine::inspect::live_manifest(&image, Path::new(DIR)).unwrap();
        let comparator: Arc<dyn shale_sst::Comparator> = Arc::new(shale_sst::BytewiseComparator);
        let state = shale_engine::inspect::read_manifest(
            &image,
            &manifest,
            &comparator,
            RecoveryMode::TolerateCorruptedTailRecords,
            &mut |_, _| {},
        )
        .unwrap();
        if state.version.wal_synced(live).is_some() {
            recorded = true;
            break;
        }
    }
    assert!(recorded, "the live WAL's synced size was never recorded");
    let image = fs.crash_image(CrashMode::DropUnsynced);
    drop(db);
    let cut = last_record_start(&image, live);
    image.truncate_for_test(wal_path(live), cut).unwrap();
    let error = Db::open(DIR, options(&image)).unwrap_err();
    assert!(
        error.is_corruption() && error.to_string().contains("synced"),
        "{error}"
    );
}
