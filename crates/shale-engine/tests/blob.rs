//! Behaviour tests of blob files (docs/format/blob.md, docs/operations.md "Large values"):
//! the size threshold, reads through every path after flush, compaction and reopen, snapshots
//! of overwritten values, garbage collection by age (the old blob file deleted once all
//! garbage), the force-threshold compaction reason, TTL keyspaces, and corruption reported
//! with the blob file and offset.

use std::path::Path;
use std::sync::Arc;

use shale_engine::{Db, Error, Keyspace, KeyspaceOptions, Options, ReadOptions};
use shale_fs::{FileSystem, MemFs};
use shale_sst::Compression;

const DIR: &str = "/db";

fn blob_keyspace() -> KeyspaceOptions {
    KeyspaceOptions {
        write_buffer_size: 1 << 20,
        compression: Compression::None,
        compression_per_level: Vec::new(),
        bottommost_compression: None,
        enable_blob_files: true,
        min_blob_size: 100,
        blob_compression: Compression::Lz4,
        ..KeyspaceOptions::default()
    }
}

fn options(fs: &Arc<MemFs>, keyspace: KeyspaceOptions) -> Options {
    Options {
        file_system: fs.clone(),
        default_keyspace: keyspace,
        idle_compaction_after: None,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// A value of `len` bytes that says which key and version it belongs to.
fn value(i: u32, version: u32, len: usize) -> Vec<u8> {
    let mut v = format!("value {i} version {version} ").into_bytes();
    while v.len() < len {
        v.push(b'a' + ((v.len() as u32 * 7 + i + version) % 26) as u8);
    }
    v.truncate(len);
    v
}

fn blob_files_on_disk(fs: &MemFs) -> Vec<u64> {
    let mut numbers: Vec<u64> = fs
        .list(Path::new(DIR))
        .unwrap()
        .iter()
        .filter_map(|n| shale_engine::inspect::blob::parse_blob_file_name(n))
        .collect();
    numbers.sort_unstable();
    numbers
}

fn scan(ks: &Keyspace, options: ReadOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut iter = ks.iterator(options).unwrap();
    let mut out = Vec::new();
    iter.seek_to_first();
    while iter.valid() {
        out.push((iter.key().to_vec(), iter.value().to_vec()));
        iter.next();
    }
    iter.status().unwrap();
    out
}

fn scan_reverse(ks: &Keyspace) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut iter = ks.iterator(ReadOptions::default()).unwrap();
    let mut out = Vec::new();
    iter.seek_to_last();
    while iter.valid() {
        out.push((iter.key().to_vec(), iter.value().to_vec()));
        iter.prev();
    }
    iter.status().unwrap();
    out.reverse();
    out
}

#[test]
fn values_at_the_threshold_go_to_blob_files_and_read_back_everywhere() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open(DIR, options(&fs, blob_keyspace())).unwrap();
    let ks = db.default_keyspace();
    // 99 bytes stays inline, 100 goes to a blob file.
    ks.put(b"small", &value(0, 0, 99)).unwrap();
    ks.put(b"large", &value(1, 0, 100)).unwrap();
    ks.put(b"huge", &value(2, 0, 200_000)).unwrap();
    db.flush().unwrap();
    let version = db.current_version();
    let blobs: Vec<_> = version.blob_files().values().cloned().collect();
    assert_eq!(blobs.len(), 1, "{version}");
    assert_eq!(blobs[0].total_count, 2, "only the two values >= 100 bytes");
    assert_eq!(blob_files_on_disk(&fs), [blobs[0].number]);
    let tables = version.files(0, 0);
    assert_eq!(tables[0].oldest_blob_file, Some(blobs[0].number));

    let expected = vec![
        (b"huge".to_vec(), value(2, 0, 200_000)),
        (b"large".to_vec(), value(1, 0, 100)),
        (b"small".to_vec(), value(0, 0, 99)),
    ];
    let check = |ks: &Keyspace| {
        assert_eq!(ks.get(b"large").unwrap(), Some(value(1, 0, 100)));
        assert_eq!(ks.get(b"huge").unwrap(), Some(value(2, 0, 200_000)));
        let got = ks
            .multi_get(&[b"small", b"large", b"missing"], &ReadOptions::default())
            .unwrap();
        assert_eq!(got, [Some(value(0, 0, 99)), Some(value(1, 0, 100)), None]);
        assert_eq!(scan(ks, ReadOptions::default()), expected);
        assert_eq!(scan_reverse(ks), expected);
        let mut iter = ks.iterator(ReadOptions::default()).unwrap();
        iter.seek(b"k");
        assert_eq!(iter.key(), b"large");
        assert_eq!(iter.value(), value(1, 0, 100));
        iter.seek_for_prev(b"k");
        assert_eq!(iter.key(), b"huge");
        assert_eq!(iter.value(), value(2, 0, 200_000));
    };
    check(&ks);
    db.compact_range(&ks, None, None).unwrap();
    check(&ks);
    db.close().unwrap();
    let db = Db::open(DIR, options(&fs, blob_keyspace())).unwrap();
    check(&db.default_keyspace());
    // A read-only open reads them too.
    let reader = Db::open_read_only(DIR, options(&fs, blob_keyspace())).unwrap();
    check(&reader.default_keyspace());
}

#[test]
fn garbage_collection_deletes_old_blob_files_and_snapshots_keep_what_they_see() {
    let fs = Arc::new(MemFs::new());
    let keyspace = KeyspaceOptions {
        blob_garbage_collection_age_cutoff: 0.5,
        ..blob_keyspace()
    };
    let db = Db::open(DIR, options(&fs, keyspace.clone())).unwrap();
    let ks = db.default_keyspace();
    for i in 0..200 {
        ks.put(&key(i), &value(i, 1, 1000)).unwrap();
    }
    db.flush().unwrap();
    let first = blob_files_on_disk(&fs);
    assert_eq!(first.len(), 1);
    let snapshot = db.snapshot();
    for i in 0..200 {
        ks.put(&key(i), &value(i, 2, 1000)).unwrap();
    }
    db.flush().unwrap();
    // The snapshot holds version 1 alive through a compaction.
    db.compact_range(&ks, None, None).unwrap();
    let old = ks
        .get_with(
            &key(7),
            &ReadOptions {
                snapshot: Some(snapshot.clone()),
                ..ReadOptions::default()
            },
        )
        .unwrap();
    assert_eq!(old, Some(value(7, 1, 1000)));
    let at_snapshot = scan(
        &ks,
        ReadOptions {
            snapshot: Some(snapshot.clone()),
            ..ReadOptions::default()
        },
    );
    assert_eq!(at_snapshot.len(), 200);
    assert!(at_snapshot.iter().all(|(k, v)| {
        let i: u32 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
        *v == value(i, 1, 1000)
    }));
    // What the snapshot sees was relocated out of the first blob file (it is within the age
    // cutoff), so that file is all garbage and gone while the snapshot lives.
    assert!(!blob_files_on_disk(&fs).contains(&first[0]));
    drop(snapshot);
    db.compact_range(&ks, None, None).unwrap();
    let version = db.current_version();
    assert!(
        !version.blob_files().contains_key(&first[0]),
        "all garbage once the snapshot is gone: {version}"
    );
    assert!(
        !blob_files_on_disk(&fs).contains(&first[0]),
        "and deleted from disk"
    );
    for blob in version.blob_files().values() {
        assert!(blob.garbage_count < blob.total_count, "{blob}");
    }
    for i in 0..200 {
        assert_eq!(ks.get(&key(i)).unwrap(), Some(value(i, 2, 1000)));
    }
    assert!(db.stats().blob_files_written >= 2);
    db.close().unwrap();
    let db = Db::open(DIR, options(&fs, keyspace)).unwrap();
    let ks = db.default_keyspace();
    for i in (0..200).step_by(17) {
        assert_eq!(ks.get(&key(i)).unwrap(), Some(value(i, 2, 1000)));
    }
}

#[test]
fn deletes_make_garbage_and_an_all_garbage_file_goes() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open(DIR, options(&fs, blob_keyspace())).unwrap();
    let ks = db.default_keyspace();
    for i in 0..50 {
        ks.put(&key(i), &value(i, 1, 500)).unwrap();
    }
    db.flush().unwrap();
    let first = blob_files_on_disk(&fs);
    db.compact_range(&ks, None, None).unwrap();
    // Half deleted: half garbage.
    for i in 0..25 {
        ks.delete(&key(i)).unwrap();
    }
    db.compact_range(&ks, None, None).unwrap();
    let meta = db
        .current_version()
        .blob_files()
        .get(&first[0])
        .expect("still half live")
        .clone();
    assert_eq!(meta.garbage_count, 25, "{meta}");
    assert!((meta.live_ratio() - 0.5).abs() < 0.05, "{meta}");
    ks.delete_range(&key(25), &key(50)).unwrap();
    db.compact_range(&ks, None, None).unwrap();
    assert!(db.current_version().blob_files().is_empty());
    assert!(blob_files_on_disk(&fs).is_empty());
    assert!(scan(&ks, ReadOptions::default()).is_empty());
}

/// X keys and Y keys share the first blob file. Y is overwritten and compacted once there
/// are enough blob files for the first to be within the age cutoff, so that file is half
/// garbage while the X tables, which nothing makes compact, still reference it. With a force
/// threshold below that, the picker rewrites the X tables (reason blob-gc) and the file goes.
#[test]
fn the_force_threshold_compacts_the_tables_holding_the_oldest_blob_file() {
    let fs = Arc::new(MemFs::new());
    let keyspace = KeyspaceOptions {
        target_file_size: 4096,
        // 2 blob files: none within; 3: the oldest.
        blob_garbage_collection_age_cutoff: 0.34,
        blob_garbage_collection_force_threshold: 0.4,
        ..blob_keyspace()
    };
    let db = Db::open(DIR, options(&fs, keyspace)).unwrap();
    let ks = db.default_keyspace();
    let x = |i: u32| format!("x{i:05}").into_bytes();
    let y = |i: u32| format!("y{i:05}").into_bytes();
    for i in 0..400 {
        ks.put(&x(i), &value(i, 1, 200)).unwrap();
        ks.put(&y(i), &value(i, 1, 200)).unwrap();
    }
    db.flush().unwrap();
    let first = blob_files_on_disk(&fs);
    assert_eq!(first.len(), 1);
    // An overlapping second table: the compaction merges (and cuts outputs at 4 KiB).
    ks.put(&x(0), &value(0, 2, 200)).unwrap();
    db.compact_range(&ks, None, None).unwrap();
    assert!(db.current_version().files(0, 6).len() > 2);
    for i in 0..400 {
        ks.put(&y(i), &value(i, 2, 200)).unwrap();
    }
    db.compact_range(&ks, Some(b"y"), Some(b"y99999")).unwrap();
    db.wait_for_background_work().unwrap();
    let version = db.current_version();
    assert!(
        db.stats().blob_gc_compactions >= 1,
        "{}\n{version}",
        db.stats()
    );
    assert!(
        !version.blob_files().contains_key(&first[0]),
        "the first blob file is all garbage and gone: {version}"
    );
    assert!(!blob_files_on_disk(&fs).contains(&first[0]));
    assert_eq!(ks.get(&x(0)).unwrap(), Some(value(0, 2, 200)));
    for i in (1..400).step_by(13) {
        assert_eq!(ks.get(&x(i)).unwrap(), Some(value(i, 1, 200)));
        assert_eq!(ks.get(&y(i)).unwrap(), Some(value(i, 2, 200)));
    }
}

#[test]
fn ttl_keyspaces_expire_blob_values_without_reading_them() {
    let fs = Arc::new(MemFs::new());
    let keyspace = KeyspaceOptions {
        ttl: Some(std::time::Duration::from_secs(3600)),
        ..blob_keyspace()
    };
    let db = Db::open(DIR, options(&fs, keyspace)).unwrap();
    let ks = db.default_keyspace();
    ks.put(b"a", &value(1, 1, 5000)).unwrap();
    ks.put(b"b", &value(2, 1, 50)).unwrap();
    db.flush().unwrap();
    assert_eq!(db.current_version().blob_files().len(), 1);
    assert_eq!(ks.get(b"a").unwrap(), Some(value(1, 1, 5000)));
    assert_eq!(ks.get(b"b").unwrap(), Some(value(2, 1, 50)));
    assert_eq!(
        scan(&ks, ReadOptions::default()),
        [
            (b"a".to_vec(), value(1, 1, 5000)),
            (b"b".to_vec(), value(2, 1, 50))
        ]
    );
    db.compact_range(&ks, None, None).unwrap();
    assert_eq!(ks.get(b"a").unwrap(), Some(value(1, 1, 5000)));
}

#[test]
fn blob_options_persist_and_bad_ones_are_named() {
    let fs = Arc::new(MemFs::new());
    for (bad, name) in [
        (
            KeyspaceOptions {
                blob_compression: Compression::ZstdDict,
                ..blob_keyspace()
            },
            "blob_compression",
        ),
        (
            KeyspaceOptions {
                blob_garbage_collection_age_cutoff: 1.5,
                ..blob_keyspace()
            },
            "blob_garbage_collection_age_cutoff",
        ),
        (
            KeyspaceOptions {
                blob_file_size: 10,
                ..blob_keyspace()
            },
            "blob_file_size",
        ),
    ] {
        let err = Db::open(DIR, options(&fs, bad)).unwrap_err();
        assert!(err.to_string().contains(name), "{err}");
    }
    // The blob options are persisted in OPTIONS: reopened with defaults (blob files off),
    // the keyspace still separates values.
    let db = Db::open(DIR, options(&fs, blob_keyspace())).unwrap();
    db.close().unwrap();
    let db = Db::open(DIR, options(&fs, KeyspaceOptions::default())).unwrap();
    let ks = db.default_keyspace();
    ks.put(b"k", &value(1, 1, 1000)).unwrap();
    db.flush().unwrap();
    assert_eq!(db.current_version().blob_files().len(), 1);
    assert_eq!(ks.get(b"k").unwrap(), Some(value(1, 1, 1000)));
}

#[test]
fn a_damaged_blob_record_is_corruption_naming_the_file_and_offset() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open(DIR, options(&fs, blob_keyspace())).unwrap();
    let ks = db.default_keyspace();
    ks.put(b"a", &value(1, 1, 1000)).unwrap();
    ks.put(b"b", &value(2, 1, 1000)).unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    let number = blob_files_on_disk(&fs)[0];
    let path = shale_engine::inspect::blob::blob_file_name(Path::new(DIR), number);
    let mut bytes = vec![0u8; usize::try_from(fs.size(&path).unwrap()).unwrap()];
    fs.open_read(&path)
        .unwrap()
        .read_exact_at(0, &mut bytes)
        .unwrap();
    // The second record starts after the header and the first record (13 + 1 + stored).
    let first_len = u32::from_le_bytes(bytes[36..40].try_into().unwrap()) as usize;
    let second = 32 + 13 + 1 + first_len;
    bytes[second + 20] ^= 0xff;
    fs.remove(&path).unwrap();
    let mut file = fs.create(&path).unwrap();
    file.append(&bytes).unwrap();
    file.sync_data().unwrap();
    drop(file);
    let db = Db::open(DIR, options(&fs, blob_keyspace())).unwrap();
    let ks = db.default_keyspace();
    assert_eq!(ks.get(b"a").unwrap(), Some(value(1, 1, 1000)));
    match ks.get(b"b") {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, path);
            assert_eq!(offset, second as u64);
        }
        other => panic!("{other:?}"),
    }
    let mut iter = ks.iterator(ReadOptions::default()).unwrap();
    iter.seek_to_first();
    assert!(iter.valid());
    iter.next();
    assert!(!iter.valid());
    assert!(iter.status().unwrap_err().to_string().contains("checksum"));
}

#[test]
fn checkpoints_link_and_backups_copy_blob_files() {
    use shale_engine::{BackupEngine, BackupOptions};
    let fs = Arc::new(MemFs::new());
    let keyspace = KeyspaceOptions {
        level0_compaction_trigger: 100,
        level0_slowdown_writes_trigger: 200,
        level0_stop_writes_trigger: 300,
        ..blob_keyspace()
    };
    let db = Db::open(DIR, options(&fs, keyspace.clone())).unwrap();
    let ks = db.default_keyspace();
    for i in 0..50 {
        ks.put(&key(i), &value(i, 1, 2000)).unwrap();
    }
    db.flush().unwrap();
    let info = db.checkpoint("/checkpoint").unwrap();
    let blob = blob_files_on_disk(&fs)[0];
    assert!(info
        .files
        .iter()
        .any(|(name, _)| *name == format!("{blob:06}.blob")));
    let engine = BackupEngine::open(fs.clone(), "/backups").unwrap();
    let first = engine
        .create(&db, &BackupOptions::default(), &mut |_, _| {})
        .unwrap();
    assert!(first
        .info
        .files
        .iter()
        .any(|f| f.name == format!("{blob:06}.blob") && f.stored.starts_with("shared/")));
    for i in 50..60 {
        ks.put(&key(i), &value(i, 1, 2000)).unwrap();
    }
    db.flush().unwrap();
    let second = engine
        .create(&db, &BackupOptions::default(), &mut |_, _| {})
        .unwrap();
    // The first table and blob file are shared with the first backup.
    assert_eq!(second.reused_tables, 2);
    engine.verify(second.info.id, &mut |_, _| {}).unwrap();
    engine
        .restore(second.info.id, Path::new("/restored"), 2, &|_, _| {})
        .unwrap();
    drop(db);
    for dir in ["/checkpoint", "/restored"] {
        let copy = Db::open(
            dir,
            Options {
                file_system: fs.clone(),
                default_keyspace: keyspace.clone(),
                idle_compaction_after: None,
                ..Options::default()
            },
        )
        .unwrap();
        let ks = copy.default_keyspace();
        let count = if dir == "/checkpoint" { 50 } else { 60 };
        for i in 0..count {
            assert_eq!(ks.get(&key(i)).unwrap(), Some(value(i, 1, 2000)), "{dir}");
        }
        assert_eq!(scan(&ks, ReadOptions::default()).len(), count as usize);
    }
}

#[test]
fn repair_keeps_readable_blob_files_and_recomputes_their_garbage() {
    let fs = Arc::new(MemFs::new());
    let keyspace = KeyspaceOptions {
        level0_compaction_trigger: 100,
        level0_slowdown_writes_trigger: 200,
        level0_stop_writes_trigger: 300,
        ..blob_keyspace()
    };
    let db = Db::open(DIR, options(&fs, keyspace.clone())).unwrap();
    let ks = db.default_keyspace();
    for i in 0..40 {
        ks.put(&key(i), &value(i, 1, 1000)).unwrap();
    }
    db.flush().unwrap();
    // An orphan blob file no table references: set aside by repair.
    ks.put(b"orphan", &value(99, 1, 1000)).unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    let blobs = blob_files_on_disk(&fs);
    assert_eq!(blobs.len(), 2);
    // Lose the MANIFEST and the table referencing the second blob file.
    for name in fs.list(Path::new(DIR)).unwrap() {
        if name.starts_with("MANIFEST") || name == "CURRENT" {
            fs.remove(&Path::new(DIR).join(&name)).unwrap();
        }
    }
    let version_tables: Vec<String> = fs
        .list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| shale_engine::inspect::parse_table_file_name(n).is_some())
        .collect();
    let newest_table = version_tables.iter().max().unwrap().clone();
    fs.remove(&Path::new(DIR).join(&newest_table)).unwrap();
    let report = shale_engine::repair_db(Path::new(DIR), &options(&fs, keyspace.clone())).unwrap();
    assert!(
        report
            .lost
            .iter()
            .any(|l| l.name == format!("{:06}.blob", blobs[1])),
        "{report:?}"
    );
    let db = Db::open(DIR, options(&fs, keyspace)).unwrap();
    let version = db.current_version();
    let kept = version.blob_files().get(&blobs[0]).expect("kept");
    assert_eq!((kept.total_count, kept.garbage_count), (40, 0));
    let ks = db.default_keyspace();
    for i in 0..40 {
        assert_eq!(ks.get(&key(i)).unwrap(), Some(value(i, 1, 1000)));
    }
}

#[test]
fn transactions_read_blob_values_and_their_own_writes() {
    use shale_engine::{TransactionDb, TransactionDbOptions, TransactionOptions};
    let fs = Arc::new(MemFs::new());
    let db = TransactionDb::open(
        DIR,
        options(&fs, blob_keyspace()),
        TransactionDbOptions::default(),
    )
    .unwrap();
    let mut writer = db.begin(TransactionOptions::default()).unwrap();
    writer.put(b"a", &value(1, 1, 3000)).unwrap();
    writer.put(b"b", &value(2, 1, 3000)).unwrap();
    writer.commit().unwrap();
    db.db().flush().unwrap();
    assert_eq!(db.db().current_version().blob_files().len(), 1);
    let mut txn = db.begin(TransactionOptions::default()).unwrap();
    assert_eq!(txn.get(b"a").unwrap(), Some(value(1, 1, 3000)));
    assert_eq!(txn.get_for_update(b"b").unwrap(), Some(value(2, 1, 3000)));
    txn.put(b"b", &value(2, 2, 3000)).unwrap();
    let mut iter = txn.iterator(ReadOptions::default()).unwrap();
    iter.seek_to_first();
    assert_eq!(
        (iter.key(), iter.value()),
        (&b"a"[..], &value(1, 1, 3000)[..])
    );
    iter.next();
    assert_eq!(
        (iter.key(), iter.value()),
        (&b"b"[..], &value(2, 2, 3000)[..])
    );
    drop(iter);
    txn.commit().unwrap();
}
