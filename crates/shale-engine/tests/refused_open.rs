//! An open refused for damage changes nothing on disk (recovery.rs invariant 6): the MANIFEST
//! is not rewritten, its history is kept, and the advice in the error (another recovery
//! mode) still finds every file as it was.

mod fixture_db;

use std::path::Path;

use fixture_db::{build, copy, files, options, read_all, DIR};
use shale_engine::inspect::wal::RecoveryMode;
use shale_engine::Db;
use shale_fs::MemFs;

/// Every file's name, size and checksum.
fn snapshot(fs: &MemFs) -> Vec<(String, usize, u32)> {
    files(fs)
        .into_iter()
        .map(|n| {
            let bytes = fs.file_contents(Path::new(DIR).join(&n)).unwrap();
            (n, bytes.len(), crc32c::crc32c(&bytes))
        })
        .collect()
}

#[test]
fn an_open_refused_for_mid_wal_damage_leaves_every_file_as_it_was() {
    let (image, history) = build();
    let fs = copy(&image);
    let wal = files(&fs)
        .into_iter()
        .rfind(|n| shale_engine::inspect::wal::format::parse_log_file_name(n).is_some())
        .unwrap();
    let path = Path::new(DIR).join(&wal);
    let size = fs.file_contents(&path).unwrap().len() as u64;
    fs.corrupt_for_test(&path, size / 3, 0x20).unwrap();
    let before = snapshot(&fs);
    for mode in [
        RecoveryMode::TolerateCorruptedTailRecords,
        RecoveryMode::AbsoluteConsistency,
    ] {
        let mut refused = options(&fs);
        refused.wal_recovery_mode = mode;
        let error = Db::open(DIR, refused).unwrap_err();
        assert!(error.to_string().contains(&wal), "{mode:?}: {error}");
        assert_eq!(
            snapshot(&fs),
            before,
            "{mode:?}: the refused open changed files"
        );
    }
    // The advice works on the untouched directory.
    let mut point_in_time = options(&fs);
    point_in_time.wal_recovery_mode = RecoveryMode::PointInTime;
    let db = Db::open(DIR, point_in_time).unwrap();
    let seen = read_all(&db, &history).unwrap();
    for ((keyspace, key), got) in &seen {
        assert!(history.ever(keyspace, key, got.as_deref()));
    }
    db.close().unwrap();
}
