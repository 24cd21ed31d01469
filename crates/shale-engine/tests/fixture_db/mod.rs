//! A small database with tables in more than one level, two keyspaces and unflushed writes in
//! the WAL, on a `MemFs`, with the history of every key so damage tests can tell an old value
//! (allowed where a WAL tail is lost, or a newer table is) from a wrong one.

#![allow(dead_code)] // Each test binary uses a different subset.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use shale_engine::{Db, Durability, Options, ReadOptions};
use shale_fs::{CrashMode, FileSystem, MemFs};

pub const DIR: &str = "/db";
pub const OTHER_KEYSPACE: &str = "orders";

/// A key of one keyspace: (keyspace name, user key).
pub type Entry = (String, Vec<u8>);

/// What reading every key found: its value, or `None` when absent.
pub type Seen = BTreeMap<Entry, Option<Vec<u8>>>;

/// Every value a key ever had (`None`: absent), oldest first, per keyspace name.
#[derive(Debug, Clone, Default)]
pub struct History {
    pub keys: BTreeMap<Entry, Vec<Option<Vec<u8>>>>,
    /// Keys whose last change is only in the WAL.
    pub in_wal: BTreeSet<Entry>,
}

impl History {
    fn record(&mut self, keyspace: &str, key: &[u8], value: Option<Vec<u8>>) {
        let versions = self
            .keys
            .entry((keyspace.to_owned(), key.to_vec()))
            .or_insert_with(|| vec![None]);
        versions.push(value);
    }

    /// The value a key must have when nothing was lost.
    pub fn latest(&self, keyspace: &str, key: &[u8]) -> Option<Vec<u8>> {
        self.keys
            .get(&(keyspace.to_owned(), key.to_vec()))
            .and_then(|v| v.last().cloned().flatten())
    }

    /// Whether `value` is some value the key once had (or absent, before its first write).
    pub fn ever(&self, keyspace: &str, key: &[u8], value: Option<&[u8]>) -> bool {
        self.keys
            .get(&(keyspace.to_owned(), key.to_vec()))
            .is_some_and(|v| v.iter().any(|x| x.as_deref() == value))
    }
}

pub fn options(fs: &MemFs) -> Options {
    let mut options = Options {
        durability: Durability::Sync,
        file_system: Arc::new(fs.clone()),
        ..Options::default()
    };
    // Small blocks so a table has many; no flush but the explicit ones.
    options.default_keyspace.block_size = 512;
    options.default_keyspace.write_buffer_size = 64 << 20;
    options
}

pub fn key(i: usize) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

pub fn value(round: &str, i: usize) -> Vec<u8> {
    format!("{round}-{i:04}-{}", "x".repeat(40 + i % 13)).into_bytes()
}

/// Builds the database and returns the crash image of it (every write synced) with the
/// history of its keys:
/// - `default`: key0000..0299 = v1 flushed and compacted to the bottom level; then
///   key0000..0119 = v2 (every 10th deleted) flushed to L0; then key0200..0239 = v3 only in
///   the WAL.
/// - `orders`: key0000..0059 flushed to L0; key0060..0079 only in the WAL.
pub fn build() -> (MemFs, History) {
    let fs = MemFs::new();
    let mut history = History::default();
    let db = Db::open(DIR, options(&fs)).unwrap();
    let orders = db
        .create_keyspace(OTHER_KEYSPACE, options(&fs).default_keyspace)
        .unwrap();
    for i in 0..300 {
        db.put(&key(i), &value("v1", i)).unwrap();
        history.record("default", &key(i), Some(value("v1", i)));
    }
    db.flush().unwrap();
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();
    for i in 0..120 {
        if i % 10 == 0 {
            db.delete(&key(i)).unwrap();
            history.record("default", &key(i), None);
        } else {
            db.put(&key(i), &value("v2", i)).unwrap();
            history.record("default", &key(i), Some(value("v2", i)));
        }
    }
    for i in 0..60 {
        orders.put(&key(i), &value("o1", i)).unwrap();
        history.record(OTHER_KEYSPACE, &key(i), Some(value("o1", i)));
    }
    db.flush().unwrap();
    for i in 200..240 {
        db.put(&key(i), &value("v3", i)).unwrap();
        history.record("default", &key(i), Some(value("v3", i)));
        history.in_wal.insert(("default".to_owned(), key(i)));
    }
    for i in 60..80 {
        orders.put(&key(i), &value("o2", i)).unwrap();
        history.record(OTHER_KEYSPACE, &key(i), Some(value("o2", i)));
        history.in_wal.insert((OTHER_KEYSPACE.to_owned(), key(i)));
    }
    let counts = db.level_file_counts(&db.default_keyspace()).unwrap();
    assert!(counts[0] >= 1, "an L0 table: {counts:?}");
    assert!(
        counts[1..].iter().sum::<usize>() >= 1,
        "a deeper table: {counts:?}"
    );
    let image = fs.crash_image(CrashMode::DropUnsynced);
    drop(db);
    (image, history)
}

/// A copy of `fs` (its durable state).
pub fn copy(fs: &MemFs) -> MemFs {
    fs.crash_image(CrashMode::DropUnsynced)
}

/// The database's files, sorted by name (directories left out).
pub fn files(fs: &MemFs) -> Vec<String> {
    let mut names: Vec<String> = fs
        .list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| fs.file_contents(Path::new(DIR).join(n)).is_ok())
        .filter(|n| n != "LOCK")
        .collect();
    names.sort();
    names
}

/// Reads every key of the history from `db` with gets and with an iterator over each
/// keyspace; returns the values seen, or the first error (as text).
pub fn read_all(db: &Db, history: &History) -> Result<Seen, shale_engine::Error> {
    let mut seen = BTreeMap::new();
    for (keyspace, key) in history.keys.keys() {
        let handle = db.keyspace(keyspace).expect("keyspace exists");
        seen.insert((keyspace.clone(), key.clone()), handle.get(key)?);
    }
    for name in db.keyspace_names() {
        let handle = db.keyspace(&name).expect("keyspace exists");
        let mut iter = handle.iterator(ReadOptions::default())?;
        iter.seek_to_first();
        let mut listed = BTreeSet::new();
        while iter.valid() {
            let entry = (name.clone(), iter.key().to_vec());
            let got = Some(iter.value().to_vec());
            assert_eq!(
                seen.get(&entry),
                Some(&got),
                "iterator and get disagree on {:?}",
                String::from_utf8_lossy(iter.key())
            );
            listed.insert(entry);
            iter.next();
        }
        iter.status()?;
        for (entry, value) in &seen {
            if entry.0 == name && value.is_some() {
                assert!(
                    listed.contains(entry),
                    "get finds {:?} but the iterator skips it",
                    String::from_utf8_lossy(&entry.1)
                );
            }
        }
    }
    Ok(seen)
}
