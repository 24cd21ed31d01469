//! Repair is crash-safe and idempotent (docs/reliability.md "What repair guarantees"): a
//! repair cut at any sync point (a `MemFs` crash image) or failed by a full disk at any write
//! (`FaultFs`), then run again, ends with every write an uninterrupted repair saves, and a
//! report that counts the same bytes lost.

mod fixture_db;

use std::path::Path;
use std::sync::{Arc, Mutex};

use fixture_db::{build, copy, files, options, read_all, History, Seen, DIR};
use shale_engine::inspect::wal::RecoveryMode;
use shale_engine::inspect::{live_manifest, read_manifest, table_file_name};
use shale_engine::{repair_db, Db, Options};
use shale_fs::{CrashMode, FaultError, FaultFs, FaultRule, FaultTrigger, MemFs, OpKind};
use shale_sst::{BytewiseComparator, Comparator};

/// What is damaged besides a table and a WAL tail.
#[derive(Debug, Clone, Copy)]
enum Also {
    Nothing,
    /// `CURRENT`: repair falls back to the newest MANIFEST.
    Current,
    /// The MANIFEST: every table goes to L0, WAL tables too.
    Manifest,
}

/// The fixture with a damaged default-keyspace L0 table and a WAL whose tail is torn, and
/// `also`.
fn damaged(also: Also) -> (MemFs, History) {
    let (image, history) = build();
    let fs = copy(&image);
    let manifest = live_manifest(&fs, Path::new(DIR)).unwrap();
    let comparator: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
    let state = read_manifest(
        &fs,
        &manifest,
        &comparator,
        RecoveryMode::AbsoluteConsistency,
        &mut |_, _| {},
    )
    .unwrap();
    let table = table_file_name(Path::new(DIR), state.version.files(0, 0)[0].number);
    let size = fs.file_contents(&table).unwrap().len() as u64;
    fs.corrupt_for_test(&table, size / 3, 0x01).unwrap();
    let wal = files(&fs)
        .into_iter()
        .rfind(|n| shale_engine::inspect::wal::format::parse_log_file_name(n).is_some())
        .unwrap();
    let wal = Path::new(DIR).join(wal);
    let size = fs.file_contents(&wal).unwrap().len() as u64;
    fs.truncate_for_test(&wal, size - size / 4).unwrap();
    match also {
        Also::Nothing => {}
        Also::Current => fs
            .corrupt_for_test(Path::new(DIR).join("CURRENT"), 2, 0x04)
            .unwrap(),
        Also::Manifest => fs.corrupt_for_test(&manifest, 30, 0x10).unwrap(),
    }
    (fs, history)
}

fn data(fs: &MemFs, history: &History) -> Seen {
    let db = Db::open(DIR, options(fs)).unwrap();
    let seen = read_all(&db, history).unwrap();
    db.close().unwrap();
    seen
}

/// What an uninterrupted repair of the damaged fixture keeps, and the bytes it reports lost.
fn reference(also: Also) -> (MemFs, History, Seen, u64) {
    let (fs, history) = damaged(also);
    let clean = copy(&fs);
    let report = repair_db(Path::new(DIR), &options(&clean)).unwrap();
    assert!(report.bytes_lost() > 0, "{report:?}");
    let seen = data(&clean, &history);
    (fs, history, seen, report.bytes_lost())
}

fn assert_rerun_matches(
    fs: &MemFs,
    history: &History,
    seen: &Seen,
    bytes_lost: u64,
    context: &str,
) {
    let report = repair_db(Path::new(DIR), &options(fs))
        .unwrap_or_else(|e| panic!("{context}: the rerun failed: {e}"));
    assert_eq!(
        report.bytes_lost(),
        bytes_lost,
        "{context}: the rerun counts different losses: {:?}",
        report.lost
    );
    assert!(
        data(fs, history) == *seen,
        "{context}: the rerun lost writes"
    );
    // A third run changes nothing more.
    let again = repair_db(Path::new(DIR), &options(fs)).unwrap();
    assert_eq!(again.bytes_lost(), bytes_lost, "{context}: third run");
}

#[test]
fn a_repair_cut_at_any_sync_point_then_rerun_saves_everything_and_counts_the_same_loss() {
    cut_at_every_sync_point(Also::Nothing);
}

#[test]
fn a_repair_with_a_damaged_current_cut_at_any_sync_point_then_rerun_saves_everything() {
    cut_at_every_sync_point(Also::Current);
}

#[test]
fn a_repair_without_a_manifest_cut_at_any_sync_point_then_rerun_saves_everything() {
    cut_at_every_sync_point(Also::Manifest);
}

fn cut_at_every_sync_point(also: Also) {
    let (damaged, history, seen, bytes_lost) = reference(also);
    let fs = copy(&damaged);
    let images: Arc<Mutex<Vec<(MemFs, MemFs)>>> = Arc::default();
    let (hook_fs, hook_images) = (fs.clone(), images.clone());
    fs.set_sync_hook(Some(Arc::new(move |_| {
        let dropped = hook_fs.crash_image(CrashMode::DropUnsynced);
        let torn = hook_fs.crash_image(CrashMode::Torn {
            seed: hook_fs.sync_point_count(),
        });
        hook_images.lock().unwrap().push((dropped, torn));
    })));
    repair_db(Path::new(DIR), &options(&fs)).unwrap();
    fs.set_sync_hook(None);
    let images = std::mem::take(&mut *images.lock().unwrap());
    assert!(images.len() > 5, "{} sync points", images.len());
    for (point, (dropped, torn)) in images.iter().enumerate() {
        let context = format!("sync point {} (also damaged: {also:?})", point + 1);
        assert_rerun_matches(dropped, &history, &seen, bytes_lost, &context);
        assert_rerun_matches(
            torn,
            &history,
            &seen,
            bytes_lost,
            &format!("{context} torn"),
        );
    }
}

#[test]
fn a_repair_failed_by_a_full_disk_at_any_write_then_rerun_saves_everything() {
    for also in [Also::Nothing, Also::Current, Also::Manifest] {
        full_disk_at_every_write(also);
    }
}

fn full_disk_at_every_write(also: Also) {
    let (damaged, history, seen, bytes_lost) = reference(also);
    for op in [
        OpKind::Create,
        OpKind::Append,
        OpKind::SyncData,
        OpKind::Rename,
        OpKind::SyncDir,
    ] {
        for nth in 1.. {
            let fs = copy(&damaged);
            let faulty = FaultFs::new(Arc::new(fs.clone()));
            faulty.add_rule(FaultRule::new(
                op,
                FaultTrigger::EveryFrom(nth),
                FaultError::NoSpace,
            ));
            let options = Options {
                file_system: Arc::new(faulty.clone()),
                ..options(&fs)
            };
            let first = repair_db(Path::new(DIR), &options);
            if faulty.injected_count() == 0 {
                first.unwrap();
                break;
            }
            assert!(
                first.is_err(),
                "{op:?} #{nth}: the repair ignored a full disk"
            );
            assert_rerun_matches(
                &fs,
                &history,
                &seen,
                bytes_lost,
                &format!("ENOSPC at {op:?} #{nth} (also damaged: {also:?})"),
            );
        }
    }
}
