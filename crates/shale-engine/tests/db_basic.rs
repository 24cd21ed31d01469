//! Behaviour of the `Db` API on `MemFs`: the basics every later test builds on.

use std::sync::Arc;

use shale_engine::{Db, KeyspaceOptions, Options, ReadOptions, WriteBatch, WriteOptions};
use shale_fs::{FileSystem, MemFs};

fn options(fs: &MemFs) -> Options {
    let mut options = Options {
        file_system: Arc::new(fs.clone()),
        ..Options::default()
    };
    options.default_keyspace.write_buffer_size = 64 << 10;
    options
}

fn scan(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut iter = db.iterator(ReadOptions::default()).unwrap();
    iter.seek_to_first();
    let mut out = Vec::new();
    while iter.valid() {
        out.push((iter.key().to_vec(), iter.value().to_vec()));
        iter.next();
    }
    iter.status().unwrap();
    out
}

#[test]
fn put_get_delete_and_reopen() {
    let fs = MemFs::new();
    let db = Db::open("/db", options(&fs)).unwrap();
    db.put(b"a", b"1").unwrap();
    db.put(b"b", b"2").unwrap();
    db.delete(b"a").unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
    db.close().unwrap();
    let db = Db::open("/db", options(&fs)).unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
    assert_eq!(scan(&db), vec![(b"b".to_vec(), b"2".to_vec())]);
}

#[test]
fn many_writes_flush_compact_and_survive_reopen() {
    let fs = MemFs::new();
    let db = Db::open("/db", options(&fs)).unwrap();
    for round in 0..3u32 {
        for i in 0..3000u32 {
            db.put(
                format!("key{i:05}").as_bytes(),
                format!("value{i}-{round}").as_bytes(),
            )
            .unwrap();
        }
    }
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    let counts = db.level_file_counts(&db.default_keyspace()).unwrap();
    // A small keyspace's base level is the last one (dynamic level bytes, docs/compaction.md).
    assert!(
        counts[counts.len() - 1] > 0,
        "compaction moved data to the last level: {counts:?}"
    );
    assert!(counts[0] < 4, "L0 stays under its trigger: {counts:?}");
    for i in (0..3000u32).step_by(97) {
        assert_eq!(
            db.get(format!("key{i:05}").as_bytes()).unwrap(),
            Some(format!("value{i}-2").into_bytes())
        );
    }
    assert_eq!(scan(&db).len(), 3000);
    db.close().unwrap();
    let db = Db::open("/db", options(&fs)).unwrap();
    assert_eq!(scan(&db).len(), 3000);
    assert_eq!(db.get(b"key02999").unwrap(), Some(b"value2999-2".to_vec()));
}

#[test]
fn delete_range_and_snapshots() {
    let fs = MemFs::new();
    let db = Db::open("/db", options(&fs)).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:03}").as_bytes(), b"v").unwrap();
    }
    let before = db.snapshot();
    db.delete_range(b"k010", b"k020").unwrap();
    assert_eq!(db.get(b"k015").unwrap(), None);
    assert_eq!(db.get(b"k020").unwrap(), Some(b"v".to_vec()));
    let old = ReadOptions {
        snapshot: Some(before.clone()),
        ..ReadOptions::default()
    };
    assert_eq!(
        db.default_keyspace().get_with(b"k015", &old).unwrap(),
        Some(b"v".to_vec())
    );
    assert_eq!(scan(&db).len(), 90);
    db.flush().unwrap();
    assert_eq!(db.get(b"k015").unwrap(), None);
    assert_eq!(
        db.default_keyspace().get_with(b"k015", &old).unwrap(),
        Some(b"v".to_vec())
    );
    assert_eq!(scan(&db).len(), 90);
    db.put(b"k015", b"back").unwrap();
    assert_eq!(db.get(b"k015").unwrap(), Some(b"back".to_vec()));
}

/// Iterators skip the memtable's range-deletion list while it is empty: one made after the
/// first range deletion lands in a memtable an earlier iterator already read must apply it,
/// and the earlier iterator (its snapshot older than the deletion) must not.
#[test]
fn range_delete_after_an_iterator_is_seen_by_the_next_one() {
    let fs = MemFs::new();
    let db = Db::open("/db", options(&fs)).unwrap();
    for i in 0..20u32 {
        db.put(format!("k{i:03}").as_bytes(), b"v").unwrap();
    }
    let mut earlier = db.iterator(ReadOptions::default()).unwrap();
    earlier.seek(b"k005");
    assert_eq!(earlier.key(), b"k005");
    db.delete_range(b"k005", b"k010").unwrap();
    let mut later = db.iterator(ReadOptions::default()).unwrap();
    later.seek(b"k005");
    assert_eq!(later.key(), b"k010");
    later.seek_for_prev(b"k009");
    assert_eq!(later.key(), b"k004");
    assert_eq!(scan(&db).len(), 15);
    let mut seen = 0;
    while earlier.valid() && earlier.key() < b"k010".as_slice() {
        seen += 1;
        earlier.next();
    }
    earlier.status().unwrap();
    assert_eq!(
        seen, 5,
        "the earlier iterator's snapshot predates the deletion"
    );
}

#[test]
fn keyspaces_and_atomic_batches() {
    let fs = MemFs::new();
    let db = Db::open("/db", options(&fs)).unwrap();
    let users = db
        .create_keyspace("users", KeyspaceOptions::default())
        .unwrap();
    let mut batch = WriteBatch::new();
    batch.put(users.id(), b"u1", b"alice").unwrap();
    batch
        .put(db.default_keyspace().id(), b"count", b"1")
        .unwrap();
    db.write(batch, &WriteOptions::sync()).unwrap();
    assert_eq!(users.get(b"u1").unwrap(), Some(b"alice".to_vec()));
    assert_eq!(db.get(b"u1").unwrap(), None, "keyspaces are separate");
    assert_eq!(
        db.keyspace_names(),
        vec!["default".to_owned(), "users".to_owned()]
    );
    db.close().unwrap();
    let db = Db::open("/db", options(&fs)).unwrap();
    let users = db.keyspace("users").unwrap();
    assert_eq!(users.get(b"u1").unwrap(), Some(b"alice".to_vec()));
    db.drop_keyspace("users").unwrap();
    assert!(db.keyspace("users").is_none());
    assert!(
        users.get(b"u1").is_err(),
        "a dropped keyspace's handle errors"
    );
    assert!(db.drop_keyspace("default").is_err());
}

#[test]
fn open_without_create_if_missing_refuses_a_missing_database_and_creates_nothing() {
    let fs = MemFs::new();
    let mut opts = options(&fs);
    opts.create_if_missing = false;
    let err = Db::open("/missing/db", opts.clone()).unwrap_err();
    assert!(err.to_string().contains("/missing/db"), "{err}");
    assert!(err.to_string().contains("create_if_missing"), "{err}");
    assert!(!fs.exists(std::path::Path::new("/missing")).unwrap());

    // An existing, empty directory gets no LOCK file either.
    fs.create_dir_all(std::path::Path::new("/empty")).unwrap();
    Db::open("/empty", opts.clone()).unwrap_err();
    assert_eq!(
        fs.list(std::path::Path::new("/empty")).unwrap(),
        Vec::<String>::new()
    );

    // A database that exists opens as usual.
    drop(Db::open("/db", options(&fs)).unwrap());
    Db::open("/db", opts).unwrap();
}

#[test]
fn second_open_is_refused_while_locked() {
    let fs = MemFs::new();
    let _db = Db::open("/db", options(&fs)).unwrap();
    let err = Db::open("/db", options(&fs)).unwrap_err();
    assert!(err.to_string().contains("locked"), "{err}");
    assert!(fs.exists(std::path::Path::new("/db/CURRENT")).unwrap());
}

#[test]
fn an_iterator_keeps_its_tables_alive_through_compactions() {
    let fs = MemFs::new();
    let mut opts = options(&fs);
    opts.default_keyspace.target_file_size = 64 << 10;
    let db = Db::open("/db", opts).unwrap();
    for i in 0..4000u32 {
        db.put(format!("key{i:05}").as_bytes(), &[b'a'; 64])
            .unwrap();
    }
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    let mut iter = db.iterator(ReadOptions::default()).unwrap();
    iter.seek_to_first();
    // Rewrite everything so compaction replaces (and deletes) every table the iterator has
    // not opened yet.
    for round in 0..2 {
        for i in 0..4000u32 {
            db.put(
                format!("key{i:05}").as_bytes(),
                format!("new{round}").as_bytes(),
            )
            .unwrap();
        }
        db.flush().unwrap();
        db.wait_for_background_work().unwrap();
    }
    let mut seen = 0;
    while iter.valid() {
        assert_eq!(iter.value(), &[b'a'; 64], "the iterator's view is fixed");
        seen += 1;
        iter.next();
    }
    iter.status().unwrap();
    assert_eq!(seen, 4000);
}

#[test]
fn level_bytes_sum_the_table_files_of_each_level() {
    let fs = MemFs::new();
    let db = Db::open("/db", options(&fs)).unwrap();
    let keyspace = db.default_keyspace();
    assert!(db.level_bytes(&keyspace).unwrap().iter().all(|&b| b == 0));
    // Well under the 64 KiB write buffer: one flush, one table.
    for i in 0..200u32 {
        db.put(format!("key{i:05}").as_bytes(), &[b'v'; 100])
            .unwrap();
    }
    db.flush().unwrap();
    let bytes = db.level_bytes(&keyspace).unwrap();
    let counts = db.level_file_counts(&keyspace).unwrap();
    assert_eq!(bytes.len(), counts.len());
    assert_eq!(counts[0], 1);
    let mut on_disk = 0;
    for name in fs.list(std::path::Path::new("/db")).unwrap() {
        if std::path::Path::new(&name)
            .extension()
            .is_some_and(|ext| ext == "sst")
        {
            on_disk += fs.size(&std::path::Path::new("/db").join(&name)).unwrap();
        }
    }
    assert!(on_disk > 0);
    assert_eq!(bytes.iter().sum::<u64>(), on_disk);
    assert_eq!(bytes[0], on_disk, "the one table is in level 0: {bytes:?}");
    db.close().unwrap();
}

#[test]
fn flush_leaves_out_versions_no_snapshot_can_see() {
    let fs = MemFs::new();
    let db = Db::open("/db", options(&fs)).unwrap();
    db.put(b"a", b"1").unwrap();
    db.put(b"a", b"2").unwrap();
    db.put(b"b", b"1").unwrap();
    db.put(b"c", b"1").unwrap();
    let snapshot = db.snapshot();
    db.put(b"a", b"3").unwrap();
    db.put(b"a", b"4").unwrap();
    db.delete(b"b").unwrap();
    db.put(b"d", b"1").unwrap();
    db.put(b"d", b"2").unwrap();
    db.flush().unwrap();
    let entries = |db: &Db| -> Vec<u64> {
        let version = db.current_version();
        version.files(0, 0).iter().map(|f| f.num_entries).collect()
    };
    // a: 4 (newest) and 2 (what the snapshot sees); b: the deletion (older data may lie below)
    // and the value the snapshot sees; c: 1; d: 2 alone.
    assert_eq!(entries(&db), [6]);
    let at_snapshot = ReadOptions {
        snapshot: Some(snapshot.clone()),
        ..ReadOptions::default()
    };
    let ks = db.default_keyspace();
    assert_eq!(
        ks.get_with(b"a", &at_snapshot).unwrap(),
        Some(b"2".to_vec())
    );
    assert_eq!(
        ks.get_with(b"b", &at_snapshot).unwrap(),
        Some(b"1".to_vec())
    );
    assert_eq!(ks.get_with(b"d", &at_snapshot).unwrap(), None);
    assert_eq!(db.get(b"a").unwrap(), Some(b"4".to_vec()));
    assert_eq!(db.get(b"b").unwrap(), None);
    assert_eq!(db.get(b"d").unwrap(), Some(b"2".to_vec()));

    // Without snapshots only the newest version of each key is written.
    drop(snapshot);
    for value in [b"5", b"6", b"7"] {
        db.put(b"a", value).unwrap();
    }
    db.delete(b"c").unwrap();
    db.flush().unwrap();
    assert_eq!(entries(&db), [2, 6], "newest table first");
    assert_eq!(db.get(b"a").unwrap(), Some(b"7".to_vec()));
    assert_eq!(db.get(b"c").unwrap(), None);
    db.close().unwrap();
    let db = Db::open("/db", options(&fs)).unwrap();
    assert_eq!(
        scan(&db),
        [
            (b"a".to_vec(), b"7".to_vec()),
            (b"d".to_vec(), b"2".to_vec())
        ]
    );
}

/// Whether every table file of the default keyspace has its open table pinned in its metadata.
fn pinned_files(db: &Db) -> (usize, usize) {
    let version = db.current_version();
    let files: Vec<_> = (0..shale_engine::DEFAULT_NUM_LEVELS)
        .flat_map(|level| {
            version
                .files(shale_engine::DEFAULT_KEYSPACE_ID, level)
                .to_vec()
        })
        .collect();
    let pinned = files.iter().filter(|f| f.pinned_table.is_open()).count();
    (pinned, files.len())
}

fn read_every_key(db: &Db, round: u32) {
    for i in 0..3000u32 {
        assert_eq!(
            db.get(format!("key{i:05}").as_bytes()).unwrap(),
            Some(format!("value{i}-{round}").into_bytes()),
            "key{i:05}"
        );
    }
}

#[test]
fn with_no_open_file_limit_lookups_pin_each_table_in_its_metadata() {
    let fs = MemFs::new();
    let unlimited = || Options {
        max_open_files: shale_engine::UNLIMITED_OPEN_FILES,
        // No compaction may replace the files between the reads and the checks.
        idle_compaction_after: None,
        ..options(&fs)
    };
    let put_round = |db: &Db, round: u32| {
        for i in 0..3000u32 {
            db.put(
                format!("key{i:05}").as_bytes(),
                format!("value{i}-{round}").as_bytes(),
            )
            .unwrap();
        }
        db.flush().unwrap();
        db.wait_for_background_work().unwrap();
    };
    let db = Db::open("/db", unlimited()).unwrap();
    put_round(&db, 0);
    let (pinned, files) = pinned_files(&db);
    assert!(files > 0);
    assert_eq!(pinned, 0, "nothing read yet");
    // The files hold disjoint ranges of one round's keys: reading every key opens each.
    read_every_key(&db, 0);
    assert_eq!(pinned_files(&db), (files, files));

    // Compacted into one sorted level, every key is in exactly one file: the reads pin them
    // all, and find the values of the newest round.
    put_round(&db, 1);
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();
    read_every_key(&db, 1);
    let (pinned, files) = pinned_files(&db);
    assert_eq!(pinned, files);
    db.close().unwrap();

    // An iterator opens every table of its read view once (for the range tombstones): that
    // pins them all, and a scan reads through the pins.
    let db = Db::open("/db", unlimited()).unwrap();
    assert_eq!(pinned_files(&db).0, 0);
    assert_eq!(scan(&db).len(), 3000);
    let (pinned, files) = pinned_files(&db);
    assert_eq!(pinned, files);
    db.close().unwrap();

    // With a limit the table cache alone holds open tables.
    let db = Db::open("/db", options(&fs)).unwrap();
    read_every_key(&db, 1);
    assert_eq!(scan(&db).len(), 3000);
    assert_eq!(pinned_files(&db).0, 0);
}
