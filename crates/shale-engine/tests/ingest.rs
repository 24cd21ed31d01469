//! Bulk ingestion: external tables from `TableFileWriter` placed by `Db::ingest` at one new
//! sequence number, atomically across files and keyspaces (docs/operations.md, "Bulk
//! ingestion").

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_engine::{
    Db, Error, IngestArg, IngestOptions, Keyspace, KeyspaceOptions, Options, ReadOptions,
    TableFileWriter, DEFAULT_NUM_LEVELS,
};
use shale_fs::{FaultError, FaultFs, FaultRule, FaultTrigger, FileSystem, MemFs, OpKind};
use shale_sst::{TableWriter, ValueKind, WriterOptions};

const DB: &str = "/db";
const BOTTOM: usize = DEFAULT_NUM_LEVELS - 1;

fn options(fs: Arc<dyn FileSystem>) -> Options {
    Options {
        file_system: fs,
        ..Options::default()
    }
}

fn open(fs: &Arc<dyn FileSystem>) -> Db {
    Db::open(DB, options(fs.clone())).unwrap()
}

enum Op<'a> {
    Put(&'a str, &'a str),
    Delete(&'a str),
    DeleteRange(&'a str, &'a str),
}

/// Writes an external table at `path` for a keyspace with default options.
fn external(fs: &Arc<dyn FileSystem>, path: &str, ops: &[Op<'_>]) -> PathBuf {
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let mut writer =
        TableFileWriter::create(path, &options(fs.clone()), &KeyspaceOptions::default()).unwrap();
    for op in ops {
        match op {
            Op::Put(k, v) => writer.put(k.as_bytes(), v.as_bytes()).unwrap(),
            Op::Delete(k) => writer.delete(k.as_bytes()).unwrap(),
            Op::DeleteRange(s, e) => writer.delete_range(s.as_bytes(), e.as_bytes()).unwrap(),
        }
    }
    writer.finish().unwrap();
    PathBuf::from(path)
}

fn arg(keyspace: &Keyspace, files: &[&PathBuf]) -> IngestArg {
    IngestArg {
        keyspace: keyspace.clone(),
        files: files.iter().map(|p| (*p).clone()).collect(),
    }
}

fn get(keyspace: &Keyspace, key: &str) -> Option<String> {
    keyspace
        .get(key.as_bytes())
        .unwrap()
        .map(|v| String::from_utf8(v).unwrap())
}

fn scan(keyspace: &Keyspace, read: ReadOptions) -> Vec<(String, String)> {
    let mut iter = keyspace.iterator(read).unwrap();
    let mut out = Vec::new();
    iter.seek_to_first();
    while iter.valid() {
        out.push((
            String::from_utf8(iter.key().to_vec()).unwrap(),
            String::from_utf8(iter.value().to_vec()).unwrap(),
        ));
        iter.next();
    }
    iter.status().unwrap();
    out
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn table_files(fs: &Arc<dyn FileSystem>) -> Vec<String> {
    fs.list(Path::new(DB))
        .unwrap()
        .into_iter()
        .filter(|n| Path::new(n).extension().is_some_and(|e| e == "sst"))
        .collect()
}

#[test]
fn ingest_into_an_empty_db_lands_in_the_bottommost_level() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = open(&fs);
    let file = external(&fs, "/ext/a.sst", &[Op::Put("a", "1"), Op::Put("b", "2")]);
    let placed = db
        .ingest(
            &[arg(&db.default_keyspace(), &[&file])],
            IngestOptions::default(),
        )
        .unwrap();
    assert_eq!(placed.len(), 1);
    assert_eq!(placed[0].level, BOTTOM);
    assert_eq!(placed[0].global_seqno, 1);
    assert_eq!(db.latest_seqno(), 1);
    let counts = db.level_file_counts(&db.default_keyspace()).unwrap();
    assert_eq!(counts[BOTTOM], 1, "{counts:?}");
    let ks = db.default_keyspace();
    assert_eq!(get(&ks, "a").as_deref(), Some("1"));
    assert_eq!(
        scan(&ks, ReadOptions::default()),
        pairs(&[("a", "1"), ("b", "2")])
    );
    // The source stays (it was copied).
    assert!(fs.exists(&file).unwrap());
}

#[test]
fn ingested_data_wins_over_older_data_and_loses_to_later_writes() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = open(&fs);
    let ks = db.default_keyspace();
    for key in ["a", "b", "c", "d"] {
        ks.put(key.as_bytes(), b"table").unwrap();
    }
    db.compact_range(&ks, None, None).unwrap();
    // In the memtable: overlapping the file, so it is flushed before the file is placed.
    ks.put(b"b", b"memtable").unwrap();
    ks.put(b"z", b"memtable").unwrap();
    let file = external(
        &fs,
        "/ext/a.sst",
        &[
            Op::Put("a", "ingested"),
            Op::Delete("b"),
            Op::Put("e", "ingested"),
        ],
    );
    let placed = db
        .ingest(&[arg(&ks, &[&file])], IngestOptions::default())
        .unwrap();
    // The flushed memtable is in L0 and overlaps the file, so the file goes to L0 too.
    assert_eq!(placed[0].level, 0);
    ks.put(b"e", b"later").unwrap();
    let expected = pairs(&[
        ("a", "ingested"),
        ("c", "table"),
        ("d", "table"),
        ("e", "later"),
        ("z", "memtable"),
    ]);
    assert_eq!(scan(&ks, ReadOptions::default()), expected);
    assert_eq!(get(&ks, "b"), None);
    assert_eq!(get(&ks, "e").as_deref(), Some("later"));
    // Compaction keeps the order (the file's entries carry the global seqno).
    db.compact_range(&ks, None, None).unwrap();
    assert_eq!(scan(&ks, ReadOptions::default()), expected);
    assert_eq!(get(&ks, "b"), None);
}

#[test]
fn a_file_goes_to_the_deepest_level_that_does_not_overlap_it() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = open(&fs);
    let ks = db.default_keyspace();
    ks.put(b"m", b"old").unwrap();
    db.compact_range(&ks, None, None).unwrap();
    assert_eq!(db.level_file_counts(&ks).unwrap()[BOTTOM], 1);
    let over = external(
        &fs,
        "/ext/over.sst",
        &[Op::Put("a", "1"), Op::Put("z", "1")],
    );
    let beside = external(
        &fs,
        "/ext/beside.sst",
        &[Op::Put("n", "1"), Op::Put("p", "1")],
    );
    let placed = db
        .ingest(&[arg(&ks, &[&over])], IngestOptions::default())
        .unwrap();
    assert_eq!(
        placed[0].level,
        BOTTOM - 1,
        "overlaps m in the bottommost level"
    );
    let placed = db
        .ingest(&[arg(&ks, &[&beside])], IngestOptions::default())
        .unwrap();
    assert_eq!(
        placed[0].level,
        BOTTOM - 2,
        "overlaps the first file above m"
    );
    assert_eq!(get(&ks, "m").as_deref(), Some("old"));
    assert_eq!(get(&ks, "z").as_deref(), Some("1"));
}

#[test]
fn snapshots_taken_before_the_ingestion_do_not_see_it() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = open(&fs);
    let ks = db.default_keyspace();
    ks.put(b"a", b"old").unwrap();
    db.flush().unwrap();
    let before = db.snapshot();
    let file = external(
        &fs,
        "/ext/a.sst",
        &[Op::Put("a", "new"), Op::Put("b", "new")],
    );
    db.ingest(&[arg(&ks, &[&file])], IngestOptions::default())
        .unwrap();
    let at_before = || ReadOptions {
        snapshot: Some(before.clone()),
        ..ReadOptions::default()
    };
    let old = pairs(&[("a", "old")]);
    assert_eq!(scan(&ks, at_before()), old);
    assert_eq!(ks.get_with(b"b", &at_before()).unwrap(), None);
    assert_eq!(get(&ks, "a").as_deref(), Some("new"));
    // Compaction must keep the version the snapshot sees.
    db.compact_range(&ks, None, None).unwrap();
    assert_eq!(scan(&ks, at_before()), old);
    assert_eq!(
        scan(&ks, ReadOptions::default()),
        pairs(&[("a", "new"), ("b", "new")])
    );
}

#[test]
fn range_deletions_in_a_file_hide_older_data() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = open(&fs);
    let ks = db.default_keyspace();
    for key in ["a", "b", "c", "d"] {
        ks.put(key.as_bytes(), b"old").unwrap();
    }
    db.flush().unwrap();
    let file = external(
        &fs,
        "/ext/a.sst",
        &[Op::Put("c", "new"), Op::DeleteRange("b", "d")],
    );
    db.ingest(&[arg(&ks, &[&file])], IngestOptions::default())
        .unwrap();
    // The tombstone and the put share the global seqno: the put is not covered.
    assert_eq!(
        scan(&ks, ReadOptions::default()),
        pairs(&[("a", "old"), ("c", "new"), ("d", "old")])
    );
    assert_eq!(get(&ks, "c").as_deref(), Some("new"));
    assert_eq!(get(&ks, "b"), None);
    // A file of range deletions only, checked with and without reading every block.
    for (i, verify) in [false, true].into_iter().enumerate() {
        let only = external(
            &fs,
            &format!("/ext/only-{i}.sst"),
            &[Op::DeleteRange("a", "b")],
        );
        let options = IngestOptions {
            verify_checksums_before_ingest: verify,
            ..IngestOptions::default()
        };
        db.ingest(&[arg(&ks, &[&only])], options).unwrap();
    }
    assert_eq!(get(&ks, "a"), None);
    assert_eq!(get(&ks, "d").as_deref(), Some("old"));
}

#[test]
fn reopen_keeps_ingested_files_and_later_writes_stay_newer() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = open(&fs);
    let users = db
        .create_keyspace("users", KeyspaceOptions::default())
        .unwrap();
    db.default_keyspace().put(b"x", b"1").unwrap();
    let a = external(&fs, "/ext/a.sst", &[Op::Put("k", "default")]);
    let b = external(&fs, "/ext/b.sst", &[Op::Put("k", "users")]);
    let placed = db
        .ingest(
            &[arg(&db.default_keyspace(), &[&a]), arg(&users, &[&b])],
            IngestOptions {
                move_files: true,
                ..IngestOptions::default()
            },
        )
        .unwrap();
    assert_eq!(placed[0].global_seqno, placed[1].global_seqno);
    // Moved files are hard links: the caller may delete its names.
    fs.remove(&a).unwrap();
    fs.remove(&b).unwrap();
    db.close().unwrap();
    let db = open(&fs);
    let users = db.keyspace("users").unwrap();
    assert_eq!(get(&db.default_keyspace(), "k").as_deref(), Some("default"));
    assert_eq!(get(&users, "k").as_deref(), Some("users"));
    assert_eq!(get(&db.default_keyspace(), "x").as_deref(), Some("1"));
    users.put(b"k", b"after reopen").unwrap();
    assert_eq!(get(&users, "k").as_deref(), Some("after reopen"));
    db.close().unwrap();
    let db = open(&fs);
    let users = db.keyspace("users").unwrap();
    assert_eq!(get(&users, "k").as_deref(), Some("after reopen"));
}

/// The copy of the second keyspace's file fails: neither keyspace sees anything, no file is
/// left in the database directory, and a reopen agrees.
#[test]
fn a_failure_midway_ingests_nothing_in_any_keyspace() {
    let mem = MemFs::new();
    let fault = Arc::new(FaultFs::new(Arc::new(mem.clone())));
    let fs: Arc<dyn FileSystem> = fault.clone();
    let db = open(&fs);
    let users = db
        .create_keyspace("users", KeyspaceOptions::default())
        .unwrap();
    let a = external(&fs, "/ext/a.sst", &[Op::Put("k", "default")]);
    let b = external(&fs, "/ext/b.sst", &[Op::Put("k", "users")]);
    let before = table_files(&fs);
    fault.add_rule(
        FaultRule::new(OpKind::Append, FaultTrigger::Nth(2), FaultError::NoSpace)
            .path_contains("/db/"),
    );
    let error = db
        .ingest(
            &[arg(&db.default_keyspace(), &[&a]), arg(&users, &[&b])],
            IngestOptions::default(),
        )
        .unwrap_err();
    assert!(matches!(error, Error::Io(_)), "{error}");
    fault.clear_rules();
    assert_eq!(get(&db.default_keyspace(), "k"), None);
    assert_eq!(get(&users, "k"), None);
    assert_eq!(table_files(&fs), before, "copied files are removed");
    // The database goes on: a retry succeeds.
    db.ingest(
        &[arg(&db.default_keyspace(), &[&a]), arg(&users, &[&b])],
        IngestOptions::default(),
    )
    .unwrap();
    assert_eq!(get(&users, "k").as_deref(), Some("users"));
    db.close().unwrap();
    let db = open(&fs);
    assert_eq!(
        get(&db.keyspace("users").unwrap(), "k").as_deref(),
        Some("users")
    );
}

/// The MANIFEST write fails: writes pause (the roll fails too while the fault lasts) and
/// after reopen nothing was ingested.
#[test]
fn a_failed_manifest_write_ingests_nothing_after_reopen() {
    let mem = MemFs::new();
    let fault = Arc::new(FaultFs::new(Arc::new(mem.clone())));
    let fs: Arc<dyn FileSystem> = fault.clone();
    let db = open(&fs);
    let users = db
        .create_keyspace("users", KeyspaceOptions::default())
        .unwrap();
    let a = external(&fs, "/ext/a.sst", &[Op::Put("k", "default")]);
    let b = external(&fs, "/ext/b.sst", &[Op::Put("k", "users")]);
    fault.add_rule(
        FaultRule::new(OpKind::Append, FaultTrigger::Always, FaultError::Eio)
            .path_contains("MANIFEST"),
    );
    let error = db
        .ingest(
            &[arg(&db.default_keyspace(), &[&a]), arg(&users, &[&b])],
            IngestOptions::default(),
        )
        .unwrap_err();
    assert!(
        error.to_string().contains("MANIFEST") || matches!(error, Error::Io(_)),
        "{error}"
    );
    assert_eq!(get(&users, "k"), None);
    assert!(
        db.default_keyspace().put(b"x", b"1").is_err(),
        "writes are paused"
    );
    // Once the MANIFEST is rolled, the copies the failed edit left in doubt go without a
    // reopen.
    fault.clear_rules();
    db.resume().unwrap();
    db.wait_for_background_work().unwrap();
    assert!(table_files(&fs).is_empty(), "{:?}", table_files(&fs));
    drop(db);
    let db = open(&fs);
    assert_eq!(get(&db.default_keyspace(), "k"), None);
    assert_eq!(get(&db.keyspace("users").unwrap(), "k"), None);
    // The orphaned copies were deleted by the open.
    assert!(table_files(&fs).is_empty(), "{:?}", table_files(&fs));
}

#[test]
fn out_of_order_and_repeated_keys_are_refused_by_the_writer() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let mut writer = TableFileWriter::create(
        "/ext/a.sst",
        &options(fs.clone()),
        &KeyspaceOptions::default(),
    )
    .unwrap();
    writer.put(b"b", b"1").unwrap();
    let message = writer.put(b"a", b"1").unwrap_err().to_string();
    assert!(
        message.contains("\"a\"") || message.contains('a'),
        "{message}"
    );
    assert!(message.contains("is below the previous key"), "{message}");
    let message = writer.delete(b"b").unwrap_err().to_string();
    assert!(message.contains("repeats the previous key"), "{message}");
    let message = writer.delete_range(b"z", b"c").unwrap_err().to_string();
    assert!(message.contains("empty or reversed"), "{message}");
    let empty = TableFileWriter::create(
        "/ext/e.sst",
        &options(fs.clone()),
        &KeyspaceOptions::default(),
    )
    .unwrap();
    assert!(empty.finish().unwrap_err().to_string().contains("empty"));
}

fn write_raw(
    fs: &Arc<dyn FileSystem>,
    path: &str,
    external: bool,
    entries: &[(&str, u64, ValueKind)],
) -> PathBuf {
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let options = WriterOptions {
        external_file: external,
        ..WriterOptions::default()
    };
    let mut writer = TableWriter::create(&**fs, Path::new(path), options).unwrap();
    for (key, seqno, kind) in entries {
        writer
            .add_entry(key.as_bytes(), *seqno, *kind, b"v")
            .unwrap();
    }
    writer.finish().unwrap();
    PathBuf::from(path)
}

fn refused(db: &Db, files: &[&PathBuf]) -> String {
    let error = db
        .ingest(
            &[arg(&db.default_keyspace(), files)],
            IngestOptions::default(),
        )
        .unwrap_err();
    error.to_string()
}

const VERIFY: IngestOptions = IngestOptions {
    move_files: false,
    verify_checksums_before_ingest: true,
};

#[test]
fn bad_files_are_refused_with_clear_errors() {
    let mem = MemFs::new();
    let fs: Arc<dyn FileSystem> = Arc::new(mem.clone());
    let db = open(&fs);
    let not_external = write_raw(&fs, "/ext/plain.sst", false, &[("a", 0, ValueKind::Value)]);
    assert!(refused(&db, &[&not_external]).contains("not an external table"));
    let with_seqnos = write_raw(&fs, "/ext/seqno.sst", true, &[("a", 7, ValueKind::Value)]);
    assert!(refused(&db, &[&with_seqnos]).contains("seqno 7"));
    let repeated = write_raw(
        &fs,
        "/ext/repeated.sst",
        true,
        &[("a", 0, ValueKind::Value), ("a", 0, ValueKind::Deletion)],
    );
    // A repeated key in the middle of a file is seen only by reading every entry.
    let message = db
        .ingest(&[arg(&db.default_keyspace(), &[&repeated])], VERIFY)
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("does not sort above the previous key"),
        "{message}"
    );
    let one = external(&fs, "/ext/one.sst", &[Op::Put("a", "1"), Op::Put("m", "1")]);
    let two = external(&fs, "/ext/two.sst", &[Op::Put("k", "1"), Op::Put("z", "1")]);
    let message = refused(&db, &[&one, &two]);
    assert!(message.contains("overlap"), "{message}");
    let corrupt = external(
        &fs,
        "/ext/corrupt.sst",
        &[Op::Put("a", "1"), Op::Put("b", "2")],
    );
    mem.corrupt_for_test(&corrupt, 3, 0x40).unwrap();
    let error = db
        .ingest(
            &[arg(&db.default_keyspace(), &[&corrupt])],
            IngestOptions::default(),
        )
        .unwrap_err();
    assert!(error.is_corruption(), "{error}");
    assert!(error.to_string().contains("corrupt.sst"), "{error}");
    let missing = PathBuf::from("/ext/missing.sst");
    assert!(db
        .ingest(
            &[arg(&db.default_keyspace(), &[&missing])],
            IngestOptions::default()
        )
        .is_err());
    // Nothing was ingested or left behind, and the database still works.
    assert!(table_files(&fs).is_empty());
    assert_eq!(
        scan(&db.default_keyspace(), ReadOptions::default()),
        Vec::new()
    );
    db.put(b"a", b"2").unwrap();
}

/// An external table of `n` keys `k000000..` with 100-byte values: many data blocks.
fn big_external(fs: &Arc<dyn FileSystem>, path: &str, n: usize) -> PathBuf {
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let mut writer =
        TableFileWriter::create(path, &options(fs.clone()), &KeyspaceOptions::default()).unwrap();
    for i in 0..n {
        writer
            .put(format!("k{i:06}").as_bytes(), &[b'v'; 100])
            .unwrap();
    }
    writer.finish().unwrap();
    PathBuf::from(path)
}

/// The blocks of the table at `path`, in file order.
fn blocks(fs: &Arc<dyn FileSystem>, path: &Path) -> Vec<shale_sst::BlockInfo> {
    shale_sst::Table::open(&**fs, path, &shale_sst::TableOpenOptions::default())
        .unwrap()
        .layout()
        .unwrap()
        .blocks
}

/// A damaged data block in the middle of a file is caught before ingestion only with
/// `verify_checksums_before_ingest`; without it the file goes in, and the damage is reported
/// by the first read of that block, never returned as data.
#[test]
fn a_corrupt_middle_data_block_is_caught_with_verify_checksums_before_ingest() {
    let mem = MemFs::new();
    let fs: Arc<dyn FileSystem> = Arc::new(mem.clone());
    let db = open(&fs);
    let path = big_external(&fs, "/ext/big.sst", 2000);
    let data: Vec<_> = blocks(&fs, &path)
        .into_iter()
        .filter(|b| b.kind == shale_sst::BlockKind::Data)
        .collect();
    assert!(data.len() >= 10, "{} data blocks", data.len());
    let middle = &data[data.len() / 2];
    mem.corrupt_for_test(&path, middle.handle.offset + 10, 0x40)
        .unwrap();

    let error = db
        .ingest(&[arg(&db.default_keyspace(), &[&path])], VERIFY)
        .unwrap_err();
    assert!(error.is_corruption(), "{error}");
    assert!(error.to_string().contains("big.sst"), "{error}");
    assert!(table_files(&fs).is_empty());

    db.ingest(
        &[arg(&db.default_keyspace(), &[&path])],
        IngestOptions::default(),
    )
    .unwrap();
    let keyspace = db.default_keyspace();
    assert_eq!(
        get(&keyspace, "k000000").as_deref(),
        Some(&"v".repeat(100)[..])
    );
    assert_eq!(
        get(&keyspace, "k001999").as_deref(),
        Some(&"v".repeat(100)[..])
    );
    let damaged = user_key_of(middle.first_key.as_deref().unwrap());
    let error = keyspace.get(damaged.as_bytes()).unwrap_err();
    assert!(error.is_corruption(), "{error}");
}

/// The user key of an encoded internal key (the last 8 bytes are the trailer).
fn user_key_of(internal_key: &[u8]) -> String {
    String::from_utf8(internal_key[..internal_key.len() - 8].to_vec()).unwrap()
}

/// Damage to what ingestion always reads (footer, properties, index, filter, first and last
/// data blocks) refuses the file with the default options, naming it.
#[test]
fn a_corrupt_footer_or_meta_block_is_caught_without_verification() {
    let mem = MemFs::new();
    let fs: Arc<dyn FileSystem> = Arc::new(mem.clone());
    let db = open(&fs);
    let probe = big_external(&fs, "/ext/probe.sst", 2000);
    let layout = blocks(&fs, &probe);
    let file_size = fs.size(&probe).unwrap();
    let first_data = layout
        .iter()
        .find(|b| b.kind == shale_sst::BlockKind::Data)
        .unwrap();
    let last_data = layout
        .iter()
        .rev()
        .find(|b| b.kind == shale_sst::BlockKind::Data)
        .unwrap();
    let at = |kind| {
        layout
            .iter()
            .find(|b| b.kind == kind)
            .unwrap_or_else(|| panic!("no {kind:?} block"))
            .handle
            .offset
            + 3
    };
    let places = [
        ("footer", file_size - 20),
        ("properties", at(shale_sst::BlockKind::Properties)),
        ("index", at(shale_sst::BlockKind::Index)),
        ("filter", at(shale_sst::BlockKind::Filter)),
        ("metaindex", at(shale_sst::BlockKind::Metaindex)),
        ("first data block", first_data.handle.offset + 3),
        ("last data block", last_data.handle.offset + 3),
    ];
    for (i, (what, offset)) in places.into_iter().enumerate() {
        let path = big_external(&fs, &format!("/ext/damaged-{i}.sst"), 2000);
        mem.corrupt_for_test(&path, offset, 0x40).unwrap();
        let error = db
            .ingest(
                &[arg(&db.default_keyspace(), &[&path])],
                IngestOptions::default(),
            )
            .expect_err(what);
        assert!(error.is_corruption(), "{what}: {error}");
        assert!(
            error.to_string().contains(&format!("damaged-{i}.sst")),
            "{what}: {error}"
        );
    }
    assert!(table_files(&fs).is_empty());
    assert_eq!(get(&db.default_keyspace(), "k000000"), None);
}

/// A power cut at any sync point of an ingestion leaves all of it or none of it, in both
/// keyspaces, and never the ingestion without the writes acknowledged before it.
#[test]
fn a_crash_at_any_sync_point_keeps_all_or_none_of_an_ingestion() {
    use shale_engine::{Durability, WriteOptions};
    use shale_fs::CrashMode;
    use std::sync::Mutex;

    let mem = MemFs::new();
    let fs: Arc<dyn FileSystem> = Arc::new(mem.clone());
    let db = open(&fs);
    let users = db
        .create_keyspace("users", KeyspaceOptions::default())
        .unwrap();
    let a = external(
        &fs,
        "/ext/a.sst",
        &[Op::Put("k", "default"), Op::Put("m", "d")],
    );
    let b = external(&fs, "/ext/b.sst", &[Op::Put("k", "users")]);
    // Acknowledged but not synced: the ingestion must make it durable first.
    let mut batch = shale_engine::WriteBatch::new();
    batch.put(users.id(), b"before", b"1").unwrap();
    db.write(
        batch,
        &WriteOptions {
            durability: Some(Durability::Buffered),
        },
    )
    .unwrap();
    let images: Arc<Mutex<Vec<(u64, MemFs)>>> = Arc::default();
    let (hook_fs, hook_images) = (mem.clone(), images.clone());
    mem.set_sync_hook(Some(Arc::new(move |point| {
        let mut images = hook_images.lock().unwrap();
        images.push((point, hook_fs.crash_image(CrashMode::DropUnsynced)));
        images.push((point, hook_fs.crash_image(CrashMode::Torn { seed: point })));
    })));
    db.ingest(
        &[arg(&db.default_keyspace(), &[&a]), arg(&users, &[&b])],
        IngestOptions::default(),
    )
    .unwrap();
    mem.set_sync_hook(None);
    let mut images = std::mem::take(&mut *images.lock().unwrap());
    images.push((u64::MAX, mem.crash_image(CrashMode::DropUnsynced)));
    assert!(images.len() > 4, "only {} sync points imaged", images.len());
    let mut ingested_in = 0;
    for (point, image) in images {
        let fs: Arc<dyn FileSystem> = Arc::new(image);
        let db = open(&fs);
        let users = db.keyspace("users").unwrap();
        let default = get(&db.default_keyspace(), "k");
        let user = get(&users, "k");
        match (default.as_deref(), user.as_deref()) {
            (Some("default"), Some("users")) => {
                ingested_in += 1;
                assert_eq!(get(&db.default_keyspace(), "m").as_deref(), Some("d"));
                assert_eq!(
                    get(&users, "before").as_deref(),
                    Some("1"),
                    "sync point {point}: the ingestion survived but an earlier write did not"
                );
            }
            (None, None) => {}
            other => panic!("sync point {point}: a partial ingestion {other:?}"),
        }
        db.close().unwrap();
    }
    assert!(ingested_in > 0, "no image holds the ingestion");
}

/// Ingestions while writers, flushes and compactions run: no deadlock, nothing lost, and an
/// ingested key written again afterwards keeps the later value.
#[test]
fn ingestion_beside_concurrent_writers_and_compactions() {
    use std::sync::atomic::{AtomicBool, Ordering};

    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let mut db_options = options(fs.clone());
    db_options.default_keyspace.write_buffer_size = 16 << 10;
    db_options.default_keyspace.level0_compaction_trigger = 2;
    db_options.default_keyspace.target_file_size = 16 << 10;
    db_options.default_keyspace.max_bytes_for_level_base = 64 << 10;
    let db = Db::open(DB, db_options).unwrap();
    let ks = db.default_keyspace();
    let running = AtomicBool::new(true);
    let rounds = 30;
    std::thread::scope(|scope| {
        let writers: Vec<_> = (0..2)
            .map(|t| {
                let (ks, running) = (ks.clone(), &running);
                scope.spawn(move || {
                    let mut n = 0u32;
                    while running.load(Ordering::Acquire) || n < 2000 {
                        let key = format!("w{t}-{n:06}");
                        ks.put(key.as_bytes(), &[b'x'; 100]).unwrap();
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        for round in 0..rounds {
            let path = format!("/ext/r{round}.sst");
            let keys: Vec<String> = (0..50).map(|i| format!("i{round:03}-{i:03}")).collect();
            let ops: Vec<Op<'_>> = keys.iter().map(|k| Op::Put(k, "ingested")).collect();
            let file = external(&fs, &path, &ops);
            db.ingest(&[arg(&ks, &[&file])], IngestOptions::default())
                .unwrap();
            // Written after the ingestion returned: newer than the ingested value.
            ks.put(keys[0].as_bytes(), b"later").unwrap();
        }
        running.store(false, Ordering::Release);
        let written: Vec<u32> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        db.wait_for_background_work().unwrap();
        for (t, count) in written.iter().enumerate() {
            for n in [0, count / 2, count - 1] {
                assert!(
                    get(&ks, &format!("w{t}-{n:06}")).is_some(),
                    "w{t}-{n:06} lost"
                );
            }
        }
    });
    let stats = db.stats();
    assert!(
        stats.compactions + stats.trivial_moves > 0,
        "no compaction ran beside the ingestions: {stats:?}"
    );
    db.compact_range(&ks, None, None).unwrap();
    for round in 0..rounds {
        assert_eq!(
            get(&ks, &format!("i{round:03}-000")).as_deref(),
            Some("later")
        );
        assert_eq!(
            get(&ks, &format!("i{round:03}-049")).as_deref(),
            Some("ingested")
        );
    }
}

/// A table in format version 1 (written with `WriterOptions::format_version = 1`, as an older
/// Shale wrote them) is ingested beside the version-2 tables the database writes, read at its
/// global seqno, compacted together with them into version-2 tables, and read again after a
/// reopen.
#[test]
fn a_version_1_table_reads_beside_version_2_tables_and_compacts_into_them() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = open(&fs);
    let ks = db.default_keyspace();
    // Even keys from the database's own flush (version 2), odd ones from a version-1 file.
    for i in (0..600).step_by(2) {
        ks.put(format!("k{i:04}").as_bytes(), format!("db{i}").as_bytes())
            .unwrap();
    }
    db.flush().unwrap();
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let path = Path::new("/ext/v1.sst");
    let options = WriterOptions {
        external_file: true,
        format_version: 1,
        block_size: 256,
        ..WriterOptions::default()
    };
    let mut writer = TableWriter::create(&*fs, path, options).unwrap();
    for i in (1..600).step_by(2) {
        let value = format!("v1-{i}");
        writer
            .add_entry(
                format!("k{i:04}").as_bytes(),
                0,
                ValueKind::Value,
                value.as_bytes(),
            )
            .unwrap();
    }
    writer.finish().unwrap();
    let version_of = |path: &Path| {
        shale_sst::Table::open(&*fs, path, &shale_sst::TableOpenOptions::default())
            .unwrap()
            .footer()
            .format_version
    };
    assert_eq!(version_of(path), 1);
    db.ingest(
        &[arg(&ks, &[&path.to_path_buf()])],
        IngestOptions::default(),
    )
    .unwrap();
    let expected: Vec<(String, String)> = (0..600)
        .map(|i| {
            let value = if i % 2 == 0 {
                format!("db{i}")
            } else {
                format!("v1-{i}")
            };
            (format!("k{i:04}"), value)
        })
        .collect();
    let check = |db: &Db| {
        let ks = db.default_keyspace();
        assert_eq!(scan(&ks, ReadOptions::default()), expected);
        for (key, value) in &expected {
            assert_eq!(get(&ks, key).as_ref(), Some(value), "{key}");
        }
    };
    check(&db);
    let versions = |fs: &Arc<dyn FileSystem>| {
        let mut versions: Vec<u32> = table_files(fs)
            .iter()
            .map(|name| version_of(&Path::new(DB).join(name)))
            .collect();
        versions.sort_unstable();
        versions.dedup();
        versions
    };
    assert_eq!(versions(&fs), [1, 2]);
    db.compact_range(&ks, None, None).unwrap();
    assert_eq!(versions(&fs), [2]);
    check(&db);
    db.close().unwrap();
    check(&open(&fs));
}
