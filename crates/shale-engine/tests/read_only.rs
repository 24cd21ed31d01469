//! Read-only opens (`Db::open_read_only`) on a real directory while a writer in the same
//! process keeps writing, flushing and compacting: each view equals the writer's state after
//! some batch, the read-only side never creates, changes or deletes a file, and writes through
//! it fail with `Error::ReadOnly`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use shale_engine::{Db, Durability, Error, KeyspaceOptions, Options, ReadOptions, WriteBatch};
use shale_fs::{
    FaultError, FaultFs, FaultRule, FaultTrigger, FileSystem, FsCall, MemFs, Op, OpKind, OsFs,
};

/// Keys batch `i` overwrites: batch `i` puts `k{i % KEYS}` and `{ks}:k{i % KEYS}` in the
/// second keyspace, and deletes `k{(i + KEYS / 2) % KEYS}`.
const KEYS: u64 = 300;

/// A keyspace's keys and values.
type Contents = BTreeMap<Vec<u8>, Vec<u8>>;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("read-only-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn options(fs: Arc<dyn FileSystem>) -> Options {
    let mut options = Options {
        durability: Durability::Buffered,
        file_system: fs,
        ..Options::default()
    };
    // Small memtables and L0 triggers: flushes, compactions and WAL deletions run all along.
    options.default_keyspace.write_buffer_size = 16 << 10;
    options.default_keyspace.level0_compaction_trigger = 2;
    options
}

fn key(i: u64) -> Vec<u8> {
    format!("k{:04}", i % KEYS).into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    format!("{i:08}-{}", "v".repeat(60)).into_bytes()
}

/// The batch the writer commits as its `i`th (1-based); `last` records `i`.
fn batch(db: &Db, users: u32, i: u64) -> WriteBatch {
    let default = db.default_keyspace().id();
    let mut batch = WriteBatch::new();
    batch.put(default, &key(i), &value(i)).unwrap();
    batch.put(users, &key(i), &value(i)).unwrap();
    batch.delete(default, &key(i + KEYS / 2)).unwrap();
    batch
        .put(default, b"last", i.to_string().as_bytes())
        .unwrap();
    batch
}

/// Both keyspaces' contents after batches `1..=n`.
fn expected(n: u64) -> (Contents, Contents) {
    let mut default = BTreeMap::new();
    let mut users = BTreeMap::new();
    for i in 1..=n {
        default.insert(key(i), value(i));
        users.insert(key(i), value(i));
        default.remove(&key(i + KEYS / 2));
        default.insert(b"last".to_vec(), i.to_string().into_bytes());
    }
    (default, users)
}

fn contents(iter: &mut shale_engine::DbIterator) -> Contents {
    iter.seek_to_first();
    let mut out = BTreeMap::new();
    while iter.valid() {
        out.insert(iter.key().to_vec(), iter.value().to_vec());
        iter.next();
    }
    iter.status().unwrap();
    out
}

/// Checks a read-only view against the writer's state after the batch its `last` names, and
/// returns that batch number.
fn check_view(view: &Db) -> u64 {
    let last = view
        .get(b"last")
        .unwrap()
        .map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap());
    let (want_default, want_users) = expected(last);
    let users = view.keyspace("users").expect("the users keyspace");
    let got_default = contents(&mut view.iterator(ReadOptions::default()).unwrap());
    let got_users = contents(&mut users.iterator(ReadOptions::default()).unwrap());
    assert_eq!(
        got_default, want_default,
        "default keyspace as of batch {last}"
    );
    assert_eq!(got_users, want_users, "users keyspace as of batch {last}");
    // Point reads and a snapshot agree with the scan.
    let snapshot = view.snapshot();
    let probes: Vec<Vec<u8>> = (0..KEYS).step_by(7).map(key).collect();
    let probe_refs: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();
    let got = users
        .multi_get(
            &probe_refs,
            &ReadOptions {
                snapshot: Some(snapshot),
                ..ReadOptions::default()
            },
        )
        .unwrap();
    for (probe, got) in probes.iter().zip(got) {
        assert_eq!(got.as_ref(), want_users.get(probe), "{probe:?}");
    }
    last
}

fn file_names(fs: &dyn FileSystem, dir: &Path) -> Vec<String> {
    let mut names = fs.list(dir).unwrap();
    names.sort();
    names
}

#[test]
fn read_only_views_equal_the_writer_state_after_some_batch() {
    let dir = scratch("concurrent");
    let fs: Arc<dyn FileSystem> = Arc::new(OsFs::new());
    let db = Arc::new(Db::open(&dir, options(fs.clone())).unwrap());
    let users = db
        .create_keyspace("users", KeyspaceOptions::default())
        .unwrap()
        .id();
    let stop = Arc::new(AtomicBool::new(false));
    let committed = Arc::new(AtomicU64::new(0));
    let writer = {
        let (db, stop, committed) = (db.clone(), stop.clone(), committed.clone());
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                db.write(batch(&db, users, i), &shale_engine::WriteOptions::default())
                    .unwrap();
                committed.store(i, Ordering::Release);
                if i % 2000 == 0 {
                    db.flush().unwrap();
                }
            }
        })
    };
    let opens: u64 = std::env::var("SHALE_READ_ONLY_OPENS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let mut seen = Vec::new();
    for _ in 0..opens {
        let view = Db::open_read_only(&dir, options(fs.clone())).unwrap();
        assert!(view.is_read_only());
        let last = check_view(&view);
        // Buffered writes may sit in the WAL writer's buffer when acknowledged, so a view
        // may miss acknowledged batches, but never sees one not yet committed.
        assert!(
            last <= committed.load(Ordering::Acquire),
            "{last} > committed"
        );
        seen.push(last);
        view.close().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let stats = db.stats();
    assert!(
        seen.windows(2).any(|w| w[0] != w[1]),
        "every view saw the same batch: {seen:?}"
    );
    assert!(
        stats.compactions > 0,
        "no compaction ran while the views were opened: {stats:?}"
    );
    // The writer still works after all those opens, and a last view sees every write.
    db.flush().unwrap();
    let total = committed.load(Ordering::Acquire);
    let view = Db::open_read_only(&dir, options(fs.clone())).unwrap();
    assert_eq!(check_view(&view), total);
    drop(view);
    Arc::try_unwrap(db).unwrap().close().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_view_outlives_the_files_the_writer_deletes() {
    let dir = scratch("outlives");
    let fs: Arc<dyn FileSystem> = Arc::new(OsFs::new());
    let db = Db::open(&dir, options(fs.clone())).unwrap();
    let users = db
        .create_keyspace("users", KeyspaceOptions::default())
        .unwrap();
    for i in 1..=3000 {
        db.write(
            batch(&db, users.id(), i),
            &shale_engine::WriteOptions::default(),
        )
        .unwrap();
    }
    db.flush().unwrap();
    let view = Db::open_read_only(&dir, options(fs.clone())).unwrap();
    let tables_before = db.current_version().total_files();
    // Replace every table the view holds: each of its files is deleted now.
    for i in 3001..=6000 {
        db.write(
            batch(&db, users.id(), i),
            &shale_engine::WriteOptions::default(),
        )
        .unwrap();
    }
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();
    db.compact_range(&users, None, None).unwrap();
    assert!(tables_before > 0);
    assert_eq!(check_view(&view), 3000);
    drop(view);
    db.close().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_read_only_open_writes_nothing_and_refuses_writes() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    {
        let db = Db::open(dir, options(Arc::new(fs.clone()))).unwrap();
        db.create_keyspace("users", KeyspaceOptions::default())
            .unwrap();
        db.put(b"flushed", b"1").unwrap();
        db.flush().unwrap();
        db.put(b"in-wal", b"2").unwrap();
        // The WAL still holds an unflushed write, whose end a read-write open would record
        // in the MANIFEST.
        db.close().unwrap();
    }
    let before: Vec<(String, u64)> = file_names(&fs, dir)
        .into_iter()
        .map(|name| {
            let size = fs.size(&dir.join(&name)).unwrap();
            (name, size)
        })
        .collect();
    let view = Db::open_read_only(dir, options(Arc::new(fs.clone()))).unwrap();
    assert_eq!(view.get(b"flushed").unwrap(), Some(b"1".to_vec()));
    assert_eq!(view.get(b"in-wal").unwrap(), Some(b"2".to_vec()));
    let refusals = [
        view.put(b"k", b"v").err(),
        view.delete(b"k").err(),
        view.keyspace("users").unwrap().put(b"k", b"v").err(),
        view.flush().err(),
        view.compact_range(&view.default_keyspace(), None, None)
            .err(),
        view.create_keyspace("more", KeyspaceOptions::default())
            .err(),
        view.drop_keyspace("users").err(),
        view.resume().err(),
    ];
    for refusal in refusals {
        match refusal {
            Some(Error::ReadOnly(what)) => {
                let text = Error::ReadOnly(what).to_string();
                assert!(text.starts_with("read-only"), "{text}");
            }
            other => panic!("expected a read-only refusal, got {other:?}"),
        }
    }
    view.wait_for_background_work().unwrap();
    view.close().unwrap();
    let after: Vec<(String, u64)> = file_names(&fs, dir)
        .into_iter()
        .map(|name| {
            let size = fs.size(&dir.join(&name)).unwrap();
            (name, size)
        })
        .collect();
    assert_eq!(before, after, "the read-only open changed the directory");
    assert!(!fs.exists(Path::new("/copy")).unwrap());
}

#[test]
fn a_read_only_open_of_a_missing_database_fails_without_creating_it() {
    let fs = MemFs::new();
    let error = Db::open_read_only("/nothing", options(Arc::new(fs.clone()))).unwrap_err();
    assert!(error.to_string().contains("no database"), "{error}");
    assert!(!fs.exists(Path::new("/nothing")).unwrap());
}

/// What a `Race` runs at its moment, once.
type Hook = Box<dyn FnOnce() + Send>;

/// The writer moving on in the middle of a read-only open, as a `FaultFs` hook: a hook run
/// before a table is opened, one run before a WAL is opened for reading (a read-only open's
/// replay), one run at the first listing of the directory after a MANIFEST was opened (each
/// once), and a count of table opens to fail as if the file had been deleted.
#[derive(Clone, Default)]
struct Race {
    before_table_open: Arc<Mutex<Option<Hook>>>,
    before_wal_open: Arc<Mutex<Option<Hook>>>,
    after_manifest_open: Arc<Mutex<Option<Hook>>>,
    manifest_opened: Arc<AtomicBool>,
    vanished_opens: Arc<AtomicUsize>,
}

/// `inner` with a `Race` run at its calls.
fn racing_fs(inner: MemFs) -> (FaultFs, Race) {
    let fs = FaultFs::new(Arc::new(inner));
    let race = Race::default();
    let hooked = race.clone();
    fs.set_hook(move |call| hooked.at(call));
    (fs, race)
}

impl Race {
    fn at(&self, call: &FsCall<'_>) -> shale_fs::Result<()> {
        let run_once = |hook: &Mutex<Option<Hook>>| {
            let hook = hook.lock().unwrap().take();
            if let Some(hook) = hook {
                hook();
            }
        };
        match call.op {
            Op::OpenRead => {
                if call
                    .path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("MANIFEST"))
                {
                    self.manifest_opened.store(true, Ordering::SeqCst);
                }
                if call.has_extension("wal") {
                    run_once(&self.before_wal_open);
                }
                if call.has_extension("sst") {
                    run_once(&self.before_table_open);
                    let vanish = self
                        .vanished_opens
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                        .is_ok();
                    if vanish {
                        return Err(shale_fs::Error::NotFound {
                            op: Op::OpenRead,
                            path: call.path.to_path_buf(),
                        });
                    }
                }
            }
            Op::List if self.manifest_opened.load(Ordering::SeqCst) => {
                run_once(&self.after_manifest_open);
            }
            _ => {}
        }
        Ok(())
    }
}

#[test]
fn the_open_starts_over_when_the_writer_deletes_a_table_it_named() {
    let mem = MemFs::new();
    let (racing, race) = racing_fs(mem.clone());
    let db = Arc::new(Db::open("/db", options(Arc::new(mem.clone()))).unwrap());
    let users = db
        .create_keyspace("users", KeyspaceOptions::default())
        .unwrap();
    for i in 1..=1000 {
        db.write(
            batch(&db, users.id(), i),
            &shale_engine::WriteOptions::default(),
        )
        .unwrap();
        if i % 300 == 0 {
            db.flush().unwrap();
        }
    }
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    let before: Vec<u64> = db
        .current_version()
        .all_files()
        .map(|(_, _, f)| f.number)
        .collect();
    // While the view opens its first table, the writer writes more and compacts (trivial moves
    // keep some files): the MANIFEST the view read names files that are gone. Only an open that starts
    // over sees the new writes.
    let writer = db.clone();
    *race.before_table_open.lock().unwrap() = Some(Box::new(move || {
        let users = writer.keyspace("users").unwrap();
        for i in 1001..=1300 {
            writer
                .write(
                    batch(&writer, users.id(), i),
                    &shale_engine::WriteOptions::default(),
                )
                .unwrap();
        }
        writer
            .compact_range(&writer.default_keyspace(), None, None)
            .unwrap();
        writer.compact_range(&users, None, None).unwrap();
    }));
    let view = Db::open_read_only("/db", options(Arc::new(racing.clone()))).unwrap();
    assert!(
        race.before_table_open.lock().unwrap().is_none(),
        "the hook never ran"
    );
    assert!(
        before
            .iter()
            .any(|n| !mem.exists(Path::new(&format!("/db/{n:06}.sst"))).unwrap()),
        "the writer deleted none of the tables {before:?}"
    );
    assert_eq!(check_view(&view), 1300);
    drop(view);

    // A file that stays missing: the open gives up after a bounded number of attempts.
    race.vanished_opens.store(usize::MAX, Ordering::SeqCst);
    let error = Db::open_read_only("/db", options(Arc::new(racing.clone()))).unwrap_err();
    assert!(
        error.to_string().contains("no such file") && error.to_string().contains(".sst"),
        "{error}"
    );
    // A few vanishing opens are absorbed by the retries.
    race.vanished_opens.store(3, Ordering::SeqCst);
    let view = Db::open_read_only("/db", options(Arc::new(racing))).unwrap();
    assert_eq!(check_view(&view), 1300);
    drop(view);
    Arc::try_unwrap(db).unwrap().close().unwrap();
}

/// A regression test: a hot backup restored from a view failed to open ("needs WAL 384, which
/// is missing"). The writer flushed a WAL's memtable and deleted the WAL after the view read
/// the MANIFEST but before it listed the WALs to replay; with `Durability::Buffered` the
/// MANIFEST records no synced size for that WAL, so nothing noticed it was gone and the view
/// silently lacked its writes.
#[test]
fn the_open_starts_over_when_the_writer_deletes_a_wal_after_the_manifest_was_read() {
    let mem = MemFs::new();
    let (racing, race) = racing_fs(mem.clone());
    let db = Arc::new(Db::open("/db", options(Arc::new(mem.clone()))).unwrap());
    let users = db
        .create_keyspace("users", KeyspaceOptions::default())
        .unwrap();
    let write = |db: &Db, range: std::ops::RangeInclusive<u64>| {
        for i in range {
            db.write(
                batch(db, users.id(), i),
                &shale_engine::WriteOptions::default(),
            )
            .unwrap();
        }
    };
    write(&db, 1..=200);
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    // Batches 201..=260 are only in the WAL (60 batches stay under the 16 KiB write buffer).
    write(&db, 201..=260);
    let wals_before = wal_numbers(&mem);
    // After the open read the MANIFEST and before it lists the WALs to replay, the writer
    // flushes, which deletes the WAL holding 201..=260.
    let writer = db.clone();
    *race.after_manifest_open.lock().unwrap() = Some(Box::new(move || {
        writer.flush().unwrap();
        writer.wait_for_background_work().unwrap();
    }));
    let view = Db::open_read_only("/db", options(Arc::new(racing.clone()))).unwrap();
    assert!(
        race.after_manifest_open.lock().unwrap().is_none(),
        "the hook never ran"
    );
    let wals_after = wal_numbers(&mem);
    assert!(
        wals_before.iter().any(|n| !wals_after.contains(n)),
        "the writer deleted none of the WALs {wals_before:?} (now {wals_after:?})"
    );
    assert_eq!(check_view(&view), 260);
    drop(view);
    Arc::try_unwrap(db).unwrap().close().unwrap();
}

fn wal_numbers(fs: &MemFs) -> Vec<String> {
    file_names(fs, Path::new("/db"))
        .into_iter()
        .filter(|name| Path::new(name).extension().is_some_and(|e| e == "wal"))
        .collect()
}

/// Opens the copy in `dir` (a checkpoint or a restored backup) on the OS file system and
/// checks it holds exactly batches `1..=last`.
fn check_copy(dir: &Path, last: u64) {
    let copy = Db::open(dir, options(Arc::new(OsFs::new()))).unwrap();
    assert_eq!(check_view(&copy), last, "{}", dir.display());
    copy.close().unwrap();
}

#[test]
fn a_view_is_checkpointed_and_backed_up_after_the_writer_deleted_its_files() {
    let root = scratch("copy-of-view");
    let dir = root.join("db");
    let fs: Arc<dyn FileSystem> = Arc::new(OsFs::new());
    // Every commit reaches the OS, so the view holds all of them.
    let writer_options = Options {
        durability: Durability::Flush,
        ..options(fs.clone())
    };
    let db = Db::open(&dir, writer_options).unwrap();
    let users = db
        .create_keyspace("users", KeyspaceOptions::default())
        .unwrap();
    let write = |range: std::ops::RangeInclusive<u64>| {
        for i in range {
            db.write(
                batch(&db, users.id(), i),
                &shale_engine::WriteOptions::default(),
            )
            .unwrap();
        }
    };
    // Tables and a WAL tail in the view.
    write(1..=3000);
    db.flush().unwrap();
    write(3001..=3100);
    let view = Db::open_read_only(&dir, options(fs.clone())).unwrap();
    let last = check_view(&view);
    assert_eq!(last, 3100);
    // The writer replaces every table and WAL the view read.
    write(3101..=6000);
    db.flush().unwrap();
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();
    db.compact_range(&users, None, None).unwrap();
    let checkpoint = view.checkpoint(root.join("checkpoint")).unwrap();
    assert_eq!(checkpoint.seqno, view.latest_seqno());
    assert!(checkpoint.tables_copied > 0, "{checkpoint:?}");
    assert!(checkpoint.wals > 0, "{checkpoint:?}");
    let engine = shale_engine::BackupEngine::open(fs.clone(), root.join("backups")).unwrap();
    let made = engine
        .create(
            &view,
            &shale_engine::BackupOptions::default(),
            &mut |_, _| {},
        )
        .unwrap();
    assert_eq!(made.info.seqno, checkpoint.seqno);
    drop(checkpoint);
    drop(made);
    drop(view);
    db.close().unwrap();
    check_copy(&root.join("checkpoint"), last);
    engine
        .restore(1, &root.join("restored"), 2, &|_, _| {})
        .unwrap();
    check_copy(&root.join("restored"), last);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_view_of_a_read_only_directory_is_checkpointed_and_backed_up() {
    let root = scratch("read-only-dir");
    let dir = root.join("srcdb");
    {
        let db = Db::open(&dir, options(Arc::new(OsFs::new()))).unwrap();
        let users = db
            .create_keyspace("users", KeyspaceOptions::default())
            .unwrap();
        for i in 1..=2000 {
            db.write(
                batch(&db, users.id(), i),
                &shale_engine::WriteOptions::default(),
            )
            .unwrap();
        }
        db.close().unwrap();
    }
    // Every call that could change the source directory fails: what a read-only mount does
    // (hard links out of it fail too, as across mounts), so the copy reads through handles.
    let faulty = shale_fs::FaultFs::new(Arc::new(OsFs::new()));
    for op in [
        OpKind::Create,
        OpKind::OpenAppend,
        OpKind::Append,
        OpKind::Rename,
        OpKind::Remove,
        OpKind::HardLink,
        OpKind::CreateDir,
        OpKind::SyncDir,
        OpKind::Lock,
    ] {
        faulty.add_rule(
            FaultRule::new(op, FaultTrigger::Always, FaultError::Eio).path_contains("srcdb"),
        );
    }
    let faulty: Arc<dyn FileSystem> = Arc::new(faulty);
    assert!(
        Db::open(&dir, options(faulty.clone())).is_err(),
        "the rules stop a writing open"
    );
    let view = Db::open_read_only(&dir, options(faulty.clone())).unwrap();
    let last = check_view(&view);
    assert_eq!(last, 2000);
    let checkpoint = view.checkpoint(root.join("checkpoint")).unwrap();
    assert_eq!(checkpoint.tables_linked, 0, "{checkpoint:?}");
    let engine = shale_engine::BackupEngine::open(faulty.clone(), root.join("backups")).unwrap();
    engine
        .create(
            &view,
            &shale_engine::BackupOptions::default(),
            &mut |_, _| {},
        )
        .unwrap();
    drop(checkpoint);
    view.close().unwrap();
    check_copy(&root.join("checkpoint"), last);
    engine
        .restore(1, &root.join("restored"), 2, &|_, _| {})
        .unwrap();
    check_copy(&root.join("restored"), last);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_read_only_open_pins_blob_files_before_its_wal_replay() {
    let memfs = MemFs::new();
    let (racing, race) = racing_fs(memfs.clone());
    let blob_options = || {
        let mut options = options(Arc::new(racing.clone()));
        options.default_keyspace.write_buffer_size = 1 << 20;
        options.default_keyspace.enable_blob_files = true;
        options.default_keyspace.min_blob_size = 100;
        options
    };
    let dir = Path::new("/db");
    let blob_files = || -> Vec<String> {
        let names = memfs.list(dir).unwrap();
        names
            .into_iter()
            .filter(|n| shale_engine::inspect::blob::parse_blob_file_name(n).is_some())
            .collect()
    };
    let value = |i: u64| format!("value {i} ").repeat(100).into_bytes();
    let db = Db::open(dir, blob_options()).unwrap();
    let ks = db.default_keyspace();
    for i in 0..50 {
        ks.put(&key(i), &value(i)).unwrap();
    }
    db.flush().unwrap();
    assert_eq!(blob_files().len(), 1);
    // Left in the WAL, so the read-only open replays it.
    ks.put(b"in the wal", b"small").unwrap();
    db.close().unwrap();

    // The writer's blob garbage collection, as it could run during a long replay.
    let fs = memfs.clone();
    *race.before_wal_open.lock().unwrap() = Some(Box::new(move || {
        for name in fs.list(dir).unwrap() {
            if shale_engine::inspect::blob::parse_blob_file_name(&name).is_some() {
                fs.remove(&dir.join(name)).unwrap();
            }
        }
    }));
    let reader = Db::open_read_only(dir, blob_options()).unwrap();
    assert!(
        race.before_wal_open.lock().unwrap().is_none(),
        "the hook ran"
    );
    assert!(blob_files().is_empty(), "the blob file is gone");
    // The view opened the blob file before the replay, and reads it through that handle.
    let view = reader.default_keyspace();
    for i in 0..50 {
        assert_eq!(view.get(&key(i)).unwrap(), Some(value(i)), "key {i}");
    }
    assert_eq!(view.get(b"in the wal").unwrap(), Some(b"small".to_vec()));
}
