//! A MANIFEST that lost its newest records at a record boundary looks like a clean file: replay
//! has nothing to reject. When the lost edits were flushes whose WALs were deleted afterwards,
//! opening the older state would lose acknowledged writes without a word. With `WALS_TRACKED`
//! (docs/format/manifest.md) the open notices that a keyspace's log-number WAL is missing and
//! refuses, naming the MANIFEST; repair then brings everything back. These tests cut a
//! database's MANIFEST at every record boundary and check that each cut either opens with every
//! acknowledged write or is refused that way, never opens an older state silently; and that an
//! idle keyspace does not pin WALs now that WALs go only below the MANIFEST's log numbers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_engine::inspect::read_manifest;
use shale_engine::inspect::wal::RecoveryMode;
use shale_engine::{repair_db, Db, Durability, KeyspaceOptions, Options};
use shale_fs::{CrashMode, FileSystem, MemFs};
use shale_sst::{BytewiseComparator, Comparator};

const DIR: &str = "/db";
const ROUNDS: usize = 4;
const KEYS_PER_ROUND: usize = 50;

fn options(fs: &MemFs, mode: RecoveryMode) -> Options {
    Options {
        durability: Durability::Sync,
        wal_recovery_mode: mode,
        file_system: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn key(round: usize, i: usize) -> Vec<u8> {
    format!("r{round}-k{i:03}").into_bytes()
}

fn wal_count(fs: &MemFs) -> usize {
    fs.list(Path::new(DIR))
        .unwrap()
        .iter()
        .filter(|n| shale_engine::inspect::wal::format::parse_log_file_name(n).is_some())
        .count()
}

/// A database with an idle keyspace and `ROUNDS` flushes of the default one, closed; the path
/// of its MANIFEST and the offset of every record in it.
fn flushed_database() -> (MemFs, PathBuf, Vec<u64>) {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(&fs, RecoveryMode::default())).unwrap();
    let idle = db
        .create_keyspace("idle", KeyspaceOptions::default())
        .unwrap();
    idle.put(b"idle-key", b"idle-value").unwrap();
    db.flush().unwrap();
    let default = db.keyspace("default").unwrap();
    for round in 0..ROUNDS {
        for i in 0..KEYS_PER_ROUND {
            default.put(&key(round, i), &key(round, i)).unwrap();
        }
        db.flush().unwrap();
        // Only the WAL being written is left: the idle keyspace pins none.
        assert_eq!(wal_count(&fs), 1, "WALs after flush {round}");
    }
    db.close().unwrap();
    let image = fs.crash_image(CrashMode::DropUnsynced);
    let current = image.file_contents(Path::new(DIR).join("CURRENT")).unwrap();
    let name = String::from_utf8(current).unwrap();
    let manifest = Path::new(DIR).join(name.split_whitespace().next().unwrap());
    let comparator: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
    let mut offsets = Vec::new();
    read_manifest(
        &image,
        &manifest,
        &comparator,
        RecoveryMode::AbsoluteConsistency,
        &mut |offset, _| offsets.push(offset),
    )
    .unwrap();
    (image, manifest, offsets)
}

/// Whether `db` reads every acknowledged write.
fn holds_everything(db: &Db) -> bool {
    let default = db.keyspace("default").unwrap();
    let idle = db.keyspace("idle").unwrap();
    idle.get(b"idle-key").unwrap().as_deref() == Some(&b"idle-value"[..])
        && (0..ROUNDS).all(|round| {
            (0..KEYS_PER_ROUND).all(|i| default.get(&key(round, i)).unwrap() == Some(key(round, i)))
        })
}

#[test]
fn a_manifest_cut_at_a_record_boundary_is_refused_or_opens_with_every_write() {
    let (image, manifest, offsets) = flushed_database();
    let mut refused = 0;
    // Record 0 is the snapshot; every later record start is a boundary a cut may hit.
    for &cut in &offsets[1..] {
        let context = format!("{} cut to {cut} bytes", manifest.display());
        let fs = image.crash_image(CrashMode::DropUnsynced);
        fs.truncate_for_test(&manifest, cut).unwrap();
        match Db::open(DIR, options(&fs, RecoveryMode::default())) {
            Ok(db) => assert!(holds_everything(&db), "{context}: opened an older state"),
            Err(error) => {
                refused += 1;
                let text = error.to_string();
                assert!(error.is_corruption(), "{context}: {text}");
                assert!(
                    text.contains(&manifest.display().to_string())
                        && text.contains(&format!("offset {cut}"))
                        && text.contains("which is missing"),
                    "{context}: the error does not name the MANIFEST, where it ends and the \
                     missing WAL: {text}"
                );
                // Refusing wrote nothing: the same open fails the same way again.
                let again = Db::open(DIR, options(&fs, RecoveryMode::default())).unwrap_err();
                assert_eq!(again.to_string(), text, "{context}: second open");
                // Salvage opens the older state as it is...
                Db::open(DIR, options(&fs, RecoveryMode::SkipAnyCorruptedRecords))
                    .unwrap_or_else(|e| panic!("{context}: SkipAnyCorruptedRecords: {e}"))
                    .close()
                    .unwrap();
                // ...and repair finds the tables the lost edits named.
                let fs = image.crash_image(CrashMode::DropUnsynced);
                fs.truncate_for_test(&manifest, cut).unwrap();
                repair_db(Path::new(DIR), &options(&fs, RecoveryMode::default()))
                    .unwrap_or_else(|e| panic!("{context}: repair: {e}"));
                let db = Db::open(DIR, options(&fs, RecoveryMode::default()))
                    .unwrap_or_else(|e| panic!("{context}: open after repair: {e}"));
                assert!(holds_everything(&db), "{context}: repair lost writes");
            }
        }
    }
    // At least every flush after the first deleted a WAL the cut MANIFEST still needs.
    assert!(
        refused >= ROUNDS - 1,
        "only {refused} of {} cuts refused",
        offsets.len() - 1
    );
}

#[test]
fn a_deleted_log_number_wal_is_refused_even_with_no_newer_wal() {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(&fs, RecoveryMode::default())).unwrap();
    let default = db.keyspace("default").unwrap();
    default.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    default.put(b"k2", b"only in the WAL").unwrap();
    db.close().unwrap();
    let wals: Vec<String> = fs
        .list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| shale_engine::inspect::wal::format::parse_log_file_name(n).is_some())
        .collect();
    for wal in &wals {
        fs.remove(&Path::new(DIR).join(wal)).unwrap();
    }
    let error = Db::open(DIR, options(&fs, RecoveryMode::default())).unwrap_err();
    assert!(
        error.is_corruption() && error.to_string().contains("no newer WAL exists"),
        "{error}"
    );
    let view = Db::open_read_only(DIR, options(&fs, RecoveryMode::default())).unwrap_err();
    assert!(view.is_corruption(), "{view}");
}
