//! Behaviour tests of the compaction reasons besides size (docs/compaction.md): tombstone
//! density, TTL (with an injected clock: expiry on read, drop by compaction, reopen), idle
//! compaction, and manual compaction in the background. The picker's choices are tested from
//! text shapes in `testdata/compaction/reasons.txt`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shale_engine::{
    Clock, Db, Keyspace, KeyspaceOptions, Options, ReadOptions, TransactionDb,
    TransactionDbOptions, TransactionOptions,
};
use shale_fs::{FileSystem, MemFs};
use shale_sst::Compression;

const DIR: &str = "/db";

/// A clock tests move by hand.
#[derive(Debug)]
struct TestClock(AtomicU64);

impl TestClock {
    fn new(now: u64) -> Arc<Self> {
        Arc::new(TestClock(AtomicU64::new(now)))
    }
    fn set(&self, now: u64) {
        self.0.store(now, Ordering::Relaxed);
    }
}

impl Clock for TestClock {
    fn now_seconds(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

fn small_keyspace() -> KeyspaceOptions {
    KeyspaceOptions {
        write_buffer_size: 1 << 20,
        compression: Compression::None,
        compression_per_level: Vec::new(),
        bottommost_compression: None,
        ..KeyspaceOptions::default()
    }
}

fn options(fs: Arc<dyn FileSystem>, keyspace: KeyspaceOptions, clock: Arc<TestClock>) -> Options {
    Options {
        file_system: fs,
        default_keyspace: keyspace,
        clock,
        idle_compaction_after: None,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn keys_of(ks: &Keyspace) -> Vec<Vec<u8>> {
    let mut iter = ks.iterator(ReadOptions::default()).unwrap();
    let mut keys = Vec::new();
    iter.seek_to_first();
    while iter.valid() {
        keys.push(iter.key().to_vec());
        iter.next();
    }
    iter.status().unwrap();
    keys
}

/// Entries in the keyspace's table files.
fn table_entries(db: &Db, ks: &Keyspace) -> u64 {
    let version = db.current_version();
    (0..version.num_levels())
        .flat_map(|level| version.files(ks.id(), level).to_vec())
        .map(|f| f.num_entries)
        .sum()
}

#[test]
fn a_flushed_file_dense_in_deletions_is_compacted_without_a_size_trigger() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let keyspace = KeyspaceOptions {
        tombstone_min_count: 100,
        ..small_keyspace()
    };
    let db = Db::open(DIR, options(fs, keyspace, TestClock::new(1000))).unwrap();
    let ks = db.default_keyspace();
    for i in 0..2000 {
        ks.put(&key(i), b"value").unwrap();
    }
    db.compact_range(&ks, None, None).unwrap();
    for i in 500..1500 {
        ks.delete(&key(i)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    let counts = db.level_file_counts(&ks).unwrap();
    assert_eq!(counts[0], 0, "the dense L0 file stayed: {counts:?}");
    let stats = db.stats();
    assert!(stats.tombstone_compactions >= 1, "{stats}");
    // At the bottom the tombstones went with what they deleted.
    assert_eq!(table_entries(&db, &ks), 1000);
    assert_eq!(keys_of(&ks).len(), 1000);
    db.close().unwrap();
}

#[test]
fn expired_entries_are_invisible_at_once_and_dropped_by_compaction() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let clock = TestClock::new(1000);
    let keyspace = KeyspaceOptions {
        ttl: Some(Duration::from_secs(100)),
        ..small_keyspace()
    };
    let db = Db::open(DIR, options(fs, keyspace, clock.clone())).unwrap();
    let ks = db.default_keyspace();
    ks.put(b"a", b"old").unwrap();
    ks.put(b"b", b"old").unwrap();
    assert_eq!(ks.get(b"a").unwrap().as_deref(), Some(&b"old"[..]));
    db.flush().unwrap();
    clock.set(1050);
    ks.put(b"c", b"young").unwrap();
    clock.set(1100);
    assert_eq!(
        ks.get(b"a").unwrap().as_deref(),
        Some(&b"old"[..]),
        "at the TTL"
    );
    clock.set(1101);
    assert_eq!(ks.get(b"a").unwrap(), None);
    let got = ks
        .multi_get(&[b"a", b"b", b"c"], &ReadOptions::default())
        .unwrap();
    assert_eq!(got, vec![None, None, Some(b"young".to_vec())]);
    assert_eq!(keys_of(&ks), vec![b"c".to_vec()]);
    let mut iter = ks.iterator(ReadOptions::default()).unwrap();
    iter.seek_to_last();
    assert_eq!((iter.key(), iter.value()), (&b"c"[..], &b"young"[..]));
    iter.prev();
    assert!(!iter.valid());
    iter.status().unwrap();

    // The file past the TTL is compacted with no size trigger; its expired entries go.
    db.flush().unwrap();
    clock.set(1200);
    ks.put(b"d", b"new").unwrap();
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    let stats = db.stats();
    assert!(stats.ttl_compactions >= 1, "{stats}");
    assert_eq!(table_entries(&db, &ks), 1, "only d is left");
    assert_eq!(keys_of(&ks), vec![b"d".to_vec()]);
    db.close().unwrap();
}

#[test]
fn an_expired_value_never_uncovers_an_older_version() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let clock = TestClock::new(1000);
    let keyspace = KeyspaceOptions {
        ttl: Some(Duration::from_secs(100)),
        ..small_keyspace()
    };
    let db = Db::open(DIR, options(fs, keyspace, clock.clone())).unwrap();
    let ks = db.default_keyspace();
    ks.put(b"k", b"v1").unwrap();
    db.compact_range(&ks, None, None).unwrap();
    clock.set(1050);
    ks.put(b"k", b"v2").unwrap();
    db.flush().unwrap();
    // Compact v2 into an upper level only: v1 at the bottom stays below it.
    clock.set(1140);
    assert_eq!(ks.get(b"k").unwrap().as_deref(), Some(&b"v2"[..]));
    clock.set(1151);
    assert_eq!(ks.get(b"k").unwrap(), None);
    // Compaction turns expired v2 into a deletion (or drops it with v1 at the bottom).
    db.compact_range(&ks, None, None).unwrap();
    assert_eq!(ks.get(b"k").unwrap(), None);
    assert!(keys_of(&ks).is_empty());
    clock.set(1000);
    // Even with the clock back, nothing of k is left to show.
    assert_eq!(ks.get(b"k").unwrap(), None);
    db.close().unwrap();
}

#[test]
fn reopening_keeps_ttl_and_refuses_turning_it_on_or_off() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let clock = TestClock::new(1000);
    let ttl = KeyspaceOptions {
        ttl: Some(Duration::from_secs(100)),
        ..small_keyspace()
    };
    {
        let db = Db::open(DIR, options(fs.clone(), ttl.clone(), clock.clone())).unwrap();
        let named = db.create_keyspace("named", ttl.clone()).unwrap();
        db.default_keyspace().put(b"a", b"1").unwrap();
        named.put(b"n", b"2").unwrap();
        db.close().unwrap();
    }
    let message = Db::open(DIR, options(fs.clone(), small_keyspace(), clock.clone()))
        .unwrap_err()
        .to_string();
    assert!(message.contains("TTL"), "{message}");
    let db = Db::open(DIR, options(fs.clone(), ttl, clock.clone())).unwrap();
    let named = db.keyspace("named").unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(named.get(b"n").unwrap().as_deref(), Some(&b"2"[..]));
    clock.set(1101);
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(named.get(b"n").unwrap(), None);
    db.close().unwrap();

    let plain_fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    Db::open(
        DIR,
        options(plain_fs.clone(), small_keyspace(), clock.clone()),
    )
    .unwrap()
    .close()
    .unwrap();
    let on = KeyspaceOptions {
        ttl: Some(Duration::from_secs(5)),
        ..small_keyspace()
    };
    let message = Db::open(DIR, options(plain_fs, on, clock))
        .unwrap_err()
        .to_string();
    assert!(message.contains("without a TTL"), "{message}");
}

#[test]
fn idle_compaction_flushes_and_empties_l0_when_only_reads_go_on() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let mut options = options(fs, small_keyspace(), TestClock::new(1000));
    options.idle_compaction_after = Some(Duration::from_millis(100));
    let db = Db::open(DIR, options).unwrap();
    let ks = db.default_keyspace();
    for i in 0..100 {
        ks.put(&key(i), b"flushed").unwrap();
    }
    db.flush().unwrap();
    for i in 100..200 {
        ks.put(&key(i), b"in the memtable").unwrap();
    }
    assert_eq!(db.level_file_counts(&ks).unwrap()[0], 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert_eq!(
            ks.get(&key(150)).unwrap().as_deref(),
            Some(&b"in the memtable"[..])
        );
        let counts = db.level_file_counts(&ks).unwrap();
        if counts[0] == 0 && db.stats().idle_compactions > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "no idle compaction: {counts:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Both the L0 file and the memtable went down.
    assert_eq!(table_entries(&db, &ks), 200);
    assert_eq!(keys_of(&ks).len(), 200);
    db.close().unwrap();
}

#[test]
fn manual_compaction_runs_in_the_background_and_can_be_waited_for() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = Db::open(DIR, options(fs, small_keyspace(), TestClock::new(1000))).unwrap();
    let ks = db.default_keyspace();
    for round in 0..3 {
        for i in 0..300 {
            ks.put(&key(i), format!("round {round}").as_bytes())
                .unwrap();
        }
        db.flush().unwrap();
    }
    assert_eq!(db.level_file_counts(&ks).unwrap()[0], 3);
    let running = db.compact_range_in_background(&ks, None, None).unwrap();
    running.wait().unwrap();
    assert_eq!(db.level_file_counts(&ks).unwrap()[0], 0);
    assert_eq!(table_entries(&db, &ks), 300, "shadowed versions are gone");
    assert!(db.stats().manual_compactions >= 1);
    // One left running is stopped, and joined, by close.
    ks.put(b"x", b"y").unwrap();
    let running = db.compact_range_in_background(&ks, None, None).unwrap();
    db.close().unwrap();
    assert!(running.is_finished());
    let _ = running.wait();
}

#[test]
fn a_seek_over_many_tombstones_flushes_the_memtable_so_they_are_compacted_away() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let keyspace = KeyspaceOptions {
        tombstone_min_count: 100,
        tombstone_scan_flush_trigger: 1000,
        ..small_keyspace()
    };
    let db = Db::open(DIR, options(fs, keyspace, TestClock::new(1000))).unwrap();
    let ks = db.default_keyspace();
    for i in 0..4000 {
        ks.put(&key(i), b"value").unwrap();
    }
    db.compact_range(&ks, None, None).unwrap();
    for i in 1000..3000 {
        ks.delete(&key(i)).unwrap();
    }
    // A short skip (200 tombstones and the 200 values they hide) asks for nothing.
    let mut iter = ks.iterator(ReadOptions::default()).unwrap();
    iter.seek(&key(2800));
    assert_eq!(iter.key(), &key(3000)[..]);
    db.wait_for_background_work().unwrap();
    assert_eq!(db.stats().tombstone_scan_flushes, 0);
    assert_eq!(db.level_file_counts(&ks).unwrap()[0], 0);
    // Skipping 2000 tombstones (and 2000 values) freezes the memtable; the flushed file is
    // dense in deletions. The second seek finds a new active memtable and asks nothing.
    iter.seek(&key(1000));
    assert_eq!(iter.key(), &key(3000)[..]);
    iter.seek(&key(1000));
    db.wait_for_background_work().unwrap();
    let stats = db.stats();
    assert_eq!(stats.tombstone_scan_flushes, 1, "{stats}");
    assert!(stats.tombstone_compactions >= 1, "{stats}");
    assert_eq!(db.level_file_counts(&ks).unwrap()[0], 0);
    assert_eq!(table_entries(&db, &ks), 2000);
    let mut fresh = ks.iterator(ReadOptions::default()).unwrap();
    fresh.seek(&key(1000));
    assert_eq!(fresh.key(), &key(3000)[..]);
    db.close().unwrap();
}

#[test]
fn transactions_read_ttl_values_without_their_write_time_and_not_once_expired() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let clock = TestClock::new(1000);
    let keyspace = KeyspaceOptions {
        ttl: Some(Duration::from_secs(100)),
        ..small_keyspace()
    };
    let db = TransactionDb::open(
        DIR,
        options(fs, keyspace, clock.clone()),
        TransactionDbOptions::default(),
    )
    .unwrap();
    let mut writer = db.begin(TransactionOptions::default()).unwrap();
    writer.put(b"a", b"1").unwrap();
    assert_eq!(writer.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    writer.commit().unwrap();
    let mut reader = db.begin(TransactionOptions::default()).unwrap();
    assert_eq!(reader.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(
        reader.get_for_update(b"a").unwrap().as_deref(),
        Some(&b"1"[..])
    );
    let mut iter = reader.iterator(ReadOptions::default()).unwrap();
    iter.seek_to_first();
    assert_eq!((iter.key(), iter.value()), (&b"a"[..], &b"1"[..]));
    drop(iter);
    reader.commit().unwrap();
    clock.set(1101);
    let mut late = db.begin(TransactionOptions::default()).unwrap();
    assert_eq!(late.get(b"a").unwrap(), None);
    late.commit().unwrap();
}
