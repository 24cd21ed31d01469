//! Backups (`BackupEngine`): incremental sharing of table files, verify naming a damaged file,
//! restore refusing a non-empty directory, purge keeping N and deleting only unshared files,
//! and a backup taken under write load restoring to exactly a snapshot at its cut.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use shale_engine::{
    BackupCodec, BackupEngine, BackupInfo, BackupOptions, Db, Durability, Keyspace,
    KeyspaceOptions, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions,
};
use shale_fs::{FileSystem, MemFs};

fn options(fs: &MemFs) -> Options {
    let mut options = Options {
        durability: Durability::Buffered,
        file_system: Arc::new(fs.clone()),
        ..Options::default()
    };
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

fn fill(db: &Db, prefix: &str, count: u32) {
    for i in 0..count {
        db.put(format!("{prefix}{i:05}").as_bytes(), &[b'v'; 100])
            .unwrap();
    }
    db.flush().unwrap();
}

fn shared(info: &BackupInfo) -> Vec<String> {
    info.files
        .iter()
        .filter(|f| f.stored.starts_with("shared/"))
        .map(|f| f.stored.clone())
        .collect()
}

fn no_progress(_: u64, _: u64) {}

#[test]
fn incremental_verify_restore_and_purge() {
    let fs = MemFs::new();
    let mut db_options = options(&fs);
    // No compaction rewrites the first backup's tables before the second backup.
    db_options.default_keyspace.level0_compaction_trigger = 100;
    db_options.default_keyspace.level0_slowdown_writes_trigger = 200;
    db_options.default_keyspace.level0_stop_writes_trigger = 300;
    let db = Db::open("/db", db_options.clone()).unwrap();
    let engine = BackupEngine::open(Arc::new(fs.clone()), "/backups").unwrap();
    fill(&db, "a", 1000);
    let first = engine
        .create(&db, &BackupOptions::default(), &mut no_progress)
        .unwrap();
    assert!(!shared(&first.info).is_empty());
    assert_eq!(first.reused_tables, 0);
    fill(&db, "b", 1000);
    let second = engine
        .create(&db, &BackupOptions::default(), &mut no_progress)
        .unwrap();
    let old: Vec<_> = shared(&second.info)
        .into_iter()
        .filter(|s| shared(&first.info).contains(s))
        .collect();
    assert_eq!(second.reused_tables, shared(&first.info).len());
    assert_eq!(
        old.len(),
        shared(&first.info).len(),
        "every old table is shared"
    );
    let new_tables = shared(&second.info).len() - old.len();
    assert!(new_tables > 0);
    let private = second.info.files.len() - shared(&second.info).len();
    assert_eq!(
        second.copied_files,
        new_tables + private,
        "the second backup copies only new tables and its private files"
    );
    assert_eq!(engine.list().unwrap().len(), 2);
    engine.verify(second.info.id, &mut no_progress).unwrap();

    // A flipped byte in a shared table: verify names the file.
    let victim = Path::new("/backups").join(&shared(&first.info)[0]);
    fs.corrupt_for_test(&victim, 10, 0x40).unwrap();
    let err = engine.verify(first.info.id, &mut no_progress).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(
        err.to_string().contains(&victim.display().to_string()),
        "{err}"
    );
    // Restore checks checksums too, removes what it wrote when it fails, and refuses a
    // non-empty target.
    let err = engine
        .restore(first.info.id, Path::new("/restored-bad"), 2, &no_progress)
        .unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(fs.list(Path::new("/restored-bad")).unwrap().is_empty());
    fs.write_file_for_test(Path::new("/restored-bad/notes.txt"), b"mine")
        .unwrap();
    let err = engine
        .restore(second.info.id, Path::new("/restored-bad"), 2, &no_progress)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not empty"), "{err}");
    fs.corrupt_for_test(&victim, 10, 0x40).unwrap();

    // Writes after the second backup are not in it.
    db.put(b"later", b"x").unwrap();
    db.close().unwrap();

    // Purge keeps the newest backup; the shared tables it lists stay, the first backup's
    // private files go.
    let private_first: Vec<_> = first
        .info
        .files
        .iter()
        .filter(|f| f.stored.starts_with("private/"))
        .map(|f| f.stored.clone())
        .collect();
    assert_eq!(engine.purge(1).unwrap(), vec![first.info.id]);
    assert_eq!(engine.list().unwrap(), vec![second.info.clone()]);
    for stored in &private_first {
        assert!(
            !fs.exists(&Path::new("/backups").join(stored)).unwrap(),
            "{stored}"
        );
    }
    engine.verify(second.info.id, &mut no_progress).unwrap();
    engine
        .restore(second.info.id, Path::new("/restored"), 2, &no_progress)
        .unwrap();
    let restored = Db::open("/restored", db_options.clone()).unwrap();
    assert_eq!(restored.get(b"a00999").unwrap(), Some(vec![b'v'; 100]));
    assert_eq!(restored.get(b"b00999").unwrap(), Some(vec![b'v'; 100]));
    assert_eq!(restored.get(b"later").unwrap(), None);
    restored.close().unwrap();

    a_table_only_purged_backups_listed_is_deleted(&fs, &engine, db_options, &second.info);
}

/// After a compaction replaced every table of `second` (the only backup left), a new backup
/// and `purge --keep 1` leave exactly the new backup's tables in `shared/`.
fn a_table_only_purged_backups_listed_is_deleted(
    fs: &MemFs,
    engine: &BackupEngine,
    db_options: Options,
    second: &BackupInfo,
) {
    let db = Db::open("/db", db_options).unwrap();
    // Overwriting the keys makes the tables overlap: the compaction merges them into new ones.
    fill(&db, "a", 1000);
    fill(&db, "b", 1000);
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();
    let third = engine
        .create(&db, &BackupOptions::default(), &mut no_progress)
        .unwrap();
    db.close().unwrap();
    assert!(
        shared(&third.info)
            .iter()
            .all(|s| !shared(second).contains(s)),
        "the compaction replaced every table"
    );
    engine.purge(1).unwrap();
    let on_disk = fs.list(Path::new("/backups/shared")).unwrap();
    let listed: Vec<String> = shared(&third.info)
        .iter()
        .map(|s| s.trim_start_matches("shared/").to_owned())
        .collect();
    assert_eq!(on_disk, listed, "only the kept backup's tables remain");
}

#[test]
fn a_backup_under_write_load_restores_to_the_snapshot_at_its_cut() {
    let fs = MemFs::new();
    let db = Arc::new(Db::open("/db", options(&fs)).unwrap());
    let users = db
        .create_keyspace("users", KeyspaceOptions::default())
        .unwrap();
    let engine = BackupEngine::open(Arc::new(fs.clone()), "/backups").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|thread| {
            let (db, users, stop) = (db.clone(), users.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let key = format!("t{thread}-{:04}", i % 700);
                    let value = format!("{i}-{}", "y".repeat(80));
                    let mut batch = WriteBatch::new();
                    batch
                        .put(db.default_keyspace().id(), key.as_bytes(), value.as_bytes())
                        .unwrap();
                    batch
                        .put(users.id(), key.as_bytes(), value.as_bytes())
                        .unwrap();
                    db.write(batch, &WriteOptions::default()).unwrap();
                    i += 1;
                }
            })
        })
        .collect();
    let mut made = Vec::new();
    for _ in 0..3 {
        std::thread::sleep(std::time::Duration::from_millis(40));
        let created = engine
            .create(&db, &BackupOptions::default(), &mut no_progress)
            .unwrap();
        let expected = (
            contents(&db.default_keyspace(), Some(&created.snapshot)),
            contents(&users, Some(&created.snapshot)),
        );
        made.push((created.info.id, created.info.seqno, expected));
    }
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.join().unwrap();
    }
    drop(users);
    Arc::try_unwrap(db).unwrap().close().unwrap();
    for (id, seqno, (default, users)) in made {
        engine.verify(id, &mut no_progress).unwrap();
        let dest = format!("/restore-{id}");
        engine
            .restore(id, Path::new(&dest), 2, &no_progress)
            .unwrap();
        let restored = Db::open(&dest, options(&fs)).unwrap();
        assert_eq!(restored.latest_seqno(), seqno, "backup {id}");
        assert_eq!(
            contents(&restored.default_keyspace(), None),
            default,
            "backup {id}"
        );
        let restored_users = restored.keyspace("users").unwrap();
        assert_eq!(contents(&restored_users, None), users, "backup {id}");
        restored.close().unwrap();
    }
}

#[test]
fn a_failed_backup_leaves_no_backup_and_purge_removes_its_files() {
    use shale_fs::{FaultError, FaultFs, FaultRule, FaultTrigger, OpKind};
    let fs = MemFs::new();
    let db = Db::open("/db", options(&fs)).unwrap();
    fill(&db, "a", 1000);
    db.put(b"in-wal", b"x").unwrap();
    let faulty = FaultFs::new(Arc::new(fs.clone()));
    let engine = BackupEngine::open(Arc::new(faulty.clone()), "/backups").unwrap();
    // The tables are copied, then copying the WAL into private/ fails.
    faulty.add_rule(
        FaultRule::new(OpKind::Append, FaultTrigger::Always, FaultError::NoSpace)
            .path_contains("/backups/private/"),
    );
    let err = engine
        .create(&db, &BackupOptions::default(), &mut no_progress)
        .unwrap_err();
    assert!(err.to_string().contains("/backups/private/1/"), "{err}");
    assert!(engine.list().unwrap().is_empty(), "no meta, no backup");
    assert!(!fs.list(Path::new("/backups/shared")).unwrap().is_empty());
    // The database is unharmed: a failed backup is not a database error.
    db.put(b"after", b"failure").unwrap();
    assert!(engine.purge(1).unwrap().is_empty());
    assert!(
        fs.list(Path::new("/backups/shared")).unwrap().is_empty(),
        "purge removes the unreferenced tables"
    );
    faulty.clear_rules();
    let created = engine
        .create(&db, &BackupOptions::default(), &mut no_progress)
        .unwrap();
    assert_eq!(created.info.id, 1);
    engine.verify(1, &mut no_progress).unwrap();
    db.close().unwrap();
    engine
        .restore(1, Path::new("/restored"), 2, &no_progress)
        .unwrap();
    let restored = Db::open("/restored", options(&fs)).unwrap();
    assert_eq!(restored.get(b"in-wal").unwrap(), Some(b"x".to_vec()));
    assert_eq!(restored.get(b"after").unwrap(), Some(b"failure".to_vec()));
}

#[test]
fn compressed_backups_verify_restore_and_share_tables_incrementally() {
    let fs = MemFs::new();
    let mut db_options = options(&fs);
    db_options.default_keyspace.level0_compaction_trigger = 100;
    db_options.default_keyspace.level0_slowdown_writes_trigger = 200;
    db_options.default_keyspace.level0_stop_writes_trigger = 300;
    let db = Db::open("/db", db_options.clone()).unwrap();
    let engine = BackupEngine::open(Arc::new(fs.clone()), "/backups").unwrap();
    let compress = BackupOptions {
        zstd_level: Some(3),
        ..BackupOptions::default()
    };
    fill(&db, "a", 1000);
    // Left in the WAL: the backup's WAL copy is compressed too.
    db.put(b"in-wal", &[b'w'; 500]).unwrap();
    let first = engine.create(&db, &compress, &mut no_progress).unwrap();
    let stored_size = |info: &BackupInfo| -> (u64, u64) {
        info.files
            .iter()
            .filter(|f| f.codec == BackupCodec::Zstd)
            .map(|f| {
                let on_disk = fs.size(&Path::new("/backups").join(&f.stored)).unwrap();
                (f.size, on_disk)
            })
            .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
    };
    let (original, stored) = stored_size(&first.info);
    assert!(
        first.info.files.iter().any(|f| f.name.contains(".wal")
            && f.codec == BackupCodec::Zstd
            && f.stored.ends_with(".wal.zst")),
        "{:?}",
        first.info.files
    );
    assert!(
        shared(&first.info).iter().all(|s| s.ends_with(".sst.zst")),
        "{:?}",
        first.info.files
    );
    assert!(
        stored * 2 < original,
        "compressed {stored} of {original} bytes"
    );
    assert_eq!(engine.info(first.info.id).unwrap(), first.info);
    engine.verify(first.info.id, &mut no_progress).unwrap();

    // The next compressed backup shares the tables; an uncompressed one does not.
    fill(&db, "b", 1000);
    let second = engine.create(&db, &compress, &mut no_progress).unwrap();
    assert_eq!(second.reused_tables, shared(&first.info).len());
    let plain = engine
        .create(&db, &BackupOptions::default(), &mut no_progress)
        .unwrap();
    assert_eq!(plain.reused_tables, 0);
    assert!(plain
        .info
        .files
        .iter()
        .all(|f| f.codec == BackupCodec::None));
    db.put(b"later", b"x").unwrap();
    let expected = contents(&db.default_keyspace(), Some(&second.snapshot));
    db.close().unwrap();

    engine
        .restore(second.info.id, Path::new("/restored"), 2, &no_progress)
        .unwrap();
    let restored = Db::open("/restored", db_options.clone()).unwrap();
    assert_eq!(contents(&restored.default_keyspace(), None), expected);
    assert_eq!(restored.get(b"in-wal").unwrap(), Some(vec![b'w'; 500]));
    restored.close().unwrap();

    // A flipped byte inside a compressed table: verify and restore catch it, naming the file
    // (zstd refuses the chunk, or the decompressed bytes fail the meta's checksum).
    let victim = Path::new("/backups").join(&shared(&first.info)[0]);
    let size = fs.size(&victim).unwrap();
    for offset in [20, size / 2, size - 3] {
        fs.corrupt_for_test(&victim, offset, 0x40).unwrap();
        let err = engine.verify(first.info.id, &mut no_progress).unwrap_err();
        assert!(err.is_corruption(), "offset {offset}: {err}");
        assert!(
            err.to_string().contains(&victim.display().to_string()),
            "{err}"
        );
        let err = engine
            .restore(
                first.info.id,
                Path::new(&format!("/bad-{offset}")),
                1,
                &no_progress,
            )
            .unwrap_err();
        assert!(err.is_corruption(), "offset {offset}: {err}");
        fs.corrupt_for_test(&victim, offset, 0x40).unwrap();
    }
    engine.verify(first.info.id, &mut no_progress).unwrap();
}

#[test]
fn a_second_backup_into_the_same_directory_at_once_fails_and_changes_nothing() {
    let fs = MemFs::new();
    let db = Db::open("/db", options(&fs)).unwrap();
    fill(&db, "a", 1000);
    db.put(b"in-wal", b"x").unwrap();
    // Two engines on one directory, as two `shale backup create` processes would have.
    let first = BackupEngine::open(Arc::new(fs.clone()), "/backups").unwrap();
    let second = BackupEngine::open(Arc::new(fs.clone()), "/backups").unwrap();
    let mut second_result = None;
    let created = first
        .create(&db, &BackupOptions::default(), &mut |_, _| {
            if second_result.is_none() {
                second_result =
                    Some(second.create(&db, &BackupOptions::default(), &mut no_progress));
            }
        })
        .unwrap();
    let error = second_result
        .expect("the first backup reported progress")
        .expect_err("the second backup must fail while the first runs");
    let text = error.to_string();
    assert!(
        text.contains("in use") && text.contains("/backups/LOCK"),
        "{text}"
    );
    assert_eq!(created.info.id, 1);
    assert_eq!(first.list().unwrap().len(), 1, "one backup, listed once");
    first.verify(1, &mut no_progress).unwrap();
    // The lock is released when the create returns: the next one works.
    let next = second
        .create(&db, &BackupOptions::default(), &mut no_progress)
        .unwrap();
    assert_eq!(next.info.id, 2);
    db.close().unwrap();
}

#[test]
fn a_backup_failed_mid_table_leaves_no_temporary_file_and_purge_reports_what_it_left() {
    use shale_fs::{FaultError, FaultFs, FaultRule, FaultTrigger, OpKind};
    let fs = MemFs::new();
    let db = Db::open("/db", options(&fs)).unwrap();
    fill(&db, "a", 1000);
    let faulty = FaultFs::new(Arc::new(fs.clone()));
    let engine = BackupEngine::open(Arc::new(faulty.clone()), "/backups").unwrap();
    // The disk fills while a table is being copied into shared/.
    faulty.add_rule(
        FaultRule::new(
            OpKind::Append,
            FaultTrigger::EveryFrom(2),
            FaultError::NoSpace,
        )
        .path_contains("/backups/shared/"),
    );
    engine
        .create(&db, &BackupOptions::default(), &mut no_progress)
        .unwrap_err();
    faulty.clear_rules();
    let shared = fs.list(Path::new("/backups/shared")).unwrap();
    assert!(
        shared.iter().all(|n| !n.ends_with("-tmp")),
        "no temporary file left: {shared:?}"
    );
    let private = Path::new("/backups/private/1");
    assert!(
        !fs.exists(private).unwrap() || fs.list(private).unwrap().is_empty(),
        "nothing left in private/1"
    );
    assert!(engine.list().unwrap().is_empty());
    let purged = engine.purge_files(1).unwrap();
    assert!(purged.ids.is_empty());
    assert_eq!(
        purged.leftovers.len(),
        shared.len(),
        "purge reports every leftover: {purged:?}"
    );
    let created = engine
        .create(&db, &BackupOptions::default(), &mut no_progress)
        .unwrap();
    assert_eq!(created.info.id, 1);
    engine.verify(1, &mut no_progress).unwrap();
    db.close().unwrap();
}

#[test]
fn a_failed_restore_leaves_an_empty_directory_and_the_retry_works() {
    use shale_fs::{FaultError, FaultFs, FaultRule, FaultTrigger, OpKind};
    let fs = MemFs::new();
    let db = Db::open("/db", options(&fs)).unwrap();
    fill(&db, "a", 1000);
    db.put(b"in-wal", b"x").unwrap();
    let faulty = FaultFs::new(Arc::new(fs.clone()));
    let engine = BackupEngine::open(Arc::new(faulty.clone()), "/backups").unwrap();
    engine
        .create(&db, &BackupOptions::default(), &mut no_progress)
        .unwrap();
    db.close().unwrap();
    faulty.add_rule(
        FaultRule::new(
            OpKind::Append,
            FaultTrigger::EveryFrom(3),
            FaultError::NoSpace,
        )
        .path_contains("/restored/"),
    );
    let error = engine
        .restore(1, Path::new("/restored"), 1, &no_progress)
        .unwrap_err();
    assert!(error.to_string().contains("/restored/"), "{error}");
    assert_eq!(
        fs.list(Path::new("/restored")).unwrap(),
        Vec::<String>::new(),
        "the failed restore removed what it wrote"
    );
    faulty.clear_rules();
    engine
        .restore(1, Path::new("/restored"), 2, &no_progress)
        .unwrap();
    let restored = Db::open("/restored", options(&fs)).unwrap();
    assert_eq!(restored.get(b"in-wal").unwrap(), Some(b"x".to_vec()));
}

#[test]
fn a_database_directory_is_refused_as_a_backup_directory_or_restore_target() {
    let fs = MemFs::new();
    let db = Db::open("/db", options(&fs)).unwrap();
    fill(&db, "a", 100);
    db.flush().unwrap();
    let error = BackupEngine::open(Arc::new(fs.clone()), "/db").unwrap_err();
    assert!(error.to_string().contains("holds a database"), "{error}");
    assert!(!fs.exists(Path::new("/db/shared")).unwrap());
    assert!(!fs.exists(Path::new("/db/meta")).unwrap());
    let engine = BackupEngine::open(Arc::new(fs.clone()), "/backups").unwrap();
    engine
        .create(&db, &BackupOptions::default(), &mut no_progress)
        .unwrap();
    db.close().unwrap();
    let error = engine
        .restore(1, Path::new("/db"), 1, &no_progress)
        .unwrap_err();
    assert!(error.to_string().contains("holds a database"), "{error}");
}

#[test]
fn a_backup_or_restore_that_cannot_fit_is_refused_before_it_writes() {
    let fs = MemFs::new();
    let db = Db::open("/db", options(&fs)).unwrap();
    fill(&db, "a", 1000);
    let engine = BackupEngine::open(Arc::new(fs.clone()), "/backups").unwrap();
    fs.set_capacity_for_test(Some(fs.total_bytes() + 100));
    let error = engine
        .create(&db, &BackupOptions::default(), &mut no_progress)
        .unwrap_err();
    assert!(
        error.to_string().contains("free") && error.to_string().contains("/backups"),
        "{error}"
    );
    assert!(engine.list().unwrap().is_empty());
    assert!(fs.list(Path::new("/backups/shared")).unwrap().is_empty());
    fs.set_capacity_for_test(None);
    engine
        .create(&db, &BackupOptions::default(), &mut no_progress)
        .unwrap();
    db.close().unwrap();
    fs.set_capacity_for_test(Some(fs.total_bytes() + 100));
    let error = engine
        .restore(1, Path::new("/restored"), 2, &no_progress)
        .unwrap_err();
    assert!(error.to_string().contains("free"), "{error}");
    assert!(fs.list(Path::new("/restored")).unwrap().is_empty());
    fs.set_capacity_for_test(None);
    engine
        .restore(1, Path::new("/restored"), 2, &no_progress)
        .unwrap();
}
