//! Opening without a flush: the replayed WALs stay in the middle of the WAL sequence until
//! the background flushes their memtables, so the end of valid data the open found in each is
//! recorded in the MANIFEST (docs/format/wal.md, "Recorded ends"). These tests crash between
//! such an open and the flush, with newer acknowledged writes in a newer WAL, and reopen:
//!
//! - a torn tail the first open tolerated is not corruption at the second open, and is not
//!   read again;
//! - a `PointInTime` stop in an old WAL does not make the second open drop the newer WAL's
//!   acknowledged writes, nor bring back what the first open dropped.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::batch_in_version_2_encoding;
use common::gate::latched_fs;
use shale_engine::inspect::wal::format::FORMAT_VERSION;
use shale_engine::inspect::wal::{LogReader, LogWriter, RecoveryMode};
use shale_engine::{Db, Durability, Options, WriteBatch, WriteOptions};
use shale_fs::{CrashMode, FileSystem, MemFs, Op};

const DIR: &str = "/db";

fn options(fs: Arc<dyn FileSystem>, mode: RecoveryMode) -> Options {
    let mut options = Options {
        durability: Durability::Sync,
        wal_recovery_mode: mode,
        file_system: fs,
        ..Options::default()
    };
    // Nothing fills a memtable: the only flushes are of what recovery replayed.
    options.default_keyspace.write_buffer_size = 64 << 20;
    options
}

fn key(prefix: &str, i: usize) -> Vec<u8> {
    format!("{prefix}{i:03}").into_bytes()
}

fn value(prefix: &str, i: usize) -> Vec<u8> {
    format!("{prefix}{i:03}-{}", "v".repeat(300)).into_bytes()
}

fn put_all(db: &Db, prefix: &str, count: usize) {
    for i in 0..count {
        db.put(&key(prefix, i), &value(prefix, i)).unwrap();
    }
}

fn assert_all(db: &Db, prefix: &str, count: usize, context: &str) {
    for i in 0..count {
        assert_eq!(
            db.get(&key(prefix, i)).unwrap(),
            Some(value(prefix, i)),
            "{context}: {prefix}{i:03}"
        );
    }
}

fn files(fs: &MemFs, suffix: &str) -> Vec<String> {
    let mut names: Vec<String> = fs
        .list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(suffix))
        .collect();
    names.sort();
    names
}

/// A crash image of a database whose only WAL holds `a000..a019`, then damage made by
/// `damage` (given the WAL's path), and the WAL's name.
fn damaged_database(damage: impl FnOnce(&MemFs, &Path)) -> (MemFs, String) {
    let fs = MemFs::new();
    let db = Db::open(
        DIR,
        options(
            Arc::new(fs.clone()),
            RecoveryMode::TolerateCorruptedTailRecords,
        ),
    )
    .unwrap();
    put_all(&db, "a", 20);
    db.put(b"tail", &value("tail", 0)).unwrap();
    let image = fs.crash_image(CrashMode::DropUnsynced);
    drop(db);
    let wals = files(&image, ".wal");
    assert_eq!(wals.len(), 1, "{wals:?}");
    assert!(files(&image, ".sst").is_empty());
    let wal = Path::new(DIR).join(&wals[0]);
    damage(&image, &wal);
    (image, wals[0].clone())
}

/// Opens `image` with the flush held back, checks it with `check_first`, writes `b000..b019`
/// (acknowledged, synced, in a new WAL), and returns the crash image taken before any flush.
fn open_write_and_crash(image: &MemFs, mode: RecoveryMode, check_first: impl Fn(&Db)) -> MemFs {
    // Table creations wait at the latch: holds the background flush back so a crash image
    // can be taken before it.
    let (gated, latch) = latched_fs(image.clone(), |call| {
        call.op == Op::Create && call.has_extension("sst")
    });
    let db = Db::open(DIR, options(Arc::new(gated), mode)).unwrap();
    check_first(&db);
    put_all(&db, "b", 20);
    db.write(shale_engine::WriteBatch::new(), &WriteOptions::sync())
        .unwrap();
    let crashed = image.crash_image(CrashMode::DropUnsynced);
    latch.open();
    drop(db);
    assert!(
        files(&crashed, ".sst").is_empty(),
        "the crash came before the flush"
    );
    assert!(files(&crashed, ".wal").len() >= 2, "a newer WAL follows");
    crashed
}

#[test]
fn a_tolerated_torn_tail_stays_dropped_after_a_crash_before_the_flush() {
    let (image, wal) = damaged_database(|fs, wal| {
        // The last record (the `tail` put) loses its last bytes: a torn write.
        let len = fs.size(wal).unwrap();
        fs.truncate_for_test(wal, len - 5).unwrap();
    });
    let mode = RecoveryMode::TolerateCorruptedTailRecords;
    let crashed = open_write_and_crash(&image, mode, |db| {
        assert_all(db, "a", 20, "first open");
        assert_eq!(db.get(b"tail").unwrap(), None);
    });
    assert!(
        files(&crashed, ".wal").contains(&wal),
        "{wal} is still needed"
    );
    for mode in [
        RecoveryMode::TolerateCorruptedTailRecords,
        RecoveryMode::AbsoluteConsistency,
        RecoveryMode::PointInTime,
        RecoveryMode::SkipAnyCorruptedRecords,
    ] {
        let copy = crashed.crash_image(CrashMode::DropUnsynced);
        let db = Db::open(DIR, options(Arc::new(copy.clone()), mode))
            .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        assert_all(&db, "a", 20, "second open");
        assert_all(&db, "b", 20, "second open");
        assert_eq!(db.get(b"tail").unwrap(), None, "{mode:?}: tail resurrected");
        // Once the replayed data is flushed, the old WALs go.
        db.flush().unwrap();
        db.close().unwrap();
        assert!(!files(&copy, ".wal").contains(&wal), "{mode:?}");
        let db = Db::open(DIR, options(Arc::new(copy), mode)).unwrap();
        assert_all(&db, "a", 20, "third open");
        assert_all(&db, "b", 20, "third open");
        assert_eq!(db.get(b"tail").unwrap(), None);
    }
}

#[test]
fn a_point_in_time_stop_neither_drops_newer_writes_nor_comes_back() {
    let (image, _) = damaged_database(|fs, wal| {
        // Corrupt a byte in the middle of the log: valid records follow the damage.
        let len = fs.size(wal).unwrap();
        fs.corrupt_for_test(wal, len / 2, 0x55).unwrap();
    });
    // The number of `a` puts before the damage.
    let survivors = std::cell::Cell::new(0);
    let crashed = open_write_and_crash(&image, RecoveryMode::PointInTime, |db| {
        let present = (0..20)
            .take_while(|i| db.get(&key("a", *i)).unwrap().is_some())
            .count();
        assert!((1..19).contains(&present), "{present}");
        for i in present..20 {
            assert_eq!(db.get(&key("a", i)).unwrap(), None, "a prefix of history");
        }
        assert_eq!(db.get(b"tail").unwrap(), None);
        survivors.set(present);
    });
    for mode in [
        RecoveryMode::PointInTime,
        RecoveryMode::SkipAnyCorruptedRecords,
    ] {
        let copy = crashed.crash_image(CrashMode::DropUnsynced);
        let db = Db::open(DIR, options(Arc::new(copy), mode)).unwrap();
        assert_all(&db, "a", survivors.get(), "second open");
        for i in survivors.get()..20 {
            assert_eq!(db.get(&key("a", i)).unwrap(), None, "{mode:?}: resurrected");
        }
        assert_eq!(db.get(b"tail").unwrap(), None);
        assert_all(
            &db,
            "b",
            20,
            "second open: acknowledged after the first open",
        );
    }
    // The recorded end of the damaged WAL ends before the damage, so even the strict modes
    // read it cleanly.
    let copy = crashed.crash_image(CrashMode::DropUnsynced);
    let db = Db::open(
        DIR,
        options(Arc::new(copy), RecoveryMode::TolerateCorruptedTailRecords),
    )
    .unwrap();
    assert_all(&db, "b", 20, "tolerate");
}

#[test]
fn damage_before_a_recorded_end_is_not_a_torn_tail() {
    let (image, wal) = damaged_database(|_, _| {});
    let crashed = open_write_and_crash(&image, RecoveryMode::TolerateCorruptedTailRecords, |db| {
        assert_all(db, "a", 20, "first open");
    });
    // The old WAL, already replayed once and recorded, loses its end.
    let path = Path::new(DIR).join(&wal);
    let len = crashed.size(&path).unwrap();
    crashed.truncate_for_test(&path, len - 5).unwrap();
    let error = Db::open(
        DIR,
        options(
            Arc::new(crashed.clone()),
            RecoveryMode::TolerateCorruptedTailRecords,
        ),
    )
    .unwrap_err();
    let text = error.to_string();
    assert!(error.is_corruption() && text.contains("recorded"), "{text}");
    // PointInTime recovers the prefix before the damage, and nothing after it.
    let db = Db::open(DIR, options(Arc::new(crashed), RecoveryMode::PointInTime)).unwrap();
    assert_all(&db, "a", 19, "point in time");
    assert_eq!(db.get(b"tail").unwrap(), None);
    assert_eq!(db.get(&key("b", 0)).unwrap(), None);
}

/// Rewrites the log-format file `name` of `fs` (a WAL or a MANIFEST, numbered `number`) in WAL
/// format `version` (1, 2 or 3), record for record, as Shale wrote them before the next
/// version: a WAL's batches in the encoding of that version (versions 1 and 2 spell out the
/// default keyspace; versions 1 to 3 have the fixed 12-byte batch header).
fn rewrite_as_version(fs: &MemFs, name: &str, number: u64, version: u32) {
    let path = Path::new(DIR).join(name);
    let file = fs.open_read(&path).unwrap();
    let mut reader = LogReader::new(file, number, RecoveryMode::AbsoluteConsistency).unwrap();
    let scratch = Path::new("/scratch").join(name);
    fs.create_dir_all(scratch.parent().unwrap()).unwrap();
    let mut writer =
        LogWriter::with_format_version(fs.create(&scratch).unwrap(), number, version).unwrap();
    let is_wal = std::path::Path::new(name)
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("wal"));
    let mut records = 0;
    while let Some((record, offset)) = reader.read_record().unwrap() {
        let record = if is_wal {
            let version_read = reader.format_version();
            assert_eq!(version_read, Some(FORMAT_VERSION));
            let batch = WriteBatch::from_wal_record(record, version_read, &path, offset).unwrap();
            match version {
                1 | 2 => batch_in_version_2_encoding(&batch),
                _ => batch.to_wal_record(version).unwrap(),
            }
        } else {
            record
        };
        writer.add_record(&record).unwrap();
        records += 1;
    }
    writer.sync().unwrap();
    assert!(records > 0, "{name} holds no records");
    let bytes = fs.file_contents(&scratch).unwrap();
    assert_eq!(
        bytes[19], version as u8,
        "{name} is now format version {version}"
    );
    if is_wal || version == 1 {
        assert!(
            bytes.len() as u64 > fs.size(&path).unwrap(),
            "version {version} is larger"
        );
    }
    plant_file(fs, &path, &bytes);
}

fn plant_file(fs: &MemFs, path: &Path, bytes: &[u8]) {
    fs.write_file_for_test(path, bytes).unwrap();
}

#[test]
fn a_database_whose_logs_were_written_in_wal_format_version_1_opens_after_the_upgrade() {
    logs_of_an_older_version_replay(1);
}

#[test]
fn a_database_whose_logs_were_written_in_wal_format_version_2_opens_after_the_upgrade() {
    logs_of_an_older_version_replay(2);
}

#[test]
fn a_database_whose_logs_were_written_in_wal_format_version_3_opens_after_the_upgrade() {
    logs_of_an_older_version_replay(3);
}

/// A version 4 WAL whose file header is damaged: the version is unknown, and skip mode replays
/// its records anyway (each payload decodes under exactly one of the batch headers).
#[test]
fn skip_mode_replays_a_log_whose_file_header_named_version_4_and_is_damaged() {
    let mode = RecoveryMode::SkipAnyCorruptedRecords;
    let (image, wal) = fifty_puts_in_one_log(mode);
    let path = Path::new(DIR).join(&wal);
    let mut bytes = image.file_contents(&path).unwrap();
    assert_eq!(bytes[19], 4, "format version 4");
    bytes[15] ^= 1; // inside the magic: the file header's checksum fails
    plant_file(&image, &path, &bytes);
    let db = Db::open(DIR, options(Arc::new(image.clone()), mode)).unwrap();
    assert_all(&db, "a", 50, "replayed past a damaged file header");
}

/// A crash image of a database that took 50 puts (`a` prefix), all in its one log, and
/// that log's name.
fn fifty_puts_in_one_log(mode: RecoveryMode) -> (MemFs, String) {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(Arc::new(fs.clone()), mode)).unwrap();
    put_all(&db, "a", 50);
    let image = fs.crash_image(CrashMode::DropUnsynced);
    drop(db);
    let mut wals = files(&image, ".wal");
    assert_eq!(wals.len(), 1, "{wals:?}");
    let wal = wals.remove(0);
    (image, wal)
}

fn logs_of_an_older_version_replay(version: u32) {
    let mode = RecoveryMode::AbsoluteConsistency;
    let (image, wal) = fifty_puts_in_one_log(mode);
    let number = shale_engine::inspect::wal::format::parse_log_file_name(&wal).unwrap();
    rewrite_as_version(&image, &wal, number, version);
    let manifests: Vec<String> = image
        .list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("MANIFEST-"))
        .collect();
    assert_eq!(manifests.len(), 1, "{manifests:?}");
    let number = manifests[0]["MANIFEST-".len()..].parse().unwrap();
    rewrite_as_version(&image, &manifests[0], number, version);

    let db = Db::open(DIR, options(Arc::new(image.clone()), mode)).unwrap();
    assert_all(
        &db,
        "a",
        50,
        &format!("replayed from version {version} logs"),
    );
    put_all(&db, "b", 10);
    assert_all(&db, "b", 10, "written after the upgrade");
}
