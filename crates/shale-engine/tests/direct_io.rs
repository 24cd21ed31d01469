//! Direct I/O of table files (`Options::use_direct_reads`,
//! `use_direct_io_for_flush_and_compaction`; docs/operations.md, "Direct I/O"):
//! - the options reach the OS: table files the engine reads or writes are open with `O_DIRECT`
//!   on their descriptor (`/proc/self/fdinfo`, through `OsFs::descriptor_modes`), and without
//!   it when the options are off; these fail if the flag is dropped anywhere on the way;
//! - through the `FileSystem` seam, exactly table files ask for direct I/O: WAL, MANIFEST and
//!   OPTIONS stay buffered;
//! - a workload of writes, deletes, range deletes, flushes, compactions, gets, scans both ways
//!   and reopens gives the same answers with the options on and off, on the real disk
//!   (`CARGO_TARGET_TMPDIR`, which must be on a file system that takes `O_DIRECT`);
//! - iterator readahead still reads ahead under direct reads;
//! - a file system that refuses `O_DIRECT` fails the open, naming the option.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use shale_engine::{Db, Durability, Error, Options, ReadOptions};
use shale_fs::{
    FaultFs, FileLock, FileSystem, IoMode, MemFs, OpKind, OsFs, RandomAccessFile, WritableFile,
};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("direct-io-{name}"));
    let _ = OsFs::new().remove_dir_all(&dir);
    dir
}

fn options(fs: Arc<dyn FileSystem>, direct: bool) -> Options {
    let mut options = Options {
        durability: Durability::Buffered,
        file_system: fs,
        use_direct_reads: direct,
        use_direct_io_for_flush_and_compaction: direct,
        // A small block cache: most reads go to the files.
        block_cache_capacity: 64 << 10,
        idle_compaction_after: None,
        ..Options::default()
    };
    // Small memtables and L0 triggers: flushes and compactions run all along.
    options.default_keyspace.write_buffer_size = 32 << 10;
    options.default_keyspace.level0_compaction_trigger = 2;
    options.default_keyspace.target_file_size = 64 << 10;
    options
}

fn is_table(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "sst")
}

/// One file open through the seam: the path, what was asked, and for `OsFs` what the
/// descriptor has right after the open.
#[derive(Debug, Clone)]
struct Opened {
    path: PathBuf,
    write: bool,
    asked: IoMode,
    on_descriptor: Option<Vec<IoMode>>,
}

/// Passes every call to `inner` and records each file open; with `os`, also the modes of the
/// descriptors on the file just opened (the real flags, not what was asked).
#[derive(Debug)]
struct RecordingFs {
    inner: Arc<dyn FileSystem>,
    os: Option<OsFs>,
    opened: Mutex<Vec<Opened>>,
}

impl RecordingFs {
    fn new(inner: Arc<dyn FileSystem>, os: Option<OsFs>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            os,
            opened: Mutex::new(Vec::new()),
        })
    }

    fn record(&self, path: &Path, write: bool, asked: IoMode) {
        let on_descriptor = self
            .os
            .as_ref()
            .map(|os| os.descriptor_modes(path).expect("descriptor modes"));
        self.opened.lock().unwrap().push(Opened {
            path: path.to_path_buf(),
            write,
            asked,
            on_descriptor,
        });
    }

    fn opened(&self) -> Vec<Opened> {
        self.opened.lock().unwrap().clone()
    }
}

impl FileSystem for RecordingFs {
    fn create(&self, path: &Path) -> shale_fs::Result<Box<dyn WritableFile>> {
        let file = self.inner.create(path)?;
        self.record(path, true, IoMode::Buffered);
        Ok(file)
    }
    fn create_with(&self, path: &Path, mode: IoMode) -> shale_fs::Result<Box<dyn WritableFile>> {
        let file = self.inner.create_with(path, mode)?;
        self.record(path, true, mode);
        Ok(file)
    }
    fn open_append(&self, path: &Path) -> shale_fs::Result<Box<dyn WritableFile>> {
        self.inner.open_append(path)
    }
    fn open_read(&self, path: &Path) -> shale_fs::Result<Arc<dyn RandomAccessFile>> {
        let file = self.inner.open_read(path)?;
        self.record(path, false, IoMode::Buffered);
        Ok(file)
    }
    fn open_read_with(
        &self,
        path: &Path,
        mode: IoMode,
    ) -> shale_fs::Result<Arc<dyn RandomAccessFile>> {
        let file = self.inner.open_read_with(path, mode)?;
        self.record(path, false, mode);
        Ok(file)
    }
    fn rename(&self, from: &Path, to: &Path) -> shale_fs::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> shale_fs::Result<()> {
        self.inner.remove(path)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> shale_fs::Result<()> {
        self.inner.hard_link(from, to)
    }
    fn list(&self, dir: &Path) -> shale_fs::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> shale_fs::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> shale_fs::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> shale_fs::Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
    fn size(&self, path: &Path) -> shale_fs::Result<u64> {
        self.inner.size(path)
    }
    fn exists(&self, path: &Path) -> shale_fs::Result<bool> {
        self.inner.exists(path)
    }
}

/// A deterministic pseudo-random sequence (no seed files, no dependency).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// Every entry, by a forward scan and by a backward one (which must agree).
fn scan(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut iter = db.iterator(ReadOptions::default()).unwrap();
    let mut forward = Vec::new();
    iter.seek_to_first();
    while iter.valid() {
        forward.push((iter.key().to_vec(), iter.value().to_vec()));
        iter.next();
    }
    iter.status().unwrap();
    let mut backward = Vec::new();
    iter.seek_to_last();
    while iter.valid() {
        backward.push((iter.key().to_vec(), iter.value().to_vec()));
        iter.prev();
    }
    iter.status().unwrap();
    backward.reverse();
    assert!(forward == backward, "forward and backward scans differ");
    forward
}

/// What a reader saw at each check of the workload.
type Observations = Vec<Vec<(Vec<u8>, Vec<u8>)>>;

/// Fills, overwrites, deletes, range-deletes, flushes, compacts and reopens the database in
/// `dir`, checking every answer against a `BTreeMap`; returns what the scans and gets saw.
fn workload(dir: &Path, fs: &Arc<dyn FileSystem>, direct: bool) -> Observations {
    let mut model = BTreeMap::new();
    let mut seen = Vec::new();
    let mut rng = Lcg(7);
    let mut db = Db::open(dir, options(fs.clone(), direct)).unwrap();
    for round in 0..4u64 {
        for _ in 0..3000 {
            let k = rng.below(4000);
            match rng.below(20) {
                0 => {
                    db.delete(&key(k)).unwrap();
                    model.remove(&key(k));
                }
                1 => {
                    let end = k + rng.below(30);
                    db.delete_range(&key(k), &key(end)).unwrap();
                    model.retain(|kk: &Vec<u8>, _| !(key(k) <= *kk && *kk < key(end)));
                }
                _ => {
                    // Values of odd lengths, so blocks end at unaligned offsets.
                    let value = format!("{round}:{k}:").repeat(1 + rng.below(40) as usize);
                    db.put(&key(k), value.as_bytes()).unwrap();
                    model.insert(key(k), value.into_bytes());
                }
            }
        }
        db.flush().unwrap();
        db.wait_for_background_work().unwrap();
        let mut gets = Vec::new();
        for _ in 0..500 {
            let k = key(rng.below(4200));
            let got = db.get(&k).unwrap();
            assert_eq!(got.as_ref(), model.get(&k), "get {k:?} in round {round}");
            gets.push((k, got.unwrap_or_default()));
        }
        seen.push(gets);
        let all = scan(&db);
        assert!(
            all.iter().map(|(k, v)| (k, v)).eq(model.iter()),
            "scan differs from the model in round {round}"
        );
        seen.push(all);
        if round % 2 == 1 {
            db.compact_range(&db.default_keyspace(), None, None)
                .unwrap();
        }
        db.close().unwrap();
        db = Db::open(dir, options(fs.clone(), direct)).unwrap();
    }
    let all = scan(&db);
    assert!(all.iter().map(|(k, v)| (k, v)).eq(model.iter()));
    seen.push(all);
    db.close().unwrap();
    seen
}

#[test]
fn the_workload_answers_the_same_with_direct_io_on_and_off() {
    let os: Arc<dyn FileSystem> = Arc::new(OsFs::new());
    let buffered = workload(&scratch("same-buffered"), &os, false);
    let direct = workload(&scratch("same-direct"), &os, true);
    assert_eq!(buffered.len(), direct.len());
    assert!(buffered == direct, "direct I/O changed what reads return");
}

/// Opens a database on `OsFs` through a `RecordingFs`, fills it past a few flushes and a
/// compaction, reads every key, and returns what was opened with the Db still open.
fn open_and_fill(dir: &Path, direct: bool) -> (Db, Arc<RecordingFs>) {
    let fs = RecordingFs::new(Arc::new(OsFs::new()), Some(OsFs::new()));
    let db = Db::open(dir, options(fs.clone(), direct)).unwrap();
    for i in 0..6000u64 {
        db.put(&key(i), format!("value {i}").repeat(5).as_bytes())
            .unwrap();
    }
    db.flush().unwrap();
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();
    // No flush or compaction is writing a table (whose last chunk goes out buffered) while
    // the caller looks at descriptors.
    db.wait_for_background_work().unwrap();
    for i in (0..6000u64).step_by(7) {
        assert!(db.get(&key(i)).unwrap().is_some());
    }
    (db, fs)
}

#[test]
fn table_files_are_open_with_o_direct_on_the_descriptor_when_asked() {
    let dir = scratch("descriptor-direct");
    let (db, fs) = open_and_fill(&dir, true);
    let opened = fs.opened();
    let tables_written: Vec<_> = opened
        .iter()
        .filter(|o| o.write && is_table(&o.path))
        .collect();
    let tables_read: Vec<_> = opened
        .iter()
        .filter(|o| !o.write && is_table(&o.path))
        .collect();
    assert!(
        tables_written.len() >= 2,
        "flushes and a compaction: {opened:#?}"
    );
    assert!(!tables_read.is_empty(), "{opened:#?}");
    for o in tables_written.iter().chain(&tables_read) {
        assert_eq!(o.asked, IoMode::Direct, "{o:?}");
        // The new descriptor is the last one opened on the path: a table being written has
        // only it; one being read may also be open for a compaction's reading.
        let modes = o.on_descriptor.as_ref().unwrap();
        assert!(
            modes.contains(&IoMode::Direct),
            "{} is not open with O_DIRECT: {modes:?}",
            o.path.display()
        );
    }
    // The tables the Db holds open now (in the table cache) still have O_DIRECT.
    let live: Vec<PathBuf> = OsFs::new()
        .list(&dir)
        .unwrap()
        .into_iter()
        .map(|name| dir.join(name))
        .filter(|p| is_table(p))
        .collect();
    let modes: Vec<IoMode> = live
        .iter()
        // A background compaction may delete a listed table before we look: skip it.
        .flat_map(|p| OsFs::new().descriptor_modes(p).unwrap_or_default())
        .collect();
    assert!(!modes.is_empty(), "no table file is open");
    assert!(modes.iter().all(|m| *m == IoMode::Direct), "{modes:?}");
    // Everything else stays buffered (RocksDB's choice too), but for the open's probe of
    // the file system, which opens LOCK with O_DIRECT to read nothing.
    let probe = dir.join("LOCK");
    let is_probe = |o: &Opened| o.path == probe && !o.write;
    for o in opened.iter().filter(|o| !is_table(&o.path) && !is_probe(o)) {
        assert_eq!(o.asked, IoMode::Buffered, "{o:?}");
    }
    db.close().unwrap();
}

#[test]
fn table_files_are_buffered_when_the_options_are_off() {
    let dir = scratch("descriptor-buffered");
    let (db, fs) = open_and_fill(&dir, false);
    let tables: Vec<_> = fs
        .opened()
        .into_iter()
        .filter(|o| is_table(&o.path))
        .collect();
    assert!(!tables.is_empty());
    for o in &tables {
        assert_eq!(o.asked, IoMode::Buffered, "{o:?}");
        assert!(
            o.on_descriptor
                .as_ref()
                .unwrap()
                .iter()
                .all(|m| *m == IoMode::Buffered),
            "{o:?}"
        );
    }
    db.close().unwrap();
}

#[test]
fn each_option_alone_reaches_only_its_own_files() {
    let fs = RecordingFs::new(Arc::new(MemFs::new()), None);
    let mut opts = options(fs.clone(), false);
    opts.use_direct_reads = true;
    let db = Db::open("/reads", opts).unwrap();
    for i in 0..3000u64 {
        db.put(&key(i), &[b'v'; 40]).unwrap();
    }
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();
    assert!(db.get(&key(5)).unwrap().is_some());
    db.close().unwrap();
    let tables: Vec<_> = fs
        .opened()
        .into_iter()
        .filter(|o| is_table(&o.path))
        .collect();
    assert!(tables.iter().any(|o| !o.write));
    for o in &tables {
        let want = if o.write {
            IoMode::Buffered
        } else {
            IoMode::Direct
        };
        assert_eq!(o.asked, want, "{o:?}");
    }

    let fs = RecordingFs::new(Arc::new(MemFs::new()), None);
    let mut opts = options(fs.clone(), false);
    opts.use_direct_io_for_flush_and_compaction = true;
    let db = Db::open("/writes", opts).unwrap();
    for i in 0..3000u64 {
        db.put(&key(i), &[b'v'; 40]).unwrap();
    }
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();
    assert!(db.get(&key(5)).unwrap().is_some());
    db.close().unwrap();
    let tables: Vec<_> = fs
        .opened()
        .into_iter()
        .filter(|o| is_table(&o.path))
        .collect();
    assert!(tables.iter().any(|o| o.write));
    for o in &tables {
        let want = if o.write {
            IoMode::Direct
        } else {
            IoMode::Buffered
        };
        assert_eq!(o.asked, want, "{o:?}");
    }
}

#[test]
fn scans_still_read_ahead_under_direct_reads() {
    let fault = FaultFs::new(Arc::new(OsFs::new()));
    let dir = scratch("readahead");
    let mut opts = options(Arc::new(fault.clone()), true);
    // No block cache: every block a scan needs is read from the file.
    opts.block_cache_capacity = 0;
    opts.default_keyspace.write_buffer_size = 256 << 10;
    opts.default_keyspace.target_file_size = 64 << 20;
    let db = Db::open(&dir, opts).unwrap();
    let n = 20_000u64;
    for i in 0..n {
        db.put(&key(i), format!("value {i} ").repeat(3).as_bytes())
            .unwrap();
    }
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();
    let scan_with = |max_readahead_size| {
        let before = fault.op_count(OpKind::Read);
        let mut iter = db
            .iterator(ReadOptions {
                max_readahead_size,
                ..ReadOptions::default()
            })
            .unwrap();
        let mut entries = Vec::new();
        iter.seek_to_first();
        while iter.valid() {
            entries.push((iter.key().to_vec(), iter.value().to_vec()));
            iter.next();
        }
        iter.status().unwrap();
        (entries, fault.op_count(OpKind::Read) - before)
    };
    let (plain, plain_reads) = scan_with(0);
    let (ahead, ahead_reads) = scan_with(shale_sst::DEFAULT_MAX_READAHEAD_SIZE);
    assert_eq!(plain.len(), n as usize);
    assert!(plain == ahead, "readahead changed the scan");
    assert!(
        ahead_reads * 4 < plain_reads,
        "readahead made {ahead_reads} reads, block by block {plain_reads}"
    );
    db.close().unwrap();
}

/// `MemFs` that refuses `O_DIRECT` as tmpfs did before Linux 6.6 (`EINVAL` at open).
fn refusing_fs() -> FaultFs {
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    fs.set_hook(|call| match call.mode {
        Some(IoMode::Direct) => Err(shale_fs::Error::DirectIoUnsupported {
            op: call.op,
            path: call.path.to_path_buf(),
            source: std::io::Error::from_raw_os_error(22),
        }),
        _ => Ok(()),
    });
    fs
}

#[test]
fn a_file_system_that_refuses_o_direct_fails_the_open_naming_the_option() {
    let fs = Arc::new(refusing_fs());
    for (reads, writes, named) in [
        (true, false, "use_direct_reads"),
        (false, true, "use_direct_io_for_flush_and_compaction"),
        (
            true,
            true,
            "use_direct_reads and use_direct_io_for_flush_and_compaction",
        ),
    ] {
        let mut opts = options(fs.clone(), false);
        opts.use_direct_reads = reads;
        opts.use_direct_io_for_flush_and_compaction = writes;
        let err = Db::open("/db", opts).map(|_| ()).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
        let text = err.to_string();
        assert!(text.contains(named), "{text}");
        assert!(text.contains("/db/LOCK"), "{text}");
        assert!(text.contains("refuses direct I/O"), "{text}");
    }
    // Off, the same file system opens; a read-only open checks use_direct_reads too.
    let db = Db::open("/db", options(fs.clone(), false)).unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    let mut opts = options(fs.clone(), false);
    opts.use_direct_reads = true;
    let err = Db::open_read_only("/db", opts).map(|_| ()).unwrap_err();
    assert!(err.to_string().contains("use_direct_reads"), "{err}");
    assert!(err.to_string().contains("/db/CURRENT"), "{err}");
    let read_only = Db::open_read_only("/db", options(fs, false)).unwrap();
    assert_eq!(read_only.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn a_read_only_open_reads_tables_with_o_direct() {
    let dir = scratch("read-only");
    let (db, _) = open_and_fill(&dir, false);
    db.close().unwrap();
    let fs = RecordingFs::new(Arc::new(OsFs::new()), Some(OsFs::new()));
    let read_only = Db::open_read_only(&dir, options(fs.clone(), true)).unwrap();
    assert!(read_only.get(&key(42)).unwrap().is_some());
    let tables: Vec<_> = fs
        .opened()
        .into_iter()
        .filter(|o| is_table(&o.path))
        .collect();
    assert!(!tables.is_empty());
    for o in &tables {
        assert_eq!(o.asked, IoMode::Direct, "{o:?}");
        assert!(
            o.on_descriptor.as_ref().unwrap().contains(&IoMode::Direct),
            "{o:?}"
        );
    }
}
