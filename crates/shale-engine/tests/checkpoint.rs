//! Checkpoints (`Db::checkpoint`): taken while writers commit batches across two keyspaces,
//! each one opens and equals a snapshot of the source at the checkpoint's cut; a checkpoint of
//! a database whose WAL tail was torn (and tolerated at its open) opens under every recovery
//! mode without bringing the torn write back.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use common::gate::latched_fs;
use shale_engine::inspect::wal::RecoveryMode;
use shale_engine::{
    Db, Durability, Keyspace, KeyspaceOptions, Options, ReadOptions, Snapshot, WriteBatch,
};
use shale_fs::{CrashMode, FileSystem, MemFs, Op};

fn options(fs: Arc<dyn FileSystem>) -> Options {
    let mut options = Options {
        durability: Durability::Buffered,
        file_system: fs,
        ..Options::default()
    };
    // Small memtables: flushes and compactions run while checkpoints are taken.
    options.default_keyspace.write_buffer_size = 32 << 10;
    options
}

fn contents(keyspace: &Keyspace, snapshot: Option<&Snapshot>) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut iter = keyspace
        .iterator(ReadOptions {
            snapshot: snapshot.cloned(),
            ..ReadOptions::default()
        })
        .unwrap();
    iter.seek_to_first();
    let mut out = BTreeMap::new();
    while iter.valid() {
        out.insert(iter.key().to_vec(), iter.value().to_vec());
        iter.next();
    }
    iter.status().unwrap();
    out
}

#[test]
fn checkpoints_under_concurrent_writers_equal_a_snapshot_at_the_cut() {
    let fs = MemFs::new();
    let db = Arc::new(Db::open("/db", options(Arc::new(fs.clone()))).unwrap());
    let users = db
        .create_keyspace("users", KeyspaceOptions::default())
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|thread| {
            let (db, users, stop) = (db.clone(), users.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    // Each batch writes the same value under one key in both keyspaces, and
                    // deletes an older key in both: a cut inside a batch would show.
                    let key = format!("t{thread}-{:04}", i % 500);
                    let value = format!("{i}-{}", "x".repeat(100));
                    let mut batch = WriteBatch::new();
                    batch
                        .put(db.default_keyspace().id(), key.as_bytes(), value.as_bytes())
                        .unwrap();
                    batch
                        .put(users.id(), key.as_bytes(), value.as_bytes())
                        .unwrap();
                    let old = format!("t{thread}-{:04}", (i + 250) % 500);
                    batch
                        .delete(db.default_keyspace().id(), old.as_bytes())
                        .unwrap();
                    batch.delete(users.id(), old.as_bytes()).unwrap();
                    db.write(batch, &shale_engine::WriteOptions::default())
                        .unwrap();
                    i += 1;
                }
            })
        })
        .collect();
    for round in 0..6 {
        std::thread::sleep(std::time::Duration::from_millis(30));
        let dir = format!("/checkpoint-{round}");
        let info = db.checkpoint(&dir).unwrap();
        assert_eq!(info.snapshot.seqno(), info.seqno);
        assert!(info.seqno > 0, "writers ran before the checkpoint");
        let expected_default = contents(&db.default_keyspace(), Some(&info.snapshot));
        let expected_users = contents(&users, Some(&info.snapshot));
        assert_eq!(
            expected_default.len(),
            expected_users.len(),
            "round {round}: the source snapshot itself is atomic"
        );
        let copy = Db::open(&dir, options(Arc::new(fs.clone()))).unwrap();
        assert_eq!(
            contents(&copy.default_keyspace(), None),
            expected_default,
            "round {round}: default keyspace"
        );
        let copy_users = copy.keyspace("users").expect("users keyspace");
        assert_eq!(
            contents(&copy_users, None),
            expected_users,
            "round {round}: users keyspace"
        );
        assert_eq!(copy.latest_seqno(), info.seqno, "round {round}");
        copy.close().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.join().unwrap();
    }
    // The checkpoints did not disturb the source.
    drop(users);
    Arc::try_unwrap(db).unwrap().close().unwrap();
    Db::open("/db", options(Arc::new(fs)))
        .unwrap()
        .close()
        .unwrap();
}

/// Regression: a write leader released the WAL lock before it stored the group's sequence
/// numbers, so a cut taken in between copied the group's WAL record but cut below it, and the
/// checkpoint opened with a write its snapshot did not show. The hook holds a group right
/// after its WAL step while the checkpoint is taken.
#[test]
fn a_checkpoint_cut_right_after_a_wal_record_holds_exactly_its_seqno() {
    let fs = MemFs::new();
    let db = Arc::new(Db::open("/db", options(Arc::new(fs.clone()))).unwrap());
    db.put(b"before", b"1").unwrap();
    let before_seqno = db.latest_seqno();
    // (armed, held): the next group after arming is held until the test releases it.
    let gate = Arc::new((Mutex::new((false, false)), Condvar::new()));
    let hook_gate = gate.clone();
    assert!(db.set_after_wal_record_hook(move || {
        let (lock, changed) = &*hook_gate;
        let mut gate = lock.lock().unwrap();
        if gate.0 {
            *gate = (false, true);
            changed.notify_all();
            while gate.1 {
                gate = changed.wait(gate).unwrap();
            }
        }
    }));
    gate.0.lock().unwrap().0 = true;
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || db.put(b"held", b"2").unwrap())
    };
    {
        let (lock, changed) = &*gate;
        let mut held = lock.lock().unwrap();
        while !held.1 {
            held = changed.wait(held).unwrap();
        }
    }
    // The group's record is in the WAL; take the checkpoint while the group is held. It
    // returns only once the group is published, so it runs on its own thread.
    let checkpoint = {
        let db = db.clone();
        std::thread::spawn(move || db.checkpoint("/cp").unwrap())
    };
    let current = Path::new("/cp").join("CURRENT");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !fs.exists(&current).unwrap() && !checkpoint.is_finished() {
        assert!(
            std::time::Instant::now() < deadline,
            "the checkpoint wrote no CURRENT"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    {
        let (lock, changed) = &*gate;
        lock.lock().unwrap().1 = false;
        changed.notify_all();
    }
    writer.join().unwrap();
    let info = checkpoint.join().unwrap();
    assert_eq!(
        info.seqno,
        before_seqno + 1,
        "the cut is above the record in its WAL"
    );
    let expected = contents(&db.default_keyspace(), Some(&info.snapshot));
    let copy = Db::open("/cp", options(Arc::new(fs.clone()))).unwrap();
    assert_eq!(copy.latest_seqno(), info.seqno);
    assert_eq!(contents(&copy.default_keyspace(), None), expected);
    assert_eq!(copy.get(b"held").unwrap().as_deref(), Some(&b"2"[..]));
    copy.close().unwrap();
    drop(info);
    Arc::try_unwrap(db).unwrap().close().unwrap();
}

#[test]
fn a_checkpoint_refuses_a_non_empty_directory_and_holds_tables() {
    let fs = MemFs::new();
    let db = Db::open("/db", options(Arc::new(fs.clone()))).unwrap();
    for i in 0..2000u32 {
        db.put(format!("k{i:05}").as_bytes(), &[7u8; 64]).unwrap();
    }
    db.flush().unwrap();
    db.put(b"after-flush", b"in the WAL").unwrap();
    fs.create_dir_all(Path::new("/busy")).unwrap();
    fs.create(Path::new("/busy/file")).unwrap();
    let err = db.checkpoint("/busy").unwrap_err().to_string();
    assert!(err.contains("/busy") && err.contains("not empty"), "{err}");
    let info = db.checkpoint("/cp").unwrap();
    assert!(info.tables_linked > 0, "{info:?}");
    assert_eq!(info.tables_copied, 0);
    assert!(info.files.iter().any(|(n, _)| n == "CURRENT"), "{info:?}");
    db.close().unwrap();
    let copy = Db::open("/cp", options(Arc::new(fs))).unwrap();
    assert_eq!(copy.get(b"k01999").unwrap(), Some(vec![7u8; 64]));
    assert_eq!(
        copy.get(b"after-flush").unwrap(),
        Some(b"in the WAL".to_vec())
    );
}

#[test]
fn a_checkpoint_of_a_tolerated_torn_tail_never_brings_it_back() {
    let fs = MemFs::new();
    let mut sync_options = options(Arc::new(fs.clone()));
    sync_options.durability = Durability::Sync;
    sync_options.default_keyspace.write_buffer_size = 64 << 20;
    let db = Db::open("/db", sync_options.clone()).unwrap();
    for i in 0..20 {
        db.put(format!("a{i:03}").as_bytes(), b"value").unwrap();
    }
    db.put(b"tail", &[1u8; 300]).unwrap();
    let image = fs.crash_image(CrashMode::DropUnsynced);
    drop(db);
    let wal_name = image
        .list(Path::new("/db"))
        .unwrap()
        .into_iter()
        .find(|n| shale_engine::inspect::wal::format::parse_log_file_name(n).is_some())
        .unwrap();
    let wal = Path::new("/db").join(&wal_name);
    let len = image.size(&wal).unwrap();
    image.truncate_for_test(&wal, len - 5).unwrap();

    // Table creations wait at the latch: holds the flush of what the open replayed back, so
    // the checkpoint is taken while the torn WAL is still needed.
    let (gated, latch) = latched_fs(image.clone(), |call| {
        call.op == Op::Create && call.has_extension("sst")
    });
    let mut gated_options = sync_options.clone();
    gated_options.file_system = Arc::new(gated);
    let db = Db::open("/db", gated_options).unwrap();
    assert_eq!(db.get(b"tail").unwrap(), None, "the torn write was dropped");
    db.put(b"after", b"open").unwrap();
    let info = db.checkpoint("/cp").unwrap();
    assert!(
        info.files.iter().any(|(n, _)| *n == wal_name),
        "the torn WAL is still needed: {info:?}"
    );
    latch.open();
    db.close().unwrap();
    for mode in [
        RecoveryMode::TolerateCorruptedTailRecords,
        RecoveryMode::AbsoluteConsistency,
        RecoveryMode::PointInTime,
        RecoveryMode::SkipAnyCorruptedRecords,
    ] {
        let copy_fs = image.crash_image(CrashMode::DropUnsynced);
        let mut copy_options = sync_options.clone();
        copy_options.file_system = Arc::new(copy_fs);
        copy_options.wal_recovery_mode = mode;
        let copy = Db::open("/cp", copy_options).unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        for i in 0..20 {
            assert_eq!(
                copy.get(format!("a{i:03}").as_bytes()).unwrap(),
                Some(b"value".to_vec()),
                "{mode:?}"
            );
        }
        assert_eq!(copy.get(b"after").unwrap(), Some(b"open".to_vec()));
        assert_eq!(
            copy.get(b"tail").unwrap(),
            None,
            "{mode:?}: tail resurrected"
        );
        copy.close().unwrap();
    }
}
